/* weir-expand.h — expanding library nodes.
 *
 * The finer entry points of the lowering layer (weir_lower, weir-lower.h,
 * is the common one), used by the tier-1 transformation
 * expand-library-node and by tests.  They run an expansion (registered by
 * weir_init(): ir/lower/expand/) on a copy of the program, validate the
 * result, and only then replace the program: on error the program is
 * exactly as it was.
 */
#ifndef WEIR_EXPAND_H
#define WEIR_EXPAND_H

#include "weir-graph.h"

G_BEGIN_DECLS

/* Expands library node node_id with implementation impl ("pure" when NULL).
 * The error names the node, the op and the problem. */
WEIR_API gboolean weir_expand_node(WeirGraph *g, guint node_id,
                                   const char *impl, GError **error);

/* Expands every library node whose op is `op` (every one when NULL), in g
 * and in the programs nested in it, again and again until none is left (an
 * expansion may produce library nodes).  *count (optional) receives the number
 * of nodes expanded. */
WEIR_API gboolean weir_expand_all(WeirGraph *g, const char *op, guint *count,
                                  GError **error);

/* Expands library node n of state s in g itself (no copy, no validation)
 * with implementation impl ("pure" when NULL).  The ordering edges (empty
 * memlets) of n are kept: the operators the expansion creates run after
 * n's ordering predecessors and before its ordering successors.  n is
 * freed on success.  For callers that expand on a copy of their own. */
WEIR_API gboolean weir_expand_in_place(WeirGraph *g, WeirState *s, WeirNode *n,
                                       const char *impl, GError **error);

/* Expands the library nodes ids[0..n) of state s of g, each with its pure
 * expansion, all or nothing: first on a scratch copy, which must validate.
 * The fallback of reverse-mode differentiation (ir/lower/autodiff.c) for
 * operators without a backward rule; errors say so. */
WEIR_API gboolean weir_expand_nodes(WeirGraph *g, WeirState *s,
                                    const guint *ids, guint n, GError **error);

/* Epilogues.  A Gemm, MatMul or Conv library node may carry an element-wise
 * epilogue (set by the tier-3 transformation epilogue-fusion): code applied
 * to every element of its output right after the node's computation.
 *   "epilogue"        STRING: tasklet code (the fused map's tasklet);
 *   "epilogue_conns"  STRINGS: the tasklet's output connector, the
 *                     connector that receives the node's result element,
 *                     then one connector per extra input;
 * extra input k enters the node on connector "epi<k>" (a memlet covering the
 * whole container) and is read broadcast to the output (numpy rules, right
 * aligned, dimensions of size 1 read index 0).  The epilogue writes the
 * element in place: the node's output container holds the epilogue's
 * result. */
#define WEIR_EPILOGUE_CODE "epilogue"
#define WEIR_EPILOGUE_CONNS "epilogue_conns"

/* Whether n is a library node with an epilogue. */
WEIR_API gboolean weir_epilogue_present(const WeirNode *n);
/* Moves n's epilogue out of the node into an element-wise map that reads
 * n's output in place after n (and the extra inputs) and writes it back to
 * a new access node of the same container, which takes over the readers of
 * the old one.  No-op without an epilogue.  Errors name the node. */
WEIR_API gboolean weir_epilogue_split(WeirGraph *g, WeirState *s, WeirNode *n,
                                      GError **error);
/* Splits every epilogue of g and of the programs nested in it. */
WEIR_API gboolean weir_epilogue_split_all(WeirGraph *g, GError **error);
/* The same, except the epilogues of nodes whose chosen native
 * implementation applies them itself (WeirNativeImpl.takes_epilogue,
 * weir-native.h): what the code generator emits. */
WEIR_API gboolean weir_epilogue_split_unless_native(WeirGraph *g,
                                                    GError **error);

G_END_DECLS

#endif
