/* test-parallelize.c — the parallelize transformation (tier 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "tier1-check.h"
#include "weir-validate.h"

#define SEQ WEIR_SCHEDULE_SEQUENTIAL

static void test_sites(void **state) {
  (void)state;
  /* every sample map is parallel already: no site */
  g_autoptr(WeirGraph) mm = t1_load_sample("matmul.json");
  g_autoptr(GArray) s0 = t1_sites(mm, "parallelize");
  assert_int_equal(s0->len, 0);
  WeirNode *e = t1_map_by_label(mm, "matmul", NULL);
  e->map->schedule = SEQ;
  g_autoptr(GArray) s1 = t1_sites(mm, "parallelize");
  assert_int_equal(s1->len, 1);
  assert_int_equal(g_array_index(s1, WeirSite, 0).nodes[0], e->id);
}

/* Independent iterations: an elementwise map, an in-place update, a
 * reduction with WCR. */
static void test_legal(void **state) {
  (void)state;
  guint st, e;
  T1Port x = {"x", "x", "i", WEIR_WCR_NONE};
  T1Port y = {"y", "y", "i", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g1 =
      t1_map_program("x:f32:N;y:f32:N", "N", "i", "0:N", SEQ, &x, 1, &y, 1,
                     "y = 2 * x", &st, &e);
  WeirSite site = t1_site(st, 1, e);
  assert_null(t1_reason(g1, "parallelize", &site, NULL));
  g_autoptr(WeirGraph) before = weir_graph_copy(g1);
  t1_apply(g1, "parallelize", &site, NULL);
  assert_int_equal(weir_graph_node(g1, e, NULL)->map->schedule,
                   WEIR_SCHEDULE_PARALLEL);
  g_autoptr(GHashTable) b = t1_bindings("N", (gint64)17, NULL);
  assert_int_equal(t1_total_bytes(g1, b), t1_total_bytes(before, b));
  t1_assert_same_outputs(before, g1, b, 0);

  T1Port xo = {"xo", "x", "i", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g2 = t1_map_program("x:f32:N", "N", "i", "0:N", SEQ, &x,
                                           1, &xo, 1, "xo = x * x", &st, &e);
  site = t1_site(st, 1, e);
  assert_null(t1_reason(g2, "parallelize", &site, NULL));

  T1Port sum = {"s", "s", "0", WEIR_WCR_SUM};
  g_autoptr(WeirGraph) g3 =
      t1_map_program("x:f32:N;s:f32:1", "N", "i", "0:N", SEQ, &x, 1, &sum, 1,
                     "s = x", &st, &e);
  site = t1_site(st, 1, e);
  assert_null(t1_reason(g3, "parallelize", &site, NULL));

  /* a flattened 2-D index i*8 + j is injective over j in 0:8 */
  T1Port a = {"a", "a", "i, j", WEIR_WCR_NONE};
  T1Port f = {"f", "f", "8*i + j", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g4 =
      t1_map_program("a:f64:4,8;f:f64:32", "", "i,j", "0:4;0:8", SEQ, &a, 1, &f,
                     1, "f = a", &st, &e);
  site = t1_site(st, 1, e);
  assert_null(t1_reason(g4, "parallelize", &site, NULL));
}

static void test_reasons(void **state) {
  (void)state;
  guint st, e;
  T1Port x = {"x", "x", "i", WEIR_WCR_NONE};
  /* a recurrence: x[i + 1] = 2 * x[i] */
  T1Port next = {"xo", "x", "i + 1", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g1 =
      t1_map_program("x:f32:N", "N", "i", "0:N - 1", SEQ, &x, 1, &next, 1,
                     "xo = 2 * x", &st, &e);
  WeirSite site = t1_site(st, 1, e);
  g_autofree char *r1 = t1_reason(g1, "parallelize", &site, NULL);
  assert_contains(r1, "reads 'x' at 'i'");
  assert_contains(r1, "writes it at 'i + 1'");

  /* every iteration overwrites y[0] */
  T1Port y0 = {"y", "y", "0", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g2 = t1_map_program(
      "x:f32:N;y:f32:1", "N", "i", "0:N", SEQ, &x, 1, &y0, 1, "y = x", &st, &e);
  site = t1_site(st, 1, e);
  g_autofree char *r2 = t1_reason(g2, "parallelize", &site, NULL);
  assert_contains(r2, "iterations that differ in 'i' may write the same "
                      "element of 'y'");

  /* overlapping windows y[i // 2] */
  T1Port half = {"y", "y", "i // 2", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g3 =
      t1_map_program("x:f32:8;y:f32:4", "", "i", "0:8", SEQ, &x, 1, &half, 1,
                     "y = x", &st, &e);
  site = t1_site(st, 1, e);
  g_autofree char *r3 = t1_reason(g3, "parallelize", &site, NULL);
  assert_contains(r3, "may write the same element of 'y'");

  /* a reduction that reads its own accumulator */
  T1Port sin = {"sv", "s", "0", WEIR_WCR_NONE};
  T1Port sout = {"so", "s", "0", WEIR_WCR_SUM};
  T1Port both[] = {x, sin};
  g_autoptr(WeirGraph) g4 =
      t1_map_program("x:f32:N;s:f32:1", "N", "i", "0:N", SEQ, both, 2, &sout, 1,
                     "so = x * sv", &st, &e);
  site = t1_site(st, 1, e);
  g_autofree char *r4 = t1_reason(g4, "parallelize", &site, NULL);
  assert_contains(r4, "which it accumulates into with WCR 'sum'");

  /* already parallel */
  g_autoptr(WeirGraph) va = t1_load_sample("vector_add.json");
  site = t1_site(4, 1, 7);
  g_autofree char *r5 = t1_reason(va, "parallelize", &site, NULL);
  assert_contains(r5, "map 'add' (node 7) is already parallel");
}

/* The outer map of a tiled sequential map is parallel over its tiles. */
static void test_tiles(void **state) {
  (void)state;
  guint st, e;
  T1Port x = {"x", "x", "i", WEIR_WCR_NONE};
  T1Port xo = {"xo", "x", "i", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g = t1_map_program("x:f32:N", "N", "i", "0:N", SEQ, &x,
                                          1, &xo, 1, "xo = x + 1", &st, &e);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirSite site = t1_site(st, 1, e);
  const char *p[] = {"tile=4", NULL};
  t1_apply(g, "map-tiling", &site, p);
  WeirNode *outer = t1_map_by_label(g, "m_tiles", NULL);
  WeirSite osite = t1_site(st, 1, outer->id);
  assert_null(t1_reason(g, "parallelize", &osite, NULL));
  t1_apply(g, "parallelize", &osite, NULL);
  g_autoptr(GHashTable) b = t1_bindings("N", (gint64)10, NULL);
  t1_assert_same_outputs(before, g, b, 0);
  /* tiles of size 4 advancing by 2 would overlap */
  g_array_index(outer->map->ranges, WeirRange, 0).step =
      (weir_expr_unref(g_array_index(outer->map->ranges, WeirRange, 0).step),
       weir_expr_const(2));
  outer->map->schedule = SEQ;
  g_autofree char *r = t1_reason(g, "parallelize", &osite, NULL);
  assert_contains(r, "may write the same element of 'x'");
}

static void make_sequential(WeirGraph *g) {
  for (guint k = 0; k < g->states->len; k++) {
    WeirState *s = g_ptr_array_index(g->states, k);
    for (guint n = 0; n < s->nodes->len; n++) {
      WeirNode *node = g_ptr_array_index(s->nodes, n);
      if (node->kind == WEIR_NODE_MAP_ENTRY)
        node->map->schedule = SEQ;
    }
  }
}

/* The maps of the samples are parallel by construction: made sequential,
 * every one of them is found legal again. */
static void test_everywhere(void **state) {
  (void)state;
  guint refused = 0;
  guint applied = t1_apply_everywhere_full("parallelize", NULL, 0, TRUE,
                                           make_sequential, &refused);
  assert_true(applied >= 100);
  assert_int_equal(refused, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sites),      cmocka_unit_test(test_legal),
      cmocka_unit_test(test_reasons),    cmocka_unit_test(test_tiles),
      cmocka_unit_test(test_everywhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
