/* test-evaluate.c — weir_evaluate (compile, run, validate, time), the
 * results text it leaves in a session step, finding a node's code in
 * generated source, and writing the source files.  Every test uses a
 * private cache directory (runtime-fixture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "runtime-fixture.h"
#include "weir-codegen.h"
#include "weir-evaluate.h"
#include "weir-expr.h"
#include "weir-json.h"

static int setup(void **state) {
  *state = fixture_new();
  return 0;
}

static int teardown(void **state) {
  fixture_free(*state);
  return 0;
}

static WeirGraph *load_sample(const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_load(path, &err);
  if (!g)
    fail_msg("%s: %s", name, err->message);
  return g;
}

static GHashTable *bind_n(gint64 n) {
  GHashTable *b = weir_bindings_new();
  gint64 *v = g_new(gint64, 1);
  *v = n;
  g_hash_table_insert(b, g_strdup("N"), v);
  return b;
}

typedef struct {
  guint calls;
  double last;
  gboolean monotonic;
  char *last_phase;
} Progress;

static void on_progress(double f, const char *phase, gpointer user) {
  Progress *p = user;
  if (p->calls && f < p->last)
    p->monotonic = FALSE;
  p->calls++;
  p->last = f;
  g_free(p->last_phase);
  p->last_phase = g_strdup(phase);
}

/* The program against itself: it matches, every argument is compared,
 * there are as many timings as repetitions, and progress runs from 0 to 1
 * in order. */
static void test_self_matches(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(GHashTable) b = bind_n(1000);
  WeirEvaluateOptions o = {.warmup = 1, .repetitions = 4, .compile = &f->opts};
  Progress p = {.monotonic = TRUE};
  WeirEvaluation e;
  g_autoptr(GError) err = NULL;
  assert_true(weir_evaluate(g, g, b, &o, NULL, on_progress, &p, &e, &err));
  assert_true(e.validated);
  assert_true(e.matches);
  assert_null(e.mismatch);
  assert_int_equal(e.n_compared, 3);
  assert_true(e.max_abs_error == 0.0);
  assert_int_equal(e.bench.repetitions, 4);
  assert_true(e.bench.median > 0 && e.bench.min <= e.bench.median);
  assert_true(e.reference_seconds > 0);
  assert_true(p.monotonic);
  assert_true(p.calls >= 6);
  assert_true(p.last == 1.0);
  assert_string_equal(p.last_phase, "done");
  g_free(p.last_phase);

  /* A second evaluation finds the object in the cache. */
  WeirEvaluation e2;
  assert_true(weir_evaluate(g, NULL, b, &o, NULL, NULL, NULL, &e2, &err));
  assert_true(e2.cache_hit);
  assert_false(e2.validated);
  weir_evaluation_clear(&e2);

  /* The results text reads back. */
  g_autofree char *json = weir_evaluation_to_json(&e, "bench");
  double median = 0;
  assert_true(weir_evaluation_median_from_json(json, &median));
  assert_true(median == e.bench.median);
  assert_non_null(strstr(json, "\"label\":\"bench\""));
  assert_false(weir_evaluation_median_from_json("{\"x\": 1}", NULL));
  assert_false(weir_evaluation_median_from_json("not json", NULL));
  g_autofree char *line = weir_evaluation_describe_json(json);
  assert_non_null(line);
  assert_true(g_str_has_prefix(line, "bench: "));
  assert_non_null(strstr(line, "(original "));
  assert_true(g_str_has_suffix(line, ", outputs match"));
  assert_null(weir_evaluation_describe_json("[1]"));
  weir_evaluation_clear(&e);
}

/* A program that computes something else is caught, naming the output. */
static void test_mismatch(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(WeirGraph) wrong = weir_graph_copy(g);
  WeirNode *t = weir_graph_node(wrong, 8, NULL);
  assert_non_null(t);
  assert_true(weir_tasklet_set_code(t, "c = a - b"));
  g_autoptr(GHashTable) b = bind_n(64);
  WeirEvaluateOptions o = {.repetitions = 1, .compile = &f->opts};
  WeirEvaluation e;
  g_autoptr(GError) err = NULL;
  assert_true(weir_evaluate(wrong, g, b, &o, NULL, NULL, NULL, &e, &err));
  assert_true(e.validated);
  assert_false(e.matches);
  assert_non_null(e.mismatch);
  assert_non_null(strstr(e.mismatch, "'C'"));
  assert_true(e.max_abs_error > 0.01);
  weir_evaluation_clear(&e);
}

