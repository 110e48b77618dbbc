/* test-cli.c — the `weir` program, run as a user would run it.
 *
 * Each test spawns the built binary (path in WEIR_CLI) on the bundled samples
 * or on bad files written to a temporary directory, and checks the exit
 * status and what it printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <sys/wait.h>

#include <glib.h>

typedef struct {
  int status;
  char *out;
  char *err;
} Run;

static void run_clear(Run *r) {
  g_free(r->out);
  g_free(r->err);
}

/* Runs weir with a NULL-terminated argument list. */
static Run run_weir(const char *first, ...) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (gpointer)WEIR_CLI);
  va_list ap;
  va_start(ap, first);
  for (const char *a = first; a; a = va_arg(ap, const char *))
    g_ptr_array_add(argv, (gpointer)a);
  va_end(ap);
  g_ptr_array_add(argv, NULL);
  Run r = {0};
  int wait_status = 0;
  g_autoptr(GError) error = NULL;
  gboolean ok =
      g_spawn_sync(WEIR_SRCDIR, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT,
                   NULL, NULL, &r.out, &r.err, &wait_status, &error);
  g_ptr_array_unref(argv);
  assert_true(ok);
  r.status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  return r;
}

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    if (!strstr((hay), (needle)))                                              \
      fail_msg("expected to find '%s' in:\n%s", (needle), (hay));              \
  } while (0)

static void test_info_matmul(void **state) {
  (void)state;
  Run r = run_weir("info", "samples/matmul.json", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "program   matmul");
  /* 3 x 98304 f32 accesses in 'multiply' + 3072 f32 zeros in 'init'. */
  assert_contains(r.out, "1.1 MiB");
  assert_contains(r.out, "196608");
  assert_contains(r.out, "Top memlets by logical volume");
  assert_contains(r.out, "98304 x 1");
  run_clear(&r);
}

static void test_info_symbolic_and_bound(void **state) {
  (void)state;
  Run r = run_weir("info", "samples/vector_add.json", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "12*N B");
  run_clear(&r);
  r = run_weir("info", "samples/vector_add.json", "-D", "N=1000", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "N=1000");
  assert_contains(r.out, "11.7 KiB"); /* 12000 bytes */
  run_clear(&r);
  r = run_weir("info", "samples/vector_add.json", "-D", "N=ten", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "SYM=INTEGER");
  run_clear(&r);
}

/* --count: lenet as imported (every operator a library node), as compiled
 * (the convolutions, GEMMs and the MaxPool native, ReLU and Flatten
 * expanded) and fully expanded (the pool then counts every window
 * element). */
static void test_info_count(void **state) {
  (void)state;
  const char *model = "samples/models/lenet.onnx";
  Run r = run_weir("info", model, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "49.2 KiB");
  assert_true(strstr(r.out, "counted   as") == NULL);
  run_clear(&r);
  r = run_weir("info", model, "--count", "compiled", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "counted   as compiled");
  assert_contains(r.out, "48.2 KiB");
  run_clear(&r);
  r = run_weir("info", model, "--count", "expanded", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "479.8 KiB");
  run_clear(&r);
  r = run_weir("info", model, "--count", "all", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "--count as-is|compiled|expanded");
  run_clear(&r);
  /* the sample recipe of lenet runs from the command line */
  r = run_weir("optimize", model, "--recipe", "samples/recipes/lenet.json",
               NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "9 recipe steps, 20 applications");
  run_clear(&r);
}

/* weir info names the ONNX initializer of each imported constant; weir
 * train-graph trains them by default, --params / --freeze override */
static void test_initializers_and_params(void **state) {
  (void)state;
  const char *model = "tests/core/data/scalar-param.onnx";
  Run r = run_weir("info", model, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "constant (initializer fc.weight)");
  assert_contains(r.out, "constant (initializer temperature)");
  assert_contains(r.out, "constant (initializer /scale/Constant_output_0)");
  run_clear(&r);

  g_autofree char *dir = g_dir_make_tmp("weir-cli-params-XXXXXX", NULL);
  assert_non_null(dir);
  g_autofree char *out = g_build_filename(dir, "t.json", NULL);
  r = run_weir("train-graph", model, "--loss", "mse", "--optimizer", "adam",
               "-o", out, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "2 parameters");
  run_clear(&r);
  r = run_weir("info", out, NULL);
  assert_contains(r.out, "argument (initializer temperature)");
  run_clear(&r);
  r = run_weir("train-graph", model, "--loss", "mse", "--optimizer", "sgd",
               "--freeze", "temp", "-o", out, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "1 parameters");
  run_clear(&r);
  r = run_weir("train-graph", model, "--loss", "mse", "--optimizer", "sgd",
               "--params", "weight|Constant", "-o", out, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "2 parameters");
  run_clear(&r);
  r = run_weir("train-graph", model, "--loss", "mse", "--optimizer", "sgd",
               "--params", "[", "-o", out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "--params '['");
  run_clear(&r);
  g_remove(out);
  g_rmdir(dir);
}

static void test_validate_samples(void **state) {
  (void)state;
  const char *samples[] = {"samples/vector_add.json", "samples/matmul.json",
                           "samples/softmax.json", "samples/loop.json"};
  for (guint i = 0; i < G_N_ELEMENTS(samples); i++) {
    Run r = run_weir("validate", samples[i], NULL);
    if (r.status != 0)
      fail_msg("%s: %s", samples[i], r.err);
    assert_contains(r.out, "valid");
    run_clear(&r);
  }
}

static void test_bad_files(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *bad = g_build_filename(dir, "bad.json", NULL);
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autofree char *sample =
      g_build_filename(WEIR_SRCDIR, "samples", "vector_add.json", NULL);
  assert_true(g_file_get_contents(sample, &text, &len, NULL));
  /* An out-of-bounds subset: the validator must name the memlet. */
  char *at = strstr(text, "\"subset\": \"i\"");
  assert_non_null(at);
  GString *broken = g_string_new_len(text, at - text);
  g_string_append(broken, "\"subset\": \"i + 1\"");
  g_string_append(broken, at + strlen("\"subset\": \"i\""));
  assert_true(g_file_set_contents(bad, broken->str, -1, NULL));
  g_string_free(broken, TRUE);

  Run r = run_weir("validate", bad, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "bad.json");
  assert_contains(r.err, "out of bounds");
  assert_contains(r.err, "memlet 13");
  run_clear(&r);

  r = run_weir("info", bad, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "bad.json");
  run_clear(&r);

  assert_true(g_file_set_contents(bad, "{\"format\": \"weir-ir\", ", -1, NULL));
  r = run_weir("validate", bad, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "bad.json");
  run_clear(&r);

  r = run_weir("info", "samples/does-not-exist.json", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "does-not-exist.json");
  run_clear(&r);

  g_unlink(bad);
  g_rmdir(dir);
}

static void test_run_ref(void **state) {
  (void)state;
  Run r = run_weir("run-ref", "samples/loop.json", "-D", "T=3", NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "interpreted in");
  assert_contains(r.out, "f32[256]");
  run_clear(&r);
  /* T is needed by the loop condition. */
  r = run_weir("run-ref", "samples/loop.json", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "'T'");
  run_clear(&r);
  /* N is needed to allocate the arguments. */
  r = run_weir("run-ref", "samples/vector_add.json", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "-D");
  run_clear(&r);
}

/* A program with two library nodes: a Relu (expandable) and an op without
 * expansions. */
static const char relu_program[] =
    "{\"format\": \"weir-ir\", \"version\": 1, \"name\": \"relu\",\n"
    " \"symbols\": [],\n"
    " \"containers\": [\n"
    "  {\"id\": 1, \"name\": \"X\", \"dtype\": \"f32\", \"shape\": [\"4\", "
    "\"8\"]},\n"
    "  {\"id\": 2, \"name\": \"Y\", \"dtype\": \"f32\", \"shape\": [\"4\", "
    "\"8\"]}],\n"
    " \"start\": 3,\n"
    " \"states\": [{\"id\": 3, \"label\": \"main\", \"nodes\": [\n"
    "  {\"id\": 4, \"kind\": \"access\", \"label\": \"X\", \"data\": \"X\"},\n"
    "  {\"id\": 5, \"kind\": \"library\", \"label\": \"relu_0\", \"in\": "
    "[\"in0\"], \"out\": [\"out0\"], \"op\": \"Relu\", \"attrs\": {}},\n"
    "  {\"id\": 6, \"kind\": \"access\", \"label\": \"Y\", \"data\": \"Y\"},\n"
    "  {\"id\": 7, \"kind\": \"library\", \"label\": \"mystery\", \"in\": "
    "[\"in0\"], \"out\": [\"out0\"], \"op\": \"NoSuchOp\", \"attrs\": {}},\n"
    "  {\"id\": 8, \"kind\": \"access\", \"label\": \"Y\", \"data\": \"Y\"}],\n"
    "  \"edges\": [\n"
    "  {\"id\": 9, \"src\": 4, \"dst\": 5, \"dst_conn\": \"in0\", \"data\": "
    "\"X\", \"subset\": \"0:4, 0:8\"},\n"
    "  {\"id\": 10, \"src\": 5, \"src_conn\": \"out0\", \"dst\": 6, \"data\": "
    "\"Y\", \"subset\": \"0:4, 0:8\"},\n"
    "  {\"id\": 11, \"src\": 6, \"dst\": 7, \"dst_conn\": \"in0\", \"data\": "
    "\"Y\", \"subset\": \"0:4, 0:8\"},\n"
    "  {\"id\": 12, \"src\": 7, \"src_conn\": \"out0\", \"dst\": 8, \"data\": "
    "\"Y\", \"subset\": \"0:4, 0:8\"}]}],\n"
    " \"transitions\": []}\n";

