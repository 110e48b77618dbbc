/* transient-reuse.c — "transient-reuse" (tier 4): memory pooling by
 * liveness.
 *
 * Transients whose lifetimes do not overlap can live in the same buffer.
 * The pass walks the transients of each state in the order they become
 * live (the linear order and liveness rules of ir/weir-analysis.h, as
 * reproduced by tier4-util) and gives each one, when it can, the buffer of
 * an earlier transient: it renames the later container to the earlier one
 * (the pool's first member), whose every dimension is at least as large,
 * and removes the later container.  Two ways to share:
 *   - in place: the last use of A and the first write of B are the same
 *     element-wise map (B[i] = f(A[i], ...)): the tasklet reads A[i]
 *     before it writes B[i] at the same index, so A's element is dead when
 *     B's overwrites it.  The two lifetimes meet in that map, so sharing
 *     lowers the peak of simultaneously live bytes;
 *   - after: every use of A is ordered before B's first write.  Where the
 *     dataflow does not order them yet, the pass adds an empty memlet (an
 *     ordering edge) that agrees with the state's topological order, so
 *     that order — and the liveness the analysis computes — is unchanged.
 *     Such a merge is only made when it does not raise the program's peak
 *     (the pool stays live between A's last use and B's first), and it
 *     lowers the total bytes of transient storage.
 *
 * Whole-program pass: site state 0, no nodes.  Parameter min_bytes: leave
 * transients smaller than this alone.
 *
 * Candidates: transients without constant data, of concrete shape, used in
 * one state only and outside any loop carry, whose access nodes are all at
 * the top level of their state (a transient inside a map scope may be
 * private to each iteration of a parallel map).  A transient that joins a
 * pool must be defined by its first access: written there without
 * write-conflict resolution or dynamic volume, with one memlet covering it
 * all, before any other use (its old contents never matter).  Pool members
 * have the pool's dtype and rank.  A transient that a library node or a
 * nested program reads or writes joins only a pool of exactly its shape:
 * those nodes take their operands whole, with the container's shape (a
 * GEMM's sizes come from it), so a larger buffer would change what they
 * compute.
 */
#include <string.h>

#include "tier4-util.h"
#include "weir-plugin.h"

gboolean weir_tier4_register_transient_reuse(GError **error);

typedef struct {
  const WeirContainer *leader;
  gint64 shape[8];
  gint64 bytes;
  const T4Live *last; /* last member */
  guint end;          /* end of the pool's live interval */
} Pool;

typedef struct {
  guint state, src, dst;
} Order;

typedef struct {
  GPtrArray *from; /* char* container renamed ... */
  GPtrArray *to;   /* ... to this pool leader (char*) */
  GArray *orders;  /* Order: empty memlets to add */
  guint candidates;
} Plan;

static void plan_clear(Plan *p) {
  g_clear_pointer(&p->from, g_ptr_array_unref);
  g_clear_pointer(&p->to, g_ptr_array_unref);
  g_clear_pointer(&p->orders, g_array_unref);
}

/* --------------------------------------------------------- candidates */

/* Every node of s touching container `name` (access nodes and ends of
 * memlets naming it), as ids (possibly repeated). */
static GArray *touches(T4State *ts, const char *name) {
  GArray *out = t4_state_access_nodes(ts, name);
  for (guint k = 0; k < t4_state_n_memlets_of(ts, name); k++) {
    const WeirMemlet *m = t4_state_memlet_of(ts, name, k);
    g_array_append_val(out, m->src);
    g_array_append_val(out, m->dst);
  }
  return out;
}

static gboolean top_level_only(T4State *ts, const char *name) {
  g_autoptr(GArray) acc = t4_state_access_nodes(ts, name);
  for (guint k = 0; k < acc->len; k++)
    if (t4_parent(ts, g_array_index(acc, guint, k)))
      return FALSE;
  return acc->len > 0;
}

