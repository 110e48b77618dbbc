/* text.c — C text and naming: the emitter, identifiers, helpers, literals.
 *
 * Conventions:
 *  - Out is a printf-style line emitter; every line is indented by two
 *    spaces per depth level and ends in '\n'.
 *  - Identifiers come from a Namer per C scope: any IR name is sanitized
 *    into a C identifier that is no keyword, no name of the included
 *    headers and nothing the generated code itself uses (weir_*, nested_*,
 *    args, symbols, arena, ...); clashes get a numeric suffix.
 *  - Text from a model file reaches the source only through comments made
 *    by cg_sanitize_comment (printable ASCII, no comment delimiters).
 *  - The static inline helpers of the generated code (floor division,
 *    NaN-propagating min/max, saturating float-to-int conversion, atomic
 *    min/max) are emitted only when used, in enum order.
 *  - Literals read back as exactly the value they print (shortest
 *    round-trip decimal; float constants with an 'f' suffix).
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "codegen-private.h"

/* ------------------------------------------------------------------ emitter */

Out cg_out_new(guint depth) {
  return (Out){g_string_new(NULL), depth};
}

static void out_indent(Out *o) {
  for (guint i = 0; i < o->depth; i++)
    g_string_append(o->s, "  ");
}

G_GNUC_PRINTF(2, 3)
void cg_out_line(Out *o, const char *fmt, ...) {
  va_list ap;
  out_indent(o);
  va_start(ap, fmt);
  g_string_append_vprintf(o->s, fmt, ap);
  va_end(ap);
  g_string_append_c(o->s, '\n');
}

void cg_out_paste(Out *o, const char *text) {
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    gsize len = nl ? (gsize)(nl - p) : strlen(p);
    if (len > 0)
      out_indent(o);
    g_string_append_len(o->s, p, (gssize)len);
    g_string_append_c(o->s, '\n');
    p += len + (nl ? 1 : 0);
  }
}

char *cg_out_free(Out *o) {
  return g_string_free(o->s, FALSE);
}

/* -------------------------------------------------------------- identifiers */

/* Names that a generated identifier must not take: C keywords (C11, C23 and
 * GNU), names the generated code uses from its headers, and object-like
 * macros of those headers. */
static const char *const reserved_words[] = {
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "alignas",
    "alignof",
    "bool",
    "constexpr",
    "false",
    "nullptr",
    "static_assert",
    "thread_local",
    "true",
    "typeof",
    "typeof_unqual",
    "asm",
    "main",
    "linux",
    "unix",
    "i386",
    "i686",
    "errno",
    "int8_t",
    "int16_t",
    "int32_t",
    "int64_t",
    "uint8_t",
    "uint16_t",
    "uint32_t",
    "uint64_t",
    "size_t",
    "ptrdiff_t",
    "intptr_t",
    "uintptr_t",
    "intmax_t",
    "uintmax_t",
    "wchar_t",
    "NULL",
    "NAN",
    "INFINITY",
    "HUGE",
    "HUGE_VAL",
    "HUGE_VALF",
    "MAXFLOAT",
    "DOMAIN",
    "SING",
    "OVERFLOW",
    "UNDERFLOW",
    "TLOSS",
    "PLOSS",
    "math_errhandling",
    "exp",
    "expf",
    "log",
    "logf",
    "sqrt",
    "sqrtf",
    "tanh",
    "tanhf",
    "erf",
    "erff",
    "sin",
    "sinf",
    "cos",
    "cosf",
    "tan",
    "tanf",
    "asin",
    "asinf",
    "acos",
    "acosf",
    "atan",
    "atanf",
    "sinh",
    "sinhf",
    "cosh",
    "coshf",
    "asinh",
    "asinhf",
    "acosh",
    "acoshf",
    "atanh",
    "atanhf",
    "rint",
    "rintf",
    "fabs",
    "fabsf",
    "floor",
    "floorf",
    "ceil",
    "ceilf",
    "pow",
    "powf",
    "fmod",
    "fmodf",
    "isnan",
    "isfinite",
    "abs",
    "free",
    "malloc",
    "aligned_alloc",
    "memcpy",
    "memset",
    "args",
    "symbols",
    "arena",
    "consts",
    "workspace",
    "ws",
    "status",
    "done",
    "omp",
    "EOF",
    "RAND_MAX",
    "MB_CUR_MAX",
    "EXIT_SUCCESS",
    "EXIT_FAILURE",
    "SIZE_MAX",
};

/* All-uppercase prefixes of macros in <stdint.h>, <math.h>, <stdlib.h>. */
static const char *const reserved_macro_prefixes[] = {
    "INT",   "UINT",        "M_",     "FP_",   "MATH_", "PTRDIFF_",
    "SIZE_", "SIG_ATOMIC_", "WCHAR_", "WINT_", "EXIT_", "X_",
};

