/* test-batchnorm-folding.c — folding inference BatchNormalization into
 * Conv: on hand-built graphs (with and without a Conv bias), the refusals,
 * the data movement saved, and on the bundled ResNet against PyTorch's
 * output. */
#include "tier2-check.h"

static const WeirTransformInfo *info(void) {
  return t2_lookup("batchnorm-folding");
}

/* X [1, 2, 5, 5] -> Conv (W [3, 2, 3, 3], pads 1, bias when with_bias) ->
 * Y -> BatchNormalization -> Z.  extra_reader: Y is also read by a Relu. */
static WeirGraph *conv_bn(gboolean with_bias, gboolean extra_reader,
                          guint *conv_id, guint *bn_id) {
  WeirState *s;
  WeirGraph *g = t2_graph("convbn", &s);
  t2_array(g, "X", WEIR_DTYPE_F32, "1, 2, 5, 5", FALSE);
  t2_const_random(g, "W", WEIR_DTYPE_F32, "3, 2, 3, 3", 11);
  if (with_bias)
    t2_const_random(g, "B", WEIR_DTYPE_F32, "3", 12);
  t2_array(g, "Y", WEIR_DTYPE_F32, "1, 3, 5, 5", TRUE);
  const double scale[] = {0.7, 1.3, -0.4}, bias[] = {0.1, -0.2, 0.05},
               mean[] = {0.3, -0.1, 0.02}, var[] = {0.5, 2.0, 0.01};
  t2_const(g, "scale", WEIR_DTYPE_F32, "3", scale);
  t2_const(g, "bias", WEIR_DTYPE_F32, "3", bias);
  t2_const(g, "mean", WEIR_DTYPE_F32, "3", mean);
  t2_const(g, "var", WEIR_DTYPE_F32, "3", var);
  t2_array(g, "Z", WEIR_DTYPE_F32, "1, 3, 5, 5", FALSE);
  const char *ci_b[] = {"X", "W", "B", NULL}, *ci[] = {"X", "W", NULL};
  const char *co[] = {"Y", NULL};
  WeirNode *conv = t2_op(g, s, "Conv", "conv", with_bias ? ci_b : ci, co);
  const gint64 pads[] = {1, 1, 1, 1};
  weir_node_set_attr_ints(conv, "pads", pads, 4);
  const char *bi[] = {"Y", "scale", "bias", "mean", "var", NULL};
  const char *bo[] = {"Z", NULL};
  WeirNode *bn = t2_op(g, s, "BatchNormalization", "bn", bi, bo);
  weir_node_set_attr_float(bn, "epsilon", 1e-3);
  if (extra_reader) {
    t2_array(g, "R", WEIR_DTYPE_F32, "1, 3, 5, 5", FALSE);
    const char *ri[] = {"Y", NULL}, *ro[] = {"R", NULL};
    t2_op(g, s, "Relu", "relu", ri, ro);
  }
  t2_normalize(g);
  *conv_id = conv->id;
  *bn_id = bn->id;
  return g;
}

static void check_fold(gboolean with_bias) {
  guint conv, bn;
  g_autoptr(WeirGraph) g = conv_bn(with_bias, FALSE, &conv, &bn);
  g_autoptr(GArray) sites = t2_sites(info(), g);
  assert_int_equal(sites->len, 1);
  WeirSite site = g_array_index(sites, WeirSite, 0);
  assert_int_equal(site.nodes[0], conv);
  assert_int_equal(site.nodes[1], bn);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirApplyReport report;
  t2_apply(g, info(), &site, NULL, NULL, &report);
  assert_int_equal(t2_count_ops(g, "BatchNormalization"), 0);
  assert_int_equal(t2_count_ops(g, "Conv"), 1);
  /* the old constants and the intermediate are gone */
  const char *gone[] = {"Y", "scale", "bias", "mean", "var", "W", "B"};
  for (guint i = 0; i < G_N_ELEMENTS(gone) - (with_bias ? 0 : 1); i++)
    assert_null(weir_graph_container(g, gone[i]));
  WeirNode *c = weir_graph_node(g, conv, NULL);
  assert_true(weir_node_has_in_conn(c, "in2"));
  t2_assert_same(before, g, NULL, 1e-4);
  /* the BN read Y (300 bytes) and 4 parameters (48) and wrote Z (300);
   * the Conv wrote Y and now writes Z; with_bias: the bias read is
   * replaced (12 = 12), else it is new (12) */
  gint64 saved = report.bytes_before.value - report.bytes_after.value;
  assert_int_equal(saved, with_bias ? 648 : 636);
  weir_apply_report_clear(&report);
}

static void test_fold_no_bias(void **state) {
  (void)state;
  check_fold(FALSE);
}

static void test_fold_with_bias(void **state) {
  (void)state;
  check_fold(TRUE);
}

