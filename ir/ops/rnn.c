/* rnn.c — schemas, inference and FLOP counts of the recurrent operators
 * RNN, GRU and LSTM (opset 14; their pure expansion, a loop over time in a
 * nested program, is in ir/lower/expand/rnn.c).
 *
 * Inputs (positional, ONNX's order): X, W, R, B, sequence_lens, initial_h,
 * and for LSTM initial_c and P (peepholes).  Outputs: Y, Y_h, and for LSTM
 * Y_c, each optional.  With G gates (RNN 1, GRU 3, LSTM 4), D directions
 * (1, or 2 for "bidirectional") and hidden size H:
 *
 *   X [T, B, I]      (layout 1: [B, T, I])
 *   W [D, G*H, I]    R [D, G*H, H]    B [D, 2*G*H]    sequence_lens [B]
 *   initial_h, initial_c, Y_h, Y_c [D, B, H]   (layout 1: [B, D, H])
 *   P [D, 3*H]       Y [T, D, B, H]            (layout 1: [B, T, D, H])
 *
 * FLOPs: per time step, direction and batch row, the two products with W
 * and R (2 * G*H * (I + H): a multiplication and an addition per weight),
 * the bias additions (2 * G*H) and the element-wise cell work, counting an
 * activation as 1: RNN 1 (the activation) + 1 (sum of the two products),
 * GRU 3 sums + 3 activations + 4 (the gating and the blend) + the reset
 * product 1, LSTM 4 sums + 5 activations + 5 (cell and output products)
 * + 3 peephole products and sums when P is given (6).
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_rnn(void);

#define INVALID WEIR_ERROR_INVALID

/* Gates per cell of an operator: RNN 1, GRU 3, LSTM 4. */
static guint rnn_gates(const char *op) {
  if (g_strcmp0(op, "GRU") == 0)
    return 3;
  if (g_strcmp0(op, "LSTM") == 0)
    return 4;
  return 1;
}

/* Number of directions from the "direction" attribute. */
static gboolean rnn_directions(const WeirNode *n, guint *out, GError **error) {
  const char *dir = weir_node_attr_string(n, "direction", "forward");
  if (strcmp(dir, "forward") == 0 || strcmp(dir, "reverse") == 0)
    *out = 1;
  else if (strcmp(dir, "bidirectional") == 0)
    *out = 2;
  else
    return weir_node_fail(error, INVALID, n,
                          "direction '%s' is not forward, reverse or "
                          "bidirectional",
                          dir);
  return TRUE;
}

/* Checks that input k, when present, has rank `rank` and the given
 * dimensions (NULL entries are not checked). */
static gboolean check_input(const WeirOpInferContext *ctx, guint k,
                            const char *what, guint rank, WeirExpr *const *dims,
                            GError **error) {
  const WeirOpValue *v = weir_op_input(ctx, k);
  if (!v)
    return TRUE;
  gboolean ok = v->rank == rank;
  for (guint d = 0; ok && d < rank; d++)
    ok = !dims[d] || weir_expr_equal(v->shape[d], dims[d]);
  if (!ok) {
    GString *want = g_string_new("[");
    for (guint d = 0; d < rank; d++) {
      g_autofree char *t = dims[d] ? weir_expr_to_string(dims[d]) : NULL;
      g_string_append_printf(want, "%s%s", d ? ", " : "", t ? t : "?");
    }
    g_string_append(want, "]");
    g_autofree char *w = g_string_free(want, FALSE);
    return weir_node_fail(error, INVALID, ctx->node,
                          "input %u (%s) must have shape %s", k, what, w);
  }
  return TRUE;
}

