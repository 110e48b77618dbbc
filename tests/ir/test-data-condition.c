/* test-data-condition.c — transition conditions that read data: a name in
 * a condition that is a container of one element (rank 0 or every
 * dimension 1) reads its value, as ONNX If and Loop need (their condition
 * and trip count are run-time data).  Checked: validation (accepted for
 * scalars of any dtype, refused for larger containers, the names listed
 * by weir_transition_data_reads), the interpreter and the generated code
 * giving the same results, and the JSON round trip.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "../core/runtime-fixture.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-validate.h"

#define S(...) ((const char *const[]){__VA_ARGS__, NULL})

static void add(WeirGraph *g, const char *name, WeirDType dtype, guint rank,
                gint64 dim, gboolean transient) {
  WeirExpr *shape[1] = {weir_expr_const(dim)};
  assert_non_null(
      weir_graph_add_container(g, name, dtype, rank, shape, transient, NULL));
  weir_expr_unref(shape[0]);
}

static void edge(WeirGraph *g, WeirState *s, WeirNode *src,
                 const char *src_conn, WeirNode *dst, const char *dst_conn,
                 const char *data, const char *subset) {
  assert_non_null(weir_state_add_memlet(g, s, src->id, src_conn, dst->id,
                                        dst_conn, data, subset, NULL));
}

/* x: f64 scalar argument.  init sets flag = x > 0 (bool []) and n = 0
 * (i64 [1]); "flag" branches to pos (out[0] = 1) or, otherwise, to neg
 * (out[0] = -1); then a loop runs while "n < 5 && x > 1.5" (one symbol-free
 * condition reading two containers of different dtypes), adding 1 to n and
 * to out[1]; done writes out[2] = n. */
static WeirGraph *build(void) {
  WeirGraph *g = weir_graph_new("data_condition");
  add(g, "x", WEIR_DTYPE_F64, 0, 1, FALSE);
  add(g, "out", WEIR_DTYPE_I64, 1, 3, FALSE);
  add(g, "flag", WEIR_DTYPE_BOOL, 0, 1, TRUE);
  add(g, "n", WEIR_DTYPE_I64, 1, 1, TRUE);
  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *pos = weir_graph_add_state(g, "pos");
  WeirState *neg = weir_graph_add_state(g, "neg");
  WeirState *guard = weir_graph_add_state(g, "guard");
  WeirState *body = weir_graph_add_state(g, "body");
  WeirState *done = weir_graph_add_state(g, "done");

  WeirNode *t = weir_state_add_tasklet(g, init, "test", S("a"), S("f", "z"),
                                       "f = a > 0\nz = 0");
  edge(g, init, weir_state_add_access(g, init, "x"), NULL, t, "a", "x", "");
  edge(g, init, t, "f", weir_state_add_access(g, init, "flag"), NULL, "flag",
       "");
  edge(g, init, t, "z", weir_state_add_access(g, init, "n"), NULL, "n", "0");
  t = weir_state_add_tasklet(g, pos, "one", NULL, S("o"), "o = 1");
  edge(g, pos, t, "o", weir_state_add_access(g, pos, "out"), NULL, "out", "0");
  t = weir_state_add_tasklet(g, neg, "minus", NULL, S("o"), "o = -1");
  edge(g, neg, t, "o", weir_state_add_access(g, neg, "out"), NULL, "out", "0");
  t = weir_state_add_tasklet(g, body, "inc", S("a"), S("b", "c"),
                             "b = a + 1\nc = 1");
  edge(g, body, weir_state_add_access(g, body, "n"), NULL, t, "a", "n", "0");
  edge(g, body, t, "b", weir_state_add_access(g, body, "n"), NULL, "n", "0");
  WeirMemlet *m = weir_state_add_memlet(
      g, body, t->id, "c", weir_state_add_access(g, body, "out")->id, NULL,
      "out", "1", NULL);
  assert_non_null(m);
  m->wcr = WEIR_WCR_SUM;
  t = weir_state_add_tasklet(g, done, "count", S("a"), S("o"), "o = a");
  edge(g, done, weir_state_add_access(g, done, "n"), NULL, t, "a", "n", "0");
  edge(g, done, t, "o", weir_state_add_access(g, done, "out"), NULL, "out",
       "2");

  assert_non_null(
      weir_graph_add_transition(g, init->id, pos->id, "flag", NULL));
  assert_non_null(weir_graph_add_transition(g, init->id, neg->id, NULL, NULL));
  assert_non_null(weir_graph_add_transition(g, pos->id, guard->id, NULL, NULL));
  assert_non_null(weir_graph_add_transition(g, neg->id, guard->id, NULL, NULL));
  assert_non_null(weir_graph_add_transition(g, guard->id, body->id,
                                            "n < 5 && x > 1.5", NULL));
  assert_non_null(
      weir_graph_add_transition(g, body->id, guard->id, NULL, NULL));
  assert_non_null(
      weir_graph_add_transition(g, guard->id, done->id, NULL, NULL));
  return g;
}

