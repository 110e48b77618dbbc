/* quantize.c — calibration for the int8 quantize transformation
 * (weir-quantize.h): runs the float program in the reference interpreter
 * with every tensor of interest turned into an argument, so its values can
 * be read after each batch. */
#include <math.h>
#include <string.h>

#include "weir-expand.h"
#include "weir-interp.h"
#include "weir-quantize.h"
#include "weir-tensor-io.h"

static gint compare_str(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

GPtrArray *weir_quantize_load_samples(const char *path, GError **error) {
  g_autoptr(GPtrArray) out =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_tensor_free);
  if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
    g_autoptr(GDir) dir = g_dir_open(path, 0, error);
    if (!dir)
      return NULL;
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    const char *name;
    while ((name = g_dir_read_name(dir)))
      if (g_str_has_suffix(name, ".npy"))
        g_ptr_array_add(names, g_strdup(name));
    g_ptr_array_sort(names, compare_str);
    for (guint i = 0; i < names->len; i++) {
      g_autofree char *file =
          g_build_filename(path, g_ptr_array_index(names, i), NULL);
      WeirTensor *t = weir_tensor_read_npy(file, error);
      if (!t)
        return NULL;
      g_ptr_array_add(out, t);
    }
  } else {
    WeirTensor *t = weir_tensor_load(path, NULL, error);
    if (!t)
      return NULL;
    g_ptr_array_add(out, t);
  }
  if (out->len == 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: no .npy calibration batch", path);
    return NULL;
  }
  return g_steal_pointer(&out);
}

/* Values seen for one tensor. */
typedef struct {
  double lo, hi;
  GArray *values; /* float, percentile method only */
} Seen;

static void seen_free(Seen *s) {
  if (s->values)
    g_array_unref(s->values);
  g_free(s);
}

static int compare_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* The f32 non-constant containers read or written by library nodes. */
static GPtrArray *observed(const WeirGraph *g) {
  g_autoptr(GHashTable) set = g_hash_table_new(g_str_hash, g_str_equal);
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  for (guint si = 0; si < g->states->len; si++) {
    const WeirState *s = g_ptr_array_index(g->states, si);
    for (guint e = 0; e < s->edges->len; e++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, e);
      const WeirNode *src = weir_state_node(s, m->src);
      const WeirNode *dst = weir_state_node(s, m->dst);
      if (!m->data || !((src && src->kind == WEIR_NODE_LIBRARY) ||
                        (dst && dst->kind == WEIR_NODE_LIBRARY)))
        continue;
      const WeirContainer *c = weir_graph_container(g, m->data);
      if (!c || c->dtype != WEIR_DTYPE_F32 || c->initial ||
          g_hash_table_contains(set, c->name))
        continue;
      g_hash_table_add(set, c->name);
      g_ptr_array_add(names, g_strdup(c->name));
    }
  }
  g_ptr_array_sort(names, compare_str);
  return names;
}

static const WeirContainer *only_input(const WeirGraph *g, GError **error) {
  const WeirContainer *found = NULL;
  guint n = 0;
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    /* an input: read somewhere and written nowhere */
    gboolean read = FALSE, written = FALSE;
    for (guint si = 0; si < g->states->len; si++) {
      const WeirState *s = g_ptr_array_index(g->states, si);
      for (guint e = 0; e < s->edges->len; e++) {
        const WeirMemlet *m = g_ptr_array_index(s->edges, e);
        if (g_strcmp0(m->data, c->name) != 0)
          continue;
        const WeirNode *src = weir_state_node(s, m->src);
        const WeirNode *dst = weir_state_node(s, m->dst);
        if (dst && dst->kind == WEIR_NODE_ACCESS &&
            g_strcmp0(dst->data, c->name) == 0)
          written = TRUE;
        if (src && src->kind == WEIR_NODE_ACCESS &&
            g_strcmp0(src->data, c->name) == 0)
          read = TRUE;
      }
    }
    if (read && !written) {
      found = c;
      n++;
    }
  }
  if (n != 1) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s has %u inputs; name the one the calibration data feeds",
                g->name, n);
    return NULL;
  }
  return found;
}

static WeirTensor *new_argument(const WeirContainer *c, GHashTable *bindings,
                                GError **error) {
  guint rank = c->shape->len;
  g_autofree gint64 *shape = g_new0(gint64, rank + 1);
  for (guint d = 0; d < rank; d++)
    if (!weir_expr_eval_checked(g_ptr_array_index(c->shape, d), bindings,
                                &shape[d], error))
      return NULL;
  return weir_tensor_try_new(c->dtype, rank, shape, error);
}

