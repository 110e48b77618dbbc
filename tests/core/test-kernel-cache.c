/* test-kernel-cache.c — the compile cache keyed by the program: a hit is a
 * lookup (no C is generated), weights do not change the key, and bound
 * constants take the program's current data.
 *
 * The sample MLP (samples/models/mlp.onnx) has weight matrices well over
 * WEIR_CODEGEN_LITERAL_MAX elements.  Every test uses a private cache
 * directory (runtime-fixture.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "runtime-fixture.h"
#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-tensor-io.h"

static int setup(void **state) {
  *state = fixture_new();
  return 0;
}

static int teardown(void **state) {
  fixture_free(*state);
  return 0;
}

typedef struct {
  WeirGraph *g;
  char *in_name, *out_name;
  WeirTensor *input;
} Model;

static void model_load(Model *m) {
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "mlp.onnx", NULL);
  g_autofree char *in_path = g_build_filename(WEIR_SRCDIR, "samples", "models",
                                              "mlp", "input_0.npy", NULL);
  g_autoptr(GError) err = NULL;
  m->input = weir_tensor_read_npy(in_path, &err);
  if (!m->input)
    fail_msg("%s", err->message);
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  GArray *shape = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_vals(shape, m->input->shape, m->input->rank);
  g_hash_table_insert(shapes, "input", shape);
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  WeirOnnxImportOptions io = {.input_shapes = shapes, .names = names};
  m->g = weir_onnx_import(path, &io, &err);
  if (!m->g)
    fail_msg("import: %s", err->message);
  m->in_name = g_strdup(g_hash_table_lookup(names, "input"));
  m->out_name = g_strdup(g_hash_table_lookup(names, "output"));
}

static void model_clear(Model *m) {
  weir_graph_free(m->g);
  weir_tensor_free(m->input);
  g_free(m->in_name);
  g_free(m->out_name);
}

static GHashTable *model_args(const Model *m) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  const WeirContainer *oc = weir_graph_container(m->g, m->out_name);
  gint64 shape[8];
  guint rank = oc->shape->len;
  for (guint d = 0; d < rank; d++)
    assert_true(weir_expr_is_const(g_ptr_array_index(oc->shape, d), &shape[d]));
  g_hash_table_insert(args, g_strdup(m->in_name), weir_tensor_copy(m->input));
  g_hash_table_insert(args, g_strdup(m->out_name),
                      weir_tensor_new(oc->dtype, rank, shape));
  return args;
}

/* Runs k and the interpreter on m and compares the outputs. */
static void assert_matches_interpreter(WeirKernel *k, const Model *m) {
  g_autoptr(GError) err = NULL;
  g_autoptr(GHashTable) sym = weir_bindings_new();
  g_autoptr(GHashTable) a = model_args(m);
  g_autoptr(GHashTable) b = model_args(m);
  if (!weir_kernel_run(k, sym, a, &err))
    fail_msg("run: %s", err->message);
  g_autoptr(WeirGraph) x = weir_graph_copy(m->g);
  if (!weir_expand_all(x, NULL, NULL, &err) ||
      !weir_interpret(x, sym, b, NULL, &err))
    fail_msg("interpret: %s", err->message);
  if (!weir_tensor_allclose(g_hash_table_lookup(a, m->out_name),
                            g_hash_table_lookup(b, m->out_name), 1e-4, 1e-5,
                            NULL, &err))
    fail_msg("output: %s", err->message);
}

/* A second compile of the same program is a hit that generates no C. */
static void test_hit_generates_no_c(void **state) {
  Fixture *f = *state;
  Model m = {0};
  model_load(&m);
  g_autoptr(GError) err = NULL;
  WeirCompileInfo info = {0};
  g_autoptr(WeirKernel) k1 = weir_kernel_compile(m.g, &f->opts, &info, &err);
  if (!k1)
    fail_msg("compile: %s", err->message);
  assert_false(info.cache_hit);
  assert_true(info.source_bytes > 0);
  weir_compile_info_clear(&info);

  guint before = weir_codegen_sources_generated();
  g_autoptr(WeirKernel) k2 = weir_kernel_compile(m.g, &f->opts, &info, &err);
  if (!k2)
    fail_msg("compile: %s", err->message);
  assert_true(info.cache_hit);
  assert_int_equal(info.source_bytes, 0);
  assert_int_equal(weir_codegen_sources_generated(), before);
  assert_int_equal(fixture_compiles(f), 1);
  g_autofree char *key = weir_kernel_key(m.g, &f->opts, &err);
  assert_string_equal(key, info.key);
  weir_compile_info_clear(&info);
  assert_matches_interpreter(k2, &m);
  model_clear(&m);
}

int main(void) {
  g_autofree char *home = g_dir_make_tmp("weir-test-home-XXXXXX", NULL);
  g_setenv("XDG_CACHE_HOME", home, TRUE);
  g_unsetenv("WEIR_CACHE_DIR");
  g_unsetenv("WEIR_CACHE_MAX_BYTES");
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_hit_generates_no_c),
  };
#undef T
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  remove_tree(home);
  return rc;
}
