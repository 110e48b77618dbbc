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
 */
#include "weir-graph-view.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "weir-analysis.h"

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

static gpointer weir_element_copy_(gpointer e) {
  return g_memdup2(e, sizeof(WeirElement));
}

G_DEFINE_BOXED_TYPE(WeirElement, weir_element, weir_element_copy_, g_free)

/* ------------------------------------------------------------- layout */

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
  double bytes, flops;
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
  double bytes;
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

static void search_item_clear(gpointer p) {
  g_free(((SearchItem *)p)->folded);
}

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
  gboolean provisional;   /* placed from the previous picture, not by dot */
  char *name;             /* name of the program drawn */
} ViewLayout;

static void vnode_clear(gpointer p) {
  VNode *n = p;
  g_free(n->label);
  g_free(n->folded);
}

static void vedge_clear(gpointer p) {
  VEdge *e = p;
  g_free(e->pts);
  g_free(e->label);
}

static void vcluster_clear(gpointer p) {
  VCluster *c = p;
  g_free(c->label);
}

static ViewLayout *view_layout_new(void) {
  ViewLayout *l = g_new0(ViewLayout, 1);
  l->nodes = g_array_new(FALSE, TRUE, sizeof(VNode));
  g_array_set_clear_func(l->nodes, vnode_clear);
  l->edges = g_array_new(FALSE, TRUE, sizeof(VEdge));
  g_array_set_clear_func(l->edges, vedge_clear);
  l->clusters = g_array_new(FALSE, TRUE, sizeof(VCluster));
  g_array_set_clear_func(l->clusters, vcluster_clear);
  l->hidden = g_hash_table_new(g_direct_hash, g_direct_equal);
  l->search = g_array_new(FALSE, TRUE, sizeof(SearchItem));
  g_array_set_clear_func(l->search, search_item_clear);
  return l;
}

static void view_layout_free(gpointer p) {
  ViewLayout *l = p;
  if (!l)
    return;
  g_array_unref(l->nodes);
  g_array_unref(l->edges);
  g_array_unref(l->clusters);
  g_hash_table_unref(l->hidden);
  g_array_unref(l->search);
  g_free(l->totals);
  g_free(l->name);
  g_free(l);
}

/* --------------------------------------------------------- layout job */

typedef struct {
  WeirGraph *program;    /* owned copy */
  GHashTable *bindings;  /* owned copy: char* -> gint64*, or NULL */
  GHashTable *collapsed; /* owned copy: guint64* (state << 32 | entry) */
} LayoutJob;

static void layout_job_free(gpointer p) {
  LayoutJob *job = p;
  weir_graph_free(job->program);
  g_clear_pointer(&job->bindings, g_hash_table_unref);
  g_clear_pointer(&job->collapsed, g_hash_table_unref);
  g_free(job);
}

static guint64 scope_key(guint state, guint entry) {
  return ((guint64)state << 32) | entry;
}

static GHashTable *key_set_new(void) {
  return g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
}

static void key_set_add(GHashTable *set, guint64 key) {
  guint64 *k = g_new(guint64, 1);
  *k = key;
  g_hash_table_add(set, k);
}

static GHashTable *key_set_copy(GHashTable *set) {
  GHashTable *copy = key_set_new();
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init(&it, set);
  while (g_hash_table_iter_next(&it, &k, NULL))
    key_set_add(copy, *(guint64 *)k);
  return copy;
}

static GHashTable *bindings_copy(GHashTable *bindings) {
  if (!bindings)
    return NULL;
  GHashTable *copy =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  GHashTableIter it;
  gpointer k, val;
  g_hash_table_iter_init(&it, bindings);
  while (g_hash_table_iter_next(&it, &k, &val))
    g_hash_table_insert(copy, g_strdup(k), g_memdup2(val, sizeof(gint64)));
  return copy;
}

/* ----------------------------------------------------------- labels */

/* "i=0:64, j=0:48" (+ the schedule when not sequential). */
static void append_map_ranges(GString *out, const WeirMap *m) {
  for (guint i = 0; i < m->params->len; i++) {
    g_autofree char *r =
        weir_range_to_string(&g_array_index(m->ranges, WeirRange, i));
    g_string_append_printf(out, "%s%s=%s", i ? ", " : "",
                           (const char *)g_ptr_array_index(m->params, i), r);
  }
  if (m->schedule != WEIR_SCHEDULE_SEQUENTIAL)
    g_string_append_printf(out, " [%s]", weir_schedule_name(m->schedule));
}

static char *node_label(const WeirGraph *g, const WeirNode *n) {
  GString *s = g_string_new(NULL);
  switch (n->kind) {
  case WEIR_NODE_ACCESS: {
    g_string_append(s, n->data ? n->data : "?");
    WeirContainer *c = n->data ? weir_graph_container(g, n->data) : NULL;
    if (c) {
      g_string_append_printf(s, "\n%s[", weir_dtype_name(c->dtype));
      for (guint i = 0; i < c->shape->len; i++) {
        g_autofree char *d =
            weir_expr_to_string(g_ptr_array_index(c->shape, i));
        g_string_append_printf(s, "%s%s", i ? "," : "", d);
      }
      g_string_append_c(s, ']');
    }
    break;
  }
  case WEIR_NODE_LIBRARY:
    g_string_append_printf(s, "%s\n%s", n->label ? n->label : "",
                           n->op ? n->op : "?");
    break;
  case WEIR_NODE_MAP_ENTRY:
    g_string_append_printf(s, "%s\n", n->label ? n->label : "map");
    if (n->map)
      append_map_ranges(s, n->map);
    break;
  case WEIR_NODE_MAP_EXIT:
    g_string_append_printf(s, "%s end", n->label ? n->label : "map");
    break;
  default:
    g_string_append(s, n->label ? n->label : weir_node_kind_name(n->kind));
    break;
  }
  return g_string_free(s, FALSE);
}

/* "container[subset] (volume)", the volume as a number when the bindings
 * fix it. */
static char *memlet_label(const WeirMemlet *m, GHashTable *bindings) {
  if (!m->data)
    return g_strdup("");
  GString *s = g_string_new(m->data);
  if (m->subset && m->subset->rank > 0) {
    g_autofree char *sub = weir_subset_to_string(m->subset);
    g_string_append_printf(s, "[%s]", sub);
  }
  if (m->volume) {
    gint64 v;
    if (weir_expr_eval(m->volume, bindings, &v, NULL))
      g_string_append_printf(s, " (%s%" G_GINT64_FORMAT ")",
                             m->dynamic ? "\u2264" : "", v);
    else {
      g_autofree char *e = weir_expr_to_string(m->volume);
      g_string_append_printf(s, " (%s%s)", m->dynamic ? "\u2264" : "", e);
    }
  }
  if (m->wcr != WEIR_WCR_NONE)
    g_string_append_printf(s, " %s", weir_wcr_name(m->wcr));
  return g_string_free(s, FALSE);
}

static char *transition_label(const WeirTransition *t) {
  GString *s = g_string_new(t->condition_text ? t->condition_text : "");
  for (guint i = 0; i < t->assign_names->len; i++) {
    g_autofree char *v = weir_expr_to_string(t->assign_values->pdata[i]);
    g_string_append_printf(s, "%s%s=%s", s->len ? "; " : "",
                           (const char *)t->assign_names->pdata[i], v);
  }
  return g_string_free(s, FALSE);
}

