/* test-map-fusion.c — vertical map fusion (map-fusion). */
#include "tier3-check.h"

#define MF "map-fusion"
#define P(...) ((const T3Port[]){__VA_ARGS__})

/* X[N] -> a: t = x * 2 -> T1 -> b: u = t + 1 -> T2 -> c: y = max(u, 0) -> Y.
 * ids: [0] a's exit, [1] T1's node, [2] b's entry, [3] b's exit, [4] T2's
 * node, [5] c's entry. */
static WeirGraph *build_chain(guint *ids) {
  WeirGraph *g = weir_graph_new("chain");
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
  WeirNode *xa, *xb, *xc;
  t3_map(g, s, "a", "i", "0:N", "t = x * 2", P({x, "x", "i"}), 1,
         P({t1, "t", "i"}), 1, &xa, NULL);
  WeirNode *eb = t3_map(g, s, "b", "j", "0:N", "u = t + 1", P({t1, "t", "j"}),
                        1, P({t2, "u", "j"}), 1, &xb, NULL);
  WeirNode *ec = t3_map(g, s, "c", "k", "0:N", "y = max(u, 0)",
                        P({t2, "u", "k"}), 1, P({y, "y", "k"}), 1, &xc, NULL);
  if (ids) {
    guint v[] = {xa->id, t1->id, eb->id, xb->id, t2->id, ec->id};
    memcpy(ids, v, sizeof v);
  }
  t3_assert_valid(g);
  return g;
}

static guint count_kind(const WeirGraph *g, WeirNodeKind kind) {
  guint n = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++)
      n += ((const WeirNode *)g_ptr_array_index(s->nodes, k))->kind == kind;
  }
  return n;
}

static void test_chain_sites(void **state) {
  (void)state;
  guint ids[6];
  g_autoptr(WeirGraph) g = build_chain(ids);
  g_autoptr(GArray) sites = t3_sites(MF, g);
  assert_int_equal(sites->len, 2);
  guint st = ((WeirState *)g_ptr_array_index(g->states, 0))->id;
  WeirSite s0 = t3_site(st, ids[0], ids[1], ids[2], 0);
  WeirSite s1 = t3_site(st, ids[3], ids[4], ids[5], 0);
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 0), &s0));
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 1), &s1));
  assert_null(t3_why(MF, g, &s0));
  assert_null(t3_why(MF, g, &s1));
}

static void test_chain_fuse_once(void **state) {
  (void)state;
  guint ids[6];
  g_autoptr(WeirGraph) g = build_chain(ids);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  g_autoptr(GHashTable) sym = t3_symbols(g, 37);
  gint64 bytes0 = t3_bytes(g, sym);
  guint st = ((WeirState *)g_ptr_array_index(g->states, 0))->id;
  WeirSite site = t3_site(st, ids[0], ids[1], ids[2], 0);
  t3_apply(MF, g, &site);

  /* T1 is gone (container, node, memlets); b's map remains. */
  assert_null(weir_graph_container(g, "T1"));
  WeirState *s = g_ptr_array_index(g->states, 0);
  assert_null(weir_state_node(s, ids[0]));
  assert_null(weir_state_node(s, ids[1]));
  assert_non_null(weir_state_node(s, ids[2]));
  assert_int_equal(count_kind(g, WEIR_NODE_MAP_ENTRY), 2);
  assert_int_equal(count_kind(g, WEIR_NODE_TASKLET), 3);
  /* The tasklets are joined directly through a scalar. */
  WeirContainer *v = weir_graph_container(g, "T1_v");
  assert_non_null(v);
  assert_int_equal(v->shape->len, 0);
  assert_true(v->transient);
  guint direct = 0;
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (g_strcmp0(m->data, "T1_v") != 0)
      continue;
    assert_int_equal(weir_state_node(s, m->src)->kind, WEIR_NODE_TASKLET);
    assert_int_equal(weir_state_node(s, m->dst)->kind, WEIR_NODE_TASKLET);
    direct++;
  }
  assert_int_equal(direct, 1);
  /* T1's write and read disappear: 2 x N x 4 bytes. */
  assert_int_equal(bytes0 - t3_bytes(g, sym), 2 * 37 * 4);
  t3_assert_same_outputs(before, g, sym, 1e-5);
}

