/* norm.c — Weir's row kernels for Softmax, LogSoftmax and
 * LayerNormalization (implementation "weir" of the three, docs/native.md):
 * the helpers weir_softmax_<dtype> and weir_layernorm_<dtype> as C text,
 * their operand checks and their registration.
 *
 * The pure expansions (ir/lower/expand/reduce.c) are one map per step,
 * each a pass over the whole tensor: softmax's max, exp-and-sum and
 * normalize; layer normalization's sum, centered squares, statistics and
 * normalize.  The kernels take one row at a time (the reduced axes, which
 * must be the innermost ones, so a row is contiguous) and make the same
 * steps on that row while it is in the L1 cache; the rows are split over
 * the threads.
 *
 * Conventions of this file:
 *  - f32 is vectorized with the activation helpers of the ISA's width
 *    (weir_act_v<VL>, core/kernels/epilogue.c): their select, load and
 *    polynomial exp.  The partial vector at the end of a row is loaded
 *    into a vector filled with a neutral value (-inf for the maximum and
 *    the exponentials, the mean for the squares), so every element goes
 *    through the same arithmetic.  f64 is plain C with libm's exp, in the
 *    order of the pure expansion.
 *  - The f32 text is a template: "@VL@" the lanes, "@TGT@" the target
 *    attribute of the ISA, "@ISA@" its name.  Helpers (printed once per
 *    unit, in name order, so each after those it calls): weir_act_v<VL>
 *    (epilogue.c), weir_lanes_v<VL> (small inline vector helpers: a
 *    partial load, a NaN-propagating maximum, horizontal maximum and sum,
 *    exp flushed to 0), then weir_layernorm_<dtype> and
 *    weir_softmax_<dtype>, each a function of its own so that a unit
 *    defines only what it calls.
 *  - Numerics: the maximum propagates NaN (as the expansion's max); an
 *    exponent below -87 gives 0 (e^-87 is at the bottom of the normal
 *    floats, and masked positions of -inf give exactly 0); the sums are
 *    kept in partial sums per lane (another order than the expansion's:
 *    the results agree to rounding); softmax multiplies by 1 / z where
 *    the expansion divides by z.
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-expr.h"
#include "weir-hw.h"
#include "weir-kernels.h"

/* ------------------------------------------------------------ the text */

static const char lanes_f32[] =
    "/* Vector helpers of Weir's softmax and layer normalization "
    "(docs/native.md,\n"
    " * implementation \"weir\" of Softmax, LogSoftmax and "
    "LayerNormalization)\n"
    " * for @ISA@: those take one row (the innermost, reduced axes) at a "
    "time,\n"
    " * while it is in the cache, the rows split over the threads. */\n"
    "/* the first r (< @VL@) elements of p, the other lanes `fill` */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_lanes_part@VL@(const float *p, int64_t r, float fill) {\n"
    "  weir_act_v@VL@ v = weir_act_set@VL@(fill);\n"
    "  memcpy(&v, p, (size_t)r * sizeof(float));\n"
    "  return v;\n"
    "}\n"
    "/* the larger of a and b lane by lane, NaN when either is NaN */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_lanes_max@VL@(weir_act_v@VL@ a, weir_act_v@VL@ b) {\n"
    "  return weir_act_sel@VL@((b > a) | (b != b), b, a);\n"
    "}\n"
    "static inline __attribute__((always_inline)) @TGT@ float\n"
    "weir_lanes_hmax@VL@(weir_act_v@VL@ v) {\n"
    "  float l[@VL@];\n"
    "  memcpy(l, &v, sizeof v);\n"
    "  float m = l[0];\n"
    "  for (int i = 1; i < @VL@; i++)\n"
    "    m = l[i] > m || l[i] != l[i] ? l[i] : m;\n"
    "  return m;\n"
    "}\n"
    "/* the lanes added pairwise */\n"
    "static inline __attribute__((always_inline)) @TGT@ float\n"
    "weir_lanes_hsum@VL@(weir_act_v@VL@ v) {\n"
    "  float l[@VL@];\n"
    "  memcpy(l, &v, sizeof v);\n"
    "  for (int w = @VL@ / 2; w >= 1; w /= 2)\n"
    "    for (int i = 0; i < w; i++)\n"
    "      l[i] += l[i + w];\n"
    "  return l[0];\n"
    "}\n"
    "/* exp(d), 0 for d < -87 (-inf included), NaN for NaN */\n"
    "static inline __attribute__((always_inline)) @TGT@ weir_act_v@VL@\n"
    "weir_lanes_exp@VL@(weir_act_v@VL@ d) {\n"
    "  return weir_act_sel@VL@(d < weir_act_set@VL@(-87.0f),\n"
    "                         weir_act_set@VL@(0.0f), weir_act_exp@VL@(d));\n"
    "}\n";

