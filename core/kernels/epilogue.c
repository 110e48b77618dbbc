/* epilogue.c — epilogues applied in a kernel's store (weir-kernels.h),
 * shared by Weir's depthwise convolution and its GEMM: the classifier of
 * epilogue code, the checks of its extra inputs, the C text of the
 * activations (vectors of the ISA's width and one element), and what an
 * emitter passes to its helper.
 *
 * Conventions of this file:
 *  - The vector text is a template: "@VL@" the lanes (f32), "@VB@" their
 *    bytes, "@TGT@" the target attribute of the ISA ("" for generic).  It
 *    is recorded as the helper "weir_act_v<VL>", printed once per unit
 *    before the kernels that use it (helpers are printed in name order).
 *  - Vectors are GCC vector extensions; loads go through memcpy.
 */
#include <math.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-code.h"
#include "weir-expand.h"
#include "weir-expr.h"
#include "weir-kernels.h"
#include "weir-native.h"

/* ------------------------------------------------------------ the text */

/* Per width: the vector type, load, broadcast, select, clamp, exp,
 * reciprocal, sigmoid and the activation. */
static const char act_vec[] =
    "@INC@"
    "typedef float weir_act_v@VL@ __attribute__((vector_size(@VB@)));\n"
    "typedef int32_t weir_act_i@VL@ __attribute__((vector_size(@VB@)));\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_act_load@VL@(const float *p) {\n"
    "  weir_act_v@VL@ v;\n"
    "  memcpy(&v, p, sizeof v);\n"
    "  return v;\n"
    "}\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_act_set@VL@(float x) {\n"
    "  weir_act_v@VL@ v = {0};\n"
    "  return v + x;\n"
    "}\n"
    "/* m ? a : b, lane by lane (m: all ones or zeros) */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_act_sel@VL@(weir_act_i@VL@ m, weir_act_v@VL@ a, weir_act_v@VL@ b) {\n"
    "  return (weir_act_v@VL@)(((weir_act_i@VL@)a & m) | ((weir_act_i@VL@)b & "
    "~m));\n"
    "}\n"
    "/* x clamped to [lo, hi], NaN kept: @CLAMPDOC@ */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_act_clamp@VL@(weir_act_v@VL@ x, float lo, float hi) {\n"
    "@CLAMP@"
    "}\n"
    "/* exp(x) for x in [-87, 88]: x = n ln2 + r (|r| <= ln2 / 2, n\n"
    " * rounded by the 1.5 * 2^23 shift), e^r as 1 + r q(r), q of degree 4\n"
    " * fitted for the least largest relative error on r (9.5e-8 with the\n"
    " * coefficients in f32), times 2^n @EXP2DOC@. */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_act_expr@VL@(weir_act_v@VL@ x) {\n"
    "  const weir_act_v@VL@ t = x * 1.44269504088896341f + 12582912.0f;\n"
    "  const weir_act_v@VL@ n = t - 12582912.0f;\n"
    "  weir_act_v@VL@ r = x - n * 0.693359375f;\n"
    "  r = r - n * -2.12194440e-4f;\n"
    "  weir_act_v@VL@ p = r * 8.290315047e-3f + 4.189793020e-2f;\n"
    "  p = p * r + 1.666763574e-1f;\n"
    "  p = p * r + 4.999915063e-1f;\n"
    "  p = p * r + 9.999997020e-1f;\n"
    "  p = p * r + 1.0f;\n"
    "@EXP2@"
    "}\n"
    "/* exp(x): x clamped to [-87, 88] (NaN kept), then weir_act_expr. */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_act_exp@VL@(weir_act_v@VL@ x) {\n"
    "  return weir_act_expr@VL@(weir_act_clamp@VL@(x, -87.0f, 88.0f));\n"
    "}\n"
    "/* 1 / d for d in [1, 2^126): @RCPDOC@ */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_act_rcp@VL@(weir_act_v@VL@ d) {\n"
    "@RCP@"
    "}\n"
    "/* sigmoid(x) = 1 / (1 + exp(-x)), exp's argument clamped to [-87, 87]\n"
    " * (NaN kept) so that 1 + exp(-x) < 2^126 (sigmoid(-inf) is then\n"
    " * 1.6e-38, sigmoid(inf) 1). */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_act_sigm@VL@(weir_act_v@VL@ x) {\n"
    "  const weir_act_v@VL@ u = weir_act_clamp@VL@(-x, -87.0f, 87.0f);\n"
    "  return weir_act_rcp@VL@(1.0f + weir_act_expr@VL@(u));\n"
    "}\n"
    "/* erf(x) = sign(x) (1 - q(t) exp(-x^2)), t = 1 / (1 + p |x|), q a\n"
    " * polynomial of degree 5 without constant term (absolute error below\n"
    " * 1.5e-7; Abramowitz and Stegun 7.1.26). */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_act_erf@VL@(weir_act_v@VL@ x) {\n"
    "  const weir_act_v@VL@ z = weir_act_set@VL@(0.0f);\n"
    "  const weir_act_v@VL@ a = weir_act_sel@VL@(x < z, -x, x);\n"
    "  const weir_act_v@VL@ t = 1.0f / (1.0f + 0.3275911f * a);\n"
    "  weir_act_v@VL@ q = t * 1.061405429f - 1.453152027f;\n"
    "  q = q * t + 1.421413741f;\n"
    "  q = q * t - 0.284496736f;\n"
    "  q = q * t + 0.254829592f;\n"
    "  q = q * t;\n"
    "  const weir_act_v@VL@ e = 1.0f - q * weir_act_exp@VL@(-(a * a));\n"
    "  return weir_act_sel@VL@(x < z, -e, e);\n"
    "}\n"
    "/* the activation of the epilogue: 1 clip to [lo, hi] (ReLU: [0, inf]),\n"
    " * 2 sigmoid, 3 SiLU x * sigmoid(x), 4 HardSwish x * clip(x + 3, 0, 6) /\n"
    " * 6, 5 GELU x / 2 * (1 + erf(x / sqrt(2))); 0 none */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_act_apply@VL@(weir_act_v@VL@ v, int act, float lo, float hi) {\n"
    "  switch (act) {\n"
    "  case 1:\n"
    "    return weir_act_clamp@VL@(v, lo, hi);\n"
    "  case 2:\n"
    "    return weir_act_sigm@VL@(v);\n"
    "  case 3:\n"
    "    return v * weir_act_sigm@VL@(v);\n"
    "  case 4: {\n"
    "    const weir_act_v@VL@ z = weir_act_set@VL@(0.0f), s = "
    "weir_act_set@VL@(6.0f);\n"
    "    weir_act_v@VL@ g = v + 3.0f;\n"
    "    g = weir_act_sel@VL@(g < z, z, g);\n"
    "    g = weir_act_sel@VL@(g > s, s, g);\n"
    "    return v * g * (1.0f / 6.0f);\n"
    "  }\n"
    "  case 5:\n"
    "    return v * 0.5f * (1.0f + weir_act_erf@VL@(v * "
    "0.70710678118654752f));\n"
    "  default:\n"
    "    return v;\n"
    "  }\n"
    "}\n";

