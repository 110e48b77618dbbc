/* omp-region-cpu.c — where the threads of a kernel spend their CPU time,
 * per OpenMP parallel region (docs/performance.md, "Where resnet18's
 * training step goes at 2 threads (train16p)").  An LD_PRELOAD library:
 * it wraps GOMP_parallel (the entry GCC emits for every `omp parallel`
 * region) and records, per outlined function, the calls, the wall time of
 * the region and each thread's CPU time inside it (CLOCK_THREAD_CPUTIME_ID,
 * which does not count the time a thread waits for a core, so the
 * figures hold on a loaded machine where wall times do not).  Regions
 * nested in another are run but not counted (their time is the outer
 * region's).  At exit it writes one line per function to $OMP_REGION_OUT
 * (stderr without it):
 *
 *   OBJECT OFFSET CALLS WALL_S CPU_SUM_S CPU_MAX_S THREADS BARRIERS START_S
 *   JOIN_S PLACE
 *
 * OBJECT and OFFSET locate the outlined function (`nm` names it, e.g.
 * weir_bngrad_f32._omp_fn.0); CPU_SUM_S is the threads' CPU time added,
 * CPU_MAX_S the busiest thread's, both summed over the calls; their
 * difference from the 1-thread CPU time is work a second thread adds
 * (duplicated packing, spinning at barriers inside the region) and
 * imbalance.  tests/bench/omp-region-cpu.py prints the table.
 *
 *   cc -O2 -shared -fPIC -fopenmp tests/bench/omp-region-cpu.c \
 *      -o /tmp/omp-region-cpu.so -ldl
 *   OMP_WAIT_POLICY=PASSIVE OMP_REGION_OUT=/tmp/r2.txt \
 *      LD_PRELOAD=/tmp/omp-region-cpu.so \
 *      build/tests/bench-train -O 2 --threads 2 --reps 5 --warmup 1 M.onnx
 *
 * Set OMP_WAIT_POLICY (or GOMP_SPINCOUNT) yourself; without either, the
 * library stops the process at its start with a message.  It brings
 * libgomp in when the process starts, before Weir's runtime chooses how
 * idle threads wait (core/runtime.c sets the variables before the first
 * kernel loads libgomp), so under it that choice comes too late and the
 * threads spin libgomp's default, about 5 ms per wait on the Intel
 * machine, which the CPU times count (r51).
 *
 * OMP_REGION_SKIP=N leaves each outlined function's first N calls
 * uncounted (they run as usual).  A program's own maps are one function
 * each, called once per step, so N = 1 measures them in the steady state
 * (their first call also writes the workspace's pages for the first
 * time); a kernel helper's function serves all of its call sites, so N = 1
 * drops only its first call, and its rows still hold the first step
 * (docs/performance.md, "The element-wise maps of resnet18's training
 * step (trmap17)").
 *
 * BARRIERS counts the GOMP_barrier calls inside the counted regions (the
 * end of an `omp for` without nowait, an `omp barrier`), as the region's
 * thread 0 makes them (tst18).
 *
 * START_S is the wall time from the region's start (the call of
 * GOMP_parallel) to the moment its last thread starts the region's
 * function, JOIN_S from the moment its last thread leaves that function
 * to the region's end, both summed over the calls: what starting and
 * ending the region cost, a sleeping thread's wake-up included (mob20).
 *
 * OMP_REGION_PERIOD=P with OMP_REGION_FROM=F (mob20) records the regions
 * by their place in a run instead of by function alone: the outer regions
 * are numbered from 0 in the order they start, the first F are not
 * counted, and region i >= F goes to the record of its function and place
 * (i - F) mod P, written as an eleventh field.  With P the regions of one
 * inference (tests/bench/gomp-count.c) and F those of the load and the
 * warm-up runs, each record is one call site (one layer).  OMP_REGION_FROM
 * alone leaves the first F regions uncounted and keeps the records by
 * function.
 *
 * Not a test: it asserts nothing.  Only GOMP_parallel and GOMP_barrier
 * are wrapped (the generated kernels import no other region entry or
 * synchronization; `nm -D` on a kernel shows what it imports).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef void (*region_fn)(void *);
typedef void (*gomp_parallel_fn)(region_fn, void *, unsigned, unsigned);

enum { MAX_FUNCS = 8192, MAX_THREADS = 64 };

typedef struct {
  region_fn fn;
  char *object; /* where fn lies, found when first seen (the kernel may
                   be unloaded before exit) */
  unsigned long offset;
  long calls, seen; /* counted calls; all calls */
  double wall, cpu_sum, cpu_max;
  int threads;
  long barriers;      /* GOMP_barrier calls of the region's thread 0 */
  double start, join; /* region start -> last thread in; last out -> end */
  long place;         /* OMP_REGION_PERIOD: the place in the run; else -1 */
} Entry;

static Entry table[MAX_FUNCS];
static int entries;
static long skip = -1;    /* OMP_REGION_SKIP, read at the first region */
static long period, from; /* OMP_REGION_PERIOD, OMP_REGION_FROM */
static long outer;        /* outer regions started so far */
static int in_region;     /* set by the thread that started the outer region */
static long barriers;     /* counted by that thread inside the outer region */

