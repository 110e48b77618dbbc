/* lifetime-shortening.c — "lifetime-shortening" (tier 4): make transients
 * live for less time, in one of two ways depending on the site.
 *
 * 1. Into a scope.  A transient T whose every access is inside the scope
 *    of map M, and that is indexed in some dimension d by the same
 *    expression p + c everywhere (p a parameter of M or of a map around it,
 *    c free of map parameters), is a per-iteration temporary: iteration p
 *    only ever touches the slice T[..., p + c, ...].  When each iteration
 *    also writes that slice before it reads it, no value crosses
 *    iterations, and the slice can be the whole container: dimension d is
 *    dropped (a [N, C] transient indexed [i, c] in a map over i becomes [C]
 *    indexed [c]), and so the storage live at any time shrinks by the
 *    extent of d.  (The code generator declares a transient used only
 *    inside a parallel map privately in the loop body, so every thread
 *    gets its own slice.)
 *    Site: [M's entry, an access node of T inside M].
 *    Legal when: T is transient without constant data, used in this state
 *    only; all its access nodes and memlets are inside M's scope; at least
 *    one dimension is indexed by p + c as above in every memlet; every
 *    access node of T that is read (or accumulated into with write-conflict
 *    resolution) is, or follows in the dataflow, an access node that writes
 *    the whole per-iteration slice plainly.
 *    Dimensions are dropped, unless a tasklet connector indexes T per
 *    dimension, or a library or nested node takes it whole: then they stay
 *    with extent 1 (indexed 0), so the connector's indices still fit.
 *
 * 2. Later.  A source — a top-level access node of a transient, or a map
 *    without inputs that writes only transients (an initialization) — is
 *    ready when the state starts, so the topological order runs it early
 *    and its transients are live from then on: the weights of a network
 *    are all live from the first layer.  The first top-level node that
 *    uses the source (directly, or through nodes that use nothing else,
 *    such as the initialization of a convolution from its bias) and also
 *    has an input that does not depend on the source, is where the source
 *    is needed: an ordering edge (empty memlet) from the last such input
 *    makes the source start just before.
 *    Site: [the source node].
 *    Legal when: the node is at top level without inputs, defines
 *    transients (its own container, or everything its map writes), and
 *    that other input currently runs after the source.
 *
 * Storage for training (which activations to keep for the backward pass
 * and which to recompute) will be a further tier-4 pass; see
 * docs/transformations.md.
 */
#include <string.h>

#include "tier4-util.h"
#include "weir-plugin.h"

gboolean weir_tier4_register_lifetime_shortening(GError **error);

typedef struct {
  WeirState *s;
  guint entry, node;
  const WeirContainer *c;
  GArray *memlets;   /* guint ids of the memlets with a subset on T */
  gboolean *drop;    /* per dimension of T */
  gboolean keep_one; /* keep dropped dims with extent 1 */
} Shorten;

static void shorten_clear(Shorten *sh) {
  g_clear_pointer(&sh->memlets, g_array_unref);
  g_clear_pointer(&sh->drop, g_free);
}

static gboolean fail(char **reason, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean fail(char **reason, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  *reason = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  return FALSE;
}

/* Parameters of map entry `entry` and of the maps around it, innermost
 * first: within one iteration of `entry` they are all fixed. */
static void scope_params(const T4State *ts, guint entry, GPtrArray *out) {
  const WeirState *s = t4_state_get(ts);
  for (guint x = entry; x; x = t4_parent(ts, x)) {
    const WeirNode *e = weir_state_node(s, x);
    for (guint k = 0; k < e->map->params->len; k++)
      g_ptr_array_add(out, g_ptr_array_index(e->map->params, k));
  }
}

/* All map parameters of the state (for "free of parameters" checks). */
static void all_params(const WeirState *s, GHashTable *set) {
  for (guint k = 0; k < s->nodes->len; k++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind != WEIR_NODE_MAP_ENTRY)
      continue;
    for (guint j = 0; j < n->map->params->len; j++)
      g_hash_table_add(set, g_ptr_array_index(n->map->params, j));
  }
}

