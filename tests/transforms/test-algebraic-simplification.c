/* test-algebraic-simplification.c — exact algebraic identities on library
 * nodes (x*1, x/1, x+(-0.0), x-0, integer x+0, pow(x, 1), Neg(Neg(x)),
 * Transpose(Transpose(x))) and inside tasklets, with the signed-zero rule
 * that keeps x + 0.0. */
#include <math.h>

#include "tier2-check.h"

#include "weir-expand.h"
#include "weir-interp.h"
#include "weir-validate.h"

static const WeirTransformInfo *info(void) {
  return t2_lookup("algebraic-simplification");
}

/* Y = Relu(op(X, C)) or Relu(op(C, X)) (const_first): X [2, 3] of dtype,
 * C a constant of shape c_shape filled with value, T and Y of shape
 * out_shape. */
static WeirGraph *binary_shaped(const char *op, WeirDType dtype,
                                const char *c_shape, double value,
                                gboolean const_first, const char *out_shape,
                                guint *id) {
  WeirState *s;
  WeirGraph *g = t2_graph("alg", &s);
  t2_array(g, "X", dtype, "2, 3", FALSE);
  t2_const_fill(g, "C", dtype, c_shape, value);
  t2_array(g, "T", dtype, out_shape, TRUE);
  t2_array(g, "Y", dtype, out_shape, FALSE);
  const char *xc[] = {"X", "C", NULL}, *cx[] = {"C", "X", NULL};
  const char *t[] = {"T", NULL}, *y[] = {"Y", NULL};
  *id = t2_op(g, s, op, "op", const_first ? cx : xc, t)->id;
  t2_op(g, s, dtype == WEIR_DTYPE_F32 ? "Relu" : "Abs", "after", t, y);
  t2_normalize(g);
  return g;
}

static WeirGraph *binary(const char *op, WeirDType dtype, const char *c_shape,
                         double value, gboolean const_first, guint *id) {
  return binary_shaped(op, dtype, c_shape, value, const_first, "2, 3", id);
}

/* Legal cases: removed, same outputs, less data movement. */
static void test_library_identities(void **state) {
  (void)state;
  struct {
    const char *op;
    WeirDType dtype;
    const char *c_shape;
    double value;
    gboolean const_first;
  } cases[] = {
      {"Mul", WEIR_DTYPE_F32, "2, 3", 1.0, FALSE},
      {"Mul", WEIR_DTYPE_F32, "3", 1.0, TRUE},
      {"Div", WEIR_DTYPE_F32, "", 1.0, FALSE},
      {"Add", WEIR_DTYPE_F32, "1", -0.0, TRUE},
      {"Sub", WEIR_DTYPE_F32, "2, 3", 0.0, FALSE},
      {"Pow", WEIR_DTYPE_F32, "", 1.0, FALSE},
      {"Add", WEIR_DTYPE_I32, "3", 0.0, FALSE},
      {"Sub", WEIR_DTYPE_I64, "", 0.0, FALSE},
      {"Div", WEIR_DTYPE_I64, "", 1.0, FALSE},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    guint id;
    g_autoptr(WeirGraph) g =
        binary(cases[i].op, cases[i].dtype, cases[i].c_shape, cases[i].value,
               cases[i].const_first, &id);
    g_autoptr(GArray) sites = t2_sites(info(), g);
    if (sites->len != 1)
      fail_msg("case %u (%s): %u sites", i, cases[i].op, sites->len);
    assert_int_equal(g_array_index(sites, WeirSite, 0).nodes[0], id);
    g_autoptr(WeirGraph) before = weir_graph_copy(g);
    WeirApplyReport report;
    t2_apply(g, info(), &g_array_index(sites, WeirSite, 0), NULL, NULL,
             &report);
    assert_int_equal(t2_count_ops(g, cases[i].op), 0);
    assert_null(weir_graph_container(g, "C"));
    assert_null(weir_graph_container(g, "T"));
    t2_assert_same(before, g, NULL, 0);
    assert_true(report.bytes_after.value < report.bytes_before.value);
    weir_apply_report_clear(&report);
  }
}

