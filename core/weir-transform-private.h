/* weir-transform-private.h — internals shared by the transformation
 * registry (transform.c), the pattern matcher (pattern.c) and the plugin
 * loader (plugins.c).  Not installed; not part of the public API.
 */
#ifndef WEIR_TRANSFORM_PRIVATE_H
#define WEIR_TRANSFORM_PRIVATE_H

#include "weir-transform.h"

G_BEGIN_DECLS

/* What the registrations made on one thread between capture_begin and
 * capture_end did: the plugin loader uses it to explain a refusal and to
 * roll back the records of a plugin it unloads. */
typedef struct {
  GPtrArray *registered; /* char* names accepted (owned) */
  guint newer_version;   /* largest api_version refused as too new, or 0 */
  char *newer_name;      /* name carried by that record (owned), or NULL */
  char *duplicate;       /* first name refused as already registered */
  char *first_refusal;   /* message of the first refusal of any kind */
} WeirRegisterCapture;

/* Starts recording the registrations of the calling thread into c (which
 * is initialized here); capture_end stops.  Captures do not nest. */
void weir_transform_capture_begin(WeirRegisterCapture *c);
void weir_transform_capture_end(void);
void weir_register_capture_clear(WeirRegisterCapture *c);

/* Removes a registered transformation (rolling back a refused plugin).
 * Returns FALSE when no transformation has that name. */
gboolean weir_transform_unregister(const char *name);

/* Whether site fits pattern in g: the right number of nodes, all in the
 * site's state, distinct, of the pattern's kinds (op, transient), joined by
 * the pattern's edges.  On FALSE, *reason (transfer full) says what does
 * not fit. */
gboolean weir_pattern_check_site(const WeirGraph *g, const WeirPattern *pattern,
                                 const WeirSite *site, char **reason);

/* Applies t at site like weir_transform_apply (parameters, can_apply,
 * apply) but without the snapshot and the validation of the result: on
 * FALSE, or when the result is invalid, g may be left half transformed.
 * For callers that hold their own copy to roll back to and validate once
 * after many applications (a recipe step on a bare program, recipe.c). */
gboolean weir_transform_apply_unchecked(WeirGraph *g,
                                        const WeirTransformInfo *t,
                                        const WeirSite *site,
                                        const WeirParams *params,
                                        GError **error);

G_END_DECLS

#endif
