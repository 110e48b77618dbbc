/* session.c — optimization sessions: history with exact undo/redo.
 *
 * Conventions of this file:
 *  - s->steps holds every step (1..n at positions 0..n-1); s->cursor is
 *    the number of steps that made s->current.
 *  - A step's snapshot (step->program) is the JSON of the program after
 *    it; the original's is s->original_json.  Moving the cursor parses the
 *    target snapshot, so the result is byte-identical to what was recorded.
 *  - Applying works on a copy of the current program and only replaces it
 *    (and touches the history) after the framework reported success.
 *  - Notifications are sent last, once the session is consistent.
 */
#include <json-c/json.h>
#include <string.h>

#include "session-private.h"
#include "weir-json.h"
#include "weir-limits.h"
#include "weir-transform.h"
#include "weir-validate.h"

struct _WeirSession {
  WeirGraph *original;
  char *original_json;
  char *original_bookmark;
  WeirGraph *current; /* program after steps 1..cursor */
  char *source;
  GHashTable *bindings; /* name -> gint64* */
  GPtrArray *steps;     /* WeirStep* */
  guint cursor;
  const WeirSessionCallbacks *cb;
  gpointer cb_user;
};

/* ---------------------------------------------------------------- figures */

void weir_figure_clear(WeirFigure *f) {
  g_clear_pointer(&f->expr, g_free);
  f->known = FALSE;
  f->value = 0;
}

void weir_figure_set(WeirFigure *f, const WeirQuantity *q) {
  weir_figure_clear(f);
  f->expr = q->expr ? weir_expr_to_string(q->expr) : NULL;
  f->known = q->known;
  f->value = q->known ? q->value : 0;
}

static char *format_size(gint64 b) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (b < 1024 && b > -1024)
    return g_strdup_printf("%" G_GINT64_FORMAT " B", b);
  double v = (double)b / 1024.0;
  guint u = 0;
  while ((v >= 1024.0 || v <= -1024.0) && u + 1 < G_N_ELEMENTS(units)) {
    v /= 1024.0;
    u++;
  }
  return g_strdup_printf("%.1f %s", v, units[u]);
}

char *weir_figure_format(const WeirFigure *f, gboolean bytes) {
  if (f->known)
    return bytes ? format_size(f->value)
                 : g_strdup_printf("%" G_GINT64_FORMAT, f->value);
  if (f->expr)
    return bytes ? g_strdup_printf("%s B", f->expr) : g_strdup(f->expr);
  return g_strdup("?");
}

/* ------------------------------------------------------------------ steps */

WeirStep *weir_step_new(void) {
  WeirStep *step = g_new0(WeirStep, 1);
  step->labels = g_ptr_array_new_with_free_func(g_free);
  return step;
}

void weir_step_free(WeirStep *step) {
  if (!step)
    return;
  g_free(step->transform);
  g_ptr_array_unref(step->labels);
  g_free(step->site_text);
  g_free(step->params);
  g_free(step->params_json);
  weir_figure_clear(&step->bytes_before);
  weir_figure_clear(&step->bytes_after);
  weir_figure_clear(&step->flops_before);
  weir_figure_clear(&step->flops_after);
  g_free(step->bookmark);
  g_free(step->results);
  g_free(step->program);
  g_free(step);
}

/* -------------------------------------------------------------- utilities */

static int compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

GPtrArray *weir_bindings_sorted_names(GHashTable *bindings) {
  GPtrArray *names = g_ptr_array_new();
  if (bindings) {
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, bindings);
    while (g_hash_table_iter_next(&it, &key, NULL))
      g_ptr_array_add(names, key);
  }
  g_ptr_array_sort(names, compare_strings);
  return names;
}

static GHashTable *bindings_copy(GHashTable *bindings) {
  GHashTable *copy = weir_bindings_new();
  g_autoptr(GPtrArray) names = weir_bindings_sorted_names(bindings);
  for (guint i = 0; i < names->len; i++) {
    const char *name = g_ptr_array_index(names, i);
    const gint64 *v = g_hash_table_lookup(bindings, name);
    weir_bindings_set(copy, name, *v);
  }
  return copy;
}

guint weir_text_first_difference(const char *a, const char *b) {
  guint line = 1;
  for (; *a && *a == *b; a++, b++)
    if (*a == '\n')
      line++;
  return line;
}

