/* tier3-vertical.c — producer-consumer map fusion shared by map-fusion and
 * map-reduce-fusion (see tier3-vertical.h).
 *
 * Legality, in the order checked (the first failure is the reason):
 *  1. the site is map exit (A) -> access node (T) -> map entry (B), the
 *     three in one scope;
 *  2. T is a transient, written only by A, without WCR, by one tasklet
 *     directly inside A, one element per iteration;
 *  3. T is read by B through one memlet; with map-fusion by nothing else
 *     (anywhere in the program); with map-reduce-fusion other readers keep
 *     T alive and A keeps writing it;
 *  4. B's tasklets read T directly inside B (not in a nested scope);
 *  5. B is (map-reduce-fusion) or is not (map-fusion) a reduction: a map
 *     writing some output with WCR;
 *  6. the parameters pair up with equal ranges (map-reduce-fusion: B may
 *     have more), and B reads T at exactly the element A writes in the same
 *     iteration.  map-reduce-fusion also pairs a parameter p in 0:N of A
 *     with a window index s*o + k of B (o in 0:M, k in 0:s, M*s == N: a
 *     pooling whose windows tile the input without overlap), so that B
 *     visits every element of T once; A's body then reads s*o + k where
 *     it read p (refused when a tasklet uses p in its code);
 *  7. with extra parameters in B (only with recompute), A writes nothing
 *     but T and T dies (A's body runs once per point of B's larger
 *     space);
 *  8. B does not depend on A through any other path, and the maps do not
 *     otherwise touch each other's data (a container written by one and
 *     read or written by the other);
 *  9. no map nested in A's body has a parameter named like one of B's, and
 *     no tasklet in it has a connector or local named like a parameter of
 *     B that one of A's parameters it reads becomes.
 */
#include <string.h>

#include "tier3-util.h"
#include "tier3-vertical.h"
#include "weir-ops.h"

typedef struct {
  WeirState *s;
  WeirNode *ea, *xa, *tn, *eb, *xb;
  WeirContainer *t;
  WeirMemlet *write;   /* writer tasklet -> A's exit, on T */
  WeirMemlet *t_in;    /* T's access node -> B's entry */
  GPtrArray *readers;  /* memlets B's entry -> reader tasklets, on T */
  GHashTable *pairs;   /* A parameter -> B parameter */
  GHashTable *windows; /* A parameter -> WeirExpr over two B parameters
                          (map-reduce-fusion over pooling windows) */
  gboolean keep_t;     /* T stays (other readers): A keeps writing it */
  WeirScopes *scopes;
} Plan;

