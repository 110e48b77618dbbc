/* test-pad-conv-fusion.c — absorbing a zero Pad into a Conv's pads: the
 * sites, the new pads, equal outputs, data movement, and the refusals. */
#include "tier2-check.h"

static const WeirTransformInfo *info(void) {
  return t2_lookup("pad-conv-fusion");
}

/* X [1, 2, 4, 4] -> Pad (pads) -> P [1, 2, ph, pw] -> Conv (W [3, 2, 3, 3],
 * conv pads [1, 0, 0, 1]) -> Y; extra: P is also read by a Relu. */
static WeirGraph *pad_conv(const gint64 *pads, guint n_pads, const gint64 *axes,
                           guint n_axes, const char *p_shape,
                           const char *y_shape, gboolean extra, guint *pad_id,
                           guint *conv_id) {
  WeirState *s;
  WeirGraph *g = t2_graph("padconv", &s);
  t2_array(g, "X", WEIR_DTYPE_F32, "1, 2, 4, 4", FALSE);
  t2_array(g, "P", WEIR_DTYPE_F32, p_shape, TRUE);
  t2_const_random(g, "W", WEIR_DTYPE_F32, "3, 2, 3, 3", 5);
  t2_const_random(g, "B", WEIR_DTYPE_F32, "3", 6);
  t2_array(g, "Y", WEIR_DTYPE_F32, y_shape, FALSE);
  const char *pi[] = {"X", NULL}, *po[] = {"P", NULL};
  WeirNode *pad = t2_op(g, s, "Pad", "pad", pi, po);
  weir_node_set_attr_ints(pad, "pads", pads, n_pads);
  if (axes)
    weir_node_set_attr_ints(pad, "axes", axes, n_axes);
  const char *ci[] = {"P", "W", "B", NULL}, *co[] = {"Y", NULL};
  WeirNode *conv = t2_op(g, s, "Conv", "conv", ci, co);
  const gint64 cpads[] = {1, 0, 0, 1};
  weir_node_set_attr_ints(conv, "pads", cpads, 4);
  if (extra) {
    t2_array(g, "R", WEIR_DTYPE_F32, p_shape, FALSE);
    const char *ri[] = {"P", NULL}, *ro[] = {"R", NULL};
    t2_op(g, s, "Relu", "relu", ri, ro);
  }
  t2_normalize(g);
  *pad_id = pad->id;
  *conv_id = conv->id;
  return g;
}

static void test_fuse(void **state) {
  (void)state;
  /* pads H by 1 (begin) / 2 (end), W by 2 / 1: P [1, 2, 7, 7], and the
   * Conv (pads 1, 0 / 0, 1) gives [1, 3, 6, 6] */
  const gint64 pads[] = {0, 0, 1, 2, 0, 0, 2, 1};
  guint pad, conv;
  g_autoptr(WeirGraph) g = pad_conv(pads, 8, NULL, 0, "1, 2, 7, 7",
                                    "1, 3, 6, 6", FALSE, &pad, &conv);
  g_autoptr(GArray) sites = t2_sites(info(), g);
  assert_int_equal(sites->len, 1);
  WeirSite site = g_array_index(sites, WeirSite, 0);
  assert_int_equal(site.nodes[0], pad);
  assert_int_equal(site.nodes[1], conv);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirApplyReport report;
  t2_apply(g, info(), &site, NULL, NULL, &report);
  assert_int_equal(t2_count_ops(g, "Pad"), 0);
  assert_null(weir_graph_container(g, "P"));
  const WeirAttr *a = weir_node_attr(weir_graph_node(g, conv, NULL), "pads");
  const gint64 want[] = {2, 2, 2, 2};
  assert_int_equal(a->ints->len, 4);
  for (guint i = 0; i < 4; i++)
    assert_int_equal(g_array_index(a->ints, gint64, i), want[i]);
  t2_assert_same(before, g, NULL, 1e-5);
  /* the Pad read X (128 bytes) and wrote P (392); the Conv read P (392)
   * and now reads X (128) */
  assert_int_equal(report.bytes_before.value - report.bytes_after.value, 784);
  weir_apply_report_clear(&report);
}

