/* weir-json.h — the JSON interchange format of programs (json-c).
 *
 * The format ("weir-ir", version 1) is documented in docs/ir-format.md.
 * Saving is deterministic: the same graph always gives the same bytes, and
 * save(load(save(g))) == save(g).  Loading checks structure and types of
 * every field and then runs the validator; every error names the source,
 * the JSON path and the element ("model.json: states[0].nodes[2] (node 7):
 * unknown kind 'foo'").
 */
#ifndef WEIR_JSON_H
#define WEIR_JSON_H

#include "weir-graph.h"

G_BEGIN_DECLS

#define WEIR_JSON_FORMAT "weir-ir"
#define WEIR_JSON_VERSION 1

/* Serializes g as pretty-printed JSON text ending in a newline. (transfer
 * full) */
/**
 * weir_graph_to_json:
 * Returns: (transfer full):
 */
WEIR_API char *weir_graph_to_json(const WeirGraph *g);

/* The structure of g as JSON text, for hashing (compile-cache keys): the
 * text of weir_graph_to_json, except that the data of every constant
 * container with more than literal_max (>= 0) elements is replaced by
 * {"bound": true}.  Weights do not change it.  It cannot be loaded back.
 * (transfer full) */
WEIR_API char *weir_graph_structure_json(const WeirGraph *g,
                                         gint64 literal_max);

/* Parses and validates.  source names the input in error messages (a file
 * name, or NULL for "<input>").  len may be -1 for a NUL-terminated text. */
WEIR_API WeirGraph *weir_graph_from_json(const char *text, gssize len,
                                         const char *source, GError **error);

/* File helpers.  Saving writes a temporary file and renames it, so a failed
 * save leaves the old file intact. */
WEIR_API gboolean weir_graph_save(const WeirGraph *g, const char *path,
                                  GError **error);
WEIR_API WeirGraph *weir_graph_load(const char *path, GError **error);

G_END_DECLS

#endif