static gboolean infer_rnn(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  guint gates = rnn_gates(n->op), dirs = 0;
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  const WeirOpValue *w = x ? weir_op_require_input(ctx, 1, error) : NULL;
  const WeirOpValue *r = w ? weir_op_require_input(ctx, 2, error) : NULL;
  if (!r || !rnn_directions(n, &dirs, error))
    return FALSE;
  if (!weir_dtype_is_float(x->dtype))
    return weir_node_fail(error, INVALID, n,
                          "input 0 (X) has dtype %s, expected a floating type",
                          weir_dtype_name(x->dtype));
  if (x->rank != 3)
    return weir_node_fail(error, INVALID, n,
                          "input 0 (X) has rank %u, expected 3", x->rank);
  gint64 layout = weir_node_attr_int(n, "layout", 0);
  if (layout != 0 && layout != 1)
    return weir_node_fail(error, INVALID, n,
                          "layout %" G_GINT64_FORMAT " is not 0 or 1", layout);
  for (guint k = 1; k < ctx->n_inputs; k++) {
    const WeirOpValue *v = weir_op_input(ctx, k);
    WeirDType want = k == 4 ? WEIR_DTYPE_I32 : x->dtype;
    if (v && v->dtype != want)
      return weir_node_fail(error, INVALID, n,
                            "input %u has dtype %s, expected %s", k,
                            weir_dtype_name(v->dtype), weir_dtype_name(want));
  }
  WeirExpr *seq = x->shape[layout ? 1 : 0], *batch = x->shape[layout ? 0 : 1];
  if (w->rank != 3)
    return weir_node_fail(error, INVALID, n,
                          "input 1 (W) has rank %u, expected 3", w->rank);
  gint64 gh = 0;
  if (!weir_expr_is_const(w->shape[1], &gh) || gh % gates != 0)
    return weir_node_fail(error, INVALID, n,
                          "input 1 (W) must have a constant second "
                          "dimension, a multiple of %u (the gates)",
                          gates);
  gint64 hidden = weir_node_attr_int(n, "hidden_size", gh / gates);
  if (hidden < 1 || hidden * gates != gh)
    return weir_node_fail(
        error, INVALID, n,
        "hidden_size %" G_GINT64_FORMAT
        " does not match W's second dimension %" G_GINT64_FORMAT " (%u gates)",
        hidden, gh, gates);
  g_autoptr(WeirExpr) d = weir_expr_const(dirs);
  g_autoptr(WeirExpr) h = weir_expr_const(hidden);
  g_autoptr(WeirExpr) gh_e = weir_expr_const(gh);
  g_autoptr(WeirExpr) gh2 = weir_expr_const(2 * gh);
  g_autoptr(WeirExpr) h3 = weir_expr_const(3 * hidden);
  WeirExpr *w_dims[] = {d, gh_e, x->shape[2]};
  WeirExpr *r_dims[] = {d, gh_e, h};
  WeirExpr *b_dims[] = {d, gh2};
  WeirExpr *l_dims[] = {batch};
  WeirExpr *state0[] = {d, batch, h};
  WeirExpr *state1[] = {batch, d, h};
  WeirExpr **state = layout ? state1 : state0;
  WeirExpr *p_dims[] = {d, h3};
  if (!check_input(ctx, 1, "W", 3, w_dims, error) ||
      !check_input(ctx, 2, "R", 3, r_dims, error) ||
      !check_input(ctx, 3, "B", 2, b_dims, error) ||
      !check_input(ctx, 4, "sequence_lens", 1, l_dims, error) ||
      !check_input(ctx, 5, "initial_h", 3, state, error) ||
      !check_input(ctx, 6, "initial_c", 3, state, error) ||
      !check_input(ctx, 7, "P", 2, p_dims, error))
    return FALSE;
  const WeirAttr *a = weir_node_attr(n, "activations");
  guint per_dir = gates == 1 ? 1 : gates == 3 ? 2 : 3;
  if (a && a->type == WEIR_ATTR_STRINGS && a->strings->len != per_dir * dirs)
    return weir_node_fail(error, INVALID, n,
                          "%u activations, expected %u (%u per direction)",
                          a->strings->len, per_dir * dirs, per_dir);
  WeirExpr *y0[] = {seq, d, batch, h};
  WeirExpr *y1[] = {batch, seq, d, h};
  if (ctx->n_outputs > 0)
    weir_op_set_output(ctx, 0, x->dtype, 4, layout ? y1 : y0);
  for (guint k = 1; k < ctx->n_outputs && k < (gates == 4 ? 3u : 2u); k++)
    weir_op_set_output(ctx, k, x->dtype, 3, state);
  return TRUE;
}