/* e == p + c with p in fixed (coefficient 1) and c free of parameters. */
static gboolean unit_in_fixed(WeirExpr *e, GPtrArray *fixed,
                              GHashTable *params) {
  g_autoptr(GPtrArray) syms = weir_expr_symbols(e);
  const char *p = NULL;
  for (guint k = 0; k < syms->len; k++) {
    const char *name = g_ptr_array_index(syms, k);
    if (!g_hash_table_contains(params, name))
      continue;
    if (p)
      return FALSE;
    p = name;
  }
  if (!p)
    return FALSE;
  gboolean is_fixed = FALSE;
  for (guint k = 0; k < fixed->len && !is_fixed; k++)
    is_fixed = strcmp(g_ptr_array_index(fixed, k), p) == 0;
  if (!is_fixed)
    return FALSE;
  g_autoptr(WeirExpr) ps = weir_expr_symbol(p);
  g_autoptr(WeirExpr) rest = weir_expr_sub(e, ps);
  g_autoptr(GPtrArray) rsyms = weir_expr_symbols(rest);
  for (guint k = 0; k < rsyms->len; k++)
    if (strcmp(g_ptr_array_index(rsyms, k), p) == 0)
      return FALSE;
  return TRUE;
}

static gboolean inside(const T4State *ts, guint node, guint entry) {
  return t4_inside(ts, node, entry);
}

static gboolean analyse(const WeirGraph *gc, const WeirSite *site, Shorten *sh,
                        char **reason) {
  WeirGraph *g = (WeirGraph *)gc;
  memset(sh, 0, sizeof(*sh));
  sh->s = weir_graph_state(g, site->state);
  if (!sh->s || site->n_nodes != 2)
    return fail(reason, "a site is [map entry, access node] or [source "
                        "node]");
  WeirState *s = sh->s;
  sh->entry = site->nodes[0];
  sh->node = site->nodes[1];
  const WeirNode *e = weir_state_node(s, sh->entry);
  const WeirNode *t = weir_state_node(s, sh->node);
  if (!e || e->kind != WEIR_NODE_MAP_ENTRY || !t || t->kind != WEIR_NODE_ACCESS)
    return fail(reason, "a site is [map entry, access node]");
  const WeirContainer *c = weir_graph_container(g, t->data);
  sh->c = c;
  if (!c)
    return fail(reason, "unknown container '%s'", t->data);
  const char *name = c->name;
  if (!c->transient)
    return fail(reason, "'%s' is an argument of the program", name);
  if (c->initial)
    return fail(reason, "'%s' has constant data", name);
  if (c->shape->len == 0)
    return fail(reason, "'%s' is a scalar already", name);
  if (t4_states_using(g, name, NULL) != 1)
    return fail(reason, "'%s' is used in several states", name);
  g_autoptr(T4State) ts = t4_state_new(s, NULL);
  if (!ts)
    return fail(reason, "the scopes of state %u are broken", s->id);

  /* everything inside M */
  g_autoptr(GArray) acc = t4_access_nodes(s, name);
  for (guint k = 0; k < acc->len; k++) {
    guint id = g_array_index(acc, guint, k);
    if (!inside(ts, id, sh->entry))
      return fail(reason, "'%s' is also accessed outside map '%s' (node %u)",
                  name, e->label, id);
  }
  sh->memlets = g_array_new(FALSE, FALSE, sizeof(guint));
  sh->keep_one = FALSE;
  for (guint k = 0; k < s->edges->len; k++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, k);
    const WeirSubset *sub = t4_memlet_subset_on(s, m, name);
    if (!sub)
      continue;
    if (!inside(ts, m->src, sh->entry) || !inside(ts, m->dst, sh->entry))
      return fail(reason,
                  "memlet %u carries '%s' across the boundary of map "
                  "'%s'",
                  m->id, name, e->label);
    g_array_append_val(sh->memlets, m->id);
    if (!t4_subset_is_single(sub)) {
      guint ends[2] = {m->src, m->dst};
      for (guint j = 0; j < 2; j++) {
        const WeirNode *n = weir_state_node(s, ends[j]);
        if (n->kind == WEIR_NODE_TASKLET || n->kind == WEIR_NODE_LIBRARY ||
            n->kind == WEIR_NODE_NESTED)
          sh->keep_one = TRUE;
      }
    }
  }

  /* dimensions indexed by one fixed parameter, the same way everywhere */
  g_autoptr(GPtrArray) fixed = g_ptr_array_new();
  scope_params(ts, sh->entry, fixed);
  g_autoptr(GHashTable) params = g_hash_table_new(g_str_hash, g_str_equal);
  all_params(s, params);
  guint rank = c->shape->len;
  sh->drop = g_new0(gboolean, rank);
  guint n_drop = 0;
  for (guint d = 0; d < rank; d++) {
    WeirExpr *idx = NULL;
    gboolean ok = sh->memlets->len > 0;
    for (guint k = 0; k < sh->memlets->len && ok; k++) {
      const WeirMemlet *m =
          weir_state_memlet(s, g_array_index(sh->memlets, guint, k));
      const WeirSubset *sub = t4_memlet_subset_on(s, m, name);
      const WeirRange *r = &sub->dims[d];
      ok = t4_range_is_single(r) && (!idx || weir_expr_equal(idx, r->begin));
      idx = r->begin;
    }
    if (ok && unit_in_fixed(idx, fixed, params)) {
      sh->drop[d] = TRUE;
      n_drop++;
    }
  }
  if (n_drop == 0)
    return fail(reason,
                "no dimension of '%s' is indexed in every access by the same "
                "parameter of map '%s' (or of a map around it) with "
                "coefficient 1: iterations may share elements",
                name, e->label);

  /* written before read in each iteration */
  g_autoptr(GArray) defs = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint k = 0; k < acc->len; k++) {
    guint id = g_array_index(acc, guint, k);
    g_autoptr(GPtrArray) in = weir_state_in_edges(s, id);
    gboolean full = FALSE, plain = TRUE;
    for (guint j = 0; j < in->len; j++) {
      const WeirMemlet *m = g_ptr_array_index(in, j);
      const WeirSubset *sub = t4_memlet_subset_on(s, m, name);
      if (!sub)
        continue;
      plain &= m->wcr == WEIR_WCR_NONE && !m->dynamic;
      gboolean covers = TRUE;
      for (guint d = 0; d < rank && covers; d++) {
        if (sh->drop[d])
          continue;
        WeirExpr *size = g_ptr_array_index(c->shape, d);
        gint64 v;
        covers = weir_expr_is_const(sub->dims[d].begin, &v) && v == 0 &&
                 weir_expr_is_const(sub->dims[d].step, &v) && v == 1 &&
                 weir_expr_equal(sub->dims[d].end, size);
      }
      full |= covers && m->wcr == WEIR_WCR_NONE && !m->dynamic;
    }
    if (full && plain)
      g_array_append_val(defs, id);
  }
  for (guint k = 0; k < acc->len; k++) {
    guint id = g_array_index(acc, guint, k);
    g_autoptr(GPtrArray) in = weir_state_in_edges(s, id);
    g_autoptr(GPtrArray) out = weir_state_out_edges(s, id);
    gboolean needs = FALSE;
    for (guint j = 0; j < out->len; j++)
      needs |= ((const WeirMemlet *)g_ptr_array_index(out, j))->data != NULL;
    for (guint j = 0; j < in->len; j++)
      needs |=
          ((const WeirMemlet *)g_ptr_array_index(in, j))->wcr != WEIR_WCR_NONE;
    if (!needs)
      continue;
    /* a plain full write at this node comes before its reads; otherwise
     * an earlier node must have written the slice */
    gboolean defined = FALSE;
    for (guint j = 0; j < defs->len && !defined; j++) {
      guint dnode = g_array_index(defs, guint, j);
      defined = dnode == id || t4_reaches(ts, dnode, id);
    }
    if (!defined)
      return fail(reason,
                  "'%s' is read at node %u before an iteration of map '%s' "
                  "has written all of its slice",
                  name, id, e->label);
  }
  return TRUE;
}

