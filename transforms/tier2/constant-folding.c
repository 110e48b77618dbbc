/* constant-folding.c — evaluates, at transformation time, a library node
 * whose inputs are all constants.
 *
 * Site: one library node [node].  It is a candidate when every input is a
 * constant container (a transient with initial data) — nodes without
 * inputs (ConstantOfShape, Range) included — or when it is a Shape node
 * (whose result only depends on its input's shape, so the input need not be
 * constant, only concretely shaped in the dimensions it reports).
 *
 * The node is evaluated exactly as the program would evaluate it: a small
 * program holding just that node and its containers is expanded
 * (weir_expand_all) and run by the reference interpreter.  Each output
 * container then receives the result as its constant data and the node is
 * removed; the output keeps its name, so its readers are untouched.  Inputs
 * left unread are removed, and so is an output nobody reads (the node was
 * dead code).
 *
 * Legality: the outputs are transients of concrete shape written only by
 * this node and used only in its state (a constant holds its value from the
 * program's start); each has at most max-elements elements; the operator
 * is deterministic and has a pure expansion.
 */
#include "tier2-util.h"
#include "weir-expand.h"
#include "weir-interp.h"
#include "weir-ops.h"
#include "weir-plugin.h"

gboolean weir_tier2_register_constant_folding(GError **error);

static const WeirParamSpec fold_params[] = {
    {
        .name = "max-elements",
        .type = WEIR_PARAM_INT,
        .default_value = "1048576",
        .min = 1,
        .max = G_GINT64_CONSTANT(1) << 40,
        .doc = "largest output (in elements) that is folded into a constant",
    },
};

static gboolean is_shape(const WeirNode *n) {
  return g_strcmp0(n->op, "Shape") == 0;
}

/* The dimensions [*start, *end) a Shape node reports for an input of the
 * given rank (ONNX: negative values count from the end, then clamp). */
static void shape_bounds(const WeirNode *n, guint rank, gint64 *start,
                         gint64 *end) {
  const WeirAttr *a = weir_node_attr(n, "start");
  const WeirAttr *b = weir_node_attr(n, "end");
  gint64 s = a && a->type == WEIR_ATTR_INT ? a->i : 0;
  gint64 e = b && b->type == WEIR_ATTR_INT ? b->i : (gint64)rank;
  if (s < 0)
    s += rank;
  if (e < 0)
    e += rank;
  *start = CLAMP(s, 0, (gint64)rank);
  *end = CLAMP(e, 0, (gint64)rank);
  if (*end < *start)
    *end = *start;
}

/* Is a library node a candidate (before the legality checks)? */
static gboolean candidate(const WeirGraph *g, const WeirState *s,
                          const WeirNode *n) {
  if (n->kind != WEIR_NODE_LIBRARY || !weir_tier2_wired(g, s, n) ||
      n->out_conns->len == 0)
    return FALSE;
  if (is_shape(n))
    return n->in_conns->len == 1;
  for (guint i = 0; i < n->in_conns->len; i++) {
    WeirTier2Port p;
    if (!weir_tier2_nth_port(g, s, n, TRUE, i, &p) ||
        !weir_tier2_is_constant(p.container))
      return FALSE;
  }
  return TRUE;
}

static void fold_match(const WeirGraph *g, GArray *sites) {
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(s->nodes, i);
      if (!candidate(g, s, n))
        continue;
      WeirSite site = {.state = s->id, .n_nodes = 1, .nodes = {n->id}};
      g_array_append_val(sites, site);
    }
  }
}

