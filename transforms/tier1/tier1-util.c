/* tier1-util.c — analyses and rewrites shared by the tier-1
 * transformations (see tier1-util.h for the rules). */
#include "tier1-util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

gboolean weir_tier1_reason(char **reason, const char *fmt, ...) {
  if (reason) {
    va_list ap;
    va_start(ap, fmt);
    g_free(*reason);
    *reason = g_strdup_vprintf(fmt, ap);
    va_end(ap);
  }
  return FALSE;
}

char *weir_tier1_map_name(const WeirNode *entry) {
  return g_strdup_printf("map '%s' (node %u)", entry->label, entry->id);
}

/* ------------------------------------------------------------ map scopes */

gboolean weir_tier1_map_init(const WeirGraph *g, guint state, guint entry,
                             WeirTier1Map *out, char **reason) {
  memset(out, 0, sizeof *out);
  WeirState *s = weir_graph_state(g, state);
  if (!s)
    return weir_tier1_reason(reason, "the program has no state %u", state);
  WeirNode *n = weir_state_node(s, entry);
  if (!n)
    return weir_tier1_reason(reason, "state %u '%s' has no node %u", s->id,
                             s->label, entry);
  if (n->kind != WEIR_NODE_MAP_ENTRY || !n->map)
    return weir_tier1_reason(reason, "node %u (%s '%s') is not a map entry",
                             n->id, weir_node_kind_name(n->kind), n->label);
  WeirNode *x = weir_state_map_exit(s, n);
  if (!x)
    return weir_tier1_reason(reason, "map '%s' (node %u) has no exit", n->label,
                             n->id);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, &err);
  if (!sc)
    return weir_tier1_reason(reason, "%s", err->message);
  out->state = s;
  out->entry = n;
  out->exit = x;
  out->parent = weir_scopes_parent(sc, n->id);
  out->inside = g_array_new(FALSE, FALSE, sizeof(guint));
  out->children = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *k = g_ptr_array_index(s->nodes, i);
    if (k == n || k == x)
      continue;
    guint p = weir_scopes_parent(sc, k->id);
    if (p == n->id)
      g_array_append_val(out->children, k->id);
    for (; p; p = weir_scopes_parent(sc, p))
      if (p == n->id) {
        g_array_append_val(out->inside, k->id);
        break;
      }
  }
  return TRUE;
}

void weir_tier1_map_clear(WeirTier1Map *m) {
  g_clear_pointer(&m->inside, g_array_unref);
  g_clear_pointer(&m->children, g_array_unref);
}

gboolean weir_tier1_site_map(const WeirGraph *g, const WeirSite *site,
                             WeirTier1Map *out, char **reason) {
  memset(out, 0, sizeof *out);
  if (site->n_nodes < 1)
    return weir_tier1_reason(reason, "the site names no map entry");
  return weir_tier1_map_init(g, site->state, site->nodes[0], out, reason);
}

WeirNode *weir_tier1_map_nested_entry(const WeirTier1Map *m) {
  for (guint i = 0; i < m->inside->len; i++) {
    WeirNode *n = weir_state_node(m->state, g_array_index(m->inside, guint, i));
    if (n->kind == WEIR_NODE_MAP_ENTRY)
      return n;
  }
  return NULL;
}

WeirNode *weir_tier1_perfect_inner(const WeirTier1Map *m, char **reason) {
  g_autofree char *name = weir_tier1_map_name(m->entry);
  WeirNode *inner = NULL, *inner_exit = NULL;
  for (guint i = 0; i < m->children->len; i++) {
    WeirNode *n =
        weir_state_node(m->state, g_array_index(m->children, guint, i));
    if (n->kind == WEIR_NODE_MAP_ENTRY && !inner)
      inner = n;
    else if (n->kind != WEIR_NODE_MAP_EXIT) {
      weir_tier1_reason(reason,
                        "%s is not perfectly nested: node %u (%s '%s') sits "
                        "beside the inner map",
                        name, n->id, weir_node_kind_name(n->kind), n->label);
      return NULL;
    }
  }
  if (!inner) {
    weir_tier1_reason(reason, "%s contains no map", name);
    return NULL;
  }
  inner_exit = weir_state_map_exit(m->state, inner);
  if (m->children->len != 2 || !inner_exit) {
    weir_tier1_reason(
        reason, "%s is not perfectly nested: it holds more than one map", name);
    return NULL;
  }
  for (guint i = 0; i < m->state->edges->len; i++) {
    const WeirMemlet *e = g_ptr_array_index(m->state->edges, i);
    if ((e->src == m->entry->id && e->dst != inner->id) ||
        (e->dst == m->exit->id && e->src != inner_exit->id)) {
      weir_tier1_reason(reason,
                        "%s is not perfectly nested: memlet %u bypasses the "
                        "inner map",
                        name, e->id);
      return NULL;
    }
  }
  return inner;
}

