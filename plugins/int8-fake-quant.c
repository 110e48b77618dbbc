/* int8-fake-quant.c — an example third-party plugin: "int8-fake-quant".
 *
 * Quantize-dequantize ("fake quantization") of one float array in place:
 * after the nodes that write it in a state, every element x is replaced by
 *
 *     clamp(floor(x / scale + 0.5), -128, 127) * scale
 *
 * that is, rounded (half up) to the nearest of the 256 int8 levels of a
 * symmetric per-tensor quantization with step `scale`, saturating at the
 * ends.  This is what an int8 deployment would compute, kept in float, so
 * the accuracy cost of int8 storage can be measured before committing to it.
 *
 * Site: one ACCESS node of an f32/f64 container that is written in its
 * state (at least one memlet enters it).  Legal when the node is at the top
 * level of the state (not inside a map) and every other access node of its
 * container in the state is ordered with the quantization: either after
 * the node (a descendant), or before it together with all its readers (an
 * ancestor whose successors are all ancestors of the node).  Then no read
 * or write of the array in the state can race with the in-place update.
 *
 * Effect: a new access node of the same container takes over the node's
 * outgoing memlets, and a parallel map (rank > 0; a single tasklet for a
 * scalar) reads the old node and writes the new one.  Data movement grows
 * by two passes over the array (read + write); nothing else changes.
 *
 * Parameter: scale (float, default 1/127: the range [-1, 1] maps onto the
 * int8 levels).  Rounding happens in the container's dtype.
 *
 * The plugin uses only the public headers weir-plugin.h and weir-graph.h
 * (and GLib); its references to libweir resolve against the Weir that loads
 * it.  Build: see plugins/README.md.
 */
#include <string.h>

#include <gmodule.h>

#include "weir-plugin.h"

G_MODULE_EXPORT gboolean weir_plugin_register(guint host_api_version,
                                              GError **error);

static const WeirParamSpec params[] = {
    {.name = "scale",
     .type = WEIR_PARAM_FLOAT,
     .default_value = "0.007874015748031496",
     .fmin = 1e-12,
     .fmax = 1e12,
     .doc = "quantization step: x maps to round(x / scale) clamped to "
            "[-128, 127], times scale"},
};

static const WeirPatternNode pattern_nodes[] = {{.kind = WEIR_NODE_ACCESS}};
static const WeirPattern pattern = {.nodes = pattern_nodes, .n_nodes = 1};

static const WeirNode *site_node(const WeirGraph *g, const WeirSite *site,
                                 const WeirState **state_out) {
  const WeirState *s = weir_graph_state(g, site->state);
  *state_out = s;
  return weir_state_node(s, site->nodes[0]);
}

static guint in_degree(const WeirState *s, guint node) {
  g_autoptr(GPtrArray) in = weir_state_in_edges(s, node);
  return in->len;
}

/* Keeps the access nodes of float containers that something writes. */
static void fq_match(const WeirGraph *g, GArray *sites) {
  guint w = 0;
  for (guint i = 0; i < sites->len; i++) {
    const WeirSite *site = &g_array_index(sites, WeirSite, i);
    const WeirState *s;
    const WeirNode *n = site_node(g, site, &s);
    const WeirContainer *c = weir_graph_container(g, n->data);
    if (c && weir_dtype_is_float(c->dtype) && in_degree(s, n->id) > 0)
      g_array_index(sites, WeirSite, w++) = *site;
  }
  g_array_set_size(sites, w);
}

/* Node ids reachable from `from` (not included) along memlets, forward or
 * backward, as a set. */
static GHashTable *reachable(const WeirState *s, guint from, gboolean forward) {
  g_autoptr(GHashTable) adj = g_hash_table_new_full(
      g_direct_hash, g_direct_equal, NULL, (GDestroyNotify)g_array_unref);
  for (guint e = 0; e < s->edges->len; e++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, e);
    guint a = forward ? m->src : m->dst, b = forward ? m->dst : m->src;
    GArray *l = g_hash_table_lookup(adj, GUINT_TO_POINTER(a));
    if (!l) {
      l = g_array_new(FALSE, FALSE, sizeof(guint));
      g_hash_table_insert(adj, GUINT_TO_POINTER(a), l);
    }
    g_array_append_val(l, b);
  }
  GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(guint));
  g_array_append_val(stack, from);
  while (stack->len) {
    guint id = g_array_index(stack, guint, stack->len - 1);
    g_array_set_size(stack, stack->len - 1);
    GArray *l = g_hash_table_lookup(adj, GUINT_TO_POINTER(id));
    for (guint i = 0; l && i < l->len; i++) {
      guint next = g_array_index(l, guint, i);
      if (!g_hash_table_contains(seen, GUINT_TO_POINTER(next))) {
        g_hash_table_add(seen, GUINT_TO_POINTER(next));
        g_array_append_val(stack, next);
      }
    }
  }
  return seen;
}

