/* test-strength-reduction.c — the strength-reduction transformation
 * (tier 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "tier1-check.h"
#include "weir-validate.h"

#define SEQ WEIR_SCHEDULE_SEQUENTIAL

/* y[i] = code(x[i]) over i in 0:16, f32 (or dtype). */
static WeirGraph *unary(const char *dtype, const char *code, guint *st,
                        guint *t) {
  g_autofree char *decls = g_strdup_printf("x:%s:16;y:%s:16", dtype, dtype);
  T1Port x = {"x", "x", "i", WEIR_WCR_NONE};
  T1Port y = {"y", "y", "i", WEIR_WCR_NONE};
  guint e;
  WeirGraph *g = t1_map_program(decls, "", "i", "0:16", WEIR_SCHEDULE_PARALLEL,
                                &x, 1, &y, 1, code, st, &e);
  *t = t1_tasklet_by_label(g, "body", NULL)->id;
  return g;
}

/* Applies with params and checks the new body and the outputs. */
static void check_rewrite(const char *dtype, const char *code,
                          const char *const *params, const char *want,
                          double rtol) {
  guint st, t;
  g_autoptr(WeirGraph) g = unary(dtype, code, &st, &t);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  g_autoptr(GArray) sites = t1_sites(g, "strength-reduction");
  assert_int_equal(sites->len, 1);
  WeirSite site = t1_site(st, 1, t);
  t1_apply(g, "strength-reduction", &site, params);
  WeirNode *n = weir_graph_node(g, t, NULL);
  assert_string_equal(n->code_text, want);
  t1_assert_same_outputs(before, g, NULL, rtol);
}

static void test_exact(void **state) {
  (void)state;
  check_rewrite("f32", "y = pow(x, 2)", NULL, "y = x * x", 0);
  check_rewrite("f64", "y = pow(x, 2.0) + 1", NULL, "y = x * x + 1", 0);
  check_rewrite("f32", "y = pow(x, 1) - pow(x, 0)", NULL, "y = x - f32(1)", 0);
  check_rewrite("f32", "y = x / 4", NULL, "y = x * 0.25", 0);
  check_rewrite("f64", "y = x / -0.5", NULL, "y = x * -2.0", 0);
  check_rewrite("f32", "y = x / 1024.0", NULL, "y = x * 0.0009765625", 0);
  /* pow(x, 0.5) is sqrt(x) where x can be neither -0 nor -inf */
  check_rewrite("f32", "y = pow(abs(x), 0.5)", NULL, "y = sqrt(abs(x))", 0);
  check_rewrite("f64", "y = pow(exp(x), 0.5)", NULL, "y = sqrt(exp(x))", 0);
  check_rewrite("f32", "y = pow(pow(x, 2), 0.5)", NULL, "y = sqrt(x * x)", 0);
  /* a larger base is computed once */
  check_rewrite("f32", "y = pow(x + 1, 2)", NULL, "sr0 = x + 1\ny = sr0 * sr0",
                0);
  /* ... but not hoisted out of a branch */
  check_rewrite("f32", "y = x > 0 ? pow(x + 1, 2) : 0", NULL,
                "y = x > 0 ? (x + 1) * (x + 1) : 0", 0);
  /* relaxed rewrites */
  const char *relaxed[] = {"relaxed=true", NULL};
  check_rewrite("f32", "y = pow(x, 0.5)", relaxed, "y = sqrt(x)", 0);
  check_rewrite("f64", "y = x / 3", relaxed, "y = x * 0.33333333333333331",
                1e-15);
}