static void test_chain_fixpoint(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_chain(NULL);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  g_autoptr(GHashTable) sym = t3_symbols(g, 50);
  gint64 bytes0 = t3_bytes(g, sym);
  assert_int_equal(t3_apply_to_fixpoint(MF, g), 2);
  assert_int_equal(count_kind(g, WEIR_NODE_MAP_ENTRY), 1);
  assert_null(weir_graph_container(g, "T1"));
  assert_null(weir_graph_container(g, "T2"));
  /* Only X is read and Y written. */
  assert_int_equal(t3_bytes(g, sym), 2 * 50 * 4);
  assert_int_equal(bytes0 - t3_bytes(g, sym), 2 * 2 * 50 * 4);
  t3_assert_same_outputs(before, g, sym, 1e-5);
}

/* A over (i, j) in (0:N, 0:M) writes T[i, j] = x * i + j (parameters in the
 * body); B over (p, q) in (0:M, 0:N) reads T[q, p]: the parameters pair up
 * crosswise. */
static void test_permuted_parameters(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("perm");
  weir_graph_add_symbol(g, "M");
  weir_graph_add_symbol(g, "N");
  t3_array(g, "X", "N, M", FALSE);
  t3_array(g, "T", "N, M", TRUE);
  t3_array(g, "Y", "M, N", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = weir_state_add_access(g, s, "X");
  WeirNode *t = weir_state_add_access(g, s, "T");
  WeirNode *y = weir_state_add_access(g, s, "Y");
  WeirNode *xa;
  t3_map(g, s, "a", "i,j", "0:N,0:M", "t = x * i + j", P({x, "x", "i, j"}), 1,
         P({t, "t", "i, j"}), 1, &xa, NULL);
  WeirNode *eb =
      t3_map(g, s, "b", "p,q", "0:M,0:N", "y = t - p", P({t, "t", "q, p"}), 1,
             P({y, "y", "p, q"}), 1, NULL, NULL);
  t3_assert_valid(g);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "M", 5);
  weir_bindings_set(sym, "N", 7);
  gint64 bytes0 = t3_bytes(g, sym);
  WeirSite site = t3_site(s->id, xa->id, t->id, eb->id, 0);
  assert_null(t3_why(MF, g, &site));
  t3_apply(MF, g, &site);
  assert_null(weir_graph_container(g, "T"));
  assert_int_equal(bytes0 - t3_bytes(g, sym), 2 * 35 * 4);
  t3_assert_same_outputs(before, g, sym, 1e-5);
}

/* A producer/consumer pair for the rejection tests: a over i in 0:N writes
 * T[i]; b reads T as given.  ids: a's exit, T's node, b's entry. */
