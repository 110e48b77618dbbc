/* test-cli-hostile.c — the eight cases of issue 11 ("hostile input never
 * crashes Weir"), each run through the built `weir` as a user would: every
 * one must end with exit status 1 or 2 and a message naming the problem,
 * never a signal (case 8, a crashing plugin, is the documented exception).
 *
 * The hostile inputs live in tests/cli/hostile/ (make-huge-dim.py writes
 * the ONNX model).  Scratch and cache directories go to a private
 * WEIR_CACHE_DIR so that the litter checks see only this test's runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

typedef struct {
  int status; /* exit status, or -signal */
  char *out;
  char *err;
} Run;

static void run_clear(Run *r) {
  g_free(r->out);
  g_free(r->err);
}

static Run run_argv(const char *const *args) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (gpointer)WEIR_CLI);
  for (guint i = 0; args[i]; i++)
    g_ptr_array_add(argv, (gpointer)args[i]);
  g_ptr_array_add(argv, NULL);
  Run r = {0};
  int wait_status = 0;
  g_autoptr(GError) error = NULL;
  gboolean ok =
      g_spawn_sync(WEIR_SRCDIR, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT,
                   NULL, NULL, &r.out, &r.err, &wait_status, &error);
  g_ptr_array_unref(argv);
  assert_true(ok);
  r.status = WIFEXITED(wait_status)     ? WEXITSTATUS(wait_status)
             : WIFSIGNALED(wait_status) ? -WTERMSIG(wait_status)
                                        : -1000;
  return r;
}

#define RUN(...) run_argv((const char *const[]){__VA_ARGS__, NULL})

/* Exit status `status` (1 or 2) and every needle in stderr. */
static void expect_refusal(Run r, int status, const char *const *needles) {
  if (r.status != status)
    fail_msg("expected exit status %d, got %d%s\nstdout:\n%s\nstderr:\n%s",
             status, r.status, r.status < 0 ? " (a signal)" : "", r.out, r.err);
  for (guint i = 0; needles[i]; i++)
    if (!strstr(r.err, needles[i]))
      fail_msg("expected '%s' in:\n%s", needles[i], r.err);
  run_clear(&r);
}

#define REFUSED(status, run, ...)                                              \
  expect_refusal((run), (status), (const char *const[]){__VA_ARGS__, NULL})

#define H(name) "tests/cli/hostile/" name

/* Case 1: a heap buffer overflow (write) from a 70-byte ONNX model with a
 * dimension of 2^62, a JSON program with such a shape, or -D N=2^63-1:
 * the byte size overflowed, 64 bytes were allocated and filled past. */
static void test_case1_size_overflow(void **state) {
  (void)state;
  const char *cmds[] = {"run-ref", "run"};
  for (guint i = 0; i < G_N_ELEMENTS(cmds); i++) {
    REFUSED(1, RUN(cmds[i], H("huge-dim.onnx")), "container 'x'",
            "4611686018427387904 elements of f32",
            "byte size overflows 64 bits");
    REFUSED(1, RUN(cmds[i], H("huge-shape.json")), "container 'A'",
            "byte size overflows 64 bits");
    REFUSED(
        1,
        RUN(cmds[i], "samples/vector_add.json", "-D", "N=9223372036854775807"),
        "container 'A'", "byte size overflows 64 bits",
        "N=9223372036854775807");
  }
  REFUSED(1, RUN("info", H("huge-dim.onnx")), "container 'x'",
          "overflows 64 bits");
  REFUSED(1, RUN("validate", H("huge-shape.json")), "container 'A'",
          "overflows 64 bits");
  /* the same model with a small dimension runs */
  Run r = RUN("run-ref", H("small-dim.onnx"));
  assert_int_equal(r.status, 0);
  run_clear(&r);
}

