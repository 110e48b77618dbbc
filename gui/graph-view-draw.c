/* graph-view-draw.c — how WeirGraphView draws (graph-view-private.h): the
 * palette (from the theme's text colour), the overlay's heat scale, and
 * the picture drawn with cairo from snapshot(): clusters, edges, nodes,
 * then the minimap, the legend and the banners, on screen coordinates
 * (p - origin) * zoom.  Only what is visible is drawn, and text too small
 * to read is left out.
 */
#include <math.h>
#include <string.h>

#include "graph-view-private.h"

/* ----------------------------------------------------------- palette */

typedef struct {
  gboolean dark;
  GdkRGBA fg, bg, dim, state_fill, scope_fill, scope_border, edge, transition,
      accent, highlight;
  GdkRGBA fill[SHAPE_EMPTY + 1];
} Palette;

static GdkRGBA rgb(guint32 hex) {
  return (GdkRGBA){((hex >> 16) & 0xff) / 255.0f, ((hex >> 8) & 0xff) / 255.0f,
                   (hex & 0xff) / 255.0f, 1.0f};
}

static void palette_init(WeirGraphView *v, Palette *p) {
  GdkRGBA fg;
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color(gtk_widget_get_style_context(GTK_WIDGET(v)), &fg);
  G_GNUC_END_IGNORE_DEPRECATIONS
  double lum = 0.2126 * fg.red + 0.7152 * fg.green + 0.0722 * fg.blue;
  gboolean prefer_dark = FALSE;
  GtkSettings *settings = gtk_widget_get_settings(GTK_WIDGET(v));
  if (settings)
    g_object_get(settings, "gtk-application-prefer-dark-theme", &prefer_dark,
                 NULL);
  /* A light text colour means a dark theme, whatever its name. */
  p->dark = lum > 0.5 || (prefer_dark && lum > 0.3);
  fg.alpha = 1.0f;
  p->fg = fg;
  p->accent = rgb(0x3584e4);
  p->highlight = rgb(0xff7800);
  if (p->dark) {
    p->bg = rgb(0x1e1e1e);
    p->dim = rgb(0x9a9a9a);
    p->state_fill = rgb(0x2a2a2e);
    p->scope_fill = rgb(0x33303d);
    p->scope_border = rgb(0x9a82b8);
    p->edge = rgb(0xb0b0b0);
    p->transition = rgb(0x8fb0d8);
    p->fill[SHAPE_ACCESS] = rgb(0x1f3a5a);
    p->fill[SHAPE_TASKLET] = rgb(0x5a4a1a);
    p->fill[SHAPE_LIBRARY] = rgb(0x1f4a2a);
    p->fill[SHAPE_MAP_ENTRY] = rgb(0x4a2f5a);
    p->fill[SHAPE_MAP_EXIT] = rgb(0x4a2f5a);
    p->fill[SHAPE_NESTED] = rgb(0x404040);
    p->fill[SHAPE_COLLAPSED] = rgb(0x4a2f5a);
    p->fill[SHAPE_EMPTY] = p->state_fill;
  } else {
    p->bg = rgb(0xfafafa);
    p->dim = rgb(0x707070);
    p->state_fill = rgb(0xf0f0f3);
    p->scope_fill = rgb(0xf3eef8);
    p->scope_border = rgb(0x8c6bb3);
    p->edge = rgb(0x505050);
    p->transition = rgb(0x2a5a9a);
    p->fill[SHAPE_ACCESS] = rgb(0xd6e6fa);
    p->fill[SHAPE_TASKLET] = rgb(0xfcefc0);
    p->fill[SHAPE_LIBRARY] = rgb(0xd2f0d8);
    p->fill[SHAPE_MAP_ENTRY] = rgb(0xe4d6f2);
    p->fill[SHAPE_MAP_EXIT] = rgb(0xe4d6f2);
    p->fill[SHAPE_NESTED] = rgb(0xe6e6e6);
    p->fill[SHAPE_COLLAPSED] = rgb(0xe4d6f2);
    p->fill[SHAPE_EMPTY] = p->state_fill;
  }
}

static void set_source(cairo_t *cr, const GdkRGBA *c) {
  cairo_set_source_rgba(cr, c->red, c->green, c->blue, c->alpha);
}

