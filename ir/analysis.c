/* analysis.c — data movement, FLOPs, operational intensity and peak
 * transient memory of a program (ir/weir-analysis.h).
 *
 * Structure of this file:
 *  1. WeirQuantity helpers and an accumulator for sums that may contain
 *     unknown parts (an unknown part makes the whole sum unknown).
 *  2. The library cost-model registry (op name -> function, under a mutex).
 *  3. Scopes: for every map entry of a state, the enclosing map parameters
 *     with their bounds and the number of executions of its body.  A
 *     per-execution figure that depends on map parameters is bounded by
 *     eliminate_params() (innermost parameter first) before it is multiplied
 *     by the executions: that is how triangular maps get an upper bound.
 *  4. Per state: memlet costs, node costs (tasklet FLOPs by type-checking a
 *     copy of the body, library nodes through the registry, nested programs
 *     through a recursive analysis), map scopes, the state totals.
 *  5. Liveness of transients over a linear order of all nodes (states in
 *     reverse post-order from the start, nodes in topological order), and
 *     the peak of the sizes of the simultaneously live transients.
 *  6. weir_analysis_compute(), the lookups and weir_analysis_free().
 *
 * The public WeirAnalysis is the first member of a private AnalysisImpl
 * that also holds the id indexes used by the lookups.
 */
#include "weir-analysis.h"
#include "weir-ops.h"

#include "weir-graph.h"

#include <string.h>

/* ------------------------------------------------------------ quantities */

/* Sets q from expr (transfer full, may be NULL for unknown). */
static void quantity_set(WeirQuantity *q, WeirExpr *expr,
                         GHashTable *bindings) {
  q->expr = expr;
  q->known = FALSE;
  q->value = 0;
  /* A figure that overflows 64 bits is unknown, not a wrapped value. */
  if (expr != NULL && weir_expr_eval_checked(expr, bindings, &q->value, NULL))
    q->known = TRUE;
  else
    q->value = 0;
}

static void quantity_clear(WeirQuantity *q) {
  g_clear_pointer(&q->expr, weir_expr_unref);
  q->known = FALSE;
  q->value = 0;
}

/* A sum under construction: once a part is unknown, the sum is unknown. */
typedef struct {
  WeirExpr *sum; /* owned */
  gboolean unknown;
} Acc;

static void acc_init(Acc *acc) {
  acc->sum = weir_expr_const(0);
  acc->unknown = FALSE;
}

/* Adds term (borrowed; NULL: unknown). */
static void acc_add(Acc *acc, WeirExpr *term) {
  if (term == NULL) {
    acc->unknown = TRUE;
    return;
  }
  WeirExpr *s = weir_expr_add(acc->sum, term);
  weir_expr_unref(acc->sum);
  acc->sum = s;
}

/* Returns the sum (transfer full), or NULL when a part was unknown. */
static WeirExpr *acc_finish(Acc *acc) {
  WeirExpr *s = acc->sum;
  acc->sum = NULL;
  if (acc->unknown) {
    weir_expr_unref(s);
    return NULL;
  }
  return s;
}

static WeirExpr *ref_or_null(WeirExpr *e) {
  return e != NULL ? weir_expr_ref(e) : NULL;
}

/* ------------------------------------------------------ library registry */

typedef struct {
  WeirLibraryFlopsFunc func;
} LibraryEntry;

static GMutex library_lock;
static GHashTable *library_flops; /* char* op -> LibraryEntry*, both owned */

void weir_analysis_register_library_flops(const char *op,
                                          WeirLibraryFlopsFunc f) {
  g_return_if_fail(op != NULL);
  g_mutex_lock(&library_lock);
  if (library_flops == NULL)
    library_flops =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  if (f == NULL) {
    g_hash_table_remove(library_flops, op);
  } else {
    LibraryEntry *e = g_new0(LibraryEntry, 1);
    e->func = f;
    g_hash_table_replace(library_flops, g_strdup(op), e);
  }
  g_mutex_unlock(&library_lock);
}

static WeirLibraryFlopsFunc library_lookup(const char *op) {
  WeirLibraryFlopsFunc f = NULL;
  if (op == NULL)
    return NULL;
  g_mutex_lock(&library_lock);
  if (library_flops != NULL) {
    LibraryEntry *e = g_hash_table_lookup(library_flops, op);
    if (e != NULL)
      f = e->func;
  }
  g_mutex_unlock(&library_lock);
  if (f == NULL) {
    /* Operators of the registry (ir/ops/) know their own FLOP count. */
    const WeirOpInfo *info = weir_op_lookup(op);
    if (info != NULL)
      f = info->flops;
  }
  return f;
}

/* ---------------------------------------------------------------- scopes */

/* A map parameter, the first and last values it takes, as expressions
 * over the parameters of enclosing maps and program symbols, and the
 * factor it contributes to the executions of the scopes inside its map. */
typedef struct {
  char *name;
  WeirExpr *lo, *hi;
  const WeirRange *range; /* borrowed from the map */
  WeirExpr *factor;       /* owned */
  gboolean tiled;         /* a tile parameter whose points a clipped inner
                             range counts (factor 1) */
} ParamBound;

static void param_bound_free(gpointer p) {
  ParamBound *b = p;
  g_free(b->name);
  weir_expr_unref(b->lo);
  weir_expr_unref(b->hi);
  weir_expr_unref(b->factor);
  g_free(b);
}

static ParamBound *param_bound_copy(const ParamBound *b) {
  ParamBound *c = g_new0(ParamBound, 1);
  c->name = g_strdup(b->name);
  c->lo = weir_expr_ref(b->lo);
  c->hi = weir_expr_ref(b->hi);
  c->range = b->range;
  c->factor = weir_expr_ref(b->factor);
  c->tiled = b->tiled;
  return c;
}

/* The inside of a map scope (or the top level of a state, entry 0). */
typedef struct {
  guint entry;
  GPtrArray *params;    /* ParamBound*, outermost first (owned) */
  WeirExpr *executions; /* upper bound of the executions of the body */
} ScopeInfo;

static void scope_info_free(gpointer p) {
  ScopeInfo *si = p;
  g_ptr_array_unref(si->params);
  weir_expr_unref(si->executions);
  g_free(si);
}

static gboolean expr_mentions(const WeirExpr *e, const char *name) {
  g_autoptr(GHashTable) set =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  weir_expr_collect_symbols(e, set);
  return g_hash_table_contains(set, name);
}

/* Removes the map parameters in params from e (borrowed), innermost first,
 * replacing each by the end of its range where e is largest: when e grows
 * by a constant step with the parameter, the direction is known; otherwise
 * the max of both ends is taken.  Exact for expressions affine in each
 * parameter; an upper bound in general.  (transfer full) */
static WeirExpr *eliminate_params(WeirExpr *e, GPtrArray *params) {
  WeirExpr *cur = weir_expr_ref(e);
  for (guint k = params->len; k-- > 0;) {
    const ParamBound *p = g_ptr_array_index(params, k);
    if (!expr_mentions(cur, p->name))
      continue;
    g_autoptr(WeirExpr) sym = weir_expr_symbol(p->name);
    g_autoptr(WeirExpr) next = weir_expr_add_const(sym, 1);
    g_autoptr(WeirExpr) shifted = weir_expr_substitute_one(cur, p->name, next);
    g_autoptr(WeirExpr) slope = weir_expr_sub(shifted, cur);
    gint64 d;
    WeirExpr *bounded;
    if (weir_expr_is_const(slope, &d)) {
      bounded = weir_expr_substitute_one(cur, p->name, d >= 0 ? p->hi : p->lo);
    } else {
      g_autoptr(WeirExpr) at_lo = weir_expr_substitute_one(cur, p->name, p->lo);
      g_autoptr(WeirExpr) at_hi = weir_expr_substitute_one(cur, p->name, p->hi);
      bounded = weir_expr_max(at_lo, at_hi);
    }
    weir_expr_unref(cur);
    cur = bounded;
  }
  return cur;
}

/* The tile parameter of a clipped inner range: the parameter P of params
 * (not already tiled) when r is P:min(P + S, E):s with P's range B:E:S
 * and s dividing S (map-tiling's shape, transforms/tier1/map-tiling.c).
 * The inner ranges then cover B:E:s once over all values of P, so the
 * pair takes size(B:E:s) values where bounding r's size by its largest
 * value would count the last, clipped tile as a whole one. */
static ParamBound *tile_of(GPtrArray *params, const WeirRange *r) {
  gint64 s, big;
  if (weir_expr_kind(r->begin) != WEIR_EXPR_SYMBOL ||
      !weir_expr_is_const(r->step, &s) || s <= 0)
    return NULL;
  const char *name = weir_expr_symbol_name(r->begin);
  for (guint i = params->len; i-- > 0;) {
    ParamBound *p = g_ptr_array_index(params, i);
    if (strcmp(p->name, name) != 0)
      continue;
    if (p->tiled || p->range == NULL ||
        !weir_expr_is_const(p->range->step, &big) || big <= 0 || big % s)
      return NULL;
    g_autoptr(WeirExpr) stop = weir_expr_add_const(r->begin, big);
    g_autoptr(WeirExpr) clipped = weir_expr_min(stop, p->range->end);
    return weir_expr_equal(r->end, clipped) ? p : NULL;
  }
  return NULL;
}

/* Everything needed while analysing one state. */
typedef struct {
  const WeirGraph *g;
  const WeirState *s;
  GHashTable *bindings;
  WeirScopes *sc;
  GHashTable *scopes;      /* entry id -> ScopeInfo* (owned) */
  const WeirEdgeIndex *ix; /* the state's memlets by node */
} StateCtx;

