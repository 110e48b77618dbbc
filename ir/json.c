/* json.c — programs as JSON text (format "weir-ir", docs/ir-format.md).
 *
 * The file has three parts.
 *
 * 1. Writing.  graph_json() builds a json-c tree with the keys in the order
 *    of the tables of docs/ir-format.md, leaving out every optional key that
 *    holds its default.  emit() prints the tree with two-space indentation,
 *    "key": value pairs and [] / {} for empty containers; scalars are
 *    printed by json-c, and a double is given the shortest decimal text that
 *    reads back as the same value.  The same graph always gives the same
 *    bytes.
 *
 * 2. Reading.  parse_text() runs json_tokener over the text and turns a
 *    syntax error into a line and column.  load_program() then walks the
 *    tree with a Loader that tracks the JSON path ("states[0].nodes[3]") and
 *    the innermost element read so far ("node 7"), so every message has the
 *    form "SOURCE: PATH (ELEMENT): problem".  Every key is checked (unknown
 *    keys are errors), every value's type, every name (kind, dtype,
 *    schedule, wcr) and reference (nodes of a memlet, entry of a map exit,
 *    states of a transition, start state).  The graph is rebuilt through
 *    the builder of graph.c, and each element is given its saved id right
 *    after the builder call.  Ids must be ascending within each array (files
 *    that are not are rejected, not sorted), so the arrays of the graph stay
 *    sorted by id.
 *
 * 3. The public entry points: to_json / from_json (which runs the validator
 *    after the structural load) and the file helpers save / load.
 *
 * Error codes: WEIR_ERROR_PARSE for text that does not fit the format (JSON
 * syntax, unknown or missing keys, wrong types, unknown names, expressions,
 * subsets and code that do not parse); WEIR_ERROR_INVALID for well-formed
 * but inconsistent input (duplicate or descending ids, dangling references,
 * constant data of the wrong size) and for the validator's problems;
 * WEIR_ERROR_VERSION for a newer format version; WEIR_ERROR_IO for files.
 */
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "weir-json.h"
#include "weir-validate.h"

/* Deepest JSON nesting accepted (json-c's default, 32, allows only about
 * five levels of nested programs). */
#define JSON_MAX_DEPTH 256

/* ================================================================ writing */

static json_object *json_str(const char *s) {
  return json_object_new_string(s ? s : "");
}

static json_object *json_expr(const WeirExpr *e) {
  g_autofree char *text = weir_expr_to_string(e);
  return json_object_new_string(text);
}

static json_object *json_strings(GPtrArray *a) {
  json_object *arr = json_object_new_array();
  for (guint i = 0; a && i < a->len; i++)
    json_object_array_add(arr, json_str(g_ptr_array_index(a, i)));
  return arr;
}

static json_object *json_exprs(GPtrArray *a) {
  json_object *arr = json_object_new_array();
  for (guint i = 0; i < a->len; i++)
    json_object_array_add(arr, json_expr(g_ptr_array_index(a, i)));
  return arr;
}

/* A double with the shortest text that reads back exactly.  The text always
 * contains '.' or an exponent so that it reads back as a double, not an
 * integer; json-c reads NaN and Infinity back as well. */
static json_object *json_double(double d) {
  if (isnan(d))
    return json_object_new_double_s(d, "NaN");
  if (isinf(d))
    return json_object_new_double_s(d, d > 0 ? "Infinity" : "-Infinity");
  char buf[G_ASCII_DTOSTR_BUF_SIZE + 2];
  for (int precision = 1; precision <= 17; precision++) {
    char format[8];
    g_snprintf(format, sizeof format, "%%.%dg", precision);
    g_ascii_formatd(buf, G_ASCII_DTOSTR_BUF_SIZE, format, d);
    if (g_ascii_strtod(buf, NULL) == d)
      break;
  }
  if (!strpbrk(buf, ".e"))
    g_strlcat(buf, ".0", sizeof buf);
  return json_object_new_double_s(d, buf);
}

static gboolean strides_are_row_major(const WeirContainer *c) {
  if (c->strides->len != c->shape->len)
    return FALSE;
  g_autoptr(WeirExpr) acc = weir_expr_const(1);
  for (guint i = c->shape->len; i-- > 0;) {
    if (!weir_expr_equal(g_ptr_array_index(c->strides, i), acc))
      return FALSE;
    WeirExpr *next = weir_expr_mul(acc, g_ptr_array_index(c->shape, i));
    weir_expr_unref(acc);
    acc = next;
  }
  return TRUE;
}

/* Elements of c's constant data. */
static guint64 initial_elements(const WeirContainer *c) {
  gsize es = weir_dtype_size(c->dtype);
  return es ? g_bytes_get_size(c->initial) / es : 0;
}

/* literal_max < 0: every payload; else the data of constants with more
 * elements is replaced by {"bound": true} (weir_graph_structure_json). */
static json_object *container_json(const WeirContainer *c, gint64 literal_max) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_int64(c->id));
  json_object_object_add(o, "name", json_str(c->name));
  json_object_object_add(o, "dtype", json_str(weir_dtype_name(c->dtype)));
  json_object_object_add(o, "shape", json_exprs(c->shape));
  if (!strides_are_row_major(c))
    json_object_object_add(o, "strides", json_exprs(c->strides));
  if (c->transient)
    json_object_object_add(o, "transient", json_object_new_boolean(1));
  if (c->initial && literal_max >= 0 &&
      initial_elements(c) > (guint64)literal_max) {
    json_object *init = json_object_new_object();
    json_object_object_add(init, "bound", json_object_new_boolean(1));
    json_object_object_add(o, "initial", init);
  } else if (c->initial) {
    gsize size = 0;
    const guchar *data = g_bytes_get_data(c->initial, &size);
    g_autofree char *b64 = g_base64_encode(data, size);
    json_object *init = json_object_new_object();
    json_object_object_add(init, "base64", json_object_new_string(b64));
    json_object_object_add(o, "initial", init);
  }
  if (c->initializer)
    json_object_object_add(o, "initializer", json_str(c->initializer));
  if (c->count) {
    json_object_object_add(o, "count", json_str(c->count));
    json_object_object_add(o, "count_dim", json_object_new_int64(c->count_dim));
  }
  return o;
}

static json_object *attr_json(const WeirAttr *a) {
  json_object *o = json_object_new_object();
  json_object *v = NULL;
  switch (a->type) {
  case WEIR_ATTR_INT:
    v = json_object_new_int64(a->i);
    break;
  case WEIR_ATTR_FLOAT:
    v = json_double(a->f);
    break;
  case WEIR_ATTR_STRING:
    v = json_str(a->s);
    break;
  case WEIR_ATTR_INTS:
    v = json_object_new_array();
    for (guint i = 0; a->ints && i < a->ints->len; i++)
      json_object_array_add(
          v, json_object_new_int64(g_array_index(a->ints, gint64, i)));
    break;
  case WEIR_ATTR_FLOATS:
    v = json_object_new_array();
    for (guint i = 0; a->floats && i < a->floats->len; i++)
      json_object_array_add(v,
                            json_double(g_array_index(a->floats, double, i)));
    break;
  case WEIR_ATTR_STRINGS:
    v = json_strings(a->strings);
    break;
  case WEIR_ATTR_TYPE_COUNT:
  default:
    g_return_val_if_reached(o);
  }
  json_object_object_add(o, weir_attr_type_name(a->type), v);
  return o;
}

static json_object *graph_json(const WeirGraph *g, gint64 literal_max);

static void map_json(json_object *o, const WeirMap *m) {
  json_object_object_add(o, "params", json_strings(m->params));
  json_object *ranges = json_object_new_array();
  for (guint i = 0; i < m->ranges->len; i++) {
    g_autofree char *r =
        weir_range_to_string(&g_array_index(m->ranges, WeirRange, i));
    json_object_array_add(ranges, json_object_new_string(r));
  }
  json_object_object_add(o, "ranges", ranges);
  if (m->schedule != WEIR_SCHEDULE_SEQUENTIAL)
    json_object_object_add(o, "schedule",
                           json_str(weir_schedule_name(m->schedule)));
  if (m->tile && m->tile->len) {
    json_object *tile = json_object_new_array();
    for (guint i = 0; i < m->tile->len; i++)
      json_object_array_add(
          tile, json_object_new_int64(g_array_index(m->tile, gint64, i)));
    json_object_object_add(o, "tile", tile);
  }
  if (m->unroll)
    json_object_object_add(o, "unroll", json_object_new_int64(m->unroll));
  if (m->collapse)
    json_object_object_add(o, "collapse", json_object_new_int64(m->collapse));
}

