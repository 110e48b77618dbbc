/* graph-view-input.c — what WeirGraphView does with the pointer and the
 * keyboard (graph-view-private.h): hit tests on the picture, tooltips,
 * clicks (select, double click: activate-element, the scope toggles),
 * dragging (pan, or the minimap's frame), wheel and pinch zoom, keys.
 */
#include <math.h>
#include <string.h>

#include "graph-view-private.h"

/* --------------------------------------------------------- hit tests */

static double dist_to_segment(double px, double py, double ax, double ay,
                              double bx, double by) {
  double dx = bx - ax, dy = by - ay, len2 = dx * dx + dy * dy;
  double t = len2 > 0 ? ((px - ax) * dx + (py - ay) * dy) / len2 : 0;
  t = CLAMP(t, 0.0, 1.0);
  return hypot(px - (ax + t * dx), py - (ay + t * dy));
}

/* Distance from (px, py) to the spline of e, sampled. */
static double dist_to_edge(const VEdge *e, double px, double py) {
  double best = G_MAXDOUBLE;
  for (guint i = 0; i + 3 < e->n_pts; i += 3) {
    const double *p = &e->pts[2 * i];
    double lx = p[0], ly = p[1];
    for (int k = 1; k <= 12; k++) {
      double t = k / 12.0, u = 1 - t;
      double x = u * u * u * p[0] + 3 * u * u * t * p[2] +
                 3 * u * t * t * p[4] + t * t * t * p[6];
      double y = u * u * u * p[1] + 3 * u * u * t * p[3] +
                 3 * u * t * t * p[5] + t * t * t * p[7];
      best = MIN(best, dist_to_segment(px, py, lx, ly, x, y));
      lx = x;
      ly = y;
    }
  }
  if (e->arrow)
    best = MIN(best,
               dist_to_segment(px, py, e->pts[2 * (e->n_pts - 1)],
                               e->pts[2 * (e->n_pts - 1) + 1], e->ax, e->ay));
  return best;
}

typedef enum { HIT_NONE, HIT_ELEMENT, HIT_TOGGLE } HitKind;

/* What is at screen point (sx, sy). */
static HitKind hit_test(WeirGraphView *v, double sx, double sy,
                        WeirElement *out) {
  const ViewLayout *l = v->layout;
  *out = (WeirElement){WEIR_ELEMENT_NONE, 0, 0};
  if (!l)
    return HIT_NONE;
  double px = v->ox + sx / v->zoom, py = v->oy + sy / v->zoom;
  for (guint i = l->nodes->len; i-- > 0;) {
    const VNode *n = &g_array_index(l->nodes, VNode, i);
    if (n->shape == SHAPE_EMPTY || fabs(px - n->x) > n->w / 2 ||
        fabs(py - n->y) > n->h / 2)
      continue;
    *out = (WeirElement){WEIR_ELEMENT_NODE, n->state, n->id};
    double tx = n->x + n->w / 2 - TOGGLE_SIZE - 3, ty = n->y - n->h / 2 + 3;
    if (n->shape == SHAPE_COLLAPSED && px >= tx - 2 &&
        px <= tx + TOGGLE_SIZE + 2 && py >= ty - 2 &&
        py <= ty + TOGGLE_SIZE + 2)
      return HIT_TOGGLE;
    return HIT_ELEMENT;
  }
  double tol = 5.0 / v->zoom;
  double best = tol;
  for (guint i = 0; i < l->edges->len; i++) {
    const VEdge *e = &g_array_index(l->edges, VEdge, i);
    if (e->transition || px < e->x0 - tol || px > e->x1 + tol ||
        py < e->y0 - tol || py > e->y1 + tol)
      continue;
    double dd = dist_to_edge(e, px, py);
    /* the label belongs to its edge too */
    if (e->label && *e->label && fabs(px - e->lx) < 30 &&
        fabs(py - e->ly) < EDGE_FONT)
      dd = MIN(dd, tol * 0.9);
    if (dd < best) {
      best = dd;
      *out = (WeirElement){WEIR_ELEMENT_EDGE, e->state, e->id};
    }
  }
  if (out->kind != WEIR_ELEMENT_NONE)
    return HIT_ELEMENT;
  for (guint i = l->clusters->len; i-- > 0;) {
    const VCluster *c = &g_array_index(l->clusters, VCluster, i);
    if (px < c->x0 || px > c->x1 || py < c->y0 || py > c->y1)
      continue;
    if (c->entry == 0) {
      *out = (WeirElement){WEIR_ELEMENT_STATE, c->state, 0};
      return HIT_ELEMENT;
    }
    *out = (WeirElement){WEIR_ELEMENT_NODE, c->state, c->entry};
    if (px <= c->x0 + 4 + TOGGLE_SIZE + 2 && py <= c->y0 + 4 + TOGGLE_SIZE + 2)
      return HIT_TOGGLE;
    return HIT_ELEMENT;
  }
  return HIT_NONE;
}

