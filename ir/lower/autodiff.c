/* autodiff.c — the reverse sweep of operator-level differentiation.
 *
 * weir_autodiff_state() first expands the library nodes on a path that
 * have no rule or whose rule declines them (the fallback: their pure
 * expansions, weir_expand_nodes in ir/lower/expand.c).  It then orders the
 * state's units topologically (library nodes, map scopes, top-level tasklets,
 * copies between access nodes), finds the values that depend on `wrt` (forward)
 * and those that reach a seed (backward), and visits the units on such a
 * path in reverse order: a library node through its backward rule, the
 * others through ir/lower/autodiff-maps.c.  Before a node is
 * visited, every consumer of its outputs has been, so the contributions to
 * each output gradient are complete; they are summed (one Sum node) the
 * first time a rule asks for them.  The rule registry is a table op ->
 * function guarded by a mutex, filled with the built-in rules (ir/lower/grad.c)
 * on first use.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "autodiff-private.h"
#include "weir-attr.h"
#include "weir-expand.h"
#include "weir-ops.h"

/* -------------------------------------------------------------- registry */

static GMutex rules_lock;
static GHashTable *rules; /* op -> WeirGradRule */

void weir_grad_register(const char *op, WeirGradRule rule) {
  g_return_if_fail(op && rule);
  g_mutex_lock(&rules_lock);
  if (!rules)
    rules = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_hash_table_replace(rules, g_strdup(op), (gpointer)rule);
  g_mutex_unlock(&rules_lock);
}

WeirGradRule weir_grad_lookup(const char *op) {
  g_mutex_lock(&rules_lock);
  WeirGradRule r =
      op && rules ? (WeirGradRule)g_hash_table_lookup(rules, op) : NULL;
  g_mutex_unlock(&rules_lock);
  return r;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

char **weir_grad_ops(void) {
  g_autoptr(GStrvBuilder) b = g_strv_builder_new();
  g_mutex_lock(&rules_lock);
  if (rules) {
    g_autofree gpointer *keys = g_hash_table_get_keys_as_array(rules, NULL);
    guint n = g_hash_table_size(rules);
    qsort(keys, n, sizeof(gpointer), compare_names);
    for (guint i = 0; i < n; i++)
      g_strv_builder_add(b, keys[i]);
  }
  g_mutex_unlock(&rules_lock);
  return g_strv_builder_end(b);
}

gboolean weir_grad_input_differentiable(const char *op, guint k) {
  static const struct {
    const char *op;
    guint first; /* first input that carries no gradient */
  } cut[] = {
      {"BatchNormalization", 3},
      {"BatchNormApply", 3},
      {"BatchNormGrad", 0},
      {"BatchNormStats", 0},
      {"Gather", 1},
      {"Reshape", 1},
      {"Slice", 1},
      {"Split", 1},
      {"Dropout", 1},
      {"Expand", 1},
      {"Tile", 1},
      {"SumTo", 1},
      {"Squeeze", 1},
      {"Unsqueeze", 1},
      {"NegativeLogLikelihoodLoss", 1},
      {"SoftmaxCrossEntropyLoss", 1},
      {"NegativeLogLikelihoodLossGrad", 0},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cut); i++)
    if (g_strcmp0(op, cut[i].op) == 0)
      return k < cut[i].first;
  return TRUE;
}

/* Whether input k of node n carries a gradient: the op's rule, and for
 * Pointwise nodes the attribute differentiable (0 for masks). */
