/* native-choice.c — the choice between a pure expansion and a native
 * implementation of a library node: the registry of native implementations
 * (their records are registered by the code generator's side, core/native.c,
 * through weir_init()), the default choice per operator, and the CLI's
 * --impl.  Nothing here prints C: a native record's emit is only stored.
 */
#include <stdlib.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-native.h"
#include "weir-ops.h"

/* --------------------------------------------------------------- registry */

static GHashTable *registry; /* "op/impl" -> const WeirNativeImpl* */
static GMutex registry_lock;

static gboolean set_impl_attr(WeirGraph *g, WeirState *s, WeirNode *n,
                              const char *impl, GError **error) {
  const WeirNativeImpl *ni = weir_native_lookup(n->op, impl);
  g_autofree char *reason = NULL;
  if (!ni || !ni->accepts(g, s, n, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "the '%s' implementation does not apply: %s", impl,
                reason ? reason : "not registered");
    return FALSE;
  }
  if (g_strcmp0(weir_node_attr_string(n, "impl", NULL), impl) != 0)
    weir_node_remove_attr(n, "impl_params"); /* they were another's */
  weir_node_set_attr_string(n, "impl", impl);
  return TRUE;
}

/* Expansions that only record the choice (WeirExpandFunc has no impl
 * argument, hence one function per name). */
static gboolean choose_blas(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  return set_impl_attr(g, s, n, "blas", error);
}
static gboolean choose_im2col(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  return set_impl_attr(g, s, n, "im2col", error);
}
static gboolean choose_col2im(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  return set_impl_attr(g, s, n, "col2im", error);
}
static gboolean choose_weir(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  return set_impl_attr(g, s, n, "weir", error);
}
static gboolean choose_direct(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  return set_impl_attr(g, s, n, "direct", error);
}
static gboolean choose_depthwise(WeirGraph *g, WeirState *s, WeirNode *n,
                                 GError **error) {
  return set_impl_attr(g, s, n, "depthwise", error);
}
static gboolean choose_winograd(WeirGraph *g, WeirState *s, WeirNode *n,
                                GError **error) {
  return set_impl_attr(g, s, n, "winograd", error);
}
static gboolean choose_stem(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  return set_impl_attr(g, s, n, "stem", error);
}
static gboolean choose_mpi(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  return set_impl_attr(g, s, n, "mpi", error);
}
static gboolean choose_weir_bf16(WeirGraph *g, WeirState *s, WeirNode *n,
                                 GError **error) {
  return set_impl_attr(g, s, n, "weir-bf16", error);
}

void weir_native_register(const WeirNativeImpl *impl) {
  g_return_if_fail(impl && impl->op && impl->impl && impl->accepts &&
                   impl->emit);
  g_mutex_lock(&registry_lock);
  if (!registry)
    registry = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_hash_table_replace(registry, g_strdup_printf("%s/%s", impl->op, impl->impl),
                       (gpointer)impl);
  g_mutex_unlock(&registry_lock);
  WeirExpandFunc f = NULL;
  if (strcmp(impl->impl, "blas") == 0)
    f = choose_blas;
  else if (strcmp(impl->impl, "im2col") == 0)
    f = choose_im2col;
  else if (strcmp(impl->impl, "direct") == 0)
    f = choose_direct;
  else if (strcmp(impl->impl, "col2im") == 0)
    f = choose_col2im;
  else if (strcmp(impl->impl, "weir") == 0)
    f = choose_weir;
  else if (strcmp(impl->impl, "depthwise") == 0)
    f = choose_depthwise;
  else if (strcmp(impl->impl, "winograd") == 0)
    f = choose_winograd;
  else if (strcmp(impl->impl, "stem") == 0)
    f = choose_stem;
  else if (strcmp(impl->impl, "mpi") == 0)
    f = choose_mpi;
  else if (strcmp(impl->impl, "weir-bf16") == 0)
    f = choose_weir_bf16;
  if (f)
    weir_op_register_expansion(impl->op, impl->impl, f);
}

