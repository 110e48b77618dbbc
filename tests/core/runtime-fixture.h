/* runtime-fixture.h — shared by the runtime tests: a private cache
 * directory per test and a compiler wrapper that logs every invocation.
 *
 * The wrapper is a shell script that appends its arguments to a log and
 * runs the real compiler ($CC or cc), so a test can tell whether the
 * compiler ran at all.  Tests never touch the user's cache.
 *
 * fixture_new_shared() gives tests that only check what compiled code
 * computes the compile cache $WEIR_TEST_CACHE_DIR instead (.ci/run sets it
 * for both its runs, docs/reliability.md): the sanitizer run then loads the
 * objects the plain run compiled.  A hit runs neither the compiler nor the
 * code generator, so such tests must not count compiles, read the log or
 * the cache, nor rely on weir_kernel_compile() generating C (they call
 * weir_codegen_c() themselves where they check the source).
 */
#ifndef RUNTIME_FIXTURE_H
#define RUNTIME_FIXTURE_H

#include <errno.h>
#include <string.h>

#include <glib/gstdio.h>

#include "test-parts.h"
#include "weir-cache.h"
#include "weir-runtime.h"

/* Fast flags for tests (the defaults compile with -O3 -march=native). */
#define TEST_FLAGS "-O1 -fPIC -shared"

typedef struct {
  char *dir;       /* temporary root */
  char *cache_dir; /* dir/cache */
  char *wrapper;   /* dir/cc-wrapper */
  char *log;       /* dir/cc.log */
  char *shared;    /* $WEIR_TEST_CACHE_DIR (fixture_new_shared) or NULL */
  WeirCompileOptions opts;
} Fixture;

static inline void remove_tree(const char *path) {
  if (g_file_test(path, G_FILE_TEST_IS_DIR) &&
      !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    GDir *d = g_dir_open(path, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
      char *p = g_build_filename(path, name, NULL);
      remove_tree(p);
      g_free(p);
    }
    if (d)
      g_dir_close(d);
    g_rmdir(path);
  } else
    g_unlink(path);
}

static inline Fixture *fixture_new(void) {
  Fixture *f = g_new0(Fixture, 1);
  f->dir = g_dir_make_tmp("weir-test-XXXXXX", NULL);
  g_assert_nonnull(f->dir);
  f->cache_dir = g_build_filename(f->dir, "cache", NULL);
  f->wrapper = g_build_filename(f->dir, "cc-wrapper", NULL);
  f->log = g_build_filename(f->dir, "cc.log", NULL);
  const char *cc = g_getenv("CC");
  char *script = g_strdup_printf("#!/bin/sh\n"
                                 "echo \"$*\" >> '%s'\n"
                                 "exec %s \"$@\"\n",
                                 f->log, cc && *cc ? cc : "cc");
  g_assert_true(g_file_set_contents(f->wrapper, script, -1, NULL));
  g_free(script);
  g_assert_cmpint(g_chmod(f->wrapper, 0755), ==, 0);
  f->opts.compiler = f->wrapper;
  f->opts.flags = TEST_FLAGS;
  f->opts.cache_dir = f->cache_dir;
  return f;
}

static inline void fixture_free(Fixture *f) {
  remove_tree(f->dir);
  g_free(f->dir);
  g_free(f->cache_dir);
  g_free(f->wrapper);
  g_free(f->log);
  g_free(f->shared);
  g_free(f);
}

/* A fixture compiling through $WEIR_TEST_CACHE_DIR when that is set (the
 * header's comment says which tests may). */
static inline Fixture *fixture_new_shared(void) {
  Fixture *f = fixture_new();
  const char *dir = test_shared_cache_dir();
  if (dir) {
    f->shared = g_strdup(dir);
    f->opts.cache_dir = f->shared;
  }
  return f;
}

/* Whether a line of the compiler log compiled a kernel helper's object
 * (the runtime's helper-<i>.o, docs/runtime.md "Helper objects"). */
static inline gboolean fixture_helper_line(const char *line) {
  return strstr(line, " -c ") && strstr(line, "/helper-") &&
         strstr(line, ".o ");
}

/* Number of compiler runs in the log that built a kernel helper's object
 * (helpers) or that built something else (not --version). */
static inline guint fixture_count_compiles(const Fixture *f, gboolean helpers) {
  char *text = NULL;
  guint n = 0;
  if (g_file_get_contents(f->log, &text, NULL, NULL)) {
    char **lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++)
      n += fixture_helper_line(lines[i])
               ? helpers
               : !helpers && strstr(lines[i], " -o ") != NULL;
    g_strfreev(lines);
  }
  g_free(text);
  return n;
}

/* Number of compiler runs that built something (not --version), helper
 * objects (fixture_helper_compiles) not counted. */
static inline guint fixture_compiles(const Fixture *f) {
  return fixture_count_compiles(f, FALSE);
}

/* Number of compiler runs that built a kernel helper's object. */
static inline guint fixture_helper_compiles(const Fixture *f) {
  return fixture_count_compiles(f, TRUE);
}

/* Path of the object of key in the fixture's cache. (transfer full) */
static inline char *fixture_object(const Fixture *f, const char *key) {
  char *file = g_strconcat(key, ".so", NULL);
  char *p = g_build_filename(f->cache_dir, "objects", file, NULL);
  g_free(file);
  return p;
}

#endif