/* Case 2: -D N=-5 printed a GLib critical, then dereferenced NULL. */
static void test_case2_negative_symbol(void **state) {
  (void)state;
  const char *cmds[] = {"run-ref", "run", "info", "bench"};
  for (guint i = 0; i < G_N_ELEMENTS(cmds); i++)
    REFUSED(1, RUN(cmds[i], "samples/vector_add.json", "-D", "N=-5"),
            "container 'A'", "(N) is -5: a size cannot be negative", "N=-5");
  /* a value that does not fit in 64 bits is not clamped silently */
  REFUSED(
      2,
      RUN("run-ref", "samples/vector_add.json", "-D", "N=99999999999999999999"),
      "-D N=99999999999999999999: the value does not fit in 64 bits");
  /* a workspace cannot be started with the bad value either */
  g_autofree char *dir = g_dir_make_tmp("weir-hostile-XXXXXX", NULL);
  g_autofree char *ws = g_build_filename(dir, "v.weir", NULL);
  REFUSED(1, RUN("new", "samples/vector_add.json", "-D", "N=-5", "-o", ws),
          "container 'A'", "cannot be negative");
  assert_false(g_file_test(ws, G_FILE_TEST_EXISTS));
  g_rmdir(dir);
}

/* Case 3: containers of 2^40 elements ended in "GLib-ERROR: failed to
 * allocate" (SIGTRAP); info and validate said nothing. */
static void test_case3_memory_budget(void **state) {
  (void)state;
  REFUSED(1, RUN("run-ref", H("needs-4tib.json")),
          "program 'needs_4tib' needs 12.0 TiB (13194139533312 bytes",
          "more than the memory limit", "the physical memory",
          "--max-memory changes it");
  REFUSED(1, RUN("run", H("needs-4tib.json"), "--max-memory", "64G"),
          "needs 12.0 TiB", "memory limit of 64.0 GiB (set with --max-memory)");
  REFUSED(1,
          RUN("run-ref", "samples/vector_add.json", "-D", "N=1000",
              "--max-memory", "8K"),
          "needs 11.7 KiB (12000 bytes: arguments 11.7 KiB",
          "memory limit of 8.0 KiB");
  REFUSED(1,
          RUN("bench", "samples/vector_add.json", "-D", "N=1000",
              "--max-memory", "8K"),
          "needs 11.7 KiB");
  REFUSED(2,
          RUN("run-ref", "samples/vector_add.json", "-D", "N=1000",
              "--max-memory", "lots"),
          "--max-memory: 'lots' is not a size");
  Run r = RUN("run-ref", "samples/vector_add.json", "-D", "N=1000",
              "--max-memory", "1M");
  assert_int_equal(r.status, 0);
  run_clear(&r);
  /* validate and info warn (the program is valid, this machine cannot run
   * it: no test machine has 4 TiB of memory) */
  const char *cmds[] = {"validate", "info"};
  for (guint i = 0; i < G_N_ELEMENTS(cmds); i++) {
    r = RUN(cmds[i], H("needs-4tib.json"));
    assert_int_equal(r.status, 0);
    if (!strstr(r.err, "warning: container 'A' needs 4.0 TiB (4398046511104 "
                       "bytes), more than the physical memory"))
      fail_msg("%s: no warning in:\n%s", cmds[i], r.err);
    run_clear(&r);
  }
}

/* Case 4: signed overflow in the FLOPs of a pooling with a huge
 * kernel_shape and in the size of [2^32, 2^32]. */
static void test_case4_undefined_behaviour(void **state) {
  (void)state;
  /* info counts the FLOPs (unknown: they do not fit in 64 bits) */
  Run r = RUN("info", H("huge-pool.json"));
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "program   huge_pool"));
  run_clear(&r);
  REFUSED(1, RUN("validate", H("huge-pool.json")),
          "node 5 (library 'huge_pool')", "MaxPool",
          "the kernel (extent 4611686018427387904) does not fit");
  REFUSED(1, RUN("run-ref", H("shape-2p32-squared.json")), "container 'A'",
          "4294967296 x 4294967296 elements of f32",
          "the element count overflows 64 bits");
  REFUSED(1, RUN("validate", H("shape-2p32-squared.json")),
          "the element count overflows 64 bits");
}

/* Case 5 (quadratic import) is covered by the import tests of the linear
 * importer (tests/onnx). */

/* Case 6: validate said "valid" for programs that run then refused. */
static void test_case6_validate_like_run(void **state) {
  (void)state;
  const char *cmds[] = {"validate", "run-ref", "run"};
  for (guint i = 0; i < G_N_ELEMENTS(cmds); i++) {
    REFUSED(1, RUN(cmds[i], H("unknown-op.json")),
            "node 7 (library 'unknown_op')", "'Frobnicate'");
    REFUSED(1, RUN(cmds[i], H("bad-broadcast.json")),
            "node 7 (library 'bad_broadcast')", "broadcast");
  }
}

