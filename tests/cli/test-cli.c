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

static void remove_tree(const char *path) {
  if (g_file_test(path, G_FILE_TEST_IS_DIR) &&
      !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
      g_autofree char *p = g_build_filename(path, name, NULL);
      remove_tree(p);
    }
    g_rmdir(path);
  } else
    g_unlink(path);
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
  assert_contains(r.out, "Top memlets by bytes moved");
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

int main(void) {
  /* never the user's compile cache */
  g_autofree char *home = g_dir_make_tmp("weir-cli-home-XXXXXX", NULL);
  g_setenv("XDG_CACHE_HOME", home, TRUE);
  g_unsetenv("WEIR_CACHE_DIR");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_info_matmul),
      cmocka_unit_test(test_info_symbolic_and_bound),
      cmocka_unit_test(test_validate_samples),
      cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_run_ref),
      cmocka_unit_test(test_usage),
      cmocka_unit_test(test_cache_stats_and_clear_empty),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  remove_tree(home);
  return rc;
}
