/* tier4-util.c — analyses shared by the tier-4 transformations (see
 * tier4-util.h). */
#include <string.h>

#include "tier4-util.h"
#include "weir-analysis.h"

/* ---------------------------------------------------------------- states */

struct _T4State {
  const WeirState *s;
  WeirScopes *scopes;
  GHashTable *pos;   /* node id -> position + 1 */
  GHashTable *index; /* node id -> index in s->nodes + 1 */
  guint n;
  GArray **succ;    /* per node index: successor indices (guint) */
  guint8 **reach;   /* per node index: reachability row, computed lazily */
  GHashTable *uses; /* container name -> T4Uses*, built on first use */
};

/* Where a container is named in the state, in the state's own order. */
typedef struct {
  GArray *access;     /* ids of its access nodes, ascending */
  GPtrArray *memlets; /* memlets with that data, ascending by id (borrowed) */
} T4Uses;

static void uses_free(gpointer p) {
  T4Uses *u = p;
  g_array_unref(u->access);
  g_ptr_array_unref(u->memlets);
  g_free(u);
}

static T4Uses *uses_get(GHashTable *uses, const char *name) {
  T4Uses *u = g_hash_table_lookup(uses, name);
  if (!u) {
    u = g_new0(T4Uses, 1);
    u->access = g_array_new(FALSE, FALSE, sizeof(guint));
    u->memlets = g_ptr_array_new();
    g_hash_table_insert(uses, (gpointer)name, u);
  }
  return u;
}

static const T4Uses *state_uses(T4State *t, const char *name) {
  static const T4Uses none;
  if (!t->uses) {
    t->uses = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, uses_free);
    for (guint i = 0; i < t->s->nodes->len; i++) {
      const WeirNode *n = g_ptr_array_index(t->s->nodes, i);
      if (n->kind == WEIR_NODE_ACCESS && n->data)
        g_array_append_val(uses_get(t->uses, n->data)->access, n->id);
    }
    for (guint i = 0; i < t->s->edges->len; i++) {
      WeirMemlet *m = g_ptr_array_index(t->s->edges, i);
      if (m->data)
        g_ptr_array_add(uses_get(t->uses, m->data)->memlets, m);
    }
  }
  const T4Uses *u = name ? g_hash_table_lookup(t->uses, name) : NULL;
  return u ? u : &none;
}

GArray *t4_state_access_nodes(T4State *t, const char *name) {
  const T4Uses *u = state_uses(t, name);
  GArray *out = g_array_new(FALSE, FALSE, sizeof(guint));
  if (u->access)
    g_array_append_vals(out, u->access->data, u->access->len);
  return out;
}

guint t4_state_n_memlets_of(T4State *t, const char *name) {
  const T4Uses *u = state_uses(t, name);
  return u->memlets ? u->memlets->len : 0;
}

const WeirMemlet *t4_state_memlet_of(T4State *t, const char *name, guint k) {
  const T4Uses *u = state_uses(t, name);
  g_return_val_if_fail(u->memlets && k < u->memlets->len, NULL);
  return g_ptr_array_index(u->memlets, k);
}

T4State *t4_state_new(const WeirState *s, GError **error) {
  WeirScopes *sc = weir_state_scopes(s, error);
  if (!sc)
    return NULL;
  T4State *t = g_new0(T4State, 1);
  t->s = s;
  t->scopes = sc;
  t->n = s->nodes->len;
  t->pos = g_hash_table_new(g_direct_hash, g_direct_equal);
  t->index = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint k = 0; k < sc->order->len; k++)
    g_hash_table_insert(t->pos,
                        GUINT_TO_POINTER(g_array_index(sc->order, guint, k)),
                        GUINT_TO_POINTER(k + 1));
  for (guint i = 0; i < t->n; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    g_hash_table_insert(t->index, GUINT_TO_POINTER(n->id),
                        GUINT_TO_POINTER(i + 1));
  }
  t->succ = g_new0(GArray *, t->n ? t->n : 1);
  t->reach = g_new0(guint8 *, t->n ? t->n : 1);
  for (guint i = 0; i < t->n; i++)
    t->succ[i] = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint e = 0; e < s->edges->len; e++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, e);
    guint a = GPOINTER_TO_UINT(
        g_hash_table_lookup(t->index, GUINT_TO_POINTER(m->src)));
    guint b = GPOINTER_TO_UINT(
        g_hash_table_lookup(t->index, GUINT_TO_POINTER(m->dst)));
    if (a && b) {
      guint d = b - 1;
      g_array_append_val(t->succ[a - 1], d);
    }
  }
  return t;
}

