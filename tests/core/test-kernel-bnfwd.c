/* test-kernel-bnfwd.c — BatchNormStats, the batch statistics of a training
 * batch norm (ir/ops/training.c), in Weir's kernel (implementation "weir",
 * core/kernels/batchnorm-stats.c) against the reference interpreter running
 * the pure expansion (ir/lower/expand/batchnorm-grad.c).
 *
 * test_f32, test_f64: one program per dtype with one node per case, each
 * with its own containers: batch 1 and more, odd channel counts and sizes,
 * ranks 2, 3 and 4, the statistics kept ([1, C, 1, 1]) and as [C], one case
 * large enough (41055 values) to run on several threads, and one whose mean
 * (1000) is large against its spread (the sums must not cancel).  Outputs
 * are pre-set to a sentinel; compiled at 1, 2 and 3 threads they must match
 * the interpreter, and the 2- and 3-thread results the 1-thread ones bit
 * for bit (three cases large enough for the split by image, with 9, 12 and
 * 2 images: uneven, even, and too few for it at 3 threads).
 * test_formula: the interpreter's result on a small case against mean,
 * biased variance and sqrt(var + epsilon) computed here in double.
 * test_default: every node takes the kernel without being asked;
 * test_refusal: an f16 node stays pure, with the reason.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "runtime-fixture.h"
#include "weir-attr.h"
#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-hw.h"
#include "weir-init.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-tensor-io.h"
#include "weir-validate.h"

#include "kernel-check.h"

#define FLAGS "-O2 -fopenmp -fPIC -shared -Wall -Wextra -Werror"

typedef struct {
  const char *x;    /* shape of X */
  const char *stat; /* shape of mean, var, std */
  double offset;    /* added to X's random values in [-1, 1] */
  double eps;
} Case;

static const Case cases[] = {
    /* 0: batch 1, odd sizes, kept statistics */
    {"1, 3, 5, 7", "1, 3, 1, 1", 0.3, 1e-5},
    /* 1: statistics as [C], another epsilon */
    {"4, 5, 3, 3", "5", -0.2, 1e-3},
    /* 2: rank 3 */
    {"3, 7, 9", "1, 7, 1", 0.0, 1e-5},
    /* 3: large enough for several threads */
    {"5, 17, 21, 23", "1, 17, 1, 1", 0.5, 1e-5},
    /* 4: a mean large against the spread */
    {"2, 33, 6, 6", "1, 33, 1, 1", 1000.0, 1e-5},
    /* 5: rank 2 (BatchNorm1d) */
    {"6, 2", "1, 2", 0.1, 1e-5},
    /* 6: split by image: 9 images, 5 and 4 at 2 threads, 3 each at 3 */
    {"9, 5, 29, 29", "5", 2.0, 1e-5},
    /* 7: 12 images, 4 at 3 threads; the mean large against the spread */
    {"12, 3, 31, 31", "1, 3, 1, 1", 500.0, 1e-5},
    /* 8: 2 images (by channel at 3 threads: fewer images than threads) */
    {"2, 40, 21, 21", "1, 40, 1, 1", -0.7, 1e-5},
};

static WeirNode *add_case(WeirGraph *g, WeirState *s, guint k, const Case *c,
                          WeirDType dt) {
  g_autoptr(GError) err = NULL;
  const char *ins[] = {"in0", NULL};
  const char *outs[] = {"out0", "out1", "out2", NULL};
  g_autofree char *label = g_strdup_printf("n%u", k);
  WeirNode *lib =
      weir_state_add_library(g, s, label, "BatchNormStats", ins, outs);
  weir_node_set_attr_float(lib, "epsilon", c->eps);
  static const char *const names[] = {"X", "M", "V", "SD"};
  for (guint p = 0; p < 4; p++) {
    g_autofree char *name = g_strdup_printf("%s%u", names[p], k);
    g_autofree char *conn =
        p == 0 ? g_strdup("in0") : g_strdup_printf("out%u", p - 1);
    add_port(g, s, lib, name, dt, p == 0 ? c->x : c->stat, conn, p == 0);
  }
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", label, err->message);
  return lib;
}

static WeirGraph *program(WeirDType dt) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new("bnstats");
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++)
    add_case(g, s, k, &cases[k], dt);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  return g;
}

static GHashTable *arguments(const WeirGraph *g) {
  GHashTable *args = random_args(g, 43);
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autofree char *x = g_strdup_printf("X%u", k);
    WeirTensor *t = g_hash_table_lookup(args, x);
    for (gint64 e = 0; e < t->count; e++)
      weir_tensor_set(t, e, weir_tensor_get(t, e) + cases[k].offset);
  }
  return args;
}

static void interpret(const WeirGraph *g, GHashTable *state) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("pure expansion: %s", err->message);
  if (!weir_interpret(pure, NULL, state, NULL, &err))
    fail_msg("interpreter: %s", err->message);
}

