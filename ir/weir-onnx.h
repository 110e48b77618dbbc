/* weir-onnx.h — reading ONNX model files.
 *
 * This is the reading layer of the ONNX importer: it decodes a .onnx file
 * (a serialized onnx.ModelProto) and presents it as a read-only C view that
 * the importer walks.  It does not convert anything into the IR.
 *
 * Ownership: a WeirOnnxModel owns everything reachable from it.  Every
 * WeirOnnxGraph, WeirOnnxNode, WeirOnnxValueInfo, WeirOnnxAttr and
 * WeirOnnxInitializer, every string and array in them, and every
 * Onnx__TensorProto they point to, is borrowed from the model and stays
 * valid until weir_onnx_model_free().  Strings are never NULL ("" when the
 * file leaves them out).  Tensors are decoded only on request, each time
 * into a new WeirTensor owned by the caller.
 *
 * What loading checks (every message starts with the file name):
 *  - the bytes decode as an ONNX ModelProto, with an ir_version and a graph;
 *  - in the main graph and in every subgraph (If/Loop/Scan bodies), each
 *    node input names a graph input, an initializer, an output of an
 *    earlier node, or (in subgraphs) a value visible in an enclosing graph;
 *    no value is defined twice; graph outputs are defined; nodes have an
 *    op_type;
 *  - every tensor (initializers, tensor attributes) has non-negative dims
 *    and a data size matching its element count and type.
 * Element types Weir cannot compute on (FLOAT16, INT8, ...) load fine: the
 * view reports them, and decoding such a tensor fails with a clear error.
 */
#ifndef WEIR_ONNX_H
#define WEIR_ONNX_H

#include "weir-tensor.h"
#include "weir-types.h"

G_BEGIN_DECLS

/* The protobuf-c message of a tensor, generated at build time from
 * onnx.proto.  Only code that includes the generated onnx.pb-c.h can look
 * inside; the importer normally passes it back to weir_onnx_tensor_decode. */
#ifdef __GI_SCANNER__
/* For g-ir-scanner: an opaque record in Weir's namespace. */
#define Onnx__TensorProto WeirOnnxTensorProto
#endif
typedef struct Onnx__TensorProto Onnx__TensorProto;

typedef struct _WeirOnnxModel WeirOnnxModel;
typedef struct _WeirOnnxGraph WeirOnnxGraph;

/* ONNX element type numbers (TensorProto.DataType). */
typedef enum {
  WEIR_ONNX_TYPE_UNDEFINED = 0,
  WEIR_ONNX_TYPE_FLOAT = 1,
  WEIR_ONNX_TYPE_UINT8 = 2,
  WEIR_ONNX_TYPE_INT8 = 3,
  WEIR_ONNX_TYPE_UINT16 = 4,
  WEIR_ONNX_TYPE_INT16 = 5,
  WEIR_ONNX_TYPE_INT32 = 6,
  WEIR_ONNX_TYPE_INT64 = 7,
  WEIR_ONNX_TYPE_STRING = 8,
  WEIR_ONNX_TYPE_BOOL = 9,
  WEIR_ONNX_TYPE_FLOAT16 = 10,
  WEIR_ONNX_TYPE_DOUBLE = 11,
  WEIR_ONNX_TYPE_UINT32 = 12,
  WEIR_ONNX_TYPE_UINT64 = 13,
  WEIR_ONNX_TYPE_COMPLEX64 = 14,
  WEIR_ONNX_TYPE_COMPLEX128 = 15,
  WEIR_ONNX_TYPE_BFLOAT16 = 16,
} WeirOnnxType;

/* Maps an ONNX element type to a WeirDType; FALSE when Weir has no
 * equivalent (FLOAT16, INT8, STRING, ...). */
WEIR_API gboolean weir_onnx_type_to_dtype(gint32 onnx_type, WeirDType *out);
/* The ONNX element type of a WeirDType (never UNDEFINED). */
WEIR_API WeirOnnxType weir_onnx_type_from_dtype(WeirDType dtype);
/* "FLOAT16"; "type 42" for numbers ONNX does not define (transfer full). */
WEIR_API char *weir_onnx_type_name(gint32 onnx_type);

/* One dimension of a value's shape: concrete (value >= 0, param NULL) or
 * symbolic (value -1, param the dim_param name; dims that have neither get
 * a generated name "unk__<n>", unique within the model). */
