/* strength-reduction.c — replace expensive operations in a tasklet by
 * cheaper ones that give the same floating-point result.
 *
 * Site: one tasklet with at least one candidate: pow() with a constant
 * exponent, or a floating division by a constant.  A constant is a literal
 * (2, 0.5, -4.0) or an input connector whose memlet reads one element of a
 * container with constant data (how imported models pass the exponent of
 * Pow or the divisor of Div).  Parameter `relaxed` (bool, default false).
 *
 * Rewrites, applied only where the result type is a floating type and
 * equals the type of the operand kept:
 *   pow(x, 2)   -> x * x          (both are the correctly rounded square;
 *                                  f32 pow is computed through double,
 *                                  where the square is exact)
 *   pow(x, 1)   -> x
 *   pow(x, 0)   -> f32(1) / f64(1) (pow(x, 0) is 1 even for NaN)
 *   pow(x, 0.5) -> sqrt(x)        exact except for x = -0 (pow: +0, sqrt:
 *                                  -0) and x = -inf (pow: +inf, sqrt: NaN):
 *                                  done when x cannot be either (abs(),
 *                                  exp(), a square x*x or pow(x, 2), a
 *                                  non-negative literal) or relaxed=true
 *   x / c       -> x * (1/c)      when c = +-2^k and 1/c is a normal number
 *                                  of the type: both round the same real
 *                                  number x * 2^-k once; any other c only
 *                                  with relaxed=true (the reciprocal is
 *                                  rounded, results may differ by an ulp)
 * Integer arithmetic is never touched (C division truncates; pow on
 * integers goes through double).  pow(x, 2) duplicates x when it is a name,
 * an indexed connector or a literal; a larger x is computed once into a
 * new local "sr0", "sr1", ... before the statement (not when the pow sits
 * in a branch of ?:, && or ||, where x is duplicated instead, so nothing is
 * evaluated that was not before).
 *
 * The body is re-printed in canonical form (comments are not kept).  A
 * constant input connector whose every use was folded away is removed with
 * its memlet, and so are the map connectors, memlets and access node that
 * only fed it: that data movement (one element per execution) disappears.
 * FLOPs do not change (pow, sqrt, * and / count one each).
 */
#include <math.h>
#include <string.h>

#include "tier1-util.h"

gboolean weir_tier1_register_strength_reduction(GError **error);

static const WeirParamSpec sr_params[] = {
    {.name = "relaxed",
     .type = WEIR_PARAM_BOOL,
     .default_value = "false",
     .doc = "also rewrite pow(x, 0.5) with x possibly -0 or -inf, and "
            "divisions by constants that are not powers of two"},
};

/* ------------------------------------------------------------- context */

typedef struct {
  const WeirGraph *g;
  const WeirState *s;
  const WeirNode *n;
  WeirCode *code; /* checked copy */
  gboolean relaxed;
  gboolean *is_const; /* per input connector */
  double *value;      /* its constant value */
  GHashTable *names;  /* every name in use (for fresh locals) */
  GString *pre;       /* statements hoisted before the current one */
  guint next_local;
  guint rewrites;      /* rewrites done */
  GPtrArray *refusals; /* char*: candidates left alone, and why */
} Ctx;

