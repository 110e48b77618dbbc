/* transform.c — the transformation registry, parameters, sites, legality
 * and all-or-nothing application.
 *
 * Registry.  A name -> record hash table for lookups and a list sorted by
 * (tier, name) for listings, both behind one mutex.  Records are borrowed
 * (static data of libweir or of a plugin that stays loaded).  Built-in
 * transformations register through weir_transforms_register_builtin()
 * (transforms/builtin.c), called by weir_init() (core/init.c); the
 * registry never calls it itself.
 *
 * Parameters.  WeirParams holds one value per spec of the transformation,
 * in spec order, each parsed from text and kept with its canonical text.
 * Conventions beyond weir-plugin.h: an INT/INTS spec with min == max == 0
 * and a FLOAT spec with fmin == fmax == 0 are unbounded; booleans are
 * exactly "true" or "false"; an INTS value may be empty ("").
 *
 * Sites.  A transformation with neither a pattern nor a match function is
 * a whole-program pass: it has exactly one site, state 0 with no nodes.
 *
 * Application.  The program is copied and serialized before apply; when
 * apply or the validator after it fails, the copy is swapped back into the
 * caller's WeirGraph and its JSON is asserted to equal the text taken
 * before, so a failed application leaves the program byte-identical.  On
 * success, elements the transformation did not touch keep their addresses.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "weir-json.h"
#include "weir-transform-private.h"
#include "weir-tuning.h"
#include "weir-validate.h"

/* --------------------------------------------------------------- registry */

static GMutex registry_lock;
static GHashTable *registry;       /* name -> const WeirTransformInfo* */
static GPtrArray *registry_sorted; /* const WeirTransformInfo*, tier, name */
static GPrivate current_capture;   /* WeirRegisterCapture* of this thread */

static int compare_infos(gconstpointer a, gconstpointer b) {
  const WeirTransformInfo *x = *(const WeirTransformInfo *const *)a;
  const WeirTransformInfo *y = *(const WeirTransformInfo *const *)b;
  if (x->tier != y->tier)
    return x->tier < y->tier ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Lower-case letters, digits and dashes, starting with a letter. */
static gboolean valid_transform_name(const char *name) {
  if (!g_ascii_islower(name[0]))
    return FALSE;
  for (const char *p = name; *p; p++)
    if (!g_ascii_islower(*p) && !g_ascii_isdigit(*p) && *p != '-')
      return FALSE;
  return name[strlen(name) - 1] != '-';
}

/* Lower-case letters, digits, '_' and '-', starting with a letter. */
static gboolean valid_param_name(const char *name) {
  if (!name || !g_ascii_islower(name[0]))
    return FALSE;
  for (const char *p = name; *p; p++)
    if (!g_ascii_islower(*p) && !g_ascii_isdigit(*p) && *p != '-' && *p != '_')
      return FALSE;
  return TRUE;
}

typedef struct {
  char *text; /* canonical text */
  gint64 i;
  double f;
  gboolean b;
  GArray *ints; /* gint64, INTS only */
} ParamValue;

static gboolean parse_value(const WeirTransformInfo *t,
                            const WeirParamSpec *spec, const char *text,
                            ParamValue *out, GError **error);
static void param_value_clear(ParamValue *v);

static gboolean check_specs(const WeirTransformInfo *info, GError **error) {
  if (info->n_params && !info->params) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s': n_params is %u but params is NULL",
                info->name, info->n_params);
    return FALSE;
  }
  for (guint k = 0; k < info->n_params; k++) {
    const WeirParamSpec *spec = &info->params[k];
    if (!valid_param_name(spec->name)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': parameter %u has no valid name "
                  "(lower-case letters, digits, '_' and '-')",
                  info->name, k);
      return FALSE;
    }
    for (guint j = 0; j < k; j++)
      if (strcmp(info->params[j].name, spec->name) == 0) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "transformation '%s': parameter '%s' is declared twice",
                    info->name, spec->name);
        return FALSE;
      }
    if ((guint)spec->type > WEIR_PARAM_INTS) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': parameter '%s' has unknown type %d",
                  info->name, spec->name, (int)spec->type);
      return FALSE;
    }
    if ((spec->type == WEIR_PARAM_INT || spec->type == WEIR_PARAM_INTS) &&
        spec->min > spec->max) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': parameter '%s': min %" G_GINT64_FORMAT
                  " is larger than max %" G_GINT64_FORMAT,
                  info->name, spec->name, spec->min, spec->max);
      return FALSE;
    }
    if (spec->type == WEIR_PARAM_FLOAT &&
        !(spec->fmin <= spec->fmax)) { /* also refuses NaN bounds */
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': parameter '%s': fmin %g is not "
                  "below fmax %g",
                  info->name, spec->name, spec->fmin, spec->fmax);
      return FALSE;
    }
    if (spec->type == WEIR_PARAM_CHOICE &&
        (!spec->choices || !spec->choices[0])) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': choice parameter '%s' has no choices",
                  info->name, spec->name);
      return FALSE;
    }
    if (spec->default_value) {
      ParamValue v = {0};
      g_autoptr(GError) local = NULL;
      if (!parse_value(info, spec, spec->default_value, &v, &local)) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "%s (in its default value)", local->message);
        return FALSE;
      }
      param_value_clear(&v);
    }
  }
  return TRUE;
}

