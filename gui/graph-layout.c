/* graph-layout.c — the layout worker of WeirGraphView (graph-view-private.h):
 * from a copy of the program, the analysis figures, the labels, a cgraph
 * graph laid out by Graphviz "dot" under the one process-wide Graphviz
 * lock, read back into a ViewLayout of plain structs; and the provisional
 * picture of an edited program placed from the previous one while dot
 * runs.  Everything here runs in a worker thread except the provisional
 * picture and the queries at the end, which run on the main thread.
 */
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "graph-view-private.h"
#include "weir-analysis.h"
#include "weir-hw.h"

/* ------------------------------------------------------ records, jobs */

static void search_item_clear(gpointer p) {
  g_free(((SearchItem *)p)->folded);
}

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

void weir_view_layout_free(gpointer p) {
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

void weir_view_layout_job_free(gpointer p) {
  LayoutJob *job = p;
  weir_graph_free(job->program);
  g_clear_pointer(&job->bindings, g_hash_table_unref);
  g_clear_pointer(&job->collapsed, g_hash_table_unref);
  g_free(job);
}

guint64 weir_view_scope_key(guint state, guint entry) {
  return ((guint64)state << 32) | entry;
}

GHashTable *weir_view_key_set_new(void) {
  return g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
}

void weir_view_key_set_add(GHashTable *set, guint64 key) {
  guint64 *k = g_new(guint64, 1);
  *k = key;
  g_hash_table_add(set, k);
}

GHashTable *weir_view_key_set_copy(GHashTable *set) {
  GHashTable *copy = weir_view_key_set_new();
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init(&it, set);
  while (g_hash_table_iter_next(&it, &k, NULL))
    weir_view_key_set_add(copy, *(guint64 *)k);
  return copy;
}

GHashTable *weir_view_bindings_copy(GHashTable *bindings) {
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

void weir_view_format_quantity(char *buf, gsize size, double v,
                               const char *unit) {
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

/* The figures of node n of state s (scopes sc, NULL when broken): FLOPs,
 * logical volume in + out, and the modeled traffic (VNode.traffic). */
static void node_figures(const WeirAnalysis *an, const WeirState *s,
                         const WeirScopes *sc, const WeirNode *n, VNode *vn) {
  const WeirNodeCost *c = an ? weir_analysis_node(an, n->id) : NULL;
  if (!c)
    return;
  vn->bytes_known = c->bytes_in.known && c->bytes_out.known;
  vn->bytes = (double)c->bytes_in.value + (double)c->bytes_out.value;
  vn->flops_known = c->flops.known;
  vn->flops = (double)c->flops.value;
  vn->comm_bytes = c->comm_bytes.known ? (double)c->comm_bytes.value : 0;
  if (!sc || !an->total_traffic.expr)
    return; /* no model */
  if (weir_scopes_parent(sc, n->id) != 0 && n->kind != WEIR_NODE_MAP_ENTRY) {
    vn->traffic_known = TRUE; /* inside a scope: the scope's traffic */
    return;
  }
  switch (n->kind) {
  case WEIR_NODE_MAP_ENTRY:
    vn->traffic_known = c->traffic.known || weir_scopes_parent(sc, n->id) != 0;
    vn->traffic = c->traffic.known ? (double)c->traffic.value : 0;
    break;
  case WEIR_NODE_MAP_EXIT:
    vn->traffic_known = TRUE; /* its entry shows the map's */
    break;
  case WEIR_NODE_ACCESS: {
    /* what the memlets touching the container move */
    gboolean known = TRUE;
    double sum = 0;
    for (guint i = 0; i < s->edges->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, i);
      if (m->src != n->id && m->dst != n->id)
        continue;
      const WeirMemletCost *mc = weir_analysis_memlet(an, m->id);
      if (mc && mc->traffic.known)
        sum += (double)mc->traffic.value;
      else if (m->data)
        known = FALSE;
    }
    vn->traffic_known = known;
    vn->traffic = sum;
    break;
  }
  default: /* library, tasklet, nested: each operand once */
    vn->traffic_known = vn->bytes_known;
    vn->traffic = vn->bytes;
    break;
  }
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
    guint64 k = weir_view_scope_key(state, e);
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
      guint64 k = weir_view_scope_key(s->id, n->id);
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
    node_figures(an, s, sc, n, &vn);
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
      ve.traffic_known = mc->traffic.known;
      ve.traffic = (double)mc->traffic.value;
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
/* The cache the traffic model assumes: this machine's (the cached hardware
 * profile, never measured here; $WEIR_HW_CACHES applies), read once. */
gint64 weir_view_model_cache(void) {
  static gsize once = 0;
  static gint64 cache = 0;
  if (g_once_init_enter(&once)) {
    g_autoptr(WeirHwProfile) hw = weir_hw_profile_cached();
    cache = weir_hw_model_cache_bytes(hw);
    g_once_init_leave(&once, 1);
  }
  return cache;
}

static WeirAnalysis *layout_analysis(ViewLayout *l, const WeirGraph *g,
                                     GHashTable *bindings) {
  l->cache_bytes = weir_view_model_cache();
  WeirAnalysis *an =
      weir_analysis_compute_traffic(g, bindings, l->cache_bytes, NULL);
  if (an) {
    char b[32], f[32], tr[32];
    if (an->total_bytes.known)
      weir_view_format_quantity(b, sizeof b, (double)an->total_bytes.value,
                                "B");
    else
      g_strlcpy(b, "?", sizeof b);
    if (an->total_traffic.known)
      weir_view_format_quantity(tr, sizeof tr, (double)an->total_traffic.value,
                                "B");
    else
      g_strlcpy(tr, "?", sizeof tr);
    if (an->total_flops.known)
      weir_view_format_quantity(f, sizeof f, (double)an->total_flops.value,
                                "FLOP");
    else
      g_strlcpy(f, "?", sizeof f);
    GString *t = g_string_new(NULL);
    g_string_printf(t, "total: %s traffic (logical %s), %s", tr, b, f);
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
    weir_view_layout_free(l);
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
  return weir_view_scope_key(n->state,
                             n->shape == SHAPE_EMPTY ? G_MAXUINT : n->id);
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
  return (weir_view_scope_key(e->state, e->id) << 1) ^ (e->transition ? 1 : 0);
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
ViewLayout *weir_view_layout_provisional(const ViewLayout *old, WeirGraph *g,
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

void weir_view_layout_thread(GTask *task, gpointer source G_GNUC_UNUSED,
                             gpointer data,
                             GCancellable *cancel G_GNUC_UNUSED) {
  GError *error = NULL;
  ViewLayout *l = layout_compute(data, &error);
  if (l)
    g_task_return_pointer(task, l, weir_view_layout_free);
  else
    g_task_return_error(task, error);
}

/* ------------------------------------------------------------ queries */

/* The drawn node that stands for node id: the box of the collapsed scope
 * that hides it, else itself. */
guint weir_view_layout_drawn_id(const ViewLayout *l, guint id) {
  gpointer rep;
  if (l &&
      g_hash_table_lookup_extended(l->hidden, GUINT_TO_POINTER(id), NULL, &rep))
    return GPOINTER_TO_UINT(rep);
  return id;
}

/* The drawn node of node id (or of the collapsed scope hiding it). */
const VNode *weir_view_layout_find_node(const ViewLayout *l, guint state,
                                        guint id, guint *index) {
  if (!l)
    return NULL;
  id = weir_view_layout_drawn_id(l, id);
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
gboolean weir_view_layout_element_rect(const ViewLayout *l,
                                       const WeirElement *e, double r[4]) {
  if (!l)
    return FALSE;
  switch (e->kind) {
  case WEIR_ELEMENT_NODE: {
    const VNode *n = weir_view_layout_find_node(l, e->state, e->id, NULL);
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