static gboolean input_differentiable(const WeirNode *n, guint k) {
  if (!weir_grad_input_differentiable(n->op, k))
    return FALSE;
  if (g_strcmp0(n->op, "Pointwise") == 0) {
    const WeirAttr *a = weir_node_attr(n, "differentiable");
    if (a && a->type == WEIR_ATTR_INT && a->i == 0)
      return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------- rule interface */

const WeirNode *weir_grad_node(const WeirGradContext *ctx) {
  return ctx->node;
}

WeirGraph *weir_grad_graph(const WeirGradContext *ctx) {
  return ctx->g;
}

const char *weir_grad_input(const WeirGradContext *ctx, guint k) {
  return k < ctx->ins->len ? g_ptr_array_index(ctx->ins, k) : NULL;
}

const char *weir_grad_output(const WeirGradContext *ctx, guint k) {
  return k < ctx->outs->len ? g_ptr_array_index(ctx->outs, k) : NULL;
}

gboolean weir_grad_fail(const WeirGradContext *ctx, GError **error,
                        WeirErrorCode code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  return weir_node_fail(error, code, ctx->node, "%s", msg);
}

WeirNode *weir_grad_access(WeirGradContext *ctx, const char *name) {
  WeirNode *a = g_hash_table_lookup(ctx->access, name);
  if (!a) {
    a = weir_state_add_access(ctx->g, ctx->s, name);
    g_hash_table_insert(ctx->access, g_strdup(name), a);
  }
  return a;
}

void weir_grad_set_access(WeirGradContext *ctx, WeirNode *a) {
  g_hash_table_replace(ctx->access, g_strdup(a->data), a);
}

static char *full_subset(const WeirGraph *g, const char *name) {
  const WeirContainer *c = weir_graph_container(g, name);
  g_autoptr(WeirSubset) sub = weir_container_full_subset(c);
  return weir_subset_to_string(sub);
}

WeirNode *weir_grad_op(WeirGradContext *ctx, const char *op, const char *label,
                       const char *const *ins, guint n_ins,
                       const char *const *outs, guint n_outs) {
  g_autoptr(GPtrArray) in_conns = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) out_conns = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < n_ins; k++)
    if (ins[k])
      g_ptr_array_add(in_conns, g_strdup_printf("in%u", k));
  g_ptr_array_add(in_conns, NULL);
  for (guint k = 0; k < n_outs; k++)
    g_ptr_array_add(out_conns, g_strdup_printf("out%u", k));
  g_ptr_array_add(out_conns, NULL);
  WeirNode *n = weir_state_add_library(ctx->g, ctx->s, label, op,
                                       (const char *const *)in_conns->pdata,
                                       (const char *const *)out_conns->pdata);
  for (guint k = 0; k < n_ins; k++) {
    if (!ins[k])
      continue;
    WeirNode *a = weir_grad_access(ctx, ins[k]);
    g_autofree char *conn = g_strdup_printf("in%u", k);
    g_autofree char *sub = full_subset(ctx->g, ins[k]);
    WeirMemlet *m = weir_state_add_memlet(ctx->g, ctx->s, a->id, NULL, n->id,
                                          conn, ins[k], sub, NULL);
    g_assert(m);
  }
  for (guint k = 0; k < n_outs; k++) {
    WeirNode *a = weir_state_add_access(ctx->g, ctx->s, outs[k]);
    g_hash_table_replace(ctx->access, g_strdup(outs[k]), a);
    g_autofree char *conn = g_strdup_printf("out%u", k);
    g_autofree char *sub = full_subset(ctx->g, outs[k]);
    WeirMemlet *m = weir_state_add_memlet(ctx->g, ctx->s, n->id, conn, a->id,
                                          NULL, outs[k], sub, NULL);
    g_assert(m);
  }
  g_array_append_val(ctx->created, n->id);
  return n;
}

const char *weir_grad_new(WeirGradContext *ctx, const char *base,
                          WeirDType dtype, guint rank, WeirExpr *const *shape) {
  g_autofree char *name = weir_graph_fresh_name(ctx->g, base);
  WeirContainer *c =
      weir_graph_add_container(ctx->g, name, dtype, rank, shape, TRUE, NULL);
  g_assert(c);
  return c->name;
}

