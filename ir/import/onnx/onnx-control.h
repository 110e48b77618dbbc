/* onnx-control.h — the ONNX control-flow operators the importer turns into
 * Weir control flow (ir/import/onnx/control.c; import.c calls it).  Not
 * installed.
 *
 * Scan becomes a nested program node: a loop over the scan axis in the
 * nested program's states, whose step state holds the body (the `body`
 * subgraph, imported as a program of its own) as a nested node of its own.
 */
#ifndef WEIR_ONNX_CONTROL_H
#define WEIR_ONNX_CONTROL_H

#include "weir-import.h"

G_BEGIN_DECLS

/* What the importer knows about one input or output of a node. */
typedef struct {
  gboolean present;
  WeirDType dtype;
  guint rank;
  WeirExpr **shape; /* rank entries: borrowed for inputs, owned (free with
                       weir_onnx_shape_clear) for outputs */
  gboolean bounded; /* outputs: dimension 0 is an upper bound, the valid
                       length being the program's "count" argument */
  gint64 constant;  /* inputs: the value of an integer scalar known at
                       import (valid when is_constant) */
  gboolean is_constant;
  gint64 declared; /* outputs: the model's declared length of dimension 0
                      (-1: none), given by the caller */
} WeirOnnxShape;

void weir_onnx_shape_clear(WeirOnnxShape *s);

/* Whether the node (default domain) is a control-flow operator the
 * importer handles itself (Scan, If, Loop). */
gboolean weir_onnx_control_known(const WeirOnnxNode *n);

/* What the caller knows of one input of a subgraph (Loop's body). */
typedef struct {
  const char *name; /* the input's ONNX name in the subgraph */
  /* its type, used when the subgraph does not declare one, and for a
   * captured value */
  WeirDType dtype;
  guint rank;
  WeirExpr *const *shape;
  /* non-NULL: the input (an int64 scalar) holds the value of this symbol,
   * which becomes a symbol of the program: shapes may depend on it */
  const char *symbol;
  /* a value of an enclosing graph that the subgraph reads: an extra input
   * (argument) of the program */
  gboolean captured;
} WeirOnnxBodyInput;

/* Imports subgraph `graph` of model (its declared inputs as arguments, its
 * outputs as arguments) as a program; names (optional, g_free/g_free table)
 * receives ONNX name -> container name of each input and output.  inputs
 * (n_inputs of them, may be NULL) add what the caller knows of inputs.
 * (transfer full) */
WeirGraph *weir_onnx_import_subgraph(const WeirOnnxModel *model,
                                     const WeirOnnxGraph *graph,
                                     const WeirOnnxImportOptions *opts,
                                     GHashTable *names,
                                     const WeirOnnxBodyInput *inputs,
                                     guint n_inputs, GError **error);

/* The importer's subgraph function above, as control.c receives it: the
 * importer passes it in, so that control.c does not call back into
 * import.c (no dependency cycle between the two files). */
typedef WeirGraph *(*WeirOnnxSubgraphImport)(const WeirOnnxModel *model,
                                             const WeirOnnxGraph *graph,
                                             const WeirOnnxImportOptions *opts,
                                             GHashTable *names,
                                             const WeirOnnxBodyInput *inputs,
                                             guint n_inputs, GError **error);

/* The names a subgraph reads without defining them (values of enclosing
 * graphs), in order of first use, nested subgraphs included.
 * (transfer container: borrowed names) */
GPtrArray *weir_onnx_subgraph_captures(const WeirOnnxGraph *graph);

/* The nested program of Scan node `on` (opset: the model's default opset):
 * argument containers "in<k>" for its present inputs (ins[k], n_in of
 * them) and "out<k>" for its outputs (n_out), whose dtypes and shapes are
 * written to outs[k].  Symbols of the input shapes become symbols of the
 * program (the caller binds them to its own).  The body is imported with
 * import_subgraph.  Errors name the node.
 * (transfer full) */
WeirGraph *weir_onnx_scan_program(const WeirOnnxModel *model,
                                  const WeirOnnxNode *on, gint64 opset,
                                  const WeirOnnxImportOptions *opts,
                                  WeirOnnxSubgraphImport import_subgraph,
                                  guint n_in, const WeirOnnxShape *ins,
                                  guint n_out, WeirOnnxShape *outs,
                                  GError **error);

/* The nested program of an If node: argument "in0" (the condition, one
 * element) and "out<k>"; state "then" holds the then_branch as a nested
 * node, "else" the else_branch, entered by the transitions "in0" and
 * (otherwise) unconditional.  Both branches must give outputs of the same
 * dtypes and shapes.  cap_names (n_cap) are the values of the enclosing
 * graph the branches read (weir_onnx_subgraph_captures): arguments
 * "in<n_in + j>" whose shapes are ins[n_in + j], passed to the branches.
 * Arguments as weir_onnx_scan_program. */
WeirGraph *weir_onnx_if_program(
    const WeirOnnxModel *model, const WeirOnnxNode *on,
    const WeirOnnxImportOptions *opts, WeirOnnxSubgraphImport import_subgraph,
    guint n_cap, const char *const *cap_names, guint n_in,
    const WeirOnnxShape *ins, guint n_out, WeirOnnxShape *outs, GError **error);

/* The nested program of a Loop node: arguments "in0" (trip count M),
 * "in1" (cond), "in<2+i>" (initial loop-carried values), "out<k>" and,
 * with scan outputs, "count" (i64 scalar, the number of iterations run).
 * A scan output's length is data-dependent: its extent is a bound (M when
 * ins[0] is a constant, else the declared length outs[k].declared) and
 * outs[k].bounded is set; the loop stops at the bound.  The body's
 * iteration number holds the program's loop symbol (shapes in the body may
 * depend on it).  Captured values as for If.  Arguments as
 * weir_onnx_scan_program. */
WeirGraph *weir_onnx_loop_program(
    const WeirOnnxModel *model, const WeirOnnxNode *on,
    const WeirOnnxImportOptions *opts, WeirOnnxSubgraphImport import_subgraph,
    guint n_cap, const char *const *cap_names, guint n_in,
    const WeirOnnxShape *ins, guint n_out, WeirOnnxShape *outs, GError **error);

G_END_DECLS

#endif