static gboolean candidate(const T4Live *l, T4State *ts, gint64 min_bytes) {
  const WeirContainer *c = l->c;
  gint64 shape[8];
  return l->accessed && !c->initial && l->n_states == 1 && !l->carried &&
         l->bytes_known && l->bytes >= min_bytes &&
         c->shape->len <= G_N_ELEMENTS(shape) && t4_concrete_shape(c, shape) &&
         top_level_only(ts, c->name);
}

/* B's first access node writes all of it, plainly, before any other use. */
static gboolean defined_by_first_write(T4State *ts, const WeirContainer *c) {
  const WeirState *s = t4_state_get(ts);
  g_autoptr(GArray) acc = t4_state_access_nodes(ts, c->name);
  guint w = 0;
  for (guint k = 0; k < acc->len; k++) {
    guint id = g_array_index(acc, guint, k);
    if (!w || t4_pos(ts, id) < t4_pos(ts, w))
      w = id;
  }
  g_autoptr(GPtrArray) in = weir_state_in_edges(s, w);
  gboolean full = FALSE;
  g_autoptr(GArray) writers = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint k = 0; k < in->len; k++) {
    const WeirMemlet *m = g_ptr_array_index(in, k);
    if (!m->data)
      continue;
    if (m->wcr != WEIR_WCR_NONE || m->dynamic)
      return FALSE;
    const WeirSubset *sub = t4_memlet_subset_on(s, m, c->name);
    full |= sub && t4_subset_is_full(sub, c);
    guint rep = t4_top_rep(ts, m->src, TRUE);
    g_array_append_val(writers, rep);
    /* inner writes of a map feeding w */
    const WeirNode *src = weir_state_node(s, m->src);
    if (src->kind == WEIR_NODE_MAP_EXIT) {
      for (guint j = 0; j < t4_state_n_memlets_of(ts, c->name); j++) {
        const WeirMemlet *x = t4_state_memlet_of(ts, c->name, j);
        if ((t4_inside(ts, x->dst, src->entry) || x->dst == src->id) &&
            (x->wcr != WEIR_WCR_NONE || x->dynamic))
          return FALSE;
      }
    }
  }
  if (!full)
    return FALSE;
  /* every other use comes after w; the writers do not read c */
  g_autoptr(GArray) tn = touches(ts, c->name);
  for (guint k = 0; k < tn->len; k++) {
    guint id = g_array_index(tn, guint, k);
    if (id == w)
      continue;
    guint rep = t4_top_rep(ts, id, TRUE);
    gboolean is_writer = FALSE;
    for (guint j = 0; j < writers->len; j++)
      is_writer |= g_array_index(writers, guint, j) == rep;
    if (is_writer) {
      /* the writer scope may only write c: no memlet of c enters it */
      for (guint j = 0; j < t4_state_n_memlets_of(ts, c->name); j++)
        if (t4_state_memlet_of(ts, c->name, j)->dst == rep)
          return FALSE;
      continue;
    }
    if (!t4_reaches(ts, w, rep))
      return FALSE;
  }
  return TRUE;
}

/* ----------------------------------------------------------- ordering */

static gboolean in_array(GArray *a, guint v) {
  for (guint k = 0; k < a->len; k++)
    if (g_array_index(a, guint, k) == v)
      return TRUE;
  return FALSE;
}

/* Top-level representatives of the touches of `name`: where its uses end
 * (start == FALSE) or begin (TRUE), unique, ascending by position. */
static GArray *reps(T4State *ts, const char *name, gboolean start) {
  g_autoptr(GArray) tn = touches(ts, name);
  GArray *out = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint k = 0; k < tn->len; k++) {
    guint r = t4_top_rep(ts, g_array_index(tn, guint, k), start);
    if (!in_array(out, r))
      g_array_append_val(out, r);
  }
  return out;
}

