/* weir-ops-linalg.h — shared pieces of the linear-algebra operator family.
 *
 * Shape inference (ir/ops/linalg.c) and the expansions
 * (ir/lower/expand/linalg.c) must agree on two non-trivial computations:
 * the geometry of a convolution (kernel, strides, dilations, paddings and
 * output sizes after auto_pad / output_shape resolution) and the parse of an
 * Einsum equation.  Both are computed here, once, from a library node's
 * attributes and the shapes of its inputs.
 */
#ifndef WEIR_OPS_LINALG_H
#define WEIR_OPS_LINALG_H

#include "weir-graph.h"

G_BEGIN_DECLS

/* Most spatial dimensions a Conv / ConvTranspose may have. */
#define WEIR_CONV_MAX_SPATIAL 8

/* The resolved geometry of Conv or ConvTranspose.  All expressions are
 * owned; free them with weir_conv_geometry_clear(). */
typedef struct {
  guint n_spatial;
  gint64 group;
  gint64 strides[WEIR_CONV_MAX_SPATIAL];
  gint64 dilations[WEIR_CONV_MAX_SPATIAL];
  gint64 output_padding[WEIR_CONV_MAX_SPATIAL]; /* ConvTranspose only */
  WeirExpr *kernel[WEIR_CONV_MAX_SPATIAL];
  /* Padding before / after each spatial dimension (after auto_pad).  For
   * ConvTranspose these crop the full output (they may be negative when an
   * explicit output_shape asks for more than the full output). */
  WeirExpr *pad_begin[WEIR_CONV_MAX_SPATIAL];
  WeirExpr *pad_end[WEIR_CONV_MAX_SPATIAL];
  WeirExpr *out[WEIR_CONV_MAX_SPATIAL]; /* output spatial sizes */
} WeirConvGeometry;

/* Resolves the geometry of library node n (op "Conv" when transposed is
 * FALSE, "ConvTranspose" otherwise) for inputs of spatial sizes in_spatial
 * and weights of spatial sizes w_spatial (n_spatial entries each, borrowed).
 * Absent attributes take their ONNX defaults.  Errors name the node. */
WEIR_API gboolean weir_conv_geometry_compute(
    const WeirNode *n, gboolean transposed, guint n_spatial,
    WeirExpr *const *in_spatial, WeirExpr *const *w_spatial,
    WeirConvGeometry *geo, GError **error);
WEIR_API void weir_conv_geometry_clear(WeirConvGeometry *geo);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(WeirConvGeometry, weir_conv_geometry_clear)

/* A parsed Einsum equation: one subscript string per input (letters only;
 * a letter repeated within a term reads a diagonal) and the output
 * subscripts (explicit, each letter once, or for the implicit form the
 * ellipsis' letters then the letters that occur exactly once, sorted).
 * An ellipsis "..." is replaced by fresh letters, `ellipsis`: K of them for
 * the most dimensions any input's "..." stands for, an input whose "..."
 * stands for k dimensions getting the last k (aligned on the right, as
 * broadcasting aligns); an explicit output's "..." gets all K. */
typedef struct {
  guint n_inputs;
  char **inputs; /* NULL-terminated */
  char *output;
  char *ellipsis; /* the letters that replaced "...", "" when none */
} WeirEinsum;

/* Parses equation for n_inputs operands of the given ranks (needed only
 * for "..."; may be NULL, then "..." is WEIR_ERROR_UNSUPPORTED).  Malformed
 * equations, and a term naming more dimensions than its input has, are
 * WEIR_ERROR_INVALID.  The message does not name the node (callers prefix
 * it).  Broadcasting between dimensions of "..." of different sizes is left
 * to the callers (Einsum's inference refuses it). */
/**
 * weir_einsum_parse: (skip)
 */
WEIR_API WeirEinsum *weir_einsum_parse(const char *equation, guint n_inputs,
                                       const guint *ranks, GError **error);
WEIR_API void weir_einsum_free(WeirEinsum *e);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirEinsum, weir_einsum_free)

G_END_DECLS

#endif
