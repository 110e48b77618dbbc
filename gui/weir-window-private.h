/* weir-window-private.h — what the GUI tests read and drive of a window
 * beyond its actions: the session, the widgets' state, and the selections
 * of the list views (set as a user's click would). */
#ifndef WEIR_WINDOW_PRIVATE_H
#define WEIR_WINDOW_PRIVATE_H

#include "weir-graph-view.h"
#include "weir-window.h"
#include "weir.h"

G_BEGIN_DECLS

/* The session (borrowed; NULL when empty). */
WeirSession *weir_window_get_session(WeirWindow *w);
WeirGraphView *weir_window_get_graph_view(WeirWindow *w);
/* The analysis of the current program (borrowed; NULL when empty). */
const WeirAnalysis *weir_window_get_analysis(WeirWindow *w);

/* Texts on screen (borrowed). */
const char *weir_window_get_status_text(WeirWindow *w);
/* The message bar's text, or NULL when it is hidden. */
const char *weir_window_get_message(WeirWindow *w);
const char *weir_window_get_preview_text(WeirWindow *w);
gboolean weir_window_is_previewing(WeirWindow *w);
/* Path of the workspace file the session is saved to, or NULL. */
const char *weir_window_get_workspace_path(WeirWindow *w);
gboolean weir_window_is_dirty(WeirWindow *w);

/* The list models the panels show (borrowed). */
GListModel *weir_window_get_properties(WeirWindow *w);
/* Transformations (WeirRow of kind TRANSFORM) in the panel, flattened in
 * tier order. (transfer container: free the array only) */
GPtrArray *weir_window_list_transforms(WeirWindow *w);
GListModel *weir_window_get_sites(WeirWindow *w);
GListModel *weir_window_get_history(WeirWindow *w);

/* Selects the transformation row `name` in the panel (expanding its tier)
 * as a click would; FALSE when it is not listed. */
gboolean weir_window_select_transform(WeirWindow *w, const char *name);
/* Selects site row k of the sites list. */
gboolean weir_window_select_site(WeirWindow *w, guint k);
/* Selects history row k (0: original) as a click would (goes there). */
gboolean weir_window_select_history(WeirWindow *w, guint k);
/* Sets the editor of parameter `name` to text (as typed). */
gboolean weir_window_set_param(WeirWindow *w, const char *name,
                               const char *text);
/* Shows notebook page: 0 transformations, 1 history, 2 code, 3 run. */
void weir_window_show_page(WeirWindow *w, guint page);

/* The code view's text (transfer full) and its highlighted lines
 * (0-based, inclusive); FALSE when nothing is highlighted. */
char *weir_window_get_code(WeirWindow *w);
gboolean weir_window_get_code_highlight(WeirWindow *w, guint *first,
                                        guint *last);

/* TRUE while the transformations panel is being filled (its scans run
 * in worker threads). */
gboolean weir_window_is_scanning(WeirWindow *w);
/* TRUE while a run or benchmark is in progress. */
gboolean weir_window_is_running(WeirWindow *w);
/* Times of the last apply (session apply + analysis + panels) and of the
 * last redraw after it (graph view's layout + draw), in milliseconds. */
double weir_window_last_apply_ms(WeirWindow *w);
/* Bookmarks the current step with name (as the Bookmark button does). */
gboolean weir_window_bookmark(WeirWindow *w, const char *name);

/* The "save changes?" question asked when a window with unsaved changes
 * is closed (close-request, Quit) or another file is opened into it. */
typedef enum {
  WEIR_CONFIRM_CANCEL,  /* keep the window and the session as they are */
  WEIR_CONFIRM_DISCARD, /* close (or open) without saving */
  WEIR_CONFIRM_SAVE,    /* save the workspace, then close (or open) */
} WeirConfirmResponse;
/* The dialog while it is up, else NULL (borrowed). */
GtkWindow *weir_window_get_confirm_dialog(WeirWindow *w);
/* Answers it as a click on its button would (nothing when it is not up).
 * DISCARD and SAVE may destroy w. */
void weir_window_confirm_respond(WeirWindow *w, WeirConfirmResponse r);

/* The tensor file chosen on the Run page for argument name (its input, or
 * its expected output), or NULL (random values / no expectation). */
const char *weir_window_get_input_file(WeirWindow *w, const char *name,
                                       gboolean expected);

G_END_DECLS

#endif
