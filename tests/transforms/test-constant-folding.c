/* test-constant-folding.c — the constant-folding transformation: which
 * nodes it finds, why it refuses others, the constants it computes, the
 * data movement it removes, and that programs compute the same after it. */
#include "tier2-check.h"

#include "weir-validate.h"

/* T = A + B (constants), Y = X * T. */
static WeirGraph *add_mul_graph(guint *add_id, guint *mul_id) {
  WeirState *s;
  WeirGraph *g = t2_graph("fold", &s);
  const double a[] = {1, 2, 3, 4, 5, 6}, b[] = {0.5, -1, 2, 0, 10, -3};
  t2_const(g, "A", WEIR_DTYPE_F32, "2, 3", a);
  t2_const(g, "B", WEIR_DTYPE_F32, "2, 3", b);
  t2_array(g, "T", WEIR_DTYPE_F32, "2, 3", TRUE);
  t2_array(g, "X", WEIR_DTYPE_F32, "2, 3", FALSE);
  t2_array(g, "Y", WEIR_DTYPE_F32, "2, 3", FALSE);
  const char *add_in[] = {"A", "B", NULL}, *add_out[] = {"T", NULL};
  const char *mul_in[] = {"X", "T", NULL}, *mul_out[] = {"Y", NULL};
  *add_id = t2_op(g, s, "Add", "add", add_in, add_out)->id;
  *mul_id = t2_op(g, s, "Mul", "mul", mul_in, mul_out)->id;
  t2_normalize(g);
  return g;
}

static void test_folds_add(void **state) {
  (void)state;
  guint add, mul;
  g_autoptr(WeirGraph) g = add_mul_graph(&add, &mul);
  const WeirTransformInfo *t = t2_lookup("constant-folding");
  assert_int_equal(t->tier, 2);

  g_autoptr(GArray) sites = t2_sites(t, g);
  assert_int_equal(sites->len, 1);
  WeirSite site = g_array_index(sites, WeirSite, 0);
  assert_int_equal(site.n_nodes, 1);
  assert_int_equal(site.nodes[0], add);

  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirApplyReport report;
  t2_apply(g, t, &site, NULL, NULL, &report);
  /* the Add and its inputs are gone; T holds A + B */
  assert_int_equal(t2_count_ops(g, "Add"), 0);
  assert_null(weir_graph_container(g, "A"));
  assert_null(weir_graph_container(g, "B"));
  WeirContainer *tc = weir_graph_container(g, "T");
  assert_non_null(tc);
  assert_non_null(tc->initial);
  gsize size;
  const float *v = g_bytes_get_data(tc->initial, &size);
  assert_int_equal(size, 6 * sizeof(float));
  const float want[] = {1.5f, 1, 5, 4, 15, 3};
  for (int i = 0; i < 6; i++)
    assert_float_equal(v[i], want[i], 0);
  t2_assert_same(before, g, NULL, 1e-6);
  /* the Add read 2 x 24 bytes and wrote 24: gone */
  assert_true(report.bytes_before.known && report.bytes_after.known);
  assert_int_equal(report.bytes_before.value - report.bytes_after.value, 72);
  weir_apply_report_clear(&report);
  assert_int_equal(t2_n_sites(t, g), 0);
}

/* Y = X * f32(Gather(Shape(X), 2)): a shape computation that folds to
 * the constant 4, one node after the other. */
