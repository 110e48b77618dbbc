/* shape.c — the shape and data-movement operators: schemas, shape and type
 * inference, FLOP counts.
 *
 * Operators: Transpose, Reshape, Flatten, Squeeze, Unsqueeze, Concat, Split,
 * Slice, Gather, Expand, Pad, Tile, Shape, ConstantOfShape, Range,
 * ScatterND (ONNX semantics; the expansions are in ir/lower/expand/shape.c).
 *
 * Layout of this file:
 *  1. helpers: error messages naming the node, axis normalization, reading
 *     INTS attributes or the known elements of an input;
 *  2. int_values: the symbolic elements of small integer tensors computed
 *     from shapes (Shape -> Gather -> Unsqueeze -> Concat -> Reshape), with
 *     the exported helpers other families call (Cast, Add/Sub/Mul/Div);
 *  3. one infer function per operator, in the order above;
 *  4. the schema records and weir_ops_register_shape().
 *
 * Shapes stay symbolic: a dimension N flows through as the expression N.
 * Where a dimension must be compared with a constant (a squeezed axis is 1,
 * concatenated inputs agree) and it is symbolic, the comparison is done on
 * the canonical expressions.  Data movement costs no FLOPs: every operator
 * here counts 0, except Range on floating types (a multiply-add per
 * element) and ScatterND with a reduction (one operation per floating
 * update element).
 */
#include <math.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_shape(void);

/* Largest number of elements for which int_values are tracked. */
#define INT_VALUES_MAX 64

/* ------------------------------------------------------------- helpers */

#define INVALID WEIR_ERROR_INVALID
#define UNSUPPORTED WEIR_ERROR_UNSUPPORTED

static gint64 ints_at(const GArray *a, guint i) {
  return g_array_index(a, gint64, i);
}

static GPtrArray *expr_array(void) {
  return g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
}

static gboolean is_const(const WeirExpr *e, gint64 v) {
  gint64 x;
  return weir_expr_is_const(e, &x) && x == v;
}

static char *expr_text(const WeirExpr *e) {
  return weir_expr_to_string(e);
}

/* Product of shape[from..to). */
static WeirExpr *shape_product(WeirExpr *const *shape, guint from, guint to) {
  WeirExpr *p = weir_expr_const(1);
  for (guint d = from; d < to; d++) {
    WeirExpr *next = weir_expr_mul(p, shape[d]);
    weir_expr_unref(p);
    p = next;
  }
  return p;
}

static WeirExpr *value_volume(const WeirOpValue *v) {
  return shape_product(v->shape, 0, v->rank);
}

/* TRUE when e is known to be >= 0, taking symbols as sizes (>= 0). */
static gboolean nonneg(WeirExpr *e) {
  gint64 v;
  if (weir_expr_is_const(e, &v))
    return v >= 0;
  switch (weir_expr_kind(e)) {
  case WEIR_EXPR_SYMBOL:
    return TRUE;
  case WEIR_EXPR_ADD:
  case WEIR_EXPR_MUL:
  case WEIR_EXPR_FLOORDIV:
  case WEIR_EXPR_MIN:
    for (guint i = 0; i < weir_expr_n_operands(e); i++)
      if (!nonneg(weir_expr_operand(e, i)))
        return FALSE;
    return TRUE;
  case WEIR_EXPR_MOD:
    return nonneg(weir_expr_operand(e, 1));
  case WEIR_EXPR_MAX:
    for (guint i = 0; i < weir_expr_n_operands(e); i++)
      if (nonneg(weir_expr_operand(e, i)))
        return TRUE;
    return FALSE;
  case WEIR_EXPR_CONST:
    break;
  }
  return FALSE;
}

/* max(a, b) and min(a, b), without the operand that provably does not
 * matter (b - a >= 0 or a - b >= 0 with sizes taken as >= 0). */
static WeirExpr *max_known(WeirExpr *a, WeirExpr *b) {
  g_autoptr(WeirExpr) d = weir_expr_sub(a, b);
  if (nonneg(d))
    return weir_expr_ref(a);
  g_autoptr(WeirExpr) r = weir_expr_sub(b, a);
  if (nonneg(r))
    return weir_expr_ref(b);
  return weir_expr_max(a, b);
}

static WeirExpr *min_known(WeirExpr *a, WeirExpr *b) {
  g_autoptr(WeirExpr) d = weir_expr_sub(b, a);
  if (nonneg(d))
    return weir_expr_ref(a);
  g_autoptr(WeirExpr) r = weir_expr_sub(a, b);
  if (nonneg(r))
    return weir_expr_ref(b);
  return weir_expr_min(a, b);
}

/* Factors of a monomial: its constant coefficient and the other factors
 * (borrowed).  FALSE when e is not a product, a symbol or a constant. */
static gboolean monomial(WeirExpr *e, gint64 *coef, GPtrArray *factors) {
  gint64 v;
  *coef = 1;
  if (weir_expr_is_const(e, &v)) {
    *coef = v;
    return TRUE;
  }
  if (weir_expr_kind(e) != WEIR_EXPR_MUL) {
    g_ptr_array_add(factors, e);
    return TRUE;
  }
  for (guint i = 0; i < weir_expr_n_operands(e); i++) {
    WeirExpr *f = weir_expr_operand(e, i);
    if (weir_expr_is_const(f, &v))
      *coef = (gint64)((guint64)*coef * (guint64)v); /* wraps as exprs do */
    else
      g_ptr_array_add(factors, f);
  }
  return TRUE;
}

/* a / b when b divides a exactly as a polynomial (3136*N / N = 3136, (2*N +
 * 4*N*M) / (2*N) = 1 + 2*M), else NULL. */
static WeirExpr *divide_exact(WeirExpr *a, WeirExpr *b) {
  gint64 bc;
  g_autoptr(GPtrArray) bf = g_ptr_array_new();
  monomial(b, &bc, bf);
  if (bc == 0)
    return NULL;
  gboolean is_sum = weir_expr_kind(a) == WEIR_EXPR_ADD;
  guint n_terms = is_sum ? weir_expr_n_operands(a) : 1;
  WeirExpr *sum = weir_expr_const(0);
  for (guint t = 0; t < n_terms; t++) {
    WeirExpr *term = is_sum ? weir_expr_operand(a, t) : a;
    gint64 ac;
    g_autoptr(GPtrArray) af = g_ptr_array_new();
    monomial(term, &ac, af);
    if (ac % bc != 0) {
      weir_expr_unref(sum);
      return NULL;
    }
    for (guint i = 0; i < bf->len; i++) {
      gboolean found = FALSE;
      for (guint j = 0; j < af->len && !found; j++) {
        if (weir_expr_equal(af->pdata[j], bf->pdata[i])) {
          g_ptr_array_remove_index(af, j);
          found = TRUE;
        }
      }
      if (!found) {
        weir_expr_unref(sum);
        return NULL;
      }
    }
    WeirExpr *q = weir_expr_const(ac / bc);
    for (guint j = 0; j < af->len; j++) {
      WeirExpr *next = weir_expr_mul(q, af->pdata[j]);
      weir_expr_unref(q);
      q = next;
    }
    WeirExpr *next = weir_expr_add(sum, q);
    weir_expr_unref(q);
    weir_expr_unref(sum);
    sum = next;
  }
  return sum;
}

/* ---------------------------------------------------------- int_values */

/* The dimensions of shape as numbers; FALSE when one is symbolic. */
static gboolean const_dims(guint rank, WeirExpr *const *shape, gint64 *dims) {
  for (guint d = 0; d < rank; d++)
    if (!weir_expr_is_const(shape[d], &dims[d]) || dims[d] < 0)
      return FALSE;
  return TRUE;
}

/* Output k's int_values picked from the known elements `iv` of an input of
 * rank `rank` and dimensions in_dims (row-major): output element
 * (o_0, ..., o_{r-1}) of an output of dimensions out_dims is input element
 * (start[d] + o_{src[d]} * step[d])_d; src NULL means src[d] = d.  Nothing
 * is set when an index falls outside the input. */