static void ctx_clear(Ctx *c) {
  g_clear_pointer(&c->code, weir_code_free);
  g_clear_pointer(&c->is_const, g_free);
  g_clear_pointer(&c->value, g_free);
  g_clear_pointer(&c->names, g_hash_table_unref);
  if (c->pre)
    g_string_free(c->pre, TRUE);
  c->pre = NULL;
  g_clear_pointer(&c->refusals, g_ptr_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Ctx, ctx_clear)

/* Element `index` (flat, in elements) of constant data of dtype dt. */
static gboolean read_constant(GBytes *bytes, WeirDType dt, gint64 index,
                              double *out) {
  gsize size = 0;
  const guint8 *data = g_bytes_get_data(bytes, &size);
  gsize es = weir_dtype_size(dt);
  if (index < 0 || (gsize)(index + 1) * es > size)
    return FALSE;
  const guint8 *p = data + (gsize)index * es;
  switch (dt) {
  case WEIR_DTYPE_F32: {
    guint32 bits = GUINT32_FROM_LE(*(const guint32 *)(const void *)p);
    float f;
    memcpy(&f, &bits, sizeof f);
    *out = f;
    return TRUE;
  }
  case WEIR_DTYPE_F64: {
    guint64 bits = GUINT64_FROM_LE(*(const guint64 *)(const void *)p);
    double d;
    memcpy(&d, &bits, sizeof d);
    *out = d;
    return TRUE;
  }
  case WEIR_DTYPE_I32: {
    gint32 v = (gint32)GUINT32_FROM_LE(*(const guint32 *)(const void *)p);
    *out = v;
    return TRUE;
  }
  case WEIR_DTYPE_I64: {
    gint64 v = (gint64)GUINT64_FROM_LE(*(const guint64 *)(const void *)p);
    *out = (double)v;
    return TRUE;
  }
  default:
    *out = *p;
    return TRUE;
  }
}

/* Whether input connector `conn` reads one element of constant data. */
static gboolean connector_constant(const WeirGraph *g, const WeirState *s,
                                   const WeirNode *n, const char *conn,
                                   double *value) {
  g_autoptr(GPtrArray) in = weir_tier1_edges_in(s, n->id, conn, FALSE);
  if (in->len != 1)
    return FALSE;
  const WeirMemlet *m = g_ptr_array_index(in, 0);
  const WeirContainer *c = weir_graph_container(g, m->data);
  if (!c || !c->initial || m->dynamic || m->subset->rank != c->shape->len)
    return FALSE;
  gint64 index = 0;
  for (guint d = 0; d < m->subset->rank; d++) {
    gint64 b, size, stride;
    g_autoptr(WeirExpr) sz = weir_range_size(&m->subset->dims[d]);
    if (!weir_expr_is_const(m->subset->dims[d].begin, &b) ||
        !weir_expr_is_const(sz, &size) || size != 1 ||
        !weir_expr_is_const(g_ptr_array_index(c->strides, d), &stride))
      return FALSE;
    index += b * stride;
  }
  return read_constant(c->initial, c->dtype, index, value);
}

static void collect_names(const WeirAst *a, GHashTable *names) {
  if (!a)
    return;
  if (a->name)
    g_hash_table_add(names, g_strdup(a->name));
  collect_names(a->a, names);
  collect_names(a->b, names);
  collect_names(a->c, names);
  for (guint i = 0; a->args && i < a->args->len; i++)
    collect_names(g_ptr_array_index(a->args, i), names);
}

static gboolean ctx_init(Ctx *c, const WeirGraph *g, const WeirSite *site,
                         gboolean relaxed, char **reason) {
  memset(c, 0, sizeof *c);
  c->g = g;
  c->s = weir_graph_state(g, site->state);
  if (!c->s || site->n_nodes != 1)
    return weir_tier1_reason(reason, "the site must name one tasklet");
  c->n = weir_state_node(c->s, site->nodes[0]);
  if (!c->n || c->n->kind != WEIR_NODE_TASKLET)
    return weir_tier1_reason(reason, "node %u is not a tasklet",
                             site->nodes[0]);
  g_autoptr(GError) err = NULL;
  c->code = weir_tasklet_checked_code(g, c->s, c->n, &err);
  if (!c->code)
    return weir_tier1_reason(reason, "%s", err->message);
  c->relaxed = relaxed;
  guint ni = c->n->in_conns->len;
  c->is_const = g_new0(gboolean, ni + 1);
  c->value = g_new0(double, ni + 1);
  for (guint i = 0; i < ni; i++)
    c->is_const[i] = connector_constant(
        g, c->s, c->n, g_ptr_array_index(c->n->in_conns, i), &c->value[i]);
  c->names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < ni; i++)
    g_hash_table_add(c->names, g_strdup(g_ptr_array_index(c->n->in_conns, i)));
  for (guint i = 0; i < c->n->out_conns->len; i++)
    g_hash_table_add(c->names, g_strdup(g_ptr_array_index(c->n->out_conns, i)));
  for (guint i = 0; i < g->symbols->len; i++)
    g_hash_table_add(c->names, g_strdup(g_ptr_array_index(g->symbols, i)));
  for (guint i = 0; i < c->code->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(c->code->stmts, i);
    collect_names(st->target, c->names);
    collect_names(st->value, c->names);
  }
  c->pre = g_string_new(NULL);
  c->refusals = g_ptr_array_new_with_free_func(g_free);
  return TRUE;
}

/* ------------------------------------------------------------ analysis */

/* The constant value of a literal (possibly negated) or constant
 * connector. */
