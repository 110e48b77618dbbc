/* test-elementwise.c — the elementwise operator family: schemas, inference,
 * FLOPs and the pure expansions, run in the reference interpreter.
 *
 * The differential test is table-driven: each Case names an operator, its
 * inputs (dtype and shape, possibly symbolic in N), attributes, an input
 * value range and a scalar reference function.  The test builds the graph
 * access nodes -> library node -> access nodes (output shapes from the
 * operator's own inference), expands it, interprets it on seeded random
 * inputs and compares with the reference evaluated here in double precision
 * with plain loops over the broadcast indices.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "weir-expand.h"
#include "weir-init.h"
#include "weir-interp.h"
#include "weir-ops.h"
#include "weir-validate.h"

#define N_VALUE 3 /* value bound to the symbol N when running */
#define MAX_IN 5

typedef struct {
  const char *name; /* NULL: omitted optional input */
  WeirDType dtype;
  const char *shape;
} Arg;

typedef double (*RefFn)(const double *x, const double *p);

typedef struct {
  const char *op;
  Arg ins[MAX_IN];
  guint n_ins;
  guint n_outs;
  struct {
    const char *name;
    double v;
  } f[2]; /* float attributes */
  struct {
    const char *name;
    gint64 v;
  } i[2];           /* int attributes */
  double lo, hi;    /* input values drawn from [lo, hi] */
  gboolean nonzero; /* integer inputs avoid 0 (divisors) */
  RefFn ref;
  double p[2];      /* parameters of ref */
  gboolean channel; /* rank-1 inputs index output dimension 1 (BN) */
} Case;

/* ---------------------------------------------------------- references */

static double r_relu(const double *x, const double *p) {
  (void)p;
  return x[0] > 0 ? x[0] : 0;
}
static double r_leaky(const double *x, const double *p) {
  return x[0] < 0 ? p[0] * x[0] : x[0];
}
static double r_sigmoid(const double *x, const double *p) {
  (void)p;
  return 1.0 / (1.0 + exp(-x[0]));
}
static double r_tanh(const double *x, const double *p) {
  (void)p;
  return tanh(x[0]);
}
static double r_softplus(const double *x, const double *p) {
  (void)p;
  return log(exp(x[0]) + 1.0);
}
static double r_hardsigmoid(const double *x, const double *p) {
  return fmax(0.0, fmin(1.0, p[0] * x[0] + p[1]));
}
static double r_hardswish(const double *x, const double *p) {
  (void)p;
  return x[0] * fmax(0.0, fmin(1.0, x[0] / 6.0 + 0.5));
}
static double r_elu(const double *x, const double *p) {
  return x[0] < 0 ? p[0] * (exp(x[0]) - 1.0) : x[0];
}
static double r_sqrt(const double *x, const double *p) {
  (void)p;
  return sqrt(x[0]);
}
static double r_exp(const double *x, const double *p) {
  (void)p;
  return exp(x[0]);
}
static double r_log(const double *x, const double *p) {
  (void)p;
  return log(x[0]);
}
static double r_neg(const double *x, const double *p) {
  (void)p;
  return -x[0];
}
static double r_abs(const double *x, const double *p) {
  (void)p;
  return fabs(x[0]);
}
static double r_recip(const double *x, const double *p) {
  (void)p;
  return 1.0 / x[0];
}
static double r_erf(const double *x, const double *p) {
  (void)p;
  return erf(x[0]);
}
static double r_floor(const double *x, const double *p) {
  (void)p;
  return floor(x[0]);
}
static double r_ceil(const double *x, const double *p) {
  (void)p;
  return ceil(x[0]);
}
static double r_not(const double *x, const double *p) {
  (void)p;
  return x[0] == 0;
}
static double r_ident(const double *x, const double *p) {
  (void)p;
  return x[0];
}
static double r_add(const double *x, const double *p) {
  (void)p;
  return x[0] + x[1];
}
static double r_sub(const double *x, const double *p) {
  (void)p;
  return x[0] - x[1];
}
static double r_mul(const double *x, const double *p) {
  (void)p;
  return x[0] * x[1];
}
static double r_div(const double *x, const double *p) {
  (void)p;
  return x[0] / x[1];
}
static double r_idiv(const double *x, const double *p) {
  (void)p;
  return trunc(x[0] / x[1]);
}
/* Mod with fmod = 0: the sign of the divisor; fmod = 1: C's fmod. */
static double r_pymod(const double *x, const double *p) {
  (void)p;
  double r = fmod(x[0], x[1]);
  return r != 0 && (r < 0) != (x[1] < 0) ? r + x[1] : r;
}
static double r_fmod(const double *x, const double *p) {
  (void)p;
  return fmod(x[0], x[1]);
}
static double r_pow(const double *x, const double *p) {
  (void)p;
  return pow(x[0], x[1]);
}
static double r_eq(const double *x, const double *p) {
  (void)p;
  return x[0] == x[1];
}
static double r_lt(const double *x, const double *p) {
  (void)p;
  return x[0] < x[1];
}
static double r_gt(const double *x, const double *p) {
  (void)p;
  return x[0] > x[1];
}
static double r_le(const double *x, const double *p) {
  (void)p;
  return x[0] <= x[1];
}
static double r_ge(const double *x, const double *p) {
  (void)p;
  return x[0] >= x[1];
}
static double r_and(const double *x, const double *p) {
  (void)p;
  return x[0] != 0 && x[1] != 0;
}
/* The operators added for ONNX coverage (trigonometric, hyperbolic,
 * rounding, sign, the parametric activations, PRelu, Xor). */
#define R1(name, expr)                                                         \
  static double name(const double *x, const double *p) {                       \
    (void)p;                                                                   \
    return expr;                                                               \
  }
R1(r_sin, sin(x[0]))
R1(r_cos, cos(x[0]))
R1(r_tan, tan(x[0]))
R1(r_asin, asin(x[0]))
R1(r_acos, acos(x[0]))
R1(r_atan, atan(x[0]))
R1(r_sinh, sinh(x[0]))
R1(r_cosh, cosh(x[0]))
R1(r_asinh, asinh(x[0]))
R1(r_acosh, acosh(x[0]))
R1(r_atanh, atanh(x[0]))
R1(r_round, nearbyint(x[0]))
R1(r_sign, x[0] > 0 ? 1.0 : x[0] < 0 ? -1.0 : 0.0)
R1(r_prelu, x[0] < 0 ? x[0] * x[1] : x[0])
R1(r_xor, (x[0] != 0) != (x[1] != 0))
R1(r_softsign, x[0] / (1 + fabs(x[0])))
static double r_shrink(const double *x, const double *p) {
  return x[0] < -p[0] ? x[0] + p[1] : x[0] > p[0] ? x[0] - p[1] : 0;
}
static double r_celu(const double *x, const double *p) {
  return fmax(0, x[0]) + fmin(0, p[0] * (exp(x[0] / p[0]) - 1));
}
static double r_selu(const double *x, const double *p) {
  return x[0] > 0 ? p[1] * x[0] : p[1] * (p[0] * exp(x[0]) - p[0]);
}
static double r_thresholded(const double *x, const double *p) {
  return x[0] > p[0] ? x[0] : 0;
}
static double r_or(const double *x, const double *p) {
  (void)p;
  return x[0] != 0 || x[1] != 0;
}
static double r_where(const double *x, const double *p) {
  (void)p;
  return x[0] != 0 ? x[1] : x[2];
}
static double r_min3(const double *x, const double *p) {
  (void)p;
  return fmin(x[0], fmin(x[1], x[2]));
}
static double r_max2(const double *x, const double *p) {
  (void)p;
  return fmax(x[0], x[1]);
}
static double r_sum3(const double *x, const double *p) {
  (void)p;
  return x[0] + x[1] + x[2];
}
static double r_mean3(const double *x, const double *p) {
  (void)p;
  return (x[0] + x[1] + x[2]) / 3.0;
}
/* Clip with bounds p[0], p[1] (attributes) or inputs 1 and 2. */
static double r_clip(const double *x, const double *p) {
  return fmin(fmax(x[0], p[0]), p[1]);
}
static double r_clip_inputs(const double *x, const double *p) {
  (void)p;
  return fmin(fmax(x[0], x[1]), x[2]);
}
static double r_clip_input_max(const double *x, const double *p) {
  (void)p;
  return fmin(x[0], x[2]);
}
static double r_batchnorm(const double *x, const double *p) {
  return (x[0] - x[3]) / sqrt(x[4] + p[0]) * x[1] + x[2];
}