static ScopeInfo *scope_info(StateCtx *ctx, guint entry) {
  ScopeInfo *si = g_hash_table_lookup(ctx->scopes, GUINT_TO_POINTER(entry));
  if (si != NULL)
    return si;
  si = g_new0(ScopeInfo, 1);
  si->entry = entry;
  si->params = g_ptr_array_new_with_free_func(param_bound_free);
  const WeirNode *n = entry ? weir_state_node(ctx->s, entry) : NULL;
  if (n == NULL || n->kind != WEIR_NODE_MAP_ENTRY || n->map == NULL) {
    si->executions = weir_expr_const(1);
  } else {
    ScopeInfo *outer = scope_info(ctx, weir_scopes_parent(ctx->sc, entry));
    for (guint i = 0; i < outer->params->len; i++)
      g_ptr_array_add(si->params,
                      param_bound_copy(g_ptr_array_index(outer->params, i)));
    const WeirMap *map = n->map;
    for (guint k = 0; k < map->params->len && k < map->ranges->len; k++) {
      const WeirRange *r = &g_array_index(map->ranges, WeirRange, k);
      g_autoptr(WeirExpr) size = weir_range_size(r);
      ParamBound *b = g_new0(ParamBound, 1);
      ParamBound *tile = tile_of(si->params, r);
      if (tile != NULL) {
        /* the clipped tiles of tile's range cover it once: together the
         * two parameters take as many values as tile's range with r's
         * step */
        WeirRange whole = {.begin = tile->range->begin,
                           .end = tile->range->end,
                           .step = r->step};
        b->factor = weir_range_size(&whole);
        weir_expr_unref(tile->factor);
        tile->factor = weir_expr_const(1);
        tile->tiled = TRUE;
      } else {
        b->factor = eliminate_params(size, si->params);
      }
      /* last value: begin + (size - 1) * step */
      g_autoptr(WeirExpr) sm1 = weir_expr_add_const(size, -1);
      g_autoptr(WeirExpr) span = weir_expr_mul(sm1, r->step);
      b->name = g_strdup(g_ptr_array_index(map->params, k));
      b->lo = weir_expr_ref(r->begin);
      b->hi = weir_expr_add(r->begin, span);
      b->range = r;
      g_ptr_array_add(si->params, b);
    }
    WeirExpr *exec = weir_expr_const(1);
    for (guint i = 0; i < si->params->len; i++) {
      const ParamBound *b = g_ptr_array_index(si->params, i);
      WeirExpr *e2 = weir_expr_mul(exec, b->factor);
      weir_expr_unref(exec);
      exec = e2;
    }
    si->executions = exec;
  }
  g_hash_table_insert(ctx->scopes, GUINT_TO_POINTER(entry), si);
  return si;
}

/* The scope a memlet is in (the rule of weir-analysis.h). */
static guint memlet_scope(StateCtx *ctx, const WeirMemlet *m) {
  const WeirNode *src = weir_state_node(ctx->s, m->src);
  const WeirNode *dst = weir_state_node(ctx->s, m->dst);
  if (dst != NULL && dst->kind == WEIR_NODE_MAP_ENTRY)
    return weir_scopes_parent(ctx->sc, dst->id);
  if (src != NULL && src->kind == WEIR_NODE_MAP_ENTRY)
    return src->id;
  if (src != NULL && src->kind == WEIR_NODE_MAP_EXIT)
    return weir_scopes_parent(ctx->sc, src->entry);
  if (dst != NULL && dst->kind == WEIR_NODE_MAP_EXIT)
    return dst->entry;
  return src != NULL ? weir_scopes_parent(ctx->sc, src->id) : 0;
}

/* per-execution figure (borrowed, NULL: unknown) times the executions of
 * scope si, after bounding the map parameters.  (transfer full) */
static WeirExpr *times_executions(WeirExpr *per_exec, ScopeInfo *si) {
  if (per_exec == NULL)
    return NULL;
  g_autoptr(WeirExpr) bounded = eliminate_params(per_exec, si->params);
  return weir_expr_mul(bounded, si->executions);
}

/* ------------------------------------------------------------ node costs */

/* The memlet attached to connector conn of node id (incoming when in),
 * or NULL. */
static const WeirMemlet *connector_memlet(const WeirState *s, guint id,
                                          const char *conn, gboolean in) {
  return weir_state_connector_memlet(s, id, conn, in, FALSE);
}

gboolean weir_tasklet_connector_info(const WeirGraph *g, const WeirState *s,
                                     const WeirNode *n, const char *conn,
                                     gboolean input, WeirConnectorInfo *info) {
  const WeirMemlet *m =
      weir_state_connector_memlet(s, n->id, conn, input, TRUE);
  if (m == NULL || m->subset == NULL)
    return FALSE;
  const WeirContainer *c = weir_graph_container(g, m->data);
  if (c == NULL)
    return FALSE;
  g_autoptr(WeirExpr) vol = weir_subset_volume(m->subset);
  gint64 v;
  info->name = conn;
  info->dtype = c->dtype;
  info->rank = weir_expr_is_const(vol, &v) && v == 1 ? 0 : c->shape->len;
  return TRUE;
}

/* The connector infos of every input (or output) of tasklet n, appended to
 * out; the name of the first connector without one, or NULL. */
static const char *connector_infos(const WeirGraph *g, const WeirState *s,
                                   const WeirNode *n, gboolean in,
                                   GArray *out) {
  GPtrArray *conns = in ? n->in_conns : n->out_conns;
  for (guint i = 0; i < conns->len; i++) {
    const char *name = g_ptr_array_index(conns, i);
    WeirConnectorInfo info;
    if (!weir_tasklet_connector_info(g, s, n, name, in, &info))
      return name;
    g_array_append_val(out, info);
  }
  return NULL;
}

WeirCode *weir_tasklet_checked_code(const WeirGraph *g, const WeirState *s,
                                    const WeirNode *n, GError **error) {
  if (n->kind != WEIR_NODE_TASKLET || !n->code) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "tasklet '%s' (node %u): the body does not parse", n->label,
                n->id);
    return NULL;
  }
  g_autoptr(GArray) ins = g_array_new(FALSE, FALSE, sizeof(WeirConnectorInfo));
  g_autoptr(GArray) outs = g_array_new(FALSE, FALSE, sizeof(WeirConnectorInfo));
  for (int in = 1; in >= 0; in--) {
    const char *missing = connector_infos(g, s, n, in, in ? ins : outs);
    if (missing) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "tasklet '%s' (node %u): %s connector '%s' has no memlet",
                  n->label, n->id, in ? "input" : "output", missing);
      return NULL;
    }
  }
  g_autoptr(GHashTable) symbols =
      g_hash_table_new(g_str_hash, g_str_equal); /* borrowed keys */
  for (guint i = 0; i < g->symbols->len; i++)
    g_hash_table_add(symbols, g_ptr_array_index(g->symbols, i));
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, error);
  if (!sc)
    return NULL;
  for (guint p = weir_scopes_parent(sc, n->id); p;
       p = weir_scopes_parent(sc, p)) {
    const WeirNode *e = weir_state_node(s, p);
    for (guint i = 0; e && e->map && i < e->map->params->len; i++)
      g_hash_table_add(symbols, g_ptr_array_index(e->map->params, i));
  }
  g_autoptr(WeirCode) code = weir_code_copy(n->code);
  if (!weir_code_check(code, (const WeirConnectorInfo *)ins->data, ins->len,
                       (const WeirConnectorInfo *)outs->data, outs->len,
                       symbols, error)) {
    g_prefix_error(error, "tasklet '%s' (node %u): ", n->label, n->id);
    return NULL;
  }
  return g_steal_pointer(&code);
}

/* FLOPs of one execution of a tasklet's body, or G_MAXUINT64 when the body
 * does not parse or type-check. */
static guint64 tasklet_body_flops(StateCtx *ctx, const WeirNode *n,
                                  ScopeInfo *si) {
  if (n->code == NULL)
    return G_MAXUINT64;
  if (n->code->checked)
    return weir_code_flops(n->code);
  g_autoptr(GArray) ins = g_array_new(FALSE, FALSE, sizeof(WeirConnectorInfo));
  g_autoptr(GArray) outs = g_array_new(FALSE, FALSE, sizeof(WeirConnectorInfo));
  if (connector_infos(ctx->g, ctx->s, n, TRUE, ins) ||
      connector_infos(ctx->g, ctx->s, n, FALSE, outs))
    return G_MAXUINT64;
  g_autoptr(GHashTable) symbols =
      g_hash_table_new(g_str_hash, g_str_equal); /* borrowed keys */
  for (guint i = 0; i < ctx->g->symbols->len; i++)
    g_hash_table_add(symbols, g_ptr_array_index(ctx->g->symbols, i));
  for (guint i = 0; i < si->params->len; i++)
    g_hash_table_add(symbols,
                     ((ParamBound *)g_ptr_array_index(si->params, i))->name);
  g_autoptr(WeirCode) copy = weir_code_copy(n->code);
  if (!weir_code_check(copy, (const WeirConnectorInfo *)ins->data, ins->len,
                       (const WeirConnectorInfo *)outs->data, outs->len,
                       symbols, NULL))
    return G_MAXUINT64;
  return weir_code_flops(copy);
}

static WeirExpr *memlet_volume(StateCtx *ctx, const WeirMemlet *m);

/* FLOPs of one execution of a tasklet: its body plus one per element
 * written through a WCR memlet.  (transfer full; NULL: unknown) */
static WeirExpr *tasklet_flops(StateCtx *ctx, const WeirNode *n,
                               ScopeInfo *si) {
  guint64 body = tasklet_body_flops(ctx, n, si);
  if (body == G_MAXUINT64)
    return NULL;
  WeirExpr *total = weir_expr_const((gint64)body);
  for (guint i = 0; i < ctx->s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(ctx->s->edges, i);
    if (m->src != n->id || m->data == NULL || m->wcr == WEIR_WCR_NONE ||
        m->volume == NULL)
      continue;
    g_autoptr(WeirExpr) vol = memlet_volume(ctx, m);
    WeirExpr *t = weir_expr_add(total, vol);
    weir_expr_unref(total);
    total = t;
  }
  return total;
}

/* FLOPs of a nested node: the nested program's total with its symbols
 * replaced by the outer expressions bound to them.  (transfer full) */