/* Heat scale (light yellow -> orange -> dark red), t in [0, 1]. */
static GdkRGBA heat_colour(double t) {
  static const guint32 stops[] = {0xffffb2, 0xfecc5c, 0xfd8d3c, 0xf03b20,
                                  0xbd0026};
  const guint n = G_N_ELEMENTS(stops);
  t = CLAMP(t, 0.0, 1.0) * (n - 1);
  guint i = MIN((guint)t, n - 2);
  double f = t - i;
  GdkRGBA a = rgb(stops[i]), b = rgb(stops[i + 1]);
  return (GdkRGBA){(float)(a.red + f * (b.red - a.red)),
                   (float)(a.green + f * (b.green - a.green)),
                   (float)(a.blue + f * (b.blue - a.blue)), 1.0f};
}

static double luminance(const GdkRGBA *c) {
  return 0.2126 * c->red + 0.7152 * c->green + 0.0722 * c->blue;
}

/* ---------------------------------------------------------- overlay */

/* The overlay figure of a node: FALSE when unknown. */
static gboolean node_value(const WeirGraphView *v, const VNode *n,
                           double *out) {
  switch (v->overlay) {
  case WEIR_OVERLAY_BYTES:
    *out = n->traffic;
    return n->traffic_known;
  case WEIR_OVERLAY_FLOPS:
    *out = n->flops;
    return n->flops_known;
  case WEIR_OVERLAY_INTENSITY:
    if (!n->flops_known || !n->traffic_known || n->traffic <= 0)
      return FALSE;
    *out = n->flops / n->traffic;
    return TRUE;
  case WEIR_OVERLAY_TIME: {
    if (g_hash_table_size(v->times) == 0)
      return FALSE; /* not profiled yet */
    guint64 k = weir_view_scope_key(n->state, n->id);
    const double *t = g_hash_table_lookup(v->times, &k);
    *out = t ? *t : 0; /* not timed: faded */
    return TRUE;
  }
  default:
    return FALSE;
  }
}

typedef struct {
  gboolean any;
  double lo, hi; /* log10 of the smallest and largest positive values */
  double min, max;
} Scale;

static void scale_add(Scale *s, double v) {
  if (v <= 0)
    return;
  if (!s->any || v < s->min)
    s->min = v;
  if (!s->any || v > s->max)
    s->max = v;
  s->any = TRUE;
}

static void overlay_scale(const WeirGraphView *v, const ViewLayout *l,
                          Scale *s) {
  memset(s, 0, sizeof *s);
  for (guint i = 0; i < l->nodes->len; i++) {
    double x;
    if (node_value(v, &g_array_index(l->nodes, VNode, i), &x))
      scale_add(s, x);
  }
  if (v->overlay == WEIR_OVERLAY_BYTES)
    for (guint i = 0; i < l->edges->len; i++) {
      const VEdge *e = &g_array_index(l->edges, VEdge, i);
      if (e->traffic_known)
        scale_add(s, e->traffic);
    }
  if (s->any) {
    s->lo = log10(s->min);
    s->hi = log10(s->max);
  }
}

static double scale_t(const Scale *s, double v) {
  if (s->hi - s->lo < 1e-9)
    return 1.0;
  return (log10(v) - s->lo) / (s->hi - s->lo);
}

/* ----------------------------------------------------------- drawing */

typedef struct {
  WeirGraphView *v;
  cairo_t *cr;
  PangoLayout *text;
  Palette pal;
  Scale scale;
  double vx0, vy0, vx1, vy1; /* visible layout rectangle */
  GHashTable *hl;            /* drawn ids of the highlighted nodes */
} Draw;

static gboolean visible(const Draw *d, double x0, double y0, double x1,
                        double y1) {
  return x1 >= d->vx0 && x0 <= d->vx1 && y1 >= d->vy0 && y0 <= d->vy1;
}

/* Draws text centred at (x, y) in layout units, shrunk to max_w when
 * wider (max_w <= 0: no limit). */
static void draw_text(Draw *d, const char *text, double size, double x,
                      double y, double max_w, const GdkRGBA *colour,
                      gboolean bold) {
  if (size * d->v->zoom < MIN_TEXT_PX || !*text)
    return;
  PangoFontDescription *fd = pango_font_description_from_string("Sans");
  pango_font_description_set_absolute_size(fd, size * PANGO_SCALE);
  if (bold)
    pango_font_description_set_weight(fd, PANGO_WEIGHT_BOLD);
  pango_layout_set_font_description(d->text, fd);
  pango_font_description_free(fd);
  pango_layout_set_alignment(d->text, PANGO_ALIGN_CENTER);
  pango_layout_set_text(d->text, text, -1);
  int pw, ph;
  pango_layout_get_size(d->text, &pw, &ph);
  double w = (double)pw / PANGO_SCALE, h = (double)ph / PANGO_SCALE;
  double s = (max_w > 0 && w > max_w) ? max_w / w : 1.0;
  cairo_save(d->cr);
  cairo_translate(d->cr, x - w * s / 2, y - h * s / 2);
  cairo_scale(d->cr, s, s);
  set_source(d->cr, colour);
  pango_cairo_show_layout(d->cr, d->text);
  cairo_restore(d->cr);
}

