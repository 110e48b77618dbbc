/* weir-window-properties.c — the window's properties panel: what the
 * graph's selection is (a node, a memlet, a state, or the whole program),
 * with its figures from the analysis of the current program.  Rows are
 * WeirRow (WEIR_ROW_TEXT) in w->properties, shown by a list view.
 */
#include "weir-attr.h"
#include "weir-window-private.h"

static void add_prop(WeirWindow *w, const char *name, const char *value) {
  g_autoptr(WeirRow) r = weir_row_new(WEIR_ROW_TEXT, name, value);
  g_list_store_append(w->properties, r);
}

static void add_propf(WeirWindow *w, const char *name, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static void add_propf(WeirWindow *w, const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *v = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  add_prop(w, name, v);
}

static char *shape_text(const WeirContainer *c) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < c->shape->len; d++) {
    g_autofree char *e = weir_expr_to_string(g_ptr_array_index(c->shape, d));
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static void add_container_props(WeirWindow *w, const WeirGraph *g,
                                const char *name) {
  const WeirContainer *c = weir_graph_container(g, name);
  if (!c)
    return;
  g_autofree char *shape = shape_text(c);
  add_propf(w, "container", "%s: %s%s (%s%s)", c->name,
            weir_dtype_name(c->dtype), shape,
            c->transient ? "transient" : "argument",
            c->initial ? ", constant" : "");
  if (c->strides && c->strides->len) {
    GString *s = g_string_new(NULL);
    for (guint d = 0; d < c->strides->len; d++) {
      g_autofree char *e =
          weir_expr_to_string(g_ptr_array_index(c->strides, d));
      g_string_append_printf(s, "%s%s", d ? ", " : "", e);
    }
    add_prop(w, "strides", s->str);
    g_string_free(s, TRUE);
  }
}

static char *attr_text(const WeirAttr *a) {
  GString *s = g_string_new(NULL);
  switch (a->type) {
  case WEIR_ATTR_INT:
    g_string_append_printf(s, "%" G_GINT64_FORMAT, a->i);
    break;
  case WEIR_ATTR_FLOAT:
    g_string_append_printf(s, "%g", a->f);
    break;
  case WEIR_ATTR_STRING:
    g_string_append(s, a->s);
    break;
  case WEIR_ATTR_INTS:
    for (guint i = 0; i < a->ints->len; i++)
      g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? ", " : "",
                             g_array_index(a->ints, gint64, i));
    break;
  case WEIR_ATTR_FLOATS:
    for (guint i = 0; i < a->floats->len; i++)
      g_string_append_printf(s, "%s%g", i ? ", " : "",
                             g_array_index(a->floats, double, i));
    break;
  case WEIR_ATTR_STRINGS:
    for (guint i = 0; i < a->strings->len; i++)
      g_string_append_printf(s, "%s%s", i ? ", " : "",
                             (char *)g_ptr_array_index(a->strings, i));
    break;
  default:
    break;
  }
  return g_string_free(s, FALSE);
}

