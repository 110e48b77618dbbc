/* apply-tuning.c — give a library node the implementation and parameters
 * that `weir tune` measured fastest for its signature (docs/tuning.md).
 *
 * Site: a library node of the program's states whose signature has a
 * usable result in the tuning database (weir_plugin_tuned_choice: the
 * fastest candidate whose outputs matched the reference, with an
 * implementation this Weir has and that accepts the node), and which does
 * not carry that choice yet.  Without a database nothing matches, so the
 * step of -O3 is a no-op.  Parameter `threads`: the thread count of the
 * signature (0: the default, $OMP_NUM_THREADS or one per processor, as
 * `weir tune` assumes).
 *
 * Effect: the node's attributes "impl" (the implementation), "impl_params"
 * (its parameters, removed when there are none) and "tuned" (the first 16
 * hex digits of the signature key, which `weir info`, `weir run` and the
 * GUI show) are set.  What the node computes does not change, nor the data
 * movement; the code generator emits the chosen implementation.
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-native.h"
#include "weir-plugin.h"

gboolean weir_tier1_register_apply_tuning(GError **error);

#define TUNED_KEY_CHARS 16

static const WeirParamSpec params[] = {
    {.name = "threads",
     .type = WEIR_PARAM_INT,
     .default_value = "0",
     .min = 0,
     .max = 4096,
     .doc = "thread count of the signatures looked up (0: the default, as "
            "weir tune)"},
};

/* The database's choice for n; FALSE when there is none (or n already has
 * it, when `fresh`). *reason (may be NULL) says why not. */
static gboolean tuned_choice(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, guint threads, gboolean fresh,
                             char **impl, char **prm, char **key,
                             char **reason) {
  g_autoptr(GError) error = NULL;
  if (!weir_plugin_tuned_choice(g, s, n, threads, impl, prm, key, &error)) {
    if (reason)
      *reason = g_strdup(error->message);
    return FALSE;
  }
  if (!*impl) {
    if (reason)
      *reason = g_strdup_printf(
          "the tuning database has no result for this %s's signature", n->op);
    return FALSE;
  }
  if (fresh) {
    g_autofree char *have = weir_native_params_text(n);
    if (g_strcmp0(weir_node_attr_string(n, "impl", NULL), *impl) == 0 &&
        g_strcmp0(have, *prm) == 0 &&
        g_str_has_prefix(*key, weir_node_attr_string(n, "tuned", "-"))) {
      if (reason)
        *reason = g_strdup_printf("the node already has the tuned choice '%s'",
                                  *impl);
      g_clear_pointer(impl, g_free);
      g_clear_pointer(prm, g_free);
      g_clear_pointer(key, g_free);
      return FALSE;
    }
  }
  return TRUE;
}

static void apply_tuning_match(const WeirGraph *g, GArray *sites) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_LIBRARY)
        continue;
      g_autofree char *impl = NULL, *prm = NULL, *key = NULL;
      if (!tuned_choice(g, s, n, 0, TRUE, &impl, &prm, &key, NULL))
        continue;
      WeirSite site = {.state = s->id, .n_nodes = 1, .nodes = {n->id}};
      g_array_append_val(sites, site);
    }
  }
}

static const WeirNode *site_node(const WeirGraph *g, const WeirSite *site,
                                 WeirState **s) {
  *s = weir_graph_state(g, site->state);
  WeirNode *n = *s ? weir_state_node(*s, site->nodes[0]) : NULL;
  return n && n->kind == WEIR_NODE_LIBRARY ? n : NULL;
}

static gboolean apply_tuning_can_apply(const WeirGraph *g, const WeirSite *site,
                                       const WeirParams *p, char **reason) {
  WeirState *s;
  const WeirNode *n = site_node(g, site, &s);
  if (!n) {
    *reason = g_strdup("the site is not a library node");
    return FALSE;
  }
  g_autofree char *impl = NULL, *prm = NULL, *key = NULL;
  return tuned_choice(g, s, n, (guint)weir_params_get_int(p, "threads"), TRUE,
                      &impl, &prm, &key, reason);
}

static gboolean apply_tuning_apply(WeirGraph *g, const WeirSite *site,
                                   const WeirParams *p, GError **error) {
  WeirState *s;
  WeirNode *n = (WeirNode *)site_node(g, site, &s);
  g_autofree char *impl = NULL, *prm = NULL, *key = NULL, *reason = NULL;
  if (!n || !tuned_choice(g, s, n, (guint)weir_params_get_int(p, "threads"),
                          FALSE, &impl, &prm, &key, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "apply-tuning: %s",
                reason ? reason : "not a library node");
    return FALSE;
  }
  weir_node_set_attr_string(n, "impl", impl);
  if (!weir_native_set_params(n, weir_native_lookup(n->op, impl), prm, error))
    return FALSE;
  key[MIN(strlen(key), TUNED_KEY_CHARS)] = '\0';
  weir_node_set_attr_string(n, "tuned", key);
  return TRUE;
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "apply-tuning",
    .tier = 1,
    .description = "give a library node the implementation and parameters "
                   "weir tune measured fastest for its signature (the tuning "
                   "database)",
    .params = params,
    .n_params = G_N_ELEMENTS(params),
    .match = apply_tuning_match,
    .can_apply = apply_tuning_can_apply,
    .apply = apply_tuning_apply,
};

gboolean weir_tier1_register_apply_tuning(GError **error) {
  return weir_transform_register(&info, error);
}
