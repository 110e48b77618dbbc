/* recipe.c — recipes: parsing, printing, applying, exporting histories.
 *
 * The selector semantics are stated in weir-recipe.h and docs/recipes.md;
 * this file follows them literally.  Applying runs against a Target: either
 * a bare program (worked on as a copy, replaced at the end: all or
 * nothing) or a session (every application a history step).  A step is
 * rolled back as a whole when it fails, through a Mark taken before it.
 */
#include <json-c/json.h>
#include <string.h>

#include "session-private.h"
#include "weir-json.h"
#include "weir-recipe.h"
#include "weir-transform-private.h"
#include "weir-transform.h"
#include "weir-validate.h"

/* ---------------------------------------------------------------- records */

static WeirRecipeStep *recipe_step_new(void) {
  WeirRecipeStep *rs = g_new0(WeirRecipeStep, 1);
  rs->max_iterations = WEIR_RECIPE_MAX_ITERATIONS;
  return rs;
}

static void recipe_step_free(WeirRecipeStep *rs) {
  g_free(rs->path);
  g_free(rs->transform);
  g_free(rs->state_glob);
  g_free(rs->node_glob);
  if (rs->labels)
    g_ptr_array_unref(rs->labels);
  g_free(rs->op);
  if (rs->nodes)
    g_array_unref(rs->nodes);
  g_free(rs->site_text);
  g_strfreev(rs->params);
  g_free(rs->params_json);
  g_free(rs);
}

WeirRecipe *weir_recipe_new(const char *source) {
  WeirRecipe *r = g_new0(WeirRecipe, 1);
  r->source = g_strdup(source ? source : "<input>");
  r->steps = g_ptr_array_new_with_free_func((GDestroyNotify)recipe_step_free);
  return r;
}

void weir_recipe_free(WeirRecipe *r) {
  if (!r)
    return;
  g_free(r->source);
  g_ptr_array_unref(r->steps);
  g_free(r);
}

/* ---------------------------------------------------------------- parsing */

typedef struct {
  const char *source;
  GError **error;
} Parser;

static gboolean bad(Parser *P, const char *path, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static gboolean bad(Parser *P, const char *path, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(P->error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s: %s: %s", P->source,
              path, msg);
  return FALSE;
}

/* Every key of o is in allowed (NULL-terminated). */
static gboolean known_keys(Parser *P, const char *path, json_object *o,
                           const char *const *allowed) {
  json_object_object_foreach(o, key, val) {
    (void)val;
    if (!g_strv_contains(allowed, key)) {
      g_autofree char *list = g_strjoinv(", ", (char **)allowed);
      return bad(P, path, "unknown key '%s' (expected one of: %s)", key, list);
    }
  }
  return TRUE;
}

static const char *type_name(json_object *v) {
  return v ? json_type_to_name(json_object_get_type(v)) : "null";
}

static gboolean get_string(Parser *P, const char *path, json_object *v,
                           char **out) {
  if (!json_object_is_type(v, json_type_string))
    return bad(P, path, "expected a string, found %s", type_name(v));
  *out = g_strdup(json_object_get_string(v));
  return TRUE;
}

static gboolean get_true(Parser *P, const char *path, json_object *v) {
  if (!json_object_is_type(v, json_type_boolean) || !json_object_get_boolean(v))
    return bad(P, path, "expected true (leave the key out otherwise)");
  return TRUE;
}

static gboolean get_uint(Parser *P, const char *path, json_object *v,
                         gint64 min, guint *out) {
  gint64 x;
  if (!json_object_is_type(v, json_type_int) ||
      (x = json_object_get_int64(v)) < min || x > G_MAXUINT)
    return bad(P, path, "expected an integer >= %" G_GINT64_FORMAT, min);
  *out = (guint)x;
  return TRUE;
}

/* A parameter value as text: strings as they are, numbers and booleans as
 * their JSON text, lists of integers joined by commas. */
static char *param_text(Parser *P, const char *path, json_object *v) {
  switch (json_object_get_type(v)) {
  case json_type_string:
  case json_type_int:
  case json_type_double:
  case json_type_boolean:
    return g_strdup(json_object_get_string(v));
  case json_type_array: {
    GString *s = g_string_new(NULL);
    for (size_t i = 0; i < json_object_array_length(v); i++) {
      json_object *x = json_object_array_get_idx(v, i);
      if (!json_object_is_type(x, json_type_int)) {
        g_string_free(s, TRUE);
        bad(P, path, "a list value holds integers only");
        return NULL;
      }
      g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? "," : "",
                             json_object_get_int64(x));
    }
    return g_string_free(s, FALSE);
  }
  default:
    bad(P, path,
        "expected a string, number, boolean or list of integers, "
        "found %s",
        type_name(v));
    return NULL;
  }
}