static void test_reasons(void **state) {
  (void)state;
  guint st, t;
  g_autoptr(WeirGraph) g1 = unary("f32", "y = x / 3", &st, &t);
  WeirSite site = t1_site(st, 1, t);
  g_autofree char *r1 = t1_reason(g1, "strength-reduction", &site, NULL);
  assert_contains(r1, "tasklet 'body' (node");
  assert_contains(r1, "has nothing to reduce exactly: 'x / 3' divides by a "
                      "constant that is not a power of two");
  g_autoptr(WeirGraph) g2 = unary("f32", "y = pow(x, 0.5)", &st, &t);
  site = t1_site(st, 1, t);
  g_autofree char *r2 = t1_reason(g2, "strength-reduction", &site, NULL);
  assert_contains(r2, "'pow(x, 0.5)' differs from sqrt() at -0 and -inf");
  g_autoptr(WeirGraph) g3 = unary("f64", "y = pow(x, 3)", &st, &t);
  site = t1_site(st, 1, t);
  g_autofree char *r3 = t1_reason(g3, "strength-reduction", &site, NULL);
  assert_contains(r3, "'pow(x, 3)' has an exponent with no exact cheaper "
                      "form");
  /* integer division is left alone: not even a site */
  g_autoptr(WeirGraph) g4 = unary("i32", "y = x / 2", &st, &t);
  g_autoptr(GArray) s4 = t1_sites(g4, "strength-reduction");
  assert_int_equal(s4->len, 0);
  site = t1_site(st, 1, t);
  g_autofree char *r4 = t1_reason(g4, "strength-reduction", &site, NULL);
  assert_contains(r4, "has no pow() with a constant exponent and no floating "
                      "division by a constant");
  /* a division by a variable is no candidate either */
  g_autoptr(WeirGraph) g5 = unary("f32", "y = 1 / x", &st, &t);
  g_autoptr(GArray) s5 = t1_sites(g5, "strength-reduction");
  assert_int_equal(s5->len, 0);
  /* not a tasklet */
  WeirState *state5 = weir_graph_state(g5, st);
  WeirNode *map = g_ptr_array_index(state5->nodes, 0);
  WeirSite bad = t1_site(st, 1, map->id);
  g_autofree char *r6 = t1_reason(g5, "strength-reduction", &bad, NULL);
  assert_contains(r6, "is not a tasklet");
}

/* The exponent comes from a constant container, as in imported models:
 * folding it removes its memlets and the data they moved. */
static void test_constant_connector(void **state) {
  (void)state;
  T1Port x = {"x", "x", "i", WEIR_WCR_NONE};
  T1Port c = {"b", "c", "", WEIR_WCR_NONE};
  T1Port y = {"y", "y", "i", WEIR_WCR_NONE};
  T1Port ins[] = {x, c};
  guint st, e;
  g_autoptr(WeirGraph) g =
      t1_map_program("x:f32:64;c:f32:;y:f32:64", "", "i", "0:64", SEQ, ins, 2,
                     &y, 1, "y = pow(x, b)", &st, &e);
  WeirContainer *cc = weir_graph_container(g, "c");
  cc->transient = TRUE;
  float two = 2.0f;
  g_autoptr(GBytes) bytes = g_bytes_new(&two, sizeof two);
  weir_container_set_initial(cc, bytes);
  assert_true(weir_graph_validate(g, NULL));
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirNode *t = t1_tasklet_by_label(g, "body", NULL);
  WeirSite site = t1_site(st, 1, t->id);
  t1_apply(g, "strength-reduction", &site, NULL);
  t = weir_graph_node(g, t->id, NULL);
  assert_string_equal(t->code_text, "y = x * x");
  assert_int_equal(t->in_conns->len, 1);
  WeirNode *entry = weir_graph_node(g, e, NULL);
  assert_false(weir_node_has_in_conn(entry, "IN_c"));
  WeirState *s = weir_graph_state(g, st);
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    assert_false(n->kind == WEIR_NODE_ACCESS && strcmp(n->data, "c") == 0);
  }
  /* one f32 element per iteration no longer moves */
  assert_int_equal(t1_total_bytes(g, NULL),
                   t1_total_bytes(before, NULL) - 64 * 4);
  t1_assert_same_outputs(before, g, NULL, 0);

  /* a divisor from a constant: the connector goes, the map keeps its
   * scope through the other input */
  g_autoptr(WeirGraph) g2 =
      t1_map_program("x:f32:64;c:f32:;y:f32:64", "", "i", "0:64", SEQ, ins, 2,
                     &y, 1, "y = x / b", &st, &e);
  cc = weir_graph_container(g2, "c");
  cc->transient = TRUE;
  float eighth = 0.125f;
  g_autoptr(GBytes) b2 = g_bytes_new(&eighth, sizeof eighth);
  weir_container_set_initial(cc, b2);
  g_autoptr(WeirGraph) before2 = weir_graph_copy(g2);
  t = t1_tasklet_by_label(g2, "body", NULL);
  site = t1_site(st, 1, t->id);
  t1_apply(g2, "strength-reduction", &site, NULL);
  assert_string_equal(weir_graph_node(g2, t->id, NULL)->code_text,
                      "y = x * 8.0");
  t1_assert_same_outputs(before2, g2, NULL, 0);

  /* the only input folded away: the tasklet stays in the map through an
   * empty memlet */
  g_autoptr(WeirGraph) g3 =
      t1_map_program("c:f32:;y:f32:64", "", "i", "0:64", SEQ, &c, 1, &y, 1,
                     "y = pow(b, 2)", &st, &e);
  cc = weir_graph_container(g3, "c");
  cc->transient = TRUE;
  weir_container_set_initial(cc, bytes);
  g_autoptr(WeirGraph) before3 = weir_graph_copy(g3);
  t = t1_tasklet_by_label(g3, "body", NULL);
  site = t1_site(st, 1, t->id);
  t1_apply(g3, "strength-reduction", &site, NULL);
  t1_assert_same_outputs(before3, g3, NULL, 0);
}