static char *write_temp(const char *dir, const char *name, const char *text) {
  char *path = g_build_filename(dir, name, NULL);
  assert_true(g_file_set_contents(path, text, -1, NULL));
  return path;
}

static void test_transforms(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *relu = write_temp(dir, "relu.json", relu_program);
  Run r = run_weir("transforms", relu, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "tier 1  expand-library-node: ");
  assert_contains(r.out, "--site 5  legal      state 3: node 5 (library "
                         "'relu_0')");
  assert_contains(r.out, "--site 7  not legal  state 3: node 7 (library "
                         "'mystery'): no 'pure' implementation of operator "
                         "'NoSuchOp' is registered (registered: none)");
  assert_contains(r.out, "1 transformation, 2 sites, 1 legal");
  run_clear(&r);
  /* Filters. */
  r = run_weir("transforms", relu, "--node", "relu_0", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "1 transformation, 1 site, 1 legal");
  assert_null(strstr(r.out, "mystery"));
  run_clear(&r);
  r = run_weir("transforms", relu, "--node", "7", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "1 transformation, 1 site, 0 legal");
  run_clear(&r);
  r = run_weir("transforms", relu, "--tier", "4", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "no transformation has a site in");
  run_clear(&r);
  r = run_weir("transforms", relu, "--tier", "9", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "--tier 9");
  run_clear(&r);
  r = run_weir("transforms", "samples/does-not-exist.json", NULL);
  assert_int_equal(r.status, 1);
  run_clear(&r);
  g_unlink(relu);
  g_rmdir(dir);
}

/* weir prune: an ONNX result with the metadata `weir train` reads, a
 * workspace with the step in its history, and a clean refusal (nothing
 * written, the node named) for structured pruning across a residual Add. */
static void test_prune(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *out = g_build_filename(dir, "mlp80.onnx", NULL);
  Run r = run_weir("prune", WEIR_SRCDIR "/samples/models/digits_mlp.onnx",
                   "--sparsity", "0.8", "-o", out, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "fc1.weight  [64, 64]  0 -> 3277  80.0%");
  assert_contains(r.out, "a sparse format would not move the 14.8 KiB");
  run_clear(&r);
  r = run_weir("info", out, NULL);
  assert_int_equal(r.status, 0);
  run_clear(&r);
  /* the metadata entry (protobuf keeps strings as they are) */
  g_autofree char *bytes = NULL;
  gsize len = 0;
  assert_true(g_file_get_contents(out, &bytes, &len, NULL));
  static const char key[] = "weir.pruned", value[] = "fc1.weight,fc2.weight";
  assert_non_null(memmem(bytes, len, key, sizeof key - 1));
  assert_non_null(memmem(bytes, len, value, sizeof value - 1));

  g_autofree char *ws = g_build_filename(dir, "cnn.weir", NULL);
  r = run_weir("prune", WEIR_SRCDIR "/samples/models/digits_cnn.onnx",
               "--sparsity", "0.5", "--structured", "channels", "-o", ws, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "FLOPs 19146*batch -> 7530*batch");
  assert_contains(r.out, "[8, 1, 3, 3] -> [4, 1, 3, 3]");
  run_clear(&r);
  r = run_weir("history", ws, NULL);
  assert_contains(r.out, "structure=channels");
  run_clear(&r);

  g_autofree char *res = g_build_filename(dir, "resnet.json", NULL);
  r = run_weir("prune", WEIR_SRCDIR "/samples/models/resnet.onnx", "--sparsity",
               "0.5", "--structured", "channels", "-o", res, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "Add '/block1/Add' combines the channels");
  assert_false(g_file_test(res, G_FILE_TEST_EXISTS));
  run_clear(&r);
  g_unlink(out);
  g_unlink(ws);
  g_rmdir(dir);
}

/* weir quantize --precision bf16: the cast-bf16 step, as a program or as
 * a workspace step that exports as a recipe replaying to the same bytes;
 * int8 options and an unknown precision refused. */
static void test_quantize_bf16(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *out = g_build_filename(dir, "bf16.json", NULL);
  const char *model = WEIR_SRCDIR "/samples/models/digits_cnn.onnx";
  Run r = run_weir("quantize", model, "--precision", "bf16", "-o", out, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "cast-bf16 applied");
  run_clear(&r);
  r = run_weir("info", out, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "conv_weight_bf16");
  assert_contains(r.out, "fc2_weight_bf16");
  assert_contains(r.out, "input_bf16");
  run_clear(&r);

  g_autofree char *ws = g_build_filename(dir, "bf16.weir", NULL);
  g_autofree char *x = g_build_filename(dir, "x.json", NULL);
  g_autofree char *recipe = g_build_filename(dir, "r.json", NULL);
  g_autofree char *replay = g_build_filename(dir, "replay.json", NULL);
  r = run_weir("quantize", model, "--precision", "bf16", "--exclude", "^/fc",
               "-o", ws, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "step 1: cast-bf16 at state 1");
  run_clear(&r);
  r = run_weir("history", ws, "--export-recipe", recipe, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "exclude=^/fc");
  run_clear(&r);
  r = run_weir("optimize", model, "--recipe", recipe, "-o", replay, NULL);
  assert_int_equal(r.status, 0);
  run_clear(&r);
  r = run_weir("quantize", model, "--precision", "bf16", "--exclude", "^/fc",
               "-o", x, NULL);
  assert_int_equal(r.status, 0);
  run_clear(&r);
  g_autofree char *a = NULL, *b = NULL;
  assert_true(g_file_get_contents(x, &a, NULL, NULL));
  assert_true(g_file_get_contents(replay, &b, NULL, NULL));
  assert_string_equal(a, b);
  assert_non_null(strstr(a, "conv_weight_bf16"));
  assert_null(strstr(a, "fc1_weight_bf16"));

  g_autofree char *none = g_build_filename(dir, "none.json", NULL);
  r = run_weir("quantize", model, "--precision", "bf16", "--calibrate", model,
               "-o", none, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "--calibrate applies to int8");
  run_clear(&r);
  r = run_weir("quantize", model, "--precision", "fp8", "-o", none, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "--precision is int8 or bf16, not 'fp8'");
  run_clear(&r);
  r = run_weir("quantize", model, "--precision", "bf16", "--exclude", ".", "-o",
               none, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "no f32 Conv, Gemm or MatMul left");
  run_clear(&r);
  assert_false(g_file_test(none, G_FILE_TEST_EXISTS));
  const char *files[] = {out, ws, x, recipe, replay};
  for (guint i = 0; i < G_N_ELEMENTS(files); i++)
    g_unlink(files[i]);
  g_rmdir(dir);
}

static void test_apply(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *relu = write_temp(dir, "relu.json", relu_program);
  g_autofree char *out = g_build_filename(dir, "out.json", NULL);
  Run r = run_weir("apply", relu, "expand-library-node", "--site", "5",
                   "--param", "impl=pure", "-o", out, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "applied expand-library-node at state 3: node 5 "
                         "(library 'relu_0') (impl=pure)");
  assert_contains(r.out, "logical volume 512 B -> 512 B  (unchanged)");
  assert_contains(r.out, "wrote ");
  run_clear(&r);
  /* the library node 'mystery' is left, and no run could expand it:
   * validate says so (issue 11) */
  r = run_weir("validate", out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err,
                  "node 7 (library 'mystery'): unknown operator 'NoSuchOp'");
  run_clear(&r);
  /* the expanded map has loop-transformation sites of its own; the
   * library node left is still not legal */
  r = run_weir("transforms", out, "--node", "7", NULL);
  assert_contains(r.out, "1 transformation, 1 site, 0 legal");
  run_clear(&r);

  /* Refusals: not legal, bad parameter, unknown name, ambiguous site,
   * missing output. */
  g_unlink(out);
  r = run_weir("apply", relu, "expand-library-node", "--site", "7", "-o", out,
               NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "cannot be applied at state 3: node 7 (library "
                         "'mystery'): no 'pure' implementation");
  assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
  run_clear(&r);
  r = run_weir("apply", relu, "expand-library-node", "--site", "5", "-p",
               "impl=fast", "-o", out, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err,
                  "parameter 'impl': 'fast' is not one of the choices "
                  "(allowed: pure, blas, weir, im2col, direct, depthwise, "
                  "winograd, col2im, weir-bf16, default)");
  run_clear(&r);
  r = run_weir("apply", relu, "expand-library-node", "--site", "5", "-p",
               "size=3", "-o", out, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "unknown parameter 'size' (parameters: impl)");
  run_clear(&r);
  r = run_weir("apply", relu, "no-such-transformation", "-o", out, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "unknown transformation 'no-such-transformation'");
  run_clear(&r);
  r = run_weir("apply", relu, "expand-library-node", "-o", out, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "has 2 sites");
  run_clear(&r);
  r = run_weir("apply", relu, "expand-library-node", "--site", "99", "-o", out,
               NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "has no node 99");
  run_clear(&r);
  r = run_weir("apply", relu, "expand-library-node", "--site", "5", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "usage: weir apply");
  run_clear(&r);
  g_unlink(relu);
  g_rmdir(dir);
}

