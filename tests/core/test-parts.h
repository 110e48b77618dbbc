/* Shared by the tests that run as several meson tests (tests/meson.build
 * passes "PART/N"): the argument, and the compile cache .ci/run shares
 * between its two runs. */
#pragma once

#include <glib.h>
#include <stdio.h>

/* argv's "PART/N" into *part (*all when there is no argument); FALSE, with
 * the usage on stderr, unless N is the binary's count and PART below it. */
static inline gboolean test_parts_arg(int argc, char **argv, unsigned parts,
                                      unsigned *part, gboolean *all) {
  unsigned p = 0, n = 0;
  *all = argc < 2;
  *part = 0;
  if (*all)
    return TRUE;
  if (argc != 2 || sscanf(argv[1], "%u/%u", &p, &n) != 2 || n != parts ||
      p >= n) {
    fprintf(stderr, "usage: %s [PART/%u], PART < %u\n", argv[0], parts, parts);
    return FALSE;
  }
  *part = p;
  return TRUE;
}

/* $WEIR_TEST_CACHE_DIR when set and not empty, else NULL. */
static inline const char *test_shared_cache_dir(void) {
  const char *dir = g_getenv("WEIR_TEST_CACHE_DIR");
  return dir && *dir ? dir : NULL;
}
