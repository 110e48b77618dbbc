/* runtime.c — compile, load, run and time generated code (weir-runtime.h).
 *
 * Conventions of this file:
 *  - A compile goes: program -> cache key (its structure, no C) -> cache
 *    lookup -> (on a miss) generated C -> the compiler driver into a private
 *    temporary directory -> GModule load of that fresh copy -> cache insert.
 *    Hand-written source is keyed by the source itself.
 *  - A kernel binds its constant table to the data of its copy of the
 *    program (shared with the caller's program, never copied) and owns a
 *    workspace that every run reuses (weir_kernel_workspace).  A kernel built
 * on a miss is loaded from its temporary copy, so a concurrent eviction cannot
 * take the file away between insert and load.
 *  - An object that the cache returns but that fails to load is dropped from
 *    the cache and rebuilt (info->recovered).
 *  - Argument checks use the interpreter's messages so both report a bad
 *    call the same way.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <glib/gstdio.h>
#include <gmodule.h>

#include "weir-cache.h"
#include "weir-codegen.h"
#include "weir-json.h"
#include "weir-kernels.h"
#include "weir-limits.h"
#include "weir-runtime.h"
#include "weir-scratch.h"
#include "weir.h"

typedef int (*RunFunc)(void *const args[], const int64_t symbols[],
                       const void *const consts[], void *workspace);
typedef size_t (*WorkspaceFunc)(const int64_t symbols[]);
typedef int (*AbiFunc)(void);
typedef void (*SetThreadsFunc)(int);

G_STATIC_ASSERT(sizeof(gint64) == sizeof(int64_t));

struct _WeirKernel {
  char *prefix;
  GModule *module;
  RunFunc run;
  WorkspaceFunc workspace_size;
  WeirGraph *g;         /* owned copy, or NULL */
  GPtrArray *arguments; /* WeirContainer* of g in ABI order (borrowed) */
  /* The constant table: the data of g's bound constants, borrowed from g
   * (g's copy shares the GBytes of the program it was made from). */
  const void **consts;
  gsize consts_bytes;
  /* The pre-packed constants (docs/codegen.md): filled once by the
   * kernel's <prefix>_prepack when the constants are bound, passed as
   * consts[n] (NULL when the kernel has none). */
  void *prepacked;
  gsize prepacked_bytes;
  /* The workspace: grown to the largest size a call needed, reused by every
   * call that gets the lock (a concurrent call runs with its own). */
  GMutex lock;
  void *workspace;
  gsize workspace_bytes;
  /* TRUE when no container of g has a symbol in its shape or strides:
   * the sizes weir_graph_check_sizes checks are the same in every call. */
  gboolean layouts_fixed;
  /* Set (atomically: calls may run concurrently) once a call of a kernel
   * with layouts_fixed passed weir_graph_check_sizes; later calls skip it
   * (it walks every container, ~1-2% of a MobileNetV2 run, mob19). */
  gint sizes_checked;
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------- loading */

/* OpenMP runtimes must not be unloaded while their worker threads live:
 * the first time a kernel brings one in, it is made resident. */
static void pin_openmp(GModule *module) {
  static GMutex lock;
  static GHashTable *pinned; /* library path -> GModule* (resident) */
  gpointer sym = NULL;
  Dl_info dl;
  if (!g_module_symbol(module, "omp_get_num_threads", &sym) || !sym ||
      !dladdr(sym, &dl) || !dl.dli_fname)
    return;
  g_mutex_lock(&lock);
  if (!pinned)
    pinned = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  if (!g_hash_table_contains(pinned, dl.dli_fname)) {
    GModule *m = g_module_open(dl.dli_fname, G_MODULE_BIND_LOCAL);
    if (m) {
      g_module_make_resident(m);
      g_hash_table_insert(pinned, g_strdup(dl.dli_fname), m);
    }
  }
  g_mutex_unlock(&lock);
}

/* How idle OpenMP threads wait, chosen once per process before the first
 * kernel brings in libgomp (which reads its environment once, when it is
 * loaded), unless the user chose (OMP_WAIT_POLICY or GOMP_SPINCOUNT set).
 * Neither policy is right everywhere (docs/runtime.md, "Threading
 * defaults"): on idle cores a short spin before sleeping lets the next
 * parallel region start without a futex wake-up (the many small regions of
 * a mobile CNN or a training step ran 2-5x faster at 2 threads), while on
 * cores other processes want the spinning thread takes the time slice the
 * descheduled one needs (2-5x slower than sleeping at once).  So the
 * runnable tasks of the machine are sampled: when the kernel's threads fit
 * beside them, threads spin for about WEIR_OMP_SPIN_NS, otherwise
 * OMP_WAIT_POLICY=PASSIVE.
 *
 * The spin is chosen in time (mob20): libgomp counts rounds of its wait
 * loop (GOMP_SPINCOUNT), each a load of the word waited on and the CPU's
 * pause hint, whose length differs between processors: 3000 rounds, the
 * count tuned on the AMD Zen 5 machine (about 10 ns a round), took 53-56
 * us on the Intel Xeon model 207 (18 ns a round; docs/performance.md,
 * "Waking the second thread (mob20)").  So a round is timed once, when the
 * policy is chosen, and the count is the rounds of WEIR_OMP_SPIN_NS. */
#define WEIR_OMP_SPIN_NS 50000.0

/* whether a timed round (ns) is a usable time at all */
static gboolean round_timed(double round_ns) {
  return round_ns > 0 && round_ns <= 1e9;
}

guint64 weir_threading_spin_rounds(double round_ns, double spin_ns) {
  /* unknown (a clock that did not move): the count of the AMD machine */
  if (!round_timed(round_ns) || !(spin_ns > 0) || spin_ns > 1e12)
    return 3000;
  double rounds = spin_ns / round_ns + 0.5;
  /* a round timed too long (the calibrating thread preempted) must not
   * turn the spin into none, nor one timed too short into seconds */
  return rounds < 300 ? 300 : rounds > 100000 ? 100000 : (guint64)rounds;
}

/* The length of one round of libgomp's wait loop (config/linux/wait.h,
 * do_spin: a relaxed load and cpu_relax, which is `pause` on x86; the hint
 * used on other processors here is an approximation of theirs), in ns:
 * the fastest of 5 runs of 1000 rounds, so that a preemption during one
 * does not count. */
