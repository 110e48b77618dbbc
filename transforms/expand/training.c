/* training.c — pure expansions of the training operators (ir/ops/training.c).
 *
 *   Pointwise: one map over the output shape (parameters p0, p1, ...)
 *     holding one tasklet with the node's code; input k is tasklet
 *     connector 'a' + k, read through its numpy-broadcast subset.
 *   SumTo: a map that zeroes the output, then a map over x that adds each
 *     element into the output element it broadcasts from (WCR sum).
 */
#include <string.h>

#include "expand-util.h"

void weir_expand_register_training(void);

static gboolean fail(GError **error, const WeirNode *n, const char *msg) {
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "node '%s' (%s): %s",
              n->label, n->op, msg);
  return FALSE;
}

static gboolean expand_pointwise(WeirGraph *g, WeirState *s, WeirNode *n,
                                 GError **error) {
  const WeirAttr *code = weir_node_attr(n, "code");
  if (!code || code->type != WEIR_ATTR_STRING)
    return fail(error, n, "attribute 'code' is missing");
  WeirPort y;
  if (!weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  guint n_ins = n->in_conns->len;
  if (n_ins == 0 || n_ins > 8)
    return fail(error, n, "needs 1 to 8 inputs");
  g_auto(GStrv) params = weir_expand_params("p", y.rank);
  g_auto(GStrv) ranges = weir_expand_full_ranges(y.rank, y.shape);
  g_autofree WeirTaskletPort *ins = g_new0(WeirTaskletPort, n_ins);
  g_autoptr(GPtrArray) texts = g_ptr_array_new_with_free_func(g_free);
  static const char *const names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  for (guint k = 0; k < n_ins; k++) {
    WeirPort x;
    if (!weir_port_require_input(g, s, n, k, &x, error))
      return FALSE;
    char *sub = weir_expand_broadcast_subset(x.rank, x.shape, y.rank,
                                             (const char *const *)params);
    g_ptr_array_add(texts, sub);
    ins[k] = (WeirTaskletPort){x.access, names[k], sub, WEIR_WCR_NONE};
  }
  g_autofree char *out_sub =
      weir_expand_index_subset(y.rank, (const char *const *)params);
  WeirTaskletPort out = {y.access, "y", out_sub, WEIR_WCR_NONE};
  if (!weir_expand_map(g, s, n->label, y.rank, (const char *const *)params,
                       (const char *const *)ranges, ins, n_ins, &out, 1,
                       code->s, NULL, 0, error))
    return FALSE;
  weir_state_remove_node(s, n->id);
  return TRUE;
}

static gboolean expand_sum_to(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  WeirPort x, like, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_input(g, s, n, 1, &like, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  g_auto(GStrv) yp = weir_expand_params("j", y.rank);
  g_auto(GStrv) yr = weir_expand_full_ranges(y.rank, y.shape);
  g_auto(GStrv) xp = weir_expand_params("i", x.rank);
  g_auto(GStrv) xr = weir_expand_full_ranges(x.rank, x.shape);
  g_autofree char *y_index =
      weir_expand_index_subset(y.rank, (const char *const *)yp);
  g_autofree char *x_index =
      weir_expand_index_subset(x.rank, (const char *const *)xp);
  g_autofree char *acc = weir_expand_broadcast_subset(y.rank, y.shape, x.rank,
                                                      (const char *const *)xp);
  g_autofree char *init_label = g_strdup_printf("%s_init", n->label);
  g_autofree char *sum_label = g_strdup_printf("%s_sum", n->label);
  WeirNode *y1 = weir_state_add_access(g, s, y.container->name);
  WeirTaskletPort init_out = {y1, "y", y_index, WEIR_WCR_NONE};
  WeirTaskletPort in_x = {x.access, "x", x_index, WEIR_WCR_NONE};
  WeirTaskletPort acc_out = {y.access, "y", acc, WEIR_WCR_SUM};
  if (!weir_expand_map(g, s, init_label, y.rank, (const char *const *)yp,
                       (const char *const *)yr, NULL, 0, &init_out, 1, "y = 0",
                       NULL, 0, error) ||
      !weir_expand_map(g, s, sum_label, x.rank, (const char *const *)xp,
                       (const char *const *)xr, &in_x, 1, &acc_out, 1, "y = x",
                       &y1, 1, error))
    return FALSE;
  /* `like` only gave the shape. */
  guint like_access = like.access->id;
  weir_state_remove_node(s, n->id);
  g_autoptr(GPtrArray) lin = weir_state_in_edges(s, like_access);
  g_autoptr(GPtrArray) lout = weir_state_out_edges(s, like_access);
  if (lin->len == 0 && lout->len == 0)
    weir_state_remove_node(s, like_access);
  return TRUE;
}

void weir_expand_register_training(void) {
  weir_op_register_expansion("Pointwise", "pure", expand_pointwise);
  weir_op_register_expansion("SumTo", "pure", expand_sum_to);
}
