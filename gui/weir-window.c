/* weir-window.c — the workbench window (weir-window.h): the object and
 * what joins its parts (weir-window-private.h lists the files).
 *
 * Conventions of the window's files:
 *  - The session is the only state of the document.  Every change to it
 *    comes back through its callbacks (session_changed & co.), which
 *    refresh what depends on the current program: the analysis, the graph
 *    view, the status bar, the properties, the transformations panel and
 *    (lazily, when its page is shown) the code view.
 *  - Actions are the only entry points of user commands; buttons and menus
 *    name them (weir-window-actions.c), and their enabled state follows
 *    the session (weir_window_update_actions).
 *  - Long work (run, benchmark) runs in a GTask worker on copies of the
 *    programs; the session is only touched on the main thread.
 *  - Errors go to the message bar (weir_window_show_message,
 *    weir_window_show_error), never only to stderr.
 */
#include "weir-window-private.h"

G_DEFINE_FINAL_TYPE(WeirWindow, weir_window, GTK_TYPE_APPLICATION_WINDOW)

static void refresh_code(WeirWindow *w);

/* ------------------------------------------------------------ messages */

void weir_window_show_message(WeirWindow *w, gboolean error,
                              const char *message) {
  g_free(w->message);
  w->message = g_strdup(message);
  gtk_label_set_text(w->toast_label, message);
  gtk_image_set_from_icon_name(w->toast_icon,
                               error ? "dialog-error-symbolic"
                                     : "dialog-information-symbolic");
  if (error) {
    gtk_widget_add_css_class(w->toast_box, "weir-error");
    gtk_widget_remove_css_class(w->toast_box, "weir-info");
  } else {
    gtk_widget_add_css_class(w->toast_box, "weir-info");
    gtk_widget_remove_css_class(w->toast_box, "weir-error");
  }
  gtk_revealer_set_reveal_child(w->toast_revealer, TRUE);
}

void weir_window_hide_message(WeirWindow *w) {
  g_clear_pointer(&w->message, g_free);
  gtk_revealer_set_reveal_child(w->toast_revealer, FALSE);
}

void weir_window_show_error(WeirWindow *w, const char *what,
                            const GError *error) {
  g_autofree char *m = what ? g_strdup_printf("%s: %s", what, error->message)
                            : g_strdup(error->message);
  weir_window_show_message(w, TRUE, m);
}

/* --------------------------------------------------------------- title */

static void update_title(WeirWindow *w) {
  if (!w->session) {
    gtk_window_set_title(GTK_WINDOW(w), "Weir");
    return;
  }
  const char *file = w->workspace_path ? w->workspace_path : w->path;
  g_autofree char *base =
      file ? g_path_get_basename(file) : g_strdup("untitled");
  g_autofree char *t =
      g_strdup_printf("%s%s \u2014 Weir", w->dirty ? "*" : "", base);
  gtk_window_set_title(GTK_WINDOW(w), t);
}

void weir_window_set_dirty(WeirWindow *w, gboolean dirty) {
  w->dirty = dirty;
  update_title(w);
}

/* ------------------------------------------------------ session events */

static void session_changed(gpointer user) {
  WeirWindow *w = user;
  weir_window_end_preview(w);
  weir_window_set_dirty(w, TRUE);
  weir_window_refresh_program(w);
}

static void session_steps_changed(guint position, guint removed, guint added,
                                  gpointer user) {
  WeirWindow *w = user;
  if (removed) {
    w->history_generation++;
    g_hash_table_remove_all(w->profiles);
  }
  weir_step_model_steps_changed(w->steps, position, removed, added);
  weir_window_set_dirty(w, TRUE);
}

static void session_step_updated(guint index, gpointer user) {
  WeirWindow *w = user;
  weir_step_model_step_updated(w->steps, index);
  weir_window_set_dirty(w, TRUE);
}