static const char softmax_f32[] =
    "/* Weir's softmax (docs/native.md, implementation \"weir\" of Softmax "
    "and\n"
    " * LogSoftmax) for @ISA@. */\n"
    "/* Softmax (log_softmax 0) or LogSoftmax (1) of each of the `rows` rows "
    "of n\n"
    " * elements of x into y: m = max(row), z = sum(exp(row - m)); softmax\n"
    " * y = exp(x - m) * (1 / z) (the exponentials written into y by the "
    "second\n"
    " * pass, scaled by the third), LogSoftmax y = x - m - log(z).  y may be "
    "x. */\n"
    "static @TGT@ void weir_softmax_f32(const float *x, float *y, int64_t "
    "rows,\n"
    "                                 int64_t n, int log_softmax) {\n"
    "  const int64_t nb = n - n % @VL@, rem = n % @VL@;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (rows > 1 && rows * n >= "
    "16384)\n"
    "#endif\n"
    "  for (int64_t r = 0; r < rows; r++) {\n"
    "    const float *xr = x + r * n;\n"
    "    float *yr = y + r * n;\n"
    "    weir_act_v@VL@ m0 = weir_act_set@VL@(-INFINITY), m1 = m0;\n"
    "    int64_t i = 0;\n"
    "    for (; i + 2 * @VL@ <= nb; i += 2 * @VL@) {\n"
    "      m0 = weir_lanes_max@VL@(m0, weir_act_load@VL@(xr + i));\n"
    "      m1 = weir_lanes_max@VL@(m1, weir_act_load@VL@(xr + i + @VL@));\n"
    "    }\n"
    "    for (; i < nb; i += @VL@)\n"
    "      m0 = weir_lanes_max@VL@(m0, weir_act_load@VL@(xr + i));\n"
    "    if (rem)\n"
    "      m1 = weir_lanes_max@VL@(m1, weir_lanes_part@VL@(xr + nb, rem, "
    "-INFINITY));\n"
    "    const float m = weir_lanes_hmax@VL@(weir_lanes_max@VL@(m0, m1));\n"
    "    const weir_act_v@VL@ mv = weir_act_set@VL@(m);\n"
    "    weir_act_v@VL@ s0 = weir_act_set@VL@(0.0f), s1 = s0;\n"
    "    for (i = 0; i + 2 * @VL@ <= nb; i += 2 * @VL@) {\n"
    "      const weir_act_v@VL@ e0 = weir_lanes_exp@VL@(weir_act_load@VL@(xr + "
    "i) - mv);\n"
    "      const weir_act_v@VL@ e1 =\n"
    "          weir_lanes_exp@VL@(weir_act_load@VL@(xr + i + @VL@) - mv);\n"
    "      if (!log_softmax) {\n"
    "        memcpy(yr + i, &e0, sizeof e0);\n"
    "        memcpy(yr + i + @VL@, &e1, sizeof e1);\n"
    "      }\n"
    "      s0 += e0;\n"
    "      s1 += e1;\n"
    "    }\n"
    "    for (; i < nb; i += @VL@) {\n"
    "      const weir_act_v@VL@ e0 = weir_lanes_exp@VL@(weir_act_load@VL@(xr + "
    "i) - mv);\n"
    "      if (!log_softmax)\n"
    "        memcpy(yr + i, &e0, sizeof e0);\n"
    "      s0 += e0;\n"
    "    }\n"
    "    if (rem) {\n"
    "      /* the padding lanes: exp(-inf - m) = 0 (NaN only when the row's\n"
    "       * result is NaN anyway) */\n"
    "      const weir_act_v@VL@ e1 =\n"
    "          weir_lanes_exp@VL@(weir_lanes_part@VL@(xr + nb, rem, -INFINITY) "
    "- mv);\n"
    "      if (!log_softmax)\n"
    "        memcpy(yr + nb, &e1, (size_t)rem * sizeof(float));\n"
    "      s1 += e1;\n"
    "    }\n"
    "    const float z = weir_lanes_hsum@VL@(s0 + s1);\n"
    "    if (log_softmax) {\n"
    "      const weir_act_v@VL@ lz = weir_act_set@VL@(logf(z));\n"
    "      for (i = 0; i < nb; i += @VL@) {\n"
    "        const weir_act_v@VL@ v = weir_act_load@VL@(xr + i) - mv - lz;\n"
    "        memcpy(yr + i, &v, sizeof v);\n"
    "      }\n"
    "      if (rem) {\n"
    "        const weir_act_v@VL@ v =\n"
    "            weir_lanes_part@VL@(xr + nb, rem, 0.0f) - mv - lz;\n"
    "        memcpy(yr + nb, &v, (size_t)rem * sizeof(float));\n"
    "      }\n"
    "    } else {\n"
    "      const weir_act_v@VL@ iz = weir_act_set@VL@(1.0f / z);\n"
    "      for (i = 0; i < nb; i += @VL@) {\n"
    "        const weir_act_v@VL@ v = weir_act_load@VL@(yr + i) * iz;\n"
    "        memcpy(yr + i, &v, sizeof v);\n"
    "      }\n"
    "      if (rem) {\n"
    "        const weir_act_v@VL@ v = weir_lanes_part@VL@(yr + nb, rem, 0.0f) "
    "* iz;\n"
    "        memcpy(yr + nb, &v, (size_t)rem * sizeof(float));\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

