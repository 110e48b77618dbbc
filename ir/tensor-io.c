/* tensor-io.c — tensor files: ONNX TensorProto (.pb) and NumPy (.npy).
 *
 * Structure: file helpers (map, atomic write), then .pb read/write on top
 * of the protobuf-c code generated from onnx.proto and the decoder of the
 * ONNX reader, then .npy: a small header-dict parser (a cursor over the
 * header text with one function per grammar element), the descr table,
 * the reader and the writer; last the dispatch on the extension.
 *
 * The .npy header is a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and ended by a newline.  The parser accepts strings
 * in either quote, True/False, integers and tuples of integers, which is
 * everything NumPy writes for plain arrays; unknown keys are ignored.
 */
#include <string.h>

#include "import/onnx/onnx-private.h"
#include "weir-tensor-io.h"

/* ---- files ---------------------------------------------------------- */

static GMappedFile *map_file(const char *path, GError **error) {
  GError *local = NULL;
  GMappedFile *file = g_mapped_file_new(path, FALSE, &local);
  if (!file) {
    /* GLib's message already names the file */
    g_set_error_literal(error, WEIR_ERROR, WEIR_ERROR_IO, local->message);
    g_error_free(local);
  }
  return file;
}

static gboolean write_file(const char *path, const void *data, gsize len,
                           GError **error) {
  GError *local = NULL;
  if (!g_file_set_contents(path, data, (gssize)len, &local)) {
    g_set_error_literal(error, WEIR_ERROR, WEIR_ERROR_IO, local->message);
    g_error_free(local);
    return FALSE;
  }
  return TRUE;
}

/* ---- .pb ------------------------------------------------------------ */

WeirTensor *weir_tensor_read_pb(const char *path, char **name_out,
                                GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  g_autoptr(GMappedFile) file = map_file(path, error);
  if (!file)
    return NULL;
  gsize len = g_mapped_file_get_length(file);
  if (len == 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: not a valid ONNX tensor file (empty file)", path);
    return NULL;
  }
  Onnx__TensorProto *p = onnx__tensor_proto__unpack(
      NULL, len, (const guint8 *)g_mapped_file_get_contents(file));
  if (!p) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: not a valid ONNX tensor file (protobuf decoding failed)",
                path);
    return NULL;
  }
  WeirTensor *t = weir_onnx_tensor_decode(p, path, error);
  if (t && name_out)
    *name_out = g_strdup(p->name ? p->name : "");
  onnx__tensor_proto__free_unpacked(p, NULL);
  return t;
}

gboolean weir_tensor_write_pb(const WeirTensor *t, const char *name,
                              const char *path, GError **error) {
  g_return_val_if_fail(t != NULL && path != NULL, FALSE);
  Onnx__TensorProto p = ONNX__TENSOR_PROTO__INIT;
  p.n_dims = t->rank;
  p.dims = (int64_t *)t->shape;
  p.has_data_type = TRUE;
  p.data_type = weir_onnx_type_from_dtype(t->dtype);
  p.name = (char *)name;
  p.has_raw_data = TRUE;
  p.raw_data.len = weir_tensor_nbytes(t);
#if G_BYTE_ORDER == G_LITTLE_ENDIAN
  p.raw_data.data = t->data;
#else
  g_autofree guint8 *swapped = g_malloc(p.raw_data.len ? p.raw_data.len : 1);
  weir_onnx_copy_le(swapped, t->data, (gsize)t->count,
                    weir_dtype_size(t->dtype));
  p.raw_data.data = swapped;
#endif
  gsize size = onnx__tensor_proto__get_packed_size(&p);
  g_autofree guint8 *buf = g_malloc(size ? size : 1);
  onnx__tensor_proto__pack(&p, buf);
  return write_file(path, buf, size, error);
}

/* ---- .npy header ---------------------------------------------------- */

static const char npy_magic[] = "\x93NUMPY";
#define NPY_MAGIC_LEN 6

typedef struct {
  const char *p;
  const char *path;
  GError **error;
} Cursor;

static gboolean fail(Cursor *c, const char *what) {
  g_set_error(c->error, WEIR_ERROR, WEIR_ERROR_PARSE,
              "%s: malformed .npy header: %s", c->path, what);
  return FALSE;
}

