/* epilogue.c — turning a library node's epilogue back into a map.
 *
 * The tier-3 transformation epilogue-fusion (transforms/tier3/
 * epilogue-fusion.c) folds an element-wise map into the Gemm, MatMul or
 * Conv node that produces its input; the map's tasklet becomes the node's
 * epilogue (attributes in ir/lower/weir-expand.h).  Every implementation
 * honours it the same way: right after the node's own computation, a map
 * over the output reads each element (and the broadcast extra inputs),
 * runs the epilogue code and writes the element back in place.  That is
 * what weir_epilogue_split builds: the pure expansions split before they
 * expand, the code generator splits native nodes so the epilogue loop
 * follows the BLAS call while the output is still in cache.
 */
#include <string.h>

#include "expand/expand-util.h"
#include "weir-expand.h"
#include "weir-native.h"

gboolean weir_epilogue_present(const WeirNode *n) {
  return n->kind == WEIR_NODE_LIBRARY &&
         weir_node_attr(n, WEIR_EPILOGUE_CODE) != NULL;
}

/* The memlet entering n on connector conn, or NULL. */
static WeirMemlet *in_memlet(const WeirState *s, const WeirNode *n,
                             const char *conn) {
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->dst == n->id && g_strcmp0(m->dst_conn, conn) == 0)
      return m;
  }
  return NULL;
}

gboolean weir_epilogue_split(WeirGraph *g, WeirState *s, WeirNode *n,
                             GError **error) {
  if (!weir_epilogue_present(n))
    return TRUE;
  g_autofree char *where = weir_describe_node(s, n);
  const WeirAttr *code = weir_node_attr(n, WEIR_EPILOGUE_CODE);
  const WeirAttr *conns = weir_node_attr(n, WEIR_EPILOGUE_CONNS);
  if (code->type != WEIR_ATTR_STRING || !code->s || !conns ||
      conns->type != WEIR_ATTR_STRINGS || conns->strings->len < 2) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: malformed epilogue: '%s' must be a string and '%s' a "
                "list of at least two connector names",
                where, WEIR_EPILOGUE_CODE, WEIR_EPILOGUE_CONNS);
    return FALSE;
  }
  WeirPort y;
  if (!weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  guint n_extra = conns->strings->len - 2;
  guint rank = y.rank;
  g_auto(GStrv) params = weir_expand_params("ep", rank);
  g_auto(GStrv) ranges = weir_expand_full_ranges(rank, y.shape);
  g_autofree char *idx =
      weir_expand_index_subset(rank, (const char *const *)params);
  g_autofree WeirTaskletPort *ins = g_new0(WeirTaskletPort, n_extra + 1);
  g_autoptr(GPtrArray) subsets = g_ptr_array_new_with_free_func(g_free);
  ins[0] = (WeirTaskletPort){.access = y.access,
                             .conn = g_ptr_array_index(conns->strings, 1),
                             .subset = idx};
  g_autoptr(GPtrArray) extra_memlets = g_ptr_array_new();
  for (guint k = 0; k < n_extra; k++) {
    g_autofree char *conn = g_strdup_printf("epi%u", k);
    WeirMemlet *m = in_memlet(s, n, conn);
    WeirNode *src = m ? weir_state_node(s, m->src) : NULL;
    WeirContainer *x = m && m->data ? weir_graph_container(g, m->data) : NULL;
    if (!src || src->kind != WEIR_NODE_ACCESS || !x || x->shape->len > rank) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: epilogue input '%s' must be read from an access node "
                  "of a container of rank <= %u",
                  where, conn, rank);
      return FALSE;
    }
    char *sub = weir_expand_broadcast_subset(x->shape->len,
                                             (WeirExpr *const *)x->shape->pdata,
                                             rank, (const char *const *)params);
    g_ptr_array_add(subsets, sub);
    ins[k + 1] =
        (WeirTaskletPort){.access = src,
                          .conn = g_ptr_array_index(conns->strings, k + 2),
                          .subset = sub};
    g_ptr_array_add(extra_memlets, m);
  }
  /* The result of the epilogue is a new version of the output: its readers
   * (and ordering successors) move to a second access node. */
  WeirNode *after = weir_state_add_access(g, s, y.container->name);
  g_autoptr(GPtrArray) outs = weir_state_out_edges(s, y.access->id);
  for (guint i = 0; i < outs->len; i++) {
    WeirMemlet *m = g_ptr_array_index(outs, i);
    weir_memlet_set_src(s, m, after->id, m->src_conn);
  }
  WeirTaskletPort out = {.access = after,
                         .conn = g_ptr_array_index(conns->strings, 0),
                         .subset = idx,
                         .wcr = WEIR_WCR_NONE};
  g_autofree char *label = weir_expand_name(n, "epilogue");
  if (!weir_expand_map(g, s, label, rank, (const char *const *)params,
                       (const char *const *)ranges, ins, n_extra + 1, &out, 1,
                       code->s, NULL, 0, error))
    return FALSE;
  /* Ordering edges leaving the node (empty memlets without a connector,
   * such as transient-reuse's) said "after this node has read its
   * operands"; the epilogue inputs are now read by the map, so they leave
   * from the map's exit instead, which follows the node. */
  g_autoptr(GPtrArray) written = weir_state_in_edges(s, after->id);
  guint exit_id =
      written->len ? ((WeirMemlet *)g_ptr_array_index(written, 0))->src : 0;
  g_autoptr(GPtrArray) node_outs = weir_state_out_edges(s, n->id);
  for (guint i = 0; exit_id && i < node_outs->len; i++) {
    WeirMemlet *m = g_ptr_array_index(node_outs, i);
    if (!m->src_conn && !m->data)
      weir_memlet_set_src(s, m, exit_id, NULL);
  }
  for (guint i = 0; i < extra_memlets->len; i++) {
    WeirMemlet *m = g_ptr_array_index(extra_memlets, i);
    g_autofree char *conn = g_strdup(m->dst_conn);
    weir_state_remove_memlet(s, m->id);
    weir_node_remove_in_conn(n, conn);
  }
  weir_node_remove_attr(n, WEIR_EPILOGUE_CODE);
  weir_node_remove_attr(n, WEIR_EPILOGUE_CONNS);
  return TRUE;
}

/* Whether n's chosen native implementation applies its epilogue itself. */
static gboolean native_takes(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n) {
  const WeirNativeImpl *ni = NULL;
  if (!weir_native_choice(g, s, n, &ni, NULL) || !ni || !ni->takes_epilogue)
    return FALSE;
  return ni->takes_epilogue(g, s, n);
}

static gboolean split_all(WeirGraph *g, gboolean keep_native, GError **error) {
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    /* Splitting adds nodes (with larger ids) after the current one. */
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_NESTED && n->nested &&
          !split_all(n->nested, keep_native, error))
        return FALSE;
      if (!weir_epilogue_present(n) || (keep_native && native_takes(g, s, n)))
        continue;
      if (!weir_epilogue_split(g, s, n, error))
        return FALSE;
    }
  }
  return TRUE;
}

gboolean weir_epilogue_split_all(WeirGraph *g, GError **error) {
  return split_all(g, FALSE, error);
}

gboolean weir_epilogue_split_unless_native(WeirGraph *g, GError **error) {
  return split_all(g, TRUE, error);
}
