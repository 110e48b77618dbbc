/* cache-helper.c — compiles one hand-written kernel through the cache, for
 * test-cache's concurrency test.
 *
 *   cache-helper CACHE_DIR SOURCE.c COMPILER RESULT_FILE
 *
 * SOURCE.c defines scale_run / scale_abi_version (test-cache.c).  Writes
 * "hit" or "miss" to RESULT_FILE and checks that the kernel runs. */
#include <stdio.h>

#include "weir-runtime.h"

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: cache-helper CACHE_DIR SOURCE COMPILER RESULT\n");
    return 2;
  }
  g_autoptr(GError) err = NULL;
  g_autofree char *source = NULL;
  if (!g_file_get_contents(argv[2], &source, NULL, &err)) {
    fprintf(stderr, "cache-helper: %s\n", err->message);
    return 1;
  }
  WeirCompileOptions opts = {
      .compiler = argv[3], .flags = "-O1 -fPIC -shared", .cache_dir = argv[1]};
  WeirCompileInfo info = {0};
  g_autoptr(WeirKernel) k =
      weir_kernel_compile_source(source, "scale", NULL, &opts, &info, &err);
  if (!k) {
    fprintf(stderr, "cache-helper: %s\n", err->message);
    return 1;
  }
  float x[3] = {1, 2, 3};
  void *args[] = {x};
  gint64 n = 3;
  if (!weir_kernel_call(k, args, &n, &err) || x[2] != 9.0f) {
    fprintf(stderr, "cache-helper: wrong result\n");
    return 1;
  }
  gboolean ok =
      g_file_set_contents(argv[4], info.cache_hit ? "hit" : "miss", -1, &err);
  weir_compile_info_clear(&info);
  if (!ok) {
    fprintf(stderr, "cache-helper: %s\n", err->message);
    return 1;
  }
  return 0;
}
