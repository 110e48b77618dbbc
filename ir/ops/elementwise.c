/* elementwise.c — schemas, inference and FLOP counts of the elementwise
 * operators (activations, arithmetic, comparisons, logic, Clip, Where,
 * Cast, Identity, Dropout and BatchNormalization, whose training mode
 * also gives the running statistics and expands into reductions in
 * ir/lower/expand/batchnorm-training.c).
 *
 * Structure: one static table, `ops`, with a row per operator.  A row embeds
 * the WeirOpInfo record that is registered (schema: input/output counts and
 * attribute specs) and adds what the shared functions need to know:
 *   - rule: how inputs relate to outputs (plain numpy broadcasting of every
 *     input, or one of the operators with special roles for some inputs);
 *   - types: the dtypes allowed for the data type T (a bit mask);
 *   - bool_out: the output is bool (comparisons, logic);
 *   - flop_rule / flops: floating-point operations per output element.
 * elem_infer and elem_flops find their row by the node's op name, so every
 * operator shares one inference and one FLOP function.
 *
 * FLOP convention: FLOPs count floating-point work only, as the analysis of
 * the expanded tasklets does: an operator on integer or bool data counts 0;
 * otherwise each arithmetic operation, comparison, min/max or math function
 * (exp, tanh, erf, sqrt, ...) of the operator's formula counts 1 per output
 * element (Mod on floats, a C fmod, counts 1) (Sigmoid 1/(1+exp(-x)) is 4,
 * Softplus log(exp(x)+1) is 3).  Pure data movement (Identity, Cast, Dropout at
 * inference, Where) counts 0.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_elementwise(void);

#define DT(x) (1u << WEIR_DTYPE_##x)
#define TY_FLOAT (DT(F32) | DT(F64) | DT(F16) | DT(BF16))
#define TY_SIGNED (TY_FLOAT | DT(I32) | DT(I64) | DT(I8) | DT(I16))
#define TY_UNSIGNED (DT(U8) | DT(U16) | DT(U32) | DT(U64))
#define TY_NUMERIC (TY_SIGNED | TY_UNSIGNED)
#define TY_BOOL DT(BOOL)
#define TY_ANY (TY_NUMERIC | TY_BOOL)

typedef enum {
  RULE_BROADCAST,  /* every input is data of type T, broadcast together */
  RULE_POW,        /* base T, exponent of any numeric type, broadcast */
  RULE_WHERE,      /* bool condition, two values of type T, broadcast */
  RULE_CLIP,       /* data, optional scalar min and max of the same type */
  RULE_CAST,       /* output dtype from attribute "to" */
  RULE_CAST_LIKE,  /* output dtype from input 1 (whose data is not read) */
  RULE_QUANT,      /* x, a scale (scalar or per `axis`), an optional u8
                      zero point of its shape: QuantizeLinear gives u8,
                      DequantizeLinear the scale's dtype */
  RULE_FLOAT_TEST, /* float data, bool result of its shape (IsNaN, IsInf) */
  RULE_DROPOUT,    /* inference: identity, optional all-true mask */
  RULE_BATCHNORM,  /* X (N, C, ...), four per-channel vectors of size C;
                      in training mode also running mean and variance */
} Rule;

typedef enum {
  FLOPS_FIXED,        /* `flops` per element */
  FLOPS_INPUTS_MINUS, /* (number of inputs - 1) per element */
  FLOPS_INPUTS,       /* number of inputs per element (Mean) */
  FLOPS_BOUNDS,       /* number of bounds given (Clip) */
} FlopRule;

typedef struct {
  WeirOpInfo info; /* registered record */
  Rule rule;
  guint types;
  gboolean bool_out;
  FlopRule flop_rule;
  guint flops;
} ElemOp;

static gboolean elem_infer(WeirOpInferContext *ctx, GError **error);
static WeirExpr *elem_flops(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n);

/* ------------------------------------------------------------ attributes */

static const WeirOpAttrSpec leaky_relu_attrs[] = {
    {"alpha", WEIR_ATTR_FLOAT, FALSE, "0.01", 0, 0},
};
static const WeirOpAttrSpec hard_sigmoid_attrs[] = {
    {"alpha", WEIR_ATTR_FLOAT, FALSE, "0.2", 0, 0},
    {"beta", WEIR_ATTR_FLOAT, FALSE, "0.5", 0, 0},
};
static const WeirOpAttrSpec elu_attrs[] = {
    {"alpha", WEIR_ATTR_FLOAT, FALSE, "1.0", 0, 0},
};
static const WeirOpAttrSpec one_alpha_attrs[] = {
    {"alpha", WEIR_ATTR_FLOAT, FALSE, "1.0", 0, 0},
};
/* Selu's defaults are ONNX's float constants, written exactly. */
static const WeirOpAttrSpec selu_attrs[] = {
    {"alpha", WEIR_ATTR_FLOAT, FALSE, "1.67326319217681884765625", 0, 0},
    {"gamma", WEIR_ATTR_FLOAT, FALSE, "1.05070102214813232421875", 0, 0},
};
static const WeirOpAttrSpec shrink_attrs[] = {
    {"bias", WEIR_ATTR_FLOAT, FALSE, "0.0", 0, 0},
    {"lambd", WEIR_ATTR_FLOAT, FALSE, "0.5", 0, 0},
};
static const WeirOpAttrSpec quant_attrs[] = {
    {"axis", WEIR_ATTR_INT, FALSE, "1", 0, 0},
};
static const WeirOpAttrSpec is_inf_attrs[] = {
    {"detect_negative", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"detect_positive", WEIR_ATTR_INT, FALSE, "1", 0, 0},
};
static const WeirOpAttrSpec bit_shift_attrs[] = {
    {"direction", WEIR_ATTR_STRING, TRUE, NULL, 0, 0},
};
static const WeirOpAttrSpec cast_like_attrs[] = {
    {"saturate", WEIR_ATTR_INT, FALSE, "1", 0, 0},
};
/* Clip: attributes up to opset 10, inputs 2 and 3 since 11.  No default:
 * an absent bound means unbounded. */