/* Plans the edges that order every use of a before every use of b (except
 * uses inside `shared`, a map entry both use in place, or 0).  FALSE when
 * some pair cannot be ordered without changing the topological order. */
static gboolean plan_order(T4State *ts, const char *a, const char *b,
                           guint shared, GArray *orders) {
  g_autoptr(GArray) xs = reps(ts, a, FALSE);
  g_autoptr(GArray) ys = reps(ts, b, TRUE);
  const WeirState *s = t4_state_get(ts);
  guint shared_exit = 0;
  if (shared) {
    const WeirNode *x = weir_state_map_exit(s, weir_state_node(s, shared));
    shared_exit = x ? x->id : 0;
  }
  for (guint i = 0; i < xs->len; i++) {
    guint x = g_array_index(xs, guint, i);
    if (x == shared || x == shared_exit)
      continue;
    for (guint j = 0; j < ys->len; j++) {
      guint y = g_array_index(ys, guint, j);
      if (y == shared_exit)
        continue;
      if (x == y)
        return FALSE;
      if (t4_reaches(ts, x, y))
        continue;
      if (t4_pos(ts, x) >= t4_pos(ts, y))
        return FALSE;
      Order o = {s->id, x, y};
      g_array_append_val(orders, o);
    }
  }
  return TRUE;
}

/* ------------------------------------------------------------ in place */

static gboolean reads_name(const WeirAst *a, const char *name) {
  if (!a)
    return FALSE;
  if ((a->kind == WEIR_AST_NAME || a->kind == WEIR_AST_INDEX) &&
      g_strcmp0(a->name, name) == 0)
    return TRUE;
  if (reads_name(a->a, name) || reads_name(a->b, name) ||
      reads_name(a->c, name))
    return TRUE;
  for (guint k = 0; a->args && k < a->args->len; k++)
    if (reads_name(g_ptr_array_index(a->args, k), name))
      return TRUE;
  return FALSE;
}

/* The tasklet reads input `in` only before (or in) the statement that
 * first assigns output `out`. */
static gboolean reads_before_write(const WeirCode *code, const char *in,
                                   const char *out) {
  gboolean written = FALSE;
  for (guint k = 0; k < code->stmts->len; k++) {
    const WeirStmt *st = g_ptr_array_index(code->stmts, k);
    if (written &&
        (reads_name(st->value, in) ||
         (st->target->kind == WEIR_AST_INDEX && reads_name(st->target, in))))
      return FALSE;
    if (g_strcmp0(st->target->name, out) == 0)
      written = TRUE;
  }
  return TRUE;
}

/* B's first touch is the tasklet of an element-wise map that reads A at
 * the index where it writes B, and that map is A's last use.  *entry
 * receives the map. */
static gboolean in_place(T4State *ts, const T4Live *a, const T4Live *b,
                         guint base, guint *entry) {
  const WeirState *s = t4_state_get(ts);
  if (a->last != b->first)
    return FALSE;
  guint tid = t4_node_at(ts, b->first - base);
  const WeirNode *t = weir_state_node(s, tid);
  guint e = t4_parent(ts, tid);
  if (!t || t->kind != WEIR_NODE_TASKLET || !t->code || !e || t4_parent(ts, e))
    return FALSE;
  for (guint k = 0; k < s->nodes->len; k++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->id != tid && t4_parent(ts, n->id) == e)
      return FALSE;
  }
  const WeirNode *x = weir_state_map_exit(s, weir_state_node(s, e));
  if (!x)
    return FALSE;
  const WeirMemlet *rd = NULL, *wr = NULL;
  guint a_uses = 0;
  for (guint k = 0; k < s->edges->len; k++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, k);
    gboolean here = m->src == tid || m->dst == tid || m->src == e ||
                    m->dst == e || m->src == x->id || m->dst == x->id;
    if (!here)
      continue;
    if (g_strcmp0(m->data, a->c->name) == 0) {
      a_uses++;
      if (m->dst == tid)
        rd = rd ? NULL : m;
      if (m->dst == x->id || m->src == x->id)
        return FALSE; /* the map writes A */
    }
    if (g_strcmp0(m->data, b->c->name) == 0 && m->src == tid)
      wr = wr ? NULL : m;
  }
  if (!rd || !wr || a_uses != 2 || rd->dynamic || wr->dynamic ||
      wr->wcr != WEIR_WCR_NONE || !t4_subset_is_single(rd->subset) ||
      !weir_subset_equal(rd->subset, wr->subset))
    return FALSE;
  if (!reads_before_write(t->code, rd->dst_conn, wr->src_conn))
    return FALSE;
  *entry = e;
  return TRUE;
}