/* One element, for dtype @T@ (suffix @S@, exp @EXP@). */
static const char act_scalar[] =
    "/* the activation of the epilogue on one element (as weir_act_apply) */\n"
    "static inline @T@ weir_act1_@S@(@T@ v, int act, @T@ lo, @T@ hi) {\n"
    "  switch (act) {\n"
    "  case 1:\n"
    "    v = v < lo ? lo : v;\n"
    "    return v > hi ? hi : v;\n"
    "  case 2:\n"
    "    return 1 / (1 + @EXP@(-v));\n"
    "  case 3:\n"
    "    return v / (1 + @EXP@(-v));\n"
    "  case 4: {\n"
    "    @T@ g = v + 3;\n"
    "    g = g < 0 ? 0 : g > 6 ? 6 : g;\n"
    "    return v * g * (@T@)(1.0 / 6.0);\n"
    "  }\n"
    "  case 5:\n"
    "    return v * (@T@)0.5 * (1 + @ERF@(v * (@T@)0.70710678118654752));\n"
    "  default:\n"
    "    return v;\n"
    "  }\n"
    "}\n";

const char *weir_kernel_isa_target(WeirHwIsa isa) {
  switch (isa) {
  case WEIR_HW_ISA_AVX512:
    return "__attribute__((target(\"avx512f,fma\")))";
  case WEIR_HW_ISA_AVX2:
    return "__attribute__((target(\"avx2,fma\")))";
  case WEIR_HW_ISA_GENERIC:
    break;
  }
  return "";
}

/* 1 / d at 16 lanes of AVX-512: the reciprocal estimate (relative error
 * below 2^-14) and one Newton step; elsewhere the division. */
static const char rcp_avx512[] =
    "  const weir_act_v16 r = (weir_act_v16)_mm512_rcp14_ps((__m512)d);\n"
    "  return r + r * (1.0f - d * r);\n";
static const char rcp_div[] = "  return 1.0f / d;\n";

/* p 2^n (n integral, in [-126, 127] after exp's clamp) at 16 lanes of
 * AVX-512: vscalefps, one instruction where the exponent bits take an
 * integer subtract, a shift and a multiply (r52); the product is the same
 * float.  Elsewhere (and at 8 or 4 lanes, which would need AVX-512VL) the
 * exponent bits from t, the shifted x log2(e). */
