/* weir-window-files.c — what the window reads and writes: opening a model,
 * program or workspace (also dropped on the window), saving the workspace,
 * exporting the history as a recipe, applying a recipe file, exporting the
 * kernel directory, and the "save changes?" question asked before unsaved
 * changes would be lost (closing the window, opening another file into
 * it).
 *
 * File dialogs are GtkFileChooserNative (GTK 4.8 on Debian 12 has no
 * GtkFileDialog); each command also has a variant taking the path (the
 * win.*-to actions), which the tests use.
 */
#include <string.h>

#include "weir-window-private.h"

static gboolean is_workspace(const char *path) {
  return g_str_has_suffix(path, ".weir");
}

static void ask_unsaved(WeirWindow *w, int pending, const char *path);
static gboolean open_path_now(WeirWindow *w, const char *path);
static void add_recent(WeirWindow *w, const char *path);

gboolean weir_window_open_path(WeirWindow *w, const char *path) {
  if (w->session && w->dirty) {
    ask_unsaved(w, WEIR_PENDING_OPEN, path);
    return FALSE;
  }
  return open_path_now(w, path);
}

static gboolean open_path_now(WeirWindow *w, const char *path) {
  g_autoptr(GError) error = NULL;
  WeirSession *s = NULL;
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    g_autofree char *m =
        g_strdup_printf("%s: no such file (or not a regular file)", path);
    weir_window_show_message(w, TRUE, m);
    return FALSE;
  }
  if (is_workspace(path)) {
    s = weir_workspace_open(path, &error);
  } else {
    g_autoptr(WeirGraph) g = NULL;
    if (weir_onnx_is_model_path(path))
      g = weir_onnx_import(path, NULL, &error);
    else
      g = weir_graph_load(path, &error);
    if (g)
      s = weir_session_new(g, path, NULL, &error);
  }
  if (!s) {
    /* importer and loader messages start with the file name */
    g_autofree char *base = g_path_get_basename(path);
    if (strstr(error->message, base))
      weir_window_show_error(w, NULL, error);
    else
      weir_window_show_error(w, path, error);
    return FALSE;
  }
  weir_window_end_preview(w);
  if (w->session) {
    weir_session_set_callbacks(w->session, NULL, NULL);
    weir_step_model_set_session(w->steps, NULL);
    weir_session_free(w->session);
  }
  w->session = s;
  g_hash_table_remove_all(w->profiles);
  g_free(w->path);
  w->path = g_strdup(path);
  g_free(w->workspace_path);
  w->workspace_path = is_workspace(path) ? g_strdup(path) : NULL;
  w->last_cursor = weir_session_cursor(s);
  weir_session_set_callbacks(s, &w->callbacks, w);
  weir_step_model_set_session(w->steps, s);
  w->syncing = TRUE;
  gtk_single_selection_set_selected(w->history_selection, w->last_cursor);
  w->syncing = FALSE;
  weir_graph_view_select(w->graph_view, NULL);
  weir_window_hide_message(w);
  weir_window_clear_inputs(w);
  weir_window_refresh_program(w);
  weir_window_refresh_inputs(w);
  weir_window_set_dirty(w, FALSE);
  add_recent(w, path);
  return TRUE;
}

gboolean weir_window_is_empty(WeirWindow *w) {
  return w->session == NULL;
}

static void add_recent(WeirWindow *w, const char *path) {
  (void)w;
  g_autofree char *uri = g_filename_to_uri(path, NULL, NULL);
  if (!uri)
    return;
  GtkRecentData data = {
      .display_name = NULL,
      .description = NULL,
      .mime_type = (char *)"application/octet-stream",
      .app_name = (char *)g_get_application_name(),
      .app_exec = (char *)"weir-gui %f",
      .groups = NULL,
      .is_private = FALSE,
  };
  gtk_recent_manager_add_full(gtk_recent_manager_get_default(), uri, &data);
}

gboolean weir_window_save_to(WeirWindow *w, const char *path) {
  g_autoptr(GError) error = NULL;
  if (!weir_workspace_save(w->session, path, &error)) {
    weir_window_show_error(w, "save", error);
    return FALSE;
  }
  /* path may be w->workspace_path itself (Save to the known file) */
  char *copy = g_strdup(path);
  g_free(w->workspace_path);
  w->workspace_path = copy;
  weir_window_set_dirty(w, FALSE);
  add_recent(w, copy);
  return TRUE;
}

