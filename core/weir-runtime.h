/* weir-runtime.h — compile, load, run and time generated code.
 *
 * A WeirKernel is a compiled program: generated C built by the system C
 * compiler into a shared object (through the compile cache) and loaded with
 * GModule.  Running binds WeirTensors to the arguments of the ABI described
 * in weir-codegen.h.
 *
 * The compiler driver runs the compiler as a subprocess (an argument
 * vector, never a shell):
 *   <compiler> <flags...> -o <dir>/<name>.so <dir>/<name>.c -lm
 * in a private temporary directory.  The compiler and the flags are split
 * into words like a shell would (quotes are honoured, nothing is expanded),
 * so CC="ccache gcc" works.  docs/runtime.md describes the cache and the
 * environment variables.
 */
#ifndef WEIR_RUNTIME_H
#define WEIR_RUNTIME_H

#include "weir-graph.h"
#include "weir-tensor.h"

G_BEGIN_DECLS

#define WEIR_COMPILE_DEFAULT_FLAGS "-O3 -march=native -fopenmp -fPIC -shared"

typedef struct {
  const char *compiler; /* default: $CC or "cc" */
  const char *flags; /* default: "-O3 -march=native -fopenmp -fPIC -shared" */
  const char *cache_dir;  /* default: $WEIR_CACHE_DIR, else
                             $XDG_CACHE_HOME/weir (g_get_user_cache_dir) */
  gboolean no_cache;      /* compile every time */
  gint64 cache_max_bytes; /* cache size limit; 0: $WEIR_CACHE_MAX_BYTES or
                             1 GiB */
  gboolean profile;       /* instrumented build (WeirCodegenOptions.profile;
                             part of the cache key); read the times with
                             weir_kernel_profile */
} WeirCompileOptions;

typedef struct _WeirKernel WeirKernel;

typedef struct {
  double compile_seconds; /* wall time of the compiler (0 on a cache hit) */
  gboolean cache_hit;
  char *key;              /* cache key (hex) */
  gboolean recovered;     /* the cache had the key but its object was missing
                             or damaged: it was rebuilt */
  char *object_path;      /* the shared object loaded (in the cache; or in a
                             removed temporary directory with no_cache) */
  double key_seconds;     /* computing the key */
  double codegen_seconds; /* generating C (0 on a cache hit) */
  gsize source_bytes;     /* size of the generated C (0 on a cache hit:
                             a hit generates no C) */
  guint units;            /* compile units of the generated C (0 on a hit),
                             not counting helper units */
  guint helper_units;     /* kernel helpers linked from objects of the
                             compile cache (docs/runtime.md, "Helper
                             objects"; 0 on a hit) */
  guint helper_hits;      /* helper objects found in the cache */
  guint helper_rebuilt;   /* cached helper objects found damaged (checksum,
                             or the link or load failed) and rebuilt */
} WeirCompileInfo;

/* ------------------------------------------------------ compiler driver */

/* The compiler command of opts: opts->compiler, else $CC, else "cc".
 * (transfer full) */
WEIR_API char *weir_compiler_command(const WeirCompileOptions *opts);

/* The first line of `<compiler> --version`, run once per compiler command
 * and process (thread-safe).  It identifies the compiler in cache keys.
 * (transfer full) */
WEIR_API char *weir_compiler_identity(const WeirCompileOptions *opts,
                                      GError **error);

/* The flags of opts (opts->flags or the defaults) normalized: split into
 * words and joined with single spaces; "" when there are none.  NULL with
 * an error when they do not split (unbalanced quotes). (transfer full) */
WEIR_API char *weir_compiler_flags(const WeirCompileOptions *opts,
                                   GError **error);

/* The OpenMP build of OpenBLAS that kernels compiled with -fopenmp link
 * instead of -lopenblas: $WEIR_OPENBLAS_OPENMP when set (a library path;
 * "" means none), else the first of the distributions' locations that
 * exists (Debian: /usr/lib/<multiarch>/openblas-openmp/libopenblas.so.0,
 * package libopenblas0-openmp), else NULL (then -lopenblas, the system's
 * default build).  Part of the compile cache key. (transfer full) */
WEIR_API char *weir_compiler_openblas_openmp(void);

/* Compiles source into the shared object output.  name (a C identifier, or
 * NULL for "kernel") names the source file in diagnostics.  *seconds
 * (optional) receives the compiler's wall time.  On failure the error
 * (WEIR_ERROR_RUNTIME; WEIR_ERROR_IO when the compiler cannot be started)
 * gives the command line and the compiler's output, truncated after 60 lines
 * or 8 KiB. */