static const WeirOpAttrSpec clip_attrs[] = {
    {"max", WEIR_ATTR_FLOAT, FALSE, NULL, 3, 11},
    {"min", WEIR_ATTR_FLOAT, FALSE, NULL, 2, 11},
};
/* Mod: fmod = 1 gives the sign of the dividend (C fmod), required for
 * floating types; fmod = 0 the sign of the divisor (Python). */
static const WeirOpAttrSpec mod_attrs[] = {
    {"fmod", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};
static const WeirOpAttrSpec cast_attrs[] = {
    {"saturate", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"to", WEIR_ATTR_INT, TRUE, NULL, 0, 0},
};
/* Dropout: ratio an attribute up to opset 11, input 2 since 12;
 * training_mode input 3 since 12 (inference before). */
static const WeirOpAttrSpec dropout_attrs[] = {
    {"ratio", WEIR_ATTR_FLOAT, FALSE, "0.5", 2, 12},
    {"seed", WEIR_ATTR_INT, FALSE, NULL, 0, 0},
    {"training_mode", WEIR_ATTR_INT, FALSE, "0", 3, 12},
};
/* BatchNormalization: "spatial" existed before opset 9 (1 = per channel,
 * the only form supported); no default, so it is never filled in. */
static const WeirOpAttrSpec batchnorm_attrs[] = {
    {"epsilon", WEIR_ATTR_FLOAT, FALSE, "1e-05", 0, 0},
    {"momentum", WEIR_ATTR_FLOAT, FALSE, "0.9", 0, 0},
    {"spatial", WEIR_ATTR_INT, FALSE, NULL, 0, 0},
    {"training_mode", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};

/* ----------------------------------------------------------------- table */

/* OP expands its arguments first (through OP_) so ATTRS() can supply two. */
#define OP(...) OP_(__VA_ARGS__)
#define OP_(nm, min_in, max_in, min_out, max_out, attrs_, n_attrs_, rule_,     \
            types_, bool_out_, flop_rule_, flops_)                             \
  {                                                                            \
    .info = {.name = nm,                                                       \
             .min_inputs = min_in,                                             \
             .max_inputs = max_in,                                             \
             .min_outputs = min_out,                                           \
             .max_outputs = max_out,                                           \
             .attrs = attrs_,                                                  \
             .n_attrs = n_attrs_,                                              \
             .infer = elem_infer,                                              \
             .flops = elem_flops},                                             \
    .rule = rule_, .types = types_, .bool_out = bool_out_,                     \
    .flop_rule = flop_rule_, .flops = flops_                                   \
  }
#define ATTRS(a) a, G_N_ELEMENTS(a)
#define NO_ATTRS NULL, 0
/* One input, one output, same dtype and shape. */
#define UNARY(nm, types, flops, attrs)                                         \
  OP(nm, 1, 1, 1, 1, attrs, RULE_BROADCAST, types, FALSE, FLOPS_FIXED, flops)
/* Two broadcast inputs. */
#define BINARY(nm, types, bool_out, flops)                                     \
  OP(nm, 2, 2, 1, 1, NO_ATTRS, RULE_BROADCAST, types, bool_out, FLOPS_FIXED,   \
     flops)
/* One or more broadcast inputs. */
#define VARIADIC(nm, types, flop_rule)                                         \
  OP(nm, 1, WEIR_OP_VARIADIC, 1, 1, NO_ATTRS, RULE_BROADCAST, types, FALSE,    \
     flop_rule, 0)

static const ElemOp ops[] = {
    /* Activations. */
    UNARY("Relu", TY_SIGNED, 1, NO_ATTRS),
    UNARY("LeakyRelu", TY_FLOAT, 2, ATTRS(leaky_relu_attrs)),
    UNARY("Sigmoid", TY_FLOAT, 4, NO_ATTRS),
    UNARY("Tanh", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Softplus", TY_FLOAT, 3, NO_ATTRS),
    UNARY("HardSigmoid", TY_FLOAT, 4, ATTRS(hard_sigmoid_attrs)),
    UNARY("HardSwish", TY_FLOAT, 5, NO_ATTRS),
    UNARY("Elu", TY_FLOAT, 4, ATTRS(elu_attrs)),
    /* max(0, x) + min(0, alpha (exp(x / alpha) - 1)) */
    UNARY("Celu", TY_FLOAT, 6, ATTRS(one_alpha_attrs)),
    /* x > 0 ? gamma x : gamma (alpha exp(x) - alpha) */
    UNARY("Selu", TY_FLOAT, 5, ATTRS(selu_attrs)),
    UNARY("ThresholdedRelu", TY_FLOAT, 1, ATTRS(one_alpha_attrs)),
    /* x / (1 + |x|) */
    UNARY("Softsign", TY_FLOAT, 3, NO_ATTRS),
    /* x < -lambd ? x + bias : x > lambd ? x - bias : 0 */
    UNARY("Shrink", TY_SIGNED, 3, ATTRS(shrink_attrs)),
    /* x < 0 ? slope x : x, slope broadcast to x */
    BINARY("PRelu", TY_SIGNED, FALSE, 2),
    /* Unary math. */
    UNARY("Sqrt", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Exp", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Log", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Neg", TY_SIGNED, 1, NO_ATTRS),
    UNARY("Abs", TY_NUMERIC, 1, NO_ATTRS),
    UNARY("Reciprocal", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Erf", TY_NUMERIC, 1, NO_ATTRS),
    UNARY("Floor", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Ceil", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Round", TY_FLOAT, 1, NO_ATTRS), /* halves to even */
    UNARY("Sign", TY_NUMERIC, 2, NO_ATTRS),
    /* Trigonometric and hyperbolic functions. */
    UNARY("Sin", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Cos", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Tan", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Asin", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Acos", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Atan", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Sinh", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Cosh", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Asinh", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Acosh", TY_FLOAT, 1, NO_ATTRS),
    UNARY("Atanh", TY_FLOAT, 1, NO_ATTRS),
    /* Tests of floats: isnan (1), or one comparison per infinity sought. */
    OP("IsNaN", 1, 1, 1, 1, NO_ATTRS, RULE_FLOAT_TEST, TY_FLOAT, TRUE,
       FLOPS_FIXED, 1),
    OP("IsInf", 1, 1, 1, 1, ATTRS(is_inf_attrs), RULE_FLOAT_TEST, TY_FLOAT,
       TRUE, FLOPS_FIXED, 2),
    UNARY("Not", TY_BOOL, 0, NO_ATTRS),
    UNARY("Identity", TY_ANY, 0, NO_ATTRS),
    /* Binary arithmetic, comparisons and logic. */
    BINARY("Add", TY_NUMERIC, FALSE, 1),
    BINARY("Sub", TY_NUMERIC, FALSE, 1),
    BINARY("Mul", TY_NUMERIC, FALSE, 1),
    BINARY("Div", TY_NUMERIC, FALSE, 1),
    OP("Mod", 2, 2, 1, 1, ATTRS(mod_attrs), RULE_BROADCAST, TY_NUMERIC, FALSE,
       FLOPS_FIXED, 1),
    OP("Pow", 2, 2, 1, 1, NO_ATTRS, RULE_POW, TY_SIGNED, FALSE, FLOPS_FIXED, 1),
    BINARY("Equal", TY_ANY, TRUE, 1),
    BINARY("Less", TY_NUMERIC, TRUE, 1),
    BINARY("Greater", TY_NUMERIC, TRUE, 1),
    BINARY("LessOrEqual", TY_NUMERIC, TRUE, 1),
    BINARY("GreaterOrEqual", TY_NUMERIC, TRUE, 1),
    BINARY("And", TY_BOOL, TRUE, 0),
    BINARY("Or", TY_BOOL, TRUE, 0),
    BINARY("Xor", TY_BOOL, TRUE, 0),
    OP("BitShift", 2, 2, 1, 1, ATTRS(bit_shift_attrs), RULE_BROADCAST,
       TY_UNSIGNED, FALSE, FLOPS_FIXED, 0),
    /* Variadic. */
    VARIADIC("Min", TY_NUMERIC, FLOPS_INPUTS_MINUS),
    VARIADIC("Max", TY_NUMERIC, FLOPS_INPUTS_MINUS),
    VARIADIC("Sum", TY_NUMERIC, FLOPS_INPUTS_MINUS),
    VARIADIC("Mean", TY_FLOAT, FLOPS_INPUTS),
    /* Operators with special inputs. */
    OP("Clip", 1, 3, 1, 1, ATTRS(clip_attrs), RULE_CLIP, TY_NUMERIC, FALSE,
       FLOPS_BOUNDS, 0),
    OP("Where", 3, 3, 1, 1, NO_ATTRS, RULE_WHERE, TY_ANY, FALSE, FLOPS_FIXED,
       0),
    OP("Cast", 1, 1, 1, 1, ATTRS(cast_attrs), RULE_CAST, TY_ANY, FALSE,
       FLOPS_FIXED, 0),
    /* Dequantize (x - zero point) * scale: the product (the subtraction is
     * on integers); Quantize saturate(rint(x / scale) + zero point): the
     * division, rint, the addition and the two bounds. */
    OP("DequantizeLinear", 2, 3, 1, 1, ATTRS(quant_attrs), RULE_QUANT,
       DT(U8) | DT(I8) | DT(I32), FALSE, FLOPS_FIXED, 1),
    OP("QuantizeLinear", 2, 3, 1, 1, ATTRS(quant_attrs), RULE_QUANT,
       TY_FLOAT | DT(I32), FALSE, FLOPS_FIXED, 5),
    OP("CastLike", 2, 2, 1, 1, ATTRS(cast_like_attrs), RULE_CAST_LIKE, TY_ANY,
       FALSE, FLOPS_FIXED, 0),
    OP("Dropout", 1, 3, 1, 2, ATTRS(dropout_attrs), RULE_DROPOUT, TY_FLOAT,
       FALSE, FLOPS_FIXED, 0),
    OP("BatchNormalization", 5, 5, 1, 5, ATTRS(batchnorm_attrs), RULE_BATCHNORM,
       TY_FLOAT, FALSE, FLOPS_FIXED, 6),
};

static const ElemOp *find_op(const char *name) {
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++)
    if (g_strcmp0(ops[i].info.name, name) == 0)
      return &ops[i];
  return NULL;
}

void weir_ops_register_elementwise(void) {
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++)
    weir_op_register(&ops[i].info);
}

/* ---------------------------------------------------------------- helpers */

/* A float attribute, or its schema default; FALSE when neither exists. */
static gboolean attr_float(const WeirNode *n, const ElemOp *e, const char *name,
                           double *out) {
  const WeirAttr *a = weir_node_attr(n, name);
  if (a && a->type == WEIR_ATTR_FLOAT) {
    *out = a->f;
    return TRUE;
  }
  if (a && a->type == WEIR_ATTR_INT) {
    *out = (double)a->i;
    return TRUE;
  }
  for (guint i = 0; i < e->info.n_attrs; i++)
    if (strcmp(e->info.attrs[i].name, name) == 0 &&
        e->info.attrs[i].default_value) {
      *out = g_ascii_strtod(e->info.attrs[i].default_value, NULL);
      return TRUE;
    }
  return FALSE;
}

static gboolean attr_int(const WeirNode *n, const ElemOp *e, const char *name,
                         gint64 *out) {
  const WeirAttr *a = weir_node_attr(n, name);
  if (a && a->type == WEIR_ATTR_INT) {
    *out = a->i;
    return TRUE;
  }
  for (guint i = 0; i < e->info.n_attrs; i++)
    if (strcmp(e->info.attrs[i].name, name) == 0 &&
        e->info.attrs[i].default_value) {
      *out = g_ascii_strtoll(e->info.attrs[i].default_value, NULL, 10);
      return TRUE;
    }
  return FALSE;
}

/* "f32 or f64" for a type mask. (transfer full) */
static char *types_text(guint mask) {
  GString *s = g_string_new(NULL);
  guint count = 0, total = 0;
  for (guint d = 0; d < WEIR_DTYPE_COUNT; d++)
    total += (mask >> d) & 1;
  for (guint d = 0; d < WEIR_DTYPE_COUNT; d++) {
    if (!((mask >> d) & 1))
      continue;
    if (count > 0)
      g_string_append(s, count + 1 == total ? " or " : ", ");
    g_string_append(s, weir_dtype_name((WeirDType)d));
    count++;
  }
  return g_string_free(s, FALSE);
}

static gboolean require_input(const WeirOpInferContext *ctx, guint k,
                              const WeirOpValue **out, GError **error) {
  *out = weir_op_require_input(ctx, k, error);
  return *out != NULL;
}

static gboolean check_dtype(const WeirOpInferContext *ctx, guint k,
                            WeirDType dtype, guint mask, GError **error) {
  if ((mask >> dtype) & 1)
    return TRUE;
  g_autofree char *expected = types_text(mask);
  return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, ctx->node,
                        "input %u has dtype %s, expected %s", k,
                        weir_dtype_name(dtype), expected);
}

/* TRUE when every dimension is the constant 1 (a scalar in effect). */
static gboolean is_single(const WeirOpValue *v) {
  for (guint d = 0; d < v->rank; d++) {
    gint64 c;
    if (!weir_expr_is_const(v->shape[d], &c) || c != 1)
      return FALSE;
  }
  return TRUE;
}

/* Broadcasts the present inputs among indices first..last and sets output
 * 0 to the result with the given dtype. */
static gboolean set_broadcast(WeirOpInferContext *ctx, guint first, guint last,
                              WeirDType dtype, GError **error) {
  guint ranks[8];
  WeirExpr *const *shapes[8];
  g_autofree guint *ranks_heap = NULL;
  g_autofree WeirExpr *const **shapes_heap = NULL;
  guint *r = ranks;
  WeirExpr *const **sh = shapes;
  guint count = last - first + 1;
  if (count > G_N_ELEMENTS(ranks)) {
    r = ranks_heap = g_new0(guint, count);
    sh = shapes_heap = g_new0(WeirExpr *const *, count);
  }
  guint n = 0;
  for (guint k = first; k <= last; k++) {
    const WeirOpValue *v = weir_op_input(ctx, k);
    if (!v)
      continue;
    r[n] = v->rank;
    sh[n] = v->shape;
    n++;
  }
  guint rank;
  WeirExpr **shape;
  g_autoptr(GError) local = NULL;
  if (!weir_op_broadcast(n, r, sh, &rank, &shape, &local))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node, "%s",
                          local->message);
  weir_op_set_output(ctx, 0, dtype, rank, shape);
  for (guint d = 0; d < rank; d++)
    weir_expr_unref(shape[d]);
  g_free(shape);
  return TRUE;
}

/* ONNX TensorProto data type numbers Weir supports, and names of the others
 * for messages. */
static gboolean onnx_dtype(gint64 to, WeirDType *out) {
  return weir_op_dtype_from_onnx(to, out);
}

static const char *onnx_dtype_name(gint64 to) {
  static const char *const names[] = {
      "UNDEFINED",      "FLOAT",      "UINT8",
      "INT8",           "UINT16",     "INT16",
      "INT32",          "INT64",      "STRING",
      "BOOL",           "FLOAT16",    "DOUBLE",
      "UINT32",         "UINT64",     "COMPLEX64",
      "COMPLEX128",     "BFLOAT16",   "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ",
      "UINT4",          "INT4"};
  if (to >= 0 && to < (gint64)G_N_ELEMENTS(names))
    return names[to];
  return "unknown";
}

/* --------------------------------------------------------------- infer */

static gboolean check_counts(const WeirOpInferContext *ctx, const ElemOp *e,
                             GError **error) {
  guint present = 0;
  for (guint k = 0; k < ctx->n_inputs; k++)
    present += ctx->inputs[k].present ? 1 : 0;
  if (present < e->info.min_inputs || (e->info.max_inputs != WEIR_OP_VARIADIC &&
                                       ctx->n_inputs > e->info.max_inputs))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "has %u inputs, expected %u to %u", present,
                          e->info.min_inputs, e->info.max_inputs);
  for (guint k = 0; k < e->info.min_inputs; k++)
    if (!weir_op_input(ctx, k))
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u is missing", k);
  if (ctx->n_outputs < 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "has no output");
  return TRUE;
}

