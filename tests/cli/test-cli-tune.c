/* test-cli-tune.c — `weir tune` on the MLP sample into a temporary
 * database, `--list`, then `weir run -O3` and `weir info -O3` naming the
 * tuned nodes; bad usage and a file that is not a tuning database. */
#include <glib/gstdio.h>

#include "run-weir.h"

static void test_tune(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-test-cli-tune-XXXXXX", NULL);
  assert_non_null(dir);
  g_autofree char *db = g_build_filename(dir, "tuning.db", NULL);
  g_autofree char *model =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "mlp.onnx", NULL);

  Run r =
      run_weir("tune", model, "-D", "batch=4", "--db", db, "--reps", "2", NULL);
  if (r.status != 0)
    fail_msg("weir tune: %s%s", r.out, r.err);
  assert_contains(r.out, "3 tunable nodes, 3 signatures");
  assert_contains(r.out, "summary (3 signatures tuned of the 3 tunable nodes");
  assert_contains(r.out, "f32[4, 128]");
  run_clear(&r);

  r = run_weir("tune", "--list", "--db", db, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "Gemm");
  assert_contains(r.out, " ok ");
  run_clear(&r);

  /* -O3 takes the winners at the tuned shape, not at another */
  g_setenv("WEIR_TUNING_DB", db, TRUE);
  r = run_weir("run", model, "-D", "batch=4", "-O3", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "tuned           3 nodes (");
  run_clear(&r);
  r = run_weir("info", model, "-D", "batch=4", "-O3", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "Tuned nodes");
  assert_contains(r.out, "/fc1/Gemm");
  run_clear(&r);
  r = run_weir("run", model, "-D", "batch=5", "-O3", NULL);
  assert_int_equal(r.status, 0);
  assert_null(strstr(r.out, "tuned   "));
  run_clear(&r);
  g_unsetenv("WEIR_TUNING_DB");

  /* usage, and a file that is not a tuning database */
  r = run_weir("tune", NULL);
  assert_int_equal(r.status, 2);
  run_clear(&r);
  g_autofree char *bogus = g_build_filename(dir, "bogus.db", NULL);
  assert_true(g_file_set_contents(bogus,
                                  "not sqlite at all, long enough "
                                  "to be read as a header......",
                                  -1, NULL));
  r = run_weir("tune", "--list", "--db", bogus, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "bogus.db");
  run_clear(&r);

  static const char *const sfx[] = {"", "-wal", "-shm"};
  for (guint i = 0; i < G_N_ELEMENTS(sfx); i++) {
    g_autofree char *p = g_strconcat(db, sfx[i], NULL);
    g_unlink(p);
  }
  g_unlink(bogus);
  g_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tune),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