/* A label as dot text: lines joined by "\n" escapes, backslashes doubled
 * (dot gives \N, \G, ... a meaning). */
static char *dot_text(const char *label) {
  GString *s = g_string_new(NULL);
  for (const char *p = label; *p; p++) {
    if (*p == '\\')
      g_string_append(s, "\\\\");
    else if (*p == '\n')
      g_string_append(s, "\\n");
    else
      g_string_append_c(s, *p);
  }
  return g_string_free(s, FALSE);
}

static void format_quantity(char *buf, gsize size, double v, const char *unit) {
  static const char *const prefixes[] = {"", "k", "M", "G", "T", "P"};
  guint p = 0;
  while (fabs(v) >= 1000.0 && p + 1 < G_N_ELEMENTS(prefixes)) {
    v /= 1000.0;
    p++;
  }
  if (p == 0)
    g_snprintf(buf, size, "%.3g %s", v, unit);
  else
    g_snprintf(buf, size, "%.3g %s%s", v, prefixes[p], unit);
}

/* ------------------------------------------------ building the agraph */

/* Everything Graphviz needs for one layout, and the links back from the
 * Graphviz objects to the layout's arrays. */
typedef struct {
  Agraph_t *root;
  GPtrArray *gv_nodes;    /* Agnode_t*, parallel to layout->nodes */
  GPtrArray *gv_edges;    /* Agedge_t*, parallel to layout->edges */
  GPtrArray *gv_clusters; /* Agraph_t*, parallel to layout->clusters */
  gboolean large;         /* more than LARGE_GRAPH nodes */
  gboolean no_gv;         /* only the layout's arrays (a provisional picture) */
} GvBuild;

static GMutex gv_lock; /* libgvc and cgraph are used by one thread at once */
static GVC_t *gv_context;

static void set_attr(void *obj, const char *name, const char *value) {
  agsafeset(obj, (char *)name, (char *)value, "");
}

/* Appends vn to the layout (inside cluster `parent`) and, unless b->no_gv,
 * a Graphviz node for it; returns its index in l->nodes. */
static guint add_gv_node(GvBuild *b, guint parent, ViewLayout *l, VNode *vn) {
  vn->cluster = parent;
  guint index = l->nodes->len;
  if (b->no_gv) {
    g_array_append_val(l->nodes, *vn);
    return index;
  }
  char name[32];
  if (vn->shape == SHAPE_EMPTY)
    g_snprintf(name, sizeof name, "empty%u", vn->state);
  else if (vn->shape == SHAPE_COLLAPSED)
    g_snprintf(name, sizeof name, "c%u", vn->id);
  else
    g_snprintf(name, sizeof name, "n%u", vn->id);
  Agnode_t *n = agnode(b->gv_clusters->pdata[parent], name, 1);
  g_autofree char *text = dot_text(vn->label);
  set_attr(n, "label", text);
  switch (vn->shape) {
  case SHAPE_ACCESS:
    set_attr(n, "shape", "ellipse");
    break;
  case SHAPE_TASKLET:
    set_attr(n, "shape", "octagon");
    break;
  case SHAPE_MAP_ENTRY:
    set_attr(n, "shape", "trapezium");
    break;
  case SHAPE_MAP_EXIT:
    set_attr(n, "shape", "invtrapezium");
    break;
  case SHAPE_NESTED:
    set_attr(n, "shape", "box");
    set_attr(n, "peripheries", "2");
    break;
  case SHAPE_EMPTY:
    set_attr(n, "shape", "plaintext");
    break;
  case SHAPE_COLLAPSED: /* room for the [+] box in the corner */
    set_attr(n, "shape", "box");
    set_attr(n, "margin", "0.3,0.06");
    break;
  default:
    set_attr(n, "shape", "box");
    break;
  }
  g_array_append_val(l->nodes, *vn);
  g_ptr_array_add(b->gv_nodes, n);
  return index;
}

/* Appends a cluster inside cluster `parent` (-1: the root); returns its
 * index in l->clusters. */
static guint add_gv_cluster(GvBuild *b, gint parent, ViewLayout *l, guint state,
                            guint entry, char *label) {
  guint index = l->clusters->len;
  VCluster c = {
      .state = state, .entry = entry, .parent = parent, .label = label};
  g_array_append_val(l->clusters, c);
  if (b->no_gv)
    return index;
  char name[40];
  g_snprintf(name, sizeof name, "cluster_%u", entry ? entry : state);
  Agraph_t *sg =
      agsubg(parent < 0 ? b->root : b->gv_clusters->pdata[parent], name, 1);
  g_autofree char *text = dot_text(label);
  set_attr(sg, "label", text);
  set_attr(sg, "labeljust", "l");
  set_attr(sg, "labelloc", "t");
  g_ptr_array_add(b->gv_clusters, sg);
  return index;
}

static void node_figures(const WeirAnalysis *an, guint id, VNode *vn) {
  const WeirNodeCost *c = an ? weir_analysis_node(an, id) : NULL;
  if (!c)
    return;
  vn->bytes_known = c->bytes_in.known && c->bytes_out.known;
  vn->bytes = (double)c->bytes_in.value + (double)c->bytes_out.value;
  vn->flops_known = c->flops.known;
  vn->flops = (double)c->flops.value;
}

/* The scope a node is drawn in: a map entry and its exit in their own
 * scope, other nodes in their parent's. */
static guint scope_of(const WeirScopes *sc, const WeirNode *n) {
  if (n->kind == WEIR_NODE_MAP_ENTRY)
    return n->id;
  if (n->kind == WEIR_NODE_MAP_EXIT)
    return n->entry;
  return sc ? weir_scopes_parent(sc, n->id) : 0;
}

/* The node that stands for n in the picture: the outermost collapsed
 * scope around it, else n itself. */
static guint representative(const WeirScopes *sc, GHashTable *collapsed,
                            guint state, const WeirNode *n) {
  guint rep = n->id;
  if (!sc)
    return rep;
  for (guint e = scope_of(sc, n); e; e = weir_scopes_parent(sc, e)) {
    guint64 k = scope_key(state, e);
    if (g_hash_table_contains(collapsed, &k))
      rep = e;
  }
  return rep;
}

typedef struct {
  GHashTable *drawn; /* node id -> 1 + index in the layout's nodes */
  guint first;       /* index of a node of the state, for transitions */
  gboolean has_first;
  guint cluster; /* index of the state's cluster */
} StateBuild;

