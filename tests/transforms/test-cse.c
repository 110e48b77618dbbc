/* test-cse.c — common-subexpression elimination on library nodes and on
 * tasklets: sites found, reasons for refusals, equal outputs, and the data
 * movement (library nodes) or FLOPs (tasklets) it saves. */
#include "tier2-check.h"

#include "weir-validate.h"

/* T1 = Relu(X), T2 = Relu(X), T3 = Neg(X), Y = T1 + T2, Z = T2 * T3 */
static WeirGraph *relu_graph(guint *r1, guint *r2, guint *ng) {
  WeirState *s;
  WeirGraph *g = t2_graph("cse", &s);
  t2_array(g, "X", WEIR_DTYPE_F32, "4, 5", FALSE);
  t2_array(g, "T1", WEIR_DTYPE_F32, "4, 5", TRUE);
  t2_array(g, "T2", WEIR_DTYPE_F32, "4, 5", TRUE);
  t2_array(g, "T3", WEIR_DTYPE_F32, "4, 5", TRUE);
  t2_array(g, "Y", WEIR_DTYPE_F32, "4, 5", FALSE);
  t2_array(g, "Z", WEIR_DTYPE_F32, "4, 5", FALSE);
  const char *x[] = {"X", NULL};
  const char *o1[] = {"T1", NULL}, *o2[] = {"T2", NULL}, *o3[] = {"T3", NULL};
  *r1 = t2_op(g, s, "Relu", "relu1", x, o1)->id;
  *r2 = t2_op(g, s, "Relu", "relu2", x, o2)->id;
  *ng = t2_op(g, s, "Neg", "neg", x, o3)->id;
  const char *ai[] = {"T1", "T2", NULL}, *ao[] = {"Y", NULL};
  const char *mi[] = {"T2", "T3", NULL}, *mo[] = {"Z", NULL};
  t2_op(g, s, "Add", "add", ai, ao);
  t2_op(g, s, "Mul", "mul", mi, mo);
  t2_normalize(g);
  return g;
}

static void test_library(void **state) {
  (void)state;
  guint r1, r2, ng;
  g_autoptr(WeirGraph) g = relu_graph(&r1, &r2, &ng);
  const WeirTransformInfo *t = t2_lookup("cse");
  g_autoptr(GArray) sites = t2_sites(t, g);
  assert_int_equal(sites->len, 1);
  WeirSite site = g_array_index(sites, WeirSite, 0);
  assert_int_equal(site.n_nodes, 2);
  assert_int_equal(site.nodes[0], r1);
  assert_int_equal(site.nodes[1], r2);

  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirApplyReport report;
  t2_apply(g, t, &site, NULL, NULL, &report);
  assert_int_equal(t2_count_ops(g, "Relu"), 1);
  assert_null(weir_graph_container(g, "T2"));
  t2_assert_same(before, g, NULL, 0);
  /* the duplicate read X and wrote T2: 2 x 80 bytes */
  assert_int_equal(report.bytes_before.value - report.bytes_after.value, 160);
  weir_apply_report_clear(&report);
  assert_int_equal(t2_n_sites(t, g), 0);
  assert_int_equal(t2_check_every_site(t, before, NULL, 0), 1);
}

static void test_three_equal(void **state) {
  (void)state;
  WeirState *s;
  g_autoptr(WeirGraph) g = t2_graph("three", &s);
  t2_array(g, "A", WEIR_DTYPE_I32, "6", FALSE);
  t2_array(g, "B", WEIR_DTYPE_I32, "6", FALSE);
  t2_array(g, "Y", WEIR_DTYPE_I32, "6", FALSE);
  const char *in[] = {"A", "B", NULL};
  guint ids[3];
  for (guint i = 0; i < 3; i++) {
    g_autofree char *name = g_strdup_printf("P%u", i);
    t2_array(g, name, WEIR_DTYPE_I32, "6", TRUE);
    const char *out[] = {name, NULL};
    ids[i] = t2_op(g, s, "Mul", name, in, out)->id;
  }
  const char *si[] = {"P0", "P1", "P2", NULL}, *so[] = {"Y", NULL};
  t2_op(g, s, "Sum", "sum", si, so);
  t2_normalize(g);
  const WeirTransformInfo *t = t2_lookup("cse");
  g_autoptr(GArray) sites = t2_sites(t, g);
  /* each duplicate once, paired with the earliest: (P0, P1), (P0, P2) */
  assert_int_equal(sites->len, 2);
  assert_int_equal(g_array_index(sites, WeirSite, 0).nodes[0], ids[0]);
  assert_int_equal(g_array_index(sites, WeirSite, 0).nodes[1], ids[1]);
  assert_int_equal(g_array_index(sites, WeirSite, 1).nodes[0], ids[0]);
  assert_int_equal(g_array_index(sites, WeirSite, 1).nodes[1], ids[2]);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  assert_int_equal(t2_apply_all(g, t, NULL), 2);
  assert_int_equal(t2_count_ops(g, "Mul"), 1);
  t2_assert_same(before, g, NULL, 0);
  assert_int_equal(t2_check_every_site(t, before, NULL, 0), 2);
}

