/* test-quant.c — the integer and quantized products (MatMulInteger,
 * ConvInteger, QLinearMatMul, Weir's QLinearMatMulBias) and QuantizeLinear
 * to i8: their expansions
 * run by the interpreter against references written here, on the whole
 * range of u8 / i8 values, per-row / per-column / per-channel zero points,
 * ties of the requantization (rounded to even) and saturation. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "weir-expand.h"
#include "weir-graph.h"
#include "weir-interp.h"
#include "weir-ops.h"
#include "weir-tensor.h"
#include "weir-validate.h"

typedef struct {
  WeirDType dtype;
  const char *shape; /* NULL: the optional input is omitted */
} In;

/* One library node `op` reading X0.. (ins) and writing Y. */
static WeirGraph *op_graph(const char *op, const In *ins, guint n_in,
                           WeirDType ydt, const char *yshape,
                           WeirNode **lib_out) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new("quant");
  WeirState *s = weir_graph_add_state(g, "main");
  g_autoptr(GPtrArray) conns = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < n_in; k++)
    if (ins[k].shape)
      g_ptr_array_add(conns, g_strdup_printf("in%u", k));
  g_ptr_array_add(conns, NULL);
  const char *outs[] = {"out0", NULL};
  WeirNode *lib = weir_state_add_library(
      g, s, "q", op, (const char *const *)conns->pdata, outs);
  for (guint k = 0; k < n_in; k++) {
    if (!ins[k].shape)
      continue;
    g_autofree char *name = g_strdup_printf("X%u", k);
    g_autofree char *conn = g_strdup_printf("in%u", k);
    WeirContainer *c =
        weir_graph_add_array(g, name, ins[k].dtype, ins[k].shape, FALSE, &err);
    if (!c)
      fail_msg("container %s: %s", name, err->message);
    g_autoptr(WeirSubset) full = weir_container_full_subset(c);
    g_autofree char *sub = weir_subset_to_string(full);
    WeirNode *a = weir_state_add_access(g, s, name);
    if (!weir_state_add_memlet(g, s, a->id, NULL, lib->id, conn, name, sub,
                               &err))
      fail_msg("memlet: %s", err->message);
  }
  WeirContainer *y = weir_graph_add_array(g, "Y", ydt, yshape, FALSE, &err);
  if (!y)
    fail_msg("container Y: %s", err->message);
  g_autoptr(WeirSubset) full = weir_container_full_subset(y);
  g_autofree char *sub = weir_subset_to_string(full);
  WeirNode *ya = weir_state_add_access(g, s, "Y");
  if (!weir_state_add_memlet(g, s, lib->id, "out0", ya->id, NULL, "Y", sub,
                             &err))
    fail_msg("memlet: %s", err->message);
  *lib_out = lib;
  return g;
}

/* Runs the schema's inference on the library node of g from its input
 * containers X0..; on success checks dtype and shape against Y. */
static gboolean infer_graph(WeirGraph *g, GError **error) {
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirNode *lib = NULL;
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY)
      lib = n;
  }
  assert_non_null(lib);
  const WeirOpInfo *info = weir_op_lookup(lib->op);
  assert_non_null(info);
  WeirOpValue in[9], out[1];
  memset(in, 0, sizeof in);
  memset(out, 0, sizeof out);
  guint n_in = 0;
  for (guint k = 0; k < G_N_ELEMENTS(in); k++) {
    g_autofree char *name = g_strdup_printf("X%u", k);
    WeirContainer *c = weir_graph_container(g, name);
    if (!c)
      continue;
    in[k].present = TRUE;
    in[k].dtype = c->dtype;
    in[k].rank = c->shape->len;
    in[k].shape = (WeirExpr **)c->shape->pdata;
    n_in = k + 1;
  }
  WeirOpInferContext ctx = {lib, n_in, in, 1, out, NULL};
  if (!info->infer(&ctx, error))
    return FALSE;
  WeirContainer *y = weir_graph_container(g, "Y");
  assert_int_equal(out[0].dtype, y->dtype);
  assert_int_equal(out[0].rank, y->shape->len);
  for (guint d = 0; d < out[0].rank; d++)
    assert_true(weir_expr_equal(out[0].shape[d], y->shape->pdata[d]));
  weir_op_value_clear(&out[0]);
  return TRUE;
}

