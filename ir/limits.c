/* limits.c — checked container sizes and the memory budget of a run.
 *
 * Conventions: every product and sum of sizes uses __builtin_*_overflow on
 * gint64; a byte size must leave room for the 64-byte rounding of
 * weir_tensor_try_new, so sizes stop at G_MAXINT64 - 64. */
#include "weir-limits.h"

#include <string.h>
#include <unistd.h>

#include "weir-expr.h"
#include "weir-tensor.h"

/* "12.0 TiB": IEC units, with a plain space (GLib puts a no-break space
 * between the number and the unit). (transfer full) */
static char *format_size(guint64 bytes) {
  g_autofree char *text = g_format_size_full(bytes, G_FORMAT_SIZE_IEC_UNITS);
  GString *s = g_string_new(text);
  g_string_replace(s, "\u00a0", " ", 0);
  return g_string_free(s, FALSE);
}

/* "N=9223372036854775807, M=2" for the bound symbols of c's shape, or NULL
 * when there are none. (transfer full) */
static char *shape_symbols(const WeirContainer *c, GHashTable *bindings) {
  g_autoptr(GHashTable) set = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint d = 0; d < c->shape->len; d++)
    weir_expr_collect_symbols(g_ptr_array_index(c->shape, d), set);
  if (g_hash_table_size(set) == 0 || !bindings)
    return NULL;
  g_autofree gpointer *keys = g_hash_table_get_keys_as_array(set, NULL);
  guint n = g_hash_table_size(set);
  qsort(keys, n, sizeof(gpointer),
        (int (*)(const void *, const void *))g_strcmp0);
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < n; i++) {
    const gint64 *v = g_hash_table_lookup(bindings, keys[i]);
    if (v)
      g_string_append_printf(s, "%s%s=%" G_GINT64_FORMAT, s->len ? ", " : "",
                             (const char *)keys[i], *v);
  }
  if (s->len == 0) {
    g_string_free(s, TRUE);
    return NULL;
  }
  return g_string_free(s, FALSE);
}

static gboolean size_error(const WeirContainer *c, GHashTable *bindings,
                           GError **error, const char *format, ...)
    G_GNUC_PRINTF(4, 5);

static gboolean size_error(const WeirContainer *c, GHashTable *bindings,
                           GError **error, const char *format, ...) {
  va_list ap;
  va_start(ap, format);
  g_autofree char *what = g_strdup_vprintf(format, ap);
  va_end(ap);
  g_autofree char *syms = shape_symbols(c, bindings);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "container '%s': %s%s%s%s",
              c->name, what, syms ? " (with " : "", syms ? syms : "",
              syms ? ")" : "");
  return FALSE;
}

gboolean weir_container_size(const WeirContainer *c, GHashTable *bindings,
                             WeirContainerSize *out, GError **error) {
  g_return_val_if_fail(c != NULL && out != NULL, FALSE);
  guint rank = c->shape->len;
  g_autofree gint64 *shape = g_new0(gint64, rank ? rank : 1);
  for (guint d = 0; d < rank; d++) {
    g_autoptr(GError) local = NULL;
    if (!weir_expr_eval_checked(g_ptr_array_index(c->shape, d), bindings,
                                &shape[d], &local)) {
      g_set_error(error, local->domain, local->code,
                  "container '%s': dimension %u: %s", c->name, d,
                  local->message);
      return FALSE;
    }
    if (shape[d] < 0) {
      g_autofree char *text =
          weir_expr_to_string(g_ptr_array_index(c->shape, d));
      return size_error(c, bindings, error,
                        "dimension %u (%s) is %" G_GINT64_FORMAT
                        ": a size cannot be negative",
                        d, text, shape[d]);
    }
  }
  g_autoptr(GError) local = NULL;
  gint64 elements;
  if (!weir_shape_size(c->dtype, rank, shape, &elements, NULL, &local))
    return size_error(c, bindings, error, "%s", local->message);

  /* The span: 1 + the address of the last element under the strides. */
  gint64 span = elements == 0 ? 0 : 1;
  for (guint d = 0; elements && d < rank && d < c->strides->len; d++) {
    gint64 stride, term;
    g_autoptr(GError) serr = NULL;
    if (!weir_expr_eval_checked(g_ptr_array_index(c->strides, d), bindings,
                                &stride, &serr)) {
      g_set_error(error, serr->domain, serr->code,
                  "container '%s': stride %u: %s", c->name, d, serr->message);
      return FALSE;
    }
    if (stride < 0)
      return size_error(c, bindings, error,
                        "stride %u is %" G_GINT64_FORMAT
                        ": a stride cannot be negative",
                        d, stride);
    if (__builtin_mul_overflow(shape[d] - 1, stride, &term) ||
        __builtin_add_overflow(span, term, &span))
      return size_error(c, bindings, error,
                        "the storage its strides address overflows 64 bits");
  }
  if (span < elements)
    span = elements; /* row-major without strides, or broadcast strides */
  gint64 bytes;
  if (__builtin_mul_overflow(span, (gint64)weir_dtype_size(c->dtype), &bytes) ||
      bytes > G_MAXINT64 - 64)
    return size_error(c, bindings, error,
                      "%" G_GINT64_FORMAT
                      " elements of %s: the byte size overflows 64 bits",
                      span, weir_dtype_name(c->dtype));
  out->elements = elements;
  out->span = span;
  out->bytes = bytes;
  return TRUE;
}

