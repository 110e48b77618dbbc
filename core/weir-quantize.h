/* weir-quantize.h — calibration for the int8 `quantize` transformation.
 *
 * `quantize` (transforms/tier2/quantize.c, docs/precision.md) rewrites
 * Conv, Gemm and MatMul into int8 arithmetic from the range of every float
 * tensor they read and write.  Those ranges are measured here: the program
 * runs in the reference interpreter on calibration samples and the
 * smallest and largest value of each tensor are recorded (min/max), or two
 * percentiles of all its values (the percentile method, which ignores
 * rare outliers).  The result is the text of the transformation's
 * `ranges` parameter, so a quantize step in a history or recipe replays
 * without the samples.
 */
#ifndef WEIR_QUANTIZE_H
#define WEIR_QUANTIZE_H

#include "weir-graph.h"
#include "weir-tensor.h"

G_BEGIN_DECLS

/**
 * WeirCalibrateMethod:
 * @WEIR_CALIBRATE_MINMAX: the smallest and largest value seen
 * @WEIR_CALIBRATE_PERCENTILE: the values at percentiles 100 - p and p
 *
 * How a tensor's range is taken from its calibration values.
 */
typedef enum {
  WEIR_CALIBRATE_MINMAX,
  WEIR_CALIBRATE_PERCENTILE,
} WeirCalibrateMethod;

/**
 * weir_quantize_load_samples:
 * @path: an .npy file (one batch) or a directory of .npy files (one batch
 *   each, in name order)
 * @error: return location for an error naming the file
 *
 * Loads calibration batches, as `weir run --input` reads a tensor.
 *
 * Returns: (transfer full) (element-type WeirTensor): the batches, at
 *   least one
 */
WEIR_API GPtrArray *weir_quantize_load_samples(const char *path,
                                               GError **error);

/**
 * weir_quantize_calibrate:
 * @program: the float program (not changed)
 * @input: (nullable): the argument the batches feed (NULL: the program's
 *   only input)
 * @batches: (element-type WeirTensor): the calibration batches; a symbol
 *   that is a dimension of @input takes the batch's size
 * @method: min/max or percentile
 * @percentile: p for WEIR_CALIBRATE_PERCENTILE (in (50, 100]), else unused
 * @error: return location for an error naming the program, batch and
 *   problem
 *
 * Runs @program in the reference interpreter on every batch and records
 * the range of every f32 tensor (not a constant) that a library node reads
 * or writes.
 *
 * Returns: (transfer full): "NAME=LO:HI,..." sorted by name, the
 *   `ranges` parameter of the quantize transformation, or NULL
 */
WEIR_API char *weir_quantize_calibrate(const WeirGraph *program,
                                       const char *input, GPtrArray *batches,
                                       WeirCalibrateMethod method,
                                       double percentile, GError **error);

/**
 * weir_quantize_export_qdq:
 * @model_path: the float ONNX model the ranges were calibrated on
 * @ranges: the calibrated ranges (weir_quantize_calibrate)
 * @per_channel: weights with one scale per output channel
 * @exclude: (nullable): regular expression of node names kept in f32
 * @s8_activations: s8 activations instead of u8
 * @path: the file to write
 * @error: return location for an error naming the file, node and problem
 *
 * Writes the quantization the quantize transformation makes with these
 * parameters as an ONNX model in QDQ form: the original graph with
 * QuantizeLinear/DequantizeLinear pairs on every tensor that is int8 in
 * Weir's rewrite, and the weights and biases as int8/int32 initializers
 * read through DequantizeLinear, with the same scales and zero points.
 *
 * Returns: TRUE when the file was written
 */
WEIR_API gboolean weir_quantize_export_qdq(const char *model_path,
                                           const char *ranges,
                                           gboolean per_channel,
                                           const char *exclude,
                                           gboolean s8_activations,
                                           const char *path, GError **error);

G_END_DECLS

#endif