static gboolean parse_site(Parser *P, const char *path, json_object *o,
                           WeirRecipeStep *rs) {
  static const char *const keys[] = {"state", "node",  "labels", "op", "nodes",
                                     "all",   "first", "index",  NULL};
  if (!json_object_is_type(o, json_type_object))
    return bad(P, path, "expected an object, found %s", type_name(o));
  if (!known_keys(P, path, o, keys))
    return FALSE;
  guint picks = 0;
  json_object_object_foreach(o, key, v) {
    g_autofree char *p = g_strdup_printf("%s.%s", path, key);
    if (strcmp(key, "state") == 0) {
      if (json_object_is_type(v, json_type_string)) {
        rs->state_glob = g_strdup(json_object_get_string(v));
      } else {
        gint64 id = json_object_is_type(v, json_type_int)
                        ? json_object_get_int64(v)
                        : 0;
        if (id < 1 || id > G_MAXUINT)
          return bad(P, p,
                     "expected a state id (integer >= 1) or a label "
                     "pattern (string)");
        rs->state_id = (guint)id;
      }
    } else if (strcmp(key, "node") == 0) {
      if (!get_string(P, p, v, &rs->node_glob))
        return FALSE;
    } else if (strcmp(key, "op") == 0) {
      if (!get_string(P, p, v, &rs->op))
        return FALSE;
    } else if (strcmp(key, "labels") == 0) {
      if (!json_object_is_type(v, json_type_array))
        return bad(P, p, "expected a list of labels, found %s", type_name(v));
      if (json_object_array_length(v) > WEIR_SITE_MAX_NODES)
        return bad(P, p, "a site has at most %d nodes", WEIR_SITE_MAX_NODES);
      rs->labels = g_ptr_array_new_with_free_func(g_free);
      for (size_t i = 0; i < json_object_array_length(v); i++) {
        g_autofree char *pi = g_strdup_printf("%s[%zu]", p, i);
        char *label;
        if (!get_string(P, pi, json_object_array_get_idx(v, i), &label))
          return FALSE;
        g_ptr_array_add(rs->labels, label);
      }
    } else if (strcmp(key, "nodes") == 0) {
      if (!json_object_is_type(v, json_type_array) ||
          json_object_array_length(v) == 0)
        return bad(P, p, "expected a non-empty list of node ids");
      if (json_object_array_length(v) > WEIR_SITE_MAX_NODES)
        return bad(P, p, "a site has at most %d nodes", WEIR_SITE_MAX_NODES);
      rs->nodes = g_array_new(FALSE, FALSE, sizeof(guint));
      for (size_t i = 0; i < json_object_array_length(v); i++) {
        g_autofree char *pi = g_strdup_printf("%s[%zu]", p, i);
        guint id;
        if (!get_uint(P, pi, json_object_array_get_idx(v, i), 1, &id))
          return FALSE;
        g_array_append_val(rs->nodes, id);
      }
    } else if (strcmp(key, "all") == 0) {
      if (!get_true(P, p, v))
        return FALSE;
      rs->pick = WEIR_RECIPE_PICK_ALL;
      picks++;
    } else if (strcmp(key, "first") == 0) {
      if (!get_true(P, p, v))
        return FALSE;
      rs->pick = WEIR_RECIPE_PICK_FIRST;
      picks++;
    } else if (strcmp(key, "index") == 0) {
      if (!get_uint(P, p, v, 0, &rs->index))
        return FALSE;
      rs->pick = WEIR_RECIPE_PICK_INDEX;
      picks++;
    }
  }
  if (picks > 1)
    return bad(P, path, "give at most one of \"all\", \"first\" and \"index\"");
  if (rs->nodes &&
      (rs->state_glob || rs->node_glob || rs->labels || rs->op || picks))
    return bad(P, path,
               "\"nodes\" names one exact site: it combines only "
               "with \"state\": ID");
  return TRUE;
}

