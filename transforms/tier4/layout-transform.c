/* layout-transform.c — "layout-transform" (tier 4): change the data layout
 * of 4-D transients (NCHW <-> NHWC) across the operators that connect
 * them.
 *
 * Containers carry explicit strides, and every memlet, tasklet index and
 * copy addresses elements by their logical indices: the interpreter and
 * the code generator compute the address as the sum of index x stride (the
 * generator uses memcpy only between row-major containers).  So a layout
 * change is a change of strides alone: with the strides of a [N, C, H, W]
 * container set to [H*W*C, 1, W*C, C], the same logical indexing stores
 * the channels of a pixel next to each other (NHWC); no memlet changes.
 *
 * The change propagates across operators: the site stands for a connected
 * component of eligible transients, where two transients are connected
 * when one operator (a library node, a top-level map scope with everything
 * inside it, a tasklet, or a copy between access nodes) touches both.  A
 * chain Conv -> BatchNormalization -> Relu -> Add ... changes layout as a
 * whole; arguments keep theirs, so the program's boundary is unchanged
 * (the operators that read an argument and write a transient, or the
 * reverse, are where the "transposes" happen, inside their loops).
 *
 * Site: [an access node of the component] (the first by state, then node
 * id).  Parameter layout: nhwc (default) or nchw (row-major again).
 * Eligible: transient, rank 4, without constant data (whose bytes are
 * row-major).  Legal when some member of the component is not yet in the
 * requested layout.  Bytes moved do not change.
 */
#include <string.h>

#include "tier4-util.h"
#include "weir-plugin.h"

gboolean weir_tier4_register_layout_transform(GError **error);

static const WeirParamSpec params[] = {
    {.name = "layout",
     .type = WEIR_PARAM_CHOICE,
     .default_value = "nhwc",
     .choices = "nhwc|nchw",
     .doc = "layout of the 4-D transients: channels last (nhwc) or "
            "row-major (nchw)"},
};

static gboolean eligible(const WeirContainer *c) {
  return c && c->transient && !c->initial && c->shape->len == 4;
}

/* ------------------------------------------------------------ components */

typedef struct {
  GPtrArray *names;  /* eligible container names (borrowed), by id */
  GHashTable *index; /* name -> index + 1 */
  guint *parent;     /* union-find */
} Components;

static guint find(Components *cs, guint i) {
  while (cs->parent[i] != i) {
    cs->parent[i] = cs->parent[cs->parent[i]];
    i = cs->parent[i];
  }
  return i;
}

static void join(Components *cs, guint a, guint b) {
  a = find(cs, a);
  b = find(cs, b);
  if (a != b)
    cs->parent[MAX(a, b)] = MIN(a, b);
}

static guint index_of(const Components *cs, const char *name) {
  return name ? GPOINTER_TO_UINT(g_hash_table_lookup(cs->index, name)) : 0;
}

static void components_clear(Components *cs) {
  g_clear_pointer(&cs->names, g_ptr_array_unref);
  g_clear_pointer(&cs->index, g_hash_table_unref);
  g_clear_pointer(&cs->parent, g_free);
}

static void components_init(Components *cs, const WeirGraph *g) {
  cs->names = g_ptr_array_new();
  cs->index = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (!eligible(c))
      continue;
    g_ptr_array_add(cs->names, c->name);
    g_hash_table_insert(cs->index, c->name, GUINT_TO_POINTER(cs->names->len));
  }
  cs->parent = g_new0(guint, cs->names->len + 1);
  for (guint i = 0; i < cs->names->len; i++)
    cs->parent[i] = i;
  for (guint si = 0; si < g->states->len; si++) {
    const WeirState *s = g_ptr_array_index(g->states, si);
    g_autoptr(T4State) ts = t4_state_new(s, NULL);
    if (!ts)
      continue;
    /* operator (top-level representative) -> first member seen, + 1 */
    g_autoptr(GHashTable) first =
        g_hash_table_new(g_direct_hash, g_direct_equal);
    for (guint k = 0; k < s->edges->len; k++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, k);
      if (!m->data)
        continue;
      if (t4_memlet_is_copy(s, m)) {
        guint a = index_of(cs, weir_state_node(s, m->src)->data);
        guint b = index_of(cs, weir_state_node(s, m->dst)->data);
        if (a && b)
          join(cs, a - 1, b - 1);
        continue;
      }
      guint i = index_of(cs, m->data);
      if (!i)
        continue;
      guint ends[2] = {m->src, m->dst};
      for (guint e = 0; e < 2; e++) {
        const WeirNode *n = weir_state_node(s, ends[e]);
        if (n->kind == WEIR_NODE_ACCESS)
          continue;
        gpointer op = GUINT_TO_POINTER(t4_top_rep(ts, n->id, TRUE));
        guint j = GPOINTER_TO_UINT(g_hash_table_lookup(first, op));
        if (j)
          join(cs, i - 1, j - 1);
        else
          g_hash_table_insert(first, op, GUINT_TO_POINTER(i));
      }
    }
  }
}

/* Members of the component of container index i, by container id. */
static GPtrArray *members(Components *cs, guint i) {
  GPtrArray *out = g_ptr_array_new();
  guint root = find(cs, i);
  for (guint k = 0; k < cs->names->len; k++)
    if (find(cs, k) == root)
      g_ptr_array_add(out, g_ptr_array_index(cs->names, k));
  return out;
}

/* ---------------------------------------------------------------- strides */

