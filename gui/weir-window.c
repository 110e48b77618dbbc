/* weir-window.c — the workbench window (weir-window.h).
 *
 * Conventions of this file:
 *  - The session is the only state of the document.  Every change to it
 *    comes back through its callbacks (session_changed & co.), which
 *    refresh what depends on the current program: the analysis, the graph
 *    view, the status bar, the properties, the transformations panel and
 *    (lazily, when its page is shown) the code view.
 *  - Actions are the only entry points of user commands; buttons and menus
 *    name them, and their enabled state follows the session
 *    (update_actions).
 *  - Long work (run, benchmark) runs in a GTask worker on copies of the
 *    programs; the session is only touched on the main thread.
 *  - Errors go to the message bar (show_message), never only to stderr.
 */
#include "weir-window.h"

#include <gtksourceview/gtksource.h>
#include <json-c/json.h>

#include "weir-graph-view.h"
#include "weir-rows.h"
#include "weir-window-private.h"
#include "weir.h"

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

  /* document */
  WeirSession *session;
  WeirSessionCallbacks callbacks;
  char *path;           /* the file opened (model, program or workspace) */
  char *workspace_path; /* where Save writes, or NULL */
  gboolean dirty;
  WeirAnalysis *analysis; /* of the current program */
  guint last_cursor;
  guint history_generation; /* bumps when steps are removed */

  /* panels */
  GListStore *properties;
  GListStore *tiers; /* WeirRow (TIER) with children */
  GtkTreeListModel *transforms_tree;
  GtkSingleSelection *transforms_selection;
  GListStore *sites;
  GtkSingleSelection *sites_selection;
  WeirStepModel *steps;
  GtkSingleSelection *history_selection;
  const WeirTransformInfo *transform; /* selected transformation */
  GPtrArray *param_editors;           /* GtkWidget*, one per spec */
  gboolean syncing;                   /* selection set from code */

  /* preview */
  gboolean previewing;
  WeirGraph *preview_program;
  char *preview_text;
  WeirSite preview_site;
  char **preview_params;
  const WeirTransformInfo *preview_transform;

  /* code view */
  gboolean code_stale;
  gboolean code_highlighted;
  guint code_first, code_last;
  GtkTextTag *scope_tag;

  /* run / benchmark */
  GCancellable *run_cancellable;
  gboolean disposed; /* late worker results are dropped */
  /* panel scans in workers (NULL when none runs) */
  GCancellable *scan_cancellable;
  GCancellable *site_cancellable;
  char *keep_transform; /* transformation to select after a scan */

  /* run inputs: container name -> WeirTensor* and -> file path */
  GHashTable *inputs, *input_files;
  GHashTable *expected, *expected_files;

  /* "save changes?" confirmation (unsaved changes on close or open) */
  GtkWindow *confirm;     /* the dialog while it is up */
  gulong confirm_handler; /* its close-request handler */
  gboolean confirm_ref;   /* a reference on this window is held for it */
  int pending;            /* PENDING_CLOSE or PENDING_OPEN */
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

G_DEFINE_FINAL_TYPE(WeirWindow, weir_window, GTK_TYPE_APPLICATION_WINDOW)

static void refresh_program(WeirWindow *w);
static void refresh_transforms(WeirWindow *w);
static void refresh_sites(WeirWindow *w);
static void highlight_site(WeirWindow *w, const WeirRow *r);
static WeirRow *selected_site(WeirWindow *w);
static void refresh_properties(WeirWindow *w);
static void refresh_code(WeirWindow *w);
static void update_actions(WeirWindow *w);
static void end_preview(WeirWindow *w);
static void refresh_inputs(WeirWindow *w);
static void clear_inputs(WeirWindow *w);
static gboolean open_path_now(WeirWindow *w, const char *path);

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

static void hide_message(WeirWindow *w) {
  g_clear_pointer(&w->message, g_free);
  gtk_revealer_set_reveal_child(w->toast_revealer, FALSE);
}

static void show_error(WeirWindow *w, const char *what, const GError *error) {
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

static void set_dirty(WeirWindow *w, gboolean dirty) {
  w->dirty = dirty;
  update_title(w);
}

/* ------------------------------------------------------------- actions */

static void set_enabled(WeirWindow *w, const char *name, gboolean enabled) {
  GAction *a = g_action_map_lookup_action(G_ACTION_MAP(w), name);
  if (a)
    g_simple_action_set_enabled(G_SIMPLE_ACTION(a), enabled);
}

static WeirRow *selected_site(WeirWindow *w) {
  return gtk_single_selection_get_selected_item(w->sites_selection);
}

static void update_actions(WeirWindow *w) {
  gboolean have = w->session != NULL;
  gboolean running = w->run_cancellable != NULL;
  WeirRow *site = selected_site(w);
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

/* ------------------------------------------------------ session events */

static void session_changed(gpointer user) {
  WeirWindow *w = user;
  end_preview(w);
  set_dirty(w, TRUE);
  refresh_program(w);
}

static void session_steps_changed(guint position, guint removed, guint added,
                                  gpointer user) {
  WeirWindow *w = user;
  if (removed)
    w->history_generation++;
  weir_step_model_steps_changed(w->steps, position, removed, added);
  set_dirty(w, TRUE);
}

static void session_step_updated(guint index, gpointer user) {
  WeirWindow *w = user;
  weir_step_model_step_updated(w->steps, index);
  set_dirty(w, TRUE);
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
  update_actions(w);
}

/* ------------------------------------------------------------- figures */

static char *quantity_text(const WeirQuantity *q, gboolean bytes) {
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
    g_autofree char *bytes = quantity_text(&a->total_bytes, TRUE);
    g_autofree char *flops = quantity_text(&a->total_flops, FALSE);
    g_autofree char *peak = quantity_text(&a->peak_transient_bytes, TRUE);
    g_autofree char *intensity =
        a->intensity_known ? g_strdup_printf("%.3g FLOP/B", a->intensity)
                           : g_strdup("?");
    guint nodes = 0;
    for (guint k = 0; k < WEIR_NODE_KIND_COUNT; k++)
      nodes += a->node_counts[k];
    w->status_text = g_strdup_printf(
        "Bytes moved %s \u00b7 FLOPs %s \u00b7 intensity %s \u00b7 peak "
        "transient %s \u00b7 %u nodes \u00b7 step %u of %u",
        bytes, flops, intensity, peak, nodes, weir_session_cursor(w->session),
        weir_session_n_steps(w->session));
  }
  gtk_label_set_text(w->status_label, w->status_text);
}

/* Refreshes everything that depends on the current program. */
static void refresh_program(WeirWindow *w) {
  g_clear_pointer(&w->analysis, weir_analysis_free);
  if (w->session) {
    g_autoptr(GError) error = NULL;
    const WeirGraph *g = weir_session_current(w->session);
    w->analysis =
        weir_analysis_compute(g, weir_session_bindings(w->session), &error);
    if (!w->analysis)
      show_error(w, "analysis", error);
    weir_graph_view_set_program(w->graph_view, g,
                                weir_session_bindings(w->session));
    gtk_stack_set_visible_child_name(w->graph_stack, "graph");
  } else {
    weir_graph_view_set_program(w->graph_view, NULL, NULL);
    gtk_stack_set_visible_child_name(w->graph_stack, "empty");
  }
  update_status(w);
  refresh_properties(w);
  refresh_transforms(w);
  w->code_stale = TRUE;
  if (gtk_notebook_get_current_page(w->notebook) == 2)
    refresh_code(w);
  update_actions(w);
}

/* ---------------------------------------------------------- properties */

static void add_prop(WeirWindow *w, const char *name, const char *value) {
  g_autoptr(WeirRow) r = weir_row_new(WEIR_ROW_TEXT, name, value);
  g_list_store_append(w->properties, r);
}

static void add_propf(WeirWindow *w, const char *name, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static void add_propf(WeirWindow *w, const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *v = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  add_prop(w, name, v);
}

static char *shape_text(const WeirContainer *c) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < c->shape->len; d++) {
    g_autofree char *e = weir_expr_to_string(g_ptr_array_index(c->shape, d));
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static void add_container_props(WeirWindow *w, const WeirGraph *g,
                                const char *name) {
  const WeirContainer *c = weir_graph_container(g, name);
  if (!c)
    return;
  g_autofree char *shape = shape_text(c);
  add_propf(w, "container", "%s: %s%s (%s%s)", c->name,
            weir_dtype_name(c->dtype), shape,
            c->transient ? "transient" : "argument",
            c->initial ? ", constant" : "");
  if (c->strides && c->strides->len) {
    GString *s = g_string_new(NULL);
    for (guint d = 0; d < c->strides->len; d++) {
      g_autofree char *e =
          weir_expr_to_string(g_ptr_array_index(c->strides, d));
      g_string_append_printf(s, "%s%s", d ? ", " : "", e);
    }
    add_prop(w, "strides", s->str);
    g_string_free(s, TRUE);
  }
}

static char *attr_text(const WeirAttr *a) {
  GString *s = g_string_new(NULL);
  switch (a->type) {
  case WEIR_ATTR_INT:
    g_string_append_printf(s, "%" G_GINT64_FORMAT, a->i);
    break;
  case WEIR_ATTR_FLOAT:
    g_string_append_printf(s, "%g", a->f);
    break;
  case WEIR_ATTR_STRING:
    g_string_append(s, a->s);
    break;
  case WEIR_ATTR_INTS:
    for (guint i = 0; i < a->ints->len; i++)
      g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? ", " : "",
                             g_array_index(a->ints, gint64, i));
    break;
  case WEIR_ATTR_FLOATS:
    for (guint i = 0; i < a->floats->len; i++)
      g_string_append_printf(s, "%s%g", i ? ", " : "",
                             g_array_index(a->floats, double, i));
    break;
  case WEIR_ATTR_STRINGS:
    for (guint i = 0; i < a->strings->len; i++)
      g_string_append_printf(s, "%s%s", i ? ", " : "",
                             (char *)g_ptr_array_index(a->strings, i));
    break;
  default:
    break;
  }
  return g_string_free(s, FALSE);
}

static void add_node_props(WeirWindow *w, const WeirGraph *g,
                           const WeirState *st, const WeirNode *n) {
  add_propf(w, "node", "%u (%s) in state %u '%s'", n->id,
            weir_node_kind_name(n->kind), st->id, st->label ? st->label : "");
  add_prop(w, "label", n->label ? n->label : "");
  switch (n->kind) {
  case WEIR_NODE_ACCESS:
    add_container_props(w, g, n->data);
    break;
  case WEIR_NODE_TASKLET:
    add_prop(w, "code", n->code_text ? n->code_text : "");
    break;
  case WEIR_NODE_MAP_ENTRY: {
    const WeirMap *m = n->map;
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < m->params->len; i++) {
      g_autofree char *r =
          weir_range_to_string(&g_array_index(m->ranges, WeirRange, i));
      g_string_append_printf(s, "%s%s in %s", i ? ", " : "",
                             (char *)g_ptr_array_index(m->params, i), r);
    }
    add_prop(w, "ranges", s->str);
    g_string_free(s, TRUE);
    add_prop(w, "schedule", weir_schedule_name(m->schedule));
    if (m->tile && m->tile->len) {
      GString *t = g_string_new(NULL);
      for (guint i = 0; i < m->tile->len; i++)
        g_string_append_printf(t, "%s%" G_GINT64_FORMAT, i ? ", " : "",
                               g_array_index(m->tile, gint64, i));
      add_prop(w, "tile sizes", t->str);
      g_string_free(t, TRUE);
    }
    if (m->unroll > 1)
      add_propf(w, "unroll", "%u", m->unroll);
    if (m->collapse)
      add_propf(w, "collapse", "%u", m->collapse);
    break;
  }
  case WEIR_NODE_MAP_EXIT:
    add_propf(w, "entry", "node %u", n->entry);
    break;
  case WEIR_NODE_LIBRARY:
    add_prop(w, "op", n->op);
    for (guint i = 0; n->attrs && i < n->attrs->len; i++) {
      const WeirAttr *a = g_ptr_array_index(n->attrs, i);
      g_autofree char *v = attr_text(a);
      add_prop(w, a->name, v);
    }
    break;
  case WEIR_NODE_NESTED:
    add_prop(w, "program", n->nested && n->nested->name ? n->nested->name : "");
    break;
  default:
    break;
  }
  /* shapes of what flows in and out */
  g_autoptr(GPtrArray) ins = weir_state_in_edges(st, n->id);
  g_autoptr(GPtrArray) outs = weir_state_out_edges(st, n->id);
  for (guint k = 0; k < 2; k++) {
    GPtrArray *edges = k ? outs : ins;
    for (guint i = 0; edges && i < edges->len && i < 6; i++) {
      const WeirMemlet *m = g_ptr_array_index(edges, i);
      if (!m->data)
        continue;
      g_autofree char *sub =
          m->subset ? weir_subset_to_string(m->subset) : g_strdup("");
      add_propf(w, k ? "out" : "in", "%s%s%s[%s]",
                k ? (m->src_conn ? m->src_conn : "")
                  : (m->dst_conn ? m->dst_conn : ""),
                (k ? m->src_conn : m->dst_conn) ? " \u2190 " : "", m->data,
                sub);
    }
  }
  if (w->analysis) {
    const WeirNodeCost *c = weir_analysis_node(w->analysis, n->id);
    if (c) {
      g_autofree char *bi = quantity_text(&c->bytes_in, TRUE);
      g_autofree char *bo = quantity_text(&c->bytes_out, TRUE);
      g_autofree char *fl = quantity_text(&c->flops, FALSE);
      add_prop(w, "bytes in", bi);
      add_prop(w, "bytes out", bo);
      add_prop(w, "FLOPs", fl);
    }
  }
}

