/* weir-application.c — the workbench application (weir-application.h). */
#include "weir-application.h"

#include "weir-window.h"
#include "weir.h"

struct _WeirApplication {
  GtkApplication parent;
  GMenu *recent; /* items of Open Recent */
};

G_DEFINE_FINAL_TYPE(WeirApplication, weir_application, GTK_TYPE_APPLICATION)

/* The window to open a file into: the active one when it is empty, else a
 * new one. */
static WeirWindow *target_window(WeirApplication *app) {
  GtkWindow *active = gtk_application_get_active_window(GTK_APPLICATION(app));
  if (WEIR_IS_WINDOW(active) && weir_window_is_empty(WEIR_WINDOW(active)))
    return WEIR_WINDOW(active);
  WeirWindow *w = weir_window_new(GTK_APPLICATION(app));
  weir_window_set_recent_menu(w, G_MENU_MODEL(app->recent));
  return w;
}

static void open_path(WeirApplication *app, const char *path) {
  WeirWindow *w = target_window(app);
  gtk_window_present(GTK_WINDOW(w));
  weir_window_open_path(w, path);
}

/* Rebuilds Open Recent from the recent-files list: this application's
 * entries that still exist, newest first, at most 10. */
static gint by_modified(gconstpointer a, gconstpointer b) {
  GDateTime *x = gtk_recent_info_get_modified((GtkRecentInfo *)a);
  GDateTime *y = gtk_recent_info_get_modified((GtkRecentInfo *)b);
  return g_date_time_compare(y, x);
}

static void update_recent(WeirApplication *app) {
  g_menu_remove_all(app->recent);
  GList *items = gtk_recent_manager_get_items(gtk_recent_manager_get_default());
  items = g_list_sort(items, by_modified);
  guint n = 0;
  for (GList *l = items; l && n < 10; l = l->next) {
    GtkRecentInfo *info = l->data;
    if (!gtk_recent_info_has_application(info, g_get_application_name()) ||
        !gtk_recent_info_exists(info))
      continue;
    g_autofree char *path =
        g_filename_from_uri(gtk_recent_info_get_uri(info), NULL, NULL);
    if (!path)
      continue;
    g_autofree char *base = g_path_get_basename(path);
    g_autoptr(GMenuItem) item = g_menu_item_new(base, NULL);
    g_menu_item_set_action_and_target_value(item, "app.open-file",
                                            g_variant_new_string(path));
    g_menu_append_item(app->recent, item);
    n++;
  }
  g_list_free_full(items, (GDestroyNotify)gtk_recent_info_unref);
}

static void on_open_response(GtkNativeDialog *d, int response, gpointer user) {
  WeirApplication *app = user;
  if (response == GTK_RESPONSE_ACCEPT) {
    g_autoptr(GFile) f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
    g_autofree char *path = f ? g_file_get_path(f) : NULL;
    if (path)
      open_path(app, path);
  }
  gtk_native_dialog_destroy(d);
  g_object_unref(d);
}

static void action_open(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirApplication *app = user;
  GtkWindow *parent = gtk_application_get_active_window(GTK_APPLICATION(app));
  GtkFileChooserNative *d =
      gtk_file_chooser_native_new("Open a Model, Program or Workspace", parent,
                                  GTK_FILE_CHOOSER_ACTION_OPEN, NULL, NULL);
  gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(d), TRUE);
  GtkFileFilter *all = gtk_file_filter_new();
  gtk_file_filter_set_name(all, "Models, programs and workspaces");
  gtk_file_filter_add_pattern(all, "*.onnx");
  gtk_file_filter_add_pattern(all, "*.json");
  gtk_file_filter_add_pattern(all, "*.weir");
  gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(d), all);
  g_object_unref(all);
  GtkFileFilter *any = gtk_file_filter_new();
  gtk_file_filter_set_name(any, "All files");
  gtk_file_filter_add_pattern(any, "*");
  gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(d), any);
  g_object_unref(any);
  g_signal_connect(d, "response", G_CALLBACK(on_open_response), app);
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}

static void action_open_file(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  open_path(user, g_variant_get_string(v, NULL));
}

/* Asks every window to close, as its close button would: a window with
 * unsaved changes asks Save / Discard / Cancel and stays open until
 * answered (Cancel keeps it; the others still close). */
static void action_quit(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  GList *wins =
      g_list_copy_deep(gtk_application_get_windows(GTK_APPLICATION(user)),
                       (GCopyFunc)(void (*)(void))g_object_ref, NULL);
  for (GList *it = wins; it; it = it->next)
    gtk_window_close(GTK_WINDOW(it->data));
  g_list_free_full(wins, g_object_unref);
}

static void action_about(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  GtkWindow *parent = gtk_application_get_active_window(GTK_APPLICATION(user));
  gtk_show_about_dialog(
      parent, "program-name", "Weir Workbench", "logo-icon-name",
      WEIR_APPLICATION_ID, "version", weir_version(), "comments",
      "See where a network's bytes move, and transform it to move fewer.",
      "license-type", GTK_LICENSE_BSD_3, NULL);
}