static void plan_clear(Plan *p) {
  g_clear_pointer(&p->readers, g_ptr_array_unref);
  g_clear_pointer(&p->pairs, g_hash_table_unref);
  g_clear_pointer(&p->windows, g_hash_table_unref);
  g_clear_pointer(&p->scopes, weir_scopes_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Plan, plan_clear)

static const char *wcr_output(const WeirState *s, const WeirNode *xb) {
  g_autoptr(GPtrArray) in = tier3_edges_in(s, xb->id, NULL);
  for (guint i = 0; i < in->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(in, i);
    if (m->data && m->wcr != WEIR_WCR_NONE)
      return m->data;
  }
  g_autoptr(GPtrArray) out = tier3_edges_out(s, xb->id, NULL);
  for (guint i = 0; i < out->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(out, i);
    if (m->data && m->wcr != WEIR_WCR_NONE)
      return m->data;
  }
  return NULL;
}

/* Finds the site's nodes; FALSE with a reason when they do not form the
 * pattern. */
static gboolean plan_nodes(const WeirGraph *g, const WeirSite *site, Plan *p,
                           char **reason) {
  WeirState *s = site->n_nodes == 3 ? weir_graph_state(g, site->state) : NULL;
  if (s) {
    p->s = s;
    p->xa = weir_state_node(s, site->nodes[0]);
    p->tn = weir_state_node(s, site->nodes[1]);
    p->eb = weir_state_node(s, site->nodes[2]);
  }
  if (!s || !p->xa || !p->tn || !p->eb || p->xa->kind != WEIR_NODE_MAP_EXIT ||
      p->tn->kind != WEIR_NODE_ACCESS || p->eb->kind != WEIR_NODE_MAP_ENTRY)
    return tier3_reason(reason, "the site is not a map exit, an access node "
                                "and a map entry of one state");
  p->ea = weir_state_node(s, p->xa->entry);
  p->xb = weir_state_map_exit(s, p->eb);
  p->t = weir_graph_container(g, p->tn->data);
  if (!p->ea || !p->xb || !p->t)
    return tier3_reason(reason, "the site's maps or container are incomplete");
  if (p->ea == p->eb)
    return tier3_reason(reason, "both ends of the site are the same map");
  g_autoptr(GError) error = NULL;
  p->scopes = weir_state_scopes(s, &error);
  if (!p->scopes)
    return tier3_reason(reason, "%s", error->message);
  return TRUE;
}

/* Checks 1-4: how T joins the two maps. */
static gboolean plan_container(const WeirGraph *g, Plan *p,
                               Tier3VerticalMode mode, char **reason) {
  const char *t = p->t->name;
  const char *a = p->ea->label, *b = p->eb->label;
  guint scope = weir_scopes_parent(p->scopes, p->ea->id);
  if (weir_scopes_parent(p->scopes, p->eb->id) != scope ||
      weir_scopes_parent(p->scopes, p->tn->id) != scope)
    return tier3_reason(reason, "maps '%s' and '%s' are in different scopes", a,
                        b);
  if (!p->t->transient)
    return tier3_reason(reason,
                        "container '%s' is not transient (the program's "
                        "caller sees it)",
                        t);

  g_autoptr(GPtrArray) tin = tier3_edges_in(p->s, p->tn->id, NULL);
  const WeirMemlet *outer = tin->len == 1 ? g_ptr_array_index(tin, 0) : NULL;
  if (!outer || outer->src != p->xa->id || !outer->src_conn)
    return tier3_reason(reason,
                        "access node %u of '%s' is written by other nodes "
                        "than map '%s'",
                        p->tn->id, t, a);
  if (outer->wcr != WEIR_WCR_NONE)
    return tier3_reason(reason, "'%s' is written with wcr '%s' by map '%s'", t,
                        weir_wcr_name(outer->wcr), a);
  g_autoptr(GPtrArray) xout = tier3_edges_out(p->s, p->xa->id, outer->src_conn);
  if (xout->len != 1)
    return tier3_reason(
        reason, "map '%s' writes '%s' to more than one access node", a, t);
  g_autofree char *in_conn = tier3_pair_conn(outer->src_conn);
  g_autoptr(GPtrArray) win = tier3_edges_in(p->s, p->xa->id, in_conn);
  p->write = win->len == 1 ? g_ptr_array_index(win, 0) : NULL;
  WeirNode *writer = p->write ? weir_state_node(p->s, p->write->src) : NULL;
  if (!writer || writer->kind != WEIR_NODE_TASKLET ||
      weir_scopes_parent(p->scopes, writer->id) != p->ea->id ||
      !p->write->subset)
    return tier3_reason(reason,
                        "'%s' is not written by one tasklet directly inside "
                        "map '%s'",
                        t, a);
  if (p->write->wcr != WEIR_WCR_NONE)
    return tier3_reason(reason, "'%s' is written with wcr '%s' by map '%s'", t,
                        weir_wcr_name(p->write->wcr), a);
  if (!weir_subset_is_point(p->write->subset)) {
    g_autofree char *w = tier3_subset_text(t, p->write->subset);
    return tier3_reason(reason,
                        "map '%s' writes more than one element of '%s' per "
                        "iteration (%s)",
                        a, t, w);
  }

  /* Readers of T's access node. */
  g_autoptr(GPtrArray) tout = tier3_edges_out(p->s, p->tn->id, NULL);
  for (guint i = 0; i < tout->len; i++) {
    WeirMemlet *m = g_ptr_array_index(tout, i);
    if (m->dst == p->eb->id && m->data) {
      if (p->t_in)
        return tier3_reason(
            reason, "map '%s' reads '%s' through more than one memlet", b, t);
      p->t_in = m;
    } else if (mode == TIER3_VERTICAL_REDUCE) {
      p->keep_t = TRUE;
    } else {
      WeirNode *o = weir_state_node(p->s, m->dst);
      return tier3_reason(reason,
                          "'%s' is also read by node %u (%s '%s'), so it "
                          "cannot be removed",
                          t, o->id, weir_node_kind_name(o->kind), o->label);
    }
  }
  if (!p->t_in || !p->t_in->dst_conn)
    return tier3_reason(reason, "map '%s' does not read '%s'", b, t);
  /* Other access nodes of T anywhere in the program. */
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n == p->tn || n->kind != WEIR_NODE_ACCESS ||
          g_strcmp0(n->data, t) != 0)
        continue;
      if (mode == TIER3_VERTICAL_REDUCE) {
        p->keep_t = TRUE;
        continue;
      }
      return tier3_reason(reason,
                          "'%s' is also used by node %u (access '%s') in state "
                          "%u, so it cannot be removed",
                          t, n->id, n->label, s->id);
    }
  }

  g_autofree char *out_conn = tier3_pair_conn(p->t_in->dst_conn);
  p->readers = tier3_edges_out(p->s, p->eb->id, out_conn);
  if (p->readers->len == 0)
    return tier3_reason(reason, "map '%s' does not read '%s'", b, t);
  for (guint i = 0; i < p->readers->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(p->readers, i);
    const WeirNode *r = weir_state_node(p->s, m->dst);
    if (!r || r->kind != WEIR_NODE_TASKLET || !m->subset ||
        m->wcr != WEIR_WCR_NONE)
      return tier3_reason(reason,
                          "map '%s' reads '%s' in a nested scope, at other "
                          "indices than map '%s' writes it",
                          b, t, a);
    if (!weir_subset_is_point(m->subset)) {
      g_autofree char *rt = tier3_subset_text(t, m->subset);
      return tier3_reason(reason,
                          "map '%s' reads %s in each iteration, at other "
                          "indices than map '%s' writes (one element)",
                          b, rt, a);
    }
  }
  return TRUE;
}

