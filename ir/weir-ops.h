/* weir-ops.h — the operator library: what a library node means.
 *
 * Every operator Weir knows (ONNX operators by their op_type: "Conv",
 * "Gemm", "Relu", ...) has one WeirOpInfo record: a schema (input and output
 * counts, typed attributes with defaults), a shape and type inference
 * function and a FLOP count.  The records live in a registry keyed by op
 * name; the built-in operators (ir/ops/) register themselves on first use of
 * the registry.  Expansions into maps, tasklets and memlets are registered
 * separately, per (op, implementation), by ir/lower/expand/.
 *
 * Library-node conventions (the importer produces them; expansions,
 * analyses and code generation rely on them):
 *  - node->op is the operator name, node->label the original (ONNX) node
 *    name, kept for display and error messages.
 *  - Connectors are positional: inputs "in0", "in1", ... and outputs
 *    "out0", "out1", ... in the operator's order.  An omitted optional input
 *    has no connector (Clip with only a max has "in0" and "in2").
 *  - Each connector has exactly one memlet, from or to an ACCESS node, with
 *    the container's full subset.  Library nodes are never wired directly to
 *    each other.
 *  - Attributes are normalized by the importer to the latest opset's form
 *    *as attributes*: inputs that older or newer opsets take as constant
 *    tensors (Reshape's shape, Squeeze/Unsqueeze/Reduce* axes, Split's split,
 *    Pad's pads and value, Slice's starts/ends/axes/steps, Clip's min/max
 *    when constant, Tile's repeats, Expand's shape, TopK's k, ...) become
 *    INTS/FLOAT attributes of the same name and the input connector is
 *    dropped.  Semantic changes between opsets are recorded explicitly (for
 *    example Softmax before opset 13 gets the attribute "legacy_2d" = 1).
 *    Attribute defaults from the schema are filled in, so expansions can read
 *    every attribute without repeating defaults.
 */
#ifndef WEIR_OPS_H
#define WEIR_OPS_H

#include "weir-graph.h"
#include "weir-tensor.h"

G_BEGIN_DECLS

#define WEIR_OP_VARIADIC G_MAXUINT

/* One attribute of an operator's schema. */
typedef struct {
  const char *name;
  WeirAttrType type;
  gboolean required;
  /* Default as text, parsed according to type: "1", "0.0001", "NOTSET",
   * "1,1" for INTS; NULL when there is no default (optional attribute with
   * no value, e.g. Conv's kernel_shape, inferred from the weights). */
  const char *default_value;
  /* 1-based position of the input that carries this attribute as a
   * constant tensor in some opsets (Reshape "shape" = 2, ReduceSum "axes" =
   * 2, Clip "min" = 2); 0 when it is always an attribute.  The importer
   * moves such inputs into the attribute and drops the connector. */
  guint from_input;
  /* First opset in which the value comes from that input (e.g. 13 for
   * ReduceSum axes, 11 for Clip min/max); before it, it is an attribute. */
  guint input_since;
} WeirOpAttrSpec;

/* What shape inference knows about one input or output value. */
typedef struct {
  gboolean present; /* FALSE for an omitted optional input */
  WeirDType dtype;
  guint rank;
  WeirExpr **shape; /* rank entries */
  /* Known content, when the value is a compile-time constant: */
  const WeirTensor *value; /* the tensor, or NULL */
  /* For small integer tensors computed from shapes (Shape -> Gather ->
   * Concat -> Reshape chains): one symbolic expression per element, or
   * NULL.  Lets a symbolic batch size flow through shape computations. */
  GPtrArray *int_values; /* WeirExpr* */
  /* Outputs only: the extent of dimension bounded_dim is an upper bound,
   * the valid length known only at run time (NonZero, Compress, Unique).
   * The node then has an output connector "count" that receives the
   * length as an i64 scalar; the importer gives the output's container
   * that count (WeirContainer.count, docs/ir-format.md). */
  gboolean bounded;
  guint bounded_dim;
} WeirOpValue;

typedef struct {
  const WeirNode *node; /* the library node (attributes normalized) */
  guint n_inputs;
  const WeirOpValue *inputs;
  guint n_outputs;
  WeirOpValue *outputs; /* to be filled with the helpers below */
  gpointer priv;
} WeirOpInferContext;

/* Helpers for inference functions.  Shapes and values are borrowed and
 * referenced as needed. */
WEIR_API void weir_op_set_output(WeirOpInferContext *ctx, guint k,
                                 WeirDType dtype, guint rank,
                                 WeirExpr *const *shape);
/* Marks dimension dim of output k (set before with weir_op_set_output) as
 * bounded: its extent is an upper bound and the valid length is the
 * node's "count" output. */
WEIR_API void weir_op_set_output_bounded(WeirOpInferContext *ctx, guint k,
                                         guint dim);
WEIR_API void weir_op_set_output_int_values(WeirOpInferContext *ctx, guint k,
                                            WeirExpr *const *values, guint n);

/**
 * weir_op_input: (skip)
 *
 * Input k of the node being inferred when it is present, else NULL.
 */
