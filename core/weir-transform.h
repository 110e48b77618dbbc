/* weir-transform.h — the transformation framework (clients' side).
 *
 * The registry of transformations (built-in ones from transforms/tier*,
 * registered through weir-plugin.h exactly like outside plugins), plugin
 * loading, site enumeration, legality, and all-or-nothing application:
 *
 *   1. parameters are parsed and checked against the specs;
 *   2. can_apply must accept the site (else the error carries its reason);
 *   3. the program is snapshotted, apply runs, the result is validated;
 *   4. on any failure the snapshot is restored: the program's JSON is
 *      byte-identical to what it was, and the error says why.
 * A successful application reports the data-movement and FLOP deltas.
 */
#ifndef WEIR_TRANSFORM_H
#define WEIR_TRANSFORM_H

#include "weir-analysis.h"
#include "weir-init.h"
#include "weir-plugin.h"

G_BEGIN_DECLS

/* Loads plugins from WEIR_PLUGIN_PATH and the user's data directory
 * ($XDG_DATA_HOME/weir/plugins).  Each refused plugin (not loadable,
 * missing entry point, API mismatch, duplicate name, failing registration)
 * adds one message to *problems (owned strings; may be NULL) and the rest
 * still load.  Returns the number of plugins loaded.  Idempotent per
 * directory. */
/**
 * weir_plugins_load:
 * @problems: (nullable) (element-type utf8):
 */
WEIR_API guint weir_plugins_load(GPtrArray *problems);
/* Loads one plugin file. */
WEIR_API gboolean weir_plugin_load_file(const char *path, GError **error);

/* All registered transformations, sorted by tier then name (borrowed
 * records; free the array only). */
/**
 * weir_transforms_list:
 * Returns: (transfer container) (element-type WeirTransformInfo):
 */
WEIR_API GPtrArray *weir_transforms_list(void);
/**
 * weir_transform_lookup:
 * Returns: (transfer none) (nullable):
 */
WEIR_API const WeirTransformInfo *weir_transform_lookup(const char *name);

/* Parameters from "name=value" strings (NULL-terminated, may be NULL), with
 * defaults for the rest; errors name the parameter and the allowed range. */
/**
 * weir_params_parse: (skip)
 */
WEIR_API WeirParams *weir_params_parse(const WeirTransformInfo *t,
                                       const char *const *assignments,
                                       GError **error);
WEIR_API void weir_params_free(WeirParams *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirParams, weir_params_free)
/* Canonical text "a=1,b=x" of every parameter (for histories). (transfer
 * full) */
WEIR_API char *weir_params_to_string(const WeirParams *p);

/* Candidate sites of t in g (GArray of WeirSite), deterministic order. */
/**
 * weir_transform_sites:
 * Returns: (transfer full) (element-type WeirSite):
 */
WEIR_API GArray *weir_transform_sites(const WeirTransformInfo *t,
                                      const WeirGraph *g);
/* Legality of a site; *reason (transfer full) when not legal. */
/**
 * weir_transform_can_apply:
 * @params: (nullable):
 * @reason: (out) (optional) (transfer full):
 */
WEIR_API gboolean weir_transform_can_apply(const WeirTransformInfo *t,
                                           const WeirGraph *g,
                                           const WeirSite *site,
                                           const WeirParams *params,
                                           char **reason);
/* "state 3: nodes 7, 9, 12 (map_exit 'a', access 'tmp', map_entry 'b')"
 * (transfer full) */
WEIR_API char *weir_site_describe(const WeirGraph *g, const WeirSite *site);

/* Parses a site written as text: the syntax of `weir apply --site`
 * (docs/transformations.md), one of
 *   "7", "7,9,12"  node ids, blanks around them allowed; the site's state
 *                  is the one holding the first node
 *   "3:7,9"        node ids in state 3
 *   "@K"           the K-th candidate site of t (weir_transform_sites'
 *                  order, from 0, as `weir transforms` lists them)
 *   other text     a label pattern (GPatternSpec: '*' any text, '?' one
 *                  character) that the first node of exactly one
 *                  candidate site of t matches
 * Text of digits, commas, blanks and at most one colon is read as ids.
 * Ids must name nodes of the one state (of g); they need not be a
 * candidate site (legality is the framework's to judge when applying).
 * text NULL chooses the only candidate site of t.  t may be NULL when text
 * gives ids.  Fills *site and returns TRUE, or FALSE with a
 * WEIR_ERROR_INVALID error naming the text ("--site TEXT: ..." for ids and
 * @K; "NAME: N sites match TEXT; ..." for a pattern, with the candidates
 * listed, at most 12, as "@K  <weir_site_describe>"). */
/**
 * weir_site_parse:
 * @t: (nullable):
 * @text: (nullable):
 * @site: (out caller-allocates):
 */
WEIR_API gboolean weir_site_parse(const WeirGraph *g,
                                  const WeirTransformInfo *t, const char *text,
                                  WeirSite *site, GError **error);

/* What an application changed. */
typedef struct {
  /* logical volume (total_bytes of weir-analysis.h; not memory traffic) */
  WeirQuantity bytes_before, bytes_after;
  WeirQuantity flops_before, flops_after;
  double seconds; /* wall time of apply+validate */
} WeirApplyReport;

WEIR_API void weir_apply_report_clear(WeirApplyReport *r);

/* Applies t at site with params (NULL: defaults).  bindings (may be NULL)
 * give symbol values for the report's figures.  report may be NULL. */
/**
 * weir_transform_apply:
 * @params: (nullable):
 * @bindings: (nullable):
 * @report: (nullable):
 */
WEIR_API gboolean weir_transform_apply(WeirGraph *g, const WeirTransformInfo *t,
                                       const WeirSite *site,
                                       const WeirParams *params,
                                       GHashTable *bindings,
                                       WeirApplyReport *report, GError **error);

G_END_DECLS

#endif
