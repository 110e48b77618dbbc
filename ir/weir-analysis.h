/* weir-analysis.h — data movement, FLOPs, operational intensity, liveness.
 *
 * Counting rules (docs/ir-format.md, "Analyses"):
 *  - A memlet moves volume x executions elements, where executions is the
 *    product of the sizes of the map ranges enclosing the memlet.  An edge
 *    into a map entry is outside that map, an edge out of a map entry is
 *    inside it; an edge out of a map exit is outside the map, an edge into a
 *    map exit is inside it; any other edge is in the scope of its source.
 *    Bytes are elements x the dtype size of its container.  Empty memlets
 *    move nothing.  Two refinements (docs/analysis.md, "logical volume"):
 *    a memlet between a map and a tasklet whose body indexes the
 *    connector (`x[i, j]` read, `y[k] = ...` written: an expansion's block
 *    memlet) moves as many elements per execution as the body has index
 *    sites of it, when that is fewer than its volume; and a memlet into a
 *    map entry (out of a map exit) moves at most what the memlets inside
 *    through the matching OUT_ (IN_) connector move together, so the
 *    smaller of that sum and its own volume x executions is taken.
 *  - When a range size (or a per-execution figure: a volume, library or
 *    nested FLOPs) depends on a parameter of an enclosing map (triangular
 *    loops), the parameter is replaced by the end of its range where the
 *    figure is largest (innermost parameter first; max() of both ends when
 *    the direction is not a constant).  The result is then an upper bound:
 *    exact for figures affine in each parameter, e.g. j in 0:i inside
 *    i in 0:N counts N*(N-1) executions (exact: N*(N-1)/2).  Map
 *    tiling's clipped ranges are exact: p in P:min(P + S, E):s inside
 *    P in B:E:S (s dividing S) counts the values of B:E:s over both
 *    parameters, not one whole tile per value of P.
 *  - Data movement of a state ("bytes moved") counts the memlets that touch
 *    an access node: that is where data leaves or enters a container.  Inner
 *    memlets describe the same traffic per iteration and are reported per
 *    memlet but not added again.
 *  - FLOPs of a tasklet are weir_code_flops() of its body, plus one per
 *    element written through a WCR memlet (its volume, refined as above),
 *    times its executions.  A body not yet type-checked is checked on a copy
 * (connector dtype from the memlet's container, rank 0 when the memlet's subset
 * has one element, else the container's rank; symbols: program symbols and
 *    enclosing map parameters); when it does not parse or check, its FLOPs
 *    are unknown.  A map entry's FLOPs are the sum of the nodes inside its
 *    scope, nested scopes included.  Library nodes get FLOPs from a cost
 *    function registered for their op, else from the operator registry's
 *    record (weir-ops.h), else unknown.  A nested node has the
 *    total FLOPs of its program with the nested symbols replaced by the
 *    expressions bound to them.  Other nodes have 0 FLOPs.
 *  - A state's FLOPs sum its tasklets, library and nested nodes (not the map
 *    entries, which would count them twice).  State and program totals count
 *    each state once (one execution of each state; loops are not unrolled).
 *  - Unknown parts: a sum with an unknown part is unknown (expr NULL), not a
 *    partial sum, so a printed figure is never silently too small.  The
 *    per-node figures still show which parts are known.
 *  - Intensity is total FLOPs / total bytes when both are known and bytes
 *    are positive.
 *  - Peak transient memory: the nodes of all states are put in one linear
 *    order: states in reverse post-order of a depth-first search from the
 *    start (successors by id; states not reached come last, by id), nodes in
 *    the topological order of weir_state_scopes().  A transient is touched
 *    at a node that is an access node naming it or an end of a memlet of it
 *    (so it is live while the map that writes or reads it runs); it is live
 *    from the first to the last node touching it.  A transient touched in
 *    several states is live over the whole states from the first to the
 *    last; when one of those states is in a loop (it can reach itself), the
 *    span also covers every state of that loop (repeated until stable).  The
 *    same holds for a transient used in one state of a loop whose first
 *    touch reads it (its value comes from the previous iteration).
 *    Transients never touched are never live; transients of nested programs
 *    are not included.  The peak is the largest sum of the sizes of
 *    simultaneously live transients: its expr is the max over the maximal
 *    live sets of their symbolic sums, known when it evaluates.  peak_live
 *    (sorted names) is the live set at the first position reaching the
 *    value; when a size cannot be evaluated, the first live set with the
 *    most transients.
 * Every figure is kept as a symbolic expression and, when all its symbols
 * are bound and its value fits in 64 bits, as a number (a figure that
 * overflows is unknown, never a wrapped-around value).
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
  gboolean counted;     /* touches an access node */
  WeirQuantity traffic; /* modeled memory traffic (weir_analysis_compute_
                           traffic) of a memlet of the top level of its
                           state touching a container: its bytes next to a
                           library node, tasklet or copy; its share of the
                           traffic of the map it enters or leaves (its
                           footprint when the map fits in the cache, else
                           the map's traffic split in proportion to the
                           memlets' bytes).  The memlets of a state add up
                           to its traffic.  Unknown (expr NULL) for every
                           other memlet and without the model. */
} WeirMemletCost;

