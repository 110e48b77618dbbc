/* test-recompute-activation.c — the tier-4 "recompute-activation"
 * transformation on the training program of an MLP.
 *
 * Recomputing the first layer's Gemm output where its backward reader
 * (the activation's gradient) needs it lowers the peak transient memory
 * of the analysis, adds the FLOPs of one Gemm, and leaves the results of
 * a training step unchanged (interpreter, before and after).
 *
 * The model, tests/transforms/data/mlp-erf.onnx, is the sample MLP
 * (samples/models/mlp.onnx) with its two Relu nodes made Erf (op type,
 * node and tensor names changed with the onnx package, nothing else): the
 * Erf's derivative, 2/sqrt(pi) exp(-x^2), reads the Gemm's output x,
 * where the Relu's backward mask reads the Relu's own output, so with
 * Relu no backward node reads the Gemm's output (ir/lower/grad.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir.h"

static WeirGraph *mlp_train(void) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "tests", "transforms",
                                           "data", "mlp-erf.onnx", NULL);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) fwd = weir_onnx_import(path, NULL, &err);
  if (!fwd)
    fail_msg("%s", err->message);
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.steps = 1;
  WeirGraph *t = weir_train_graph(fwd, &o, &err);
  if (!t)
    fail_msg("%s", err->message);
  return t;
}

/* The site [producer, activation, reader] whose activation is `data` and
 * reader has label `reader`. */
static gboolean find_site(const WeirGraph *g, const WeirTransformInfo *t,
                          const char *data, const char *reader, WeirSite *out) {
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  for (guint i = 0; i < sites->len; i++) {
    WeirSite *s = &g_array_index(sites, WeirSite, i);
    const WeirNode *a = weir_graph_node(g, s->nodes[1], NULL);
    const WeirNode *c = weir_graph_node(g, s->nodes[2], NULL);
    if (g_strcmp0(a->data, data) == 0 && g_strcmp0(c->label, reader) == 0) {
      *out = *s;
      return TRUE;
    }
  }
  return FALSE;
}

static gint64 peak(const WeirGraph *g, GHashTable *sym) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, sym, &err);
  assert_non_null(a);
  assert_true(a->peak_transient_bytes.known);
  return a->peak_transient_bytes.value;
}

static GHashTable *run(const WeirGraph *g, GHashTable *sym) {
  g_autoptr(WeirGraph) x = weir_graph_copy(g);
  g_autoptr(GError) err = NULL;
  if (!weir_expand_all(x, NULL, NULL, &err))
    fail_msg("%s", err->message);
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < x->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(x->containers, i);
    if (c->transient)
      continue;
    gint64 shape[4];
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(c->shape->pdata[d], sym, &shape[d], NULL));
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    weir_tensor_fill_random(t, c->id);
    if (!strcmp(c->name, "step") || !strcmp(c->name, "skipped"))
      weir_tensor_set(t, 0, 0);
    g_hash_table_insert(args, g_strdup(c->name), t);
  }
  if (!weir_interpret(x, sym, args, NULL, &err))
    fail_msg("%s", err->message);
  return args;
}

static void test_peak_drops(void **state) {
  (void)state;
  weir_transforms_init();
  const WeirTransformInfo *t = weir_transform_lookup("recompute-activation");
  assert_non_null(t);
  g_autoptr(WeirGraph) g = mlp_train();
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "batch", 256);
  WeirSite site;
  assert_true(
      find_site(g, t, "_fc1_Gemm_output_0", "_fc1_Gemm_output_0_grad", &site));
  gint64 p0 = peak(g, sym);
  WeirApplyReport rep = {0};
  g_autoptr(GError) err = NULL;
  /* never without the activation's name */
  g_autofree char *why = NULL;
  assert_false(weir_transform_can_apply(t, g, &site, NULL, &why));
  assert_non_null(strstr(why, "activation=_fc1_Gemm_output_0"));
  const char *assign[] = {"activation=_fc1_Gemm_output_0", NULL};
  g_autoptr(WeirParams) params = weir_params_parse(t, assign, &err);
  assert_non_null(params);
  if (!weir_transform_apply(g, t, &site, params, sym, &rep, &err))
    fail_msg("%s", err->message);
  gint64 p1 = peak(g, sym);
  /* at least the activation itself: 256 x 128 floats */
  assert_true(p1 <= p0 - 256 * 128 * 4 / 2);
  assert_true(p1 < p0);
  assert_true(rep.flops_after.value > rep.flops_before.value);
  weir_apply_report_clear(&rep);

  /* same training step */
  g_autoptr(GHashTable) small = weir_bindings_new();
  weir_bindings_set(small, "batch", 3);
  g_autoptr(GHashTable) ra = run(before, small);
  g_autoptr(GHashTable) rb = run(g, small);
  const char *check[] = {"fc1_weight", "fc1_bias", "fc3_weight", "losses",
                         NULL};
  for (guint i = 0; check[i]; i++) {
    g_autoptr(GError) e2 = NULL;
    if (!weir_tensor_allclose(g_hash_table_lookup(rb, check[i]),
                              g_hash_table_lookup(ra, check[i]), 0, 0, NULL,
                              &e2))
      fail_msg("%s: %s", check[i], e2->message);
  }
}

static void test_refused(void **state) {
  (void)state;
  weir_transforms_init();
  const WeirTransformInfo *t = weir_transform_lookup("recompute-activation");
  g_autoptr(WeirGraph) g = mlp_train();
  WeirSite site;
  /* the forward reader reads nothing else derived from the activation:
   * not a site */
  assert_false(find_site(g, t, "_fc1_Gemm_output_0", "/Erf", &site));
  assert_true(
      find_site(g, t, "_fc1_Gemm_output_0", "_fc1_Gemm_output_0_grad", &site));
  const char *assign[] = {"activation=_fc1_Gemm_output_0", NULL};
  g_autoptr(WeirParams) params = weir_params_parse(t, assign, NULL);
  WeirSite bad = site;
  bad.nodes[2] = site.nodes[0];
  g_autofree char *reason = NULL;
  assert_false(weir_transform_can_apply(t, g, &bad, params, &reason));
  assert_non_null(reason);
  /* the parameter names another activation */
  const char *other[] = {"activation=_Erf_output_0", NULL};
  g_autoptr(WeirParams) wrong = weir_params_parse(t, other, NULL);
  g_autofree char *reason2 = NULL;
  assert_false(weir_transform_can_apply(t, g, &site, wrong, &reason2));
  assert_non_null(strstr(reason2, "not '_Erf_output_0'"));
  /* a parameter (argument) is not an activation */
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  for (guint i = 0; i < sites->len; i++) {
    const WeirSite *s = &g_array_index(sites, WeirSite, i);
    const WeirNode *a = weir_graph_node(g, s->nodes[1], NULL);
    assert_true(weir_graph_container(g, a->data)->transient);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_peak_drops),
      cmocka_unit_test(test_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