static void int_values_pick(WeirOpInferContext *ctx, guint k, GPtrArray *iv,
                            guint rank, const gint64 *in_dims,
                            const gint64 *out_dims, const guint *src,
                            const gint64 *start, const gint64 *step) {
  gint64 count = 1;
  for (guint d = 0; d < rank; d++) {
    if (out_dims[d] > INT_VALUES_MAX)
      return;
    count *= out_dims[d];
    if (count > INT_VALUES_MAX)
      return;
  }
  g_autoptr(GPtrArray) vals = g_ptr_array_new();
  g_autofree gint64 *o = g_new0(gint64, rank + 1);
  for (gint64 e = 0; e < count; e++) {
    gint64 rest = e, flat = 0;
    for (guint d = rank; d-- > 0;) {
      o[d] = rest % out_dims[d];
      rest /= out_dims[d];
    }
    for (guint d = 0; d < rank; d++) {
      gint64 i = start[d] + o[src ? src[d] : d] * step[d];
      if (i < 0 || i >= in_dims[d])
        return;
      flat = flat * in_dims[d] + i;
    }
    if (flat >= (gint64)iv->len)
      return;
    g_ptr_array_add(vals, iv->pdata[flat]);
  }
  weir_op_set_output_int_values(ctx, k, (WeirExpr *const *)vals->pdata,
                                vals->len);
}

GPtrArray *weir_op_value_int_values(const WeirOpValue *v) {
  if (!v || !v->present)
    return NULL;
  if (v->int_values) {
    GPtrArray *out = expr_array();
    for (guint i = 0; i < v->int_values->len; i++)
      g_ptr_array_add(out, weir_expr_ref(v->int_values->pdata[i]));
    return out;
  }
  const WeirTensor *t = v->value;
  if (!t || t->count > INT_VALUES_MAX)
    return NULL;
  GPtrArray *out = expr_array();
  for (gint64 i = 0; i < t->count; i++) {
    gint64 x;
    switch (t->dtype) {
    case WEIR_DTYPE_I64:
      x = ((const gint64 *)t->data)[i];
      break;
    case WEIR_DTYPE_I32:
      x = ((const gint32 *)t->data)[i];
      break;
    case WEIR_DTYPE_U8:
    case WEIR_DTYPE_BOOL:
      x = ((const guint8 *)t->data)[i];
      break;
    case WEIR_DTYPE_F32:
    case WEIR_DTYPE_F64:
    case WEIR_DTYPE_COUNT:
    default:
      g_ptr_array_unref(out);
      return NULL;
    }
    g_ptr_array_add(out, weir_expr_const(x));
  }
  return out;
}

gboolean weir_op_int_values_copy(WeirOpInferContext *ctx, guint in, guint out) {
  if (in >= ctx->n_inputs || out >= ctx->n_outputs)
    return FALSE;
  g_autoptr(GPtrArray) v = weir_op_value_int_values(&ctx->inputs[in]);
  if (!v)
    return FALSE;
  weir_op_set_output_int_values(ctx, out, (WeirExpr *const *)v->pdata, v->len);
  return TRUE;
}

/* C-style integer division (truncating), as ONNX Div on integers. */
static WeirExpr *int_div(WeirExpr *a, WeirExpr *b) {
  gint64 x, y;
  if (weir_expr_is_const(a, &x) && weir_expr_is_const(b, &y)) {
    if (y == 0 || (x == G_MININT64 && y == -1))
      return NULL;
    return weir_expr_const(x / y);
  }
  /* Symbolic: only exact quotients (shape arithmetic such as N*64 / 64),
   * where truncation and floor agree. */
  return divide_exact(a, b);
}

/* x mod y as ONNX Mod: the sign of the divisor (fmod = 0) or of the dividend
 * (fmod = 1).  Symbolic only for a size (>= 0) by a positive constant, where
 * both agree with the expression's floor modulo. */
static WeirExpr *int_mod(WeirExpr *a, WeirExpr *b, gboolean c_fmod) {
  gint64 x, y;
  if (weir_expr_is_const(a, &x) && weir_expr_is_const(b, &y)) {
    if (y == 0)
      return NULL;
    if (y == -1)
      return weir_expr_const(0);
    gint64 r = x % y;
    if (!c_fmod && r != 0 && ((r < 0) != (y < 0)))
      r += y;
    return weir_expr_const(r);
  }
  if (weir_expr_is_const(b, &y) && y > 0 && nonneg(a))
    return weir_expr_mod(a, b);
  return NULL;
}

/* Comparison of two integer expressions: 1, 0, or -1 when not known.
 * Symbolic operands compare when their difference is a constant, or (for
 * Equal) when one is a size (>= 0) and the other a negative constant. */
static gint compare_known(WeirExpr *a, WeirExpr *b, const char *op) {
  g_autoptr(WeirExpr) d = weir_expr_sub(a, b);
  gint64 v;
  if (weir_expr_is_const(d, &v)) {
    if (strcmp(op, "Equal") == 0)
      return v == 0;
    if (strcmp(op, "Less") == 0)
      return v < 0;
    if (strcmp(op, "LessOrEqual") == 0)
      return v <= 0;
    if (strcmp(op, "Greater") == 0)
      return v > 0;
    if (strcmp(op, "GreaterOrEqual") == 0)
      return v >= 0;
    return -1;
  }
  if (strcmp(op, "Equal") != 0)
    return -1;
  if ((nonneg(a) && weir_expr_is_const(b, &v) && v < 0) ||
      (nonneg(b) && weir_expr_is_const(a, &v) && v < 0))
    return 0;
  return -1;
}

gboolean weir_op_int_values_binary(WeirOpInferContext *ctx, const char *op) {
  if (ctx->n_inputs < 2 || ctx->n_outputs < 1)
    return FALSE;
  if (!op)
    op = ctx->node->op;
  g_autoptr(GPtrArray) a = weir_op_value_int_values(&ctx->inputs[0]);
  g_autoptr(GPtrArray) b = weir_op_value_int_values(&ctx->inputs[1]);
  if (!a || !b || a->len == 0 || b->len == 0)
    return FALSE;
  if (a->len != b->len && a->len != 1 && b->len != 1)
    return FALSE;
  guint n = MAX(a->len, b->len);
  g_autoptr(GPtrArray) r = expr_array();
  for (guint i = 0; i < n; i++) {
    WeirExpr *x = a->pdata[a->len == 1 ? 0 : i];
    WeirExpr *y = b->pdata[b->len == 1 ? 0 : i];
    WeirExpr *z = NULL;
    if (strcmp(op, "Add") == 0)
      z = weir_expr_add(x, y);
    else if (strcmp(op, "Sub") == 0)
      z = weir_expr_sub(x, y);
    else if (strcmp(op, "Mul") == 0)
      z = weir_expr_mul(x, y);
    else if (strcmp(op, "Div") == 0)
      z = int_div(x, y);
    else if (strcmp(op, "Mod") == 0)
      z = int_mod(x, y, weir_node_attr_int(ctx->node, "fmod", 0) != 0);
    else {
      gint c = compare_known(x, y, op);
      z = c < 0 ? NULL : weir_expr_const(c);
    }
    if (!z)
      return FALSE;
    g_ptr_array_add(r, z);
  }
  weir_op_set_output_int_values(ctx, 0, (WeirExpr *const *)r->pdata, r->len);
  return TRUE;
}

