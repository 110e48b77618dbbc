/* elementwise.c — pure expansions of the elementwise operators.
 *
 * Every operator of the family becomes one map over the output shape
 * holding one tasklet: output index (i0, i1, ...) reads each input through
 * its numpy-broadcast subset (weir_expand_broadcast_subset) and writes the
 * output element.  What differs between operators is the tasklet body and
 * the names of its input connectors, kept in the static table `exps`:
 *   - KIND_FIXED: a fixed list of connectors and a body template in which
 *     "$name" stands for the float attribute `name` (as an exact literal);
 *   - KIND_VARIADIC: x0, x1, ... with the body built from the input count;
 *   - KIND_POW, KIND_MOD, KIND_CLIP, KIND_CAST (also CastLike), KIND_IS_INF,
 *     KIND_BIT_SHIFT, KIND_QUANT, KIND_DROPOUT, KIND_BATCHNORM:
 * bodies or subsets that depend on dtypes or optional inputs, built by small
 *     functions below.  BatchNormalization in training mode is not
 *     elementwise (it reduces over the batch): it is handed to
 *     ir/lower/expand/batchnorm-training.c.
 * The tasklet output connector is always "y" (and "mask" for Dropout).
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"
#include "weir-ops.h"

void weir_expand_register_elementwise(void);

typedef enum {
  KIND_FIXED,
  KIND_VARIADIC,
  KIND_POW,
  KIND_MOD,
  KIND_CLIP,
  KIND_CAST,
  KIND_IS_INF,
  KIND_BIT_SHIFT,
  KIND_QUANT,
  KIND_DROPOUT,
  KIND_BATCHNORM,
} Kind;

typedef struct {
  const char *op;
  Kind kind;
  const char *conns; /* KIND_FIXED: input connectors, comma-separated;
                        KIND_VARIADIC: the combining function or operator */
  const char *code;  /* KIND_FIXED: body template */
} ElemExpansion;