/* ---------------------------------------------------------------- cases */

#define F32 WEIR_DTYPE_F32
#define F64 WEIR_DTYPE_F64
#define I32 WEIR_DTYPE_I32
#define I64 WEIR_DTYPE_I64
#define BOOL WEIR_DTYPE_BOOL
#define U8 WEIR_DTYPE_U8

#define X1(t, s) .ins = {{"X", t, s}}, .n_ins = 1
#define AB(t, s1, s2) .ins = {{"A", t, s1}, {"B", t, s2}}, .n_ins = 2

static const Case cases[] = {
    /* Activations, f32 with a symbolic batch dimension. */
    {"Relu", X1(F32, "N, 4"), .lo = -1, .hi = 1, .ref = r_relu},
    {"Relu", X1(I32, "N, 4"), .lo = -9, .hi = 9, .ref = r_relu},
    {"LeakyRelu", X1(F32, "N, 4"), .lo = -1, .hi = 1, .ref = r_leaky,
     .p = {0.01}},
    {"LeakyRelu", X1(F64, "5"), .f = {{"alpha", 0.3}}, .lo = -1, .hi = 1,
     .ref = r_leaky, .p = {0.3}},
    {"Sigmoid", X1(F32, "N, 4"), .lo = -8, .hi = 8, .ref = r_sigmoid},
    {"Tanh", X1(F64, "N, 4"), .lo = -3, .hi = 3, .ref = r_tanh},
    {"Softplus", X1(F32, "N, 4"), .lo = -5, .hi = 5, .ref = r_softplus},
    {"HardSigmoid", X1(F32, "N, 4"), .lo = -5, .hi = 5, .ref = r_hardsigmoid,
     .p = {0.2, 0.5}},
    {"HardSigmoid", X1(F32, "N, 4"), .f = {{"alpha", 0.5}, {"beta", 0.6}},
     .lo = -3, .hi = 3, .ref = r_hardsigmoid, .p = {0.5, 0.6}},
    {"HardSwish", X1(F32, "N, 4"), .lo = -5, .hi = 5, .ref = r_hardswish},
    {"Elu", X1(F32, "N, 4"), .lo = -2, .hi = 2, .ref = r_elu, .p = {1.0}},
    {"Elu", X1(F64, "N, 4"), .f = {{"alpha", 2.0}}, .lo = -2, .hi = 2,
     .ref = r_elu, .p = {2.0}},
    /* Unary math. */
    {"Sqrt", X1(F32, "N, 4"), .lo = 0, .hi = 9, .ref = r_sqrt},
    {"Exp", X1(F32, "N, 4"), .lo = -3, .hi = 3, .ref = r_exp},
    {"Log", X1(F64, "N, 4"), .lo = 0.01, .hi = 9, .ref = r_log},
    {"Neg", X1(F32, "N, 4"), .lo = -3, .hi = 3, .ref = r_neg},
    {"Neg", X1(I64, "N, 4"), .lo = -9, .hi = 9, .ref = r_neg},
    {"Abs", X1(F32, "N, 4"), .lo = -3, .hi = 3, .ref = r_abs},
    {"Abs", X1(I32, "N, 4"), .lo = -9, .hi = 9, .ref = r_abs},
    {"Reciprocal", X1(F32, "N, 4"), .lo = 0.5, .hi = 4, .ref = r_recip},
    {"Erf", X1(F32, "N, 4"), .lo = -2, .hi = 2, .ref = r_erf},
    {"Floor", X1(F32, "N, 4"), .lo = -3, .hi = 3, .ref = r_floor},
    {"Ceil", X1(F64, "N, 4"), .lo = -3, .hi = 3, .ref = r_ceil},
    {"Not", X1(BOOL, "N, 4"), .ref = r_not},
    {"Identity", X1(I64, "N, 4"), .lo = -9, .hi = 9, .ref = r_ident},
    {"Identity", X1(F32, ""), .lo = -9, .hi = 9, .ref = r_ident},
    /* Binary, with broadcasting. */
    {"Add", .ins = {{"A", F32, "N, 1, 4"}, {"B", F32, "3, 1"}}, .n_ins = 2,
     .lo = -1, .hi = 1, .ref = r_add},
    {"Add", AB(U8, "N, 4", "4"), .lo = 100, .hi = 255, .ref = r_add},
    {"Sub", AB(I32, "N, 4", ""), .lo = -9, .hi = 9, .ref = r_sub},
    {"Sub", AB(U8, "N, 4", "N, 4"), .lo = 0, .hi = 20, .ref = r_sub},
    {"Mul", AB(F64, "N, 4", "N, 1"), .lo = -2, .hi = 2, .ref = r_mul},
    {"Mul", AB(U8, "N, 4", "4"), .lo = 0, .hi = 40, .ref = r_mul},
    {"Div", AB(F32, "N, 4", "4"), .lo = 0.5, .hi = 3, .ref = r_div},
    {"Div", AB(I32, "N, 4", "N, 4"), .lo = -9, .hi = 9, .nonzero = TRUE,
     .ref = r_idiv},
    {"Div", AB(U8, "N, 4", "4"), .lo = 1, .hi = 255, .nonzero = TRUE,
     .ref = r_idiv},
    {"Mod", AB(I32, "N, 4", "4"), .lo = -9, .hi = 9, .nonzero = TRUE,
     .ref = r_pymod},
    {"Mod", AB(I64, "N, 4", "N, 4"), .i = {{"fmod", 1}}, .lo = -9, .hi = 9,
     .nonzero = TRUE, .ref = r_fmod},
    {"Mod", AB(U8, "N, 4", "4"), .lo = 1, .hi = 255, .nonzero = TRUE,
     .ref = r_pymod},
    {"Mod", AB(F32, "N, 4", "4"), .i = {{"fmod", 1}}, .lo = 0.5, .hi = 3,
     .ref = r_fmod},
    {"Mod", AB(F64, "N, 4", ""), .i = {{"fmod", 1}}, .lo = -3, .hi = 3,
     .ref = r_fmod},
    {"Pow", AB(F32, "N, 4", "4"), .lo = 0.1, .hi = 3, .ref = r_pow},
    {"Pow", AB(I64, "N, 4", "N, 4"), .lo = 0, .hi = 5, .ref = r_pow},
    {"Pow", .ins = {{"A", F32, "N, 4"}, {"B", I32, "4"}}, .n_ins = 2, .lo = -3,
     .hi = 3, .ref = r_pow},
    {"Pow", .ins = {{"A", I32, "N, 4"}, {"B", F32, ""}}, .n_ins = 2, .lo = 0,
     .hi = 4, .ref = r_pow},
    {"Equal", AB(I32, "N, 4", "4"), .lo = 0, .hi = 2, .ref = r_eq},
    {"Equal", AB(BOOL, "N, 4", "N, 1"), .ref = r_eq},
    {"Less", AB(F32, "N, 4", "4"), .lo = -1, .hi = 1, .ref = r_lt},
    {"Greater", AB(I64, "N, 4", "4"), .lo = 0, .hi = 3, .ref = r_gt},
    {"LessOrEqual", AB(I32, "N, 4", ""), .lo = 0, .hi = 3, .ref = r_le},
    {"GreaterOrEqual", AB(F64, "N, 4", "N, 4"), .lo = 0, .hi = 3, .ref = r_ge},
    {"Xor", AB(BOOL, "N, 4", "4"), .ref = r_xor},
    {"PRelu", AB(F32, "N, 4", "4"), .lo = -2, .hi = 2, .ref = r_prelu},
    {"Sin", X1(F32, "N, 4"), .lo = -3, .hi = 3, .ref = r_sin},
    {"Cos", X1(F64, "N, 4"), .lo = -3, .hi = 3, .ref = r_cos},
    {"Tan", X1(F32, "N, 4"), .lo = -1.2, .hi = 1.2, .ref = r_tan},
    {"Asin", X1(F32, "N, 4"), .lo = -1, .hi = 1, .ref = r_asin},
    {"Acos", X1(F64, "N, 4"), .lo = -1, .hi = 1, .ref = r_acos},
    {"Atan", X1(F32, "N, 4"), .lo = -5, .hi = 5, .ref = r_atan},
    {"Sinh", X1(F32, "N, 4"), .lo = -3, .hi = 3, .ref = r_sinh},
    {"Cosh", X1(F32, "N, 4"), .lo = -3, .hi = 3, .ref = r_cosh},
    {"Asinh", X1(F32, "N, 4"), .lo = -5, .hi = 5, .ref = r_asinh},
    {"Acosh", X1(F64, "N, 4"), .lo = 1, .hi = 5, .ref = r_acosh},
    {"Atanh", X1(F32, "N, 4"), .lo = -0.9, .hi = 0.9, .ref = r_atanh},
    {"Round", X1(F32, "N, 4"), .lo = -5, .hi = 5, .ref = r_round},
    {"Softsign", X1(F32, "N, 4"), .lo = -5, .hi = 5, .ref = r_softsign},
    {"Shrink", X1(F64, "N, 4"), .f = {{"lambd", 1.0}, {"bias", 0.5}}, .lo = -3,
     .hi = 3, .ref = r_shrink, .p = {1.0, 0.5}},
    {"Sign", X1(F32, "N, 4"), .lo = -5, .hi = 5, .ref = r_sign},
    {"Sign", X1(I64, "N, 4"), .lo = -5, .hi = 5, .ref = r_sign},
    {"Celu", X1(F32, "N, 4"), .f = {{"alpha", 2.0}}, .lo = -3, .hi = 3,
     .ref = r_celu, .p = {2.0}},
    {"Selu", X1(F64, "N, 4"), .lo = -3, .hi = 3, .ref = r_selu,
     .p = {1.67326319217681884765625, 1.05070102214813232421875}},
    {"ThresholdedRelu", X1(F32, "N, 4"), .f = {{"alpha", 0.5}}, .lo = -2,
     .hi = 2, .ref = r_thresholded, .p = {0.5}},
    {"And", AB(BOOL, "N, 4", "4"), .ref = r_and},
    {"Or", AB(BOOL, "2, N, 4", "N, 1"), .ref = r_or},
    {"Where", .ins = {{"C", BOOL, "N, 1"}, {"A", F32, "N, 4"}, {"B", F32, "4"}},
     .n_ins = 3, .lo = -1, .hi = 1, .ref = r_where},
    {"Where", .ins = {{"C", BOOL, "4"}, {"A", I64, ""}, {"B", I64, "N, 1"}},
     .n_ins = 3, .lo = -9, .hi = 9, .ref = r_where},
    /* Variadic. */
    {"Min", .ins = {{"A", F64, "N, 4"}, {"B", F64, "4"}, {"C", F64, "N, 1"}},
     .n_ins = 3, .lo = -1, .hi = 1, .ref = r_min3},
    {"Min", .ins = {{"A", I32, "N, 4"}, {"B", I32, ""}, {"C", I32, "4"}},
     .n_ins = 3, .lo = -9, .hi = 9, .ref = r_min3},
    {"Max", AB(F32, "N, 4", "4"), .lo = -1, .hi = 1, .ref = r_max2},
    {"Max", X1(F32, "N, 4"), .lo = -1, .hi = 1, .ref = r_ident},
    {"Sum", .ins = {{"A", F32, "N, 4"}, {"B", F32, "4"}, {"C", F32, "N, 1"}},
     .n_ins = 3, .lo = -1, .hi = 1, .ref = r_sum3},
    {"Sum", X1(F64, "N"), .lo = -1, .hi = 1, .ref = r_ident},
    {"Mean", .ins = {{"A", F32, "N, 4"}, {"B", F32, "4"}, {"C", F32, "N, 4"}},
     .n_ins = 3, .lo = -1, .hi = 1, .ref = r_mean3},
    /* Clip: attributes, one-sided, min > max, integers, runtime bounds. */
    {"Clip", X1(F32, "N, 4"), .lo = -2, .hi = 2, .ref = r_clip,
     .p = {-INFINITY, INFINITY}},
    {"Clip", X1(F32, "N, 4"), .f = {{"min", -0.5}, {"max", 0.25}}, .lo = -2,
     .hi = 2, .ref = r_clip, .p = {-0.5, 0.25}},
    {"Clip", X1(F64, "N, 4"), .f = {{"min", -0.5}}, .lo = -2, .hi = 2,
     .ref = r_clip, .p = {-0.5, INFINITY}},
    {"Clip", X1(F32, "N, 4"), .f = {{"max", 0.5}}, .lo = -2, .hi = 2,
     .ref = r_clip, .p = {-INFINITY, 0.5}},
    {"Clip", X1(F32, "N, 4"), .f = {{"min", 1.0}, {"max", 0.0}}, .lo = -2,
     .hi = 2, .ref = r_clip, .p = {1.0, 0.0}},
    {"Clip", X1(I32, "N, 4"), .f = {{"min", -3}, {"max", 5}}, .lo = -9, .hi = 9,
     .ref = r_clip, .p = {-3, 5}},
    {"Clip", X1(U8, "N, 4"), .f = {{"min", -3}, {"max", 300}}, .lo = 0,
     .hi = 255, .ref = r_clip, .p = {-3, 300}},
    {"Clip", X1(I64, "N, 4"), .f = {{"min", 2}, {"max", 1e300}}, .lo = -9,
     .hi = 9, .ref = r_clip, .p = {2, INFINITY}},
    {"Clip", .ins = {{"X", F32, "N, 4"}, {"LO", F32, ""}, {"HI", F32, "1"}},
     .n_ins = 3, .lo = -1, .hi = 1, .ref = r_clip_inputs},
    {"Clip", .ins = {{"X", I64, "N, 4"}, {NULL}, {"HI", I64, ""}}, .n_ins = 3,
     .lo = -9, .hi = 9, .ref = r_clip_input_max},
    /* Cast: the writer converts with C semantics (truncation, != 0). */
    {"Cast", X1(F32, "N, 4"), .i = {{"to", 6}}, .lo = -9, .hi = 9,
     .ref = r_ident},
    {"Cast", X1(F64, "N, 4"), .i = {{"to", 9}}, .lo = -1, .hi = 1,
     .ref = r_ident},
    {"Cast", X1(I64, "N, 4"), .i = {{"to", 11}}, .lo = -9, .hi = 9,
     .ref = r_ident},
    {"Cast", X1(BOOL, "N, 4"), .i = {{"to", 1}}, .ref = r_ident},
    {"Cast", X1(F64, "N, 4"), .i = {{"to", 2}}, .lo = 0, .hi = 255,
     .ref = r_ident},
    {"Cast", X1(F64, "N, 4"), .i = {{"to", 1}}, .lo = -9, .hi = 9,
     .ref = r_ident},
    /* Dropout at inference, with the mask; training with ratio 0. */
    {"Dropout", X1(F32, "N, 4"), .n_outs = 2, .lo = -1, .hi = 1,
     .ref = r_ident},
    {"Dropout", .ins = {{"X", F32, "N, 4"}, {"R", F32, ""}}, .n_ins = 2,
     .n_outs = 2, .lo = -1, .hi = 1, .ref = r_ident},
    {"Dropout", X1(F64, "N, 4"), .f = {{"ratio", 0.0}},
     .i = {{"training_mode", 1}}, .lo = -1, .hi = 1, .ref = r_ident},
    /* BatchNormalization over channel dimension 1. */
    {"BatchNormalization",
     .ins = {{"X", F32, "N, 3, 2, 2"},
             {"S", F32, "3"},
             {"BIAS", F32, "3"},
             {"M", F32, "3"},
             {"V", F32, "3"}},
     .n_ins = 5, .lo = 0.1, .hi = 2, .ref = r_batchnorm, .p = {1e-5},
     .channel = TRUE},
    {"BatchNormalization",
     .ins = {{"X", F64, "N, 3"},
             {"S", F64, "3"},
             {"BIAS", F64, "3"},
             {"M", F64, "3"},
             {"V", F64, "3"}},
     .n_ins = 5, .f = {{"epsilon", 0.5}}, .lo = 0.1, .hi = 2,
     .ref = r_batchnorm, .p = {0.5}, .channel = TRUE},
};