static void session_cursor_changed(guint cursor, gpointer user) {
  WeirWindow *w = user;
  weir_step_model_cursor_changed(w->steps, w->last_cursor, cursor);
  w->last_cursor = cursor;
  w->syncing = TRUE;
  gtk_single_selection_set_selected(w->history_selection, cursor);
  w->syncing = FALSE;
  /* GtkListBase's action (gtk_list_view_scroll_to is GTK 4.12) */
  gtk_widget_activate_action(GTK_WIDGET(w->history_list), "list.scroll-to-item",
                             "u", cursor);
  weir_window_update_actions(w);
}

/* ------------------------------------------------------------- figures */

gint64 weir_window_model_cache(void) {
  static gsize once = 0;
  static gint64 cache = 0;
  if (g_once_init_enter(&once)) {
    g_autoptr(WeirHwProfile) hw = weir_hw_profile_cached();
    cache = weir_hw_model_cache_bytes(hw);
    g_once_init_leave(&once, 1);
  }
  return cache;
}

char *weir_window_quantity_text(const WeirQuantity *q, gboolean bytes) {
  WeirFigure f = {0};
  weir_figure_set(&f, q);
  char *s = weir_figure_format(&f, bytes);
  weir_figure_clear(&f);
  return s;
}

static void update_status(WeirWindow *w) {
  g_free(w->status_text);
  if (!w->session || !w->analysis) {
    w->status_text = g_strdup("No program");
  } else {
    const WeirAnalysis *a = w->analysis;
    g_autofree char *traffic =
        weir_window_quantity_text(&a->total_traffic, TRUE);
    g_autofree char *bytes = weir_window_quantity_text(&a->total_bytes, TRUE);
    g_autofree char *flops = weir_window_quantity_text(&a->total_flops, FALSE);
    g_autofree char *peak =
        weir_window_quantity_text(&a->peak_transient_bytes, TRUE);
    g_autofree char *intensity =
        a->total_flops.known && a->total_traffic.known &&
                a->total_traffic.value > 0
            ? g_strdup_printf("%.3g FLOP/B", (double)a->total_flops.value /
                                                 (double)a->total_traffic.value)
            : g_strdup("?");
    guint nodes = 0;
    for (guint k = 0; k < WEIR_NODE_KIND_COUNT; k++)
      nodes += a->node_counts[k];
    w->status_text = g_strdup_printf(
        "Modeled traffic %s (logical volume %s) \u00b7 FLOPs %s \u00b7 "
        "intensity %s \u00b7 peak transient %s \u00b7 %u nodes \u00b7 step "
        "%u of %u",
        traffic, bytes, flops, intensity, peak, nodes,
        weir_session_cursor(w->session), weir_session_n_steps(w->session));
  }
  gtk_label_set_text(w->status_label, w->status_text);
}

/* Refreshes everything that depends on the current program. */
void weir_window_refresh_program(WeirWindow *w) {
  g_clear_pointer(&w->analysis, weir_analysis_free);
  if (w->session) {
    g_autoptr(GError) error = NULL;
    const WeirGraph *g = weir_session_current(w->session);
    w->analysis =
        weir_analysis_compute_traffic(g, weir_session_bindings(w->session),
                                      weir_window_model_cache(), &error);
    if (!w->analysis)
      weir_window_show_error(w, "analysis", error);
    weir_graph_view_set_program(w->graph_view, g,
                                weir_session_bindings(w->session));
    gtk_stack_set_visible_child_name(w->graph_stack, "graph");
  } else {
    weir_graph_view_set_program(w->graph_view, NULL, NULL);
    gtk_stack_set_visible_child_name(w->graph_stack, "empty");
  }
  update_status(w);
  weir_window_refresh_profile(w);
  weir_window_refresh_properties(w);
  weir_window_refresh_transforms(w);
  w->code_stale = TRUE;
  if (gtk_notebook_get_current_page(w->notebook) == 2)
    refresh_code(w);
  weir_window_update_actions(w);
}

/* ------------------------------------------------------------- history */

