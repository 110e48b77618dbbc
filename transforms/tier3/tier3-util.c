/* tier3-util.c — helpers shared by the tier-3 transformations (see
 * tier3-util.h). */
#include <string.h>

#include "tier3-util.h"

/* -------------------------------------------------------------- queries */

static GPtrArray *edges_of(const WeirState *s, guint id, const char *conn,
                           gboolean in) {
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if ((in ? m->dst : m->src) != id)
      continue;
    if (conn && g_strcmp0(in ? m->dst_conn : m->src_conn, conn) != 0)
      continue;
    g_ptr_array_add(out, m);
  }
  return out;
}

GPtrArray *tier3_edges_in(const WeirState *s, guint id, const char *conn) {
  return edges_of(s, id, conn, TRUE);
}

GPtrArray *tier3_edges_out(const WeirState *s, guint id, const char *conn) {
  return edges_of(s, id, conn, FALSE);
}

gboolean tier3_in_scope(const WeirScopes *sc, guint entry, guint node) {
  for (guint p = weir_scopes_parent(sc, node); p; p = weir_scopes_parent(sc, p))
    if (p == entry)
      return TRUE;
  return FALSE;
}

GArray *tier3_scope_body(const WeirState *s, const WeirScopes *sc,
                         guint entry) {
  GArray *body = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (tier3_in_scope(sc, entry, n->id))
      g_array_append_val(body, n->id);
  }
  return body;
}

GHashTable *tier3_reachable(const WeirState *s, guint start,
                            GHashTable *blocked) {
  GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(guint));
  g_array_append_val(stack, start);
  while (stack->len > 0) {
    guint id = g_array_index(stack, guint, stack->len - 1);
    g_array_set_size(stack, stack->len - 1);
    for (guint i = 0; i < s->edges->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, i);
      if (m->src != id ||
          (blocked && g_hash_table_contains(blocked, GUINT_TO_POINTER(m->id))))
        continue;
      if (g_hash_table_add(seen, GUINT_TO_POINTER(m->dst)))
        g_array_append_val(stack, m->dst);
    }
  }
  return seen;
}

gboolean tier3_container_used(const WeirGraph *g, const char *data) {
  if (weir_graph_condition_reads(g, data))
    return TRUE;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, data) == 0)
        return TRUE;
    }
    for (guint k = 0; k < s->edges->len; k++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, k);
      if (g_strcmp0(m->data, data) == 0)
        return TRUE;
    }
  }
  return FALSE;
}

char *tier3_pair_conn(const char *conn) {
  if (!conn)
    return NULL;
  if (g_str_has_prefix(conn, "IN_"))
    return g_strconcat("OUT_", conn + 3, NULL);
  if (g_str_has_prefix(conn, "OUT_"))
    return g_strconcat("IN_", conn + 4, NULL);
  return NULL;
}

char *tier3_fresh_conn_suffix(const WeirNode *n, const char *base) {
  for (guint k = 0;; k++) {
    g_autofree char *suffix =
        k ? g_strdup_printf("%s_%u", base, k) : g_strdup(base);
    g_autofree char *in = g_strconcat("IN_", suffix, NULL);
    g_autofree char *out = g_strconcat("OUT_", suffix, NULL);
    if (!weir_node_has_in_conn(n, in) && !weir_node_has_out_conn(n, in) &&
        !weir_node_has_in_conn(n, out) && !weir_node_has_out_conn(n, out))
      return g_steal_pointer(&suffix);
  }
}

static int cmp_strp(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static GPtrArray *names_of(GPtrArray *edges) {
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(edges, i);
    if (m->data && !tier3_names_contain(names, m->data)) {
      g_ptr_array_add(names, g_strdup(m->data));
      g_ptr_array_sort(names, cmp_strp);
    }
  }
  return names;
}

GPtrArray *tier3_map_reads(const WeirState *s, const WeirNode *entry) {
  g_autoptr(GPtrArray) in = tier3_edges_in(s, entry->id, NULL);
  return names_of(in);
}

