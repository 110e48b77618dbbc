/* cli-cache.c — `weir cache stats|clear`: the compile cache
 * (core/weir-cache.h, docs/runtime.md). */
#include <string.h>

#include "cli.h"

int cli_cmd_cache(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  g_autofree char *opt_cache_dir = NULL;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines), CLI_CACHE_DIR_ENTRY(&opt_cache_dir), {NULL}};
  if (!cli_parse_options("cache", "stats|clear", entries, &argc, &argv))
    return 2;
  if (argc != 2 ||
      (strcmp(argv[1], "stats") != 0 && strcmp(argv[1], "clear") != 0)) {
    fprintf(stderr, "usage: weir cache stats|clear [--cache-dir DIR]\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirCache) cache = weir_cache_open(opt_cache_dir, &error);
  WeirCacheStats st;
  if (!cache || !weir_cache_stats(cache, &st, &error)) {
    cli_print_error("cache", error);
    return 1;
  }
  g_autofree char *size = cli_format_bytes(st.total_bytes);
  if (strcmp(argv[1], "clear") == 0) {
    if (!weir_cache_clear(cache, &error)) {
      cli_print_error("cache", error);
      return 1;
    }
    printf("removed %" G_GINT64_FORMAT " object%s (%s) from %s\n", st.entries,
           st.entries == 1 ? "" : "s", size, weir_cache_dir(cache));
    return 0;
  }
  g_autofree char *limit = cli_format_bytes(st.max_bytes);
  printf("location  %s\n", weir_cache_dir(cache));
  printf("objects   %" G_GINT64_FORMAT "\n", st.entries);
  printf("size      %s (limit %s)\n", size, limit);
  printf("hits      %" G_GINT64_FORMAT "\n", st.hits);
  return 0;
}