static gboolean ast_constant(const Ctx *c, const WeirAst *a, double *v) {
  switch (a->kind) {
  case WEIR_AST_INT:
    *v = (double)a->ival;
    return TRUE;
  case WEIR_AST_FLOAT:
    *v = a->fval;
    return TRUE;
  case WEIR_AST_UNARY:
    if (a->op == WEIR_OP_NEG && ast_constant(c, a->a, v)) {
      *v = -*v;
      return TRUE;
    }
    return FALSE;
  case WEIR_AST_NAME:
    if (a->binding == WEIR_BIND_INPUT && c->is_const[a->slot]) {
      *v = c->value[a->slot];
      return TRUE;
    }
    return FALSE;
  default:
    return FALSE;
  }
}

static gboolean is_float(WeirDType t) {
  return t == WEIR_DTYPE_F32 || t == WEIR_DTYPE_F64;
}

static gboolean same_ast(const WeirAst *a, const WeirAst *b) {
  g_autofree char *x = weir_ast_to_string(a);
  g_autofree char *y = weir_ast_to_string(b);
  return strcmp(x, y) == 0;
}

/* x can be neither -0 nor -inf (NaN aside). */
static gboolean never_negative_zero_or_inf(const Ctx *c, const WeirAst *x) {
  double v;
  if (x->kind == WEIR_AST_CALL &&
      (x->func == WEIR_FUNC_ABS || x->func == WEIR_FUNC_EXP))
    return TRUE;
  if (x->kind == WEIR_AST_BINARY && x->op == WEIR_OP_MUL &&
      same_ast(x->a, x->b))
    return TRUE;
  if (x->kind == WEIR_AST_CALL && x->func == WEIR_FUNC_POW &&
      ast_constant(c, g_ptr_array_index(x->args, 1), &v) && v == 2.0)
    return TRUE;
  return ast_constant(c, x, &v) && !signbit(v) && !isinf(v);
}

/* 1/c when c = +-2^k with a normal reciprocal in dtype t. */
static gboolean exact_reciprocal(double c, WeirDType t, double *r) {
  if (c == 0 || !isfinite(c))
    return FALSE;
  int e;
  double m = frexp(fabs(c), &e); /* |c| = m * 2^e, m in [0.5, 1) */
  if (m != 0.5)
    return FALSE;
  int k = e - 1; /* |c| = 2^k */
  int limit = t == WEIR_DTYPE_F32 ? 126 : 1022;
  if (k > limit || -k > limit + 1)
    return FALSE;
  *r = 1.0 / c;
  return TRUE;
}

static void refuse(Ctx *c, const WeirAst *a, const char *why) {
  g_autofree char *text = weir_ast_to_string(a);
  g_ptr_array_add(c->refusals, g_strdup_printf("'%s' %s", text, why));
}

/* -------------------------------------------------------------- printing */

static void append_double(GString *out, double v) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.17g", fabs(v));
  if (!strpbrk(buf, ".e"))
    g_strlcat(buf, ".0", sizeof buf);
  g_string_append_printf(out, v < 0 || signbit(v) ? "(-%s)" : "%s", buf);
}

static void emit(Ctx *c, GString *out, const WeirAst *a, gboolean guarded);

static void emit_list(Ctx *c, GString *out, const GPtrArray *args,
                      gboolean guarded) {
  for (guint i = 0; args && i < args->len; i++) {
    if (i)
      g_string_append(out, ", ");
    emit(c, out, g_ptr_array_index(args, i), guarded);
  }
}

static gboolean simple(const WeirAst *a) {
  return a->kind == WEIR_AST_NAME || a->kind == WEIR_AST_INDEX ||
         a->kind == WEIR_AST_INT || a->kind == WEIR_AST_FLOAT;
}

/* Text of x for use twice: itself when simple or guarded, else a new local
 * computed before the statement.  (transfer full) */
static char *reusable(Ctx *c, const WeirAst *x, gboolean guarded) {
  GString *text = g_string_new(NULL);
  emit(c, text, x, guarded);
  if (simple(x) || guarded)
    return g_string_free(text, FALSE);
  char *local = NULL;
  do {
    g_free(local);
    local = g_strdup_printf("sr%u", c->next_local++);
  } while (g_hash_table_contains(c->names, local));
  g_hash_table_add(c->names, g_strdup(local));
  g_string_append_printf(c->pre, "%s = %s\n", local, text->str);
  g_string_free(text, TRUE);
  return local;
}