static WeirExpr *nested_flops(const WeirNode *n, GError **error) {
  if (n->nested == NULL)
    return NULL;
  g_autoptr(GError) local = NULL;
  g_autoptr(WeirAnalysis) inner =
      weir_analysis_compute(n->nested, NULL, &local);
  if (inner == NULL) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "nested program '%s' of node %u: %s", n->nested->name, n->id,
                local->message);
    return NULL;
  }
  if (inner->total_flops.expr == NULL)
    return NULL;
  g_autoptr(GHashTable) map = g_hash_table_new(g_str_hash, g_str_equal);
  if (n->symbol_map != NULL) {
    for (guint i = 0; i < n->symbol_map->len; i++) {
      const WeirSymbolBinding *b = g_ptr_array_index(n->symbol_map, i);
      g_hash_table_insert(map, b->name, b->value);
    }
  }
  return weir_expr_substitute(inner->total_flops.expr, map);
}

/* ------------------------------------------------------------- the state */

typedef struct {
  WeirAnalysis pub;         /* first: the public part */
  GHashTable *memlet_index; /* edge id -> WeirMemletCost* */
  GHashTable *node_index;   /* node id -> WeirNodeCost* */
  GHashTable *state_index;  /* state id -> WeirStateCost* */
  gint64 cache_bytes;       /* the traffic model's cache (0: no model) */
} AnalysisImpl;

static void memlet_cost_free(gpointer p) {
  WeirMemletCost *mc = p;
  quantity_clear(&mc->executions);
  quantity_clear(&mc->elements);
  quantity_clear(&mc->bytes);
  quantity_clear(&mc->traffic);
  g_free(mc);
}

static void node_cost_free(gpointer p) {
  WeirNodeCost *nc = p;
  quantity_clear(&nc->bytes_in);
  quantity_clear(&nc->bytes_out);
  quantity_clear(&nc->flops);
  quantity_clear(&nc->traffic);
  quantity_clear(&nc->comm_bytes);
  g_free(nc);
}

static void state_cost_free(gpointer p) {
  WeirStateCost *sc = p;
  quantity_clear(&sc->bytes);
  quantity_clear(&sc->flops);
  quantity_clear(&sc->traffic);
  quantity_clear(&sc->comm_bytes);
  g_free(sc);
}

static gboolean is_access(const WeirState *s, guint id) {
  const WeirNode *n = weir_state_node(s, id);
  return n != NULL && n->kind == WEIR_NODE_ACCESS;
}

/* The volume of one execution of m (transfer full): the stated volume,
 * unless an end of m is a tasklet whose body indexes the connector (reads
 * `x[...]`, assigns `y[...] = `): its element accesses are then the number
 * of those index sites, when fewer (an expansion may name a whole block
 * where one element per execution is read or written). */
static WeirExpr *memlet_volume(StateCtx *ctx, const WeirMemlet *m) {
  for (int end = 0; end < 2; end++) {
    const WeirNode *t = weir_state_node(ctx->s, end ? m->dst : m->src);
    const char *conn = end ? m->dst_conn : m->src_conn;
    if (t == NULL || t->kind != WEIR_NODE_TASKLET || t->code == NULL ||
        conn == NULL)
      continue;
    guint k = weir_code_indexed_accesses(t->code, conn);
    gint64 v;
    if (k > 0 && (m->volume == NULL || !weir_expr_is_const(m->volume, &v) ||
                  v > (gint64)k))
      return weir_expr_const(k);
  }
  return m->volume != NULL ? weir_expr_ref(m->volume) : NULL;
}

/* The elements m moves over all executions (transfer full; NULL: unknown).
 * A memlet into a map entry (out of a map exit) moves at most what the
 * memlets inside the map through the matching OUT_ (IN_) connector move,
 * summed: the smaller of that and its stated volume.  Other memlets: the
 * volume of one execution times the executions of their scope. */
static WeirExpr *memlet_elements(StateCtx *ctx, const WeirMemlet *m) {
  if (m->data == NULL)
    return weir_expr_const(0);
  const WeirNode *src = weir_state_node(ctx->s, m->src);
  const WeirNode *dst = weir_state_node(ctx->s, m->dst);
  guint via = 0;
  gboolean in = FALSE;
  g_autofree char *conn = NULL;
  if (dst != NULL && dst->kind == WEIR_NODE_MAP_ENTRY && m->dst_conn &&
      g_str_has_prefix(m->dst_conn, "IN_")) {
    via = dst->id;
    conn = g_strconcat("OUT_", m->dst_conn + 3, NULL);
  } else if (src != NULL && src->kind == WEIR_NODE_MAP_EXIT && m->src_conn &&
             g_str_has_prefix(m->src_conn, "OUT_")) {
    via = src->id;
    in = TRUE;
    conn = g_strconcat("IN_", m->src_conn + 4, NULL);
  }
  if (via != 0) {
    GPtrArray *edges = weir_edge_index_memlets(ctx->ix, via, in);
    Acc sum;
    acc_init(&sum);
    guint found = 0;
    for (guint i = 0; i < edges->len; i++) {
      const WeirMemlet *inner = g_ptr_array_index(edges, i);
      if (g_strcmp0(in ? inner->dst_conn : inner->src_conn, conn) != 0)
        continue;
      g_autoptr(WeirExpr) e = memlet_elements(ctx, inner);
      acc_add(&sum, e);
      found++;
    }
    g_autoptr(WeirExpr) inside = acc_finish(&sum);
    ScopeInfo *si = scope_info(ctx, memlet_scope(ctx, m));
    g_autoptr(WeirExpr) stated =
        m->volume != NULL ? times_executions(m->volume, si) : NULL;
    if (found == 0 || inside == NULL)
      return g_steal_pointer(&stated);
    if (stated == NULL)
      return g_steal_pointer(&inside);
    /* the smaller of both: inner accesses that reuse an element are one
     * element of the outer memlet (a map reading x[i] twice), an outer
     * volume computed from block memlets overstates what moves */
    gint64 a, b;
    if (weir_expr_equal(stated, inside))
      return g_steal_pointer(&stated);
    if (weir_expr_is_const(stated, &a) && weir_expr_is_const(inside, &b))
      return weir_expr_const(MIN(a, b));
    return weir_expr_min(stated, inside);
  }
  ScopeInfo *si = scope_info(ctx, memlet_scope(ctx, m));
  g_autoptr(WeirExpr) per_exec = memlet_volume(ctx, m);
  return times_executions(per_exec, si);
}

static WeirMemletCost *memlet_cost(StateCtx *ctx, const WeirMemlet *m) {
  WeirMemletCost *mc = g_new0(WeirMemletCost, 1);
  mc->state = ctx->s->id;
  mc->edge = m->id;
  mc->counted = is_access(ctx->s, m->src) || is_access(ctx->s, m->dst);
  ScopeInfo *si = scope_info(ctx, memlet_scope(ctx, m));
  quantity_set(&mc->executions, weir_expr_ref(si->executions), ctx->bindings);
  if (m->data == NULL) {
    quantity_set(&mc->elements, weir_expr_const(0), ctx->bindings);
    quantity_set(&mc->bytes, weir_expr_const(0), ctx->bindings);
    return mc;
  }
  WeirExpr *elements = memlet_elements(ctx, m);
  quantity_set(&mc->elements, elements, ctx->bindings);
  const WeirContainer *c = weir_graph_container(ctx->g, m->data);
  WeirExpr *bytes = NULL;
  if (elements != NULL && c != NULL)
    bytes = weir_expr_mul_const(elements, (gint64)weir_dtype_size(c->dtype));
  quantity_set(&mc->bytes, bytes, ctx->bindings);
  return mc;
}

/* FLOPs of the element-wise epilogue of a library node (attributes
 * "epilogue" and "epilogue_conns", ir/lower/weir-expand.h): its code once per
 * output element.  0 without an epilogue; NULL when the code does not
 * parse or type-check.  (transfer full) */
static WeirExpr *epilogue_flops(const StateCtx *ctx, const WeirNode *n) {
  const WeirAttr *code = weir_node_attr(n, "epilogue");
  const WeirAttr *conns = weir_node_attr(n, "epilogue_conns");
  if (!code)
    return weir_expr_const(0);
  if (code->type != WEIR_ATTR_STRING || !conns ||
      conns->type != WEIR_ATTR_STRINGS || conns->strings->len < 2)
    return NULL;
  const WeirMemlet *y = connector_memlet(ctx->s, n->id, "out0", FALSE);
  const WeirContainer *yc =
      y && y->data ? weir_graph_container(ctx->g, y->data) : NULL;
  if (!yc)
    return NULL;
  g_autoptr(GArray) ins = g_array_new(FALSE, FALSE, sizeof(WeirConnectorInfo));
  WeirConnectorInfo out = {.name = g_ptr_array_index(conns->strings, 0),
                           .dtype = yc->dtype};
  WeirConnectorInfo acc = {.name = g_ptr_array_index(conns->strings, 1),
                           .dtype = yc->dtype};
  g_array_append_val(ins, acc);
  for (guint k = 2; k < conns->strings->len; k++) {
    g_autofree char *conn = g_strdup_printf("epi%u", k - 2);
    const WeirMemlet *m = connector_memlet(ctx->s, n->id, conn, TRUE);
    const WeirContainer *c =
        m && m->data ? weir_graph_container(ctx->g, m->data) : NULL;
    if (!c)
      return NULL;
    WeirConnectorInfo x = {.name = g_ptr_array_index(conns->strings, k),
                           .dtype = c->dtype};
    g_array_append_val(ins, x);
  }
  g_autoptr(WeirCode) parsed = weir_code_parse(code->s, NULL);
  g_autoptr(GHashTable) symbols = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < ctx->g->symbols->len; i++)
    g_hash_table_add(symbols, g_ptr_array_index(ctx->g->symbols, i));
  if (!parsed || !weir_code_check(parsed, (const WeirConnectorInfo *)ins->data,
                                  ins->len, &out, 1, symbols, NULL))
    return NULL;
  g_autoptr(WeirExpr) per = weir_expr_const((gint64)weir_code_flops(parsed));
  g_autoptr(WeirExpr) vol = weir_container_volume(yc);
  return weir_expr_mul(per, vol);
}

/* FLOPs of a node that computes (tasklet, library, nested), over all its
 * executions; NULL when unknown.  Other kinds are not asked. */