/* Neg of known integer elements (a negated axis count in ONNX function
 * bodies: LayerNormalization's expansion). */
static void int_values_neg(WeirOpInferContext *ctx) {
  g_autoptr(GPtrArray) a = weir_op_value_int_values(&ctx->inputs[0]);
  if (!a)
    return;
  g_autoptr(GPtrArray) r =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint i = 0; i < a->len; i++)
    g_ptr_array_add(r, weir_expr_neg(g_ptr_array_index(a, i)));
  weir_op_set_output_int_values(ctx, 0, (WeirExpr *const *)r->pdata, r->len);
}

static gboolean infer_broadcast(WeirOpInferContext *ctx, const ElemOp *e,
                                GError **error) {
  WeirDType t = ctx->inputs[0].dtype;
  if (!check_dtype(ctx, 0, t, e->types, error))
    return FALSE;
  for (guint k = 1; k < ctx->n_inputs; k++) {
    const WeirOpValue *v = weir_op_input(ctx, k);
    if (!v)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u is missing", k);
    if (v->dtype != t)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u has dtype %s, but input 0 has %s", k,
                            weir_dtype_name(v->dtype), weir_dtype_name(t));
  }
  if (!set_broadcast(ctx, 0, ctx->n_inputs - 1,
                     e->bool_out ? WEIR_DTYPE_BOOL : t, error))
    return FALSE;
  /* Shape computations (Shape -> ... -> Reshape) on integers stay known at
   * import time, symbolically when the sizes are symbols. */
  const char *op = ctx->node->op;
  if (g_str_equal(op, "Mod") && weir_dtype_is_float(t) &&
      weir_node_attr_int(ctx->node, "fmod", 0) == 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "fmod = 0 on floating-point inputs (ONNX requires "
                          "fmod = 1 for %s)",
                          weir_dtype_name(t));
  if (g_str_equal(op, "BitShift")) {
    const char *dir = weir_node_attr_string(ctx->node, "direction", "");
    if (g_strcmp0(dir, "LEFT") != 0 && g_strcmp0(dir, "RIGHT") != 0)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "direction '%s', expected LEFT or RIGHT", dir);
  }
  if (t == WEIR_DTYPE_I64 || t == WEIR_DTYPE_I32) {
    if (e->info.max_inputs == 2 && e->info.min_inputs == 2 &&
        !g_str_equal(op, "PRelu"))
      weir_op_int_values_binary(ctx, op); /* arithmetic, Mod, comparisons */
    else if (g_str_equal(op, "Identity"))
      weir_op_int_values_copy(ctx, 0, 0);
    else if (g_str_equal(op, "Neg"))
      int_values_neg(ctx);
  } else if (t == WEIR_DTYPE_BOOL && g_str_equal(op, "Not")) {
    weir_op_int_values_not(ctx);
  }
  return TRUE;
}

