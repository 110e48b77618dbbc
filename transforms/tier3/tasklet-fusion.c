/* tasklet-fusion.c — merging two tasklets of one scope where the first
 * feeds the second.
 *
 * Site: [A, B], two tasklets of one state and scope, where A writes a
 * single element that B reads, either through a direct memlet (as
 * map-fusion leaves them) or through an access node.  B becomes the fused
 * tasklet (keeping its id and label) and A goes.  Its body is A's
 * statements followed by B's, built on the AST: each value A writes for B
 * becomes a local (converted to the element's dtype, as the write did), B's
 * reads of it read the local, and names that would clash are renamed.  The
 * intermediate access node and its container disappear when nothing else uses
 * them; otherwise A's write is kept.  Inputs that A and B read through
 * identical memlets are read once.
 *
 * Legality: same scope; every memlet from A to B (directly or through an
 * access node written only by A) moves one element without WCR, and B reads
 * exactly the element A writes; B does not depend on A through any other
 * path (merging would make a cycle); both bodies parse.
 */
#include <string.h>

#include "tier3-util.h"
#include "weir-validate.h"

gboolean weir_tier3_register_tasklet_fusion(GError **error);

/* One value A hands to B. */
typedef struct {
  char *out;       /* A's output connector */
  char *in;        /* B's input connector */
  guint access;    /* intermediate access node, or 0 for a direct memlet */
  guint write;     /* memlet A -> access (0 when direct) */
  guint read;      /* memlet into B */
  WeirDType dtype; /* dtype of the element */
} Channel;

static void channel_free(gpointer p) {
  Channel *c = p;
  g_free(c->out);
  g_free(c->in);
  g_free(c);
}

typedef struct {
  WeirState *s;
  WeirNode *a, *b;
  GPtrArray *channels; /* Channel*, by id of the memlet into B */
} Plan;

