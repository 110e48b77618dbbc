/* tensor.c — ONNX element types and TensorProto decoding.
 *
 * Structure: a table of ONNX element types (name, byte size, WeirDType when
 * there is one), then weir_onnx_tensor_check (header and size checks, used
 * at load time for every tensor of a model without decoding it), then
 * weir_onnx_tensor_decode, which runs the same checks and copies the data
 * once, from raw_data or from the typed field, into a new WeirTensor.
 *
 * Which typed field carries which element type follows onnx.proto:
 * float_data for FLOAT (and COMPLEX64, two per element), double_data for
 * DOUBLE (COMPLEX128), int32_data for INT32 and every narrower integer,
 * BOOL and the 16-bit floats, int64_data for INT64, uint64_data for UINT32
 * and UINT64, string_data for STRING.
 */
#include <string.h>

#include "onnx-private.h"

typedef enum {
  FIELD_NONE,
  FIELD_FLOAT,
  FIELD_DOUBLE,
  FIELD_INT32,
  FIELD_INT64,
  FIELD_UINT64,
  FIELD_STRING,
} TypedField;

typedef struct {
  const char *name;
  gsize size; /* bytes per element in raw_data; 0 when not fixed */
  guint per;  /* typed-field entries per element */
  TypedField field;
  gint dtype; /* WeirDType, or -1 */
} OnnxTypeInfo;

static const OnnxTypeInfo type_table[] = {
    [WEIR_ONNX_TYPE_UNDEFINED] = {"UNDEFINED", 0, 0, FIELD_NONE, -1},
    [WEIR_ONNX_TYPE_FLOAT] = {"FLOAT", 4, 1, FIELD_FLOAT, WEIR_DTYPE_F32},
    [WEIR_ONNX_TYPE_UINT8] = {"UINT8", 1, 1, FIELD_INT32, WEIR_DTYPE_U8},
    [WEIR_ONNX_TYPE_INT8] = {"INT8", 1, 1, FIELD_INT32, WEIR_DTYPE_I8},
    [WEIR_ONNX_TYPE_UINT16] = {"UINT16", 2, 1, FIELD_INT32, WEIR_DTYPE_U16},
    [WEIR_ONNX_TYPE_INT16] = {"INT16", 2, 1, FIELD_INT32, WEIR_DTYPE_I16},
    [WEIR_ONNX_TYPE_INT32] = {"INT32", 4, 1, FIELD_INT32, WEIR_DTYPE_I32},
    [WEIR_ONNX_TYPE_INT64] = {"INT64", 8, 1, FIELD_INT64, WEIR_DTYPE_I64},
    [WEIR_ONNX_TYPE_STRING] = {"STRING", 0, 1, FIELD_STRING, -1},
    [WEIR_ONNX_TYPE_BOOL] = {"BOOL", 1, 1, FIELD_INT32, WEIR_DTYPE_BOOL},
    [WEIR_ONNX_TYPE_FLOAT16] = {"FLOAT16", 2, 1, FIELD_INT32, WEIR_DTYPE_F16},
    [WEIR_ONNX_TYPE_DOUBLE] = {"DOUBLE", 8, 1, FIELD_DOUBLE, WEIR_DTYPE_F64},
    [WEIR_ONNX_TYPE_UINT32] = {"UINT32", 4, 1, FIELD_UINT64, WEIR_DTYPE_U32},
    [WEIR_ONNX_TYPE_UINT64] = {"UINT64", 8, 1, FIELD_UINT64, WEIR_DTYPE_U64},
    [WEIR_ONNX_TYPE_COMPLEX64] = {"COMPLEX64", 8, 2, FIELD_FLOAT, -1},
    [WEIR_ONNX_TYPE_COMPLEX128] = {"COMPLEX128", 16, 2, FIELD_DOUBLE, -1},
    [WEIR_ONNX_TYPE_BFLOAT16] = {"BFLOAT16", 2, 1, FIELD_INT32,
                                 WEIR_DTYPE_BF16},
};

static const OnnxTypeInfo *type_info(gint32 onnx_type) {
  if (onnx_type < 0 || (gsize)onnx_type >= G_N_ELEMENTS(type_table))
    return NULL;
  return &type_table[onnx_type];
}

gboolean weir_onnx_type_to_dtype(gint32 onnx_type, WeirDType *out) {
  const OnnxTypeInfo *info = type_info(onnx_type);
  if (!info || info->dtype < 0)
    return FALSE;
  if (out)
    *out = (WeirDType)info->dtype;
  return TRUE;
}