static const char exp2_scalef[] =
    "  return (weir_act_v16)_mm512_scalef_ps((__m512)p, (__m512)n);\n";
static const char exp2_bits[] =
    "  const weir_act_i@VL@ e =\n"
    "      ((weir_act_i@VL@)t - 0x4B400000 + 127) << 23;\n"
    "  return p * (weir_act_v@VL@)e;\n";

/* The clamp: max then min of the ISA (the second operand, x, is the
 * result when one is NaN), or two selects. */
static const char clamp_sel[] =
    "  const weir_act_v@VL@ l = weir_act_set@VL@(lo), u = "
    "weir_act_set@VL@(hi);\n"
    "  x = weir_act_sel@VL@(x < l, l, x);\n"
    "  return weir_act_sel@VL@(x > u, u, x);\n";
static const char clamp_isa[] =
    "  return (weir_act_v@VL@)_mm@W@_min_ps(_mm@W@_set1_ps(hi),\n"
    "      _mm@W@_max_ps(_mm@W@_set1_ps(lo), (__m@M@)x));\n";

char *weir_kernel_act_text(WeirHwIsa isa, guint vl) {
  GString *s = g_string_new(act_vec);
  char buf[16];
  const gboolean rcp14 = isa == WEIR_HW_ISA_AVX512 && vl == 16;
  /* vmaxps / vminps of the width: 16 lanes need AVX-512, 8 and 4 AVX */
  const gboolean minmax =
      (isa == WEIR_HW_ISA_AVX512 && (vl == 16 || vl == 8 || vl == 4)) ||
      (isa == WEIR_HW_ISA_AVX2 && (vl == 8 || vl == 4));
  g_string_replace(s, "@INC@",
                   rcp14 || minmax ? "#include <immintrin.h>\n" : "", 0);
  g_string_replace(s, "@CLAMPDOC@",
                   minmax ? "vmaxps then vminps" : "two selects", 0);
  g_string_replace(s, "@CLAMP@", minmax ? clamp_isa : clamp_sel, 0);
  g_string_replace(s, "@W@", vl == 16 ? "512" : vl == 8 ? "256" : "", 0);
  g_string_replace(s, "@M@", vl == 16 ? "512" : vl == 8 ? "256" : "128", 0);
  g_string_replace(s, "@RCPDOC@",
                   rcp14 ? "vrcp14ps (relative error < 2^-14) and one\n"
                           " * Newton step r + r (1 - d r) (about 1 ulp)"
                         : "the division",
                   0);
  g_string_replace(s, "@RCP@", rcp14 ? rcp_avx512 : rcp_div, 0);
  g_string_replace(s, "@EXP2DOC@",
                   rcp14 ? "by vscalefps" : "built in the exponent bits", 0);
  g_string_replace(s, "@EXP2@", rcp14 ? exp2_scalef : exp2_bits, 0);
  g_string_replace(s, "@TGT@", weir_kernel_isa_target(isa), 0);
  g_snprintf(buf, sizeof buf, "%u", vl * 4);
  g_string_replace(s, "@VB@", buf, 0);
  g_snprintf(buf, sizeof buf, "%u", vl);
  g_string_replace(s, "@VL@", buf, 0);
  return g_string_free(s, FALSE);
}

char *weir_kernel_act_scalar_text(WeirDType t) {
  gboolean f64 = t == WEIR_DTYPE_F64;
  GString *s = g_string_new(act_scalar);
  g_string_replace(s, "@T@", f64 ? "double" : "float", 0);
  g_string_replace(s, "@S@", f64 ? "f64" : "f32", 0);
  g_string_replace(s, "@EXP@", f64 ? "exp" : "expf", 0);
  g_string_replace(s, "@ERF@", f64 ? "erf" : "erff", 0);
  return g_string_free(s, FALSE);
}

void weir_kernel_act_record(WeirNativeEmit *e, WeirHwIsa isa, guint vl,
                            WeirDType t) {
  g_autofree char *st = weir_kernel_act_scalar_text(t);
  e->helper(e, t == WEIR_DTYPE_F64 ? "weir_act1_f64" : "weir_act1_f32", st);
  if (vl == 0)
    return;
  g_autofree char *name = g_strdup_printf("weir_act_v%u", vl);
  g_autofree char *vt = weir_kernel_act_text(isa, vl);
  e->helper(e, name, vt);
}

/* ---------------------------------------------------------- classifier */

/* The epilogue's code with its names resolved: locals to the expression
 * assigned to them, the connector of the node's result to X, extra
 * connector k to R_k. */