const char *weir_grad_new_like(WeirGradContext *ctx, const char *base,
                               const char *like, int dtype) {
  const WeirContainer *l = weir_graph_container(ctx->g, like);
  g_assert(l);
  return weir_grad_new(ctx, base, dtype >= 0 ? (WeirDType)dtype : l->dtype,
                       l->shape->len, (WeirExpr *const *)l->shape->pdata);
}

const char *weir_grad_pointwise(WeirGradContext *ctx, const char *base,
                                const char *like, const char *code,
                                const char *const *ins, guint n_ins) {
  const char *out = weir_grad_new_like(ctx, base, like, -1);
  WeirNode *n = weir_grad_op(ctx, "Pointwise", out, ins, n_ins, &out, 1);
  weir_node_set_attr_string(n, "code", code);
  return out;
}

static gboolean same_shape(const WeirContainer *a, const WeirContainer *b) {
  if (a->shape->len != b->shape->len)
    return FALSE;
  for (guint d = 0; d < a->shape->len; d++)
    if (!weir_expr_equal(g_ptr_array_index(a->shape, d),
                         g_ptr_array_index(b->shape, d)))
      return FALSE;
  return TRUE;
}

const char *weir_grad_sum_to(WeirGradContext *ctx, const char *name,
                             const char *target) {
  const WeirContainer *a = weir_graph_container(ctx->g, name);
  const WeirContainer *t = weir_graph_container(ctx->g, target);
  if (same_shape(a, t))
    return name;
  g_autofree char *base = g_strdup_printf("%s_grad", target);
  const char *out = weir_grad_new_like(ctx, base, target, a->dtype);
  const char *ins[] = {name, target};
  weir_grad_op(ctx, "SumTo", out, ins, 2, &out, 1);
  return out;
}

void weir_grad_add(WeirGradContext *ctx, guint k, const char *name) {
  const char *x = weir_grad_input(ctx, k);
  g_return_if_fail(x && name);
  GPtrArray *list = g_hash_table_lookup(ctx->partials, x);
  if (!list) {
    list = g_ptr_array_new_with_free_func(g_free);
    g_hash_table_insert(ctx->partials, g_strdup(x), list);
  }
  g_ptr_array_add(list, g_strdup(name));
}

/* The summed gradient of value x, or NULL when nothing reached it. */
static const char *finalize(WeirGradContext *ctx, const char *x) {
  const char *f = g_hash_table_lookup(ctx->final, x);
  if (f)
    return f;
  GPtrArray *list = g_hash_table_lookup(ctx->partials, x);
  if (!list || list->len == 0)
    return NULL;
  if (list->len == 1) {
    g_hash_table_insert(ctx->final, g_strdup(x),
                        g_strdup(g_ptr_array_index(list, 0)));
  } else {
    g_autofree char *base = g_strdup_printf("%s_grad", x);
    const char *out = weir_grad_new_like(ctx, base, x, -1);
    weir_grad_op(ctx, "Sum", out, (const char *const *)list->pdata, list->len,
                 &out, 1);
    g_hash_table_insert(ctx->final, g_strdup(x), g_strdup(out));
  }
  return g_hash_table_lookup(ctx->final, x);
}

const char *weir_grad_dout(WeirGradContext *ctx, guint k, GError **error) {
  (void)error;
  const char *y = weir_grad_output(ctx, k);
  return y ? finalize(ctx, y) : NULL;
}

gboolean weir_grad_wants(const WeirGradContext *ctx, guint k) {
  const char *x = weir_grad_input(ctx, k);
  return x && input_differentiable(ctx->node, k) &&
         g_hash_table_contains(ctx->needs, x) &&
         g_hash_table_contains(ctx->useful, x);
}

/* ----------------------------------------------------------------- sweep */

