/* validate.c — the validator: every problem of a program, each naming its
 * element.
 *
 * Structure.  weir_graph_check() fills one array of WeirProblem in a fixed
 * order, which is the order of the sections below:
 *   1. program level: containers by id, symbols, states and start state,
 *      transitions by id;
 *   2. per state, by id:
 *      a. scopes: cycles and nodes reached from two scopes (reported by
 *         weir_state_scopes), then map entry/exit pairing by node id;
 *      b. nodes by id: connectors, access containers, tasklet bodies, map
 *         parameters and ranges, library ops, nested programs (whose own
 *         problems are checked recursively and prefixed with the nested
 *         node's description);
 *      c. memlets by id: ends and connectors, container, access-node
 *         consistency and copies, subset rank, symbols, bounds, wcr, and
 *         no read of a container whose length is data-dependent (a
 *         container with a count: docs/ir-format.md).
 *
 * A check never stops the walk: when one fact is missing (an unknown
 * container, a state whose scopes cannot be computed), the checks that need
 * it are skipped for that element only, so one mistake is reported once and
 * does not cascade into follow-up noise.
 *
 * Symbols in scope.  A Scope lists the names an expression may use at one
 * place of a state: the program's symbols plus the parameters of every
 * enclosing map, innermost first.  The scope of a memlet src -> dst is:
 * outside E when dst is a map entry E (E's parent scope); inside X's entry
 * when dst is a map exit X; otherwise the scope of dst (so a memlet leaving
 * a map entry E is inside E, and one leaving a map exit is in the scope
 * around the map).
 *
 * Bounds.  A subset dimension b:e:s on a container dimension of size n is
 * in bounds when 0 <= b and e <= n.  Both are decided symbolically: every
 * enclosing map parameter is replaced by the extreme of its range that
 * makes the inequality tightest (the parameter must appear linearly with a
 * constant coefficient, otherwise the check is skipped); when the result is
 * a constant it is compared with 0, when it is still symbolic the question
 * is left open.
 */
#include <string.h>

#include "weir-validate.h"

/* ---------------------------------------------------------------- problems */

void weir_problem_free(WeirProblem *p) {
  if (!p)
    return;
  g_free(p->element);
  g_free(p->message);
  g_free(p);
}

/* Where a problem is: ids for tools, element text for people. */
typedef struct {
  guint state, node, edge, transition;
  const char *element;         /* borrowed, or NULL: described from the fields
                                  below when a problem is reported (formatting it
                                  for every node and memlet was a good part of
                                  validating a large program) */
  const WeirState *s;          /* with node or edge */
  const WeirContainer *holder; /* a container's own problems */
} Where;

/* The element text of w (transfer full). */
static char *where_element(const Where *w) {
  if (w->element)
    return g_strdup(w->element);
  if (w->holder)
    return g_strdup_printf("container '%s'",
                           w->holder->name ? w->holder->name : "");
  /* a node's problems may name one of its memlets too: the node first */
  if (w->s && w->node) {
    const WeirNode *n = weir_state_node(w->s, w->node);
    if (n)
      return weir_describe_node(w->s, n);
  }
  if (w->s && w->edge) {
    const WeirMemlet *m = weir_state_memlet(w->s, w->edge);
    if (m)
      return weir_describe_memlet(w->s, m);
  }
  return g_strdup("");
}

static void add_problem_v(GPtrArray *out, const Where *w, const char *fmt,
                          va_list ap) G_GNUC_PRINTF(3, 0);

static void add_problem_v(GPtrArray *out, const Where *w, const char *fmt,
                          va_list ap) {
  WeirProblem *p = g_new0(WeirProblem, 1);
  p->state = w->state;
  p->node = w->node;
  p->edge = w->edge;
  p->transition = w->transition;
  p->element = where_element(w);
  p->message = g_strdup_vprintf(fmt, ap);
  g_ptr_array_add(out, p);
}

