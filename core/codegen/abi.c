/* abi.c — the names and orders of the kernel ABI (weir-codegen.h): the
 * entry point prefix, the argument containers, and which constants the
 * generated code receives ("Bound constants").
 *
 * The parts of the code generator that need the ABI (codegen.c's file and
 * header, prepare.c's check that lowering kept it) read it here, as do the
 * runtime, the exporter and the CLI; this file uses only text.c (C
 * identifiers), so it sits below every emitter.
 *
 * Conventions of this file:
 *  - The table order is a walk of the program: its containers in id order,
 *    then the programs of nested nodes, state by state and node by node in
 *    id order, each walked the same way.  The runtime, the exporter and the
 *    generator all use weir_codegen_constants, so they agree.
 *  - Whether a constant is literal depends only on its element count, so
 *    the structure hash of the compile cache (weir_graph_structure_json
 *    with WEIR_CODEGEN_LITERAL_MAX) covers exactly the values that can
 *    appear in generated code.
 */
#include "codegen-private.h"

/* -------------------------------------------------------------------- names */

char *weir_codegen_prefix(const WeirGraph *g) {
  g_return_val_if_fail(g != NULL, NULL);
  return cg_sanitize_identifier(g->name);
}

GPtrArray *weir_codegen_arguments(const WeirGraph *g) {
  g_return_val_if_fail(g != NULL, NULL);
  GPtrArray *a = g_ptr_array_new();
  for (guint i = 0; i < g->containers->len; i++) {
    WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (!c->transient && !c->initial)
      g_ptr_array_add(a, c);
  }
  return a;
}

/* ---------------------------------------------------------- bound constants */

gboolean weir_codegen_constant_is_literal(const WeirContainer *c) {
  g_return_val_if_fail(c != NULL && c->initial != NULL, TRUE);
  gsize es = weir_dtype_size(c->dtype);
  gsize n = es ? g_bytes_get_size(c->initial) / es : 0;
  return n <= WEIR_CODEGEN_LITERAL_MAX;
}

static void collect(const WeirGraph *g, GPtrArray *out) {
  for (guint i = 0; i < g->containers->len; i++) {
    WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->initial && !weir_codegen_constant_is_literal(c))
      g_ptr_array_add(out, c);
  }
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_NESTED && n->nested)
        collect(n->nested, out);
    }
  }
}

GPtrArray *weir_codegen_constants(const WeirGraph *g) {
  g_return_val_if_fail(g != NULL, NULL);
  GPtrArray *a = g_ptr_array_new();
  collect(g, a);
  return a;
}

gsize weir_codegen_constants_bytes(const WeirGraph *g) {
  g_autoptr(GPtrArray) a = weir_codegen_constants(g);
  gsize total = 0;
  for (guint i = 0; i < a->len; i++)
    total +=
        g_bytes_get_size(((WeirContainer *)g_ptr_array_index(a, i))->initial);
  return total;
}

static gint counter;

void weir_codegen_count_source(void) {
  g_atomic_int_inc(&counter);
}

guint weir_codegen_sources_generated(void) {
  return (guint)g_atomic_int_get(&counter);
}