/* e is s*o + k with o, k parameters of b (s > 1 a constant): *outer,
 * *inner receive their indices, *stride s. */
static gboolean affine_window(const WeirExpr *e, const WeirMap *b, gint *outer,
                              gint *inner, gint64 *stride) {
  if (weir_expr_kind(e) != WEIR_EXPR_ADD || weir_expr_n_operands(e) != 2)
    return FALSE;
  gint idx[2];
  gint64 coef[2];
  for (guint i = 0; i < 2; i++) {
    const WeirExpr *t = weir_expr_operand(e, i);
    const WeirExpr *sym = t;
    coef[i] = 1;
    if (weir_expr_kind(t) == WEIR_EXPR_MUL && weir_expr_n_operands(t) == 2) {
      const WeirExpr *x = weir_expr_operand(t, 0), *y = weir_expr_operand(t, 1);
      if (weir_expr_kind(x) == WEIR_EXPR_CONST) {
        coef[i] = weir_expr_const_value(x);
        sym = y;
      } else if (weir_expr_kind(y) == WEIR_EXPR_CONST) {
        coef[i] = weir_expr_const_value(y);
        sym = x;
      } else {
        return FALSE;
      }
    }
    if (weir_expr_kind(sym) != WEIR_EXPR_SYMBOL)
      return FALSE;
    idx[i] = -1;
    for (guint k = 0; k < b->params->len; k++)
      if (strcmp(g_ptr_array_index(b->params, k), weir_expr_symbol_name(sym)) ==
          0)
        idx[i] = (gint)k;
    if (idx[i] < 0)
      return FALSE;
  }
  guint o = coef[0] == 1 ? 1 : 0;
  if (coef[1 - o] != 1 || coef[o] < 2 || idx[0] == idx[1])
    return FALSE;
  *outer = idx[o];
  *inner = idx[1 - o];
  *stride = coef[o];
  return TRUE;
}

/* r is begin:end:step with begin and step as given and a constant end;
 * *end receives it. */
static gboolean const_range(const WeirRange *r, gint64 begin, gint64 *end) {
  gint64 b, st;
  return weir_expr_is_const(r->begin, &b) && b == begin &&
         weir_expr_is_const(r->step, &st) && st == 1 &&
         weir_expr_is_const(r->end, end);
}