static void test_library_rejections(void **state) {
  (void)state;
  struct {
    const char *op;
    WeirDType dtype;
    const char *c_shape;
    double value;
    const char *reason;
  } cases[] = {
      {"Add", WEIR_DTYPE_F32, "2, 3", 0.0,
       "'C' is +0.0: x + 0.0 turns -0.0 into +0.0, so only an addition of "
       "-0.0 is exact"},
      {"Sub", WEIR_DTYPE_F32, "", -0.0,
       "'C' is -0.0: x - (-0.0) turns -0.0 into +0.0"},
      {"Mul", WEIR_DTYPE_F32, "", 2.0, "'C' is not all ones"},
      {"Add", WEIR_DTYPE_I32, "", 1.0, "'C' is not all zeros"},
      {"Pow", WEIR_DTYPE_I64, "", 1.0,
       "Pow 'op' is on integers, which pow computes through double"},
      {"Mul", WEIR_DTYPE_F32, "2, 2, 3", 1.0,
       "input 'X' and output 'T' differ in dtype or shape"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    guint id;
    g_autoptr(WeirGraph) g =
        binary_shaped(cases[i].op, cases[i].dtype, cases[i].c_shape,
                      cases[i].value, FALSE, i == 5 ? "2, 2, 3" : "2, 3", &id);
    WeirState *s = g_ptr_array_index(g->states, 0);
    WeirSite site = t2_site(s, 1, &id);
    g_autofree char *r = t2_reason(info(), g, &site, NULL);
    assert_string_equal(r, cases[i].reason);
  }
}

/* Why x + 0.0 stays: for x = -0.0 the sum is +0.0 (checked on the
 * interpreter, which follows IEEE arithmetic like the generated C). */
static void test_signed_zero(void **state) {
  (void)state;
  guint id;
  g_autoptr(WeirGraph) g = binary("Add", WEIR_DTYPE_F32, "", 0.0, FALSE, &id);
  /* read T instead of Relu(T): make T the output */
  weir_graph_container(g, "T")->transient = FALSE;
  g_autoptr(GError) err = NULL;
  if (!weir_expand_all(g, NULL, NULL, &err))
    fail_msg("%s", err->message);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  const gint64 shape[] = {2, 3};
  WeirTensor *x = weir_tensor_new(WEIR_DTYPE_F32, 2, shape);
  for (gint64 i = 0; i < 6; i++)
    weir_tensor_set(x, i, -0.0);
  g_hash_table_insert(args, "X", x);
  g_hash_table_insert(args, "T", weir_tensor_new(WEIR_DTYPE_F32, 2, shape));
  g_hash_table_insert(args, "Y", weir_tensor_new(WEIR_DTYPE_F32, 2, shape));
  if (!weir_interpret(g, NULL, args, NULL, &err))
    fail_msg("%s", err->message);
  const WeirTensor *t = g_hash_table_lookup(args, "T");
  assert_false(signbit(weir_tensor_get(t, 0))); /* +0.0, not x */
}

static void test_pairs(void **state) {
  (void)state;
  WeirState *s;
  g_autoptr(WeirGraph) g = t2_graph("pairs", &s);
  t2_array(g, "X", WEIR_DTYPE_F32, "2, 3, 4", FALSE);
  t2_array(g, "N1", WEIR_DTYPE_F32, "2, 3, 4", TRUE);
  t2_array(g, "N2", WEIR_DTYPE_F32, "2, 3, 4", TRUE);
  t2_array(g, "T1", WEIR_DTYPE_F32, "4, 2, 3", TRUE);
  t2_array(g, "T2", WEIR_DTYPE_F32, "2, 4, 3", FALSE);
  const char *x[] = {"X", NULL}, *n1[] = {"N1", NULL}, *n2[] = {"N2", NULL};
  const char *t1[] = {"T1", NULL}, *t2[] = {"T2", NULL};
  WeirNode *neg1 = t2_op(g, s, "Neg", "neg1", x, n1);
  WeirNode *neg2 = t2_op(g, s, "Neg", "neg2", n1, n2);
  WeirNode *tr1 = t2_op(g, s, "Transpose", "tr1", n2, t1);
  WeirNode *tr2 = t2_op(g, s, "Transpose", "tr2", t1, t2);
  const gint64 p1[] = {2, 0, 1}, p2[] = {1, 0, 2};
  weir_node_set_attr_ints(tr1, "perm", p1, 3);
  weir_node_set_attr_ints(tr2, "perm", p2, 3);
  t2_normalize(g);
  g_autoptr(GArray) sites = t2_sites(info(), g);
  assert_int_equal(sites->len, 2);
  assert_int_equal(g_array_index(sites, WeirSite, 0).nodes[0], neg1->id);
  assert_int_equal(g_array_index(sites, WeirSite, 0).nodes[1], neg2->id);
  assert_int_equal(g_array_index(sites, WeirSite, 1).nodes[0], tr1->id);
  assert_int_equal(g_array_index(sites, WeirSite, 1).nodes[1], tr2->id);
  guint neg2_id = neg2->id, tr1_id = tr1->id;
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  assert_int_equal(t2_apply_all(g, info(), NULL), 2);
  assert_int_equal(t2_count_ops(g, "Neg"), 0);
  assert_int_equal(t2_count_ops(g, "Transpose"), 1);
  t2_assert_same(before, g, NULL, 0);
  assert_int_equal(t2_check_every_site(info(), before, NULL, 0), 2);

  WeirSite mixed = t2_site(s, 2, (guint[]){neg2_id, tr1_id});
  g_autofree char *r = t2_reason(info(), before, &mixed, NULL);
  assert_string_equal(r, "'neg2' (Neg) and 'tr1' (Transpose) are not two "
                         "Neg or two Transpose nodes");
}

/* One tasklet per case in a map over i, reading A[i] (dtype of the case)
 * and writing B[i] (f64). */
typedef struct {
  WeirDType in;
  const char *code;
  const char *simplified; /* NULL: nothing to simplify */
} TaskletCase;

static WeirGraph *tasklet_graph(const TaskletCase *tc, guint *id) {
  WeirState *s;
  WeirGraph *g = t2_graph("tasklet", &s);
  t2_array(g, "A", tc->in, "8", FALSE);
  t2_array(g, "B", WEIR_DTYPE_F64, "8", FALSE);
  WeirNode *exit = NULL;
  const char *params[] = {"i", NULL}, *ranges[] = {"0:8", NULL};
  WeirNode *entry = weir_state_add_map(g, s, "m", params, ranges,
                                       WEIR_SCHEDULE_SEQUENTIAL, &exit, NULL);
  weir_node_add_in_conn(entry, "IN_A");
  weir_node_add_out_conn(entry, "OUT_A");
  weir_node_add_in_conn(exit, "IN_B");
  weir_node_add_out_conn(exit, "OUT_B");
  const char *tin[] = {"a", NULL}, *tout[] = {"b", NULL};
  WeirNode *t = weir_state_add_tasklet(g, s, "t", tin, tout, tc->code);
  WeirNode *aa = t2_access(g, s, "A"), *ba = t2_access(g, s, "B");
  assert_non_null(weir_state_add_memlet(g, s, aa->id, NULL, entry->id, "IN_A",
                                        "A", "0:8", NULL));
  assert_non_null(weir_state_add_memlet(g, s, entry->id, "OUT_A", t->id, "a",
                                        "A", "i", NULL));
  assert_non_null(weir_state_add_memlet(g, s, t->id, "b", exit->id, "IN_B", "B",
                                        "i", NULL));
  assert_non_null(weir_state_add_memlet(g, s, exit->id, "OUT_B", ba->id, NULL,
                                        "B", "0:8", NULL));
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(g, &err))
    fail_msg("%s: %s", tc->code, err->message);
  *id = t->id;
  return g;
}