static void add_problem(GPtrArray *out, const Where *w, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static void add_problem(GPtrArray *out, const Where *w, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  add_problem_v(out, w, fmt, ap);
  va_end(ap);
}

static gboolean is_identifier(const char *s) {
  if (!s || !(g_ascii_isalpha(*s) || *s == '_'))
    return FALSE;
  for (const char *p = s + 1; *p; p++)
    if (!(g_ascii_isalnum(*p) || *p == '_'))
      return FALSE;
  return TRUE;
}

static gboolean str_in(GPtrArray *arr, const char *name) {
  if (!arr || !name)
    return FALSE;
  for (guint i = 0; i < arr->len; i++)
    if (strcmp(g_ptr_array_index(arr, i), name) == 0)
      return TRUE;
  return FALSE;
}

/* ------------------------------------------------------------------ scopes */

typedef struct {
  const char *name;       /* borrowed from the map */
  const WeirRange *range; /* borrowed from the map */
} ScopeParam;

typedef struct {
  GHashTable *names; /* char* (borrowed) set: symbols and params in scope */
  GArray *params;    /* ScopeParam, innermost map first */
  gboolean exact;    /* FALSE when the scopes of the state are unknown and
                        names holds every parameter of the state */
} Scope;

static void scope_free(Scope *sc) {
  if (!sc)
    return;
  g_hash_table_unref(sc->names);
  g_array_unref(sc->params);
  g_free(sc);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Scope, scope_free)

static Scope *scope_new_program(const WeirGraph *g) {
  Scope *sc = g_new0(Scope, 1);
  sc->names = g_hash_table_new(g_str_hash, g_str_equal);
  sc->params = g_array_new(FALSE, FALSE, sizeof(ScopeParam));
  sc->exact = TRUE;
  for (guint i = 0; i < g->symbols->len; i++)
    g_hash_table_add(sc->names, g_ptr_array_index(g->symbols, i));
  return sc;
}

static void scope_add_map(Scope *sc, const WeirNode *entry) {
  if (!entry || entry->kind != WEIR_NODE_MAP_ENTRY || !entry->map)
    return;
  const WeirMap *m = entry->map;
  for (guint i = 0; i < m->params->len; i++) {
    ScopeParam p = {g_ptr_array_index(m->params, i), NULL};
    if (i < m->ranges->len)
      p.range = &g_array_index(m->ranges, WeirRange, i);
    g_hash_table_add(sc->names, (gpointer)p.name);
    g_array_append_val(sc->params, p);
  }
}

/* The names usable inside map entry `entry` (0: top level).  scopes NULL:
 * every parameter of the state, and no bounds checking. */
static Scope *scope_new(const WeirGraph *g, const WeirState *s,
                        const WeirScopes *scopes, guint entry) {
  Scope *sc = scope_new_program(g);
  if (!scopes) {
    sc->exact = FALSE;
    for (guint i = 0; i < s->nodes->len; i++)
      scope_add_map(sc, g_ptr_array_index(s->nodes, i));
    return sc;
  }
  /* The chain is finite: parents come earlier in a topological order. */
  for (guint e = entry; e; e = weir_scopes_parent(scopes, e))
    scope_add_map(sc, weir_state_node(s, e));
  return sc;
}

/* The scope a memlet lives in (see the top of the file). */
static guint memlet_scope(const WeirState *s, const WeirScopes *scopes,
                          const WeirMemlet *m) {
  if (!scopes)
    return 0;
  const WeirNode *dst = weir_state_node(s, m->dst);
  if (dst && dst->kind == WEIR_NODE_MAP_EXIT)
    return dst->entry;
  return weir_scopes_parent(scopes, m->dst);
}

/* Appends to unknown (deduplicated) the symbols of e not in scope. */
static void collect_unknown(const WeirExpr *e, const Scope *sc,
                            GPtrArray *unknown) {
  if (!e || weir_expr_kind(e) == WEIR_EXPR_CONST)
    return;
  g_autoptr(GPtrArray) syms = weir_expr_symbols(e);
  for (guint i = 0; i < syms->len; i++) {
    const char *name = g_ptr_array_index(syms, i);
    if (!g_hash_table_contains(sc->names, name) && !str_in(unknown, name))
      g_ptr_array_add(unknown, g_strdup(name));
  }
}

static GPtrArray *unknown_in_subset(const WeirSubset *sub, const Scope *sc) {
  GPtrArray *unknown = g_ptr_array_new_with_free_func(g_free);
  for (guint d = 0; d < sub->rank; d++) {
    collect_unknown(sub->dims[d].begin, sc, unknown);
    collect_unknown(sub->dims[d].end, sc, unknown);
    collect_unknown(sub->dims[d].step, sc, unknown);
  }
  return unknown;
}

/* Reports each unknown symbol of e: "unknown symbol 'k' in <what>". */
static gboolean check_expr_symbols(GPtrArray *out, const Where *w,
                                   const WeirExpr *e, const Scope *sc,
                                   const char *what) {
  g_autoptr(GPtrArray) unknown = g_ptr_array_new_with_free_func(g_free);
  collect_unknown(e, sc, unknown);
  for (guint i = 0; i < unknown->len; i++)
    add_problem(out, w, "unknown symbol '%s' in %s",
                (char *)g_ptr_array_index(unknown, i), what);
  return unknown->len == 0;
}

/* ------------------------------------------------------------------ bounds */

static gboolean contains_symbol(const WeirExpr *e, const char *name) {
  switch (weir_expr_kind(e)) {
  case WEIR_EXPR_CONST:
    return FALSE;
  case WEIR_EXPR_SYMBOL:
    return strcmp(weir_expr_symbol_name(e), name) == 0;
  default:
    for (guint i = 0; i < weir_expr_n_operands(e); i++)
      if (contains_symbol(weir_expr_operand(e, i), name))
        return TRUE;
    return FALSE;
  }
}

/* Coefficient of name in one term of a canonical sum: x, or c*x. */
static gboolean term_coefficient(const WeirExpr *t, const char *name,
                                 gint64 *coeff) {
  *coeff = 0;
  if (!contains_symbol(t, name))
    return TRUE;
  if (weir_expr_kind(t) == WEIR_EXPR_SYMBOL) {
    *coeff = 1;
    return TRUE;
  }
  if (weir_expr_kind(t) == WEIR_EXPR_MUL && weir_expr_n_operands(t) == 2) {
    const WeirExpr *c = weir_expr_operand(t, 0);
    const WeirExpr *x = weir_expr_operand(t, 1);
    if (weir_expr_is_const(c, coeff) && weir_expr_kind(x) == WEIR_EXPR_SYMBOL &&
        strcmp(weir_expr_symbol_name(x), name) == 0)
      return TRUE;
  }
  return FALSE;
}

/* TRUE when e is linear in name with a constant coefficient (*coeff). */
static gboolean linear_coefficient(const WeirExpr *e, const char *name,
                                   gint64 *coeff) {
  if (weir_expr_kind(e) != WEIR_EXPR_ADD)
    return term_coefficient(e, name, coeff);
  *coeff = 0;
  for (guint i = 0; i < weir_expr_n_operands(e); i++) {
    gint64 c;
    if (!term_coefficient(weir_expr_operand(e, i), name, &c))
      return FALSE;
    *coeff += c;
  }
  return TRUE;
}

/* The extreme (largest when want_max) of e over the map parameters in
 * scope, or NULL when it cannot be computed (e not linear in a parameter,
 * a symbolic step, a map that never runs). */
static WeirExpr *scope_extreme(const WeirExpr *e, const Scope *sc,
                               gboolean want_max) {
  WeirExpr *cur = weir_expr_ref((WeirExpr *)e);
  for (guint i = 0; i < sc->params->len; i++) {
    const ScopeParam *p = &g_array_index(sc->params, ScopeParam, i);
    gint64 coeff;
    if (!linear_coefficient(cur, p->name, &coeff) || !p->range) {
      weir_expr_unref(cur);
      return NULL;
    }
    if (coeff == 0)
      continue;
    g_autoptr(WeirExpr) size = weir_range_size(p->range);
    gint64 n;
    if (weir_expr_is_const(size, &n) && n <= 0) {
      weir_expr_unref(cur);
      return NULL;
    }
    g_autoptr(WeirExpr) value = NULL;
    if ((coeff > 0) == want_max)
      value = weir_range_last(p->range);
    else
      value = weir_expr_ref(p->range->begin);
    if (!value) {
      weir_expr_unref(cur);
      return NULL;
    }
    WeirExpr *next = weir_expr_substitute_one(cur, p->name, value);
    weir_expr_unref(cur);
    cur = next;
  }
  return cur;
}

/* Checks one subset against a container's shape: steps, then bounds per
 * dimension.  The rank has been checked by the caller. */
static void check_bounds(GPtrArray *out, const Where *w, const WeirSubset *sub,
                         const WeirContainer *c, const Scope *sc) {
  /* The subset's text only for messages (formatting it for every memlet
   * at every transformation was a sixth of validating ResNet-50). */
  g_autofree char *text = NULL;
  for (guint d = 0; d < sub->rank; d++) {
    const WeirRange *r = &sub->dims[d];
    gint64 step = 1, v;
    gint64 b, e, size;
    /* Constant ranges on a constant dimension need no expressions. */
    if (weir_expr_is_const(r->step, &step) && step > 0 &&
        weir_expr_is_const(r->begin, &b) && weir_expr_is_const(r->end, &e) &&
        weir_expr_is_const(g_ptr_array_index(c->shape, d), &size) && b >= 0 &&
        (!sc->exact || e <= size ||
         (e > b && b + (e - 1 - b) / step * step < size)))
      continue;
    if (!text)
      text = weir_subset_to_string(sub);
    if (weir_expr_is_const(r->step, &step) && step <= 0) {
      add_problem(out, w,
                  "subset '%s' has step %" G_GINT64_FORMAT
                  " in dimension %u; steps must be positive",
                  text, step, d);
      continue;
    }
    if (!sc->exact)
      continue;
    WeirExpr *n = g_ptr_array_index(c->shape, d);
    g_autoptr(WeirExpr) lo = scope_extreme(r->begin, sc, FALSE);
    if (lo && weir_expr_is_const(lo, &v) && v < 0) {
      add_problem(out, w,
                  "subset '%s' on '%s' is out of bounds in dimension %u "
                  "(starts at %" G_GINT64_FORMAT ")",
                  text, c->name, d, v);
      continue;
    }
    g_autoptr(WeirExpr) hi = scope_extreme(r->end, sc, TRUE);
    if (!hi)
      continue;
    g_autoptr(WeirExpr) slack = weir_expr_sub(n, hi);
    if (!weir_expr_is_const(slack, &v) || v >= 0)
      continue;
    if (weir_expr_is_const(r->step, &step) && step > 1) {
      /* With a step, the last element may stop short of the end. */
      WeirRange tmp = {r->begin, r->end, r->step};
      g_autoptr(WeirExpr) last = weir_range_last(&tmp);
      g_autoptr(WeirExpr) end = weir_expr_add_const(last, 1);
      g_autoptr(WeirExpr) hi2 = scope_extreme(end, sc, TRUE);
      if (!hi2)
        continue;
      g_autoptr(WeirExpr) slack2 = weir_expr_sub(n, hi2);
      if (!weir_expr_is_const(slack2, &v) || v >= 0)
        continue;
      weir_expr_unref(hi);
      hi = g_steal_pointer(&hi2);
    }
    g_autofree char *hs = weir_expr_to_string(hi);
    g_autofree char *ns = weir_expr_to_string(n);
    add_problem(out, w,
                "subset '%s' on '%s' is out of bounds in dimension %u "
                "(reaches %s, size %s)",
                text, c->name, d, hs, ns);
  }
}

/* Rank, symbols and bounds of a subset on a container; `what` names the
 * subset in messages ("subset", "other subset"). */
static void check_subset_on(GPtrArray *out, const Where *w,
                            const WeirSubset *sub, const WeirContainer *c,
                            const Scope *sc, const char *what) {
  /* The text only for messages (formatting it for every memlet was 2.5 %
   * of opening a workspace: docs/reliability.md, "Where the time goes"). */
  if (sub->rank != c->shape->len) {
    g_autofree char *text = weir_subset_to_string(sub);
    add_problem(out, w, "%s '%s' has rank %u but '%s' has rank %u", what, text,
                sub->rank, c->name, c->shape->len);
    return;
  }
  g_autoptr(GPtrArray) unknown = unknown_in_subset(sub, sc);
  g_autofree char *text = unknown->len ? weir_subset_to_string(sub) : NULL;
  for (guint i = 0; i < unknown->len; i++)
    add_problem(out, w, "unknown symbol '%s' in %s '%s'",
                (char *)g_ptr_array_index(unknown, i), what, text);
  if (unknown->len == 0)
    check_bounds(out, w, sub, c, sc);
}

/* ---------------------------------------------------------------- tasklets */

/* The single (first by id) non-empty memlet on a connector of n, among
 * edges (sorted by id: a state's memlets, or only those touching n). */
static const WeirMemlet *connector_memlet(GPtrArray *edges, const WeirNode *n,
                                          const char *conn, gboolean input) {
  for (guint i = 0; i < edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(edges, i);
    if (!m->data)
      continue;
    if (input && m->dst == n->id && g_strcmp0(m->dst_conn, conn) == 0)
      return m;
    if (!input && m->src == n->id && g_strcmp0(m->src_conn, conn) == 0)
      return m;
  }
  return NULL;
}

/* Fills infos for the connectors of one side of a tasklet; edges: the
 * memlets of its state (or only those entering, resp. leaving, n). */
static gboolean connector_infos(const WeirGraph *g, GPtrArray *edges,
                                const WeirNode *n, gboolean input,
                                GArray *infos, GError **error) {
  GPtrArray *conns = input ? n->in_conns : n->out_conns;
  for (guint i = 0; i < conns->len; i++) {
    const char *name = g_ptr_array_index(conns, i);
    const WeirMemlet *m = connector_memlet(edges, n, name, input);
    if (!m) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s connector '%s' has no memlet", input ? "input" : "output",
                  name);
      return FALSE;
    }
    const WeirContainer *c = weir_graph_container(g, m->data);
    if (!c || !m->subset) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s connector '%s': memlet %u names unknown container '%s'",
                  input ? "input" : "output", name, m->id, m->data);
      return FALSE;
    }
    g_autoptr(WeirExpr) volume = weir_subset_volume(m->subset);
    gint64 v;
    WeirConnectorInfo info = {name, c->dtype, c->shape->len};
    if (weir_expr_is_const(volume, &v) && v == 1)
      info.rank = 0;
    g_array_append_val(infos, info);
  }
  return TRUE;
}

