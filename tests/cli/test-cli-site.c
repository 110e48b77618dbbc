/* test-cli-site.c — `weir apply --site`: one syntax (weir_site_parse) for
 * program files and workspaces.  Before, a program file took node ids
 * only and a workspace no blanks around them; both now take ids (with or
 * without STATE:), @K and label patterns. */
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

/* samples/softmax.json: map-tiling has sites at the maps init (node 8),
 * rowmax (13), expsum (17) and normalize (22) of state 6. */
static void apply_file(const char *out, const char *site, const char *want) {
  Run r = run_weir("apply", "samples/softmax.json", "map-tiling", "--site",
                   site, "-p", "tile=8,8", "-o", out, NULL);
  if (r.status != 0)
    fail_msg("--site %s: %s", site, r.err);
  assert_contains(r.out, want);
  run_clear(&r);
}

static void test_program_file(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-site-XXXXXX", NULL);
  g_autofree char *out = g_build_filename(dir, "out.json", NULL);
  apply_file(out, "17", "at state 6: node 17 (map_entry 'expsum')");
  apply_file(out, " 17 ", "at state 6: node 17 (map_entry 'expsum')");
  /* what only a workspace took before */
  apply_file(out, "6:13", "at state 6: node 13 (map_entry 'rowmax')");
  apply_file(out, "@3", "at state 6: node 22 (map_entry 'normalize')");
  apply_file(out, "exp*", "at state 6: node 17 (map_entry 'expsum')");

  Run r = run_weir("apply", "samples/softmax.json", "map-tiling", "--site",
                   "*m*", "-o", out, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "map-tiling: 3 sites match *m*; choose one with "
                         "--site:\n  @1  state 6: node 13 (map_entry "
                         "'rowmax')");
  run_clear(&r);
  r = run_weir("apply", "samples/softmax.json", "map-tiling", "--site", "zz",
               "-o", out, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "map-tiling: no site whose first node matches zz");
  run_clear(&r);
  r = run_weir("apply", "samples/softmax.json", "map-tiling", "--site", "@9",
               "-o", out, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "--site @9: map-tiling has 4 sites (@0..@3)");
  run_clear(&r);
  r = run_weir("apply", "samples/softmax.json", "map-tiling", "--site", "6:99",
               "-o", out, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "state 6 of program 'softmax' has no node 99");
  run_clear(&r);
  g_unlink(out);
  g_rmdir(dir);
}

static void test_workspace(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-cli-site-XXXXXX", NULL);
  g_autofree char *ws = g_build_filename(dir, "s.weir", NULL);
  Run r = run_weir("new", "samples/softmax.json", "-o", ws, NULL);
  assert_int_equal(r.status, 0);
  run_clear(&r);
  /* blanks around ids: before, a workspace read this as a label pattern */
  r = run_weir("apply", ws, "map-tiling", "--site", " 13 ", "-p", "tile=8,8",
               NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "step 1: map-tiling at state 6: node 13 "
                         "(map_entry 'rowmax') (tile=8,8)");
  run_clear(&r);
  r = run_weir("apply", ws, "map-tiling", "--site", "7:22", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "--site 7:22: program 'softmax' has no state 7");
  run_clear(&r);
  r = run_weir("apply", ws, "map-tiling", "--site", "0", NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "--site 0: '0' is not a node id");
  run_clear(&r);
  r = run_weir("history", ws, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "map-tiling");
  run_clear(&r);
  g_unlink(ws);
  g_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_program_file),
      cmocka_unit_test(test_workspace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
