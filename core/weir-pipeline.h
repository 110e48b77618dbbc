/* weir-pipeline.h — optimization levels: -O0, -O1, -O2 (the default), -O3.
 *
 * The pipeline of a level is an ordinary recipe (weir-recipe.h) of Weir's
 * own transformations, shipped as data: data/pipelines/O<N>.json, compiled
 * into libweir as a GResource and installed under $datadir/weir/pipelines
 * for users to copy.  Every step of a pipeline is optional and repeated to
 * a fixpoint, so a step that does not apply to a model is skipped; no step
 * names an implementation (the native choice stays with the defaults of
 * weir_native_default_impl).  docs/recipes.md#optimization-levels lists
 * the steps of each level.
 *
 *   -O0  the program as imported (an empty recipe)
 *   -O1  operator-graph clean-up (tier 2: constant folding, identity and
 *        algebraic simplification, CSE, batch-norm folding, pad fusion)
 *   -O2  -O1, then expansion of what is not native, element-wise fusion,
 *        epilogues on Conv/Gemm/MatMul, map-reduce fusion, memory pooling
 *   -O3  -O2, then apply-tuning (the tuning database of `weir tune`,
 *        weir-tuning.h; a no-op without one) and vectorize
 */
#ifndef WEIR_PIPELINE_H
#define WEIR_PIPELINE_H

#include "weir-recipe.h"

G_BEGIN_DECLS

#define WEIR_OPT_LEVEL_MAX 3
/* The level of `weir run`, `bench`, `export`, `train` and the GUI. */
#define WEIR_OPT_LEVEL_DEFAULT 2

/* Reads a level: "0".."3", "O2" or "-O2".  Errors name the text. */
/**
 * weir_pipeline_parse_level:
 * @level: (out):
 * Returns: (skip):
 */
WEIR_API gboolean weir_pipeline_parse_level(const char *text, guint *level,
                                            GError **error);

/* The pipeline of level (0..WEIR_OPT_LEVEL_MAX) as recipe JSON text, as
 * shipped (transfer full; g_free).  NULL with an error for another level. */
WEIR_API char *weir_pipeline_text(guint level, GError **error);

/* The pipeline of level as a recipe whose source is "-O<level>" (transfer
 * full; weir_recipe_free). */
WEIR_API WeirRecipe *weir_pipeline_recipe(guint level, GError **error);

/* Applies the pipeline of level to program (weir_recipe_apply: all or
 * nothing).  bindings and report as for weir_recipe_apply (both may be
 * NULL). */
/**
 * weir_pipeline_apply:
 * @bindings: (nullable):
 * @report: (nullable):
 */
WEIR_API gboolean weir_pipeline_apply(WeirGraph *program, guint level,
                                      GHashTable *bindings,
                                      WeirRecipeReport *report, GError **error);

/* Applies the pipeline of level to a session step by step
 * (weir_recipe_apply_session): every application becomes a step of its
 * history.  *report (may be NULL) receives the recipe report (transfer
 * full; weir_recipe_report_free), also on error.  Since every step of a
 * pipeline is optional, an error means a step's application failed in a
 * way that is not a refusal (or the level is out of range). */
/**
 * weir_session_optimize:
 * @report: (out) (optional) (transfer full):
 */
WEIR_API gboolean weir_session_optimize(WeirSession *session, guint level,
                                        WeirRecipeReport **report,
                                        GError **error);

G_END_DECLS

#endif