gboolean weir_op_int_values_where(WeirOpInferContext *ctx) {
  if (ctx->n_inputs < 3 || ctx->n_outputs < 1)
    return FALSE;
  g_autoptr(GPtrArray) c = weir_op_value_int_values(&ctx->inputs[0]);
  g_autoptr(GPtrArray) a = weir_op_value_int_values(&ctx->inputs[1]);
  g_autoptr(GPtrArray) b = weir_op_value_int_values(&ctx->inputs[2]);
  if (!c || !a || !b || c->len == 0 || a->len == 0 || b->len == 0)
    return FALSE;
  guint n = MAX(c->len, MAX(a->len, b->len));
  if ((c->len != n && c->len != 1) || (a->len != n && a->len != 1) ||
      (b->len != n && b->len != 1))
    return FALSE;
  g_autoptr(GPtrArray) r = g_ptr_array_new();
  for (guint i = 0; i < n; i++) {
    gint64 cond;
    if (!weir_expr_is_const(c->pdata[c->len == 1 ? 0 : i], &cond))
      return FALSE;
    g_ptr_array_add(r, cond ? a->pdata[a->len == 1 ? 0 : i]
                            : b->pdata[b->len == 1 ? 0 : i]);
  }
  weir_op_set_output_int_values(ctx, 0, (WeirExpr *const *)r->pdata, r->len);
  return TRUE;
}

gboolean weir_op_int_values_not(WeirOpInferContext *ctx) {
  if (ctx->n_inputs < 1 || ctx->n_outputs < 1)
    return FALSE;
  g_autoptr(GPtrArray) x = weir_op_value_int_values(&ctx->inputs[0]);
  if (!x)
    return FALSE;
  g_autoptr(GPtrArray) r = expr_array();
  for (guint i = 0; i < x->len; i++) {
    gint64 v;
    if (!weir_expr_is_const(x->pdata[i], &v))
      return FALSE;
    g_ptr_array_add(r, weir_expr_const(v == 0));
  }
  weir_op_set_output_int_values(ctx, 0, (WeirExpr *const *)r->pdata, r->len);
  return TRUE;
}

/* The target values of a shape-like attribute: INTS attribute `name`, else
 * the known elements of input k; NULL (no error) when neither is known. */
static GPtrArray *ints_or_input(const WeirOpInferContext *ctx, const char *name,
                                guint k) {
  const GArray *a = weir_node_attr_ints(ctx->node, name);
  if (a) {
    GPtrArray *out = expr_array();
    for (guint i = 0; i < a->len; i++)
      g_ptr_array_add(out, weir_expr_const(ints_at(a, i)));
    return out;
  }
  return weir_op_value_int_values(weir_op_input(ctx, k));
}

/* ----------------------------------------------------------- Transpose */

static gboolean infer_transpose(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  const GArray *perm = weir_node_attr_ints(ctx->node, "perm");
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, x->rank + 1);
  g_autofree gboolean *seen = g_new0(gboolean, x->rank + 1);
  if (perm && perm->len != x->rank)
    return weir_node_fail(error, INVALID, ctx->node,
                          "perm has %u entries, input rank is %u", perm->len,
                          x->rank);
  for (guint i = 0; i < x->rank; i++) {
    gint64 p = perm ? ints_at(perm, i) : (gint64)(x->rank - 1 - i);
    if (p < 0 || p >= (gint64)x->rank || seen[p])
      return weir_node_fail(
          error, INVALID, ctx->node,
          "perm is not a permutation of 0..%u (entry %u is %" G_GINT64_FORMAT
          ")",
          x->rank - 1, i, p);
    seen[p] = TRUE;
    shape[i] = x->shape[p];
  }
  weir_op_set_output(ctx, 0, x->dtype, x->rank, shape);
  /* Known elements (shape computations of exporters), permuted. */
  g_autoptr(GPtrArray) iv = weir_op_value_int_values(x);
  g_autofree gint64 *in_dims = g_new0(gint64, x->rank + 1);
  if (iv && const_dims(x->rank, x->shape, in_dims)) {
    g_autofree gint64 *out_dims = g_new0(gint64, x->rank + 1);
    g_autofree guint *src = g_new0(guint, x->rank + 1);
    g_autofree gint64 *start = g_new0(gint64, x->rank + 1);
    g_autofree gint64 *step = g_new0(gint64, x->rank + 1);
    for (guint i = 0; i < x->rank; i++) {
      guint p = perm ? (guint)ints_at(perm, i) : x->rank - 1 - i;
      out_dims[i] = in_dims[p];
      src[p] = i; /* input dimension p runs with output dimension i */
      step[p] = 1;
    }
    int_values_pick(ctx, 0, iv, x->rank, in_dims, out_dims, src, start, step);
  }
  return TRUE;
}

/* ------------------------------------------------------------- Reshape */

static gboolean infer_reshape(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  g_autoptr(GPtrArray) target = ints_or_input(ctx, "shape", 1);
  if (!target)
    return weir_node_fail(
        error, UNSUPPORTED, ctx->node,
        "the target shape is not known (no 'shape' attribute and "
        "input 1 is not a known constant)");
  gboolean allowzero = weir_node_attr_int(ctx->node, "allowzero", 0) != 0;
  guint rank = target->len;
  g_autoptr(GPtrArray) out = expr_array();
  gint infer_at = -1;
  for (guint i = 0; i < rank; i++) {
    WeirExpr *t = target->pdata[i];
    gint64 v;
    if (weir_expr_is_const(t, &v) && v == -1) {
      if (infer_at >= 0)
        return weir_node_fail(error, INVALID, ctx->node,
                              "the shape has more than one -1");
      infer_at = (gint)i;
      g_ptr_array_add(out, weir_expr_const(1));
    } else if (weir_expr_is_const(t, &v) && v == 0 && !allowzero) {
      if (i >= x->rank)
        return weir_node_fail(
            error, INVALID, ctx->node,
            "shape entry %u is 0 (copy the input dimension) but the "
            "input has rank %u",
            i, x->rank);
      g_ptr_array_add(out, weir_expr_ref(x->shape[i]));
    } else if (weir_expr_is_const(t, &v) && v < 0) {
      return weir_node_fail(error, INVALID, ctx->node,
                            "shape entry %u is %" G_GINT64_FORMAT, i, v);
    } else {
      g_ptr_array_add(out, weir_expr_ref(t));
    }
  }
  g_autoptr(WeirExpr) in_vol = value_volume(x);
  if (infer_at >= 0) {
    if (allowzero) {
      for (guint i = 0; i < rank; i++)
        if (is_const(out->pdata[i], 0))
          return weir_node_fail(
              error, INVALID, ctx->node,
              "the shape has both -1 and 0 with allowzero = 1");
    }
    g_autoptr(WeirExpr) rest =
        shape_product((WeirExpr *const *)out->pdata, 0, rank);
    WeirExpr *dim = divide_exact(in_vol, rest);
    if (!dim) {
      g_autofree char *a = expr_text(in_vol);
      g_autofree char *b = expr_text(rest);
      return weir_node_fail(
          error, INVALID, ctx->node,
          "cannot infer the -1 dimension: %s elements are not a "
          "multiple of %s",
          a, b);
    }
    weir_expr_unref(out->pdata[infer_at]);
    out->pdata[infer_at] = dim;
  }
  g_autoptr(WeirExpr) out_vol =
      shape_product((WeirExpr *const *)out->pdata, 0, rank);
  gint64 va, vb;
  if (weir_expr_is_const(in_vol, &va) && weir_expr_is_const(out_vol, &vb) &&
      va != vb)
    return weir_node_fail(error, INVALID, ctx->node,
                          "cannot reshape %" G_GINT64_FORMAT
                          " elements into %" G_GINT64_FORMAT,
                          va, vb);
  weir_op_set_output(ctx, 0, x->dtype, rank, (WeirExpr *const *)out->pdata);
  weir_op_int_values_copy(ctx, 0, 0);
  return TRUE;
}

/* ------------------------------------------------------------- Flatten */

static gboolean infer_flatten(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  guint axis = 0;
  if (!weir_op_normalize_axis(ctx->node, "axis",
                              weir_node_attr_int(ctx->node, "axis", 1), x->rank,
                              TRUE, &axis, error))
    return FALSE;
  WeirExpr *shape[2] = {shape_product(x->shape, 0, axis),
                        shape_product(x->shape, axis, x->rank)};
  weir_op_set_output(ctx, 0, x->dtype, 2, shape);
  weir_expr_unref(shape[0]);
  weir_expr_unref(shape[1]);
  weir_op_int_values_copy(ctx, 0, 0);
  return TRUE;
}

