/* test-onnx-save.c — writing an ONNX model back with new initializer
 * values (weir_onnx_save_with_initializers): Weir reads back exactly the
 * new values and the rest of the model; Debian's python3-onnx loads the
 * file, its checker accepts it, and a NumPy evaluation of the graph
 * (tests/onnx/check-onnx-numpy.py) agrees with Weir's interpreter on it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <glib/gstdio.h>
#include <string.h>

#include "weir-expand.h"
#include "weir-import.h"
#include "weir-init.h"
#include "weir-interp.h"
#include "weir-onnx.h"
#include "weir-tensor-io.h"

#include "numpy-check.h"
#include "tmpdir-fixture.h"

static int setup(void **state) {
  (void)state;
  return tmpdir_setup("weir-onnx-save");
}

static int teardown(void **state) {
  (void)state;
  return tmpdir_teardown();
}

static char *sample(const char *rel) {
  return g_build_filename(WEIR_SRCDIR, "samples", "models", rel, NULL);
}

/* New values for every initializer of model: v * 0.5 + 0.01 * (i % 7). */
static GHashTable *changed_initializers(const WeirOnnxModel *model) {
  GHashTable *values = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                             (GDestroyNotify)weir_tensor_free);
  const WeirOnnxGraph *g = weir_onnx_model_graph(model);
  for (guint i = 0; i < g->n_initializers; i++) {
    g_autoptr(GError) error = NULL;
    WeirTensor *t =
        weir_onnx_graph_decode_initializer(g, g->initializers[i].name, &error);
    if (!t)
      fail_msg("%s", error->message);
    for (gint64 k = 0; k < t->count; k++)
      weir_tensor_set(t, k, weir_tensor_get(t, k) * 0.5 + 0.01 * (k % 7));
    g_hash_table_insert(values, (gpointer)g->initializers[i].name, t);
  }
  return values;
}

static void test_round_trip_and_numpy(void **state) {
  (void)state;
  g_autofree char *src = sample("lenet.onnx");
  g_autofree char *dst = g_build_filename(tmp_dir, "lenet-new.onnx", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirOnnxModel) orig = weir_onnx_model_load(src, &error);
  assert_non_null(orig);
  g_autoptr(GHashTable) values = changed_initializers(orig);
  assert_true(weir_onnx_save_with_initializers(src, values, dst, &error));

  /* Weir reads back the new values and the same graph */
  g_autoptr(WeirOnnxModel) back = weir_onnx_model_load(dst, &error);
  assert_non_null(back);
  const WeirOnnxGraph *g0 = weir_onnx_model_graph(orig);
  const WeirOnnxGraph *g1 = weir_onnx_model_graph(back);
  assert_int_equal(g0->n_nodes, g1->n_nodes);
  assert_int_equal(g0->n_initializers, g1->n_initializers);
  assert_string_equal(weir_onnx_model_producer(orig),
                      weir_onnx_model_producer(back));
  assert_int_equal(weir_onnx_model_opset(orig, ""),
                   weir_onnx_model_opset(back, ""));
  for (guint i = 0; i < g1->n_initializers; i++) {
    const char *name = g1->initializers[i].name;
    g_autoptr(WeirTensor) t =
        weir_onnx_graph_decode_initializer(g1, name, &error);
    assert_non_null(t);
    const WeirTensor *want = g_hash_table_lookup(values, name);
    assert_non_null(want);
    assert_int_equal(t->count, want->count);
    assert_memory_equal(t->data, want->data, weir_tensor_nbytes(t));
  }

  /* Weir's interpreter on the new model ... */
  g_autoptr(WeirGraph) prog = weir_onnx_import(dst, NULL, &error);
  assert_non_null(prog);
  weir_init();
  if (!weir_expand_all(prog, NULL, NULL, &error))
    fail_msg("%s", error->message);
  g_autofree char *in_path = sample("lenet/input_0.npy");
  g_autoptr(WeirTensor) input = weir_tensor_read_npy(in_path, &error);
  assert_non_null(input);
  gint64 out_shape[2] = {4, 10};
  g_autoptr(WeirTensor) output = weir_tensor_new(WEIR_DTYPE_F32, 2, out_shape);
  g_autoptr(GHashTable) args = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(args, "input", input);
  g_hash_table_insert(args, "output", output);
  if (!weir_interpret(prog, NULL, args, NULL, &error))
    fail_msg("%s", error->message);
  g_autofree char *got_path = g_build_filename(tmp_dir, "weir.npy", NULL);
  assert_true(weir_tensor_write_npy(output, got_path, &error));

  /* ... agrees with ONNX + NumPy on it, and not with the old weights */
  assert_int_equal(onnx_numpy_check(dst, in_path, got_path, NULL, NULL), 0);
  g_autofree char *old_out = sample("lenet/output_0.npy");
  assert_int_equal(onnx_numpy_check(dst, in_path, old_out, NULL, NULL), 1);
  assert_int_equal(onnx_numpy_check(src, in_path, old_out, NULL, NULL), 0);
}

static void test_errors(void **state) {
  (void)state;
  g_autofree char *src = sample("mlp.onnx");
  g_autofree char *dst = g_build_filename(tmp_dir, "never.onnx", NULL);
  g_autoptr(GHashTable) values = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  g_autoptr(GError) error = NULL;

  gint64 shape[2] = {128, 64};
  g_hash_table_insert(values, "fc1.weight",
                      weir_tensor_new(WEIR_DTYPE_F32, 2, shape));
  g_hash_table_insert(values, "nope",
                      weir_tensor_new(WEIR_DTYPE_F32, 2, shape));
  assert_false(weir_onnx_save_with_initializers(src, values, dst, &error));
  assert_non_null(strstr(error->message, "no initializer 'nope'"));
  assert_non_null(strstr(error->message, "mlp.onnx"));
  g_clear_error(&error);
  g_hash_table_remove(values, "nope");

  gint64 wrong[2] = {128, 64}; /* the weight is [64, 128] */
  g_hash_table_insert(values, "fc2.weight",
                      weir_tensor_new(WEIR_DTYPE_F32, 2, wrong));
  assert_false(weir_onnx_save_with_initializers(src, values, dst, &error));
  assert_non_null(strstr(error->message, "'fc2.weight'"));
  assert_non_null(strstr(error->message, "shape"));
  g_clear_error(&error);
  g_hash_table_remove(values, "fc2.weight");

  gint64 n = 128;
  g_hash_table_insert(values, "fc1.bias",
                      weir_tensor_new(WEIR_DTYPE_F64, 1, &n));
  assert_false(weir_onnx_save_with_initializers(src, values, dst, &error));
  assert_non_null(strstr(error->message, "'fc1.bias' is FLOAT"));
  g_clear_error(&error);
  assert_false(g_file_test(dst, G_FILE_TEST_EXISTS));

  assert_false(weir_onnx_save_with_initializers("/nonexistent.onnx", values,
                                                dst, &error));
  assert_int_equal(error->code, WEIR_ERROR_IO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_and_numpy),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