const WeirNativeImpl *weir_native_lookup(const char *op, const char *impl) {
  if (!op || !impl)
    return NULL;
  g_autofree char *key = g_strdup_printf("%s/%s", op, impl);
  g_mutex_lock(&registry_lock);
  const WeirNativeImpl *r =
      registry ? g_hash_table_lookup(registry, key) : NULL;
  g_mutex_unlock(&registry_lock);
  return r;
}

gboolean weir_native_accepts_as(const char *op, const char *impl,
                                const WeirGraph *g, const WeirState *s,
                                const WeirNode *n, char **reason) {
  const WeirNativeImpl *like = weir_native_lookup(op, impl);
  if (!like) {
    *reason = g_strdup_printf("needs the '%s' implementation's checks, which "
                              "is not registered",
                              impl);
    return FALSE;
  }
  return like->accepts(g, s, n, reason);
}

static int compare_keys(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char **weir_native_impls(void) {
  g_autoptr(GStrvBuilder) b = g_strv_builder_new();
  g_mutex_lock(&registry_lock);
  guint n = 0;
  g_autofree gpointer *keys =
      registry ? g_hash_table_get_keys_as_array(registry, &n) : NULL;
  if (keys)
    qsort(keys, n, sizeof(gpointer), compare_keys);
  for (guint i = 0; i < n; i++)
    g_strv_builder_add(b, keys[i]);
  g_mutex_unlock(&registry_lock);
  return g_strv_builder_end(b);
}

/* ---------------------------------------------------------------- operands */

const WeirContainer *weir_native_port(const WeirGraph *g, const WeirState *s,
                                      const WeirNode *n, gboolean input,
                                      guint k) {
  char conn[24];
  g_snprintf(conn, sizeof conn, input ? "in%u" : "out%u", k);
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (!m->data)
      continue;
    if (input ? (m->dst == n->id && g_strcmp0(m->dst_conn, conn) == 0)
              : (m->src == n->id && g_strcmp0(m->src_conn, conn) == 0))
      return weir_graph_container(g, m->data);
  }
  return NULL;
}

/* ----------------------------------------------------------------- choice */

