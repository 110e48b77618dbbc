/* test-mpi-train.c — data-parallel `weir train` over MPI (suite mpi,
 * docs/distributed.md): with SGD, 2 ranks at batch B per rank give the
 * parameters of one process at batch 2B (within 1e-5 relative, per
 * tensor: max |a - b| / max |b|), with the buckets reduced both ways:
 * overlapped (AllreduceStart / AllreduceWait, the default) and blocking
 * (--no-overlap); rank 0 alone prints and writes the model, and the run
 * says it ran on 2 ranks.
 *
 * Runs `mpirun --oversubscribe --allow-run-as-root -np 2 weir train ...`;
 * skipped (exit 77) when mpirun is missing or libweir is built without
 * MPI.  Under AddressSanitizer, Open MPI's own allocations that live until
 * exit are suppressed for LeakSanitizer with tests/cli/mpi-lsan.supp (set
 * in LSAN_OPTIONS by tests/meson.build); Weir's leaks are still reported.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <sys/wait.h>

#include <glib.h>

#include "tmpdir-fixture.h"
#include "weir-mpi.h"
#include "weir-onnx.h"
#include "weir-tensor.h"

#define DIGITS                                                                 \
  "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
#define MLP "samples/models/digits_mlp.onnx"

typedef struct {
  int status;
  char *out;
  char *err;
} Run;

static void run_clear(Run *r) {
  g_free(r->out);
  g_free(r->err);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Run, run_clear)

static int setup(void **state) {
  (void)state;
  return tmpdir_setup("weir-mpi-train");
}

static int teardown(void **state) {
  (void)state;
  return tmpdir_teardown();
}

/* Runs argv (NULL-terminated) from the source directory with one OpenMP
 * thread per process.  Under AddressSanitizer the ranks unwind the stacks
 * of allocations fully (fast_unwind_on_malloc=0, added to the inherited
 * ASAN_OPTIONS, leak detection stays on): Open MPI's libraries have no
 * frame pointers, and the suppressions match their leaks by library. */
static Run run(const char *const *argv) {
  g_auto(GStrv) env =
      g_environ_setenv(g_get_environ(), "OMP_NUM_THREADS", "1", TRUE);
  const char *asan = g_environ_getenv(env, "ASAN_OPTIONS");
  g_autofree char *asan_full =
      asan && *asan ? g_strconcat(asan, ":fast_unwind_on_malloc=0", NULL)
                    : g_strdup("fast_unwind_on_malloc=0");
  env = g_environ_setenv(env, "ASAN_OPTIONS", asan_full, TRUE);
  Run r = {0};
  int wait_status = 0;
  g_autoptr(GError) error = NULL;
  gboolean ok =
      g_spawn_sync(WEIR_SRCDIR, (char **)argv, env, G_SPAWN_SEARCH_PATH, NULL,
                   NULL, &r.out, &r.err, &wait_status, &error);
  if (!ok)
    fail_msg("%s: %s", argv[0], error->message);
  r.status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  return r;
}

/* weir train on the digits, SGD, two epochs, batch `batch` per process;
 * `extra` (or NULL) one more option. */
static Run train(gboolean mpi, const char *batch, const char *out,
                 const char *extra) {
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  if (mpi) {
    static const char *const launch[] = {"mpirun", "--oversubscribe",
                                         "--allow-run-as-root", "-np", "2"};
    for (guint i = 0; i < G_N_ELEMENTS(launch); i++)
      g_ptr_array_add(argv, (gpointer)launch[i]);
  }
  const char *const args[] = {
      WEIR_CLI, "train",    MLP,   "--data",  DIGITS, "--scale",
      "1/16",   "--epochs", "2",   "--batch", batch,  "--optimizer",
      "sgd",    "--lr",     "0.1", "--seed",  "1",    "--threads",
      "1",      "-o",       out};
  for (guint i = 0; i < G_N_ELEMENTS(args); i++)
    g_ptr_array_add(argv, (gpointer)args[i]);
  if (extra)
    g_ptr_array_add(argv, (gpointer)extra);
  g_ptr_array_add(argv, NULL);
  return run((const char *const *)argv->pdata);
}

