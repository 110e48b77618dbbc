/* gui-testing.h: helpers shared by the graph-view tests and the
 * screenshot tool: loading a program and driving the main loop. */
#ifndef WEIR_GUI_TESTING_H
#define WEIR_GUI_TESTING_H

#include "weir-graph-view.h"

/* Loads an IR JSON file or an ONNX model (by extension); with expand, its
 * library nodes are expanded into maps and tasklets.  (transfer full) */
WeirGraph *gui_testing_load(const char *path, gboolean expand, GError **error);

/* A synthetic program for timings: one state with a chain of n_maps
 * elementwise maps x_i -> x_{i+1} (4 n_maps + 1 nodes, 4 n_maps memlets).
 * (transfer full) */
WeirGraph *gui_testing_chain(guint n_maps);

/* Sets the program (NULL clears) and runs the main loop until the view
 * emits "layout-done" or timeout_s pass.  FALSE on timeout. */
gboolean gui_testing_set_and_wait(WeirGraphView *v, const WeirGraph *g,
                                  double timeout_s);
/* Same with symbol bindings (name -> gint64*, may be NULL). */
gboolean gui_testing_set_bound_and_wait(WeirGraphView *v, const WeirGraph *g,
                                        GHashTable *bindings, double timeout_s);
/* Runs the main loop until "layout-done" (after set_collapsed...). */
gboolean gui_testing_wait_layout(WeirGraphView *v, double timeout_s);
/* Runs the main loop until the widget has a size and pending draws are
 * done. */
void gui_testing_settle(GtkWidget *w);

#endif