/* Whether a library node or a nested program of s reads or writes
 * `name` through a memlet: it then sees the container whole. */
static gboolean used_whole(T4State *ts, const char *name) {
  const WeirState *s = t4_state_get(ts);
  for (guint k = 0; k < t4_state_n_memlets_of(ts, name); k++) {
    const WeirMemlet *m = t4_state_memlet_of(ts, name, k);
    const guint ends[2] = {m->src, m->dst};
    for (guint e = 0; e < 2; e++) {
      const WeirNode *n = weir_state_node(s, ends[e]);
      if (n && (n->kind == WEIR_NODE_LIBRARY || n->kind == WEIR_NODE_NESTED))
        return TRUE;
    }
  }
  return FALSE;
}

/* ------------------------------------------------------------- the plan */

/* Whether c can live in p's buffer: same dtype and rank, no dimension
 * larger; exactly p's shape when `exact` (c is used whole). */
static gboolean fits(const Pool *p, const WeirContainer *c, gboolean exact) {
  gint64 shape[8];
  if (c->dtype != p->leader->dtype || c->shape->len != p->leader->shape->len ||
      !t4_concrete_shape(c, shape))
    return FALSE;
  for (guint d = 0; d < c->shape->len; d++)
    if (shape[d] > p->shape[d] || (exact && shape[d] != p->shape[d]))
      return FALSE;
  return TRUE;
}

/* sums after moving B into pool p: B's interval leaves, the pool extends
 * to B's end.  Applies (sign 1) or undoes (sign -1). */
static void shift(gint64 *sums, const Pool *p, const T4Live *b, gint sign) {
  for (guint k = b->begin; k <= b->end; k++)
    sums[k] -= sign * b->bytes;
  for (guint k = p->end + 1; k <= b->end; k++)
    sums[k] += sign * p->bytes;
}

static int cmp_first(gconstpointer pa, gconstpointer pb) {
  const T4Live *a = *(const T4Live *const *)pa;
  const T4Live *b = *(const T4Live *const *)pb;
  if (a->first != b->first)
    return a->first < b->first ? -1 : 1;
  return a->c->id < b->c->id ? -1 : a->c->id > b->c->id;
}

/* Pools by nearest end (latest first), then smaller size, then age. */
static gint cmp_pool(gconstpointer pa, gconstpointer pb, gpointer data) {
  GArray *pools = data;
  guint ia = *(const guint *)pa, ib = *(const guint *)pb;
  const Pool *a = &g_array_index(pools, Pool, ia);
  const Pool *b = &g_array_index(pools, Pool, ib);
  if (a->end != b->end)
    return a->end > b->end ? -1 : 1;
  if (a->bytes != b->bytes)
    return a->bytes < b->bytes ? -1 : 1;
  return ia < ib ? -1 : ia > ib;
}

