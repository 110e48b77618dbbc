/* codegen.c — C11/OpenMP code generation (weir_codegen_c).
 *
 * One pass over a validated, fully expanded copy of the program, printing C
 * with a small printf-style emitter (Out) and a switch over node kinds.
 * Layout of this file, top to bottom:
 *   1. the emitter, identifiers (sanitizing, one Namer per C scope) and
 *      comment text;
 *   2. helpers: the static inline functions the generated code may need,
 *      emitted only when used (floor division, NaN-propagating min/max,
 *      saturating float-to-int conversion, atomic min/max);
 *   3. literals and symbolic expressions (int64_t arithmetic);
 *   4. tasklet ASTs, printed with the interpreter's types: every implicit
 *      conversion of ir/code.c becomes an explicit C conversion;
 *   5. containers: where each one lives (argument, static const, stack,
 *      arena, private to a parallel loop body, view passed to a nested
 *      function) and how an element address is computed;
 *   6. dataflow of a state: tasklets, copies, maps (loop nests with OpenMP
 *      pragmas), write-conflict resolution (reductions over inner loops
 *      accumulated in locals), nested program calls;
 *   7. control flow: structured loops and branches when the state graph
 *      has that shape, labels and gotos otherwise;
 *   8. functions (the entry point and one static function per nested
 *      program) and the public API.
 *
 * Conventions:
 *  - Generation never stops half-way on bad input: emitters record the
 *    first error in Gen.error and keep going on safe defaults; the public
 *    entry point checks it at the end.
 *  - Every element address is "base[sum of index x stride]" with the
 *    container's strides as symbolic expressions; a nested function's
 *    arguments use stride parameters, represented as synthetic symbols whose
 *    names start with '$' (they cannot clash with program symbols).
 *  - The body of a function is generated before its prologue, so only the
 *    containers and symbols actually referenced are declared.
 *  - Determinism: everything is walked in id order; hash tables are only
 *    used for lookups and membership.
 *  - Semantics follow ir/interp.c and ir/code.c exactly, with these
 *    documented differences: integer division or modulo by zero gives 0
 *    (the interpreter stops with an error), out-of-bounds accesses are not
 *    checked, and integer overflow in tasklet + - * is C's (the interpreter
 *    wraps around).
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-native.h"
#include "weir-validate.h"
#include "weir.h"

/* Transients up to this size (bytes, fixed shape) live on the stack, as
 * long as a function's stack transients stay under STACK_BUDGET. */
#define STACK_MAX 4096
#define STACK_BUDGET 16384

/* ------------------------------------------------------------------ emitter */

typedef struct {
  GString *s;
  guint depth; /* indentation level (2 spaces each) */
} Out;

static Out out_new(guint depth) {
  return (Out){g_string_new(NULL), depth};
}

static void out_indent(Out *o) {
  for (guint i = 0; i < o->depth; i++)
    g_string_append(o->s, "  ");
}

G_GNUC_PRINTF(2, 3)
static void out_line(Out *o, const char *fmt, ...) {
  va_list ap;
  out_indent(o);
  va_start(ap, fmt);
  g_string_append_vprintf(o->s, fmt, ap);
  va_end(ap);
  g_string_append_c(o->s, '\n');
}

