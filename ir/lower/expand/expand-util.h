/* expand-util.h — helpers shared by the expansions of library nodes.
 *
 * An expansion replaces one library node (see the conventions in
 * ir/weir-ops.h: connectors in0.. / out0.., each with one memlet to an access
 * node) by maps and tasklets wired to the same access nodes.  These helpers
 * cover the common shapes so that each expansion reads as the computation it
 * expresses:
 *
 *   WeirPort x, y;
 *   weir_port_input(s, n, 0, &x);  weir_port_output(s, n, 0, &y);
 *   ...
 *   weir_expand_map(g, s, "relu", rank, params, ranges,
 *                   ins, 1, outs, 1, "y = max(x, 0)", NULL, 0, error);
 *   weir_state_remove_node(s, n->id);
 *
 * Only the public IR API is used (transforms/ may not reach into ir/
 * internals).
 */
#ifndef WEIR_EXPAND_UTIL_H
#define WEIR_EXPAND_UTIL_H

#include "weir-graph.h"
#include "weir-ops.h"

G_BEGIN_DECLS

/* One end of a library node: the access node on the other side of the
 * connector and its container. */
typedef struct {
  WeirNode *access;
  WeirContainer *container;
  guint rank;
  WeirExpr *const *shape; /* borrowed from the container */
} WeirPort;

/* Fills *out for connector "in<k>" / "out<k>" of n.  Returns FALSE (without
 * an error) when the node has no such connector (an omitted optional
 * input); FALSE with an error when the connector is not wired to an access
 * node as the conventions require. */
gboolean weir_port_input(WeirGraph *g, WeirState *s, WeirNode *n, guint k,
                         WeirPort *out, GError **error);
gboolean weir_port_output(WeirGraph *g, WeirState *s, WeirNode *n, guint k,
                          WeirPort *out, GError **error);
/* Like the above, but an absent connector is an error naming the node. */
gboolean weir_port_require_input(WeirGraph *g, WeirState *s, WeirNode *n,
                                 guint k, WeirPort *out, GError **error);
gboolean weir_port_require_output(WeirGraph *g, WeirState *s, WeirNode *n,
                                  guint k, WeirPort *out, GError **error);

/* TRUE when the port's container has no elements (a constant volume of
 * 0): the expansion then only removes the node. */
gboolean weir_port_is_empty(const WeirPort *p);

/* A tasklet connector bound to a container through a map. */
typedef struct {
  WeirNode *access;   /* access node read from / written to */
  const char *conn;   /* tasklet connector */
  const char *subset; /* subset text in terms of the map parameters; NULL
                         means the whole container (for indexed access in
                         the tasklet: x[i, k]) */
  WeirWcr wcr;        /* outputs: write-conflict resolution */
} WeirTaskletPort;

/* Adds a map scope params x ranges (parallel schedule) holding one tasklet
 * with `code`, and the memlets access -> entry -> tasklet -> exit ->
 * access.  Outer memlets cover the whole container, with volume = inner
 * volume x number of map iterations (the number of accesses).  Inputs
 * reading the same access node share one entry connector (IN_<name>).
 * `after` lists nodes that must complete before the map starts (typically
 * the access node written by an initialization map before a WCR
 * accumulation): each gets an empty memlet to the map entry.  With
 * n_params == 0 there is no map: the tasklet connects to the access nodes
 * directly.  Returns the map entry (or the tasklet when there is no map). */
WeirNode *weir_expand_map(WeirGraph *g, WeirState *s, const char *label,
                          guint n_params, const char *const *params,
                          const char *const *ranges, const WeirTaskletPort *ins,
                          guint n_ins, const WeirTaskletPort *outs,
                          guint n_outs, const char *code,
                          WeirNode *const *after, guint n_after,
                          GError **error);

/* A transient with a fresh name derived from base (borrowed result). */
WeirContainer *weir_expand_add_transient(WeirGraph *g, const char *base,
                                         WeirDType dtype, guint rank,
                                         WeirExpr *const *shape);

/* Parameter names p0, p1, ... and full ranges "0:<dim>" for a shape, as
 * NULL-terminated arrays (free with g_strfreev). */