static gboolean fold_can_apply(const WeirGraph *g, const WeirSite *site,
                               const WeirParams *params, char **reason) {
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *n =
      site->n_nodes == 1 ? weir_tier2_site_node(s, site->nodes[0]) : NULL;
  if (!n || n->kind != WEIR_NODE_LIBRARY)
    return weir_tier2_reject(reason, "the site is not one library node");
  if (!weir_tier2_wired(g, s, n))
    return weir_tier2_reject(reason,
                             "node '%s' (%s) does not follow the library-node "
                             "conventions",
                             n->label, n->op);
  if (n->out_conns->len == 0)
    return weir_tier2_reject(reason, "node '%s' (%s) has no output", n->label,
                             n->op);
  if (!weir_tier2_is_deterministic(n))
    return weir_tier2_reject(reason, "node '%s' (%s) is not deterministic",
                             n->label, n->op);
  if (is_shape(n)) {
    WeirTier2Port x;
    if (n->in_conns->len != 1 || !weir_tier2_nth_port(g, s, n, TRUE, 0, &x))
      return weir_tier2_reject(reason, "Shape node '%s' has no input",
                               n->label);
    guint rank = x.container->shape->len;
    gint64 start, end;
    shape_bounds(n, rank, &start, &end);
    for (gint64 d = start; d < end; d++)
      if (!weir_expr_is_const(g_ptr_array_index(x.container->shape, d), NULL)) {
        g_autofree char *dim =
            weir_expr_to_string(g_ptr_array_index(x.container->shape, d));
        return weir_tier2_reject(
            reason, "dimension %" G_GINT64_FORMAT " of '%s' is symbolic (%s)",
            d, x.container->name, dim);
      }
  } else {
    for (guint i = 0; i < n->in_conns->len; i++) {
      WeirTier2Port x;
      weir_tier2_nth_port(g, s, n, TRUE, i, &x);
      if (!weir_tier2_is_constant(x.container))
        return weir_tier2_reject(
            reason, "input '%s' (%s) is not a constant", x.container->name,
            (const char *)g_ptr_array_index(n->in_conns, i));
    }
    if (!weir_op_expansion(n->op, "pure"))
      return weir_tier2_reject(reason, "operator '%s' has no expansion", n->op);
  }
  gint64 max = weir_params_get_int(params, "max-elements");
  for (guint i = 0; i < n->out_conns->len; i++) {
    WeirTier2Port y;
    weir_tier2_nth_port(g, s, n, FALSE, i, &y);
    const WeirContainer *c = y.container;
    if (!c->transient)
      return weir_tier2_reject(reason,
                               "output '%s' is a program argument, not a "
                               "transient",
                               c->name);
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    if (!weir_tier2_concrete_shape(c, shape))
      return weir_tier2_reject(reason, "output '%s' has a symbolic shape",
                               c->name);
    gint64 count = 1;
    for (guint d = 0; d < c->shape->len; d++)
      count *= shape[d];
    if (count > max)
      return weir_tier2_reject(
          reason,
          "output '%s' has %" G_GINT64_FORMAT
          " elements, more than max-elements (%" G_GINT64_FORMAT ")",
          c->name, count, max);
    WeirTier2Use use;
    weir_tier2_use(g, c->name, &use);
    if (use.writes != 1 || y.memlet->wcr != WEIR_WCR_NONE)
      return weir_tier2_reject(reason, "output '%s' is also written elsewhere",
                               c->name);
    if (!weir_tier2_local(g, s, c->name))
      return weir_tier2_reject(reason, "output '%s' is used in another state",
                               c->name);
  }
  return TRUE;
}

/* The result of a Shape node: the dimensions of its input. */
static WeirTensor *shape_result(const WeirContainer *x, const WeirNode *n) {
  gint64 start, end;
  shape_bounds(n, x->shape->len, &start, &end);
  gint64 len = end - start;
  WeirTensor *t = weir_tensor_new(WEIR_DTYPE_I64, 1, &len);
  for (gint64 d = start; d < end; d++)
    ((gint64 *)t->data)[d - start] =
        weir_expr_const_value(g_ptr_array_index(x->shape, d));
  return t;
}

/* Adds to mini a container like c (same name, dtype, shape). */
static WeirContainer *copy_container(WeirGraph *mini, const WeirContainer *c,
                                     gboolean transient, GError **error) {
  WeirContainer *have = weir_graph_container(mini, c->name);
  if (have)
    return have;
  WeirContainer *nc = weir_graph_add_container(
      mini, c->name, c->dtype, c->shape->len,
      (WeirExpr *const *)c->shape->pdata, transient, error);
  if (nc && c->initial)
    weir_container_set_initial(nc, c->initial);
  return nc;
}

static gboolean wire(WeirGraph *mini, WeirState *st, WeirNode *lib,
                     const WeirContainer *c, const char *conn, gboolean input,
                     GError **error) {
  WeirNode *a = weir_state_add_access(mini, st, c->name);
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autofree char *text = weir_subset_to_string(full);
  return input ? weir_state_add_memlet(mini, st, a->id, NULL, lib->id, conn,
                                       c->name, text, error) != NULL
               : weir_state_add_memlet(mini, st, lib->id, conn, a->id, NULL,
                                       c->name, text, error) != NULL;
}

/* Evaluates n on its constant inputs: the tensors of its outputs, in
 * out_conns order (transfer full). */