static gboolean parse_params(Parser *P, const char *path, json_object *o,
                             WeirRecipeStep *rs) {
  if (!json_object_is_type(o, json_type_object))
    return bad(P, path, "expected an object, found %s", type_name(o));
  GPtrArray *list = g_ptr_array_new();
  json_object_object_foreach(o, key, v) {
    g_autofree char *p = g_strdup_printf("%s.%s", path, key);
    g_autofree char *text = param_text(P, p, v);
    if (!text) {
      g_ptr_array_add(list, NULL);
      g_strfreev((char **)g_ptr_array_free(list, FALSE));
      return FALSE;
    }
    g_ptr_array_add(list, g_strdup_printf("%s=%s", key, text));
  }
  g_ptr_array_add(list, NULL);
  g_strfreev(rs->params);
  rs->params = (char **)g_ptr_array_free(list, FALSE);
  g_free(rs->params_json);
  rs->params_json = g_strdup(json_object_to_json_string_ext(
      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  return TRUE;
}

static gboolean parse_step(Parser *P, const char *path, json_object *o,
                           WeirRecipeStep *rs) {
  static const char *const keys[] = {"transform",      "tier",    "site",
                                     "params",         "repeat",  "optional",
                                     "max_iterations", "comment", NULL};
  if (!json_object_is_type(o, json_type_object))
    return bad(P, path, "expected an object, found %s", type_name(o));
  if (!known_keys(P, path, o, keys))
    return FALSE;
  json_object *v;
  g_autofree char *p = NULL;
  gboolean has_tier = json_object_object_get_ex(o, "tier", &v);
  if (has_tier) {
    p = g_strdup_printf("%s.tier", path);
    if (!get_uint(P, p, v, 1, &rs->tier) || rs->tier > 4)
      return bad(P, p, "expected a tier: 1, 2, 3 or 4");
    if (json_object_object_get_ex(o, "transform", &v))
      return bad(P, path, "give \"transform\" or \"tier\", not both");
    rs->transform = g_strdup_printf("tier %u", rs->tier);
  } else {
    if (!json_object_object_get_ex(o, "transform", &v))
      return bad(P, path, "missing \"transform\" (or \"tier\")");
    p = g_strdup_printf("%s.transform", path);
    if (!get_string(P, p, v, &rs->transform))
      return FALSE;
  }
  if (json_object_object_get_ex(o, "site", &v)) {
    g_free(p);
    p = g_strdup_printf("%s.site", path);
    if (!parse_site(P, p, v, rs))
      return FALSE;
    rs->site_text = g_strdup(json_object_to_json_string_ext(
        v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  } else {
    rs->site_text = g_strdup("{}");
  }
  if (json_object_object_get_ex(o, "params", &v)) {
    g_free(p);
    p = g_strdup_printf("%s.params", path);
    if (!parse_params(P, p, v, rs))
      return FALSE;
    if (has_tier && rs->params[0])
      return bad(P, p,
                 "a \"tier\" step runs every transformation of the tier "
                 "with its defaults: name a transformation to set "
                 "parameters");
  }
  if (json_object_object_get_ex(o, "repeat", &v)) {
    g_free(p);
    p = g_strdup_printf("%s.repeat", path);
    if (!json_object_is_type(v, json_type_string) ||
        strcmp(json_object_get_string(v), "until-no-match") != 0)
      return bad(P, p, "expected \"until-no-match\"");
    rs->repeat = TRUE;
  }
  if (json_object_object_get_ex(o, "max_iterations", &v)) {
    g_free(p);
    p = g_strdup_printf("%s.max_iterations", path);
    if (!get_uint(P, p, v, 1, &rs->max_iterations))
      return FALSE;
  }
  if (json_object_object_get_ex(o, "optional", &v)) {
    g_free(p);
    p = g_strdup_printf("%s.optional", path);
    if (!json_object_is_type(v, json_type_boolean))
      return bad(P, p, "expected true or false, found %s", type_name(v));
    rs->optional = json_object_get_boolean(v);
  }
  if (json_object_object_get_ex(o, "comment", &v) &&
      !json_object_is_type(v, json_type_string)) {
    g_free(p);
    p = g_strdup_printf("%s.comment", path);
    return bad(P, p, "expected a string, found %s", type_name(v));
  }
  return TRUE;
}

/* Line (1-based) of byte offset off in text. */
static guint line_of(const char *text, gsize off) {
  guint line = 1;
  for (gsize i = 0; i < off && text[i]; i++)
    line += text[i] == '\n';
  return line;
}

static WeirRecipe *parse_root(Parser *P, json_object *root) {
  static const char *const keys[] = {"format", "version", "steps",
                                     "description", NULL};
  if (!json_object_is_type(root, json_type_object)) {
    bad(P, "top level", "expected an object, found %s", type_name(root));
    return NULL;
  }
  json_object *v;
  if (!json_object_object_get_ex(root, "format", &v) ||
      !json_object_is_type(v, json_type_string) ||
      strcmp(json_object_get_string(v), WEIR_RECIPE_FORMAT) != 0) {
    bad(P, "format", "expected \"%s\" (is this a recipe?)", WEIR_RECIPE_FORMAT);
    return NULL;
  }
  gint64 version;
  if (!json_object_object_get_ex(root, "version", &v) ||
      !json_object_is_type(v, json_type_int) ||
      (version = json_object_get_int64(v)) < 1) {
    bad(P, "version", "expected an integer >= 1");
    return NULL;
  }
  if (version > WEIR_RECIPE_VERSION) {
    g_set_error(P->error, WEIR_ERROR, WEIR_ERROR_VERSION,
                "%s was written for recipe format version %" G_GINT64_FORMAT
                "; this Weir reads up to %d",
                P->source, version, WEIR_RECIPE_VERSION);
    return NULL;
  }
  if (!known_keys(P, "top level", root, keys))
    return NULL;
  if (json_object_object_get_ex(root, "description", &v) &&
      !json_object_is_type(v, json_type_string)) {
    bad(P, "description", "expected a string, found %s", type_name(v));
    return NULL;
  }
  if (!json_object_object_get_ex(root, "steps", &v) ||
      !json_object_is_type(v, json_type_array)) {
    bad(P, "steps", "expected a list of steps");
    return NULL;
  }
  g_autoptr(WeirRecipe) r = weir_recipe_new(P->source);
  for (size_t i = 0; i < json_object_array_length(v); i++) {
    WeirRecipeStep *rs = recipe_step_new();
    g_ptr_array_add(r->steps, rs);
    rs->path = g_strdup_printf("steps[%zu]", i);
    if (!parse_step(P, rs->path, json_object_array_get_idx(v, i), rs))
      return NULL;
    if (!rs->params) {
      rs->params = g_new0(char *, 1);
      rs->params_json = g_strdup("{}");
    }
  }
  return g_steal_pointer(&r);
}

WeirRecipe *weir_recipe_parse(const char *text, gssize len, const char *source,
                              GError **error) {
  Parser P = {source ? source : "<input>", error};
  gsize n = len < 0 ? strlen(text) : (gsize)len;
  json_tokener *tok = json_tokener_new();
  json_object *root = json_tokener_parse_ex(tok, text, (int)n);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  gsize end = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  if (!root || jerr != json_tokener_success) {
    json_object_put(root);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: line %u: not valid JSON: %s", P.source, line_of(text, end),
                jerr == json_tokener_continue ? "unexpected end of text"
                                              : json_tokener_error_desc(jerr));
    return NULL;
  }
  for (gsize i = end; i < n; i++)
    if (!g_ascii_isspace(text[i])) {
      json_object_put(root);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "%s: line %u: text after the end of the recipe", P.source,
                  line_of(text, i));
      return NULL;
    }
  WeirRecipe *r = parse_root(&P, root);
  json_object_put(root);
  return r;
}

WeirRecipe *weir_recipe_load(const char *path, GError **error) {
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(path, &text, &len, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s", local->message);
    return NULL;
  }
  return weir_recipe_parse(text, (gssize)len, path, error);
}

/* --------------------------------------------------------------- building */

gboolean weir_recipe_add_step(WeirRecipe *r, const char *transform,
                              const char *const *params, GError **error) {
  g_autofree char *path = g_strdup_printf("steps[%u]", r->steps->len);
  const WeirTransformInfo *t = weir_transform_lookup(transform);
  if (!t) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %s.transform: unknown transformation '%s'", r->source,
                path, transform);
    return FALSE;
  }
  g_autoptr(GError) local = NULL;
  g_autoptr(WeirParams) p = weir_params_parse(t, params, &local);
  if (!p) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s: %s.params: %s",
                r->source, path, local->message);
    return FALSE;
  }
  g_autofree char *json = weir_params_to_json(t, p);
  g_auto(GStrv) assignments =
      weir_params_json_to_assignments(json, r->source, error);
  if (!assignments)
    return FALSE;
  WeirRecipeStep *rs = recipe_step_new();
  rs->path = g_steal_pointer(&path);
  rs->transform = g_strdup(t->name);
  rs->site_text = g_strdup("{}");
  rs->params = g_steal_pointer(&assignments);
  rs->params_json = g_steal_pointer(&json);
  g_ptr_array_add(r->steps, rs);
  return TRUE;
}

