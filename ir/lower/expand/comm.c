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
 */
#include "expand-util.h"

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

void weir_expand_register_comm(void) {
  weir_op_register_expansion("Allreduce", "pure", expand_copies);
  weir_op_register_expansion("Broadcast", "pure", expand_copies);
}