static void plan_clear(Plan *p) {
  g_clear_pointer(&p->channels, g_ptr_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Plan, plan_clear)

/* Adds the channel through memlet r (into B), written by memlet w (out of
 * A; w == r for a direct memlet). */
static gboolean add_channel(const WeirGraph *g, Plan *p, const WeirMemlet *w,
                            const WeirMemlet *r, char **reason) {
  const char *a = p->a->label, *b = p->b->label;
  const WeirContainer *c = weir_graph_container(g, r->data);
  if (!c || !w->subset || !r->subset)
    return tier3_reason(reason, "memlet %u names an unknown container", r->id);
  if (w->wcr != WEIR_WCR_NONE)
    return tier3_reason(reason, "'%s' is written with wcr '%s' by tasklet '%s'",
                        w->data, weir_wcr_name(w->wcr), a);
  if (!weir_subset_is_point(w->subset)) {
    g_autofree char *wt = tier3_subset_text(w->data, w->subset);
    return tier3_reason(reason,
                        "tasklet '%s' writes more than one element (%s) for "
                        "tasklet '%s'",
                        a, wt, b);
  }
  if (!weir_subset_equal(w->subset, r->subset)) {
    g_autofree char *wt = tier3_subset_text(w->data, w->subset);
    g_autofree char *rt = tier3_subset_text(r->data, r->subset);
    return tier3_reason(reason,
                        "tasklet '%s' reads %s, at other indices than tasklet "
                        "'%s' writes (%s)",
                        b, rt, a, wt);
  }
  Channel *ch = g_new0(Channel, 1);
  ch->out = g_strdup(w->src_conn);
  ch->in = g_strdup(r->dst_conn);
  ch->access = w == r ? 0 : w->dst;
  ch->write = w == r ? 0 : w->id;
  ch->read = r->id;
  ch->dtype = c->dtype;
  g_ptr_array_add(p->channels, ch);
  return TRUE;
}

static gboolean plan(const WeirGraph *g, const WeirSite *site, Plan *p,
                     char **reason) {
  WeirState *s = site->n_nodes == 2 ? weir_graph_state(g, site->state) : NULL;
  if (s) {
    p->s = s;
    p->a = weir_state_node(s, site->nodes[0]);
    p->b = weir_state_node(s, site->nodes[1]);
  }
  if (!s || !p->a || !p->b || p->a == p->b || p->a->kind != WEIR_NODE_TASKLET ||
      p->b->kind != WEIR_NODE_TASKLET)
    return tier3_reason(reason, "the site is not two tasklets of one state");
  const char *a = p->a->label, *b = p->b->label;
  if (!p->a->code || !p->b->code)
    return tier3_reason(reason, "the body of tasklet '%s' does not parse",
                        p->a->code ? b : a);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, &error);
  if (!sc)
    return tier3_reason(reason, "%s", error->message);
  if (weir_scopes_parent(sc, p->a->id) != weir_scopes_parent(sc, p->b->id))
    return tier3_reason(reason,
                        "tasklets '%s' and '%s' are in different scopes", a, b);

  p->channels = g_ptr_array_new_with_free_func(channel_free);
  g_autoptr(GHashTable) blocked = g_hash_table_new(g_direct_hash, NULL);
  g_autoptr(GPtrArray) b_in = tier3_edges_in(s, p->b->id, NULL);
  for (guint i = 0; i < b_in->len; i++) {
    const WeirMemlet *r = g_ptr_array_index(b_in, i);
    if (r->src == p->a->id) {
      g_hash_table_add(blocked, GUINT_TO_POINTER(r->id));
      if (r->data && !add_channel(g, p, r, r, reason))
        return FALSE;
      continue;
    }
    const WeirNode *acc = weir_state_node(s, r->src);
    if (!r->data || acc->kind != WEIR_NODE_ACCESS)
      continue;
    g_autoptr(GPtrArray) writes = tier3_edges_in(s, acc->id, NULL);
    gboolean from_a = FALSE;
    for (guint k = 0; k < writes->len; k++)
      from_a =
          from_a ||
          ((const WeirMemlet *)g_ptr_array_index(writes, k))->src == p->a->id;
    if (!from_a)
      continue;
    const WeirMemlet *w = g_ptr_array_index(writes, 0);
    if (writes->len != 1 || !w->data)
      return tier3_reason(reason,
                          "access node %u of '%s' is also written by other "
                          "nodes than tasklet '%s'",
                          acc->id, acc->data, a);
    g_hash_table_add(blocked, GUINT_TO_POINTER(r->id));
    if (!add_channel(g, p, w, r, reason))
      return FALSE;
  }
  if (p->channels->len == 0)
    return tier3_reason(reason,
                        "tasklet '%s' reads nothing tasklet '%s' writes", b, a);
  g_autoptr(GHashTable) reach = tier3_reachable(s, p->a->id, blocked);
  if (g_hash_table_contains(reach, GUINT_TO_POINTER(p->b->id)))
    return tier3_reason(reason,
                        "tasklet '%s' also depends on tasklet '%s' through "
                        "another path",
                        b, a);
  return TRUE;
}

/* ---------------------------------------------------------------- match */

static void match(const WeirGraph *g, GArray *sites) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *a = g_ptr_array_index(s->nodes, k);
      if (a->kind != WEIR_NODE_TASKLET)
        continue;
      /* Consumers directly or through one access node, sorted. */
      g_autoptr(GArray) to = g_array_new(FALSE, FALSE, sizeof(guint));
      g_autoptr(GPtrArray) out = tier3_edges_out(s, a->id, NULL);
      for (guint j = 0; j < out->len; j++) {
        const WeirMemlet *m = g_ptr_array_index(out, j);
        const WeirNode *d = weir_state_node(s, m->dst);
        if (!m->data)
          continue;
        if (d->kind == WEIR_NODE_TASKLET) {
          g_array_append_val(to, d->id);
        } else if (d->kind == WEIR_NODE_ACCESS) {
          g_autoptr(GPtrArray) reads = tier3_edges_out(s, d->id, NULL);
          for (guint r = 0; r < reads->len; r++) {
            const WeirMemlet *rm = g_ptr_array_index(reads, r);
            const WeirNode *t = weir_state_node(s, rm->dst);
            if (rm->data && t->kind == WEIR_NODE_TASKLET)
              g_array_append_val(to, t->id);
          }
        }
      }
      g_array_sort(to, (GCompareFunc)tier3_cmp_uint);
      for (guint j = 0; j < to->len; j++) {
        guint b = g_array_index(to, guint, j);
        if ((j > 0 && b == g_array_index(to, guint, j - 1)) || b == a->id)
          continue;
        guint nodes[2] = {a->id, b};
        tier3_site_add(sites, s->id, 2, nodes);
      }
    }
  }
}