const char *weir_native_default_impl(const WeirGraph *g, const WeirState *s,
                                     const WeirNode *n) {
  if (!n->op)
    return "pure";
  g_autofree char *r1 = NULL, *r2 = NULL;
  const WeirNativeImpl *ni;
  if (strcmp(n->op, "Gemm") == 0 || strcmp(n->op, "MatMul") == 0 ||
      strcmp(n->op, "Conv") == 0) {
    /* bf16 operands: Weir's bf16 GEMM (core/kernels/gemm-bf16.c), f32
     * accumulation, on the path the hardware profile allows (AVX-512
     * BF16 or portable C) */
    const WeirContainer *a = weir_native_port(g, s, n, TRUE, 0);
    ni = weir_native_lookup(n->op, "weir-bf16");
    if (a && a->dtype == WEIR_DTYPE_BF16 && ni && ni->accepts(g, s, n, &r1))
      return "weir-bf16";
    g_clear_pointer(&r1, g_free);
  }
  if (strcmp(n->op, "Gemm") == 0 || strcmp(n->op, "MatMul") == 0) {
    /* f32: Weir's own GEMM (core/kernels/); f64: BLAS */
    const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
    ni = weir_native_lookup(n->op, "weir");
    if (y && y->dtype == WEIR_DTYPE_F32 && ni && ni->accepts(g, s, n, &r2))
      return "weir";
    ni = weir_native_lookup(n->op, "blas");
    return ni && ni->accepts(g, s, n, &r1) ? "blas" : "pure";
  }
  if (strcmp(n->op, "Conv") == 0) {
    const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
    if (!y || y->dtype != WEIR_DTYPE_F32)
      return "pure";
    /* depthwise: Weir's vectorized depthwise kernel (core/kernels/
     * depthwise.c), else the direct loop nest; everything else (1x1
     * included) on Weir's own GEMM */
    ni = weir_native_lookup("Conv", "depthwise");
    if (weir_node_attr_int(n, "group", 1) > 1 && ni &&
        ni->accepts(g, s, n, &r1))
      return "depthwise";
    g_clear_pointer(&r1, g_free);
    ni = weir_native_lookup("Conv", "direct");
    if (weir_node_attr_int(n, "group", 1) > 1 && ni &&
        ni->accepts(g, s, n, &r1))
      return "direct";
    /* 3x3 at stride 1 where measured faster: Weir's Winograd convolution
     * (core/kernels/winograd.c) */
    ni = weir_native_lookup("Conv", "winograd");
    if (ni && ni->prefer && ni->prefer(g, s, n))
      return "winograd";
    /* few input channels at stride 2 (a network's stem): Weir's direct
     * stem kernel (core/kernels/stem.c) */
    ni = weir_native_lookup("Conv", "stem");
    if (ni && ni->prefer && ni->prefer(g, s, n))
      return "stem";
    ni = weir_native_lookup("Conv", "weir");
    if (ni && ni->accepts(g, s, n, &r2))
      return "weir";
    ni = weir_native_lookup("Conv", "im2col");
    g_clear_pointer(&r2, g_free);
    if (ni && ni->accepts(g, s, n, &r2))
      return "im2col";
  }
  if (strcmp(n->op, "MatMulInteger") == 0 ||
      strcmp(n->op, "QLinearMatMul") == 0 ||
      strcmp(n->op, "QLinearMatMulBias") == 0 ||
      strcmp(n->op, "ConvInteger") == 0 || strcmp(n->op, "QLinearConv") == 0) {
    /* Weir's int8 GEMM (core/kernels/gemm-int8.c) on the path the hardware
     * profile allows (VNNI, AVX2, portable C) */
    ni = weir_native_lookup(n->op, "weir");
    return ni && ni->accepts(g, s, n, &r1) ? "weir" : "pure";
  }
  if (strcmp(n->op, "MaxPool") == 0) {
    /* f32, u8 or i8, two spatial dimensions: Weir's MaxPool kernel
     * (core/kernels/pool.c) */
    ni = weir_native_lookup("MaxPool", "weir");
    return ni && ni->accepts(g, s, n, &r1) ? "weir" : "pure";
  }
  if (strcmp(n->op, "GlobalAveragePool") == 0) {
    /* f32, row-major: Weir's kernel (core/kernels/pool.c), partial sums
     * where the pure expansion adds into one accumulator */
    ni = weir_native_lookup("GlobalAveragePool", "weir");
    return ni && ni->accepts(g, s, n, &r1) ? "weir" : "pure";
  }
  if (strcmp(n->op, "Softmax") == 0 || strcmp(n->op, "LogSoftmax") == 0 ||
      strcmp(n->op, "LayerNormalization") == 0 ||
      strcmp(n->op, "OptimizerUpdate") == 0 || strcmp(n->op, "SumAll") == 0 ||
      strcmp(n->op, "BatchNormGrad") == 0 ||
      strcmp(n->op, "BatchNormStats") == 0) {
    /* Softmax, LogSoftmax, LayerNormalization: f32 or f64, the reduced
     * axes innermost: Weir's row kernels (core/kernels/norm.c), one pass
     * of the tensor where the pure expansion makes three or four.
     * OptimizerUpdate, SumAll: f32 / f64 in place, every tensor in one
     * parallel region (core/kernels/multi-tensor.c).  BatchNormGrad: f32
     * or f64, two passes per channel (core/kernels/batchnorm-grad.c)
     * where the expansion's sums are WCR updates.  BatchNormStats: f32 or
     * f64, one pass per channel (core/kernels/batchnorm-stats.c) where the
     * expansion makes two over X and two more loops */
    ni = weir_native_lookup(n->op, "weir");
    return ni && ni->accepts(g, s, n, &r1) ? "weir" : "pure";
  }
  if (strcmp(n->op, "Allreduce") == 0 || strcmp(n->op, "Broadcast") == 0 ||
      strcmp(n->op, "AllreduceStart") == 0 ||
      strcmp(n->op, "AllreduceWait") == 0 ||
      strcmp(n->op, "AllreduceTest") == 0) {
    /* MPI when libweir was built with it (core/native-mpi.c registers
     * "mpi" then); the pure expansion is the one-process meaning */
    ni = weir_native_lookup(n->op, "mpi");
    return ni && ni->accepts(g, s, n, &r1) ? "mpi" : "pure";
  }
  if (strcmp(n->op, "SumTo") == 0 || strcmp(n->op, "ReduceSum") == 0 ||
      strcmp(n->op, "ReduceMean") == 0) {
    /* Weir's sum over axes (core/kernels/reduce.c): the input read in
     * storage order with vector partial sums.  The pure expansion runs
     * the kept axes outside: a column sum (a bias gradient over the rows)
     * then adds along a strided axis, and a per-channel sum of NCHW (batch
     * norm), into which map-reduce-fusion folds the element-wise code that
     * feeds it, is a scalar loop with one dependent addition per element
     * per sum (docs/native.md, "Sums over axes", has the measurements). */
    ni = weir_native_lookup(n->op, "weir");
    return ni && ni->accepts(g, s, n, &r1) ? "weir" : "pure";
  }
  static const char *const grads[][2] = {{"ConvGradFilter", "im2col"},
                                         {"ConvGradInput", "col2im"},
                                         {"MaxPoolGrad", "direct"}};
  for (guint i = 0; i < G_N_ELEMENTS(grads); i++) {
    if (strcmp(n->op, grads[i][0]) != 0)
      continue;
    const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
    if (!y || y->dtype != WEIR_DTYPE_F32)
      return "pure";
    /* the input gradient of a 3x3 stride-1 convolution where the forward
     * rule takes Weir's Winograd convolution (core/kernels/winograd.c) */
    ni = weir_native_lookup(grads[i][0], "winograd");
    if (ni && ni->prefer && ni->prefer(g, s, n))
      return "winograd";
    /* the convolution gradients on Weir's GEMM (core/kernels/
     * conv-grad.c), else on BLAS */
    ni = weir_native_lookup(grads[i][0], "weir");
    if (ni && ni->accepts(g, s, n, &r2))
      return "weir";
    ni = weir_native_lookup(grads[i][0], grads[i][1]);
    return ni && ni->accepts(g, s, n, &r1) ? grads[i][1] : "pure";
  }
  return "pure";
}