GPtrArray *tier3_map_writes(const WeirState *s, const WeirNode *exit) {
  g_autoptr(GPtrArray) out = tier3_edges_out(s, exit->id, NULL);
  return names_of(out);
}

gboolean tier3_names_contain(GPtrArray *names, const char *name) {
  for (guint i = 0; i < names->len; i++)
    if (strcmp(g_ptr_array_index(names, i), name) == 0)
      return TRUE;
  return FALSE;
}

char *tier3_subset_text(const char *data, const WeirSubset *sub) {
  g_autofree char *text = weir_subset_to_string(sub);
  return g_strdup_printf("%s[%s]", data, text);
}

WeirSubset *tier3_subset_union(const WeirSubset *a, const WeirSubset *b) {
  if (weir_subset_equal(a, b) || a->rank != b->rank)
    return weir_subset_copy(a);
  WeirSubset *u = g_new0(WeirSubset, 1);
  u->rank = a->rank;
  u->dims = g_new0(WeirRange, a->rank);
  for (guint d = 0; d < a->rank; d++) {
    const WeirRange *ra = &a->dims[d], *rb = &b->dims[d];
    gboolean same = weir_expr_equal(ra->begin, rb->begin) &&
                    weir_expr_equal(ra->end, rb->end) &&
                    weir_expr_equal(ra->step, rb->step);
    if (same) {
      weir_range_copy(ra, &u->dims[d]);
      continue;
    }
    u->dims[d].begin = weir_expr_min(ra->begin, rb->begin);
    u->dims[d].end = weir_expr_max(ra->end, rb->end);
    u->dims[d].step = weir_expr_const(1);
  }
  return u;
}

/* -------------------------------------------------------- parameters */

static gboolean range_equal(const WeirRange *a, const WeirRange *b) {
  return weir_expr_equal(a->begin, b->begin) &&
         weir_expr_equal(a->end, b->end) && weir_expr_equal(a->step, b->step);
}

static gint param_index(const WeirMap *m, const char *name) {
  for (guint i = 0; i < m->params->len; i++)
    if (strcmp(g_ptr_array_index(m->params, i), name) == 0)
      return (gint)i;
  return -1;
}

static char *describe_params(const WeirMap *m) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < m->params->len; i++) {
    g_autofree char *r =
        weir_range_to_string(&g_array_index(m->ranges, WeirRange, i));
    g_string_append_printf(s, "%s%s in %s", i ? ", " : "",
                           (char *)g_ptr_array_index(m->params, i), r);
  }
  return g_string_free(s, FALSE);
}

GHashTable *tier3_pair_params(const WeirMap *a, const WeirMap *b,
                              const WeirSubset *hint_a,
                              const WeirSubset *hint_b, gboolean allow_extra,
                              char **reason) {
  guint na = a->params->len, nb = b->params->len;
  g_autofree char *da = describe_params(a);
  g_autofree char *db = describe_params(b);
  if (allow_extra ? na > nb : na != nb) {
    tier3_reason(reason, "different ranges: %s against %s", da, db);
    return NULL;
  }
  g_autofree gint *to_b = g_new(gint, na ? na : 1);
  g_autofree gboolean *used = g_new0(gboolean, nb ? nb : 1);
  for (guint i = 0; i < na; i++)
    to_b[i] = -1;
  if (hint_a && hint_b && hint_a->rank == hint_b->rank) {
    for (guint d = 0; d < hint_a->rank; d++) {
      const WeirExpr *ea = hint_a->dims[d].begin, *eb = hint_b->dims[d].begin;
      if (weir_expr_kind(ea) != WEIR_EXPR_SYMBOL ||
          weir_expr_kind(eb) != WEIR_EXPR_SYMBOL)
        continue;
      gint ia = param_index(a, weir_expr_symbol_name(ea));
      gint ib = param_index(b, weir_expr_symbol_name(eb));
      if (ia < 0 || ib < 0 || to_b[ia] >= 0 || used[ib])
        continue;
      if (!range_equal(&g_array_index(a->ranges, WeirRange, ia),
                       &g_array_index(b->ranges, WeirRange, ib)))
        continue;
      to_b[ia] = ib;
      used[ib] = TRUE;
    }
  }
  for (guint i = 0; i < na; i++) {
    if (to_b[i] >= 0)
      continue;
    const WeirRange *ra = &g_array_index(a->ranges, WeirRange, i);
    for (guint k = 0; k < nb && to_b[i] < 0; k++) {
      if (used[k] || !range_equal(ra, &g_array_index(b->ranges, WeirRange, k)))
        continue;
      to_b[i] = (gint)k;
      used[k] = TRUE;
    }
    if (to_b[i] < 0) {
      tier3_reason(reason, "different ranges: %s against %s", da, db);
      return NULL;
    }
  }
  GHashTable *pairs =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (guint i = 0; i < na; i++)
    g_hash_table_insert(pairs, g_strdup(g_ptr_array_index(a->params, i)),
                        g_strdup(g_ptr_array_index(b->params, to_b[i])));
  return pairs;
}