WEIR_API gboolean weir_compile(const char *source, const char *name,
                               const char *output,
                               const WeirCompileOptions *opts, double *seconds,
                               GError **error);

/* One unit of weir_compile_many. */
typedef struct {
  const char *source; /* borrowed */
  const char *name;   /* borrowed, may be NULL */
  const char *output; /* borrowed */
  double seconds;     /* out */
  GError *error;      /* out: NULL on success, else owned by the job (free
                         with g_clear_error) */
  /* Several compile units of one program (weir_codegen_units), used
   * instead of source when n_units > 1 (borrowed). */
  const char *const *units;
  guint n_units;
  /* Object files linked into output after the program's own (the
   * runtime's cached helper objects; NULL-terminated, borrowed, may be
   * NULL). */
  const char *const *objects;
  /* Compile source (one unit) with `-c` into the object file output
   * instead of a shared object; objects and libraries unused. */
  gboolean object;
} WeirCompileJob;

/* Compiles the compile units sources[0..n) of one program
 * (weir_codegen_units) into the shared object output: each unit to an
 * object file (`<cc> <flags> -c`), at most g_get_num_processors() compilers
 * at a time, then one link with the libraries unit 0 names.  n == 1 is
 * weir_compile.  *seconds (optional): wall time of the whole build.
 * Errors as weir_compile's, naming the unit ("name_2"). */
WEIR_API gboolean weir_compile_units(const char *const *sources, guint n,
                                     const char *name, const char *output,
                                     const WeirCompileOptions *opts,
                                     double *seconds, GError **error);

/* Compiles independent units in parallel, at most g_get_num_processors() at
 * a time.  Every job is attempted; returns FALSE when one failed, with
 * error set to a copy of the first failure in job order. */
/**
 * weir_compile_many: (skip)
 */
WEIR_API gboolean weir_compile_many(WeirCompileJob *jobs, guint n_jobs,
                                    const WeirCompileOptions *opts,
                                    GError **error);

/* --------------------------------------------------------------- kernels */

/* The compile-cache key of g with opts, computed from the program without
 * generating C: the build id of libweir, the compiler identity, the flags,
 * the ABI version and g's structure (weir_graph_structure_json: shapes,
 * dtypes, symbols, implementation choices, literal constants; not the data
 * of bound constants).  docs/runtime.md lists the fields. (transfer full) */
/**
 * weir_kernel_key:
 * @opts: (nullable):
 */
WEIR_API char *weir_kernel_key(const WeirGraph *g,
                               const WeirCompileOptions *opts, GError **error);

/* Computes g's key (weir_kernel_key) and looks it up in the cache; only on
 * a miss is C generated and compiled; then loads the kernel.  The compiler's
 * diagnostics are included in the error on failure.  info may be NULL;
 * clear it with weir_compile_info_clear. */
/**
 * weir_kernel_compile:
 * @opts: (nullable):
 * @info: (nullable):
 * Returns: (transfer full):
 */
WEIR_API WeirKernel *weir_kernel_compile(const WeirGraph *g,
                                         const WeirCompileOptions *opts,
                                         WeirCompileInfo *info, GError **error);

/* Compiles several programs; misses are compiled in parallel
 * (weir_compile_many).  kernels_out[i] and infos[i] (optional) receive the
 * results for graphs[i].  On failure no kernel is returned and the error
 * names the program that failed first. */
/**
 * weir_kernel_compile_many: (skip)
 */
WEIR_API gboolean weir_kernel_compile_many(
    const WeirGraph *const *graphs, guint n, const WeirCompileOptions *opts,
    WeirKernel **kernels_out, WeirCompileInfo *infos, GError **error);

/* Compiles hand-written or edited C source that follows the ABI of
 * weir-codegen.h with entry points <prefix>_run and <prefix>_abi_version.
 * g (optional, copied) is the program whose argument order and shapes the
 * source follows; without it only weir_kernel_call works. */
/**
 * weir_kernel_compile_source:
 * @g: (nullable):
 * @opts: (nullable):
 * @info: (nullable):
 * Returns: (transfer full):
 */
WEIR_API WeirKernel *
weir_kernel_compile_source(const char *source, const char *prefix,
                           const WeirGraph *g, const WeirCompileOptions *opts,
                           WeirCompileInfo *info, GError **error);