/* Infers, expands and interprets g with the given inputs; returns Y. */
static WeirTensor *run(WeirGraph *g, WeirTensor **inputs, guint n_in) {
  g_autoptr(GError) err = NULL;
  if (!infer_graph(g, &err))
    fail_msg("infer: %s", err->message);
  if (!weir_expand_all(g, NULL, NULL, &err))
    fail_msg("expand: %s", err->message);
  if (!weir_graph_validate(g, &err))
    fail_msg("validate: %s", err->message);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  for (guint k = 0; k < n_in; k++)
    if (inputs[k])
      g_hash_table_insert(args, g_strdup_printf("X%u", k),
                          weir_tensor_copy(inputs[k]));
  WeirContainer *yc = weir_graph_container(g, "Y");
  gint64 shape[8];
  for (guint d = 0; d < yc->shape->len; d++)
    assert_true(weir_expr_is_const(yc->shape->pdata[d], &shape[d]));
  WeirTensor *y = weir_tensor_new(yc->dtype, yc->shape->len, shape);
  g_hash_table_insert(args, g_strdup("Y"), y);
  if (!weir_interpret(g, NULL, args, NULL, &err))
    fail_msg("interpret: %s", err->message);
  return weir_tensor_copy(y);
}

/* A tensor of dtype whose elements cycle through the dtype's whole range
 * (u8: 0..255, i8: -128..127) in a scrambled order. */
static WeirTensor *full_range(WeirDType dt, guint rank, const gint64 *shape,
                              guint salt) {
  WeirTensor *t = weir_tensor_new(dt, rank, shape);
  for (gint64 i = 0; i < t->count; i++) {
    gint64 v = (i * 97 + salt * 31) % 256;
    weir_tensor_set(t, i, dt == WEIR_DTYPE_I8 ? (double)(v - 128) : (double)v);
  }
  return t;
}

static WeirTensor *values(WeirDType dt, guint rank, const gint64 *shape,
                          const double *v) {
  WeirTensor *t = weir_tensor_new(dt, rank, shape);
  for (gint64 i = 0; i < t->count; i++)
    weir_tensor_set(t, i, v[i]);
  return t;
}

/* MatMulInteger: u8 A with a zero point per row, i8 B with a scalar one. */
static void test_matmul_integer(void **state) {
  (void)state;
  const gint64 sa[] = {3, 40}, sb[] = {40, 5}, sza[] = {3}, szb[] = {1};
  g_autoptr(WeirTensor) a = full_range(WEIR_DTYPE_U8, 2, sa, 1);
  g_autoptr(WeirTensor) b = full_range(WEIR_DTYPE_I8, 2, sb, 2);
  const double za_v[] = {0, 128, 255}, zb_v[] = {-7};
  g_autoptr(WeirTensor) za = values(WEIR_DTYPE_U8, 1, sza, za_v);
  g_autoptr(WeirTensor) zb = values(WEIR_DTYPE_I8, 1, szb, zb_v);
  const In ins[] = {{WEIR_DTYPE_U8, "3, 40"},
                    {WEIR_DTYPE_I8, "40, 5"},
                    {WEIR_DTYPE_U8, "3"},
                    {WEIR_DTYPE_I8, "1"}};
  WeirNode *lib;
  g_autoptr(WeirGraph) g =
      op_graph("MatMulInteger", ins, 4, WEIR_DTYPE_I32, "3, 5", &lib);
  WeirTensor *inputs[] = {a, b, za, zb};
  g_autoptr(WeirTensor) y = run(g, inputs, 4);
  for (gint64 i = 0; i < 3; i++)
    for (gint64 j = 0; j < 5; j++) {
      gint64 acc = 0;
      for (gint64 k = 0; k < 40; k++)
        acc += ((gint64)weir_tensor_get(a, i * 40 + k) - (gint64)za_v[i]) *
               ((gint64)weir_tensor_get(b, k * 5 + j) - (gint64)zb_v[0]);
      assert_int_equal(((gint32 *)y->data)[i * 5 + j], acc);
    }
}

/* ConvInteger: padding reads the zero point (0 after the shift); w's zero
 * point per output channel. */