static WeirExpr *compute_node_flops(StateCtx *ctx, const WeirNode *n,
                                    GError **error) {
  ScopeInfo *si = scope_info(ctx, weir_scopes_parent(ctx->sc, n->id));
  g_autoptr(WeirExpr) per_exec = NULL;
  switch (n->kind) {
  case WEIR_NODE_TASKLET:
    per_exec = tasklet_flops(ctx, n, si);
    break;
  case WEIR_NODE_LIBRARY: {
    WeirLibraryFlopsFunc f = library_lookup(n->op);
    g_autoptr(WeirExpr) op_flops = f != NULL ? f(ctx->g, ctx->s, n) : NULL;
    g_autoptr(WeirExpr) epi = epilogue_flops(ctx, n);
    gint64 zero = -1;
    if (op_flops != NULL && epi != NULL && weir_expr_is_const(epi, &zero) &&
        zero == 0)
      per_exec = g_steal_pointer(&op_flops);
    else if (op_flops != NULL && epi != NULL)
      per_exec = weir_expr_add(op_flops, epi);
    break;
  }
  case WEIR_NODE_NESTED: {
    GError *local = NULL;
    per_exec = nested_flops(n, &local);
    if (local != NULL) {
      g_propagate_error(error, local);
      return NULL;
    }
    break;
  }
  default:
    return weir_expr_const(0);
  }
  return times_executions(per_exec, si);
}

static gboolean computes(const WeirNode *n) {
  return n->kind == WEIR_NODE_TASKLET || n->kind == WEIR_NODE_LIBRARY ||
         n->kind == WEIR_NODE_NESTED;
}

/* Frees an Acc of a table (its sum, unless taken by acc_finish). */
static void acc_free(gpointer p) {
  Acc *acc = p;
  g_clear_pointer(&acc->sum, weir_expr_unref);
  g_free(acc);
}

/* ------------------------------------------------------ modeled traffic */

/* Bytes of the distinct elements m names in one execution of scope si:
 * its subset's volume, map parameters bounded (transfer full; NULL:
 * unknown). */
static WeirExpr *footprint_bytes(StateCtx *ctx, const WeirMemlet *m,
                                 ScopeInfo *si) {
  if (m->data == NULL || m->subset == NULL)
    return weir_expr_const(0);
  const WeirContainer *c = weir_graph_container(ctx->g, m->data);
  if (c == NULL)
    return NULL;
  g_autoptr(WeirExpr) vol = weir_subset_volume(m->subset);
  g_autoptr(WeirExpr) bounded = eliminate_params(vol, si->params);
  return weir_expr_mul_const(bounded, (gint64)weir_dtype_size(c->dtype));
}

static const WeirNode *map_exit_of(const WeirState *s, guint entry) {
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *x = g_ptr_array_index(s->nodes, i);
    if (x->kind == WEIR_NODE_MAP_EXIT && x->entry == entry)
      return x;
  }
  return NULL;
}

/* The cache line the level model counts partial rows in (bytes). */
#define TRAFFIC_LINE 64

/* A table name -> gint64* with the values of bindings (may be NULL) and
 * room for more. (transfer full) */
static GHashTable *values_new(GHashTable *bindings) {
  GHashTable *t =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  if (bindings) {
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, bindings);
    while (g_hash_table_iter_next(&it, &k, &v))
      g_hash_table_insert(t, g_strdup(k), g_memdup2(v, sizeof(gint64)));
  }
  return t;
}

static void values_set(GHashTable *t, const char *name, gint64 v) {
  g_hash_table_insert(t, g_strdup(name), g_memdup2(&v, sizeof v));
}

/* The bytes of the distinct elements memlet m (a memlet of the body of a
 * map) touches while the parameters in `varying` (ParamBound*) take all
 * their values, from lo to hi, the other symbols at the values of `fixed`
 * (name -> gint64*): per dimension, from the lowest
 * begin to the highest end over the corners of the varying box (exact for
 * affine indices), clipped to the container; the last dimension's bytes
 * rounded up to whole lines.  FALSE when a figure has no value. */
static gboolean level_bytes(StateCtx *ctx, const WeirMemlet *m,
                            GPtrArray *varying, GHashTable *fixed,
                            gint64 *out) {
  const WeirContainer *c = weir_graph_container(ctx->g, m->data);
  if (!c || !m->subset)
    return FALSE;
  gint64 esize = (gint64)weir_dtype_size(c->dtype);
  gint64 elements = 1, last = 1;
  for (guint d = 0; d < m->subset->rank; d++) {
    const WeirRange *r = &m->subset->dims[d];
    /* the varying parameters this dimension mentions */
    g_autoptr(GPtrArray) used = g_ptr_array_new();
    for (guint k = 0; k < varying->len; k++) {
      const ParamBound *p = g_ptr_array_index(varying, k);
      if (expr_mentions(r->begin, p->name) || expr_mentions(r->end, p->name))
        g_ptr_array_add(used, (gpointer)p);
    }
    if (used->len > 8)
      return FALSE;
    gint64 lo = G_MAXINT64, hi = G_MININT64;
    for (guint corner = 0; corner < (1u << used->len); corner++) {
      g_autoptr(GHashTable) at = values_new(fixed);
      for (guint k = 0; k < used->len; k++) {
        const ParamBound *p = g_ptr_array_index(used, k);
        gint64 v;
        if (!weir_expr_eval_checked((corner >> k) & 1 ? p->hi : p->lo, fixed,
                                    &v, NULL))
          return FALSE;
        values_set(at, p->name, v);
      }
      gint64 b, e;
      if (!weir_expr_eval_checked(r->begin, at, &b, NULL) ||
          !weir_expr_eval_checked(r->end, at, &e, NULL))
        return FALSE;
      lo = MIN(lo, b);
      hi = MAX(hi, e);
    }
    gint64 extent = MAX(hi - lo, 0), dim;
    if (d < c->shape->len &&
        weir_expr_eval_checked(g_ptr_array_index(c->shape, d), fixed, &dim,
                               NULL))
      extent = MIN(extent, dim);
    if (d + 1 == m->subset->rank)
      last = extent;
    else
      elements *= extent;
  }
  gint64 row = last * esize;
  row = (row + TRAFFIC_LINE - 1) / TRAFFIC_LINE * TRAFFIC_LINE;
  *out = m->subset->rank ? elements * row : TRAFFIC_LINE;
  return TRUE;
}

/* The level model of a map whose footprint does not fit (docs/analysis.md):
 * with its parameters p1..pn (outermost first, the order of the generated
 * loops), F(L) is the footprint of the body's memlets (out of the entry,
 * into the exit) over the iterations of p(L+1)..pn, p1..pL fixed (by
 * level_bytes, each container once: its largest memlet).  For the smallest
 * L >= 1 with F(L) within the cache, the loop over pL keeps what its
 * iterations share in the cache, so each iteration of p1..p(L-1) moves
 * F(L-1).  *out: that times those iterations and the executions of the
 * scope around the map.  FALSE when no level fits or a figure has no
 * value (the caller falls back to the body). */
static gboolean level_traffic(StateCtx *ctx, const WeirNode *entry,
                              const WeirNode *exit, gint64 cache, gint64 *out) {
  ScopeInfo *outer = scope_info(ctx, weir_scopes_parent(ctx->sc, entry->id));
  ScopeInfo *inner = scope_info(ctx, entry->id);
  guint first = outer->params->len, n = inner->params->len;
  if (n <= first || !exit)
    return FALSE;
  gint64 outer_exec;
  if (!weir_expr_eval_checked(outer->executions, ctx->bindings, &outer_exec,
                              NULL))
    return FALSE;
  g_autoptr(GPtrArray) body = g_ptr_array_new();
  GPtrArray *a = weir_edge_index_memlets(ctx->ix, entry->id, FALSE);
  GPtrArray *b = weir_edge_index_memlets(ctx->ix, exit->id, TRUE);
  for (guint i = 0; i < a->len + b->len; i++) {
    const WeirMemlet *m =
        g_ptr_array_index(i < a->len ? a : b, i < a->len ? i : i - a->len);
    if (m->data)
      g_ptr_array_add(body, (gpointer)m);
  }
  if (body->len == 0)
    return FALSE;
  /* the values of the fixed parameters: their lowest (outer ones too;
   * the footprint of an affine index does not depend on them) */
  g_autoptr(GHashTable) fixed = values_new(ctx->bindings);
  for (guint k = 0; k < first; k++) {
    const ParamBound *p = g_ptr_array_index(inner->params, k);
    gint64 v;
    if (!weir_expr_eval_checked(p->lo, fixed, &v, NULL))
      return FALSE;
    values_set(fixed, p->name, v);
  }
  gint64 prev = -1, iters = 1, prev_iters = 1;
  for (guint L = 0; L + first <= n; L++) {
    /* F(L): parameters first..first+L-1 fixed at their lowest values */
    if (L > 0) {
      const ParamBound *p = g_ptr_array_index(inner->params, first + L - 1);
      gint64 v, count;
      if (!weir_expr_eval_checked(p->lo, fixed, &v, NULL) ||
          !weir_expr_eval_checked(p->factor, fixed, &count, NULL))
        return FALSE;
      values_set(fixed, p->name, v);
      prev_iters = iters;
      iters *= MAX(count, 1);
    }
    g_autoptr(GPtrArray) varying = g_ptr_array_new();
    for (guint k = first + L; k < n; k++)
      g_ptr_array_add(varying, g_ptr_array_index(inner->params, k));
    g_autoptr(GHashTable) per = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GArray) sizes = g_array_new(FALSE, TRUE, sizeof(gint64));
    gint64 fp = 0;
    for (guint i = 0; i < body->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(body, i);
      gint64 bytes;
      if (!level_bytes(ctx, m, varying, fixed, &bytes))
        return FALSE;
      gpointer slot = g_hash_table_lookup(per, m->data);
      if (!slot) {
        g_array_append_val(sizes, bytes);
        g_hash_table_insert(per, m->data, GUINT_TO_POINTER(sizes->len));
      } else {
        gint64 *s = &g_array_index(sizes, gint64, GPOINTER_TO_UINT(slot) - 1);
        *s = MAX(*s, bytes);
      }
    }
    for (guint i = 0; i < sizes->len; i++)
      fp += g_array_index(sizes, gint64, i);
    if (fp <= cache) {
      if (L == 0)
        return FALSE; /* fits whole: the footprint rule applies */
      *out = prev * prev_iters * outer_exec;
      return TRUE;
    }
    prev = fp;
  }
  return FALSE;
}