/* Names of the containers on connectors in<k> (out<k>) of n, by index. */
static GPtrArray *port_names(const WeirState *s, const WeirNode *n,
                             gboolean in) {
  GPtrArray *names = g_ptr_array_new();
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    const char *conn = in ? m->dst_conn : m->src_conn;
    if ((in ? m->dst : m->src) != n->id || !conn || !m->data)
      continue;
    const char *digits = in ? (g_str_has_prefix(conn, "in") ? conn + 2 : NULL)
                            : (g_str_has_prefix(conn, "out") ? conn + 3 : NULL);
    if (!digits || !g_ascii_isdigit(*digits))
      continue;
    guint k = (guint)strtoul(digits, NULL, 10);
    if (names->len <= k)
      g_ptr_array_set_size(names, k + 1);
    names->pdata[k] = m->data;
  }
  return names;
}

/* Distinct containers on the memlets entering (in) or leaving node id. */
static GPtrArray *edge_names(const WeirState *s, guint id, gboolean in) {
  GPtrArray *names = g_ptr_array_new();
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if ((in ? m->dst : m->src) != id || !m->data)
      continue;
    gboolean seen = FALSE;
    for (guint k = 0; k < names->len; k++)
      seen = seen || strcmp(names->pdata[k], m->data) == 0;
    if (!seen)
      g_ptr_array_add(names, m->data);
  }
  return names;
}

/* One step of the sweep: a library node, a map scope (its entry) or a
 * top-level tasklet, with the containers it reads and writes.  For library
 * nodes the lists are by connector index (in<k>, out<k>). */
typedef struct {
  WeirNode *node;        /* for a copy: the destination access node */
  WeirMemlet *copy;      /* a copy between access nodes, or NULL */
  GPtrArray *ins, *outs; /* char* borrowed, NULL entries for gaps */
} Unit;

static void unit_free(gpointer p) {
  Unit *u = p;
  g_ptr_array_unref(u->ins);
  g_ptr_array_unref(u->outs);
  g_free(u);
}

/* The units of s in topological order, and (optional) the access node
 * last written in that order for each container. */
static GPtrArray *unit_order(const WeirState *s, GHashTable *last_writer,
                             GError **error) {
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, error);
  if (!sc)
    return NULL;
  GPtrArray *order = g_ptr_array_new_with_free_func(unit_free);
  for (guint i = 0; i < sc->order->len; i++) {
    guint id = g_array_index(sc->order, guint, i);
    WeirNode *n = weir_state_node(s, id);
    if (!n || weir_scopes_parent(sc, id) != 0)
      continue;
    if (n->kind == WEIR_NODE_ACCESS) {
      g_autoptr(GPtrArray) in = weir_state_in_edges(s, n->id);
      if (last_writer && in->len > 0)
        g_hash_table_replace(last_writer, g_strdup(n->data), n);
      /* copies from other access nodes (Reshape, Flatten expanded) */
      for (guint e = 0; e < in->len; e++) {
        WeirMemlet *m = g_ptr_array_index(in, e);
        const WeirNode *src = weir_state_node(s, m->src);
        if (!m->data || !src || src->kind != WEIR_NODE_ACCESS)
          continue;
        Unit *u = g_new0(Unit, 1);
        u->node = n;
        u->copy = m;
        u->ins = g_ptr_array_new();
        u->outs = g_ptr_array_new();
        g_ptr_array_add(u->ins, src->data);
        g_ptr_array_add(u->outs, n->data);
        g_ptr_array_add(order, u);
      }
      continue;
    }
    if (n->kind == WEIR_NODE_MAP_EXIT)
      continue;
    Unit *u = g_new0(Unit, 1);
    u->node = n;
    if (n->kind == WEIR_NODE_LIBRARY) {
      u->ins = port_names(s, n, TRUE);
      u->outs = port_names(s, n, FALSE);
    } else if (n->kind == WEIR_NODE_MAP_ENTRY) {
      const WeirNode *x = weir_state_map_exit(s, n);
      u->ins = edge_names(s, n->id, TRUE);
      u->outs = x ? edge_names(s, x->id, FALSE) : g_ptr_array_new();
    } else {
      u->ins = edge_names(s, n->id, TRUE);
      u->outs = edge_names(s, n->id, FALSE);
    }
    g_ptr_array_add(order, u);
  }
  return order;
}

