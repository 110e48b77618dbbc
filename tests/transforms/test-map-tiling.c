/* test-map-tiling.c — the map-tiling transformation (tier 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "tier1-check.h"
#include "weir-validate.h"

/* B[i, j] = 2 * A[i, j] over i in 0:M, j in 0:N (symbolic when the sizes
 * are names). */
static WeirGraph *scale_graph(const char *m, const char *n, guint *state,
                              guint *entry) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new("scale");
  if (!g_ascii_isdigit(m[0]))
    weir_graph_add_symbol(g, m);
  if (!g_ascii_isdigit(n[0]))
    weir_graph_add_symbol(g, n);
  g_autofree char *shape = g_strdup_printf("%s, %s", m, n);
  assert_non_null(
      weir_graph_add_array(g, "A", WEIR_DTYPE_F32, shape, FALSE, &err));
  assert_non_null(
      weir_graph_add_array(g, "B", WEIR_DTYPE_F32, shape, FALSE, &err));
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *exit = NULL;
  g_autofree char *rm = g_strdup_printf("0:%s", m);
  g_autofree char *rn = g_strdup_printf("0:%s", n);
  const char *params[] = {"i", "j", NULL};
  const char *ranges[] = {rm, rn, NULL};
  WeirNode *e = weir_state_add_map(g, s, "scale", params, ranges,
                                   WEIR_SCHEDULE_PARALLEL, &exit, &err);
  assert_non_null(e);
  weir_node_add_in_conn(e, "IN_A");
  weir_node_add_out_conn(e, "OUT_A");
  weir_node_add_in_conn(exit, "IN_B");
  weir_node_add_out_conn(exit, "OUT_B");
  const char *ins[] = {"x", NULL}, *outs[] = {"y", NULL};
  WeirNode *t = weir_state_add_tasklet(g, s, "scale", ins, outs, "y = 2 * x");
  WeirNode *b = weir_state_add_access(g, s, "B");
  g_autofree char *full = g_strdup_printf("0:%s, 0:%s", m, n);
  assert_non_null(
      weir_state_add_memlet(g, s, a->id, NULL, e->id, "IN_A", "A", full, &err));
  assert_non_null(weir_state_add_memlet(g, s, e->id, "OUT_A", t->id, "x", "A",
                                        "i, j", &err));
  assert_non_null(weir_state_add_memlet(g, s, t->id, "y", exit->id, "IN_B", "B",
                                        "i, j", &err));
  assert_non_null(weir_state_add_memlet(g, s, exit->id, "OUT_B", b->id, NULL,
                                        "B", full, &err));
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  *state = s->id;
  *entry = e->id;
  return g;
}

static char *range_text(const WeirNode *e, guint i) {
  return weir_range_to_string(&g_array_index(e->map->ranges, WeirRange, i));
}

/* The memlet from `src` to `dst` (first one). */
static WeirMemlet *edge_between(const WeirState *s, guint src, guint dst) {
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->src == src && m->dst == dst)
      return m;
  }
  return NULL;
}

static void assert_subset(const WeirMemlet *m, const char *want) {
  assert_non_null(m);
  g_autofree char *got = weir_subset_to_string(m->subset);
  assert_string_equal(got, want);
}

static void assert_volume(const WeirMemlet *m, const char *want) {
  g_autofree char *got = weir_expr_to_string(m->volume);
  assert_string_equal(got, want);
}

static void test_sites(void **state) {
  (void)state;
  g_autoptr(WeirGraph) va = t1_load_sample("vector_add.json");
  g_autoptr(GArray) s1 = t1_sites(va, "map-tiling");
  assert_int_equal(s1->len, 1);
  assert_int_equal(g_array_index(s1, WeirSite, 0).nodes[0], 7);
  g_autoptr(WeirGraph) mm = t1_load_sample("matmul.json");
  g_autoptr(GArray) s2 = t1_sites(mm, "map-tiling");
  assert_int_equal(s2->len, 2); /* init and matmul */
  assert_true(t1_sites_have(s2, 5));
  assert_true(t1_sites_have(s2, 15));
  /* A map of a single point is no site. */
  guint st, e;
  g_autoptr(WeirGraph) one = scale_graph("1", "1", &st, &e);
  g_autoptr(GArray) s3 = t1_sites(one, "map-tiling");
  assert_int_equal(s3->len, 0);
}

static void test_exact_tiles(void **state) {
  (void)state;
  guint st, e;
  g_autoptr(WeirGraph) g = scale_graph("64", "48", &st, &e);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirSite site = t1_site(st, 1, e);
  const char *p[] = {"tile=16", NULL};
  t1_apply(g, "map-tiling", &site, p);
  WeirState *s = weir_graph_state(g, st);
  WeirNode *inner = weir_state_node(s, e);
  WeirNode *outer = t1_map_by_label(g, "scale_tiles", NULL);
  assert_non_null(outer);
  assert_string_equal(g_ptr_array_index(outer->map->params, 0), "ti");
  assert_string_equal(g_ptr_array_index(outer->map->params, 1), "tj");
  g_autofree char *o0 = range_text(outer, 0);
  g_autofree char *o1 = range_text(outer, 1);
  assert_string_equal(o0, "0:64:16");
  assert_string_equal(o1, "0:48:16");
  g_autofree char *i0 = range_text(inner, 0);
  assert_string_equal(i0, "ti:ti + 16");
  assert_int_equal(outer->map->schedule, WEIR_SCHEDULE_PARALLEL);
  assert_int_equal(inner->map->schedule, WEIR_SCHEDULE_SEQUENTIAL);
  /* per-tile memlets: the footprint of one tile and its accesses */
  WeirMemlet *mid_in = edge_between(s, outer->id, inner->id);
  assert_subset(mid_in, "ti:ti + 16, tj:tj + 16");
  assert_volume(mid_in, "256");
  WeirNode *iexit = weir_state_map_exit(s, inner);
  WeirNode *oexit = weir_state_map_exit(s, outer);
  WeirMemlet *mid_out = edge_between(s, iexit->id, oexit->id);
  assert_subset(mid_out, "ti:ti + 16, tj:tj + 16");
  /* the total data movement does not change */
  assert_int_equal(t1_total_bytes(g, NULL), t1_total_bytes(before, NULL));
  assert_int_equal(t1_total_bytes(g, NULL), 2 * 64 * 48 * 4);
  t1_assert_same_outputs(before, g, NULL, 1e-6);
}