static gboolean infer_pow(WeirOpInferContext *ctx, const ElemOp *e,
                          GError **error) {
  if (!check_dtype(ctx, 0, ctx->inputs[0].dtype, e->types, error) ||
      !check_dtype(ctx, 1, ctx->inputs[1].dtype, TY_NUMERIC, error))
    return FALSE;
  return set_broadcast(ctx, 0, 1, ctx->inputs[0].dtype, error);
}

static gboolean infer_where(WeirOpInferContext *ctx, const ElemOp *e,
                            GError **error) {
  WeirDType t = ctx->inputs[1].dtype;
  if (!check_dtype(ctx, 0, ctx->inputs[0].dtype, TY_BOOL, error) ||
      !check_dtype(ctx, 1, t, e->types, error))
    return FALSE;
  if (ctx->inputs[2].dtype != t)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input 2 has dtype %s, but input 1 has %s",
                          weir_dtype_name(ctx->inputs[2].dtype),
                          weir_dtype_name(t));
  if (!set_broadcast(ctx, 0, 2, t, error))
    return FALSE;
  if (t == WEIR_DTYPE_I64 || t == WEIR_DTYPE_I32)
    weir_op_int_values_where(ctx);
  return TRUE;
}

static gboolean infer_clip(WeirOpInferContext *ctx, const ElemOp *e,
                           GError **error) {
  const WeirOpValue *x = &ctx->inputs[0];
  if (!check_dtype(ctx, 0, x->dtype, e->types, error))
    return FALSE;
  static const char *const bound[] = {"min", "max"};
  for (guint k = 1; k <= 2; k++) {
    const WeirOpValue *v = weir_op_input(ctx, k);
    if (!v)
      continue;
    if (weir_node_attr(ctx->node, bound[k - 1]))
      return weir_node_fail(
          error, WEIR_ERROR_INVALID, ctx->node,
          "'%s' is given both as an attribute and as input %u", bound[k - 1],
          k);
    if (v->dtype != x->dtype)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u (%s) has dtype %s, but input 0 has %s", k,
                            bound[k - 1], weir_dtype_name(v->dtype),
                            weir_dtype_name(x->dtype));
    if (!is_single(v))
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u (%s) must be a scalar, but has rank %u",
                            k, bound[k - 1], v->rank);
  }
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  return TRUE;
}