static const char layernorm_f32[] =
    "/* Weir's layer normalization (docs/native.md, implementation \"weir\" "
    "of\n"
    " * LayerNormalization) for @ISA@. */\n"
    "/* LayerNormalization of each of the `rows` rows of n elements of x into "
    "y:\n"
    " * mu = sum(row) / n, v = sum((row - mu)^2) / n, is = 1 / sqrt(v + "
    "eps),\n"
    " * y = (x - mu) * is * scale + bias (scale and bias: n elements, bias "
    "may\n"
    " * be NULL); mu and is also into mean[r] and inv[r] when they are not "
    "NULL.\n"
    " * y may be x. */\n"
    "static @TGT@ void weir_layernorm_f32(const float *x, const float *scale,\n"
    "                                   const float *bias, float *y, float "
    "*mean,\n"
    "                                   float *inv, int64_t rows, int64_t n,\n"
    "                                   float eps) {\n"
    "  const int64_t nb = n - n % @VL@, rem = n % @VL@;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (rows > 1 && rows * n >= "
    "16384)\n"
    "#endif\n"
    "  for (int64_t r = 0; r < rows; r++) {\n"
    "    const float *xr = x + r * n;\n"
    "    float *yr = y + r * n;\n"
    "    weir_act_v@VL@ s0 = weir_act_set@VL@(0.0f), s1 = s0;\n"
    "    int64_t i = 0;\n"
    "    for (; i + 2 * @VL@ <= nb; i += 2 * @VL@) {\n"
    "      s0 += weir_act_load@VL@(xr + i);\n"
    "      s1 += weir_act_load@VL@(xr + i + @VL@);\n"
    "    }\n"
    "    for (; i < nb; i += @VL@)\n"
    "      s0 += weir_act_load@VL@(xr + i);\n"
    "    if (rem)\n"
    "      s1 += weir_lanes_part@VL@(xr + nb, rem, 0.0f);\n"
    "    const float mu = weir_lanes_hsum@VL@(s0 + s1) / (float)n;\n"
    "    const weir_act_v@VL@ mv = weir_act_set@VL@(mu);\n"
    "    weir_act_v@VL@ q0 = weir_act_set@VL@(0.0f), q1 = q0;\n"
    "    for (i = 0; i + 2 * @VL@ <= nb; i += 2 * @VL@) {\n"
    "      const weir_act_v@VL@ d0 = weir_act_load@VL@(xr + i) - mv;\n"
    "      const weir_act_v@VL@ d1 = weir_act_load@VL@(xr + i + @VL@) - mv;\n"
    "      q0 += d0 * d0;\n"
    "      q1 += d1 * d1;\n"
    "    }\n"
    "    for (; i < nb; i += @VL@) {\n"
    "      const weir_act_v@VL@ d0 = weir_act_load@VL@(xr + i) - mv;\n"
    "      q0 += d0 * d0;\n"
    "    }\n"
    "    if (rem) { /* padded with mu: those lanes add 0 */\n"
    "      const weir_act_v@VL@ d1 = weir_lanes_part@VL@(xr + nb, rem, mu) - "
    "mv;\n"
    "      q1 += d1 * d1;\n"
    "    }\n"
    "    const float is =\n"
    "        1.0f / sqrtf(weir_lanes_hsum@VL@(q0 + q1) / (float)n + eps);\n"
    "    if (mean)\n"
    "      mean[r] = mu;\n"
    "    if (inv)\n"
    "      inv[r] = is;\n"
    "    const weir_act_v@VL@ iv = weir_act_set@VL@(is);\n"
    "    for (i = 0; i < nb; i += @VL@) {\n"
    "      weir_act_v@VL@ v =\n"
    "          (weir_act_load@VL@(xr + i) - mv) * iv * "
    "weir_act_load@VL@(scale + i);\n"
    "      if (bias)\n"
    "        v += weir_act_load@VL@(bias + i);\n"
    "      memcpy(yr + i, &v, sizeof v);\n"
    "    }\n"
    "    if (rem) {\n"
    "      weir_act_v@VL@ v = (weir_lanes_part@VL@(xr + nb, rem, 0.0f) - mv) * "
    "iv *\n"
    "                         weir_lanes_part@VL@(scale + nb, rem, 0.0f);\n"
    "      if (bias)\n"
    "        v += weir_lanes_part@VL@(bias + nb, rem, 0.0f);\n"
    "      memcpy(yr + nb, &v, (size_t)rem * sizeof(float));\n"
    "    }\n"
    "  }\n"
    "}\n";

