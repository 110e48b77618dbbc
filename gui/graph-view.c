/* graph-view.c: WeirGraphView, the graph canvas (weir-graph-view.h).
 *
 * Pipeline.  set_program() keeps a deep copy of the program.  A layout
 * job (another copy, the bindings, the set of collapsed scopes) runs in a
 * GTask worker thread: it computes the analysis figures and the labels,
 * builds a cgraph graph, runs Graphviz "dot" on it while holding the one
 * process-wide Graphviz lock, and reads the positions back into a
 * ViewLayout made of plain structs.  The main thread installs that layout
 * and draws it with cairo from snapshot(); nothing of Graphviz outlives
 * the worker.
 *
 * Coordinates.  Layout space is in points with y pointing down (dot's y
 * is flipped when read back).  A layout point p is on screen at
 * (p - origin) * zoom, origin being the layout point at the widget's
 * top-left corner.
 *
 * Elements.  Every drawn node is a node of the program (kind NODE, its
 * id), or a collapsed map scope drawn as one box (kind NODE, the id of
 * its entry).  Drawn edges are memlets (kind EDGE) and, apart from them,
 * the transitions between states (not counted by n_drawn_edges).
 * Clusters are the states (entry 0) and the expanded map scopes.
 *
 * Files.  This file is the widget (view control, selection, layouts,
 * properties); graph-view-private.h lists the others (layout worker,
 * drawing, input) and the parts they share.
 */
#include <math.h>
#include <string.h>

#include "graph-view-private.h"

static gpointer weir_element_copy_(gpointer e) {
  return g_memdup2(e, sizeof(WeirElement));
}

G_DEFINE_BOXED_TYPE(WeirElement, weir_element, weir_element_copy_, g_free)

G_DEFINE_TYPE(WeirGraphView, weir_graph_view, GTK_TYPE_WIDGET)

enum { SIG_SELECTION_CHANGED, SIG_LAYOUT_DONE, SIG_ACTIVATE, N_SIGNALS };
static guint signals[N_SIGNALS];

enum { PROP_0, PROP_ZOOM, PROP_OVERLAY, PROP_BUSY, N_PROPS };
static GParamSpec *props[N_PROPS];

/* ------------------------------------------------------ view control */

static void clamp_zoom(double *z) {
  *z = CLAMP(*z, ZOOM_MIN, ZOOM_MAX);
}

/* Zooms to z keeping the layout point under screen point (sx, sy). */
void weir_graph_view_zoom_at(WeirGraphView *v, double z, double sx, double sy) {
  clamp_zoom(&z);
  double lx = v->ox + sx / v->zoom, ly = v->oy + sy / v->zoom;
  v->zoom = z;
  g_object_notify_by_pspec(G_OBJECT(v), props[PROP_ZOOM]);
  v->ox = lx - sx / z;
  v->oy = ly - sy / z;
  gtk_widget_queue_draw(GTK_WIDGET(v));
}

/* Shows layout rectangle (x0, y0)-(x1, y1) whole and centred, at most at
 * zoom max_zoom. */
static void fit_rect(WeirGraphView *v, double x0, double y0, double x1,
                     double y1, double max_zoom) {
  double w = gtk_widget_get_width(GTK_WIDGET(v));
  double h = gtk_widget_get_height(GTK_WIDGET(v));
  if (w <= 0 || h <= 0)
    return;
  double rw = MAX(x1 - x0, 1.0), rh = MAX(y1 - y0, 1.0);
  double z = MIN((w - 2 * FIT_MARGIN) / rw, (h - 2 * FIT_MARGIN) / rh);
  z = MIN(z, max_zoom);
  clamp_zoom(&z);
  v->zoom = z;
  g_object_notify_by_pspec(G_OBJECT(v), props[PROP_ZOOM]);
  v->ox = (x0 + x1) / 2 - w / 2 / z;
  v->oy = (y0 + y1) / 2 - h / 2 / z;
  gtk_widget_queue_draw(GTK_WIDGET(v));
}

