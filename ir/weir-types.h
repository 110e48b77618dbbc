/* weir-types.h — basic types shared by every part of libweir.
 *
 * Conventions used in every public header of Weir:
 *  - Functions are named weir_<module>_<verb>.  Constructors return owned
 *    objects, freed with the matching _free (single owner) or _unref
 *    (reference counted).
 *  - Pointer parameters are borrowed unless the comment says "(transfer full)".
 *    Return values are owned by the caller unless the comment says "borrowed".
 *  - Bad input is reported with FALSE/NULL and a GError in WEIR_ERROR whose
 *    message names the file, element and problem.  Library code never prints.
 */
#ifndef WEIR_TYPES_H
#define WEIR_TYPES_H

#include <glib.h>

G_BEGIN_DECLS

#if defined(WEIR_COMPILATION) && defined(__GNUC__)
#define WEIR_API __attribute__((visibility("default")))
#else
#define WEIR_API
#endif

#define WEIR_ERROR (weir_error_quark())
WEIR_API GQuark weir_error_quark(void);

typedef enum {
  WEIR_ERROR_PARSE,   /* text that does not parse (expression, tasklet, JSON) */
  WEIR_ERROR_INVALID, /* a well-formed but invalid program or argument */
  WEIR_ERROR_UNSUPPORTED, /* valid input that Weir cannot handle (yet) */
  WEIR_ERROR_IO,          /* file system errors */
  WEIR_ERROR_RUNTIME,     /* failures while executing a program */
  WEIR_ERROR_VERSION,     /* data written by a newer format version */
} WeirErrorCode;

/* Element types of data containers.  The X-macro keeps the enum, the names
 * and the sizes in one place. */
#define WEIR_DTYPES(X)                                                         \
  X(F32, "f32", 4, TRUE)                                                       \
  X(F64, "f64", 8, TRUE)                                                       \
  X(I32, "i32", 4, FALSE)                                                      \
  X(I64, "i64", 8, FALSE)                                                      \
  X(BOOL, "bool", 1, FALSE)                                                    \
  X(U8, "u8", 1, FALSE)                                                        \
  X(F16, "f16", 2, TRUE)                                                       \
  X(BF16, "bf16", 2, TRUE)                                                     \
  X(I8, "i8", 1, FALSE)                                                        \
  X(I16, "i16", 2, FALSE)                                                      \
  X(U16, "u16", 2, FALSE)                                                      \
  X(U32, "u32", 4, FALSE)                                                      \
  X(U64, "u64", 8, FALSE)

typedef enum {
#define WEIR_X(id, name, size, is_float) WEIR_DTYPE_##id,
  WEIR_DTYPES(WEIR_X)
#undef WEIR_X
      WEIR_DTYPE_COUNT
} WeirDType;

/* Name as used in JSON and messages ("f32"); borrowed static string. */
WEIR_API const char *weir_dtype_name(WeirDType dtype);
/* Parses a dtype name; returns FALSE for an unknown name. */
WEIR_API gboolean weir_dtype_from_name(const char *name, WeirDType *out);
/* Size of one element in bytes. */
WEIR_API gsize weir_dtype_size(WeirDType dtype);
WEIR_API gboolean weir_dtype_is_float(WeirDType dtype);
/* TRUE for the integer dtypes without a sign (bool, u8, u16, u32, u64). */
WEIR_API gboolean weir_dtype_is_unsigned(WeirDType dtype);
/* TRUE for f16 and bf16, stored in 16 bits and computed in f32. */
WEIR_API gboolean weir_dtype_is_half(WeirDType dtype);

/* IEEE binary16 and bfloat16 bit patterns.  The conversions from double
 * round to nearest, ties to even, in one step (no double rounding through
 * f32); out-of-range values become infinities, NaN stays a quiet NaN with
 * its sign.  The conversions to float are exact. */
WEIR_API guint16 weir_f16_from_double(double value);
WEIR_API float weir_f16_to_float(guint16 bits);
WEIR_API guint16 weir_bf16_from_double(double value);
WEIR_API float weir_bf16_to_float(guint16 bits);

G_END_DECLS

#endif