static void test_tasklets(void **state) {
  (void)state;
  const TaskletCase cases[] = {
      {WEIR_DTYPE_F64, "b = -(-a) * 1", "b = a"},
      {WEIR_DTYPE_F64, "b = 1 * a / 1 - 0", "b = a"},
      {WEIR_DTYPE_F64, "b = a + -0.0", "b = a"},
      {WEIR_DTYPE_F32, "t = a * 1.0\nb = exp(t + 0) * 1",
       "t = a\nb = exp(t + "
       "0)"},
      {WEIR_DTYPE_I32, "b = (a + 0) * (0 + a)", "b = a * a"},
      {WEIR_DTYPE_F64, "b = a + 0", NULL},    /* signed zero */
      {WEIR_DTYPE_F64, "b = a - -0.0", NULL}, /* signed zero */
      {WEIR_DTYPE_U8, "b = a * 1", NULL},     /* u8 * 1 is i32 */
      {WEIR_DTYPE_I32, "b = a * 1.0", NULL},  /* i32 * 1.0 is f64 */
      {WEIR_DTYPE_BOOL, "b = -(-a)", NULL},   /* bool promotes */
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    guint id;
    g_autoptr(WeirGraph) g = tasklet_graph(&cases[i], &id);
    WeirState *s = g_ptr_array_index(g->states, 0);
    WeirSite site = t2_site(s, 1, &id);
    if (!cases[i].simplified) {
      assert_int_equal(t2_n_sites(info(), g), 0);
      g_autofree char *r = t2_reason(info(), g, &site, NULL);
      assert_string_equal(r, "tasklet 't' has nothing to simplify");
      continue;
    }
    g_autoptr(GArray) sites = t2_sites(info(), g);
    assert_int_equal(sites->len, 1);
    assert_int_equal(g_array_index(sites, WeirSite, 0).nodes[0], id);
    g_autoptr(WeirGraph) before = weir_graph_copy(g);
    WeirApplyReport report;
    t2_apply(g, info(), &site, NULL, NULL, &report);
    WeirNode *t = weir_graph_node(g, id, NULL);
    assert_string_equal(t->code_text, cases[i].simplified);
    t2_assert_same(before, g, NULL, 0);
    if (report.flops_before.known && report.flops_after.known &&
        weir_dtype_is_float(cases[i].in))
      assert_true(report.flops_after.value < report.flops_before.value);
    weir_apply_report_clear(&report);
  }
}

