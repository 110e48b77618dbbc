/* tier3-vertical.h — producer-consumer fusion of two maps, shared by
 * map-fusion (element-wise consumer) and map-reduce-fusion (consumer that
 * reduces with WCR, possibly over a larger iteration space).
 *
 * Site: nodes [A's map exit, T's access node, B's map entry] in one state,
 * where A writes the transient T and B reads it.  The fused map is B's
 * (its entry and exit keep their ids); A's body moves into it with A's
 * parameters renamed to B's, A's tasklet that wrote T feeds B's tasklets
 * directly through a memlet on a new scalar transient (no access node, so
 * no data movement), and T disappears when nothing else uses it.
 */
#ifndef WEIR_TIER3_VERTICAL_H
#define WEIR_TIER3_VERTICAL_H

#include "weir-plugin.h"

G_BEGIN_DECLS

typedef enum {
  TIER3_VERTICAL_ELEMENTWISE, /* map-fusion */
  TIER3_VERTICAL_REDUCE,      /* map-reduce-fusion */
} Tier3VerticalMode;

void tier3_vertical_match(const WeirGraph *g, GArray *sites,
                          Tier3VerticalMode mode);
/* recompute: B may iterate over more points than A (map-reduce-fusion's
 * parameter of that name), repeating A's work for each. */
gboolean tier3_vertical_can_apply(const WeirGraph *g, const WeirSite *site,
                                  Tier3VerticalMode mode, gboolean recompute,
                                  char **reason);
gboolean tier3_vertical_apply(WeirGraph *g, const WeirSite *site,
                              Tier3VerticalMode mode, gboolean recompute,
                              GError **error);

G_END_DECLS

#endif
