/* prune.c — magnitude pruning of the weights of Conv, Gemm and MatMul.
 *
 * A whole-program pass (site: state 0, no nodes).  The selected weights
 * are the constants read as the second input (in1) of a Conv, Gemm or
 * MatMul node: floating dtype, rank 2 or more, concrete shape, and neither
 * the container name nor the ONNX initializer name matching the `exclude`
 * pattern (a GRegex search; empty: nothing excluded).  A weight read by
 * several nodes is pruned once.
 *
 * structure=none (unstructured): the round(sparsity x count) elements of
 * smallest magnitude become 0 — per tensor (scope=tensor), or over all
 * selected weights together (scope=global: one threshold, so layers keep
 * different fractions).  Ties are broken by position (tensor in container
 * id order, then element index), so the result is deterministic and the
 * count is exact; elements that were already 0 count as pruned.  The
 * shapes do not change, so the dense program moves the same bytes and
 * computes the same FLOPs (`weir prune` reports how many bytes of weights
 * are zero, which a sparse format would not move).
 *
 * structure=channels: whole output channels are removed and the layers
 * that read them shrunk (prune-channels.c, described there); scope does
 * not apply.
 *
 * The mask that fine-tuning keeps is the weights' pattern of zeros:
 * weir_train_graph() with WeirTrainOptions.keep_zeros (core/weir-train.h)
 * multiplies each matching parameter by its mask after every optimizer
 * update; `weir prune` records the pruned initializers in the ONNX model it
 * writes (metadata "weir.pruned"), which `weir train` reads.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prune-private.h"
#include "tier2-util.h"
#include "weir-attr.h"
#include "weir-plugin.h"

gboolean weir_tier2_register_prune(GError **error);

static const WeirParamSpec prune_params[] = {
    {.name = "sparsity",
     .type = WEIR_PARAM_FLOAT,
     .default_value = "0.5",
     .fmin = 0,
     .fmax = 1,
     .doc = "fraction of the weights (none) or of each layer's output "
            "channels (channels) to remove"},
    {.name = "scope",
     .type = WEIR_PARAM_CHOICE,
     .default_value = "tensor",
     .choices = "tensor|global",
     .doc = "unstructured: the fraction per weight tensor, or over all "
            "selected weights with one threshold"},
    {.name = "structure",
     .type = WEIR_PARAM_CHOICE,
     .default_value = "none",
     .choices = "none|channels",
     .doc = "none: single weights; channels: whole output channels, "
            "shrinking the layers that read them"},
    {.name = "criterion",
     .type = WEIR_PARAM_CHOICE,
     .default_value = "l1",
     .choices = "l1|l2",
     .doc = "channels: the norm of a channel's weights that ranks it"},
    {.name = "exclude",
     .type = WEIR_PARAM_STRING,
     .default_value = "",
     .doc = "weights whose container or initializer name matches this "
            "regular expression are left alone"},
};

static gboolean is_weighted_op(const WeirNode *n) {
  return n->kind == WEIR_NODE_LIBRARY &&
         (g_strcmp0(n->op, "Conv") == 0 || g_strcmp0(n->op, "Gemm") == 0 ||
          g_strcmp0(n->op, "MatMul") == 0);
}

static gboolean weight_ok(const WeirContainer *c) {
  if (!weir_tier2_is_constant(c) || !weir_dtype_is_float(c->dtype) ||
      c->shape->len < 2)
    return FALSE;
  g_autofree gint64 *shape = g_new0(gint64, c->shape->len);
  return weir_tier2_concrete_shape(c, shape);
}

/* The selected weights (borrowed containers, in id order), or NULL with an
 * error for a bad exclude pattern. */
static GPtrArray *weir_prune_weights(const WeirGraph *g, const char *exclude,
                                     GError **error) {
  g_autoptr(GRegex) re = NULL;
  if (exclude && *exclude) {
    re = g_regex_new(exclude, 0, 0, error);
    if (!re) {
      g_prefix_error(error, "prune: exclude pattern '%s': ", exclude);
      return NULL;
    }
  }
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(s->nodes, i);
      WeirTier2Port w;
      if (!is_weighted_op(n) || !weir_tier2_port(g, s, n, TRUE, 1, &w) ||
          !weight_ok(w.container))
        continue;
      const WeirContainer *c = w.container;
      if (re &&
          (g_regex_match(re, c->name, 0, NULL) ||
           (c->initializer && g_regex_match(re, c->initializer, 0, NULL))))
        continue;
      g_hash_table_add(seen, c->name);
    }
  }
  /* in container order (sorted by id) */
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; i < g->containers->len; i++) {
    WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (g_hash_table_contains(seen, c->name))
      g_ptr_array_add(out, c);
  }
  return out;
}

