/* tier4-util.h — analyses shared by the tier-4 transformations.
 *
 * The tier-4 passes reason about the whole program: where a container is
 * used, in which order the nodes of a state run, which node is ordered
 * before which, and when a transient is live.  These helpers compute that
 * from the public IR only:
 *
 *   - T4State: one state's topological order (weir_state_scopes), node
 *     positions, scope parents and path queries;
 *   - T4Liveness: the peak-memory liveness model of ir/weir-analysis.h,
 *     reproduced rule for rule (linear order of all nodes, touches, carried
 *     values, loops), so a pass can predict a->peak_transient_bytes of the
 *     program it is about to produce;
 *   - subset and memlet helpers (single-element ranges, full subsets, the
 *     subset a memlet has on a given container, replacing subsets).
 *
 * Everything is deterministic: arrays are walked in id order and hash
 * tables are only used for lookups.
 */
#ifndef WEIR_TIER4_UTIL_H
#define WEIR_TIER4_UTIL_H

#include "weir-graph.h"

G_BEGIN_DECLS

/* ---------------------------------------------------------------- states */

typedef struct _T4State T4State;

/* Order and scopes of s (borrowed; s must outlive the result).  NULL with
 * an error when the scopes are broken (a cycle, a node in two scopes). */
T4State *t4_state_new(const WeirState *s, GError **error);
void t4_state_free(T4State *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(T4State, t4_state_free)

const WeirState *t4_state_get(const T4State *t);
/* Position of node in the topological order of weir_state_scopes. */
guint t4_pos(const T4State *t, guint node);
/* Number of nodes (positions 0 .. n-1) and the node at a position. */
guint t4_n_nodes(const T4State *t);
guint t4_node_at(const T4State *t, guint pos);
/* Innermost enclosing map entry (0: top level). */
guint t4_parent(const T4State *t, guint node);
/* Outermost enclosing map entry (0: the node is at top level). */
guint t4_outermost(const T4State *t, guint node);
/* TRUE when node is (transitively) inside the scope of map entry `entry`. */
gboolean t4_inside(const T4State *t, guint node, guint entry);
/* TRUE when a path of memlets leads from `from` to `to` (or from == to). */
gboolean t4_reaches(T4State *t, guint from, guint to);

/* The access nodes of container `name` in the state (ids, ascending; the
 * same as t4_access_nodes of the state) and the memlets whose data is
 * `name` (in the state's order), from an index of the state built on the
 * first call: for passes that ask about every container in turn.  The
 * state must not change while t lives.  (transfer full: g_array_unref) */
GArray *t4_state_access_nodes(T4State *t, const char *name);
guint t4_state_n_memlets_of(T4State *t, const char *name);
/* (borrowed) */
const WeirMemlet *t4_state_memlet_of(T4State *t, const char *name, guint k);

/* The top-level node that stands for node when ordering whole operators:
 * a node inside a map scope is represented by its outermost map's entry
 * (start = TRUE) or exit (start = FALSE); a top-level map entry or exit by
 * the entry or exit of that map; any other top-level node by itself. */
guint t4_top_rep(const T4State *t, guint node, gboolean start);

/* -------------------------------------------------------------- liveness */

/* The live interval of one transient, in global positions (see
 * ir/weir-analysis.h: states in reverse post-order, nodes in topological
 * order). */
typedef struct {
  const WeirContainer *c; /* borrowed */
  gboolean accessed;      /* touched at all (else never live) */
  guint first, last;      /* first and last touch */
  guint begin, end;       /* live interval after the carried/loop rule */
  guint n_states;         /* states touching it */
  guint state;            /* id of the first state touching it */
  gboolean first_is_read; /* its first touch only reads it */
  gboolean carried;       /* begin/end were widened to whole states */
  gboolean bytes_known;
  gint64 bytes;
} T4Live;

typedef struct {
  guint npos;             /* number of global positions */
  GArray *lives;          /* T4Live, one per transient, container order */
  GHashTable *by_name;    /* name -> index + 1 into lives */
  GHashTable *state_base; /* state id -> first global position + 1 */
  gboolean all_known;     /* every live transient has a known size */
} T4Liveness;

T4Liveness *t4_liveness_new(const WeirGraph *g, GError **error);
void t4_liveness_free(T4Liveness *l);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(T4Liveness, t4_liveness_free)
/* Borrowed record of a transient, or NULL. */
const T4Live *t4_liveness_get(const T4Liveness *l, const char *name);
/* Global position of the first node of a state. */
guint t4_liveness_state_base(const T4Liveness *l, guint state);
/* Sum of the known sizes of the transients live at each position (npos
 * entries; transfer full, g_free). */
gint64 *t4_liveness_sums(const T4Liveness *l);
/* Largest entry of sums[0 .. n-1] (0 when n == 0). */
gint64 t4_max(const gint64 *sums, guint n);

/* ------------------------------------------------------ subsets, memlets */

/* The range has exactly one point (its size is the constant 1). */
gboolean t4_range_is_single(const WeirRange *r);
/* Every range of s is a single point. */
gboolean t4_subset_is_single(const WeirSubset *s);
/* s is 0:shape[d] with step 1 in every dimension of c. */
gboolean t4_subset_is_full(const WeirSubset *s, const WeirContainer *c);
/* A subset of `rank` dimensions with every range unset (fill dims[]). */
WeirSubset *t4_subset_new(guint rank);
/* Sets r to the single index e (e:e+1:1); r must be cleared. */
void t4_range_set_index(WeirRange *r, WeirExpr *e);

/* The subset memlet m has on container `name`: its subset when it names
 * it, or for a copy between access nodes whose other end accesses `name`,
 * the other subset (or the same subset when there is no other).  NULL when
 * m does not move data of `name`. */
const WeirSubset *t4_memlet_subset_on(const WeirState *s, const WeirMemlet *m,
                                      const char *name);
/* Replaces the subset of m on container `name` (as above) by sub
 * (transfer full). */
void t4_memlet_replace_subset_on(const WeirState *s, WeirMemlet *m,
                                 const char *name, WeirSubset *sub);
/* TRUE when m is a copy between two access nodes. */
gboolean t4_memlet_is_copy(const WeirState *s, const WeirMemlet *m);

/* Adds a memlet like m (data, subsets, volume, dynamic, wcr) between other
 * ends.  Returns the new memlet (borrowed) or NULL with an error. */
WeirMemlet *t4_memlet_clone(WeirGraph *g, WeirState *s, const WeirMemlet *m,
                            guint src, const char *src_conn, guint dst,
                            const char *dst_conn, GError **error);

/* Access nodes of container `name` in s (node ids, ascending). */
GArray *t4_access_nodes(const WeirState *s, const char *name);
/* Number of states with an access node of `name` or a memlet naming it;
 * *state_out (optional) receives the first such state (by id). */
guint t4_states_using(const WeirGraph *g, const char *name,
                      const WeirState **state_out);

/* Concrete shape of c into out[] (rank entries); FALSE when symbolic. */
gboolean t4_concrete_shape(const WeirContainer *c, gint64 *out);

G_END_DECLS

#endif
