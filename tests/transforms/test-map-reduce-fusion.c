/* test-map-reduce-fusion.c — fusing a map into the reduction that consumes
 * it (map-reduce-fusion). */
#include "tier3-check.h"

#define MRF "map-reduce-fusion"
#define P(...) ((const T3Port[]){__VA_ARGS__})
#define RECOMPUTE ((const char *const[]){"recompute=true", NULL})

/* Softmax over the rows of X[R, C] with the exponentials and their sum in
 * separate maps:
 *   init      mx1[i] = -inf, s1[i] = 0
 *   rowmax    mx2[i] max= X[i, j]
 *   exp       e[i, j] = exp(X[i, j] - mx2[i])
 *   sum       s2[i] += e[i, j]
 *   normalize Y[i, j] = e[i, j] / s2[i]
 * ids: [0] state, [1] exp's exit, [2] e's node, [3] sum's entry, [4]
 * normalize's entry, [5] rowmax's exit, [6] mx2's node, [7] exp's entry. */
static WeirGraph *build_softmax(guint *ids) {
  WeirGraph *g = weir_graph_new("softmax_split");
  weir_graph_add_symbol(g, "C");
  weir_graph_add_symbol(g, "R");
  t3_array(g, "X", "R, C", FALSE);
  t3_array(g, "Y", "R, C", FALSE);
  t3_array(g, "mx", "R", TRUE);
  t3_array(g, "s", "R", TRUE);
  t3_array(g, "e", "R, C", TRUE);
  WeirState *st = weir_graph_add_state(g, "main");
  WeirNode *x = weir_state_add_access(g, st, "X");
  WeirNode *mx1 = weir_state_add_access(g, st, "mx");
  WeirNode *s1 = weir_state_add_access(g, st, "s");
  WeirNode *mx2 = weir_state_add_access(g, st, "mx");
  WeirNode *s2 = weir_state_add_access(g, st, "s");
  WeirNode *e = weir_state_add_access(g, st, "e");
  WeirNode *y = weir_state_add_access(g, st, "Y");
  WeirNode *init_exit, *max_exit, *exp_exit;
  t3_map(g, st, "init", "i", "0:R", "m = -1e999\nz = 0", NULL, 0,
         P({mx1, "m", "i"}, {s1, "z", "i"}), 2, &init_exit, NULL);
  WeirNode *max_entry =
      t3_map(g, st, "rowmax", "i,j", "0:R,0:C", "m = x", P({x, "x", "i, j"}), 1,
             P({mx2, "m", "i", WEIR_WCR_MAX}), 1, &max_exit, NULL);
  t3_edge(g, st, mx1->id, NULL, max_entry->id, NULL, NULL, NULL);
  WeirNode *exp_entry =
      t3_map(g, st, "exp", "i,j", "0:R,0:C", "ev = exp(x - m)",
             P({x, "x", "i, j"}, {mx2, "m", "i"}), 2, P({e, "ev", "i, j"}), 1,
             &exp_exit, NULL);
  WeirNode *sum_entry =
      t3_map(g, st, "sum", "p,q", "0:R,0:C", "z = ev", P({e, "ev", "p, q"}), 1,
             P({s2, "z", "p", WEIR_WCR_SUM}), 1, NULL, NULL);
  t3_edge(g, st, s1->id, NULL, sum_entry->id, NULL, NULL, NULL);
  WeirNode *norm_entry =
      t3_map(g, st, "normalize", "i,j", "0:R,0:C", "y = ev / z",
             P({e, "ev", "i, j"}, {s2, "z", "i"}), 2, P({y, "y", "i, j"}), 1,
             NULL, NULL);
  guint v[] = {st->id,         exp_exit->id, e->id,   sum_entry->id,
               norm_entry->id, max_exit->id, mx2->id, exp_entry->id};
  memcpy(ids, v, sizeof v);
  t3_assert_valid(g);
  return g;
}

static GHashTable *rc_symbols(gint64 r, gint64 c) {
  GHashTable *sym = weir_bindings_new();
  weir_bindings_set(sym, "R", r);
  weir_bindings_set(sym, "C", c);
  return sym;
}