/* f64: the steps of the pure expansion in its order, one row at a time. */
static const char softmax_f64[] =
    "/* Weir's softmax in f64 (docs/native.md, implementation \"weir\" of\n"
    " * Softmax and LogSoftmax): the steps of the pure expansion in its "
    "order,\n"
    " * one row (the innermost, reduced axes) at a time, the rows split over "
    "the\n"
    " * threads. */\n"
    "static void weir_softmax_f64(const double *x, double *y, int64_t rows,\n"
    "                             int64_t n, int log_softmax) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (rows > 1 && rows * n >= "
    "16384)\n"
    "#endif\n"
    "  for (int64_t r = 0; r < rows; r++) {\n"
    "    const double *xr = x + r * n;\n"
    "    double *yr = y + r * n;\n"
    "    double m = -INFINITY, z = 0;\n"
    "    for (int64_t i = 0; i < n; i++)\n"
    "      m = xr[i] > m || xr[i] != xr[i] ? xr[i] : m;\n"
    "    for (int64_t i = 0; i < n; i++) {\n"
    "      const double e = exp(xr[i] - m);\n"
    "      if (!log_softmax)\n"
    "        yr[i] = e;\n"
    "      z += e;\n"
    "    }\n"
    "    if (log_softmax) {\n"
    "      const double lz = log(z);\n"
    "      for (int64_t i = 0; i < n; i++)\n"
    "        yr[i] = xr[i] - m - lz;\n"
    "    } else {\n"
    "      for (int64_t i = 0; i < n; i++)\n"
    "        yr[i] = yr[i] / z;\n"
    "    }\n"
    "  }\n"
    "}\n";