/* -------------------------------------------------------------- builders */

static void value_from_container(const WeirContainer *c, WeirOpValue *v) {
  memset(v, 0, sizeof *v);
  v->present = TRUE;
  v->dtype = c->dtype;
  v->rank = c->shape->len;
  v->shape = (WeirExpr **)c->shape->pdata;
}

/* Runs the operator's inference on a library node whose inputs are wired;
 * outputs (n_outs of them) receive owned shapes (weir_op_value_clear). */
static gboolean infer_node(WeirGraph *g, WeirNode *lib, WeirContainer **ins,
                           guint n_ins, WeirOpValue *outs, guint n_outs,
                           GError **error) {
  WeirOpValue in_values[MAX_IN];
  for (guint k = 0; k < n_ins; k++) {
    if (ins[k])
      value_from_container(ins[k], &in_values[k]);
    else
      memset(&in_values[k], 0, sizeof in_values[k]);
  }
  (void)g;
  memset(outs, 0, sizeof *outs * n_outs);
  WeirOpInferContext ctx = {.node = lib,
                            .n_inputs = n_ins,
                            .inputs = in_values,
                            .n_outputs = n_outs,
                            .outputs = outs};
  const WeirOpInfo *info = weir_op_lookup(lib->op);
  assert_non_null(info);
  return info->infer(&ctx, error);
}

