/* test-tensor-io.c — tensor files: .pb (ONNX TensorProto) and .npy.
 *
 * NumPy is not assumed to be installed: the .npy files read here are built
 * byte by byte from the format description (magic, version, little-endian
 * header length, a Python dict literal, then the data). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <glib/gstdio.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "weir-tensor-io.h"

#include "tmpdir-fixture.h"

#define assert_error(err, dom, c)                                              \
  do {                                                                         \
    assert_non_null(err);                                                      \
    assert_int_equal((err)->domain, (dom));                                    \
    assert_int_equal((err)->code, (c));                                        \
  } while (0)

static int setup(void **state) {
  (void)state;
  return tmpdir_setup("weir-tensor-io");
}

static int teardown(void **state) {
  (void)state;
  return tmpdir_teardown();
}

static char *tmp_path(const char *name) {
  return g_build_filename(tmp_dir, name, NULL);
}

static void write_bytes(const char *path, const void *data, gsize len) {
  g_autoptr(GError) error = NULL;
  if (!g_file_set_contents(path, data, (gssize)len, &error))
    fail_msg("%s", error->message);
}

static void assert_same_tensor(const WeirTensor *a, const WeirTensor *b) {
  assert_int_equal(a->dtype, b->dtype);
  assert_int_equal(a->rank, b->rank);
  for (guint k = 0; k < a->rank; k++)
    assert_int_equal(a->shape[k], b->shape[k]);
  assert_int_equal(a->count, b->count);
  assert_memory_equal(a->data, b->data, weir_tensor_nbytes(a));
}

/* shapes used for every dtype: a matrix, a scalar, a vector, an empty one */
static const struct {
  guint rank;
  gint64 shape[3];
} shapes[] = {{2, {2, 3}}, {0, {0}}, {1, {7}}, {3, {2, 0, 4}}};

static void test_round_trip_every_dtype(void **state) {
  (void)state;
  const char *exts[] = {"pb", "npy"};
  for (guint d = 0; d < WEIR_DTYPE_COUNT; d++) {
    for (guint s = 0; s < G_N_ELEMENTS(shapes); s++) {
      g_autoptr(WeirTensor) t =
          weir_tensor_new((WeirDType)d, shapes[s].rank, shapes[s].shape);
      weir_tensor_fill_random(t, 17 * d + s);
      for (guint e = 0; e < G_N_ELEMENTS(exts); e++) {
        g_autofree char *name = g_strdup_printf("t%u_%u.%s", d, s, exts[e]);
        g_autofree char *path = tmp_path(name);
        g_autoptr(GError) error = NULL;
        assert_true(weir_tensor_save(t, "my tensor", path, &error));
        g_autofree char *back_name = NULL;
        g_autoptr(WeirTensor) back = weir_tensor_load(path, &back_name, &error);
        if (!back)
          fail_msg("%s", error->message);
        assert_same_tensor(back, t);
        if (e == 0)
          assert_string_equal(back_name, "my tensor");
        else
          assert_null(back_name);
      }
    }
  }
}

static void test_pb_layout(void **state) {
  (void)state;
  /* what the writer puts in the TensorProto: dims, data_type, name and
   * little-endian raw_data */
  gint64 shape[] = {2, 2};
  g_autoptr(WeirTensor) t = weir_tensor_new(WEIR_DTYPE_I32, 2, shape);
  for (gint64 k = 0; k < 4; k++)
    weir_tensor_set(t, k, (double)(k * 256 + 1));
  g_autofree char *path = tmp_path("layout.pb");
  g_autoptr(GError) error = NULL;
  assert_true(weir_tensor_write_pb(t, "x", path, &error));
  gchar *bytes;
  gsize len;
  assert_true(g_file_get_contents(path, &bytes, &len, NULL));
  Onnx__TensorProto *p =
      onnx__tensor_proto__unpack(NULL, len, (const guint8 *)bytes);
  g_free(bytes);
  assert_non_null(p);
  assert_int_equal(p->n_dims, 2);
  assert_int_equal(p->dims[1], 2);
  assert_int_equal(p->data_type, ONNX__TENSOR_PROTO__DATA_TYPE__INT32);
  assert_string_equal(p->name, "x");
  assert_true(p->has_raw_data);
  const guint8 want[] = {1, 0, 0, 0, 1, 1, 0, 0, 1, 2, 0, 0, 1, 3, 0, 0};
  assert_int_equal(p->raw_data.len, sizeof want);
  assert_memory_equal(p->raw_data.data, want, sizeof want);
  onnx__tensor_proto__free_unpacked(p, NULL);
}