WeirOnnxType weir_onnx_type_from_dtype(WeirDType dtype) {
  for (guint i = 0; i < G_N_ELEMENTS(type_table); i++)
    if (type_table[i].dtype == (gint)dtype)
      return (WeirOnnxType)i;
  g_return_val_if_reached(WEIR_ONNX_TYPE_UNDEFINED);
}

char *weir_onnx_type_name(gint32 onnx_type) {
  const OnnxTypeInfo *info = type_info(onnx_type);
  if (info)
    return g_strdup(info->name);
  return g_strdup_printf("type %d", (int)onnx_type);
}

void weir_onnx_copy_le(void *dst, const void *src, gsize count, gsize size) {
  if (count == 0)
    return;
#if G_BYTE_ORDER == G_LITTLE_ENDIAN
  memcpy(dst, src, count * size);
#else
  const guint8 *s = src;
  guint8 *d = dst;
  for (gsize i = 0; i < count; i++)
    for (gsize b = 0; b < size; b++)
      d[i * size + b] = s[i * size + size - 1 - b];
#endif
}

static gsize field_length(const Onnx__TensorProto *p, TypedField field) {
  switch (field) {
  case FIELD_FLOAT:
    return p->n_float_data;
  case FIELD_DOUBLE:
    return p->n_double_data;
  case FIELD_INT32:
    return p->n_int32_data;
  case FIELD_INT64:
    return p->n_int64_data;
  case FIELD_UINT64:
    return p->n_uint64_data;
  case FIELD_STRING:
    return p->n_string_data;
  case FIELD_NONE:
    break;
  }
  return 0;
}

static const char *field_name(TypedField field) {
  static const char *const names[] = {
      [FIELD_NONE] = "?",
      [FIELD_FLOAT] = "float_data",
      [FIELD_DOUBLE] = "double_data",
      [FIELD_INT32] = "int32_data",
      [FIELD_INT64] = "int64_data",
      [FIELD_UINT64] = "uint64_data",
      [FIELD_STRING] = "string_data",
  };
  return names[field];
}

static gboolean is_external(const Onnx__TensorProto *p) {
  return p->has_data_location &&
         p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
}

gboolean weir_onnx_tensor_check(const Onnx__TensorProto *p, const char *context,
                                gint64 *count_out, GError **error) {
  const char *ctx = context ? context : "tensor";
  gint64 count = 1;
  gboolean zero = FALSE;
  for (gsize k = 0; k < p->n_dims; k++) {
    if (p->dims[k] < 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: dimension %" G_GSIZE_FORMAT
                  " is negative (%" G_GINT64_FORMAT ")",
                  ctx, k, (gint64)p->dims[k]);
      return FALSE;
    }
    if (p->dims[k] == 0)
      zero = TRUE;
  }
  for (gsize k = 0; k < p->n_dims && !zero; k++) {
    if (count > G_MAXINT64 / 16 / p->dims[k]) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: element count overflows", ctx);
      return FALSE;
    }
    count *= p->dims[k];
  }
  if (zero)
    count = 0;
  if (count_out)
    *count_out = count;

  const OnnxTypeInfo *info = p->has_data_type ? type_info(p->data_type) : NULL;
  if (!info || is_external(p))
    return TRUE; /* cannot check here; decoding refuses these */
  if (p->has_raw_data && info->size) {
    guint64 want = (guint64)count * info->size;
    if (p->raw_data.len != want) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: raw_data has %" G_GSIZE_FORMAT
                  " bytes, expected %" G_GUINT64_FORMAT " (%" G_GINT64_FORMAT
                  " x %s of %" G_GSIZE_FORMAT " bytes)",
                  ctx, (gsize)p->raw_data.len, want, count, info->name,
                  info->size);
      return FALSE;
    }
    return TRUE;
  }
  if (info->field == FIELD_NONE)
    return TRUE;
  gsize have = field_length(p, info->field);
  guint64 want = (guint64)count * info->per;
  if (have != want) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %s has %" G_GSIZE_FORMAT
                " values, expected %" G_GUINT64_FORMAT " for %" G_GINT64_FORMAT
                " %s elements",
                ctx, field_name(info->field), have, want, count, info->name);
    return FALSE;
  }
  return TRUE;
}

/* Range of the values int32_data may hold for a dtype (f16 and bf16 are
 * their 16-bit patterns). */
static void int32_field_range(WeirDType dtype, gint64 *lo, gint64 *hi) {
  switch (dtype) {
  case WEIR_DTYPE_U8:
    *lo = 0, *hi = G_MAXUINT8;
    return;
  case WEIR_DTYPE_I8:
    *lo = G_MININT8, *hi = G_MAXINT8;
    return;
  case WEIR_DTYPE_I16:
    *lo = G_MININT16, *hi = G_MAXINT16;
    return;
  case WEIR_DTYPE_U16:
  case WEIR_DTYPE_F16:
  case WEIR_DTYPE_BF16:
    *lo = 0, *hi = G_MAXUINT16;
    return;
  default:
    *lo = G_MININT32, *hi = G_MAXINT32;
    return;
  }
}

