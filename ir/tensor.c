/* tensor.c — dense row-major tensors. */
#include <math.h>
#include <string.h>

#include "weir-tensor.h"

WeirTensor *weir_tensor_new(WeirDType dtype, guint rank, const gint64 *shape) {
  g_return_val_if_fail(dtype < WEIR_DTYPE_COUNT, NULL);
  WeirTensor *t = g_new0(WeirTensor, 1);
  t->dtype = dtype;
  t->rank = rank;
  t->shape = g_new0(gint64, rank ? rank : 1);
  t->count = 1;
  for (guint i = 0; i < rank; i++) {
    g_return_val_if_fail(shape[i] >= 0, NULL);
    t->shape[i] = shape[i];
    t->count *= shape[i];
  }
  gsize bytes = (gsize)t->count * weir_dtype_size(dtype);
  /* Round up to the alignment so aligned_alloc accepts the size; keep at
   * least one line so the pointer is never NULL. */
  gsize alloc = (bytes + 63) / 64 * 64;
  t->data = g_aligned_alloc0(alloc ? alloc / 64 : 1, 64, 64);
  return t;
}

void weir_tensor_free(WeirTensor *t) {
  if (!t)
    return;
  g_free(t->shape);
  g_aligned_free(t->data);
  g_free(t);
}

gsize weir_tensor_nbytes(const WeirTensor *t) {
  return (gsize)t->count * weir_dtype_size(t->dtype);
}

WeirTensor *weir_tensor_copy(const WeirTensor *t) {
  WeirTensor *c = weir_tensor_new(t->dtype, t->rank, t->shape);
  memcpy(c->data, t->data, weir_tensor_nbytes(t));
  return c;
}

double weir_tensor_get(const WeirTensor *t, gint64 i) {
  g_return_val_if_fail(i >= 0 && i < t->count, NAN);
  switch (t->dtype) {
  case WEIR_DTYPE_F32:
    return ((const float *)t->data)[i];
  case WEIR_DTYPE_F64:
    return ((const double *)t->data)[i];
  case WEIR_DTYPE_I32:
    return ((const gint32 *)t->data)[i];
  case WEIR_DTYPE_I64:
    return (double)((const gint64 *)t->data)[i];
  case WEIR_DTYPE_BOOL:
  case WEIR_DTYPE_U8:
    return ((const guint8 *)t->data)[i];
  case WEIR_DTYPE_COUNT:
    break;
  }
  g_assert_not_reached();
}

void weir_tensor_set(WeirTensor *t, gint64 i, double v) {
  g_return_if_fail(i >= 0 && i < t->count);
  switch (t->dtype) {
  case WEIR_DTYPE_F32:
    ((float *)t->data)[i] = (float)v;
    return;
  case WEIR_DTYPE_F64:
    ((double *)t->data)[i] = v;
    return;
  case WEIR_DTYPE_I32:
    ((gint32 *)t->data)[i] = (gint32)v;
    return;
  case WEIR_DTYPE_I64:
    ((gint64 *)t->data)[i] = (gint64)v;
    return;
  case WEIR_DTYPE_BOOL:
    ((guint8 *)t->data)[i] = v != 0.0;
    return;
  case WEIR_DTYPE_U8:
    ((guint8 *)t->data)[i] = (guint8)v;
    return;
  case WEIR_DTYPE_COUNT:
    break;
  }
  g_assert_not_reached();
}

/* splitmix64: a small, well-known mixing function; enough for reproducible
 * test data (not for cryptography). */
static guint64 mix64(guint64 *state) {
  guint64 z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void weir_tensor_fill_random(WeirTensor *t, guint64 seed) {
  guint64 state = seed;
  for (gint64 i = 0; i < t->count; i++) {
    guint64 r = mix64(&state);
    double u = (double)(r >> 11) / 9007199254740992.0; /* [0, 1) */
    switch (t->dtype) {
    case WEIR_DTYPE_F32:
    case WEIR_DTYPE_F64:
      weir_tensor_set(t, i, 2.0 * u - 1.0);
      break;
    case WEIR_DTYPE_BOOL:
      weir_tensor_set(t, i, (double)(r & 1));
      break;
    default:
      weir_tensor_set(t, i, (double)(r % 10));
      break;
    }
  }
}

static char *shape_string(guint rank, const gint64 *shape) {
  GString *s = g_string_new("[");
  for (guint i = 0; i < rank; i++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? ", " : "", shape[i]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

char *weir_tensor_describe(const WeirTensor *t) {
  g_autofree char *shape = shape_string(t->rank, t->shape);
  return g_strdup_printf("%s%s", weir_dtype_name(t->dtype), shape);
}

gboolean weir_tensor_allclose(const WeirTensor *a, const WeirTensor *b,
                              double rtol, double atol, double *max_abs_err,
                              GError **error) {
  g_autofree char *da = weir_tensor_describe(a);
  g_autofree char *db = weir_tensor_describe(b);
  if (a->dtype != b->dtype || a->rank != b->rank ||
      memcmp(a->shape, b->shape, a->rank * sizeof(gint64)) != 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "tensors differ in type or shape: %s vs %s", da, db);
    return FALSE;
  }
  double worst = 0.0;
  gint64 first_bad = -1;
  for (gint64 i = 0; i < a->count; i++) {
    double x = weir_tensor_get(a, i), y = weir_tensor_get(b, i);
    if (isnan(x) && isnan(y))
      continue;
    gboolean ok;
    double err;
    if (x == y) {
      err = 0.0;
      ok = TRUE;
    } else if (!isfinite(x) || !isfinite(y)) {
      err = INFINITY; /* NaN against a number, or an unmatched infinity */
      ok = FALSE;
    } else {
      err = fabs(x - y);
      ok = err <= atol + rtol * fabs(y);
    }
    if (err > worst)
      worst = err;
    if (!ok && first_bad < 0)
      first_bad = i;
  }
  if (max_abs_err)
    *max_abs_err = worst;
  if (first_bad >= 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "mismatch at element %" G_GINT64_FORMAT
                ": %.9g vs %.9g (max abs error %.3g, rtol %g, atol %g)",
                first_bad, weir_tensor_get(a, first_bad),
                weir_tensor_get(b, first_bad), worst, rtol, atol);
    return FALSE;
  }
  return TRUE;
}
