/* hw.c — the hardware profile (weir-hw.h).
 *
 * Conventions of this file:
 *  - Detection reads /proc/cpuinfo and sysfs and asks the compiler's
 *    __builtin_cpu_supports; nothing it does can fail (unknown is 0).
 *  - Measurement loops are functions compiled for one ISA each with
 *    __attribute__((target(...))), so libweir itself is built for the
 *    baseline and only calls the loop the CPU supports.
 *  - Threads for the all-core measurements are GThreads started behind one
 *    barrier; the wall time runs from the barrier to the last join.
 *  - The cache file is written atomically (g_file_set_contents).
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <json-c/json.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define WEIR_HW_X86 1
#endif

#include "weir-hw.h"

#define PROFILE_FORMAT 1
/* Each measurement is repeated and the best kept. */
#define REPEATS 3
/* Target duration of one FMA run, microseconds. */
#define FMA_RUN_US 100000

static gint measure_count;

/* ----------------------------------------------------------------- names */

static const char *const isa_names[] = {"generic", "avx2+fma", "avx512f"};
G_STATIC_ASSERT(G_N_ELEMENTS(isa_names) == WEIR_HW_ISA_AVX512 + 1);

const char *weir_hw_isa_name(WeirHwIsa isa) {
  g_return_val_if_fail((guint)isa < G_N_ELEMENTS(isa_names), "generic");
  return isa_names[isa];
}

gboolean weir_hw_isa_from_name(const char *name, WeirHwIsa *out) {
  for (guint i = 0; name && i < G_N_ELEMENTS(isa_names); i++)
    if (strcmp(name, isa_names[i]) == 0) {
      *out = (WeirHwIsa)i;
      return TRUE;
    }
  return FALSE;
}

/* ------------------------------------------------------------- detection */

static WeirHwIsa cpu_isa(void) {
#ifdef WEIR_HW_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
    return WEIR_HW_ISA_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return WEIR_HW_ISA_AVX2;
#endif
  return WEIR_HW_ISA_GENERIC;
}

static guint isa_lanes(WeirHwIsa isa) {
  switch (isa) {
  case WEIR_HW_ISA_AVX512:
    return 16;
  case WEIR_HW_ISA_AVX2:
    return 8;
  case WEIR_HW_ISA_GENERIC:
    break;
  }
  return 4;
}

/* The value of the first "name : value" line of /proc/cpuinfo. */
static char *cpuinfo_field(const char *text, const char *name) {
  gsize len = strlen(name);
  for (const char *p = text; p && *p;) {
    const char *nl = strchr(p, '\n');
    gsize n = nl ? (gsize)(nl - p) : strlen(p);
    if (n > len && strncmp(p, name, len) == 0 &&
        (p[len] == ' ' || p[len] == '\t' || p[len] == ':')) {
      const char *colon = memchr(p, ':', n);
      if (colon) {
        char *v = g_strndup(colon + 1, n - (gsize)(colon + 1 - p));
        return g_strstrip(v);
      }
    }
    p = nl ? nl + 1 : NULL;
  }
  return NULL;
}

static char *read_trimmed(const char *path) {
  char *text = NULL;
  if (!g_file_get_contents(path, &text, NULL, NULL))
    return NULL;
  return g_strstrip(text);
}

/* "48K", "2048K", "32M", "1024" -> bytes; 0 when unreadable. */
static gint64 parse_cache_size(const char *s) {
  if (!s || !g_ascii_isdigit(*s))
    return 0;
  char *end = NULL;
  gint64 v = g_ascii_strtoll(s, &end, 10);
  if (*end == 'K' || *end == 'k')
    v *= 1024;
  else if (*end == 'M' || *end == 'm')
    v *= 1024 * 1024;
  else if (*end == 'G' || *end == 'g')
    v *= (gint64)1024 * 1024 * 1024;
  return v;
}

static void detect_caches(WeirHwProfile *p) {
  for (guint i = 0; i < 16; i++) {
    g_autofree char *dir =
        g_strdup_printf("/sys/devices/system/cpu/cpu0/cache/index%u", i);
    g_autofree char *lp = g_build_filename(dir, "level", NULL);
    g_autofree char *tp = g_build_filename(dir, "type", NULL);
    g_autofree char *sp = g_build_filename(dir, "size", NULL);
    g_autofree char *level = read_trimmed(lp);
    if (!level)
      break;
    g_autofree char *type = read_trimmed(tp);
    g_autofree char *size = read_trimmed(sp);
    gint64 bytes = parse_cache_size(size);
    gboolean data = type && strcmp(type, "Instruction") != 0;
    if (!data)
      continue;
    if (strcmp(level, "1") == 0)
      p->l1d_bytes = bytes;
    else if (strcmp(level, "2") == 0)
      p->l2_bytes = bytes;
    else if (strcmp(level, "3") == 0)
      p->l3_bytes = bytes;
  }
}