static gboolean is_reserved(const char *name) {
  if (name[0] == '_' || g_str_has_prefix(name, "weir_") ||
      g_str_has_prefix(name, "WEIR_") || g_str_has_prefix(name, "nested_"))
    return TRUE;
  for (guint i = 0; i < G_N_ELEMENTS(reserved_words); i++)
    if (strcmp(name, reserved_words[i]) == 0)
      return TRUE;
  gboolean upper = TRUE;
  for (const char *p = name; *p; p++)
    if (g_ascii_islower(*p))
      upper = FALSE;
  if (upper)
    for (guint i = 0; i < G_N_ELEMENTS(reserved_macro_prefixes); i++)
      if (g_str_has_prefix(name, reserved_macro_prefixes[i]))
        return TRUE;
  return FALSE;
}

char *cg_sanitize_identifier(const char *text) {
  GString *s = g_string_new(NULL);
  for (const char *p = text ? text : ""; *p; p++)
    g_string_append_c(s, g_ascii_isalnum(*p) ? *p : '_');
  if (s->len == 0)
    g_string_append_c(s, 'v');
  if (g_ascii_isdigit(s->str[0]) || s->str[0] == '_')
    g_string_prepend_c(s, 'v');
  if (is_reserved(s->str))
    g_string_append_c(s, '_');
  return g_string_free(s, FALSE);
}

char *cg_sanitize_comment(const char *text) {
  GString *s = g_string_new(NULL);
  for (const char *p = text ? text : ""; *p && s->len < 60; p++) {
    char c = *p;
    gboolean ok = g_ascii_isalnum(c) || strchr(" _-.,:;+=<>()[]#@!&|^~%$", c);
    g_string_append_c(s, ok ? c : '_');
  }
  if (text && strlen(text) > 60)
    g_string_append(s, "...");
  return g_string_free(s, FALSE);
}

Namer *cg_namer_new(const Namer *parent) {
  Namer *n = g_new0(Namer, 1);
  n->used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  n->map = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  if (parent) {
    /* membership only: the copy does not depend on the iteration order */
    GHashTableIter it;
    gpointer k;
    g_hash_table_iter_init(&it, parent->used);
    while (g_hash_table_iter_next(&it, &k, NULL))
      g_hash_table_add(n->used, g_strdup(k));
  }
  return n;
}

void cg_namer_free(Namer *n) {
  if (!n)
    return;
  g_hash_table_unref(n->used);
  g_hash_table_unref(n->map);
  g_free(n);
}

const char *cg_namer_fresh_exact(Namer *n, const char *base) {
  char *name = g_strdup(base);
  for (guint k = 2; g_hash_table_contains(n->used, name); k++) {
    g_free(name);
    name = g_strdup_printf("%s_%u", base, k);
  }
  g_hash_table_add(n->used, name);
  return name;
}

const char *cg_namer_fresh(Namer *n, const char *text) {
  g_autofree char *base = cg_sanitize_identifier(text);
  return cg_namer_fresh_exact(n, base);
}

const char *cg_namer_get(Namer *n, const char *kind, const char *name) {
  char *key = g_strconcat(kind, ":", name, NULL);
  const char *c = g_hash_table_lookup(n->map, key);
  if (c) {
    g_free(key);
    return c;
  }
  char *value = g_strdup(cg_namer_fresh(n, name));
  g_hash_table_insert(n->map, key, value);
  return value;
}

/* ---------------------------------------------- errors, C types and helpers */

G_GNUC_PRINTF(3, 4)
void cg_gen_fail(Gen *gen, WeirErrorCode code, const char *fmt, ...) {
  if (gen->error)
    return;
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  gen->error = g_error_new_literal(WEIR_ERROR, code, msg);
}

const char *cg_ctype(WeirDType t) {
  switch (t) {
  case WEIR_DTYPE_F32:
    return "float";
  case WEIR_DTYPE_F64:
    return "double";
  case WEIR_DTYPE_I32:
    return "int32_t";
  case WEIR_DTYPE_I64:
    return "int64_t";
  case WEIR_DTYPE_BOOL:
    return "bool";
  case WEIR_DTYPE_U8:
    return "uint8_t";
  case WEIR_DTYPE_F16:
  case WEIR_DTYPE_BF16:
    return "float"; /* computed in f32; stored as uint16_t */
  case WEIR_DTYPE_I8:
    return "int8_t";
  case WEIR_DTYPE_I16:
    return "int16_t";
  case WEIR_DTYPE_U16:
    return "uint16_t";
  case WEIR_DTYPE_U32:
    return "uint32_t";
  case WEIR_DTYPE_U64:
    return "uint64_t";
  case WEIR_DTYPE_COUNT:
    break;
  }
  g_return_val_if_reached("int");
}