void weir_graph_view_center_on(WeirGraphView *v, double x, double y) {
  double w = gtk_widget_get_width(GTK_WIDGET(v));
  double h = gtk_widget_get_height(GTK_WIDGET(v));
  v->ox = x - w / 2 / v->zoom;
  v->oy = y - h / 2 / v->zoom;
  gtk_widget_queue_draw(GTK_WIDGET(v));
}

void weir_graph_view_zoom_fit(WeirGraphView *v) {
  g_return_if_fail(WEIR_IS_GRAPH_VIEW(v));
  if (!v->layout)
    return;
  if (gtk_widget_get_width(GTK_WIDGET(v)) <= 0) {
    v->fit_pending = TRUE;
    return;
  }
  fit_rect(v, 0, 0, v->layout->width, v->layout->height, FIT_ZOOM_MAX);
}

void weir_graph_view_set_zoom(WeirGraphView *v, double zoom) {
  g_return_if_fail(WEIR_IS_GRAPH_VIEW(v));
  weir_graph_view_zoom_at(v, zoom, gtk_widget_get_width(GTK_WIDGET(v)) / 2.0,
                          gtk_widget_get_height(GTK_WIDGET(v)) / 2.0);
}

double weir_graph_view_get_zoom(WeirGraphView *v) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), 1.0);
  return v->zoom;
}

void weir_graph_view_zoom_to_selection(WeirGraphView *v) {
  g_return_if_fail(WEIR_IS_GRAPH_VIEW(v));
  double r[4];
  if (!weir_view_layout_element_rect(v->layout, &v->selection, r))
    return;
  /* A node alone is shown at a readable zoom, not blown up to fill. */
  double max = v->selection.kind == WEIR_ELEMENT_NODE ? 1.5 : FIT_ZOOM_MAX;
  /* context around a node */
  if (v->selection.kind == WEIR_ELEMENT_NODE) {
    r[0] -= 80, r[1] -= 60, r[2] += 80, r[3] += 60;
  }
  fit_rect(v, r[0], r[1], r[2], r[3], max);
}

/* -------------------------------------------------------- selection */

static gboolean element_exists(const WeirGraph *g, const WeirElement *e) {
  if (!g || e->kind == WEIR_ELEMENT_NONE)
    return FALSE;
  WeirState *s = weir_graph_state(g, e->state);
  if (!s)
    return FALSE;
  switch (e->kind) {
  case WEIR_ELEMENT_STATE:
    return TRUE;
  case WEIR_ELEMENT_NODE:
    return weir_state_node(s, e->id) != NULL;
  case WEIR_ELEMENT_EDGE:
    return weir_state_memlet(s, e->id) != NULL;
  default:
    return FALSE;
  }
}

static gboolean element_equal(const WeirElement *a, const WeirElement *b) {
  if (a->kind != b->kind)
    return FALSE;
  if (a->kind == WEIR_ELEMENT_NONE)
    return TRUE;
  return a->state == b->state &&
         (a->kind == WEIR_ELEMENT_STATE || a->id == b->id);
}

void weir_graph_view_select(WeirGraphView *v, const WeirElement *e) {
  g_return_if_fail(WEIR_IS_GRAPH_VIEW(v));
  WeirElement next = {WEIR_ELEMENT_NONE, 0, 0};
  if (e && e->kind != WEIR_ELEMENT_NONE) {
    next = *e;
    if (next.kind == WEIR_ELEMENT_STATE)
      next.id = 0;
  }
  if (element_equal(&next, &v->selection))
    return;
  v->selection = next;
  gtk_widget_queue_draw(GTK_WIDGET(v));
  g_signal_emit(v, signals[SIG_SELECTION_CHANGED], 0);
}

WeirElement weir_graph_view_get_selection(WeirGraphView *v) {
  WeirElement none = {WEIR_ELEMENT_NONE, 0, 0};
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), none);
  return v->selection;
}

void weir_graph_view_highlight(WeirGraphView *v, guint state,
                               const guint *nodes, guint n_nodes) {
  g_return_if_fail(WEIR_IS_GRAPH_VIEW(v));
  g_hash_table_remove_all(v->hl_nodes);
  v->hl_state = state;
  for (guint i = 0; nodes && i < n_nodes; i++)
    g_hash_table_add(v->hl_nodes, GUINT_TO_POINTER(nodes[i]));
  gtk_widget_queue_draw(GTK_WIDGET(v));
}

