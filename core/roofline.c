/* roofline.c — the roofline of a profile drawn with cairo
 * (weir-roofline.h).  The same picture as weir_profile_roofline_svg, on
 * the axes of weir_profile_roofline_axes, scaled to the rectangle given:
 * margins are fixed in pixels, fonts too (a plot of 900 x 600 pixels
 * matches the SVG). */
#include "weir-roofline.h"

#include <math.h>

typedef struct {
  WeirRooflineAxes ax;
  double x0, y0, x1, y1; /* the plot area */
} Frame;

static double px(const Frame *f, double v) {
  return f->x0 +
         (log10(v) - f->ax.lx0) / (f->ax.lx1 - f->ax.lx0) * (f->x1 - f->x0);
}

static double py(const Frame *f, double v) {
  return f->y1 -
         (log10(v) - f->ax.ly0) / (f->ax.ly1 - f->ax.ly0) * (f->y1 - f->y0);
}

/* Text at (x, y): anchor 0 start, 0.5 middle, 1 end; y is the baseline. */
static void text_at(cairo_t *cr, double x, double y, double anchor, double size,
                    const char *text) {
  cairo_text_extents_t e;
  cairo_set_font_size(cr, size);
  cairo_text_extents(cr, text, &e);
  cairo_move_to(cr, x - anchor * e.x_advance, y);
  cairo_show_text(cr, text);
}

void weir_roofline_draw(cairo_t *cr, double width, double height,
                        const WeirProfile *p, const char *title) {
  g_return_if_fail(cr != NULL);
  const double L = 80, R = 30, T = 50, B = 60;
  cairo_save(cr);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_rectangle(cr, 0, 0, width, height);
  cairo_fill(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                         CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text_at(cr, width / 2, 28, 0.5, 16, title ? title : "roofline");
  Frame f = {.x0 = L, .y0 = T, .x1 = width - R, .y1 = height - B};
  if (!p || f.x1 - f.x0 < 20 || f.y1 - f.y0 < 20) {
    cairo_restore(cr);
    return;
  }
  weir_profile_roofline_axes(p, &f.ax);
  /* grid and decade labels */
  cairo_set_line_width(cr, 1);
  for (double d = f.ax.lx0; d <= f.ax.lx1 + 1e-9; d++) {
    double x = px(&f, pow(10, d));
    cairo_set_source_rgb(cr, 0.87, 0.87, 0.87);
    cairo_move_to(cr, x, f.y0);
    cairo_line_to(cr, x, f.y1);
    cairo_stroke(cr);
    char lab[32];
    g_snprintf(lab, sizeof lab, "%g", pow(10, d));
    cairo_set_source_rgb(cr, 0, 0, 0);
    text_at(cr, x, f.y1 + 18, 0.5, 11, lab);
  }
  for (double d = f.ax.ly0; d <= f.ax.ly1 + 1e-9; d++) {
    double y = py(&f, pow(10, d));
    cairo_set_source_rgb(cr, 0.87, 0.87, 0.87);
    cairo_move_to(cr, f.x0, y);
    cairo_line_to(cr, f.x1, y);
    cairo_stroke(cr);
    char lab[32];
    g_snprintf(lab, sizeof lab, "%g", pow(10, d));
    cairo_set_source_rgb(cr, 0, 0, 0);
    text_at(cr, f.x0 - 6, y + 4, 1, 11, lab);
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_rectangle(cr, f.x0, f.y0, f.x1 - f.x0, f.y1 - f.y0);
  cairo_stroke(cr);
  text_at(cr, (f.x0 + f.x1) / 2, height - 18, 0.5, 13,
          "operational intensity (FLOP/byte of modeled traffic)");
  cairo_save(cr);
  cairo_translate(cr, 22, (f.y0 + f.y1) / 2);
  cairo_rotate(cr, -G_PI / 2);
  text_at(cr, 0, 0, 0.5, 13, "GFLOP/s");
  cairo_restore(cr);
  /* the roof: bandwidth slope up to the ridge, then the peak */
  if (p->peak_gflops > 0 && p->bandwidth_gbs > 0) {
    double x0 = pow(10, f.ax.lx0), y0 = x0 * p->bandwidth_gbs;
    double ymin = pow(10, f.ax.ly0);
    if (y0 < ymin) {
      x0 = ymin / p->bandwidth_gbs;
      y0 = ymin;
    }
    cairo_set_source_rgb(cr, 0.8, 0.2, 0.2);
    cairo_set_line_width(cr, 2);
    cairo_move_to(cr, px(&f, x0), py(&f, y0));
    cairo_line_to(cr, px(&f, f.ax.ridge), py(&f, p->peak_gflops));
    cairo_line_to(cr, px(&f, pow(10, f.ax.lx1)), py(&f, p->peak_gflops));
    cairo_stroke(cr);
    char roof[96];
    g_snprintf(roof, sizeof roof, "peak %.1f GFLOP/s, bandwidth %.1f GB/s",
               p->peak_gflops, p->bandwidth_gbs);
    text_at(cr, f.x1 - 4, py(&f, p->peak_gflops) - 6, 1, 11, roof);
  }
  /* the nodes */
  for (guint i = 0; i < p->nodes->len; i++) {
    const WeirProfileNode *n = g_ptr_array_index(p->nodes, i);
    double xi, yi;
    if (!weir_profile_roofline_point(n, &xi, &yi))
      continue;
    double x = px(&f, xi), y = py(&f, yi);
    cairo_set_source_rgb(cr, 0.2, 0.4, 0.8);
    cairo_arc(cr, x, y, 4, 0, 2 * G_PI);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    text_at(cr, x + 6, y - 4, 0, 10, n->label ? n->label : "");
  }
  cairo_restore(cr);
}

gboolean weir_roofline_write_png(const WeirProfile *p, const char *title,
                                 int width, int height, const char *path,
                                 GError **error) {
  g_return_val_if_fail(p != NULL && path != NULL, FALSE);
  cairo_surface_t *surface =
      cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height);
  cairo_t *cr = cairo_create(surface);
  weir_roofline_draw(cr, width, height, p, title);
  cairo_destroy(cr);
  cairo_status_t st = cairo_surface_write_to_png(surface, path);
  cairo_surface_destroy(surface);
  if (st != CAIRO_STATUS_SUCCESS) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "roofline '%s': %s", path,
                cairo_status_to_string(st));
    return FALSE;
  }
  return TRUE;
}
