/* test-map-collapse.c — the map-collapse transformation (tier 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "tier1-check.h"
#include "weir-validate.h"

#define SEQ WEIR_SCHEDULE_SEQUENTIAL
#define PAR WEIR_SCHEDULE_PARALLEL

/* y[i, j] = 3 * x[i, j] + 1 over 0:M x 0:N, split into an outer map over i
 * (schedule `outer`) and an inner map over j (schedule `inner`). */
static WeirGraph *nested(WeirSchedule outer, WeirSchedule inner, guint *st,
                         guint *oe, guint *ie) {
  T1Port x = {"x", "x", "i, j", WEIR_WCR_NONE};
  T1Port y = {"y", "y", "i, j", WEIR_WCR_NONE};
  WeirGraph *g = t1_map_program("x:f32:M,N;y:f32:M,N", "M,N", "i,j", "0:M;0:N",
                                outer, &x, 1, &y, 1, "y = 3 * x + 1", st, ie);
  WeirSite site = t1_site(*st, 1, *ie);
  const char *w[] = {"width=1", NULL};
  t1_apply(g, "vectorize", &site, w);
  WeirNode *o = t1_map_by_label(g, "m_outer", NULL);
  *oe = o->id;
  weir_graph_node(g, *ie, NULL)->map->schedule = inner;
  return g;
}

static void test_sites(void **state) {
  (void)state;
  g_autoptr(WeirGraph) va = t1_load_sample("vector_add.json");
  g_autoptr(GArray) s0 = t1_sites(va, "map-collapse");
  assert_int_equal(s0->len, 0);
  g_autoptr(WeirGraph) sm = t1_load_sample("softmax.json");
  g_autoptr(GArray) s1 = t1_sites(sm, "map-collapse");
  assert_int_equal(s1->len, 3); /* rowmax, expsum, normalize */
  guint st, oe, ie;
  g_autoptr(WeirGraph) g = nested(PAR, SEQ, &st, &oe, &ie);
  g_autoptr(GArray) s2 = t1_sites(g, "map-collapse");
  assert_int_equal(s2->len, 1);
  const WeirSite *site = &g_array_index(s2, WeirSite, 0);
  assert_int_equal(site->n_nodes, 2);
  assert_int_equal(site->nodes[0], oe);
  assert_int_equal(site->nodes[1], ie);
}

static void test_merge(void **state) {
  (void)state;
  guint st, oe, ie;
  g_autoptr(WeirGraph) g = nested(PAR, SEQ, &st, &oe, &ie);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirSite site = t1_site(st, 2, oe, ie);
  t1_apply(g, "map-collapse", &site, NULL);
  assert_null(weir_graph_node(g, ie, NULL));
  WeirNode *e = weir_graph_node(g, oe, NULL);
  assert_int_equal(e->map->params->len, 2);
  assert_string_equal(g_ptr_array_index(e->map->params, 1), "j");
  g_autofree char *r1 =
      weir_range_to_string(&g_array_index(e->map->ranges, WeirRange, 1));
  assert_string_equal(r1, "0:N");
  assert_int_equal(e->map->schedule, PAR);
  assert_int_equal(e->map->collapse, 2);
  /* the tasklet now hangs directly off the merged map */
  WeirNode *t = t1_tasklet_by_label(g, "body", NULL);
  WeirState *s = weir_graph_state(g, st);
  g_autoptr(GPtrArray) in = weir_state_in_edges(s, t->id);
  assert_int_equal(in->len, 1);
  assert_int_equal(((WeirMemlet *)g_ptr_array_index(in, 0))->src, oe);
  g_autoptr(GHashTable) b = t1_bindings("M", (gint64)3, "N", (gint64)5, NULL);
  assert_int_equal(t1_total_bytes(g, b), t1_total_bytes(before, b));
  t1_assert_same_outputs(before, g, b, 0);

  /* without setting the collapse depth */
  g_autoptr(WeirGraph) g2 = nested(PAR, SEQ, &st, &oe, &ie);
  const char *no[] = {"collapse=false", NULL};
  t1_apply(g2, "map-collapse", &site, no);
  assert_int_equal(weir_graph_node(g2, oe, NULL)->map->collapse, 0);
  /* and then on the single map */
  WeirSite one = t1_site(st, 1, oe);
  t1_apply(g2, "map-collapse", &one, NULL);
  assert_int_equal(weir_graph_node(g2, oe, NULL)->map->collapse, 2);
  g_autofree char *r = t1_reason(g2, "map-collapse", &one, NULL);
  assert_contains(r, "has nothing to collapse (2 parameters, collapse depth "
                     "2)");
}

