/* weir-import.h — importing an ONNX model as a Weir program.
 *
 * The importer turns the main graph of an ONNX model (read by the layer of
 * weir-onnx.h) into a program with one state, "main":
 *  - graph inputs that are not initializers become argument containers;
 *    graph outputs too.  Intermediate values become transients whose dtype
 *    and shape come from each operator's shape inference (weir-ops.h).
 *  - Initializers and the outputs of Constant nodes become transient
 *    containers with constant data, created only when a node reads them as
 *    data (a constant that only feeds an attribute, such as Reshape's shape,
 *    leaves no container).
 *  - Every other node becomes one library node following the conventions of
 *    weir-ops.h: op = op_type, label = the node's name, connectors in<k> /
 *    out<k> by ONNX position, one memlet per connector with the full subset
 *    of an access node, attributes normalized to the latest opset's form.
 *  - Container names are identifiers derived from the ONNX names ("input.1"
 *    becomes "input_1", "0" becomes "v0", clashes get a suffix); the access
 *    node of each container keeps the original ONNX name as its label.
 *  - Symbolic dimensions of the inputs (dim_param, or no value at all)
 *    become program symbols: the dim_param made an identifier
 *    ("batch_size"), or "N", "N_1", ... for unnamed ones.  Options may bind
 *    them to values, and the shapes are then concrete.
 * docs/onnx.md lists the supported operators and the normalization rules.
 *
 * Errors (WEIR_ERROR) start with the model's file name and name the node,
 * attribute, input or tensor concerned.  Operators Weir does not know are
 * all reported in one WEIR_ERROR_UNSUPPORTED error ("model.onnx: 3
 * unsupported operators: LSTM (2 nodes: lstm1, lstm2), If (1 node: cond)");
 * other valid models Weir cannot represent (element types such as FLOAT16,
 * subgraphs, opsets outside 11..17, sequences) are WEIR_ERROR_UNSUPPORTED
 * too, and malformed ones WEIR_ERROR_INVALID.
 */
#ifndef WEIR_IMPORT_H
#define WEIR_IMPORT_H

#include "weir-graph.h"
#include "weir-onnx.h"

G_BEGIN_DECLS

/* First and last default-domain opset versions the importer supports. */
#define WEIR_ONNX_OPSET_MIN 11
#define WEIR_ONNX_OPSET_MAX 17

typedef struct {
  /* Values of symbolic dimensions: name -> gint64* (a table from
   * weir_bindings_new).  A name is a dim_param as written in the model or
   * the symbol name the importer gives it ("N" for an unnamed dimension).
   * Bound dimensions become constants.  NULL: none.  (borrowed) */
  GHashTable *symbols;
  /* Concrete shapes of graph inputs: ONNX input name -> GArray of gint64
   * (one per dimension).  They must agree with the model's declared rank
   * and concrete dimensions, and bind the declared dim_params.  NULL: none.
   * (borrowed) */
  GHashTable *input_shapes;
  /* Graph inputs to treat as constants, as if they were initializers: ONNX
   * input name -> WeirTensor* (copied).  Dtype and shape must agree with
   * the model's declaration.  Such inputs are no arguments of the program;
   * an input that some operator needs as an attribute (Reshape's shape)
   * can be imported this way.  NULL: none.  (borrowed) */
  GHashTable *input_values;
  /* Import models whose default-domain opset is outside
   * WEIR_ONNX_OPSET_MIN..MAX with a warning instead of failing.  Inputs
   * and attributes are still read by the schemas' opset rules, but changes
   * outside the supported range are not all known: check the result. */
  gboolean allow_any_opset;
  /* When not NULL, warnings are appended as owned strings (create the array
   * with g_free as its free function).  (borrowed) */
  GPtrArray *warnings;
  /* When not NULL, receives for every graph input and output its ONNX name
   * -> the name of its container (create the table with g_str_hash,
   * g_str_equal, g_free, g_free).  (borrowed) */
  GHashTable *names;
} WeirOnnxImportOptions;

/* Loads and imports path.  opts may be NULL.  (transfer full) */
/**
 * weir_onnx_import:
 * @opts: (nullable):
 * Returns: (transfer full):
 */
WEIR_API WeirGraph *weir_onnx_import(const char *path,
                                     const WeirOnnxImportOptions *opts,
                                     GError **error);

/* Imports an already loaded model (borrowed).  (transfer full) */
WEIR_API WeirGraph *weir_onnx_import_model(const WeirOnnxModel *model,
                                           const WeirOnnxImportOptions *opts,
                                           GError **error);

/* TRUE when path names an ONNX model (by its ".onnx" extension,
 * case-insensitive). */
WEIR_API gboolean weir_onnx_is_model_path(const char *path);

G_END_DECLS

#endif