static void build_state(GvBuild *b, ViewLayout *l, const WeirGraph *g,
                        const WeirState *s, const WeirAnalysis *an,
                        LayoutJob *job, StateBuild *sb) {
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, NULL);
  g_autofree char *slabel =
      g_strdup_printf("%s (state %u)", s->label ? s->label : "state", s->id);
  sb->cluster = add_gv_cluster(b, -1, l, s->id, 0, g_steal_pointer(&slabel));
  sb->drawn = g_hash_table_new(g_direct_hash, g_direct_equal);
  /* clusters of expanded scopes: entry id -> 1 + cluster index */
  g_autoptr(GHashTable) clusters =
      g_hash_table_new(g_direct_hash, g_direct_equal);
  /* hidden node counts of collapsed scopes */
  g_autoptr(GHashTable) hidden =
      g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GHashTable) reps = g_hash_table_new(g_direct_hash, g_direct_equal);

  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    guint rep = representative(sc, job->collapsed, s->id, n);
    g_hash_table_insert(reps, GUINT_TO_POINTER(n->id), GUINT_TO_POINTER(rep));
    if (rep != n->id) {
      g_hash_table_insert(l->hidden, GUINT_TO_POINTER(n->id),
                          GUINT_TO_POINTER(rep));
      guint c =
          GPOINTER_TO_UINT(g_hash_table_lookup(hidden, GUINT_TO_POINTER(rep)));
      g_hash_table_insert(hidden, GUINT_TO_POINTER(rep),
                          GUINT_TO_POINTER(c + 1));
    }
  }

  /* Nodes in topological order, so an entry (and its cluster) comes
   * before what its scope contains. */
  guint n_order = sc ? sc->order->len : s->nodes->len;
  for (guint i = 0; i < n_order; i++) {
    WeirNode *n = sc ? weir_state_node(s, g_array_index(sc->order, guint, i))
                     : g_ptr_array_index(s->nodes, i);
    if (!n)
      continue;
    guint rep =
        GPOINTER_TO_UINT(g_hash_table_lookup(reps, GUINT_TO_POINTER(n->id)));
    gboolean is_collapsed_entry = FALSE;
    if (rep != n->id) { /* inside a collapsed scope: searchable only */
      g_autofree char *label = node_label(g, n);
      SearchItem it = {s->id, n->id, g_utf8_casefold(label, -1)};
      g_array_append_val(l->search, it);
      continue;
    }
    if (n->kind == WEIR_NODE_MAP_ENTRY && sc) {
      guint64 k = scope_key(s->id, n->id);
      is_collapsed_entry = g_hash_table_contains(job->collapsed, &k);
    }
    /* the cluster the node goes in */
    guint home = is_collapsed_entry ? (sc ? weir_scopes_parent(sc, n->id) : 0)
                                    : scope_of(sc, n);
    guint parent = home ? GPOINTER_TO_UINT(g_hash_table_lookup(
                              clusters, GUINT_TO_POINTER(home)))
                        : 0;
    parent = parent ? parent - 1 : sb->cluster;
    if (n->kind == WEIR_NODE_MAP_ENTRY && !is_collapsed_entry) {
      /* the ranges are on the entry node: the frame names the map */
      parent =
          add_gv_cluster(b, (gint)parent, l, s->id, n->id,
                         g_strdup_printf("map %s", n->label ? n->label : ""));
      g_hash_table_insert(clusters, GUINT_TO_POINTER(n->id),
                          GUINT_TO_POINTER(parent + 1));
    }
    VNode vn = {.state = s->id, .id = n->id};
    if (is_collapsed_entry) {
      vn.shape = SHAPE_COLLAPSED;
      GString *t = g_string_new(n->label ? n->label : "map");
      g_string_append_c(t, '\n');
      if (n->map)
        append_map_ranges(t, n->map);
      guint h = GPOINTER_TO_UINT(
          g_hash_table_lookup(hidden, GUINT_TO_POINTER(n->id)));
      g_string_append_printf(t, "\n(%u node%s inside)", h, h == 1 ? "" : "s");
      vn.label = g_string_free(t, FALSE);
    } else {
      static const Shape shapes[WEIR_NODE_KIND_COUNT] = {
          [WEIR_NODE_ACCESS] = SHAPE_ACCESS,
          [WEIR_NODE_TASKLET] = SHAPE_TASKLET,
          [WEIR_NODE_MAP_ENTRY] = SHAPE_MAP_ENTRY,
          [WEIR_NODE_MAP_EXIT] = SHAPE_MAP_EXIT,
          [WEIR_NODE_LIBRARY] = SHAPE_LIBRARY,
          [WEIR_NODE_NESTED] = SHAPE_NESTED,
      };
      vn.shape = shapes[n->kind];
      vn.label = node_label(g, n);
    }
    vn.folded = g_utf8_casefold(vn.label, -1);
    SearchItem item = {s->id, n->id, g_strdup(vn.folded)};
    g_array_append_val(l->search, item);
    node_figures(an, n->id, &vn);
    guint gn = add_gv_node(b, parent, l, &vn);
    l->n_nodes++;
    g_hash_table_insert(sb->drawn, GUINT_TO_POINTER(n->id),
                        GUINT_TO_POINTER(gn + 1));
    if (!sb->has_first) {
      sb->first = gn;
      sb->has_first = TRUE;
    }
  }
  if (!sb->has_first) {
    VNode vn = {.state = s->id, .shape = SHAPE_EMPTY};
    vn.label = g_strdup("(empty state)");
    vn.folded = g_strdup("");
    sb->first = add_gv_node(b, sb->cluster, l, &vn);
    sb->has_first = TRUE;
  }

  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    guint src =
        GPOINTER_TO_UINT(g_hash_table_lookup(reps, GUINT_TO_POINTER(m->src)));
    guint dst =
        GPOINTER_TO_UINT(g_hash_table_lookup(reps, GUINT_TO_POINTER(m->dst)));
    guint t =
        GPOINTER_TO_UINT(g_hash_table_lookup(sb->drawn, GUINT_TO_POINTER(src)));
    guint h =
        GPOINTER_TO_UINT(g_hash_table_lookup(sb->drawn, GUINT_TO_POINTER(dst)));
    if (!t || !h || src == dst)
      continue; /* inside a collapsed scope */
    VEdge ve = {.state = s->id,
                .id = m->id,
                .src = t - 1,
                .dst = h - 1,
                .empty = m->data == NULL};
    ve.label = memlet_label(m, job->bindings);
    if (!b->no_gv) {
      char name[32];
      g_snprintf(name, sizeof name, "e%u", m->id);
      Agedge_t *e = agedge(b->root, b->gv_nodes->pdata[t - 1],
                           b->gv_nodes->pdata[h - 1], name, 1);
      if (*ve.label) {
        g_autofree char *text = dot_text(ve.label);
        set_attr(e, b->large ? "xlabel" : "label", text);
      }
      if (ve.empty)
        set_attr(e, "style", "dashed");
      g_ptr_array_add(b->gv_edges, e);
    }
    const WeirMemletCost *mc = an ? weir_analysis_memlet(an, m->id) : NULL;
    if (mc) {
      ve.bytes_known = mc->bytes.known;
      ve.bytes = (double)mc->bytes.value;
    }
    g_array_append_val(l->edges, ve);
    l->n_edges++;
  }
}

