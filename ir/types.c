/* types.c — dtype tables and the error domain. */
#include "weir-types.h"

#include <string.h>

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

gboolean weir_dtype_is_unsigned(WeirDType dtype) {
  switch (dtype) {
  case WEIR_DTYPE_BOOL:
  case WEIR_DTYPE_U8:
  case WEIR_DTYPE_U16:
  case WEIR_DTYPE_U32:
  case WEIR_DTYPE_U64:
    return TRUE;
  default:
    return FALSE;
  }
}

gboolean weir_dtype_is_half(WeirDType dtype) {
  return dtype == WEIR_DTYPE_F16 || dtype == WEIR_DTYPE_BF16;
}

/* Rounds a double to a binary format with ebits exponent and mbits
 * mantissa bits (1 + ebits + mbits <= 32), to nearest with ties to even,
 * and returns its bit pattern. */
static guint32 round_to_format(double value, guint ebits, guint mbits) {
  guint64 b;
  memcpy(&b, &value, sizeof b);
  const guint32 sign = (guint32)(b >> 63) << (ebits + mbits);
  const gint exp = (gint)((b >> 52) & 0x7ff);
  const guint64 frac = b & ((G_GUINT64_CONSTANT(1) << 52) - 1);
  const guint32 emax = (1u << ebits) - 1; /* the exponent field of inf/NaN */
  if (exp == 0x7ff) {
    if (frac == 0)
      return sign | emax << mbits;
    return sign | emax << mbits | 1u << (mbits - 1) |
           (guint32)(frac >> (52 - mbits));
  }
  if (exp == 0) /* double subnormals are far below both formats */
    return sign;
  const gint bias = (1 << (ebits - 1)) - 1;
  const gint emin = 1 - bias;
  gint e = exp - 1023;
  const guint64 m = frac | G_GUINT64_CONSTANT(1) << 52;
  guint shift = 52 - mbits;
  if (e < emin) {
    if (emin - e > 60)
      return sign;
    shift += (guint)(emin - e);
    if (shift > 53) /* below half the smallest subnormal */
      return sign;
  }
  guint64 q = m >> shift;
  const guint64 rem = m & ((G_GUINT64_CONSTANT(1) << shift) - 1);
  const guint64 half = G_GUINT64_CONSTANT(1) << (shift - 1);
  if (rem > half || (rem == half && (q & 1)))
    q++;
  if (e < emin) /* subnormal; a carry into 1 << mbits is the smallest normal */
    return sign | (guint32)q;
  if (q == G_GUINT64_CONSTANT(1) << (mbits + 1)) {
    q >>= 1;
    e++;
  }
  const gint field = e + bias;
  if (field >= (gint)emax)
    return sign | emax << mbits;
  return sign | (guint32)field << mbits | ((guint32)q & ((1u << mbits) - 1));
}

guint16 weir_f16_from_double(double value) {
  return (guint16)round_to_format(value, 5, 10);
}

guint16 weir_bf16_from_double(double value) {
  return (guint16)round_to_format(value, 8, 7);
}

float weir_f16_to_float(guint16 bits) {
  const guint32 sign = (guint32)(bits & 0x8000) << 16;
  guint32 exp = (bits >> 10) & 0x1f;
  guint32 frac = bits & 0x3ff;
  guint32 out;
  if (exp == 0x1f) {
    out = sign | 0x7f800000u | frac << 13;
  } else if (exp != 0) {
    out = sign | (exp + 112) << 23 | frac << 13;
  } else if (frac == 0) {
    out = sign;
  } else { /* subnormal: normalize */
    exp = 113;
    while (!(frac & 0x400)) {
      frac <<= 1;
      exp--;
    }
    out = sign | exp << 23 | (frac & 0x3ff) << 13;
  }
  float f;
  memcpy(&f, &out, sizeof f);
  return f;
}

float weir_bf16_to_float(guint16 bits) {
  const guint32 out = (guint32)bits << 16;
  float f;
  memcpy(&f, &out, sizeof f);
  return f;
}