static void add_site(GArray *sites, guint state, guint n, const guint *nodes) {
  WeirSite site = {0};
  site.state = state;
  site.n_nodes = n;
  for (guint i = 0; i < n; i++)
    site.nodes[i] = nodes[i];
  g_array_append_val(sites, site);
}

void weir_tier1_match_maps(const WeirGraph *g, GArray *sites,
                           WeirTier1MapFilter accept) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_MAP_ENTRY && n->map && accept(g, s, n))
        add_site(sites, s->id, 1, &n->id);
    }
  }
}

void weir_tier1_match_nested_pairs(const WeirGraph *g, GArray *sites) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_MAP_ENTRY)
        continue;
      g_auto(WeirTier1Map) m = {0};
      if (!weir_tier1_map_init(g, s->id, n->id, &m, NULL))
        continue;
      WeirNode *inner = weir_tier1_perfect_inner(&m, NULL);
      if (inner) {
        guint ids[2] = {n->id, inner->id};
        add_site(sites, s->id, 2, ids);
      }
    }
  }
}

GPtrArray *weir_tier1_edges_out(const WeirState *s, guint node,
                                const char *conn, gboolean with_empty) {
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->src == node && (!conn || g_strcmp0(m->src_conn, conn) == 0) &&
        (with_empty || m->data))
      g_ptr_array_add(out, m);
  }
  return out;
}

GPtrArray *weir_tier1_edges_in(const WeirState *s, guint node, const char *conn,
                               gboolean with_empty) {
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->dst == node && (!conn || g_strcmp0(m->dst_conn, conn) == 0) &&
        (with_empty || m->data))
      g_ptr_array_add(out, m);
  }
  return out;
}

/* --------------------------------------------------------- map iteration */

gint weir_tier1_param_index(const WeirMap *map, const char *name) {
  for (guint i = 0; i < map->params->len; i++)
    if (strcmp(g_ptr_array_index(map->params, i), name) == 0)
      return (gint)i;
  return -1;
}

static const WeirRange *range_at(const WeirMap *map, guint i) {
  return &g_array_index(map->ranges, WeirRange, i);
}

WeirExpr *weir_tier1_map_iterations(const WeirMap *map) {
  WeirExpr *it = weir_expr_const(1);
  for (guint i = 0; i < map->ranges->len; i++) {
    g_autoptr(WeirExpr) size = weir_range_size(range_at(map, i));
    WeirExpr *next = weir_expr_mul(it, size);
    weir_expr_unref(it);
    it = next;
  }
  return it;
}

gboolean weir_tier1_range_const_size(const WeirMap *map, guint i,
                                     gint64 *size) {
  g_autoptr(WeirExpr) e = weir_range_size(range_at(map, i));
  return weir_expr_is_const(e, size);
}

gboolean weir_tier1_expr_has(const WeirExpr *e, const char *name) {
  switch (weir_expr_kind(e)) {
  case WEIR_EXPR_CONST:
    return FALSE;
  case WEIR_EXPR_SYMBOL:
    return strcmp(weir_expr_symbol_name(e), name) == 0;
  default:
    for (guint i = 0; i < weir_expr_n_operands(e); i++)
      if (weir_tier1_expr_has(weir_expr_operand(e, i), name))
        return TRUE;
    return FALSE;
  }
}

gboolean weir_tier1_expr_has_params(const WeirExpr *e, const WeirMap *map) {
  for (guint i = 0; i < map->params->len; i++)
    if (weir_tier1_expr_has(e, g_ptr_array_index(map->params, i)))
      return TRUE;
  return FALSE;
}