typedef void (*PathFunc)(WeirWindow *w, const char *path);

static void on_chooser_response(GtkNativeDialog *d, int response,
                                gpointer user) {
  WeirWindow *w = user;
  PathFunc f = g_object_get_data(G_OBJECT(d), "weir-path-func");
  if (response == GTK_RESPONSE_ACCEPT) {
    g_autoptr(GFile) file = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
    g_autofree char *path = file ? g_file_get_path(file) : NULL;
    if (path)
      f(w, path);
  }
  gtk_native_dialog_destroy(d);
  g_object_unref(d);
}

/* A native file chooser whose accepted path goes to f. */
static void choose_path(WeirWindow *w, const char *title,
                        GtkFileChooserAction action, const char *suggested,
                        PathFunc f) {
  GtkFileChooserNative *d =
      gtk_file_chooser_native_new(title, GTK_WINDOW(w), action, NULL, NULL);
  gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(d), TRUE);
  if (suggested)
    gtk_file_chooser_set_current_name(GTK_FILE_CHOOSER(d), suggested);
  g_object_set_data(G_OBJECT(d), "weir-path-func", (gpointer)f);
  g_signal_connect(d, "response", G_CALLBACK(on_chooser_response), w);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}

static char *suggested_name(WeirWindow *w, const char *ext) {
  g_autofree char *base =
      w->path ? g_path_get_basename(w->path) : g_strdup("untitled");
  char *dot = strrchr(base, '.');
  if (dot)
    *dot = '\0';
  return g_strconcat(base, ext, NULL);
}

static void save_path(WeirWindow *w, const char *path) {
  weir_window_save_to(w, path);
}

void weir_window_save(WeirWindow *w) {
  if (!w->session)
    return;
  if (w->workspace_path) {
    weir_window_save_to(w, w->workspace_path);
    return;
  }
  g_autofree char *name = suggested_name(w, ".weir");
  choose_path(w, "Save Workspace", GTK_FILE_CHOOSER_ACTION_SAVE, name,
              save_path);
}

void weir_window_save_as(WeirWindow *w) {
  g_autofree char *name = suggested_name(w, ".weir");
  choose_path(w, "Save Workspace As", GTK_FILE_CHOOSER_ACTION_SAVE, name,
              save_path);
}

static void export_recipe_path(WeirWindow *w, const char *path) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirRecipe) r = weir_session_export_recipe(w->session, &error);
  if (!r || !weir_recipe_save(r, path, &error)) {
    weir_window_show_error(w, "export recipe", error);
    return;
  }
  g_autofree char *m =
      g_strdup_printf("Recipe of %u step%s written to %s", r->steps->len,
                      r->steps->len == 1 ? "" : "s", path);
  weir_window_show_message(w, FALSE, m);
}

void weir_window_export_recipe(WeirWindow *w, const char *path) {
  if (path) {
    export_recipe_path(w, path);
    return;
  }
  g_autofree char *name = suggested_name(w, ".recipe.json");
  choose_path(w, "Export Recipe", GTK_FILE_CHOOSER_ACTION_SAVE, name,
              export_recipe_path);
}

static void apply_recipe_path(WeirWindow *w, const char *path) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirRecipe) r = weir_recipe_load(path, &error);
  if (!r) {
    weir_window_show_error(w, NULL, error);
    return;
  }
  g_autoptr(WeirRecipeReport) rep = weir_recipe_report_new();
  if (!weir_recipe_apply_session(w->session, r, rep, &error)) {
    weir_window_show_error(w, path, error);
    return;
  }
  g_autofree char *b0 = weir_figure_format(&rep->bytes_before, TRUE);
  g_autofree char *b1 = weir_figure_format(&rep->bytes_after, TRUE);
  g_autofree char *base = g_path_get_basename(path);
  g_autofree char *m = g_strdup_printf(
      "Recipe %s applied (%u step%s): logical volume %s \u2192 %s", base,
      rep->steps->len, rep->steps->len == 1 ? "" : "s", b0, b1);
  weir_window_show_message(w, FALSE, m);
}