static const char layernorm_f64[] =
    "/* Weir's layer normalization in f64 (docs/native.md, implementation\n"
    " * \"weir\" of LayerNormalization): the steps of the pure expansion in "
    "its\n"
    " * order, one row at a time, the rows split over the threads. */\n"
    "static void weir_layernorm_f64(const double *x, const double *scale,\n"
    "                               const double *bias, double *y, double "
    "*mean,\n"
    "                               double *inv, int64_t rows, int64_t n,\n"
    "                               double eps) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) if (rows > 1 && rows * n >= "
    "16384)\n"
    "#endif\n"
    "  for (int64_t r = 0; r < rows; r++) {\n"
    "    const double *xr = x + r * n;\n"
    "    double *yr = y + r * n;\n"
    "    double a = 0, b = 0;\n"
    "    for (int64_t i = 0; i < n; i++)\n"
    "      a += xr[i];\n"
    "    const double mu = a / (double)n;\n"
    "    for (int64_t i = 0; i < n; i++) {\n"
    "      const double d = xr[i] - mu;\n"
    "      b += d * d;\n"
    "    }\n"
    "    const double is = 1 / sqrt(b / (double)n + eps);\n"
    "    if (mean)\n"
    "      mean[r] = mu;\n"
    "    if (inv)\n"
    "      inv[r] = is;\n"
    "    for (int64_t i = 0; i < n; i++)\n"
    "      yr[i] = (xr[i] - mu) * is * scale[i] + (bias ? bias[i] : 0);\n"
    "  }\n"
    "}\n";

/* The vector width of the f32 helpers for this machine ($WEIR_ISA
 * honoured): as the depthwise kernel's. */
static void norm_params(WeirHwIsa *isa, guint *vl) {
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  WeirDepthwiseParams p;
  weir_kernel_depthwise_params(hw, &p);
  *isa = p.isa;
  *vl = p.vl;
}

/* The text of an f32 template for isa and vl lanes. (transfer full) */
static char *f32_text(const char *tmpl, WeirHwIsa isa, guint vl) {
  GString *s = g_string_new(tmpl);
  char buf[16];
  g_string_replace(s, "@TGT@", weir_kernel_isa_target(isa), 0);
  g_string_replace(s, "@ISA@", weir_hw_isa_name(isa), 0);
  g_snprintf(buf, sizeof buf, "%u", vl);
  g_string_replace(s, "@VL@", buf, 0);
  return g_string_free(s, FALSE);
}

/* Records the helper `what` ("softmax" or "layernorm") for dtype t (f32 or
 * f64) and those it uses; returns the dtype's suffix. */
