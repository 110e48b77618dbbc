/* test-state-fusion.c — merging consecutive states (state-fusion). */
#include "tier3-check.h"

#define SF "state-fusion"
#define P(...) ((const T3Port[]){__VA_ARGS__})

/* matmul.json: "init" zeroes C, "matmul" accumulates into it. */
static void test_matmul_sample(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t3_load_sample("matmul.json");
  g_autoptr(GArray) sites = t3_sites(SF, g);
  assert_int_equal(sites->len, 1);
  WeirSite site = t3_site(4, 0);
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 0), &site));
  assert_null(t3_why(SF, g, &site));
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  gint64 bytes0 = t3_bytes(g, NULL);
  t3_apply(SF, g, &site);
  assert_int_equal(g->states->len, 1);
  assert_int_equal(g->transitions->len, 0);
  WeirState *s = weir_graph_state(g, 4);
  assert_non_null(weir_state_node(s, 15)); /* matmul's entry moved in */
  /* C written in both states: the init's C node (8) orders the
   * accumulation (entry 15) after it. */
  gboolean ordered = FALSE;
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    ordered = ordered || (m->src == 8 && m->dst == 15 && !m->data);
  }
  assert_true(ordered);
  assert_int_equal(t3_bytes(g, NULL), bytes0);
  t3_assert_same_outputs(before, g, NULL, 1e-5);
}

/* loop.json: the only states with one way out assign symbols on it. */
static void test_loop_sample(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t3_load_sample("loop.json");
  g_autoptr(GArray) sites = t3_sites(SF, g);
  assert_int_equal(sites->len, 2);
  WeirSite init = t3_site(4, 0);
  WeirSite body = t3_site(6, 0);
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 0), &init));
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 1), &body));
  t3_assert_reason(SF, g, &init,
                   "transition 23 to state 5 'guard' assigns symbols (t, ...)");
  t3_assert_reason(SF, g, &body, "assigns symbols");
  WeirSite guard = t3_site(5, 0);
  t3_assert_reason(SF, g, &guard, "state 5 'guard' has 2 outgoing transitions");
}

/* Two states: S1 computes T = X * 2 (and reads Z); S2 computes Y = T + 1
 * (and overwrites Z).  ids: S1, S2. */
static WeirGraph *build_two_states(guint *ids) {
  WeirGraph *g = weir_graph_new("two");
  weir_graph_add_symbol(g, "N");
  t3_array(g, "X", "N", FALSE);
  t3_array(g, "T", "N", TRUE);
  t3_array(g, "Y", "N", FALSE);
  t3_array(g, "Z", "N", FALSE);
  t3_array(g, "W", "N", FALSE);
  WeirState *s1 = weir_graph_add_state(g, "produce");
  WeirState *s2 = weir_graph_add_state(g, "consume");
  assert_non_null(weir_graph_add_transition(g, s1->id, s2->id, NULL, NULL));
  WeirNode *x = weir_state_add_access(g, s1, "X");
  WeirNode *z = weir_state_add_access(g, s1, "Z");
  WeirNode *t = weir_state_add_access(g, s1, "T");
  WeirNode *w = weir_state_add_access(g, s1, "W");
  t3_map(g, s1, "a", "i", "0:N", "t = x * 2\nw = z",
         P({x, "x", "i"}, {z, "z", "i"}), 2, P({t, "t", "i"}, {w, "w", "i"}), 2,
         NULL, NULL);
  WeirNode *t2 = weir_state_add_access(g, s2, "T");
  WeirNode *x2 = weir_state_add_access(g, s2, "X");
  WeirNode *y = weir_state_add_access(g, s2, "Y");
  WeirNode *z2 = weir_state_add_access(g, s2, "Z");
  t3_map(g, s2, "b", "j", "0:N", "y = t + 1\nz = x",
         P({t2, "t", "j"}, {x2, "x", "j"}), 2, P({y, "y", "j"}, {z2, "z", "j"}),
         2, NULL, NULL);
  ids[0] = s1->id;
  ids[1] = s2->id;
  t3_assert_valid(g);
  return g;
}

static void test_two_states_then_map_fusion(void **state) {
  (void)state;
  guint ids[2];
  g_autoptr(WeirGraph) g = build_two_states(ids);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  g_autoptr(GHashTable) sym = t3_symbols(g, 16);
  gint64 bytes0 = t3_bytes(g, sym);
  /* Before: no producer-consumer pair in one state. */
  g_autoptr(GArray) none = t3_sites("map-fusion", g);
  assert_int_equal(none->len, 0);
  WeirSite site = t3_site(ids[0], 0);
  t3_apply(SF, g, &site);
  assert_int_equal(g->states->len, 1);
  /* S2 read T from S1's node: one access node of T is left. */
  WeirState *s = g_ptr_array_index(g->states, 0);
  guint t_nodes = 0;
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    t_nodes += n->kind == WEIR_NODE_ACCESS && strcmp(n->data, "T") == 0;
  }
  assert_int_equal(t_nodes, 1);
  assert_int_equal(t3_bytes(g, sym), bytes0);
  t3_assert_same_outputs(before, g, sym, 1e-5);
  /* Z: a reads it, b overwrites it; map fusion must refuse that. */
  g_autoptr(GArray) sites = t3_sites("map-fusion", g);
  assert_int_equal(sites->len, 1);
  t3_assert_reason("map-fusion", g, &g_array_index(sites, WeirSite, 0),
                   "map 'b' also depends on map 'a' through node");
}

