/* weir-init.h — the one initialization of libweir.
 *
 * weir_init() registers everything built in, in this order: the operator
 * schemas (ir/ops/), the expansions of library nodes (ir/lower/expand/),
 * the backward rules (ir/lower/grad.c), the native implementations
 * (core/native.c) and the transformations (transforms/).  The registries
 * themselves never register their built-ins: a client (the CLI, the GUI,
 * the tests' fixture, a program linking libweir) calls weir_init() once
 * before anything else.  Plugins are loaded separately
 * (weir_plugins_load, weir-transform.h).
 */
#ifndef WEIR_INIT_H
#define WEIR_INIT_H

#include "weir-types.h"

G_BEGIN_DECLS

/* Registers the built-ins.  Idempotent and thread-safe (the first call
 * does the work, concurrent callers wait for it). */
WEIR_API void weir_init(void);

/* Older names of weir_init(), kept for existing callers. */
WEIR_API void weir_transforms_init(void);
WEIR_API void weir_expansions_init(void);

G_END_DECLS

#endif
