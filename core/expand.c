/* expand.c — expanding library nodes, all-or-nothing.
 *
 * Expansions run on a copy of the program; the copy is validated and only
 * then swapped into the caller's graph, so a failure leaves the program
 * exactly as it was.
 */
#include "weir-expand.h"
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-validate.h"

void weir_transforms_register_expansions(void);

void weir_expansions_init(void) {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    weir_transforms_register_expansions();
    g_once_init_leave(&done, 1);
    weir_native_init();
  }
}

/* Replaces the contents of g by those of other (which is freed). */
static void graph_replace(WeirGraph *g, WeirGraph *other) {
  WeirGraph tmp = *g;
  *g = *other;
  *other = tmp;
  weir_graph_free(other);
}

static gboolean expand_in_place(WeirGraph *g, WeirState *s, WeirNode *n,
                                const char *impl, GError **error) {
  const char *impl_name = impl ? impl : "pure";
  WeirExpandFunc f = weir_op_expansion(n->op, impl_name);
  g_autofree char *where = weir_describe_node(s, n);
  if (!f) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: no '%s' expansion for operator '%s'", where, impl_name,
                n->op);
    return FALSE;
  }
  g_autoptr(GError) local = NULL;
  if (!f(g, s, n, &local)) {
    g_set_error(error, WEIR_ERROR, local->code, "%s: expanding %s: %s", where,
                n->op, local->message);
    return FALSE;
  }
  return TRUE;
}

gboolean weir_expand_node(WeirGraph *g, guint node_id, const char *impl,
                          GError **error) {
  weir_expansions_init();
  WeirState *s0 = NULL;
  WeirNode *n0 = weir_graph_node(g, node_id, &s0);
  if (!n0 || n0->kind != WEIR_NODE_LIBRARY) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "node %u is not a library node of program '%s'", node_id,
                g->name);
    return FALSE;
  }
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  WeirState *s = NULL;
  WeirNode *n = weir_graph_node(copy, node_id, &s);
  if (!expand_in_place(copy, s, n, impl, error))
    return FALSE;
  g_autoptr(GError) local = NULL;
  if (!weir_graph_validate(copy, &local)) {
    g_autofree char *where = weir_describe_node(s0, n0);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: the expansion of %s produced an invalid program: %s",
                where, n0->op, local->message);
    return FALSE;
  }
  graph_replace(g, g_steal_pointer(&copy));
  return TRUE;
}

/* The first library node (states by id, nodes by id) matching op. */
static WeirNode *first_library(WeirGraph *g, const char *op,
                               WeirState **state_out) {
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY && (!op || g_strcmp0(n->op, op) == 0)) {
        *state_out = s;
        return n;
      }
    }
  }
  return NULL;
}

gboolean weir_expand_all(WeirGraph *g, const char *op, guint *count,
                         GError **error) {
  weir_expansions_init();
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  guint done = 0;
  WeirState *s = NULL;
  WeirNode *n;
  while ((n = first_library(copy, op, &s))) {
    if (done >= 1000000) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                  "program '%s': expansion does not terminate (more than "
                  "%u library nodes expanded)",
                  g->name, done);
      return FALSE;
    }
    if (!expand_in_place(copy, s, n, NULL, error))
      return FALSE;
    done++;
  }
  g_autoptr(GError) local = NULL;
  if (!weir_graph_validate(copy, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "program '%s': expanding produced an invalid program: %s",
                g->name, local->message);
    return FALSE;
  }
  if (count)
    *count = done;
  graph_replace(g, g_steal_pointer(&copy));
  return TRUE;
}
