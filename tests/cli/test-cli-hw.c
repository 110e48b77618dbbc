/* test-cli-hw.c — `weir hw`: the hardware profile measured once into
 * $WEIR_HW_PROFILE, then printed from the cache; --json prints the file's
 * form; bad usage is exit status 2. */
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

/* Runs weir with a NULL-terminated argument list (environment inherited). */
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
  gboolean ok = g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT,
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