/* The slots of an instrumented kernel (WeirCompileOptions.profile): *n
 * slots; ids[2 i] and ids[2 i + 1] are the state and node id of slot i in
 * the program as the code generator lowers it (weir_lower with native and
 * split_epilogues: the ids of the caller's program for every node that
 * stays, the ids of the expansion for the others); times[i] is the
 * seconds that node took, summed over the runs since the caller last
 * zeroed times (borrowed from the kernel, writable).  FALSE (outputs
 * untouched) when k is not instrumented. */
/**
 * weir_kernel_profile: (skip)
 */
WEIR_API gboolean weir_kernel_profile(WeirKernel *k, guint *n,
                                      const gint64 **ids, double **times);

WEIR_API void weir_kernel_free(WeirKernel *k);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirKernel, weir_kernel_free)
WEIR_API void weir_compile_info_clear(WeirCompileInfo *info);

/* The entry-point prefix (borrowed). */
WEIR_API const char *weir_kernel_prefix(const WeirKernel *k);

/* Bytes of the constant data bound to the kernel's constant table.  The
 * data is not copied: the table points into the kernel's copy of the
 * program, which shares the data of the program it was compiled from. */
WEIR_API gsize weir_kernel_constants_bytes(const WeirKernel *k);

/**
 * weir_kernel_prepacked_bytes:
 * @k: a kernel
 *
 * Bytes of the kernel's pre-packed constants: the weights its GEMMs read,
 * packed once into the GEMM's panel layout when the constants were bound
 * (docs/native.md, "pre-packed weights"), owned by the kernel.  0 when it
 * has none.
 *
 * Returns: the size in bytes
 */
WEIR_API gsize weir_kernel_prepacked_bytes(const WeirKernel *k);

/* The kernel's workspace (borrowed; NULL before the first run or when the
 * program needs none) and its size in *bytes (optional).  The workspace
 * holds the transients of the entry point and the scratch block of its
 * native calls (im2col columns, GEMM temporaries) and of the nested
 * programs it calls from sequential code; it is allocated at the first
 * run, grown when a run with other symbol values needs more, and reused by
 * every later run, so steady-state runs allocate nothing.  It is not
 * cleared (the kernel's threads touch its pages first).  A run that
 * starts while another run of the same kernel is in progress (another
 * thread) lets the generated code allocate a workspace of its own.  A
 * workspace that cannot be allocated fails the run (WEIR_ERROR_RUNTIME). */
/**
 * weir_kernel_workspace:
 * @bytes: (out) (optional):
 * Returns: (transfer none) (nullable):
 */
WEIR_API const void *weir_kernel_workspace(WeirKernel *k, gsize *bytes);

/* Runs the kernel.  symbols: name -> gint64* (weir_bindings_new); args:
 * container name -> WeirTensor* for every argument container, checked for
 * dtype and shape like weir_interpret.  Outputs are written in place.
 * Constant containers are bound from the program and cannot be passed.  A
 * symbol that no transition assigns must be bound.  Steady-state runs
 * allocate nothing in the kernel: its transients live in the workspace. */
/**
 * weir_kernel_run: (skip)
 * @symbols: (element-type utf8 gpointer):
 * @args: (element-type utf8 WeirTensor):
 */
WEIR_API gboolean weir_kernel_run(WeirKernel *k, GHashTable *symbols,
                                  GHashTable *args, GError **error);

/* Calls the entry point with raw ABI arguments; a non-zero return is an
 * error (WEIR_ERROR_RUNTIME). */
/**
 * weir_kernel_call: (skip)
 */
WEIR_API gboolean weir_kernel_call(WeirKernel *k, void *const args[],
                                   const gint64 symbols[], GError **error);

/* Sets the number of OpenMP threads of the kernel's parallel regions
 * started from the calling thread.  FALSE with an error when the kernel
 * does not use OpenMP. */
/* The BLAS library a kernel's code calls, as "OpenBLAS <config>, core
 * <name>, threads: <mode>" (openblas_get_config / openblas_get_corename /
 * openblas_get_parallel, looked up through the loaded kernel; mode is
 * "OpenMP, the kernel's threads", "own pthreads pool" or "serial"), or
 * NULL when the kernel uses no OpenBLAS.  The core
 * follows OPENBLAS_CORETYPE when that is set; Weir never sets it.
 * (transfer full) */