gboolean weir_window_bookmark(WeirWindow *w, const char *name) {
  if (!w->session)
    return FALSE;
  g_autoptr(GError) error = NULL;
  if (!weir_session_bookmark(w->session, weir_session_cursor(w->session), name,
                             &error)) {
    weir_window_show_error(w, "bookmark", error);
    return FALSE;
  }
  /* the original's bookmark has no session notification: it is saved
   * with the workspace all the same */
  if (weir_session_cursor(w->session) == 0) {
    weir_step_model_step_updated(w->steps, 0);
    weir_window_set_dirty(w, TRUE);
  }
  return TRUE;
}

static void on_bookmark_clicked(WeirWindow *w) {
  const char *name = gtk_editable_get_text(GTK_EDITABLE(w->bookmark_entry));
  if (weir_window_bookmark(w, name))
    gtk_editable_set_text(GTK_EDITABLE(w->bookmark_entry), "");
}

static void on_history_selected(GtkSingleSelection *sel, GParamSpec *ps,
                                WeirWindow *w) {
  (void)ps;
  if (w->syncing || !w->session)
    return;
  guint k = gtk_single_selection_get_selected(sel);
  if (k == GTK_INVALID_LIST_POSITION || k == weir_session_cursor(w->session))
    return;
  g_autoptr(GError) error = NULL;
  if (!weir_session_goto(w->session, k, &error))
    weir_window_show_error(w, "go to step", error);
}

/* ---------------------------------------------------------- code view */

static void highlight_code(WeirWindow *w) {
  GtkTextBuffer *buf = gtk_text_view_get_buffer(GTK_TEXT_VIEW(w->code_view));
  GtkTextIter s, e;
  gtk_text_buffer_get_bounds(buf, &s, &e);
  gtk_text_buffer_remove_tag(buf, w->scope_tag, &s, &e);
  w->code_highlighted = FALSE;
  if (!w->session || w->code_stale)
    return;
  WeirElement sel = weir_graph_view_get_selection(w->graph_view);
  if (sel.kind != WEIR_ELEMENT_NODE)
    return;
  const WeirGraph *g = weir_session_current(w->session);
  const WeirState *st = weir_graph_state(g, sel.state);
  const WeirNode *n = st ? weir_state_node(st, sel.id) : NULL;
  if (!n)
    return;
  guint id = n->kind == WEIR_NODE_MAP_EXIT ? n->entry : n->id;
  g_autofree char *text = gtk_text_buffer_get_text(buf, &s, &e, FALSE);
  guint first, last;
  if (!weir_codegen_node_lines(text, id, &first, &last))
    return;
  GtkTextIter a, b;
  gtk_text_buffer_get_iter_at_line(buf, &a, (int)first);
  gtk_text_buffer_get_iter_at_line(buf, &b, (int)last);
  gtk_text_iter_forward_to_line_end(&b);
  gtk_text_buffer_apply_tag(buf, w->scope_tag, &a, &b);
  w->code_highlighted = TRUE;
  w->code_first = first;
  w->code_last = last;
  gtk_text_view_scroll_to_iter(GTK_TEXT_VIEW(w->code_view), &a, 0.1, TRUE, 0,
                               0.1);
}

static void refresh_code(WeirWindow *w) {
  GtkTextBuffer *buf = gtk_text_view_get_buffer(GTK_TEXT_VIEW(w->code_view));
  if (!w->session) {
    gtk_text_buffer_set_text(buf, "", -1);
    w->code_stale = FALSE;
    return;
  }
  if (w->code_stale) {
    g_autoptr(GError) error = NULL;
    g_autofree char *src =
        weir_codegen_c(weir_session_current(w->session), NULL, &error);
    if (!src) {
      g_autofree char *msg = g_strdup_printf(
          "/* code generation failed:\n   %s */\n", error->message);
      gtk_text_buffer_set_text(buf, msg, -1);
    } else {
      gtk_text_buffer_set_text(buf, src, -1);
    }
    w->code_stale = FALSE;
  }
  highlight_code(w);
}

