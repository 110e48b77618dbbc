/* weir-validate.h — the validator.
 *
 * weir_graph_check() walks the whole program and reports every problem it
 * finds, each naming the element it concerns; weir_graph_validate() wraps
 * it into a single GError.  The checks (see docs/ir-format.md) cover
 * containers, symbols, states and transitions, node connectors, map scopes,
 * memlet subsets and bounds, cycles, tasklet parse and type errors, and
 * nested programs (recursively).
 *
 * Validation type-checks tasklet bodies and transition conditions against
 * the memlets around them, which fills the resolution caches in their ASTs:
 * that is why the graph is not const.  Call it before interpreting or
 * generating code.
 */
#ifndef WEIR_VALIDATE_H
#define WEIR_VALIDATE_H

#include "weir-graph.h"

G_BEGIN_DECLS

typedef struct {
  guint state;      /* state id, or 0 for program-level problems */
  guint node;       /* node id, or 0 */
  guint edge;       /* memlet id, or 0 */
  guint transition; /* transition id, or 0 */
  char *element;    /* description of the element, e.g.
                       "state 1 'main', node 4 (tasklet 'mul')" */
  char *message;    /* what is wrong */
} WeirProblem;

WEIR_API void weir_problem_free(WeirProblem *p);

/* Every problem of g, in a deterministic order (program, then states by id,
 * nodes by id, memlets by id).  Empty when g is valid.  Free with
 * g_ptr_array_unref. */
/**
 * weir_graph_check:
 * Returns: (transfer full) (element-type WeirProblem):
 */
WEIR_API GPtrArray *weir_graph_check(WeirGraph *g);

/* TRUE when g is valid; otherwise FALSE with a WEIR_ERROR_INVALID error
 * whose message lists every problem, one per line ("element: message"). */
WEIR_API gboolean weir_graph_validate(WeirGraph *g, GError **error);

/* Type-checks one tasklet against the memlets connected to it (dtype and
 * rank of each connector come from the memlet's container and subset).
 * Used by the validator and by the interpreter. */
WEIR_API gboolean weir_tasklet_check(WeirGraph *g, WeirState *s, WeirNode *n,
                                     GError **error);

G_END_DECLS

#endif