/* access nodes -> library node `op` -> access nodes Y0, Y1 with shapes from
 * inference.  Returns the graph; *lib_out receives the node. */
static WeirGraph *build_case(const Case *c, WeirNode **lib_out) {
  WeirGraph *g = weir_graph_new(c->op);
  weir_graph_add_symbol(g, "N");
  WeirState *s = weir_graph_add_state(g, "main");
  char *in_names[MAX_IN + 1] = {0};
  WeirContainer *containers[MAX_IN] = {0};
  guint n_conn = 0;
  for (guint k = 0; k < c->n_ins; k++) {
    if (!c->ins[k].name)
      continue;
    g_autoptr(GError) error = NULL;
    containers[k] = weir_graph_add_array(g, c->ins[k].name, c->ins[k].dtype,
                                         c->ins[k].shape, FALSE, &error);
    assert_non_null(containers[k]);
    in_names[n_conn++] = g_strdup_printf("in%u", k);
  }
  guint n_outs = c->n_outs ? c->n_outs : 1;
  char *out_names[3] = {0};
  for (guint k = 0; k < n_outs; k++)
    out_names[k] = g_strdup_printf("out%u", k);
  WeirNode *lib = weir_state_add_library(
      g, s, "node1", c->op, (const char **)in_names, (const char **)out_names);
  for (guint k = 0; k < G_N_ELEMENTS(c->f) && c->f[k].name; k++)
    weir_node_set_attr_float(lib, c->f[k].name, c->f[k].v);
  for (guint k = 0; k < G_N_ELEMENTS(c->i) && c->i[k].name; k++)
    weir_node_set_attr_int(lib, c->i[k].name, c->i[k].v);
  g_autoptr(GError) error = NULL;
  assert_true(weir_op_check_attrs(lib, &error));

  for (guint k = 0; k < c->n_ins; k++) {
    if (!containers[k])
      continue;
    WeirNode *a = weir_state_add_access(g, s, containers[k]->name);
    g_autoptr(WeirSubset) full = weir_container_full_subset(containers[k]);
    g_autofree char *subset = weir_subset_to_string(full);
    g_autofree char *conn = g_strdup_printf("in%u", k);
    assert_non_null(weir_state_add_memlet(g, s, a->id, NULL, lib->id, conn,
                                          containers[k]->name, subset, &error));
  }
  WeirOpValue outs[2];
  if (!infer_node(g, lib, containers, c->n_ins, outs, n_outs, &error))
    fail_msg("%s: inference failed: %s", c->op, error->message);
  for (guint k = 0; k < n_outs; k++) {
    g_autofree char *name = g_strdup_printf("Y%u", k);
    WeirContainer *y = weir_graph_add_container(
        g, name, outs[k].dtype, outs[k].rank, outs[k].shape, FALSE, &error);
    assert_non_null(y);
    weir_op_value_clear(&outs[k]);
    WeirNode *a = weir_state_add_access(g, s, name);
    g_autoptr(WeirSubset) full = weir_container_full_subset(y);
    g_autofree char *subset = weir_subset_to_string(full);
    assert_non_null(weir_state_add_memlet(g, s, lib->id, out_names[k], a->id,
                                          NULL, name, subset, &error));
  }
  for (guint k = 0; k < MAX_IN; k++)
    g_free(in_names[k]);
  for (guint k = 0; k < 3; k++)
    g_free(out_names[k]);
  if (lib_out)
    *lib_out = lib;
  return g;
}

