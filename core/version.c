/* version.c — library version. */
#include "weir.h"

#ifndef WEIR_VERSION
#define WEIR_VERSION "0.1.0"
#endif

const char *weir_version(void) {
  return WEIR_VERSION;
}