/* Type-checks n's body with the connectors' memlets (among ins and outs,
 * see connector_infos) and the names of sc. */
static gboolean tasklet_check_in_scope(const WeirGraph *g, GPtrArray *ins_edges,
                                       GPtrArray *outs_edges, WeirNode *n,
                                       const Scope *sc, GError **error) {
  g_return_val_if_fail(n->kind == WEIR_NODE_TASKLET, FALSE);
  if (!n->code) {
    g_autoptr(GError) local = NULL;
    g_autoptr(WeirCode) code =
        weir_code_parse(n->code_text ? n->code_text : "", &local);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "tasklet body does not parse: %s",
                local ? local->message : "unknown error");
    return FALSE;
  }
  g_autoptr(GArray) ins = g_array_new(FALSE, FALSE, sizeof(WeirConnectorInfo));
  g_autoptr(GArray) outs = g_array_new(FALSE, FALSE, sizeof(WeirConnectorInfo));
  if (!connector_infos(g, ins_edges, n, TRUE, ins, error) ||
      !connector_infos(g, outs_edges, n, FALSE, outs, error))
    return FALSE;
  g_autoptr(GError) local = NULL;
  if (!weir_code_check(n->code, (const WeirConnectorInfo *)ins->data, ins->len,
                       (const WeirConnectorInfo *)outs->data, outs->len,
                       sc->names, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "tasklet body: %s",
                local->message);
    return FALSE;
  }
  return TRUE;
}