WeirElement weir_graph_view_element_at(WeirGraphView *v, double x, double y) {
  WeirElement e = {WEIR_ELEMENT_NONE, 0, 0};
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), e);
  hit_test(v, x, y, &e);
  return e;
}

gboolean weir_graph_view_get_element_bounds(WeirGraphView *v,
                                            const WeirElement *e,
                                            graphene_rect_t *out) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), FALSE);
  g_return_val_if_fail(e != NULL && out != NULL, FALSE);
  double r[4];
  if (!weir_view_layout_element_rect(v->layout, e, r))
    return FALSE;
  graphene_rect_init(
      out, (float)((r[0] - v->ox) * v->zoom), (float)((r[1] - v->oy) * v->zoom),
      (float)((r[2] - r[0]) * v->zoom), (float)((r[3] - r[1]) * v->zoom));
  return TRUE;
}

/* Tooltip: the whole label (it may be shrunk or hidden at this zoom) and
 * the element's figures. */
static gboolean on_query_tooltip(GtkWidget *w, int x, int y,
                                 gboolean keyboard G_GNUC_UNUSED,
                                 GtkTooltip *tip, gpointer data G_GNUC_UNUSED) {
  WeirGraphView *v = WEIR_GRAPH_VIEW(w);
  WeirElement e;
  if (!v->layout || hit_test(v, x, y, &e) == HIT_NONE)
    return FALSE;
  GString *s = g_string_new(NULL);
  char b[32], f[32];
  if (e.kind == WEIR_ELEMENT_NODE) {
    const VNode *n = weir_view_layout_find_node(v->layout, e.state, e.id, NULL);
    if (!n) { /* a scope frame: its entry is drawn as a node too */
      g_string_free(s, TRUE);
      return FALSE;
    }
    g_string_append(s, n->label);
    char tr[32];
    if (n->traffic_known)
      weir_view_format_quantity(tr, sizeof tr, n->traffic, "B");
    if (n->bytes_known)
      weir_view_format_quantity(b, sizeof b, n->bytes, "B");
    if (n->flops_known)
      weir_view_format_quantity(f, sizeof f, n->flops, "FLOP");
    g_string_append_printf(s,
                           "\nmodeled traffic: %s\nlogical volume in+out: "
                           "%s\nFLOPs: %s",
                           n->traffic_known ? tr : "unknown",
                           n->bytes_known ? b : "unknown",
                           n->flops_known ? f : "unknown");
    if (n->traffic_known && n->flops_known && n->traffic > 0)
      g_string_append_printf(s, "\nintensity: %.3g FLOP per byte of traffic",
                             n->flops / n->traffic);
    double secs;
    if (weir_graph_view_get_time(v, n->state, n->id, &secs))
      g_string_append_printf(s, "\nmeasured time: %.3g ms", secs * 1e3);
    if (n->comm_bytes > 0) {
      weir_view_format_quantity(b, sizeof b, n->comm_bytes, "B");
      g_string_append_printf(s, "\ncommunicated between processes: %s", b);
    }
  } else if (e.kind == WEIR_ELEMENT_EDGE) {
    for (guint i = 0; i < v->layout->edges->len; i++) {
      const VEdge *ed = &g_array_index(v->layout->edges, VEdge, i);
      if (ed->transition || ed->state != e.state || ed->id != e.id)
        continue;
      g_string_append_printf(s, "memlet %u: %s", ed->id,
                             ed->label ? ed->label : "");
      if (ed->traffic_known) {
        weir_view_format_quantity(b, sizeof b, ed->traffic, "B");
        g_string_append_printf(s, "\nmodeled traffic: %s", b);
      }
      if (ed->bytes_known) {
        weir_view_format_quantity(b, sizeof b, ed->bytes, "B");
        g_string_append_printf(s, "\nlogical volume: %s", b);
      }
    }
  } else {
    for (guint i = 0; i < v->layout->clusters->len; i++) {
      const VCluster *c = &g_array_index(v->layout->clusters, VCluster, i);
      if (c->entry == 0 && c->state == e.state)
        g_string_append(s, c->label);
    }
  }
  gtk_tooltip_set_text(tip, s->str);
  g_string_free(s, TRUE);
  return TRUE;
}