/* The example plugin, found through WEIR_PLUGIN_PATH; refused plugins on
 * the path are warnings. */
static void test_plugin_path(void **state) {
  (void)state;
  g_autofree char *plugins = g_path_get_dirname(WEIR_EXAMPLE_PLUGIN);
  g_autofree char *bad = g_path_get_dirname(WEIR_BAD_PLUGIN);
  g_autofree char *path = g_strdup_printf("%s:%s", plugins, bad);
  g_setenv("WEIR_PLUGIN_PATH", path, TRUE);
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *out = g_build_filename(dir, "q.json", NULL);
  Run r =
      run_weir("transforms", "samples/vector_add.json", "--tier", "2", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "tier 2  int8-fake-quant: ");
  assert_contains(r.out, "--site 10  legal  state 4: node 10 (access 'C')");
  assert_contains(r.err, "warning: plugin '");
  assert_contains(r.err, "no symbol weir_plugin_register");
  assert_contains(r.err, "is newer than this Weir's");
  run_clear(&r);
  r = run_weir("apply", "samples/vector_add.json", "int8-fake-quant", "-D",
               "N=1000", "-p", "scale=0.5", "-o", out, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "(scale=0.5)");
  /* 12000 bytes, plus a read and a write of C. */
  assert_contains(r.out, "logical volume 11.7 KiB -> 19.5 KiB  (+7.8 KiB, "
                         "+66.7%)");
  run_clear(&r);
  r = run_weir("run-ref", out, "-D", "N=16", NULL);
  assert_int_equal(r.status, 0);
  run_clear(&r);
  g_unsetenv("WEIR_PLUGIN_PATH");
  r = run_weir("apply", "samples/vector_add.json", "int8-fake-quant", "-o", out,
               NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "unknown transformation 'int8-fake-quant'");
  run_clear(&r);
  g_unlink(out);
  g_rmdir(dir);
}

/* ------------------------------------------------------------ ONNX models */

static const char *onnx_data(void) {
  const char *env = g_getenv("WEIR_ONNX_TESTDATA");
  return env ? env : "/usr/share/libonnx-testdata/data";
}

/* A node test directory of the ONNX test data, or NULL (test skipped). */
static char *node_test(const char *name) {
  char *p = g_build_filename(onnx_data(), "node", name, NULL);
  if (!g_file_test(p, G_FILE_TEST_IS_DIR)) {
    print_message("libonnx-testdata not installed: skipping\n");
    g_free(p);
    return NULL;
  }
  return p;
}

/* Removes a temporary directory tree. */
static void remove_tree(const char *path) {
  if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
    g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
      g_autofree char *child = g_build_filename(path, name, NULL);
      remove_tree(child);
    }
  }
  g_remove(path);
}

static void copy_file(const char *from, const char *to) {
  g_autofree char *data = NULL;
  gsize len = 0;
  assert_true(g_file_get_contents(from, &data, &len, NULL));
  assert_true(g_file_set_contents(to, data, (gssize)len, NULL));
}

static void test_import_and_inspect(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *json = g_build_filename(dir, "mlp.json", NULL);
  Run r = run_weir("import", "samples/models/mlp.onnx", "-o", json, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "5 library nodes");
  assert_contains(r.out, "symbols: batch");
  run_clear(&r);
  r = run_weir("validate", json, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "valid");
  run_clear(&r);

  /* info and validate read ONNX models directly. */
  r = run_weir("info", "samples/models/mlp.onnx", "-D", "batch=4", NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "batch=4");
  assert_contains(r.out, "fc1_weight");
  assert_contains(r.out, "library 5");
  run_clear(&r);
  r = run_weir("validate", "samples/models/lenet.onnx", NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "lenet.onnx: valid");
  run_clear(&r);

  /* Binding the batch size at import. */
  r = run_weir("import", "samples/models/mlp.onnx", "-o", json, "-D", "batch=2",
               NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "symbols: (none)");
  run_clear(&r);
  g_autofree char *text = NULL;
  assert_true(g_file_get_contents(json, &text, NULL, NULL));
  assert_contains(text, "\"2\",\n        \"10\"");

  /* Errors: not a model, an unsupported operator, no -o. */
  r = run_weir("import", "samples/matmul.json", "-o", json, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "not an ONNX model");
  run_clear(&r);
  r = run_weir("import", "samples/models/mlp.onnx", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "usage: weir import");
  run_clear(&r);
  g_autofree char *unsup = node_test("test_bernoulli");
  if (unsup) {
    g_autofree char *model = g_build_filename(unsup, "model.onnx", NULL);
    r = run_weir("import", model, "-o", json, NULL);
    assert_int_equal(r.status, 1);
    assert_contains(r.err,
                    "1 unsupported operator: Bernoulli (1 node: Bernoulli_0)");
    run_clear(&r);
  }
  remove_tree(dir);
}

static void test_expand(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *out = g_build_filename(dir, "relu.json", NULL);
  Run r = run_weir("expand", "samples/models/mlp.onnx", "--op", "Relu", "-o",
                   out, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "expanded 2 library nodes of Relu (3 left)");
  run_clear(&r);
  g_autofree char *all = g_build_filename(dir, "all.json", NULL);
  r = run_weir("expand", out, "-o", all, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "expanded 3 library nodes (0 left)");
  run_clear(&r);
  r = run_weir("info", all, "-D", "batch=1", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "library 0");
  run_clear(&r);
  r = run_weir("expand", "samples/models/mlp.onnx", NULL);
  assert_int_equal(r.status, 2);
  run_clear(&r);
  remove_tree(dir);
}

static void test_run_ref_files(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *npy = g_build_filename(dir, "out.npy", NULL);
  g_autofree char *write_spec = g_strdup_printf("output=%s", npy);
  /* Inputs from .pb, expected outputs from .npy, the output written. */
  Run r = run_weir("run-ref", "samples/models/lenet.onnx", "--input",
                   "input=samples/models/lenet/input_0.pb", "--expect",
                   "output=samples/models/lenet/output_0.npy", "--output",
                   write_spec, NULL);
  if (r.status != 0)
    fail_msg("%s\n%s", r.out, r.err);
  assert_contains(r.out, "library nodes expanded first");
  assert_contains(r.out, "output: max abs error");
  assert_contains(r.out, ": ok");
  run_clear(&r);
  assert_true(g_file_test(npy, G_FILE_TEST_EXISTS));
  /* The written output compares equal to itself, exactly. */
  r = run_weir("run-ref", "samples/models/lenet.onnx", "--input",
               "input=samples/models/lenet/input_0.pb", "--expect", write_spec,
               "--rtol", "0", "--atol", "0", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "max abs error 0 ");
  run_clear(&r);

  /* The symbolic batch of the MLP comes from the input file. */
  r = run_weir("run-ref", "samples/models/mlp.onnx", "--input",
               "input=samples/models/mlp/input_0.npy", "--expect",
               "output=samples/models/mlp/output_0.pb", NULL);
  if (r.status != 0)
    fail_msg("%s\n%s", r.out, r.err);
  assert_contains(r.out, "f32[4, 10]");
  run_clear(&r);

  /* A mismatch: exit status 1. */
  r = run_weir("run-ref", "samples/models/mlp.onnx", "--input",
               "input=samples/models/mlp/input_0.npy", "--expect",
               "output=samples/models/lenet/output_0.npy", "--atol", "1e-9",
               NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "MISMATCH");
  run_clear(&r);
  r = run_weir("run-ref", "samples/models/mlp.onnx", "--input",
               "input=samples/models/mlp/input_0.npy", "--expect",
               "output=samples/models/mlp/input_0.npy", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "f32[4, 10], but");
  run_clear(&r);

  /* Unknown argument names and missing files. */
  r = run_weir("run-ref", "samples/models/mlp.onnx", "--input",
               "nope=samples/models/mlp/input_0.npy", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "--input nope: no argument of that name "
                         "(arguments: input, output)");
  run_clear(&r);
  r = run_weir("run-ref", "samples/models/mlp.onnx", "--input",
               "input=missing.npy", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "missing.npy");
  run_clear(&r);
  r = run_weir("run-ref", "samples/models/mlp.onnx", "--input", "input", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "expected NAME=FILE");
  run_clear(&r);
  remove_tree(dir);
}

