/* test-horizontal-map-fusion.c — merging independent maps that read the
 * same input (horizontal-map-fusion). */
#include "tier3-check.h"

#define HF "horizontal-map-fusion"
#define P(...) ((const T3Port[]){__VA_ARGS__})

/* X[N, M] read by a over (i, j) and b over (p, q) in (0:M, 0:N) at X[q, p]
 * (with b_range, b's ranges can differ).  ids: state, X, a's entry, b's
 * entry. */
static WeirGraph *build_pair(const char *b_ranges, guint *ids) {
  WeirGraph *g = weir_graph_new("pair");
  weir_graph_add_symbol(g, "M");
  weir_graph_add_symbol(g, "N");
  t3_array(g, "X", "N, M", FALSE);
  t3_array(g, "Y1", "N, M", FALSE);
  t3_array(g, "Y2", "M, N", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = weir_state_add_access(g, s, "X");
  WeirNode *y1 = weir_state_add_access(g, s, "Y1");
  WeirNode *y2 = weir_state_add_access(g, s, "Y2");
  WeirNode *ea =
      t3_map(g, s, "a", "i,j", "0:N,0:M", "y = x * 2 + j", P({x, "x", "i, j"}),
             1, P({y1, "y", "i, j"}), 1, NULL, NULL);
  WeirNode *eb =
      t3_map(g, s, "b", "p,q", b_ranges, "y = x - p", P({x, "x", "q, p"}), 1,
             P({y2, "y", "p, q"}), 1, NULL, NULL);
  ids[0] = s->id;
  ids[1] = x->id;
  ids[2] = ea->id;
  ids[3] = eb->id;
  t3_assert_valid(g);
  return g;
}

static GHashTable *mn(gint64 m, gint64 n) {
  GHashTable *sym = weir_bindings_new();
  weir_bindings_set(sym, "M", m);
  weir_bindings_set(sym, "N", n);
  return sym;
}

static guint count_maps(const WeirState *s) {
  guint n = 0;
  for (guint i = 0; i < s->nodes->len; i++)
    n += ((WeirNode *)g_ptr_array_index(s->nodes, i))->kind ==
         WEIR_NODE_MAP_ENTRY;
  return n;
}

static void test_fuse(void **state) {
  (void)state;
  guint ids[4];
  g_autoptr(WeirGraph) g = build_pair("0:M,0:N", ids);
  g_autoptr(GArray) sites = t3_sites(HF, g);
  assert_int_equal(sites->len, 1);
  WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 0), &site));
  assert_null(t3_why(HF, g, &site));
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  g_autoptr(GHashTable) sym = mn(6, 9);
  gint64 bytes0 = t3_bytes(g, sym);
  t3_apply(HF, g, &site);
  WeirState *s = weir_graph_state(g, ids[0]);
  assert_int_equal(count_maps(s), 1);
  assert_non_null(weir_state_node(s, ids[2]));
  /* X is read once: one memlet out of its access node. */
  g_autoptr(GPtrArray) reads = weir_state_out_edges(s, ids[1]);
  assert_int_equal(reads->len, 1);
  assert_int_equal(bytes0 - t3_bytes(g, sym), 6 * 9 * 4);
  t3_assert_same_outputs(before, g, sym, 1e-5);
}

static void test_reject_reasons(void **state) {
  (void)state;
  guint ids[4];
  {
    g_autoptr(WeirGraph) g = build_pair("0:M,0:N - 1", ids);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    t3_assert_reason(HF, g, &site, "different ranges");
  }
  {
    /* b also reads a's output Y1. */
    g_autoptr(WeirGraph) g = build_pair("0:M,0:N", ids);
    WeirState *s = weir_graph_state(g, ids[0]);
    WeirNode *eb = weir_state_node(s, ids[3]);
    WeirNode *y1 = NULL;
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(s->nodes, i);
      if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, "Y1") == 0)
        y1 = n;
    }
    t3_edge(g, s, y1->id, NULL, eb->id, NULL, NULL, NULL);
    t3_assert_valid(g);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    t3_assert_reason(HF, g, &site, "map 'b' depends on map 'a' through node");
  }
  {
    /* a reads Z, which b overwrites. */
    g_autoptr(WeirGraph) g = weir_graph_new("war");
    t3_array(g, "X", "8", FALSE);
    t3_array(g, "Z", "8", FALSE);
    t3_array(g, "Y", "8", FALSE);
    WeirState *s = weir_graph_add_state(g, "main");
    WeirNode *x = weir_state_add_access(g, s, "X");
    WeirNode *z1 = weir_state_add_access(g, s, "Z");
    WeirNode *z2 = weir_state_add_access(g, s, "Z");
    WeirNode *y = weir_state_add_access(g, s, "Y");
    WeirNode *ea = t3_map(g, s, "a", "i", "0:8", "y = x + z",
                          P({x, "x", "i"}, {z1, "z", "i"}), 2, P({y, "y", "i"}),
                          1, NULL, NULL);
    WeirNode *eb = t3_map(g, s, "b", "i", "0:8", "z = x", P({x, "x", "i"}), 1,
                          P({z2, "z", "i"}), 1, NULL, NULL);
    t3_assert_valid(g);
    WeirSite site = t3_site(s->id, x->id, ea->id, eb->id, 0);
    t3_assert_reason(HF, g, &site, "map 'b' writes 'Z', which map 'a' reads");
  }
  {
    g_autoptr(WeirGraph) g = build_pair("0:M,0:N", ids);
    WeirSite site = t3_site(ids[0], ids[2], ids[1], ids[3], 0);
    t3_assert_reason(HF, g, &site, "not an access node and two map entries");
  }
}

/* softmax.json: X feeds init (one parameter), rowmax and expsum (expsum
 * needs rowmax's result). */
static void test_softmax_sample(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t3_load_sample("softmax.json");
  g_autoptr(GArray) sites = t3_sites(HF, g);
  assert_int_equal(sites->len, 3);
  WeirSite init_max = t3_site(6, 7, 8, 13, 0);
  WeirSite init_exp = t3_site(6, 7, 8, 17, 0);
  WeirSite max_exp = t3_site(6, 7, 13, 17, 0);
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 0), &init_max));
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 1), &init_exp));
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 2), &max_exp));
  t3_assert_reason(HF, g, &init_max, "different ranges");
  t3_assert_reason(HF, g, &init_exp, "different ranges");
  t3_assert_reason(HF, g, &max_exp,
                   "map 'expsum' depends on map 'rowmax' through node 16 "
                   "(access 'mx')");
}

static void test_samples_every_legal_site(void **state) {
  (void)state;
  const char *names[] = {"vector_add.json", "matmul.json", "softmax.json",
                         "loop.json"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autoptr(WeirGraph) g = t3_load_sample(names[i]);
    g_autoptr(GHashTable) sym = t3_symbols(g, 5);
    assert_int_equal(t3_apply_each_legal_site(HF, g, sym, 1e-5), 0);
  }
  guint ids[4];
  g_autoptr(WeirGraph) g = build_pair("0:M,0:N", ids);
  g_autoptr(GHashTable) sym = mn(3, 4);
  assert_int_equal(t3_apply_each_legal_site(HF, g, sym, 1e-5), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fuse),
      cmocka_unit_test(test_reject_reasons),
      cmocka_unit_test(test_softmax_sample),
      cmocka_unit_test(test_samples_every_legal_site),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
