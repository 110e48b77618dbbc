/* recompute-activation.c — "recompute-activation" (tier 4): trade FLOPs
 * for memory in a training program by recomputing a stored activation
 * where the backward pass reads it, instead of keeping it alive from the
 * forward pass.
 *
 * Site: [F, A, C]: F a library node whose only output is transient A
 * (access node A), C a library node reading A.
 * Effect: a copy F' of F (same operator, attributes and inputs) writes a
 * new transient A' = "<A>_recomputed"; C reads A' instead of A; ordering
 * edges (empty memlets) from C's other inputs to F' make F' run only when
 * C is about to (in a training program: in the backward pass).  A then
 * dies at its last other reader, and A' lives only from F' to C, so the
 * peak transient memory (weir-analysis.h) drops when A was live at the
 * peak.  The ordering edges hold for the library-node program (what the
 * analysis and the GUI show); expanding F' keeps the dataflow, not the
 * ordering.
 * Parameter: activation, the name of A.  Recomputing trades FLOPs for
 * memory, so it is a choice, never a blanket rewrite: without the name
 * (the default, as in a recipe step that runs a whole tier) no site is
 * legal.
 * Legal when: F has exactly one output connector, written to A; A is a
 * transient without constant data, written only by F in this state; C
 * reads A directly, and also depends on another reader of A (so A is kept
 * alive across that reader's descendants: a stored activation, as for a
 * backward node); every input of F is read from an access node whose
 * container is written at most once in the state (so the recomputation sees
 * the same values).
 */
#include <string.h>

#include "weir-ops.h"
#include "weir-plugin.h"

gboolean weir_tier4_register_recompute_activation(GError **error);

static gboolean fail(char **reason, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean fail(char **reason, const char *fmt, ...) {
  if (reason) {
    va_list ap;
    va_start(ap, fmt);
    *reason = g_strdup_vprintf(fmt, ap);
    va_end(ap);
  }
  return FALSE;
}

static guint writers(const WeirState *s, const char *name) {
  guint n = 0;
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *a = g_ptr_array_index(s->nodes, i);
    if (a->kind != WEIR_NODE_ACCESS || g_strcmp0(a->data, name) != 0)
      continue;
    g_autoptr(GPtrArray) in = weir_state_in_edges(s, a->id);
    for (guint k = 0; k < in->len; k++)
      if (((WeirMemlet *)in->pdata[k])->data)
        n++;
  }
  return n;
}

/* Whether node `to` is reachable from node `from` in s. */
static gboolean reaches(const WeirState *s, guint from, guint to) {
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_autoptr(GArray) stack = g_array_new(FALSE, FALSE, sizeof(guint));
  g_array_append_val(stack, from);
  while (stack->len > 0) {
    guint id = g_array_index(stack, guint, stack->len - 1);
    g_array_set_size(stack, stack->len - 1);
    if (id == to)
      return TRUE;
    if (!g_hash_table_add(seen, GUINT_TO_POINTER(id)))
      continue;
    g_autoptr(GPtrArray) out = weir_state_out_edges(s, id);
    for (guint k = 0; k < out->len; k++)
      g_array_append_val(stack, ((WeirMemlet *)out->pdata[k])->dst);
  }
  return FALSE;
}

static gboolean check(const WeirGraph *g, const WeirSite *site, char **reason) {
  if (site->n_nodes != 3)
    return fail(reason, "the site is [producer, activation, consumer]");
  const WeirState *s = weir_graph_state(g, site->state);
  if (!s)
    return fail(reason, "no state %u", site->state);
  const WeirNode *f = weir_state_node(s, site->nodes[0]);
  const WeirNode *a = weir_state_node(s, site->nodes[1]);
  const WeirNode *c = weir_state_node(s, site->nodes[2]);
  if (!f || !a || !c || f->kind != WEIR_NODE_LIBRARY ||
      a->kind != WEIR_NODE_ACCESS || c->kind != WEIR_NODE_LIBRARY || f == c)
    return fail(reason, "the site is [library node, access node, library "
                        "node]");
  const WeirContainer *ca = weir_graph_container(g, a->data);
  if (!ca || !ca->transient || ca->initial)
    return fail(reason, "'%s' is not a transient without data", a->data);
  if (f->out_conns->len != 1)
    return fail(reason, "node %u has %u outputs (one is recomputed)", f->id,
                f->out_conns->len);
  g_autoptr(GPtrArray) fout = weir_state_out_edges(s, f->id);
  if (fout->len != 1 || ((WeirMemlet *)fout->pdata[0])->dst != a->id)
    return fail(reason, "node %u does not write access node %u", f->id, a->id);
  if (writers(s, a->data) != 1)
    return fail(reason, "'%s' is written more than once", a->data);
  g_autoptr(GPtrArray) aout = weir_state_out_edges(s, a->id);
  gboolean reads = FALSE, others = FALSE;
  for (guint k = 0; k < aout->len; k++) {
    const WeirMemlet *m = aout->pdata[k];
    if (m->dst == c->id && m->data)
      reads = TRUE;
    else if (m->data && reaches(s, m->dst, c->id))
      others = TRUE;
  }
  if (!reads)
    return fail(reason, "node %u does not read '%s'", c->id, a->data);
  if (!others)
    return fail(reason,
                "node %u does not run after another reader of '%s': the "
                "activation is not kept alive for it",
                c->id, a->data);
  g_autoptr(GPtrArray) fin = weir_state_in_edges(s, f->id);
  for (guint k = 0; k < fin->len; k++) {
    const WeirMemlet *m = fin->pdata[k];
    if (!m->data)
      continue;
    if (writers(s, m->data) > 1)
      return fail(reason,
                  "input '%s' of node %u is written more than once: a "
                  "recomputation could see another value",
                  m->data, f->id);
  }
  return TRUE;
}