static const ElemExpansion exps[] = {
    /* Activations.  Softplus uses the overflow-free form of
     * log(exp(x) + 1). */
    {"Relu", KIND_FIXED, "x", "y = max(x, 0)"},
    {"LeakyRelu", KIND_FIXED, "x", "y = x < 0 ? $alpha * x : x"},
    {"Sigmoid", KIND_FIXED, "x", "y = 1 / (1 + exp(-x))"},
    {"Tanh", KIND_FIXED, "x", "y = tanh(x)"},
    {"Softplus", KIND_FIXED, "x",
     "y = x > 0 ? x + log(1 + exp(-x)) : log(1 + exp(x))"},
    {"HardSigmoid", KIND_FIXED, "x", "y = max(0, min(1, $alpha * x + $beta))"},
    {"HardSwish", KIND_FIXED, "x", "y = x * max(0, min(1, x / 6 + 0.5))"},
    {"Elu", KIND_FIXED, "x", "y = x < 0 ? $alpha * (exp(x) - 1) : x"},
    {"Celu", KIND_FIXED, "x",
     "y = max(0, x) + min(0, $alpha * (exp(x / $alpha) - 1))"},
    {"Selu", KIND_FIXED, "x",
     "y = x > 0 ? $gamma * x : $gamma * ($alpha * exp(x) - $alpha)"},
    {"ThresholdedRelu", KIND_FIXED, "x", "y = x > $alpha ? x : 0"},
    {"Softsign", KIND_FIXED, "x", "y = x / (1 + abs(x))"},
    {"Shrink", KIND_FIXED, "x",
     "y = x < -$lambd ? x + $bias : x > $lambd ? x - $bias : 0"},
    {"PRelu", KIND_FIXED, "x,slope", "y = x < 0 ? slope * x : x"},
    /* Unary math and logic. */
    {"Sqrt", KIND_FIXED, "x", "y = sqrt(x)"},
    {"Exp", KIND_FIXED, "x", "y = exp(x)"},
    {"Log", KIND_FIXED, "x", "y = log(x)"},
    {"Neg", KIND_FIXED, "x", "y = -x"},
    {"Abs", KIND_FIXED, "x", "y = abs(x)"},
    {"Reciprocal", KIND_FIXED, "x", "y = 1 / x"},
    {"Erf", KIND_FIXED, "x", "y = erf(x)"},
    {"Floor", KIND_FIXED, "x", "y = floor(x)"},
    {"Ceil", KIND_FIXED, "x", "y = ceil(x)"},
    {"Round", KIND_FIXED, "x", "y = rint(x)"},
    {"Sign", KIND_FIXED, "x", "y = x > 0 ? 1 : x < 0 ? -1 : 0"},
    {"Sin", KIND_FIXED, "x", "y = sin(x)"},
    {"Cos", KIND_FIXED, "x", "y = cos(x)"},
    {"Tan", KIND_FIXED, "x", "y = tan(x)"},
    {"Asin", KIND_FIXED, "x", "y = asin(x)"},
    {"Acos", KIND_FIXED, "x", "y = acos(x)"},
    {"Atan", KIND_FIXED, "x", "y = atan(x)"},
    {"Sinh", KIND_FIXED, "x", "y = sinh(x)"},
    {"Cosh", KIND_FIXED, "x", "y = cosh(x)"},
    {"Asinh", KIND_FIXED, "x", "y = asinh(x)"},
    {"Acosh", KIND_FIXED, "x", "y = acosh(x)"},
    {"Atanh", KIND_FIXED, "x", "y = atanh(x)"},
    {"IsNaN", KIND_FIXED, "x", "y = isnan(x)"},
    {"IsInf", KIND_IS_INF, "x", NULL},
    {"Not", KIND_FIXED, "x", "y = !x"},
    {"Identity", KIND_FIXED, "x", "y = x"},
    /* Binary.  Integer division truncates toward zero (as C and ONNX
     * Runtime do). */
    {"Add", KIND_FIXED, "a,b", "y = a + b"},
    {"Sub", KIND_FIXED, "a,b", "y = a - b"},
    {"Mul", KIND_FIXED, "a,b", "y = a * b"},
    {"Div", KIND_FIXED, "a,b", "y = a / b"},
    {"Pow", KIND_POW, "a,b", NULL},
    {"Mod", KIND_MOD, "a,b", NULL},
    {"Equal", KIND_FIXED, "a,b", "y = a == b"},
    {"Less", KIND_FIXED, "a,b", "y = a < b"},
    {"Greater", KIND_FIXED, "a,b", "y = a > b"},
    {"LessOrEqual", KIND_FIXED, "a,b", "y = a <= b"},
    {"GreaterOrEqual", KIND_FIXED, "a,b", "y = a >= b"},
    {"And", KIND_FIXED, "a,b", "y = a && b"},
    {"Or", KIND_FIXED, "a,b", "y = a || b"},
    {"Xor", KIND_FIXED, "a,b", "y = a != b"},
    {"BitShift", KIND_BIT_SHIFT, "a,b", NULL},
    {"Where", KIND_FIXED, "c,a,b", "y = c ? a : b"},
    /* Variadic. */
    {"Min", KIND_VARIADIC, "min", NULL},
    {"Max", KIND_VARIADIC, "max", NULL},
    {"Sum", KIND_VARIADIC, "+", NULL},
    {"Mean", KIND_VARIADIC, "mean", NULL},
    /* Special inputs. */
    {"Clip", KIND_CLIP, NULL, NULL},
    {"Cast", KIND_CAST, "x", NULL},
    {"CastLike", KIND_CAST, "x", NULL},
    {"DequantizeLinear", KIND_QUANT, "x", NULL},
    {"QuantizeLinear", KIND_QUANT, "x", NULL},
    {"Dropout", KIND_DROPOUT, "x", NULL},
    {"BatchNormalization", KIND_BATCHNORM, "x,scale,bias,mean,var",
     "y = (x - mean) / sqrt(var + $epsilon) * scale + bias"},
};

static const ElemExpansion *find_expansion(const char *op) {
  for (guint i = 0; i < G_N_ELEMENTS(exps); i++)
    if (g_strcmp0(exps[i].op, op) == 0)
      return &exps[i];
  return NULL;
}

/* Everything one expansion collects before building its map. */
typedef struct {
  WeirGraph *g;
  WeirState *s;
  WeirNode *n;
  WeirPort out;
  char **params;      /* i0, i1, ... over the output shape */
  GPtrArray *conns;   /* char*: tasklet input connectors (owned) */
  GPtrArray *subsets; /* char*: their subsets (owned) */
  GPtrArray *access;  /* WeirNode*: their access nodes (borrowed) */
  GString *code;
  WeirPort mask; /* Dropout: output 1, when has_mask */
  gboolean has_mask;
  GPtrArray *dropped; /* WeirNode*: access nodes of ignored inputs */
} Builder;