typedef struct {
  gint64 value;
  const char *param;
} WeirOnnxDim;

typedef enum {
  WEIR_ONNX_VALUE_TENSOR,  /* a tensor (dtype and maybe a shape below) */
  WEIR_ONNX_VALUE_NO_TYPE, /* the file gives no type */
  WEIR_ONNX_VALUE_OTHER,   /* sequence, map, optional or sparse tensor */
} WeirOnnxValueKind;

/* A graph input, output or value_info entry. */
typedef struct {
  const char *name;
  WeirOnnxValueKind kind;
  gint32 onnx_type;   /* element type number; 0 unless kind is TENSOR */
  gboolean dtype_ok;  /* onnx_type maps to a WeirDType */
  WeirDType dtype;    /* valid when dtype_ok */
  gboolean has_shape; /* FALSE: rank unknown (rank 0, dims NULL) */
  guint rank;
  const WeirOnnxDim *dims; /* rank entries */
} WeirOnnxValueInfo;

/* An initializer: the header of a constant tensor, not decoded. */
typedef struct {
  const char *name;
  gint32 onnx_type;
  gboolean dtype_ok;
  WeirDType dtype;
  guint rank;
  const gint64 *dims; /* rank entries */
  const Onnx__TensorProto *proto;
} WeirOnnxInitializer;

/* Attribute types, with ONNX's numbers (AttributeProto.AttributeType). */
typedef enum {
  WEIR_ONNX_ATTR_UNDEFINED = 0,
  WEIR_ONNX_ATTR_FLOAT = 1,
  WEIR_ONNX_ATTR_INT = 2,
  WEIR_ONNX_ATTR_STRING = 3,
  WEIR_ONNX_ATTR_TENSOR = 4,
  WEIR_ONNX_ATTR_GRAPH = 5,
  WEIR_ONNX_ATTR_FLOATS = 6,
  WEIR_ONNX_ATTR_INTS = 7,
  WEIR_ONNX_ATTR_STRINGS = 8,
  WEIR_ONNX_ATTR_TENSORS = 9,
  WEIR_ONNX_ATTR_GRAPHS = 10,
  WEIR_ONNX_ATTR_SPARSE_TENSOR = 11,
  WEIR_ONNX_ATTR_SPARSE_TENSORS = 12,
  WEIR_ONNX_ATTR_TYPE_PROTO = 13,
  WEIR_ONNX_ATTR_TYPE_PROTOS = 14,
} WeirOnnxAttrType;

/* "ints", "graph", ...; "unknown" for numbers ONNX does not define
 * (borrowed static string). */
WEIR_API const char *weir_onnx_attr_type_name(WeirOnnxAttrType type);

/* A node attribute.  Which fields are set depends on type:
 *   FLOAT: f      INT: i      STRING: s      TENSOR: t      GRAPH: g
 *   FLOATS: n, floats    INTS: n, ints    STRINGS: n, strings
 *   TENSORS: n, tensors  GRAPHS: n, graphs
 * Sparse tensors and type protos are reported by type only (n = 0).
 * Strings are NUL-terminated copies of ONNX's byte strings (cut at an
 * embedded NUL).  A file that leaves out the type gets it inferred from the
 * field that is set, as ONNX's own reader does. */
typedef struct {
  const char *name;
  WeirOnnxAttrType type;
  float f;
  gint64 i;
  const char *s;
  const Onnx__TensorProto *t;
  const WeirOnnxGraph *g;
  gsize n;
  const float *floats;
  const gint64 *ints;
  const char *const *strings;
  const Onnx__TensorProto *const *tensors;
  const WeirOnnxGraph *const *graphs;
} WeirOnnxAttr;

/* A node.  inputs[k] is "" for an omitted optional input, likewise for
 * outputs.  name is the file's node name, or "<op_type>_<index>" when the
 * file leaves it empty. */
typedef struct {
  const char *name;
  const char *op_type;
  const char *domain; /* "" for the default domain (also "ai.onnx") */
  guint index;        /* position in graph->nodes */
  const WeirOnnxGraph *graph;
  guint n_inputs;
  const char *const *inputs;
  guint n_outputs;
  const char *const *outputs;
  guint n_attrs;
  const WeirOnnxAttr *attrs;
} WeirOnnxNode;

