/* tier1-util.h — analyses and rewrites shared by the tier-1 transformations.
 *
 * Only the public IR API is used.  Conventions:
 *  - A "reason" out-parameter (char **, may be NULL) receives a
 *    human-readable explanation (transfer full) when a function returns
 *    FALSE for a legality question.
 *  - Symbols (program symbols and parameters of enclosing maps) are assumed
 *    non-negative where the sign of a factor matters (they are sizes,
 *    counters and indices); the parameters of the map being analysed are
 *    the unknowns.
 *
 * Footprints.  The union over a map's iteration space of a subset written
 * in terms of its parameters is computed per dimension by substituting each
 * parameter with the end of its range that minimises the begin (maximises
 * the end).  That is exact for indices monotone in each parameter: affine
 * terms with constant coefficients, min/max and floor division by positive
 * constants of such terms (the clamped indices of padded convolutions).
 * Where an index is not monotone (modulo), the dimension falls back to the
 * enclosing memlet's range, a superset.
 *
 * Independence.  weir_tier1_independent decides whether two iterations of
 * a map that differ in a chosen set of parameters can conflict: a write of
 * one meeting a write or a read of the other.  Writes are the memlets
 * entering the map exit, reads those leaving the entry; per iteration each
 * is a box (a range per dimension).  Iterations are proven apart by peeling
 * parameters: a dimension whose begin is c1*p1 + ... + cn*pn + rest (rest
 * free of the undecided parameters, constant coefficients) and whose width
 * is at most W separates p1..pn when, sorted by |ci| * step(pi), each
 * |ci| * step(pi) is at least W plus the span of the smaller ones
 * (mixed-radix); those parameters are then decided, and the peeling
 * repeats with the others.  The map is independent in the varying
 * parameters when every written box is separated that way, reads of a
 * written container use the same box as the write (an in-place update),
 * and — unless allowed — no write-conflict resolution accumulates the same
 * element from different iterations.
 */
#ifndef WEIR_TIER1_UTIL_H
#define WEIR_TIER1_UTIL_H

#include "weir-analysis.h"
#include "weir-code.h"
#include "weir-graph.h"
#include "weir-plugin.h"

G_BEGIN_DECLS

/* Sets *reason (when reason != NULL) and returns FALSE. */
G_GNUC_PRINTF(2, 3)
gboolean weir_tier1_reason(char **reason, const char *fmt, ...);

/* "map 'label' (node 7)" (transfer full). */
char *weir_tier1_map_name(const WeirNode *entry);

/* ----------------------------------------------------------- map scopes */

typedef struct {
  WeirState *state;
  WeirNode *entry, *exit;
  guint parent;     /* innermost enclosing map entry, 0 at top level */
  GArray *inside;   /* guint ids of all nodes inside (nested scopes too, not
                       the entry and exit), ascending */
  GArray *children; /* guint ids of the nodes directly in this scope (its
                       nested maps' entries and exits included) */
} WeirTier1Map;

/* Fills *out for map entry `entry` of state `state`.  FALSE with a reason
 * when the state or node does not exist, the node is not a map entry, it
 * has no exit, or the state's scopes cannot be computed.  The graph is not
 * changed (the pointers are non-const for the callers that edit). */
gboolean weir_tier1_map_init(const WeirGraph *g, guint state, guint entry,
                             WeirTier1Map *out, char **reason);
void weir_tier1_map_clear(WeirTier1Map *m);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(WeirTier1Map, weir_tier1_map_clear)

/* The site's single map: site->nodes[0] as a map entry. */
gboolean weir_tier1_site_map(const WeirGraph *g, const WeirSite *site,
                             WeirTier1Map *out, char **reason);

/* The first map entry inside m (nested), or NULL. */
WeirNode *weir_tier1_map_nested_entry(const WeirTier1Map *m);

/* When m contains exactly one node directly, a map entry (with its exit)
 * whose scope holds everything else, and every memlet leaving m's entry
 * enters that map and every memlet entering m's exit leaves it: the inner
 * map's entry.  Otherwise NULL with a reason. */
WeirNode *weir_tier1_perfect_inner(const WeirTier1Map *m, char **reason);

/* Appends a site for every map entry of every state (by state and node id)
 * for which accept(g, state, entry) holds. */
typedef gboolean (*WeirTier1MapFilter)(const WeirGraph *g, const WeirState *s,
                                       const WeirNode *entry);