/* Inputs from tensors instead of random values (the symbol N is bound from
 * their shape) and expected outputs: a right expectation matches, a wrong
 * one is a mismatch naming the output; a tensor of the wrong shape or
 * dtype, or for no argument, is an error naming the argument. */
static WeirTensor *filled(WeirDType dtype, gint64 n, double v) {
  WeirTensor *t = weir_tensor_new(dtype, 1, &n);
  for (gint64 i = 0; i < n; i++)
    weir_tensor_set(t, i, v * (double)(i % 7));
  return t;
}

static void test_inputs_and_expected(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(GHashTable) inputs = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  g_autoptr(GHashTable) expected = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  g_hash_table_insert(inputs, g_strdup("A"), filled(WEIR_DTYPE_F32, 50, 1));
  g_hash_table_insert(inputs, g_strdup("B"), filled(WEIR_DTYPE_F32, 50, 2));
  g_hash_table_insert(expected, g_strdup("C"), filled(WEIR_DTYPE_F32, 50, 3));
  WeirEvaluateOptions o = {.repetitions = 1,
                           .compile = &f->opts,
                           .inputs = inputs,
                           .expected = expected};
  WeirEvaluation e;
  g_autoptr(GError) err = NULL;
  /* no bindings: N comes from the inputs */
  assert_true(weir_evaluate(g, NULL, NULL, &o, NULL, NULL, NULL, &e, &err));
  assert_true(e.validated);
  assert_true(e.matches);
  assert_int_equal(e.n_expected, 1);
  assert_int_equal(e.n_compared, 1);
  weir_evaluation_clear(&e);

  /* a wrong expectation: a mismatch naming C and what it was against */
  g_hash_table_insert(expected, g_strdup("C"), filled(WEIR_DTYPE_F32, 50, 4));
  assert_true(weir_evaluate(g, g, NULL, &o, NULL, NULL, NULL, &e, &err));
  assert_false(e.matches);
  assert_non_null(strstr(e.mismatch, "'C'"));
  assert_non_null(strstr(e.mismatch, "expected output"));
  /* against the original and the expectation */
  assert_int_equal(e.n_compared, 4);
  weir_evaluation_clear(&e);

  /* wrong shape with N bound to 64 */
  g_autoptr(GHashTable) b = bind_n(64);
  assert_false(weir_evaluate(g, NULL, b, &o, NULL, NULL, NULL, &e, &err));
  assert_non_null(strstr(err->message, "f32[64], but the tensor is f32[50]"));
  g_clear_error(&err);
  /* wrong dtype */
  g_hash_table_remove_all(expected);
  g_hash_table_insert(inputs, g_strdup("B"), filled(WEIR_DTYPE_I32, 50, 2));
  assert_false(weir_evaluate(g, NULL, NULL, &o, NULL, NULL, NULL, &e, &err));
  assert_non_null(strstr(err->message, "input 'B' is f32[50], but the tensor "
                                       "is i32[50]"));
  g_clear_error(&err);
  /* no such argument */
  g_hash_table_remove(inputs, "B");
  g_hash_table_insert(inputs, g_strdup("Z"), filled(WEIR_DTYPE_F32, 50, 2));
  assert_false(weir_evaluate(g, NULL, NULL, &o, NULL, NULL, NULL, &e, &err));
  assert_non_null(strstr(err->message, "input 'Z'"));
  assert_non_null(strstr(err->message, "arguments: A, B, C"));
}

/* A cancelled evaluation stops with G_IO_ERROR_CANCELLED; an unbound
 * symbol is an error naming the argument. */
