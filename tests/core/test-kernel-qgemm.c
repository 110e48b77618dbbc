/* test-kernel-qgemm.c — the native implementation "weir" of MatMulInteger,
 * QLinearMatMul, ConvInteger, QLinearConv and QLinearMatMulBias (the bias
 * per column in the requantizing store) (Weir's int8 GEMM,
 * core/kernels/gemm-int8.c) against the reference interpreter running the
 * pure expansions of the same program, bit for bit.
 *
 * One program holds a node per case (their own containers): u8 and i8
 * operands in every combination, zero points absent, 0, scalar, per row of
 * A, per column of B, per output channel of W; per-tensor and per-column /
 * per-channel scales; sizes that are not multiples of any block (and, with
 * $WEIR_HW_CACHES giving a 16 KiB L2, products larger than one block in M
 * and N, so the blocking loops run); convolutions with padding (filled with
 * the zero point), strides, dilation, a bias, batch 2, a 1x1 kernel.  The
 * default implementation of every node must be "weir", the generated code
 * must call the kernel on the path the ISA gives (VNNI, AVX2, portable:
 * every one this CPU runs, through $WEIR_ISA), and the outputs must equal
 * the interpreter's at 1 and 2 threads.  Grouped convolutions and per-row
 * input scales are left to the pure expansion.
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

/* zero-point kinds */
enum { ZP_NONE, ZP_ZERO, ZP_SCALAR, ZP_VECTOR };

typedef struct {
  const char *op;
  WeirDType a, b, y; /* y: the QLinear output's type */
  int za, zb;        /* zero points of A (X) and B (W) */
  gboolean per_channel_scale;
  /* matmul: batch (0: rank 2), m, k, n; conv: n, c, h, w, m, kh, kw,
   * strides, pads (top, left, bottom, right), dilations */
  gint64 batch, m, k, n;
  gint64 cn, cc, ch, cw, cm, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  gboolean bias;
} Case;

#define U8 WEIR_DTYPE_U8
#define I8 WEIR_DTYPE_I8
#define I32 WEIR_DTYPE_I32