/* ------------------------------------------------------------ input */

static gboolean in_minimap(WeirGraphView *v, double sx, double sy, double *lx,
                           double *ly) {
  double mx, my, msx, msy;
  if (!weir_graph_view_minimap_geometry(v, &mx, &my, &msx, &msy))
    return FALSE;
  double mw = v->layout->width * msx, mh = v->layout->height * msy;
  if (sx < mx - 4 || sx > mx + mw + 4 || sy < my - 4 || sy > my + mh + 4)
    return FALSE;
  *lx = CLAMP((sx - mx) / msx, 0, v->layout->width);
  *ly = CLAMP((sy - my) / msy, 0, v->layout->height);
  return TRUE;
}

static void on_click(GtkGestureClick *g, int n_press, double x, double y,
                     gpointer data) {
  WeirGraphView *v = data;
  gtk_widget_grab_focus(GTK_WIDGET(v));
  double lx, ly;
  if (in_minimap(v, x, y, &lx, &ly)) {
    weir_graph_view_center_on(v, lx, ly);
    gtk_gesture_set_state(GTK_GESTURE(g), GTK_EVENT_SEQUENCE_CLAIMED);
    return;
  }
  WeirElement e;
  HitKind hit = hit_test(v, x, y, &e);
  if (hit == HIT_TOGGLE && n_press == 1) {
    weir_graph_view_set_collapsed(
        v, e.state, e.id, !weir_graph_view_get_collapsed(v, e.state, e.id));
    return;
  }
  weir_graph_view_select(v, &e);
  if (n_press == 2 && e.kind != WEIR_ELEMENT_NONE)
    weir_graph_view_emit_activate(v, &e);
}

static void on_drag_begin(GtkGestureDrag *g G_GNUC_UNUSED, double x, double y,
                          gpointer data) {
  WeirGraphView *v = data;
  double lx, ly;
  if (in_minimap(v, x, y, &lx, &ly)) {
    v->drag_mode = DRAG_MINIMAP;
    return;
  }
  v->drag_mode = DRAG_PAN;
  v->drag_ox = v->ox;
  v->drag_oy = v->oy;
}

static void on_drag_update(GtkGestureDrag *g, double dx, double dy,
                           gpointer data) {
  WeirGraphView *v = data;
  if (v->drag_mode == DRAG_MINIMAP) {
    double sx, sy, lx, ly;
    gtk_gesture_drag_get_start_point(g, &sx, &sy);
    if (in_minimap(v, sx + dx, sy + dy, &lx, &ly))
      weir_graph_view_center_on(v, lx, ly);
    return;
  }
  if (v->drag_mode != DRAG_PAN)
    return;
  v->ox = v->drag_ox - dx / v->zoom;
  v->oy = v->drag_oy - dy / v->zoom;
  gtk_widget_queue_draw(GTK_WIDGET(v));
}

static void on_drag_end(GtkGestureDrag *g G_GNUC_UNUSED,
                        double dx G_GNUC_UNUSED, double dy G_GNUC_UNUSED,
                        gpointer data) {
  WEIR_GRAPH_VIEW(data)->drag_mode = DRAG_NONE;
}

static void on_motion(GtkEventControllerMotion *c G_GNUC_UNUSED, double x,
                      double y, gpointer data) {
  WeirGraphView *v = data;
  v->pointer_x = x;
  v->pointer_y = y;
}

static gboolean on_scroll(GtkEventControllerScroll *c, double dx, double dy,
                          gpointer data) {
  WeirGraphView *v = data;
  GdkModifierType mods =
      gtk_event_controller_get_current_event_state(GTK_EVENT_CONTROLLER(c));
  gboolean pixels = FALSE;
#if GTK_CHECK_VERSION(4, 8, 0)
  pixels = gtk_event_controller_scroll_get_unit(c) == GDK_SCROLL_UNIT_SURFACE;
#endif
  if (mods & GDK_CONTROL_MASK) {
    double f = pow(1.1, -dy * (pixels ? 0.1 : 1.0));
    weir_graph_view_zoom_at(v, v->zoom * f, v->pointer_x, v->pointer_y);
    return TRUE;
  }
  double step = pixels ? 1.0 : 40.0;
  if (mods & GDK_SHIFT_MASK && dx == 0) {
    dx = dy;
    dy = 0;
  }
  v->ox += dx * step / v->zoom;
  v->oy += dy * step / v->zoom;
  gtk_widget_queue_draw(GTK_WIDGET(v));
  return TRUE;
}