gboolean weir_tasklet_check(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  g_return_val_if_fail(g && s && n, FALSE);
  g_autoptr(WeirScopes) scopes = weir_state_scopes(s, error);
  if (!scopes)
    return FALSE;
  g_autoptr(Scope) sc =
      scope_new(g, s, scopes, weir_scopes_parent(scopes, n->id));
  g_autoptr(GError) local = NULL;
  if (!tasklet_check_in_scope(g, s->edges, s->edges, n, sc, &local)) {
    g_autofree char *desc = weir_describe_node(s, n);
    g_set_error(error, WEIR_ERROR, local->code, "%s: %s", desc, local->message);
    return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------- per state */

typedef struct {
  WeirGraph *g;
  WeirState *s;
  WeirScopes *scopes; /* NULL when they cannot be computed */
  GPtrArray *out;
  /* the state's memlets by node, so that the per-node checks look at a
   * node's own memlets only (linear in the size of the state) */
  WeirEdgeIndex *edges;
} StateCheck;

/* The memlets entering (input) or leaving node, in id order. */
static GPtrArray *node_memlets(const StateCheck *st, guint node,
                               gboolean input) {
  return weir_edge_index_memlets(st->edges, node, input);
}

static void where_node(Where *w, const WeirState *s, const WeirNode *n,
                       char **element) {
  *element = NULL; /* described when a problem is reported */
  *w = (Where){s->id, n->id, 0, 0, NULL, s, NULL};
}

static guint count_memlets(const StateCheck *st, guint node, const char *conn,
                           gboolean input) {
  guint count = 0;
  GPtrArray *edges = node_memlets(st, node, input);
  for (guint i = 0; i < edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(edges, i);
    if (input && m->dst == node && g_strcmp0(m->dst_conn, conn) == 0)
      count++;
    if (!input && m->src == node && g_strcmp0(m->src_conn, conn) == 0)
      count++;
  }
  return count;
}

/* Tasklet, library and nested nodes: one memlet per input connector, at
 * least one per output connector.  Returns TRUE when all are fine. */
static gboolean check_node_connectors(StateCheck *st, const Where *w,
                                      const WeirNode *n) {
  gboolean ok = TRUE;
  for (guint i = 0; i < n->in_conns->len; i++) {
    const char *c = g_ptr_array_index(n->in_conns, i);
    guint k = count_memlets(st, n->id, c, TRUE);
    if (k == 0)
      add_problem(st->out, w, "input connector '%s' has no memlet", c);
    else if (k > 1)
      add_problem(st->out, w,
                  "input connector '%s' has %u memlets (exactly one expected)",
                  c, k);
    ok = ok && k == 1;
  }
  for (guint i = 0; i < n->out_conns->len; i++) {
    const char *c = g_ptr_array_index(n->out_conns, i);
    if (count_memlets(st, n->id, c, FALSE) == 0) {
      add_problem(st->out, w, "output connector '%s' has no memlet", c);
      ok = FALSE;
    }
  }
  return ok;
}

static void check_duplicate_conns(StateCheck *st, const Where *w,
                                  GPtrArray *conns, const char *side) {
  for (guint i = 0; i < conns->len; i++)
    for (guint j = 0; j < i; j++)
      if (strcmp(g_ptr_array_index(conns, i), g_ptr_array_index(conns, j)) ==
          0) {
        add_problem(st->out, w, "%s connector '%s' is declared twice", side,
                    (char *)g_ptr_array_index(conns, i));
        break;
      }
}

/* IN_x / OUT_x pairing, one memlet per IN_x, and the same container on
 * both sides of a pair. */
static void check_map_connectors(StateCheck *st, const Where *w,
                                 const WeirNode *n) {
  for (guint i = 0; i < n->in_conns->len; i++) {
    const char *c = g_ptr_array_index(n->in_conns, i);
    if (!g_str_has_prefix(c, "IN_")) {
      add_problem(st->out, w, "input connector '%s' is not named IN_x", c);
      continue;
    }
    g_autofree char *partner = g_strconcat("OUT_", c + 3, NULL);
    if (!weir_node_has_out_conn(n, partner))
      add_problem(st->out, w, "connector '%s' has no matching '%s'", c,
                  partner);
    guint k = count_memlets(st, n->id, c, TRUE);
    if (k != 1)
      add_problem(st->out, w,
                  "input connector '%s' has %u memlets (exactly one expected)",
                  c, k);
  }
  for (guint i = 0; i < n->out_conns->len; i++) {
    const char *c = g_ptr_array_index(n->out_conns, i);
    if (!g_str_has_prefix(c, "OUT_")) {
      add_problem(st->out, w, "output connector '%s' is not named OUT_x", c);
      continue;
    }
    g_autofree char *partner = g_strconcat("IN_", c + 4, NULL);
    if (!weir_node_has_in_conn(n, partner)) {
      add_problem(st->out, w, "connector '%s' has no matching '%s'", c,
                  partner);
      continue;
    }
    const WeirMemlet *in =
        connector_memlet(node_memlets(st, n->id, TRUE), n, partner, TRUE);
    if (!in)
      continue;
    GPtrArray *leaving = node_memlets(st, n->id, FALSE);
    for (guint e = 0; e < leaving->len; e++) {
      const WeirMemlet *m = g_ptr_array_index(leaving, e);
      if (m->src != n->id || g_strcmp0(m->src_conn, c) != 0 || !m->data ||
          strcmp(m->data, in->data) == 0)
        continue;
      Where wm = *w;
      wm.edge = m->id;
      add_problem(st->out, &wm,
                  "memlet %u leaves '%s' with '%s' but memlet %u brings '%s' "
                  "into '%s'",
                  m->id, c, m->data, in->id, in->data, partner);
    }
  }
}

static void check_map_entry(StateCheck *st, const Where *w, const WeirNode *n) {
  const WeirMap *m = n->map;
  if (!m) {
    add_problem(st->out, w, "map entry has no map");
    return;
  }
  if (m->params->len == 0)
    add_problem(st->out, w, "map has no parameters");
  if (m->ranges->len != m->params->len)
    add_problem(st->out, w, "map has %u parameters but %u ranges",
                m->params->len, m->ranges->len);
  guint parent = st->scopes ? weir_scopes_parent(st->scopes, n->id) : 0;
  g_autoptr(Scope) sc = scope_new(st->g, st->s, st->scopes, parent);
  for (guint i = 0; i < m->params->len; i++) {
    const char *p = g_ptr_array_index(m->params, i);
    if (!is_identifier(p)) {
      add_problem(st->out, w, "map parameter '%s' is not an identifier", p);
      continue;
    }
    for (guint j = 0; j < i; j++)
      if (strcmp(p, g_ptr_array_index(m->params, j)) == 0) {
        add_problem(st->out, w, "map parameter '%s' appears twice", p);
        break;
      }
    if (sc->exact && g_hash_table_contains(sc->names, p))
      add_problem(st->out, w,
                  "map parameter '%s' shadows a symbol or an enclosing map "
                  "parameter",
                  p);
  }
  for (guint i = 0; i < m->ranges->len; i++) {
    const WeirRange *r = &g_array_index(m->ranges, WeirRange, i);
    g_autofree char *text = weir_range_to_string(r);
    gint64 step;
    if (weir_expr_is_const(r->step, &step) && step <= 0)
      add_problem(st->out, w,
                  "range '%s' of parameter %u has step %" G_GINT64_FORMAT
                  "; steps must be positive",
                  text, i, step);
    g_autoptr(GPtrArray) unknown = g_ptr_array_new_with_free_func(g_free);
    collect_unknown(r->begin, sc, unknown);
    collect_unknown(r->end, sc, unknown);
    collect_unknown(r->step, sc, unknown);
    for (guint k = 0; k < unknown->len; k++)
      add_problem(st->out, w, "unknown symbol '%s' in range '%s'",
                  (char *)g_ptr_array_index(unknown, k), text);
  }
}

static void check_nested(StateCheck *st, const Where *w, WeirNode *n) {
  WeirGraph *inner = n->nested;
  if (!inner) {
    add_problem(st->out, w, "nested node has no program");
    return;
  }
  GPtrArray *sides[2] = {n->in_conns, n->out_conns};
  for (guint k = 0; k < 2; k++) {
    for (guint i = 0; i < sides[k]->len; i++) {
      const char *c = g_ptr_array_index(sides[k], i);
      const WeirContainer *ic = weir_graph_container(inner, c);
      if (!ic)
        add_problem(st->out, w,
                    "connector '%s' does not name a container of the nested "
                    "program",
                    c);
      else if (ic->transient)
        add_problem(st->out, w,
                    "connector '%s' names a transient container of the "
                    "nested program",
                    c);
    }
  }
  for (guint i = 0; i < inner->containers->len; i++) {
    const WeirContainer *ic = g_ptr_array_index(inner->containers, i);
    if (!ic->transient && !str_in(n->in_conns, ic->name) &&
        !str_in(n->out_conns, ic->name))
      add_problem(st->out, w,
                  "argument container '%s' of the nested program is not "
                  "connected",
                  ic->name);
  }
  guint parent = st->scopes ? weir_scopes_parent(st->scopes, n->id) : 0;
  g_autoptr(Scope) sc = scope_new(st->g, st->s, st->scopes, parent);
  for (guint i = 0; n->symbol_map && i < n->symbol_map->len; i++) {
    const WeirSymbolBinding *b = g_ptr_array_index(n->symbol_map, i);
    if (!weir_graph_has_symbol(inner, b->name))
      add_problem(st->out, w,
                  "binds '%s', which is not a symbol of the nested program",
                  b->name);
    g_autofree char *v = weir_expr_to_string(b->value);
    g_autofree char *what = g_strdup_printf("binding %s = %s", b->name, v);
    check_expr_symbols(st->out, w, b->value, sc, what);
  }
  g_autoptr(GPtrArray) inner_problems = weir_graph_check(inner);
  for (guint i = 0; i < inner_problems->len; i++) {
    const WeirProblem *p = g_ptr_array_index(inner_problems, i);
    g_autofree char *outer = where_element(w);
    g_autofree char *element = g_strdup_printf("%s, %s", outer, p->element);
    Where wi = *w;
    wi.element = element;
    add_problem(st->out, &wi, "%s", p->message);
  }
}

/* TRUE when every connector of n has a memlet on an existing container. */
static gboolean connectors_resolved(StateCheck *st, const WeirNode *n) {
  GPtrArray *sides[2] = {n->in_conns, n->out_conns};
  for (guint k = 0; k < 2; k++)
    for (guint i = 0; i < sides[k]->len; i++) {
      const WeirMemlet *m =
          connector_memlet(node_memlets(st, n->id, k == 0), n,
                           g_ptr_array_index(sides[k], i), k == 0);
      if (!m || !m->subset || !weir_graph_container(st->g, m->data))
        return FALSE;
    }
  return TRUE;
}

/* The epilogue of a library node (attributes "epilogue" and
 * "epilogue_conns", ir/lower/weir-expand.h): code that parses, the tasklet's
 * output and accumulator connectors, and one connector epi<k> per extra
 * input. */
static void check_epilogue(StateCheck *st, const Where *w, const WeirNode *n) {
  const WeirAttr *code = weir_node_attr(n, "epilogue");
  const WeirAttr *conns = weir_node_attr(n, "epilogue_conns");
  guint n_epi = 0;
  for (guint i = 0; i < n->in_conns->len; i++)
    if (g_str_has_prefix(g_ptr_array_index(n->in_conns, i), "epi"))
      n_epi++;
  if (!code) {
    if (conns || n_epi)
      add_problem(st->out, w, "epilogue connectors without an 'epilogue'");
    return;
  }
  if (code->type != WEIR_ATTR_STRING || !code->s) {
    add_problem(st->out, w, "attribute 'epilogue' must be a string");
    return;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirCode) parsed = weir_code_parse(code->s, &error);
  if (!parsed)
    add_problem(st->out, w, "epilogue: %s", error->message);
  if (!conns || conns->type != WEIR_ATTR_STRINGS || conns->strings->len < 2) {
    add_problem(st->out, w,
                "attribute 'epilogue_conns' must list the epilogue's output "
                "and input connectors (at least two strings)");
    return;
  }
  for (guint k = 0; k + 2 < conns->strings->len; k++) {
    g_autofree char *conn = g_strdup_printf("epi%u", k);
    if (!weir_node_has_in_conn(n, conn))
      add_problem(st->out, w, "epilogue input %u ('%s') has no connector '%s'",
                  k, (char *)g_ptr_array_index(conns->strings, k + 2), conn);
  }
  if (n_epi != conns->strings->len - 2)
    add_problem(st->out, w, "%u epilogue connectors for %u epilogue inputs",
                n_epi, conns->strings->len - 2);
}

static void check_node(StateCheck *st, WeirNode *n) {
  g_autofree char *element = NULL;
  Where w;
  where_node(&w, st->s, n, &element);
  check_duplicate_conns(st, &w, n->in_conns, "input");
  check_duplicate_conns(st, &w, n->out_conns, "output");
  switch (n->kind) {
  case WEIR_NODE_ACCESS:
    if (!n->data || !weir_graph_container(st->g, n->data))
      add_problem(st->out, &w, "access node names unknown container '%s'",
                  n->data ? n->data : "");
    if (n->in_conns->len || n->out_conns->len)
      add_problem(st->out, &w, "access nodes have no connectors");
    break;
  case WEIR_NODE_TASKLET: {
    gboolean conns_ok = check_node_connectors(st, &w, n);
    /* A missing memlet or container is reported once, by the connector and
     * memlet rules: the type check needs every connector resolved. */
    if (n->code && !(conns_ok && connectors_resolved(st, n)))
      break;
    guint parent = st->scopes ? weir_scopes_parent(st->scopes, n->id) : 0;
    g_autoptr(Scope) sc = scope_new(st->g, st->s, st->scopes, parent);
    g_autoptr(GError) error = NULL;
    if (!tasklet_check_in_scope(st->g, node_memlets(st, n->id, TRUE),
                                node_memlets(st, n->id, FALSE), n, sc, &error))
      add_problem(st->out, &w, "%s", error->message);
    break;
  }
  case WEIR_NODE_MAP_ENTRY:
    check_map_entry(st, &w, n);
    check_map_connectors(st, &w, n);
    break;
  case WEIR_NODE_MAP_EXIT:
    check_map_connectors(st, &w, n);
    break;
  case WEIR_NODE_LIBRARY:
    if (!n->op || !*n->op)
      add_problem(st->out, &w, "library node has no op");
    check_node_connectors(st, &w, n);
    check_epilogue(st, &w, n);
    break;
  case WEIR_NODE_NESTED:
    check_node_connectors(st, &w, n);
    check_nested(st, &w, n);
    break;
  case WEIR_NODE_KIND_COUNT:
  default:
    add_problem(st->out, &w, "unknown node kind %d", (int)n->kind);
    break;
  }
}

/* One end of a memlet: the connector exists, or is absent where allowed. */
static void check_memlet_end(StateCheck *st, const Where *w,
                             const WeirMemlet *m, const WeirNode *n,
                             const char *conn, gboolean input) {
  const char *side = input ? "input" : "output";
  if (!conn) {
    if (m->data && n->kind != WEIR_NODE_ACCESS)
      add_problem(st->out, w, "memlet %s node %u (%s '%s') without a connector",
                  input ? "enters" : "leaves", n->id,
                  weir_node_kind_name(n->kind), n->label);
    return;
  }
  gboolean exists =
      input ? weir_node_has_in_conn(n, conn) : weir_node_has_out_conn(n, conn);
  if (!exists) {
    add_problem(st->out, w,
                "%s connector '%s' does not exist on node %u (%s "
                "'%s')",
                side, conn, n->id, weir_node_kind_name(n->kind), n->label);
    return;
  }
  if (!m->data && n->kind != WEIR_NODE_MAP_ENTRY &&
      n->kind != WEIR_NODE_MAP_EXIT)
    add_problem(st->out, w,
                "empty memlet uses connector '%s' of node %u (%s '%s'); only "
                "map entries and exits take empty memlets on connectors",
                conn, n->id, weir_node_kind_name(n->kind), n->label);
}

/* A copy between two access nodes. */
static void check_copy(StateCheck *st, const Where *w, const WeirMemlet *m,
                       const WeirNode *src, const WeirNode *dst,
                       const Scope *sc) {
  const char *other_name;
  if (g_strcmp0(m->data, src->data) == 0)
    other_name = dst->data;
  else if (g_strcmp0(m->data, dst->data) == 0)
    other_name = src->data;
  else {
    add_problem(st->out, w, "copy names '%s', which is neither '%s' nor '%s'",
                m->data, src->data ? src->data : "",
                dst->data ? dst->data : "");
    return;
  }
  const WeirContainer *oc = weir_graph_container(st->g, other_name);
  if (!oc)
    return; /* reported on the access node */
  if (!m->other) {
    /* The same subset on both ends. */
    check_subset_on(st->out, w, m->subset, oc, sc, "subset");
    return;
  }
  check_subset_on(st->out, w, m->other, oc, sc, "other subset");
  g_autoptr(WeirExpr) va = weir_subset_volume(m->subset);
  g_autoptr(WeirExpr) vb = weir_subset_volume(m->other);
  g_autoptr(WeirExpr) diff = weir_expr_sub(va, vb);
  gint64 d;
  if (weir_expr_is_const(diff, &d) && d != 0) {
    g_autofree char *sa = weir_expr_to_string(va);
    g_autofree char *sb = weir_expr_to_string(vb);
    add_problem(st->out, w,
                "copy moves %s elements of '%s' but %s elements of '%s'", sa,
                m->data, sb, oc->name);
  }
}

static void check_memlet(StateCheck *st, WeirMemlet *m) {
  Where w = {st->s->id, 0, m->id, 0, NULL, st->s, NULL};
  const WeirNode *src = weir_state_node(st->s, m->src);
  const WeirNode *dst = weir_state_node(st->s, m->dst);
  if (!src)
    add_problem(st->out, &w, "source node %u is not in the state", m->src);
  if (!dst)
    add_problem(st->out, &w, "destination node %u is not in the state", m->dst);
  if (!src || !dst)
    return;
  check_memlet_end(st, &w, m, src, m->src_conn, FALSE);
  check_memlet_end(st, &w, m, dst, m->dst_conn, TRUE);
  if (!m->data) {
    if (m->wcr != WEIR_WCR_NONE)
      add_problem(st->out, &w, "empty memlet has wcr '%s'",
                  weir_wcr_name(m->wcr));
    return;
  }
  gboolean src_access = src->kind == WEIR_NODE_ACCESS;
  gboolean dst_access = dst->kind == WEIR_NODE_ACCESS;
  g_autoptr(Scope) sc =
      scope_new(st->g, st->s, st->scopes, memlet_scope(st->s, st->scopes, m));
  if (src_access && !dst_access && g_strcmp0(src->data, m->data) != 0)
    add_problem(st->out, &w, "memlet names '%s' but node %u accesses '%s'",
                m->data, src->id, src->data ? src->data : "");
  if (dst_access && !src_access && g_strcmp0(dst->data, m->data) != 0)
    add_problem(st->out, &w, "memlet names '%s' but node %u accesses '%s'",
                m->data, dst->id, dst->data ? dst->data : "");
  const WeirContainer *c = weir_graph_container(st->g, m->data);
  if (!c)
    add_problem(st->out, &w, "unknown container '%s'", m->data);
  else if (!m->subset)
    add_problem(st->out, &w, "memlet on '%s' has no subset", m->data);
  else
    check_subset_on(st->out, &w, m->subset, c, sc, "subset");
  if (c && c->count && src_access)
    add_problem(st->out, &w,
                "reads '%s', whose dimension %u has a data-dependent length "
                "(count '%s'): nothing in a program may read it; only the "
                "runtime does, trimming the program's outputs to the count",
                c->name, c->count_dim, c->count);
  if (c && m->subset && src_access && dst_access)
    check_copy(st, &w, m, src, dst, sc);
  else if (m->other)
    add_problem(st->out, &w,
                "memlet has an 'other' subset but is not a copy between two "
                "access nodes");
  if (m->volume && weir_expr_kind(m->volume) != WEIR_EXPR_CONST) {
    g_autofree char *v = weir_expr_to_string(m->volume);
    g_autofree char *what = g_strdup_printf("volume '%s'", v);
    check_expr_symbols(st->out, &w, m->volume, sc, what);
  }
  if (m->wcr != WEIR_WCR_NONE &&
      (dst->kind == WEIR_NODE_MAP_ENTRY || src_access))
    add_problem(st->out, &w,
                "wcr '%s' on a memlet that reads (only writes "
                "accumulate)",
                weir_wcr_name(m->wcr));
}

/* Map entry/exit pairing; returns TRUE when every exit has a valid entry
 * (weir_state_scopes needs that). */
static gboolean check_pairing(StateCheck *st, gboolean report) {
  gboolean ok = TRUE;
  /* entry id -> GArray of the ids of the exits naming it, in id order */
  g_autoptr(GHashTable) exits = NULL;
  if (report) {
    exits = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                  (GDestroyNotify)g_array_unref);
    for (guint k = 0; k < st->s->nodes->len; k++) {
      const WeirNode *x = g_ptr_array_index(st->s->nodes, k);
      if (x->kind != WEIR_NODE_MAP_EXIT)
        continue;
      GArray *ids = g_hash_table_lookup(exits, GUINT_TO_POINTER(x->entry));
      if (!ids) {
        ids = g_array_new(FALSE, FALSE, sizeof(guint));
        g_hash_table_insert(exits, GUINT_TO_POINTER(x->entry), ids);
      }
      g_array_append_val(ids, x->id);
    }
  }
  for (guint i = 0; i < st->s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(st->s->nodes, i);
    g_autofree char *element = NULL;
    Where w;
    if (n->kind == WEIR_NODE_MAP_ENTRY) {
      if (!report)
        continue;
      const GArray *found = g_hash_table_lookup(exits, GUINT_TO_POINTER(n->id));
      guint count = found ? found->len : 0;
      g_autoptr(GString) ids = g_string_new(NULL);
      for (guint k = 0; k < count; k++)
        g_string_append_printf(ids, "%s%u", k ? ", " : "",
                               g_array_index(found, guint, k));
      if (count != 1) {
        where_node(&w, st->s, n, &element);
        if (count == 0)
          add_problem(st->out, &w, "map entry has no exit");
        else
          add_problem(st->out, &w, "map entry has %u exits (nodes %s)", count,
                      ids->str);
      }
    } else if (n->kind == WEIR_NODE_MAP_EXIT) {
      const WeirNode *e = weir_state_node(st->s, n->entry);
      if (e && e->kind == WEIR_NODE_MAP_ENTRY)
        continue;
      ok = FALSE;
      if (!report)
        continue;
      where_node(&w, st->s, n, &element);
      if (!e)
        add_problem(st->out, &w,
                    "map exit refers to entry %u, which is not in the state",
                    n->entry);
      else
        add_problem(st->out, &w,
                    "map exit refers to node %u (%s '%s'), which is not a map "
                    "entry",
                    e->id, weir_node_kind_name(e->kind), e->label);
    }
  }
  return ok;
}

static void check_state(WeirGraph *g, WeirState *s, GPtrArray *out) {
  StateCheck st = {g, s, NULL, out, NULL};
  g_autofree char *element = g_strdup_printf("state %u '%s'", s->id, s->label);
  Where w = {s->id, 0, 0, 0, element};

  /* Scopes need every memlet end and every exit's entry to exist; those
   * problems are reported below with their elements. */
  gboolean ends_ok = TRUE;
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (!weir_state_node(s, m->src) || !weir_state_node(s, m->dst))
      ends_ok = FALSE;
  }
  if (ends_ok && check_pairing(&st, FALSE)) {
    g_autoptr(GError) error = NULL;
    st.scopes = weir_state_scopes(s, &error);
    if (!st.scopes) {
      /* Drop the "state N 'label': " prefix: the element says it. */
      g_autofree char *prefix = g_strdup_printf("%s: ", element);
      const char *msg = error->message;
      if (g_str_has_prefix(msg, prefix))
        msg += strlen(prefix);
      add_problem(out, &w, "%s", msg);
    }
  }
  check_pairing(&st, TRUE);
  st.edges = weir_edge_index_begin(s);
  for (guint i = 0; i < s->nodes->len; i++)
    check_node(&st, g_ptr_array_index(s->nodes, i));
  for (guint i = 0; i < s->edges->len; i++)
    check_memlet(&st, g_ptr_array_index(s->edges, i));
  g_clear_pointer(&st.scopes, weir_scopes_free);
  g_clear_pointer(&st.edges, weir_edge_index_end);
}

