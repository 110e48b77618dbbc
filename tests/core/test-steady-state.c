/* test-steady-state.c — steady-state runs of a kernel allocate nothing.
 *
 * The kernels are compiled with their allocation functions renamed by the
 * preprocessor (-Dmalloc=weir_test_malloc, aligned_alloc, calloc, realloc,
 * free): the generated code and its native helpers then call the counting
 * functions of this executable (exported with export_dynamic), which tell
 * the kernel's own allocations from those of the OpenMP and BLAS runtimes.
 * Programs: LeNet's inference (im2col convolutions whose column buffers
 * and GEMM temporaries are scratch), its training step (the convolution
 * gradients on Weir's GEMM, and on BLAS with their columns; Adam) and a nested
 * program with an arena of its own called from sequential code.  Each is run
 * three times through the runtime (no allocation in the kernel; the workspace
 * pointer stays the same), then called directly without a workspace (it
 * allocates: the count sees it, so the test can fail) and with an allocator
 * that fails (the call reports it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "runtime-fixture.h"
#include "weir-codegen.h"
#include "weir-evaluate.h"
#include "weir-import.h"
#include "weir-json.h"
#include "weir-native.h"
#include "weir-pipeline.h"
#include "weir-train.h"

/* ---------------------------------------------------- counting allocator */

static gint allocations, releases, failing;

G_MODULE_EXPORT void *weir_test_malloc(size_t n);
G_MODULE_EXPORT void *weir_test_aligned_alloc(size_t a, size_t n);
G_MODULE_EXPORT void *weir_test_calloc(size_t k, size_t n);
G_MODULE_EXPORT void *weir_test_realloc(void *p, size_t n);
G_MODULE_EXPORT void weir_test_free(void *p);

static gboolean counted(void) {
  g_atomic_int_inc(&allocations);
  return !g_atomic_int_get(&failing);
}

G_MODULE_EXPORT void *weir_test_malloc(size_t n) {
  return counted() ? malloc(n) : NULL;
}

G_MODULE_EXPORT void *weir_test_aligned_alloc(size_t a, size_t n) {
  return counted() ? aligned_alloc(a, n) : NULL;
}

G_MODULE_EXPORT void *weir_test_calloc(size_t k, size_t n) {
  return counted() ? calloc(k, n) : NULL;
}

G_MODULE_EXPORT void *weir_test_realloc(void *p, size_t n) {
  return counted() ? realloc(p, n) : NULL;
}

G_MODULE_EXPORT void weir_test_free(void *p) {
  if (p)
    g_atomic_int_inc(&releases);
  free(p);
}

static void counts_reset(void) {
  g_atomic_int_set(&allocations, 0);
  g_atomic_int_set(&releases, 0);
}

#define COUNTING_FLAGS                                                         \
  TEST_FLAGS " -fopenmp -Dmalloc=weir_test_malloc "                            \
             "-Daligned_alloc=weir_test_aligned_alloc "                        \
             "-Dcalloc=weir_test_calloc -Drealloc=weir_test_realloc "          \
             "-Dfree=weir_test_free"

/* ------------------------------------------------------------- programs */

static WeirGraph *lenet(void) {
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "lenet.onnx", NULL);
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  GArray *shape = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_vals(shape, (gint64[]){4, 1, 8, 8}, 4);
  g_hash_table_insert(shapes, "input", shape);
  WeirOnnxImportOptions io = {.input_shapes = shapes};
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_onnx_import(path, &io, &err);
  if (!g)
    fail_msg("import: %s", err->message);
  return g;
}

static WeirGraph *lenet_training(void) {
  g_autoptr(WeirGraph) g = lenet();
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.optimizer = WEIR_OPTIMIZER_ADAM;
  o.loss = WEIR_LOSS_MSE;
  o.steps = 2;
  g_autoptr(GError) err = NULL;
  WeirGraph *t = weir_train_graph(g, &o, &err);
  if (!t)
    fail_msg("training program: %s", err->message);
  return t;
}

/* The training program of a sample model (its reference input shape, K =
 * 2 steps), optimized at -O2 as weir train does by default. */
