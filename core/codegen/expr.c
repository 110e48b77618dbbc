/* expr.c — symbolic expressions and element addresses as C text.
 *
 * Conventions:
 *  - Symbolic expressions (sizes, bounds, strides) are printed in int64_t
 *    arithmetic; floor division, modulo, min and max go through helpers.
 *  - Printers return owned text and its C precedence (P_* in *prec); the
 *    caller wraps it with cg_wrap where needed.
 *  - Every element address is "base[sum of index x stride]" with the
 *    container's strides as symbolic expressions; a nested function's
 *    arguments use stride parameters, represented as synthetic symbols
 *    whose names start with '$' (they cannot clash with program symbols).
 */
#include <string.h>

#include "codegen-private.h"

/* ------------------------------------------------------ names in a function */

const char *cg_fn_symbol(Fn *f, const char *name) {
  if (name[0] == '$') {
    const char *c = g_hash_table_lookup(f->synth, name);
    if (!c) {
      cg_gen_fail(f->gen, WEIR_ERROR_INVALID,
                  "%s: internal symbol '%s' unknown", f->where, name);
      return "0";
    }
    if (!g_hash_table_contains(f->synth_used, name))
      g_hash_table_add(f->synth_used, g_strdup(name));
    return c;
  }
  if (g_hash_table_contains(f->params, name))
    return cg_namer_get(f->names, "p", name);
  if (!g_hash_table_contains(f->sym_used, name))
    g_hash_table_add(f->sym_used, g_strdup(name));
  return cg_namer_get(f->names, "s", name);
}

CInfo *cg_fn_container(Fn *f, const char *name) {
  CInfo *ci = name ? g_hash_table_lookup(f->cbyname, name) : NULL;
  if (!ci)
    cg_gen_fail(f->gen, WEIR_ERROR_INVALID, "%s: unknown container '%s'",
                f->where, name ? name : "");
  return ci;
}

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
        g_autofree char *txt = cg_wrap(cg_sym_c(f, m, &p), &p, P_MUL);
        g_string_append_printf(s, " - %s", txt);
      } else {
        g_autofree char *txt = cg_wrap(cg_sym_c(f, t, &p), &p, P_MUL);
        g_string_append_printf(s, "%s%s", s->len > 0 ? " + " : "", txt);
      }
    }
  }
  *prec = P_ADD;
  return g_string_free(s, FALSE);
}

static char *sym_call2(Fn *f, const char *name, WeirExpr *a, WeirExpr *b) {
  int pa, pb;
  g_autofree char *ta = cg_sym_c(f, a, &pa);
  g_autofree char *tb = cg_sym_c(f, b, &pb);
  return g_strdup_printf("%s(%s, %s)", name, ta, tb);
}

char *cg_sym_c(Fn *f, WeirExpr *e, int *prec) {
  *prec = P_ATOM;
  guint n = weir_expr_n_operands(e);
  switch (weir_expr_kind(e)) {
  case WEIR_EXPR_CONST:
    return cg_format_int(weir_expr_const_value(e), prec);
  case WEIR_EXPR_SYMBOL:
    return g_strdup(cg_fn_symbol(f, weir_expr_symbol_name(e)));
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
      g_autofree char *t = cg_wrap(cg_sym_c(f, x, &p), &p, P_MUL + 1);
      g_string_append_printf(s, "%s%s", s->len ? " * " : "", t);
    }
    if (coef < 0 && coef != G_MININT64) {
      g_string_prepend_c(s, '-');
      coef = -coef;
    }
    if (coef != 1) {
      int p;
      g_autofree char *t = cg_wrap(cg_format_int(coef, &p), &p, P_MUL + 1);
      g_string_append_printf(s, " * %s", t);
    }
    *prec = P_MUL;
    return g_string_free(s, FALSE);
  }
  case WEIR_EXPR_FLOORDIV:
  case WEIR_EXPR_MOD: {
    g_autofree char *h = cg_helper(
        f->gen, weir_expr_kind(e) == WEIR_EXPR_MOD ? H_MOD : H_FLOORDIV,
        WEIR_DTYPE_I64);
    return sym_call2(f, h, weir_expr_operand(e, 0), weir_expr_operand(e, 1));
  }
  case WEIR_EXPR_MIN:
  case WEIR_EXPR_MAX: {
    g_autofree char *h =
        cg_helper(f->gen, weir_expr_kind(e) == WEIR_EXPR_MIN ? H_MIN : H_MAX,
                  WEIR_DTYPE_I64);
    int p;
    char *acc = cg_sym_c(f, weir_expr_operand(e, 0), &p);
    for (guint i = 1; i < n; i++) {
      g_autofree char *b = cg_sym_c(f, weir_expr_operand(e, i), &p);
      char *next = g_strdup_printf("%s(%s, %s)", h, acc, b);
      g_free(acc);
      acc = next;
    }
    return acc;
  }
  }
  g_return_val_if_reached(g_strdup("0"));
}