/* Tries the pow() rewrites; FALSE leaves the call as it is. */
static gboolean emit_pow(Ctx *c, GString *out, const WeirAst *a,
                         gboolean guarded) {
  const WeirAst *x = g_ptr_array_index(a->args, 0);
  const WeirAst *e = g_ptr_array_index(a->args, 1);
  double v;
  if (!ast_constant(c, e, &v))
    return FALSE;
  if (!is_float(a->type) || x->type != a->type) {
    refuse(c, a, "is not a floating pow() of the type of its base");
    return FALSE;
  }
  if (v == 2.0) {
    g_autofree char *xs = reusable(c, x, guarded);
    g_string_append_printf(out, "(%s * %s)", xs, xs);
  } else if (v == 1.0) {
    g_string_append_c(out, '(');
    emit(c, out, x, guarded);
    g_string_append_c(out, ')');
  } else if (v == 0.0) {
    g_string_append(out, a->type == WEIR_DTYPE_F32 ? "f32(1)" : "f64(1)");
  } else if (v == 0.5) {
    if (!c->relaxed && !never_negative_zero_or_inf(c, x)) {
      refuse(c, a,
             "differs from sqrt() at -0 and -inf (relaxed=true allows it)");
      return FALSE;
    }
    g_string_append(out, "sqrt(");
    emit(c, out, x, guarded);
    g_string_append_c(out, ')');
  } else {
    refuse(c, a, "has an exponent with no exact cheaper form");
    return FALSE;
  }
  c->rewrites++;
  return TRUE;
}

/* Tries x / c -> x * (1/c); FALSE leaves the division as it is. */
static gboolean emit_div(Ctx *c, GString *out, const WeirAst *a,
                         gboolean guarded) {
  double v, r;
  if (!ast_constant(c, a->b, &v))
    return FALSE;
  if (!is_float(a->type) || a->a->type != a->type) {
    if (is_float(a->type))
      refuse(c, a, "mixes floating types");
    return FALSE;
  }
  if (!exact_reciprocal(v, a->type, &r)) {
    if (!c->relaxed || v == 0 || !isfinite(v)) {
      refuse(c, a,
             "divides by a constant that is not a power of two (its "
             "reciprocal is inexact; relaxed=true allows it)");
      return FALSE;
    }
    r = 1.0 / v;
  }
  g_string_append_c(out, '(');
  emit(c, out, a->a, guarded);
  g_string_append(out, " * ");
  append_double(out, r);
  g_string_append_c(out, ')');
  c->rewrites++;
  return TRUE;
}

static void emit(Ctx *c, GString *out, const WeirAst *a, gboolean guarded) {
  switch (a->kind) {
  case WEIR_AST_INT:
    g_string_append_printf(out, "%" G_GINT64_FORMAT, a->ival);
    return;
  case WEIR_AST_FLOAT:
    if (a->text)
      g_string_append(out, a->text);
    else
      append_double(out, a->fval);
    return;
  case WEIR_AST_BOOL:
    g_string_append(out, a->ival ? "true" : "false");
    return;
  case WEIR_AST_NAME:
    g_string_append(out, a->name);
    return;
  case WEIR_AST_INDEX:
    g_string_append_printf(out, "%s[", a->name);
    emit_list(c, out, a->args, guarded);
    g_string_append_c(out, ']');
    return;
  case WEIR_AST_UNARY:
    g_string_append_printf(out, "(%s", weir_op_symbol(a->op));
    emit(c, out, a->a, guarded);
    g_string_append_c(out, ')');
    return;
  case WEIR_AST_BINARY:
    if (a->op == WEIR_OP_DIV && emit_div(c, out, a, guarded))
      return;
    g_string_append_c(out, '(');
    emit(c, out, a->a, guarded);
    g_string_append_printf(out, " %s ", weir_op_symbol(a->op));
    /* the right operand of && and || is evaluated conditionally */
    emit(c, out, a->b, guarded || a->op == WEIR_OP_AND || a->op == WEIR_OP_OR);
    g_string_append_c(out, ')');
    return;
  case WEIR_AST_TERNARY:
    g_string_append_c(out, '(');
    emit(c, out, a->a, guarded);
    g_string_append(out, " ? ");
    emit(c, out, a->b, TRUE);
    g_string_append(out, " : ");
    emit(c, out, a->c, TRUE);
    g_string_append_c(out, ')');
    return;
  case WEIR_AST_CALL:
    if (a->func == WEIR_FUNC_POW && emit_pow(c, out, a, guarded))
      return;
    g_string_append_printf(out, "%s(", weir_func_name(a->func));
    emit_list(c, out, a->args, guarded);
    g_string_append_c(out, ')');
    return;
  }
}

