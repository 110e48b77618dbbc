/* test-kernel-norm.c — the native implementation "weir" of Softmax,
 * LogSoftmax and LayerNormalization (Weir's row kernels,
 * core/kernels/norm.c) against the reference interpreter running the pure
 * expansion of the same program.
 *
 * One program per dtype (f32, f64) holds one node per case, each with its
 * own containers: rows shorter than a vector, of odd lengths (5, 7, 37,
 * 33, 61), exactly whole vectors (128, 768), reduced axes that are not
 * the last one (legacy_2d, an axis followed by dimensions of size 1, a
 * layer normalization over two axes), tensors large enough for the rows to
 * be split over the threads; masked softmax rows (-inf entries, as an
 * attention mask gives, whose outputs must be exactly 0), a row wholly
 * masked and a row holding NaN (NaN everywhere, as the expansion gives),
 * inputs spread over [-30, 30) so the exponentials cover a wide range;
 * layer normalization with and without bias, scale and bias with leading
 * dimensions of 1, the optional Mean and InvStdDev outputs, and inputs
 * far from zero mean.  The f32 program is generated once per ISA the CPU
 * has ($WEIR_ISA lowers it); every node must take the kernel by default
 * and the code must call it; the outputs (pre-set to a sentinel, so an
 * element the kernel skips fails) must match the interpreter at 1 and 2
 * threads.  The generated unit is compiled with -Wall -Wextra -Werror.
 * test_refusals: what the kernels leave to the pure expansion.
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

typedef enum { SOFTMAX, LOG_SOFTMAX, LAYERNORM } Kind;

typedef struct {
  Kind kind;
  const char *x;     /* shape of X (and Y) */
  gint64 axis;       /* the axis attribute */
  gboolean legacy;   /* Softmax: legacy_2d */
  const char *scale; /* LayerNormalization: shape of Scale */
  const char *bias;  /* LayerNormalization: shape of B, NULL: none */
  const char *stat;  /* LayerNormalization: shape of Mean and InvStdDev,
                        NULL: not produced */
} Case;

static const Case cases[] = {
    /* 0: rows shorter than any vector; masks and NaN are set in X0 */
    {SOFTMAX, "6, 5", -1, FALSE, NULL, NULL, NULL},
    /* 1: odd length, rank 3 */
    {SOFTMAX, "2, 7, 37", -1, FALSE, NULL, NULL, NULL},
    /* 2: BERT's attention rows (whole vectors), enough for two threads */
    {SOFTMAX, "1, 12, 16, 128", 3, FALSE, NULL, NULL, NULL},
    /* 3: legacy_2d: the axes from 1 on, rows of 60 */
    {SOFTMAX, "2, 3, 4, 5", 1, TRUE, NULL, NULL, NULL},
    /* 4: an axis followed by a dimension of size 1 */
    {SOFTMAX, "3, 17, 1", 1, FALSE, NULL, NULL, NULL},
    /* 5, 6: LogSoftmax, odd and whole rows */
    {LOG_SOFTMAX, "5, 33", -1, FALSE, NULL, NULL, NULL},
    {LOG_SOFTMAX, "3, 64", 1, FALSE, NULL, NULL, NULL},
    /* 7: BERT's layer norm, smaller */
    {LAYERNORM, "1, 4, 768", -1, FALSE, "768", "768", NULL},
    /* 8: odd rows, no bias, Mean and InvStdDev */
    {LAYERNORM, "3, 5, 7", -1, FALSE, "7", NULL, "3, 5, 1"},
    /* 9: over two axes, a scale of rank 2 and a bias with a leading 1 */
    {LAYERNORM, "2, 3, 4, 5", 2, FALSE, "4, 5", "1, 4, 5", "2, 3, 1, 1"},
    /* 10: enough rows for two threads, odd length */
    {LAYERNORM, "64, 389", 1, FALSE, "389", "389", NULL},
    /* 11: a row dimension of 1 the scale does not have */
    {LAYERNORM, "2, 9, 1", 1, FALSE, "9, 1", "9, 1", NULL},
};

static const char *op_name(Kind k) {
  return k == SOFTMAX       ? "Softmax"
         : k == LOG_SOFTMAX ? "LogSoftmax"
                            : "LayerNormalization";
}