static void builder_clear(Builder *b) {
  g_strfreev(b->params);
  g_clear_pointer(&b->conns, g_ptr_array_unref);
  g_clear_pointer(&b->subsets, g_ptr_array_unref);
  g_clear_pointer(&b->access, g_ptr_array_unref);
  g_clear_pointer(&b->dropped, g_ptr_array_unref);
  if (b->code)
    g_string_free(b->code, TRUE);
}

/* "[N, 3]" (transfer full) */
static char *shape_text(guint rank, WeirExpr *const *shape) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < rank; d++) {
    g_autofree char *e = weir_expr_to_string(shape[d]);
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static void add_input(Builder *b, const char *conn, WeirNode *access,
                      char *subset /* transfer full */) {
  g_ptr_array_add(b->conns, g_strdup(conn));
  g_ptr_array_add(b->subsets, subset);
  g_ptr_array_add(b->access, access);
}

/* Reads input k (already found as *in) broadcast to the output shape. */
static gboolean add_broadcast_input(Builder *b, guint k, const WeirPort *in,
                                    const char *conn, GError **error) {
  guint offset = b->out.rank - in->rank;
  gboolean ok = in->rank <= b->out.rank;
  for (guint d = 0; ok && d < in->rank; d++) {
    gint64 v;
    ok = (weir_expr_is_const(in->shape[d], &v) && v == 1) ||
         weir_expr_equal(in->shape[d], b->out.shape[offset + d]);
  }
  if (!ok) {
    g_autofree char *a = shape_text(in->rank, in->shape);
    g_autofree char *o = shape_text(b->out.rank, b->out.shape);
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, b->n,
        "input %u ('%s', shape %s) does not broadcast to the output "
        "shape %s",
        k, in->container->name, a, o);
  }
  add_input(b, conn, in->access,
            weir_expand_broadcast_subset(in->rank, in->shape, b->out.rank,
                                         (const char *const *)b->params));
  return TRUE;
}

/* Element 0 of a container all of whose dimensions are 1: "0, 0". */
static char *point_subset(const WeirPort *p) {
  GString *s = g_string_new(NULL);
  for (guint d = 0; d < p->rank; d++)
    g_string_append(s, d ? ", 0" : "0");
  return g_string_free(s, FALSE);
}

static gboolean is_single(const WeirPort *p) {
  for (guint d = 0; d < p->rank; d++) {
    gint64 v;
    if (!weir_expr_is_const(p->shape[d], &v) || v != 1)
      return FALSE;
  }
  return TRUE;
}

/* Appends template t to code, replacing "$name" by the exact literal of the
 * float attribute `name`. */
static gboolean append_template(Builder *b, const char *t, GError **error) {
  while (*t) {
    if (*t != '$') {
      g_string_append_c(b->code, *t++);
      continue;
    }
    const char *start = ++t;
    while (g_ascii_isalnum(*t) || *t == '_')
      t++;
    g_autofree char *name = g_strndup(start, t - start);
    const WeirAttr *a = weir_node_attr(b->n, name);
    if (!a || (a->type != WEIR_ATTR_FLOAT && a->type != WEIR_ATTR_INT))
      return weir_node_fail(error, WEIR_ERROR_INVALID, b->n,
                            "attribute '%s' is missing", name);
    double v = a->type == WEIR_ATTR_FLOAT ? a->f : (double)a->i;
    g_autofree char *lit = weir_expand_float_literal(v);
    /* Parenthesize negative values: "x * (-0.5)". */
    if (v < 0 || signbit(v))
      g_string_append_printf(b->code, "(%s)", lit);
    else
      g_string_append(b->code, lit);
  }
  return TRUE;
}

/* --------------------------------------------------------------- kinds */

static gboolean build_fixed(Builder *b, const ElemExpansion *e,
                            GError **error) {
  g_auto(GStrv) conns = g_strsplit(e->conns, ",", -1);
  for (guint k = 0; conns[k]; k++) {
    WeirPort in;
    if (!weir_port_require_input(b->g, b->s, b->n, k, &in, error) ||
        !add_broadcast_input(b, k, &in, conns[k], error))
      return FALSE;
  }
  return append_template(b, e->code, error);
}

