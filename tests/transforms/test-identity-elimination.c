/* test-identity-elimination.c — removing Identity, Dropout and no-op
 * reshapes/transposes, merging reshape and transpose pairs, keeping
 * program arguments, and the refusals. */
#include "tier2-check.h"

#include "weir-validate.h"

static const WeirTransformInfo *info(void) {
  return t2_lookup("identity-elimination");
}

/* A chain X -> op1 -> T1 -> op2 -> ... -> Y (argument), shapes given. */
typedef struct {
  const char *op;
  const char *out_shape;
} Step;

static WeirGraph *chain(const char *x_shape, const Step *steps, guint n,
                        guint *ids) {
  WeirState *s;
  WeirGraph *g = t2_graph("chain", &s);
  t2_array(g, "X", WEIR_DTYPE_F32, x_shape, FALSE);
  const char *prev = "X";
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < n; i++) {
    char *name = i + 1 == n ? g_strdup("Y") : g_strdup_printf("T%u", i + 1);
    g_ptr_array_add(names, name);
    t2_array(g, name, WEIR_DTYPE_F32, steps[i].out_shape, i + 1 < n);
    const char *in[] = {prev, NULL}, *out[] = {name, NULL};
    g_autofree char *label = g_ascii_strdown(steps[i].op, -1);
    ids[i] = t2_op(g, s, steps[i].op, label, in, out)->id;
    prev = name;
  }
  return g;
}

static WeirNode *node(WeirGraph *g, guint id) {
  return weir_graph_node(g, id, NULL);
}

static void set_ints(WeirNode *n, const char *name, const gint64 *v,
                     guint count) {
  weir_node_set_attr_ints(n, name, v, count);
}

static void test_identity(void **state) {
  (void)state;
  const Step steps[] = {{"Identity", "4, 5"}, {"Relu", "4, 5"}};
  guint ids[2];
  g_autoptr(WeirGraph) g = chain("4, 5", steps, 2, ids);
  t2_normalize(g);
  g_autoptr(GArray) sites = t2_sites(info(), g);
  assert_int_equal(sites->len, 1);
  WeirSite site = g_array_index(sites, WeirSite, 0);
  assert_int_equal(site.n_nodes, 1);
  assert_int_equal(site.nodes[0], ids[0]);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirApplyReport report;
  t2_apply(g, info(), &site, NULL, NULL, &report);
  assert_null(weir_graph_container(g, "T1"));
  assert_int_equal(t2_count_ops(g, NULL), 1);
  t2_assert_same(before, g, NULL, 0);
  /* the Identity read X and wrote T1: 2 x 80 bytes */
  assert_int_equal(report.bytes_before.value - report.bytes_after.value, 160);
  weir_apply_report_clear(&report);
}

/* An Identity writing the graph output leaves a copy into it. */
static void test_keeps_argument(void **state) {
  (void)state;
  const Step steps[] = {{"Relu", "4, 5"}, {"Identity", "4, 5"}};
  guint ids[2];
  g_autoptr(WeirGraph) g = chain("4, 5", steps, 2, ids);
  t2_normalize(g);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirSite site = t2_site(s, 1, &ids[1]);
  t2_apply(g, info(), &site, NULL, NULL, NULL);
  assert_int_equal(t2_count_ops(g, NULL), 1);
  assert_non_null(weir_graph_container(g, "Y"));
  /* a copy T1 -> Y */
  WeirNode *y = t2_access(g, s, "Y");
  g_autoptr(GPtrArray) in = weir_state_in_edges(s, y->id);
  assert_int_equal(in->len, 1);
  WeirMemlet *m = g_ptr_array_index(in, 0);
  assert_string_equal(m->data, "T1");
  assert_int_equal(weir_state_node(s, m->src)->kind, WEIR_NODE_ACCESS);
  t2_assert_same(before, g, NULL, 0);
}