gboolean weir_tier1_range_has_params(const WeirRange *r, const WeirMap *map) {
  return weir_tier1_expr_has_params(r->begin, map) ||
         weir_tier1_expr_has_params(r->end, map) ||
         weir_tier1_expr_has_params(r->step, map);
}

/* Combines the directions of the operands of a sum, min or max. */
static gint combine_directions(const WeirExpr *e, const char *p) {
  gint result = 0;
  for (guint i = 0; i < weir_expr_n_operands(e); i++) {
    gint d = weir_tier1_direction(weir_expr_operand(e, i), p);
    if (d == 2)
      return 2;
    if (d == 0)
      continue;
    if (result == 0)
      result = d;
    else if (result != d)
      return 2;
  }
  return result;
}

gint weir_tier1_direction(const WeirExpr *e, const char *p) {
  if (!weir_tier1_expr_has(e, p))
    return 0;
  switch (weir_expr_kind(e)) {
  case WEIR_EXPR_CONST:
    return 0;
  case WEIR_EXPR_SYMBOL:
    return 1;
  case WEIR_EXPR_ADD:
  case WEIR_EXPR_MIN:
  case WEIR_EXPR_MAX:
    return combine_directions(e, p);
  case WEIR_EXPR_MUL: {
    gint sign = 1, d = 0;
    gboolean seen = FALSE;
    for (guint i = 0; i < weir_expr_n_operands(e); i++) {
      const WeirExpr *o = weir_expr_operand(e, i);
      gint64 c;
      if (weir_tier1_expr_has(o, p)) {
        if (seen)
          return 2; /* p * p, p * (p + 1): not monotone in general */
        seen = TRUE;
        d = weir_tier1_direction(o, p);
        if (d == 2)
          return 2;
      } else if (weir_expr_is_const(o, &c)) {
        if (c == 0)
          return 0;
        sign *= c < 0 ? -1 : 1;
      } else if (weir_expr_kind(o) != WEIR_EXPR_SYMBOL) {
        return 2; /* a factor of unknown sign */
      }
    }
    return d * sign;
  }
  case WEIR_EXPR_FLOORDIV: {
    const WeirExpr *b = weir_expr_operand(e, 1);
    gint64 c;
    if (weir_tier1_expr_has(b, p))
      return 2;
    if ((weir_expr_is_const(b, &c) && c > 0) ||
        weir_expr_kind(b) == WEIR_EXPR_SYMBOL)
      return weir_tier1_direction(weir_expr_operand(e, 0), p);
    return 2;
  }
  case WEIR_EXPR_MOD:
    return 2;
  }
  return 2;
}

WeirExpr *weir_tier1_extreme(const WeirExpr *e, const WeirMap *map,
                             gboolean want_max) {
  WeirExpr *cur = weir_expr_ref((WeirExpr *)e);
  for (guint i = 0; i < map->params->len; i++) {
    const char *p = g_ptr_array_index(map->params, i);
    gint d = weir_tier1_direction(cur, p);
    if (d == 0)
      continue;
    if (d == 2) {
      weir_expr_unref(cur);
      return NULL;
    }
    const WeirRange *r = range_at(map, i);
    g_autoptr(WeirExpr) value =
        (d > 0) == want_max ? weir_range_last(r) : weir_expr_ref(r->begin);
    if (!value) {
      weir_expr_unref(cur);
      return NULL;
    }
    WeirExpr *next = weir_expr_substitute_one(cur, p, value);
    weir_expr_unref(cur);
    cur = next;
  }
  return cur;
}

static WeirSubset *subset_new(guint rank) {
  WeirSubset *s = g_new0(WeirSubset, 1);
  s->rank = rank;
  s->dims = g_new0(WeirRange, rank ? rank : 1);
  return s;
}