const char *cg_storage_type(WeirDType t) {
  if (weir_dtype_is_half(t))
    return "uint16_t";
  return t == WEIR_DTYPE_BOOL ? "uint8_t" : cg_ctype(t);
}

char *cg_half_load(Gen *gen, WeirDType t, const char *x) {
  gen->helpers[H_HALF] |= 1u << t;
  return g_strdup_printf("weir_%s_load(%s)", weir_dtype_name(t), x);
}

char *cg_half_bits(Gen *gen, WeirDType t, const char *value) {
  gen->helpers[H_HALF] |= 1u << t;
  return g_strdup_printf("weir_%s_bits(%s)", weir_dtype_name(t), value);
}

static const char *helper_suffix(WeirDType t) {
  return weir_dtype_name(t); /* f32, f64, i32, i64, bool, u8 */
}

char *cg_helper(Gen *gen, HelperKind k, WeirDType t) {
  gen->helpers[k] |= 1u << t;
  if (k == H_ATOMIC_MIN)
    gen->helpers[H_MIN] |= 1u << t;
  if (k == H_ATOMIC_MAX)
    gen->helpers[H_MAX] |= 1u << t;
  if (k == H_TANH || k == H_ERF)
    gen->helpers[H_EXP] |= 1u << t;
  switch (k) {
  case H_FLOORDIV:
    return g_strdup("weir_floordiv");
  case H_MOD:
    return g_strdup("weir_mod");
  case H_MIN:
    return g_strdup_printf("weir_min_%s", helper_suffix(t));
  case H_MAX:
    return g_strdup_printf("weir_max_%s", helper_suffix(t));
  case H_DIV:
    return g_strdup_printf("weir_div_%s", helper_suffix(t));
  case H_REM:
    return g_strdup_printf("weir_rem_%s", helper_suffix(t));
  case H_ABS:
    return g_strdup_printf("weir_abs_%s", helper_suffix(t));
  case H_F2I:
    return g_strdup_printf("weir_f2%s", helper_suffix(t));
  case H_ATOMIC_MIN:
    return g_strdup_printf("weir_atomic_min_%s", helper_suffix(t));
  case H_ATOMIC_MAX:
    return g_strdup_printf("weir_atomic_max_%s", helper_suffix(t));
  case H_ALIGN64:
    return g_strdup("weir_align64");
  case H_EXP:
    return g_strdup_printf("weir_exp_%s", helper_suffix(t));
  case H_TANH:
    return g_strdup_printf("weir_tanh_%s", helper_suffix(t));
  case H_ERF:
    return g_strdup_printf("weir_erf_%s", helper_suffix(t));
  case H_PHILOX:
    return g_strdup("weir_philox");
  case H_HALF:
    return g_strdup_printf("weir_%s_bits", helper_suffix(t));
  case H_ATOMIC_HALF:
    gen->helpers[H_HALF] |= 1u << t;
    gen->helpers[H_MIN] |= 1u << t;
    gen->helpers[H_MAX] |= 1u << t;
    return g_strdup_printf("weir_atomic_update_%s", helper_suffix(t));
  case H_COUNT:
    break;
  }
  g_return_val_if_reached(g_strdup("?"));
}

/* Limits of the integer dtypes as C text, for the saturating conversion. */
static void int_limits(WeirDType t, const char **lo, const char **hi,
                       const char **lo_c, const char **hi_c) {
  switch (t) {
  case WEIR_DTYPE_I32:
    *lo = "-2147483648.0";
    *hi = "2147483647.0";
    *lo_c = "INT32_MIN";
    *hi_c = "INT32_MAX";
    return;
  case WEIR_DTYPE_U8:
    *lo = "0.0";
    *hi = "255.0";
    *lo_c = "0";
    *hi_c = "255";
    return;
  case WEIR_DTYPE_I8:
    *lo = "-128.0";
    *hi = "127.0";
    *lo_c = "INT8_MIN";
    *hi_c = "INT8_MAX";
    return;
  case WEIR_DTYPE_I16:
    *lo = "-32768.0";
    *hi = "32767.0";
    *lo_c = "INT16_MIN";
    *hi_c = "INT16_MAX";
    return;
  case WEIR_DTYPE_U16:
    *lo = "0.0";
    *hi = "65535.0";
    *lo_c = "0";
    *hi_c = "UINT16_MAX";
    return;
  case WEIR_DTYPE_U32:
    *lo = "0.0";
    *hi = "4294967295.0";
    *lo_c = "0";
    *hi_c = "UINT32_MAX";
    return;
  case WEIR_DTYPE_U64:
    *lo = "0.0";
    *hi = "18446744073709551615.0";
    *lo_c = "0";
    *hi_c = "UINT64_MAX";
    return;
  default:
    *lo = "-9223372036854775808.0";
    *hi = "9223372036854775807.0";
    *lo_c = "INT64_MIN";
    *hi_c = "INT64_MAX";
    return;
  }
}

