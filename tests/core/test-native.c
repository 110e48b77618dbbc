/* test-native.c — native implementations (ir/lower/weir-native.h) against the
 * reference interpreter running the pure expansion of the same program.
 *
 * Each case is a program with one library node (Gemm, MatMul, Conv, or a
 * training operator: ConvGradInput, ConvGradFilter, MaxPoolGrad) over
 * seeded random inputs (MaxPoolGrad's X rounded so that windows have ties,
 * its Y the true window maxima, so the first-maximum rule is exercised).  It is
 * compiled once per implementation that applies (and once with the default
 * choice, unless its C is that of an implementation already compiled); the
 * generated source must contain the implementation's call (so the
 * native path really ran), and the outputs must match the interpreter on the
 * pure expansion within 1e-4 relative, with 1, 2 and 3 OpenMP threads.  The
 * sample models, compiled with default implementations, match their PyTorch
 * outputs;
 * compiled with each implementation choice (everything pure, BLAS for
 * Gemm/MatMul, im2col or direct for Conv where it applies, the defaults) they
 * match the interpreter on the pure expansion, with 1 and 2 threads.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <gmodule.h>

#include "runtime-fixture.h"
#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-native.h"
#include "weir-onnx.h"
#include "weir-ops.h"
#include "weir-tensor-io.h"
#include "weir-validate.h"

/* One program: op with inputs of in[k] shapes ("" = omitted) and output
 * shape out; attributes set by `attrs`. */
typedef struct {
  const char *name;
  const char *op;
  const char *in[3];
  const char *out;
  void (*attrs)(WeirNode *n);
  /* implementations expected to apply, and the text each must emit */
  const char *impls[3];
  const char *default_impl;
  /* optional: adjusts the random arguments (X0, X1, ... and Y) */
  void (*prep)(GHashTable *args);
} Case;

static WeirGraph *case_graph(const Case *c, WeirDType dt) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new(c->name);
  WeirState *s = weir_graph_add_state(g, "main");
  const char *ins[4] = {NULL};
  static const char *const conn_names[] = {"in0", "in1", "in2"};
  guint ni = 0;
  for (guint k = 0; k < 3; k++)
    if (c->in[k] && *c->in[k])
      ins[ni++] = conn_names[k];
  const char *outs[] = {"out0", NULL};
  WeirNode *lib = weir_state_add_library(g, s, c->name, c->op, ins, outs);
  for (guint k = 0; k < 3; k++) {
    if (!c->in[k] || !*c->in[k])
      continue;
    g_autofree char *name = g_strdup_printf("X%u", k);
    WeirContainer *x = weir_graph_add_array(g, name, dt, c->in[k], FALSE, &err);
    if (!x)
      fail_msg("%s: %s", c->name, err->message);
    g_autoptr(WeirSubset) full = weir_container_full_subset(x);
    g_autofree char *sub = weir_subset_to_string(full);
    WeirNode *a = weir_state_add_access(g, s, name);
    assert_true(weir_state_add_memlet(g, s, a->id, NULL, lib->id, conn_names[k],
                                      name, sub, &err));
  }
  WeirContainer *y = weir_graph_add_array(g, "Y", dt, c->out, FALSE, &err);
  if (!y)
    fail_msg("%s: %s", c->name, err->message);
  g_autoptr(WeirSubset) full = weir_container_full_subset(y);
  g_autofree char *sub = weir_subset_to_string(full);
  WeirNode *ya = weir_state_add_access(g, s, "Y");
  assert_true(weir_state_add_memlet(g, s, lib->id, "out0", ya->id, NULL, "Y",
                                    sub, &err));
  if (c->attrs)
    c->attrs(lib);
  assert_true(weir_op_check_attrs(lib, &err));
  if (!weir_graph_validate(g, &err))
    fail_msg("%s: %s", c->name, err->message);
  return g;
}

static GHashTable *tensors_new(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                               (GDestroyNotify)weir_tensor_free);
}

static GHashTable *random_args(const WeirGraph *g) {
  GHashTable *args = tensors_new();
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    gint64 shape[8] = {0};
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(g_ptr_array_index(c->shape, d), NULL,
                                 &shape[d], NULL));
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    weir_tensor_fill_random(t, 7 + c->id);
    g_hash_table_replace(args, g_strdup(c->name), t);
  }
  return args;
}

static GHashTable *copy_args(GHashTable *args) {
  GHashTable *c = tensors_new();
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, args);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(c, g_strdup(k), weir_tensor_copy(v));
  return c;
}

/* The marker an implementation's generated code contains. */
static const char *marker(const char *op, const char *impl,
                          const char *conv_direct_kind) {
  if (strcmp(impl, "blas") == 0)
    return "cblas_";
  if (strcmp(impl, "weir") == 0 && strncmp(op, "ConvGrad", 8) == 0)
    return strcmp(conv_direct_kind, "weir_conv2d_depthwise_") == 0
               ? "weir_dwconv2d_grad_"
               : "weir_wconv2d_grad_";
  if (strcmp(impl, "weir") == 0 &&
      (strcmp(op, "SumTo") == 0 || strncmp(op, "Reduce", 6) == 0))
    return "weir_reduce_f";
  if (strcmp(impl, "weir") == 0)
    return strcmp(op, "Conv") == 0 ? "weir_wconv2d_" : "weir_gemm_";
  if (strcmp(op, "ConvGradFilter") == 0 && strcmp(impl, "im2col") == 0)
    return "weir_conv2d_grad_filter_";
  if (strcmp(op, "ConvGradInput") == 0 && strcmp(impl, "col2im") == 0)
    return "weir_conv2d_grad_input_";
  if (strcmp(op, "MaxPoolGrad") == 0 && strcmp(impl, "direct") == 0)
    return "weir_max_pool_grad_";
  if (strcmp(impl, "im2col") == 0)
    return "weir_conv2d_im2col_";
  if (strcmp(impl, "direct") == 0)
    return conv_direct_kind;
  if (strcmp(impl, "depthwise") == 0)
    return "weir_dwconv2d_f32(";
  if (strcmp(impl, "stem") == 0)
    return "weir_stem_f32(";
  return NULL;
}

static void check_case(Fixture *f, const Case *c, WeirDType dt) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = case_graph(c, dt);
  /* the default choice */
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirNode *lib = NULL;
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY)
      lib = n;
  }
  assert_non_null(lib);
  if (dt == WEIR_DTYPE_F32)
    assert_string_equal(weir_native_default_impl(g, s, lib), c->default_impl);

  g_autoptr(GHashTable) args = random_args(g);
  if (c->prep)
    c->prep(args);
  g_autoptr(GHashTable) ref = copy_args(args);
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("%s: pure expansion: %s", c->name, err->message);
  if (!weir_interpret(pure, NULL, ref, NULL, &err))
    fail_msg("%s: interpreter: %s", c->name, err->message);
  const WeirTensor *want = g_hash_table_lookup(ref, "Y");

  const char *direct_kind =
      strstr(c->name, "dw") ? "weir_conv2d_depthwise_" : "weir_conv2d_1x1_";
  /* generated sources already compiled and run: the default choice gives
   * the same C as naming that implementation, and the same C compiled
   * again would run the same code (the cache keys programs by their
   * structure, which differs in the impl attribute, so it would compile) */
  g_autoptr(GHashTable) built =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < G_N_ELEMENTS(c->impls) + 1; i++) {
    const char *impl = i == 0 ? NULL : c->impls[i - 1];
    if (i > 0 && !impl)
      break;
    /* the stem kernel is f32 only (test-kernel-stem checks the refusal) */
    if (impl && dt != WEIR_DTYPE_F32 && strcmp(impl, "stem") == 0)
      continue;
    g_autoptr(WeirGraph) h = weir_graph_copy(g);
    if (impl)
      assert_true(weir_native_set_impl(h, c->op, impl, NULL, &err));
    const char *used = impl ? impl : weir_native_default_impl(g, s, lib);
    g_autofree char *src = weir_codegen_c(h, NULL, &err);
    if (!src)
      fail_msg("%s (%s): %s", c->name, used, err->message);
    const char *mark = marker(c->op, used, direct_kind);
    if (mark && !strstr(src, mark))
      fail_msg("%s (%s): the generated code has no '%s'", c->name, used, mark);
    if (!mark)
      assert_null(strstr(src, "cblas_"));
    if (g_hash_table_contains(built, src))
      continue;
    g_hash_table_add(built, g_steal_pointer(&src));
    g_autoptr(WeirKernel) k = weir_kernel_compile(h, &f->opts, NULL, &err);
    if (!k)
      fail_msg("%s (%s): %s", c->name, used, err->message);
    for (int threads = 1; threads <= 3; threads++) {
      /* a unit without OpenMP code has no thread count to set */
      if (!weir_kernel_set_threads(k, threads, NULL) && threads > 1)
        continue;
      g_autoptr(GHashTable) got = copy_args(args);
      WeirTensor *y = g_hash_table_lookup(got, "Y");
      for (gint64 e = 0;
           e < (gint64)(weir_tensor_nbytes(y) / (dt == WEIR_DTYPE_F32 ? 4 : 8));
           e++)
        weir_tensor_set(y, e, 12345.0); /* every element must be written */
      if (!weir_kernel_run(k, NULL, got, &err))
        fail_msg("%s (%s): %s", c->name, used, err->message);
      if (!weir_tensor_allclose(y, want, 1e-4, 1e-5, NULL, &err))
        fail_msg("%s (%s, %s, %d threads): %s", c->name, used,
                 dt == WEIR_DTYPE_F32 ? "f32" : "f64", threads, err->message);
    }
  }
}

