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
} WeirOnnxShape;

void weir_onnx_shape_clear(WeirOnnxShape *s);

/* Whether the node (default domain) is a control-flow operator the
 * importer handles itself (Scan). */
gboolean weir_onnx_control_known(const WeirOnnxNode *n);

/* Imports subgraph `graph` of model (its declared inputs as arguments, its
 * outputs as arguments) as a program; names (optional, g_free/g_free table)
 * receives ONNX name -> container name of each input and output.
 * (transfer full) */
WeirGraph *weir_onnx_import_subgraph(const WeirOnnxModel *model,
                                     const WeirOnnxGraph *graph,
                                     const WeirOnnxImportOptions *opts,
                                     GHashTable *names, GError **error);

/* The importer's subgraph function above, as control.c receives it: the
 * importer passes it in, so that control.c does not call back into
 * import.c (no dependency cycle between the two files). */
typedef WeirGraph *(*WeirOnnxSubgraphImport)(const WeirOnnxModel *model,
                                             const WeirOnnxGraph *graph,
                                             const WeirOnnxImportOptions *opts,
                                             GHashTable *names, GError **error);

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

G_END_DECLS

#endif