/* TRUE when every symbol of c's shape and strides is bound. */
static gboolean container_bound(const WeirContainer *c, GHashTable *bindings) {
  g_autoptr(GHashTable) set = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint d = 0; d < c->shape->len; d++)
    weir_expr_collect_symbols(g_ptr_array_index(c->shape, d), set);
  for (guint d = 0; d < c->strides->len; d++)
    weir_expr_collect_symbols(g_ptr_array_index(c->strides, d), set);
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, set);
  while (g_hash_table_iter_next(&it, &key, NULL))
    if (!bindings || !g_hash_table_contains(bindings, key))
      return FALSE;
  return TRUE;
}

gboolean weir_graph_check_sizes(const WeirGraph *g, GHashTable *bindings,
                                GError **error) {
  g_return_val_if_fail(g != NULL, FALSE);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    WeirContainerSize size;
    if (container_bound(c, bindings) &&
        !weir_container_size(c, bindings, &size, error))
      return FALSE;
  }
  return TRUE;
}

gboolean weir_graph_memory_need(const WeirGraph *g, GHashTable *bindings,
                                WeirMemoryNeed *need, GError **error) {
  g_return_val_if_fail(g != NULL && need != NULL, FALSE);
  memset(need, 0, sizeof(*need));
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    WeirContainerSize size;
    if (!container_bound(c, bindings))
      continue;
    if (!weir_container_size(c, bindings, &size, error))
      return FALSE;
    gint64 *part = c->transient ? &need->transients
                   : c->initial ? &need->parameters
                                : &need->arguments;
    if (__builtin_add_overflow(*part, size.bytes, part) ||
        __builtin_add_overflow(need->total, size.bytes, &need->total)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "program '%s': the total size of its containers "
                  "overflows 64 bits (at container '%s')",
                  g->name, c->name);
      return FALSE;
    }
  }
  return TRUE;
}

guint64 weir_physical_memory(void) {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0)
    return 0;
  guint64 total;
  if (__builtin_mul_overflow((guint64)pages, (guint64)page, &total))
    return G_MAXUINT64;
  return total;
}

gboolean weir_memory_budget_check(const WeirGraph *g,
                                  const WeirMemoryNeed *need, guint64 limit,
                                  GError **error) {
  g_return_val_if_fail(g != NULL && need != NULL, FALSE);
  gboolean physical = limit == 0;
  if (physical)
    limit = weir_physical_memory();
  if (limit == 0 || (guint64)need->total <= limit)
    return TRUE;
  g_autofree char *total = format_size((guint64)need->total);
  g_autofree char *args = format_size((guint64)need->arguments);
  g_autofree char *params = format_size((guint64)need->parameters);
  g_autofree char *trans = format_size((guint64)need->transients);
  g_autofree char *lim = format_size(limit);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
              "program '%s' needs %s (%" G_GINT64_FORMAT
              " bytes: arguments %s, parameters %s, transients %s), more "
              "than the memory limit of %s (%s)",
              g->name, total, need->total, args, params, trans, lim,
              physical ? "the physical memory; --max-memory changes it"
                       : "set with --max-memory");
  return FALSE;
}

gboolean weir_graph_check_memory(const WeirGraph *g, GHashTable *bindings,
                                 guint64 limit, GError **error) {
  WeirMemoryNeed need;
  return weir_graph_memory_need(g, bindings, &need, error) &&
         weir_memory_budget_check(g, &need, limit, error);
}

gboolean weir_size_parse(const char *text, guint64 *out, GError **error) {
  g_return_val_if_fail(text != NULL && out != NULL, FALSE);
  const char *p = text;
  while (g_ascii_isspace(*p))
    p++;
  if (!g_ascii_isdigit(*p))
    goto bad;
  guint64 v = 0;
  for (; g_ascii_isdigit(*p); p++)
    if (__builtin_mul_overflow(v, 10, &v) ||
        __builtin_add_overflow(v, (guint64)(*p - '0'), &v))
      goto overflow;
  guint shift = 0;
  switch (g_ascii_toupper(*p)) {
  case 'K':
    shift = 10;
    break;
  case 'M':
    shift = 20;
    break;
  case 'G':
    shift = 30;
    break;
  case 'T':
    shift = 40;
    break;
  default:
    break;
  }
  if (shift)
    p++;
  const char *rest[] = {"", "B", "iB", "IB", "b", "ib"};
  gboolean ok = FALSE;
  for (guint i = 0; i < G_N_ELEMENTS(rest) && !ok; i++)
    ok = g_ascii_strcasecmp(p, rest[i]) == 0 && (shift || i < 2);
  if (!ok)
    goto bad;
  if (shift && v > (G_MAXUINT64 >> shift))
    goto overflow;
  *out = v << shift;
  return TRUE;
bad:
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
              "'%s' is not a size (expected an integer with an optional "
              "K, M, G or T suffix, e.g. 512M or 8G)",
              text);
  return FALSE;
overflow:
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
              "'%s': the size overflows 64 bits", text);
  return FALSE;
}

void weir_graph_check_size_limits(const WeirGraph *g, GPtrArray *errors,
                                  GPtrArray *warnings) {
  g_return_if_fail(g != NULL && errors != NULL && warnings != NULL);
  guint64 physical = weir_physical_memory();
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (!container_bound(c, NULL))
      continue;
    WeirContainerSize size;
    g_autoptr(GError) error = NULL;
    if (!weir_container_size(c, NULL, &size, &error)) {
      g_ptr_array_add(errors, g_strdup(error->message));
      continue;
    }
    if (physical && (guint64)size.bytes > physical) {
      g_autofree char *need = format_size((guint64)size.bytes);
      g_autofree char *have = format_size(physical);
      g_ptr_array_add(
          warnings, g_strdup_printf("container '%s' needs %s (%" G_GINT64_FORMAT
                                    " bytes), more than the physical memory "
                                    "of this machine (%s): it cannot run here",
                                    c->name, need, size.bytes, have));
    }
  }
}
