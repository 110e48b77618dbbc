/* crash-in-entry.c — a test plugin whose entry point crashes (issue 11,
 * case 8).  Plugins are trusted code run in Weir's process: this takes the
 * process down, by design (docs/reliability.md, "Threat model").  Alone in
 * its build directory so that a test can put it on WEIR_PLUGIN_PATH. */
#include <signal.h>

#include <gmodule.h>

#include "weir-plugin.h"

G_MODULE_EXPORT gboolean weir_plugin_register(guint host_api_version,
                                              GError **error);

gboolean weir_plugin_register(guint host_api_version, GError **error) {
  (void)host_api_version, (void)error;
  raise(SIGSEGV);
  return FALSE;
}
