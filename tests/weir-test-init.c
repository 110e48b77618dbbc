/* weir-test-init.c — the fixture every test program links: weir_init()
 * runs before main(), as the CLI and the GUI call it first, so each test
 * sees the registries filled with the built-ins. */
#include "weir-init.h"

void weir_test_init(void) __attribute__((constructor));

void weir_test_init(void) {
  weir_init();
}
