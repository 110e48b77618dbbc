/* graph.c — the program graph: construction, lookup, copying, scopes.
 *
 * Every element array (containers, states, nodes, memlets, transitions) is
 * kept sorted by id.  New elements get g->next_id, which only grows, so
 * appending keeps the order and lookups can use binary search.  Removal
 * keeps the order too (g_ptr_array_remove_index, not _fast).
 */
#include <string.h>

#include "weir-graph.h"

/* ------------------------------------------------------------- name tables */

static const char *const node_kind_names[] = {
#define WEIR_X(id, name) name,
    WEIR_NODE_KINDS(WEIR_X)
#undef WEIR_X
};
G_STATIC_ASSERT(G_N_ELEMENTS(node_kind_names) == WEIR_NODE_KIND_COUNT);

static const char *const schedule_names[] = {
#define WEIR_X(id, name) name,
    WEIR_SCHEDULES(WEIR_X)
#undef WEIR_X
};
G_STATIC_ASSERT(G_N_ELEMENTS(schedule_names) == WEIR_SCHEDULE_COUNT);

static const char *const wcr_names[] = {
#define WEIR_X(id, name) name,
    WEIR_WCRS(WEIR_X)
#undef WEIR_X
};
G_STATIC_ASSERT(G_N_ELEMENTS(wcr_names) == WEIR_WCR_COUNT);

static const char *const attr_type_names[] = {
#define WEIR_X(id, name) name,
    WEIR_ATTR_TYPES(WEIR_X)
#undef WEIR_X
};
G_STATIC_ASSERT(G_N_ELEMENTS(attr_type_names) == WEIR_ATTR_TYPE_COUNT);

static gboolean lookup_name(const char *const *table, guint n, const char *name,
                            guint *out) {
  for (guint i = 0; i < n; i++) {
    if (g_strcmp0(table[i], name) == 0) {
      *out = i;
      return TRUE;
    }
  }
  return FALSE;
}

const char *weir_node_kind_name(WeirNodeKind kind) {
  g_return_val_if_fail(kind < WEIR_NODE_KIND_COUNT, "?");
  return node_kind_names[kind];
}

gboolean weir_node_kind_from_name(const char *name, WeirNodeKind *out) {
  guint i;
  if (!lookup_name(node_kind_names, WEIR_NODE_KIND_COUNT, name, &i))
    return FALSE;
  *out = (WeirNodeKind)i;
  return TRUE;
}

const char *weir_schedule_name(WeirSchedule s) {
  g_return_val_if_fail(s < WEIR_SCHEDULE_COUNT, "?");
  return schedule_names[s];
}

gboolean weir_schedule_from_name(const char *name, WeirSchedule *out) {
  guint i;
  if (!lookup_name(schedule_names, WEIR_SCHEDULE_COUNT, name, &i))
    return FALSE;
  *out = (WeirSchedule)i;
  return TRUE;
}

const char *weir_wcr_name(WeirWcr w) {
  g_return_val_if_fail(w < WEIR_WCR_COUNT, "?");
  return wcr_names[w];
}

gboolean weir_wcr_from_name(const char *name, WeirWcr *out) {
  guint i;
  if (!lookup_name(wcr_names, WEIR_WCR_COUNT, name, &i))
    return FALSE;
  *out = (WeirWcr)i;
  return TRUE;
}

const char *weir_attr_type_name(WeirAttrType t) {
  g_return_val_if_fail(t < WEIR_ATTR_TYPE_COUNT, "?");
  return attr_type_names[t];
}

/* ------------------------------------------------------------------ ranges */

void weir_range_clear(WeirRange *r) {
  g_clear_pointer(&r->begin, weir_expr_unref);
  g_clear_pointer(&r->end, weir_expr_unref);
  g_clear_pointer(&r->step, weir_expr_unref);
}

void weir_range_copy(const WeirRange *src, WeirRange *dst) {
  dst->begin = weir_expr_ref(src->begin);
  dst->end = weir_expr_ref(src->end);
  dst->step = weir_expr_ref(src->step);
}

/* Splits text at top-level occurrences of sep (outside parentheses). */
static GPtrArray *split_top_level(const char *text, char sep) {
  GPtrArray *parts = g_ptr_array_new_with_free_func(g_free);
  int depth = 0;
  const char *start = text;
  for (const char *p = text;; p++) {
    if (*p == '(' || *p == '[')
      depth++;
    else if (*p == ')' || *p == ']')
      depth--;
    if (*p == '\0' || (*p == sep && depth == 0)) {
      g_ptr_array_add(parts, g_strndup(start, (gsize)(p - start)));
      if (*p == '\0')
        break;
      start = p + 1;
    }
  }
  return parts;
}

/* Splits a range at top-level ':' — but "//" contains no ':' so a plain
 * split is safe. */
gboolean weir_range_parse(const char *text, WeirRange *out, GError **error) {
  g_autoptr(GPtrArray) parts = split_top_level(text, ':');
  memset(out, 0, sizeof *out);
  if (parts->len > 3) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "range '%s': expected begin:end[:step]", text);
    return FALSE;
  }
  g_autoptr(GError) local = NULL;
  WeirExpr *begin = weir_expr_parse(g_ptr_array_index(parts, 0), &local);
  if (!begin)
    goto fail;
  if (parts->len == 1) {
    out->begin = begin;
    out->end = weir_expr_add_const(begin, 1);
    out->step = weir_expr_const(1);
    return TRUE;
  }
  WeirExpr *end = weir_expr_parse(g_ptr_array_index(parts, 1), &local);
  if (!end) {
    weir_expr_unref(begin);
    goto fail;
  }
  WeirExpr *step = NULL;
  if (parts->len == 3) {
    step = weir_expr_parse(g_ptr_array_index(parts, 2), &local);
    if (!step) {
      weir_expr_unref(begin);
      weir_expr_unref(end);
      goto fail;
    }
  } else {
    step = weir_expr_const(1);
  }
  out->begin = begin;
  out->end = end;
  out->step = step;
  return TRUE;
fail:
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE, "range '%s': %s", text,
              local->message);
  return FALSE;
}

char *weir_range_to_string(const WeirRange *r) {
  g_autofree char *b = weir_expr_to_string(r->begin);
  gint64 step = 0;
  gboolean unit_step = weir_expr_is_const(r->step, &step) && step == 1;
  if (unit_step) {
    g_autoptr(WeirExpr) b1 = weir_expr_add_const(r->begin, 1);
    if (weir_expr_equal(b1, r->end))
      return g_steal_pointer(&b);
  }
  g_autofree char *e = weir_expr_to_string(r->end);
  if (unit_step)
    return g_strdup_printf("%s:%s", b, e);
  g_autofree char *s = weir_expr_to_string(r->step);
  return g_strdup_printf("%s:%s:%s", b, e, s);
}

WeirExpr *weir_range_last(const WeirRange *r) {
  g_return_val_if_fail(r != NULL, NULL);
  gint64 step;
  if (!weir_expr_is_const(r->step, &step) || step <= 0)
    return NULL;
  g_autoptr(WeirExpr) end1 = weir_expr_add_const(r->end, -1);
  if (step == 1)
    return g_steal_pointer(&end1);
  g_autoptr(WeirExpr) span = weir_expr_sub(end1, r->begin);
  g_autoptr(WeirExpr) q = weir_expr_floordiv(span, r->step);
  g_autoptr(WeirExpr) off = weir_expr_mul(q, r->step);
  return weir_expr_add(r->begin, off);
}

WeirExpr *weir_range_size(const WeirRange *r) {
  g_autoptr(WeirExpr) diff = weir_expr_sub(r->end, r->begin);
  gint64 step = 0;
  if (weir_expr_is_const(r->step, &step) && step == 1) {
    gint64 d;
    if (weir_expr_is_const(diff, &d))
      return weir_expr_const(d < 0 ? 0 : d);
    return g_steal_pointer(&diff);
  }
  /* When the step divides the extent exactly (2*N with step 2), the size
   * is the plain quotient; otherwise round up. */
  if (weir_expr_is_const(r->step, &step) && step > 0) {
    g_autoptr(WeirExpr) q = weir_expr_floordiv(diff, r->step);
    g_autoptr(WeirExpr) back = weir_expr_mul(q, r->step);
    if (weir_expr_equal(back, diff) && weir_expr_kind(q) != WEIR_EXPR_FLOORDIV)
      return g_steal_pointer(&q);
  }
  g_autoptr(WeirExpr) num = weir_expr_add(diff, r->step);
  g_autoptr(WeirExpr) num1 = weir_expr_add_const(num, -1);
  WeirExpr *size = weir_expr_floordiv(num1, r->step);
  gint64 v;
  if (weir_expr_is_const(size, &v) && v < 0) {
    weir_expr_unref(size);
    return weir_expr_const(0);
  }
  return size;
}