const char *weir_native_chosen(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n) {
  const WeirAttr *a = weir_node_attr(n, "impl");
  if (a && a->type == WEIR_ATTR_STRING && a->s)
    return a->s;
  return weir_native_default_impl(g, s, n);
}

gboolean weir_native_choice(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n, const WeirNativeImpl **out,
                            GError **error) {
  *out = NULL;
  const char *name = weir_native_chosen(g, s, n);
  const WeirNativeImpl *ni = weir_native_lookup(n->op, name);
  if (!ni)
    return TRUE;
  g_autofree char *reason = NULL;
  if (!ni->accepts(g, s, n, &reason)) {
    g_autofree char *where = weir_describe_node(s, n);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: implementation '%s' of %s does not apply: %s", where, name,
                n->op, reason);
    return FALSE;
  }
  if (!weir_native_check_params(s, n, ni, error))
    return FALSE;
  *out = ni;
  return TRUE;
}

/* ------------------------------------------------------- sums over axes */

void weir_native_reduce_clear(WeirNativeReduce *r) {
  g_clear_pointer(&r->s0, weir_expr_unref);
  g_clear_pointer(&r->k0, weir_expr_unref);
  g_clear_pointer(&r->s, weir_expr_unref);
  g_clear_pointer(&r->k1, weir_expr_unref);
  g_clear_pointer(&r->count, weir_expr_unref);
}