static void add_memlet_props(WeirWindow *w, const WeirGraph *g,
                             const WeirState *st, const WeirMemlet *m) {
  add_propf(w, "memlet", "%u: node %u \u2192 node %u in state %u", m->id,
            m->src, m->dst, st->id);
  if (!m->data) {
    add_prop(w, "data", "(empty: ordering only)");
    return;
  }
  g_autofree char *sub =
      m->subset ? weir_subset_to_string(m->subset) : g_strdup("");
  add_propf(w, "subset", "%s[%s]", m->data, sub);
  if (m->other) {
    g_autofree char *o = weir_subset_to_string(m->other);
    add_prop(w, "other", o);
  }
  g_autofree char *vol =
      m->volume ? weir_expr_to_string(m->volume) : g_strdup("?");
  add_propf(w, "volume", "%s%s", vol, m->dynamic ? " (dynamic)" : "");
  if (m->wcr != WEIR_WCR_NONE)
    add_prop(w, "wcr", weir_wcr_name(m->wcr));
  add_container_props(w, g, m->data);
  if (w->analysis) {
    const WeirMemletCost *c = weir_analysis_memlet(w->analysis, m->id);
    if (c) {
      g_autofree char *ex = quantity_text(&c->executions, FALSE);
      g_autofree char *b = quantity_text(&c->bytes, TRUE);
      add_prop(w, "executions", ex);
      add_propf(w, "bytes", "%s%s", b,
                c->counted ? "" : " (inner: not added to the total)");
    }
  }
}

static void refresh_properties(WeirWindow *w) {
  g_list_store_remove_all(w->properties);
  if (!w->session) {
    gtk_label_set_text(w->properties_title, "Properties");
    return;
  }
  const WeirGraph *g = weir_session_current(w->session);
  WeirElement e = weir_graph_view_get_selection(w->graph_view);
  const WeirState *st =
      e.kind != WEIR_ELEMENT_NONE ? weir_graph_state(g, e.state) : NULL;
  if (e.kind == WEIR_ELEMENT_NODE && st) {
    const WeirNode *n = weir_state_node(st, e.id);
    if (n) {
      g_autofree char *t = g_strdup_printf("Properties \u2014 %s '%s'",
                                           weir_node_kind_name(n->kind),
                                           n->label ? n->label : "");
      gtk_label_set_text(w->properties_title, t);
      add_node_props(w, g, st, n);
      return;
    }
  }
  if (e.kind == WEIR_ELEMENT_EDGE && st) {
    const WeirMemlet *m = weir_state_memlet(st, e.id);
    if (m) {
      gtk_label_set_text(w->properties_title, "Properties \u2014 memlet");
      add_memlet_props(w, g, st, m);
      return;
    }
  }
  if (e.kind == WEIR_ELEMENT_STATE && st) {
    g_autofree char *t = g_strdup_printf("Properties \u2014 state '%s'",
                                         st->label ? st->label : "");
    gtk_label_set_text(w->properties_title, t);
    add_propf(w, "state", "%u '%s'", st->id, st->label ? st->label : "");
    add_propf(w, "nodes", "%u", st->nodes->len);
    add_propf(w, "memlets", "%u", st->edges->len);
    const WeirStateCost *c =
        w->analysis ? weir_analysis_state(w->analysis, st->id) : NULL;
    if (c) {
      g_autofree char *b = quantity_text(&c->bytes, TRUE);
      g_autofree char *f = quantity_text(&c->flops, FALSE);
      add_prop(w, "bytes moved", b);
      add_prop(w, "FLOPs", f);
    }
    return;
  }
  gtk_label_set_text(w->properties_title, "Properties \u2014 program");
  add_prop(w, "program", g->name ? g->name : "");
  if (weir_session_source(w->session))
    add_prop(w, "source", weir_session_source(w->session));
  add_propf(w, "states", "%u", g->states->len);
  add_propf(w, "containers", "%u", g->containers->len);
  if (g->symbols->len) {
    GString *syms = g_string_new(NULL);
    for (guint i = 0; i < g->symbols->len; i++)
      g_string_append_printf(syms, "%s%s", i ? ", " : "",
                             (char *)g_ptr_array_index(g->symbols, i));
    add_prop(w, "symbols", syms->str);
    g_string_free(syms, TRUE);
  }
  if (w->analysis) {
    g_autofree char *b = quantity_text(&w->analysis->total_bytes, TRUE);
    g_autofree char *f = quantity_text(&w->analysis->total_flops, FALSE);
    g_autofree char *p =
        quantity_text(&w->analysis->peak_transient_bytes, TRUE);
    add_prop(w, "bytes moved", b);
    add_prop(w, "FLOPs", f);
    add_prop(w, "peak transient", p);
  }
}

/* ----------------------------------------------------- transformations */

static const char *const tier_names[] = {NULL, "Tier 1 \u2014 intra-operator",
                                         "Tier 2 \u2014 operator graph",
                                         "Tier 3 \u2014 inter-operator fusion",
                                         "Tier 4 \u2014 global data movement"};

/* Whether site concerns the selection e (a whole-program site always
 * does). */
static gboolean site_in_selection(const WeirSite *site, const WeirElement *e,
                                  const WeirGraph *g) {
  if (site->n_nodes == 0 || e->kind == WEIR_ELEMENT_NONE)
    return TRUE;
  if (site->state != e->state)
    return FALSE;
  if (e->kind == WEIR_ELEMENT_STATE)
    return TRUE;
  guint id = e->id;
  if (e->kind == WEIR_ELEMENT_EDGE) {
    const WeirState *st = weir_graph_state(g, e->state);
    const WeirMemlet *m = st ? weir_state_memlet(st, e->id) : NULL;
    if (!m)
      return FALSE;
    for (guint i = 0; i < site->n_nodes; i++)
      if (site->nodes[i] == m->src || site->nodes[i] == m->dst)
        return TRUE;
    return FALSE;
  }
  for (guint i = 0; i < site->n_nodes; i++)
    if (site->nodes[i] == id)
      return TRUE;
  return FALSE;
}

