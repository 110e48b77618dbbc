/* test-tasklet-fusion.c — merging a tasklet into the one that reads its
 * result (tasklet-fusion). */
#include "tier3-check.h"

#define TF "tasklet-fusion"
#define S(...) ((const char *const[]){__VA_ARGS__, NULL})

static WeirContainer *scalar(WeirGraph *g, const char *name, WeirDType dtype,
                             gboolean transient) {
  g_autoptr(GError) error = NULL;
  WeirContainer *c =
      weir_graph_add_array(g, name, dtype, "", transient, &error);
  if (!c)
    fail_msg("%s", error->message);
  return c;
}

/* Top level: u = f(a) into the scalar transient U, then y = g(u, a, b).
 * Both bodies have a local 't'; both read A through one access node.
 * ids: state, t1, U's node, t2. */
static WeirGraph *build_scalars(WeirWcr u_wcr, guint *ids) {
  WeirGraph *g = weir_graph_new("scalars");
  scalar(g, "A", WEIR_DTYPE_F32, FALSE);
  scalar(g, "B", WEIR_DTYPE_F32, FALSE);
  scalar(g, "U", WEIR_DTYPE_F32, TRUE);
  scalar(g, "Y", WEIR_DTYPE_F32, FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *b = weir_state_add_access(g, s, "B");
  WeirNode *u = weir_state_add_access(g, s, "U");
  WeirNode *y = weir_state_add_access(g, s, "Y");
  WeirNode *t1 = weir_state_add_tasklet(g, s, "first", S("a"), S("u"),
                                        "t = a * 2\nu = t + 1");
  WeirNode *t2 = weir_state_add_tasklet(g, s, "second", S("u", "x", "b"),
                                        S("y"), "t = u * x\ny = t + b");
  t3_edge(g, s, a->id, NULL, t1->id, "a", "A", "");
  WeirMemlet *w = t3_edge(g, s, t1->id, "u", u->id, NULL, "U", "");
  w->wcr = u_wcr;
  t3_edge(g, s, u->id, NULL, t2->id, "u", "U", "");
  t3_edge(g, s, a->id, NULL, t2->id, "x", "A", "");
  t3_edge(g, s, b->id, NULL, t2->id, "b", "B", "");
  t3_edge(g, s, t2->id, "y", y->id, NULL, "Y", "");
  ids[0] = s->id;
  ids[1] = t1->id;
  ids[2] = u->id;
  ids[3] = t2->id;
  t3_assert_valid(g);
  return g;
}

static WeirNode *only_tasklet(WeirState *s) {
  WeirNode *found = NULL;
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_TASKLET) {
      assert_null(found);
      found = n;
    }
  }
  assert_non_null(found);
  return found;
}

static void test_scalars(void **state) {
  (void)state;
  guint ids[4];
  g_autoptr(WeirGraph) g = build_scalars(WEIR_WCR_NONE, ids);
  g_autoptr(GArray) sites = t3_sites(TF, g);
  assert_int_equal(sites->len, 1);
  WeirSite site = t3_site(ids[0], ids[1], ids[3], 0);
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 0), &site));
  assert_null(t3_why(TF, g, &site));

  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  gint64 bytes0 = t3_bytes(g, NULL);
  t3_apply(TF, g, &site);
  WeirState *s = weir_graph_state(g, ids[0]);
  WeirNode *f = only_tasklet(s);
  /* One read of A, no U; B's local t renamed; U's value is a local. */
  assert_string_equal(f->code_text, "t = a * 2\n"
                                    "u = t + 1\n"
                                    "t_1 = u * a\n"
                                    "y = t_1 + b");
  assert_int_equal(f->in_conns->len, 2);
  assert_int_equal(f->out_conns->len, 1);
  assert_null(weir_graph_container(g, "U"));
  assert_null(weir_state_node(s, ids[2]));
  /* U's write and read (4 bytes each) and the second read of A. */
  assert_int_equal(bytes0 - t3_bytes(g, NULL), 3 * 4);
  t3_assert_same_outputs(before, g, NULL, 0);
}

/* A third tasklet reads U too: the fused tasklet keeps writing U. */
static void test_kept_intermediate(void **state) {
  (void)state;
  guint ids[4];
  g_autoptr(WeirGraph) g = build_scalars(WEIR_WCR_NONE, ids);
  WeirState *s = weir_graph_state(g, ids[0]);
  scalar(g, "Z", WEIR_DTYPE_F32, FALSE);
  WeirNode *z = weir_state_add_access(g, s, "Z");
  WeirNode *t3 =
      weir_state_add_tasklet(g, s, "third", S("v"), S("z"), "z = v * v");
  t3_edge(g, s, ids[2], NULL, t3->id, "v", "U", "");
  t3_edge(g, s, t3->id, "z", z->id, NULL, "Z", "");
  t3_assert_valid(g);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirSite site = t3_site(ids[0], ids[1], ids[3], 0);
  t3_apply(TF, g, &site);
  assert_non_null(weir_graph_container(g, "U"));
  assert_non_null(weir_state_node(s, ids[2]));
  g_autoptr(GPtrArray) into_u = weir_state_in_edges(s, ids[2]);
  assert_int_equal(into_u->len, 1);
  const WeirNode *f =
      weir_state_node(s, ((WeirMemlet *)g_ptr_array_index(into_u, 0))->src);
  /* u is both an output and the local B reads. */
  assert_string_equal(f->code_text, "t = a * 2\n"
                                    "u_1 = t + 1\n"
                                    "u = u_1\n"
                                    "t_1 = u_1 * a\n"
                                    "y = t_1 + b");
  t3_assert_same_outputs(before, g, NULL, 0);
}

