/* weir-graph-view.h: the graph canvas of the Weir workbench.
 *
 * WeirGraphView is a GtkWidget that draws one program (WeirGraph): each
 * state as a box holding its dataflow graph; access nodes, tasklets,
 * library nodes and nested programs drawn distinctly; map scopes as
 * frames around their contents that can be collapsed; memlets as edges
 * labelled with subset and volume. Layout comes from Graphviz (libgvc,
 * dot) and is computed in a worker thread (GTask); the view shows a
 * "laying out..." placeholder meanwhile and never blocks the main loop.
 *
 * The view holds a deep copy of the program it shows and owns no other
 * state of the session: the application sets a new program after every
 * change.
 *
 * Coordinates: layout units are points (1/72 in) as dot computes them;
 * the view keeps a zoom factor and a pan offset on top.
 */
#ifndef WEIR_GRAPH_VIEW_H
#define WEIR_GRAPH_VIEW_H

#include <gtk/gtk.h>

#include "weir-graph.h"

G_BEGIN_DECLS

#define WEIR_TYPE_GRAPH_VIEW (weir_graph_view_get_type())
G_DECLARE_FINAL_TYPE(WeirGraphView, weir_graph_view, WEIR, GRAPH_VIEW,
                     GtkWidget)

/* What node and edge colours encode (the heat scale has a legend drawn
 * in a corner of the view). */
typedef enum {
  WEIR_OVERLAY_NONE,
  WEIR_OVERLAY_BYTES,     /* modeled memory traffic per memlet / per node
                             (weir_analysis_compute_traffic with the cache
                             of weir_hw_model_cache_bytes; docs/analysis.md)
                             of the top level of each state */
  WEIR_OVERLAY_FLOPS,     /* floating-point operations per node */
  WEIR_OVERLAY_INTENSITY, /* FLOPs per byte of modeled traffic per node */
  WEIR_OVERLAY_TIME,      /* measured time per node: the profile of the
                             last Run or Benchmark (weir_graph_view_set_
                             times) */
} WeirOverlay;

/* A selected or highlighted element. kind NODE: state + node id;
 * kind EDGE: state + memlet id; kind STATE: state only. */
typedef enum {
  WEIR_ELEMENT_NONE,
  WEIR_ELEMENT_STATE,
  WEIR_ELEMENT_NODE,
  WEIR_ELEMENT_EDGE,
} WeirElementKind;

typedef struct {
  WeirElementKind kind;
  guint state;
  guint id;
} WeirElement;

/* WeirElement as a boxed type (the argument of "activate-element"). */
#define WEIR_TYPE_ELEMENT (weir_element_get_type())
GType weir_element_get_type(void);

GtkWidget *weir_graph_view_new(void);

/* Shows a copy of `program` (NULL clears the view). `bindings` (name ->
 * gint64 as GINT_TO_POINTER-free boxed int64, may be NULL) fixes symbol
 * values so volumes can be shown as numbers. Layout runs in a worker
 * thread; "layout-done" is emitted when the new picture is on screen.
 * The selection is kept when the selected element still exists. */
void weir_graph_view_set_program(WeirGraphView *v, const WeirGraph *program,
                                 GHashTable *bindings);
/* TRUE while a layout is running. */
gboolean weir_graph_view_is_busy(WeirGraphView *v);
/* TRUE while the picture on screen is provisional: set_program() with a
 * new version of the program shown (same name) draws it at once from the
 * previous picture (kept nodes and memlets where they were, new nodes
 * next to their neighbours, new memlets straight) with a "Refining
 * layout..." note, until dot's layout replaces it. */
gboolean weir_graph_view_is_provisional(WeirGraphView *v);
/* Wall time of building the last provisional picture, in ms. */
double weir_graph_view_last_provisional_ms(WeirGraphView *v);

void weir_graph_view_set_overlay(WeirGraphView *v, WeirOverlay overlay);
/* The measured time of nodes (the "measured time" overlay): n entries of
 * state id, node id (of the program shown) and seconds; times of one node
 * are added.  n == 0 clears them.  Kept across set_program (the nodes are
 * matched by id). */
void weir_graph_view_set_times(WeirGraphView *v, const guint *states,
                               const guint *nodes, const double *seconds,
                               guint n);