/* Shows the current step in the history list (once it is allocated). */
static gboolean scroll_history(gpointer data) {
  WeirWindow *w = data;
  if (w->session)
    gtk_widget_activate_action(GTK_WIDGET(w->history_list),
                               "list.scroll-to-item", "u",
                               weir_session_cursor(w->session));
  return G_SOURCE_REMOVE;
}

static void on_page_switched(GtkNotebook *nb, GtkWidget *page, guint num,
                             WeirWindow *w) {
  (void)nb;
  (void)page;
  if (num == 1)
    g_idle_add_full(G_PRIORITY_DEFAULT_IDLE, scroll_history, g_object_ref(w),
                    g_object_unref);
  if (num == 2)
    refresh_code(w);
}

static void update_code_style(WeirWindow *w) {
  GtkSettings *s = gtk_settings_get_default();
  gboolean dark = FALSE;
  g_autofree char *theme = NULL;
  g_object_get(s, "gtk-application-prefer-dark-theme", &dark, "gtk-theme-name",
               &theme, NULL);
  if (theme && g_str_has_suffix(theme, "-dark"))
    dark = TRUE;
  GtkSourceStyleSchemeManager *m =
      gtk_source_style_scheme_manager_get_default();
  GtkSourceStyleScheme *scheme = gtk_source_style_scheme_manager_get_scheme(
      m, dark ? "Adwaita-dark" : "Adwaita");
  GtkSourceBuffer *buf =
      GTK_SOURCE_BUFFER(gtk_text_view_get_buffer(GTK_TEXT_VIEW(w->code_view)));
  if (scheme)
    gtk_source_buffer_set_style_scheme(buf, scheme);
  g_object_set(w->scope_tag, "paragraph-background",
               dark ? "rgba(90,120,200,0.35)" : "rgba(255,220,110,0.55)", NULL);
}

/* ------------------------------------------------------------- graph */

static void on_selection_changed(WeirGraphView *v, WeirWindow *w) {
  (void)v;
  if (w->previewing)
    return;
  weir_window_refresh_properties(w);
  weir_window_refresh_transforms(w);
  if (gtk_notebook_get_current_page(w->notebook) == 2)
    highlight_code(w);
}

static void on_activate_element(WeirGraphView *v, WeirElement *e,
                                WeirWindow *w) {
  (void)v;
  (void)e;
  /* a double click shows the transformations of the element */
  gtk_notebook_set_current_page(w->notebook, 0);
}

static void on_search_activate(GtkSearchEntry *e, WeirWindow *w) {
  const char *text = gtk_editable_get_text(GTK_EDITABLE(e));
  if (!*text || !w->session)
    return;
  if (!weir_graph_view_search(w->graph_view, text)) {
    g_autofree char *m = g_strdup_printf("No node matches '%s'.", text);
    weir_window_show_message(w, FALSE, m);
  }
}

/* ------------------------------------------------------------ GObject */

/* Unsaved changes are asked about first (weir-window-files.c). */
static gboolean weir_window_close_request(GtkWindow *win) {
  WeirWindow *w = WEIR_WINDOW(win);
  if (weir_window_close_asks(w))
    return TRUE;
  return GTK_WINDOW_CLASS(weir_window_parent_class)->close_request(win);
}

static void weir_window_dispose(GObject *o) {
  WeirWindow *w = WEIR_WINDOW(o);
  w->disposed = TRUE;
  weir_window_files_dispose(w);
  weir_window_clear_inputs(w);
  if (w->run_cancellable)
    g_cancellable_cancel(w->run_cancellable);
  g_clear_object(&w->run_cancellable);
  if (w->scan_cancellable)
    g_cancellable_cancel(w->scan_cancellable);
  g_clear_object(&w->scan_cancellable);
  if (w->site_cancellable)
    g_cancellable_cancel(w->site_cancellable);
  g_clear_object(&w->site_cancellable);
  weir_window_end_preview(w);
  if (w->session) {
    weir_session_set_callbacks(w->session, NULL, NULL);
    if (w->steps)
      weir_step_model_set_session(w->steps, NULL);
    g_clear_pointer(&w->session, weir_session_free);
  }
  g_clear_pointer(&w->analysis, weir_analysis_free);
  gtk_widget_dispose_template(GTK_WIDGET(w), WEIR_TYPE_WINDOW);
  G_OBJECT_CLASS(weir_window_parent_class)->dispose(o);
}