static gboolean build_variadic(Builder *b, const ElemExpansion *e,
                               GError **error) {
  guint count = 0;
  for (;; count++) {
    WeirPort in;
    g_autoptr(GError) local = NULL;
    if (!weir_port_input(b->g, b->s, b->n, count, &in, &local)) {
      if (local) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
      }
      break;
    }
    g_autofree char *conn = g_strdup_printf("x%u", count);
    if (!add_broadcast_input(b, count, &in, conn, error))
      return FALSE;
  }
  if (count == 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, b->n, "has no inputs");
  GString *c = b->code;
  g_string_append(c, "y = ");
  if (count == 1) {
    g_string_append(c, "x0");
    return TRUE;
  }
  gboolean call = strcmp(e->conns, "min") == 0 || strcmp(e->conns, "max") == 0;
  gboolean mean = strcmp(e->conns, "mean") == 0;
  if (call)
    g_string_append_printf(c, "%s(", e->conns);
  else if (mean)
    g_string_append_c(c, '(');
  for (guint k = 0; k < count; k++)
    g_string_append_printf(c, "%sx%u", k == 0 ? "" : call ? ", " : " + ", k);
  if (call)
    g_string_append_c(c, ')');
  else if (mean)
    g_string_append_printf(c, ") / %u", count);
  return TRUE;
}

static gboolean build_pow(Builder *b, const ElemExpansion *e, GError **error) {
  WeirPort base, exponent;
  if (!weir_port_require_input(b->g, b->s, b->n, 0, &base, error) ||
      !weir_port_require_input(b->g, b->s, b->n, 1, &exponent, error) ||
      !add_broadcast_input(b, 0, &base, "a", error) ||
      !add_broadcast_input(b, 1, &exponent, "b", error))
    return FALSE;
  (void)e;
  WeirDType tb = base.container->dtype, te = exponent.container->dtype;
  if (tb == WEIR_DTYPE_BOOL || te == WEIR_DTYPE_BOOL)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, b->n,
                          "bool operands are not supported");
  /* f32 ** f32 is computed in float (powf); every other combination in
   * double and converted to the base type, as C++ std::pow promotes. */
  if ((tb == WEIR_DTYPE_F32 && te == WEIR_DTYPE_F32) || tb == WEIR_DTYPE_F64)
    g_string_append(b->code, "y = pow(a, b)");
  else
    g_string_append(b->code, "y = pow(f64(a), f64(b))");
  return TRUE;
}

/* ONNX Mod.  The language's '%' is C's: fmod for floats, the truncating
 * remainder for integers (the sign of the dividend, fmod = 1).  fmod = 0
 * (integers only) moves a nonzero remainder whose sign differs from the
 * divisor's by one divisor, giving the divisor's sign as Python does. */
static gboolean build_mod(Builder *b, const ElemExpansion *e, GError **error) {
  (void)e;
  WeirPort x, y;
  if (!weir_port_require_input(b->g, b->s, b->n, 0, &x, error) ||
      !weir_port_require_input(b->g, b->s, b->n, 1, &y, error) ||
      !add_broadcast_input(b, 0, &x, "a", error) ||
      !add_broadcast_input(b, 1, &y, "b", error))
    return FALSE;
  WeirDType t = x.container->dtype;
  gint64 c_fmod = weir_node_attr_int(b->n, "fmod", 0);
  if (t == WEIR_DTYPE_BOOL)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, b->n,
                          "bool operands are not supported");
  if (c_fmod != 0 || weir_dtype_is_unsigned(t)) {
    g_string_append(b->code, "y = a % b");
    return TRUE;
  }
  if (weir_dtype_is_float(t))
    return weir_node_fail(error, WEIR_ERROR_INVALID, b->n,
                          "fmod = 0 on floating-point inputs");
  g_string_append(b->code, "r = a % b\n"
                           "y = r != 0 && (r < 0) != (b < 0) ? r + b : r");
  return TRUE;
}