/* Text with its top-left corner at (x, y). */
static void draw_text_at(Draw *d, const char *text, double size, double x,
                         double y, const GdkRGBA *colour, gboolean bold) {
  if (size * d->v->zoom < MIN_TEXT_PX || !*text)
    return;
  PangoFontDescription *fd = pango_font_description_from_string("Sans");
  pango_font_description_set_absolute_size(fd, size * PANGO_SCALE);
  if (bold)
    pango_font_description_set_weight(fd, PANGO_WEIGHT_BOLD);
  pango_layout_set_font_description(d->text, fd);
  pango_font_description_free(fd);
  pango_layout_set_alignment(d->text, PANGO_ALIGN_LEFT);
  pango_layout_set_text(d->text, text, -1);
  cairo_move_to(d->cr, x, y);
  set_source(d->cr, colour);
  pango_cairo_show_layout(d->cr, d->text);
}

static void rounded_rect(cairo_t *cr, double x, double y, double w, double h,
                         double r) {
  r = MIN(r, MIN(w, h) / 2);
  cairo_new_sub_path(cr);
  cairo_arc(cr, x + w - r, y + r, r, -G_PI / 2, 0);
  cairo_arc(cr, x + w - r, y + h - r, r, 0, G_PI / 2);
  cairo_arc(cr, x + r, y + h - r, r, G_PI / 2, G_PI);
  cairo_arc(cr, x + r, y + r, r, G_PI, 3 * G_PI / 2);
  cairo_close_path(cr);
}

static void shape_path(cairo_t *cr, const VNode *n) {
  double x0 = n->x - n->w / 2, y0 = n->y - n->h / 2;
  double x1 = n->x + n->w / 2, y1 = n->y + n->h / 2;
  double w = n->w, h = n->h;
  cairo_new_path(cr);
  switch (n->shape) {
  case SHAPE_ACCESS:
    cairo_save(cr);
    cairo_translate(cr, n->x, n->y);
    cairo_scale(cr, w / 2, h / 2);
    cairo_arc(cr, 0, 0, 1, 0, 2 * G_PI);
    cairo_restore(cr);
    break;
  case SHAPE_TASKLET: {
    double cx = MIN(w, h) * 0.29;
    cairo_move_to(cr, x0 + cx, y0);
    cairo_line_to(cr, x1 - cx, y0);
    cairo_line_to(cr, x1, y0 + cx);
    cairo_line_to(cr, x1, y1 - cx);
    cairo_line_to(cr, x1 - cx, y1);
    cairo_line_to(cr, x0 + cx, y1);
    cairo_line_to(cr, x0, y1 - cx);
    cairo_line_to(cr, x0, y0 + cx);
    cairo_close_path(cr);
    break;
  }
  case SHAPE_MAP_ENTRY: { /* wide at the bottom */
    double in = MIN(w * 0.2, h * 0.6);
    cairo_move_to(cr, x0 + in, y0);
    cairo_line_to(cr, x1 - in, y0);
    cairo_line_to(cr, x1, y1);
    cairo_line_to(cr, x0, y1);
    cairo_close_path(cr);
    break;
  }
  case SHAPE_MAP_EXIT: { /* wide at the top */
    double in = MIN(w * 0.2, h * 0.6);
    cairo_move_to(cr, x0, y0);
    cairo_line_to(cr, x1, y0);
    cairo_line_to(cr, x1 - in, y1);
    cairo_line_to(cr, x0 + in, y1);
    cairo_close_path(cr);
    break;
  }
  case SHAPE_LIBRARY:
  case SHAPE_COLLAPSED:
    rounded_rect(cr, x0, y0, w, h, 3);
    break;
  default:
    cairo_rectangle(cr, x0, y0, w, h);
    break;
  }
}