/* The transformer's layer norms: x / 32 in the means, Pow(x, 2) with the
 * exponent from a constant; the attention scaling divides by 2.828427. */
static void test_transformer(void **state) {
  (void)state;
  g_autoptr(GPtrArray) programs = t1_programs(TRUE);
  T1Program *tr = NULL;
  for (guint i = 0; i < programs->len; i++)
    if (strcmp(((T1Program *)g_ptr_array_index(programs, i))->name,
               "transformer") == 0)
      tr = g_ptr_array_index(programs, i);
  assert_non_null(tr);
  g_autoptr(GArray) sites = t1_sites(tr->g, "strength-reduction");
  WeirState *s = NULL;
  WeirNode *pow1 = t1_tasklet_by_label(tr->g, "/norm1/Pow", &s);
  WeirNode *mean = t1_tasklet_by_label(tr->g, "/norm1/ReduceMean_mean", NULL);
  WeirNode *div = t1_tasklet_by_label(tr->g, "/self_attn/Div_1", NULL);
  assert_true(t1_sites_have(sites, pow1->id));
  assert_true(t1_sites_have(sites, mean->id));
  assert_true(t1_sites_have(sites, div->id));
  WeirSite ds = t1_site(s->id, 1, div->id);
  g_autofree char *r = t1_reason(tr->g, "strength-reduction", &ds, NULL);
  assert_contains(r, "'a / b' divides by a constant that is not a power of "
                     "two");
  g_autoptr(WeirGraph) g = weir_graph_copy(tr->g);
  WeirSite ps = t1_site(s->id, 1, pow1->id);
  t1_apply(g, "strength-reduction", &ps, NULL);
  assert_string_equal(weir_graph_node(g, pow1->id, NULL)->code_text,
                      "y = a * a");
  /* the exponent was read once per element: 2*8*32 f32 reads fewer */
  assert_int_equal(t1_total_bytes(g, NULL),
                   t1_total_bytes(tr->g, NULL) - 2 * 8 * 32 * 4);
  t1_assert_same_outputs(tr->g, g, NULL, 1e-5);
}

static void test_everywhere(void **state) {
  (void)state;
  assert_true(t1_apply_everywhere("strength-reduction", NULL, 1e-5, TRUE) >= 6);
  const char *relaxed[] = {"relaxed=true", NULL};
  assert_true(t1_apply_everywhere("strength-reduction", relaxed, 1e-5, TRUE) >=
              8);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exact),
      cmocka_unit_test(test_reasons),
      cmocka_unit_test(test_constant_connector),
      cmocka_unit_test(test_transformer),
      cmocka_unit_test(test_everywhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