static const char *norm_record(WeirNativeEmit *e, const char *what,
                               WeirDType t) {
  gboolean sm = strcmp(what, "softmax") == 0;
  g_autofree char *name =
      g_strdup_printf("weir_%s_%s", what, t == WEIR_DTYPE_F64 ? "f64" : "f32");
  if (t == WEIR_DTYPE_F64) {
    e->helper(e, name, sm ? softmax_f64 : layernorm_f64);
    return "f64";
  }
  WeirHwIsa isa;
  guint vl;
  norm_params(&isa, &vl);
  weir_kernel_act_record(e, isa, vl, WEIR_DTYPE_F32);
  g_autofree char *lanes_name = g_strdup_printf("weir_lanes_v%u", vl);
  g_autofree char *lanes = f32_text(lanes_f32, isa, vl);
  e->helper(e, lanes_name, lanes);
  g_autofree char *text = f32_text(sm ? softmax_f32 : layernorm_f32, isa, vl);
  e->helper(e, name, text);
  return "f32";
}

/* ------------------------------------------------------------- operands */

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

static gboolean is_one(const WeirExpr *e) {
  gint64 v;
  return weir_expr_is_const(e, &v) && v == 1;
}

/* The product of c's dimensions [from, to). (transfer full) */
static WeirExpr *dims_product(const WeirContainer *c, guint from, guint to) {
  WeirExpr *p = weir_expr_const(1);
  for (guint d = from; d < to; d++) {
    WeirExpr *next = weir_expr_mul(p, dim(c, d));
    weir_expr_unref(p);
    p = next;
  }
  return p;
}

/* Whether c is an f32 or f64 tensor of dtype t stored row-major; *reason
 * otherwise. */
static gboolean check_tensor(const WeirContainer *c, WeirDType t,
                             char **reason) {
  if (c->dtype != WEIR_DTYPE_F32 && c->dtype != WEIR_DTYPE_F64) {
    *reason = g_strdup_printf("'%s' is %s; the kernel takes f32 and f64",
                              c->name, weir_dtype_name(c->dtype));
    return FALSE;
  }
  if (c->dtype != t) {
    *reason = g_strdup_printf("'%s' is %s, the input %s", c->name,
                              weir_dtype_name(c->dtype), weir_dtype_name(t));
    return FALSE;
  }
  if (!weir_kernel_row_major(c)) {
    *reason = g_strdup_printf("'%s' is not stored row-major", c->name);
    return FALSE;
  }
  return TRUE;
}

static gboolean same_shape(const WeirContainer *a, const WeirContainer *b) {
  if (a->shape->len != b->shape->len)
    return FALSE;
  for (guint d = 0; d < a->shape->len; d++)
    if (!weir_expr_equal(dim(a, d), dim(b, d)))
      return FALSE;
  return TRUE;
}

/* n's `axis` (default -1) made non-negative against x's rank, or FALSE
 * with the reason. */
static gboolean node_axis(const WeirNode *n, const WeirContainer *x,
                          gint64 *axis, char **reason) {
  gint64 r = x->shape->len;
  gint64 a = weir_node_attr_int(n, "axis", -1);
  if (r == 0 || a < -r || a >= r) {
    *reason =
        g_strdup_printf("axis %" G_GINT64_FORMAT
                        " is out of range for '%s' of rank %" G_GINT64_FORMAT,
                        a, x->name, r);
    return FALSE;
  }
  *axis = a < 0 ? a + r : a;
  return TRUE;
}

/* The first axis of the rows: the reduced axes are [*first, rank) (a
 * single `axis` must be followed by dimensions of size 1 only, so that
 * the rows are contiguous). */
static gboolean softmax_first(const WeirNode *n, const WeirContainer *x,
                              guint *first, char **reason) {
  gint64 r = x->shape->len, axis = 0;
  if (!node_axis(n, x, &axis, reason))
    return FALSE;
  if (weir_node_attr_int(n, "legacy_2d", 0) == 0)
    for (gint64 d = axis + 1; d < r; d++)
      if (!is_one(dim(x, (guint)d))) {
        *reason = g_strdup_printf(
            "the reduced axis %" G_GINT64_FORMAT
            " is not the innermost one of '%s' (its rows are not contiguous)",
            axis, x->name);
        return FALSE;
      }
  *first = (guint)axis;
  return TRUE;
}