static guint physical_cores(guint logical) {
  g_autoptr(GHashTable) seen =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < 4096; i++) {
    g_autofree char *base =
        g_strdup_printf("/sys/devices/system/cpu/cpu%u/topology", i);
    if (!g_file_test(base, G_FILE_TEST_IS_DIR)) {
      if (i >= logical)
        break;
      continue;
    }
    g_autofree char *pp = g_build_filename(base, "physical_package_id", NULL);
    g_autofree char *cp = g_build_filename(base, "core_id", NULL);
    g_autofree char *pkg = read_trimmed(pp);
    g_autofree char *core = read_trimmed(cp);
    if (!pkg || !core)
      continue;
    g_hash_table_add(seen, g_strdup_printf("%s/%s", pkg, core));
  }
  guint n = g_hash_table_size(seen);
  return n ? n : logical;
}

WeirHwProfile *weir_hw_detect(void) {
  WeirHwProfile *p = g_new0(WeirHwProfile, 1);
  p->load_average = -1;
  p->isa = cpu_isa();
  WeirHwIsa want;
  if (weir_hw_isa_from_name(g_getenv("WEIR_ISA"), &want) && want < p->isa)
    p->isa = want;
  p->vector_floats = isa_lanes(p->isa);
#ifdef WEIR_HW_X86
  if (p->isa == WEIR_HW_ISA_AVX512) {
    p->int8_dot = __builtin_cpu_supports("avx512vnni") &&
                  __builtin_cpu_supports("avx512bw") &&
                  g_strcmp0(g_getenv("WEIR_HW_VNNI"), "0") != 0;
    p->bf16_dot = __builtin_cpu_supports("avx512bf16");
  }
#endif
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  p->logical_cores = online > 0 ? (guint)online : g_get_num_processors();
  p->physical_cores = physical_cores(p->logical_cores);
  detect_caches(p);
  /* $WEIR_HW_CACHES="L1D,L2,L3" (bytes) replaces the detected sizes: for
   * tests whose generated code must not depend on the machine */
  const char *caches = g_getenv("WEIR_HW_CACHES");
  if (caches && *caches) {
    g_auto(GStrv) v = g_strsplit(caches, ",", 3);
    gint64 *dst[] = {&p->l1d_bytes, &p->l2_bytes, &p->l3_bytes};
    for (guint i = 0; v[i] && i < 3; i++)
      *dst[i] = g_ascii_strtoll(v[i], NULL, 10);
  }
  g_autofree char *info = NULL;
  g_file_get_contents("/proc/cpuinfo", &info, NULL, NULL);
  g_autofree char *model = info ? cpuinfo_field(info, "model name") : NULL;
  g_autofree char *flags = info ? cpuinfo_field(info, "flags") : NULL;
  p->cpu_model = g_strdup(model ? model : "unknown");
  /* the key covers the CPU as the CPU reports itself, not $WEIR_ISA: the
   * measurements are of the machine */
  g_autofree char *keytext = g_strdup_printf(
      "%s\n%s\n%u\n", p->cpu_model, flags ? flags : "", p->logical_cores);
  p->key = g_compute_checksum_for_string(G_CHECKSUM_SHA256, keytext, -1);
  /* $WEIR_HW_CORES=N replaces the logical (and physical) core count that
   * code generation sees (Weir's GEMM sizes its per-thread packing
   * buffers by it), after the key: for tests whose generated code must
   * not depend on the machine */
  const char *cores = g_getenv("WEIR_HW_CORES");
  gint64 nc = cores && *cores ? g_ascii_strtoll(cores, NULL, 10) : 0;
  if (nc > 0 && nc <= 4096)
    p->logical_cores = p->physical_cores = (guint)nc;
  return p;
}

/* ----------------------------------------------------------- measurement */

