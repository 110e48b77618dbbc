/* test-channel-scale-folding.c — moving a squeeze-and-excitation gate onto
 * the weights of the convolution that reads the scaled map: the sites, the
 * rewiring, equal outputs (interpreted; the compiled check at 1 and 2
 * threads is test-pipeline's on tests/core/data/squeeze-excite.onnx), and
 * the refusals. */
#include "tier2-check.h"

static const WeirTransformInfo *info(void) {
  return t2_lookup("channel-scale-folding");
}

/* X [1, 6, 9, 11] * S (gate shape s_shape) -> P -> Conv (W [m, 6, k, k],
 * pads k / 2, bias) -> Y [1, m, 9, 11]; X is also read by a Relu (as the
 * squeeze reads it); swap: the Mul reads S then X. */
static WeirGraph *se_conv(const char *s_shape, const char *w_shape, gint64 k,
                          gint64 group, gboolean swap, guint *mul_id,
                          guint *conv_id) {
  WeirState *s;
  WeirGraph *g = t2_graph("seconv", &s);
  t2_array(g, "X", WEIR_DTYPE_F32, "1, 6, 9, 11", FALSE);
  t2_array(g, "S", WEIR_DTYPE_F32, s_shape, FALSE);
  t2_array(g, "P", WEIR_DTYPE_F32, "1, 6, 9, 11", TRUE);
  t2_const_random(g, "W", WEIR_DTYPE_F32, w_shape, 5);
  g_autofree char *m = g_strdup(w_shape);
  *strchr(m, ',') = '\0';
  t2_const_random(g, "B", WEIR_DTYPE_F32, m, 6);
  g_autofree char *y_shape = g_strdup_printf("1, %s, 9, 11", m);
  t2_array(g, "Y", WEIR_DTYPE_F32, y_shape, FALSE);
  t2_array(g, "R", WEIR_DTYPE_F32, "1, 6, 9, 11", FALSE);
  const char *ri[] = {"X", NULL}, *ro[] = {"R", NULL};
  t2_op(g, s, "Relu", "squeeze", ri, ro);
  const char *mi[] = {swap ? "S" : "X", swap ? "X" : "S", NULL},
             *mo[] = {"P", NULL};
  WeirNode *mul = t2_op(g, s, "Mul", "gate", mi, mo);
  const char *ci[] = {"P", "W", "B", NULL}, *co[] = {"Y", NULL};
  WeirNode *conv = t2_op(g, s, "Conv", "project", ci, co);
  const gint64 pads[] = {k / 2, k / 2, k / 2, k / 2};
  weir_node_set_attr_ints(conv, "pads", pads, 4);
  weir_node_set_attr_int(conv, "group", group);
  t2_normalize(g);
  *mul_id = mul->id;
  *conv_id = conv->id;
  return g;
}

static void test_fold(void **state) {
  (void)state;
  guint mul, conv;
  g_autoptr(WeirGraph) g =
      se_conv("1, 6, 1, 1", "5, 6, 1, 1", 1, 1, FALSE, &mul, &conv);
  g_autoptr(GArray) sites = t2_sites(info(), g);
  assert_int_equal(sites->len, 1);
  WeirSite site = g_array_index(sites, WeirSite, 0);
  assert_int_equal(site.nodes[0], mul);
  assert_int_equal(site.nodes[1], conv);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirApplyReport report;
  t2_apply(g, info(), &site, NULL, NULL, &report);
  /* the scaled map is gone; the Mul now scales the weights */
  assert_null(weir_graph_container(g, "P"));
  assert_non_null(weir_graph_container(g, "W_scaled"));
  assert_int_equal(t2_count_ops(g, "Mul"), 1);
  t2_assert_same(before, g, NULL, 1e-5);
  /* before, the Mul read X (2376 bytes) and S and wrote P (2376), the
   * Conv read P (2376) and W (120); now the Mul reads W (120) and S and
   * writes W_scaled (120), and the Conv reads X (2376) and W_scaled (120) */
  assert_int_equal(report.bytes_before.value - report.bytes_after.value,
                   (2376 + 2376 + 2376 + 120) - (120 + 120 + 2376 + 120));
  weir_apply_report_clear(&report);
}

/* 3x3 with padding, the gate as [6, 1, 1] (rank 3), the Mul's inputs in
 * the other order */
static void test_variants(void **state) {
  (void)state;
  guint mul, conv;
  g_autoptr(WeirGraph) g =
      se_conv("6, 1, 1", "2, 6, 3, 3", 3, 1, TRUE, &mul, &conv);
  assert_int_equal(t2_check_every_site(info(), g, NULL, 1e-5), 1);
}

static void test_rejections(void **state) {
  (void)state;
  guint mul, conv;
  /* grouped */
  g_autoptr(WeirGraph) g1 =
      se_conv("1, 6, 1, 1", "6, 3, 1, 1", 1, 2, FALSE, &mul, &conv);
  WeirState *s = g_ptr_array_index(g1->states, 0);
  WeirSite site = t2_site(s, 2, (guint[]){mul, conv});
  g_autofree char *r1 = t2_reason(info(), g1, &site, NULL);
  assert_string_equal(r1, "Conv 'project' is grouped");
  /* a gate per spatial position, not per channel */
  g_autoptr(WeirGraph) g2 =
      se_conv("1, 1, 9, 11", "5, 6, 1, 1", 1, 1, FALSE, &mul, &conv);
  s = g_ptr_array_index(g2->states, 0);
  site = t2_site(s, 2, (guint[]){mul, conv});
  g_autofree char *r2 = t2_reason(info(), g2, &site, NULL);
  assert_string_equal(r2, "Mul 'gate' does not scale a feature map by one "
                          "value per channel");
  /* weights more than a quarter of the map: 12 x 6 x 3 x 3 against 6 x 9
   * x 11 */
  g_autoptr(WeirGraph) g3 =
      se_conv("1, 6, 1, 1", "12, 6, 3, 3", 3, 1, FALSE, &mul, &conv);
  s = g_ptr_array_index(g3->states, 0);
  site = t2_site(s, 2, (guint[]){mul, conv});
  g_autofree char *r3 = t2_reason(info(), g3, &site, NULL);
  assert_string_equal(r3, "the weight 'W' of Conv 'project' is more than a "
                          "quarter of the scaled input 'P'");
  /* a weight that is not a constant (a trained parameter) */
  g_autoptr(WeirGraph) g4 =
      se_conv("1, 6, 1, 1", "5, 6, 1, 1", 1, 1, FALSE, &mul, &conv);
  weir_container_set_initial(weir_graph_container(g4, "W"), NULL);
  weir_graph_container(g4, "W")->transient = FALSE;
  s = g_ptr_array_index(g4->states, 0);
  site = t2_site(s, 2, (guint[]){mul, conv});
  g_autofree char *r4 = t2_reason(info(), g4, &site, NULL);
  assert_string_equal(r4, "the weight 'W' of Conv 'project' is not a constant");
}

/* The bundled models have no squeeze-and-excitation block. */
static void test_other_programs(void **state) {
  (void)state;
  for (guint i = 0; i < t2_n_models; i++) {
    g_autoptr(WeirGraph) g = t2_import_model(t2_models[i].name);
    assert_int_equal(t2_count_legal(info(), g), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fold),
      cmocka_unit_test(test_variants),
      cmocka_unit_test(test_rejections),
      cmocka_unit_test(test_other_programs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
