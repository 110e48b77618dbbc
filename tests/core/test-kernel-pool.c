/* test-kernel-pool.c — the native implementation "weir" of MaxPool (Weir's
 * MaxPool kernel, core/kernels/pool.c) against the reference interpreter
 * running the pure expansion of the same program.
 *
 * One program holds a MaxPool node per case (their own containers): ResNet's
 * stem (3x3, stride 2, pad 1), stride 1 and 3, asymmetric padding, dilation,
 * ceil_mode (windows past the end), batch 2, a kernel larger than the
 * padding's reach, rows too wide for the kernel's padded row (its scalar
 * loop nest), and NaN in the input (a window holding one gives NaN, as the
 * pure expansion's max).  The default implementation of every node must be
 * "weir" and the generated code must call the kernel; outputs must match
 * the interpreter at 1, 2 and 3 threads (the f32 kernel's threads split
 * the (image, output row) pairs: at 3 threads batch 2's 9 output rows per
 * image are split across the images; fewer pairs than two per thread
 * split (plane, row) pairs instead).  SAME padding and the Indices output
 * are left to the pure expansion.  The u8 and i8 kernels (quantized
 * tensors): test_maxpool_int8.  GlobalAveragePool's kernel: test_gap.
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

#define FLAGS "-O2 -fopenmp -fPIC -shared"

/* One MaxPool: X [n, c, h, w], kernel kh x kw, strides, pads (top, left,
 * bottom, right), dilations, ceil_mode. */
typedef struct {
  gint64 n, c, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  gboolean ceil;
} Case;

static const Case cases[] = {
    /* ResNet's stem pooling, smaller */
    {1, 3, 22, 22, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, FALSE},
    /* stride 1, odd width */
    {1, 2, 9, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, FALSE},
    /* stride 3, no padding, 2x2 kernel, batch 2 */
    {2, 3, 14, 17, 2, 2, 3, 3, 0, 0, 0, 0, 1, 1, FALSE},
    /* asymmetric padding, unequal strides */
    {1, 2, 11, 15, 3, 2, 2, 1, 0, 1, 2, 0, 1, 1, FALSE},
    /* dilation */
    {1, 2, 13, 16, 3, 3, 1, 2, 2, 1, 2, 1, 2, 2, FALSE},
    /* stride 2 along the rows (taken over the row's even and odd columns):
     * taps at odd offsets (dilation 3, kernel 4 wide), asymmetric padding,
     * and padded rows of odd and even length */
    {1, 2, 11, 23, 2, 4, 1, 2, 1, 2, 0, 1, 1, 3, FALSE},
    {1, 3, 15, 20, 3, 3, 2, 2, 0, 1, 1, 0, 1, 1, FALSE},
    {1, 1, 6, 14, 1, 2, 1, 2, 0, 0, 0, 0, 1, 1, FALSE},
    /* ceil_mode: the last windows run past the end */
    {1, 2, 10, 12, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, TRUE},
    /* a plane smaller than the kernel's padded reach */
    {1, 1, 2, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, FALSE},
    /* rows too wide for the padded row: the scalar loop nest */
    {1, 2, 3, 5001, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, FALSE},
    /* 2 x 2, stride 2 (the integer kernels' direct path): exact tiling
     * (the digits CNN's 8 x 8), odd sizes (last row and column unused),
     * ceil_mode (windows past the end: not the direct path), and enough
     * rows for the threads */
    {2, 3, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, FALSE},
    {1, 2, 9, 11, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, FALSE},
    {1, 2, 9, 11, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, TRUE},
    {64, 32, 8, 8, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, FALSE},
    /* 3 columns at stride 2 (the f32 kernel's vector path): ResNet's stem
     * pooling rows (112 -> 56: three vectors of 16 and a partial one;
     * NaN in its input below), exactly one vector without padding, odd
     * sizes with ceil_mode (a window past the end), two rows at stride 1
     * with asymmetric padding (two columns on the left), and a window of
     * 9 rows (the generic rows, the vector taps) */
    {1, 4, 12, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, FALSE},
    {1, 2, 9, 33, 3, 3, 2, 2, 0, 0, 0, 0, 1, 1, FALSE},
    {2, 3, 17, 69, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE},
    {1, 2, 10, 40, 2, 3, 1, 2, 0, 2, 1, 0, 1, 1, FALSE},
    {1, 1, 20, 50, 9, 3, 2, 2, 4, 1, 4, 1, 1, 1, FALSE},
};