void weir_window_apply_recipe(WeirWindow *w, const char *path) {
  if (path)
    apply_recipe_path(w, path);
  else
    choose_path(w, "Apply Recipe", GTK_FILE_CHOOSER_ACTION_OPEN, NULL,
                apply_recipe_path);
}

void weir_window_optimize(WeirWindow *w, guint level) {
  g_autoptr(GError) error = NULL;
  WeirRecipeReport *report = NULL;
  gboolean ok = weir_session_optimize(w->session, level, &report, &error);
  g_autoptr(WeirRecipeReport) rep = report;
  g_autofree char *what = g_strdup_printf("optimize -O%u", level);
  if (!ok) {
    weir_window_show_error(w, what, error);
    return;
  }
  guint applied = 0;
  for (guint i = 0; i < rep->steps->len; i++)
    applied += ((WeirRecipeStepReport *)g_ptr_array_index(rep->steps, i))
                   ->applied->len;
  g_autofree char *b0 = weir_figure_format(&rep->bytes_before, TRUE);
  g_autofree char *b1 = weir_figure_format(&rep->bytes_after, TRUE);
  g_autofree char *m =
      g_strdup_printf("Optimized at -O%u: %u transformation%s applied, logical "
                      "volume %s \u2192 "
                      "%s",
                      level, applied, applied == 1 ? "" : "s", b0, b1);
  weir_window_show_message(w, FALSE, m);
}

/* The kernel directory of the export issue (core/weir-export.h): C source
 * and header, Makefile, harness, expected outputs from the interpreter and
 * a README with the session's history. The interpreter's reference run
 * makes this take seconds on expanded models; the window shows a busy
 * cursor meanwhile. */
static void export_kernel_path(WeirWindow *w, const char *dir) {
  g_autoptr(GError) error = NULL;
  WeirExportOptions opts = {.symbols = weir_session_bindings(w->session),
                            .seed = 1,
                            .rtol = -1,
                            .atol = -1,
                            .source = weir_session_source(w->session),
                            .session = w->session};
  WeirExportInfo info = {0};
  gtk_widget_set_cursor_from_name(GTK_WIDGET(w), "wait");
  gboolean ok =
      weir_export(weir_session_current(w->session), dir, &opts, &info, &error);
  gtk_widget_set_cursor(GTK_WIDGET(w), NULL);
  if (!ok) {
    weir_window_show_error(w, "export kernel", error);
    return;
  }
  g_autofree char *m = g_strdup_printf(
      "Kernel '%s' exported to %s (%u files): build with make, run ./harness",
      info.prefix, info.directory, info.files->len);
  weir_window_show_message(w, FALSE, m);
  weir_export_info_clear(&info);
}

void weir_window_export_kernel(WeirWindow *w, const char *dir) {
  if (dir)
    export_kernel_path(w, dir);
  else
    choose_path(w, "Export Kernel to Folder",
                GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER, NULL,
                export_kernel_path);
}

/* ------------------------------------------- unsaved changes: confirm */

/* Closing the window (close-request: the title bar's close button, Quit)
 * or opening another file into it while the session has unsaved changes
 * asks first: Save (then go on), Discard (go on) or Cancel (nothing
 * happens).  The dialog is a plain modal window, transient for this one
 * and destroyed with it; it is destroyed as soon as it is answered (its
 * handlers go with it), and a reference on this window is held while it is
 * up so that an answer never acts on a finalized window. */

static void proceed(WeirWindow *w, int pending, const char *path) {
  if (pending == WEIR_PENDING_CLOSE) {
    w->close_confirmed = TRUE;
    gtk_window_destroy(GTK_WINDOW(w));
  } else if (pending == WEIR_PENDING_OPEN && path) {
    open_path_now(w, path);
  }
}

/* Destroys the dialog (its own handler disconnected first). */
static void end_confirm(WeirWindow *w) {
  GtkWindow *d = g_steal_pointer(&w->confirm);
  if (!d)
    return;
  if (w->confirm_handler)
    g_signal_handler_disconnect(d, w->confirm_handler);
  w->confirm_handler = 0;
  gtk_window_destroy(d);
}

