/* test-vectorize.c — the vectorize transformation (tier 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "tier1-check.h"
#include "weir-validate.h"

#define SEQ WEIR_SCHEDULE_SEQUENTIAL
#define PAR WEIR_SCHEDULE_PARALLEL

static void test_sites(void **state) {
  (void)state;
  g_autoptr(WeirGraph) va = t1_load_sample("vector_add.json");
  g_autoptr(GArray) s0 = t1_sites(va, "vectorize");
  assert_int_equal(s0->len, 1);
  g_autoptr(WeirGraph) sm = t1_load_sample("softmax.json");
  g_autoptr(GArray) s1 = t1_sites(sm, "vectorize");
  assert_int_equal(s1->len, 4);
  /* the outer map of a tiled map is no site, the inner one is */
  guint st, e;
  T1Port x = {"x", "x", "i", WEIR_WCR_NONE};
  T1Port y = {"y", "y", "i", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g = t1_map_program("x:f32:64;y:f32:64", "", "i", "0:64",
                                          SEQ, &x, 1, &y, 1, "y = x", &st, &e);
  WeirSite site = t1_site(st, 1, e);
  const char *t[] = {"tile=16", NULL};
  t1_apply(g, "map-tiling", &site, t);
  g_autoptr(GArray) s2 = t1_sites(g, "vectorize");
  assert_int_equal(s2->len, 1);
  assert_int_equal(g_array_index(s2, WeirSite, 0).nodes[0], e);
}

/* A one-parameter map becomes SIMD with its width as tile size. */
static void test_one_param(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t1_load_sample("vector_add.json");
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirSite site = t1_site(4, 1, 7);
  const char *p[] = {"width=16", NULL};
  t1_apply(g, "vectorize", &site, p);
  WeirNode *e = weir_graph_node(g, 7, NULL);
  assert_int_equal(e->map->schedule, WEIR_SCHEDULE_SIMD);
  assert_int_equal(e->map->tile->len, 1);
  assert_int_equal(g_array_index(e->map->tile, gint64, 0), 16);
  g_autoptr(GHashTable) b = t1_bindings("N", (gint64)33, NULL);
  assert_int_equal(t1_total_bytes(g, b), t1_total_bytes(before, b));
  t1_assert_same_outputs(before, g, b, 0);
  g_autofree char *r = t1_reason(g, "vectorize", &site, NULL);
  assert_contains(r, "map 'add' (node 7) is already SIMD");
}

/* A parallel (i, j) map splits: parallel over i outside, SIMD over j. */
static void test_split(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t1_load_sample("softmax.json");
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirState *s = NULL;
  WeirNode *e = t1_map_by_label(g, "normalize", &s);
  WeirSite site = t1_site(s->id, 1, e->id);
  const char *p[] = {"width=1", NULL};
  t1_apply(g, "vectorize", &site, p);
  WeirNode *outer = t1_map_by_label(g, "normalize_outer", NULL);
  assert_non_null(outer);
  assert_int_equal(outer->map->params->len, 1);
  assert_string_equal(g_ptr_array_index(outer->map->params, 0), "i");
  assert_int_equal(outer->map->schedule, PAR);
  assert_int_equal(e->map->params->len, 1);
  assert_string_equal(g_ptr_array_index(e->map->params, 0), "j");
  assert_int_equal(e->map->schedule, WEIR_SCHEDULE_SIMD);
  assert_int_equal(e->map->tile->len, 0);
  /* per row: e[i, 0:64] and s[i] */
  for (guint k = 0; k < s->edges->len; k++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, k);
    if (m->src != outer->id || m->dst != e->id)
      continue;
    g_autofree char *sub = weir_subset_to_string(m->subset);
    assert_string_equal(sub, strcmp(m->data, "e") == 0 ? "i, 0:64" : "i");
  }
  assert_int_equal(t1_total_bytes(g, NULL), t1_total_bytes(before, NULL));
  t1_assert_same_outputs(before, g, NULL, 0);
}