static gboolean check_pattern(const WeirTransformInfo *info, GError **error) {
  const WeirPattern *p = info->pattern;
  if (!p)
    return TRUE;
  if (p->n_nodes == 0 || p->n_nodes > WEIR_SITE_MAX_NODES || !p->nodes) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s': a pattern needs 1 to %d nodes (it has "
                "%u)",
                info->name, WEIR_SITE_MAX_NODES, p->n_nodes);
    return FALSE;
  }
  if (p->n_edges && !p->edges) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s': pattern n_edges is %u but edges is NULL",
                info->name, p->n_edges);
    return FALSE;
  }
  for (guint k = 0; k < p->n_nodes; k++)
    if ((guint)p->nodes[k].kind >= WEIR_NODE_KIND_COUNT) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': pattern node %u has unknown kind %d",
                  info->name, k, (int)p->nodes[k].kind);
      return FALSE;
    }
  for (guint e = 0; e < p->n_edges; e++)
    if (p->edges[e].src >= p->n_nodes || p->edges[e].dst >= p->n_nodes ||
        p->edges[e].src == p->edges[e].dst) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': pattern edge %u (%u -> %u) does not "
                  "join two different pattern nodes",
                  info->name, e, p->edges[e].src, p->edges[e].dst);
      return FALSE;
    }
  return TRUE;
}

static void capture_refusal(const GError *error, const WeirTransformInfo *info,
                            gboolean duplicate) {
  WeirRegisterCapture *c = g_private_get(&current_capture);
  if (!c)
    return;
  if (!c->first_refusal)
    c->first_refusal = g_strdup(error->message);
  if (duplicate && !c->duplicate)
    c->duplicate = g_strdup(info->name);
  if (error->code == WEIR_ERROR_VERSION &&
      info->api_version > c->newer_version) {
    c->newer_version = info->api_version;
    g_free(c->newer_name);
    c->newer_name = g_strdup(info->name);
  }
}

static gboolean register_checked(const WeirTransformInfo *info,
                                 gboolean *duplicate, GError **error) {
  const char *name = info->name ? info->name : "(unnamed)";
  if (info->api_version > WEIR_PLUGIN_API_VERSION) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_VERSION,
                "plugin '%s' was built for plugin API version %u, this Weir "
                "provides %d",
                name, info->api_version, WEIR_PLUGIN_API_VERSION);
    return FALSE;
  }
  if (info->api_version == 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s': api_version is 0 (set it to "
                "WEIR_PLUGIN_API_VERSION)",
                name);
    return FALSE;
  }
  if (!info->name || !info->name[0]) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "a transformation without a name cannot be registered");
    return FALSE;
  }
  if (!valid_transform_name(info->name)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s': a name is lower-case letters, digits "
                "and dashes, starting with a letter (e.g. 'map-tiling')",
                info->name);
    return FALSE;
  }
  if (!info->apply) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s' has no apply function", info->name);
    return FALSE;
  }
  if (info->tier < 1 || info->tier > 4) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s': tier %u is not one of 1, 2, 3, 4",
                info->name, info->tier);
    return FALSE;
  }
  if (!check_specs(info, error) || !check_pattern(info, error))
    return FALSE;

  g_mutex_lock(&registry_lock);
  if (!registry) {
    registry = g_hash_table_new(g_str_hash, g_str_equal);
    registry_sorted = g_ptr_array_new();
  }
  if (g_hash_table_contains(registry, info->name)) {
    g_mutex_unlock(&registry_lock);
    *duplicate = TRUE;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "a transformation named '%s' is already registered",
                info->name);
    return FALSE;
  }
  g_hash_table_insert(registry, (gpointer)info->name, (gpointer)info);
  g_ptr_array_add(registry_sorted, (gpointer)info);
  g_ptr_array_sort(registry_sorted, compare_infos);
  g_mutex_unlock(&registry_lock);
  return TRUE;
}