static void test_rejections(void **state) {
  (void)state;
  guint conv, bn;
  g_autoptr(WeirGraph) g = conv_bn(FALSE, TRUE, &conv, &bn);
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirSite site = t2_site(s, 2, (guint[]){conv, bn});
  g_autofree char *r1 = t2_reason(info(), g, &site, NULL);
  assert_string_equal(r1,
                      "the output 'Y' of Conv 'conv' is also used elsewhere");

  g_autoptr(WeirGraph) h = conv_bn(FALSE, FALSE, &conv, &bn);
  s = g_ptr_array_index(h->states, 0);
  WeirNode *b = weir_graph_node(h, bn, NULL);
  weir_node_set_attr_int(b, "training_mode", 1);
  site = t2_site(s, 2, (guint[]){conv, bn});
  g_autofree char *r2 = t2_reason(info(), h, &site, NULL);
  assert_string_equal(r2, "BatchNormalization 'bn' is in training mode");
  weir_node_set_attr_int(b, "training_mode", 0);
  /* weights that are an argument */
  weir_graph_container(h, "W")->transient = FALSE;
  g_autofree char *r3 = t2_reason(info(), h, &site, NULL);
  assert_string_equal(r3, "weights 'W' of Conv 'conv' is not a constant");
  weir_graph_container(h, "W")->transient = TRUE;
  weir_graph_container(h, "var")->transient = FALSE;
  g_autofree char *r4 = t2_reason(info(), h, &site, NULL);
  assert_string_equal(r4,
                      "var 'var' of BatchNormalization 'bn' is not a constant");
  weir_graph_container(h, "var")->transient = TRUE;
  WeirSite swapped = t2_site(s, 2, (guint[]){bn, conv});
  g_autofree char *r5 = t2_reason(info(), h, &swapped, NULL);
  assert_string_equal(r5, "the site is not a Conv and a BatchNormalization");
  assert_int_equal(t2_count_legal(info(), h), 1);
  /* a Conv with an epilogue (epilogue-fusion): BN(relu(conv)) is not a
   * convolution with other weights */
  WeirNode *c = weir_graph_node(h, conv, NULL);
  weir_node_set_attr_string(c, "epilogue", "y = max(t, 0)");
  const char *conns[] = {"y", "t"};
  weir_node_set_attr_strings(c, "epilogue_conns", conns, 2);
  g_autofree char *r6 = t2_reason(info(), h, &site, NULL);
  assert_string_equal(r6, "Conv 'conv' has an epilogue, which runs before "
                          "the normalization could be folded");
}

/* ResNet: five Conv + BatchNormalization pairs, all folded; the result
 * still matches PyTorch.  (Interpreting the ResNet takes seconds, so each
 * site is applied and validated on its own and the outputs are compared
 * once, after all five folds, which include every site's rewrite.) */
static void test_resnet(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t2_import_model("resnet");
  assert_int_equal(t2_count_ops(g, "BatchNormalization"), 5);
  g_autoptr(GArray) sites = t2_sites(info(), g);
  assert_int_equal(sites->len, 5);
  for (guint i = 0; i < sites->len; i++) {
    g_autoptr(WeirGraph) copy = weir_graph_copy(g);
    WeirApplyReport report;
    t2_apply(copy, info(), &g_array_index(sites, WeirSite, i), NULL, NULL,
             &report);
    assert_int_equal(t2_count_ops(copy, "BatchNormalization"), 4);
    /* the BN's pass over a [2, 16, 16, 16] f32 tensor (read and written,
     * 2 x 32768 bytes) and its parameters (4 x 64), minus a new bias (64) */
    assert_int_equal(report.bytes_before.value - report.bytes_after.value,
                     2 * 32768 + 4 * 64 - 64);
    weir_apply_report_clear(&report);
  }
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  assert_int_equal(t2_apply_all(g, info(), NULL), 5);
  assert_int_equal(t2_count_ops(g, "BatchNormalization"), 0);
  assert_int_equal(t2_count_ops(g, "Conv"), 5);
  t2_assert_same(before, g, NULL, 1e-4);
  t2_assert_reference(g, "resnet", NULL, 1e-4);
}

static void test_other_programs(void **state) {
  (void)state;
  for (guint i = 0; i < t2_n_samples; i++) {
    g_autoptr(WeirGraph) g = t2_load_sample(t2_samples[i].file);
    assert_int_equal(t2_n_sites(info(), g), 0);
  }
  for (guint i = 0; i < t2_n_models; i++) {
    g_autoptr(WeirGraph) e = t2_expanded_model(t2_models[i].name);
    assert_int_equal(t2_n_sites(info(), e), 0);
    if (!g_strcmp0(t2_models[i].name, "resnet"))
      continue;
    g_autoptr(WeirGraph) g = t2_import_model(t2_models[i].name);
    assert_int_equal(t2_n_sites(info(), g), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fold_no_bias),
      cmocka_unit_test(test_fold_with_bias),
      cmocka_unit_test(test_rejections),
      cmocka_unit_test(test_resnet),
      cmocka_unit_test(test_other_programs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