static void test_conv_integer(void **state) {
  (void)state;
  const gint64 sx[] = {1, 2, 4, 4}, sw[] = {3, 2, 2, 2}, s1[] = {1}, s3[] = {3};
  g_autoptr(WeirTensor) x = full_range(WEIR_DTYPE_U8, 4, sx, 3);
  g_autoptr(WeirTensor) w = full_range(WEIR_DTYPE_U8, 4, sw, 4);
  const double zx_v[] = {9}, zw_v[] = {1, 100, 250};
  g_autoptr(WeirTensor) zx = values(WEIR_DTYPE_U8, 1, s1, zx_v);
  g_autoptr(WeirTensor) zw = values(WEIR_DTYPE_U8, 1, s3, zw_v);
  const In ins[] = {{WEIR_DTYPE_U8, "1, 2, 4, 4"},
                    {WEIR_DTYPE_U8, "3, 2, 2, 2"},
                    {WEIR_DTYPE_U8, "1"},
                    {WEIR_DTYPE_U8, "3"}};
  WeirNode *lib;
  g_autoptr(WeirGraph) g =
      op_graph("ConvInteger", ins, 4, WEIR_DTYPE_I32, "1, 3, 5, 5", &lib);
  const gint64 pads[] = {1, 1, 1, 1};
  weir_node_set_attr_ints(lib, "pads", pads, 4);
  WeirTensor *inputs[] = {x, w, zx, zw};
  g_autoptr(WeirTensor) y = run(g, inputs, 4);
  for (gint64 m = 0; m < 3; m++)
    for (gint64 oh = 0; oh < 5; oh++)
      for (gint64 ow = 0; ow < 5; ow++) {
        gint64 acc = 0;
        for (gint64 c = 0; c < 2; c++)
          for (gint64 kh = 0; kh < 2; kh++)
            for (gint64 kw = 0; kw < 2; kw++) {
              gint64 ih = oh + kh - 1, iw = ow + kw - 1;
              gint64 xv =
                  (ih < 0 || ih >= 4 || iw < 0 || iw >= 4)
                      ? (gint64)zx_v[0]
                      : (gint64)weir_tensor_get(x, (c * 4 + ih) * 4 + iw);
              gint64 wv =
                  (gint64)weir_tensor_get(w, ((m * 2 + c) * 2 + kh) * 2 + kw);
              acc += (xv - (gint64)zx_v[0]) * (wv - (gint64)zw_v[m]);
            }
        assert_int_equal(((gint32 *)y->data)[(m * 5 + oh) * 5 + ow], acc);
      }
}

/* QLinearMatMul: a_scale * b_scale / y_scale = 0.5 puts every odd
 * accumulator on a tie, which rounds to even; an i8 output saturates. */
static void test_qlinear_matmul(void **state) {
  (void)state;
  const gint64 sa[] = {2, 3}, sb[] = {3, 4}, s1[] = {1};
  const double a_v[] = {1, 2, 3, 200, 201, 255};
  const double b_v[] = {0, 1, 2, 3, 4, 5, 6, 7, 255, 254, 253, 1};
  g_autoptr(WeirTensor) a = values(WEIR_DTYPE_U8, 2, sa, a_v);
  g_autoptr(WeirTensor) b = values(WEIR_DTYPE_U8, 2, sb, b_v);
  const double half[] = {0.5}, one[] = {1.0}, zero[] = {0}, yz_v[] = {-3};
  g_autoptr(WeirTensor) as = values(WEIR_DTYPE_F32, 1, s1, half);
  g_autoptr(WeirTensor) bs = values(WEIR_DTYPE_F32, 1, s1, one);
  g_autoptr(WeirTensor) ys = values(WEIR_DTYPE_F32, 1, s1, one);
  g_autoptr(WeirTensor) az = values(WEIR_DTYPE_U8, 1, s1, zero);
  g_autoptr(WeirTensor) bz = values(WEIR_DTYPE_U8, 1, s1, zero);
  g_autoptr(WeirTensor) yz = values(WEIR_DTYPE_I8, 1, s1, yz_v);
  const In ins[] = {{WEIR_DTYPE_U8, "2, 3"}, {WEIR_DTYPE_F32, "1"},
                    {WEIR_DTYPE_U8, "1"},    {WEIR_DTYPE_U8, "3, 4"},
                    {WEIR_DTYPE_F32, "1"},   {WEIR_DTYPE_U8, "1"},
                    {WEIR_DTYPE_F32, "1"},   {WEIR_DTYPE_I8, "1"}};
  WeirNode *lib;
  g_autoptr(WeirGraph) g =
      op_graph("QLinearMatMul", ins, 8, WEIR_DTYPE_I8, "2, 4", &lib);
  WeirTensor *inputs[] = {a, as, az, b, bs, bz, ys, yz};
  g_autoptr(WeirTensor) y = run(g, inputs, 8);
  gboolean tie_seen = FALSE, saturated = FALSE;
  for (gint64 i = 0; i < 2; i++)
    for (gint64 j = 0; j < 4; j++) {
      gint64 acc = 0;
      for (gint64 k = 0; k < 3; k++)
        acc += (gint64)a_v[i * 3 + k] * (gint64)b_v[k * 4 + j];
      double q = nearbyint((double)acc * 0.5) + yz_v[0];
      tie_seen |= acc % 2 != 0;
      saturated |= q > 127;
      q = q < -128 ? -128 : q > 127 ? 127 : q;
      assert_int_equal(((gint8 *)y->data)[i * 4 + j], (gint64)q);
    }
  assert_true(tie_seen && saturated);
}

