/* bad-version.c — a test plugin built for a newer plugin API than the
 * host's: its record must be refused and the plugin unloaded. */
#include <gmodule.h>

#include "weir-plugin.h"

G_MODULE_EXPORT gboolean weir_plugin_register(guint host_api_version,
                                              GError **error);

static gboolean apply_nothing(WeirGraph *g, const WeirSite *site,
                              const WeirParams *p, GError **error) {
  (void)g, (void)site, (void)p, (void)error;
  return TRUE;
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION + 1,
    .name = "test-future",
    .tier = 1,
    .description = "from the future",
    .apply = apply_nothing,
};

gboolean weir_plugin_register(guint host_api_version, GError **error) {
  (void)host_api_version;
  return weir_transform_register(&info, error);
}