/* Modeled memory traffic of map scope `entry` over all its executions
 * (transfer full; NULL: unknown).  The footprint of one execution of the
 * scope around it is what its boundary memlets name (their subsets, each
 * element once).  When that fits in the cache, each execution moves its
 * footprint once: reuse inside is served by the cache.  When it does not
 * (or is unknown), the memlets of its body move what they name (logical
 * volume), except the inner maps, which are modeled the same way; never
 * more than the map's boundary memlets name. */
static WeirExpr *scope_traffic(StateCtx *ctx, const WeirNode *entry,
                               GHashTable *by_edge, gint64 cache) {
  ScopeInfo *outer = scope_info(ctx, weir_scopes_parent(ctx->sc, entry->id));
  const WeirNode *exit = map_exit_of(ctx->s, entry->id);
  Acc fp;
  acc_init(&fp);
  GPtrArray *ins = weir_edge_index_memlets(ctx->ix, entry->id, TRUE);
  for (guint i = 0; i < ins->len; i++) {
    g_autoptr(WeirExpr) b =
        footprint_bytes(ctx, g_ptr_array_index(ins, i), outer);
    acc_add(&fp, b);
  }
  if (exit != NULL) {
    GPtrArray *outs = weir_edge_index_memlets(ctx->ix, exit->id, FALSE);
    for (guint i = 0; i < outs->len; i++) {
      g_autoptr(WeirExpr) b =
          footprint_bytes(ctx, g_ptr_array_index(outs, i), outer);
      acc_add(&fp, b);
    }
  }
  g_autoptr(WeirExpr) footprint = acc_finish(&fp);
  gint64 v;
  if (footprint != NULL && cache > 0 &&
      weir_expr_eval_checked(footprint, ctx->bindings, &v, NULL) && v <= cache)
    return weir_expr_mul(footprint, outer->executions);
  gint64 level;
  if (cache > 0 && level_traffic(ctx, entry, exit, cache, &level))
    return weir_expr_const(level);
  Acc body;
  acc_init(&body);
  GPtrArray *first = weir_edge_index_memlets(ctx->ix, entry->id, FALSE);
  for (guint i = 0; i < first->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(first, i);
    const WeirNode *d = weir_state_node(ctx->s, m->dst);
    if (d != NULL && d->kind == WEIR_NODE_MAP_ENTRY)
      continue; /* that map's own footprint */
    WeirMemletCost *mc = g_hash_table_lookup(by_edge, GUINT_TO_POINTER(m->id));
    acc_add(&body, mc ? mc->bytes.expr : NULL);
  }
  if (exit != NULL) {
    GPtrArray *last = weir_edge_index_memlets(ctx->ix, exit->id, TRUE);
    for (guint i = 0; i < last->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(last, i);
      const WeirNode *src = weir_state_node(ctx->s, m->src);
      if (src != NULL && src->kind == WEIR_NODE_MAP_EXIT)
        continue;
      WeirMemletCost *mc =
          g_hash_table_lookup(by_edge, GUINT_TO_POINTER(m->id));
      acc_add(&body, mc ? mc->bytes.expr : NULL);
    }
  }
  for (guint i = 0; i < ctx->s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(ctx->s->nodes, i);
    if (n->kind != WEIR_NODE_MAP_ENTRY ||
        weir_scopes_parent(ctx->sc, n->id) != entry->id)
      continue;
    g_autoptr(WeirExpr) t = scope_traffic(ctx, n, by_edge, cache);
    acc_add(&body, t);
  }
  g_autoptr(WeirExpr) inside = acc_finish(&body);
  /* never more than the map's own memlets name (logical volume) */
  Acc named;
  acc_init(&named);
  for (guint i = 0; i < ins->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(ins, i);
    WeirMemletCost *mc = g_hash_table_lookup(by_edge, GUINT_TO_POINTER(m->id));
    acc_add(&named, mc ? mc->bytes.expr : NULL);
  }
  if (exit != NULL) {
    GPtrArray *outs = weir_edge_index_memlets(ctx->ix, exit->id, FALSE);
    for (guint i = 0; i < outs->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(outs, i);
      WeirMemletCost *mc =
          g_hash_table_lookup(by_edge, GUINT_TO_POINTER(m->id));
      acc_add(&named, mc ? mc->bytes.expr : NULL);
    }
  }
  g_autoptr(WeirExpr) logical = acc_finish(&named);
  gint64 x, y;
  if (inside == NULL || logical == NULL)
    return inside != NULL ? g_steal_pointer(&inside)
                          : g_steal_pointer(&logical);
  if (weir_expr_eval_checked(inside, ctx->bindings, &x, NULL) &&
      weir_expr_eval_checked(logical, ctx->bindings, &y, NULL))
    return x <= y ? g_steal_pointer(&inside) : g_steal_pointer(&logical);
  return weir_expr_min(inside, logical);
}

/* Splits the traffic t of top-level map `entry` over its boundary memlets
 * (WeirMemletCost.traffic): each its footprint when t is the sum of the
 * footprints (the map fits), else t in proportion to their bytes.  Left
 * unknown when a figure has no value. */
static void split_map_traffic(StateCtx *ctx, const WeirNode *entry,
                              GHashTable *by_edge, WeirExpr *t) {
  gint64 total;
  if (t == NULL || !weir_expr_eval_checked(t, ctx->bindings, &total, NULL))
    return;
  ScopeInfo *outer = scope_info(ctx, weir_scopes_parent(ctx->sc, entry->id));
  const WeirNode *exit = map_exit_of(ctx->s, entry->id);
  g_autoptr(GPtrArray) ms = g_ptr_array_new();
  GPtrArray *ins = weir_edge_index_memlets(ctx->ix, entry->id, TRUE);
  for (guint i = 0; i < ins->len; i++)
    g_ptr_array_add(ms, g_ptr_array_index(ins, i));
  if (exit != NULL) {
    GPtrArray *outs = weir_edge_index_memlets(ctx->ix, exit->id, FALSE);
    for (guint i = 0; i < outs->len; i++)
      g_ptr_array_add(ms, g_ptr_array_index(outs, i));
  }
  g_autofree gint64 *fp = g_new0(gint64, ms->len + 1);
  g_autofree gint64 *lv = g_new0(gint64, ms->len + 1);
  gint64 fp_sum = 0, lv_sum = 0;
  for (guint i = 0; i < ms->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(ms, i);
    WeirMemletCost *mc = g_hash_table_lookup(by_edge, GUINT_TO_POINTER(m->id));
    g_autoptr(WeirExpr) f = footprint_bytes(ctx, m, outer);
    if (mc == NULL || !mc->bytes.known || f == NULL ||
        !weir_expr_eval_checked(f, ctx->bindings, &fp[i], NULL))
      return;
    lv[i] = mc->bytes.value;
    fp_sum += fp[i];
    lv_sum += lv[i];
  }
  gboolean fits = fp_sum == total;
  gint64 *w = fits ? fp : lv, wsum = fits ? fp_sum : lv_sum, given = 0;
  for (guint i = 0; i < ms->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(ms, i);
    WeirMemletCost *mc = g_hash_table_lookup(by_edge, GUINT_TO_POINTER(m->id));
    gint64 share = fits        ? w[i]
                   : wsum <= 0 ? 0
                   : i + 1 == ms->len
                       ? total - given
                       : (gint64)((double)total * (double)w[i] / (double)wsum);
    given += share;
    quantity_set(&mc->traffic, weir_expr_const(share), ctx->bindings);
  }
}

/* ------------------------------------------- reuse between operators */

/* Containers touched by the top-level operations of a state, as an LRU
 * stack by whole containers.  Each touch gets the next time stamp; a
 * container's stack distance is the sum of the sizes of the containers
 * whose last touch is at or after its own.  A Fenwick tree indexed by time
 * stamp holds each container's size at its last touch, so a lookup and a
 * touch cost O(log touches) and a state's analysis stays n log n in its
 * operations (a list scanned per touch made `weir info` quadratic on long
 * chains: docs/performance.md, "Import, validation and analysis of large
 * models").  Sizes are stored clamped to cache + 1: a container larger
 * than the cache ends every hit behind it, clamped or not. */
typedef struct {
  GHashTable *last; /* const char* (borrowed from the graph) -> RecencyEntry */
  gint64 *tree;     /* Fenwick tree over time stamps 1..cap */
  guint cap;
  guint now;    /* time stamps used so far */
  gint64 cache; /* the cache's bytes, at most RECENCY_MAX_CACHE */
} Recency;

typedef struct {
  guint stamp;
  gint64 size; /* clamped */
} RecencyEntry;

/* Caches above 1 TiB are taken as 1 TiB, so that the clamped sizes of up
 * to 2^22 touches sum without overflow. */
#define RECENCY_MAX_CACHE ((gint64)1 << 40)

static void recency_init(Recency *r, gint64 cache) {
  r->last = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
  r->cap = 64;
  r->tree = g_new0(gint64, r->cap + 1);
  r->now = 0;
  r->cache = MIN(cache, RECENCY_MAX_CACHE);
}

static void recency_clear(Recency *r) {
  g_hash_table_unref(r->last);
  g_free(r->tree);
}

static void fenwick_add(gint64 *tree, guint cap, guint i, gint64 v) {
  for (; i <= cap; i += i & -i)
    tree[i] += v;
}

static gint64 fenwick_prefix(const gint64 *tree, guint i) {
  gint64 sum = 0;
  for (; i > 0; i -= i & -i)
    sum += tree[i];
  return sum;
}

/* Whether container `data` is still in the cache: it was touched before,
 * and it and the distinct containers touched since fit in the cache
 * together (its LRU stack distance, by whole containers). */
static gboolean recency_hit(const Recency *r, const char *data) {
  const RecencyEntry *e = g_hash_table_lookup(r->last, data);
  if (!e)
    return FALSE;
  gint64 since =
      fenwick_prefix(r->tree, r->now) - fenwick_prefix(r->tree, e->stamp - 1);
  return since <= r->cache;
}

