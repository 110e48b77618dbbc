/* types.c — dtype tables and the error domain. */
#include "weir-types.h"

/* Written out rather than with G_DEFINE_QUARK, whose first argument
 * clang-format spaced into "weir - error - quark". */
GQuark weir_error_quark(void) {
  static GQuark q;
  if (G_UNLIKELY(q == 0))
    q = g_quark_from_static_string("weir-error-quark");
  return q;
}

static const struct {
  const char *name;
  gsize size;
  gboolean is_float;
} dtype_table[] = {
#define WEIR_X(id, name, size, is_float) {name, size, is_float},
    WEIR_DTYPES(WEIR_X)
#undef WEIR_X
};
G_STATIC_ASSERT(G_N_ELEMENTS(dtype_table) == WEIR_DTYPE_COUNT);

const char *weir_dtype_name(WeirDType dtype) {
  g_return_val_if_fail(dtype < WEIR_DTYPE_COUNT, "?");
  return dtype_table[dtype].name;
}

gboolean weir_dtype_from_name(const char *name, WeirDType *out) {
  for (guint i = 0; i < WEIR_DTYPE_COUNT; i++) {
    if (g_strcmp0(name, dtype_table[i].name) == 0) {
      *out = (WeirDType)i;
      return TRUE;
    }
  }
  return FALSE;
}

gsize weir_dtype_size(WeirDType dtype) {
  g_return_val_if_fail(dtype < WEIR_DTYPE_COUNT, 0);
  return dtype_table[dtype].size;
}

gboolean weir_dtype_is_float(WeirDType dtype) {
  g_return_val_if_fail(dtype < WEIR_DTYPE_COUNT, FALSE);
  return dtype_table[dtype].is_float;
}
