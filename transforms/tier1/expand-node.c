/* expand-node.c — "expand-library-node" (tier 1): replaces one library node
 * by the implementation chosen with the `impl` parameter, through the
 * expansion registered for (op, impl) in the operator library
 * (weir_op_expansion).
 *
 * Site: one LIBRARY node.  Legal when an expansion is registered for the
 * node's op and the chosen implementation; the reason otherwise lists the
 * implementations that are registered for the op.  The choice list is
 * static (IMPLS below); which of them exist for an
 * op is decided by the expansion registry, so implementations added later by
 * other files become usable without touching this one.
 *
 * `impl=default` takes the implementation the code generator would use
 * (weir_native_chosen: the node's "impl" attribute, else
 * weir_native_default_impl): a node whose choice is native is refused
 * ("keeps its native implementation"), every other node gets its pure
 * expansion.  The optimization pipelines (data/pipelines/) expand with it,
 * so they leave the native choice to the defaults.
 *
 * The framework snapshots the program and validates the result, so the
 * expansion runs directly on the program.
 */
#include <string.h>

#include "weir-expand.h"
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-plugin.h"

gboolean weir_tier1_register_expand_node(GError **error);

#define IMPLS "pure|blas|weir|im2col|direct|depthwise|winograd|col2im|weir-bf16"
#define CHOICES IMPLS "|default"

static const WeirParamSpec params[] = {
    {.name = "impl",
     .type = WEIR_PARAM_CHOICE,
     .default_value = "pure",
     .choices = CHOICES,
     .doc = "implementation: pure maps and tasklets, a BLAS call, Weir's "
            "own GEMM, im2col + GEMM, direct convolution, Weir's "
            "depthwise kernel, Weir's Winograd convolution, col2im (the input "
            "gradient) or Weir's bf16 GEMM (when registered for the op); "
            "default: what the "
            "code generator "
            "would choose (nodes whose choice is native are left alone, "
            "the others expanded pure)"},
};

static const WeirPatternNode pattern_nodes[] = {
    {.kind = WEIR_NODE_LIBRARY},
};

static const WeirPattern pattern = {
    .nodes = pattern_nodes,
    .n_nodes = G_N_ELEMENTS(pattern_nodes),
};

/* "pure, im2col" — the implementations registered for op, or "none". */
static char *registered_impls(const char *op) {
  g_auto(GStrv) impls = g_strsplit(IMPLS, "|", -1);
  GString *s = g_string_new(NULL);
  for (guint i = 0; impls[i]; i++)
    if (weir_op_expansion(op, impls[i]))
      g_string_append_printf(s, "%s%s", s->len ? ", " : "", impls[i]);
  if (!s->len)
    g_string_append(s, "none");
  return g_string_free(s, FALSE);
}

/* The implementation impl stands for at n: for "default", the native
 * choice of the code generator when it is native (*native set), else
 * "pure". */
static const char *resolve_impl(const WeirGraph *g, const WeirState *s,
                                const WeirNode *n, const char *impl,
                                gboolean *native) {
  *native = FALSE;
  if (strcmp(impl, "default") != 0)
    return impl;
  const char *chosen = weir_native_chosen(g, s, n);
  if (chosen && weir_native_lookup(n->op, chosen)) {
    *native = TRUE;
    return chosen;
  }
  return "pure";
}

static gboolean expand_can_apply(const WeirGraph *g, const WeirSite *site,
                                 const WeirParams *p, char **reason) {
  const WeirState *s = weir_graph_state(g, site->state);
  const WeirNode *n = weir_state_node(s, site->nodes[0]);
  if (!n->op || !n->op[0]) {
    *reason = g_strdup_printf("node %u has no operator", n->id);
    return FALSE;
  }
  gboolean native;
  const char *impl =
      resolve_impl(g, s, n, weir_params_get_string(p, "impl"), &native);
  if (native) {
    *reason = g_strdup_printf("%s '%s' keeps its native implementation '%s' "
                              "(impl=default)",
                              n->op, n->label ? n->label : "", impl);
    return FALSE;
  }
  if (!weir_op_expansion(n->op, impl)) {
    g_autofree char *have = registered_impls(n->op);
    *reason = g_strdup_printf("no '%s' implementation of operator '%s' is "
                              "registered (registered: %s)",
                              impl, n->op, have);
    return FALSE;
  }
  return TRUE;
}

static gboolean expand_apply(WeirGraph *g, const WeirSite *site,
                             const WeirParams *p, GError **error) {
  WeirState *s = weir_graph_state(g, site->state);
  WeirNode *n = weir_state_node(s, site->nodes[0]);
  gboolean native;
  const char *impl =
      resolve_impl(g, s, n, weir_params_get_string(p, "impl"), &native);
  g_return_val_if_fail(!native, FALSE);
  WeirExpandFunc f = weir_op_expansion(n->op, impl);
  g_autofree char *op = g_strdup(n->op);
  g_autoptr(GError) local = NULL;
  if (!f(g, s, n, &local)) {
    g_set_error(error, WEIR_ERROR, local ? local->code : WEIR_ERROR_INVALID,
                "expanding %s with '%s': %s", op, impl,
                local ? local->message : "failed");
    return FALSE;
  }
  return TRUE;
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "expand-library-node",
    .tier = 1,
    .description = "expand a library node into maps and tasklets (or a "
                   "library call) with a chosen implementation",
    .params = params,
    .n_params = G_N_ELEMENTS(params),
    .pattern = &pattern,
    .can_apply = expand_can_apply,
    .apply = expand_apply,
};

gboolean weir_tier1_register_expand_node(GError **error) {
  return weir_transform_register(&info, error);
}