static WeirGraph *sample_training(const char *name, WeirLoss loss,
                                  WeirOptimizer optimizer) {
  g_autofree char *file = g_strconcat(name, ".onnx", NULL);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", file, NULL);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_onnx_import(path, NULL, &err);
  if (!g)
    fail_msg("import %s: %s", name, err->message);
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.optimizer = optimizer;
  o.loss = loss;
  o.steps = 2;
  WeirGraph *t = weir_train_graph(g, &o, &err);
  if (!t)
    fail_msg("training program of %s: %s", name, err->message);
  if (!weir_pipeline_apply(t, 2, NULL, NULL, &err))
    fail_msg("-O2 on the training program of %s: %s", name, err->message);
  return t;
}

/* tests/core/golden/codegen/programs/nested_rows.json with its map made
 * sequential: the nested program (an arena of 8000 bytes) is called once
 * per row from sequential code. */
static WeirGraph *nested_rows(void) {
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "tests", "core", "golden", "codegen",
                       "programs", "nested_rows.json", NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_load(path, &err);
  if (!g)
    fail_msg("%s: %s", path, err->message);
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_MAP_ENTRY && n->map)
        n->map->schedule = WEIR_SCHEDULE_SEQUENTIAL;
    }
  }
  return g;
}

/* ---------------------------------------------------------------- checks */

typedef int (*RunFunc)(void *const args[], const int64_t symbols[],
                       const void *const consts[], void *workspace);

/* Compiles g with the counting allocator, runs it three times through the
 * runtime, then calls its entry point without a workspace. */
static void check_program(Fixture *fx, WeirGraph *g, GHashTable *symbols,
                          const char *want_in_source) {
  g_autoptr(GError) err = NULL;
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  if (!src)
    fail_msg("%s: %s", g->name, err->message);
  if (want_in_source && !strstr(src, want_in_source))
    fail_msg("%s: the generated code has no '%s'", g->name, want_in_source);

  WeirCompileOptions opts = fx->opts;
  opts.flags = COUNTING_FLAGS;
  WeirCompileInfo info;
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &opts, &info, &err);
  if (!k)
    fail_msg("%s: %s", g->name, err->message);

  /* arguments, random by the rule of weir run */
  g_autoptr(GPtrArray) args = weir_codegen_arguments(g);
  g_autoptr(GHashTable) tensors = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  g_autofree void **ptrs = g_new0(void *, args->len + 1);
  for (guint i = 0; i < args->len; i++) {
    const WeirContainer *c = g_ptr_array_index(args, i);
    WeirTensor *t = weir_evaluate_random_input(c, symbols, 1, &err);
    if (!t)
      fail_msg("%s: %s", c->name, err->message);
    g_hash_table_insert(tensors, c->name, t);
    ptrs[i] = t->data;
  }

  const void *ws = NULL;
  for (guint r = 0; r < 3; r++) {
    counts_reset();
    if (!weir_kernel_run(k, symbols, tensors, &err))
      fail_msg("%s, run %u: %s", g->name, r, err->message);
    if (g_atomic_int_get(&allocations) || g_atomic_int_get(&releases))
      fail_msg("%s, run %u: the kernel allocated %d and freed %d blocks",
               g->name, r, allocations, releases);
    gsize bytes = 0;
    const void *w = weir_kernel_workspace(k, &bytes);
    assert_non_null(w);
    assert_true(bytes > 0);
    if (r > 0)
      assert_ptr_equal(w, ws);
    ws = w;
  }

  /* The same entry point without a workspace allocates its arena: the
   * counter sees the kernel's allocations.  An allocation that fails is
   * reported, not ignored. */
  GModule *m = g_module_open(info.object_path, G_MODULE_BIND_LOCAL);
  assert_non_null(m);
  g_autofree char *prefix = weir_codegen_prefix(g);
  g_autofree char *run_name = g_strconcat(prefix, "_run", NULL);
  gpointer sym = NULL;
  assert_true(g_module_symbol(m, run_name, &sym));
  g_autoptr(GPtrArray) consts = weir_codegen_constants(g);
  g_autofree const void **table = g_new0(const void *, consts->len + 1);
  for (guint i = 0; i < consts->len; i++)
    table[i] = g_bytes_get_data(
        ((const WeirContainer *)g_ptr_array_index(consts, i))->initial, NULL);
  g_autofree int64_t *syms = g_new0(int64_t, g->symbols->len + 1);
  for (guint i = 0; i < g->symbols->len; i++) {
    const gint64 *v =
        symbols ? g_hash_table_lookup(symbols, g_ptr_array_index(g->symbols, i))
                : NULL;
    syms[i] = v ? *v : 0;
  }
  counts_reset();
  assert_int_equal(((RunFunc)sym)(ptrs, syms, table, NULL), 0);
  assert_true(g_atomic_int_get(&allocations) >= 1);
  assert_int_equal(g_atomic_int_get(&releases), g_atomic_int_get(&allocations));
  g_atomic_int_set(&failing, 1);
  int rc = ((RunFunc)sym)(ptrs, syms, table, NULL);
  g_atomic_int_set(&failing, 0);
  assert_int_not_equal(rc, 0);
  g_module_close(m);
  weir_compile_info_clear(&info);
}