/* Range of an integer dtype as doubles. */
static void int_range(WeirDType t, double *lo, double *hi) {
  switch (t) {
  case WEIR_DTYPE_I32:
    *lo = G_MININT32;
    *hi = G_MAXINT32;
    break;
  case WEIR_DTYPE_U8:
  case WEIR_DTYPE_I8:
  case WEIR_DTYPE_I16:
  case WEIR_DTYPE_U16:
  case WEIR_DTYPE_U32: {
    WeirValue v = {.type = WEIR_DTYPE_F64, .f = -1e300};
    *lo = (double)weir_value_convert(v, t).i;
    v.f = 1e300;
    *hi = (double)weir_value_convert(v, t).i;
    break;
  }
  case WEIR_DTYPE_U64:
    *lo = 0;
    *hi = 18446744073709551615.0;
    break;
  default:
    *lo = (double)G_MININT64;
    *hi = (double)G_MAXINT64;
    break;
  }
}

/* The literal for a Clip bound on data of type t, or NULL when the bound
 * cannot bind (an integer bound beyond the type's range). */
static char *clip_literal(WeirDType t, double v, gboolean is_min) {
  if (weir_dtype_is_float(t))
    return weir_expand_float_literal(v);
  double lo, hi;
  int_range(t, &lo, &hi);
  double r = is_min ? ceil(v) : floor(v);
  if (is_min ? r <= lo : r >= hi)
    return NULL;
  if (r < lo || r > hi) /* min above the range or max below it */
    r = is_min ? hi : lo;
  return g_strdup_printf("%" G_GINT64_FORMAT, (gint64)r);
}

static gboolean build_clip(Builder *b, const ElemExpansion *e, GError **error) {
  (void)e;
  WeirPort x;
  if (!weir_port_require_input(b->g, b->s, b->n, 0, &x, error) ||
      !add_broadcast_input(b, 0, &x, "x", error))
    return FALSE;
  WeirDType t = x.container->dtype;
  if (t == WEIR_DTYPE_BOOL)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, b->n,
                          "bool data is not supported");
  static const char *const names[] = {"min", "max"};
  static const char *const conns[] = {"lo", "hi"};
  static const char *const funcs[] = {"max", "min"};
  g_autofree char *expr = g_strdup("x");
  for (guint k = 1; k <= 2; k++) {
    WeirPort p;
    g_autoptr(GError) local = NULL;
    g_autofree char *operand = NULL;
    const WeirAttr *a = weir_node_attr(b->n, names[k - 1]);
    if (weir_port_input(b->g, b->s, b->n, k, &p, &local)) {
      if (a)
        return weir_node_fail(
            error, WEIR_ERROR_INVALID, b->n,
            "'%s' is given both as an attribute and as input %u", names[k - 1],
            k);
      if (!is_single(&p))
        return weir_node_fail(error, WEIR_ERROR_INVALID, b->n,
                              "input %u (%s) must be a scalar", k,
                              names[k - 1]);
      add_input(b, conns[k - 1], p.access, point_subset(&p));
      operand = g_strdup(conns[k - 1]);
    } else if (local) {
      g_propagate_error(error, g_steal_pointer(&local));
      return FALSE;
    } else if (a) {
      if (a->type != WEIR_ATTR_FLOAT)
        return weir_node_fail(error, WEIR_ERROR_INVALID, b->n,
                              "attribute '%s' must be a float", names[k - 1]);
      if (isnan(a->f))
        return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, b->n,
                              "'%s' is NaN", names[k - 1]);
      operand = clip_literal(t, a->f, k == 1);
    }
    if (operand) {
      char *next = g_strdup_printf("%s(%s, %s)", funcs[k - 1], expr, operand);
      g_free(expr);
      expr = next;
    }
  }
  g_string_append_printf(b->code, "y = %s", expr);
  return TRUE;
}