/* ----------------------------------------------------- Squeeze/Unsqueeze */

static gboolean infer_squeeze(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  const GArray *axes = weir_node_attr_ints(ctx->node, "axes");
  g_autofree gboolean *drop = g_new0(gboolean, x->rank + 1);
  if (axes) {
    for (guint i = 0; i < axes->len; i++) {
      guint a = 0;
      if (!weir_op_normalize_axis(ctx->node, "axis", ints_at(axes, i), x->rank,
                                  FALSE, &a, error))
        return FALSE;
      if (!is_const(x->shape[a], 1)) {
        g_autofree char *d = expr_text(x->shape[a]);
        return weir_node_fail(
            error, INVALID, ctx->node,
            "cannot squeeze dimension %u of size %s (must be 1)", a, d);
      }
      drop[a] = TRUE;
    }
  } else {
    /* Without axes every dimension known to be 1 goes; a symbolic one
     * stays. */
    for (guint d = 0; d < x->rank; d++)
      drop[d] = is_const(x->shape[d], 1);
  }
  g_autoptr(GPtrArray) out = g_ptr_array_new();
  for (guint d = 0; d < x->rank; d++)
    if (!drop[d])
      g_ptr_array_add(out, x->shape[d]);
  weir_op_set_output(ctx, 0, x->dtype, out->len, (WeirExpr *const *)out->pdata);
  weir_op_int_values_copy(ctx, 0, 0);
  return TRUE;
}

static gboolean infer_unsqueeze(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  const GArray *axes = weir_node_attr_ints(ctx->node, "axes");
  if (!axes)
    return weir_node_fail(error, INVALID, ctx->node,
                          "attribute 'axes' is missing");
  guint rank = x->rank + axes->len;
  g_autofree gboolean *added = g_new0(gboolean, rank + 1);
  for (guint i = 0; i < axes->len; i++) {
    guint a = 0;
    if (!weir_op_normalize_axis(ctx->node, "axis", ints_at(axes, i), rank,
                                FALSE, &a, error))
      return FALSE;
    if (added[a])
      return weir_node_fail(error, INVALID, ctx->node, "axis %u is repeated",
                            a);
    added[a] = TRUE;
  }
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, rank + 1);
  for (guint d = 0, k = 0; d < rank; d++)
    shape[d] = added[d] ? one : x->shape[k++];
  weir_op_set_output(ctx, 0, x->dtype, rank, shape);
  weir_op_int_values_copy(ctx, 0, 0);
  return TRUE;
}

/* -------------------------------------------------------------- Concat */

static gboolean infer_concat(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *first = weir_op_require_input(ctx, 0, error);
  if (!first)
    return FALSE;
  if (first->rank == 0)
    return weir_node_fail(error, INVALID, ctx->node,
                          "cannot concatenate scalars");
  guint axis = 0;
  if (!weir_op_normalize_axis(ctx->node, "axis",
                              weir_node_attr_int(ctx->node, "axis", 0),
                              first->rank, FALSE, &axis, error))
    return FALSE;
  g_autoptr(WeirExpr) total = weir_expr_const(0);
  g_autoptr(GPtrArray) values = expr_array();
  gboolean known = first->rank == 1;
  for (guint k = 0; k < ctx->n_inputs; k++) {
    const WeirOpValue *v = weir_op_require_input(ctx, k, error);
    if (!v)
      return FALSE;
    if (v->rank != first->rank)
      return weir_node_fail(error, INVALID, ctx->node,
                            "input %u has rank %u, expected %u", k, v->rank,
                            first->rank);
    if (v->dtype != first->dtype)
      return weir_node_fail(
          error, INVALID, ctx->node, "input %u has dtype %s, expected %s", k,
          weir_dtype_name(v->dtype), weir_dtype_name(first->dtype));
    for (guint d = 0; d < v->rank; d++) {
      if (d == axis || weir_expr_equal(v->shape[d], first->shape[d]))
        continue;
      g_autofree char *a = expr_text(v->shape[d]);
      g_autofree char *b = expr_text(first->shape[d]);
      return weir_node_fail(
          error, INVALID, ctx->node,
          "input %u has size %s in dimension %u, input 0 has %s", k, a, d, b);
    }
    WeirExpr *next = weir_expr_add(total, v->shape[axis]);
    weir_expr_unref(total);
    total = next;
    g_autoptr(GPtrArray) iv = known ? weir_op_value_int_values(v) : NULL;
    if (!iv)
      known = FALSE;
    for (guint i = 0; iv && i < iv->len; i++)
      g_ptr_array_add(values, weir_expr_ref(iv->pdata[i]));
  }
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, first->rank);
  for (guint d = 0; d < first->rank; d++)
    shape[d] = d == axis ? total : first->shape[d];
  weir_op_set_output(ctx, 0, first->dtype, first->rank, shape);
  if (known && is_const(total, values->len))
    weir_op_set_output_int_values(ctx, 0, (WeirExpr *const *)values->pdata,
                                  values->len);
  return TRUE;
}

/* --------------------------------------------------------------- Split */

/* Sizes of the parts of a dimension of size dim split into n outputs
 * (array of owned exprs).  Shared with the expansion through the output
 * containers' shapes, so it is only used by inference. */
static GPtrArray *split_sizes(const WeirOpInferContext *ctx, WeirExpr *dim,
                              guint n, GError **error) {
  g_autoptr(GPtrArray) sizes = expr_array();
  const GArray *split = weir_node_attr_ints(ctx->node, "split");
  if (split) {
    if (split->len != n) {
      weir_node_fail(error, INVALID, ctx->node,
                     "'split' has %u entries for %u outputs", split->len, n);
      return NULL;
    }
    gint64 sum = 0;
    for (guint i = 0; i < n; i++) {
      if (ints_at(split, i) < 0) {
        weir_node_fail(error, INVALID, ctx->node,
                       "'split' entry %u is negative", i);
        return NULL;
      }
      if (__builtin_add_overflow(sum, ints_at(split, i), &sum)) {
        weir_node_fail(error, INVALID, ctx->node,
                       "the 'split' sizes overflow 64 bits");
        return NULL;
      }
      g_ptr_array_add(sizes, weir_expr_const(ints_at(split, i)));
    }
    gint64 d;
    if (!weir_expr_is_const(dim, &d)) {
      g_autofree char *t = expr_text(dim);
      weir_node_fail(error, UNSUPPORTED, ctx->node,
                     "explicit 'split' sizes of a symbolic dimension %s", t);
      return NULL;
    }
    if (sum != d) {
      weir_node_fail(error, INVALID, ctx->node,
                     "'split' sizes add up to %" G_GINT64_FORMAT
                     ", the dimension is %" G_GINT64_FORMAT,
                     sum, d);
      return NULL;
    }
    return g_steal_pointer(&sizes);
  }
  gint64 num = weir_node_attr_int(ctx->node, "num_outputs", 0);
  if (num > 0 && num != (gint64)n) {
    weir_node_fail(error, INVALID, ctx->node,
                   "num_outputs is %" G_GINT64_FORMAT
                   " but the node has %u outputs",
                   num, n);
    return NULL;
  }
  /* Equal parts of ceil(dim / n); the last one takes what is left. */
  g_autoptr(WeirExpr) up = weir_expr_add_const(dim, n - 1);
  g_autoptr(WeirExpr) nn = weir_expr_const(n);
  g_autoptr(WeirExpr) part = weir_expr_floordiv(up, nn);
  g_autoptr(WeirExpr) before = weir_expr_mul_const(part, n - 1);
  g_autoptr(WeirExpr) last = weir_expr_sub(dim, before);
  gint64 lv;
  if (weir_expr_is_const(last, &lv) && lv < 0) {
    g_autofree char *t = expr_text(dim);
    weir_node_fail(error, INVALID, ctx->node,
                   "cannot split a dimension of %s into %u parts", t, n);
    return NULL;
  }
  for (guint i = 0; i + 1 < n; i++)
    g_ptr_array_add(sizes, weir_expr_ref(part));
  g_ptr_array_add(sizes, weir_expr_ref(last));
  return g_steal_pointer(&sizes);
}