WeirSubset *weir_subset_parse(const char *text, GError **error) {
  WeirSubset *s = g_new0(WeirSubset, 1);
  g_autofree char *stripped = g_strstrip(g_strdup(text ? text : ""));
  if (*stripped == '\0')
    return s;
  g_autoptr(GPtrArray) parts = split_top_level(stripped, ',');
  s->rank = parts->len;
  s->dims = g_new0(WeirRange, s->rank);
  for (guint i = 0; i < parts->len; i++) {
    g_autoptr(GError) local = NULL;
    if (!weir_range_parse(g_ptr_array_index(parts, i), &s->dims[i], &local)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "subset '%s', dimension %u: %s", stripped, i, local->message);
      weir_subset_free(s);
      return NULL;
    }
  }
  return s;
}

char *weir_subset_to_string(const WeirSubset *s) {
  GString *out = g_string_new(NULL);
  for (guint i = 0; i < s->rank; i++) {
    g_autofree char *r = weir_range_to_string(&s->dims[i]);
    if (i)
      g_string_append(out, ", ");
    g_string_append(out, r);
  }
  return g_string_free(out, FALSE);
}

WeirSubset *weir_subset_copy(const WeirSubset *s) {
  WeirSubset *c = g_new0(WeirSubset, 1);
  c->rank = s->rank;
  c->dims = g_new0(WeirRange, s->rank);
  for (guint i = 0; i < s->rank; i++)
    weir_range_copy(&s->dims[i], &c->dims[i]);
  return c;
}

void weir_subset_free(WeirSubset *s) {
  if (!s)
    return;
  for (guint i = 0; i < s->rank; i++)
    weir_range_clear(&s->dims[i]);
  g_free(s->dims);
  g_free(s);
}

gboolean weir_subset_equal(const WeirSubset *a, const WeirSubset *b) {
  if (a->rank != b->rank)
    return FALSE;
  for (guint i = 0; i < a->rank; i++) {
    if (!weir_expr_equal(a->dims[i].begin, b->dims[i].begin) ||
        !weir_expr_equal(a->dims[i].end, b->dims[i].end) ||
        !weir_expr_equal(a->dims[i].step, b->dims[i].step))
      return FALSE;
  }
  return TRUE;
}

WeirExpr *weir_subset_volume(const WeirSubset *s) {
  WeirExpr *v = weir_expr_const(1);
  for (guint i = 0; i < s->rank; i++) {
    g_autoptr(WeirExpr) size = weir_range_size(&s->dims[i]);
    WeirExpr *nv = weir_expr_mul(v, size);
    weir_expr_unref(v);
    v = nv;
  }
  return v;
}

gboolean weir_subset_is_point(const WeirSubset *s) {
  for (guint d = 0; d < s->rank; d++) {
    g_autoptr(WeirExpr) size = weir_range_size(&s->dims[d]);
    gint64 v;
    if (!weir_expr_is_const(size, &v) || v != 1)
      return FALSE;
  }
  return TRUE;
}

WeirSubset *weir_subset_substitute(const WeirSubset *s, GHashTable *map) {
  WeirSubset *c = g_new0(WeirSubset, 1);
  c->rank = s->rank;
  c->dims = g_new0(WeirRange, s->rank);
  for (guint i = 0; i < s->rank; i++) {
    c->dims[i].begin = weir_expr_substitute(s->dims[i].begin, map);
    c->dims[i].end = weir_expr_substitute(s->dims[i].end, map);
    c->dims[i].step = weir_expr_substitute(s->dims[i].step, map);
  }
  return c;
}

/* -------------------------------------------------------------- containers */

static gboolean is_identifier(const char *s) {
  if (!s || !(g_ascii_isalpha(*s) || *s == '_'))
    return FALSE;
  for (const char *p = s + 1; *p; p++)
    if (!(g_ascii_isalnum(*p) || *p == '_'))
      return FALSE;
  return TRUE;
}

static void container_free(gpointer p) {
  WeirContainer *c = p;
  g_free(c->name);
  g_ptr_array_unref(c->shape);
  g_ptr_array_unref(c->strides);
  g_clear_pointer(&c->initial, g_bytes_unref);
  g_free(c->initializer);
  g_free(c->count);
  g_free(c);
}

static GPtrArray *expr_array_new(void) {
  return g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
}

WeirExpr *weir_container_volume(const WeirContainer *c) {
  WeirExpr *v = weir_expr_const(1);
  for (guint i = 0; i < c->shape->len; i++) {
    WeirExpr *nv = weir_expr_mul(v, g_ptr_array_index(c->shape, i));
    weir_expr_unref(v);
    v = nv;
  }
  return v;
}

WeirExpr *weir_container_bytes(const WeirContainer *c) {
  g_autoptr(WeirExpr) v = weir_container_volume(c);
  return weir_expr_mul_const(v, (gint64)weir_dtype_size(c->dtype));
}

WeirSubset *weir_container_full_subset(const WeirContainer *c) {
  WeirSubset *s = g_new0(WeirSubset, 1);
  s->rank = c->shape->len;
  s->dims = g_new0(WeirRange, s->rank);
  for (guint i = 0; i < s->rank; i++) {
    s->dims[i].begin = weir_expr_const(0);
    s->dims[i].end = weir_expr_ref(g_ptr_array_index(c->shape, i));
    s->dims[i].step = weir_expr_const(1);
  }
  return s;
}

static void set_row_major_strides(WeirContainer *c) {
  g_ptr_array_set_size(c->strides, 0);
  guint rank = c->shape->len;
  WeirExpr **st = g_new0(WeirExpr *, rank ? rank : 1);
  WeirExpr *acc = weir_expr_const(1);
  for (guint i = rank; i-- > 0;) {
    st[i] = weir_expr_ref(acc);
    WeirExpr *next = weir_expr_mul(acc, g_ptr_array_index(c->shape, i));
    weir_expr_unref(acc);
    acc = next;
  }
  weir_expr_unref(acc);
  for (guint i = 0; i < rank; i++)
    g_ptr_array_add(c->strides, st[i]);
  g_free(st);
}

/* ------------------------------------------------------------------- graph */

static void node_free(gpointer p);
static void memlet_free(gpointer p);

static void state_free(gpointer p) {
  WeirState *s = p;
  g_free(s->label);
  g_ptr_array_unref(s->nodes);
  g_ptr_array_unref(s->edges);
  g_free(s);
}

static void transition_free(gpointer p) {
  WeirTransition *t = p;
  g_free(t->condition_text);
  g_clear_pointer(&t->condition, weir_code_free);
  g_ptr_array_unref(t->assign_names);
  g_ptr_array_unref(t->assign_values);
  g_free(t);
}

WeirGraph *weir_graph_new(const char *name) {
  WeirGraph *g = g_new0(WeirGraph, 1);
  g->name = g_strdup(name ? name : "program");
  g->symbols = g_ptr_array_new_with_free_func(g_free);
  g->containers = g_ptr_array_new_with_free_func(container_free);
  g->by_name = g_hash_table_new(g_str_hash, g_str_equal);
  g->states = g_ptr_array_new_with_free_func(state_free);
  g->transitions = g_ptr_array_new_with_free_func(transition_free);
  g->next_id = 1;
  return g;
}

void weir_graph_free(WeirGraph *g) {
  if (!g)
    return;
  g_free(g->name);
  g_ptr_array_unref(g->symbols);
  g_hash_table_unref(g->by_name);
  g_ptr_array_unref(g->containers);
  g_ptr_array_unref(g->states);
  g_ptr_array_unref(g->transitions);
  g_free(g);
}

static int cmp_str(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

gboolean weir_graph_add_symbol(WeirGraph *g, const char *name) {
  if (weir_graph_has_symbol(g, name))
    return FALSE;
  g_ptr_array_add(g->symbols, g_strdup(name));
  g_ptr_array_sort(g->symbols, cmp_str);
  return TRUE;
}

gboolean weir_graph_has_symbol(const WeirGraph *g, const char *name) {
  for (guint i = 0; i < g->symbols->len; i++)
    if (strcmp(g_ptr_array_index(g->symbols, i), name) == 0)
      return TRUE;
  return FALSE;
}

WeirContainer *weir_graph_add_container(WeirGraph *g, const char *name,
                                        WeirDType dtype, guint rank,
                                        WeirExpr *const *shape,
                                        gboolean transient, GError **error) {
  if (!is_identifier(name)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "container name '%s' is not an identifier", name ? name : "");
    return NULL;
  }
  if (g_hash_table_contains(g->by_name, name)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "container '%s' already exists", name);
    return NULL;
  }
  WeirContainer *c = g_new0(WeirContainer, 1);
  c->id = g->next_id++;
  c->name = g_strdup(name);
  c->dtype = dtype;
  c->shape = expr_array_new();
  c->strides = expr_array_new();
  for (guint i = 0; i < rank; i++)
    g_ptr_array_add(c->shape, weir_expr_ref(shape[i]));
  set_row_major_strides(c);
  c->transient = transient;
  g_ptr_array_add(g->containers, c);
  g_hash_table_insert(g->by_name, c->name, c);
  return c;
}