static void test_partial_tiles(void **state) {
  (void)state;
  guint st, e;
  g_autoptr(WeirGraph) g = scale_graph("M", "N", &st, &e);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirSite site = t1_site(st, 1, e);
  const char *p[] = {"tile=0,8", NULL};
  t1_apply(g, "map-tiling", &site, p);
  WeirState *s = weir_graph_state(g, st);
  WeirNode *inner = weir_state_node(s, e);
  WeirNode *outer = t1_map_by_label(g, "scale_tiles", NULL);
  assert_int_equal(outer->map->params->len, 1);
  assert_string_equal(g_ptr_array_index(outer->map->params, 0), "tj");
  g_autofree char *i0 = range_text(inner, 0);
  g_autofree char *i1 = range_text(inner, 1);
  assert_string_equal(i0, "0:M");
  assert_string_equal(i1, "tj:min(N, tj + 8)");
  WeirMemlet *mid_in = edge_between(s, outer->id, inner->id);
  assert_subset(mid_in, "0:M, tj:min(N, tj + 8)");
  g_autoptr(GHashTable) b = t1_bindings("M", (gint64)5, "N", (gint64)21, NULL);
  assert_int_equal(t1_total_bytes(g, b), t1_total_bytes(before, b));
  t1_assert_same_outputs(before, g, b, 1e-6);
}

static void test_reasons(void **state) {
  (void)state;
  guint st, e;
  g_autoptr(WeirGraph) g = scale_graph("64", "48", &st, &e);
  WeirSite site = t1_site(st, 1, e);
  const char *three[] = {"tile=4,4,4", NULL};
  g_autofree char *r1 = t1_reason(g, "map-tiling", &site, three);
  assert_contains(r1, "'tile' has 3 values but map 'scale'");
  const char *zero[] = {"tile=0", NULL};
  g_autofree char *r2 = t1_reason(g, "map-tiling", &site, zero);
  assert_contains(r2, "nothing to tile");
  const char *big[] = {"tile=64", NULL};
  g_autofree char *r3 = t1_reason(g, "map-tiling", &site, big);
  assert_contains(r3, "covers the whole range");
  WeirSite bad = t1_site(st, 1, 1);
  g_autofree char *r4 = t1_reason(g, "map-tiling", &bad, NULL);
  assert_non_null(r4);
  /* the access node A is no map entry */
  WeirState *s = weir_graph_state(g, st);
  WeirNode *a = g_ptr_array_index(s->nodes, 0);
  WeirSite not_map = t1_site(st, 1, a->id);
  g_autofree char *r5 = t1_reason(g, "map-tiling", &not_map, NULL);
  assert_contains(r5, "is not a map entry");
}

static void test_matmul_tiles(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t1_load_sample("matmul.json");
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirSite site = t1_site(12, 1, 15);
  const char *p[] = {"tile=16,16,8", NULL};
  t1_apply(g, "map-tiling", &site, p);
  WeirState *s = weir_graph_state(g, 12);
  WeirNode *outer = t1_map_by_label(g, "matmul_tiles", NULL);
  WeirNode *inner = weir_state_node(s, 15);
  /* per tile: a 16x8 block of A read 16*16*8 times */
  g_autoptr(GPtrArray) mids = weir_state_out_edges(s, outer->id);
  assert_int_equal(mids->len, 2);
  for (guint i = 0; i < mids->len; i++) {
    WeirMemlet *m = g_ptr_array_index(mids, i);
    assert_int_equal(m->dst, inner->id);
    assert_subset(m, strcmp(m->data, "A") == 0 ? "ti:ti + 16, tk:tk + 8"
                                               : "tk:tk + 8, tj:tj + 16");
    assert_volume(m, "2048");
  }
  WeirNode *iexit = weir_state_map_exit(s, inner);
  WeirNode *oexit = weir_state_map_exit(s, outer);
  WeirMemlet *mid_out = edge_between(s, iexit->id, oexit->id);
  assert_int_equal(mid_out->wcr, WEIR_WCR_SUM);
  assert_subset(mid_out, "ti:ti + 16, tj:tj + 16");
  assert_int_equal(t1_total_bytes(g, NULL), t1_total_bytes(before, NULL));
  t1_assert_same_outputs(before, g, NULL, 1e-5);
}

static void test_everywhere(void **state) {
  (void)state;
  assert_true(t1_apply_everywhere("map-tiling", NULL, 1e-5, TRUE) >= 5);
  const char *odd[] = {"tile=5", NULL};
  assert_true(t1_apply_everywhere("map-tiling", odd, 1e-5, TRUE) >= 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sites),         cmocka_unit_test(test_exact_tiles),
      cmocka_unit_test(test_partial_tiles), cmocka_unit_test(test_reasons),
      cmocka_unit_test(test_matmul_tiles),  cmocka_unit_test(test_everywhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
