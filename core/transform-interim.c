/* transform-interim.c — a minimal stand-in for the transformation framework.
 *
 * INTERIM: the framework (core/transform.c, branch `framework`) implements
 * core/weir-transform.h.  Until it lands, this file gives the session,
 * workspace and recipe code (branch `session`) something to link and test
 * against.  core/meson.build builds it only while core/transform.c does not
 * exist, and it is deleted once the framework is merged.  It follows the
 * header's contract in the simplest way: a registry sorted by tier then
 * name, parameters checked against their specs, a brute-force pattern
 * matcher, and all-or-nothing application (copy, apply, validate, swap
 * back on failure).  No plugin loading.
 */
#include <string.h>

#include "weir-json.h"
#include "weir-transform.h"
#include "weir-validate.h"

gboolean weir_transforms_register_builtin(GError **error);

/* ---------------------------------------------------------------- registry */

static GPtrArray *registry; /* const WeirTransformInfo*, sorted */
static GMutex registry_lock;

static int compare_info(gconstpointer a, gconstpointer b) {
  const WeirTransformInfo *x = *(const WeirTransformInfo *const *)a;
  const WeirTransformInfo *y = *(const WeirTransformInfo *const *)b;
  if (x->tier != y->tier)
    return x->tier < y->tier ? -1 : 1;
  return strcmp(x->name, y->name);
}

gboolean weir_transform_register(const WeirTransformInfo *info,
                                 GError **error) {
  g_return_val_if_fail(info != NULL, FALSE);
  if (info->api_version > WEIR_PLUGIN_API_VERSION) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_VERSION,
                "transformation '%s': written for plugin API version %u; "
                "this Weir supports up to %u",
                info->name ? info->name : "?", info->api_version,
                WEIR_PLUGIN_API_VERSION);
    return FALSE;
  }
  if (!info->name || !info->apply || info->tier < 1 || info->tier > 4) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s': missing name or apply, or tier %u "
                "outside 1..4",
                info->name ? info->name : "?", info->tier);
    return FALSE;
  }
  g_mutex_lock(&registry_lock);
  if (!registry)
    registry = g_ptr_array_new();
  for (guint i = 0; i < registry->len; i++) {
    const WeirTransformInfo *t = g_ptr_array_index(registry, i);
    if (strcmp(t->name, info->name) == 0) {
      g_mutex_unlock(&registry_lock);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s' is already registered", info->name);
      return FALSE;
    }
  }
  g_ptr_array_add(registry, (gpointer)info);
  g_ptr_array_sort(registry, compare_info);
  g_mutex_unlock(&registry_lock);
  return TRUE;
}

void weir_transforms_init(void) {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    g_autoptr(GError) error = NULL;
    if (!weir_transforms_register_builtin(&error))
      g_warning("registering the built-in transformations: %s", error->message);
    g_once_init_leave(&done, 1);
  }
}

guint weir_plugins_load(GPtrArray *problems) {
  (void)problems;
  return 0;
}

gboolean weir_plugin_load_file(const char *path, GError **error) {
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
              "%s: plugin loading is not available in this build", path);
  return FALSE;
}

GPtrArray *weir_transforms_list(void) {
  GPtrArray *out = g_ptr_array_new();
  g_mutex_lock(&registry_lock);
  for (guint i = 0; registry && i < registry->len; i++)
    g_ptr_array_add(out, g_ptr_array_index(registry, i));
  g_mutex_unlock(&registry_lock);
  return out;
}

const WeirTransformInfo *weir_transform_lookup(const char *name) {
  const WeirTransformInfo *found = NULL;
  g_mutex_lock(&registry_lock);
  for (guint i = 0; registry && i < registry->len && !found; i++) {
    const WeirTransformInfo *t = g_ptr_array_index(registry, i);
    if (strcmp(t->name, name) == 0)
      found = t;
  }
  g_mutex_unlock(&registry_lock);
  return found;
}

/* ----------------------------------------------------------------- params */

struct _WeirParams {
  const WeirTransformInfo *t;
  char **values; /* one per spec, canonical text */
  GArray **ints; /* INTS values per spec (or NULL) */
};

void weir_params_free(WeirParams *p) {
  if (!p)
    return;
  for (guint i = 0; i < p->t->n_params; i++) {
    g_free(p->values[i]);
    if (p->ints[i])
      g_array_unref(p->ints[i]);
  }
  g_free(p->values);
  g_free(p->ints);
  g_free(p);
}

