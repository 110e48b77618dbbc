/* quant.c — pure expansions of the integer and quantized products:
 * MatMulInteger, ConvInteger, QLinearMatMul and QLinearConv, and Weir's
 * QLinearMatMulBias (QLinearMatMul with an i32 bias per column).
 *
 * Each operand q with zero point z becomes an i32 transient q - z (a map;
 * z is a scalar or a vector read at the operand's axis: A's rows, B's
 * columns, W's output channels), the product is an i32 MatMul or Conv
 * library node on those (expanded in turn; Conv's zero padding of x - z
 * is ONNX's padding of x with its zero point), and the QLinear forms end
 * with the requantization map
 *   y = saturate(rint(f32(acc) * (a_scale * b_scale / y_scale)) + y_zp)
 * in f32 with rint rounding halves to even, as ONNX specifies.  A bias is
 * Conv's third input for QLinearConv; QLinearMatMulBias adds it to the
 * accumulator in the requantization: f32(acc + bias[column]). */
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"
#include "weir-ops.h"

typedef struct {
  gboolean conv;    /* ConvInteger / QLinearConv */
  gboolean qlinear; /* QLinear forms */
  guint a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp, bias;
} Layout;

static const Layout layouts[] = {
    /* MatMulInteger, ConvInteger: (A, B, a_zp, b_zp) */
    {FALSE, FALSE, 0, G_MAXUINT, 2, 1, G_MAXUINT, 3, G_MAXUINT, G_MAXUINT,
     G_MAXUINT},
    {TRUE, FALSE, 0, G_MAXUINT, 2, 1, G_MAXUINT, 3, G_MAXUINT, G_MAXUINT,
     G_MAXUINT},
    /* QLinearMatMul, QLinearConv: (a, a_scale, a_zp, b, b_scale, b_zp,
     * y_scale, y_zp [, B]) */
    {FALSE, TRUE, 0, 1, 2, 3, 4, 5, 6, 7, G_MAXUINT},
    {TRUE, TRUE, 0, 1, 2, 3, 4, 5, 6, 7, 8},
    /* QLinearMatMulBias: QLinearMatMul's inputs, then the i32 bias per
     * column, added in the requantization */
    {FALSE, TRUE, 0, 1, 2, 3, 4, 5, 6, 7, 8},
};

/* Input k when the node has it (FALSE without error when it is absent or
 * k is G_MAXUINT). */
static gboolean optional_input(WeirGraph *g, WeirState *s, WeirNode *n, guint k,
                               WeirPort *p, GError **error) {
  if (k == G_MAXUINT)
    return FALSE;
  return weir_port_input(g, s, n, k, p, error);
}

static gboolean is_single(const WeirPort *p) {
  for (guint d = 0; d < p->rank; d++) {
    gint64 c;
    if (!weir_expr_is_const(p->shape[d], &c) || c != 1)
      return FALSE;
  }
  return TRUE;
}

/* The subset reading parameter p (scalar: its one element; vector: element
 * `param`), or NULL when p is neither. (transfer full) */
static char *param_subset(const WeirPort *p, const char *param) {
  if (is_single(p)) {
    GString *s = g_string_new(NULL);
    for (guint d = 0; d < p->rank; d++)
      g_string_append_printf(s, "%s0", d ? ", " : "");
    return g_string_free(s, FALSE);
  }
  if (p->rank == 1 && param)
    return g_strdup(param);
  return NULL;
}

/* An i32 transient holding q - z over q's shape; z (may be NULL) read at
 * dimension `axis` of q for vectors.  Returns the access node reading the
 * transient, or NULL on error. */