static gboolean infer_split(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  if (ctx->n_outputs == 0)
    return weir_node_fail(error, INVALID, ctx->node, "no outputs");
  guint axis = 0;
  if (!weir_op_normalize_axis(ctx->node, "axis",
                              weir_node_attr_int(ctx->node, "axis", 0), x->rank,
                              FALSE, &axis, error))
    return FALSE;
  g_autoptr(GPtrArray) sizes =
      split_sizes(ctx, x->shape[axis], ctx->n_outputs, error);
  if (!sizes)
    return FALSE;
  g_autoptr(GPtrArray) iv = x->rank == 1 ? weir_op_value_int_values(x) : NULL;
  guint offset = 0;
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, x->rank);
  for (guint k = 0; k < ctx->n_outputs; k++) {
    for (guint d = 0; d < x->rank; d++)
      shape[d] = d == axis ? sizes->pdata[k] : x->shape[d];
    weir_op_set_output(ctx, k, x->dtype, x->rank, shape);
    gint64 len;
    if (iv && weir_expr_is_const(sizes->pdata[k], &len) &&
        offset + len <= iv->len) {
      weir_op_set_output_int_values(
          ctx, k, (WeirExpr *const *)iv->pdata + offset, (guint)len);
      offset += (guint)len;
    }
  }
  return TRUE;
}

/* --------------------------------------------------------------- Slice */

void weir_op_slice_range(WeirExpr *dim, gint64 start, gint64 end, gint64 step,
                         WeirExpr **start_out, WeirExpr **count_out) {
  g_return_if_fail(step != 0);
  /* Exporters write INT64_MAX/INT64_MIN for "to the end"; anything beyond
   * +-2^62 is such a sentinel. */
  const gint64 big = G_GINT64_CONSTANT(1) << 62;
  g_autoptr(WeirExpr) zero = weir_expr_const(0);
  g_autoptr(WeirExpr) minus1 = weir_expr_const(-1);
  g_autoptr(WeirExpr) dim_m1 = weir_expr_add_const(dim, -1);
  g_autoptr(WeirExpr) s = NULL;
  g_autoptr(WeirExpr) e = NULL;
  gboolean pos = step > 0;
  /* start: negative counts from the end, then clamp to [0, dim] (step > 0)
   * or [0, dim - 1] (step < 0). */
  WeirExpr *hi = pos ? dim : dim_m1;
  if (start >= big) {
    s = weir_expr_ref(hi);
  } else if (start <= -big) {
    s = weir_expr_const(0);
  } else {
    g_autoptr(WeirExpr) raw =
        start < 0 ? weir_expr_add_const(dim, start) : weir_expr_const(start);
    g_autoptr(WeirExpr) lo_clamped = max_known(raw, zero);
    s = min_known(lo_clamped, hi);
  }
  /* end: clamp to [0, dim] (step > 0) or [-1, dim - 1] (step < 0). */
  WeirExpr *elo = pos ? zero : minus1;
  if (end >= big) {
    e = weir_expr_ref(hi);
  } else if (end <= -big) {
    e = weir_expr_ref(elo);
  } else {
    g_autoptr(WeirExpr) raw =
        end < 0 ? weir_expr_add_const(dim, end) : weir_expr_const(end);
    g_autoptr(WeirExpr) lo_clamped = max_known(raw, elo);
    e = min_known(lo_clamped, hi);
  }
  gint64 astep = pos ? step : -step;
  g_autoptr(WeirExpr) extent = pos ? weir_expr_sub(e, s) : weir_expr_sub(s, e);
  g_autoptr(WeirExpr) up = weir_expr_add_const(extent, astep - 1);
  g_autoptr(WeirExpr) st = weir_expr_const(astep);
  g_autoptr(WeirExpr) count = weir_expr_floordiv(up, st);
  *start_out = g_steal_pointer(&s);
  *count_out = max_known(count, zero);
}

static gboolean infer_slice(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  const GArray *starts = weir_node_attr_ints(ctx->node, "starts");
  const GArray *ends = weir_node_attr_ints(ctx->node, "ends");
  const GArray *axes = weir_node_attr_ints(ctx->node, "axes");
  const GArray *steps = weir_node_attr_ints(ctx->node, "steps");
  if (!starts || !ends)
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "'starts' and 'ends' must be known constants");
  guint n = starts->len;
  if (ends->len != n || (axes && axes->len != n) || (steps && steps->len != n))
    return weir_node_fail(
        error, INVALID, ctx->node,
        "starts, ends, axes and steps must have the same length");
  g_autoptr(GPtrArray) shape = expr_array();
  g_autoptr(GPtrArray) begins = expr_array();
  g_autofree gint64 *step_of = g_new0(gint64, x->rank + 1);
  for (guint d = 0; d < x->rank; d++) {
    g_ptr_array_add(shape, weir_expr_ref(x->shape[d]));
    g_ptr_array_add(begins, weir_expr_const(0));
    step_of[d] = 1;
  }
  g_autofree gboolean *seen = g_new0(gboolean, x->rank + 1);
  for (guint i = 0; i < n; i++) {
    guint a = 0;
    if (!weir_op_normalize_axis(ctx->node, "axis",
                                axes ? ints_at(axes, i) : (gint64)i, x->rank,
                                FALSE, &a, error))
      return FALSE;
    if (seen[a])
      return weir_node_fail(error, INVALID, ctx->node, "axis %u is repeated",
                            a);
    seen[a] = TRUE;
    gint64 step = steps ? ints_at(steps, i) : 1;
    if (step == 0)
      return weir_node_fail(error, INVALID, ctx->node, "step of axis %u is 0",
                            a);
    WeirExpr *b, *c;
    weir_op_slice_range(x->shape[a], ints_at(starts, i), ints_at(ends, i), step,
                        &b, &c);
    weir_expr_unref(shape->pdata[a]);
    shape->pdata[a] = c;
    weir_expr_unref(begins->pdata[a]);
    begins->pdata[a] = b;
    step_of[a] = step;
  }
  weir_op_set_output(ctx, 0, x->dtype, x->rank,
                     (WeirExpr *const *)shape->pdata);
  /* Known elements (shape vectors, and the pads arrays exporters reverse
   * with a 2-D Slice). */
  g_autoptr(GPtrArray) iv = weir_op_value_int_values(x);
  g_autofree gint64 *in_dims = g_new0(gint64, x->rank + 1);
  g_autofree gint64 *out_dims = g_new0(gint64, x->rank + 1);
  g_autofree gint64 *start = g_new0(gint64, x->rank + 1);
  if (iv && const_dims(x->rank, x->shape, in_dims) &&
      const_dims(x->rank, (WeirExpr *const *)shape->pdata, out_dims) &&
      const_dims(x->rank, (WeirExpr *const *)begins->pdata, start))
    int_values_pick(ctx, 0, iv, x->rank, in_dims, out_dims, NULL, start,
                    step_of);
  return TRUE;
}

/* -------------------------------------------------------------- Gather */