/* Which dimensions of x (rank xr) node n sums, into summed[]; FALSE with
 * *reason when n is not a plain sum over axes. */
static gboolean reduce_summed(const WeirNode *n, const WeirContainer *x,
                              const WeirContainer *y, gboolean *summed,
                              char **reason) {
  guint xr = x->shape->len, yr = y->shape->len;
  if (strcmp(n->op, "SumTo") == 0) {
    if (yr > xr) {
      *reason =
          g_strdup_printf("'%s' has a higher rank than '%s'", y->name, x->name);
      return FALSE;
    }
    for (guint d = 0; d < xr; d++) {
      if (d < xr - yr) {
        summed[d] = TRUE;
        continue;
      }
      WeirExpr *yd = g_ptr_array_index(y->shape, d - (xr - yr));
      gint64 one;
      if (weir_expr_is_const(yd, &one) && one == 1) {
        summed[d] = TRUE;
      } else if (!weir_expr_equal(yd, g_ptr_array_index(x->shape, d))) {
        *reason = g_strdup_printf("dimension %u of '%s' is neither 1 nor "
                                  "that of '%s'",
                                  d - (xr - yr), y->name, x->name);
        return FALSE;
      }
    }
    return TRUE;
  }
  if (strcmp(n->op, "ReduceSum") != 0 && strcmp(n->op, "ReduceMean") != 0) {
    *reason = g_strdup_printf("%s is not a sum over axes", n->op);
    return FALSE;
  }
  if (weir_node_has_in_conn(n, "in1")) {
    *reason = g_strdup("the axes are an input, not the attribute 'axes'");
    return FALSE;
  }
  const GArray *axes = weir_node_attr_ints(n, "axes");
  if (!axes || axes->len == 0) {
    if (weir_node_attr_int(n, "noop_with_empty_axes", 0)) {
      *reason = g_strdup("noop_with_empty_axes: a copy, not a sum");
      return FALSE;
    }
    for (guint d = 0; d < xr; d++)
      summed[d] = TRUE;
    return TRUE;
  }
  for (guint i = 0; i < axes->len; i++) {
    gint64 a = g_array_index(axes, gint64, i);
    if (a < -(gint64)xr || a >= (gint64)xr) {
      *reason = g_strdup_printf(
          "axis %" G_GINT64_FORMAT " is out of range for rank %u", a, xr);
      return FALSE;
    }
    guint d = (guint)(a < 0 ? a + (gint64)xr : a);
    if (summed[d]) {
      *reason = g_strdup_printf("axis %u is given twice", d);
      return FALSE;
    }
    summed[d] = TRUE;
  }
  return TRUE;
}

gboolean weir_native_reduce_layout(const WeirGraph *g, const WeirState *s,
                                   const WeirNode *n, WeirNativeReduce *r,
                                   char **reason) {
  memset(r, 0, sizeof *r);
  const WeirContainer *x = weir_native_port(g, s, n, TRUE, 0);
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  if (!x || !y) {
    *reason = g_strdup(x ? "out0 is not connected" : "in0 is not connected");
    return FALSE;
  }
  guint xr = x->shape->len;
  g_autofree gboolean *summed = g_new0(gboolean, xr + 1);
  if (!reduce_summed(n, x, y, summed, reason))
    return FALSE;
  /* the slots s0, k0, s, k1 filled from the innermost dimension outwards:
   * each dimension goes into the innermost slot of its kind that is not
   * outside a slot already used, so that the innermost summed run is s
   * (contiguous when k1 is 1) */
  WeirExpr *slot[4] = {weir_expr_const(1), weir_expr_const(1),
                       weir_expr_const(1), weir_expr_const(1)};
  int at = 3; /* the innermost slot still open */
  gboolean ok = TRUE;
  for (int d = (int)xr - 1; d >= 0 && ok; d--) {
    WeirExpr *xd = g_ptr_array_index(x->shape, d);
    gint64 v;
    if (weir_expr_is_const(xd, &v) && v == 1)
      continue;
    int want = summed[d] ? 0 : 1; /* slots 0, 2 sum; 1, 3 keep */
    while (at >= 0 && (at % 2 == 0 ? 0 : 1) != want)
      at--;
    if (at < 0) {
      ok = FALSE;
      break;
    }
    WeirExpr *m = weir_expr_mul(slot[at], xd);
    weir_expr_unref(slot[at]);
    slot[at] = m;
  }
  if (!ok) {
    for (int k = 0; k < 4; k++)
      weir_expr_unref(slot[k]);
    *reason = g_strdup_printf("the summed and kept axes of '%s' alternate "
                              "more often than [summed, kept, summed, kept]",
                              x->name);
    return FALSE;
  }
  r->s0 = slot[0];
  r->k0 = slot[1];
  r->s = slot[2];
  r->k1 = slot[3];
  r->count = weir_expr_mul(r->s0, r->s);
  return TRUE;
}