/* ------------------------------------------------- delaying a definition */

/* A source (a top-level node without inputs) that defines transients is
 * ready at once, so the topological order runs it early and its
 * transients are live from the start.  Making it wait for the last other
 * input of its first user starts the lifetime just before the use. */
typedef struct {
  guint source, after;
} Delay;

static gboolean delay_analyse(const WeirGraph *g, const WeirSite *site,
                              Delay *d, char **reason) {
  const WeirState *s = weir_graph_state(g, site->state);
  const WeirNode *n =
      s && site->n_nodes == 1 ? weir_state_node(s, site->nodes[0]) : NULL;
  if (!n)
    return fail(reason, "a site is [map entry, access node] or [source "
                        "node]");
  g_autoptr(T4State) ts = t4_state_new(s, NULL);
  if (!ts)
    return fail(reason, "the scopes of state %u are broken", s->id);
  if (t4_parent(ts, n->id))
    return fail(reason, "node %u is inside a map scope", n->id);
  g_autoptr(GPtrArray) in = weir_state_in_edges(s, n->id);
  if (in->len)
    return fail(reason,
                "node %u (%s '%s') has inputs: only a source can "
                "start later",
                n->id, weir_node_kind_name(n->kind), n->label);
  /* the access nodes holding what n defines */
  g_autoptr(GArray) defs = g_array_new(FALSE, FALSE, sizeof(guint));
  if (n->kind == WEIR_NODE_ACCESS) {
    const WeirContainer *c = weir_graph_container(g, n->data);
    if (!c || !c->transient)
      return fail(reason,
                  "'%s' is an argument: it is live for the whole "
                  "program",
                  n->data);
    g_array_append_val(defs, n->id);
  } else if (n->kind == WEIR_NODE_MAP_ENTRY) {
    const WeirNode *x = weir_state_map_exit(s, n);
    g_autoptr(GPtrArray) xo = x ? weir_state_out_edges(s, x->id) : NULL;
    for (guint k = 0; xo && k < xo->len; k++) {
      const WeirMemlet *m = g_ptr_array_index(xo, k);
      const WeirNode *w = weir_state_node(s, m->dst);
      const WeirContainer *c =
          w->kind == WEIR_NODE_ACCESS ? weir_graph_container(g, w->data) : NULL;
      if (!c || !c->transient)
        return fail(reason, "map '%s' writes '%s', which is not a transient",
                    n->label, w->kind == WEIR_NODE_ACCESS ? w->data : "?");
      g_array_append_val(defs, w->id);
    }
    if (!xo || defs->len == 0)
      return fail(reason, "map '%s' writes nothing", n->label);
  } else {
    return fail(reason, "node %u is neither an access node nor a map entry",
                n->id);
  }
  /* the first top-level node that depends on n and also has an input that
   * does not (the first user of n, or of what n's users compute from it
   * alone, as an initialization from a bias) */
  guint join = 0, after = 0;
  for (guint p = t4_pos(ts, n->id) + 1; p < t4_n_nodes(ts) && !join; p++) {
    guint id = t4_node_at(ts, p);
    if (t4_parent(ts, id) || !t4_reaches(ts, n->id, id))
      continue;
    g_autoptr(GPtrArray) jin = weir_state_in_edges(s, id);
    for (guint k = 0; k < jin->len; k++) {
      const WeirMemlet *m = g_ptr_array_index(jin, k);
      if (t4_reaches(ts, n->id, m->src))
        continue;
      if (!after || t4_pos(ts, m->src) > t4_pos(ts, after))
        after = m->src;
    }
    if (after)
      join = id;
  }
  if (!join)
    return fail(reason,
                "nothing that uses node %u has another input to wait "
                "for: the definition cannot start later",
                n->id);
  const WeirNode *j = weir_state_node(s, join);
  if (t4_pos(ts, after) < t4_pos(ts, n->id))
    return fail(reason,
                "node %u already runs after node %u, the last other "
                "input of its user node %u (%s '%s')",
                n->id, after, join, weir_node_kind_name(j->kind), j->label);
  d->source = n->id;
  d->after = after;
  return TRUE;
}