static void save_then_proceed(WeirWindow *w, const char *path) {
  int pending = w->after_save;
  g_autofree char *then = g_steal_pointer(&w->after_save_path);
  w->after_save = WEIR_PENDING_NONE;
  if (weir_window_save_to(w, path))
    proceed(w, pending, then);
}

void weir_window_confirm_respond(WeirWindow *w, WeirConfirmResponse r) {
  if (!w->confirm)
    return;
  int pending = w->pending;
  g_autofree char *path = g_steal_pointer(&w->pending_path);
  w->pending = WEIR_PENDING_NONE;
  /* the reference stays ours until the answer is carried out (it may
   * destroy the window) */
  gboolean held = w->confirm_ref;
  w->confirm_ref = FALSE;
  end_confirm(w);
  switch (r) {
  case WEIR_CONFIRM_CANCEL:
    break;
  case WEIR_CONFIRM_DISCARD:
    proceed(w, pending, path);
    break;
  case WEIR_CONFIRM_SAVE:
    if (w->workspace_path) {
      if (weir_window_save_to(w, w->workspace_path))
        proceed(w, pending, path);
    } else if (!w->disposed) {
      w->after_save = pending;
      g_free(w->after_save_path);
      w->after_save_path = g_steal_pointer(&path);
      g_autofree char *name = suggested_name(w, ".weir");
      choose_path(w, "Save Workspace", GTK_FILE_CHOOSER_ACTION_SAVE, name,
                  save_then_proceed);
    }
    break;
  }
  if (held)
    g_object_unref(w);
}

GtkWindow *weir_window_get_confirm_dialog(WeirWindow *w) {
  return w->confirm;
}

static void on_confirm_cancel(WeirWindow *w) {
  weir_window_confirm_respond(w, WEIR_CONFIRM_CANCEL);
}

static void on_confirm_discard(WeirWindow *w) {
  weir_window_confirm_respond(w, WEIR_CONFIRM_DISCARD);
}

static void on_confirm_save(WeirWindow *w) {
  weir_window_confirm_respond(w, WEIR_CONFIRM_SAVE);
}

/* The dialog's own close button (or Escape): Cancel. */
static gboolean on_confirm_close_request(WeirWindow *w) {
  weir_window_confirm_respond(w, WEIR_CONFIRM_CANCEL);
  return TRUE;
}

static GtkWidget *confirm_button(WeirWindow *w, const char *label,
                                 const char *css, GCallback cb) {
  GtkWidget *b = gtk_button_new_with_mnemonic(label);
  if (css)
    gtk_widget_add_css_class(b, css);
  g_signal_connect_swapped(b, "clicked", cb, w);
  return b;
}