static void weir_window_finalize(GObject *o) {
  WeirWindow *w = WEIR_WINDOW(o);
  g_clear_object(&w->properties);
  g_clear_object(&w->tiers);
  g_clear_object(&w->transforms_tree);
  g_clear_object(&w->transforms_selection);
  g_clear_object(&w->sites);
  g_clear_object(&w->sites_selection);
  g_clear_object(&w->steps);
  g_clear_object(&w->history_selection);
  g_clear_pointer(&w->param_editors, g_ptr_array_unref);
  g_free(w->path);
  g_free(w->workspace_path);
  g_free(w->keep_transform);
  g_clear_pointer(&w->inputs, g_hash_table_unref);
  g_clear_pointer(&w->input_files, g_hash_table_unref);
  g_clear_pointer(&w->expected, g_hash_table_unref);
  g_clear_pointer(&w->expected_files, g_hash_table_unref);
  g_clear_pointer(&w->profiles, g_hash_table_unref);
  g_free(w->message);
  g_free(w->status_text);
  G_OBJECT_CLASS(weir_window_parent_class)->finalize(o);
}

/* The side panel keeps its width (460 px at first, then what the user
 * drags it to) when the window is resized; the graph takes the rest.  The
 * divider is moved from an idle, never during an allocation. */
static gboolean place_paned(gpointer data) {
  WeirWindow *w = data;
  w->placing = TRUE;
  int pw = gtk_widget_get_width(GTK_WIDGET(w->main_paned));
  if (pw > w->side_width + 200)
    gtk_paned_set_position(w->main_paned, pw - w->side_width);
  w->placing = FALSE;
  w->place_pending = FALSE;
  return G_SOURCE_REMOVE;
}

static void on_paned_position(GtkPaned *p, GParamSpec *ps, WeirWindow *w) {
  (void)ps;
  int pw = gtk_widget_get_width(GTK_WIDGET(p));
  if (!w->placing && !w->place_pending && pw > 0 && w->paned_width == pw)
    w->side_width = MAX(300, pw - gtk_paned_get_position(p));
}

static void weir_window_size_allocate(GtkWidget *widget, int width, int height,
                                      int baseline) {
  WeirWindow *w = WEIR_WINDOW(widget);
  GTK_WIDGET_CLASS(weir_window_parent_class)
      ->size_allocate(widget, width, height, baseline);
  int pw = gtk_widget_get_width(GTK_WIDGET(w->main_paned));
  if (pw != w->paned_width) {
    w->paned_width = pw;
    if (!w->place_pending) {
      w->place_pending = TRUE;
      g_idle_add_full(G_PRIORITY_HIGH_IDLE, place_paned, g_object_ref(w),
                      g_object_unref);
    }
  }
}

