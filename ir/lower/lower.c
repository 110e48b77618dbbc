/* lower.c — weir_lower(), the lowering layer's entry: epilogue splitting,
 * then pure expansions or the native choice with the expansion of the rest.
 */
#include "weir-expand.h"
#include "weir-lower.h"
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-validate.h"

/* The first library node of g that is to be expanded, or NULL. */
static WeirNode *first_expandable(WeirGraph *g, WeirState **s_out,
                                  const char **impl_out) {
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_LIBRARY)
        continue;
      const char *name = weir_native_chosen(g, s, n);
      if (weir_native_lookup(n->op, name))
        continue;
      *s_out = s;
      *impl_out = weir_op_expansion(n->op, name) ? name : "pure";
      return n;
    }
  }
  return NULL;
}

gboolean weir_native_expand_rest(WeirGraph *g, GError **error) {
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  WeirState *s = NULL;
  const char *impl = NULL;
  WeirNode *n;
  guint done = 0;
  while ((n = first_expandable(copy, &s, &impl))) {
    if (!weir_expand_in_place(copy, s, n, impl, error))
      return FALSE;
    if (++done > 1000000) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                  "program '%s': expansion does not terminate", g->name);
      return FALSE;
    }
  }
  if (!weir_graph_validate(copy, error))
    return FALSE;
  WeirGraph tmp = *g;
  *g = *copy;
  *copy = tmp;
  return TRUE;
}

static gboolean has_library(const WeirGraph *g) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY ||
          (n->kind == WEIR_NODE_NESTED && n->nested && has_library(n->nested)))
        return TRUE;
    }
  }
  return FALSE;
}

/* The native mode: expands the library nodes of g and of the programs
 * nested in it that are not implemented natively. */
static gboolean expand_everywhere(WeirGraph *g, GError **error) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_NESTED && n->nested && has_library(n->nested) &&
          !expand_everywhere(n->nested, error)) {
        g_autofree char *d = weir_describe_node(s, n);
        g_prefix_error(error, "%s: ", d);
        return FALSE;
      }
    }
  }
  return weir_native_expand_rest(g, error);
}

gboolean weir_lower(WeirGraph *g, const WeirLowerOptions *options,
                    GError **error) {
  g_return_val_if_fail(g != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  static const WeirLowerOptions pure = {0};
  const WeirLowerOptions *o = options ? options : &pure;
  if (o->count)
    *o->count = 0;
  if (!o->native && !o->split_epilogues)
    return weir_expand_all(g, o->op, o->count, error);
  /* The steps change the program in place: work on a copy. */
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  /* with native nodes kept, those whose implementation applies the
   * epilogue in its store keep it */
  if (o->split_epilogues &&
      !(o->native ? weir_epilogue_split_unless_native(copy, error)
                  : weir_epilogue_split_all(copy, error)))
    return FALSE;
  if (o->native) {
    /* weir_native_expand_rest validates the whole program. */
    if (has_library(copy) ? !expand_everywhere(copy, error)
                          : !weir_graph_validate(copy, error))
      return FALSE;
  } else if (!weir_expand_all(copy, o->op, o->count, error)) {
    return FALSE;
  }
  WeirGraph tmp = *g;
  *g = *copy;
  *copy = tmp;
  return TRUE;
}