static GListModel *tree_children(gpointer item, gpointer user) {
  (void)user;
  WeirRow *r = item;
  if (r->kind == WEIR_ROW_TIER && r->children)
    return G_LIST_MODEL(g_object_ref(r->children));
  return NULL;
}

/* The transformations panel is filled by a scan in a worker thread on a
 * copy of the program: enumerating every transformation's sites is the
 * slow part of a refresh on large programs, and must not hold up the
 * redraw after an apply.  A newer scan cancels an older one; results of a
 * cancelled scan are dropped. */
typedef struct {
  const WeirTransformInfo *info;
  guint n_sites;
} ScanItem;

typedef struct {
  WeirGraph *g;
  WeirElement e;
  GArray *items; /* ScanItem */
} ScanData;

static void scan_data_free(gpointer p) {
  ScanData *d = p;
  weir_graph_free(d->g);
  g_array_unref(d->items);
  g_free(d);
}

static void scan_thread(GTask *task, gpointer source, gpointer data,
                        GCancellable *cancellable) {
  (void)source;
  ScanData *d = data;
  g_autoptr(GPtrArray) all = weir_transforms_list();
  for (guint i = 0; i < all->len; i++) {
    if (g_cancellable_is_cancelled(cancellable))
      break;
    const WeirTransformInfo *t = g_ptr_array_index(all, i);
    g_autoptr(GArray) sites = weir_transform_sites(t, d->g);
    ScanItem it = {.info = t};
    for (guint k = 0; k < sites->len; k++)
      if (site_in_selection(&g_array_index(sites, WeirSite, k), &d->e, d->g))
        it.n_sites++;
    if (it.n_sites)
      g_array_append_val(d->items, it);
  }
  g_task_return_boolean(task, !g_cancellable_is_cancelled(cancellable));
}

static void scan_done(GObject *source, GAsyncResult *res, gpointer user) {
  (void)user;
  WeirWindow *w = WEIR_WINDOW(source);
  GTask *task = G_TASK(res);
  if (g_task_get_cancellable(task) != w->scan_cancellable)
    return; /* a newer scan runs */
  g_clear_object(&w->scan_cancellable);
  if (!g_task_propagate_boolean(task, NULL) || !w->session)
    return;
  ScanData *d = g_task_get_task_data(task);
  g_autofree char *keep = g_steal_pointer(&w->keep_transform);
  WeirRow *tier_row = NULL;
  w->syncing = TRUE;
  for (guint i = 0; i < d->items->len; i++) {
    const ScanItem *it = &g_array_index(d->items, ScanItem, i);
    const WeirTransformInfo *t = it->info;
    if (!tier_row || tier_row->tier != t->tier) {
      guint tier = t->tier <= 4 ? t->tier : 0;
      tier_row =
          weir_row_new(WEIR_ROW_TIER, tier ? tier_names[tier] : "Other", NULL);
      tier_row->tier = t->tier;
      tier_row->children = g_list_store_new(WEIR_TYPE_ROW);
      g_list_store_append(w->tiers, tier_row);
      g_object_unref(tier_row); /* the store holds it */
    }
    g_autofree char *sub =
        g_strdup_printf("%u site%s \u00b7 %s", it->n_sites,
                        it->n_sites == 1 ? "" : "s", t->description);
    g_autoptr(WeirRow) r = weir_row_new(WEIR_ROW_TRANSFORM, t->name, sub);
    r->info = t;
    r->tier = t->tier;
    g_list_store_append(tier_row->children, r);
  }
  w->syncing = FALSE;
  if (!keep || !weir_window_select_transform(w, keep)) {
    gtk_single_selection_set_selected(w->transforms_selection,
                                      GTK_INVALID_LIST_POSITION);
    refresh_sites(w);
  }
  if (!d->items->len)
    gtk_label_set_text(w->transform_description,
                       "No transformation applies here.");
}

static void refresh_transforms(WeirWindow *w) {
  if (w->transform) {
    g_free(w->keep_transform);
    w->keep_transform = g_strdup(w->transform->name);
  }
  if (w->scan_cancellable)
    g_cancellable_cancel(w->scan_cancellable);
  g_clear_object(&w->scan_cancellable);
  w->syncing = TRUE;
  g_list_store_remove_all(w->tiers);
  w->syncing = FALSE;
  w->transform = NULL;
  refresh_sites(w);
  if (!w->session)
    return;
  const WeirGraph *g = weir_session_current(w->session);
  WeirElement e = weir_graph_view_get_selection(w->graph_view);
  if (e.kind == WEIR_ELEMENT_NONE)
    gtk_label_set_text(w->scope_label, "Whole program");
  else {
    const WeirState *st = weir_graph_state(g, e.state);
    const WeirNode *n =
        e.kind == WEIR_ELEMENT_NODE && st ? weir_state_node(st, e.id) : NULL;
    g_autofree char *t =
        n ? g_strdup_printf("At %s '%s' (and whole-program passes)",
                            weir_node_kind_name(n->kind), n->label)
          : g_strdup("At the selection (and whole-program passes)");
    gtk_label_set_text(w->scope_label, t);
  }
  gtk_label_set_text(w->transform_description, "Finding transformations\u2026");
  ScanData *d = g_new0(ScanData, 1);
  d->g = weir_graph_copy(g);
  d->e = e;
  d->items = g_array_new(FALSE, FALSE, sizeof(ScanItem));
  w->scan_cancellable = g_cancellable_new();
  GTask *task = g_task_new(w, w->scan_cancellable, scan_done, NULL);
  g_task_set_task_data(task, d, scan_data_free);
  g_task_run_in_thread(task, scan_thread);
  g_object_unref(task);
}

/* ---------------------------------------------------------- parameters */

static char *editor_value(GtkWidget *ed, const WeirParamSpec *p) {
  switch (p->type) {
  case WEIR_PARAM_INT:
    return g_strdup_printf(
        "%" G_GINT64_FORMAT,
        (gint64)gtk_spin_button_get_value(GTK_SPIN_BUTTON(ed)));
  case WEIR_PARAM_FLOAT: {
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    return g_strdup(g_ascii_dtostr(
        buf, sizeof buf, gtk_spin_button_get_value(GTK_SPIN_BUTTON(ed))));
  }
  case WEIR_PARAM_BOOL:
    return g_strdup(
        gtk_check_button_get_active(GTK_CHECK_BUTTON(ed)) ? "true" : "false");
  case WEIR_PARAM_CHOICE: {
    GtkStringObject *s = gtk_drop_down_get_selected_item(GTK_DROP_DOWN(ed));
    return g_strdup(s ? gtk_string_object_get_string(s) : "");
  }
  default:
    return g_strdup(gtk_editable_get_text(GTK_EDITABLE(ed)));
  }
}

/* "name=value" for every editor (NULL-terminated; g_strfreev). */
static char **current_params(WeirWindow *w) {
  GPtrArray *a = g_ptr_array_new();
  for (guint i = 0; w->transform && i < w->param_editors->len; i++) {
    const WeirParamSpec *p = &w->transform->params[i];
    g_autofree char *v =
        editor_value(g_ptr_array_index(w->param_editors, i), p);
    if (!*v && !p->default_value)
      continue; /* a required parameter left empty: the parser says so */
    g_ptr_array_add(a, g_strdup_printf("%s=%s", p->name, v));
  }
  g_ptr_array_add(a, NULL);
  return (char **)g_ptr_array_free(a, FALSE);
}

static void on_param_changed(WeirWindow *w) {
  if (!w->syncing)
    refresh_sites(w);
}

static void rebuild_params(WeirWindow *w) {
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child(GTK_WIDGET(w->params_grid))))
    gtk_grid_remove(w->params_grid, child);
  g_ptr_array_set_size(w->param_editors, 0);
  const WeirTransformInfo *t = w->transform;
  for (guint i = 0; t && i < t->n_params; i++) {
    const WeirParamSpec *p = &t->params[i];
    GtkWidget *label = gtk_label_new(p->name);
    gtk_label_set_xalign(GTK_LABEL(label), 0);
    GtkWidget *ed = NULL;
    g_autofree char *range = NULL;
    switch (p->type) {
    case WEIR_PARAM_INT: {
      double lo = p->min, hi = p->max;
      if (lo >= hi) {
        lo = -1e9;
        hi = 1e9;
      }
      ed = gtk_spin_button_new_with_range(lo, hi, 1);
      if (p->default_value)
        gtk_spin_button_set_value(GTK_SPIN_BUTTON(ed),
                                  g_ascii_strtod(p->default_value, NULL));
      range = g_strdup_printf("integer in [%" G_GINT64_FORMAT
                              ", %" G_GINT64_FORMAT "]",
                              p->min, p->max);
      g_signal_connect_swapped(ed, "value-changed",
                               G_CALLBACK(on_param_changed), w);
      break;
    }
    case WEIR_PARAM_FLOAT: {
      double lo = p->fmin, hi = p->fmax;
      if (lo >= hi) {
        lo = -1e9;
        hi = 1e9;
      }
      ed = gtk_spin_button_new_with_range(lo, hi, 0.001);
      gtk_spin_button_set_digits(GTK_SPIN_BUTTON(ed), 3);
      if (p->default_value)
        gtk_spin_button_set_value(GTK_SPIN_BUTTON(ed),
                                  g_ascii_strtod(p->default_value, NULL));
      range = g_strdup_printf("number in [%g, %g]", p->fmin, p->fmax);
      g_signal_connect_swapped(ed, "value-changed",
                               G_CALLBACK(on_param_changed), w);
      break;
    }
    case WEIR_PARAM_BOOL:
      ed = gtk_check_button_new();
      gtk_check_button_set_active(GTK_CHECK_BUTTON(ed),
                                  p->default_value &&
                                      g_str_equal(p->default_value, "true"));
      range = g_strdup("true or false");
      g_signal_connect_swapped(ed, "toggled", G_CALLBACK(on_param_changed), w);
      break;
    case WEIR_PARAM_CHOICE: {
      g_auto(GStrv) choices = g_strsplit(p->choices ? p->choices : "", "|", -1);
      ed = gtk_drop_down_new_from_strings((const char *const *)choices);
      for (guint k = 0; choices[k]; k++)
        if (p->default_value && g_str_equal(choices[k], p->default_value))
          gtk_drop_down_set_selected(GTK_DROP_DOWN(ed), k);
      range = g_strdup_printf("one of %s", p->choices ? p->choices : "");
      g_signal_connect_swapped(ed, "notify::selected",
                               G_CALLBACK(on_param_changed), w);
      break;
    }
    case WEIR_PARAM_INTS:
    case WEIR_PARAM_STRING:
    default:
      ed = gtk_entry_new();
      gtk_editable_set_text(GTK_EDITABLE(ed),
                            p->default_value ? p->default_value : "");
      range =
          p->type == WEIR_PARAM_INTS
              ? g_strdup_printf("comma-separated integers in [%" G_GINT64_FORMAT
                                ", %" G_GINT64_FORMAT "]",
                                p->min, p->max)
              : g_strdup("text");
      gtk_entry_set_placeholder_text(GTK_ENTRY(ed), range);
      g_signal_connect_swapped(ed, "activate", G_CALLBACK(on_param_changed), w);
      break;
    }
    gtk_widget_set_hexpand(ed, TRUE);
    gtk_widget_set_halign(ed, p->type == WEIR_PARAM_BOOL ? GTK_ALIGN_START
                                                         : GTK_ALIGN_FILL);
    g_autofree char *tip =
        g_strdup_printf("%s (%s%s%s)", p->doc ? p->doc : p->name, range,
                        p->default_value ? "; default " : "",
                        p->default_value ? p->default_value : "");
    gtk_widget_set_tooltip_text(ed, tip);
    gtk_widget_set_tooltip_text(label, tip);
    gtk_grid_attach(w->params_grid, label, 0, (int)i, 1, 1);
    gtk_grid_attach(w->params_grid, ed, 1, (int)i, 1, 1);
    g_ptr_array_add(w->param_editors, ed);
  }
}

