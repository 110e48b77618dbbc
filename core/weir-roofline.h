/* weir-roofline.h — the roofline of a profile (weir-profile.h) drawn with
 * cairo: log-log axes (FLOP per byte of modeled traffic against GFLOP/s),
 * the bandwidth slope and the compute roof of the hardware profile, and
 * one labelled point per node whose FLOPs, bytes and time are known and
 * positive.
 *
 * Not part of libweir: a small static library (weir_roofline, built when
 * cairo is found) that the command line (`weir profile --plot x.png`) and
 * the GUI's roofline page link, so that libweir itself does not depend on
 * cairo (docs/analysis.md).  The SVG of weir_profile_roofline_svg shows
 * the same picture without cairo.
 */
#ifndef WEIR_ROOFLINE_H
#define WEIR_ROOFLINE_H

#include <cairo.h>

#include "weir-profile.h"

G_BEGIN_DECLS

/* Draws the roofline of p (borrowed; NULL: an empty frame with `title`)
 * into the rectangle (0, 0, width, height) of cr, white background, black
 * text.  title may be NULL. */
void weir_roofline_draw(cairo_t *cr, double width, double height,
                        const WeirProfile *p, const char *title);

/* The roofline of p as a PNG file of width x height pixels; FALSE with an
 * error naming the file when it cannot be written. */
gboolean weir_roofline_write_png(const WeirProfile *p, const char *title,
                                 int width, int height, const char *path,
                                 GError **error);

G_END_DECLS

#endif
