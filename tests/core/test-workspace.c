/* test-workspace.c — workspaces: round trip, determinism, atomic saving
 * under SIGKILL, newer-version and corrupt-file errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "session-private.h"
#include "testing-transforms.h"
#include "weir-json.h"
#include "weir-transform.h"

static char *tmpdir;

static int setup(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  weir_transforms_init();
  if (!testing_transforms_register(&error))
    fail_msg("%s", error->message);
  tmpdir = g_dir_make_tmp("weir-ws-XXXXXX", &error);
  assert_non_null(tmpdir);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  GDir *d = g_dir_open(tmpdir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    g_autofree char *p = g_build_filename(tmpdir, name, NULL);
    g_unlink(p);
  }
  if (d)
    g_dir_close(d);
  g_rmdir(tmpdir);
  g_free(tmpdir);
  return 0;
}

static char *tmp_path(const char *name) {
  return g_build_filename(tmpdir, name, NULL);
}

static WeirGraph *load_sample(const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_load(path, &error);
  if (!g)
    fail_msg("%s", error->message);
  return g;
}

/* Applies test-schedule at the maps of the current program in turn,
 * alternating the schedule, `steps` times. */
static void add_steps(WeirSession *s, guint steps) {
  g_autoptr(GError) error = NULL;
  const WeirTransformInfo *t = weir_transform_lookup("test-schedule");
  for (guint k = 0; k < steps; k++) {
    g_autoptr(GArray) sites = weir_transform_sites(t, weir_session_current(s));
    const WeirSite *site = &g_array_index(sites, WeirSite, k % sites->len);
    const WeirNode *n =
        weir_graph_node(weir_session_current(s), site->nodes[0], NULL);
    const char *p[] = {n->map->schedule == WEIR_SCHEDULE_SIMD
                           ? "schedule=sequential"
                           : "schedule=simd",
                       NULL};
    if (!weir_session_apply(s, "test-schedule", site, p, &error))
      fail_msg("%s", error->message);
  }
}

static void assert_figure_equal(const WeirFigure *a, const WeirFigure *b) {
  assert_string_equal(a->expr ? a->expr : "(null)",
                      b->expr ? b->expr : "(null)");
  assert_int_equal(a->known, b->known);
  assert_int_equal(a->value, b->value);
}

static void assert_sessions_equal(const WeirSession *a, const WeirSession *b) {
  assert_string_equal(weir_session_original_json(a),
                      weir_session_original_json(b));
  assert_string_equal(weir_session_current_json(a),
                      weir_session_current_json(b));
  g_autofree char *cur = weir_graph_to_json(weir_session_current(b));
  assert_string_equal(cur, weir_session_current_json(a));
  assert_int_equal(weir_session_cursor(a), weir_session_cursor(b));
  assert_int_equal(weir_session_n_steps(a), weir_session_n_steps(b));
  assert_string_equal(weir_session_source(a) ? weir_session_source(a) : "-",
                      weir_session_source(b) ? weir_session_source(b) : "-");
  assert_string_equal(
      weir_session_original_bookmark(a) ? weir_session_original_bookmark(a)
                                        : "-",
      weir_session_original_bookmark(b) ? weir_session_original_bookmark(b)
                                        : "-");
  assert_int_equal(g_hash_table_size(weir_session_bindings(a)),
                   g_hash_table_size(weir_session_bindings(b)));
  for (guint k = 1; k <= weir_session_n_steps(a); k++) {
    const WeirStep *x = weir_session_step(a, k), *y = weir_session_step(b, k);
    assert_int_equal(x->index, y->index);
    assert_string_equal(x->transform, y->transform);
    assert_memory_equal(&x->site, &y->site, sizeof x->site);
    assert_int_equal(x->labels->len, y->labels->len);
    for (guint i = 0; i < x->labels->len; i++)
      assert_string_equal(x->labels->pdata[i], y->labels->pdata[i]);
    assert_string_equal(x->site_text, y->site_text);
    assert_string_equal(x->params, y->params);
    assert_string_equal(x->params_json, y->params_json);
    assert_figure_equal(&x->bytes_before, &y->bytes_before);
    assert_figure_equal(&x->bytes_after, &y->bytes_after);
    assert_figure_equal(&x->flops_before, &y->flops_before);
    assert_figure_equal(&x->flops_after, &y->flops_after);
    assert_true(x->seconds == y->seconds);
    assert_int_equal(x->timestamp, y->timestamp);
    assert_string_equal(x->bookmark ? x->bookmark : "-",
                        y->bookmark ? y->bookmark : "-");
    assert_string_equal(x->results ? x->results : "-",
                        y->results ? y->results : "-");
    assert_string_equal(x->program, y->program);
  }
}