/* Weir's f32 exp, tanh and erf (docs/codegen.md, "Math functions"):
 * branch-free straight-line code (selects, not jumps; bits through memcpy)
 * that GCC and clang inline and vectorize in the loops of the generated
 * code, where a call of expf, tanhf or erff stops the vectorizer.  The
 * error bounds are checked against libm by test-vmath over a dense sweep.
 *
 * exp: x = n ln2 + r with |r| <= ln2 / 2 (n rounded by adding 1.5 * 2^23,
 * ln2 in two parts so n ln2 is exact), e^r by its Taylor polynomial of
 * degree 6, times 2^n built in the exponent bits in two halves (so
 * results below FLT_MIN come out as subnormals and above FLT_MAX as inf).
 * Relative error below 3e-7 (2.5 ulp) where the result is normal; x
 * clamped to [-104, 89] first (outside, the result is 0 or inf); NaN
 * stays NaN. */
static const char vmath_exp_f32[] =
    "/* exp(x) for f32, vectorizable (Weir's; relative error < 3e-7) */\n"
    "static inline float weir_exp_f32(float x) {\n"
    "  float c = x < -104.0f ? -104.0f : x;\n"
    "  c = c > 89.0f ? 89.0f : c;\n"
    "  const float t = c * 1.44269504088896341f + 12582912.0f;\n"
    "  const float n = t - 12582912.0f;\n"
    "  float r = c - n * 0.693359375f;\n"
    "  r = r - n * -2.12194440e-4f;\n"
    "  float p = r * (1.0f / 720.0f) + (1.0f / 120.0f);\n"
    "  p = p * r + (1.0f / 24.0f);\n"
    "  p = p * r + (1.0f / 6.0f);\n"
    "  p = p * r + 0.5f;\n"
    "  p = p * r + 1.0f;\n"
    "  p = p * r + 1.0f;\n"
    "  int32_t k;\n"
    "  memcpy(&k, &t, sizeof k);\n"
    "  k -= 0x4B400000; /* n, in [-150, 128] */\n"
    "  const int32_t k1 = k / 2, k2 = k - k1;\n"
    "  const int32_t b1 = (k1 + 127) << 23, b2 = (k2 + 127) << 23;\n"
    "  float s1, s2;\n"
    "  memcpy(&s1, &b1, sizeof s1);\n"
    "  memcpy(&s2, &b2, sizeof s2);\n"
    "  return p * s1 * s2;\n"
    "}\n\n";

/* tanh: odd; |x| < 0.25 by its Taylor polynomial to x^9 (relative error
 * below 1e-8 there), else 1 - 2 / (e^{2|x|} + 1).  Relative error below
 * 1e-6; +-1 beyond |x| = 9.1, NaN stays NaN. */
static const char vmath_tanh_f32[] =
    "/* tanh(x) for f32, vectorizable (Weir's; relative error < 1e-6) */\n"
    "static inline float weir_tanh_f32(float x) {\n"
    "  const float a = x < 0.0f ? -x : x;\n"
    "  const float a2 = a * a;\n"
    "  float s = a2 * (62.0f / 2835.0f) - 17.0f / 315.0f;\n"
    "  s = s * a2 + 2.0f / 15.0f;\n"
    "  s = s * a2 - 1.0f / 3.0f;\n"
    "  s = (s * a2) * a + a;\n"
    "  const float e = weir_exp_f32(2.0f * (a < 10.0f ? a : 10.0f));\n"
    "  const float l = 1.0f - 2.0f / (e + 1.0f);\n"
    "  float y = a < 0.25f ? s : l;\n"
    "  y = x != x ? x : y;\n"
    "  return x < 0.0f ? -y : y;\n"
    "}\n\n";

/* erf: odd; |x| < 0.5 by its Taylor series to x^11 (relative error below
 * 1e-7 there), else 1 - (a1 t + ... + a5 t^5) e^{-x^2} with
 * t = 1 / (1 + p |x|) (Abramowitz and Stegun 7.1.26, absolute error below
 * 1.5e-7, so relative below 3e-7 where erf >= 0.52).  Relative error
 * below 1e-6 with the rounding; +-1 beyond |x| = 4; NaN stays NaN. */
