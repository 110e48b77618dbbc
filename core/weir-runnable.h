/* weir-runnable.h — what `weir validate` checks beyond the IR validator.
 *
 * weir_graph_validate() checks the structure of a program.  The paths that
 * run it refuse more: the expansion of library nodes (run-ref, and the code
 * generator for operators without a native implementation) fails on an
 * unknown operator or on inputs its operator cannot take (a broadcast that
 * cannot work, a pooling window larger than its input), and a run refuses
 * sizes that overflow or exceed the memory (weir-limits.h).  This check
 * runs those same checks without running anything, so that a program
 * `weir validate` calls valid is not refused later for its content.
 */
#ifndef WEIR_RUNNABLE_H
#define WEIR_RUNNABLE_H

#include "weir-graph.h"

G_BEGIN_DECLS

/* Checks g (which must pass weir_graph_validate) as the run paths would:
 *  - every library node's operator is registered (weir_op_lookup), its
 *    attributes match the schema and its shape inference accepts the
 *    shapes of the containers on its input connectors ("inK");
 *  - a copy of g expands completely (weir_expand_all) and the expanded
 *    program validates;
 *  - every container whose shape is constant has a size that fits in 64
 *    bits (weir_graph_check_size_limits).
 * Returns FALSE with a WEIR_ERROR_INVALID error listing every problem, one
 * per line ("state 4 'main', node 7 (library 'x'): ...").  warnings (may be
 * NULL) receives owned strings for containers larger than the physical
 * memory of this machine: valid, but they cannot run here. */
/**
 * weir_graph_check_runnable:
 * @warnings: (nullable) (element-type utf8):
 */
WEIR_API gboolean weir_graph_check_runnable(const WeirGraph *g,
                                            GPtrArray *warnings,
                                            GError **error);

G_END_DECLS

#endif