/* Reads a bezier spline back, flipping y. */
static void read_edge(VEdge *ve, Agedge_t *e, double ox, double top) {
  if (ED_spl(e) && ED_spl(e)->size > 0) {
    bezier *bz = &ED_spl(e)->list[0];
    ve->n_pts = (guint)bz->size;
    ve->pts = g_new(double, 2 * ve->n_pts);
    for (guint i = 0; i < ve->n_pts; i++) {
      ve->pts[2 * i] = bz->list[i].x - ox;
      ve->pts[2 * i + 1] = top - bz->list[i].y;
    }
    if (bz->eflag) {
      ve->arrow = TRUE;
      ve->ax = bz->ep.x - ox;
      ve->ay = top - bz->ep.y;
    }
  }
  ve->x0 = ve->y0 = G_MAXDOUBLE;
  ve->x1 = ve->y1 = -G_MAXDOUBLE;
  for (guint i = 0; i < ve->n_pts; i++) {
    ve->x0 = MIN(ve->x0, ve->pts[2 * i]);
    ve->x1 = MAX(ve->x1, ve->pts[2 * i]);
    ve->y0 = MIN(ve->y0, ve->pts[2 * i + 1]);
    ve->y1 = MAX(ve->y1, ve->pts[2 * i + 1]);
  }
  if (ve->arrow) {
    ve->x0 = MIN(ve->x0, ve->ax);
    ve->x1 = MAX(ve->x1, ve->ax);
    ve->y0 = MIN(ve->y0, ve->ay);
    ve->y1 = MAX(ve->y1, ve->ay);
  }
  textlabel_t *lab = ED_label(e) ? ED_label(e) : ED_xlabel(e);
  if (lab && lab->set) {
    ve->lx = lab->pos.x - ox;
    ve->ly = top - lab->pos.y;
    double hw = lab->dimen.x / 2, hh = lab->dimen.y / 2;
    ve->x0 = MIN(ve->x0, ve->lx - hw);
    ve->x1 = MAX(ve->x1, ve->lx + hw);
    ve->y0 = MIN(ve->y0, ve->ly - hh);
    ve->y1 = MAX(ve->y1, ve->ly + hh);
  } else if (lab) /* not placed: not drawn */
    g_clear_pointer(&ve->label, g_free);
  if (ve->n_pts == 0 && !(lab && lab->set))
    ve->x0 = ve->y0 = ve->x1 = ve->y1 = 0;
}

/* The analysis figures of g and the totals line of the legend (NULL when
 * the program's scopes are broken). */
static WeirAnalysis *layout_analysis(ViewLayout *l, const WeirGraph *g,
                                     GHashTable *bindings) {
  WeirAnalysis *an = weir_analysis_compute(g, bindings, NULL);
  if (an) {
    char b[32], f[32];
    if (an->total_bytes.known)
      format_quantity(b, sizeof b, (double)an->total_bytes.value, "B");
    else
      g_strlcpy(b, "?", sizeof b);
    if (an->total_flops.known)
      format_quantity(f, sizeof f, (double)an->total_flops.value, "FLOP");
    else
      g_strlcpy(f, "?", sizeof f);
    GString *t = g_string_new(NULL);
    g_string_printf(t, "total: %s moved, %s", b, f);
    /* unknown figures mostly come from symbols without a value */
    GString *unbound = g_string_new(NULL);
    for (guint i = 0; i < g->symbols->len; i++) {
      const char *sym = g_ptr_array_index(g->symbols, i);
      if (!bindings || !g_hash_table_contains(bindings, sym))
        g_string_append_printf(unbound, "%s%s", unbound->len ? ", " : "", sym);
    }
    if (unbound->len && (!an->total_bytes.known || !an->total_flops.known))
      g_string_append_printf(t, "\nunbound: %s", unbound->str);
    g_string_free(unbound, TRUE);
    l->totals = g_string_free(t, FALSE);
  }

  return an;
}

/* The nodes, memlets, clusters and transitions of g in l (and, unless
 * b->no_gv, in b's Graphviz graph). */
static void build_program(GvBuild *b, ViewLayout *l, const WeirGraph *g,
                          const WeirAnalysis *an, LayoutJob *job) {
  StateBuild *sbs = g_new0(StateBuild, g->states->len + 1);
  for (guint i = 0; i < g->states->len; i++)
    build_state(b, l, g, g_ptr_array_index(g->states, i), an, job, &sbs[i]);
  for (guint i = 0; i < g->transitions->len; i++) {
    WeirTransition *t = g_ptr_array_index(g->transitions, i);
    StateBuild *from = NULL, *to = NULL;
    for (guint k = 0; k < g->states->len; k++) {
      WeirState *s = g_ptr_array_index(g->states, k);
      if (s->id == t->src)
        from = &sbs[k];
      if (s->id == t->dst)
        to = &sbs[k];
    }
    if (!from || !to)
      continue;
    VEdge ve = {.state = t->src,
                .id = t->id,
                .src = from->first,
                .dst = to->first,
                .transition = TRUE};
    ve.label = transition_label(t);
    if (!b->no_gv) {
      char name[32];
      g_snprintf(name, sizeof name, "t%u", t->id);
      Agedge_t *e = agedge(b->root, b->gv_nodes->pdata[from->first],
                           b->gv_nodes->pdata[to->first], name, 1);
      if (from != to) {
        set_attr(e, "ltail", agnameof(b->gv_clusters->pdata[from->cluster]));
        set_attr(e, "lhead", agnameof(b->gv_clusters->pdata[to->cluster]));
      }
      set_attr(e, "style", "bold");
      if (*ve.label) {
        g_autofree char *text = dot_text(ve.label);
        set_attr(e, "label", text);
      }
      g_ptr_array_add(b->gv_edges, e);
    }
    g_array_append_val(l->edges, ve);
  }
  for (guint i = 0; i < g->states->len; i++)
    g_clear_pointer(&sbs[i].drawn, g_hash_table_unref);
  g_free(sbs);
}