/* Window pairing (see check 6): fills p->windows with every dimension of T
 * that A writes at a parameter p in 0:N and B reads at s*o + k with o in
 * 0:N/s, k in 0:s; the other parameters are paired as usual.  NULL (with
 * a reason) when no dimension is such a window. */
static GHashTable *window_pairs(Plan *p, const WeirSubset *w,
                                const WeirSubset *r, char **reason) {
  const WeirMap *a = p->ea->map, *b = p->eb->map;
  if (!w || !r || w->rank != r->rank)
    return NULL;
  g_autofree gboolean *used_a = g_new0(gboolean, a->params->len + 1);
  g_autofree gboolean *used_b = g_new0(gboolean, b->params->len + 1);
  g_autoptr(GHashTable) win = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_expr_unref);
  for (guint d = 0; d < w->rank; d++) {
    const WeirExpr *ea = w->dims[d].begin, *eb = r->dims[d].begin;
    if (weir_expr_kind(ea) != WEIR_EXPR_SYMBOL)
      continue;
    gint ia = -1, outer, inner;
    gint64 stride, n, m, k;
    for (guint i = 0; i < a->params->len; i++)
      if (strcmp(g_ptr_array_index(a->params, i), weir_expr_symbol_name(ea)) ==
          0)
        ia = (gint)i;
    if (ia < 0 || used_a[ia] ||
        !affine_window(eb, b, &outer, &inner, &stride) || used_b[outer] ||
        used_b[inner] ||
        !const_range(&g_array_index(a->ranges, WeirRange, ia), 0, &n) ||
        !const_range(&g_array_index(b->ranges, WeirRange, outer), 0, &m) ||
        !const_range(&g_array_index(b->ranges, WeirRange, inner), 0, &k) ||
        k != stride || m * stride != n)
      continue;
    used_a[ia] = used_b[outer] = used_b[inner] = TRUE;
    g_hash_table_insert(win, g_strdup(g_ptr_array_index(a->params, ia)),
                        weir_expr_ref((WeirExpr *)eb));
  }
  if (g_hash_table_size(win) == 0)
    return NULL;
  /* The rest pairs as usual (shallow copies of the maps without the window
   * parameters; the ranges are borrowed). */
  WeirMap ra = {.params = g_ptr_array_new(),
                .ranges = g_array_new(FALSE, FALSE, sizeof(WeirRange))};
  WeirMap rb = {.params = g_ptr_array_new(),
                .ranges = g_array_new(FALSE, FALSE, sizeof(WeirRange))};
  for (guint i = 0; i < a->params->len; i++)
    if (!used_a[i]) {
      g_ptr_array_add(ra.params, g_ptr_array_index(a->params, i));
      g_array_append_val(ra.ranges, g_array_index(a->ranges, WeirRange, i));
    }
  for (guint i = 0; i < b->params->len; i++)
    if (!used_b[i]) {
      g_ptr_array_add(rb.params, g_ptr_array_index(b->params, i));
      g_array_append_val(rb.ranges, g_array_index(b->ranges, WeirRange, i));
    }
  GHashTable *pairs = tier3_pair_params(&ra, &rb, w, r, TRUE, reason);
  g_ptr_array_unref(ra.params);
  g_ptr_array_unref(rb.params);
  g_array_unref(ra.ranges);
  g_array_unref(rb.ranges);
  if (pairs)
    p->windows = g_steal_pointer(&win);
  return pairs;
}

typedef struct {
  GHashTable *names; /* the window parameters */
  const char *hit;
} UseCtx;

static const char *note_use(const char *name, Tier3NameRole role,
                            gpointer user) {
  UseCtx *c = user;
  gpointer key;
  if (role == TIER3_NAME_SYMBOL && !c->hit &&
      g_hash_table_lookup_extended(c->names, name, &key, NULL))
    c->hit = key;
  return NULL;
}

/* A tasklet in A's body whose code reads a window parameter (its code can
 * only be renamed, not given an expression): the reason, or NULL. */
static char *window_in_code(const Plan *p) {
  g_autoptr(GArray) body = tier3_scope_body(p->s, p->scopes, p->ea->id);
  for (guint i = 0; i < body->len; i++) {
    const WeirNode *n = weir_state_node(p->s, g_array_index(body, guint, i));
    if (n->kind != WEIR_NODE_TASKLET || !n->code)
      continue;
    g_autoptr(WeirCode) code = weir_code_copy(n->code);
    UseCtx c = {p->windows, NULL};
    tier3_code_rename(code, n, note_use, &c);
    if (c.hit)
      return g_strdup_printf("tasklet '%s' (node %u) uses parameter '%s' in "
                             "its code, which would become a window index",
                             n->label, n->id, c.hit);
  }
  return NULL;
}

