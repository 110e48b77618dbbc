/* weir-window-private.h — the window's private parts, shared by its files.
 *
 * WeirWindow is one GObject written in several files, one per job (see
 * gui/README.md):
 *   weir-window.c             the object (template, init, dispose), the
 *                             session's callbacks, status bar, messages,
 *                             history and code view
 *   weir-window-actions.c     the win.* actions: one GActionEntry table
 *                             and their enabled state
 *   weir-window-properties.c  the properties panel
 *   weir-window-transforms.c  the transformations panel: scans, parameter
 *                             editors, sites, preview and apply
 *   weir-window-run.c         the Run page: run/benchmark worker, input
 *                             and expected-output files
 *   weir-window-files.c       open, save, save as, recipes, kernel export,
 *                             the unsaved-changes question, drops
 * This header holds the instance struct, the functions the files call of
 * each other, and (last) what the GUI tests read and drive beyond the
 * actions.  Only the window's files and tests/gui include it.
 */
#ifndef WEIR_WINDOW_PRIVATE_H
#define WEIR_WINDOW_PRIVATE_H

#include <gtksourceview/gtksource.h>

#include "weir-graph-view.h"
#include "weir-rows.h"
#include "weir-window.h"
#include "weir.h"

G_BEGIN_DECLS

struct _WeirWindow {
  GtkApplicationWindow parent;

  /* template children */
  GtkRevealer *toast_revealer;
  GtkWidget *toast_box;
  GtkImage *toast_icon;
  GtkLabel *toast_label;
  GtkButton *toast_close;
  GtkSearchBar *search_bar;
  GtkSearchEntry *search_entry;
  GtkToggleButton *find_button;
  GtkRevealer *preview_revealer;
  GtkLabel *preview_label;
  GtkStack *graph_stack;
  WeirGraphView *graph_view;
  GtkDropDown *overlay_dropdown;
  GtkLabel *properties_title;
  GtkListView *properties_list;
  GtkNotebook *notebook;
  GtkPaned *main_paned;
  int side_width;   /* width the side panel keeps */
  int paned_width;  /* last allocated width of main_paned */
  gboolean placing; /* the divider is being moved by place_paned */
  gboolean place_pending;
  GtkLabel *scope_label;
  GtkCheckButton *legal_only_check;
  GtkListView *transforms_list;
  GtkLabel *transform_description;
  GtkListView *sites_list;
  GtkGrid *params_grid;
  GtkListView *history_list;
  GtkEntry *bookmark_entry;
  GtkButton *bookmark_button;
  GtkSourceView *code_view;
  GtkLabel *status_label;
  GtkLabel *progress_label;
  GtkProgressBar *progress_bar;
  GtkButton *cancel_button;
  GMenu *recent_section;
  GtkGrid *inputs_grid;
  GtkLabel *inputs_summary;
  GtkDrawingArea *roofline_area;
  GtkLabel *roofline_label;

  /* document (weir-window.c; opened and saved by weir-window-files.c) */
  WeirSession *session;
  WeirSessionCallbacks callbacks;
  char *path;           /* the file opened (model, program or workspace) */
  char *workspace_path; /* where Save writes, or NULL */
  gboolean dirty;
  WeirAnalysis *analysis; /* of the current program */
  guint last_cursor;
  guint history_generation; /* bumps when steps are removed */
  gboolean syncing;         /* a list's selection is being set from code */
  gboolean disposed;        /* late worker results are dropped */

  /* properties panel (weir-window-properties.c) */
  GListStore *properties;

  /* history and code view (weir-window.c) */
  WeirStepModel *steps;
  GtkSingleSelection *history_selection;
  gboolean code_stale;
  gboolean code_highlighted;
  guint code_first, code_last;
  GtkTextTag *scope_tag;

  /* transformations panel (weir-window-transforms.c) */
  GListStore *tiers; /* WeirRow (TIER) with children */
  GtkTreeListModel *transforms_tree;
  GtkSingleSelection *transforms_selection;
  GListStore *sites;
  GtkSingleSelection *sites_selection;
  const WeirTransformInfo *transform; /* selected transformation */
  GPtrArray *param_editors;           /* GtkWidget*, one per spec */
  /* panel scans in workers (NULL when none runs) */
  GCancellable *scan_cancellable;
  GCancellable *site_cancellable;
  char *keep_transform; /* transformation to select after a scan */
  /* preview */
  gboolean previewing;
  WeirGraph *preview_program;
  char *preview_text;
  WeirSite preview_site;
  char **preview_params;
  const WeirTransformInfo *preview_transform;

  /* Run page (weir-window-run.c) */
  GCancellable *run_cancellable; /* while a run or benchmark is on */
  /* run inputs: container name -> WeirTensor* and -> file path */
  GHashTable *inputs, *input_files;
  GHashTable *expected, *expected_files;
  /* profiles of the last Run/Benchmark of each step (step index ->
   * WeirProfile*), cleared when steps are removed or a file is opened */
  GHashTable *profiles;