/* --------------------------------------------------------------- printing */

static json_object *site_to_json(const WeirRecipeStep *rs) {
  json_object *o = json_object_new_object();
  if (rs->state_id)
    json_object_object_add(o, "state", json_object_new_int64(rs->state_id));
  if (rs->state_glob)
    json_object_object_add(o, "state", json_object_new_string(rs->state_glob));
  if (rs->node_glob)
    json_object_object_add(o, "node", json_object_new_string(rs->node_glob));
  if (rs->labels) {
    json_object *a = json_object_new_array();
    for (guint i = 0; i < rs->labels->len; i++)
      json_object_array_add(
          a, json_object_new_string(g_ptr_array_index(rs->labels, i)));
    json_object_object_add(o, "labels", a);
  }
  if (rs->op)
    json_object_object_add(o, "op", json_object_new_string(rs->op));
  if (rs->nodes) {
    json_object *a = json_object_new_array();
    for (guint i = 0; i < rs->nodes->len; i++)
      json_object_array_add(
          a, json_object_new_int64(g_array_index(rs->nodes, guint, i)));
    json_object_object_add(o, "nodes", a);
  }
  if (rs->pick == WEIR_RECIPE_PICK_FIRST)
    json_object_object_add(o, "first", json_object_new_boolean(TRUE));
  else if (rs->pick == WEIR_RECIPE_PICK_INDEX)
    json_object_object_add(o, "index", json_object_new_int64(rs->index));
  return o;
}