typedef struct {
  GHashTable *locals; /* name -> WeirAst* (borrowed from code) */
  const char *x;      /* connector of the node's result */
  GPtrArray *extras;  /* char*: connectors of the extra inputs */
  /* per extra input: its value when it is a scalar constant (vals[k] when
   * known[k]), which the code then reads as a literal; NULL: none known */
  const double *vals;
  const gboolean *known;
} Names;

/* Follows names of locals to their value. */
static const WeirAst *resolve(const Names *nm, const WeirAst *e) {
  for (guint guard = 0; e && e->kind == WEIR_AST_NAME && guard < 64; guard++) {
    const WeirAst *v = g_hash_table_lookup(nm->locals, e->name);
    if (!v)
      break;
    e = v;
  }
  return e;
}

/* -1: X; k >= 0: extra input k; -2: not a connector. */
static int leaf(const Names *nm, const WeirAst *e) {
  e = resolve(nm, e);
  if (!e || e->kind != WEIR_AST_NAME)
    return -2;
  if (strcmp(e->name, nm->x) == 0)
    return -1;
  for (guint k = 0; k < nm->extras->len; k++)
    if (strcmp(e->name, g_ptr_array_index(nm->extras, k)) == 0)
      return nm->known && nm->known[k] ? -2 : (int)k;
  return -2;
}

/* The value of a scalar constant extra input that e names, if any. */
static gboolean known_extra(const Names *nm, const WeirAst *e, double *v) {
  if (!nm->known || e->kind != WEIR_AST_NAME)
    return FALSE;
  for (guint k = 0; k < nm->extras->len; k++)
    if (nm->known[k] &&
        strcmp(e->name, g_ptr_array_index(nm->extras, k)) == 0) {
      *v = nm->vals[k];
      return TRUE;
    }
  return FALSE;
}

static gboolean same(const Names *nm, const WeirAst *a, const WeirAst *b) {
  int la = leaf(nm, a), lb = leaf(nm, b);
  if (la != -2 || lb != -2)
    return la == lb;
  return resolve(nm, a) == resolve(nm, b);
}

static gboolean literal(const Names *nm, const WeirAst *e, double *v) {
  e = resolve(nm, e);
  if (!e)
    return FALSE;
  if (e->kind == WEIR_AST_FLOAT || e->kind == WEIR_AST_INT) {
    *v = e->kind == WEIR_AST_FLOAT ? e->fval : (double)e->ival;
    return TRUE;
  }
  if (known_extra(nm, e, v))
    return TRUE;
  if (e->kind == WEIR_AST_UNARY && e->op == WEIR_OP_NEG &&
      literal(nm, e->a, v)) {
    *v = -*v;
    return TRUE;
  }
  return FALSE;
}

static gboolean literal_is(const Names *nm, const WeirAst *e, double want) {
  double v;
  return literal(nm, e, &v) && v == want;
}

static gboolean binary(const Names *nm, const WeirAst **e, WeirOp op) {
  *e = resolve(nm, *e);
  return *e && (*e)->kind == WEIR_AST_BINARY && (*e)->op == op;
}

static gboolean call2(const Names *nm, const WeirAst **e, WeirFunc f) {
  *e = resolve(nm, *e);
  return *e && (*e)->kind == WEIR_AST_CALL && (*e)->func == f &&
         (*e)->args->len == 2;
}

/* e = 1 + exp(-arg) (either order of the sum): *arg. */
static gboolean one_plus_exp_neg(const Names *nm, const WeirAst *e,
                                 const WeirAst **arg) {
  if (!binary(nm, &e, WEIR_OP_ADD))
    return FALSE;
  for (int side = 0; side < 2; side++) {
    const WeirAst *one = side ? e->b : e->a, *ex = side ? e->a : e->b;
    ex = resolve(nm, ex);
    if (!literal_is(nm, one, 1.0) || !ex || ex->kind != WEIR_AST_CALL ||
        ex->func != WEIR_FUNC_EXP || ex->args->len != 1)
      continue;
    const WeirAst *neg = resolve(nm, g_ptr_array_index(ex->args, 0));
    if (neg && neg->kind == WEIR_AST_UNARY && neg->op == WEIR_OP_NEG) {
      *arg = neg->a;
      return TRUE;
    }
  }
  return FALSE;
}

/* e = 1 / (1 + exp(-arg)): *arg. */
static gboolean sigmoid_of(const Names *nm, const WeirAst *e,
                           const WeirAst **arg) {
  return binary(nm, &e, WEIR_OP_DIV) && literal_is(nm, e->a, 1.0) &&
         one_plus_exp_neg(nm, e->b, arg);
}

/* e = min(max(inner, lo), hi), max(min(inner, hi), lo), max(inner, lo) or
 * min(inner, hi), literal bounds on either side of each call. */