gboolean weir_transform_register(const WeirTransformInfo *info,
                                 GError **error) {
  g_return_val_if_fail(info != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  gboolean duplicate = FALSE;
  g_autoptr(GError) local = NULL;
  if (!register_checked(info, &duplicate, &local)) {
    capture_refusal(local, info, duplicate);
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
  }
  WeirRegisterCapture *c = g_private_get(&current_capture);
  if (c)
    g_ptr_array_add(c->registered, g_strdup(info->name));
  return TRUE;
}

gboolean weir_transform_unregister(const char *name) {
  g_mutex_lock(&registry_lock);
  const WeirTransformInfo *info =
      registry ? g_hash_table_lookup(registry, name) : NULL;
  if (info) {
    g_hash_table_remove(registry, name);
    g_ptr_array_remove(registry_sorted, (gpointer)info);
  }
  g_mutex_unlock(&registry_lock);
  return info != NULL;
}

void weir_transform_capture_begin(WeirRegisterCapture *c) {
  g_return_if_fail(g_private_get(&current_capture) == NULL);
  memset(c, 0, sizeof *c);
  c->registered = g_ptr_array_new_with_free_func(g_free);
  g_private_set(&current_capture, c);
}

void weir_transform_capture_end(void) {
  g_private_set(&current_capture, NULL);
}

void weir_register_capture_clear(WeirRegisterCapture *c) {
  g_clear_pointer(&c->registered, g_ptr_array_unref);
  g_clear_pointer(&c->newer_name, g_free);
  g_clear_pointer(&c->duplicate, g_free);
  g_clear_pointer(&c->first_refusal, g_free);
  c->newer_version = 0;
}

GPtrArray *weir_transforms_list(void) {
  g_mutex_lock(&registry_lock);
  GPtrArray *list = g_ptr_array_new();
  for (guint i = 0; registry_sorted && i < registry_sorted->len; i++)
    g_ptr_array_add(list, g_ptr_array_index(registry_sorted, i));
  g_mutex_unlock(&registry_lock);
  return list;
}

const WeirTransformInfo *weir_transform_lookup(const char *name) {
  g_return_val_if_fail(name != NULL, NULL);
  g_mutex_lock(&registry_lock);
  const WeirTransformInfo *info =
      registry ? g_hash_table_lookup(registry, name) : NULL;
  g_mutex_unlock(&registry_lock);
  return info;
}

/* ------------------------------------------------------------- parameters */

struct _WeirParams {
  const WeirTransformInfo *t;
  ParamValue *values; /* t->n_params entries, in spec order */
};

static void param_value_clear(ParamValue *v) {
  g_clear_pointer(&v->text, g_free);
  g_clear_pointer(&v->ints, g_array_unref);
}

/* The shortest text that reads back to the same double. */
static char *format_double(double v) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  for (int prec = 1; prec <= 17; prec++) {
    char fmt[8];
    g_snprintf(fmt, sizeof fmt, "%%.%dg", prec);
    g_ascii_formatd(buf, sizeof buf, fmt, v);
    if (g_ascii_strtod(buf, NULL) == v)
      break;
  }
  return g_strdup(buf);
}

static gboolean parse_int(const char *text, gint64 *out) {
  while (g_ascii_isspace(*text))
    text++;
  if (!*text)
    return FALSE;
  char *end = NULL;
  errno = 0;
  gint64 v = g_ascii_strtoll(text, &end, 10);
  if (errno || end == text)
    return FALSE;
  while (g_ascii_isspace(*end))
    end++;
  if (*end)
    return FALSE;
  *out = v;
  return TRUE;
}

static gboolean int_in_range(const WeirParamSpec *spec, gint64 v) {
  if (spec->min == 0 && spec->max == 0)
    return TRUE;
  return v >= spec->min && v <= spec->max;
}

static char *choices_text(const char *choices) {
  g_auto(GStrv) parts = g_strsplit(choices, "|", -1);
  return g_strjoinv(", ", parts);
}

