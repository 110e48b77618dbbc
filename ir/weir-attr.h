/* weir-attr.h — typed node attribute accessors and the node error helper.
 *
 * One behaviour for every layer (ops, lowering, transformations, native
 * implementations): an accessor returns the attribute's value when the node
 * has an attribute `name` of exactly the asked type, else the default.
 * Nothing is converted (an INT attribute is not a FLOAT one).
 */
#ifndef WEIR_ATTR_H
#define WEIR_ATTR_H

#include "weir-graph.h"

G_BEGIN_DECLS

/* The INT attribute `name` of n, or dflt when absent or of another type. */
WEIR_API gint64 weir_node_attr_int(const WeirNode *n, const char *name,
                                   gint64 dflt);

/* The FLOAT attribute `name` of n, or dflt when absent or of another type. */
WEIR_API double weir_node_attr_float(const WeirNode *n, const char *name,
                                     double dflt);

/* The STRING attribute `name` of n, or dflt when absent or of another type.
 * (transfer none: owned by the node) */
WEIR_API const char *weir_node_attr_string(const WeirNode *n, const char *name,
                                           const char *dflt);

/* The values (gint64) of the INTS attribute `name` of n, or NULL when absent
 * or of another type.  An empty list is returned as is.
 * (transfer none: owned by the node) */
/**
 * weir_node_attr_ints:
 * Returns: (transfer none) (nullable) (element-type gint64):
 */
WEIR_API const GArray *weir_node_attr_ints(const WeirNode *n, const char *name);

/* Sets error (domain WEIR_ERROR, code) to "node 'LABEL' (OP): MESSAGE" with
 * MESSAGE formatted from fmt (a missing label is empty, a missing op "?"),
 * and returns FALSE. */
WEIR_API gboolean weir_node_fail(GError **error, WeirErrorCode code,
                                 const WeirNode *n, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

G_END_DECLS

#endif /* WEIR_ATTR_H */