/* Makes container `data` the most recent (adds it when new). */
static void recency_touch(Recency *r, const WeirGraph *g, const char *data,
                          GHashTable *bindings) {
  if (r->now == r->cap) { /* double the tree, rebuilt from the entries */
    guint cap = r->cap * 2;
    gint64 *tree = g_new0(gint64, cap + 1);
    GHashTableIter it;
    gpointer value;
    g_hash_table_iter_init(&it, r->last);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
      const RecencyEntry *e = value;
      fenwick_add(tree, cap, e->stamp, e->size);
    }
    g_free(r->tree);
    r->tree = tree;
    r->cap = cap;
  }
  RecencyEntry *e = g_hash_table_lookup(r->last, data);
  if (e) {
    fenwick_add(r->tree, r->cap, e->stamp, -e->size);
  } else {
    const WeirContainer *c = weir_graph_container(g, data);
    g_autoptr(WeirExpr) bytes = c ? weir_container_bytes(c) : NULL;
    gint64 size = G_MAXINT64; /* unknown: larger than any cache */
    if (bytes && !weir_expr_eval_checked(bytes, bindings, &size, NULL))
      size = G_MAXINT64;
    e = g_new(RecencyEntry, 1);
    e->size = MIN(size, r->cache + 1);
    g_hash_table_insert(r->last, (gpointer)data, e);
  }
  e->stamp = ++r->now;
  fenwick_add(r->tree, r->cap, e->stamp, e->size);
}

/* The memlets of top-level operation `id` of the state that touch a
 * container: into and out of a library, tasklet or nested node, into a
 * map entry and out of its exit, into an access node from another (a
 * copy).  reads receives the reading ones, writes the writing ones. */
static void operation_memlets(StateCtx *ctx, const WeirNode *n,
                              GPtrArray *reads, GPtrArray *writes) {
  if (n->kind == WEIR_NODE_ACCESS) {
    GPtrArray *ins = weir_edge_index_memlets(ctx->ix, n->id, TRUE);
    for (guint i = 0; i < ins->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(ins, i);
      if (m->data && is_access(ctx->s, m->src))
        g_ptr_array_add(writes, (gpointer)m); /* the copy's memlet */
    }
    return;
  }
  GPtrArray *ins = weir_edge_index_memlets(ctx->ix, n->id, TRUE);
  for (guint i = 0; i < ins->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(ins, i);
    if (m->data && is_access(ctx->s, m->src))
      g_ptr_array_add(reads, (gpointer)m);
  }
  const WeirNode *from =
      n->kind == WEIR_NODE_MAP_ENTRY ? map_exit_of(ctx->s, n->id) : n;
  if (!from)
    return;
  GPtrArray *outs = weir_edge_index_memlets(ctx->ix, from->id, FALSE);
  for (guint i = 0; i < outs->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(outs, i);
    if (m->data && is_access(ctx->s, m->dst))
      g_ptr_array_add(writes, (gpointer)m);
  }
}

/* Reuse between the operations at the top level of a state, in the
 * topological order of its scopes: a read of a container that an earlier
 * operation touched, with no more than the cache's bytes of distinct
 * containers touched in between, comes from the cache and moves nothing
 * (its memlet's traffic becomes 0).  Writes always move their traffic.
 * Needs every memlet traffic of the top level known; returns FALSE (and
 * changes nothing) otherwise.  op_traffic receives each operation's
 * traffic afterwards (node id -> gint64*), *total the state's. */
static gboolean apply_reuse(StateCtx *ctx, GHashTable *by_edge, gint64 cache,
                            GHashTable *op_traffic, gint64 *total) {
  const WeirState *s = ctx->s;
  /* every counted top-level memlet must have a known traffic */
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    WeirMemletCost *mc = g_hash_table_lookup(by_edge, GUINT_TO_POINTER(m->id));
    if (mc->counted && memlet_scope(ctx, m) == 0 && m->data &&
        !mc->traffic.known)
      return FALSE;
  }
  Recency r;
  recency_init(&r, cache);
  *total = 0;
  for (guint k = 0; k < ctx->sc->order->len; k++) {
    guint id = g_array_index(ctx->sc->order, guint, k);
    const WeirNode *n = weir_state_node(s, id);
    if (!n || weir_scopes_parent(ctx->sc, id) != 0 ||
        n->kind == WEIR_NODE_MAP_EXIT)
      continue;
    g_autoptr(GPtrArray) reads = g_ptr_array_new();
    g_autoptr(GPtrArray) writes = g_ptr_array_new();
    operation_memlets(ctx, n, reads, writes);
    if (n->kind == WEIR_NODE_ACCESS && writes->len == 0)
      continue;
    gint64 op = 0;
    for (guint i = 0; i < reads->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(reads, i);
      WeirMemletCost *mc =
          g_hash_table_lookup(by_edge, GUINT_TO_POINTER(m->id));
      if (recency_hit(&r, m->data)) {
        quantity_clear(&mc->traffic);
        quantity_set(&mc->traffic, weir_expr_const(0), ctx->bindings);
      }
      op += mc->traffic.value;
    }
    for (guint i = 0; i < writes->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(writes, i);
      WeirMemletCost *mc =
          g_hash_table_lookup(by_edge, GUINT_TO_POINTER(m->id));
      op += mc->traffic.value;
    }
    for (guint i = 0; i < reads->len; i++)
      recency_touch(&r, ctx->g,
                    ((const WeirMemlet *)g_ptr_array_index(reads, i))->data,
                    ctx->bindings);
    for (guint i = 0; i < writes->len; i++)
      recency_touch(&r, ctx->g,
                    ((const WeirMemlet *)g_ptr_array_index(writes, i))->data,
                    ctx->bindings);
    if (n->kind != WEIR_NODE_ACCESS) {
      gint64 *v = g_new(gint64, 1);
      *v = op;
      g_hash_table_insert(op_traffic, GUINT_TO_POINTER(id), v);
    }
    *total += op;
  }
  recency_clear(&r);
  return TRUE;
}

static gboolean is_map_end(const WeirState *s, guint id) {
  const WeirNode *n = weir_state_node(s, id);
  return n != NULL &&
         (n->kind == WEIR_NODE_MAP_ENTRY || n->kind == WEIR_NODE_MAP_EXIT);
}

/* Adds the costs of state s to a; FALSE on broken scopes or a broken
 * nested program. */
