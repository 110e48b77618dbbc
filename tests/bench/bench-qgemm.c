/* bench-qgemm.c — Weir's int8 GEMM (QLinearMatMul u8 x s8 -> u8 and
 * MatMulInteger u8 x s8 -> s32, implementation "weir",
 * core/kernels/gemm-int8.c) and its bf16 GEMM (MatMul bf16, implementation
 * "weir-bf16", core/kernels/gemm-bf16.c) against Weir's f32 GEMM (MatMul
 * f32, implementation "weir") on the same shapes, in the same run, at 1
 * and 2 threads.  Prints per shape, kernel and thread count the median time,
 * GOP/s (2 M N K operations) and the percentage of the peak: for f32 the
 * hardware profile's measured FMA peak (docs/hardware.md); for int8 four
 * times it on the VNNI path (vpdpbusd does 64 multiply-adds where vfmadd
 * does 16, at the same rate on this machine's cores), the f32 peak on the
 * AVX2 path (vpmaddwd on ymm: 16 multiply-adds); for bf16 the f32 peak
 * (vdpbf16ps does 32 multiply-adds where vfmadd231ps does 16, but issues
 * at half the rate here); and the best time.  The
 * kernels of one shape run alternately, repetition by repetition, so they
 * see the same machine load.  Not a test: it asserts nothing.
 *
 *   build/tests/bench/bench-qgemm [--reps N] [--threads LIST] [--quick]
 *
 * $WEIR_ISA and $WEIR_HW_VNNI=0 select the int8 kernel's other paths.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weir-kernels.h"
#include "weir.h"

typedef struct {
  const char *what;
  gint64 m, n, k;
} Shape;

static const Shape shapes[] = {
    {"square", 256, 256, 256},
    {"square", 512, 512, 512},
    {"square", 1024, 1024, 1024},
    {"ResNet conv3_x 3x3", 128, 784, 1152},
    {"ResNet conv5_x 3x3", 512, 49, 4608},
    {"BERT FFN (128 tokens)", 128, 3072, 768},
};

static gint opt_reps = 0;
static char *opt_threads = NULL;
static gboolean opt_quick = FALSE;

enum { K_F32, K_QLINEAR, K_INTEGER, K_BF16, N_KERNELS };
static const char *const kernel_names[] = {"f32", "qlinear", "integer", "bf16"};

static void add(WeirGraph *g, const char *name, WeirDType t, gint64 a,
                gint64 b) {
  g_autoptr(GError) err = NULL;
  g_autofree char *sh =
      b ? g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT, a, b)
        : g_strdup("1");
  if (!weir_graph_add_array(g, name, t, sh, FALSE, &err))
    g_error("%s", err->message);
}

static void connect(WeirGraph *g, WeirState *st, WeirNode *lib,
                    const char *name, const char *conn, gboolean in) {
  g_autoptr(GError) err = NULL;
  WeirNode *a = weir_state_add_access(g, st, name);
  g_autoptr(WeirSubset) full =
      weir_container_full_subset(weir_graph_container(g, name));
  g_autofree char *sub = weir_subset_to_string(full);
  gboolean ok = (in ? weir_state_add_memlet(g, st, a->id, NULL, lib->id, conn,
                                            name, sub, &err)
                    : weir_state_add_memlet(g, st, lib->id, conn, a->id, NULL,
                                            name, sub, &err)) != NULL;
  if (!ok)
    g_error("%s", err->message);
}

static WeirGraph *program(const Shape *s, int kind) {
  g_autofree char *name = g_strdup_printf(
      "%s_%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT,
      kernel_names[kind], s->m, s->n, s->k);
  WeirGraph *g = weir_graph_new(name);
  WeirState *st = weir_graph_add_state(g, "main");
  static const char *const ins2[] = {"in0", "in1", NULL};
  static const char *const ins8[] = {"in0", "in1", "in2", "in3", "in4",
                                     "in5", "in6", "in7", NULL};
  static const char *const outs[] = {"out0", NULL};
  WeirNode *lib;
  if (kind == K_F32 || kind == K_BF16) {
    WeirDType t = kind == K_F32 ? WEIR_DTYPE_F32 : WEIR_DTYPE_BF16;
    add(g, "A", t, s->m, s->k);
    add(g, "B", t, s->k, s->n);
    add(g, "Y", t, s->m, s->n);
    lib = weir_state_add_library(g, st, "mm", "MatMul", ins2, outs);
    connect(g, st, lib, "A", "in0", TRUE);
    connect(g, st, lib, "B", "in1", TRUE);
  } else if (kind == K_INTEGER) {
    add(g, "A", WEIR_DTYPE_U8, s->m, s->k);
    add(g, "B", WEIR_DTYPE_I8, s->k, s->n);
    add(g, "Y", WEIR_DTYPE_I32, s->m, s->n);
    add(g, "AZ", WEIR_DTYPE_U8, 1, 0);
    lib = weir_state_add_library(
        g, st, "mm", "MatMulInteger",
        (const char *const[]){"in0", "in1", "in2", NULL}, outs);
    connect(g, st, lib, "A", "in0", TRUE);
    connect(g, st, lib, "B", "in1", TRUE);
    connect(g, st, lib, "AZ", "in2", TRUE);
  } else {
    add(g, "A", WEIR_DTYPE_U8, s->m, s->k);
    add(g, "B", WEIR_DTYPE_I8, s->k, s->n);
    add(g, "Y", WEIR_DTYPE_U8, s->m, s->n);
    add(g, "AS", WEIR_DTYPE_F32, 1, 0);
    add(g, "AZ", WEIR_DTYPE_U8, 1, 0);
    add(g, "BS", WEIR_DTYPE_F32, s->n, 0);
    add(g, "BZ", WEIR_DTYPE_I8, 1, 0);
    add(g, "YS", WEIR_DTYPE_F32, 1, 0);
    add(g, "YZ", WEIR_DTYPE_U8, 1, 0);
    /* BS per column: a vector */
    lib = weir_state_add_library(g, st, "mm", "QLinearMatMul", ins8, outs);
    const char *names[] = {"A", "AS", "AZ", "B", "BS", "BZ", "YS", "YZ"};
    for (guint i = 0; i < 8; i++)
      connect(g, st, lib, names[i], ins8[i], TRUE);
  }
  connect(g, st, lib, "Y", "out0", FALSE);
  weir_node_set_attr_string(lib, "impl",
                            kind == K_BF16 ? WEIR_BGEMM_IMPL : "weir");
  return g;
}