char *weir_recipe_to_json(const WeirRecipe *r) {
  json_object *root = json_object_new_object();
  json_object_object_add(root, "format",
                         json_object_new_string(WEIR_RECIPE_FORMAT));
  json_object_object_add(root, "version",
                         json_object_new_int(WEIR_RECIPE_VERSION));
  json_object *steps = json_object_new_array();
  for (guint i = 0; i < r->steps->len; i++) {
    const WeirRecipeStep *rs = g_ptr_array_index(r->steps, i);
    json_object *o = json_object_new_object();
    if (rs->tier)
      json_object_object_add(o, "tier", json_object_new_int64(rs->tier));
    else
      json_object_object_add(o, "transform",
                             json_object_new_string(rs->transform));
    json_object_object_add(o, "site", site_to_json(rs));
    json_object *params = json_tokener_parse(rs->params_json);
    if (params && json_object_object_length(params) > 0)
      json_object_object_add(o, "params", params);
    else
      json_object_put(params);
    if (rs->repeat) {
      json_object_object_add(o, "repeat",
                             json_object_new_string("until-no-match"));
      if (rs->max_iterations != WEIR_RECIPE_MAX_ITERATIONS)
        json_object_object_add(o, "max_iterations",
                               json_object_new_int64(rs->max_iterations));
    }
    if (rs->optional)
      json_object_object_add(o, "optional", json_object_new_boolean(TRUE));
    json_object_array_add(steps, o);
  }
  json_object_object_add(root, "steps", steps);
  char *out = g_strdup_printf(
      "%s\n", json_object_to_json_string_ext(
                  root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                            JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
  return out;
}

gboolean weir_recipe_save(const WeirRecipe *r, const char *path,
                          GError **error) {
  g_autofree char *text = weir_recipe_to_json(r);
  g_autoptr(GError) local = NULL;
  if (!g_file_set_contents(path, text, -1, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s", local->message);
    return FALSE;
  }
  return TRUE;
}

/* ---------------------------------------------------------------- reports */

static WeirRecipeStepReport *step_report_new(guint step,
                                             const WeirRecipeStep *rs) {
  WeirRecipeStepReport *sr = g_new0(WeirRecipeStepReport, 1);
  sr->step = step;
  sr->transform = g_strdup(rs->transform);
  sr->selector = g_strdup(rs->site_text);
  sr->optional = rs->optional;
  sr->applied = g_ptr_array_new_with_free_func(g_free);
  sr->skipped = g_ptr_array_new_with_free_func(g_free);
  return sr;
}

static void step_report_free(WeirRecipeStepReport *sr) {
  g_free(sr->transform);
  g_free(sr->selector);
  g_ptr_array_unref(sr->applied);
  g_ptr_array_unref(sr->skipped);
  weir_figure_clear(&sr->bytes_before);
  weir_figure_clear(&sr->bytes_after);
  weir_figure_clear(&sr->flops_before);
  weir_figure_clear(&sr->flops_after);
  g_free(sr->error);
  g_free(sr);
}

/* Forgets what a step's run recorded (before the step runs again). */
static void step_report_reset(WeirRecipeStepReport *sr) {
  sr->iterations = 0;
  sr->matched = 0;
  g_ptr_array_set_size(sr->applied, 0);
  g_ptr_array_set_size(sr->skipped, 0);
}

WeirRecipeReport *weir_recipe_report_new(void) {
  WeirRecipeReport *r = g_new0(WeirRecipeReport, 1);
  r->steps = g_ptr_array_new_with_free_func((GDestroyNotify)step_report_free);
  return r;
}

void weir_recipe_report_free(WeirRecipeReport *r) {
  if (!r)
    return;
  g_ptr_array_unref(r->steps);
  weir_figure_clear(&r->bytes_before);
  weir_figure_clear(&r->bytes_after);
  weir_figure_clear(&r->flops_before);
  weir_figure_clear(&r->flops_after);
  g_free(r);
}

/* "1.1 MiB -> 800.0 KiB (-27.3%)" */
static char *format_change(const WeirFigure *a, const WeirFigure *b,
                           gboolean bytes) {
  g_autofree char *x = weir_figure_format(a, bytes);
  g_autofree char *y = weir_figure_format(b, bytes);
  if (a->known && b->known && a->value != 0)
    return g_strdup_printf("%s -> %s (%+.1f%%)", x, y,
                           100.0 * (double)(b->value - a->value) /
                               (double)a->value);
  return g_strdup_printf("%s -> %s", x, y);
}

char *weir_recipe_report_to_text(const WeirRecipeReport *r) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < r->steps->len; i++) {
    const WeirRecipeStepReport *sr = g_ptr_array_index(r->steps, i);
    g_autofree char *bytes =
        format_change(&sr->bytes_before, &sr->bytes_after, TRUE);
    g_autofree char *flops =
        format_change(&sr->flops_before, &sr->flops_after, FALSE);
    g_string_append_printf(s,
                           "step %u  %s  site %s\n  %s: %u matched, %u applied",
                           sr->step, sr->transform, sr->selector,
                           sr->ok         ? "ok"
                           : sr->optional ? "skipped (optional step failed)"
                                          : "FAILED",
                           sr->matched, sr->applied->len);
    if (sr->iterations > 1)
      g_string_append_printf(s, " in %u iterations", sr->iterations);
    g_string_append_printf(s, ", %.3f s, %s\n", sr->seconds,
                           sr->validated ? "validated" : "NOT validated");
    g_string_append_printf(s, "  logical volume %s\n  FLOPs          %s\n",
                           bytes, flops);
    for (guint k = 0; k < sr->applied->len; k++)
      g_string_append_printf(s, "    applied at %s\n",
                             (char *)g_ptr_array_index(sr->applied, k));
    for (guint k = 0; k < sr->skipped->len; k++)
      g_string_append_printf(s, "    skipped %s\n",
                             (char *)g_ptr_array_index(sr->skipped, k));
    if (sr->error)
      g_string_append_printf(s, "  error: %s\n", sr->error);
  }
  g_autofree char *bytes =
      format_change(&r->bytes_before, &r->bytes_after, TRUE);
  g_autofree char *flops =
      format_change(&r->flops_before, &r->flops_after, FALSE);
  g_string_append_printf(s,
                         "total: %s\n  logical volume %s\n  FLOPs          "
                         "%s\n",
                         r->ok ? "ok" : "FAILED", bytes, flops);
  return g_string_free(s, FALSE);
}

/* ---------------------------------------------------------------- targets */

/* What a recipe is applied to. */
typedef struct {
  WeirSession *session; /* or NULL: a bare program */
  WeirGraph *graph;     /* the working copy when session == NULL */
  GHashTable *bindings;
  gboolean unchecked; /* graph only: applications without their own
                         snapshot and validation (run_recipe validates
                         the step) */
} Target;

static const WeirGraph *target_current(const Target *tg) {
  return tg->session ? weir_session_current(tg->session) : tg->graph;
}

static gboolean target_apply(Target *tg, const WeirTransformInfo *t,
                             const WeirRecipeStep *rs, const WeirParams *p,
                             const WeirSite *site, GError **error) {
  if (tg->session)
    return weir_session_apply(tg->session, t->name, site,
                              (const char *const *)rs->params, error) != NULL;
  if (tg->unchecked)
    return weir_transform_apply_unchecked(tg->graph, t, site, p, error);
  return weir_transform_apply(tg->graph, t, site, p, tg->bindings, NULL, error);
}

/* A point to roll back to. */
typedef struct {
  guint cursor;
  WeirGraph *copy;
} Mark;

static Mark target_mark(const Target *tg) {
  Mark m = {0};
  if (tg->session)
    m.cursor = weir_session_cursor(tg->session);
  else
    m.copy = weir_graph_copy(tg->graph);
  return m;
}

static void target_rollback(Target *tg, Mark *m) {
  if (tg->session) {
    g_autoptr(GError) ignored = NULL;
    weir_session_goto(tg->session, m->cursor, &ignored);
  } else {
    WeirGraph tmp = *tg->graph;
    *tg->graph = *m->copy;
    *m->copy = tmp;
  }
}

static void mark_clear(Mark *m) {
  g_clear_pointer(&m->copy, weir_graph_free);
}

static void figures_of(const WeirGraph *g, GHashTable *bindings,
                       WeirFigure *bytes, WeirFigure *flops) {
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, bindings, NULL);
  weir_figure_clear(bytes);
  weir_figure_clear(flops);
  if (a) {
    weir_figure_set(bytes, &a->total_bytes);
    weir_figure_set(flops, &a->total_flops);
  }
}