static json_object *node_json(const WeirNode *n, gint64 literal_max) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_int64(n->id));
  json_object_object_add(o, "kind", json_str(weir_node_kind_name(n->kind)));
  json_object_object_add(o, "label", json_str(n->label));
  /* The entry of a map exit comes before the connectors, as in the
   * documentation's example. */
  if (n->kind == WEIR_NODE_MAP_EXIT)
    json_object_object_add(o, "entry", json_object_new_int64(n->entry));
  if (n->in_conns && n->in_conns->len)
    json_object_object_add(o, "in", json_strings(n->in_conns));
  if (n->out_conns && n->out_conns->len)
    json_object_object_add(o, "out", json_strings(n->out_conns));
  switch (n->kind) {
  case WEIR_NODE_ACCESS:
    json_object_object_add(o, "data", json_str(n->data));
    break;
  case WEIR_NODE_TASKLET:
    json_object_object_add(o, "code", json_str(n->code_text));
    break;
  case WEIR_NODE_MAP_ENTRY:
    if (n->map)
      map_json(o, n->map);
    break;
  case WEIR_NODE_MAP_EXIT:
    break;
  case WEIR_NODE_LIBRARY: {
    json_object_object_add(o, "op", json_str(n->op));
    json_object *attrs = json_object_new_object();
    for (guint i = 0; n->attrs && i < n->attrs->len; i++) {
      const WeirAttr *a = g_ptr_array_index(n->attrs, i);
      json_object_object_add(attrs, a->name, attr_json(a));
    }
    json_object_object_add(o, "attrs", attrs);
    break;
  }
  case WEIR_NODE_NESTED: {
    if (n->nested)
      json_object_object_add(o, "program", graph_json(n->nested, literal_max));
    json_object *symbols = json_object_new_object();
    for (guint i = 0; n->symbol_map && i < n->symbol_map->len; i++) {
      const WeirSymbolBinding *b = g_ptr_array_index(n->symbol_map, i);
      json_object_object_add(symbols, b->name, json_expr(b->value));
    }
    json_object_object_add(o, "symbols", symbols);
    break;
  }
  case WEIR_NODE_KIND_COUNT:
  default:
    break;
  }
  return o;
}

static json_object *memlet_json(const WeirMemlet *m) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_int64(m->id));
  json_object_object_add(o, "src", json_object_new_int64(m->src));
  if (m->src_conn)
    json_object_object_add(o, "src_conn", json_str(m->src_conn));
  json_object_object_add(o, "dst", json_object_new_int64(m->dst));
  if (m->dst_conn)
    json_object_object_add(o, "dst_conn", json_str(m->dst_conn));
  if (m->data) {
    json_object_object_add(o, "data", json_str(m->data));
    g_autofree char *subset =
        m->subset ? weir_subset_to_string(m->subset) : g_strdup("");
    json_object_object_add(o, "subset", json_object_new_string(subset));
  }
  if (m->other) {
    g_autofree char *other = weir_subset_to_string(m->other);
    json_object_object_add(o, "other", json_object_new_string(other));
  }
  if (m->volume) {
    /* Default: the subset's size, or 0 for an empty memlet. */
    g_autoptr(WeirExpr) def = (m->data && m->subset)
                                  ? weir_subset_volume(m->subset)
                                  : weir_expr_const(0);
    if (!weir_expr_equal(m->volume, def))
      json_object_object_add(o, "volume", json_expr(m->volume));
  }
  if (m->dynamic)
    json_object_object_add(o, "dynamic", json_object_new_boolean(1));
  if (m->wcr != WEIR_WCR_NONE)
    json_object_object_add(o, "wcr", json_str(weir_wcr_name(m->wcr)));
  return o;
}

static json_object *state_json(const WeirState *s, gint64 literal_max) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_int64(s->id));
  json_object_object_add(o, "label", json_str(s->label));
  json_object *nodes = json_object_new_array();
  for (guint i = 0; i < s->nodes->len; i++)
    json_object_array_add(
        nodes, node_json(g_ptr_array_index(s->nodes, i), literal_max));
  json_object_object_add(o, "nodes", nodes);
  json_object *edges = json_object_new_array();
  for (guint i = 0; i < s->edges->len; i++)
    json_object_array_add(edges, memlet_json(g_ptr_array_index(s->edges, i)));
  json_object_object_add(o, "edges", edges);
  return o;
}

static json_object *transition_json(const WeirTransition *t) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "id", json_object_new_int64(t->id));
  json_object_object_add(o, "src", json_object_new_int64(t->src));
  json_object_object_add(o, "dst", json_object_new_int64(t->dst));
  if (t->condition_text)
    json_object_object_add(o, "condition", json_str(t->condition_text));
  if (t->assign_names->len) {
    json_object *assign = json_object_new_object();
    for (guint i = 0; i < t->assign_names->len; i++)
      json_object_object_add(assign, g_ptr_array_index(t->assign_names, i),
                             json_expr(g_ptr_array_index(t->assign_values, i)));
    json_object_object_add(o, "assign", assign);
  }
  return o;
}

static json_object *graph_json(const WeirGraph *g, gint64 literal_max) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "format", json_str(WEIR_JSON_FORMAT));
  json_object_object_add(o, "version", json_object_new_int(WEIR_JSON_VERSION));
  json_object_object_add(o, "name", json_str(g->name));
  json_object_object_add(o, "symbols", json_strings(g->symbols));
  json_object *containers = json_object_new_array();
  for (guint i = 0; i < g->containers->len; i++)
    json_object_array_add(
        containers,
        container_json(g_ptr_array_index(g->containers, i), literal_max));
  json_object_object_add(o, "containers", containers);
  json_object_object_add(o, "start", json_object_new_int64(g->start));
  json_object *states = json_object_new_array();
  for (guint i = 0; i < g->states->len; i++)
    json_object_array_add(
        states, state_json(g_ptr_array_index(g->states, i), literal_max));
  json_object_object_add(o, "states", states);
  json_object *transitions = json_object_new_array();
  for (guint i = 0; i < g->transitions->len; i++)
    json_object_array_add(
        transitions, transition_json(g_ptr_array_index(g->transitions, i)));
  json_object_object_add(o, "transitions", transitions);
  json_object_object_add(o, "next_id", json_object_new_int64(g->next_id));
  return o;
}

static void emit_indent(GString *out, guint level) {
  for (guint i = 0; i < level; i++)
    g_string_append(out, "  ");
}