static GHashTable *args_for(WeirGraph *g) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  GRand *r = g_rand_new_with_seed(7);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    gint64 shape[4] = {0};
    for (guint d = 0; d < c->shape->len; d++)
      weir_expr_eval(g_ptr_array_index(c->shape, d), NULL, &shape[d], NULL);
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    for (gint64 e = 0; e < t->count; e++) {
      double v = c->dtype == WEIR_DTYPE_F32 || c->dtype == WEIR_DTYPE_BF16
                     ? g_rand_double_range(r, -1, 1)
                 : c->dtype == WEIR_DTYPE_U8 ? g_rand_int_range(r, 0, 256)
                                             : g_rand_int_range(r, -128, 128);
      weir_tensor_set(t, e, v);
    }
    g_hash_table_replace(args, g_strdup(c->name), t);
  }
  g_rand_free(r);
  WeirTensor *t;
  if ((t = g_hash_table_lookup(args, "AS")))
    weir_tensor_set(t, 0, 0.02);
  if ((t = g_hash_table_lookup(args, "BS")))
    for (gint64 e = 0; e < t->count; e++)
      weir_tensor_set(t, e, 0.002);
  if ((t = g_hash_table_lookup(args, "YS")))
    weir_tensor_set(t, 0, 0.5);
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
       "Timed repetitions (default: about 0.3 s of f32 work, 3 to 50)", "N"},
      {"threads", 0, 0, G_OPTION_ARG_STRING, &opt_threads,
       "Thread counts (default 1,2)", "LIST"},
      {"quick", 0, 0, G_OPTION_ARG_NONE, &opt_quick, "Square sizes only", NULL},
      {NULL}};
  g_autoptr(GOptionContext) ctx =
      g_option_context_new("- int8 against f32 GEMM benchmark");
  g_option_context_add_main_entries(ctx, entries, NULL);
  g_autoptr(GError) err = NULL;
  if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
    fprintf(stderr, "bench-qgemm: %s\n", err->message);
    return 2;
  }
  weir_init();
  g_autoptr(WeirHwProfile) hw = weir_hw_profile_get(FALSE, &err);
  if (!hw) {
    fprintf(stderr, "bench-qgemm: %s\n", err->message);
    return 1;
  }
  WeirQGemmParams qp;
  weir_kernel_qgemm_params(hw, &qp);
  double int8_factor = qp.path == WEIR_QGEMM_VNNI ? 4.0 : 1.0;
  WeirBGemmParams bp;
  weir_kernel_bgemm_params(hw, &bp);
  /* vdpbf16ps does twice the multiply-adds of vfmadd231ps but issues at
   * half its rate on this machine (0.22 against 0.11 ns an instruction,
   * docs/native.md): the same peak */
  double bf16_factor = 1.0;
  g_auto(GStrv) tl = g_strsplit(opt_threads ? opt_threads : "1,2", ",", -1);
  g_autofree char *load0 = uptime_text();
  printf("# int8 GEMM (QLinearMatMul u8 x s8 -> u8, MatMulInteger u8 x s8 -> "
         "s32) and bf16 GEMM (MatMul bf16) against f32 MatMul, Weir's "
         "kernels, same run\n");
  printf("# cpu: %s; isa %s; int8 path %s; bf16 path %s; f32 peak %.1f "
         "GFLOP/s (1 thread), %.1f (%u threads); int8 peak taken as %.0fx "
         "that, bf16 as %.0fx\n",
         hw->cpu_model, weir_hw_isa_name(hw->isa),
         weir_kernel_qgemm_path_name(qp.path),
         weir_kernel_bgemm_path_name(bp.path), hw->peak_gflops_1t,
         hw->peak_gflops_all, hw->logical_cores, int8_factor, bf16_factor);
  printf("# load average at start %s\n", load0);
  printf("%-22s %5s %5s %5s %3s %8s %10s %8s %6s %9s %8s\n", "shape", "M", "N",
         "K", "thr", "kernel", "median ms", "GOP/s", "%peak", "best GOP/s",
         "vs f32");
  for (guint si = 0; si < G_N_ELEMENTS(shapes); si++) {
    const Shape *s = &shapes[si];
    if (opt_quick && g_strcmp0(s->what, "square") != 0)
      continue;
    WeirKernel *k[N_KERNELS];
    GHashTable *args[N_KERNELS];
    for (guint i = 0; i < N_KERNELS; i++) {
      g_autoptr(WeirGraph) g = program(s, (int)i);
      WeirCompileOptions opts = {0};
      k[i] = weir_kernel_compile(g, &opts, NULL, &err);
      if (!k[i]) {
        fprintf(stderr, "bench-qgemm: %s\n", err->message);
        return 1;
      }
      args[i] = args_for(g);
    }
    double ops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
    guint reps =
        opt_reps > 0 ? (guint)opt_reps : (guint)CLAMP(0.3 * 50e9 / ops, 3, 50);
    for (guint ti = 0; tl[ti]; ti++) {
      int threads = atoi(tl[ti]);
      if (threads < 1)
        continue;
      double *times[N_KERNELS];
      for (guint i = 0; i < N_KERNELS; i++) {
        times[i] = g_new0(double, reps);
        if (!weir_kernel_set_threads(k[i], threads, &err)) {
          fprintf(stderr, "bench-qgemm: %s\n", err->message);
          return 1;
        }
      }
      for (guint r = 0; r <= reps; r++)
        for (guint i = 0; i < N_KERNELS; i++) {
          WeirBenchOptions bo = {.warmup = 0, .repetitions = 1};
          WeirBenchResult res = {0};
          if (!weir_kernel_bench(k[i], NULL, args[i], &bo, &res, &err)) {
            fprintf(stderr, "bench-qgemm: %s\n", err->message);
            return 1;
          }
          if (r > 0)
            times[i][r - 1] = res.median;
          weir_bench_result_clear(&res);
        }
      double peak = threads == 1 ? hw->peak_gflops_1t : hw->peak_gflops_all;
      double f32_med = 0;
      for (guint i = 0; i < N_KERNELS; i++) {
        qsort(times[i], reps, sizeof(double), compare_double);
        double med = times[i][reps / 2];
        if (i == K_F32)
          f32_med = med;
        double gops = ops / med * 1e-9, best = ops / times[i][0] * 1e-9;
        double pk = i == K_F32    ? peak
                    : i == K_BF16 ? peak * bf16_factor
                                  : peak * int8_factor;
        printf("%-22s %5" G_GINT64_FORMAT " %5" G_GINT64_FORMAT
               " %5" G_GINT64_FORMAT " %3d %8s %10.3f %8.1f %5.0f%% %9.1f "
               "%7.2fx\n",
               s->what, s->m, s->n, s->k, threads, kernel_names[i], med * 1e3,
               gops, pk > 0 ? 100 * gops / pk : 0.0, best, f32_med / med);
        g_free(times[i]);
      }
      fflush(stdout);
    }
    for (guint i = 0; i < N_KERNELS; i++) {
      weir_kernel_free(k[i]);
      g_hash_table_unref(args[i]);
    }
  }
  g_autofree char *load1 = uptime_text();
  printf("# load average at end %s\n", load1);
  return 0;
}
