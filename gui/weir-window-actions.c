/* weir-window-actions.c — the window's win.* actions (weir-window.h).
 *
 * Actions are the only entry points of user commands: buttons, menus,
 * accelerators (weir-application.c) and the GUI tests name them.  This
 * file holds their one GActionEntry table, the callbacks that turn an
 * activation into a call of the part of the window that does the work
 * (weir-window-private.h), and their enabled state, which follows the
 * session (weir_window_update_actions).  docs/gui.md lists them.
 */
#include <string.h>

#include "weir-window-private.h"

static void set_enabled(WeirWindow *w, const char *name, gboolean enabled) {
  GAction *a = g_action_map_lookup_action(G_ACTION_MAP(w), name);
  if (a)
    g_simple_action_set_enabled(G_SIMPLE_ACTION(a), enabled);
}

void weir_window_update_actions(WeirWindow *w) {
  gboolean have = w->session != NULL;
  gboolean running = w->run_cancellable != NULL;
  WeirRow *site = weir_window_selected_site(w);
  gboolean can_site = have && w->transform && site && site->legal;
  set_enabled(w, "undo", have && weir_session_can_undo(w->session));
  set_enabled(w, "redo", have && weir_session_can_redo(w->session));
  set_enabled(w, "apply", w->previewing || can_site);
  set_enabled(w, "preview", can_site);
  set_enabled(w, "apply-all", have && w->transform);
  set_enabled(w, "discard-preview", w->previewing);
  set_enabled(w, "run", have && !running);
  set_enabled(w, "bench", have && !running);
  set_enabled(w, "cancel", running);
  const char *const needs_session[] = {"save",
                                       "save-as",
                                       "save-to",
                                       "export-recipe",
                                       "export-recipe-to",
                                       "apply-recipe",
                                       "apply-recipe-file",
                                       "optimize",
                                       "export-kernel",
                                       "export-kernel-to",
                                       "zoom-fit",
                                       "zoom-selection",
                                       "find",
                                       "goto",
                                       "bookmark",
                                       "set-input",
                                       "set-expected",
                                       "clear-inputs",
                                       NULL};
  for (guint i = 0; needs_session[i]; i++)
    set_enabled(w, needs_session[i], have);
  gtk_widget_set_sensitive(GTK_WIDGET(w->bookmark_button), have);
}

static void action_undo(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  g_autoptr(GError) error = NULL;
  if (w->session && !weir_session_undo(w->session, &error))
    weir_window_show_error(w, "undo", error);
}

static void action_redo(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  g_autoptr(GError) error = NULL;
  if (w->session && !weir_session_redo(w->session, &error))
    weir_window_show_error(w, "redo", error);
}

static void action_goto(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  WeirWindow *w = user;
  g_autoptr(GError) error = NULL;
  guint k = g_variant_get_uint32(v);
  if (w->session && k != weir_session_cursor(w->session) &&
      !weir_session_goto(w->session, k, &error))
    weir_window_show_error(w, "go to step", error);
}

static void action_bookmark(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  WeirWindow *w = user;
  weir_window_bookmark(w, g_variant_get_string(v, NULL));
}

static void action_preview(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  weir_window_preview(user);
}

static void action_discard_preview(GSimpleAction *a, GVariant *v,
                                   gpointer user) {
  (void)a;
  (void)v;
  weir_window_discard_preview(user);
}

static void action_apply(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  weir_window_apply(user);
}

static void action_apply_all(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  weir_window_apply_all(user);
}

static void action_zoom_fit(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  weir_graph_view_zoom_fit(WEIR_WINDOW(user)->graph_view);
}

static void action_zoom_selection(GSimpleAction *a, GVariant *v,
                                  gpointer user) {
  (void)a;
  (void)v;
  weir_graph_view_zoom_to_selection(WEIR_WINDOW(user)->graph_view);
}

static void action_find(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  gtk_search_bar_set_search_mode(w->search_bar, TRUE);
  gtk_widget_grab_focus(GTK_WIDGET(w->search_entry));
}

static const char *const overlay_names[] = {"none", "bytes", "flops",
                                            "intensity", "time"};
G_STATIC_ASSERT(G_N_ELEMENTS(overlay_names) == WEIR_OVERLAY_TIME + 1);

static void action_overlay(GSimpleAction *a, GVariant *v, gpointer user) {
  WeirWindow *w = user;
  const char *name = g_variant_get_string(v, NULL);
  for (guint i = 0; i < G_N_ELEMENTS(overlay_names); i++) {
    if (!g_str_equal(name, overlay_names[i]))
      continue;
    g_simple_action_set_state(a, v);
    weir_graph_view_set_overlay(w->graph_view, (WeirOverlay)i);
    if (gtk_drop_down_get_selected(w->overlay_dropdown) != i)
      gtk_drop_down_set_selected(w->overlay_dropdown, i);
    return;
  }
  g_autofree char *m = g_strdup_printf(
      "Unknown overlay '%s' (none, bytes, flops, intensity or time).", name);
  weir_window_show_message(w, TRUE, m);
}