WeirContainer *weir_graph_add_array(WeirGraph *g, const char *name,
                                    WeirDType dtype, const char *shape,
                                    gboolean transient, GError **error) {
  g_autoptr(GPtrArray) dims = expr_array_new();
  g_autofree char *stripped = g_strstrip(g_strdup(shape ? shape : ""));
  if (*stripped) {
    g_autoptr(GPtrArray) parts = split_top_level(stripped, ',');
    for (guint i = 0; i < parts->len; i++) {
      g_autoptr(GError) local = NULL;
      WeirExpr *e = weir_expr_parse(g_ptr_array_index(parts, i), &local);
      if (!e) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                    "container '%s': shape '%s': %s", name, stripped,
                    local->message);
        return NULL;
      }
      g_ptr_array_add(dims, e);
    }
  }
  return weir_graph_add_container(g, name, dtype, dims->len,
                                  (WeirExpr *const *)dims->pdata, transient,
                                  error);
}

WeirContainer *weir_graph_container(const WeirGraph *g, const char *name) {
  if (!name)
    return NULL;
  return g_hash_table_lookup(g->by_name, name);
}

gboolean weir_graph_remove_container(WeirGraph *g, const char *name) {
  WeirContainer *c = weir_graph_container(g, name);
  if (!c)
    return FALSE;
  g_hash_table_remove(g->by_name, name);
  g_ptr_array_remove(g->containers, c);
  return TRUE;
}

void weir_container_set_strides(WeirContainer *c, WeirExpr *const *strides) {
  g_ptr_array_set_size(c->strides, 0);
  for (guint i = 0; i < c->shape->len; i++)
    g_ptr_array_add(c->strides, weir_expr_ref(strides[i]));
}

void weir_container_set_initial(WeirContainer *c, GBytes *data) {
  g_clear_pointer(&c->initial, g_bytes_unref);
  if (data)
    c->initial = g_bytes_ref(data);
}

void weir_container_set_initializer(WeirContainer *c, const char *name) {
  char *copy = g_strdup(name);
  g_free(c->initializer);
  c->initializer = copy;
}

void weir_container_set_count(WeirContainer *c, const char *count, guint dim) {
  char *copy = g_strdup(count);
  g_free(c->count);
  c->count = copy;
  c->count_dim = count ? dim : 0;
}

/* Binary search in an array of elements whose first field is a guint id. */
static gpointer find_by_id(GPtrArray *arr, guint id, guint *index_out) {
  guint lo = 0, hi = arr->len;
  /* Ids come from one counter per program, so in a large state they are
   * nearly evenly spread: an interpolated guess lands at or next to the
   * element.  Guesses alternate with halvings, which keeps the worst case
   * logarithmic. */
  for (guint step = 0; lo < hi; step++) {
    guint mid = lo + (hi - lo) / 2;
    if (!(step & 1) && hi - lo > 2) {
      guint first = *(const guint *)g_ptr_array_index(arr, lo);
      guint last = *(const guint *)g_ptr_array_index(arr, hi - 1);
      if (id < first || id > last)
        return NULL;
      if (last > first)
        mid = lo +
              (guint)((guint64)(id - first) * (hi - 1 - lo) / (last - first));
    }
    guint mid_id = *(const guint *)g_ptr_array_index(arr, mid);
    if (mid_id == id) {
      if (index_out)
        *index_out = mid;
      return g_ptr_array_index(arr, mid);
    }
    if (mid_id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

WeirState *weir_graph_add_state(WeirGraph *g, const char *label) {
  WeirState *s = g_new0(WeirState, 1);
  s->id = g->next_id++;
  s->label = g_strdup(label ? label : "state");
  s->nodes = g_ptr_array_new_with_free_func(node_free);
  s->edges = g_ptr_array_new_with_free_func(memlet_free);
  g_ptr_array_add(g->states, s);
  if (g->start == 0)
    g->start = s->id;
  return s;
}

WeirState *weir_graph_state(const WeirGraph *g, guint id) {
  return find_by_id(g->states, id, NULL);
}

WeirTransition *weir_graph_transition(const WeirGraph *g, guint id) {
  return find_by_id(g->transitions, id, NULL);
}

void weir_graph_set_start(WeirGraph *g, guint state_id) {
  g->start = state_id;
}

WeirTransition *weir_graph_add_transition(WeirGraph *g, guint src, guint dst,
                                          const char *condition,
                                          GError **error) {
  WeirCode *code = NULL;
  if (condition) {
    g_autoptr(GError) local = NULL;
    code = weir_code_parse_condition(condition, &local);
    if (!code) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "transition condition '%s': %s", condition, local->message);
      return NULL;
    }
  }
  WeirTransition *t = g_new0(WeirTransition, 1);
  t->id = g->next_id++;
  t->src = src;
  t->dst = dst;
  t->condition_text = g_strdup(condition);
  t->condition = code;
  t->assign_names = g_ptr_array_new_with_free_func(g_free);
  t->assign_values = expr_array_new();
  g_ptr_array_add(g->transitions, t);
  return t;
}

gboolean weir_transition_add_assignment(WeirTransition *t, const char *symbol,
                                        const char *value, GError **error) {
  if (!is_identifier(symbol)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "assignment target '%s' is not an identifier",
                symbol ? symbol : "");
    return FALSE;
  }
  g_autoptr(GError) local = NULL;
  WeirExpr *e = weir_expr_parse(value, &local);
  if (!e) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE, "assignment %s = %s: %s",
                symbol, value, local->message);
    return FALSE;
  }
  g_ptr_array_add(t->assign_names, g_strdup(symbol));
  g_ptr_array_add(t->assign_values, e);
  return TRUE;
}

static void collect_data_reads(const WeirGraph *g, const WeirAst *n,
                               GPtrArray *out) {
  if (!n)
    return;
  if ((n->kind == WEIR_AST_NAME || n->kind == WEIR_AST_INDEX) && n->name &&
      !weir_graph_has_symbol(g, n->name)) {
    const WeirContainer *c = weir_graph_container(g, n->name);
    gboolean seen = FALSE;
    for (guint i = 0; c && i < out->len && !seen; i++)
      seen = strcmp(g_ptr_array_index(out, i), c->name) == 0;
    if (c && !seen)
      g_ptr_array_add(out, c->name);
  }
  collect_data_reads(g, n->a, out);
  collect_data_reads(g, n->b, out);
  collect_data_reads(g, n->c, out);
  for (guint i = 0; n->args && i < n->args->len; i++)
    collect_data_reads(g, g_ptr_array_index(n->args, i), out);
}

GPtrArray *weir_transition_data_reads(const WeirGraph *g,
                                      const WeirTransition *t) {
  g_return_val_if_fail(g != NULL && t != NULL, NULL);
  GPtrArray *out = g_ptr_array_new();
  if (t->condition)
    collect_data_reads(g, t->condition->expr, out);
  return out;
}

gboolean weir_graph_condition_reads(const WeirGraph *g, const char *name) {
  g_return_val_if_fail(g != NULL && name != NULL, FALSE);
  for (guint i = 0; i < g->transitions->len; i++) {
    const WeirTransition *t = g_ptr_array_index(g->transitions, i);
    if (!t->condition)
      continue;
    g_autoptr(GPtrArray) r = weir_transition_data_reads(g, t);
    for (guint k = 0; k < r->len; k++)
      if (strcmp(g_ptr_array_index(r, k), name) == 0)
        return TRUE;
  }
  return FALSE;
}

/* ------------------------------------------------------------------- nodes */

static void attr_free(gpointer p) {
  WeirAttr *a = p;
  g_free(a->name);
  g_free(a->s);
  g_clear_pointer(&a->ints, g_array_unref);
  g_clear_pointer(&a->floats, g_array_unref);
  g_clear_pointer(&a->strings, g_ptr_array_unref);
  g_free(a);
}

static void binding_free(gpointer p) {
  WeirSymbolBinding *b = p;
  g_free(b->name);
  weir_expr_unref(b->value);
  g_free(b);
}

static void map_free(WeirMap *m) {
  if (!m)
    return;
  g_ptr_array_unref(m->params);
  for (guint i = 0; i < m->ranges->len; i++)
    weir_range_clear(&g_array_index(m->ranges, WeirRange, i));
  g_array_unref(m->ranges);
  g_array_unref(m->tile);
  g_free(m);
}

static void node_free(gpointer p) {
  WeirNode *n = p;
  g_free(n->label);
  g_ptr_array_unref(n->in_conns);
  g_ptr_array_unref(n->out_conns);
  g_free(n->data);
  g_free(n->code_text);
  g_clear_pointer(&n->code, weir_code_free);
  map_free(n->map);
  g_free(n->op);
  g_clear_pointer(&n->attrs, g_ptr_array_unref);
  g_clear_pointer(&n->nested, weir_graph_free);
  g_clear_pointer(&n->symbol_map, g_ptr_array_unref);
  g_free(n);
}

static GPtrArray *strv_to_array(const char *const *v) {
  GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; v && v[i]; i++)
    g_ptr_array_add(a, g_strdup(v[i]));
  return a;
}

static WeirNode *node_add(WeirGraph *g, WeirState *s, WeirNodeKind kind,
                          const char *label, const char *const *ins,
                          const char *const *outs) {
  WeirNode *n = g_new0(WeirNode, 1);
  n->id = g->next_id++;
  n->kind = kind;
  n->label = g_strdup(label ? label : weir_node_kind_name(kind));
  n->in_conns = strv_to_array(ins);
  n->out_conns = strv_to_array(outs);
  g_ptr_array_add(s->nodes, n);
  return n;
}