/* ----------------------------------------------------------------- cases */

static void gemm_tt(WeirNode *n) {
  weir_node_set_attr_int(n, "transA", 1);
  weir_node_set_attr_int(n, "transB", 1);
  weir_node_set_attr_float(n, "alpha", 0.5);
  weir_node_set_attr_float(n, "beta", -2.0);
}
static void gemm_ta(WeirNode *n) {
  weir_node_set_attr_int(n, "transA", 1);
  weir_node_set_attr_float(n, "beta", 0.25);
}
static void gemm_beta(WeirNode *n) {
  weir_node_set_attr_float(n, "beta", 1.5);
}
static void gemm_tb(WeirNode *n) {
  weir_node_set_attr_int(n, "transB", 1);
  weir_node_set_attr_float(n, "alpha", 3.0);
}

static void set2(WeirNode *n, const char *name, gint64 a, gint64 b) {
  gint64 v[2] = {a, b};
  weir_node_set_attr_ints(n, name, v, 2);
}
static void conv_s2p1(WeirNode *n) {
  set2(n, "strides", 2, 2);
  gint64 pads[4] = {1, 1, 1, 1};
  weir_node_set_attr_ints(n, "pads", pads, 4);
}
static void conv_dil(WeirNode *n) {
  set2(n, "dilations", 2, 1);
  gint64 pads[4] = {2, 0, 1, 1};
  weir_node_set_attr_ints(n, "pads", pads, 4);
}
static void conv_g2(WeirNode *n) {
  weir_node_set_attr_int(n, "group", 2);
  gint64 pads[4] = {1, 1, 1, 1};
  weir_node_set_attr_ints(n, "pads", pads, 4);
}
static void conv_dw(WeirNode *n) {
  weir_node_set_attr_int(n, "group", 4);
  set2(n, "strides", 2, 1);
  gint64 pads[4] = {1, 1, 1, 1};
  weir_node_set_attr_ints(n, "pads", pads, 4);
}
static void conv_dw_s2(WeirNode *n) {
  weir_node_set_attr_int(n, "group", 6);
  set2(n, "strides", 2, 2);
  gint64 pads[4] = {1, 1, 1, 1};
  weir_node_set_attr_ints(n, "pads", pads, 4);
}
/* a 3x5 depthwise kernel, dilated along the width, stride 3 there, with
 * uneven pads (more on the left than the dilated kernel's reach) */
static void conv_dw_dil(WeirNode *n) {
  weir_node_set_attr_int(n, "group", 3);
  set2(n, "strides", 1, 3);
  set2(n, "dilations", 1, 2);
  gint64 pads[4] = {0, 4, 2, 1};
  weir_node_set_attr_ints(n, "pads", pads, 4);
}

/* Training operators: explicit window attributes (kernel, strides, begin
 * and end pads, dilations, group). */
static void window(WeirNode *n, gint64 k0, gint64 k1, gint64 s0, gint64 s1,
                   gint64 p0, gint64 p1, gint64 p2, gint64 p3, gint64 d0,
                   gint64 d1, gint64 group) {
  set2(n, "kernel_shape", k0, k1);
  set2(n, "strides", s0, s1);
  gint64 pads[4] = {p0, p1, p2, p3};
  weir_node_set_attr_ints(n, "pads", pads, 4);
  set2(n, "dilations", d0, d1);
  if (group != 1)
    weir_node_set_attr_int(n, "group", group);
}
static void win_3x3(WeirNode *n) {
  window(n, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1);
}
static void win_3x3_s2p1(WeirNode *n) {
  window(n, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1);
}
static void win_3x2_g2_dil(WeirNode *n) {
  window(n, 3, 2, 1, 1, 2, 0, 1, 1, 2, 1, 2);
}
static void win_dw_s2(WeirNode *n) {
  window(n, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 4);
}
static void win_3x3_p1(WeirNode *n) {
  window(n, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1);
}
/* 5x3 at unit stride, pads 3/1 (rows) and 0/1 (columns) */
static void win_5x3_uneven(WeirNode *n) {
  window(n, 5, 3, 1, 1, 3, 0, 1, 1, 1, 1, 1);
}
static void win_1x1_p1(WeirNode *n) {
  window(n, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1);
}
static void win_1x1_s2(WeirNode *n) {
  window(n, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 1);
}
static void win_3x3_p1_g2(WeirNode *n) {
  window(n, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2);
}
/* 3x2 dilated by 2 along the rows, stride 2 there, pads 2/1 (rows) and
 * 0/1 (columns), two groups */
static void win_3x2_s21_g2_dil(WeirNode *n) {
  window(n, 3, 2, 2, 1, 2, 0, 1, 1, 2, 1, 2);
}
/* 2x3 at stride 3 x 2, pads 0 and 1 before, 1 and 0 after */
static void win_2x3_s32(WeirNode *n) {
  window(n, 2, 3, 3, 2, 0, 1, 1, 0, 1, 1, 1);
}
/* 3x3 at stride 2, pads 3: beyond the kernel's reach */
static void win_3x3_s2p3(WeirNode *n) {
  window(n, 3, 3, 2, 2, 3, 3, 3, 3, 1, 1, 1);
}
static void win_3x3_s2p1_g2(WeirNode *n) {
  window(n, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 2);
}
/* 3x3 dilated by 2, uneven pads (2 and 1 before, 1 and 2 after) */
static void win_3x3_d2_uneven(WeirNode *n) {
  window(n, 3, 3, 1, 1, 2, 1, 1, 2, 2, 2, 1);
}
static void win_dw5_p1(WeirNode *n) {
  window(n, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 5);
}
static void win_2x2_s2(WeirNode *n) {
  window(n, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1);
}
static void win_pool_3x3_s2p1(WeirNode *n) {
  window(n, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1);
}
static void win_pool_2x2_dil(WeirNode *n) {
  window(n, 2, 2, 1, 1, 0, 1, 0, 1, 2, 2, 1);
}

/* MaxPoolGrad's inputs are (dY, X, Y): X is rounded to quarters so that
 * windows have ties, and Y (X2) is set to the true maxima of the windows
 * described by kernel k, stride s, begin pad p and dilation d. */
static void pool_maxima(GHashTable *args, gint64 k, gint64 st, gint64 ph,
                        gint64 pw, gint64 d) {
  WeirTensor *x = g_hash_table_lookup(args, "X1");
  WeirTensor *y = g_hash_table_lookup(args, "X2");
  gint64 nc = x->shape[0] * x->shape[1], h = x->shape[2], w = x->shape[3];
  gint64 oh = y->shape[2], ow = y->shape[3];
  for (gint64 e = 0; e < nc * h * w; e++)
    weir_tensor_set(x, e, floor(weir_tensor_get(x, e) * 4) / 4);
  for (gint64 pl = 0; pl < nc; pl++)
    for (gint64 i = 0; i < oh; i++)
      for (gint64 j = 0; j < ow; j++) {
        double m = -INFINITY;
        for (gint64 a = 0; a < k; a++)
          for (gint64 b = 0; b < k; b++) {
            gint64 ih = i * st - ph + a * d, iw = j * st - pw + b * d;
            if (ih >= 0 && ih < h && iw >= 0 && iw < w)
              m = fmax(m, weir_tensor_get(x, (pl * h + ih) * w + iw));
          }
        weir_tensor_set(y, (pl * oh + i) * ow + j, m);
      }
}
static void prep_2x2_s2(GHashTable *args) {
  pool_maxima(args, 2, 2, 0, 0, 1);
}
static void prep_3x3_s2p1(GHashTable *args) {
  pool_maxima(args, 3, 2, 1, 1, 1);
}
static void prep_2x2_dil(GHashTable *args) {
  pool_maxima(args, 2, 1, 0, 1, 2);
}

/* dY and X of a large filter gradient rounded to quarters: every product
 * a multiple of 1/16 and every partial sum exact in f32, so any order of
 * the additions gives the interpreter's result (sums of thousands of
 * random products otherwise differ by more than the tolerance where they
 * nearly cancel) */
static void prep_quarters(GHashTable *args) {
  static const char *const names[] = {"X0", "X1"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    WeirTensor *t = g_hash_table_lookup(args, names[i]);
    gint64 count = 1;
    for (guint d = 0; d < t->rank; d++)
      count *= t->shape[d];
    for (gint64 e = 0; e < count; e++)
      weir_tensor_set(t, e, floor(weir_tensor_get(t, e) * 4) / 4);
  }
}