/* The seconds set for a node; FALSE when none. */
gboolean weir_graph_view_get_time(WeirGraphView *v, guint state, guint node,
                                  double *seconds);
WeirOverlay weir_graph_view_get_overlay(WeirGraphView *v);

/* Selection (one element; NULL or kind NONE clears it). Emits
 * "selection-changed" when it changes, from the user or from here. */
void weir_graph_view_select(WeirGraphView *v, const WeirElement *e);
WeirElement weir_graph_view_get_selection(WeirGraphView *v);

/* Highlights a set of nodes (e.g. the nodes a transformation site
 * touches) in one state; NULL/0 clears. Drawn in addition to the
 * selection. */
void weir_graph_view_highlight(WeirGraphView *v, guint state,
                               const guint *nodes, guint n_nodes);

/* Finds the first node whose label contains `text` (case-insensitive),
 * after the current selection, wrapping; selects it and scrolls to it.
 * Returns FALSE when nothing matches. */
gboolean weir_graph_view_search(WeirGraphView *v, const char *text);

/* Collapses or expands the map scope whose entry is `entry` in `state`
 * (a collapsed scope is drawn as one box); triggers a new layout. */
void weir_graph_view_set_collapsed(WeirGraphView *v, guint state, guint entry,
                                   gboolean collapsed);

/* The element drawn at widget point (x, y): a node (a collapsed scope is
 * its entry), a memlet, a map scope's frame (its entry) or a state's box;
 * kind NONE when there is none.  What a click there selects. */
WeirElement weir_graph_view_element_at(WeirGraphView *v, double x, double y);
/* Bounds of a drawn element in widget coordinates (e.g. to place a
 * popover); FALSE when it is not in the picture. */
gboolean weir_graph_view_get_element_bounds(WeirGraphView *v,
                                            const WeirElement *e,
                                            graphene_rect_t *out);

/* TRUE when the scope of map entry `entry` in `state` is collapsed. */
gboolean weir_graph_view_get_collapsed(WeirGraphView *v, guint state,
                                       guint entry);

/* View control. Zoom is clamped to [0.02, 8]. */
void weir_graph_view_zoom_fit(WeirGraphView *v);
void weir_graph_view_zoom_to_selection(WeirGraphView *v);
void weir_graph_view_set_zoom(WeirGraphView *v, double zoom);
double weir_graph_view_get_zoom(WeirGraphView *v);

/* Statistics of the picture on screen, for tests and the status bar. */
guint weir_graph_view_n_drawn_nodes(WeirGraphView *v);
guint weir_graph_view_n_drawn_edges(WeirGraphView *v);
/* Wall time of the last layout (worker) and of the last snapshot, in
 * milliseconds. */
double weir_graph_view_last_layout_ms(WeirGraphView *v);
double weir_graph_view_last_draw_ms(WeirGraphView *v);

/* Renders the view as it is on screen (same size, zoom, overlay) to a PNG
 * file: the widget's snapshot is rendered to a GdkTexture by the window's
 * renderer.  Fails when the widget is not realized or has no size, or the
 * file cannot be written. */
gboolean weir_graph_view_save_png(WeirGraphView *v, const char *path,
                                  GError **error);

/* Wall time of the Graphviz part of the last layout (agraph build, dot,
 * read-back), included in last_layout_ms. */
double weir_graph_view_last_dot_ms(WeirGraphView *v);

/* Properties (notified on change, e.g. for a status bar):
 *   "zoom"    (double, read-write)
 *   "overlay" (guint holding a WeirOverlay, read-write)
 *   "busy"    (gboolean, read-only): a layout is running
 *
 * Signals:
 *   "selection-changed" (void)
 *   "layout-done"       (void)
 *   "activate-element"  (WeirElement *)  double click
 *
 * Input: drag (any button) or scroll pans; ctrl+scroll and pinch zoom
 * around the pointer; keys + and - zoom, 0 fits, 1 is 100%, arrows pan,
 * Escape clears the selection.  A click selects the node, memlet, map
 * scope (its entry) or state under the pointer; the [-]/[+] box at a
 * scope's corner collapses/expands it; a click or drag in the minimap
 * moves the view there.
 */

G_END_DECLS

#endif