WeirSubset *weir_tier1_footprint(const WeirSubset *inner, const WeirMap *map,
                                 const WeirSubset *fallback) {
  g_autoptr(WeirSubset) out = subset_new(inner->rank);
  for (guint d = 0; d < inner->rank; d++) {
    const WeirRange *r = &inner->dims[d];
    if (!weir_tier1_range_has_params(r, map)) {
      weir_range_copy(r, &out->dims[d]);
      continue;
    }
    WeirExpr *lo = weir_tier1_extreme(r->begin, map, FALSE);
    WeirExpr *hi = weir_tier1_extreme(r->end, map, TRUE);
    if (lo && hi && !weir_tier1_expr_has_params(r->step, map)) {
      out->dims[d].begin = lo;
      out->dims[d].end = hi;
      out->dims[d].step = weir_expr_const(1);
      continue;
    }
    g_clear_pointer(&lo, weir_expr_unref);
    g_clear_pointer(&hi, weir_expr_unref);
    if (!fallback || fallback->rank != inner->rank)
      return NULL;
    weir_range_copy(&fallback->dims[d], &out->dims[d]);
  }
  return g_steal_pointer(&out);
}

/* The union of two boxes of the same rank (step 1 where they differ). */
static WeirSubset *box_union(const WeirSubset *a, const WeirSubset *b) {
  WeirSubset *out = subset_new(a->rank);
  for (guint d = 0; d < a->rank; d++) {
    const WeirRange *x = &a->dims[d], *y = &b->dims[d];
    if (weir_expr_equal(x->begin, y->begin) &&
        weir_expr_equal(x->end, y->end) && weir_expr_equal(x->step, y->step)) {
      weir_range_copy(x, &out->dims[d]);
      continue;
    }
    out->dims[d].begin = weir_expr_min(x->begin, y->begin);
    out->dims[d].end = weir_expr_max(x->end, y->end);
    out->dims[d].step = weir_expr_const(1);
  }
  return out;
}

/* Affine decomposition with only the parameters flagged in `unknown` (NULL:
 * all) treated as unknowns; the others count as plain symbols. */
static gboolean affine_masked(const WeirExpr *e, const WeirMap *map,
                              const gboolean *unknown, gint64 *coef,
                              WeirExpr **rest) {
  guint n = map->params->len;
  gboolean has = FALSE;
  for (guint i = 0; i < n && !has; i++)
    has = (!unknown || unknown[i]) &&
          weir_tier1_expr_has(e, g_ptr_array_index(map->params, i));
  if (!has) {
    *rest = weir_expr_ref((WeirExpr *)e);
    return TRUE;
  }
  switch (weir_expr_kind(e)) {
  case WEIR_EXPR_SYMBOL: {
    gint i = weir_tier1_param_index(map, weir_expr_symbol_name(e));
    g_assert(i >= 0);
    coef[i] += 1;
    *rest = weir_expr_const(0);
    return TRUE;
  }
  case WEIR_EXPR_ADD: {
    WeirExpr *sum = weir_expr_const(0);
    for (guint k = 0; k < weir_expr_n_operands(e); k++) {
      WeirExpr *r = NULL;
      if (!affine_masked(weir_expr_operand(e, k), map, unknown, coef, &r)) {
        weir_expr_unref(sum);
        return FALSE;
      }
      WeirExpr *next = weir_expr_add(sum, r);
      weir_expr_unref(sum);
      weir_expr_unref(r);
      sum = next;
    }
    *rest = sum;
    return TRUE;
  }
  case WEIR_EXPR_MUL: {
    /* c * p (one unknown parameter times a constant) */
    gint64 c = 1;
    const WeirExpr *var = NULL;
    for (guint k = 0; k < weir_expr_n_operands(e); k++) {
      const WeirExpr *o = weir_expr_operand(e, k);
      gint64 v;
      if (weir_expr_is_const(o, &v))
        c *= v;
      else if (!var && weir_expr_kind(o) == WEIR_EXPR_SYMBOL)
        var = o;
      else
        return FALSE;
    }
    if (!var)
      return FALSE;
    gint i = weir_tier1_param_index(map, weir_expr_symbol_name(var));
    if (i < 0 || (unknown && !unknown[i]))
      return FALSE;
    coef[i] += c;
    *rest = weir_expr_const(0);
    return TRUE;
  }
  default:
    return FALSE;
  }
}