/* the case of ResNet's stem pooling rows (NaN in its input too) */
#define CASE_STEM_ROWS 15

static gint64 out_size(gint64 in, gint64 k, gint64 s, gint64 p0, gint64 p1,
                       gint64 d, gboolean ceil) {
  gint64 span = in + p0 + p1 - d * (k - 1) - 1;
  return (ceil ? (span + s - 1) / s : span / s) + 1;
}

static WeirNode *add_case_typed(WeirGraph *g, WeirState *s, guint k,
                                const Case *c, gboolean indices, WeirDType t) {
  g_autoptr(GError) err = NULL;
  const char *ins[] = {"in0", NULL};
  const char *outs[] = {"out0", indices ? "out1" : NULL, NULL};
  g_autofree char *label = g_strdup_printf("n%u", k);
  WeirNode *lib = weir_state_add_library(g, s, label, "MaxPool", ins, outs);
  gint64 oh = out_size(c->h, c->kh, c->sh, c->pt, c->pb, c->dh, c->ceil);
  gint64 ow = out_size(c->w, c->kw, c->sw, c->pl, c->pr, c->dw, c->ceil);
  g_autofree char *xs =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                      c->n, c->c, c->h, c->w);
  g_autofree char *ys =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                      c->n, c->c, oh, ow);
  g_autofree char *xn = g_strdup_printf("X%u", k),
                  *yn = g_strdup_printf("Y%u", k);
  add_port(g, s, lib, xn, t, xs, "in0", TRUE);
  add_port(g, s, lib, yn, t, ys, "out0", FALSE);
  if (indices) {
    g_autofree char *in = g_strdup_printf("I%u", k);
    WeirContainer *ic =
        weir_graph_add_array(g, in, WEIR_DTYPE_I64, ys, FALSE, &err);
    assert_non_null(ic);
    g_autoptr(WeirSubset) full = weir_container_full_subset(ic);
    g_autofree char *sub = weir_subset_to_string(full);
    WeirNode *a = weir_state_add_access(g, s, in);
    assert_true(weir_state_add_memlet(g, s, lib->id, "out1", a->id, NULL, in,
                                      sub, &err));
  }
  gint64 st[2] = {c->sh, c->sw}, di[2] = {c->dh, c->dw},
         pads[4] = {c->pt, c->pl, c->pb, c->pr}, ks[2] = {c->kh, c->kw};
  weir_node_set_attr_ints(lib, "strides", st, 2);
  weir_node_set_attr_ints(lib, "dilations", di, 2);
  weir_node_set_attr_ints(lib, "pads", pads, 4);
  weir_node_set_attr_ints(lib, "kernel_shape", ks, 2);
  if (c->ceil)
    weir_node_set_attr_int(lib, "ceil_mode", 1);
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", label, err->message);
  return lib;
}

static WeirNode *add_case(WeirGraph *g, WeirState *s, guint k, const Case *c,
                          gboolean indices) {
  return add_case_typed(g, s, k, c, indices, WEIR_DTYPE_F32);
}

