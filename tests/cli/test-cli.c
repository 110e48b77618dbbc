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
  assert_contains(r.out, "bytes moved            72.4 KiB");
  run_clear(&r);
  r = run_weir("new", "samples/softmax.json", "-o", ws, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "use --force");
  run_clear(&r);
  r = run_weir("open", "samples/softmax.json", "-o", ws, "--force", NULL);
  run_ok(r);
  run_clear(&r);

  r = run_weir("transforms", ws, "--tier", "1", "--node", "*m*", NULL);
  run_ok(r);
  assert_contains(r.out, "tier 1  test-schedule");
  assert_contains(r.out, "@1  state 6: node 13 (map_entry 'rowmax')");
  assert_contains(r.out, "(not applicable: map 'rowmax' has 2 parameters, "
                         "tile gives 1 sizes)");
  if (strstr(r.out, "'init'"))
    fail_msg("--node *m* listed init:\n%s", r.out);
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
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_info_matmul),
      cmocka_unit_test(test_info_symbolic_and_bound),
      cmocka_unit_test(test_validate_samples),
      cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_run_ref),
      cmocka_unit_test(test_usage),
      cmocka_unit_test(test_workspace_session),
      cmocka_unit_test(test_optimize),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