static WeirNode *shifted(WeirGraph *g, WeirState *s, WeirNode *n,
                         const WeirPort *q, const WeirPort *z, guint axis,
                         const char *what, WeirContainer **out,
                         GError **error) {
  g_autofree char *base = weir_expand_name(n, what);
  WeirContainer *c =
      weir_expand_add_transient(g, base, WEIR_DTYPE_I32, q->rank, q->shape);
  g_auto(GStrv) params = weir_expand_fresh_params(g, q->rank);
  g_auto(GStrv) ranges = weir_expand_full_ranges(q->rank, q->shape);
  g_autofree char *sub =
      weir_expand_index_subset(q->rank, (const char *const *)params);
  WeirNode *w = weir_state_add_access(g, s, c->name);
  WeirTaskletPort ins[2] = {{q->access, "q", sub, WEIR_WCR_NONE}};
  guint n_ins = 1;
  g_autofree char *zsub = NULL;
  if (z) {
    zsub = param_subset(z, axis < q->rank ? params[axis] : NULL);
    if (!zsub) {
      weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                     "the zero point of %s must be a scalar or a vector over "
                     "its axis",
                     what);
      return NULL;
    }
    ins[n_ins++] = (WeirTaskletPort){z->access, "z", zsub, WEIR_WCR_NONE};
  }
  WeirTaskletPort o = {w, "y", sub, WEIR_WCR_NONE};
  g_autofree char *label = g_strdup_printf("%s_%s", n->label, what);
  if (!weir_expand_map(g, s, label, q->rank, (const char *const *)params,
                       (const char *const *)ranges, ins, n_ins, &o, 1,
                       z ? "y = i32(q) - i32(z)" : "y = i32(q)", NULL, 0,
                       error))
    return NULL;
  *out = c;
  return w;
}

static gboolean full_memlet(WeirGraph *g, WeirState *s, guint src,
                            const char *src_conn, guint dst,
                            const char *dst_conn, const WeirContainer *c,
                            GError **error) {
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autofree char *text = weir_subset_to_string(full);
  return weir_state_add_memlet(g, s, src, src_conn, dst, dst_conn, c->name,
                               text, error) != NULL;
}

static gboolean expand_product(WeirGraph *g, WeirState *s, WeirNode *n,
                               const Layout *l, GError **error) {
  WeirPort a, b, y, az, bz, bias;
  memset(&bias, 0, sizeof bias);
  if (!weir_port_require_input(g, s, n, l->a, &a, error) ||
      !weir_port_require_input(g, s, n, l->b, &b, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  GError *local = NULL;
  gboolean has_az = optional_input(g, s, n, l->a_zp, &az, &local);
  gboolean has_bz = !local && optional_input(g, s, n, l->b_zp, &bz, &local);
  gboolean has_bias = !local && optional_input(g, s, n, l->bias, &bias, &local);
  if (local) {
    g_propagate_error(error, local);
    return FALSE;
  }
  if (!l->conv && (a.rank < 2 || b.rank < 2))
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "1-D operands are not supported");
  WeirContainer *ac = NULL, *bc = NULL;
  /* A's zero point runs along its rows, B's along its columns; x's is a
   * scalar, W's runs along the output channels. */
  WeirNode *ar = shifted(g, s, n, &a, has_az ? &az : NULL,
                         l->conv ? G_MAXUINT : a.rank - 2, "a", &ac, error);
  if (!ar)
    return FALSE;
  WeirNode *br = shifted(g, s, n, &b, has_bz ? &bz : NULL,
                         l->conv ? 0 : b.rank - 1, "b", &bc, error);
  if (!br)
    return FALSE;

  /* the i32 product: into y, or into a transient the requantization reads */
  WeirContainer *acc = y.container;
  WeirNode *acc_w = y.access;
  if (l->qlinear) {
    g_autofree char *base = weir_expand_name(n, "acc");
    acc = weir_expand_add_transient(g, base, WEIR_DTYPE_I32, y.rank, y.shape);
    acc_w = weir_state_add_access(g, s, acc->name);
  }
  static const char *const ins3[] = {"in0", "in1", "in2", NULL};
  static const char *const ins2[] = {"in0", "in1", NULL};
  static const char *const outs[] = {"out0", NULL};
  g_autofree char *plabel = g_strdup_printf("%s_product", n->label);
  /* a convolution's bias is Conv's third input; a product's is added in
   * the requantization (MatMul has none) */
  gboolean conv_bias = has_bias && l->conv;
  WeirNode *p = weir_state_add_library(
      g, s, plabel, l->conv ? "Conv" : "MatMul", conv_bias ? ins3 : ins2, outs);
  if (l->conv)
    weir_node_copy_attrs(p, n);
  if (!full_memlet(g, s, ar->id, NULL, p->id, "in0", ac, error) ||
      !full_memlet(g, s, br->id, NULL, p->id, "in1", bc, error) ||
      (conv_bias && !full_memlet(g, s, bias.access->id, NULL, p->id, "in2",
                                 bias.container, error)) ||
      !full_memlet(g, s, p->id, "out0", acc_w->id, NULL, acc, error))
    return FALSE;
  if (!l->qlinear)
    return weir_state_remove_node(s, n->id);

  /* requantization over y */
  WeirPort as, bs, ys, yz;
  if (!weir_port_require_input(g, s, n, l->a_scale, &as, error) ||
      !weir_port_require_input(g, s, n, l->b_scale, &bs, error) ||
      !weir_port_require_input(g, s, n, l->y_scale, &ys, error) ||
      !weir_port_require_input(g, s, n, l->y_zp, &yz, error))
    return FALSE;
  g_auto(GStrv) params = weir_expand_fresh_params(g, y.rank);
  g_auto(GStrv) ranges = weir_expand_full_ranges(y.rank, y.shape);
  g_autofree char *sub =
      weir_expand_index_subset(y.rank, (const char *const *)params);
  /* a_scale per row of A (y's dimension rank-2), b_scale per column (rank
   * - 1) or, for a convolution, per output channel (dimension 1) */
  g_autofree char *as_sub =
      param_subset(&as, l->conv ? NULL : params[y.rank - 2]);
  g_autofree char *bs_sub =
      param_subset(&bs, l->conv ? params[1] : params[y.rank - 1]);
  g_autofree char *ys_sub = param_subset(&ys, NULL);
  g_autofree char *yz_sub = param_subset(&yz, NULL);
  gboolean col_bias = has_bias && !l->conv;
  g_autofree char *bias_sub =
      col_bias ? param_subset(&bias, params[y.rank - 1]) : NULL;
  if (!as_sub || !bs_sub || !ys_sub || !yz_sub || (col_bias && !bias_sub))
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "scales and zero points must be scalars or vectors "
                          "over their axis");
  WeirNode *acc_r = acc_w;
  WeirTaskletPort ins[6] = {
      {acc_r, "c", sub, WEIR_WCR_NONE},
      {as.access, "sa", as_sub, WEIR_WCR_NONE},
      {bs.access, "sb", bs_sub, WEIR_WCR_NONE},
      {ys.access, "sy", ys_sub, WEIR_WCR_NONE},
      {yz.access, "z", yz_sub, WEIR_WCR_NONE},
      {col_bias ? bias.access : NULL, "bb", bias_sub, WEIR_WCR_NONE},
  };
  WeirTaskletPort o = {y.access, "y", sub, WEIR_WCR_NONE};
  WeirDType t = y.container->dtype;
  g_autofree char *code = g_strdup_printf(
      "q = rint(f32(%s) * (sa * sb / sy)) + i32(z)\ny = min(max(q, %s), %s)",
      col_bias ? "c + bb" : "c", weir_expand_lowest_literal(t),
      weir_expand_highest_literal(t));
  g_autofree char *label = g_strdup_printf("%s_requantize", n->label);
  return weir_expand_map(g, s, label, y.rank, (const char *const *)params,
                         (const char *const *)ranges, ins, col_bias ? 6 : 5, &o,
                         1, code, NULL, 0, error) != NULL &&
         weir_state_remove_node(s, n->id);
}

