/* state-order.h (internal to libweir): the linear order of a program's
 * states used by the liveness analyses, and which states lie on loops.
 *
 * States are ranked in reverse post-order of a depth-first search from the
 * start state (successors visited by id), followed by the states the start
 * does not reach, by id. A container touched between ranks lo and hi is
 * live over that range; when a state of the range lies on a loop of the
 * state machine, the range widens to every state of that loop (a value may
 * be carried from one iteration to the next).
 */
#ifndef WEIR_STATE_ORDER_H
#define WEIR_STATE_ORDER_H

#include "weir-graph.h"

G_BEGIN_DECLS

typedef struct {
  guint n;         /* number of states */
  guint *rank;     /* rank[i]: rank of the state at index i of g->states */
  guint *by_rank;  /* by_rank[r]: index in g->states of the state of rank r */
  gboolean *reach; /* reach[i * n + j]: index j reachable from index i in
                      one or more transitions */
} WeirStateOrder;

WeirStateOrder *weir_state_order_new(const WeirGraph *g);
void weir_state_order_free(WeirStateOrder *o);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirStateOrder, weir_state_order_free)

/* Widens the rank range [*lo, *hi] over every loop that a state of the
 * range lies on, until it is closed. Returns TRUE when the range spans more
 * than one state or some state of it lies on a loop (the value can be
 * carried around). */
gboolean weir_state_order_widen(const WeirStateOrder *o, guint *lo, guint *hi);

G_END_DECLS

#endif
