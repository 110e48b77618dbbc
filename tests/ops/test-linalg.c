/* test-linalg.c — the linear-algebra operators: Gemm, MatMul, Conv,
 * ConvTranspose, Einsum.
 *
 * For each operator: the schema fills its defaults, inference gives the
 * right shapes (symbolic batch sizes, broadcasting) and clear errors, and
 * the pure expansion validates, leaves no library node and, run by the
 * reference interpreter on seeded random inputs, matches a reference
 * computed here in plain C loops (double precision), for the attribute
 * combinations that matter.  The references are written independently of
 * the expansions (ConvTranspose, for instance, is checked in gather form
 * against a scatter expansion).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "weir-expand.h"
#include "weir-interp.h"
#include "weir-ops-linalg.h"
#include "weir-ops.h"
#include "weir-validate.h"

/* ------------------------------------------------------------ building */

/* A program with one library node `op` (label `label`): input k reads
 * container "X<k>" of shape in_shapes[k] (NULL: the optional input is
 * omitted), the output writes "Y" of shape out_shape.  symbols is a
 * NULL-terminated list (or NULL). */
static WeirGraph *op_graph(const char *op, const char *label, WeirDType dt,
                           const char *const *in_shapes, guint n_in,
                           const char *out_shape, const char *const *symbols,
                           WeirNode **lib_out) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new("linalg");
  for (guint i = 0; symbols && symbols[i]; i++)
    weir_graph_add_symbol(g, symbols[i]);
  WeirState *s = weir_graph_add_state(g, "main");
  g_autoptr(GPtrArray) conns = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < n_in; k++)
    if (in_shapes[k])
      g_ptr_array_add(conns, g_strdup_printf("in%u", k));
  g_ptr_array_add(conns, NULL);
  const char *outs[] = {"out0", NULL};
  WeirNode *lib = weir_state_add_library(
      g, s, label, op, (const char *const *)conns->pdata, outs);
  for (guint k = 0; k < n_in; k++) {
    if (!in_shapes[k])
      continue;
    g_autofree char *name = g_strdup_printf("X%u", k);
    g_autofree char *conn = g_strdup_printf("in%u", k);
    WeirContainer *c =
        weir_graph_add_array(g, name, dt, in_shapes[k], FALSE, &err);
    if (!c)
      fail_msg("container %s: %s", name, err->message);
    g_autoptr(WeirSubset) full = weir_container_full_subset(c);
    g_autofree char *sub = weir_subset_to_string(full);
    WeirNode *a = weir_state_add_access(g, s, name);
    if (!weir_state_add_memlet(g, s, a->id, NULL, lib->id, conn, name, sub,
                               &err))
      fail_msg("memlet: %s", err->message);
  }
  WeirContainer *y = weir_graph_add_array(g, "Y", dt, out_shape, FALSE, &err);
  if (!y)
    fail_msg("container Y: %s", err->message);
  g_autoptr(WeirSubset) full = weir_container_full_subset(y);
  g_autofree char *sub = weir_subset_to_string(full);
  WeirNode *ya = weir_state_add_access(g, s, "Y");
  if (!weir_state_add_memlet(g, s, lib->id, "out0", ya->id, NULL, "Y", sub,
                             &err))
    fail_msg("memlet: %s", err->message);
  *lib_out = lib;
  return g;
}

static void set_ints(WeirNode *n, const char *name, const gint64 *v,
                     guint count) {
  weir_node_set_attr_ints(n, name, v, count);
}

/* -------------------------------------------------------------- infer */

static void value_init(WeirOpValue *v, WeirDType dt, const char *shape) {
  memset(v, 0, sizeof *v);
  if (!shape)
    return;
  v->present = TRUE;
  v->dtype = dt;
  g_auto(GStrv) parts = g_strsplit(shape, ",", -1);
  v->rank = *shape ? g_strv_length(parts) : 0;
  v->shape = g_new0(WeirExpr *, v->rank + 1);
  for (guint d = 0; d < v->rank; d++) {
    g_autoptr(GError) err = NULL;
    v->shape[d] = weir_expr_parse(parts[d], &err);
    if (!v->shape[d])
      fail_msg("shape '%s': %s", shape, err->message);
  }
}

static char *value_shape(const WeirOpValue *v) {
  GString *s = g_string_new(NULL);
  for (guint d = 0; d < v->rank; d++) {
    g_autofree char *t = weir_expr_to_string(v->shape[d]);
    g_string_append_printf(s, "%s%s", d ? ", " : "", t);
  }
  return g_string_free(s, FALSE);
}

/* Runs the op's inference on node n with inputs of the given shapes (NULL:
 * absent).  Returns the output shape text, or NULL with *error set. */
static char *infer(const WeirNode *n, WeirDType dt, const char *const *shapes,
                   guint n_in, WeirDType *out_dtype, GError **error) {
  const WeirOpInfo *info = weir_op_lookup(n->op);
  assert_non_null(info);
  assert_true(n_in >= info->min_inputs && n_in <= info->max_inputs);
  WeirOpValue in[8], out[1];
  assert_true(n_in <= G_N_ELEMENTS(in));
  for (guint k = 0; k < n_in; k++)
    value_init(&in[k], dt, shapes[k]);
  memset(out, 0, sizeof out);
  WeirOpInferContext ctx = {n, n_in, in, 1, out, NULL};
  char *result = NULL;
  if (info->infer(&ctx, error)) {
    assert_true(out[0].present);
    if (out_dtype)
      *out_dtype = out[0].dtype;
    result = value_shape(&out[0]);
  }
  for (guint k = 0; k < n_in; k++)
    weir_op_value_clear(&in[k]);
  weir_op_value_clear(&out[0]);
  return result;
}

/* A library node on its own, for inference tests. */
static WeirNode *lone_node(WeirGraph *g, const char *op, const char *label) {
  WeirState *s = weir_graph_add_state(g, label);
  return weir_state_add_library(g, s, label, op, NULL, NULL);
}

static void assert_infer(const WeirNode *n, WeirDType dt,
                         const char *const *shapes, guint n_in,
                         const char *want) {
  g_autoptr(GError) err = NULL;
  WeirDType odt = WEIR_DTYPE_COUNT;
  g_autofree char *got = infer(n, dt, shapes, n_in, &odt, &err);
  if (!got)
    fail_msg("%s: inference failed: %s", n->label, err->message);
  assert_string_equal(got, want);
  assert_int_equal(odt, dt);
}

static void assert_infer_error(const WeirNode *n, WeirDType dt,
                               const char *const *shapes, guint n_in, gint code,
                               const char *fragment) {
  g_autoptr(GError) err = NULL;
  g_autofree char *got = infer(n, dt, shapes, n_in, NULL, &err);
  assert_null(got);
  assert_non_null(err);
  assert_int_equal(err->code, code);
  if (!strstr(err->message, fragment) || !strstr(err->message, n->label))
    fail_msg("message '%s' lacks '%s' or the node name", err->message,
             fragment);
}

/* Inference on the containers of a built graph gives Y's shape. */
static void assert_infer_matches_graph(WeirGraph *g, WeirNode *lib,
                                       guint n_in) {
  const char *shapes[8] = {NULL};
  g_autoptr(GPtrArray) texts = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < n_in; k++) {
    g_autofree char *name = g_strdup_printf("X%u", k);
    WeirContainer *c = weir_graph_container(g, name);
    if (!c)
      continue;
    GString *s = g_string_new(NULL);
    for (guint d = 0; d < c->shape->len; d++) {
      g_autofree char *t = weir_expr_to_string(c->shape->pdata[d]);
      g_string_append_printf(s, "%s%s", d ? ", " : "", t);
    }
    shapes[k] = s->str;
    g_ptr_array_add(texts, g_string_free(s, FALSE));
  }
  WeirContainer *y = weir_graph_container(g, "Y");
  GString *want = g_string_new(NULL);
  for (guint d = 0; d < y->shape->len; d++) {
    g_autofree char *t = weir_expr_to_string(y->shape->pdata[d]);
    g_string_append_printf(want, "%s%s", d ? ", " : "", t);
  }
  g_autofree char *want_text = g_string_free(want, FALSE);
  assert_infer(lib, y->dtype, shapes, n_in, want_text);
}