/* The value handed over is converted to the intermediate's dtype (i32),
 * as the write did. */
static void test_conversion(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("convert");
  scalar(g, "A", WEIR_DTYPE_F32, FALSE);
  scalar(g, "U", WEIR_DTYPE_I32, TRUE);
  scalar(g, "Y", WEIR_DTYPE_F32, FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *u = weir_state_add_access(g, s, "U");
  WeirNode *y = weir_state_add_access(g, s, "Y");
  WeirNode *t1 =
      weir_state_add_tasklet(g, s, "first", S("a"), S("u"), "u = a * 7.5");
  WeirNode *t2 =
      weir_state_add_tasklet(g, s, "second", S("u"), S("y"), "y = u / 2");
  t3_edge(g, s, a->id, NULL, t1->id, "a", "A", "");
  t3_edge(g, s, t1->id, "u", u->id, NULL, "U", "");
  t3_edge(g, s, u->id, NULL, t2->id, "u", "U", "");
  t3_edge(g, s, t2->id, "y", y->id, NULL, "Y", "");
  t3_assert_valid(g);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirSite site = t3_site(s->id, t1->id, t2->id, 0);
  t3_apply(TF, g, &site);
  assert_string_equal(only_tasklet(s)->code_text, "u = i32(a * 7.5)\n"
                                                  "y = u / 2");
  t3_assert_same_outputs(before, g, NULL, 0);
}

/* After map-fusion the tasklets of a map are joined by direct memlets;
 * tasklet-fusion merges them into one and drops the scalars. */
static void test_after_map_fusion(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("chain");
  weir_graph_add_symbol(g, "N");
  t3_array(g, "X", "N", FALSE);
  t3_array(g, "T1", "N", TRUE);
  t3_array(g, "T2", "N", TRUE);
  t3_array(g, "Y", "N", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = weir_state_add_access(g, s, "X");
  WeirNode *t1 = weir_state_add_access(g, s, "T1");
  WeirNode *t2 = weir_state_add_access(g, s, "T2");
  WeirNode *y = weir_state_add_access(g, s, "Y");
  t3_map(g, s, "a", "i", "0:N", "t = x * i", ((const T3Port[]){{x, "x", "i"}}),
         1, ((const T3Port[]){{t1, "t", "i"}}), 1, NULL, NULL);
  t3_map(g, s, "b", "j", "0:N", "t = t + 1", ((const T3Port[]){{t1, "t", "j"}}),
         1, ((const T3Port[]){{t2, "t", "j"}}), 1, NULL, NULL);
  t3_map(g, s, "c", "k", "0:N", "y = max(t, x)",
         ((const T3Port[]){{t2, "t", "k"}, {x, "x", "k"}}), 2,
         ((const T3Port[]){{y, "y", "k"}}), 1, NULL, NULL);
  t3_assert_valid(g);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  g_autoptr(GHashTable) sym = t3_symbols(g, 21);
  assert_int_equal(t3_apply_to_fixpoint("map-fusion", g), 2);
  assert_int_equal(t3_apply_to_fixpoint(TF, g), 2);
  WeirNode *f = only_tasklet(s);
  /* Both read X[k] through the fused map's one connector: read once. */
  assert_string_equal(f->code_text, "t = x * k\n"
                                    "t_1 = t + 1\n"
                                    "y = max(t_1, x)");
  assert_int_equal(f->in_conns->len, 1);
  assert_null(weir_graph_container(g, "T1_v"));
  assert_null(weir_graph_container(g, "T2_v"));
  t3_assert_same_outputs(before, g, sym, 1e-5);
}

static void test_reject_reasons(void **state) {
  (void)state;
  guint ids[4];
  {
    g_autoptr(WeirGraph) g = build_scalars(WEIR_WCR_SUM, ids);
    WeirSite site = t3_site(ids[0], ids[1], ids[3], 0);
    t3_assert_reason(TF, g, &site, "'U' is written with wcr 'sum'");
  }
  {
    /* t1 -> V -> t0 -> W -> t2 besides t1 -> U -> t2. */
    g_autoptr(WeirGraph) g = build_scalars(WEIR_WCR_NONE, ids);
    WeirState *s = weir_graph_state(g, ids[0]);
    scalar(g, "V", WEIR_DTYPE_F32, TRUE);
    scalar(g, "W", WEIR_DTYPE_F32, TRUE);
    WeirNode *t1 = weir_state_node(s, ids[1]);
    WeirNode *t2 = weir_state_node(s, ids[3]);
    weir_node_add_out_conn(t1, "v");
    weir_tasklet_set_code(t1, "t = a * 2\nu = t + 1\nv = t");
    weir_node_add_in_conn(t2, "w");
    weir_tasklet_set_code(t2, "t = u * x\ny = t + b + w");
    WeirNode *v = weir_state_add_access(g, s, "V");
    WeirNode *w = weir_state_add_access(g, s, "W");
    WeirNode *t0 =
        weir_state_add_tasklet(g, s, "middle", S("p"), S("q"), "q = -p");
    t3_edge(g, s, t1->id, "v", v->id, NULL, "V", "");
    t3_edge(g, s, v->id, NULL, t0->id, "p", "V", "");
    t3_edge(g, s, t0->id, "q", w->id, NULL, "W", "");
    t3_edge(g, s, w->id, NULL, t2->id, "w", "W", "");
    t3_assert_valid(g);
    WeirSite site = t3_site(ids[0], ids[1], ids[3], 0);
    t3_assert_reason(TF, g, &site,
                     "tasklet 'second' also depends on tasklet 'first' "
                     "through another path");
    /* t1 -> t0 and t0 -> t2 are fine on their own. */
    WeirSite a = t3_site(ids[0], ids[1], t0->id, 0);
    assert_null(t3_why(TF, g, &a));
    g_autoptr(WeirGraph) before = weir_graph_copy(g);
    t3_apply(TF, g, &a);
    t3_assert_same_outputs(before, g, NULL, 0);
  }
  {
    /* A second writer of U. */
    g_autoptr(WeirGraph) g = build_scalars(WEIR_WCR_NONE, ids);
    WeirState *s = weir_graph_state(g, ids[0]);
    WeirNode *t0 = weir_state_add_tasklet(g, s, "other", NULL, S("o"), "o = 1");
    t3_edge(g, s, t0->id, "o", ids[2], NULL, "U", "");
    WeirSite site = t3_site(ids[0], ids[1], ids[3], 0);
    t3_assert_reason(TF, g, &site, "is also written by other nodes");
  }
  {
    /* Unrelated tasklets; not a pair of tasklets. */
    g_autoptr(WeirGraph) g = build_scalars(WEIR_WCR_NONE, ids);
    WeirSite back = t3_site(ids[0], ids[3], ids[1], 0);
    t3_assert_reason(TF, g, &back,
                     "tasklet 'first' reads nothing tasklet 'second' writes");
    WeirSite bad = t3_site(ids[0], ids[1], ids[2], 0);
    t3_assert_reason(TF, g, &bad, "not two tasklets");
  }
  {
    /* U has two elements: t1 writes U[0], t2 reads U[1]. */
    g_autoptr(WeirGraph) g = weir_graph_new("indices");
    t3_array(g, "U", "2", TRUE);
    t3_array(g, "Y", "2", FALSE);
    WeirState *s = weir_graph_add_state(g, "main");
    WeirNode *u = weir_state_add_access(g, s, "U");
    WeirNode *y = weir_state_add_access(g, s, "Y");
    WeirNode *t1 = weir_state_add_tasklet(g, s, "w", NULL, S("o"), "o = 3");
    WeirNode *t2 = weir_state_add_tasklet(g, s, "r", S("i"), S("o"), "o = i");
    t3_edge(g, s, t1->id, "o", u->id, NULL, "U", "0");
    t3_edge(g, s, u->id, NULL, t2->id, "i", "U", "1");
    t3_edge(g, s, t2->id, "o", y->id, NULL, "Y", "0");
    t3_assert_valid(g);
    WeirSite site = t3_site(s->id, t1->id, t2->id, 0);
    t3_assert_reason(TF, g, &site,
                     "tasklet 'r' reads U[1], at other indices than tasklet "
                     "'w' writes (U[0])");
  }
}

static void test_samples_every_legal_site(void **state) {
  (void)state;
  const char *names[] = {"vector_add.json", "matmul.json", "softmax.json",
                         "loop.json"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autoptr(WeirGraph) g = t3_load_sample(names[i]);
    g_autoptr(GHashTable) sym = t3_symbols(g, 5);
    /* Every tasklet of the samples is alone in its map. */
    g_autoptr(GArray) sites = t3_sites(TF, g);
    assert_int_equal(sites->len, 0);
    assert_int_equal(t3_apply_each_legal_site(TF, g, sym, 1e-5), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scalars),
      cmocka_unit_test(test_kept_intermediate),
      cmocka_unit_test(test_conversion),
      cmocka_unit_test(test_after_map_fusion),
      cmocka_unit_test(test_reject_reasons),
      cmocka_unit_test(test_samples_every_legal_site),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