static void emit_scalar(GString *out, json_object *o) {
  g_string_append(
      out, json_object_to_json_string_ext(o, JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* Pretty-prints o at the given indentation level. */
static void emit(GString *out, json_object *o, guint level) {
  if (json_object_is_type(o, json_type_object)) {
    if (json_object_object_length(o) == 0) {
      g_string_append(out, "{}");
      return;
    }
    g_string_append(out, "{\n");
    gboolean first = TRUE;
    struct json_object_iterator it = json_object_iter_begin(o);
    struct json_object_iterator end = json_object_iter_end(o);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
      if (!first)
        g_string_append(out, ",\n");
      first = FALSE;
      emit_indent(out, level + 1);
      json_object *key =
          json_object_new_string(json_object_iter_peek_name(&it));
      emit_scalar(out, key);
      json_object_put(key);
      g_string_append(out, ": ");
      emit(out, json_object_iter_peek_value(&it), level + 1);
    }
    g_string_append_c(out, '\n');
    emit_indent(out, level);
    g_string_append_c(out, '}');
  } else if (json_object_is_type(o, json_type_array)) {
    gsize n = json_object_array_length(o);
    if (n == 0) {
      g_string_append(out, "[]");
      return;
    }
    g_string_append(out, "[\n");
    for (gsize i = 0; i < n; i++) {
      if (i)
        g_string_append(out, ",\n");
      emit_indent(out, level + 1);
      emit(out, json_object_array_get_idx(o, i), level + 1);
    }
    g_string_append_c(out, '\n');
    emit_indent(out, level);
    g_string_append_c(out, ']');
  } else {
    emit_scalar(out, o);
  }
}

/* ================================================================ reading */

typedef struct {
  const char *source;  /* for messages */
  GString *path;       /* JSON path of the value being read */
  const char *element; /* innermost element ("node 7"), borrowed, or NULL */
  GError **error;
} Loader;

/* Per-program state: the graph being built and the ids seen so far. */
typedef struct {
  WeirGraph *g;
  GHashTable *ids; /* id -> owned JSON path of the element that has it */
  guint max_id;
} Program;

static gboolean fail(Loader *L, WeirErrorCode code, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
static gboolean fail_at(Loader *L, const char *key, WeirErrorCode code,
                        const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static gboolean vfail(Loader *L, WeirErrorCode code, const char *fmt,
                      va_list ap) G_GNUC_PRINTF(3, 0);

static gboolean vfail(Loader *L, WeirErrorCode code, const char *fmt,
                      va_list ap) {
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  GString *full = g_string_new(L->source);
  g_string_append(full, ": ");
  if (L->path->len) {
    g_string_append(full, L->path->str);
    if (L->element)
      g_string_append_printf(full, " (%s)", L->element);
    g_string_append(full, ": ");
  }
  g_string_append(full, msg);
  g_set_error_literal(L->error, WEIR_ERROR, code, full->str);
  g_string_free(full, TRUE);
  return FALSE;
}

/* Sets the error for the current path; always returns FALSE. */
static gboolean fail(Loader *L, WeirErrorCode code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail(L, code, fmt, ap);
  va_end(ap);
  return FALSE;
}

static gsize path_key(Loader *L, const char *key) {
  gsize old = L->path->len;
  if (old)
    g_string_append_c(L->path, '.');
  g_string_append(L->path, key);
  return old;
}

static gsize path_index(Loader *L, guint index) {
  gsize old = L->path->len;
  g_string_append_printf(L->path, "[%u]", index);
  return old;
}

static void path_pop(Loader *L, gsize old) {
  g_string_truncate(L->path, old);
}

/* Sets the error for the member key of the current path. */
static gboolean fail_at(Loader *L, const char *key, WeirErrorCode code,
                        const char *fmt, ...) {
  gsize old = path_key(L, key);
  va_list ap;
  va_start(ap, fmt);
  vfail(L, code, fmt, ap);
  va_end(ap);
  path_pop(L, old);
  return FALSE;
}

static const char *type_name(json_type t) {
  switch (t) {
  case json_type_null:
    return "null";
  case json_type_boolean:
    return "a boolean";
  case json_type_double:
    return "a number";
  case json_type_int:
    return "an integer";
  case json_type_object:
    return "an object";
  case json_type_array:
    return "an array";
  case json_type_string:
    return "a string";
  default:
    return "?";
  }
}

static gboolean expect_type(Loader *L, json_object *v, json_type t) {
  if (json_object_is_type(v, t))
    return TRUE;
  return fail(L, WEIR_ERROR_PARSE, "expected %s, found %s", type_name(t),
              type_name(json_object_get_type(v)));
}

/* Looks up key.  Absent: an error when required, else TRUE with *out =
 * NULL.  Present: its type must be t. */
static gboolean member(Loader *L, json_object *obj, const char *key,
                       json_type t, gboolean required, json_object **out) {
  json_object *v = NULL;
  *out = NULL;
  if (!json_object_object_get_ex(obj, key, &v)) {
    if (required)
      return fail(L, WEIR_ERROR_PARSE, "missing key '%s'", key);
    return TRUE;
  }
  gsize old = path_key(L, key);
  gboolean ok = expect_type(L, v, t);
  path_pop(L, old);
  *out = ok ? v : NULL;
  return ok;
}

/* Rejects keys that are in neither list (each NULL-terminated). */
static gboolean check_keys(Loader *L, json_object *obj,
                           const char *const *allowed,
                           const char *const *more) {
  struct json_object_iterator it = json_object_iter_begin(obj);
  struct json_object_iterator end = json_object_iter_end(obj);
  for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
    const char *key = json_object_iter_peek_name(&it);
    if (!g_strv_contains(allowed, key) && !(more && g_strv_contains(more, key)))
      return fail(L, WEIR_ERROR_PARSE, "unknown key '%s'", key);
  }
  return TRUE;
}

/* The string of v (type already checked), refusing embedded NULs. */
static gboolean string_value(Loader *L, json_object *v, const char **out) {
  const char *s = json_object_get_string(v);
  if ((gsize)json_object_get_string_len(v) != strlen(s))
    return fail(L, WEIR_ERROR_PARSE, "the string contains a NUL character");
  *out = s;
  return TRUE;
}

static gboolean get_string(Loader *L, json_object *obj, const char *key,
                           gboolean required, const char **out) {
  json_object *v;
  *out = NULL;
  if (!member(L, obj, key, json_type_string, required, &v))
    return FALSE;
  if (!v)
    return TRUE;
  gsize old = path_key(L, key);
  gboolean ok = string_value(L, v, out);
  path_pop(L, old);
  return ok;
}

/* An integer value in [min, max] (type checked here). */
static gboolean int_value(Loader *L, json_object *v, gint64 min, gint64 max,
                          gint64 *out) {
  if (!expect_type(L, v, json_type_int))
    return FALSE;
  gint64 x = json_object_get_int64(v);
  gboolean too_big =
      x == G_MAXINT64 && json_object_get_uint64(v) != (guint64)G_MAXINT64;
  if (too_big || x < min || x > max)
    return fail(L, WEIR_ERROR_PARSE,
                "integer %s is out of range [%" G_GINT64_FORMAT
                ", %" G_GINT64_FORMAT "]",
                json_object_get_string(v), min, max);
  *out = x;
  return TRUE;
}

static gboolean get_int(Loader *L, json_object *obj, const char *key,
                        gboolean required, gint64 min, gint64 max, gint64 *out,
                        gboolean *present) {
  json_object *v = NULL;
  if (present)
    *present = FALSE;
  if (!json_object_object_get_ex(obj, key, &v)) {
    if (required)
      return fail(L, WEIR_ERROR_PARSE, "missing key '%s'", key);
    return TRUE;
  }
  gsize old = path_key(L, key);
  gboolean ok = int_value(L, v, min, max, out);
  path_pop(L, old);
  if (ok && present)
    *present = TRUE;
  return ok;
}

/* A reference to an element: a positive id.  Ids stay below G_MAXUINT so
 * that next_id = max id + 1 cannot overflow. */
static gboolean get_ref(Loader *L, json_object *obj, const char *key,
                        guint *out) {
  gint64 v = 0;
  if (!get_int(L, obj, key, TRUE, 1, G_MAXUINT - 1, &v, NULL))
    return FALSE;
  *out = (guint)v;
  return TRUE;
}

static gboolean get_bool(Loader *L, json_object *obj, const char *key,
                         gboolean *out) {
  json_object *v;
  if (!member(L, obj, key, json_type_boolean, FALSE, &v))
    return FALSE;
  *out = v ? json_object_get_boolean(v) : FALSE;
  return TRUE;
}

/* The strings of the array arr (the current path) as a NULL-terminated
 * owned array.  unique: refuse duplicates (connector and parameter names). */
static gboolean strings_value(Loader *L, json_object *arr, gboolean unique,
                              GPtrArray **out) {
  *out = NULL;
  if (!expect_type(L, arr, json_type_array))
    return FALSE;
  g_autoptr(GPtrArray) list = g_ptr_array_new_null_terminated(0, g_free, TRUE);
  gsize n = json_object_array_length(arr);
  for (gsize i = 0; i < n; i++) {
    gsize old = path_index(L, (guint)i);
    json_object *v = json_object_array_get_idx(arr, i);
    const char *s = NULL;
    if (!expect_type(L, v, json_type_string) || !string_value(L, v, &s))
      return FALSE;
    for (guint k = 0; unique && k < list->len; k++)
      if (strcmp(g_ptr_array_index(list, k), s) == 0)
        return fail(L, WEIR_ERROR_INVALID, "duplicate name '%s'", s);
    g_ptr_array_add(list, g_strdup(s));
    path_pop(L, old);
  }
  *out = g_steal_pointer(&list);
  return TRUE;
}

/* Member key as a string array (see strings_value), or NULL when absent and
 * not required. */
static gboolean get_strings(Loader *L, json_object *obj, const char *key,
                            gboolean required, gboolean unique,
                            GPtrArray **out) {
  json_object *arr;
  *out = NULL;
  if (!member(L, obj, key, json_type_array, required, &arr))
    return FALSE;
  if (!arr)
    return TRUE;
  gsize old = path_key(L, key);
  gboolean ok = strings_value(L, arr, unique, out);
  path_pop(L, old);
  return ok;
}

static gboolean is_identifier(const char *s) {
  if (!s || !(g_ascii_isalpha(*s) || *s == '_'))
    return FALSE;
  for (const char *p = s + 1; *p; p++)
    if (!(g_ascii_isalnum(*p) || *p == '_'))
      return FALSE;
  return TRUE;
}

/* Parses an expression; the error is reported at the current path. */
static WeirExpr *parse_expr(Loader *L, const char *text) {
  g_autoptr(GError) local = NULL;
  WeirExpr *e = weir_expr_parse(text, &local);
  if (!e && g_str_has_prefix(local->message, "expression '"))
    fail(L, WEIR_ERROR_PARSE, "%s", local->message); /* names the text */
  else if (!e)
    fail(L, WEIR_ERROR_PARSE, "expression '%s': %s", text, local->message);
  return e;
}

/* A list of expression strings (owned WeirExpr* array) or NULL if absent. */
static gboolean get_exprs(Loader *L, json_object *obj, const char *key,
                          gboolean required, GPtrArray **out) {
  g_autoptr(GPtrArray) texts = NULL;
  *out = NULL;
  if (!get_strings(L, obj, key, required, FALSE, &texts))
    return FALSE;
  if (!texts)
    return TRUE;
  g_autoptr(GPtrArray) exprs =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  gsize old = path_key(L, key);
  for (guint i = 0; i < texts->len; i++) {
    gsize old_i = path_index(L, i);
    WeirExpr *e = parse_expr(L, g_ptr_array_index(texts, i));
    if (!e)
      return FALSE;
    g_ptr_array_add(exprs, e);
    path_pop(L, old_i);
  }
  path_pop(L, old);
  *out = g_steal_pointer(&exprs);
  return TRUE;
}

/* Reads the "id" of an element, checks it is new in the program and larger
 * than the previous id of the same array. */
static gboolean read_id(Loader *L, Program *P, json_object *obj, guint *prev,
                        guint *out) {
  if (!get_ref(L, obj, "id", out))
    return FALSE;
  const char *other = g_hash_table_lookup(P->ids, GUINT_TO_POINTER(*out));
  if (other)
    return fail_at(L, "id", WEIR_ERROR_INVALID,
                   "duplicate id %u (also the id of %s)", *out, other);
  if (*out <= *prev)
    return fail_at(L, "id", WEIR_ERROR_INVALID,
                   "id %u is not greater than the previous id %u (elements "
                   "are sorted by id)",
                   *out, *prev);
  g_hash_table_insert(P->ids, GUINT_TO_POINTER(*out), g_strdup(L->path->str));
  *prev = *out;
  P->max_id = MAX(P->max_id, *out);
  return TRUE;
}

/* ------------------------------------------------------- constant data */

static gboolean base64_is_valid(const char *s) {
  gsize n = strlen(s);
  if (n % 4)
    return FALSE;
  for (gsize i = 0; i < n; i++) {
    if (g_ascii_isalnum(s[i]) || s[i] == '+' || s[i] == '/')
      continue;
    /* '=' only as padding: in the last two places, followed only by '='. */
    if (s[i] != '=' || i + 2 < n || (i + 1 < n && s[i + 1] != '='))
      return FALSE;
  }
  return TRUE;
}

/* Converts one element of "values" to the dtype, little-endian, at dst. */
static gboolean convert_value(Loader *L, json_object *v, WeirDType dtype,
                              guint8 *dst) {
  double d = 0;
  gint64 i = 0;
  gboolean is_int = FALSE;
  if (json_object_is_type(v, json_type_boolean)) {
    i = json_object_get_boolean(v) ? 1 : 0;
    is_int = TRUE;
  } else if (json_object_is_type(v, json_type_int)) {
    if (!int_value(L, v, G_MININT64, G_MAXINT64, &i))
      return FALSE;
    is_int = TRUE;
  } else if (json_object_is_type(v, json_type_double)) {
    d = json_object_get_double(v);
  } else {
    return fail(L, WEIR_ERROR_PARSE, "expected a number, found %s",
                type_name(json_object_get_type(v)));
  }
  if (weir_dtype_is_float(dtype)) {
    double x = is_int ? (double)i : d;
    if (weir_dtype_is_half(dtype)) {
      guint16 h = dtype == WEIR_DTYPE_F16 ? weir_f16_from_double(x)
                                          : weir_bf16_from_double(x);
      h = GUINT16_TO_LE(h);
      memcpy(dst, &h, 2);
    } else if (dtype == WEIR_DTYPE_F32) {
      float f = (float)x;
      guint32 bits;
      memcpy(&bits, &f, 4);
      bits = GUINT32_TO_LE(bits);
      memcpy(dst, &bits, 4);
    } else {
      guint64 bits;
      memcpy(&bits, &x, 8);
      bits = GUINT64_TO_LE(bits);
      memcpy(dst, &bits, 8);
    }
    return TRUE;
  }
  if (!is_int) {
    /* -2^63 <= d < 2^63, integral. */
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) ||
        d != floor(d))
      return fail(L, WEIR_ERROR_INVALID, "%s is not a value of type %s",
                  json_object_get_string(v), weir_dtype_name(dtype));
    i = (gint64)d;
  }
  gint64 lo = G_MININT64, hi = G_MAXINT64;
  switch (dtype) {
  case WEIR_DTYPE_I32:
    lo = G_MININT32;
    hi = G_MAXINT32;
    break;
  case WEIR_DTYPE_BOOL:
    lo = 0;
    hi = 1;
    break;
  case WEIR_DTYPE_U8:
    lo = 0;
    hi = 255;
    break;
  case WEIR_DTYPE_I8:
    lo = G_MININT8;
    hi = G_MAXINT8;
    break;
  case WEIR_DTYPE_I16:
    lo = G_MININT16;
    hi = G_MAXINT16;
    break;
  case WEIR_DTYPE_U16:
    lo = 0;
    hi = G_MAXUINT16;
    break;
  case WEIR_DTYPE_U32:
    lo = 0;
    hi = G_MAXUINT32;
    break;
  case WEIR_DTYPE_U64: /* JSON integers reach 2^63 - 1 */
    lo = 0;
    break;
  default:
    break;
  }
  if (i < lo || i > hi)
    return fail(L, WEIR_ERROR_INVALID, "%s is not a value of type %s",
                json_object_get_string(v), weir_dtype_name(dtype));
  switch (weir_dtype_size(dtype)) {
  case 8: {
    guint64 bits = GUINT64_TO_LE((guint64)i);
    memcpy(dst, &bits, 8);
    break;
  }
  case 4: {
    guint32 bits = GUINT32_TO_LE((guint32)i);
    memcpy(dst, &bits, 4);
    break;
  }
  case 2: {
    guint16 bits = GUINT16_TO_LE((guint16)i);
    memcpy(dst, &bits, 2);
    break;
  }
  default:
    dst[0] = (guint8)i;
    break;
  }
  return TRUE;
}

/* Reads "initial" (the current path) for container c. */
static gboolean load_initial(Loader *L, WeirContainer *c, json_object *init) {
  if (!check_keys(L, init, (const char *const[]){"base64", "values", NULL},
                  NULL))
    return FALSE;
  json_object *b64 = NULL, *values = NULL;
  if (!member(L, init, "base64", json_type_string, FALSE, &b64) ||
      !member(L, init, "values", json_type_array, FALSE, &values))
    return FALSE;
  if ((b64 != NULL) == (values != NULL))
    return fail(L, WEIR_ERROR_PARSE,
                "expected exactly one of 'base64' and 'values'");
  /* Number of elements, from a concrete shape. */
  guint64 count = 1;
  for (guint d = 0; d < c->shape->len; d++) {
    gint64 dim;
    if (!weir_expr_is_const(g_ptr_array_index(c->shape, d), &dim))
      return fail(L, WEIR_ERROR_INVALID,
                  "constant data needs a concrete shape");
    if (dim < 0)
      return fail(L, WEIR_ERROR_INVALID,
                  "dimension %u of the shape is "
                  "negative",
                  d);
    if (!g_uint64_checked_mul(&count, count, (guint64)dim))
      return fail(L, WEIR_ERROR_INVALID, "the shape is too large");
  }
  gsize esize = weir_dtype_size(c->dtype);
  guint64 bytes;
  if (!g_uint64_checked_mul(&bytes, count, esize) || bytes > G_MAXSIZE)
    return fail(L, WEIR_ERROR_INVALID, "the shape is too large");
  if (b64) {
    const char *text = NULL;
    gsize old = path_key(L, "base64");
    gboolean ok = string_value(L, b64, &text);
    if (ok && !base64_is_valid(text))
      ok = fail(L, WEIR_ERROR_PARSE, "invalid base64 text");
    path_pop(L, old);
    if (!ok)
      return FALSE;
    gsize size = 0;
    guchar *data = *text ? g_base64_decode(text, &size) : g_malloc(1);
    if ((guint64)size != bytes) {
      g_free(data);
      return fail(L, WEIR_ERROR_INVALID,
                  "%" G_GSIZE_FORMAT
                  " bytes of data, expected %" G_GUINT64_FORMAT
                  " (%" G_GUINT64_FORMAT " x %s)",
                  size, bytes, count, weir_dtype_name(c->dtype));
    }
    g_autoptr(GBytes) gb = g_bytes_new_take(data, size);
    weir_container_set_initial(c, gb);
    return TRUE;
  }
  gsize n = json_object_array_length(values);
  if ((guint64)n != count)
    return fail_at(L, "values", WEIR_ERROR_INVALID,
                   "%" G_GSIZE_FORMAT " values, expected %" G_GUINT64_FORMAT, n,
                   count);
  guint8 *data = g_malloc0(bytes ? bytes : 1);
  gsize old = path_key(L, "values");
  for (gsize i = 0; i < n; i++) {
    gsize old_i = path_index(L, (guint)i);
    if (!convert_value(L, json_object_array_get_idx(values, i), c->dtype,
                       data + i * esize)) {
      g_free(data);
      return FALSE;
    }
    path_pop(L, old_i);
  }
  path_pop(L, old);
  g_autoptr(GBytes) gb = g_bytes_new_take(data, bytes);
  weir_container_set_initial(c, gb);
  return TRUE;
}

/* -------------------------------------------------------------- elements */

static gboolean load_container(Loader *L, Program *P, json_object *obj,
                               guint *prev) {
  static const char *const keys[] = {
      "id",      "name",        "dtype", "shape",     "strides", "transient",
      "initial", "initializer", "count", "count_dim", NULL};
  guint id;
  const char *name, *dtype_name, *initializer = NULL, *count = NULL;
  gint64 count_dim = 0;
  gboolean has_count_dim = FALSE;
  WeirDType dtype;
  g_autoptr(GPtrArray) shape = NULL;
  g_autoptr(GPtrArray) strides = NULL;
  gboolean transient = FALSE;
  json_object *initial = NULL;
  if (!expect_type(L, obj, json_type_object) ||
      !read_id(L, P, obj, prev, &id) || !check_keys(L, obj, keys, NULL) ||
      !get_string(L, obj, "name", TRUE, &name) ||
      !get_string(L, obj, "dtype", TRUE, &dtype_name))
    return FALSE;
  if (!weir_dtype_from_name(dtype_name, &dtype))
    return fail(L, WEIR_ERROR_PARSE, "unknown dtype '%s'", dtype_name);
  if (!get_exprs(L, obj, "shape", TRUE, &shape) ||
      !get_exprs(L, obj, "strides", FALSE, &strides) ||
      !get_bool(L, obj, "transient", &transient) ||
      !member(L, obj, "initial", json_type_object, FALSE, &initial) ||
      !get_string(L, obj, "initializer", FALSE, &initializer) ||
      !get_string(L, obj, "count", FALSE, &count) ||
      !get_int(L, obj, "count_dim", FALSE, 0, G_MAXUINT, &count_dim,
               &has_count_dim))
    return FALSE;
  if (has_count_dim && !count)
    return fail_at(L, "count_dim", WEIR_ERROR_INVALID,
                   "count_dim without count");
  if (count && count_dim >= (gint64)shape->len)
    return fail_at(L, "count_dim", WEIR_ERROR_INVALID,
                   "count_dim %" G_GINT64_FORMAT " for a shape of rank %u",
                   count_dim, shape->len);
  if (strides && strides->len != shape->len)
    return fail_at(L, "strides", WEIR_ERROR_INVALID,
                   "%u strides for a shape of rank %u", strides->len,
                   shape->len);
  g_autoptr(GError) local = NULL;
  WeirContainer *c = weir_graph_add_container(P->g, name, dtype, shape->len,
                                              (WeirExpr *const *)shape->pdata,
                                              transient, &local);
  if (!c)
    return fail_at(L, "name", local->code, "%s", local->message);
  c->id = id;
  if (strides)
    weir_container_set_strides(c, (WeirExpr *const *)strides->pdata);
  weir_container_set_initializer(c, initializer);
  if (count)
    weir_container_set_count(c, count, (guint)count_dim);
  if (initial) {
    gsize old = path_key(L, "initial");
    gboolean ok = load_initial(L, c, initial);
    path_pop(L, old);
    if (!ok)
      return FALSE;
  }
  return TRUE;
}

/* One number of a "floats" attribute (the current path). */
static gboolean float_value(Loader *L, json_object *v, double *out) {
  if (json_object_is_type(v, json_type_double)) {
    *out = json_object_get_double(v);
    return TRUE;
  }
  if (!json_object_is_type(v, json_type_int))
    return fail(L, WEIR_ERROR_PARSE, "expected a number, found %s",
                type_name(json_object_get_type(v)));
  gint64 i;
  if (!int_value(L, v, G_MININT64, G_MAXINT64, &i))
    return FALSE;
  *out = (double)i;
  return TRUE;
}

/* One attribute of a library node: {"TYPE": value} (the current path). */
static gboolean load_attr(Loader *L, WeirNode *n, const char *name,
                          json_object *v) {
  if (!expect_type(L, v, json_type_object))
    return FALSE;
  if (json_object_object_length(v) != 1)
    return fail(L, WEIR_ERROR_PARSE,
                "expected an object with one key: int, float, string, ints, "
                "floats or strings");
  struct json_object_iterator it = json_object_iter_begin(v);
  const char *type = json_object_iter_peek_name(&it);
  json_object *value = json_object_iter_peek_value(&it);
  gboolean known = FALSE;
  for (guint t = 0; t < WEIR_ATTR_TYPE_COUNT; t++)
    known |= strcmp(type, weir_attr_type_name((WeirAttrType)t)) == 0;
  if (!known)
    return fail(L, WEIR_ERROR_PARSE, "unknown attribute type '%s'", type);
  path_key(L, type);
  if (strcmp(type, "int") == 0) {
    gint64 i;
    if (!int_value(L, value, G_MININT64, G_MAXINT64, &i))
      return FALSE;
    weir_node_set_attr_int(n, name, i);
  } else if (strcmp(type, "float") == 0) {
    double d;
    if (!float_value(L, value, &d))
      return FALSE;
    weir_node_set_attr_float(n, name, d);
  } else if (strcmp(type, "string") == 0) {
    const char *s = NULL;
    if (!expect_type(L, value, json_type_string) || !string_value(L, value, &s))
      return FALSE;
    weir_node_set_attr_string(n, name, s);
  } else if (strcmp(type, "strings") == 0) {
    g_autoptr(GPtrArray) list = NULL;
    if (!strings_value(L, value, FALSE, &list))
      return FALSE;
    weir_node_set_attr_strings(n, name, (const char *const *)list->pdata,
                               list->len);
  } else {
    gboolean floats = strcmp(type, "floats") == 0;
    if (!expect_type(L, value, json_type_array))
      return FALSE;
    gsize count = json_object_array_length(value);
    g_autoptr(GArray) ints = g_array_new(FALSE, FALSE, sizeof(gint64));
    g_autoptr(GArray) reals = g_array_new(FALSE, FALSE, sizeof(double));
    for (gsize i = 0; i < count; i++) {
      json_object *e = json_object_array_get_idx(value, i);
      gsize old = path_index(L, (guint)i);
      if (floats) {
        double d;
        if (!float_value(L, e, &d))
          return FALSE;
        g_array_append_val(reals, d);
      } else {
        gint64 x;
        if (!int_value(L, e, G_MININT64, G_MAXINT64, &x))
          return FALSE;
        g_array_append_val(ints, x);
      }
      path_pop(L, old);
    }
    if (floats)
      weir_node_set_attr_floats(n, name, (const double *)(void *)reals->data,
                                reals->len);
    else
      weir_node_set_attr_ints(n, name, (const gint64 *)(void *)ints->data,
                              ints->len);
  }
  return TRUE;
}

static gboolean load_attrs(Loader *L, WeirNode *n, json_object *attrs) {
  gsize old = path_key(L, "attrs");
  struct json_object_iterator it = json_object_iter_begin(attrs);
  struct json_object_iterator end = json_object_iter_end(attrs);
  for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
    const char *name = json_object_iter_peek_name(&it);
    gsize old_a = path_key(L, name);
    if (!load_attr(L, n, name, json_object_iter_peek_value(&it)))
      return FALSE;
    path_pop(L, old_a);
  }
  path_pop(L, old);
  return TRUE;
}