static gboolean analyse_state(AnalysisImpl *impl, const WeirGraph *g,
                              const WeirState *s, GHashTable *bindings,
                              GError **error) {
  WeirAnalysis *a = &impl->pub;
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, error);
  if (sc == NULL)
    return FALSE;
  /* memlets by node, also for the library FLOP functions */
  g_autoptr(WeirEdgeIndex) ix = weir_edge_index_begin(s);
  g_autoptr(GHashTable) scopes = g_hash_table_new_full(
      g_direct_hash, g_direct_equal, NULL, scope_info_free);
  StateCtx ctx = {.g = g,
                  .s = s,
                  .bindings = bindings,
                  .sc = sc,
                  .scopes = scopes,
                  .ix = ix};

  /* memlets */
  g_autoptr(GHashTable) by_edge =
      g_hash_table_new(g_direct_hash, g_direct_equal);
  Acc state_bytes;
  acc_init(&state_bytes);
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    WeirMemletCost *mc = memlet_cost(&ctx, m);
    g_ptr_array_add(a->memlets, mc);
    g_hash_table_insert(impl->memlet_index, GUINT_TO_POINTER(m->id), mc);
    g_hash_table_insert(by_edge, GUINT_TO_POINTER(m->id), mc);
    if (mc->counted)
      acc_add(&state_bytes, mc->bytes.expr);
  }

  /* modeled traffic: the top-level maps by their model, the other
   * memlets of the top level that touch a container by what they name */
  g_autoptr(GHashTable) map_traffic = g_hash_table_new_full(
      g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)weir_expr_unref);
  Acc state_traffic;
  acc_init(&state_traffic);
  if (impl->cache_bytes > 0) {
    for (guint i = 0; i < s->nodes->len; i++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, i);
      if (n->kind != WEIR_NODE_MAP_ENTRY || weir_scopes_parent(sc, n->id) != 0)
        continue;
      WeirExpr *t = scope_traffic(&ctx, n, by_edge, impl->cache_bytes);
      split_map_traffic(&ctx, n, by_edge, t);
      acc_add(&state_traffic, t);
      if (t != NULL)
        g_hash_table_insert(map_traffic, GUINT_TO_POINTER(n->id), t);
    }
    for (guint i = 0; i < s->edges->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, i);
      WeirMemletCost *mc =
          g_hash_table_lookup(by_edge, GUINT_TO_POINTER(m->id));
      if (!mc->counted || memlet_scope(&ctx, m) != 0 || is_map_end(s, m->src) ||
          is_map_end(s, m->dst))
        continue;
      acc_add(&state_traffic, mc->bytes.expr);
      quantity_set(&mc->traffic, ref_or_null(mc->bytes.expr), bindings);
    }
  }
  /* reuse between the operations (when every figure has a value) */
  g_autoptr(GHashTable) op_traffic =
      g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  gint64 reused_total = 0;
  gboolean reused =
      impl->cache_bytes > 0 &&
      apply_reuse(&ctx, by_edge, impl->cache_bytes, op_traffic, &reused_total);
  if (reused) {
    g_clear_pointer(&state_traffic.sum, weir_expr_unref);
    acc_init(&state_traffic);
    g_autoptr(WeirExpr) t = weir_expr_const(reused_total);
    acc_add(&state_traffic, t);
  }

  /* FLOPs of the computing nodes, by node id (NULL values: unknown) */
  g_autoptr(GHashTable) flops = g_hash_table_new_full(
      g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)weir_expr_unref);
  g_autoptr(GHashTable) unknown =
      g_hash_table_new(g_direct_hash, g_direct_equal);
  Acc state_flops;
  acc_init(&state_flops);
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    a->node_counts[n->kind]++;
    if (!computes(n))
      continue;
    GError *local = NULL;
    WeirExpr *f = compute_node_flops(&ctx, n, &local);
    if (local != NULL) {
      g_propagate_error(error, local);
      g_clear_pointer(&state_bytes.sum, weir_expr_unref);
      g_clear_pointer(&state_flops.sum, weir_expr_unref);
      g_clear_pointer(&state_traffic.sum, weir_expr_unref);
      return FALSE;
    }
    if (f != NULL)
      g_hash_table_insert(flops, GUINT_TO_POINTER(n->id), f);
    else
      g_hash_table_add(unknown, GUINT_TO_POINTER(n->id));
    acc_add(&state_flops, f);
  }

  /* FLOPs inside each map entry: every computing node's FLOPs go to each
   * entry enclosing it, in node id order (entry id -> Acc*) */
  g_autoptr(GHashTable) in_scope =
      g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, acc_free);
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *inner = g_ptr_array_index(s->nodes, i);
    if (!computes(inner))
      continue;
    WeirExpr *f = g_hash_table_lookup(flops, GUINT_TO_POINTER(inner->id));
    for (guint p = weir_scopes_parent(sc, inner->id); p != 0;
         p = weir_scopes_parent(sc, p)) {
      Acc *scope = g_hash_table_lookup(in_scope, GUINT_TO_POINTER(p));
      if (scope == NULL) {
        scope = g_new(Acc, 1);
        acc_init(scope);
        g_hash_table_insert(in_scope, GUINT_TO_POINTER(p), scope);
      }
      acc_add(scope, f);
    }
  }

  /* node costs */
  Acc state_comm;
  acc_init(&state_comm);
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    WeirNodeCost *nc = g_new0(WeirNodeCost, 1);
    nc->state = s->id;
    nc->node = n->id;
    Acc in, out;
    acc_init(&in);
    acc_init(&out);
    for (guint side = 0; side < 2; side++) {
      GPtrArray *edges = weir_edge_index_memlets(ix, n->id, side == 0);
      for (guint j = 0; j < edges->len; j++) {
        const WeirMemlet *m = g_ptr_array_index(edges, j);
        WeirMemletCost *mc =
            g_hash_table_lookup(by_edge, GUINT_TO_POINTER(m->id));
        acc_add(side == 0 ? &in : &out, mc->bytes.expr);
      }
    }
    quantity_set(&nc->bytes_in, acc_finish(&in), bindings);
    quantity_set(&nc->bytes_out, acc_finish(&out), bindings);
    WeirExpr *f;
    if (computes(n)) {
      f = ref_or_null(g_hash_table_lookup(flops, GUINT_TO_POINTER(n->id)));
    } else if (n->kind == WEIR_NODE_MAP_ENTRY) {
      Acc *scope = g_hash_table_lookup(in_scope, GUINT_TO_POINTER(n->id));
      f = scope != NULL ? acc_finish(scope) : weir_expr_const(0);
    } else {
      f = weir_expr_const(0);
    }
    quantity_set(&nc->flops, f, bindings);
    {
      const gint64 *op =
          g_hash_table_lookup(op_traffic, GUINT_TO_POINTER(n->id));
      WeirExpr *t = g_hash_table_lookup(map_traffic, GUINT_TO_POINTER(n->id));
      quantity_set(&nc->traffic, op ? weir_expr_const(*op) : ref_or_null(t),
                   bindings);
    }
    {
      const WeirOpInfo *info =
          n->kind == WEIR_NODE_LIBRARY && n->op ? weir_op_lookup(n->op) : NULL;
      WeirExpr *c = info && info->comm_bytes ? info->comm_bytes(g, s, n)
                                             : weir_expr_const(0);
      acc_add(&state_comm, c);
      quantity_set(&nc->comm_bytes, c, bindings);
    }
    g_ptr_array_add(a->nodes, nc);
    g_hash_table_insert(impl->node_index, GUINT_TO_POINTER(n->id), nc);
  }

  WeirStateCost *stc = g_new0(WeirStateCost, 1);
  stc->state = s->id;
  quantity_set(&stc->bytes, acc_finish(&state_bytes), bindings);
  quantity_set(&stc->flops, acc_finish(&state_flops), bindings);
  quantity_set(&stc->comm_bytes, acc_finish(&state_comm), bindings);
  if (impl->cache_bytes > 0)
    quantity_set(&stc->traffic, acc_finish(&state_traffic), bindings);
  else
    g_clear_pointer(&state_traffic.sum, weir_expr_unref);
  g_ptr_array_add(a->states, stc);
  g_hash_table_insert(impl->state_index, GUINT_TO_POINTER(s->id), stc);
  return TRUE;
}

/* -------------------------------------------------------------- liveness */

/* A transient's accesses and live interval over the global positions. */
typedef struct {
  const WeirContainer *c;
  gboolean accessed;
  guint first, last;      /* positions of the first and last access */
  guint lo_rank, hi_rank; /* ranks of the first and last accessing state */
  gboolean first_is_read; /* first access only reads it */
  guint begin, end;       /* live interval [begin, end] */
  WeirExpr *bytes;        /* owned */
  gboolean bytes_known;
  gint64 bytes_value;
} Live;

/* Records that l's container is touched at pos (in state rank r). */
static void live_touch(Live *l, guint pos, guint r, gboolean writes) {
  if (!l->accessed || pos < l->first) {
    l->accessed = TRUE;
    l->first = pos;
    l->lo_rank = r;
    l->first_is_read = !writes;
  } else if (pos == l->first && writes) {
    l->first_is_read = FALSE;
  }
  if (pos >= l->last) {
    l->last = pos;
    l->hi_rank = r;
  }
}