void t4_state_free(T4State *t) {
  if (!t)
    return;
  weir_scopes_free(t->scopes);
  g_clear_pointer(&t->uses, g_hash_table_unref);
  g_hash_table_unref(t->pos);
  g_hash_table_unref(t->index);
  for (guint i = 0; i < t->n; i++) {
    g_array_unref(t->succ[i]);
    g_free(t->reach[i]);
  }
  g_free(t->succ);
  g_free(t->reach);
  g_free(t);
}

const WeirState *t4_state_get(const T4State *t) {
  return t->s;
}

guint t4_pos(const T4State *t, guint node) {
  guint p =
      GPOINTER_TO_UINT(g_hash_table_lookup(t->pos, GUINT_TO_POINTER(node)));
  g_return_val_if_fail(p > 0, 0);
  return p - 1;
}

guint t4_n_nodes(const T4State *t) {
  return t->n;
}

guint t4_node_at(const T4State *t, guint pos) {
  g_return_val_if_fail(pos < t->scopes->order->len, 0);
  return g_array_index(t->scopes->order, guint, pos);
}

guint t4_parent(const T4State *t, guint node) {
  return weir_scopes_parent(t->scopes, node);
}

guint t4_outermost(const T4State *t, guint node) {
  guint top = 0;
  for (guint x = weir_scopes_parent(t->scopes, node); x;
       x = weir_scopes_parent(t->scopes, x))
    top = x;
  return top;
}

gboolean t4_inside(const T4State *t, guint node, guint entry) {
  for (guint x = weir_scopes_parent(t->scopes, node); x;
       x = weir_scopes_parent(t->scopes, x))
    if (x == entry)
      return TRUE;
  return FALSE;
}

gboolean t4_reaches(T4State *t, guint from, guint to) {
  if (from == to)
    return TRUE;
  guint a =
      GPOINTER_TO_UINT(g_hash_table_lookup(t->index, GUINT_TO_POINTER(from)));
  guint b =
      GPOINTER_TO_UINT(g_hash_table_lookup(t->index, GUINT_TO_POINTER(to)));
  if (!a || !b)
    return FALSE;
  a--;
  b--;
  if (!t->reach[a]) {
    guint8 *row = g_new0(guint8, t->n);
    g_autoptr(GArray) work = g_array_new(FALSE, FALSE, sizeof(guint));
    g_array_append_val(work, a);
    while (work->len) {
      guint x = g_array_index(work, guint, work->len - 1);
      g_array_set_size(work, work->len - 1);
      for (guint k = 0; k < t->succ[x]->len; k++) {
        guint y = g_array_index(t->succ[x], guint, k);
        if (!row[y]) {
          row[y] = 1;
          g_array_append_val(work, y);
        }
      }
    }
    t->reach[a] = row;
  }
  return t->reach[a][b] != 0;
}

guint t4_top_rep(const T4State *t, guint node, gboolean start) {
  guint top = t4_outermost(t, node);
  const WeirNode *n = weir_state_node(t->s, top ? top : node);
  if (!n)
    return node;
  if (n->kind == WEIR_NODE_MAP_ENTRY) {
    if (start)
      return n->id;
    const WeirNode *x = weir_state_map_exit(t->s, n);
    return x ? x->id : n->id;
  }
  if (n->kind == WEIR_NODE_MAP_EXIT && start)
    return n->entry;
  return n->id;
}

/* -------------------------------------------------------------- liveness */

static void live_touch(T4Live *l, guint pos, guint r, gboolean writes,
                       guint *lo_rank, guint *hi_rank) {
  if (!l->accessed || pos < l->first) {
    l->accessed = TRUE;
    l->first = pos;
    *lo_rank = r;
    l->first_is_read = !writes;
  } else if (pos == l->first && writes) {
    l->first_is_read = FALSE;
  }
  if (pos >= l->last) {
    l->last = pos;
    *hi_rank = r;
  }
}