/* --------------------------------------------------------------- matching */

typedef struct {
  GPatternSpec *state; /* or NULL */
  GPatternSpec *node;  /* or NULL */
} Globs;

static void globs_clear(Globs *gl) {
  g_clear_pointer(&gl->state, g_pattern_spec_free);
  g_clear_pointer(&gl->node, g_pattern_spec_free);
}

static gboolean site_matches(const WeirGraph *g, const WeirRecipeStep *rs,
                             const Globs *gl, const WeirSite *site) {
  const WeirState *st = weir_graph_state(g, site->state);
  if (rs->state_id && site->state != rs->state_id)
    return FALSE;
  if (gl->state && (!st || !g_pattern_spec_match_string(gl->state, st->label)))
    return FALSE;
  if (gl->node) {
    const WeirNode *n =
        st && site->n_nodes > 0 ? weir_state_node(st, site->nodes[0]) : NULL;
    if (!n || !g_pattern_spec_match_string(gl->node, n->label))
      return FALSE;
  }
  if (rs->labels) {
    if (site->n_nodes != rs->labels->len)
      return FALSE;
    for (guint i = 0; i < site->n_nodes; i++) {
      const WeirNode *n = st ? weir_state_node(st, site->nodes[i]) : NULL;
      if (!n || g_strcmp0(n->label, g_ptr_array_index(rs->labels, i)) != 0)
        return FALSE;
    }
  }
  if (rs->op) {
    gboolean found = FALSE;
    for (guint i = 0; i < site->n_nodes && !found; i++) {
      const WeirNode *n = st ? weir_state_node(st, site->nodes[i]) : NULL;
      found =
          n && n->kind == WEIR_NODE_LIBRARY && g_strcmp0(n->op, rs->op) == 0;
    }
    if (!found)
      return FALSE;
  }
  return TRUE;
}

/* The candidates of a step in g (GArray of WeirSite). */
static GArray *candidates(const WeirTransformInfo *t, const WeirGraph *g,
                          const WeirRecipeStep *rs, const Globs *gl) {
  GArray *out = g_array_new(FALSE, TRUE, sizeof(WeirSite));
  if (rs->nodes) {
    WeirState *st = NULL;
    guint first = g_array_index(rs->nodes, guint, 0);
    if (rs->state_id)
      st = weir_graph_state(g, rs->state_id);
    else
      weir_graph_node(g, first, &st);
    if (st && weir_state_node(st, first)) {
      WeirSite site = {.state = st->id, .n_nodes = rs->nodes->len};
      for (guint i = 0; i < rs->nodes->len; i++)
        site.nodes[i] = g_array_index(rs->nodes, guint, i);
      g_array_append_val(out, site);
    }
    return out;
  }
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  for (guint i = 0; i < sites->len; i++) {
    const WeirSite *site = &g_array_index(sites, WeirSite, i);
    if (site_matches(g, rs, gl, site))
      g_array_append_val(out, *site);
  }
  return out;
}

static gboolean same_site(const WeirSite *a, const WeirSite *b) {
  if (a->state != b->state || a->n_nodes != b->n_nodes)
    return FALSE;
  for (guint i = 0; i < a->n_nodes; i++)
    if (a->nodes[i] != b->nodes[i])
      return FALSE;
  return TRUE;
}

/* Adds "site: reason" to the skipped list, once. */
static void note_skipped(WeirRecipeStepReport *sr, const char *where,
                         const char *reason) {
  g_autofree char *text = g_strdup_printf("%s: %s", where, reason);
  for (guint i = 0; i < sr->skipped->len; i++)
    if (strcmp(g_ptr_array_index(sr->skipped, i), text) == 0)
      return;
  g_ptr_array_add(sr->skipped, g_steal_pointer(&text));
}

/* Applies at one site after checking it; *applied tells whether it did.
 * FALSE on an application error.  must: an illegal site is an error. */
static gboolean try_site(Target *tg, const WeirTransformInfo *t,
                         const WeirRecipeStep *rs, const WeirParams *p,
                         const WeirSite *site, gboolean must,
                         WeirRecipeStepReport *sr, gboolean *applied,
                         GError **error) {
  *applied = FALSE;
  g_autofree char *reason = NULL;
  g_autofree char *where = weir_site_describe(target_current(tg), site);
  if (!weir_transform_can_apply(t, target_current(tg), site, p, &reason)) {
    if (must) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "cannot be applied at %s: %s", where, reason);
      return FALSE;
    }
    note_skipped(sr, where, reason);
    return TRUE;
  }
  if (!target_apply(tg, t, rs, p, site, error))
    return FALSE;
  g_ptr_array_add(sr->applied, g_steal_pointer(&where));
  *applied = TRUE;
  return TRUE;
}