static void rmean_nhw(WeirNode *n) {
  gint64 axes[3] = {0, 2, 3};
  weir_node_set_attr_ints(n, "axes", axes, 3);
}

static const Case cases[] = {
    /* Weir's sum over axes by default (core/kernels/reduce.c); their
     * pure expansion loops first over the kept dimensions
     * (test_reductions_without_atomics) */
    {"sumto_nchw",
     "SumTo",
     {"2, 3, 4, 5", "3, 1, 1", ""},
     "3, 1, 1",
     NULL,
     {"pure"},
     "weir"},
    {"rmean_nchw",
     "ReduceMean",
     {"2, 3, 4, 5", "", ""},
     "1, 3, 1, 1",
     rmean_nhw,
     {"pure"},
     "weir"},
    {"cgi_3x3",
     "ConvGradInput",
     {"2, 4, 7, 6", "4, 3, 3, 3", "2, 3, 9, 8"},
     "2, 3, 9, 8",
     win_3x3,
     {"col2im", "weir"},
     "weir"},
    {"cgi_s2p1",
     "ConvGradInput",
     {"2, 4, 5, 4", "4, 3, 3, 3", "2, 3, 9, 8"},
     "2, 3, 9, 8",
     win_3x3_s2p1,
     {"col2im", "weir"},
     "weir"},
    {"cgi_g2_dil",
     "ConvGradInput",
     {"2, 6, 7, 7", "6, 2, 3, 2", "2, 4, 8, 7"},
     "2, 4, 8, 7",
     win_3x2_g2_dil,
     {"col2im", "weir"},
     "weir"},
    {"cgi_dw",
     "ConvGradInput",
     {"2, 4, 4, 6", "4, 1, 3, 3", "2, 4, 7, 6"},
     "2, 4, 7, 6",
     win_dw_s2,
     {"col2im", "weir"},
     "weir"},
    {"cgf_3x3",
     "ConvGradFilter",
     {"2, 4, 7, 6", "2, 3, 9, 8", "4, 3, 3, 3"},
     "4, 3, 3, 3",
     win_3x3,
     {"im2col", "weir"},
     "weir"},
    {"cgf_s2p1",
     "ConvGradFilter",
     {"2, 4, 5, 4", "2, 3, 9, 8", "4, 3, 3, 3"},
     "4, 3, 3, 3",
     win_3x3_s2p1,
     {"im2col", "weir"},
     "weir"},
    {"cgf_g2_dil",
     "ConvGradFilter",
     {"2, 6, 7, 7", "2, 4, 8, 7", "6, 2, 3, 2"},
     "6, 2, 3, 2",
     win_3x2_g2_dil,
     {"im2col", "weir"},
     "weir"},
    {"cgf_dw",
     "ConvGradFilter",
     {"2, 4, 4, 6", "2, 4, 7, 6", "4, 1, 3, 3"},
     "4, 1, 3, 3",
     win_dw_s2,
     {"im2col", "weir"},
     "weir"},
    /* Weir's kernels (core/kernels/conv-grad.c): unit stride with
     * padding (the implicit col2im), uneven pads, a pad beyond the
     * kernel's reach (the col2im path), 1x1 at stride 2, depthwise at
     * stride 1 and 2, and filter gradients over chunks of images (17x16
     * outputs: two images per GEMM, then one) */
    {"cgi_3x3_p1",
     "ConvGradInput",
     {"3, 5, 9, 7", "5, 3, 3, 3", "3, 3, 9, 7"},
     "3, 3, 9, 7",
     win_3x3_p1,
     {"col2im", "weir"},
     "weir"},
    {"cgi_5x3_uneven",
     "ConvGradInput",
     {"2, 4, 9, 7", "4, 3, 5, 3", "2, 3, 9, 8"},
     "2, 3, 9, 8",
     win_5x3_uneven,
     {"col2im", "weir"},
     "weir"},
    {"cgi_1x1_p1",
     "ConvGradInput",
     {"2, 4, 7, 6", "4, 3, 1, 1", "2, 3, 5, 4"},
     "2, 3, 5, 4",
     win_1x1_p1,
     {"col2im", "weir"},
     "weir"},
    {"cgi_1x1_s2",
     "ConvGradInput",
     {"2, 6, 5, 4", "6, 3, 1, 1", "2, 3, 9, 8"},
     "2, 3, 9, 8",
     win_1x1_s2,
     {"col2im", "weir"},
     "weir"},
    {"cgi_dw_s1",
     "ConvGradInput",
     {"3, 5, 7, 9", "5, 1, 3, 3", "3, 5, 7, 9"},
     "3, 5, 7, 9",
     win_dw5_p1,
     {"col2im", "weir"},
     "weir"},
    /* wide enough for the threads to split the filter's flip (48 x 48 x
     * 3 x 3) and the copy of dy's rows of a chunk (32 x 2 images x 272) */
    {"cgi_3x3_wide",
     "ConvGradInput",
     {"1, 48, 6, 6", "48, 48, 3, 3", "1, 48, 6, 6"},
     "1, 48, 6, 6",
     win_3x3_p1,
     {"col2im", "weir"},
     "weir"},
    /* one GEMM per image, the threads taking whole images (13 images:
     * at least four per thread at 2 and 3 threads, not a multiple of
     * either), 2 groups */
    {"cgi_3x3_by_image",
     "ConvGradInput",
     {"13, 6, 9, 7", "6, 2, 3, 3", "13, 4, 9, 7"},
     "13, 4, 9, 7",
     win_3x3_p1_g2,
     {"col2im", "weir"},
     "weir"},
    /* 16 channels of 4x4: chunks of 32 images per GEMM, then one */
    {"cgi_3x3_chunks",
     "ConvGradInput",
     {"33, 8, 4, 4", "8, 16, 3, 3", "33, 16, 4, 4"},
     "33, 16, 4, 4",
     win_3x3_p1,
     {"col2im", "weir"},
     "weir"},
    /* tr21: 27 channels (three whole panels of the GEMM's A and a part
     * one) of 5x5 maps, chunks of 21 images then 2; and 1x1 maps (every
     * tap but the centre in the padding), one chunk of 5 images */
    {"cgi_5x5_chunks",
     "ConvGradInput",
     {"23, 5, 5, 5", "5, 27, 3, 3", "23, 27, 5, 5"},
     "23, 27, 5, 5",
     win_3x3_p1,
     {"col2im", "weir"},
     "weir"},
    {"cgi_1x1map_chunks",
     "ConvGradInput",
     {"5, 4, 1, 1", "4, 7, 3, 3", "5, 7, 1, 1"},
     "5, 7, 1, 1",
     win_3x3_p1,
     {"col2im", "weir"},
     "weir"},
    /* the col2im path over chunks of images (nbs of them per GEMM, at
     * least 512 columns): 4x4 outputs at stride 2, 32 images then 1;
     * two groups of 5x5 outputs, 21 images then 2; 1x1 at stride 2 with
     * enough channels for the threads to split the copy of dy's rows */
    /* taps17: the chunked input gradient's patches from a framed plane
     * of dy (3x4 maps, 12 input channels per group: 50 images in chunks
     * of 43 and 7), two groups, a 3x2 kernel dilated along the rows,
     * uneven pads */
    {"cgi_chunks_g2_dil",
     "ConvGradInput",
     {"50, 4, 2, 4", "4, 12, 3, 2", "50, 24, 3, 4"},
     "50, 24, 3, 4",
     win_3x2_g2_dil,
     {"col2im", "weir"},
     "weir"},
    {"cgi_s2_chunks",
     "ConvGradInput",
     {"33, 6, 4, 4", "6, 5, 3, 3", "33, 5, 8, 8"},
     "33, 5, 8, 8",
     win_3x3_s2p1,
     {"col2im", "weir"},
     "weir"},
    {"cgi_s2_g2_chunks",
     "ConvGradInput",
     {"23, 6, 5, 5", "6, 2, 3, 3", "23, 4, 9, 9"},
     "23, 4, 9, 9",
     win_3x3_s2p1_g2,
     {"col2im", "weir"},
     "weir"},
    /* tr22: the strided input gradient by phase (cgi_s2p1,
     * cgi_s2_chunks and cgi_s2_g2_chunks take it too): stride 3 x 2 with
     * a 2x3 kernel (one row phase of three meets no tap and is zero; the
     * last input column meets none either; 11x9: phases of 4 and 3 rows,
     * 5 and 4 columns); pads beyond the kernel's reach (the first tap of
     * a phase below its row: col2im instead); and enough channels for the
     * threads to split the sub-filters' copy and the writes into dX */
    {"cgi_phase_s32",
     "ConvGradInput",
     {"3, 4, 4, 4", "4, 5, 2, 3", "3, 5, 11, 9"},
     "3, 5, 11, 9",
     win_2x3_s32,
     {"col2im", "weir"},
     "weir"},
    {"cgi_s2_p3",
     "ConvGradInput",
     {"2, 4, 5, 5", "4, 3, 3, 3", "2, 3, 5, 6"},
     "2, 3, 5, 6",
     win_3x3_s2p3,
     {"col2im", "weir"},
     "weir"},
    {"cgi_phase_wide",
     "ConvGradInput",
     {"6, 72, 7, 7", "72, 64, 3, 3", "6, 64, 14, 14"},
     "6, 64, 14, 14",
     win_3x3_s2p1,
     {"col2im", "weir"},
     "weir"},
    /* tr22: a 1x2 map at stride 2 (the second row phase is empty) */
    {"cgi_phase_1x2map",
     "ConvGradInput",
     {"2, 4, 1, 1", "4, 3, 3, 3", "2, 3, 1, 2"},
     "2, 3, 1, 2",
     win_3x3_s2p1,
     {"col2im", "weir"},
     "weir"},
    {"cgi_1x1_s2_chunks",
     "ConvGradInput",
     {"40, 40, 4, 4", "40, 16, 1, 1", "40, 16, 8, 8"},
     "40, 16, 8, 8",
     win_1x1_s2,
     {"col2im", "weir"},
     "weir"},
    {"cgf_3x3_wide",
     "ConvGradFilter",
     {"3, 32, 17, 16", "3, 2, 17, 16", "32, 2, 3, 3"},
     "32, 2, 3, 3",
     win_3x3_p1,
     {"im2col", "weir"},
     "weir"},
    {"cgf_3x3_chunks",
     "ConvGradFilter",
     {"3, 5, 17, 16", "3, 3, 17, 16", "5, 3, 3, 3"},
     "5, 3, 3, 3",
     win_3x3_p1,
     {"im2col", "weir"},
     "weir"},
    /* the per-tap GEMMs on channels-last x (at least 16 channels each
     * way, maps at most 30% larger padded): one image per chunk (34x32),
     * 4 then 3 images (20x18), a dilated kernel with uneven pads, a
     * batch of one */
    {"cgf_taps_one",
     "ConvGradFilter",
     {"3, 17, 34, 32", "3, 16, 34, 32", "17, 16, 3, 3"},
     "17, 16, 3, 3",
     win_3x3_p1,
     {"im2col", "weir"},
     "weir",
     prep_quarters},
    {"cgf_taps_chunks",
     "ConvGradFilter",
     {"7, 16, 20, 18", "7, 32, 20, 18", "16, 32, 3, 3"},
     "16, 32, 3, 3",
     win_3x3_p1,
     {"im2col", "weir"},
     "weir",
     prep_quarters},
    {"cgf_taps_dil",
     "ConvGradFilter",
     {"2, 20, 35, 33", "2, 16, 36, 34", "20, 16, 3, 3"},
     "20, 16, 3, 3",
     win_3x3_d2_uneven,
     {"im2col", "weir"},
     "weir",
     prep_quarters},
    /* one image (at 2 and 3 threads its row panels are split between
     * the threads), 18 input channels: the last channel panel is partly
     * padding, and so is the last B panel (24 output channels) */
    /* 8x8 maps (padded 56% larger), 5 images in one chunk */
    {"cgf_taps_8x8",
     "ConvGradFilter",
     {"5, 16, 8, 8", "5, 32, 8, 8", "16, 32, 3, 3"},
     "16, 32, 3, 3",
     win_3x3_p1,
     {"im2col", "weir"},
     "weir",
     prep_quarters},
    {"cgf_taps_batch1",
     "ConvGradFilter",
     {"1, 24, 16, 16", "1, 18, 16, 16", "24, 18, 3, 3"},
     "24, 18, 3, 3",
     win_3x3_p1,
     {"im2col", "weir"},
     "weir",
     prep_quarters},
    /* taps17: 64 output channels (two B panels of 32, no one-vector
     * panel), rows of 17 (a 16-pixel block of dy transposed straight into
     * the panel, then one pixel), 20 input channels (a partial channel
     * panel), 3 images; then 49 output channels (panels of 32 and 17) on
     * 12x9 maps, 5 images in chunks of several (slices that end with each
     * image's first 12 padded rows) */
    {"cgf_taps_m64",
     "ConvGradFilter",
     {"3, 64, 18, 17", "3, 20, 18, 17", "64, 20, 3, 3"},
     "64, 20, 3, 3",
     win_3x3_p1,
     {"im2col", "weir"},
     "weir",
     prep_quarters},
    {"cgf_taps_m49",
     "ConvGradFilter",
     {"5, 49, 12, 9", "5, 16, 12, 9", "49, 16, 3, 3"},
     "49, 16, 3, 3",
     win_3x3_p1,
     {"im2col", "weir"},
     "weir",
     prep_quarters},
    /* taps17: im2col from a zero frame holding the plane (planes of at
     * most 1024 framed pixels; here 11x8, stride 2 x 1, dilated, uneven
     * pads, two groups), and the same window on a 50x30 plane (53x31
     * framed: the bounds-tested loop) */
    {"cgf_frame_s21",
     "ConvGradFilter",
     {"3, 6, 4, 7", "3, 4, 9, 7", "6, 2, 3, 2"},
     "6, 2, 3, 2",
     win_3x2_s21_g2_dil,
     {"im2col", "weir"},
     "weir"},
    {"cgf_frame_big",
     "ConvGradFilter",
     {"2, 6, 25, 30", "2, 4, 50, 30", "6, 2, 3, 2"},
     "6, 2, 3, 2",
     win_3x2_s21_g2_dil,
     {"im2col", "weir"},
     "weir"},
    /* tgrad18: 20 x 36 x 3x3 stride 2 on 24x24 (12x12 out): a chunk of
     * 512 pixels would be 4 images, 792 KiB of patches and dY rows in
     * f32, above WEIR_CONV_GRAD_COL_BYTES: 3 images a chunk (5 images:
     * chunks of 3 and 2), 1 in f64 */
    {"cgf_s2_capped",
     "ConvGradFilter",
     {"5, 20, 12, 12", "5, 36, 24, 24", "20, 36, 3, 3"},
     "20, 36, 3, 3",
     win_3x3_s2p1,
     {"im2col", "weir"},
     "weir"},
    {"cgf_5x3_uneven",
     "ConvGradFilter",
     {"2, 4, 9, 7", "2, 3, 9, 8", "4, 3, 5, 3"},
     "4, 3, 5, 3",
     win_5x3_uneven,
     {"im2col", "weir"},
     "weir"},
    {"cgf_1x1_s2",
     "ConvGradFilter",
     {"2, 6, 5, 4", "2, 3, 9, 8", "6, 3, 1, 1"},
     "6, 3, 1, 1",
     win_1x1_s2,
     {"im2col", "weir"},
     "weir"},
    {"cgf_dw_s1",
     "ConvGradFilter",
     {"3, 5, 7, 9", "3, 5, 7, 9", "5, 1, 3, 3"},
     "5, 1, 3, 3",
     win_dw5_p1,
     {"im2col", "weir"},
     "weir"},
    {"mpg_2x2_s2",
     "MaxPoolGrad",
     {"2, 3, 3, 3", "2, 3, 6, 7", "2, 3, 3, 3"},
     "2, 3, 6, 7",
     win_2x2_s2,
     {"direct"},
     "direct",
     prep_2x2_s2},
    {"mpg_3x3_s2p1",
     "MaxPoolGrad",
     {"2, 3, 4, 3", "2, 3, 7, 6", "2, 3, 4, 3"},
     "2, 3, 7, 6",
     win_pool_3x3_s2p1,
     {"direct"},
     "direct",
     prep_3x3_s2p1},
    {"mpg_2x2_dil",
     "MaxPoolGrad",
     {"2, 3, 4, 6", "2, 3, 6, 6", "2, 3, 4, 6"},
     "2, 3, 6, 6",
     win_pool_2x2_dil,
     {"direct"},
     "direct",
     prep_2x2_dil},
    {"gemm_nn",
     "Gemm",
     {"5, 7", "7, 3", ""},
     "5, 3",
     NULL,
     {"blas", "weir"},
     "weir"},
    {"gemm_c2",
     "Gemm",
     {"5, 7", "7, 3", "5, 3"},
     "5, 3",
     NULL,
     {"blas", "weir"},
     "weir"},
    {"gemm_tt_row",
     "Gemm",
     {"7, 5", "3, 7", "1, 3"},
     "5, 3",
     gemm_tt,
     {"blas", "weir"},
     "weir"},
    {"gemm_ta_col",
     "Gemm",
     {"7, 5", "7, 3", "5, 1"},
     "5, 3",
     gemm_ta,
     {"blas", "weir"},
     "weir"},
    {"gemm_tb_vec",
     "Gemm",
     {"5, 7", "3, 7", "3"},
     "5, 3",
     gemm_tb,
     {"blas", "weir"},
     "weir"},
    {"gemm_scalar",
     "Gemm",
     {"5, 7", "7, 3", "1"},
     "5, 3",
     gemm_beta,
     {"blas", "weir"},
     "weir"},
    {"mm_2d",
     "MatMul",
     {"6, 4", "4, 5", ""},
     "6, 5",
     NULL,
     {"blas", "weir"},
     "weir"},
    {"mm_batch",
     "MatMul",
     {"3, 6, 4", "3, 4, 5", ""},
     "3, 6, 5",
     NULL,
     {"blas", "weir"},
     "weir"},
    {"mm_bcast",
     "MatMul",
     {"2, 1, 6, 4", "3, 4, 5", ""},
     "2, 3, 6, 5",
     NULL,
     {"blas", "weir"},
     "weir"},
    /* a batched A times a shared matrix: one GEMM over all the rows */
    {"mm_fold",
     "MatMul",
     {"3, 6, 4", "4, 5", ""},
     "3, 6, 5",
     NULL,
     {"blas", "weir"},
     "weir"},
    {"mm_fold4",
     "MatMul",
     {"2, 3, 5, 4", "4, 7", ""},
     "2, 3, 5, 7",
     NULL,
     {"blas", "weir"},
     "weir"},
    {"mm_vec_a",
     "MatMul",
     {"4", "3, 4, 5", ""},
     "3, 5",
     NULL,
     {"blas", "weir"},
     "weir"},
    {"mm_vec_b",
     "MatMul",
     {"2, 6, 4", "4", ""},
     "2, 6",
     NULL,
     {"blas", "weir"},
     "weir"},
    {"mm_vec_vec",
     "MatMul",
     {"4", "4", ""},
     "",
     NULL,
     {"blas", "weir"},
     "weir"},
    {"conv_3x3",
     "Conv",
     {"2, 3, 9, 8", "4, 3, 3, 3", "4"},
     "2, 4, 7, 6",
     NULL,
     {"im2col", "weir"},
     "weir"},
    {"conv_s2p1",
     "Conv",
     {"2, 3, 9, 8", "4, 3, 3, 3", ""},
     "2, 4, 5, 4",
     conv_s2p1,
     {"im2col", "weir", "stem"},
     "weir"},
    {"conv_dil",
     "Conv",
     {"1, 2, 8, 7", "3, 2, 3, 2", "3"},
     "1, 3, 7, 7",
     conv_dil,
     {"im2col", "weir"},
     "weir"},
    {"conv_g2",
     "Conv",
     {"2, 4, 6, 6", "6, 2, 3, 3", "6"},
     "2, 6, 6, 6",
     conv_g2,
     {"im2col", "weir"},
     "weir"},
    {"conv_1x1",
     "Conv",
     {"2, 5, 4, 3", "6, 5, 1, 1", "6"},
     "2, 6, 4, 3",
     NULL,
     {"im2col", "direct", "weir"},
     "weir"},
    {"conv_dw",
     "Conv",
     {"2, 4, 7, 6", "4, 1, 3, 3", "4"},
     "2, 4, 4, 6",
     conv_dw,
     {"im2col", "direct", "weir"},
     "depthwise"},
    {"conv_dw_s2",
     "Conv",
     {"1, 6, 9, 8", "6, 1, 3, 3", "6"},
     "1, 6, 5, 4",
     conv_dw_s2,
     {"im2col", "direct"},
     "depthwise"},
    {"conv_dw_dil",
     "Conv",
     {"2, 3, 7, 10", "3, 1, 3, 5", ""},
     "2, 3, 7, 3",
     conv_dw_dil,
     {"im2col", "direct"},
     "depthwise"},
};

