/* expr.c — symbolic integer expressions.
 *
 * Every constructor returns an expression in canonical form, so structural
 * comparison (weir_expr_compare) decides equality of canonical forms:
 *
 *  - CONST and SYMBOL are leaves.
 *  - A *term* is c*P: a coefficient c (a nonzero gint64) times a *monomial*
 *    P, which is one non-constant factor or a MUL of several.  A term with
 *    c == 1 is P itself; otherwise it is MUL(const c, P's factors...).
 *  - ADD has >= 2 operands: terms with pairwise distinct monomials, sorted
 *    by weir_expr_compare of their monomials, then the constant (if nonzero)
 *    last.  No operand is an ADD.  (The printer shows terms with positive
 *    coefficients first: "N - 2*M" even though M sorts before N.)
 *  - MUL has an optional leading constant (never 0 or 1) followed by
 *    non-constant, non-MUL factors sorted by weir_expr_compare, >= 2
 *    operands in all.  Products of sums are not expanded, but a constant
 *    times a single sum is distributed (2*(N + 1) -> 2*N + 2) so that like
 *    terms combine.  When a sum is one of several factors, its integer
 *    content moves into the coefficient and its first term is made positive
 *    (M*(2*N + 2) -> 2*M*(N + 1)), so regrouping a product never changes
 *    its canonical form.
 *  - FLOORDIV and MOD are binary and round toward minus infinity.  Constant
 *    operands fold; x // 1 -> x, x // -1 -> -x, x % +-1 -> 0, 0 // x -> 0,
 *    0 % x -> 0, and (k*x) // k -> x, (k*x) % k -> 0 whenever the constant k
 *    divides every coefficient of the numerator.  Division by a constant 0
 *    is kept as written; weir_expr_eval reports it.
 *  - MIN and MAX have >= 2 distinct operands sorted by weir_expr_compare:
 *    nested MIN (MAX) are flattened and all constants fold into one.
 *
 * Integer arithmetic wraps around on overflow (two's complement), both in
 * simplification and in weir_expr_eval; it is never undefined behaviour.
 */
#include "weir-expr.h"

#include <string.h>

struct _WeirExpr {
  gint ref_count;
  WeirExprKind kind;
  gint64 value; /* CONST */
  char *name;   /* SYMBOL */
  guint n_ops;
  WeirExpr *ops[]; /* owned references */
};

/* ---- wrapping integer arithmetic ---- */

static gint64 wrap_add(gint64 a, gint64 b) {
  return (gint64)((guint64)a + (guint64)b);
}

static gint64 wrap_mul(gint64 a, gint64 b) {
  return (gint64)((guint64)a * (guint64)b);
}

static gint64 wrap_neg(gint64 a) {
  return (gint64)(0 - (guint64)a);
}

static guint64 abs_u64(gint64 a) {
  return a < 0 ? 0 - (guint64)a : (guint64)a;
}