/* QLinearMatMulBias (Weir's, written by the quantize transformation): u8 A
 * with a zero point, s8 B, an i32 bias and a scale per column; the bias is
 * added to the accumulator before the requantization.  Multipliers 0.5 and
 * 0.25 give ties (rounded to even); large biases saturate both ways. */
static void test_qlinear_matmul_bias(void **state) {
  (void)state;
  const gint64 sa[] = {2, 3}, sb[] = {3, 4}, s1[] = {1}, s4[] = {4};
  const double a_v[] = {1, 2, 3, 200, 201, 255};
  const double b_v[] = {-128, 1, 2, 127, 4, -5, 6, 7, -1, 0, 3, -2};
  const double bias_v[] = {1, -3000, 30001, 0};
  const double bs_v[] = {1, 0.5, 0.25, 1};
  const double half[] = {0.5}, one[] = {1.0}, az_v[] = {1}, zero[] = {0},
               yz_v[] = {100};
  g_autoptr(WeirTensor) a = values(WEIR_DTYPE_U8, 2, sa, a_v);
  g_autoptr(WeirTensor) b = values(WEIR_DTYPE_I8, 2, sb, b_v);
  g_autoptr(WeirTensor) as = values(WEIR_DTYPE_F32, 1, s1, half);
  g_autoptr(WeirTensor) bs = values(WEIR_DTYPE_F32, 1, s4, bs_v);
  g_autoptr(WeirTensor) ys = values(WEIR_DTYPE_F32, 1, s1, one);
  g_autoptr(WeirTensor) az = values(WEIR_DTYPE_U8, 1, s1, az_v);
  g_autoptr(WeirTensor) bz = values(WEIR_DTYPE_I8, 1, s1, zero);
  g_autoptr(WeirTensor) yz = values(WEIR_DTYPE_U8, 1, s1, yz_v);
  g_autoptr(WeirTensor) bias = values(WEIR_DTYPE_I32, 1, s4, bias_v);
  const In ins[] = {
      {WEIR_DTYPE_U8, "2, 3"}, {WEIR_DTYPE_F32, "1"}, {WEIR_DTYPE_U8, "1"},
      {WEIR_DTYPE_I8, "3, 4"}, {WEIR_DTYPE_F32, "4"}, {WEIR_DTYPE_I8, "1"},
      {WEIR_DTYPE_F32, "1"},   {WEIR_DTYPE_U8, "1"},  {WEIR_DTYPE_I32, "4"}};
  WeirNode *lib;
  g_autoptr(WeirGraph) g =
      op_graph("QLinearMatMulBias", ins, 9, WEIR_DTYPE_U8, "2, 4", &lib);
  WeirTensor *inputs[] = {a, as, az, b, bs, bz, ys, yz, bias};
  g_autoptr(WeirTensor) y = run(g, inputs, 9);
  gboolean tie_seen = FALSE, high = FALSE, low = FALSE;
  for (gint64 i = 0; i < 2; i++)
    for (gint64 j = 0; j < 4; j++) {
      gint64 acc = (gint64)bias_v[j];
      for (gint64 k = 0; k < 3; k++)
        acc += ((gint64)a_v[i * 3 + k] - 1) * (gint64)b_v[k * 4 + j];
      double m = 0.5 * bs_v[j]; /* exact in f32 */
      double x = (double)acc * m;
      tie_seen |= x != floor(x) && x - floor(x) == 0.5;
      double q = nearbyint(x) + yz_v[0];
      high |= q > 255;
      low |= q < 0;
      q = q < 0 ? 0 : q > 255 ? 255 : q;
      assert_int_equal(((guint8 *)y->data)[i * 4 + j], (gint64)q);
    }
  assert_true(tie_seen && high && low);
  /* a bias that is neither a scalar nor one per column is refused */
  const In bad[] = {
      {WEIR_DTYPE_U8, "2, 3"}, {WEIR_DTYPE_F32, "1"}, {WEIR_DTYPE_U8, "1"},
      {WEIR_DTYPE_I8, "3, 4"}, {WEIR_DTYPE_F32, "4"}, {WEIR_DTYPE_I8, "1"},
      {WEIR_DTYPE_F32, "1"},   {WEIR_DTYPE_U8, "1"},  {WEIR_DTYPE_I32, "3"}};
  WeirNode *lib2;
  g_autoptr(WeirGraph) g2 =
      op_graph("QLinearMatMulBias", bad, 9, WEIR_DTYPE_U8, "2, 4", &lib2);
  g_autoptr(GError) err = NULL;
  assert_false(infer_graph(g2, &err));
  assert_non_null(strstr(err->message, "bias"));
}