static void skip_space(Cursor *c) {
  while (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')
    c->p++;
}

static gboolean accept(Cursor *c, char ch) {
  skip_space(c);
  if (*c->p != ch)
    return FALSE;
  c->p++;
  return TRUE;
}

/* A quoted string (no escapes: NumPy headers have none). */
static gboolean parse_string(Cursor *c, char **out) {
  skip_space(c);
  char quote = *c->p;
  if (quote != '\'' && quote != '"')
    return fail(c, "expected a quoted string");
  const char *start = ++c->p;
  while (*c->p && *c->p != quote)
    c->p++;
  if (!*c->p)
    return fail(c, "unterminated string");
  *out = g_strndup(start, (gsize)(c->p - start));
  c->p++;
  return TRUE;
}

static gboolean parse_int(Cursor *c, gint64 *out) {
  skip_space(c);
  if (!g_ascii_isdigit(*c->p))
    return fail(c, "expected a non-negative integer");
  gint64 v = 0;
  while (g_ascii_isdigit(*c->p)) {
    if (v > (G_MAXINT64 - 9) / 10)
      return fail(c, "integer too large");
    v = v * 10 + (*c->p++ - '0');
  }
  if (*c->p == 'L') /* written by Python 2 */
    c->p++;
  *out = v;
  return TRUE;
}

static gboolean parse_shape(Cursor *c, GArray *shape) {
  if (!accept(c, '('))
    return fail(c, "'shape' should be a tuple");
  if (accept(c, ')'))
    return TRUE;
  for (;;) {
    gint64 v;
    if (!parse_int(c, &v))
      return FALSE;
    g_array_append_val(shape, v);
    if (accept(c, ')'))
      return TRUE;
    if (!accept(c, ','))
      return fail(c, "expected ',' or ')' in 'shape'");
    if (accept(c, ')'))
      return TRUE;
  }
}

static gboolean parse_bool(Cursor *c, gboolean *out) {
  skip_space(c);
  if (g_str_has_prefix(c->p, "True")) {
    c->p += 4;
    *out = TRUE;
    return TRUE;
  }
  if (g_str_has_prefix(c->p, "False")) {
    c->p += 5;
    *out = FALSE;
    return TRUE;
  }
  return fail(c, "expected True or False");
}

/* Skips the value of a key we do not use. */
static gboolean skip_value(Cursor *c) {
  skip_space(c);
  if (*c->p == '\'' || *c->p == '"') {
    g_autofree char *s = NULL;
    return parse_string(c, &s);
  }
  if (*c->p == '(') {
    g_autoptr(GArray) a = g_array_new(FALSE, FALSE, sizeof(gint64));
    return parse_shape(c, a);
  }
  if (*c->p == 'T' || *c->p == 'F') {
    gboolean b;
    return parse_bool(c, &b);
  }
  gint64 v;
  return parse_int(c, &v);
}

typedef struct {
  char *descr;
  gboolean has_fortran;
  gboolean fortran;
  gboolean has_shape;
  GArray *shape; /* gint64 */
} NpyHeader;

static gboolean parse_header(Cursor *c, NpyHeader *h) {
  if (!accept(c, '{'))
    return fail(c, "expected '{'");
  while (!accept(c, '}')) {
    g_autofree char *key = NULL;
    if (!parse_string(c, &key))
      return FALSE;
    if (!accept(c, ':'))
      return fail(c, "expected ':' after a key");
    if (strcmp(key, "descr") == 0) {
      g_clear_pointer(&h->descr, g_free);
      if (!parse_string(c, &h->descr))
        return FALSE;
    } else if (strcmp(key, "fortran_order") == 0) {
      h->has_fortran = TRUE;
      if (!parse_bool(c, &h->fortran))
        return FALSE;
    } else if (strcmp(key, "shape") == 0) {
      h->has_shape = TRUE;
      g_array_set_size(h->shape, 0);
      if (!parse_shape(c, h->shape))
        return FALSE;
    } else if (!skip_value(c)) {
      return FALSE;
    }
    if (accept(c, '}'))
      break;
    if (!accept(c, ','))
      return fail(c, "expected ',' or '}'");
  }
  skip_space(c);
  if (*c->p)
    return fail(c, "unexpected text after '}'");
  if (!h->descr)
    return fail(c, "no 'descr'");
  if (!h->has_fortran)
    return fail(c, "no 'fortran_order'");
  if (!h->has_shape)
    return fail(c, "no 'shape'");
  return TRUE;
}

/* ---- .npy dtypes ---------------------------------------------------- */

static const struct {
  char kind;
  gsize size;
  WeirDType dtype;
  const char *descr; /* written */
} npy_types[] = {
    {'f', 4, WEIR_DTYPE_F32, "<f4"},  {'f', 8, WEIR_DTYPE_F64, "<f8"},
    {'i', 4, WEIR_DTYPE_I32, "<i4"},  {'i', 8, WEIR_DTYPE_I64, "<i8"},
    {'b', 1, WEIR_DTYPE_BOOL, "|b1"}, {'u', 1, WEIR_DTYPE_U8, "|u1"},
    {'f', 2, WEIR_DTYPE_F16, "<f2"},  {'V', 2, WEIR_DTYPE_BF16, "<V2"},
    {'i', 1, WEIR_DTYPE_I8, "|i1"},   {'i', 2, WEIR_DTYPE_I16, "<i2"},
    {'u', 2, WEIR_DTYPE_U16, "<u2"},  {'u', 4, WEIR_DTYPE_U32, "<u4"},
    {'u', 8, WEIR_DTYPE_U64, "<u8"},
};
G_STATIC_ASSERT(G_N_ELEMENTS(npy_types) == WEIR_DTYPE_COUNT);

static const char *npy_descr(WeirDType dtype) {
  for (guint k = 0; k < G_N_ELEMENTS(npy_types); k++)
    if (npy_types[k].dtype == dtype)
      return npy_types[k].descr;
  g_return_val_if_reached("?");
}

static gboolean npy_dtype(const char *path, const char *descr, WeirDType *out,
                          GError **error) {
  char order = descr[0];
  gboolean known_order =
      order == '<' || order == '>' || order == '|' || order == '=';
  const char *rest = known_order ? descr + 1 : descr;
  char kind = rest[0];
  guint64 size = 0;
  if (kind && g_ascii_isdigit(rest[1]) &&
      g_ascii_string_to_unsigned(rest + 1, 10, 1, 64, &size, NULL)) {
    for (guint k = 0; k < G_N_ELEMENTS(npy_types); k++) {
      if (npy_types[k].kind != kind || npy_types[k].size != size)
        continue;
      gboolean host_le = G_BYTE_ORDER == G_LITTLE_ENDIAN;
      if (size > 1 && (order == '>' || (order == '=' && !host_le))) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                    "%s: big-endian data ('%s') is not supported", path, descr);
        return FALSE;
      }
      if (size > 1 && order != '<' && order != '=')
        break;
      *out = npy_types[k].dtype;
      return TRUE;
    }
  }
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
              "%s: unsupported .npy dtype '%s' (expected one of '<f4', "
              "'<f8', '<i4', '<i8', '|b1', '|u1')",
              path, descr);
  return FALSE;
}

