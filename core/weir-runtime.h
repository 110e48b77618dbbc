/* weir-runtime.h — compile, load, run and time generated code.
 *
 * A WeirKernel is a compiled program: generated C built by the system C
 * compiler into a shared object (through the compile cache) and loaded with
 * GModule.  Running binds WeirTensors to the arguments of the ABI described
 * in weir-codegen.h.
 */
#ifndef WEIR_RUNTIME_H
#define WEIR_RUNTIME_H

#include "weir-graph.h"
#include "weir-tensor.h"

G_BEGIN_DECLS

typedef struct {
  const char *compiler; /* default: $CC or "cc" */
  const char *flags; /* default: "-O3 -march=native -fopenmp -fPIC -shared" */
  const char
      *cache_dir;    /* default: $XDG_CACHE_HOME/weir (g_get_user_cache_dir) */
  gboolean no_cache; /* compile every time */
} WeirCompileOptions;

typedef struct _WeirKernel WeirKernel;

typedef struct {
  double compile_seconds; /* wall time of the compiler (0 on a cache hit) */
  gboolean cache_hit;
  char *key; /* cache key (hex) */
} WeirCompileInfo;

/* Generates, compiles (or finds in the cache) and loads g.  The compiler's
 * diagnostics are included in the error on failure.  info may be NULL. */
WEIR_API WeirKernel *weir_kernel_compile(const WeirGraph *g,
                                         const WeirCompileOptions *opts,
                                         WeirCompileInfo *info, GError **error);
WEIR_API void weir_kernel_free(WeirKernel *k);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirKernel, weir_kernel_free)
WEIR_API void weir_compile_info_clear(WeirCompileInfo *info);

/* Runs the kernel.  symbols: name -> gint64* (weir_bindings_new); args:
 * container name -> WeirTensor* for every argument container, checked for
 * dtype and shape like weir_interpret.  Outputs are written in place. */
WEIR_API gboolean weir_kernel_run(WeirKernel *k, GHashTable *symbols,
                                  GHashTable *args, GError **error);

G_END_DECLS

#endif
