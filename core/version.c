/* version.c — library version. */
#include "weir-build-id.h"
#include "weir.h"

#ifndef WEIR_VERSION
#define WEIR_VERSION "0.1.0"
#endif

const char *weir_version(void) {
  return WEIR_VERSION;
}

const char *weir_build_id(void) {
  return WEIR_BUILD_ID;
}