WeirNode *weir_state_add_access(WeirGraph *g, WeirState *s, const char *data) {
  WeirNode *n = node_add(g, s, WEIR_NODE_ACCESS, data, NULL, NULL);
  n->data = g_strdup(data);
  return n;
}

WeirNode *weir_state_add_tasklet(WeirGraph *g, WeirState *s, const char *label,
                                 const char *const *ins,
                                 const char *const *outs, const char *code) {
  WeirNode *n = node_add(g, s, WEIR_NODE_TASKLET, label, ins, outs);
  n->code_text = g_strdup(code ? code : "");
  n->code = weir_code_parse(n->code_text, NULL);
  return n;
}

static WeirMap *map_new(void) {
  WeirMap *m = g_new0(WeirMap, 1);
  m->params = g_ptr_array_new_with_free_func(g_free);
  m->ranges = g_array_new(FALSE, TRUE, sizeof(WeirRange));
  m->tile = g_array_new(FALSE, TRUE, sizeof(gint64));
  return m;
}

WeirNode *weir_state_add_map(WeirGraph *g, WeirState *s, const char *label,
                             const char *const *params,
                             const char *const *ranges, WeirSchedule schedule,
                             WeirNode **exit_out, GError **error) {
  guint np = params ? g_strv_length((char **)params) : 0;
  guint nr = ranges ? g_strv_length((char **)ranges) : 0;
  if (np == 0 || np != nr) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "map '%s': %u parameters but %u ranges", label ? label : "", np,
                nr);
    return NULL;
  }
  WeirMap *m = map_new();
  for (guint i = 0; i < np; i++) {
    WeirRange r;
    g_autoptr(GError) local = NULL;
    if (!is_identifier(params[i])) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "map '%s': parameter '%s' is not an identifier",
                  label ? label : "", params[i]);
      map_free(m);
      return NULL;
    }
    if (!weir_range_parse(ranges[i], &r, &local)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE, "map '%s': %s",
                  label ? label : "", local->message);
      map_free(m);
      return NULL;
    }
    g_ptr_array_add(m->params, g_strdup(params[i]));
    g_array_append_val(m->ranges, r);
  }
  m->schedule = schedule;
  WeirNode *entry = node_add(g, s, WEIR_NODE_MAP_ENTRY, label, NULL, NULL);
  entry->map = m;
  WeirNode *exit = node_add(g, s, WEIR_NODE_MAP_EXIT, label, NULL, NULL);
  exit->entry = entry->id;
  if (exit_out)
    *exit_out = exit;
  return entry;
}

WeirNode *weir_state_add_library(WeirGraph *g, WeirState *s, const char *label,
                                 const char *op, const char *const *ins,
                                 const char *const *outs) {
  WeirNode *n =
      node_add(g, s, WEIR_NODE_LIBRARY, label ? label : op, ins, outs);
  n->op = g_strdup(op);
  n->attrs = g_ptr_array_new_with_free_func(attr_free);
  return n;
}

WeirNode *weir_state_add_nested(WeirGraph *g, WeirState *s, const char *label,
                                WeirGraph *nested, const char *const *ins,
                                const char *const *outs) {
  WeirNode *n = node_add(g, s, WEIR_NODE_NESTED, label, ins, outs);
  n->nested = nested;
  n->symbol_map = g_ptr_array_new_with_free_func(binding_free);
  return n;
}

static int cmp_binding(gconstpointer a, gconstpointer b) {
  const WeirSymbolBinding *x = *(WeirSymbolBinding *const *)a;
  const WeirSymbolBinding *y = *(WeirSymbolBinding *const *)b;
  return strcmp(x->name, y->name);
}

gboolean weir_node_bind_symbol(WeirNode *n, const char *name, const char *value,
                               GError **error) {
  g_return_val_if_fail(n->kind == WEIR_NODE_NESTED, FALSE);
  g_autoptr(GError) local = NULL;
  WeirExpr *e = weir_expr_parse(value, &local);
  if (!e) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "nested node '%s': symbol %s = %s: %s", n->label, name, value,
                local->message);
    return FALSE;
  }
  for (guint i = 0; i < n->symbol_map->len; i++) {
    WeirSymbolBinding *b = g_ptr_array_index(n->symbol_map, i);
    if (strcmp(b->name, name) == 0) {
      weir_expr_unref(b->value);
      b->value = e;
      return TRUE;
    }
  }
  WeirSymbolBinding *b = g_new0(WeirSymbolBinding, 1);
  b->name = g_strdup(name);
  b->value = e;
  g_ptr_array_add(n->symbol_map, b);
  g_ptr_array_sort(n->symbol_map, cmp_binding);
  return TRUE;
}

WeirNode *weir_state_node(const WeirState *s, guint id) {
  return find_by_id(s->nodes, id, NULL);
}

WeirNode *weir_graph_node(const WeirGraph *g, guint id, WeirState **state_out) {
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    WeirNode *n = weir_state_node(s, id);
    if (n) {
      if (state_out)
        *state_out = s;
      return n;
    }
  }
  return NULL;
}

WeirNode *weir_state_map_exit(const WeirState *s, const WeirNode *entry) {
  if (!entry || entry->kind != WEIR_NODE_MAP_ENTRY)
    return NULL;
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_MAP_EXIT && n->entry == entry->id)
      return n;
  }
  return NULL;
}

gboolean weir_state_remove_node(WeirState *s, guint id) {
  guint index;
  if (!find_by_id(s->nodes, id, &index))
    return FALSE;
  for (guint i = s->edges->len; i-- > 0;) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->src == id || m->dst == id)
      g_ptr_array_remove_index(s->edges, i);
  }
  g_ptr_array_remove_index(s->nodes, index);
  return TRUE;
}

static gboolean has_conn(GPtrArray *conns, const char *name) {
  if (!name)
    return FALSE;
  for (guint i = 0; i < conns->len; i++)
    if (strcmp(g_ptr_array_index(conns, i), name) == 0)
      return TRUE;
  return FALSE;
}

gboolean weir_node_has_in_conn(const WeirNode *n, const char *name) {
  return has_conn(n->in_conns, name);
}

gboolean weir_node_has_out_conn(const WeirNode *n, const char *name) {
  return has_conn(n->out_conns, name);
}

void weir_node_add_in_conn(WeirNode *n, const char *name) {
  if (!has_conn(n->in_conns, name))
    g_ptr_array_add(n->in_conns, g_strdup(name));
}

void weir_node_add_out_conn(WeirNode *n, const char *name) {
  if (!has_conn(n->out_conns, name))
    g_ptr_array_add(n->out_conns, g_strdup(name));
}

/* -------------------------------------------------------------- attributes */

static int cmp_attr(gconstpointer a, gconstpointer b) {
  const WeirAttr *x = *(WeirAttr *const *)a;
  const WeirAttr *y = *(WeirAttr *const *)b;
  return strcmp(x->name, y->name);
}

static WeirAttr *attr_replace(WeirNode *n, const char *name,
                              WeirAttrType type) {
  g_return_val_if_fail(n->attrs != NULL, NULL);
  for (guint i = 0; i < n->attrs->len; i++) {
    WeirAttr *a = g_ptr_array_index(n->attrs, i);
    if (strcmp(a->name, name) == 0) {
      g_ptr_array_remove_index(n->attrs, i);
      break;
    }
  }
  WeirAttr *a = g_new0(WeirAttr, 1);
  a->name = g_strdup(name);
  a->type = type;
  g_ptr_array_add(n->attrs, a);
  g_ptr_array_sort(n->attrs, cmp_attr);
  return a;
}

void weir_node_set_attr_int(WeirNode *n, const char *name, gint64 v) {
  attr_replace(n, name, WEIR_ATTR_INT)->i = v;
}

void weir_node_set_attr_float(WeirNode *n, const char *name, double v) {
  attr_replace(n, name, WEIR_ATTR_FLOAT)->f = v;
}

void weir_node_set_attr_string(WeirNode *n, const char *name, const char *v) {
  attr_replace(n, name, WEIR_ATTR_STRING)->s = g_strdup(v ? v : "");
}

void weir_node_set_attr_ints(WeirNode *n, const char *name, const gint64 *v,
                             guint count) {
  WeirAttr *a = attr_replace(n, name, WEIR_ATTR_INTS);
  a->ints = g_array_sized_new(FALSE, FALSE, sizeof(gint64), count);
  if (count)
    g_array_append_vals(a->ints, v, count);
}

void weir_node_set_attr_floats(WeirNode *n, const char *name, const double *v,
                               guint count) {
  WeirAttr *a = attr_replace(n, name, WEIR_ATTR_FLOATS);
  a->floats = g_array_sized_new(FALSE, FALSE, sizeof(double), count);
  if (count)
    g_array_append_vals(a->floats, v, count);
}

void weir_node_set_attr_strings(WeirNode *n, const char *name,
                                const char *const *v, guint count) {
  WeirAttr *a = attr_replace(n, name, WEIR_ATTR_STRINGS);
  a->strings = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < count; i++)
    g_ptr_array_add(a->strings, g_strdup(v[i]));
}