/* Every legal site of the samples and bundled models (imported and
 * expanded) keeps the outputs.  The transformer computes x * 1 on an
 * integer from its shape: a site. */
static void test_samples_and_models(void **state) {
  (void)state;
  for (guint i = 0; i < t2_n_samples; i++) {
    g_autoptr(WeirGraph) g = t2_load_sample(t2_samples[i].file);
    g_autoptr(GHashTable) b = t2_bindings(t2_samples[i].symbols);
    t2_check_every_site(info(), g, b, 0);
  }
  for (guint i = 0; i < t2_n_models; i++) {
    g_autoptr(GHashTable) b = t2_bindings(t2_models[i].symbols);
    g_autoptr(WeirGraph) g = t2_import_model(t2_models[i].name);
    guint legal = g_strcmp0(t2_models[i].name, "resnet")
                      ? t2_check_every_site(info(), g, b, 0)
                      : t2_count_legal(info(), g);
    assert_int_equal(legal,
                     g_strcmp0(t2_models[i].name, "transformer") ? 0 : 1);
    g_autoptr(WeirGraph) e = t2_expanded_model(t2_models[i].name);
    assert_int_equal(t2_count_legal(info(), e), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_library_identities),
      cmocka_unit_test(test_library_rejections),
      cmocka_unit_test(test_signed_zero),
      cmocka_unit_test(test_pairs),
      cmocka_unit_test(test_tasklets),
      cmocka_unit_test(test_samples_and_models),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
