/* algebraic-simplification.c — removes operations that leave their operand
 * unchanged, on library nodes and inside tasklets.
 *
 * Sites:
 *  - [node]: a library node x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0 or
 *    pow(x, 1) (floating x), where the 1 or 0 is a constant container holding
 * only that value and the output has the dtype and shape of x (a constant that
 *    broadcasts x to a larger shape is not an identity).  The node is
 *    removed like an Identity (its readers read x; a graph output gets a
 *    copy of x).
 *  - [first, second]: Neg(Neg(x)) (both removed) and Transpose(Transpose(x))
 *    (one Transpose with the composed permutation, or none when it is the
 *    identity), where the intermediate is read only by the second node.
 *  - [tasklet]: a tasklet whose body contains a * 1, 1 * a, a / 1, a + 0,
 *    0 + a, a - 0 or -(-a) (1 and 0 literals), where the result has the
 *    type of a (so u8 * 1, which computes in i32, and i * 1.0, which
 *    computes in f64, stay).  The body is rewritten in canonical form.
 *
 * Floating-point exactness.  Every rewrite is exact, bit for bit, for
 * every input including NaN, infinities and signed zeros:
 *  - x * 1, x / 1, pow(x, 1), -(-x) and x - (+0.0) give x;
 *  - x + (+0.0) does NOT: for x = -0.0 it gives +0.0 (round to nearest).
 *    So a floating addition is only removed when the zero is -0.0
 *    (x + (-0.0) = x for every x, including -0.0): a constant holding only
 *    -0.0, or a literal -0.0 in a tasklet.  x - (-0.0) is x + (+0.0) and
 *    is kept for the same reason.  Integer additions and subtractions of
 *    0 are always removed.
 */
#include <math.h>
#include <string.h>

#include "tier2-util.h"
#include "weir-plugin.h"

gboolean weir_tier2_register_algebraic_simplification(GError **error);

/* ------------------------------------------------------- library nodes */

/* A binary node that is an identity on one operand: which one (0 or 1)
 * is x, or FALSE with *reason. */
static gboolean binary_identity(const WeirGraph *g, const WeirState *s,
                                const WeirNode *n, guint *x_index,
                                char **reason) {
  WeirTier2Port in[2];
  if (!weir_tier2_wired(g, s, n) || n->in_conns->len != 2 ||
      !weir_tier2_port(g, s, n, TRUE, 0, &in[0]) ||
      !weir_tier2_port(g, s, n, TRUE, 1, &in[1]))
    return weir_tier2_reject(reason,
                             "node '%s' (%s) does not follow the "
                             "library-node conventions",
                             n->label, n->op);
  gboolean mul = weir_tier2_is_op(n, "Mul"), add = weir_tier2_is_op(n, "Add");
  gboolean sub = weir_tier2_is_op(n, "Sub"), div = weir_tier2_is_op(n, "Div"),
           pw = weir_tier2_is_op(n, "Pow");
  if (!mul && !add && !sub && !div && !pw)
    return weir_tier2_reject(reason,
                             "node '%s' (%s) is not Mul, Div, Add, Sub or "
                             "Pow",
                             n->label, n->op);
  /* candidates for the neutral operand: the second, or the first when the
   * operation commutes */
  for (guint k = 2; k-- > 0;) {
    if (k == 0 && !mul && !add)
      break;
    const WeirContainer *c = in[k].container;
    const WeirContainer *x = in[1 - k].container;
    if (!weir_tier2_is_constant(c))
      continue;
    gboolean fl = weir_dtype_is_float(x->dtype);
    gboolean neutral;
    if (pw) /* integer pow goes through double: exact only for floats */
      neutral = fl && weir_tier2_constant_is(c, 1.0, FALSE);
    else if (mul || div)
      neutral = weir_tier2_constant_is(c, 1.0, FALSE);
    else if (!fl)
      neutral = weir_tier2_constant_is(c, 0.0, FALSE);
    else /* exact only with -0.0 (add) or +0.0 (sub) */
      neutral = weir_tier2_constant_is(c, add ? -0.0 : 0.0, TRUE);
    if (neutral) {
      *x_index = 1 - k;
      return TRUE;
    }
  }
  WeirTier2Port *cp = &in[1];
  if (!weir_tier2_is_constant(cp->container) && (mul || add) &&
      weir_tier2_is_constant(in[0].container))
    cp = &in[0];
  if (!weir_tier2_is_constant(cp->container))
    return weir_tier2_reject(reason, "no operand of %s '%s' is a constant",
                             n->op, n->label);
  if (pw && !weir_dtype_is_float(in[0].container->dtype))
    return weir_tier2_reject(reason,
                             "Pow '%s' is on integers, which pow computes "
                             "through double",
                             n->label);
  if (mul || div || pw)
    return weir_tier2_reject(reason, "'%s' is not all ones",
                             cp->container->name);
  gboolean fl = weir_dtype_is_float(cp->container->dtype);
  if (fl && add && weir_tier2_constant_is(cp->container, 0.0, TRUE))
    return weir_tier2_reject(reason,
                             "'%s' is +0.0: x + 0.0 turns -0.0 into +0.0, so "
                             "only an addition of -0.0 is exact",
                             cp->container->name);
  if (fl && sub && weir_tier2_constant_is(cp->container, -0.0, TRUE))
    return weir_tier2_reject(reason,
                             "'%s' is -0.0: x - (-0.0) turns -0.0 into +0.0",
                             cp->container->name);
  return weir_tier2_reject(reason, "'%s' is not all zeros",
                           cp->container->name);
}