static double spin_round_ns(void) {
  static volatile int word;
  double best = -1;
  for (int r = 0; r < 5; r++) {
    double t0 = now_seconds();
    for (int i = 0; i < 1000; i++) {
      if (__atomic_load_n(&word, __ATOMIC_RELAXED) != 0)
        break;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#elif defined(__aarch64__)
      __asm__ volatile("yield" ::: "memory");
#else
      __asm__ volatile("" ::: "memory");
#endif
    }
    double t = (now_seconds() - t0) * 1e9 / 1000;
    if (best < 0 || t < best)
      best = t;
  }
  return best;
}

gboolean weir_threading_should_spin(double others_running, guint threads,
                                    guint processors) {
  return processors > 1 && others_running >= 0 &&
         others_running + (double)threads <= (double)processors + 0.25;
}

/* The mean number of runnable tasks other than the caller ("procs_running"
 * of /proc/stat, which counts the reading thread), over 16 samples 1 ms
 * apart; -1 when it cannot be read. */
static double others_running(void) {
  double sum = 0;
  for (int i = 0; i < 16; i++) {
    g_autofree char *stat = NULL;
    if (!g_file_get_contents("/proc/stat", &stat, NULL, NULL))
      return -1;
    const char *p = strstr(stat, "\nprocs_running ");
    if (!p)
      return -1;
    sum += g_ascii_strtod(p + strlen("\nprocs_running "), NULL) - 1;
    g_usleep(1000);
  }
  return sum / 16;
}

static char *omp_wait_choice;

static void threading_defaults(void) {
  static gsize done;
  if (g_once_init_enter(&done)) {
    const char *policy = g_getenv("OMP_WAIT_POLICY");
    const char *spin = g_getenv("GOMP_SPINCOUNT");
    if (policy || spin) {
      omp_wait_choice = g_strdup_printf(
          "as the environment says (OMP_WAIT_POLICY=%s, GOMP_SPINCOUNT=%s)",
          policy ? policy : "unset", spin ? spin : "unset");
    } else {
      guint procs = g_get_num_processors();
      const char *nt = g_getenv("OMP_NUM_THREADS");
      guint threads = nt ? (guint)g_ascii_strtoull(nt, NULL, 10) : procs;
      double others = others_running();
      if (weir_threading_should_spin(others, threads ? threads : procs,
                                     procs)) {
        double round_ns = spin_round_ns();
        guint64 rounds = weir_threading_spin_rounds(round_ns, WEIR_OMP_SPIN_NS);
        g_autofree char *count = g_strdup_printf("%" G_GUINT64_FORMAT, rounds);
        g_setenv("GOMP_SPINCOUNT", count, FALSE);
        g_autofree char *length =
            round_timed(round_ns)
                ? g_strdup_printf("%.0f us at %.1f ns a round",
                                  (double)rounds * round_ns * 1e-3, round_ns)
                : g_strdup("a round could not be timed");
        omp_wait_choice = g_strdup_printf(
            "spin %s rounds (%s), then sleep (%.1f other runnable tasks on %u "
            "processors when the first kernel loaded)",
            count, length, others, procs);
      } else {
        g_setenv("OMP_WAIT_POLICY", "PASSIVE", FALSE);
        omp_wait_choice =
            others < 0
                ? g_strdup("sleep at once (OMP_WAIT_POLICY=PASSIVE; the "
                           "machine's runnable tasks could not be read)")
                : g_strdup_printf("sleep at once (OMP_WAIT_POLICY=PASSIVE; "
                                  "%.1f other runnable tasks on %u "
                                  "processors when the first kernel loaded)",
                                  others, procs);
      }
    }
    g_once_init_leave(&done, 1);
  }
}

const char *weir_kernel_openmp_wait(void) {
  return omp_wait_choice;
}

/* openblas_get_parallel() of the OpenBLAS a kernel calls: 0 serial, 1
 * pthreads, 2 OpenMP; -1 when the kernel calls no OpenBLAS. */
static int blas_parallel(GModule *module) {
  gpointer sym = NULL;
  if (!g_module_symbol(module, "openblas_get_parallel", &sym) || !sym)
    return -1;
  return ((int (*)(void))sym)();
}

/* The OpenMP build of OpenBLAS (what kernels with OpenMP link when it is
 * installed, core/compiler.c) runs its GEMMs on the caller's OpenMP team:
 * one pool, as many threads as the kernel's loops, and a GEMM called
 * inside a parallel region runs serially.  It needs nothing here.  Any
 * other build runs with one thread inside Weir's kernels unless
 * OPENBLAS_NUM_THREADS says otherwise or weir_kernel_set_threads() is
 * called: the kernel's own OpenMP loops use the cores, and a second,
 * separate thread pool of OpenBLAS (Debian's default pthreads build) would
 * oversubscribe them. */
static void blas_defaults(GModule *module) {
  gpointer sym = NULL;
  if (g_getenv("OPENBLAS_NUM_THREADS") || blas_parallel(module) == 2 ||
      !g_module_symbol(module, "openblas_set_num_threads", &sym) || !sym)
    return;
  ((SetThreadsFunc)sym)(1);
}

static WeirKernel *kernel_load(const char *path, const char *prefix,
                               GError **error) {
  threading_defaults();
  GModule *module = g_module_open(path, G_MODULE_BIND_LOCAL);
  if (!module) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "kernel '%s': cannot load '%s': %s", prefix, path,
                g_module_error());
    return NULL;
  }
  g_autofree char *run_name = g_strconcat(prefix, "_run", NULL);
  g_autofree char *abi_name = g_strconcat(prefix, "_abi_version", NULL);
  g_autofree char *ws_name = g_strconcat(prefix, "_workspace_size", NULL);
  gpointer run = NULL, abi = NULL, ws = NULL;
  const char *missing =
      !g_module_symbol(module, run_name, &run) || !run   ? run_name
      : !g_module_symbol(module, abi_name, &abi) || !abi ? abi_name
                                                         : NULL;
  if (missing) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "kernel '%s': '%s' does not define '%s'", prefix, path,
                missing);
    g_module_close(module);
    return NULL;
  }
  int version = ((AbiFunc)abi)();
  if (version != WEIR_CODEGEN_ABI_VERSION) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_VERSION,
                "kernel '%s': '%s' has ABI version %d, this Weir runs version "
                "%d",
                prefix, path, version, WEIR_CODEGEN_ABI_VERSION);
    g_module_close(module);
    return NULL;
  }
  if (!g_module_symbol(module, ws_name, &ws) || !ws) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "kernel '%s': '%s' does not define '%s'", prefix, path,
                ws_name);
    g_module_close(module);
    return NULL;
  }
  pin_openmp(module);
  blas_defaults(module);
  WeirKernel *k = g_new0(WeirKernel, 1);
  k->prefix = g_strdup(prefix);
  k->module = module;
  k->run = (RunFunc)run;
  k->workspace_size = (WorkspaceFunc)ws;
  g_mutex_init(&k->lock);
  return k;
}