WEIR_API char *weir_kernel_blas_info(WeirKernel *k);

/* Threads of the kernel's OpenMP loops and of its OpenBLAS calls.
 *
 * Kernels with OpenMP link the OpenMP build of OpenBLAS when it is
 * installed (weir_compiler_openblas_openmp): its GEMMs then run on the
 * kernel's own OpenMP threads, with the same count, and there is one
 * thread pool.  (A process that already holds another OpenBLAS under the
 * same soname, e.g. a program linked with -lopenblas, keeps that one;
 * weir_kernel_blas_info() says which build a kernel uses.)
 *
 * Defaults, for a process that sets nothing: the first kernel loaded
 * chooses how idle OpenMP threads wait unless OMP_WAIT_POLICY or
 * GOMP_SPINCOUNT is set: when the machine's other runnable tasks (sampled
 * for 16 ms) leave a core for each of the kernel's threads
 * (weir_threading_should_spin) they spin briefly before sleeping
 * (GOMP_SPINCOUNT set to the rounds of about 50 us, one round timed when
 * the choice is made: weir_threading_spin_rounds), otherwise they sleep
 * at once
 * (OMP_WAIT_POLICY=PASSIVE); weir_kernel_openmp_wait() says which.  An
 * OpenBLAS with its own pthreads pool runs with one thread unless
 * OPENBLAS_NUM_THREADS is set, so that OpenMP loops and library calls do
 * not oversubscribe the cores.  weir_kernel_set_threads() sets both
 * thread counts to n_threads. */
WEIR_API gboolean weir_kernel_set_threads(WeirKernel *k, int n_threads,
                                          GError **error);

/* The rule of the wait default: spin when others_running (runnable tasks
 * besides the caller; negative: unknown) plus the kernel's threads fit on
 * the processors (with a quarter of a task to spare). */
WEIR_API gboolean weir_threading_should_spin(double others_running,
                                             guint threads, guint processors);

/* GOMP_SPINCOUNT for a spin of spin_ns when one round of libgomp's wait
 * loop takes round_ns: spin_ns / round_ns, at least 300 and at most
 * 100000; 3000 when either is not a positive time. */
WEIR_API guint64 weir_threading_spin_rounds(double round_ns, double spin_ns);

/* How this process's OpenMP threads wait, as a sentence ("spin 2750
 * rounds (50 us at 18.2 ns a round), then sleep (...)", "sleep at once (...)",
 * "as the environment says (...)"); NULL before the first kernel is loaded. */
WEIR_API const char *weir_kernel_openmp_wait(void);

/* ------------------------------------------------------------- benchmarks */

typedef struct {
  guint warmup;      /* untimed runs first (default 0 when the struct is
                        zeroed; the CLI uses 3) */
  guint repetitions; /* timed runs (0: 10) */
} WeirBenchOptions;

typedef struct {
  guint repetitions;
  double median, min, max, mean; /* seconds per run */
  double *times;                 /* repetitions entries, in run order
                                    (owned; weir_bench_result_clear) */
} WeirBenchResult;

/* Binds the arguments once (as weir_kernel_run), runs warmup untimed runs,
 * then times each of the repetitions with the monotonic clock.  The
 * arguments are overwritten by every run. opts may be NULL. */
/**
 * weir_kernel_bench: (skip)
 */
WEIR_API gboolean weir_kernel_bench(WeirKernel *k, GHashTable *symbols,
                                    GHashTable *args,
                                    const WeirBenchOptions *opts,
                                    WeirBenchResult *out, GError **error);
WEIR_API void weir_bench_result_clear(WeirBenchResult *r);

/* Median, min, max and mean of n times (n > 0) into out (times is copied). */
/**
 * weir_bench_summarize: (skip)
 */
WEIR_API void weir_bench_summarize(const double *times, guint n,
                                   WeirBenchResult *out);

/* Link libraries a generated source asks for (native implementations,
 * ir/lower/weir-native.h, print these lines; core/native.c): the words of its
 * lines
 * "/" "* weir-link: <name> ... *" "/" (names of [A-Za-z0-9_+.-]), in order,
 * without duplicates. (transfer full; NULL-terminated, possibly empty) */
/**
 * weir_codegen_libraries:
 * Returns: (transfer full) (array zero-terminated=1):
 */
WEIR_API char **weir_codegen_libraries(const char *source);

G_END_DECLS

#endif
