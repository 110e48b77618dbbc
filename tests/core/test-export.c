/* test-export.c — exported kernel directories, built with plain make and
 * run.
 *
 * Each test exports a program with weir_export() (or the weir binary, path
 * in WEIR_CLI) into a temporary directory, runs `make` there (the system
 * make and cc, no Weir), runs ./harness and checks its exit status and what
 * it printed.  Harness runs are short (--reps 2 --warmup 0). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <sys/wait.h>

#include "weir.h"

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    if (!strstr((hay), (needle)))                                              \
      fail_msg("expected to find '%s' in:\n%s", (needle), (hay));              \
  } while (0)

typedef struct {
  int status;
  char *out;
  char *err;
} Run;

static void run_clear(Run *r) {
  g_free(r->out);
  g_free(r->err);
}

/* Runs argv (NULL-terminated list, searched in PATH) in dir. */
static Run run_in(const char *dir, const char *first, ...) {
  GPtrArray *argv = g_ptr_array_new();
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
      g_spawn_sync(dir, (char **)argv->pdata, NULL, G_SPAWN_SEARCH_PATH, NULL,
                   NULL, &r.out, &r.err, &wait_status, &error);
  g_ptr_array_unref(argv);
  if (!ok)
    fail_msg("%s: %s", first, error->message);
  r.status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  return r;
}

static void remove_tree(const char *path) {
  GDir *d = g_dir_open(path, 0, NULL);
  if (d) {
    const char *n;
    while ((n = g_dir_read_name(d))) {
      g_autofree char *p = g_build_filename(path, n, NULL);
      if (g_file_test(p, G_FILE_TEST_IS_DIR))
        remove_tree(p);
      else
        g_unlink(p);
    }
    g_dir_close(d);
  }
  g_rmdir(path);
}

static char *sample(const char *name) {
  return g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
}

/* Builds dir with make and runs the harness; returns its run. */
static Run build_and_run(const char *dir) {
  Run m = run_in(dir, "make", NULL);
  if (m.status != 0)
    fail_msg("make in %s failed:\n%s\n%s", dir, m.out, m.err);
  run_clear(&m);
  return run_in(dir, "./harness", "--reps", "2", "--warmup", "0", NULL);
}

static void assert_passes(const char *dir) {
  Run r = build_and_run(dir);
  if (r.status != 0)
    fail_msg("harness in %s exited with %d:\n%s\n%s", dir, r.status, r.out,
             r.err);
  assert_contains(r.out, "result: PASS");
  assert_contains(r.out, "max abs error");
  assert_contains(r.out, "time: median");
  /* the rate is of the modeled traffic; the logical volume has none */
  assert_contains(r.out, "GB/s of modeled memory traffic (");
  const char *lv = strstr(r.out, "logical volume ");
  assert_non_null(lv);
  const char *eol = strchr(lv, '\n');
  g_autofree char *line = g_strndup(lv, eol ? (gsize)(eol - lv) : strlen(lv));
  assert_null(strstr(line, "GB/s"));
  run_clear(&r);
}

static char *read_text(const char *dir, const char *name) {
  g_autofree char *p = g_build_filename(dir, name, NULL);
  char *text = NULL;
  if (!g_file_get_contents(p, &text, NULL, NULL))
    fail_msg("%s is missing", p);
  return text;
}

/* A hardware profile of fixed figures: a 256 KiB L2 and no L3 (model
 * cache 256 KiB), 12.5 GB/s measured. */
static WeirHwProfile *test_profile(void) {
  WeirHwProfile *p = weir_hw_detect();
  g_free(p->cpu_model);
  p->cpu_model = g_strdup("Test CPU");
  p->logical_cores = p->physical_cores = 2;
  p->l1d_bytes = 32 << 10;
  p->l2_bytes = 256 << 10;
  p->l3_bytes = 0;
  p->measured = TRUE;
  p->peak_gflops_1t = 50;
  p->peak_gflops_all = 100;
  p->bandwidth_gbs = 12.5;
  p->load_average = 0.5;
  p->cache_knee_bytes = 0;
  return p;
}

/* ------------------------------------------------------------------ tests */