static GPtrArray *evaluate(const WeirGraph *g, const WeirState *s,
                           const WeirNode *n, GError **error) {
  g_autoptr(GPtrArray) results =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_tensor_free);
  if (is_shape(n)) {
    WeirTier2Port x, y;
    weir_tier2_nth_port(g, s, n, TRUE, 0, &x);
    weir_tier2_nth_port(g, s, n, FALSE, 0, &y);
    WeirTensor *t = shape_result(x.container, n);
    gint64 count = 1;
    g_autofree gint64 *shape = g_new0(gint64, y.container->shape->len + 1);
    weir_tier2_concrete_shape(y.container, shape);
    for (guint d = 0; d < y.container->shape->len; d++)
      count *= shape[d];
    if (count != t->count) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "Shape node '%s': output '%s' has %" G_GINT64_FORMAT
                  " elements, the shape of '%s' has %" G_GINT64_FORMAT,
                  n->label, y.container->name, count, x.container->name,
                  t->count);
      weir_tensor_free(t);
      return NULL;
    }
    /* same elements in the output's dtype and shape */
    WeirTensor *r =
        weir_tensor_new(y.container->dtype, y.container->shape->len, shape);
    for (gint64 i = 0; i < t->count; i++)
      weir_tensor_set(r, i, (double)((gint64 *)t->data)[i]);
    weir_tensor_free(t);
    g_ptr_array_add(results, r);
    return g_steal_pointer(&results);
  }

  g_autoptr(WeirGraph) mini = weir_graph_new("fold");
  WeirState *st = weir_graph_add_state(mini, "main");
  g_autoptr(GPtrArray) ins = g_ptr_array_new();
  g_autoptr(GPtrArray) outs = g_ptr_array_new();
  for (guint i = 0; i < n->in_conns->len; i++)
    g_ptr_array_add(ins, g_ptr_array_index(n->in_conns, i));
  g_ptr_array_add(ins, NULL);
  for (guint i = 0; i < n->out_conns->len; i++)
    g_ptr_array_add(outs, g_ptr_array_index(n->out_conns, i));
  g_ptr_array_add(outs, NULL);
  WeirNode *lib = weir_state_add_library(mini, st, n->label, n->op,
                                         (const char *const *)ins->pdata,
                                         (const char *const *)outs->pdata);
  weir_node_copy_attrs(lib, n);
  for (guint i = 0; i < n->in_conns->len; i++) {
    WeirTier2Port x;
    weir_tier2_nth_port(g, s, n, TRUE, i, &x);
    WeirContainer *c = copy_container(mini, x.container, TRUE, error);
    if (!c ||
        !wire(mini, st, lib, c, g_ptr_array_index(n->in_conns, i), TRUE, error))
      return NULL;
  }
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < n->out_conns->len; i++) {
    WeirTier2Port y;
    weir_tier2_nth_port(g, s, n, FALSE, i, &y);
    if (weir_graph_container(mini, y.container->name)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "node '%s' (%s) writes '%s' twice or reads it", n->label,
                  n->op, y.container->name);
      return NULL;
    }
    WeirContainer *c = copy_container(mini, y.container, FALSE, error);
    if (!c || !wire(mini, st, lib, c, g_ptr_array_index(n->out_conns, i), FALSE,
                    error))
      return NULL;
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    weir_tier2_concrete_shape(c, shape);
    g_hash_table_insert(args, g_strdup(c->name),
                        weir_tensor_new(c->dtype, c->shape->len, shape));
    g_ptr_array_add(names, g_strdup(c->name));
  }
  if (!weir_expand_all(mini, NULL, NULL, error) ||
      !weir_interpret(mini, NULL, args, NULL, error))
    return NULL;
  for (guint i = 0; i < names->len; i++) {
    gpointer key = NULL, value = NULL;
    g_hash_table_steal_extended(args, g_ptr_array_index(names, i), &key,
                                &value);
    g_free(key);
    g_ptr_array_add(results, value);
  }
  return g_steal_pointer(&results);
}

static gboolean fold_apply(WeirGraph *g, const WeirSite *site,
                           const WeirParams *params, GError **error) {
  (void)params;
  WeirState *s = weir_tier2_site_state(g, site->state);
  WeirNode *n = weir_tier2_site_node(s, site->nodes[0]);
  g_autoptr(GError) local = NULL;
  g_autoptr(GPtrArray) results = evaluate(g, s, n, &local);
  if (!results) {
    g_autofree char *where = weir_describe_node(s, n);
    g_set_error(error, WEIR_ERROR, local->code, "%s: evaluating %s: %s", where,
                n->op, local->message);
    return FALSE;
  }
  g_autoptr(GPtrArray) inputs = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) outputs = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < n->in_conns->len; i++) {
    WeirTier2Port x;
    weir_tier2_nth_port(g, s, n, TRUE, i, &x);
    g_ptr_array_add(inputs, g_strdup(x.container->name));
  }
  for (guint i = 0; i < n->out_conns->len; i++) {
    WeirTier2Port y;
    weir_tier2_nth_port(g, s, n, FALSE, i, &y);
    const WeirTensor *t = g_ptr_array_index(results, i);
    g_autoptr(GBytes) bytes = g_bytes_new(t->data, weir_tensor_nbytes(t));
    weir_container_set_initial(y.container, bytes);
    g_ptr_array_add(outputs, g_strdup(y.container->name));
  }
  weir_state_remove_node(s, n->id);
  for (guint i = 0; i < outputs->len; i++)
    weir_tier2_drop_if_unused(g, g_ptr_array_index(outputs, i));
  for (guint i = 0; i < inputs->len; i++)
    weir_tier2_drop_if_unused(g, g_ptr_array_index(inputs, i));
  return TRUE;
}

static const WeirTransformInfo constant_folding = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "constant-folding",
    .tier = 2,
    .description = "evaluate a library node whose inputs are constants (or a "
                   "Shape of a concretely shaped value) into a constant",
    .params = fold_params,
    .n_params = G_N_ELEMENTS(fold_params),
    .match = fold_match,
    .can_apply = fold_can_apply,
    .apply = fold_apply,
};

gboolean weir_tier2_register_constant_folding(GError **error) {
  return weir_transform_register(&constant_folding, error);
}