static gboolean can_apply(const WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, char **reason) {
  (void)params;
  g_auto(Plan) p = {0};
  return plan(g, site, &p, reason);
}

/* ---------------------------------------------------------------- apply */

/* Final names of the fused tasklet: every name it uses is unique. */
typedef struct {
  GHashTable *used; /* every name taken so far */
  /* old -> new name of A's and B's names, by role (an input and an
   * output may share a name) */
  GHashTable *a[3], *b[3];
} Names;

static const char *take(GHashTable *used, const char *want) {
  for (guint k = 0;; k++) {
    g_autofree char *name =
        k ? g_strdup_printf("%s_%u", want, k) : g_strdup(want);
    if (!g_hash_table_contains(used, name)) {
      char *owned = g_steal_pointer(&name);
      g_hash_table_add(used, owned);
      return owned;
    }
  }
}

static const char *rename_a(const char *name, Tier3NameRole role,
                            gpointer user) {
  Names *nm = user;
  return role == TIER3_NAME_SYMBOL ? NULL
                                   : g_hash_table_lookup(nm->a[role], name);
}

static const char *rename_b(const char *name, Tier3NameRole role,
                            gpointer user) {
  Names *nm = user;
  return role == TIER3_NAME_SYMBOL ? NULL
                                   : g_hash_table_lookup(nm->b[role], name);
}

typedef struct {
  GPtrArray *out;
} LocalsCtx;

static const char *collect_local(const char *name, Tier3NameRole role,
                                 gpointer user) {
  LocalsCtx *c = user;
  if (role == TIER3_NAME_LOCAL && !tier3_names_contain(c->out, name))
    g_ptr_array_add(c->out, g_strdup(name));
  return NULL;
}

/* Names assigned as locals in code (in order of first use). */
static void code_locals(WeirCode *code, const WeirNode *n, GPtrArray *out) {
  LocalsCtx c = {out};
  tier3_code_rename(code, n, collect_local, &c);
}

/* Symbols: names of the bodies that are neither locals nor connectors. */
static const char *collect_symbol(const char *name, Tier3NameRole role,
                                  gpointer user) {
  if (role == TIER3_NAME_SYMBOL)
    g_hash_table_add(user, g_strdup(name));
  return NULL;
}

static const Channel *channel_of_out(GPtrArray *channels, const char *out) {
  for (guint i = 0; i < channels->len; i++) {
    const Channel *c = g_ptr_array_index(channels, i);
    if (strcmp(c->out, out) == 0)
      return c;
  }
  return NULL;
}

static const Channel *channel_of_in(GPtrArray *channels, const char *in) {
  for (guint i = 0; i < channels->len; i++) {
    const Channel *c = g_ptr_array_index(channels, i);
    if (strcmp(c->in, in) == 0)
      return c;
  }
  return NULL;
}

/* TRUE when memlet m is one of the channels' memlets (removed). */
static gboolean is_channel_memlet(GPtrArray *channels, const WeirMemlet *m) {
  for (guint i = 0; i < channels->len; i++) {
    const Channel *c = g_ptr_array_index(channels, i);
    if (m->id == c->read)
      return TRUE;
  }
  return FALSE;
}