static void test_matmul(void **state) {
  (void)state;
  g_autofree char *tmp = g_dir_make_tmp("weir-export-XXXXXX", NULL);
  g_autofree char *dir = g_build_filename(tmp, "matmul", NULL);
  g_autofree char *path = sample("matmul.json");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_load(path, &error);
  assert_non_null(g);
  WeirExportInfo info;
  g_autoptr(WeirHwProfile) hw = test_profile();
  WeirExportOptions opts = {.seed = 1,
                            .rtol = -1,
                            .atol = -1,
                            .source = "samples/matmul.json",
                            .hw = hw};
  if (!weir_export(g, dir, &opts, &info, &error))
    fail_msg("%s", error->message);
  assert_string_equal(info.prefix, "matmul");
  assert_int_equal(info.n_outputs, 1);
  assert_int_equal(info.n_generated, 3);
  assert_true(info.interpreted);
  const char *want[] = {"Makefile",      "README.md", "data/C.expected.npy",
                        "main.c",        "matmul.c",  "matmul.h",
                        "matmul.weights"};
  assert_int_equal(info.files->len, G_N_ELEMENTS(want));
  for (guint i = 0; i < G_N_ELEMENTS(want); i++)
    assert_string_equal(g_ptr_array_index(info.files, i), want[i]);
  weir_export_info_clear(&info);

  /* the expected output is the interpreter's on the generated inputs */
  g_autofree char *exp = g_build_filename(dir, "data/C.expected.npy", NULL);
  g_autoptr(WeirTensor) c = weir_tensor_load(exp, NULL, &error);
  assert_non_null(c);
  WeirTensor *a = weir_tensor_new(WEIR_DTYPE_F32, 2, (gint64[]){64, 32});
  WeirTensor *b = weir_tensor_new(WEIR_DTYPE_F32, 2, (gint64[]){32, 48});
  weir_tensor_fill_random(a, 1 + 1); /* seed + container id */
  weir_tensor_fill_random(b, 1 + 2);
  double c00 = 0;
  for (int k = 0; k < 32; k++)
    c00 += weir_tensor_get(a, k) * weir_tensor_get(b, k * 48);
  assert_float_equal(weir_tensor_get(c, 0), c00, 1e-4);
  weir_tensor_free(a);
  weir_tensor_free(b);

  /* Modeled traffic with the profile's 256 KiB cache: each state's map
   * fits, so it moves its footprint once: C (64 x 48 f32, 12288 B) in the
   * zeroing state; A (8192 B), B (6144 B) and C in the product: 38912 B.
   * The logical volume names every operand once per multiply-add: A and
   * B 98304 B each, C 98304 B (WCR) and 12288 B zeroed, over the tasklet
   * memlets and the boundary ones. */
  g_autofree char *readme = read_text(dir, "README.md");
  assert_contains(readme, "| modeled memory traffic | 38912 B (38.0 KiB) |");
  assert_contains(readme, "| logical volume (not memory traffic) | 1191936 B "
                          "(1.1 MiB) |");
  assert_contains(readme, "`Test CPU`, 2 logical cores; model cache 256.0 KiB "
                          "(the L2)");
  assert_contains(readme, "measured memory bandwidth 12.5 GB/s");
  assert_contains(readme, "FLOPs | 196608");
  assert_contains(readme, "| operational intensity | 5.053 FLOP/byte of "
                          "modeled traffic |");
  assert_true(strstr(readme, "bytes moved") == NULL);
  g_autofree char *main_c = read_text(dir, "main.c");
  assert_contains(main_c, "#define TRAFFIC_BYTES 38912.0");
  assert_contains(main_c, "#define TRAFFIC_CACHE 262144.0");
  assert_contains(main_c, "#define LOGICAL_BYTES 1191936.0");
  assert_contains(readme, "peak transient memory");
  assert_contains(readme, "| `C` | f32 | [64, 48] | argument |");
  assert_contains(readme, "None: the program was exported as loaded");
  g_autofree char *makefile = read_text(dir, "Makefile");
  assert_contains(makefile, "CFLAGS ?= -O3 -fopenmp");
  assert_contains(makefile, "CC ?= cc");

  assert_passes(dir);
  remove_tree(tmp);
}

/* The sample MLP (Gemm nodes: OpenBLAS calls) with PyTorch's input; the
 * interpreter's expected output must agree with PyTorch's. */