const WeirAttr *weir_node_attr(const WeirNode *n, const char *name) {
  if (!n->attrs)
    return NULL;
  for (guint i = 0; i < n->attrs->len; i++) {
    WeirAttr *a = g_ptr_array_index(n->attrs, i);
    if (strcmp(a->name, name) == 0)
      return a;
  }
  return NULL;
}

gboolean weir_node_remove_attr(WeirNode *n, const char *name) {
  if (!n->attrs)
    return FALSE;
  for (guint i = 0; i < n->attrs->len; i++) {
    WeirAttr *a = g_ptr_array_index(n->attrs, i);
    if (strcmp(a->name, name) == 0) {
      g_ptr_array_remove_index(n->attrs, i);
      return TRUE;
    }
  }
  return FALSE;
}

/* ----------------------------------------------------------------- memlets */

static void memlet_free(gpointer p) {
  WeirMemlet *m = p;
  g_free(m->src_conn);
  g_free(m->dst_conn);
  g_free(m->data);
  weir_subset_free(m->subset);
  weir_subset_free(m->other);
  g_clear_pointer(&m->volume, weir_expr_unref);
  g_free(m);
}

WeirMemlet *weir_state_add_memlet(WeirGraph *g, WeirState *s, guint src,
                                  const char *src_conn, guint dst,
                                  const char *dst_conn, const char *data,
                                  const char *subset, GError **error) {
  if (!weir_state_node(s, src) || !weir_state_node(s, dst)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "state %u '%s': memlet %u -> %u names a node not in the state",
                s->id, s->label, src, dst);
    return NULL;
  }
  WeirSubset *sub = NULL;
  if (data) {
    sub = weir_subset_parse(subset, error);
    if (!sub)
      return NULL;
  }
  WeirMemlet *m = g_new0(WeirMemlet, 1);
  m->id = g->next_id++;
  m->src = src;
  m->dst = dst;
  m->src_conn = g_strdup(src_conn);
  m->dst_conn = g_strdup(dst_conn);
  m->data = g_strdup(data);
  m->subset = sub;
  m->volume = sub ? weir_subset_volume(sub) : weir_expr_const(0);
  m->wcr = WEIR_WCR_NONE;
  g_ptr_array_add(s->edges, m);
  return m;
}

void weir_memlet_set_volume(WeirMemlet *m, WeirExpr *volume) {
  WeirExpr *v = weir_expr_ref(volume);
  g_clear_pointer(&m->volume, weir_expr_unref);
  m->volume = v;
}

gboolean weir_memlet_set_other(WeirMemlet *m, const char *subset,
                               GError **error) {
  WeirSubset *o = NULL;
  if (subset) {
    o = weir_subset_parse(subset, error);
    if (!o)
      return FALSE;
  }
  weir_subset_free(m->other);
  m->other = o;
  return TRUE;
}

WeirMemlet *weir_state_memlet(const WeirState *s, guint id) {
  return find_by_id(s->edges, id, NULL);
}

gboolean weir_state_remove_memlet(WeirState *s, guint id) {
  guint index;
  if (!find_by_id(s->edges, id, &index))
    return FALSE;
  g_ptr_array_remove_index(s->edges, index);
  return TRUE;
}

/* ------------------------------------------------------------ edge index */

typedef struct {
  GPtrArray *in, *out; /* WeirMemlet* (borrowed), in id order; NULL until
                          the node has one */
} NodeEdges;

static void node_edges_clear(NodeEdges *ne) {
  g_clear_pointer(&ne->in, g_ptr_array_unref);
  g_clear_pointer(&ne->out, g_ptr_array_unref);
}

static void node_edges_free(gpointer p) {
  node_edges_clear(p);
  g_free(p);
}

struct _WeirEdgeIndex {
  const WeirState *s;
  /* the state's node ids when the index was made (sorted) and their
   * memlets: one allocation each, looked up like find_by_id, instead of a
   * hash table entry and a record per node */
  guint n;
  guint *ids;
  NodeEdges *edges;
  GHashTable *others;   /* memlet ends that are no node of the state: id ->
                           NodeEdges* (owned), or NULL */
  GPtrArray *none;      /* empty: the memlets of a node without any */
  WeirEdgeIndex *outer; /* the index that was current before this one */
};

/* The innermost index of the calling thread (a stack through ->outer). */
static GPrivate current_edge_index;

/* Position of id in ids[0..n) (sorted), or -1: interpolation alternating
 * with halving, as find_by_id. */
static gint64 id_position(const guint *ids, guint n, guint id) {
  guint lo = 0, hi = n;
  for (guint step = 0; lo < hi; step++) {
    guint mid = lo + (hi - lo) / 2;
    if (!(step & 1) && hi - lo > 2) {
      guint first = ids[lo], last = ids[hi - 1];
      if (id < first || id > last)
        return -1;
      if (last > first)
        mid = lo +
              (guint)((guint64)(id - first) * (hi - 1 - lo) / (last - first));
    }
    if (ids[mid] == id)
      return mid;
    if (ids[mid] < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

static NodeEdges *node_edges_find(const WeirEdgeIndex *ix, guint node) {
  gint64 k = id_position(ix->ids, ix->n, node);
  if (k >= 0)
    return &ix->edges[k];
  return ix->others ? g_hash_table_lookup(ix->others, GUINT_TO_POINTER(node))
                    : NULL;
}

static void node_edges_add(WeirEdgeIndex *ix, guint node, gboolean input,
                           WeirMemlet *m) {
  NodeEdges *ne = node_edges_find(ix, node);
  if (!ne) {
    if (!ix->others)
      ix->others = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                         node_edges_free);
    ne = g_new0(NodeEdges, 1);
    g_hash_table_insert(ix->others, GUINT_TO_POINTER(node), ne);
  }
  GPtrArray **arr = input ? &ne->in : &ne->out;
  if (!*arr)
    *arr = g_ptr_array_new();
  g_ptr_array_add(*arr, m);
}

WeirEdgeIndex *weir_edge_index_begin(const WeirState *s) {
  g_return_val_if_fail(s != NULL, NULL);
  WeirEdgeIndex *ix = g_new0(WeirEdgeIndex, 1);
  ix->s = s;
  ix->n = s->nodes->len;
  ix->ids = g_new(guint, ix->n + 1);
  ix->edges = g_new0(NodeEdges, ix->n + 1);
  for (guint i = 0; i < ix->n; i++)
    ix->ids[i] = ((const WeirNode *)g_ptr_array_index(s->nodes, i))->id;
  ix->none = g_ptr_array_new();
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    node_edges_add(ix, m->dst, TRUE, m);
    node_edges_add(ix, m->src, FALSE, m);
  }
  ix->outer = g_private_get(&current_edge_index);
  g_private_set(&current_edge_index, ix);
  return ix;
}

void weir_edge_index_end(WeirEdgeIndex *ix) {
  if (!ix)
    return;
  /* Normally the innermost; unlink it wherever it is. */
  WeirEdgeIndex *cur = g_private_get(&current_edge_index);
  if (cur == ix) {
    g_private_set(&current_edge_index, ix->outer);
  } else {
    for (; cur && cur->outer != ix; cur = cur->outer)
      ;
    if (cur)
      cur->outer = ix->outer;
  }
  for (guint i = 0; i < ix->n; i++)
    node_edges_clear(&ix->edges[i]);
  g_free(ix->edges);
  g_free(ix->ids);
  g_clear_pointer(&ix->others, g_hash_table_unref);
  g_ptr_array_unref(ix->none);
  g_free(ix);
}

GPtrArray *weir_edge_index_memlets(const WeirEdgeIndex *ix, guint node,
                                   gboolean input) {
  const NodeEdges *ne = node_edges_find(ix, node);
  GPtrArray *arr = ne ? (input ? ne->in : ne->out) : NULL;
  return arr ? arr : ix->none;
}

/* The current index of s on this thread, or NULL. */
static const WeirEdgeIndex *edge_index_of(const WeirState *s) {
  for (const WeirEdgeIndex *ix = g_private_get(&current_edge_index); ix;
       ix = ix->outer)
    if (ix->s == s)
      return ix;
  return NULL;
}

const WeirMemlet *weir_state_connector_memlet(const WeirState *s, guint node,
                                              const char *conn, gboolean input,
                                              gboolean with_data) {
  const WeirEdgeIndex *ix = edge_index_of(s);
  GPtrArray *edges = ix ? weir_edge_index_memlets(ix, node, input) : s->edges;
  for (guint i = 0; i < edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(edges, i);
    if ((input ? m->dst : m->src) != node ||
        g_strcmp0(input ? m->dst_conn : m->src_conn, conn) != 0)
      continue;
    if (!with_data || m->data)
      return m;
  }
  return NULL;
}

GPtrArray *weir_state_in_edges(const WeirState *s, guint node) {
  const WeirEdgeIndex *ix = edge_index_of(s);
  if (ix)
    return g_ptr_array_copy(weir_edge_index_memlets(ix, node, TRUE), NULL,
                            NULL);
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->dst == node)
      g_ptr_array_add(out, m);
  }
  return out;
}