/* --------------------------------------------------------------- sites */

/* The sites of the selected transformation with their legality, also
 * found in a worker on a copy of the program (legality checks of hundreds
 * of sites take seconds on large programs). */
typedef struct {
  WeirGraph *g;
  const WeirTransformInfo *t;
  char **params;
  WeirElement e;
  gboolean legal_only;
  guint keep;
  GPtrArray *rows; /* WeirRow* */
  char *param_error;
} SiteScan;

static void site_scan_free(gpointer p) {
  SiteScan *d = p;
  weir_graph_free(d->g);
  g_strfreev(d->params);
  g_ptr_array_unref(d->rows);
  g_free(d->param_error);
  g_free(d);
}

static void site_scan_thread(GTask *task, gpointer source, gpointer data,
                             GCancellable *cancellable) {
  (void)source;
  SiteScan *d = data;
  g_autoptr(GError) perr = NULL;
  g_autoptr(WeirParams) p =
      weir_params_parse(d->t, (const char *const *)d->params, &perr);
  if (perr)
    d->param_error = g_strdup(perr->message);
  g_autoptr(GArray) sites = weir_transform_sites(d->t, d->g);
  for (guint k = 0; k < sites->len; k++) {
    if (g_cancellable_is_cancelled(cancellable))
      break;
    const WeirSite *s = &g_array_index(sites, WeirSite, k);
    if (!site_in_selection(s, &d->e, d->g))
      continue;
    g_autofree char *reason = NULL;
    gboolean legal = p && weir_transform_can_apply(d->t, d->g, s, p, &reason);
    if (d->legal_only && !legal)
      continue;
    g_autofree char *text =
        s->n_nodes ? weir_site_describe(d->g, s) : g_strdup("whole program");
    g_autofree char *sub =
        legal ? g_strdup("legal")
              : g_strdup_printf(
                    "not legal: %s",
                    reason ? reason : (d->param_error ? d->param_error : "?"));
    WeirRow *r = weir_row_new(WEIR_ROW_SITE, text, sub);
    r->info = d->t;
    r->site = *s;
    r->legal = legal;
    r->index = k;
    g_ptr_array_add(d->rows, r);
  }
  g_task_return_boolean(task, !g_cancellable_is_cancelled(cancellable));
}

static void site_scan_done(GObject *source, GAsyncResult *res, gpointer user) {
  (void)user;
  WeirWindow *w = WEIR_WINDOW(source);
  GTask *task = G_TASK(res);
  if (g_task_get_cancellable(task) != w->site_cancellable)
    return;
  g_clear_object(&w->site_cancellable);
  if (!g_task_propagate_boolean(task, NULL) || !w->session)
    return;
  SiteScan *d = g_task_get_task_data(task);
  g_autofree char *desc =
      d->param_error
          ? g_strdup_printf("%s\nParameters: %s", d->t->description,
                            d->param_error)
          : g_strdup_printf("Tier %u. %s", d->t->tier, d->t->description);
  gtk_label_set_text(w->transform_description, desc);
  w->syncing = TRUE;
  g_list_store_splice(w->sites, 0, 0, d->rows->pdata, d->rows->len);
  w->syncing = FALSE;
  guint n = d->rows->len;
  /* Keep the row selected before when it is still there, else the first
   * legal site. */
  guint pick = GTK_INVALID_LIST_POSITION;
  if (d->keep != GTK_INVALID_LIST_POSITION && d->keep < n)
    pick = d->keep;
  for (guint k = 0; pick == GTK_INVALID_LIST_POSITION && k < n; k++) {
    const WeirRow *r = g_ptr_array_index(d->rows, k);
    if (r->legal)
      pick = k;
  }
  gtk_single_selection_set_selected(w->sites_selection, pick);
  highlight_site(w, selected_site(w));
  update_actions(w);
}

static void refresh_sites(WeirWindow *w) {
  guint keep = gtk_single_selection_get_selected(w->sites_selection);
  if (w->site_cancellable)
    g_cancellable_cancel(w->site_cancellable);
  g_clear_object(&w->site_cancellable);
  w->syncing = TRUE;
  g_list_store_remove_all(w->sites);
  w->syncing = FALSE;
  const WeirTransformInfo *t = w->transform;
  if (!w->session || !t) {
    gtk_label_set_text(w->transform_description,
                       w->session ? "Select a transformation." : "");
    weir_graph_view_highlight(w->graph_view, 0, NULL, 0);
    update_actions(w);
    return;
  }
  gtk_label_set_text(w->transform_description, "Checking sites\u2026");
  SiteScan *d = g_new0(SiteScan, 1);
  d->g = weir_graph_copy(weir_session_current(w->session));
  d->t = t;
  d->params = current_params(w);
  d->e = weir_graph_view_get_selection(w->graph_view);
  d->legal_only = gtk_check_button_get_active(w->legal_only_check);
  d->keep = keep;
  d->rows = g_ptr_array_new_with_free_func(g_object_unref);
  w->site_cancellable = g_cancellable_new();
  GTask *task = g_task_new(w, w->site_cancellable, site_scan_done, NULL);
  g_task_set_task_data(task, d, site_scan_free);
  g_task_run_in_thread(task, site_scan_thread);
  g_object_unref(task);
  update_actions(w);
}

static void highlight_site(WeirWindow *w, const WeirRow *r) {
  if (r && r->site.n_nodes)
    weir_graph_view_highlight(w->graph_view, r->site.state, r->site.nodes,
                              r->site.n_nodes);
  else
    weir_graph_view_highlight(w->graph_view, 0, NULL, 0);
}

static void on_site_hover(WeirRow *row, gpointer user) {
  WeirWindow *w = user;
  highlight_site(w, row ? row : selected_site(w));
}

static void on_site_selected(GtkSingleSelection *sel, GParamSpec *ps,
                             WeirWindow *w) {
  (void)sel;
  (void)ps;
  if (w->syncing)
    return;
  highlight_site(w, selected_site(w));
  update_actions(w);
}

static void on_transform_selected(GtkSingleSelection *sel, GParamSpec *ps,
                                  WeirWindow *w) {
  (void)ps;
  if (w->syncing)
    return;
  GtkTreeListRow *tr = gtk_single_selection_get_selected_item(sel);
  WeirRow *r = tr ? gtk_tree_list_row_get_item(tr) : NULL;
  const WeirTransformInfo *t =
      r && r->kind == WEIR_ROW_TRANSFORM ? r->info : NULL;
  g_clear_object(&r);
  if (t != w->transform) {
    w->transform = t;
    w->syncing = TRUE;
    rebuild_params(w);
    w->syncing = FALSE;
    gtk_single_selection_set_selected(w->sites_selection,
                                      GTK_INVALID_LIST_POSITION);
  }
  refresh_sites(w);
}

/* ------------------------------------------------------------ preview */

static void end_preview(WeirWindow *w) {
  if (!w->previewing)
    return;
  w->previewing = FALSE;
  g_clear_pointer(&w->preview_program, weir_graph_free);
  g_clear_pointer(&w->preview_text, g_free);
  g_clear_pointer(&w->preview_params, g_strfreev);
  w->preview_transform = NULL;
  gtk_revealer_set_reveal_child(w->preview_revealer, FALSE);
}

static char *delta_text(const WeirQuantity *a, const WeirQuantity *b,
                        gboolean bytes) {
  g_autofree char *x = quantity_text(a, bytes);
  g_autofree char *y = quantity_text(b, bytes);
  if (a->known && b->known && a->value > 0)
    return g_strdup_printf("%s \u2192 %s (%+.2f%%)", x, y,
                           100.0 * (double)(b->value - a->value) /
                               (double)a->value);
  return g_strdup_printf("%s \u2192 %s", x, y);
}