static gboolean is_selected(const WeirGraphView *v, WeirElementKind kind,
                            guint state, guint id) {
  return v->selection.kind == kind && v->selection.state == state &&
         (kind == WEIR_ELEMENT_STATE || v->selection.id == id);
}

static void draw_node(Draw *d, const VNode *n) {
  cairo_t *cr = d->cr;
  WeirGraphView *v = d->v;
  if (!visible(d, n->x - n->w / 2, n->y - n->h / 2, n->x + n->w / 2,
               n->y + n->h / 2))
    return;
  if (n->shape == SHAPE_EMPTY) {
    draw_text(d, n->label, NODE_FONT, n->x, n->y, 0, &d->pal.dim, FALSE);
    return;
  }
  GdkRGBA fill = d->pal.fill[n->shape];
  gboolean unknown = FALSE;
  if (v->overlay != WEIR_OVERLAY_NONE) {
    double val;
    if (node_value(v, n, &val)) {
      if (val > 0 && d->scale.any)
        fill = heat_colour(scale_t(&d->scale, val));
      else
        fill.alpha = 0.45f; /* nothing to show: faded */
    } else {
      unknown = TRUE;
      fill = d->pal.dark ? rgb(0x3a3a3a) : rgb(0xd0d0d0);
    }
  }
  GdkRGBA text = d->pal.fg;
  if (fill.alpha > 0.9f)
    text = luminance(&fill) > 0.5 ? rgb(0x1a1a1a) : rgb(0xf5f5f5);
  gboolean hl = v->hl_state == n->state &&
                g_hash_table_contains(d->hl, GUINT_TO_POINTER(n->id));
  if (hl) { /* a glow behind the node */
    shape_path(cr, n);
    GdkRGBA c = d->pal.highlight;
    c.alpha = 0.55f;
    set_source(cr, &c);
    cairo_set_line_width(cr, 8.0);
    cairo_stroke(cr);
  }
  shape_path(cr, n);
  set_source(cr, &fill);
  cairo_fill_preserve(cr);
  gboolean sel = v->selection.kind == WEIR_ELEMENT_NODE &&
                 v->selection.state == n->state &&
                 weir_view_layout_drawn_id(v->layout, v->selection.id) == n->id;
  if (sel) {
    set_source(cr, &d->pal.accent);
    cairo_set_line_width(cr, 3.0);
  } else {
    set_source(cr, &d->pal.fg);
    /* outlines stay visible when zoomed out (up to 3 layout units) */
    double lw = n->shape == SHAPE_COLLAPSED ? 1.6 : 1.0;
    cairo_set_line_width(cr, MAX(lw, MIN(0.7 / v->zoom, 3.0)));
  }
  if (unknown) {
    double dash[] = {3, 2};
    cairo_set_dash(cr, dash, 2, 0);
  }
  cairo_stroke(cr);
  cairo_set_dash(cr, NULL, 0, 0);
  if (n->shape == SHAPE_NESTED) { /* the second frame */
    cairo_rectangle(cr, n->x - n->w / 2 + 3, n->y - n->h / 2 + 3, n->w - 6,
                    n->h - 6);
    set_source(cr, &d->pal.fg);
    cairo_set_line_width(cr, 0.8);
    cairo_stroke(cr);
  }
  if (n->shape == SHAPE_COLLAPSED) { /* the [+] to expand */
    double x = n->x + n->w / 2 - TOGGLE_SIZE - 3, y = n->y - n->h / 2 + 3;
    cairo_rectangle(cr, x, y, TOGGLE_SIZE, TOGGLE_SIZE);
    set_source(cr, &text);
    cairo_set_line_width(cr, 0.8);
    cairo_move_to(cr, x + 2.5, y + TOGGLE_SIZE / 2);
    cairo_line_to(cr, x + TOGGLE_SIZE - 2.5, y + TOGGLE_SIZE / 2);
    cairo_move_to(cr, x + TOGGLE_SIZE / 2, y + 2.5);
    cairo_line_to(cr, x + TOGGLE_SIZE / 2, y + TOGGLE_SIZE - 2.5);
    cairo_stroke(cr);
  }
  double inset = n->shape == SHAPE_ACCESS      ? n->w * 0.15
                 : n->shape == SHAPE_COLLAPSED ? 2 * TOGGLE_SIZE
                                               : 6;
  draw_text(d, n->label, NODE_FONT, n->x, n->y, n->w - inset, &text,
            n->shape == SHAPE_LIBRARY);
}