GPtrArray *weir_state_out_edges(const WeirState *s, guint node) {
  const WeirEdgeIndex *ix = edge_index_of(s);
  if (ix)
    return g_ptr_array_copy(weir_edge_index_memlets(ix, node, FALSE), NULL,
                            NULL);
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->src == node)
      g_ptr_array_add(out, m);
  }
  return out;
}

/* -------------------------------------------------------------------- copy */

static WeirMap *map_copy(const WeirMap *m) {
  WeirMap *c = map_new();
  for (guint i = 0; i < m->params->len; i++) {
    WeirRange r;
    g_ptr_array_add(c->params, g_strdup(g_ptr_array_index(m->params, i)));
    weir_range_copy(&g_array_index(m->ranges, WeirRange, i), &r);
    g_array_append_val(c->ranges, r);
  }
  c->schedule = m->schedule;
  if (m->tile->len)
    g_array_append_vals(c->tile, m->tile->data, m->tile->len);
  c->unroll = m->unroll;
  c->collapse = m->collapse;
  return c;
}

static WeirAttr *attr_copy(const WeirAttr *a) {
  WeirAttr *c = g_new0(WeirAttr, 1);
  c->name = g_strdup(a->name);
  c->type = a->type;
  c->i = a->i;
  c->f = a->f;
  c->s = g_strdup(a->s);
  if (a->ints)
    c->ints = g_array_copy(a->ints);
  if (a->floats)
    c->floats = g_array_copy(a->floats);
  if (a->strings) {
    c->strings = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < a->strings->len; i++)
      g_ptr_array_add(c->strings, g_strdup(g_ptr_array_index(a->strings, i)));
  }
  return c;
}

static GPtrArray *strarray_copy(GPtrArray *a) {
  GPtrArray *c = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < a->len; i++)
    g_ptr_array_add(c, g_strdup(g_ptr_array_index(a, i)));
  return c;
}

static WeirNode *node_copy(const WeirNode *n) {
  WeirNode *c = g_new0(WeirNode, 1);
  c->id = n->id;
  c->kind = n->kind;
  c->label = g_strdup(n->label);
  c->in_conns = strarray_copy(n->in_conns);
  c->out_conns = strarray_copy(n->out_conns);
  c->data = g_strdup(n->data);
  c->code_text = g_strdup(n->code_text);
  if (n->code)
    c->code = weir_code_copy(n->code);
  if (n->map)
    c->map = map_copy(n->map);
  c->entry = n->entry;
  c->op = g_strdup(n->op);
  if (n->attrs) {
    c->attrs = g_ptr_array_new_with_free_func(attr_free);
    for (guint i = 0; i < n->attrs->len; i++)
      g_ptr_array_add(c->attrs, attr_copy(g_ptr_array_index(n->attrs, i)));
  }
  if (n->nested)
    c->nested = weir_graph_copy(n->nested);
  if (n->symbol_map) {
    c->symbol_map = g_ptr_array_new_with_free_func(binding_free);
    for (guint i = 0; i < n->symbol_map->len; i++) {
      const WeirSymbolBinding *b = g_ptr_array_index(n->symbol_map, i);
      WeirSymbolBinding *cb = g_new0(WeirSymbolBinding, 1);
      cb->name = g_strdup(b->name);
      cb->value = weir_expr_ref(b->value);
      g_ptr_array_add(c->symbol_map, cb);
    }
  }
  return c;
}

static WeirMemlet *memlet_copy(const WeirMemlet *m) {
  WeirMemlet *c = g_new0(WeirMemlet, 1);
  c->id = m->id;
  c->src = m->src;
  c->dst = m->dst;
  c->src_conn = g_strdup(m->src_conn);
  c->dst_conn = g_strdup(m->dst_conn);
  c->data = g_strdup(m->data);
  if (m->subset)
    c->subset = weir_subset_copy(m->subset);
  if (m->other)
    c->other = weir_subset_copy(m->other);
  if (m->volume)
    c->volume = weir_expr_ref(m->volume);
  c->dynamic = m->dynamic;
  c->wcr = m->wcr;
  return c;
}

WeirGraph *weir_graph_copy(const WeirGraph *g) {
  WeirGraph *c = weir_graph_new(g->name);
  for (guint i = 0; i < g->symbols->len; i++)
    g_ptr_array_add(c->symbols, g_strdup(g_ptr_array_index(g->symbols, i)));
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *src = g_ptr_array_index(g->containers, i);
    WeirContainer *dst = g_new0(WeirContainer, 1);
    dst->id = src->id;
    dst->name = g_strdup(src->name);
    dst->dtype = src->dtype;
    dst->shape = expr_array_new();
    dst->strides = expr_array_new();
    for (guint d = 0; d < src->shape->len; d++)
      g_ptr_array_add(dst->shape,
                      weir_expr_ref(g_ptr_array_index(src->shape, d)));
    for (guint d = 0; d < src->strides->len; d++)
      g_ptr_array_add(dst->strides,
                      weir_expr_ref(g_ptr_array_index(src->strides, d)));
    dst->transient = src->transient;
    if (src->initial)
      dst->initial = g_bytes_ref(src->initial);
    dst->initializer = g_strdup(src->initializer);
    dst->count = g_strdup(src->count);
    dst->count_dim = src->count_dim;
    g_ptr_array_add(c->containers, dst);
    g_hash_table_insert(c->by_name, dst->name, dst);
  }
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *src = g_ptr_array_index(g->states, i);
    WeirState *dst = g_new0(WeirState, 1);
    dst->id = src->id;
    dst->label = g_strdup(src->label);
    dst->nodes = g_ptr_array_new_with_free_func(node_free);
    dst->edges = g_ptr_array_new_with_free_func(memlet_free);
    for (guint k = 0; k < src->nodes->len; k++)
      g_ptr_array_add(dst->nodes, node_copy(g_ptr_array_index(src->nodes, k)));
    for (guint k = 0; k < src->edges->len; k++)
      g_ptr_array_add(dst->edges,
                      memlet_copy(g_ptr_array_index(src->edges, k)));
    g_ptr_array_add(c->states, dst);
  }
  for (guint i = 0; i < g->transitions->len; i++) {
    const WeirTransition *src = g_ptr_array_index(g->transitions, i);
    WeirTransition *dst = g_new0(WeirTransition, 1);
    dst->id = src->id;
    dst->src = src->src;
    dst->dst = src->dst;
    dst->condition_text = g_strdup(src->condition_text);
    if (src->condition)
      dst->condition = weir_code_copy(src->condition);
    dst->assign_names = strarray_copy(src->assign_names);
    dst->assign_values = expr_array_new();
    for (guint k = 0; k < src->assign_values->len; k++)
      g_ptr_array_add(dst->assign_values,
                      weir_expr_ref(g_ptr_array_index(src->assign_values, k)));
    g_ptr_array_add(c->transitions, dst);
  }
  c->start = g->start;
  c->next_id = g->next_id;
  return c;
}

/* ------------------------------------------------------------------ scopes */

void weir_scopes_free(WeirScopes *sc) {
  if (!sc)
    return;
  g_array_unref(sc->order);
  g_hash_table_unref(sc->parent);
  g_free(sc);
}

guint weir_scopes_parent(const WeirScopes *sc, guint node) {
  return GPOINTER_TO_UINT(
      g_hash_table_lookup(sc->parent, GUINT_TO_POINTER(node)));
}

/* A state's memlets by node index (s->nodes is sorted by id, so index order
 * is id order): for every node its outgoing and incoming memlets, each list
 * in memlet id order (compressed rows: the memlets of node i are
 * out[out_start[i] .. out_start[i + 1]), as indices into s->edges). */
typedef struct {
  guint n;
  guint *src, *dst; /* per memlet: node index of each end */
  guint *out_start, *out;
  guint *in_start, *in;
} Adjacency;

static void adjacency_clear(Adjacency *a) {
  g_free(a->src);
  g_free(a->dst);
  g_free(a->out_start);
  g_free(a->out);
  g_free(a->in_start);
  g_free(a->in);
}

/* Fails (with the message weir_state_scopes always gave) on a memlet whose
 * end is not a node of the state. */
static gboolean adjacency_init(Adjacency *a, const WeirState *s,
                               GError **error) {
  guint n = s->nodes->len, e = s->edges->len;
  memset(a, 0, sizeof *a);
  a->n = n;
  a->src = g_new(guint, e + 1);
  a->dst = g_new(guint, e + 1);
  a->out_start = g_new0(guint, n + 2);
  a->in_start = g_new0(guint, n + 2);
  a->out = g_new(guint, e + 1);
  a->in = g_new(guint, e + 1);
  for (guint i = 0; i < e; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (!find_by_id(s->nodes, m->src, &a->src[i]) ||
        !find_by_id(s->nodes, m->dst, &a->dst[i])) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "state %u '%s': memlet %u joins %u -> %u, a node not in the "
                  "state",
                  s->id, s->label, m->id, m->src, m->dst);
      adjacency_clear(a);
      return FALSE;
    }
    a->out_start[a->src[i] + 2]++;
    a->in_start[a->dst[i] + 2]++;
  }
  /* counts at [i + 2] -> starts at [i + 1], then filled from [i + 1] so
   * that [i] ends up as the start of node i's row */
  for (guint i = 2; i < n + 2; i++) {
    a->out_start[i] += a->out_start[i - 1];
    a->in_start[i] += a->in_start[i - 1];
  }
  for (guint i = 0; i < e; i++) {
    a->out[a->out_start[a->src[i] + 1]++] = i;
    a->in[a->in_start[a->dst[i] + 1]++] = i;
  }
  return TRUE;
}

