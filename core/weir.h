/* weir.h — the public API of libweir, in one include. */
#ifndef WEIR_H
#define WEIR_H

#include "weir-analysis.h"
#include "weir-cache.h"
#include "weir-code.h"
#include "weir-codegen.h"
#include "weir-conformance.h"
#include "weir-dataset.h"
#include "weir-evaluate.h"
#include "weir-expand.h"
#include "weir-export.h"
#include "weir-expr.h"
#include "weir-gi.h"
#include "weir-graph.h"
#include "weir-hw.h"
#include "weir-import.h"
#include "weir-init.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-limits.h"
#include "weir-lower.h"
#include "weir-mpi.h"
#include "weir-native.h"
#include "weir-onnx.h"
#include "weir-ops.h"
#include "weir-pipeline.h"
#include "weir-profile.h"
#include "weir-quantize.h"
#include "weir-recipe.h"
#include "weir-runnable.h"
#include "weir-runtime.h"
#include "weir-scratch.h"
#include "weir-session.h"
#include "weir-tensor-io.h"
#include "weir-tensor.h"
#include "weir-token-trainer.h"
#include "weir-train.h"
#include "weir-trainer.h"
#include "weir-transform.h"
#include "weir-tune.h"
#include "weir-tuning.h"
#include "weir-types.h"
#include "weir-validate.h"

G_BEGIN_DECLS

/* Version of libweir, "MAJOR.MINOR.PATCH" (borrowed static string). */
WEIR_API const char *weir_version(void);
/* A hex SHA-256 of the sources libweir was built from: it identifies the
 * code generator in compile-cache keys (docs/runtime.md). (borrowed) */
WEIR_API const char *weir_build_id(void);

G_END_DECLS

#endif
