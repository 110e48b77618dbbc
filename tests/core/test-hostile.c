/* test-hostile.c — the library side of issue 11: symbol values checked
 * where they are bound (sessions, workspaces, the interpreter's budget),
 * the run-path checks of `weir validate` (weir-runnable.h) and the
 * staleness rule of temporaries (weir-scratch.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "weir.h"

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    if (!strstr((hay), (needle)))                                              \
      fail_msg("expected to find '%s' in:\n%s", (needle), (hay));              \
  } while (0)

static WeirGraph *load(const char *rel) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, rel, NULL);
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_load(path, &error);
  if (!g)
    fail_msg("%s", error->message);
  return g;
}

static void test_session_bindings(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load("samples/vector_add.json");
  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "N", -5);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirSession) bad = weir_session_new(g, NULL, b, &error);
  assert_null(bad);
  assert_contains(error->message, "container 'A': dimension 0 (N) is -5");
  g_clear_error(&error);

  /* a workspace whose stored value was altered is refused on open */
  weir_bindings_set(b, "N", 4);
  g_autoptr(WeirSession) s = weir_session_new(g, NULL, b, &error);
  assert_non_null(s);
  g_autofree char *dir = g_dir_make_tmp("weir-hostile-ws-XXXXXX", NULL);
  g_autofree char *ws = g_build_filename(dir, "v.weir", NULL);
  assert_true(weir_workspace_save(s, ws, &error));
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(ws, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db,
                                "UPDATE programs SET bindings = "
                                "'{\"N\": 9223372036854775807}'",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  g_autoptr(WeirSession) opened = weir_workspace_open(ws, &error);
  assert_null(opened);
  assert_contains(error->message, "the symbol values stored in the workspace "
                                  "do not fit the program: container 'A'");
  assert_contains(error->message, "N=9223372036854775807");
  g_unlink(ws);
  g_rmdir(dir);
}

static void test_interpreter_budget(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load("samples/vector_add.json");
  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "N", 1000);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  const char *names[] = {"A", "B", "C"};
  gint64 n = 1000;
  for (guint i = 0; i < 3; i++)
    g_hash_table_insert(args, (gpointer)names[i],
                        weir_tensor_new(WEIR_DTYPE_F32, 1, &n));
  g_autoptr(GError) error = NULL;
  WeirInterpOptions o = {.max_memory = 11999};
  assert_false(weir_interpret(g, b, args, &o, &error));
  assert_contains(error->message, "needs 11.7 KiB (12000 bytes");
  g_clear_error(&error);
  o.max_memory = 12000;
  assert_true(weir_interpret(g, b, args, &o, &error));
}

/* weir validate refused nothing that run refused later (case 6). */
static void test_check_runnable(void **state) {
  (void)state;
  const char *good[] = {"samples/vector_add.json", "samples/matmul.json",
                        "samples/softmax.json", "samples/loop.json"};
  for (guint i = 0; i < G_N_ELEMENTS(good); i++) {
    g_autoptr(WeirGraph) g = load(good[i]);
    g_autoptr(GError) error = NULL;
    if (!weir_graph_check_runnable(g, NULL, &error))
      fail_msg("%s: %s", good[i], error->message);
  }
  g_autofree char *lenet =
      g_build_filename(WEIR_SRCDIR, "samples/models/lenet.onnx", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) model = weir_onnx_import(lenet, NULL, &error);
  assert_non_null(model);
  assert_true(weir_graph_check_runnable(model, NULL, &error));

  g_autoptr(WeirGraph) unknown = load("tests/cli/hostile/unknown-op.json");
  assert_false(weir_graph_check_runnable(unknown, NULL, &error));
  assert_contains(error->message, "state 4 'main', node 7 (library "
                                  "'unknown_op'): unknown operator "
                                  "'Frobnicate'");
  g_clear_error(&error);
  g_autoptr(WeirGraph) bcast = load("tests/cli/hostile/bad-broadcast.json");
  assert_false(weir_graph_check_runnable(bcast, NULL, &error));
  assert_contains(error->message, "shapes cannot be broadcast");
  g_clear_error(&error);
  g_autoptr(WeirGraph) big = load("tests/cli/hostile/needs-4tib.json");
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  assert_true(weir_graph_check_runnable(big, warnings, &error));
  assert_int_equal(warnings->len, 3);
  assert_contains(g_ptr_array_index(warnings, 0),
                  "container 'A' needs 4.0 TiB (4398046511104 bytes), more "
                  "than the physical memory of this machine");
}