/* ----------------------------------------------------------------- runs */

static gint64 *concrete_shape(const WeirContainer *c, GHashTable *bindings) {
  gint64 *shape = g_new0(gint64, c->shape->len + 1);
  for (guint d = 0; d < c->shape->len; d++)
    assert_true(weir_expr_eval(g_ptr_array_index(c->shape, d), bindings,
                               &shape[d], NULL));
  return shape;
}

/* The value a tensor of dtype t stores for the real number v (C
 * conversion: truncation for integers, wrapping to the width, != 0 for
 * bool, rounding for f32). */
static double store_as(WeirDType t, double v) {
  switch (t) {
  case WEIR_DTYPE_F32:
    return (float)v;
  case WEIR_DTYPE_F64:
    return v;
  case WEIR_DTYPE_BOOL:
    return v != 0;
  case WEIR_DTYPE_U8:
    return (double)(guint8)(gint64)trunc(v);
  case WEIR_DTYPE_I32:
    return (double)(gint32)(guint32)(gint64)trunc(v);
  default:
    return (double)(gint64)trunc(v);
  }
}

static void fill(WeirTensor *t, const Case *c, GRand *rng) {
  for (gint64 i = 0; i < t->count; i++) {
    double v;
    if (t->dtype == WEIR_DTYPE_BOOL)
      v = g_rand_boolean(rng);
    else if (weir_dtype_is_float(t->dtype))
      v = g_rand_double_range(rng, c->lo, c->hi);
    else {
      v = (double)g_rand_int_range(rng, (gint32)c->lo, (gint32)c->hi + 1);
      if (c->nonzero && v == 0)
        v = 1;
    }
    weir_tensor_set(t, i, store_as(t->dtype, v));
  }
}

/* Flat index into an input of shape in_shape (rank in_rank) for the output
 * multi-index idx (rank out_rank), by right-aligned broadcasting, or by
 * channel (output dimension 1) for vectors when `channel`. */
static gint64 input_index(const gint64 *idx, guint out_rank,
                          const WeirTensor *in, gboolean channel) {
  if (channel && in->rank == 1)
    return idx[1];
  gint64 flat = 0;
  for (guint d = 0; d < in->rank; d++) {
    gint64 i = in->shape[d] == 1 ? 0 : idx[out_rank - in->rank + d];
    flat = flat * in->shape[d] + i;
  }
  return flat;
}

static void run_case(const Case *c, guint number) {
  WeirNode *lib = NULL;
  g_autoptr(WeirGraph) g = build_case(c, &lib);
  g_autoptr(GError) error = NULL;
  guint count = 0;
  if (!weir_expand_all(g, NULL, &count, &error))
    fail_msg("case %u (%s): expansion failed: %s", number, c->op,
             error->message);
  assert_int_equal(count, 1);
  assert_true(weir_graph_validate(g, &error));
  WeirState *s = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    assert_int_not_equal(n->kind, WEIR_NODE_LIBRARY);
  }

  g_autoptr(GHashTable) bindings = weir_bindings_new();
  weir_bindings_set(bindings, "N", N_VALUE);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  g_autoptr(GRand) rng = g_rand_new_with_seed(1234 + number);
  const WeirTensor *inputs[MAX_IN] = {0};
  for (guint k = 0; k < c->n_ins; k++) {
    if (!c->ins[k].name)
      continue;
    WeirContainer *ct = weir_graph_container(g, c->ins[k].name);
    g_autofree gint64 *shape = concrete_shape(ct, bindings);
    WeirTensor *t = weir_tensor_new(ct->dtype, ct->shape->len, shape);
    fill(t, c, rng);
    inputs[k] = t;
    g_hash_table_insert(args, ct->name, t);
  }
  guint n_outs = c->n_outs ? c->n_outs : 1;
  WeirTensor *outs[2] = {0};
  for (guint k = 0; k < n_outs; k++) {
    g_autofree char *name = g_strdup_printf("Y%u", k);
    WeirContainer *ct = weir_graph_container(g, name);
    g_autofree gint64 *shape = concrete_shape(ct, bindings);
    outs[k] = weir_tensor_new(ct->dtype, ct->shape->len, shape);
    g_hash_table_insert(args, ct->name, outs[k]);
  }
  if (!weir_interpret(g, bindings, args, NULL, &error))
    fail_msg("case %u (%s): interpretation failed: %s", number, c->op,
             error->message);

  /* Reference. */
  const WeirTensor *y = outs[0];
  g_autoptr(WeirTensor) expected = weir_tensor_new(y->dtype, y->rank, y->shape);
  g_autofree gint64 *idx = g_new0(gint64, y->rank + 1);
  for (gint64 flat = 0; flat < y->count; flat++) {
    gint64 rest = flat;
    for (guint d = y->rank; d-- > 0;) {
      idx[d] = rest % y->shape[d];
      rest /= y->shape[d];
    }
    double x[MAX_IN] = {0};
    for (guint k = 0; k < c->n_ins; k++)
      if (inputs[k])
        x[k] = weir_tensor_get(
            inputs[k], input_index(idx, y->rank, inputs[k], c->channel));
    weir_tensor_set(expected, flat, store_as(y->dtype, c->ref(x, c->p)));
  }
  double rtol = y->dtype == WEIR_DTYPE_F32   ? 1e-5
                : y->dtype == WEIR_DTYPE_F64 ? 1e-12
                                             : 0;
  double atol = y->dtype == WEIR_DTYPE_F32   ? 1e-6
                : y->dtype == WEIR_DTYPE_F64 ? 1e-13
                                             : 0;
  if (!weir_tensor_allclose(y, expected, rtol, atol, NULL, &error))
    fail_msg("case %u (%s): %s", number, c->op, error->message);
  if (n_outs > 1) /* Dropout's mask: all true */
    for (gint64 i = 0; i < outs[1]->count; i++)
      assert_true(weir_tensor_get(outs[1], i) == 1.0);
}

static void test_cases(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    run_case(&cases[i], i);
}

/* Every operator of the family is registered with an expansion. */
static void test_registered(void **state) {
  (void)state;
  static const char *const names[] = {"Relu",
                                      "LeakyRelu",
                                      "Sigmoid",
                                      "Tanh",
                                      "Softplus",
                                      "HardSigmoid",
                                      "HardSwish",
                                      "Elu",
                                      "Add",
                                      "Sub",
                                      "Mul",
                                      "Div",
                                      "Mod",
                                      "Pow",
                                      "Sqrt",
                                      "Exp",
                                      "Log",
                                      "Neg",
                                      "Abs",
                                      "Reciprocal",
                                      "Erf",
                                      "Floor",
                                      "Ceil",
                                      "Min",
                                      "Max",
                                      "Sum",
                                      "Mean",
                                      "Clip",
                                      "Where",
                                      "Equal",
                                      "Less",
                                      "Greater",
                                      "LessOrEqual",
                                      "GreaterOrEqual",
                                      "Not",
                                      "And",
                                      "Or",
                                      "Cast",
                                      "Identity",
                                      "Dropout",
                                      "BatchNormalization"};
  weir_init();
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    const WeirOpInfo *info = weir_op_lookup(names[i]);
    assert_non_null(info);
    assert_string_equal(info->name, names[i]);
    assert_non_null(info->infer);
    assert_non_null(weir_op_expansion(names[i], "pure"));
  }
}

