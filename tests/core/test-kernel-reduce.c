/* test-kernel-reduce.c — the native implementation "weir" of SumTo,
 * ReduceSum and ReduceMean (Weir's sum over axes, core/kernels/reduce.c)
 * against the reference interpreter running the pure expansion of the same
 * program.
 *
 * One program per dtype (f32, f64) holds one node per case, each with its
 * own containers, every node set to "weir": each pattern of summed (S) and
 * kept (K) axes the kernel takes ([S], [K, S], [S, K], [S, K, S],
 * [K, S, K], [S, K, S, K]), odd sizes, a kept width wider than one block
 * (1100 > 1024 columns), columns cut into one block per thread, rows cut
 * into chunks whose partials are added afterwards (fewer tasks than
 * threads: a sum of everything, 24 columns over 2000 rows), dimensions of
 * size 1 between the others, keepdims 0 and 1, negative and empty axes.
 * The outputs (pre-set to a sentinel, so an element the kernel skips
 * fails) must match the interpreter at 1, 2 and 3 threads, and the code
 * must call the kernel for every node.  test_default: every node takes the
 * kernel without being asked.  test_refusals:
 * what it leaves to the pure expansion, with the reason.
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
#include "weir-interp.h"
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-tensor-io.h"
#include "weir-validate.h"

#include "kernel-check.h"

#define FLAGS "-O2 -fopenmp -fPIC -shared -Wall -Wextra -Werror"

typedef struct {
  const char *op;   /* SumTo, ReduceSum, ReduceMean */
  const char *x;    /* shape of X */
  const char *y;    /* shape of Y (SumTo: also of its 'like' input) */
  const char *axes; /* Reduce*: "0,2"; "" for none (all axes) */
  gint64 keepdims;  /* Reduce* */
} Case;

static const Case cases[] = {
    /* 0: [S, K] odd column sums, one block */
    {"SumTo", "37, 19", "19", NULL, 0},
    /* 1: [S, K] wider than a block (two blocks of up to 1024) */
    {"SumTo", "3, 50, 1100", "1100", NULL, 0},
    /* 2: [S, K, S]: a batch norm's per-channel sum of NCHW */
    {"SumTo", "2, 5, 7, 3", "5, 1, 1", NULL, 0},
    /* 3: [K, S]: row sums */
    {"SumTo", "4, 6, 9", "4, 6, 1", NULL, 0},
    /* 4: [S]: everything, enough for the rows to be cut into chunks */
    {"SumTo", "70, 33, 17", "1", NULL, 0},
    /* 5: [K, S, K] with a dimension of 1 */
    {"SumTo", "7, 1, 9, 11", "7, 1, 1, 11", NULL, 0},
    /* 6: [S, K, S]: a leading extra dimension, three tasks */
    {"SumTo", "130, 3, 100", "3, 1", NULL, 0},
    /* 7: [S, K]: 24 columns, 2000 rows: one task, rows in chunks */
    {"SumTo", "2000, 24", "24", NULL, 0},
    /* 8: [S, K, S] by axes, keepdims */
    {"ReduceSum", "5, 8, 13", "1, 8, 1", "0,2", 1},
    /* 9: [K, S, K], keepdims 0 */
    {"ReduceSum", "9, 10, 11", "9, 11", "1", 0},
    /* 10: [S, K] mean, keepdims 0 */
    {"ReduceMean", "6, 4, 5", "4, 5", "0", 0},
    /* 11: the mean of everything (empty axes), in chunks */
    {"ReduceMean", "33, 1000", "1, 1", "", 1},
    /* 12: [K, S] mean over a negative axis */
    {"ReduceMean", "3, 4, 5", "3, 4, 1", "-1", 1},
    /* 13: [S, K, S, K] */
    {"ReduceSum", "3, 4, 5, 6", "4, 6", "0,2", 0},
    /* 14: [K, S, K] wide: 2 x 40 rows of 600 columns */
    {"ReduceMean", "2, 40, 600", "2, 1, 600", "1", 1},
};

static WeirNode *add_case(WeirGraph *g, WeirState *s, guint k, const Case *c,
                          WeirDType dt) {
  g_autoptr(GError) err = NULL;
  gboolean sum_to = strcmp(c->op, "SumTo") == 0;
  const char *ins[] = {"in0", sum_to ? "in1" : NULL, NULL};
  const char *outs[] = {"out0", NULL};
  g_autofree char *label = g_strdup_printf("n%u", k);
  WeirNode *lib = weir_state_add_library(g, s, label, c->op, ins, outs);
  g_autofree char *xn = g_strdup_printf("X%u", k),
                  *yn = g_strdup_printf("Y%u", k),
                  *ln = g_strdup_printf("L%u", k);
  add_port(g, s, lib, xn, dt, c->x, "in0", TRUE);
  if (sum_to)
    add_port(g, s, lib, ln, dt, c->y, "in1", TRUE);
  add_port(g, s, lib, yn, dt, c->y, "out0", FALSE);
  if (!sum_to) {
    g_auto(GStrv) parts = g_strsplit(c->axes, ",", -1);
    gint64 axes[8];
    guint n = 0;
    for (guint i = 0; parts[i] && *parts[i]; i++)
      axes[n++] = g_ascii_strtoll(parts[i], NULL, 10);
    if (n)
      weir_node_set_attr_ints(lib, "axes", axes, n);
    weir_node_set_attr_int(lib, "keepdims", c->keepdims);
  }
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", label, err->message);
  return lib;
}

