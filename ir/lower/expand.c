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

/* Replaces the contents of g by those of other (which is freed). */
static void graph_replace(WeirGraph *g, WeirGraph *other) {
  WeirGraph tmp = *g;
  *g = *other;
  *other = tmp;
  weir_graph_free(other);
}

/* The other ends of the empty memlets (ordering edges, as tier-4
 * transformations add them) entering (in) or leaving n. */
static GArray *ordering_ends(const WeirState *s, guint n, gboolean in) {
  GArray *out = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GPtrArray) edges =
      in ? weir_state_in_edges(s, n) : weir_state_out_edges(s, n);
  for (guint i = 0; i < edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(edges, i);
    guint end = in ? m->src : m->dst;
    if (!m->data)
      g_array_append_val(out, end);
  }
  return out;
}

/* Keeps the ordering edges of an expanded node: every top-level operator
 * the expansion created (map entries and exits, tasklets, library and
 * nested nodes; ids from first_new on) runs after the sources of the
 * node's incoming ordering edges and before the targets of its outgoing
 * ones.  Without this, an initialization map of the expansion, which has
 * no inputs, could run before a reader of the buffer it overwrites. */
static gboolean keep_ordering(WeirGraph *g, WeirState *s, guint first_new,
                              GArray *before, GArray *after, GError **error) {
  if (!before->len && !after->len)
    return TRUE;
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, error);
  if (!sc)
    return FALSE;
  for (guint k = 0; k < s->nodes->len; k++) {
    const WeirNode *x = g_ptr_array_index(s->nodes, k);
    if (x->id < first_new || weir_scopes_parent(sc, x->id) ||
        x->kind == WEIR_NODE_ACCESS)
      continue;
    gboolean starts = x->kind != WEIR_NODE_MAP_EXIT;
    gboolean ends = x->kind != WEIR_NODE_MAP_ENTRY;
    for (guint i = 0; starts && i < before->len; i++)
      if (!weir_state_add_memlet(g, s, g_array_index(before, guint, i), NULL,
                                 x->id, NULL, NULL, NULL, error))
        return FALSE;
    for (guint i = 0; ends && i < after->len; i++)
      if (!weir_state_add_memlet(g, s, x->id, NULL,
                                 g_array_index(after, guint, i), NULL, NULL,
                                 NULL, error))
        return FALSE;
  }
  return TRUE;
}

gboolean weir_expand_in_place(WeirGraph *g, WeirState *s, WeirNode *n,
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
  g_autofree char *op = g_strdup(n->op);
  g_autoptr(GArray) before = ordering_ends(s, n->id, TRUE);
  g_autoptr(GArray) after = ordering_ends(s, n->id, FALSE);
  guint first_new = g->next_id;
  g_autoptr(GError) local = NULL;
  /* A native choice keeps the epilogue on the node (the code generator
   * splits it); an expansion into maps gets the epilogue as a map first. */
  if (weir_epilogue_present(n) && !weir_native_lookup(op, impl_name) &&
      !weir_epilogue_split(g, s, n, error))
    return FALSE;
  if (!f(g, s, n, &local) ||
      !keep_ordering(g, s, first_new, before, after, &local)) {
    g_set_error(error, WEIR_ERROR, local ? local->code : WEIR_ERROR_INVALID,
                "%s: expanding %s: %s", where, op,
                local ? local->message : "failed");
    return FALSE;
  }
  return TRUE;
}

gboolean weir_expand_node(WeirGraph *g, guint node_id, const char *impl,
                          GError **error) {
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
  if (!weir_expand_in_place(copy, s, n, impl, error))
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

/* The nodes are expanded on a scratch copy first, which must validate;
 * only then are they expanded in s itself (the same steps, so the same
 * result). */
gboolean weir_expand_nodes(WeirGraph *g, WeirState *s, const guint *ids,
                           guint n, GError **error) {
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  WeirState *cs = weir_graph_state(copy, s->id);
  for (guint pass = 0; pass < 2; pass++) {
    WeirGraph *tg = pass == 0 ? copy : g;
    WeirState *ts = pass == 0 ? cs : s;
    for (guint i = 0; i < n; i++) {
      WeirNode *x = weir_state_node(ts, ids[i]);
      g_autoptr(GError) local = NULL;
      if (!x || !weir_expand_in_place(tg, ts, x, NULL, &local)) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                    "no backward rule, and the fallback could not expand the "
                    "node: %s",
                    local ? local->message : "node not found");
        return FALSE;
      }
    }
    g_autoptr(GError) local = NULL;
    if (pass == 0 && !weir_graph_validate(copy, &local)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "program '%s': expanding operators without a backward rule "
                  "produced an invalid program: %s",
                  g->name, local->message);
      return FALSE;
    }
  }
  return TRUE;
}

/* The first library node matching op (states by id, nodes by id, a nested
 * program searched where its node stands), with its program and state. */
static WeirNode *first_library(WeirGraph *g, const char *op,
                               WeirGraph **graph_out, WeirState **state_out) {
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY && (!op || g_strcmp0(n->op, op) == 0)) {
        *graph_out = g;
        *state_out = s;
        return n;
      }
      WeirNode *inner = n->kind == WEIR_NODE_NESTED && n->nested
                            ? first_library(n->nested, op, graph_out, state_out)
                            : NULL;
      if (inner)
        return inner;
    }
  }
  return NULL;
}

gboolean weir_expand_all(WeirGraph *g, const char *op, guint *count,
                         GError **error) {
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  guint done = 0;
  WeirGraph *owner = NULL;
  WeirState *s = NULL;
  WeirNode *n;
  while ((n = first_library(copy, op, &owner, &s))) {
    if (done >= 1000000) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                  "program '%s': expansion does not terminate (more than "
                  "%u library nodes expanded)",
                  g->name, done);
      return FALSE;
    }
    if (!weir_expand_in_place(owner, s, n, NULL, error))
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