typedef struct {
  guint state, node;
  WeirQuantity bytes_in, bytes_out; /* over all incoming/outgoing memlets */
  WeirQuantity flops;               /* for map entries: the whole scope */
  WeirQuantity traffic; /* modeled traffic of a map at the top level of its
                           state (weir_analysis_compute_traffic); unknown
                           (expr NULL) for every other node */
  /* bytes communicated between processes: the payload of a collective
   * (Allreduce, Broadcast: WeirOpInfo.comm_bytes), 0 for every other node */
  WeirQuantity comm_bytes;
} WeirNodeCost;

typedef struct {
  guint state;
  WeirQuantity bytes; /* data movement (counted memlets) */
  WeirQuantity flops;
  WeirQuantity traffic; /* modeled memory traffic (unknown without the
                           model) */
  /* the sum of the nodes' comm_bytes */
  WeirQuantity comm_bytes;
} WeirStateCost;

typedef struct {
  GPtrArray *memlets; /* WeirMemletCost*, by state then edge id */
  GPtrArray *nodes;   /* WeirNodeCost*, by state then node id */
  GPtrArray *states;  /* WeirStateCost*, by state id */
  WeirQuantity total_bytes;
  WeirQuantity total_flops;
  gboolean intensity_known;
  double intensity; /* FLOPs per byte */
  WeirQuantity peak_transient_bytes;
  GPtrArray *peak_live; /* char* names of the transients live at the peak */
  WeirQuantity total_traffic; /* modeled memory traffic (unknown without
                                 the model) */
  /* nodes of each kind over all states (not inside nested programs) */
  guint node_counts[WEIR_NODE_KIND_COUNT];
  /* bytes communicated between processes over all states (each state
   * once), apart from the bytes moved in memory (total_bytes) */
  WeirQuantity total_comm_bytes;
} WeirAnalysis;

/* Computes every figure.  bindings (name -> gint64*, may be NULL) give
 * values to symbols.  Fails only on a state whose scopes are broken, also
 * inside a nested program (the validator reports those).  The result is
 * owned (free with weir_analysis_free); only this function creates one,
 * since it also holds the indexes of the lookups below. */
/**
 * weir_analysis_compute:
 * @bindings: (nullable):
 * Returns: (transfer full):
 */
WEIR_API WeirAnalysis *
weir_analysis_compute(const WeirGraph *g, GHashTable *bindings, GError **error);
/* weir_analysis_compute plus the modeled memory traffic
 * (docs/analysis.md) for a cache of cache_bytes (the hardware profile's
 * last-level cache; <= 0: no model, traffic unknown).  The traffic of a
 * state: each map at its top level by the model below, plus what the
 * other memlets of its top level that touch a container name (library
 * calls, copies, tasklets: each operand once).  A map's model: the
 * footprint of one execution of the scope around it is the bytes of the
 * subsets of its boundary memlets (each element once, parameters of outer
 * maps bounded as above); when it fits in the cache the map moves its
 * footprint once per such execution, otherwise the memlets of its body
 * move their logical volume, except inner maps, modeled the same way (a
 * tile that fits moves its footprint once per tile). */