static void on_overlay_dropdown(GtkDropDown *d, GParamSpec *ps, WeirWindow *w) {
  (void)ps;
  guint i = gtk_drop_down_get_selected(d);
  if (i < G_N_ELEMENTS(overlay_names))
    g_action_group_activate_action(G_ACTION_GROUP(w), "overlay",
                                   g_variant_new_string(overlay_names[i]));
}

static void action_run(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  weir_window_start_run(user, FALSE);
}

static void action_bench(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  weir_window_start_run(user, TRUE);
}

static void action_cancel(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  if (w->run_cancellable)
    g_cancellable_cancel(w->run_cancellable);
}

/* "NAME=FILE" (FILE empty: back to random values / no expectation). */
static void tensor_action(WeirWindow *w, gboolean expected, GVariant *v) {
  const char *spec = g_variant_get_string(v, NULL);
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec) {
    g_autofree char *m = g_strdup_printf("%s: expected NAME=FILE", spec);
    weir_window_show_message(w, TRUE, m);
    return;
  }
  g_autofree char *name = g_strndup(spec, (gsize)(eq - spec));
  weir_window_set_tensor_file(w, expected, name, eq + 1);
}

static void action_set_input(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  tensor_action(user, FALSE, v);
}

static void action_set_expected(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  tensor_action(user, TRUE, v);
}

static void action_clear_inputs(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  weir_window_clear_inputs(w);
  weir_window_refresh_inputs(w);
}

static void action_save(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  weir_window_save(user);
}

static void action_save_as(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  weir_window_save_as(user);
}

static void action_save_to(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  weir_window_save_to(user, g_variant_get_string(v, NULL));
}

static void action_export_recipe(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  weir_window_export_recipe(user, NULL);
}

static void action_export_recipe_to(GSimpleAction *a, GVariant *v,
                                    gpointer user) {
  (void)a;
  weir_window_export_recipe(user, g_variant_get_string(v, NULL));
}

static void action_apply_recipe(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  weir_window_apply_recipe(user, NULL);
}

static void action_apply_recipe_file(GSimpleAction *a, GVariant *v,
                                     gpointer user) {
  (void)a;
  weir_window_apply_recipe(user, g_variant_get_string(v, NULL));
}

static void action_optimize(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  weir_window_optimize(user, g_variant_get_uint32(v));
}

static void action_export_kernel(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  weir_window_export_kernel(user, NULL);
}

static void action_export_kernel_to(GSimpleAction *a, GVariant *v,
                                    gpointer user) {
  (void)a;
  weir_window_export_kernel(user, g_variant_get_string(v, NULL));
}

/* ---------------------------------------------------------------- table */

static const GActionEntry win_entries[] = {
    {.name = "save", .activate = action_save},
    {.name = "save-as", .activate = action_save_as},
    {.name = "save-to", .activate = action_save_to, .parameter_type = "s"},
    {.name = "undo", .activate = action_undo},
    {.name = "redo", .activate = action_redo},
    {.name = "goto", .activate = action_goto, .parameter_type = "u"},
    {.name = "bookmark", .activate = action_bookmark, .parameter_type = "s"},
    {.name = "apply", .activate = action_apply},
    {.name = "apply-all", .activate = action_apply_all},
    {.name = "preview", .activate = action_preview},
    {.name = "discard-preview", .activate = action_discard_preview},
    {.name = "run", .activate = action_run},
    {.name = "bench", .activate = action_bench},
    {.name = "cancel", .activate = action_cancel},
    {.name = "set-input", .activate = action_set_input, .parameter_type = "s"},
    {.name = "set-expected",
     .activate = action_set_expected,
     .parameter_type = "s"},
    {.name = "clear-inputs", .activate = action_clear_inputs},
    {.name = "export-recipe", .activate = action_export_recipe},
    {.name = "export-recipe-to",
     .activate = action_export_recipe_to,
     .parameter_type = "s"},
    {.name = "apply-recipe", .activate = action_apply_recipe},
    {.name = "apply-recipe-file",
     .activate = action_apply_recipe_file,
     .parameter_type = "s"},
    {.name = "optimize", .activate = action_optimize, .parameter_type = "u"},
    {.name = "export-kernel", .activate = action_export_kernel},
    {.name = "export-kernel-to",
     .activate = action_export_kernel_to,
     .parameter_type = "s"},
    {.name = "zoom-fit", .activate = action_zoom_fit},
    {.name = "zoom-selection", .activate = action_zoom_selection},
    {.name = "find", .activate = action_find},
    {.name = "overlay",
     .activate = action_overlay,
     .parameter_type = "s",
     .state = "'none'"},
};

void weir_window_actions_init(WeirWindow *w) {
  g_action_map_add_action_entries(G_ACTION_MAP(w), win_entries,
                                  G_N_ELEMENTS(win_entries), w);
  /* the drop-down over the graph is the overlay action's other face */
  g_signal_connect(w->overlay_dropdown, "notify::selected",
                   G_CALLBACK(on_overlay_dropdown), w);
}