gboolean weir_tier1_affine(const WeirExpr *e, const WeirMap *map, gint64 *coef,
                           WeirExpr **rest) {
  memset(coef, 0, sizeof(gint64) * map->params->len);
  return affine_masked(e, map, NULL, coef, rest);
}

/* ----------------------------------------------------------- independence */

/* A constant W with end - begin <= W for the range (using one operand of a
 * min() end). */
static gboolean width_bound(const WeirRange *r, gint64 *w) {
  g_autoptr(WeirExpr) diff = weir_expr_sub(r->end, r->begin);
  if (weir_expr_is_const(diff, w))
    return TRUE;
  if (weir_expr_kind(r->end) != WEIR_EXPR_MIN)
    return FALSE;
  gboolean found = FALSE;
  for (guint i = 0; i < weir_expr_n_operands(r->end); i++) {
    g_autoptr(WeirExpr) d =
        weir_expr_sub(weir_expr_operand(r->end, i), r->begin);
    gint64 v;
    if (weir_expr_is_const(d, &v) && (!found || v < *w)) {
      *w = v;
      found = TRUE;
    }
  }
  return found;
}

typedef struct {
  guint param;
  gint64 weight; /* |coefficient| * step */
} Term;

static int cmp_term(const void *a, const void *b) {
  const Term *x = a, *y = b;
  if (x->weight != y->weight)
    return x->weight < y->weight ? -1 : 1;
  return x->param < y->param ? -1 : x->param > y->param;
}

/* Tries to decide the undecided parameters of dimension r of a box. */
static gboolean separate_dim(const WeirMap *map, const WeirRange *r,
                             gboolean *undecided) {
  guint n = map->params->len;
  g_autofree gint64 *coef = g_new0(gint64, n);
  g_autoptr(WeirExpr) rest = NULL;
  if (!affine_masked(r->begin, map, undecided, coef, &rest))
    return FALSE;
  gint64 w;
  if (!width_bound(r, &w))
    return FALSE;
  g_autofree Term *terms = g_new0(Term, n);
  guint nt = 0;
  for (guint i = 0; i < n; i++) {
    if (!undecided[i] || coef[i] == 0)
      continue;
    gint64 step;
    if (!weir_expr_is_const(range_at(map, i)->step, &step) || step <= 0)
      return FALSE;
    terms[nt].param = i;
    terms[nt].weight = (coef[i] < 0 ? -coef[i] : coef[i]) * step;
    nt++;
  }
  if (nt == 0)
    return FALSE;
  qsort(terms, nt, sizeof(Term), cmp_term);
  gint64 span = w;
  for (guint k = 0; k < nt; k++) {
    if (terms[k].weight < span)
      return FALSE;
    if (k + 1 < nt) {
      gint64 size;
      if (!weir_tier1_range_const_size(map, terms[k].param, &size))
        return FALSE;
      span += terms[k].weight * (size - 1);
    }
  }
  for (guint k = 0; k < nt; k++)
    undecided[terms[k].param] = FALSE;
  return TRUE;
}

/* Whether the boxes `box` of two iterations that differ in some varying
 * parameter are disjoint.  On FALSE, *culprit names a parameter that could
 * not be separated. */
static gboolean box_separated(const WeirMap *map, const WeirSubset *box,
                              const gboolean *vary, const char **culprit) {
  guint n = map->params->len;
  g_autofree gboolean *undecided = g_new0(gboolean, n);
  for (guint i = 0; i < n; i++) {
    gint64 size;
    undecided[i] = (!vary || vary[i]) &&
                   !(weir_tier1_range_const_size(map, i, &size) && size <= 1);
  }
  gboolean progress = TRUE;
  while (progress) {
    progress = FALSE;
    for (guint d = 0; d < box->rank; d++)
      if (separate_dim(map, &box->dims[d], undecided))
        progress = TRUE;
  }
  for (guint i = 0; i < n; i++)
    if (undecided[i]) {
      *culprit = g_ptr_array_index(map->params, i);
      return FALSE;
    }
  return TRUE;
}

