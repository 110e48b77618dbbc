/* pure-reference.h — the reference results of the kernel tests: the
 * interpreter on the pure expansion of a program.  Header-only; include
 * after cmocka.h, weir-expand.h, weir-interp.h and kernel-check.h. */
#ifndef WEIR_TEST_PURE_REFERENCE_H
#define WEIR_TEST_PURE_REFERENCE_H

/* The interpreter's results on a copy of g whose every node has lost its
 * implementation choice and been expanded pure, for a copy of args.
 * (transfer full) */
static inline GHashTable *pure_reference(const WeirGraph *g, GHashTable *args) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  for (guint s = 0; s < pure->states->len; s++) {
    WeirState *st = g_ptr_array_index(pure->states, s);
    for (guint k = 0; k < st->nodes->len; k++) {
      weir_node_remove_attr(g_ptr_array_index(st->nodes, k), "impl_params");
      weir_node_remove_attr(g_ptr_array_index(st->nodes, k), "impl");
    }
  }
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("%s: pure expansion: %s", g->name, err->message);
  GHashTable *ref = copy_args(args);
  if (!weir_interpret(pure, NULL, ref, NULL, &err))
    fail_msg("%s: interpreter: %s", g->name, err->message);
  return ref;
}

#endif