/* Appends text (lines ending in '\n'), indented by o's depth. */
static void out_paste(Out *o, const char *text) {
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

static char *out_free(Out *o) {
  return g_string_free(o->s, FALSE);
}

/* Removes a final line that is exactly "continue;" (the end of a loop body
 * continues anyway). */
static void out_strip_continue(Out *o) {
  const char *tail = "continue;\n";
  gsize n = strlen(tail);
  if (o->s->len < n || strcmp(o->s->str + o->s->len - n, tail) != 0)
    return;
  gsize start = o->s->len - n;
  while (start > 0 && o->s->str[start - 1] == ' ')
    start--;
  if (start == 0 || o->s->str[start - 1] == '\n')
    g_string_truncate(o->s, start);
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

/* A C identifier from any text: other characters become '_', a leading
 * digit or underscore gets a 'v' in front, reserved words an '_' behind. */
static char *sanitize_identifier(const char *text) {
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

/* Text from a model file for a comment: printable ASCII without the
 * characters that could end the comment or splice lines, at most 60
 * characters. */
static char *sanitize_comment(const char *text) {
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

/* Identifiers of one C scope.  Each is reserved once; kinds keep the name
 * spaces of the IR apart ("c:" containers, "s:" symbols, "p:" map
 * parameters, ...). */
typedef struct {
  GHashTable *used; /* C identifiers taken (set, owned keys) */
  GHashTable *map;  /* kind:name -> C identifier (owned) */
} Namer;

static Namer *namer_new(const Namer *parent) {
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

static void namer_free(Namer *n) {
  if (!n)
    return;
  g_hash_table_unref(n->used);
  g_hash_table_unref(n->map);
  g_free(n);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Namer, namer_free)

/* A new unique identifier: base itself when free, else base_2, base_3...
 * (borrowed from the namer).  base must be a valid identifier. */
static const char *namer_fresh_exact(Namer *n, const char *base) {
  char *name = g_strdup(base);
  for (guint k = 2; g_hash_table_contains(n->used, name); k++) {
    g_free(name);
    name = g_strdup_printf("%s_%u", base, k);
  }
  g_hash_table_add(n->used, name);
  return name;
}

/* A new unique identifier based on any text (borrowed from the namer). */
static const char *namer_fresh(Namer *n, const char *text) {
  g_autofree char *base = sanitize_identifier(text);
  return namer_fresh_exact(n, base);
}

/* The identifier of kind:name, created on first use (borrowed). */
static const char *namer_get(Namer *n, const char *kind, const char *name) {
  char *key = g_strconcat(kind, ":", name, NULL);
  const char *c = g_hash_table_lookup(n->map, key);
  if (c) {
    g_free(key);
    return c;
  }
  char *value = g_strdup(namer_fresh(n, name));
  g_hash_table_insert(n->map, key, value);
  return value;
}

/* ------------------------------------------------------------------ helpers */

/* Static inline functions of the generated code.  Typed helpers exist per
 * dtype; Gen.helpers holds one bit per (kind, dtype) used, and the helpers
 * are emitted in enum order, so the output does not depend on the order of
 * first use. */
typedef enum {
  H_FLOORDIV, /* i64: floor division, Python semantics */
  H_MOD,      /* i64: modulo with the sign of the divisor */
  H_MIN,      /* per dtype; floats propagate NaN */
  H_MAX,
  H_DIV, /* i32, i64: C division (truncating), 0 for a zero divisor */
  H_REM,
  H_ABS,        /* i32, i64 */
  H_F2I,        /* i32, i64, u8: saturating conversion from double */
  H_ATOMIC_MIN, /* f32, f64, i32, i64, u8: compare-and-swap loops */
  H_ATOMIC_MAX,
  H_ALIGN64, /* size rounded up to 64 bytes */
  H_COUNT
} HelperKind;

typedef struct {
  gboolean openmp;
  guint32 helpers[H_COUNT]; /* bit per dtype */
  GString *defs;            /* nested functions, in definition order */
  Namer *file_names;        /* identifiers at file scope */
  char *prefix;
  guint nested_functions;
  GError *error; /* first error, owned */
  /* Native implementations (core/native.c): helper name -> text, and the
   * libraries to link (sets; printed sorted). */
  GHashTable *native_helpers;
  GHashTable *libraries;
} Gen;

G_GNUC_PRINTF(3, 4)
static void gen_fail(Gen *gen, WeirErrorCode code, const char *fmt, ...) {
  if (gen->error)
    return;
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  gen->error = g_error_new_literal(WEIR_ERROR, code, msg);
}

/* C type of a value of dtype, and of its storage (bool is stored as one
 * byte, 0 or 1). */
static const char *ctype(WeirDType t) {
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
  case WEIR_DTYPE_COUNT:
    break;
  }
  g_return_val_if_reached("int");
}

static const char *storage_type(WeirDType t) {
  return t == WEIR_DTYPE_BOOL ? "uint8_t" : ctype(t);
}

static const char *helper_suffix(WeirDType t) {
  return weir_dtype_name(t); /* f32, f64, i32, i64, bool, u8 */
}

/* Name of a helper; marks it (and what it needs) as used.  (borrowed
 * static storage is not possible for typed names, so the caller frees) */
static char *helper(Gen *gen, HelperKind k, WeirDType t) {
  gen->helpers[k] |= 1u << t;
  if (k == H_ATOMIC_MIN)
    gen->helpers[H_MIN] |= 1u << t;
  if (k == H_ATOMIC_MAX)
    gen->helpers[H_MAX] |= 1u << t;
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
  default:
    *lo = "-9223372036854775808.0";
    *hi = "9223372036854775807.0";
    *lo_c = "INT64_MIN";
    *hi_c = "INT64_MAX";
    return;
  }
}

static void helper_text(GString *s, HelperKind k, WeirDType t) {
  const char *ty = ctype(t);
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
  case H_COUNT:
    break;
  }
}

static void emit_helpers(Gen *gen, GString *s) {
  for (guint k = 0; k < H_COUNT; k++)
    for (guint t = 0; t < WEIR_DTYPE_COUNT; t++)
      if (gen->helpers[k] & (1u << t))
        helper_text(s, (HelperKind)k, (WeirDType)t);
}

/* ----------------------------------------------------------------- literals */

/* C precedence levels of printed expressions (higher binds tighter). */
enum {
  P_COND = 2,
  P_OR = 3,
  P_AND = 4,
  P_EQ = 8,
  P_REL = 9,
  P_ADD = 11,
  P_MUL = 12,
  P_UNARY = 14,
  P_ATOM = 16,
};

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

/* An integer constant as C text; *prec receives its precedence. */
static char *format_int(gint64 v, int *prec) {
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

/* A value (already of dtype t) as a C constant of type t. */
static char *format_value(WeirValue v, int *prec) {
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
  case WEIR_DTYPE_BOOL:
    return g_strdup(v.i ? "true" : "false");
  default:
    return format_int(v.i, prec);
  }
}

/* text wrapped in parentheses when its precedence (*prec, read only once
 * every argument is evaluated, so "wrap(f(&p), &p, m)" is well defined) is
 * below min.  Takes text over. */
static char *wrap(char *text, const int *prec, int min) {
  if (*prec >= min)
    return text;
  char *w = g_strdup_printf("(%s)", text);
  g_free(text);
  return w;
}

/* --------------------------------------------------------------- functions */

/* Where a container lives in one generated function. */
typedef enum {
  ST_NONE,    /* not referenced: nothing is declared */
  ST_ARG,     /* args[k] of the entry point */
  ST_CONST,   /* static const array (constant data, never written) */
  ST_STACK,   /* local array */
  ST_ARENA,   /* block of the function's arena */
  ST_PRIVATE, /* local array in the body of a map inside a parallel loop */
  ST_VIEW,    /* pointer and strides passed to a nested function */
} Storage;

typedef struct {
  WeirContainer *c; /* borrowed */
  Storage st;
  const char *cname;  /* borrowed from the function's namer */
  gboolean written;   /* some memlet writes it */
  gboolean used;      /* referenced by the generated code */
  gboolean init;      /* constant data copied into its storage at entry */
  guint arg_index;    /* ST_ARG */
  guint private_map;  /* ST_PRIVATE: the map entry whose body declares it */
  GPtrArray *strides; /* WeirExpr* per dimension, in elements */
  WeirExpr *span;     /* elements of storage (ST_STACK/ARENA/PRIVATE) */
} CInfo;

static void cinfo_free(gpointer p) {
  CInfo *ci = p;
  g_clear_pointer(&ci->strides, g_ptr_array_unref);
  g_clear_pointer(&ci->span, weir_expr_unref);
  g_free(ci);
}

typedef struct _Fn Fn;
struct _Fn {
  Gen *gen;
  WeirGraph *g; /* validated, expanded; borrowed */
  gboolean entry;
  char *fname;      /* C name of the function */
  char *where;      /* "program 'x'" or "program 'x', node 9 (nested 'blk')" */
  Namer *names;     /* identifiers of the function body */
  GPtrArray *cinfo; /* CInfo*, parallel to g->containers */
  GHashTable *cbyname;     /* container name -> CInfo* */
  GHashTable *synth;       /* synthetic symbol ("$...") -> C name (owned) */
  GHashTable *params;      /* names of all map parameters (set) */
  GHashTable *assigned;    /* symbols some transition assigns (set) */
  GHashTable *sym_used;    /* program symbols read (set, owned keys) */
  GHashTable *sym_written; /* program symbols assigned (set, owned keys) */
  GHashTable *synth_used;  /* synthetic symbols referenced (set, owned) */
  gboolean uses_done;      /* "goto done" emitted */
  gboolean uses_status;    /* calls a nested function that can fail */
};

static void fn_free(Fn *f) {
  if (!f)
    return;
  g_free(f->fname);
  g_free(f->where);
  namer_free(f->names);
  g_clear_pointer(&f->cinfo, g_ptr_array_unref);
  g_clear_pointer(&f->cbyname, g_hash_table_unref);
  g_clear_pointer(&f->synth, g_hash_table_unref);
  g_clear_pointer(&f->params, g_hash_table_unref);
  g_clear_pointer(&f->assigned, g_hash_table_unref);
  g_clear_pointer(&f->sym_used, g_hash_table_unref);
  g_clear_pointer(&f->sym_written, g_hash_table_unref);
  g_clear_pointer(&f->synth_used, g_hash_table_unref);
  g_free(f);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Fn, fn_free)

/* C name of a symbol of an expression: a map parameter, a program symbol
 * (recorded as used) or a synthetic one. */
static const char *fn_symbol(Fn *f, const char *name) {
  if (name[0] == '$') {
    const char *c = g_hash_table_lookup(f->synth, name);
    if (!c) {
      gen_fail(f->gen, WEIR_ERROR_INVALID, "%s: internal symbol '%s' unknown",
               f->where, name);
      return "0";
    }
    if (!g_hash_table_contains(f->synth_used, name))
      g_hash_table_add(f->synth_used, g_strdup(name));
    return c;
  }
  if (g_hash_table_contains(f->params, name))
    return namer_get(f->names, "p", name);
  if (!g_hash_table_contains(f->sym_used, name))
    g_hash_table_add(f->sym_used, g_strdup(name));
  return namer_get(f->names, "s", name);
}

static CInfo *fn_container(Fn *f, const char *name) {
  CInfo *ci = name ? g_hash_table_lookup(f->cbyname, name) : NULL;
  if (!ci)
    gen_fail(f->gen, WEIR_ERROR_INVALID, "%s: unknown container '%s'", f->where,
             name ? name : "");
  return ci;
}

/* ---------------------------------------------------- symbolic expressions */

static char *sym_c(Fn *f, WeirExpr *e, int *prec);

/* Coefficient of a term of a sum (products keep it first). */
static gint64 term_coef(WeirExpr *t) {
  gint64 c;
  if (weir_expr_is_const(t, &c))
    return c;
  if (weir_expr_kind(t) == WEIR_EXPR_MUL &&
      weir_expr_is_const(weir_expr_operand(t, 0), &c))
    return c;
  return 1;
}

static char *sym_sum(Fn *f, WeirExpr *e, int *prec) {
  GString *s = g_string_new(NULL);
  guint n = weir_expr_n_operands(e);
  /* positive terms, then negative ones as subtractions, constant last */
  for (int pass = 0; pass < 3; pass++) {
    for (guint i = 0; i < n; i++) {
      WeirExpr *t = weir_expr_operand(e, i);
      gboolean is_const = weir_expr_kind(t) == WEIR_EXPR_CONST;
      gint64 c = term_coef(t);
      gboolean neg = c < 0 && c != G_MININT64;
      if ((pass == 2) != is_const || (pass < 2 && (pass == 1) != neg))
        continue;
      int p;
      if (neg && s->len > 0) {
        g_autoptr(WeirExpr) m = weir_expr_neg(t);
        g_autofree char *txt = wrap(sym_c(f, m, &p), &p, P_MUL);
        g_string_append_printf(s, " - %s", txt);
      } else {
        g_autofree char *txt = wrap(sym_c(f, t, &p), &p, P_MUL);
        g_string_append_printf(s, "%s%s", s->len > 0 ? " + " : "", txt);
      }
    }
  }
  *prec = P_ADD;
  return g_string_free(s, FALSE);
}

static char *sym_call2(Fn *f, const char *name, WeirExpr *a, WeirExpr *b) {
  int pa, pb;
  g_autofree char *ta = sym_c(f, a, &pa);
  g_autofree char *tb = sym_c(f, b, &pb);
  return g_strdup_printf("%s(%s, %s)", name, ta, tb);
}

static char *sym_c(Fn *f, WeirExpr *e, int *prec) {
  *prec = P_ATOM;
  guint n = weir_expr_n_operands(e);
  switch (weir_expr_kind(e)) {
  case WEIR_EXPR_CONST:
    return format_int(weir_expr_const_value(e), prec);
  case WEIR_EXPR_SYMBOL:
    return g_strdup(fn_symbol(f, weir_expr_symbol_name(e)));
  case WEIR_EXPR_ADD:
    return sym_sum(f, e, prec);
  case WEIR_EXPR_MUL: {
    GString *s = g_string_new(NULL);
    gint64 coef = 1;
    for (guint i = 0; i < n; i++) {
      WeirExpr *x = weir_expr_operand(e, i);
      gint64 c;
      if (weir_expr_is_const(x, &c)) {
        coef *= c;
        continue;
      }
      int p;
      g_autofree char *t = wrap(sym_c(f, x, &p), &p, P_MUL + 1);
      g_string_append_printf(s, "%s%s", s->len ? " * " : "", t);
    }
    if (coef < 0 && coef != G_MININT64) {
      g_string_prepend_c(s, '-');
      coef = -coef;
    }
    if (coef != 1) {
      int p;
      g_autofree char *t = wrap(format_int(coef, &p), &p, P_MUL + 1);
      g_string_append_printf(s, " * %s", t);
    }
    *prec = P_MUL;
    return g_string_free(s, FALSE);
  }
  case WEIR_EXPR_FLOORDIV:
  case WEIR_EXPR_MOD: {
    g_autofree char *h =
        helper(f->gen, weir_expr_kind(e) == WEIR_EXPR_MOD ? H_MOD : H_FLOORDIV,
               WEIR_DTYPE_I64);
    return sym_call2(f, h, weir_expr_operand(e, 0), weir_expr_operand(e, 1));
  }
  case WEIR_EXPR_MIN:
  case WEIR_EXPR_MAX: {
    g_autofree char *h =
        helper(f->gen, weir_expr_kind(e) == WEIR_EXPR_MIN ? H_MIN : H_MAX,
               WEIR_DTYPE_I64);
    int p;
    char *acc = sym_c(f, weir_expr_operand(e, 0), &p);
    for (guint i = 1; i < n; i++) {
      g_autofree char *b = sym_c(f, weir_expr_operand(e, i), &p);
      char *next = g_strdup_printf("%s(%s, %s)", h, acc, b);
      g_free(acc);
      acc = next;
    }
    return acc;
  }
  }
  g_return_val_if_reached(g_strdup("0"));
}

/* An expression as text without precedence concerns (a whole argument,
 * bound or initializer). */
static char *sym_text(Fn *f, WeirExpr *e) {
  int p;
  return sym_c(f, e, &p);
}

/* ------------------------------------------------------------ tasklet code */

/* The typing rules of ir/code.c that the evaluator re-derives. */
static WeirDType promote_type(WeirDType t) {
  return t == WEIR_DTYPE_BOOL || t == WEIR_DTYPE_U8 ? WEIR_DTYPE_I32 : t;
}

static WeirDType arith_operand_type(const WeirAst *a, const WeirAst *b) {
  WeirDType ta = promote_type(a->type), tb = promote_type(b->type);
  gboolean fa = weir_dtype_is_float(ta), fb = weir_dtype_is_float(tb);
  if (a->untyped && b->untyped)
    return fa || fb ? WEIR_DTYPE_F64 : WEIR_DTYPE_I64;
  if (a->untyped)
    return fa ? (fb ? tb : WEIR_DTYPE_F64) : tb;
  if (b->untyped)
    return fb ? (fa ? ta : WEIR_DTYPE_F64) : ta;
  if (fa || fb)
    return ta == WEIR_DTYPE_F64 || tb == WEIR_DTYPE_F64 ? WEIR_DTYPE_F64
                                                        : WEIR_DTYPE_F32;
  return ta == WEIR_DTYPE_I64 || tb == WEIR_DTYPE_I64 ? WEIR_DTYPE_I64
                                                      : WEIR_DTYPE_I32;
}

typedef struct _Frame Frame;

/* One memlet of a tasklet connector. */
typedef struct {
  const WeirMemlet *m; /* borrowed */
  CInfo *ci;
  gboolean scalar;  /* the subset has one element */
  const char *name; /* scalar input: local; indexed: accessor pointer */
  gboolean used;
} Port;

typedef struct {
  Fn *f;
  Frame *fr;
  const WeirNode *n;
  Namer *names; /* the tasklet block's scope */
  Port *in;     /* per input connector */
  guint n_in;
  GPtrArray **out; /* per output connector: Port* */
  guint n_out;
  const char **locals; /* C names of the body's locals */
  gboolean *declared, *read;
} Tasklet;

static char *ast_c(Fn *f, Tasklet *t, const WeirAst *n, int *prec);
static char *ast_as(Fn *f, Tasklet *t, const WeirAst *n, WeirDType to,
                    int *prec);
static char *convert_text(Gen *gen, char *text, WeirDType from, WeirDType to,
                          int *prec);

static WeirValue literal_value(const WeirAst *n) {
  WeirValue v;
  if (n->kind == WEIR_AST_FLOAT) {
    v.type = WEIR_DTYPE_F64;
    v.f = n->fval;
  } else {
    v.type = WEIR_DTYPE_I64;
    v.i = n->ival;
  }
  return weir_value_convert(v, n->type);
}

static gboolean is_literal(const WeirAst *n) {
  return n->kind == WEIR_AST_INT || n->kind == WEIR_AST_FLOAT ||
         n->kind == WEIR_AST_BOOL;
}

/* Text that is true when n (bool or integer) is non-zero. */
static char *ast_truth(Fn *f, Tasklet *t, const WeirAst *n, int *prec) {
  if (n->type == WEIR_DTYPE_BOOL)
    return ast_c(f, t, n, prec);
  int p;
  char *x = wrap(ast_c(f, t, n, &p), &p, P_EQ + 1);
  *prec = P_EQ;
  char *r = g_strdup_printf("%s != 0", x);
  g_free(x);
  return r;
}

/* Element offset of an indexed connector access: sum of index x stride,
 * with constant indices folded into one constant term. */
static char *port_index(Fn *f, Tasklet *t, const Port *port, const WeirAst *n) {
  GString *s = g_string_new(NULL);
  const WeirSubset *sub = port->m->subset;
  g_autoptr(WeirExpr) konst = weir_expr_const(0);
  for (guint d = 0; d < n->args->len && d < sub->rank; d++) {
    g_autoptr(WeirExpr) stride = weir_expr_mul(
        sub->dims[d].step, g_ptr_array_index(port->ci->strides, d));
    gint64 c;
    gboolean is_c = weir_expr_is_const(stride, &c);
    if (is_c && c == 0)
      continue;
    const WeirAst *arg = g_ptr_array_index(n->args, d);
    if (is_literal(arg)) {
      WeirValue v = weir_value_convert(literal_value(arg), WEIR_DTYPE_I64);
      g_autoptr(WeirExpr) term = weir_expr_mul_const(stride, v.i);
      WeirExpr *sum = weir_expr_add(konst, term);
      weir_expr_unref(konst);
      konst = sum;
      continue;
    }
    int p;
    g_autofree char *idx = ast_as(f, t, arg, WEIR_DTYPE_I64, &p);
    if (s->len)
      g_string_append(s, " + ");
    if (is_c && c == 1) {
      g_autofree char *w = wrap(g_steal_pointer(&idx), &p, P_ADD);
      g_string_append(s, w);
    } else {
      g_autofree char *w = wrap(g_steal_pointer(&idx), &p, P_MUL);
      g_autofree char *st = wrap(sym_c(f, stride, &p), &p, P_MUL + 1);
      g_string_append_printf(s, "%s * %s", w, st);
    }
  }
  gint64 kv;
  if (!(weir_expr_is_const(konst, &kv) && kv == 0) || s->len == 0) {
    int p;
    g_autofree char *k = wrap(sym_c(f, konst, &p), &p, P_ADD + 1);
    g_string_append_printf(s, "%s%s", s->len ? " + " : "", k);
  }
  return g_string_free(s, FALSE);
}

static const char *math_name(WeirFunc fn) {
  switch (fn) {
  case WEIR_FUNC_EXP:
    return "exp";
  case WEIR_FUNC_LOG:
    return "log";
  case WEIR_FUNC_SQRT:
    return "sqrt";
  case WEIR_FUNC_TANH:
    return "tanh";
  case WEIR_FUNC_ERF:
    return "erf";
  case WEIR_FUNC_SIN:
    return "sin";
  case WEIR_FUNC_COS:
    return "cos";
  case WEIR_FUNC_ABS:
    return "fabs";
  case WEIR_FUNC_FLOOR:
    return "floor";
  case WEIR_FUNC_CEIL:
    return "ceil";
  default:
    return NULL;
  }
}

static char *ast_name(Fn *f, Tasklet *t, const WeirAst *n, int *prec) {
  *prec = P_ATOM;
  switch (n->binding) {
  case WEIR_BIND_LOCAL:
    if (t && n->slot < (guint)t->n->code->locals->len) {
      t->read[n->slot] = TRUE;
      return g_strdup(t->locals[n->slot]);
    }
    break;
  case WEIR_BIND_INPUT:
    if (t && n->slot < t->n_in && t->in[n->slot].m) {
      Port *port = &t->in[n->slot];
      port->used = TRUE;
      if (port->scalar || n->kind != WEIR_AST_INDEX)
        return g_strdup(port->name);
      g_autofree char *idx = port_index(f, t, port, n);
      if (port->ci->c->dtype == WEIR_DTYPE_BOOL)
        return g_strdup_printf("(%s[%s] != 0)", port->name, idx);
      return g_strdup_printf("%s[%s]", port->name, idx);
    }
    break;
  case WEIR_BIND_SYMBOL:
    return g_strdup(fn_symbol(f, n->name));
  case WEIR_BIND_OUTPUT:
  case WEIR_BIND_NONE:
    break;
  }
  gen_fail(f->gen, WEIR_ERROR_INVALID, "%s: name '%s' cannot be read here",
           f->where, n->name ? n->name : "");
  return g_strdup("0");
}

static const char *binary_op_text(WeirOp op) {
  switch (op) {
  case WEIR_OP_ADD:
    return "+";
  case WEIR_OP_SUB:
    return "-";
  case WEIR_OP_MUL:
    return "*";
  case WEIR_OP_DIV:
    return "/";
  case WEIR_OP_MOD:
    return "%";
  case WEIR_OP_LT:
    return "<";
  case WEIR_OP_LE:
    return "<=";
  case WEIR_OP_GT:
    return ">";
  case WEIR_OP_GE:
    return ">=";
  case WEIR_OP_EQ:
    return "==";
  case WEIR_OP_NE:
    return "!=";
  case WEIR_OP_AND:
    return "&&";
  case WEIR_OP_OR:
    return "||";
  default:
    return "?";
  }
}

static char *ast_binary(Fn *f, Tasklet *t, const WeirAst *n, int *prec) {
  int pa, pb;
  WeirOp op = n->op;
  if (op == WEIR_OP_AND || op == WEIR_OP_OR) {
    /* "a || b || c" as is, "&&" inside "||" in parentheses (as compilers
     * suggest) */
    int level = op == WEIR_OP_AND ? P_AND : P_OR;
    char *a = ast_truth(f, t, n->a, &pa);
    char *b = ast_truth(f, t, n->b, &pb);
    if (level == P_OR && pa == P_AND)
      pa = 0;
    if (level == P_OR && pb == P_AND)
      pb = 0;
    g_autofree char *wa = wrap(a, &pa, level);
    g_autofree char *wb = wrap(b, &pb, level + 1);
    *prec = level;
    return g_strdup_printf("%s %s %s", wa, binary_op_text(op), wb);
  }
  gboolean cmp = op >= WEIR_OP_LT && op <= WEIR_OP_NE;
  WeirDType ty = cmp ? arith_operand_type(n->a, n->b) : n->type;
  char *a = ast_as(f, t, n->a, ty, &pa);
  char *b = ast_as(f, t, n->b, ty, &pb);
  char *r;
  if (cmp) {
    /* operands are arithmetic; "!x < y" would read wrongly */
    if (a[0] == '!')
      pa = 0;
    if (b[0] == '!')
      pb = 0;
    a = wrap(a, &pa, P_ADD);
    b = wrap(b, &pb, P_ADD);
    *prec = op == WEIR_OP_EQ || op == WEIR_OP_NE ? P_EQ : P_REL;
    r = g_strdup_printf("%s %s %s", a, binary_op_text(op), b);
  } else if (weir_dtype_is_float(ty) && op == WEIR_OP_MOD) {
    *prec = P_ATOM;
    r = g_strdup_printf("%s(%s, %s)", ty == WEIR_DTYPE_F32 ? "fmodf" : "fmod",
                        a, b);
  } else if (!weir_dtype_is_float(ty) &&
             (op == WEIR_OP_DIV || op == WEIR_OP_MOD)) {
    g_autofree char *h = helper(f->gen, op == WEIR_OP_DIV ? H_DIV : H_REM, ty);
    *prec = P_ATOM;
    r = g_strdup_printf("%s(%s, %s)", h, a, b);
  } else {
    int level = op == WEIR_OP_ADD || op == WEIR_OP_SUB ? P_ADD : P_MUL;
    a = wrap(a, &pa, level);
    b = wrap(b, &pb, level + 1);
    *prec = level;
    r = g_strdup_printf("%s %s %s", a, binary_op_text(op), b);
  }
  g_free(a);
  g_free(b);
  return r;
}

static char *ast_call(Fn *f, Tasklet *t, const WeirAst *n, int *prec) {
  const WeirAst *x = g_ptr_array_index(n->args, 0);
  WeirDType ty = n->type;
  int p;
  *prec = P_ATOM;
  switch (n->func) {
  case WEIR_FUNC_EXP:
  case WEIR_FUNC_LOG:
  case WEIR_FUNC_SQRT:
  case WEIR_FUNC_TANH:
  case WEIR_FUNC_ERF:
  case WEIR_FUNC_SIN:
  case WEIR_FUNC_COS:
  case WEIR_FUNC_ABS:
  case WEIR_FUNC_FLOOR:
  case WEIR_FUNC_CEIL: {
    g_autofree char *a = ast_as(f, t, x, ty, &p);
    if (!weir_dtype_is_float(ty)) { /* abs of an integer */
      g_autofree char *h = helper(f->gen, H_ABS, ty);
      return g_strdup_printf("%s(%s)", h, a);
    }
    return g_strdup_printf("%s%s(%s)", math_name(n->func),
                           ty == WEIR_DTYPE_F32 ? "f" : "", a);
  }
  case WEIR_FUNC_POW: {
    const WeirAst *y = g_ptr_array_index(n->args, 1);
    if (weir_dtype_is_float(ty)) {
      g_autofree char *a = ast_as(f, t, x, ty, &p);
      g_autofree char *b = ast_as(f, t, y, ty, &p);
      return g_strdup_printf("%s(%s, %s)",
                             ty == WEIR_DTYPE_F32 ? "powf" : "pow", a, b);
    }
    /* integers: converted to the result type, computed through double */
    char *ab[2];
    for (guint i = 0; i < 2; i++) {
      const WeirAst *arg = i ? y : x;
      int q;
      if (is_literal(arg)) {
        WeirValue v = weir_value_convert(literal_value(arg), ty);
        ab[i] = format_value(weir_value_convert(v, WEIR_DTYPE_F64), &q);
      } else {
        char *txt = ast_as(f, t, arg, ty, &q);
        ab[i] = convert_text(f->gen, txt, ty, WEIR_DTYPE_F64, &q);
      }
    }
    g_autofree char *h = helper(f->gen, H_F2I, ty);
    char *r = g_strdup_printf("%s(pow(%s, %s))", h, ab[0], ab[1]);
    g_free(ab[0]);
    g_free(ab[1]);
    return r;
  }
  case WEIR_FUNC_MIN:
  case WEIR_FUNC_MAX: {
    g_autofree char *h =
        helper(f->gen, n->func == WEIR_FUNC_MIN ? H_MIN : H_MAX, ty);
    char *acc = ast_as(f, t, x, ty, &p);
    for (guint i = 1; i < n->args->len; i++) {
      g_autofree char *b = ast_as(f, t, g_ptr_array_index(n->args, i), ty, &p);
      char *next = g_strdup_printf("%s(%s, %s)", h, acc, b);
      g_free(acc);
      acc = next;
    }
    return acc;
  }
  case WEIR_FUNC_ISNAN:
  case WEIR_FUNC_ISFINITE: {
    gboolean nan = n->func == WEIR_FUNC_ISNAN;
    if (!weir_dtype_is_float(x->type))
      return g_strdup(nan ? "false" : "true");
    g_autofree char *a = ast_c(f, t, x, &p);
    return g_strdup_printf("%s(%s)", nan ? "isnan" : "isfinite", a);
  }
  default: /* casts */
    return ast_as(f, t, x, ty, prec);
  }
}

static char *ast_c(Fn *f, Tasklet *t, const WeirAst *n, int *prec) {
  int p;
  *prec = P_ATOM;
  switch (n->kind) {
  case WEIR_AST_INT:
  case WEIR_AST_FLOAT:
  case WEIR_AST_BOOL:
    return format_value(literal_value(n), prec);
  case WEIR_AST_NAME:
  case WEIR_AST_INDEX:
    return ast_name(f, t, n, prec);
  case WEIR_AST_UNARY: {
    *prec = P_UNARY;
    if (n->op == WEIR_OP_NOT) {
      g_autofree char *a = ast_c(f, t, n->a, &p);
      a = wrap(g_steal_pointer(&a), &p, P_UNARY + 1);
      return g_strdup_printf("!%s", a);
    }
    g_autofree char *a = ast_as(f, t, n->a, n->type, &p);
    a = wrap(g_steal_pointer(&a), &p, P_UNARY + 1);
    return g_strdup_printf("-%s", a);
  }
  case WEIR_AST_BINARY:
    return ast_binary(f, t, n, prec);
  case WEIR_AST_TERNARY: {
    g_autofree char *c = wrap(ast_truth(f, t, n->a, &p), &p, P_COND + 1);
    g_autofree char *a = ast_as(f, t, n->b, n->type, &p);
    a = wrap(g_steal_pointer(&a), &p, P_COND + 1);
    g_autofree char *b = ast_as(f, t, n->c, n->type, &p);
    b = wrap(g_steal_pointer(&b), &p, P_COND + 1);
    *prec = P_COND;
    return g_strdup_printf("%s ? %s : %s", c, a, b);
  }
  case WEIR_AST_CALL:
    return ast_call(f, t, n, prec);
  }
  g_return_val_if_reached(g_strdup("0"));
}

/* C text converting a value of type `from` (text at precedence *prec) to
 * `to` with weir_value_convert's semantics. */
static char *convert_text(Gen *gen, char *text, WeirDType from, WeirDType to,
                          int *prec) {
  if (from == to)
    return text;
  char *r;
  if (weir_dtype_is_float(to)) {
    g_autofree char *x = wrap(text, prec, P_UNARY);
    r = g_strdup_printf("(%s)%s", ctype(to), x);
    *prec = P_UNARY;
  } else if (to == WEIR_DTYPE_BOOL) {
    g_autofree char *x = wrap(text, prec, P_EQ + 1);
    r = g_strdup_printf("%s != 0", x);
    *prec = P_EQ;
  } else if (weir_dtype_is_float(from)) {
    g_autofree char *h = helper(gen, H_F2I, to);
    r = g_strdup_printf("%s(%s)", h, text);
    g_free(text);
    *prec = P_ATOM;
  } else {
    g_autofree char *x = wrap(text, prec, P_UNARY);
    r = g_strdup_printf("(%s)%s", ctype(to), x);
    *prec = P_UNARY;
  }
  return r;
}

static char *ast_as(Fn *f, Tasklet *t, const WeirAst *n, WeirDType to,
                    int *prec) {
  if (is_literal(n))
    return format_value(weir_value_convert(literal_value(n), to), prec);
  char *text = ast_c(f, t, n, prec);
  return convert_text(f->gen, text, n->type, to, prec);
}

/* ---------------------------------------------------------------- elements */

/* The element offset of absolute indices idx (one per dimension), kept as
 * (index, stride) pairs, entries 2d and 2d + 1, so the text reads like the
 * subscript: "i * 64 + j", "r * W".  (transfer full) */
static GPtrArray *elem_offset(const CInfo *ci, WeirExpr *const *idx) {
  GPtrArray *terms =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint d = 0; d < ci->strides->len; d++) {
    g_ptr_array_add(terms, weir_expr_ref(idx[d]));
    g_ptr_array_add(terms, weir_expr_ref(g_ptr_array_index(ci->strides, d)));
  }
  return terms;
}

/* Offset of the first element of a subset.  (transfer full) */
static GPtrArray *subset_offset(const CInfo *ci, const WeirSubset *sub) {
  g_autofree WeirExpr **idx = g_new0(WeirExpr *, sub->rank + 1);
  for (guint d = 0; d < sub->rank; d++)
    idx[d] = sub->dims[d].begin;
  return elem_offset(ci, idx);
}

/* Text of an offset: the terms in dimension order, constants summed at the
 * end; *zero when it is the constant 0. */
static char *offset_text(Fn *f, GPtrArray *terms, int *prec, gboolean *zero) {
  GString *s = g_string_new(NULL);
  gint64 konst = 0;
  guint items = 0;
  int last = P_ATOM;
  for (guint i = 0; i + 1 < terms->len; i += 2) {
    WeirExpr *index = g_ptr_array_index(terms, i);
    WeirExpr *stride = g_ptr_array_index(terms, i + 1);
    gint64 c;
    if (!weir_expr_is_const(stride, &c) && !weir_expr_is_const(index, &c)) {
      /* a symbolic stride: index * stride as written */
      int p, q;
      g_autofree char *x = wrap(sym_c(f, index, &p), &p, P_MUL);
      g_autofree char *y = wrap(sym_c(f, stride, &q), &q, P_MUL + 1);
      g_string_append_printf(s, "%s%s * %s", s->len ? " + " : "", x, y);
      last = P_MUL;
      items++;
      continue;
    }
    g_autoptr(WeirExpr) t = weir_expr_mul(index, stride);
    if (weir_expr_is_const(t, &c)) {
      konst += c;
      continue;
    }
    g_autoptr(WeirExpr) part = weir_expr_ref(t);
    guint n = weir_expr_n_operands(t);
    if (weir_expr_kind(t) == WEIR_EXPR_ADD &&
        weir_expr_is_const(weir_expr_operand(t, n - 1), &c)) {
      konst += c;
      weir_expr_unref(part);
      part = weir_expr_add_const(t, -c);
    }
    gint64 coef = term_coef(part);
    int p;
    if (s->len && coef < 0 && coef != G_MININT64) {
      g_autoptr(WeirExpr) m = weir_expr_neg(part);
      g_autofree char *x = wrap(sym_c(f, m, &p), &p, P_MUL);
      g_string_append_printf(s, " - %s", x);
    } else {
      g_autofree char *x = wrap(sym_c(f, part, &p), &p, P_ADD);
      g_string_append_printf(s, "%s%s", s->len ? " + " : "", x);
    }
    last = p;
    items++;
  }
  *zero = items == 0 && konst == 0;
  if (konst != 0 || items == 0) {
    if (items == 0) {
      g_autofree char *k = format_int(konst, &last);
      g_string_append(s, k);
      items++;
    } else {
      int p;
      gboolean neg = konst < 0 && konst != G_MININT64;
      g_autofree char *k = format_int(neg ? -konst : konst, &p);
      g_string_append_printf(s, " %c %s", neg ? '-' : '+', k);
      items++;
    }
  }
  *prec = items > 1 ? P_ADD : last;
  return g_string_free(s, FALSE);
}

/* "X[offset]" (marks X used). */
static char *elem_ref(Fn *f, CInfo *ci, GPtrArray *off) {
  ci->used = TRUE;
  int p;
  gboolean zero;
  g_autofree char *o = offset_text(f, off, &p, &zero);
  return g_strdup_printf("%s[%s]", ci->cname, o);
}

/* "X + offset", or "X" for offset 0 (marks X used). */
static char *elem_ptr(Fn *f, CInfo *ci, GPtrArray *off) {
  ci->used = TRUE;
  int p;
  gboolean zero;
  g_autofree char *o = offset_text(f, off, &p, &zero);
  if (zero)
    return g_strdup(ci->cname);
  o = wrap(g_steal_pointer(&o), &p, P_ADD);
  return g_strdup_printf("%s + %s", ci->cname, o);
}

/* The value of an element in the container's dtype (bool storage is read
 * as "!= 0", like the interpreter). */
static char *elem_load(Fn *f, CInfo *ci, GPtrArray *off, int *prec) {
  char *r = elem_ref(f, ci, off);
  *prec = P_ATOM;
  if (ci->c->dtype == WEIR_DTYPE_BOOL) {
    char *b = g_strdup_printf("%s != 0", r);
    g_free(r);
    *prec = P_EQ;
    return b;
  }
  return r;
}

static gboolean subset_is_scalar(const WeirSubset *sub) {
  g_autoptr(WeirExpr) v = weir_subset_volume(sub);
  gint64 c;
  return weir_expr_is_const(v, &c) && c == 1;
}

static char *comment_text(const char *text) {
  return sanitize_comment(text);
}

/* ------------------------------------------------------------------ frames */

/* One open map while its body is generated. */
struct _Frame {
  Frame *up;
  const WeirNode *entry;
  gboolean par_root;  /* carries "#pragma omp parallel for" */
  gboolean in_region; /* this loop runs inside a parallel or simd loop */
  gboolean simd;      /* wants "#pragma omp simd" */
  gboolean simd_drop; /* ... which a conflicting write or an atomic forbids */
  const char *why_drop;
  /* with par_root: the number of leading parameters whose iterations
   * "omp parallel for" (with its collapse) divides among the threads; the
   * other loops run whole inside one thread.  0: all of them (tiled maps,
   * where threads share tiles). */
  guint n_split;
  GPtrArray *accs; /* Acc* this map's loops declare (owned), or NULL */
};

/* A local accumulator for one write-conflict-resolved memlet of a tasklet
 * inside the loops of a map (the host), whose element does not depend on
 * the loops from `level` inward: the tasklet updates the local, which is
 * declared before loop `level` of the host and combined into memory once
 * after it (see emit_map). */
typedef struct {
  const WeirMemlet *m; /* borrowed */
  CInfo *ci;
  guint level;      /* index of the first loop (tile loops included) inside */
  const char *name; /* borrowed from the function's namer */
  gboolean atomic;  /* the combine needs an atomic update */
} Acc;

/* TRUE when, for every parameter p among the first n_params of map (0:
 * all), some dimension of sub starts at c*p + rest with a constant c != 0,
 * rest free of the parameters in `inner` (this map's and those of maps
 * inside it), and a region narrower than |c|: distinct values of those
 * parameters then touch distinct elements. */
static gboolean subset_injective(const WeirSubset *sub, const WeirMap *map,
                                 guint n_params, GHashTable *inner) {
  guint np = n_params ? MIN(n_params, map->params->len) : map->params->len;
  for (guint k = 0; k < np; k++) {
    const char *p = g_ptr_array_index(map->params, k);
    gboolean found = FALSE;
    g_autoptr(WeirExpr) zero = weir_expr_const(0);
    g_autoptr(WeirExpr) one = weir_expr_const(1);
    for (guint d = 0; d < sub->rank && !found; d++) {
      WeirExpr *b = sub->dims[d].begin;
      g_autoptr(WeirExpr) b0 = weir_expr_substitute_one(b, p, zero);
      g_autoptr(WeirExpr) b1 = weir_expr_substitute_one(b, p, one);
      g_autoptr(WeirExpr) diff = weir_expr_sub(b1, b0);
      gint64 c;
      if (!weir_expr_is_const(diff, &c) || c == 0)
        continue;
      g_autoptr(WeirExpr) sym = weir_expr_symbol(p);
      g_autoptr(WeirExpr) cp = weir_expr_mul_const(sym, c);
      g_autoptr(WeirExpr) rest = weir_expr_sub(b, cp);
      g_autoptr(GPtrArray) names = weir_expr_symbols(rest);
      gboolean clean = TRUE;
      for (guint i = 0; i < names->len && clean; i++)
        clean = !g_hash_table_contains(inner, g_ptr_array_index(names, i));
      if (!clean)
        continue;
      g_autoptr(WeirExpr) size = weir_range_size(&sub->dims[d]);
      gint64 sz, st;
      if (!weir_expr_is_const(size, &sz))
        continue;
      if (sz > 1 && (!weir_expr_is_const(sub->dims[d].step, &st) ||
                     (sz - 1) * st >= (c < 0 ? -c : c)))
        continue;
      found = TRUE;
    }
    if (!found)
      return FALSE;
  }
  return TRUE;
}

/* Decides how a write-conflict resolution into sub is done inside fr:
 * TRUE when it needs an atomic update (iterations of the parallel loop
 * may write the same element).  Also withdraws "omp simd" from enclosing
 * simd loops whose iterations may conflict. */
static gboolean wcr_needs_atomic(Frame *fr, const WeirSubset *sub,
                                 guint private_map) {
  g_autoptr(GHashTable) inner = g_hash_table_new(g_str_hash, g_str_equal);
  gboolean atomic = FALSE;
  /* a transient private to a map's body is shared only by the loops
   * inside that map */
  for (Frame *x = fr; x && x->entry->id != private_map; x = x->up) {
    const WeirMap *map = x->entry->map;
    for (guint k = 0; k < map->params->len; k++)
      g_hash_table_add(inner, g_ptr_array_index(map->params, k));
    if (!x->par_root && !x->simd)
      continue;
    /* threads own distinct values of the split parameters only; a simd
     * loop's lanes differ in the last one, checked over all of them */
    if (subset_injective(sub, map, x->par_root ? x->n_split : 0, inner))
      continue;
    if (x->par_root)
      atomic = TRUE;
    else if (!x->simd_drop) {
      x->simd_drop = TRUE;
      x->why_drop = "iterations may update the same element";
    }
  }
  if (atomic)
    for (Frame *x = fr; x && x->entry->id != private_map; x = x->up)
      if (x->simd && !x->simd_drop) {
        x->simd_drop = TRUE;
        x->why_drop = "atomic update inside";
      }
  return atomic;
}

static gboolean frame_parallel(const Frame *fr) {
  for (; fr; fr = fr->up)
    if (fr->par_root)
      return TRUE;
  return FALSE;
}

/* Emits the update of lvalue (of dtype) by value with wcr (not NONE),
 * atomic or not. */
static void emit_update(Fn *f, Out *o, WeirDType dtype, const char *lvalue,
                        WeirWcr wcr, const char *value, gboolean atomic) {
  gboolean minmax = wcr == WEIR_WCR_MIN || wcr == WEIR_WCR_MAX;
  if (dtype == WEIR_DTYPE_BOOL) {
    /* 0/1 values: sum and max are "or", product and min are "and" */
    if (atomic)
      out_line(o, "#pragma omp atomic");
    gboolean any = wcr == WEIR_WCR_SUM || wcr == WEIR_WCR_MAX;
    out_line(o, "%s %s= %s;", lvalue, any ? "|" : "&", value);
    return;
  }
  if (minmax) {
    HelperKind k = wcr == WEIR_WCR_MIN ? (atomic ? H_ATOMIC_MIN : H_MIN)
                                       : (atomic ? H_ATOMIC_MAX : H_MAX);
    g_autofree char *h = helper(f->gen, k, dtype);
    if (atomic)
      out_line(o, "%s(&%s, %s);", h, lvalue, value);
    else
      out_line(o, "%s = %s(%s, %s);", lvalue, h, lvalue, value);
    return;
  }
  if (atomic)
    out_line(o, "#pragma omp atomic");
  out_line(o, "%s %s= %s;", lvalue, wcr == WEIR_WCR_SUM ? "+" : "*", value);
}

/* Does the write-conflict resolution into sub (of container ci) from
 * inside fr need an atomic update? */
static gboolean store_atomic(Fn *f, Frame *fr, const CInfo *ci,
                             const WeirSubset *sub) {
  return f->gen->openmp && fr &&
         wcr_needs_atomic(fr, sub, ci->st == ST_PRIVATE ? ci->private_map : 0);
}

/* Emits lvalue = value, or its update by wcr (value has the element's
 * dtype; for bool storage 0 or 1).  sub is the subset the write belongs
 * to, for the conflict rule. */
static void emit_store(Fn *f, Out *o, Frame *fr, const CInfo *ci,
                       const char *lvalue, const WeirSubset *sub, WeirWcr wcr,
                       const char *value) {
  if (wcr == WEIR_WCR_NONE) {
    out_line(o, "%s = %s;", lvalue, value);
    return;
  }
  gboolean atomic = store_atomic(f, fr, ci, sub);
  emit_update(f, o, ci->c->dtype, lvalue, wcr, value, atomic);
}

/* The accumulator an enclosing map holds for memlet m, or NULL. */
static const Acc *frame_acc(const Frame *fr, const WeirMemlet *m) {
  for (; fr; fr = fr->up)
    for (guint k = 0; fr->accs && k < fr->accs->len; k++) {
      const Acc *a = g_ptr_array_index(fr->accs, k);
      if (a->m == m)
        return a;
    }
  return NULL;
}

/* The neutral element of wcr in dtype, as C text: the start of an
 * accumulator whose combine is atomic.  A sum starts at -0.0, which leaves
 * every value (also -0.0) unchanged. */
static const char *wcr_identity(WeirWcr wcr, WeirDType t) {
  gboolean flt = t == WEIR_DTYPE_F32 || t == WEIR_DTYPE_F64;
  switch (wcr) {
  case WEIR_WCR_SUM:
    if (flt)
      return t == WEIR_DTYPE_F32 ? "-0.0f" : "-0.0";
    return "0";
  case WEIR_WCR_PROD:
    return t == WEIR_DTYPE_F32 ? "1.0f" : t == WEIR_DTYPE_F64 ? "1.0" : "1";
  case WEIR_WCR_MAX:
    switch (t) {
    case WEIR_DTYPE_I32:
      return "INT32_MIN";
    case WEIR_DTYPE_I64:
      return "INT64_MIN";
    case WEIR_DTYPE_BOOL:
    case WEIR_DTYPE_U8:
      return "0";
    default:
      return "-INFINITY";
    }
  case WEIR_WCR_MIN:
    switch (t) {
    case WEIR_DTYPE_I32:
      return "INT32_MAX";
    case WEIR_DTYPE_I64:
      return "INT64_MAX";
    case WEIR_DTYPE_BOOL:
      return "1";
    case WEIR_DTYPE_U8:
      return "UINT8_MAX";
    default:
      return "INFINITY";
    }
  default:
    break;
  }
  g_return_val_if_reached("0");
}

/* ------------------------------------------------------------------ states */

typedef struct {
  Fn *f;
  WeirState *s;
  WeirScopes *scopes;
  GHashTable *children; /* entry id -> GArray of node ids, in order */
  GArray *top;          /* node ids at the top level, in order */
  GHashTable *hosted;   /* memlets that got an accumulator (a set) */
} StateCtx;

static void state_ctx_clear(StateCtx *sc) {
  g_clear_pointer(&sc->hosted, g_hash_table_unref);
  g_clear_pointer(&sc->scopes, weir_scopes_free);
  g_clear_pointer(&sc->children, g_hash_table_unref);
  g_clear_pointer(&sc->top, g_array_unref);
}

static gboolean state_ctx_init(StateCtx *sc, Fn *f, WeirState *s) {
  g_autoptr(GError) local = NULL;
  sc->f = f;
  sc->s = s;
  sc->scopes = weir_state_scopes(s, &local);
  sc->children = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                       (GDestroyNotify)g_array_unref);
  sc->top = g_array_new(FALSE, FALSE, sizeof(guint));
  sc->hosted = g_hash_table_new(g_direct_hash, g_direct_equal);
  if (!sc->scopes) {
    gen_fail(f->gen, WEIR_ERROR_INVALID, "%s: %s", f->where, local->message);
    return FALSE;
  }
  for (guint k = 0; k < sc->scopes->order->len; k++) {
    guint id = g_array_index(sc->scopes->order, guint, k);
    guint parent = weir_scopes_parent(sc->scopes, id);
    GArray *list = sc->top;
    if (parent) {
      list = g_hash_table_lookup(sc->children, GUINT_TO_POINTER(parent));
      if (!list) {
        list = g_array_new(FALSE, FALSE, sizeof(guint));
        g_hash_table_insert(sc->children, GUINT_TO_POINTER(parent), list);
      }
    }
    g_array_append_val(list, id);
  }
  return TRUE;
}