/**
 * weir_analysis_compute_traffic:
 * @bindings: (nullable):
 * Returns: (transfer full):
 */
WEIR_API WeirAnalysis *weir_analysis_compute_traffic(const WeirGraph *g,
                                                     GHashTable *bindings,
                                                     gint64 cache_bytes,
                                                     GError **error);
WEIR_API void weir_analysis_free(WeirAnalysis *a);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirAnalysis, weir_analysis_free)

/* Costs of one element by id (borrowed from a), or NULL when absent. */
WEIR_API const WeirMemletCost *weir_analysis_memlet(const WeirAnalysis *a,
                                                    guint edge);
WEIR_API const WeirNodeCost *weir_analysis_node(const WeirAnalysis *a,
                                                guint node);
WEIR_API const WeirStateCost *weir_analysis_state(const WeirAnalysis *a,
                                                  guint state);

/* Cost model of library nodes: FLOPs of one execution of node n (transfer
 * full), or NULL when unknown.  Registered per op name (replacing an earlier
 * one; f == NULL removes it); thread-safe. */
typedef WeirExpr *(*WeirLibraryFlopsFunc)(const WeirGraph *g,
                                          const WeirState *s,
                                          const WeirNode *n);
/**
 * weir_analysis_register_library_flops: (skip)
 */
WEIR_API void weir_analysis_register_library_flops(const char *op,
                                                   WeirLibraryFlopsFunc f);

/* The linear order of a program's states used by the liveness analyses
 * (peak transient memory, tier 4), and which states lie on loops
 * (ir/state-order.c).  States are ranked in reverse post-order of a
 * depth-first search from the start state (successors visited by id),
 * followed by the states the start does not reach, by id.  A container
 * touched between ranks lo and hi is live over that range; when a state of
 * the range lies on a loop of the state machine, the range widens to every
 * state of that loop (a value may be carried from one iteration to the
 * next). */
typedef struct {
  guint n;         /* number of states */
  guint *rank;     /* rank[i]: rank of the state at index i of g->states */
  guint *by_rank;  /* by_rank[r]: index in g->states of the state of rank r */
  gboolean *reach; /* reach[i * n + j]: index j reachable from index i in
                      one or more transitions */
} WeirStateOrder;

/* The order of g's states (transfer full: weir_state_order_free). */
/**
 * weir_state_order_new: (skip)
 */
WEIR_API WeirStateOrder *weir_state_order_new(const WeirGraph *g);
WEIR_API void weir_state_order_free(WeirStateOrder *o);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirStateOrder, weir_state_order_free)

/* Widens the rank range [*lo, *hi] over every loop that a state of the
 * range lies on, until it is closed.  Returns TRUE when the range spans
 * more than one state or some state of it lies on a loop (the value can be
 * carried around). */
WEIR_API gboolean weir_state_order_widen(const WeirStateOrder *o, guint *lo,
                                         guint *hi);

/* ------------------------------------------- tasklets typed in their place */

/* The type of connector conn of tasklet n as the validator gives it: the
 * dtype of the container of its memlet (the first non-empty one, entering
 * n when input, else leaving it), rank 0 when the memlet's subset has one
 * element, else the container's rank.  info->name borrows conn.  FALSE
 * (info untouched) when the connector has no such memlet or the container
 * does not exist. */
WEIR_API gboolean weir_tasklet_connector_info(const WeirGraph *g,
                                              const WeirState *s,
                                              const WeirNode *n,
                                              const char *conn, gboolean input,
                                              WeirConnectorInfo *info);

/* A copy of tasklet n's body type-checked in its place: connectors as
 * weir_tasklet_connector_info gives them; symbols: the program's and the
 * parameters of the maps around n.  n is not changed.  Returns the copy
 * (owned: weir_code_free), or NULL with an error "tasklet 'LABEL' (node
 * ID): ..." when the body does not parse, a connector has no memlet or the
 * body does not check. */
/**
 * weir_tasklet_checked_code: (skip)
 */
WEIR_API WeirCode *weir_tasklet_checked_code(const WeirGraph *g,
                                             const WeirState *s,
                                             const WeirNode *n, GError **error);

G_END_DECLS

#endif