char *cg_sym_text(Fn *f, WeirExpr *e) {
  int p;
  return cg_sym_c(f, e, &p);
}

/* ----------------------------------------------------------------- elements */

GPtrArray *cg_elem_offset(const CInfo *ci, WeirExpr *const *idx) {
  GPtrArray *terms =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint d = 0; d < ci->strides->len; d++) {
    g_ptr_array_add(terms, weir_expr_ref(idx[d]));
    g_ptr_array_add(terms, weir_expr_ref(g_ptr_array_index(ci->strides, d)));
  }
  return terms;
}

GPtrArray *cg_subset_offset(const CInfo *ci, const WeirSubset *sub) {
  g_autofree WeirExpr **idx = g_new0(WeirExpr *, sub->rank + 1);
  for (guint d = 0; d < sub->rank; d++)
    idx[d] = sub->dims[d].begin;
  return cg_elem_offset(ci, idx);
}

/* Whether e divides or takes a modulo anywhere. */
static gboolean has_divmod(WeirExpr *e) {
  WeirExprKind k = weir_expr_kind(e);
  if (k == WEIR_EXPR_FLOORDIV || k == WEIR_EXPR_MOD)
    return TRUE;
  guint n = weir_expr_n_operands(e);
  for (guint i = 0; i < n; i++)
    if (has_divmod(weir_expr_operand(e, i)))
      return TRUE;
  return FALSE;
}

/* e with every mod(a, c) written as a - c * floordiv(a, c) and
 * floordiv(floordiv(a, b), c) as floordiv(a, b * c), for constants b, c >
 * 0 (both identities of floored division), rebuilt through the
 * simplifying constructors, so that the divisions of a flat index split
 * into several dimensions and flattened again cancel. (transfer full) */
static WeirExpr *divmod_expand(WeirExpr *e) {
  WeirExprKind k = weir_expr_kind(e);
  guint n = weir_expr_n_operands(e);
  gint64 c = 0;
  if ((k == WEIR_EXPR_FLOORDIV || k == WEIR_EXPR_MOD) && n == 2 &&
      weir_expr_is_const(weir_expr_operand(e, 1), &c) && c > 0) {
    g_autoptr(WeirExpr) a = divmod_expand(weir_expr_operand(e, 0));
    gint64 b = 0;
    g_autoptr(WeirExpr) q = NULL;
    if (weir_expr_kind(a) == WEIR_EXPR_FLOORDIV &&
        weir_expr_is_const(weir_expr_operand(a, 1), &b) && b > 0 &&
        b <= G_MAXINT64 / c) {
      g_autoptr(WeirExpr) bc = weir_expr_const(b * c);
      q = weir_expr_floordiv(weir_expr_operand(a, 0), bc);
    } else {
      g_autoptr(WeirExpr) ce = weir_expr_const(c);
      q = weir_expr_floordiv(a, ce);
    }
    if (k == WEIR_EXPR_FLOORDIV)
      return g_steal_pointer(&q);
    g_autoptr(WeirExpr) cq = weir_expr_mul_const(q, c);
    return weir_expr_sub(a, cq);
  }
  if (k != WEIR_EXPR_ADD && k != WEIR_EXPR_MUL)
    return weir_expr_ref(e);
  WeirExpr *acc = divmod_expand(weir_expr_operand(e, 0));
  for (guint i = 1; i < n; i++) {
    g_autoptr(WeirExpr) x = divmod_expand(weir_expr_operand(e, i));
    WeirExpr *next =
        k == WEIR_EXPR_ADD ? weir_expr_add(acc, x) : weir_expr_mul(acc, x);
    weir_expr_unref(acc);
    acc = next;
  }
  return acc;
}

/* Text of an offset: the terms in dimension order, constants summed at the
 * end; *zero when it is the constant 0.  When the indices divide and take
 * modulos that cancel in the sum (a flat index split into the dimensions
 * of a reshape and flattened again: c * floordiv(e, c) + mod(e, c)), the
 * offset is the simplified sum instead, a plain affine index
 * (divmod_expand). */