typedef struct {
  region_fn fn;
  void *data;
  double cpu[MAX_THREADS];
  double in[MAX_THREADS], out[MAX_THREADS]; /* CLOCK_MONOTONIC */
} Call;

/* The trap above as an error: libgomp has read its environment before this
 * constructor runs, so the policy can only be checked here, not set. */
__attribute__((constructor)) static void require_wait_policy(void) {
  if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT")) {
    fprintf(stderr,
            "omp-region-cpu: set OMP_WAIT_POLICY or GOMP_SPINCOUNT: under "
            "this library libgomp is loaded before Weir chooses how idle "
            "threads wait, so they would spin libgomp's default and the CPU "
            "times would count it\n");
    _exit(2);
  }
}

static double seconds(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void trampoline(void *p) {
  Call *c = p;
  double w0 = seconds(CLOCK_MONOTONIC);
  double t0 = seconds(CLOCK_THREAD_CPUTIME_ID);
  c->fn(c->data);
  int t = omp_get_thread_num();
  if (t < MAX_THREADS) {
    c->cpu[t] = seconds(CLOCK_THREAD_CPUTIME_ID) - t0;
    c->in[t] = w0;
    c->out[t] = seconds(CLOCK_MONOTONIC);
  }
}

static Entry *entry_for(region_fn fn, long place) {
  for (int i = 0; i < entries; i++)
    if (table[i].fn == fn && table[i].place == place)
      return &table[i];
  if (entries == MAX_FUNCS)
    return NULL;
  Entry *e = &table[entries++];
  Dl_info info;
  e->fn = fn;
  e->place = place;
  if (dladdr((void *)(uintptr_t)fn, &info) && info.dli_fname) {
    e->object = strdup(info.dli_fname);
    e->offset = (unsigned long)((uintptr_t)fn - (uintptr_t)info.dli_fbase);
  } else {
    e->object = strdup("?");
    e->offset = (unsigned long)(uintptr_t)fn;
  }
  return e;
}

void GOMP_parallel(region_fn fn, void *data, unsigned nthreads,
                   unsigned flags) {
  static gomp_parallel_fn real;
  if (!real)
    real = (gomp_parallel_fn)(uintptr_t)dlsym(RTLD_NEXT, "GOMP_parallel");
  if (in_region || omp_in_parallel()) {
    real(fn, data, nthreads, flags);
    return;
  }
  Call c = {.fn = fn, .data = data};
  in_region = 1;
  barriers = 0;
  double w0 = seconds(CLOCK_MONOTONIC);
  real(trampoline, &c, nthreads, flags);
  double w1 = seconds(CLOCK_MONOTONIC), wall = w1 - w0;
  in_region = 0;
  if (skip < 0) {
    const char *env = getenv("OMP_REGION_SKIP");
    skip = env ? atol(env) : 0;
    skip = skip < 0 ? 0 : skip;
    env = getenv("OMP_REGION_PERIOD");
    period = env ? atol(env) : 0;
    env = getenv("OMP_REGION_FROM");
    from = env ? atol(env) : 0;
  }
  long i = outer++;
  if (i < from)
    return;
  Entry *e = entry_for(fn, period > 0 ? (i - from) % period : -1);
  if (!e)
    return;
  if (e->seen++ < skip)
    return;
  double sum = 0, max = 0, in = w0, out = w0;
  int used = 0;
  for (int t = 0; t < MAX_THREADS; t++) {
    if (c.cpu[t] <= 0)
      continue;
    sum += c.cpu[t];
    max = c.cpu[t] > max ? c.cpu[t] : max;
    in = c.in[t] > in ? c.in[t] : in;
    out = c.out[t] > out ? c.out[t] : out;
    used = t + 1;
  }
  e->start += in - w0;
  e->join += w1 - out;
  e->calls++;
  e->wall += wall;
  e->cpu_sum += sum;
  e->cpu_max += max;
  e->threads = used > e->threads ? used : e->threads;
  e->barriers += barriers;
}

/* The barriers inside a region (an `omp for` without nowait ends in one,
 * as does `omp barrier`): counted on the thread that started the outer
 * region (every thread of the team calls it as often). */
void GOMP_barrier(void) {
  static void (*real)(void);
  if (!real)
    real = (void (*)(void))(uintptr_t)dlsym(RTLD_NEXT, "GOMP_barrier");
  if (omp_get_thread_num() == 0 && omp_get_level() == 1 && in_region)
    barriers++;
  real();
}

__attribute__((destructor)) static void write_table(void) {
  const char *path = getenv("OMP_REGION_OUT");
  FILE *f = path ? fopen(path, "w") : stderr;
  if (!f)
    return;
  for (int i = 0; i < entries; i++)
    fprintf(f, "%s 0x%lx %ld %.6f %.6f %.6f %d %ld %.6f %.6f %ld\n",
            table[i].object, table[i].offset, table[i].calls, table[i].wall,
            table[i].cpu_sum, table[i].cpu_max, table[i].threads,
            table[i].barriers, table[i].start, table[i].join, table[i].place);
  if (f != stderr)
    fclose(f);
}