char *weir_params_to_json(const WeirTransformInfo *t, const WeirParams *p) {
  json_object *o = json_object_new_object();
  for (guint i = 0; i < t->n_params; i++) {
    const WeirParamSpec *sp = &t->params[i];
    json_object *v = NULL;
    switch (sp->type) {
    case WEIR_PARAM_INT:
      v = json_object_new_int64(weir_params_get_int(p, sp->name));
      break;
    case WEIR_PARAM_FLOAT: {
      /* Text that reads back to the same double. */
      char buf[G_ASCII_DTOSTR_BUF_SIZE];
      double d = weir_params_get_float(p, sp->name);
      v = json_object_new_double_s(d, g_ascii_dtostr(buf, sizeof buf, d));
      break;
    }
    case WEIR_PARAM_BOOL:
      v = json_object_new_boolean(weir_params_get_bool(p, sp->name));
      break;
    case WEIR_PARAM_STRING:
    case WEIR_PARAM_CHOICE:
      v = json_object_new_string(weir_params_get_string(p, sp->name));
      break;
    case WEIR_PARAM_INTS: {
      const GArray *a = weir_params_get_ints(p, sp->name);
      GString *text = g_string_new(NULL);
      for (guint k = 0; a && k < a->len; k++)
        g_string_append_printf(text, "%s%" G_GINT64_FORMAT, k ? "," : "",
                               g_array_index(a, gint64, k));
      v = json_object_new_string(text->str);
      g_string_free(text, TRUE);
      break;
    }
    }
    json_object_object_add(o, sp->name, v);
  }
  char *out = g_strdup(json_object_to_json_string_ext(
      o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(o);
  return out;
}

char **weir_params_json_to_assignments(const char *json, const char *source,
                                       GError **error) {
  json_object *o = json_tokener_parse(json ? json : "{}");
  if (!o || !json_object_is_type(o, json_type_object)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: parameters are not a JSON object", source);
    json_object_put(o);
    return NULL;
  }
  GPtrArray *out = g_ptr_array_new();
  json_object_object_foreach(o, key, val) {
    /* Numbers and booleans as their JSON text (json-c keeps the source
     * text of parsed doubles), strings as they are. */
    const char *text = json_object_get_string(val);
    g_ptr_array_add(out, g_strdup_printf("%s=%s", key, text ? text : ""));
  }
  g_ptr_array_add(out, NULL);
  json_object_put(o);
  return (char **)g_ptr_array_free(out, FALSE);
}

/* ---------------------------------------------------------- notifications */

static void notify_steps(WeirSession *s, guint position, guint removed,
                         guint added) {
  if (s->cb && s->cb->steps_changed && (removed || added))
    s->cb->steps_changed(position, removed, added, s->cb_user);
}

static void notify_cursor(WeirSession *s) {
  if (s->cb && s->cb->cursor_changed)
    s->cb->cursor_changed(s->cursor, s->cb_user);
  if (s->cb && s->cb->changed)
    s->cb->changed(s->cb_user);
}

static void notify_step(WeirSession *s, guint index) {
  if (s->cb && s->cb->step_updated && index > 0)
    s->cb->step_updated(index, s->cb_user);
}

/* --------------------------------------------------------------- sessions */

WeirSession *weir_session_new_stored(WeirGraph *original, char *original_json,
                                     const char *source, GHashTable *bindings) {
  WeirSession *s = g_new0(WeirSession, 1);
  s->original = original;
  s->original_json = original_json;
  s->current = weir_graph_copy(original);
  s->source = g_strdup(source);
  s->bindings = bindings_copy(bindings);
  s->steps = g_ptr_array_new_with_free_func((GDestroyNotify)weir_step_free);
  return s;
}

WeirSession *weir_session_new(const WeirGraph *program, const char *source,
                              GHashTable *bindings, GError **error) {
  g_return_val_if_fail(program != NULL, NULL);
  g_autoptr(WeirGraph) copy = weir_graph_copy(program);
  if (!weir_graph_validate(copy, error) ||
      !weir_graph_check_sizes(copy, bindings, error))
    return NULL;
  char *json = weir_graph_to_json(copy);
  return weir_session_new_stored(g_steal_pointer(&copy), json, source,
                                 bindings);
}

void weir_session_free(WeirSession *s) {
  if (!s)
    return;
  weir_graph_free(s->original);
  g_free(s->original_json);
  g_free(s->original_bookmark);
  weir_graph_free(s->current);
  g_free(s->source);
  g_hash_table_unref(s->bindings);
  g_ptr_array_unref(s->steps);
  g_free(s);
}

void weir_session_set_callbacks(WeirSession *s,
                                const WeirSessionCallbacks *callbacks,
                                gpointer user) {
  s->cb = callbacks;
  s->cb_user = user;
}

const WeirGraph *weir_session_original(const WeirSession *s) {
  return s->original;
}

const char *weir_session_original_json(const WeirSession *s) {
  return s->original_json;
}

const WeirGraph *weir_session_current(const WeirSession *s) {
  return s->current;
}

const char *weir_session_current_json(const WeirSession *s) {
  if (s->cursor == 0)
    return s->original_json;
  const WeirStep *step = g_ptr_array_index(s->steps, s->cursor - 1);
  return step->program;
}

const char *weir_session_source(const WeirSession *s) {
  return s->source;
}

GHashTable *weir_session_bindings(const WeirSession *s) {
  return s->bindings;
}

guint weir_session_n_steps(const WeirSession *s) {
  return s->steps->len;
}

const WeirStep *weir_session_step(const WeirSession *s, guint index) {
  if (index < 1 || index > s->steps->len)
    return NULL;
  return g_ptr_array_index(s->steps, index - 1);
}

guint weir_session_cursor(const WeirSession *s) {
  return s->cursor;
}

gboolean weir_session_can_undo(const WeirSession *s) {
  return s->cursor > 0;
}

gboolean weir_session_can_redo(const WeirSession *s) {
  return s->cursor < s->steps->len;
}

void weir_session_push_step(WeirSession *s, WeirStep *step) {
  step->index = s->steps->len + 1;
  g_ptr_array_add(s->steps, step);
}

void weir_session_set_original_bookmark(WeirSession *s, const char *name) {
  g_free(s->original_bookmark);
  s->original_bookmark = g_strdup(name);
}

/* The snapshot of step k (0: the original). */
static const char *snapshot(const WeirSession *s, guint k) {
  if (k == 0)
    return s->original_json;
  const WeirStep *step = g_ptr_array_index(s->steps, k - 1);
  return step->program;
}

gboolean weir_session_restore_cursor(WeirSession *s, guint cursor,
                                     GError **error) {
  if (cursor > s->steps->len) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "step %u does not exist (the history has %u steps)", cursor,
                s->steps->len);
    return FALSE;
  }
  /* Step 0 is the original, loaded and validated already: a copy of it
   * is what parsing its JSON again would give, at a fraction of the cost
   * (opening a workspace whose cursor is 0, "goto 0", undo to the start). */
  WeirGraph *g = NULL;
  if (cursor == 0) {
    g = weir_graph_copy(s->original);
  } else {
    g_autofree char *where = g_strdup_printf("snapshot of step %u", cursor);
    g = weir_graph_from_json(snapshot(s, cursor), -1, where, error);
    if (!g)
      return FALSE;
  }
  weir_graph_free(s->current);
  s->current = g;
  s->cursor = cursor;
  return TRUE;
}