gboolean weir_kernel_profile(WeirKernel *k, guint *n, const gint64 **ids,
                             double **times) {
  g_return_val_if_fail(k != NULL && n != NULL, FALSE);
  g_autofree char *cn = g_strconcat(k->prefix, "_profile_count", NULL);
  g_autofree char *nn = g_strconcat(k->prefix, "_profile_nodes", NULL);
  g_autofree char *tn = g_strconcat(k->prefix, "_profile_times", NULL);
  gpointer c = NULL, nodes = NULL, t = NULL;
  if (!k->module || !g_module_symbol(k->module, cn, &c) || !c ||
      !g_module_symbol(k->module, nn, &nodes) || !nodes ||
      !g_module_symbol(k->module, tn, &t) || !t)
    return FALSE;
  *n = (guint)((int (*)(void))c)();
  if (ids)
    *ids = ((const gint64 *(*)(void))nodes)();
  if (times)
    *times = ((double *(*)(void))t)();
  return TRUE;
}

void weir_kernel_free(WeirKernel *k) {
  if (!k)
    return;
  if (k->module)
    g_module_close(k->module);
  g_free(k->consts);
  free(k->prepacked);
  free(k->workspace);
  g_mutex_clear(&k->lock);
  if (k->arguments)
    g_ptr_array_unref(k->arguments);
  if (k->g)
    weir_graph_free(k->g);
  g_free(k->prefix);
  g_free(k);
}

void weir_compile_info_clear(WeirCompileInfo *info) {
  if (!info)
    return;
  g_free(info->key);
  g_free(info->object_path);
  memset(info, 0, sizeof *info);
}

const char *weir_kernel_prefix(const WeirKernel *k) {
  return k->prefix;
}

gsize weir_kernel_constants_bytes(const WeirKernel *k) {
  g_return_val_if_fail(k != NULL, 0);
  return k->consts_bytes;
}

const void *weir_kernel_workspace(WeirKernel *k, gsize *bytes) {
  g_return_val_if_fail(k != NULL, NULL);
  g_mutex_lock(&k->lock);
  const void *w = k->workspace;
  if (bytes)
    *bytes = k->workspace_bytes;
  g_mutex_unlock(&k->lock);
  return w;
}

/* ------------------------------------------------------------ compiling */

/* Describes the host CPU, for keys of code built with -march=native:
 * the model name and feature flags of the first processor. */
static const char *host_cpu(void) {
  static char *text;
  if (g_once_init_enter(&text)) {
    GString *s = g_string_new(NULL);
    g_autofree char *info = NULL;
    if (g_file_get_contents("/proc/cpuinfo", &info, NULL, NULL)) {
      const char *keys[] = {"model name", "flags", "Features", "CPU part"};
      g_auto(GStrv) lines = g_strsplit(info, "\n", -1);
      for (guint k = 0; k < G_N_ELEMENTS(keys); k++) {
        for (guint i = 0; lines[i]; i++) {
          if (g_str_has_prefix(lines[i], keys[k])) {
            g_string_append_printf(s, "%s\n", lines[i]);
            break;
          }
        }
      }
    }
    g_string_append(s, G_STRINGIFY(__SIZEOF_POINTER__));
    g_once_init_leave(&text, g_string_free(s, FALSE));
  }
  return text;
}

/* The flags part of the cache key: the normalized flags, plus the host CPU
 * when the code is tuned for the machine that builds it, plus the OpenMP
 * build of OpenBLAS that units with OpenMP link (weir-runtime.h). */
static char *key_flags(const char *flags) {
  g_autofree char *omp_blas =
      strstr(flags, "-fopenmp") ? weir_compiler_openblas_openmp() : NULL;
  g_autofree char *blas =
      omp_blas ? g_strconcat("\nopenblas ", omp_blas, NULL) : g_strdup("");
  if (!strstr(flags, "=native"))
    return g_strconcat(flags, blas, NULL);
  return g_strconcat(flags, "\nhost ", host_cpu(), blas, NULL);
}

static GBytes *read_bytes(const char *path, GError **error) {
  g_autoptr(GMappedFile) mf = g_mapped_file_new(path, FALSE, error);
  return mf ? g_mapped_file_get_bytes(mf) : NULL;
}

/* One program to build: a program (g set, its source generated only on a
 * miss) or hand-written source. */
typedef struct {
  const WeirGraph *g;
  const WeirCodegenOptions *cg; /* with g */
  const char *source;
  GPtrArray *generated; /* owned compile units generated for g */
  const char *prefix;
  WeirKernel *kernel; /* result */
  WeirCompileInfo info;
} Unit;

/* The size of compile units (WEIR_CODEGEN_UNIT_BYTES, or
 * $WEIR_CODEGEN_UNIT_BYTES; 0: one unit). */
static gsize unit_bytes(void) {
  const char *v = g_getenv("WEIR_CODEGEN_UNIT_BYTES");
  guint64 n;
  if (v && g_ascii_string_to_unsigned(v, 10, 0, G_MAXSIZE, &n, NULL))
    return (gsize)n;
  return WEIR_CODEGEN_UNIT_BYTES;
}

/* Whether kernel helpers are compiled into objects of their own
 * (WeirCodegenOptions.helper_units; $WEIR_HELPER_UNITS=0 pastes them into
 * every program, as before, to compare). */
static gboolean helper_units(void) {
  const char *v = g_getenv("WEIR_HELPER_UNITS");
  return !(v && strcmp(v, "0") == 0);
}

static gboolean uses_openmp(const WeirCompileOptions *opts) {
  g_autofree char *flags = weir_compiler_flags(opts, NULL);
  if (!flags)
    return FALSE;
  g_auto(GStrv) words = g_strsplit(flags, " ", -1);
  for (guint i = 0; words[i]; i++)
    if (g_str_has_prefix(words[i], "-fopenmp"))
      return TRUE;
  return FALSE;
}

/* The text a program's key hashes in place of a source: the build id of
 * libweir (it stands for the code generator), the code generator's options
 * and the structure of g without the data of bound constants (the generated
 * code receives those through consts[], so they cannot change it). */