/* ------------------------------------------------------------ running */

static gboolean has_map_labelled(const WeirGraph *g, const char *label) {
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_MAP_ENTRY && g_strcmp0(n->label, label) == 0)
        return TRUE;
    }
  }
  return FALSE;
}

/* Expands every library node; checks the result validates, has no library
 * node left and has a map "<label>_mac" (or "_map"). */
static void expand_ok(WeirGraph *g, const char *label) {
  g_autoptr(GError) err = NULL;
  guint count = 0;
  if (!weir_expand_all(g, NULL, &count, &err))
    fail_msg("expand: %s", err->message);
  assert_int_equal(count, 1);
  if (!weir_graph_validate(g, &err))
    fail_msg("validate: %s", err->message);
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      assert_int_not_equal(n->kind, WEIR_NODE_LIBRARY);
    }
  }
  g_autofree char *mac = g_strdup_printf("%s_mac", label);
  g_autofree char *map = g_strdup_printf("%s_map", label);
  assert_true(has_map_labelled(g, mac) || has_map_labelled(g, map));
}

/* A zero tensor shaped like container `name` under the bindings. */
static WeirTensor *tensor_for(const WeirGraph *g, const char *name,
                              GHashTable *bindings) {
  WeirContainer *c = weir_graph_container(g, name);
  assert_non_null(c);
  gint64 shape[8];
  for (guint d = 0; d < c->shape->len; d++) {
    g_autoptr(GError) err = NULL;
    if (!weir_expr_eval(c->shape->pdata[d], bindings, &shape[d], &err))
      fail_msg("shape of %s: %s", name, err->message);
  }
  return weir_tensor_new(c->dtype, c->shape->len, shape);
}

/* Runs g on random inputs X0.. (seeded) and a garbage-filled Y.  Returns
 * the arguments (name -> tensor). */
static GHashTable *run_random(WeirGraph *g, GHashTable *bindings,
                              guint64 seed) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint k = 0; k < 8; k++) {
    g_autofree char *name = g_strdup_printf("X%u", k);
    if (!weir_graph_container(g, name))
      continue;
    WeirTensor *t = tensor_for(g, name, bindings);
    weir_tensor_fill_random(t, seed + k);
    g_hash_table_insert(args, g_steal_pointer(&name), t);
  }
  WeirTensor *y = tensor_for(g, "Y", bindings);
  weir_tensor_fill_random(y, seed + 1000); /* the init must overwrite it */
  g_hash_table_insert(args, g_strdup("Y"), y);
  g_autoptr(GError) err = NULL;
  if (!weir_interpret(g, bindings, args, NULL, &err))
    fail_msg("interpret: %s", err->message);
  return args;
}

static const WeirTensor *arg(GHashTable *args, const char *name) {
  return g_hash_table_lookup(args, name);
}

static void assert_close(const WeirTensor *got, const WeirTensor *want) {
  g_autoptr(GError) err = NULL;
  double tol = got->dtype == WEIR_DTYPE_F32   ? 1e-5
               : got->dtype == WEIR_DTYPE_F64 ? 1e-12
                                              : 0.0;
  if (!weir_tensor_allclose(got, want, tol, tol, NULL, &err))
    fail_msg("result differs from the reference: %s", err->message);
}

static double at(const WeirTensor *t, gint64 i) {
  return weir_tensor_get(t, i);
}

/* --------------------------------------------------------------- Gemm */

static void gemm_ref(const WeirTensor *a, const WeirTensor *b,
                     const WeirTensor *c, gboolean ta, gboolean tb,
                     double alpha, double beta, WeirTensor *y) {
  gint64 M = y->shape[0], N = y->shape[1];
  gint64 K = ta ? a->shape[0] : a->shape[1];
  for (gint64 m = 0; m < M; m++)
    for (gint64 n = 0; n < N; n++) {
      double acc = 0;
      for (gint64 k = 0; k < K; k++) {
        double av = ta ? at(a, k * M + m) : at(a, m * K + k);
        double bv = tb ? at(b, n * K + k) : at(b, k * N + n);
        acc += av * bv;
      }
      double v = alpha * acc;
      if (c) {
        gint64 ci = 0;
        if (c->rank == 1)
          ci = c->shape[0] == 1 ? 0 : n;
        else if (c->rank == 2)
          ci = (c->shape[0] == 1 ? 0 : m) * c->shape[1] +
               (c->shape[1] == 1 ? 0 : n);
        v += beta * at(c, ci);
      }
      weir_tensor_set(y, m * N + n, v);
    }
}

static void test_gemm_schema_and_infer(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  WeirNode *n = lone_node(g, "Gemm", "fc1");
  g_autoptr(GError) err = NULL;
  assert_true(weir_op_check_attrs(n, &err));
  assert_true(weir_node_attr(n, "alpha")->f == 1.0);
  assert_true(weir_node_attr(n, "beta")->f == 1.0);
  assert_int_equal(weir_node_attr(n, "transA")->i, 0);
  assert_int_equal(weir_node_attr(n, "transB")->i, 0);

  const char *s1[] = {"N, 4", "4, 5", "5"};
  assert_infer(n, WEIR_DTYPE_F32, s1, 3, "N, 5");
  const char *s2[] = {"N, 4", "4, 5", NULL};
  assert_infer(n, WEIR_DTYPE_F32, s2, 3, "N, 5");
  const char *s3[] = {"N, 4", "4, 5"};
  assert_infer(n, WEIR_DTYPE_F64, s3, 2, "N, 5");
  weir_node_set_attr_int(n, "transA", 1);
  weir_node_set_attr_int(n, "transB", 1);
  const char *s4[] = {"4, N", "5, 4", "N, 1"};
  assert_infer(n, WEIR_DTYPE_F32, s4, 3, "N, 5");

  weir_node_set_attr_int(n, "transA", 0);
  weir_node_set_attr_int(n, "transB", 0);
  const char *bad[] = {"3, 4", "5, 6"};
  assert_infer_error(n, WEIR_DTYPE_F32, bad, 2, WEIR_ERROR_INVALID,
                     "inner dimensions");
  const char *bad_c[] = {"3, 4", "4, 6", "3, 4"};
  assert_infer_error(n, WEIR_DTYPE_F32, bad_c, 3, WEIR_ERROR_INVALID,
                     "does not broadcast");
  const char *bad_rank[] = {"2, 3, 4", "4, 6"};
  assert_infer_error(n, WEIR_DTYPE_F32, bad_rank, 2, WEIR_ERROR_INVALID,
                     "input 0 has rank 3, expected 2");
  assert_infer_error(n, WEIR_DTYPE_BOOL, s3, 2, WEIR_ERROR_INVALID,
                     "dtype bool");
}

typedef struct {
  WeirDType dt;
  const char *a, *b, *c; /* shapes; c may be NULL */
  const char *y;
  gint64 ta, tb;
  double alpha, beta;
} GemmCase;

static void run_gemm(const GemmCase *gc, guint64 seed) {
  const char *shapes[] = {gc->a, gc->b, gc->c};
  const char *syms[] = {"M", NULL};
  WeirNode *lib;
  g_autoptr(WeirGraph) g =
      op_graph("Gemm", "fc", gc->dt, shapes, gc->c ? 3 : 2, gc->y, syms, &lib);
  weir_node_set_attr_int(lib, "transA", gc->ta);
  weir_node_set_attr_int(lib, "transB", gc->tb);
  weir_node_set_attr_float(lib, "alpha", gc->alpha);
  weir_node_set_attr_float(lib, "beta", gc->beta);
  g_autoptr(GError) err = NULL;
  assert_true(weir_op_check_attrs(lib, &err));
  assert_infer_matches_graph(g, lib, 3);
  expand_ok(g, "fc");
  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "M", 3);
  g_autoptr(GHashTable) args = run_random(g, b, seed);
  g_autoptr(WeirTensor) want = tensor_for(g, "Y", b);
  gemm_ref(arg(args, "X0"), arg(args, "X1"), arg(args, "X2"), gc->ta != 0,
           gc->tb != 0, gc->alpha, gc->beta, want);
  assert_close(arg(args, "Y"), want);
}