static void test_round_trip(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "N", 4096);
  g_autoptr(WeirSession) s =
      weir_session_new(g, "samples/vector_add.json", b, &error);
  add_steps(s, 5);
  assert_true(weir_session_bookmark(s, 0, "baseline", &error));
  assert_true(weir_session_bookmark(s, 3, "three", &error));
  assert_true(weir_session_set_results(s, 2, "{\"median_ms\": 1.25}", &error));
  assert_true(weir_session_goto(s, 3, &error)); /* leaves a redo tail */
  g_autofree char *path = tmp_path("round.weir");
  if (!weir_workspace_save(s, path, &error))
    fail_msg("%s", error->message);
  g_autoptr(WeirSession) back = weir_workspace_open(path, &error);
  if (!back)
    fail_msg("%s", error->message);
  assert_sessions_equal(s, back);
  const gint64 *n = g_hash_table_lookup(weir_session_bindings(back), "N");
  assert_non_null(n);
  assert_int_equal(*n, 4096);
  /* The redo tail survives and is exact. */
  assert_true(weir_session_redo(back, &error));
  assert_string_equal(weir_session_current_json(back),
                      weir_session_step(s, 4)->program);
  assert_true(weir_session_replay(back, &error));

  /* Saving what was opened gives the same file, byte for byte. */
  assert_true(weir_session_undo(back, &error));
  g_autofree char *again = tmp_path("again.weir");
  assert_true(weir_workspace_save(back, again, &error));
  g_autofree char *b1 = NULL, *b2 = NULL;
  gsize l1, l2;
  assert_true(g_file_get_contents(path, &b1, &l1, NULL));
  assert_true(g_file_get_contents(again, &b2, &l2, NULL));
  assert_int_equal(l1, l2);
  assert_memory_equal(b1, b2, l1);

  /* An empty history, saved over an existing file (keeping its mode). */
  g_chmod(path, 0640);
  g_autoptr(WeirSession) empty = weir_session_new(g, NULL, NULL, &error);
  assert_true(weir_workspace_save(empty, path, &error));
  struct stat st;
  assert_int_equal(g_stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640);
  g_autoptr(WeirSession) e2 = weir_workspace_open(path, &error);
  assert_non_null(e2);
  assert_sessions_equal(empty, e2);
  /* No temporary files are left behind. */
  GDir *d = g_dir_open(tmpdir, 0, NULL);
  const char *name;
  while ((name = g_dir_read_name(d)))
    assert_true(name[0] != '.');
  g_dir_close(d);
  g_unlink(again);
}

static void set_version(const char *path, int version) {
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  g_autofree char *sql =
      g_strdup_printf("UPDATE meta SET version = %d", version);
  assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
}

static void test_newer_version(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = load_sample("matmul.json");
  g_autoptr(WeirSession) s = weir_session_new(g, NULL, NULL, &error);
  add_steps(s, 2);
  g_autofree char *path = tmp_path("workspace.weir");
  assert_true(weir_workspace_save(s, path, &error));
  set_version(path, 3);
  assert_null(weir_workspace_open(path, &error));
  assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_VERSION));
  g_autofree char *want = g_strdup_printf(
      "%s was written by Weir format version 3; this Weir reads up to 1", path);
  assert_string_equal(error->message, want);
  g_clear_error(&error);
  set_version(path, 1);
  g_autoptr(WeirSession) ok = weir_workspace_open(path, &error);
  assert_non_null(ok);
  g_unlink(path);
}

static void expect_open_error(const char *path, const char *needle) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirSession) s = weir_workspace_open(path, &error);
  if (s)
    fail_msg("%s: opened, expected an error with '%s'", path, needle);
  assert_non_null(strstr(error->message, path));
  if (!strstr(error->message, needle))
    fail_msg("expected '%s' in: %s", needle, error->message);
}