static gboolean is_float_value(const WeirGraph *g, const char *name) {
  const WeirContainer *c = name ? weir_graph_container(g, name) : NULL;
  return c && weir_dtype_is_float(c->dtype);
}

/* The set of values reaching `targets` backwards through differentiable
 * inputs. */
static GHashTable *reaching(const WeirGraph *g, GPtrArray *order,
                            const char *const *targets) {
  GHashTable *set = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; targets && targets[i]; i++)
    g_hash_table_add(set, (gpointer)targets[i]);
  for (guint i = order->len; i-- > 0;) {
    const Unit *u = g_ptr_array_index(order, i);
    gboolean hit = FALSE;
    for (guint k = 0; k < u->outs->len; k++)
      if (u->outs->pdata[k] && g_hash_table_contains(set, u->outs->pdata[k]))
        hit = TRUE;
    if (!hit)
      continue;
    for (guint k = 0; k < u->ins->len; k++)
      if (u->ins->pdata[k] && input_differentiable(u->node, k) &&
          is_float_value(g, u->ins->pdata[k]))
        g_hash_table_add(set, u->ins->pdata[k]);
  }
  return set;
}

/* The set (owned keys) of values depending on wrt (forward). */
static GHashTable *depending(const WeirGraph *g, GPtrArray *order,
                             const char *const *wrt) {
  GHashTable *set =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; wrt && wrt[i]; i++)
    g_hash_table_add(set, g_strdup(wrt[i]));
  for (guint i = 0; i < order->len; i++) {
    const Unit *u = g_ptr_array_index(order, i);
    gboolean dep = FALSE;
    for (guint k = 0; k < u->ins->len; k++)
      if (u->ins->pdata[k] && input_differentiable(u->node, k) &&
          g_hash_table_contains(set, u->ins->pdata[k]))
        dep = TRUE;
    for (guint k = 0; dep && k < u->outs->len; k++)
      if (u->outs->pdata[k] && is_float_value(g, u->outs->pdata[k]))
        g_hash_table_add(set, g_strdup(u->outs->pdata[k]));
  }
  return set;
}

char **weir_autodiff_dependencies(const WeirGraph *g, const WeirState *s,
                                  const char *const *candidates,
                                  const char *const *targets) {
  GPtrArray *out = g_ptr_array_new();
  g_autoptr(GPtrArray) order = unit_order(s, NULL, NULL);
  if (order) {
    g_autoptr(GHashTable) set = reaching(g, order, targets);
    for (guint i = 0; candidates && candidates[i]; i++)
      if (g_hash_table_contains(set, candidates[i]))
        g_ptr_array_add(out, g_strdup(candidates[i]));
  }
  g_ptr_array_add(out, NULL);
  return (char **)g_ptr_array_free(out, FALSE);
}

static void partials_free(gpointer p) {
  g_ptr_array_unref(p);
}

/* Whether unit u lies on a path from wrt to a seed. */
static gboolean on_path(const Unit *u, GHashTable *needs, GHashTable *useful) {
  gboolean in = FALSE, out = FALSE;
  for (guint k = 0; k < u->ins->len; k++) {
    const char *x = u->ins->pdata[k];
    in = in ||
         (x && input_differentiable(u->node, k) &&
          g_hash_table_contains(needs, x) && g_hash_table_contains(useful, x));
  }
  for (guint k = 0; k < u->outs->len; k++)
    out = out || (u->outs->pdata[k] &&
                  g_hash_table_contains(useful, u->outs->pdata[k]));
  return in && out;
}

/* Whether the rule of library node id of s declines it: run on a scratch
 * copy (*dry, made on first use) with stand-in output gradients, it fails
 * with WEIR_ERROR_UNSUPPORTED (a Conv with one spatial dimension, a pool
 * with storage_order = 1, ...).  Other errors are left to the sweep. */