static void test_cancel_and_errors(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(GHashTable) b = bind_n(64);
  g_autoptr(GCancellable) c = g_cancellable_new();
  g_cancellable_cancel(c);
  WeirEvaluateOptions o = {.compile = &f->opts};
  WeirEvaluation e;
  g_autoptr(GError) err = NULL;
  assert_false(weir_evaluate(g, NULL, b, &o, c, NULL, NULL, &e, &err));
  assert_true(g_error_matches(err, G_IO_ERROR, G_IO_ERROR_CANCELLED));
  g_clear_error(&err);

  assert_false(weir_evaluate(g, NULL, NULL, &o, NULL, NULL, NULL, &e, &err));
  assert_non_null(err);
  assert_non_null(strstr(err->message, "argument 'A'"));
}

/* `weir run --check`: the reference run by the interpreter, no timed runs,
 * the arguments after the checked run and one comparison per argument;
 * a wrong program differs from the interpreter's run of the right one. */
static void test_interpreted_reference(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(GHashTable) b = bind_n(40);
  WeirEvaluateOptions o = {
      .reference_interpreted = TRUE, .no_timing = TRUE, .compile = &f->opts};
  WeirEvaluation e;
  g_autoptr(GError) err = NULL;
  assert_true(weir_evaluate(g, g, b, &o, NULL, NULL, NULL, &e, &err));
  assert_true(e.validated);
  assert_true(e.matches);
  assert_int_equal(e.bench.repetitions, 0);
  assert_non_null(e.cache_key);
  assert_int_equal(strlen(e.cache_key), 64);
  assert_int_equal(e.comparisons->len, 3);
  for (guint i = 0; i < e.comparisons->len; i++) {
    const WeirComparison *c = g_ptr_array_index(e.comparisons, i);
    assert_true(c->ok);
    assert_string_equal(c->against, "the interpreter");
    assert_null(c->detail);
  }
  /* the outputs: C = A + B of the inputs by the random rule */
  const WeirTensor *x = g_hash_table_lookup(e.outputs, "A");
  const WeirTensor *y = g_hash_table_lookup(e.outputs, "B");
  const WeirTensor *z = g_hash_table_lookup(e.outputs, "C");
  assert_non_null(x);
  assert_non_null(y);
  assert_non_null(z);
  g_autoptr(WeirTensor) want_a =
      weir_evaluate_random_input(weir_graph_container(g, "A"), b, 1, &err);
  assert_true(weir_tensor_allclose(x, want_a, 0, 0, NULL, NULL));
  for (gint64 i = 0; i < z->count; i++)
    assert_float_equal(weir_tensor_get(z, i),
                       weir_tensor_get(x, i) + weir_tensor_get(y, i), 1e-6);
  weir_evaluation_clear(&e);
  assert_null(e.outputs);
  assert_null(e.comparisons);

  g_autoptr(WeirGraph) wrong = weir_graph_copy(g);
  WeirNode *t = weir_graph_node(wrong, 8, NULL);
  assert_non_null(t);
  assert_true(weir_tasklet_set_code(t, "c = a - b"));
  assert_true(weir_evaluate(wrong, g, b, &o, NULL, NULL, NULL, &e, &err));
  assert_false(e.matches);
  gboolean c_differs = FALSE;
  for (guint i = 0; i < e.comparisons->len; i++) {
    const WeirComparison *c = g_ptr_array_index(e.comparisons, i);
    if (strcmp(c->argument, "C") == 0) {
      c_differs = !c->ok && c->detail && c->max_abs_error > 0.01;
      assert_true(c->rtol > 0);
    }
  }
  assert_true(c_differs);
  weir_evaluation_clear(&e);
}

/* The one rule for inputs nobody gave (weir_evaluate_random_input): the
 * container's shape, weir_tensor_fill_random with seed + its id; and
 * weir_evaluate fills its inputs by it: C = A + B of vector_add checks
 * against A + B computed from the rule with the same seed, and not with
 * another seed. */