static gboolean infer_gather(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  const WeirOpValue *ind = x ? weir_op_require_input(ctx, 1, error) : NULL;
  if (!ind)
    return FALSE;
  if (x->rank == 0)
    return weir_node_fail(error, INVALID, ctx->node, "input 0 is a scalar");
  if (ind->dtype != WEIR_DTYPE_I32 && ind->dtype != WEIR_DTYPE_I64)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 1 (indices) has dtype %s, "
                          "expected i32 or i64",
                          weir_dtype_name(ind->dtype));
  guint axis = 0;
  if (!weir_op_normalize_axis(ctx->node, "axis",
                              weir_node_attr_int(ctx->node, "axis", 0), x->rank,
                              FALSE, &axis, error))
    return FALSE;
  guint rank = x->rank + ind->rank - 1;
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, rank + 1);
  guint k = 0;
  for (guint d = 0; d < axis; d++)
    shape[k++] = x->shape[d];
  for (guint d = 0; d < ind->rank; d++)
    shape[k++] = ind->shape[d];
  for (guint d = axis + 1; d < x->rank; d++)
    shape[k++] = x->shape[d];
  weir_op_set_output(ctx, 0, x->dtype, rank, shape);

  /* Picking from a known 1-D integer tensor with known indices. */
  if (x->rank != 1)
    return TRUE;
  g_autoptr(GPtrArray) data = weir_op_value_int_values(x);
  g_autoptr(GPtrArray) idx = weir_op_value_int_values(ind);
  if (!data || !idx)
    return TRUE;
  g_autoptr(GPtrArray) vals = g_ptr_array_new();
  for (guint i = 0; i < idx->len; i++) {
    gint64 j;
    if (!weir_expr_is_const(idx->pdata[i], &j))
      return TRUE;
    if (j < 0)
      j += data->len;
    if (j < 0 || j >= (gint64)data->len)
      return weir_node_fail(error, INVALID, ctx->node,
                            "index %u is out of range for %u elements", i,
                            data->len);
    g_ptr_array_add(vals, data->pdata[j]);
  }
  weir_op_set_output_int_values(ctx, 0, (WeirExpr *const *)vals->pdata,
                                vals->len);
  return TRUE;
}

/* -------------------------------------------------------------- Expand */

static gboolean infer_expand(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  g_autoptr(GPtrArray) target = ints_or_input(ctx, "shape", 1);
  if (!target)
    return weir_node_fail(
        error, UNSUPPORTED, ctx->node,
        "the target shape is not known (no 'shape' attribute and "
        "input 1 is not a known constant)");
  guint ranks[2] = {x->rank, target->len};
  WeirExpr *const *shapes[2] = {x->shape, (WeirExpr *const *)target->pdata};
  guint rank;
  WeirExpr **shape;
  g_autoptr(GError) local = NULL;
  if (!weir_op_broadcast(2, ranks, shapes, &rank, &shape, &local))
    return weir_node_fail(error, INVALID, ctx->node, "%s", local->message);
  weir_op_set_output(ctx, 0, x->dtype, rank, shape);
  for (guint d = 0; d < rank; d++)
    weir_expr_unref(shape[d]);
  g_free(shape);
  return TRUE;
}

/* ----------------------------------------------------------------- Pad */

/* Begin and end padding of each dimension from "pads" (and "axes"). */
static gboolean pad_amounts(const WeirOpInferContext *ctx, guint rank,
                            gint64 *begin, gint64 *end, GError **error) {
  const GArray *pads = weir_node_attr_ints(ctx->node, "pads");
  const GArray *axes = weir_node_attr_ints(ctx->node, "axes");
  if (!pads)
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "'pads' must be a known constant");
  guint n = axes ? axes->len : rank;
  if (pads->len != 2 * n)
    return weir_node_fail(error, INVALID, ctx->node,
                          "'pads' has %u entries, expected %u", pads->len,
                          2 * n);
  for (guint d = 0; d < rank; d++)
    begin[d] = end[d] = 0;
  for (guint i = 0; i < n; i++) {
    guint a = i;
    if (axes && !weir_op_normalize_axis(ctx->node, "axis", ints_at(axes, i),
                                        rank, FALSE, &a, error))
      return FALSE;
    begin[a] = ints_at(pads, i);
    end[a] = ints_at(pads, n + i);
  }
  return TRUE;
}

static gboolean infer_pad(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  const WeirAttr *mode = weir_node_attr(ctx->node, "mode");
  const char *m = mode && mode->type == WEIR_ATTR_STRING ? mode->s : "constant";
  if (strcmp(m, "constant") != 0 && strcmp(m, "reflect") != 0 &&
      strcmp(m, "edge") != 0)
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "mode '%s' (supported: constant, reflect, edge)", m);
  g_autofree gint64 *b = g_new0(gint64, x->rank + 1);
  g_autofree gint64 *e = g_new0(gint64, x->rank + 1);
  if (!pad_amounts(ctx, x->rank, b, e, error))
    return FALSE;
  g_autoptr(GPtrArray) shape = expr_array();
  for (guint d = 0; d < x->rank; d++) {
    WeirExpr *dim = weir_expr_add_const(x->shape[d], b[d] + e[d]);
    g_ptr_array_add(shape, dim);
    gint64 v;
    if (weir_expr_is_const(dim, &v) && v < 0)
      return weir_node_fail(
          error, INVALID, ctx->node,
          "padding makes dimension %u negative (%" G_GINT64_FORMAT ")", d, v);
    if (strcmp(m, "constant") != 0 && (b[d] > 0 || e[d] > 0) &&
        is_const(x->shape[d], 0))
      return weir_node_fail(error, INVALID, ctx->node,
                            "mode '%s' cannot pad the empty dimension %u", m,
                            d);
  }
  weir_op_set_output(ctx, 0, x->dtype, x->rank,
                     (WeirExpr *const *)shape->pdata);
  return TRUE;
}

/* ---------------------------------------------------------------- Tile */

static gboolean infer_tile(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  const GArray *rep = weir_node_attr_ints(ctx->node, "repeats");
  if (!rep)
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "'repeats' must be a known constant");
  if (rep->len != x->rank)
    return weir_node_fail(error, INVALID, ctx->node,
                          "'repeats' has %u entries, input rank "
                          "is %u",
                          rep->len, x->rank);
  g_autoptr(GPtrArray) shape = expr_array();
  for (guint d = 0; d < x->rank; d++) {
    if (ints_at(rep, d) < 0)
      return weir_node_fail(error, INVALID, ctx->node,
                            "repeats[%u] is negative", d);
    g_ptr_array_add(shape, weir_expr_mul_const(x->shape[d], ints_at(rep, d)));
  }
  weir_op_set_output(ctx, 0, x->dtype, x->rank,
                     (WeirExpr *const *)shape->pdata);
  return TRUE;
}

/* --------------------------------------------------------------- Shape */

/* [start, end) of Shape-15 for an input of rank r. */
static void shape_bounds(const WeirNode *n, guint r, guint *start, guint *end) {
  gint64 s = weir_node_attr_int(n, "start", 0);
  gint64 e = weir_node_attr_int(n, "end", r);
  if (s < 0)
    s += r;
  if (e < 0)
    e += r;
  s = CLAMP(s, 0, (gint64)r);
  e = CLAMP(e, 0, (gint64)r);
  *start = (guint)s;
  *end = (guint)MAX(s, e);
}

static gboolean infer_shape(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  guint s, e;
  shape_bounds(ctx->node, x->rank, &s, &e);
  g_autoptr(WeirExpr) len = weir_expr_const(e - s);
  weir_op_set_output(ctx, 0, WEIR_DTYPE_I64, 1, &len);
  weir_op_set_output_int_values(ctx, 0, x->shape + s, e - s);
  return TRUE;
}

/* ----------------------------------------------------- ConstantOfShape */

/* ONNX TensorProto element type numbers Weir has a dtype for. */
static gboolean dtype_from_onnx(gint64 onnx_type, WeirDType *out) {
  return weir_op_dtype_from_onnx(onnx_type, out);
}

static gboolean onnx_dtype(const WeirOpInferContext *ctx, WeirDType *out,
                           GError **error) {
  gint64 t = weir_node_attr_int(ctx->node, "dtype", 1);
  if (!dtype_from_onnx(t, out))
    return weir_node_fail(
        error, UNSUPPORTED, ctx->node,
        "ONNX element type %" G_GINT64_FORMAT
        " (supported: FLOAT, DOUBLE, INT32, INT64, UINT8, BOOL)",
        t);
  return TRUE;
}