/* A graph: the model's main graph or a subgraph held by an attribute.
 * inputs lists every input of the file, including those that are also
 * initializers (see weir_onnx_graph_is_real_input).  Nodes are in the
 * file's order, which loading has checked is topological. */
struct _WeirOnnxGraph {
  const char *name;
  const char *source;          /* file name, for messages */
  const WeirOnnxGraph *parent; /* NULL for the main graph */
  const WeirOnnxNode *owner;   /* node holding this subgraph, or NULL */
  guint n_inputs;
  const WeirOnnxValueInfo *inputs;
  guint n_outputs;
  const WeirOnnxValueInfo *outputs;
  guint n_value_infos;
  const WeirOnnxValueInfo *value_infos;
  guint n_initializers;
  const WeirOnnxInitializer *initializers;
  guint n_nodes;
  const WeirOnnxNode *nodes;
};

/* An opset import.  domain "" is the default ONNX domain. */
typedef struct {
  const char *domain;
  gint64 version;
} WeirOnnxOpset;

/* Loads a .onnx file.  The file is memory-mapped only while it is
 * decoded.  Returns NULL with a WEIR_ERROR_PARSE / _INVALID / _IO error
 * naming the file. (transfer full: free with weir_onnx_model_free) */
/**
 * weir_onnx_model_load: (skip)
 */
WEIR_API WeirOnnxModel *weir_onnx_model_load(const char *path, GError **error);
/* Same from bytes in memory (copied as needed; data may be freed after the
 * call).  source names the data in messages ("model.onnx"). */
/**
 * weir_onnx_model_load_from_data: (skip)
 */
WEIR_API WeirOnnxModel *weir_onnx_model_load_from_data(const guint8 *data,
                                                       gsize len,
                                                       const char *source,
                                                       GError **error);
WEIR_API void weir_onnx_model_free(WeirOnnxModel *model);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirOnnxModel, weir_onnx_model_free)

/* The path or source name given when loading (borrowed). */
WEIR_API const char *weir_onnx_model_source(const WeirOnnxModel *model);
WEIR_API gint64 weir_onnx_model_ir_version(const WeirOnnxModel *model);
/* producer_name and producer_version ("" when absent; borrowed). */
WEIR_API const char *weir_onnx_model_producer(const WeirOnnxModel *model);
WEIR_API const char *
weir_onnx_model_producer_version(const WeirOnnxModel *model);
/* The value of the model's metadata_props entry key (borrowed), or NULL
 * when there is none. */
/**
 * weir_onnx_model_metadata:
 * Returns: (transfer none) (nullable):
 */
WEIR_API const char *weir_onnx_model_metadata(const WeirOnnxModel *model,
                                              const char *key);
/* The opset imports in file order (borrowed array of *n_out entries). */
WEIR_API const WeirOnnxOpset *weir_onnx_model_opsets(const WeirOnnxModel *model,
                                                     guint *n_out);
/* Version of the imported opset for domain ("" and "ai.onnx" both mean the
 * default domain; NULL too), or 0 when the model does not import it. */
WEIR_API gint64 weir_onnx_model_opset(const WeirOnnxModel *model,
                                      const char *domain);
/* The main graph (borrowed; never NULL for a loaded model). */
WEIR_API const WeirOnnxGraph *weir_onnx_model_graph(const WeirOnnxModel *model);

/* Decodes the main graph's initializer called name into a new tensor;
 * NULL with an error if there is none or it cannot be decoded.
 * (transfer full) */
WEIR_API WeirTensor *weir_onnx_model_initializer(const WeirOnnxModel *model,
                                                 const char *name,
                                                 GError **error);

/* Look-ups in one graph (not its parents); NULL when absent.  Borrowed. */
WEIR_API const WeirOnnxInitializer *
weir_onnx_graph_initializer(const WeirOnnxGraph *graph, const char *name);
/* Searches inputs, then outputs, then value_info. */
WEIR_API const WeirOnnxValueInfo *
weir_onnx_graph_value_info(const WeirOnnxGraph *graph, const char *name);
/* The node with name among its outputs. */
WEIR_API const WeirOnnxNode *
weir_onnx_graph_producer(const WeirOnnxGraph *graph, const char *name);
WEIR_API gboolean weir_onnx_graph_is_initializer(const WeirOnnxGraph *graph,
                                                 const char *name);