char **weir_expand_params(const char *prefix, guint rank);
char **weir_expand_full_ranges(guint rank, WeirExpr *const *shape);

/* Subset text reading an input of shape in_shape broadcast (numpy rules,
 * right-aligned) to an output indexed by params (out_rank of them): input
 * dimensions of constant size 1 read index 0.  (transfer full) */
char *weir_expand_broadcast_subset(guint in_rank, WeirExpr *const *in_shape,
                                   guint out_rank, const char *const *params);

/* Joins params into a subset text "p0, p1, ..." (transfer full). */
char *weir_expand_index_subset(guint rank, const char *const *params);

/* The literal a tasklet uses for a float constant (round-trips exactly;
 * infinities as 1e999). (transfer full) */
char *weir_expand_float_literal(double v);

/* Tasklet-language text computing the integer expression e (sizes,
 * offsets) from symbols and map parameters: fully parenthesized; floor
 * division and modulo are spelled with C's truncating '/' and '%' so that
 * they round like // and % in WeirExpr for every sign.  (transfer full) */
char *weir_expand_expr_code(const WeirExpr *e);

/* The literals of the smallest and largest value of a dtype, as tasklet
 * text: "-1e999" / "1e999" for floats, "false" / "true" for bool, the
 * integer limits otherwise (identities of max / min reductions).
 * (borrowed static strings) */
const char *weir_expand_lowest_literal(WeirDType dtype);
const char *weir_expand_highest_literal(WeirDType dtype);

/* A container-name base (identifier) made of a node's label (its op when
 * the label is empty) and a suffix: characters other than [A-Za-z0-9_]
 * become '_', and a leading digit gets a '_' prefix.  (transfer full) */
char *weir_expand_name(const WeirNode *n, const char *suffix);

/* Map parameter names p0, p1, ... for a map of `rank` dimensions, unless
 * the program has symbols of those names (a parameter may not shadow a
 * symbol); then q0, ..., pp0, ....  (transfer full: g_strfreev) */
char **weir_expand_fresh_params(const WeirGraph *g, guint rank);

/* Marks the memlets that carry input connector `conn` of the tasklet of a
 * map built by weir_expand_map (`node`: the entry, or the tasklet when
 * there is no map), reading `container`, as dynamic: one element per
 * execution at most (an indexed read x[...] of a data-dependent index). */
void weir_expand_dynamic_input(WeirState *s, WeirNode *node,
                               const char *container, const char *conn);

/* Marks the write of tasklet connector `conn` of the scope built by
 * weir_expand_map (`top`: its entry, or the tasklet) as dynamic: one
 * element per execution, `iterations` in all (an indexed write y[...] =
 * at a data-dependent place). */
void weir_expand_dynamic_output(WeirState *s, WeirNode *top, const char *conn,
                                WeirExpr *iterations);

/* The map that ends a scatter (ScatterND, ScatterElements, and the
 * dynamic writes of other indexing operators): `<label>_scatter` over
 * params with ranges, after `first` (the access node that holds the copy
 * of the data the scatter overwrites), reading ins[0..2) and writing
 * tasklet connector "y" of `y` at the place its code computes (wcr: how
 * colliding writes combine), one write per element of `source`; then
 * removes n.  Returns FALSE with error set when the map cannot be built. */
gboolean weir_expand_scatter(WeirGraph *g, WeirState *s, WeirNode *n,
                             guint n_params, const char *const *params,
                             const char *const *ranges,
                             const WeirTaskletPort ins[2], WeirNode *y,
                             WeirWcr wcr, const char *code, WeirNode *first,
                             const WeirContainer *source, GError **error);

/* BatchNormalization with training_mode = 1
 * (ir/lower/expand/batchnorm-training.c): batch statistics, and outputs 1
 * and 2 (running mean and variance, ONNX semantics: the biased batch
 * variance) when present. */
gboolean weir_expand_batchnorm_training(WeirGraph *g, WeirState *s, WeirNode *n,
                                        GError **error);

G_END_DECLS

#endif
