/* test-epilogue-fusion.c — folding element-wise maps into Gemm, MatMul and
 * Conv library nodes (epilogue-fusion).
 *
 * The interpreter refuses library nodes, so programs are compared after
 * weir_expand_all (the pure expansions split the epilogue back into a map)
 * and as compiled code (native implementations kept: the code generator
 * emits the epilogue as a loop after the BLAS call). */
#include "tier3-check.h"
#include "weir.h"

#define EF "epilogue-fusion"
#define P(...) ((const T3Port[]){__VA_ARGS__})

/* X[M, K] @ W[K, N] -> T (Gemm library node); map: y = max(t + b, 0) with
 * B[N] broadcast -> Y[M, N].  ids: [0] Gemm, [1] T's node, [2] map entry,
 * [3] B's node. */
static WeirGraph *build_gemm(guint *ids, const char *t_subset,
                             const char *b_shape, const char *b_subset) {
  WeirGraph *g = weir_graph_new("gemm_relu");
  weir_graph_add_symbol(g, "M");
  t3_array(g, "X", "M,7", FALSE);
  t3_array(g, "W", "7,5", FALSE);
  t3_array(g, "B", b_shape, FALSE);
  t3_array(g, "T", "M,5", TRUE);
  t3_array(g, "Y", "M,5", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = weir_state_add_access(g, s, "X");
  WeirNode *w = weir_state_add_access(g, s, "W");
  WeirNode *b = weir_state_add_access(g, s, "B");
  WeirNode *t = weir_state_add_access(g, s, "T");
  WeirNode *y = weir_state_add_access(g, s, "Y");
  static const char *const ins[] = {"in0", "in1", NULL};
  static const char *const outs[] = {"out0", NULL};
  WeirNode *l = weir_state_add_library(g, s, "fc", "Gemm", ins, outs);
  t3_edge(g, s, x->id, NULL, l->id, "in0", "X", "0:M, 0:7");
  t3_edge(g, s, w->id, NULL, l->id, "in1", "W", "0:7, 0:5");
  t3_edge(g, s, l->id, "out0", t->id, NULL, "T", "0:M, 0:5");
  WeirNode *e = t3_map(g, s, "relu", "i,j", "0:M,0:5", "y = max(t + b, 0)",
                       P({t, "t", t_subset}, {b, "b", b_subset}), 2,
                       P({y, "y", "i, j"}), 1, NULL, NULL);
  if (ids) {
    guint v[] = {l->id, t->id, e->id, b->id};
    memcpy(ids, v, sizeof v);
  }
  t3_assert_valid(g);
  return g;
}

static WeirGraph *expanded(const WeirGraph *g) {
  WeirGraph *x = weir_graph_copy(g);
  g_autoptr(GError) error = NULL;
  if (!weir_expand_all(x, NULL, NULL, &error))
    fail_msg("expand: %s", error->message);
  t3_assert_valid(x);
  return x;
}

/* Compiled a and b (native implementations kept) give the same output
 * `out`, and the interpreter agrees on a. */
static void assert_same_compiled(const WeirGraph *a, const WeirGraph *b,
                                 GHashTable *sym, const char *out) {
  const WeirGraph *graphs[2] = {a, b};
  WeirKernel *k[2] = {NULL, NULL};
  WeirCompileOptions co = {.no_cache = TRUE};
  g_autoptr(GError) error = NULL;
  if (!weir_kernel_compile_many(graphs, 2, &co, k, NULL, &error))
    fail_msg("compile: %s", error->message);
  g_autoptr(WeirKernel) k0 = k[0];
  g_autoptr(WeirKernel) k1 = k[1];
  g_autoptr(WeirGraph) ea = expanded(a);
  g_autoptr(GHashTable) args0 = t3_run(ea, sym, 3);
  g_autoptr(GHashTable) args1 = t3_run(ea, sym, 3);
  g_autoptr(WeirTensor) interp =
      weir_tensor_copy(g_hash_table_lookup(args0, out));
  if (!weir_kernel_run(k0, sym, args0, &error) ||
      !weir_kernel_run(k1, sym, args1, &error))
    fail_msg("run: %s", error->message);
  const WeirTensor *y0 = g_hash_table_lookup(args0, out);
  const WeirTensor *y1 = g_hash_table_lookup(args1, out);
  if (!weir_tensor_allclose(y1, y0, 1e-5, 1e-6, NULL, &error))
    fail_msg("compiled fused vs unfused: %s", error->message);
  if (!weir_tensor_allclose(y1, interp, 1e-5, 1e-6, NULL, &error))
    fail_msg("compiled fused vs interpreted unfused: %s", error->message);
}

static void test_gemm_bias_relu(void **state) {
  (void)state;
  guint ids[4];
  g_autoptr(WeirGraph) g = build_gemm(ids, "i, j", "5", "j");
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  g_autoptr(GHashTable) sym = t3_symbols(g, 6);
  g_autoptr(GArray) sites = t3_sites(EF, g);
  assert_int_equal(sites->len, 1);
  guint st = ((WeirState *)g_ptr_array_index(g->states, 0))->id;
  WeirSite site = t3_site(st, ids[0], ids[1], ids[2], 0);
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 0), &site));
  gint64 bytes0 = t3_bytes(g, sym);
  t3_apply(EF, g, &site);
  t3_assert_valid(g);

  /* T, the map and its tasklet are gone; the node carries the epilogue. */
  assert_null(weir_graph_container(g, "T"));
  WeirState *s = g_ptr_array_index(g->states, 0);
  assert_null(weir_state_node(s, ids[2]));
  WeirNode *l = weir_state_node(s, ids[0]);
  assert_true(weir_epilogue_present(l));
  assert_string_equal(weir_node_attr(l, WEIR_EPILOGUE_CODE)->s,
                      "y = max(t + b, 0)");
  const WeirAttr *conns = weir_node_attr(l, WEIR_EPILOGUE_CONNS);
  assert_int_equal(conns->strings->len, 3);
  assert_string_equal(g_ptr_array_index(conns->strings, 1), "t");
  assert_true(weir_node_has_in_conn(l, "epi0"));
  /* T's write and read are gone (2 x M x 5 floats), and B is read once by
   * the node instead of once per output element (M x 5 -> 5 floats) */
  gint64 bytes1 = t3_bytes(g, sym);
  assert_int_equal(bytes0 - bytes1, 2 * 6 * 5 * 4 + (6 * 5 - 5) * 4);
  /* the program survives JSON */
  g_autoptr(GError) error = NULL;
  g_autofree char *json = weir_graph_to_json(g);
  g_autoptr(WeirGraph) back = weir_graph_from_json(json, -1, NULL, &error);
  assert_non_null(back);
  assert_true(weir_epilogue_present(
      weir_state_node(g_ptr_array_index(back->states, 0), ids[0])));

  /* interpreter: the pure expansion honours the epilogue */
  g_autoptr(WeirGraph) xa = expanded(before);
  g_autoptr(WeirGraph) xb = expanded(g);
  t3_assert_same_outputs(xa, xb, sym, 1e-6);
  /* compiled: BLAS then the epilogue loop */
  assert_same_compiled(before, g, sym, "Y");
}