static gboolean infer_cast(WeirOpInferContext *ctx, const ElemOp *e,
                           GError **error) {
  gint64 to;
  if (!attr_int(ctx->node, e, "to", &to))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "required attribute 'to' is missing");
  WeirDType out;
  if (!onnx_dtype(to, &out))
    return weir_node_fail(
        error, WEIR_ERROR_UNSUPPORTED, ctx->node,
        "cast to ONNX data type %" G_GINT64_FORMAT
        " (%s) is not supported (only FLOAT, DOUBLE, INT32, INT64, "
        "UINT8 and BOOL)",
        to, onnx_dtype_name(to));
  const WeirOpValue *x = &ctx->inputs[0];
  weir_op_set_output(ctx, 0, out, x->rank, x->shape);
  if ((out == WEIR_DTYPE_I64 || out == WEIR_DTYPE_I32) &&
      !weir_dtype_is_float(x->dtype))
    weir_op_int_values_copy(ctx, 0, 0);
  return TRUE;
}

static gboolean infer_cast_like(WeirOpInferContext *ctx, const ElemOp *e,
                                GError **error) {
  (void)e;
  (void)error;
  const WeirOpValue *x = &ctx->inputs[0];
  WeirDType out = ctx->inputs[1].dtype;
  weir_op_set_output(ctx, 0, out, x->rank, x->shape);
  if ((out == WEIR_DTYPE_I64 || out == WEIR_DTYPE_I32) &&
      !weir_dtype_is_float(x->dtype))
    weir_op_int_values_copy(ctx, 0, 0);
  return TRUE;
}