static void bezier_path(cairo_t *cr, const VEdge *e) {
  cairo_new_path(cr);
  cairo_move_to(cr, e->pts[0], e->pts[1]);
  for (guint i = 1; i + 2 < e->n_pts; i += 3)
    cairo_curve_to(cr, e->pts[2 * i], e->pts[2 * i + 1], e->pts[2 * i + 2],
                   e->pts[2 * i + 3], e->pts[2 * i + 4], e->pts[2 * i + 5]);
}

static void draw_edge(Draw *d, const VEdge *e) {
  cairo_t *cr = d->cr;
  WeirGraphView *v = d->v;
  if (e->n_pts < 4 || !visible(d, e->x0, e->y0, e->x1, e->y1))
    return;
  GdkRGBA colour = e->transition ? d->pal.transition : d->pal.edge;
  double width = e->transition ? 2.0 : 1.0;
  if (!e->transition && v->overlay == WEIR_OVERLAY_BYTES && e->traffic_known &&
      e->traffic > 0 && d->scale.any) {
    double t = scale_t(&d->scale, e->traffic);
    /* the pale end of the scale would vanish on a light background:
     * edges start further up it and are darkened there */
    colour = heat_colour(0.3 + 0.7 * t);
    if (!d->pal.dark) {
      colour.red *= 0.8f;
      colour.green *= 0.8f;
      colour.blue *= 0.8f;
    }
    width = 1.2 + 3.0 * t;
  }
  gboolean sel =
      !e->transition && is_selected(v, WEIR_ELEMENT_EDGE, e->state, e->id);
  if (sel) {
    colour = d->pal.accent;
    width += 2.0;
  }
  /* at least a hair on screen */
  width = MAX(width, 0.8 / v->zoom);
  bezier_path(cr, e);
  set_source(cr, &colour);
  cairo_set_line_width(cr, width);
  if (e->empty) {
    double dash[] = {4, 3};
    cairo_set_dash(cr, dash, 2, 0);
  }
  cairo_stroke(cr);
  cairo_set_dash(cr, NULL, 0, 0);
  if (e->arrow) {
    double bx = e->pts[2 * (e->n_pts - 1)], by = e->pts[2 * (e->n_pts - 1) + 1];
    double dx = e->ax - bx, dy = e->ay - by, len = hypot(dx, dy);
    if (len > 1e-6) {
      double nx = -dy / len * len * 0.45, ny = dx / len * len * 0.45;
      cairo_move_to(cr, e->ax, e->ay);
      cairo_line_to(cr, bx + nx, by + ny);
      cairo_line_to(cr, bx - nx, by - ny);
      cairo_close_path(cr);
      cairo_fill(cr);
    }
  }
  if (e->label && *e->label) {
    GdkRGBA tc = sel ? d->pal.accent : d->pal.dim;
    if (e->transition)
      tc = d->pal.transition;
    draw_text(d, e->label, EDGE_FONT, e->lx, e->ly, 0, &tc, sel);
  }
}

static void draw_cluster(Draw *d, const VCluster *c) {
  cairo_t *cr = d->cr;
  if (!visible(d, c->x0, c->y0, c->x1, c->y1))
    return;
  double w = c->x1 - c->x0, h = c->y1 - c->y0;
  gboolean sel = c->entry == 0
                     ? is_selected(d->v, WEIR_ELEMENT_STATE, c->state, 0)
                     : is_selected(d->v, WEIR_ELEMENT_NODE, c->state, c->entry);
  if (c->entry == 0) {
    rounded_rect(cr, c->x0, c->y0, w, h, 6);
    set_source(cr, &d->pal.state_fill);
    cairo_fill_preserve(cr);
    set_source(cr, sel ? &d->pal.accent : &d->pal.dim);
    cairo_set_line_width(cr, sel ? 3.0 : 1.2);
    cairo_stroke(cr);
    draw_text_at(d, c->label, CLUSTER_FONT, c->x0 + 8, c->y0 + 3, &d->pal.fg,
                 TRUE);
  } else {
    rounded_rect(cr, c->x0, c->y0, w, h, 4);
    set_source(cr, &d->pal.scope_fill);
    cairo_fill_preserve(cr);
    set_source(cr, sel ? &d->pal.accent : &d->pal.scope_border);
    cairo_set_line_width(cr, sel ? 3.0 : 1.0);
    double dash[] = {5, 3};
    cairo_set_dash(cr, dash, 2, 0);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    /* the [-] to collapse, then the label */
    double x = c->x0 + 4, y = c->y0 + 4;
    cairo_rectangle(cr, x, y, TOGGLE_SIZE, TOGGLE_SIZE);
    cairo_move_to(cr, x + 2.5, y + TOGGLE_SIZE / 2);
    cairo_line_to(cr, x + TOGGLE_SIZE - 2.5, y + TOGGLE_SIZE / 2);
    set_source(cr, &d->pal.fg);
    cairo_set_line_width(cr, 0.8);
    cairo_stroke(cr);
    draw_text_at(d, c->label, CLUSTER_FONT - 1, x + TOGGLE_SIZE + 4, c->y0 + 3,
                 &d->pal.dim, FALSE);
  }
}