gboolean weir_tier1_independent(const WeirTier1Map *m, const gboolean *vary,
                                gboolean allow_wcr, char **reason) {
  const WeirMap *map = m->entry->map;
  g_autofree char *name = weir_tier1_map_name(m->entry);
  for (guint i = 0; i < m->inside->len; i++) {
    const WeirNode *n =
        weir_state_node(m->state, g_array_index(m->inside, guint, i));
    if (n->kind != WEIR_NODE_TASKLET && n->kind != WEIR_NODE_MAP_ENTRY &&
        n->kind != WEIR_NODE_MAP_EXIT)
      return weir_tier1_reason(
          reason,
          "%s contains node %u (%s '%s'); only tasklets and maps inside a "
          "map are analysed for dependences",
          name, n->id, weir_node_kind_name(n->kind), n->label);
  }
  g_autoptr(GPtrArray) reads =
      weir_tier1_edges_out(m->state, m->entry->id, NULL, FALSE);
  g_autoptr(GPtrArray) writes =
      weir_tier1_edges_in(m->state, m->exit->id, NULL, FALSE);
  for (guint i = 0; i < writes->len; i++) {
    const WeirMemlet *w = g_ptr_array_index(writes, i);
    g_autofree char *ws = weir_subset_to_string(w->subset);
    if (w->dynamic)
      return weir_tier1_reason(reason,
                               "%s writes '%s' through a dynamic memlet "
                               "(memlet %u): the elements are data-dependent",
                               name, w->data, w->id);
    const char *culprit = NULL;
    if ((w->wcr == WEIR_WCR_NONE || !allow_wcr) &&
        !box_separated(map, w->subset, vary, &culprit)) {
      if (w->wcr == WEIR_WCR_NONE)
        return weir_tier1_reason(
            reason,
            "in %s, iterations that differ in '%s' may write the same "
            "element of '%s' (subset '%s', memlet %u)",
            name, culprit, w->data, ws, w->id);
      return weir_tier1_reason(
          reason,
          "in %s, WCR '%s' on '%s' (subset '%s', memlet %u) accumulates into "
          "the same element for different values of '%s'",
          name, weir_wcr_name(w->wcr), w->data, ws, w->id, culprit);
    }
    for (guint k = 0; k < writes->len; k++) {
      const WeirMemlet *w2 = g_ptr_array_index(writes, k);
      if (k == i || strcmp(w2->data, w->data) != 0)
        continue;
      if (w->wcr != WEIR_WCR_NONE && w->wcr == w2->wcr && allow_wcr)
        continue;
      if (w->wcr == w2->wcr && weir_subset_equal(w->subset, w2->subset))
        continue;
      return weir_tier1_reason(reason,
                               "%s writes '%s' through memlets %u and %u with "
                               "different subsets or WCR",
                               name, w->data, MIN(w->id, w2->id),
                               MAX(w->id, w2->id));
    }
    for (guint k = 0; k < reads->len; k++) {
      const WeirMemlet *r = g_ptr_array_index(reads, k);
      if (strcmp(r->data, w->data) != 0)
        continue;
      g_autofree char *rs = weir_subset_to_string(r->subset);
      if (w->wcr != WEIR_WCR_NONE)
        return weir_tier1_reason(reason,
                                 "%s reads '%s' (memlet %u), which it "
                                 "accumulates into with WCR '%s'",
                                 name, w->data, r->id, weir_wcr_name(w->wcr));
      if (r->dynamic || !weir_subset_equal(r->subset, w->subset))
        return weir_tier1_reason(
            reason,
            "%s reads '%s' at '%s' (memlet %u) and writes it at '%s' "
            "(memlet %u): one iteration may read what another writes",
            name, w->data, rs, r->id, ws, w->id);
    }
  }
  return TRUE;
}

/* -------------------------------------------------------------- rewriting */

/* Sets subset, volume and dynamic of middle memlet m from the memlets
 * `inner` on the other side of map `map`. */