/* Non-empty memlets on a connector of node, by id (borrowed; free the
 * array). */
static GPtrArray *conn_memlets(const WeirState *s, guint node, const char *conn,
                               gboolean input) {
  GPtrArray *r = g_ptr_array_new();
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (!m->data)
      continue;
    if (input ? (m->dst == node && g_strcmp0(m->dst_conn, conn) == 0)
              : (m->src == node && g_strcmp0(m->src_conn, conn) == 0))
      g_ptr_array_add(r, m);
  }
  return r;
}

static void emit_nodes(StateCtx *sc, Out *o, GArray *ids, Frame *fr);

/* --------------------------------------------------------------- tasklets */

static void tasklet_clear(Tasklet *t) {
  namer_free(t->names);
  g_free(t->in);
  for (guint k = 0; k < t->n_out; k++)
    g_ptr_array_unref(t->out[k]);
  g_free(t->out);
  g_free(t->locals);
  g_free(t->declared);
  g_free(t->read);
}

/* Stores the value of statement st (text in the target connector's type)
 * into every memlet of the output connector. */
static void tasklet_output(Tasklet *t, Out *o, const WeirStmt *st,
                           const char *value) {
  Fn *f = t->f;
  const WeirAst *target = st->target;
  GPtrArray *ports = target->slot < t->n_out ? t->out[target->slot] : NULL;
  if (!ports || ports->len == 0) {
    gen_fail(f->gen, WEIR_ERROR_INVALID,
             "%s: output connector '%s' of tasklet %u has no memlet", f->where,
             target->name, t->n->id);
    return;
  }
  g_autofree char *tmp = NULL;
  const char *v = value;
  gboolean single =
      ports->len == 1 &&
      ((Port *)g_ptr_array_index(ports, 0))->ci->c->dtype == target->type;
  if (!single) {
    tmp = g_strdup(namer_fresh(t->names, "value"));
    out_line(o, "const %s %s = %s;", ctype(target->type), tmp, value);
    v = tmp;
  }
  for (guint k = 0; k < ports->len; k++) {
    Port *port = g_ptr_array_index(ports, k);
    WeirDType dt = port->ci->c->dtype;
    int p = single ? P_COND : P_ATOM;
    g_autofree char *conv =
        convert_text(f->gen, g_strdup(v), target->type, dt, &p);
    g_autofree char *lv = NULL;
    if (port->scalar || target->kind != WEIR_AST_INDEX) {
      g_autoptr(GPtrArray) off = subset_offset(port->ci, port->m->subset);
      lv = elem_ref(f, port->ci, off);
    } else {
      g_autofree char *idx = port_index(f, t, port, target);
      lv = g_strdup_printf("%s[%s]", port->name, idx);
      port->used = TRUE; /* through its accessor */
    }
    const Acc *acc = frame_acc(t->fr, port->m);
    if (acc) {
      /* still withdraws "omp simd" from the loops the local is updated in */
      store_atomic(f, t->fr, port->ci, port->m->subset);
      emit_update(f, o, port->ci->c->dtype, acc->name, port->m->wcr, conv,
                  FALSE);
    } else {
      emit_store(f, o, t->fr, port->ci, lv, port->m->subset, port->m->wcr,
                 conv);
    }
  }
}

static void emit_tasklet(StateCtx *sc, Out *o, const WeirNode *n, Frame *fr) {
  Fn *f = sc->f;
  const WeirCode *code = n->code;
  g_autofree char *label = comment_text(n->label);
  if (!code || !code->checked) {
    gen_fail(f->gen, WEIR_ERROR_INVALID,
             "%s, state %u, node %u (tasklet '%s'): the body is not "
             "type-checked",
             f->where, sc->s->id, n->id, label);
    return;
  }
  Tasklet t = {.f = f, .fr = fr, .n = n};
  t.names = namer_new(f->names);
  t.n_in = n->in_conns->len;
  t.in = g_new0(Port, t.n_in + 1);
  t.n_out = n->out_conns->len;
  t.out = g_new0(GPtrArray *, t.n_out + 1);
  for (guint k = 0; k < t.n_in; k++) {
    const char *conn = g_ptr_array_index(n->in_conns, k);
    g_autoptr(GPtrArray) ms = conn_memlets(sc->s, n->id, conn, TRUE);
    if (ms->len == 0)
      continue;
    Port *p = &t.in[k];
    p->m = g_ptr_array_index(ms, 0);
    p->ci = fn_container(f, p->m->data);
    if (!p->ci) {
      p->m = NULL;
      continue;
    }
    p->scalar = subset_is_scalar(p->m->subset);
    p->name = namer_get(t.names, "i", conn);
  }
  for (guint k = 0; k < t.n_out; k++) {
    const char *conn = g_ptr_array_index(n->out_conns, k);
    g_autoptr(GPtrArray) ms = conn_memlets(sc->s, n->id, conn, FALSE);
    t.out[k] = g_ptr_array_new_with_free_func(g_free);
    for (guint j = 0; j < ms->len; j++) {
      Port *p = g_new0(Port, 1);
      p->m = g_ptr_array_index(ms, j);
      p->ci = fn_container(f, p->m->data);
      if (!p->ci) {
        g_free(p);
        continue;
      }
      p->scalar = subset_is_scalar(p->m->subset);
      p->name = namer_fresh(t.names, conn);
      g_ptr_array_add(t.out[k], p);
    }
  }
  guint nl = code->locals->len;
  t.locals = g_new0(const char *, nl + 1);
  t.declared = g_new0(gboolean, nl + 1);
  t.read = g_new0(gboolean, nl + 1);
  for (guint k = 0; k < nl; k++)
    t.locals[k] = namer_get(t.names, "l", g_ptr_array_index(code->locals, k));

  Out body = out_new(0);
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(code->stmts, i);
    const WeirAst *target = st->target;
    int p;
    g_autofree char *value = ast_as(f, &t, st->value, target->type, &p);
    if (target->binding == WEIR_BIND_LOCAL && target->slot < nl) {
      guint k = target->slot;
      if (t.declared[k]) {
        out_line(&body, "%s = %s;", t.locals[k], value);
      } else {
        out_line(&body, "%s %s = %s;", ctype(target->type), t.locals[k], value);
        t.declared[k] = TRUE;
      }
    } else if (target->binding == WEIR_BIND_OUTPUT) {
      tasklet_output(&t, &body, st, value);
    } else {
      gen_fail(f->gen, WEIR_ERROR_INVALID,
               "%s: tasklet %u assigns to '%s', which is neither a local nor "
               "an output",
               f->where, n->id, target->name);
    }
  }
  for (guint k = 0; k < nl; k++)
    if (t.declared[k] && !t.read[k])
      out_line(&body, "(void)%s;", t.locals[k]);
  g_autofree char *stmts = out_free(&body);

  out_line(o, "/* tasklet %u '%s' */", n->id, label);
  out_line(o, "{");
  o->depth++;
  for (guint k = 0; k < t.n_in; k++) {
    Port *p = &t.in[k];
    if (!p->m || !p->used)
      continue;
    g_autoptr(GPtrArray) off = subset_offset(p->ci, p->m->subset);
    WeirDType dt = p->ci->c->dtype;
    if (p->scalar) {
      int pr;
      g_autofree char *load = elem_load(f, p->ci, off, &pr);
      out_line(o, "const %s %s = %s;", ctype(dt), p->name, load);
    } else {
      g_autofree char *ptr = elem_ptr(f, p->ci, off);
      out_line(o, "const %s *const %s = %s;", storage_type(dt), p->name, ptr);
    }
  }
  for (guint k = 0; k < t.n_out; k++) {
    for (guint j = 0; j < t.out[k]->len; j++) {
      Port *p = g_ptr_array_index(t.out[k], j);
      if (p->scalar || !p->used)
        continue;
      g_autoptr(GPtrArray) off = subset_offset(p->ci, p->m->subset);
      g_autofree char *ptr = elem_ptr(f, p->ci, off);
      out_line(o, "%s *const %s = %s;", storage_type(p->ci->c->dtype), p->name,
               ptr);
    }
  }
  out_paste(o, stmts);
  o->depth--;
  out_line(o, "}");
  tasklet_clear(&t);
}

/* ------------------------------------------------------------------ copies */