typedef struct {
  WeirHwIsa isa;
  gint64 iters;
  /* triad */
  double *a, *b, *c;
  gsize lo, hi;
  double sink;
  double cpu_s; /* the FMA loop's CPU time on its thread; 0 if unknown */
} Work;

#ifdef WEIR_HW_X86
/* 16 independent FMA chains a = a * 0.5 + 1 (the values settle at 2: no
 * overflow, no denormals); returns their sum so nothing is dead. */
__attribute__((target("avx512f,fma"))) static double
fma_loop_avx512(gint64 iters) {
  const __m512 x = _mm512_set1_ps(0.5f), y = _mm512_set1_ps(1.0f);
  __m512 r[16];
  for (int k = 0; k < 16; k++)
    r[k] = _mm512_set1_ps((float)k);
  for (gint64 i = 0; i < iters; i++) {
#pragma GCC unroll 16
    for (int k = 0; k < 16; k++)
      r[k] = _mm512_fmadd_ps(r[k], x, y);
  }
  __m512 s = r[0];
  for (int k = 1; k < 16; k++)
    s = _mm512_add_ps(s, r[k]);
  return (double)_mm512_reduce_add_ps(s);
}

/* 12 chains: 16 ymm registers minus the two constants. */
__attribute__((target("avx2,fma"))) static double fma_loop_avx2(gint64 iters) {
  const __m256 x = _mm256_set1_ps(0.5f), y = _mm256_set1_ps(1.0f);
  __m256 r[12];
  for (int k = 0; k < 12; k++)
    r[k] = _mm256_set1_ps((float)k);
  for (gint64 i = 0; i < iters; i++) {
#pragma GCC unroll 12
    for (int k = 0; k < 12; k++)
      r[k] = _mm256_fmadd_ps(r[k], x, y);
  }
  __m256 s = r[0];
  for (int k = 1; k < 12; k++)
    s = _mm256_add_ps(s, r[k]);
  float v[8];
  _mm256_storeu_ps(v, s);
  return (double)(v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]);
}
#endif

typedef float v4f __attribute__((vector_size(16)));

/* Portable: 8 chains of 4-lane multiply-adds (whatever the baseline makes
 * of them: two instructions without FMA). */
static double fma_loop_generic(gint64 iters) {
  const v4f x = {0.5f, 0.5f, 0.5f, 0.5f}, y = {1, 1, 1, 1};
  v4f r[8];
  for (int k = 0; k < 8; k++)
    r[k] = (v4f){(float)k, (float)k, (float)k, (float)k};
  for (gint64 i = 0; i < iters; i++) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; k++)
      r[k] = r[k] * x + y;
  }
  v4f s = r[0];
  for (int k = 1; k < 8; k++)
    s += r[k];
  return (double)(s[0] + s[1] + s[2] + s[3]);
}

/* Floating-point operations of one iteration of the loop for isa. */
static double fma_flops_per_iter(WeirHwIsa isa) {
  switch (isa) {
  case WEIR_HW_ISA_AVX512:
    return 16.0 * 16 * 2;
  case WEIR_HW_ISA_AVX2:
    return 12.0 * 8 * 2;
  case WEIR_HW_ISA_GENERIC:
    break;
  }
  return 8.0 * 4 * 2;
}

static double fma_loop(WeirHwIsa isa, gint64 iters) {
#ifdef WEIR_HW_X86
  if (isa == WEIR_HW_ISA_AVX512)
    return fma_loop_avx512(iters);
  if (isa == WEIR_HW_ISA_AVX2)
    return fma_loop_avx2(iters);
#endif
  return fma_loop_generic(iters);
}