static const Case cases[] = {
    /* MatMulInteger */
    {"MatMulInteger", U8, U8, I32, ZP_SCALAR, ZP_VECTOR, FALSE, 0, 37, 29, 53},
    {"MatMulInteger", I8, I8, I32, ZP_NONE, ZP_NONE, FALSE, 2, 7, 19, 45},
    {"MatMulInteger", U8, I8, I32, ZP_VECTOR, ZP_SCALAR, FALSE, 0, 13, 64, 100},
    {"MatMulInteger", I8, U8, I32, ZP_ZERO, ZP_ZERO, FALSE, 0, 1, 5, 3},
    /* larger than one block in M and N with a 16 KiB L2 */
    {"MatMulInteger", U8, I8, I32, ZP_SCALAR, ZP_SCALAR, FALSE, 0, 150, 128,
     230},
    /* QLinearMatMul */
    {"QLinearMatMul", U8, U8, U8, ZP_SCALAR, ZP_SCALAR, FALSE, 0, 29, 37, 50},
    {"QLinearMatMul", I8, I8, I8, ZP_SCALAR, ZP_VECTOR, TRUE, 0, 9, 130, 67},
    {"QLinearMatMul", U8, I8, U8, ZP_ZERO, ZP_ZERO, TRUE, 2, 5, 33, 17},
    /* ConvInteger */
    {"ConvInteger",
     U8,
     U8,
     I32,
     ZP_SCALAR,
     ZP_VECTOR,
     FALSE,
     0,
     0,
     0,
     0,
     2,
     3,
     9,
     11,
     5,
     3,
     3,
     1,
     1,
     1,
     1,
     1,
     1,
     1,
     1},
    {"ConvInteger",
     I8,
     I8,
     I32,
     ZP_NONE,
     ZP_NONE,
     FALSE,
     0,
     0,
     0,
     0,
     1,
     2,
     8,
     7,
     3,
     2,
     2,
     1,
     1,
     0,
     0,
     0,
     0,
     1,
     1},
    /* QLinearConv */
    {"QLinearConv",
     U8,
     I8,
     U8,
     ZP_SCALAR,
     ZP_ZERO,
     TRUE,
     0,
     0,
     0,
     0,
     1,
     4,
     13,
     10,
     19,
     3,
     2,
     2,
     1,
     1,
     0,
     2,
     1,
     1,
     1,
     TRUE},
    {"QLinearConv",
     I8,
     I8,
     I8,
     ZP_SCALAR,
     ZP_VECTOR,
     TRUE,
     0,
     0,
     0,
     0,
     2,
     3,
     12,
     12,
     7,
     3,
     3,
     1,
     1,
     2,
     2,
     2,
     2,
     2,
     2,
     FALSE},
    {"QLinearConv",
     U8,
     U8,
     U8,
     ZP_SCALAR,
     ZP_SCALAR,
     FALSE,
     0,
     0,
     0,
     0,
     1,
     16,
     6,
     5,
     33,
     1,
     1,
     1,
     1,
     0,
     0,
     0,
     0,
     1,
     1,
     TRUE},
    /* QLinearMatMulBias (the quantize transformation's fully connected
     * layers): the bias per column added before the requantization */
    {.op = "QLinearMatMulBias",
     .a = U8,
     .b = I8,
     .y = U8,
     .za = ZP_SCALAR,
     .zb = ZP_ZERO,
     .per_channel_scale = FALSE,
     .m = 37,
     .k = 50,
     .n = 29,
     .bias = TRUE},
    {.op = "QLinearMatMulBias",
     .a = I8,
     .b = I8,
     .y = I8,
     .za = ZP_SCALAR,
     .zb = ZP_VECTOR,
     .per_channel_scale = TRUE,
     .batch = 2,
     .m = 9,
     .k = 33,
     .n = 70,
     .bias = TRUE},
    /* larger than one block in M and N with a 16 KiB L2 */
    {.op = "QLinearMatMulBias",
     .a = U8,
     .b = I8,
     .y = U8,
     .za = ZP_SCALAR,
     .zb = ZP_SCALAR,
     .per_channel_scale = TRUE,
     .m = 150,
     .k = 128,
     .n = 230,
     .bias = TRUE},
};

static gboolean is_conv(const Case *c) {
  return strstr(c->op, "Conv") != NULL;
}

static gboolean is_qlinear(const Case *c) {
  return g_str_has_prefix(c->op, "QLinear");
}

static char *shape_text(guint rank, const gint64 *d) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < rank; i++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? ", " : "", d[i]);
  return g_string_free(s, FALSE);
}

/* Adds input `name` (k, shape) of case k on connector conn. */
static void add_in(WeirGraph *g, WeirState *s, WeirNode *lib, guint k,
                   const char *name, WeirDType t, guint rank, const gint64 *d,
                   guint conn) {
  g_autofree char *nm = g_strdup_printf("%s%u", name, k);
  g_autofree char *sh = rank ? shape_text(rank, d) : g_strdup("1");
  g_autofree char *cn = g_strdup_printf("in%u", conn);
  add_port(g, s, lib, nm, t, sh, cn, TRUE);
}

static gint64 out_size(gint64 in, gint64 k, gint64 st, gint64 p0, gint64 p1,
                       gint64 d) {
  return (in + p0 + p1 - d * (k - 1) - 1) / st + 1;
}

