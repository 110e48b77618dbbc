/* test-unroll.c — the unroll transformation (tier 1). */
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
  /* vector_add: one parallel loop of symbolic size: no site */
  g_autoptr(WeirGraph) va = t1_load_sample("vector_add.json");
  g_autoptr(GArray) s0 = t1_sites(va, "unroll");
  assert_int_equal(s0->len, 0);
  /* matmul: init (i, j) and the (i, j, k) map, constant sizes */
  g_autoptr(WeirGraph) mm = t1_load_sample("matmul.json");
  g_autoptr(GArray) s1 = t1_sites(mm, "unroll");
  assert_int_equal(s1->len, 2);
  /* softmax: init is a one-parameter parallel map; the others qualify */
  g_autoptr(WeirGraph) sm = t1_load_sample("softmax.json");
  g_autoptr(GArray) s2 = t1_sites(sm, "unroll");
  assert_int_equal(s2->len, 3);
  assert_false(t1_sites_have(s2, 8));
}

static void test_apply(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t1_load_sample("matmul.json");
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirSite site = t1_site(12, 1, 15);
  const char *p[] = {"factor=8", NULL};
  t1_apply(g, "unroll", &site, p);
  WeirNode *e = weir_graph_node(g, 15, NULL);
  assert_int_equal(e->map->unroll, 8);
  assert_int_equal(t1_total_bytes(g, NULL), t1_total_bytes(before, NULL));
  t1_assert_same_outputs(before, g, NULL, 0);
  g_autofree char *r = t1_reason(g, "unroll", &site, p);
  assert_contains(r, "already unrolled by 8");
}

static void test_reasons(void **state) {
  (void)state;
  guint st, e;
  T1Port x = {"x", "x", "i", WEIR_WCR_NONE};
  T1Port y = {"y", "y", "i", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g1 = t1_map_program("x:f32:N;y:f32:N", "N", "i", "0:N",
                                           SEQ, &x, 1, &y, 1, "y = x", &st, &e);
  WeirSite site = t1_site(st, 1, e);
  g_autofree char *r1 = t1_reason(g1, "unroll", &site, NULL);
  assert_contains(r1, "the range '0:N' of 'i' in map 'm'");
  assert_contains(r1, "has no constant size");

  g_autoptr(WeirGraph) g2 = t1_map_program("x:f32:3;y:f32:3", "", "i", "0:3",
                                           SEQ, &x, 1, &y, 1, "y = x", &st, &e);
  site = t1_site(st, 1, e);
  const char *p4[] = {"factor=4", NULL};
  g_autofree char *r2 = t1_reason(g2, "unroll", &site, p4);
  assert_contains(r2, "factor 4 exceeds the 3 iterations of 'i'");
  const char *p3[] = {"factor=3", NULL};
  assert_null(t1_reason(g2, "unroll", &site, p3));

  g_autoptr(WeirGraph) g3 =
      t1_map_program("x:f32:8;y:f32:8", "", "i", "0:8", WEIR_SCHEDULE_PARALLEL,
                     &x, 1, &y, 1, "y = x", &st, &e);
  site = t1_site(st, 1, e);
  g_autofree char *r3 = t1_reason(g3, "unroll", &site, NULL);
  assert_contains(r3, "is the only loop of map 'm' (node");
  assert_contains(r3, "and it is parallel");

  /* not innermost: the outer map of a tiled map */
  g_autoptr(WeirGraph) g4 = t1_map_program("x:f32:64;y:f32:64", "", "i", "0:64",
                                           SEQ, &x, 1, &y, 1, "y = x", &st, &e);
  site = t1_site(st, 1, e);
  const char *t[] = {"tile=16", NULL};
  t1_apply(g4, "map-tiling", &site, t);
  WeirNode *outer = t1_map_by_label(g4, "m_tiles", NULL);
  WeirSite os = t1_site(st, 1, outer->id);
  g_autofree char *r4 = t1_reason(g4, "unroll", &os, NULL);
  assert_contains(r4, "contains map 'm'");
  assert_contains(r4, "only the innermost loop of a nest is unrolled");
  assert_null(t1_reason(g4, "unroll", &site, NULL));
}

static void test_everywhere(void **state) {
  (void)state;
  const char *p[] = {"factor=2", NULL};
  assert_true(t1_apply_everywhere("unroll", p, 0, TRUE) >= 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sites),
      cmocka_unit_test(test_apply),
      cmocka_unit_test(test_reasons),
      cmocka_unit_test(test_everywhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