static double thread_cpu_seconds(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return -1;
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void fma_work(Work *w) {
  double c0 = thread_cpu_seconds();
  w->sink = fma_loop(w->isa, w->iters);
  double c1 = thread_cpu_seconds();
  w->cpu_s = c0 >= 0 && c1 > c0 ? c1 - c0 : 0;
}

/* b and c initialised and a written by the thread that uses them (first
 * touch puts the pages near it). */
static void triad_init(Work *w) {
  for (gsize i = w->lo; i < w->hi; i++) {
    w->a[i] = 0.0;
    w->b[i] = 1.0;
    w->c[i] = 2.0;
  }
}

static void triad_work(Work *w) {
  double *restrict a = w->a;
  const double *restrict b = w->b, *restrict c = w->c;
  for (gsize i = w->lo; i < w->hi; i++)
    a[i] = b[i] + 3.0 * c[i];
  w->sink = a[w->lo];
}

typedef struct {
  void (*fn)(Work *);
  Work *work;
  gint *ready;
  gint *go;
} Thread;

static gpointer thread_main(gpointer data) {
  Thread *t = data;
  g_atomic_int_inc(t->ready);
  while (!g_atomic_int_get(t->go))
    ;
  t->fn(t->work);
  return NULL;
}

/* Runs fn on work[0..n) in n threads started together; wall microseconds
 * from the start to the last join. */
static gint64 run_threads(guint n, void (*fn)(Work *), Work *work) {
  if (n <= 1) {
    gint64 t0 = g_get_monotonic_time();
    fn(&work[0]);
    return g_get_monotonic_time() - t0;
  }
  gint ready = 0, go = 0;
  g_autofree Thread *ts = g_new0(Thread, n);
  g_autofree GThread **th = g_new0(GThread *, n);
  for (guint i = 0; i < n; i++) {
    ts[i] = (Thread){fn, &work[i], &ready, &go};
    th[i] = g_thread_new("weir-hw", thread_main, &ts[i]);
  }
  while ((guint)g_atomic_int_get(&ready) < n)
    g_thread_yield();
  gint64 t0 = g_get_monotonic_time();
  g_atomic_int_set(&go, 1);
  for (guint i = 0; i < n; i++)
    g_thread_join(th[i]);
  return g_get_monotonic_time() - t0;
}

/* Best GFLOP/s of REPEATS runs of the FMA loop on n threads. */
static double measure_peak(WeirHwIsa isa, guint n) {
  /* calibrate: iterations for about FMA_RUN_US on one thread */
  gint64 iters = 100000;
  for (;;) {
    gint64 t0 = g_get_monotonic_time();
    volatile double s = fma_loop(isa, iters);
    (void)s;
    gint64 us = g_get_monotonic_time() - t0;
    if (us >= FMA_RUN_US / 4 || iters > ((gint64)1 << 40))
      break;
    iters *= 4;
  }
  iters *= 4;
  g_autofree Work *w = g_new0(Work, n);
  for (guint i = 0; i < n; i++)
    w[i] = (Work){.isa = isa, .iters = iters};
  double best = 0;
  for (int r = 0; r < REPEATS; r++) {
    gint64 us = run_threads(n, fma_work, w);
    /* each thread's rate over its own CPU time, summed: a thread that
     * other processes kept off its core does not lower the peak (measured
     * on a busy machine, the wall time gave a fraction of it, which the
     * cache then kept); the wall time only when a CPU clock is missing */
    double per_thread = fma_flops_per_iter(isa) * (double)iters, gf = 0;
    for (guint i = 0; i < n; i++)
      gf += w[i].cpu_s > 0 ? per_thread / (w[i].cpu_s * 1e9)
                           : per_thread / ((double)MAX(us, 1) * 1e3);
    best = MAX(best, gf);
  }
  return best;
}

/* Best GB/s of a triad a = b + s * c (24 bytes per element, the STREAM
 * convention) on n threads over three arrays of about three times the
 * last-level cache together (at least 64 MiB each, at most 256 MiB). */
static double measure_bandwidth(const WeirHwProfile *p, guint n) {
  gint64 llc = MAX(p->l3_bytes, p->l2_bytes * (gint64)p->physical_cores);
  gint64 bytes = CLAMP(llc, (gint64)64 << 20, (gint64)256 << 20);
  gsize len = (gsize)bytes / sizeof(double);
  g_autofree double *a = g_try_new(double, len);
  g_autofree double *b = g_try_new(double, len);
  g_autofree double *c = g_try_new(double, len);
  if (!a || !b || !c)
    return 0;
  g_autofree Work *w = g_new0(Work, n);
  for (guint i = 0; i < n; i++)
    w[i] = (Work){
        .a = a, .b = b, .c = c, .lo = len * i / n, .hi = len * (i + 1) / n};
  run_threads(n, triad_init, w);
  double best = 0;
  for (int r = 0; r < REPEATS; r++) {
    gint64 us = run_threads(n, triad_work, w);
    best = MAX(best, 24.0 * (double)len / ((double)MAX(us, 1) * 1e3));
  }
  return best;
}

/* The cache knee (weir-hw.h: cache_knee_bytes): a one-thread triad over
 * working sets (three arrays together) doubling from 256 KiB to twice the
 * last-level cache (at most 512 MiB), best of REPEATS runs of at least
 * 32 MiB moved each; the largest working set reaching half the best
 * bandwidth of all sizes.  0 when the arrays cannot be allocated. */
static gint64 measure_cache_knee(const WeirHwProfile *p) {
  gint64 llc = MAX(p->l3_bytes, p->l2_bytes);
  gint64 top = CLAMP(2 * llc, (gint64)8 << 20, (gint64)512 << 20);
  gsize len = (gsize)top / (3 * sizeof(double));
  g_autofree double *a = g_try_new(double, len);
  g_autofree double *b = g_try_new(double, len);
  g_autofree double *c = g_try_new(double, len);
  if (!a || !b || !c)
    return 0;
  Work w = {.a = a, .b = b, .c = c, .lo = 0, .hi = len};
  triad_init(&w);
  g_autoptr(GArray) sizes = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_autoptr(GArray) rates = g_array_new(FALSE, FALSE, sizeof(double));
  double best_all = 0;
  for (gint64 ws = (gint64)256 << 10; ws <= top; ws *= 2) {
    gsize n = (gsize)ws / (3 * sizeof(double));
    gint64 passes = MAX(((gint64)32 << 20) / ws, 1);
    Work one = {.a = a, .b = b, .c = c, .lo = 0, .hi = n};
    double best = 0;
    for (int r = 0; r < REPEATS; r++) {
      gint64 t0 = g_get_monotonic_time();
      for (gint64 k = 0; k < passes; k++)
        triad_work(&one);
      gint64 us = g_get_monotonic_time() - t0;
      best = MAX(best, 24.0 * (double)n * (double)passes /
                           ((double)MAX(us, 1) * 1e3));
    }
    g_array_append_val(sizes, ws);
    g_array_append_val(rates, best);
    best_all = MAX(best_all, best);
  }
  gint64 knee = 0;
  for (guint i = 0; i < sizes->len; i++)
    if (g_array_index(rates, double, i) >= best_all / 2)
      knee = g_array_index(sizes, gint64, i);
  return knee;
}

/* The 1-minute load average, or -1. */
static double load_average(void) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents("/proc/loadavg", &text, NULL, NULL))
    return -1;
  char *end = NULL;
  double v = g_ascii_strtod(text, &end);
  return end != text ? v : -1;
}