/* Copies int32_data into a tensor of a narrower type, checking ranges. */
static gboolean decode_int32_field(const Onnx__TensorProto *p, WeirTensor *t,
                                   const char *ctx, GError **error) {
  gint64 lo, hi;
  int32_field_range(t->dtype, &lo, &hi);
  for (gint64 i = 0; i < t->count; i++) {
    gint32 v = p->int32_data[i];
    if (t->dtype != WEIR_DTYPE_BOOL && (v < lo || v > hi)) {
      g_autofree char *tname =
          weir_onnx_type_name(weir_onnx_type_from_dtype(t->dtype));
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: value %d at element %" G_GINT64_FORMAT
                  " is out of range for %s",
                  ctx, (int)v, i, tname);
      return FALSE;
    }
    switch (weir_dtype_size(t->dtype)) {
    case 1:
      ((guint8 *)t->data)[i] =
          t->dtype == WEIR_DTYPE_BOOL ? v != 0 : (guint8)(gint8)v;
      break;
    case 2:
      ((guint16 *)t->data)[i] = (guint16)v;
      break;
    default:
      ((gint32 *)t->data)[i] = v;
      break;
    }
  }
  return TRUE;
}

WeirTensor *weir_onnx_tensor_decode(const Onnx__TensorProto *p,
                                    const char *context, GError **error) {
  g_return_val_if_fail(p != NULL, NULL);
  const char *ctx = context ? context : "tensor";
  if (is_external(p)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: external data (stored outside the model file) is not "
                "supported",
                ctx);
    return NULL;
  }
  if (p->segment) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: segmented tensors are not supported", ctx);
    return NULL;
  }
  if (!p->has_data_type || p->data_type == WEIR_ONNX_TYPE_UNDEFINED) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: tensor has no element type", ctx);
    return NULL;
  }
  WeirDType dtype;
  if (!weir_onnx_type_to_dtype(p->data_type, &dtype)) {
    g_autofree char *tname = weir_onnx_type_name(p->data_type);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: unsupported element type %s", ctx, tname);
    return NULL;
  }
  gint64 count;
  if (!weir_onnx_tensor_check(p, ctx, &count, error))
    return NULL;
  if (p->n_dims > G_MAXUINT) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: too many dimensions", ctx);
    return NULL;
  }

  g_autoptr(WeirTensor) t = weir_tensor_try_new(dtype, (guint)p->n_dims,
                                                (const gint64 *)p->dims, error);
  if (!t) {
    g_prefix_error(error, "%s: ", ctx);
    return NULL;
  }
  gsize size = weir_dtype_size(dtype);
  if (count == 0)
    return g_steal_pointer(&t);
  if (p->has_raw_data) {
    weir_onnx_copy_le(t->data, p->raw_data.data, (gsize)count, size);
    /* bool is one byte per element; normalise anything non-zero to 1 */
    if (dtype == WEIR_DTYPE_BOOL)
      for (gint64 i = 0; i < count; i++)
        ((guint8 *)t->data)[i] = ((guint8 *)t->data)[i] != 0;
    return g_steal_pointer(&t);
  }
  switch (dtype) {
  case WEIR_DTYPE_F32:
    memcpy(t->data, p->float_data, (gsize)count * size);
    break;
  case WEIR_DTYPE_F64:
    memcpy(t->data, p->double_data, (gsize)count * size);
    break;
  case WEIR_DTYPE_I64:
    memcpy(t->data, p->int64_data, (gsize)count * size);
    break;
  case WEIR_DTYPE_I32:
  case WEIR_DTYPE_BOOL:
  case WEIR_DTYPE_U8:
  case WEIR_DTYPE_I8:
  case WEIR_DTYPE_I16:
  case WEIR_DTYPE_U16:
  case WEIR_DTYPE_F16:
  case WEIR_DTYPE_BF16:
    if (!decode_int32_field(p, t, ctx, error))
      return NULL;
    break;
  case WEIR_DTYPE_U32:
    for (gint64 i = 0; i < count; i++)
      ((guint32 *)t->data)[i] = (guint32)p->uint64_data[i];
    break;
  case WEIR_DTYPE_U64:
    memcpy(t->data, p->uint64_data, (gsize)count * size);
    break;
  case WEIR_DTYPE_COUNT:
    g_assert_not_reached();
  }
  return g_steal_pointer(&t);
}