GHashTable *tier3_param_substitution(GHashTable *pairs) {
  GHashTable *map = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                          (GDestroyNotify)weir_expr_unref);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, pairs);
  /* Insertion order does not matter: this is a lookup table. */
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(map, g_strdup(k), weir_expr_symbol(v));
  return map;
}

GHashTable *tier3_point_substitution(const WeirMap *map) {
  GHashTable *sub = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                          (GDestroyNotify)weir_expr_unref);
  for (guint i = 0; i < map->params->len; i++) {
    const WeirRange *r = &g_array_index(map->ranges, WeirRange, i);
    g_autoptr(WeirExpr) size = weir_range_size(r);
    gint64 v;
    if (weir_expr_is_const(size, &v) && v == 1)
      g_hash_table_insert(sub, g_strdup(g_ptr_array_index(map->params, i)),
                          weir_expr_ref(r->begin));
  }
  return sub;
}

char *tier3_check_nested_params(const WeirState *s, const WeirScopes *sc,
                                guint entry, GPtrArray *names) {
  g_autoptr(GArray) body = tier3_scope_body(s, sc, entry);
  for (guint i = 0; i < body->len; i++) {
    const WeirNode *n = weir_state_node(s, g_array_index(body, guint, i));
    if (n->kind != WEIR_NODE_MAP_ENTRY)
      continue;
    for (guint k = 0; k < n->map->params->len; k++) {
      const char *p = g_ptr_array_index(n->map->params, k);
      for (guint j = 0; j < names->len; j++)
        if (strcmp(p, g_ptr_array_index(names, j)) == 0)
          return g_strdup_printf("nested map '%s' (node %u) has a parameter "
                                 "'%s' that the merged map also uses",
                                 n->label, n->id, p);
    }
  }
  return NULL;
}

/* ------------------------------------------------------------- code */

typedef struct {
  const WeirNode *tasklet;
  GHashTable *locals; /* original names assigned so far */
  Tier3RenameFunc rename;
  gpointer user;
} RenameCtx;

static gboolean conn_list_has(GPtrArray *conns, const char *name) {
  for (guint i = 0; i < conns->len; i++)
    if (strcmp(g_ptr_array_index(conns, i), name) == 0)
      return TRUE;
  return FALSE;
}

static void set_name(WeirAst *n, Tier3NameRole role, RenameCtx *c) {
  const char *to = c->rename(n->name, role, c->user);
  if (to && strcmp(to, n->name) != 0) {
    g_free(n->name);
    n->name = g_strdup(to);
  }
}

