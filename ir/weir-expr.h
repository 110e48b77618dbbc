/* weir-expr.h — symbolic integer expressions.
 *
 * Shapes, strides, map ranges, memlet subsets and volumes are integer
 * expressions over named symbols (N, batch, i, ...).  A WeirExpr is immutable
 * and reference counted: every constructor returns a new reference, and
 * arguments are borrowed (the constructor takes its own references).
 *
 * Constructors simplify as they build, so expressions are always kept in a
 * canonical form: constants folded, sums and products flattened with their
 * operands in a deterministic order, like terms collected (2*N + N -> 3*N),
 * and trivial floordiv/mod/min/max removed.  Two expressions that simplify to
 * the same canonical form compare equal with weir_expr_equal().
 *
 * Text syntax (weir_expr_parse / weir_expr_to_string):
 *   integers, identifiers [A-Za-z_][A-Za-z0-9_]*, + - * ( ),
 *   a // b  (floor division, rounds toward minus infinity),
 *   a % b   (modulo with the sign of b, matching //),
 *   min(a, b, ...), max(a, b, ...), unary minus.
 * Precedence: unary minus > * // % > + -.
 */
#ifndef WEIR_EXPR_H
#define WEIR_EXPR_H

#include "weir-types.h"

G_BEGIN_DECLS

typedef struct _WeirExpr WeirExpr;

typedef enum {
  WEIR_EXPR_CONST,    /* integer constant */
  WEIR_EXPR_SYMBOL,   /* named symbol */
  WEIR_EXPR_ADD,      /* n-ary sum (n >= 2) */
  WEIR_EXPR_MUL,      /* n-ary product (n >= 2) */
  WEIR_EXPR_FLOORDIV, /* binary */
  WEIR_EXPR_MOD,      /* binary */
  WEIR_EXPR_MIN,      /* n-ary */
  WEIR_EXPR_MAX,      /* n-ary */
} WeirExprKind;

WEIR_API WeirExpr *weir_expr_ref(WeirExpr *e);
WEIR_API void weir_expr_unref(WeirExpr *e);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirExpr, weir_expr_unref)

WEIR_API WeirExpr *weir_expr_const(gint64 value);
WEIR_API WeirExpr *weir_expr_symbol(const char *name);
WEIR_API WeirExpr *weir_expr_add(WeirExpr *a, WeirExpr *b);
WEIR_API WeirExpr *weir_expr_sub(WeirExpr *a, WeirExpr *b);
WEIR_API WeirExpr *weir_expr_mul(WeirExpr *a, WeirExpr *b);
WEIR_API WeirExpr *weir_expr_neg(WeirExpr *a);
WEIR_API WeirExpr *weir_expr_floordiv(WeirExpr *a, WeirExpr *b);
WEIR_API WeirExpr *weir_expr_mod(WeirExpr *a, WeirExpr *b);
WEIR_API WeirExpr *weir_expr_min(WeirExpr *a, WeirExpr *b);
WEIR_API WeirExpr *weir_expr_max(WeirExpr *a, WeirExpr *b);
/* Convenience: a + c, a * c for a constant c. */
WEIR_API WeirExpr *weir_expr_add_const(WeirExpr *a, gint64 c);
WEIR_API WeirExpr *weir_expr_mul_const(WeirExpr *a, gint64 c);

/* Parses text (syntax above).  On error returns NULL and sets a
 * WEIR_ERROR_PARSE error naming the column and what was expected. */
WEIR_API WeirExpr *weir_expr_parse(const char *text, GError **error);
/* Canonical text; parsing it gives an equal expression.  (transfer full) */
WEIR_API char *weir_expr_to_string(const WeirExpr *e);

WEIR_API WeirExprKind weir_expr_kind(const WeirExpr *e);
/* For CONST: the value. */
WEIR_API gint64 weir_expr_const_value(const WeirExpr *e);
/* For SYMBOL: the name (borrowed). */
WEIR_API const char *weir_expr_symbol_name(const WeirExpr *e);
/* For n-ary and binary kinds: operands (borrowed), in canonical order.  A
 * sum keeps its constant (if any) last; a product its coefficient first. */
WEIR_API guint weir_expr_n_operands(const WeirExpr *e);
WEIR_API WeirExpr *weir_expr_operand(const WeirExpr *e, guint i);

/* TRUE and *value set when e is a constant. */
WEIR_API gboolean weir_expr_is_const(const WeirExpr *e, gint64 *value);
WEIR_API gboolean weir_expr_equal(const WeirExpr *a, const WeirExpr *b);
/* Total order used for canonical forms (negative, 0, positive). */
WEIR_API int weir_expr_compare(const WeirExpr *a, const WeirExpr *b);

/* Adds the names of all symbols of e to set (keys are owned strings; create
 * the set with g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL)).
 */
WEIR_API void weir_expr_collect_symbols(const WeirExpr *e, GHashTable *set);
/* Sorted, owned array of the symbol names in e. */
/**
 * weir_expr_symbols:
 * Returns: (transfer full) (element-type utf8):
 */
WEIR_API GPtrArray *weir_expr_symbols(const WeirExpr *e);

/* Evaluates e.  bindings maps symbol name (char*) to a gint64* value (both
 * borrowed; the table must hash with g_str_hash); NULL means no bindings.
 * Fails with WEIR_ERROR_INVALID naming the first unbound symbol ("unbound
 * symbol 'N'"), or on division by zero ("division by zero in 'N // M'").
 * Arithmetic wraps around on overflow (two's complement). */
WEIR_API gboolean weir_expr_eval(const WeirExpr *e, GHashTable *bindings,
                                 gint64 *out, GError **error);
/* The same, but failing (WEIR_ERROR_INVALID, "'N*M' overflows 64 bits")
 * instead of wrapping around: for sizes that come from input. */
WEIR_API gboolean weir_expr_eval_checked(const WeirExpr *e,
                                         GHashTable *bindings, gint64 *out,
                                         GError **error);

/* Floor division and the modulo that goes with it (the sign of the divisor),
 * as weir_expr_eval computes them; b != 0, and a / -1 wraps around. */
WEIR_API gint64 weir_floordiv_i64(gint64 a, gint64 b);
WEIR_API gint64 weir_floormod_i64(gint64 a, gint64 b);

/* Replaces symbols: map is name (char*) -> WeirExpr* (both borrowed).
 * The result is simplified. */
WEIR_API WeirExpr *weir_expr_substitute(WeirExpr *e, GHashTable *map);
/* Same as substitute with one symbol. */
WEIR_API WeirExpr *weir_expr_substitute_one(WeirExpr *e, const char *name,
                                            WeirExpr *value);

/* Re-simplifies an expression (constructors already simplify; this is the
 * entry point for expressions built by other means and for tests). */
WEIR_API WeirExpr *weir_expr_simplify(WeirExpr *e);

/* Bindings helper: a hash table name -> gint64 for weir_expr_eval.  Keys and
 * values are owned by the table. */
/**
 * weir_bindings_new: (skip)
 */
WEIR_API GHashTable *weir_bindings_new(void);
WEIR_API void weir_bindings_set(GHashTable *bindings, const char *name,
                                gint64 value);

G_END_DECLS

#endif
