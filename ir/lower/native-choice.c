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
    ni = weir_native_lookup("Conv", "weir");
    if (ni && ni->accepts(g, s, n, &r2))
      return "weir";
    ni = weir_native_lookup("Conv", "im2col");
    g_clear_pointer(&r2, g_free);
    if (ni && ni->accepts(g, s, n, &r2))
      return "im2col";
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
  *out = ni;
  return TRUE;
}

static gboolean set_in(WeirGraph *g, const char *op, const char *impl,
                       guint *count) {
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY && g_strcmp0(n->op, op) == 0) {
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
