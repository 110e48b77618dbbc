/* cache-helper.c — compiles one kernel through the cache, for test-cache's
 * concurrency tests.
 *
 *   cache-helper CACHE_DIR SOURCE COMPILER RESULT_FILE
 *
 * SOURCE is either hand-written C defining scale_run / scale_abi_version
 * (test-cache.c), or a Weir program (.json) whose generated code is
 * compiled.  Writes "hit" or "miss" to RESULT_FILE and checks that the
 * kernel computes the right thing (the program: what the interpreter
 * computes on the same random inputs). */
#include <stdio.h>

#include "weir-codegen.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-runtime.h"

/* Compiles and checks the hand-written scale kernel in source_path. */
static gboolean run_source(const char *source_path,
                           const WeirCompileOptions *opts,
                           WeirCompileInfo *info, GError **error) {
  g_autofree char *source = NULL;
  if (!g_file_get_contents(source_path, &source, NULL, error))
    return FALSE;
  g_autoptr(WeirKernel) k =
      weir_kernel_compile_source(source, "scale", NULL, opts, info, error);
  if (!k)
    return FALSE;
  float x[3] = {1, 2, 3};
  void *args[] = {x};
  gint64 n = 3;
  if (!weir_kernel_call(k, args, &n, error))
    return FALSE;
  if (x[2] != 9.0f) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME, "wrong result");
    return FALSE;
  }
  return TRUE;
}

/* Compiles the program in path and checks it against the interpreter. */
static gboolean run_program(const char *path, const WeirCompileOptions *opts,
                            WeirCompileInfo *info, GError **error) {
  g_autoptr(WeirGraph) g = weir_graph_load(path, error);
  if (!g)
    return FALSE;
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, opts, info, error);
  if (!k)
    return FALSE;
  g_autoptr(GPtrArray) abi = weir_codegen_arguments(g);
  g_autoptr(GHashTable) mine = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  g_autoptr(GHashTable) ref = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < abi->len; i++) {
    const WeirContainer *c = g_ptr_array_index(abi, i);
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    for (guint d = 0; d < c->shape->len; d++)
      if (!weir_expr_eval(g_ptr_array_index(c->shape, d), NULL, &shape[d],
                          error))
        return FALSE;
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    weir_tensor_fill_random(t, 11 + i);
    g_hash_table_insert(ref, c->name, weir_tensor_copy(t));
    g_hash_table_insert(mine, c->name, t);
  }
  if (!weir_kernel_run(k, NULL, mine, error) ||
      !weir_interpret(g, NULL, ref, NULL, error))
    return FALSE;
  for (guint i = 0; i < abi->len; i++) {
    const WeirContainer *c = g_ptr_array_index(abi, i);
    if (!weir_tensor_allclose(g_hash_table_lookup(mine, c->name),
                              g_hash_table_lookup(ref, c->name), 1e-5, 1e-6,
                              NULL, error))
      return FALSE;
  }
  return TRUE;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: cache-helper CACHE_DIR SOURCE COMPILER RESULT\n");
    return 2;
  }
  g_autoptr(GError) err = NULL;
  /* test-cache.c computes the key of the hand-written kernel with these
   * flags; generated code is built with OpenMP */
  gboolean program = g_str_has_suffix(argv[2], ".json");
  WeirCompileOptions opts = {.compiler = argv[3],
                             .flags = program ? "-O1 -fopenmp -fPIC -shared"
                                              : "-O1 -fPIC -shared",
                             .cache_dir = argv[1]};
  WeirCompileInfo info = {0};
  gboolean ok = program ? run_program(argv[2], &opts, &info, &err)
                        : run_source(argv[2], &opts, &info, &err);
  if (ok)
    ok =
        g_file_set_contents(argv[4], info.cache_hit ? "hit" : "miss", -1, &err);
  weir_compile_info_clear(&info);
  if (!ok) {
    fprintf(stderr, "cache-helper: %s: %s\n", argv[2], err->message);
    return 1;
  }
  return 0;
}