/* Min-heap of node indices. */
static void heap_push(GArray *h, guint v) {
  g_array_append_val(h, v);
  guint *a = (guint *)h->data;
  for (guint k = h->len - 1; k > 0;) {
    guint p = (k - 1) / 2;
    if (a[p] <= a[k])
      break;
    guint t = a[p];
    a[p] = a[k];
    a[k] = t;
    k = p;
  }
}

static guint heap_pop(GArray *h) {
  guint *a = (guint *)h->data;
  guint top = a[0];
  a[0] = a[h->len - 1];
  g_array_set_size(h, h->len - 1);
  a = (guint *)h->data;
  for (guint k = 0;;) {
    guint l = 2 * k + 1, r = l + 1, m = k;
    if (l < h->len && a[l] < a[m])
      m = l;
    if (r < h->len && a[r] < a[m])
      m = r;
    if (m == k)
      break;
    guint t = a[m];
    a[m] = a[k];
    a[k] = t;
    k = m;
  }
  return top;
}

/* Kahn's algorithm with a min-heap of ready nodes, so the order is
 * deterministic: among the nodes whose predecessors are all placed, the
 * smallest id goes first.  Appends node indices to order_idx. */
static gboolean topological_order(const WeirState *s, const Adjacency *a,
                                  GArray *order_idx, GError **error) {
  g_autofree guint *indeg = g_new0(guint, a->n + 1);
  for (guint i = 0; i < s->edges->len; i++)
    indeg[a->dst[i]]++;
  g_autoptr(GArray) ready = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < a->n; i++)
    if (indeg[i] == 0)
      heap_push(ready, i);
  while (ready->len) {
    guint i = heap_pop(ready);
    g_array_append_val(order_idx, i);
    for (guint k = a->out_start[i]; k < a->out_start[i + 1]; k++) {
      guint d = a->dst[a->out[k]];
      if (--indeg[d] == 0)
        heap_push(ready, d);
    }
  }
  if (order_idx->len != a->n) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "state %u '%s': the dataflow graph has a cycle", s->id,
                s->label);
    return FALSE;
  }
  return TRUE;
}

/* What a state's scopes are computed from: per node its id, kind and (for
 * an exit) entry, per memlet its ends.  Two states with the same key have
 * the same scopes. */
typedef struct {
  guint n_nodes, n_edges;
  guint len;
  guint *words;
  guint hash;
} ScopesKey;

static void scopes_key_init(ScopesKey *k, const WeirState *s) {
  k->n_nodes = s->nodes->len;
  k->n_edges = s->edges->len;
  k->len = 3 * k->n_nodes + 2 * k->n_edges;
  k->words = g_new(guint, k->len + 1);
  guint w = 0, h = 5381;
  for (guint i = 0; i < k->n_nodes; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    k->words[w++] = n->id;
    k->words[w++] = (guint)n->kind;
    k->words[w++] = n->kind == WEIR_NODE_MAP_EXIT ? n->entry : 0;
  }
  for (guint i = 0; i < k->n_edges; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    k->words[w++] = m->src;
    k->words[w++] = m->dst;
  }
  for (guint i = 0; i < k->len; i++)
    h = h * 33 + k->words[i];
  k->hash = h;
}

static gboolean scopes_key_equal(const ScopesKey *a, const ScopesKey *b) {
  return a->hash == b->hash && a->n_nodes == b->n_nodes &&
         a->n_edges == b->n_edges &&
         memcmp(a->words, b->words, a->len * sizeof(guint)) == 0;
}

/* The scopes of the last few distinct states computed, most recent first,
 * shared by all threads (under scopes_memo_lock).  Transformation matchers
 * and legality checks ask for the scopes of the same unchanged state once
 * per candidate; with the memo each distinct state is computed once.  A
 * hit is checked against the whole key, so a changed state is never
 * answered from the memo. */
#define SCOPES_MEMO_SIZE 8

typedef struct {
  ScopesKey key;
  WeirScopes *sc; /* owned */
} ScopesMemo;

static GMutex scopes_memo_lock;
static ScopesMemo scopes_memo[SCOPES_MEMO_SIZE];
static guint scopes_memo_len;

static WeirScopes *scopes_share(const WeirScopes *sc) {
  WeirScopes *c = g_new0(WeirScopes, 1);
  c->order = g_array_copy(sc->order);
  c->parent = g_hash_table_ref(sc->parent);
  return c;
}

static WeirScopes *scopes_memo_lookup(const ScopesKey *k) {
  WeirScopes *found = NULL;
  g_mutex_lock(&scopes_memo_lock);
  for (guint i = 0; i < scopes_memo_len; i++) {
    if (!scopes_key_equal(&scopes_memo[i].key, k))
      continue;
    ScopesMemo hit = scopes_memo[i];
    memmove(&scopes_memo[1], &scopes_memo[0], i * sizeof(ScopesMemo));
    scopes_memo[0] = hit;
    found = scopes_share(hit.sc);
    break;
  }
  g_mutex_unlock(&scopes_memo_lock);
  return found;
}

/* Takes the key's words. */
static void scopes_memo_add(ScopesKey *k, const WeirScopes *sc) {
  g_mutex_lock(&scopes_memo_lock);
  if (scopes_memo_len == SCOPES_MEMO_SIZE) {
    ScopesMemo *last = &scopes_memo[--scopes_memo_len];
    g_free(last->key.words);
    weir_scopes_free(last->sc);
  }
  memmove(&scopes_memo[1], &scopes_memo[0],
          scopes_memo_len * sizeof(ScopesMemo));
  scopes_memo[0].key = *k;
  scopes_memo[0].sc = scopes_share(sc);
  scopes_memo_len++;
  k->words = NULL;
  g_mutex_unlock(&scopes_memo_lock);
}

static WeirScopes *compute_scopes(const WeirState *s, GError **error);

WeirScopes *weir_state_scopes(const WeirState *s, GError **error) {
  ScopesKey k;
  scopes_key_init(&k, s);
  WeirScopes *sc = scopes_memo_lookup(&k);
  if (!sc) {
    sc = compute_scopes(s, error);
    if (sc)
      scopes_memo_add(&k, sc); /* failures are not kept */
  }
  g_free(k.words);
  return sc;
}

static WeirScopes *compute_scopes(const WeirState *s, GError **error) {
  Adjacency a;
  if (!adjacency_init(&a, s, error))
    return NULL;
  guint n = a.n;
  g_autoptr(GArray) order_idx =
      g_array_sized_new(FALSE, FALSE, sizeof(guint), n);
  if (!topological_order(s, &a, order_idx, error)) {
    adjacency_clear(&a);
    return NULL;
  }
  /* parent[i]: id of the innermost map entry enclosing node i (0: top
   * level), set when i is placed */
  g_autofree guint *parent = g_new0(guint, n + 1);
  WeirScopes *sc = g_new0(WeirScopes, 1);
  sc->order = g_array_sized_new(FALSE, FALSE, sizeof(guint), n);
  sc->parent = g_hash_table_new(g_direct_hash, g_direct_equal);
  /* scope each node opens for its successors: entries open themselves,
   * exits close their entry's scope (the successors of an exit are in the
   * scope containing the entry). */
  for (guint k = 0; k < n; k++) {
    guint i = g_array_index(order_idx, guint, k);
    const WeirNode *node = g_ptr_array_index(s->nodes, i);
    g_array_append_val(sc->order, node->id);
  }
  for (guint k = 0; k < n; k++) {
    guint i = g_array_index(order_idx, guint, k);
    const WeirNode *node = g_ptr_array_index(s->nodes, i);
    guint id = node->id;
    guint scope = 0;
    gboolean first = TRUE;
    if (node->kind == WEIR_NODE_MAP_EXIT) {
      /* An exit lives where its entry lives. */
      guint ei = 0;
      const WeirNode *entry = find_by_id(s->nodes, node->entry, &ei);
      if (!entry || entry->kind != WEIR_NODE_MAP_ENTRY) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "state %u '%s': map exit %u refers to %u, which is not a "
                    "map entry in this state",
                    s->id, s->label, node->id, node->entry);
        weir_scopes_free(sc);
        adjacency_clear(&a);
        return NULL;
      }
      scope = parent[ei];
      if (scope) {
        parent[i] = scope;
        g_hash_table_insert(sc->parent, GUINT_TO_POINTER(id),
                            GUINT_TO_POINTER(scope));
      }
      continue;
    }
    for (guint r = a.in_start[i]; r < a.in_start[i + 1]; r++) {
      guint pi = a.src[a.in[r]];
      const WeirNode *pred = g_ptr_array_index(s->nodes, pi);
      guint pscope = pred->kind == WEIR_NODE_MAP_ENTRY ? pred->id : parent[pi];
      if (first) {
        scope = pscope;
        first = FALSE;
      } else if (scope != pscope) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "state %u '%s': node %u '%s' is reached from two scopes "
                    "(map entry %u and map entry %u)",
                    s->id, s->label, node->id, node->label, scope, pscope);
        weir_scopes_free(sc);
        adjacency_clear(&a);
        return NULL;
      }
    }
    if (scope) {
      parent[i] = scope;
      g_hash_table_insert(sc->parent, GUINT_TO_POINTER(id),
                          GUINT_TO_POINTER(scope));
    }
  }
  adjacency_clear(&a);
  return sc;
}