static gboolean rule_declines(const WeirGraph *g, const WeirState *s, guint id,
                              WeirGradRule rule, GHashTable *needs,
                              GHashTable *useful, WeirGraph **dry) {
  if (!*dry)
    *dry = weir_graph_copy(g);
  WeirState *ds = weir_graph_state(*dry, s->id);
  WeirNode *dn = ds ? weir_state_node(ds, id) : NULL;
  if (!dn)
    return FALSE;
  WeirGradContext ctx = {.g = *dry, .s = ds, .node = dn};
  g_autoptr(GPtrArray) ins = port_names(ds, dn, TRUE);
  g_autoptr(GPtrArray) outs = port_names(ds, dn, FALSE);
  ctx.ins = ins;
  ctx.outs = outs;
  ctx.access = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  ctx.partials =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, partials_free);
  ctx.final = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  ctx.maxed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  ctx.needs = needs;
  ctx.useful = useful;
  ctx.created = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint k = 0; k < outs->len; k++) {
    const char *y = outs->pdata[k];
    if (!y || !g_hash_table_contains(useful, y) ||
        g_hash_table_contains(ctx.partials, y))
      continue;
    GPtrArray *list = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(list,
                    g_strdup(weir_grad_new_like(&ctx, "dry_grad", y, -1)));
    g_hash_table_insert(ctx.partials, g_strdup(y), list);
  }
  g_autoptr(GError) err = NULL;
  gboolean declines = !rule(&ctx, &err) &&
                      g_error_matches(err, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED);
  g_hash_table_unref(ctx.access);
  g_hash_table_unref(ctx.partials);
  g_hash_table_unref(ctx.final);
  g_hash_table_unref(ctx.maxed);
  g_array_unref(ctx.created);
  return declines;
}

/* The fallback, first part: library nodes on a path that have no rule, or
 * whose rule declines them, are expanded (weir_expand_nodes, all or nothing)
 * until none is left; their maps and tasklets are then differentiated like
 * any other scope. */
static gboolean expand_ruleless(WeirGraph *g, WeirState *s, GHashTable *seeds,
                                const char *const *wrt, GError **error) {
  g_autofree gpointer *keys = g_hash_table_get_keys_as_array(seeds, NULL);
  for (guint round = 0; round < 64; round++) {
    g_autoptr(GPtrArray) order = unit_order(s, NULL, error);
    if (!order)
      return FALSE;
    g_autoptr(GHashTable) needs = depending(g, order, wrt);
    g_autoptr(GHashTable) useful =
        reaching(g, order, (const char *const *)keys);
    g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(guint));
    g_autoptr(WeirGraph) dry = NULL;
    for (guint i = 0; i < order->len; i++) {
      const Unit *u = g_ptr_array_index(order, i);
      if (u->node->kind != WEIR_NODE_LIBRARY || !on_path(u, needs, useful))
        continue;
      WeirGradRule rule = weir_grad_lookup(u->node->op);
      if (!rule || rule_declines(g, s, u->node->id, rule, needs, useful, &dry))
        g_array_append_val(ids, u->node->id);
    }
    if (ids->len == 0)
      return TRUE;
    if (!weir_expand_nodes(g, s, (const guint *)ids->data, ids->len, error))
      return FALSE;
  }
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
              "program '%s': the expansions of operators without a backward "
              "rule keep producing such operators",
              g->name);
  return FALSE;
}