static void weir_window_class_init(WeirWindowClass *klass) {
  GObjectClass *oc = G_OBJECT_CLASS(klass);
  GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
  wc->size_allocate = weir_window_size_allocate;
  oc->dispose = weir_window_dispose;
  oc->finalize = weir_window_finalize;
  GTK_WINDOW_CLASS(klass)->close_request = weir_window_close_request;
  g_type_ensure(WEIR_TYPE_GRAPH_VIEW);
  g_type_ensure(GTK_SOURCE_TYPE_VIEW);
  gtk_widget_class_set_template_from_resource(
      wc, "/org/weir/Workbench/weir-window.ui");
#define BIND(name) gtk_widget_class_bind_template_child(wc, WeirWindow, name)
  BIND(toast_revealer);
  BIND(toast_box);
  BIND(toast_icon);
  BIND(toast_label);
  BIND(toast_close);
  BIND(search_bar);
  BIND(search_entry);
  BIND(find_button);
  BIND(preview_revealer);
  BIND(preview_label);
  BIND(graph_stack);
  BIND(graph_view);
  BIND(overlay_dropdown);
  BIND(properties_title);
  BIND(properties_list);
  BIND(notebook);
  BIND(main_paned);
  BIND(scope_label);
  BIND(legal_only_check);
  BIND(transforms_list);
  BIND(transform_description);
  BIND(sites_list);
  BIND(params_grid);
  BIND(history_list);
  BIND(bookmark_entry);
  BIND(bookmark_button);
  BIND(code_view);
  BIND(status_label);
  BIND(progress_label);
  BIND(progress_bar);
  BIND(cancel_button);
  BIND(recent_section);
  BIND(inputs_grid);
  BIND(inputs_summary);
  BIND(roofline_area);
  BIND(roofline_label);
#undef BIND
}

static void weir_window_init(WeirWindow *w) {
  gtk_widget_init_template(GTK_WIDGET(w));
  weir_window_run_init(w);
  w->callbacks = (WeirSessionCallbacks){
      .changed = session_changed,
      .steps_changed = session_steps_changed,
      .step_updated = session_step_updated,
      .cursor_changed = session_cursor_changed,
  };
  w->inputs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                    (GDestroyNotify)weir_tensor_free);
  w->input_files =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  w->expected = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                      (GDestroyNotify)weir_tensor_free);
  w->expected_files =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

  /* properties */
  w->properties = g_list_store_new(WEIR_TYPE_ROW);
  GtkNoSelection *ps =
      gtk_no_selection_new(G_LIST_MODEL(g_object_ref(w->properties)));
  gtk_list_view_set_model(w->properties_list, GTK_SELECTION_MODEL(ps));
  g_object_unref(ps);
  g_autoptr(GtkListItemFactory) pf = weir_row_property_factory_new();
  gtk_list_view_set_factory(w->properties_list, pf);

  weir_window_transforms_init(w);

  /* history */
  w->steps = weir_step_model_new();
  w->history_selection =
      gtk_single_selection_new(G_LIST_MODEL(g_object_ref(w->steps)));
  gtk_single_selection_set_autoselect(w->history_selection, FALSE);
  gtk_list_view_set_model(w->history_list,
                          GTK_SELECTION_MODEL(w->history_selection));
  g_autoptr(GtkListItemFactory) hf = weir_row_factory_new(FALSE, NULL, NULL);
  gtk_list_view_set_factory(w->history_list, hf);
  g_signal_connect(w->history_selection, "notify::selected",
                   G_CALLBACK(on_history_selected), w);
  g_signal_connect_swapped(w->bookmark_button, "clicked",
                           G_CALLBACK(on_bookmark_clicked), w);
  g_signal_connect_swapped(w->bookmark_entry, "activate",
                           G_CALLBACK(on_bookmark_clicked), w);

  /* code view */
  GtkSourceBuffer *buf =
      GTK_SOURCE_BUFFER(gtk_text_view_get_buffer(GTK_TEXT_VIEW(w->code_view)));
  GtkSourceLanguage *c = gtk_source_language_manager_get_language(
      gtk_source_language_manager_get_default(), "c");
  if (c)
    gtk_source_buffer_set_language(buf, c);
  w->scope_tag =
      gtk_text_buffer_create_tag(GTK_TEXT_BUFFER(buf), "scope", NULL);
  update_code_style(w);
  g_signal_connect_object(gtk_settings_get_default(),
                          "notify::gtk-application-prefer-dark-theme",
                          G_CALLBACK(update_code_style), w, G_CONNECT_SWAPPED);
  g_signal_connect_object(gtk_settings_get_default(), "notify::gtk-theme-name",
                          G_CALLBACK(update_code_style), w, G_CONNECT_SWAPPED);
  g_signal_connect(w->notebook, "switch-page", G_CALLBACK(on_page_switched), w);

  /* graph */
  g_signal_connect(w->graph_view, "selection-changed",
                   G_CALLBACK(on_selection_changed), w);
  g_signal_connect(w->graph_view, "activate-element",
                   G_CALLBACK(on_activate_element), w);

  /* search */
  g_object_bind_property(w->find_button, "active", w->search_bar,
                         "search-mode-enabled",
                         G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE);
  gtk_search_bar_connect_entry(w->search_bar, GTK_EDITABLE(w->search_entry));
  g_signal_connect(w->search_entry, "activate", G_CALLBACK(on_search_activate),
                   w);

  /* messages */
  g_signal_connect_swapped(w->toast_close, "clicked",
                           G_CALLBACK(weir_window_hide_message), w);

  /* drag and drop of files */
  weir_window_files_init(w);

  w->side_width = 460;
  g_signal_connect(w->main_paned, "notify::position",
                   G_CALLBACK(on_paned_position), w);

  weir_window_actions_init(w);
  w->status_text = g_strdup("No program");
  update_title(w);
  weir_window_update_actions(w);
}

