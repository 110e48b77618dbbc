/* test-cli-hw.c — `weir hw`: the hardware profile measured once into
 * $WEIR_HW_PROFILE, then printed from the cache; --json prints the file's
 * form; bad usage is exit status 2. */
#include <glib/gstdio.h>

#include "run-weir.h"

static void test_hw(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-test-cli-hw-XXXXXX", NULL);
  assert_non_null(dir);
  g_autofree char *path = g_build_filename(dir, "hw.json", NULL);
  g_setenv("WEIR_HW_PROFILE", path, TRUE);
  g_unsetenv("WEIR_ISA");

  Run r = run_weir("hw", NULL);
  if (r.status != 0)
    fail_msg("weir hw: %s", r.err);
  assert_contains(r.out, "isa ");
  assert_contains(r.out, "floats per vector");
  assert_contains(r.out, "GFLOP/s");
  assert_contains(r.out, "GB/s");
  assert_contains(r.out, "(measured now)");
  assert_true(g_file_test(path, G_FILE_TEST_IS_REGULAR));
  run_clear(&r);

  r = run_weir("hw", NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "(cached)");
  run_clear(&r);

  r = run_weir("hw", "--json", NULL);
  assert_int_equal(r.status, 0);
  g_autofree char *file = NULL;
  assert_true(g_file_get_contents(path, &file, NULL, NULL));
  assert_contains(r.out, "\"peak_gflops_1t\"");
  assert_contains(r.out, "\"key\"");
  /* the JSON printed is the cached file's */
  assert_string_equal(r.out, file);
  run_clear(&r);

  r = run_weir("hw", "extra", NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "usage: weir hw");
  run_clear(&r);

  g_unlink(path);
  g_rmdir(dir);
  g_unsetenv("WEIR_HW_PROFILE");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_hw),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