static void on_zoom_begin(GtkGesture *g G_GNUC_UNUSED,
                          GdkEventSequence *s G_GNUC_UNUSED, gpointer data) {
  WeirGraphView *v = data;
  v->pinch_zoom0 = v->zoom;
}

static void on_zoom_scale(GtkGestureZoom *g, double scale, gpointer data) {
  WeirGraphView *v = data;
  double cx, cy;
  if (!gtk_gesture_get_bounding_box_center(GTK_GESTURE(g), &cx, &cy)) {
    cx = gtk_widget_get_width(GTK_WIDGET(v)) / 2.0;
    cy = gtk_widget_get_height(GTK_WIDGET(v)) / 2.0;
  }
  weir_graph_view_zoom_at(v, v->pinch_zoom0 * scale, cx, cy);
}

static gboolean on_key(GtkEventControllerKey *c G_GNUC_UNUSED, guint keyval,
                       guint code G_GNUC_UNUSED, GdkModifierType mods,
                       gpointer data) {
  WeirGraphView *v = data;
  double w = gtk_widget_get_width(GTK_WIDGET(v));
  double h = gtk_widget_get_height(GTK_WIDGET(v));
  if (mods & (GDK_CONTROL_MASK | GDK_ALT_MASK))
    return FALSE;
  switch (keyval) {
  case GDK_KEY_plus:
  case GDK_KEY_equal:
  case GDK_KEY_KP_Add:
    weir_graph_view_zoom_at(v, v->zoom * 1.25, w / 2, h / 2);
    return TRUE;
  case GDK_KEY_minus:
  case GDK_KEY_KP_Subtract:
    weir_graph_view_zoom_at(v, v->zoom / 1.25, w / 2, h / 2);
    return TRUE;
  case GDK_KEY_0:
  case GDK_KEY_KP_0:
    weir_graph_view_zoom_fit(v);
    return TRUE;
  case GDK_KEY_1:
  case GDK_KEY_KP_1:
    weir_graph_view_zoom_at(v, 1.0, w / 2, h / 2);
    return TRUE;
  case GDK_KEY_Left:
    v->ox -= 60 / v->zoom;
    break;
  case GDK_KEY_Right:
    v->ox += 60 / v->zoom;
    break;
  case GDK_KEY_Up:
    v->oy -= 60 / v->zoom;
    break;
  case GDK_KEY_Down:
    v->oy += 60 / v->zoom;
    break;
  case GDK_KEY_Escape:
    weir_graph_view_select(v, NULL);
    return TRUE;
  default:
    return FALSE;
  }
  gtk_widget_queue_draw(GTK_WIDGET(v));
  return TRUE;
}

void weir_graph_view_input_init(WeirGraphView *v) {
  GtkWidget *w = GTK_WIDGET(v);
  gtk_widget_set_has_tooltip(w, TRUE);
  g_signal_connect(w, "query-tooltip", G_CALLBACK(on_query_tooltip), NULL);

  GtkGesture *click = gtk_gesture_click_new();
  /* on release: a press that turns into a drag (pan) selects nothing */
  g_signal_connect(click, "released", G_CALLBACK(on_click), v);
  gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(click));

  GtkGesture *drag = gtk_gesture_drag_new();
  gtk_gesture_single_set_button(GTK_GESTURE_SINGLE(drag), 0);
  g_signal_connect(drag, "drag-begin", G_CALLBACK(on_drag_begin), v);
  g_signal_connect(drag, "drag-update", G_CALLBACK(on_drag_update), v);
  g_signal_connect(drag, "drag-end", G_CALLBACK(on_drag_end), v);
  gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(drag));

  GtkGesture *zoom = gtk_gesture_zoom_new();
  g_signal_connect(zoom, "begin", G_CALLBACK(on_zoom_begin), v);
  g_signal_connect(zoom, "scale-changed", G_CALLBACK(on_zoom_scale), v);
  gtk_widget_add_controller(w, GTK_EVENT_CONTROLLER(zoom));

  GtkEventController *scroll =
      gtk_event_controller_scroll_new(GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
  g_signal_connect(scroll, "scroll", G_CALLBACK(on_scroll), v);
  gtk_widget_add_controller(w, scroll);

  GtkEventController *motion = gtk_event_controller_motion_new();
  g_signal_connect(motion, "motion", G_CALLBACK(on_motion), v);
  gtk_widget_add_controller(w, motion);

  GtkEventController *key = gtk_event_controller_key_new();
  g_signal_connect(key, "key-pressed", G_CALLBACK(on_key), v);
  gtk_widget_add_controller(w, key);
}
