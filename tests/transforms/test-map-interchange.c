/* test-map-interchange.c — the map-interchange transformation (tier 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "tier1-check.h"
#include "weir-validate.h"

#define SEQ WEIR_SCHEDULE_SEQUENTIAL
#define PAR WEIR_SCHEDULE_PARALLEL

static char *params_text(const WeirNode *e) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < e->map->params->len; i++) {
    g_autofree char *r =
        weir_range_to_string(&g_array_index(e->map->ranges, WeirRange, i));
    g_string_append_printf(s, "%s%s in %s", i ? ", " : "",
                           (const char *)g_ptr_array_index(e->map->params, i),
                           r);
  }
  return g_string_free(s, FALSE);
}

static void test_sites(void **state) {
  (void)state;
  g_autoptr(WeirGraph) va = t1_load_sample("vector_add.json");
  g_autoptr(GArray) s0 = t1_sites(va, "map-interchange");
  assert_int_equal(s0->len, 0);
  g_autoptr(WeirGraph) mm = t1_load_sample("matmul.json");
  g_autoptr(GArray) s1 = t1_sites(mm, "map-interchange");
  assert_int_equal(s1->len, 2);
  assert_true(t1_sites_have(s1, 5));
  assert_true(t1_sites_have(s1, 15));
}

static void test_single(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t1_load_sample("matmul.json");
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirSite site = t1_site(12, 1, 15);
  const char *p[] = {"order=2,0,1", NULL};
  t1_apply(g, "map-interchange", &site, p);
  g_autofree char *text = params_text(weir_graph_node(g, 15, NULL));
  assert_string_equal(text, "k in 0:32, i in 0:64, j in 0:48");
  assert_int_equal(t1_total_bytes(g, NULL), t1_total_bytes(before, NULL));
  t1_assert_same_outputs(before, g, NULL, 1e-5);
}

/* (i) around (j) becomes (j) around (i); the memlets between the maps
 * follow. */
static void test_pair(void **state) {
  (void)state;
  guint st, e;
  T1Port x = {"x", "x", "i, j", WEIR_WCR_NONE};
  T1Port y = {"y", "y", "j, i", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g =
      t1_map_program("x:f32:M,N;y:f32:N,M", "M,N", "i,j", "0:M;0:N", PAR, &x, 1,
                     &y, 1, "y = x", &st, &e);
  WeirSite site = t1_site(st, 1, e);
  const char *w[] = {"width=1", NULL};
  t1_apply(g, "vectorize", &site, w);
  WeirNode *outer = t1_map_by_label(g, "m_outer", NULL);
  weir_graph_node(g, e, NULL)->map->schedule = SEQ;
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirSite pair = t1_site(st, 2, outer->id, e);
  t1_apply(g, "map-interchange", &pair, NULL);
  outer = weir_graph_node(g, outer->id, NULL);
  WeirNode *inner = weir_graph_node(g, e, NULL);
  g_autofree char *ot = params_text(outer);
  g_autofree char *it = params_text(inner);
  assert_string_equal(ot, "j in 0:N");
  assert_string_equal(it, "i in 0:M");
  assert_int_equal(outer->map->schedule, PAR);
  WeirState *s = weir_graph_state(g, st);
  for (guint k = 0; k < s->edges->len; k++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, k);
    if (m->src == outer->id && m->dst == inner->id) {
      g_autofree char *sub = weir_subset_to_string(m->subset);
      assert_string_equal(sub, "0:M, j");
      g_autofree char *vol = weir_expr_to_string(m->volume);
      assert_string_equal(vol, "M");
    }
  }
  g_autoptr(GHashTable) b = t1_bindings("M", (gint64)3, "N", (gint64)7, NULL);
  assert_int_equal(t1_total_bytes(g, b), t1_total_bytes(before, b));
  t1_assert_same_outputs(before, g, b, 0);
}

/* Tiles: the tile loops may be swapped, a point loop may not leave its
 * tile loop. */
static void test_tiles(void **state) {
  (void)state;
  guint st, e;
  T1Port x = {"x", "x", "i, j", WEIR_WCR_NONE};
  T1Port y = {"y", "y", "i, j", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g =
      t1_map_program("x:f32:32,32;y:f32:32,32", "", "i,j", "0:32;0:32", PAR, &x,
                     1, &y, 1, "y = x", &st, &e);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirSite site = t1_site(st, 1, e);
  const char *t[] = {"tile=8", NULL};
  t1_apply(g, "map-tiling", &site, t);
  WeirNode *outer = t1_map_by_label(g, "m_tiles", NULL);
  WeirSite pair = t1_site(st, 2, outer->id, e);
  const char *bad[] = {"order=0,2,1,3", NULL};
  g_autofree char *r = t1_reason(g, "map-interchange", &pair, bad);
  assert_contains(r, "the range 'ti:ti + 8' of 'i' uses 'ti', which would no "
                     "longer enclose it");
  const char *inside[] = {"order=2,3,0,1", NULL};
  g_autofree char *r2 = t1_reason(g, "map-interchange", &pair, inside);
  assert_contains(r2, "uses 'ti'");
  t1_apply(g, "map-interchange", &pair, NULL); /* (tj, ti) */
  g_autofree char *ot = params_text(weir_graph_node(g, outer->id, NULL));
  assert_string_equal(ot, "tj in 0:32:8, ti in 0:32:8");
  t1_assert_same_outputs(before, g, NULL, 0);
}

static void test_reasons(void **state) {
  (void)state;
  g_autoptr(WeirGraph) mm = t1_load_sample("matmul.json");
  WeirSite site = t1_site(12, 1, 15);
  const char *dup[] = {"order=0,0", NULL};
  g_autofree char *r1 = t1_reason(mm, "map-interchange", &site, dup);
  assert_contains(r1, "'order' is not a permutation of 0..1");
  const char *id[] = {"order=0,1,2", NULL};
  g_autofree char *r2 = t1_reason(mm, "map-interchange", &site, id);
  assert_contains(r2, "leaves the parameters of map 'matmul' (node 15) as "
                      "they are");
  const char *many[] = {"order=0,1,2,3", NULL};
  g_autofree char *r3 = t1_reason(mm, "map-interchange", &site, many);
  assert_contains(r3, "'order' lists 4 positions but map 'matmul' (node 15) "
                      "has 3 parameters");
  /* a recurrence along j: x[i, j + 1] = x[i, j] + 1 */
  guint st, e;
  T1Port xr = {"x", "x", "i, j", WEIR_WCR_NONE};
  T1Port xw = {"xo", "x", "i, j + 1", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g =
      t1_map_program("x:f32:4,9", "", "i,j", "0:4;0:8", SEQ, &xr, 1, &xw, 1,
                     "xo = x + 1", &st, &e);
  WeirSite s2 = t1_site(st, 1, e);
  g_autofree char *r4 = t1_reason(g, "map-interchange", &s2, NULL);
  assert_contains(r4, "reads 'x' at 'i, j' (memlet");
  assert_contains(r4, "and writes it at 'i, j + 1'");
}

static void test_everywhere(void **state) {
  (void)state;
  assert_true(t1_apply_everywhere("map-interchange", NULL, 1e-5, TRUE) >= 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sites),   cmocka_unit_test(test_single),
      cmocka_unit_test(test_pair),    cmocka_unit_test(test_tiles),
      cmocka_unit_test(test_reasons), cmocka_unit_test(test_everywhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