/* The memlet into A reading the same thing as m (into B), or NULL. */
static const WeirMemlet *same_input(GPtrArray *a_in, const WeirMemlet *m) {
  for (guint i = 0; i < a_in->len; i++) {
    const WeirMemlet *x = g_ptr_array_index(a_in, i);
    if (x->data && m->data && x->src == m->src &&
        g_strcmp0(x->src_conn, m->src_conn) == 0 &&
        strcmp(x->data, m->data) == 0 &&
        weir_subset_equal(x->subset, m->subset))
      return x;
  }
  return NULL;
}

/* An access node channel keeps A's write when the node has other readers
 * or its container lives on (an argument, or used elsewhere). */
static gboolean channel_keeps_write(const WeirGraph *g, const WeirState *s,
                                    const Channel *c) {
  if (!c->access)
    return FALSE;
  const WeirNode *acc = weir_state_node(s, c->access);
  const WeirContainer *ct = weir_graph_container(g, acc->data);
  if (!ct || !ct->transient)
    return TRUE;
  g_autoptr(GPtrArray) reads = tier3_edges_out(s, acc->id, NULL);
  for (guint i = 0; i < reads->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(reads, i);
    if (m->id != c->read)
      return TRUE;
  }
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *st = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < st->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(st->nodes, k);
      if (n != acc && n->kind == WEIR_NODE_ACCESS &&
          g_strcmp0(n->data, acc->data) == 0)
        return TRUE;
    }
  }
  return FALSE;
}

static gboolean add_memlet_like(WeirGraph *g, WeirState *s, const WeirMemlet *m,
                                guint src, const char *sc, guint dst,
                                const char *dc, GError **error) {
  g_autofree char *sub = m->subset ? weir_subset_to_string(m->subset) : NULL;
  WeirMemlet *c =
      weir_state_add_memlet(g, s, src, sc, dst, dc, m->data, sub, error);
  if (!c)
    return FALSE;
  if (m->other) {
    g_autofree char *other = weir_subset_to_string(m->other);
    if (!weir_memlet_set_other(c, other, error))
      return FALSE;
  }
  weir_memlet_set_volume(c, m->volume);
  c->dynamic = m->dynamic;
  c->wcr = m->wcr;
  return TRUE;
}

