/* weir-window.h — the workbench window: one session on one program.
 *
 * A WeirWindow shows the session's current program in a WeirGraphView and
 * around it the panels (properties, transformations, history, code) and a
 * status bar.  Everything it does goes through libweir's public API; its
 * actions (win.*) are listed in docs/gui.md.
 */
#ifndef WEIR_WINDOW_H
#define WEIR_WINDOW_H

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define WEIR_TYPE_WINDOW (weir_window_get_type())
G_DECLARE_FINAL_TYPE(WeirWindow, weir_window, WEIR, WINDOW,
                     GtkApplicationWindow)

WeirWindow *weir_window_new(GtkApplication *app);

/* Opens a model (.onnx), an IR JSON file or a workspace (.weir) into this
 * window.  On failure the window keeps what it showed, shows the error in
 * its message bar and returns FALSE. */
gboolean weir_window_open_path(WeirWindow *w, const char *path);

/* TRUE when the window shows no program yet. */
gboolean weir_window_is_empty(WeirWindow *w);

/* Shows a message in the window's message bar (error or information). */
void weir_window_show_message(WeirWindow *w, gboolean error,
                              const char *message);

/* Fills the Open Recent section of the main menu with items (borrowed;
 * NULL empties it). */
void weir_window_set_recent_menu(WeirWindow *w, GMenuModel *items);

G_END_DECLS

#endif