static void test_cases_f32(void **state) {
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    check_case(*state, &cases[i], WEIR_DTYPE_F32);
}

static void test_cases_f64(void **state) {
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    check_case(*state, &cases[i], WEIR_DTYPE_F64);
}

/* A batched A times a shared matrix B is one GEMM of all the batch's rows
 * (no batch loop); a broadcast A keeps the loop. */
static void test_matmul_fold(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  static const char *const names[] = {"mm_fold", "mm_fold4", "mm_bcast"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    const Case *c = NULL;
    for (guint j = 0; j < G_N_ELEMENTS(cases); j++)
      if (strcmp(cases[j].name, names[i]) == 0)
        c = &cases[j];
    assert_non_null(c);
    g_autoptr(WeirGraph) g = case_graph(c, WEIR_DTYPE_F32);
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s: %s", c->name, err->message);
    gboolean loop = strstr(src, "for (int64_t bi = 0;") != NULL;
    if (loop != (i == 2))
      fail_msg("%s: %s batch loop", c->name, loop ? "a" : "no");
  }
}

/* ConvGradFilter's default takes the per-tap GEMMs exactly where they
 * apply: the cgf_taps_* cases, not the narrow, strided or small-map ones
 * (their results are checked in the cases), nor layers whose partials
 * would be too large. */