static void test_conformance(void **state) {
  (void)state;
  g_autofree char *add = node_test("test_add");
  if (!add)
    skip();
  g_autofree char *unsup = node_test("test_bernoulli");
  g_autofree char *gap = node_test("test_training_dropout");
  Run r = run_weir("conformance", add, unsup, NULL);
  if (r.status != 0)
    fail_msg("%s\n%s", r.out, r.err);
  assert_contains(r.out, "test_add ");
  assert_contains(r.out, "pass");
  /* An operator Weir does not implement does not fail the run. */
  assert_contains(r.out, "unsupported (1 unsupported operator: Bernoulli");
  assert_contains(r.out, "Totals per operator");
  assert_contains(r.out, "2 tests: 1 pass, 0 FAIL, 1 unsupported, 0 error");
  run_clear(&r);

  /* A feature Weir lacks in an operator it has fails the run, unless the
   * expectations file lists the test. */
  r = run_weir("conformance", gap, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "1 unexpected result");
  run_clear(&r);
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *list = g_build_filename(dir, "expected.txt", NULL);
  assert_true(g_file_set_contents(
      list, "# comment\n\ntest_training_dropout  # random masks\n", -1, NULL));
  r = run_weir("conformance", "--expected-unsupported", list, gap, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "[expected]");
  run_clear(&r);
  /* A listed test that passes is pointed out. */
  assert_true(
      g_file_set_contents(list, "test_add  # wrong on purpose\n", -1, NULL));
  r = run_weir("conformance", "--expected-unsupported", list, add, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "remove it");
  run_clear(&r);
  /* Every line needs a reason. */
  assert_true(g_file_set_contents(list, "test_add\n", -1, NULL));
  r = run_weir("conformance", "--expected-unsupported", list, add, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "expected.txt:1: 'test_add' needs a reason");
  run_clear(&r);

  /* A wrong result: the model of test_add with its input as the expected
   * output.  FAIL, with the error, and a failed run. */
  g_autofree char *bad = g_build_filename(dir, "test_add_wrong", NULL);
  g_autofree char *set = g_build_filename(bad, "test_data_set_0", NULL);
  assert_int_equal(g_mkdir_with_parents(set, 0700), 0);
  const char *files[][2] = {
      {"model.onnx", "model.onnx"},
      {"test_data_set_0/input_0.pb", "test_data_set_0/input_0.pb"},
      {"test_data_set_0/input_1.pb", "test_data_set_0/input_1.pb"},
      {"test_data_set_0/input_0.pb", "test_data_set_0/output_0.pb"}};
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *from = g_build_filename(add, files[i][0], NULL);
    g_autofree char *to = g_build_filename(bad, files[i][1], NULL);
    copy_file(from, to);
  }
  r = run_weir("conformance", dir, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "test_add_wrong  FAIL (max error");
  assert_contains(r.out, "output 'sum'");
  run_clear(&r);
  /* A tolerance override large enough makes it pass. */
  assert_true(g_file_set_contents(
      list, "test_add_wrong rtol=0 atol=100  # inputs are in [-10, 10]\n", -1,
      NULL));
  r = run_weir("conformance", "--expected-unsupported", list, bad, NULL);
  if (r.status != 0)
    fail_msg("%s", r.out);
  run_clear(&r);

  /* Known bad data: a FAIL listed as such is counted apart and does not
   * fail the run; nothing is counted as a pass. */
  g_autofree char *bad_list = g_build_filename(dir, "bad-data.txt", NULL);
  assert_true(g_file_set_contents(
      bad_list, "# comment\ntest_add_wrong  FAIL  # output is an input\n", -1,
      NULL));
  r = run_weir("conformance", "--known-bad-data", bad_list, bad, NULL);
  if (r.status != 0)
    fail_msg("%s\n%s", r.out, r.err);
  assert_contains(r.out, "test_add_wrong  bad data: FAIL (max error");
  assert_contains(r.out, "[known bad data]");
  assert_contains(
      r.out, "1 tests: 0 pass, 0 FAIL, 0 unsupported, 0 error, 1 bad data");
  run_clear(&r);
  /* with the expectations file too */
  assert_true(
      g_file_set_contents(list, "test_bernoulli  # random\n", -1, NULL));
  r = run_weir("conformance", "--expected-unsupported", list,
               "--known-bad-data", bad_list, bad, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "1 bad data");
  run_clear(&r);
  /* Listed with another status than it gives: an unexpected result. */
  assert_true(g_file_set_contents(
      bad_list, "test_add_wrong  error  # output is an input\n", -1, NULL));
  r = run_weir("conformance", "--known-bad-data", bad_list, bad, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "test_add_wrong  FAIL (max error");
  assert_contains(r.out, "[listed as known bad data with another status]");
  assert_contains(r.out, "1 unexpected result");
  run_clear(&r);
  /* Listed but passing: a pass, pointed out. */
  assert_true(g_file_set_contents(
      bad_list, "test_add  FAIL  # wrong on purpose\n", -1, NULL));
  r = run_weir("conformance", "--known-bad-data", bad_list, add, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "[listed as known bad data: remove it]");
  assert_contains(r.out, "1 pass, 0 FAIL, 0 unsupported, 0 error, 0 bad data");
  assert_contains(r.out, "now passes (was the data fixed?)");
  run_clear(&r);
  /* The status and the evidence are required; a test is listed once. */
  static const struct {
    const char *text, *message;
  } bad_files[] = {
      {"test_add  # no status\n",
       "bad-data.txt:1: 'test_add': expected the status the bad data gives "
       "(FAIL or error)"},
      {"test_add pass  # not a status\n", "bad-data.txt:1: 'test_add': "
                                          "expected the status"},
      {"test_add FAIL\n", "bad-data.txt:1: 'test_add' needs the evidence"},
      {"test_add FAIL extra # x\n", "unexpected 'extra' after the status"},
      {"\ntest_add FAIL # x\ntest_add error # y\n",
       "bad-data.txt:3: 'test_add' is listed twice"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad_files); i++) {
    assert_true(g_file_set_contents(bad_list, bad_files[i].text, -1, NULL));
    r = run_weir("conformance", "--known-bad-data", bad_list, add, NULL);
    assert_int_equal(r.status, 2);
    assert_contains(r.err, bad_files[i].message);
    run_clear(&r);
  }
  /* Not in both lists. */
  assert_true(g_file_set_contents(list, "test_add  # x\n", -1, NULL));
  assert_true(g_file_set_contents(bad_list, "test_add FAIL # y\n", -1, NULL));
  r = run_weir("conformance", "--expected-unsupported", list,
               "--known-bad-data", bad_list, add, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "bad-data.txt:1: 'test_add' is also listed with the "
                         "expected results");
  run_clear(&r);

  r = run_weir("conformance", "/nonexistent", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "/nonexistent: no such directory");
  run_clear(&r);
  remove_tree(dir);
}

/* weir conformance --backend compiled: generated code through the cache;
 * a wrong expected output fails here too. */
static void test_conformance_compiled(void **state) {
  (void)state;
  g_autofree char *add = node_test("test_add");
  if (!add)
    skip();
  g_autofree char *unsup = node_test("test_bernoulli");
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *cache = g_build_filename(dir, "cache", NULL);
  Run r = run_weir("conformance", "--backend", "compiled", "--cache-dir", cache,
                   add, unsup, NULL);
  if (r.status != 0)
    fail_msg("%s\n%s", r.out, r.err);
  assert_contains(r.out, "test_add ");
  assert_contains(r.out, "unsupported (1 unsupported operator: Bernoulli");
  assert_contains(r.out, "2 tests: 1 pass, 0 FAIL, 1 unsupported, 0 error, "
                         "0 bad data (backend compiled");
  run_clear(&r);
  /* the kernel is in the cache: one object */
  r = run_weir("cache", "stats", "--cache-dir", cache, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "objects   1\n");
  run_clear(&r);

  /* test_add with its first input as the expected output */
  g_autofree char *tests = g_build_filename(dir, "tests", NULL);
  g_autofree char *bad = g_build_filename(tests, "test_add_wrong", NULL);
  g_autofree char *set = g_build_filename(bad, "test_data_set_0", NULL);
  assert_int_equal(g_mkdir_with_parents(set, 0700), 0);
  const char *files[][2] = {
      {"model.onnx", "model.onnx"},
      {"test_data_set_0/input_0.pb", "test_data_set_0/input_0.pb"},
      {"test_data_set_0/input_1.pb", "test_data_set_0/input_1.pb"},
      {"test_data_set_0/input_0.pb", "test_data_set_0/output_0.pb"}};
  for (guint i = 0; i < G_N_ELEMENTS(files); i++) {
    g_autofree char *from = g_build_filename(add, files[i][0], NULL);
    g_autofree char *to = g_build_filename(bad, files[i][1], NULL);
    copy_file(from, to);
  }
  r = run_weir("conformance", "--backend", "compiled", "--cache-dir", cache,
               tests, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "test_add_wrong  FAIL (max error");
  assert_contains(r.out, "output 'sum'");
  run_clear(&r);
  /* same program, same code: still one object */
  r = run_weir("cache", "stats", "--cache-dir", cache, NULL);
  assert_contains(r.out, "objects   1\n");
  run_clear(&r);
  /* a compiler that fails is an error that names the test's program */
  r = run_weir("conformance", "--backend", "compiled", "--no-cache", "--cc",
               "false", add, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "test_add  error (");
  run_clear(&r);

  r = run_weir("conformance", "--backend", "gpu", add, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "unknown backend 'gpu' (known: interp, compiled)");
  run_clear(&r);
  remove_tree(dir);
}