static gboolean binary_can_apply(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n, char **reason) {
  guint xi;
  if (!binary_identity(g, s, n, &xi, reason))
    return FALSE;
  WeirTier2Port x, y;
  weir_tier2_port(g, s, n, TRUE, xi, &x);
  if (!weir_tier2_port(g, s, n, FALSE, 0, &y) || n->out_conns->len != 1)
    return weir_tier2_reject(reason, "%s '%s' has no single output", n->op,
                             n->label);
  return weir_tier2_can_bypass(g, s, n, &x, &y, reason);
}

static gboolean binary_apply(WeirGraph *g, WeirState *s, WeirNode *n,
                             GError **error) {
  guint xi = 0;
  binary_identity(g, s, n, &xi, NULL);
  WeirTier2Port x, y;
  weir_tier2_port(g, s, n, TRUE, xi, &x);
  weir_tier2_port(g, s, n, FALSE, 0, &y);
  return weir_tier2_bypass(g, s, n, &x, &y, error);
}

/* Pairs: Neg(Neg(x)) and Transpose(Transpose(x)). */
static gboolean pair_can_apply(const WeirGraph *g, const WeirState *s,
                               const WeirNode *a, const WeirNode *b,
                               char **reason) {
  WeirTier2Chain c;
  if (!weir_tier2_chain(g, s, a, b, &c, reason))
    return FALSE;
  if (weir_tier2_is_op(a, "Neg") && weir_tier2_is_op(b, "Neg"))
    return weir_tier2_chain_can_collapse(g, s, b, &c, TRUE, reason);
  if (weir_tier2_is_op(a, "Transpose") && weir_tier2_is_op(b, "Transpose")) {
    guint rank = c.z.container->shape->len;
    g_autofree gint64 *perm = g_new0(gint64, rank + 1);
    if (c.x.container->shape->len != rank ||
        !weir_tier2_compose_transposes(a, b, rank, perm))
      return weir_tier2_reject(reason, "a permutation is invalid");
    return weir_tier2_chain_can_collapse(
        g, s, b, &c, weir_tier2_perm_is_identity(perm, rank), reason);
  }
  return weir_tier2_reject(reason,
                           "'%s' (%s) and '%s' (%s) are not two Neg or two "
                           "Transpose nodes",
                           a->label, a->op, b->label, b->op);
}

static gboolean pair_apply(WeirGraph *g, WeirState *s, WeirNode *a, WeirNode *b,
                           GError **error) {
  WeirTier2Chain c;
  weir_tier2_chain(g, s, a, b, &c, NULL);
  if (weir_tier2_is_op(a, "Neg"))
    return weir_tier2_chain_remove(g, s, a, b, &c, error);
  guint rank = c.z.container->shape->len;
  g_autofree gint64 *perm = g_new0(gint64, rank + 1);
  weir_tier2_compose_transposes(a, b, rank, perm);
  if (weir_tier2_perm_is_identity(perm, rank))
    return weir_tier2_chain_remove(g, s, a, b, &c, error);
  WeirNode *n = weir_tier2_chain_replace(g, s, a, b, &c, "Transpose", error);
  if (!n)
    return FALSE;
  weir_node_set_attr_ints(n, "perm", perm, rank);
  return TRUE;
}

/* ------------------------------------------------------------ tasklets */

static gboolean is_literal(const WeirAst *e, double v) {
  return (e->kind == WEIR_AST_INT && (double)e->ival == v) ||
         (e->kind == WEIR_AST_FLOAT && e->fval == v && !signbit(e->fval));
}

/* A literal -0.0: unary minus of a floating 0 literal. */
static gboolean is_negative_zero(const WeirAst *e) {
  return e->kind == WEIR_AST_UNARY && e->op == WEIR_OP_NEG &&
         e->a->kind == WEIR_AST_FLOAT && e->a->fval == 0.0;
}