static const char vmath_erf_f32[] =
    "/* erf(x) for f32, vectorizable (Weir's; relative error < 1e-6) */\n"
    "static inline float weir_erf_f32(float x) {\n"
    "  float a = x < 0.0f ? -x : x;\n"
    "  a = a < 4.0f ? a : 4.0f;\n"
    "  const float a2 = a * a;\n"
    "  float s = a2 * (-1.0f / 1320.0f) + 1.0f / 216.0f;\n"
    "  s = s * a2 - 1.0f / 42.0f;\n"
    "  s = s * a2 + 1.0f / 10.0f;\n"
    "  s = s * a2 - 1.0f / 3.0f;\n"
    "  s = (s * a2 + 1.0f) * a * 1.12837916709551257f;\n"
    "  const float t = 1.0f / (1.0f + 0.3275911f * a);\n"
    "  float q = t * 1.061405429f - 1.453152027f;\n"
    "  q = q * t + 1.421413741f;\n"
    "  q = q * t - 0.284496736f;\n"
    "  q = q * t + 0.254829592f;\n"
    "  const float l = 1.0f - q * t * weir_exp_f32(-a2);\n"
    "  float y = a < 0.5f ? s : l;\n"
    "  y = x != x ? x : y;\n"
    "  return x < 0.0f ? -y : y;\n"
    "}\n\n";

/* f16 and bf16 (docs/precision.md): bits to float exactly; double to
 * bits rounding to nearest even in one step (as weir_f16_from_double and
 * weir_bf16_from_double in ir/types.c, which the interpreter uses).  With
 * GCC's or clang's _Float16 the f16 conversions are the compiler's (F16C
 * or AVX512-FP16 instructions where the target has them). */
static const char half_f16[] =
    "#ifdef __FLT16_MAX__\n"
    "static inline float weir_f16_load(uint16_t b) {\n"
    "  _Float16 h;\n"
    "  memcpy(&h, &b, sizeof h);\n"
    "  return (float)h;\n"
    "}\n"
    "static inline uint16_t weir_f16_bits(double x) {\n"
    "  const _Float16 h = (_Float16)x;\n"
    "  uint16_t b;\n"
    "  memcpy(&b, &h, sizeof b);\n"
    "  return b;\n"
    "}\n"
    "#else\n"
    "static inline float weir_f16_load(uint16_t b) {\n"
    "  const uint32_t e = (b >> 10) & 0x1f, m = b & 0x3ff;\n"
    "  float v = e == 0 ? ldexpf((float)m, -24)\n"
    "            : e == 31 ? (m ? NAN : INFINITY)\n"
    "            : ldexpf((float)(m | 0x400), (int)e - 25);\n"
    "  return (b & 0x8000) ? -v : v;\n"
    "}\n"
    "static inline uint16_t weir_f16_bits(double x) {\n"
    "  return weir_round_bits(x, 5, 10);\n"
    "}\n"
    "#endif\n\n";

static const char half_round[] =
    "/* x rounded to nearest even into a binary format with eb exponent and\n"
    " * mb mantissa bits; its bit pattern */\n"
    "static inline uint16_t weir_round_bits(double x, int eb, int mb) {\n"
    "  uint64_t b;\n"
    "  memcpy(&b, &x, sizeof b);\n"
    "  const uint32_t sign = (uint32_t)(b >> 63) << (eb + mb);\n"
    "  const int ex = (int)((b >> 52) & 0x7ff);\n"
    "  const uint64_t fr = b & ((UINT64_C(1) << 52) - 1);\n"
    "  const uint32_t emax = (1u << eb) - 1;\n"
    "  if (ex == 0x7ff)\n"
    "    return (uint16_t)(sign | emax << mb |\n"
    "                      (fr ? 1u << (mb - 1) | (uint32_t)(fr >> (52 - mb)) "
    ": 0));\n"
    "  if (ex == 0)\n"
    "    return (uint16_t)sign;\n"
    "  const int bias = (1 << (eb - 1)) - 1, emin = 1 - bias;\n"
    "  int e = ex - 1023;\n"
    "  const uint64_t m = fr | UINT64_C(1) << 52;\n"
    "  int sh = 52 - mb;\n"
    "  if (e < emin) {\n"
    "    if (emin - e > 60 || sh + (emin - e) > 53)\n"
    "      return (uint16_t)sign;\n"
    "    sh += emin - e;\n"
    "  }\n"
    "  uint64_t q = m >> sh;\n"
    "  const uint64_t rem = m & ((UINT64_C(1) << sh) - 1);\n"
    "  const uint64_t half = UINT64_C(1) << (sh - 1);\n"
    "  if (rem > half || (rem == half && (q & 1)))\n"
    "    q++;\n"
    "  if (e < emin)\n"
    "    return (uint16_t)(sign | (uint32_t)q);\n"
    "  if (q == UINT64_C(1) << (mb + 1)) {\n"
    "    q >>= 1;\n"
    "    e++;\n"
    "  }\n"
    "  if (e + bias >= (int)emax)\n"
    "    return (uint16_t)(sign | emax << mb);\n"
    "  return (uint16_t)(sign | (uint32_t)(e + bias) << mb |\n"
    "                    ((uint32_t)q & ((1u << mb) - 1)));\n"
    "}\n\n";