/* Screen position of the minimap and its scales (the same on both axes
 * unless the picture is so thin that a side would be narrower than
 * MINIMAP_MIN); FALSE when the whole picture is on screen (no minimap). */
gboolean weir_graph_view_minimap_geometry(WeirGraphView *v, double *mx,
                                          double *my, double *msx,
                                          double *msy) {
  const ViewLayout *l = v->layout;
  double w = gtk_widget_get_width(GTK_WIDGET(v));
  double h = gtk_widget_get_height(GTK_WIDGET(v));
  if (!l || l->nodes->len == 0 || l->width <= 0 || l->height <= 0)
    return FALSE;
  gboolean all_visible = v->ox <= 0 && v->oy <= 0 &&
                         v->ox + w / v->zoom >= l->width &&
                         v->oy + h / v->zoom >= l->height;
  if (all_visible || w < 3 * MINIMAP_W || h < 2 * MINIMAP_H)
    return FALSE;
  double s = MIN(MINIMAP_W / l->width, MINIMAP_H / l->height);
  *msx = MAX(s, MINIMAP_MIN / l->width);
  *msy = MAX(s, MINIMAP_MIN / l->height);
  *mx = w - l->width * *msx - 12;
  *my = h - l->height * *msy - 12;
  return TRUE;
}

static void draw_minimap(Draw *d) {
  WeirGraphView *v = d->v;
  const ViewLayout *l = v->layout;
  double mx, my, sx, sy;
  if (!weir_graph_view_minimap_geometry(v, &mx, &my, &sx, &sy))
    return;
  cairo_t *cr = d->cr;
  double mw = l->width * sx, mh = l->height * sy;
  rounded_rect(cr, mx - 4, my - 4, mw + 8, mh + 8, 4);
  GdkRGBA bg = d->pal.bg;
  bg.alpha = 0.92f;
  set_source(cr, &bg);
  cairo_fill_preserve(cr);
  set_source(cr, &d->pal.dim);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  for (guint i = 0; i < l->clusters->len; i++) {
    const VCluster *c = &g_array_index(l->clusters, VCluster, i);
    if (c->entry)
      continue;
    cairo_rectangle(cr, mx + c->x0 * sx, my + c->y0 * sy, (c->x1 - c->x0) * sx,
                    (c->y1 - c->y0) * sy);
    set_source(cr, &d->pal.state_fill);
    cairo_fill(cr);
  }
  for (guint i = 0; i < l->nodes->len; i++) {
    const VNode *n = &g_array_index(l->nodes, VNode, i);
    GdkRGBA c = d->pal.dim;
    double val;
    if (v->overlay != WEIR_OVERLAY_NONE && d->scale.any &&
        node_value(v, n, &val) && val > 0)
      c = heat_colour(scale_t(&d->scale, val));
    if (is_selected(v, WEIR_ELEMENT_NODE, n->state, n->id))
      c = d->pal.accent;
    set_source(cr, &c);
    cairo_rectangle(cr, mx + (n->x - n->w / 2) * sx,
                    my + (n->y - n->h / 2) * sy, MAX(n->w * sx, 1.0),
                    MAX(n->h * sy, 1.0));
    cairo_fill(cr);
  }
  double w = gtk_widget_get_width(GTK_WIDGET(v));
  double h = gtk_widget_get_height(GTK_WIDGET(v));
  double x0 = MAX(v->ox, 0), y0 = MAX(v->oy, 0);
  double x1 = MIN(v->ox + w / v->zoom, l->width);
  double y1 = MIN(v->oy + h / v->zoom, l->height);
  if (x1 > x0 && y1 > y0) {
    cairo_rectangle(cr, mx + x0 * sx, my + y0 * sy, MAX((x1 - x0) * sx, 2.0),
                    MAX((y1 - y0) * sy, 2.0));
    GdkRGBA a = d->pal.accent;
    a.alpha = 0.18f;
    set_source(cr, &a);
    cairo_fill_preserve(cr);
    set_source(cr, &d->pal.accent);
    cairo_set_line_width(cr, 1.5);
    cairo_stroke(cr);
  }
}