static void action_preview(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  WeirRow *site = selected_site(w);
  if (!w->session || !w->transform || !site)
    return;
  g_auto(GStrv) params = current_params(w);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirParams) p =
      weir_params_parse(w->transform, (const char *const *)params, &error);
  if (!p) {
    show_error(w, w->transform->name, error);
    return;
  }
  g_autoptr(WeirGraph) copy = weir_graph_copy(weir_session_current(w->session));
  WeirApplyReport rep = {0};
  if (!weir_transform_apply(copy, w->transform, &site->site, p,
                            weir_session_bindings(w->session), &rep, &error)) {
    weir_apply_report_clear(&rep);
    show_error(w, w->transform->name, error);
    return;
  }
  end_preview(w);
  g_autofree char *bytes =
      delta_text(&rep.bytes_before, &rep.bytes_after, TRUE);
  g_autofree char *flops =
      delta_text(&rep.flops_before, &rep.flops_after, FALSE);
  w->preview_text = g_strdup_printf(
      "Preview of %s at %s \u2014 bytes moved %s \u00b7 FLOPs %s",
      w->transform->name, site->title, bytes, flops);
  weir_apply_report_clear(&rep);
  w->previewing = TRUE;
  w->preview_transform = w->transform;
  w->preview_site = site->site;
  w->preview_params = g_strdupv(params);
  w->preview_program = g_steal_pointer(&copy);
  gtk_label_set_text(w->preview_label, w->preview_text);
  gtk_revealer_set_reveal_child(w->preview_revealer, TRUE);
  weir_graph_view_set_program(w->graph_view, w->preview_program,
                              weir_session_bindings(w->session));
  update_actions(w);
}

static void action_discard_preview(GSimpleAction *a, GVariant *v,
                                   gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  if (!w->previewing)
    return;
  end_preview(w);
  weir_graph_view_set_program(w->graph_view, weir_session_current(w->session),
                              weir_session_bindings(w->session));
  update_actions(w);
}

/* --------------------------------------------------------------- apply */

static void action_apply(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  if (!w->session)
    return;
  const WeirTransformInfo *t;
  WeirSite site;
  g_auto(GStrv) params = NULL;
  if (w->previewing) {
    t = w->preview_transform;
    site = w->preview_site;
    params = g_strdupv(w->preview_params);
  } else {
    WeirRow *r = selected_site(w);
    if (!w->transform || !r)
      return;
    t = w->transform;
    site = r->site;
    params = current_params(w);
  }
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(GError) error = NULL;
  if (!weir_session_apply(w->session, t->name, &site,
                          (const char *const *)params, &error)) {
    show_error(w, t->name, error);
    return;
  }
  w->last_apply_ms = (double)(g_get_monotonic_time() - t0) / 1e3;
  hide_message(w);
}

/* Applies the selected transformation at every legal site, through a
 * one-step recipe ("all" sites), so each application is a history step. */
static void action_apply_all(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  if (!w->session || !w->transform)
    return;
  g_auto(GStrv) params = current_params(w);
  /* the panel is refilled while the steps are applied */
  g_autofree char *name = g_strdup(w->transform->name);
  /* {"format": .., "version": .., "steps": [{"transform": name,
   *  "params": {..}}]}: every candidate site ("all" is the default) */
  json_object *step = json_object_new_object();
  json_object_object_add(step, "transform", json_object_new_string(name));
  json_object *po = json_object_new_object();
  for (guint i = 0; params[i]; i++) {
    char *eq = strchr(params[i], '=');
    *eq = '\0';
    json_object_object_add(po, params[i], json_object_new_string(eq + 1));
  }
  json_object_object_add(step, "params", po);
  json_object *steps = json_object_new_array();
  json_object_array_add(steps, step);
  json_object *doc = json_object_new_object();
  json_object_object_add(doc, "format",
                         json_object_new_string(WEIR_RECIPE_FORMAT));
  json_object_object_add(doc, "version",
                         json_object_new_int(WEIR_RECIPE_VERSION));
  json_object_object_add(doc, "steps", steps);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirRecipe) r = weir_recipe_parse(
      json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN), -1,
      "<apply to all sites>", &error);
  json_object_put(doc);
  g_autoptr(WeirRecipeReport) rep = weir_recipe_report_new();
  if (!r || !weir_recipe_apply_session(w->session, r, rep, &error)) {
    show_error(w, name, error);
    return;
  }
  guint applied = 0;
  for (guint i = 0; i < rep->steps->len; i++) {
    const WeirRecipeStepReport *s = g_ptr_array_index(rep->steps, i);
    applied += s->applied->len;
  }
  g_autofree char *b0 = weir_figure_format(&rep->bytes_before, TRUE);
  g_autofree char *b1 = weir_figure_format(&rep->bytes_after, TRUE);
  g_autofree char *m =
      g_strdup_printf("%s applied at %u site%s: bytes moved %s \u2192 %s", name,
                      applied, applied == 1 ? "" : "s", b0, b1);
  weir_window_show_message(w, FALSE, m);
}

static void action_undo(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  g_autoptr(GError) error = NULL;
  if (w->session && !weir_session_undo(w->session, &error))
    show_error(w, "undo", error);
}

static void action_redo(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  g_autoptr(GError) error = NULL;
  if (w->session && !weir_session_redo(w->session, &error))
    show_error(w, "redo", error);
}

static void action_goto(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  WeirWindow *w = user;
  g_autoptr(GError) error = NULL;
  guint k = g_variant_get_uint32(v);
  if (w->session && k != weir_session_cursor(w->session) &&
      !weir_session_goto(w->session, k, &error))
    show_error(w, "go to step", error);
}

gboolean weir_window_bookmark(WeirWindow *w, const char *name) {
  if (!w->session)
    return FALSE;
  g_autoptr(GError) error = NULL;
  if (!weir_session_bookmark(w->session, weir_session_cursor(w->session), name,
                             &error)) {
    show_error(w, "bookmark", error);
    return FALSE;
  }
  /* the original's bookmark has no session notification: it is saved
   * with the workspace all the same */
  if (weir_session_cursor(w->session) == 0) {
    weir_step_model_step_updated(w->steps, 0);
    set_dirty(w, TRUE);
  }
  return TRUE;
}

static void action_bookmark(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  WeirWindow *w = user;
  weir_window_bookmark(w, g_variant_get_string(v, NULL));
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
    show_error(w, "go to step", error);
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
  refresh_properties(w);
  refresh_transforms(w);
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

static void on_search_activate(GtkSearchEntry *e, WeirWindow *w) {
  const char *text = gtk_editable_get_text(GTK_EDITABLE(e));
  if (!*text || !w->session)
    return;
  if (!weir_graph_view_search(w->graph_view, text)) {
    g_autofree char *m = g_strdup_printf("No node matches '%s'.", text);
    weir_window_show_message(w, FALSE, m);
  }
}

static const char *const overlay_names[] = {"none", "bytes", "flops",
                                            "intensity"};

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
      "Unknown overlay '%s' (none, bytes, flops or intensity).", name);
  weir_window_show_message(w, TRUE, m);
}

static void on_overlay_dropdown(GtkDropDown *d, GParamSpec *ps, WeirWindow *w) {
  (void)ps;
  guint i = gtk_drop_down_get_selected(d);
  if (i < G_N_ELEMENTS(overlay_names))
    g_action_group_activate_action(G_ACTION_GROUP(w), "overlay",
                                   g_variant_new_string(overlay_names[i]));
}

/* ------------------------------------------------------ run and bench */

typedef struct {
  WeirWindow *w; /* strong reference */
  WeirGraph *program, *reference;
  GHashTable *bindings;
  WeirEvaluateOptions opts;
  guint step;
  guint generation;
  char *label;
  GHashTable *inputs, *expected; /* copies of the window's tensors */
  guint n_input_files;
  WeirEvaluation result;
} RunData;

static void run_data_free(gpointer p) {
  RunData *d = p;
  g_object_unref(d->w);
  weir_graph_free(d->program);
  weir_graph_free(d->reference);
  g_hash_table_unref(d->bindings);
  g_free(d->label);
  g_clear_pointer(&d->inputs, g_hash_table_unref);
  g_clear_pointer(&d->expected, g_hash_table_unref);
  weir_evaluation_clear(&d->result);
  g_free(d);
}

typedef struct {
  WeirWindow *w;
  double fraction;
  char *phase;
} ProgressMsg;

static void progress_msg_free(gpointer p) {
  ProgressMsg *m = p;
  g_object_unref(m->w);
  g_free(m->phase);
  g_free(m);
}

static gboolean progress_main(gpointer p) {
  ProgressMsg *m = p;
  if (!m->w->disposed && m->w->run_cancellable) {
    gtk_progress_bar_set_fraction(m->w->progress_bar, m->fraction);
    gtk_label_set_text(m->w->progress_label, m->phase);
  }
  return G_SOURCE_REMOVE;
}

static void run_progress(double fraction, const char *phase, gpointer user) {
  RunData *d = user;
  ProgressMsg *m = g_new0(ProgressMsg, 1);
  m->w = g_object_ref(d->w);
  m->fraction = fraction;
  m->phase = g_strdup(phase);
  g_main_context_invoke_full(NULL, G_PRIORITY_DEFAULT, progress_main, m,
                             progress_msg_free);
}

static void run_thread(GTask *task, gpointer source, gpointer data,
                       GCancellable *cancellable) {
  (void)source;
  RunData *d = data;
  GError *error = NULL;
  if (weir_evaluate(d->program, d->reference, d->bindings, &d->opts,
                    cancellable, run_progress, d, &d->result, &error))
    g_task_return_boolean(task, TRUE);
  else
    g_task_return_error(task, error);
}

static void show_running(WeirWindow *w, gboolean running) {
  gtk_widget_set_visible(GTK_WIDGET(w->progress_bar), running);
  gtk_widget_set_visible(GTK_WIDGET(w->progress_label), running);
  gtk_widget_set_visible(GTK_WIDGET(w->cancel_button), running);
  if (running) {
    gtk_progress_bar_set_fraction(w->progress_bar, 0);
    gtk_label_set_text(w->progress_label, "starting");
  }
}

