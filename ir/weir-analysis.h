/* weir-analysis.h — data movement, FLOPs, operational intensity, liveness.
 *
 * Counting rules (docs/ir-format.md, "Analyses"):
 *  - A memlet moves volume x executions elements, where executions is the
 *    product of the sizes of the map ranges enclosing the memlet (an edge
 *    between a map entry and a node inside it is inside that map).  Bytes
 *    are elements x the dtype size of its container.  Empty memlets move
 *    nothing.
 *  - Data movement of a state ("bytes moved") counts the memlets that touch
 *    an access node: that is where data leaves or enters a container.  Inner
 *    memlets describe the same traffic per iteration and are reported per
 *    memlet but not added again.
 *  - FLOPs of a tasklet are weir_code_flops() of its body, plus one per
 *    element written through a WCR memlet, times its executions.  A map
 *    scope's FLOPs are the sum of the nodes inside it.  Library nodes get
 *    FLOPs from a cost function registered for their op, when there is one.
 *  - State and program totals count each state once (one execution of each
 *    state; loops are not unrolled).
 *  - Peak transient memory: transients are live from their first to their
 *    last access in a linear order of the states (reverse post-order from the
 *    start) and of the nodes in each state (topological); a transient used
 *    in several states is live over the whole span between them.  The peak is
 *    the largest sum of the sizes of simultaneously live transients.
 * Every figure is kept as a symbolic expression and, when all its symbols
 * are bound, as a number.
 */
#ifndef WEIR_ANALYSIS_H
#define WEIR_ANALYSIS_H

#include "weir-graph.h"

G_BEGIN_DECLS

/* A symbolic quantity with its value when known. */
typedef struct {
  WeirExpr *expr; /* owned; NULL when unknown (e.g. library FLOPs) */
  gboolean known; /* value is valid */
  gint64 value;
} WeirQuantity;

typedef struct {
  guint state, edge;
  WeirQuantity executions; /* product of enclosing map sizes */
  WeirQuantity elements;   /* volume x executions */
  WeirQuantity bytes;
  gboolean counted;        /* touches an access node */
} WeirMemletCost;

typedef struct {
  guint state, node;
  WeirQuantity bytes_in, bytes_out; /* over all incoming/outgoing memlets */
  WeirQuantity flops;               /* for map entries: the whole scope */
} WeirNodeCost;

typedef struct {
  guint state;
  WeirQuantity bytes; /* data movement (counted memlets) */
  WeirQuantity flops;
} WeirStateCost;

typedef struct {
  GPtrArray *memlets; /* WeirMemletCost*, by state then edge id */
  GPtrArray *nodes;   /* WeirNodeCost*, by state then node id */
  GPtrArray *states;  /* WeirStateCost*, by state id */
  WeirQuantity total_bytes;
  WeirQuantity total_flops;
  gboolean intensity_known;
  double intensity;   /* FLOPs per byte */
  WeirQuantity peak_transient_bytes;
  GPtrArray *peak_live; /* char* names of the transients live at the peak */
  guint node_counts[WEIR_NODE_KIND_COUNT];
} WeirAnalysis;

/* Computes every figure.  bindings (name -> gint64*, may be NULL) give
 * values to symbols.  Fails only on a state whose scopes are broken (the
 * validator reports those). */
WEIR_API WeirAnalysis *weir_analysis_compute(const WeirGraph *g,
                                             GHashTable *bindings,
                                             GError **error);
WEIR_API void weir_analysis_free(WeirAnalysis *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirAnalysis, weir_analysis_free)

WEIR_API const WeirMemletCost *weir_analysis_memlet(const WeirAnalysis *a,
                                                    guint edge);
WEIR_API const WeirNodeCost *weir_analysis_node(const WeirAnalysis *a,
                                                guint node);
WEIR_API const WeirStateCost *weir_analysis_state(const WeirAnalysis *a,
                                                  guint state);

/* Cost model of library nodes: FLOPs of one execution of node n, or NULL
 * when unknown.  Registered per op name (replacing an earlier one);
 * thread-safe. */
typedef WeirExpr *(*WeirLibraryFlopsFunc)(const WeirGraph *g,
                                          const WeirState *s,
                                          const WeirNode *n);
WEIR_API void weir_analysis_register_library_flops(const char *op,
                                                   WeirLibraryFlopsFunc f);

G_END_DECLS

#endif