/* The first other access node of n's container in s that is not ordered
 * with the quantization, or 0.  Ordered: a descendant of n (its accesses
 * come after n's readers, which move to the quantized node), or an
 * ancestor of n all of whose readers are ancestors of n too (they finish
 * before n is complete). */
static guint unordered_access(const WeirState *s, const WeirNode *n) {
  g_autoptr(GHashTable) before = reachable(s, n->id, FALSE);
  g_autoptr(GHashTable) after = reachable(s, n->id, TRUE);
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *o = g_ptr_array_index(s->nodes, i);
    if (o == n || o->kind != WEIR_NODE_ACCESS ||
        g_strcmp0(o->data, n->data) != 0)
      continue;
    if (g_hash_table_contains(after, GUINT_TO_POINTER(o->id)))
      continue;
    if (!g_hash_table_contains(before, GUINT_TO_POINTER(o->id)))
      return o->id;
    g_autoptr(GPtrArray) out = weir_state_out_edges(s, o->id);
    for (guint k = 0; k < out->len; k++) {
      const WeirMemlet *m = g_ptr_array_index(out, k);
      if (m->dst != n->id &&
          !g_hash_table_contains(before, GUINT_TO_POINTER(m->dst)))
        return o->id;
    }
  }
  return 0;
}

static gboolean fq_can_apply(const WeirGraph *g, const WeirSite *site,
                             const WeirParams *p, char **reason) {
  (void)p;
  const WeirState *s;
  const WeirNode *n = site_node(g, site, &s);
  const WeirContainer *c = weir_graph_container(g, n->data);
  if (!c) {
    *reason = g_strdup_printf("access node %u names no container", n->id);
    return FALSE;
  }
  if (!weir_dtype_is_float(c->dtype)) {
    *reason = g_strdup_printf("container '%s' is %s, not a float array",
                              c->name, weir_dtype_name(c->dtype));
    return FALSE;
  }
  if (in_degree(s, n->id) == 0) {
    *reason = g_strdup_printf("access node %u of '%s' is not written in "
                              "state %u '%s' (nothing to quantize after)",
                              n->id, c->name, s->id, s->label);
    return FALSE;
  }
  guint other = unordered_access(s, n);
  if (other) {
    *reason = g_strdup_printf("container '%s' has another access node (node "
                              "%u) in state %u '%s' that is not ordered with "
                              "node %u",
                              c->name, other, s->id, s->label, n->id);
    return FALSE;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirScopes) scopes = weir_state_scopes(s, &error);
  if (!scopes) {
    *reason =
        g_strdup_printf("state %u '%s': %s", s->id, s->label, error->message);
    return FALSE;
  }
  if (weir_scopes_parent(scopes, n->id) != 0) {
    *reason = g_strdup_printf("access node %u of '%s' is inside map %u", n->id,
                              c->name, weir_scopes_parent(scopes, n->id));
    return FALSE;
  }
  return TRUE;
}

/* A floating literal of the tasklet language that reads back exactly. */
static char *float_literal(double v) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.17g", v);
  if (!strpbrk(buf, ".eE"))
    return g_strconcat(buf, ".0", NULL);
  return g_strdup(buf);
}

/* A map parameter name that is not a program symbol. */
static char *fresh_param(const WeirGraph *g, guint d) {
  for (guint k = 0;; k++) {
    char *name =
        k ? g_strdup_printf("fq%u_%u", d, k) : g_strdup_printf("fq%u", d);
    if (!weir_graph_has_symbol(g, name))
      return name;
    g_free(name);
  }
}

/* Re-creates memlet m with a new source node (same everything else). */
static gboolean move_source(WeirGraph *g, WeirState *s, const WeirMemlet *m,
                            guint new_src, GError **error) {
  g_autofree char *subset = m->data ? weir_subset_to_string(m->subset) : NULL;
  WeirMemlet *copy = weir_state_add_memlet(g, s, new_src, m->src_conn, m->dst,
                                           m->dst_conn, m->data, subset, error);
  if (!copy)
    return FALSE;
  if (m->other) {
    g_autofree char *other = weir_subset_to_string(m->other);
    if (!weir_memlet_set_other(copy, other, error))
      return FALSE;
  }
  weir_memlet_set_volume(copy, m->volume);
  copy->dynamic = m->dynamic;
  copy->wcr = m->wcr;
  return weir_state_remove_memlet(s, m->id);
}