static gboolean same_type(const WeirAst *a, const WeirAst *b) {
  return a->type == b->type && a->untyped == b->untyped;
}

static const WeirAst *simplified(const WeirAst *e, guint *count);

/* The operand e reduces to, or NULL when no rule applies at its root
 * (rules look at the simplified operands). */
static const WeirAst *rule(const WeirAst *e, guint *count) {
  if (e->kind == WEIR_AST_UNARY && e->op == WEIR_OP_NEG) {
    const WeirAst *a = simplified(e->a, count);
    if (a->kind == WEIR_AST_UNARY && a->op == WEIR_OP_NEG && same_type(a->a, e))
      return a->a;
    return NULL;
  }
  if (e->kind != WEIR_AST_BINARY)
    return NULL;
  const WeirAst *a = simplified(e->a, count);
  const WeirAst *b = simplified(e->b, count);
  gboolean integer = !weir_dtype_is_float(e->type);
  switch (e->op) {
  case WEIR_OP_MUL:
    if (is_literal(b, 1) && same_type(a, e))
      return a;
    if (is_literal(a, 1) && same_type(b, e))
      return b;
    return NULL;
  case WEIR_OP_DIV:
    return is_literal(b, 1) && same_type(a, e) ? a : NULL;
  case WEIR_OP_ADD:
    if ((integer ? is_literal(b, 0) : is_negative_zero(b)) && same_type(a, e))
      return a;
    if ((integer ? is_literal(a, 0) : is_negative_zero(a)) && same_type(b, e))
      return b;
    return NULL;
  case WEIR_OP_SUB:
    return is_literal(b, 0) && same_type(a, e) ? a : NULL;
  default:
    return NULL;
  }
}

/* e with the rules applied at its root until none applies. */
static const WeirAst *simplified(const WeirAst *e, guint *count) {
  guint ignored = 0;
  for (;;) {
    /* operands are simplified again by the caller's emission: count the
     * root rewrites only */
    const WeirAst *r = rule(e, &ignored);
    if (!r)
      return e;
    (*count)++;
    e = r;
  }
}

/* Prints e simplified and fully parenthesized; *count receives the number
 * of rewrites. */
static void emit(GString *out, const WeirAst *e, guint *count) {
  e = simplified(e, count);
  switch (e->kind) {
  case WEIR_AST_INT:
    g_string_append_printf(out, "%" G_GINT64_FORMAT, e->ival);
    break;
  case WEIR_AST_FLOAT:
    if (e->text) {
      g_string_append(out, e->text);
    } else {
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      g_ascii_dtostr(buf, sizeof buf, e->fval);
      g_string_append(out, buf);
      if (!strpbrk(buf, ".eEn"))
        g_string_append(out, ".0");
    }
    break;
  case WEIR_AST_BOOL:
    g_string_append(out, e->ival ? "true" : "false");
    break;
  case WEIR_AST_NAME:
    g_string_append(out, e->name);
    break;
  case WEIR_AST_INDEX:
  case WEIR_AST_CALL:
    g_string_append(out, e->kind == WEIR_AST_INDEX ? e->name
                                                   : weir_func_name(e->func));
    g_string_append_c(out, e->kind == WEIR_AST_INDEX ? '[' : '(');
    for (guint i = 0; i < e->args->len; i++) {
      if (i)
        g_string_append(out, ", ");
      emit(out, g_ptr_array_index(e->args, i), count);
    }
    g_string_append_c(out, e->kind == WEIR_AST_INDEX ? ']' : ')');
    break;
  case WEIR_AST_UNARY:
    g_string_append_printf(out, "(%s", weir_op_symbol(e->op));
    emit(out, e->a, count);
    g_string_append_c(out, ')');
    break;
  case WEIR_AST_BINARY:
    g_string_append_c(out, '(');
    emit(out, e->a, count);
    g_string_append_printf(out, " %s ", weir_op_symbol(e->op));
    emit(out, e->b, count);
    g_string_append_c(out, ')');
    break;
  case WEIR_AST_TERNARY:
    g_string_append_c(out, '(');
    emit(out, e->a, count);
    g_string_append(out, " ? ");
    emit(out, e->b, count);
    g_string_append(out, " : ");
    emit(out, e->c, count);
    g_string_append_c(out, ')');
    break;
  }
}

/* The simplified body of a checked code in canonical form, and the number
 * of rewrites (transfer full; NULL when it does not parse back). */
static char *simplify_code(const WeirCode *code, guint *count) {
  g_autoptr(GString) text = g_string_new(NULL);
  *count = 0;
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(code->stmts, i);
    guint ignored = 0;
    emit(text, st->target, &ignored);
    g_string_append(text, " = ");
    emit(text, st->value, count);
    g_string_append_c(text, '\n');
  }
  g_autoptr(WeirCode) parsed = weir_code_parse(text->str, NULL);
  return parsed ? weir_code_to_string(parsed) : NULL;
}