static void test_dropout(void **state) {
  (void)state;
  WeirState *s;
  g_autoptr(WeirGraph) g = t2_graph("dropout", &s);
  t2_array(g, "X", WEIR_DTYPE_F32, "3, 4", FALSE);
  t2_array(g, "T", WEIR_DTYPE_F32, "3, 4", TRUE);
  t2_array(g, "M", WEIR_DTYPE_BOOL, "3, 4", TRUE);
  t2_array(g, "Y", WEIR_DTYPE_F32, "3, 4", FALSE);
  t2_array(g, "T2", WEIR_DTYPE_F32, "3, 4", TRUE);
  t2_array(g, "Y2", WEIR_DTYPE_F32, "3, 4", FALSE);
  const char *x[] = {"X", NULL}, *tm[] = {"T", "M", NULL};
  const char *t[] = {"T", NULL}, *y[] = {"Y", NULL};
  const char *t2[] = {"T2", NULL}, *y2[] = {"Y2", NULL};
  WeirNode *d = t2_op(g, s, "Dropout", "drop", x, tm);
  t2_op(g, s, "Sigmoid", "sig", t, y);
  WeirNode *dt = t2_op(g, s, "Dropout", "drop_train", x, t2);
  weir_node_set_attr_int(dt, "training_mode", 1);
  t2_op(g, s, "Sigmoid", "sig2", t2, y2);
  t2_normalize(g);
  assert_int_equal(t2_n_sites(info(), g), 2);
  assert_int_equal(t2_count_legal(info(), g), 1);
  WeirSite train = t2_site(s, 1, &dt->id);
  g_autofree char *r = t2_reason(info(), g, &train, NULL);
  assert_string_equal(r, "Dropout 'drop_train' is in training mode");

  WeirSite site = t2_site(s, 1, &d->id);
  t2_apply(g, info(), &site, NULL, NULL, NULL);
  assert_null(weir_graph_container(g, "T"));
  assert_null(weir_graph_container(g, "M")); /* the unused mask */
  assert_int_equal(t2_count_ops(g, "Dropout"), 1);

  /* a mask that is read keeps the Dropout */
  WeirState *s2;
  g_autoptr(WeirGraph) h = t2_graph("mask", &s2);
  t2_array(h, "X", WEIR_DTYPE_F32, "3", FALSE);
  t2_array(h, "T", WEIR_DTYPE_F32, "3", TRUE);
  t2_array(h, "M", WEIR_DTYPE_BOOL, "3", TRUE);
  t2_array(h, "Y", WEIR_DTYPE_F32, "3", FALSE);
  t2_array(h, "Z", WEIR_DTYPE_BOOL, "3", FALSE);
  const char *m[] = {"M", NULL}, *z[] = {"Z", NULL};
  WeirNode *hd = t2_op(h, s2, "Dropout", "drop", x, tm);
  t2_op(h, s2, "Identity", "id_t", t, y);
  t2_op(h, s2, "Not", "not", m, z);
  t2_normalize(h);
  WeirSite hs = t2_site(s2, 1, &hd->id);
  g_autofree char *r2 = t2_reason(info(), h, &hs, NULL);
  assert_string_equal(r2, "the mask 'M' of Dropout 'drop' is used");
}