static void ask_unsaved(WeirWindow *w, int pending, const char *path) {
  /* a close asked while an open waits for the answer wins */
  if (!w->confirm || pending == WEIR_PENDING_CLOSE) {
    w->pending = pending;
    g_free(w->pending_path);
    w->pending_path = g_strdup(path);
  }
  if (w->confirm) {
    gtk_window_present(w->confirm);
    return;
  }
  const char *file = w->workspace_path ? w->workspace_path : w->path;
  g_autofree char *base =
      file ? g_path_get_basename(file) : g_strdup("untitled");
  GtkWindow *d = GTK_WINDOW(gtk_window_new());
  gtk_window_set_title(d, "Unsaved Changes");
  gtk_window_set_transient_for(d, GTK_WINDOW(w));
  gtk_window_set_modal(d, TRUE);
  gtk_window_set_destroy_with_parent(d, TRUE);
  gtk_window_set_resizable(d, FALSE);
  gtk_widget_add_css_class(GTK_WIDGET(d), "weir-confirm");

  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 12);
  gtk_widget_set_margin_top(box, 18);
  gtk_widget_set_margin_bottom(box, 18);
  gtk_widget_set_margin_start(box, 18);
  gtk_widget_set_margin_end(box, 18);
  g_autofree char *q = g_strdup_printf(
      "Save the changes to %s before %s?", base,
      pending == WEIR_PENDING_OPEN ? "opening another file" : "closing");
  GtkWidget *head = gtk_label_new(q);
  gtk_widget_add_css_class(head, "title-4");
  gtk_label_set_wrap(GTK_LABEL(head), TRUE);
  gtk_label_set_max_width_chars(GTK_LABEL(head), 50);
  gtk_box_append(GTK_BOX(box), head);
  GtkWidget *body = gtk_label_new(
      w->workspace_path
          ? "The steps, bookmarks and run results since the last save "
            "will be lost if you don't save them."
          : "The session (every step, bookmark and run result) has not "
            "been saved; Save writes it to a workspace file.");
  gtk_label_set_wrap(GTK_LABEL(body), TRUE);
  gtk_label_set_max_width_chars(GTK_LABEL(body), 50);
  gtk_box_append(GTK_BOX(box), body);
  GtkWidget *buttons = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_widget_set_halign(buttons, GTK_ALIGN_END);
  gtk_box_append(
      GTK_BOX(buttons),
      confirm_button(w, "_Cancel", NULL, G_CALLBACK(on_confirm_cancel)));
  gtk_box_append(GTK_BOX(buttons),
                 confirm_button(w, "_Discard", "destructive-action",
                                G_CALLBACK(on_confirm_discard)));
  GtkWidget *save =
      confirm_button(w, w->workspace_path ? "_Save" : "_Save As\u2026",
                     "suggested-action", G_CALLBACK(on_confirm_save));
  gtk_box_append(GTK_BOX(buttons), save);
  gtk_box_append(GTK_BOX(box), buttons);
  gtk_window_set_child(d, box);
  gtk_window_set_default_widget(d, save);
  /* Escape closes the question, which is Cancel */
  GtkEventController *keys = gtk_shortcut_controller_new();
  gtk_shortcut_controller_add_shortcut(
      GTK_SHORTCUT_CONTROLLER(keys),
      gtk_shortcut_new(gtk_shortcut_trigger_parse_string("Escape"),
                       gtk_named_action_new("window.close")));
  gtk_widget_add_controller(GTK_WIDGET(d), keys);

  w->confirm = d;
  w->confirm_handler = g_signal_connect_swapped(
      d, "close-request", G_CALLBACK(on_confirm_close_request), w);
  if (!w->confirm_ref) {
    g_object_ref(w);
    w->confirm_ref = TRUE;
  }
  gtk_window_present(d);
}

gboolean weir_window_close_asks(WeirWindow *w) {
  if (w->session && w->dirty && !w->close_confirmed) {
    ask_unsaved(w, WEIR_PENDING_CLOSE, NULL);
    return TRUE;
  }
  return FALSE;
}

void weir_window_files_dispose(WeirWindow *w) {
  end_confirm(w);
  g_clear_pointer(&w->pending_path, g_free);
  g_clear_pointer(&w->after_save_path, g_free);
  if (w->confirm_ref) {
    w->confirm_ref = FALSE;
    g_object_unref(w);
  }
}

/* ---------------------------------------------------------------- drops */

static gboolean on_drop(GtkDropTarget *t, const GValue *value, double x,
                        double y, WeirWindow *w) {
  (void)t;
  (void)x;
  (void)y;
  if (!G_VALUE_HOLDS(value, GDK_TYPE_FILE_LIST))
    return FALSE;
  GSList *files = g_value_get_boxed(value);
  if (!files)
    return FALSE;
  g_autofree char *path = g_file_get_path(files->data);
  if (!path) {
    weir_window_show_message(w, TRUE, "Only local files can be opened.");
    return FALSE;
  }
  GApplication *app = G_APPLICATION(gtk_window_get_application(GTK_WINDOW(w)));
  if (w->session && app) {
    g_action_group_activate_action(G_ACTION_GROUP(app), "open-file",
                                   g_variant_new_string(path));
    return TRUE;
  }
  return weir_window_open_path(w, path);
}

void weir_window_files_init(WeirWindow *w) {
  GtkDropTarget *drop =
      gtk_drop_target_new(GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);
  g_signal_connect(drop, "drop", G_CALLBACK(on_drop), w);
  gtk_widget_add_controller(GTK_WIDGET(w), GTK_EVENT_CONTROLLER(drop));
}