static void test_model(void **state) {
  (void)state;
  g_autofree char *tmp = g_dir_make_tmp("weir-export-XXXXXX", NULL);
  g_autofree char *dir = g_build_filename(tmp, "mlp", NULL);
  g_autofree char *model = sample("models/mlp.onnx");
  g_autofree char *in_path = sample("models/mlp/input_0.npy");
  g_autofree char *out_path = sample("models/mlp/output_0.npy");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTensor) input = weir_tensor_load(in_path, NULL, &error);
  g_autoptr(WeirTensor) torch = weir_tensor_load(out_path, NULL, &error);
  assert_non_null(input);
  assert_non_null(torch);
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  WeirOnnxImportOptions io = {.names = names};
  g_autoptr(WeirGraph) g = weir_onnx_import(model, &io, &error);
  assert_non_null(g);
  /* OpenBLAS for the Gemms (f32 defaults to Weir's own GEMM), so that the
   * Makefile's link line is checked below */
  assert_true(weir_native_set_impl(g, "Gemm", "blas", NULL, &error));
  const char *in_name = g_hash_table_lookup(names, "input");
  const char *out_name = g_hash_table_lookup(names, "output");
  assert_non_null(in_name);
  assert_non_null(out_name);
  g_autoptr(GHashTable) inputs = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(inputs, (gpointer)in_name, input);
  WeirExportOptions opts = {
      .inputs = inputs, .seed = 1, .rtol = -1, .atol = -1};
  WeirExportInfo info;
  if (!weir_export(g, dir, &opts, &info, &error))
    fail_msg("%s", error->message);
  assert_int_equal(info.n_inputs, 1);
  weir_export_info_clear(&info);

  g_autofree char *exp_name = g_strdup_printf("data/%s.expected.npy", out_name);
  g_autofree char *exp = g_build_filename(dir, exp_name, NULL);
  g_autoptr(WeirTensor) expected = weir_tensor_load(exp, NULL, &error);
  assert_non_null(expected);
  assert_true(weir_tensor_allclose(expected, torch, 1e-4, 1e-5, NULL, &error));
  g_autofree char *makefile = read_text(dir, "Makefile");
  assert_contains(makefile, "-lopenblas");
  g_autofree char *readme = read_text(dir, "README.md");
  assert_contains(readme, "library 5,"); /* Gemm and Relu nodes */

  /* the parameters are in the weights file, not in the C source */
  g_autofree char *c_src = read_text(dir, "torch_jit.c");
  g_autofree char *header = read_text(dir, "torch_jit.h");
  assert_contains(header, "consts[0]  fc1_weight  f32[128, 64]");
  assert_contains(c_src, "(const float *)consts[0]");
  assert_null(strstr(c_src, "static const float fc1_weight"));
  g_autofree char *wpath = g_build_filename(dir, "torch_jit.weights", NULL);
  gsize wlen = 0;
  g_autofree char *wdata = NULL;
  assert_true(g_file_get_contents(wpath, &wdata, &wlen, NULL));
  assert_true(wlen >= weir_codegen_constants_bytes(g));
  assert_memory_equal(wdata, "WEIRCST1", 8);

  assert_passes(dir);
  /* a weights file of another kernel is refused */
  assert_true(g_file_set_contents(wpath, wdata, 100, NULL));
  Run r = run_in(dir, "./harness", "--reps", "0", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "torch_jit.weights");
  run_clear(&r);
  remove_tree(tmp);
}

/* A workspace with one applied transformation, saved and reopened, exported
 * through the command line. */
static void test_workspace(void **state) {
  (void)state;
  g_autofree char *tmp = g_dir_make_tmp("weir-export-XXXXXX", NULL);
  g_autofree char *ws = g_build_filename(tmp, "softmax.weir", NULL);
  g_autofree char *dir = g_build_filename(tmp, "out", NULL);
  g_autofree char *path = sample("softmax.json");
  g_autoptr(GError) error = NULL;
  weir_transforms_init();
  {
    g_autoptr(WeirGraph) g = weir_graph_load(path, &error);
    assert_non_null(g);
    g_autoptr(WeirSession) s = weir_session_new(g, path, NULL, &error);
    assert_non_null(s);
    const WeirTransformInfo *t = weir_transform_lookup("map-tiling");
    assert_non_null(t);
    g_autoptr(GArray) sites = weir_transform_sites(t, g);
    const WeirSite *site = NULL;
    for (guint i = 0; i < sites->len && !site; i++) {
      const WeirSite *c = &g_array_index(sites, WeirSite, i);
      g_autofree char *reason = NULL;
      if (weir_transform_can_apply(t, g, c, NULL, &reason))
        site = c;
    }
    assert_non_null(site);
    const char *params[] = {"tile=8", NULL};
    if (!weir_session_apply(s, "map-tiling", site, params, &error))
      fail_msg("%s", error->message);
    assert_true(weir_workspace_save(s, ws, &error));
  }
  Run r = run_in(tmp, WEIR_CLI, "export", ws, "-o", dir, NULL);
  if (r.status != 0)
    fail_msg("weir export: %s", r.err);
  assert_contains(r.out, "kernel 'softmax'");
  run_clear(&r);
  g_autofree char *readme = read_text(dir, "README.md");
  assert_contains(readme, "| 1 | map-tiling |");
  assert_contains(readme, "tile=8");
  g_autofree char *recipe = read_text(dir, "recipe.json");
  assert_contains(recipe, "\"map-tiling\"");
  g_autofree char *source = read_text(dir, "softmax.c");
  assert_contains(source, "_tile"); /* the tiled loop */

  assert_passes(dir);
  remove_tree(tmp);
}