WEIR_API const WeirOpValue *weir_op_input(const WeirOpInferContext *ctx,
                                          guint k);
/**
 * weir_op_require_input: (skip)
 *
 * Input k, or NULL with an error naming the node ("input k is missing").
 */
WEIR_API const WeirOpValue *weir_op_require_input(const WeirOpInferContext *ctx,
                                                  guint k, GError **error);
/* The Weir dtype of an ONNX TensorProto element type number (1 FLOAT, 2
 * UINT8, 3 INT8, ... 16 BFLOAT16); FALSE for types without one (STRING,
 * complex, float8, 4-bit). */
WEIR_API gboolean weir_op_dtype_from_onnx(gint64 onnx_type, WeirDType *out);

/**
 * weir_op_normalize_axis: (skip)
 *
 * Maps axis in [-rank, rank) (or [-rank, rank] when inclusive) to
 * [0, rank) (or [0, rank]); out of range is an error naming node n and
 * `what` ("axis", "start", ...).
 */
WEIR_API gboolean weir_op_normalize_axis(const WeirNode *n, const char *what,
                                         gint64 axis, guint rank,
                                         gboolean inclusive, guint *out,
                                         GError **error);

/* Numpy-style broadcasting of n shapes (right-aligned; a dimension of
 * constant size 1 stretches; otherwise sizes must be equal, symbolically).
 * *out_shape receives out_rank owned expressions (free each with
 * weir_expr_unref, then the array with g_free). */
WEIR_API gboolean weir_op_broadcast(guint n, const guint *ranks,
                                    WeirExpr *const *const *shapes,
                                    guint *out_rank, WeirExpr ***out_shape,
                                    GError **error);

/* Frees the shape and int_values of a WeirOpValue filled by inference (the
 * struct itself is the caller's). */
WEIR_API void weir_op_value_clear(WeirOpValue *v);

typedef struct _WeirOpInfo WeirOpInfo;
struct _WeirOpInfo {
  const char *name;
  guint min_inputs, max_inputs; /* max may be WEIR_OP_VARIADIC */
  guint min_outputs, max_outputs;
  const WeirOpAttrSpec *attrs; /* n_attrs entries */
  guint n_attrs;
  /* Output dtypes and shapes from inputs and attributes.  Errors name the
   * node (ctx->node->label) and the problem. */
  gboolean (*infer)(WeirOpInferContext *ctx, GError **error);
  /* FLOPs of one execution, or NULL when not meaningful. */
  WeirExpr *(*flops)(const WeirGraph *g, const WeirState *s, const WeirNode *n);
  /* ONNX domain the operator comes from: NULL for the default domain (""
   * or "ai.onnx"); "ai.onnx.preview.training" for Adam, Momentum and
   * Adagrad.  The importer accepts a node only in its operator's domain. */
  const char *domain;
  /* Bytes one execution communicates between processes (the payload of
   * the collectives Allreduce and Broadcast, ir/ops/comm.c), or NULL for
   * operators that communicate nothing.  The analyses report it as
   * comm_bytes (weir-analysis.h). */
  WeirExpr *(*comm_bytes)(const WeirGraph *g, const WeirState *s,
                          const WeirNode *n);
};

/* Registers an operator (replacing one of the same name).  info is borrowed
 * and must outlive the registry (static records). */
WEIR_API void weir_op_register(const WeirOpInfo *info);
/* Looks up an operator by name, or NULL. */
WEIR_API const WeirOpInfo *weir_op_lookup(const char *name);
/* The operator for an ONNX node of type op_type in domain `domain` (NULL,
 * "" and "ai.onnx" name the default domain), or NULL when Weir has no such
 * operator in that domain. */
WEIR_API const WeirOpInfo *weir_op_lookup_onnx(const char *domain,
                                               const char *op_type);
/* Names of all registered operators, sorted (transfer container: free the
 * array, not the strings). */
/**
 * weir_op_names:
 * Returns: (transfer container) (element-type utf8):
 */
WEIR_API GPtrArray *weir_op_names(void);

/* Checks a library node's attributes against its schema: required ones
 * present, types right; fills defaults for absent ones that have a default.
 * Errors name the node, the attribute and the problem. */
WEIR_API gboolean weir_op_check_attrs(WeirNode *n, GError **error);

/* Expansions.  An expansion replaces library node n in state s by maps,
 * tasklets and memlets (or, for fast implementations, by other nodes) that
 * compute the same thing, connected to the same access nodes; transients it
 * needs are added to g with fresh names.  On error g may be partly changed:
 * callers work on a copy (weir_expand_node in ir/lower/weir-expand.h does).
 * Expansions live in ir/lower/expand/ and register here by (op,
 * implementation) name; "pure" is the maps-and-tasklets implementation every
 * operator has. */
typedef gboolean (*WeirExpandFunc)(WeirGraph *g, WeirState *s, WeirNode *n,
                                   GError **error);

/**
 * weir_op_register_expansion: (skip)
 */
WEIR_API void weir_op_register_expansion(const char *op, const char *impl,
                                         WeirExpandFunc func);
/* The expansion registered for (op, impl), or NULL. */
/**
 * weir_op_expansion: (skip)
 */
