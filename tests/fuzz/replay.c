/* replay.c — runs a fuzz target over files without libFuzzer.
 *
 *   fuzz-onnx-replay FILE|DIR...
 *
 * Each regular file (directories: each regular file in them, sorted by
 * name; a missing directory counts as empty) is read and given to
 * LLVMFuzzerTestOneInput once.  Used by `meson test --suite fuzz` to replay
 * tests/fuzz/corpus/ and tests/fuzz/crashes/ in every build, the
 * sanitizer one included; a crash is a crash of this program. */
#include <glib.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int compare_names(gconstpointer a, gconstpointer b) {
  return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

static void replay_file(const char *path, guint *n) {
  g_autofree char *contents = NULL;
  gsize len = 0;
  g_autoptr(GError) error = NULL;
  if (!g_file_get_contents(path, &contents, &len, &error)) {
    g_printerr("replay: %s\n", error->message);
    exit(1);
  }
  /* A copy of exactly len bytes, so that ASan sees reads past the end. */
  g_autofree guint8 *copy = g_memdup2(contents, len);
  LLVMFuzzerTestOneInput(copy, len);
  (*n)++;
}

int main(int argc, char **argv) {
  guint n = 0;
  for (int i = 1; i < argc; i++) {
    if (!g_file_test(argv[i], G_FILE_TEST_EXISTS))
      continue;
    if (!g_file_test(argv[i], G_FILE_TEST_IS_DIR)) {
      replay_file(argv[i], &n);
      continue;
    }
    g_autoptr(GError) error = NULL;
    GDir *d = g_dir_open(argv[i], 0, &error);
    if (!d) {
      g_printerr("replay: %s\n", error->message);
      return 1;
    }
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    const char *name;
    while ((name = g_dir_read_name(d)))
      g_ptr_array_add(names, g_build_filename(argv[i], name, NULL));
    g_dir_close(d);
    g_ptr_array_sort(names, compare_names);
    for (guint k = 0; k < names->len; k++)
      if (g_file_test(names->pdata[k], G_FILE_TEST_IS_REGULAR))
        replay_file(names->pdata[k], &n);
  }
  g_print("replayed %u inputs\n", n);
  return 0;
}