static char *program_key_text(const WeirGraph *g,
                              const WeirCodegenOptions *cg) {
  g_autofree char *structure =
      weir_graph_structure_json(g, WEIR_CODEGEN_LITERAL_MAX);
  GString *s = g_string_new(NULL);
  g_autofree char *kernels = weir_kernels_signature();
  g_string_append_printf(s, "weir-program\nbuild %s\nopenmp %d\nkernels %s\n",
                         weir_build_id(), cg->openmp ? 1 : 0, kernels);
  if (cg->unit_bytes) /* the split into compile units */
    g_string_append_printf(s, "units %" G_GSIZE_FORMAT "\n", cg->unit_bytes);
  if (cg->profile) /* instrumented (absent otherwise: keys stay the same) */
    g_string_append(s, "profile 1\n");
  if (cg->helper_units) /* linked with helper objects */
    g_string_append(s, "helper-units 1\n");
  g_string_append(s, structure);
  return g_string_free(s, FALSE);
}

/* The key of unit u (the source for hand-written units, the program's
 * structure otherwise). */
static char *unit_key(const Unit *u, const char *identity, const char *kflags) {
  if (!u->g)
    return weir_cache_key(u->source, identity, kflags,
                          WEIR_CODEGEN_ABI_VERSION);
  g_autofree char *text = program_key_text(u->g, u->cg);
  return weir_cache_key(text, identity, kflags, WEIR_CODEGEN_ABI_VERSION);
}

char *weir_kernel_key(const WeirGraph *g, const WeirCompileOptions *opts,
                      GError **error) {
  g_return_val_if_fail(g != NULL, NULL);
  g_autofree char *identity = weir_compiler_identity(opts, error);
  if (!identity)
    return NULL;
  g_autofree char *flags = weir_compiler_flags(opts, error);
  if (!flags)
    return NULL;
  g_autofree char *kflags = key_flags(flags);
  WeirCodegenOptions cg = {.openmp = uses_openmp(opts),
                           .unit_bytes = unit_bytes(),
                           .profile = opts && opts->profile,
                           .helper_units = helper_units()};
  Unit u = {.g = g, .cg = &cg};
  return unit_key(&u, identity, kflags);
}

static void remove_dir(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    g_autofree char *p = g_build_filename(dir, name, NULL);
    g_unlink(p);
  }
  g_rmdir(dir);
}

/* A kernel helper unit of the programs being built (weir_codegen_units
 * with helper_units): its object file, from the compile cache or compiled
 * once for all of them. */
typedef struct {
  const char *text; /* borrowed from a Unit's generated units */
  char *key;        /* its cache key (helper_key) */
  char *path;       /* the object, in the build's scratch directory */
  gboolean hit;     /* path is a copy of the cached object */
  gboolean rebuilt; /* the cached object was damaged */
} Helper;

static void helper_free(gpointer p) {
  Helper *h = p;
  g_free(h->key);
  g_free(h->path);
  g_free(h);
}

/* The cache key of a helper object: as a program's (the text, compiler
 * identity, flags with the host CPU, ABI version), tagged so that it never
 * equals the key of a shared object. */
static char *helper_key(const char *text, const char *identity,
                        const char *kflags) {
  g_autofree char *f = g_strconcat(kflags, "\nhelper-object", NULL);
  return weir_cache_key(text, identity, f, WEIR_CODEGEN_ABI_VERSION);
}

/* Makes every helper's object: a cached one is copied into the build's
 * directory (an eviction by another process cannot take it away during
 * the link), the others are compiled in parallel (`-c`) and inserted.
 * *seconds accumulates the wall time. */
static gboolean helper_objects(GPtrArray *helpers, WeirCache *cache,
                               const WeirCompileOptions *opts, double *seconds,
                               GError **error) {
  double t0 = now_seconds();
  g_autoptr(GPtrArray) todo = g_ptr_array_new();
  for (guint i = 0; i < helpers->len; i++) {
    Helper *h = g_ptr_array_index(helpers, i);
    h->hit = FALSE;
    if (cache) {
      gboolean recovered = FALSE;
      g_autoptr(GError) local = NULL;
      g_autofree char *path =
          weir_cache_lookup(cache, h->key, &recovered, &local);
      if (local) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
      }
      h->rebuilt = h->rebuilt || recovered;
      g_autoptr(GBytes) bytes = path ? read_bytes(path, NULL) : NULL;
      gsize len = 0;
      const char *data = bytes ? g_bytes_get_data(bytes, &len) : NULL;
      if (data && g_file_set_contents(h->path, data, (gssize)len, NULL)) {
        h->hit = TRUE;
        continue;
      }
    }
    g_ptr_array_add(todo, h);
  }
  gboolean ok = TRUE;
  if (todo->len) {
    g_autofree WeirCompileJob *jobs = g_new0(WeirCompileJob, todo->len);
    for (guint j = 0; j < todo->len; j++) {
      Helper *h = g_ptr_array_index(todo, j);
      jobs[j] = (WeirCompileJob){.source = h->text,
                                 .name = "weir_helper",
                                 .output = h->path,
                                 .object = TRUE};
    }
    ok = weir_compile_many(jobs, todo->len, opts, error);
    for (guint j = 0; ok && cache && j < todo->len; j++) {
      Helper *h = g_ptr_array_index(todo, j);
      g_autoptr(GError) local = NULL;
      g_autoptr(GBytes) bytes = read_bytes(h->path, &local);
      if (!bytes) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "helper object: %s",
                    local->message);
        ok = FALSE;
      } else
        ok = weir_cache_insert(cache, h->key, bytes, NULL, error);
    }
    for (guint j = 0; j < todo->len; j++)
      g_clear_error(&jobs[j].error);
  }
  *seconds += now_seconds() - t0;
  return ok;
}

/* Builds units: cache lookups, then the misses compiled in parallel, loaded
 * and inserted.  On failure the error names the unit that failed first;
 * kernels already loaded stay in the units for the caller to free. */
