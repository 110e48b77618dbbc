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

/* The element count and byte size of a dense dtype tensor of shape (rank
 * entries; may be NULL when rank is 0), each optional.  Fails with
 * WEIR_ERROR_INVALID when a dimension is negative or when the count or the
 * byte size (plus alignment padding) does not fit in a gint64; the message
 * names the shape, the caller prefixes the container or node. */
WEIR_API gboolean weir_shape_size(WeirDType dtype, guint rank,
                                  const gint64 *shape, gint64 *count,
                                  gint64 *bytes, GError **error);

/* A zero-filled tensor, or NULL with an error when the shape is invalid
 * (weir_shape_size) or the memory cannot be allocated (WEIR_ERROR_RUNTIME,
 * "cannot allocate N bytes"); never aborts.  Use it for every size that
 * comes from input.  (transfer full) */
/**
 * weir_tensor_try_new:
 * @shape: (array length=rank) (nullable):
 * Returns: (transfer full):
 */
WEIR_API WeirTensor *weir_tensor_try_new(WeirDType dtype, guint rank,
                                         const gint64 *shape, GError **error);

/* A zero-filled tensor of a size known to be sane (e.g. a copy of an
 * existing tensor).  shape may be NULL when rank is 0.  Returns NULL with a
 * critical warning when weir_tensor_try_new would fail: callers handling
 * sizes from input use weir_tensor_try_new. */
/**
 * weir_tensor_new:
 * @shape: (array length=rank) (nullable):
 * Returns: (transfer full):
 */
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
/**
 * weir_tensor_allclose:
 * @max_abs_err: (out) (optional):
 */
WEIR_API gboolean weir_tensor_allclose(const WeirTensor *a, const WeirTensor *b,
                                       double rtol, double atol,
                                       double *max_abs_err, GError **error);

/* "f32[2, 3]" (transfer full) */
WEIR_API char *weir_tensor_describe(const WeirTensor *t);

G_END_DECLS

#endif