static gboolean is_row_major(const WeirContainer *c) {
  g_autoptr(WeirExpr) acc = weir_expr_const(1);
  for (guint d = c->shape->len; d-- > 0;) {
    if (!weir_expr_equal(g_ptr_array_index(c->strides, d), acc))
      return FALSE;
    WeirExpr *next = weir_expr_mul(acc, g_ptr_array_index(c->shape, d));
    weir_expr_unref(acc);
    acc = next;
  }
  return TRUE;
}

static gboolean subset_is_whole(const WeirSubset *sub, const WeirContainer *c) {
  gint64 v;
  if (sub->rank != c->shape->len)
    return FALSE;
  for (guint d = 0; d < sub->rank; d++)
    if (!weir_expr_is_const(sub->dims[d].begin, &v) || v != 0 ||
        !weir_expr_is_const(sub->dims[d].step, &v) || v != 1 ||
        !weir_expr_equal(sub->dims[d].end, g_ptr_array_index(c->shape, d)))
      return FALSE;
  return TRUE;
}

/* Dimensions of sub whose size is not the constant 1, and their sizes. */
static GArray *moving_dims(const WeirSubset *sub, GPtrArray *sizes) {
  GArray *dims = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint d = 0; d < sub->rank; d++) {
    WeirExpr *size = weir_range_size(&sub->dims[d]);
    gint64 v;
    if (weir_expr_is_const(size, &v) && v == 1) {
      weir_expr_unref(size);
      continue;
    }
    g_array_append_val(dims, d);
    g_ptr_array_add(sizes, size);
  }
  return dims;
}

/* A synthetic symbol for a loop variable of generated code. */
static WeirExpr *synth_symbol(Fn *f, const char *key, const char *cname) {
  g_hash_table_insert(f->synth, g_strdup(key), g_strdup(cname));
  return weir_expr_symbol(key);
}

/* Absolute indices: begin + rel * step in the dimensions `dims` (rel given
 * per entry of dims), begin elsewhere.  (transfer full: free each) */
static WeirExpr **subset_indices(const WeirSubset *sub, GArray *dims,
                                 WeirExpr **rel) {
  WeirExpr **idx = g_new0(WeirExpr *, sub->rank + 1);
  for (guint d = 0; d < sub->rank; d++)
    idx[d] = weir_expr_ref(sub->dims[d].begin);
  for (guint j = 0; j < dims->len; j++) {
    guint d = g_array_index(dims, guint, j);
    g_autoptr(WeirExpr) scaled = weir_expr_mul(rel[j], sub->dims[d].step);
    WeirExpr *x = weir_expr_add(idx[d], scaled);
    weir_expr_unref(idx[d]);
    idx[d] = x;
  }
  return idx;
}

static void free_exprs(WeirExpr **v, guint n) {
  for (guint i = 0; i < n; i++)
    if (v[i])
      weir_expr_unref(v[i]);
  g_free(v);
}

static void emit_copy(StateCtx *sc, Out *o, const WeirMemlet *m,
                      const WeirNode *src, const WeirNode *dst, Frame *fr) {
  Fn *f = sc->f;
  const char *src_name, *dst_name = dst->data;
  const WeirSubset *src_sub, *dst_sub;
  if (g_strcmp0(m->data, src->data) == 0 || g_strcmp0(m->data, dst_name) != 0) {
    src_name = m->data;
    src_sub = m->subset;
    dst_sub = m->other ? m->other : m->subset;
  } else {
    src_name = src->data;
    dst_sub = m->subset;
    src_sub = m->other ? m->other : m->subset;
  }
  CInfo *sci = fn_container(f, src_name);
  CInfo *dci = fn_container(f, dst_name);
  if (!sci || !dci)
    return;
  if (src_sub->rank != sci->c->shape->len ||
      dst_sub->rank != dci->c->shape->len) {
    gen_fail(f->gen, WEIR_ERROR_INVALID,
             "%s, state %u, memlet %u: subset rank does not match", f->where,
             sc->s->id, m->id);
    return;
  }
  g_autofree char *s1 = weir_subset_to_string(src_sub);
  g_autofree char *s2 = weir_subset_to_string(dst_sub);
  g_autofree char *c1 = comment_text(s1);
  g_autofree char *c2 = comment_text(s2);
  out_line(o, "/* copy (memlet %u): %s[%s] -> %s[%s]%s%s */", m->id, sci->cname,
           c1, dci->cname, c2, m->wcr != WEIR_WCR_NONE ? ", wcr " : "",
           m->wcr != WEIR_WCR_NONE ? weir_wcr_name(m->wcr) : "");
  WeirDType st = sci->c->dtype, dt = dci->c->dtype;
  if (m->wcr == WEIR_WCR_NONE && st == dt && is_row_major(sci->c) &&
      is_row_major(dci->c) && subset_is_whole(src_sub, sci->c) &&
      subset_is_whole(dst_sub, dci->c)) {
    g_autoptr(WeirExpr) vol = weir_container_volume(sci->c);
    int p;
    g_autofree char *v = wrap(sym_c(f, vol, &p), &p, P_UNARY);
    sci->used = dci->used = TRUE;
    out_line(o, "memcpy(%s, %s, (size_t)%s * sizeof(%s));", dci->cname,
             sci->cname, v, storage_type(dt));
    return;
  }
  g_autoptr(GPtrArray) ssizes =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  g_autoptr(GPtrArray) dsizes =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  g_autoptr(GArray) sdims = moving_dims(src_sub, ssizes);
  g_autoptr(GArray) ddims = moving_dims(dst_sub, dsizes);
  gboolean paired = sdims->len == ddims->len;
  for (guint j = 0; paired && j < sdims->len; j++)
    paired = weir_expr_equal(g_ptr_array_index(ssizes, j),
                             g_ptr_array_index(dsizes, j));
  /* one loop per moving source dimension */
  g_autoptr(Namer) names = namer_new(f->names);
  guint n = sdims->len;
  g_autofree WeirExpr **k = g_new0(WeirExpr *, n + 1);
  guint depth0 = o->depth;
  for (guint j = 0; j < n; j++) {
    g_autofree char *base = g_strdup_printf("k%u", j);
    const char *cname = namer_fresh(names, base);
    g_autofree char *key = g_strdup_printf("$copy%u.%u", m->id, j);
    k[j] = synth_symbol(f, key, cname);
    g_autofree char *bound = sym_text(f, g_ptr_array_index(ssizes, j));
    out_line(o, "for (int64_t %s = 0; %s < %s; %s++) {", cname, cname, bound,
             cname);
    o->depth++;
  }
  WeirExpr **sidx = subset_indices(src_sub, sdims, k);
  WeirExpr **didx;
  if (paired) {
    didx = subset_indices(dst_sub, ddims, k);
  } else {
    /* row-major position in the source, then the destination's indices */
    g_autoptr(WeirExpr) lin = weir_expr_const(0);
    for (guint j = 0; j < n; j++) {
      WeirExpr *x = weir_expr_mul(lin, g_ptr_array_index(ssizes, j));
      WeirExpr *y = weir_expr_add(x, k[j]);
      weir_expr_unref(x);
      weir_expr_unref(lin);
      lin = y;
    }
    guint dn = ddims->len;
    g_autofree WeirExpr **rel = g_new0(WeirExpr *, dn + 1);
    g_autoptr(WeirExpr) below = weir_expr_const(1);
    for (guint j = dn; j-- > 0;) {
      g_autoptr(WeirExpr) q = weir_expr_floordiv(lin, below);
      rel[j] = j == 0 ? weir_expr_ref(q)
                      : weir_expr_mod(q, g_ptr_array_index(dsizes, j));
      WeirExpr *b = weir_expr_mul(below, g_ptr_array_index(dsizes, j));
      weir_expr_unref(below);
      below = b;
    }
    didx = subset_indices(dst_sub, ddims, rel);
    free_exprs(g_steal_pointer(&rel), dn);
  }
  g_autoptr(GPtrArray) soff = elem_offset(sci, sidx);
  g_autoptr(GPtrArray) doff = elem_offset(dci, didx);
  free_exprs(sidx, src_sub->rank);
  free_exprs(didx, dst_sub->rank);
  int p;
  g_autofree char *load = elem_load(f, sci, soff, &p);
  g_autofree char *value =
      convert_text(f->gen, g_steal_pointer(&load), st, dt, &p);
  g_autofree char *lv = elem_ref(f, dci, doff);
  emit_store(f, o, fr, dci, lv, dst_sub, m->wcr, value);
  while (o->depth > depth0) {
    o->depth--;
    out_line(o, "}");
  }
  free_exprs(g_steal_pointer(&k), n);
}

/* -------------------------------------------------------------------- maps */

static void emit_private_decls(Fn *f, Out *o, guint entry_id) {
  for (guint i = 0; i < f->cinfo->len; i++) {
    CInfo *ci = g_ptr_array_index(f->cinfo, i);
    if (ci->st != ST_PRIVATE || ci->private_map != entry_id || !ci->used)
      continue;
    gint64 span = 1;
    weir_expr_is_const(ci->span, &span);
    out_line(o, "%s %s[%" G_GINT64_FORMAT "] = {0};",
             storage_type(ci->c->dtype), ci->cname, span > 0 ? span : 1);
  }
}

static char *map_description(const WeirNode *entry) {
  const WeirMap *map = entry->map;
  GString *s = g_string_new(NULL);
  g_autofree char *label = comment_text(entry->label);
  g_string_append_printf(s, "map %u '%s': ", entry->id, label);
  for (guint k = 0; k < map->params->len; k++) {
    g_autofree char *r =
        weir_range_to_string(&g_array_index(map->ranges, WeirRange, k));
    g_autofree char *p = comment_text(g_ptr_array_index(map->params, k));
    g_autofree char *rc = comment_text(r);
    g_string_append_printf(s, "%s%s in %s", k ? ", " : "", p, rc);
  }
  g_string_append_printf(s, " (%s", weir_schedule_name(map->schedule));
  for (guint k = 0; k < map->tile->len; k++) {
    gint64 t = g_array_index(map->tile, gint64, k);
    if (t > 0)
      g_string_append_printf(s, ", tile %s by %" G_GINT64_FORMAT,
                             (const char *)g_ptr_array_index(map->params, k),
                             t);
  }
  if (map->unroll > 1)
    g_string_append_printf(s, ", unroll %u", map->unroll);
  if (map->collapse > 1)
    g_string_append_printf(s, ", collapse %u", map->collapse);
  g_string_append_c(s, ')');
  return g_string_free(s, FALSE);
}

typedef struct {
  const char *var; /* C name of the loop variable */
  char *begin, *end, *step;
  gboolean unit_step;
  gboolean rect; /* bounds do not depend on the map's other loops */
  int param;     /* index of the map parameter; -1 for a tile loop */
} Loop;

/* ------------------------------------------------------------ accumulators */

/* A reduction inside a map nest, a tasklet output memlet with write-conflict
 * resolution onto one element that does not change in the innermost loops,
 * is accumulated in a local: declared before the outermost loop the element
 * does not depend on, updated by the tasklet, combined into memory after
 * that loop.  The host map is the innermost one whose parameters the
 * element depends on (or the outermost map of the nest when it depends on
 * none).  The local starts from the element when the combine is a plain
 * store (the additions happen in the same order as without it, so results
 * are bit-identical), from the neutral element when it is atomic.
 *
 * Conditions: the subset has one element; nothing else inside the host
 * reads or writes the container (other than the map exits passing this
 * write on); the loops it hoists over are not divided among threads (the
 * host's "omp parallel for" loops stay outside, and no map inside would get
 * its own); the container is not private to the host or a map inside.  An
 * element that does not depend on the host's parallel loops gets a local
 * inside them (per iteration), combined atomically. */

typedef struct {
  StateCtx *sc;
  Frame *fr;
  GArray *loops;     /* Loop of the host */
  guint n_par;       /* leading loops under "omp parallel for" */
  GHashTable *scope; /* node ids inside the host (a set) */
  GPtrArray *chain;  /* map entries between the host and the tasklet */
} AccScan;

static void scope_collect(StateCtx *sc, guint entry, GHashTable *set) {
  GArray *ch = g_hash_table_lookup(sc->children, GUINT_TO_POINTER(entry));
  for (guint k = 0; ch && k < ch->len; k++) {
    guint id = g_array_index(ch, guint, k);
    g_hash_table_add(set, GUINT_TO_POINTER(id));
    const WeirNode *n = weir_state_node(sc->s, id);
    if (n && n->kind == WEIR_NODE_MAP_ENTRY)
      scope_collect(sc, id, set);
  }
}

/* Is m the only access to its container inside the host (map exits that
 * pass writes outward aside)? */
static gboolean acc_alone(AccScan *a, const WeirMemlet *m) {
  const WeirState *s = a->sc->s;
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *e = g_ptr_array_index(s->edges, i);
    if (e == m || g_strcmp0(e->data, m->data) != 0)
      continue;
    if (!g_hash_table_contains(a->scope, GUINT_TO_POINTER(e->src)) &&
        !g_hash_table_contains(a->scope, GUINT_TO_POINTER(e->dst)))
      continue;
    const WeirNode *src = weir_state_node(s, e->src);
    const WeirNode *dst = weir_state_node(s, e->dst);
    if (!src || !dst || src->kind != WEIR_NODE_MAP_EXIT ||
        dst->kind != WEIR_NODE_MAP_EXIT)
      return FALSE;
  }
  return TRUE;
}

static void acc_consider(AccScan *a, const WeirMemlet *m) {
  Fn *f = a->sc->f;
  if (m->wcr == WEIR_WCR_NONE || !m->data || !m->subset ||
      g_hash_table_contains(a->sc->hosted, m) || !subset_is_scalar(m->subset))
    return;
  CInfo *ci = g_hash_table_lookup(f->cbyname, m->data);
  if (!ci)
    return;
  if (ci->st == ST_PRIVATE) {
    if (ci->private_map == a->fr->entry->id)
      return;
    for (guint k = 0; k < a->chain->len; k++)
      if (((const WeirNode *)g_ptr_array_index(a->chain, k))->id ==
          ci->private_map)
        return;
  }
  /* the parameters the element depends on */
  g_autoptr(GHashTable) deps =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint d = 0; d < m->subset->rank; d++) {
    const WeirRange *r = &m->subset->dims[d];
    WeirExpr *parts[] = {r->begin, r->end, r->step};
    for (guint j = 0; j < G_N_ELEMENTS(parts); j++) {
      if (!parts[j])
        continue;
      g_autoptr(GPtrArray) names = weir_expr_symbols(parts[j]);
      for (guint i = 0; i < names->len; i++)
        g_hash_table_add(deps, g_strdup(g_ptr_array_index(names, i)));
    }
  }
  Frame *fr = a->fr;
  for (guint k = 0; k < a->chain->len; k++) {
    const WeirNode *x = g_ptr_array_index(a->chain, k);
    const WeirMap *xm = x->map;
    for (guint j = 0; j < xm->params->len; j++)
      if (g_hash_table_contains(deps, g_ptr_array_index(xm->params, j)))
        return; /* a map inside hosts it */
    if (f->gen->openmp && xm->schedule == WEIR_SCHEDULE_PARALLEL &&
        !fr->in_region)
      return; /* that map will divide its loops among threads */
  }
  guint level = 0;
  const WeirMap *map = fr->entry->map;
  for (guint i = 0; i < a->loops->len; i++) {
    const Loop *l = &g_array_index(a->loops, Loop, i);
    if (l->param >= 0 &&
        g_hash_table_contains(deps, g_ptr_array_index(map->params, l->param)))
      level = i + 1;
  }
  if (level < a->n_par) /* the local lives inside the parallel loops */
    level = a->n_par;
  if (level == a->loops->len && a->chain->len == 0)
    return; /* nothing to hoist over */
  if (!acc_alone(a, m))
    return;
  Acc *acc = g_new0(Acc, 1);
  acc->m = m;
  acc->ci = ci;
  acc->level = level;
  g_autofree char *base = g_strdup_printf("%s_acc", ci->cname);
  acc->name = namer_fresh(f->names, base);
  if (!fr->accs)
    fr->accs = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(fr->accs, acc);
  g_hash_table_add(a->sc->hosted, (gpointer)m);
}

static void acc_scan(AccScan *a, guint entry) {
  StateCtx *sc = a->sc;
  GArray *ch = g_hash_table_lookup(sc->children, GUINT_TO_POINTER(entry));
  for (guint k = 0; ch && k < ch->len; k++) {
    guint id = g_array_index(ch, guint, k);
    const WeirNode *n = weir_state_node(sc->s, id);
    if (!n)
      continue;
    if (n->kind == WEIR_NODE_TASKLET) {
      for (guint i = 0; i < sc->s->edges->len; i++) {
        const WeirMemlet *m = g_ptr_array_index(sc->s->edges, i);
        if (m->src == id)
          acc_consider(a, m);
      }
    } else if (n->kind == WEIR_NODE_MAP_ENTRY) {
      g_ptr_array_add(a->chain, (gpointer)n);
      acc_scan(a, id);
      g_ptr_array_set_size(a->chain, a->chain->len - 1);
    }
  }
}

/* Declares the accumulators that start before loop `level`. */
static void acc_open(Fn *f, Out *o, GPtrArray *accs, guint level) {
  for (guint k = 0; accs && k < accs->len; k++) {
    const Acc *a = g_ptr_array_index(accs, k);
    if (a->level != level)
      continue;
    WeirDType dt = a->ci->c->dtype;
    g_autofree char *init = NULL;
    if (a->atomic) {
      init = g_strdup(wcr_identity(a->m->wcr, dt));
    } else {
      g_autoptr(GPtrArray) off = subset_offset(a->ci, a->m->subset);
      init = elem_ref(f, a->ci, off);
    }
    out_line(o, "%s %s = %s; /* %s into %s */", storage_type(dt), a->name, init,
             weir_wcr_name(a->m->wcr), a->ci->cname);
  }
}

/* Combines the accumulators that end after loop `level` into memory. */
static void acc_close(Fn *f, Out *o, GPtrArray *accs, guint level) {
  for (guint k = 0; accs && k < accs->len; k++) {
    const Acc *a = g_ptr_array_index(accs, k);
    if (a->level != level)
      continue;
    g_autoptr(GPtrArray) off = subset_offset(a->ci, a->m->subset);
    g_autofree char *lv = elem_ref(f, a->ci, off);
    if (a->atomic)
      emit_update(f, o, a->ci->c->dtype, lv, a->m->wcr, a->name, TRUE);
    else
      out_line(o, "%s = %s;", lv, a->name);
  }
}

/* Chooses the accumulators fr's map hosts (fr->accs). */
static void acc_plan(StateCtx *sc, Frame *fr, GArray *loops, guint n_par) {
  g_autoptr(GHashTable) scope = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GPtrArray) chain = g_ptr_array_new();
  scope_collect(sc, fr->entry->id, scope);
  AccScan a = {.sc = sc,
               .fr = fr,
               .loops = loops,
               .n_par = n_par,
               .scope = scope,
               .chain = chain};
  acc_scan(&a, fr->entry->id);
}