  /* "save changes?" confirmation (weir-window-files.c) */
  GtkWindow *confirm;     /* the dialog while it is up */
  gulong confirm_handler; /* its close-request handler */
  gboolean confirm_ref;   /* a reference on this window is held for it */
  int pending;            /* WEIR_PENDING_CLOSE or WEIR_PENDING_OPEN */
  char *pending_path;     /* the file to open after the answer */
  gboolean close_confirmed;
  /* what a Save whose file is being chosen continues with */
  int after_save;
  char *after_save_path;

  /* measurements */
  double last_apply_ms;
  char *message; /* message bar text, or NULL */
  char *status_text;
};

/* What a pending "save changes?" question goes on with. */
enum { WEIR_PENDING_NONE, WEIR_PENDING_CLOSE, WEIR_PENDING_OPEN };

/* ------------------------------------------------- weir-window.c */

void weir_window_hide_message(WeirWindow *w);
/* The message bar shows "what: message" (what may be NULL). */
void weir_window_show_error(WeirWindow *w, const char *what,
                            const GError *error);
/* Marks the session as changed (or saved) since the last save; the title
 * follows. */
void weir_window_set_dirty(WeirWindow *w, gboolean dirty);
/* A figure as text: "1.2 MB", "?" when unknown (transfer full). */
char *weir_window_quantity_text(const WeirQuantity *q, gboolean bytes);
/* The cache of the traffic model (weir_hw_model_cache_bytes of the cached
 * hardware profile; never measured by the GUI), read once. */
gint64 weir_window_model_cache(void);
/* Refreshes everything that depends on the current program: analysis,
 * graph, status bar, properties, transformations, code. */
void weir_window_refresh_program(WeirWindow *w);

/* ----------------------------------------- weir-window-actions.c */

/* Adds the win.* actions to the window (from init). */
void weir_window_actions_init(WeirWindow *w);
/* Enables the actions that the session's state allows. */
void weir_window_update_actions(WeirWindow *w);

/* Shows the profile of the current step (if any): the graph view's
 * measured-time overlay and the roofline page. */
void weir_window_refresh_profile(WeirWindow *w);
/* Sets up the profiles table and the roofline drawing (from init). */
void weir_window_run_init(WeirWindow *w);
/* The profile of the current step, or NULL (borrowed). */
const WeirProfile *weir_window_current_profile(WeirWindow *w);

/* -------------------------------------- weir-window-properties.c */

void weir_window_refresh_properties(WeirWindow *w);

/* -------------------------------------- weir-window-transforms.c */

/* Builds the transformations, sites and parameter models (from init). */
void weir_window_transforms_init(WeirWindow *w);
/* Rescans the transformations that apply at the graph's selection (in a
 * worker), then the sites of the selected one. */
void weir_window_refresh_transforms(WeirWindow *w);
void weir_window_refresh_sites(WeirWindow *w);
/* The selected site row (borrowed), or NULL. */
WeirRow *weir_window_selected_site(WeirWindow *w);
/* win.preview, win.discard-preview, win.apply, win.apply-all. */
void weir_window_preview(WeirWindow *w);
void weir_window_discard_preview(WeirWindow *w);
void weir_window_apply(WeirWindow *w);
void weir_window_apply_all(WeirWindow *w);
/* Drops the preview (the graph is not reset). */
void weir_window_end_preview(WeirWindow *w);

/* --------------------------------------------- weir-window-run.c */

/* Runs (bench FALSE) or benchmarks the current step in a worker. */
void weir_window_start_run(WeirWindow *w, gboolean bench);
/* Sets (path non-empty) or clears the input or expected file of the
 * argument name; FALSE with a message in the window when it is refused. */
gboolean weir_window_set_tensor_file(WeirWindow *w, gboolean expected,
                                     const char *name, const char *path);
void weir_window_clear_inputs(WeirWindow *w);
/* Rebuilds the Run page's list of arguments. */
void weir_window_refresh_inputs(WeirWindow *w);

/* ------------------------------------------- weir-window-files.c */

/* Adds the drop target of files (from init). */
void weir_window_files_init(WeirWindow *w);
/* Drops the unsaved-changes question and what it holds (from dispose). */
void weir_window_files_dispose(WeirWindow *w);
/* Asks "save changes?" before the window closes when the session has
 * unsaved changes; TRUE when the close waits for the answer. */
gboolean weir_window_close_asks(WeirWindow *w);
/* Saves the workspace to path; FALSE with a message on failure. */
gboolean weir_window_save_to(WeirWindow *w, const char *path);
/* win.save (a chooser when there is no workspace file yet), win.save-as. */
void weir_window_save(WeirWindow *w);
void weir_window_save_as(WeirWindow *w);
/* The session's history as a recipe file, a recipe file applied, the
 * kernel directory exported; path NULL asks with a file chooser. */
void weir_window_export_recipe(WeirWindow *w, const char *path);
void weir_window_apply_recipe(WeirWindow *w, const char *path);
/* Applies the pipeline of optimization level (1..3) to the session step by
 * step (weir_session_optimize): its applications appear in the history. */
void weir_window_optimize(WeirWindow *w, guint level);
void weir_window_export_kernel(WeirWindow *w, const char *dir);

/* ------------------------------------------------------ for tests */

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