/* The rewritten body in canonical form, or NULL when nothing changed.
 * (transfer full) */
static char *rewrite(Ctx *c, GError **error) {
  GString *body = g_string_new(NULL);
  for (guint i = 0; i < c->code->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(c->code->stmts, i);
    g_autoptr(GString) line = g_string_new(NULL);
    emit(c, line, st->target, FALSE);
    g_string_append(line, " = ");
    emit(c, line, st->value, FALSE);
    g_string_append(body, c->pre->str);
    g_string_truncate(c->pre, 0);
    g_string_append_printf(body, "%s\n", line->str);
  }
  g_autofree char *text = g_string_free(body, FALSE);
  if (c->rewrites == 0)
    return NULL;
  g_autoptr(WeirCode) parsed = weir_code_parse(text, error);
  if (!parsed)
    return NULL;
  return weir_code_to_string(parsed);
}

/* --------------------------------------------------------- the callbacks */

static gboolean has_candidate(const Ctx *c, const WeirAst *a) {
  double v;
  if (!a)
    return FALSE;
  if (a->kind == WEIR_AST_CALL && a->func == WEIR_FUNC_POW &&
      ast_constant(c, g_ptr_array_index(a->args, 1), &v))
    return TRUE;
  if (a->kind == WEIR_AST_BINARY && a->op == WEIR_OP_DIV && is_float(a->type) &&
      ast_constant(c, a->b, &v))
    return TRUE;
  if (has_candidate(c, a->a) || has_candidate(c, a->b) ||
      has_candidate(c, a->c))
    return TRUE;
  for (guint i = 0; a->args && i < a->args->len; i++)
    if (has_candidate(c, g_ptr_array_index(a->args, i)))
      return TRUE;
  return FALSE;
}

static void sr_match(const WeirGraph *g, GArray *sites) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_TASKLET)
        continue;
      WeirSite site = {.state = s->id, .n_nodes = 1, .nodes = {n->id}};
      g_auto(Ctx) c;
      if (!ctx_init(&c, g, &site, FALSE, NULL))
        continue;
      gboolean found = FALSE;
      for (guint j = 0; j < c.code->stmts->len && !found; j++) {
        const WeirStmt *st = g_ptr_array_index(c.code->stmts, j);
        found = has_candidate(&c, st->value);
      }
      if (found)
        g_array_append_val(sites, site);
    }
  }
}

static gboolean sr_can_apply(const WeirGraph *g, const WeirSite *site,
                             const WeirParams *params, char **reason) {
  g_auto(Ctx) c;
  if (!ctx_init(&c, g, site, weir_params_get_bool(params, "relaxed"), reason))
    return FALSE;
  g_autoptr(GError) err = NULL;
  g_autofree char *text = rewrite(&c, &err);
  if (text)
    return TRUE;
  if (err)
    return weir_tier1_reason(reason, "%s", err->message);
  if (c.refusals->len == 0)
    return weir_tier1_reason(reason,
                             "tasklet '%s' (node %u) has no pow() with a "
                             "constant exponent and no floating division by "
                             "a constant",
                             c.n->label, c.n->id);
  g_ptr_array_add(c.refusals, NULL);
  g_autofree char *all = g_strjoinv("; ", (char **)c.refusals->pdata);
  return weir_tier1_reason(reason,
                           "tasklet '%s' (node %u) has nothing to reduce "
                           "exactly: %s",
                           c.n->label, c.n->id, all);
}

static gboolean mentions(const WeirAst *a, const char *name) {
  if (!a)
    return FALSE;
  if (a->name && strcmp(a->name, name) == 0)
    return TRUE;
  if (mentions(a->a, name) || mentions(a->b, name) || mentions(a->c, name))
    return TRUE;
  for (guint i = 0; a->args && i < a->args->len; i++)
    if (mentions(g_ptr_array_index(a->args, i), name))
      return TRUE;
  return FALSE;
}