static void compare_models(const char *a_path, const char *b_path) {
  g_autoptr(GError) error = NULL;
  WeirOnnxModel *a = weir_onnx_model_load(a_path, &error);
  assert_non_null(a);
  WeirOnnxModel *b = weir_onnx_model_load(b_path, &error);
  assert_non_null(b);
  const WeirOnnxGraph *ga = weir_onnx_model_graph(a);
  assert_true(ga->n_initializers >= 2);
  for (guint i = 0; i < ga->n_initializers; i++) {
    const char *name = ga->initializers[i].name;
    g_autoptr(WeirTensor) ta = weir_onnx_model_initializer(a, name, &error);
    g_autoptr(WeirTensor) tb = weir_onnx_model_initializer(b, name, &error);
    assert_non_null(ta);
    assert_non_null(tb);
    assert_int_equal(ta->count, tb->count);
    double diff = 0, scale = 0;
    for (gint64 j = 0; j < ta->count; j++) {
      diff = MAX(diff, fabs(weir_tensor_get(ta, j) - weir_tensor_get(tb, j)));
      scale = MAX(scale, fabs(weir_tensor_get(tb, j)));
    }
    if (diff > 1e-5 * scale)
      fail_msg("initializer '%s': max difference %g, max value %g (2 ranks "
               "x batch 16 against 1 x batch 32)",
               name, diff, scale);
    print_message("%s: max relative difference %.3g\n", name,
                  scale > 0 ? diff / scale : diff);
  }
  weir_onnx_model_free(a);
  weir_onnx_model_free(b);
}

/* 2 ranks x batch 16 (reduced as `extra` says: NULL overlapped,
 * "--no-overlap" blocking) against one process at batch 32. */
static void two_ranks_equal_one_process(const char *extra,
                                        const char *reduced_by) {
  g_autofree char *one = g_build_filename(tmp_dir, "one.onnx", NULL);
  g_autofree char *two = g_build_filename(tmp_dir, "two.onnx", NULL);
  g_auto(Run) r1 = train(FALSE, "32", one, NULL);
  if (r1.status != 0)
    fail_msg("1 process: %s%s", r1.out, r1.err);
  assert_null(strstr(r1.out, "ranks"));
  g_auto(Run) r2 = train(TRUE, "16", two, extra);
  if (r2.status != 0)
    fail_msg("mpirun -np 2: %s%s", r2.out, r2.err);
  if (!strstr(r2.out, "data parallel on 2 ranks") ||
      !strstr(r2.out, " on 2 ranks, held-out accuracy"))
    fail_msg("expected the rank count in:\n%s", r2.out);
  if (!strstr(r2.out, reduced_by))
    fail_msg("expected '%s' in:\n%s", reduced_by, r2.out);
  /* rank 0 alone prints: one summary line */
  const char *first = strstr(r2.out, "trained ");
  assert_non_null(first);
  assert_null(strstr(first + 1, "trained "));
  compare_models(one, two);
}

static void test_overlapped(void **state) {
  (void)state;
  two_ranks_equal_one_process(NULL, "averaged by AllreduceStart/AllreduceWait");
}

static void test_blocking(void **state) {
  (void)state;
  two_ranks_equal_one_process("--no-overlap", "averaged by blocking Allreduce");
}

int main(void) {
  g_autofree char *mpirun = g_find_program_in_path("mpirun");
  if (!mpirun || !weir_mpi_available()) {
    printf("skipped: %s\n",
           mpirun ? "libweir is built without MPI" : "mpirun is not installed");
    return 77;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_overlapped),
      cmocka_unit_test(test_blocking),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