static WeirGraph *program(WeirDType dt) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new("reduce");
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++)
    add_case(g, s, k, &cases[k], dt);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  return g;
}

static void check_dtype(WeirDType dt, double rtol, double atol) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = program(dt);
  WeirState *s = g_ptr_array_index(g->states, 0);
  g_autoptr(GHashTable) args = random_args(g, 23);
  /* values away from zero mean, so that a lost or doubled element shows */
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autofree char *xn = g_strdup_printf("X%u", k);
    WeirTensor *x = g_hash_table_lookup(args, xn);
    for (gint64 e = 0; e < x->count; e++)
      weir_tensor_set(x, e, weir_tensor_get(x, e) + 0.25);
  }
  g_autoptr(GHashTable) ref = copy_args(args);
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("pure expansion: %s", err->message);
  if (!weir_interpret(pure, NULL, ref, NULL, &err))
    fail_msg("interpreter: %s", err->message);
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
    g_autofree char *call =
        g_strdup_printf("weir_reduce_%s(X%u, Y%u, ", sfx, k, k);
    if (!strstr(src, call))
      fail_msg("node n%u does not call the kernel (%s)", k, call);
  }
  Fixture *f = fixture_new();
  f->opts.flags = FLAGS;
  g_autoptr(WeirKernel) kern = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!kern)
    fail_msg("%s", err->message);
  for (int threads = 1; threads <= 3; threads++) {
    assert_true(weir_kernel_set_threads(kern, threads, &err));
    g_autoptr(GHashTable) got = copy_args(args);
    for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
      g_autofree char *yn = g_strdup_printf("Y%u", k);
      WeirTensor *y = g_hash_table_lookup(got, yn);
      for (gint64 e = 0; e < y->count; e++)
        weir_tensor_set(y, e, 12345.0); /* every element must be written */
    }
    if (!weir_kernel_run(kern, NULL, got, &err))
      fail_msg("%d threads: %s", threads, err->message);
    for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
      g_autofree char *yn = g_strdup_printf("Y%u", k);
      if (!weir_tensor_allclose(g_hash_table_lookup(got, yn),
                                g_hash_table_lookup(ref, yn), rtol, atol, NULL,
                                &err))
        fail_msg("%s n%u (%s of [%s], %d threads): %s", sfx, k, cases[k].op,
                 cases[k].x, threads, err->message);
    }
  }
  fixture_free(f);
}

static void test_f32(void **state) {
  (void)state;
  /* sums of up to 39270 values near 0.75 in another order than the
   * expansion's: a few float roundings of the total */
  check_dtype(WEIR_DTYPE_F32, 2e-5, 1e-4);
}

static void test_f64(void **state) {
  (void)state;
  check_dtype(WEIR_DTYPE_F64, 1e-12, 1e-10);
}

/* Without an "impl" attribute every node the kernel accepts takes it. */
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
    if (strcmp(weir_native_default_impl(g, s, n), "weir") != 0)
      fail_msg("%s (%s): default %s", n->label, n->op,
               weir_native_default_impl(g, s, n));
  }
  assert_int_equal(seen, G_N_ELEMENTS(cases));
}

/* Left to the pure expansion, with the reason: summed and kept axes that
 * alternate five times, f16, i32, noop_with_empty_axes. */
static void test_refusals(void **state) {
  (void)state;
  static const Case refused[] = {
      {"ReduceSum", "2, 3, 4, 5, 6", "3, 5", "0,2,4", 0},
      {"SumTo", "4, 6", "6", NULL, 0},
      {"SumTo", "4, 6", "6", NULL, 0},
      {"ReduceSum", "4, 6", "4, 6", "", 1},
  };
  static const WeirDType dts[] = {WEIR_DTYPE_F32, WEIR_DTYPE_F16,
                                  WEIR_DTYPE_I32, WEIR_DTYPE_F32};
  static const char *const why[] = {"alternate", "f16", "i32",
                                    "noop_with_empty_axes"};
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_graph_new("refused");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *n[G_N_ELEMENTS(refused)];
  for (guint k = 0; k < G_N_ELEMENTS(refused); k++)
    n[k] = add_case(g, s, k, &refused[k], dts[k]);
  weir_node_set_attr_int(n[3], "noop_with_empty_axes", 1);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  for (guint k = 0; k < G_N_ELEMENTS(n); k++) {
    assert_string_equal(weir_native_default_impl(g, s, n[k]), "pure");
    const WeirNativeImpl *ni = weir_native_lookup(n[k]->op, "weir");
    assert_non_null(ni);
    g_autofree char *reason = NULL;
    assert_false(ni->accepts(g, s, n[k], &reason));
    if (!strstr(reason, why[k]))
      fail_msg("n%u: '%s' does not say '%s'", k, reason, why[k]);
  }
  /* an explicit choice of the kernel is an error naming the node */
  weir_node_set_attr_string(n[0], "impl", "weir");
  const WeirNativeImpl *ni = NULL;
  assert_false(weir_native_choice(g, s, n[0], &ni, &err));
  assert_non_null(strstr(err->message, "n0"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f32),
      cmocka_unit_test(test_f64),
      cmocka_unit_test(test_default),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