gboolean weir_graph_view_search(WeirGraphView *v, const char *text) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), FALSE);
  if (!v->layout || !text || !*text)
    return FALSE;
  g_autofree char *needle = g_utf8_casefold(text, -1);
  GArray *items = v->layout->search;
  guint start = 0;
  if (v->selection.kind == WEIR_ELEMENT_NODE)
    for (guint i = 0; i < items->len; i++) {
      const SearchItem *it = &g_array_index(items, SearchItem, i);
      if (it->state == v->selection.state && it->id == v->selection.id)
        start = i + 1;
    }
  for (guint k = 0; k < items->len; k++) {
    const SearchItem *it =
        &g_array_index(items, SearchItem, (start + k) % items->len);
    if (!strstr(it->folded, needle))
      continue;
    WeirElement e = {WEIR_ELEMENT_NODE, it->state, it->id};
    weir_graph_view_select(v, &e);
    /* a node inside a collapsed scope is shown by the scope's box */
    const VNode *n =
        weir_view_layout_find_node(v->layout, it->state, it->id, NULL);
    if (n) {
      if (v->zoom < 0.6)
        weir_graph_view_set_zoom(v, 1.0);
      weir_graph_view_center_on(v, n->x, n->y);
    }
    return TRUE;
  }
  return FALSE;
}

/* ----------------------------------------------------------- layouts */

static void start_layout(WeirGraphView *v);

static void layout_done(GObject *source, GAsyncResult *res,
                        gpointer data G_GNUC_UNUSED) {
  WeirGraphView *v = WEIR_GRAPH_VIEW(source);
  g_autoptr(GError) error = NULL;
  ViewLayout *l = g_task_propagate_pointer(G_TASK(res), &error);
  if (g_cancellable_is_cancelled(v->cancel)) {
    weir_view_layout_free(l); /* the widget is being disposed */
    return;
  }
  v->busy = FALSE;
  g_object_notify_by_pspec(G_OBJECT(v), props[PROP_BUSY]);
  g_clear_pointer(&v->layout_error, g_free);
  if (l && v->pending && v->layout && v->layout->provisional) {
    /* a newer program came: its provisional picture stays until its own
     * layout is done */
    weir_view_layout_free(l);
  } else if (l) {
    weir_view_layout_free(v->layout);
    v->layout = l;
    if (v->fit_pending)
      weir_graph_view_zoom_fit(v);
  } else {
    weir_view_layout_free(v->layout);
    v->layout = NULL;
    v->layout_error = g_strdup(error->message);
  }
  gtk_widget_queue_draw(GTK_WIDGET(v));
  if (v->pending) {
    start_layout(v);
    return;
  }
  g_signal_emit(v, signals[SIG_LAYOUT_DONE], 0);
}

static void start_layout(WeirGraphView *v) {
  if (v->busy) {
    v->pending = TRUE; /* started again when the running one ends */
    return;
  }
  v->pending = FALSE;
  if (!v->program) {
    weir_view_layout_free(v->layout);
    v->layout = NULL;
    gtk_widget_queue_draw(GTK_WIDGET(v));
    g_signal_emit(v, signals[SIG_LAYOUT_DONE], 0);
    return;
  }
  LayoutJob *job = g_new0(LayoutJob, 1);
  job->program = weir_graph_copy(v->program);
  job->bindings = weir_view_bindings_copy(v->bindings);
  job->collapsed = weir_view_key_set_copy(v->collapsed);
  v->busy = TRUE;
  g_object_notify_by_pspec(G_OBJECT(v), props[PROP_BUSY]);
  GTask *task = g_task_new(v, v->cancel, layout_done, NULL);
  g_task_set_source_tag(task, start_layout);
  g_task_set_task_data(task, job, weir_view_layout_job_free);
  g_task_run_in_thread(task, weir_view_layout_thread);
  g_object_unref(task);
  gtk_widget_queue_draw(GTK_WIDGET(v));
}