/* Writes a TensorProto file of the given ONNX element type and shape
 * [3, 4], zeros as raw_data: dims (field 1), data_type (2), raw_data (9). */
static void write_zeros_3x4(const char *path, int onnx_type, guint elem_size) {
  GByteArray *b = g_byte_array_new();
  const guint8 head[] = {0x08, 3,
                         0x08, 4,
                         0x10, (guint8)onnx_type,
                         0x4a, (guint8)(12 * elem_size)};
  g_byte_array_append(b, head, sizeof head);
  for (guint i = 0; i < 12 * elem_size; i++)
    g_byte_array_append(b, (const guint8 *)"", 1);
  assert_true(g_file_set_contents(path, (const char *)b->data, b->len, NULL));
  g_byte_array_unref(b);
}

/* The CastLike tests with BFLOAT16 are known bad data
 * (tests/conformance/known-bad-data.txt): their input 'like' is stored with
 * shape [1] where the model declares [3, 4].  With 'like' stored as the
 * model declares it (its values are not read, only its type), Weir passes
 * them: BFLOAT16 to FLOAT exactly, FLOAT to BFLOAT16 within one bf16 step
 * (the stored words are truncated; Weir rounds to nearest even, as
 * test_cast_FLOAT_to_BFLOAT16's tolerance line says). */
static void test_conformance_castlike_corrected(void **state) {
  (void)state;
  static const struct {
    const char *name;
    int like_type; /* ONNX element type of 'like' */
    guint size;
  } tests[] = {{"test_castlike_BFLOAT16_to_FLOAT", 1, 4},
               {"test_castlike_BFLOAT16_to_FLOAT_expanded", 1, 4},
               {"test_castlike_FLOAT_to_BFLOAT16", 16, 2},
               {"test_castlike_FLOAT_to_BFLOAT16_expanded", 16, 2}};
  g_autofree char *first = node_test(tests[0].name);
  if (!first)
    skip();
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *list = g_build_filename(dir, "tolerances.txt", NULL);
  assert_true(g_file_set_contents(
      list,
      "test_castlike_FLOAT_to_BFLOAT16 rtol=0.0079  # truncated words\n"
      "test_castlike_FLOAT_to_BFLOAT16_expanded rtol=0.0079  # truncated\n",
      -1, NULL));
  for (guint i = 0; i < G_N_ELEMENTS(tests); i++) {
    g_autofree char *orig = node_test(tests[i].name);
    assert_non_null(orig);
    g_autofree char *copy = g_build_filename(dir, tests[i].name, NULL);
    g_autofree char *set = g_build_filename(copy, "test_data_set_0", NULL);
    assert_int_equal(g_mkdir_with_parents(set, 0700), 0);
    static const char *const files[] = {"model.onnx",
                                        "test_data_set_0/input_0.pb",
                                        "test_data_set_0/output_0.pb"};
    for (guint k = 0; k < G_N_ELEMENTS(files); k++) {
      g_autofree char *from = g_build_filename(orig, files[k], NULL);
      g_autofree char *to = g_build_filename(copy, files[k], NULL);
      copy_file(from, to);
    }
    /* the stored data as it is: an error (the bad data) */
    Run r = run_weir("conformance", "--any-opset", orig, NULL);
    assert_int_equal(r.status, 1);
    assert_contains(r.out, "error (input 'like' has rank 2, but the given "
                           "shape has 1 dimensions)");
    run_clear(&r);
    g_autofree char *like = g_build_filename(set, "input_1.pb", NULL);
    write_zeros_3x4(like, tests[i].like_type, tests[i].size);
    r = run_weir("conformance", "--any-opset", "--expected-unsupported", list,
                 copy, NULL);
    if (r.status != 0)
      fail_msg("%s\n%s", r.out, r.err);
    assert_contains(r.out, "1 tests: 1 pass, 0 FAIL");
    run_clear(&r);
  }
  remove_tree(dir);
}

static void test_ops(void **state) {
  (void)state;
  Run r = run_weir("ops", NULL);
  assert_int_equal(r.status, 0);
  /* An input that the importer moves into an attribute, with its opset. */
  assert_contains(r.out, "Reshape");
  assert_contains(r.out, "shape <- 2 from 5");
  /* Operators of other ONNX domains are shown with it. */
  assert_contains(r.out, "ai.onnx.preview.training.Adam ");
  assert_contains(r.out, "operators ('!': required attribute)");
  run_clear(&r);
}

static void test_usage(void **state) {
  (void)state;
  Run r = run_weir("frobnicate", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "unknown command 'frobnicate'");
  run_clear(&r);
  r = run_weir("--help", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "validate");
  run_clear(&r);
  r = run_weir("info", NULL);
  assert_int_equal(r.status, 2);
  run_clear(&r);
}

/* ------------------------------------------------------------ workspaces */

/* The testing transformations (test-schedule, test-tile, ...) come from a
 * plugin built next to this test. */
static void use_test_plugin(void) {
  g_setenv("WEIR_PLUGIN_PATH", WEIR_TEST_PLUGIN_DIR, TRUE);
}

typedef struct {
  char *dir;
} Scratch;

static char *scratch_file(Scratch *sc, const char *name) {
  if (!sc->dir)
    sc->dir = g_dir_make_tmp("weir-cli-ws-XXXXXX", NULL);
  return g_build_filename(sc->dir, name, NULL);
}

static void scratch_clear(Scratch *sc) {
  GDir *d = sc->dir ? g_dir_open(sc->dir, 0, NULL) : NULL;
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    g_autofree char *p = g_build_filename(sc->dir, name, NULL);
    g_unlink(p);
  }
  if (d)
    g_dir_close(d);
  if (sc->dir)
    g_rmdir(sc->dir);
  g_free(sc->dir);
}

#define run_ok(r)                                                              \
  do {                                                                         \
    if ((r).status != 0)                                                       \
      fail_msg("exit %d\nstdout:\n%s\nstderr:\n%s", (r).status, (r).out,       \
               (r).err);                                                       \
  } while (0)

static char *read_text(const char *path) {
  char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, NULL))
    fail_msg("cannot read %s", path);
  return text;
}