static gboolean parse_value(const WeirTransformInfo *t,
                            const WeirParamSpec *spec, const char *text,
                            ParamValue *out, GError **error) {
  switch (spec->type) {
  case WEIR_PARAM_INT: {
    gint64 v;
    if (!parse_int(text, &v)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': parameter '%s': '%s' is not an "
                  "integer",
                  t->name, spec->name, text);
      return FALSE;
    }
    if (!int_in_range(spec, v)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': parameter '%s': %" G_GINT64_FORMAT
                  " is out of range (allowed %" G_GINT64_FORMAT
                  "..%" G_GINT64_FORMAT ")",
                  t->name, spec->name, v, spec->min, spec->max);
      return FALSE;
    }
    out->i = v;
    out->text = g_strdup_printf("%" G_GINT64_FORMAT, v);
    return TRUE;
  }
  case WEIR_PARAM_FLOAT: {
    char *end = NULL;
    const char *p = text;
    while (g_ascii_isspace(*p))
      p++;
    double v = *p ? g_ascii_strtod(p, &end) : 0.0;
    if (end)
      while (g_ascii_isspace(*end))
        end++;
    if (!*p || !end || end == p || *end || !isfinite(v)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': parameter '%s': '%s' is not a finite "
                  "number",
                  t->name, spec->name, text);
      return FALSE;
    }
    gboolean bounded = !(spec->fmin == 0.0 && spec->fmax == 0.0);
    if (bounded && (v < spec->fmin || v > spec->fmax)) {
      g_autofree char *lo = format_double(spec->fmin);
      g_autofree char *hi = format_double(spec->fmax);
      g_autofree char *vt = format_double(v);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': parameter '%s': %s is out of range "
                  "(allowed %s..%s)",
                  t->name, spec->name, vt, lo, hi);
      return FALSE;
    }
    out->f = v;
    out->text = format_double(v);
    return TRUE;
  }
  case WEIR_PARAM_BOOL:
    if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0) {
      out->b = text[0] == 't';
      out->text = g_strdup(text);
      return TRUE;
    }
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s': parameter '%s': '%s' is not a boolean "
                "(allowed: true, false)",
                t->name, spec->name, text);
    return FALSE;
  case WEIR_PARAM_STRING:
    out->text = g_strdup(text);
    return TRUE;
  case WEIR_PARAM_CHOICE: {
    g_auto(GStrv) parts = g_strsplit(spec->choices, "|", -1);
    for (guint i = 0; parts[i]; i++)
      if (strcmp(parts[i], text) == 0) {
        out->text = g_strdup(text);
        return TRUE;
      }
    g_autofree char *allowed = choices_text(spec->choices);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s': parameter '%s': '%s' is not one of "
                "the choices (allowed: %s)",
                t->name, spec->name, text, allowed);
    return FALSE;
  }
  case WEIR_PARAM_INTS: {
    GArray *ints = g_array_new(FALSE, FALSE, sizeof(gint64));
    GString *canon = g_string_new(NULL);
    g_auto(GStrv) parts = NULL;
    const char *p = text;
    while (g_ascii_isspace(*p))
      p++;
    if (*p)
      parts = g_strsplit(text, ",", -1);
    for (guint i = 0; parts && parts[i]; i++) {
      gint64 v;
      if (!parse_int(parts[i], &v)) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "transformation '%s': parameter '%s': '%s' is not a "
                    "comma-separated list of integers (element %u is '%s')",
                    t->name, spec->name, text, i + 1, parts[i]);
        g_array_unref(ints);
        g_string_free(canon, TRUE);
        return FALSE;
      }
      if (!int_in_range(spec, v)) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "transformation '%s': parameter '%s': element %u = "
                    "%" G_GINT64_FORMAT " is out of range (allowed "
                    "%" G_GINT64_FORMAT "..%" G_GINT64_FORMAT ")",
                    t->name, spec->name, i + 1, v, spec->min, spec->max);
        g_array_unref(ints);
        g_string_free(canon, TRUE);
        return FALSE;
      }
      g_array_append_val(ints, v);
      g_string_append_printf(canon, "%s%" G_GINT64_FORMAT, i ? "," : "", v);
    }
    out->ints = ints;
    out->text = g_string_free(canon, FALSE);
    return TRUE;
  }
  }
  g_assert_not_reached();
}

static int spec_index(const WeirTransformInfo *t, const char *name) {
  for (guint k = 0; k < t->n_params; k++)
    if (strcmp(t->params[k].name, name) == 0)
      return (int)k;
  return -1;
}

static int compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static char *param_names(const WeirTransformInfo *t) {
  if (t->n_params == 0)
    return g_strdup("it has no parameters");
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  for (guint k = 0; k < t->n_params; k++)
    g_ptr_array_add(names, (gpointer)t->params[k].name);
  g_ptr_array_sort(names, compare_strings);
  GString *s = g_string_new("parameters: ");
  for (guint k = 0; k < names->len; k++)
    g_string_append_printf(s, "%s%s", k ? ", " : "",
                           (char *)g_ptr_array_index(names, k));
  return g_string_free(s, FALSE);
}