/* Without the Z conflict, state fusion enables map fusion. */
static void test_enables_map_fusion(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("pipeline");
  t3_array(g, "X", "32", FALSE);
  t3_array(g, "T", "32", TRUE);
  t3_array(g, "Y", "32", FALSE);
  WeirState *s1 = weir_graph_add_state(g, "produce");
  WeirState *s2 = weir_graph_add_state(g, "consume");
  assert_non_null(weir_graph_add_transition(g, s1->id, s2->id, NULL, NULL));
  WeirNode *x = weir_state_add_access(g, s1, "X");
  WeirNode *t = weir_state_add_access(g, s1, "T");
  t3_map(g, s1, "a", "i", "0:32", "t = exp(x)", P({x, "x", "i"}), 1,
         P({t, "t", "i"}), 1, NULL, NULL);
  WeirNode *t2 = weir_state_add_access(g, s2, "T");
  WeirNode *y = weir_state_add_access(g, s2, "Y");
  t3_map(g, s2, "b", "j", "0:32", "y = t * t", P({t2, "t", "j"}), 1,
         P({y, "y", "j"}), 1, NULL, NULL);
  t3_assert_valid(g);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  gint64 bytes0 = t3_bytes(g, NULL);
  assert_int_equal(t3_apply_to_fixpoint(SF, g), 1);
  assert_int_equal(t3_apply_to_fixpoint("map-fusion", g), 1);
  assert_null(weir_graph_container(g, "T"));
  assert_int_equal(bytes0 - t3_bytes(g, NULL), 2 * 32 * 4);
  t3_assert_same_outputs(before, g, NULL, 1e-5);
}

static void test_reject_reasons(void **state) {
  (void)state;
  {
    /* s1 -> s2 with a condition, s2 -> s1 back (s1 is the start). */
    g_autoptr(WeirGraph) g = weir_graph_new("cond");
    weir_graph_add_symbol(g, "n");
    WeirState *s1 = weir_graph_add_state(g, "one");
    WeirState *s2 = weir_graph_add_state(g, "two");
    assert_non_null(
        weir_graph_add_transition(g, s1->id, s2->id, "n > 0", NULL));
    assert_non_null(weir_graph_add_transition(g, s2->id, s1->id, NULL, NULL));
    t3_assert_valid(g);
    WeirSite a = t3_site(s1->id, 0);
    t3_assert_reason(SF, g, &a, "has a condition ('n > 0')");
    WeirSite b = t3_site(s2->id, 0);
    t3_assert_reason(SF, g, &b, "is the start state");
  }
  {
    /* s1 -> s3 and s2 -> s3. */
    g_autoptr(WeirGraph) g = weir_graph_new("join");
    WeirState *s1 = weir_graph_add_state(g, "one");
    WeirState *s2 = weir_graph_add_state(g, "two");
    WeirState *s3 = weir_graph_add_state(g, "three");
    assert_non_null(weir_graph_add_transition(g, s1->id, s3->id, NULL, NULL));
    assert_non_null(weir_graph_add_transition(g, s2->id, s3->id, NULL, NULL));
    WeirSite a = t3_site(s1->id, 0);
    t3_assert_reason(SF, g, &a, "is also entered by transition");
    /* A self loop is not a site. */
    assert_non_null(weir_graph_add_transition(g, s3->id, s3->id, NULL, NULL));
    WeirSite c = t3_site(s3->id, 0);
    t3_assert_reason(SF, g, &c, "loops back to state");
    g_autoptr(GArray) sites = t3_sites(SF, g);
    assert_int_equal(sites->len, 2);
  }
}

static void test_samples_every_legal_site(void **state) {
  (void)state;
  const char *names[] = {"vector_add.json", "matmul.json", "softmax.json",
                         "loop.json"};
  guint expect[] = {0, 1, 0, 0};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autoptr(WeirGraph) g = t3_load_sample(names[i]);
    g_autoptr(GHashTable) sym = t3_symbols(g, 5);
    assert_int_equal(t3_apply_each_legal_site(SF, g, sym, 1e-5), expect[i]);
  }
  guint ids[2];
  g_autoptr(WeirGraph) g = build_two_states(ids);
  g_autoptr(GHashTable) sym = t3_symbols(g, 7);
  assert_int_equal(t3_apply_each_legal_site(SF, g, sym, 1e-5), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_sample),
      cmocka_unit_test(test_loop_sample),
      cmocka_unit_test(test_two_states_then_map_fusion),
      cmocka_unit_test(test_enables_map_fusion),
      cmocka_unit_test(test_reject_reasons),
      cmocka_unit_test(test_samples_every_legal_site),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