static void test_illegal_sites(void **state) {
  (void)state;
  guint ids[4];
  {
    /* reads T at a fixed column: not element-wise */
    g_autoptr(WeirGraph) g = build_gemm(ids, "i, 0", "5", "j");
    guint st = ((WeirState *)g_ptr_array_index(g->states, 0))->id;
    WeirSite site = t3_site(st, ids[0], ids[1], ids[2], 0);
    t3_assert_reason(EF, g, &site, "other than at");
  }
  {
    /* B[M] read along rows does not broadcast by numpy rules */
    g_autoptr(WeirGraph) g = build_gemm(ids, "i, j", "M", "i");
    guint st = ((WeirState *)g_ptr_array_index(g->states, 0))->id;
    WeirSite site = t3_site(st, ids[0], ids[1], ids[2], 0);
    t3_assert_reason(EF, g, &site, "neither element-wise nor broadcast");
  }
  {
    /* T is an argument: it must stay */
    g_autoptr(WeirGraph) g = build_gemm(ids, "i, j", "5", "j");
    weir_graph_container(g, "T")->transient = FALSE;
    guint st = ((WeirState *)g_ptr_array_index(g->states, 0))->id;
    WeirSite site = t3_site(st, ids[0], ids[1], ids[2], 0);
    t3_assert_reason(EF, g, &site, "argument");
  }
  {
    /* a second epilogue on the same node */
    g_autoptr(WeirGraph) g = build_gemm(ids, "i, j", "5", "j");
    guint st = ((WeirState *)g_ptr_array_index(g->states, 0))->id;
    WeirSite site = t3_site(st, ids[0], ids[1], ids[2], 0);
    WeirNode *l = weir_state_node(g_ptr_array_index(g->states, 0), ids[0]);
    weir_node_set_attr_string(l, WEIR_EPILOGUE_CODE, "y = t");
    t3_assert_reason(EF, g, &site, "already has an epilogue");
  }
}