static void test_shape_chain(void **state) {
  (void)state;
  WeirState *s;
  g_autoptr(WeirGraph) g = t2_graph("shape", &s);
  t2_array(g, "X", WEIR_DTYPE_F32, "2, 3, 4", FALSE);
  t2_array(g, "S", WEIR_DTYPE_I64, "3", TRUE);
  const double two = 2;
  t2_const(g, "I", WEIR_DTYPE_I64, "", &two);
  t2_array(g, "D", WEIR_DTYPE_I64, "", TRUE);
  t2_array(g, "F", WEIR_DTYPE_F32, "", TRUE);
  t2_array(g, "Y", WEIR_DTYPE_F32, "2, 3, 4", FALSE);
  const char *sh_in[] = {"X", NULL}, *sh_out[] = {"S", NULL};
  const char *ga_in[] = {"S", "I", NULL}, *ga_out[] = {"D", NULL};
  const char *ca_in[] = {"D", NULL}, *ca_out[] = {"F", NULL};
  const char *mu_in[] = {"X", "F", NULL}, *mu_out[] = {"Y", NULL};
  WeirNode *shape = t2_op(g, s, "Shape", "shape", sh_in, sh_out);
  t2_op(g, s, "Gather", "gather", ga_in, ga_out);
  WeirNode *cast = t2_op(g, s, "Cast", "cast", ca_in, ca_out);
  weir_node_set_attr_int(cast, "to", 1); /* FLOAT */
  t2_op(g, s, "Mul", "mul", mu_in, mu_out);
  t2_normalize(g);
  const WeirTransformInfo *t = t2_lookup("constant-folding");

  /* only the Shape at first: the Gather reads S, not yet a constant */
  g_autoptr(GArray) sites = t2_sites(t, g);
  assert_int_equal(sites->len, 1);
  assert_int_equal(g_array_index(sites, WeirSite, 0).nodes[0], shape->id);

  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  assert_int_equal(t2_apply_all(g, t, NULL), 3);
  assert_int_equal(t2_count_ops(g, NULL), 1); /* the Mul */
  WeirContainer *f = weir_graph_container(g, "F");
  assert_non_null(f->initial);
  assert_float_equal(*(const float *)g_bytes_get_data(f->initial, NULL), 4.0,
                     0);
  assert_null(weir_graph_container(g, "S"));
  assert_null(weir_graph_container(g, "I"));
  assert_null(weir_graph_container(g, "D"));
  t2_assert_same(before, g, NULL, 1e-6);
  assert_true(t2_bytes(g, NULL) < t2_bytes(before, NULL));
  t2_check_every_site(t, before, NULL, 1e-6);
}

/* Nodes without inputs fold too; a result nobody reads is dropped. */
static void test_no_inputs_and_dead(void **state) {
  (void)state;
  WeirState *s;
  g_autoptr(WeirGraph) g = t2_graph("cos", &s);
  t2_array(g, "C", WEIR_DTYPE_F32, "2, 2", TRUE);
  t2_array(g, "X", WEIR_DTYPE_F32, "2, 2", FALSE);
  t2_array(g, "Y", WEIR_DTYPE_F32, "2, 2", FALSE);
  t2_array(g, "Dead", WEIR_DTYPE_I64, "2", TRUE);
  const char *co_out[] = {"C", NULL};
  WeirNode *cos = t2_op(g, s, "ConstantOfShape", "cos", NULL, co_out);
  const gint64 shape[] = {2, 2};
  weir_node_set_attr_ints(cos, "shape", shape, 2);
  weir_node_set_attr_float(cos, "value", 0.25);
  const char *add_in[] = {"X", "C", NULL}, *add_out[] = {"Y", NULL};
  t2_op(g, s, "Add", "add", add_in, add_out);
  const char *sh_in[] = {"X", NULL}, *sh_out[] = {"Dead", NULL};
  WeirNode *sh = t2_op(g, s, "Shape", "unused_shape", sh_in, sh_out);
  t2_normalize(g);
  const WeirTransformInfo *t = t2_lookup("constant-folding");
  assert_int_equal(t2_n_sites(t, g), 2);

  assert_int_equal(t2_check_every_site(t, g, NULL, 1e-6), 2);

  WeirSite site = t2_site(s, 1, &sh->id);
  t2_apply(g, t, &site, NULL, NULL, NULL);
  assert_null(weir_graph_container(g, "Dead"));
  assert_non_null(weir_graph_container(g, "X"));
  assert_int_equal(t2_count_ops(g, "Shape"), 0);
}