static void emit_map(StateCtx *sc, Out *o, const WeirNode *entry, Frame *up) {
  Fn *f = sc->f;
  const WeirMap *map = entry->map;
  gboolean region = FALSE, simd_above = FALSE;
  for (Frame *x = up; x; x = x->up) {
    region = region || x->par_root || x->simd;
    simd_above = simd_above || x->simd;
  }
  Frame fr = {.up = up, .entry = entry};
  fr.par_root =
      f->gen->openmp && map->schedule == WEIR_SCHEDULE_PARALLEL && !region;
  fr.simd =
      f->gen->openmp && map->schedule == WEIR_SCHEDULE_SIMD && !simd_above;
  fr.in_region = region || fr.par_root || fr.simd;

  guint np = map->params->len;
  /* loops: tile loops of tiled parameters, then one per parameter */
  g_autoptr(GArray) loops = g_array_new(FALSE, TRUE, sizeof(Loop));
  for (guint k = 0; k < np; k++) {
    const char *pname = g_ptr_array_index(map->params, k);
    const WeirRange *r = &g_array_index(map->ranges, WeirRange, k);
    gint64 tile = k < map->tile->len ? g_array_index(map->tile, gint64, k) : 0;
    if (tile <= 0)
      continue;
    g_autofree char *base = g_strdup_printf("%s_tile", pname);
    Loop l = {.var = namer_fresh(f->names, base), .rect = TRUE, .param = -1};
    g_autoptr(WeirExpr) st = weir_expr_mul_const(r->step, tile);
    l.begin = sym_text(f, r->begin);
    l.end = sym_text(f, r->end);
    l.step = sym_text(f, st);
    g_array_append_val(loops, l);
  }
  gboolean rect = TRUE;
  guint ti = 0;
  for (guint k = 0; k < np; k++) {
    const char *pname = g_ptr_array_index(map->params, k);
    const WeirRange *r = &g_array_index(map->ranges, WeirRange, k);
    gint64 tile = k < map->tile->len ? g_array_index(map->tile, gint64, k) : 0;
    Loop l = {.var = namer_get(f->names, "p", pname), .param = (int)k};
    gint64 sv;
    l.unit_step = weir_expr_is_const(r->step, &sv) && sv == 1;
    l.step = sym_text(f, r->step);
    if (tile > 0) {
      Loop *tl = &g_array_index(loops, Loop, ti++);
      g_autofree char *key = g_strdup_printf("$tile%u.%u", entry->id, k);
      g_autoptr(WeirExpr) tv = synth_symbol(f, key, tl->var);
      g_autoptr(WeirExpr) st = weir_expr_mul_const(r->step, tile);
      g_autoptr(WeirExpr) stop = weir_expr_add(tv, st);
      g_autoptr(WeirExpr) bound = weir_expr_min(stop, r->end);
      l.begin = g_strdup(tl->var);
      l.end = sym_text(f, bound);
      rect = FALSE;
    } else {
      l.begin = sym_text(f, r->begin);
      l.end = sym_text(f, r->end);
    }
    l.rect = rect;
    g_array_append_val(loops, l);
  }

  guint n_par = 0;
  if (fr.par_root) {
    /* the loops "omp parallel for" divides (as printed below) */
    guint nrect = 0;
    while (nrect < loops->len && g_array_index(loops, Loop, nrect).rect)
      nrect++;
    guint c = MAX(1, MIN(map->collapse, nrect));
    fr.n_split = loops->len == np ? c : 0;
    n_par = c;
  }
  acc_plan(sc, &fr, loops, n_par);

  /* the body first: what it contains decides the pragmas */
  Out body = out_new(0);
  GArray *children =
      g_hash_table_lookup(sc->children, GUINT_TO_POINTER(entry->id));
  if (children)
    emit_nodes(sc, &body, children, &fr);
  g_autofree char *inner = out_free(&body);
  for (guint k = 0; fr.accs && k < fr.accs->len; k++) {
    Acc *a = g_ptr_array_index(fr.accs, k);
    a->atomic = store_atomic(f, &fr, a->ci, a->m->subset);
  }
  Out decls = out_new(0);
  emit_private_decls(f, &decls, entry->id);
  g_autofree char *priv = out_free(&decls);

  g_autofree char *desc = map_description(entry);
  acc_open(f, o, fr.accs, 0);
  out_line(o, "/* %s */", desc);
  if (fr.simd && fr.simd_drop)
    out_line(o, "/* not vectorized: %s */", fr.why_drop);
  guint depth0 = o->depth;
  for (guint i = 0; i < loops->len; i++) {
    Loop *l = &g_array_index(loops, Loop, i);
    gboolean last = i + 1 == loops->len;
    if (i > 0)
      acc_open(f, o, fr.accs, i);
    if (i == 0 && fr.par_root) {
      guint c = map->collapse;
      guint nrect = 0;
      while (nrect < loops->len && g_array_index(loops, Loop, nrect).rect)
        nrect++;
      c = MIN(c, nrect);
      if (c > 1)
        out_line(o, "#pragma omp parallel for collapse(%u)", c);
      else
        out_line(o, "#pragma omp parallel for");
    }
    gboolean simd = last && fr.simd && !fr.simd_drop;
    if (simd && map->unroll > 1) /* GCC takes one of the two on a loop */
      out_line(o, "/* unroll %u left to the vectorizer */", map->unroll);
    if (simd)
      out_line(o, "#pragma omp simd");
    else if (last && map->unroll > 1)
      out_line(o, "#pragma GCC unroll %u", map->unroll);
    if (l->unit_step)
      out_line(o, "for (int64_t %s = %s; %s < %s; %s++) {", l->var, l->begin,
               l->var, l->end, l->var);
    else
      out_line(o, "for (int64_t %s = %s; %s < %s; %s += %s) {", l->var,
               l->begin, l->var, l->end, l->var, l->step);
    o->depth++;
  }
  out_paste(o, priv);
  if (loops->len > 0) /* level 0 opens before the map's comment */
    acc_open(f, o, fr.accs, loops->len);
  out_paste(o, inner);
  if (loops->len > 0) /* level 0 closes after the outermost loop */
    acc_close(f, o, fr.accs, loops->len);
  while (o->depth > depth0) {
    o->depth--;
    out_line(o, "}");
    acc_close(f, o, fr.accs, o->depth - depth0);
  }
  g_clear_pointer(&fr.accs, g_ptr_array_unref);
  for (guint i = 0; i < loops->len; i++) {
    Loop *l = &g_array_index(loops, Loop, i);
    g_free(l->begin);
    g_free(l->end);
    g_free(l->step);
  }
}

/* ---------------------------------------------------------- nested programs */

static char *fn_generate(Gen *gen, WeirGraph *g, const char *fname,
                         const char *where, const WeirNode *call,
                         const WeirMemlet *const *bind, gboolean *can_fail);

/* The dimension of the outer subset that each dimension of the nested
 * container views (G_MAXUINT: a dimension of size 1 with no counterpart),
 * as the interpreter binds views; FALSE when the dimensions cannot be
 * matched without knowing symbol values. */
static gboolean view_dims(const WeirContainer *c, const WeirSubset *sub,
                          guint *map) {
  guint r = c->shape->len;
  if (r == sub->rank) {
    for (guint d = 0; d < r; d++)
      map[d] = d;
    return TRUE;
  }
  guint o = 0;
  gint64 v;
  for (guint d = 0; d < r; d++) {
    if (weir_expr_is_const(g_ptr_array_index(c->shape, d), &v) && v == 1) {
      map[d] = G_MAXUINT;
      continue;
    }
    for (; o < sub->rank; o++) {
      g_autoptr(WeirExpr) size = weir_range_size(&sub->dims[o]);
      if (!(weir_expr_is_const(size, &v) && v == 1))
        break;
    }
    if (o == sub->rank)
      return FALSE;
    map[d] = o++;
  }
  for (; o < sub->rank; o++) {
    g_autoptr(WeirExpr) size = weir_range_size(&sub->dims[o]);
    if (!(weir_expr_is_const(size, &v) && v == 1))
      return FALSE;
  }
  return TRUE;
}

/* Labels of generated functions: alphanumerics and '_' only. */
static char *label_part(const char *label) {
  GString *s = g_string_new(NULL);
  for (const char *p = label ? label : ""; *p && s->len < 32; p++)
    g_string_append_c(s, g_ascii_isalnum(*p) ? *p : '_');
  return g_string_free(s, FALSE);
}

static void emit_nested(StateCtx *sc, Out *o, const WeirNode *n, Frame *fr) {
  Fn *f = sc->f;
  WeirGraph *ng = n->nested;
  g_autofree char *label = comment_text(n->label);
  if (!ng) {
    gen_fail(f->gen, WEIR_ERROR_INVALID,
             "%s, node %u (nested '%s'): no program", f->where, n->id, label);
    return;
  }
  guint nc = ng->containers->len;
  g_autofree const WeirMemlet **bind = g_new0(const WeirMemlet *, nc + 1);
  for (guint j = 0; j < nc; j++) {
    const WeirContainer *c = g_ptr_array_index(ng->containers, j);
    if (c->transient)
      continue;
    g_autoptr(GPtrArray) in = conn_memlets(sc->s, n->id, c->name, TRUE);
    g_autoptr(GPtrArray) out = conn_memlets(sc->s, n->id, c->name, FALSE);
    if (out->len > 1) {
      gen_fail(f->gen, WEIR_ERROR_UNSUPPORTED,
               "%s, state %u, node %u (nested '%s'): output connector '%s' "
               "has %u memlets; each nested argument binds one region",
               f->where, sc->s->id, n->id, label, c->name, out->len);
      return;
    }
    if (out->len && ((WeirMemlet *)g_ptr_array_index(out, 0))->wcr) {
      gen_fail(f->gen, WEIR_ERROR_UNSUPPORTED,
               "%s, state %u, node %u (nested '%s'): write-conflict "
               "resolution on the output '%s' of a nested program",
               f->where, sc->s->id, n->id, label, c->name);
      return;
    }
    bind[j] = in->len    ? g_ptr_array_index(in, 0)
              : out->len ? g_ptr_array_index(out, 0)
                         : NULL;
  }
  g_autofree char *lp = label_part(n->label);
  g_autofree char *base = g_strdup_printf("nested_%u_%s", n->id, lp);
  const char *fname = namer_fresh_exact(f->gen->file_names, base);
  g_autofree char *where =
      g_strdup_printf("%s, node %u (nested '%s')", f->where, n->id, label);
  gboolean can_fail = FALSE;
  g_autofree char *def =
      fn_generate(f->gen, ng, fname, where, n, bind, &can_fail);
  if (!def)
    return;
  g_string_append(f->gen->defs, def);

  GString *args = g_string_new(NULL);
  for (guint j = 0; j < nc; j++) {
    const WeirMemlet *m = bind[j];
    if (!m)
      continue;
    const WeirContainer *c = g_ptr_array_index(ng->containers, j);
    CInfo *ci = fn_container(f, m->data);
    if (!ci)
      continue;
    if (ci->c->dtype != c->dtype) {
      gen_fail(f->gen, WEIR_ERROR_INVALID,
               "%s: nested argument '%s' is %s but '%s' is %s", where, c->name,
               weir_dtype_name(c->dtype), ci->c->name,
               weir_dtype_name(ci->c->dtype));
      continue;
    }
    g_autoptr(GPtrArray) off = subset_offset(ci, m->subset);
    g_autofree char *ptr = elem_ptr(f, ci, off);
    g_string_append_printf(args, "%s%s", args->len ? ", " : "", ptr);
    guint r = c->shape->len;
    g_autofree guint *map = g_new0(guint, r + 1);
    if (!view_dims(c, m->subset, map)) {
      gen_fail(f->gen, WEIR_ERROR_UNSUPPORTED,
               "%s: the dimensions of nested argument '%s' cannot be matched "
               "with the subset of '%s'",
               where, c->name, ci->c->name);
      continue;
    }
    for (guint d = 0; d < r; d++) {
      if (map[d] == G_MAXUINT) {
        g_string_append(args, ", 0");
        continue;
      }
      g_autoptr(WeirExpr) st = weir_expr_mul(
          g_ptr_array_index(ci->strides, map[d]), m->subset->dims[map[d]].step);
      g_autofree char *t = sym_text(f, st);
      g_string_append_printf(args, ", %s", t);
    }
  }
  guint nb = n->symbol_map ? n->symbol_map->len : 0;
  for (guint k = 0; k < nb; k++) {
    const WeirSymbolBinding *b = g_ptr_array_index(n->symbol_map, k);
    g_autofree char *t = sym_text(f, b->value);
    g_string_append_printf(args, "%s%s", args->len ? ", " : "", t);
  }
  g_autofree char *a = g_string_free(args, FALSE);
  out_line(o, "/* nested program '%s' (node %u) */", label, n->id);
  if (can_fail) {
    f->uses_status = TRUE;
    if (frame_parallel(fr)) {
      for (Frame *x = fr; x; x = x->up)
        if (x->simd && !x->simd_drop) {
          x->simd_drop = TRUE;
          x->why_drop = "atomic update inside";
        }
      out_line(o, "#pragma omp atomic");
    }
    out_line(o, "status |= %s(%s);", fname, a);
  } else {
    out_line(o, "%s(%s);", fname, a);
  }
}

/* ------------------------------------------------- native implementations */

static char *native_expr_c(WeirNativeEmit *e, WeirExpr *x) {
  return sym_text(e->priv, x);
}

static void native_helper(WeirNativeEmit *e, const char *name,
                          const char *text) {
  Fn *f = e->priv;
  if (!g_hash_table_contains(f->gen->native_helpers, name))
    g_hash_table_insert(f->gen->native_helpers, g_strdup(name), g_strdup(text));
}

static void native_library(WeirNativeEmit *e, const char *name) {
  Fn *f = e->priv;
  g_hash_table_add(f->gen->libraries, g_strdup(name));
}

/* A library node left for a native implementation (weir-native.h): the
 * registered emitter prints its code with the operands' C pointers. */
static void emit_native(StateCtx *sc, Out *o, const WeirNode *n, Frame *fr) {
  Fn *f = sc->f;
  g_autofree char *label = comment_text(n->label);
  const WeirNativeImpl *ni = NULL;
  g_autoptr(GError) local = NULL;
  if (!weir_native_choice(f->g, sc->s, n, &ni, &local)) {
    gen_fail(f->gen, local->code, "%s: %s", f->where, local->message);
    return;
  }
  if (!ni || fr) {
    gen_fail(f->gen, WEIR_ERROR_UNSUPPORTED,
             "%s, state %u, node %u (library '%s'): operator '%s' is not "
             "expanded",
             f->where, sc->s->id, n->id, label, n->op ? n->op : "");
    return;
  }
  WeirNativeEmit e = {.g = f->g,
                      .s = sc->s,
                      .n = n,
                      .code = g_string_new(NULL),
                      .expr_c = native_expr_c,
                      .helper = native_helper,
                      .library = native_library,
                      .status = "status",
                      .priv = f};
  for (guint io = 0; io < 2; io++)
    for (guint k = 0; k < WEIR_NATIVE_MAX_PORTS; k++) {
      g_autofree char *conn = g_strdup_printf(io ? "out%u" : "in%u", k);
      g_autoptr(GPtrArray) ms = conn_memlets(sc->s, n->id, conn, io == 0);
      if (ms->len == 0)
        continue;
      const WeirMemlet *m = g_ptr_array_index(ms, 0);
      CInfo *ci = fn_container(f, m->data);
      if (!ci)
        continue;
      ci->used = TRUE;
      WeirNativeOperand *op = io ? &e.out[k] : &e.in[k];
      op->c = ci->c;
      op->ptr = ci->cname; /* owned by the function's namer */
    }
  if (!f->gen->error && !ni->emit(&e, &local))
    gen_fail(f->gen, local ? local->code : WEIR_ERROR_INVALID,
             "%s, state %u, node %u (library '%s'): %s", f->where, sc->s->id,
             n->id, label, local ? local->message : "emitter failed");
  if (e.uses_status)
    f->uses_status = TRUE;
  out_paste(o, e.code->str);
  g_string_free(e.code, TRUE);
}

static void emit_nodes(StateCtx *sc, Out *o, GArray *ids, Frame *fr) {
  for (guint k = 0; k < ids->len; k++) {
    const WeirNode *n = weir_state_node(sc->s, g_array_index(ids, guint, k));
    if (!n)
      continue;
    switch (n->kind) {
    case WEIR_NODE_ACCESS:
      for (guint e = 0; e < sc->s->edges->len; e++) {
        const WeirMemlet *m = g_ptr_array_index(sc->s->edges, e);
        if (m->dst != n->id || !m->data)
          continue;
        const WeirNode *src = weir_state_node(sc->s, m->src);
        if (src && src->kind == WEIR_NODE_ACCESS)
          emit_copy(sc, o, m, src, n, fr);
      }
      break;
    case WEIR_NODE_TASKLET:
      emit_tasklet(sc, o, n, fr);
      break;
    case WEIR_NODE_MAP_ENTRY:
      emit_map(sc, o, n, fr);
      break;
    case WEIR_NODE_NESTED:
      emit_nested(sc, o, n, fr);
      break;
    case WEIR_NODE_LIBRARY:
      emit_native(sc, o, n, fr);
      break;
    case WEIR_NODE_MAP_EXIT:
    case WEIR_NODE_KIND_COUNT:
      break;
    }
  }
}

/* The dataflow of one state as text at depth 0. */
static char *state_text(Fn *f, WeirState *s) {
  StateCtx sc = {0};
  Out o = out_new(0);
  if (state_ctx_init(&sc, f, s))
    emit_nodes(&sc, &o, sc.top, NULL);
  state_ctx_clear(&sc);
  return out_free(&o);
}

/* ------------------------------------------------------------ control flow */

/* Transitions leaving s in id order, up to the first unconditional one
 * (later ones are never taken).  Borrowed pointers; free the array. */
static GPtrArray *out_transitions(const WeirGraph *g, guint s) {
  GPtrArray *r = g_ptr_array_new();
  for (guint i = 0; i < g->transitions->len; i++) {
    WeirTransition *t = g_ptr_array_index(g->transitions, i);
    if (t->src != s)
      continue;
    g_ptr_array_add(r, t);
    if (!t->condition)
      break;
  }
  return r;
}

static char *cond_text(Fn *f, const WeirTransition *t, int *prec) {
  if (!t->condition || !t->condition->expr || !t->condition->checked) {
    gen_fail(f->gen, WEIR_ERROR_INVALID,
             "%s, transition %u: the condition is not type-checked", f->where,
             t->id);
    *prec = P_ATOM;
    return g_strdup("0");
  }
  return ast_truth(f, NULL, t->condition->expr, prec);
}

static const char *assign_target(Fn *f, const char *name) {
  if (!g_hash_table_contains(f->sym_written, name))
    g_hash_table_add(f->sym_written, g_strdup(name));
  return namer_get(f->names, "s", name);
}

/* The assignments as "a = x, b = y" when doing them one after the other
 * gives the simultaneous result (no value reads a symbol assigned before
 * it), else NULL. */
static char *assign_inline(Fn *f, const WeirTransition *t) {
  GString *s = g_string_new(NULL);
  for (guint a = 0; a < t->assign_names->len; a++) {
    WeirExpr *v = g_ptr_array_index(t->assign_values, a);
    g_autoptr(GPtrArray) names = weir_expr_symbols(v);
    for (guint b = 0; b < a; b++)
      for (guint i = 0; i < names->len; i++)
        if (strcmp(g_ptr_array_index(names, i),
                   g_ptr_array_index(t->assign_names, b)) == 0) {
          g_string_free(s, TRUE);
          return NULL;
        }
    g_autofree char *x = sym_text(f, v);
    g_string_append_printf(
        s, "%s%s = %s", a ? ", " : "",
        assign_target(f, g_ptr_array_index(t->assign_names, a)), x);
  }
  return g_string_free(s, FALSE);
}

static void emit_assign(Fn *f, Out *o, const WeirTransition *t) {
  guint n = t->assign_names->len;
  if (n == 0)
    return;
  g_autofree char *in = assign_inline(f, t);
  if (in) {
    for (guint a = 0; a < n; a++) {
      g_autofree char *x = sym_text(f, g_ptr_array_index(t->assign_values, a));
      out_line(o, "%s = %s;",
               assign_target(f, g_ptr_array_index(t->assign_names, a)), x);
    }
    return;
  }
  /* simultaneous: every value first */
  g_autoptr(Namer) names = namer_new(f->names);
  g_autofree const char **tmp = g_new0(const char *, n + 1);
  out_line(o, "{");
  o->depth++;
  for (guint a = 0; a < n; a++) {
    g_autofree char *base = g_strdup_printf(
        "%s_next", (const char *)g_ptr_array_index(t->assign_names, a));
    tmp[a] = namer_fresh(names, base);
    g_autofree char *x = sym_text(f, g_ptr_array_index(t->assign_values, a));
    out_line(o, "const int64_t %s = %s;", tmp[a], x);
  }
  for (guint a = 0; a < n; a++)
    out_line(o, "%s = %s;",
             assign_target(f, g_ptr_array_index(t->assign_names, a)), tmp[a]);
  o->depth--;
  out_line(o, "}");
}

static gboolean ast_same(const WeirAst *a, const WeirAst *b) {
  g_autofree char *x = weir_ast_to_string(a);
  g_autofree char *y = weir_ast_to_string(b);
  return strcmp(x, y) == 0;
}

static gboolean int_comparison(const WeirAst *n) {
  return n->kind == WEIR_AST_BINARY && n->op >= WEIR_OP_LT &&
         n->op <= WEIR_OP_NE &&
         !weir_dtype_is_float(arith_operand_type(n->a, n->b));
}

static WeirOp op_negate(WeirOp op) {
  switch (op) {
  case WEIR_OP_LT:
    return WEIR_OP_GE;
  case WEIR_OP_GE:
    return WEIR_OP_LT;
  case WEIR_OP_LE:
    return WEIR_OP_GT;
  case WEIR_OP_GT:
    return WEIR_OP_LE;
  case WEIR_OP_EQ:
    return WEIR_OP_NE;
  default:
    return WEIR_OP_EQ;
  }
}

static WeirOp op_swap(WeirOp op) {
  switch (op) {
  case WEIR_OP_LT:
    return WEIR_OP_GT;
  case WEIR_OP_GT:
    return WEIR_OP_LT;
  case WEIR_OP_LE:
    return WEIR_OP_GE;
  case WEIR_OP_GE:
    return WEIR_OP_LE;
  default:
    return op;
  }
}