static guint64 gcd_u64(guint64 a, guint64 b) {
  while (b != 0) {
    guint64 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* Floor division and modulo; b != 0 (weir-expr.h). */
gint64 weir_floordiv_i64(gint64 a, gint64 b) {
  if (b == -1)
    return wrap_neg(a);
  gint64 q = a / b;
  gint64 r = a % b;
  if (r != 0 && ((r < 0) != (b < 0)))
    q--;
  return q;
}

gint64 weir_floormod_i64(gint64 a, gint64 b) {
  if (b == -1)
    return 0;
  gint64 r = a % b;
  if (r != 0 && ((r < 0) != (b < 0)))
    r += b;
  return r;
}

/* Exact division: k divides a. */
static gint64 exact_div(gint64 a, gint64 k) {
  return k == -1 ? wrap_neg(a) : a / k;
}

/* ---- nodes ---- */

/* A new node of the given kind; takes its own references to ops. */
static WeirExpr *node_new(WeirExprKind kind, WeirExpr *const *ops, guint n) {
  WeirExpr *e = g_malloc0(sizeof(WeirExpr) + n * sizeof(WeirExpr *));
  e->ref_count = 1;
  e->kind = kind;
  e->n_ops = n;
  for (guint i = 0; i < n; i++)
    e->ops[i] = weir_expr_ref(ops[i]);
  return e;
}

static WeirExpr *node_new2(WeirExprKind kind, WeirExpr *a, WeirExpr *b) {
  WeirExpr *ops[2] = {a, b};
  return node_new(kind, ops, 2);
}

WeirExpr *weir_expr_ref(WeirExpr *e) {
  g_return_val_if_fail(e != NULL, NULL);
  g_atomic_int_inc(&e->ref_count);
  return e;
}

void weir_expr_unref(WeirExpr *e) {
  if (e == NULL)
    return;
  if (!g_atomic_int_dec_and_test(&e->ref_count))
    return;
  for (guint i = 0; i < e->n_ops; i++)
    weir_expr_unref(e->ops[i]);
  g_free(e->name);
  g_free(e);
}

/* Small constants are shared: one expression each, made once and never
 * freed (the table holds a reference), so that the many 0, 1 and small
 * dimensions of a large program are not allocated again and again.
 * Expressions are immutable, so sharing is invisible. */
#define SMALL_MIN (-8)
#define SMALL_MAX 1023

static WeirExpr *const *small_consts(void) {
  static WeirExpr **table;
  static gsize once = 0;
  if (g_once_init_enter(&once)) {
    WeirExpr **t = g_new0(WeirExpr *, SMALL_MAX - SMALL_MIN + 1);
    for (gint64 v = SMALL_MIN; v <= SMALL_MAX; v++) {
      WeirExpr *e = node_new(WEIR_EXPR_CONST, NULL, 0);
      e->value = v;
      t[v - SMALL_MIN] = e;
    }
    table = t;
    g_once_init_leave(&once, 1);
  }
  return table;
}

WeirExpr *weir_expr_const(gint64 value) {
  if (value >= SMALL_MIN && value <= SMALL_MAX)
    return weir_expr_ref(small_consts()[value - SMALL_MIN]);
  WeirExpr *e = node_new(WEIR_EXPR_CONST, NULL, 0);
  e->value = value;
  return e;
}

WeirExpr *weir_expr_symbol(const char *name) {
  g_return_val_if_fail(name != NULL && *name != '\0', NULL);
  WeirExpr *e = node_new(WEIR_EXPR_SYMBOL, NULL, 0);
  e->name = g_strdup(name);
  return e;
}

static GPtrArray *expr_array_new(void) {
  return g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
}

static int compare_ptrs(gconstpointer a, gconstpointer b) {
  return weir_expr_compare(*(WeirExpr *const *)a, *(WeirExpr *const *)b);
}

/* ---- terms ---- */

/* Splits the non-ADD expression *slot into its coefficient (returned) and
 * its non-constant factors, borrowed from the node or, for a single factor,
 * from slot itself. */
static gint64 term_factors(WeirExpr *const *slot, WeirExpr *const **factors,
                           guint *n) {
  const WeirExpr *t = *slot;
  if (t->kind == WEIR_EXPR_MUL) {
    gboolean has_coef = t->ops[0]->kind == WEIR_EXPR_CONST;
    *factors = t->ops + (has_coef ? 1 : 0);
    *n = t->n_ops - (has_coef ? 1 : 0);
    return has_coef ? t->ops[0]->value : 1;
  }
  *factors = slot;
  *n = 1;
  return 1;
}

static gint64 term_coef(const WeirExpr *t) {
  if (t->kind == WEIR_EXPR_CONST)
    return t->value;
  if (t->kind == WEIR_EXPR_MUL && t->ops[0]->kind == WEIR_EXPR_CONST)
    return t->ops[0]->value;
  return 1;
}

typedef struct {
  gint64 coef;
  WeirExpr *mono; /* owned */
} Term;

static void term_clear(gpointer data) {
  Term *t = data;
  weir_expr_unref(t->mono);
}

static int term_compare(gconstpointer a, gconstpointer b) {
  return weir_expr_compare(((const Term *)a)->mono, ((const Term *)b)->mono);
}

/* c * mono, for c != 0 and a canonical monomial. */
static WeirExpr *term_make(gint64 coef, WeirExpr *mono) {
  if (coef == 1)
    return weir_expr_ref(mono);
  g_autoptr(GPtrArray) ops = g_ptr_array_new();
  g_autoptr(WeirExpr) c = weir_expr_const(coef);
  g_ptr_array_add(ops, c);
  if (mono->kind == WEIR_EXPR_MUL) {
    for (guint i = 0; i < mono->n_ops; i++)
      g_ptr_array_add(ops, mono->ops[i]);
  } else {
    g_ptr_array_add(ops, mono);
  }
  return node_new(WEIR_EXPR_MUL, (WeirExpr *const *)ops->pdata, ops->len);
}

static void sum_add_operand(GArray *terms, gint64 *constant, WeirExpr *t) {
  if (t->kind == WEIR_EXPR_CONST) {
    *constant = wrap_add(*constant, t->value);
    return;
  }
  WeirExpr *const *f;
  guint n;
  Term term;
  term.coef = term_factors(&t, &f, &n);
  if (n == 1)
    term.mono = weir_expr_ref(f[0]);
  else if (term.coef == 1)
    term.mono = weir_expr_ref(t);
  else
    term.mono = node_new(WEIR_EXPR_MUL, f, n);
  g_array_append_val(terms, term);
}

/* ---- canonical builders ---- */

static WeirExpr *sum_build(WeirExpr *const *ops, guint n);
static WeirExpr *product_build(WeirExpr *const *ops, guint n);

static WeirExpr *sum_build(WeirExpr *const *ops, guint n) {
  g_autoptr(GArray) terms = g_array_new(FALSE, FALSE, sizeof(Term));
  g_array_set_clear_func(terms, term_clear);
  gint64 constant = 0;
  for (guint i = 0; i < n; i++) {
    if (ops[i]->kind == WEIR_EXPR_ADD) {
      for (guint j = 0; j < ops[i]->n_ops; j++)
        sum_add_operand(terms, &constant, ops[i]->ops[j]);
    } else {
      sum_add_operand(terms, &constant, ops[i]);
    }
  }
  g_array_sort(terms, term_compare);

  g_autoptr(GPtrArray) out = expr_array_new();
  for (guint i = 0; i < terms->len;) {
    Term *t = &g_array_index(terms, Term, i);
    gint64 coef = t->coef;
    guint j = i + 1;
    for (; j < terms->len; j++) {
      Term *u = &g_array_index(terms, Term, j);
      if (!weir_expr_equal(t->mono, u->mono))
        break;
      coef = wrap_add(coef, u->coef);
    }
    if (coef != 0)
      g_ptr_array_add(out, term_make(coef, t->mono));
    i = j;
  }
  if (constant != 0)
    g_ptr_array_add(out, weir_expr_const(constant));
  if (out->len == 0)
    return weir_expr_const(0);
  if (out->len == 1)
    return weir_expr_ref(out->pdata[0]);
  return node_new(WEIR_EXPR_ADD, (WeirExpr *const *)out->pdata, out->len);
}

/* TRUE when k (!= 0) divides every coefficient of e. */
static gboolean divides_all(const WeirExpr *e, gint64 k) {
  if (k == 1 || k == -1)
    return TRUE;
  if (e->kind == WEIR_EXPR_ADD) {
    for (guint i = 0; i < e->n_ops; i++) {
      if (term_coef(e->ops[i]) % k != 0)
        return FALSE;
    }
    return TRUE;
  }
  return term_coef(e) % k == 0;
}

/* e / k where divides_all(e, k). */
static WeirExpr *divide_exact(WeirExpr *e, gint64 k) {
  if (e->kind == WEIR_EXPR_CONST)
    return weir_expr_const(exact_div(e->value, k));
  if (e->kind == WEIR_EXPR_ADD) {
    g_autoptr(GPtrArray) parts = expr_array_new();
    for (guint i = 0; i < e->n_ops; i++)
      g_ptr_array_add(parts, divide_exact(e->ops[i], k));
    return sum_build((WeirExpr *const *)parts->pdata, parts->len);
  }
  WeirExpr *const *f;
  guint n;
  gint64 coef = term_factors(&e, &f, &n);
  g_autoptr(GPtrArray) ops = g_ptr_array_new();
  g_autoptr(WeirExpr) c = weir_expr_const(exact_div(coef, k));
  g_ptr_array_add(ops, c);
  for (guint i = 0; i < n; i++)
    g_ptr_array_add(ops, f[i]);
  return product_build((WeirExpr *const *)ops->pdata, ops->len);
}

/* The signed content of a sum: the gcd of its coefficients, negative when
 * its first term is; 1 when that does not fit in a gint64. */
static gint64 sum_content(const WeirExpr *sum) {
  guint64 g = 0;
  for (guint i = 0; i < sum->n_ops; i++)
    g = gcd_u64(g, abs_u64(term_coef(sum->ops[i])));
  if (g == 0 || g > (guint64)G_MAXINT64)
    return 1;
  return term_coef(sum->ops[0]) < 0 ? -(gint64)g : (gint64)g;
}

static WeirExpr *product_build(WeirExpr *const *ops, guint n) {
  gint64 c = 1;
  g_autoptr(GPtrArray) f = expr_array_new();
  for (guint i = 0; i < n; i++) {
    WeirExpr *op = ops[i];
    if (op->kind == WEIR_EXPR_MUL) {
      for (guint j = 0; j < op->n_ops; j++) {
        if (op->ops[j]->kind == WEIR_EXPR_CONST)
          c = wrap_mul(c, op->ops[j]->value);
        else
          g_ptr_array_add(f, weir_expr_ref(op->ops[j]));
      }
    } else if (op->kind == WEIR_EXPR_CONST) {
      c = wrap_mul(c, op->value);
    } else {
      g_ptr_array_add(f, weir_expr_ref(op));
    }
  }
  if (c == 0 || f->len == 0)
    return weir_expr_const(c);

  if (f->len == 1) {
    WeirExpr *x = f->pdata[0];
    if (c == 1)
      return weir_expr_ref(x);
    if (x->kind == WEIR_EXPR_ADD) {
      /* Distribute the constant: 2*(N + 1) -> 2*N + 2. */
      g_autoptr(WeirExpr) cc = weir_expr_const(c);
      g_autoptr(GPtrArray) parts = expr_array_new();
      for (guint i = 0; i < x->n_ops; i++) {
        WeirExpr *pair[2] = {cc, x->ops[i]};
        g_ptr_array_add(parts, product_build(pair, 2));
      }
      return sum_build((WeirExpr *const *)parts->pdata, parts->len);
    }
  } else {
    /* Move the content of sum factors into the coefficient. */
    for (guint i = 0; i < f->len; i++) {
      WeirExpr *x = f->pdata[i];
      if (x->kind != WEIR_EXPR_ADD)
        continue;
      gint64 g = sum_content(x);
      if (g == 1)
        continue;
      WeirExpr *reduced = divide_exact(x, g);
      c = wrap_mul(c, g);
      weir_expr_unref(x);
      f->pdata[i] = reduced;
    }
    if (c == 0)
      return weir_expr_const(0);
  }

  g_ptr_array_sort(f, compare_ptrs);
  if (c != 1)
    g_ptr_array_insert(f, 0, weir_expr_const(c));
  return node_new(WEIR_EXPR_MUL, (WeirExpr *const *)f->pdata, f->len);
}

static WeirExpr *floordiv_build(WeirExpr *a, WeirExpr *b) {
  gint64 av = 0, bv = 0;
  gboolean a_const = weir_expr_is_const(a, &av);
  gboolean b_const = weir_expr_is_const(b, &bv);
  if (b_const && bv == 0)
    return node_new2(WEIR_EXPR_FLOORDIV, a, b);
  if (a_const && b_const)
    return weir_expr_const(weir_floordiv_i64(av, bv));
  if (b_const && bv == -1)
    return weir_expr_neg(a);
  if (a_const && av == 0)
    return weir_expr_const(0);
  if (b_const && divides_all(a, bv))
    return divide_exact(a, bv);
  return node_new2(WEIR_EXPR_FLOORDIV, a, b);
}

static WeirExpr *mod_build(WeirExpr *a, WeirExpr *b) {
  gint64 av = 0, bv = 0;
  gboolean a_const = weir_expr_is_const(a, &av);
  gboolean b_const = weir_expr_is_const(b, &bv);
  if (b_const && bv == 0)
    return node_new2(WEIR_EXPR_MOD, a, b);
  if (a_const && b_const)
    return weir_expr_const(weir_floormod_i64(av, bv));
  if (a_const && av == 0)
    return weir_expr_const(0);
  if (b_const && divides_all(a, bv))
    return weir_expr_const(0);
  return node_new2(WEIR_EXPR_MOD, a, b);
}

static WeirExpr *minmax_build(WeirExprKind kind, WeirExpr *const *ops,
                              guint n) {
  gboolean is_min = kind == WEIR_EXPR_MIN;
  gboolean have_const = FALSE;
  gint64 folded = 0;
  g_autoptr(GPtrArray) items = expr_array_new();
  for (guint i = 0; i < n; i++) {
    WeirExpr *const *sub = &ops[i];
    guint n_sub = 1;
    if (ops[i]->kind == kind) {
      sub = ops[i]->ops;
      n_sub = ops[i]->n_ops;
    }
    for (guint j = 0; j < n_sub; j++) {
      WeirExpr *x = sub[j];
      if (x->kind == WEIR_EXPR_CONST) {
        if (!have_const || (is_min ? x->value < folded : x->value > folded))
          folded = x->value;
        have_const = TRUE;
      } else {
        g_ptr_array_add(items, weir_expr_ref(x));
      }
    }
  }
  if (have_const)
    g_ptr_array_add(items, weir_expr_const(folded));
  g_ptr_array_sort(items, compare_ptrs);

  g_autoptr(GPtrArray) unique = g_ptr_array_new();
  for (guint i = 0; i < items->len; i++) {
    if (unique->len == 0 ||
        !weir_expr_equal(unique->pdata[unique->len - 1], items->pdata[i]))
      g_ptr_array_add(unique, items->pdata[i]);
  }
  g_return_val_if_fail(unique->len > 0, weir_expr_const(0));
  if (unique->len == 1)
    return weir_expr_ref(unique->pdata[0]);
  return node_new(kind, (WeirExpr *const *)unique->pdata, unique->len);
}

/* ---- public constructors ---- */

WeirExpr *weir_expr_add(WeirExpr *a, WeirExpr *b) {
  g_return_val_if_fail(a != NULL && b != NULL, NULL);
  /* what sum_build gives for two constants, without its arrays */
  if (a->kind == WEIR_EXPR_CONST && b->kind == WEIR_EXPR_CONST)
    return weir_expr_const(wrap_add(a->value, b->value));
  WeirExpr *ops[2] = {a, b};
  return sum_build(ops, 2);
}

WeirExpr *weir_expr_neg(WeirExpr *a) {
  g_return_val_if_fail(a != NULL, NULL);
  return weir_expr_mul_const(a, -1);
}

WeirExpr *weir_expr_sub(WeirExpr *a, WeirExpr *b) {
  g_return_val_if_fail(a != NULL && b != NULL, NULL);
  g_autoptr(WeirExpr) nb = weir_expr_neg(b);
  return weir_expr_add(a, nb);
}

WeirExpr *weir_expr_mul(WeirExpr *a, WeirExpr *b) {
  g_return_val_if_fail(a != NULL && b != NULL, NULL);
  /* what product_build gives for two constants, without its arrays */
  if (a->kind == WEIR_EXPR_CONST && b->kind == WEIR_EXPR_CONST)
    return weir_expr_const(wrap_mul(a->value, b->value));
  WeirExpr *ops[2] = {a, b};
  return product_build(ops, 2);
}

WeirExpr *weir_expr_floordiv(WeirExpr *a, WeirExpr *b) {
  g_return_val_if_fail(a != NULL && b != NULL, NULL);
  return floordiv_build(a, b);
}

WeirExpr *weir_expr_mod(WeirExpr *a, WeirExpr *b) {
  g_return_val_if_fail(a != NULL && b != NULL, NULL);
  return mod_build(a, b);
}

WeirExpr *weir_expr_min(WeirExpr *a, WeirExpr *b) {
  g_return_val_if_fail(a != NULL && b != NULL, NULL);
  WeirExpr *ops[2] = {a, b};
  return minmax_build(WEIR_EXPR_MIN, ops, 2);
}

WeirExpr *weir_expr_max(WeirExpr *a, WeirExpr *b) {
  g_return_val_if_fail(a != NULL && b != NULL, NULL);
  WeirExpr *ops[2] = {a, b};
  return minmax_build(WEIR_EXPR_MAX, ops, 2);
}

WeirExpr *weir_expr_add_const(WeirExpr *a, gint64 c) {
  g_return_val_if_fail(a != NULL, NULL);
  g_autoptr(WeirExpr) ce = weir_expr_const(c);
  return weir_expr_add(a, ce);
}

WeirExpr *weir_expr_mul_const(WeirExpr *a, gint64 c) {
  g_return_val_if_fail(a != NULL, NULL);
  g_autoptr(WeirExpr) ce = weir_expr_const(c);
  return weir_expr_mul(a, ce);
}

/* Builds kind over ops (borrowed) through the simplifying builders. */
static WeirExpr *rebuild(WeirExprKind kind, WeirExpr *const *ops, guint n) {
  switch (kind) {
  case WEIR_EXPR_ADD:
    return sum_build(ops, n);
  case WEIR_EXPR_MUL:
    return product_build(ops, n);
  case WEIR_EXPR_FLOORDIV:
    return floordiv_build(ops[0], ops[1]);
  case WEIR_EXPR_MOD:
    return mod_build(ops[0], ops[1]);
  case WEIR_EXPR_MIN:
  case WEIR_EXPR_MAX:
    return minmax_build(kind, ops, n);
  case WEIR_EXPR_CONST:
  case WEIR_EXPR_SYMBOL:
    break;
  }
  g_return_val_if_reached(NULL);
}

WeirExpr *weir_expr_simplify(WeirExpr *e) {
  g_return_val_if_fail(e != NULL, NULL);
  if (e->n_ops == 0)
    return weir_expr_ref(e);
  g_autoptr(GPtrArray) ops = expr_array_new();
  for (guint i = 0; i < e->n_ops; i++)
    g_ptr_array_add(ops, weir_expr_simplify(e->ops[i]));
  return rebuild(e->kind, (WeirExpr *const *)ops->pdata, ops->len);
}

/* ---- accessors and ordering ---- */

WeirExprKind weir_expr_kind(const WeirExpr *e) {
  g_return_val_if_fail(e != NULL, WEIR_EXPR_CONST);
  return e->kind;
}

gint64 weir_expr_const_value(const WeirExpr *e) {
  g_return_val_if_fail(e != NULL && e->kind == WEIR_EXPR_CONST, 0);
  return e->value;
}

const char *weir_expr_symbol_name(const WeirExpr *e) {
  g_return_val_if_fail(e != NULL && e->kind == WEIR_EXPR_SYMBOL, NULL);
  return e->name;
}

guint weir_expr_n_operands(const WeirExpr *e) {
  g_return_val_if_fail(e != NULL, 0);
  return e->n_ops;
}

WeirExpr *weir_expr_operand(const WeirExpr *e, guint i) {
  g_return_val_if_fail(e != NULL && i < e->n_ops, NULL);
  return e->ops[i];
}

gboolean weir_expr_is_const(const WeirExpr *e, gint64 *value) {
  g_return_val_if_fail(e != NULL, FALSE);
  if (e->kind != WEIR_EXPR_CONST)
    return FALSE;
  if (value != NULL)
    *value = e->value;
  return TRUE;
}

int weir_expr_compare(const WeirExpr *a, const WeirExpr *b) {
  g_return_val_if_fail(a != NULL && b != NULL, 0);
  if (a == b)
    return 0;
  if (a->kind != b->kind)
    return a->kind < b->kind ? -1 : 1;
  switch (a->kind) {
  case WEIR_EXPR_CONST:
    return a->value < b->value ? -1 : a->value > b->value;
  case WEIR_EXPR_SYMBOL: {
    int c = strcmp(a->name, b->name);
    return c < 0 ? -1 : c > 0;
  }
  default:
    break;
  }
  for (guint i = 0; i < a->n_ops && i < b->n_ops; i++) {
    int c = weir_expr_compare(a->ops[i], b->ops[i]);
    if (c != 0)
      return c;
  }
  return a->n_ops < b->n_ops ? -1 : a->n_ops > b->n_ops;
}

gboolean weir_expr_equal(const WeirExpr *a, const WeirExpr *b) {
  return weir_expr_compare(a, b) == 0;
}

/* ---- symbols ---- */

void weir_expr_collect_symbols(const WeirExpr *e, GHashTable *set) {
  g_return_if_fail(e != NULL && set != NULL);
  if (e->kind == WEIR_EXPR_SYMBOL) {
    if (!g_hash_table_contains(set, e->name))
      g_hash_table_add(set, g_strdup(e->name));
    return;
  }
  for (guint i = 0; i < e->n_ops; i++)
    weir_expr_collect_symbols(e->ops[i], set);
}

static int compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

GPtrArray *weir_expr_symbols(const WeirExpr *e) {
  g_return_val_if_fail(e != NULL, NULL);
  g_autoptr(GHashTable) set =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  weir_expr_collect_symbols(e, set);
  GPtrArray *names = g_ptr_array_new_full(g_hash_table_size(set), g_free);
  GHashTableIter iter;
  gpointer key;
  g_hash_table_iter_init(&iter, set);
  while (g_hash_table_iter_next(&iter, &key, NULL))
    g_ptr_array_add(names, g_strdup(key));
  g_ptr_array_sort(names, compare_strings);
  return names;
}

/* ---- printing ---- */

static void print_expr(GString *s, const WeirExpr *e);

static void print_parens(GString *s, const WeirExpr *e, gboolean parens) {
  if (parens)
    g_string_append_c(s, '(');
  print_expr(s, e);
  if (parens)
    g_string_append_c(s, ')');
}

/* coef * f[0] * ... * f[n-1].  Floordiv and mod factors are parenthesized
 * whenever there is more than one item: "(i // 2)*j" reads better than the
 * equivalent "i // 2*j", and "-(i // 2)" differs from "-i // 2". */
static void print_product(GString *s, gint64 coef, WeirExpr *const *f,
                          guint n) {
  if (coef == -1)
    g_string_append_c(s, '-');
  else if (coef != 1)
    g_string_append_printf(s, "%" G_GINT64_FORMAT "*", coef);
  gboolean alone = coef == 1 && n == 1;
  for (guint i = 0; i < n; i++) {
    WeirExprKind k = f[i]->kind;
    if (i > 0)
      g_string_append_c(s, '*');
    print_parens(
        s, f[i],
        k == WEIR_EXPR_ADD || k == WEIR_EXPR_MUL ||
            (!alone && (k == WEIR_EXPR_FLOORDIV || k == WEIR_EXPR_MOD)));
  }
}

/* Terms with positive coefficients first, then the negative ones written
 * as subtractions, then the constant. */
static void print_sum(GString *s, const WeirExpr *e) {
  gboolean first = TRUE;
  for (int pass = 0; pass < 2; pass++) {
    for (guint i = 0; i < e->n_ops; i++) {
      if (e->ops[i]->kind == WEIR_EXPR_CONST)
        continue;
      WeirExpr *const *f;
      guint n;
      gint64 coef = term_factors(&e->ops[i], &f, &n);
      if ((coef < 0) != (pass == 1))
        continue;
      if (first) {
        print_product(s, coef, f, n);
        first = FALSE;
      } else if (coef < 0 && coef != G_MININT64) {
        g_string_append(s, " - ");
        print_product(s, -coef, f, n);
      } else {
        g_string_append(s, " + ");
        print_product(s, coef, f, n);
      }
    }
  }
  const WeirExpr *last = e->ops[e->n_ops - 1];
  if (last->kind == WEIR_EXPR_CONST) {
    if (last->value < 0 && last->value != G_MININT64)
      g_string_append_printf(s, " - %" G_GINT64_FORMAT, -last->value);
    else
      g_string_append_printf(s, " + %" G_GINT64_FORMAT, last->value);
  }
}

static void print_expr(GString *s, const WeirExpr *e) {
  switch (e->kind) {
  case WEIR_EXPR_CONST:
    g_string_append_printf(s, "%" G_GINT64_FORMAT, e->value);
    break;
  case WEIR_EXPR_SYMBOL:
    g_string_append(s, e->name);
    break;
  case WEIR_EXPR_ADD:
    print_sum(s, e);
    break;
  case WEIR_EXPR_MUL: {
    WeirExpr *const *f;
    guint n;
    WeirExpr *self = (WeirExpr *)e;
    gint64 coef = term_factors(&self, &f, &n);
    print_product(s, coef, f, n);
    break;
  }
  case WEIR_EXPR_FLOORDIV:
  case WEIR_EXPR_MOD: {
    WeirExprKind rk = e->ops[1]->kind;
    print_parens(s, e->ops[0], e->ops[0]->kind == WEIR_EXPR_ADD);
    g_string_append(s, e->kind == WEIR_EXPR_FLOORDIV ? " // " : " % ");
    print_parens(s, e->ops[1],
                 rk == WEIR_EXPR_ADD || rk == WEIR_EXPR_MUL ||
                     rk == WEIR_EXPR_FLOORDIV || rk == WEIR_EXPR_MOD);
    break;
  }
  case WEIR_EXPR_MIN:
  case WEIR_EXPR_MAX:
    g_string_append(s, e->kind == WEIR_EXPR_MIN ? "min(" : "max(");
    for (guint i = 0; i < e->n_ops; i++) {
      if (i > 0)
        g_string_append(s, ", ");
      print_expr(s, e->ops[i]);
    }
    g_string_append_c(s, ')');
    break;
  }
}

char *weir_expr_to_string(const WeirExpr *e) {
  g_return_val_if_fail(e != NULL, NULL);
  GString *s = g_string_new(NULL);
  print_expr(s, e);
  return g_string_free(s, FALSE);
}

/* ---- parsing ---- */

/* Deeper nesting (parentheses, unary minus, min/max) is rejected so that
 * no input can exhaust the stack. */
#define PARSE_MAX_DEPTH 256

typedef struct {
  const char *text;
  gsize pos;
  guint depth;
  GError **error;
} Parser;

static char parser_peek(const Parser *p) {
  return p->text[p->pos];
}

static void parser_skip_space(Parser *p) {
  while (g_ascii_isspace(p->text[p->pos]))
    p->pos++;
}

static gboolean is_printable(char c) {
  return c >= 0x20 && c < 0x7f;
}

/* What is at the current position, for messages; owned string. */
static char *parser_found(const Parser *p) {
  char c = parser_peek(p);
  if (c == '\0')
    return g_strdup("the end of the expression");
  if (is_printable(c))
    return g_strdup_printf("'%c'", c);
  return g_strdup_printf("byte 0x%02x", (guint)(guchar)c);
}

static void parser_fail(Parser *p, gsize at, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static void parser_fail(Parser *p, gsize at, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, args);
  va_end(args);

  gboolean plain = TRUE;
  for (const char *c = p->text; *c != '\0'; c++)
    plain = plain && is_printable(*c);
  g_autofree char *quoted =
      plain ? g_strdup(p->text) : g_strescape(p->text, NULL);
  g_set_error(p->error, WEIR_ERROR, WEIR_ERROR_PARSE,
              "expression '%s': column %" G_GSIZE_FORMAT ": %s", quoted, at + 1,
              msg);
}

static void parser_fail_expected(Parser *p, const char *expected) {
  g_autofree char *found = parser_found(p);
  parser_fail(p, p->pos, "expected %s, found %s", expected, found);
}

static WeirExpr *parse_sum(Parser *p);

/* Digits at the current position; negative allows -2^63. */
static WeirExpr *parse_integer(Parser *p, gboolean negative) {
  gsize start = p->pos;
  guint64 limit = negative ? (guint64)G_MAXINT64 + 1 : (guint64)G_MAXINT64;
  guint64 v = 0;
  gboolean overflow = FALSE;
  while (g_ascii_isdigit(parser_peek(p))) {
    guint64 d = (guint64)(parser_peek(p) - '0');
    if (v > (limit - d) / 10)
      overflow = TRUE;
    else
      v = v * 10 + d;
    p->pos++;
  }
  if (overflow) {
    parser_fail(p, start,
                "integer %s%.*s does not fit in 64 bits (expected a value "
                "from %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT ")",
                negative ? "-" : "", (int)(p->pos - start), p->text + start,
                G_MININT64, G_MAXINT64);
    return NULL;
  }
  return weir_expr_const(negative ? (gint64)(0 - v) : (gint64)v);
}

/* After "min(" or "max(": arguments and the closing parenthesis. */
static WeirExpr *parse_call(Parser *p, WeirExprKind kind) {
  g_autoptr(GPtrArray) args = expr_array_new();
  for (;;) {
    WeirExpr *arg = parse_sum(p);
    if (arg == NULL)
      return NULL;
    g_ptr_array_add(args, arg);
    parser_skip_space(p);
    if (parser_peek(p) == ',') {
      p->pos++;
    } else if (parser_peek(p) == ')') {
      p->pos++;
      break;
    } else {
      parser_fail_expected(p, "',' or ')'");
      return NULL;
    }
  }
  return minmax_build(kind, (WeirExpr *const *)args->pdata, args->len);
}

static WeirExpr *parse_primary(Parser *p) {
  parser_skip_space(p);
  char c = parser_peek(p);
  if (g_ascii_isdigit(c))
    return parse_integer(p, FALSE);
  if (g_ascii_isalpha(c) || c == '_') {
    gsize start = p->pos;
    while (g_ascii_isalnum(parser_peek(p)) || parser_peek(p) == '_')
      p->pos++;
    g_autofree char *name = g_strndup(p->text + start, p->pos - start);
    gboolean is_min = strcmp(name, "min") == 0;
    gboolean is_max = strcmp(name, "max") == 0;
    if (is_min || is_max) {
      gsize after = p->pos;
      parser_skip_space(p);
      if (parser_peek(p) == '(') {
        p->pos++;
        return parse_call(p, is_min ? WEIR_EXPR_MIN : WEIR_EXPR_MAX);
      }
      p->pos = after; /* a symbol that happens to be called min or max */
    }
    return weir_expr_symbol(name);
  }
  if (c == '(') {
    p->pos++;
    g_autoptr(WeirExpr) e = parse_sum(p);
    if (e == NULL)
      return NULL;
    parser_skip_space(p);
    if (parser_peek(p) != ')') {
      parser_fail_expected(p, "')'");
      return NULL;
    }
    p->pos++;
    return g_steal_pointer(&e);
  }
  parser_fail_expected(p, "an operand");
  return NULL;
}

static WeirExpr *parse_unary(Parser *p) {
  parser_skip_space(p);
  if (p->depth >= PARSE_MAX_DEPTH) {
    parser_fail(p, p->pos, "expression nested too deeply (limit %d)",
                PARSE_MAX_DEPTH);
    return NULL;
  }
  p->depth++;
  WeirExpr *result = NULL;
  if (parser_peek(p) == '-') {
    p->pos++;
    parser_skip_space(p);
    if (g_ascii_isdigit(parser_peek(p))) {
      /* A negative literal, so that -9223372036854775808 parses. */
      result = parse_integer(p, TRUE);
    } else {
      g_autoptr(WeirExpr) operand = parse_unary(p);
      if (operand != NULL)
        result = weir_expr_neg(operand);
    }
  } else {
    result = parse_primary(p);
  }
  p->depth--;
  return result;
}

static WeirExpr *parse_product(Parser *p) {
  g_autoptr(WeirExpr) lhs = parse_unary(p);
  if (lhs == NULL)
    return NULL;
  for (;;) {
    parser_skip_space(p);
    char c = parser_peek(p);
    WeirExprKind op;
    if (c == '*') {
      op = WEIR_EXPR_MUL;
      p->pos++;
    } else if (c == '%') {
      op = WEIR_EXPR_MOD;
      p->pos++;
    } else if (c == '/') {
      if (p->text[p->pos + 1] != '/') {
        parser_fail(p, p->pos,
                    "expected '//' (floor division), found a single '/'");
        return NULL;
      }
      op = WEIR_EXPR_FLOORDIV;
      p->pos += 2;
    } else {
      break;
    }
    g_autoptr(WeirExpr) rhs = parse_unary(p);
    if (rhs == NULL)
      return NULL;
    WeirExpr *pair[2] = {lhs, rhs};
    WeirExpr *combined = rebuild(op, pair, 2);
    weir_expr_unref(lhs);
    lhs = combined;
  }
  return g_steal_pointer(&lhs);
}

static WeirExpr *parse_sum(Parser *p) {
  g_autoptr(WeirExpr) lhs = parse_product(p);
  if (lhs == NULL)
    return NULL;
  for (;;) {
    parser_skip_space(p);
    char c = parser_peek(p);
    if (c != '+' && c != '-')
      break;
    p->pos++;
    g_autoptr(WeirExpr) rhs = parse_product(p);
    if (rhs == NULL)
      return NULL;
    WeirExpr *combined =
        c == '+' ? weir_expr_add(lhs, rhs) : weir_expr_sub(lhs, rhs);
    weir_expr_unref(lhs);
    lhs = combined;
  }
  return g_steal_pointer(&lhs);
}

WeirExpr *weir_expr_parse(const char *text, GError **error) {
  g_return_val_if_fail(text != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  Parser p = {.text = text, .pos = 0, .depth = 0, .error = error};
  g_autoptr(WeirExpr) e = parse_sum(&p);
  if (e == NULL)
    return NULL;
  parser_skip_space(&p);
  if (parser_peek(&p) != '\0') {
    parser_fail_expected(&p, "an operator or the end of the expression");
    return NULL;
  }
  return g_steal_pointer(&e);
}

/* ---- evaluation and substitution ---- */

static gboolean eval_impl(const WeirExpr *e, GHashTable *bindings,
                          gboolean checked, gint64 *out, GError **error);

gboolean weir_expr_eval(const WeirExpr *e, GHashTable *bindings, gint64 *out,
                        GError **error) {
  g_return_val_if_fail(e != NULL && out != NULL, FALSE);
  return eval_impl(e, bindings, FALSE, out, error);
}

gboolean weir_expr_eval_checked(const WeirExpr *e, GHashTable *bindings,
                                gint64 *out, GError **error) {
  g_return_val_if_fail(e != NULL && out != NULL, FALSE);
  return eval_impl(e, bindings, TRUE, out, error);
}

static gboolean eval_overflow(const WeirExpr *e, GError **error) {
  g_autofree char *text = weir_expr_to_string(e);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "'%s' overflows 64 bits",
              text);
  return FALSE;
}

static gboolean eval_impl(const WeirExpr *e, GHashTable *bindings,
                          gboolean checked, gint64 *out, GError **error) {
  switch (e->kind) {
  case WEIR_EXPR_CONST:
    *out = e->value;
    return TRUE;
  case WEIR_EXPR_SYMBOL: {
    const gint64 *v =
        bindings != NULL ? g_hash_table_lookup(bindings, e->name) : NULL;
    if (v == NULL) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "unbound symbol '%s'",
                  e->name);
      return FALSE;
    }
    *out = *v;
    return TRUE;
  }
  default:
    break;
  }

  gint64 acc = 0;
  for (guint i = 0; i < e->n_ops; i++) {
    gint64 v;
    if (!eval_impl(e->ops[i], bindings, checked, &v, error))
      return FALSE;
    if (i == 0) {
      acc = v;
      continue;
    }
    switch (e->kind) {
    case WEIR_EXPR_ADD:
      if (checked && __builtin_add_overflow(acc, v, &acc))
        return eval_overflow(e, error);
      acc = checked ? acc : wrap_add(acc, v);
      break;
    case WEIR_EXPR_MUL:
      if (checked && __builtin_mul_overflow(acc, v, &acc))
        return eval_overflow(e, error);
      acc = checked ? acc : wrap_mul(acc, v);
      break;
    case WEIR_EXPR_FLOORDIV:
    case WEIR_EXPR_MOD:
      if (v == 0) {
        g_autofree char *text = weir_expr_to_string(e);
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "division by zero in '%s'", text);
        return FALSE;
      }
      if (checked && e->kind == WEIR_EXPR_FLOORDIV && v == -1 &&
          acc == G_MININT64)
        return eval_overflow(e, error);
      acc = e->kind == WEIR_EXPR_FLOORDIV ? weir_floordiv_i64(acc, v)
                                          : weir_floormod_i64(acc, v);
      break;
    case WEIR_EXPR_MIN:
      acc = MIN(acc, v);
      break;
    case WEIR_EXPR_MAX:
      acc = MAX(acc, v);
      break;
    case WEIR_EXPR_CONST:
    case WEIR_EXPR_SYMBOL:
      break;
    }
  }
  *out = acc;
  return TRUE;
}