/* ------------------------------------------------ implementation params */

/* Splits "name=value" into its name (transfer full) and value. */
static gboolean param_entry(const char *entry, char **name, gint64 *value) {
  const char *eq = entry ? strchr(entry, '=') : NULL;
  if (!eq || eq == entry)
    return FALSE;
  g_autofree char *nm = g_strndup(entry, (gsize)(eq - entry));
  for (const char *c = nm; *c; c++)
    if (!(g_ascii_isalnum(*c) || *c == '_'))
      return FALSE;
  gint64 v;
  if (!g_ascii_string_to_signed(eq + 1, 10, G_MININT64, G_MAXINT64, &v, NULL))
    return FALSE;
  if (name)
    *name = g_steal_pointer(&nm);
  *value = v;
  return TRUE;
}

gint64 weir_native_param(const WeirNode *n, const char *name, gint64 dflt) {
  const WeirAttr *a = weir_node_attr(n, "impl_params");
  if (!a || a->type != WEIR_ATTR_STRINGS || !name)
    return dflt;
  for (guint i = 0; i < a->strings->len; i++) {
    g_autofree char *nm = NULL;
    gint64 v;
    if (param_entry(g_ptr_array_index(a->strings, i), &nm, &v) &&
        strcmp(nm, name) == 0)
      return v;
  }
  return dflt;
}

char *weir_native_params_text(const WeirNode *n) {
  const WeirAttr *a = weir_node_attr(n, "impl_params");
  if (!a || a->type != WEIR_ATTR_STRINGS)
    return g_strdup("");
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < a->strings->len; i++)
    g_string_append_printf(s, "%s%s", i ? "," : "",
                           (const char *)g_ptr_array_index(a->strings, i));
  return g_string_free(s, FALSE);
}

static const WeirNativeParam *param_spec(const WeirNativeImpl *ni,
                                         const char *name) {
  for (guint i = 0; ni && i < ni->n_params; i++)
    if (strcmp(ni->params[i].name, name) == 0)
      return &ni->params[i];
  return NULL;
}

/* Orders "name=value" entries by name. */
static int compare_entry_names(const char *a, const char *b) {
  gsize la = strcspn(a, "="), lb = strcspn(b, "=");
  int c = strncmp(a, b, MIN(la, lb));
  return c ? c : (la > lb) - (la < lb);
}

static int compare_entries(gconstpointer a, gconstpointer b) {
  return compare_entry_names(*(char *const *)a, *(char *const *)b);
}

/* The entries of text, canonical ("name=value", sorted by name), or NULL
 * with an error.  op names the operator in messages. */