/* ------------------------------------------------------------ attributes */

static WeirNode *lone_node(WeirGraph *g, const char *op) {
  WeirState *s = weir_graph_add_state(g, "main");
  static const char *const ins[] = {"in0", NULL};
  static const char *const outs[] = {"out0", NULL};
  return weir_state_add_library(g, s, "n1", op, ins, outs);
}

static void test_attr_defaults(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  WeirNode *n = lone_node(g, "LeakyRelu");
  assert_null(weir_node_attr(n, "alpha"));
  assert_true(weir_op_check_attrs(n, &error));
  assert_non_null(weir_node_attr(n, "alpha"));
  assert_float_equal(weir_node_attr(n, "alpha")->f, 0.01, 1e-12);

  n = lone_node(g, "HardSigmoid");
  assert_true(weir_op_check_attrs(n, &error));
  assert_float_equal(weir_node_attr(n, "alpha")->f, 0.2, 1e-12);
  assert_float_equal(weir_node_attr(n, "beta")->f, 0.5, 1e-12);

  n = lone_node(g, "Elu");
  assert_true(weir_op_check_attrs(n, &error));
  assert_float_equal(weir_node_attr(n, "alpha")->f, 1.0, 1e-12);

  n = lone_node(g, "BatchNormalization");
  assert_true(weir_op_check_attrs(n, &error));
  assert_float_equal(weir_node_attr(n, "epsilon")->f, 1e-5, 1e-15);
  assert_int_equal(weir_node_attr(n, "training_mode")->i, 0);
  assert_null(weir_node_attr(n, "spatial"));

  n = lone_node(g, "Dropout");
  assert_true(weir_op_check_attrs(n, &error));
  assert_float_equal(weir_node_attr(n, "ratio")->f, 0.5, 1e-12);
  assert_null(weir_node_attr(n, "seed"));

  /* Clip: absent bounds stay absent (unbounded). */
  n = lone_node(g, "Clip");
  assert_true(weir_op_check_attrs(n, &error));
  assert_null(weir_node_attr(n, "min"));
  assert_null(weir_node_attr(n, "max"));

  /* Cast needs "to". */
  n = lone_node(g, "Cast");
  assert_false(weir_op_check_attrs(n, &error));
  assert_non_null(strstr(error->message, "'to'"));
}

/* Attributes passed as inputs in later opsets are declared for the
 * importer. */
static void test_attr_from_input(void **state) {
  (void)state;
  const WeirOpInfo *clip = weir_op_lookup("Clip");
  gboolean seen_min = FALSE, seen_max = FALSE;
  for (guint i = 0; i < clip->n_attrs; i++) {
    const WeirOpAttrSpec *a = &clip->attrs[i];
    if (strcmp(a->name, "min") == 0) {
      seen_min = TRUE;
      assert_int_equal(a->from_input, 2);
      assert_int_equal(a->input_since, 11);
      assert_null(a->default_value);
    }
    if (strcmp(a->name, "max") == 0) {
      seen_max = TRUE;
      assert_int_equal(a->from_input, 3);
      assert_int_equal(a->input_since, 11);
    }
  }
  assert_true(seen_min && seen_max);
  const WeirOpInfo *dropout = weir_op_lookup("Dropout");
  gboolean seen_ratio = FALSE;
  for (guint i = 0; i < dropout->n_attrs; i++)
    if (strcmp(dropout->attrs[i].name, "ratio") == 0) {
      seen_ratio = TRUE;
      assert_int_equal(dropout->attrs[i].from_input, 2);
      assert_int_equal(dropout->attrs[i].input_since, 12);
    }
  assert_true(seen_ratio);
}

/* ------------------------------------------------------------- inference */

/* Infers op on inputs given as (dtype, shape text); returns the result of
 * infer and fills out[0..n_outs). */
static gboolean infer_on(const char *op, WeirNode **node_out, WeirGraph *g,
                         const Arg *ins, guint n_ins, WeirOpValue *out,
                         guint n_outs, GError **error) {
  WeirState *s = weir_graph_add_state(g, "st");
  WeirNode *lib = weir_state_add_library(g, s, "lbl", op, NULL, NULL);
  weir_graph_add_symbol(g, "N");
  WeirContainer *cs[MAX_IN] = {0};
  for (guint k = 0; k < n_ins; k++) {
    if (!ins[k].name)
      continue;
    g_autofree char *name = g_strdup_printf("%s_%u", ins[k].name, lib->id);
    cs[k] =
        weir_graph_add_array(g, name, ins[k].dtype, ins[k].shape, FALSE, NULL);
    assert_non_null(cs[k]);
  }
  if (node_out)
    *node_out = lib;
  return infer_node(g, lib, cs, n_ins, out, n_outs, error);
}