static void test_gemm_run(void **state) {
  (void)state;
  const GemmCase cases[] = {
      {WEIR_DTYPE_F32, "3, 4", "4, 5", NULL, "3, 5", 0, 0, 1.0, 1.0},
      {WEIR_DTYPE_F32, "M, 4", "4, 5", "5", "M, 5", 0, 0, 1.0, 1.0},
      {WEIR_DTYPE_F32, "4, 3", "5, 4", "3, 5", "3, 5", 1, 1, 0.25, 0.35},
      {WEIR_DTYPE_F32, "4, 3", "4, 5", "", "3, 5", 1, 0, 1.0, 2.0},
      {WEIR_DTYPE_F32, "3, 4", "5, 4", "1, 5", "3, 5", 0, 1, 0.5, 1.0},
      {WEIR_DTYPE_F32, "3, 4", "4, 5", "3, 1", "3, 5", 0, 0, 1.0, 0.0},
      {WEIR_DTYPE_F32, "3, 4", "4, 5", "1", "3, 5", 0, 0, 1.0, -1.5},
      {WEIR_DTYPE_F64, "M, 6", "6, 2", "M, 2", "M, 2", 0, 0, 0.5, 0.5},
      {WEIR_DTYPE_I32, "3, 4", "4, 5", "5", "3, 5", 0, 0, 2.0, 3.0},
      {WEIR_DTYPE_I64, "4, 3", "5, 4", NULL, "3, 5", 1, 1, 1.0, 1.0},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    run_gemm(&cases[i], 100 + 10 * i);
}

static void test_gemm_flops_and_errors(void **state) {
  (void)state;
  const char *shapes[] = {"M, 4", "4, 5", "5"};
  const char *syms[] = {"M", NULL};
  WeirNode *lib;
  g_autoptr(WeirGraph) g =
      op_graph("Gemm", "fc", WEIR_DTYPE_F32, shapes, 3, "M, 5", syms, &lib);
  g_autoptr(GError) err = NULL;
  assert_true(weir_op_check_attrs(lib, &err));
  WeirState *s = g_ptr_array_index(g->states, 0);
  g_autoptr(WeirExpr) f = weir_op_lookup("Gemm")->flops(g, s, lib);
  g_autofree char *text = weir_expr_to_string(f);
  assert_string_equal(text, "45*M"); /* 2*M*5*4 + M*5 */

  /* A non-integral alpha cannot scale an integer Gemm exactly. */
  WeirNode *lib2;
  g_autoptr(WeirGraph) g2 =
      op_graph("Gemm", "fc", WEIR_DTYPE_I32, shapes, 3, "M, 5", syms, &lib2);
  weir_node_set_attr_float(lib2, "alpha", 0.5);
  assert_true(weir_op_check_attrs(lib2, &err));
  assert_false(weir_expand_all(g2, NULL, NULL, &err));
  assert_int_equal(err->code, WEIR_ERROR_UNSUPPORTED);
  assert_non_null(strstr(err->message, "alpha"));
  /* and the program is unchanged */
  assert_non_null(weir_graph_node(g2, lib2->id, NULL));
}

/* ------------------------------------------------------------- MatMul */

/* numpy matmul on row-major tensors, batch dimensions broadcast. */
static void matmul_ref(const WeirTensor *a, const WeirTensor *b,
                       WeirTensor *y) {
  gint64 as[8], bs[8];
  guint ra = a->rank, rb = b->rank;
  /* Promote vectors to matrices. */
  if (ra == 1) {
    as[0] = 1, as[1] = a->shape[0], ra = 2;
  } else {
    memcpy(as, a->shape, ra * sizeof(gint64));
  }
  if (rb == 1) {
    bs[0] = b->shape[0], bs[1] = 1, rb = 2;
  } else {
    memcpy(bs, b->shape, rb * sizeof(gint64));
  }
  gint64 M = as[ra - 2], K = as[ra - 1], N = bs[rb - 1];
  guint nb = MAX(ra, rb) - 2;
  gint64 batch[8], count = 1;
  for (guint d = 0; d < nb; d++) {
    gint64 da = d + ra >= nb + 2 ? as[d + ra - 2 - nb] : 1;
    gint64 db = d + rb >= nb + 2 ? bs[d + rb - 2 - nb] : 1;
    batch[d] = MAX(da, db);
    count *= batch[d];
  }
  for (gint64 flat = 0; flat < count; flat++) {
    /* Offsets of this batch entry in A and B. */
    gint64 rem = flat, oa = 0, ob = 0, sa = 1, sb = 1;
    for (gint d = (gint)nb - 1; d >= 0; d--) {
      gint64 idx = rem % batch[d];
      rem /= batch[d];
      gint da = d - (gint)nb + (gint)ra - 2; /* A's dimension, if any */
      gint db = d - (gint)nb + (gint)rb - 2;
      if (da >= 0) {
        oa += (as[da] == 1 ? 0 : idx) * sa;
        sa *= as[da];
      }
      if (db >= 0) {
        ob += (bs[db] == 1 ? 0 : idx) * sb;
        sb *= bs[db];
      }
    }
    for (gint64 m = 0; m < M; m++)
      for (gint64 n = 0; n < N; n++) {
        double acc = 0;
        for (gint64 k = 0; k < K; k++)
          acc += at(a, oa * M * K + m * K + k) * at(b, ob * K * N + k * N + n);
        weir_tensor_set(y, flat * M * N + m * N + n, acc);
      }
  }
}

static void test_matmul_infer(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  WeirNode *n = lone_node(g, "MatMul", "mm");
  g_autoptr(GError) err = NULL;
  assert_true(weir_op_check_attrs(n, &err));
  const char *s1[] = {"N, 3, 4", "4, 5"};
  assert_infer(n, WEIR_DTYPE_F32, s1, 2, "N, 3, 5");
  const char *s2[] = {"4", "2, 4, 5"};
  assert_infer(n, WEIR_DTYPE_F32, s2, 2, "2, 5");
  const char *s3[] = {"3, 4", "4"};
  assert_infer(n, WEIR_DTYPE_I64, s3, 2, "3");
  const char *s4[] = {"4", "4"};
  assert_infer(n, WEIR_DTYPE_F32, s4, 2, "");
  const char *s5[] = {"2, 1, 3, 4", "5, 4, 6"};
  assert_infer(n, WEIR_DTYPE_F32, s5, 2, "2, 5, 3, 6");
  const char *bad[] = {"3, 4", "5, 6"};
  assert_infer_error(n, WEIR_DTYPE_F32, bad, 2, WEIR_ERROR_INVALID,
                     "inner dimensions of A and B differ: 4 and 5");
  const char *bad_batch[] = {"2, 3, 4", "3, 4, 6"};
  assert_infer_error(n, WEIR_DTYPE_F32, bad_batch, 2, WEIR_ERROR_INVALID,
                     "batch dimensions");
}

static void run_matmul(WeirDType dt, const char *a, const char *b,
                       const char *y, guint64 seed) {
  const char *shapes[] = {a, b};
  const char *syms[] = {"N", NULL};
  WeirNode *lib;
  g_autoptr(WeirGraph) g =
      op_graph("MatMul", "mm", dt, shapes, 2, y, syms, &lib);
  g_autoptr(GError) err = NULL;
  assert_true(weir_op_check_attrs(lib, &err));
  assert_infer_matches_graph(g, lib, 2);
  expand_ok(g, "mm");
  g_autoptr(GHashTable) bind = weir_bindings_new();
  weir_bindings_set(bind, "N", 2);
  g_autoptr(GHashTable) args = run_random(g, bind, seed);
  g_autoptr(WeirTensor) want = tensor_for(g, "Y", bind);
  matmul_ref(arg(args, "X0"), arg(args, "X1"), want);
  assert_close(arg(args, "Y"), want);
}

static void test_matmul_run(void **state) {
  (void)state;
  run_matmul(WEIR_DTYPE_F32, "3, 4", "4, 5", "3, 5", 1);
  run_matmul(WEIR_DTYPE_F32, "N, 3, 4", "4, 5", "N, 3, 5", 2);
  run_matmul(WEIR_DTYPE_F32, "N, 3, 4", "N, 4, 2", "N, 3, 2", 3);
  run_matmul(WEIR_DTYPE_F32, "2, 1, 3, 4", "5, 4, 2", "2, 5, 3, 2", 4);
  run_matmul(WEIR_DTYPE_F32, "4", "N, 4, 5", "N, 5", 5);
  run_matmul(WEIR_DTYPE_F64, "3, 4", "4", "3", 6);
  run_matmul(WEIR_DTYPE_F32, "7", "7", "", 7);
  run_matmul(WEIR_DTYPE_I32, "2, 3, 4", "4, 3", "2, 3, 3", 8);
  run_matmul(WEIR_DTYPE_I64, "1, 3, 4", "2, 4, 3", "2, 3, 3", 9);
}

/* --------------------------------------------------------------- Conv */

typedef struct {
  gint64 strides[3], dilations[3], pads[6];
  gint64 group;
} ConvRef;

/* Direct convolution.  pads holds the begin pads in [0, ns). */
static void conv_ref(const WeirTensor *x, const WeirTensor *w,
                     const WeirTensor *b, const ConvRef *p, WeirTensor *y) {
  guint ns = x->rank - 2;
  gint64 N = x->shape[0], C = x->shape[1], M = w->shape[0], Cg = w->shape[1];
  gint64 in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  for (guint d = 0; d < ns; d++) {
    in[d] = x->shape[2 + d];
    k[d] = w->shape[2 + d];
    out[d] = y->shape[2 + d];
  }
  gint64 in_size = in[0] * in[1] * in[2], k_size = k[0] * k[1] * k[2];
  gint64 out_size = out[0] * out[1] * out[2];
  gint64 m_per = M / p->group;
  for (gint64 n = 0; n < N; n++)
    for (gint64 m = 0; m < M; m++)
      for (gint64 o = 0; o < out_size; o++) {
        gint64 od[3] = {o / (out[1] * out[2]), o / out[2] % out[1], o % out[2]};
        double acc = b ? at(b, m) : 0.0;
        gint64 g = m / m_per;
        for (gint64 c = 0; c < Cg; c++)
          for (gint64 kk = 0; kk < k_size; kk++) {
            gint64 kd[3] = {kk / (k[1] * k[2]), kk / k[2] % k[1], kk % k[2]};
            gint64 off = 0;
            gboolean inside = TRUE;
            for (guint d = 0; d < 3; d++) {
              gint64 pos = d < ns ? od[d] * p->strides[d] +
                                        kd[d] * p->dilations[d] - p->pads[d]
                                  : 0;
              if (pos < 0 || pos >= in[d])
                inside = FALSE;
              off = off * in[d] + pos;
            }
            if (!inside)
              continue;
            double xv = at(x, (n * C + g * Cg + c) * in_size + off);
            double wv = at(w, (m * Cg + c) * k_size + kk);
            acc += xv * wv;
          }
        weir_tensor_set(y, (n * M + m) * out_size + o, acc);
      }
}

static void test_conv_schema_and_infer(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  WeirNode *n = lone_node(g, "Conv", "conv1");
  g_autoptr(GError) err = NULL;
  assert_true(weir_op_check_attrs(n, &err));
  assert_string_equal(weir_node_attr(n, "auto_pad")->s, "NOTSET");
  assert_int_equal(weir_node_attr(n, "group")->i, 1);
  assert_null(weir_node_attr(n, "kernel_shape"));
  assert_null(weir_node_attr(n, "pads"));

  const char *s1[] = {"N, 3, 7, 7", "8, 3, 3, 3", "8"};
  assert_infer(n, WEIR_DTYPE_F32, s1, 3, "N, 8, 5, 5");
  gint64 pads[] = {1, 1, 1, 1}, strides[] = {2, 2};
  set_ints(n, "pads", pads, 4);
  set_ints(n, "strides", strides, 2);
  assert_infer(n, WEIR_DTYPE_F32, s1, 3, "N, 8, 4, 4");
  /* Symbolic spatial size: floor division stays symbolic. */
  const char *s2[] = {"1, 3, H, 9", "8, 3, 3, 3"};
  assert_infer(n, WEIR_DTYPE_F32, s2, 2, "1, 8, (H - 1) // 2 + 1, 5");

  g_autoptr(WeirGraph) g2 = weir_graph_new("t");
  WeirNode *same = lone_node(g2, "Conv", "conv2");
  weir_node_set_attr_string(same, "auto_pad", "SAME_UPPER");
  set_ints(same, "strides", strides, 2);
  assert_true(weir_op_check_attrs(same, &err));
  assert_infer(same, WEIR_DTYPE_F32, s1, 3, "N, 8, 4, 4");
  gint64 group = 3;
  weir_node_set_attr_int(same, "group", group);
  const char *s3[] = {"N, 6, 7, 7", "9, 2, 3, 3"};
  assert_infer(same, WEIR_DTYPE_F64, s3, 2, "N, 9, 4, 4");

  const char *bad_rank[] = {"N, 3, 7, 7", "8, 3, 3"};
  assert_infer_error(n, WEIR_DTYPE_F32, bad_rank, 2, WEIR_ERROR_INVALID,
                     "input 1 has rank 3, expected 4");
  const char *bad_c[] = {"N, 4, 7, 7", "8, 3, 3, 3"};
  assert_infer_error(n, WEIR_DTYPE_F32, bad_c, 2, WEIR_ERROR_INVALID,
                     "input channels");
  assert_infer_error(n, WEIR_DTYPE_I64, s1, 2, WEIR_ERROR_INVALID, "dtype i64");
  gint64 bad_strides[] = {1, 1, 1};
  set_ints(n, "strides", bad_strides, 3);
  assert_infer_error(n, WEIR_DTYPE_F32, s1, 2, WEIR_ERROR_INVALID,
                     "'strides' has 3 values, expected 2");
  weir_node_set_attr_string(same, "auto_pad", "FULL");
  assert_infer_error(same, WEIR_DTYPE_F64, s3, 2, WEIR_ERROR_INVALID,
                     "auto_pad");
}

typedef struct {
  const char *x, *w, *b, *y;
  gint64 strides[3], dilations[3], pads[6];
  gint64 group;
  const char *auto_pad;
  WeirDType dt;
} ConvCase;

static void run_conv(const ConvCase *cc, guint64 seed) {
  const char *shapes[] = {cc->x, cc->w, cc->b};
  const char *syms[] = {"N", NULL};
  WeirNode *lib;
  WeirDType dt = cc->dt == WEIR_DTYPE_F64 ? WEIR_DTYPE_F64 : WEIR_DTYPE_F32;
  g_autoptr(WeirGraph) g =
      op_graph("Conv", "conv", dt, shapes, cc->b ? 3 : 2, cc->y, syms, &lib);
  guint ns = 0;
  for (const char *p = cc->x; *p; p++)
    ns += *p == ',';
  ns -= 1;
  ConvRef ref = {{1, 1, 1}, {1, 1, 1}, {0}, cc->group ? cc->group : 1};
  if (cc->strides[0]) {
    set_ints(lib, "strides", cc->strides, ns);
    memcpy(ref.strides, cc->strides, sizeof ref.strides);
  }
  if (cc->dilations[0]) {
    set_ints(lib, "dilations", cc->dilations, ns);
    memcpy(ref.dilations, cc->dilations, sizeof ref.dilations);
  }
  gboolean any_pad = FALSE;
  for (guint i = 0; i < 2 * ns; i++)
    any_pad |= cc->pads[i] != 0;
  if (any_pad)
    set_ints(lib, "pads", cc->pads, 2 * ns);
  if (cc->group)
    weir_node_set_attr_int(lib, "group", cc->group);
  if (cc->auto_pad)
    weir_node_set_attr_string(lib, "auto_pad", cc->auto_pad);
  g_autoptr(GError) err = NULL;
  assert_true(weir_op_check_attrs(lib, &err));
  assert_infer_matches_graph(g, lib, 3);
  expand_ok(g, "conv");

  g_autoptr(GHashTable) bind = weir_bindings_new();
  weir_bindings_set(bind, "N", 2);
  g_autoptr(GHashTable) args = run_random(g, bind, seed);
  const WeirTensor *x = arg(args, "X0"), *w = arg(args, "X1");
  /* Begin pads, computed here from the ONNX rules. */
  for (guint d = 0; d < ns; d++) {
    gint64 in = x->shape[2 + d], k = w->shape[2 + d];
    gint64 s = ref.strides[d], dl = ref.dilations[d];
    if (cc->auto_pad && g_str_has_prefix(cc->auto_pad, "SAME")) {
      gint64 out = (in + s - 1) / s;
      gint64 total = MAX(0, (out - 1) * s + (k - 1) * dl + 1 - in);
      ref.pads[d] = strcmp(cc->auto_pad, "SAME_UPPER") == 0 ? total / 2
                                                            : total - total / 2;
    } else if (cc->auto_pad && strcmp(cc->auto_pad, "VALID") == 0) {
      ref.pads[d] = 0;
    } else {
      ref.pads[d] = cc->pads[d];
    }
  }
  g_autoptr(WeirTensor) want = tensor_for(g, "Y", bind);
  conv_ref(x, w, arg(args, "X2"), &ref, want);
  assert_close(arg(args, "Y"), want);
}

static void test_conv_run(void **state) {
  (void)state;
  const ConvCase cases[] = {
      /* plain 2-D, no padding */
      {"1, 1, 5, 5",
       "1, 1, 3, 3",
       NULL,
       "1, 1, 3, 3",
       {0},
       {0},
       {0},
       0,
       NULL,
       WEIR_DTYPE_F32},
      /* symbolic batch, bias, padding 1 */
      {"N, 3, 5, 5",
       "4, 3, 3, 3",
       "4",
       "N, 4, 5, 5",
       {0},
       {0},
       {1, 1, 1, 1},
       0,
       NULL,
       WEIR_DTYPE_F32},
      /* strides and asymmetric padding (ONNX test shape) */
      {"1, 1, 7, 5",
       "1, 1, 3, 3",
       NULL,
       "1, 1, 4, 2",
       {2, 2},
       {0},
       {1, 0, 1, 0},
       0,
       NULL,
       WEIR_DTYPE_F32},
      /* dilations with padding */
      {"1, 2, 7, 7",
       "3, 2, 3, 3",
       "3",
       "1, 3, 5, 5",
       {0},
       {2, 2},
       {1, 1, 1, 1},
       0,
       NULL,
       WEIR_DTYPE_F64},
      /* groups */
      {"2, 4, 5, 5",
       "6, 2, 3, 3",
       "6",
       "2, 6, 3, 3",
       {0},
       {0},
       {0},
       2,
       NULL,
       WEIR_DTYPE_F32},
      /* depthwise, strided, padded */
      {"1, 3, 6, 6",
       "3, 1, 3, 3",
       NULL,
       "1, 3, 3, 3",
       {2, 2},
       {0},
       {1, 1, 1, 1},
       3,
       NULL,
       WEIR_DTYPE_F32},
      /* auto_pad */
      {"1, 2, 5, 6",
       "2, 2, 3, 2",
       NULL,
       "1, 2, 3, 3",
       {2, 2},
       {0},
       {0},
       0,
       "SAME_UPPER",
       WEIR_DTYPE_F32},
      {"1, 2, 5, 6",
       "2, 2, 4, 2",
       NULL,
       "1, 2, 3, 3",
       {2, 2},
       {0},
       {0},
       0,
       "SAME_LOWER",
       WEIR_DTYPE_F32},
      {"1, 2, 5, 6",
       "2, 2, 3, 3",
       NULL,
       "1, 2, 2, 2",
       {2, 2},
       {0},
       {0},
       0,
       "VALID",
       WEIR_DTYPE_F32},
      /* 1-D */
      {"N, 2, 9",
       "3, 2, 3",
       "3",
       "N, 3, 4",
       {2},
       {1},
       {1, 0},
       0,
       NULL,
       WEIR_DTYPE_F32},
      /* 3-D */
      {"1, 2, 4, 5, 3",
       "2, 2, 2, 3, 2",
       "2",
       "1, 2, 4, 3, 4",
       {1, 2, 1},
       {0},
       {1, 1, 1, 0, 1, 1},
       0,
       NULL,
       WEIR_DTYPE_F32},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    run_conv(&cases[i], 300 + 10 * i);
}

static void test_conv_flops(void **state) {
  (void)state;
  const char *shapes[] = {"N, 4, 5, 5", "6, 2, 3, 3"};
  const char *syms[] = {"N", NULL};
  WeirNode *lib;
  g_autoptr(WeirGraph) g = op_graph("Conv", "conv", WEIR_DTYPE_F32, shapes, 2,
                                    "N, 6, 3, 3", syms, &lib);
  weir_node_set_attr_int(lib, "group", 2);
  WeirState *s = g_ptr_array_index(g->states, 0);
  g_autoptr(WeirExpr) f = weir_op_lookup("Conv")->flops(g, s, lib);
  g_autofree char *text = weir_expr_to_string(f);
  /* 2 * (N*6*3*3) * 2 * 9 */
  assert_string_equal(text, "1944*N");
}

/* ------------------------------------------------------ ConvTranspose */

/* Gather form: y[o] sums x[i] * w[k] over the (i, k) with
 * i*s + k*d - pad = o. */
static void conv_transpose_ref(const WeirTensor *x, const WeirTensor *w,
                               const WeirTensor *b, const ConvRef *p,
                               WeirTensor *y) {
  guint ns = x->rank - 2;
  gint64 N = x->shape[0], C = x->shape[1], Mg = w->shape[1];
  gint64 M = y->shape[1], Cg = C / p->group;
  gint64 in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  for (guint d = 0; d < ns; d++) {
    in[d] = x->shape[2 + d];
    k[d] = w->shape[2 + d];
    out[d] = y->shape[2 + d];
  }
  gint64 in_size = in[0] * in[1] * in[2], k_size = k[0] * k[1] * k[2];
  gint64 out_size = out[0] * out[1] * out[2];
  for (gint64 n = 0; n < N; n++)
    for (gint64 m = 0; m < M; m++)
      for (gint64 o = 0; o < out_size; o++) {
        gint64 od[3] = {o / (out[1] * out[2]), o / out[2] % out[1], o % out[2]};
        double acc = b ? at(b, m) : 0.0;
        gint64 g = m / Mg, ml = m % Mg;
        for (gint64 c = g * Cg; c < (g + 1) * Cg; c++)
          for (gint64 kk = 0; kk < k_size; kk++) {
            gint64 kd[3] = {kk / (k[1] * k[2]), kk / k[2] % k[1], kk % k[2]};
            gint64 off = 0;
            gboolean hit = TRUE;
            for (guint d = 0; d < 3; d++) {
              gint64 i = 0;
              if (d < ns) {
                gint64 t = od[d] + p->pads[d] - kd[d] * p->dilations[d];
                if (t < 0 || t % p->strides[d] != 0 ||
                    t / p->strides[d] >= in[d])
                  hit = FALSE;
                i = t / p->strides[d];
              }
              off = off * in[d] + i;
            }
            if (hit)
              acc += at(x, (n * C + c) * in_size + off) *
                     at(w, (c * Mg + ml) * k_size + kk);
          }
        weir_tensor_set(y, (n * M + m) * out_size + o, acc);
      }
}

static void test_conv_transpose_infer(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  WeirNode *n = lone_node(g, "ConvTranspose", "up1");
  g_autoptr(GError) err = NULL;
  assert_true(weir_op_check_attrs(n, &err));
  assert_string_equal(weir_node_attr(n, "auto_pad")->s, "NOTSET");
  assert_null(weir_node_attr(n, "output_shape"));
  const char *s1[] = {"N, 1, 3, 3", "1, 2, 3, 3"};
  assert_infer(n, WEIR_DTYPE_F32, s1, 2, "N, 2, 5, 5");
  gint64 strides[] = {3, 2}, out_pad[] = {1, 1}, pads[] = {0, 0, 1, 1};
  set_ints(n, "strides", strides, 2);
  assert_infer(n, WEIR_DTYPE_F32, s1, 2, "N, 2, 9, 7");
  set_ints(n, "output_padding", out_pad, 2);
  assert_infer(n, WEIR_DTYPE_F32, s1, 2, "N, 2, 10, 8");
  set_ints(n, "pads", pads, 4);
  assert_infer(n, WEIR_DTYPE_F32, s1, 2, "N, 2, 9, 7");
  gint64 os[] = {10, 8};
  set_ints(n, "output_shape", os, 2);
  assert_infer(n, WEIR_DTYPE_F32, s1, 2, "N, 2, 10, 8");
  weir_node_set_attr_int(n, "group", 2);
  const char *s2[] = {"N, 4, 3, 3", "4, 3, 3, 3", "6"};
  assert_infer(n, WEIR_DTYPE_F32, s2, 3, "N, 6, 10, 8");
  const char *bad[] = {"N, 4, 3, 3", "2, 3, 3, 3"};
  assert_infer_error(n, WEIR_DTYPE_F32, bad, 2, WEIR_ERROR_INVALID,
                     "input channels of X and W differ");
  const char *bad_bias[] = {"N, 4, 3, 3", "4, 3, 3, 3", "3"};
  assert_infer_error(n, WEIR_DTYPE_F32, bad_bias, 3, WEIR_ERROR_INVALID,
                     "bias size");
}

typedef struct {
  const char *x, *w, *b, *y;
  gint64 strides[3], dilations[3], pads[6], output_padding[3];
  gint64 output_shape[3];
  gint64 group;
  const char *auto_pad;
} ConvTCase;

static void run_conv_transpose(const ConvTCase *cc, guint64 seed) {
  const char *shapes[] = {cc->x, cc->w, cc->b};
  const char *syms[] = {"N", NULL};
  WeirNode *lib;
  g_autoptr(WeirGraph) g = op_graph("ConvTranspose", "up", WEIR_DTYPE_F32,
                                    shapes, cc->b ? 3 : 2, cc->y, syms, &lib);
  guint ns = 0;
  for (const char *p = cc->x; *p; p++)
    ns += *p == ',';
  ns -= 1;
  ConvRef ref = {{1, 1, 1}, {1, 1, 1}, {0}, cc->group ? cc->group : 1};
  if (cc->strides[0]) {
    set_ints(lib, "strides", cc->strides, ns);
    memcpy(ref.strides, cc->strides, sizeof ref.strides);
  }
  if (cc->dilations[0]) {
    set_ints(lib, "dilations", cc->dilations, ns);
    memcpy(ref.dilations, cc->dilations, sizeof ref.dilations);
  }
  gboolean any_pad = FALSE, any_op = FALSE;
  for (guint i = 0; i < 2 * ns; i++)
    any_pad |= cc->pads[i] != 0;
  for (guint i = 0; i < ns; i++)
    any_op |= cc->output_padding[i] != 0;
  if (any_pad)
    set_ints(lib, "pads", cc->pads, 2 * ns);
  if (any_op)
    set_ints(lib, "output_padding", cc->output_padding, ns);
  if (cc->output_shape[0])
    set_ints(lib, "output_shape", cc->output_shape, ns);
  if (cc->group)
    weir_node_set_attr_int(lib, "group", cc->group);
  if (cc->auto_pad)
    weir_node_set_attr_string(lib, "auto_pad", cc->auto_pad);
  g_autoptr(GError) err = NULL;
  assert_true(weir_op_check_attrs(lib, &err));
  assert_infer_matches_graph(g, lib, 3);
  expand_ok(g, "up");

  g_autoptr(GHashTable) bind = weir_bindings_new();
  weir_bindings_set(bind, "N", 2);
  g_autoptr(GHashTable) args = run_random(g, bind, seed);
  const WeirTensor *x = arg(args, "X0"), *w = arg(args, "X1");
  g_autoptr(WeirTensor) want = tensor_for(g, "Y", bind);
  for (guint d = 0; d < ns; d++) {
    if (cc->auto_pad && g_str_has_prefix(cc->auto_pad, "SAME")) {
      /* total = s*(in-1) + output_padding + (k-1)*d + 1 - out */
      gint64 total =
          ref.strides[d] * (x->shape[2 + d] - 1) + cc->output_padding[d] +
          (w->shape[2 + d] - 1) * ref.dilations[d] + 1 - want->shape[2 + d];
      gint64 half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      ref.pads[d] =
          strcmp(cc->auto_pad, "SAME_UPPER") == 0 ? half : total - half;
    } else {
      ref.pads[d] = cc->pads[d];
    }
  }
  conv_transpose_ref(x, w, arg(args, "X2"), &ref, want);
  assert_close(arg(args, "Y"), want);
}

static void test_conv_transpose_run(void **state) {
  (void)state;
  const ConvTCase cases[] = {
      /* 1-D (ONNX test_convtranspose_1d shape) */
      {"1, 1, 3", "1, 2, 3", NULL, "1, 2, 5", {0}, {0}, {0}, {0}, {0}, 0, NULL},
      /* 2-D with bias, symbolic batch */
      {"N, 2, 3, 3",
       "2, 3, 3, 3",
       "3",
       "N, 3, 5, 5",
       {0},
       {0},
       {0},
       {0},
       {0},
       0,
       NULL},
      /* strides and pads */
      {"1, 1, 3, 3",
       "1, 2, 3, 3",
       NULL,
       "1, 2, 7, 3",
       {3, 2},
       {0},
       {1, 2, 1, 2},
       {0},
       {0},
       0,
       NULL},
      /* strides with output_padding */
      {"1, 1, 3, 3",
       "1, 2, 3, 3",
       NULL,
       "1, 2, 10, 8",
       {3, 2},
       {0},
       {0},
       {1, 1},
       {0},
       0,
       NULL},
      /* output_shape larger than the full output */
      {"1, 1, 3, 3",
       "1, 2, 3, 3",
       NULL,
       "1, 2, 10, 8",
       {3, 2},
       {0},
       {0},
       {0},
       {10, 8},
       0,
       NULL},
      /* dilations */
      {"1, 1, 3, 3",
       "1, 1, 2, 2",
       NULL,
       "1, 1, 5, 5",
       {0},
       {2, 2},
       {0},
       {0},
       {0},
       0,
       NULL},
      /* auto_pad SAME_UPPER / SAME_LOWER: output = input * stride */
      {"1, 1, 3, 3",
       "1, 2, 3, 3",
       NULL,
       "1, 2, 6, 6",
       {2, 2},
       {0},
       {0},
       {0},
       {0},
       0,
       "SAME_UPPER"},
      {"1, 1, 3, 3",
       "1, 2, 3, 3",
       NULL,
       "1, 2, 6, 6",
       {2, 2},
       {0},
       {0},
       {0},
       {0},
       0,
       "SAME_LOWER"},
      /* groups with bias, strided, padded */
      {"N, 4, 3, 2",
       "4, 3, 2, 3",
       "6",
       "N, 6, 6, 4",
       {2, 2},
       {0},
       {1, 1, 0, 0},
       {1, 0},
       {0},
       2,
       NULL},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    run_conv_transpose(&cases[i], 500 + 10 * i);
}

/* ------------------------------------------------------------- Einsum */

/* Reference einsum: every assignment of the letters, in an odometer. */
static void einsum_ref(const char *const *terms, guint n_in, const char *output,
                       const WeirTensor *const *ins, WeirTensor *y) {
  char letters[64] = {0};
  gint64 size[128] = {0};
  guint nl = 0;
  for (guint k = 0; k < n_in; k++)
    for (guint d = 0; terms[k][d]; d++) {
      char l = terms[k][d];
      if (!strchr(letters, l))
        letters[nl++] = l;
      size[(guchar)l] = ins[k]->shape[d];
    }
  for (gint64 i = 0; i < y->count; i++)
    weir_tensor_set(y, i, 0);
  gint64 idx[128] = {0};
  double *acc = g_new0(double, y->count);
  for (;;) {
    double prod = 1;
    for (guint k = 0; k < n_in; k++) {
      gint64 off = 0;
      for (guint d = 0; terms[k][d]; d++)
        off = off * ins[k]->shape[d] + idx[(guchar)terms[k][d]];
      prod *= at(ins[k], off);
    }
    gint64 yo = 0;
    for (guint d = 0; output[d]; d++)
      yo = yo * size[(guchar)output[d]] + idx[(guchar)output[d]];
    acc[yo] += prod;
    guint p = 0;
    for (; p < nl; p++) {
      guchar l = (guchar)letters[nl - 1 - p];
      if (++idx[l] < size[l])
        break;
      idx[l] = 0;
    }
    if (p == nl)
      break;
  }
  for (gint64 i = 0; i < y->count; i++)
    weir_tensor_set(y, i, acc[i]);
  g_free(acc);
}

static void test_einsum_infer(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  WeirNode *n = lone_node(g, "Einsum", "attn");
  g_autoptr(GError) err = NULL;
  assert_false(weir_op_check_attrs(n, &err)); /* equation is required */
  assert_non_null(strstr(err->message, "equation"));
  g_clear_error(&err);
  weir_node_set_attr_string(n, "equation", "bhid,bhjd->bhij");
  assert_true(weir_op_check_attrs(n, &err));
  const char *s1[] = {"B, 2, 5, 8", "B, 2, 7, 8"};
  assert_infer(n, WEIR_DTYPE_F32, s1, 2, "B, 2, 5, 7");
  weir_node_set_attr_string(n, "equation", "ij, jk");
  const char *s2[] = {"3, 4", "4, 5"};
  assert_infer(n, WEIR_DTYPE_I32, s2, 2, "3, 5");
  weir_node_set_attr_string(n, "equation", "ij->ji");
  const char *s3[] = {"3, N"};
  assert_infer(n, WEIR_DTYPE_F32, s3, 1, "N, 3");
  weir_node_set_attr_string(n, "equation", "i,i");
  const char *s4[] = {"4", "4"};
  assert_infer(n, WEIR_DTYPE_F64, s4, 2, "");

  /* diagonals and the ellipsis */
  weir_node_set_attr_string(n, "equation", "ii->i");
  const char *sq[] = {"3, 3"};
  assert_infer(n, WEIR_DTYPE_F32, sq, 1, "3");
  weir_node_set_attr_string(n, "equation", "...ij->...ji");
  assert_infer(n, WEIR_DTYPE_F32, sq, 1, "3, 3");
  const char *b4[] = {"B, 2, 3, 4"};
  assert_infer(n, WEIR_DTYPE_F32, b4, 1, "B, 2, 4, 3");
  weir_node_set_attr_string(n, "equation", "...ii->...i");
  const char *bd[] = {"3, 5, 5"};
  assert_infer(n, WEIR_DTYPE_F32, bd, 1, "3, 5");
  weir_node_set_attr_string(n, "equation", "...ij,...jk");
  const char *bmm[] = {"B, 3, 4", "4, 5"};
  assert_infer(n, WEIR_DTYPE_F32, bmm, 2, "B, 3, 5");
  weir_node_set_attr_string(n, "equation", "...i,...i->...");
  const char *bc[] = {"2, 3", "1, 3"};
  assert_infer_error(n, WEIR_DTYPE_F32, bc, 2, WEIR_ERROR_UNSUPPORTED,
                     "broadcasting them is not supported");
  weir_node_set_attr_string(n, "equation", "i.j");
  assert_infer_error(n, WEIR_DTYPE_F32, sq, 1, WEIR_ERROR_INVALID,
                     "'.' is only allowed as one '...'");
  weir_node_set_attr_string(n, "equation", "...ijk");
  assert_infer_error(n, WEIR_DTYPE_F32, sq, 1, WEIR_ERROR_INVALID,
                     "names 3 dimensions, but input 0 has rank 2");
  weir_node_set_attr_string(n, "equation", "ij->ii");
  assert_infer_error(n, WEIR_DTYPE_F32, sq, 1, WEIR_ERROR_INVALID,
                     "subscript 'i' repeated in the output");
  weir_node_set_attr_string(n, "equation", "ii");
  const char *ns[] = {"3, 4"};
  assert_infer_error(n, WEIR_DTYPE_F32, ns, 1, WEIR_ERROR_INVALID,
                     "subscript 'i' has size 3");
  weir_node_set_attr_string(n, "equation", "ij,jk->ik");
  const char *mismatch[] = {"3, 4", "5, 6"};
  assert_infer_error(n, WEIR_DTYPE_F32, mismatch, 2, WEIR_ERROR_INVALID,
                     "subscript 'j' has size 4");
  assert_infer_error(n, WEIR_DTYPE_F32, sq, 1, WEIR_ERROR_INVALID,
                     "2 input terms for 1 inputs");
  weir_node_set_attr_string(n, "equation", "ij,jk->iz");
  assert_infer_error(n, WEIR_DTYPE_F32, s2, 2, WEIR_ERROR_INVALID,
                     "appears in no input");
}

static void run_einsum(WeirDType dt, const char *eq, const char *const *terms,
                       const char *const *shapes, guint n_in,
                       const char *output, const char *y, guint64 seed) {
  const char *syms[] = {"B", NULL};
  WeirNode *lib;
  g_autoptr(WeirGraph) g =
      op_graph("Einsum", "es", dt, shapes, n_in, y, syms, &lib);
  weir_node_set_attr_string(lib, "equation", eq);
  g_autoptr(GError) err = NULL;
  assert_true(weir_op_check_attrs(lib, &err));
  assert_infer_matches_graph(g, lib, n_in);
  expand_ok(g, "es");
  g_autoptr(GHashTable) bind = weir_bindings_new();
  weir_bindings_set(bind, "B", 2);
  g_autoptr(GHashTable) args = run_random(g, bind, seed);
  const WeirTensor *ins[4];
  for (guint k = 0; k < n_in; k++) {
    g_autofree char *name = g_strdup_printf("X%u", k);
    ins[k] = arg(args, name);
  }
  g_autoptr(WeirTensor) want = tensor_for(g, "Y", bind);
  einsum_ref(terms, n_in, output, ins, want);
  assert_close(arg(args, "Y"), want);
}

static void test_einsum_run(void **state) {
  (void)state;
  {
    const char *t[] = {"bij", "bjk"}, *s[] = {"B, 3, 4", "B, 4, 5"};
    run_einsum(WEIR_DTYPE_F32, "bij,bjk->bik", t, s, 2, "bik", "B, 3, 5", 1);
  }
  {
    const char *t[] = {"bhid", "bhjd"}, *s[] = {"B, 2, 3, 4", "B, 2, 5, 4"};
    run_einsum(WEIR_DTYPE_F32, "bhid,bhjd->bhij", t, s, 2, "bhij", "B, 2, 3, 5",
               2);
  }
  {
    const char *t[] = {"ij", "jk"}, *s[] = {"3, 4", "4, 2"};
    run_einsum(WEIR_DTYPE_F64, "ij,jk->ik", t, s, 2, "ik", "3, 2", 3);
  }
  {
    const char *t[] = {"ij"}, *s[] = {"3, 4"};
    run_einsum(WEIR_DTYPE_F32, "ij->ji", t, s, 1, "ji", "4, 3", 4);
  }
  {
    /* implicit output: letters used once, sorted */
    const char *t[] = {"kj", "ji"}, *s[] = {"3, 4", "4, 2"};
    run_einsum(WEIR_DTYPE_I32, "kj,ji", t, s, 2, "ik", "2, 3", 5);
  }
  {
    const char *t[] = {"i", "i"}, *s[] = {"5", "5"};
    run_einsum(WEIR_DTYPE_F32, "i,i->", t, s, 2, "", "", 6);
  }
  {
    const char *t[] = {"ij"}, *s[] = {"3, 4"};
    run_einsum(WEIR_DTYPE_I64, "ij->i", t, s, 1, "i", "3", 7);
  }
  {
    const char *t[] = {"ij", "jk", "kl"}, *s[] = {"2, 3", "3, 4", "4, 2"};
    run_einsum(WEIR_DTYPE_F32, "ij,jk,kl->li", t, s, 3, "li", "2, 2", 8);
  }
  {
    /* outer product: nothing summed, a single map */
    const char *t[] = {"i", "j"}, *s[] = {"3", "4"};
    run_einsum(WEIR_DTYPE_U8, "i,j->ij", t, s, 2, "ij", "3, 4", 9);
  }
  {
    /* a diagonal, and the trace (implicit: nothing is used once) */
    const char *t[] = {"ii"}, *s[] = {"4, 4"};
    run_einsum(WEIR_DTYPE_F32, "ii->i", t, s, 1, "i", "4", 12);
    run_einsum(WEIR_DTYPE_F64, "ii", t, s, 1, "", "", 13);
  }
  {
    /* test_einsum_batch_diagonal's equation, two batch dimensions */
    const char *t[] = {"xyii"}, *s[] = {"B, 2, 3, 3"};
    run_einsum(WEIR_DTYPE_F32, "...ii->...i", t, s, 1, "xyi", "B, 2, 3", 14);
  }
  {
    /* the ellipsis of different ranks, aligned on the right */
    const char *t[] = {"bij", "jk"}, *s[] = {"B, 3, 4", "4, 5"};
    run_einsum(WEIR_DTYPE_F32, "...ij,...jk->...ik", t, s, 2, "bik", "B, 3, 5",
               15);
  }
  {
    /* implicit: the ellipsis' dimensions first, then i, j */
    const char *t[] = {"bji"}, *s[] = {"B, 3, 4"};
    run_einsum(WEIR_DTYPE_I32, "...ji", t, s, 1, "bij", "B, 4, 3", 16);
  }
  {
    /* an explicit output without '...': its dimensions are summed */
    const char *t[] = {"bi"}, *s[] = {"B, 3"};
    run_einsum(WEIR_DTYPE_F32, "...i->i", t, s, 1, "i", "3", 17);
  }
}

/* A letter that is also a program symbol gets a different map parameter. */
static void test_einsum_symbol_clash(void **state) {
  (void)state;
  const char *t[] = {"Bij", "Bjk"}, *s[] = {"B, 3, 4", "B, 4, 5"};
  run_einsum(WEIR_DTYPE_F32, "Bij,Bjk->Bik", t, s, 2, "Bik", "B, 3, 5", 11);
}

/* FLOP counts of the other operators, symbolic in the batch size. */
static void assert_flops(const char *op, const char *const *shapes, guint n,
                         const char *y, const char *eq, const char *want) {
  const char *syms[] = {"N", NULL};
  WeirNode *lib;
  g_autoptr(WeirGraph) g =
      op_graph(op, "f", WEIR_DTYPE_F32, shapes, n, y, syms, &lib);
  if (eq)
    weir_node_set_attr_string(lib, "equation", eq);
  WeirState *s = g_ptr_array_index(g->states, 0);
  g_autoptr(WeirExpr) f = weir_op_lookup(op)->flops(g, s, lib);
  g_autofree char *text = weir_expr_to_string(f);
  assert_string_equal(text, want);
}

static void test_other_flops(void **state) {
  (void)state;
  const char *mm[] = {"N, 3, 4", "4, 5"};
  assert_flops("MatMul", mm, 2, "N, 3, 5", NULL, "120*N");
  const char *ct[] = {"N, 1, 3, 3", "1, 2, 3, 3"};
  assert_flops("ConvTranspose", ct, 2, "N, 2, 5, 5", NULL, "324*N");
  const char *es[] = {"N, 3, 4", "N, 4, 5"};
  assert_flops("Einsum", es, 2, "N, 3, 5", "bij,bjk->bik", "120*N");
  const char *tr[] = {"N, 3"};
  assert_flops("Einsum", tr, 1, "3, N", "ij->ji", "0");
  assert_flops("Einsum", es, 2, "N, 3, 5", "...ij,...jk->...ik", "120*N");
  const char *dg[] = {"N, 3, 3"};
  assert_flops("Einsum", dg, 1, "N, 3", "...ii->...i", "0");
  assert_flops("Einsum", dg, 1, "N", "...ii->...", "3*N");
}

/* ---------------------------------------------------------------- Det */

/* The determinant by Laplace expansion along the first row of the m x m
 * matrix a (row-major, stride m) restricted to the columns in `cols`. */
static double det_ref(const double *a, gint64 m, gint64 row, guint cols) {
  if (row == m)
    return 1;
  double sum = 0, sign = 1;
  for (gint64 j = 0; j < m; j++) {
    if (!(cols & (1u << j)))
      continue;
    sum += sign * a[row * m + j] * det_ref(a, m, row + 1, cols & ~(1u << j));
    sign = -sign;
  }
  return sum;
}

static void test_det(void **state) {
  (void)state;
  /* Random batches against the Laplace expansion, orders 1 to 5. */
  for (gint64 m = 1; m <= 5; m++) {
    g_autofree char *xs =
        g_strdup_printf("3, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT, m, m);
    const char *shapes[] = {xs};
    WeirNode *lib;
    g_autoptr(WeirGraph) g =
        op_graph("Det", "det", WEIR_DTYPE_F64, shapes, 1, "3", NULL, &lib);
    assert_infer_matches_graph(g, lib, 1);
    expand_ok(g, "det");
    g_autoptr(GHashTable) bind = weir_bindings_new();
    g_autoptr(GHashTable) args = run_random(g, bind, 40 + (guint64)m);
    const WeirTensor *x = arg(args, "X0");
    for (gint64 b = 0; b < 3; b++) {
      double a[25];
      for (gint64 i = 0; i < m * m; i++)
        a[i] = at(x, b * m * m + i);
      assert_float_equal(at(arg(args, "Y"), b), det_ref(a, m, 0, (1u << m) - 1),
                         1e-12);
    }
  }
  /* By hand: a zero first pivot (rows swapped: -6) and a singular matrix
   * (0). */
  static const double hand[2][9] = {{0, 2, 0, 1, 0, 0, 0, 0, 3},
                                    {1, 2, 3, 2, 4, 6, 1, 0, 1}};
  const char *shapes[] = {"2, 3, 3"};
  WeirNode *lib;
  g_autoptr(WeirGraph) g =
      op_graph("Det", "det", WEIR_DTYPE_F64, shapes, 1, "2", NULL, &lib);
  expand_ok(g, "det");
  g_autoptr(GHashTable) bind = weir_bindings_new();
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  WeirTensor *x = tensor_for(g, "X0", bind);
  for (gint64 i = 0; i < 18; i++)
    weir_tensor_set(x, i, hand[i / 9][i % 9]);
  g_hash_table_insert(args, g_strdup("X0"), x);
  g_hash_table_insert(args, g_strdup("Y"), tensor_for(g, "Y", bind));
  g_autoptr(GError) err = NULL;
  if (!weir_interpret(g, bind, args, NULL, &err))
    fail_msg("interpret: %s", err->message);
  assert_float_equal(at(arg(args, "Y"), 0), -6.0, 1e-12);
  assert_float_equal(at(arg(args, "Y"), 1), 0.0, 1e-12);
  /* Refused: a non-square matrix, an order above the bound. */
  WeirGraph *eg = weir_graph_new("det");
  WeirNode *n = lone_node(eg, "Det", "det_bad");
  const char *rect[] = {"2, 3"};
  assert_infer_error(n, WEIR_DTYPE_F32, rect, 1, WEIR_ERROR_INVALID,
                     "last two dimensions");
  const char *big[] = {"13, 13"};
  assert_infer_error(n, WEIR_DTYPE_F32, big, 1, WEIR_ERROR_UNSUPPORTED,
                     "order");
  weir_graph_free(eg);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm_schema_and_infer),
      cmocka_unit_test(test_gemm_run),
      cmocka_unit_test(test_gemm_flops_and_errors),
      cmocka_unit_test(test_matmul_infer),
      cmocka_unit_test(test_matmul_run),
      cmocka_unit_test(test_conv_schema_and_infer),
      cmocka_unit_test(test_conv_run),
      cmocka_unit_test(test_conv_flops),
      cmocka_unit_test(test_conv_transpose_infer),
      cmocka_unit_test(test_conv_transpose_run),
      cmocka_unit_test(test_einsum_infer),
      cmocka_unit_test(test_einsum_run),
      cmocka_unit_test(test_det),
      cmocka_unit_test(test_einsum_symbol_clash),
      cmocka_unit_test(test_other_flops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