static gboolean is_access(const WeirState *s, guint id) {
  const WeirNode *n = weir_state_node(s, id);
  return n && n->kind == WEIR_NODE_ACCESS;
}

T4Liveness *t4_liveness_new(const WeirGraph *g, GError **error) {
  guint ns = g->states->len;
  g_autoptr(WeirStateOrder) so = weir_state_order_new(g);
  const guint *by_rank = so->by_rank;
  g_autofree guint *offset = g_new0(guint, ns + 1);
  g_autoptr(GPtrArray) orders =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_scopes_free);
  for (guint r = 0; r < ns; r++) {
    const WeirState *s = g_ptr_array_index(g->states, by_rank[r]);
    WeirScopes *sc = weir_state_scopes(s, error);
    if (!sc)
      return NULL;
    g_ptr_array_add(orders, sc);
    offset[r + 1] = offset[r] + sc->order->len;
  }

  T4Liveness *l = g_new0(T4Liveness, 1);
  l->npos = offset[ns];
  l->lives = g_array_new(FALSE, TRUE, sizeof(T4Live));
  l->by_name = g_hash_table_new(g_str_hash, g_str_equal);
  l->state_base = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint r = 0; r < ns; r++) {
    const WeirState *s = g_ptr_array_index(g->states, by_rank[r]);
    g_hash_table_insert(l->state_base, GUINT_TO_POINTER(s->id),
                        GUINT_TO_POINTER(offset[r] + 1));
  }
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (!c->transient)
      continue;
    T4Live x = {.c = c};
    g_array_append_val(l->lives, x);
  }
  for (guint i = 0; i < l->lives->len; i++)
    g_hash_table_insert(l->by_name, g_array_index(l->lives, T4Live, i).c->name,
                        GUINT_TO_POINTER(i + 1));
  guint nl = l->lives->len;
  g_autofree guint *lo = g_new0(guint, nl ? nl : 1);
  g_autofree guint *hi = g_new0(guint, nl ? nl : 1);
  g_autofree guint *last_rank = g_new0(guint, nl ? nl : 1);

  for (guint r = 0; r < ns && nl > 0; r++) {
    const WeirState *s = g_ptr_array_index(g->states, by_rank[r]);
    const WeirScopes *sc = g_ptr_array_index(orders, r);
    g_autoptr(GHashTable) pos_of =
        g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint k = 0; k < sc->order->len; k++)
      g_hash_table_insert(pos_of,
                          GUINT_TO_POINTER(g_array_index(sc->order, guint, k)),
                          GUINT_TO_POINTER(offset[r] + k));
    for (guint k = 0; k < sc->order->len; k++) {
      const WeirNode *n =
          weir_state_node(s, g_array_index(sc->order, guint, k));
      if (n->kind != WEIR_NODE_ACCESS || !n->data)
        continue;
      guint idx = GPOINTER_TO_UINT(g_hash_table_lookup(l->by_name, n->data));
      if (!idx)
        continue;
      gboolean written = FALSE;
      for (guint j = 0; j < s->edges->len && !written; j++) {
        const WeirMemlet *m = g_ptr_array_index(s->edges, j);
        written = m->dst == n->id && m->data != NULL;
      }
      T4Live *x = &g_array_index(l->lives, T4Live, idx - 1);
      if (!x->accessed || last_rank[idx - 1] != r + 1) {
        x->n_states++;
        if (!x->accessed)
          x->state = s->id;
        last_rank[idx - 1] = r + 1;
      }
      live_touch(x, offset[r] + k, r, written, &lo[idx - 1], &hi[idx - 1]);
    }
    for (guint j = 0; j < s->edges->len; j++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, j);
      guint idx =
          m->data ? GPOINTER_TO_UINT(g_hash_table_lookup(l->by_name, m->data))
                  : 0;
      if (!idx)
        continue;
      T4Live *x = &g_array_index(l->lives, T4Live, idx - 1);
      if (!x->accessed || last_rank[idx - 1] != r + 1) {
        x->n_states++;
        if (!x->accessed)
          x->state = s->id;
        last_rank[idx - 1] = r + 1;
      }
      guint ps = GPOINTER_TO_UINT(
          g_hash_table_lookup(pos_of, GUINT_TO_POINTER(m->src)));
      guint pd = GPOINTER_TO_UINT(
          g_hash_table_lookup(pos_of, GUINT_TO_POINTER(m->dst)));
      live_touch(x, ps, r, !is_access(s, m->src), &lo[idx - 1], &hi[idx - 1]);
      live_touch(x, pd, r, FALSE, &lo[idx - 1], &hi[idx - 1]);
    }
  }

  l->all_known = TRUE;
  for (guint i = 0; i < nl; i++) {
    T4Live *x = &g_array_index(l->lives, T4Live, i);
    g_autoptr(WeirExpr) bytes = weir_container_bytes(x->c);
    x->bytes_known = weir_expr_eval(bytes, NULL, &x->bytes, NULL);
    if (!x->accessed)
      continue;
    l->all_known &= x->bytes_known;
    x->begin = x->first;
    x->end = x->last;
    if (weir_graph_condition_reads(g, x->c->name)) {
      /* a transition condition reads it: live throughout */
      x->carried = TRUE;
      x->begin = 0;
      x->end = l->npos ? l->npos - 1 : 0;
      x->n_states = MAX(x->n_states, 2);
      continue;
    }
    if (lo[i] == hi[i] && !x->first_is_read)
      continue;
    guint a = lo[i], b = hi[i];
    gboolean looped = weir_state_order_widen(so, &a, &b);
    if (looped) {
      x->carried = TRUE;
      x->begin = offset[a];
      x->end = offset[b + 1] - 1;
    }
  }
  return l;
}