/* QuantizeLinear with an i8 zero point: i8 output, ties to even,
 * saturation at -128 and 127. */
static void test_quantize_i8(void **state) {
  (void)state;
  const gint64 sx[] = {8}, s1[] = {1};
  const double x_v[] = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1000, -1000};
  const double want[] = {-2 + 5, -2 + 5, 0 + 5, 0 + 5, 2 + 5, 2 + 5, 127, -128};
  const double one[] = {1.0}, five[] = {5};
  g_autoptr(WeirTensor) x = values(WEIR_DTYPE_F32, 1, sx, x_v);
  g_autoptr(WeirTensor) sc = values(WEIR_DTYPE_F32, 1, s1, one);
  g_autoptr(WeirTensor) zp = values(WEIR_DTYPE_I8, 1, s1, five);
  const In ins[] = {
      {WEIR_DTYPE_F32, "8"}, {WEIR_DTYPE_F32, "1"}, {WEIR_DTYPE_I8, "1"}};
  WeirNode *lib;
  g_autoptr(WeirGraph) g =
      op_graph("QuantizeLinear", ins, 3, WEIR_DTYPE_I8, "8", &lib);
  weir_node_set_attr_int(lib, "axis", 0);
  WeirTensor *inputs[] = {x, sc, zp};
  g_autoptr(WeirTensor) y = run(g, inputs, 3);
  for (guint i = 0; i < 8; i++)
    assert_int_equal(((gint8 *)y->data)[i], (gint64)want[i]);
}

/* Inference: output dtypes, and the checks of zero points. */
static void test_quant_infer(void **state) {
  (void)state;
  const In ins[] = {{WEIR_DTYPE_U8, "3, 4"},
                    {WEIR_DTYPE_I8, "4, 5"},
                    {WEIR_DTYPE_I8, "1"},
                    {WEIR_DTYPE_I8, "1"}};
  WeirNode *lib;
  g_autoptr(WeirGraph) g =
      op_graph("MatMulInteger", ins, 4, WEIR_DTYPE_I32, "3, 5", &lib);
  g_autoptr(GError) err = NULL;
  /* a_zero_point must have A's dtype */
  assert_false(infer_graph(g, &err));
  assert_non_null(strstr(err->message, "a_zero_point"));
  const In f[] = {{WEIR_DTYPE_F32, "3, 4"}, {WEIR_DTYPE_I8, "4, 5"}};
  g_autoptr(WeirGraph) g2 =
      op_graph("MatMulInteger", f, 2, WEIR_DTYPE_I32, "3, 5", &lib);
  g_clear_error(&err);
  assert_false(infer_graph(g2, &err));
  assert_non_null(strstr(err->message, "dtype f32"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_integer),
      cmocka_unit_test(test_conv_integer),
      cmocka_unit_test(test_qlinear_matmul),
      cmocka_unit_test(test_qlinear_matmul_bias),
      cmocka_unit_test(test_quantize_i8),
      cmocka_unit_test(test_quant_infer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