void weir_graph_view_set_program(WeirGraphView *v, const WeirGraph *program,
                                 GHashTable *bindings) {
  g_return_if_fail(WEIR_IS_GRAPH_VIEW(v));
  g_clear_pointer(&v->program, weir_graph_free);
  g_clear_pointer(&v->bindings, g_hash_table_unref);
  if (program) {
    v->program = weir_graph_copy(program);
    v->bindings = weir_view_bindings_copy(bindings);
    /* a different program (not an edit of the one shown) is fitted; an
     * edit is shown at once from the previous picture while dot runs */
    if (!v->layout || g_strcmp0(v->shown_name, program->name) != 0)
      v->fit_pending = TRUE;
    else if (g_strcmp0(v->layout->name, program->name) == 0) {
      /* the picture on screen is of a program of this name (not the one
       * of another program, still shown while this name's first layout
       * runs) */
      ViewLayout *l = weir_view_layout_provisional(v->layout, v->program,
                                                   v->bindings, v->collapsed);
      v->last_provisional_ms = l->layout_ms;
      weir_view_layout_free(v->layout);
      v->layout = l;
      gtk_widget_queue_draw(GTK_WIDGET(v));
    }
    g_free(v->shown_name);
    v->shown_name = g_strdup(program->name);
  }
  if (v->selection.kind != WEIR_ELEMENT_NONE &&
      !element_exists(v->program, &v->selection))
    weir_graph_view_select(v, NULL);
  start_layout(v);
}

gboolean weir_graph_view_is_busy(WeirGraphView *v) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), FALSE);
  return v->busy;
}

gboolean weir_graph_view_is_provisional(WeirGraphView *v) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), FALSE);
  return v->layout && v->layout->provisional;
}

double weir_graph_view_last_provisional_ms(WeirGraphView *v) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), 0.0);
  return v->last_provisional_ms;
}

void weir_graph_view_set_overlay(WeirGraphView *v, WeirOverlay overlay) {
  g_return_if_fail(WEIR_IS_GRAPH_VIEW(v));
  g_return_if_fail(overlay <= WEIR_OVERLAY_TIME);
  if (v->overlay == overlay)
    return;
  v->overlay = overlay;
  g_object_notify_by_pspec(G_OBJECT(v), props[PROP_OVERLAY]);
  gtk_widget_queue_draw(GTK_WIDGET(v));
}

void weir_graph_view_set_times(WeirGraphView *v, const guint *states,
                               const guint *nodes, const double *seconds,
                               guint n) {
  g_return_if_fail(WEIR_IS_GRAPH_VIEW(v));
  g_return_if_fail(n == 0 || (states && nodes && seconds));
  g_hash_table_remove_all(v->times);
  for (guint i = 0; i < n; i++) {
    guint64 k = weir_view_scope_key(states[i], nodes[i]);
    double *t = g_hash_table_lookup(v->times, &k);
    if (!t) {
      t = g_new0(double, 1);
      g_hash_table_insert(v->times, g_memdup2(&k, sizeof k), t);
    }
    *t += seconds[i];
  }
  gtk_widget_queue_draw(GTK_WIDGET(v));
}

gboolean weir_graph_view_get_time(WeirGraphView *v, guint state, guint node,
                                  double *seconds) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), FALSE);
  guint64 k = weir_view_scope_key(state, node);
  const double *t = g_hash_table_lookup(v->times, &k);
  if (t && seconds)
    *seconds = *t;
  return t != NULL;
}

WeirOverlay weir_graph_view_get_overlay(WeirGraphView *v) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), WEIR_OVERLAY_NONE);
  return v->overlay;
}

void weir_graph_view_set_collapsed(WeirGraphView *v, guint state, guint entry,
                                   gboolean collapsed) {
  g_return_if_fail(WEIR_IS_GRAPH_VIEW(v));
  guint64 k = weir_view_scope_key(state, entry);
  if (collapsed == g_hash_table_contains(v->collapsed, &k))
    return;
  if (collapsed) {
    WeirState *s = v->program ? weir_graph_state(v->program, state) : NULL;
    WeirNode *n = s ? weir_state_node(s, entry) : NULL;
    if (!n || n->kind != WEIR_NODE_MAP_ENTRY)
      return; /* not a map scope of the program */
    weir_view_key_set_add(v->collapsed, k);
  } else {
    g_hash_table_remove(v->collapsed, &k);
  }
  start_layout(v);
}