static gboolean build_units(Unit *units, guint n,
                            const WeirCompileOptions *opts, GError **error) {
  g_autofree char *identity = weir_compiler_identity(opts, error);
  if (!identity)
    return FALSE;
  g_autofree char *flags = weir_compiler_flags(opts, error);
  if (!flags)
    return FALSE;
  g_autofree char *kflags = key_flags(flags);
  gboolean use_cache = !(opts && opts->no_cache);
  g_autoptr(WeirCache) cache = NULL;
  if (use_cache) {
    cache = weir_cache_open(opts ? opts->cache_dir : NULL, error);
    if (!cache)
      return FALSE;
    if (opts && opts->cache_max_bytes > 0)
      weir_cache_set_max_bytes(cache, opts->cache_max_bytes);
  }

  g_autoptr(GArray) misses = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < n; i++) {
    Unit *u = &units[i];
    double t0 = now_seconds();
    u->info.key = unit_key(u, identity, kflags);
    u->info.key_seconds = now_seconds() - t0;
    if (cache) {
      gboolean recovered = FALSE;
      g_autoptr(GError) local = NULL;
      g_autofree char *path =
          weir_cache_lookup(cache, u->info.key, &recovered, &local);
      if (local) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
      }
      u->info.recovered = recovered;
      if (path) {
        u->kernel = kernel_load(path, u->prefix, &local);
        if (u->kernel) {
          u->info.cache_hit = TRUE;
          u->info.object_path = g_steal_pointer(&path);
          continue;
        }
        /* damaged in a way the checksum cannot see: rebuild it */
        if (!weir_cache_remove(cache, u->info.key, error))
          return FALSE;
        u->info.recovered = TRUE;
      }
    }
    g_array_append_val(misses, i);
  }
  if (misses->len == 0)
    return TRUE;

  /* Only misses generate C. */
  for (guint j = 0; j < misses->len; j++) {
    Unit *u = &units[g_array_index(misses, guint, j)];
    if (!u->g)
      continue;
    double t0 = now_seconds();
    u->generated = weir_codegen_units(u->g, u->cg, error);
    if (!u->generated) {
      if (n > 1)
        g_prefix_error(error, "program '%s': ", u->g->name);
      return FALSE;
    }
    u->source = g_ptr_array_index(u->generated, 0);
    u->info.codegen_seconds = now_seconds() - t0;
    for (guint k = 0; k < u->generated->len; k++)
      u->info.source_bytes += strlen(g_ptr_array_index(u->generated, k));
    u->info.units = u->generated->len;
  }

  g_autoptr(GError) local = NULL;
  g_autofree char *dir = weir_scratch_dir_new("weir-rt", &local);
  if (!dir) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "compile: cannot create a temporary directory: %s",
                local->message);
    return FALSE;
  }
  /* the kernel helpers of the programs (helper units), each once */
  g_autoptr(GPtrArray) helpers = g_ptr_array_new_with_free_func(helper_free);
  g_autoptr(GHashTable) helper_index =
      g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) objects =
      g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  for (guint j = 0; j < misses->len; j++) {
    Unit *u = &units[g_array_index(misses, guint, j)];
    GPtrArray *objs = g_ptr_array_new();
    g_ptr_array_add(objects, objs);
    for (guint k = 0; u->generated && k < u->generated->len; k++) {
      const char *text = g_ptr_array_index(u->generated, k);
      if (!g_str_has_prefix(text, WEIR_CODEGEN_HELPER_UNIT_TAG))
        continue;
      Helper *h = g_hash_table_lookup(helper_index, text);
      if (!h) {
        h = g_new0(Helper, 1);
        h->text = text;
        h->key = helper_key(text, identity, kflags);
        g_autofree char *file = g_strdup_printf("helper-%u.o", helpers->len);
        h->path = g_build_filename(dir, file, NULL);
        g_ptr_array_add(helpers, h);
        g_hash_table_insert(helper_index, (gpointer)text, h);
      }
      g_ptr_array_add(objs, h);
    }
    u->info.units -= objs->len; /* the program's own */
  }
  double helper_seconds = 0;
  gboolean ok = helper_objects(helpers, cache, opts, &helper_seconds, error);

  g_autofree WeirCompileJob *jobs = g_new0(WeirCompileJob, misses->len);
  g_autoptr(GPtrArray) outputs = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) paths =
      g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  for (guint j = 0; j < misses->len; j++) {
    Unit *u = &units[g_array_index(misses, guint, j)];
    g_autofree char *file = g_strdup_printf("%u-%s.so", j, u->prefix);
    g_ptr_array_add(outputs, g_build_filename(dir, file, NULL));
    GPtrArray *objs = g_ptr_array_index(objects, j);
    GPtrArray *p = g_ptr_array_new();
    for (guint k = 0; k < objs->len; k++)
      g_ptr_array_add(p, ((Helper *)g_ptr_array_index(objs, k))->path);
    g_ptr_array_add(p, NULL);
    g_ptr_array_add(paths, p);
    guint n_units = u->generated ? u->generated->len - objs->len : 1;
    jobs[j] = (WeirCompileJob){
        .source = u->source,
        .name = u->prefix,
        .output = g_ptr_array_index(outputs, j),
        .units = u->generated ? (const char *const *)u->generated->pdata : NULL,
        .n_units = n_units,
        .objects = objs->len ? (const char *const *)p->pdata : NULL};
  }
  for (guint attempt = 0; ok; attempt++) {
    ok = weir_compile_many(jobs, misses->len, opts, error);
    for (guint j = 0; ok && j < misses->len; j++) {
      Unit *u = &units[g_array_index(misses, guint, j)];
      g_clear_pointer(&u->kernel, weir_kernel_free);
      u->kernel = kernel_load(g_ptr_array_index(outputs, j), u->prefix, error);
      ok = u->kernel != NULL;
    }
    /* a cached helper object that the checksum could not find damaged
     * (stored damaged, or by another build of the compiler) fails the
     * link or the load: rebuilt once, from its text */
    guint stale = 0;
    for (guint i = 0; !ok && attempt == 0 && i < helpers->len; i++) {
      Helper *h = g_ptr_array_index(helpers, i);
      if (!h->hit)
        continue;
      if (!weir_cache_remove(cache, h->key, NULL))
        break;
      h->rebuilt = TRUE;
      stale++;
    }
    if (ok || !stale)
      break;
    g_clear_error(error);
    for (guint j = 0; j < misses->len; j++)
      g_clear_error(&jobs[j].error);
    ok = helper_objects(helpers, cache, opts, &helper_seconds, error);
  }
  for (guint j = 0; ok && j < misses->len; j++) {
    Unit *u = &units[g_array_index(misses, guint, j)];
    const char *out = g_ptr_array_index(outputs, j);
    GPtrArray *objs = g_ptr_array_index(objects, j);
    u->info.compile_seconds = helper_seconds + jobs[j].seconds;
    u->info.helper_units = objs->len;
    for (guint k = 0; k < objs->len; k++) {
      const Helper *h = g_ptr_array_index(objs, k);
      u->info.helper_hits += h->hit;
      u->info.helper_rebuilt += h->rebuilt;
    }
    if (cache) {
      g_autoptr(GBytes) bytes = read_bytes(out, &local);
      if (!bytes) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "kernel '%s': %s",
                    u->prefix, local->message);
        ok = FALSE;
      } else
        ok = weir_cache_insert(cache, u->info.key, bytes, &u->info.object_path,
                               error);
    } else
      u->info.object_path = g_strdup(out);
  }
  for (guint j = 0; j < misses->len; j++)
    g_clear_error(&jobs[j].error);
  remove_dir(dir);
  return ok;
}

