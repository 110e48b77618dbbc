/* test-models.c — the bundled PyTorch models, end to end through the
 * reference path: import the ONNX file, expand every library node, run the
 * interpreter on PyTorch's reference input and compare with PyTorch's
 * output (samples/models/<name>/{input_0,output_0}.pb, written by
 * samples/models/generate.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "weir-import.h"
#include "weir-tensor-io.h"
#include "weir.h"

typedef struct {
  const char *name;
  const char *batch_symbol; /* dim_param to bind, or NULL */
  double rtol, atol;
} Model;

static const Model models[] = {
    {"mlp", "batch", 1e-4, 1e-5},        {"lenet", NULL, 1e-4, 1e-5},
    {"resnet", NULL, 1e-4, 1e-5},        {"transformer", NULL, 1e-4, 1e-4},
    {"digits_mlp", "batch", 1e-4, 1e-5}, {"digits_cnn", "batch", 1e-4, 1e-5},
};

static char *model_file(const char *name, const char *file) {
  return g_build_filename(WEIR_SRCDIR, "samples", "models", name, file, NULL);
}

static void check_model(const Model *m) {
  g_autofree char *onnx_name = g_strdup_printf("%s.onnx", m->name);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", onnx_name, NULL);
  g_autofree char *in_path = model_file(m->name, "input_0.pb");
  g_autofree char *out_path = model_file(m->name, "output_0.pb");
  g_autoptr(GError) error = NULL;
  g_autofree char *in_name = NULL, *out_name = NULL;
  g_autoptr(WeirTensor) input = weir_tensor_read_pb(in_path, &in_name, &error);
  assert_non_null(input);
  g_autoptr(WeirTensor) expected =
      weir_tensor_read_pb(out_path, &out_name, &error);
  assert_non_null(expected);

  g_autoptr(GHashTable) symbols = weir_bindings_new();
  if (m->batch_symbol)
    weir_bindings_set(symbols, m->batch_symbol, input->shape[0]);
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  WeirOnnxImportOptions opts = {.symbols = symbols, .names = names};
  g_autoptr(WeirGraph) g = weir_onnx_import(path, &opts, &error);
  if (!g)
    fail_msg("%s: %s", path, error->message);
  guint expanded = 0;
  if (!weir_expand_all(g, NULL, &expanded, &error))
    fail_msg("%s: %s", path, error->message);
  assert_true(expanded > 0);
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++)
      assert_int_not_equal(((WeirNode *)g_ptr_array_index(s->nodes, k))->kind,
                           WEIR_NODE_LIBRARY);
  }

  const char *in_container = g_hash_table_lookup(names, in_name);
  const char *out_container = g_hash_table_lookup(names, out_name);
  assert_non_null(in_container);
  assert_non_null(out_container);
  WeirTensor *out =
      weir_tensor_new(expected->dtype, expected->rank, expected->shape);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  g_hash_table_insert(args, (gpointer)in_container, weir_tensor_copy(input));
  g_hash_table_insert(args, (gpointer)out_container, out);
  if (!weir_interpret(g, NULL, args, NULL, &error))
    fail_msg("%s: %s", path, error->message);
  double err = 0;
  if (!weir_tensor_allclose(out, expected, m->rtol, m->atol, &err, &error))
    fail_msg("%s: output differs from PyTorch: %s", m->name, error->message);
  print_message("%s: max abs error against PyTorch %.3g\n", m->name, err);
}

static void test_mlp(void **state) {
  (void)state;
  check_model(&models[0]);
}
static void test_lenet(void **state) {
  (void)state;
  check_model(&models[1]);
}
static void test_resnet(void **state) {
  (void)state;
  check_model(&models[2]);
}
static void test_transformer(void **state) {
  (void)state;
  check_model(&models[3]);
}

static void test_digits_mlp(void **state) {
  (void)state;
  check_model(&models[4]);
}
static void test_digits_cnn(void **state) {
  (void)state;
  check_model(&models[5]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlp),        cmocka_unit_test(test_lenet),
      cmocka_unit_test(test_resnet),     cmocka_unit_test(test_transformer),
      cmocka_unit_test(test_digits_mlp), cmocka_unit_test(test_digits_cnn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