void weir_hw_measure(WeirHwProfile *p) {
  g_return_if_fail(p);
  g_atomic_int_inc(&measure_count);
  p->load_average = load_average();
  /* the machine's ISA, not $WEIR_ISA's: the peak is the hardware's */
  WeirHwIsa isa = cpu_isa();
  guint n = MAX(p->logical_cores, 1);
  p->peak_gflops_1t = measure_peak(isa, 1);
  p->peak_gflops_all = n > 1 ? measure_peak(isa, n) : p->peak_gflops_1t;
  p->bandwidth_gbs = measure_bandwidth(p, n);
  p->cache_knee_bytes = measure_cache_knee(p);
  p->measured = TRUE;
}

guint weir_hw_measure_count(void) {
  return (guint)g_atomic_int_get(&measure_count);
}

/* ------------------------------------------------------------------ JSON */

char *weir_hw_profile_to_json(const WeirHwProfile *p) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "format", json_object_new_int(PROFILE_FORMAT));
  json_object_object_add(o, "key", json_object_new_string(p->key));
  json_object_object_add(o, "cpu_model", json_object_new_string(p->cpu_model));
  json_object_object_add(o, "isa",
                         json_object_new_string(weir_hw_isa_name(p->isa)));
  json_object_object_add(o, "vector_floats",
                         json_object_new_int64(p->vector_floats));
  json_object_object_add(o, "logical_cores",
                         json_object_new_int64(p->logical_cores));
  json_object_object_add(o, "physical_cores",
                         json_object_new_int64(p->physical_cores));
  json_object_object_add(o, "l1d_bytes", json_object_new_int64(p->l1d_bytes));
  json_object_object_add(o, "l2_bytes", json_object_new_int64(p->l2_bytes));
  json_object_object_add(o, "l3_bytes", json_object_new_int64(p->l3_bytes));
  json_object_object_add(o, "measured", json_object_new_boolean(p->measured));
  json_object_object_add(o, "peak_gflops_1t",
                         json_object_new_double(p->peak_gflops_1t));
  json_object_object_add(o, "peak_gflops_all",
                         json_object_new_double(p->peak_gflops_all));
  json_object_object_add(o, "bandwidth_gbs",
                         json_object_new_double(p->bandwidth_gbs));
  json_object_object_add(o, "load_average",
                         json_object_new_double(p->load_average));
  json_object_object_add(o, "cache_knee_bytes",
                         json_object_new_int64(p->cache_knee_bytes));
  char *out = g_strdup_printf(
      "%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
                                                    JSON_C_TO_STRING_SPACED));
  json_object_put(o);
  return out;
}