gboolean weir_session_goto(WeirSession *s, guint k, GError **error) {
  if (k == s->cursor && k <= s->steps->len)
    return TRUE;
  if (!weir_session_restore_cursor(s, k, error))
    return FALSE;
  notify_cursor(s);
  return TRUE;
}

gboolean weir_session_undo(WeirSession *s, GError **error) {
  if (s->cursor == 0) {
    g_set_error_literal(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                        "nothing to undo: the current program is the "
                        "original");
    return FALSE;
  }
  return weir_session_goto(s, s->cursor - 1, error);
}

gboolean weir_session_redo(WeirSession *s, GError **error) {
  if (s->cursor >= s->steps->len) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "nothing to redo: step %u is the last one", s->cursor);
    return FALSE;
  }
  return weir_session_goto(s, s->cursor + 1, error);
}

/* Labels of the site's nodes in g ("" for a node that does not exist). */
static void collect_labels(const WeirGraph *g, const WeirSite *site,
                           GPtrArray *labels) {
  const WeirState *st = weir_graph_state(g, site->state);
  for (guint i = 0; i < site->n_nodes && i < WEIR_SITE_MAX_NODES; i++) {
    const WeirNode *n = st ? weir_state_node(st, site->nodes[i]) : NULL;
    g_ptr_array_add(labels, g_strdup(n && n->label ? n->label : ""));
  }
}