static gboolean infer_constant_of_shape(WeirOpInferContext *ctx,
                                        GError **error) {
  WeirDType dtype;
  if (!onnx_dtype(ctx, &dtype, error))
    return FALSE;
  g_autoptr(GPtrArray) shape = ints_or_input(ctx, "shape", 0);
  if (!shape)
    return weir_node_fail(
        error, UNSUPPORTED, ctx->node,
        "the shape is not known (no 'shape' attribute and input 0 is "
        "not a known constant)");
  for (guint d = 0; d < shape->len; d++) {
    gint64 v;
    if (weir_expr_is_const(shape->pdata[d], &v) && v < 0)
      return weir_node_fail(error, INVALID, ctx->node,
                            "shape entry %u is %" G_GINT64_FORMAT, d, v);
  }
  weir_op_set_output(ctx, 0, dtype, shape->len,
                     (WeirExpr *const *)shape->pdata);
  /* A small integer constant is known element by element. */
  g_autoptr(WeirExpr) vol =
      shape_product((WeirExpr *const *)shape->pdata, 0, shape->len);
  gint64 count;
  double value = 0;
  const WeirAttr *a = weir_node_attr(ctx->node, "value");
  if (a && a->type == WEIR_ATTR_FLOAT)
    value = a->f;
  if ((dtype == WEIR_DTYPE_I64 || dtype == WEIR_DTYPE_I32) &&
      weir_expr_is_const(vol, &count) && count <= INT_VALUES_MAX) {
    g_autoptr(WeirExpr) v = weir_expr_const((gint64)value);
    g_autofree WeirExpr **vals = g_new0(WeirExpr *, count + 1);
    for (gint64 i = 0; i < count; i++)
      vals[i] = v;
    weir_op_set_output_int_values(ctx, 0, vals, (guint)count);
  }
  return TRUE;
}

/* --------------------------------------------------------------- Range */

/* start, limit, delta (k = 0, 1, 2): the FLOAT attribute, or the known
 * element of input k.  *num receives a number when one is known; *sym a
 * symbolic integer otherwise (or NULL). */
static gboolean range_operand(const WeirOpInferContext *ctx, guint k,
                              double *num, WeirExpr **sym) {
  static const char *const names[] = {"start", "limit", "delta"};
  *sym = NULL;
  const WeirAttr *a = weir_node_attr(ctx->node, names[k]);
  if (a && a->type == WEIR_ATTR_FLOAT) {
    *num = a->f;
    return TRUE;
  }
  const WeirOpValue *v = weir_op_input(ctx, k);
  if (!v)
    return FALSE;
  if (v->value && v->value->count == 1) {
    *num = weir_tensor_get(v->value, 0);
    return TRUE;
  }
  g_autoptr(GPtrArray) iv = weir_op_value_int_values(v);
  if (!iv || iv->len != 1)
    return FALSE;
  gint64 c;
  if (weir_expr_is_const(iv->pdata[0], &c)) {
    *num = (double)c;
    return TRUE;
  }
  *sym = weir_expr_ref(iv->pdata[0]);
  return TRUE;
}

static gboolean infer_range(WeirOpInferContext *ctx, GError **error) {
  WeirDType dtype;
  const WeirOpValue *in0 = weir_op_input(ctx, 0);
  if (in0)
    dtype = in0->dtype;
  else if (!onnx_dtype(ctx, &dtype, error))
    return FALSE;
  if (dtype == WEIR_DTYPE_BOOL || dtype == WEIR_DTYPE_U8)
    return weir_node_fail(error, INVALID, ctx->node, "dtype %s is not allowed",
                          weir_dtype_name(dtype));
  double v[3] = {0, 0, 0};
  WeirExpr *sym[3] = {NULL, NULL, NULL};
  gboolean ok = TRUE;
  for (guint k = 0; k < 3; k++)
    ok = range_operand(ctx, k, &v[k], &sym[k]) && ok;
  g_autoptr(WeirExpr) len = NULL;
  if (!ok) {
    weir_node_fail(error, UNSUPPORTED, ctx->node,
                   "start, limit and delta must be known at import");
  } else if (sym[2] || v[2] == 0) {
    weir_node_fail(error, sym[2] ? UNSUPPORTED : INVALID, ctx->node,
                   sym[2] ? "a symbolic delta" : "delta is 0");
  } else if (!sym[0] && !sym[1]) {
    double n;
    if (weir_dtype_is_float(dtype)) {
      n = ceil((v[1] - v[0]) / v[2]);
    } else {
      gint64 s = (gint64)v[0], l = (gint64)v[1], d = (gint64)v[2];
      gint64 ext = d > 0 ? l - s : s - l, ad = d > 0 ? d : -d;
      n = ext <= 0 ? 0 : (double)((ext + ad - 1) / ad);
    }
    len = weir_expr_const(n > 0 ? (gint64)n : 0);
  } else if (weir_dtype_is_float(dtype)) {
    weir_node_fail(error, UNSUPPORTED, ctx->node,
                   "a symbolic floating-point range");
  } else {
    g_autoptr(WeirExpr) s =
        sym[0] ? weir_expr_ref(sym[0]) : weir_expr_const((gint64)v[0]);
    g_autoptr(WeirExpr) l =
        sym[1] ? weir_expr_ref(sym[1]) : weir_expr_const((gint64)v[1]);
    gint64 d = (gint64)v[2], ad = d > 0 ? d : -d;
    g_autoptr(WeirExpr) ext = d > 0 ? weir_expr_sub(l, s) : weir_expr_sub(s, l);
    g_autoptr(WeirExpr) up = weir_expr_add_const(ext, ad - 1);
    g_autoptr(WeirExpr) den = weir_expr_const(ad);
    g_autoptr(WeirExpr) q = weir_expr_floordiv(up, den);
    g_autoptr(WeirExpr) zero = weir_expr_const(0);
    len = max_known(q, zero);
  }
  for (guint k = 0; k < 3; k++)
    if (sym[k])
      weir_expr_unref(sym[k]);
  if (!len)
    return FALSE;
  weir_op_set_output(ctx, 0, dtype, 1, &len);
  return TRUE;
}

static WeirExpr *flops_range(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n) {
  /* One multiply and one add per floating element. */
  const WeirMemlet *m =
      weir_state_connector_memlet(s, n->id, "out0", FALSE, TRUE);
  if (m) {
    const WeirContainer *c = weir_graph_container(g, m->data);
    if (!c)
      return NULL;
    if (!weir_dtype_is_float(c->dtype))
      return weir_expr_const(0);
    g_autoptr(WeirExpr) vol = weir_container_volume(c);
    return weir_expr_mul_const(vol, 2);
  }
  return NULL;
}

/* ----------------------------------------------------------- ScatterND */

/* The reductions ScatterND knows: "none" (opset 11), "add" and "mul" (16),
 * "max" and "min" (18). */
static gboolean scatter_reduction_ok(const char *r) {
  return strcmp(r, "none") == 0 || strcmp(r, "add") == 0 ||
         strcmp(r, "mul") == 0 || strcmp(r, "max") == 0 ||
         strcmp(r, "min") == 0;
}