/* One enumeration and its pick.  *count receives the applications. */
static gboolean run_iteration(Target *tg, const WeirTransformInfo *t,
                              const WeirRecipeStep *rs, const WeirParams *p,
                              const Globs *gl, WeirRecipeStepReport *sr,
                              guint *count, GError **error) {
  g_autoptr(GArray) cands = candidates(t, target_current(tg), rs, gl);
  sr->matched += cands->len;
  *count = 0;
  if (cands->len == 0)
    return TRUE;
  gboolean applied;
  switch (rs->nodes ? WEIR_RECIPE_PICK_INDEX : rs->pick) {
  case WEIR_RECIPE_PICK_INDEX: {
    guint k = rs->nodes ? 0 : rs->index;
    if (k >= cands->len) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "index %u is out of range: the selector matched %u site%s", k,
                  cands->len, cands->len == 1 ? "" : "s");
      return FALSE;
    }
    if (!try_site(tg, t, rs, p, &g_array_index(cands, WeirSite, k), TRUE, sr,
                  &applied, error))
      return FALSE;
    *count = 1;
    return TRUE;
  }
  case WEIR_RECIPE_PICK_FIRST:
    for (guint i = 0; i < cands->len; i++) {
      if (!try_site(tg, t, rs, p, &g_array_index(cands, WeirSite, i), FALSE, sr,
                    &applied, error))
        return FALSE;
      if (applied) {
        *count = 1;
        return TRUE;
      }
    }
    return TRUE;
  case WEIR_RECIPE_PICK_ALL:
    for (guint i = 0; i < cands->len; i++) {
      if (!try_site(tg, t, rs, p, &g_array_index(cands, WeirSite, i), FALSE, sr,
                    &applied, error))
        return FALSE;
      *count += applied;
    }
    return TRUE;
  }
  return TRUE;
}

/* Runs one recipe step (without rollback). */
/* The transformations a step runs, with their parameters: the named one,
 * or every transformation of the step's tier (those needing a parameter
 * the step does not give are left out, noted in the report). */
static gboolean step_transforms(const WeirRecipeStep *rs,
                                WeirRecipeStepReport *sr, GPtrArray *infos,
                                GPtrArray *params, GError **error) {
  if (!rs->tier) {
    const WeirTransformInfo *t = weir_transform_lookup(rs->transform);
    if (!t) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "unknown transformation '%s'", rs->transform);
      return FALSE;
    }
    WeirParams *p =
        weir_params_parse(t, (const char *const *)rs->params, error);
    if (!p)
      return FALSE;
    g_ptr_array_add(infos, (gpointer)t);
    g_ptr_array_add(params, p);
    return TRUE;
  }
  g_autoptr(GPtrArray) all = weir_transforms_list();
  for (guint i = 0; i < all->len; i++) {
    const WeirTransformInfo *t = g_ptr_array_index(all, i);
    if (t->tier != rs->tier)
      continue;
    g_autoptr(GError) local = NULL;
    WeirParams *p = weir_params_parse(t, NULL, &local);
    if (!p) {
      note_skipped(sr, t->name, local->message);
      continue;
    }
    g_ptr_array_add(infos, (gpointer)t);
    g_ptr_array_add(params, p);
  }
  return TRUE;
}

/* Runs one recipe step (without rollback). */
static gboolean run_step(Target *tg, const WeirRecipeStep *rs,
                         WeirRecipeStepReport *sr, GError **error) {
  g_autoptr(GPtrArray) infos = g_ptr_array_new();
  g_autoptr(GPtrArray) params =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_params_free);
  if (!step_transforms(rs, sr, infos, params, error))
    return FALSE;
  Globs gl = {
      .state = rs->state_glob ? g_pattern_spec_new(rs->state_glob) : NULL,
      .node = rs->node_glob ? g_pattern_spec_new(rs->node_glob) : NULL,
  };
  guint total = 0, first_matched = 0;
  gboolean ok = TRUE;
  for (guint it = 0;; it++) {
    if (rs->repeat && it == rs->max_iterations) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "no fixpoint after %u iterations: sites still apply "
                  "(raise max_iterations or fix the selector)",
                  rs->max_iterations);
      ok = FALSE;
      break;
    }
    /* One iteration: every transformation of the step in turn. */
    guint count = 0;
    sr->iterations++;
    for (guint k = 0; k < infos->len && ok; k++) {
      guint c = 0;
      ok = run_iteration(tg, g_ptr_array_index(infos, k), rs,
                         g_ptr_array_index(params, k), &gl, sr, &c, error);
      count += c;
    }
    if (!ok)
      break;
    if (it == 0)
      first_matched = sr->matched;
    total += count;
    if (!rs->repeat || count == 0)
      break;
  }
  globs_clear(&gl);
  if (!ok)
    return FALSE;
  if (total == 0) {
    if (first_matched == 0) {
      g_set_error_literal(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                          "matched nothing");
    } else {
      GString *why = g_string_new(NULL);
      for (guint i = 0; i < sr->skipped->len; i++)
        g_string_append_printf(why, "%s%s", i ? "; " : "",
                               (char *)g_ptr_array_index(sr->skipped, i));
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%u site%s matched, none can be applied: %s", first_matched,
                  first_matched == 1 ? "" : "s", why->str);
      g_string_free(why, TRUE);
    }
    return FALSE;
  }
  return TRUE;
}