gboolean weir_graph_view_get_collapsed(WeirGraphView *v, guint state,
                                       guint entry) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), FALSE);
  guint64 k = weir_view_scope_key(state, entry);
  return g_hash_table_contains(v->collapsed, &k);
}

guint weir_graph_view_n_drawn_nodes(WeirGraphView *v) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), 0);
  return v->layout ? v->layout->n_nodes : 0;
}

guint weir_graph_view_n_drawn_edges(WeirGraphView *v) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), 0);
  return v->layout ? v->layout->n_edges : 0;
}

double weir_graph_view_last_layout_ms(WeirGraphView *v) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), 0);
  return v->layout ? v->layout->layout_ms : 0;
}

double weir_graph_view_last_dot_ms(WeirGraphView *v) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), 0);
  return v->layout ? v->layout->dot_ms : 0;
}

double weir_graph_view_last_draw_ms(WeirGraphView *v) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), 0);
  return v->last_draw_ms;
}

/* ------------------------------------------------------- GObject */

static void weir_graph_view_size_allocate(GtkWidget *widget, int width,
                                          int height, int baseline) {
  GTK_WIDGET_CLASS(weir_graph_view_parent_class)
      ->size_allocate(widget, width, height, baseline);
  WeirGraphView *v = WEIR_GRAPH_VIEW(widget);
  if (v->fit_pending && v->layout && width > 0 && height > 0) {
    v->fit_pending = FALSE;
    weir_graph_view_zoom_fit(v);
  }
}

static void weir_graph_view_measure(GtkWidget *widget G_GNUC_UNUSED,
                                    GtkOrientation o,
                                    int for_size G_GNUC_UNUSED, int *min,
                                    int *nat, int *min_base, int *nat_base) {
  *min = 100;
  *nat = o == GTK_ORIENTATION_HORIZONTAL ? 640 : 480;
  *min_base = *nat_base = -1;
}

static void weir_graph_view_css_changed(GtkWidget *widget,
                                        GtkCssStyleChange *change) {
  GTK_WIDGET_CLASS(weir_graph_view_parent_class)->css_changed(widget, change);
  gtk_widget_queue_draw(widget); /* the palette follows the text colour */
}

static void weir_graph_view_dispose(GObject *object) {
  WeirGraphView *v = WEIR_GRAPH_VIEW(object);
  g_cancellable_cancel(v->cancel);
  G_OBJECT_CLASS(weir_graph_view_parent_class)->dispose(object);
}

static void weir_graph_view_finalize(GObject *object) {
  WeirGraphView *v = WEIR_GRAPH_VIEW(object);
  g_clear_object(&v->cancel);
  g_clear_pointer(&v->program, weir_graph_free);
  g_clear_pointer(&v->bindings, g_hash_table_unref);
  g_clear_pointer(&v->collapsed, g_hash_table_unref);
  g_clear_pointer(&v->hl_nodes, g_hash_table_unref);
  g_clear_pointer(&v->times, g_hash_table_unref);
  g_clear_pointer(&v->layout, weir_view_layout_free);
  g_free(v->layout_error);
  g_free(v->shown_name);
  G_OBJECT_CLASS(weir_graph_view_parent_class)->finalize(object);
}

static void weir_graph_view_get_property(GObject *object, guint id,
                                         GValue *value, GParamSpec *pspec) {
  WeirGraphView *v = WEIR_GRAPH_VIEW(object);
  switch (id) {
  case PROP_ZOOM:
    g_value_set_double(value, v->zoom);
    break;
  case PROP_OVERLAY:
    g_value_set_uint(value, v->overlay);
    break;
  case PROP_BUSY:
    g_value_set_boolean(value, v->busy);
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
  }
}