/* ---------------------------------------------------------- program level */

static gboolean shape_is_concrete(const WeirContainer *c) {
  for (guint d = 0; d < c->shape->len; d++)
    if (!weir_expr_is_const(g_ptr_array_index(c->shape, d), NULL))
      return FALSE;
  return TRUE;
}

/* first: name -> the first container (by position) of that name. */
static void check_container(const WeirGraph *g, const WeirContainer *c,
                            GHashTable *first, const Scope *sc,
                            GPtrArray *out) {
  Where w = {0, 0, 0, 0, NULL, NULL, c};
  if (!is_identifier(c->name))
    add_problem(out, &w, "name '%s' is not an identifier",
                c->name ? c->name : "");
  const WeirContainer *o = NULL;
  if (c->name)
    o = g_hash_table_lookup(first, c->name);
  else /* rare: a container built without a name */
    for (guint i = 0; !o && i < g->containers->len; i++) {
      o = g_ptr_array_index(g->containers, i);
      if (o->name)
        o = NULL;
    }
  if (o && o != c)
    add_problem(out, &w, "name '%s' is also used by container %u", c->name,
                o->id);
  if (c->strides->len != c->shape->len)
    add_problem(out, &w, "%u strides for a shape of rank %u", c->strides->len,
                c->shape->len);
  for (guint d = 0; d < c->shape->len; d++) {
    const WeirExpr *e = g_ptr_array_index(c->shape, d);
    if (weir_expr_kind(e) != WEIR_EXPR_CONST) {
      g_autofree char *what = g_strdup_printf("shape dimension %u", d);
      check_expr_symbols(out, &w, e, sc, what);
    }
    gint64 v;
    if (weir_expr_is_const(e, &v) && v < 0)
      add_problem(out, &w,
                  "shape dimension %u has negative size %" G_GINT64_FORMAT, d,
                  v);
  }
  for (guint d = 0; d < c->strides->len; d++) {
    const WeirExpr *e = g_ptr_array_index(c->strides, d);
    if (weir_expr_kind(e) == WEIR_EXPR_CONST)
      continue;
    g_autofree char *what = g_strdup_printf("stride %u", d);
    check_expr_symbols(out, &w, e, sc, what);
  }
  if (c->count) {
    const WeirContainer *k = g_hash_table_lookup(first, c->count);
    if (c->count_dim >= c->shape->len)
      add_problem(out, &w, "count bounds dimension %u of a shape of rank %u",
                  c->count_dim, c->shape->len);
    if (!k)
      add_problem(out, &w, "count container '%s' does not exist", c->count);
    else if (k == c || k->dtype != WEIR_DTYPE_I64 || k->shape->len != 0 ||
             k->count)
      add_problem(out, &w,
                  "count container '%s' must be another i64 scalar, itself "
                  "without a count",
                  c->count);
    if (c->initial)
      add_problem(out, &w,
                  "a container with a count cannot have initial "
                  "data");
  }
  if (!c->initial)
    return;
  if (!shape_is_concrete(c)) {
    add_problem(out, &w, "initial data needs a concrete shape");
    return;
  }
  g_autoptr(WeirExpr) bytes = weir_container_bytes(c);
  gint64 want = 0;
  weir_expr_is_const(bytes, &want);
  gsize have = g_bytes_get_size(c->initial);
  if ((gint64)have != want)
    add_problem(out, &w,
                "initial data has %" G_GSIZE_FORMAT " bytes, expected "
                "%" G_GINT64_FORMAT " (%" G_GINT64_FORMAT " x %s)",
                have, want, want / (gint64)weir_dtype_size(c->dtype),
                weir_dtype_name(c->dtype));
}

