/* weir-tensor.h — dense tensors passed into and out of programs.
 *
 * A WeirTensor owns a contiguous buffer in row-major order.  It is the
 * currency of the interpreter, the runtime and the tensor file readers.
 */
#ifndef WEIR_TENSOR_H
#define WEIR_TENSOR_H

#include "weir-types.h"

G_BEGIN_DECLS

typedef struct {
  WeirDType dtype;
  guint rank;
  gint64 *shape; /* rank entries (owned) */
  gint64 count;  /* number of elements (product of shape, 1 for a scalar) */
  gpointer data; /* count * weir_dtype_size(dtype) bytes, 64-byte aligned
                    (owned) */
} WeirTensor;

/* A zero-filled tensor.  shape may be NULL when rank is 0. */
WEIR_API WeirTensor *weir_tensor_new(WeirDType dtype, guint rank,
                                     const gint64 *shape);
WEIR_API void weir_tensor_free(WeirTensor *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirTensor, weir_tensor_free)
WEIR_API WeirTensor *weir_tensor_copy(const WeirTensor *t);
WEIR_API gsize weir_tensor_nbytes(const WeirTensor *t);

/* Element i (row-major) converted to double / written from double. */
WEIR_API double weir_tensor_get(const WeirTensor *t, gint64 i);
WEIR_API void weir_tensor_set(WeirTensor *t, gint64 i, double v);

/* Fills with reproducible pseudo-random values: uniform in [-1, 1) for
 * floats, [0, 10) for integers, 0/1 for bool. */
WEIR_API void weir_tensor_fill_random(WeirTensor *t, guint64 seed);

/* Compares element-wise: |a-b| <= atol + rtol*|b|.  NaN equals NaN.
 * On mismatch returns FALSE with a message naming the first bad index and
 * the maximum error.  Shapes and dtypes must match.  *max_abs_err (optional)
 * receives the largest absolute difference. */
WEIR_API gboolean weir_tensor_allclose(const WeirTensor *a, const WeirTensor *b,
                                       double rtol, double atol,
                                       double *max_abs_err, GError **error);

/* "f32[2, 3]" (transfer full) */
WEIR_API char *weir_tensor_describe(const WeirTensor *t);

G_END_DECLS

#endif
