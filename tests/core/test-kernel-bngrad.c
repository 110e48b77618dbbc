/* test-kernel-bngrad.c — BatchNormGrad, the backward of a training batch
 * norm (ir/ops/training.c), in Weir's kernel (implementation "weir",
 * core/kernels/batchnorm-grad.c) against the reference interpreter
 * running the pure expansion (ir/lower/expand/batchnorm-grad.c), and the
 * transformation batchnorm-grad-relu-fusion that gives it the ReLU's mask.
 *
 * test_f32, test_f64: one program per dtype with one node per case, each
 * with its own containers: batch 1 and more, odd channel counts and sizes,
 * ranks 2, 3 and 4, the statistics as [C] and as [1, C, 1, 1], with and
 * without the mask R, and cases large enough (over 32768 values) to run
 * on several threads.  Outputs are pre-set to a sentinel (an element the
 * kernel skips fails); compiled at 1, 2 and 3 threads they must match the
 * interpreter, and the 2- and 3-thread results the 1-thread ones bit for
 * bit (three cases with 13, 7 and 6 images, uneven and even shares of
 * images or channels per thread).  test_formula: the
 * interpreter's result on a small case against the formula computed here in
 * double.  test_default: every node takes the kernel without being asked;
 * test_refusal: an i32 node stays pure, with the reason.  test_relu_fusion: the
 * ReLU's mask folded into a BatchNormGrad gives the unfused program's results;
 * a mask that other nodes read, or another Pointwise code, is refused and the
 * graph stays as it was.
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
#include "weir-transform.h"
#include "weir-validate.h"

#include "kernel-check.h"

#define FLAGS "-O2 -fopenmp -fPIC -shared -Wall -Wextra -Werror"

typedef struct {
  const char *x;     /* shape of X, dY, R, dX */
  const char *stat;  /* shape of mean and std */
  const char *chans; /* shape of scale, dscale, dB */
  gboolean masked;   /* with R */
} Case;

static const Case cases[] = {
    /* 0: batch 1, odd sizes, statistics kept [1, C, 1, 1] */
    {"1, 3, 5, 7", "1, 3, 1, 1", "3", FALSE},
    /* 1: with the mask, statistics as [C] */
    {"4, 5, 3, 3", "5", "5", TRUE},
    /* 2: rank 3 */
    {"3, 7, 9", "1, 7, 1", "7", TRUE},
    /* 3: large enough for several threads, masked */
    {"5, 17, 21, 23", "1, 17, 1, 1", "17", TRUE},
    /* 4: 33 channels of 6 x 6, no mask */
    {"2, 33, 6, 6", "1, 33, 1, 1", "33", FALSE},
    /* 5: rank 2 (BatchNorm1d) */
    {"6, 2", "1, 2", "2", FALSE},
    /* 6: masked, 13 images (uneven shares of images at 2 and 3 threads) */
    {"13, 6, 19, 23", "1, 6, 1, 1", "6", TRUE},
    /* 7: 7 images, 9 channels (uneven shares of channels) */
    {"7, 9, 25, 27", "9", "9", FALSE},
    /* 8: without the mask: 6 images, 11 channels */
    {"6, 11, 23, 23", "1, 11, 1, 1", "11", FALSE},
};

static WeirNode *add_case(WeirGraph *g, WeirState *s, guint k, const Case *c,
                          WeirDType dt) {
  g_autoptr(GError) err = NULL;
  const char *ins[] = {
      "in0", "in1", "in2", "in3", "in4", c->masked ? "in5" : NULL, NULL};
  const char *outs[] = {"out0", "out1", "out2", NULL};
  g_autofree char *label = g_strdup_printf("n%u", k);
  WeirNode *lib =
      weir_state_add_library(g, s, label, "BatchNormGrad", ins, outs);
  static const char *const names[] = {"DY", "X",  "M",  "SD", "G",
                                      "R",  "DX", "DG", "DB"};
  for (guint p = 0; p < 9; p++) {
    if (p == 5 && !c->masked)
      continue;
    const char *shape = p == 2 || p == 3             ? c->stat
                        : p == 4 || p == 7 || p == 8 ? c->chans
                                                     : c->x;
    g_autofree char *name = g_strdup_printf("%s%u", names[p], k);
    g_autofree char *conn =
        p < 6 ? g_strdup_printf("in%u", p) : g_strdup_printf("out%u", p - 6);
    add_port(g, s, lib, name, dt, shape, conn, p < 6);
  }
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", label, err->message);
  return lib;
}

static WeirGraph *program(WeirDType dt) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new("bngrad");
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++)
    add_case(g, s, k, &cases[k], dt);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  return g;
}