static ViewLayout *layout_compute(LayoutJob *job, GError **error) {
  gint64 t0 = g_get_monotonic_time();
  const WeirGraph *g = job->program;
  ViewLayout *l = view_layout_new();
  /* Figures for the overlay; a program whose scopes are broken is still
   * drawn, without them. */
  g_autoptr(WeirAnalysis) an = layout_analysis(l, g, job->bindings);
  gint64 ta = g_get_monotonic_time();
  g_mutex_lock(&gv_lock);
  gint64 t1 = g_get_monotonic_time();
  struct timespec c1, c2;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  if (!gv_context) {
    agseterr(AGERR); /* warnings are not for the user */
    gv_context = gvContext();
  }
  GvBuild b = {
      .root = agopen((char *)"weir", Agdirected, NULL),
      .gv_nodes = g_ptr_array_new(),
      .gv_edges = g_ptr_array_new(),
      .gv_clusters = g_ptr_array_new(),
  };
  set_attr(b.root, "rankdir", "TB");
  set_attr(b.root, "compound", "true");
  set_attr(b.root, "nodesep", "0.25");
  set_attr(b.root, "ranksep", "0.3");
  set_attr(b.root, "fontname", "Helvetica");
  set_attr(b.root, "fontsize", "11");
  agattr(b.root, AGNODE, (char *)"fontname", (char *)"Helvetica");
  agattr(b.root, AGNODE, (char *)"fontsize", (char *)"11");
  agattr(b.root, AGNODE, (char *)"height", (char *)"0.3");
  agattr(b.root, AGNODE, (char *)"width", (char *)"0.4");
  agattr(b.root, AGNODE, (char *)"margin", (char *)"0.1,0.04");
  agattr(b.root, AGEDGE, (char *)"fontname", (char *)"Helvetica");
  agattr(b.root, AGEDGE, (char *)"fontsize", (char *)"9");
  agattr(b.root, AGEDGE, (char *)"arrowsize", (char *)"0.6");

  /* Large programs: memlet labels as external labels (placed after the
   * layout instead of taking a rank each) and fewer optimisation passes;
   * dot's time then grows about half as fast (docs/gui.md). */
  guint n_total = 0;
  for (guint i = 0; i < g->states->len; i++)
    n_total += ((WeirState *)g_ptr_array_index(g->states, i))->nodes->len;
  b.large = n_total > LARGE_GRAPH;
  if (b.large) {
    set_attr(b.root, "forcelabels", "true");
    set_attr(b.root, "nslimit", "1");
    set_attr(b.root, "nslimit1", "1");
    set_attr(b.root, "mclimit", "0.3");
    set_attr(b.root, "searchsize", "10");
    set_attr(b.root, "remincross", "false");
  }
  build_program(&b, l, g, an, job);

  gboolean ok = gvLayout(gv_context, b.root, "dot") == 0;
  if (ok) {
    boxf bb = GD_bb(b.root);
    double ox = bb.LL.x, top = bb.UR.y;
    l->width = bb.UR.x - bb.LL.x;
    l->height = bb.UR.y - bb.LL.y;
    for (guint i = 0; i < l->nodes->len; i++) {
      VNode *vn = &g_array_index(l->nodes, VNode, i);
      Agnode_t *n = b.gv_nodes->pdata[i];
      vn->x = ND_coord(n).x - ox;
      vn->y = top - ND_coord(n).y;
      vn->w = ND_width(n) * 72.0;
      vn->h = ND_height(n) * 72.0;
    }
    for (guint i = 0; i < l->edges->len; i++)
      read_edge(&g_array_index(l->edges, VEdge, i), b.gv_edges->pdata[i], ox,
                top);
    for (guint i = 0; i < l->clusters->len; i++) {
      VCluster *c = &g_array_index(l->clusters, VCluster, i);
      boxf cb = GD_bb((Agraph_t *)b.gv_clusters->pdata[i]);
      c->x0 = cb.LL.x - ox;
      c->x1 = cb.UR.x - ox;
      c->y0 = top - cb.UR.y;
      c->y1 = top - cb.LL.y;
    }
    gvFreeLayout(gv_context, b.root);
  }
  agclose(b.root);
  g_ptr_array_unref(b.gv_nodes);
  g_ptr_array_unref(b.gv_edges);
  g_ptr_array_unref(b.gv_clusters);
  gint64 t2 = g_get_monotonic_time();
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c2);
  g_mutex_unlock(&gv_lock);
  g_debug("graph view: %u nodes, %u memlets: analysis %.1f ms, "
          "dot %.1f ms (%.1f ms CPU)",
          l->n_nodes, l->n_edges, (double)(ta - t0) / 1000.0,
          (double)(t2 - t1) / 1000.0,
          (double)(c2.tv_sec - c1.tv_sec) * 1e3 +
              (double)(c2.tv_nsec - c1.tv_nsec) / 1e6);

  if (!ok) {
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                "%s: Graphviz could not lay the program out",
                g->name ? g->name : "program");
    view_layout_free(l);
    return NULL;
  }
  l->dot_ms = (double)(t2 - t1) / 1000.0;
  l->name = g_strdup(g->name);
  l->layout_ms = (double)(t2 - t0) / 1000.0;
  return l;
}

/* ------------------------------------------------ provisional picture */

/* A provisional picture is built on the main thread when a new version of
 * the program on screen arrives: the nodes and memlets that are still
 * there keep the places dot gave them in the previous picture (states,
 * nodes and memlets keep their ids across transformations), new nodes go
 * next to their neighbours, new or re-wired memlets are straight lines,
 * and the frames are fitted around what they contain.  It is shown while
 * the worker runs dot, then replaced. */

#define ARROW_LEN 6.0
#define GAP_Y 40.0 /* between a new node and the neighbour it is put under */

/* Rough size of a node from its text (dot's are not known without it). */
static void estimate_size(VNode *n) {
  guint lines = 1, longest = 0, cur = 0;
  for (const char *p = n->label; *p; p = g_utf8_next_char(p)) {
    if (*p == '\n') {
      lines++;
      cur = 0;
    } else if (++cur > longest)
      longest = cur;
  }
  n->w = MAX(0.4 * 72.0, longest * 6.2 + 14.4);
  n->h = MAX(0.3 * 72.0, lines * 13.0 + 5.8);
}

static guint64 vnode_key(const VNode *n) {
  return scope_key(n->state, n->shape == SHAPE_EMPTY ? G_MAXUINT : n->id);
}

/* Places the nodes of l: those of old where they were, the others from
 * their placed neighbours.  kept[i] tells whether node i was in old. */
static void place_nodes(ViewLayout *l, const ViewLayout *old, gboolean *kept) {
  g_autoptr(GHashTable) where = g_hash_table_new(g_int64_hash, g_int64_equal);
  guint64 *keys = g_new(guint64, old->nodes->len + 1);
  for (guint i = 0; i < old->nodes->len; i++) {
    keys[i] = vnode_key(&g_array_index(old->nodes, VNode, i));
    g_hash_table_insert(where, &keys[i], &g_array_index(old->nodes, VNode, i));
  }
  gboolean *placed = g_new0(gboolean, l->nodes->len + 1);
  guint left = 0;
  for (guint i = 0; i < l->nodes->len; i++) {
    VNode *n = &g_array_index(l->nodes, VNode, i);
    guint64 k = vnode_key(n);
    const VNode *o = g_hash_table_lookup(where, &k);
    if (o) {
      n->x = o->x;
      n->y = o->y;
      n->w = o->w;
      n->h = o->h;
      placed[i] = kept[i] = TRUE;
      g_hash_table_remove(where, &k); /* what is left was removed */
    } else {
      estimate_size(n);
      left++;
    }
  }
  /* New nodes between (or next to) their placed neighbours; a chain of
   * new nodes is placed over a few rounds. */
  for (guint round = 0; left > 0 && round < 8; round++) {
    guint before = left;
    for (guint i = 0; i < l->nodes->len; i++) {
      if (placed[i])
        continue;
      double px = 0, py = -G_MAXDOUBLE, sx = 0, sy = G_MAXDOUBLE;
      guint np = 0, ns = 0;
      for (guint j = 0; j < l->edges->len; j++) {
        const VEdge *e = &g_array_index(l->edges, VEdge, j);
        if (e->transition)
          continue;
        if (e->dst == i && placed[e->src]) {
          const VNode *p = &g_array_index(l->nodes, VNode, e->src);
          px += p->x;
          py = MAX(py, p->y + p->h / 2);
          np++;
        } else if (e->src == i && placed[e->dst]) {
          const VNode *s = &g_array_index(l->nodes, VNode, e->dst);
          sx += s->x;
          sy = MIN(sy, s->y - s->h / 2);
          ns++;
        }
      }
      if (np + ns == 0)
        continue;
      VNode *n = &g_array_index(l->nodes, VNode, i);
      n->x = (px + sx) / (np + ns);
      if (np && ns)
        n->y = (py + sy) / 2;
      else if (np)
        n->y = py + GAP_Y + n->h / 2;
      else
        n->y = sy - GAP_Y - n->h / 2;
      placed[i] = TRUE;
      left--;
    }
    if (left == before)
      break;
  }
  /* Without placed neighbours: where a removed node of the same state
   * was, else under the picture. */
  double bottom = old->height;
  for (guint i = 0; i < l->nodes->len && left > 0; i++) {
    if (placed[i])
      continue;
    VNode *n = &g_array_index(l->nodes, VNode, i);
    const VNode *spot = NULL;
    GHashTableIter it;
    gpointer k, val;
    g_hash_table_iter_init(&it, where);
    while (g_hash_table_iter_next(&it, &k, &val))
      if (((const VNode *)val)->state == n->state) {
        spot = val;
        g_hash_table_iter_remove(&it);
        break;
      }
    if (spot) {
      n->x = spot->x;
      n->y = spot->y;
    } else {
      n->x = old->width / 2;
      n->y = bottom + GAP_Y + n->h / 2;
      bottom = n->y + n->h / 2;
    }
    placed[i] = TRUE;
    left--;
  }
  g_free(placed);
  g_free(keys);
}