static WeirNode *add_case(WeirGraph *g, WeirState *s, guint k, const Case *c,
                          WeirDType dt) {
  g_autoptr(GError) err = NULL;
  gboolean ln = c->kind == LAYERNORM;
  const char *ins[] = {"in0", ln ? "in1" : NULL, ln && c->bias ? "in2" : NULL,
                       NULL};
  const char *outs[] = {"out0", c->stat ? "out1" : NULL,
                        c->stat ? "out2" : NULL, NULL};
  g_autofree char *label = g_strdup_printf("n%u", k);
  WeirNode *lib =
      weir_state_add_library(g, s, label, op_name(c->kind), ins, outs);
  g_autofree char *xn = g_strdup_printf("X%u", k),
                  *yn = g_strdup_printf("Y%u", k);
  add_port(g, s, lib, xn, dt, c->x, "in0", TRUE);
  add_port(g, s, lib, yn, dt, c->x, "out0", FALSE);
  weir_node_set_attr_int(lib, "axis", c->axis);
  if (c->legacy)
    weir_node_set_attr_int(lib, "legacy_2d", 1);
  if (ln) {
    g_autofree char *sn = g_strdup_printf("S%u", k);
    add_port(g, s, lib, sn, dt, c->scale, "in1", TRUE);
    if (c->bias) {
      g_autofree char *bn = g_strdup_printf("B%u", k);
      add_port(g, s, lib, bn, dt, c->bias, "in2", TRUE);
    }
    if (c->stat) {
      g_autofree char *mn = g_strdup_printf("M%u", k),
                      *in = g_strdup_printf("I%u", k);
      add_port(g, s, lib, mn, dt, c->stat, "out1", FALSE);
      add_port(g, s, lib, in, dt, c->stat, "out2", FALSE);
      weir_node_set_attr_int(lib, "stash_type", dt == WEIR_DTYPE_F64 ? 11 : 1);
    }
    weir_node_set_attr_float(lib, "epsilon", 1e-5);
  }
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", label, err->message);
  return lib;
}

/* Every output container of the cases (Y, M, I). */
static GPtrArray *outputs(void) {
  GPtrArray *o = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_ptr_array_add(o, g_strdup_printf("Y%u", k));
    if (cases[k].stat) {
      g_ptr_array_add(o, g_strdup_printf("M%u", k));
      g_ptr_array_add(o, g_strdup_printf("I%u", k));
    }
  }
  return o;
}

/* The inputs: softmax's spread over [-30, 30), layer norm's shifted by 3;
 * X0's rows: 1 masked at two positions, 2 wholly masked, 3 holding a NaN,
 * 4 masked but for one position. */
static void shape_inputs(GHashTable *args) {
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autofree char *xn = g_strdup_printf("X%u", k);
    WeirTensor *x = g_hash_table_lookup(args, xn);
    gint64 count = x->count;
    for (gint64 e = 0; e < count; e++) {
      double v = weir_tensor_get(x, e);
      weir_tensor_set(x, e, cases[k].kind == LAYERNORM ? v + 3 : 30 * v);
    }
  }
  WeirTensor *x0 = g_hash_table_lookup(args, "X0");
  weir_tensor_set(x0, 5 + 1, -INFINITY);
  weir_tensor_set(x0, 5 + 3, -INFINITY);
  for (gint64 e = 10; e < 15; e++)
    weir_tensor_set(x0, e, -INFINITY);
  weir_tensor_set(x0, 17, NAN);
  for (gint64 e = 20; e < 25; e++)
    if (e != 22)
      weir_tensor_set(x0, e, -INFINITY);
}