WeirWindow *weir_window_new(GtkApplication *app) {
  return g_object_new(WEIR_TYPE_WINDOW, "application", app, NULL);
}

void weir_window_set_recent_menu(WeirWindow *w, GMenuModel *items) {
  g_menu_remove_all(w->recent_section);
  if (items)
    g_menu_append_section(w->recent_section, NULL, items);
}

/* ------------------------------------------------------------ for tests */

WeirSession *weir_window_get_session(WeirWindow *w) {
  return w->session;
}
WeirGraphView *weir_window_get_graph_view(WeirWindow *w) {
  return w->graph_view;
}
const WeirAnalysis *weir_window_get_analysis(WeirWindow *w) {
  return w->analysis;
}
const char *weir_window_get_status_text(WeirWindow *w) {
  return w->status_text;
}
const char *weir_window_get_message(WeirWindow *w) {
  return w->message;
}
const char *weir_window_get_preview_text(WeirWindow *w) {
  return w->previewing ? w->preview_text : NULL;
}
gboolean weir_window_is_previewing(WeirWindow *w) {
  return w->previewing;
}
const char *weir_window_get_workspace_path(WeirWindow *w) {
  return w->workspace_path;
}
gboolean weir_window_is_dirty(WeirWindow *w) {
  return w->dirty;
}
GListModel *weir_window_get_properties(WeirWindow *w) {
  return G_LIST_MODEL(w->properties);
}
GListModel *weir_window_get_sites(WeirWindow *w) {
  return G_LIST_MODEL(w->sites);
}
GListModel *weir_window_get_history(WeirWindow *w) {
  return G_LIST_MODEL(w->steps);
}

gboolean weir_window_select_history(WeirWindow *w, guint k) {
  if (k >= g_list_model_get_n_items(G_LIST_MODEL(w->steps)))
    return FALSE;
  gtk_single_selection_set_selected(w->history_selection, k);
  return TRUE;
}

void weir_window_show_page(WeirWindow *w, guint page) {
  gtk_notebook_set_current_page(w->notebook, (int)page);
}

char *weir_window_get_code(WeirWindow *w) {
  GtkTextBuffer *buf = gtk_text_view_get_buffer(GTK_TEXT_VIEW(w->code_view));
  GtkTextIter s, e;
  gtk_text_buffer_get_bounds(buf, &s, &e);
  return gtk_text_buffer_get_text(buf, &s, &e, FALSE);
}

gboolean weir_window_get_code_highlight(WeirWindow *w, guint *first,
                                        guint *last) {
  if (!w->code_highlighted)
    return FALSE;
  *first = w->code_first;
  *last = w->code_last;
  return TRUE;
}

gboolean weir_window_is_running(WeirWindow *w) {
  return w->run_cancellable != NULL;
}

double weir_window_last_apply_ms(WeirWindow *w) {
  return w->last_apply_ms;
}