static GPtrArray *parse_params(const WeirNativeImpl *ni, const char *op,
                               const char *text, GError **error) {
  g_autoptr(GPtrArray) entries = g_ptr_array_new_with_free_func(g_free);
  if (!text || !*text)
    return g_steal_pointer(&entries);
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  for (guint i = 0; parts[i]; i++) {
    g_autofree char *nm = NULL;
    gint64 v;
    g_strstrip(parts[i]);
    if (!param_entry(parts[i], &nm, &v)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "implementation parameter '%s' is not NAME=INTEGER",
                  parts[i]);
      return NULL;
    }
    if (!param_spec(ni, nm)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "implementation '%s' of %s has no parameter '%s'",
                  ni ? ni->impl : "pure", op ? op : "?", nm);
      return NULL;
    }
    for (guint k = 0; k < entries->len; k++)
      if (compare_entry_names(g_ptr_array_index(entries, k), nm) == 0) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "implementation parameter '%s' given twice", nm);
        return NULL;
      }
    g_ptr_array_add(entries, g_strdup_printf("%s=%" G_GINT64_FORMAT, nm, v));
  }
  g_ptr_array_sort(entries, compare_entries);
  return g_steal_pointer(&entries);
}

gboolean weir_native_params_valid(const WeirNativeImpl *ni, const char *text,
                                  GError **error) {
  g_autoptr(GPtrArray) entries =
      parse_params(ni, ni ? ni->op : NULL, text, error);
  return entries != NULL;
}

gboolean weir_native_set_params(WeirNode *n, const WeirNativeImpl *ni,
                                const char *text, GError **error) {
  g_return_val_if_fail(n != NULL, FALSE);
  g_autoptr(GPtrArray) entries = parse_params(ni, n->op, text, error);
  if (!entries)
    return FALSE;
  if (entries->len == 0)
    weir_node_remove_attr(n, "impl_params");
  else
    weir_node_set_attr_strings(
        n, "impl_params", (const char *const *)entries->pdata, entries->len);
  return TRUE;
}

gboolean weir_native_check_params(const WeirState *s, const WeirNode *n,
                                  const WeirNativeImpl *ni, GError **error) {
  const WeirAttr *a = weir_node_attr(n, "impl_params");
  if (!a)
    return TRUE;
  g_autofree char *where = weir_describe_node(s, n);
  if (a->type != WEIR_ATTR_STRINGS) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: attribute 'impl_params' must be strings NAME=INTEGER",
                where);
    return FALSE;
  }
  const char *prev = NULL;
  for (guint i = 0; i < a->strings->len; i++) {
    const char *entry = g_ptr_array_index(a->strings, i);
    g_autofree char *nm = NULL;
    gint64 v;
    if (!param_entry(entry, &nm, &v)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: implementation parameter '%s' is not NAME=INTEGER",
                  where, entry ? entry : "");
      return FALSE;
    }
    if (!param_spec(ni, nm)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: implementation '%s' of %s has no parameter '%s'", where,
                  ni ? ni->impl : "pure", n->op, nm);
      return FALSE;
    }
    if (prev && compare_entry_names(prev, entry) >= 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: 'impl_params' entries must be sorted by name, each "
                  "name once ('%s' after '%s')",
                  where, entry, prev);
      return FALSE;
    }
    prev = entry;
  }
  return TRUE;
}

static gboolean set_in(WeirGraph *g, const char *op, const char *impl,
                       guint *count) {
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY && g_strcmp0(n->op, op) == 0) {
        weir_node_remove_attr(n, "impl_params"); /* the defaults of impl */
        weir_node_set_attr_string(n, "impl", impl);
        (*count)++;
      }
      if (n->kind == WEIR_NODE_NESTED && n->nested)
        set_in(n->nested, op, impl, count);
    }
  }
  return TRUE;
}

gboolean weir_native_set_impl(WeirGraph *g, const char *op, const char *impl,
                              guint *count, GError **error) {
  if (!weir_op_lookup(op)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "unknown operator '%s'",
                op);
    return FALSE;
  }
  if (!weir_op_expansion(op, impl)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "operator '%s' has no implementation '%s'", op, impl);
    return FALSE;
  }
  guint c = 0;
  set_in(g, op, impl, &c);
  if (count)
    *count = c;
  return TRUE;
}