static gboolean apply(WeirGraph *g, const WeirSite *site,
                      const WeirParams *params, GError **error) {
  (void)params;
  g_auto(Plan) p = {0};
  g_autofree char *reason = NULL;
  if (!plan(g, site, &p, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  WeirState *s = p.s;
  WeirNode *a = p.a, *b = p.b;
  /* Types of A's values (to know where a conversion is needed). */
  gboolean typed = weir_tasklet_check(g, s, a, NULL);

  g_autoptr(GPtrArray) a_in = tier3_edges_in(s, a->id, NULL);
  g_autoptr(GPtrArray) a_out = tier3_edges_out(s, a->id, NULL);
  g_autoptr(GPtrArray) b_in = tier3_edges_in(s, b->id, NULL);
  g_autoptr(GPtrArray) b_out = tier3_edges_out(s, b->id, NULL);
  g_autoptr(GHashTable) keep = g_hash_table_new(g_direct_hash, NULL);
  for (guint i = 0; i < p.channels->len; i++) {
    const Channel *c = g_ptr_array_index(p.channels, i);
    if (channel_keeps_write(g, s, c))
      g_hash_table_add(keep, GUINT_TO_POINTER(c->write));
  }

  /* Names.  Symbols and map parameters are fixed; connectors and locals
   * keep their names unless taken. */
  Names nm = {g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
              {NULL},
              {NULL}};
  for (guint r = 0; r < 3; r++) {
    nm.a[r] = g_hash_table_new(g_str_hash, g_str_equal);
    nm.b[r] = g_hash_table_new(g_str_hash, g_str_equal);
  }
  for (guint i = 0; i < g->symbols->len; i++)
    g_hash_table_add(nm.used, g_strdup(g_ptr_array_index(g->symbols, i)));
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    for (guint k = 0; n->kind == WEIR_NODE_MAP_ENTRY && k < n->map->params->len;
         k++)
      g_hash_table_add(nm.used, g_strdup(g_ptr_array_index(n->map->params, k)));
  }
  g_autoptr(WeirCode) ca = weir_code_copy(a->code);
  g_autoptr(WeirCode) cb = weir_code_copy(b->code);
  tier3_code_rename(ca, a, collect_symbol, nm.used);
  tier3_code_rename(cb, b, collect_symbol, nm.used);

  /* Connectors of the fused tasklet, in order: A's inputs, A's outputs
   * still written, B's inputs not fed by A (or read by A too), B's
   * outputs. */
  g_autoptr(GPtrArray) ins = g_ptr_array_new();
  g_autoptr(GPtrArray) outs = g_ptr_array_new();
  for (guint i = 0; i < a->in_conns->len; i++) {
    const char *c = g_ptr_array_index(a->in_conns, i);
    const char *to = take(nm.used, c);
    g_hash_table_insert(nm.a[TIER3_NAME_INPUT], (gpointer)c, (gpointer)to);
    g_ptr_array_add(ins, (gpointer)to);
  }
  g_autoptr(GHashTable) out_kept = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < a_out->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(a_out, i);
    if (!m->src_conn)
      continue;
    gboolean channel = FALSE;
    for (guint k = 0; k < p.channels->len && !channel; k++) {
      const Channel *c = g_ptr_array_index(p.channels, k);
      channel = m->id == c->read ||
                (m->id == c->write &&
                 !g_hash_table_contains(keep, GUINT_TO_POINTER(m->id)));
    }
    if (!channel)
      g_hash_table_add(out_kept, m->src_conn);
  }
  for (guint i = 0; i < a->out_conns->len; i++) {
    const char *c = g_ptr_array_index(a->out_conns, i);
    if (!g_hash_table_contains(out_kept, c))
      continue;
    const char *to = take(nm.used, c);
    g_hash_table_insert(nm.a[TIER3_NAME_OUTPUT], (gpointer)c, (gpointer)to);
    g_ptr_array_add(outs, (gpointer)to);
  }
  /* A's locals, then a local per value handed to B. */
  g_autoptr(GPtrArray) a_locals = g_ptr_array_new_with_free_func(g_free);
  code_locals(ca, a, a_locals);
  for (guint i = 0; i < a_locals->len; i++) {
    const char *l = g_ptr_array_index(a_locals, i);
    g_hash_table_insert(nm.a[TIER3_NAME_LOCAL], (gpointer)l,
                        (gpointer)take(nm.used, l));
  }
  g_autoptr(GHashTable) value_of =
      g_hash_table_new(g_str_hash, g_str_equal); /* A's output -> local */
  for (guint i = 0; i < p.channels->len; i++) {
    const Channel *c = g_ptr_array_index(p.channels, i);
    if (!g_hash_table_contains(value_of, c->out))
      g_hash_table_insert(value_of, c->out, (gpointer)take(nm.used, c->out));
  }
  g_autoptr(GHashTable) dedup = g_hash_table_new(g_direct_hash, NULL);
  for (guint i = 0; i < b_in->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(b_in, i);
    if (!m->dst_conn)
      continue;
    const Channel *ch = channel_of_in(p.channels, m->dst_conn);
    if (ch) {
      g_hash_table_insert(nm.b[TIER3_NAME_INPUT], m->dst_conn,
                          g_hash_table_lookup(value_of, ch->out));
      continue;
    }
    const WeirMemlet *same = same_input(a_in, m);
    if (same) {
      g_hash_table_insert(
          nm.b[TIER3_NAME_INPUT], m->dst_conn,
          g_hash_table_lookup(nm.a[TIER3_NAME_INPUT], same->dst_conn));
      g_hash_table_add(dedup, GUINT_TO_POINTER(m->id));
      continue;
    }
    const char *to = take(nm.used, m->dst_conn);
    g_hash_table_insert(nm.b[TIER3_NAME_INPUT], m->dst_conn, (gpointer)to);
    g_ptr_array_add(ins, (gpointer)to);
  }
  for (guint i = 0; i < b->out_conns->len; i++) {
    const char *c = g_ptr_array_index(b->out_conns, i);
    const char *to = take(nm.used, c);
    g_hash_table_insert(nm.b[TIER3_NAME_OUTPUT], (gpointer)c, (gpointer)to);
    g_ptr_array_add(outs, (gpointer)to);
  }
  g_autoptr(GPtrArray) b_locals = g_ptr_array_new_with_free_func(g_free);
  code_locals(cb, b, b_locals);
  for (guint i = 0; i < b_locals->len; i++) {
    const char *l = g_ptr_array_index(b_locals, i);
    g_hash_table_insert(nm.b[TIER3_NAME_LOCAL], (gpointer)l,
                        (gpointer)take(nm.used, l));
  }

  /* The body: A's statements (values for B into locals), then B's. */
  g_autoptr(GArray) roles = tier3_code_target_roles(a->code, a);
  tier3_code_rename(ca, a, rename_a, &nm);
  tier3_code_rename(cb, b, rename_b, &nm);
  g_autoptr(GString) body = g_string_new(NULL);
  for (guint i = 0; i < ca->stmts->len; i++) {
    const WeirStmt *orig = g_ptr_array_index(a->code->stmts, i);
    const WeirStmt *st = g_ptr_array_index(ca->stmts, i);
    g_autofree char *value = weir_ast_to_string(st->value);
    const Channel *ch =
        g_array_index(roles, Tier3NameRole, i) == TIER3_NAME_OUTPUT
            ? channel_of_out(p.channels, orig->target->name)
            : NULL;
    if (!ch) {
      g_autofree char *target = weir_ast_to_string(st->target);
      g_string_append_printf(body, "%s = %s\n", target, value);
      continue;
    }
    const char *local = g_hash_table_lookup(value_of, ch->out);
    gboolean exact =
        typed && !orig->value->untyped && orig->value->type == ch->dtype;
    if (exact)
      g_string_append_printf(body, "%s = %s\n", local, value);
    else
      g_string_append_printf(body, "%s = %s(%s)\n", local,
                             weir_dtype_name(ch->dtype), value);
    const char *kept =
        g_hash_table_lookup(nm.a[TIER3_NAME_OUTPUT], orig->target->name);
    if (g_hash_table_contains(out_kept, orig->target->name))
      g_string_append_printf(body, "%s = %s\n", kept, local);
  }
  for (guint i = 0; i < cb->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(cb->stmts, i);
    g_autofree char *target = weir_ast_to_string(st->target);
    g_autofree char *value = weir_ast_to_string(st->value);
    g_string_append_printf(body, "%s = %s%s", target, value,
                           i + 1 < cb->stmts->len ? "\n" : "");
  }

  /* B becomes the fused tasklet (it keeps its id): its memlets are
   * re-created with the new connector names, A's are moved to it. */
  g_autoptr(GPtrArray) dead = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < p.channels->len; i++) {
    const Channel *c = g_ptr_array_index(p.channels, i);
    const WeirMemlet *r = weir_state_memlet(s, c->read);
    if (r && !tier3_names_contain(dead, r->data))
      g_ptr_array_add(dead, g_strdup(r->data));
  }
  g_autoptr(GArray) old = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < b_in->len; i++)
    g_array_append_val(old,
                       ((const WeirMemlet *)g_ptr_array_index(b_in, i))->id);
  for (guint i = 0; i < b_out->len; i++)
    g_array_append_val(old,
                       ((const WeirMemlet *)g_ptr_array_index(b_out, i))->id);
  guint f = b->id;
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < a_in->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(a_in, i);
    const char *dc =
        m->dst_conn ? g_hash_table_lookup(nm.a[TIER3_NAME_INPUT], m->dst_conn)
                    : NULL;
    ok = add_memlet_like(g, s, m, m->src, m->src_conn, f, dc, error);
  }
  for (guint i = 0; ok && i < a_out->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(a_out, i);
    if (m->dst == b->id || is_channel_memlet(p.channels, m))
      continue;
    if (m->data && !g_hash_table_contains(out_kept, m->src_conn))
      continue;
    gboolean dropped = FALSE;
    for (guint k = 0; k < p.channels->len; k++) {
      const Channel *c = g_ptr_array_index(p.channels, k);
      dropped =
          dropped || (m->id == c->write &&
                      !g_hash_table_contains(keep, GUINT_TO_POINTER(m->id)));
    }
    if (dropped)
      continue;
    const char *sc =
        m->src_conn ? g_hash_table_lookup(nm.a[TIER3_NAME_OUTPUT], m->src_conn)
                    : NULL;
    ok = add_memlet_like(g, s, m, f, sc, m->dst, m->dst_conn, error);
  }
  for (guint i = 0; ok && i < b_in->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(b_in, i);
    if (m->src == a->id || is_channel_memlet(p.channels, m) ||
        g_hash_table_contains(dedup, GUINT_TO_POINTER(m->id)))
      continue;
    const char *dc =
        m->dst_conn ? g_hash_table_lookup(nm.b[TIER3_NAME_INPUT], m->dst_conn)
                    : NULL;
    ok = add_memlet_like(g, s, m, m->src, m->src_conn, f, dc, error);
  }
  for (guint i = 0; ok && i < b_out->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(b_out, i);
    const char *sc =
        m->src_conn ? g_hash_table_lookup(nm.b[TIER3_NAME_OUTPUT], m->src_conn)
                    : NULL;
    ok = add_memlet_like(g, s, m, f, sc, m->dst, m->dst_conn, error);
  }
  if (ok) {
    for (guint i = 0; i < old->len; i++)
      weir_state_remove_memlet(s, g_array_index(old, guint, i));
    while (b->in_conns->len > 0)
      weir_node_remove_in_conn(b, g_ptr_array_index(b->in_conns, 0));
    while (b->out_conns->len > 0)
      weir_node_remove_out_conn(b, g_ptr_array_index(b->out_conns, 0));
    for (guint i = 0; i < ins->len; i++)
      weir_node_add_in_conn(b, g_ptr_array_index(ins, i));
    for (guint i = 0; i < outs->len; i++)
      weir_node_add_out_conn(b, g_ptr_array_index(outs, i));
    weir_tasklet_set_code(b, body->str);
  }
  g_hash_table_unref(nm.used);
  for (guint r = 0; r < 3; r++) {
    g_hash_table_unref(nm.a[r]);
    g_hash_table_unref(nm.b[r]);
  }
  if (!ok)
    return FALSE;

  /* Drop A and the intermediates nothing uses any more. */
  weir_state_remove_node(s, a->id);
  for (guint i = 0; i < p.channels->len; i++) {
    const Channel *c = g_ptr_array_index(p.channels, i);
    if (!c->access || g_hash_table_contains(keep, GUINT_TO_POINTER(c->write)))
      continue;
    g_autoptr(GPtrArray) in = tier3_edges_in(s, c->access, NULL);
    g_autoptr(GPtrArray) out = tier3_edges_out(s, c->access, NULL);
    if (in->len == 0 && out->len == 0)
      weir_state_remove_node(s, c->access);
  }
  for (guint i = 0; i < dead->len; i++) {
    const char *name = g_ptr_array_index(dead, i);
    const WeirContainer *ct = weir_graph_container(g, name);
    if (ct && ct->transient && !tier3_container_used(g, name))
      weir_graph_remove_container(g, name);
  }
  return TRUE;
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "tasklet-fusion",
    .tier = 3,
    .description = "merge a tasklet into the tasklet of the same scope that "
                   "reads its result, substituting the value in the body",
    .match = match,
    .can_apply = can_apply,
    .apply = apply,
};

gboolean weir_tier3_register_tasklet_fusion(GError **error) {
  return weir_transform_register(&info, error);
}