/* The symbol bindings of a nested node: name -> outer expression. */
static gboolean load_bindings(Loader *L, WeirNode *n, json_object *symbols) {
  gsize old = path_key(L, "symbols");
  struct json_object_iterator it = json_object_iter_begin(symbols);
  struct json_object_iterator end = json_object_iter_end(symbols);
  for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
    const char *name = json_object_iter_peek_name(&it);
    json_object *v = json_object_iter_peek_value(&it);
    gsize old_s = path_key(L, name);
    const char *text = NULL;
    if (!expect_type(L, v, json_type_string) || !string_value(L, v, &text))
      return FALSE;
    if (!is_identifier(name))
      return fail(L, WEIR_ERROR_INVALID, "'%s' is not a symbol name", name);
    g_autoptr(GError) local = NULL;
    if (!weir_node_bind_symbol(n, name, text, &local))
      return fail(L, WEIR_ERROR_PARSE, "%s", local->message);
    path_pop(L, old_s);
  }
  path_pop(L, old);
  return TRUE;
}

/* Reads the keys of a map entry and creates it.  weir_state_add_map also
 * creates the exit; the exit is a node of its own in JSON, so the one made
 * here is removed again. */
static WeirNode *add_map_entry(Loader *L, WeirGraph *g, WeirState *s,
                               json_object *obj, const char *label) {
  g_autoptr(GPtrArray) params = NULL;
  g_autoptr(GPtrArray) ranges = NULL;
  const char *schedule_name = NULL;
  WeirSchedule schedule = WEIR_SCHEDULE_SEQUENTIAL;
  json_object *tile = NULL;
  gint64 unroll = 0, collapse = 0;
  if (!get_strings(L, obj, "params", TRUE, TRUE, &params) ||
      !get_strings(L, obj, "ranges", TRUE, FALSE, &ranges))
    return NULL;
  if (params->len == 0) {
    fail_at(L, "params", WEIR_ERROR_INVALID,
            "a map needs at least one parameter");
    return NULL;
  }
  if (ranges->len != params->len) {
    fail_at(L, "ranges", WEIR_ERROR_INVALID, "%u ranges for %u parameters",
            ranges->len, params->len);
    return NULL;
  }
  for (guint i = 0; i < params->len; i++) {
    const char *param = g_ptr_array_index(params, i);
    if (!is_identifier(param)) {
      path_key(L, "params");
      path_index(L, i);
      fail(L, WEIR_ERROR_INVALID, "'%s' is not an identifier", param);
      return NULL;
    }
    WeirRange r;
    g_autoptr(GError) local = NULL;
    gboolean ok = weir_range_parse(g_ptr_array_index(ranges, i), &r, &local);
    if (!ok) {
      path_key(L, "ranges");
      path_index(L, i);
      fail(L, WEIR_ERROR_PARSE, "%s", local->message);
      return NULL;
    }
    weir_range_clear(&r);
  }
  if (!get_string(L, obj, "schedule", FALSE, &schedule_name))
    return NULL;
  if (schedule_name && !weir_schedule_from_name(schedule_name, &schedule)) {
    fail(L, WEIR_ERROR_PARSE, "unknown schedule '%s'", schedule_name);
    return NULL;
  }
  if (!member(L, obj, "tile", json_type_array, FALSE, &tile) ||
      !get_int(L, obj, "unroll", FALSE, 0, G_MAXUINT, &unroll, NULL) ||
      !get_int(L, obj, "collapse", FALSE, 0, G_MAXUINT, &collapse, NULL))
    return NULL;
  g_autoptr(GArray) tiles = g_array_new(FALSE, FALSE, sizeof(gint64));
  if (tile) {
    gsize n = json_object_array_length(tile);
    if (n != 0 && n != params->len) {
      fail_at(L, "tile", WEIR_ERROR_INVALID,
              "%" G_GSIZE_FORMAT " tile sizes for %u parameters", n,
              params->len);
      return NULL;
    }
    gsize old = path_key(L, "tile");
    for (gsize i = 0; i < n; i++) {
      gint64 t;
      gsize old_i = path_index(L, (guint)i);
      if (!int_value(L, json_object_array_get_idx(tile, i), 0, G_MAXINT64, &t))
        return NULL;
      g_array_append_val(tiles, t);
      path_pop(L, old_i);
    }
    path_pop(L, old);
  }
  g_autoptr(GError) local = NULL;
  WeirNode *exit = NULL;
  WeirNode *entry = weir_state_add_map(
      g, s, label, (const char *const *)params->pdata,
      (const char *const *)ranges->pdata, schedule, &exit, &local);
  if (!entry) {
    fail(L, local->code, "%s", local->message);
    return NULL;
  }
  g_assert(g_ptr_array_index(s->nodes, s->nodes->len - 1) == exit);
  g_ptr_array_remove_index(s->nodes, s->nodes->len - 1);
  if (tiles->len)
    g_array_append_vals(entry->map->tile, tiles->data, tiles->len);
  entry->map->unroll = (guint)unroll;
  entry->map->collapse = (guint)collapse;
  return entry;
}