static void rename_expr(WeirAst *n, RenameCtx *c) {
  if (!n)
    return;
  if (n->args)
    for (guint i = 0; i < n->args->len; i++)
      rename_expr(g_ptr_array_index(n->args, i), c);
  rename_expr(n->a, c);
  rename_expr(n->b, c);
  rename_expr(n->c, c);
  if (n->kind != WEIR_AST_NAME && n->kind != WEIR_AST_INDEX)
    return;
  Tier3NameRole role;
  if (g_hash_table_contains(c->locals, n->name))
    role = TIER3_NAME_LOCAL;
  else if (conn_list_has(c->tasklet->in_conns, n->name))
    role = TIER3_NAME_INPUT;
  else if (conn_list_has(c->tasklet->out_conns, n->name))
    role = TIER3_NAME_OUTPUT;
  else
    role = TIER3_NAME_SYMBOL;
  set_name(n, role, c);
}

void tier3_code_rename(WeirCode *code, const WeirNode *tasklet,
                       Tier3RenameFunc rename, gpointer user) {
  g_autoptr(GHashTable) locals =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  RenameCtx c = {tasklet, locals, rename, user};
  if (code->expr)
    rename_expr(code->expr, &c);
  for (guint i = 0; i < code->stmts->len; i++) {
    WeirStmt *st = g_ptr_array_index(code->stmts, i);
    rename_expr(st->value, &c);
    WeirAst *t = st->target;
    if (t->args)
      for (guint k = 0; k < t->args->len; k++)
        rename_expr(g_ptr_array_index(t->args, k), &c);
    Tier3NameRole role;
    if (g_hash_table_contains(locals, t->name))
      role = TIER3_NAME_LOCAL;
    else if (conn_list_has(tasklet->out_conns, t->name))
      role = TIER3_NAME_OUTPUT;
    else {
      role = TIER3_NAME_LOCAL;
      g_hash_table_add(locals, g_strdup(t->name));
    }
    set_name(t, role, &c);
  }
}

GArray *tier3_code_target_roles(const WeirCode *code, const WeirNode *tasklet) {
  GArray *roles = g_array_new(FALSE, FALSE, sizeof(Tier3NameRole));
  g_autoptr(GHashTable) locals = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(code->stmts, i);
    const char *t = st->target->name;
    Tier3NameRole role = TIER3_NAME_LOCAL;
    if (!g_hash_table_contains(locals, t)) {
      if (conn_list_has(tasklet->out_conns, t))
        role = TIER3_NAME_OUTPUT;
      else
        g_hash_table_add(locals, (gpointer)t);
    }
    g_array_append_val(roles, role);
  }
  return roles;
}

static void names_expr(const WeirAst *n, GHashTable *set) {
  if (!n)
    return;
  if (n->name)
    g_hash_table_add(set, g_strdup(n->name));
  if (n->args)
    for (guint i = 0; i < n->args->len; i++)
      names_expr(g_ptr_array_index(n->args, i), set);
  names_expr(n->a, set);
  names_expr(n->b, set);
  names_expr(n->c, set);
}

void tier3_code_names(const WeirCode *code, GHashTable *set) {
  names_expr(code->expr, set);
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(code->stmts, i);
    names_expr(st->target, set);
    names_expr(st->value, set);
  }
}

typedef struct {
  GHashTable *pairs;
  GHashTable *symbols; /* renamed symbols the body reads: new names */
  GHashTable *names;   /* locals and connectors */
} CaptureCtx;

static const char *note_names(const char *name, Tier3NameRole role,
                              gpointer user) {
  CaptureCtx *c = user;
  if (role == TIER3_NAME_SYMBOL) {
    const char *to = g_hash_table_lookup(c->pairs, name);
    if (to && strcmp(to, name) != 0)
      g_hash_table_add(c->symbols, (gpointer)to);
  } else {
    g_hash_table_add(c->names, g_strdup(name));
  }
  return NULL;
}

