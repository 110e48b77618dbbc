/* grad-code.c — backward rule of Pointwise nodes by symbolic
 * differentiation of their tasklet code (ir/weir-code.h).
 *
 * For input connector x (one of a, b, ... of the node) the body is walked
 * in order; each local L = e gets a companion local dl_L = de/dx, and the
 * output assignment y = e becomes, in a new Pointwise node over the same
 * inputs plus dY (the next connector letter),
 *     <the locals and their derivatives>
 *     y = <dY> * (de/dx)
 * whose result is summed to x's shape (SumTo).  Derivatives are built as
 * text from the AST with the usual rules (sum, product, quotient, chain
 * rule for exp, log, sqrt, tanh, erf, the trigonometric and hyperbolic
 * functions, abs, pow, min/max by the
 * selected argument, ternaries by branch); comparisons, logic, integer
 * casts, floor and ceil have derivative 0.  Trivial terms (0, 1) are folded
 * so the code stays short.  Indexed connectors, '%' on floats and outputs
 * other than y are refused with an error naming the node.
 */
#include <string.h>

#include "autodiff-private.h"
#include "weir-ops.h"

gboolean weir_grad_pointwise_rule(WeirGradContext *ctx, GError **error);

typedef struct {
  const char *target;       /* input connector differentiated against */
  const char *target_index; /* for a connector read by index: the index
                               text of the occurrence differentiated
                               against (other occurrences are constants) */
  GHashTable *local;        /* local name -> TRUE once assigned */
  const char *error;        /* first unsupported construct */
} Diff;

static gboolean is_zero(const char *s) {
  return strcmp(s, "0") == 0;
}
static gboolean is_one(const char *s) {
  return strcmp(s, "1") == 0;
}

/* Folding constructors; arguments are owned and consumed. */
static char *d_add(char *a, char *b, gboolean minus) {
  if (is_zero(b)) {
    g_free(b);
    return a;
  }
  if (is_zero(a)) {
    g_free(a);
    char *r = minus ? g_strdup_printf("(-(%s))", b) : g_strdup(b);
    g_free(b);
    return r;
  }
  char *r = g_strdup_printf("(%s %c %s)", a, minus ? '-' : '+', b);
  g_free(a);
  g_free(b);
  return r;
}

static char *d_mul(char *a, char *b) {
  if (is_zero(a) || is_zero(b)) {
    g_free(a);
    g_free(b);
    return g_strdup("0");
  }
  if (is_one(a)) {
    g_free(a);
    return b;
  }
  if (is_one(b)) {
    g_free(b);
    return a;
  }
  char *r = g_strdup_printf("(%s * %s)", a, b);
  g_free(a);
  g_free(b);
  return r;
}

static char *text(const WeirAst *e) {
  char *t = weir_ast_to_string(e);
  char *r = g_strdup_printf("(%s)", t);
  g_free(t);
  return r;
}

static char *derive(Diff *d, const WeirAst *e);

/* "i, j + 1" for x[i, j + 1]. */
static char *index_text(const WeirAst *e) {
  GString *t = g_string_new(NULL);
  for (guint i = 0; e->args && i < e->args->len; i++) {
    g_autofree char *a = weir_ast_to_string(g_ptr_array_index(e->args, i));
    g_string_append_printf(t, "%s%s", i ? ", " : "", a);
  }
  return g_string_free(t, FALSE);
}

static void collect_indices(const WeirAst *e, const char *conn,
                            GPtrArray *out) {
  if (!e)
    return;
  if (e->kind == WEIR_AST_INDEX && strcmp(e->name, conn) == 0) {
    g_autofree char *idx = index_text(e);
    gboolean seen = FALSE;
    for (guint i = 0; i < out->len; i++) {
      g_autofree char *other = g_strjoinv(", ", out->pdata[i]);
      seen = seen || strcmp(other, idx) == 0;
    }
    if (!seen) {
      guint n = e->args ? e->args->len : 0;
      char **comps = g_new0(char *, n + 1);
      for (guint i = 0; i < n; i++)
        comps[i] = weir_ast_to_string(g_ptr_array_index(e->args, i));
      g_ptr_array_add(out, comps);
    }
  }
  collect_indices(e->a, conn, out);
  collect_indices(e->b, conn, out);
  collect_indices(e->c, conn, out);
  for (guint i = 0; e->args && i < e->args->len; i++)
    collect_indices(g_ptr_array_index(e->args, i), conn, out);
}