/* A map exit on its own: the builder only makes exits together with their
 * entry, so make a pair and drop the placeholder entry.  The entry
 * reference is resolved once all nodes of the state are read. */
static WeirNode *add_map_exit(Loader *L, WeirGraph *g, WeirState *s,
                              json_object *obj, const char *label) {
  static const char *const params[] = {"i", NULL};
  static const char *const ranges[] = {"0", NULL};
  guint entry_id;
  if (!get_ref(L, obj, "entry", &entry_id))
    return NULL;
  WeirNode *exit = NULL;
  WeirNode *entry = weir_state_add_map(g, s, label, params, ranges,
                                       WEIR_SCHEDULE_SEQUENTIAL, &exit, NULL);
  g_assert(entry && exit &&
           g_ptr_array_index(s->nodes, s->nodes->len - 2) == entry);
  g_ptr_array_remove_index(s->nodes, s->nodes->len - 2);
  exit->entry = entry_id;
  return exit;
}

static gboolean add_conns(WeirNode *n, GPtrArray *ins, GPtrArray *outs) {
  for (guint i = 0; ins && i < ins->len; i++)
    weir_node_add_in_conn(n, g_ptr_array_index(ins, i));
  for (guint i = 0; outs && i < outs->len; i++)
    weir_node_add_out_conn(n, g_ptr_array_index(outs, i));
  return TRUE;
}