char *tier3_check_rename_capture(const WeirState *s, const WeirScopes *sc,
                                 guint entry, GHashTable *pairs) {
  g_autoptr(GArray) body = tier3_scope_body(s, sc, entry);
  for (guint i = 0; i < body->len; i++) {
    const WeirNode *n = weir_state_node(s, g_array_index(body, guint, i));
    if (n->kind != WEIR_NODE_TASKLET || !n->code)
      continue;
    g_autoptr(WeirCode) code = weir_code_copy(n->code);
    CaptureCtx c = {
        pairs, g_hash_table_new(g_str_hash, g_str_equal),
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL)};
    tier3_code_rename(code, n, note_names, &c);
    for (guint k = 0; k < n->in_conns->len; k++)
      g_hash_table_add(c.names, g_strdup(g_ptr_array_index(n->in_conns, k)));
    for (guint k = 0; k < n->out_conns->len; k++)
      g_hash_table_add(c.names, g_strdup(g_ptr_array_index(n->out_conns, k)));
    /* Sorted for a deterministic message. */
    g_autoptr(GPtrArray) hit = g_ptr_array_new();
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, c.symbols);
    while (g_hash_table_iter_next(&it, &key, NULL))
      if (g_hash_table_contains(c.names, key))
        g_ptr_array_add(hit, key);
    g_ptr_array_sort(hit, cmp_strp);
    char *reason = NULL;
    if (hit->len > 0)
      reason =
          g_strdup_printf("tasklet '%s' (node %u) has a connector or "
                          "local named '%s', like the parameter it "
                          "would read after the merge",
                          n->label, n->id, (char *)g_ptr_array_index(hit, 0));
    g_hash_table_unref(c.symbols);
    g_hash_table_unref(c.names);
    if (reason)
      return reason;
  }
  return NULL;
}

/* ---------------------------------------------------------- editing */

static const char *rename_symbol(const char *name, Tier3NameRole role,
                                 gpointer user) {
  GHashTable *map = user;
  if (role != TIER3_NAME_SYMBOL)
    return NULL;
  WeirExpr *e = g_hash_table_lookup(map, name);
  if (e && weir_expr_kind(e) == WEIR_EXPR_SYMBOL)
    return weir_expr_symbol_name(e);
  return NULL;
}

static void substitute_memlet(WeirMemlet *m, GHashTable *map) {
  if (m->subset) {
    WeirSubset *sub = weir_subset_substitute(m->subset, map);
    weir_subset_free(m->subset);
    m->subset = sub;
  }
  if (m->other) {
    WeirSubset *sub = weir_subset_substitute(m->other, map);
    weir_subset_free(m->other);
    m->other = sub;
  }
  if (m->volume) {
    g_autoptr(WeirExpr) v = weir_expr_substitute(m->volume, map);
    weir_memlet_set_volume(m, v);
  }
}

static gboolean substitute_node(WeirNode *n, GHashTable *map, GError **error) {
  if (n->kind == WEIR_NODE_TASKLET && n->code) {
    g_autoptr(WeirCode) code = weir_code_copy(n->code);
    tier3_code_rename(code, n, rename_symbol, map);
    g_autofree char *before = weir_code_to_string(n->code);
    g_autofree char *after = weir_code_to_string(code);
    if (strcmp(before, after) != 0)
      weir_tasklet_set_code(n, after);
  } else if (n->kind == WEIR_NODE_MAP_ENTRY) {
    for (guint i = 0; i < n->map->ranges->len; i++) {
      WeirRange *r = &g_array_index(n->map->ranges, WeirRange, i);
      WeirRange nr = {weir_expr_substitute(r->begin, map),
                      weir_expr_substitute(r->end, map),
                      weir_expr_substitute(r->step, map)};
      weir_range_clear(r);
      *r = nr;
    }
  } else if (n->kind == WEIR_NODE_NESTED) {
    for (guint i = 0; i < n->symbol_map->len; i++) {
      const WeirSymbolBinding *b = g_ptr_array_index(n->symbol_map, i);
      g_autoptr(WeirExpr) v = weir_expr_substitute(b->value, map);
      if (weir_expr_equal(v, b->value))
        continue;
      g_autofree char *text = weir_expr_to_string(v);
      g_autofree char *name = g_strdup(b->name);
      if (!weir_node_bind_symbol(n, name, text, error))
        return FALSE;
    }
  }
  return TRUE;
}