static gboolean expand_matmul_integer(WeirGraph *g, WeirState *s, WeirNode *n,
                                      GError **error) {
  return expand_product(g, s, n, &layouts[0], error);
}

static gboolean expand_conv_integer(WeirGraph *g, WeirState *s, WeirNode *n,
                                    GError **error) {
  return expand_product(g, s, n, &layouts[1], error);
}

static gboolean expand_qlinear_matmul(WeirGraph *g, WeirState *s, WeirNode *n,
                                      GError **error) {
  return expand_product(g, s, n, &layouts[2], error);
}

static gboolean expand_qlinear_conv(WeirGraph *g, WeirState *s, WeirNode *n,
                                    GError **error) {
  return expand_product(g, s, n, &layouts[3], error);
}

static gboolean expand_qlinear_matmul_bias(WeirGraph *g, WeirState *s,
                                           WeirNode *n, GError **error) {
  return expand_product(g, s, n, &layouts[4], error);
}

void weir_expand_register_quant(void);

void weir_expand_register_quant(void) {
  weir_op_register_expansion("MatMulInteger", "pure", expand_matmul_integer);
  weir_op_register_expansion("ConvInteger", "pure", expand_conv_integer);
  weir_op_register_expansion("QLinearMatMul", "pure", expand_qlinear_matmul);
  weir_op_register_expansion("QLinearConv", "pure", expand_qlinear_conv);
  weir_op_register_expansion("QLinearMatMulBias", "pure",
                             expand_qlinear_matmul_bias);
}
