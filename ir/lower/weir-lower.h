/* weir-lower.h — the lowering layer's one entry.
 *
 * Lowering turns library nodes into what the interpreter and the code
 * generator run: maps and tasklets (the pure expansions of ir/lower/expand/)
 * or, for the code generator, library nodes left to a native implementation
 * (ir/lower/weir-native.h); epilogues fused into a node become element-wise
 * maps.  The code generator, the conformance runner, kernel export and the
 * CLI lower through weir_lower(); the finer entry points (weir_expand_node,
 * weir_expand_all, weir_native_expand_rest, weir_epilogue_split_all) stay for
 * transformations and tests.  weir_init() must have run (it registers the
 * expansions and native implementations).
 */
#ifndef WEIR_LOWER_H
#define WEIR_LOWER_H

#include "weir-graph.h"

G_BEGIN_DECLS

typedef struct {
  /* Expand only the library nodes of this operator (NULL: all of them).
   * Ignored when native is set. */
  const char *op;
  /* Keep the library nodes whose chosen implementation (the "impl"
   * attribute, or weir_native_default_impl) is native, for the code
   * generator; expand the others with their chosen expansions, also in
   * nested programs.  When FALSE, every library node of the program's own
   * states is expanded with its pure expansion (as weir_expand_all). */
  gboolean native;
  /* First move every epilogue (of g and of nested programs) into an
   * element-wise map after its node (weir_epilogue_split_all); with native
   * set, except on nodes whose native implementation applies the epilogue
   * in its store (weir_epilogue_split_unless_native). */
  gboolean split_epilogues;
  /* OUT (optional): the number of library nodes expanded (pure mode). */
  guint *count;
} WeirLowerOptions;

/* Lowers g as options say (NULL: all library nodes, pure expansions).
 * All-or-nothing: the result is validated, and on error g is as it was;
 * the error names the node and the problem. */
WEIR_API gboolean weir_lower(WeirGraph *g, const WeirLowerOptions *options,
                             GError **error);

G_END_DECLS

#endif