/* the default implementations: Weir's GEMM, whose packing buffers and
 * patch columns come from the scratch block */
static void test_lenet(void **state) {
  g_autoptr(WeirGraph) g = lenet();
  check_program(*state, g, NULL, "(void *)scratch);");
}

/* im2col columns for OpenBLAS */
static void test_lenet_blas(void **state) {
  g_autoptr(WeirGraph) g = lenet();
  g_autoptr(GError) err = NULL;
  assert_true(weir_native_set_impl(g, "Conv", "im2col", NULL, &err));
  assert_true(weir_native_set_impl(g, "Gemm", "blas", NULL, &err));
  check_program(*state, g, NULL, "(float *)scratch);");
}

/* the convolution gradients on Weir's GEMM (the default, implementation
 * weir: core/kernels/conv-grad.c) */
static void test_lenet_training(void **state) {
  g_autoptr(WeirGraph) g = lenet_training();
  check_program(*state, g, NULL, "weir_wconv2d_grad_filter_f32(");
}

/* the same with the BLAS-based gradients (im2col, col2im columns) */
static void test_lenet_training_blas(void **state) {
  g_autoptr(WeirGraph) g = lenet_training();
  g_autoptr(GError) err = NULL;
  assert_true(weir_native_set_impl(g, "ConvGradFilter", "im2col", NULL, &err));
  assert_true(weir_native_set_impl(g, "ConvGradInput", "col2im", NULL, &err));
  check_program(*state, g, NULL, "weir_conv2d_grad_filter_f32(");
}

/* training-mode batch norm (running statistics updated in place),
 * momentum, the convolution gradients on Weir's GEMM, after -O2 */
static void test_resnet_training(void **state) {
  g_autoptr(WeirGraph) g = sample_training(
      "resnet", WEIR_LOSS_SOFTMAX_CROSS_ENTROPY, WEIR_OPTIMIZER_MOMENTUM);
  check_program(*state, g, NULL, "weir_wconv2d_grad_input_f32(");
}

/* a transformer layer (MatMul gradients folded into Gemm calls, layer
 * norm and softmax backward), Adam, after -O2 */
static void test_transformer_training(void **state) {
  g_autoptr(WeirGraph) g =
      sample_training("transformer", WEIR_LOSS_MSE, WEIR_OPTIMIZER_ADAM);
  check_program(*state, g, NULL, "weir_gemm_f32(");
}

static void test_nested(void **state) {
  g_autoptr(WeirGraph) g = nested_rows();
  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "R", 5);
  weir_bindings_set(b, "W", 7);
  check_program(*state, g, b, ", scratch);");
}

static int setup(void **state) {
  *state = fixture_new();
  return 0;
}

static int teardown(void **state) {
  fixture_free(*state);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_lenet, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lenet_blas, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lenet_training, setup, teardown),
      cmocka_unit_test_setup_teardown(test_lenet_training_blas, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_resnet_training, setup, teardown),
      cmocka_unit_test_setup_teardown(test_transformer_training, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_nested, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
