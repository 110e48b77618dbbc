/* weir-expand.h — expanding library nodes.
 *
 * The entry points the CLI, the conformance runner and (later) the tier-1
 * "expand" transformation use.  They make sure the built-in expansions of
 * transforms/expand/ are registered, run an expansion on a copy of the
 * program, validate the result, and only then replace the program: on
 * error the program is exactly as it was.
 */
#ifndef WEIR_EXPAND_H
#define WEIR_EXPAND_H

#include "weir-graph.h"

G_BEGIN_DECLS

/* Registers the built-in expansions (idempotent, thread-safe). */
WEIR_API void weir_expansions_init(void);

/* Expands library node node_id with implementation impl ("pure" when NULL).
 * The error names the node, the op and the problem. */
WEIR_API gboolean weir_expand_node(WeirGraph *g, guint node_id,
                                   const char *impl, GError **error);

/* Expands every library node whose op is `op` (every one when NULL), again
 * and again until none is left (an expansion may produce library nodes).
 * *count (optional) receives the number of nodes expanded. */
WEIR_API gboolean weir_expand_all(WeirGraph *g, const char *op, guint *count,
                                  GError **error);

/* Expands library node n of state s in g itself (no copy, no validation)
 * with implementation impl ("pure" when NULL).  The ordering edges (empty
 * memlets) of n are kept: the operators the expansion creates run after
 * n's ordering predecessors and before its ordering successors.  n is
 * freed on success.  For callers that expand on a copy of their own. */
WEIR_API gboolean weir_expand_in_place(WeirGraph *g, WeirState *s, WeirNode *n,
                                       const char *impl, GError **error);

G_END_DECLS

#endif