static void test_maxpool(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_graph_new("maxpool");
  WeirState *s = weir_graph_add_state(g, "main");
  guint nodes = G_N_ELEMENTS(cases);
  for (guint k = 0; k < nodes; k++)
    add_case(g, s, k, &cases[k], FALSE);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY)
      assert_string_equal(weir_native_default_impl(g, s, n), "weir");
  }
  g_autoptr(GHashTable) args = random_args(g, 11);
  /* NaN in the first case's input: its windows give NaN */
  WeirTensor *x0 = g_hash_table_lookup(args, "X0");
  weir_tensor_set(x0, 5, NAN);
  weir_tensor_set(x0, 300, NAN);
  /* and in ResNet's stem pooling rows: a full vector's lane, the last
   * input column, the top row of the second plane (padding above) */
  g_autofree char *xs = g_strdup_printf("X%d", CASE_STEM_ROWS);
  WeirTensor *xv = g_hash_table_lookup(args, xs);
  weir_tensor_set(xv, 3 * 112 + 37, NAN);
  weir_tensor_set(xv, 6 * 112 + 111, NAN);
  weir_tensor_set(xv, 12 * 112 + 20, NAN);
  g_autoptr(GHashTable) ref = copy_args(args);
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("pure expansion: %s", err->message);
  if (!weir_interpret(pure, NULL, ref, NULL, &err))
    fail_msg("interpreter: %s", err->message);
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  if (!src)
    fail_msg("%s", err->message);
  for (guint k = 0; k < nodes; k++) {
    g_autofree char *call =
        g_strdup_printf("weir_maxpool2d_f32(X%u, Y%u, ", k, k);
    if (!strstr(src, call))
      fail_msg("node n%u does not call the kernel", k);
  }
  Fixture *f = fixture_new();
  f->opts.flags = FLAGS;
  g_autoptr(WeirKernel) kern = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!kern)
    fail_msg("%s", err->message);
  for (int threads = 1; threads <= 3; threads++) {
    assert_true(weir_kernel_set_threads(kern, threads, &err));
    g_autoptr(GHashTable) got = copy_args(args);
    for (guint n = 0; n < nodes; n++) {
      g_autofree char *yn = g_strdup_printf("Y%u", n);
      WeirTensor *y = g_hash_table_lookup(got, yn);
      gint64 count = (gint64)(weir_tensor_nbytes(y) / 4);
      for (gint64 e = 0; e < count; e++)
        weir_tensor_set(y, e, 12345.0); /* every element must be written */
    }
    if (!weir_kernel_run(kern, NULL, got, &err))
      fail_msg("%s", err->message);
    for (guint n = 0; n < nodes; n++) {
      g_autofree char *yn = g_strdup_printf("Y%u", n);
      if (!weir_tensor_allclose(g_hash_table_lookup(got, yn),
                                g_hash_table_lookup(ref, yn), 0, 0, NULL, &err))
        fail_msg("node n%u (%d threads): %s", n, threads, err->message);
    }
    /* the NaN reached the output */
    const WeirTensor *y0 = g_hash_table_lookup(got, "Y0");
    gboolean nan = FALSE;
    for (gint64 e = 0; e < (gint64)(weir_tensor_nbytes(y0) / 4); e++)
      nan |= isnan(weir_tensor_get(y0, e));
    assert_true(nan);
    g_autofree char *ys = g_strdup_printf("Y%d", CASE_STEM_ROWS);
    const WeirTensor *yv = g_hash_table_lookup(got, ys);
    gint64 nans = 0;
    for (gint64 e = 0; e < (gint64)(weir_tensor_nbytes(yv) / 4); e++)
      nans += isnan(weir_tensor_get(yv, e));
    /* three NaNs in disjoint windows: at least three NaN outputs */
    assert_true(nans >= 3);
  }
  fixture_free(f);
}

/* u8 and i8 (quantized tensors: max-pooling commutes with a monotone
 * quantization): the same cases, every value of the type in the inputs
 * (the lowest one included, which is also what padding counts as), the
 * kernel's output equal to the interpreter's bit for bit at 1 and 2
 * threads, every element written (two fill values). */