static void run_done(GObject *source, GAsyncResult *res, gpointer user) {
  (void)user;
  WeirWindow *w = WEIR_WINDOW(source);
  GTask *task = G_TASK(res);
  RunData *d = g_task_get_task_data(task);
  g_autoptr(GError) error = NULL;
  if (w->disposed)
    return;
  g_clear_object(&w->run_cancellable);
  show_running(w, FALSE);
  update_actions(w);
  if (!g_task_propagate_boolean(task, &error)) {
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
      weir_window_show_message(w, FALSE, "Cancelled.");
    else
      show_error(w, d->label, error);
    return;
  }
  g_autofree char *json = weir_evaluation_to_json(&d->result, d->label);
  if (w->session && d->generation == w->history_generation &&
      d->step <= weir_session_n_steps(w->session)) {
    if (d->step == 0)
      weir_step_model_set_original_results(w->steps, json);
    else {
      g_autoptr(GError) e2 = NULL;
      if (!weir_session_set_results(w->session, d->step, json, &e2))
        show_error(w, "results", e2);
    }
  }
  g_autofree char *line = weir_evaluation_describe_json(json);
  g_autofree char *files =
      d->n_input_files || d->result.n_expected
          ? g_strdup_printf("; %u input%s from files, %u expected output%s "
                            "checked",
                            d->n_input_files, d->n_input_files == 1 ? "" : "s",
                            d->result.n_expected,
                            d->result.n_expected == 1 ? "" : "s")
          : g_strdup("");
  g_autofree char *m =
      d->result.matches || !d->result.validated
          ? g_strdup_printf("Step %u %s%s%s", d->step, line, files,
                            d->result.cache_hit ? " (compiled code from the "
                                                  "cache)"
                                                : "")
          : g_strdup_printf("Step %u %s%s: %s", d->step, line, files,
                            d->result.mismatch);
  weir_window_show_message(w, d->result.validated && !d->result.matches, m);
}

/* A copy of a table name -> WeirTensor* for the worker. */
static GHashTable *copy_tensors(GHashTable *from) {
  GHashTable *to = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                         (GDestroyNotify)weir_tensor_free);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, from);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(to, g_strdup(k), weir_tensor_copy(v));
  return to;
}

static void start_run(WeirWindow *w, gboolean bench) {
  if (!w->session || w->run_cancellable)
    return;
  RunData *d = g_new0(RunData, 1);
  d->w = g_object_ref(w);
  d->program = weir_graph_copy(weir_session_current(w->session));
  /* the original is the reference of every later step; step 0 is only
   * timed */
  d->reference = weir_session_cursor(w->session) > 0
                     ? weir_graph_copy(weir_session_original(w->session))
                     : NULL;
  d->bindings = weir_bindings_new();
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, weir_session_bindings(w->session));
  while (g_hash_table_iter_next(&it, &k, &v)) {
    gint64 *val = g_new(gint64, 1);
    *val = *(gint64 *)v;
    g_hash_table_insert(d->bindings, g_strdup(k), val);
  }
  if (g_hash_table_size(w->inputs)) {
    d->inputs = copy_tensors(w->inputs);
    d->opts.inputs = d->inputs;
    d->n_input_files = g_hash_table_size(w->inputs);
  }
  if (g_hash_table_size(w->expected)) {
    d->expected = copy_tensors(w->expected);
    d->opts.expected = d->expected;
  }
  d->opts.warmup = bench ? 3 : 0;
  d->opts.repetitions = bench ? 10 : 1;
  d->step = weir_session_cursor(w->session);
  d->generation = w->history_generation;
  d->label = g_strdup(bench ? "bench" : "run");
  w->run_cancellable = g_cancellable_new();
  show_running(w, TRUE);
  update_actions(w);
  GTask *task = g_task_new(w, w->run_cancellable, run_done, NULL);
  g_task_set_task_data(task, d, run_data_free);
  g_task_run_in_thread(task, run_thread);
  g_object_unref(task);
}

static void action_run(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  start_run(user, FALSE);
}

static void action_bench(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  start_run(user, TRUE);
}

static void action_cancel(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  if (w->run_cancellable)
    g_cancellable_cancel(w->run_cancellable);
}

/* ---------------------------------------------------------- run inputs */

/* The Run page lists the program's arguments (the containers the compiled
 * code takes: not transient, not constant).  Each gets random values (seed
 * 1) unless a tensor file (.pb or .npy, read by weir_tensor_load as `weir
 * run --input`) is chosen for it; an expected-output file makes the run
 * compare the argument after the run with it (as `weir run --expect`).
 * A file is checked when it is chosen (weir_evaluate_check_tensor: the
 * argument exists, same dtype and shape) and refused with a message
 * naming the file otherwise. */

static void clear_inputs(WeirWindow *w) {
  if (w->inputs)
    g_hash_table_remove_all(w->inputs);
  if (w->input_files)
    g_hash_table_remove_all(w->input_files);
  if (w->expected)
    g_hash_table_remove_all(w->expected);
  if (w->expected_files)
    g_hash_table_remove_all(w->expected_files);
}

/* Sets (path non-empty) or clears the input or expected file of the
 * argument name; FALSE with a message in the window when it is refused. */
static gboolean set_tensor_file(WeirWindow *w, gboolean expected,
                                const char *name, const char *path) {
  GHashTable *tensors = expected ? w->expected : w->inputs;
  GHashTable *files = expected ? w->expected_files : w->input_files;
  const char *what = expected ? "expected output" : "input";
  if (!w->session)
    return FALSE;
  if (!path || !*path) {
    g_hash_table_remove(tensors, name);
    g_hash_table_remove(files, name);
    refresh_inputs(w);
    return TRUE;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTensor) t = weir_tensor_load(path, NULL, &error);
  if (!t) {
    /* the loader's messages name the file */
    g_autofree char *base = g_path_get_basename(path);
    if (strstr(error->message, base))
      show_error(w, what, error);
    else {
      g_autofree char *m = g_strdup_printf("%s: %s", what, path);
      show_error(w, m, error);
    }
    return FALSE;
  }
  if (!weir_evaluate_check_tensor(weir_session_current(w->session),
                                  weir_session_bindings(w->session), what, name,
                                  t, &error)) {
    show_error(w, path, error);
    return FALSE;
  }
  g_hash_table_replace(tensors, g_strdup(name), g_steal_pointer(&t));
  g_hash_table_replace(files, g_strdup(name), g_strdup(path));
  g_autofree char *base = g_path_get_basename(path);
  g_autofree char *m = g_strdup_printf(
      "%s of '%s': %s", expected ? "Expected output" : "Input", name, base);
  weir_window_show_message(w, FALSE, m);
  refresh_inputs(w);
  return TRUE;
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
  set_tensor_file(w, expected, name, eq + 1);
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
  clear_inputs(w);
  refresh_inputs(w);
}

/* The chooser of one argument's file: the argument and which file ride on
 * the dialog. */
static void on_tensor_chosen(GtkNativeDialog *d, int response, gpointer user) {
  WeirWindow *w = user;
  if (response == GTK_RESPONSE_ACCEPT && !w->disposed) {
    g_autoptr(GFile) f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
    g_autofree char *path = f ? g_file_get_path(f) : NULL;
    if (path)
      set_tensor_file(
          w, GPOINTER_TO_INT(g_object_get_data(G_OBJECT(d), "weir-expected")),
          g_object_get_data(G_OBJECT(d), "weir-argument"), path);
  }
  gtk_native_dialog_destroy(d);
  g_object_unref(d);
  g_object_unref(w);
}

static void choose_tensor(GtkButton *b, WeirWindow *w) {
  const char *name = g_object_get_data(G_OBJECT(b), "weir-argument");
  gboolean expected =
      GPOINTER_TO_INT(g_object_get_data(G_OBJECT(b), "weir-expected"));
  g_autofree char *title = g_strdup_printf(
      "%s of '%s'", expected ? "Expected Output" : "Input", name);
  GtkFileChooserNative *d = gtk_file_chooser_native_new(
      title, GTK_WINDOW(w), GTK_FILE_CHOOSER_ACTION_OPEN, NULL, NULL);
  gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(d), TRUE);
  GtkFileFilter *tensors = gtk_file_filter_new();
  gtk_file_filter_set_name(tensors, "Tensors (.pb, .npy)");
  gtk_file_filter_add_pattern(tensors, "*.pb");
  gtk_file_filter_add_pattern(tensors, "*.npy");
  gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(d), tensors);
  g_object_unref(tensors);
  g_object_set_data_full(G_OBJECT(d), "weir-argument", g_strdup(name), g_free);
  g_object_set_data(G_OBJECT(d), "weir-expected", GINT_TO_POINTER(expected));
  /* the window outlives the dialog's answer */
  g_signal_connect(d, "response", G_CALLBACK(on_tensor_chosen),
                   g_object_ref(w));
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}

static void clear_tensor(GtkButton *b, WeirWindow *w) {
  const char *name = g_object_get_data(G_OBJECT(b), "weir-argument");
  g_autofree char *n = g_strdup(name); /* the row is rebuilt */
  g_hash_table_remove(w->inputs, n);
  g_hash_table_remove(w->input_files, n);
  g_hash_table_remove(w->expected, n);
  g_hash_table_remove(w->expected_files, n);
  refresh_inputs(w);
}

static GtkWidget *argument_button(WeirWindow *w, const char *label,
                                  const char *tooltip, const char *name,
                                  gboolean expected, GCallback cb) {
  GtkWidget *b = gtk_button_new_with_label(label);
  gtk_widget_set_tooltip_text(b, tooltip);
  gtk_widget_set_valign(b, GTK_ALIGN_CENTER);
  g_object_set_data_full(G_OBJECT(b), "weir-argument", g_strdup(name), g_free);
  g_object_set_data(G_OBJECT(b), "weir-expected", GINT_TO_POINTER(expected));
  g_signal_connect(b, "clicked", cb, w);
  return b;
}