static void assert_shape(const WeirOpValue *v, const char *expected) {
  GString *s = g_string_new(NULL);
  for (guint d = 0; d < v->rank; d++) {
    g_autofree char *e = weir_expr_to_string(v->shape[d]);
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  assert_string_equal(s->str, expected);
  g_string_free(s, TRUE);
}

static void test_infer_broadcast(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  g_autoptr(GError) error = NULL;
  WeirOpValue out[2];

  const Arg add[] = {{"a", F32, "N, 1, 4"}, {"b", F32, "3, 1"}};
  assert_true(infer_on("Add", NULL, g, add, 2, out, 1, &error));
  assert_int_equal(out[0].dtype, F32);
  assert_shape(&out[0], "N, 3, 4");
  weir_op_value_clear(&out[0]);

  const Arg cmp[] = {{"a", I64, "N"}, {"b", I64, ""}};
  assert_true(infer_on("Less", NULL, g, cmp, 2, out, 1, &error));
  assert_int_equal(out[0].dtype, BOOL);
  assert_shape(&out[0], "N");
  weir_op_value_clear(&out[0]);

  const Arg sum[] = {{"a", F64, "2, 1"}, {"b", F64, "N"}, {"c", F64, "1, N"}};
  assert_true(infer_on("Sum", NULL, g, sum, 3, out, 1, &error));
  assert_shape(&out[0], "2, N");
  weir_op_value_clear(&out[0]);

  const Arg where[] = {{"c", BOOL, "N, 1"}, {"x", I32, "5"}, {"y", I32, ""}};
  assert_true(infer_on("Where", NULL, g, where, 3, out, 1, &error));
  assert_int_equal(out[0].dtype, I32);
  assert_shape(&out[0], "N, 5");
  weir_op_value_clear(&out[0]);

  const Arg pow_[] = {{"a", F32, "N, 2"}, {"b", I64, "2"}};
  assert_true(infer_on("Pow", NULL, g, pow_, 2, out, 1, &error));
  assert_int_equal(out[0].dtype, F32);
  weir_op_value_clear(&out[0]);

  const Arg clip[] = {{"x", I32, "N, 2"}, {NULL}, {"hi", I32, ""}};
  assert_true(infer_on("Clip", NULL, g, clip, 3, out, 1, &error));
  assert_shape(&out[0], "N, 2");
  weir_op_value_clear(&out[0]);

  WeirNode *cast = NULL;
  g_autoptr(WeirGraph) g2 = weir_graph_new("t2");
  WeirState *s2 = weir_graph_add_state(g2, "st");
  cast = weir_state_add_library(g2, s2, "c", "Cast", NULL, NULL);
  weir_node_set_attr_int(cast, "to", 7);
  WeirContainer *cx = weir_graph_add_array(g2, "x", F32, "4", FALSE, NULL);
  assert_true(infer_node(g2, cast, &cx, 1, out, 1, &error));
  assert_int_equal(out[0].dtype, I64);
  assert_shape(&out[0], "4");
  weir_op_value_clear(&out[0]);

  const Arg drop[] = {{"x", F32, "N, 2"}};
  assert_true(infer_on("Dropout", NULL, g, drop, 1, out, 2, &error));
  assert_int_equal(out[0].dtype, F32);
  assert_int_equal(out[1].dtype, BOOL);
  assert_shape(&out[1], "N, 2");
  weir_op_value_clear(&out[0]);
  weir_op_value_clear(&out[1]);

  const Arg bn[] = {{"x", F32, "N, 3, 5"},
                    {"s", F32, "3"},
                    {"b", F32, "3"},
                    {"m", F32, "3"},
                    {"v", F32, "3"}};
  assert_true(infer_on("BatchNormalization", NULL, g, bn, 5, out, 1, &error));
  assert_shape(&out[0], "N, 3, 5");
  weir_op_value_clear(&out[0]);
}

static void expect_infer_error(const char *op, const Arg *ins, guint n_ins,
                               gint code, const char *fragment) {
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  g_autoptr(GError) error = NULL;
  WeirOpValue out[2];
  assert_false(infer_on(op, NULL, g, ins, n_ins, out, 1, &error));
  assert_non_null(error);
  assert_int_equal(error->code, code);
  if (!strstr(error->message, fragment) || !strstr(error->message, "'lbl'"))
    fail_msg("%s: unexpected message: %s", op, error->message);
}

static void test_infer_errors(void **state) {
  (void)state;
  const Arg bad_bcast[] = {{"a", F32, "N, 3"}, {"b", F32, "4"}};
  expect_infer_error("Add", bad_bcast, 2, WEIR_ERROR_INVALID,
                     "cannot be broadcast");
  const Arg mixed[] = {{"a", F32, "3"}, {"b", F64, "3"}};
  expect_infer_error("Mul", mixed, 2, WEIR_ERROR_INVALID, "input 1");
  const Arg bool_add[] = {{"a", BOOL, "3"}, {"b", BOOL, "3"}};
  expect_infer_error("Add", bool_add, 2, WEIR_ERROR_UNSUPPORTED, "bool");
  const Arg int_sigmoid[] = {{"a", I32, "3"}};
  expect_infer_error("Sigmoid", int_sigmoid, 1, WEIR_ERROR_UNSUPPORTED,
                     "f32, f64, f16 or bf16");
  const Arg where[] = {{"c", F32, "3"}, {"x", F32, "3"}, {"y", F32, "3"}};
  expect_infer_error("Where", where, 3, WEIR_ERROR_UNSUPPORTED, "input 0");
  const Arg clip[] = {{"x", F32, "3"}, {"lo", F32, "3"}};
  expect_infer_error("Clip", clip, 2, WEIR_ERROR_INVALID, "scalar");
  const Arg bn_rank[] = {{"x", F32, "3"},
                         {"s", F32, "3"},
                         {"b", F32, "3"},
                         {"m", F32, "3"},
                         {"v", F32, "3"}};
  expect_infer_error("BatchNormalization", bn_rank, 5, WEIR_ERROR_INVALID,
                     "rank 1");
  const Arg bn_c[] = {{"x", F32, "N, 4"},
                      {"s", F32, "3"},
                      {"b", F32, "4"},
                      {"m", F32, "4"},
                      {"v", F32, "4"}};
  expect_infer_error("BatchNormalization", bn_c, 5, WEIR_ERROR_INVALID,
                     "input 1 (scale) has 3 elements, expected 4");
  const Arg missing[] = {{"a", F32, "3"}};
  expect_infer_error("Add", missing, 1, WEIR_ERROR_INVALID, "inputs");
}

/* Unsupported attribute values are reported, never computed wrongly. */
static void test_infer_unsupported(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  WeirOpValue out[2];

  g_autoptr(WeirGraph) g1 = weir_graph_new("t");
  WeirState *s1 = weir_graph_add_state(g1, "st");
  WeirNode *cast = weir_state_add_library(g1, s1, "c1", "Cast", NULL, NULL);
  weir_node_set_attr_int(cast, "to", 8);
  WeirContainer *c1 = weir_graph_add_array(g1, "x", F32, "3", FALSE, NULL);
  assert_false(infer_node(g1, cast, &c1, 1, out, 1, &error));
  assert_int_equal(error->code, WEIR_ERROR_UNSUPPORTED);
  assert_non_null(strstr(error->message, "STRING"));
  g_clear_error(&error);

  WeirNode *drop = weir_state_add_library(g1, s1, "d1", "Dropout", NULL, NULL);
  weir_node_set_attr_int(drop, "training_mode", 1);
  assert_false(infer_node(g1, drop, &c1, 1, out, 1, &error));
  assert_int_equal(error->code, WEIR_ERROR_UNSUPPORTED);
  assert_non_null(strstr(error->message, "'d1'"));
  g_clear_error(&error);

  WeirNode *bn =
      weir_state_add_library(g1, s1, "b1", "BatchNormalization", NULL, NULL);
  weir_node_set_attr_int(bn, "spatial", 0);
  WeirContainer *cs[5] = {
      weir_graph_add_array(g1, "bx", F32, "2, 3", FALSE, NULL), c1, c1, c1, c1};
  assert_false(infer_node(g1, bn, cs, 5, out, 1, &error));
  assert_int_equal(error->code, WEIR_ERROR_UNSUPPORTED);
  assert_non_null(strstr(error->message, "spatial"));
}

/* ------------------------------------------------------------------ flops */

static void test_flops(void **state) {
  (void)state;
  static const struct {
    Case c;
    const char *flops; /* with N symbolic */
  } f[] = {
      {{"Add", .ins = {{"A", F32, "N, 1"}, {"B", F32, "3"}}, .n_ins = 2},
       "3*N"},
      {{"Add", .ins = {{"A", I32, "N, 1"}, {"B", I32, "3"}}, .n_ins = 2}, "0"},
      {{"Sigmoid", .ins = {{"A", F32, "N"}}, .n_ins = 1}, "4*N"},
      {{"Sum", .ins = {{"A", F64, "N"}, {"B", F64, "N"}, {"C", F64, "N"}},
        .n_ins = 3},
       "2*N"},
      {{"Mean", .ins = {{"A", F64, "N"}, {"B", F64, "N"}}, .n_ins = 2}, "2*N"},
      {{"Clip", .ins = {{"A", F32, "N"}}, .n_ins = 1, .f = {{"min", 0.0}}},
       "N"},
      {{"Cast", .ins = {{"A", F32, "N"}}, .n_ins = 1, .i = {{"to", 7}}}, "0"},
      {{"Tan", .ins = {{"A", F32, "N"}}, .n_ins = 1}, "N"},
      {{"Celu", .ins = {{"A", F32, "N"}}, .n_ins = 1}, "6*N"},
      {{"Selu", .ins = {{"A", F64, "N"}}, .n_ins = 1}, "5*N"},
      {{"IsInf", .ins = {{"A", F32, "N"}}, .n_ins = 1}, "2*N"},
      {{"Sign", .ins = {{"A", I64, "N"}}, .n_ins = 1}, "0"},
      {{"Xor", .ins = {{"A", BOOL, "N"}, {"B", BOOL, "N"}}, .n_ins = 2}, "0"},
      {{"DequantizeLinear", .ins = {{"X", U8, "N, 3"}, {"S", F32, ""}},
        .n_ins = 2},
       "3*N"},
      {{"QuantizeLinear", .ins = {{"X", F32, "N"}, {"S", F32, ""}}, .n_ins = 2},
       "5*N"},
      {{"BatchNormalization",
        .ins = {{"X", F32, "N, 2"},
                {"S", F32, "2"},
                {"B", F32, "2"},
                {"M", F32, "2"},
                {"V", F32, "2"}},
        .n_ins = 5},
       "12*N"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(f); i++) {
    WeirNode *lib = NULL;
    g_autoptr(WeirGraph) g = build_case(&f[i].c, &lib);
    WeirState *s = g_ptr_array_index(g->states, 0);
    const WeirOpInfo *info = weir_op_lookup(lib->op);
    g_autoptr(WeirExpr) e = info->flops(g, s, lib);
    assert_non_null(e);
    g_autofree char *text = weir_expr_to_string(e);
    if (strcmp(text, f[i].flops) != 0)
      fail_msg("%s: FLOPs %s, expected %s", lib->op, text, f[i].flops);
  }
}

/* -------------------------------------------------------------- structure */

static void test_expansion_structure(void **state) {
  (void)state;
  const Case c = {"Add", .ins = {{"A", F32, "N, 1, 4"}, {"B", F32, "3, 1"}},
                  .n_ins = 2};
  g_autoptr(WeirGraph) g = build_case(&c, NULL);
  g_autoptr(GError) error = NULL;
  assert_true(weir_expand_all(g, "Add", NULL, &error));
  WeirState *s = g_ptr_array_index(g->states, 0);
  guint maps = 0, tasklets = 0;
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_MAP_ENTRY) {
      maps++;
      assert_int_equal(n->map->params->len, 3);
      g_autofree char *r0 =
          weir_range_to_string(&g_array_index(n->map->ranges, WeirRange, 0));
      assert_string_equal(r0, "0:N");
    }
    if (n->kind == WEIR_NODE_TASKLET) {
      tasklets++;
      assert_string_equal(n->code_text, "y = a + b");
    }
  }
  assert_int_equal(maps, 1);
  assert_int_equal(tasklets, 1);
  /* Broadcast reads: B (3, 1) is read at (i1, 0). */
  gboolean seen = FALSE;
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (g_strcmp0(m->dst_conn, "b") == 0) {
      g_autofree char *sub = weir_subset_to_string(m->subset);
      assert_string_equal(sub, "i1, 0");
      seen = TRUE;
    }
  }
  assert_true(seen);
}