WEIR_API WeirExpandFunc weir_op_expansion(const char *op, const char *impl);
/* Every registered expansion as "op/impl", sorted (transfer full). */
/**
 * weir_op_expansions:
 * Returns: (transfer full) (array zero-terminated=1):
 */
WEIR_API char **weir_op_expansions(void);

/* A fresh container name based on base ("tmp", "tmp_1", ...). (transfer
 * full) */
WEIR_API char *weir_graph_fresh_name(const WeirGraph *g, const char *base);

/* Known elements of small integer tensors (ir/ops/shape.c), for inference
 * functions that propagate WeirOpValue.int_values.
 *
 * weir_op_value_int_values: the elements of v as expressions: its
 * int_values, or the elements of an integer constant `value` tensor (at most
 * 64); NULL when unknown.  (transfer full: free with g_ptr_array_unref)
 *
 * weir_op_int_values_copy: gives output `out` the known elements of input
 * `in` unchanged (Cast between integer types, Identity, Reshape); returns
 * whether they were known.
 *
 * weir_op_int_values_binary: for elementwise Add, Sub, Mul, Div, Mod and
 * the comparisons Equal, Less, LessOrEqual, Greater, GreaterOrEqual (op:
 * the ONNX name, or NULL for ctx->node->op) on integer inputs 0 and 1 whose
 * elements are known, sets output 0's int_values (a length-1 operand
 * broadcasts; comparisons give 0 or 1).  Div truncates toward zero like
 * ONNX integer Div; a symbolic quotient is only formed when exact (N*64 /
 * 64 = N); Mod follows the node's `fmod`, symbolic only for a size modulo
 * a positive constant; a symbolic comparison is known when the difference
 * of its operands is constant (and Equal of a size with a negative
 * constant is 0).  Returns FALSE, setting nothing, when the result is not
 * known.  Call it after weir_op_set_output for output 0.
 *
 * weir_op_int_values_where: Where over known elements (condition 0/1,
 * values in inputs 1 and 2, each of length n or 1).
 *
 * weir_op_int_values_not: Not over known 0/1 elements. */
/**
 * weir_op_value_int_values: (skip)
 */
WEIR_API GPtrArray *weir_op_value_int_values(const WeirOpValue *v);
WEIR_API gboolean weir_op_int_values_copy(WeirOpInferContext *ctx, guint in,
                                          guint out);
WEIR_API gboolean weir_op_int_values_binary(WeirOpInferContext *ctx,
                                            const char *op);
WEIR_API gboolean weir_op_int_values_where(WeirOpInferContext *ctx);
WEIR_API gboolean weir_op_int_values_not(WeirOpInferContext *ctx);

/* Resize (ir/ops/resize.c): TRUE when axis d of node n, of input size `in`
 * and output size `out`, is not resized: sizes equal with scale 1 (and a
 * coordinate mode that maps an index to itself), or an input of size 1,
 * whose one element every output element reads.  Shared by the FLOP count
 * and the expansion. */
WEIR_API gboolean weir_op_resize_keeps_axis(const WeirNode *n, guint d,
                                            WeirExpr *in, WeirExpr *out);
/* The coordinate transformation mode and nearest mode of a Resize or
 * Upsample node n: Resize's attributes (defaults half_pixel,
 * round_prefer_floor); Upsample's are fixed, asymmetric and floor.
 * (borrowed) */
WEIR_API const char *weir_op_resize_coordinate_mode(const WeirNode *n);
WEIR_API const char *weir_op_resize_nearest_mode(const WeirNode *n);

/* Det: the largest matrix order Weir accepts (its expansion unrolls the
 * LU factorization in one tasklet per matrix). */
#define WEIR_OP_DET_MAX_ORDER 12

/**
 * weir_op_flops_zero: (skip)
 *
 * The FLOP rule of operators that only move data: 0. (transfer full)
 */
WEIR_API WeirExpr *weir_op_flops_zero(const WeirGraph *g, const WeirState *s,
                                      const WeirNode *n);

/**
 * weir_op_dft_geometry: (skip)
 *
 * DFT (ir/ops/signal.c): the signal axis of node n, of input rank `rank`
 * and shape `shape`, in [0, rank - 1), and the transform length (the
 * attribute dft_length, or the axis's size; (transfer full) in *length).
 * Shared by inference, the FLOP count and the expansion.
 */
WEIR_API gboolean weir_op_dft_geometry(const WeirNode *n, guint rank,
                                       WeirExpr *const *shape, guint *axis,
                                       WeirExpr **length, GError **error);

/* ONNX Slice on one axis of size dim (symbolic): start/end as given
 * (negative counts from the end, clamped; beyond +-2^62 means "to the
 * end"), step nonzero.  *start_out receives the first index taken and
 * *count_out the number of elements (both owned); element k of the result
 * is input index start + k * step. */
WEIR_API void weir_op_slice_range(WeirExpr *dim, gint64 start, gint64 end,
                                  gint64 step, WeirExpr **start_out,
                                  WeirExpr **count_out);

G_END_DECLS

#endif