static gboolean make_plan(const WeirGraph *g, gint64 min_bytes, Plan *plan,
                          GError **error) {
  memset(plan, 0, sizeof(*plan));
  plan->from = g_ptr_array_new_with_free_func(g_free);
  plan->to = g_ptr_array_new_with_free_func(g_free);
  plan->orders = g_array_new(FALSE, FALSE, sizeof(Order));
  g_autoptr(T4Liveness) live = t4_liveness_new(g, error);
  if (!live)
    return FALSE;
  g_autofree gint64 *sums = t4_liveness_sums(live);
  gint64 peak = t4_max(sums, live->npos);
  for (guint si = 0; si < g->states->len; si++) {
    const WeirState *s = g_ptr_array_index(g->states, si);
    g_autoptr(T4State) ts = t4_state_new(s, error);
    if (!ts)
      return FALSE;
    guint base = t4_liveness_state_base(live, s->id);
    g_autoptr(GPtrArray) cands = g_ptr_array_new();
    for (guint k = 0; k < live->lives->len; k++) {
      const T4Live *l = &g_array_index(live->lives, T4Live, k);
      if (l->accessed && l->state == s->id && candidate(l, ts, min_bytes))
        g_ptr_array_add(cands, (gpointer)l);
    }
    g_ptr_array_sort(cands, cmp_first);
    plan->candidates += cands->len;
    g_autoptr(GArray) pools = g_array_new(FALSE, TRUE, sizeof(Pool));
    for (guint k = 0; k < cands->len; k++) {
      const T4Live *b = g_ptr_array_index(cands, k);
      gint chosen = -1;
      g_autoptr(GArray) orders = g_array_new(FALSE, FALSE, sizeof(Order));
      gboolean joiner = defined_by_first_write(ts, b->c);
      gboolean exact = used_whole(ts, b->c->name);
      /* in place: the pool's last member dies in the map that defines b */
      for (guint j = 0; joiner && j < pools->len && chosen < 0; j++) {
        Pool *p = &g_array_index(pools, Pool, j);
        guint e = 0;
        if (!fits(p, b->c, exact) || !in_place(ts, p->last, b, base, &e))
          continue;
        if (!live->all_known && p->bytes != b->bytes)
          continue;
        g_array_set_size(orders, 0);
        if (!plan_order(ts, p->last->c->name, b->c->name, e, orders))
          continue;
        shift(sums, p, b, 1);
        if (t4_max(sums, live->npos) > peak) {
          shift(sums, p, b, -1);
          continue;
        }
        chosen = (gint)j;
      }
      /* after: pools that end before b starts, nearest end first */
      g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
      for (guint j = 0;
           joiner && chosen < 0 && live->all_known && j < pools->len; j++) {
        Pool *p = &g_array_index(pools, Pool, j);
        if (p->end < b->first && fits(p, b->c, exact))
          g_array_append_val(order, j);
      }
      g_array_sort_with_data(order, cmp_pool, pools);
      for (guint j = 0; j < order->len && chosen < 0; j++) {
        guint pj = g_array_index(order, guint, j);
        Pool *p = &g_array_index(pools, Pool, pj);
        g_array_set_size(orders, 0);
        if (!plan_order(ts, p->last->c->name, b->c->name, 0, orders))
          continue;
        shift(sums, p, b, 1);
        if (t4_max(sums, live->npos) > peak) {
          shift(sums, p, b, -1);
          continue;
        }
        chosen = (gint)pj;
      }
      if (chosen >= 0) {
        Pool *p = &g_array_index(pools, Pool, chosen);
        g_ptr_array_add(plan->from, g_strdup(b->c->name));
        g_ptr_array_add(plan->to, g_strdup(p->leader->name));
        g_array_append_vals(plan->orders, orders->data, orders->len);
        p->last = b;
        p->end = MAX(p->end, b->end);
        /* later merges may not raise what this one lowered */
        peak = t4_max(sums, live->npos);
        continue;
      }
      Pool np = {.leader = b->c, .bytes = b->bytes, .last = b, .end = b->end};
      t4_concrete_shape(b->c, np.shape);
      g_array_append_val(pools, np);
    }
  }
  return TRUE;
}

/* ------------------------------------------------------ the framework API */