static void test_rejections(void **state) {
  (void)state;
  const WeirTransformInfo *t = t2_lookup("constant-folding");
  WeirState *s;
  g_autoptr(WeirGraph) g = t2_graph("bad", &s);
  weir_graph_add_symbol(g, "N");
  t2_array(g, "X", WEIR_DTYPE_F32, "N, 3", FALSE);
  t2_array(g, "S", WEIR_DTYPE_I64, "2", TRUE);
  t2_const_fill(g, "A", WEIR_DTYPE_F32, "2, 3", 1.5);
  t2_array(g, "Y", WEIR_DTYPE_F32, "2, 3", FALSE);
  t2_array(g, "Z", WEIR_DTYPE_F32, "2, 3", TRUE);
  t2_array(g, "W", WEIR_DTYPE_F32, "2, 3", FALSE);
  t2_array(g, "X2", WEIR_DTYPE_F32, "2, 3", FALSE);
  const char *sh_in[] = {"X", NULL}, *sh_out[] = {"S", NULL};
  WeirNode *sh = t2_op(g, s, "Shape", "shape", sh_in, sh_out);
  const char *r_in[] = {"A", NULL}, *r_out[] = {"Y", NULL};
  WeirNode *relu = t2_op(g, s, "Relu", "relu", r_in, r_out);
  const char *n_in[] = {"A", NULL}, *n_out[] = {"Z", NULL};
  WeirNode *neg = t2_op(g, s, "Neg", "neg", n_in, n_out);
  const char *a_in[] = {"A", "X2", NULL}, *a_out[] = {"W", NULL};
  WeirNode *add = t2_op(g, s, "Add", "add", a_in, a_out);
  t2_normalize(g);

  g_autofree char *r1 = t2_reason(t, g, &(WeirSite){s->id, 1, {sh->id}}, NULL);
  assert_string_equal(r1, "dimension 0 of 'X' is symbolic (N)");
  g_autofree char *r2 =
      t2_reason(t, g, &(WeirSite){s->id, 1, {relu->id}}, NULL);
  assert_string_equal(r2, "output 'Y' is a program argument, not a transient");
  const char *small[] = {"max-elements=4", NULL};
  g_autofree char *r3 =
      t2_reason(t, g, &(WeirSite){s->id, 1, {neg->id}}, small);
  assert_string_equal(r3,
                      "output 'Z' has 6 elements, more than max-elements (4)");
  g_autofree char *r4 = t2_reason(t, g, &(WeirSite){s->id, 1, {add->id}}, NULL);
  assert_string_equal(r4, "input 'X2' (in1) is not a constant");
  WeirNode *xa = t2_access(g, s, "X");
  g_autofree char *r5 = t2_reason(t, g, &(WeirSite){s->id, 1, {xa->id}}, NULL);
  assert_string_equal(r5, "the site is not one library node");

  /* found: the Shape (illegal: symbolic), the Relu (illegal: argument) and
   * the Neg (legal); not the Add */
  g_autoptr(GArray) sites = t2_sites(t, g);
  assert_int_equal(sites->len, 3);
  assert_int_equal(t2_count_legal(t, g), 1);
}

/* The JSON samples have no library nodes: nothing to fold. */
static void test_samples(void **state) {
  (void)state;
  const WeirTransformInfo *t = t2_lookup("constant-folding");
  for (guint i = 0; i < t2_n_samples; i++) {
    g_autoptr(WeirGraph) g = t2_load_sample(t2_samples[i].file);
    g_autoptr(GArray) sites = t2_sites(t, g);
    assert_int_equal(sites->len, 0);
  }
}

/* The transformer computes its Q/K/V slice bounds from a Shape: Shape,
 * Gather, Add, Div and three Muls fold away (their results were only
 * needed for attributes the importer already made constant, so nothing
 * reads them and they are dropped).  The other models have nothing to
 * fold, imported or expanded. */
static void test_models(void **state) {
  (void)state;
  const WeirTransformInfo *t = t2_lookup("constant-folding");
  for (guint i = 0; i < t2_n_models; i++) {
    g_autoptr(GHashTable) b = t2_bindings(t2_models[i].symbols);
    g_autoptr(WeirGraph) g = t2_import_model(t2_models[i].name);
    gboolean tf = !g_strcmp0(t2_models[i].name, "transformer");
    assert_int_equal(t2_count_legal(t, g), tf ? 1 : 0);
    g_autoptr(WeirGraph) e = t2_expanded_model(t2_models[i].name);
    assert_int_equal(t2_n_sites(t, e), 0);
    if (!tf)
      continue;
    assert_int_equal(t2_check_every_site(t, g, b, 0), 1);
    g_autoptr(WeirGraph) before = weir_graph_copy(g);
    assert_int_equal(t2_apply_all(g, t, b), 7);
    assert_int_equal(t2_count_ops(g, "Shape"), 0);
    assert_int_equal(t2_count_ops(g, "Gather"), 0);
    assert_int_equal(t2_count_ops(before, NULL) - t2_count_ops(g, NULL), 7);
    assert_true(t2_bytes(g, b) < t2_bytes(before, b));
    t2_assert_reference(g, "transformer", b, 1e-4);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_folds_add),
      cmocka_unit_test(test_shape_chain),
      cmocka_unit_test(test_no_inputs_and_dead),
      cmocka_unit_test(test_rejections),
      cmocka_unit_test(test_samples),
      cmocka_unit_test(test_models),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