static void check_dtype(WeirDType dt, double rtol, double atol) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_graph_new("norm");
  WeirState *s = weir_graph_add_state(g, "main");
  guint nodes = G_N_ELEMENTS(cases);
  for (guint k = 0; k < nodes; k++)
    add_case(g, s, k, &cases[k], dt);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY)
      assert_string_equal(weir_native_default_impl(g, s, n), "weir");
  }
  g_autoptr(GHashTable) args = random_args(g, 17);
  shape_inputs(args);
  g_autoptr(GHashTable) ref = copy_args(args);
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("pure expansion: %s", err->message);
  if (!weir_interpret(pure, NULL, ref, NULL, &err))
    fail_msg("interpreter: %s", err->message);
  g_autoptr(GPtrArray) outs = outputs();
  const char *sfx = dt == WEIR_DTYPE_F64 ? "f64" : "f32";
  Fixture *f = fixture_new();
  f->opts.flags = FLAGS;
  WeirHwIsa list[3] = {0};
  guint ni = dt == WEIR_DTYPE_F64 ? 1 : isas(list);
  for (guint i = 0; i < ni; i++) {
    const char *isa = dt == WEIR_DTYPE_F64 ? "-" : weir_hw_isa_name(list[i]);
    if (dt != WEIR_DTYPE_F64)
      g_setenv("WEIR_ISA", isa, TRUE);
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s: %s", isa, err->message);
    if (dt != WEIR_DTYPE_F64) {
      g_autofree char *mark =
          g_strdup_printf("LayerNormalization) for %s.", isa);
      if (!strstr(src, mark))
        fail_msg("the kernel for %s is not in the code", isa);
    }
    for (guint k = 0; k < nodes; k++) {
      g_autofree char *call = g_strdup_printf(
          "weir_%s_%s(X%u, ",
          cases[k].kind == LAYERNORM ? "layernorm" : "softmax", sfx, k);
      if (!strstr(src, call))
        fail_msg("node n%u does not call the kernel (%s)", k, call);
    }
    g_autoptr(WeirKernel) kern = weir_kernel_compile(g, &f->opts, NULL, &err);
    if (!kern)
      fail_msg("%s: %s", isa, err->message);
    for (int threads = 1; threads <= 2; threads++) {
      assert_true(weir_kernel_set_threads(kern, threads, &err));
      g_autoptr(GHashTable) got = copy_args(args);
      for (guint o = 0; o < outs->len; o++) {
        WeirTensor *y = g_hash_table_lookup(got, g_ptr_array_index(outs, o));
        for (gint64 e = 0; e < y->count; e++)
          weir_tensor_set(y, e, 12345.0); /* every element must be written */
      }
      if (!weir_kernel_run(kern, NULL, got, &err))
        fail_msg("%s: %s", isa, err->message);
      for (guint o = 0; o < outs->len; o++) {
        const char *name = g_ptr_array_index(outs, o);
        if (!weir_tensor_allclose(g_hash_table_lookup(got, name),
                                  g_hash_table_lookup(ref, name), rtol, atol,
                                  NULL, &err))
          fail_msg("%s %s (%s, %d threads): %s", sfx, name, isa, threads,
                   err->message);
      }
      /* X0's rows: masked positions exactly 0, the masked row and the
       * NaN row NaN, the row masked but for one position exactly 1 */
      const WeirTensor *y0 = g_hash_table_lookup(got, "Y0");
      assert_true(weir_tensor_get(y0, 6) == 0 && weir_tensor_get(y0, 8) == 0);
      assert_true(weir_tensor_get(y0, 5) > 0);
      for (gint64 e = 10; e < 20; e++)
        assert_true(isnan(weir_tensor_get(y0, e)));
      for (gint64 e = 20; e < 25; e++)
        assert_true(weir_tensor_get(y0, e) == (e == 22 ? 1.0 : 0.0));
    }
  }
  g_unsetenv("WEIR_ISA");
  fixture_free(f);
}

static void test_f32(void **state) {
  (void)state;
  /* the polynomial exp and per-lane partial sums: a few float roundings
   * of the inputs (the layer norms' inputs are about 3: their mean carries
   * an error of a few 1e-7, times the inverse deviation of about 1.7) */
  check_dtype(WEIR_DTYPE_F32, 1e-5, 1e-5);
}

static void test_f64(void **state) {
  (void)state;
  check_dtype(WEIR_DTYPE_F64, 1e-12, 1e-14);
}

/* Left to the pure expansion, with the reason: a softmax over an axis that
 * is not innermost (its rows are not contiguous), a layer norm whose scale
 * is one value broadcast over the row, one whose Mean is stashed in
 * another dtype than X's, and f16. */
static void test_refusals(void **state) {
  (void)state;
  static const Case refused[] = {
      /* 0: softmax over axis 0 of a 3 x 4 tensor */
      {SOFTMAX, "3, 4", 0, FALSE, NULL, NULL, NULL},
      /* 1: the scale is one value for the whole row */
      {LAYERNORM, "3, 7", -1, FALSE, "1", NULL, NULL},
      /* 2: the scale varies along a dimension that is not normalized */
      {LAYERNORM, "3, 7", -1, FALSE, "3, 7", NULL, NULL},
  };
  static const char *const why[] = {"innermost", "one value per element",
                                    "one value per element"};
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_graph_new("refused");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *n[G_N_ELEMENTS(refused) + 2];
  for (guint k = 0; k < G_N_ELEMENTS(refused); k++)
    n[k] = add_case(g, s, k, &refused[k], WEIR_DTYPE_F32);
  /* 3: Mean stashed in f32 for an f64 X */
  const guint k3 = G_N_ELEMENTS(refused);
  n[k3] = add_case(g, s, k3, &cases[8], WEIR_DTYPE_F64);
  weir_node_set_attr_int(n[k3], "stash_type", 1);
  weir_graph_container(g, "M3")->dtype = WEIR_DTYPE_F32;
  weir_graph_container(g, "I3")->dtype = WEIR_DTYPE_F32;
  /* 4: f16 */
  n[k3 + 1] = add_case(g, s, k3 + 1, &cases[1], WEIR_DTYPE_F16);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  for (guint k = 0; k < G_N_ELEMENTS(n); k++) {
    assert_string_equal(weir_native_default_impl(g, s, n[k]), "pure");
    const WeirNativeImpl *ni = weir_native_lookup(n[k]->op, "weir");
    assert_non_null(ni);
    g_autofree char *reason = NULL;
    assert_false(ni->accepts(g, s, n[k], &reason));
    const char *want = k < G_N_ELEMENTS(why) ? why[k] : k == k3 ? "f32" : "f16";
    if (!strstr(reason, want))
      fail_msg("n%u: '%s' does not say '%s'", k, reason, want);
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
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