static void test_softmax_exp_sum(void **state) {
  (void)state;
  guint ids[8];
  g_autoptr(WeirGraph) g = build_softmax(ids);
  g_autoptr(GArray) sites = t3_sites(MRF, g);
  /* rowmax -> mx -> exp is not a reduction's input; exp -> e -> sum is. */
  assert_int_equal(sites->len, 1);
  WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 0), &site));
  assert_null(t3_why(MRF, g, &site));

  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  g_autoptr(GHashTable) sym = rc_symbols(6, 10);
  gint64 bytes0 = t3_bytes(g, sym);
  t3_apply(MRF, g, &site);
  /* e is still read by normalize: the fused map keeps writing it, and only
   * the sum's read of e disappears. */
  assert_non_null(weir_graph_container(g, "e"));
  WeirState *s = weir_graph_state(g, ids[0]);
  assert_null(weir_state_node(s, ids[7]));     /* exp's map is gone */
  assert_non_null(weir_state_node(s, ids[2])); /* e's node stays */
  g_autoptr(GPtrArray) into_e = weir_state_in_edges(s, ids[2]);
  assert_int_equal(into_e->len, 1);
  const WeirMemlet *w = g_ptr_array_index(into_e, 0);
  assert_int_equal(weir_state_node(s, w->src)->entry, ids[3]);
  assert_int_equal(bytes0 - t3_bytes(g, sym), 6 * 10 * 4);
  t3_assert_same_outputs(before, g, sym, 1e-5);
}

/* S[i] = sum over j of X[i, j]^2 with the squares in a transient. */
static void test_sum_of_squares_removes_transient(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("sumsq");
  t3_array(g, "X", "8, 16", FALSE);
  t3_array(g, "T", "8, 16", TRUE);
  t3_array(g, "S", "8", FALSE);
  WeirState *st = weir_graph_add_state(g, "main");
  WeirNode *x = weir_state_add_access(g, st, "X");
  WeirNode *t = weir_state_add_access(g, st, "T");
  WeirNode *s1 = weir_state_add_access(g, st, "S");
  WeirNode *s2 = weir_state_add_access(g, st, "S");
  WeirNode *xa;
  t3_map(g, st, "init", "k", "0:8", "z = 0", NULL, 0, P({s1, "z", "k"}), 1,
         NULL, NULL);
  t3_map(g, st, "square", "i,j", "0:8,0:16", "t = x * x", P({x, "x", "i, j"}),
         1, P({t, "t", "i, j"}), 1, &xa, NULL);
  WeirNode *eb =
      t3_map(g, st, "sum", "i,j", "0:8,0:16", "z = t", P({t, "t", "i, j"}), 1,
             P({s2, "z", "i", WEIR_WCR_SUM}), 1, NULL, NULL);
  t3_edge(g, st, s1->id, NULL, eb->id, NULL, NULL, NULL);
  t3_assert_valid(g);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  gint64 bytes0 = t3_bytes(g, NULL);
  WeirSite site = t3_site(st->id, xa->id, t->id, eb->id, 0);
  assert_null(t3_why(MRF, g, &site));
  t3_apply(MRF, g, &site);
  assert_null(weir_graph_container(g, "T"));
  assert_int_equal(bytes0 - t3_bytes(g, NULL), 2 * 8 * 16 * 4);
  t3_assert_same_outputs(before, g, NULL, 1e-5);
}

/* A max-pool over windows: R = relu(X) [4, 8], then P[i, o] max= R[i, s*o +
 * k] over (i, o, k), o in 0:8/s, k in 0:w.  With w == s the windows tile R:
 * R's parameter j pairs with the window index s*o + k, the ReLU fuses into
 * the pool without repeating work, and R vanishes.  Overlapping windows
 * (w = 2, s = 1) and a tasklet that uses j in its code stay apart. */
static WeirGraph *build_relu_pool(const char *relu_code, const char *o_range,
                                  const char *k_range, const char *index,
                                  guint *ids) {
  WeirGraph *g = weir_graph_new("relu_pool");
  t3_array(g, "X", "4, 8", FALSE);
  t3_array(g, "R", "4, 8", TRUE);
  g_autofree char *pshape = g_strdup_printf("4, %s", o_range + 2);
  t3_array(g, "P", pshape, FALSE);
  WeirState *st = weir_graph_add_state(g, "main");
  WeirNode *x = weir_state_add_access(g, st, "X");
  WeirNode *r = weir_state_add_access(g, st, "R");
  WeirNode *p1 = weir_state_add_access(g, st, "P");
  WeirNode *p2 = weir_state_add_access(g, st, "P");
  WeirNode *xa;
  g_autofree char *ranges = g_strdup_printf("0:4,%s", o_range);
  t3_map(g, st, "init", "i,o", ranges, "z = -1e999", NULL, 0,
         P({p1, "z", "i, o"}), 1, NULL, NULL);
  t3_map(g, st, "relu", "i,j", "0:4,0:8", relu_code, P({x, "x", "i, j"}), 1,
         P({r, "t", "i, j"}), 1, &xa, NULL);
  g_autofree char *pranges = g_strdup_printf("0:4,%s,%s", o_range, k_range);
  g_autofree char *read = g_strdup_printf("i, %s", index);
  WeirNode *eb =
      t3_map(g, st, "pool", "i,o,k", pranges, "z = t", P({r, "t", read}), 1,
             P({p2, "z", "i, o", WEIR_WCR_MAX}), 1, NULL, NULL);
  t3_edge(g, st, p1->id, NULL, eb->id, NULL, NULL, NULL);
  t3_assert_valid(g);
  ids[0] = st->id;
  ids[1] = xa->id;
  ids[2] = r->id;
  ids[3] = eb->id;
  return g;
}