/* A's parameters in B's terms: paired parameters and window indices. */
static GHashTable *substitution(const Plan *p) {
  GHashTable *sub = tier3_param_substitution(p->pairs);
  if (p->windows) {
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, p->windows);
    /* a lookup table: insertion order does not matter */
    while (g_hash_table_iter_next(&it, &k, &v))
      g_hash_table_insert(sub, g_strdup(k), weir_expr_ref(v));
  }
  return sub;
}

/* Checks 5-7: reduction or not, iteration spaces and indices. */
static gboolean plan_spaces(Plan *p, Tier3VerticalMode mode, gboolean recompute,
                            char **reason) {
  const char *t = p->t->name;
  const char *a = p->ea->label, *b = p->eb->label;
  const char *reduced = wcr_output(p->s, p->xb);
  if (mode == TIER3_VERTICAL_ELEMENTWISE && reduced)
    return tier3_reason(reason,
                        "map '%s' is a reduction (it writes '%s' with wcr); "
                        "map-reduce-fusion fuses it",
                        b, reduced);
  if (mode == TIER3_VERTICAL_REDUCE && !reduced)
    return tier3_reason(reason,
                        "map '%s' is not a reduction (no output with wcr); "
                        "map-fusion fuses it",
                        b);
  const WeirMemlet *r0 = g_ptr_array_index(p->readers, 0);
  g_autofree char *why = NULL;
  p->pairs = tier3_pair_params(p->ea->map, p->eb->map, p->write->subset,
                               r0->subset, mode == TIER3_VERTICAL_REDUCE, &why);
  if (!p->pairs && mode == TIER3_VERTICAL_REDUCE)
    p->pairs = window_pairs(p, p->write->subset, r0->subset, NULL);
  if (!p->pairs)
    return tier3_reason(reason, "maps '%s' and '%s' have %s", a, b, why);
  if (p->windows) {
    g_autofree char *used = window_in_code(p);
    if (used)
      return tier3_reason(reason, "%s", used);
  }
  /* Compared in B's parameters, single-point ranges by their point. */
  g_autoptr(GHashTable) sub = substitution(p);
  g_autoptr(GHashTable) pts = tier3_point_substitution(p->eb->map);
  g_autoptr(WeirSubset) wb = weir_subset_substitute(p->write->subset, sub);
  g_autoptr(WeirSubset) ws = weir_subset_substitute(wb, pts);
  for (guint i = 0; i < p->readers->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(p->readers, i);
    g_autoptr(WeirSubset) rs = weir_subset_substitute(m->subset, pts);
    if (!weir_subset_equal(ws, rs)) {
      g_autofree char *rt = tier3_subset_text(t, m->subset);
      g_autofree char *wt = tier3_subset_text(t, p->write->subset);
      return tier3_reason(reason,
                          "map '%s' reads %s, at other indices than map '%s' "
                          "writes (%s)",
                          b, rt, a, wt);
    }
  }
  guint covered = g_hash_table_size(p->pairs) +
                  2 * (p->windows ? g_hash_table_size(p->windows) : 0);
  if (covered < p->eb->map->params->len) {
    const char *extra = NULL;
    for (guint i = 0; i < p->eb->map->params->len && !extra; i++) {
      const char *q = g_ptr_array_index(p->eb->map->params, i);
      gboolean paired = FALSE;
      for (guint k = 0; k < p->ea->map->params->len; k++) {
        const char *ap = g_ptr_array_index(p->ea->map->params, k);
        const char *to = g_hash_table_lookup(p->pairs, ap);
        const WeirExpr *we =
            p->windows ? g_hash_table_lookup(p->windows, ap) : NULL;
        paired = paired || (to && strcmp(to, q) == 0);
        if (we) {
          g_autoptr(GHashTable) syms =
              g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
          weir_expr_collect_symbols(we, syms);
          paired = paired || g_hash_table_contains(syms, q);
        }
      }
      if (!paired)
        extra = q;
    }
    if (!recompute)
      return tier3_reason(reason,
                          "map '%s' iterates over more points than map '%s' "
                          "(its parameter '%s' has no counterpart); "
                          "recompute=true repeats the work of '%s' for each",
                          b, a, extra, a);
    if (p->keep_t)
      return tier3_reason(reason,
                          "'%s' is still read elsewhere, and map '%s' would "
                          "write it once per value of its parameter '%s'",
                          t, b, extra);
    g_autoptr(GPtrArray) writes = tier3_map_writes(p->s, p->xa);
    for (guint i = 0; i < writes->len; i++) {
      const char *w = g_ptr_array_index(writes, i);
      if (strcmp(w, t) != 0)
        return tier3_reason(reason,
                            "map '%s' would run once per value of parameter "
                            "'%s' of map '%s', but it also writes '%s'",
                            a, extra, b, w);
    }
  }
  return TRUE;
}