static void check_dtype(WeirDType dt, double rtol, double atol) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = program(dt);
  WeirState *s = g_ptr_array_index(g->states, 0);
  g_autoptr(GHashTable) args = arguments(g);
  g_autoptr(GHashTable) ref = copy_args(args);
  interpret(g, ref);
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY)
      weir_node_set_attr_string(n, "impl", "weir");
  }
  const char *sfx = dt == WEIR_DTYPE_F64 ? "f64" : "f32";
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  if (!src)
    fail_msg("%s", err->message);
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autofree char *call = g_strdup_printf(
        "weir_bnstats_%s(X%u, M%u, V%u, SD%u, ", sfx, k, k, k, k);
    if (!strstr(src, call))
      fail_msg("node n%u does not call the kernel (%s)", k, call);
  }
  Fixture *f = fixture_new();
  f->opts.flags = FLAGS;
  g_autoptr(WeirKernel) kern = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!kern)
    fail_msg("%s", err->message);
  static const char *const outs[] = {"M", "V", "SD"};
  g_autoptr(GHashTable) one = NULL; /* the 1-thread results */
  for (int threads = 1; threads <= 3; threads++) {
    assert_true(weir_kernel_set_threads(kern, threads, &err));
    GHashTable *got = copy_args(args);
    for (guint k = 0; k < G_N_ELEMENTS(cases); k++)
      for (guint o = 0; o < 3; o++) {
        g_autofree char *name = g_strdup_printf("%s%u", outs[o], k);
        WeirTensor *y = g_hash_table_lookup(got, name);
        for (gint64 e = 0; e < y->count; e++)
          weir_tensor_set(y, e, 12345.0);
      }
    if (!weir_kernel_run(kern, NULL, got, &err))
      fail_msg("%d threads: %s", threads, err->message);
    for (guint k = 0; k < G_N_ELEMENTS(cases); k++)
      for (guint o = 0; o < 3; o++) {
        g_autofree char *name = g_strdup_printf("%s%u", outs[o], k);
        if (!weir_tensor_allclose(g_hash_table_lookup(got, name),
                                  g_hash_table_lookup(ref, name), rtol, atol,
                                  NULL, &err))
          fail_msg("%s n%u ([%s], %d threads) %s: %s", sfx, k, cases[k].x,
                   threads, name, err->message);
        /* the same bits at any thread count (by channel or by image) */
        if (!one)
          continue;
        g_autofree char *what =
            g_strdup_printf("%s n%u ([%s]) %s", sfx, k, cases[k].x, name);
        assert_same_bits(g_hash_table_lookup(got, name),
                         g_hash_table_lookup(one, name), what, threads);
      }
    if (one)
      g_hash_table_unref(got);
    else
      one = got;
  }
  fixture_free(f);
}

static void test_f32(void **state) {
  (void)state;
  /* the interpreter sums in f32 in another order; the kernel in double */
  check_dtype(WEIR_DTYPE_F32, 1e-4, 1e-4);
}

static void test_f64(void **state) {
  (void)state;
  check_dtype(WEIR_DTYPE_F64, 1e-11, 1e-11);
}

/* The expansion against the formula, in double, on case 1. */
static void test_formula(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program(WEIR_DTYPE_F64);
  g_autoptr(GHashTable) args = arguments(g);
  g_autoptr(GHashTable) got = copy_args(args);
  interpret(g, got);
  const WeirTensor *x = g_hash_table_lookup(args, "X1");
  const WeirTensor *mean = g_hash_table_lookup(got, "M1"),
                   *var = g_hash_table_lookup(got, "V1"),
                   *sd = g_hash_table_lookup(got, "SD1");
  enum { N = 4, C = 5, S = 9 };
  for (int c = 0; c < C; c++) {
    double sum = 0, sq = 0;
    for (int n = 0; n < N; n++)
      for (int i = 0; i < S; i++)
        sum += weir_tensor_get(x, (n * C + c) * S + i);
    double mu = sum / (N * S);
    for (int n = 0; n < N; n++)
      for (int i = 0; i < S; i++) {
        double d = weir_tensor_get(x, (n * C + c) * S + i) - mu;
        sq += d * d;
      }
    double v = sq / (N * S);
    assert_true(fabs(weir_tensor_get(mean, c) - mu) < 1e-12);
    assert_true(fabs(weir_tensor_get(var, c) - v) < 1e-12);
    assert_true(fabs(weir_tensor_get(sd, c) - sqrt(v + 1e-3)) < 1e-12);
    assert_true(v > 0.05);
  }
}

static void test_default(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program(WEIR_DTYPE_F32);
  WeirState *s = g_ptr_array_index(g->states, 0);
  guint seen = 0;
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind != WEIR_NODE_LIBRARY)
      continue;
    seen++;
    assert_string_equal(weir_native_default_impl(g, s, n), "weir");
  }
  assert_int_equal(seen, G_N_ELEMENTS(cases));
}

static void test_refusal(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("refused");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *n = add_case(g, s, 0, &cases[0], WEIR_DTYPE_F16);
  assert_string_equal(weir_native_default_impl(g, s, n), "pure");
  const WeirNativeImpl *ni = weir_native_lookup("BatchNormStats", "weir");
  assert_non_null(ni);
  g_autofree char *reason = NULL;
  assert_false(ni->accepts(g, s, n, &reason));
  assert_non_null(strstr(reason, "f16"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f32),     cmocka_unit_test(test_f64),
      cmocka_unit_test(test_formula), cmocka_unit_test(test_default),
      cmocka_unit_test(test_refusal),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