static void check_transition(const WeirGraph *g, WeirTransition *t,
                             const Scope *sc, GPtrArray *out) {
  g_autofree char *element =
      g_strdup_printf("transition %u (%u -> %u)", t->id, t->src, t->dst);
  Where w = {0, 0, 0, t->id, element};
  if (!weir_graph_state(g, t->src))
    add_problem(out, &w, "source state %u does not exist", t->src);
  if (!weir_graph_state(g, t->dst))
    add_problem(out, &w, "destination state %u does not exist", t->dst);
  if (t->condition_text && !t->condition) {
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirCode) code =
        weir_code_parse_condition(t->condition_text, &error);
    add_problem(out, &w, "condition '%s' does not parse: %s", t->condition_text,
                error ? error->message : "unknown error");
  } else if (t->condition) {
    /* Names that are containers read their one element. */
    g_autoptr(GPtrArray) reads = weir_transition_data_reads(g, t);
    g_autofree WeirConnectorInfo *ins =
        g_new0(WeirConnectorInfo, reads->len + 1);
    gboolean scalars = TRUE;
    for (guint i = 0; i < reads->len; i++) {
      const WeirContainer *c =
          weir_graph_container(g, g_ptr_array_index(reads, i));
      ins[i].name = c->name;
      ins[i].dtype = c->dtype;
      ins[i].rank = 0;
      for (guint d = 0; d < c->shape->len; d++) {
        gint64 v;
        if (!weir_expr_is_const(g_ptr_array_index(c->shape, d), &v) || v != 1) {
          add_problem(out, &w,
                      "condition '%s' reads container '%s', which is not a "
                      "scalar (a condition reads containers of one "
                      "element only)",
                      t->condition_text ? t->condition_text : "", c->name);
          scalars = FALSE;
          break;
        }
      }
      if (c->count) {
        add_problem(out, &w,
                    "condition '%s' reads container '%s', which has a "
                    "data-dependent length",
                    t->condition_text ? t->condition_text : "", c->name);
        scalars = FALSE;
      }
    }
    g_autoptr(GError) error = NULL;
    if (scalars && !weir_code_check(t->condition, ins, reads->len, NULL, 0,
                                    sc->names, &error))
      add_problem(out, &w, "condition '%s': %s",
                  t->condition_text ? t->condition_text : "", error->message);
  }
  guint n = MIN(t->assign_names->len, t->assign_values->len);
  if (t->assign_names->len != t->assign_values->len)
    add_problem(out, &w, "%u assignment targets but %u values",
                t->assign_names->len, t->assign_values->len);
  for (guint i = 0; i < n; i++) {
    const char *name = g_ptr_array_index(t->assign_names, i);
    const WeirExpr *value = g_ptr_array_index(t->assign_values, i);
    if (!weir_graph_has_symbol(g, name))
      add_problem(out, &w, "assignment to undeclared symbol '%s'", name);
    g_autofree char *v = weir_expr_to_string(value);
    g_autofree char *what = g_strdup_printf("assignment %s = %s", name, v);
    check_expr_symbols(out, &w, value, sc, what);
  }
}

