/* autodiff.c — the reverse sweep of operator-level differentiation.
 *
 * weir_autodiff_state() orders the state's nodes topologically, finds the
 * values that depend on `wrt` (forward) and those that reach a seed
 * (backward), then visits the library nodes in reverse order and calls the
 * backward rule of each node that lies on such a path.  Before a node is
 * visited, every consumer of its outputs has been, so the contributions to
 * each output gradient are complete; they are summed (one Sum node) the
 * first time a rule asks for them.  The rule registry is a table op ->
 * function guarded by a mutex, filled with the built-in rules (ir/ops/grad.c)
 * on first use.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "weir-autodiff.h"
#include "weir-ops.h"

void weir_grad_register_builtin(void);

struct _WeirGradContext {
  WeirGraph *g;
  WeirState *s;
  const WeirNode *node;
  GPtrArray *ins, *outs; /* char* (borrowed from memlets) or NULL, by index */
  GHashTable *access;    /* name -> WeirNode* to read the value from */
  GHashTable *partials;  /* name -> GPtrArray of char* */
  GHashTable *final;     /* name -> char* (owned) */
  GHashTable *needs;     /* set: values that depend on wrt */
  GHashTable *useful;    /* set: values that reach a seed */
  GArray *created;       /* guint ids of library nodes added */
};

/* -------------------------------------------------------------- registry */

static GMutex rules_lock;
static GHashTable *rules; /* op -> WeirGradRule */

static void ensure_rules(void) {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    g_mutex_lock(&rules_lock);
    if (!rules)
      rules = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_mutex_unlock(&rules_lock);
    weir_grad_register_builtin();
    g_once_init_leave(&done, 1);
  }
}

void weir_grad_register(const char *op, WeirGradRule rule) {
  g_return_if_fail(op && rule);
  g_mutex_lock(&rules_lock);
  if (!rules)
    rules = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_hash_table_replace(rules, g_strdup(op), (gpointer)rule);
  g_mutex_unlock(&rules_lock);
}

WeirGradRule weir_grad_lookup(const char *op) {
  ensure_rules();
  g_mutex_lock(&rules_lock);
  WeirGradRule r = op ? (WeirGradRule)g_hash_table_lookup(rules, op) : NULL;
  g_mutex_unlock(&rules_lock);
  return r;
}

gboolean weir_grad_input_differentiable(const char *op, guint k) {
  static const struct {
    const char *op;
    guint first; /* first input that carries no gradient */
  } cut[] = {
      {"BatchNormalization", 3},
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
  g_set_error(error, WEIR_ERROR, code, "node '%s' (%s): %s", ctx->node->label,
              ctx->node->op, msg);
  return FALSE;
}

static WeirNode *access_for(WeirGradContext *ctx, const char *name) {
  WeirNode *a = g_hash_table_lookup(ctx->access, name);
  if (!a) {
    a = weir_state_add_access(ctx->g, ctx->s, name);
    g_hash_table_insert(ctx->access, g_strdup(name), a);
  }
  return a;
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
    WeirNode *a = access_for(ctx, ins[k]);
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

/* Library nodes of s in topological order (borrowed pointers). */
static GPtrArray *library_order(const WeirState *s, GError **error) {
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, error);
  if (!sc)
    return NULL;
  GPtrArray *order = g_ptr_array_new();
  for (guint i = 0; i < sc->order->len; i++) {
    WeirNode *n = weir_state_node(s, g_array_index(sc->order, guint, i));
    if (n && n->kind == WEIR_NODE_LIBRARY)
      g_ptr_array_add(order, n);
  }
  return order;
}

static gboolean is_float_value(const WeirGraph *g, const char *name) {
  const WeirContainer *c = name ? weir_graph_container(g, name) : NULL;
  return c && weir_dtype_is_float(c->dtype);
}

/* The set of values reaching `targets` backwards through differentiable
 * inputs. */
static GHashTable *reaching(const WeirGraph *g, const WeirState *s,
                            GPtrArray *order, const char *const *targets) {
  GHashTable *set = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; targets && targets[i]; i++)
    g_hash_table_add(set, (gpointer)targets[i]);
  for (guint i = order->len; i-- > 0;) {
    const WeirNode *n = g_ptr_array_index(order, i);
    g_autoptr(GPtrArray) ins = port_names(s, n, TRUE);
    g_autoptr(GPtrArray) outs = port_names(s, n, FALSE);
    gboolean hit = FALSE;
    for (guint k = 0; k < outs->len; k++)
      if (outs->pdata[k] && g_hash_table_contains(set, outs->pdata[k]))
        hit = TRUE;
    if (!hit)
      continue;
    for (guint k = 0; k < ins->len; k++)
      if (ins->pdata[k] && input_differentiable(n, k) &&
          is_float_value(g, ins->pdata[k]))
        g_hash_table_add(set, ins->pdata[k]);
  }
  return set;
}

