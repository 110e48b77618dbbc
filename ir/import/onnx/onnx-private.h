/* onnx-private.h — helpers shared by the ONNX reader (model.c, tensor.c)
 * and the tensor file readers (tensor-io.c).  Not installed. */
#ifndef WEIR_ONNX_PRIVATE_H
#define WEIR_ONNX_PRIVATE_H

#include "onnx.pb-c.h"
#include "weir-onnx.h"

G_BEGIN_DECLS

/* Checks a TensorProto's header and data size without decoding it: dims
 * non-negative with a representable element count, and (for element types
 * of known size, unless the data is external) the data present matches
 * count x size (raw_data) or count (the typed field for the type).
 * *count_out (optional) receives the element count. */
gboolean weir_onnx_tensor_check(const Onnx__TensorProto *proto,
                                const char *context, gint64 *count_out,
                                GError **error);

/* Copies count elements of size bytes from little-endian src to dst in
 * host order (the same function converts host to little-endian). */
void weir_onnx_copy_le(void *dst, const void *src, gsize count, gsize size);

G_END_DECLS

#endif