/* Checks 8-9: no other dependency, no shared data, no shadowing. */
static gboolean plan_independent(Plan *p, char **reason) {
  const char *a = p->ea->label, *b = p->eb->label;
  g_autoptr(GHashTable) blocked = g_hash_table_new(g_direct_hash, NULL);
  g_hash_table_add(blocked, GUINT_TO_POINTER(p->t_in->id));
  g_autoptr(GHashTable) reach = tier3_reachable(p->s, p->xa->id, blocked);
  if (g_hash_table_contains(reach, GUINT_TO_POINTER(p->eb->id))) {
    /* Name the first node on such a path. */
    guint via = 0;
    for (guint i = 0; i < p->s->edges->len && !via; i++) {
      const WeirMemlet *m = g_ptr_array_index(p->s->edges, i);
      if ((m->src != p->xa->id && m->src != p->tn->id) || m->dst == p->tn->id ||
          m->id == p->t_in->id)
        continue;
      g_autoptr(GHashTable) r = tier3_reachable(p->s, m->dst, blocked);
      if (m->dst == p->eb->id ||
          g_hash_table_contains(r, GUINT_TO_POINTER(p->eb->id)))
        via = m->dst;
    }
    const WeirNode *v = weir_state_node(p->s, via);
    return tier3_reason(reason,
                        "map '%s' also depends on map '%s' through node %u "
                        "(%s '%s')",
                        b, a, v ? v->id : 0,
                        v ? weir_node_kind_name(v->kind) : "?",
                        v ? v->label : "?");
  }
  g_autoptr(GPtrArray) ra = tier3_map_reads(p->s, p->ea);
  g_autoptr(GPtrArray) wa = tier3_map_writes(p->s, p->xa);
  g_autoptr(GPtrArray) rb = tier3_map_reads(p->s, p->eb);
  g_autoptr(GPtrArray) wb = tier3_map_writes(p->s, p->xb);
  for (guint i = 0; i < wa->len; i++) {
    const char *w = g_ptr_array_index(wa, i);
    if (strcmp(w, p->t->name) != 0 &&
        (tier3_names_contain(rb, w) || tier3_names_contain(wb, w)))
      return tier3_reason(reason, "map '%s' writes '%s', which map '%s' uses",
                          a, w, b);
  }
  for (guint i = 0; i < wb->len; i++) {
    const char *w = g_ptr_array_index(wb, i);
    if (tier3_names_contain(ra, w) || tier3_names_contain(wa, w))
      return tier3_reason(reason, "map '%s' writes '%s', which map '%s' uses",
                          b, w, a);
  }
  g_autofree char *shadow =
      tier3_check_nested_params(p->s, p->scopes, p->ea->id, p->eb->map->params);
  if (!shadow)
    shadow = tier3_check_rename_capture(p->s, p->scopes, p->ea->id, p->pairs);
  if (shadow)
    return tier3_reason(reason, "%s", shadow);
  return TRUE;
}

static gboolean plan(const WeirGraph *g, const WeirSite *site,
                     Tier3VerticalMode mode, gboolean recompute, Plan *p,
                     char **reason) {
  return plan_nodes(g, site, p, reason) && plan_container(g, p, mode, reason) &&
         plan_spaces(p, mode, recompute, reason) && plan_independent(p, reason);
}

/* ---------------------------------------------------------------- match */