/* Writes a TensorProto file built by hand. */
static void write_proto(const char *path, Onnx__TensorProto *p) {
  gsize size = onnx__tensor_proto__get_packed_size(p);
  g_autofree guint8 *buf = g_malloc(size + 1);
  onnx__tensor_proto__pack(p, buf);
  write_bytes(path, buf, size);
}

static void test_pb_typed_fields_and_errors(void **state) {
  (void)state;
  g_autofree char *path = tmp_path("typed.pb");
  int64_t dims[] = {3};
  g_autoptr(GError) error = NULL;

  /* int32_data carries uint8 and bool values */
  int32_t vals[] = {0, 7, 255};
  Onnx__TensorProto p = ONNX__TENSOR_PROTO__INIT;
  p.n_dims = 1;
  p.dims = dims;
  p.has_data_type = TRUE;
  p.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8;
  p.n_int32_data = 3;
  p.int32_data = vals;
  write_proto(path, &p);
  g_autoptr(WeirTensor) u8 = weir_tensor_read_pb(path, NULL, &error);
  assert_non_null(u8);
  assert_int_equal(u8->dtype, WEIR_DTYPE_U8);
  assert_int_equal(((guint8 *)u8->data)[2], 255);

  p.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
  write_proto(path, &p);
  g_autoptr(WeirTensor) b = weir_tensor_read_pb(path, NULL, &error);
  assert_non_null(b);
  assert_int_equal(((guint8 *)b->data)[0], 0);
  assert_int_equal(((guint8 *)b->data)[2], 1);

  /* out of range for uint8 */
  vals[1] = 300;
  p.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__UINT8;
  write_proto(path, &p);
  assert_null(weir_tensor_read_pb(path, NULL, &error));
  assert_non_null(strstr(error->message, "out of range for UINT8"));
  g_clear_error(&error);

  /* too few values */
  p.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
  p.n_int32_data = 2;
  write_proto(path, &p);
  assert_null(weir_tensor_read_pb(path, NULL, &error));
  assert_error(error, WEIR_ERROR, WEIR_ERROR_INVALID);
  g_autofree char *want_count = g_strdup_printf(
      "%s: int32_data has 2 values, expected 3 for 3 INT32 elements", path);
  assert_string_equal(error->message, want_count);
  g_clear_error(&error);

  /* raw_data length mismatch */
  guint8 raw[11] = {0};
  p.n_int32_data = 0;
  p.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  p.has_raw_data = TRUE;
  p.raw_data.len = sizeof raw;
  p.raw_data.data = raw;
  write_proto(path, &p);
  assert_null(weir_tensor_read_pb(path, NULL, &error));
  assert_error(error, WEIR_ERROR, WEIR_ERROR_INVALID);
  assert_non_null(strstr(error->message, "raw_data has 11 bytes, expected 12"));
  g_clear_error(&error);

  /* double via double_data */
  double dv[] = {1.5, -2.25, 1e300};
  Onnx__TensorProto q = ONNX__TENSOR_PROTO__INIT;
  q.n_dims = 1;
  q.dims = dims;
  q.has_data_type = TRUE;
  q.data_type = ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
  q.n_double_data = 3;
  q.double_data = dv;
  write_proto(path, &q);
  g_autoptr(WeirTensor) d = weir_tensor_read_pb(path, NULL, &error);
  assert_non_null(d);
  assert_true(weir_tensor_get(d, 2) == 1e300);

  /* negative dimension */
  int64_t bad_dims[] = {-3};
  q.dims = bad_dims;
  write_proto(path, &q);
  assert_null(weir_tensor_read_pb(path, NULL, &error));
  assert_non_null(strstr(error->message, "dimension 0 is negative"));
  g_clear_error(&error);

  /* not a protobuf; empty; missing */
  write_bytes(path, "\xff\xff\xff\xff", 4);
  assert_null(weir_tensor_read_pb(path, NULL, &error));
  assert_error(error, WEIR_ERROR, WEIR_ERROR_PARSE);
  assert_non_null(strstr(error->message, "protobuf decoding failed"));
  g_clear_error(&error);
  write_bytes(path, "", 0);
  assert_null(weir_tensor_read_pb(path, NULL, &error));
  assert_non_null(strstr(error->message, "empty file"));
  g_clear_error(&error);
  assert_null(weir_tensor_read_pb("/nonexistent/x.pb", NULL, &error));
  assert_error(error, WEIR_ERROR, WEIR_ERROR_IO);
}