static void match(const WeirGraph *g, GArray *sites) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint j = 0; j < s->nodes->len; j++) {
      const WeirNode *f = g_ptr_array_index(s->nodes, j);
      if (f->kind != WEIR_NODE_LIBRARY)
        continue;
      g_autoptr(GPtrArray) fout = weir_state_out_edges(s, f->id);
      if (fout->len != 1)
        continue;
      const WeirMemlet *w = fout->pdata[0];
      g_autoptr(GPtrArray) readers = weir_state_out_edges(s, w->dst);
      for (guint k = 0; k < readers->len; k++) {
        const WeirMemlet *m = readers->pdata[k];
        WeirSite site = {
            .state = s->id, .n_nodes = 3, .nodes = {f->id, w->dst, m->dst}};
        if (m->data && check(g, &site, NULL))
          g_array_append_val(sites, site);
      }
    }
  }
}

/* The site names the activation the parameter chose. */
static gboolean chosen(const WeirGraph *g, const WeirSite *site,
                       const WeirParams *params, char **reason) {
  const char *want = weir_params_get_string(params, "activation");
  const WeirNode *a = weir_graph_node(g, site->nodes[1], NULL);
  if (!want || !*want)
    return fail(reason,
                "name the activation to recompute "
                "(activation=%s): recomputing trades FLOPs for "
                "memory, it is never applied blindly",
                a && a->data ? a->data : "NAME");
  if (!a || g_strcmp0(a->data, want) != 0)
    return fail(reason, "the site's activation is '%s', not '%s'",
                a && a->data ? a->data : "?", want);
  return TRUE;
}

static gboolean can_apply(const WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, char **reason) {
  return check(g, site, reason) && chosen(g, site, params, reason);
}

static gboolean apply(WeirGraph *g, const WeirSite *site,
                      const WeirParams *params, GError **error) {
  g_autofree char *reason = NULL;
  if (!can_apply(g, site, params, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  WeirState *s = weir_graph_state(g, site->state);
  WeirNode *f = weir_state_node(s, site->nodes[0]);
  WeirNode *a = weir_state_node(s, site->nodes[1]);
  guint c_id = site->nodes[2];
  const WeirContainer *ca = weir_graph_container(g, a->data);
  g_autofree char *base = g_strdup_printf("%s_recomputed", ca->name);
  g_autofree char *name = weir_graph_fresh_name(g, base);
  if (!weir_graph_add_container(g, name, ca->dtype, ca->shape->len,
                                (WeirExpr *const *)ca->shape->pdata, TRUE,
                                error))
    return FALSE;
  g_autofree char *a_name = g_strdup(a->data);
  g_autofree char *label = g_strdup_printf("%s (recomputed)", f->label);
  g_autoptr(GPtrArray) ins = g_ptr_array_new();
  for (guint i = 0; i < f->in_conns->len; i++)
    g_ptr_array_add(ins, f->in_conns->pdata[i]);
  g_ptr_array_add(ins, NULL);
  const char *outs[] = {f->out_conns->pdata[0], NULL};
  WeirNode *f2 = weir_state_add_library(g, s, label, f->op,
                                        (const char *const *)ins->pdata, outs);
  weir_node_copy_attrs(f2, f);
  g_autoptr(GPtrArray) fin = weir_state_in_edges(s, f->id);
  for (guint k = 0; k < fin->len; k++) {
    const WeirMemlet *m = fin->pdata[k];
    if (!m->data)
      continue;
    g_autofree char *sub = weir_subset_to_string(m->subset);
    if (!weir_state_add_memlet(g, s, m->src, m->src_conn, f2->id, m->dst_conn,
                               m->data, sub, error))
      return FALSE;
  }
  WeirNode *a2 = weir_state_add_access(g, s, name);
  g_autoptr(GPtrArray) fout = weir_state_out_edges(s, f->id);
  const WeirMemlet *w = fout->pdata[0];
  g_autofree char *wsub = weir_subset_to_string(w->subset);
  if (!weir_state_add_memlet(g, s, f2->id, w->src_conn, a2->id, NULL, name,
                             wsub, error))
    return FALSE;
  /* C reads the recomputed value; its other inputs order F' */
  g_autoptr(GPtrArray) cin = weir_state_in_edges(s, c_id);
  for (guint k = 0; k < cin->len; k++) {
    WeirMemlet *m = cin->pdata[k];
    if (m->src == a->id && m->data) {
      weir_memlet_set_src(s, m, a2->id, NULL);
      weir_memlet_set_data(m, name);
    } else if (m->src != a->id &&
               !weir_state_add_memlet(g, s, m->src, NULL, f2->id, NULL, NULL,
                                      NULL, error)) {
      return FALSE;
    }
  }
  (void)a_name;
  return TRUE;
}

static const WeirParamSpec params_spec[] = {
    {.name = "activation",
     .type = WEIR_PARAM_STRING,
     .default_value = "",
     .doc = "name of the activation (container) to recompute"},
};

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "recompute-activation",
    .params = params_spec,
    .n_params = G_N_ELEMENTS(params_spec),
    .tier = 4,
    .description = "recompute a stored activation where a (backward) node "
                   "reads it instead of keeping it alive: fewer bytes live, "
                   "more FLOPs",
    .match = match,
    .can_apply = can_apply,
    .apply = apply,
};

gboolean weir_tier4_register_recompute_activation(GError **error) {
  return weir_transform_register(&info, error);
}
