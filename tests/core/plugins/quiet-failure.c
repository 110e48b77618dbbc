/* quiet-failure.c — a test plugin whose entry point registers one
 * transformation and then fails without an error: refused, rolled back. */
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
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "plugin-quiet",
    .tier = 2,
    .description = "registered, then the plugin fails",
    .apply = apply_nothing,
};

gboolean weir_plugin_register(guint host_api_version, GError **error) {
  (void)host_api_version;
  if (!weir_transform_register(&info, error))
    return FALSE;
  return FALSE;
}
