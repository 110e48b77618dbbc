/* graph-view-private.h — the parts of WeirGraphView (weir-graph-view.h)
 * shared by its files:
 *   graph-view.c        the widget: view control, selection, layouts,
 *                       properties, PNG export
 *   graph-layout.c      the layout worker: labels and figures, the cgraph
 *                       graph, Graphviz dot, the provisional picture, and
 *                       queries on a ViewLayout
 *   graph-view-draw.c   palette, overlay scale and drawing with cairo
 *                       (snapshot), minimap and legend
 *   graph-view-input.c  hit tests, tooltips, pointer and keyboard input
 * Graphviz's headers are included by graph-layout.c only: nothing of
 * Graphviz outlives the worker (see the top of graph-view.c).
 */
#ifndef WEIR_GRAPH_VIEW_PRIVATE_H
#define WEIR_GRAPH_VIEW_PRIVATE_H

#include "weir-graph-view.h"

G_BEGIN_DECLS

#define ZOOM_MIN 0.02
#define ZOOM_MAX 8.0
#define FIT_ZOOM_MAX 2.0 /* zoom-to-fit does not blow small graphs up */
#define FIT_MARGIN 24.0  /* pixels around a fitted picture */
#define NODE_FONT 10.0   /* layout units (= pixels at zoom 1) */
#define EDGE_FONT 8.5
#define CLUSTER_FONT 10.0
#define MIN_TEXT_PX 6.0 /* text smaller than this on screen is not drawn */
#define TOGGLE_SIZE 11.0
#define MINIMAP_W 200.0
#define MINIMAP_H 150.0
#define MINIMAP_MIN 48.0 /* narrowest side of the minimap, pixels */
#define LARGE_GRAPH 800  /* nodes: faster dot settings above this */

typedef enum {
  SHAPE_ACCESS,
  SHAPE_TASKLET,
  SHAPE_LIBRARY,
  SHAPE_MAP_ENTRY,
  SHAPE_MAP_EXIT,
  SHAPE_NESTED,
  SHAPE_COLLAPSED, /* a collapsed map scope */
  SHAPE_EMPTY,     /* placeholder of an empty state (not a program node) */
} Shape;

typedef struct {
  guint state, id;
  Shape shape;
  char *label;       /* lines separated by '\n' */
  char *folded;      /* casefolded label, for search */
  double x, y, w, h; /* centre and size */
  guint cluster;     /* index of the innermost cluster around it */
  gboolean bytes_known, flops_known;
  double bytes, flops; /* bytes: logical volume in + out */
  gboolean traffic_known;
  double traffic;    /* modeled memory traffic: a top-level map's, a top-level
                        library, tasklet or nested node's operands, an access
                        node's memlets; 0 inside a map scope */
  double comm_bytes; /* communicated between processes (Allreduce,
                        Broadcast: docs/distributed.md); 0 for the rest */
} VNode;

typedef struct {
  guint state, id; /* memlet id, or transition id */
  guint src, dst;  /* indices in the layout's nodes of the drawn ends */
  gboolean transition;
  gboolean empty; /* empty memlet: an ordering dependency */
  double *pts;    /* x, y pairs of a cubic B-spline: p0 (c1 c2 p)... */
  guint n_pts;
  gboolean arrow; /* arrowhead from the last point to (ax, ay) */
  double ax, ay;
  char *label;
  double lx, ly; /* label centre */
  double x0, y0, x1, y1;
  gboolean bytes_known;
  double bytes; /* logical volume */
  gboolean traffic_known;
  double traffic; /* modeled memory traffic (top-level memlets) */
} VEdge;

typedef struct {
  guint state, entry; /* entry 0: the state's box */
  gint parent;        /* index of the enclosing cluster, -1 for a state */
  double x0, y0, x1, y1;
  char *label;
} VCluster;

typedef struct {
  guint state, id;
  char *folded; /* casefolded label */
} SearchItem;

typedef struct {
  GArray *nodes;    /* VNode */
  GArray *edges;    /* VEdge */
  GArray *clusters; /* VCluster, a parent before its children */
  double width, height;
  double layout_ms, dot_ms;
  guint n_nodes, n_edges; /* program nodes and memlets drawn */
  GHashTable *hidden;     /* id of a node inside a collapsed scope -> id of
                             the scope's box (ids are unique in a program) */
  GArray *search;         /* SearchItem: every node, drawn or hidden, in
                             drawing order (a hidden node after its box) */
  char *totals;           /* program totals, for the legend */
  gint64 cache_bytes;     /* the traffic model's cache (0: none) */
  gboolean provisional;   /* placed from the previous picture, not by dot */
  char *name;             /* name of the program drawn */
} ViewLayout;