static const WeirContainer *conn_container(const WeirGraph *g,
                                           const WeirState *s,
                                           const WeirNode *n, const char *conn,
                                           gboolean in) {
  const WeirMemlet *m = weir_state_connector_memlet(s, n->id, conn, in, FALSE);
  return m && m->data ? weir_graph_container(g, m->data) : NULL;
}

static WeirExpr *flops_rnn(const WeirGraph *g, const WeirState *s,
                           const WeirNode *n) {
  const WeirContainer *x = conn_container(g, s, n, "in0", TRUE);
  const WeirContainer *w = conn_container(g, s, n, "in1", TRUE);
  if (!x || !w || x->shape->len != 3 || w->shape->len != 3)
    return NULL;
  guint gates = rnn_gates(n->op);
  gint64 gh = 0;
  if (!weir_expr_is_const(g_ptr_array_index(w->shape, 1), &gh))
    return NULL;
  gint64 hidden = gh / gates;
  gint64 cell =
      gates == 1 ? 2
      : gates == 3
          ? 3 + 3 + 4 + 1
          : 4 + 5 + 5 +
                (weir_state_connector_memlet(s, n->id, "in7", TRUE, FALSE) ? 6
                                                                           : 0);
  /* per (step, direction, batch row): 2 G H (I + H) + 2 G H + cell H */
  WeirExpr *in_size = g_ptr_array_index(x->shape, 2);
  g_autoptr(WeirExpr) ih = weir_expr_add_const(in_size, hidden);
  g_autoptr(WeirExpr) prod = weir_expr_mul_const(ih, 2 * gh);
  g_autoptr(WeirExpr) row = weir_expr_add_const(prod, 2 * gh + cell * hidden);
  g_autoptr(WeirExpr) t_b =
      weir_expr_mul(g_ptr_array_index(x->shape, 0),
                    g_ptr_array_index(x->shape, 1)); /* T * B, any layout */
  g_autoptr(WeirExpr) per_dir = weir_expr_mul(t_b, row);
  return weir_expr_mul(per_dir, g_ptr_array_index(w->shape, 0));
}

/* --------------------------------------------------------------- schemas */

#define COMMON_ATTRS                                                           \
  {"activation_alpha", WEIR_ATTR_FLOATS, FALSE, NULL, 0, 0},                   \
      {"activation_beta", WEIR_ATTR_FLOATS, FALSE, NULL, 0, 0},                \
      {"activations", WEIR_ATTR_STRINGS, FALSE, NULL, 0, 0},                   \
      {"clip", WEIR_ATTR_FLOAT, FALSE, NULL, 0, 0},                            \
      {"direction", WEIR_ATTR_STRING, FALSE, "forward", 0, 0}, {               \
    "hidden_size", WEIR_ATTR_INT, FALSE, NULL, 0, 0                            \
  }

static const WeirOpAttrSpec rnn_attrs[] = {
    COMMON_ATTRS,
    {"layout", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec gru_attrs[] = {
    COMMON_ATTRS,
    {"layout", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"linear_before_reset", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec lstm_attrs[] = {
    COMMON_ATTRS,
    {"input_forget", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"layout", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};

#define OP(name_, max_in, max_out, attrs_)                                     \
  {                                                                            \
    .name = name_, .min_inputs = 3, .max_inputs = max_in, .min_outputs = 0,    \
    .max_outputs = max_out, .attrs = attrs_, .n_attrs = G_N_ELEMENTS(attrs_),  \
    .infer = infer_rnn, .flops = flops_rnn,                                    \
  }

static const WeirOpInfo rnn_ops[] = {
    OP("RNN", 6, 2, rnn_attrs),
    OP("GRU", 6, 2, gru_attrs),
    OP("LSTM", 8, 3, lstm_attrs),
};

void weir_ops_register_rnn(void) {
  for (guint i = 0; i < G_N_ELEMENTS(rnn_ops); i++)
    weir_op_register(&rnn_ops[i]);
}