char *weir_quantize_calibrate(const WeirGraph *program, const char *input,
                              GPtrArray *batches, WeirCalibrateMethod method,
                              double percentile, GError **error) {
  g_return_val_if_fail(program && batches, NULL);
  if (method == WEIR_CALIBRATE_PERCENTILE &&
      !(percentile > 50 && percentile <= 100)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "percentile %g is not in (50, 100]", percentile);
    return NULL;
  }
  g_autoptr(WeirGraph) g = weir_graph_copy(program);
  const WeirContainer *in =
      input ? weir_graph_container(g, input) : only_input(g, error);
  if (!in) {
    if (input)
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s has no input '%s'",
                  program->name, input);
    return NULL;
  }
  if (in->transient) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "'%s' is not an argument of %s", in->name, program->name);
    return NULL;
  }
  g_autofree char *in_name = g_strdup(in->name);
  g_autoptr(GPtrArray) names = observed(g);
  for (guint i = 0; i < names->len; i++)
    weir_graph_container(g, g_ptr_array_index(names, i))->transient = FALSE;
  if (!weir_expand_all(g, NULL, NULL, error))
    return NULL;
  in = weir_graph_container(g, in_name);

  g_autoptr(GHashTable) seen = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)seen_free);
  for (guint i = 0; i < names->len; i++) {
    Seen *s = g_new0(Seen, 1);
    s->lo = INFINITY;
    s->hi = -INFINITY;
    if (method == WEIR_CALIBRATE_PERCENTILE)
      s->values = g_array_new(FALSE, FALSE, sizeof(float));
    g_hash_table_insert(seen, g_ptr_array_index(names, i), s);
  }
  for (guint b = 0; b < batches->len; b++) {
    const WeirTensor *batch = g_ptr_array_index(batches, b);
    if (batch->rank != in->shape->len) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "calibration batch %u has rank %u, input '%s' of %s has "
                  "rank %u",
                  b, batch->rank, in_name, program->name, in->shape->len);
      return NULL;
    }
    g_autoptr(GHashTable) bindings = weir_bindings_new();
    for (guint d = 0; d < batch->rank; d++) {
      const WeirExpr *e = g_ptr_array_index(in->shape, d);
      if (weir_expr_kind(e) == WEIR_EXPR_SYMBOL)
        weir_bindings_set(bindings, weir_expr_symbol_name(e), batch->shape[d]);
    }
    g_autoptr(GHashTable) args = g_hash_table_new_full(
        g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
    for (guint i = 0; i < g->containers->len; i++) {
      const WeirContainer *c = g_ptr_array_index(g->containers, i);
      if (c->transient)
        continue;
      WeirTensor *t = new_argument(c, bindings, error);
      if (!t) {
        g_prefix_error(error, "calibration batch %u: ", b);
        return NULL;
      }
      g_hash_table_insert(args, c->name, t);
    }
    WeirTensor *x = g_hash_table_lookup(args, in_name);
    gboolean same = TRUE;
    for (guint d = 0; d < batch->rank; d++)
      same = same && x->shape[d] == batch->shape[d];
    if (!same) {
      g_autofree char *want = weir_tensor_describe(x);
      g_autofree char *got = weir_tensor_describe(batch);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "calibration batch %u is %s, input '%s' of %s is %s", b, got,
                  in_name, program->name, want);
      return NULL;
    }
    for (gint64 k = 0; k < x->count; k++)
      weir_tensor_set(x, k, weir_tensor_get(batch, k));
    if (!weir_interpret(g, bindings, args, NULL, error)) {
      g_prefix_error(error, "calibration batch %u: ", b);
      return NULL;
    }
    for (guint i = 0; i < names->len; i++) {
      const char *name = g_ptr_array_index(names, i);
      const WeirTensor *t = g_hash_table_lookup(args, name);
      Seen *s = g_hash_table_lookup(seen, name);
      const float *v = t->data;
      for (gint64 k = 0; k < t->count; k++) {
        if (!isfinite(v[k]))
          continue;
        s->lo = MIN(s->lo, v[k]);
        s->hi = MAX(s->hi, v[k]);
      }
      if (s->values)
        g_array_append_vals(s->values, v, (guint)t->count);
    }
  }
  GString *out = g_string_new(NULL);
  for (guint i = 0; i < names->len; i++) {
    const char *name = g_ptr_array_index(names, i);
    Seen *s = g_hash_table_lookup(seen, name);
    if (s->values && s->values->len) {
      g_array_sort(s->values, compare_float);
      guint n = s->values->len;
      guint hi = (guint)fmin(n - 1, floor(percentile / 100.0 * (n - 1) + 0.5));
      guint lo = n - 1 - hi;
      s->lo = g_array_index(s->values, float, lo);
      s->hi = g_array_index(s->values, float, hi);
    }
    if (!(s->lo <= s->hi))
      continue; /* never finite */
    char a[G_ASCII_DTOSTR_BUF_SIZE], c[G_ASCII_DTOSTR_BUF_SIZE];
    g_ascii_formatd(a, sizeof a, "%.9g", s->lo);
    g_ascii_formatd(c, sizeof c, "%.9g", s->hi);
    g_string_append_printf(out, "%s%s=%s:%s", out->len ? "," : "", name, a, c);
  }
  return g_string_free(out, FALSE);
}