/* The scale (input 1) and zero point (input 2): scalars, or vectors over
 * dimension `axis` of x. */
static gboolean infer_quant(WeirOpInferContext *ctx, const ElemOp *e,
                            GError **error) {
  const WeirOpValue *x = &ctx->inputs[0];
  const WeirOpValue *scale = &ctx->inputs[1];
  const WeirOpValue *zp = weir_op_input(ctx, 2);
  gboolean quantize = g_str_equal(ctx->node->op, "QuantizeLinear");
  if (!check_dtype(ctx, 0, x->dtype, e->types, error) ||
      !check_dtype(ctx, 1, scale->dtype, TY_FLOAT, error) ||
      (zp && !check_dtype(ctx, 2, zp->dtype,
                          quantize || x->dtype == WEIR_DTYPE_I32
                              ? DT(U8) | DT(I8) | DT(I32)
                              : 1u << x->dtype,
                          error)))
    return FALSE;
  if (quantize && zp && zp->dtype == WEIR_DTYPE_I32)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, ctx->node,
                          "input 2 (zero point) has dtype i32, expected u8 or "
                          "i8");
  if (quantize && x->dtype != WEIR_DTYPE_I32 && x->dtype != scale->dtype)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input 1 (scale) has dtype %s, but x has %s",
                          weir_dtype_name(scale->dtype),
                          weir_dtype_name(x->dtype));
  gint64 axis = weir_node_attr_int(ctx->node, "axis", 1);
  if (axis < 0)
    axis += x->rank;
  for (guint k = 1; k < 3; k++) {
    const WeirOpValue *v = weir_op_input(ctx, k);
    if (!v || is_single(v))
      continue;
    if (v->rank != 1 || axis < 0 || axis >= (gint64)x->rank ||
        !weir_expr_equal(v->shape[0], x->shape[axis]))
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u must be a scalar or a vector over "
                            "dimension %" G_GINT64_FORMAT " of x",
                            k, axis);
    if (zp && k == 1 &&
        (zp->rank != 1 || !weir_expr_equal(v->shape[0], zp->shape[0])))
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "the scale and the zero point differ in shape");
  }
  weir_op_set_output(ctx, 0,
                     quantize ? (zp ? zp->dtype : WEIR_DTYPE_U8) : scale->dtype,
                     x->rank, x->shape);
  return TRUE;
}