static void update_middle(WeirMemlet *m, GPtrArray *inner, const WeirMap *map,
                          const WeirSubset *fallback) {
  g_autoptr(WeirSubset) fp = NULL;
  g_autoptr(WeirExpr) iters = weir_tier1_map_iterations(map);
  g_autoptr(WeirExpr) volume = weir_expr_const(0);
  gboolean dynamic = FALSE, any = FALSE;
  for (guint i = 0; i < inner->len; i++) {
    const WeirMemlet *e = g_ptr_array_index(inner, i);
    if (!e->data || strcmp(e->data, m->data) != 0)
      continue;
    any = TRUE;
    WeirSubset *one = weir_tier1_footprint(e->subset, map, fallback);
    if (!one)
      one = weir_subset_copy(fallback ? fallback : m->subset);
    if (fp) {
      WeirSubset *u = box_union(fp, one);
      weir_subset_free(fp);
      weir_subset_free(one);
      fp = u;
    } else {
      fp = one;
    }
    g_autoptr(WeirExpr) v = weir_tier1_extreme(e->volume, map, TRUE);
    if (!v)
      v = weir_expr_ref(e->volume);
    g_autoptr(WeirExpr) vi = weir_expr_mul(v, iters);
    WeirExpr *next = weir_expr_add(volume, vi);
    weir_expr_unref(volume);
    volume = next;
    dynamic = dynamic || e->dynamic;
  }
  if (!any)
    return;
  weir_memlet_set_subset(m, fp);
  weir_memlet_set_volume(m, volume);
  m->dynamic = dynamic;
}

/* The subset of the memlet on the far side of a map connector: for
 * connector OUT_x (IN_x) of node, the memlet on IN_x (OUT_x). */
static const WeirSubset *outer_subset(const WeirState *s, guint node,
                                      const char *conn, gboolean entry) {
  if (!conn)
    return NULL;
  const char *prefix = entry ? "OUT_" : "IN_";
  if (!g_str_has_prefix(conn, prefix))
    return NULL;
  g_autofree char *partner =
      g_strconcat(entry ? "IN_" : "OUT_", conn + strlen(prefix), NULL);
  g_autoptr(GPtrArray) edges =
      entry ? weir_tier1_edges_in(s, node, partner, FALSE)
            : weir_tier1_edges_out(s, node, partner, FALSE);
  return edges->len ? ((WeirMemlet *)g_ptr_array_index(edges, 0))->subset
                    : NULL;
}

/* The connector of the same container on the other side of a map node:
 * IN_x <-> OUT_x. (transfer full) */
static char *partner_conn(const char *conn) {
  if (g_str_has_prefix(conn, "IN_"))
    return g_strconcat("OUT_", conn + 3, NULL);
  if (g_str_has_prefix(conn, "OUT_"))
    return g_strconcat("IN_", conn + 4, NULL);
  return NULL;
}

void weir_tier1_refresh_middle(WeirGraph *g, WeirState *s, WeirNode *outer,
                               WeirNode *inner) {
  (void)g;
  WeirNode *outer_exit = weir_state_map_exit(s, outer);
  WeirNode *inner_exit = weir_state_map_exit(s, inner);
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (!m->data || !m->dst_conn || !m->src_conn)
      continue;
    if (m->src == outer->id && m->dst == inner->id) {
      g_autofree char *conn = partner_conn(m->dst_conn);
      g_autoptr(GPtrArray) in = weir_tier1_edges_out(s, inner->id, conn, FALSE);
      update_middle(m, in, inner->map,
                    outer_subset(s, outer->id, m->src_conn, TRUE));
    } else if (inner_exit && outer_exit && m->src == inner_exit->id &&
               m->dst == outer_exit->id) {
      g_autofree char *conn = partner_conn(m->src_conn);
      g_autoptr(GPtrArray) in =
          weir_tier1_edges_in(s, inner_exit->id, conn, FALSE);
      update_middle(m, in, inner->map,
                    outer_subset(s, outer_exit->id, m->dst_conn, FALSE));
    }
  }
}