/* --------------------------------------------------------- layout job */

typedef struct {
  WeirGraph *program;    /* owned copy */
  GHashTable *bindings;  /* owned copy: char* -> gint64*, or NULL */
  GHashTable *collapsed; /* owned copy: guint64* (state << 32 | entry) */
} LayoutJob;

typedef enum { DRAG_NONE, DRAG_PAN, DRAG_MINIMAP } DragMode;

struct _WeirGraphView {
  GtkWidget parent_instance;

  WeirGraph *program;    /* owned copy, or NULL */
  GHashTable *bindings;  /* owned copy, or NULL */
  GHashTable *collapsed; /* guint64 scope keys */
  ViewLayout *layout;    /* picture on screen, or NULL */
  char *layout_error;
  char *shown_name; /* name of the program of the last layout */

  gboolean busy, pending, fit_pending;
  GCancellable *cancel;

  WeirOverlay overlay;
  GHashTable *times; /* guint64* (state << 32 | node) -> double* seconds
                        of the last profile (weir_graph_view_set_times) */
  WeirElement selection;
  guint hl_state;
  GHashTable *hl_nodes; /* node ids (GUINT_TO_POINTER) */

  double zoom, ox, oy; /* origin: layout point at the top-left corner */
  double pointer_x, pointer_y;
  DragMode drag_mode;
  double drag_ox, drag_oy;
  double pinch_zoom0;
  double last_draw_ms;
  double last_provisional_ms;
};

/* ------------------------------------------------------ graph-layout.c */

void weir_view_layout_free(gpointer p);
void weir_view_layout_job_free(gpointer p);
/* The key of a map scope in the set of collapsed scopes. */
guint64 weir_view_scope_key(guint state, guint entry);
/* Sets of guint64 keys (transfer full). */
GHashTable *weir_view_key_set_new(void);
void weir_view_key_set_add(GHashTable *set, guint64 key);
GHashTable *weir_view_key_set_copy(GHashTable *set);
/* A copy of a bindings table (char* -> gint64*), or NULL for NULL. */
GHashTable *weir_view_bindings_copy(GHashTable *bindings);
/* "1.5 MB"-style text of v in unit, in buf. */
/* The cache size of the traffic model (weir_hw_model_cache_bytes of the
 * cached hardware profile), read once per process. */
gint64 weir_view_model_cache(void);
void weir_view_format_quantity(char *buf, gsize size, double v,
                               const char *unit);
/* GTask thread function: lays out the LayoutJob of its task data with dot
 * and returns the ViewLayout (or an error). */
void weir_view_layout_thread(GTask *task, gpointer source, gpointer data,
                             GCancellable *cancel);
/* The picture of program g placed from old (the picture on screen) without
 * running dot: kept nodes stay where they were, new ones are estimated
 * (transfer full). */
ViewLayout *weir_view_layout_provisional(const ViewLayout *old, WeirGraph *g,
                                         GHashTable *bindings,
                                         GHashTable *collapsed);
/* The drawn node that stands for node id (the box of a collapsed scope
 * hiding it, else itself). */
guint weir_view_layout_drawn_id(const ViewLayout *l, guint id);
/* The drawn node of node id in state (or of the collapsed scope hiding
 * it), and its index when index is not NULL; NULL when not drawn. */
const VNode *weir_view_layout_find_node(const ViewLayout *l, guint state,
                                        guint id, guint *index);
/* The rectangle (x0, y0, x1, y1) of an element in the picture; FALSE when
 * it is not drawn. */
gboolean weir_view_layout_element_rect(const ViewLayout *l,
                                       const WeirElement *e, double r[4]);

/* -------------------------------------------------------- graph-view.c */

/* Zooms to z keeping the layout point under screen point (sx, sy). */
void weir_graph_view_zoom_at(WeirGraphView *v, double z, double sx, double sy);
/* Centres the view on layout point (x, y). */
void weir_graph_view_center_on(WeirGraphView *v, double x, double y);
/* Emits activate-element (a double click on e). */
void weir_graph_view_emit_activate(WeirGraphView *v, WeirElement *e);

/* --------------------------------------------------- graph-view-draw.c */

void weir_graph_view_snapshot(GtkWidget *widget, GtkSnapshot *snap);
/* Where the minimap is on screen (mx, my: its top-left corner) and its
 * scale (msx, msy: pixels per layout unit); FALSE when none is drawn. */
gboolean weir_graph_view_minimap_geometry(WeirGraphView *v, double *mx,
                                          double *my, double *msx, double *msy);

/* -------------------------------------------------- graph-view-input.c */

/* Adds the tooltip, gesture and key controllers (from init). */
void weir_graph_view_input_init(WeirGraphView *v);

G_END_DECLS

#endif
