/* prepare.c — the program as the C backend emits it.
 *
 * Code generation works on a copy (the caller's program is not changed):
 * epilogues are split off their nodes, library nodes are expanded with
 * their chosen implementations (those with a native implementation stay,
 * weir-native.h), and the result is validated.  The copy must keep the
 * arguments and symbols of the original, which define the ABI.
 */
#include <string.h>

#include "codegen-private.h"
#include "weir-expand.h"
#include "weir-validate.h"

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

/* Expands the library nodes of g and of the programs nested in it. */
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

static gboolean same_names(GPtrArray *a, GPtrArray *b, gboolean containers) {
  if (a->len != b->len)
    return FALSE;
  for (guint i = 0; i < a->len; i++) {
    const char *x = containers
                        ? ((WeirContainer *)g_ptr_array_index(a, i))->name
                        : g_ptr_array_index(a, i);
    const char *y = containers
                        ? ((WeirContainer *)g_ptr_array_index(b, i))->name
                        : g_ptr_array_index(b, i);
    if (strcmp(x, y) != 0)
      return FALSE;
  }
  return TRUE;
}

WeirGraph *cg_prepare_c(const WeirGraph *g, GError **error) {
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  /* Epilogues become in-place loops right after their node's call. */
  if (!weir_epilogue_split_all(copy, error))
    return NULL;
  if (has_library(copy) && !expand_everywhere(copy, error))
    return NULL;
  if (!weir_graph_validate(copy, error))
    return NULL;
  g_autoptr(GPtrArray) a0 = weir_codegen_arguments(g);
  g_autoptr(GPtrArray) a1 = weir_codegen_arguments(copy);
  if (!same_names(a0, a1, TRUE) ||
      !same_names(g->symbols, copy->symbols, FALSE)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "program '%s': expanding library nodes changed the arguments "
                "or symbols",
                g->name);
    return NULL;
  }
  return g_steal_pointer(&copy);
}