static gboolean clip_of(const Names *nm, const WeirAst *e, double *lo,
                        double *hi, const WeirAst **inner) {
  /* c: the call, its names resolved */
  const WeirAst *c = e;
  gboolean mx = call2(nm, &c, WEIR_FUNC_MAX);
  if (!mx) {
    c = e;
    if (!call2(nm, &c, WEIR_FUNC_MIN))
      return FALSE;
  }
  double v;
  const WeirAst *rest;
  if (literal(nm, g_ptr_array_index(c->args, 1), &v))
    rest = g_ptr_array_index(c->args, 0);
  else if (literal(nm, g_ptr_array_index(c->args, 0), &v))
    rest = g_ptr_array_index(c->args, 1);
  else
    return FALSE;
  if (mx)
    *lo = MAX(*lo, v);
  else
    *hi = MIN(*hi, v);
  /* one more bound of the other kind inside */
  const WeirAst *d = rest;
  if (call2(nm, &d, mx ? WEIR_FUNC_MIN : WEIR_FUNC_MAX)) {
    double u;
    const WeirAst *in2;
    if (literal(nm, g_ptr_array_index(d->args, 1), &u))
      in2 = g_ptr_array_index(d->args, 0);
    else if (literal(nm, g_ptr_array_index(d->args, 0), &u))
      in2 = g_ptr_array_index(d->args, 1);
    else
      in2 = NULL;
    if (in2) {
      if (mx)
        *hi = MIN(*hi, u);
      else
        *lo = MAX(*lo, u);
      rest = in2;
    }
  }
  *inner = rest;
  return TRUE;
}

/* e = p / 6, or p times 1/6 (as the f32 literal 0.1666666716 of ONNX's
 * HardSigmoid) on either side. */
static gboolean sixth_of(const Names *nm, const WeirAst *e, const WeirAst *p) {
  const WeirAst *d = e;
  if (binary(nm, &d, WEIR_OP_DIV))
    return literal_is(nm, d->b, 6.0) && same(nm, d->a, p);
  d = e;
  if (!binary(nm, &d, WEIR_OP_MUL))
    return FALSE;
  for (int side = 0; side < 2; side++) {
    double v;
    if (literal(nm, side ? d->a : d->b, &v) && fabs(v - 1.0 / 6.0) < 1e-7 &&
        same(nm, side ? d->b : d->a, p))
      return TRUE;
  }
  return FALSE;
}

/* e = p * max(0, min(1, q / 6 + 0.5)) with p and q the same value (the
 * HardSwish of ir/lower/expand/elementwise.c), either order. */
static gboolean hardswish_of(const Names *nm, const WeirAst *e,
                             const WeirAst **inner) {
  if (!binary(nm, &e, WEIR_OP_MUL))
    return FALSE;
  for (int side = 0; side < 2; side++) {
    const WeirAst *p = side ? e->b : e->a, *g = side ? e->a : e->b;
    double lo = -G_MAXDOUBLE, hi = G_MAXDOUBLE;
    const WeirAst *t;
    if (!clip_of(nm, g, &lo, &hi, &t) || lo != 0.0 || hi != 1.0)
      continue;
    if (!binary(nm, &t, WEIR_OP_ADD) || !literal_is(nm, t->b, 0.5))
      continue;
    if (!sixth_of(nm, t->a, p))
      continue;
    *inner = p;
    return TRUE;
  }
  return FALSE;
}

/* Whether v is want within a relative 1e-6 (an f32 constant of the
 * exporter: sqrt(2) as 1.4142135). */
static gboolean near(double v, double want) {
  return fabs(v - want) <= 1e-6 * fabs(want);
}

/* The factors of a product (names resolved, MUL flattened, p / c read as
 * p times 1 / c for a literal c): *lit the product of the literal ones,
 * the others appended to f (at most 4). */
static gboolean factors(const Names *nm, const WeirAst *e, double *lit,
                        const WeirAst **f, guint *nf) {
  double v;
  if (literal(nm, e, &v)) {
    *lit *= v;
    return TRUE;
  }
  const WeirAst *m = e;
  if (binary(nm, &m, WEIR_OP_MUL))
    return factors(nm, m->a, lit, f, nf) && factors(nm, m->b, lit, f, nf);
  m = e;
  if (binary(nm, &m, WEIR_OP_DIV) && literal(nm, m->b, &v) && v != 0.0) {
    *lit /= v;
    return factors(nm, m->a, lit, f, nf);
  }
  if (*nf >= 4)
    return FALSE;
  f[(*nf)++] = e;
  return TRUE;
}

