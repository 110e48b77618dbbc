/* weir-interp.h — the reference interpreter.
 *
 * Executes a validated program whose library nodes are all expanded:
 * states and transitions, maps (sequentially, in lexicographic order of the
 * parameters), tasklets (by evaluating their AST), copies between access
 * nodes, nested programs and write-conflict resolution.  It is the semantic
 * reference generated code is tested against: correctness over speed.
 *
 * Semantics worth knowing:
 *  - Transitions leaving a state are tried in id order; the first whose
 *    condition holds is taken (assignments are simultaneous).  When none
 *    holds the program ends.
 *  - Transients start zero-filled (or with their constant data).
 *  - f32 arithmetic rounds every operation to float, as C does.
 */
#ifndef WEIR_INTERP_H
#define WEIR_INTERP_H

#include "weir-graph.h"
#include "weir-tensor.h"

G_BEGIN_DECLS

typedef struct {
  guint64 max_transitions; /* stop with an error after this many state
                              transitions (0: 10^9) */
  guint64 max_memory;      /* memory budget in bytes of the program's containers
                              (weir_graph_check_memory; 0: the physical memory),
                              checked with every size before anything is
                              allocated */
} WeirInterpOptions;

/* Runs g.  symbols: name -> gint64* (as built by weir_bindings_new) giving
 * every free symbol that is not assigned by a transition before use.
 * args: container name -> WeirTensor* for every non-transient container;
 * shapes and dtypes must match the containers (after evaluating symbolic
 * shapes).  Arguments are read and written in place.  The graph is
 * validated first.  options may be NULL. */
WEIR_API gboolean weir_interpret(WeirGraph *g, GHashTable *symbols,
                                 GHashTable *args,
                                 const WeirInterpOptions *options,
                                 GError **error);

/* Checks that every key of args (container name -> anything, borrowed)
 * names an argument of g: a container that exists and is not transient,
 * and, when constants_compiled (a kernel with the initial data of its
 * constant containers built in), has no initial data.  The names are
 * checked in sorted order, so the first problem reported does not depend
 * on hashing.  args may be NULL (nothing to check). */
WEIR_API gboolean weir_interp_check_argument_names(const WeirGraph *g,
                                                   GHashTable *args,
                                                   gboolean constants_compiled,
                                                   GError **error);

/* Outputs of a data-dependent length (a container with a count,
 * weir-graph.h): a new tensor holding the valid part of t, c's value after
 * a run, along c->count_dim: the first `count` entries, count being the
 * value of the container c->count in args (container name -> WeirTensor*,
 * the run's arguments).  When c has no count, a copy of t.  Fails when the
 * count is not in args or lies outside [0, the dimension's extent].  Used
 * by the conformance runner, `weir run` and the bindings to read outputs
 * of NonZero, Compress and Unique (docs/ir-format.md).  (transfer full) */
/**
 * weir_container_trim: (skip)
 */
WEIR_API WeirTensor *weir_container_trim(const WeirGraph *g,
                                         const WeirContainer *c,
                                         const WeirTensor *t, GHashTable *args,
                                         GError **error);

G_END_DECLS

#endif