/* Text at screen scale (the cairo matrix is the identity here). */
static void screen_text(Draw *d, const char *text, double size, double x,
                        double y, const GdkRGBA *c, gboolean bold) {
  double z = d->v->zoom;
  d->v->zoom = 1.0; /* draw_text_at checks the size on screen */
  draw_text_at(d, text, size, x, y, c, bold);
  d->v->zoom = z;
}

static void format_seconds(char *buf, gsize size, double s) {
  if (s < 1e-3)
    g_snprintf(buf, size, "%.3g us", s * 1e6);
  else if (s < 1.0)
    g_snprintf(buf, size, "%.3g ms", s * 1e3);
  else
    g_snprintf(buf, size, "%.3g s", s);
}

static void draw_legend(Draw *d) {
  WeirGraphView *v = d->v;
  if (v->overlay == WEIR_OVERLAY_NONE || !v->layout)
    return;
  static const char *const titles[] = {
      [WEIR_OVERLAY_BYTES] = "modeled memory traffic",
      [WEIR_OVERLAY_FLOPS] = "FLOPs",
      [WEIR_OVERLAY_INTENSITY] = "FLOP per byte of traffic",
      [WEIR_OVERLAY_TIME] = "measured time (last run)",
  };
  static const char *const units[] = {
      [WEIR_OVERLAY_BYTES] = "B",
      [WEIR_OVERLAY_FLOPS] = "FLOP",
      [WEIR_OVERLAY_INTENSITY] = "FLOP/B",
      [WEIR_OVERLAY_TIME] = "s",
  };
  cairo_t *cr = d->cr;
  double h = gtk_widget_get_height(GTK_WIDGET(v));
  gboolean two_lines = v->layout->totals && strchr(v->layout->totals, '\n');
  double bw = 240, bh = two_lines ? 98 : 82, x = 12, y = h - bh - 12;
  rounded_rect(cr, x, y, bw, bh, 5);
  GdkRGBA bg = d->pal.bg;
  bg.alpha = 0.92f;
  set_source(cr, &bg);
  cairo_fill_preserve(cr);
  set_source(cr, &d->pal.dim);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  char title[128];
  if (v->overlay == WEIR_OVERLAY_BYTES && v->layout->cache_bytes > 0) {
    char c[32];
    weir_view_format_quantity(c, sizeof c, (double)v->layout->cache_bytes, "B");
    g_snprintf(title, sizeof title, "%s, %s cache (log)", titles[v->overlay],
               c);
  } else if (v->overlay == WEIR_OVERLAY_TIME &&
             g_hash_table_size(v->times) == 0)
    g_snprintf(title, sizeof title, "%s: Run or Benchmark first",
               titles[v->overlay]);
  else
    g_snprintf(title, sizeof title, "%s (log scale)", titles[v->overlay]);
  screen_text(d, title, 12, x + 10, y + 6, &d->pal.fg, TRUE);
  double gx = x + 10, gy = y + 26, gw = bw - 20, gh = 12;
  cairo_pattern_t *pat = cairo_pattern_create_linear(gx, 0, gx + gw, 0);
  for (int i = 0; i <= 8; i++) {
    GdkRGBA c = heat_colour(i / 8.0);
    cairo_pattern_add_color_stop_rgb(pat, i / 8.0, c.red, c.green, c.blue);
  }
  cairo_rectangle(cr, gx, gy, gw, gh);
  cairo_set_source(cr, pat);
  cairo_fill_preserve(cr);
  cairo_pattern_destroy(pat);
  set_source(cr, &d->pal.dim);
  cairo_stroke(cr);
  char lo[32] = "-", hi[32] = "-";
  if (d->scale.any && v->overlay == WEIR_OVERLAY_TIME) {
    format_seconds(lo, sizeof lo, d->scale.min);
    format_seconds(hi, sizeof hi, d->scale.max);
  } else if (d->scale.any) {
    weir_view_format_quantity(lo, sizeof lo, d->scale.min, units[v->overlay]);
    weir_view_format_quantity(hi, sizeof hi, d->scale.max, units[v->overlay]);
  }
  screen_text(d, lo, 11, gx, gy + gh + 2, &d->pal.fg, FALSE);
  pango_layout_set_text(d->text, hi, -1);
  int pw;
  pango_layout_get_pixel_size(d->text, &pw, NULL);
  screen_text(d, hi, 11, gx + gw - pw, gy + gh + 2, &d->pal.fg, FALSE);
  if (v->layout->totals)
    screen_text(d, v->layout->totals, 11, gx, gy + gh + 20, &d->pal.dim, FALSE);
}