static gboolean softmax_accepts(const WeirGraph *g, const WeirState *s,
                                const WeirNode *n, char **reason) {
  const WeirContainer *x = weir_native_port(g, s, n, TRUE, 0);
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  if (!x || !y) {
    *reason = g_strdup("an operand is missing");
    return FALSE;
  }
  guint first;
  if (!check_tensor(x, x->dtype, reason) ||
      !check_tensor(y, x->dtype, reason) ||
      !softmax_first(n, x, &first, reason))
    return FALSE;
  if (!same_shape(x, y)) {
    *reason =
        g_strdup_printf("'%s' and '%s' differ in shape", x->name, y->name);
    return FALSE;
  }
  return TRUE;
}

/* The node's comment, with its label made safe for a C comment. */
static void emit_header(WeirNativeEmit *e, const char *what) {
  g_autofree char *l = weir_kernel_comment_label(e->n);
  g_string_append_printf(e->code, "/* %s '%s' (node %u): weir, %s */\n",
                         e->n->op, l, e->n->id, what);
}

static gboolean refuse(WeirNativeEmit *e, char *reason, GError **error) {
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
              e->n->id, e->n->label ? e->n->label : "", reason);
  g_free(reason);
  return FALSE;
}

static gboolean softmax_emit(WeirNativeEmit *e, GError **error) {
  char *reason = NULL;
  if (!softmax_accepts(e->g, e->s, e->n, &reason))
    return refuse(e, reason, error);
  const WeirContainer *x = e->in[0].c;
  guint first = 0;
  softmax_first(e->n, x, &first, &reason);
  const char *sfx = norm_record(e, "softmax", x->dtype);
  g_autoptr(WeirExpr) rows = dims_product(x, 0, first);
  g_autoptr(WeirExpr) len = dims_product(x, first, x->shape->len);
  g_autofree char *rs = e->expr_c(e, rows), *ns = e->expr_c(e, len);
  emit_header(e, "one row at a time");
  g_string_append_printf(e->code, "weir_softmax_%s(%s, %s, %s, %s, %d);\n", sfx,
                         e->in[0].ptr, e->out[0].ptr, rs, ns,
                         strcmp(e->n->op, "LogSoftmax") == 0);
  return TRUE;
}

/* Scale or B (c) of a layer normalization of x over the axes [first,
 * rank): it must hold one value per element of a row, in the row's order
 * (its dimensions, leading ones dropped, those of x's last ones, and the
 * row's other dimensions 1). */
static gboolean row_operand(const WeirContainer *x, guint first,
                            const WeirContainer *c, char **reason) {
  if (!check_tensor(c, x->dtype, reason))
    return FALSE;
  guint lead = 0;
  while (lead < c->shape->len && is_one(dim(c, lead)))
    lead++;
  guint r = c->shape->len - lead, xr = x->shape->len;
  gboolean ok = r <= xr - first;
  for (guint k = 0; ok && k < r; k++)
    ok = weir_expr_equal(dim(c, lead + k), dim(x, xr - r + k));
  for (guint d = first; ok && d < xr - r; d++)
    ok = is_one(dim(x, d));
  if (!ok)
    *reason = g_strdup_printf("'%s' does not hold one value per element of a "
                              "normalized row of '%s'",
                              c->name, x->name);
  return ok;
}

/* Mean or InvStdDev (c): one value per row, x's shape with 1 for the
 * reduced axes. */
static gboolean stat_operand(const WeirContainer *x, guint first,
                             const WeirContainer *c, char **reason) {
  if (!check_tensor(c, x->dtype, reason))
    return FALSE;
  gboolean ok = c->shape->len == x->shape->len;
  for (guint d = 0; ok && d < x->shape->len; d++)
    ok = d < first ? weir_expr_equal(dim(c, d), dim(x, d)) : is_one(dim(c, d));
  if (!ok)
    *reason = g_strdup_printf("'%s' does not hold one value per row of '%s'",
                              c->name, x->name);
  return ok;
}