static void test_pooling_windows(void **state) {
  (void)state;
  guint ids[4];
  {
    g_autoptr(WeirGraph) g =
        build_relu_pool("t = max(x, 0)", "0:4", "0:2", "2*o + k", ids);
    g_autoptr(WeirGraph) before = weir_graph_copy(g);
    gint64 bytes0 = t3_bytes(g, NULL);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    assert_null(t3_why(MRF, g, &site));
    t3_apply(MRF, g, &site);
    /* R's write and its read by the pool are gone */
    assert_null(weir_graph_container(g, "R"));
    assert_int_equal(bytes0 - t3_bytes(g, NULL), 2 * 4 * 8 * 4);
    t3_assert_same_outputs(before, g, NULL, 1e-6);
  }
  {
    /* windows of 2 with stride 1 overlap: R's elements are read twice */
    g_autoptr(WeirGraph) g =
        build_relu_pool("t = max(x, 0)", "0:7", "0:2", "o + k", ids);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    t3_assert_reason(MRF, g, &site, "different ranges");
  }
  {
    /* stride 2 over windows of 1: half of R is never read */
    g_autoptr(WeirGraph) g =
        build_relu_pool("t = max(x, 0)", "0:4", "0:1", "2*o + k", ids);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    t3_assert_reason(MRF, g, &site, "different ranges");
  }
  {
    /* j in the ReLU's code could not become 2*o + k */
    g_autoptr(WeirGraph) g =
        build_relu_pool("t = max(x, 0) + j", "0:4", "0:2", "2*o + k", ids);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    t3_assert_reason(MRF, g, &site, "uses parameter 'j' in its code");
  }
}

/* H = relu(Y) [M, K], then C[m, n] += H[m, k] * W[k, n] over (m, n, k): the
 * product's space is larger (n); relu is recomputed per n and H vanishes.
 * extra: a second output of relu, or a second reader of H. */
static WeirGraph *build_relu_matmul(int extra, guint *ids) {
  WeirGraph *g = weir_graph_new("relu_matmul");
  t3_array(g, "Y", "4, 6", FALSE);
  t3_array(g, "W", "6, 5", FALSE);
  t3_array(g, "H", "4, 6", TRUE);
  t3_array(g, "C", "4, 5", FALSE);
  t3_array(g, "Z", "4, 6", FALSE);
  WeirState *st = weir_graph_add_state(g, "main");
  WeirNode *y = weir_state_add_access(g, st, "Y");
  WeirNode *w = weir_state_add_access(g, st, "W");
  WeirNode *h = weir_state_add_access(g, st, "H");
  WeirNode *c1 = weir_state_add_access(g, st, "C");
  WeirNode *c2 = weir_state_add_access(g, st, "C");
  WeirNode *z = weir_state_add_access(g, st, "Z");
  WeirNode *xa;
  t3_map(g, st, "zero", "a,b", "0:4,0:5", "c = 0", NULL, 0,
         P({c1, "c", "a, b"}), 1, NULL, NULL);
  if (extra == 1)
    t3_map(g, st, "relu", "i0,i1", "0:4,0:6", "h = max(y, 0)\nz = y",
           P({y, "y", "i0, i1"}), 1, P({h, "h", "i0, i1"}, {z, "z", "i0, i1"}),
           2, &xa, NULL);
  else
    t3_map(g, st, "relu", "i0,i1", "0:4,0:6", "h = max(y, 0)",
           P({y, "y", "i0, i1"}), 1, P({h, "h", "i0, i1"}), 1, &xa, NULL);
  WeirNode *eb = t3_map(g, st, "mac", "m,n,k", "0:4,0:5,0:6", "c = h * w",
                        P({h, "h", "m, k"}, {w, "w", "k, n"}), 2,
                        P({c2, "c", "m, n", WEIR_WCR_SUM}), 1, NULL, NULL);
  t3_edge(g, st, c1->id, NULL, eb->id, NULL, NULL, NULL);
  if (extra == 2)
    t3_map(g, st, "copy", "i,j", "0:4,0:6", "z = h", P({h, "h", "i, j"}), 1,
           P({z, "z", "i, j"}), 1, NULL, NULL);
  ids[0] = st->id;
  ids[1] = xa->id;
  ids[2] = h->id;
  ids[3] = eb->id;
  t3_assert_valid(g);
  return g;
}