/* Random arguments with std in [0.5, 1.5] and X around a mean of 0.3. */
static GHashTable *arguments(const WeirGraph *g) {
  GHashTable *args = random_args(g, 41);
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autofree char *sd = g_strdup_printf("SD%u", k);
    g_autofree char *x = g_strdup_printf("X%u", k);
    WeirTensor *t = g_hash_table_lookup(args, sd);
    for (gint64 e = 0; e < t->count; e++)
      weir_tensor_set(t, e, 1.0 + 0.5 * weir_tensor_get(t, e));
    t = g_hash_table_lookup(args, x);
    for (gint64 e = 0; e < t->count; e++)
      weir_tensor_set(t, e, weir_tensor_get(t, e) + 0.3);
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
    g_autofree char *r =
        cases[k].masked ? g_strdup_printf("R%u", k) : g_strdup("NULL");
    g_autofree char *call =
        g_strdup_printf("weir_bngrad_%s(DY%u, X%u, M%u, SD%u, G%u, %s, DX%u, ",
                        sfx, k, k, k, k, k, r, k);
    if (!strstr(src, call))
      fail_msg("node n%u does not call the kernel (%s)", k, call);
  }
  Fixture *f = fixture_new();
  f->opts.flags = FLAGS;
  g_autoptr(WeirKernel) kern = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!kern)
    fail_msg("%s", err->message);
  static const char *const outs[] = {"DX", "DG", "DB"};
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
          fail_msg("%s n%u ([%s]%s, %d threads) %s: %s", sfx, k, cases[k].x,
                   cases[k].masked ? ", masked" : "", threads, name,
                   err->message);
        /* the same bits at any thread count */
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
  /* per-channel sums of up to 5681 values in another order than the
   * expansion's, and dX a difference of three terms of order 1 */
  check_dtype(WEIR_DTYPE_F32, 1e-4, 1e-4);
}

static void test_f64(void **state) {
  (void)state;
  check_dtype(WEIR_DTYPE_F64, 1e-11, 1e-11);
}

/* The expansion against the formula, in double, on case 1 (masked). */
static void test_formula(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program(WEIR_DTYPE_F64);
  g_autoptr(GHashTable) args = arguments(g);
  g_autoptr(GHashTable) got = copy_args(args);
  interpret(g, got);
  const WeirTensor *dy = g_hash_table_lookup(args, "DY1"),
                   *x = g_hash_table_lookup(args, "X1"),
                   *mean = g_hash_table_lookup(args, "M1"),
                   *sd = g_hash_table_lookup(args, "SD1"),
                   *scale = g_hash_table_lookup(args, "G1"),
                   *r = g_hash_table_lookup(args, "R1");
  const WeirTensor *dx = g_hash_table_lookup(got, "DX1"),
                   *dg = g_hash_table_lookup(got, "DG1"),
                   *db = g_hash_table_lookup(got, "DB1");
  enum { N = 4, C = 5, S = 9 };
  guint masked = 0;
  for (int c = 0; c < C; c++) {
    double mu = weir_tensor_get(mean, c), v = weir_tensor_get(sd, c);
    double sb = 0, ss = 0;
    for (int n = 0; n < N; n++)
      for (int i = 0; i < S; i++) {
        gint64 e = (n * C + c) * S + i;
        double gr = weir_tensor_get(r, e) > 0 ? weir_tensor_get(dy, e) : 0;
        masked += weir_tensor_get(r, e) <= 0;
        sb += gr;
        ss += gr * (weir_tensor_get(x, e) - mu) / v;
      }
    assert_true(fabs(weir_tensor_get(db, c) - sb) < 1e-12);
    assert_true(fabs(weir_tensor_get(dg, c) - ss) < 1e-12);
    for (int n = 0; n < N; n++)
      for (int i = 0; i < S; i++) {
        gint64 e = (n * C + c) * S + i;
        double gr = weir_tensor_get(r, e) > 0 ? weir_tensor_get(dy, e) : 0;
        double h = (weir_tensor_get(x, e) - mu) / v;
        double want = weir_tensor_get(scale, c) / v *
                      (gr - sb / (N * S) - h * ss / (N * S));
        if (fabs(weir_tensor_get(dx, e) - want) > 1e-12)
          fail_msg("dX[%" G_GINT64_FORMAT "] = %.17g, expected %.17g", e,
                   weir_tensor_get(dx, e), want);
      }
  }
  /* the mask took some elements and left others */
  assert_true(masked > 10 && masked < N * C * S - 10);
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
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_graph_new("refused");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *n = add_case(g, s, 0, &cases[0], WEIR_DTYPE_F16);
  assert_string_equal(weir_native_default_impl(g, s, n), "pure");
  const WeirNativeImpl *ni = weir_native_lookup("BatchNormGrad", "weir");
  assert_non_null(ni);
  g_autofree char *reason = NULL;
  assert_false(ni->accepts(g, s, n, &reason));
  assert_non_null(strstr(reason, "f16"));
}

/* ------------------------------------------------- the ReLU's mask folded */

/* dY = Pointwise(U, R) with `code`, then BatchNormGrad(dY, ...) on case 3's
 * shapes; with `shared`, dY is also an output of the program (read after
 * the node). */