static void test_library_rejections(void **state) {
  (void)state;
  WeirState *s;
  g_autoptr(WeirGraph) g = t2_graph("bad", &s);
  t2_array(g, "X", WEIR_DTYPE_F32, "3, 4", FALSE);
  t2_array(g, "X2", WEIR_DTYPE_F32, "3, 4", FALSE);
  const char *names[] = {"S1", "S2", "S3", "S4", "S5", "S6", "S7"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    t2_array(g, names[i], WEIR_DTYPE_F32, "3, 4", i != 3);
  const char *x[] = {"X", NULL}, *x2[] = {"X2", NULL};
  const char *o1[] = {"S1", NULL}, *o2[] = {"S2", NULL}, *o3[] = {"S3", NULL},
             *o4[] = {"S4", NULL}, *o5[] = {"S5", NULL}, *o6[] = {"S6", NULL},
             *o7[] = {"S7", NULL};
  WeirNode *sm1 = t2_op(g, s, "Softmax", "sm1", x, o1);
  WeirNode *sm2 = t2_op(g, s, "Softmax", "sm2", x, o2);
  weir_node_set_attr_int(sm2, "axis", 0);
  WeirNode *sm3 = t2_op(g, s, "Softmax", "sm3", x2, o3);
  WeirNode *sm4 = t2_op(g, s, "Softmax", "sm4", x, o4); /* S4: argument */
  WeirNode *neg = t2_op(g, s, "Neg", "neg", x, o5);
  WeirNode *d1 = t2_op(g, s, "Dropout", "d1", x, o6);
  WeirNode *d2 = t2_op(g, s, "Dropout", "d2", x, o7);
  weir_node_set_attr_int(d1, "training_mode", 1);
  weir_node_set_attr_int(d2, "training_mode", 1);
  t2_normalize(g);
  const WeirTransformInfo *t = t2_lookup("cse");

  struct {
    guint a, b;
    const char *reason;
  } cases[] = {
      {sm1->id, sm2->id, "the attributes differ"},
      {sm1->id, sm3->id, "in0 reads 'X' and 'X2'"},
      {sm1->id, sm4->id, "output 'S4' of the duplicate is a program argument"},
      {sm1->id, neg->id, "the ops differ (Softmax, Neg)"},
      {d1->id, d2->id, "Dropout is not deterministic"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    WeirSite site = {
        .state = s->id, .n_nodes = 2, .nodes = {cases[i].a, cases[i].b}};
    g_autofree char *r = t2_reason(t, g, &site, NULL);
    assert_string_equal(r, cases[i].reason);
  }
  WeirSite swapped = t2_site(s, 2, (guint[]){sm4->id, sm1->id});
  g_autofree char *r = t2_reason(t, g, &swapped, NULL);
  g_autofree char *want =
      g_strdup_printf("the node kept (%u) must come before the duplicate (%u)",
                      sm4->id, sm1->id);
  assert_string_equal(r, want);
  /* found: (sm1, sm4) (illegal) and (d1, d2) (illegal) */
  assert_int_equal(t2_n_sites(t, g), 2);
  assert_int_equal(t2_count_legal(t, g), 0);
}

/* A map i in 0:N with tasklets reading A[i]: two compute 2*a+1 into B[i]
 * and C[i], one computes 2*a-1 into D[i] and one 2*a+1 from A[N-1-i]
 * into E[i]. */
static WeirGraph *tasklet_graph(guint *ids) {
  WeirState *s;
  WeirGraph *g = t2_graph("tasklets", &s);
  weir_graph_add_symbol(g, "N");
  const char *outs[] = {"B", "C", "D", "E"};
  t2_array(g, "A", WEIR_DTYPE_F64, "N", FALSE);
  for (guint i = 0; i < 4; i++)
    t2_array(g, outs[i], WEIR_DTYPE_F64, "N", FALSE);
  WeirNode *exit = NULL;
  const char *params[] = {"i", NULL}, *ranges[] = {"0:N", NULL};
  WeirNode *entry = weir_state_add_map(g, s, "m", params, ranges,
                                       WEIR_SCHEDULE_PARALLEL, &exit, NULL);
  weir_node_add_in_conn(entry, "IN_A");
  weir_node_add_out_conn(entry, "OUT_A");
  WeirNode *a = weir_state_add_access(g, s, "A");
  assert_non_null(weir_state_add_memlet(g, s, a->id, NULL, entry->id, "IN_A",
                                        "A", "0:N", NULL));
  const char *codes[] = {"b = 2 * a + 1", "b = 2*a + 1  # same",
                         "b = 2 * a - 1", "b = 2 * a + 1"};
  const char *subsets[] = {"i", "i", "i", "N - 1 - i"};
  const char *tin[] = {"a", NULL}, *tout[] = {"b", NULL};
  for (guint i = 0; i < 4; i++) {
    WeirNode *t = weir_state_add_tasklet(g, s, outs[i], tin, tout, codes[i]);
    ids[i] = t->id;
    g_autofree char *in_conn = g_strdup_printf("IN_%s", outs[i]);
    g_autofree char *out_conn = g_strdup_printf("OUT_%s", outs[i]);
    weir_node_add_in_conn(exit, in_conn);
    weir_node_add_out_conn(exit, out_conn);
    assert_non_null(weir_state_add_memlet(g, s, entry->id, "OUT_A", t->id, "a",
                                          "A", subsets[i], NULL));
    assert_non_null(weir_state_add_memlet(g, s, t->id, "b", exit->id, in_conn,
                                          outs[i], "i", NULL));
    WeirNode *o = weir_state_add_access(g, s, outs[i]);
    assert_non_null(weir_state_add_memlet(g, s, exit->id, out_conn, o->id, NULL,
                                          outs[i], "0:N", NULL));
  }
  return g;
}

static void test_tasklets(void **state) {
  (void)state;
  guint ids[4];
  g_autoptr(WeirGraph) g = tasklet_graph(ids);
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  const WeirTransformInfo *t = t2_lookup("cse");
  g_autoptr(GArray) sites = t2_sites(t, g);
  assert_int_equal(sites->len, 1);
  WeirSite site = g_array_index(sites, WeirSite, 0);
  assert_int_equal(site.nodes[0], ids[0]);
  assert_int_equal(site.nodes[1], ids[1]);

  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirSite differ = t2_site(s, 2, (guint[]){ids[0], ids[2]});
  g_autofree char *r1 = t2_reason(t, g, &differ, NULL);
  assert_string_equal(r1, "the tasklet bodies differ");
  WeirSite other = t2_site(s, 2, (guint[]){ids[0], ids[3]});
  g_autofree char *r2 = t2_reason(t, g, &other, NULL);
  assert_string_equal(r2, "the tasklets read different memlets");

  g_autoptr(GHashTable) b = t2_bindings("N=10");
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirApplyReport report;
  t2_apply(g, t, &site, NULL, b, &report);
  /* same data movement, one tasklet (2 FLOPs per point) less */
  assert_int_equal(report.bytes_before.value, report.bytes_after.value);
  assert_int_equal(report.flops_before.value - report.flops_after.value, 20);
  weir_apply_report_clear(&report);
  assert_null(weir_state_node(s, ids[1]));
  t2_assert_same(before, g, b, 0);
}

/* Every legal site of every sample keeps the outputs. */
static void test_samples(void **state) {
  (void)state;
  const WeirTransformInfo *t = t2_lookup("cse");
  for (guint i = 0; i < t2_n_samples; i++) {
    g_autoptr(WeirGraph) g = t2_load_sample(t2_samples[i].file);
    g_autoptr(GHashTable) b = t2_bindings(t2_samples[i].symbols);
    t2_check_every_site(t, g, b, 0);
  }
}

/* The bundled models, imported and expanded: no site. */
static void test_models(void **state) {
  (void)state;
  const WeirTransformInfo *t = t2_lookup("cse");
  for (guint i = 0; i < t2_n_models; i++) {
    g_autoptr(WeirGraph) g = t2_import_model(t2_models[i].name);
    assert_int_equal(t2_n_sites(t, g), 0);
    g_autoptr(WeirGraph) e = t2_expanded_model(t2_models[i].name);
    assert_int_equal(t2_n_sites(t, e), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_library),
      cmocka_unit_test(test_three_equal),
      cmocka_unit_test(test_library_rejections),
      cmocka_unit_test(test_tasklets),
      cmocka_unit_test(test_samples),
      cmocka_unit_test(test_models),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