static gboolean infer_float_test(WeirOpInferContext *ctx, const ElemOp *e,
                                 GError **error) {
  const WeirOpValue *x = &ctx->inputs[0];
  if (!check_dtype(ctx, 0, x->dtype, e->types, error))
    return FALSE;
  weir_op_set_output(ctx, 0, WEIR_DTYPE_BOOL, x->rank, x->shape);
  return TRUE;
}

static gboolean infer_dropout(WeirOpInferContext *ctx, const ElemOp *e,
                              GError **error) {
  const WeirOpValue *x = &ctx->inputs[0];
  if (!check_dtype(ctx, 0, x->dtype, e->types, error))
    return FALSE;
  const WeirOpValue *ratio = weir_op_input(ctx, 1);
  if (ratio && (!check_dtype(ctx, 1, ratio->dtype, TY_FLOAT, error)))
    return FALSE;
  if (weir_op_input(ctx, 2))
    return weir_node_fail(
        error, WEIR_ERROR_UNSUPPORTED, ctx->node,
        "training_mode given as a runtime input (input 2) is not "
        "supported; only inference (training_mode = false) is");
  gint64 training = 0;
  double r = 0.5;
  attr_int(ctx->node, e, "training_mode", &training);
  attr_float(ctx->node, e, "ratio", &r);
  if (training != 0 && (ratio || r != 0.0))
    return weir_node_fail(
        error, WEIR_ERROR_UNSUPPORTED, ctx->node,
        "training mode with a nonzero ratio (random dropout) is not "
        "supported");
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  if (ctx->n_outputs > 1)
    weir_op_set_output(ctx, 1, WEIR_DTYPE_BOOL, x->rank, x->shape);
  return TRUE;
}

static gboolean infer_batchnorm(WeirOpInferContext *ctx, const ElemOp *e,
                                GError **error) {
  static const char *const names[] = {"X", "scale", "B", "input_mean",
                                      "input_var"};
  gint64 training = 0, spatial = 1;
  attr_int(ctx->node, e, "training_mode", &training);
  attr_int(ctx->node, e, "spatial", &spatial);
  if (training != 0 && training != 1)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, ctx->node,
        "training_mode = %" G_GINT64_FORMAT ", expected 0 or 1", training);
  if (spatial == 0)
    return weir_node_fail(
        error, WEIR_ERROR_UNSUPPORTED, ctx->node,
        "spatial = 0 (per-activation statistics) is not supported");
  /* Training mode (opset 14 on) gives running_mean and running_var as
   * outputs 1 and 2; the saved statistics of opsets 9 to 13 (outputs 3
   * and 4) are not supported. */
  for (guint k = training ? 3 : 1; k < e->info.max_outputs; k++) {
    g_autofree char *conn = g_strdup_printf("out%u", k);
    if (weir_node_has_out_conn(ctx->node, conn))
      return weir_node_fail(
          error, WEIR_ERROR_UNSUPPORTED, ctx->node,
          training ? "output %u (saved statistics of opsets 9 to 13) "
                     "is not supported"
                   : "output %u (training-mode statistics) is not "
                     "supported outside training mode",
          k);
  }
  const WeirOpValue *x;
  if (!require_input(ctx, 0, &x, error) ||
      !check_dtype(ctx, 0, x->dtype, e->types, error))
    return FALSE;
  if (x->rank < 2)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, ctx->node,
        "input 0 (X) has rank %u, expected at least 2 (N, C, ...)", x->rank);
  for (guint k = 1; k < 5; k++) {
    const WeirOpValue *v;
    if (!require_input(ctx, k, &v, error) ||
        !check_dtype(ctx, k, v->dtype, TY_FLOAT, error))
      return FALSE;
    if (v->rank != 1)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u (%s) has rank %u, expected 1", k,
                            names[k], v->rank);
    if (!weir_expr_equal(v->shape[0], x->shape[1])) {
      g_autofree char *a = weir_expr_to_string(v->shape[0]);
      g_autofree char *c = weir_expr_to_string(x->shape[1]);
      return weir_node_fail(
          error, WEIR_ERROR_INVALID, ctx->node,
          "input %u (%s) has %s elements, expected %s (the channels "
          "of X)",
          k, names[k], a, c);
    }
  }
  weir_op_set_output(ctx, 0, x->dtype, x->rank, x->shape);
  /* running_mean and running_var, of the dtype of input_mean / input_var */
  for (guint k = 1; training && k < 3 && k < ctx->n_outputs; k++)
    weir_op_set_output(ctx, k, ctx->inputs[2 + k].dtype, 1,
                       ctx->inputs[2 + k].shape);
  return TRUE;
}

