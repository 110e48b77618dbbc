/* duplicate.c — a test plugin that registers a new transformation and then
 * one whose name is taken: the whole plugin must be refused and its first
 * transformation removed again. */
#include <gmodule.h>

#include "weir-plugin.h"

G_MODULE_EXPORT gboolean weir_plugin_register(guint host_api_version,
                                              GError **error);

static gboolean apply_nothing(WeirGraph *g, const WeirSite *site,
                              const WeirParams *p, GError **error) {
  (void)g, (void)site, (void)p, (void)error;
  return TRUE;
}

static const WeirTransformInfo extra = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "plugin-extra",
    .tier = 3,
    .description = "registered before the duplicate",
    .apply = apply_nothing,
};

static const WeirTransformInfo taken = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "expand-library-node",
    .tier = 1,
    .description = "a name that is taken",
    .apply = apply_nothing,
};

gboolean weir_plugin_register(guint host_api_version, GError **error) {
  (void)host_api_version;
  return weir_transform_register(&extra, error) &&
         weir_transform_register(&taken, error);
}
