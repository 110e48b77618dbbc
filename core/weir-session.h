/* weir-session.h — optimization sessions: history, exact undo/redo,
 * workspaces.
 *
 * A session holds the original program, the current program and the
 * history of transformations applied to it: steps 1..n and a cursor c
 * (0 <= c <= n).  Steps 1..c made the current program; steps c+1..n are
 * the redo tail.  Step 0 stands for the original program.
 *
 * Exactness.  Every step keeps a snapshot of the program after it, as the
 * JSON text of weir_graph_to_json().  Undo, redo and goto load the snapshot
 * of the target step, so the JSON of the current program after undo is
 * byte-identical to its JSON before the step; nothing is re-applied.
 * Memory: one JSON text per step (docs/sessions.md gives measured sizes).
 *
 * Applying a transformation when c < n first drops the redo tail (steps
 * c+1..n and the bookmarks on them), as text editors do.
 *
 * List shape.  Steps are read by index (weir_session_n_steps,
 * weir_session_step) like a GListModel: position p is step p+1.  The
 * callbacks below report changes in the same terms as
 * g_list_model_items_changed(), so a GUI wraps a session in a GListModel
 * without copying it.  The session itself has no GObject.
 *
 * Workspaces.  weir_workspace_save / weir_workspace_open store a whole
 * session (original, every step with its snapshot, cursor, bookmarks,
 * results) in one SQLite file, conventionally "*.weir".  Saving writes a
 * new database next to the target in one transaction, syncs it and renames
 * it over the target: an interrupted save leaves the old file or the new
 * one, never a broken one.
 *
 * Not thread-safe: use a session from one thread at a time.
 */
#ifndef WEIR_SESSION_H
#define WEIR_SESSION_H

#include "weir-analysis.h"
#include "weir-graph.h"
#include "weir-plugin.h"

G_BEGIN_DECLS

/* ------------------------------------------------------------- figures */

/* A recorded quantity (bytes or FLOPs): its symbolic text and, when all
 * its symbols were bound, its value.  expr == NULL: unknown. */
typedef struct {
  char *expr; /* owned, or NULL */
  gboolean known;
  gint64 value;
} WeirFigure;

/* ---------------------------------------------------------------- steps */

/* One step of the history.  Read-only for clients: change it through the
 * session functions (bookmarks, results). */
typedef struct {
  guint index;       /* 1..n */
  char *transform;   /* transformation name */
  WeirSite site;     /* state and node ids, as applied */
  GPtrArray *labels; /* char*, label of each site node in the program
                        before the step (for display and selectors) */
  char *site_text;   /* weir_site_describe() before the step */
  char *params;      /* canonical text, weir_params_to_string() */
  /* Canonical value of every parameter as a JSON object text
   * ({"tile": "32,32"}): what a recipe exported from this step holds. */
  char *params_json;
  /* logical volume (total_bytes of weir-analysis.h; not memory traffic) */
  WeirFigure bytes_before, bytes_after;
  WeirFigure flops_before, flops_after;
  double seconds;   /* wall time of apply + validate */
  gint64 timestamp; /* when applied: microseconds since the Unix epoch */
  char *bookmark;   /* name of the bookmark on this step, or NULL */
  char *results;    /* benchmark results (JSON text), or NULL */
  char *program;    /* JSON of the program after the step */
} WeirStep;

/* ------------------------------------------------------------- sessions */

typedef struct _WeirSession WeirSession;

/* Change notifications.  Every member may be NULL.  They run synchronously
 * at the end of the call that made the change, after the session is
 * consistent again. */
typedef struct {
  /* The current program changed (apply, undo, redo, goto, replay). */
  void (*changed)(gpointer user);
  /* The step list changed like g_list_model_items_changed(): at position
   * (step position+1), `removed` steps left and `added` steps came. */
  void (*steps_changed)(guint position, guint removed, guint added,
                        gpointer user);
  /* A step's bookmark or results changed (index 1..n). */
  void (*step_updated)(guint index, gpointer user);
  /* The cursor moved (new value 0..n). */
  void (*cursor_changed)(guint cursor, gpointer user);
} WeirSessionCallbacks;

/* A new session on a copy of program (borrowed), which must be valid.
 * source (may be NULL) records where it came from (a model file).
 * bindings (name -> gint64*, may be NULL; copied) give symbol values for
 * the recorded figures; they are checked (weir_graph_check_sizes): a
 * negative or overflowing size is an error naming the container and the
 * symbol. */
/**
 * weir_session_new:
 * @source: (nullable):
 * @bindings: (nullable):
 * Returns: (transfer full):
 */
WEIR_API WeirSession *weir_session_new(const WeirGraph *program,
                                       const char *source, GHashTable *bindings,
                                       GError **error);
WEIR_API void weir_session_free(WeirSession *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirSession, weir_session_free)

/* callbacks (borrowed; must outlive the session or be replaced) and user
 * data; NULL callbacks removes them. */
/**
 * weir_session_set_callbacks: (skip)
 */
WEIR_API void weir_session_set_callbacks(WeirSession *s,
                                         const WeirSessionCallbacks *callbacks,
                                         gpointer user);

/* The original and current programs (borrowed; the current one is replaced
 * by every apply/undo/redo/goto: do not keep the pointer across them, and
 * change it only through the session). */