WeirExpr *weir_expr_substitute(WeirExpr *e, GHashTable *map) {
  g_return_val_if_fail(e != NULL, NULL);
  if (e->kind == WEIR_EXPR_SYMBOL) {
    WeirExpr *value = map != NULL ? g_hash_table_lookup(map, e->name) : NULL;
    return weir_expr_ref(value != NULL ? value : e);
  }
  if (e->n_ops == 0)
    return weir_expr_ref(e);
  g_autoptr(GPtrArray) ops = expr_array_new();
  for (guint i = 0; i < e->n_ops; i++)
    g_ptr_array_add(ops, weir_expr_substitute(e->ops[i], map));
  return rebuild(e->kind, (WeirExpr *const *)ops->pdata, ops->len);
}

WeirExpr *weir_expr_substitute_one(WeirExpr *e, const char *name,
                                   WeirExpr *value) {
  g_return_val_if_fail(e != NULL && name != NULL && value != NULL, NULL);
  g_autoptr(GHashTable) map = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(map, (gpointer)name, value);
  return weir_expr_substitute(e, map);
}

/* ---- bindings ---- */

GHashTable *weir_bindings_new(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

void weir_bindings_set(GHashTable *bindings, const char *name, gint64 value) {
  g_return_if_fail(bindings != NULL && name != NULL);
  gint64 *v = g_new(gint64, 1);
  *v = value;
  g_hash_table_replace(bindings, g_strdup(name), v);
}