/* The attribute literal is exact and negative values are parenthesized. */
static void test_expansion_literals(void **state) {
  (void)state;
  const Case c = {"LeakyRelu", .ins = {{"X", F64, "N"}}, .n_ins = 1,
                  .f = {{"alpha", -0.1}}};
  g_autoptr(WeirGraph) g = build_case(&c, NULL);
  g_autoptr(GError) error = NULL;
  assert_true(weir_expand_all(g, NULL, NULL, &error));
  WeirState *s = g_ptr_array_index(g->states, 0);
  gboolean seen = FALSE;
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_TASKLET) {
      assert_non_null(strstr(n->code_text, "(-0.10000000000000001) * x"));
      seen = TRUE;
    }
  }
  assert_true(seen);
}

/* The library node of a one-node graph built by build_case. */
static WeirNode *library_of(WeirGraph *g) {
  WeirState *s = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY)
      return n;
  }
  fail_msg("no library node");
  return NULL;
}

/* Expanding g fails with code and a message containing fragment, and
 * leaves the program as it was. */
static void expect_expand_error(WeirGraph *g, gint code, const char *fragment) {
  g_autoptr(GError) error = NULL;
  guint next_id = g->next_id;
  guint n_nodes = ((WeirState *)g_ptr_array_index(g->states, 0))->nodes->len;
  assert_false(weir_expand_all(g, NULL, NULL, &error));
  assert_int_equal(error->code, code);
  if (!strstr(error->message, fragment))
    fail_msg("unexpected message: %s", error->message);
  assert_int_equal(g->next_id, next_id);
  assert_int_equal(((WeirState *)g_ptr_array_index(g->states, 0))->nodes->len,
                   n_nodes);
  assert_non_null(library_of(g));
}

/* Expansions check what inference checks, for graphs built without it. */
static void test_expansion_errors(void **state) {
  (void)state;
  const Case drop = {"Dropout", .ins = {{"X", F32, "N"}}, .n_ins = 1,
                     .f = {{"ratio", 0.0}}, .i = {{"training_mode", 1}}};
  g_autoptr(WeirGraph) g1 = build_case(&drop, NULL);
  weir_node_set_attr_float(library_of(g1), "ratio", 0.3);
  expect_expand_error(g1, WEIR_ERROR_UNSUPPORTED, "nonzero ratio");

  const Case bn = {"BatchNormalization",
                   .ins = {{"X", F32, "N, 2"},
                           {"S", F32, "2"},
                           {"B", F32, "2"},
                           {"M", F32, "2"},
                           {"V", F32, "2"}},
                   .n_ins = 5};
  g_autoptr(WeirGraph) g2 = build_case(&bn, NULL);
  weir_node_set_attr_int(library_of(g2), "training_mode", 1);
  weir_node_set_attr_int(library_of(g2), "spatial", 0);
  expect_expand_error(g2, WEIR_ERROR_UNSUPPORTED, "spatial = 0");

  const Case cast = {"Cast", .ins = {{"X", F32, "N"}}, .n_ins = 1,
                     .i = {{"to", 6}}};
  g_autoptr(WeirGraph) g3 = build_case(&cast, NULL);
  weir_node_set_attr_int(library_of(g3), "to", 17);
  expect_expand_error(g3, WEIR_ERROR_UNSUPPORTED, "data type 17");

  /* An output shape the inputs do not broadcast to. */
  const Case add = {"Add", .ins = {{"A", F32, "N, 4"}, {"B", F32, "4"}},
                    .n_ins = 2};
  g_autoptr(WeirGraph) g4 = build_case(&add, NULL);
  g_autoptr(GError) error = NULL;
  assert_non_null(weir_graph_add_array(g4, "Z", F32, "N, 5", FALSE, &error));
  WeirState *s = g_ptr_array_index(g4->states, 0);
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_ACCESS && strcmp(n->data, "Y0") == 0) {
      g_free(n->data);
      n->data = g_strdup("Z");
    }
  }
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (g_strcmp0(m->data, "Y0") == 0) {
      g_free(m->data);
      m->data = g_strdup("Z");
    }
  }
  expect_expand_error(g4, WEIR_ERROR_INVALID, "does not broadcast");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registered),
      cmocka_unit_test(test_attr_defaults),
      cmocka_unit_test(test_attr_from_input),
      cmocka_unit_test(test_infer_broadcast),
      cmocka_unit_test(test_infer_errors),
      cmocka_unit_test(test_infer_unsupported),
      cmocka_unit_test(test_flops),
      cmocka_unit_test(test_expansion_structure),
      cmocka_unit_test(test_expansion_literals),
      cmocka_unit_test(test_expansion_errors),
      cmocka_unit_test(test_cases),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
