/* test-if-loop.c — ONNX If and Loop imported as Weir control flow: a nested
 * program node whose transitions read the condition (and the trip count)
 * as data.  The models are the backend node tests test_if (two constant
 * branches) and test_range_float_type_positive_delta_expanded (a Loop with
 * a trip count and a condition computed at run time, a loop-carried value,
 * a scan output of data-dependent length, and a body that reads a value
 * of the enclosing graph), run on hand-made inputs with hand-computed
 * results, by the interpreter and as compiled code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "../core/runtime-fixture.h"
#include "weir-expand.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-validate.h"

static char *data_path(const char *rel) {
  const char *root = g_getenv("WEIR_ONNX_TESTDATA");
  g_autofree char *path = g_build_filename(
      root ? root : "/usr/share/libonnx-testdata/data", rel, NULL);
  return g_file_test(path, G_FILE_TEST_EXISTS) ? g_steal_pointer(&path) : NULL;
}

static WeirNode *only_nested(const WeirGraph *g) {
  WeirNode *found = NULL;
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_NESTED) {
        assert_null(found);
        found = n;
      }
    }
  }
  return found;
}

static WeirGraph *import(const char *rel, GHashTable *names) {
  g_autofree char *path = data_path(rel);
  if (!path) {
    print_message("libonnx-testdata not installed (%s): skipping\n", rel);
    return NULL;
  }
  g_autoptr(GError) err = NULL;
  WeirOnnxImportOptions opts = {.allow_any_opset = TRUE, .names = names};
  WeirGraph *g = weir_onnx_import(path, &opts, &err);
  if (!g)
    fail_msg("import: %s", err->message);
  if (!weir_expand_all(g, NULL, NULL, &err))
    fail_msg("expand: %s", err->message);
  return g;
}

/* Runs g interpreted (pass 0) and compiled (pass 1) through check. */
typedef void (*Check)(GHashTable *args, GHashTable *names, guint pass);

static void run_both(WeirGraph *g, GHashTable *args, GHashTable *names,
                     Check check) {
  g_autoptr(GError) err = NULL;
  Fixture *f = fixture_new();
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("compile: %s", err->message);
  for (guint pass = 0; pass < 2; pass++) {
    if (pass == 0 && !weir_interpret(g, NULL, args, NULL, &err))
      fail_msg("interpret: %s", err->message);
    if (pass == 1 && !weir_kernel_run(k, NULL, args, &err))
      fail_msg("run: %s", err->message);
    check(args, names, pass);
  }
  fixture_free(f);
}

static WeirTensor *arg(GHashTable *args, GHashTable *names, const char *onnx) {
  WeirTensor *t = g_hash_table_lookup(args, g_hash_table_lookup(names, onnx));
  assert_non_null(t);
  return t;
}

static gboolean if_cond;

static void check_if(GHashTable *args, GHashTable *names, guint pass) {
  (void)pass;
  WeirTensor *res = arg(args, names, "res");
  for (gint64 i = 0; i < 5; i++)
    assert_float_equal(weir_tensor_get(res, i),
                       if_cond ? (double)(i + 1) : (double)(5 - i), 0);
  for (gint64 i = 0; i < 5; i++)
    weir_tensor_set(res, i, -7);
}

static void test_if(void **state) {
  (void)state;
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(WeirGraph) g = import("node/test_if/model.onnx", names);
  if (!g)
    skip();
  /* one nested node: states start, then, else; the condition reads in0 */
  WeirNode *n = only_nested(g);
  assert_non_null(n);
  WeirGraph *prog = n->nested;
  assert_int_equal(prog->states->len, 3);
  assert_int_equal(prog->transitions->len, 2);
  const WeirTransition *t = g_ptr_array_index(prog->transitions, 0);
  assert_string_equal(t->condition_text, "in0");
  g_autoptr(GPtrArray) reads = weir_transition_data_reads(prog, t);
  assert_int_equal(reads->len, 1);
  assert_null(((WeirTransition *)g_ptr_array_index(prog->transitions, 1))
                  ->condition_text);

  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  gint64 five = 5;
  WeirTensor *cond = weir_tensor_new(WEIR_DTYPE_BOOL, 0, NULL);
  WeirTensor *res = weir_tensor_new(WEIR_DTYPE_F32, 1, &five);
  g_hash_table_insert(args, g_strdup(g_hash_table_lookup(names, "cond")), cond);
  g_hash_table_insert(args, g_strdup(g_hash_table_lookup(names, "res")), res);
  /* then: 1..5; else: 5..1 */
  for (int c = 1; c >= 0; c--) {
    if_cond = c;
    weir_tensor_set(cond, 0, c);
    run_both(g, args, names, check_if);
  }
}