static void test_noop_reshape_transpose(void **state) {
  (void)state;
  const Step steps[] = {{"Reshape", "2, 3, 4"},
                        {"Transpose", "2, 3, 4"},
                        {"Reshape", "6, 4"},
                        {"Transpose", "4, 6"}};
  guint ids[4];
  g_autoptr(WeirGraph) g = chain("2, 3, 4", steps, 4, ids);
  const gint64 same[] = {2, 3, 4}, flat[] = {6, 4}, idp[] = {0, 1, 2},
               swap[] = {1, 0};
  set_ints(node(g, ids[0]), "shape", same, 3);
  set_ints(node(g, ids[1]), "perm", idp, 3);
  set_ints(node(g, ids[2]), "shape", flat, 2);
  set_ints(node(g, ids[3]), "perm", swap, 2);
  t2_normalize(g);
  WeirState *s = g_ptr_array_index(g->states, 0);
  /* singles: the no-op Reshape and Transpose; pairs: none of two reshapes
   * or two transposes in a row (Reshape, Transpose, Reshape, Transpose) */
  g_autoptr(GArray) sites = t2_sites(info(), g);
  assert_int_equal(sites->len, 2);
  assert_int_equal(g_array_index(sites, WeirSite, 0).nodes[0], ids[0]);
  assert_int_equal(g_array_index(sites, WeirSite, 1).nodes[0], ids[1]);

  WeirSite real = t2_site(s, 1, &ids[2]);
  g_autofree char *r1 = t2_reason(info(), g, &real, NULL);
  assert_string_equal(r1, "Reshape 'reshape' changes the shape ('T2' to "
                          "'T3')");
  WeirSite perm = t2_site(s, 1, &ids[3]);
  g_autofree char *r2 = t2_reason(info(), g, &perm, NULL);
  assert_string_equal(r2, "the permutation of Transpose 'transpose' is not "
                          "the identity");

  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  assert_int_equal(t2_apply_all(g, info(), NULL), 2);
  /* the two no-ops went; then Reshape [6, 4] + Transpose: no pair */
  assert_int_equal(t2_count_ops(g, NULL), 2);
  t2_assert_same(before, g, NULL, 0);
  assert_true(t2_bytes(g, NULL) < t2_bytes(before, NULL));
}

static void test_reshape_pairs(void **state) {
  (void)state;
  /* Reshape [6, 4] then Reshape [4, 6]: one Reshape to [4, 6] */
  const Step merge[] = {
      {"Reshape", "6, 4"}, {"Reshape", "4, 6"}, {"Relu", "4, 6"}};
  guint ids[3];
  g_autoptr(WeirGraph) g = chain("2, 3, 4", merge, 3, ids);
  const gint64 s1[] = {6, -1}, s2[] = {4, 6};
  set_ints(node(g, ids[0]), "shape", s1, 2);
  set_ints(node(g, ids[1]), "shape", s2, 2);
  t2_normalize(g);
  g_autoptr(GArray) sites = t2_sites(info(), g);
  assert_int_equal(sites->len, 1);
  WeirSite site = g_array_index(sites, WeirSite, 0);
  assert_int_equal(site.n_nodes, 2);
  assert_int_equal(site.nodes[0], ids[0]);
  assert_int_equal(site.nodes[1], ids[1]);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirApplyReport report;
  t2_apply(g, info(), &site, NULL, NULL, &report);
  assert_int_equal(t2_count_ops(g, "Reshape"), 1);
  assert_null(weir_graph_container(g, "T1"));
  t2_assert_same(before, g, NULL, 0);
  /* one reshape fewer: 2 x 96 bytes */
  assert_int_equal(report.bytes_before.value - report.bytes_after.value, 192);
  weir_apply_report_clear(&report);

  /* Flatten then Reshape back: both go */
  const Step back[] = {
      {"Flatten", "2, 12"}, {"Reshape", "2, 3, 4"}, {"Neg", "2, 3, 4"}};
  g_autoptr(WeirGraph) h = chain("2, 3, 4", back, 3, ids);
  const gint64 s3[] = {2, 3, 4};
  set_ints(node(h, ids[1]), "shape", s3, 3);
  t2_normalize(h);
  g_autoptr(WeirGraph) hb = weir_graph_copy(h);
  assert_int_equal(t2_apply_all(h, info(), NULL), 1);
  assert_int_equal(t2_count_ops(h, NULL), 1);
  assert_int_equal(t2_count_ops(h, "Neg"), 1);
  t2_assert_same(hb, h, NULL, 0);
  assert_int_equal(t2_check_every_site(info(), hb, NULL, 0), 1);
}