static int spec_index(const WeirParams *p, const char *name) {
  for (guint i = 0; i < p->t->n_params; i++)
    if (strcmp(p->t->params[i].name, name) == 0)
      return (int)i;
  return -1;
}

static gboolean parse_int(const char *text, gint64 *out) {
  char *end = NULL;
  if (!*text)
    return FALSE;
  *out = g_ascii_strtoll(text, &end, 10);
  return end && *end == '\0';
}

/* Checks one value against its spec and stores its canonical text. */
static gboolean set_value(WeirParams *p, guint i, const char *text,
                          GError **error) {
  const WeirParamSpec *sp = &p->t->params[i];
  const char *tn = p->t->name;
  g_autofree char *canon = NULL;
  switch (sp->type) {
  case WEIR_PARAM_INT: {
    gint64 v;
    if (!parse_int(text, &v) || v < sp->min || v > sp->max) {
      g_set_error(
          error, WEIR_ERROR, WEIR_ERROR_INVALID,
          "%s: parameter '%s': '%s' is not an integer in [%" G_GINT64_FORMAT
          ", %" G_GINT64_FORMAT "]",
          tn, sp->name, text, sp->min, sp->max);
      return FALSE;
    }
    canon = g_strdup_printf("%" G_GINT64_FORMAT, v);
    break;
  }
  case WEIR_PARAM_FLOAT: {
    char *end = NULL;
    double v = g_ascii_strtod(text, &end);
    if (!*text || !end || *end || v < sp->fmin || v > sp->fmax) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: parameter '%s': '%s' is not a number in [%g, %g]", tn,
                  sp->name, text, sp->fmin, sp->fmax);
      return FALSE;
    }
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    canon = g_strdup(g_ascii_dtostr(buf, sizeof buf, v));
    break;
  }
  case WEIR_PARAM_BOOL:
    if (strcmp(text, "true") != 0 && strcmp(text, "false") != 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: parameter '%s': '%s' is not true or false", tn, sp->name,
                  text);
      return FALSE;
    }
    canon = g_strdup(text);
    break;
  case WEIR_PARAM_STRING:
    canon = g_strdup(text);
    break;
  case WEIR_PARAM_CHOICE: {
    g_auto(GStrv) choices = g_strsplit(sp->choices ? sp->choices : "", "|", -1);
    if (!g_strv_contains((const char *const *)choices, text)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: parameter '%s': '%s' is not one of %s", tn, sp->name,
                  text, sp->choices);
      return FALSE;
    }
    canon = g_strdup(text);
    break;
  }
  case WEIR_PARAM_INTS: {
    g_auto(GStrv) items = g_strsplit(text, ",", -1);
    GArray *a = g_array_new(FALSE, FALSE, sizeof(gint64));
    GString *c = g_string_new(NULL);
    for (guint k = 0; items[k]; k++) {
      gint64 v;
      g_strstrip(items[k]);
      if (!parse_int(items[k], &v) || v < sp->min || v > sp->max) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "%s: parameter '%s': '%s' is not a list of integers in "
                    "[%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT "]",
                    tn, sp->name, text, sp->min, sp->max);
        g_array_unref(a);
        g_string_free(c, TRUE);
        return FALSE;
      }
      g_array_append_val(a, v);
      g_string_append_printf(c, "%s%" G_GINT64_FORMAT, k ? "," : "", v);
    }
    if (p->ints[i])
      g_array_unref(p->ints[i]);
    p->ints[i] = a;
    canon = g_string_free(c, FALSE);
    break;
  }
  }
  g_free(p->values[i]);
  p->values[i] = g_steal_pointer(&canon);
  return TRUE;
}

WeirParams *weir_params_parse(const WeirTransformInfo *t,
                              const char *const *assignments, GError **error) {
  g_autoptr(WeirParams) p = g_new0(WeirParams, 1);
  p->t = t;
  p->values = g_new0(char *, t->n_params + 1);
  p->ints = g_new0(GArray *, t->n_params + 1);
  for (guint i = 0; assignments && assignments[i]; i++) {
    const char *eq = strchr(assignments[i], '=');
    g_autofree char *name =
        eq ? g_strndup(assignments[i], (gsize)(eq - assignments[i]))
           : g_strdup(assignments[i]);
    int k = spec_index(p, name);
    if (!eq || k < 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  eq ? "%s: unknown parameter '%s'"
                     : "%s: parameter '%s': expected NAME=VALUE",
                  t->name, eq ? name : assignments[i]);
      return NULL;
    }
    if (!set_value(p, (guint)k, eq + 1, error))
      return NULL;
  }
  for (guint i = 0; i < t->n_params; i++) {
    if (p->values[i])
      continue;
    if (!t->params[i].default_value) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: parameter '%s' is required", t->name, t->params[i].name);
      return NULL;
    }
    if (!set_value(p, i, t->params[i].default_value, error))
      return NULL;
  }
  return g_steal_pointer(&p);
}