static void expect(gint64 *o, gint64 a, gint64 b, gint64 c) {
  assert_int_equal(o[0], a);
  assert_int_equal(o[1], b);
  assert_int_equal(o[2], c);
}

static void run(WeirGraph *g, WeirKernel *k, double xv, gint64 *o) {
  g_autoptr(GError) err = NULL;
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  gint64 three = 3;
  WeirTensor *x = weir_tensor_new(WEIR_DTYPE_F64, 0, NULL);
  WeirTensor *out = weir_tensor_new(WEIR_DTYPE_I64, 1, &three);
  weir_tensor_set(x, 0, xv);
  g_hash_table_insert(args, "x", x);
  g_hash_table_insert(args, "out", out);
  gboolean ok = k ? weir_kernel_run(k, NULL, args, &err)
                  : weir_interpret(g, NULL, args, NULL, &err);
  if (!ok)
    fail_msg("%s: %s", k ? "run" : "interpret", err->message);
  for (gint64 i = 0; i < 3; i++)
    o[i] = (gint64)weir_tensor_get(out, i);
}

static void test_validate(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build();
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(g, &err))
    fail_msg("validate: %s", err->message);
  /* the reads, in order of first appearance, are the condition's inputs */
  WeirTransition *tr = NULL;
  for (guint i = 0; i < g->transitions->len && !tr; i++) {
    WeirTransition *t = g_ptr_array_index(g->transitions, i);
    if (g_strcmp0(t->condition_text, "n < 5 && x > 1.5") == 0)
      tr = t;
  }
  assert_non_null(tr);
  g_autoptr(GPtrArray) reads = weir_transition_data_reads(g, tr);
  assert_int_equal(reads->len, 2);
  assert_string_equal(g_ptr_array_index(reads, 0), "n");
  assert_string_equal(g_ptr_array_index(reads, 1), "x");
  assert_true(weir_graph_condition_reads(g, "flag"));
  assert_false(weir_graph_condition_reads(g, "out"));

  /* a container of more than one element cannot be a condition */
  WeirState *s0 = weir_graph_state(g, g->start);
  assert_non_null(
      weir_graph_add_transition(g, s0->id, s0->id, "out > 0", NULL));
  g_clear_error(&err);
  assert_false(weir_graph_validate(g, &err));
  assert_non_null(strstr(err->message, "reads container 'out', which is not "
                                       "a scalar"));
}

static void test_unknown_name(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build();
  WeirState *s0 = weir_graph_state(g, g->start);
  assert_non_null(
      weir_graph_add_transition(g, s0->id, s0->id, "nothing > 0", NULL));
  g_autoptr(GError) err = NULL;
  assert_false(weir_graph_validate(g, &err));
  assert_non_null(strstr(err->message, "nothing"));
}

static void test_run(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build();
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(g, &err))
    fail_msg("validate: %s", err->message);
  Fixture *f = fixture_new();
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("compile: %s", err->message);
  for (guint pass = 0; pass < 2; pass++) {
    WeirKernel *kk = pass ? k : NULL;
    gint64 o[3];
    run(g, kk, 3.0, o); /* flag; five iterations */
    expect(o, 1, 5, 5);
    run(g, kk, 1.0, o); /* flag; x > 1.5 fails: no iteration */
    expect(o, 1, 0, 0);
    run(g, kk, -2.0, o); /* otherwise */
    expect(o, -1, 0, 0);
  }
  fixture_free(f);
}

static void test_json_round_trip(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build();
  g_autofree char *text = weir_graph_to_json(g);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) h =
      weir_graph_from_json(text, -1, "round-trip.json", &err);
  if (!h)
    fail_msg("from json: %s", err->message);
  g_autofree char *again = weir_graph_to_json(h);
  assert_string_equal(text, again);
  assert_non_null(strstr(text, "\"n < 5 && x > 1.5\""));
  if (!weir_graph_validate(h, &err))
    fail_msg("validate: %s", err->message);
  gint64 o[3];
  run(h, NULL, 3.0, o);
  expect(o, 1, 5, 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_validate),
      cmocka_unit_test(test_unknown_name),
      cmocka_unit_test(test_run),
      cmocka_unit_test(test_json_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
