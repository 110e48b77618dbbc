/* fuzz-common.h — shared by the fuzz targets of tests/fuzz/.
 *
 * Each target defines LLVMFuzzerTestOneInput (and calls
 * weir_fuzz_init from it): libFuzzer links it in the clang build
 * (-Dfuzz=true), tests/fuzz/replay.c in the normal build, where it replays
 * the regression corpus.
 *
 * A target treats every rejected input as fine: only a crash, a sanitizer
 * report or a GLib critical (a broken internal invariant reached from
 * input, made fatal here) is a finding.  Loaders must not print: warnings
 * and lesser messages are dropped so that runs stay fast and quiet.
 */
#ifndef WEIR_FUZZ_COMMON_H
#define WEIR_FUZZ_COMMON_H

#include <errno.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static inline void weir_fuzz_log(const char *domain, GLogLevelFlags level,
                                 const char *message, gpointer user_data) {
  (void)user_data;
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL)) {
    g_printerr("fuzz: %s-%s: %s\n", domain ? domain : "",
               (level & G_LOG_LEVEL_ERROR) ? "ERROR" : "CRITICAL", message);
    abort();
  }
}

static char *weir_fuzz_dir; /* scratch directory of this process */

static inline void weir_fuzz_remove_dir(void) {
  if (!weir_fuzz_dir)
    return;
  GDir *d = g_dir_open(weir_fuzz_dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    g_autofree char *p = g_build_filename(weir_fuzz_dir, name, NULL);
    g_remove(p);
  }
  if (d)
    g_dir_close(d);
  g_rmdir(weir_fuzz_dir);
  g_clear_pointer(&weir_fuzz_dir, g_free);
}

/* Where the scratch directory goes: $WEIR_FUZZ_SCRATCH when set, else
 * /dev/shm when it is a writable directory (a memory file system: on a
 * disk, creating and unlinking the input file twice per execution cost more
 * than opening it, and waited for the disk on a loaded machine), else
 * the temporary directory.  The loaders see an ordinary path either way. */
static inline const char *weir_fuzz_scratch_parent(void) {
  const char *env = g_getenv("WEIR_FUZZ_SCRATCH");
  if (env && *env)
    return env;
  if (g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) &&
      g_access("/dev/shm", W_OK | X_OK) == 0)
    return "/dev/shm";
  return g_get_tmp_dir();
}

/* Installs the log handler once; with_dir also makes a scratch directory
 * (weir_fuzz_scratch_parent) removed at exit (a crash leaves it: it is
 * named weir-fuzz-*). */
static inline void weir_fuzz_init(gboolean with_dir) {
  static gboolean done;
  if (done)
    return;
  done = TRUE;
  g_log_set_default_handler(weir_fuzz_log, NULL);
  g_log_set_handler(NULL, G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, weir_fuzz_log,
                    NULL);
  g_log_set_handler("weir", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, weir_fuzz_log,
                    NULL);
  g_log_set_handler("GLib", G_LOG_LEVEL_MASK | G_LOG_FLAG_FATAL, weir_fuzz_log,
                    NULL);
  if (with_dir) {
    weir_fuzz_dir =
        g_build_filename(weir_fuzz_scratch_parent(), "weir-fuzz-XXXXXX", NULL);
    if (!g_mkdtemp(weir_fuzz_dir)) {
      g_printerr("fuzz: cannot create %s: %s\n", weir_fuzz_dir,
                 g_strerror(errno));
      abort();
    }
    atexit(weir_fuzz_remove_dir);
  }
}

/* Writes data to NAME in the scratch directory, replacing what was there;
 * returns the path (transfer full). */
static inline char *weir_fuzz_write(const char *name, const uint8_t *data,
                                    size_t size) {
  char *path = g_build_filename(weir_fuzz_dir, name, NULL);
  GError *error = NULL;
  if (!g_file_set_contents_full(path, (const char *)data, (gssize)size,
                                G_FILE_SET_CONTENTS_NONE, 0600, &error)) {
    g_printerr("fuzz: %s\n", error->message);
    abort();
  }
  return path;
}

/* Removes every file in the scratch directory (journal files a loader
 * may have left beside the input). */
static inline void weir_fuzz_clean(void) {
  GDir *d = g_dir_open(weir_fuzz_dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    g_autofree char *p = g_build_filename(weir_fuzz_dir, name, NULL);
    g_remove(p);
  }
  if (d)
    g_dir_close(d);
}

#endif