/* ---- case 7: litter ---- */

/* Entries of dir whose name starts with prefix. */
static guint count_entries(const char *dir, const char *prefix) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  guint n = 0;
  const char *name;
  while (d && (name = g_dir_read_name(d)))
    n += g_str_has_prefix(name, prefix);
  return n;
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
  } else {
    g_unlink(path);
  }
}

/* The host part of the owner in temporary names (weir-scratch.h). */
static char *host_part(void) {
  GString *s = g_string_new(NULL);
  for (const char *p = g_get_host_name(); *p && s->len < 32; p++)
    g_string_append_c(s, g_ascii_isalnum(*p) ? *p : '_');
  return g_string_free(s, FALSE);
}

/* A pid that existed and is gone. */
static pid_t dead_pid(void) {
  pid_t pid = fork();
  if (pid == 0)
    _exit(0);
  waitpid(pid, NULL, 0);
  return pid;
}

static void touch(const char *path) {
  assert_true(g_file_set_contents(path, "x", 1, NULL));
}

/* Starts argv in the background, kills it with SIGKILL after ms
 * milliseconds (its process group too, so a compiler dies with it), and
 * reaps it. */
static void kill_after(const char *const *args, guint ms) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    setpgid(0, 0);
    int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    GPtrArray *argv = g_ptr_array_new();
    g_ptr_array_add(argv, (gpointer)WEIR_CLI);
    for (guint i = 0; args[i]; i++)
      g_ptr_array_add(argv, (gpointer)args[i]);
    g_ptr_array_add(argv, NULL);
    if (chdir(WEIR_SRCDIR) != 0)
      _exit(127);
    execv(WEIR_CLI, (char **)argv->pdata);
    _exit(127);
  }
  setpgid(pid, pid);
  g_usleep(ms * 1000);
  kill(-pid, SIGKILL);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
}

/* Temporaries beside a workspace: a stale one (its owner's pid is gone),
 * one of an earlier version, too young to be judged, and one of a live
 * owner (this test) stay; the stale one goes when the workspace is opened.
 * Then saves killed mid-way leave nothing once Weir has run again. */
static void test_case7_workspace_litter(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-hostile-XXXXXX", NULL);
  g_autofree char *ws = g_build_filename(dir, "lenet.weir", NULL);
  Run r = RUN("optimize", "samples/models/lenet.onnx", "--recipe",
              "samples/recipes/lenet.json", "-o", ws);
  assert_int_equal(r.status, 0);
  run_clear(&r);

  g_autofree char *host = host_part();
  g_autofree char *stale = g_strdup_printf("%s/.lenet.weir.%s-%d.AbCdEf", dir,
                                           host, (int)dead_pid());
  g_autofree char *live =
      g_strdup_printf("%s/.lenet.weir.%s-%d.AbCdEf", dir, host, (int)getpid());
  g_autofree char *legacy = g_build_filename(dir, ".lenet.weir.AbCdEf", NULL);
  g_autofree char *other = g_build_filename(dir, ".other.weir.AbCdEf", NULL);
  touch(stale);
  touch(live);
  touch(legacy);
  touch(other);
  r = RUN("history", ws);
  assert_int_equal(r.status, 0);
  run_clear(&r);
  assert_false(g_file_test(stale, G_FILE_TEST_EXISTS));
  assert_true(g_file_test(live, G_FILE_TEST_EXISTS));
  assert_true(g_file_test(legacy, G_FILE_TEST_EXISTS));
  assert_true(g_file_test(other, G_FILE_TEST_EXISTS));
  g_unlink(live);
  g_unlink(legacy);
  g_unlink(other);

  /* kills at several points of an optimize that ends with a save */
  const guint delays[] = {40, 80, 120, 160, 200, 240, 320};
  for (guint i = 0; i < G_N_ELEMENTS(delays); i++) {
    kill_after((const char *const[]){"optimize", "samples/models/lenet.onnx",
                                     "--recipe", "samples/recipes/lenet.json",
                                     "-o", ws, NULL},
               delays[i]);
    r = RUN("history", ws);
    if (r.status != 0)
      fail_msg("the workspace does not open after a kill at %u ms: %s",
               delays[i], r.err);
    run_clear(&r);
    assert_int_equal(count_entries(dir, ".lenet.weir."), 0);
  }
  remove_tree(dir);
}