static void test_grad_filter_taps(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    const Case *c = &cases[i];
    if (strcmp(c->op, "ConvGradFilter") != 0)
      continue;
    g_autoptr(WeirGraph) g = case_graph(c, WEIR_DTYPE_F32);
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s: %s", c->name, err->message);
    gboolean taps = strstr(src, "|= weir_wconv2d_grad_taps_") != NULL;
    if (taps != g_str_has_prefix(c->name, "cgf_taps_"))
      fail_msg("%s: %s the per-tap GEMMs", c->name, taps ? "takes" : "lacks");
  }
  /* 256 channels each way on 56x56 maps: 9.4 MB of partials for 4
   * images, above WEIR_CONV_GRAD_TAPS_BYTES, so im2col (only compiled
   * here: its results are those of cgf_3x3_wide's path) */
  static const Case big = {
      "cgf_big",
      "ConvGradFilter",
      {"4, 256, 56, 56", "4, 256, 56, 56", "256, 256, 3, 3"},
      "256, 256, 3, 3",
      win_3x3_p1,
      {"im2col", "weir"},
      "weir",
      NULL};
  g_autoptr(WeirGraph) g = case_graph(&big, WEIR_DTYPE_F32);
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  if (!src)
    fail_msg("%s: %s", big.name, err->message);
  assert_null(strstr(src, "|= weir_wconv2d_grad_taps_"));
  assert_non_null(strstr(src, "|= weir_wconv2d_grad_filter_"));
}

/* An explicit choice that does not apply is an error naming the node; the
 * tier-1 expansion registry refuses it too; unknown names are refused. */
static const Case *case_named(const char *name) {
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    if (strcmp(cases[i].name, name) == 0)
      return &cases[i];
  fail_msg("no case '%s'", name);
  return NULL;
}

/* The statement of src that starts with `prefix` (a generated helper's
 * call), up to its ';'. */
static char *call_text(const char *src, const char *prefix) {
  const char *call = strstr(src, prefix);
  assert_non_null(call);
  const char *end = strchr(call, ';');
  assert_non_null(end);
  return g_strndup(call, (gsize)(end - call));
}

/* The filter gradient's chunks of images: enough images for
 * WEIR_CONV_GRAD_DEPTH pixels (4 of cgf_s2_capped's 12x12 outputs) unless
 * the chunk's patches and dY rows would pass WEIR_CONV_GRAD_COL_BYTES: 3
 * images there in f32, 1 in f64 (the chunk size is the helper's argument
 * after the pads). */