static void test_axes(void **state) {
  (void)state;
  const gint64 pads[] = {1, 1, 1, 1}, axes[] = {-2, 3};
  guint pad, conv;
  g_autoptr(WeirGraph) g = pad_conv(pads, 4, axes, 2, "1, 2, 6, 6",
                                    "1, 3, 5, 5", FALSE, &pad, &conv);
  assert_int_equal(t2_check_every_site(info(), g, NULL, 1e-5), 1);
}

static void test_rejections(void **state) {
  (void)state;
  const gint64 pads[] = {0, 0, 1, 1, 0, 0, 1, 1};
  guint pad, conv;
  g_autoptr(WeirGraph) g = pad_conv(pads, 8, NULL, 0, "1, 2, 6, 6",
                                    "1, 3, 5, 5", FALSE, &pad, &conv);
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirSite site = t2_site(s, 2, (guint[]){pad, conv});
  WeirNode *p = weir_graph_node(g, pad, NULL);
  WeirNode *c = weir_graph_node(g, conv, NULL);

  weir_node_set_attr_string(p, "mode", "reflect");
  g_autofree char *r1 = t2_reason(info(), g, &site, NULL);
  assert_string_equal(r1, "Pad 'pad' has mode 'reflect'");
  weir_node_set_attr_string(p, "mode", "constant");

  weir_node_set_attr_float(p, "value", 1.5);
  g_autofree char *r2 = t2_reason(info(), g, &site, NULL);
  assert_string_equal(r2, "Pad 'pad' pads with 1.5, not 0");
  weir_node_set_attr_float(p, "value", -0.0); /* still a zero */
  assert_int_equal(t2_count_legal(info(), g), 1);

  const gint64 chan[] = {0, 1, 1, 1, 0, 0, 1, 1};
  weir_node_set_attr_ints(p, "pads", chan, 8);
  g_autofree char *r3 = t2_reason(info(), g, &site, NULL);
  assert_string_equal(r3, "Pad 'pad' pads dimension 1, not only the spatial "
                          "dimensions");
  const gint64 crop[] = {0, 0, 1, 1, 0, 0, -1, 1};
  weir_node_set_attr_ints(p, "pads", crop, 8);
  g_autofree char *r4 = t2_reason(info(), g, &site, NULL);
  assert_string_equal(r4, "Pad 'pad' crops dimension 2");
  weir_node_set_attr_ints(p, "pads", pads, 8);

  weir_node_set_attr_string(c, "auto_pad", "SAME_UPPER");
  g_autofree char *r5 = t2_reason(info(), g, &site, NULL);
  assert_string_equal(r5, "Conv 'conv' uses auto_pad SAME_UPPER");
  weir_node_set_attr_string(c, "auto_pad", "NOTSET");
  assert_int_equal(t2_count_legal(info(), g), 1);

  g_autoptr(WeirGraph) h =
      pad_conv(pads, 8, NULL, 0, "1, 2, 6, 6", "1, 3, 5, 5", TRUE, &pad, &conv);
  s = g_ptr_array_index(h->states, 0);
  site = t2_site(s, 2, (guint[]){pad, conv});
  g_autofree char *r6 = t2_reason(info(), h, &site, NULL);
  assert_string_equal(r6, "the output 'P' of Pad 'pad' is also used elsewhere");
}

/* No Pad in the samples or the bundled models (imported or expanded). */
static void test_other_programs(void **state) {
  (void)state;
  for (guint i = 0; i < t2_n_samples; i++) {
    g_autoptr(WeirGraph) g = t2_load_sample(t2_samples[i].file);
    assert_int_equal(t2_n_sites(info(), g), 0);
  }
  for (guint i = 0; i < t2_n_models; i++) {
    g_autoptr(WeirGraph) g = t2_import_model(t2_models[i].name);
    assert_int_equal(t2_n_sites(info(), g), 0);
    g_autoptr(WeirGraph) e = t2_expanded_model(t2_models[i].name);
    assert_int_equal(t2_n_sites(info(), e), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fuse),
      cmocka_unit_test(test_axes),
      cmocka_unit_test(test_rejections),
      cmocka_unit_test(test_other_programs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