static double range_start, range_delta;
static gint64 range_count;

static void check_range(GHashTable *args, GHashTable *names, guint pass) {
  (void)pass;
  WeirTensor *out = arg(args, names, "output");
  WeirTensor *count = g_hash_table_lookup(args, "Loop_8_count");
  assert_non_null(count);
  assert_int_equal((gint64)weir_tensor_get(count, 0), range_count);
  for (gint64 i = 0; i < range_count; i++)
    assert_float_equal(weir_tensor_get(out, i), range_start + i * range_delta,
                       1e-6);
  weir_tensor_set(count, 0, -1);
}

static void test_range_loop(void **state) {
  (void)state;
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(WeirGraph) g = import(
      "node/test_range_float_type_positive_delta_expanded/model.onnx", names);
  if (!g)
    skip();
  WeirNode *n = only_nested(g);
  assert_non_null(n);
  /* captured 'delta' is one more input of the loop */
  assert_true(weir_node_has_in_conn(n, "in3"));
  WeirGraph *prog = n->nested;
  const WeirContainer *out = weir_graph_container(g, "output");
  assert_non_null(out);
  /* the bound is the declared length; the count says how many are valid */
  assert_string_equal(out->count, "Loop_8_count");
  gint64 bound = weir_expr_const_value(g_ptr_array_index(out->shape, 0));
  assert_int_equal(bound, 2);
  gboolean found = FALSE;
  for (guint i = 0; i < prog->transitions->len; i++) {
    const WeirTransition *t = g_ptr_array_index(prog->transitions, i);
    if (t->condition_text && strstr(t->condition_text, "in0") &&
        strstr(t->condition_text, "C"))
      found = TRUE;
  }
  assert_true(found);

  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  WeirTensor *start = weir_tensor_new(WEIR_DTYPE_F32, 0, NULL);
  WeirTensor *limit = weir_tensor_new(WEIR_DTYPE_F32, 0, NULL);
  WeirTensor *delta = weir_tensor_new(WEIR_DTYPE_F32, 0, NULL);
  WeirTensor *res = weir_tensor_new(WEIR_DTYPE_F32, 1, &bound);
  WeirTensor *count = weir_tensor_new(WEIR_DTYPE_I64, 0, NULL);
  g_hash_table_insert(args, g_strdup(g_hash_table_lookup(names, "start")),
                      start);
  g_hash_table_insert(args, g_strdup(g_hash_table_lookup(names, "limit")),
                      limit);
  g_hash_table_insert(args, g_strdup(g_hash_table_lookup(names, "delta")),
                      delta);
  g_hash_table_insert(args, g_strdup(g_hash_table_lookup(names, "output")),
                      res);
  g_hash_table_insert(args, g_strdup("Loop_8_count"), count);
  /* (start, limit, delta): two values; one value; none (limit < start) */
  static const double cases[][3] = {{1, 5, 2}, {0.5, 1, 3}, {4, 1, 1}};
  static const gint64 counts[] = {2, 1, 0};
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    range_start = cases[c][0];
    range_delta = cases[c][2];
    range_count = counts[c];
    weir_tensor_set(start, 0, cases[c][0]);
    weir_tensor_set(limit, 0, cases[c][1]);
    weir_tensor_set(delta, 0, cases[c][2]);
    run_both(g, args, names, check_range);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_if),
      cmocka_unit_test(test_range_loop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