static WeirNode *add_case(WeirGraph *g, WeirState *s, guint k, const Case *c,
                          gint64 group) {
  g_autoptr(GError) err = NULL;
  gboolean q = is_qlinear(c), conv = is_conv(c);
  /* connectors: QLinear (a, as, az, b, bs, bz, ys, yz [, B]); Integer
   * (a, b, az, bz) */
  guint ca = 0, cas = 1, caz = q ? 2 : 2, cb = q ? 3 : 1, cbs = 4,
        cbz = q ? 5 : 3, cys = 6, cyz = 7, cbias = 8;
  guint n_in = q ? (c->bias ? 9 : 8) : (c->zb != ZP_NONE ? 4 : c->za ? 3 : 2);
  const char *ins[10] = {NULL};
  char names[10][8];
  for (guint i = 0; i < n_in; i++) {
    g_snprintf(names[i], sizeof names[i], "in%u", i);
    ins[i] = names[i];
  }
  const char *outs[] = {"out0", NULL};
  g_autofree char *label = g_strdup_printf("n%u", k);
  WeirNode *lib = weir_state_add_library(g, s, label, c->op, ins, outs);
  gint64 ad[4], bd[4], yd[4];
  guint ar, br = conv ? 4 : 2, yr;
  gint64 rows, cols; /* extent of A's zero point, of B's */
  if (conv) {
    ar = yr = 4;
    gint64 oh = out_size(c->ch, c->kh, c->sh, c->pt, c->pb, c->dh);
    gint64 ow = out_size(c->cw, c->kw, c->sw, c->pl, c->pr, c->dw);
    gint64 x[4] = {c->cn, c->cc, c->ch, c->cw},
           w[4] = {c->cm, c->cc / group, c->kh, c->kw},
           y[4] = {c->cn, c->cm, oh, ow};
    memcpy(ad, x, sizeof x);
    memcpy(bd, w, sizeof w);
    memcpy(yd, y, sizeof y);
    rows = 1;
    cols = c->cm;
    gint64 st[2] = {c->sh, c->sw}, di[2] = {c->dh, c->dw},
           pads[4] = {c->pt, c->pl, c->pb, c->pr}, ks[2] = {c->kh, c->kw};
    weir_node_set_attr_ints(lib, "strides", st, 2);
    weir_node_set_attr_ints(lib, "dilations", di, 2);
    weir_node_set_attr_ints(lib, "pads", pads, 4);
    weir_node_set_attr_ints(lib, "kernel_shape", ks, 2);
    if (group > 1)
      weir_node_set_attr_int(lib, "group", group);
  } else {
    ar = yr = c->batch ? 3 : 2;
    guint o = c->batch ? 1 : 0;
    ad[0] = yd[0] = c->batch;
    ad[o] = yd[o] = c->m;
    ad[o + 1] = c->k;
    yd[o + 1] = c->n;
    bd[0] = c->k;
    bd[1] = c->n;
    rows = c->m;
    cols = c->n;
  }
  add_in(g, s, lib, k, "A", c->a, ar, ad, ca);
  add_in(g, s, lib, k, "B", c->b, br, bd, cb);
  if (c->za != ZP_NONE)
    add_in(g, s, lib, k, "AZ", c->a, c->za == ZP_VECTOR ? 1 : 0, &rows, caz);
  if (c->zb != ZP_NONE)
    add_in(g, s, lib, k, "BZ", c->b, c->zb == ZP_VECTOR ? 1 : 0, &cols, cbz);
  if (q) {
    add_in(g, s, lib, k, "AS", WEIR_DTYPE_F32, 0, NULL, cas);
    add_in(g, s, lib, k, "BS", WEIR_DTYPE_F32, c->per_channel_scale ? 1 : 0,
           &cols, cbs);
    add_in(g, s, lib, k, "YS", WEIR_DTYPE_F32, 0, NULL, cys);
    add_in(g, s, lib, k, "YZ", c->y, 0, NULL, cyz);
    if (c->bias)
      add_in(g, s, lib, k, "BIAS", WEIR_DTYPE_I32, 1, &cols, cbias);
  }
  g_autofree char *yn = g_strdup_printf("Y%u", k);
  g_autofree char *ys = shape_text(yr, yd);
  add_port(g, s, lib, yn, q ? c->y : WEIR_DTYPE_I32, ys, "out0", FALSE);
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", label, err->message);
  return lib;
}

/* Random operands over the whole u8 / i8 range, scales giving outputs
 * spread over the output type's range (with some saturation), small
 * biases. */
