/* weir-plugin.h — the transformation plugin API (version 1).
 *
 * Every transformation of Weir — built in or third party — is described by
 * one WeirTransformInfo record and registered through
 * weir_transform_register().  A third-party plugin is a shared object that
 * exports one function, weir_plugin_register (WEIR_PLUGIN_ENTRY), which the
 * host calls with its API version and in which the plugin registers its
 * transformations.  Plugins are found on WEIR_PLUGIN_PATH (colon separated
 * directories) and in $XDG_DATA_HOME/weir/plugins.
 *
 * Compatibility rules (as in sqlite3_module): the record starts with the
 * API version it was written against; new fields are only ever added at the
 * end, before the reserved space, and a record with a larger version than
 * the host's is refused with a clear message.
 *
 * A transformation sees the program through the public IR API
 * (weir-graph.h and friends) and must not keep pointers into it between
 * calls.  The framework (core/weir-transform.h) checks legality, snapshots
 * the program, calls apply, validates the result and restores the snapshot
 * exactly when apply or validation fails — so apply may return FALSE at
 * any point, leaving the graph half changed.
 */
#ifndef WEIR_PLUGIN_H
#define WEIR_PLUGIN_H

#include "weir-graph.h"

G_BEGIN_DECLS

#define WEIR_PLUGIN_API_VERSION 1
#define WEIR_PLUGIN_ENTRY "weir_plugin_register"

/* ---------------------------------------------------------------- params */

typedef enum {
  WEIR_PARAM_INT,    /* gint64 within [min, max] */
  WEIR_PARAM_FLOAT,  /* double within [fmin, fmax] */
  WEIR_PARAM_BOOL,   /* "true"/"false" */
  WEIR_PARAM_STRING, /* free text */
  WEIR_PARAM_CHOICE, /* one of `choices` ("pure|blas|im2col") */
  WEIR_PARAM_INTS,   /* comma-separated gint64 list, each within [min, max] */
} WeirParamType;

typedef struct {
  const char *name;
  WeirParamType type;
  const char *default_value; /* text form; NULL: the parameter is required */
  gint64 min, max;           /* INT, INTS */
  double fmin, fmax;         /* FLOAT */
  const char *choices;       /* CHOICE: '|'-separated */
  const char *doc;           /* one line */
} WeirParamSpec;

/* Parameter values of one application: name -> text, checked against the
 * specs by the framework before can_apply/apply see them. */
typedef struct _WeirParams WeirParams;

WEIR_API gint64 weir_params_get_int(const WeirParams *p, const char *name);
WEIR_API double weir_params_get_float(const WeirParams *p, const char *name);
WEIR_API gboolean weir_params_get_bool(const WeirParams *p, const char *name);
/* STRING and CHOICE values (borrowed). */
WEIR_API const char *weir_params_get_string(const WeirParams *p,
                                            const char *name);
/* INTS values (borrowed array of gint64). */
/**
 * weir_params_get_ints:
 * Returns: (transfer none) (element-type gint64):
 */
WEIR_API const GArray *weir_params_get_ints(const WeirParams *p,
                                            const char *name);

/* ------------------------------------------------------------------ sites */

#define WEIR_SITE_MAX_NODES 8

/* Where a transformation applies: the state and the ids of the matched
 * elements, in the order of the transformation's pattern (for hand-written
 * matchers: an order the transformation documents).  Ids are stable across
 * edits and sessions, so a site can be recorded in a history or recipe.
 * Whole-program passes use state 0 and no nodes. */
typedef struct {
  guint state;
  guint n_nodes;
  guint nodes[WEIR_SITE_MAX_NODES];
} WeirSite;

/* ---------------------------------------------------------------- pattern */

/* A pattern for the generic matcher: a small subgraph of node kinds (and
 * library op names) joined by memlets.  A match maps each pattern node to a
 * distinct node of one state such that every pattern edge exists (at least
 * one memlet from the first to the second). */
typedef struct {
  WeirNodeKind kind;
  const char *op;     /* LIBRARY only: op name, or NULL for any op */
  gboolean transient; /* ACCESS only: the container must be transient */
} WeirPatternNode;

typedef struct {
  guint src, dst; /* indices into the pattern's nodes */
} WeirPatternEdge;

typedef struct {
  const WeirPatternNode *nodes;
  guint n_nodes; /* at most WEIR_SITE_MAX_NODES */
  const WeirPatternEdge *edges;
  guint n_edges;
} WeirPattern;

/* All matches of pattern in g, in deterministic order (states by id, then
 * node ids lexicographically in pattern order).  Returns a GArray of
 * WeirSite. */
/**
 * weir_pattern_match: (skip)
 */
WEIR_API GArray *weir_pattern_match(const WeirGraph *g,
                                    const WeirPattern *pattern);

/* ---------------------------------------------------------- transformation */

typedef struct {
  guint api_version;       /* WEIR_PLUGIN_API_VERSION of the plugin's build */
  const char *name;        /* unique, lower-case with dashes: "map-tiling" */
  guint tier;              /* 1 intra-operator, 2 operator graph,
                              3 inter-operator fusion, 4 global data
                              movement */
  const char *description; /* one line */
  const WeirParamSpec *params;
  guint n_params;
  /* Either a pattern (the framework enumerates its matches) or a match
   * function (hand-written enumeration, appending WeirSite values to sites
   * in a deterministic order).  If both are given, match refines: it
   * receives the pattern's matches in `sites` and may remove or reorder. */
  const WeirPattern *pattern;
  void (*match)(const WeirGraph *g, GArray *sites);
  /* Legality of one site with given parameters; when FALSE, *reason
   * receives a human-readable explanation (transfer full). */
  gboolean (*can_apply)(const WeirGraph *g, const WeirSite *site,
                        const WeirParams *params, char **reason);
  /* Performs the transformation.  May assume can_apply returned TRUE. */
  gboolean (*apply)(WeirGraph *g, const WeirSite *site,
                    const WeirParams *params, GError **error);
  gpointer reserved[8]; /* zero; future fields go before this */
} WeirTransformInfo;

/* Registers a transformation (info is borrowed and must outlive the
 * process: static data).  Refused with an error for an API version newer
 * than the host's, a missing name/apply, a tier outside 1..4, or a name
 * already registered. */
WEIR_API gboolean weir_transform_register(const WeirTransformInfo *info,
                                          GError **error);

/* ------------------------------------------------------------- tuning */

/* What the tuning database (`weir tune`, docs/tuning.md) chose for library
 * node n of state s of g at `threads` threads (0: the default count): the
 * fastest checked candidate stored for the node's signature.  On success
 * *impl receives the implementation ("pure" or a registered native one),
 * *params its parameters ("" or "name=value,..."), *key the signature key
 * (all transfer full), or all NULL when there is no database or no usable
 * result.  FALSE with an error only for a database that cannot be read. */
WEIR_API gboolean weir_plugin_tuned_choice(const WeirGraph *g,
                                           const WeirState *s,
                                           const WeirNode *n, guint threads,
                                           char **impl, char **params,
                                           char **key, GError **error);

/* The function a plugin exports as WEIR_PLUGIN_ENTRY. */
typedef gboolean (*WeirPluginRegisterFunc)(guint host_api_version,
                                           GError **error);

G_END_DECLS

#endif