/* lenet: the ReLUs after both convolutions and the first linear layer. */
static void test_lenet(void **state) {
  (void)state;
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "lenet.onnx", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_onnx_import(path, NULL, &error);
  if (!g)
    fail_msg("%s", error->message);
  guint n = 0;
  assert_true(weir_expand_all(g, "Relu", &n, &error));
  assert_int_equal(n, 3);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  g_autoptr(GHashTable) sym = weir_bindings_new();
  guint applied = t3_apply_to_fixpoint(EF, g);
  assert_int_equal(applied, 3);
  t3_assert_valid(g);
  g_autoptr(WeirGraph) xa = expanded(before);
  g_autoptr(WeirGraph) xb = expanded(g);
  t3_assert_same_outputs(xa, xb, sym, 1e-5);
  assert_same_compiled(before, g, sym, "output");
}

/* Y = relu(Y @ W): the map writes the Gemm's own input, so the Gemm cannot
 * write it directly.  ids as in build_gemm. */
static void test_output_is_input(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("inplace");
  t3_array(g, "Y", "3,5", FALSE);
  t3_array(g, "W", "5,5", FALSE);
  t3_array(g, "T", "3,5", TRUE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *y0 = weir_state_add_access(g, s, "Y");
  WeirNode *w = weir_state_add_access(g, s, "W");
  WeirNode *t = weir_state_add_access(g, s, "T");
  WeirNode *y1 = weir_state_add_access(g, s, "Y");
  static const char *const ins[] = {"in0", "in1", NULL};
  static const char *const outs[] = {"out0", NULL};
  WeirNode *l = weir_state_add_library(g, s, "fc", "Gemm", ins, outs);
  t3_edge(g, s, y0->id, NULL, l->id, "in0", "Y", "0:3, 0:5");
  t3_edge(g, s, w->id, NULL, l->id, "in1", "W", "0:5, 0:5");
  t3_edge(g, s, l->id, "out0", t->id, NULL, "T", "0:3, 0:5");
  WeirNode *e =
      t3_map(g, s, "relu", "i,j", "0:3,0:5", "y = max(t, 0)",
             P({t, "t", "i, j"}), 1, P({y1, "y", "i, j"}), 1, NULL, NULL);
  t3_assert_valid(g);
  WeirSite site = t3_site(s->id, l->id, t->id, e->id, 0);
  t3_assert_reason(EF, g, &site, "which it would then write");
}

/* A malformed epilogue (hand-written JSON, say) is reported by the
 * validator, naming the node. */
static void test_bad_epilogue(void **state) {
  (void)state;
  guint ids[4];
  g_autoptr(WeirGraph) g = build_gemm(ids, "i, j", "5", "j");
  WeirNode *l = weir_state_node(g_ptr_array_index(g->states, 0), ids[0]);
  weir_node_set_attr_string(l, WEIR_EPILOGUE_CODE, "y = max(t, 0)");
  g_autoptr(GError) error = NULL;
  assert_false(weir_graph_validate(g, &error));
  assert_non_null(strstr(error->message, "epilogue_conns"));
  assert_non_null(strstr(error->message, "'fc'"));
  g_clear_error(&error);
  const char *conns[] = {"y", "t", "b"};
  weir_node_set_attr_strings(l, WEIR_EPILOGUE_CONNS, conns, 3);
  weir_node_set_attr_string(l, WEIR_EPILOGUE_CODE, "y = max(t,");
  assert_false(weir_graph_validate(g, &error));
  assert_non_null(strstr(error->message, "epilogue: "));
  assert_non_null(strstr(error->message, "no connector 'epi0'"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm_bias_relu),
      cmocka_unit_test(test_illegal_sites),
      cmocka_unit_test(test_bad_epilogue),
      cmocka_unit_test(test_output_is_input),
      cmocka_unit_test(test_lenet),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