WEIR_API const WeirGraph *weir_session_original(const WeirSession *s);
WEIR_API const char *weir_session_original_json(const WeirSession *s);
WEIR_API const WeirGraph *weir_session_current(const WeirSession *s);
/* JSON of the current program (borrowed; same lifetime rule). */
WEIR_API const char *weir_session_current_json(const WeirSession *s);
/* Where the program came from, or NULL (borrowed). */
/**
 * weir_session_source:
 * Returns: (transfer none) (nullable):
 */
WEIR_API const char *weir_session_source(const WeirSession *s);
/* Symbol values (name -> gint64*; borrowed, never NULL). */
/**
 * weir_session_bindings: (skip)
 */
WEIR_API GHashTable *weir_session_bindings(const WeirSession *s);

WEIR_API guint weir_session_n_steps(const WeirSession *s);
/* Step index 1..n (borrowed), or NULL when out of range. */
/**
 * weir_session_step:
 * Returns: (transfer none) (nullable):
 */
WEIR_API const WeirStep *weir_session_step(const WeirSession *s, guint index);
WEIR_API guint weir_session_cursor(const WeirSession *s);
WEIR_API gboolean weir_session_can_undo(const WeirSession *s);
WEIR_API gboolean weir_session_can_redo(const WeirSession *s);

/* Applies transformation `name` at site with parameters given as
 * "name=value" strings (NULL-terminated, may be NULL: defaults), through
 * weir_transform_apply().  On success the step is appended (after
 * dropping the redo tail) and becomes the cursor; the new step is returned
 * (borrowed).  On failure nothing changes and the error says why (the
 * framework's reason for an illegal site). */
/**
 * weir_session_apply:
 * @params: (array zero-terminated=1) (nullable):
 * Returns: (transfer none):
 */
WEIR_API const WeirStep *weir_session_apply(WeirSession *s, const char *name,
                                            const WeirSite *site,
                                            const char *const *params,
                                            GError **error);

/* Moves the cursor one step back / forward; FALSE (with an error) when
 * there is nothing to undo / redo. */
WEIR_API gboolean weir_session_undo(WeirSession *s, GError **error);
WEIR_API gboolean weir_session_redo(WeirSession *s, GError **error);
/* Makes step k (0..n) current. */
WEIR_API gboolean weir_session_goto(WeirSession *s, guint k, GError **error);

/* Re-applies steps 1..n from the original through the framework and checks
 * that each gives exactly the recorded snapshot.  The session is not
 * changed.  Fails naming the first step that cannot be applied or gives a
 * different program. */
WEIR_API gboolean weir_session_replay(const WeirSession *s, GError **error);

/* Bookmarks: a name on a step (1..n) or on the original (0).  Names are
 * unique and non-empty; setting an existing name moves it.  A step holds
 * at most one bookmark (setting another replaces it). */
WEIR_API gboolean weir_session_bookmark(WeirSession *s, guint step,
                                        const char *name, GError **error);
WEIR_API gboolean weir_session_remove_bookmark(WeirSession *s,
                                               const char *name);
/* Step of a bookmark; FALSE when there is no such bookmark. */
/**
 * weir_session_find_bookmark:
 * @step: (out):
 */
WEIR_API gboolean weir_session_find_bookmark(const WeirSession *s,
                                             const char *name, guint *step);
/* Bookmark of the original program, or NULL (borrowed). */
/**
 * weir_session_original_bookmark:
 * Returns: (transfer none) (nullable):
 */
WEIR_API const char *weir_session_original_bookmark(const WeirSession *s);

/* Benchmark results of step k (1..n): a JSON text (checked to parse) or
 * NULL to clear.  The getter's result is borrowed (NULL when none). */
/**
 * weir_session_set_results:
 * @json: (nullable):
 */
WEIR_API gboolean weir_session_set_results(WeirSession *s, guint step,
                                           const char *json, GError **error);
/**
 * weir_session_get_results:
 * Returns: (transfer none) (nullable):
 */
WEIR_API const char *weir_session_get_results(const WeirSession *s, guint step);

/* Approximate memory held by the history (snapshot texts and step
 * records), in bytes. */
WEIR_API gsize weir_session_history_bytes(const WeirSession *s);

/* Figure helpers. */
WEIR_API void weir_figure_clear(WeirFigure *f);
WEIR_API void weir_figure_set(WeirFigure *f, const WeirQuantity *q);
/* "1.1 MiB" / "123456" / "12*N B" / "?"; bytes selects IEC size units.
 * (transfer full) */
WEIR_API char *weir_figure_format(const WeirFigure *f, gboolean bytes);

/* ----------------------------------------------------------- workspaces */

/* Format of workspace files ("weir-workspace", version 1). */
#define WEIR_WORKSPACE_FORMAT "weir-workspace"
#define WEIR_WORKSPACE_VERSION 1

/* Writes the whole session to path atomically (temporary file in the same
 * directory, one transaction, fsync, rename, fsync of the directory). */
WEIR_API gboolean weir_workspace_save(const WeirSession *s, const char *path,
                                      GError **error);
/* Reads a workspace.  Errors: not a workspace / corrupt (WEIR_ERROR_INVALID),
 * written by a newer format (WEIR_ERROR_VERSION), I/O (WEIR_ERROR_IO); each
 * names the file. */
WEIR_API WeirSession *weir_workspace_open(const char *path, GError **error);

G_END_DECLS

#endif