void t4_liveness_free(T4Liveness *l) {
  if (!l)
    return;
  g_array_unref(l->lives);
  g_hash_table_unref(l->by_name);
  g_hash_table_unref(l->state_base);
  g_free(l);
}

const T4Live *t4_liveness_get(const T4Liveness *l, const char *name) {
  guint idx = GPOINTER_TO_UINT(g_hash_table_lookup(l->by_name, name));
  return idx ? &g_array_index(l->lives, T4Live, idx - 1) : NULL;
}

guint t4_liveness_state_base(const T4Liveness *l, guint state) {
  guint b = GPOINTER_TO_UINT(
      g_hash_table_lookup(l->state_base, GUINT_TO_POINTER(state)));
  g_return_val_if_fail(b > 0, 0);
  return b - 1;
}

gint64 *t4_liveness_sums(const T4Liveness *l) {
  gint64 *sums = g_new0(gint64, l->npos + 1);
  for (guint i = 0; i < l->lives->len; i++) {
    const T4Live *x = &g_array_index(l->lives, T4Live, i);
    if (!x->accessed || !x->bytes_known)
      continue;
    for (guint p = x->begin; p <= x->end && p < l->npos; p++)
      sums[p] += x->bytes;
  }
  return sums;
}

gint64 t4_max(const gint64 *sums, guint n) {
  gint64 m = 0;
  for (guint i = 0; i < n; i++)
    m = MAX(m, sums[i]);
  return m;
}

/* ------------------------------------------------------ subsets, memlets */

gboolean t4_range_is_single(const WeirRange *r) {
  g_autoptr(WeirExpr) size = weir_range_size(r);
  gint64 v;
  return weir_expr_is_const(size, &v) && v == 1;
}

gboolean t4_subset_is_single(const WeirSubset *s) {
  for (guint d = 0; d < s->rank; d++)
    if (!t4_range_is_single(&s->dims[d]))
      return FALSE;
  return TRUE;
}

gboolean t4_subset_is_full(const WeirSubset *s, const WeirContainer *c) {
  if (s->rank != c->shape->len)
    return FALSE;
  for (guint d = 0; d < s->rank; d++) {
    gint64 v;
    if (!weir_expr_is_const(s->dims[d].begin, &v) || v != 0 ||
        !weir_expr_is_const(s->dims[d].step, &v) || v != 1 ||
        !weir_expr_equal(s->dims[d].end, g_ptr_array_index(c->shape, d)))
      return FALSE;
  }
  return TRUE;
}

