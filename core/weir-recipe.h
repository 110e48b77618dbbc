/* weir-recipe.h — recipes: transformations to apply, where and how.
 *
 * A recipe is a JSON document (format "weir-recipe", version 1; the full
 * description with examples is docs/recipes.md):
 *
 *   {"format": "weir-recipe", "version": 1,
 *    "steps": [
 *      {"transform": "map-tiling",
 *       "site": {"node": "conv1*"},
 *       "params": {"tile": "32,32"},
 *       "repeat": "until-no-match",
 *       "optional": false}]}
 *
 * Site selectors.  The transformation's candidate sites
 * (weir_transform_sites(), in the framework's deterministic order) are
 * filtered by every field present, then picked:
 *   "state": N        the site's state has id N
 *   "state": "GLOB"   the site's state label matches GLOB (GPatternSpec:
 *                     '*' any text, '?' one character)
 *   "node": "GLOB"    the site has nodes and its first node's label matches
 *   "labels": [...]   the site's nodes have exactly these labels, in order
 *                     ([] selects the whole-program site of a pass)
 *   "op": "Conv"      some node of the site is a library node of that op
 *   "nodes": [ids]    exactly this site: these node ids, in the state given
 *                     by "state": N or else the state holding the first
 *                     node (the site need not be among the candidates)
 * and picked:
 *   "all": true       every candidate (the default)
 *   "first": true     the first candidate that can be applied
 *   "index": K        the K-th candidate (from 0), which must be legal
 * With "all", the candidates are enumerated once; each is checked again
 * just before it is applied (an earlier application may have removed or
 * changed it) and skipped, with its reason, when it no longer applies.
 *
 * A step may give "tier": N instead of "transform": it then runs every
 * registered transformation of that tier (in registry order, each with
 * its default parameters and the same selector) as one step.
 *
 * "repeat": "until-no-match" re-enumerates and re-applies the step until
 * an iteration applies nothing, at most "max_iterations" times (default
 * 100; reaching the cap with sites still applying is an error).
 *
 * Failure.  A step fails when its transformation is unknown, its
 * parameters are invalid, nothing matches, nothing that matches can be
 * applied, or an application fails.  A failed step is rolled back as a
 * whole.  A failed optional step is reported and the run continues;
 * otherwise the run stops with an error naming the step.
 *
 * Determinism: the same program and recipe give the same program, byte for
 * byte (provided the transformations are deterministic, as required).
 */
#ifndef WEIR_RECIPE_H
#define WEIR_RECIPE_H

#include "weir-session.h"

G_BEGIN_DECLS

#define WEIR_RECIPE_FORMAT "weir-recipe"
#define WEIR_RECIPE_VERSION 1
#define WEIR_RECIPE_MAX_ITERATIONS 100

typedef enum {
  WEIR_RECIPE_PICK_ALL,
  WEIR_RECIPE_PICK_FIRST,
  WEIR_RECIPE_PICK_INDEX,
} WeirRecipePick;

/* One step (read-only for clients). */
typedef struct {
  char *path;      /* "steps[2]", for messages */
  char *transform; /* transformation name ("tier N" for a tier step) */
  guint tier;      /* "tier": N instead of "transform" (0: not given) */
  /* selector; absent fields are NULL / 0 */
  guint state_id;      /* "state": N */
  char *state_glob;    /* "state": "GLOB" */
  char *node_glob;     /* "node" */
  GPtrArray *labels;   /* "labels": char*, or NULL */
  char *op;            /* "op" */
  GArray *nodes;       /* "nodes": guint, or NULL */
  WeirRecipePick pick; /* "all" / "first" / "index" */
  guint index;
  char *site_text;   /* the selector as compact JSON text, for reports */
  char **params;     /* "name=value", NULL-terminated (never NULL) */
  char *params_json; /* the "params" object as compact JSON text */
  gboolean repeat;   /* "repeat": "until-no-match" */
  guint max_iterations;
  gboolean optional;
} WeirRecipeStep;

typedef struct {
  char *source;     /* file name or "<input>" */
  GPtrArray *steps; /* WeirRecipeStep* */
} WeirRecipe;

/* Parses a recipe.  Errors name the source and the JSON path of the
 * offending value ("r.json: steps[1].site.index: expected an integer
 * >= 0"); a newer format version is WEIR_ERROR_VERSION.  len may be -1. */
/**
 * weir_recipe_parse:
 * @source: (nullable):
 * Returns: (transfer full):
 */
WEIR_API WeirRecipe *weir_recipe_parse(const char *text, gssize len,
                                       const char *source, GError **error);