static void test_transpose_pairs(void **state) {
  (void)state;
  const Step steps[] = {
      {"Transpose", "3, 2, 4"}, {"Transpose", "3, 4, 2"}, {"Relu", "3, 4, 2"}};
  guint ids[3];
  g_autoptr(WeirGraph) g = chain("2, 3, 4", steps, 3, ids);
  const gint64 p1[] = {1, 0, 2}, p2[] = {0, 2, 1};
  set_ints(node(g, ids[0]), "perm", p1, 3);
  set_ints(node(g, ids[1]), "perm", p2, 3);
  t2_normalize(g);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  assert_int_equal(t2_apply_all(g, info(), NULL), 1);
  assert_int_equal(t2_count_ops(g, "Transpose"), 1);
  WeirState *s = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY && !g_strcmp0(n->op, "Transpose")) {
      const WeirAttr *a = weir_node_attr(n, "perm");
      assert_int_equal(g_array_index(a->ints, gint64, 0), 1);
      assert_int_equal(g_array_index(a->ints, gint64, 1), 2);
      assert_int_equal(g_array_index(a->ints, gint64, 2), 0);
    }
  }
  t2_assert_same(before, g, NULL, 0);

  /* [1, 2, 0] then [2, 0, 1]: the identity, both go (into a graph output:
   * a copy remains) */
  const Step inv[] = {{"Transpose", "3, 4, 2"}, {"Transpose", "2, 3, 4"}};
  g_autoptr(WeirGraph) h = chain("2, 3, 4", inv, 2, ids);
  const gint64 q1[] = {1, 2, 0}, q2[] = {2, 0, 1};
  set_ints(node(h, ids[0]), "perm", q1, 3);
  set_ints(node(h, ids[1]), "perm", q2, 3);
  t2_normalize(h);
  g_autoptr(WeirGraph) hb = weir_graph_copy(h);
  assert_int_equal(t2_apply_all(h, info(), NULL), 1);
  assert_int_equal(t2_count_ops(h, NULL), 0);
  t2_assert_same(hb, h, NULL, 0);
}