GHashTable *weir_autodiff_state(WeirGraph *g, WeirState *s, GHashTable *seeds,
                                const char *const *wrt, GError **error) {
  if (!expand_ruleless(g, s, seeds, wrt, error))
    return NULL;
  g_autoptr(GHashTable) last_writer =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GPtrArray) order = unit_order(s, last_writer, error);
  if (!order)
    return NULL;

  WeirGradContext ctx = {.g = g, .s = s};
  ctx.access = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  ctx.partials =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, partials_free);
  ctx.final = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  ctx.maxed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  ctx.created = g_array_new(FALSE, FALSE, sizeof(guint));
  GHashTable *result = NULL;

  /* Where each value is read from: the access node that writes it last in
   * topological order, else the first one (smallest id). */
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *a = g_ptr_array_index(s->nodes, i);
    if (a->kind == WEIR_NODE_ACCESS &&
        !g_hash_table_contains(ctx.access, a->data))
      g_hash_table_insert(ctx.access, g_strdup(a->data), a);
  }
  {
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, last_writer);
    while (g_hash_table_iter_next(&it, &key, &value))
      g_hash_table_replace(ctx.access, g_strdup(key), value);
  }

  ctx.needs = depending(g, order, wrt);
  {
    g_autofree gpointer *keys = g_hash_table_get_keys_as_array(seeds, NULL);
    ctx.useful = reaching(g, order, (const char *const *)keys);
  }
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, seeds);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    GPtrArray *list = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(list, g_strdup(value));
    g_hash_table_insert(ctx.partials, g_strdup(key), list);
  }

  for (guint i = order->len; i-- > 0;) {
    const Unit *u = g_ptr_array_index(order, i);
    const WeirNode *n = u->node;
    ctx.node = n;
    ctx.ins = u->ins;
    ctx.outs = u->outs;
    gboolean wanted = FALSE, reached = FALSE;
    for (guint k = 0; k < u->ins->len; k++)
      wanted = wanted || weir_grad_wants(&ctx, k);
    for (guint k = 0; k < u->outs->len; k++)
      reached =
          reached || (u->outs->pdata[k] &&
                      g_hash_table_contains(ctx.partials, u->outs->pdata[k]));
    if (!wanted || !reached)
      continue;
    if (u->copy) {
      if (!weir_grad_copy(&ctx, u->copy, error))
        goto out;
      continue;
    }
    if (n->kind == WEIR_NODE_MAP_ENTRY || n->kind == WEIR_NODE_TASKLET) {
      if (!weir_grad_scope(&ctx, error))
        goto out;
      continue;
    }
    if (n->kind != WEIR_NODE_LIBRARY) {
      g_autofree char *what = weir_describe_node(s, n);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: nested programs cannot be differentiated", what);
      goto out;
    }
    WeirGradRule rule = weir_grad_lookup(n->op);
    if (!rule) {
      weir_grad_fail(&ctx, error, WEIR_ERROR_UNSUPPORTED,
                     "no backward rule for operator %s (and it was not "
                     "expanded)",
                     n->op);
      goto out;
    }
    if (!rule(&ctx, error))
      goto out;
  }
  ctx.node = NULL;

  /* Fill attribute defaults of the new nodes. */
  for (guint i = 0; i < ctx.created->len; i++) {
    WeirNode *n = weir_state_node(s, g_array_index(ctx.created, guint, i));
    if (n && !weir_op_check_attrs(n, error))
      goto out;
  }

  result = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (guint i = 0; wrt && wrt[i]; i++) {
    const char *gname = finalize(&ctx, wrt[i]);
    if (gname)
      g_hash_table_insert(result, g_strdup(wrt[i]), g_strdup(gname));
  }
  for (guint i = 0; i < ctx.created->len; i++) {
    WeirNode *n = weir_state_node(s, g_array_index(ctx.created, guint, i));
    if (n && !weir_op_check_attrs(n, error)) {
      g_clear_pointer(&result, g_hash_table_unref);
      goto out;
    }
  }
out:
  g_hash_table_unref(ctx.access);
  g_hash_table_unref(ctx.partials);
  g_hash_table_unref(ctx.final);
  g_hash_table_unref(ctx.needs);
  g_hash_table_unref(ctx.useful);
  g_hash_table_unref(ctx.maxed);
  g_array_unref(ctx.created);
  return result;
}