static void test_reasons(void **state) {
  (void)state;
  /* the matmul map accumulates C[i, j] over k, its last parameter */
  g_autoptr(WeirGraph) mm = t1_load_sample("matmul.json");
  WeirSite site = t1_site(12, 1, 15);
  g_autofree char *r1 = t1_reason(mm, "vectorize", &site, NULL);
  assert_contains(r1, "WCR 'sum' on 'C' (subset 'i, j', memlet 23) "
                      "accumulates into the same element for different "
                      "values of 'k'");
  /* the softmax row maximum accumulates over j */
  g_autoptr(WeirGraph) sm = t1_load_sample("softmax.json");
  WeirState *s = NULL;
  WeirNode *rowmax = t1_map_by_label(sm, "rowmax", &s);
  site = t1_site(s->id, 1, rowmax->id);
  g_autofree char *r2 = t1_reason(sm, "vectorize", &site, NULL);
  assert_contains(r2, "WCR 'max' on 'mx'");

  /* a recurrence along the vectorized parameter */
  guint st, e;
  T1Port x = {"x", "x", "i", WEIR_WCR_NONE};
  T1Port next = {"xo", "x", "i + 1", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g1 =
      t1_map_program("x:f32:N", "N", "i", "0:N - 1", SEQ, &x, 1, &next, 1,
                     "xo = 2 * x", &st, &e);
  site = t1_site(st, 1, e);
  g_autofree char *r3 = t1_reason(g1, "vectorize", &site, NULL);
  assert_contains(r3, "one iteration may read what another writes");

  /* a data-dependent gather: y[i] = t[idx[i]] */
  T1Port idx = {"k", "idx", "i", WEIR_WCR_NONE};
  T1Port tab = {"t", "t", "0:16", WEIR_WCR_NONE};
  T1Port y = {"y", "y", "i", WEIR_WCR_NONE};
  T1Port ins[] = {idx, tab};
  g_autoptr(WeirGraph) g2 =
      t1_map_program("idx:i32:8;t:f32:16;y:f32:8", "", "i", "0:8", SEQ, ins, 2,
                     &y, 1, "y = t[min(max(k, 0), 15)]", &st, &e);
  site = t1_site(st, 1, e);
  g_autofree char *r4 = t1_reason(g2, "vectorize", &site, NULL);
  assert_contains(r4, "indexes 't' with a value computed from data");

  /* a gather with a computable index is fine: y[i] = t[2*i] */
  g_autoptr(WeirGraph) g3 =
      t1_map_program("t:f32:16;y:f32:8", "", "i", "0:8", SEQ, &tab, 1, &y, 1,
                     "y = t[2*i]", &st, &e);
  site = t1_site(st, 1, e);
  assert_null(t1_reason(g3, "vectorize", &site, NULL));
  g_autoptr(WeirGraph) before = weir_graph_copy(g3);
  t1_apply(g3, "vectorize", &site, NULL);
  t1_assert_same_outputs(before, g3, NULL, 0);

  /* not innermost */
  g_autoptr(WeirGraph) g4 = t1_map_program("x:f32:64;y:f32:64", "", "i", "0:64",
                                           SEQ, &x, 1, &y, 1, "y = x", &st, &e);
  site = t1_site(st, 1, e);
  const char *t[] = {"tile=16", NULL};
  t1_apply(g4, "map-tiling", &site, t);
  WeirNode *outer = t1_map_by_label(g4, "m_tiles", NULL);
  WeirSite os = t1_site(st, 1, outer->id);
  g_autofree char *r5 = t1_reason(g4, "vectorize", &os, NULL);
  assert_contains(r5, "contains map 'm'");
  assert_contains(r5, "only an innermost map can be vectorized");
}

static void test_everywhere(void **state) {
  (void)state;
  assert_true(t1_apply_everywhere("vectorize", NULL, 0, TRUE) >= 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sites),      cmocka_unit_test(test_one_param),
      cmocka_unit_test(test_split),      cmocka_unit_test(test_reasons),
      cmocka_unit_test(test_everywhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