static void draw_banner(Draw *d, const char *text, double x, double y,
                        gboolean centred) {
  cairo_t *cr = d->cr;
  PangoFontDescription *fd = pango_font_description_from_string("Sans");
  pango_font_description_set_absolute_size(fd, 13 * PANGO_SCALE);
  pango_layout_set_font_description(d->text, fd);
  pango_font_description_free(fd);
  pango_layout_set_alignment(d->text, PANGO_ALIGN_LEFT);
  pango_layout_set_text(d->text, text, -1);
  int pw, ph;
  pango_layout_get_pixel_size(d->text, &pw, &ph);
  if (centred)
    x -= pw / 2.0 + 10;
  rounded_rect(cr, x, y, pw + 20, ph + 10, 6);
  GdkRGBA bg = d->pal.bg;
  bg.alpha = 0.9f;
  set_source(cr, &bg);
  cairo_fill_preserve(cr);
  set_source(cr, &d->pal.dim);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  cairo_move_to(cr, x + 10, y + 5);
  set_source(cr, &d->pal.fg);
  pango_cairo_show_layout(cr, d->text);
}

void weir_graph_view_snapshot(GtkWidget *widget, GtkSnapshot *snap) {
  WeirGraphView *v = WEIR_GRAPH_VIEW(widget);
  gint64 t0 = g_get_monotonic_time();
  double w = gtk_widget_get_width(widget), h = gtk_widget_get_height(widget);
  if (w <= 0 || h <= 0)
    return;
  cairo_t *cr =
      gtk_snapshot_append_cairo(snap, &GRAPHENE_RECT_INIT(0, 0, w, h));
  Draw d = {.v = v, .cr = cr};
  palette_init(v, &d.pal);
  d.text = pango_cairo_create_layout(cr);
  set_source(cr, &d.pal.bg);
  cairo_paint(cr);
  const ViewLayout *l = v->layout;
  if (l) {
    d.hl = g_hash_table_new(g_direct_hash, g_direct_equal);
    GHashTableIter it;
    gpointer k;
    g_hash_table_iter_init(&it, v->hl_nodes);
    while (g_hash_table_iter_next(&it, &k, NULL))
      g_hash_table_add(d.hl, GUINT_TO_POINTER(weir_view_layout_drawn_id(
                                 l, GPOINTER_TO_UINT(k))));
    if (v->overlay != WEIR_OVERLAY_NONE)
      overlay_scale(v, l, &d.scale);
    d.vx0 = v->ox;
    d.vy0 = v->oy;
    d.vx1 = v->ox + w / v->zoom;
    d.vy1 = v->oy + h / v->zoom;
    cairo_save(cr);
    cairo_scale(cr, v->zoom, v->zoom);
    cairo_translate(cr, -v->ox, -v->oy);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    for (guint i = 0; i < l->clusters->len; i++)
      draw_cluster(&d, &g_array_index(l->clusters, VCluster, i));
    for (guint i = 0; i < l->edges->len; i++)
      draw_edge(&d, &g_array_index(l->edges, VEdge, i));
    for (guint i = 0; i < l->nodes->len; i++)
      draw_node(&d, &g_array_index(l->nodes, VNode, i));
    cairo_restore(cr);
    draw_minimap(&d);
    draw_legend(&d);
    g_hash_table_unref(d.hl);
  } else {
    const char *msg = v->busy           ? "Laying out\u2026"
                      : v->layout_error ? v->layout_error
                                        : "No program";
    draw_banner(&d, msg, w / 2, h / 2 - 12, TRUE);
  }
  if (v->busy && l)
    draw_banner(&d,
                l->provisional ? "Refining layout\u2026" : "Laying out\u2026",
                12, 12, FALSE);
  g_object_unref(d.text);
  cairo_destroy(cr);
  v->last_draw_ms = (double)(g_get_monotonic_time() - t0) / 1000.0;
}