WeirParams *weir_params_parse(const WeirTransformInfo *t,
                              const char *const *assignments, GError **error) {
  g_return_val_if_fail(t != NULL, NULL);
  WeirParams *p = g_new0(WeirParams, 1);
  p->t = t;
  p->values = g_new0(ParamValue, t->n_params + 1);
  g_autofree gboolean *given = g_new0(gboolean, t->n_params + 1);
  for (guint a = 0; assignments && assignments[a]; a++) {
    const char *text = assignments[a];
    const char *eq = strchr(text, '=');
    if (!eq || eq == text) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': parameter assignment '%s' is not of "
                  "the form name=value",
                  t->name, text);
      weir_params_free(p);
      return NULL;
    }
    g_autofree char *name = g_strndup(text, (gsize)(eq - text));
    int k = spec_index(t, name);
    if (k < 0) {
      g_autofree char *known = param_names(t);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': unknown parameter '%s' (%s)", t->name,
                  name, known);
      weir_params_free(p);
      return NULL;
    }
    if (given[k]) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': parameter '%s' is given twice", t->name,
                  name);
      weir_params_free(p);
      return NULL;
    }
    given[k] = TRUE;
    if (!parse_value(t, &t->params[k], eq + 1, &p->values[k], error)) {
      weir_params_free(p);
      return NULL;
    }
  }
  for (guint k = 0; k < t->n_params; k++) {
    if (given[k])
      continue;
    const WeirParamSpec *spec = &t->params[k];
    if (!spec->default_value) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s': parameter '%s' is required (%s)",
                  t->name, spec->name, spec->doc ? spec->doc : "no default");
      weir_params_free(p);
      return NULL;
    }
    if (!parse_value(t, spec, spec->default_value, &p->values[k], error)) {
      weir_params_free(p);
      return NULL;
    }
  }
  return p;
}

void weir_params_free(WeirParams *p) {
  if (!p)
    return;
  for (guint k = 0; k < p->t->n_params; k++)
    param_value_clear(&p->values[k]);
  g_free(p->values);
  g_free(p);
}

static int compare_spec_names(gconstpointer a, gconstpointer b) {
  const WeirParamSpec *x = *(const WeirParamSpec *const *)a;
  const WeirParamSpec *y = *(const WeirParamSpec *const *)b;
  return strcmp(x->name, y->name);
}

char *weir_params_to_string(const WeirParams *p) {
  g_return_val_if_fail(p != NULL, NULL);
  g_autoptr(GPtrArray) specs = g_ptr_array_new();
  for (guint k = 0; k < p->t->n_params; k++)
    g_ptr_array_add(specs, (gpointer)&p->t->params[k]);
  g_ptr_array_sort(specs, compare_spec_names);
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < specs->len; i++) {
    const WeirParamSpec *spec = g_ptr_array_index(specs, i);
    g_string_append_printf(s, "%s%s=%s", i ? "," : "", spec->name,
                           p->values[spec - p->t->params].text);
  }
  return g_string_free(s, FALSE);
}

static const ParamValue *lookup_value(const WeirParams *p, const char *name,
                                      WeirParamType type, gboolean or_choice) {
  g_return_val_if_fail(p != NULL && name != NULL, NULL);
  int k = spec_index(p->t, name);
  if (k < 0) {
    g_critical("transformation '%s' has no parameter '%s'", p->t->name, name);
    return NULL;
  }
  WeirParamType have = p->t->params[k].type;
  if (have != type && !(or_choice && have == WEIR_PARAM_CHOICE)) {
    g_critical("transformation '%s': parameter '%s' is read with the wrong "
               "getter for its type",
               p->t->name, name);
    return NULL;
  }
  return &p->values[k];
}

gint64 weir_params_get_int(const WeirParams *p, const char *name) {
  const ParamValue *v = lookup_value(p, name, WEIR_PARAM_INT, FALSE);
  return v ? v->i : 0;
}

double weir_params_get_float(const WeirParams *p, const char *name) {
  const ParamValue *v = lookup_value(p, name, WEIR_PARAM_FLOAT, FALSE);
  return v ? v->f : 0.0;
}

gboolean weir_params_get_bool(const WeirParams *p, const char *name) {
  const ParamValue *v = lookup_value(p, name, WEIR_PARAM_BOOL, FALSE);
  return v ? v->b : FALSE;
}

