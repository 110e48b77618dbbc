/* session-private.h — what workspace.c and recipe.c need of session.c
 * beyond the public header. */
#ifndef WEIR_SESSION_PRIVATE_H
#define WEIR_SESSION_PRIVATE_H

#include "weir-session.h"

G_BEGIN_DECLS

/* A session from stored parts: original (transfer full) and its JSON
 * (transfer full), source and bindings (copied, may be NULL). */
WeirSession *weir_session_new_stored(WeirGraph *original, char *original_json,
                                     const char *source, GHashTable *bindings);
/* Appends a step (transfer full) without touching the cursor. */
void weir_session_push_step(WeirSession *s, WeirStep *step);
/* Sets the cursor and the current program from its snapshot, without
 * notifications. */
gboolean weir_session_restore_cursor(WeirSession *s, guint cursor,
                                     GError **error);
/* Sets the bookmark of the original without checks. */
void weir_session_set_original_bookmark(WeirSession *s, const char *name);

WeirStep *weir_step_new(void);
void weir_step_free(WeirStep *step);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirStep, weir_step_free)

/* JSON object text of every parameter's canonical value (see WeirStep). */
char *weir_params_to_json(const WeirTransformInfo *t, const WeirParams *p);
/* "name=value" assignments from a params JSON object text (transfer full,
 * NULL-terminated); error names source. */
char **weir_params_json_to_assignments(const char *json, const char *source,
                                       GError **error);

/* Sorted copy of a bindings table's names (borrowed strings). */
GPtrArray *weir_bindings_sorted_names(GHashTable *bindings);

/* Line number (1-based) of the first difference of two texts. */
guint weir_text_first_difference(const char *a, const char *b);

G_END_DECLS

#endif