static pid_t dead_pid(void) {
  pid_t pid = fork();
  if (pid == 0)
    _exit(0);
  waitpid(pid, NULL, 0);
  return pid;
}

static void test_stale_rule(void **state) {
  (void)state;
  gint64 now = g_get_real_time() / G_USEC_PER_SEC;
  g_autofree char *me = weir_scratch_owner();
  const char *dash = strrchr(me, '-');
  assert_non_null(dash);
  g_autofree char *host = g_strndup(me, (gsize)(dash - me));
  g_autofree char *dead = g_strdup_printf("%s-%d", host, (int)dead_pid());
  g_autofree char *init = g_strdup_printf("%s-1", host);
  assert_true(weir_scratch_is_stale(dead, now));
  assert_false(weir_scratch_is_stale(me, now));   /* this process */
  assert_false(weir_scratch_is_stale(init, now)); /* a live process */
  assert_false(weir_scratch_is_stale("elsewhere-1", now));
  assert_false(weir_scratch_is_stale("elsewhere-999999", now));
  assert_false(weir_scratch_is_stale(NULL, now));
  assert_false(weir_scratch_is_stale("garbage", now));
  /* older than the limit: stale whoever owns it */
  gint64 old = now - WEIR_STALE_SECONDS - 10;
  assert_true(weir_scratch_is_stale(NULL, old));
  assert_true(weir_scratch_is_stale("elsewhere-1", old));
}

static void test_scratch_dirs(void **state) {
  (void)state;
  g_autofree char *root = g_dir_make_tmp("weir-hostile-scratch-XXXXXX", NULL);
  g_setenv("WEIR_SCRATCH_DIR", root, TRUE);
  g_autofree char *me = weir_scratch_owner();
  g_autofree char *host = g_strndup(me, (gsize)(strrchr(me, '-') - me));
  g_autofree char *stale =
      g_strdup_printf("%s/weir-cc-%s-%d-AbCdEf", root, host, (int)dead_pid());
  g_autofree char *foreign = g_strdup_printf("%s/notes-%s", root, host);
  assert_int_equal(g_mkdir(stale, 0700), 0);
  assert_int_equal(g_mkdir(foreign, 0700), 0);
  g_autoptr(GError) error = NULL;
  /* the first scratch directory of the process cleans the root first */
  g_autofree char *dir = weir_scratch_dir_new("weir-cc", &error);
  assert_non_null(dir);
  g_autofree char *base = g_path_get_basename(dir);
  g_autofree char *prefix = g_strdup_printf("weir-cc-%s-", me);
  assert_true(g_str_has_prefix(base, prefix));
  assert_int_equal(strlen(base), strlen(prefix) + 6);
  assert_false(g_file_test(stale, G_FILE_TEST_EXISTS));
  assert_true(g_file_test(foreign, G_FILE_TEST_IS_DIR)); /* not Weir's */
  /* a live owner's directory survives a cleaning */
  assert_int_equal(weir_scratch_clean(root), 0);
  assert_true(g_file_test(dir, G_FILE_TEST_IS_DIR));
  weir_scratch_remove(dir);
  assert_false(g_file_test(dir, G_FILE_TEST_EXISTS));
  g_rmdir(foreign);
  g_rmdir(root);
  g_unsetenv("WEIR_SCRATCH_DIR");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_session_bindings),
      cmocka_unit_test(test_interpreter_budget),
      cmocka_unit_test(test_check_runnable),
      cmocka_unit_test(test_stale_rule),
      cmocka_unit_test(test_scratch_dirs),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
