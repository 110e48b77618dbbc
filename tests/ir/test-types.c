/* test-types.c — dtype tables and error domain. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_names_round_trip),
      cmocka_unit_test(test_dtype_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