static WeirGraph *relu_program(const char *code, gboolean shared) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new("relu_bngrad");
  WeirState *s = weir_graph_add_state(g, "main");
  Case c = cases[3];
  c.masked = FALSE;
  WeirNode *grad = add_case(g, s, 0, &c, WEIR_DTYPE_F32);
  const char *ins[] = {"in0", "in1", NULL};
  const char *outs[] = {"out0", NULL};
  WeirNode *pw = weir_state_add_library(g, s, "mask", "Pointwise", ins, outs);
  weir_node_set_attr_string(pw, "code", code);
  add_port(g, s, pw, "U", WEIR_DTYPE_F32, c.x, "in0", TRUE);
  add_port(g, s, pw, "R", WEIR_DTYPE_F32, c.x, "in1", TRUE);
  /* the Pointwise writes DY0, which the BatchNormGrad reads */
  WeirContainer *dy = weir_graph_container(g, "DY0");
  g_autoptr(WeirSubset) full = weir_container_full_subset(dy);
  g_autofree char *sub = weir_subset_to_string(full);
  WeirNode *acc = NULL;
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *a = g_ptr_array_index(s->nodes, i);
    if (a->kind == WEIR_NODE_ACCESS && strcmp(a->data, "DY0") == 0)
      acc = a;
  }
  assert_non_null(acc);
  assert_true(weir_state_add_memlet(g, s, pw->id, "out0", acc->id, NULL, "DY0",
                                    sub, &err));
  dy->transient = !shared;
  if (!weir_op_check_attrs(pw, &err) || !weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  (void)grad;
  return g;
}

static void test_relu_fusion(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  weir_transforms_init();
  const WeirTransformInfo *t =
      weir_transform_lookup("batchnorm-grad-relu-fusion");
  assert_non_null(t);
  g_autoptr(WeirGraph) g = relu_program("y = b > 0 ? a : 0", FALSE);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  assert_int_equal(sites->len, 1);
  WeirSite *site = &g_array_index(sites, WeirSite, 0);
  g_autofree char *reason = NULL;
  if (!weir_transform_can_apply(t, g, site, NULL, &reason))
    fail_msg("%s", reason);
  if (!weir_transform_apply(g, t, site, NULL, NULL, NULL, &err))
    fail_msg("%s", err->message);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  assert_null(weir_graph_container(g, "DY0"));
  g_autoptr(GHashTable) args = random_args(g, 5);
  {
    /* std positive */
    WeirTensor *sd = g_hash_table_lookup(args, "SD0");
    for (gint64 e = 0; e < sd->count; e++)
      weir_tensor_set(sd, e, 1.0 + 0.5 * weir_tensor_get(sd, e));
  }
  g_autoptr(GHashTable) want = copy_args(args);
  interpret(before, want);
  g_autoptr(GHashTable) interp = copy_args(args);
  interpret(g, interp);
  Fixture *f = fixture_new();
  f->opts.flags = FLAGS;
  g_autoptr(WeirKernel) kern = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!kern)
    fail_msg("%s", err->message);
  static const char *const outs[] = {"DX0", "DG0", "DB0"};
  for (int threads = 0; threads <= 3; threads++) {
    g_autoptr(GHashTable) got = NULL;
    if (threads == 0) {
      got = g_hash_table_ref(interp);
    } else {
      got = copy_args(args);
      assert_true(weir_kernel_set_threads(kern, threads, &err));
      if (!weir_kernel_run(kern, NULL, got, &err))
        fail_msg("%s", err->message);
    }
    for (guint o = 0; o < 3; o++)
      if (!weir_tensor_allclose(g_hash_table_lookup(got, outs[o]),
                                g_hash_table_lookup(want, outs[o]), 1e-4, 1e-4,
                                NULL, &err))
        fail_msg("%s, %d threads: %s", outs[o], threads, err->message);
  }
  fixture_free(f);

  /* refused, graph untouched: another code; the mask read elsewhere */
  static const char *const codes[] = {"y = b > 0 ? a : 0", "y = b > 1 ? a : 0"};
  for (guint i = 0; i < 2; i++) {
    g_autoptr(WeirGraph) h = relu_program(codes[i], i == 0);
    g_autofree char *json0 = weir_graph_to_json(h);
    g_autoptr(GArray) ss = weir_transform_sites(t, h);
    assert_int_equal(ss->len, 1);
    WeirSite *at = &g_array_index(ss, WeirSite, 0);
    g_autofree char *why = NULL;
    assert_false(weir_transform_can_apply(t, h, at, NULL, &why));
    assert_non_null(strstr(why, i == 0 ? "argument" : "mask"));
    /* applied anyway: refused, the graph as it was */
    g_autoptr(GError) e2 = NULL;
    assert_false(weir_transform_apply(h, t, at, NULL, NULL, NULL, &e2));
    g_autofree char *json1 = weir_graph_to_json(h);
    assert_string_equal(json0, json1);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_f32),     cmocka_unit_test(test_f64),
      cmocka_unit_test(test_formula), cmocka_unit_test(test_default),
      cmocka_unit_test(test_refusal), cmocka_unit_test(test_relu_fusion),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