static void test_workspace_session(void **state) {
  (void)state;
  use_test_plugin();
  Scratch sc = {0};
  g_autofree char *ws = scratch_file(&sc, "s.weir");
  Run r = run_weir("new", "samples/softmax.json", "-o", ws, NULL);
  run_ok(r);
  assert_contains(r.out, "step      0 of 0: the original program");
  assert_contains(r.out, "modeled traffic        ");
  assert_contains(r.out, "logical volume         72.4 KiB");
  run_clear(&r);
  r = run_weir("new", "samples/softmax.json", "-o", ws, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "use --force");
  run_clear(&r);
  r = run_weir("open", "samples/softmax.json", "-o", ws, "--force", NULL);
  run_ok(r);
  run_clear(&r);

  /* The workspace form of the framework's listing: the current program. */
  r = run_weir("transforms", ws, "--tier", "1", "--node", "rowmax", NULL);
  run_ok(r);
  assert_contains(r.out, "tier 1  test-schedule");
  assert_contains(r.out, "--site 13  legal  state 6: node 13 "
                         "(map_entry 'rowmax')");
  assert_contains(r.out, "not legal  state 6: node 13 (map_entry 'rowmax'): "
                         "map 'rowmax' has 2 parameters, tile gives 1 sizes");
  if (strstr(r.out, "'init'"))
    fail_msg("--node rowmax listed init:\n%s", r.out);
  run_clear(&r);
  r = run_weir("info", ws, NULL);
  run_ok(r);
  assert_contains(r.out, "program   softmax");
  run_clear(&r);

  r = run_weir("apply", ws, "test-schedule", "--site", "rowmax", NULL);
  run_ok(r);
  assert_contains(r.out, "step 1: test-schedule at state 6: node 13 "
                         "(map_entry 'rowmax') (schedule=simd)");
  assert_contains(r.out, "step      1 of 1");
  run_clear(&r);
  r = run_weir("apply", ws, "test-tile", "--site", "@2", "--param", "tile=4,4",
               NULL);
  run_ok(r);
  assert_contains(r.out, "(map_entry 'expsum') (tile=4,4)");
  run_clear(&r);
  r = run_weir("apply", ws, "test-tile", "--site", "6:22", "-p", "tile=8,8",
               NULL);
  run_ok(r);
  assert_contains(r.out, "step      3 of 3");
  run_clear(&r);

  /* Refusals leave the workspace as it was. */
  r = run_weir("apply", ws, "test-tile", "--site", "13", "-p", "tile=4", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "has 2 parameters, tile gives 1 sizes");
  run_clear(&r);
  r = run_weir("apply", ws, "test-schedule", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "4 sites; choose one with --site:");
  assert_contains(r.err, "@3  state 6: node 22 (map_entry 'normalize')");
  run_clear(&r);
  r = run_weir("apply", ws, "no-such", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "unknown transformation 'no-such'");
  run_clear(&r);
  r = run_weir("apply", ws, "test-schedule", "--site", "99", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "no node 99");
  run_clear(&r);

  r = run_weir("undo", ws, NULL);
  run_ok(r);
  assert_contains(r.out, "step      2 of 3: test-tile");
  run_clear(&r);
  r = run_weir("bookmark", ws, "tiled", NULL);
  run_ok(r);
  assert_contains(r.out, "bookmark 'tiled' on step 2");
  run_clear(&r);
  r = run_weir("goto", ws, "0", NULL);
  run_ok(r);
  assert_contains(r.out, "step      0 of 3: the original program");
  run_clear(&r);
  r = run_weir("undo", ws, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "nothing to undo");
  run_clear(&r);
  r = run_weir("goto", ws, "tiled", NULL);
  run_ok(r);
  assert_contains(r.out, "step      2 of 3: test-tile at state 6: node 17 "
                         "(map_entry 'expsum')  [tiled]");
  run_clear(&r);
  r = run_weir("goto", ws, "7", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "step 7 does not exist");
  run_clear(&r);
  r = run_weir("goto", ws, "nowhere", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "no step or bookmark 'nowhere'");
  run_clear(&r);

  /* History, with the redo tail, and its export as a recipe. */
  g_autofree char *recipe = scratch_file(&sc, "r.json");
  r = run_weir("history", ws, "--export-recipe", recipe, NULL);
  run_ok(r);
  assert_contains(r.out, ">  2     test-tile");
  assert_contains(r.out, "(step 3 can be redone)");
  assert_contains(r.out, "exported steps 1..2");
  run_clear(&r);
  g_autofree char *rtext = read_text(recipe);
  assert_contains(rtext, "\"transform\": \"test-schedule\"");
  assert_contains(rtext, "\"tile\": \"4,4\"");

  /* Replaying the recipe on the model gives the workspace's program, byte
   * for byte (an empty recipe writes a workspace's current program). */
  g_autofree char *replayed = scratch_file(&sc, "replayed.json");
  g_autofree char *current = scratch_file(&sc, "current.json");
  g_autofree char *empty = scratch_file(&sc, "empty.json");
  assert_true(g_file_set_contents(
      empty, "{\"format\": \"weir-recipe\", \"version\": 1, \"steps\": []}", -1,
      NULL));
  r = run_weir("optimize", "samples/softmax.json", "--recipe", recipe, "-o",
               replayed, NULL);
  run_ok(r);
  assert_contains(r.out, "2 recipe steps, 2 applications");
  run_clear(&r);
  r = run_weir("optimize", ws, "--recipe", empty, "-o", current, NULL);
  run_ok(r);
  run_clear(&r);
  g_autofree char *a = read_text(replayed);
  g_autofree char *b = read_text(current);
  assert_string_equal(a, b);

  /* Applying after undo drops the redo tail. */
  r = run_weir("apply", ws, "test-schedule", "--site", "init", NULL);
  run_ok(r);
  assert_contains(r.out, "step      3 of 3: test-schedule");
  run_clear(&r);
  r = run_weir("redo", ws, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "nothing to redo");
  run_clear(&r);

  /* Program files are not workspaces. */
  r = run_weir("undo", "samples/softmax.json", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "not a workspace (.weir)");
  run_clear(&r);
  g_autofree char *bad = scratch_file(&sc, "bad.weir");
  assert_true(g_file_set_contents(bad, "garbage garbage garbage", -1, NULL));
  r = run_weir("history", bad, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "bad.weir: not a Weir workspace");
  run_clear(&r);
  scratch_clear(&sc);
  g_unsetenv("WEIR_PLUGIN_PATH");
}

static void test_optimize(void **state) {
  (void)state;
  use_test_plugin();
  Scratch sc = {0};
  g_autofree char *recipe = scratch_file(&sc, "r.json");
  assert_true(g_file_set_contents(
      recipe,
      "{\"format\": \"weir-recipe\", \"version\": 1, \"steps\": [\n"
      "  {\"transform\": \"test-schedule\", \"site\": {\"node\": \"*m*\"}},\n"
      "  {\"transform\": \"test-fail\", \"optional\": true},\n"
      "  {\"transform\": \"test-tile\", \"site\": {\"first\": true},\n"
      "   \"params\": {\"tile\": [4, 4]}}]}\n",
      -1, NULL));
  g_autofree char *out = scratch_file(&sc, "o.weir");
  Run r = run_weir("optimize", "samples/softmax.json", "--recipe", recipe, "-o",
                   out, "--report", NULL);
  run_ok(r);
  assert_contains(r.out, "step 1  test-schedule  site {\"node\":\"*m*\"}");
  assert_contains(r.out, "ok: 3 matched, 3 applied");
  assert_contains(r.out, "skipped (optional step failed)");
  assert_contains(r.out, "deliberate failure");
  assert_contains(r.out, "applied at state 6: node 13 (map_entry 'rowmax')");
  assert_contains(r.out, "3 recipe steps, 4 applications");
  assert_contains(r.out, "wrote ");
  run_clear(&r);
  r = run_weir("history", out, NULL);
  run_ok(r);
  assert_contains(r.out, ">  4     test-tile");
  run_clear(&r);

  /* Same model, same recipe: the same bytes. */
  g_autofree char *j1 = scratch_file(&sc, "1.json");
  g_autofree char *j2 = scratch_file(&sc, "2.json");
  r = run_weir("optimize", "samples/softmax.json", "-r", recipe, "-o", j1,
               NULL);
  run_ok(r);
  run_clear(&r);
  r = run_weir("optimize", "samples/softmax.json", "-r", recipe, "-o", j2,
               NULL);
  run_ok(r);
  run_clear(&r);
  g_autofree char *a = read_text(j1);
  g_autofree char *b = read_text(j2);
  assert_string_equal(a, b);

  /* A failing step: the report says which, nothing is written. */
  assert_true(g_file_set_contents(
      recipe,
      "{\"format\": \"weir-recipe\", \"version\": 1, \"steps\": [\n"
      "  {\"transform\": \"test-schedule\", \"site\": {\"node\": \"init\"}},"
      "  {\"transform\": \"test-schedule\", \"site\": {\"node\": \"zz*\"}}]}",
      -1, NULL));
  g_autofree char *none = scratch_file(&sc, "none.json");
  r = run_weir("optimize", "samples/softmax.json", "-r", recipe, "-o", none,
               NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "FAILED");
  assert_contains(r.err, "r.json: steps[1] (test-schedule, site "
                         "{\"node\":\"zz*\"}): matched nothing");
  assert_false(g_file_test(none, G_FILE_TEST_EXISTS));
  run_clear(&r);

  /* A broken recipe names the place. */
  assert_true(g_file_set_contents(
      recipe,
      "{\"format\": \"weir-recipe\", \"version\": 1, \"steps\": [\n"
      "  {\"transform\": \"test-tile\", \"params\": {\"tile\": {}}}]}",
      -1, NULL));
  r = run_weir("optimize", "samples/softmax.json", "-r", recipe, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "r.json: steps[0].params.tile: expected a string");
  run_clear(&r);
  r = run_weir("optimize", "samples/softmax.json", NULL);
  assert_int_equal(r.status, 2);
  run_clear(&r);
  scratch_clear(&sc);
  g_unsetenv("WEIR_PLUGIN_PATH");
}