WeirSubset *t4_subset_new(guint rank) {
  WeirSubset *s = g_new0(WeirSubset, 1);
  s->rank = rank;
  s->dims = g_new0(WeirRange, rank ? rank : 1);
  return s;
}

void t4_range_set_index(WeirRange *r, WeirExpr *e) {
  r->begin = weir_expr_ref(e);
  r->end = weir_expr_add_const(e, 1);
  r->step = weir_expr_const(1);
}

gboolean t4_memlet_is_copy(const WeirState *s, const WeirMemlet *m) {
  return m->data && is_access(s, m->src) && is_access(s, m->dst);
}

/* For a copy: the access node at the end that m->data does not name (the
 * destination when both ends name it). */
static const WeirNode *copy_other_end(const WeirState *s, const WeirMemlet *m) {
  const WeirNode *a = weir_state_node(s, m->src);
  const WeirNode *b = weir_state_node(s, m->dst);
  if (g_strcmp0(a->data, m->data) == 0)
    return b;
  return a;
}

const WeirSubset *t4_memlet_subset_on(const WeirState *s, const WeirMemlet *m,
                                      const char *name) {
  if (!m->data)
    return NULL;
  if (strcmp(m->data, name) == 0)
    return m->subset;
  if (!t4_memlet_is_copy(s, m))
    return NULL;
  const WeirNode *o = copy_other_end(s, m);
  if (g_strcmp0(o->data, name) != 0)
    return NULL;
  return m->other ? m->other : m->subset;
}

void t4_memlet_replace_subset_on(const WeirState *s, WeirMemlet *m,
                                 const char *name, WeirSubset *sub) {
  if (strcmp(m->data, name) == 0) {
    if (t4_memlet_is_copy(s, m) && !m->other) {
      /* the other end kept the shared subset */
      m->other = m->subset;
    } else {
      weir_subset_free(m->subset);
    }
    m->subset = sub;
    return;
  }
  if (m->other)
    weir_subset_free(m->other);
  m->other = sub;
}

WeirMemlet *t4_memlet_clone(WeirGraph *g, WeirState *s, const WeirMemlet *m,
                            guint src, const char *src_conn, guint dst,
                            const char *dst_conn, GError **error) {
  g_autofree char *sub = m->data ? weir_subset_to_string(m->subset) : NULL;
  g_autofree char *sc = g_strdup(src_conn);
  g_autofree char *dc = g_strdup(dst_conn);
  g_autofree char *data = g_strdup(m->data);
  g_autoptr(WeirSubset) other = m->other ? weir_subset_copy(m->other) : NULL;
  g_autoptr(WeirExpr) volume = m->volume ? weir_expr_ref(m->volume) : NULL;
  gboolean dynamic = m->dynamic;
  WeirWcr wcr = m->wcr;
  WeirMemlet *n = weir_state_add_memlet(g, s, src, sc, dst, dc, data,
                                        sub ? sub : "", error);
  if (!n)
    return NULL;
  if (other) {
    g_autofree char *text = weir_subset_to_string(other);
    if (!weir_memlet_set_other(n, text, error))
      return NULL;
  }
  if (volume)
    weir_memlet_set_volume(n, volume);
  n->dynamic = dynamic;
  n->wcr = wcr;
  return n;
}

GArray *t4_access_nodes(const WeirState *s, const char *name) {
  GArray *out = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, name) == 0)
      g_array_append_val(out, n->id);
  }
  return out;
}

guint t4_states_using(const WeirGraph *g, const char *name,
                      const WeirState **state_out) {
  guint count = 0;
  if (state_out)
    *state_out = NULL;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    gboolean used = FALSE;
    for (guint k = 0; k < s->nodes->len && !used; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      used = n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, name) == 0;
    }
    for (guint k = 0; k < s->edges->len && !used; k++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, k);
      used = g_strcmp0(m->data, name) == 0;
    }
    if (used) {
      if (count == 0 && state_out)
        *state_out = s;
      count++;
    }
  }
  return count;
}

gboolean t4_concrete_shape(const WeirContainer *c, gint64 *out) {
  for (guint d = 0; d < c->shape->len; d++)
    if (!weir_expr_eval(g_ptr_array_index(c->shape, d), NULL, &out[d], NULL))
      return FALSE;
  return TRUE;
}