static void test_random_input_rule(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(GHashTable) b = bind_n(100);
  const WeirContainer *a = weir_graph_container(g, "A");
  const WeirContainer *bc = weir_graph_container(g, "B");
  const WeirContainer *cc = weir_graph_container(g, "C");
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirTensor) x = weir_evaluate_random_input(a, b, 5, &err);
  assert_non_null(x);
  assert_int_equal(x->dtype, a->dtype);
  assert_int_equal(x->rank, 1);
  assert_int_equal(x->shape[0], 100);
  const gint64 n = 100;
  g_autoptr(WeirTensor) want = weir_tensor_new(a->dtype, 1, &n);
  weir_tensor_fill_random(want, 5 + a->id);
  assert_true(weir_tensor_allclose(x, want, 0, 0, NULL, NULL));
  g_autoptr(WeirTensor) y = weir_evaluate_random_input(bc, b, 5, &err);
  assert_false(weir_tensor_allclose(x, y, 0, 0, NULL, NULL));

  /* C = A + B from the rule's A and B */
  g_autoptr(WeirTensor) sum = weir_tensor_new(cc->dtype, 1, &n);
  for (gint64 i = 0; i < n; i++)
    weir_tensor_set(sum, i, weir_tensor_get(x, i) + weir_tensor_get(y, i));
  g_autoptr(GHashTable) expected = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(expected, cc->name, sum);
  WeirEvaluateOptions o = {
      .seed = 5, .expected = expected, .compile = &f->opts};
  WeirEvaluation e;
  assert_true(weir_evaluate(g, NULL, b, &o, NULL, NULL, NULL, &e, &err));
  assert_true(e.validated);
  assert_true(e.matches);
  weir_evaluation_clear(&e);
  o.seed = 6;
  assert_true(weir_evaluate(g, NULL, b, &o, NULL, NULL, NULL, &e, &err));
  assert_false(e.matches);
  weir_evaluation_clear(&e);

  /* an unbound symbol: weir_expr_eval's error, naming it */
  g_autoptr(WeirTensor) none = weir_evaluate_random_input(a, NULL, 5, &err);
  assert_null(none);
  assert_non_null(strstr(err->message, "N"));
}

/* The scope of a map runs from its comment to its closing brace; the
 * tasklet inside lies within it; an access node has no code. */
static void test_node_lines(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(GError) err = NULL;
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  assert_non_null(src);
  g_auto(GStrv) lines = g_strsplit(src, "\n", -1);
  guint a = 0, z = 0, ta = 0, tz = 0;
  assert_true(weir_codegen_node_lines(src, 7, &a, &z));
  assert_non_null(strstr(lines[a], "/* map 7 'add'"));
  g_autofree char *closing = g_strstrip(g_strdup(lines[z]));
  assert_string_equal(closing, "}");
  assert_true(weir_codegen_node_lines(src, 8, &ta, &tz));
  assert_non_null(strstr(lines[ta], "/* tasklet 8 'add'"));
  assert_true(a < ta && tz < z);
  assert_false(weir_codegen_node_lines(src, 5, NULL, NULL));
  assert_false(weir_codegen_node_lines(src, 999, NULL, NULL));
}

static void test_write_files(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autofree char *dir = g_build_filename(f->dir, "out", "kernel", NULL);
  g_autofree char *c = NULL, *h = NULL;
  g_autoptr(GError) err = NULL;
  assert_true(weir_codegen_write_files(g, NULL, dir, &c, &h, &err));
  assert_true(g_str_has_suffix(c, "vector_add.c"));
  assert_true(g_str_has_suffix(h, "vector_add.h"));
  g_autofree char *text = NULL;
  assert_true(g_file_get_contents(h, &text, NULL, NULL));
  assert_non_null(strstr(text, "vector_add_run"));
  /* A file where the directory should go. */
  g_autofree char *bad = g_build_filename(c, "sub", NULL);
  assert_false(weir_codegen_write_files(g, NULL, bad, NULL, NULL, &err));
  assert_true(g_error_matches(err, WEIR_ERROR, WEIR_ERROR_IO));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_self_matches, setup, teardown),
      cmocka_unit_test_setup_teardown(test_mismatch, setup, teardown),
      cmocka_unit_test_setup_teardown(test_inputs_and_expected, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_cancel_and_errors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_random_input_rule, setup, teardown),
      cmocka_unit_test_setup_teardown(test_interpreted_reference, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_node_lines, setup, teardown),
      cmocka_unit_test_setup_teardown(test_write_files, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