static void add_node_props(WeirWindow *w, const WeirGraph *g,
                           const WeirState *st, const WeirNode *n) {
  add_propf(w, "node", "%u (%s) in state %u '%s'", n->id,
            weir_node_kind_name(n->kind), st->id, st->label ? st->label : "");
  add_prop(w, "label", n->label ? n->label : "");
  switch (n->kind) {
  case WEIR_NODE_ACCESS:
    add_container_props(w, g, n->data);
    break;
  case WEIR_NODE_TASKLET:
    add_prop(w, "code", n->code_text ? n->code_text : "");
    break;
  case WEIR_NODE_MAP_ENTRY: {
    const WeirMap *m = n->map;
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < m->params->len; i++) {
      g_autofree char *r =
          weir_range_to_string(&g_array_index(m->ranges, WeirRange, i));
      g_string_append_printf(s, "%s%s in %s", i ? ", " : "",
                             (char *)g_ptr_array_index(m->params, i), r);
    }
    add_prop(w, "ranges", s->str);
    g_string_free(s, TRUE);
    add_prop(w, "schedule", weir_schedule_name(m->schedule));
    if (m->tile && m->tile->len) {
      GString *t = g_string_new(NULL);
      for (guint i = 0; i < m->tile->len; i++)
        g_string_append_printf(t, "%s%" G_GINT64_FORMAT, i ? ", " : "",
                               g_array_index(m->tile, gint64, i));
      add_prop(w, "tile sizes", t->str);
      g_string_free(t, TRUE);
    }
    if (m->unroll > 1)
      add_propf(w, "unroll", "%u", m->unroll);
    if (m->collapse)
      add_propf(w, "collapse", "%u", m->collapse);
    break;
  }
  case WEIR_NODE_MAP_EXIT:
    add_propf(w, "entry", "node %u", n->entry);
    break;
  case WEIR_NODE_LIBRARY: {
    add_prop(w, "op", n->op);
    /* how it runs: the tuned choice (weir tune, -O3), an explicit one, or
     * the default */
    const char *impl = weir_node_attr_string(n, "impl", NULL);
    const char *tuned = weir_node_attr_string(n, "tuned", NULL);
    g_autofree char *params = weir_native_params_text(n);
    if (tuned)
      add_propf(w, "implementation", "%s%s%s%s (tuned, signature %s)", impl,
                *params ? " (" : "", params, *params ? ")" : "", tuned);
    else if (impl)
      add_propf(w, "implementation", "%s%s%s%s (chosen)", impl,
                *params ? " (" : "", params, *params ? ")" : "");
    else
      add_propf(w, "implementation", "%s (default, not tuned)",
                weir_native_default_impl(g, st, n));
    for (guint i = 0; n->attrs && i < n->attrs->len; i++) {
      const WeirAttr *a = g_ptr_array_index(n->attrs, i);
      g_autofree char *v = attr_text(a);
      add_prop(w, a->name, v);
    }
    break;
  }
  case WEIR_NODE_NESTED:
    add_prop(w, "program", n->nested && n->nested->name ? n->nested->name : "");
    break;
  default:
    break;
  }
  /* shapes of what flows in and out */
  g_autoptr(GPtrArray) ins = weir_state_in_edges(st, n->id);
  g_autoptr(GPtrArray) outs = weir_state_out_edges(st, n->id);
  for (guint k = 0; k < 2; k++) {
    GPtrArray *edges = k ? outs : ins;
    for (guint i = 0; edges && i < edges->len && i < 6; i++) {
      const WeirMemlet *m = g_ptr_array_index(edges, i);
      if (!m->data)
        continue;
      g_autofree char *sub =
          m->subset ? weir_subset_to_string(m->subset) : g_strdup("");
      add_propf(w, k ? "out" : "in", "%s%s%s[%s]",
                k ? (m->src_conn ? m->src_conn : "")
                  : (m->dst_conn ? m->dst_conn : ""),
                (k ? m->src_conn : m->dst_conn) ? " \u2190 " : "", m->data,
                sub);
    }
  }
  if (w->analysis) {
    const WeirNodeCost *c = weir_analysis_node(w->analysis, n->id);
    if (c) {
      g_autofree char *bi = weir_window_quantity_text(&c->bytes_in, TRUE);
      g_autofree char *bo = weir_window_quantity_text(&c->bytes_out, TRUE);
      g_autofree char *fl = weir_window_quantity_text(&c->flops, FALSE);
      if (c->traffic.known) {
        g_autofree char *tr = weir_window_quantity_text(&c->traffic, TRUE);
        add_prop(w, "modeled traffic", tr);
      }
      add_prop(w, "logical volume in", bi);
      add_prop(w, "logical volume out", bo);
      add_prop(w, "FLOPs", fl);
      double secs;
      if (weir_graph_view_get_time(w->graph_view, st->id, n->id, &secs))
        add_propf(w, "measured time", "%.3f ms (last run)", secs * 1e3);
    }
  }
}

static void add_memlet_props(WeirWindow *w, const WeirGraph *g,
                             const WeirState *st, const WeirMemlet *m) {
  add_propf(w, "memlet", "%u: node %u \u2192 node %u in state %u", m->id,
            m->src, m->dst, st->id);
  if (!m->data) {
    add_prop(w, "data", "(empty: ordering only)");
    return;
  }
  g_autofree char *sub =
      m->subset ? weir_subset_to_string(m->subset) : g_strdup("");
  add_propf(w, "subset", "%s[%s]", m->data, sub);
  if (m->other) {
    g_autofree char *o = weir_subset_to_string(m->other);
    add_prop(w, "other", o);
  }
  g_autofree char *vol =
      m->volume ? weir_expr_to_string(m->volume) : g_strdup("?");
  add_propf(w, "volume", "%s%s", vol, m->dynamic ? " (dynamic)" : "");
  if (m->wcr != WEIR_WCR_NONE)
    add_prop(w, "wcr", weir_wcr_name(m->wcr));
  add_container_props(w, g, m->data);
  if (w->analysis) {
    const WeirMemletCost *c = weir_analysis_memlet(w->analysis, m->id);
    if (c) {
      g_autofree char *ex = weir_window_quantity_text(&c->executions, FALSE);
      g_autofree char *b = weir_window_quantity_text(&c->bytes, TRUE);
      add_prop(w, "executions", ex);
      if (c->traffic.known) {
        g_autofree char *tr = weir_window_quantity_text(&c->traffic, TRUE);
        add_prop(w, "modeled traffic", tr);
      }
      add_propf(w, "logical volume", "%s%s", b,
                c->counted ? "" : " (inner: not added to the total)");
    }
  }
}