/* e = t * 0.5 * (1 + erf(t / sqrt(2))) in any order and association (the
 * division also as a product by 1 / sqrt(2); the constants may be scalar
 * constant inputs): *t. */
static gboolean gelu_of(const Names *nm, const WeirAst *e, const WeirAst **t) {
  double lit = 1.0;
  const WeirAst *f[4];
  guint nf = 0;
  if (!factors(nm, e, &lit, f, &nf) || nf != 2 || !near(lit, 0.5))
    return FALSE;
  for (int side = 0; side < 2; side++) {
    const WeirAst *x = f[side], *g = f[1 - side];
    if (!binary(nm, &g, WEIR_OP_ADD))
      continue;
    for (int o = 0; o < 2; o++) {
      const WeirAst *er = resolve(nm, o ? g->a : g->b);
      if (!literal_is(nm, o ? g->b : g->a, 1.0) || !er ||
          er->kind != WEIR_AST_CALL || er->func != WEIR_FUNC_ERF ||
          er->args->len != 1)
        continue;
      double l2 = 1.0;
      const WeirAst *u[4];
      guint nu = 0;
      if (factors(nm, g_ptr_array_index(er->args, 0), &l2, u, &nu) && nu == 1 &&
          near(l2, G_SQRT2 / 2) && same(nm, u[0], x)) {
        *t = x;
        return TRUE;
      }
    }
  }
  return FALSE;
}

/* e = X or X times a literal (X * c, c * X, X / c): *scale the literal. */
static gboolean scaled_x(const Names *nm, const WeirAst *e, double *scale) {
  if (leaf(nm, e) == -1) {
    *scale = 1.0;
    return TRUE;
  }
  double lit = 1.0;
  const WeirAst *f[4];
  guint nf = 0;
  if (!factors(nm, e, &lit, f, &nf) || nf != 1 || leaf(nm, f[0]) != -1 ||
      !isfinite(lit))
    return FALSE;
  *scale = lit;
  return TRUE;
}

/* The terms of a sum: one scaled X and at most two extra inputs (k->scale,
 * k->residual, k->colbias). */
static gboolean sum_terms(const Names *nm, const WeirAst *e, gboolean *has_x,
                          WeirEpilogueKind *k) {
  const WeirAst *a = e;
  if (binary(nm, &a, WEIR_OP_ADD))
    return sum_terms(nm, a->a, has_x, k) && sum_terms(nm, a->b, has_x, k);
  int l = leaf(nm, e);
  if (l >= 0) {
    if (k->residual < 0)
      k->residual = l;
    else if (k->colbias < 0 && l != k->residual)
      k->colbias = l;
    else
      return FALSE;
    return TRUE;
  }
  if (*has_x || !scaled_x(nm, e, &k->scale))
    return FALSE;
  *has_x = TRUE;
  return TRUE;
}

static gboolean classify(const WeirNode *n, const double *vals,
                         const gboolean *known, WeirEpilogueKind *out) {
  const WeirAttr *code = weir_node_attr(n, WEIR_EPILOGUE_CODE);
  const WeirAttr *conns = weir_node_attr(n, WEIR_EPILOGUE_CONNS);
  if (!code || code->type != WEIR_ATTR_STRING || !code->s || !conns ||
      conns->type != WEIR_ATTR_STRINGS || conns->strings->len < 2)
    return FALSE;
  g_autoptr(WeirCode) wc = weir_code_parse(code->s, NULL);
  if (!wc)
    return FALSE;
  g_autoptr(GHashTable) locals = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) extras = g_ptr_array_new();
  for (guint k = 2; k < conns->strings->len; k++)
    g_ptr_array_add(extras, g_ptr_array_index(conns->strings, k));
  Names nm = {.locals = locals,
              .x = g_ptr_array_index(conns->strings, 1),
              .extras = extras,
              .vals = vals,
              .known = known};
  for (guint i = 0; i < wc->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(wc->stmts, i);
    double v;
    /* plain assignments, each name once, never to an input */
    if (st->target->kind != WEIR_AST_NAME ||
        g_hash_table_contains(locals, st->target->name) ||
        leaf(&nm, st->target) != -2 || known_extra(&nm, st->target, &v))
      return FALSE;
    g_hash_table_insert(locals, st->target->name, st->value);
  }
  const WeirAst *y =
      g_hash_table_lookup(locals, g_ptr_array_index(conns->strings, 0));
  if (!y)
    return FALSE;
  WeirEpilogueKind k = {
      .act = 0, .lo = 0, .hi = 0, .residual = -1, .colbias = -1, .scale = 1.0};
  const WeirAst *inner = y, *a;
  double lo = -G_MAXDOUBLE, hi = G_MAXDOUBLE;
  const WeirAst *m = y;
  if (sigmoid_of(&nm, y, &a)) {
    k.act = 2;
    inner = a;
  } else if (hardswish_of(&nm, y, &a)) {
    k.act = 4;
    inner = a;
  } else if (binary(&nm, &m, WEIR_OP_MUL) &&
             ((sigmoid_of(&nm, m->b, &a) && same(&nm, a, m->a)) ||
              (sigmoid_of(&nm, m->a, &a) && same(&nm, a, m->b)))) {
    k.act = 3; /* x * sigmoid(x) */
    inner = a;
  } else if ((m = y, binary(&nm, &m, WEIR_OP_DIV)) &&
             one_plus_exp_neg(&nm, m->b, &a) && same(&nm, a, m->a)) {
    k.act = 3; /* x / (1 + exp(-x)) */
    inner = a;
  } else if (gelu_of(&nm, y, &a)) {
    k.act = 5;
    inner = a;
  } else if (clip_of(&nm, y, &lo, &hi, &a)) {
    /* a clip of a clip (ReLU then ReLU6) is one clip */
    while (clip_of(&nm, a, &lo, &hi, &a))
      ;
    if (lo > hi)
      return FALSE; /* disjoint bounds: not one clip */
    k.act = 1;
    k.lo = lo;
    k.hi = hi;
    inner = a;
  }
  /* what the activation applies to: X (times a literal), plus at most two
   * extra inputs */
  gboolean has_x = FALSE;
  if (!sum_terms(&nm, inner, &has_x, &k) || !has_x)
    return FALSE;
  *out = k;
  return TRUE;
}