/* Compile scratch directories live under the cache directory and a killed
 * compile's is removed when Weir next compiles. */
static void test_case7_compile_litter(void **state) {
  (void)state;
  g_autofree char *cache = g_dir_make_tmp("weir-hostile-cache-XXXXXX", NULL);
  g_autofree char *scratch = g_build_filename(cache, "tmp", NULL);
  g_autofree char *saved = g_strdup(g_getenv("WEIR_CACHE_DIR"));
  g_setenv("WEIR_CACHE_DIR", cache, TRUE);

  /* a stale directory (dead owner) and a live one (this process) */
  g_autofree char *host = host_part();
  assert_int_equal(g_mkdir_with_parents(scratch, 0700), 0);
  g_autofree char *stale = g_strdup_printf("%s/weir-cc-%s-%d-AbCdEf", scratch,
                                           host, (int)dead_pid());
  g_autofree char *live =
      g_strdup_printf("%s/weir-rt-%s-%d-AbCdEf", scratch, host, (int)getpid());
  assert_int_equal(g_mkdir(stale, 0700), 0);
  assert_int_equal(g_mkdir(live, 0700), 0);
  g_autofree char *inside = g_build_filename(stale, "x.c", NULL);
  touch(inside);
  Run r = RUN("run", "samples/vector_add.json", "-D", "N=16", "--no-cache");
  assert_int_equal(r.status, 0);
  run_clear(&r);
  assert_false(g_file_test(stale, G_FILE_TEST_EXISTS));
  assert_true(g_file_test(live, G_FILE_TEST_EXISTS));
  g_rmdir(live);
  assert_int_equal(count_entries(scratch, ""), 0);

  const guint delays[] = {20, 60, 100, 150, 200, 300};
  for (guint i = 0; i < G_N_ELEMENTS(delays); i++) {
    kill_after(
        (const char *const[]){"run", "samples/matmul.json", "--no-cache", NULL},
        delays[i]);
    r = RUN("run", "samples/vector_add.json", "-D", "N=16", "--no-cache");
    assert_int_equal(r.status, 0);
    run_clear(&r);
    if (count_entries(scratch, "") != 0)
      fail_msg("a scratch directory is left after a kill at %u ms", delays[i]);
  }
  g_setenv("WEIR_CACHE_DIR", saved, TRUE);
  remove_tree(cache);
}

/* Case 8: a plugin that crashes in its entry point takes the process down:
 * plugins are trusted code (docs/reliability.md).  Only the commands that
 * use transformations load plugins, so the others are not exposed. */
static void test_case8_plugin_trust(void **state) {
  (void)state;
  g_setenv("WEIR_PLUGIN_PATH", WEIR_CRASH_PLUGIN_DIR, TRUE);
  Run r = RUN("transforms", "samples/vector_add.json");
  assert_true(r.status < 0); /* killed by a signal, by design */
  run_clear(&r);
  r = RUN("validate", "samples/vector_add.json");
  assert_int_equal(r.status, 0);
  run_clear(&r);
  r = RUN("run-ref", "samples/vector_add.json", "-D", "N=8");
  assert_int_equal(r.status, 0);
  run_clear(&r);
  g_unsetenv("WEIR_PLUGIN_PATH");
}

int main(void) {
  /* a private cache: no scratch directory of this test goes elsewhere */
  g_autofree char *cache = g_dir_make_tmp("weir-hostile-main-XXXXXX", NULL);
  g_setenv("WEIR_CACHE_DIR", cache, TRUE);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_case1_size_overflow),
      cmocka_unit_test(test_case2_negative_symbol),
      cmocka_unit_test(test_case3_memory_budget),
      cmocka_unit_test(test_case4_undefined_behaviour),
      cmocka_unit_test(test_case6_validate_like_run),
      cmocka_unit_test(test_case7_workspace_litter),
      cmocka_unit_test(test_case7_compile_litter),
      cmocka_unit_test(test_case8_plugin_trust),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  remove_tree(cache);
  return failed;
}
