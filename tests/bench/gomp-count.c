/* gomp-count.c — how many OpenMP parallel regions and barriers a program
 * runs (docs/performance.md, "Batch-1 Winograd layers on their own rows
 * at two threads (s18)").  An LD_PRELOAD library: it wraps GOMP_parallel
 * (the entry GCC emits for every `omp parallel`, also for one whose `if`
 * is false or that is nested in another: those run with one thread) and
 * GOMP_barrier (an explicit `omp barrier` and the implicit one ending an
 * `omp for` with a static schedule; one call per thread), and at exit
 * prints the counts to stderr:
 *
 *   cc -O2 -shared -fPIC tests/bench/gomp-count.c -o /tmp/gomp-count.so -ldl
 *   LD_PRELOAD=/tmp/gomp-count.so build/weir bench M.onnx --threads 2 \
 *      --reps 1 --warmup 0
 *   LD_PRELOAD=/tmp/gomp-count.so build/weir bench M.onnx --threads 2 \
 *      --reps 11 --warmup 0
 *
 * The difference of the two runs over 10 is the count per inference (the
 * first run also counts the load's pre-packing).  A generated kernel loads
 * libgomp with dlopen, outside the global scope RTLD_NEXT searches, so the
 * real entries are looked up in libgomp.so.1 by name.  Not a test: it
 * asserts nothing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static atomic_long regions, one_thread, nested, barriers;

static void *real(const char *name) {
  void *lib = dlopen("libgomp.so.1", RTLD_NOW);
  void *f = lib ? dlsym(lib, name) : NULL;
  if (!f) {
    fprintf(stderr, "gomp-count: no %s in libgomp.so.1\n", name);
    abort();
  }
  return f;
}

void GOMP_parallel(void (*fn)(void *), void *data, unsigned threads,
                   unsigned flags);
void GOMP_barrier(void);

void GOMP_parallel(void (*fn)(void *), void *data, unsigned threads,
                   unsigned flags) {
  static void (*next)(void (*)(void *), void *, unsigned, unsigned);
  static int (*in_parallel)(void);
  if (!next) {
    next = (void (*)(void (*)(void *), void *, unsigned, unsigned))real(
        "GOMP_parallel");
    in_parallel = (int (*)(void))real("omp_in_parallel");
  }
  atomic_fetch_add(&regions, 1);
  if (threads == 1)
    atomic_fetch_add(&one_thread, 1);
  if (in_parallel())
    atomic_fetch_add(&nested, 1);
  next(fn, data, threads, flags);
}

void GOMP_barrier(void) {
  static void (*next)(void);
  if (!next)
    next = (void (*)(void))real("GOMP_barrier");
  atomic_fetch_add(&barriers, 1);
  next();
}

__attribute__((destructor)) static void report(void) {
  fprintf(stderr,
          "gomp-count: %ld parallel regions (%ld with one thread, %ld nested "
          "in another), %ld GOMP_barrier calls (one per thread)\n",
          (long)regions, (long)one_thread, (long)nested, (long)barriers);
}