static json_object *field(json_object *o, const char *name, json_type type,
                          const char *where, GError **error) {
  json_object *v = NULL;
  if (!json_object_object_get_ex(o, name, &v) ||
      (!json_object_is_type(v, type) &&
       !(type == json_type_double && json_object_is_type(v, json_type_int)))) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: field '%s' is missing or not a %s", where, name,
                json_type_to_name(type));
    return NULL;
  }
  return v;
}

WeirHwProfile *weir_hw_profile_from_json(const char *text, const char *where,
                                         GError **error) {
  where = where ? where : "JSON";
  enum json_tokener_error jerr = json_tokener_success;
  json_object *o = json_tokener_parse_verbose(text, &jerr);
  if (!o || !json_object_is_type(o, json_type_object)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: not a JSON object (%s)", where,
                json_tokener_error_desc(jerr));
    json_object_put(o);
    return NULL;
  }
  g_autoptr(WeirHwProfile) p = g_new0(WeirHwProfile, 1);
  json_object *v;
  gboolean ok = FALSE;
  do {
    if (!(v = field(o, "format", json_type_int, where, error)))
      break;
    if (json_object_get_int(v) != PROFILE_FORMAT) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_VERSION,
                  "%s: profile format %d, this Weir reads %d", where,
                  json_object_get_int(v), PROFILE_FORMAT);
      break;
    }
    if (!(v = field(o, "key", json_type_string, where, error)))
      break;
    p->key = g_strdup(json_object_get_string(v));
    if (!(v = field(o, "cpu_model", json_type_string, where, error)))
      break;
    p->cpu_model = g_strdup(json_object_get_string(v));
    if (!(v = field(o, "isa", json_type_string, where, error)))
      break;
    if (!weir_hw_isa_from_name(json_object_get_string(v), &p->isa)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE, "%s: unknown isa '%s'",
                  where, json_object_get_string(v));
      break;
    }
    static const char *const ints[] = {"vector_floats",  "logical_cores",
                                       "physical_cores", "l1d_bytes",
                                       "l2_bytes",       "l3_bytes"};
    gint64 iv[G_N_ELEMENTS(ints)];
    guint i;
    for (i = 0; i < G_N_ELEMENTS(ints); i++) {
      if (!(v = field(o, ints[i], json_type_int, where, error)))
        break;
      iv[i] = json_object_get_int64(v);
      if (iv[i] < 0 || iv[i] > ((gint64)1 << 48)) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                    "%s: field '%s' is out of range", where, ints[i]);
        break;
      }
    }
    if (i < G_N_ELEMENTS(ints))
      break;
    p->vector_floats = (guint)iv[0];
    p->logical_cores = (guint)iv[1];
    p->physical_cores = (guint)iv[2];
    p->l1d_bytes = iv[3];
    p->l2_bytes = iv[4];
    p->l3_bytes = iv[5];
    if (!(v = field(o, "measured", json_type_boolean, where, error)))
      break;
    p->measured = json_object_get_boolean(v);
    static const char *const dbls[] = {"peak_gflops_1t", "peak_gflops_all",
                                       "bandwidth_gbs"};
    double *dv[] = {&p->peak_gflops_1t, &p->peak_gflops_all, &p->bandwidth_gbs};
    for (i = 0; i < G_N_ELEMENTS(dbls); i++) {
      if (!(v = field(o, dbls[i], json_type_double, where, error)))
        break;
      *dv[i] = json_object_get_double(v);
    }
    ok = i == G_N_ELEMENTS(dbls);
    /* optional (profiles written before it existed lack it) */
    p->load_average = -1;
    if (ok && json_object_object_get_ex(o, "load_average", &v) &&
        (json_object_is_type(v, json_type_double) ||
         json_object_is_type(v, json_type_int)))
      p->load_average = json_object_get_double(v);
    if (ok && json_object_object_get_ex(o, "cache_knee_bytes", &v) &&
        json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0)
      p->cache_knee_bytes = json_object_get_int64(v);
  } while (0);
  json_object_put(o);
  return ok ? g_steal_pointer(&p) : NULL;
}