static void test_corrupt_files(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autofree char *path = tmp_path("bad.weir");

  assert_true(g_file_set_contents(path,
                                  "this is not a database at all, but "
                                  "some text long enough to look at",
                                  -1, NULL));
  expect_open_error(path, "not a Weir workspace");
  g_autofree char *json =
      g_build_filename(WEIR_SRCDIR, "samples", "matmul.json", NULL);
  expect_open_error(json, "not a Weir workspace");
  assert_true(g_file_set_contents(path, "", 0, NULL));
  expect_open_error(path, "not a Weir workspace");
  g_autofree char *missing = tmp_path("missing.weir");
  expect_open_error(missing, "No such file");
  expect_open_error(tmpdir, "is a directory");

  /* A real workspace, then damaged. */
  g_autoptr(WeirGraph) g = load_sample("softmax.json");
  g_autoptr(WeirSession) s = weir_session_new(g, NULL, NULL, &error);
  add_steps(s, 6);
  assert_true(weir_workspace_save(s, path, &error));
  g_autofree char *good = NULL;
  gsize len = 0;
  assert_true(g_file_get_contents(path, &good, &len, NULL));
  assert_true(len > 8192);

  /* Truncated to half. */
  assert_true(g_file_set_contents(path, good, (gssize)len / 2, NULL));
  expect_open_error(path, "corrupt workspace");

  /* One character changed inside a snapshot (SQLite sees a valid page). */
  g_autofree char *damaged = g_memdup2(good, len);
  const char *needle = "\"schedule\": \"simd\"";
  char *at = NULL;
  for (char *p = damaged;
       (p = memmem(p, len - (gsize)(p - damaged), needle, strlen(needle))); p++)
    at = p;
  assert_non_null(at);
  at[strlen("\"schedule\": \"")] = 'S';
  assert_true(g_file_set_contents(path, damaged, (gssize)len, NULL));
  expect_open_error(path, "does not match its checksum");

  /* Damaged page structure: garbage over the second page. */
  memcpy(damaged, good, len);
  memset(damaged + 4096, 0x5a, 512);
  assert_true(g_file_set_contents(path, damaged, (gssize)len, NULL));
  expect_open_error(path, "corrupt workspace");

  /* A missing table. */
  assert_true(g_file_set_contents(path, good, (gssize)len, NULL));
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(db, "DROP TABLE steps", NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(db);
  expect_open_error(path, "steps");
  g_unlink(path);
}

/* A session whose snapshots are large: matmul with a 1 MiB constant. */
static WeirSession *large_session(guint steps) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = load_sample("matmul.json");
  WeirContainer *c = weir_graph_add_array(g, "ballast", WEIR_DTYPE_F32,
                                          "262144", TRUE, &error);
  assert_non_null(c);
  g_autofree guint32 *data = g_new(guint32, 262144);
  GRand *r = g_rand_new_with_seed(3);
  for (guint i = 0; i < 262144; i++)
    data[i] = g_rand_int(r) & 0x3f7fffff;
  g_rand_free(r);
  g_autoptr(GBytes) bytes = g_bytes_new(data, 262144 * 4);
  weir_container_set_initial(c, bytes);
  WeirSession *s = weir_session_new(g, NULL, NULL, &error);
  if (!s)
    fail_msg("%s", error->message);
  add_steps(s, steps);
  return s;
}

/* Forks a child that saves s to path; returns its pid once it has started
 * saving. */
static pid_t start_saving(const WeirSession *s, const char *path) {
  int ready[2];
  assert_int_equal(pipe(ready), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    GError *child_error = NULL;
    close(ready[0]);
    if (write(ready[1], "x", 1) != 1)
      _exit(2);
    _exit(weir_workspace_save(s, path, &child_error) ? 0 : 1);
  }
  close(ready[1]);
  char byte;
  assert_int_equal(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  return pid;
}

/* Saving in a child process killed with SIGKILL at random moments leaves
 * the old workspace or the new one, never an error. */
static void test_kill_during_save(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirSession) old = large_session(4);
  g_autoptr(WeirSession) young = large_session(12);
  g_autofree char *path = tmp_path("killed.weir");
  g_autofree char *old_json = g_strdup(weir_session_current_json(old));
  g_autofree char *new_json = g_strdup(weir_session_current_json(young));

  /* How long a child takes to save, undisturbed. */
  assert_true(weir_workspace_save(old, path, &error));
  gint64 t0 = g_get_monotonic_time();
  pid_t pid = start_saving(young, path);
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  gint64 span = g_get_monotonic_time() - t0;
  gint64 window = span * 3 / 2;

  GRand *rand = g_rand_new_with_seed(11);
  guint saw_old = 0, saw_new = 0, rounds = 0;
  for (; rounds < 80 && (rounds < 16 || !saw_old || !saw_new); rounds++) {
    /* The machine may be slower now than when measured: widen the window
     * while no save gets through. */
    if (rounds % 8 == 7 && !saw_new)
      window *= 2;
    assert_true(weir_workspace_save(old, path, &error));
    /* Kill times spread over the whole save, and a little past it, counted
     * from the moment the child starts saving. */
    gint64 delay = g_rand_int_range(rand, 0, (gint32)MIN(window, G_MAXINT32));
    pid = start_saving(young, path);
    g_usleep((gulong)delay);
    kill(pid, SIGKILL);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    gboolean finished = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    g_autoptr(WeirSession) back = weir_workspace_open(path, &error);
    if (!back)
      fail_msg("round %u (kill after %" G_GINT64_FORMAT " us): %s", rounds,
               delay, error->message);
    guint n = weir_session_n_steps(back);
    if (n == 12) {
      saw_new++;
      assert_string_equal(weir_session_current_json(back), new_json);
    } else {
      assert_int_equal(n, 4);
      assert_false(finished);
      saw_old++;
      assert_string_equal(weir_session_current_json(back), old_json);
    }
  }
  g_rand_free(rand);
  print_message("kill test: a child saves %.1f MiB in %.0f ms; %u rounds: "
                "%u old, %u new\n",
                (double)weir_session_history_bytes(young) / 1048576.0,
                (double)span / 1000.0, rounds, saw_old, saw_new);
  /* Both outcomes happened: the kills did land inside saves. */
  assert_true(saw_old > 0);
  assert_true(saw_new > 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_newer_version),
      cmocka_unit_test(test_corrupt_files),
      cmocka_unit_test(test_kill_during_save),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