GPtrArray *weir_grad_code_indices(const WeirCode *code, const char *conn) {
  GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(code->stmts, i);
    collect_indices(st->value, conn, out);
  }
  return out;
}

static char *arg_text(const WeirAst *e, guint i) {
  return text(g_ptr_array_index(e->args, i));
}

static char *derive_arg(Diff *d, const WeirAst *e, guint i) {
  return derive(d, g_ptr_array_index(e->args, i));
}

static char *derive(Diff *d, const WeirAst *e) {
  switch (e->kind) {
  case WEIR_AST_INT:
  case WEIR_AST_FLOAT:
  case WEIR_AST_BOOL:
    return g_strdup("0");
  case WEIR_AST_NAME: {
    if (g_hash_table_contains(d->local, e->name))
      return g_strdup_printf("dl_%s", e->name);
    /* the target connector; other connectors, symbols and map parameters
     * are constants */
    return g_strdup(strcmp(e->name, d->target) == 0 ? "1" : "0");
  }
  case WEIR_AST_INDEX: {
    if (strcmp(e->name, d->target) != 0)
      return g_strdup("0");
    if (!d->target_index) {
      d->error = d->error ? d->error : "indexed access";
      return g_strdup("0");
    }
    g_autofree char *idx = index_text(e);
    return g_strdup(strcmp(idx, d->target_index) == 0 ? "1" : "0");
  }
  case WEIR_AST_UNARY:
    if (e->op == WEIR_OP_NEG) {
      char *da = derive(d, e->a);
      if (is_zero(da))
        return da;
      char *r = g_strdup_printf("(-%s)", da);
      g_free(da);
      return r;
    }
    return g_strdup("0");
  case WEIR_AST_BINARY: {
    switch (e->op) {
    case WEIR_OP_ADD:
    case WEIR_OP_SUB:
      return d_add(derive(d, e->a), derive(d, e->b), e->op == WEIR_OP_SUB);
    case WEIR_OP_MUL:
      return d_add(d_mul(derive(d, e->a), text(e->b)),
                   d_mul(text(e->a), derive(d, e->b)), FALSE);
    case WEIR_OP_DIV: {
      /* da / b - a db / b^2 */
      char *first = derive(d, e->a);
      if (!is_zero(first)) {
        char *tb = text(e->b);
        /* 1.0: with an integer divisor (a pool's window size), 1 / b
         * would be an integer division */
        char *q =
            g_strdup_printf("(%s / %s)", is_one(first) ? "1.0" : first, tb);
        g_free(first);
        g_free(tb);
        first = q;
      }
      char *db = derive(d, e->b);
      char *second = g_strdup("0");
      if (!is_zero(db)) {
        char *ta = text(e->a), *tb = text(e->b);
        g_free(second);
        second = g_strdup_printf("(%s * %s / (%s * %s))", ta, db, tb, tb);
        g_free(ta);
        g_free(tb);
      }
      g_free(db);
      return d_add(first, second, TRUE);
    }
    case WEIR_OP_MOD:
      d->error = d->error ? d->error : "'%'";
      return g_strdup("0");
    default: /* comparisons and logic */
      return g_strdup("0");
    }
  }
  case WEIR_AST_TERNARY: {
    char *db = derive(d, e->b), *dc = derive(d, e->c);
    if (is_zero(db) && is_zero(dc)) {
      g_free(dc);
      return db;
    }
    char *tc = text(e->a);
    char *r = g_strdup_printf("(%s ? %s : %s)", tc, db, dc);
    g_free(tc);
    g_free(db);
    g_free(dc);
    return r;
  }
  case WEIR_AST_CALL:
    break;
  }
  /* calls */
  guint n = e->args ? e->args->len : 0;
  char *a = n > 0 ? arg_text(e, 0) : NULL;
  char *r = NULL;
  switch (e->func) {
  case WEIR_FUNC_EXP:
    r = d_mul(g_strdup_printf("exp%s", a), derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_LOG:
    r = d_mul(g_strdup_printf("(1 / %s)", a), derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_SQRT:
    r = d_mul(g_strdup_printf("(0.5 / sqrt%s)", a), derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_TANH:
    r = d_mul(g_strdup_printf("(1 - tanh%s * tanh%s)", a, a),
              derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_ERF:
    r = d_mul(g_strdup_printf("(1.1283791670955126 * exp(-(%s * %s)))", a, a),
              derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_SIN:
    r = d_mul(g_strdup_printf("cos%s", a), derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_COS:
    r = d_mul(g_strdup_printf("(-sin%s)", a), derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_TAN: /* 1 + tan^2 */
    r = d_mul(g_strdup_printf("(1 + tan%s * tan%s)", a, a),
              derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_ASIN: /* 1 / sqrt(1 - x^2) */
    r = d_mul(g_strdup_printf("(1 / sqrt(1 - %s * %s))", a, a),
              derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_ACOS: /* -1 / sqrt(1 - x^2) */
    r = d_mul(g_strdup_printf("(-1 / sqrt(1 - %s * %s))", a, a),
              derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_ATAN: /* 1 / (1 + x^2) */
    r = d_mul(g_strdup_printf("(1 / (1 + %s * %s))", a, a),
              derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_SINH:
    r = d_mul(g_strdup_printf("cosh%s", a), derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_COSH:
    r = d_mul(g_strdup_printf("sinh%s", a), derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_ASINH: /* 1 / sqrt(x^2 + 1) */
    r = d_mul(g_strdup_printf("(1 / sqrt(%s * %s + 1))", a, a),
              derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_ACOSH: /* 1 / sqrt(x^2 - 1) */
    r = d_mul(g_strdup_printf("(1 / sqrt(%s * %s - 1))", a, a),
              derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_ATANH: /* 1 / (1 - x^2) */
    r = d_mul(g_strdup_printf("(1 / (1 - %s * %s))", a, a),
              derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_ABS:
    r = d_mul(g_strdup_printf("(%s < 0 ? -1 : 1)", a), derive_arg(d, e, 0));
    break;
  case WEIR_FUNC_POW: {
    char *b = arg_text(e, 1);
    char *db = derive_arg(d, e, 1);
    char *left = d_mul(g_strdup_printf("(%s * pow(%s, %s - 1))", b, a, b),
                       derive_arg(d, e, 0));
    char *right =
        is_zero(db)
            ? db
            : d_mul(g_strdup_printf("(pow(%s, %s) * log%s)", a, b, a), db);
    r = d_add(left, right, FALSE);
    g_free(b);
    break;
  }
  case WEIR_FUNC_MIN:
  case WEIR_FUNC_MAX: {
    /* the derivative of the argument selected (the first on ties) */
    if (n != 2) {
      d->error = d->error ? d->error : "min/max of more than two values";
      r = g_strdup("0");
      break;
    }
    char *b = arg_text(e, 1);
    char *da = derive_arg(d, e, 0), *db = derive_arg(d, e, 1);
    if (is_zero(da) && is_zero(db)) {
      g_free(db);
      r = da;
    } else {
      r = g_strdup_printf("(%s %s %s ? %s : %s)", a,
                          e->func == WEIR_FUNC_MIN ? "<=" : ">=", b, da, db);
      g_free(da);
      g_free(db);
    }
    g_free(b);
    break;
  }
  case WEIR_FUNC_CAST_F32:
  case WEIR_FUNC_CAST_F64: {
    char *da = derive_arg(d, e, 0);
    r = is_zero(da)
            ? da
            : g_strdup_printf(
                  "%s(%s)", e->func == WEIR_FUNC_CAST_F32 ? "f32" : "f64", da);
    if (r != da)
      g_free(da);
    break;
  }
  default: /* floor, ceil, rint, isnan, isfinite, integer and bool casts */
    r = g_strdup("0");
    break;
  }
  g_free(a);
  return r;
}

char *weir_grad_code_derivative(const WeirCode *code, const char *out,
                                const char *target, const char *target_index,
                                char **body_out, const char **unsupported) {
  Diff d = {.target = target, .target_index = target_index};
  d.local = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  GString *body = g_string_new(NULL);
  char *dout = NULL;
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(code->stmts, i);
    /* an indexed assignment only to the output (out[f(i)] = e: the
     * caller reads its gradient at the same index) */
    if (st->target->kind != WEIR_AST_NAME &&
        (st->target->kind != WEIR_AST_INDEX ||
         strcmp(st->target->name, out) != 0)) {
      d.error = "an indexed assignment to a name other than the output";
      break;
    }
    char *de = derive(&d, st->value);
    g_autofree char *val = weir_ast_to_string(st->value);
    if (strcmp(st->target->name, out) == 0) {
      g_free(dout);
      dout = de;
      continue;
    }
    if (strcmp(st->target->name, target) == 0) {
      g_free(de);
      d.error = "an assignment to an input connector";
      break;
    }
    g_string_append_printf(body, "%s = %s\ndl_%s = %s\n", st->target->name, val,
                           st->target->name, de);
    g_hash_table_add(d.local, g_strdup(st->target->name));
    g_free(de);
  }
  g_hash_table_unref(d.local);
  if (d.error || !dout) {
    g_free(dout);
    g_string_free(body, TRUE);
    *unsupported = d.error ? d.error : "no assignment to the output";
    *body_out = NULL;
    return NULL;
  }
  *unsupported = NULL;
  *body_out = g_string_free(body, FALSE);
  return dout;
}

gboolean weir_grad_pointwise_rule(WeirGradContext *ctx, GError **error) {
  const WeirNode *n = weir_grad_node(ctx);
  const char *dy = weir_grad_dout(ctx, 0, error);
  if (!dy)
    return TRUE;
  const WeirAttr *code_attr = weir_node_attr(n, "code");
  if (!code_attr || code_attr->type != WEIR_ATTR_STRING)
    return weir_grad_fail(ctx, error, WEIR_ERROR_INVALID,
                          "attribute 'code' is missing");
  g_autoptr(GError) local = NULL;
  g_autoptr(WeirCode) code = weir_code_parse(code_attr->s, &local);
  if (!code)
    return weir_grad_fail(ctx, error, WEIR_ERROR_INVALID, "%s", local->message);
  guint n_in = 0;
  while (weir_grad_input(ctx, n_in))
    n_in++;
  if (n_in >= 8)
    return weir_grad_fail(ctx, error, WEIR_ERROR_UNSUPPORTED,
                          "backward of a Pointwise node with 8 inputs (the "
                          "gradient node needs one more)");
  const char dy_conn = (char)('a' + n_in);
  for (guint k = 0; k < n_in; k++) {
    if (!weir_grad_wants(ctx, k))
      continue;
    /* connectors a..h are not locals */
    for (guint i = 0; i < code->stmts->len; i++) {
      const WeirStmt *st = g_ptr_array_index(code->stmts, i);
      if (st->target->kind == WEIR_AST_NAME && strlen(st->target->name) == 1 &&
          st->target->name[0] >= 'a' && st->target->name[0] <= 'h')
        return weir_grad_fail(ctx, error, WEIR_ERROR_UNSUPPORTED,
                              "symbolic derivative of the code: an "
                              "assignment to a connector name is not "
                              "supported");
    }
    char target[2] = {(char)('a' + k), 0};
    g_autofree char *body = NULL;
    const char *unsupported = NULL;
    g_autofree char *dout =
        weir_grad_code_derivative(code, "y", target, NULL, &body, &unsupported);
    if (!dout)
      return weir_grad_fail(ctx, error, WEIR_ERROR_UNSUPPORTED,
                            "symbolic derivative of the code: %s is not "
                            "supported",
                            unsupported);
    if (is_zero(dout))
      continue;
    g_autofree char *text_s =
        g_strdup_printf("%sy = %c * %s", body, dy_conn, dout);
    const char *ins[9];
    for (guint i = 0; i < n_in; i++)
      ins[i] = weir_grad_input(ctx, i);
    ins[n_in] = dy;
    const char *x = weir_grad_input(ctx, k);
    g_autofree char *base = g_strdup_printf("%s_grad", x);
    const char *full =
        weir_grad_pointwise(ctx, base, dy, text_s, ins, n_in + 1);
    weir_grad_add(ctx, k, weir_grad_sum_to(ctx, full, x));
  }
  return TRUE;
}