gboolean weir_kernel_epilogue_classify(const WeirNode *n,
                                       WeirEpilogueKind *out) {
  return classify(n, NULL, NULL, out);
}

/* ------------------------------------------------------ extra inputs */

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

/* The container on connector epi<k> of n, or NULL. */
static const WeirContainer *epi_port(const WeirGraph *g, const WeirState *s,
                                     const WeirNode *n, int k) {
  char conn[24];
  g_snprintf(conn, sizeof conn, "epi%d", k);
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->data && m->dst == n->id && g_strcmp0(m->dst_conn, conn) == 0)
      return weir_graph_container(g, m->data);
  }
  return NULL;
}

/* Whether c has y's shape, f32, stored row-major. */
static gboolean like_output(const WeirContainer *c, const WeirContainer *y) {
  if (!c || c->dtype != WEIR_DTYPE_F32 || c->shape->len != y->shape->len)
    return FALSE;
  g_autoptr(WeirExpr) acc = weir_expr_const(1);
  for (guint d = c->shape->len; d-- > 0;) {
    if (!weir_expr_equal(dim(c, d), dim(y, d)) ||
        !weir_expr_equal(g_ptr_array_index(c->strides, d), acc))
      return FALSE;
    WeirExpr *next = weir_expr_mul(acc, dim(c, d));
    weir_expr_unref(acc);
    acc = next;
  }
  return TRUE;
}

/* Whether c is one row of y broadcast over y's other dimensions: f32,
 * rank <= y's, every dimension 1 but the last, which is y's last (a linear
 * layer's bias), stored contiguously. */
static gboolean row_of_output(const WeirContainer *c, const WeirContainer *y) {
  guint r = c ? c->shape->len : 0;
  if (!c || c->dtype != WEIR_DTYPE_F32 || r == 0 || r > y->shape->len ||
      !weir_expr_equal(dim(c, r - 1), dim(y, y->shape->len - 1)))
    return FALSE;
  gint64 v;
  for (guint d = 0; d + 1 < r; d++)
    if (!weir_expr_is_const(dim(c, d), &v) || v != 1)
      return FALSE;
  return weir_expr_is_const(g_ptr_array_index(c->strides, r - 1), &v) && v == 1;
}

/* The value of c when it is a scalar constant: transient, one element of
 * f32 or f64, with initial data. */
static gboolean scalar_constant(const WeirContainer *c, double *v) {
  if (!c || !c->transient || !c->initial ||
      (c->dtype != WEIR_DTYPE_F32 && c->dtype != WEIR_DTYPE_F64))
    return FALSE;
  gint64 e;
  for (guint d = 0; d < c->shape->len; d++)
    if (!weir_expr_is_const(dim(c, d), &e) || e != 1)
      return FALSE;
  gsize size;
  const guint8 *p = g_bytes_get_data(c->initial, &size);
  if (c->dtype == WEIR_DTYPE_F32 && size == sizeof(float)) {
    float f;
    memcpy(&f, p, sizeof f);
    *v = f;
    return TRUE;
  }
  if (c->dtype == WEIR_DTYPE_F64 && size == sizeof(double)) {
    memcpy(v, p, sizeof *v);
    return TRUE;
  }
  return FALSE;
}