static WeirGraph *build_pair(const char *b_range, const char *b_read,
                             gboolean transient, WeirWcr a_wcr, guint *ids) {
  WeirGraph *g = weir_graph_new("pair");
  weir_graph_add_symbol(g, "N");
  t3_array(g, "X", "N", FALSE);
  t3_array(g, "T", "N", transient);
  t3_array(g, "Y", "N", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = weir_state_add_access(g, s, "X");
  WeirNode *t = weir_state_add_access(g, s, "T");
  WeirNode *y = weir_state_add_access(g, s, "Y");
  WeirNode *xa;
  t3_map(g, s, "a", "i", "0:N", "t = x * 2", P({x, "x", "i"}), 1,
         P({t, "t", "i", a_wcr}), 1, &xa, NULL);
  WeirNode *eb =
      t3_map(g, s, "b", "j", b_range, "y = t + 1", P({t, "t", b_read}), 1,
             P({y, "y", "j"}), 1, NULL, NULL);
  ids[0] = s->id;
  ids[1] = xa->id;
  ids[2] = t->id;
  ids[3] = eb->id;
  t3_assert_valid(g);
  return g;
}

static void test_reject_reasons(void **state) {
  (void)state;
  guint ids[4];
  {
    g_autoptr(WeirGraph) g = build_pair("0:N - 1", "j", TRUE, 0, ids);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    t3_assert_reason(MF, g, &site, "different ranges");
  }
  {
    g_autoptr(WeirGraph) g = build_pair("0:N", "j", FALSE, 0, ids);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    t3_assert_reason(MF, g, &site, "container 'T' is not transient");
  }
  {
    /* Reversed: b reads T[N - 1 - j]. */
    g_autoptr(WeirGraph) g = build_pair("0:N", "N - 1 - j", TRUE, 0, ids);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    t3_assert_reason(MF, g, &site, "at other indices");
  }
  {
    g_autoptr(WeirGraph) g = build_pair("0:N", "j", TRUE, WEIR_WCR_SUM, ids);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    t3_assert_reason(MF, g, &site, "'T' is written with wcr 'sum'");
  }
  {
    /* A third map also reads T's access node. */
    g_autoptr(WeirGraph) g = build_pair("0:N", "j", TRUE, 0, ids);
    WeirState *s = weir_graph_state(g, ids[0]);
    t3_array(g, "Z", "N", FALSE);
    WeirNode *z = weir_state_add_access(g, s, "Z");
    WeirNode *t = weir_state_node(s, ids[2]);
    t3_map(g, s, "c", "k", "0:N", "z = t", P({t, "t", "k"}), 1,
           P({z, "z", "k"}), 1, NULL, NULL);
    t3_assert_valid(g);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    t3_assert_reason(MF, g, &site, "'T' is also read by node");
    g_autoptr(GArray) sites = t3_sites(MF, g);
    assert_int_equal(sites->len, 2); /* a -> b and a -> c, both refused */
  }
  {
    /* T is read again in a second state. */
    g_autoptr(WeirGraph) g = build_pair("0:N", "j", TRUE, 0, ids);
    WeirState *s2 = weir_graph_add_state(g, "later");
    assert_non_null(weir_graph_add_transition(g, ids[0], s2->id, NULL, NULL));
    WeirNode *t = weir_state_add_access(g, s2, "T");
    WeirNode *y = weir_state_add_access(g, s2, "Y");
    t3_edge(g, s2, t->id, NULL, y->id, NULL, "T", "0:N");
    t3_assert_valid(g);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    t3_assert_reason(MF, g, &site, "'T' is also used by node");
  }
  {
    /* Not a map exit -> access -> map entry. */
    g_autoptr(WeirGraph) g = build_pair("0:N", "j", TRUE, 0, ids);
    WeirSite site = t3_site(ids[0], ids[2], ids[1], ids[3], 0);
    t3_assert_reason(MF, g, &site, "not a map exit, an access node");
  }
}

/* b over i reduces a row of T: reads T[i, 0:K] as an indexed connector. */
static void test_reject_row_reduction(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("rows");
  t3_array(g, "X", "4, 8", FALSE);
  t3_array(g, "T", "4, 8", TRUE);
  t3_array(g, "Y", "4", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = weir_state_add_access(g, s, "X");
  WeirNode *t = weir_state_add_access(g, s, "T");
  WeirNode *y = weir_state_add_access(g, s, "Y");
  WeirNode *xa;
  t3_map(g, s, "a", "i,j", "0:4,0:8", "t = x * x", P({x, "x", "i, j"}), 1,
         P({t, "t", "i, j"}), 1, &xa, NULL);
  WeirNode *eb =
      t3_map(g, s, "b", "i", "0:4", "y = t[i, 0] + t[i, 1] + t[i, 2] + t[i, 7]",
             P({t, "t", "i, 0:8"}), 1, P({y, "y", "i"}), 1, NULL, NULL);
  t3_assert_valid(g);
  WeirSite site = t3_site(s->id, xa->id, t->id, eb->id, 0);
  t3_assert_reason(MF, g, &site,
                   "reads T[i, 0:8] in each iteration, at other "
                   "indices");
}

/* b over (i, j) reads T[i, j + 1] (a stencil); the shapes allow it. */
static void test_reject_stencil(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("stencil");
  t3_array(g, "X", "4, 9", FALSE);
  t3_array(g, "T", "4, 9", TRUE);
  t3_array(g, "Y", "4, 8", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = weir_state_add_access(g, s, "X");
  WeirNode *t = weir_state_add_access(g, s, "T");
  WeirNode *y = weir_state_add_access(g, s, "Y");
  WeirNode *xa;
  t3_map(g, s, "a", "i,j", "0:4,0:8", "t = x * x", P({x, "x", "i, j"}), 1,
         P({t, "t", "i, j"}), 1, &xa, NULL);
  WeirNode *eb = t3_map(g, s, "b", "i,j", "0:4,0:8", "y = t - u",
                        P({t, "t", "i, j + 1"}, {t, "u", "i, j"}), 2,
                        P({y, "y", "i, j"}), 1, NULL, NULL);
  t3_assert_valid(g);
  WeirSite site = t3_site(s->id, xa->id, t->id, eb->id, 0);
  t3_assert_reason(MF, g, &site, "reads T[i, j + 1], at other indices");
}

/* a's tasklet has a local named j and reads its parameter i, which
 * becomes b's j after the merge: refused rather than captured. */
static void test_reject_capture(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("capture");
  t3_array(g, "X", "8", FALSE);
  t3_array(g, "T", "8", TRUE);
  t3_array(g, "Y", "8", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = weir_state_add_access(g, s, "X");
  WeirNode *t = weir_state_add_access(g, s, "T");
  WeirNode *y = weir_state_add_access(g, s, "Y");
  WeirNode *xa;
  t3_map(g, s, "a", "i", "0:8", "j = x * 2\nt = j + i", P({x, "x", "i"}), 1,
         P({t, "t", "i"}), 1, &xa, NULL);
  WeirNode *eb = t3_map(g, s, "b", "j", "0:8", "y = t", P({t, "t", "j"}), 1,
                        P({y, "y", "j"}), 1, NULL, NULL);
  t3_assert_valid(g);
  WeirSite site = t3_site(s->id, xa->id, t->id, eb->id, 0);
  t3_assert_reason(MF, g, &site,
                   "tasklet 'a' (node 10) has a connector or local named 'j'");
}

/* The softmax sample: rowmax -> mx -> expsum (a reduction: not a site of
 * map-fusion), expsum -> e -> normalize (normalize also needs s, which
 * expsum reduces), expsum -> s -> normalize (s is a WCR result). */
static void test_softmax_sample(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t3_load_sample("softmax.json");
  g_autoptr(GArray) sites = t3_sites(MF, g);
  assert_int_equal(sites->len, 2);
  WeirSite e = t3_site(6, 19, 20, 22, 0);
  WeirSite sum = t3_site(6, 19, 21, 22, 0);
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 0), &e));
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 1), &sum));
  t3_assert_reason(MF, g, &e,
                   "map 'normalize' also depends on map 'expsum' through "
                   "node 21 (access 's')");
  t3_assert_reason(MF, g, &sum, "'s' is written with wcr 'sum'");
  /* rowmax -> expsum, asked anyway. */
  WeirSite mx = t3_site(6, 15, 16, 17, 0);
  t3_assert_reason(MF, g, &mx, "'mx' is written with wcr 'max'");
}

static void test_samples_every_legal_site(void **state) {
  (void)state;
  const char *names[] = {"vector_add.json", "matmul.json", "softmax.json",
                         "loop.json"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autoptr(WeirGraph) g = t3_load_sample(names[i]);
    g_autoptr(GHashTable) sym = t3_symbols(g, 5);
    /* None of the samples has a fusable producer-consumer pair. */
    assert_int_equal(t3_apply_each_legal_site(MF, g, sym, 1e-5), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chain_sites),
      cmocka_unit_test(test_chain_fuse_once),
      cmocka_unit_test(test_chain_fixpoint),
      cmocka_unit_test(test_permuted_parameters),
      cmocka_unit_test(test_reject_reasons),
      cmocka_unit_test(test_reject_row_reduction),
      cmocka_unit_test(test_reject_stencil),
      cmocka_unit_test(test_reject_capture),
      cmocka_unit_test(test_softmax_sample),
      cmocka_unit_test(test_samples_every_legal_site),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
