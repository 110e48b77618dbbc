/* tensor.c — dense row-major tensors. */
#include <math.h>
#include <string.h>

#include "weir-tensor.h"

#include <stdlib.h>

/* lines x 64 zeroed bytes aligned on 64, or NULL when the memory is not
 * there (never aborts, unlike g_aligned_alloc0); free with g_aligned_free. */
static gpointer posix_memalign_zeroed(gsize lines) {
  void *p = NULL;
  if (lines > G_MAXSIZE / 64 || posix_memalign(&p, 64, lines * 64) != 0)
    return NULL;
  memset(p, 0, lines * 64);
  return p;
}

gboolean weir_shape_size(WeirDType dtype, guint rank, const gint64 *shape,
                         gint64 *count, gint64 *bytes, GError **error) {
  g_return_val_if_fail(dtype < WEIR_DTYPE_COUNT, FALSE);
  gint64 n = 1;
  gboolean overflow = FALSE;
  for (guint i = 0; i < rank; i++) {
    if (shape[i] < 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "dimension %u is negative (%" G_GINT64_FORMAT ")", i,
                  shape[i]);
      return FALSE;
    }
    /* Keep multiplying after an overflow: a later 0 makes the tensor empty,
     * which is a valid size. */
    if (__builtin_mul_overflow(n, shape[i], &n)) {
      overflow = TRUE;
      n = 1;
    }
  }
  for (guint i = 0; overflow && i < rank; i++)
    if (shape[i] == 0) {
      overflow = FALSE;
      n = 0;
    }
  gint64 b = 0;
  if (overflow ||
      __builtin_mul_overflow(n, (gint64)weir_dtype_size(dtype), &b) ||
      b > G_MAXINT64 - 64) {
    GString *s = g_string_new(NULL);
    for (guint i = 0; i < rank; i++)
      g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? " x " : "",
                             shape[i]);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s elements of %s: the %s overflows 64 bits", s->str,
                weir_dtype_name(dtype),
                overflow ? "element count" : "byte size");
    g_string_free(s, TRUE);
    return FALSE;
  }
  if (count)
    *count = n;
  if (bytes)
    *bytes = b;
  return TRUE;
}

WeirTensor *weir_tensor_try_new(WeirDType dtype, guint rank,
                                const gint64 *shape, GError **error) {
  g_return_val_if_fail(dtype < WEIR_DTYPE_COUNT, NULL);
  gint64 count, bytes;
  if (!weir_shape_size(dtype, rank, shape, &count, &bytes, error))
    return NULL;
  /* Round up to the alignment so aligned_alloc accepts the size; keep at
   * least one line so the pointer is never NULL. */
  gsize lines = (gsize)(bytes + 63) / 64;
  gpointer data = posix_memalign_zeroed(lines ? lines : 1);
  if (!data) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "cannot allocate %" G_GINT64_FORMAT " bytes", bytes);
    return NULL;
  }
  WeirTensor *t = g_new0(WeirTensor, 1);
  t->dtype = dtype;
  t->rank = rank;
  t->shape = g_new0(gint64, rank ? rank : 1);
  if (rank)
    memcpy(t->shape, shape, rank * sizeof(gint64));
  t->count = count;
  t->data = data;
  return t;
}

WeirTensor *weir_tensor_new(WeirDType dtype, guint rank, const gint64 *shape) {
  g_autoptr(GError) error = NULL;
  WeirTensor *t = weir_tensor_try_new(dtype, rank, shape, &error);
  if (!t)
    g_critical("weir_tensor_new: %s", error->message);
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
  if (!c)
    return NULL;
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
  case WEIR_DTYPE_F16:
    return weir_f16_to_float(((const guint16 *)t->data)[i]);
  case WEIR_DTYPE_BF16:
    return weir_bf16_to_float(((const guint16 *)t->data)[i]);
  case WEIR_DTYPE_I8:
    return ((const gint8 *)t->data)[i];
  case WEIR_DTYPE_I16:
    return ((const gint16 *)t->data)[i];
  case WEIR_DTYPE_U16:
    return ((const guint16 *)t->data)[i];
  case WEIR_DTYPE_U32:
    return ((const guint32 *)t->data)[i];
  case WEIR_DTYPE_U64:
    return (double)((const guint64 *)t->data)[i];
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
  case WEIR_DTYPE_F16:
    ((guint16 *)t->data)[i] = weir_f16_from_double(v);
    return;
  case WEIR_DTYPE_BF16:
    ((guint16 *)t->data)[i] = weir_bf16_from_double(v);
    return;
  case WEIR_DTYPE_I8:
    ((gint8 *)t->data)[i] = (gint8)v;
    return;
  case WEIR_DTYPE_I16:
    ((gint16 *)t->data)[i] = (gint16)v;
    return;
  case WEIR_DTYPE_U16:
    ((guint16 *)t->data)[i] = (guint16)v;
    return;
  case WEIR_DTYPE_U32:
    ((guint32 *)t->data)[i] = (guint32)v;
    return;
  case WEIR_DTYPE_U64:
    ((guint64 *)t->data)[i] = (guint64)v;
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
    case WEIR_DTYPE_F16:
    case WEIR_DTYPE_BF16:
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