const char *weir_params_get_string(const WeirParams *p, const char *name) {
  const ParamValue *v = lookup_value(p, name, WEIR_PARAM_STRING, TRUE);
  return v ? v->text : NULL;
}

const GArray *weir_params_get_ints(const WeirParams *p, const char *name) {
  const ParamValue *v = lookup_value(p, name, WEIR_PARAM_INTS, FALSE);
  return v ? v->ints : NULL;
}

/* ------------------------------------------------------------------ sites */

GArray *weir_transform_sites(const WeirTransformInfo *t, const WeirGraph *g) {
  g_return_val_if_fail(t != NULL && g != NULL, NULL);
  GArray *sites;
  /* Matching only reads g: an edge index per state makes the memlets of a
   * node (weir_state_in_edges, ...) cost its degree, not the state's size,
   * so that enumerating candidates is linear in the program's size. */
  g_autoptr(GPtrArray) indexes =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_edge_index_end);
  for (guint i = 0; i < g->states->len; i++)
    g_ptr_array_add(indexes,
                    weir_edge_index_begin(g_ptr_array_index(g->states, i)));
  if (t->pattern)
    sites = weir_pattern_match(g, t->pattern);
  else
    sites = g_array_new(FALSE, TRUE, sizeof(WeirSite));
  if (t->match)
    t->match(g, sites);
  else if (!t->pattern) {
    WeirSite whole = {0};
    g_array_append_val(sites, whole);
  }
  return sites;
}

/* Structural checks of a site: its state exists and holds its nodes. */
static gboolean site_in_graph(const WeirGraph *g, const WeirSite *site,
                              char **reason) {
  if (site->n_nodes > WEIR_SITE_MAX_NODES) {
    *reason = g_strdup_printf("a site has at most %d nodes (this one has %u)",
                              WEIR_SITE_MAX_NODES, site->n_nodes);
    return FALSE;
  }
  if (site->state == 0 && site->n_nodes == 0)
    return TRUE; /* the whole program */
  const WeirState *s = weir_graph_state(g, site->state);
  if (!s) {
    *reason = g_strdup_printf("state %u does not exist in program '%s'",
                              site->state, g->name);
    return FALSE;
  }
  for (guint k = 0; k < site->n_nodes; k++) {
    if (!weir_state_node(s, site->nodes[k])) {
      WeirState *other = NULL;
      if (weir_graph_node(g, site->nodes[k], &other))
        *reason = g_strdup_printf("node %u is in state %u '%s', not in state "
                                  "%u '%s'",
                                  site->nodes[k], other->id, other->label,
                                  s->id, s->label);
      else
        *reason = g_strdup_printf("node %u is not in state %u '%s'",
                                  site->nodes[k], s->id, s->label);
      return FALSE;
    }
    for (guint j = 0; j < k; j++)
      if (site->nodes[j] == site->nodes[k]) {
        *reason = g_strdup_printf("node %u appears twice in the site",
                                  site->nodes[k]);
        return FALSE;
      }
  }
  return TRUE;
}

static gboolean can_apply_parsed(const WeirTransformInfo *t, const WeirGraph *g,
                                 const WeirSite *site, const WeirParams *params,
                                 char **reason) {
  if (!site_in_graph(g, site, reason))
    return FALSE;
  if (t->pattern && !weir_pattern_check_site(g, t->pattern, site, reason))
    return FALSE;
  if (!t->can_apply)
    return TRUE;
  char *why = NULL;
  if (t->can_apply(g, site, params, &why))
    return TRUE;
  *reason = why ? why : g_strdup("not applicable (no reason given)");
  return FALSE;
}

gboolean weir_transform_can_apply(const WeirTransformInfo *t,
                                  const WeirGraph *g, const WeirSite *site,
                                  const WeirParams *params, char **reason) {
  g_return_val_if_fail(t != NULL && g != NULL && site != NULL, FALSE);
  char *why = NULL;
  g_autoptr(WeirParams) defaults = NULL;
  gboolean ok;
  if (params && params->t != t) {
    why = g_strdup_printf("the parameters were parsed for transformation "
                          "'%s', not '%s'",
                          params->t->name, t->name);
    ok = FALSE;
  } else {
    if (!params) {
      g_autoptr(GError) error = NULL;
      defaults = weir_params_parse(t, NULL, &error);
      if (!defaults) {
        if (reason)
          *reason = g_strdup(error->message);
        return FALSE;
      }
      params = defaults;
    }
    ok = can_apply_parsed(t, g, site, params, &why);
  }
  if (reason)
    *reason = why;
  else
    g_free(why);
  return ok;
}