/* ---------------------------------------------------------------- messages */

char *weir_describe_node(const WeirState *s, const WeirNode *n) {
  return g_strdup_printf("state %u '%s', node %u (%s '%s')", s->id, s->label,
                         n->id, weir_node_kind_name(n->kind), n->label);
}

char *weir_describe_memlet(const WeirState *s, const WeirMemlet *m) {
  return g_strdup_printf("state %u '%s', memlet %u (%u -> %u%s%s)", s->id,
                         s->label, m->id, m->src, m->dst, m->data ? ", " : "",
                         m->data ? m->data : "");
}

/* ------------------------------------------- editing helpers (branch tier1) */

static gboolean remove_conn(GPtrArray *conns, const char *name) {
  for (guint i = 0; name && i < conns->len; i++)
    if (strcmp(g_ptr_array_index(conns, i), name) == 0) {
      g_ptr_array_remove_index(conns, i);
      return TRUE;
    }
  return FALSE;
}

gboolean weir_node_remove_in_conn(WeirNode *n, const char *name) {
  return remove_conn(n->in_conns, name);
}

gboolean weir_node_remove_out_conn(WeirNode *n, const char *name) {
  return remove_conn(n->out_conns, name);
}

gboolean weir_memlet_set_src(const WeirState *s, WeirMemlet *m, guint node,
                             const char *conn) {
  if (!weir_state_node(s, node))
    return FALSE;
  char *c = g_strdup(conn);
  g_free(m->src_conn);
  m->src_conn = c;
  m->src = node;
  return TRUE;
}

gboolean weir_memlet_set_dst(const WeirState *s, WeirMemlet *m, guint node,
                             const char *conn) {
  if (!weir_state_node(s, node))
    return FALSE;
  char *c = g_strdup(conn);
  g_free(m->dst_conn);
  m->dst_conn = c;
  m->dst = node;
  return TRUE;
}

void weir_memlet_set_subset(WeirMemlet *m, const WeirSubset *subset) {
  WeirSubset *c = weir_subset_copy(subset);
  weir_subset_free(m->subset);
  m->subset = c;
}

void weir_map_set_dims(WeirMap *m, guint n, const char *const *params,
                       const WeirRange *ranges, const gint64 *tile) {
  g_return_if_fail(n >= 1);
  /* Copy first: the arguments may point into m itself. */
  GPtrArray *np = g_ptr_array_new_with_free_func(g_free);
  GArray *nr = g_array_new(FALSE, TRUE, sizeof(WeirRange));
  GArray *nt = g_array_new(FALSE, TRUE, sizeof(gint64));
  for (guint i = 0; i < n; i++) {
    WeirRange r;
    g_ptr_array_add(np, g_strdup(params[i]));
    weir_range_copy(&ranges[i], &r);
    g_array_append_val(nr, r);
  }
  if (tile)
    g_array_append_vals(nt, tile, n);
  g_ptr_array_unref(m->params);
  for (guint i = 0; i < m->ranges->len; i++)
    weir_range_clear(&g_array_index(m->ranges, WeirRange, i));
  g_array_unref(m->ranges);
  g_array_unref(m->tile);
  m->params = np;
  m->ranges = nr;
  m->tile = nt;
}
/* ---- added by branch tier2 ---- */

gboolean weir_tasklet_set_code(WeirNode *n, const char *code) {
  g_return_val_if_fail(n != NULL, FALSE);
  if (n->kind != WEIR_NODE_TASKLET)
    return FALSE;
  char *text = g_strdup(code ? code : "");
  g_free(n->code_text);
  n->code_text = text;
  g_clear_pointer(&n->code, weir_code_free);
  n->code = weir_code_parse(n->code_text, NULL);
  return TRUE;
}

/* ------------------------------------------- edits added by branch tier3
 * (weir_node_remove_in_conn/out_conn are shared with tier1, above) */

static int cmp_element_id(gconstpointer a, gconstpointer b) {
  guint x = **(const guint *const *)a;
  guint y = **(const guint *const *)b;
  return x < y ? -1 : x > y;
}

/* Appends every element of src to dst (taking ownership), sorted by id. */
static void move_sorted(GPtrArray *dst, GPtrArray *src) {
  for (guint i = 0; i < src->len; i++)
    g_ptr_array_add(dst, g_ptr_array_index(src, i));
  g_ptr_array_set_free_func(src, NULL);
  g_ptr_array_set_size(src, 0);
  g_ptr_array_sort(dst, cmp_element_id);
}

void weir_state_move_elements(WeirState *dst, WeirState *src) {
  g_return_if_fail(dst != src);
  move_sorted(dst->nodes, src->nodes);
  g_ptr_array_set_free_func(src->nodes, node_free);
  move_sorted(dst->edges, src->edges);
  g_ptr_array_set_free_func(src->edges, memlet_free);
}

gboolean weir_graph_remove_transition(WeirGraph *g, guint id) {
  guint index;
  if (!find_by_id(g->transitions, id, &index))
    return FALSE;
  g_ptr_array_remove_index(g->transitions, index);
  return TRUE;
}

gboolean weir_graph_retarget_transition(WeirGraph *g, guint id, guint src,
                                        guint dst) {
  WeirTransition *t = find_by_id(g->transitions, id, NULL);
  if (!t || !weir_graph_state(g, src) || !weir_graph_state(g, dst))
    return FALSE;
  t->src = src;
  t->dst = dst;
  return TRUE;
}

gboolean weir_graph_remove_state(WeirGraph *g, guint id) {
  guint index;
  if (id == g->start || !find_by_id(g->states, id, &index))
    return FALSE;
  for (guint i = 0; i < g->transitions->len; i++) {
    const WeirTransition *t = g_ptr_array_index(g->transitions, i);
    if (t->src == id || t->dst == id)
      return FALSE;
  }
  g_ptr_array_remove_index(g->states, index);
  return TRUE;
}

/* --------------------------------------------- edits added by branch tier4 */

gboolean weir_access_set_data(WeirNode *n, const char *data) {
  g_return_val_if_fail(n != NULL && data != NULL, FALSE);
  if (n->kind != WEIR_NODE_ACCESS)
    return FALSE;
  char *copy = g_strdup(data);
  g_free(n->data);
  n->data = copy;
  return TRUE;
}

gboolean weir_memlet_set_data(WeirMemlet *m, const char *data) {
  g_return_val_if_fail(m != NULL && data != NULL, FALSE);
  if (m->data == NULL)
    return FALSE;
  char *copy = g_strdup(data);
  g_free(m->data);
  m->data = copy;
  return TRUE;
}

gboolean weir_container_set_shape(WeirContainer *c, guint rank,
                                  WeirExpr *const *shape) {
  g_return_val_if_fail(c != NULL && (rank == 0 || shape != NULL), FALSE);
  if (c->initial)
    return FALSE;
  GPtrArray *fresh = expr_array_new();
  for (guint i = 0; i < rank; i++)
    g_ptr_array_add(fresh, weir_expr_ref(shape[i]));
  g_ptr_array_unref(c->shape);
  c->shape = fresh;
  set_row_major_strides(c);
  return TRUE;
}

void weir_node_copy_attrs(WeirNode *dst, const WeirNode *src) {
  for (guint i = 0; src->attrs && i < src->attrs->len; i++) {
    const WeirAttr *a = g_ptr_array_index(src->attrs, i);
    switch (a->type) {
    case WEIR_ATTR_INT:
      weir_node_set_attr_int(dst, a->name, a->i);
      break;
    case WEIR_ATTR_FLOAT:
      weir_node_set_attr_float(dst, a->name, a->f);
      break;
    case WEIR_ATTR_STRING:
      weir_node_set_attr_string(dst, a->name, a->s);
      break;
    case WEIR_ATTR_INTS:
      weir_node_set_attr_ints(dst, a->name, (const gint64 *)a->ints->data,
                              a->ints->len);
      break;
    case WEIR_ATTR_FLOATS:
      weir_node_set_attr_floats(dst, a->name, (const double *)a->floats->data,
                                a->floats->len);
      break;
    case WEIR_ATTR_STRINGS:
      weir_node_set_attr_strings(dst, a->name,
                                 (const char *const *)a->strings->pdata,
                                 a->strings->len);
      break;
    case WEIR_ATTR_TYPE_COUNT:
      break;
    }
  }
}