static gboolean tasklet_can_apply(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, char **reason) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirCode) code = weir_tasklet_checked_code(g, s, n, &err);
  if (!code)
    return weir_tier2_reject(reason, "%s", err->message);
  guint count = 0;
  g_autofree char *text = simplify_code(code, &count);
  if (!count)
    return weir_tier2_reject(reason, "tasklet '%s' has nothing to simplify",
                             n->label);
  if (!text)
    return weir_tier2_reject(reason,
                             "the simplified body of tasklet '%s' does not "
                             "parse",
                             n->label);
  return TRUE;
}

static gboolean tasklet_apply(const WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  g_autoptr(WeirCode) code = weir_tasklet_checked_code(g, s, n, error);
  if (!code)
    return FALSE;
  guint count = 0;
  g_autofree char *text = simplify_code(code, &count);
  if (!text) {
    g_autofree char *where = weir_describe_node(s, n);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: the simplified body does not parse", where);
    return FALSE;
  }
  weir_tasklet_set_code(n, text);
  return TRUE;
}

/* ------------------------------------------------------- match & apply */

static gboolean single_candidate(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n) {
  if (n->kind == WEIR_NODE_TASKLET)
    return tasklet_can_apply(g, s, n, NULL);
  guint xi;
  return n->kind == WEIR_NODE_LIBRARY && binary_identity(g, s, n, &xi, NULL);
}

static void as_match(const WeirGraph *g, GArray *sites) {
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(s->nodes, i);
      if (single_candidate(g, s, n)) {
        WeirSite site = {.state = s->id, .n_nodes = 1, .nodes = {n->id}};
        g_array_append_val(sites, site);
      }
      if (!weir_tier2_is_op(n, "Neg") && !weir_tier2_is_op(n, "Transpose"))
        continue;
      WeirTier2Port y;
      if (!weir_tier2_port(g, s, n, FALSE, 0, &y))
        continue;
      for (guint e = 0; e < s->edges->len; e++) {
        WeirMemlet *m = g_ptr_array_index(s->edges, e);
        WeirNode *b =
            m->src == y.access->id ? weir_state_node(s, m->dst) : NULL;
        WeirTier2Chain c;
        if (weir_tier2_is_op(b, n->op) && g_strcmp0(m->dst_conn, "in0") == 0 &&
            weir_tier2_chain(g, s, n, b, &c, NULL)) {
          WeirSite site = {
              .state = s->id, .n_nodes = 2, .nodes = {n->id, b->id}};
          g_array_append_val(sites, site);
        }
      }
    }
  }
}

static gboolean as_can_apply(const WeirGraph *g, const WeirSite *site,
                             const WeirParams *params, char **reason) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *a =
      site->n_nodes >= 1 ? weir_tier2_site_node(s, site->nodes[0]) : NULL;
  WeirNode *b =
      site->n_nodes == 2 ? weir_tier2_site_node(s, site->nodes[1]) : NULL;
  if (site->n_nodes == 1 && a && a->kind == WEIR_NODE_TASKLET)
    return tasklet_can_apply(g, s, a, reason);
  if (!a || a->kind != WEIR_NODE_LIBRARY || site->n_nodes > 2 ||
      (site->n_nodes == 2 && (!b || b->kind != WEIR_NODE_LIBRARY)))
    return weir_tier2_reject(reason, "the site is not a tasklet or one or two "
                                     "library nodes");
  if (!b)
    return binary_can_apply(g, s, a, reason);
  return pair_can_apply(g, s, a, b, reason);
}

static gboolean as_apply(WeirGraph *g, const WeirSite *site,
                         const WeirParams *params, GError **error) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *a = weir_tier2_site_node(s, site->nodes[0]);
  if (site->n_nodes == 2)
    return pair_apply(g, s, a, weir_tier2_site_node(s, site->nodes[1]), error);
  if (a->kind == WEIR_NODE_TASKLET)
    return tasklet_apply(g, s, a, error);
  return binary_apply(g, s, a, error);
}

static const WeirTransformInfo algebraic_simplification = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "algebraic-simplification",
    .tier = 2,
    .description = "remove exact identities: x*1, x/1, x+(-0.0) or integer "
                   "x+0, x-0, -(-x), transpose pairs; on library nodes with "
                   "constant operands and inside tasklets",
    .match = as_match,
    .can_apply = as_can_apply,
    .apply = as_apply,
};

gboolean weir_tier2_register_algebraic_simplification(GError **error) {
  return weir_transform_register(&algebraic_simplification, error);
}