WeirNode *weir_tier1_wrap(WeirGraph *g, WeirState *s, WeirNode *entry,
                          const char *label, guint n, const char *const *params,
                          const WeirRange *ranges, WeirSchedule schedule,
                          GError **error) {
  WeirNode *exit = weir_state_map_exit(s, entry);
  g_return_val_if_fail(exit != NULL && n >= 1, NULL);
  g_autoptr(GPtrArray) ptext = g_ptr_array_new();
  g_autoptr(GPtrArray) rtext = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < n; i++) {
    g_ptr_array_add(ptext, (gpointer)params[i]);
    g_ptr_array_add(rtext, weir_range_to_string(&ranges[i]));
  }
  g_ptr_array_add(ptext, NULL);
  g_ptr_array_add(rtext, NULL);
  WeirNode *oexit = NULL;
  WeirNode *outer = weir_state_add_map(
      g, s, label, (const char *const *)ptext->pdata,
      (const char *const *)rtext->pdata, schedule, &oexit, error);
  if (!outer)
    return NULL;

  /* Entry side. */
  gboolean linked = FALSE;
  g_autoptr(GPtrArray) ins = weir_tier1_edges_in(s, entry->id, NULL, TRUE);
  for (guint i = 0; i < ins->len; i++) {
    WeirMemlet *m = g_ptr_array_index(ins, i);
    if (!m->data || !m->dst_conn) {
      weir_memlet_set_dst(s, m, outer->id, m->dst_conn);
      if (m->dst_conn)
        weir_node_add_in_conn(outer, m->dst_conn);
      continue;
    }
    g_autofree char *conn = g_strdup(m->dst_conn);
    g_autofree char *oconn = partner_conn(conn);
    g_autofree char *sub = weir_subset_to_string(m->subset);
    weir_node_add_in_conn(outer, conn);
    if (oconn)
      weir_node_add_out_conn(outer, oconn);
    weir_memlet_set_dst(s, m, outer->id, conn);
    if (!weir_state_add_memlet(g, s, outer->id, oconn, entry->id, conn, m->data,
                               sub, error))
      return NULL;
    linked = TRUE;
  }
  if (!linked && !weir_state_add_memlet(g, s, outer->id, NULL, entry->id, NULL,
                                        NULL, NULL, error))
    return NULL;

  /* Exit side: one middle memlet per connector. */
  linked = FALSE;
  g_autoptr(GPtrArray) outs = weir_tier1_edges_out(s, exit->id, NULL, TRUE);
  for (guint i = 0; i < outs->len; i++) {
    WeirMemlet *m = g_ptr_array_index(outs, i);
    if (!m->data || !m->src_conn) {
      weir_memlet_set_src(s, m, oexit->id, m->src_conn);
      if (m->src_conn)
        weir_node_add_out_conn(oexit, m->src_conn);
      continue;
    }
    g_autofree char *conn = g_strdup(m->src_conn);
    g_autofree char *iconn = partner_conn(conn);
    gboolean fresh = !weir_node_has_out_conn(oexit, conn);
    weir_node_add_out_conn(oexit, conn);
    if (iconn)
      weir_node_add_in_conn(oexit, iconn);
    weir_memlet_set_src(s, m, oexit->id, conn);
    if (fresh) {
      g_autofree char *sub = weir_subset_to_string(m->subset);
      WeirMemlet *mid = weir_state_add_memlet(g, s, exit->id, conn, oexit->id,
                                              iconn, m->data, sub, error);
      if (!mid)
        return NULL;
      mid->wcr = m->wcr;
      linked = TRUE;
    }
  }
  if (!linked && !weir_state_add_memlet(g, s, exit->id, NULL, oexit->id, NULL,
                                        NULL, NULL, error))
    return NULL;
  weir_tier1_refresh_middle(g, s, outer, entry);
  return outer;
}

static gboolean name_taken(const WeirGraph *g, const char *name,
                           GPtrArray *extra) {
  if (weir_graph_has_symbol(g, name) || weir_graph_container(g, name))
    return TRUE;
  for (guint i = 0; extra && i < extra->len; i++)
    if (strcmp(g_ptr_array_index(extra, i), name) == 0)
      return TRUE;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_MAP_ENTRY && n->map &&
          weir_tier1_param_index(n->map, name) >= 0)
        return TRUE;
    }
  }
  return FALSE;
}

char *weir_tier1_fresh_param(const WeirGraph *g, const WeirState *s,
                             const char *base, GPtrArray *extra) {
  (void)s;
  char *name = g_strdup(base);
  for (guint k = 1; name_taken(g, name, extra); k++) {
    g_free(name);
    name = g_strdup_printf("%s_%u", base, k);
  }
  return name;
}

/* -------------------------------------------------------------- tasklets */
