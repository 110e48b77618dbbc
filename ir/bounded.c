/* bounded.c — outputs of a data-dependent length, trimmed to their count.
 *
 * A container with a count (weir-graph.h) has the upper bound of its length
 * as the extent of dimension count_dim; a run writes the valid length into
 * the i64 scalar container the count names.  Nothing inside the program
 * reads such a container (the validator refuses it), so the only reader is
 * the caller of a run: weir_container_trim gives it the valid part.
 */
#include <string.h>

#include "weir-interp.h"

WeirTensor *weir_container_trim(const WeirGraph *g, const WeirContainer *c,
                                const WeirTensor *t, GHashTable *args,
                                GError **error) {
  g_return_val_if_fail(g != NULL && c != NULL && t != NULL, NULL);
  if (!c->count)
    return weir_tensor_copy(t);
  guint d = c->count_dim;
  const WeirTensor *k = args ? g_hash_table_lookup(args, c->count) : NULL;
  if (d >= t->rank || !k || k->dtype != WEIR_DTYPE_I64 || k->count != 1) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "container '%s': its count '%s' is not an i64 scalar among "
                "the run's arguments",
                c->name, c->count);
    return NULL;
  }
  gint64 n = ((const gint64 *)k->data)[0];
  if (n < 0 || n > t->shape[d]) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "container '%s': count '%s' = %" G_GINT64_FORMAT
                " is outside [0, %" G_GINT64_FORMAT "]",
                c->name, c->count, n, t->shape[d]);
    return NULL;
  }
  g_autofree gint64 *shape = g_memdup2(t->shape, sizeof(gint64) * t->rank);
  shape[d] = n;
  WeirTensor *out = weir_tensor_try_new(t->dtype, t->rank, shape, error);
  if (!out)
    return NULL;
  /* Rows of the dimensions up to d, each of `inner` elements after it. */
  gsize es = weir_dtype_size(t->dtype);
  gint64 outer = 1, inner = 1;
  for (guint i = 0; i < d; i++)
    outer *= t->shape[i];
  for (guint i = d + 1; i < t->rank; i++)
    inner *= t->shape[i];
  const guint8 *src = t->data;
  guint8 *dst = out->data;
  gsize take = (gsize)n * (gsize)inner * es;
  gsize stride = (gsize)t->shape[d] * (gsize)inner * es;
  for (gint64 o = 0; o < outer && take; o++)
    memcpy(dst + (gsize)o * take, src + (gsize)o * stride, take);
  return out;
}