static gboolean build_cast(Builder *b, const ElemExpansion *e, GError **error) {
  WeirPort x;
  if (!weir_port_require_input(b->g, b->s, b->n, 0, &x, error) ||
      !add_broadcast_input(b, 0, &x, e->conns, error))
    return FALSE;
  if (g_str_equal(b->n->op, "CastLike")) {
    /* Input 1 only gives the type: its data is not read. */
    WeirPort like;
    if (!weir_port_require_input(b->g, b->s, b->n, 1, &like, error))
      return FALSE;
    g_ptr_array_add(b->dropped, like.access);
    WeirDType t = like.container->dtype;
    if (t != b->out.container->dtype)
      return weir_node_fail(error, WEIR_ERROR_INVALID, b->n,
                            "output '%s' has dtype %s, but input 1 has %s",
                            b->out.container->name,
                            weir_dtype_name(b->out.container->dtype),
                            weir_dtype_name(t));
    g_string_append_printf(b->code, "y = %s(x)", weir_dtype_name(t));
    return TRUE;
  }
  const WeirAttr *to = weir_node_attr(b->n, "to");
  if (!to || to->type != WEIR_ATTR_INT)
    return weir_node_fail(error, WEIR_ERROR_INVALID, b->n,
                          "attribute 'to' is missing");
  WeirDType target;
  if (!weir_op_dtype_from_onnx(to->i, &target))
    return weir_node_fail(
        error, WEIR_ERROR_UNSUPPORTED, b->n,
        "cast to ONNX data type %" G_GINT64_FORMAT " is not supported", to->i);
  if (target != b->out.container->dtype)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, b->n,
        "output '%s' has dtype %s, but 'to' is %s", b->out.container->name,
        weir_dtype_name(b->out.container->dtype), weir_dtype_name(target));
  g_string_append_printf(b->code, "y = %s(x)", weir_dtype_name(target));
  return TRUE;
}

/* IsInf: one comparison per infinity sought (none: always false). */
static gboolean build_is_inf(Builder *b, const ElemExpansion *e,
                             GError **error) {
  WeirPort x;
  if (!weir_port_require_input(b->g, b->s, b->n, 0, &x, error) ||
      !add_broadcast_input(b, 0, &x, e->conns, error))
    return FALSE;
  gboolean pos = weir_node_attr_int(b->n, "detect_positive", 1) != 0;
  gboolean neg = weir_node_attr_int(b->n, "detect_negative", 1) != 0;
  g_string_append_printf(b->code, "y = %s%s%s", pos ? "x == 1e999" : "",
                         pos && neg ? " || " : "", neg ? "x == -1e999" : "");
  if (!pos && !neg)
    g_string_append(b->code, "false");
  return TRUE;
}

/* BitShift on the unsigned types: a shift by b is a product or a quotient
 * by 2^b in u64 arithmetic (wrapping, exact), truncated to the type's
 * width on the store; shifts by the width or more give 0. */
static gboolean build_bit_shift(Builder *b, const ElemExpansion *e,
                                GError **error) {
  (void)e;
  WeirPort x, y;
  if (!weir_port_require_input(b->g, b->s, b->n, 0, &x, error) ||
      !weir_port_require_input(b->g, b->s, b->n, 1, &y, error) ||
      !add_broadcast_input(b, 0, &x, "a", error) ||
      !add_broadcast_input(b, 1, &y, "b", error))
    return FALSE;
  WeirDType t = x.container->dtype;
  if (!weir_dtype_is_unsigned(t) || t == WEIR_DTYPE_BOOL)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, b->n,
                          "dtype %s (only unsigned integers are supported)",
                          weir_dtype_name(t));
  const char *dir = weir_node_attr_string(b->n, "direction", "");
  gboolean left = g_strcmp0(dir, "LEFT") == 0;
  if (!left && g_strcmp0(dir, "RIGHT") != 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, b->n,
                          "direction '%s', expected LEFT or RIGHT", dir);
  g_string_append_printf(b->code,
                         "y = b >= %u ? 0 : u64(a) %s pow(u64(2), u64(b))",
                         (guint)weir_dtype_size(t) * 8, left ? "*" : "/");
  return TRUE;
}

/* QuantizeLinear and DequantizeLinear: the scale and zero point read at
 * the index of `axis` (vectors) or at their one element (scalars). */