/* TRUE when condition b holds exactly when a does not. */
static gboolean conditions_complement(const WeirTransition *ta,
                                      const WeirTransition *tb) {
  if (!ta->condition || !tb->condition || !ta->condition->expr ||
      !tb->condition->expr)
    return FALSE;
  const WeirAst *a = ta->condition->expr, *b = tb->condition->expr;
  if (b->kind == WEIR_AST_UNARY && b->op == WEIR_OP_NOT && ast_same(b->a, a))
    return TRUE;
  if (a->kind == WEIR_AST_UNARY && a->op == WEIR_OP_NOT && ast_same(a->a, b))
    return TRUE;
  if (!int_comparison(a) || !int_comparison(b))
    return FALSE;
  if (b->op == op_negate(a->op) && ast_same(a->a, b->a) && ast_same(a->b, b->b))
    return TRUE;
  return b->op == op_swap(op_negate(a->op)) && ast_same(a->a, b->b) &&
         ast_same(a->b, b->a);
}

/* A list of transitions covers every case (one of them is always taken). */
static gboolean transitions_total(GPtrArray *ts) {
  if (ts->len == 0)
    return FALSE;
  const WeirTransition *last = g_ptr_array_index(ts, ts->len - 1);
  if (!last->condition)
    return TRUE;
  return ts->len == 2 && conditions_complement(g_ptr_array_index(ts, 0), last);
}

typedef struct _Region Region;
struct _Region {
  const Region *up;
  guint header;         /* loop header: reaching it is "continue" (0: none) */
  guint exit;           /* loop exit: reaching it is "break" (0: none) */
  guint stop;           /* join: reaching it ends this region (0: none) */
  gboolean tail_is_end; /* falling off the region ends the program */
  gboolean incr_back;   /* for loop: the back edge's assignments are in the
                           increment clause */
};

typedef struct {
  Fn *f;
  GHashTable *text;    /* state id -> dataflow text (borrowed) */
  GHashTable *emitted; /* state ids */
  gboolean failed;     /* the graph needs gotos */
} Flow;

static gboolean region_blocks(const Region *r, guint s) {
  for (; r; r = r->up)
    if (r->header == s)
      return TRUE;
  return FALSE;
}

/* States reachable from s (s included) without entering blocked headers;
 * backwards when reverse. */
static GHashTable *reach(const WeirGraph *g, guint s, const Region *r,
                         gboolean reverse) {
  GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GArray) work = g_array_new(FALSE, FALSE, sizeof(guint));
  g_hash_table_add(seen, GUINT_TO_POINTER(s));
  g_array_append_val(work, s);
  while (work->len) {
    guint x = g_array_index(work, guint, work->len - 1);
    g_array_set_size(work, work->len - 1);
    if (x != s && region_blocks(r, x))
      continue;
    for (guint i = 0; i < g->transitions->len; i++) {
      const WeirTransition *t = g_ptr_array_index(g->transitions, i);
      guint from = reverse ? t->dst : t->src, to = reverse ? t->src : t->dst;
      if (from != x || g_hash_table_contains(seen, GUINT_TO_POINTER(to)))
        continue;
      g_hash_table_add(seen, GUINT_TO_POINTER(to));
      g_array_append_val(work, to);
    }
  }
  return seen;
}

/* s can reach itself again inside the current region. */
static gboolean is_loop_header(Flow *fl, guint s, const Region *r) {
  const WeirGraph *g = fl->f->g;
  for (guint i = 0; i < g->transitions->len; i++) {
    const WeirTransition *t = g_ptr_array_index(g->transitions, i);
    if (t->src != s)
      continue;
    if (t->dst == s)
      return TRUE;
    if (region_blocks(r, t->dst))
      continue;
    g_autoptr(GHashTable) from = reach(g, t->dst, r, FALSE);
    if (g_hash_table_contains(from, GUINT_TO_POINTER(s)))
      return TRUE;
  }
  return FALSE;
}

static void flow_seq(Flow *fl, Out *o, guint s, const Region *r,
                     gboolean at_header, const WeirTransition *via);

static void emit_done(Fn *f, Out *o) {
  f->uses_done = TRUE;
  out_line(o, "goto done;");
}

/* Taking t: a jump (continue/break) is emitted with t's assignments and
 * FALSE returned; otherwise TRUE, and the caller continues with t->dst
 * and emits the assignments. */
static gboolean flow_take(Flow *fl, Out *o, const WeirTransition *t,
                          const Region *r) {
  if (t->dst == r->header || t->dst == r->exit) {
    if (!(t->dst == r->header && r->incr_back))
      emit_assign(fl->f, o, t);
    out_line(o, t->dst == r->header ? "continue;" : "break;");
    return FALSE;
  }
  return TRUE;
}

/* The closest state every path from s passes through before leaving the
 * region (reaching its header, exit or stop, or the end of the program),
 * or 0. */
static guint find_join(Flow *fl, guint s, const Region *r) {
  const WeirGraph *g = fl->f->g;
  /* the states of the region reachable from s */
  g_autoptr(GArray) nodes = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GHashTable) index = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_array_append_val(nodes, s);
  g_hash_table_insert(index, GUINT_TO_POINTER(s), GUINT_TO_POINTER(1));
  for (guint k = 0; k < nodes->len; k++) {
    guint x = g_array_index(nodes, guint, k);
    g_autoptr(GPtrArray) ts = out_transitions(g, x);
    for (guint i = 0; i < ts->len; i++) {
      guint d = ((WeirTransition *)g_ptr_array_index(ts, i))->dst;
      if (d == r->header || d == r->exit || d == r->stop ||
          region_blocks(r, d) ||
          g_hash_table_contains(fl->emitted, GUINT_TO_POINTER(d)) ||
          g_hash_table_contains(index, GUINT_TO_POINTER(d)))
        continue;
      g_array_append_val(nodes, d);
      g_hash_table_insert(index, GUINT_TO_POINTER(d),
                          GUINT_TO_POINTER(nodes->len));
    }
  }
  guint n = nodes->len, vexit = n; /* the virtual exit */
  /* postdominator sets as an (n+1) x (n+1) matrix */
  g_autofree guint8 *pd = g_new(guint8, (n + 1) * (n + 1));
  memset(pd, 1, (n + 1) * (n + 1));
  memset(pd + vexit * (n + 1), 0, n + 1);
  pd[vexit * (n + 1) + vexit] = 1;
  g_autofree guint8 *acc = g_new(guint8, n + 1);
  gboolean changed = TRUE;
  while (changed) {
    changed = FALSE;
    for (guint k = 0; k < n; k++) {
      guint x = g_array_index(nodes, guint, k);
      g_autoptr(GPtrArray) ts = out_transitions(g, x);
      memset(acc, 1, n + 1);
      /* the end of the program when no condition holds is an exit, except
       * at s itself: that case is a separate "else goto done" */
      gboolean to_exit = k > 0 && !transitions_total(ts);
      for (guint i = 0; i < ts->len; i++) {
        guint d = ((WeirTransition *)g_ptr_array_index(ts, i))->dst;
        guint j =
            GPOINTER_TO_UINT(g_hash_table_lookup(index, GUINT_TO_POINTER(d)));
        if (j == 0 || d == s) { /* leaves the region (or loops to s) */
          to_exit = TRUE;
          continue;
        }
        for (guint y = 0; y <= n; y++)
          acc[y] &= pd[(j - 1) * (n + 1) + y];
      }
      if (to_exit)
        for (guint y = 0; y <= n; y++)
          acc[y] &= pd[vexit * (n + 1) + y];
      acc[k] = 1;
      if (memcmp(acc, pd + k * (n + 1), n + 1) != 0) {
        memcpy(pd + k * (n + 1), acc, n + 1);
        changed = TRUE;
      }
    }
  }
  /* the closest strict postdominator has the largest set */
  guint best = G_MAXUINT, best_size = 0;
  for (guint y = 0; y <= n; y++) {
    if (y == 0 || !pd[y])
      continue;
    guint size = 0;
    for (guint z = 0; z <= n; z++)
      size += pd[y * (n + 1) + z];
    if (size > best_size) {
      best = y;
      best_size = size;
    }
  }
  if (best == G_MAXUINT || best == vexit)
    return 0;
  return g_array_index(nodes, guint, best);
}

/* Emits the loop headed by h; returns the state after it (0: none). */
static guint flow_loop(Flow *fl, Out *o, guint h, const Region *r,
                       const WeirTransition *via) {
  Fn *f = fl->f;
  const WeirGraph *g = f->g;
  g_autoptr(GHashTable) fwd = reach(g, h, r, FALSE);
  g_autoptr(GHashTable) bwd = reach(g, h, r, TRUE);
  g_autoptr(GHashTable) body = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint i = 0; i < g->states->len; i++) {
    guint id = ((WeirState *)g_ptr_array_index(g->states, i))->id;
    if (g_hash_table_contains(fwd, GUINT_TO_POINTER(id)) &&
        g_hash_table_contains(bwd, GUINT_TO_POINTER(id)) &&
        (id == h || !region_blocks(r, id)))
      g_hash_table_add(body, GUINT_TO_POINTER(id));
  }
  guint exit = 0, n_exits = 0, n_entries = 0, n_back = 0;
  const WeirTransition *back = NULL;
  for (guint i = 0; i < g->transitions->len; i++) {
    const WeirTransition *t = g_ptr_array_index(g->transitions, i);
    gboolean src_in = g_hash_table_contains(body, GUINT_TO_POINTER(t->src));
    gboolean dst_in = g_hash_table_contains(body, GUINT_TO_POINTER(t->dst));
    if (dst_in && !src_in) {
      if (t->dst != h) {
        fl->failed = TRUE; /* a second entry */
        return 0;
      }
      n_entries++;
    }
    if (src_in && !dst_in) {
      if (exit && exit != t->dst) {
        fl->failed = TRUE; /* exits to two places */
        return 0;
      }
      exit = t->dst;
      n_exits++;
    }
    if (src_in && t->dst == h) {
      back = t;
      n_back++;
    }
  }
  const WeirState *hs = weir_graph_state(g, h);
  g_autofree char *label = comment_text(hs ? hs->label : "");
  Region inner = {.up = r, .header = h, .exit = exit};
  g_autoptr(GPtrArray) ts = out_transitions(g, h);
  /* while / for: an empty header whose two transitions enter the body or
   * leave the loop, the only way out */
  if (hs && hs->nodes->len == 0 && ts->len == 2 && transitions_total(ts) &&
      n_exits == 1) {
    const WeirTransition *t0 = g_ptr_array_index(ts, 0);
    const WeirTransition *t1 = g_ptr_array_index(ts, 1);
    gboolean in0 = g_hash_table_contains(body, GUINT_TO_POINTER(t0->dst));
    gboolean in1 = g_hash_table_contains(body, GUINT_TO_POINTER(t1->dst));
    if (in0 != in1) {
      const WeirTransition *tb = in0 ? t0 : t1, *tx = in0 ? t1 : t0;
      int p;
      g_autofree char *cond = NULL;
      if (tb == t0 || tb->condition) {
        cond = cond_text(f, tb, &p);
      } else {
        g_autofree char *c0 = cond_text(f, t0, &p);
        c0 = wrap(g_steal_pointer(&c0), &p, P_UNARY + 1);
        cond = g_strdup_printf("!%s", c0);
      }
      g_autofree char *init =
          via && n_entries == 1 ? assign_inline(f, via) : NULL;
      g_autofree char *incr =
          back && n_back == 1 && back != tb && tb->assign_names->len == 0
              ? assign_inline(f, back)
              : NULL;
      gboolean for_form = incr && incr[0] && (!via || init);
      g_hash_table_add(fl->emitted, GUINT_TO_POINTER(h));
      if (via && !for_form)
        emit_assign(f, o, via);
      out_line(o, "/* loop: state %u '%s' */", h, label);
      if (for_form) {
        out_line(o, "for (%s; %s; %s) {", via ? init : "", cond, incr);
        inner.incr_back = TRUE;
      } else {
        out_line(o, "while (%s) {", cond);
      }
      Out b = out_new(o->depth + 1);
      flow_seq(fl, &b, tb->dst, &inner, FALSE, tb);
      out_strip_continue(&b);
      g_autofree char *bt = out_free(&b);
      g_string_append(o->s, bt);
      out_line(o, "}");
      emit_assign(f, o, tx);
      return exit;
    }
  }
  if (via)
    emit_assign(f, o, via);
  out_line(o, "/* loop: state %u '%s' */", h, label);
  out_line(o, "for (;;) {");
  Out b = out_new(o->depth + 1);
  flow_seq(fl, &b, h, &inner, TRUE, NULL);
  out_strip_continue(&b);
  g_autofree char *bt = out_free(&b);
  g_string_append(o->s, bt);
  out_line(o, "}");
  return exit;
}

/* if / else if / else over the transitions of s; returns the join. */
static guint flow_branch(Flow *fl, Out *o, guint s, GPtrArray *ts,
                         const Region *r) {
  Fn *f = fl->f;
  gboolean total = transitions_total(ts);
  /* a branch that only jumps (continue/break) first, then the other
   * inline: "if (c) break;" */
  if (ts->len == 2 && total) {
    for (guint k = 0; k < 2; k++) {
      const WeirTransition *j = g_ptr_array_index(ts, k);
      const WeirTransition *other = g_ptr_array_index(ts, 1 - k);
      if (j->dst != r->header && j->dst != r->exit)
        continue;
      int p;
      g_autofree char *cond = NULL;
      if (k == 0 || j->condition) {
        cond = cond_text(f, j, &p);
      } else {
        g_autofree char *c0 = cond_text(f, other, &p);
        c0 = wrap(g_steal_pointer(&c0), &p, P_UNARY + 1);
        cond = g_strdup_printf("!%s", c0);
      }
      out_line(o, "if (%s) {", cond);
      o->depth++;
      flow_take(fl, o, j, r);
      o->depth--;
      out_line(o, "}");
      if (flow_take(fl, o, other, r))
        flow_seq(fl, o, other->dst, r, FALSE, other);
      return 0;
    }
  }
  guint join = find_join(fl, s, r);
  Region br = {.up = r->up,
               .header = r->header,
               .exit = r->exit,
               .stop = join,
               .incr_back = r->incr_back};
  for (guint i = 0; i < ts->len; i++) {
    const WeirTransition *t = g_ptr_array_index(ts, i);
    gboolean last = i + 1 == ts->len;
    if (i > 0 && (!t->condition || (last && total))) {
      out_line(o, "} else {");
    } else {
      int p;
      g_autofree char *cond = cond_text(f, t, &p);
      out_line(o, "%sif (%s) {", i ? "} else " : "", cond);
    }
    o->depth++;
    if (flow_take(fl, o, t, &br))
      flow_seq(fl, o, t->dst, &br, FALSE, t);
    o->depth--;
  }
  if (!total && !(r->tail_is_end && join == 0)) {
    out_line(o, "} else {");
    o->depth++;
    emit_done(f, o);
    o->depth--;
  }
  out_line(o, "}");
  return join;
}

static void flow_seq(Flow *fl, Out *o, guint s, const Region *r,
                     gboolean at_header, const WeirTransition *via) {
  Fn *f = fl->f;
  while (s && !fl->failed) {
    gboolean header_here = at_header && s == r->header;
    at_header = FALSE;
    if (!header_here) {
      if (s == r->header || s == r->exit) {
        if (!(s == r->header && r->incr_back) && via)
          emit_assign(f, o, via);
        out_line(o, s == r->header ? "continue;" : "break;");
        return;
      }
      if (s != r->stop &&
          !g_hash_table_contains(fl->emitted, GUINT_TO_POINTER(s)) &&
          is_loop_header(fl, s, r)) {
        s = flow_loop(fl, o, s, r, via);
        via = NULL;
        continue;
      }
    }
    if (via)
      emit_assign(f, o, via);
    via = NULL;
    if (s == r->stop)
      return;
    if (g_hash_table_contains(fl->emitted, GUINT_TO_POINTER(s))) {
      fl->failed = TRUE;
      return;
    }
    g_hash_table_add(fl->emitted, GUINT_TO_POINTER(s));
    const WeirState *st = weir_graph_state(f->g, s);
    g_autofree char *label = comment_text(st ? st->label : "");
    out_line(o, "/* state %u '%s' */", s, label);
    out_paste(o, g_hash_table_lookup(fl->text, GUINT_TO_POINTER(s)));
    g_autoptr(GPtrArray) ts = out_transitions(f->g, s);
    if (ts->len == 0) {
      if (!r->tail_is_end)
        emit_done(f, o);
      return;
    }
    const WeirTransition *t0 = g_ptr_array_index(ts, 0);
    if (ts->len == 1) {
      if (t0->condition) { /* else the program ends */
        int p;
        g_autofree char *c = cond_text(f, t0, &p);
        c = wrap(g_steal_pointer(&c), &p, P_UNARY + 1);
        out_line(o, "if (!%s) {", c);
        o->depth++;
        emit_done(f, o);
        o->depth--;
        out_line(o, "}");
      }
      if (!flow_take(fl, o, t0, r))
        return;
      via = t0;
      s = t0->dst;
      continue;
    }
    s = flow_branch(fl, o, s, ts, r);
  }
}

/* Fallback for any state graph: a label per state and gotos. */
static char *flow_goto(Fn *f, GHashTable *text) {
  const WeirGraph *g = f->g;
  g_autoptr(GHashTable) seen = reach(g, g->start, NULL, FALSE);
  g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
  g_array_append_val(order, g->start);
  for (guint i = 0; i < g->states->len; i++) {
    guint id = ((WeirState *)g_ptr_array_index(g->states, i))->id;
    if (id != g->start && g_hash_table_contains(seen, GUINT_TO_POINTER(id)))
      g_array_append_val(order, id);
  }
  g_autoptr(GHashTable) targets =
      g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GPtrArray) parts = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < order->len; k++) {
    guint s = g_array_index(order, guint, k);
    guint next = k + 1 < order->len ? g_array_index(order, guint, k + 1) : 0;
    const WeirState *st = weir_graph_state(g, s);
    g_autofree char *label = comment_text(st ? st->label : "");
    Out o = out_new(1);
    out_line(&o, "/* state %u '%s' */", s, label);
    out_paste(&o, g_hash_table_lookup(text, GUINT_TO_POINTER(s)));
    g_autoptr(GPtrArray) ts = out_transitions(g, s);
    gboolean always = FALSE;
    for (guint i = 0; i < ts->len; i++) {
      const WeirTransition *t = g_ptr_array_index(ts, i);
      if (t->condition) {
        int p;
        g_autofree char *c = cond_text(f, t, &p);
        out_line(&o, "if (%s) {", c);
        o.depth++;
      } else {
        always = TRUE;
      }
      emit_assign(f, &o, t);
      if (!(always && t->dst == next)) {
        out_line(&o, "goto state_%u;", t->dst);
        g_hash_table_add(targets, GUINT_TO_POINTER(t->dst));
      }
      if (t->condition) {
        o.depth--;
        out_line(&o, "}");
      }
    }
    if (!always && next)
      emit_done(f, &o);
    g_ptr_array_add(parts, out_free(&o));
  }
  GString *s = g_string_new(NULL);
  for (guint k = 0; k < order->len; k++) {
    guint id = g_array_index(order, guint, k);
    if (g_hash_table_contains(targets, GUINT_TO_POINTER(id)))
      g_string_append_printf(s, "state_%u:\n", id);
    g_string_append(s, g_ptr_array_index(parts, k));
  }
  return g_string_free(s, FALSE);
}

/* The body of a function: the states' dataflow in control flow. */
static char *flow_body(Fn *f) {
  const WeirGraph *g = f->g;
  g_autoptr(GHashTable) text =
      g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  /* states the program never reaches are left out (with what they use) */
  g_autoptr(GHashTable) reached = reach(g, g->start, NULL, FALSE);
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    if (g_hash_table_contains(reached, GUINT_TO_POINTER(s->id)))
      g_hash_table_insert(text, GUINT_TO_POINTER(s->id), state_text(f, s));
  }
  Flow fl = {.f = f, .text = text};
  fl.emitted = g_hash_table_new(g_direct_hash, g_direct_equal);
  Region top = {.tail_is_end = TRUE};
  Out o = out_new(1);
  flow_seq(&fl, &o, g->start, &top, FALSE, NULL);
  g_hash_table_unref(fl.emitted);
  if (!fl.failed)
    return out_free(&o);
  g_string_free(o.s, TRUE);
  f->uses_done = FALSE;
  return flow_goto(f, text);
}