static void test_maxpool_int8(void **state) {
  (void)state;
  static const WeirDType types[] = {WEIR_DTYPE_U8, WEIR_DTYPE_I8};
  for (guint ti = 0; ti < G_N_ELEMENTS(types); ti++) {
    WeirDType t = types[ti];
    const char *tn = weir_dtype_name(t);
    g_autoptr(GError) err = NULL;
    g_autoptr(WeirGraph) g = weir_graph_new("maxpool_int8");
    WeirState *s = weir_graph_add_state(g, "main");
    guint nodes = G_N_ELEMENTS(cases);
    for (guint k = 0; k < nodes; k++)
      add_case_typed(g, s, k, &cases[k], FALSE, t);
    if (!weir_graph_validate(g, &err))
      fail_msg("%s", err->message);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY)
        assert_string_equal(weir_native_default_impl(g, s, n), "weir");
    }
    g_autoptr(GHashTable) args = random_args(g, 11);
    GRand *r = g_rand_new_with_seed(8 + ti);
    double lo = t == WEIR_DTYPE_U8 ? 0 : -128;
    for (guint k = 0; k < nodes; k++) {
      g_autofree char *xn = g_strdup_printf("X%u", k);
      WeirTensor *x = g_hash_table_lookup(args, xn);
      for (gint64 e = 0; e < x->count; e++)
        weir_tensor_set(x, e, lo + g_rand_int_range(r, 0, 256));
      /* a plane of nothing but the lowest value */
      for (gint64 e = 0; e < x->count && e < cases[k].h * cases[k].w; e++)
        weir_tensor_set(x, e, lo);
    }
    g_rand_free(r);
    g_autoptr(GHashTable) ref = copy_args(args);
    g_autoptr(WeirGraph) pure = weir_graph_copy(g);
    if (!weir_expand_all(pure, NULL, NULL, &err))
      fail_msg("pure expansion: %s", err->message);
    if (!weir_interpret(pure, NULL, ref, NULL, &err))
      fail_msg("interpreter: %s", err->message);
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s", err->message);
    for (guint k = 0; k < nodes; k++) {
      g_autofree char *call =
          g_strdup_printf("weir_maxpool2d_%s(X%u, Y%u, ", tn, k, k);
      if (!strstr(src, call))
        fail_msg("%s: node n%u does not call the kernel", tn, k);
    }
    Fixture *f = fixture_new();
    f->opts.flags = FLAGS;
    g_autoptr(WeirKernel) kern = weir_kernel_compile(g, &f->opts, NULL, &err);
    if (!kern)
      fail_msg("%s", err->message);
    for (int threads = 1; threads <= 2; threads++) {
      assert_true(weir_kernel_set_threads(kern, threads, &err));
      g_autoptr(GHashTable) got = copy_args(args);
      for (guint n = 0; n < nodes; n++) {
        g_autofree char *yn = g_strdup_printf("Y%u", n);
        WeirTensor *y = g_hash_table_lookup(got, yn);
        for (gint64 e = 0; e < y->count; e++)
          weir_tensor_set(y, e, lo + (threads == 1 ? 77 : 201));
      }
      if (!weir_kernel_run(kern, NULL, got, &err))
        fail_msg("%s", err->message);
      for (guint n = 0; n < nodes; n++) {
        g_autofree char *yn = g_strdup_printf("Y%u", n);
        const WeirTensor *a = g_hash_table_lookup(got, yn),
                         *b = g_hash_table_lookup(ref, yn);
        assert_int_equal(weir_tensor_nbytes(a), weir_tensor_nbytes(b));
        for (gint64 e = 0; e < a->count; e++)
          if (weir_tensor_get(a, e) != weir_tensor_get(b, e))
            fail_msg("%s, node n%u (%d threads): element %" G_GINT64_FORMAT
                     " is %g, the interpreter says %g",
                     tn, n, threads, e, weir_tensor_get(a, e),
                     weir_tensor_get(b, e));
      }
    }
    fixture_free(f);
  }
}

/* SAME padding, the Indices output and other element types stay with the
 * pure expansion. */
static void test_refusals(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("refused");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *same = add_case(g, s, 0, &cases[1], FALSE);
  weir_node_set_attr_string(same, "auto_pad", "SAME_UPPER");
  weir_node_remove_attr(same, "pads");
  WeirNode *ind = add_case(g, s, 1, &cases[0], TRUE);
  assert_string_equal(weir_native_default_impl(g, s, same), "pure");
  assert_string_equal(weir_native_default_impl(g, s, ind), "pure");
  const WeirNativeImpl *ni = weir_native_lookup("MaxPool", "weir");
  assert_non_null(ni);
  g_autofree char *reason = NULL;
  assert_false(ni->accepts(g, s, ind, &reason));
  assert_non_null(strstr(reason, "Indices"));
  /* another element type: the pure expansion */
  WeirNode *i32 = add_case_typed(g, s, 2, &cases[0], FALSE, WEIR_DTYPE_I32);
  assert_string_equal(weir_native_default_impl(g, s, i32), "pure");
  g_autofree char *why = NULL;
  assert_false(ni->accepts(g, s, i32, &why));
  assert_non_null(strstr(why, "f32, u8 or i8"));
}

/* The documented order of weir_gap_f32: 32 partial sums (lane l: the
 * elements l, l + 32, ...), added 16 apart, 8, 4, 2, 1, divided by hw. */
static float gap_expected(const WeirTensor *x, gint64 pl, gint64 hw) {
  float acc[32] = {0};
  for (gint64 i = 0; i < hw; i++)
    acc[i % 32] += (float)weir_tensor_get(x, pl * hw + i);
  for (int w = 16; w >= 1; w /= 2)
    for (int l = 0; l < w; l++)
      acc[l] += acc[l + w];
  return acc[0] / (float)hw;
}

/* GlobalAveragePool: Weir's kernel (partial sums) against the pure
 * expansion, ranks 3 to 5, planes shorter than, equal to and longer than
 * the 32 partial sums, batch 2, at 1 and 2 threads; the default of every
 * node is "weir" and the code calls the kernel.  Also bit for bit against
 * the documented order of the partial sums (gap_expected): tails of 1 to
 * 31 elements read as vectors over the next planes (masked), or copied
 * where those vectors would end past the tensor (planes of one element,
 * the last plane). */