static gboolean infer_scatter_nd(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  const WeirOpValue *ind = x ? weir_op_require_input(ctx, 1, error) : NULL;
  const WeirOpValue *upd = ind ? weir_op_require_input(ctx, 2, error) : NULL;
  if (!upd)
    return FALSE;
  const char *r = weir_node_attr_string(ctx->node, "reduction", "none");
  if (!scatter_reduction_ok(r))
    return weir_node_fail(error, INVALID, ctx->node,
                          "reduction '%s' (expected none, add, mul, max or "
                          "min)",
                          r);
  if (ind->dtype != WEIR_DTYPE_I64 && ind->dtype != WEIR_DTYPE_I32)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 1 (indices) has dtype %s, expected i64",
                          weir_dtype_name(ind->dtype));
  if (upd->dtype != x->dtype)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 2 (updates) has dtype %s, but the data has %s",
                          weir_dtype_name(upd->dtype),
                          weir_dtype_name(x->dtype));
  if (ind->rank == 0)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 1 (indices) is a scalar");
  gint64 k;
  if (!weir_expr_is_const(ind->shape[ind->rank - 1], &k))
    return weir_node_fail(error, UNSUPPORTED, ctx->node,
                          "the last dimension of the indices is symbolic");
  if (k < 1 || k > (gint64)x->rank)
    return weir_node_fail(error, INVALID, ctx->node,
                          "the indices address %" G_GINT64_FORMAT
                          " dimensions of data of rank %u",
                          k, x->rank);
  /* updates: indices.shape[:-1] + data.shape[k:] */
  guint want = ind->rank - 1 + x->rank - (guint)k;
  gboolean ok = upd->rank == want;
  for (guint d = 0; ok && d < want; d++) {
    WeirExpr *e =
        d < ind->rank - 1 ? ind->shape[d] : x->shape[k + d - (ind->rank - 1)];
    ok = weir_expr_equal(e, upd->shape[d]);
  }
  if (!ok)
    return weir_node_fail(error, INVALID, ctx->node,
                          "input 2 (updates) must have the shape "
                          "indices.shape[:-1] + data.shape[%" G_GINT64_FORMAT
                          ":] (rank %u)",
                          k, want);
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  return TRUE;
}

static WeirExpr *flops_scatter_nd(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n) {
  /* One addition, product, max or min per floating update element. */
  const char *r = weir_node_attr_string(n, "reduction", "none");
  const WeirMemlet *m =
      weir_state_connector_memlet(s, n->id, "in2", TRUE, TRUE);
  if (!m)
    return NULL;
  const WeirContainer *c = weir_graph_container(g, m->data);
  if (!c)
    return NULL;
  if (strcmp(r, "none") == 0 || !weir_dtype_is_float(c->dtype))
    return weir_expr_const(0);
  return weir_container_volume(c);
}

/* ------------------------------------------------------------- schemas */

static const WeirOpAttrSpec transpose_attrs[] = {
    {"perm", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
};
static const WeirOpAttrSpec reshape_attrs[] = {
    {"allowzero", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"shape", WEIR_ATTR_INTS, FALSE, NULL, 2, 5},
};
static const WeirOpAttrSpec flatten_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "1", 0, 0},
};
static const WeirOpAttrSpec squeeze_attrs[] = {
    {"axes", WEIR_ATTR_INTS, FALSE, NULL, 2, 13},
};
static const WeirOpAttrSpec unsqueeze_attrs[] = {
    {"axes", WEIR_ATTR_INTS, TRUE, NULL, 2, 13},
};
static const WeirOpAttrSpec concat_attrs[] = {
    {"axis", WEIR_ATTR_INT, TRUE, NULL, 0, 0},
};
static const WeirOpAttrSpec split_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"num_outputs", WEIR_ATTR_INT, FALSE, NULL, 0, 0},
    {"split", WEIR_ATTR_INTS, FALSE, NULL, 2, 13},
};
static const WeirOpAttrSpec slice_attrs[] = {
    {"axes", WEIR_ATTR_INTS, FALSE, NULL, 4, 10},
    {"ends", WEIR_ATTR_INTS, TRUE, NULL, 3, 10},
    {"starts", WEIR_ATTR_INTS, TRUE, NULL, 2, 10},
    {"steps", WEIR_ATTR_INTS, FALSE, NULL, 5, 10},
};
static const WeirOpAttrSpec gather_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec expand_attrs[] = {
    {"shape", WEIR_ATTR_INTS, FALSE, NULL, 2, 8},
};
static const WeirOpAttrSpec pad_attrs[] = {
    {"axes", WEIR_ATTR_INTS, FALSE, NULL, 4, 18},
    {"mode", WEIR_ATTR_STRING, FALSE, "constant", 0, 0},
    {"pads", WEIR_ATTR_INTS, TRUE, NULL, 2, 11},
    {"value", WEIR_ATTR_FLOAT, FALSE, "0", 3, 11},
};
static const WeirOpAttrSpec tile_attrs[] = {
    {"repeats", WEIR_ATTR_INTS, TRUE, NULL, 2, 6},
};
static const WeirOpAttrSpec shape_attrs[] = {
    {"end", WEIR_ATTR_INT, FALSE, NULL, 0, 0},
    {"start", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec constant_of_shape_attrs[] = {
    {"dtype", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"shape", WEIR_ATTR_INTS, FALSE, NULL, 1, 9},
    {"value", WEIR_ATTR_FLOAT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec range_attrs[] = {
    {"delta", WEIR_ATTR_FLOAT, FALSE, NULL, 3, 11},
    {"dtype", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"limit", WEIR_ATTR_FLOAT, FALSE, NULL, 2, 11},
    {"start", WEIR_ATTR_FLOAT, FALSE, NULL, 1, 11},
};
static const WeirOpAttrSpec scatter_nd_attrs[] = {
    {"reduction", WEIR_ATTR_STRING, FALSE, "none", 0, 0},
};

#define OP(name_, min_in, max_in, min_out, max_out, attrs_, infer_, flops_)    \
  {                                                                            \
    .name = name_, .min_inputs = min_in, .max_inputs = max_in,                 \
    .min_outputs = min_out, .max_outputs = max_out, .attrs = attrs_,           \
    .n_attrs = G_N_ELEMENTS(attrs_), .infer = infer_, .flops = flops_,         \
  }

static const WeirOpInfo shape_ops[] = {
    OP("Transpose", 1, 1, 1, 1, transpose_attrs, infer_transpose,
       weir_op_flops_zero),
    OP("Reshape", 1, 2, 1, 1, reshape_attrs, infer_reshape, weir_op_flops_zero),
    OP("Flatten", 1, 1, 1, 1, flatten_attrs, infer_flatten, weir_op_flops_zero),
    OP("Squeeze", 1, 2, 1, 1, squeeze_attrs, infer_squeeze, weir_op_flops_zero),
    OP("Unsqueeze", 1, 2, 1, 1, unsqueeze_attrs, infer_unsqueeze,
       weir_op_flops_zero),
    OP("Concat", 1, WEIR_OP_VARIADIC, 1, 1, concat_attrs, infer_concat,
       weir_op_flops_zero),
    OP("Split", 1, 2, 1, WEIR_OP_VARIADIC, split_attrs, infer_split,
       weir_op_flops_zero),
    OP("Slice", 1, 5, 1, 1, slice_attrs, infer_slice, weir_op_flops_zero),
    OP("Gather", 2, 2, 1, 1, gather_attrs, infer_gather, weir_op_flops_zero),
    OP("Expand", 1, 2, 1, 1, expand_attrs, infer_expand, weir_op_flops_zero),
    OP("Pad", 1, 4, 1, 1, pad_attrs, infer_pad, weir_op_flops_zero),
    OP("Tile", 1, 2, 1, 1, tile_attrs, infer_tile, weir_op_flops_zero),
    OP("Shape", 1, 1, 1, 1, shape_attrs, infer_shape, weir_op_flops_zero),
    OP("ConstantOfShape", 0, 1, 1, 1, constant_of_shape_attrs,
       infer_constant_of_shape, weir_op_flops_zero),
    OP("Range", 0, 3, 1, 1, range_attrs, infer_range, flops_range),
    OP("ScatterND", 3, 3, 1, 1, scatter_nd_attrs, infer_scatter_nd,
       flops_scatter_nd),
};

void weir_ops_register_shape(void) {
  for (guint i = 0; i < G_N_ELEMENTS(shape_ops); i++)
    weir_op_register(&shape_ops[i]);
}