static void fill_case(GHashTable *args, guint k, const Case *c, GRand *r) {
  g_autofree char *an = g_strdup_printf("A%u", k),
                  *bn = g_strdup_printf("B%u", k),
                  *azn = g_strdup_printf("AZ%u", k),
                  *bzn = g_strdup_printf("BZ%u", k),
                  *asn = g_strdup_printf("AS%u", k),
                  *bsn = g_strdup_printf("BS%u", k),
                  *ysn = g_strdup_printf("YS%u", k),
                  *yzn = g_strdup_printf("YZ%u", k),
                  *bin = g_strdup_printf("BIAS%u", k);
  const char *ints[] = {an, bn, azn, bzn, yzn};
  for (guint i = 0; i < G_N_ELEMENTS(ints); i++) {
    WeirTensor *t = g_hash_table_lookup(args, ints[i]);
    if (!t)
      continue;
    gboolean zero =
        (i == 2 && c->za == ZP_ZERO) || (i == 3 && c->zb == ZP_ZERO);
    for (gint64 e = 0; e < t->count; e++) {
      double v = zero                        ? 0
                 : t->dtype == WEIR_DTYPE_U8 ? g_rand_int_range(r, 0, 256)
                                             : g_rand_int_range(r, -128, 128);
      weir_tensor_set(t, e, v);
    }
  }
  WeirTensor *bias = g_hash_table_lookup(args, bin);
  for (gint64 e = 0; bias && e < bias->count; e++)
    weir_tensor_set(bias, e, g_rand_int_range(r, -20000, 20000));
  WeirTensor *as = g_hash_table_lookup(args, asn);
  if (!as)
    return;
  WeirTensor *bs = g_hash_table_lookup(args, bsn);
  WeirTensor *ys = g_hash_table_lookup(args, ysn);
  gint64 depth = is_conv(c) ? c->cc * c->kh * c->kw : c->k;
  weir_tensor_set(as, 0, 0.02);
  for (gint64 e = 0; e < bs->count; e++)
    weir_tensor_set(bs, e, 0.001 + 0.002 * g_rand_double(r));
  /* |acc| about sqrt(depth) * 74^2: to about 60 output steps */
  weir_tensor_set(ys, 0, 0.02 * 0.002 * sqrt((double)depth) * 5400.0 / 60.0);
}

/* The arguments of g's first nodes cases (transfer full) and, in *ref, the
 * interpreter's results on the pure expansion. */
static GHashTable *reference(WeirGraph *g, guint nodes, GHashTable **ref) {
  g_autoptr(GError) err = NULL;
  GRand *r = g_rand_new_with_seed(18);
  GHashTable *args = random_args(g, 11);
  for (guint k = 0; k < nodes; k++)
    fill_case(args, k, &cases[k], r);
  g_rand_free(r);
  *ref = copy_args(args);
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("pure expansion: %s", err->message);
  if (!weir_interpret(pure, NULL, *ref, NULL, &err))
    fail_msg("interpreter: %s", err->message);
  return args;
}

static void run_program(WeirGraph *g, guint nodes, const char *path,
                        GHashTable *args, GHashTable *ref) {
  g_autoptr(GError) err = NULL;
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  if (!src)
    fail_msg("%s", err->message);
  g_autofree char *mark = g_strdup_printf("weir (int8 GEMM, %s)", path);
  for (guint k = 0; k < nodes; k++)
    check_mark(src, path, k, mark, "");
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
        weir_tensor_set(y, e, 77); /* every element must be written */
    }
    if (!weir_kernel_run(kern, NULL, got, &err))
      fail_msg("%s", err->message);
    for (guint n = 0; n < nodes; n++) {
      g_autofree char *yn = g_strdup_printf("Y%u", n);
      const WeirTensor *a = g_hash_table_lookup(got, yn),
                       *b = g_hash_table_lookup(ref, yn);
      assert_int_equal(weir_tensor_nbytes(a), weir_tensor_nbytes(b));
      if (memcmp(a->data, b->data, weir_tensor_nbytes(a)) != 0) {
        for (gint64 e = 0; e < a->count; e++)
          if (weir_tensor_get(a, e) != weir_tensor_get(b, e))
            fail_msg("%s, node n%u (%s, %d threads): element %" G_GINT64_FORMAT
                     " is %g, the interpreter says %g",
                     path, n, cases[n].op, threads, e, weir_tensor_get(a, e),
                     weir_tensor_get(b, e));
      }
    }
    /* the requantized outputs are not all saturated */
    const WeirTensor *y5 = g_hash_table_lookup(got, "Y5");
    guint mid = 0;
    for (gint64 e = 0; e < y5->count; e++)
      mid += weir_tensor_get(y5, e) > 0 && weir_tensor_get(y5, e) < 255;
    assert_true(mid > y5->count / 2);
  }
  fixture_free(f);
}