static void units_clear(Unit *units, guint n) {
  for (guint i = 0; i < n; i++) {
    g_clear_pointer(&units[i].generated, g_ptr_array_unref);
    g_clear_pointer(&units[i].kernel, weir_kernel_free);
    weir_compile_info_clear(&units[i].info);
  }
}

/* A block of `bytes` (a multiple of 64, not 0), 64-byte aligned, for
 * free().  Blocks of 4 MiB or more (a network's prepacked weights, its
 * workspace) are aligned to 2 MiB and advised as transparent huge pages:
 * where the system's THP mode is "madvise" (Debian's default) that is the
 * only way to get them, and streaming tens of MB of weights through 4 KiB
 * pages costs a TLB miss every 4 KiB (docs/runtime.md, "Huge pages").
 * WEIR_HUGEPAGES=0 in the environment turns the advice off (to measure
 * it). */
static void *big_block(gsize bytes) {
  const gsize huge = 2u << 20;
  const char *env = g_getenv("WEIR_HUGEPAGES");
  if (bytes >= 2 * huge && !(env && strcmp(env, "0") == 0)) {
    gsize r = bytes / huge * huge + (bytes % huge ? huge : 0);
    void *p = r >= bytes ? aligned_alloc(huge, r) : NULL;
    if (p) {
#ifdef MADV_HUGEPAGE
      (void)madvise(p, r, MADV_HUGEPAGE); /* advice: failure is harmless */
#endif
      return p;
    }
  }
  return aligned_alloc(64, bytes);
}

/* The kernel's pre-packed constants (its weights in the layout its
 * GEMMs read, docs/native.md): computed once, now that the constants are
 * bound (they never change while k lives: k->g is k's own copy), and
 * passed as consts[n].  A kernel without <prefix>_prepack, or whose block
 * cannot be allocated, or with WEIR_PREPACK=0 in the environment (to
 * measure the difference), gets NULL there and packs in every call. */
static void prepack(WeirKernel *k, guint n) {
  g_autofree char *size_name = g_strdup_printf("%s_prepacked_size", k->prefix);
  g_autofree char *name = g_strdup_printf("%s_prepack", k->prefix);
  gpointer size_fn = NULL, fn = NULL;
  const char *env = g_getenv("WEIR_PREPACK");
  if ((env && strcmp(env, "0") == 0) || !k->module ||
      !g_module_symbol(k->module, size_name, &size_fn) || !size_fn ||
      !g_module_symbol(k->module, name, &fn) || !fn)
    return;
  gsize bytes = ((size_t(*)(void))size_fn)();
  gsize rounded = (bytes + 63) / 64 * 64;
  void *block = rounded >= bytes && rounded ? big_block(rounded) : NULL;
  if (!block)
    return;
  ((void (*)(const void *const *, void *))fn)(k->consts, block);
  k->prepacked = block;
  k->prepacked_bytes = bytes;
  k->consts[n] = block;
}

gsize weir_kernel_prepacked_bytes(const WeirKernel *k) {
  g_return_val_if_fail(k != NULL, 0);
  return k->prepacked_bytes;
}

/* TRUE when every dimension and stride of every container of g is a
 * constant. */
static gboolean layouts_fixed(const WeirGraph *g) {
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    for (guint d = 0; d < c->shape->len; d++)
      if (!weir_expr_is_const(g_ptr_array_index(c->shape, d), NULL))
        return FALSE;
    for (guint d = 0; d < c->strides->len; d++)
      if (!weir_expr_is_const(g_ptr_array_index(c->strides, d), NULL))
        return FALSE;
  }
  return TRUE;
}

/* Gives the kernel its program (copied) and argument order. */
static void kernel_attach(WeirKernel *k, const WeirGraph *g) {
  k->g = weir_graph_copy(g);
  k->layouts_fixed = layouts_fixed(k->g);
  k->arguments = weir_codegen_arguments(k->g);
  g_autoptr(GPtrArray) consts = weir_codegen_constants(k->g);
  k->consts = g_new0(const void *, consts->len + 1);
  for (guint i = 0; i < consts->len; i++) {
    const WeirContainer *c = g_ptr_array_index(consts, i);
    gsize n = 0;
    k->consts[i] = g_bytes_get_data(c->initial, &n);
    k->consts_bytes += n;
  }
  prepack(k, consts->len);
}

static void take_info(WeirCompileInfo *info, Unit *u) {
  if (info) {
    *info = u->info;
    memset(&u->info, 0, sizeof u->info);
  }
}

WeirKernel *weir_kernel_compile_source(const char *source, const char *prefix,
                                       const WeirGraph *g,
                                       const WeirCompileOptions *opts,
                                       WeirCompileInfo *info, GError **error) {
  g_return_val_if_fail(source != NULL && prefix != NULL, NULL);
  if (info)
    memset(info, 0, sizeof *info);
  Unit u = {.source = source, .prefix = prefix};
  if (!build_units(&u, 1, opts, error)) {
    units_clear(&u, 1);
    return NULL;
  }
  if (g)
    kernel_attach(u.kernel, g);
  take_info(info, &u);
  WeirKernel *k = g_steal_pointer(&u.kernel);
  units_clear(&u, 1);
  return k;
}

gboolean weir_kernel_compile_many(const WeirGraph *const *graphs, guint n,
                                  const WeirCompileOptions *opts,
                                  WeirKernel **kernels_out,
                                  WeirCompileInfo *infos, GError **error) {
  g_return_val_if_fail(graphs != NULL || n == 0, FALSE);
  g_return_val_if_fail(kernels_out != NULL || n == 0, FALSE);
  WeirCodegenOptions cg = {.openmp = uses_openmp(opts),
                           .unit_bytes = unit_bytes(),
                           .profile = opts && opts->profile,
                           .helper_units = helper_units()};
  g_autoptr(GPtrArray) prefixes = g_ptr_array_new_with_free_func(g_free);
  g_autofree Unit *units = g_new0(Unit, n ? n : 1);
  for (guint i = 0; i < n; i++) {
    kernels_out[i] = NULL;
    if (infos)
      memset(&infos[i], 0, sizeof infos[i]);
  }
  for (guint i = 0; i < n; i++) {
    g_ptr_array_add(prefixes, weir_codegen_prefix(graphs[i]));
    units[i].g = graphs[i];
    units[i].cg = &cg;
    units[i].prefix = g_ptr_array_index(prefixes, i);
  }
  if (!build_units(units, n, opts, error)) {
    units_clear(units, n);
    return FALSE;
  }
  for (guint i = 0; i < n; i++) {
    kernel_attach(units[i].kernel, graphs[i]);
    kernels_out[i] = g_steal_pointer(&units[i].kernel);
    if (infos)
      take_info(&infos[i], &units[i]);
  }
  units_clear(units, n);
  return TRUE;
}