static gboolean elem_infer(WeirOpInferContext *ctx, GError **error) {
  const ElemOp *e = find_op(ctx->node->op);
  g_return_val_if_fail(e != NULL, FALSE);
  if (!check_counts(ctx, e, error))
    return FALSE;
  switch (e->rule) {
  case RULE_BROADCAST:
    return infer_broadcast(ctx, e, error);
  case RULE_POW:
    return infer_pow(ctx, e, error);
  case RULE_WHERE:
    return infer_where(ctx, e, error);
  case RULE_CLIP:
    return infer_clip(ctx, e, error);
  case RULE_CAST:
    return infer_cast(ctx, e, error);
  case RULE_CAST_LIKE:
    return infer_cast_like(ctx, e, error);
  case RULE_QUANT:
    return infer_quant(ctx, e, error);
  case RULE_FLOAT_TEST:
    return infer_float_test(ctx, e, error);
  case RULE_DROPOUT:
    return infer_dropout(ctx, e, error);
  case RULE_BATCHNORM:
    return infer_batchnorm(ctx, e, error);
  }
  g_assert_not_reached();
}

/* ----------------------------------------------------------------- flops */

/* The container at the other end of connector conn of n, or NULL. */
static const WeirContainer *conn_container(const WeirGraph *g,
                                           const WeirState *s,
                                           const WeirNode *n, gboolean in,
                                           const char *conn) {
  const WeirMemlet *m = weir_state_connector_memlet(s, n->id, conn, in, FALSE);
  return m && m->data ? weir_graph_container(g, m->data) : NULL;
}

static WeirExpr *elem_flops(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n) {
  const ElemOp *e = find_op(n->op);
  if (!e)
    return NULL;
  const WeirContainer *out = conn_container(g, s, n, FALSE, "out0");
  const WeirContainer *data =
      conn_container(g, s, n, TRUE, e->rule == RULE_WHERE ? "in1" : "in0");
  if (!out || !data)
    return NULL;
  guint inputs = 0;
  for (guint i = 0; i < n->in_conns->len; i++)
    inputs += g_str_has_prefix(g_ptr_array_index(n->in_conns, i), "in");
  guint per = e->flops;
  switch (e->flop_rule) {
  case FLOPS_FIXED:
    break;
  case FLOPS_INPUTS_MINUS:
    per = inputs > 0 ? inputs - 1 : 0;
    break;
  case FLOPS_INPUTS: /* n - 1 additions and a division */
    per = inputs > 1 ? inputs : 0;
    break;
  case FLOPS_BOUNDS:
    per = (weir_node_attr(n, "min") || weir_node_has_in_conn(n, "in1")) +
          (weir_node_attr(n, "max") || weir_node_has_in_conn(n, "in2"));
    break;
  }
  if (e->rule == RULE_QUANT)
    data = conn_container(g, s, n, TRUE, "in1"); /* the scale: floating */
  if (!data || !weir_dtype_is_float(data->dtype))
    per = 0;
  g_autoptr(WeirExpr) volume = weir_container_volume(out);
  const WeirAttr *training = weir_node_attr(n, "training_mode");
  if (e->rule == RULE_BATCHNORM && training &&
      training->type == WEIR_ATTR_INT && training->i != 0) {
    /* Training mode (ir/lower/expand/batchnorm-training.c), per element
     * of X: the sum (1), the squared deviation (4), the normalization (4);
     * per channel: mean, variance and 1/sqrt(var + eps) (5) and 3 for each
     * running statistic given as an output. */
    const WeirContainer *mean = conn_container(g, s, n, TRUE, "in3");
    if (!mean || mean->shape->len != 1)
      return NULL;
    guint per_channel = 5 + 3 * weir_node_has_out_conn(n, "out1") +
                        3 * weir_node_has_out_conn(n, "out2");
    g_autoptr(WeirExpr) elems = weir_expr_mul_const(volume, 9);
    g_autoptr(WeirExpr) chans =
        weir_expr_mul_const(g_ptr_array_index(mean->shape, 0), per_channel);
    return weir_expr_add(elems, chans);
  }
  return weir_expr_mul_const(volume, per);
}
