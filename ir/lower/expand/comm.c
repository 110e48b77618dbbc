/* comm.c — pure expansions of the communication operators (ir/ops/comm.c).
 *
 * The pure expansion is the meaning of Allreduce and Broadcast in one
 * process: the sum and the mean over one rank, and the value of the only
 * rank, are the input itself.  Each input becomes one copy map y = x (in
 * place, when output k is the container of input k, the map rewrites each
 * element with itself, which keeps the order of the readers and writers).
 * The interpreter and every program compiled without the native "mpi"
 * implementation run this; the "mpi" implementation (core/native-mpi.c)
 * reduces over the ranks of the MPI job.
 *
 * The non-blocking pair in one process: AllreduceStart copies each input
 * into its slice of the buffer (copy memlets x_k -> buf[off:off + |x_k|])
 * and writes 0 to the request; AllreduceWait copies the slices back out
 * (buf[off:off + |y_k|] -> y_k): the sum and the mean over one rank.
 * AllreduceTest leaves its requests as they are (copies in place).
 */
#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_comm(void);

static gboolean expand_copies(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  guint n_ports = n->in_conns->len;
  for (guint k = 0; k < n_ports; k++) {
    WeirPort x, y;
    if (!weir_port_require_input(g, s, n, k, &x, error) ||
        !weir_port_require_output(g, s, n, k, &y, error))
      return FALSE;
    g_auto(GStrv) params = weir_expand_params("i", x.rank);
    g_auto(GStrv) ranges = weir_expand_full_ranges(x.rank, x.shape);
    g_autofree char *index =
        weir_expand_index_subset(x.rank, (const char *const *)params);
    g_autofree char *label = g_strdup_printf("%s_copy%u", n->label, k);
    WeirTaskletPort in = {x.access, "x", index, WEIR_WCR_NONE};
    WeirTaskletPort out = {y.access, "y", index, WEIR_WCR_NONE};
    if (!weir_expand_map(g, s, label, x.rank, (const char *const *)params,
                         (const char *const *)ranges, &in, 1, &out, 1, "y = x",
                         NULL, 0, error))
      return FALSE;
  }
  weir_state_remove_node(s, n->id);
  return TRUE;
}

/* Copy memlet between the whole of `whole` and buf[off:off + volume]. */
static gboolean slice_copy(WeirGraph *g, WeirState *s, const WeirPort *whole,
                           const WeirPort *buf, WeirExpr *off, WeirExpr *vol,
                           gboolean into_buf, GError **error) {
  g_autoptr(WeirExpr) end = weir_expr_add(off, vol);
  g_autofree char *o = weir_expr_to_string(off);
  g_autofree char *e = weir_expr_to_string(end);
  g_autofree char *slice = g_strdup_printf("%s:%s", o, e);
  g_autoptr(WeirSubset) full = weir_container_full_subset(whole->container);
  g_autofree char *fs = weir_subset_to_string(full);
  WeirMemlet *m =
      into_buf ? weir_state_add_memlet(g, s, whole->access->id, NULL,
                                       buf->access->id, NULL,
                                       whole->container->name, fs, error)
               : weir_state_add_memlet(g, s, buf->access->id, NULL,
                                       whole->access->id, NULL,
                                       buf->container->name, slice, error);
  return m && weir_memlet_set_other(m, into_buf ? slice : fs, error);
}

/* The tensors of a start (inputs) or wait (outputs) against the buffer:
 * one dtype, volumes adding up to the buffer's length. */
static gboolean pack_copies(WeirGraph *g, WeirState *s, WeirNode *n,
                            gboolean start, GError **error) {
  WeirPort buf;
  if (!(start ? weir_port_require_output(g, s, n, 0, &buf, error)
              : weir_port_require_input(g, s, n, 0, &buf, error)))
    return FALSE;
  if (buf.rank != 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "buffer '%s' has rank %u: 1-D", buf.container->name,
                          buf.rank);
  const GPtrArray *conns = start ? n->in_conns : n->out_conns;
  g_autoptr(WeirExpr) off = weir_expr_const(0);
  for (guint k = 0; k < conns->len; k++) {
    WeirPort x;
    if (!(start ? weir_port_require_input(g, s, n, k, &x, error)
                : weir_port_require_output(g, s, n, k, &x, error)))
      return FALSE;
    if (x.container->dtype != buf.container->dtype)
      return weir_node_fail(
          error, WEIR_ERROR_INVALID, n, "'%s' is %s, buffer '%s' %s",
          x.container->name, weir_dtype_name(x.container->dtype),
          buf.container->name, weir_dtype_name(buf.container->dtype));
    g_autoptr(WeirExpr) vol = weir_container_volume(x.container);
    gint64 c;
    if (!(weir_expr_is_const(vol, &c) && c == 0) &&
        !slice_copy(g, s, &x, &buf, off, vol, start, error))
      return FALSE;
    WeirExpr *next = weir_expr_add(off, vol);
    weir_expr_unref(off);
    off = next;
  }
  gint64 a, b;
  if (weir_expr_is_const(off, &a) && weir_expr_is_const(buf.shape[0], &b) &&
      a != b)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "the tensors have %" G_GINT64_FORMAT
                          " elements, buffer '%s' %" G_GINT64_FORMAT,
                          a, buf.container->name, b);
  return TRUE;
}

static gboolean expand_start(WeirGraph *g, WeirState *s, WeirNode *n,
                             GError **error) {
  WeirPort req;
  if (!pack_copies(g, s, n, TRUE, error) ||
      !weir_port_require_output(g, s, n, 1, &req, error))
    return FALSE;
  g_autofree char *label = weir_expand_name(n, "request");
  WeirTaskletPort out = {req.access, "y", "0", WEIR_WCR_NONE};
  if (!weir_expand_map(g, s, label, 0, NULL, NULL, NULL, 0, &out, 1, "y = 0",
                       NULL, 0, error))
    return FALSE;
  weir_state_remove_node(s, n->id);
  return TRUE;
}

static gboolean expand_wait(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  if (!pack_copies(g, s, n, FALSE, error))
    return FALSE;
  weir_state_remove_node(s, n->id);
  return TRUE;
}

void weir_expand_register_comm(void) {
  weir_op_register_expansion("Allreduce", "pure", expand_copies);
  weir_op_register_expansion("Broadcast", "pure", expand_copies);
  weir_op_register_expansion("AllreduceStart", "pure", expand_start);
  weir_op_register_expansion("AllreduceWait", "pure", expand_wait);
  weir_op_register_expansion("AllreduceTest", "pure", expand_copies);
}