/* ----------------------------------------------------------------- cache */

char *weir_hw_profile_path(void) {
  const char *env = g_getenv("WEIR_HW_PROFILE");
  if (env && *env)
    return g_strdup(env);
  return g_build_filename(g_get_user_cache_dir(), "weir", "hw.json", NULL);
}

WeirHwProfile *weir_hw_profile_load(const char *path, gboolean remeasure,
                                    GError **error) {
  g_autofree char *file = path ? g_strdup(path) : weir_hw_profile_path();
  g_autoptr(WeirHwProfile) p = weir_hw_detect();
  g_autofree char *text = NULL;
  if (!remeasure && g_file_get_contents(file, &text, NULL, NULL)) {
    g_autoptr(WeirHwProfile) cached =
        weir_hw_profile_from_json(text, file, NULL);
    if (cached && cached->measured && g_strcmp0(cached->key, p->key) == 0) {
      p->measured = TRUE;
      p->peak_gflops_1t = cached->peak_gflops_1t;
      p->peak_gflops_all = cached->peak_gflops_all;
      p->bandwidth_gbs = cached->bandwidth_gbs;
      p->load_average = cached->load_average;
      p->cache_knee_bytes = cached->cache_knee_bytes;
      return g_steal_pointer(&p);
    }
  }
  weir_hw_measure(p);
  /* the file holds the machine's profile, not one lowered by $WEIR_ISA */
  g_autoptr(WeirHwProfile) store = weir_hw_profile_copy(p);
  store->isa = cpu_isa();
  store->vector_floats = isa_lanes(store->isa);
  g_autofree char *json = weir_hw_profile_to_json(store);
  g_autofree char *dir = g_path_get_dirname(file);
  if (g_mkdir_with_parents(dir, 0700) != 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "hardware profile '%s': cannot create its directory: %s", file,
                g_strerror(errno));
    return NULL;
  }
  g_autoptr(GError) local = NULL;
  if (!g_file_set_contents(file, json, -1, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "hardware profile '%s': %s",
                file, local->message);
    return NULL;
  }
  return g_steal_pointer(&p);
}

WeirHwProfile *weir_hw_profile_cached(void) {
  g_autofree char *file = weir_hw_profile_path();
  WeirHwProfile *p = weir_hw_detect();
  g_autofree char *text = NULL;
  if (!g_file_get_contents(file, &text, NULL, NULL))
    return p;
  g_autoptr(WeirHwProfile) cached = weir_hw_profile_from_json(text, file, NULL);
  if (cached && cached->measured && g_strcmp0(cached->key, p->key) == 0) {
    p->measured = TRUE;
    p->peak_gflops_1t = cached->peak_gflops_1t;
    p->peak_gflops_all = cached->peak_gflops_all;
    p->bandwidth_gbs = cached->bandwidth_gbs;
    p->load_average = cached->load_average;
    p->cache_knee_bytes = cached->cache_knee_bytes;
  }
  return p;
}

gint64 weir_hw_model_cache_bytes(const WeirHwProfile *p) {
  g_return_val_if_fail(p, 0);
  gint64 llc = p->l3_bytes > 0 ? p->l3_bytes : p->l2_bytes;
  if (llc <= 0)
    return 0;
  if (p->cache_knee_bytes > 0)
    return MIN(p->cache_knee_bytes, llc);
  if (p->l3_bytes <= 0)
    return llc;
  gint64 cores = MAX(p->physical_cores, 1);
  return MIN(llc, (p->l2_bytes + ((gint64)2 << 20)) * cores);
}

WeirHwProfile *weir_hw_profile_get(gboolean remeasure, GError **error) {
  return weir_hw_profile_load(NULL, remeasure, error);
}

WeirHwProfile *weir_hw_profile_copy(const WeirHwProfile *p) {
  WeirHwProfile *q = g_memdup2(p, sizeof *p);
  q->key = g_strdup(p->key);
  q->cpu_model = g_strdup(p->cpu_model);
  return q;
}

void weir_hw_profile_free(WeirHwProfile *p) {
  if (!p)
    return;
  g_free(p->key);
  g_free(p->cpu_model);
  g_free(p);
}