/* Strides of `layout` for a 4-D shape (transfer full: 4 new refs). */
static void layout_strides(const WeirContainer *c, gboolean nhwc,
                           WeirExpr **out) {
  WeirExpr *ch = g_ptr_array_index(c->shape, 1);
  WeirExpr *h = g_ptr_array_index(c->shape, 2);
  WeirExpr *w = g_ptr_array_index(c->shape, 3);
  g_autoptr(WeirExpr) hw = weir_expr_mul(h, w);
  if (nhwc) {
    out[0] = weir_expr_mul(hw, ch);
    out[1] = weir_expr_const(1);
    out[2] = weir_expr_mul(w, ch);
    out[3] = weir_expr_ref(ch);
  } else {
    out[0] = weir_expr_mul(hw, ch);
    out[1] = weir_expr_ref(hw);
    out[2] = weir_expr_ref(w);
    out[3] = weir_expr_const(1);
  }
}

static gboolean has_layout(const WeirContainer *c, gboolean nhwc) {
  WeirExpr *want[4];
  layout_strides(c, nhwc, want);
  gboolean same = TRUE;
  for (guint d = 0; d < 4; d++) {
    same &= weir_expr_equal(want[d], g_ptr_array_index(c->strides, d));
    weir_expr_unref(want[d]);
  }
  return same;
}

/* ------------------------------------------------------ the framework API */

static void match(const WeirGraph *g, GArray *sites) {
  Components cs = {0};
  components_init(&cs, g);
  g_autofree gboolean *seen = g_new0(gboolean, cs.names->len + 1);
  for (guint si = 0; si < g->states->len; si++) {
    const WeirState *s = g_ptr_array_index(g->states, si);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      guint i = n->kind == WEIR_NODE_ACCESS ? index_of(&cs, n->data) : 0;
      if (!i || seen[find(&cs, i - 1)])
        continue;
      seen[find(&cs, i - 1)] = TRUE;
      WeirSite site = {.state = s->id, .n_nodes = 1, .nodes = {n->id}};
      g_array_append_val(sites, site);
    }
  }
  components_clear(&cs);
}

/* The site's container and component; FALSE with a reason. */
static gboolean site_component(const WeirGraph *g, const WeirSite *site,
                               Components *cs, GPtrArray **out, char **reason) {
  const WeirState *s = weir_graph_state(g, site->state);
  const WeirNode *n =
      s && site->n_nodes == 1 ? weir_state_node(s, site->nodes[0]) : NULL;
  if (!n || n->kind != WEIR_NODE_ACCESS) {
    *reason = g_strdup("the site is one access node of a 4-D transient");
    return FALSE;
  }
  const WeirContainer *c = weir_graph_container(g, n->data);
  if (!c) {
    *reason = g_strdup_printf("unknown container '%s'", n->data);
    return FALSE;
  }
  if (!c->transient) {
    *reason = g_strdup_printf("'%s' is an argument: arguments keep their "
                              "layout (the program's boundary is unchanged)",
                              c->name);
    return FALSE;
  }
  if (c->shape->len != 4) {
    *reason = g_strdup_printf("'%s' has rank %u; the layouts are those of "
                              "4-D (N, C, H, W) containers",
                              c->name, c->shape->len);
    return FALSE;
  }
  if (c->initial) {
    *reason =
        g_strdup_printf("'%s' has constant data, stored row-major", c->name);
    return FALSE;
  }
  components_init(cs, g);
  *out = members(cs, index_of(cs, c->name) - 1);
  return TRUE;
}

static gboolean can_apply(const WeirGraph *g, const WeirSite *site,
                          const WeirParams *p, char **reason) {
  Components cs = {0};
  g_autoptr(GPtrArray) comp = NULL;
  gboolean ok = site_component(g, site, &cs, &comp, reason);
  if (ok) {
    const char *layout = weir_params_get_string(p, "layout");
    gboolean nhwc = strcmp(layout, "nhwc") == 0;
    ok = FALSE;
    for (guint k = 0; k < comp->len && !ok; k++)
      ok = !has_layout(weir_graph_container(g, g_ptr_array_index(comp, k)),
                       nhwc);
    if (!ok) {
      const WeirNode *n = weir_graph_node(g, site->nodes[0], NULL);
      *reason = g_strdup_printf("'%s' and the %u transients connected to it "
                                "are already in %s layout",
                                n->data, comp->len - 1, layout);
    }
  }
  components_clear(&cs);
  return ok;
}

static gboolean apply(WeirGraph *g, const WeirSite *site, const WeirParams *p,
                      GError **error) {
  Components cs = {0};
  g_autoptr(GPtrArray) comp = NULL;
  g_autofree char *reason = NULL;
  if (!site_component(g, site, &cs, &comp, &reason)) {
    components_clear(&cs);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  gboolean nhwc = strcmp(weir_params_get_string(p, "layout"), "nhwc") == 0;
  for (guint k = 0; k < comp->len; k++) {
    WeirContainer *c = weir_graph_container(g, g_ptr_array_index(comp, k));
    WeirExpr *st[4];
    layout_strides(c, nhwc, st);
    weir_container_set_strides(c, st);
    for (guint d = 0; d < 4; d++)
      weir_expr_unref(st[d]);
  }
  components_clear(&cs);
  return TRUE;
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "layout-transform",
    .tier = 4,
    .description = "change the layout of connected 4-D transients between "
                   "NCHW and NHWC by their strides",
    .params = params,
    .n_params = G_N_ELEMENTS(params),
    .match = match,
    .can_apply = can_apply,
    .apply = apply,
};

gboolean weir_tier4_register_layout_transform(GError **error) {
  return weir_transform_register(&info, error);
}