void weir_tier1_match_maps(const WeirGraph *g, GArray *sites,
                           WeirTier1MapFilter accept);
/* Appends a two-node site [outer, inner] for every perfectly nested pair of
 * maps. */
void weir_tier1_match_nested_pairs(const WeirGraph *g, GArray *sites);

/* Memlets (borrowed, by id) leaving `node` through connector conn / entering
 * it through conn; conn NULL means every connector, data-carrying memlets
 * only unless with_empty. */
GPtrArray *weir_tier1_edges_out(const WeirState *s, guint node,
                                const char *conn, gboolean with_empty);
GPtrArray *weir_tier1_edges_in(const WeirState *s, guint node, const char *conn,
                               gboolean with_empty);

/* ------------------------------------------------------- map iteration */

/* Index of param name in map, or -1. */
gint weir_tier1_param_index(const WeirMap *map, const char *name);
/* Number of iterations: the product of the range sizes. (transfer full) */
WeirExpr *weir_tier1_map_iterations(const WeirMap *map);
/* Constant size of range i of map; FALSE when symbolic. */
gboolean weir_tier1_range_const_size(const WeirMap *map, guint i, gint64 *size);
/* Whether e mentions symbol name. */
gboolean weir_tier1_expr_has(const WeirExpr *e, const char *name);
/* Whether e mentions any parameter of map. */
gboolean weir_tier1_expr_has_params(const WeirExpr *e, const WeirMap *map);
/* Whether a range mentions any parameter of map. */
gboolean weir_tier1_range_has_params(const WeirRange *r, const WeirMap *map);

/* Direction of e in symbol p: 1 non-decreasing, -1 non-increasing, 0
 * independent, 2 unknown. */
gint weir_tier1_direction(const WeirExpr *e, const char *p);

/* The smallest (want_max FALSE) or largest value of e over the iteration
 * space of map, or NULL when e is not monotone in some parameter or a
 * parameter's range has a symbolic step. (transfer full) */
WeirExpr *weir_tier1_extreme(const WeirExpr *e, const WeirMap *map,
                             gboolean want_max);

/* Union of `inner` over map's iteration space (see the top of the file).
 * fallback (may be NULL) gives the range of a dimension that cannot be
 * bounded; without it such a dimension makes the result NULL. */
WeirSubset *weir_tier1_footprint(const WeirSubset *inner, const WeirMap *map,
                                 const WeirSubset *fallback);

/* Affine decomposition of e in the parameters of map: e = sum coef[i] *
 * param[i] + rest with constant coefficients (coef has one entry per
 * parameter).  FALSE when a parameter appears otherwise. */
gboolean weir_tier1_affine(const WeirExpr *e, const WeirMap *map, gint64 *coef,
                           WeirExpr **rest);

/* ---------------------------------------------------------- independence */

/* See the top of the file.  vary: one flag per parameter of m's map (NULL:
 * all).  allow_wcr: accumulations into the same element from different
 * iterations are accepted (they commute up to rounding). */
gboolean weir_tier1_independent(const WeirTier1Map *m, const gboolean *vary,
                                gboolean allow_wcr, char **reason);

/* ----------------------------------------------------------- rewriting */

/* Recomputes the memlets between map `outer` and the map `inner` directly
 * inside it (both entries): each memlet outer -> inner gets the footprint of
 * the memlets leaving inner's matching connector over inner's iteration
 * space, and the volume those memlets move over all of inner's iterations;
 * likewise for inner's exit -> outer's exit. */
void weir_tier1_refresh_middle(WeirGraph *g, WeirState *s, WeirNode *outer,
                               WeirNode *inner);

/* Wraps map `entry` (and everything in it) into a new map with the given
 * parameters (n of them), ranges and schedule: memlets that entered
 * `entry` from outside now enter the new entry and continue to `entry`
 * through a new memlet with the footprint of one iteration of the new map;
 * the same on the exit side.  Returns the new entry (borrowed). */
WeirNode *weir_tier1_wrap(WeirGraph *g, WeirState *s, WeirNode *entry,
                          const char *label, guint n, const char *const *params,
                          const WeirRange *ranges, WeirSchedule schedule,
                          GError **error);

/* A parameter name based on base that is neither a program symbol nor a
 * parameter of a map in s nor in extra (char*, may be NULL). (transfer
 * full) */
char *weir_tier1_fresh_param(const WeirGraph *g, const WeirState *s,
                             const char *base, GPtrArray *extra);

G_END_DECLS

#endif