static void test_grad_filter_chunks(void **state) {
  (void)state;
  static const struct {
    const char *name;
    WeirDType dt;
    const char *args;
  } want[] = {
      {"cgf_s2_capped", WEIR_DTYPE_F32, ", 1, 2, 2, 1, 1, 1, 1, 3, (int64_t)"},
      {"cgf_s2_capped", WEIR_DTYPE_F64, ", 1, 2, 2, 1, 1, 1, 1, 1, (int64_t)"},
      /* 4 images of 5x4 (7 KiB a chunk): WEIR_CONV_GRAD_DEPTH's count,
       * clamped to the batch of 2 */
      {"cgf_s2p1", WEIR_DTYPE_F32, ", 1, 2, 2, 1, 1, 1, 1, 2, (int64_t)"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
    g_autoptr(GError) err = NULL;
    g_autoptr(WeirGraph) g = case_graph(case_named(want[i].name), want[i].dt);
    /* "weir" is the default in f32 only */
    assert_true(weir_native_set_impl(g, "ConvGradFilter", "weir", NULL, &err));
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s: %s", want[i].name, err->message);
    g_autofree char *text = call_text(src, "|= weir_wconv2d_grad_filter_");
    if (!strstr(text, want[i].args))
      fail_msg("%s: expected '%s' in %s", want[i].name, want[i].args, text);
  }
}

/* The unit-stride input gradient's chunks of images (tr20, tr21): maps
 * smaller than WEIR_CONV_GRAD_DEPTH pixels with at least as many input
 * channels as pixels take chunks of images whatever the L2 cache
 * ($WEIR_HW_CACHES here: 1 KiB and 64 MiB; tr20 took them only where the
 * flipped filter was larger than half of it), others one GEMM per image.
 * Both paths against the interpreter at 1, 2 and 3 threads; the chunk size
 * is the helper's argument after the pads. */
static void test_grad_input_chunks(void **state) {
  static const struct {
    const char *name;
    const char *l2;
    gint64 nb;
  } want[] = {
      /* chunks of 512 pixels: 32 images of 4x4, then 1; 43 of 3x4, then
       * 7; 21 of 5x5, then 2; the 5 of 1x1 at once */
      {"cgi_3x3_chunks", "1024", 32},
      {"cgi_chunks_g2_dil", "1024", 43},
      {"cgi_3x3_chunks", "67108864", 32},
      {"cgi_chunks_g2_dil", "67108864", 43},
      {"cgi_5x5_chunks", "67108864", 21},
      {"cgi_1x1map_chunks", "67108864", 5},
      /* 63 pixels, 2 input channels per group: by image */
      {"cgi_3x3_by_image", "1024", 1},
  };
  g_autofree char *saved = g_strdup(g_getenv("WEIR_HW_CACHES"));
  for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
    g_autoptr(GError) err = NULL;
    g_autofree char *caches = g_strdup_printf("32768,%s,0", want[i].l2);
    g_setenv("WEIR_HW_CACHES", caches, TRUE);
    const Case *c = case_named(want[i].name);
    g_autoptr(WeirGraph) g = case_graph(c, WEIR_DTYPE_F32);
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s: %s", want[i].name, err->message);
    g_autofree char *text = call_text(src, "|= weir_wconv2d_grad_input_");
    g_auto(GStrv) args = g_strsplit(text, ",", -1);
    assert_true(g_strv_length(args) > 19);
    if (g_ascii_strtoll(args[19], NULL, 10) != want[i].nb)
      fail_msg("%s, L2 %s: expected %" G_GINT64_FORMAT " images a GEMM in %s",
               want[i].name, want[i].l2, want[i].nb, text);
    check_case(*state, c, WEIR_DTYPE_F32);
  }
  if (saved)
    g_setenv("WEIR_HW_CACHES", saved, TRUE);
  else
    g_unsetenv("WEIR_HW_CACHES");
}

/* The batch-norm style reductions ([N, C, H, W] -> per channel), expanded,
 * have the kept dimension as their outer, parallel loop: no atomic updates
 * (their results are checked with 1, 2 and 3 threads in the cases). */
static void test_reductions_without_atomics(void **state) {
  (void)state;
  static const char *const names[] = {"sumto_nchw", "rmean_nchw"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autoptr(GError) err = NULL;
    const Case *c = case_named(names[i]);
    g_autoptr(WeirGraph) g = case_graph(c, WEIR_DTYPE_F32);
    assert_true(weir_native_set_impl(g, c->op, "pure", NULL, &err));
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s: %s", names[i], err->message);
    assert_non_null(strstr(src, "#pragma omp parallel for"));
    if (strstr(src, "omp atomic"))
      fail_msg("%s: the generated code has an atomic update", names[i]);
  }
}

static void test_refusals(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g =
      case_graph(case_named("conv_3x3"), WEIR_DTYPE_F32); /* 3x3 */
  assert_true(weir_native_set_impl(g, "Conv", "direct", NULL, &err));
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  assert_null(src);
  assert_non_null(err);
  assert_non_null(strstr(err->message, "conv_3x3"));
  assert_non_null(strstr(err->message, "direct"));
  g_clear_error(&err);
  assert_false(weir_native_set_impl(g, "Conv", "blas", NULL, &err));
  g_clear_error(&err);
  assert_false(weir_native_set_impl(g, "NoSuchOp", "pure", NULL, &err));
  g_clear_error(&err);
  /* Through the expansion registry (what expand-library-node uses). */
  g_autoptr(WeirGraph) h = case_graph(case_named("conv_3x3"), WEIR_DTYPE_F32);
  guint id = 0;
  WeirState *s = g_ptr_array_index(h->states, 0);
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY)
      id = n->id;
  }
  assert_false(weir_expand_node(h, id, "direct", &err));
  g_clear_error(&err);
  assert_true(weir_expand_node(h, id, "im2col", &err));
  WeirNode *n = weir_graph_node(h, id, NULL);
  assert_non_null(n);
  assert_string_equal(weir_node_attr(n, "impl")->s, "im2col");
  /* pure f64 Conv is the default (im2col is for f32 by default) */
  g_autoptr(WeirGraph) d = case_graph(case_named("conv_3x3"), WEIR_DTYPE_F64);
  s = g_ptr_array_index(d->states, 0);
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *x = g_ptr_array_index(s->nodes, k);
    if (x->kind == WEIR_NODE_LIBRARY)
      assert_string_equal(weir_native_default_impl(d, s, x), "pure");
  }
}

static void test_libraries(void **state) {
  (void)state;
  g_auto(GStrv) none = weir_codegen_libraries("int x;\n");
  assert_null(none[0]);
  g_auto(GStrv) libs = weir_codegen_libraries(
      "/* a */\n/* weir-link: openblas m */\nx\n/* weir-link: m -rf z;z */\n");
  assert_string_equal(libs[0], "openblas");
  assert_string_equal(libs[1], "m");
  assert_null(libs[2]);
}

/* The sample models with default implementations match PyTorch. */
static void test_samples(void **state) {
  Fixture *f = *state;
  static const char *const models[] = {"mlp", "lenet", "resnet", "transformer"};
  for (guint i = 0; i < G_N_ELEMENTS(models); i++) {
    g_autoptr(GError) err = NULL;
    g_autofree char *path =
        g_strdup_printf("%s/samples/models/%s.onnx", WEIR_SRCDIR, models[i]);
    g_autofree char *in = g_strdup_printf("%s/samples/models/%s/input_0.pb",
                                          WEIR_SRCDIR, models[i]);
    g_autoptr(WeirTensor) input = weir_tensor_load(in, NULL, &err);
    if (!input)
      fail_msg("%s: %s", in, err->message);
    g_autoptr(GHashTable) shapes = g_hash_table_new_full(
        g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
    GArray *shape0 = g_array_new(FALSE, FALSE, sizeof(gint64));
    g_array_append_vals(shape0, input->shape, input->rank);
    g_hash_table_insert(shapes, (gpointer) "input", shape0);
    WeirOnnxImportOptions opts = {.input_shapes = shapes};
    g_autoptr(WeirGraph) g = weir_onnx_import(path, &opts, &err);
    if (!g)
      fail_msg("%s: %s", models[i], err->message);
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    assert_non_null(src);
    /* every sample has one, on Weir's own GEMM by default */
    assert_non_null(strstr(src, "weir_gemm_f32("));
    g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
    if (!k)
      fail_msg("%s: %s", models[i], err->message);
    g_autoptr(GPtrArray) abi = weir_codegen_arguments(g);
    g_autoptr(GHashTable) args = tensors_new();
    const char *out_name = NULL;
    for (guint a = 0; a < abi->len; a++) {
      const WeirContainer *c = g_ptr_array_index(abi, a);
      gint64 shape[8] = {0};
      for (guint d = 0; d < c->shape->len; d++)
        assert_true(weir_expr_eval(g_ptr_array_index(c->shape, d), NULL,
                                   &shape[d], NULL));
      WeirTensor *t = NULL;
      if (strcmp(c->name, "input") == 0) {
        t = weir_tensor_copy(input);
      } else {
        t = weir_tensor_new(c->dtype, c->shape->len, shape);
        out_name = c->name;
      }
      g_hash_table_replace(args, g_strdup(c->name), t);
    }
    assert_non_null(out_name);
    if (!weir_kernel_run(k, NULL, args, &err))
      fail_msg("%s: %s", models[i], err->message);
    g_autofree char *exp = g_strdup_printf("%s/samples/models/%s/output_0.pb",
                                           WEIR_SRCDIR, models[i]);
    g_autoptr(WeirTensor) want = weir_tensor_load(exp, NULL, &err);
    assert_non_null(want);
    if (!weir_tensor_allclose(g_hash_table_lookup(args, out_name), want, 1e-4,
                              1e-5, NULL, &err))
      fail_msg("%s: %s", models[i], err->message);
  }
}

/* ------------------------------------------- sample models, every choice */

/* Imports samples/models/<name>.onnx with the shape of its reference input
 * and reads that input. */
static WeirGraph *import_model(const char *name, WeirTensor **input) {
  g_autoptr(GError) err = NULL;
  g_autofree char *path =
      g_strdup_printf("%s/samples/models/%s.onnx", WEIR_SRCDIR, name);
  g_autofree char *in =
      g_strdup_printf("%s/samples/models/%s/input_0.pb", WEIR_SRCDIR, name);
  *input = weir_tensor_load(in, NULL, &err);
  if (!*input)
    fail_msg("%s: %s", in, err->message);
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  GArray *shape0 = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_vals(shape0, (*input)->shape, (*input)->rank);
  g_hash_table_insert(shapes, (gpointer) "input", shape0);
  WeirOnnxImportOptions opts = {.input_shapes = shapes};
  WeirGraph *g = weir_onnx_import(path, &opts, &err);
  if (!g)
    fail_msg("%s: %s", name, err->message);
  return g;
}

/* Sets "impl" = impl on the library nodes of op (top level) that the
 * implementation accepts ("pure": on all of them); returns their number. */
static guint choose(WeirGraph *g, const char *op, const char *impl) {
  const WeirNativeImpl *native = weir_native_lookup(op, impl);
  guint count = 0;
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_LIBRARY || strcmp(n->op, op) != 0)
        continue;
      g_autofree char *why = NULL;
      if (native && !native->accepts(g, s, n, &why))
        continue;
      weir_node_set_attr_string(n, "impl", impl);
      count++;
    }
  }
  return count;
}

