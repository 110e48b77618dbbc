/* test-kernel-cache.c — the compile cache keyed by the program: a hit is a
 * lookup (no C is generated), weights do not change the key, and bound
 * constants take the program's current data.
 *
 * The sample MLP (samples/models/mlp.onnx) has weight matrices well over
 * WEIR_CODEGEN_LITERAL_MAX elements; at batch 32 its transients live in the
 * arena.  Every test uses a private cache
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

/* The MLP at batch 32 (its transients are then too large for the stack and
 * live in the arena), with random inputs. */
static void model_load(Model *m) {
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "mlp.onnx", NULL);
  g_autoptr(GError) err = NULL;
  m->input = weir_tensor_new(WEIR_DTYPE_F32, 2, (gint64[]){32, 64});
  weir_tensor_fill_random(m->input, 7);
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

/* Scales the data of every bound constant of g by factor (a new GBytes:
 * another checkpoint of the same architecture). */
static void scale_weights(WeirGraph *g, float factor) {
  g_autoptr(GPtrArray) consts = weir_codegen_constants(g);
  assert_true(consts->len > 0);
  for (guint i = 0; i < consts->len; i++) {
    WeirContainer *c = g_ptr_array_index(consts, i);
    assert_int_equal(c->dtype, WEIR_DTYPE_F32);
    gsize n = 0;
    const float *old = g_bytes_get_data(c->initial, &n);
    float *data = g_malloc(n);
    for (gsize k = 0; k < n / sizeof(float); k++)
      data[k] = old[k] * factor;
    g_autoptr(GBytes) b = g_bytes_new_take(data, n);
    weir_container_set_initial(c, b);
  }
}

/* Other weights of the same shapes: the same key, a hit, no C generated,
 * and the kernel computes with the new weights. */
static void test_weights_do_not_change_the_key(void **state) {
  Fixture *f = *state;
  Model m = {0};
  model_load(&m);
  g_autoptr(GError) err = NULL;
  g_autofree char *k1 = weir_kernel_key(m.g, &f->opts, &err);
  g_autoptr(WeirKernel) first = weir_kernel_compile(m.g, &f->opts, NULL, &err);
  if (!first)
    fail_msg("compile: %s", err->message);
  scale_weights(m.g, -0.5f);
  g_autofree char *k2 = weir_kernel_key(m.g, &f->opts, &err);
  assert_string_equal(k1, k2);
  guint before = weir_codegen_sources_generated();
  WeirCompileInfo info = {0};
  g_autoptr(WeirKernel) k = weir_kernel_compile(m.g, &f->opts, &info, &err);
  if (!k)
    fail_msg("compile: %s", err->message);
  assert_true(info.cache_hit);
  assert_int_equal(weir_codegen_sources_generated(), before);
  weir_compile_info_clear(&info);
  assert_int_equal(fixture_compiles(f), 1);
  assert_matches_interpreter(k, &m);
  /* the parameters are bound from the program, not copied */
  assert_int_equal(weir_kernel_constants_bytes(k),
                   weir_codegen_constants_bytes(m.g));
  assert_true(weir_codegen_constants_bytes(m.g) > 10000);

  /* a literal constant (<= WEIR_CODEGEN_LITERAL_MAX elements) is part of
   * the code, hence of the key */
  g_autoptr(WeirExpr) four = weir_expr_const(4);
  WeirContainer *c = weir_graph_add_container(m.g, "tiny", WEIR_DTYPE_F32, 1,
                                              (WeirExpr *[]){four}, TRUE, &err);
  assert_non_null(c);
  float v[4] = {1, 2, 3, 4};
  g_autoptr(GBytes) b = g_bytes_new(v, sizeof v);
  weir_container_set_initial(c, b);
  g_autofree char *k3 = weir_kernel_key(m.g, &f->opts, &err);
  v[2] = 5;
  g_autoptr(GBytes) b2 = g_bytes_new(v, sizeof v);
  weir_container_set_initial(c, b2);
  g_autofree char *k4 = weir_kernel_key(m.g, &f->opts, &err);
  assert_string_not_equal(k3, k4);
  model_clear(&m);
}

/* The transients live in the kernel's workspace: allocated at the first
 * run, the same block for every later run (nothing allocated in the steady
 * state), and it holds the transients the generated code computed. */
static void test_workspace_is_reused(void **state) {
  Fixture *f = *state;
  Model m = {0};
  model_load(&m);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirKernel) k = weir_kernel_compile(m.g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("compile: %s", err->message);
  gsize bytes = 1;
  assert_null(weir_kernel_workspace(k, &bytes));
  assert_int_equal(bytes, 0);
  g_autoptr(GHashTable) sym = weir_bindings_new();
  g_autoptr(GHashTable) args = model_args(&m);
  assert_true(weir_kernel_run(k, sym, args, &err));
  const void *w1 = weir_kernel_workspace(k, &bytes);
  assert_non_null(w1);
  assert_true(bytes > 0);
  assert_int_equal((guintptr)w1 % 64, 0);
  /* the first transient (the first Gemm's output, batch x 128 floats) is
   * at the start of the workspace and is not all zeros after a run */
  const float *t = w1;
  gboolean nonzero = FALSE;
  for (guint i = 0; i < 128; i++)
    nonzero = nonzero || t[i] != 0;
  assert_true(nonzero);
  for (int r = 0; r < 3; r++) {
    assert_true(weir_kernel_run(k, sym, args, &err));
    gsize again = 0;
    assert_ptr_equal(weir_kernel_workspace(k, &again), w1);
    assert_int_equal(again, bytes);
  }
  WeirBenchOptions bo = {.warmup = 1, .repetitions = 3};
  WeirBenchResult r;
  assert_true(weir_kernel_bench(k, sym, args, &bo, &r, &err));
  weir_bench_result_clear(&r);
  assert_ptr_equal(weir_kernel_workspace(k, NULL), w1);
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
      T(test_weights_do_not_change_the_key),
      T(test_workspace_is_reused),
  };
#undef T
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  remove_tree(home);
  return rc;
}