static gboolean build_quant(Builder *b, const ElemExpansion *e,
                            GError **error) {
  WeirPort x, scale, zp;
  if (!weir_port_require_input(b->g, b->s, b->n, 0, &x, error) ||
      !weir_port_require_input(b->g, b->s, b->n, 1, &scale, error) ||
      !add_broadcast_input(b, 0, &x, e->conns, error))
    return FALSE;
  g_autoptr(GError) local = NULL;
  gboolean has_zp = weir_port_input(b->g, b->s, b->n, 2, &zp, &local);
  if (local) {
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
  }
  gint64 axis = weir_node_attr_int(b->n, "axis", 1);
  if (axis < 0)
    axis += b->out.rank;
  const WeirPort *ps[2] = {&scale, has_zp ? &zp : NULL};
  static const char *const names[2] = {"s", "z"};
  for (guint k = 0; k < 2; k++) {
    if (!ps[k])
      continue;
    if (is_single(ps[k]))
      add_input(b, names[k], ps[k]->access, point_subset(ps[k]));
    else if (ps[k]->rank == 1 && axis >= 0 && axis < (gint64)b->out.rank)
      add_input(b, names[k], ps[k]->access, g_strdup(b->params[axis]));
    else
      return weir_node_fail(error, WEIR_ERROR_INVALID, b->n,
                            "input %u must be a scalar or a vector over "
                            "dimension %" G_GINT64_FORMAT,
                            k + 1, axis);
  }
  const char *z = has_zp ? "i32(z)" : "0";
  if (g_str_equal(b->n->op, "DequantizeLinear"))
    g_string_append_printf(b->code, "y = %s(i32(x) - %s) * s",
                           weir_dtype_name(scale.container->dtype), z);
  else
    g_string_append_printf(
        b->code, "q = rint(x / s) + %s\ny = min(max(q, %s), %s)", z,
        weir_expand_lowest_literal(b->out.container->dtype),
        weir_expand_highest_literal(b->out.container->dtype));
  return TRUE;
}

static gboolean build_batchnorm(Builder *b, const ElemExpansion *e,
                                GError **error) {
  const WeirAttr *spatial = weir_node_attr(b->n, "spatial");
  if (spatial && spatial->type == WEIR_ATTR_INT && spatial->i == 0)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, b->n,
                          "spatial = 0 is not supported");
  for (guint k = 1; k < 5; k++) {
    g_autofree char *conn = g_strdup_printf("out%u", k);
    if (weir_node_has_out_conn(b->n, conn))
      return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, b->n,
                            "output %u (training-mode statistics) is not "
                            "supported outside training mode",
                            k);
  }
  if (b->out.rank < 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, b->n,
                          "output has rank %u, expected at least 2",
                          b->out.rank);
  g_auto(GStrv) conns = g_strsplit(e->conns, ",", -1);
  WeirPort x;
  if (!weir_port_require_input(b->g, b->s, b->n, 0, &x, error) ||
      !add_broadcast_input(b, 0, &x, conns[0], error))
    return FALSE;
  for (guint k = 1; conns[k]; k++) {
    WeirPort p;
    if (!weir_port_require_input(b->g, b->s, b->n, k, &p, error))
      return FALSE;
    if (p.rank != 1 || !weir_expr_equal(p.shape[0], b->out.shape[1]))
      return weir_node_fail(
          error, WEIR_ERROR_INVALID, b->n,
          "input %u ('%s') must be a vector over the channels "
          "(dimension 1 of X)",
          k, p.container->name);
    add_input(b, conns[k], p.access, g_strdup(b->params[1]));
  }
  return append_template(b, e->code, error);
}

/* Inference: y = x and an all-true mask.  Training mode is accepted only
 * with ratio 0 (nothing is dropped). */
static gboolean build_dropout(Builder *b, const ElemExpansion *e,
                              GError **error) {
  WeirPort x, ratio;
  const WeirAttr *training = weir_node_attr(b->n, "training_mode");
  const WeirAttr *r = weir_node_attr(b->n, "ratio");
  g_autoptr(GError) local = NULL;
  gboolean has_ratio = weir_port_input(b->g, b->s, b->n, 1, &ratio, &local);
  if (local) {
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
  }
  if (weir_node_has_in_conn(b->n, "in2"))
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, b->n,
                          "training_mode given as a runtime input is not "
                          "supported");
  if (training && training->type == WEIR_ATTR_INT && training->i != 0 &&
      (has_ratio || (r && r->type == WEIR_ATTR_FLOAT && r->f != 0.0)))
    return weir_node_fail(
        error, WEIR_ERROR_UNSUPPORTED, b->n,
        "training mode with a nonzero ratio is not supported");
  if (has_ratio)
    g_ptr_array_add(b->dropped, ratio.access);
  if (!weir_port_require_input(b->g, b->s, b->n, 0, &x, error) ||
      !add_broadcast_input(b, 0, &x, e->conns, error))
    return FALSE;
  b->has_mask = weir_port_output(b->g, b->s, b->n, 1, &b->mask, &local);
  if (local) {
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
  }
  if (b->has_mask && (b->mask.container->dtype != WEIR_DTYPE_BOOL ||
                      b->mask.rank != b->out.rank))
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, b->n,
        "output 1 (mask) must be a bool tensor of the shape of the "
        "data");
  g_string_append(b->code, b->has_mask ? "y = x\nmask = true" : "y = x");
  return TRUE;
}