/* -------------------------------------------------------------- containers */

/* TRUE when some memlet writes container `name` of g: one into an access
 * node of it, or an input of a nested program that writes its argument. */
static gboolean graph_writes(const WeirGraph *g, const char *name) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint e = 0; e < s->edges->len; e++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, e);
      if (!m->data)
        continue;
      const WeirNode *d = weir_state_node(s, m->dst);
      if (!d)
        continue;
      if (d->kind == WEIR_NODE_ACCESS && g_strcmp0(d->data, name) == 0)
        return TRUE;
      if (d->kind == WEIR_NODE_NESTED && d->nested && m->dst_conn &&
          g_strcmp0(m->data, name) == 0 && graph_writes(d->nested, m->dst_conn))
        return TRUE;
    }
  }
  return FALSE;
}

/* Elements the storage of c spans: its volume when row-major, else one
 * more than the offset of the last element. */
static WeirExpr *storage_span(const WeirContainer *c) {
  if (is_row_major(c))
    return weir_container_volume(c);
  WeirExpr *acc = weir_expr_const(1);
  for (guint d = 0; d < c->shape->len; d++) {
    gint64 v;
    if (weir_expr_is_const(g_ptr_array_index(c->shape, d), &v) && v == 0) {
      weir_expr_unref(acc);
      return weir_expr_const(0);
    }
    g_autoptr(WeirExpr) last =
        weir_expr_add_const(g_ptr_array_index(c->shape, d), -1);
    g_autoptr(WeirExpr) t =
        weir_expr_mul(last, g_ptr_array_index(c->strides, d));
    WeirExpr *next = weir_expr_add(acc, t);
    weir_expr_unref(acc);
    acc = next;
  }
  return acc;
}

/* The scope (map entry id) that runs the memlet. */
static guint memlet_scope(const WeirState *s, const WeirScopes *sc,
                          const WeirMemlet *m) {
  const WeirNode *src = weir_state_node(s, m->src);
  const WeirNode *dst = weir_state_node(s, m->dst);
  if (src && src->kind == WEIR_NODE_MAP_ENTRY)
    return src->id;
  if (dst && dst->kind == WEIR_NODE_MAP_EXIT)
    return dst->entry;
  return weir_scopes_parent(sc, m->src);
}

/* Deepest common enclosing scope of scopes a and b (0: top level). */
static guint common_scope(const WeirScopes *sc, guint a, guint b) {
  for (guint x = a;; x = weir_scopes_parent(sc, x)) {
    for (guint y = b;; y = weir_scopes_parent(sc, y)) {
      if (x == y)
        return x;
      if (y == 0)
        break;
    }
    if (x == 0)
      return 0;
  }
}

/* The map whose body can declare transient c privately: c is used in one
 * state only, every use is inside that map, and the map runs inside a
 * parallel or simd loop (so a shared copy would be a data race).  0 when
 * there is none. */
static guint private_scope(Fn *f, const WeirContainer *c,
                           GPtrArray *scopes /* WeirScopes* per state */) {
  if (!f->gen->openmp)
    return 0;
  guint found = 0, where = 0;
  const WeirState *in = NULL;
  const WeirScopes *in_sc = NULL;
  for (guint i = 0; i < f->g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(f->g->states, i);
    const WeirScopes *sc = g_ptr_array_index(scopes, i);
    gboolean touched = FALSE;
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_ACCESS || g_strcmp0(n->data, c->name) != 0)
        continue;
      if (!sc)
        return 0;
      guint x = weir_scopes_parent(sc, n->id);
      where = touched || found ? common_scope(sc, where, x) : x;
      touched = TRUE;
      found = 1;
    }
    for (guint e = 0; e < s->edges->len; e++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, e);
      if (g_strcmp0(m->data, c->name) != 0)
        continue;
      if (!sc)
        return 0;
      guint x = memlet_scope(s, sc, m);
      where = touched || found ? common_scope(sc, where, x) : x;
      touched = TRUE;
      found = 1;
    }
    if (touched) {
      if (in)
        return 0; /* used in two states */
      in = s;
      in_sc = sc;
    }
  }
  if (!in || where == 0)
    return 0;
  for (guint x = where; x; x = weir_scopes_parent(in_sc, x)) {
    const WeirNode *e = weir_state_node(in, x);
    if (e && e->map && e->map->schedule != WEIR_SCHEDULE_SEQUENTIAL)
      return where;
  }
  return 0;
}

/* Decides the storage of every container (see Storage). */
static void fn_classify(Fn *f, const WeirMemlet *const *bind) {
  WeirGraph *g = f->g;
  g_autoptr(GPtrArray) scopes =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_scopes_free);
  for (guint i = 0; i < g->states->len; i++)
    g_ptr_array_add(scopes,
                    weir_state_scopes(g_ptr_array_index(g->states, i), NULL));
  gint64 stack_used = 0;
  guint arg_k = 0;
  for (guint j = 0; j < g->containers->len; j++) {
    WeirContainer *c = g_ptr_array_index(g->containers, j);
    CInfo *ci = g_new0(CInfo, 1);
    g_ptr_array_add(f->cinfo, ci);
    g_hash_table_insert(f->cbyname, c->name, ci);
    ci->c = c;
    ci->cname = namer_get(f->names, "c", c->name);
    ci->written = graph_writes(g, c->name);
    ci->strides =
        g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
    for (guint d = 0; d < c->strides->len; d++)
      g_ptr_array_add(ci->strides,
                      weir_expr_ref(g_ptr_array_index(c->strides, d)));
    if (f->entry && !c->transient && !c->initial) {
      ci->st = ST_ARG;
      ci->arg_index = arg_k++;
      continue;
    }
    if (!f->entry && !c->transient && bind && bind[j]) {
      ci->st = ST_VIEW;
      g_ptr_array_set_size(ci->strides, 0);
      for (guint d = 0; d < c->shape->len; d++) {
        g_autofree char *key = g_strdup_printf("$%u.s%u", j, d);
        g_autofree char *base = g_strdup_printf("%s_s%u", ci->cname, d);
        const char *cname = namer_fresh(f->names, base);
        g_ptr_array_add(ci->strides, synth_symbol(f, key, cname));
      }
      continue;
    }
    if (!c->transient && !c->initial) {
      gen_fail(f->gen, WEIR_ERROR_INVALID,
               "%s: argument '%s' of the nested program is not connected",
               f->where, c->name);
      continue;
    }
    if (c->initial && !ci->written && is_row_major(c)) {
      ci->st = ST_CONST;
      continue;
    }
    ci->init = c->initial != NULL;
    ci->span = storage_span(c);
    gint64 span;
    gboolean fixed = weir_expr_is_const(ci->span, &span);
    gint64 bytes = fixed ? span * (gint64)weir_dtype_size(c->dtype) : -1;
    guint pm = c->initial ? 0 : private_scope(f, c, scopes);
    if (pm && fixed && bytes <= STACK_MAX) {
      ci->st = ST_PRIVATE;
      ci->private_map = pm;
    } else if (fixed && bytes <= STACK_MAX &&
               stack_used + bytes <= STACK_BUDGET) {
      ci->st = ST_STACK;
      stack_used += bytes;
    } else {
      ci->st = ST_ARENA;
    }
  }
}

/* Constant data as a C initializer list, 8 values per line at depth. */
static void emit_data(Out *o, const WeirContainer *c) {
  gsize size;
  const guint8 *data = g_bytes_get_data(c->initial, &size);
  gsize es = weir_dtype_size(c->dtype);
  gsize n = es ? size / es : 0;
  GString *line = g_string_new(NULL);
  for (gsize i = 0; i < n; i++) {
    const guint8 *p = data + i * es;
    WeirValue v = {.type = c->dtype};
    switch (c->dtype) {
    case WEIR_DTYPE_F32: {
      guint32 bits;
      float x;
      memcpy(&bits, p, 4);
      bits = GUINT32_FROM_LE(bits);
      memcpy(&x, &bits, 4);
      v.f = x;
      break;
    }
    case WEIR_DTYPE_F64: {
      guint64 bits;
      memcpy(&bits, p, 8);
      bits = GUINT64_FROM_LE(bits);
      memcpy(&v.f, &bits, 8);
      break;
    }
    case WEIR_DTYPE_I32: {
      guint32 bits;
      memcpy(&bits, p, 4);
      v.i = (gint32)GUINT32_FROM_LE(bits);
      break;
    }
    case WEIR_DTYPE_I64: {
      guint64 bits;
      memcpy(&bits, p, 8);
      v.i = (gint64)GUINT64_FROM_LE(bits);
      break;
    }
    case WEIR_DTYPE_BOOL:
    case WEIR_DTYPE_U8:
      v.i = *p;
      break;
    case WEIR_DTYPE_COUNT:
      break;
    }
    int prec;
    g_autofree char *t = c->dtype == WEIR_DTYPE_BOOL ? g_strdup(v.i ? "1" : "0")
                                                     : format_value(v, &prec);
    g_string_append_printf(line, "%s%s,", line->len ? " " : "", t);
    if ((i + 1) % 8 == 0 || i + 1 == n) {
      out_line(o, "%s", line->str);
      g_string_truncate(line, 0);
    }
  }
  g_string_free(line, TRUE);
}

static char *shape_text(const WeirContainer *c) {
  GString *s = g_string_new(weir_dtype_name(c->dtype));
  g_string_append_c(s, '[');
  for (guint d = 0; d < c->shape->len; d++) {
    g_autofree char *x = weir_expr_to_string(g_ptr_array_index(c->shape, d));
    g_string_append_printf(s, "%s%s", d ? ", " : "", x);
  }
  g_string_append_c(s, ']');
  if (!is_row_major(c)) {
    g_string_append(s, " strides [");
    for (guint d = 0; d < c->strides->len; d++) {
      g_autofree char *x =
          weir_expr_to_string(g_ptr_array_index(c->strides, d));
      g_string_append_printf(s, "%s%s", d ? ", " : "", x);
    }
    g_string_append_c(s, ']');
  }
  g_autofree char *raw = g_string_free(s, FALSE);
  return sanitize_comment(raw);
}

/* Copies constant data (row-major) into storage with other strides. */
static void emit_init_loops(Fn *f, Out *o, CInfo *ci, const char *src) {
  const WeirContainer *c = ci->c;
  guint r = c->shape->len;
  g_autoptr(Namer) names = namer_new(f->names);
  g_autofree WeirExpr **idx = g_new0(WeirExpr *, r + 1);
  guint depth0 = o->depth;
  g_autoptr(WeirExpr) lin = weir_expr_const(0);
  for (guint d = 0; d < r; d++) {
    g_autofree char *base = g_strdup_printf("k%u", d);
    const char *v = namer_fresh(names, base);
    g_autofree char *key = g_strdup_printf("$init%u.%u", c->id, d);
    idx[d] = synth_symbol(f, key, v);
    g_autofree char *bound = sym_text(f, g_ptr_array_index(c->shape, d));
    out_line(o, "for (int64_t %s = 0; %s < %s; %s++) {", v, v, bound, v);
    o->depth++;
    WeirExpr *x = weir_expr_mul(lin, g_ptr_array_index(c->shape, d));
    WeirExpr *y = weir_expr_add(x, idx[d]);
    weir_expr_unref(x);
    weir_expr_unref(lin);
    lin = y;
  }
  g_autoptr(GPtrArray) off = elem_offset(ci, idx);
  g_autofree char *dst = elem_ref(f, ci, off);
  g_autofree char *l = sym_text(f, lin);
  out_line(o, "%s = %s[%s];", dst, src, l);
  while (o->depth > depth0) {
    o->depth--;
    out_line(o, "}");
  }
  free_exprs(g_steal_pointer(&idx), r);
}

/* Declarations of the containers the body uses (constants, stack, arena)
 * and the copies of their initial data.  *arena: an arena was allocated. */
/* ------------------------------------------------------------ zero fill */

static gboolean expr_is_zero(WeirExpr *e) {
  gint64 v;
  return weir_expr_is_const(e, &v) && v == 0;
}

static const WeirNode *state_node(const WeirState *s, guint id) {
  for (guint k = 0; k < s->nodes->len; k++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->id == id)
      return n;
  }
  return NULL;
}

/* TRUE when the map exit x writes every element of c through its output
 * connector out_conn exactly once per execution: the memlet into x is a
 * tasklet's, without conflict resolution, to the element [p0, p1, ...] for
 * distinct parameters of the map whose ranges are 0:dim:1 of c (tasklets
 * assign every output on every execution). */
static gboolean map_writes_all(const WeirState *s, const WeirNode *x,
                               const char *out_conn, const WeirContainer *c) {
  if (!out_conn || !g_str_has_prefix(out_conn, "OUT_"))
    return FALSE;
  const WeirNode *entry = state_node(s, x->entry);
  if (!entry || !entry->map || entry->map->params->len != c->shape->len)
    return FALSE;
  const WeirMap *map = entry->map;
  g_autofree char *in_conn = g_strconcat("IN_", out_conn + 4, NULL);
  const WeirMemlet *inner = NULL;
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->dst == x->id && g_strcmp0(m->dst_conn, in_conn) == 0) {
      if (inner)
        return FALSE;
      inner = m;
    }
  }
  if (!inner || inner->wcr != WEIR_WCR_NONE || !inner->subset ||
      inner->subset->rank != c->shape->len)
    return FALSE;
  const WeirNode *src = state_node(s, inner->src);
  if (!src || src->kind != WEIR_NODE_TASKLET)
    return FALSE;
  g_autofree gboolean *seen = g_new0(gboolean, map->params->len + 1);
  for (guint d = 0; d < inner->subset->rank; d++) {
    const WeirRange *r = &inner->subset->dims[d];
    g_autoptr(WeirExpr) size = weir_range_size(r);
    gint64 one;
    if (weir_expr_kind(r->begin) != WEIR_EXPR_SYMBOL ||
        !weir_expr_is_const(size, &one) || one != 1)
      return FALSE;
    const char *p = weir_expr_symbol_name(r->begin);
    guint k = 0;
    while (k < map->params->len &&
           strcmp(g_ptr_array_index(map->params, k), p) != 0)
      k++;
    if (k == map->params->len || seen[k])
      return FALSE;
    seen[k] = TRUE;
    const WeirRange *mr = &g_array_index(map->ranges, WeirRange, k);
    gint64 st;
    if (!expr_is_zero(mr->begin) ||
        !weir_expr_equal(mr->end, g_ptr_array_index(c->shape, d)) ||
        !weir_expr_is_const(mr->step, &st) || st != 1)
      return FALSE;
  }
  return TRUE;
}

/* TRUE when transient c needs no zero fill: it has one access node in the
 * whole program (top level), written by one producer that writes all of it
 * without conflict resolution (a map as in map_writes_all, or a native
 * Gemm/MatMul/Conv), so every execution of that state writes it before
 * anything reads it (readers hang off the same access node). */
static gboolean needs_no_zero_fill(const WeirGraph *g, const WeirContainer *c) {
  const WeirState *where = NULL;
  const WeirNode *acc = NULL;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, c->name) == 0) {
        if (acc)
          return FALSE;
        acc = n;
        where = s;
      }
    }
  }
  if (!acc)
    return FALSE;
  const WeirMemlet *w = NULL;
  for (guint i = 0; i < where->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(where->edges, i);
    if (m->dst != acc->id)
      continue;
    if (w || !m->data)
      return FALSE;
    w = m;
  }
  if (!w || w->wcr != WEIR_WCR_NONE || g_strcmp0(w->data, c->name) != 0 ||
      w->other || !w->subset || !subset_is_whole(w->subset, c))
    return FALSE;
  const WeirNode *p = state_node(where, w->src);
  if (!p)
    return FALSE;
  if (p->kind == WEIR_NODE_MAP_EXIT)
    return map_writes_all(where, p, w->src_conn, c);
  if (p->kind == WEIR_NODE_LIBRARY &&
      (g_strcmp0(p->op, "Gemm") == 0 || g_strcmp0(p->op, "MatMul") == 0 ||
       g_strcmp0(p->op, "Conv") == 0) &&
      g_strcmp0(w->src_conn, "out0") == 0) {
    const WeirNativeImpl *ni = NULL;
    return weir_native_choice(g, where, p, &ni, NULL) && ni;
  }
  return FALSE;
}

static char *fn_storage(Fn *f, gboolean *arena) {
  Out o = out_new(1);
  *arena = FALSE;
  g_autoptr(GPtrArray) inits = g_ptr_array_new();
  g_autoptr(GPtrArray) init_names = g_ptr_array_new();
  for (guint j = 0; j < f->cinfo->len; j++) {
    CInfo *ci = g_ptr_array_index(f->cinfo, j);
    const WeirContainer *c = ci->c;
    if (!ci->used || !(ci->st == ST_CONST || ci->init))
      continue;
    g_autoptr(WeirExpr) vol = weir_container_volume(c);
    gint64 n = 1;
    weir_expr_is_const(vol, &n);
    const char *name = ci->cname;
    if (ci->init) {
      g_autofree char *base = g_strdup_printf("%s_init", ci->cname);
      name = namer_fresh(f->names, base);
      g_ptr_array_add(inits, ci);
      g_ptr_array_add(init_names, (gpointer)name);
    }
    g_autofree char *sh = shape_text(c);
    out_line(&o, "/* %s: %s */", ci->cname, sh);
    out_line(&o, "static const %s %s[%" G_GINT64_FORMAT "] = {",
             storage_type(c->dtype), name, n > 0 ? n : 1);
    o.depth++;
    if (n > 0)
      emit_data(&o, c);
    else
      out_line(&o, "0,");
    o.depth--;
    out_line(&o, "};");
  }
  for (guint j = 0; j < f->cinfo->len; j++) {
    CInfo *ci = g_ptr_array_index(f->cinfo, j);
    if (!ci->used || ci->st != ST_STACK)
      continue;
    gint64 span = 1;
    weir_expr_is_const(ci->span, &span);
    g_autofree char *sh = shape_text(ci->c);
    out_line(&o, "%s %s[%" G_GINT64_FORMAT "] = {0}; /* %s */",
             storage_type(ci->c->dtype), ci->cname, span > 0 ? span : 1, sh);
  }
  /* the arena: one block per transient, each 64-byte aligned */
  g_autoptr(GPtrArray) blocks = g_ptr_array_new();
  gboolean fixed = TRUE;
  for (guint j = 0; j < f->cinfo->len; j++) {
    CInfo *ci = g_ptr_array_index(f->cinfo, j);
    if (!ci->used || ci->st != ST_ARENA)
      continue;
    g_ptr_array_add(blocks, ci);
    gint64 v;
    fixed = fixed && weir_expr_is_const(ci->span, &v);
  }
  if (blocks->len) {
    *arena = TRUE;
    g_autoptr(GPtrArray) offsets = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) sizes = g_ptr_array_new_with_free_func(g_free);
    char *total;
    if (fixed) {
      gint64 at = 0;
      for (guint b = 0; b < blocks->len; b++) {
        CInfo *ci = g_ptr_array_index(blocks, b);
        gint64 span;
        weir_expr_is_const(ci->span, &span);
        g_ptr_array_add(offsets, g_strdup_printf("%" G_GINT64_FORMAT, at));
        gint64 bytes =
            (span > 0 ? span : 0) * (gint64)weir_dtype_size(ci->c->dtype);
        g_ptr_array_add(sizes, g_strdup_printf("%" G_GINT64_FORMAT, bytes));
        at += (bytes + 63) / 64 * 64;
      }
      total = g_strdup_printf("%" G_GINT64_FORMAT, at > 0 ? at : 64);
    } else {
      g_autofree char *align = helper(f->gen, H_ALIGN64, WEIR_DTYPE_I64);
      GString *sum = g_string_new(NULL);
      for (guint b = 0; b < blocks->len; b++) {
        CInfo *ci = g_ptr_array_index(blocks, b);
        g_ptr_array_add(offsets, g_strdup(sum->len ? sum->str : "0"));
        g_autofree char *base = g_strdup_printf("%s_bytes", ci->cname);
        const char *bn = namer_fresh(f->names, base);
        int p;
        g_autofree char *span = wrap(sym_c(f, ci->span, &p), &p, P_UNARY);
        out_line(&o, "const size_t %s = %s((size_t)%s * sizeof(%s));", bn,
                 align, span, storage_type(ci->c->dtype));
        g_ptr_array_add(sizes, g_strdup(bn));
        g_string_append_printf(sum, "%s%s", sum->len ? " + " : "", bn);
      }
      const char *tn = namer_fresh(f->names, "arena_bytes");
      out_line(&o, "const size_t %s = %s;", tn, sum->str);
      g_string_free(sum, TRUE);
      total = g_strdup_printf("%s > 0 ? %s : 64", tn, tn);
    }
    out_line(&o, "unsigned char *const arena = aligned_alloc(64, %s);", total);
    out_line(&o, "if (!arena) {");
    out_line(&o, "  return 1;");
    out_line(&o, "}");
    /* transients start zero-filled, except those that are written whole
     * before anything reads them (needs_no_zero_fill) */
    guint zero = 0;
    g_autofree gboolean *fill = g_new0(gboolean, blocks->len + 1);
    for (guint b = 0; b < blocks->len; b++) {
      CInfo *ci = g_ptr_array_index(blocks, b);
      fill[b] = ci->init || !needs_no_zero_fill(f->g, ci->c);
      zero += fill[b];
    }
    if (zero == blocks->len)
      out_line(&o, "memset(arena, 0, %s);", total);
    else
      for (guint b = 0; b < blocks->len; b++) {
        CInfo *ci = g_ptr_array_index(blocks, b);
        const char *at = g_ptr_array_index(offsets, b);
        const char *bytes = g_ptr_array_index(sizes, b);
        if (!fill[b])
          out_line(&o, "/* %s: written whole before it is read */", ci->cname);
        else if (strcmp(at, "0") == 0)
          out_line(&o, "memset(arena, 0, %s);", bytes);
        else
          out_line(&o, "memset(arena + %s, 0, %s);", at, bytes);
      }
    g_free(total);
    for (guint b = 0; b < blocks->len; b++) {
      CInfo *ci = g_ptr_array_index(blocks, b);
      const char *at = g_ptr_array_index(offsets, b);
      const char *ty = storage_type(ci->c->dtype);
      g_autofree char *sh = shape_text(ci->c);
      if (strcmp(at, "0") == 0)
        out_line(&o, "%s *const %s = (%s *)arena; /* %s */", ty, ci->cname, ty,
                 sh);
      else
        out_line(&o, "%s *const %s = (%s *)(arena + %s); /* %s */", ty,
                 ci->cname, ty, at, sh);
    }
  }
  for (guint k = 0; k < inits->len; k++) {
    CInfo *ci = g_ptr_array_index(inits, k);
    const char *src = g_ptr_array_index(init_names, k);
    if (is_row_major(ci->c))
      out_line(&o, "memcpy(%s, %s, sizeof %s);", ci->cname, src, src);
    else
      emit_init_loops(f, &o, ci, src);
  }
  return out_free(&o);
}