static const char half_bf16[] =
    "static inline float weir_bf16_load(uint16_t b) {\n"
    "  const uint32_t u = (uint32_t)b << 16;\n"
    "  float v;\n"
    "  memcpy(&v, &u, sizeof v);\n"
    "  return v;\n"
    "}\n"
    "static inline uint16_t weir_bf16_bits(double x) {\n"
    "  const float f = (float)x;\n"
    "  if ((double)f == x) { /* an f32 value (NaN aside): round its bits */\n"
    "    uint32_t u;\n"
    "    memcpy(&u, &f, sizeof u);\n"
    "    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);\n"
    "  }\n"
    "  return weir_round_bits(x, 8, 7);\n"
    "}\n\n";

static void helper_text(GString *s, HelperKind k, WeirDType t) {
  const char *ty = cg_ctype(t);
  const char *sx = helper_suffix(t);
  gboolean fl = weir_dtype_is_float(t);
  switch (k) {
  case H_FLOORDIV:
    g_string_append(s,
                    "/* a // b: floor division (a zero divisor gives 0) */\n"
                    "static inline int64_t weir_floordiv(int64_t a, int64_t b) "
                    "{\n"
                    "  if (b == 0)\n"
                    "    return 0;\n"
                    "  if (b == -1)\n"
                    "    return (int64_t)(0 - (uint64_t)a);\n"
                    "  int64_t q = a / b;\n"
                    "  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;\n"
                    "}\n\n");
    return;
  case H_MOD:
    g_string_append(s,
                    "/* a % b with the sign of b (a zero divisor gives 0) */\n"
                    "static inline int64_t weir_mod(int64_t a, int64_t b) {\n"
                    "  if (b == 0 || b == -1)\n"
                    "    return 0;\n"
                    "  int64_t r = a % b;\n"
                    "  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;\n"
                    "}\n\n");
    return;
  case H_MIN:
  case H_MAX: {
    const char *nm = k == H_MIN ? "min" : "max";
    const char *op = k == H_MIN ? "<" : ">";
    if (fl)
      g_string_append_printf(
          s,
          "static inline %s weir_%s_%s(%s a, %s b) {\n"
          "  return isnan(a) ? a : isnan(b) ? b : b %s a ? b : a;\n"
          "}\n\n",
          ty, nm, sx, ty, ty, op);
    else
      g_string_append_printf(s,
                             "static inline %s weir_%s_%s(%s a, %s b) {\n"
                             "  return b %s a ? b : a;\n"
                             "}\n\n",
                             ty, nm, sx, ty, ty, op);
    return;
  }
  case H_DIV:
  case H_REM: {
    const char *ut = t == WEIR_DTYPE_I32 ? "uint32_t" : "uint64_t";
    if (weir_dtype_is_unsigned(t)) {
      g_string_append_printf(s,
                             "/* a %s b; a zero divisor gives 0 */\n"
                             "static inline %s weir_%s_%s(%s a, %s b) {\n"
                             "  return b == 0 ? 0 : a %s b;\n"
                             "}\n\n",
                             k == H_DIV ? "/" : "%%", ty,
                             k == H_DIV ? "div" : "rem", sx, ty, ty,
                             k == H_DIV ? "/" : "%");
      return;
    }
    if (k == H_DIV)
      g_string_append_printf(s,
                             "/* a / b as in C; a zero divisor gives 0 */\n"
                             "static inline %s weir_div_%s(%s a, %s b) {\n"
                             "  if (b == 0)\n"
                             "    return 0;\n"
                             "  if (b == -1) /* no overflow trap */\n"
                             "    return (%s)(0 - (%s)a);\n"
                             "  return a / b;\n"
                             "}\n\n",
                             ty, sx, ty, ty, ty, ut);
    else
      g_string_append_printf(s,
                             "/* a %% b as in C; a zero divisor gives 0 */\n"
                             "static inline %s weir_rem_%s(%s a, %s b) {\n"
                             "  if (b == 0 || b == -1)\n"
                             "    return 0;\n"
                             "  return a %% b;\n"
                             "}\n\n",
                             ty, sx, ty, ty);
    return;
  }
  case H_ABS: {
    const char *ut = t == WEIR_DTYPE_I32 ? "uint32_t" : "uint64_t";
    if (weir_dtype_is_unsigned(t)) {
      g_string_append_printf(s,
                             "static inline %s weir_abs_%s(%s a) {\n"
                             "  return a;\n"
                             "}\n\n",
                             ty, sx, ty);
      return;
    }
    g_string_append_printf(s,
                           "static inline %s weir_abs_%s(%s a) {\n"
                           "  return a < 0 ? (%s)(0 - (%s)a) : a;\n"
                           "}\n\n",
                           ty, sx, ty, ty, ut);
    return;
  }
  case H_F2I: {
    const char *lo, *hi, *lo_c, *hi_c;
    int_limits(t, &lo, &hi, &lo_c, &hi_c);
    g_string_append_printf(s,
                           "/* float to %s: truncation, NaN gives 0, out of "
                           "range saturates */\n"
                           "static inline %s weir_f2%s(double x) {\n"
                           "  if (isnan(x))\n"
                           "    return 0;\n"
                           "  if (x <= %s)\n"
                           "    return %s;\n"
                           "  if (x >= %s)\n"
                           "    return %s;\n"
                           "  return (%s)x;\n"
                           "}\n\n",
                           sx, ty, sx, lo, lo_c, hi, hi_c, ty);
    return;
  }
  case H_ATOMIC_MIN:
  case H_ATOMIC_MAX: {
    const char *nm = k == H_ATOMIC_MIN ? "min" : "max";
    g_string_append_printf(
        s,
        "static inline void weir_atomic_%s_%s(%s *p, %s v) {\n"
        "  %s old, want;\n"
        "  __atomic_load(p, &old, __ATOMIC_RELAXED);\n"
        "  do {\n"
        "    want = weir_%s_%s(old, v);\n"
        "  } while (!__atomic_compare_exchange(p, &old, &want, false,\n"
        "                                      __ATOMIC_RELAXED, "
        "__ATOMIC_RELAXED));\n"
        "}\n\n",
        nm, sx, ty, ty, ty, nm, sx);
    return;
  }
  case H_ALIGN64:
    g_string_append(s, "static inline size_t weir_align64(size_t n) {\n"
                       "  return (n + 63) / 64 * 64;\n"
                       "}\n\n");
    return;
  case H_EXP:
    g_string_append(s, vmath_exp_f32);
    return;
  case H_TANH:
    g_string_append(s, vmath_tanh_f32);
    return;
  case H_ERF:
    g_string_append(s, vmath_erf_f32);
    return;
  case H_PHILOX:
    /* the code of weir_philox4x32_10 (ir/code.c), first word */
    g_string_append(
        s, "static inline int64_t weir_philox(int64_t key, int64_t c0, "
           "int64_t c1) {\n"
           "  uint32_t c[4] = {(uint32_t)(uint64_t)c0, "
           "(uint32_t)((uint64_t)c0 >> 32),\n"
           "                   (uint32_t)(uint64_t)c1, "
           "(uint32_t)((uint64_t)c1 >> 32)};\n"
           "  uint32_t k0 = (uint32_t)(uint64_t)key, "
           "k1 = (uint32_t)((uint64_t)key >> 32);\n"
           "  for (int r = 0; r < 10; r++) {\n"
           "    uint64_t p0 = (uint64_t)0xD2511F53u * c[0];\n"
           "    uint64_t p1 = (uint64_t)0xCD9E8D57u * c[2];\n"
           "    uint32_t c1_ = c[1], c3_ = c[3];\n"
           "    c[0] = (uint32_t)(p1 >> 32) ^ c1_ ^ k0;\n"
           "    c[1] = (uint32_t)p1;\n"
           "    c[2] = (uint32_t)(p0 >> 32) ^ c3_ ^ k1;\n"
           "    c[3] = (uint32_t)p0;\n"
           "    k0 += 0x9E3779B9u;\n"
           "    k1 += 0xBB67AE85u;\n"
           "  }\n"
           "  return (int64_t)c[0];\n"
           "}\n\n");
    return;
  case H_HALF:
    g_string_append(s, t == WEIR_DTYPE_F16 ? half_f16 : half_bf16);
    return;
  case H_ATOMIC_HALF: {
    static const char *const ops[4] = {"sum", "prod", "min", "max"};
    for (guint i = 0; i < 4; i++) {
      g_autofree char *comb =
          i == 0   ? g_strdup("(double)a + v")
          : i == 1 ? g_strdup("(double)a * v")
                   : g_strdup_printf("weir_%s_%s(a, (float)v)", ops[i], sx);
      g_string_append_printf(
          s,
          "static inline void weir_atomic_%s_%s(uint16_t *p, double v) {\n"
          "  uint16_t old, want;\n"
          "  __atomic_load(p, &old, __ATOMIC_RELAXED);\n"
          "  do {\n"
          "    const float a = weir_%s_load(old);\n"
          "    want = weir_%s_bits(%s);\n"
          "  } while (!__atomic_compare_exchange(p, &old, &want, false,\n"
          "                                      __ATOMIC_RELAXED, "
          "__ATOMIC_RELAXED));\n"
          "}\n\n",
          ops[i], sx, sx, sx, comb);
    }
    return;
  }
  case H_COUNT:
    break;
  }
}