static gboolean run_recipe(Target *tg, const WeirRecipe *recipe,
                           WeirRecipeReport *report, GError **error) {
  g_autoptr(WeirRecipeReport) own = NULL;
  if (!report)
    report = own = weir_recipe_report_new();
  figures_of(target_current(tg), tg->bindings, &report->bytes_before,
             &report->flops_before);
  report->ok = TRUE;
  for (guint i = 0; i < recipe->steps->len; i++) {
    const WeirRecipeStep *rs = g_ptr_array_index(recipe->steps, i);
    WeirRecipeStepReport *sr = step_report_new(i + 1, rs);
    g_ptr_array_add(report->steps, sr);
    figures_of(target_current(tg), tg->bindings, &sr->bytes_before,
               &sr->flops_before);
    gint64 t0 = g_get_monotonic_time();
    Mark mark = target_mark(tg);
    g_autoptr(GError) local = NULL;
    /* On a bare program the step's applications run unchecked and the
     * result is validated once (validating after each of the hundreds of
     * applications of a real-size model's pipeline was half its time).
     * Should the step fail after applying something, or leave an invalid
     * program, it runs again from the mark with every application checked,
     * which names the application that failed or broke the program. */
    tg->unchecked = tg->session == NULL;
    sr->ok = run_step(tg, rs, sr, &local);
    gboolean valid = FALSE;
    if (tg->unchecked && (sr->ok || sr->applied->len > 0)) {
      g_autoptr(WeirGraph) check = weir_graph_copy(target_current(tg));
      valid = sr->ok && weir_graph_validate(check, NULL);
      if (!valid) {
        target_rollback(tg, &mark);
        mark_clear(&mark);
        mark = target_mark(tg);
        step_report_reset(sr);
        g_clear_error(&local);
        tg->unchecked = FALSE;
        sr->ok = run_step(tg, rs, sr, &local);
      }
    }
    tg->unchecked = FALSE;
    if (!sr->ok) {
      target_rollback(tg, &mark);
      sr->error = g_strdup(local->message);
    }
    mark_clear(&mark);
    sr->seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
    figures_of(target_current(tg), tg->bindings, &sr->bytes_after,
               &sr->flops_after);
    if (valid && sr->ok) {
      sr->validated = TRUE;
    } else {
      g_autoptr(WeirGraph) check = weir_graph_copy(target_current(tg));
      sr->validated = weir_graph_validate(check, NULL);
    }
    if (!sr->ok && !rs->optional) {
      report->ok = FALSE;
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: %s (%s, site %s): %s", recipe->source, rs->path,
                  rs->transform, rs->site_text, local->message);
      break;
    }
  }
  figures_of(target_current(tg), tg->bindings, &report->bytes_after,
             &report->flops_after);
  return report->ok;
}

gboolean weir_recipe_apply(WeirGraph *program, const WeirRecipe *recipe,
                           GHashTable *bindings, WeirRecipeReport *report,
                           GError **error) {
  g_return_val_if_fail(program != NULL && recipe != NULL, FALSE);
  g_autoptr(WeirGraph) work = weir_graph_copy(program);
  Target tg = {.graph = work, .bindings = bindings};
  if (!run_recipe(&tg, recipe, report, error))
    return FALSE;
  WeirGraph tmp = *program;
  *program = *work;
  *work = tmp;
  return TRUE;
}

gboolean weir_recipe_apply_session(WeirSession *session,
                                   const WeirRecipe *recipe,
                                   WeirRecipeReport *report, GError **error) {
  g_return_val_if_fail(session != NULL && recipe != NULL, FALSE);
  Target tg = {.session = session, .bindings = weir_session_bindings(session)};
  return run_recipe(&tg, recipe, report, error);
}

/* -------------------------------------------------------------- exporting */

WeirRecipe *weir_session_export_recipe(const WeirSession *session,
                                       GError **error) {
  const char *source = weir_session_source(session);
  g_autoptr(WeirRecipe) r = weir_recipe_new(source ? source : "<session>");
  for (guint k = 1; k <= weir_session_cursor(session); k++) {
    const WeirStep *step = weir_session_step(session, k);
    const char *before_json = k == 1
                                  ? weir_session_original_json(session)
                                  : weir_session_step(session, k - 1)->program;
    const WeirTransformInfo *t = weir_transform_lookup(step->transform);
    if (!t) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "step %u: unknown transformation '%s'", k, step->transform);
      return NULL;
    }
    g_autofree char *where = g_strdup_printf("snapshot of step %u", k - 1);
    g_autoptr(WeirGraph) before =
        weir_graph_from_json(before_json, -1, where, error);
    if (!before)
      return NULL;

    WeirRecipeStep *rs = recipe_step_new();
    g_ptr_array_add(r->steps, rs);
    rs->path = g_strdup_printf("steps[%u]", k - 1);
    rs->transform = g_strdup(step->transform);
    rs->labels = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < step->labels->len; i++)
      g_ptr_array_add(rs->labels, g_strdup(g_ptr_array_index(step->labels, i)));
    Globs none = {0};
    g_autoptr(GArray) cands = candidates(t, before, rs, &none);
    guint found = G_MAXUINT;
    for (guint i = 0; i < cands->len && found == G_MAXUINT; i++)
      if (same_site(&g_array_index(cands, WeirSite, i), &step->site))
        found = i;
    if (found == G_MAXUINT) {
      /* Not among the candidates: name the exact site. */
      g_clear_pointer(&rs->labels, g_ptr_array_unref);
      if (step->site.n_nodes == 0) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "step %u (%s at %s): the site is not among the "
                    "transformation's sites and has no nodes to name",
                    k, step->transform, step->site_text);
        return NULL;
      }
      rs->state_id = step->site.state;
      rs->nodes = g_array_new(FALSE, FALSE, sizeof(guint));
      g_array_append_vals(rs->nodes, step->site.nodes, step->site.n_nodes);
    } else if (cands->len > 1) {
      rs->pick = WEIR_RECIPE_PICK_INDEX;
      rs->index = found;
    }
    g_auto(GStrv) assignments = weir_params_json_to_assignments(
        step->params_json, step->transform, error);
    if (!assignments)
      return NULL;
    rs->params = g_steal_pointer(&assignments);
    rs->params_json = g_strdup(step->params_json);
    json_object *site = site_to_json(rs);
    rs->site_text = g_strdup(json_object_to_json_string_ext(
        site, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(site);
  }
  return g_steal_pointer(&r);
}
