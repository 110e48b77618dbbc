/* weir-window-transforms.c — the window's transformations panel: which
 * transformations apply at the graph's selection (grouped by tier), the
 * parameter editors of the selected one, its sites with their legality,
 * and the commands on them (preview, apply, apply to all sites).
 *
 * Enumerating every transformation's sites and checking their legality is
 * slow on large programs, so both lists are filled by scans in GTask
 * workers on copies of the program; a newer scan cancels an older one and
 * results of a cancelled scan are dropped.  w->syncing is set while the
 * lists are changed from code, so that their selection handlers do not
 * start new scans.
 */
#include <string.h>

#include "weir-window-private.h"

/* ----------------------------------------------------- transformations */

static void highlight_site(WeirWindow *w, const WeirRow *r);
static void on_transform_selected(GtkSingleSelection *sel, GParamSpec *ps,
                                  WeirWindow *w);

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
    weir_window_refresh_sites(w);
  }
  if (!d->items->len)
    gtk_label_set_text(w->transform_description,
                       "No transformation applies here.");
}

void weir_window_refresh_transforms(WeirWindow *w) {
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
  weir_window_refresh_sites(w);
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
    weir_window_refresh_sites(w);
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
  highlight_site(w, weir_window_selected_site(w));
  weir_window_update_actions(w);
}

void weir_window_refresh_sites(WeirWindow *w) {
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
    weir_window_update_actions(w);
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
  weir_window_update_actions(w);
}

WeirRow *weir_window_selected_site(WeirWindow *w) {
  return gtk_single_selection_get_selected_item(w->sites_selection);
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
  highlight_site(w, row ? row : weir_window_selected_site(w));
}

static void on_site_selected(GtkSingleSelection *sel, GParamSpec *ps,
                             WeirWindow *w) {
  (void)sel;
  (void)ps;
  if (w->syncing)
    return;
  highlight_site(w, weir_window_selected_site(w));
  weir_window_update_actions(w);
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
  weir_window_refresh_sites(w);
}

/* ------------------------------------------------------------ preview */

void weir_window_end_preview(WeirWindow *w) {
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
  g_autofree char *x = weir_window_quantity_text(a, bytes);
  g_autofree char *y = weir_window_quantity_text(b, bytes);
  if (a->known && b->known && a->value > 0)
    return g_strdup_printf("%s \u2192 %s (%+.2f%%)", x, y,
                           100.0 * (double)(b->value - a->value) /
                               (double)a->value);
  return g_strdup_printf("%s \u2192 %s", x, y);
}

void weir_window_preview(WeirWindow *w) {
  WeirRow *site = weir_window_selected_site(w);
  if (!w->session || !w->transform || !site)
    return;
  g_auto(GStrv) params = current_params(w);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirParams) p =
      weir_params_parse(w->transform, (const char *const *)params, &error);
  if (!p) {
    weir_window_show_error(w, w->transform->name, error);
    return;
  }
  g_autoptr(WeirGraph) copy = weir_graph_copy(weir_session_current(w->session));
  WeirApplyReport rep = {0};
  if (!weir_transform_apply(copy, w->transform, &site->site, p,
                            weir_session_bindings(w->session), &rep, &error)) {
    weir_apply_report_clear(&rep);
    weir_window_show_error(w, w->transform->name, error);
    return;
  }
  weir_window_end_preview(w);
  g_autofree char *bytes =
      delta_text(&rep.bytes_before, &rep.bytes_after, TRUE);
  g_autofree char *flops =
      delta_text(&rep.flops_before, &rep.flops_after, FALSE);
  w->preview_text = g_strdup_printf(
      "Preview of %s at %s \u2014 logical volume %s \u00b7 FLOPs %s",
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
  weir_window_update_actions(w);
}

void weir_window_discard_preview(WeirWindow *w) {
  if (!w->previewing)
    return;
  weir_window_end_preview(w);
  weir_graph_view_set_program(w->graph_view, weir_session_current(w->session),
                              weir_session_bindings(w->session));
  weir_window_update_actions(w);
}

/* --------------------------------------------------------------- apply */

void weir_window_apply(WeirWindow *w) {
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
    WeirRow *r = weir_window_selected_site(w);
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
    weir_window_show_error(w, t->name, error);
    return;
  }
  w->last_apply_ms = (double)(g_get_monotonic_time() - t0) / 1e3;
  weir_window_hide_message(w);
}

/* Applies the selected transformation at every legal site, through a
 * one-step recipe ("all" sites), so each application is a history step. */
void weir_window_apply_all(WeirWindow *w) {
  if (!w->session || !w->transform)
    return;
  g_auto(GStrv) params = current_params(w);
  /* the panel is refilled while the steps are applied */
  g_autofree char *name = g_strdup(w->transform->name);
  /* a one-step recipe: every candidate site */
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirRecipe) r = weir_recipe_new("<apply to all sites>");
  if (!weir_recipe_add_step(r, name, (const char *const *)params, &error)) {
    weir_window_show_error(w, name, error);
    return;
  }
  g_autoptr(WeirRecipeReport) rep = weir_recipe_report_new();
  if (!weir_recipe_apply_session(w->session, r, rep, &error)) {
    weir_window_show_error(w, name, error);
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
      g_strdup_printf("%s applied at %u site%s: logical volume %s \u2192 %s",
                      name, applied, applied == 1 ? "" : "s", b0, b1);
  weir_window_show_message(w, FALSE, m);
}

/* ------------------------------------------------------------ for tests */

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

gboolean weir_window_is_scanning(WeirWindow *w) {
  return w->scan_cancellable != NULL || w->site_cancellable != NULL;
}

static void on_legal_only(WeirWindow *w) {
  weir_window_refresh_sites(w);
}

void weir_window_transforms_init(WeirWindow *w) {
  w->param_editors = g_ptr_array_new();

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
}