/* ---- .npy ----------------------------------------------------------- */

/* A .npy file of the given version with header dict text and data. */
static GByteArray *npy_bytes(guint major, const char *dict, const void *data,
                             gsize len) {
  GByteArray *b = g_byte_array_new();
  g_byte_array_append(b, (const guint8 *)"\x93NUMPY", 6);
  guint8 version[2] = {(guint8)major, 0};
  g_byte_array_append(b, version, 2);
  gsize prefix = major == 1 ? 10 : 12;
  g_autoptr(GString) h = g_string_new(dict);
  while ((prefix + h->len + 1) % 64)
    g_string_append_c(h, ' ');
  g_string_append_c(h, '\n');
  guint8 hl[4] = {(guint8)(h->len & 0xff), (guint8)(h->len >> 8), 0, 0};
  g_byte_array_append(b, hl, major == 1 ? 2 : 4);
  g_byte_array_append(b, (const guint8 *)h->str, (guint)h->len);
  g_byte_array_append(b, data, (guint)len);
  return b;
}

static WeirTensor *read_npy_bytes(GByteArray *b, GError **error) {
  g_autofree char *path = tmp_path("t.npy");
  write_bytes(path, b->data, b->len);
  return weir_tensor_read_npy(path, error);
}

static void test_npy_read_hand_made(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  /* version 1.0, as NumPy writes a float32 2x3 array */
  const float f[] = {0, 1.5f, -2, 3, 4, 5};
  g_autoptr(GByteArray) v1 = npy_bytes(
      1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f,
      sizeof f);
  assert_int_equal(v1->len % 64, sizeof f % 64);
  g_autoptr(WeirTensor) a = read_npy_bytes(v1, &error);
  assert_non_null(a);
  g_autofree char *da = weir_tensor_describe(a);
  assert_string_equal(da, "f32[2, 3]");
  assert_true(weir_tensor_get(a, 1) == 1.5);
  assert_true(weir_tensor_get(a, 2) == -2);

  /* version 2.0, keys in another order, double quotes, Python 2 longs */
  const gint64 i[] = {1, -2, 3};
  g_autoptr(GByteArray) v2 = npy_bytes(
      2, "{\"shape\": (3L,), \"fortran_order\": False, \"descr\": \"<i8\"}", i,
      sizeof i);
  g_autoptr(WeirTensor) b = read_npy_bytes(v2, &error);
  assert_non_null(b);
  assert_int_equal(b->dtype, WEIR_DTYPE_I64);
  assert_int_equal(b->rank, 1);
  assert_true(weir_tensor_get(b, 1) == -2);

  /* scalar bool */
  const guint8 one = 1;
  g_autoptr(GByteArray) v3 = npy_bytes(
      1, "{'descr': '|b1', 'fortran_order': False, 'shape': ()}", &one, 1);
  g_autoptr(WeirTensor) c = read_npy_bytes(v3, &error);
  assert_non_null(c);
  assert_int_equal(c->dtype, WEIR_DTYPE_BOOL);
  assert_int_equal(c->rank, 0);
  assert_int_equal(c->count, 1);
}