static void test_larger_space(void **state) {
  (void)state;
  guint ids[4];
  g_autoptr(WeirGraph) g = build_relu_matmul(0, ids);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  gint64 bytes0 = t3_bytes(g, NULL);
  WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
  /* Only with recompute=true. */
  t3_assert_reason(MRF, g, &site,
                   "map 'mac' iterates over more points than map 'relu' (its "
                   "parameter 'n' has no counterpart); recompute=true repeats "
                   "the work of 'relu' for each");
  assert_null(t3_why_params(MRF, g, &site, RECOMPUTE));
  t3_apply_params(MRF, g, &site, RECOMPUTE);
  assert_null(weir_graph_container(g, "H"));
  /* Before: relu reads Y and writes H (M*K each), mac reads H (M*N*K).
   * After: mac reads Y (M*N*K). */
  assert_int_equal(bytes0 - t3_bytes(g, NULL), 2 * 4 * 6 * 4);
  t3_assert_same_outputs(before, g, NULL, 1e-5);
}

static void test_reject_reasons(void **state) {
  (void)state;
  guint ids[8];
  {
    g_autoptr(WeirGraph) g = build_relu_matmul(1, ids);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    g_autofree char *why = t3_why_params(MRF, g, &site, RECOMPUTE);
    assert_string_equal(why, "map 'relu' would run once per value of "
                             "parameter 'n' of map 'mac', but it also writes "
                             "'Z'");
  }
  {
    g_autoptr(WeirGraph) g = build_relu_matmul(2, ids);
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[3], 0);
    g_autofree char *why = t3_why_params(MRF, g, &site, RECOMPUTE);
    assert_non_null(strstr(why, "'H' is still read elsewhere"));
  }
  {
    g_autoptr(WeirGraph) g = build_softmax(ids);
    /* exp -> e -> normalize: normalize does not reduce. */
    WeirSite site = t3_site(ids[0], ids[1], ids[2], ids[4], 0);
    t3_assert_reason(MRF, g, &site, "map 'normalize' is not a reduction");
    /* rowmax -> mx -> exp: mx is a WCR result. */
    WeirSite mx = t3_site(ids[0], ids[5], ids[6], ids[7], 0);
    t3_assert_reason(MRF, g, &mx, "'mx' is written with wcr 'max'");
  }
}

static void test_softmax_sample(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t3_load_sample("softmax.json");
  g_autoptr(GArray) sites = t3_sites(MRF, g);
  /* Only rowmax -> mx -> expsum feeds a reduction, and mx is itself a
   * reduction's result. */
  assert_int_equal(sites->len, 1);
  WeirSite mx = t3_site(6, 15, 16, 17, 0);
  assert_true(t3_site_equal(&g_array_index(sites, WeirSite, 0), &mx));
  t3_assert_reason(MRF, g, &mx, "'mx' is written with wcr 'max'");
}

static void test_samples_every_legal_site(void **state) {
  (void)state;
  const char *names[] = {"vector_add.json", "matmul.json", "softmax.json",
                         "loop.json"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autoptr(WeirGraph) g = t3_load_sample(names[i]);
    g_autoptr(GHashTable) sym = t3_symbols(g, 5);
    assert_int_equal(t3_apply_each_legal_site(MRF, g, sym, 1e-5), 0);
  }
  guint ids[8];
  g_autoptr(WeirGraph) g = build_softmax(ids);
  g_autoptr(GHashTable) sym = rc_symbols(3, 7);
  assert_int_equal(t3_apply_each_legal_site(MRF, g, sym, 1e-5), 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_softmax_exp_sum),
      cmocka_unit_test(test_sum_of_squares_removes_transient),
      cmocka_unit_test(test_larger_space),
      cmocka_unit_test(test_pooling_windows),
      cmocka_unit_test(test_reject_reasons),
      cmocka_unit_test(test_softmax_sample),
      cmocka_unit_test(test_samples_every_legal_site),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
