/* weir-rows.h — list items and list models of the workbench.
 *
 * WeirRow is the one item type the panels' list views show: a title, a
 * subtitle, and the identifiers the window needs to act on the row (a
 * transformation, a site, a history step, a tier).  It holds no logic.
 *
 * WeirStepModel is a GListModel over a session's history: position 0 is
 * the original program, position k the step k.  It reads the session on
 * demand and caches the rows; the window forwards the session's change
 * callbacks to it (weir_step_model_steps_changed / _step_updated), so it
 * never copies the history.
 */
#ifndef WEIR_ROWS_H
#define WEIR_ROWS_H

#include <gtk/gtk.h>

#include "weir.h"

G_BEGIN_DECLS

typedef enum {
  WEIR_ROW_TEXT,      /* a property, a message */
  WEIR_ROW_TIER,      /* a tier heading: tier */
  WEIR_ROW_TRANSFORM, /* a transformation: info */
  WEIR_ROW_SITE,      /* a site: info, site, legal, reason */
  WEIR_ROW_STEP,      /* a history step: index (0: original) */
} WeirRowKind;

#define WEIR_TYPE_ROW (weir_row_get_type())
G_DECLARE_FINAL_TYPE(WeirRow, weir_row, WEIR, ROW, GObject)

struct _WeirRow {
  GObject parent;
  WeirRowKind kind;
  char *title;    /* owned */
  char *subtitle; /* owned, may be NULL */
  guint tier;
  guint index;
  const WeirTransformInfo *info; /* borrowed from the registry */
  WeirSite site;
  gboolean legal;
  gboolean current;     /* a step: the session's cursor */
  GListStore *children; /* a tier: its transformations (owned) */
};

/* title and subtitle are copied. (transfer full) */
WeirRow *weir_row_new(WeirRowKind kind, const char *title,
                      const char *subtitle);

/* A factory for list views of WeirRows (or GtkTreeListRows of them):
 * a bold title over a dimmed, wrapped subtitle; `expander` puts the row
 * in a GtkTreeExpander (for GtkTreeListModel); `hover` (may be NULL) is
 * called with the row when the pointer enters a row and with NULL when it
 * leaves. */
typedef void (*WeirRowHoverFunc)(WeirRow *row, gpointer user);
GtkListItemFactory *weir_row_factory_new(gboolean expander,
                                         WeirRowHoverFunc hover, gpointer user);
/* A factory for name/value rows (the properties panel). */
GtkListItemFactory *weir_row_property_factory_new(void);

#define WEIR_TYPE_STEP_MODEL (weir_step_model_get_type())
G_DECLARE_FINAL_TYPE(WeirStepModel, weir_step_model, WEIR, STEP_MODEL, GObject)

/* A model over session (borrowed; NULL: empty). */
WeirStepModel *weir_step_model_new(void);
void weir_step_model_set_session(WeirStepModel *m, WeirSession *session);
/* Session callbacks, forwarded (position/removed/added in the session's
 * terms: step position p is model position p + 1). */
void weir_step_model_steps_changed(WeirStepModel *m, guint position,
                                   guint removed, guint added);
void weir_step_model_step_updated(WeirStepModel *m, guint index);
/* The cursor moved: the old and new current rows change their marker. */
void weir_step_model_cursor_changed(WeirStepModel *m, guint old_cursor,
                                    guint cursor);
/* Results of the original program (position 0), a results JSON text or
 * NULL; copied. */
void weir_step_model_set_original_results(WeirStepModel *m, const char *json);
const char *weir_step_model_get_original_results(WeirStepModel *m);

G_END_DECLS

#endif