static void edge_bounds(VEdge *e) {
  e->x0 = e->y0 = G_MAXDOUBLE;
  e->x1 = e->y1 = -G_MAXDOUBLE;
  for (guint i = 0; i < e->n_pts; i++) {
    e->x0 = MIN(e->x0, e->pts[2 * i]);
    e->x1 = MAX(e->x1, e->pts[2 * i]);
    e->y0 = MIN(e->y0, e->pts[2 * i + 1]);
    e->y1 = MAX(e->y1, e->pts[2 * i + 1]);
  }
  if (e->arrow) {
    e->x0 = MIN(e->x0, e->ax);
    e->x1 = MAX(e->x1, e->ax);
    e->y0 = MIN(e->y0, e->ay);
    e->y1 = MAX(e->y1, e->ay);
  }
  if (e->label && *e->label) { /* a generous box around the label */
    double hw = 3.0 * strlen(e->label), hh = 6.0;
    e->x0 = MIN(e->x0, e->lx - hw);
    e->x1 = MAX(e->x1, e->lx + hw);
    e->y0 = MIN(e->y0, e->ly - hh);
    e->y1 = MAX(e->y1, e->ly + hh);
  }
}

/* A straight edge from a's bottom to b's top (centre to centre when b is
 * not below a), as one cubic segment and an arrowhead. */
static void straight_edge(VEdge *e, const VNode *a, const VNode *b) {
  double x0 = a->x, y0 = a->y + a->h / 2, x1 = b->x, y1 = b->y - b->h / 2;
  if (y1 <= y0) {
    y0 = a->y;
    y1 = b->y;
  }
  double dx = x1 - x0, dy = y1 - y0, len = hypot(dx, dy);
  double f = len > 2 * ARROW_LEN ? (len - ARROW_LEN) / len : 1.0;
  e->n_pts = 4;
  e->pts = g_new(double, 8);
  for (guint i = 0; i < 4; i++) {
    e->pts[2 * i] = x0 + dx * f * i / 3.0;
    e->pts[2 * i + 1] = y0 + dy * f * i / 3.0;
  }
  e->arrow = f < 1.0;
  e->ax = x1;
  e->ay = y1;
  if (!e->arrow) {
    e->ax = e->pts[6];
    e->ay = e->pts[7];
  }
  e->lx = x0 + dx / 2 + 4.0 + (e->label ? 2.5 * strlen(e->label) : 0);
  e->ly = y0 + dy / 2;
  edge_bounds(e);
}

static guint64 vedge_key(const VEdge *e) {
  /* memlet ids and transition ids are separate spaces */
  return (scope_key(e->state, e->id) << 1) ^ (e->transition ? 1 : 0);
}

/* Memlets of old whose two ends kept their places keep their curves; the
 * others are straight lines. */
static void place_edges(ViewLayout *l, const ViewLayout *old,
                        const gboolean *kept) {
  g_autoptr(GHashTable) was = g_hash_table_new(g_int64_hash, g_int64_equal);
  guint64 *keys = g_new(guint64, old->edges->len + 1);
  for (guint i = 0; i < old->edges->len; i++) {
    const VEdge *e = &g_array_index(old->edges, VEdge, i);
    keys[i] = vedge_key(e);
    g_hash_table_insert(was, &keys[i], (gpointer)e);
  }
  for (guint i = 0; i < l->edges->len; i++) {
    VEdge *e = &g_array_index(l->edges, VEdge, i);
    const VNode *a = &g_array_index(l->nodes, VNode, e->src);
    const VNode *b = &g_array_index(l->nodes, VNode, e->dst);
    guint64 k = vedge_key(e);
    const VEdge *o = g_hash_table_lookup(was, &k);
    gboolean same = o && kept[e->src] && kept[e->dst] && o->n_pts >= 4;
    if (same) {
      const VNode *oa = &g_array_index(old->nodes, VNode, o->src);
      const VNode *ob = &g_array_index(old->nodes, VNode, o->dst);
      same = vnode_key(oa) == vnode_key(a) && vnode_key(ob) == vnode_key(b);
    }
    if (!same) {
      straight_edge(e, a, b);
      continue;
    }
    e->n_pts = o->n_pts;
    e->pts = g_memdup2(o->pts, sizeof(double) * 2 * o->n_pts);
    e->arrow = o->arrow;
    e->ax = o->ax;
    e->ay = o->ay;
    e->lx = o->lx;
    e->ly = o->ly;
    if (!o->label) /* dot did not place it */
      g_clear_pointer(&e->label, g_free);
    edge_bounds(e);
  }
  g_free(keys);
}

/* Frames around their nodes and inner frames (children come after their
 * parent in l->clusters); the picture's size. */
static void fit_clusters(ViewLayout *l) {
  for (guint i = 0; i < l->clusters->len; i++) {
    VCluster *c = &g_array_index(l->clusters, VCluster, i);
    c->x0 = c->y0 = G_MAXDOUBLE;
    c->x1 = c->y1 = -G_MAXDOUBLE;
  }
  double x1 = 0, y1 = 0;
  for (guint i = 0; i < l->nodes->len; i++) {
    const VNode *n = &g_array_index(l->nodes, VNode, i);
    VCluster *c = &g_array_index(l->clusters, VCluster, n->cluster);
    c->x0 = MIN(c->x0, n->x - n->w / 2);
    c->x1 = MAX(c->x1, n->x + n->w / 2);
    c->y0 = MIN(c->y0, n->y - n->h / 2);
    c->y1 = MAX(c->y1, n->y + n->h / 2);
  }
  for (guint i = l->clusters->len; i-- > 0;) {
    VCluster *c = &g_array_index(l->clusters, VCluster, i);
    if (c->x0 > c->x1) {
      c->x0 = c->y0 = c->x1 = c->y1 = 0;
      continue;
    }
    c->x0 -= 8;
    c->x1 += 8;
    c->y0 -= 8 + 14; /* the frame's label */
    c->y1 += 8;
    x1 = MAX(x1, c->x1);
    y1 = MAX(y1, c->y1);
    if (c->parent < 0)
      continue;
    VCluster *p = &g_array_index(l->clusters, VCluster, c->parent);
    p->x0 = MIN(p->x0, c->x0);
    p->x1 = MAX(p->x1, c->x1);
    p->y0 = MIN(p->y0, c->y0);
    p->y1 = MAX(p->y1, c->y1);
  }
  for (guint i = 0; i < l->edges->len; i++) {
    const VEdge *e = &g_array_index(l->edges, VEdge, i);
    x1 = MAX(x1, e->x1);
    y1 = MAX(y1, e->y1);
  }
  l->width = x1;
  l->height = y1;
}