static void test_npy_header_written(void **state) {
  (void)state;
  gint64 shape[] = {4};
  g_autoptr(WeirTensor) t = weir_tensor_new(WEIR_DTYPE_U8, 1, shape);
  g_autofree char *path = tmp_path("w.npy");
  g_autoptr(GError) error = NULL;
  assert_true(weir_tensor_write_npy(t, path, &error));
  gchar *bytes;
  gsize len;
  assert_true(g_file_get_contents(path, &bytes, &len, NULL));
  g_autofree gchar *owned = bytes;
  assert_int_equal(len, 128 + 4); /* 67 header bytes, padded */
  assert_memory_equal(bytes, "\x93NUMPY\x01\x00\x76\x00", 10);
  const char *dict = "{'descr': '|u1', 'fortran_order': False, "
                     "'shape': (4,), }";
  assert_memory_equal(bytes + 10, dict, strlen(dict));
  assert_int_equal(bytes[127], '\n');
  assert_int_equal(bytes[126], ' ');
}

static void expect_npy_error(const char *dict, const void *data, gsize len,
                             gint code, const char *fragment) {
  g_autoptr(GByteArray) b = npy_bytes(1, dict, data, len);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTensor) t = read_npy_bytes(b, &error);
  assert_null(t);
  assert_error(error, WEIR_ERROR, code);
  if (!strstr(error->message, fragment))
    fail_msg("'%s' does not contain '%s'", error->message, fragment);
}

static void test_npy_errors(void **state) {
  (void)state;
  const float f[6] = {0};
  expect_npy_error("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3)}",
                   f, sizeof f, WEIR_ERROR_UNSUPPORTED,
                   "Fortran-order arrays are not supported");
  expect_npy_error("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3)}",
                   f, sizeof f, WEIR_ERROR_UNSUPPORTED,
                   "big-endian data ('>f4') is not supported");
  expect_npy_error("{'descr': '<c4', 'fortran_order': False, 'shape': (2, 3)}",
                   f, sizeof f, WEIR_ERROR_UNSUPPORTED,
                   "unsupported .npy dtype '<c4'");
  expect_npy_error("{'descr': '<c8', 'fortran_order': False, 'shape': (3,)}", f,
                   sizeof f, WEIR_ERROR_UNSUPPORTED,
                   "unsupported .npy dtype '<c8'");
  expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}",
                   f, sizeof f - 1, WEIR_ERROR_PARSE,
                   "truncated .npy data: 23 bytes, expected 24");
  expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (5,)}", f,
                   sizeof f, WEIR_ERROR_PARSE, "extra bytes");
  expect_npy_error("{'descr': '<f4', 'shape': (6,)}", f, sizeof f,
                   WEIR_ERROR_PARSE, "no 'fortran_order'");
  expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': [6]}", f,
                   sizeof f, WEIR_ERROR_PARSE, "'shape' should be a tuple");
  expect_npy_error("{'descr': '<f4', 'fortran_order': False, 'shape': (6,)", f,
                   sizeof f, WEIR_ERROR_PARSE, "expected ',' or '}'");
  expect_npy_error("{'descr': '<f4, 'fortran_order': False, 'shape': (6,)}", f,
                   sizeof f, WEIR_ERROR_PARSE, "malformed .npy header");

  g_autoptr(GError) error = NULL;
  g_autofree char *path = tmp_path("bad.npy");
  write_bytes(path, "\x93NUMPX\x01\x00\x00\x00", 10);
  assert_null(weir_tensor_read_npy(path, &error));
  assert_error(error, WEIR_ERROR, WEIR_ERROR_PARSE);
  assert_non_null(strstr(error->message, "not a .npy file (bad magic)"));
  assert_true(g_str_has_prefix(error->message, path));
  g_clear_error(&error);
  write_bytes(path, "\x93NUMPY\x07\x00\x00\x00", 10);
  assert_null(weir_tensor_read_npy(path, &error));
  assert_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED);
  assert_non_null(strstr(error->message, "version 7.0"));
  g_clear_error(&error);
  /* header length beyond the end of the file */
  write_bytes(path, "\x93NUMPY\x01\x00\xff\x00{}", 12);
  assert_null(weir_tensor_read_npy(path, &error));
  assert_non_null(strstr(error->message, "truncated .npy header"));
  g_clear_error(&error);
  write_bytes(path, "", 0);
  assert_null(weir_tensor_read_npy(path, &error));
  assert_non_null(strstr(error->message, "bad magic"));
  g_clear_error(&error);

  /* every prefix of a valid file is refused, without a crash */
  const float g[6] = {1, 2, 3, 4, 5, 6};
  g_autoptr(GByteArray) whole = npy_bytes(
      1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", g,
      sizeof g);
  for (guint cut = 0; cut < whole->len; cut++) {
    write_bytes(path, whole->data, cut);
    g_autoptr(WeirTensor) t = weir_tensor_read_npy(path, &error);
    assert_null(t);
    g_clear_error(&error);
  }
}

