/* bench-gemm.c — sgemm through Weir's own kernel (implementation "weir")
 * and through OpenBLAS ("blas"), in the same run, at 1 and 2 threads:
 * square sizes and the GEMM shapes of CNN layers.  Prints one table row per
 * shape, implementation and thread count: median time, GFLOP/s and the
 * percentage of the hardware profile's measured FMA peak at that thread
 * count (docs/hardware.md), and the same for the best repetition (on a
 * loaded machine the best is the closer estimate of the idle speed).  Not a
 * test: it asserts nothing.
 *
 *   build/tests/bench/bench-gemm [--reps N] [--threads LIST] [--quick]
 *                                [--remeasure]
 *
 * Each shape is a program with one Gemm node Y[M x N] = A[M x K] B[K x N]
 * (beta 0), compiled with the default flags through the compile cache; the
 * two implementations of a shape run alternately, repetition by repetition,
 * so both see the same machine load.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir.h"

/* OpenBLAS (the same library the "blas" kernels load): a kernel without
 * OpenMP loops has no thread count of its own (weir_kernel_set_threads
 * refuses it), so its BLAS calls get theirs here. */
void openblas_set_num_threads(int n);

typedef struct {
  const char *what;
  gint64 m, n, k;
} Shape;

static const Shape shapes[] = {
    {"square", 256, 256, 256},
    {"square", 512, 512, 512},
    {"square", 1024, 1024, 1024},
    {"square", 2048, 2048, 2048},
    {"ResNet conv2_x 3x3", 64, 3136, 576},
    {"ResNet conv3_x 3x3", 128, 784, 1152},
    {"ResNet conv4_x 3x3", 256, 196, 2304},
    {"ResNet conv5_x 3x3", 512, 49, 4608},
    {"ResNet-50 1x1 expand", 256, 3136, 64},
    {"MobileNetV2 1x1", 96, 12544, 16},
    {"BERT FFN (128 tokens)", 128, 3072, 768},
    {"FC, batch 1", 1, 1000, 512},
};

static gint opt_reps = 0;
static char *opt_threads = NULL;
static gboolean opt_quick = FALSE, opt_remeasure = FALSE;

static WeirGraph *gemm_program(const Shape *s, const char *impl) {
  g_autoptr(GError) err = NULL;
  g_autofree char *name = g_strdup_printf(
      "gemm_%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, s->m,
      s->n, s->k);
  WeirGraph *g = weir_graph_new(name);
  WeirState *st = weir_graph_add_state(g, "main");
  g_autofree char *sa =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT, s->m, s->k);
  g_autofree char *sb =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT, s->k, s->n);
  g_autofree char *sy =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT, s->m, s->n);
  const char *names[] = {"A", "B", "Y"};
  const char *sh[] = {sa, sb, sy};
  for (guint i = 0; i < 3; i++)
    if (!weir_graph_add_array(g, names[i], WEIR_DTYPE_F32, sh[i], FALSE, &err))
      g_error("%s", err->message);
  static const char *const ins[] = {"in0", "in1", NULL};
  static const char *const outs[] = {"out0", NULL};
  WeirNode *lib = weir_state_add_library(g, st, "gemm", "Gemm", ins, outs);
  for (guint i = 0; i < 3; i++) {
    WeirNode *a = weir_state_add_access(g, st, names[i]);
    g_autoptr(WeirSubset) full =
        weir_container_full_subset(weir_graph_container(g, names[i]));
    g_autofree char *sub = weir_subset_to_string(full);
    gboolean ok =
        (i < 2 ? weir_state_add_memlet(g, st, a->id, NULL, lib->id, ins[i],
                                       names[i], sub, &err)
               : weir_state_add_memlet(g, st, lib->id, "out0", a->id, NULL,
                                       names[i], sub, &err)) != NULL;
    if (!ok)
      g_error("%s", err->message);
  }
  weir_node_set_attr_string(lib, "impl", impl);
  return g;
}

static GHashTable *random_args(const Shape *s) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  gint64 sa[2] = {s->m, s->k}, sb[2] = {s->k, s->n}, sy[2] = {s->m, s->n};
  WeirTensor *a = weir_tensor_new(WEIR_DTYPE_F32, 2, sa);
  WeirTensor *b = weir_tensor_new(WEIR_DTYPE_F32, 2, sb);
  weir_tensor_fill_random(a, 1);
  weir_tensor_fill_random(b, 2);
  g_hash_table_insert(args, g_strdup("A"), a);
  g_hash_table_insert(args, g_strdup("B"), b);
  g_hash_table_insert(args, g_strdup("Y"),
                      weir_tensor_new(WEIR_DTYPE_F32, 2, sy));
  return args;
}

static int compare_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static char *uptime_text(void) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents("/proc/loadavg", &text, NULL, NULL))
    return g_strdup("unknown");
  g_auto(GStrv) w = g_strsplit(text, " ", 4);
  return g_strdup_printf("%s %s %s", w[0], w[1] ? w[1] : "",
                         w[1] && w[2] ? w[2] : "");
}

