/* transform-stub.c — TEMPORARY stand-in for the transformation framework
 * (core/weir-transform.h), which branch `framework` implements.  It exists
 * only so that branch tier3 links and its tests run before the framework
 * lands on main; it is deleted when that happens.  It implements the few
 * entry points the tier-3 tests use: registration, lookup, sites (match
 * functions only), can_apply and all-or-nothing apply with validation. */
#include <string.h>

#include "weir-transform.h"
#include "weir-validate.h"

gboolean weir_transforms_register_builtin(GError **error);

static GPtrArray *registry;

gboolean weir_transform_register(const WeirTransformInfo *info,
                                 GError **error) {
  if (!registry)
    registry = g_ptr_array_new();
  if (!info || !info->name || !info->apply || info->tier < 1 ||
      info->tier > 4) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation record is incomplete");
    return FALSE;
  }
  for (guint i = 0; i < registry->len; i++) {
    const WeirTransformInfo *t = g_ptr_array_index(registry, i);
    if (strcmp(t->name, info->name) == 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s' is already registered", info->name);
      return FALSE;
    }
  }
  g_ptr_array_add(registry, (gpointer)info);
  return TRUE;
}

void weir_transforms_init(void) {
  static gsize once = 0;
  if (g_once_init_enter(&once)) {
    weir_transforms_register_builtin(NULL);
    g_once_init_leave(&once, 1);
  }
}

const WeirTransformInfo *weir_transform_lookup(const char *name) {
  for (guint i = 0; registry && i < registry->len; i++) {
    const WeirTransformInfo *t = g_ptr_array_index(registry, i);
    if (strcmp(t->name, name) == 0)
      return t;
  }
  return NULL;
}

GArray *weir_transform_sites(const WeirTransformInfo *t, const WeirGraph *g) {
  GArray *sites = g_array_new(FALSE, TRUE, sizeof(WeirSite));
  if (t->match)
    t->match(g, sites);
  return sites;
}

gboolean weir_transform_can_apply(const WeirTransformInfo *t,
                                  const WeirGraph *g, const WeirSite *site,
                                  const WeirParams *params, char **reason) {
  if (!t->can_apply)
    return TRUE;
  return t->can_apply(g, site, params, reason);
}

static void quantity_set(WeirQuantity *dst, const WeirQuantity *src) {
  dst->expr = src->expr ? weir_expr_ref(src->expr) : NULL;
  dst->known = src->known;
  dst->value = src->value;
}

void weir_apply_report_clear(WeirApplyReport *r) {
  g_clear_pointer(&r->bytes_before.expr, weir_expr_unref);
  g_clear_pointer(&r->bytes_after.expr, weir_expr_unref);
  g_clear_pointer(&r->flops_before.expr, weir_expr_unref);
  g_clear_pointer(&r->flops_after.expr, weir_expr_unref);
}

gboolean weir_transform_apply(WeirGraph *g, const WeirTransformInfo *t,
                              const WeirSite *site, const WeirParams *params,
                              GHashTable *bindings, WeirApplyReport *report,
                              GError **error) {
  g_autofree char *reason = NULL;
  if (!weir_transform_can_apply(t, g, site, params, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s: %s", t->name,
                reason ? reason : "cannot apply");
    return FALSE;
  }
  g_autoptr(WeirAnalysis) before = weir_analysis_compute(g, bindings, NULL);
  WeirGraph *snapshot = weir_graph_copy(g);
  if (!t->apply(g, site, params, error) || !weir_graph_validate(g, error)) {
    WeirGraph tmp = *g;
    *g = *snapshot;
    *snapshot = tmp;
    weir_graph_free(snapshot);
    g_prefix_error(error, "%s: ", t->name);
    return FALSE;
  }
  weir_graph_free(snapshot);
  if (report) {
    g_autoptr(WeirAnalysis) after = weir_analysis_compute(g, bindings, NULL);
    memset(report, 0, sizeof *report);
    if (before)
      quantity_set(&report->bytes_before, &before->total_bytes);
    if (before)
      quantity_set(&report->flops_before, &before->total_flops);
    if (after)
      quantity_set(&report->bytes_after, &after->total_bytes);
    if (after)
      quantity_set(&report->flops_after, &after->total_flops);
  }
  return TRUE;
}