static void weir_graph_view_set_property(GObject *object, guint id,
                                         const GValue *value,
                                         GParamSpec *pspec) {
  WeirGraphView *v = WEIR_GRAPH_VIEW(object);
  switch (id) {
  case PROP_ZOOM:
    weir_graph_view_set_zoom(v, g_value_get_double(value));
    break;
  case PROP_OVERLAY:
    weir_graph_view_set_overlay(v, (WeirOverlay)g_value_get_uint(value));
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, id, pspec);
  }
}

static void weir_graph_view_class_init(WeirGraphViewClass *klass) {
  GObjectClass *oc = G_OBJECT_CLASS(klass);
  GtkWidgetClass *wc = GTK_WIDGET_CLASS(klass);
  oc->dispose = weir_graph_view_dispose;
  oc->finalize = weir_graph_view_finalize;
  oc->get_property = weir_graph_view_get_property;
  oc->set_property = weir_graph_view_set_property;
  props[PROP_ZOOM] = g_param_spec_double(
      "zoom", NULL, NULL, ZOOM_MIN, ZOOM_MAX, 1.0,
      G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  props[PROP_OVERLAY] = g_param_spec_uint(
      "overlay", NULL, NULL, WEIR_OVERLAY_NONE, WEIR_OVERLAY_TIME,
      WEIR_OVERLAY_NONE,
      G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  props[PROP_BUSY] = g_param_spec_boolean(
      "busy", NULL, NULL, FALSE, G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties(oc, N_PROPS, props);
  wc->snapshot = weir_graph_view_snapshot;
  wc->size_allocate = weir_graph_view_size_allocate;
  wc->measure = weir_graph_view_measure;
  wc->css_changed = weir_graph_view_css_changed;
  gtk_widget_class_set_css_name(wc, "weirgraphview");
  signals[SIG_SELECTION_CHANGED] =
      g_signal_new("selection-changed", G_TYPE_FROM_CLASS(klass),
                   G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  signals[SIG_LAYOUT_DONE] =
      g_signal_new("layout-done", G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST,
                   0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  signals[SIG_ACTIVATE] =
      g_signal_new("activate-element", G_TYPE_FROM_CLASS(klass),
                   G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 1,
                   WEIR_TYPE_ELEMENT | G_SIGNAL_TYPE_STATIC_SCOPE);
}

static void weir_graph_view_init(WeirGraphView *v) {
  GtkWidget *w = GTK_WIDGET(v);
  v->zoom = 1.0;
  v->cancel = g_cancellable_new();
  v->collapsed = weir_view_key_set_new();
  v->hl_nodes = g_hash_table_new(g_direct_hash, g_direct_equal);
  v->times = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
  gtk_widget_set_focusable(w, TRUE);
  gtk_widget_set_overflow(w, GTK_OVERFLOW_HIDDEN);
  weir_graph_view_input_init(v);
}

void weir_graph_view_emit_activate(WeirGraphView *v, WeirElement *e) {
  g_signal_emit(v, signals[SIG_ACTIVATE], 0, e);
}

GtkWidget *weir_graph_view_new(void) {
  return g_object_new(WEIR_TYPE_GRAPH_VIEW, NULL);
}

gboolean weir_graph_view_save_png(WeirGraphView *v, const char *path,
                                  GError **error) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), FALSE);
  GtkWidget *w = GTK_WIDGET(v);
  int width = gtk_widget_get_width(w), height = gtk_widget_get_height(w);
  GtkNative *native = gtk_widget_get_native(w);
  GskRenderer *renderer = native ? gtk_native_get_renderer(native) : NULL;
  if (!renderer || width <= 0 || height <= 0) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                "%s: the graph view is not on screen yet", path);
    return FALSE;
  }
  GtkSnapshot *snap = gtk_snapshot_new();
  weir_graph_view_snapshot(w, snap);
  GskRenderNode *node = gtk_snapshot_free_to_node(snap);
  if (!node) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: nothing to render",
                path);
    return FALSE;
  }
  GdkTexture *tex = gsk_renderer_render_texture(
      renderer, node, &GRAPHENE_RECT_INIT(0, 0, width, height));
  gsk_render_node_unref(node);
  gboolean ok = gdk_texture_save_to_png(tex, path);
  g_object_unref(tex);
  if (!ok)
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                "%s: could not write the PNG file", path);
  return ok;
}