int main(int argc, char **argv) {
  const GOptionEntry entries[] = {
      {"reps", 0, 0, G_OPTION_ARG_INT, &opt_reps,
       "Timed repetitions (default: about 0.3 s of work, 3 to 50)", "N"},
      {"threads", 0, 0, G_OPTION_ARG_STRING, &opt_threads,
       "Thread counts (default 1,2)", "LIST"},
      {"quick", 0, 0, G_OPTION_ARG_NONE, &opt_quick, "Sizes up to 1024 only",
       NULL},
      {"remeasure", 0, 0, G_OPTION_ARG_NONE, &opt_remeasure,
       "Measure the hardware profile again first", NULL},
      {NULL}};
  g_autoptr(GOptionContext) ctx = g_option_context_new("- sgemm benchmark");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) err = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
    fprintf(stderr, "bench-gemm: %s\n", err->message);
    return 2;
  }
  weir_init();
  g_autoptr(WeirHwProfile) hw = weir_hw_profile_get(opt_remeasure, &err);
  if (!hw) {
    fprintf(stderr, "bench-gemm: %s\n", err->message);
    return 1;
  }
  g_auto(GStrv) tl = g_strsplit(opt_threads ? opt_threads : "1,2", ",", -1);
  g_autofree char *load0 = uptime_text();
  const char *coretype = g_getenv("OPENBLAS_CORETYPE");
  printf("# sgemm, Weir's kernel (impl weir) against OpenBLAS (impl blas), "
         "same run\n");
  printf("# cpu: %s; isa %s; peak %.1f GFLOP/s (1 thread), %.1f GFLOP/s "
         "(%u threads), from %s\n",
         hw->cpu_model, weir_hw_isa_name(hw->isa), hw->peak_gflops_1t,
         hw->peak_gflops_all, hw->logical_cores,
         opt_remeasure ? "a measurement now" : "the cached hardware profile");
  printf("# OPENBLAS_CORETYPE=%s; load average at start %s\n",
         coretype ? coretype : "(unset)", load0);
  printf("%-22s %5s %5s %5s %3s %6s %10s %8s %6s %9s %6s\n", "shape", "M", "N",
         "K", "thr", "impl", "median ms", "GFLOP/s", "%peak", "best GF/s",
         "%peak");
  for (guint si = 0; si < G_N_ELEMENTS(shapes); si++) {
    const Shape *s = &shapes[si];
    if (opt_quick && (s->m > 1024 || s->n > 1024 * 4 || s->k > 1024 * 2) &&
        g_strcmp0(s->what, "square") == 0)
      continue;
    static const char *const impls[] = {"weir", "blas"};
    WeirKernel *k[2] = {NULL, NULL};
    for (guint i = 0; i < 2; i++) {
      g_autoptr(WeirGraph) g = gemm_program(s, impls[i]);
      WeirCompileOptions opts = {0};
      k[i] = weir_kernel_compile(g, &opts, NULL, &err);
      if (!k[i]) {
        fprintf(stderr, "bench-gemm: %s\n", err->message);
        return 1;
      }
    }
    double flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
    guint reps = opt_reps > 0 ? (guint)opt_reps
                              : (guint)CLAMP(0.3 * 50e9 / flops, 3, 50);
    g_autoptr(GHashTable) args = random_args(s);
    for (guint ti = 0; tl[ti]; ti++) {
      int threads = atoi(tl[ti]);
      if (threads < 1)
        continue;
      g_autofree double *t0 = g_new0(double, reps);
      g_autofree double *t1 = g_new0(double, reps);
      double *times[2] = {t0, t1};
      openblas_set_num_threads(threads);
      for (guint i = 0; i < 2; i++) {
        g_clear_error(&err);
        if (!weir_kernel_set_threads(k[i], threads, &err) && i == 0) {
          fprintf(stderr, "bench-gemm: %s\n", err->message);
          return 1;
        }
      }
      g_clear_error(&err);
      if (si == 0 && ti == 0) {
        g_autofree char *info = weir_kernel_blas_info(k[1]);
        printf("# %s\n", info ? info : "OpenBLAS: unknown build");
      }
      /* one warm-up each, then alternate */
      for (guint r = 0; r <= reps; r++)
        for (guint i = 0; i < 2; i++) {
          WeirBenchOptions bo = {.warmup = 0, .repetitions = 1};
          WeirBenchResult res = {0};
          if (!weir_kernel_bench(k[i], NULL, args, &bo, &res, &err)) {
            fprintf(stderr, "bench-gemm: %s\n", err->message);
            return 1;
          }
          if (r > 0)
            times[i][r - 1] = res.median;
          weir_bench_result_clear(&res);
        }
      double peak = threads == 1 ? hw->peak_gflops_1t : hw->peak_gflops_all;
      for (guint i = 0; i < 2; i++) {
        qsort(times[i], reps, sizeof(double), compare_double);
        double med = times[i][reps / 2];
        double gf = flops / med * 1e-9, best = flops / times[i][0] * 1e-9;
        printf("%-22s %5" G_GINT64_FORMAT " %5" G_GINT64_FORMAT
               " %5" G_GINT64_FORMAT " %3d %6s %10.3f %8.1f %5.0f%% %9.1f "
               "%5.0f%%\n",
               s->what, s->m, s->n, s->k, threads, impls[i], med * 1e3, gf,
               peak > 0 ? 100 * gf / peak : 0.0, best,
               peak > 0 ? 100 * best / peak : 0.0);
      }
      fflush(stdout);
    }
    weir_kernel_free(k[0]);
    weir_kernel_free(k[1]);
  }
  g_autofree char *load1 = uptime_text();
  printf("# load average at end %s\n", load1);
  return 0;
}