/* ------------------------------------------------------ the framework API */

static int cmp_site(gconstpointer pa, gconstpointer pb) {
  const WeirSite *a = pa, *b = pb;
  if (a->state != b->state)
    return a->state < b->state ? -1 : 1;
  for (guint k = 0; k < MIN(a->n_nodes, b->n_nodes); k++)
    if (a->nodes[k] != b->nodes[k])
      return a->nodes[k] < b->nodes[k] ? -1 : 1;
  return (int)a->n_nodes - (int)b->n_nodes;
}

/* Deepest map entry enclosing both a and b (0: none). */
static guint common(const T4State *ts, guint a, guint b) {
  for (guint x = a; x; x = t4_parent(ts, x))
    for (guint y = b; y; y = t4_parent(ts, y))
      if (x == y)
        return x;
  return 0;
}

/* Transients whose access nodes are all inside one map scope (the
 * innermost scope holding them all). */
static void match(const WeirGraph *g, GArray *sites) {
  /* the analysis of the state last used, kept for the next container in
   * the same state (one per container made this quadratic) */
  const WeirState *ts_state = NULL;
  g_autoptr(T4State) ts = NULL;
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    const WeirState *s = NULL;
    if (!c->transient || c->initial || c->shape->len == 0 ||
        t4_states_using(g, c->name, &s) != 1)
      continue;
    if (s != ts_state) {
      g_clear_pointer(&ts, t4_state_free);
      ts = t4_state_new(s, NULL);
      ts_state = s;
    }
    if (!ts)
      continue;
    g_autoptr(GArray) acc = t4_access_nodes(s, c->name);
    guint scope = 0, first = 0;
    for (guint k = 0; k < acc->len; k++) {
      guint id = g_array_index(acc, guint, k);
      guint p = t4_parent(ts, id);
      scope = k == 0 ? p : common(ts, scope, p);
      if (!first)
        first = id;
    }
    if (!scope || !first)
      continue;
    WeirSite site = {.state = s->id, .n_nodes = 2, .nodes = {scope, first}};
    g_array_append_val(sites, site);
  }
  g_clear_pointer(&ts, t4_state_free);
  /* sources that define transients */
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    g_autoptr(T4State) sts = t4_state_new(s, NULL);
    if (!sts)
      continue;
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (t4_parent(sts, n->id) ||
          (n->kind != WEIR_NODE_ACCESS && n->kind != WEIR_NODE_MAP_ENTRY))
        continue;
      g_autoptr(GPtrArray) in = weir_state_in_edges(s, n->id);
      if (in->len)
        continue;
      gboolean defines = FALSE;
      if (n->kind == WEIR_NODE_ACCESS) {
        const WeirContainer *c = weir_graph_container(g, n->data);
        g_autoptr(GPtrArray) out = weir_state_out_edges(s, n->id);
        defines = c && c->transient && out->len > 0;
      } else {
        const WeirNode *x = weir_state_map_exit(s, n);
        g_autoptr(GPtrArray) xo = x ? weir_state_out_edges(s, x->id) : NULL;
        defines = xo && xo->len > 0;
        for (guint j = 0; defines && j < xo->len; j++) {
          const WeirNode *w =
              weir_state_node(s, ((WeirMemlet *)g_ptr_array_index(xo, j))->dst);
          const WeirContainer *c = w->kind == WEIR_NODE_ACCESS
                                       ? weir_graph_container(g, w->data)
                                       : NULL;
          defines = c && c->transient;
        }
      }
      if (!defines)
        continue;
      WeirSite site = {.state = s->id, .n_nodes = 1, .nodes = {n->id}};
      g_array_append_val(sites, site);
    }
  }
  g_array_sort(sites, cmp_site);
}

