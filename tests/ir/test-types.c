/* test-types.c — dtype tables and error domain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "weir-types.h"

static void test_dtype_names_round_trip(void **state) {
  (void)state;
  for (guint i = 0; i < WEIR_DTYPE_COUNT; i++) {
    WeirDType d;
    assert_true(weir_dtype_from_name(weir_dtype_name((WeirDType)i), &d));
    assert_int_equal(d, i);
  }
  WeirDType d;
  assert_false(weir_dtype_from_name("float32", &d));
  assert_false(weir_dtype_from_name(NULL, &d));
}

static void test_dtype_sizes(void **state) {
  (void)state;
  assert_int_equal(weir_dtype_size(WEIR_DTYPE_F32), 4);
  assert_int_equal(weir_dtype_size(WEIR_DTYPE_F64), 8);
  assert_int_equal(weir_dtype_size(WEIR_DTYPE_I32), 4);
  assert_int_equal(weir_dtype_size(WEIR_DTYPE_I64), 8);
  assert_int_equal(weir_dtype_size(WEIR_DTYPE_BOOL), 1);
  assert_int_equal(weir_dtype_size(WEIR_DTYPE_U8), 1);
  assert_true(weir_dtype_is_float(WEIR_DTYPE_F64));
  assert_false(weir_dtype_is_float(WEIR_DTYPE_I64));
}

static void test_new_dtypes(void **state) {
  (void)state;
  static const struct {
    WeirDType d;
    const char *name;
    gsize size;
    gboolean flt, uns;
  } rows[] = {
      {WEIR_DTYPE_F16, "f16", 2, TRUE, FALSE},
      {WEIR_DTYPE_BF16, "bf16", 2, TRUE, FALSE},
      {WEIR_DTYPE_I8, "i8", 1, FALSE, FALSE},
      {WEIR_DTYPE_I16, "i16", 2, FALSE, FALSE},
      {WEIR_DTYPE_U16, "u16", 2, FALSE, TRUE},
      {WEIR_DTYPE_U32, "u32", 4, FALSE, TRUE},
      {WEIR_DTYPE_U64, "u64", 8, FALSE, TRUE},
  };
  for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
    assert_string_equal(weir_dtype_name(rows[i].d), rows[i].name);
    assert_int_equal(weir_dtype_size(rows[i].d), rows[i].size);
    assert_int_equal(weir_dtype_is_float(rows[i].d), rows[i].flt);
    assert_int_equal(weir_dtype_is_unsigned(rows[i].d), rows[i].uns);
    assert_int_equal(weir_dtype_is_half(rows[i].d),
                     rows[i].size == 2 && rows[i].flt);
  }
  assert_true(weir_dtype_is_unsigned(WEIR_DTYPE_U8));
  assert_false(weir_dtype_is_unsigned(WEIR_DTYPE_I32));
}

/* float16: every bit pattern decodes exactly, and re-encodes to itself
 * (NaNs to a NaN); values between two neighbours round to nearest even. */
static void test_f16_conversions(void **state) {
  (void)state;
  for (guint b = 0; b < 0x10000; b++) {
    float f = weir_f16_to_float((guint16)b);
    guint e = (b >> 10) & 0x1f;
    if (e == 0x1f && (b & 0x3ff)) {
      assert_true(isnan(f));
      assert_int_equal(weir_f16_from_double(f) & 0x7e00, 0x7e00);
      continue;
    }
#ifdef __FLT16_MAX__
    _Float16 h;
    guint16 bits = (guint16)b;
    memcpy(&h, &bits, 2);
    assert_true(f == (float)h);
#endif
    assert_int_equal(weir_f16_from_double(f), b);
  }
  /* ties to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10 */
  assert_int_equal(weir_f16_from_double(1.0 + ldexp(1, -11)), 0x3c00);
  assert_int_equal(weir_f16_from_double(1.0 + 3 * ldexp(1, -11)), 0x3c02);
  /* just above the tie rounds up (no double rounding through f32) */
  assert_int_equal(weir_f16_from_double(1.0 + ldexp(1, -11) + ldexp(1, -40)),
                   0x3c01);
  /* overflow, the largest finite, subnormals, underflow */
  assert_int_equal(weir_f16_from_double(65520.0), 0x7c00);
  assert_int_equal(weir_f16_from_double(65519.0), 0x7bff);
  assert_int_equal(weir_f16_from_double(-1e10), 0xfc00);
  assert_int_equal(weir_f16_from_double(ldexp(1, -24)), 0x0001);
  assert_int_equal(weir_f16_from_double(ldexp(1, -25)), 0x0000);
  assert_int_equal(weir_f16_from_double(ldexp(3, -26)), 0x0001);
  assert_int_equal(weir_f16_from_double(-ldexp(1, -30)), 0x8000);
#ifdef __FLT16_MAX__
  /* random doubles against the compiler's conversion */
  guint64 x = 12345;
  for (guint i = 0; i < 200000; i++) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    double d = ldexp((double)(x >> 11), -53) * 2 - 1;
    d = ldexp(d, (int)((x >> 3) % 48) - 30);
    _Float16 h = (_Float16)d;
    guint16 want;
    memcpy(&want, &h, 2);
    assert_int_equal(weir_f16_from_double(d), want);
  }
#endif
}

/* bfloat16: the upper half of an f32, rounded to nearest even. */
static void test_bf16_conversions(void **state) {
  (void)state;
  for (guint b = 0; b < 0x10000; b++) {
    float f = weir_bf16_to_float((guint16)b);
    guint32 u;
    memcpy(&u, &f, 4);
    assert_int_equal(u, (guint32)b << 16);
    if (!isnan(f))
      assert_int_equal(weir_bf16_from_double(f), b);
  }
  guint32 x = 99;
  for (guint i = 0; i < 200000; i++) {
    x = x * 1664525u + 1013904223u;
    float f;
    memcpy(&f, &x, 4);
    if (isnan(f))
      continue;
    guint32 want = (x + 0x7fff + ((x >> 16) & 1)) >> 16;
    assert_int_equal(weir_bf16_from_double(f), want);
  }
  assert_int_equal(weir_bf16_from_double(1.0 + ldexp(1, -8)), 0x3f80);
  assert_int_equal(weir_bf16_from_double(1.0 + 3 * ldexp(1, -8)), 0x3f82);
  assert_int_equal(weir_bf16_from_double(1e39), 0x7f80);
  assert_int_equal(weir_bf16_from_double(NAN) & 0x7fc0, 0x7fc0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_names_round_trip),
      cmocka_unit_test(test_dtype_sizes),
      cmocka_unit_test(test_new_dtypes),
      cmocka_unit_test(test_f16_conversions),
      cmocka_unit_test(test_bf16_conversions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