gboolean tier3_substitute_scope(WeirGraph *g, WeirState *s,
                                const WeirScopes *sc, guint entry,
                                GHashTable *map, GError **error) {
  (void)g;
  WeirNode *en = weir_state_node(s, entry);
  WeirNode *ex = weir_state_map_exit(s, en);
  g_autoptr(GArray) body = tier3_scope_body(s, sc, entry);
  g_autoptr(GHashTable) inside = g_hash_table_new(g_direct_hash, NULL);
  for (guint i = 0; i < body->len; i++)
    g_hash_table_add(inside, GUINT_TO_POINTER(g_array_index(body, guint, i)));
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->src == entry || (ex && m->dst == ex->id) ||
        (g_hash_table_contains(inside, GUINT_TO_POINTER(m->src)) &&
         g_hash_table_contains(inside, GUINT_TO_POINTER(m->dst))))
      substitute_memlet(m, map);
  }
  for (guint i = 0; i < body->len; i++)
    if (!substitute_node(weir_state_node(s, g_array_index(body, guint, i)), map,
                         error))
      return FALSE;
  return TRUE;
}

WeirExpr *tier3_map_size(const WeirMap *map) {
  WeirExpr *size = weir_expr_const(1);
  for (guint i = 0; i < map->ranges->len; i++) {
    g_autoptr(WeirExpr) r =
        weir_range_size(&g_array_index(map->ranges, WeirRange, i));
    WeirExpr *next = weir_expr_mul(size, r);
    weir_expr_unref(size);
    size = next;
  }
  return size;
}

/* Copies memlet m with new ends (text of subsets through the printer). */
static WeirMemlet *copy_memlet(WeirGraph *g, WeirState *s, const WeirMemlet *m,
                               guint src, const char *src_conn, guint dst,
                               const char *dst_conn, GError **error) {
  g_autofree char *sub = m->subset ? weir_subset_to_string(m->subset) : NULL;
  WeirMemlet *c = weir_state_add_memlet(g, s, src, src_conn, dst, dst_conn,
                                        m->data, sub, error);
  if (!c)
    return NULL;
  if (m->other) {
    g_autofree char *other = weir_subset_to_string(m->other);
    if (!weir_memlet_set_other(c, other, error))
      return NULL;
  }
  weir_memlet_set_volume(c, m->volume);
  c->dynamic = m->dynamic;
  c->wcr = m->wcr;
  return c;
}

/* Sum of the volumes of the memlets in edges, times size. (transfer full) */
static WeirExpr *inner_volume(GPtrArray *edges, WeirExpr *size) {
  g_autoptr(WeirExpr) sum = weir_expr_const(0);
  for (guint i = 0; i < edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(edges, i);
    WeirExpr *next = weir_expr_add(sum, m->volume);
    weir_expr_unref(sum);
    sum = next;
  }
  return weir_expr_mul(sum, size);
}

static gboolean has_empty_edge(const WeirState *s, guint src, guint dst) {
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->src == src && m->dst == dst && !m->data && !m->src_conn &&
        !m->dst_conn)
      return TRUE;
  }
  return FALSE;
}

static const char *conn_base(const WeirMemlet *m, const char *conn) {
  if (m->data)
    return m->data;
  if (g_str_has_prefix(conn, "IN_"))
    return conn + 3;
  if (g_str_has_prefix(conn, "OUT_"))
    return conn + 4;
  return conn;
}

/* An input of dst_entry that already reads what m (entering the moved
 * entry) reads: same source node, connector and container. */
static WeirMemlet *shared_input(const WeirState *s, const WeirNode *dst_entry,
                                const WeirMemlet *m) {
  g_autoptr(GPtrArray) in = tier3_edges_in(s, dst_entry->id, NULL);
  for (guint i = 0; i < in->len; i++) {
    WeirMemlet *d = g_ptr_array_index(in, i);
    if (d->data && d->dst_conn && d->src == m->src &&
        g_strcmp0(d->src_conn, m->src_conn) == 0 &&
        g_strcmp0(d->data, m->data) == 0)
      return d;
  }
  return NULL;
}

