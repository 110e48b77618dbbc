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
WEIR_API guint weir_plugins_load(GPtrArray *problems);
/* Loads one plugin file. */
WEIR_API gboolean weir_plugin_load_file(const char *path, GError **error);

/* All registered transformations, sorted by tier then name (borrowed
 * records; free the array only). */
WEIR_API GPtrArray *weir_transforms_list(void);
WEIR_API const WeirTransformInfo *weir_transform_lookup(const char *name);

/* Parameters from "name=value" strings (NULL-terminated, may be NULL), with
 * defaults for the rest; errors name the parameter and the allowed range. */
WEIR_API WeirParams *weir_params_parse(const WeirTransformInfo *t,
                                       const char *const *assignments,
                                       GError **error);
WEIR_API void weir_params_free(WeirParams *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirParams, weir_params_free)
/* Canonical text "a=1,b=x" of every parameter (for histories). (transfer
 * full) */
WEIR_API char *weir_params_to_string(const WeirParams *p);

/* Candidate sites of t in g (GArray of WeirSite), deterministic order. */
WEIR_API GArray *weir_transform_sites(const WeirTransformInfo *t,
                                      const WeirGraph *g);
/* Legality of a site; *reason (transfer full) when not legal. */
WEIR_API gboolean weir_transform_can_apply(const WeirTransformInfo *t,
                                           const WeirGraph *g,
                                           const WeirSite *site,
                                           const WeirParams *params,
                                           char **reason);
/* "state 3: nodes 7, 9, 12 (map_exit 'a', access 'tmp', map_entry 'b')"
 * (transfer full) */
WEIR_API char *weir_site_describe(const WeirGraph *g, const WeirSite *site);

/* What an application changed. */
typedef struct {
  WeirQuantity bytes_before, bytes_after; /* total data movement */
  WeirQuantity flops_before, flops_after;
  double seconds; /* wall time of apply+validate */
} WeirApplyReport;

WEIR_API void weir_apply_report_clear(WeirApplyReport *r);

/* Applies t at site with params (NULL: defaults).  bindings (may be NULL)
 * give symbol values for the report's figures.  report may be NULL. */
WEIR_API gboolean weir_transform_apply(WeirGraph *g, const WeirTransformInfo *t,
                                       const WeirSite *site,
                                       const WeirParams *params,
                                       GHashTable *bindings,
                                       WeirApplyReport *report, GError **error);

G_END_DECLS

#endif