static void test_gap(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  static const char *const shapes[][2] = {
      {"1, 5, 7, 7", "1, 5, 1, 1"},   {"2, 3, 5, 9", "2, 3, 1, 1"},
      {"1, 4, 4, 8", "1, 4, 1, 1"},   {"1, 16, 56, 56", "1, 16, 1, 1"},
      {"2, 3, 40", "2, 3, 1"},        {"1, 2, 3, 4, 5", "1, 2, 1, 1, 1"},
      {"1, 40, 7, 7", "1, 40, 1, 1"}, {"1, 9, 14, 14", "1, 9, 1, 1"},
      {"1, 6, 1, 1", "1, 6, 1, 1"},   {"2, 5, 3, 11", "2, 5, 1, 1"},
      {"1, 7, 5, 5", "1, 7, 1, 1"},
  };
  const guint nodes = G_N_ELEMENTS(shapes);
  g_autoptr(WeirGraph) g = weir_graph_new("gap");
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < nodes; k++) {
    const char *ins[] = {"in0", NULL};
    const char *outs[] = {"out0", NULL};
    g_autofree char *label = g_strdup_printf("n%u", k);
    WeirNode *lib =
        weir_state_add_library(g, s, label, "GlobalAveragePool", ins, outs);
    g_autofree char *xn = g_strdup_printf("X%u", k),
                    *yn = g_strdup_printf("Y%u", k);
    add_port(g, s, lib, xn, WEIR_DTYPE_F32, shapes[k][0], "in0", TRUE);
    add_port(g, s, lib, yn, WEIR_DTYPE_F32, shapes[k][1], "out0", FALSE);
  }
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY)
      assert_string_equal(weir_native_default_impl(g, s, n), "weir");
  }
  g_autoptr(GHashTable) args = random_args(g, 13);
  g_autoptr(GHashTable) ref = copy_args(args);
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("pure expansion: %s", err->message);
  if (!weir_interpret(pure, NULL, ref, NULL, &err))
    fail_msg("interpreter: %s", err->message);
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  if (!src)
    fail_msg("%s", err->message);
  for (guint k = 0; k < nodes; k++) {
    g_autofree char *call = g_strdup_printf("weir_gap_f32(X%u, Y%u, ", k, k);
    if (!strstr(src, call))
      fail_msg("node n%u does not call the kernel", k);
  }
  Fixture *f = fixture_new();
  f->opts.flags = FLAGS;
  g_autoptr(WeirKernel) kern = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!kern)
    fail_msg("%s", err->message);
  for (int threads = 1; threads <= 2; threads++) {
    assert_true(weir_kernel_set_threads(kern, threads, &err));
    g_autoptr(GHashTable) got = copy_args(args);
    for (guint n = 0; n < nodes; n++) {
      g_autofree char *yn = g_strdup_printf("Y%u", n);
      WeirTensor *y = g_hash_table_lookup(got, yn);
      for (gint64 e = 0; e < (gint64)(weir_tensor_nbytes(y) / 4); e++)
        weir_tensor_set(y, e, 12345.0); /* every element must be written */
    }
    if (!weir_kernel_run(kern, NULL, got, &err))
      fail_msg("%s", err->message);
    for (guint n = 0; n < nodes; n++) {
      g_autofree char *yn = g_strdup_printf("Y%u", n);
      /* the sums are added in another order than the expansion's */
      if (!weir_tensor_allclose(g_hash_table_lookup(got, yn),
                                g_hash_table_lookup(ref, yn), 1e-5, 1e-6, NULL,
                                &err))
        fail_msg("node n%u (%d threads): %s", n, threads, err->message);
      g_autofree char *xn = g_strdup_printf("X%u", n);
      const WeirTensor *x = g_hash_table_lookup(args, xn);
      const WeirTensor *y = g_hash_table_lookup(got, yn);
      gint64 planes = (gint64)(weir_tensor_nbytes(y) / 4);
      gint64 hw = (gint64)(weir_tensor_nbytes(x) / 4) / planes;
      for (gint64 pl = 0; pl < planes; pl++) {
        float want = gap_expected(x, pl, hw);
        float have = (float)weir_tensor_get(y, pl);
        if (memcmp(&want, &have, sizeof want) != 0)
          fail_msg("node n%u plane %" G_GINT64_FORMAT ": %.9g, the partial "
                   "sums give %.9g",
                   n, pl, have, want);
      }
    }
  }
  fixture_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_maxpool),
      cmocka_unit_test(test_maxpool_int8),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_gap),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