gboolean weir_kernel_epilogue_of(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n, WeirEpilogueKind *k) {
  const WeirAttr *conns = weir_node_attr(n, WEIR_EPILOGUE_CONNS);
  if (!weir_epilogue_present(n) || !conns || conns->type != WEIR_ATTR_STRINGS ||
      conns->strings->len < 2)
    return FALSE;
  /* scalar constant extra inputs read as literals */
  guint ne = conns->strings->len - 2;
  g_autofree double *vals = g_new0(double, ne + 1);
  g_autofree gboolean *known = g_new0(gboolean, ne + 1);
  for (guint i = 0; i < ne; i++)
    known[i] = scalar_constant(epi_port(g, s, n, (int)i), &vals[i]);
  if (!classify(n, vals, known, k))
    return FALSE;
  k->per_column = FALSE;
  /* Gemm's and MatMul's GEMM store takes a residual row stride of 0 (not
   * for a MatMul by a vector, whose GEMM has one column), a second extra
   * input as that row and a scale */
  const WeirContainer *b = weir_native_port(g, s, n, TRUE, 1);
  gboolean gemm =
      n->op && (strcmp(n->op, "Gemm") == 0 ||
                (strcmp(n->op, "MatMul") == 0 && b && b->shape->len >= 2));
  if (k->scale != 1.0 && !gemm)
    return FALSE;
  if (k->residual < 0)
    return TRUE;
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  const WeirContainer *r = epi_port(g, s, n, k->residual);
  if (!y)
    return FALSE;
  if (k->colbias >= 0) {
    const WeirContainer *c = epi_port(g, s, n, k->colbias);
    if (gemm && like_output(c, y) && row_of_output(r, y)) {
      int t = k->residual;
      k->residual = k->colbias;
      k->colbias = t;
      return TRUE;
    }
    return gemm && like_output(r, y) && row_of_output(c, y);
  }
  if (like_output(r, y))
    return TRUE;
  k->per_column = gemm && row_of_output(r, y);
  return k->per_column;
}

gboolean weir_kernel_takes_epilogue(const WeirGraph *g, const WeirState *s,
                                    const WeirNode *n) {
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  WeirEpilogueKind k;
  return y && y->dtype == WEIR_DTYPE_F32 &&
         weir_kernel_epilogue_of(g, s, n, &k);
}

/* A bound of the clip as C text (infinite when the code has none). */
static char *bound_c(double v) {
  if (v <= -G_MAXDOUBLE)
    return g_strdup("-__builtin_inff()");
  if (v >= G_MAXDOUBLE)
    return g_strdup("__builtin_inff()");
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.9g", v);
  return g_strdup_printf("%s%sf", buf, strpbrk(buf, ".eEn") ? "" : ".0");
}

/* ------------------------------------------------------------ emitting */

gboolean weir_kernel_epilogue_use(WeirNativeEmit *e, const char *kernel,
                                  WeirEpilogueKind *k, const char **r,
                                  char **lo, char **hi, GError **error) {
  *k = (WeirEpilogueKind){.act = 0,
                          .residual = -1,
                          .per_column = FALSE,
                          .colbias = -1,
                          .scale = 1.0};
  *r = "NULL";
  if (weir_epilogue_present(e->n) &&
      !weir_kernel_epilogue_of(e->g, e->s, e->n, k)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "node %u ('%s'): %s does not apply this epilogue (split it "
                "off first)",
                e->n->id, e->n->label ? e->n->label : "", kernel);
    return FALSE;
  }
  if (k->residual >= 0) {
    *r = e->epi[k->residual].ptr;
    if (!*r) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "node %u ('%s'): epilogue input epi%d has no container",
                  e->n->id, e->n->label ? e->n->label : "", k->residual);
      return FALSE;
    }
  }
  *lo = bound_c(k->act == 1 ? k->lo : 0.0);
  *hi = bound_c(k->act == 1 ? k->hi : 0.0);
  return TRUE;
}

const char *weir_kernel_epilogue_what(const WeirEpilogueKind *k) {
  static const char *const act[] = {"",        " + clip",      " + sigmoid",
                                    " + SiLU", " + HardSwish", " + GELU"};
  char buf[96];
  g_snprintf(buf, sizeof buf, "%s%s%s%s", k->scale != 1.0 ? " + scale" : "",
             k->colbias >= 0   ? " + column bias + residual"
             : k->residual < 0 ? ""
             : k->per_column   ? " + column bias"
                               : " + residual",
             "", act[CLAMP(k->act, 0, 5)]);
  /* a handful of distinct strings, kept for the process */
  return g_intern_string(buf);
}