static gboolean layernorm_first(const WeirNode *n, const WeirContainer *x,
                                guint *first, char **reason) {
  gint64 axis = 0;
  if (!node_axis(n, x, &axis, reason))
    return FALSE;
  *first = (guint)axis;
  return TRUE;
}

static gboolean layernorm_accepts(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, char **reason) {
  const WeirContainer *x = weir_native_port(g, s, n, TRUE, 0);
  const WeirContainer *sc = weir_native_port(g, s, n, TRUE, 1);
  const WeirContainer *b = weir_native_port(g, s, n, TRUE, 2);
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  const WeirContainer *mean = weir_native_port(g, s, n, FALSE, 1);
  const WeirContainer *inv = weir_native_port(g, s, n, FALSE, 2);
  if (!x || !sc || !y) {
    *reason = g_strdup("an operand is missing");
    return FALSE;
  }
  guint first;
  if (!check_tensor(x, x->dtype, reason) ||
      !check_tensor(y, x->dtype, reason) ||
      !layernorm_first(n, x, &first, reason) ||
      !row_operand(x, first, sc, reason) ||
      (b && !row_operand(x, first, b, reason)) ||
      (mean && !stat_operand(x, first, mean, reason)) ||
      (inv && !stat_operand(x, first, inv, reason)))
    return FALSE;
  if (!same_shape(x, y)) {
    *reason =
        g_strdup_printf("'%s' and '%s' differ in shape", x->name, y->name);
    return FALSE;
  }
  return TRUE;
}

static gboolean layernorm_emit(WeirNativeEmit *e, GError **error) {
  char *reason = NULL;
  if (!layernorm_accepts(e->g, e->s, e->n, &reason))
    return refuse(e, reason, error);
  const WeirContainer *x = e->in[0].c;
  guint first = 0;
  layernorm_first(e->n, x, &first, &reason);
  const char *sfx = norm_record(e, "layernorm", x->dtype);
  g_autoptr(WeirExpr) rows = dims_product(x, 0, first);
  g_autoptr(WeirExpr) len = dims_product(x, first, x->shape->len);
  g_autofree char *rs = e->expr_c(e, rows), *ns = e->expr_c(e, len);
  const WeirAttr *ea = weir_node_attr(e->n, "epsilon");
  double eps = ea && ea->type == WEIR_ATTR_FLOAT ? ea->f : 1e-5;
  char epsbuf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(epsbuf, sizeof epsbuf, "%.17g", eps);
  emit_header(e, "one row at a time");
  g_string_append_printf(
      e->code, "weir_layernorm_%s(%s, %s, %s, %s, %s, %s, %s, %s, (%s)%s);\n",
      sfx, e->in[0].ptr, e->in[1].ptr, e->in[2].c ? e->in[2].ptr : "NULL",
      e->out[0].ptr, e->out[1].c ? e->out[1].ptr : "NULL",
      e->out[2].c ? e->out[2].ptr : "NULL", rs, ns,
      x->dtype == WEIR_DTYPE_F64 ? "double" : "float", epsbuf);
  return TRUE;
}

static const WeirNativeImpl norm_impls[] = {
    {.op = "Softmax",
     .impl = "weir",
     .accepts = softmax_accepts,
     .emit = softmax_emit},
    {.op = "LogSoftmax",
     .impl = "weir",
     .accepts = softmax_accepts,
     .emit = softmax_emit},
    {.op = "LayerNormalization",
     .impl = "weir",
     .accepts = layernorm_accepts,
     .emit = layernorm_emit},
};

void weir_native_register_norm(void) {
  for (guint i = 0; i < G_N_ELEMENTS(norm_impls); i++)
    weir_native_register(&norm_impls[i]);
  weir_native_register_batchnorm_grad();
  weir_native_register_batchnorm_stats();
}