/* Overwrites bytes of a file at offset (from the end when negative). */
static void patch_file(const char *path, goffset offset, const void *bytes,
                       gsize n) {
  g_autofree char *text = NULL;
  gsize len = 0;
  assert_true(g_file_get_contents(path, &text, &len, NULL));
  gsize at = offset < 0 ? len + offset : (gsize)offset;
  assert_true(at + n <= len);
  memcpy(text + at, bytes, n);
  assert_true(g_file_set_contents(path, text, len, NULL));
}

/* A corrupted expected output makes the harness fail: a wrong value (exit 1,
 * FAIL), a truncated file and a wrong dtype (exit 2). */
static void test_corrupted_expected(void **state) {
  (void)state;
  g_autofree char *tmp = g_dir_make_tmp("weir-export-XXXXXX", NULL);
  g_autofree char *dir = g_build_filename(tmp, "vadd", NULL);
  g_autofree char *path = sample("vector_add.json");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_load(path, &error);
  assert_non_null(g);
  g_autoptr(GHashTable) symbols = weir_bindings_new();
  weir_bindings_set(symbols, "N", 1000);
  WeirExportOptions opts = {
      .symbols = symbols, .seed = 7, .rtol = -1, .atol = -1};
  if (!weir_export(g, dir, &opts, NULL, &error))
    fail_msg("%s", error->message);
  assert_passes(dir);

  g_autofree char *exp = g_build_filename(dir, "data/C.expected.npy", NULL);
  g_autofree char *orig = NULL;
  gsize len = 0;
  assert_true(g_file_get_contents(exp, &orig, &len, NULL));
  float bad = 42.0f; /* the last element: inputs are in [-1, 1) */
  patch_file(exp, -4, &bad, sizeof bad);
  Run r = run_in(dir, "./harness", "--reps", "0", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.out, "MISMATCH");
  assert_contains(r.out, "first at index 999");
  assert_contains(r.out, "result: FAIL");
  run_clear(&r);

  /* a slightly wrong value passes only with a looser tolerance */
  float v;
  memcpy(&v, orig + len - 4, 4);
  v += 1e-3f;
  patch_file(exp, -4, &v, sizeof v);
  r = run_in(dir, "./harness", "--reps", "0", NULL);
  assert_int_equal(r.status, 1);
  run_clear(&r);
  r = run_in(dir, "./harness", "--reps", "0", "--atol", "1e-2", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "result: PASS");
  run_clear(&r);

  assert_true(g_file_set_contents(exp, orig, (gssize)len - 4, NULL));
  r = run_in(dir, "./harness", "--reps", "0", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "C.expected.npy");
  run_clear(&r);

  g_autofree char *wrong = g_memdup2(orig, len);
  char *descr = memmem(wrong, len, "<f4", 3);
  assert_non_null(descr);
  descr[2] = '8'; /* '<f8' */
  assert_true(g_file_set_contents(exp, wrong, (gssize)len, NULL));
  r = run_in(dir, "./harness", "--reps", "0", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "'C' is f32");
  run_clear(&r);

  /* another seed: the inputs differ, so the check is skipped */
  assert_true(g_file_set_contents(exp, orig, (gssize)len, NULL));
  r = run_in(dir, "./harness", "--reps", "0", "--seed", "8", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "NOT CHECKED");
  run_clear(&r);
  remove_tree(tmp);
}

static guint count_entries(const char *dir) {
  guint n = 0;
  GDir *d = g_dir_open(dir, 0, NULL);
  assert_non_null(d);
  while (g_dir_read_name(d))
    n++;
  g_dir_close(d);
  return n;
}

