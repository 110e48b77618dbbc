/* tmpdir-fixture.h: a temporary directory per test group (cmocka group
 * setup/teardown), removed with its files afterwards. Include once in a
 * test program; the directory's path is `tmp_dir`. */
#ifndef WEIR_TMPDIR_FIXTURE_H
#define WEIR_TMPDIR_FIXTURE_H

#include <glib.h>
#include <glib/gstdio.h>

static char *tmp_dir;

/* 0 on success, as cmocka's setup functions return. */
static inline int tmpdir_setup(const char *prefix) {
  g_autofree char *pattern = g_strconcat(prefix, "-XXXXXX", NULL);
  tmp_dir = g_dir_make_tmp(pattern, NULL);
  return tmp_dir ? 0 : -1;
}

/* Removes the files of tmp_dir (one level: the tests write no
 * subdirectories) and the directory. */
static inline int tmpdir_teardown(void) {
  g_autoptr(GDir) dir = g_dir_open(tmp_dir, 0, NULL);
  const char *entry;
  while (dir && (entry = g_dir_read_name(dir))) {
    g_autofree char *p = g_build_filename(tmp_dir, entry, NULL);
    g_remove(p);
  }
  g_rmdir(tmp_dir);
  g_clear_pointer(&tmp_dir, g_free);
  return 0;
}

#endif