void cg_emit_helpers(Gen *gen, GString *s) {
  if (gen->helpers[H_HALF])
    g_string_append(s, half_round);
  for (guint k = 0; k < H_COUNT; k++)
    for (guint t = 0; t < WEIR_DTYPE_COUNT; t++)
      if (gen->helpers[k] & (1u << t))
        helper_text(s, (HelperKind)k, (WeirDType)t);
}

/* ----------------------------------------------------------------- literals */

/* Makes the text a floating literal ("100" -> "100.0"); integral values
 * below 10^15 are written without an exponent ("1e+01" -> "10.0"). */
static void float_syntax(char *buf, gsize size, double v) {
  if (strpbrk(buf, "eE") && v == floor(v) && fabs(v) < 1e15) {
    g_ascii_formatd(buf, (gint)size, "%.0f", v);
    if (v == 0 && signbit(v) && buf[0] != '-')
      g_strlcpy(buf, "-0", size);
  }
  if (!strpbrk(buf, ".eEn"))
    g_strlcat(buf, ".0", size);
}

/* Shortest decimal text that reads back as exactly v. */
static char *format_double(double v) {
  if (isnan(v))
    return g_strdup(signbit(v) ? "-NAN" : "NAN");
  if (isinf(v))
    return g_strdup(v < 0 ? "-INFINITY" : "INFINITY");
  char buf[G_ASCII_DTOSTR_BUF_SIZE + 4];
  for (int p = 1; p <= 17; p++) {
    char fmt[8];
    g_snprintf(fmt, sizeof fmt, "%%.%dg", p);
    g_ascii_formatd(buf, G_ASCII_DTOSTR_BUF_SIZE, fmt, v);
    if (g_ascii_strtod(buf, NULL) == v)
      break;
  }
  float_syntax(buf, sizeof buf, v);
  return g_strdup(buf);
}