/* Removes memlet m (into node `dst`) and, going upstream, the map
 * connectors, memlets and access node that carried only its data.  A node
 * inside a map left without any input is tied to its map entry by an empty
 * memlet, so that it stays in the scope (parents from the scopes computed
 * before the edit). */
static gboolean remove_feed(WeirGraph *g, WeirState *s, const WeirScopes *sc,
                            WeirMemlet *m, GError **error) {
  guint dst = m->dst, src = m->src;
  g_autofree char *conn = g_strdup(m->src_conn);
  while (TRUE) {
    weir_state_remove_memlet(s, m->id);
    g_autoptr(GPtrArray) left = weir_tier1_edges_in(s, dst, NULL, TRUE);
    guint parent = weir_scopes_parent(sc, dst);
    if (left->len == 0 && parent &&
        !weir_state_add_memlet(g, s, parent, NULL, dst, NULL, NULL, NULL,
                               error))
      return FALSE;
    WeirNode *n = weir_state_node(s, src);
    if (n->kind == WEIR_NODE_ACCESS) {
      g_autoptr(GPtrArray) in = weir_tier1_edges_in(s, n->id, NULL, TRUE);
      g_autoptr(GPtrArray) out = weir_tier1_edges_out(s, n->id, NULL, TRUE);
      if (in->len == 0 && out->len == 0)
        weir_state_remove_node(s, n->id);
      return TRUE;
    }
    if (n->kind != WEIR_NODE_MAP_ENTRY || !conn ||
        !g_str_has_prefix(conn, "OUT_"))
      return TRUE;
    g_autoptr(GPtrArray) still = weir_tier1_edges_out(s, n->id, conn, TRUE);
    if (still->len > 0)
      return TRUE;
    g_autofree char *in_conn = g_strconcat("IN_", conn + 4, NULL);
    g_autoptr(GPtrArray) feed = weir_tier1_edges_in(s, n->id, in_conn, TRUE);
    weir_node_remove_out_conn(n, conn);
    weir_node_remove_in_conn(n, in_conn);
    if (feed->len != 1)
      return TRUE;
    m = g_ptr_array_index(feed, 0);
    dst = n->id;
    src = m->src;
    g_free(conn);
    conn = g_strdup(m->src_conn);
  }
}

static gboolean sr_apply(WeirGraph *g, const WeirSite *site,
                         const WeirParams *params, GError **error) {
  g_auto(Ctx) c;
  g_autofree char *reason = NULL;
  if (!ctx_init(&c, g, site, weir_params_get_bool(params, "relaxed"),
                &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  g_autofree char *text = rewrite(&c, error);
  if (!text) {
    if (error && !*error)
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "tasklet '%s' (node %u): nothing to reduce", c.n->label,
                  c.n->id);
    return FALSE;
  }
  WeirState *s = weir_graph_state(g, site->state);
  WeirNode *n = weir_state_node(s, site->nodes[0]);
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, error);
  g_autoptr(WeirCode) parsed = weir_code_parse(text, error);
  if (!sc || !parsed)
    return FALSE;
  weir_tasklet_set_code(n, text);
  /* Drop the constant connectors no longer read. */
  for (guint i = n->in_conns->len; i-- > 0;) {
    if (!c.is_const[i])
      continue;
    g_autofree char *conn = g_strdup(g_ptr_array_index(n->in_conns, i));
    gboolean used = FALSE;
    for (guint k = 0; k < parsed->stmts->len && !used; k++) {
      const WeirStmt *st = g_ptr_array_index(parsed->stmts, k);
      used = mentions(st->value, conn) || mentions(st->target, conn);
    }
    if (used)
      continue;
    g_autoptr(GPtrArray) in = weir_tier1_edges_in(s, n->id, conn, FALSE);
    for (guint k = 0; k < in->len; k++)
      if (!remove_feed(g, s, sc, g_ptr_array_index(in, k), error))
        return FALSE;
    weir_node_remove_in_conn(n, conn);
  }
  return TRUE;
}

static const WeirTransformInfo strength_reduction_info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "strength-reduction",
    .tier = 1,
    .description = "Replace pow() and divisions by constants in a tasklet by "
                   "cheaper operations with the same result",
    .params = sr_params,
    .n_params = G_N_ELEMENTS(sr_params),
    .match = sr_match,
    .can_apply = sr_can_apply,
    .apply = sr_apply,
};

gboolean weir_tier1_register_strength_reduction(GError **error) {
  return weir_transform_register(&strength_reduction_info, error);
}