static gboolean fq_apply(WeirGraph *g, const WeirSite *site,
                         const WeirParams *p, GError **error) {
  WeirState *s = weir_graph_state(g, site->state);
  WeirNode *n = weir_state_node(s, site->nodes[0]);
  WeirContainer *c = weir_graph_container(g, n->data);
  g_autofree char *name = g_strdup(c->name);
  guint src = n->id;

  /* The new access node takes over the readers. */
  WeirNode *after = weir_state_add_access(g, s, name);
  guint dst = after->id;
  g_autoptr(GPtrArray) out = weir_state_out_edges(s, src);
  for (guint i = 0; i < out->len; i++)
    if (!move_source(g, s, g_ptr_array_index(out, i), dst, error))
      return FALSE;

  g_autofree char *scale = float_literal(weir_params_get_float(p, "scale"));
  g_autofree char *code = g_strdup_printf(
      "y = min(max(floor(x / %s + 0.5), -128.0), 127.0) * %s", scale, scale);
  g_autofree char *label = g_strdup_printf("fake_quant_%s", name);
  const char *ins[] = {"x", NULL};
  const char *outs[] = {"y", NULL};
  guint rank = c->shape->len;
  g_autoptr(WeirSubset) full_subset = weir_container_full_subset(c);
  g_autofree char *full = weir_subset_to_string(full_subset);

  if (rank == 0) {
    WeirNode *t = weir_state_add_tasklet(g, s, label, ins, outs, code);
    return weir_state_add_memlet(g, s, src, NULL, t->id, "x", name, "",
                                 error) &&
           weir_state_add_memlet(g, s, t->id, "y", dst, NULL, name, "", error);
  }

  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) ranges = g_ptr_array_new_with_free_func(g_free);
  for (guint d = 0; d < rank; d++) {
    g_autofree char *size = weir_expr_to_string(g_ptr_array_index(c->shape, d));
    g_ptr_array_add(names, fresh_param(g, d));
    g_ptr_array_add(ranges, g_strdup_printf("0:%s", size));
  }
  g_autofree char *point = NULL;
  {
    g_ptr_array_add(names, NULL);
    point = g_strjoinv(", ", (char **)names->pdata);
    g_ptr_array_remove_index(names, names->len - 1);
  }
  g_ptr_array_add(names, NULL);
  g_ptr_array_add(ranges, NULL);
  WeirNode *map_exit = NULL;
  WeirNode *entry =
      weir_state_add_map(g, s, label, (const char *const *)names->pdata,
                         (const char *const *)ranges->pdata,
                         WEIR_SCHEDULE_PARALLEL, &map_exit, error);
  if (!entry)
    return FALSE;
  g_autofree char *in_conn = g_strdup_printf("IN_%s", name);
  g_autofree char *out_conn = g_strdup_printf("OUT_%s", name);
  weir_node_add_in_conn(entry, in_conn);
  weir_node_add_out_conn(entry, out_conn);
  weir_node_add_in_conn(map_exit, in_conn);
  weir_node_add_out_conn(map_exit, out_conn);
  WeirNode *t = weir_state_add_tasklet(g, s, label, ins, outs, code);
  return weir_state_add_memlet(g, s, src, NULL, entry->id, in_conn, name, full,
                               error) &&
         weir_state_add_memlet(g, s, entry->id, out_conn, t->id, "x", name,
                               point, error) &&
         weir_state_add_memlet(g, s, t->id, "y", map_exit->id, in_conn, name,
                               point, error) &&
         weir_state_add_memlet(g, s, map_exit->id, out_conn, dst, NULL, name,
                               full, error);
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "int8-fake-quant",
    .tier = 2,
    .description = "quantize-dequantize a float array to int8 levels in "
                   "place after its producer (example plugin)",
    .params = params,
    .n_params = G_N_ELEMENTS(params),
    .pattern = &pattern,
    .match = fq_match,
    .can_apply = fq_can_apply,
    .apply = fq_apply,
};

gboolean weir_plugin_register(guint host_api_version, GError **error) {
  (void)host_api_version; /* registration checks the versions */
  return weir_transform_register(&info, error);
}