static gboolean merge_inputs(WeirGraph *g, WeirState *s, WeirNode *se,
                             WeirNode *de, WeirExpr *size, gboolean same,
                             GError **error) {
  g_autoptr(GPtrArray) ins = tier3_edges_in(s, se->id, NULL);
  for (guint i = 0; i < ins->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(ins, i);
    if (!m->dst_conn) {
      if (!has_empty_edge(s, m->src, de->id) &&
          !weir_state_add_memlet(g, s, m->src, m->src_conn, de->id, NULL, NULL,
                                 NULL, error))
        return FALSE;
      continue;
    }
    g_autofree char *out_conn = tier3_pair_conn(m->dst_conn);
    g_autoptr(GPtrArray) inner = tier3_edges_out(s, se->id, out_conn);
    WeirMemlet *shared = m->data ? shared_input(s, de, m) : NULL;
    g_autofree char *dst_out = NULL;
    if (shared) {
      dst_out = tier3_pair_conn(shared->dst_conn);
      g_autoptr(GPtrArray) have = tier3_edges_out(s, de->id, dst_out);
      gboolean dup = TRUE;
      for (guint k = 0; k < inner->len && dup; k++) {
        const WeirMemlet *mi = g_ptr_array_index(inner, k);
        gboolean found = FALSE;
        for (guint j = 0; j < have->len && !found; j++) {
          const WeirMemlet *h = g_ptr_array_index(have, j);
          found = h->subset && mi->subset &&
                  weir_subset_equal(h->subset, mi->subset);
        }
        dup = found;
      }
      WeirSubset *u = tier3_subset_union(shared->subset, m->subset);
      weir_subset_free(shared->subset);
      shared->subset = u;
      if (!dup) {
        g_autoptr(WeirExpr) extra =
            same ? weir_expr_ref(m->volume) : inner_volume(inner, size);
        g_autoptr(WeirExpr) v = weir_expr_add(shared->volume, extra);
        weir_memlet_set_volume(shared, v);
      }
      shared->dynamic = shared->dynamic || m->dynamic;
    } else {
      g_autofree char *suffix =
          tier3_fresh_conn_suffix(de, conn_base(m, m->dst_conn));
      g_autofree char *in_conn = g_strconcat("IN_", suffix, NULL);
      dst_out = g_strconcat("OUT_", suffix, NULL);
      weir_node_add_in_conn(de, in_conn);
      weir_node_add_out_conn(de, dst_out);
      WeirMemlet *c =
          copy_memlet(g, s, m, m->src, m->src_conn, de->id, in_conn, error);
      if (!c)
        return FALSE;
      if (!same && m->data) {
        g_autoptr(WeirExpr) v = inner_volume(inner, size);
        weir_memlet_set_volume(c, v);
      }
    }
    for (guint k = 0; k < inner->len; k++) {
      const WeirMemlet *mi = g_ptr_array_index(inner, k);
      if (!copy_memlet(g, s, mi, de->id, dst_out, mi->dst, mi->dst_conn, error))
        return FALSE;
    }
  }
  /* Inner memlets without a connector (nodes that read nothing). */
  g_autoptr(GPtrArray) outs = tier3_edges_out(s, se->id, NULL);
  for (guint i = 0; i < outs->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(outs, i);
    if (!m->src_conn &&
        !copy_memlet(g, s, m, de->id, NULL, m->dst, m->dst_conn, error))
      return FALSE;
  }
  return TRUE;
}