const WeirStep *weir_session_apply(WeirSession *s, const char *name,
                                   const WeirSite *site,
                                   const char *const *params, GError **error) {
  g_return_val_if_fail(s != NULL && name != NULL && site != NULL, NULL);
  const WeirTransformInfo *t = weir_transform_lookup(name);
  if (!t) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "unknown transformation '%s'", name);
    return NULL;
  }
  if (site->n_nodes > WEIR_SITE_MAX_NODES) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: a site has at most %u nodes", name, WEIR_SITE_MAX_NODES);
    return NULL;
  }
  g_autoptr(WeirParams) p = weir_params_parse(t, params, error);
  if (!p)
    return NULL;

  g_autoptr(WeirStep) step = weir_step_new();
  step->transform = g_strdup(t->name);
  step->site = *site;
  collect_labels(s->current, site, step->labels);
  step->site_text = weir_site_describe(s->current, site);
  step->params = weir_params_to_string(p);
  step->params_json = weir_params_to_json(t, p);
  step->timestamp = g_get_real_time();

  g_autoptr(WeirGraph) work = weir_graph_copy(s->current);
  WeirApplyReport report = {0};
  if (!weir_transform_apply(work, t, site, p, s->bindings, &report, error)) {
    weir_apply_report_clear(&report);
    return NULL;
  }
  weir_figure_set(&step->bytes_before, &report.bytes_before);
  weir_figure_set(&step->bytes_after, &report.bytes_after);
  weir_figure_set(&step->flops_before, &report.flops_before);
  weir_figure_set(&step->flops_after, &report.flops_after);
  step->seconds = report.seconds;
  weir_apply_report_clear(&report);
  step->program = weir_graph_to_json(work);

  /* Drop the redo tail, then append. */
  guint position = s->cursor, removed = s->steps->len - s->cursor;
  if (removed)
    g_ptr_array_remove_range(s->steps, s->cursor, removed);
  weir_session_push_step(s, g_steal_pointer(&step));
  weir_graph_free(s->current);
  s->current = g_steal_pointer(&work);
  s->cursor = s->steps->len;

  notify_steps(s, position, removed, 1);
  notify_cursor(s);
  return g_ptr_array_index(s->steps, s->cursor - 1);
}

gboolean weir_session_replay(const WeirSession *s, GError **error) {
  g_autoptr(WeirGraph) g =
      weir_graph_from_json(s->original_json, -1, "original program", error);
  if (!g)
    return FALSE;
  for (guint i = 0; i < s->steps->len; i++) {
    const WeirStep *step = g_ptr_array_index(s->steps, i);
    g_autoptr(GError) local = NULL;
    const WeirTransformInfo *t = weir_transform_lookup(step->transform);
    g_auto(GStrv) assignments = NULL;
    g_autoptr(WeirParams) p = NULL;
    if (!t)
      g_set_error(&local, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "unknown transformation '%s'", step->transform);
    else if ((assignments = weir_params_json_to_assignments(
                  step->params_json, step->transform, &local)))
      p = weir_params_parse(t, (const char *const *)assignments, &local);
    if (!p || !weir_transform_apply(g, t, &step->site, p, s->bindings, NULL,
                                    &local)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "replay of step %u (%s at %s): %s", step->index,
                  step->transform, step->site_text, local->message);
      return FALSE;
    }
    g_autofree char *json = weir_graph_to_json(g);
    if (strcmp(json, step->program) != 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "replay of step %u (%s at %s) gives a different program "
                  "(first difference at line %u of its JSON)",
                  step->index, step->transform, step->site_text,
                  weir_text_first_difference(json, step->program));
      return FALSE;
    }
  }
  return TRUE;
}

/* -------------------------------------------------------------- bookmarks */