/* ---- .npy read / write ---------------------------------------------- */

static gboolean npy_locate_header(const char *path, const guint8 *d, gsize len,
                                  gsize *start, gsize *hlen, GError **error) {
  if (len < NPY_MAGIC_LEN + 2 || memcmp(d, npy_magic, NPY_MAGIC_LEN) != 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: not a .npy file (bad magic)", path);
    return FALSE;
  }
  guint major = d[6], minor = d[7];
  if (major == 1 && len >= 10) {
    *hlen = (gsize)d[8] | (gsize)d[9] << 8;
    *start = 10;
  } else if ((major == 2 || major == 3) && len >= 12) {
    *hlen = (gsize)d[8] | (gsize)d[9] << 8 | (gsize)d[10] << 16 |
            (gsize)d[11] << 24;
    *start = 12;
  } else if (major >= 1 && major <= 3) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: truncated .npy header", path);
    return FALSE;
  } else {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: unsupported .npy format version %u.%u", path, major,
                minor);
    return FALSE;
  }
  if (*hlen > len - *start) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: truncated .npy header", path);
    return FALSE;
  }
  return TRUE;
}

WeirTensor *weir_tensor_read_npy(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  g_autoptr(GMappedFile) file = map_file(path, error);
  if (!file)
    return NULL;
  const guint8 *d = (const guint8 *)g_mapped_file_get_contents(file);
  gsize len = g_mapped_file_get_length(file);
  gsize start, hlen;
  if (!npy_locate_header(path, d, len, &start, &hlen, error))
    return NULL;

  g_autofree char *text = g_strndup((const char *)d + start, hlen);
  g_autoptr(GArray) shape = g_array_new(FALSE, FALSE, sizeof(gint64));
  NpyHeader h = {.shape = shape};
  Cursor c = {text, path, error};
  gboolean ok = parse_header(&c, &h);
  g_autofree char *descr = h.descr;
  if (!ok)
    return NULL;
  WeirDType dtype;
  if (!npy_dtype(path, descr, &dtype, error))
    return NULL;
  if (h.fortran) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: Fortran-order arrays are not supported", path);
    return NULL;
  }

  gsize size = weir_dtype_size(dtype);
  guint64 count = 1;
  gboolean zero = FALSE;
  for (guint k = 0; k < shape->len; k++)
    zero = zero || g_array_index(shape, gint64, k) == 0;
  for (guint k = 0; k < shape->len && !zero; k++) {
    guint64 dim = (guint64)g_array_index(shape, gint64, k);
    if (count > G_MAXINT64 / 16 / dim) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE, "%s: shape too large",
                  path);
      return NULL;
    }
    count *= dim;
  }
  if (zero)
    count = 0;
  gsize have = len - start - hlen;
  if (have != count * size) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: %s .npy data: %" G_GSIZE_FORMAT
                " bytes, expected %" G_GUINT64_FORMAT,
                path, have < count * size ? "truncated" : "extra bytes after",
                have, count * size);
    return NULL;
  }
  WeirTensor *t =
      weir_tensor_try_new(dtype, shape->len, (gint64 *)shape->data, error);
  if (!t) {
    g_prefix_error(error, "%s: ", path);
    return NULL;
  }
  weir_onnx_copy_le(t->data, d + start + hlen, (gsize)count, size);
  if (dtype == WEIR_DTYPE_BOOL)
    for (guint64 i = 0; i < count; i++)
      ((guint8 *)t->data)[i] = ((guint8 *)t->data)[i] != 0;
  return t;
}