static void test_qgemm(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  /* a 16 KiB L2: blocks of about a hundred columns and 64 rows at depth
   * 128, so the loops over blocks run at these sizes */
  g_setenv("WEIR_HW_CACHES", "32768,16384,1048576", TRUE);
  g_autoptr(WeirGraph) g = weir_graph_new("qgemm");
  WeirState *s = weir_graph_add_state(g, "main");
  guint nodes = G_N_ELEMENTS(cases);
  for (guint k = 0; k < nodes; k++)
    add_case(g, s, k, &cases[k], 1);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY)
      assert_string_equal(weir_native_default_impl(g, s, n), "weir");
  }
  g_autoptr(GHashTable) ref = NULL;
  g_autoptr(GHashTable) args = reference(g, nodes, &ref);
  WeirHwIsa list[3];
  guint n_isa = isas(list);
  for (guint i = 0; i < n_isa; i++) {
    g_setenv("WEIR_ISA", weir_hw_isa_name(list[i]), TRUE);
    g_autoptr(WeirHwProfile) hw = weir_hw_detect();
    const char *path = hw->int8_dot                  ? "avx512-vnni"
                       : hw->isa >= WEIR_HW_ISA_AVX2 ? "avx2"
                                                     : "portable";
    run_program(g, nodes, path, args, ref);
  }
  g_unsetenv("WEIR_ISA");
  g_unsetenv("WEIR_HW_CACHES");
}

/* $WEIR_HW_VNNI=0 hides VNNI: the AVX2 path on an AVX-512 machine. */
static void test_vnni_off(void **state) {
  (void)state;
  g_autoptr(WeirHwProfile) hw0 = weir_hw_detect();
  if (!hw0->int8_dot)
    skip();
  g_setenv("WEIR_HW_VNNI", "0", TRUE);
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  assert_false(hw->int8_dot);
  assert_int_equal(hw->isa, WEIR_HW_ISA_AVX512);
  g_autoptr(WeirGraph) g = weir_graph_new("vnni_off");
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < 6; k++)
    add_case(g, s, k, &cases[k], 1);
  g_autoptr(GHashTable) ref = NULL;
  g_autoptr(GHashTable) args = reference(g, 6, &ref);
  run_program(g, 6, "avx2", args, ref);
  g_unsetenv("WEIR_HW_VNNI");
}

/* Grouped convolutions and per-row input scales stay with the pure
 * expansion. */
static void test_refusals(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("refused");
  WeirState *s = weir_graph_add_state(g, "main");
  Case grouped = cases[9];
  grouped.cc = 4;
  grouped.cm = 4;
  WeirNode *gr = add_case(g, s, 0, &grouped, 2);
  assert_string_equal(weir_native_default_impl(g, s, gr), "pure");
  const WeirNativeImpl *ni = weir_native_lookup("ConvInteger", "weir");
  assert_non_null(ni);
  g_autofree char *reason = NULL;
  assert_false(ni->accepts(g, s, gr, &reason));
  assert_non_null(strstr(reason, "grouped"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_qgemm),
      cmocka_unit_test(test_vnni_off),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