GPtrArray *weir_graph_check(WeirGraph *g) {
  g_return_val_if_fail(g != NULL, NULL);
  GPtrArray *out =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_problem_free);
  g_autoptr(Scope) sc = scope_new_program(g);
  Where prog = {0, 0, 0, 0, "program"};

  g_autoptr(GHashTable) first = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < g->containers->len; i++) {
    WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->name && !g_hash_table_contains(first, c->name))
      g_hash_table_insert(first, c->name, c);
  }
  for (guint i = 0; i < g->containers->len; i++)
    check_container(g, g_ptr_array_index(g->containers, i), first, sc, out);
  for (guint i = 0; i < g->symbols->len; i++) {
    const char *name = g_ptr_array_index(g->symbols, i);
    if (!is_identifier(name))
      add_problem(out, &prog, "symbol '%s' is not an identifier", name);
    if (i > 0 && strcmp(name, g_ptr_array_index(g->symbols, i - 1)) == 0)
      add_problem(out, &prog, "symbol '%s' is declared twice", name);
  }
  if (g->states->len == 0)
    add_problem(out, &prog, "the program has no states");
  else if (!weir_graph_state(g, g->start))
    add_problem(out, &prog, "start state %u does not exist", g->start);
  for (guint i = 0; i < g->transitions->len; i++)
    check_transition(g, g_ptr_array_index(g->transitions, i), sc, out);

  for (guint i = 0; i < g->states->len; i++)
    check_state(g, g_ptr_array_index(g->states, i), out);
  return out;
}

gboolean weir_graph_validate(WeirGraph *g, GError **error) {
  g_autoptr(GPtrArray) problems = weir_graph_check(g);
  if (!problems)
    return FALSE;
  if (problems->len == 0)
    return TRUE;
  g_autoptr(GString) msg = g_string_new(NULL);
  g_string_append_printf(msg, "%u problem%s:", problems->len,
                         problems->len == 1 ? "" : "s");
  for (guint i = 0; i < problems->len; i++) {
    const WeirProblem *p = g_ptr_array_index(problems, i);
    g_string_append_printf(msg, "\n%s: %s", p->element, p->message);
  }
  g_set_error_literal(error, WEIR_ERROR, WEIR_ERROR_INVALID, msg->str);
  return FALSE;
}