/* --------------------------------------------------------------- driver */

static gboolean expand_elementwise(WeirGraph *g, WeirState *s, WeirNode *n,
                                   GError **error) {
  const ElemExpansion *e = find_expansion(n->op);
  if (!e)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "no elementwise expansion");
  if (!weir_op_check_attrs(n, error))
    return FALSE;
  const WeirAttr *training = weir_node_attr(n, "training_mode");
  if (e->kind == KIND_BATCHNORM && training &&
      training->type == WEIR_ATTR_INT && training->i != 0)
    return weir_expand_batchnorm_training(g, s, n, error);

  Builder b = {.g = g, .s = s, .n = n};
  b.conns = g_ptr_array_new_with_free_func(g_free);
  b.subsets = g_ptr_array_new_with_free_func(g_free);
  b.access = g_ptr_array_new();
  b.code = g_string_new(NULL);
  b.dropped = g_ptr_array_new();
  gboolean ok = FALSE;

  if (!weir_port_require_output(g, s, n, 0, &b.out, error))
    goto out;
  b.params = weir_expand_params("i", b.out.rank);

  switch (e->kind) {
  case KIND_FIXED:
    ok = build_fixed(&b, e, error);
    break;
  case KIND_VARIADIC:
    ok = build_variadic(&b, e, error);
    break;
  case KIND_POW:
    ok = build_pow(&b, e, error);
    break;
  case KIND_MOD:
    ok = build_mod(&b, e, error);
    break;
  case KIND_CLIP:
    ok = build_clip(&b, e, error);
    break;
  case KIND_CAST:
    ok = build_cast(&b, e, error);
    break;
  case KIND_IS_INF:
    ok = build_is_inf(&b, e, error);
    break;
  case KIND_BIT_SHIFT:
    ok = build_bit_shift(&b, e, error);
    break;
  case KIND_QUANT:
    ok = build_quant(&b, e, error);
    break;
  case KIND_BATCHNORM:
    ok = build_batchnorm(&b, e, error);
    break;
  case KIND_DROPOUT:
    ok = build_dropout(&b, e, error);
    break;
  }
  if (!ok)
    goto out;

  {
    guint n_ins = b.conns->len;
    g_autofree WeirTaskletPort *ins = g_new0(WeirTaskletPort, n_ins + 1);
    for (guint i = 0; i < n_ins; i++) {
      ins[i].access = g_ptr_array_index(b.access, i);
      ins[i].conn = g_ptr_array_index(b.conns, i);
      ins[i].subset = g_ptr_array_index(b.subsets, i);
    }
    g_autofree char *out_subset =
        weir_expand_index_subset(b.out.rank, (const char *const *)b.params);
    WeirTaskletPort outs[2] = {
        {.access = b.out.access, .conn = "y", .subset = out_subset},
        {.access = b.mask.access, .conn = "mask", .subset = out_subset},
    };
    g_auto(GStrv) ranges = weir_expand_full_ranges(b.out.rank, b.out.shape);
    ok = weir_expand_map(
             g, s, n->label, b.out.rank, (const char *const *)b.params,
             (const char *const *)ranges, ins, n_ins, outs, b.has_mask ? 2 : 1,
             b.code->str, NULL, 0, error) != NULL;
  }
  if (ok) {
    weir_state_remove_node(s, n->id);
    /* Access nodes that only fed ignored inputs are left without edges. */
    for (guint i = 0; i < b.dropped->len; i++) {
      WeirNode *a = g_ptr_array_index(b.dropped, i);
      g_autoptr(GPtrArray) in = weir_state_in_edges(s, a->id);
      g_autoptr(GPtrArray) o = weir_state_out_edges(s, a->id);
      if (in->len == 0 && o->len == 0)
        weir_state_remove_node(s, a->id);
    }
  }
out:
  builder_clear(&b);
  return ok;
}

void weir_expand_register_elementwise(void) {
  for (guint i = 0; i < G_N_ELEMENTS(exps); i++)
    weir_op_register_expansion(exps[i].op, "pure", expand_elementwise);
}