char *weir_site_describe(const WeirGraph *g, const WeirSite *site) {
  g_return_val_if_fail(g != NULL && site != NULL, NULL);
  if (site->state == 0 && site->n_nodes == 0)
    return g_strdup("whole program");
  const WeirState *s = weir_graph_state(g, site->state);
  GString *out = g_string_new(NULL);
  g_string_append_printf(out, "state %u%s", site->state, s ? "" : " (missing)");
  guint n = MIN(site->n_nodes, WEIR_SITE_MAX_NODES);
  if (n == 0)
    return g_string_free(out, FALSE);
  g_string_append_printf(out, ": node%s ", n > 1 ? "s" : "");
  for (guint k = 0; k < n; k++)
    g_string_append_printf(out, "%s%u", k ? ", " : "", site->nodes[k]);
  g_string_append(out, " (");
  for (guint k = 0; k < n; k++) {
    const WeirNode *node = s ? weir_state_node(s, site->nodes[k]) : NULL;
    if (k)
      g_string_append(out, ", ");
    if (node)
      g_string_append_printf(out, "%s '%s'", weir_node_kind_name(node->kind),
                             node->label ? node->label : "");
    else
      g_string_append(out, "missing");
  }
  g_string_append_c(out, ')');
  return g_string_free(out, FALSE);
}

/* ---------------------------------------------------------------- apply */

static void quantity_clear(WeirQuantity *q) {
  g_clear_pointer(&q->expr, weir_expr_unref);
  q->known = FALSE;
  q->value = 0;
}

static void quantity_copy(WeirQuantity *dst, const WeirQuantity *src) {
  dst->expr = src->expr ? weir_expr_ref(src->expr) : NULL;
  dst->known = src->known;
  dst->value = src->value;
}

void weir_apply_report_clear(WeirApplyReport *r) {
  if (!r)
    return;
  quantity_clear(&r->bytes_before);
  quantity_clear(&r->bytes_after);
  quantity_clear(&r->flops_before);
  quantity_clear(&r->flops_after);
  r->seconds = 0;
}

/* Totals of g, or unknown quantities when the analysis fails. */
static void measure(const WeirGraph *g, GHashTable *bindings,
                    WeirQuantity *bytes, WeirQuantity *flops) {
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, bindings, NULL);
  memset(bytes, 0, sizeof *bytes);
  memset(flops, 0, sizeof *flops);
  if (!a)
    return;
  quantity_copy(bytes, &a->total_bytes);
  quantity_copy(flops, &a->total_flops);
}

/* The text restore() compares: the program's JSON with the data of
 * constants of more than 64 elements left out (weir_graph_structure_json).
 * Their bytes are shared, never copied, by weir_graph_copy, so the snapshot
 * holds the very same data; printing the weights of a real-size model (11
 * M numbers for ResNet-18) at every application would dominate the time of
 * a recipe. */
#define SNAPSHOT_LITERAL_MAX 64

/* Whether every application serializes the program first, so that a
 * restore can be checked byte for byte (WEIR_CHECK_RESTORE set and not
 * "0"; the test suite sets it).  Serializing costs as much as the rest of
 * an application on a real-size model (ResNet-50's -O2 pipeline spent a
 * third of its time there), and the restored program is the untouched
 * copy itself, so by default only the tests pay for the check. */
static gboolean check_restore(void) {
  static gsize once = 0;
  static gboolean on = FALSE;
  if (g_once_init_enter(&once)) {
    const char *v = g_getenv("WEIR_CHECK_RESTORE");
    on = v && *v && strcmp(v, "0") != 0;
    g_once_init_leave(&once, 1);
  }
  return on;
}

/* Puts the snapshot back into g and, when json is given, checks it is
 * byte-identical. */
static void restore(WeirGraph *g, WeirGraph *snapshot, const char *json) {
  WeirGraph tmp = *g;
  *g = *snapshot;
  *snapshot = tmp;
  weir_graph_free(snapshot);
  if (!json)
    return;
  g_autofree char *again = weir_graph_structure_json(g, SNAPSHOT_LITERAL_MAX);
  g_assert_cmpstr(again, ==, json);
}