char *weir_params_to_string(const WeirParams *p) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < p->t->n_params; i++)
    g_string_append_printf(s, "%s%s=%s", i ? "," : "", p->t->params[i].name,
                           p->values[i]);
  return g_string_free(s, FALSE);
}

static const char *value_of(const WeirParams *p, const char *name) {
  int k = spec_index(p, name);
  g_return_val_if_fail(k >= 0, NULL);
  return p->values[k];
}

gint64 weir_params_get_int(const WeirParams *p, const char *name) {
  const char *v = value_of(p, name);
  return v ? g_ascii_strtoll(v, NULL, 10) : 0;
}

double weir_params_get_float(const WeirParams *p, const char *name) {
  const char *v = value_of(p, name);
  return v ? g_ascii_strtod(v, NULL) : 0.0;
}

gboolean weir_params_get_bool(const WeirParams *p, const char *name) {
  const char *v = value_of(p, name);
  return v && strcmp(v, "true") == 0;
}

const char *weir_params_get_string(const WeirParams *p, const char *name) {
  return value_of(p, name);
}

const GArray *weir_params_get_ints(const WeirParams *p, const char *name) {
  int k = spec_index(p, name);
  g_return_val_if_fail(k >= 0, NULL);
  return p->ints[k];
}

/* ---------------------------------------------------------------- matching */

static gboolean node_fits(const WeirNode *n, const WeirPatternNode *pn,
                          const WeirGraph *g) {
  if (n->kind != pn->kind)
    return FALSE;
  if (pn->kind == WEIR_NODE_LIBRARY && pn->op && g_strcmp0(n->op, pn->op))
    return FALSE;
  if (pn->kind == WEIR_NODE_ACCESS && pn->transient) {
    const WeirContainer *c = weir_graph_container(g, n->data);
    if (!c || !c->transient)
      return FALSE;
  }
  return TRUE;
}

static gboolean has_edge(const WeirState *s, guint src, guint dst) {
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->src == src && m->dst == dst)
      return TRUE;
  }
  return FALSE;
}

static void match_from(const WeirGraph *g, const WeirState *s,
                       const WeirPattern *pat, WeirSite *site, guint k,
                       GArray *out) {
  if (k == pat->n_nodes) {
    for (guint e = 0; e < pat->n_edges; e++)
      if (!has_edge(s, site->nodes[pat->edges[e].src],
                    site->nodes[pat->edges[e].dst]))
        return;
    g_array_append_val(out, *site);
    return;
  }
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    gboolean used = FALSE;
    for (guint j = 0; j < k; j++)
      used = used || site->nodes[j] == n->id;
    if (used || !node_fits(n, &pat->nodes[k], g))
      continue;
    site->nodes[k] = n->id;
    match_from(g, s, pat, site, k + 1, out);
  }
}

GArray *weir_pattern_match(const WeirGraph *g, const WeirPattern *pattern) {
  GArray *out = g_array_new(FALSE, TRUE, sizeof(WeirSite));
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    WeirSite site = {.state = s->id, .n_nodes = pattern->n_nodes};
    match_from(g, s, pattern, &site, 0, out);
  }
  return out;
}

GArray *weir_transform_sites(const WeirTransformInfo *t, const WeirGraph *g) {
  GArray *sites = t->pattern ? weir_pattern_match(g, t->pattern)
                             : g_array_new(FALSE, TRUE, sizeof(WeirSite));
  if (t->match)
    t->match(g, sites);
  return sites;
}

/* Every node of the site exists in its state. */
static gboolean site_exists(const WeirGraph *g, const WeirSite *site,
                            char **reason) {
  if (site->n_nodes == 0)
    return TRUE;
  const WeirState *s = weir_graph_state(g, site->state);
  if (!s) {
    *reason = g_strdup_printf("state %u does not exist", site->state);
    return FALSE;
  }
  for (guint i = 0; i < site->n_nodes && i < WEIR_SITE_MAX_NODES; i++)
    if (!weir_state_node(s, site->nodes[i])) {
      *reason = g_strdup_printf("node %u is not in state %u", site->nodes[i],
                                site->state);
      return FALSE;
    }
  return TRUE;
}

