/* test-large-model.c — a model with over 100 M parameters, built at test
 * time (nothing of it is committed), compiles and runs.
 *
 * The program is a chain of LAYERS MatMul nodes y = x W0 W1 ... on a
 * [1, N] row with N x N weights (N = 3200, 10 layers: 102.4 M float
 * parameters, 410 MB).  The weights are bound constants: the generated
 * C stays small (the compile scales with the program, not with its
 * parameters), the kernel borrows the program's data (no copy), and the
 * output matches a reference computed here in double precision.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>

#include "runtime-fixture.h"
#include "weir-codegen.h"
#include "weir-validate.h"

#define N 3200
#define LAYERS 10

/* A deterministic value in [-1, 1) (SplitMix64 of the index). */
static double hash_unit(guint64 i) {
  guint64 z = i + G_GUINT64_CONSTANT(0x9E3779B97F4A7C15);
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT(0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT(0x94D049BB133111EB);
  z ^= z >> 31;
  return (double)(z >> 11) / (double)(G_GUINT64_CONSTANT(1) << 52) - 1.0;
}

static WeirContainer *add_array(WeirGraph *g, const char *name,
                                const char *shape, gboolean transient) {
  g_autoptr(GError) err = NULL;
  WeirContainer *c =
      weir_graph_add_array(g, name, WEIR_DTYPE_F32, shape, transient, &err);
  if (!c)
    fail_msg("container %s: %s", name, err->message);
  return c;
}

static void add_edge(WeirGraph *g, WeirState *s, guint src, const char *sc,
                     guint dst, const char *dc, const char *data,
                     const char *subset) {
  g_autoptr(GError) err = NULL;
  if (!weir_state_add_memlet(g, s, src, sc, dst, dc, data, subset, &err))
    fail_msg("memlet: %s", err->message);
}

/* The chain; weights[k] receives layer k's data (borrowed from g). */
static WeirGraph *build_chain(const float **weights) {
  WeirGraph *g = weir_graph_new("large_chain");
  WeirState *s = weir_graph_add_state(g, "main");
  add_array(g, "x", "1, " G_STRINGIFY(N), FALSE);
  add_array(g, "y", "1, " G_STRINGIFY(N), FALSE);
  const char *row = "0:1, 0:" G_STRINGIFY(N);
  const char *square = "0:" G_STRINGIFY(N) ", 0:" G_STRINGIFY(N);
  guint prev = weir_state_add_access(g, s, "x")->id;
  const char *prev_name = "x";
  g_autofree char *prev_owned = NULL;
  const double scale = sqrt(3.0 / N); /* keeps the row's size */
  for (guint k = 0; k < LAYERS; k++) {
    g_autofree char *wname = g_strdup_printf("W%u", k);
    WeirContainer *w =
        add_array(g, wname, G_STRINGIFY(N) ", " G_STRINGIFY(N), TRUE);
    float *data = g_new(float, (gsize)N *N);
    for (gsize i = 0; i < (gsize)N * N; i++)
      data[i] = (float)(scale * hash_unit(k * (guint64)N * N + i));
    weights[k] = data;
    g_autoptr(GBytes) b = g_bytes_new_take(data, (gsize)N * N * sizeof(float));
    weir_container_set_initial(w, b);
    g_autofree char *out =
        k + 1 == LAYERS ? g_strdup("y") : g_strdup_printf("t%u", k);
    if (k + 1 < LAYERS)
      add_array(g, out, "1, " G_STRINGIFY(N), TRUE);
    const char *ins[] = {"in0", "in1", NULL}, *outs[] = {"out0", NULL};
    g_autofree char *label = g_strdup_printf("mm%u", k);
    WeirNode *mm = weir_state_add_library(g, s, label, "MatMul", ins, outs);
    guint wa = weir_state_add_access(g, s, wname)->id;
    guint oa = weir_state_add_access(g, s, out)->id;
    add_edge(g, s, prev, NULL, mm->id, "in0", prev_name, row);
    add_edge(g, s, wa, NULL, mm->id, "in1", wname, square);
    add_edge(g, s, mm->id, "out0", oa, NULL, out, row);
    prev = oa;
    g_free(prev_owned);
    prev_name = prev_owned = g_steal_pointer(&out);
  }
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(g, &err))
    fail_msg("validate: %s", err->message);
  return g;
}

static void test_over_100m_parameters(void **state) {
  (void)state;
  Fixture *f = fixture_new();
  const float *weights[LAYERS];
  g_autoptr(WeirGraph) g = build_chain(weights);
  gsize params = weir_codegen_constants_bytes(g) / sizeof(float);
  assert_true(params >= 100000000);

  g_autoptr(GError) err = NULL;
  WeirCompileInfo info = {0};
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, &info, &err);
  if (!k)
    fail_msg("compile: %s", err->message);
  /* the parameters are not in the generated C: its size is that of the
   * kernels' text (Weir's GEMM helpers alone are tens of KiB), a
   * thousandth of the parameters' 400 MB at the most */
  assert_true(info.source_bytes > 0);
  assert_true(info.source_bytes < params * sizeof(float) / 1000);
  assert_int_equal(weir_kernel_constants_bytes(k), params * sizeof(float));
  weir_compile_info_clear(&info);

  g_autoptr(WeirTensor) x =
      weir_tensor_new(WEIR_DTYPE_F32, 2, (gint64[]){1, N});
  float *xv = (float *)x->data;
  for (gsize i = 0; i < N; i++)
    xv[i] = (float)hash_unit(G_GUINT64_CONSTANT(1) << 40 | i);
  g_autoptr(GHashTable) args = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(WeirTensor) y =
      weir_tensor_new(WEIR_DTYPE_F32, 2, (gint64[]){1, N});
  g_hash_table_insert(args, "x", x);
  g_hash_table_insert(args, "y", y);
  if (!weir_kernel_run(k, NULL, args, &err))
    fail_msg("run: %s", err->message);

  /* reference in double precision */
  g_autofree double *a = g_new(double, N);
  g_autofree double *b = g_new(double, N);
  for (gsize i = 0; i < N; i++)
    a[i] = xv[i];
  for (guint l = 0; l < LAYERS; l++) {
    for (gsize j = 0; j < N; j++)
      b[j] = 0;
    for (gsize i = 0; i < N; i++) {
      const float *wr = weights[l] + i * N;
      for (gsize j = 0; j < N; j++)
        b[j] += a[i] * wr[j];
    }
    double *t = a;
    a = b;
    b = t;
  }
  const float *yv = (const float *)y->data;
  double norm = 0, err2 = 0;
  for (gsize j = 0; j < N; j++) {
    norm += a[j] * a[j];
    err2 += (yv[j] - a[j]) * (yv[j] - a[j]);
  }
  assert_true(norm > 0);
  if (!(sqrt(err2 / norm) < 1e-4))
    fail_msg("relative error %g", sqrt(err2 / norm));
  fixture_free(f);
}

int main(void) {
  g_autofree char *home = g_dir_make_tmp("weir-test-home-XXXXXX", NULL);
  g_setenv("XDG_CACHE_HOME", home, TRUE);
  g_unsetenv("WEIR_CACHE_DIR");
  g_unsetenv("WEIR_CACHE_MAX_BYTES");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_over_100m_parameters),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  remove_tree(home);
  return rc;
}