static gboolean valid_bookmark_name(const char *name, GError **error) {
  if (!name || !*name || !g_utf8_validate(name, -1, NULL)) {
    g_set_error_literal(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                        "a bookmark name must be non-empty UTF-8 text");
    return FALSE;
  }
  /* Names made of digits would read as step numbers ("goto 3"). */
  gboolean digits = TRUE;
  for (const char *c = name; *c; c++)
    digits = digits && g_ascii_isdigit(*c);
  if (digits) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "bookmark '%s': a name cannot be a number (it would read as "
                "a step)",
                name);
    return FALSE;
  }
  return TRUE;
}

gboolean weir_session_find_bookmark(const WeirSession *s, const char *name,
                                    guint *step) {
  if (g_strcmp0(s->original_bookmark, name) == 0 && name) {
    if (step)
      *step = 0;
    return TRUE;
  }
  for (guint i = 0; i < s->steps->len; i++) {
    const WeirStep *st = g_ptr_array_index(s->steps, i);
    if (g_strcmp0(st->bookmark, name) == 0 && name) {
      if (step)
        *step = st->index;
      return TRUE;
    }
  }
  return FALSE;
}

gboolean weir_session_remove_bookmark(WeirSession *s, const char *name) {
  guint k;
  if (!weir_session_find_bookmark(s, name, &k))
    return FALSE;
  if (k == 0) {
    g_clear_pointer(&s->original_bookmark, g_free);
  } else {
    WeirStep *st = g_ptr_array_index(s->steps, k - 1);
    g_clear_pointer(&st->bookmark, g_free);
    notify_step(s, k);
  }
  return TRUE;
}

gboolean weir_session_bookmark(WeirSession *s, guint step, const char *name,
                               GError **error) {
  if (!valid_bookmark_name(name, error))
    return FALSE;
  if (step > s->steps->len) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "bookmark '%s': step %u does not exist (the history has %u "
                "steps)",
                name, step, s->steps->len);
    return FALSE;
  }
  g_autofree char *copy = g_strdup(name); /* name may be a bookmark field */
  weir_session_remove_bookmark(s, copy);
  if (step == 0) {
    weir_session_set_original_bookmark(s, copy);
  } else {
    WeirStep *st = g_ptr_array_index(s->steps, step - 1);
    g_free(st->bookmark);
    st->bookmark = g_steal_pointer(&copy);
    notify_step(s, step);
  }
  return TRUE;
}

const char *weir_session_original_bookmark(const WeirSession *s) {
  return s->original_bookmark;
}

/* ---------------------------------------------------------------- results */

gboolean weir_session_set_results(WeirSession *s, guint step, const char *json,
                                  GError **error) {
  if (step < 1 || step > s->steps->len) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "results: step %u does not exist (the history has %u steps)",
                step, s->steps->len);
    return FALSE;
  }
  if (json) {
    json_tokener *tok = json_tokener_new();
    json_object *o = json_tokener_parse_ex(tok, json, (int)strlen(json));
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    gboolean ok = o && jerr == json_tokener_success;
    for (const char *c = json + json_tokener_get_parse_end(tok); ok && *c; c++)
      ok = g_ascii_isspace(*c);
    json_object_put(o);
    json_tokener_free(tok);
    if (!ok) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "results of step %u: not one JSON value (%s)", step,
                  jerr == json_tokener_success ? "text after the value"
                                               : json_tokener_error_desc(jerr));
      return FALSE;
    }
  }
  WeirStep *st = g_ptr_array_index(s->steps, step - 1);
  g_free(st->results);
  st->results = g_strdup(json);
  notify_step(s, step);
  return TRUE;
}

const char *weir_session_get_results(const WeirSession *s, guint step) {
  const WeirStep *st = weir_session_step(s, step);
  return st ? st->results : NULL;
}

gsize weir_session_history_bytes(const WeirSession *s) {
  gsize total = strlen(s->original_json) + sizeof *s;
  for (guint i = 0; i < s->steps->len; i++) {
    const WeirStep *st = g_ptr_array_index(s->steps, i);
    total += sizeof *st + strlen(st->program) + strlen(st->site_text) +
             strlen(st->params) + strlen(st->params_json) +
             (st->results ? strlen(st->results) : 0);
    for (guint k = 0; k < st->labels->len; k++)
      total += strlen(g_ptr_array_index(st->labels, k)) + 1;
  }
  return total;
}