/* One element for the global sort: magnitude and position. */
typedef struct {
  double mag;
  guint tensor;
  gint64 index;
} Entry;

static int compare_entries(const void *pa, const void *pb) {
  const Entry *a = pa, *b = pb;
  if (a->mag != b->mag)
    return a->mag < b->mag ? -1 : 1;
  if (a->tensor != b->tensor)
    return a->tensor < b->tensor ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* Zeroes the round(fraction x n) smallest of entries[0..n) in tensors. */
static void zero_smallest(Entry *entries, gint64 n, double fraction,
                          GPtrArray *tensors) {
  qsort(entries, (size_t)n, sizeof *entries, compare_entries);
  gint64 k = (gint64)llround(fraction * (double)n);
  for (gint64 i = 0; i < k && i < n; i++)
    weir_tensor_set(g_ptr_array_index(tensors, entries[i].tensor),
                    entries[i].index, 0.0);
}

static gboolean prune_unstructured(GPtrArray *ws, double sparsity,
                                   gboolean global) {
  g_autoptr(GPtrArray) tensors =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_tensor_free);
  gint64 total = 0;
  for (guint i = 0; i < ws->len; i++) {
    WeirTensor *t = weir_tier2_constant_tensor(ws->pdata[i]);
    g_assert(t);
    g_ptr_array_add(tensors, t);
    total += t->count;
  }
  g_autofree Entry *entries = g_new(Entry, MAX(total, 1));
  gint64 n = 0;
  for (guint i = 0; i < tensors->len; i++) {
    WeirTensor *t = g_ptr_array_index(tensors, i);
    for (gint64 k = 0; k < t->count; k++)
      entries[n++] = (Entry){fabs(weir_tensor_get(t, k)), i, k};
    if (!global) {
      zero_smallest(entries, n, sparsity, tensors);
      n = 0;
    }
  }
  if (global)
    zero_smallest(entries, n, sparsity, tensors);
  for (guint i = 0; i < ws->len; i++) {
    WeirTensor *t = g_ptr_array_index(tensors, i);
    g_autoptr(GBytes) bytes = g_bytes_new(t->data, weir_tensor_nbytes(t));
    weir_container_set_initial(ws->pdata[i], bytes);
  }
  return TRUE;
}

static void prune_match(const WeirGraph *g, GArray *sites) {
  g_autoptr(GPtrArray) ws = weir_prune_weights(g, NULL, NULL);
  if (ws && ws->len > 0) {
    WeirSite site = {.state = 0, .n_nodes = 0};
    g_array_append_val(sites, site);
  }
}

static gboolean prune_can_apply(const WeirGraph *g, const WeirSite *site,
                                const WeirParams *params, char **reason) {
  if (site->state != 0 || site->n_nodes != 0)
    return weir_tier2_reject(reason, "prune is a whole-program pass: its site "
                                     "is state 0 with no nodes");
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) ws =
      weir_prune_weights(g, weir_params_get_string(params, "exclude"), &error);
  if (!ws)
    return weir_tier2_reject(reason, "%s", error->message);
  if (ws->len == 0)
    return weir_tier2_reject(
        reason, "no weight to prune: no Conv, Gemm or MatMul reads a "
                "floating constant of rank 2 or more as its second input "
                "that the exclude pattern leaves");
  if (g_strcmp0(weir_params_get_string(params, "structure"), "channels") == 0)
    return weir_prune_channels_check(g, ws, params, reason);
  return TRUE;
}

static gboolean prune_apply(WeirGraph *g, const WeirSite *site,
                            const WeirParams *params, GError **error) {
  (void)site;
  g_autoptr(GPtrArray) ws =
      weir_prune_weights(g, weir_params_get_string(params, "exclude"), error);
  if (!ws)
    return FALSE;
  double sparsity = weir_params_get_float(params, "sparsity");
  if (g_strcmp0(weir_params_get_string(params, "structure"), "channels") == 0)
    return weir_prune_channels_apply(g, ws, params, error);
  return prune_unstructured(
      ws, sparsity,
      g_strcmp0(weir_params_get_string(params, "scope"), "global") == 0);
}

static const WeirTransformInfo prune = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "prune",
    .tier = 2,
    .description = "magnitude pruning of Conv, Gemm and MatMul weights: the "
                   "smallest weights set to zero, or whole output channels "
                   "removed with the layers that read them shrunk",
    .params = prune_params,
    .n_params = G_N_ELEMENTS(prune_params),
    .match = prune_match,
    .can_apply = prune_can_apply,
    .apply = prune_apply,
};

gboolean weir_tier2_register_prune(GError **error) {
  return weir_transform_register(&prune, error);
}