WeirKernel *weir_kernel_compile(const WeirGraph *g,
                                const WeirCompileOptions *opts,
                                WeirCompileInfo *info, GError **error) {
  g_return_val_if_fail(g != NULL, NULL);
  WeirKernel *k = NULL;
  if (!weir_kernel_compile_many(&g, 1, opts, &k, info, error))
    return NULL;
  return k;
}

/* -------------------------------------------------------------- running */

static char *type_string(WeirDType dtype, guint rank, const gint64 *shape) {
  GString *s = g_string_new(weir_dtype_name(dtype));
  g_string_append_c(s, '[');
  for (guint d = 0; d < rank; d++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? ", " : "", shape[d]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static gboolean assigned_symbol(const WeirGraph *g, const char *name) {
  for (guint i = 0; i < g->transitions->len; i++) {
    const WeirTransition *t = g_ptr_array_index(g->transitions, i);
    for (guint j = 0; j < t->assign_names->len; j++)
      if (strcmp(g_ptr_array_index(t->assign_names, j), name) == 0)
        return TRUE;
  }
  return FALSE;
}

/* Checks one argument tensor against its container (layout evaluated with
 * symbols), as the interpreter does. */
static gboolean check_argument(const WeirContainer *c, WeirTensor *t,
                               GHashTable *symbols, GError **error) {
  guint rank = c->shape->len;
  g_autofree gint64 *shape = g_new0(gint64, rank + 1);
  g_autofree gint64 *strides = g_new0(gint64, rank + 1);
  if (c->strides->len != rank) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "container '%s': %u strides for rank %u", c->name,
                c->strides->len, rank);
    return FALSE;
  }
  for (guint d = 0; d < rank; d++) {
    if (!weir_expr_eval(g_ptr_array_index(c->shape, d), symbols, &shape[d],
                        error)) {
      g_prefix_error(error, "container '%s': shape dimension %u: ", c->name, d);
      return FALSE;
    }
    if (shape[d] < 0) {
      g_set_error(
          error, WEIR_ERROR, WEIR_ERROR_INVALID,
          "container '%s': shape dimension %u is negative (%" G_GINT64_FORMAT
          ")",
          c->name, d, shape[d]);
      return FALSE;
    }
    if (!weir_expr_eval(g_ptr_array_index(c->strides, d), symbols, &strides[d],
                        error)) {
      g_prefix_error(error, "container '%s': stride %u: ", c->name, d);
      return FALSE;
    }
    if (strides[d] < 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "container '%s': stride %u is negative (%" G_GINT64_FORMAT
                  ")",
                  c->name, d, strides[d]);
      return FALSE;
    }
  }
  if (!t) {
    g_autofree char *want = type_string(c->dtype, rank, shape);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "missing argument '%s' (%s)", c->name, want);
    return FALSE;
  }
  gboolean same = t->dtype == c->dtype && t->rank == rank;
  for (guint d = 0; same && d < rank; d++)
    same = t->shape[d] == shape[d];
  if (!same) {
    g_autofree char *want = type_string(c->dtype, rank, shape);
    g_autofree char *got = weir_tensor_describe(t);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "argument '%s': expected %s, got %s", c->name, want, got);
    return FALSE;
  }
  /* Elements the layout spans: 1 + offset of the last element. */
  guint64 last = 0;
  gboolean empty = FALSE, overflow = FALSE;
  for (guint d = 0; d < rank; d++)
    empty = empty || shape[d] == 0;
  for (guint d = 0; !empty && d < rank; d++) {
    guint64 term;
    overflow = overflow ||
               !g_uint64_checked_mul(&term, (guint64)(shape[d] - 1),
                                     (guint64)strides[d]) ||
               !g_uint64_checked_add(&last, last, term);
  }
  if (!empty && (overflow || last >= (guint64)t->count)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "argument '%s': the container's strides reach beyond the "
                "tensor's %" G_GINT64_FORMAT " elements",
                c->name, t->count);
    return FALSE;
  }
  return TRUE;
}

/* Fills ptrs (one per ABI argument) and syms (one per program symbol). */
static gboolean kernel_bind(WeirKernel *k, GHashTable *symbols,
                            GHashTable *args, void **ptrs, gint64 *syms,
                            GError **error) {
  const WeirGraph *g = k->g;
  if (!g) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "kernel '%s' was compiled without its program; call it with "
                "weir_kernel_call",
                k->prefix);
    return FALSE;
  }
  /* Every size the generated code computes from these symbols fits in
   * int64 (weir-limits.h); with fixed layouts, checked by the first call
   * that passed. */
  if (!g_atomic_int_get(&k->sizes_checked)) {
    if (!weir_graph_check_sizes(g, symbols, error))
      return FALSE;
    if (k->layouts_fixed)
      g_atomic_int_set(&k->sizes_checked, 1);
  }
  if (!weir_interp_check_argument_names(g, args, TRUE, error))
    return FALSE;
  for (guint i = 0; i < k->arguments->len; i++) {
    const WeirContainer *c = g_ptr_array_index(k->arguments, i);
    WeirTensor *t = args ? g_hash_table_lookup(args, c->name) : NULL;
    if (!check_argument(c, t, symbols, error))
      return FALSE;
    ptrs[i] = t->data;
  }
  for (guint i = 0; i < g->symbols->len; i++) {
    const char *name = g_ptr_array_index(g->symbols, i);
    const gint64 *v = symbols ? g_hash_table_lookup(symbols, name) : NULL;
    if (v)
      syms[i] = *v;
    else if (assigned_symbol(g, name))
      syms[i] = 0; /* set by a transition before use */
    else {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "symbol '%s' of program '%s' is not bound", name, g->name);
      return FALSE;
    }
  }
  return TRUE;
}

/* Replaces k's workspace by one of `need` bytes (k->lock held).  The block
 * is not cleared: the kernel zero-fills what must start at zero, so each
 * page is first touched by the thread of the kernel that uses it (the
 * parallel loops writing the scratch of a convolution, say). */