static const char *const node_keys[] = {"id", "kind", "label",
                                        "in", "out",  NULL};
static const char *const *const node_kind_keys[WEIR_NODE_KIND_COUNT] = {
    [WEIR_NODE_ACCESS] = (const char *const[]){"data", NULL},
    [WEIR_NODE_TASKLET] = (const char *const[]){"code", NULL},
    [WEIR_NODE_MAP_ENTRY] =
        (const char *const[]){"params", "ranges", "schedule", "tile", "unroll",
                              "collapse", NULL},
    [WEIR_NODE_MAP_EXIT] = (const char *const[]){"entry", NULL},
    [WEIR_NODE_LIBRARY] = (const char *const[]){"op", "attrs", NULL},
    [WEIR_NODE_NESTED] = (const char *const[]){"program", "symbols", NULL},
};

static WeirGraph *load_program(Loader *L, json_object *obj);

/* The keys of a node after its id (element description already set). */
static gboolean load_node_body(Loader *L, Program *P, WeirState *s,
                               json_object *obj, guint id) {
  const char *kind_name, *label;
  WeirNodeKind kind;
  g_autoptr(GPtrArray) ins = NULL;
  g_autoptr(GPtrArray) outs = NULL;
  if (!get_string(L, obj, "kind", TRUE, &kind_name))
    return FALSE;
  if (!weir_node_kind_from_name(kind_name, &kind))
    return fail(L, WEIR_ERROR_PARSE, "unknown kind '%s'", kind_name);
  if (!check_keys(L, obj, node_keys, node_kind_keys[kind]) ||
      !get_string(L, obj, "label", TRUE, &label) ||
      !get_strings(L, obj, "in", FALSE, TRUE, &ins) ||
      !get_strings(L, obj, "out", FALSE, TRUE, &outs))
    return FALSE;
  const char *const *in_names = ins ? (const char *const *)ins->pdata : NULL;
  const char *const *out_names = outs ? (const char *const *)outs->pdata : NULL;
  WeirGraph *g = P->g;
  WeirNode *n = NULL;
  switch (kind) {
  case WEIR_NODE_ACCESS: {
    const char *data;
    if (!get_string(L, obj, "data", TRUE, &data))
      return FALSE;
    n = weir_state_add_access(g, s, data);
    add_conns(n, ins, outs);
    break;
  }
  case WEIR_NODE_TASKLET: {
    const char *code;
    if (!get_string(L, obj, "code", TRUE, &code))
      return FALSE;
    g_autoptr(GError) local = NULL;
    g_autoptr(WeirCode) parsed = weir_code_parse(code, &local);
    if (!parsed)
      return fail_at(L, "code", WEIR_ERROR_PARSE, "%s", local->message);
    n = weir_state_add_tasklet(g, s, label, in_names, out_names, code);
    break;
  }
  case WEIR_NODE_MAP_ENTRY:
    n = add_map_entry(L, g, s, obj, label);
    if (!n)
      return FALSE;
    add_conns(n, ins, outs);
    break;
  case WEIR_NODE_MAP_EXIT:
    n = add_map_exit(L, g, s, obj, label);
    if (!n)
      return FALSE;
    add_conns(n, ins, outs);
    break;
  case WEIR_NODE_LIBRARY: {
    const char *op;
    json_object *attrs;
    if (!get_string(L, obj, "op", TRUE, &op) ||
        !member(L, obj, "attrs", json_type_object, TRUE, &attrs))
      return FALSE;
    n = weir_state_add_library(g, s, label, op, in_names, out_names);
    n->id = id;
    if (!load_attrs(L, n, attrs))
      return FALSE;
    break;
  }
  case WEIR_NODE_NESTED: {
    json_object *program, *symbols;
    if (!member(L, obj, "program", json_type_object, TRUE, &program) ||
        !member(L, obj, "symbols", json_type_object, TRUE, &symbols))
      return FALSE;
    gsize old = path_key(L, "program");
    const char *element = L->element;
    L->element = NULL;
    WeirGraph *nested = load_program(L, program);
    L->element = element;
    path_pop(L, old);
    if (!nested)
      return FALSE;
    n = weir_state_add_nested(g, s, label, nested, in_names, out_names);
    n->id = id;
    if (!load_bindings(L, n, symbols))
      return FALSE;
    break;
  }
  case WEIR_NODE_KIND_COUNT:
  default:
    g_return_val_if_reached(FALSE);
  }
  n->id = id;
  if (g_strcmp0(n->label, label) != 0) {
    g_free(n->label);
    n->label = g_strdup(label);
  }
  return TRUE;
}