void weir_window_refresh_properties(WeirWindow *w) {
  g_list_store_remove_all(w->properties);
  if (!w->session) {
    gtk_label_set_text(w->properties_title, "Properties");
    return;
  }
  const WeirGraph *g = weir_session_current(w->session);
  WeirElement e = weir_graph_view_get_selection(w->graph_view);
  const WeirState *st =
      e.kind != WEIR_ELEMENT_NONE ? weir_graph_state(g, e.state) : NULL;
  if (e.kind == WEIR_ELEMENT_NODE && st) {
    const WeirNode *n = weir_state_node(st, e.id);
    if (n) {
      g_autofree char *t = g_strdup_printf("Properties \u2014 %s '%s'",
                                           weir_node_kind_name(n->kind),
                                           n->label ? n->label : "");
      gtk_label_set_text(w->properties_title, t);
      add_node_props(w, g, st, n);
      return;
    }
  }
  if (e.kind == WEIR_ELEMENT_EDGE && st) {
    const WeirMemlet *m = weir_state_memlet(st, e.id);
    if (m) {
      gtk_label_set_text(w->properties_title, "Properties \u2014 memlet");
      add_memlet_props(w, g, st, m);
      return;
    }
  }
  if (e.kind == WEIR_ELEMENT_STATE && st) {
    g_autofree char *t = g_strdup_printf("Properties \u2014 state '%s'",
                                         st->label ? st->label : "");
    gtk_label_set_text(w->properties_title, t);
    add_propf(w, "state", "%u '%s'", st->id, st->label ? st->label : "");
    add_propf(w, "nodes", "%u", st->nodes->len);
    add_propf(w, "memlets", "%u", st->edges->len);
    const WeirStateCost *c =
        w->analysis ? weir_analysis_state(w->analysis, st->id) : NULL;
    if (c) {
      g_autofree char *tr = weir_window_quantity_text(&c->traffic, TRUE);
      g_autofree char *b = weir_window_quantity_text(&c->bytes, TRUE);
      g_autofree char *f = weir_window_quantity_text(&c->flops, FALSE);
      add_prop(w, "modeled traffic", tr);
      add_prop(w, "logical volume", b);
      add_prop(w, "FLOPs", f);
    }
    return;
  }
  gtk_label_set_text(w->properties_title, "Properties \u2014 program");
  add_prop(w, "program", g->name ? g->name : "");
  if (weir_session_source(w->session))
    add_prop(w, "source", weir_session_source(w->session));
  add_propf(w, "states", "%u", g->states->len);
  add_propf(w, "containers", "%u", g->containers->len);
  if (g->symbols->len) {
    GString *syms = g_string_new(NULL);
    for (guint i = 0; i < g->symbols->len; i++)
      g_string_append_printf(syms, "%s%s", i ? ", " : "",
                             (char *)g_ptr_array_index(g->symbols, i));
    add_prop(w, "symbols", syms->str);
    g_string_free(syms, TRUE);
  }
  if (w->analysis) {
    g_autofree char *tr =
        weir_window_quantity_text(&w->analysis->total_traffic, TRUE);
    g_autofree char *b =
        weir_window_quantity_text(&w->analysis->total_bytes, TRUE);
    g_autofree char *f =
        weir_window_quantity_text(&w->analysis->total_flops, FALSE);
    g_autofree char *p =
        weir_window_quantity_text(&w->analysis->peak_transient_bytes, TRUE);
    add_prop(w, "modeled traffic", tr);
    add_prop(w, "logical volume", b);
    add_prop(w, "FLOPs", f);
    add_prop(w, "peak transient", p);
  }
}
