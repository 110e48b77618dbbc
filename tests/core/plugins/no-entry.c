/* no-entry.c — a test plugin without the weir_plugin_register entry
 * point. */
#include <gmodule.h>

G_MODULE_EXPORT int weir_plugin_something_else(void);

int weir_plugin_something_else(void) {
  return 42;
}