WEIR_API WeirRecipe *weir_recipe_load(const char *path, GError **error);
WEIR_API void weir_recipe_free(WeirRecipe *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirRecipe, weir_recipe_free)
/* Pretty-printed JSON ending in a newline (transfer full); parsing it
 * gives the same recipe. */
WEIR_API char *weir_recipe_to_json(const WeirRecipe *r);
/* Writes atomically (temporary file + rename). */
WEIR_API gboolean weir_recipe_save(const WeirRecipe *r, const char *path,
                                   GError **error);

/* --------------------------------------------------------------- building */

/* A recipe of no steps (transfer full); source names it in messages
 * (NULL: "<input>"). */
/**
 * weir_recipe_new:
 * @source: (nullable):
 * Returns: (transfer full):
 */
WEIR_API WeirRecipe *weir_recipe_new(const char *source);
/* Appends a step that applies the registered transformation `transform`
 * at every candidate site (no selector: "all"), with parameters given as
 * "name=value" (NULL-terminated; NULL: the defaults), as
 *   {"transform": transform, "params": {...}}
 * The parameters are checked as weir_params_parse does and kept as the
 * canonical value of every parameter (defaults included), so the step
 * prints (weir_recipe_to_json) with all of them explicit.  On error r is
 * unchanged and the message names the recipe's source, the step's path
 * ("steps[N]") and the problem (unknown transformation, bad parameter). */
/**
 * weir_recipe_add_step:
 * @params: (array zero-terminated=1) (nullable):
 */
WEIR_API gboolean weir_recipe_add_step(WeirRecipe *r, const char *transform,
                                       const char *const *params,
                                       GError **error);

/* ---------------------------------------------------------------- reports */

typedef struct {
  guint step;         /* 1-based position in the recipe */
  char *transform;    /* transformation name */
  char *selector;     /* the step's site selector text */
  guint iterations;   /* enumerations made (1 unless repeat) */
  guint matched;      /* candidates over all iterations */
  GPtrArray *applied; /* char*: description of each site applied */
  GPtrArray *skipped; /* char*: "site: reason" for each candidate skipped */
  WeirFigure bytes_before, bytes_after; /* logical volume (total_bytes of
                                           weir-analysis.h), whole program,
                                           around the step */
  WeirFigure flops_before, flops_after;
  double seconds;     /* wall time of the step */
  gboolean validated; /* the program validates after the step */
  gboolean optional;  /* the step is optional: a failure did not stop */
  gboolean ok;
  char *error; /* why the step failed, or NULL */
} WeirRecipeStepReport;

typedef struct {
  GPtrArray *steps; /* WeirRecipeStepReport*, one per step attempted */
  WeirFigure bytes_before, bytes_after; /* logical volume, whole run */
  WeirFigure flops_before, flops_after;
  gboolean ok;
} WeirRecipeReport;

WEIR_API WeirRecipeReport *weir_recipe_report_new(void);
WEIR_API void weir_recipe_report_free(WeirRecipeReport *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirRecipeReport, weir_recipe_report_free)
/* A human-readable table of the report (transfer full). */
WEIR_API char *weir_recipe_report_to_text(const WeirRecipeReport *r);

/* --------------------------------------------------------------- applying */

/* Applies recipe to program.  All or nothing: on error the program is
 * unchanged.  bindings (name -> gint64*, may be NULL) give symbol values
 * for the figures.  report (may be NULL) receives one entry per step
 * attempted, also on error. */
/**
 * weir_recipe_apply:
 * @bindings: (nullable):
 * @report: (nullable):
 */
WEIR_API gboolean weir_recipe_apply(WeirGraph *program,
                                    const WeirRecipe *recipe,
                                    GHashTable *bindings,
                                    WeirRecipeReport *report, GError **error);

/* Applies recipe to a session: every application becomes a step of its
 * history.  On error the steps of the recipe steps that succeeded remain;
 * the failed step is rolled back (its applications, if any, are left in
 * the redo tail). */
/**
 * weir_recipe_apply_session:
 * @report: (nullable):
 */
WEIR_API gboolean weir_recipe_apply_session(WeirSession *session,
                                            const WeirRecipe *recipe,
                                            WeirRecipeReport *report,
                                            GError **error);

/* The history of a session, steps 1..cursor, as a recipe whose sites are
 * exact: "labels" of the site's nodes, plus "state" and "index" where
 * needed to single the site out, or "nodes" when the site was not among
 * the transformation's candidates.  Applying it to the original program
 * gives the current program, byte for byte. */
WEIR_API WeirRecipe *weir_session_export_recipe(const WeirSession *session,
                                                GError **error);

G_END_DECLS

#endif