static const GActionEntry app_entries[] = {
    {.name = "open", .activate = action_open},
    {.name = "open-file", .activate = action_open_file, .parameter_type = "s"},
    {.name = "quit", .activate = action_quit},
    {.name = "about", .activate = action_about},
};

static const struct {
  const char *action;
  const char *accels[3];
} accels[] = {
    {"app.open", {"<Control>o", NULL}},
    {"app.quit", {"<Control>q", NULL}},
    {"win.save", {"<Control>s", NULL}},
    {"win.save-as", {"<Control><Shift>s", NULL}},
    {"win.undo", {"<Control>z", NULL}},
    {"win.redo", {"<Control><Shift>z", "<Control>y", NULL}},
    {"win.apply", {"<Control>Return", NULL}},
    {"win.preview", {"<Control>p", NULL}},
    {"win.run", {"F5", NULL}},
    {"win.bench", {"<Control>b", NULL}},
    {"win.cancel", {"<Control>period", NULL}},
    {"win.export-recipe", {"<Control>e", NULL}},
    {"win.apply-recipe", {"<Control>r", NULL}},
    {"win.optimize(uint32 2)", {"<Control><Shift>o", NULL}},
    {"win.export-kernel", {"<Control>k", NULL}},
    {"win.zoom-fit", {"<Control>0", NULL}},
    {"win.zoom-selection", {"<Control>1", NULL}},
    {"win.find", {"<Control>f", NULL}},
    {"win.overlay::none", {"<Alt>0", NULL}},
    {"win.overlay::bytes", {"<Alt>1", NULL}},
    {"win.overlay::flops", {"<Alt>2", NULL}},
    {"win.overlay::intensity", {"<Alt>3", NULL}},
    {"win.overlay::time", {"<Alt>4", NULL}},
};

static void weir_application_startup(GApplication *a) {
  WeirApplication *app = WEIR_APPLICATION(a);
  G_APPLICATION_CLASS(weir_application_parent_class)->startup(a);
  weir_init();
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func(g_free);
  weir_plugins_load(problems);
  for (guint i = 0; i < problems->len; i++)
    g_warning("%s", (char *)g_ptr_array_index(problems, i));
  g_action_map_add_action_entries(G_ACTION_MAP(app), app_entries,
                                  G_N_ELEMENTS(app_entries), app);
  for (guint i = 0; i < G_N_ELEMENTS(accels); i++)
    gtk_application_set_accels_for_action(GTK_APPLICATION(app),
                                          accels[i].action, accels[i].accels);
  g_autoptr(GtkCssProvider) css = gtk_css_provider_new();
  gtk_css_provider_load_from_resource(css, "/org/weir/Workbench/style.css");
  gtk_style_context_add_provider_for_display(
      gdk_display_get_default(), GTK_STYLE_PROVIDER(css),
      GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
  gtk_window_set_default_icon_name(WEIR_APPLICATION_ID);
  update_recent(app);
  g_signal_connect_object(gtk_recent_manager_get_default(), "changed",
                          G_CALLBACK(update_recent), app, G_CONNECT_SWAPPED);
}

static void weir_application_activate(GApplication *a) {
  WeirApplication *app = WEIR_APPLICATION(a);
  GtkWindow *active = gtk_application_get_active_window(GTK_APPLICATION(app));
  if (!active) {
    WeirWindow *w = weir_window_new(GTK_APPLICATION(app));
    weir_window_set_recent_menu(w, G_MENU_MODEL(app->recent));
    active = GTK_WINDOW(w);
  }
  gtk_window_present(active);
}

static void weir_application_open(GApplication *a, GFile **files, gint n,
                                  const char *hint) {
  (void)hint;
  WeirApplication *app = WEIR_APPLICATION(a);
  for (gint i = 0; i < n; i++) {
    g_autofree char *path = g_file_get_path(files[i]);
    if (path) {
      open_path(app, path);
    } else {
      g_autofree char *uri = g_file_get_uri(files[i]);
      WeirWindow *w = target_window(app);
      gtk_window_present(GTK_WINDOW(w));
      g_autofree char *m =
          g_strdup_printf("%s: only local files can be opened", uri);
      weir_window_show_message(w, TRUE, m);
    }
  }
}

static void weir_application_dispose(GObject *o) {
  WeirApplication *app = WEIR_APPLICATION(o);
  g_clear_object(&app->recent);
  G_OBJECT_CLASS(weir_application_parent_class)->dispose(o);
}

static void weir_application_class_init(WeirApplicationClass *klass) {
  G_OBJECT_CLASS(klass)->dispose = weir_application_dispose;
  GApplicationClass *ac = G_APPLICATION_CLASS(klass);
  ac->startup = weir_application_startup;
  ac->activate = weir_application_activate;
  ac->open = weir_application_open;
}

static void weir_application_init(WeirApplication *app) {
  app->recent = g_menu_new();
}

WeirApplication *weir_application_new(void) {
  g_set_application_name("Weir Workbench");
  return g_object_new(WEIR_TYPE_APPLICATION, "application-id",
                      WEIR_APPLICATION_ID, "flags",
                      G_APPLICATION_HANDLES_OPEN | G_APPLICATION_NON_UNIQUE,
                      "resource-base-path", "/org/weir/Workbench", NULL);
}
