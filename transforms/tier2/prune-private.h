/* prune-private.h — shared by prune.c (the transformation `prune`) and
 * prune-channels.c (its structure=channels part). */
#ifndef WEIR_PRUNE_PRIVATE_H
#define WEIR_PRUNE_PRIVATE_H

#include "weir-plugin.h"

G_BEGIN_DECLS

/* Whether whole output channels of the layers weighted by ws (borrowed
 * containers, the selected weights) can be removed with params; FALSE with
 * *reason naming the node and the problem. */
gboolean weir_prune_channels_check(const WeirGraph *g, GPtrArray *ws,
                                   const WeirParams *params, char **reason);

/* Removes them and shrinks what reads them (after a successful check). */
gboolean weir_prune_channels_apply(WeirGraph *g, GPtrArray *ws,
                                   const WeirParams *params, GError **error);

G_END_DECLS

#endif