/* A workspace on an ONNX model, with the built-in expand-library-node. */
static void test_workspace_model(void **state) {
  (void)state;
  Scratch sc = {0};
  g_autofree char *ws = scratch_file(&sc, "lenet.weir");
  Run r = run_weir("new", "samples/models/lenet.onnx", "-o", ws, NULL);
  run_ok(r);
  assert_contains(r.out, "(program ");
  assert_contains(r.out, "from samples/models/lenet.onnx");
  run_clear(&r);
  r = run_weir("apply", ws, "expand-library-node", "--site", "/Relu*", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "expand-library-node: 3 sites match /Relu*; choose "
                         "one with --site:");
  run_clear(&r);
  r = run_weir("apply", ws, "expand-library-node", "--site", "/conv1/Conv",
               "-p", "impl=pure", NULL);
  run_ok(r);
  assert_contains(r.out, "step 1: expand-library-node at state");
  assert_contains(r.out, "(library '/conv1/Conv') (impl=pure)");
  assert_contains(r.out, "step      1 of 1");
  run_clear(&r);
  r = run_weir("apply", ws, "expand-library-node", "--site", "/fc1/Gemm", "-o",
               "x.json", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "saved in place");
  run_clear(&r);

  g_autofree char *out = scratch_file(&sc, "out.weir");
  r = run_weir("optimize", "samples/models/lenet.onnx", "--recipe",
               "samples/recipes/expand-convs-first.json", "-o", out, "--report",
               NULL);
  run_ok(r);
  assert_contains(r.out, "ok: 2 matched, 2 applied");
  assert_contains(r.out, "applied at state");
  assert_contains(r.out, "(library '/conv2/Conv')");
  assert_contains(r.out, "ok: 7 matched, 7 applied in 2 iterations");
  assert_contains(r.out, "2 recipe steps, 9 applications");
  run_clear(&r);
  r = run_weir("history", out, NULL);
  run_ok(r);
  assert_contains(r.out, ">  9     expand-library-node");
  run_clear(&r);
  scratch_clear(&sc);
}

/* ------------------------------------------------------------- runtime */

static void test_cache_stats_and_clear_empty(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-cache-XXXXXX", NULL);
  Run r = run_weir("cache", "stats", "--cache-dir", dir, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, dir);
  assert_contains(r.out, "objects   0");
  assert_contains(r.out, "limit 1.0 GiB");
  run_clear(&r);
  r = run_weir("cache", "clear", "--cache-dir", dir, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "removed 0 objects");
  run_clear(&r);
  r = run_weir("cache", "frobnicate", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "stats|clear");
  run_clear(&r);
  remove_tree(dir);
}

#define FAST_FLAGS "-O1 -fopenmp -fPIC -shared"

static void test_codegen(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-cg-XXXXXX", NULL);
  g_autofree char *out = g_build_filename(dir, "gen", NULL);
  Run r = run_weir("codegen", "samples/matmul.json", "-o", out, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "matmul.c");
  run_clear(&r);
  g_autofree char *c = g_build_filename(out, "matmul.c", NULL);
  g_autofree char *h = g_build_filename(out, "matmul.h", NULL);
  g_autofree char *text = NULL;
  assert_true(g_file_get_contents(c, &text, NULL, NULL));
  assert_contains(text, "matmul_run(");
  assert_contains(text, "matmul_abi_version(");
  assert_true(g_file_test(h, G_FILE_TEST_IS_REGULAR));
  r = run_weir("codegen", NULL);
  assert_int_equal(r.status, 2);
  run_clear(&r);
  remove_tree(dir);
}

/* weir run: compiled, then from the cache; --check; files in and out. */
static void test_run_compiled(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-run-XXXXXX", NULL);
  g_autofree char *cache = g_build_filename(dir, "cache", NULL);
  Run r = run_weir("run", "samples/softmax.json", "--check", "--cache-dir",
                   cache, "--cflags", FAST_FLAGS, NULL);
  if (r.status != 0)
    fail_msg("%s%s", r.out, r.err);
  assert_contains(r.out, "samples/softmax.json: compiled in");
  assert_contains(r.out, "check against the reference interpreter");
  assert_contains(r.out, "  Y: max abs error");
  assert_contains(r.out, "f32[32, 64]");
  run_clear(&r);
  r = run_weir("run", "samples/softmax.json", "--cache-dir", cache, "--cflags",
               FAST_FLAGS, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "loaded from the compile cache");
  assert_contains(r.out, "no C generated");
  assert_contains(r.out, "kernel memory   parameters ");
  run_clear(&r);
  r = run_weir("cache", "stats", "--cache-dir", cache, NULL);
  assert_contains(r.out, "objects   1");
  assert_contains(r.out, "hits      1");
  run_clear(&r);

  /* --output, then --input and --expect with the files written */
  g_autofree char *c_npy = g_build_filename(dir, "c.npy", NULL);
  g_autofree char *a_pb = g_build_filename(dir, "a.pb", NULL);
  g_autofree char *out_c = g_strconcat("C=", c_npy, NULL);
  g_autofree char *out_a = g_strconcat("A=", a_pb, NULL);
  r = run_weir("run", "samples/vector_add.json", "-D", "N=300", "--seed", "5",
               "--output", out_c, "--output", out_a, "--cache-dir", cache,
               "--cflags", FAST_FLAGS, NULL);
  if (r.status != 0)
    fail_msg("%s%s", r.out, r.err);
  assert_contains(r.out, "C: written to");
  run_clear(&r);
  r = run_weir("run", "samples/vector_add.json", "-D", "N=300", "--seed", "5",
               "--input", out_a, "--expect", out_c, "--cache-dir", cache,
               "--cflags", FAST_FLAGS, NULL);
  if (r.status != 0)
    fail_msg("%s%s", r.out, r.err);
  assert_contains(r.out, "C: max abs error 0");
  run_clear(&r);
  /* other random B: the expectation fails, exit status 1 */
  r = run_weir("run", "samples/vector_add.json", "-D", "N=300", "--seed", "6",
               "--input", out_a, "--expect", out_c, "--cache-dir", cache,
               "--cflags", FAST_FLAGS, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "MISMATCH");
  run_clear(&r);
  /* a file of the wrong shape is refused */
  r = run_weir("run", "samples/vector_add.json", "-D", "N=299", "--input",
               out_a, "--cache-dir", cache, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "has shape [300]");
  run_clear(&r);
  r = run_weir("run", "samples/vector_add.json", "-D", "N=3", "--expect",
               "Q=x.npy", "--cache-dir", cache, "--cflags", FAST_FLAGS, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "no argument of that name");
  run_clear(&r);
  remove_tree(dir);
}

/* An ONNX model compiled against PyTorch's output. */
static void test_run_model(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-model-XXXXXX", NULL);
  Run r = run_weir("run", "samples/models/lenet.onnx", "--input",
                   "input=samples/models/lenet/input_0.pb", "--expect",
                   "output=samples/models/lenet/output_0.npy", "--cache-dir",
                   dir, "--cflags", FAST_FLAGS, "--reps", "3", NULL);
  if (r.status != 0)
    fail_msg("%s%s", r.out, r.err);
  assert_contains(r.out, ": ok");
  /* the summary: modeled traffic and logical volume as compiled, timing */
  assert_contains(r.out, "summary\n  level           -O2 (");
  assert_contains(r.out, " transformations applied)\n  traffic         ");
  assert_contains(r.out, "(modeled memory traffic as compiled, ");
  assert_contains(r.out, "cache), peak transient memory ");
  assert_contains(r.out, "FLOP/B of traffic\n");
  assert_contains(r.out, "  logical volume  ");
  assert_contains(r.out, "(median of 3 runs), ");
  run_clear(&r);
  /* -O0: as imported, nothing applied; a bad level is refused */
  r = run_weir("run", "samples/models/lenet.onnx", "-O0", "--input",
               "input=samples/models/lenet/input_0.pb", "--expect",
               "output=samples/models/lenet/output_0.npy", "--cache-dir", dir,
               "--cflags", FAST_FLAGS, NULL);
  if (r.status != 0)
    fail_msg("%s%s", r.out, r.err);
  assert_contains(r.out, ": ok");
  assert_contains(r.out, "level           -O0 (0 transformations applied)");
  run_clear(&r);
  r = run_weir("run", "samples/models/lenet.onnx", "-O7", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "'7' is not an optimization level");
  run_clear(&r);
  remove_tree(dir);
}

/* The optimization levels: the printed pipeline is a recipe that
 * --recipe takes and that gives what -O2 gives. */
static void test_levels(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-levels-XXXXXX", NULL);
  g_autofree char *recipe = g_build_filename(dir, "O2.json", NULL);
  g_autofree char *a = g_build_filename(dir, "a.json", NULL);
  g_autofree char *b = g_build_filename(dir, "b.json", NULL);
  Run r = run_weir("optimize", "--print-pipeline", "-O2", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "\"transform\": \"epilogue-fusion\"");
  assert_true(g_file_set_contents(recipe, r.out, -1, NULL));
  run_clear(&r);
  r = run_weir("optimize", "samples/models/resnet.onnx", "-O2", "-o", a, NULL);
  if (r.status != 0)
    fail_msg("%s%s", r.out, r.err);
  assert_contains(r.out, "-O2: 18 recipe steps, ");
  run_clear(&r);
  r = run_weir("optimize", "samples/models/resnet.onnx", "--recipe", recipe,
               "-o", b, NULL);
  assert_int_equal(r.status, 0);
  run_clear(&r);
  g_autofree char *ta = NULL, *tb = NULL;
  assert_true(g_file_get_contents(a, &ta, NULL, NULL));
  assert_true(g_file_get_contents(b, &tb, NULL, NULL));
  assert_string_equal(ta, tb);
  /* a recipe and a level at once, or neither: usage */
  r = run_weir("optimize", "samples/models/resnet.onnx", "--recipe", recipe,
               "-O1", NULL);
  assert_int_equal(r.status, 2);
  run_clear(&r);
  r = run_weir("optimize", "samples/models/resnet.onnx", NULL);
  assert_int_equal(r.status, 2);
  run_clear(&r);
  remove_tree(dir);
}

