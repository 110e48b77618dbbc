/* test-scan.c — ONNX Scan imported as Weir control flow: a nested program
 * node whose program loops over the scan axis (states init, guard, step,
 * fin; opset 8 adds an outer loop over the batch axis) with the body
 * subgraph as a nested program in its step state.  The models are the
 * backend node tests test_scan9_sum (opset 9) and test_scan_sum (opset 8,
 * batch axis), run on hand-made inputs with hand-computed results, by
 * the interpreter and as compiled code.
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
#include "weir-kernels.h"
#include "weir-validate.h"

static char *data_path(const char *rel) {
  const char *root = g_getenv("WEIR_ONNX_TESTDATA");
  g_autofree char *path = g_build_filename(
      root ? root : "/usr/share/libonnx-testdata/data", rel, NULL);
  return g_file_test(path, G_FILE_TEST_EXISTS) ? g_steal_pointer(&path) : NULL;
}

static WeirNode *only_nested(const WeirGraph *g, WeirState **state_out) {
  WeirNode *found = NULL;
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_NESTED) {
        assert_null(found);
        found = n;
        if (state_out)
          *state_out = s;
      }
    }
  }
  return found;
}

static WeirState *state_labelled(const WeirGraph *g, const char *label) {
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    if (g_strcmp0(s->label, label) == 0)
      return s;
  }
  return NULL;
}

static void run_scan(const char *rel, gboolean batch) {
  g_autofree char *path = data_path(rel);
  if (!path) {
    print_message("libonnx-testdata not installed (%s): skipping\n", rel);
    skip();
  }
  g_autoptr(GError) err = NULL;
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  WeirOnnxImportOptions opts = {.allow_any_opset = TRUE, .names = names};
  g_autoptr(WeirGraph) g = weir_onnx_import(path, &opts, &err);
  if (!g)
    fail_msg("import: %s", err->message);

  /* one nested node: the loop; its step state holds the body */
  WeirNode *scan = only_nested(g, NULL);
  assert_non_null(scan);
  WeirGraph *prog = scan->nested;
  assert_int_equal(prog->states->len, batch ? 7 : 4);
  assert_int_equal(prog->transitions->len, batch ? 8 : 4);
  WeirState *step = state_labelled(prog, "step");
  assert_non_null(step);
  WeirNode *body = only_nested(prog, NULL);
  assert_non_null(body);
  assert_true(weir_node_has_in_conn(body, "sum_in"));
  assert_true(weir_node_has_out_conn(body, "scan_out"));

  guint count = 0;
  if (!weir_expand_all(g, NULL, &count, &err))
    fail_msg("expand: %s", err->message);
  assert_true(count >= 1); /* the body's Add (and Identity) */

  /* initial = (1, 2), x = ((1, 2), (3, 4), (5, 6)) */
  gint64 s_shape[] = {1, 2}, x_shape[] = {1, 3, 2}, z_shape[] = {1, 3, 2};
  guint off = batch ? 0 : 1;
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  WeirTensor *init = weir_tensor_new(WEIR_DTYPE_F32, 2 - off, s_shape + off);
  WeirTensor *x = weir_tensor_new(WEIR_DTYPE_F32, 3 - off, x_shape + off);
  WeirTensor *y = weir_tensor_new(WEIR_DTYPE_F32, 2 - off, s_shape + off);
  WeirTensor *z = weir_tensor_new(WEIR_DTYPE_F32, 3 - off, z_shape + off);
  for (gint64 i = 0; i < 2; i++)
    weir_tensor_set(init, i, (double)(i + 1));
  for (gint64 i = 0; i < 6; i++) {
    weir_tensor_set(x, i, (double)(i + 1));
    weir_tensor_set(z, i, -7);
  }
  g_hash_table_insert(args, g_strdup(g_hash_table_lookup(names, "initial")),
                      init);
  g_hash_table_insert(args, g_strdup(g_hash_table_lookup(names, "x")), x);
  g_hash_table_insert(args, g_strdup(g_hash_table_lookup(names, "y")), y);
  g_hash_table_insert(args, g_strdup(g_hash_table_lookup(names, "z")), z);
  static const double want_z[] = {2, 4, 5, 8, 10, 14};
  /* interpreted, then compiled (the outputs reset in between) */
  Fixture *f = fixture_new();
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("compile: %s", err->message);
  for (guint pass = 0; pass < 2; pass++) {
    for (gint64 i = 0; i < 6; i++)
      weir_tensor_set(z, i, -7);
    for (gint64 i = 0; i < 2; i++)
      weir_tensor_set(y, i, -7);
    if (pass == 0 && !weir_interpret(g, NULL, args, NULL, &err))
      fail_msg("interpret: %s", err->message);
    if (pass == 1 && !weir_kernel_run(k, NULL, args, &err))
      fail_msg("run: %s", err->message);
    for (gint64 i = 0; i < 6; i++)
      assert_float_equal(weir_tensor_get(z, i), want_z[i], 0);
    assert_float_equal(weir_tensor_get(y, 0), 10, 0);
    assert_float_equal(weir_tensor_get(y, 1), 14, 0);
  }
  fixture_free(f);
}

static void test_scan9_sum(void **state) {
  (void)state;
  run_scan("node/test_scan9_sum/model.onnx", FALSE);
}

static void test_scan8_batch(void **state) {
  (void)state;
  run_scan("node/test_scan_sum/model.onnx", TRUE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scan9_sum),
      cmocka_unit_test(test_scan8_batch),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