/* The provisional picture of g drawn from old (main thread). */
static ViewLayout *provisional_layout(const ViewLayout *old, WeirGraph *g,
                                      GHashTable *bindings,
                                      GHashTable *collapsed) {
  gint64 t0 = g_get_monotonic_time();
  ViewLayout *l = view_layout_new();
  l->provisional = TRUE;
  l->name = g_strdup(g->name);
  g_autoptr(WeirAnalysis) an = layout_analysis(l, g, bindings);
  LayoutJob job = {.program = g, .bindings = bindings, .collapsed = collapsed};
  GvBuild b = {.no_gv = TRUE};
  build_program(&b, l, g, an, &job);
  gboolean *kept = g_new0(gboolean, l->nodes->len + 1);
  place_nodes(l, old, kept);
  place_edges(l, old, kept);
  g_free(kept);
  fit_clusters(l);
  l->layout_ms = (double)(g_get_monotonic_time() - t0) / 1000.0;
  return l;
}

static void layout_thread(GTask *task, gpointer source G_GNUC_UNUSED,
                          gpointer data, GCancellable *cancel G_GNUC_UNUSED) {
  GError *error = NULL;
  ViewLayout *l = layout_compute(data, &error);
  if (l)
    g_task_return_pointer(task, l, view_layout_free);
  else
    g_task_return_error(task, error);
}

/* ------------------------------------------------------------- widget */

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

G_DEFINE_TYPE(WeirGraphView, weir_graph_view, GTK_TYPE_WIDGET)

enum { SIG_SELECTION_CHANGED, SIG_LAYOUT_DONE, SIG_ACTIVATE, N_SIGNALS };
static guint signals[N_SIGNALS];

enum { PROP_0, PROP_ZOOM, PROP_OVERLAY, PROP_BUSY, N_PROPS };
static GParamSpec *props[N_PROPS];

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
static gboolean node_value(WeirOverlay o, const VNode *n, double *out) {
  switch (o) {
  case WEIR_OVERLAY_BYTES:
    *out = n->bytes;
    return n->bytes_known;
  case WEIR_OVERLAY_FLOPS:
    *out = n->flops;
    return n->flops_known;
  case WEIR_OVERLAY_INTENSITY:
    if (!n->flops_known || !n->bytes_known || n->bytes <= 0)
      return FALSE;
    *out = n->flops / n->bytes;
    return TRUE;
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

static void overlay_scale(const ViewLayout *l, WeirOverlay o, Scale *s) {
  memset(s, 0, sizeof *s);
  for (guint i = 0; i < l->nodes->len; i++) {
    double v;
    if (node_value(o, &g_array_index(l->nodes, VNode, i), &v))
      scale_add(s, v);
  }
  if (o == WEIR_OVERLAY_BYTES)
    for (guint i = 0; i < l->edges->len; i++) {
      const VEdge *e = &g_array_index(l->edges, VEdge, i);
      if (e->bytes_known)
        scale_add(s, e->bytes);
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

/* ------------------------------------------------------ view control */

static void clamp_zoom(double *z) {
  *z = CLAMP(*z, ZOOM_MIN, ZOOM_MAX);
}

/* Zooms to z keeping the layout point under screen point (sx, sy). */
static void zoom_at(WeirGraphView *v, double z, double sx, double sy) {
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

static void center_on(WeirGraphView *v, double x, double y) {
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
  zoom_at(v, zoom, gtk_widget_get_width(GTK_WIDGET(v)) / 2.0,
          gtk_widget_get_height(GTK_WIDGET(v)) / 2.0);
}

double weir_graph_view_get_zoom(WeirGraphView *v) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), 1.0);
  return v->zoom;
}

/* The drawn node that stands for node id: the box of the collapsed scope
 * that hides it, else itself. */
static guint drawn_id(const ViewLayout *l, guint id) {
  gpointer rep;
  if (l &&
      g_hash_table_lookup_extended(l->hidden, GUINT_TO_POINTER(id), NULL, &rep))
    return GPOINTER_TO_UINT(rep);
  return id;
}

/* The drawn node of node id (or of the collapsed scope hiding it). */
static const VNode *find_vnode(const ViewLayout *l, guint state, guint id,
                               guint *index) {
  if (!l)
    return NULL;
  id = drawn_id(l, id);
  for (guint i = 0; i < l->nodes->len; i++) {
    const VNode *n = &g_array_index(l->nodes, VNode, i);
    if (n->shape != SHAPE_EMPTY && n->state == state && n->id == id) {
      if (index)
        *index = i;
      return n;
    }
  }
  return NULL;
}

/* The rectangle of an element in the picture; FALSE when not drawn. */
static gboolean element_rect(const ViewLayout *l, const WeirElement *e,
                             double r[4]) {
  if (!l)
    return FALSE;
  switch (e->kind) {
  case WEIR_ELEMENT_NODE: {
    const VNode *n = find_vnode(l, e->state, e->id, NULL);
    if (!n)
      return FALSE;
    r[0] = n->x - n->w / 2;
    r[1] = n->y - n->h / 2;
    r[2] = n->x + n->w / 2;
    r[3] = n->y + n->h / 2;
    return TRUE;
  }
  case WEIR_ELEMENT_EDGE:
    for (guint i = 0; i < l->edges->len; i++) {
      const VEdge *ed = &g_array_index(l->edges, VEdge, i);
      if (!ed->transition && ed->state == e->state && ed->id == e->id) {
        r[0] = ed->x0, r[1] = ed->y0, r[2] = ed->x1, r[3] = ed->y1;
        return TRUE;
      }
    }
    return FALSE;
  case WEIR_ELEMENT_STATE:
    for (guint i = 0; i < l->clusters->len; i++) {
      const VCluster *c = &g_array_index(l->clusters, VCluster, i);
      if (c->entry == 0 && c->state == e->state) {
        r[0] = c->x0, r[1] = c->y0, r[2] = c->x1, r[3] = c->y1;
        return TRUE;
      }
    }
    return FALSE;
  default:
    return FALSE;
  }
}

void weir_graph_view_zoom_to_selection(WeirGraphView *v) {
  g_return_if_fail(WEIR_IS_GRAPH_VIEW(v));
  double r[4];
  if (!element_rect(v->layout, &v->selection, r))
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
    const VNode *n = find_vnode(v->layout, it->state, it->id, NULL);
    if (n) {
      if (v->zoom < 0.6)
        weir_graph_view_set_zoom(v, 1.0);
      center_on(v, n->x, n->y);
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
    view_layout_free(l); /* the widget is being disposed */
    return;
  }
  v->busy = FALSE;
  g_object_notify_by_pspec(G_OBJECT(v), props[PROP_BUSY]);
  g_clear_pointer(&v->layout_error, g_free);
  if (l && v->pending && v->layout && v->layout->provisional) {
    /* a newer program came: its provisional picture stays until its own
     * layout is done */
    view_layout_free(l);
  } else if (l) {
    view_layout_free(v->layout);
    v->layout = l;
    if (v->fit_pending)
      weir_graph_view_zoom_fit(v);
  } else {
    view_layout_free(v->layout);
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
    view_layout_free(v->layout);
    v->layout = NULL;
    gtk_widget_queue_draw(GTK_WIDGET(v));
    g_signal_emit(v, signals[SIG_LAYOUT_DONE], 0);
    return;
  }
  LayoutJob *job = g_new0(LayoutJob, 1);
  job->program = weir_graph_copy(v->program);
  job->bindings = bindings_copy(v->bindings);
  job->collapsed = key_set_copy(v->collapsed);
  v->busy = TRUE;
  g_object_notify_by_pspec(G_OBJECT(v), props[PROP_BUSY]);
  GTask *task = g_task_new(v, v->cancel, layout_done, NULL);
  g_task_set_source_tag(task, start_layout);
  g_task_set_task_data(task, job, layout_job_free);
  g_task_run_in_thread(task, layout_thread);
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
    v->bindings = bindings_copy(bindings);
    /* a different program (not an edit of the one shown) is fitted; an
     * edit is shown at once from the previous picture while dot runs */
    if (!v->layout || g_strcmp0(v->shown_name, program->name) != 0)
      v->fit_pending = TRUE;
    else if (g_strcmp0(v->layout->name, program->name) == 0) {
      /* the picture on screen is of a program of this name (not the one
       * of another program, still shown while this name's first layout
       * runs) */
      ViewLayout *l =
          provisional_layout(v->layout, v->program, v->bindings, v->collapsed);
      v->last_provisional_ms = l->layout_ms;
      view_layout_free(v->layout);
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
  g_return_if_fail(overlay <= WEIR_OVERLAY_INTENSITY);
  if (v->overlay == overlay)
    return;
  v->overlay = overlay;
  g_object_notify_by_pspec(G_OBJECT(v), props[PROP_OVERLAY]);
  gtk_widget_queue_draw(GTK_WIDGET(v));
}

WeirOverlay weir_graph_view_get_overlay(WeirGraphView *v) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), WEIR_OVERLAY_NONE);
  return v->overlay;
}