static gboolean workspace_grow(WeirKernel *k, gsize need, GError **error) {
  free(k->workspace);
  k->workspace = NULL;
  k->workspace_bytes = 0;
  gsize rounded = need + 63 < need ? 0 : (need + 63) / 64 * 64;
  void *w = rounded ? big_block(rounded) : NULL;
  if (!w) {
    g_autofree char *size = g_format_size_full(need, G_FORMAT_SIZE_IEC_UNITS);
    g_set_error(
        error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
        "kernel '%s': cannot allocate its workspace of %s (%" G_GSIZE_FORMAT
        " bytes)",
        k->prefix, size, need);
    return FALSE;
  }
  k->workspace = w;
  k->workspace_bytes = need;
  return TRUE;
}

gboolean weir_kernel_call(WeirKernel *k, void *const args[],
                          const gint64 symbols[], GError **error) {
  g_return_val_if_fail(k != NULL, FALSE);
  if (G_BYTE_ORDER != G_LITTLE_ENDIAN && k->consts_bytes) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "kernel '%s': constant data is stored little-endian; this "
                "host is big-endian",
                k->prefix);
    return FALSE;
  }
  const int64_t *syms = (const int64_t *)symbols;
  int rc;
  if (g_mutex_trylock(&k->lock)) {
    gsize need = k->workspace_size(syms);
    if (need > k->workspace_bytes && !workspace_grow(k, need, error)) {
      g_mutex_unlock(&k->lock);
      return FALSE;
    }
    rc = k->run(args, syms, k->consts, need ? k->workspace : NULL);
    g_mutex_unlock(&k->lock);
  } else
    rc = k->run(args, syms, k->consts, NULL); /* allocates its own */
  if (rc != 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "kernel '%s' failed with status %d (its transient memory "
                "could not be allocated)",
                k->prefix, rc);
    return FALSE;
  }
  return TRUE;
}

gboolean weir_kernel_run(WeirKernel *k, GHashTable *symbols, GHashTable *args,
                         GError **error) {
  g_return_val_if_fail(k != NULL, FALSE);
  g_autofree void **ptrs = NULL;
  g_autofree gint64 *syms = NULL;
  if (k->g) {
    ptrs = g_new0(void *, k->arguments->len + 1);
    syms = g_new0(gint64, k->g->symbols->len + 1);
  }
  if (!kernel_bind(k, symbols, args, ptrs, syms, error))
    return FALSE;
  return weir_kernel_call(k, ptrs, syms, error);
}

char *weir_kernel_blas_info(WeirKernel *k) {
  g_return_val_if_fail(k != NULL, NULL);
  gpointer config = NULL, core = NULL;
  if (!g_module_symbol(k->module, "openblas_get_corename", &core) || !core)
    return NULL;
  g_module_symbol(k->module, "openblas_get_config", &config);
  const char *(*get_core)(void) = (const char *(*)(void))core;
  const char *(*get_config)(void) = (const char *(*)(void))config;
  static const char *const modes[] = {"serial", "own pthreads pool",
                                      "OpenMP, the kernel's threads"};
  int mode = blas_parallel(k->module);
  /* openblas_get_config() starts with "OpenBLAS <version>" */
  const char *cfg = get_config ? get_config() : "OpenBLAS";
  return g_strdup_printf("%s%s, core %s, threads: %s",
                         g_str_has_prefix(cfg, "OpenBLAS") ? "" : "OpenBLAS ",
                         cfg, get_core(),
                         mode >= 0 && mode <= 2 ? modes[mode] : "?");
}

gboolean weir_kernel_set_threads(WeirKernel *k, int n_threads, GError **error) {
  g_return_val_if_fail(k != NULL && n_threads > 0, FALSE);
  gpointer sym = NULL;
  if (!g_module_symbol(k->module, "omp_set_num_threads", &sym) || !sym) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "kernel '%s' does not use OpenMP (no parallel schedule, or "
                "compiled without -fopenmp)",
                k->prefix);
    return FALSE;
  }
  ((SetThreadsFunc)sym)(n_threads);
  /* the kernel's library calls get the same number of threads */
  gpointer blas = NULL;
  if (g_module_symbol(k->module, "openblas_set_num_threads", &blas) && blas)
    ((SetThreadsFunc)blas)(n_threads);
  return TRUE;
}

/* ----------------------------------------------------------- benchmarks */

static int cmp_double(gconstpointer a, gconstpointer b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

void weir_bench_summarize(const double *times, guint n, WeirBenchResult *out) {
  g_return_if_fail(times != NULL && n > 0 && out != NULL);
  memset(out, 0, sizeof *out);
  out->repetitions = n;
  out->times = g_memdup2(times, n * sizeof(double));
  g_autofree double *sorted = g_memdup2(times, n * sizeof(double));
  qsort(sorted, n, sizeof(double), cmp_double);
  out->min = sorted[0];
  out->max = sorted[n - 1];
  out->median =
      n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
  double sum = 0;
  for (guint i = 0; i < n; i++)
    sum += times[i];
  out->mean = sum / n;
}

void weir_bench_result_clear(WeirBenchResult *r) {
  if (!r)
    return;
  g_free(r->times);
  memset(r, 0, sizeof *r);
}

gboolean weir_kernel_bench(WeirKernel *k, GHashTable *symbols, GHashTable *args,
                           const WeirBenchOptions *opts, WeirBenchResult *out,
                           GError **error) {
  g_return_val_if_fail(k != NULL && out != NULL, FALSE);
  memset(out, 0, sizeof *out);
  guint warmup = opts ? opts->warmup : 0;
  guint reps = opts && opts->repetitions ? opts->repetitions : 10;
  g_autofree void **ptrs = NULL;
  g_autofree gint64 *syms = NULL;
  if (k->g) {
    ptrs = g_new0(void *, k->arguments->len + 1);
    syms = g_new0(gint64, k->g->symbols->len + 1);
  }
  if (!kernel_bind(k, symbols, args, ptrs, syms, error))
    return FALSE;
  for (guint i = 0; i < warmup; i++)
    if (!weir_kernel_call(k, ptrs, syms, error))
      return FALSE;
  g_autofree double *times = g_new0(double, reps);
  for (guint i = 0; i < reps; i++) {
    double t0 = now_seconds();
    if (!weir_kernel_call(k, ptrs, syms, error))
      return FALSE;
    times[i] = now_seconds() - t0;
  }
  weir_bench_summarize(times, reps, out);
  return TRUE;
}
