/* prepare.c — the program as the C backend emits it.
 *
 * Code generation works on a copy (the caller's program is not changed):
 * weir_lower() splits epilogues off their nodes and expands library nodes
 * with their chosen implementations (those with a native implementation
 * stay, weir-native.h), and the result is validated.  The copy must keep the
 * arguments and symbols of the original, which define the ABI.
 */
#include <string.h>

#include "codegen-private.h"
#include "weir-lower.h"
#include "weir-validate.h"

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
  /* Epilogues become in-place loops right after their node's call; the
   * library nodes without a native implementation are expanded. */
  if (!weir_lower(copy,
                  &(WeirLowerOptions){.native = TRUE, .split_epilogues = TRUE},
                  error))
    return NULL;
  /* Constant sizes must fit in int64 so the generated index arithmetic
   * cannot overflow (symbolic ones are checked when bound, at run time). */
  if (!weir_graph_validate(copy, error) ||
      !weir_graph_check_sizes(copy, NULL, error))
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