/* ---------------------------------------------------------------- functions */

static Fn *fn_new(Gen *gen, WeirGraph *g, gboolean entry, const char *fname,
                  const char *where) {
  Fn *f = g_new0(Fn, 1);
  f->gen = gen;
  f->g = g;
  f->entry = entry;
  f->fname = g_strdup(fname);
  f->where = g_strdup(where);
  f->names = namer_new(NULL);
  f->cinfo = g_ptr_array_new_with_free_func(cinfo_free);
  f->cbyname = g_hash_table_new(g_str_hash, g_str_equal);
  f->synth = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  f->params = g_hash_table_new(g_str_hash, g_str_equal);
  f->assigned = g_hash_table_new(g_str_hash, g_str_equal);
  f->sym_used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  f->sym_written = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  f->synth_used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  /* names in a fixed order: containers, symbols, map parameters */
  for (guint j = 0; j < g->containers->len; j++)
    namer_get(f->names, "c",
              ((WeirContainer *)g_ptr_array_index(g->containers, j))->name);
  for (guint k = 0; k < g->symbols->len; k++)
    namer_get(f->names, "s", g_ptr_array_index(g->symbols, k));
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_MAP_ENTRY || !n->map)
        continue;
      for (guint p = 0; p < n->map->params->len; p++) {
        const char *name = g_ptr_array_index(n->map->params, p);
        g_hash_table_add(f->params, (gpointer)name);
        namer_get(f->names, "p", name);
      }
    }
  }
  for (guint i = 0; i < g->transitions->len; i++) {
    WeirTransition *t = g_ptr_array_index(g->transitions, i);
    for (guint a = 0; a < t->assign_names->len; a++)
      g_hash_table_add(f->assigned, g_ptr_array_index(t->assign_names, a));
  }
  return f;
}

/* A symbol's declaration when the body uses it: a parameter of a nested
 * function (bound), or a local. */
static void emit_symbol_decl(Fn *f, Out *o, guint k, const char *name,
                             gboolean bound) {
  gboolean read = g_hash_table_contains(f->sym_used, name);
  gboolean written = g_hash_table_contains(f->sym_written, name);
  const char *c = namer_get(f->names, "s", name);
  if (bound) {
    if (!read && !written)
      out_line(o, "(void)%s;", c);
    return;
  }
  if (!read && !written)
    return;
  if (f->entry && !g_hash_table_contains(f->assigned, name))
    out_line(o, "const int64_t %s = symbols[%u];", c, k);
  else
    out_line(o, "int64_t %s = 0;%s", c,
             g_hash_table_contains(f->assigned, name)
                 ? " /* assigned by transitions */"
                 : "");
  if (!read)
    out_line(o, "(void)%s;", c);
}

/* The layout of a container is fixed on entry: its shape and strides may
 * not use a symbol that transitions assign (that symbol is 0 on entry). */
static void fn_check_layouts(Fn *f) {
  for (guint j = 0; j < f->cinfo->len; j++) {
    const CInfo *ci = g_ptr_array_index(f->cinfo, j);
    if (!ci->used)
      continue;
    const WeirContainer *c = ci->c;
    for (guint d = 0; d < 2 * c->shape->len; d++) {
      WeirExpr *e = d < c->shape->len
                        ? g_ptr_array_index(c->shape, d)
                        : g_ptr_array_index(c->strides, d - c->shape->len);
      g_autoptr(GPtrArray) names = weir_expr_symbols(e);
      for (guint i = 0; i < names->len; i++) {
        const char *name = g_ptr_array_index(names, i);
        if (g_hash_table_contains(f->assigned, name))
          gen_fail(f->gen, WEIR_ERROR_UNSUPPORTED,
                   "%s: the layout of container '%s' uses symbol '%s', "
                   "which transitions assign",
                   f->where, c->name, name);
      }
    }
  }
}

/* Generates the function for program g (the entry point when call is
 * NULL, else the nested program of node call with arguments bind).
 * Returns its definition, or NULL after an error (in gen). */
static char *fn_generate(Gen *gen, WeirGraph *g, const char *fname,
                         const char *where, const WeirNode *call,
                         const WeirMemlet *const *bind, gboolean *can_fail) {
  g_autoptr(Fn) f = fn_new(gen, g, call == NULL, fname, where);
  fn_classify(f, bind);
  if (gen->error)
    return NULL;
  g_autofree char *body = flow_body(f);
  gboolean arena = FALSE;
  g_autofree char *storage = fn_storage(f, &arena);
  fn_check_layouts(f);
  *can_fail = arena || f->uses_status;

  GString *s = g_string_new(NULL);
  Out o = {s, 1};
  /* signature */
  if (f->entry) {
    g_string_append_printf(
        s, "int %s(void *const args[], const int64_t symbols[]) {\n", fname);
  } else {
    GString *params = g_string_new(NULL);
    for (guint j = 0; j < f->cinfo->len; j++) {
      CInfo *ci = g_ptr_array_index(f->cinfo, j);
      if (ci->st != ST_VIEW)
        continue;
      g_string_append_printf(params, "%s%s%s *%s", params->len ? ", " : "",
                             ci->written ? "" : "const ",
                             storage_type(ci->c->dtype), ci->cname);
      for (guint d = 0; d < ci->strides->len; d++)
        g_string_append_printf(
            params, ", int64_t %s",
            fn_symbol(
                f, weir_expr_symbol_name(g_ptr_array_index(ci->strides, d))));
    }
    guint nb = call->symbol_map ? call->symbol_map->len : 0;
    for (guint k = 0; k < nb; k++) {
      const WeirSymbolBinding *b = g_ptr_array_index(call->symbol_map, k);
      g_string_append_printf(params, "%sint64_t %s", params->len ? ", " : "",
                             namer_get(f->names, "s", b->name));
    }
    g_string_append_printf(s, "static %s %s(%s) {\n",
                           *can_fail ? "int" : "void", fname,
                           params->len ? params->str : "void");
    g_string_free(params, TRUE);
  }
  /* symbols */
  gboolean any_symbol = FALSE;
  for (guint k = 0; k < g->symbols->len; k++) {
    const char *name = g_ptr_array_index(g->symbols, k);
    gboolean bound = FALSE;
    guint nb = call && call->symbol_map ? call->symbol_map->len : 0;
    for (guint b = 0; b < nb; b++)
      bound =
          bound ||
          strcmp(((WeirSymbolBinding *)g_ptr_array_index(call->symbol_map, b))
                     ->name,
                 name) == 0;
    emit_symbol_decl(f, &o, k, name, bound);
    any_symbol =
        any_symbol || (f->entry && !g_hash_table_contains(f->assigned, name) &&
                       (g_hash_table_contains(f->sym_used, name) ||
                        g_hash_table_contains(f->sym_written, name)));
  }
  /* arguments */
  gboolean any_arg = FALSE;
  for (guint j = 0; j < f->cinfo->len; j++) {
    CInfo *ci = g_ptr_array_index(f->cinfo, j);
    const char *ty = storage_type(ci->c->dtype);
    if (ci->st == ST_ARG && ci->used) {
      const char *q = ci->written ? "" : "const ";
      out_line(&o, "%s%s *const %s = (%s%s *)args[%u];", q, ty, ci->cname, q,
               ty, ci->arg_index);
      any_arg = TRUE;
    }
    if (ci->st == ST_VIEW) {
      if (!ci->used)
        out_line(&o, "(void)%s;", ci->cname);
      for (guint d = 0; d < ci->strides->len; d++) {
        const char *key =
            weir_expr_symbol_name(g_ptr_array_index(ci->strides, d));
        if (!g_hash_table_contains(f->synth_used, key) || !ci->used)
          out_line(&o, "(void)%s;",
                   (const char *)g_hash_table_lookup(f->synth, key));
      }
    }
  }
  if (f->entry && !any_arg)
    out_line(&o, "(void)args;");
  if (f->entry && !any_symbol)
    out_line(&o, "(void)symbols;");
  g_string_append(s, storage);
  if (f->uses_status)
    out_line(&o, "int status = 0;");
  g_string_append(s, body);
  if (f->uses_done)
    g_string_append(s, "done:\n");
  if (arena)
    out_line(&o, "free(arena);");
  if (*can_fail || f->entry)
    out_line(&o, "return %s;", f->uses_status ? "status" : "0");
  else if (f->uses_done)
    out_line(&o, "return;");
  g_string_append(s, "}\n\n");
  return g_string_free(s, FALSE);
}

/* ------------------------------------------------------------------ the API */

char *weir_codegen_prefix(const WeirGraph *g) {
  g_return_val_if_fail(g != NULL, NULL);
  return sanitize_identifier(g->name);
}

GPtrArray *weir_codegen_arguments(const WeirGraph *g) {
  g_return_val_if_fail(g != NULL, NULL);
  GPtrArray *a = g_ptr_array_new();
  for (guint i = 0; i < g->containers->len; i++) {
    WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (!c->transient && !c->initial)
      g_ptr_array_add(a, c);
  }
  return a;
}

/* The comment that opens the source and the header. */
static void describe_abi(GString *s, const WeirGraph *g, const char *prefix,
                         const char *file) {
  g_autofree char *name = sanitize_comment(g->name);
  g_autofree char *sprefix = sanitize_comment(prefix);
  g_string_append_printf(s,
                         "/* %s: program '%s', generated by Weir %s.\n"
                         " *\n"
                         " * Entry point (Weir generated-code ABI %d):\n"
                         " *   int %s_run(void *const args[], const int64_t "
                         "symbols[]);\n"
                         " * returns 0 on success and non-zero when memory "
                         "for transients cannot\n"
                         " * be allocated; %s_abi_version() returns %d.\n",
                         file, name, weir_version(), WEIR_CODEGEN_ABI_VERSION,
                         sprefix, sprefix, WEIR_CODEGEN_ABI_VERSION);
  g_autoptr(GPtrArray) args = weir_codegen_arguments(g);
  g_string_append(s, " *\n * Arguments: args[k] points to the elements of");
  if (args->len == 0)
    g_string_append(s, " (none)");
  g_string_append(s, "\n");
  for (guint k = 0; k < args->len; k++) {
    const WeirContainer *c = g_ptr_array_index(args, k);
    g_autofree char *cn = sanitize_comment(c->name);
    g_autofree char *sh = shape_text(c);
    g_string_append_printf(s, " *   args[%u]  %s  %s\n", k, cn, sh);
  }
  g_string_append(s, " * Symbols: symbols[k] is the value of");
  if (g->symbols->len == 0)
    g_string_append(s, " (none)");
  g_string_append(s, "\n");
  for (guint k = 0; k < g->symbols->len; k++) {
    const char *sym = g_ptr_array_index(g->symbols, k);
    g_autofree char *sn = sanitize_comment(sym);
    gboolean assigned = FALSE;
    for (guint i = 0; i < g->transitions->len; i++) {
      WeirTransition *t = g_ptr_array_index(g->transitions, i);
      for (guint a = 0; a < t->assign_names->len; a++)
        assigned =
            assigned || strcmp(g_ptr_array_index(t->assign_names, a), sym) == 0;
    }
    g_string_append_printf(s, " *   symbols[%u]  %s%s\n", k, sn,
                           assigned ? "  (set by the program; ignored on entry)"
                                    : "");
  }
  g_string_append(s, " * Element types: f32 float, f64 double, i32 int32_t, "
                     "i64 int64_t,\n"
                     " * bool uint8_t (0 or 1), u8 uint8_t; arrays are laid "
                     "out row-major unless\n"
                     " * strides are given.\n"
                     " */\n");
}

char *weir_codegen_header(const WeirGraph *g) {
  g_return_val_if_fail(g != NULL, NULL);
  g_autofree char *prefix = weir_codegen_prefix(g);
  g_autofree char *file = g_strdup_printf("%s.h", prefix);
  g_autofree char *guard = g_ascii_strup(prefix, -1);
  GString *s = g_string_new(NULL);
  describe_abi(s, g, prefix, file);
  g_string_append_printf(s,
                         "#ifndef %s_WEIR_H\n"
                         "#define %s_WEIR_H\n\n"
                         "#include <stdint.h>\n\n"
                         "#ifdef __cplusplus\n"
                         "extern \"C\" {\n"
                         "#endif\n\n"
                         "int %s_abi_version(void);\n"
                         "int %s_run(void *const args[], const int64_t "
                         "symbols[]);\n\n"
                         "#ifdef __cplusplus\n"
                         "}\n"
                         "#endif\n\n"
                         "#endif\n",
                         guard, guard, prefix, prefix);
  return g_string_free(s, FALSE);
}

static gboolean has_library(const WeirGraph *g) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY ||
          (n->kind == WEIR_NODE_NESTED && n->nested && has_library(n->nested)))
        return TRUE;
    }
  }
  return FALSE;
}

/* Expands the library nodes of g and of the programs nested in it. */
static gboolean expand_everywhere(WeirGraph *g, GError **error) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_NESTED && n->nested && has_library(n->nested) &&
          !expand_everywhere(n->nested, error)) {
        g_autofree char *d = weir_describe_node(s, n);
        g_prefix_error(error, "%s: ", d);
        return FALSE;
      }
    }
  }
  return weir_native_expand_rest(g, error);
}

static gboolean same_names(GPtrArray *a, GPtrArray *b, gboolean containers) {
  if (a->len != b->len)
    return FALSE;
  for (guint i = 0; i < a->len; i++) {
    const char *x = containers
                        ? ((WeirContainer *)g_ptr_array_index(a, i))->name
                        : g_ptr_array_index(a, i);
    const char *y = containers
                        ? ((WeirContainer *)g_ptr_array_index(b, i))->name
                        : g_ptr_array_index(b, i);
    if (strcmp(x, y) != 0)
      return FALSE;
  }
  return TRUE;
}

static gint compare_strings(gconstpointer a, gconstpointer b, gpointer data) {
  (void)data;
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The helpers of native implementations, in name order. */
static void emit_native_helpers(Gen *gen, GString *s) {
  guint n = g_hash_table_size(gen->native_helpers);
  g_autofree char **names =
      (char **)g_hash_table_get_keys_as_array(gen->native_helpers, NULL);
  g_qsort_with_data(names, (gint)n, sizeof(char *), compare_strings, NULL);
  for (guint i = 0; i < n; i++)
    g_string_append_printf(
        s, "%s\n", (char *)g_hash_table_lookup(gen->native_helpers, names[i]));
}

char *weir_codegen_c(const WeirGraph *g, const WeirCodegenOptions *opts,
                     GError **error) {
  g_return_val_if_fail(g != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  /* Epilogues become in-place loops right after their node's call. */
  if (!weir_epilogue_split_all(copy, error))
    return NULL;
  if (has_library(copy) && !expand_everywhere(copy, error))
    return NULL;
  /* Constant sizes must fit in int64 so the generated index arithmetic
   * cannot overflow (symbolic ones are checked when bound, at run time). */
  if (!weir_graph_validate(copy, error) ||
      !weir_graph_check_sizes(copy, NULL, error))
    return NULL;
  g_autoptr(GPtrArray) a0 = weir_codegen_arguments(g);
  g_autoptr(GPtrArray) a1 = weir_codegen_arguments(copy);
  if (!same_names(a0, a1, TRUE) ||
      !same_names(g->symbols, copy->symbols, FALSE)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "program '%s': expanding library nodes changed the arguments "
                "or symbols",
                g->name);
    return NULL;
  }
  g_autofree char *prefix = weir_codegen_prefix(g);
  Gen gen = {.openmp = opts ? opts->openmp : TRUE};
  gen.defs = g_string_new(NULL);
  gen.file_names = namer_new(NULL);
  gen.prefix = prefix;
  gen.native_helpers =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  gen.libraries = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autofree char *run = g_strdup_printf("%s_run", prefix);
  g_autofree char *abi = g_strdup_printf("%s_abi_version", prefix);
  namer_fresh_exact(gen.file_names, run);
  namer_fresh_exact(gen.file_names, abi);
  g_autofree char *pname = sanitize_comment(g->name);
  g_autofree char *where = g_strdup_printf("program '%s'", pname);
  gboolean can_fail = FALSE;
  g_autofree char *entry =
      fn_generate(&gen, copy, run, where, NULL, NULL, &can_fail);

  GString *s = g_string_new(NULL);
  g_autofree char *file = g_strdup_printf("%s.c", prefix);
  describe_abi(s, g, prefix, file);
  g_autofree char **libs =
      (char **)g_hash_table_get_keys_as_array(gen.libraries, NULL);
  g_qsort_with_data(libs, (gint)g_hash_table_size(gen.libraries),
                    sizeof(char *), compare_strings, NULL);
  if (libs[0]) {
    /* read by weir_codegen_libraries: the compiler driver links them */
    g_string_append(s, "/* weir-link:");
    for (guint i = 0; libs[i]; i++)
      g_string_append_printf(s, " %s", libs[i]);
    g_string_append(s, " */\n");
  }
  g_string_append(s, "#include <math.h>\n"
                     "#include <stdbool.h>\n"
                     "#include <stdint.h>\n"
                     "#include <stdlib.h>\n"
                     "#include <string.h>\n");
  if (g_hash_table_contains(gen.libraries, "openblas"))
    g_string_append(s, "#include <cblas.h>\n");
  g_string_append(s, "\n");
  g_string_append_printf(s,
                         "int %s(void);\n"
                         "int %s(void *const args[], const int64_t "
                         "symbols[]);\n\n",
                         abi, run);
  emit_helpers(&gen, s);
  emit_native_helpers(&gen, s);
  g_string_append(s, gen.defs->str);
  g_string_append_printf(s, "int %s(void) {\n  return %d;\n}\n\n", abi,
                         WEIR_CODEGEN_ABI_VERSION);
  if (entry)
    g_string_append(s, entry);
  /* one final newline */
  while (s->len > 1 && s->str[s->len - 1] == '\n' && s->str[s->len - 2] == '\n')
    g_string_truncate(s, s->len - 1);
  g_string_free(gen.defs, TRUE);
  namer_free(gen.file_names);
  g_hash_table_unref(gen.native_helpers);
  g_hash_table_unref(gen.libraries);
  if (gen.error) {
    g_propagate_error(error, gen.error);
    g_string_free(s, TRUE);
    return NULL;
  }
  return g_string_free(s, FALSE);
}