char **weir_autodiff_dependencies(const WeirGraph *g, const WeirState *s,
                                  const char *const *candidates,
                                  const char *const *targets) {
  GPtrArray *out = g_ptr_array_new();
  g_autoptr(GPtrArray) order = library_order(s, NULL);
  if (order) {
    g_autoptr(GHashTable) set = reaching(g, s, order, targets);
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

GHashTable *weir_autodiff_state(WeirGraph *g, WeirState *s, GHashTable *seeds,
                                const char *const *wrt, GError **error) {
  ensure_rules();
  g_autoptr(GPtrArray) order = library_order(s, error);
  if (!order)
    return NULL;

  WeirGradContext ctx = {.g = g, .s = s};
  ctx.access = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  ctx.partials =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, partials_free);
  ctx.final = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  ctx.needs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  ctx.created = g_array_new(FALSE, FALSE, sizeof(guint));
  GHashTable *result = NULL;

  /* Where each value is read from: the access node that writes it, else
   * the first one (smallest id). */
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *a = g_ptr_array_index(s->nodes, i);
    if (a->kind != WEIR_NODE_ACCESS)
      continue;
    g_autoptr(GPtrArray) in = weir_state_in_edges(s, a->id);
    if (in->len > 0 || !g_hash_table_contains(ctx.access, a->data))
      g_hash_table_replace(ctx.access, g_strdup(a->data), a);
  }

  /* Values depending on wrt (forward). */
  for (guint i = 0; wrt && wrt[i]; i++)
    g_hash_table_add(ctx.needs, g_strdup(wrt[i]));
  for (guint i = 0; i < order->len; i++) {
    const WeirNode *n = g_ptr_array_index(order, i);
    g_autoptr(GPtrArray) ins = port_names(s, n, TRUE);
    g_autoptr(GPtrArray) outs = port_names(s, n, FALSE);
    gboolean dep = FALSE;
    for (guint k = 0; k < ins->len; k++)
      if (ins->pdata[k] && input_differentiable(n, k) &&
          g_hash_table_contains(ctx.needs, ins->pdata[k]))
        dep = TRUE;
    for (guint k = 0; dep && k < outs->len; k++)
      if (outs->pdata[k] && is_float_value(g, outs->pdata[k]))
        g_hash_table_add(ctx.needs, g_strdup(outs->pdata[k]));
  }

  /* Values reaching a seed (backward). */
  {
    g_autofree gpointer *keys = g_hash_table_get_keys_as_array(seeds, NULL);
    ctx.useful = reaching(g, s, order, (const char *const *)keys);
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
    const WeirNode *n = g_ptr_array_index(order, i);
    g_autoptr(GPtrArray) ins = port_names(s, n, TRUE);
    g_autoptr(GPtrArray) outs = port_names(s, n, FALSE);
    ctx.node = n;
    ctx.ins = ins;
    ctx.outs = outs;
    gboolean wanted = FALSE, reached = FALSE;
    for (guint k = 0; k < ins->len; k++)
      wanted = wanted || weir_grad_wants(&ctx, k);
    for (guint k = 0; k < outs->len; k++)
      reached =
          reached || (outs->pdata[k] &&
                      g_hash_table_contains(ctx.partials, outs->pdata[k]));
    if (!wanted || !reached)
      continue;
    WeirGradRule rule = weir_grad_lookup(n->op);
    if (!rule) {
      weir_grad_fail(&ctx, error, WEIR_ERROR_UNSUPPORTED,
                     "no backward rule for operator %s", n->op);
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
  g_array_unref(ctx.created);
  return result;
}
