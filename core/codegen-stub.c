/* codegen-stub.c — TEMPORARY stand-in for codegen.c (branch codegen), so
 * the runtime links before the code generator is merged.  core/meson.build
 * drops this file as soon as codegen.c exists; it will then be deleted.
 * weir_codegen_c reports that code generation is not available;
 * weir_codegen_prefix and weir_codegen_arguments follow weir-codegen.h. */
#include "weir-codegen.h"

char *weir_codegen_prefix(const WeirGraph *g) {
  char *p = g_strdup(g->name);
  for (char *q = p; *q; q++)
    if (!g_ascii_isalnum(*q))
      *q = '_';
  return p;
}

GPtrArray *weir_codegen_arguments(const WeirGraph *g) {
  GPtrArray *a = g_ptr_array_new();
  for (guint i = 0; i < g->containers->len; i++) {
    WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (!c->transient && !c->initial)
      g_ptr_array_add(a, c);
  }
  return a;
}

char *weir_codegen_c(const WeirGraph *g, const WeirCodegenOptions *opts,
                     GError **error) {
  (void)opts;
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
              "program '%s': code generation is not available in this build",
              g->name);
  return NULL;
}

char *weir_codegen_header(const WeirGraph *g) {
  (void)g;
  return g_strdup("");
}