/* One implementation choice of a model: every Gemm/MatMul/Conv node gets
 * gemm (Gemm and MatMul) or conv (Conv) where that implementation accepts
 * it, "pure" otherwise. */
typedef struct {
  const char *label;
  const char *gemm, *conv;
} Choice;

/* For every sample model and every implementation choice, the compiled
 * program must agree with the interpreter running the pure expansion, with
 * 1 and 2 OpenMP threads; the interpreter agrees with PyTorch. */
static void test_models_every_choice(void **state) {
  Fixture *f = *state;
  static const char *const models[] = {"mlp", "lenet", "resnet", "transformer"};
  static const Choice choices[] = {
      {"pure", "pure", "pure"},     {"blas", "blas", "pure"},
      {"im2col", "pure", "im2col"}, {"direct", "pure", "direct"},
      {"weir", "weir", "weir"},     {"default", NULL, NULL},
  };
  for (guint i = 0; i < G_N_ELEMENTS(models); i++) {
    g_autoptr(GError) err = NULL;
    g_autoptr(WeirTensor) input = NULL;
    g_autoptr(WeirGraph) g = import_model(models[i], &input);
    g_autoptr(GPtrArray) abi = weir_codegen_arguments(g);
    g_autoptr(GHashTable) args = tensors_new();
    const char *out_name = NULL;
    for (guint a = 0; a < abi->len; a++) {
      const WeirContainer *c = g_ptr_array_index(abi, a);
      gint64 shape[8] = {0};
      for (guint d = 0; d < c->shape->len; d++)
        assert_true(weir_expr_eval(g_ptr_array_index(c->shape, d), NULL,
                                   &shape[d], NULL));
      WeirTensor *t = NULL;
      if (strcmp(c->name, "input") == 0) {
        t = weir_tensor_copy(input);
      } else {
        t = weir_tensor_new(c->dtype, c->shape->len, shape);
        out_name = c->name;
      }
      g_hash_table_replace(args, g_strdup(c->name), t);
    }
    assert_non_null(out_name);

    /* the reference: the interpreter on the pure expansion */
    g_autoptr(WeirGraph) pure = weir_graph_copy(g);
    if (!weir_expand_all(pure, NULL, NULL, &err))
      fail_msg("%s: pure expansion: %s", models[i], err->message);
    g_autoptr(GHashTable) ref = copy_args(args);
    if (!weir_interpret(pure, NULL, ref, NULL, &err))
      fail_msg("%s: interpreter: %s", models[i], err->message);
    const WeirTensor *want = g_hash_table_lookup(ref, out_name);
    g_autofree char *exp = g_strdup_printf("%s/samples/models/%s/output_0.pb",
                                           WEIR_SRCDIR, models[i]);
    g_autoptr(WeirTensor) torch = weir_tensor_load(exp, NULL, &err);
    assert_non_null(torch);
    if (!weir_tensor_allclose(want, torch, 1e-4, 1e-5, NULL, &err))
      fail_msg("%s: interpreter vs PyTorch: %s", models[i], err->message);

    guint variants = 0;
    for (guint v = 0; v < G_N_ELEMENTS(choices); v++) {
      const Choice *ch = &choices[v];
      g_autoptr(WeirGraph) h = weir_graph_copy(g);
      if (ch->gemm) {
        /* everything pure, then the choice where it applies */
        choose(h, "Gemm", "pure");
        choose(h, "MatMul", "pure");
        choose(h, "Conv", "pure");
        guint natives = 0;
        if (strcmp(ch->gemm, "pure") != 0)
          natives +=
              choose(h, "Gemm", ch->gemm) + choose(h, "MatMul", ch->gemm);
        if (strcmp(ch->conv, "pure") != 0)
          natives += choose(h, "Conv", ch->conv);
        if (strcmp(ch->label, "pure") != 0 && natives == 0)
          continue; /* the model has no node this implementation takes */
      }
      g_autofree char *src = weir_codegen_c(h, NULL, &err);
      if (!src)
        fail_msg("%s (%s): %s", models[i], ch->label, err->message);
      if (strcmp(ch->label, "pure") == 0)
        assert_null(strstr(src, "cblas_"));
      if (strcmp(ch->label, "blas") == 0 || strcmp(ch->label, "im2col") == 0)
        assert_non_null(strstr(src, "cblas_sgemm"));
      if (strcmp(ch->label, "direct") == 0)
        assert_non_null(strstr(src, "weir_conv2d_"));
      g_autoptr(WeirKernel) k = weir_kernel_compile(h, &f->opts, NULL, &err);
      if (!k)
        fail_msg("%s (%s): %s", models[i], ch->label, err->message);
      variants++;
      for (int threads = 1; threads <= 2; threads++) {
        assert_true(weir_kernel_set_threads(k, threads, NULL));
        g_autoptr(GHashTable) got = copy_args(args);
        WeirTensor *y = g_hash_table_lookup(got, out_name);
        for (gint64 e = 0; e < y->count; e++)
          weir_tensor_set(y, e, 12345.0); /* every element must be written */
        if (!weir_kernel_run(k, NULL, got, &err))
          fail_msg("%s (%s): %s", models[i], ch->label, err->message);
        if (!weir_tensor_allclose(y, want, 1e-4, 1e-5, NULL, &err))
          fail_msg("%s (%s, %d threads): compiled and interpreted differ: %s",
                   models[i], ch->label, threads, err->message);
      }
    }
    print_message("%s: %u implementation choices agree\n", models[i], variants);
    /* pure, blas and the default apply to every sample (each has a Gemm or
     * a MatMul) */
    assert_true(variants >= 3);
  }
}

static int setup(void **state) {
  Fixture *f = fixture_new_shared();
  f->opts.flags = "-O1 -fopenmp -fPIC -shared";
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_free(*state);
  return 0;
}

/* The threading defaults of kernels (weir-runtime.h): after a kernel with
 * OpenMP and OpenBLAS is loaded, idle OpenMP threads wait as the machine
 * allows (spin briefly or sleep at once) and OpenBLAS
 * runs one thread; weir_kernel_set_threads() sets both. */
static void test_threading_defaults(void **state) {
  Fixture *f = *state;
  g_autoptr(GError) err = NULL;
  g_autofree char *path =
      g_strdup_printf("%s/samples/models/mlp.onnx", WEIR_SRCDIR);
  g_autoptr(WeirGraph) g = weir_onnx_import(path, NULL, &err);
  assert_non_null(g);
  /* a kernel that calls OpenBLAS (f32 GEMMs default to Weir's own) */
  assert_true(weir_native_set_impl(g, "Gemm", "blas", NULL, &err));
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("%s", err->message);
  /* the wait default is one of the two, set in the environment, and
   * reported as the one set */
  const char *wait = weir_kernel_openmp_wait();
  assert_non_null(wait);
  if (g_str_has_prefix(wait, "spin ")) {
    /* the rounds of about 50 us, as the sentence says */
    const char *count = g_getenv("GOMP_SPINCOUNT");
    assert_non_null(count);
    guint64 rounds = g_ascii_strtoull(count, NULL, 10);
    assert_in_range(rounds, 300, 100000);
    g_autofree char *said = g_strdup_printf("spin %s rounds (", count);
    assert_true(g_str_has_prefix(wait, said));
    assert_null(g_getenv("OMP_WAIT_POLICY"));
  } else {
    assert_true(g_str_has_prefix(wait, "sleep at once"));
    assert_string_equal(g_getenv("OMP_WAIT_POLICY"), "PASSIVE");
    assert_null(g_getenv("GOMP_SPINCOUNT"));
  }
  /* the rule: the kernel's threads must fit beside the others */
  assert_true(weir_threading_should_spin(0.0, 2, 2));
  assert_true(weir_threading_should_spin(0.2, 2, 2));
  assert_false(weir_threading_should_spin(1.0, 2, 2));
  assert_false(weir_threading_should_spin(0.0, 4, 2));
  assert_true(weir_threading_should_spin(3.0, 1, 4));
  assert_false(weir_threading_should_spin(-1.0, 1, 4));
  assert_false(weir_threading_should_spin(0.0, 1, 1));
  /* the spin in time: rounds of 18 ns (Intel Xeon model 207) and 10 ns */
  assert_int_equal(weir_threading_spin_rounds(18.0, 50000.0), 2778);
  assert_int_equal(weir_threading_spin_rounds(10.0, 50000.0), 5000);
  assert_int_equal(weir_threading_spin_rounds(10.0, 30000.0), 3000);
  /* a preempted calibration (a round of 1 ms) still spins a little, a
   * clock too coarse (a round of 1 ps) not for seconds */
  assert_int_equal(weir_threading_spin_rounds(1e6, 50000.0), 300);
  assert_int_equal(weir_threading_spin_rounds(1e-3, 50000.0), 100000);
  /* unknown: the former fixed count */
  assert_int_equal(weir_threading_spin_rounds(0.0, 50000.0), 3000);
  assert_int_equal(weir_threading_spin_rounds(-1.0, 50000.0), 3000);
  assert_int_equal(weir_threading_spin_rounds(NAN, 50000.0), 3000);
  assert_int_equal(weir_threading_spin_rounds(18.0, 0.0), 3000);
  GModule *blas = g_module_open("libopenblas.so.0", G_MODULE_BIND_LOCAL);
  assert_non_null(blas);
  gpointer get = NULL, parallel = NULL;
  assert_true(g_module_symbol(blas, "openblas_get_num_threads", &get));
  assert_true(g_module_symbol(blas, "openblas_get_parallel", &parallel));
  int (*threads)(void) = (int (*)(void))get;
  /* an OpenBLAS with its own pthreads pool starts with one thread; the
   * OpenMP build follows the OpenMP team and is left alone */
  if (((int (*)(void))parallel)() != 2)
    assert_int_equal(threads(), 1);
  assert_true(weir_kernel_set_threads(k, 2, &err));
  assert_int_equal(threads(), 2);
  assert_true(weir_kernel_set_threads(k, 1, &err));
  assert_int_equal(threads(), 1);
  g_module_close(blas);
}