void tier3_vertical_match(const WeirGraph *g, GArray *sites,
                          Tier3VerticalMode mode) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *tn = g_ptr_array_index(s->nodes, k);
      if (tn->kind != WEIR_NODE_ACCESS)
        continue;
      g_autoptr(GPtrArray) in = tier3_edges_in(s, tn->id, NULL);
      const WeirMemlet *w = in->len == 1 ? g_ptr_array_index(in, 0) : NULL;
      const WeirNode *xa = w ? weir_state_node(s, w->src) : NULL;
      if (!xa || xa->kind != WEIR_NODE_MAP_EXIT || !w->data)
        continue;
      g_autoptr(GPtrArray) out = tier3_edges_out(s, tn->id, NULL);
      guint last = 0;
      for (guint j = 0; j < out->len; j++) {
        const WeirMemlet *m = g_ptr_array_index(out, j);
        const WeirNode *eb = weir_state_node(s, m->dst);
        if (!m->data || eb->kind != WEIR_NODE_MAP_ENTRY || eb->id == last ||
            eb->id == xa->entry)
          continue;
        const WeirNode *xb = weir_state_map_exit(s, eb);
        if (!xb)
          continue;
        gboolean reduce = wcr_output(s, xb) != NULL;
        if (reduce != (mode == TIER3_VERTICAL_REDUCE))
          continue;
        guint nodes[3] = {xa->id, tn->id, eb->id};
        tier3_site_add(sites, s->id, 3, nodes);
        last = eb->id;
      }
    }
  }
}

gboolean tier3_vertical_can_apply(const WeirGraph *g, const WeirSite *site,
                                  Tier3VerticalMode mode, gboolean recompute,
                                  char **reason) {
  g_auto(Plan) p = {0};
  return plan(g, site, mode, recompute, &p, reason);
}

/* ---------------------------------------------------------------- apply */

gboolean tier3_vertical_apply(WeirGraph *g, const WeirSite *site,
                              Tier3VerticalMode mode, gboolean recompute,
                              GError **error) {
  g_auto(Plan) p = {0};
  g_autofree char *reason = NULL;
  if (!plan(g, site, mode, recompute, &p, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  WeirState *s = p.s;
  g_autofree char *t = g_strdup(p.t->name);
  WeirDType dtype = p.t->dtype;

  /* A's body in B's parameters. */
  g_autoptr(GHashTable) sub = substitution(&p);
  if (!tier3_substitute_scope(g, s, p.scopes, p.ea->id, sub, error))
    return FALSE;

  /* The writer feeds B's readers directly through a scalar. */
  g_autofree char *base = g_strdup_printf("%s_v", t);
  g_autofree char *vname = weir_graph_fresh_name(g, base);
  if (!weir_graph_add_container(g, vname, dtype, 0, NULL, TRUE, error))
    return FALSE;
  guint writer = p.write->src;
  g_autofree char *writer_conn = g_strdup(p.write->src_conn);
  for (guint i = 0; i < p.readers->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(p.readers, i);
    if (!weir_state_add_memlet(g, s, writer, writer_conn, m->dst, m->dst_conn,
                               vname, "", error))
      return FALSE;
  }
  g_autofree char *b_in = g_strdup(p.t_in->dst_conn);
  g_autofree char *b_out = tier3_pair_conn(b_in);
  for (guint i = 0; i < p.readers->len; i++)
    weir_state_remove_memlet(
        s, ((const WeirMemlet *)g_ptr_array_index(p.readers, i))->id);
  weir_state_remove_memlet(s, p.t_in->id);
  weir_node_remove_in_conn(p.eb, b_in);
  weir_node_remove_out_conn(p.eb, b_out);

  if (!p.keep_t) {
    g_autofree char *a_in = g_strdup(p.write->dst_conn);
    g_autofree char *a_out = tier3_pair_conn(a_in);
    weir_state_remove_memlet(s, p.write->id);
    weir_node_remove_in_conn(p.xa, a_in);
    weir_node_remove_out_conn(p.xa, a_out);
    weir_state_remove_node(s, p.tn->id);
    if (!tier3_container_used(g, t))
      weir_graph_remove_container(g, t);
  }
  return tier3_merge_scope(g, s, p.ea, p.eb, error);
}