static void test_rejections(void **state) {
  (void)state;
  WeirState *s;
  g_autoptr(WeirGraph) g = t2_graph("bad", &s);
  t2_array(g, "X", WEIR_DTYPE_F32, "2, 6", FALSE);
  t2_array(g, "T1", WEIR_DTYPE_F32, "12", TRUE);
  t2_array(g, "T2", WEIR_DTYPE_F32, "3, 4", TRUE);
  t2_array(g, "Y", WEIR_DTYPE_F32, "3, 4", FALSE);
  t2_array(g, "Z", WEIR_DTYPE_F32, "12", FALSE);
  const char *x[] = {"X", NULL}, *t1[] = {"T1", NULL}, *t2[] = {"T2", NULL};
  const char *y[] = {"Y", NULL}, *z[] = {"Z", NULL};
  WeirNode *r1 = t2_op(g, s, "Reshape", "r1", x, t1);
  WeirNode *r2 = t2_op(g, s, "Reshape", "r2", t1, t2);
  WeirNode *relu = t2_op(g, s, "Relu", "relu", t2, y);
  t2_op(g, s, "Neg", "neg", t1, z); /* a second reader of T1 */
  const gint64 a[] = {12}, b[] = {3, 4};
  set_ints(r1, "shape", a, 1);
  set_ints(r2, "shape", b, 2);
  t2_normalize(g);
  WeirSite pair = t2_site(s, 2, (guint[]){r1->id, r2->id});
  g_autofree char *r = t2_reason(info(), g, &pair, NULL);
  assert_string_equal(r, "the intermediate 'T1' is used by other nodes");
  WeirSite rl = t2_site(s, 1, &relu->id);
  g_autofree char *r3 = t2_reason(info(), g, &rl, NULL);
  assert_string_equal(r3, "node 'relu' (Relu) is not an identity operator");
  WeirSite wrong = t2_site(s, 2, (guint[]){r2->id, r1->id});
  g_autofree char *r4 = t2_reason(info(), g, &wrong, NULL);
  assert_string_equal(r4, "'r1' (Reshape) does not read the output of 'r2' "
                          "(Reshape)");

  /* an Identity whose output is read by a map scope */
  WeirState *s2;
  g_autoptr(WeirGraph) h = t2_graph("map", &s2);
  t2_array(h, "A", WEIR_DTYPE_F32, "8", FALSE);
  t2_array(h, "T", WEIR_DTYPE_F32, "8", TRUE);
  t2_array(h, "B", WEIR_DTYPE_F32, "8", FALSE);
  const char *ai[] = {"A", NULL}, *to[] = {"T", NULL};
  WeirNode *id = t2_op(h, s2, "Identity", "id", ai, to);
  WeirNode *exit = NULL;
  const char *params[] = {"i", NULL}, *ranges[] = {"0:8", NULL};
  WeirNode *entry = weir_state_add_map(h, s2, "m", params, ranges,
                                       WEIR_SCHEDULE_SEQUENTIAL, &exit, NULL);
  weir_node_add_in_conn(entry, "IN_T");
  weir_node_add_out_conn(entry, "OUT_T");
  weir_node_add_in_conn(exit, "IN_B");
  weir_node_add_out_conn(exit, "OUT_B");
  const char *tin[] = {"t", NULL}, *tout[] = {"b", NULL};
  WeirNode *tk = weir_state_add_tasklet(h, s2, "dbl", tin, tout, "b = 2 * t");
  WeirNode *ta = t2_access(h, s2, "T"), *ba = t2_access(h, s2, "B");
  assert_non_null(weir_state_add_memlet(h, s2, ta->id, NULL, entry->id, "IN_T",
                                        "T", "0:8", NULL));
  assert_non_null(weir_state_add_memlet(h, s2, entry->id, "OUT_T", tk->id, "t",
                                        "T", "i", NULL));
  assert_non_null(weir_state_add_memlet(h, s2, tk->id, "b", exit->id, "IN_B",
                                        "B", "i", NULL));
  assert_non_null(weir_state_add_memlet(h, s2, exit->id, "OUT_B", ba->id, NULL,
                                        "B", "0:8", NULL));
  t2_normalize(h);
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(h, &err))
    fail_msg("%s", err->message);
  WeirSite ids = t2_site(s2, 1, &id->id);
  g_autofree char *r5 = t2_reason(info(), h, &ids, NULL);
  g_autofree char *want = g_strdup_printf(
      "'T' is read by map_entry 'm' (node %u), whose scope names its "
      "memlets after the container",
      entry->id);
  assert_string_equal(r5, want);
}

static void test_samples(void **state) {
  (void)state;
  for (guint i = 0; i < t2_n_samples; i++) {
    g_autoptr(WeirGraph) g = t2_load_sample(t2_samples[i].file);
    assert_int_equal(t2_n_sites(info(), g), 0);
  }
}

/* The bundled models, imported and expanded: no site. */
static void test_models(void **state) {
  (void)state;
  const WeirTransformInfo *t = t2_lookup("identity-elimination");
  for (guint i = 0; i < t2_n_models; i++) {
    g_autoptr(WeirGraph) g = t2_import_model(t2_models[i].name);
    assert_int_equal(t2_n_sites(t, g), 0);
    g_autoptr(WeirGraph) e = t2_expanded_model(t2_models[i].name);
    assert_int_equal(t2_n_sites(t, e), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_identity),
      cmocka_unit_test(test_keeps_argument),
      cmocka_unit_test(test_dropout),
      cmocka_unit_test(test_noop_reshape_transpose),
      cmocka_unit_test(test_reshape_pairs),
      cmocka_unit_test(test_transpose_pairs),
      cmocka_unit_test(test_rejections),
      cmocka_unit_test(test_samples),
      cmocka_unit_test(test_models),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