static void test_load_dispatch(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  assert_null(weir_tensor_load("/tmp/x.bin", NULL, &error));
  assert_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED);
  assert_non_null(strstr(error->message, "unknown tensor file extension"));
  g_clear_error(&error);
  g_autoptr(WeirTensor) t = weir_tensor_new(WEIR_DTYPE_F32, 0, NULL);
  assert_false(weir_tensor_save(t, NULL, "/tmp/x.txt", &error));
  g_clear_error(&error);
  /* upper-case extension; a write into a missing directory */
  g_autofree char *path = tmp_path("UP.NPY");
  assert_true(weir_tensor_save(t, NULL, path, &error));
  g_autoptr(WeirTensor) back = weir_tensor_load(path, NULL, &error);
  assert_non_null(back);
  assert_false(weir_tensor_write_npy(t, "/nonexistent/dir/x.npy", &error));
  assert_error(error, WEIR_ERROR, WEIR_ERROR_IO);
}

static void test_onnx_test_data_round_trip(void **state) {
  (void)state;
  const char *rel = "node/test_conv_with_strides_padding/test_data_set_0/"
                    "input_0.pb";
  g_autofree char *path =
      g_build_filename("/usr/share/libonnx-testdata/data", rel, NULL);
  if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
    print_message("libonnx-testdata not installed: skipping\n");
    skip();
  }
  g_autoptr(GError) error = NULL;
  g_autofree char *name = NULL;
  g_autoptr(WeirTensor) t = weir_tensor_load(path, &name, &error);
  assert_non_null(t);
  assert_string_equal(name, "x");
  g_autofree char *d = weir_tensor_describe(t);
  assert_string_equal(d, "f32[1, 1, 7, 5]");
  for (gint64 k = 0; k < t->count; k++)
    assert_true(weir_tensor_get(t, k) == (double)k); /* 0, 1, ..., 34 */
  g_autofree char *npy = tmp_path("x.npy");
  assert_true(weir_tensor_save(t, name, npy, &error));
  g_autoptr(WeirTensor) back = weir_tensor_load(npy, NULL, &error);
  assert_same_tensor(back, t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip_every_dtype),
      cmocka_unit_test(test_pb_layout),
      cmocka_unit_test(test_pb_typed_fields_and_errors),
      cmocka_unit_test(test_npy_read_hand_made),
      cmocka_unit_test(test_npy_header_written),
      cmocka_unit_test(test_npy_errors),
      cmocka_unit_test(test_load_dispatch),
      cmocka_unit_test(test_onnx_test_data_round_trip),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
