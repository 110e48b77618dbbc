/* runnable.c — the operator and size checks of the run paths, without a
 * run (weir-runnable.h). */
#include "weir-runnable.h"

#include <stdlib.h>
#include <string.h>

#include "weir-expand.h"
#include "weir-limits.h"
#include "weir-ops.h"
#include "weir-validate.h"

static char *node_where(const WeirState *s, const WeirNode *n) {
  return g_strdup_printf("state %u '%s', node %u (library '%s')", s->id,
                         s->label ? s->label : "", n->id,
                         n->label ? n->label : "");
}

/* The index K of connector "inK", or -1. */
static gint input_index(const char *conn) {
  if (!g_str_has_prefix(conn, "in") || !g_ascii_isdigit(conn[2]))
    return -1;
  char *end = NULL;
  guint64 k = g_ascii_strtoull(conn + 2, &end, 10);
  return *end || k > 1024 ? -1 : (gint)k;
}

/* "<node id>:<connector>" -> container name (borrowed) of the non-empty
 * memlets into a connector of s: one pass, so that checking every node of
 * a large state stays linear. */
static GHashTable *inputs_index(const WeirState *s) {
  GHashTable *index =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->data && m->dst_conn)
      g_hash_table_insert(index, g_strdup_printf("%u:%s", m->dst, m->dst_conn),
                          m->data);
  }
  return index;
}

/* The container on the memlet into connector conn of node n, or NULL. */
static const WeirContainer *input_container(const WeirGraph *g,
                                            GHashTable *index,
                                            const WeirNode *n,
                                            const char *conn) {
  g_autofree char *key = g_strdup_printf("%u:%s", n->id, conn);
  const char *data = g_hash_table_lookup(index, key);
  return data ? weir_graph_container(g, data) : NULL;
}

/* Shape inference of library node n (of a copy: attributes normalized in
 * place) on its input containers.  Nodes whose connectors are not all
 * "inK" are left to the expansion check. */
static void check_library(const WeirGraph *g, const WeirState *s,
                          GHashTable *index, WeirNode *n, GPtrArray *problems) {
  g_autofree char *where = node_where(s, n);
  const WeirOpInfo *info = weir_op_lookup(n->op);
  if (!info) {
    g_ptr_array_add(problems,
                    g_strdup_printf("%s: unknown operator '%s' (weir ops "
                                    "lists the operators)",
                                    where, n->op));
    return;
  }
  /* Attributes outside the operator's schema are the business of other
   * layers (the native implementation "impl", fused epilogues): the run
   * paths accept them, so the schema check here ignores them. */
  for (guint i = n->attrs->len; i-- > 0;) {
    const WeirAttr *a = g_ptr_array_index(n->attrs, i);
    gboolean known = FALSE;
    for (guint k = 0; k < info->n_attrs && !known; k++)
      known = strcmp(info->attrs[k].name, a->name) == 0;
    if (!known) {
      g_autofree char *name = g_strdup(a->name);
      weir_node_remove_attr(n, name);
    }
  }
  g_autoptr(GError) error = NULL;
  if (!weir_op_check_attrs(n, &error)) {
    g_ptr_array_add(problems, g_strdup_printf("%s: %s", where, error->message));
    return;
  }
  if (!info->infer)
    return;
  guint n_in = 0;
  for (guint i = 0; i < n->in_conns->len; i++) {
    gint k = input_index(g_ptr_array_index(n->in_conns, i));
    if (k < 0)
      return;
    n_in = MAX(n_in, (guint)k + 1);
  }
  if (n_in < info->min_inputs ||
      (info->max_inputs != WEIR_OP_VARIADIC && n_in > info->max_inputs) ||
      n->out_conns->len == 0)
    return; /* the validator and the expansion judge the connectors */
  g_autofree WeirOpValue *ins = g_new0(WeirOpValue, n_in);
  for (guint i = 0; i < n->in_conns->len; i++) {
    const char *conn = g_ptr_array_index(n->in_conns, i);
    const WeirContainer *c = input_container(g, index, n, conn);
    if (!c)
      return;
    WeirOpValue *v = &ins[input_index(conn)];
    v->present = TRUE;
    v->dtype = c->dtype;
    v->rank = c->shape->len;
    v->shape = (WeirExpr **)c->shape->pdata;
  }
  guint n_out = MAX(n->out_conns->len, info->max_outputs == WEIR_OP_VARIADIC
                                           ? n->out_conns->len
                                           : info->max_outputs);
  g_autofree WeirOpValue *outs = g_new0(WeirOpValue, n_out);
  WeirOpInferContext ctx = {.node = n,
                            .n_inputs = n_in,
                            .inputs = ins,
                            .n_outputs = n_out,
                            .outputs = outs};
  gboolean ok = info->infer(&ctx, &error);
  for (guint k = 0; k < n_out; k++)
    weir_op_value_clear(&outs[k]);
  if (!ok)
    g_ptr_array_add(
        problems,
        g_strdup_printf("%s: %s", where,
                        error ? error->message : "shape inference failed"));
}

gboolean weir_graph_check_runnable(const WeirGraph *g, GPtrArray *warnings,
                                   GError **error) {
  g_return_val_if_fail(g != NULL, FALSE);
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) local_warnings = g_ptr_array_new_with_free_func(g_free);
  weir_graph_check_size_limits(g, problems,
                               warnings ? warnings : local_warnings);

  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  guint before = problems->len;
  for (guint i = 0; i < copy->states->len; i++) {
    const WeirState *s = g_ptr_array_index(copy->states, i);
    g_autoptr(GHashTable) index = inputs_index(s);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY && n->op)
        check_library(copy, s, index, n, problems);
    }
  }
  /* The expansion reports the first problem only; run it when the nodes
   * passed one by one, so its message adds what they did not catch. */
  if (problems->len == before) {
    g_autoptr(GError) local = NULL;
    if (!weir_expand_all(copy, NULL, NULL, &local) ||
        !weir_graph_validate(copy, &local))
      g_ptr_array_add(problems, g_strdup_printf("expanding the library "
                                                "nodes: %s",
                                                local->message));
  }
  if (problems->len == 0)
    return TRUE;
  g_autoptr(GString) text = g_string_new(NULL);
  for (guint i = 0; i < problems->len; i++)
    g_string_append_printf(text, "%s%s", i ? "\n" : "",
                           (const char *)g_ptr_array_index(problems, i));
  g_set_error_literal(error, WEIR_ERROR, WEIR_ERROR_INVALID, text->str);
  return FALSE;
}