static void test_errors(void **state) {
  (void)state;
  g_autofree char *tmp = g_dir_make_tmp("weir-export-XXXXXX", NULL);
  g_autofree char *dir = g_build_filename(tmp, "out", NULL);
  g_autofree char *keep = g_build_filename(dir, "keep.txt", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *mm = sample("matmul.json");
  g_autoptr(WeirGraph) g = weir_graph_load(mm, &error);
  assert_non_null(g);

  /* a non-empty directory is kept without force */
  assert_int_equal(g_mkdir(dir, 0755), 0);
  assert_true(g_file_set_contents(keep, "mine", -1, NULL));
  assert_false(weir_export(g, dir, NULL, NULL, &error));
  assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_IO));
  assert_contains(error->message, "not empty");
  assert_contains(error->message, dir);
  g_clear_error(&error);
  assert_true(g_file_test(keep, G_FILE_TEST_EXISTS));
  /* and replaced with it */
  WeirExportOptions force = {.seed = 1, .rtol = -1, .atol = -1, .force = TRUE};
  assert_true(weir_export(g, dir, &force, NULL, &error));
  assert_false(g_file_test(keep, G_FILE_TEST_EXISTS));
  g_autofree char *src = g_build_filename(dir, "matmul.c", NULL);
  assert_true(g_file_test(src, G_FILE_TEST_EXISTS));
  assert_int_equal(count_entries(tmp), 1); /* no temporary left */

  /* never the current directory, even with force */
  g_autofree char *cwd = g_get_current_dir();
  assert_false(weir_export(g, ".", &force, NULL, &error));
  assert_contains(error->message, "refusing");
  g_clear_error(&error);
  g_autofree char *cwd_after = g_get_current_dir();
  assert_string_equal(cwd, cwd_after);

  /* unwritable: a file where a directory should be */
  g_autofree char *file = g_build_filename(tmp, "file", NULL);
  g_autofree char *under = g_build_filename(file, "out", NULL);
  assert_true(g_file_set_contents(file, "x", -1, NULL));
  assert_false(weir_export(g, under, NULL, NULL, &error));
  assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_IO));
  assert_contains(error->message, under);
  g_clear_error(&error);
  assert_false(weir_export(g, file, NULL, NULL, &error));
  assert_contains(error->message, "not a directory");
  g_clear_error(&error);

  /* an unbound symbol */
  g_autofree char *va = sample("vector_add.json");
  g_autoptr(WeirGraph) v = weir_graph_load(va, &error);
  assert_non_null(v);
  g_autofree char *vdir = g_build_filename(tmp, "vadd", NULL);
  assert_false(weir_export(v, vdir, NULL, NULL, &error));
  assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_INVALID));
  assert_contains(error->message, "symbol 'N'");
  g_clear_error(&error);

  /* an input of the wrong shape, and one that is no argument */
  g_autoptr(WeirTensor) small =
      weir_tensor_new(WEIR_DTYPE_F32, 2, (gint64[]){2, 2});
  g_autoptr(GHashTable) inputs = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(inputs, "A", small);
  WeirExportOptions with = {
      .inputs = inputs, .seed = 1, .rtol = -1, .atol = -1};
  g_autofree char *adir = g_build_filename(tmp, "a", NULL);
  assert_false(weir_export(g, adir, &with, NULL, &error));
  assert_contains(error->message, "input 'A' is f32[2, 2]");
  g_clear_error(&error);
  g_hash_table_remove_all(inputs);
  g_hash_table_insert(inputs, "nope", small);
  assert_false(weir_export(g, adir, &with, NULL, &error));
  assert_contains(error->message, "'nope': no argument");
  g_clear_error(&error);

  /* a program the code generator refuses: a native choice that does not
   * exist for the node */
  g_autofree char *model = sample("models/mlp.onnx");
  g_autoptr(WeirGraph) m = weir_onnx_import(model, NULL, &error);
  assert_non_null(m);
  WeirNode *relu = NULL;
  const WeirState *st = g_ptr_array_index(m->states, 0);
  for (guint i = 0; i < st->nodes->len && !relu; i++) {
    WeirNode *n = g_ptr_array_index(st->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY && strcmp(n->op, "Relu") == 0)
      relu = n;
  }
  assert_non_null(relu);
  weir_node_set_attr_string(relu, "impl", "blas");
  g_autofree char *mdir = g_build_filename(tmp, "m", NULL);
  assert_false(weir_export(m, mdir, NULL, NULL, &error));
  assert_contains(error->message, "cannot generate code");
  assert_contains(error->message, "/Relu");
  g_clear_error(&error);

  /* nothing was left behind by the failures */
  assert_int_equal(count_entries(tmp), 2); /* out, file */

  /* the command line says the same */
  Run r = run_in(tmp, WEIR_CLI, "export", mm, "-o", dir, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "weir export:");
  assert_contains(r.err, "--force");
  run_clear(&r);
  remove_tree(tmp);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_model),
      cmocka_unit_test(test_workspace),
      cmocka_unit_test(test_corrupted_expected),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