static GtkWidget *small_label(const char *text, gboolean dim) {
  GtkWidget *l = gtk_label_new(text);
  gtk_label_set_xalign(GTK_LABEL(l), 0);
  gtk_label_set_ellipsize(GTK_LABEL(l), PANGO_ELLIPSIZE_MIDDLE);
  if (dim)
    gtk_widget_add_css_class(l, "dim-label");
  return l;
}

static void refresh_inputs(WeirWindow *w) {
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child(GTK_WIDGET(w->inputs_grid))))
    gtk_grid_remove(w->inputs_grid, child);
  if (!w->session) {
    gtk_label_set_text(w->inputs_summary, "No program.");
    return;
  }
  const WeirGraph *g = weir_session_current(w->session);
  GHashTable *b = weir_session_bindings(w->session);
  g_autoptr(GPtrArray) args = weir_codegen_arguments(g);
  for (guint i = 0; i < args->len; i++) {
    const WeirContainer *c = g_ptr_array_index(args, i);
    GString *type = g_string_new(weir_dtype_name(c->dtype));
    g_string_append_c(type, '[');
    for (guint d = 0; d < c->shape->len; d++) {
      WeirExpr *e = g_ptr_array_index(c->shape, d);
      gint64 n = 0;
      if (weir_expr_eval(e, b, &n, NULL))
        g_string_append_printf(type, "%s%" G_GINT64_FORMAT, d ? ", " : "", n);
      else {
        g_autofree char *t = weir_expr_to_string(e);
        g_string_append_printf(type, "%s%s", d ? ", " : "", t);
      }
    }
    g_string_append_c(type, ']');
    GtkWidget *left = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);
    gtk_widget_set_hexpand(left, TRUE);
    g_autofree char *head = g_strdup_printf("%s  %s", c->name, type->str);
    g_string_free(type, TRUE);
    GtkWidget *hl = small_label(head, FALSE);
    gtk_widget_add_css_class(hl, "heading");
    gtk_box_append(GTK_BOX(left), hl);
    const char *in = g_hash_table_lookup(w->input_files, c->name);
    const char *ex = g_hash_table_lookup(w->expected_files, c->name);
    g_autofree char *in_base = in ? g_path_get_basename(in) : NULL;
    g_autofree char *ex_base = ex ? g_path_get_basename(ex) : NULL;
    g_autofree char *in_text = in ? g_strdup_printf("input: %s", in_base)
                                  : g_strdup("input: random (seed 1)");
    GtkWidget *il = small_label(in_text, in == NULL);
    if (in)
      gtk_widget_set_tooltip_text(il, in);
    gtk_box_append(GTK_BOX(left), il);
    if (ex) {
      g_autofree char *ex_text = g_strdup_printf("expected: %s", ex_base);
      GtkWidget *el = small_label(ex_text, FALSE);
      gtk_widget_set_tooltip_text(el, ex);
      gtk_box_append(GTK_BOX(left), el);
    }
    gtk_grid_attach(w->inputs_grid, left, 0, (int)i, 1, 1);
    gtk_grid_attach(w->inputs_grid,
                    argument_button(w, "Input\u2026",
                                    "Read this argument from a tensor file "
                                    "(.pb or .npy)",
                                    c->name, FALSE, G_CALLBACK(choose_tensor)),
                    1, (int)i, 1, 1);
    gtk_grid_attach(w->inputs_grid,
                    argument_button(w, "Expected\u2026",
                                    "Compare this argument after the run with "
                                    "a tensor file (.pb or .npy)",
                                    c->name, TRUE, G_CALLBACK(choose_tensor)),
                    2, (int)i, 1, 1);
    GtkWidget *clr = argument_button(w, NULL, "Random values, no expectation",
                                     c->name, FALSE, G_CALLBACK(clear_tensor));
    gtk_button_set_icon_name(GTK_BUTTON(clr), "edit-clear-symbolic");
    gtk_widget_set_sensitive(clr, in || ex);
    gtk_grid_attach(w->inputs_grid, clr, 3, (int)i, 1, 1);
  }
  guint n_in = g_hash_table_size(w->input_files);
  guint n_ex = g_hash_table_size(w->expected_files);
  g_autofree char *sum =
      args->len == 0
          ? g_strdup("The program has no arguments.")
          : g_strdup_printf(
                "%u argument%s: %u from files, %u random (seed 1); %u "
                "expected output%s.",
                args->len, args->len == 1 ? "" : "s", n_in, args->len - n_in,
                n_ex, n_ex == 1 ? "" : "s");
  gtk_label_set_text(w->inputs_summary, sum);
}

const char *weir_window_get_input_file(WeirWindow *w, const char *name,
                                       gboolean expected) {
  return g_hash_table_lookup(expected ? w->expected_files : w->input_files,
                             name);
}

/* ---------------------------------------------------------- files */

static void add_recent(WeirWindow *w, const char *path);

static gboolean is_workspace(const char *path) {
  return g_str_has_suffix(path, ".weir");
}

static void ask_unsaved(WeirWindow *w, int pending, const char *path);

enum { PENDING_NONE, PENDING_CLOSE, PENDING_OPEN };

gboolean weir_window_open_path(WeirWindow *w, const char *path) {
  if (w->session && w->dirty) {
    ask_unsaved(w, PENDING_OPEN, path);
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
      show_error(w, NULL, error);
    else
      show_error(w, path, error);
    return FALSE;
  }
  end_preview(w);
  if (w->session) {
    weir_session_set_callbacks(w->session, NULL, NULL);
    weir_step_model_set_session(w->steps, NULL);
    weir_session_free(w->session);
  }
  w->session = s;
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
  hide_message(w);
  clear_inputs(w);
  refresh_program(w);
  refresh_inputs(w);
  set_dirty(w, FALSE);
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

static gboolean save_to(WeirWindow *w, const char *path) {
  g_autoptr(GError) error = NULL;
  if (!weir_workspace_save(w->session, path, &error)) {
    show_error(w, "save", error);
    return FALSE;
  }
  /* path may be w->workspace_path itself (Save to the known file) */
  char *copy = g_strdup(path);
  g_free(w->workspace_path);
  w->workspace_path = copy;
  set_dirty(w, FALSE);
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
  save_to(w, path);
}

static void action_save(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  if (!w->session)
    return;
  if (w->workspace_path) {
    save_to(w, w->workspace_path);
    return;
  }
  g_autofree char *name = suggested_name(w, ".weir");
  choose_path(w, "Save Workspace", GTK_FILE_CHOOSER_ACTION_SAVE, name,
              save_path);
}

static void action_save_as(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  g_autofree char *name = suggested_name(w, ".weir");
  choose_path(w, "Save Workspace As", GTK_FILE_CHOOSER_ACTION_SAVE, name,
              save_path);
}

static void action_save_to(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  save_to(user, g_variant_get_string(v, NULL));
}

static void export_recipe_path(WeirWindow *w, const char *path) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirRecipe) r = weir_session_export_recipe(w->session, &error);
  if (!r || !weir_recipe_save(r, path, &error)) {
    show_error(w, "export recipe", error);
    return;
  }
  g_autofree char *m =
      g_strdup_printf("Recipe of %u step%s written to %s", r->steps->len,
                      r->steps->len == 1 ? "" : "s", path);
  weir_window_show_message(w, FALSE, m);
}

static void action_export_recipe(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  WeirWindow *w = user;
  g_autofree char *name = suggested_name(w, ".recipe.json");
  choose_path(w, "Export Recipe", GTK_FILE_CHOOSER_ACTION_SAVE, name,
              export_recipe_path);
}

static void action_export_recipe_to(GSimpleAction *a, GVariant *v,
                                    gpointer user) {
  (void)a;
  export_recipe_path(user, g_variant_get_string(v, NULL));
}

static void apply_recipe_path(WeirWindow *w, const char *path) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirRecipe) r = weir_recipe_load(path, &error);
  if (!r) {
    show_error(w, NULL, error);
    return;
  }
  g_autoptr(WeirRecipeReport) rep = weir_recipe_report_new();
  if (!weir_recipe_apply_session(w->session, r, rep, &error)) {
    show_error(w, path, error);
    return;
  }
  g_autofree char *b0 = weir_figure_format(&rep->bytes_before, TRUE);
  g_autofree char *b1 = weir_figure_format(&rep->bytes_after, TRUE);
  g_autofree char *base = g_path_get_basename(path);
  g_autofree char *m = g_strdup_printf(
      "Recipe %s applied (%u step%s): bytes moved %s \u2192 %s", base,
      rep->steps->len, rep->steps->len == 1 ? "" : "s", b0, b1);
  weir_window_show_message(w, FALSE, m);
}

static void action_apply_recipe(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  choose_path(user, "Apply Recipe", GTK_FILE_CHOOSER_ACTION_OPEN, NULL,
              apply_recipe_path);
}

static void action_apply_recipe_file(GSimpleAction *a, GVariant *v,
                                     gpointer user) {
  (void)a;
  apply_recipe_path(user, g_variant_get_string(v, NULL));
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
    show_error(w, "export kernel", error);
    return;
  }
  g_autofree char *m = g_strdup_printf(
      "Kernel '%s' exported to %s (%u files): build with make, run ./harness",
      info.prefix, info.directory, info.files->len);
  weir_window_show_message(w, FALSE, m);
  weir_export_info_clear(&info);
}

static void action_export_kernel(GSimpleAction *a, GVariant *v, gpointer user) {
  (void)a;
  (void)v;
  choose_path(user, "Export Kernel to Folder",
              GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER, NULL, export_kernel_path);
}