static gboolean merge_outputs(WeirGraph *g, WeirState *s, WeirNode *sx,
                              WeirNode *dx, WeirExpr *size, gboolean same,
                              GError **error) {
  g_autoptr(GPtrArray) ins = tier3_edges_in(s, sx->id, NULL);
  g_autoptr(GPtrArray) done = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < ins->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(ins, i);
    if (!m->dst_conn) {
      if (!copy_memlet(g, s, m, m->src, m->src_conn, dx->id, NULL, error))
        return FALSE;
      continue;
    }
    if (tier3_names_contain(done, m->dst_conn))
      continue;
    g_ptr_array_add(done, g_strdup(m->dst_conn));
    g_autoptr(GPtrArray) inner = tier3_edges_in(s, sx->id, m->dst_conn);
    g_autofree char *out_conn = tier3_pair_conn(m->dst_conn);
    g_autoptr(GPtrArray) outer = tier3_edges_out(s, sx->id, out_conn);
    g_autofree char *suffix =
        tier3_fresh_conn_suffix(dx, conn_base(m, m->dst_conn));
    g_autofree char *in_conn = g_strconcat("IN_", suffix, NULL);
    g_autofree char *dst_out = g_strconcat("OUT_", suffix, NULL);
    weir_node_add_in_conn(dx, in_conn);
    weir_node_add_out_conn(dx, dst_out);
    for (guint k = 0; k < inner->len; k++) {
      const WeirMemlet *mi = g_ptr_array_index(inner, k);
      if (!copy_memlet(g, s, mi, mi->src, mi->src_conn, dx->id, in_conn, error))
        return FALSE;
    }
    for (guint k = 0; k < outer->len; k++) {
      const WeirMemlet *mo = g_ptr_array_index(outer, k);
      WeirMemlet *c =
          copy_memlet(g, s, mo, dx->id, dst_out, mo->dst, mo->dst_conn, error);
      if (!c)
        return FALSE;
      if (!same && mo->data) {
        g_autoptr(WeirExpr) v = inner_volume(inner, size);
        weir_memlet_set_volume(c, v);
      }
    }
  }
  g_autoptr(GPtrArray) outs = tier3_edges_out(s, sx->id, NULL);
  for (guint i = 0; i < outs->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(outs, i);
    if (!m->src_conn && !has_empty_edge(s, dx->id, m->dst) &&
        !copy_memlet(g, s, m, dx->id, NULL, m->dst, m->dst_conn, error))
      return FALSE;
  }
  return TRUE;
}

gboolean tier3_merge_scope(WeirGraph *g, WeirState *s, WeirNode *src_entry,
                           WeirNode *dst_entry, GError **error) {
  WeirNode *sx = weir_state_map_exit(s, src_entry);
  WeirNode *dx = weir_state_map_exit(s, dst_entry);
  g_return_val_if_fail(sx && dx, FALSE);
  g_autoptr(WeirExpr) size = tier3_map_size(dst_entry->map);
  g_autoptr(WeirExpr) src_size = tier3_map_size(src_entry->map);
  gboolean same = weir_expr_equal(size, src_size);
  if (!merge_inputs(g, s, src_entry, dst_entry, size, same, error) ||
      !merge_outputs(g, s, sx, dx, size, same, error))
    return FALSE;
  guint sx_id = sx->id;
  weir_state_remove_node(s, src_entry->id);
  weir_state_remove_node(s, sx_id);
  return TRUE;
}

gint tier3_cmp_uint(gconstpointer a, gconstpointer b) {
  guint x = *(const guint *)a, y = *(const guint *)b;
  return x < y ? -1 : x > y;
}

void tier3_site_add(GArray *sites, guint state, guint n, const guint *nodes) {
  WeirSite site = {0};
  site.state = state;
  site.n_nodes = MIN(n, WEIR_SITE_MAX_NODES);
  for (guint i = 0; i < site.n_nodes; i++)
    site.nodes[i] = nodes[i];
  g_array_append_val(sites, site);
}

gboolean tier3_reason(char **reason, const char *fmt, ...) {
  if (reason) {
    va_list ap;
    va_start(ap, fmt);
    g_free(*reason);
    *reason = g_strdup_vprintf(fmt, ap);
    va_end(ap);
  }
  return FALSE;
}