/* One thread pool (docs/native.md, "Threads"): a kernel with OpenMP links
 * the OpenMP build of OpenBLAS when it is installed, so that its GEMMs run
 * on the kernel's own OpenMP threads; the kernel says so.  A GEMM big
 * enough for OpenBLAS to split among threads, and the residual CNN sample
 * (im2col GEMMs between parallel loops), run with 1, 2 and 4 threads (4:
 * more threads than cores on a small machine) and give the interpreter's
 * result every time.  (The test has no timing: a collapse into busy waiting
 * shows as the test's timeout.) */
static void test_one_thread_pool(void **state) {
  Fixture *f = *state;
  f->opts.cache_dir = f->cache_dir; /* the fixture's own: reads the log */
  g_autoptr(GError) err = NULL;
  static const Case big = {"gemm_big", "Gemm", {"96, 384", "384, 200", "200"},
                           "96, 200",  NULL,   {"blas"},
                           "blas"};
  g_autoptr(WeirGraph) gemm = case_graph(&big, WEIR_DTYPE_F32);
  g_autoptr(WeirTensor) input = NULL;
  g_autoptr(WeirGraph) resnet = import_model("resnet", &input);
  /* OpenBLAS for the GEMMs (the f32 default is Weir's own GEMM, which
   * makes no BLAS call) */
  assert_true(weir_native_set_impl(gemm, "Gemm", "blas", NULL, &err));
  assert_true(weir_native_set_impl(resnet, "Conv", "im2col", NULL, &err));
  assert_true(weir_native_set_impl(resnet, "Gemm", "blas", NULL, &err));
  WeirGraph *graphs[] = {gemm, resnet};
  g_autofree char *omp = weir_compiler_openblas_openmp();
  for (guint i = 0; i < G_N_ELEMENTS(graphs); i++) {
    WeirGraph *g = graphs[i];
    g_autoptr(GHashTable) args = g == gemm ? random_args(g) : tensors_new();
    if (g == resnet) {
      /* the arguments of the compiled code: input and output */
      g_autoptr(GPtrArray) abi = weir_codegen_arguments(g);
      for (guint a = 0; a < abi->len; a++) {
        const WeirContainer *c = g_ptr_array_index(abi, a);
        gint64 shape[8] = {0};
        for (guint d = 0; d < c->shape->len; d++)
          assert_true(weir_expr_eval(g_ptr_array_index(c->shape, d), NULL,
                                     &shape[d], NULL));
        g_hash_table_replace(
            args, g_strdup(c->name),
            strcmp(c->name, "input") == 0
                ? weir_tensor_copy(input)
                : weir_tensor_new(c->dtype, c->shape->len, shape));
      }
    }
    const char *out = g == gemm ? "Y" : "output";
    g_autoptr(GHashTable) ref = copy_args(args);
    g_autoptr(WeirGraph) pure = weir_graph_copy(g);
    if (!weir_expand_all(pure, NULL, NULL, &err) ||
        !weir_interpret(pure, NULL, ref, NULL, &err))
      fail_msg("%s: reference: %s", g->name, err->message);
    const WeirTensor *want = g_hash_table_lookup(ref, out);
    assert_non_null(want);

    g_unlink(f->log);
    g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
    if (!k)
      fail_msg("%s: %s", g->name, err->message);
    g_autofree char *info = weir_kernel_blas_info(k);
    assert_non_null(info);
    print_message("%s: %s\n", g->name, info);
    if (omp) {
      /* linked by path (the compiler ran: a fresh cache per fixture) */
      g_autofree char *log = NULL;
      assert_true(g_file_get_contents(f->log, &log, NULL, NULL));
      assert_non_null(strstr(log, omp));
      assert_non_null(strstr(info, "threads: OpenMP, the kernel's threads"));
    } else {
      print_message("no OpenMP build of OpenBLAS (Debian: libopenblas0-openmp)"
                    ": the one-pool link is not checked\n");
    }
    static const int counts[] = {1, 2, 4};
    for (guint t = 0; t < G_N_ELEMENTS(counts); t++) {
      assert_true(weir_kernel_set_threads(k, counts[t], &err));
      g_autoptr(GHashTable) got = copy_args(args);
      WeirTensor *y = g_hash_table_lookup(got, out);
      for (gint64 e = 0; e < y->count; e++)
        weir_tensor_set(y, e, 12345.0);
      for (int rep = 0; rep < 3; rep++)
        if (!weir_kernel_run(k, NULL, got, &err))
          fail_msg("%s (%d threads): %s", g->name, counts[t], err->message);
      if (!weir_tensor_allclose(y, want, 1e-4, 1e-5, NULL, &err))
        fail_msg("%s (%d threads): compiled and interpreted differ: %s",
                 g->name, counts[t], err->message);
    }
  }
}

/* The tests run as three meson tests (tests/meson.build passes "PART/3"),
 * which meson runs beside each other: part 1 and part 2 are the tests named
 * here, part 0 every other one (so a new test lands in part 0). */
#define NATIVE_PARTS 3
static const char *const native_parts[NATIVE_PARTS][3] = {
    [1] = {"test_cases_f32", NULL},
    [2] = {"test_cases_f64", "test_models_every_choice", NULL},
};

static guint native_part(const char *name) {
  for (guint p = 1; p < NATIVE_PARTS; p++)
    for (guint i = 0; native_parts[p][i]; i++)
      if (strcmp(native_parts[p][i], name) == 0)
        return p;
  return 0;
}

/* test-native [PART/3]: every test, or those of one part. */
int main(int argc, char **argv) {
  unsigned part;
  gboolean all;
  if (!test_parts_arg(argc, argv, NATIVE_PARTS, &part, &all))
    return 2;
  /* the defaults under test apply only when the user chose nothing; they
   * are set when the first kernel is loaded */
  g_unsetenv("OMP_WAIT_POLICY");
  g_unsetenv("GOMP_SPINCOUNT");
  g_unsetenv("OPENBLAS_NUM_THREADS");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_threading_defaults, setup, teardown),
      cmocka_unit_test_setup_teardown(test_one_thread_pool, setup, teardown),
      cmocka_unit_test(test_libraries),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_matmul_fold),
      cmocka_unit_test(test_grad_filter_taps),
      cmocka_unit_test(test_grad_filter_chunks),
      cmocka_unit_test_setup_teardown(test_grad_input_chunks, setup, teardown),
      cmocka_unit_test(test_reductions_without_atomics),
      cmocka_unit_test_setup_teardown(test_cases_f32, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cases_f64, setup, teardown),
      cmocka_unit_test_setup_teardown(test_samples, setup, teardown),
      cmocka_unit_test_setup_teardown(test_models_every_choice, setup,
                                      teardown),
  };
  struct CMUnitTest run[G_N_ELEMENTS(tests)];
  guint n = 0;
  for (guint i = 0; i < G_N_ELEMENTS(tests); i++)
    if (all || native_part(tests[i].name) == part)
      run[n++] = tests[i];
  return _cmocka_run_group_tests("native", run, n, NULL, NULL);
}