/* Shortest decimal text that a C compiler reads (with an 'f' suffix) as
 * exactly f.  The compiler rounds the decimal to float directly; the check
 * goes through double, so a candidate that lands exactly on the midpoint
 * between two floats is refused (double rounding could differ there). */
static char *format_float(float f) {
  if (isnan(f))
    return g_strdup(signbit(f) ? "-NAN" : "NAN");
  if (isinf(f))
    return g_strdup(f < 0 ? "-INFINITY" : "INFINITY");
  double lo = ((double)f + (double)nextafterf(f, -INFINITY)) / 2;
  double hi = ((double)f + (double)nextafterf(f, INFINITY)) / 2;
  char buf[G_ASCII_DTOSTR_BUF_SIZE + 4];
  for (int p = 1; p <= 9; p++) {
    char fmt[8];
    g_snprintf(fmt, sizeof fmt, "%%.%dg", p);
    g_ascii_formatd(buf, G_ASCII_DTOSTR_BUF_SIZE, fmt, (double)f);
    double d = g_ascii_strtod(buf, NULL);
    if ((float)d == f && d != lo && d != hi)
      break;
  }
  float_syntax(buf, sizeof buf, (double)f);
  g_strlcat(buf, "f", sizeof buf);
  return g_strdup(buf);
}

char *cg_format_int(gint64 v, int *prec) {
  *prec = v < 0 ? P_UNARY : P_ATOM;
  if (v == G_MININT64) {
    *prec = P_ATOM;
    return g_strdup("(-INT64_C(9223372036854775807) - 1)");
  }
  if (v == G_MININT32) {
    *prec = P_ATOM;
    return g_strdup("(-2147483647 - 1)");
  }
  if (v >= G_MININT32 && v <= G_MAXINT32)
    return g_strdup_printf("%" G_GINT64_FORMAT, v);
  return g_strdup_printf("%sINT64_C(%" G_GINT64_FORMAT ")", v < 0 ? "-" : "",
                         v < 0 ? -v : v);
}

char *cg_format_value(WeirValue v, int *prec) {
  *prec = P_ATOM;
  switch (v.type) {
  case WEIR_DTYPE_F32: {
    char *s = format_float((float)v.f);
    if (s[0] == '-')
      *prec = P_UNARY;
    return s;
  }
  case WEIR_DTYPE_F64: {
    char *s = format_double(v.f);
    if (s[0] == '-')
      *prec = P_UNARY;
    return s;
  }
  case WEIR_DTYPE_F16:
  case WEIR_DTYPE_BF16: {
    char *s = format_float((float)v.f);
    if (s[0] == '-')
      *prec = P_UNARY;
    return s;
  }
  case WEIR_DTYPE_U64:
    if (v.i < 0) {
      *prec = P_ATOM;
      return g_strdup_printf("UINT64_C(%" G_GUINT64_FORMAT ")", (guint64)v.i);
    }
    return cg_format_int(v.i, prec);
  case WEIR_DTYPE_BOOL:
    return g_strdup(v.i ? "true" : "false");
  default:
    return cg_format_int(v.i, prec);
  }
}

char *cg_wrap(char *text, const int *prec, int min) {
  if (*prec >= min)
    return text;
  char *w = g_strdup_printf("(%s)", text);
  g_free(text);
  return w;
}

char *cg_comment_text(const char *text) {
  return cg_sanitize_comment(text);
}