/* TRUE for a graph input that is not also an initializer: a value the
 * caller must supply.  (Inputs with an initializer are constants with an
 * optional override, as in models exported with old IR versions.) */
WEIR_API gboolean weir_onnx_graph_is_real_input(const WeirOnnxGraph *graph,
                                                const char *name);
/* Decodes an initializer of this graph (transfer full). */
WEIR_API WeirTensor *
weir_onnx_graph_decode_initializer(const WeirOnnxGraph *graph, const char *name,
                                   GError **error);

/* The attribute called name, or NULL. (borrowed) */
WEIR_API const WeirOnnxAttr *weir_onnx_node_attr(const WeirOnnxNode *node,
                                                 const char *name);
/* Typed attribute getters.  When the attribute is absent, *out receives
 * the default (lists: NULL and 0) and they return TRUE; when it has
 * another type they return FALSE with an error naming file, node and
 * attribute.  Returned arrays and strings are borrowed. */
WEIR_API gboolean weir_onnx_node_attr_int(const WeirOnnxNode *node,
                                          const char *name, gint64 def,
                                          gint64 *out, GError **error);
WEIR_API gboolean weir_onnx_node_attr_float(const WeirOnnxNode *node,
                                            const char *name, float def,
                                            float *out, GError **error);
WEIR_API gboolean weir_onnx_node_attr_string(const WeirOnnxNode *node,
                                             const char *name, const char *def,
                                             const char **out, GError **error);
WEIR_API gboolean weir_onnx_node_attr_ints(const WeirOnnxNode *node,
                                           const char *name, const gint64 **out,
                                           gsize *n_out, GError **error);
WEIR_API gboolean weir_onnx_node_attr_floats(const WeirOnnxNode *node,
                                             const char *name,
                                             const float **out, gsize *n_out,
                                             GError **error);
/* Number of inputs counting up to the last non-omitted one. */
WEIR_API guint weir_onnx_node_n_present_inputs(const WeirOnnxNode *node);
/* inputs[k] if k is in range and not omitted, else NULL. (borrowed) */
WEIR_API const char *weir_onnx_node_input(const WeirOnnxNode *node, guint k);

/* Decodes a TensorProto into a new tensor.  context names the tensor in
 * messages ("model.onnx: initializer 'W'").  Reads raw_data
 * (little-endian, length must be exactly count x element size) or the typed
 * fields (float_data, double_data, int32_data for INT32/BOOL/UINT8,
 * int64_data) with count checks.  Refuses element types without a
 * WeirDType ("unsupported element type FLOAT16"), external data and
 * segments with WEIR_ERROR_UNSUPPORTED.  (transfer full) */
/**
 * weir_onnx_tensor_decode: (skip)
 */
WEIR_API WeirTensor *weir_onnx_tensor_decode(const Onnx__TensorProto *proto,
                                             const char *context,
                                             GError **error);

/* Writes the ONNX model file source_path to path with new data for some
 * initializers of its main graph: values maps an initializer name (char*)
 * -> WeirTensor* (borrowed) of the initializer's dtype and shape.  The data
 * is stored as raw_data; the rest of the model is kept as decoded.  Fails,
 * writing nothing, when a name is not an initializer, a value does not
 * match, or an initializer uses external data.  The write is atomic. */
WEIR_API gboolean weir_onnx_save_with_initializers(const char *source_path,
                                                   GHashTable *values,
                                                   const char *path,
                                                   GError **error);

/* The same, also setting entries of the model's metadata_props: metadata
 * (may be NULL) maps a key (char*) -> value (char*); an existing key gets
 * the new value, new keys are appended in key order.  A value may also
 * change its initializer's shape (structured pruning): the graph's
 * value_info entries (optional shapes of intermediate values, which may
 * then be stale) are left out of the file, and an initializer that is also
 * declared as a graph input is refused. */
/**
 * weir_onnx_save_with_metadata: (skip)
 */
WEIR_API gboolean weir_onnx_save_with_metadata(const char *source_path,
                                               GHashTable *values,
                                               GHashTable *metadata,
                                               const char *path,
                                               GError **error);

G_END_DECLS

#endif