static void action_export_kernel_to(GSimpleAction *a, GVariant *v,
                                    gpointer user) {
  (void)a;
  export_kernel_path(user, g_variant_get_string(v, NULL));
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
  if (pending == PENDING_CLOSE) {
    w->close_confirmed = TRUE;
    gtk_window_destroy(GTK_WINDOW(w));
  } else if (pending == PENDING_OPEN && path) {
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
  w->after_save = PENDING_NONE;
  if (save_to(w, path))
    proceed(w, pending, then);
}

void weir_window_confirm_respond(WeirWindow *w, WeirConfirmResponse r) {
  if (!w->confirm)
    return;
  int pending = w->pending;
  g_autofree char *path = g_steal_pointer(&w->pending_path);
  w->pending = PENDING_NONE;
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
      if (save_to(w, w->workspace_path))
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
  if (!w->confirm || pending == PENDING_CLOSE) {
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
      pending == PENDING_OPEN ? "opening another file" : "closing");
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

static gboolean weir_window_close_request(GtkWindow *win) {
  WeirWindow *w = WEIR_WINDOW(win);
  if (w->session && w->dirty && !w->close_confirmed) {
    ask_unsaved(w, PENDING_CLOSE, NULL);
    return TRUE;
  }
  return GTK_WINDOW_CLASS(weir_window_parent_class)->close_request(win);
}

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

/* ------------------------------------------------------------ GObject */

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

static void weir_window_dispose(GObject *o) {
  WeirWindow *w = WEIR_WINDOW(o);
  w->disposed = TRUE;
  end_confirm(w);
  g_clear_pointer(&w->pending_path, g_free);
  g_clear_pointer(&w->after_save_path, g_free);
  if (w->confirm_ref) {
    w->confirm_ref = FALSE;
    g_object_unref(w);
  }
  clear_inputs(w);
  if (w->run_cancellable)
    g_cancellable_cancel(w->run_cancellable);
  g_clear_object(&w->run_cancellable);
  if (w->scan_cancellable)
    g_cancellable_cancel(w->scan_cancellable);
  g_clear_object(&w->scan_cancellable);
  if (w->site_cancellable)
    g_cancellable_cancel(w->site_cancellable);
  g_clear_object(&w->site_cancellable);
  end_preview(w);
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
#undef BIND
}

static void on_legal_only(WeirWindow *w) {
  refresh_sites(w);
}

static void weir_window_init(WeirWindow *w) {
  gtk_widget_init_template(GTK_WIDGET(w));
  w->callbacks = (WeirSessionCallbacks){
      .changed = session_changed,
      .steps_changed = session_steps_changed,
      .step_updated = session_step_updated,
      .cursor_changed = session_cursor_changed,
  };
  g_action_map_add_action_entries(G_ACTION_MAP(w), win_entries,
                                  G_N_ELEMENTS(win_entries), w);
  w->param_editors = g_ptr_array_new();
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

  /* transformations, grouped by tier */
  w->tiers = g_list_store_new(WEIR_TYPE_ROW);
  w->transforms_tree =
      gtk_tree_list_model_new(G_LIST_MODEL(g_object_ref(w->tiers)), FALSE, TRUE,
                              tree_children, NULL, NULL);
  w->transforms_selection =
      gtk_single_selection_new(G_LIST_MODEL(g_object_ref(w->transforms_tree)));
  gtk_single_selection_set_autoselect(w->transforms_selection, FALSE);
  gtk_single_selection_set_can_unselect(w->transforms_selection, TRUE);
  gtk_list_view_set_model(w->transforms_list,
                          GTK_SELECTION_MODEL(w->transforms_selection));
  g_autoptr(GtkListItemFactory) tf = weir_row_factory_new(TRUE, NULL, NULL);
  gtk_list_view_set_factory(w->transforms_list, tf);
  g_signal_connect(w->transforms_selection, "notify::selected",
                   G_CALLBACK(on_transform_selected), w);

  /* sites */
  w->sites = g_list_store_new(WEIR_TYPE_ROW);
  w->sites_selection =
      gtk_single_selection_new(G_LIST_MODEL(g_object_ref(w->sites)));
  gtk_single_selection_set_autoselect(w->sites_selection, FALSE);
  gtk_single_selection_set_can_unselect(w->sites_selection, TRUE);
  gtk_list_view_set_model(w->sites_list,
                          GTK_SELECTION_MODEL(w->sites_selection));
  g_autoptr(GtkListItemFactory) sf =
      weir_row_factory_new(FALSE, on_site_hover, w);
  gtk_list_view_set_factory(w->sites_list, sf);
  g_signal_connect(w->sites_selection, "notify::selected",
                   G_CALLBACK(on_site_selected), w);
  g_signal_connect_swapped(w->legal_only_check, "toggled",
                           G_CALLBACK(on_legal_only), w);

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
  g_signal_connect(w->overlay_dropdown, "notify::selected",
                   G_CALLBACK(on_overlay_dropdown), w);

  /* search */
  g_object_bind_property(w->find_button, "active", w->search_bar,
                         "search-mode-enabled",
                         G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE);
  gtk_search_bar_connect_entry(w->search_bar, GTK_EDITABLE(w->search_entry));
  g_signal_connect(w->search_entry, "activate", G_CALLBACK(on_search_activate),
                   w);

  /* messages */
  g_signal_connect_swapped(w->toast_close, "clicked", G_CALLBACK(hide_message),
                           w);

  /* drag and drop of files */
  GtkDropTarget *drop =
      gtk_drop_target_new(GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);
  g_signal_connect(drop, "drop", G_CALLBACK(on_drop), w);
  gtk_widget_add_controller(GTK_WIDGET(w), GTK_EVENT_CONTROLLER(drop));

  w->side_width = 460;
  g_signal_connect(w->main_paned, "notify::position",
                   G_CALLBACK(on_paned_position), w);

  w->status_text = g_strdup("No program");
  update_title(w);
  update_actions(w);
}

WeirWindow *weir_window_new(GtkApplication *app) {
  return g_object_new(WEIR_TYPE_WINDOW, "application", app, NULL);
}

void weir_window_set_recent_menu(WeirWindow *w, GMenuModel *items) {
  g_menu_remove_all(w->recent_section);
  if (items)
    g_menu_append_section(w->recent_section, NULL, items);
}

/* ------------------------------------------------ private accessors */

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

GPtrArray *weir_window_list_transforms(WeirWindow *w) {
  GPtrArray *a = g_ptr_array_new();
  guint n = g_list_model_get_n_items(G_LIST_MODEL(w->tiers));
  for (guint i = 0; i < n; i++) {
    g_autoptr(WeirRow) tier = g_list_model_get_item(G_LIST_MODEL(w->tiers), i);
    guint m = g_list_model_get_n_items(G_LIST_MODEL(tier->children));
    for (guint k = 0; k < m; k++) {
      g_autoptr(WeirRow) r =
          g_list_model_get_item(G_LIST_MODEL(tier->children), k);
      g_ptr_array_add(a, r); /* the store keeps it alive */
    }
  }
  return a;
}

gboolean weir_window_select_transform(WeirWindow *w, const char *name) {
  GListModel *m = G_LIST_MODEL(w->transforms_tree);
  guint n = g_list_model_get_n_items(m);
  for (guint i = 0; i < n; i++) {
    g_autoptr(GtkTreeListRow) tr = g_list_model_get_item(m, i);
    g_autoptr(WeirRow) r = gtk_tree_list_row_get_item(tr);
    if (r->kind == WEIR_ROW_TIER)
      gtk_tree_list_row_set_expanded(tr, TRUE);
    if (r->kind == WEIR_ROW_TRANSFORM && g_str_equal(r->title, name)) {
      if (gtk_single_selection_get_selected(w->transforms_selection) == i)
        on_transform_selected(w->transforms_selection, NULL, w);
      else
        gtk_single_selection_set_selected(w->transforms_selection, i);
      gtk_widget_activate_action(GTK_WIDGET(w->transforms_list),
                                 "list.scroll-to-item", "u", i);
      return TRUE;
    }
    n = g_list_model_get_n_items(m); /* expanding adds rows */
  }
  return FALSE;
}

gboolean weir_window_select_site(WeirWindow *w, guint k) {
  if (k >= g_list_model_get_n_items(G_LIST_MODEL(w->sites)))
    return FALSE;
  gtk_single_selection_set_selected(w->sites_selection, k);
  return TRUE;
}

gboolean weir_window_select_history(WeirWindow *w, guint k) {
  if (k >= g_list_model_get_n_items(G_LIST_MODEL(w->steps)))
    return FALSE;
  gtk_single_selection_set_selected(w->history_selection, k);
  return TRUE;
}

gboolean weir_window_set_param(WeirWindow *w, const char *name,
                               const char *text) {
  for (guint i = 0; w->transform && i < w->param_editors->len; i++) {
    const WeirParamSpec *p = &w->transform->params[i];
    if (!g_str_equal(p->name, name))
      continue;
    GtkWidget *ed = g_ptr_array_index(w->param_editors, i);
    switch (p->type) {
    case WEIR_PARAM_INT:
    case WEIR_PARAM_FLOAT:
      gtk_spin_button_set_value(GTK_SPIN_BUTTON(ed),
                                g_ascii_strtod(text, NULL));
      break;
    case WEIR_PARAM_BOOL:
      gtk_check_button_set_active(GTK_CHECK_BUTTON(ed),
                                  g_str_equal(text, "true"));
      break;
    case WEIR_PARAM_CHOICE: {
      GListModel *m = gtk_drop_down_get_model(GTK_DROP_DOWN(ed));
      for (guint k = 0; k < g_list_model_get_n_items(m); k++) {
        g_autoptr(GtkStringObject) s = g_list_model_get_item(m, k);
        if (g_str_equal(gtk_string_object_get_string(s), text)) {
          gtk_drop_down_set_selected(GTK_DROP_DOWN(ed), k);
          return TRUE;
        }
      }
      return FALSE;
    }
    default:
      gtk_editable_set_text(GTK_EDITABLE(ed), text);
      g_signal_emit_by_name(ed, "activate");
      break;
    }
    return TRUE;
  }
  return FALSE;
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

gboolean weir_window_is_scanning(WeirWindow *w) {
  return w->scan_cancellable != NULL || w->site_cancellable != NULL;
}

double weir_window_last_apply_ms(WeirWindow *w) {
  return w->last_apply_ms;
}