static int cmp_name(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int cmp_uint(const void *a, const void *b) {
  guint x = *(const guint *)a, y = *(const guint *)b;
  return x < y ? -1 : x > y;
}

/* max(exprs[lo], ..., exprs[hi - 1]) (hi > lo), halving the range so that
 * each expression takes part in O(log n) maxima; the result does not
 * depend on the grouping (maxima are flattened, sorted and deduplicated).
 * (transfer full) */
static WeirExpr *max_of(GPtrArray *exprs, guint lo, guint hi) {
  if (hi - lo == 1)
    return weir_expr_ref(g_ptr_array_index(exprs, lo));
  guint mid = lo + (hi - lo) / 2;
  g_autoptr(WeirExpr) a = max_of(exprs, lo, mid);
  g_autoptr(WeirExpr) b = max_of(exprs, mid, hi);
  return weir_expr_max(a, b);
}

static void compute_peak(AnalysisImpl *impl, const WeirGraph *g,
                         GHashTable *bindings, GError **error) {
  WeirAnalysis *a = &impl->pub;
  guint ns = g->states->len;
  g_autoptr(WeirStateOrder) so = weir_state_order_new(g);
  const guint *by_rank = so->by_rank;

  /* offset[r] = first global position of the state of rank r */
  g_autofree guint *offset = g_new0(guint, ns + 1);
  g_autoptr(GPtrArray) orders =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_scopes_free);
  g_ptr_array_set_size(orders, ns);
  for (guint r = 0; r < ns; r++) {
    const WeirState *s = g_ptr_array_index(g->states, by_rank[r]);
    WeirScopes *sc = weir_state_scopes(s, error);
    if (sc == NULL)
      return; /* analyse_state reported it first; unreachable */
    g_ptr_array_index(orders, r) = sc;
    offset[r + 1] = offset[r] + sc->order->len;
  }
  guint npos = offset[ns];

  /* Touches of every transient.  A node touches a container when it is an
   * access node of it, or an end of a memlet of it; it writes it as an
   * access node with an incoming memlet, or as the source of a memlet of
   * it that is not its own access node. */
  g_autoptr(GArray) all = g_array_new(FALSE, TRUE, sizeof(Live));
  g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (!c->transient)
      continue;
    Live l = {.c = c};
    g_array_append_val(all, l);
  }
  for (guint i = 0; i < all->len; i++) {
    Live *l = &g_array_index(all, Live, i);
    g_hash_table_insert(by_name, l->c->name, l);
  }
  for (guint r = 0; r < ns && all->len > 0; r++) {
    const WeirState *s = g_ptr_array_index(g->states, by_rank[r]);
    const WeirScopes *sc = g_ptr_array_index(orders, r);
    g_autoptr(WeirEdgeIndex) ix = weir_edge_index_begin(s);
    g_autoptr(GHashTable) pos_of =
        g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint k = 0; k < sc->order->len; k++)
      g_hash_table_insert(pos_of,
                          GUINT_TO_POINTER(g_array_index(sc->order, guint, k)),
                          GUINT_TO_POINTER(offset[r] + k));
    for (guint k = 0; k < sc->order->len; k++) {
      const WeirNode *n =
          weir_state_node(s, g_array_index(sc->order, guint, k));
      Live *l = n->kind == WEIR_NODE_ACCESS && n->data != NULL
                    ? g_hash_table_lookup(by_name, n->data)
                    : NULL;
      if (l == NULL)
        continue;
      gboolean written = FALSE;
      GPtrArray *in = weir_edge_index_memlets(ix, n->id, TRUE);
      for (guint j = 0; j < in->len && !written; j++)
        written = ((const WeirMemlet *)g_ptr_array_index(in, j))->data != NULL;
      live_touch(l, offset[r] + k, r, written);
    }
    for (guint j = 0; j < s->edges->len; j++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, j);
      Live *l = m->data ? g_hash_table_lookup(by_name, m->data) : NULL;
      if (l == NULL)
        continue;
      guint ps = GPOINTER_TO_UINT(
          g_hash_table_lookup(pos_of, GUINT_TO_POINTER(m->src)));
      guint pd = GPOINTER_TO_UINT(
          g_hash_table_lookup(pos_of, GUINT_TO_POINTER(m->dst)));
      live_touch(l, ps, r, !is_access(s, m->src));
      live_touch(l, pd, r, FALSE);
    }
  }

  g_autoptr(GArray) lives = g_array_new(FALSE, TRUE, sizeof(Live));
  for (guint i = 0; i < all->len; i++) {
    Live l = g_array_index(all, Live, i);
    if (!l.accessed)
      continue;
    /* A value that must survive between states (used in several, or read
     * before written in a state inside a loop) is live over whole states,
     * and over every loop those states belong to. */
    gboolean carried = l.lo_rank != l.hi_rank || l.first_is_read;
    l.begin = l.first;
    l.end = l.last;
    if (carried) {
      guint lo = l.lo_rank, hi = l.hi_rank;
      if (weir_state_order_widen(so, &lo, &hi)) {
        l.begin = offset[lo];
        l.end = offset[hi + 1] - 1;
      }
    }
    l.bytes = weir_container_bytes(l.c);
    l.bytes_known =
        weir_expr_eval_checked(l.bytes, bindings, &l.bytes_value, NULL);
    g_array_append_val(lives, l);
  }

  /* Sweep the positions.  The live set S_p changes only at interval ends;
   * the sets not contained in another one (the maximal live sets) are the
   * candidates of the symbolic peak.  With closed intervals, S_p is not
   * contained in S_(p-1) exactly when an interval begins at p, and not in
   * S_(p+1) when one ends at p; so a maximal set is the live set at the
   * first end after a begin, each found once, in order of position.  The
   * sweep keeps running totals, so it is linear in positions + transients
   * (plus the members of the maximal sets when sizes are symbolic). */
  guint nl = lives->len;
  gboolean all_known = TRUE, all_const = TRUE;
  for (guint i = 0; i < nl; i++) {
    const Live *l = &g_array_index(lives, Live, i);
    all_known &= l->bytes_known;
    all_const &= weir_expr_is_const(l->bytes, NULL);
  }
  /* the transients beginning (ending) at each position: compressed rows */
  g_autofree guint *begin_start = g_new0(guint, npos + 2);
  g_autofree guint *end_start = g_new0(guint, npos + 2);
  g_autofree guint *begins = g_new(guint, nl + 1);
  g_autofree guint *ends = g_new(guint, nl + 1);
  for (guint i = 0; i < nl; i++) {
    const Live *l = &g_array_index(lives, Live, i);
    begin_start[l->begin + 2]++;
    end_start[l->end + 2]++;
  }
  for (guint p = 2; p < npos + 2; p++) {
    begin_start[p] += begin_start[p - 1];
    end_start[p] += end_start[p - 1];
  }
  for (guint i = 0; i < nl; i++) {
    const Live *l = &g_array_index(lives, Live, i);
    begins[begin_start[l->begin + 1]++] = i;
    ends[end_start[l->end + 1]++] = i;
  }
  /* the live set: members in any order, slot[i] = index in active */
  g_autofree guint *active = g_new(guint, nl + 1);
  g_autofree guint *slot = g_new(guint, nl + 1);
  guint n_active = 0;
  /* sizes wrap as the expressions' constants do */
  guint64 total = 0, const_total = 0, const_peak = 0;
  gint64 best = -1;
  guint best_count = 0;
  gint64 best_pos = -1;
  gboolean pending = FALSE, found = FALSE;
  g_autoptr(GPtrArray) candidates =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint p = 0; p < npos && nl > 0; p++) {
    /* those that ended at p - 1 leave */
    for (guint k = p > 0 ? end_start[p - 1] : 0; p > 0 && k < end_start[p];
         k++) {
      guint i = ends[k];
      const Live *l = &g_array_index(lives, Live, i);
      guint last = active[--n_active];
      active[slot[i]] = last;
      slot[last] = slot[i];
      total -= l->bytes_known ? (guint64)l->bytes_value : 0;
      if (all_const)
        const_total -= (guint64)weir_expr_const_value(l->bytes);
    }
    for (guint k = begin_start[p]; k < begin_start[p + 1]; k++) {
      guint i = begins[k];
      const Live *l = &g_array_index(lives, Live, i);
      slot[i] = n_active;
      active[n_active++] = i;
      total += l->bytes_known ? (guint64)l->bytes_value : 0;
      if (all_const)
        const_total += (guint64)weir_expr_const_value(l->bytes);
      pending = TRUE;
    }
    /* the first position of the largest live set */
    if (all_known ? (gint64)total > best : n_active > best_count) {
      best = (gint64)total;
      best_count = n_active;
      best_pos = p;
    }
    if (!pending || end_start[p + 1] == end_start[p])
      continue;
    /* S_p is a maximal live set */
    pending = FALSE;
    if (all_const) {
      if (!found || (gint64)const_total > (gint64)const_peak)
        const_peak = const_total;
      found = TRUE;
      continue;
    }
    g_autofree guint *members = g_memdup2(active, n_active * sizeof(guint));
    qsort(members, n_active, sizeof(guint), cmp_uint);
    Acc sum;
    acc_init(&sum);
    for (guint k = 0; k < n_active; k++)
      acc_add(&sum, g_array_index(lives, Live, members[k]).bytes);
    WeirExpr *e = acc_finish(&sum);
    g_ptr_array_add(candidates, e);
  }
  WeirExpr *peak = NULL;
  if (all_const && found)
    peak = weir_expr_const((gint64)const_peak);
  else if (candidates->len > 0)
    peak = max_of(candidates, 0, candidates->len);
  if (peak == NULL)
    peak = weir_expr_const(0);
  quantity_set(&a->peak_transient_bytes, peak, bindings);
  if (best_pos >= 0) {
    for (guint i = 0; i < nl; i++) {
      const Live *l = &g_array_index(lives, Live, i);
      if (l->begin <= (guint)best_pos && (guint)best_pos <= l->end)
        g_ptr_array_add(a->peak_live, g_strdup(l->c->name));
    }
    g_ptr_array_sort(a->peak_live, cmp_name);
  }
  for (guint i = 0; i < nl; i++)
    weir_expr_unref(g_array_index(lives, Live, i).bytes);
}

/* -------------------------------------------------------------- the API */

void weir_analysis_free(WeirAnalysis *a) {
  if (a == NULL)
    return;
  AnalysisImpl *impl = (AnalysisImpl *)a;
  g_hash_table_unref(impl->memlet_index);
  g_hash_table_unref(impl->node_index);
  g_hash_table_unref(impl->state_index);
  g_ptr_array_unref(a->memlets);
  g_ptr_array_unref(a->nodes);
  g_ptr_array_unref(a->states);
  quantity_clear(&a->total_bytes);
  quantity_clear(&a->total_flops);
  quantity_clear(&a->total_traffic);
  quantity_clear(&a->total_comm_bytes);
  quantity_clear(&a->peak_transient_bytes);
  g_ptr_array_unref(a->peak_live);
  g_free(impl);
}

WeirAnalysis *weir_analysis_compute(const WeirGraph *g, GHashTable *bindings,
                                    GError **error) {
  return weir_analysis_compute_traffic(g, bindings, 0, error);
}

WeirAnalysis *weir_analysis_compute_traffic(const WeirGraph *g,
                                            GHashTable *bindings,
                                            gint64 cache_bytes,
                                            GError **error) {
  g_return_val_if_fail(g != NULL, NULL);
  AnalysisImpl *impl = g_new0(AnalysisImpl, 1);
  impl->cache_bytes = MAX(cache_bytes, 0);
  WeirAnalysis *a = &impl->pub;
  impl->memlet_index = g_hash_table_new(g_direct_hash, g_direct_equal);
  impl->node_index = g_hash_table_new(g_direct_hash, g_direct_equal);
  impl->state_index = g_hash_table_new(g_direct_hash, g_direct_equal);
  a->memlets = g_ptr_array_new_with_free_func(memlet_cost_free);
  a->nodes = g_ptr_array_new_with_free_func(node_cost_free);
  a->states = g_ptr_array_new_with_free_func(state_cost_free);
  a->peak_live = g_ptr_array_new_with_free_func(g_free);

  Acc bytes, flops, traffic, comm;
  acc_init(&bytes);
  acc_init(&flops);
  acc_init(&traffic);
  acc_init(&comm);
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    if (!analyse_state(impl, g, s, bindings, error)) {
      weir_expr_unref(bytes.sum);
      weir_expr_unref(flops.sum);
      weir_expr_unref(traffic.sum);
      weir_expr_unref(comm.sum);
      weir_analysis_free(a);
      return NULL;
    }
    const WeirStateCost *sc = g_ptr_array_index(a->states, a->states->len - 1);
    acc_add(&bytes, sc->bytes.expr);
    acc_add(&flops, sc->flops.expr);
    acc_add(&traffic, sc->traffic.expr);
    acc_add(&comm, sc->comm_bytes.expr);
  }
  quantity_set(&a->total_comm_bytes, acc_finish(&comm), bindings);
  quantity_set(&a->total_bytes, acc_finish(&bytes), bindings);
  quantity_set(&a->total_flops, acc_finish(&flops), bindings);
  if (impl->cache_bytes > 0)
    quantity_set(&a->total_traffic, acc_finish(&traffic), bindings);
  else
    g_clear_pointer(&traffic.sum, weir_expr_unref);
  if (a->total_bytes.known && a->total_flops.known &&
      a->total_bytes.value > 0) {
    a->intensity_known = TRUE;
    a->intensity = (double)a->total_flops.value / (double)a->total_bytes.value;
  }
  compute_peak(impl, g, bindings, NULL);
  return a;
}

const WeirMemletCost *weir_analysis_memlet(const WeirAnalysis *a, guint edge) {
  g_return_val_if_fail(a != NULL, NULL);
  const AnalysisImpl *impl = (const AnalysisImpl *)a;
  return g_hash_table_lookup(impl->memlet_index, GUINT_TO_POINTER(edge));
}

const WeirNodeCost *weir_analysis_node(const WeirAnalysis *a, guint node) {
  g_return_val_if_fail(a != NULL, NULL);
  const AnalysisImpl *impl = (const AnalysisImpl *)a;
  return g_hash_table_lookup(impl->node_index, GUINT_TO_POINTER(node));
}

const WeirStateCost *weir_analysis_state(const WeirAnalysis *a, guint state) {
  g_return_val_if_fail(a != NULL, NULL);
  const AnalysisImpl *impl = (const AnalysisImpl *)a;
  return g_hash_table_lookup(impl->state_index, GUINT_TO_POINTER(state));
}