static gboolean load_node(Loader *L, Program *P, WeirState *s, json_object *obj,
                          guint *prev) {
  guint id;
  const char *element = L->element;
  L->element = NULL; /* until the id is known */
  if (!expect_type(L, obj, json_type_object) || !read_id(L, P, obj, prev, &id))
    return FALSE;
  g_autofree char *desc = g_strdup_printf("node %u", id);
  L->element = desc;
  gboolean ok = load_node_body(L, P, s, obj, id);
  if (ok)
    L->element = element;
  return ok;
}

/* Checks that every map exit of s (whose JSON array is nodes) names a map
 * entry of s. */
static gboolean resolve_exits(Loader *L, WeirState *s) {
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind != WEIR_NODE_MAP_EXIT)
      continue;
    WeirNode *entry = weir_state_node(s, n->entry);
    if (entry && entry->kind == WEIR_NODE_MAP_ENTRY)
      continue;
    g_autofree char *desc = g_strdup_printf("node %u", n->id);
    L->element = desc;
    path_key(L, "nodes");
    path_index(L, i);
    if (!entry)
      fail_at(L, "entry", WEIR_ERROR_INVALID, "no node %u in state %u",
              n->entry, s->id);
    else
      fail_at(L, "entry", WEIR_ERROR_INVALID, "node %u (%s) is not a map_entry",
              n->entry, weir_node_kind_name(entry->kind));
    L->element = NULL;
    return FALSE;
  }
  return TRUE;
}

static gboolean load_memlet_body(Loader *L, Program *P, WeirState *s,
                                 json_object *obj, guint id) {
  static const char *const keys[] = {
      "id",     "src",   "dst",    "src_conn", "dst_conn", "data",
      "subset", "other", "volume", "dynamic",  "wcr",      NULL};
  guint src, dst;
  const char *src_conn, *dst_conn, *data, *subset, *other, *volume, *wcr;
  gboolean dynamic = FALSE;
  WeirWcr w = WEIR_WCR_NONE;
  if (!check_keys(L, obj, keys, NULL) || !get_ref(L, obj, "src", &src) ||
      !get_ref(L, obj, "dst", &dst))
    return FALSE;
  if (!weir_state_node(s, src))
    return fail_at(L, "src", WEIR_ERROR_INVALID, "no node %u in state %u", src,
                   s->id);
  if (!weir_state_node(s, dst))
    return fail_at(L, "dst", WEIR_ERROR_INVALID, "no node %u in state %u", dst,
                   s->id);
  if (!get_string(L, obj, "src_conn", FALSE, &src_conn) ||
      !get_string(L, obj, "dst_conn", FALSE, &dst_conn) ||
      !get_string(L, obj, "data", FALSE, &data) ||
      !get_string(L, obj, "subset", data != NULL, &subset) ||
      !get_string(L, obj, "other", FALSE, &other) ||
      !get_string(L, obj, "volume", FALSE, &volume) ||
      !get_bool(L, obj, "dynamic", &dynamic) ||
      !get_string(L, obj, "wcr", FALSE, &wcr))
    return FALSE;
  if (!data && subset)
    return fail_at(L, "subset", WEIR_ERROR_PARSE,
                   "a memlet without 'data' has no subset");
  if (wcr && !weir_wcr_from_name(wcr, &w))
    return fail(L, WEIR_ERROR_PARSE, "unknown wcr '%s'", wcr);
  g_autoptr(GError) local = NULL;
  WeirMemlet *m = weir_state_add_memlet(P->g, s, src, src_conn, dst, dst_conn,
                                        data, subset, &local);
  if (!m)
    return fail_at(L, "subset", local->code, "%s", local->message);
  m->id = id;
  if (other && !weir_memlet_set_other(m, other, &local))
    return fail_at(L, "other", local->code, "%s", local->message);
  if (volume) {
    gsize old = path_key(L, "volume");
    g_autoptr(WeirExpr) e = parse_expr(L, volume);
    if (!e)
      return FALSE;
    path_pop(L, old);
    weir_memlet_set_volume(m, e);
  }
  m->dynamic = dynamic;
  m->wcr = w;
  return TRUE;
}

static gboolean load_memlet(Loader *L, Program *P, WeirState *s,
                            json_object *obj, guint *prev) {
  guint id;
  const char *element = L->element;
  L->element = NULL; /* until the id is known */
  if (!expect_type(L, obj, json_type_object) || !read_id(L, P, obj, prev, &id))
    return FALSE;
  g_autofree char *desc = g_strdup_printf("memlet %u", id);
  L->element = desc;
  gboolean ok = load_memlet_body(L, P, s, obj, id);
  if (ok)
    L->element = element;
  return ok;
}

/* Calls fn on each element of the array key of obj, with path key[i]. */
typedef gboolean (*ElementFn)(Loader *L, Program *P, WeirState *s,
                              json_object *obj, guint *prev);

static gboolean load_array(Loader *L, Program *P, WeirState *s,
                           json_object *obj, const char *key, ElementFn fn) {
  json_object *arr;
  if (!member(L, obj, key, json_type_array, TRUE, &arr))
    return FALSE;
  gsize old = path_key(L, key);
  guint prev = 0;
  gsize n = json_object_array_length(arr);
  for (gsize i = 0; i < n; i++) {
    gsize old_i = path_index(L, (guint)i);
    if (!fn(L, P, s, json_object_array_get_idx(arr, i), &prev))
      return FALSE;
    path_pop(L, old_i);
  }
  path_pop(L, old);
  return TRUE;
}

static gboolean load_state_body(Loader *L, Program *P, json_object *obj,
                                guint id) {
  static const char *const keys[] = {"id", "label", "nodes", "edges", NULL};
  const char *label;
  if (!check_keys(L, obj, keys, NULL) ||
      !get_string(L, obj, "label", TRUE, &label))
    return FALSE;
  WeirState *s = weir_graph_add_state(P->g, label);
  s->id = id;
  return load_array(L, P, s, obj, "nodes", load_node) && resolve_exits(L, s) &&
         load_array(L, P, s, obj, "edges", load_memlet);
}

static gboolean load_state(Loader *L, Program *P, WeirState *unused,
                           json_object *obj, guint *prev) {
  (void)unused;
  guint id;
  const char *element = L->element;
  L->element = NULL; /* until the id is known */
  if (!expect_type(L, obj, json_type_object) || !read_id(L, P, obj, prev, &id))
    return FALSE;
  g_autofree char *desc = g_strdup_printf("state %u", id);
  L->element = desc;
  gboolean ok = load_state_body(L, P, obj, id);
  if (ok)
    L->element = element;
  return ok;
}

static gboolean load_container_element(Loader *L, Program *P, WeirState *unused,
                                       json_object *obj, guint *prev) {
  (void)unused;
  return load_container(L, P, obj, prev);
}

static gboolean load_transition_body(Loader *L, Program *P, json_object *obj,
                                     guint id) {
  static const char *const keys[] = {"id",        "src",    "dst",
                                     "condition", "assign", NULL};
  guint src, dst;
  const char *condition;
  json_object *assign;
  if (!check_keys(L, obj, keys, NULL) || !get_ref(L, obj, "src", &src) ||
      !get_ref(L, obj, "dst", &dst) ||
      !get_string(L, obj, "condition", FALSE, &condition) ||
      !member(L, obj, "assign", json_type_object, FALSE, &assign))
    return FALSE;
  if (!weir_graph_state(P->g, src))
    return fail_at(L, "src", WEIR_ERROR_INVALID, "no state %u", src);
  if (!weir_graph_state(P->g, dst))
    return fail_at(L, "dst", WEIR_ERROR_INVALID, "no state %u", dst);
  g_autoptr(GError) local = NULL;
  WeirTransition *t =
      weir_graph_add_transition(P->g, src, dst, condition, &local);
  if (!t)
    return fail_at(L, "condition", local->code, "%s", local->message);
  t->id = id;
  if (!assign)
    return TRUE;
  path_key(L, "assign");
  struct json_object_iterator it = json_object_iter_begin(assign);
  struct json_object_iterator end = json_object_iter_end(assign);
  for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
    const char *name = json_object_iter_peek_name(&it);
    json_object *v = json_object_iter_peek_value(&it);
    gsize old = path_key(L, name);
    const char *text = NULL;
    if (!expect_type(L, v, json_type_string) || !string_value(L, v, &text))
      return FALSE;
    if (!weir_transition_add_assignment(t, name, text, &local))
      return fail(L, local->code, "%s", local->message);
    path_pop(L, old);
  }
  return TRUE;
}