/* --impl: each choice shows in the generated code, runs match PyTorch,
 * and wrong choices are refused with the node or option named. */
static void test_impl(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-impl-XXXXXX", NULL);
  g_autofree char *out = g_build_filename(dir, "gen", NULL);
  static const struct {
    const char *impl[2];
    const char *want, *absent;
  } cg[] = {
      {{"Conv=im2col", "Gemm=blas"}, "weir_conv2d_im2col_f32(", NULL},
      {{"Conv=pure", "Gemm=pure"}, "torch_jit_run(", "cblas_"},
      {{"Conv=pure", "Gemm=blas"}, "cblas_sgemm(", "weir_conv2d_im2col"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cg); i++) {
    Run r = run_weir("codegen", "samples/models/resnet.onnx", "--impl",
                     cg[i].impl[0], "--impl", cg[i].impl[1], "-o", out, NULL);
    if (r.status != 0)
      fail_msg("%s", r.err);
    run_clear(&r);
    g_autofree char *c = g_build_filename(out, "torch_jit.c", NULL);
    g_autofree char *text = NULL;
    assert_true(g_file_get_contents(c, &text, NULL, NULL));
    assert_contains(text, cg[i].want);
    if (cg[i].absent && strstr(text, cg[i].absent))
      fail_msg("'%s' with %s", cg[i].absent, cg[i].impl[0]);
    if (!cg[i].absent)
      assert_contains(text, "/* weir-link: openblas */");
  }
  Run r = run_weir("run", "samples/models/lenet.onnx", "--impl", "Conv=pure",
                   "--impl", "Gemm=blas", "--input",
                   "input=samples/models/lenet/input_0.pb", "--expect",
                   "output=samples/models/lenet/output_0.npy", "--cache-dir",
                   dir, "--cflags", FAST_FLAGS, "--reps", "3", NULL);
  if (r.status != 0)
    fail_msg("%s%s", r.out, r.err);
  assert_contains(r.out, ": ok");
  /* the summary: modeled traffic and logical volume as compiled, timing */
  assert_contains(r.out, "summary\n  level           -O2 (");
  assert_contains(r.out, " transformations applied)\n  traffic         ");
  assert_contains(r.out, "(modeled memory traffic as compiled, ");
  assert_contains(r.out, "cache), peak transient memory ");
  assert_contains(r.out, "FLOP/B of traffic\n");
  assert_contains(r.out, "  logical volume  ");
  assert_contains(r.out, "(median of 3 runs), ");
  run_clear(&r);
  r = run_weir("codegen", "samples/models/resnet.onnx", "--impl", "Conv=direct",
               "-o", out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "implementation 'direct' of Conv does not apply");
  assert_contains(r.err, "node 4 (library '/conv/Conv')");
  run_clear(&r);
  r = run_weir("codegen", "samples/models/resnet.onnx", "--impl", "Conv=blas",
               "-o", out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "--impl Conv=blas");
  run_clear(&r);
  r = run_weir("codegen", "samples/models/resnet.onnx", "--impl", "Conv", "-o",
               out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "expected OP=IMPL");
  run_clear(&r);
  remove_tree(dir);
}

static void test_run_compile_error(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-err-XXXXXX", NULL);
  Run r = run_weir("run", "samples/vector_add.json", "-D", "N=4", "--cache-dir",
                   dir, "--cflags",
                   "-O1 -fPIC -shared -include /nonexistent/header.h", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "compiling 'vector_add' failed");
  assert_contains(r.err, "/nonexistent/header.h");
  assert_contains(r.err, "weir codegen samples/vector_add.json -o DIR");
  run_clear(&r);
  r = run_weir("run", "samples/vector_add.json", "-D", "N=4", "--cache-dir",
               dir, "--cc", "/nonexistent/cc", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "/nonexistent/cc");
  run_clear(&r);
  remove_tree(dir);
}

static void test_bench(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-bench-XXXXXX", NULL);
  Run r = run_weir("bench", "samples/vector_add.json", "-D", "N=100000",
                   "--reps", "3", "--warmup", "1", "--threads", "2", "--cflags",
                   FAST_FLAGS, "--cache-dir", dir, "--cold", NULL);
  if (r.status != 0)
    fail_msg("%s%s", r.out, r.err);
  assert_contains(r.out, "compile  cold ");
  assert_contains(r.out, "cached ");
  assert_contains(r.out, "1 warm-up, 3 timed, threads 2");
  assert_contains(r.out, "time     median ");
  assert_contains(r.out, "FLOPs    100000  ->  ");
  assert_contains(r.out, "GFLOP/s");
  assert_contains(r.out, "GB/s");
  run_clear(&r);
  /* cold compiles use their own temporary cache, not this one */
  r = run_weir("cache", "stats", "--cache-dir", dir, NULL);
  assert_contains(r.out, "objects   0");
  run_clear(&r);
  /* without --cold: through the cache, like weir run */
  for (int i = 0; i < 2; i++) {
    r = run_weir("bench", "samples/vector_add.json", "-D", "N=1000", "--reps",
                 "2", "--cflags", FAST_FLAGS, "--cache-dir", dir, NULL);
    if (r.status != 0)
      fail_msg("%s%s", r.out, r.err);
    assert_contains(r.out, i ? "compile  loaded from the compile cache in "
                             : "now in the compile cache");
    run_clear(&r);
  }
  r = run_weir("cache", "stats", "--cache-dir", dir, NULL);
  assert_contains(r.out, "objects   1");
  run_clear(&r);
  r = run_weir("bench", "samples/vector_add.json", "-D", "N=10", "--reps", "0",
               NULL);
  assert_int_equal(r.status, 2);
  run_clear(&r);
  remove_tree(dir);
}

/* weir train-graph: a training program that validates and runs; bad
 * options and models without a rule are reported. */
static void test_train_graph(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-XXXXXX", NULL);
  g_autofree char *out = g_build_filename(dir, "mlp-train.json", NULL);
  Run r = run_weir("train-graph", "samples/models/mlp.onnx", "--loss",
                   "softmax-cross-entropy", "--optimizer", "adam", "--lr",
                   "0.001", "--weight-decay", "0.01", "-o", out, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "6 parameters");
  run_clear(&r);
  r = run_weir("run-ref", out, "-D", "batch=2", "-D", "K=2", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "losses");
  assert_contains(r.out, "fc1_weight_v");
  run_clear(&r);
  r = run_weir("train-graph", "samples/models/mlp.onnx", "--loss", "hinge",
               "--optimizer", "sgd", "-o", out, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "unknown loss 'hinge'");
  run_clear(&r);
  r = run_weir("train-graph", "samples/models/mlp.onnx", "--loss", "mse",
               "--optimizer", "sgd", "--output", "nope", "-o", out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "no output 'nope'");
  run_clear(&r);
  g_remove(out);
  g_rmdir(dir);
}

int main(void) {
  /* never the user's compile cache */
  g_autofree char *home = g_dir_make_tmp("weir-cli-home-XXXXXX", NULL);
  g_setenv("XDG_CACHE_HOME", home, TRUE);
  g_unsetenv("WEIR_CACHE_DIR");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_info_matmul),
      cmocka_unit_test(test_train_graph),
      cmocka_unit_test(test_info_symbolic_and_bound),
      cmocka_unit_test(test_info_count),
      cmocka_unit_test(test_initializers_and_params),
      cmocka_unit_test(test_validate_samples),
      cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_run_ref),
      cmocka_unit_test(test_transforms),
      cmocka_unit_test(test_apply),
      cmocka_unit_test(test_plugin_path),
      cmocka_unit_test(test_import_and_inspect),
      cmocka_unit_test(test_expand),
      cmocka_unit_test(test_run_ref_files),
      cmocka_unit_test(test_conformance),
      cmocka_unit_test(test_conformance_compiled),
      cmocka_unit_test(test_conformance_castlike_corrected),
      cmocka_unit_test(test_ops),
      cmocka_unit_test(test_usage),
      cmocka_unit_test(test_workspace_session),
      cmocka_unit_test(test_optimize),
      cmocka_unit_test(test_workspace_model),
      cmocka_unit_test(test_cache_stats_and_clear_empty),
      cmocka_unit_test(test_codegen),
      cmocka_unit_test(test_impl),
      cmocka_unit_test(test_run_compiled),
      cmocka_unit_test(test_run_model),
      cmocka_unit_test(test_levels),
      cmocka_unit_test(test_run_compile_error),
      cmocka_unit_test(test_bench),
      cmocka_unit_test(test_prune),
      cmocka_unit_test(test_quantize_bf16),
  };
  /* No plugins from the user's own directory. */
  g_setenv("XDG_DATA_HOME", "/nonexistent-weir-test-data", TRUE);
  g_unsetenv("WEIR_PLUGIN_PATH");
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  remove_tree(home);
  return rc;
}