static const WeirParamSpec params[] = {
    {.name = "min_bytes",
     .type = WEIR_PARAM_INT,
     .default_value = "0",
     .min = 0,
     .max = G_MAXINT64,
     .doc = "leave transients smaller than this many bytes alone"},
};

static void match(const WeirGraph *g, GArray *sites) {
  Plan plan;
  if (make_plan(g, 0, &plan, NULL) && plan.from->len > 0) {
    WeirSite site = {.state = 0, .n_nodes = 0};
    g_array_append_val(sites, site);
  }
  plan_clear(&plan);
}

static gboolean can_apply(const WeirGraph *g, const WeirSite *site,
                          const WeirParams *p, char **reason) {
  if (site->state != 0 || site->n_nodes != 0) {
    *reason = g_strdup("transient-reuse is a whole-program pass: its site is "
                       "state 0 with no nodes");
    return FALSE;
  }
  gint64 min_bytes = weir_params_get_int(p, "min_bytes");
  Plan plan;
  g_autoptr(GError) error = NULL;
  if (!make_plan(g, min_bytes, &plan, &error)) {
    *reason = g_strdup(error->message);
    plan_clear(&plan);
    return FALSE;
  }
  gboolean ok = plan.from->len > 0;
  if (!ok)
    *reason = g_strdup_printf(
        "no two transients can share a buffer: of the %u candidates (used in "
        "one state at top level, concrete size of at least %" G_GINT64_FORMAT
        " bytes, no constant data), none is defined after another one's "
        "last use by a write that can be ordered after it",
        plan.candidates, min_bytes);
  plan_clear(&plan);
  return ok;
}

static gboolean same_order(const Order *a, const Order *b) {
  return a->state == b->state && a->src == b->src && a->dst == b->dst;
}

static gboolean apply(WeirGraph *g, const WeirSite *site, const WeirParams *p,
                      GError **error) {
  (void)site;
  Plan plan;
  if (!make_plan(g, weir_params_get_int(p, "min_bytes"), &plan, error)) {
    plan_clear(&plan);
    return FALSE;
  }
  for (guint k = 0; k < plan.from->len; k++) {
    const char *from = g_ptr_array_index(plan.from, k);
    const char *to = g_ptr_array_index(plan.to, k);
    for (guint i = 0; i < g->states->len; i++) {
      WeirState *s = g_ptr_array_index(g->states, i);
      for (guint j = 0; j < s->nodes->len; j++) {
        WeirNode *n = g_ptr_array_index(s->nodes, j);
        if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, from) == 0)
          weir_access_set_data(n, to);
      }
      for (guint j = 0; j < s->edges->len; j++) {
        WeirMemlet *m = g_ptr_array_index(s->edges, j);
        if (g_strcmp0(m->data, from) == 0)
          weir_memlet_set_data(m, to);
      }
    }
    weir_graph_remove_container(g, from);
  }
  gboolean ok = TRUE;
  for (guint k = 0; k < plan.orders->len && ok; k++) {
    const Order *o = &g_array_index(plan.orders, Order, k);
    gboolean seen = FALSE;
    for (guint j = 0; j < k && !seen; j++)
      seen = same_order(o, &g_array_index(plan.orders, Order, j));
    if (seen)
      continue;
    WeirState *s = weir_graph_state(g, o->state);
    ok = weir_state_add_memlet(g, s, o->src, NULL, o->dst, NULL, NULL, NULL,
                               error) != NULL;
  }
  plan_clear(&plan);
  return ok;
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "transient-reuse",
    .tier = 4,
    .description = "let transients with disjoint lifetimes share buffers "
                   "(memory pooling by liveness), in place where an "
                   "element-wise map ends one lifetime and starts the next",
    .params = params,
    .n_params = G_N_ELEMENTS(params),
    .match = match,
    .can_apply = can_apply,
    .apply = apply,
};

gboolean weir_tier4_register_transient_reuse(GError **error) {
  return weir_transform_register(&info, error);
}