gboolean weir_tensor_write_npy(const WeirTensor *t, const char *path,
                               GError **error) {
  g_return_val_if_fail(t != NULL && path != NULL, FALSE);
  g_autoptr(GString) h = g_string_new(NULL);
  g_string_append_printf(h,
                         "{'descr': '%s', 'fortran_order': False, "
                         "'shape': (",
                         npy_descr(t->dtype));
  for (guint k = 0; k < t->rank; k++)
    g_string_append_printf(h, "%s%" G_GINT64_FORMAT, k ? ", " : "",
                           t->shape[k]);
  g_string_append(h, t->rank == 1 ? ",), }" : "), }");
  /* pad with spaces so the data starts on a 64-byte boundary */
  while ((NPY_MAGIC_LEN + 4 + h->len + 1) % 64 != 0)
    g_string_append_c(h, ' ');
  g_string_append_c(h, '\n');
  if (h->len > G_MAXUINT16) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: too many dimensions for a version 1.0 .npy header", path);
    return FALSE;
  }

  gsize nbytes = weir_tensor_nbytes(t);
  gsize total = NPY_MAGIC_LEN + 4 + h->len + nbytes;
  g_autofree guint8 *buf = g_malloc(total);
  memcpy(buf, npy_magic, NPY_MAGIC_LEN);
  buf[6] = 1; /* version 1.0 */
  buf[7] = 0;
  buf[8] = (guint8)(h->len & 0xff);
  buf[9] = (guint8)(h->len >> 8);
  memcpy(buf + NPY_MAGIC_LEN + 4, h->str, h->len);
  weir_onnx_copy_le(buf + NPY_MAGIC_LEN + 4 + h->len, t->data, (gsize)t->count,
                    weir_dtype_size(t->dtype));
  return write_file(path, buf, total, error);
}

/* ---- dispatch ------------------------------------------------------- */

typedef enum { FORMAT_UNKNOWN, FORMAT_PB, FORMAT_NPY } Format;

static Format format_of(const char *path, GError **error) {
  g_autofree char *lower = g_ascii_strdown(path, -1);
  if (g_str_has_suffix(lower, ".pb"))
    return FORMAT_PB;
  if (g_str_has_suffix(lower, ".npy"))
    return FORMAT_NPY;
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
              "%s: unknown tensor file extension (expected .pb or .npy)", path);
  return FORMAT_UNKNOWN;
}

WeirTensor *weir_tensor_load(const char *path, char **name_out,
                             GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  if (name_out)
    *name_out = NULL;
  switch (format_of(path, error)) {
  case FORMAT_PB:
    return weir_tensor_read_pb(path, name_out, error);
  case FORMAT_NPY:
    return weir_tensor_read_npy(path, error);
  case FORMAT_UNKNOWN:
    break;
  }
  return NULL;
}

gboolean weir_tensor_save(const WeirTensor *t, const char *name,
                          const char *path, GError **error) {
  g_return_val_if_fail(t != NULL && path != NULL, FALSE);
  switch (format_of(path, error)) {
  case FORMAT_PB:
    return weir_tensor_write_pb(t, name, path, error);
  case FORMAT_NPY:
    return weir_tensor_write_npy(t, path, error);
  case FORMAT_UNKNOWN:
    break;
  }
  return FALSE;
}