static char *offset_text(Fn *f, GPtrArray *terms, int *prec, gboolean *zero) {
  gboolean divmod = FALSE;
  for (guint i = 0; i + 1 < terms->len && !divmod; i += 2)
    divmod = has_divmod(g_ptr_array_index(terms, i));
  if (divmod) {
    g_autoptr(WeirExpr) total = weir_expr_const(0);
    for (guint i = 0; i + 1 < terms->len; i += 2) {
      g_autoptr(WeirExpr) x = divmod_expand(g_ptr_array_index(terms, i));
      g_autoptr(WeirExpr) t = weir_expr_mul(x, g_ptr_array_index(terms, i + 1));
      g_autoptr(WeirExpr) sum = weir_expr_add(total, t);
      weir_expr_unref(total);
      total = g_steal_pointer(&sum);
    }
    if (!has_divmod(total)) {
      gint64 c;
      *zero = weir_expr_is_const(total, &c) && c == 0;
      return cg_sym_c(f, total, prec);
    }
  }
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
      g_autofree char *x = cg_wrap(cg_sym_c(f, index, &p), &p, P_MUL);
      g_autofree char *y = cg_wrap(cg_sym_c(f, stride, &q), &q, P_MUL + 1);
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
      g_autofree char *x = cg_wrap(cg_sym_c(f, m, &p), &p, P_MUL);
      g_string_append_printf(s, " - %s", x);
    } else {
      g_autofree char *x = cg_wrap(cg_sym_c(f, part, &p), &p, P_ADD);
      g_string_append_printf(s, "%s%s", s->len ? " + " : "", x);
    }
    last = p;
    items++;
  }
  *zero = items == 0 && konst == 0;
  if (konst != 0 || items == 0) {
    if (items == 0) {
      g_autofree char *k = cg_format_int(konst, &last);
      g_string_append(s, k);
      items++;
    } else {
      int p;
      gboolean neg = konst < 0 && konst != G_MININT64;
      g_autofree char *k = cg_format_int(neg ? -konst : konst, &p);
      g_string_append_printf(s, " %c %s", neg ? '-' : '+', k);
      items++;
    }
  }
  *prec = items > 1 ? P_ADD : last;
  return g_string_free(s, FALSE);
}

char *cg_elem_ref(Fn *f, CInfo *ci, GPtrArray *off) {
  ci->used = TRUE;
  int p;
  gboolean zero;
  g_autofree char *o = offset_text(f, off, &p, &zero);
  return g_strdup_printf("%s[%s]", ci->cname, o);
}

char *cg_elem_ptr(Fn *f, CInfo *ci, GPtrArray *off) {
  ci->used = TRUE;
  int p;
  gboolean zero;
  g_autofree char *o = offset_text(f, off, &p, &zero);
  if (zero)
    return g_strdup(ci->cname);
  o = cg_wrap(g_steal_pointer(&o), &p, P_ADD);
  return g_strdup_printf("%s + %s", ci->cname, o);
}

char *cg_elem_load(Fn *f, CInfo *ci, GPtrArray *off, int *prec) {
  char *r = cg_elem_ref(f, ci, off);
  *prec = P_ATOM;
  if (ci->c->dtype == WEIR_DTYPE_BOOL) {
    char *b = g_strdup_printf("%s != 0", r);
    g_free(r);
    *prec = P_EQ;
    return b;
  }
  if (weir_dtype_is_half(ci->c->dtype)) {
    char *h = cg_half_load(f->gen, ci->c->dtype, r);
    g_free(r);
    return h;
  }
  return r;
}

gboolean cg_subset_is_scalar(const WeirSubset *sub) {
  g_autoptr(WeirExpr) v = weir_subset_volume(sub);
  gint64 c;
  return weir_expr_is_const(v, &c) && c == 1;
}

/* ------------------------------------------------------------------ subsets */

gboolean cg_subset_is_whole(const WeirSubset *sub, const WeirContainer *c) {
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

GArray *cg_moving_dims(const WeirSubset *sub, GPtrArray *sizes) {
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

WeirExpr *cg_synth_symbol(Fn *f, const char *key, const char *cname) {
  g_hash_table_insert(f->synth, g_strdup(key), g_strdup(cname));
  return weir_expr_symbol(key);
}

WeirExpr **cg_subset_indices(const WeirSubset *sub, GArray *dims,
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

void cg_free_exprs(WeirExpr **v, guint n) {
  for (guint i = 0; i < n; i++)
    if (v[i])
      weir_expr_unref(v[i]);
  g_free(v);
}