static gboolean load_transition(Loader *L, Program *P, WeirState *unused,
                                json_object *obj, guint *prev) {
  (void)unused;
  guint id;
  const char *element = L->element;
  L->element = NULL; /* until the id is known */
  if (!expect_type(L, obj, json_type_object) || !read_id(L, P, obj, prev, &id))
    return FALSE;
  g_autofree char *desc = g_strdup_printf("transition %u", id);
  L->element = desc;
  gboolean ok = load_transition_body(L, P, obj, id);
  if (ok)
    L->element = element;
  return ok;
}

static gboolean load_program_body(Loader *L, Program *P, json_object *obj) {
  static const char *const keys[] = {
      "format", "version", "name",        "symbols", "containers",
      "start",  "states",  "transitions", "next_id", NULL};
  const char *format, *name;
  gint64 version, start, next_id = 0;
  g_autoptr(GPtrArray) symbols = NULL;
  if (!get_string(L, obj, "format", TRUE, &format))
    return FALSE;
  if (strcmp(format, WEIR_JSON_FORMAT) != 0)
    return fail_at(L, "format", WEIR_ERROR_PARSE,
                   "not a Weir program: format '%s', expected '%s'", format,
                   WEIR_JSON_FORMAT);
  /* The version comes before the key check: a newer version may have keys
   * this one does not know. */
  if (!get_int(L, obj, "version", TRUE, G_MININT64, G_MAXINT64, &version, NULL))
    return FALSE;
  if (version > WEIR_JSON_VERSION)
    return fail_at(L, "version", WEIR_ERROR_VERSION,
                   "the file has format version %" G_GINT64_FORMAT
                   "; this Weir reads version %d and older",
                   version, WEIR_JSON_VERSION);
  if (version < 1)
    return fail_at(L, "version", WEIR_ERROR_PARSE,
                   "invalid format version %" G_GINT64_FORMAT, version);
  if (!check_keys(L, obj, keys, NULL) ||
      !get_string(L, obj, "name", TRUE, &name) ||
      !get_strings(L, obj, "symbols", TRUE, TRUE, &symbols))
    return FALSE;
  g_free(P->g->name);
  P->g->name = g_strdup(name);
  for (guint i = 0; i < symbols->len; i++) {
    const char *sym = g_ptr_array_index(symbols, i);
    if (!is_identifier(sym)) {
      path_key(L, "symbols");
      path_index(L, i);
      return fail(L, WEIR_ERROR_INVALID, "'%s' is not an identifier", sym);
    }
    weir_graph_add_symbol(P->g, sym);
  }
  if (!load_array(L, P, NULL, obj, "containers", load_container_element) ||
      !get_int(L, obj, "start", TRUE, 1, G_MAXUINT - 1, &start, NULL) ||
      !load_array(L, P, NULL, obj, "states", load_state) ||
      !load_array(L, P, NULL, obj, "transitions", load_transition) ||
      !get_int(L, obj, "next_id", FALSE, 1, G_MAXUINT, &next_id, NULL))
    return FALSE;
  if (!weir_graph_state(P->g, (guint)start))
    return fail_at(L, "start", WEIR_ERROR_INVALID, "no state %" G_GINT64_FORMAT,
                   start);
  P->g->start = (guint)start;
  P->g->next_id = MAX((guint)next_id, P->max_id + 1);
  return TRUE;
}

/* Builds a graph from a program object (the current path); NULL on error. */
static WeirGraph *load_program(Loader *L, json_object *obj) {
  if (!expect_type(L, obj, json_type_object))
    return NULL;
  Program P = {
      .g = weir_graph_new(NULL),
      .ids = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free),
      .max_id = 0,
  };
  gboolean ok = load_program_body(L, &P, obj);
  g_hash_table_unref(P.ids);
  if (!ok) {
    weir_graph_free(P.g);
    return NULL;
  }
  return P.g;
}

/* 1-based line and column of byte offset in text. */
static void line_column(const char *text, gsize offset, guint *line,
                        guint *column) {
  *line = 1;
  *column = 1;
  for (gsize i = 0; i < offset; i++) {
    if (text[i] == '\n') {
      (*line)++;
      *column = 1;
    } else {
      (*column)++;
    }
  }
}

static gboolean syntax_error(GError **error, const char *source,
                             const char *text, gsize offset, const char *what) {
  guint line, column;
  line_column(text, offset, &line, &column);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
              "%s: line %u, column %u: JSON syntax error: %s", source, line,
              column, what);
  return FALSE;
}

/* Parses JSON text (len bytes, no terminator needed). */
static json_object *parse_text(const char *text, gsize len, const char *source,
                               GError **error) {
  const char *nul = memchr(text, '\0', len);
  if (nul) {
    syntax_error(error, source, text, (gsize)(nul - text),
                 "unexpected NUL byte");
    return NULL;
  }
  if (len >= (gsize)G_MAXINT) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: the text is too large (%" G_GSIZE_FORMAT " bytes)", source,
                len);
    return NULL;
  }
  /* The terminating NUL is passed too, so json-c knows the text ends
   * (otherwise a truncated number would wait for more digits). */
  g_autofree char *copy = g_strndup(text, len);
  json_tokener *tok = json_tokener_new_ex(JSON_MAX_DEPTH);
  json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
  json_object *root = json_tokener_parse_ex(tok, copy, (int)len + 1);
  enum json_tokener_error jerr = json_tokener_get_error(tok);
  gsize end = json_tokener_get_parse_end(tok);
  json_tokener_free(tok);
  if (!root || jerr != json_tokener_success) {
    json_object_put(root);
    if (jerr == json_tokener_success)
      syntax_error(error, source, copy, end, "no value");
    else
      syntax_error(error, source, copy, MIN(end, len),
                   json_tokener_error_desc(jerr));
    return NULL;
  }
  for (gsize i = end; i < len; i++) {
    if (!g_ascii_isspace(copy[i])) {
      json_object_put(root);
      syntax_error(error, source, copy, i, "unexpected text after the value");
      return NULL;
    }
  }
  return root;
}

/* ============================================================ entry points */

char *weir_graph_to_json(const WeirGraph *g) {
  g_return_val_if_fail(g != NULL, NULL);
  json_object *root = graph_json(g, -1);
  GString *out = g_string_new(NULL);
  emit(out, root, 0);
  g_string_append_c(out, '\n');
  json_object_put(root);
  return g_string_free(out, FALSE);
}

char *weir_graph_structure_json(const WeirGraph *g, gint64 literal_max) {
  g_return_val_if_fail(g != NULL && literal_max >= 0, NULL);
  json_object *root = graph_json(g, literal_max);
  GString *out = g_string_new(NULL);
  emit(out, root, 0);
  g_string_append_c(out, '\n');
  json_object_put(root);
  return g_string_free(out, FALSE);
}

/* Parses and loads the structure, without the validator. */
static WeirGraph *graph_from_json_structure(const char *text, gsize len,
                                            const char *source,
                                            GError **error) {
  json_object *root = parse_text(text, len, source, error);
  if (!root)
    return NULL;
  Loader L = {
      .source = source,
      .path = g_string_new(NULL),
      .element = NULL,
      .error = error,
  };
  WeirGraph *g = load_program(&L, root);
  g_string_free(L.path, TRUE);
  json_object_put(root);
  return g;
}

WeirGraph *weir_graph_from_json(const char *text, gssize len,
                                const char *source, GError **error) {
  g_return_val_if_fail(text != NULL, NULL);
  const char *src = source ? source : "<input>";
  gsize n = len < 0 ? strlen(text) : (gsize)len;
  g_autoptr(WeirGraph) g = graph_from_json_structure(text, n, src, error);
  if (!g)
    return NULL;
  g_autoptr(GError) local = NULL;
  if (!weir_graph_validate(g, &local)) {
    g_set_error(error, WEIR_ERROR, local->code, "%s: %s", src, local->message);
    return NULL;
  }
  return g_steal_pointer(&g);
}

gboolean weir_graph_save(const WeirGraph *g, const char *path, GError **error) {
  g_return_val_if_fail(g != NULL && path != NULL, FALSE);
  g_autofree char *text = weir_graph_to_json(g);
  g_autoptr(GError) local = NULL;
  if (!g_file_set_contents(path, text, -1, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: cannot save: %s", path,
                local->message);
    return FALSE;
  }
  return TRUE;
}

WeirGraph *weir_graph_load(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(path, &text, &len, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: cannot read: %s", path,
                local->message);
    return NULL;
  }
  return weir_graph_from_json(text, (gssize)len, path, error);
}