static void test_reasons(void **state) {
  (void)state;
  guint st, oe, ie;
  g_autoptr(WeirGraph) g1 = nested(PAR, WEIR_SCHEDULE_SIMD, &st, &oe, &ie);
  WeirSite site = t1_site(st, 2, oe, ie);
  g_autofree char *r1 = t1_reason(g1, "map-collapse", &site, NULL);
  assert_contains(r1, "is SIMD: merging would lose its schedule");

  g_autoptr(WeirGraph) g2 = nested(SEQ, PAR, &st, &oe, &ie);
  g_autofree char *r2 = t1_reason(g2, "map-collapse", &site, NULL);
  assert_contains(r2, "merging would lose the parallel loop");

  /* tiles: the inner range depends on the tile parameter */
  T1Port x = {"x", "x", "i", WEIR_WCR_NONE};
  T1Port y = {"y", "y", "i", WEIR_WCR_NONE};
  guint e;
  g_autoptr(WeirGraph) g3 = t1_map_program("x:f32:64;y:f32:64", "", "i", "0:64",
                                           PAR, &x, 1, &y, 1, "y = x", &st, &e);
  WeirSite ts = t1_site(st, 1, e);
  const char *t[] = {"tile=16", NULL};
  t1_apply(g3, "map-tiling", &ts, t);
  WeirNode *outer = t1_map_by_label(g3, "m_tiles", NULL);
  WeirSite ps = t1_site(st, 2, outer->id, e);
  g_autofree char *r3 = t1_reason(g3, "map-collapse", &ps, NULL);
  assert_contains(r3, "the range 'ti:ti + 16' of inner parameter 'i' uses "
                      "outer parameter 'ti'");

  /* a sequential single map */
  g_autofree char *r4 = t1_reason(g3, "map-collapse", &ts, NULL);
  assert_contains(r4, "is not parallel");

  /* the pair is not a perfect nest: wrong order of the nodes */
  g_autoptr(WeirGraph) g5 = nested(PAR, SEQ, &st, &oe, &ie);
  WeirSite swapped = t1_site(st, 2, ie, oe);
  g_autofree char *r5 = t1_reason(g5, "map-collapse", &swapped, NULL);
  assert_contains(r5, "is not perfectly nested: node");

  /* a dependence along j makes collapsing the parallel map illegal */
  T1Port xr = {"x", "x", "i, j", WEIR_WCR_NONE};
  T1Port xw = {"xo", "x", "i, j + 1", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g6 =
      t1_map_program("x:f32:4,9", "", "i,j", "0:4;0:8", PAR, &xr, 1, &xw, 1,
                     "xo = x + 1", &st, &e);
  WeirSite s6 = t1_site(st, 1, e);
  g_autofree char *r6 = t1_reason(g6, "map-collapse", &s6, NULL);
  assert_contains(r6, "reads 'x' at 'i, j'");
}

static void test_everywhere(void **state) {
  (void)state;
  assert_true(t1_apply_everywhere("map-collapse", NULL, 1e-5, TRUE) >= 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sites),
      cmocka_unit_test(test_merge),
      cmocka_unit_test(test_reasons),
      cmocka_unit_test(test_everywhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