gboolean weir_transform_apply_unchecked(WeirGraph *g,
                                        const WeirTransformInfo *t,
                                        const WeirSite *site,
                                        const WeirParams *params,
                                        GError **error) {
  g_return_val_if_fail(g != NULL && t != NULL && site != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  g_autoptr(WeirParams) defaults = NULL;
  if (!params) {
    defaults = weir_params_parse(t, NULL, error);
    if (!defaults)
      return FALSE;
    params = defaults;
  }
  g_autofree char *reason = NULL;
  if (!can_apply_parsed(t, g, site, params, &reason)) {
    g_autofree char *where = weir_site_describe(g, site);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s' cannot be applied at %s: %s", t->name,
                where, reason);
    return FALSE;
  }
  g_autoptr(GError) local = NULL;
  if (!t->apply(g, site, params, &local)) {
    g_autofree char *where = weir_site_describe(g, site);
    g_set_error(error, WEIR_ERROR, local ? local->code : WEIR_ERROR_INVALID,
                "transformation '%s' failed at %s: %s", t->name, where,
                local ? local->message : "apply failed without an error");
    return FALSE;
  }
  if (local)
    g_critical("transformation '%s' succeeded but set an error: %s", t->name,
               local->message);
  return TRUE;
}

gboolean weir_transform_apply(WeirGraph *g, const WeirTransformInfo *t,
                              const WeirSite *site, const WeirParams *params,
                              GHashTable *bindings, WeirApplyReport *report,
                              GError **error) {
  g_return_val_if_fail(g != NULL && t != NULL && site != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  if (report)
    memset(report, 0, sizeof *report);
  g_autofree char *where = weir_site_describe(g, site);

  g_autoptr(WeirParams) defaults = NULL;
  if (!params) {
    defaults = weir_params_parse(t, NULL, error);
    if (!defaults)
      return FALSE;
    params = defaults;
  } else if (params->t != t) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s': the parameters were parsed for "
                "transformation '%s'",
                t->name, params->t->name);
    return FALSE;
  }
  g_autofree char *reason = NULL;
  if (!can_apply_parsed(t, g, site, params, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "transformation '%s' cannot be applied at %s: %s", t->name,
                where, reason);
    return FALSE;
  }

  WeirQuantity bytes_before, flops_before;
  if (report)
    measure(g, bindings, &bytes_before, &flops_before);

  WeirGraph *snapshot = weir_graph_copy(g);
  g_autofree char *json =
      check_restore() ? weir_graph_structure_json(g, SNAPSHOT_LITERAL_MAX)
                      : NULL;
  gint64 t0 = g_get_monotonic_time();

  g_autoptr(GError) local = NULL;
  gboolean ok = t->apply(g, site, params, &local);
  if (ok && local) {
    g_critical("transformation '%s' succeeded but set an error: %s", t->name,
               local->message);
    g_clear_error(&local);
  }
  if (!ok) {
    restore(g, snapshot, json);
    g_set_error(error, WEIR_ERROR, local ? local->code : WEIR_ERROR_INVALID,
                "transformation '%s' failed at %s (the program is unchanged): "
                "%s",
                t->name, where,
                local ? local->message : "apply failed without an error");
    if (report) {
      quantity_clear(&bytes_before);
      quantity_clear(&flops_before);
    }
    return FALSE;
  }
  if (!weir_graph_validate(g, &local)) {
    /* Distinguish a broken transformation from a program that was invalid
     * before it ran. */
    g_autoptr(GError) before = NULL;
    gboolean was_valid = weir_graph_validate(snapshot, &before);
    restore(g, snapshot, json);
    if (was_valid)
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s' at %s produced an invalid program (the "
                  "program is unchanged): %s",
                  t->name, where, local->message);
    else
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transformation '%s' at %s: the program was invalid before "
                  "the transformation (it is unchanged): %s",
                  t->name, where, before->message);
    if (report) {
      quantity_clear(&bytes_before);
      quantity_clear(&flops_before);
    }
    return FALSE;
  }
  gint64 t1 = g_get_monotonic_time();
  weir_graph_free(snapshot);

  if (report) {
    report->bytes_before = bytes_before;
    report->flops_before = flops_before;
    measure(g, bindings, &report->bytes_after, &report->flops_after);
    report->seconds = (double)(t1 - t0) / 1e6;
  }
  return TRUE;
}

/* ---------------------------------------------------------------- tuning */

/* The plugin API's view of the tuning database (transformations reach
 * core/ only through this file). */
gboolean weir_plugin_tuned_choice(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, guint threads, char **impl,
                                  char **params, char **key, GError **error) {
  *impl = *params = *key = NULL;
  g_autoptr(WeirTuningRecord) r = NULL;
  if (!weir_tuning_lookup(g, s, n, threads, &r, error))
    return FALSE;
  if (r) {
    *impl = g_steal_pointer(&r->impl);
    *params = g_steal_pointer(&r->params);
    *key = g_steal_pointer(&r->key);
  }
  return TRUE;
}