void weir_graph_view_set_collapsed(WeirGraphView *v, guint state, guint entry,
                                   gboolean collapsed) {
  g_return_if_fail(WEIR_IS_GRAPH_VIEW(v));
  guint64 k = scope_key(state, entry);
  if (collapsed == g_hash_table_contains(v->collapsed, &k))
    return;
  if (collapsed) {
    WeirState *s = v->program ? weir_graph_state(v->program, state) : NULL;
    WeirNode *n = s ? weir_state_node(s, entry) : NULL;
    if (!n || n->kind != WEIR_NODE_MAP_ENTRY)
      return; /* not a map scope of the program */
    key_set_add(v->collapsed, k);
  } else {
    g_hash_table_remove(v->collapsed, &k);
  }
  start_layout(v);
}

gboolean weir_graph_view_get_collapsed(WeirGraphView *v, guint state,
                                       guint entry) {
  g_return_val_if_fail(WEIR_IS_GRAPH_VIEW(v), FALSE);
  guint64 k = scope_key(state, entry);
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
    if (node_value(v->overlay, n, &val)) {
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
                 drawn_id(v->layout, v->selection.id) == n->id;
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
  if (!e->transition && v->overlay == WEIR_OVERLAY_BYTES && e->bytes_known &&
      e->bytes > 0 && d->scale.any) {
    double t = scale_t(&d->scale, e->bytes);
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
static gboolean minimap_geometry(WeirGraphView *v, double *mx, double *my,
                                 double *msx, double *msy) {
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
  if (!minimap_geometry(v, &mx, &my, &sx, &sy))
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
        node_value(v->overlay, n, &val) && val > 0)
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

static void draw_legend(Draw *d) {
  WeirGraphView *v = d->v;
  if (v->overlay == WEIR_OVERLAY_NONE || !v->layout)
    return;
  static const char *const titles[] = {
      [WEIR_OVERLAY_BYTES] = "bytes moved",
      [WEIR_OVERLAY_FLOPS] = "FLOPs",
      [WEIR_OVERLAY_INTENSITY] = "intensity (FLOP/byte)",
  };
  static const char *const units[] = {
      [WEIR_OVERLAY_BYTES] = "B",
      [WEIR_OVERLAY_FLOPS] = "FLOP",
      [WEIR_OVERLAY_INTENSITY] = "FLOP/B",
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
  char title[96];
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
  if (d->scale.any) {
    format_quantity(lo, sizeof lo, d->scale.min, units[v->overlay]);
    format_quantity(hi, sizeof hi, d->scale.max, units[v->overlay]);
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

static void weir_graph_view_snapshot(GtkWidget *widget, GtkSnapshot *snap) {
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
      g_hash_table_add(d.hl,
                       GUINT_TO_POINTER(drawn_id(l, GPOINTER_TO_UINT(k))));
    if (v->overlay != WEIR_OVERLAY_NONE)
      overlay_scale(l, v->overlay, &d.scale);
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
  if (!element_rect(v->layout, e, r))
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
    const VNode *n = find_vnode(v->layout, e.state, e.id, NULL);
    if (!n) { /* a scope frame: its entry is drawn as a node too */
      g_string_free(s, TRUE);
      return FALSE;
    }
    g_string_append(s, n->label);
    if (n->bytes_known)
      format_quantity(b, sizeof b, n->bytes, "B");
    if (n->flops_known)
      format_quantity(f, sizeof f, n->flops, "FLOP");
    g_string_append_printf(s, "\nbytes in+out: %s\nFLOPs: %s",
                           n->bytes_known ? b : "unknown",
                           n->flops_known ? f : "unknown");
    if (n->bytes_known && n->flops_known && n->bytes > 0)
      g_string_append_printf(s, "\nintensity: %.3g FLOP/B",
                             n->flops / n->bytes);
  } else if (e.kind == WEIR_ELEMENT_EDGE) {
    for (guint i = 0; i < v->layout->edges->len; i++) {
      const VEdge *ed = &g_array_index(v->layout->edges, VEdge, i);
      if (ed->transition || ed->state != e.state || ed->id != e.id)
        continue;
      g_string_append_printf(s, "memlet %u: %s", ed->id,
                             ed->label ? ed->label : "");
      if (ed->bytes_known) {
        format_quantity(b, sizeof b, ed->bytes, "B");
        g_string_append_printf(s, "\nbytes moved: %s", b);
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
  if (!minimap_geometry(v, &mx, &my, &msx, &msy))
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
    center_on(v, lx, ly);
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
    g_signal_emit(v, signals[SIG_ACTIVATE], 0, &e);
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
      center_on(v, lx, ly);
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
    zoom_at(v, v->zoom * f, v->pointer_x, v->pointer_y);
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
  zoom_at(v, v->pinch_zoom0 * scale, cx, cy);
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
    zoom_at(v, v->zoom * 1.25, w / 2, h / 2);
    return TRUE;
  case GDK_KEY_minus:
  case GDK_KEY_KP_Subtract:
    zoom_at(v, v->zoom / 1.25, w / 2, h / 2);
    return TRUE;
  case GDK_KEY_0:
  case GDK_KEY_KP_0:
    weir_graph_view_zoom_fit(v);
    return TRUE;
  case GDK_KEY_1:
  case GDK_KEY_KP_1:
    zoom_at(v, 1.0, w / 2, h / 2);
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
  g_clear_pointer(&v->layout, view_layout_free);
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
      "overlay", NULL, NULL, WEIR_OVERLAY_NONE, WEIR_OVERLAY_INTENSITY,
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
  v->collapsed = key_set_new();
  v->hl_nodes = g_hash_table_new(g_direct_hash, g_direct_equal);
  gtk_widget_set_focusable(w, TRUE);
  gtk_widget_set_overflow(w, GTK_OVERFLOW_HIDDEN);
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