gboolean weir_transform_can_apply(const WeirTransformInfo *t,
                                  const WeirGraph *g, const WeirSite *site,
                                  const WeirParams *params, char **reason) {
  char *why = NULL;
  gboolean ok = site_exists(g, site, &why);
  if (ok && t->can_apply)
    ok = t->can_apply(g, site, params, &why);
  if (!ok && !why)
    why = g_strdup("not applicable");
  if (reason)
    *reason = why;
  else
    g_free(why);
  return ok;
}

char *weir_site_describe(const WeirGraph *g, const WeirSite *site) {
  if (site->n_nodes == 0)
    return g_strdup("whole program");
  const WeirState *s = weir_graph_state(g, site->state);
  GString *ids = g_string_new(NULL), *what = g_string_new(NULL);
  for (guint i = 0; i < site->n_nodes; i++) {
    const WeirNode *n = s ? weir_state_node(s, site->nodes[i]) : NULL;
    g_string_append_printf(ids, "%s%u", i ? ", " : "", site->nodes[i]);
    g_string_append_printf(what, "%s%s '%s'", i ? ", " : "",
                           n ? weir_node_kind_name(n->kind) : "?",
                           n ? n->label : "?");
  }
  char *out =
      g_strdup_printf("state %u: node%s %s (%s)", site->state,
                      site->n_nodes > 1 ? "s" : "", ids->str, what->str);
  g_string_free(ids, TRUE);
  g_string_free(what, TRUE);
  return out;
}

/* ----------------------------------------------------------------- apply */

static void quantity_clear(WeirQuantity *q) {
  g_clear_pointer(&q->expr, weir_expr_unref);
  q->known = FALSE;
  q->value = 0;
}

static void quantity_take(WeirQuantity *dst, const WeirQuantity *src) {
  quantity_clear(dst);
  dst->expr = src->expr ? weir_expr_ref(src->expr) : NULL;
  dst->known = src->known;
  dst->value = src->value;
}

void weir_apply_report_clear(WeirApplyReport *r) {
  quantity_clear(&r->bytes_before);
  quantity_clear(&r->bytes_after);
  quantity_clear(&r->flops_before);
  quantity_clear(&r->flops_after);
  r->seconds = 0;
}

/* Swaps the contents of two graphs (so the caller's pointer stays valid). */
static void graph_swap(WeirGraph *a, WeirGraph *b) {
  WeirGraph tmp = *a;
  *a = *b;
  *b = tmp;
}

gboolean weir_transform_apply(WeirGraph *g, const WeirTransformInfo *t,
                              const WeirSite *site, const WeirParams *params,
                              GHashTable *bindings, WeirApplyReport *report,
                              GError **error) {
  g_autoptr(WeirParams) defaults = NULL;
  if (!params) {
    defaults = weir_params_parse(t, NULL, error);
    if (!defaults)
      return FALSE;
    params = defaults;
  }
  g_autofree char *reason = NULL;
  if (!weir_transform_can_apply(t, g, site, params, &reason)) {
    g_autofree char *where = weir_site_describe(g, site);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s cannot be applied at %s: %s", t->name, where, reason);
    return FALSE;
  }
  g_autoptr(WeirAnalysis) before = NULL;
  if (report)
    before = weir_analysis_compute(g, bindings, NULL);
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(WeirGraph) work = weir_graph_copy(g);
  g_autoptr(GError) local = NULL;
  if (!t->apply(work, site, params, &local) ||
      !weir_graph_validate(work, &local)) {
    g_autofree char *where = weir_site_describe(g, site);
    g_set_error(error, WEIR_ERROR,
                local ? (WeirErrorCode)local->code : WEIR_ERROR_INVALID,
                "%s at %s failed: %s", t->name, where,
                local ? local->message : "unknown error");
    return FALSE;
  }
  double seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
  graph_swap(g, work);
  if (report) {
    weir_apply_report_clear(report);
    g_autoptr(WeirAnalysis) after = weir_analysis_compute(g, bindings, NULL);
    if (before) {
      quantity_take(&report->bytes_before, &before->total_bytes);
      quantity_take(&report->flops_before, &before->total_flops);
    }
    if (after) {
      quantity_take(&report->bytes_after, &after->total_bytes);
      quantity_take(&report->flops_after, &after->total_flops);
    }
    report->seconds = seconds;
  }
  return TRUE;
}