static gboolean can_apply(const WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, char **reason) {
  (void)params;
  if (site->n_nodes == 1) {
    Delay d;
    return delay_analyse(g, site, &d, reason);
  }
  Shorten sh;
  gboolean ok = analyse(g, site, &sh, reason);
  shorten_clear(&sh);
  return ok;
}

static gboolean apply(WeirGraph *g, const WeirSite *site,
                      const WeirParams *params, GError **error) {
  (void)params;
  g_autofree char *reason = NULL;
  if (site->n_nodes == 1) {
    Delay d;
    if (!delay_analyse(g, site, &d, &reason)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
      return FALSE;
    }
    WeirState *s = weir_graph_state(g, site->state);
    return weir_state_add_memlet(g, s, d.after, NULL, d.source, NULL, NULL,
                                 NULL, error) != NULL;
  }
  Shorten sh;
  if (!analyse(g, site, &sh, &reason)) {
    shorten_clear(&sh);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  WeirContainer *c = weir_graph_container(g, sh.c->name);
  guint rank = c->shape->len, nr = 0;
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, rank + 1);
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  g_autoptr(WeirExpr) zero = weir_expr_const(0);
  for (guint d = 0; d < rank; d++) {
    if (!sh.drop[d])
      shape[nr++] = g_ptr_array_index(c->shape, d);
    else if (sh.keep_one)
      shape[nr++] = one;
  }
  for (guint k = 0; k < sh.memlets->len; k++) {
    WeirMemlet *m =
        weir_state_memlet(sh.s, g_array_index(sh.memlets, guint, k));
    const WeirSubset *sub = t4_memlet_subset_on(sh.s, m, c->name);
    WeirSubset *fresh = t4_subset_new(nr);
    guint j = 0;
    for (guint d = 0; d < rank; d++) {
      if (!sh.drop[d])
        weir_range_copy(&sub->dims[d], &fresh->dims[j++]);
      else if (sh.keep_one)
        t4_range_set_index(&fresh->dims[j++], zero);
    }
    t4_memlet_replace_subset_on(sh.s, m, c->name, fresh);
  }
  /* the shape's expressions are borrowed from c: take references first */
  for (guint d = 0; d < nr; d++)
    weir_expr_ref(shape[d]);
  weir_container_set_shape(c, nr, shape);
  for (guint d = 0; d < nr; d++)
    weir_expr_unref(shape[d]);
  shorten_clear(&sh);
  return TRUE;
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "lifetime-shortening",
    .tier = 4,
    .description = "shorten transient lifetimes: shrink a transient used "
                   "inside one map scope to one iteration's slice, or start "
                   "a source's definition just before its first use",
    .match = match,
    .can_apply = can_apply,
    .apply = apply,
};

gboolean weir_tier4_register_lifetime_shortening(GError **error) {
  return weir_transform_register(&info, error);
}
