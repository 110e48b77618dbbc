/* weir-tensor-io.h — reading and writing tensor files.
 *
 * Two formats:
 *  - .pb: one serialized ONNX TensorProto, as in the ONNX test data
 *    (test_data_set_N/input_K.pb).  Read with the same rules as
 *    weir_onnx_tensor_decode; written with dims, data_type, the name and
 *    raw_data in little-endian order.
 *  - .npy: NumPy's array format.  Versions 1.0, 2.0 and 3.0 are read,
 *    1.0 is written.  Supported descr values: '<f4', '<f8', '<i4', '<i8',
 *    '|b1', '|u1' (the one-byte types also with '<' or '='); C order only.
 *
 * Errors name the file: WEIR_ERROR_IO for file system errors,
 * WEIR_ERROR_PARSE for malformed files, WEIR_ERROR_UNSUPPORTED for valid
 * files Weir cannot represent (big-endian data, Fortran order, other
 * dtypes).  Writes are atomic (the file is replaced in one step).
 */
#ifndef WEIR_TENSOR_IO_H
#define WEIR_TENSOR_IO_H

#include "weir-tensor.h"

G_BEGIN_DECLS

/* Reads an ONNX TensorProto file.  *name_out (optional) receives the
 * tensor's name, "" when it has none (transfer full, g_free).
 * (transfer full) */
/**
 * weir_tensor_read_pb:
 * @name_out: (out) (optional) (transfer full):
 */
WEIR_API WeirTensor *weir_tensor_read_pb(const char *path, char **name_out,
                                         GError **error);
/* Writes t as a TensorProto; name may be NULL (no name). */
/**
 * weir_tensor_write_pb:
 * @name: (nullable):
 */
WEIR_API gboolean weir_tensor_write_pb(const WeirTensor *t, const char *name,
                                       const char *path, GError **error);

/* Reads a .npy file. (transfer full) */
WEIR_API WeirTensor *weir_tensor_read_npy(const char *path, GError **error);
/* Writes t as a version 1.0 .npy file. */
WEIR_API gboolean weir_tensor_write_npy(const WeirTensor *t, const char *path,
                                        GError **error);

/* Reads a tensor file, choosing the format from the extension (".pb" or
 * ".npy", case-insensitive).  *name_out (optional) receives the name
 * stored in a .pb file, NULL for .npy (transfer full). (transfer full) */
/**
 * weir_tensor_load:
 * @name_out: (out) (optional) (transfer full) (nullable):
 */
WEIR_API WeirTensor *weir_tensor_load(const char *path, char **name_out,
                                      GError **error);
/* Writes a tensor file, choosing the format from the extension; name is
 * stored in .pb files and ignored for .npy. */
/**
 * weir_tensor_save:
 * @name: (nullable):
 */
WEIR_API gboolean weir_tensor_save(const WeirTensor *t, const char *name,
                                   const char *path, GError **error);

G_END_DECLS

#endif
