/* test-tensor.c — dense tensors: storage, conversion, comparison. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "weir-tensor.h"

static void test_new_is_zeroed_and_aligned(void **state) {
  (void)state;
  gint64 shape[] = {3, 5};
  g_autoptr(WeirTensor) t = weir_tensor_new(WEIR_DTYPE_F64, 2, shape);
  assert_int_equal(t->count, 15);
  assert_int_equal(weir_tensor_nbytes(t), 120);
  assert_int_equal(((guintptr)t->data) % 64, 0);
  for (gint64 i = 0; i < t->count; i++)
    assert_true(weir_tensor_get(t, i) == 0.0);
  g_autoptr(WeirTensor) scalar = weir_tensor_new(WEIR_DTYPE_I32, 0, NULL);
  assert_int_equal(scalar->count, 1);
  gint64 empty_shape[] = {0, 4};
  g_autoptr(WeirTensor) empty = weir_tensor_new(WEIR_DTYPE_F32, 2, empty_shape);
  assert_int_equal(empty->count, 0);
  assert_non_null(empty->data);
}

static void test_set_get_converts_like_c(void **state) {
  (void)state;
  gint64 n = 4;
  g_autoptr(WeirTensor) i32 = weir_tensor_new(WEIR_DTYPE_I32, 1, &n);
  weir_tensor_set(i32, 0, -2.7);
  assert_true(weir_tensor_get(i32, 0) == -2.0); /* truncation */
  g_autoptr(WeirTensor) b = weir_tensor_new(WEIR_DTYPE_BOOL, 1, &n);
  weir_tensor_set(b, 1, 0.25);
  assert_true(weir_tensor_get(b, 1) == 1.0);
  g_autoptr(WeirTensor) f = weir_tensor_new(WEIR_DTYPE_F32, 1, &n);
  weir_tensor_set(f, 2, 0.1);
  assert_true(weir_tensor_get(f, 2) == (double)0.1f);
  g_autoptr(WeirTensor) c = weir_tensor_copy(f);
  assert_true(weir_tensor_get(c, 2) == (double)0.1f);
  assert_int_equal(memcmp(c->data, f->data, weir_tensor_nbytes(f)), 0);
}

static void test_random_is_reproducible(void **state) {
  (void)state;
  gint64 n = 1000;
  g_autoptr(WeirTensor) a = weir_tensor_new(WEIR_DTYPE_F32, 1, &n);
  g_autoptr(WeirTensor) b = weir_tensor_new(WEIR_DTYPE_F32, 1, &n);
  g_autoptr(WeirTensor) c = weir_tensor_new(WEIR_DTYPE_F32, 1, &n);
  weir_tensor_fill_random(a, 42);
  weir_tensor_fill_random(b, 42);
  weir_tensor_fill_random(c, 43);
  assert_int_equal(memcmp(a->data, b->data, weir_tensor_nbytes(a)), 0);
  assert_int_not_equal(memcmp(a->data, c->data, weir_tensor_nbytes(a)), 0);
  double lo = 1, hi = -1, sum = 0;
  for (gint64 i = 0; i < n; i++) {
    double v = weir_tensor_get(a, i);
    lo = MIN(lo, v);
    hi = MAX(hi, v);
    sum += v;
  }
  assert_true(lo >= -1.0 && hi < 1.0);
  assert_true(fabs(sum / (double)n) < 0.1); /* roughly centred */
  g_autoptr(WeirTensor) ints = weir_tensor_new(WEIR_DTYPE_I64, 1, &n);
  weir_tensor_fill_random(ints, 7);
  for (gint64 i = 0; i < n; i++) {
    double v = weir_tensor_get(ints, i);
    assert_true(v >= 0 && v < 10 && v == floor(v));
  }
}

static void test_allclose(void **state) {
  (void)state;
  gint64 n = 3;
  g_autoptr(WeirTensor) a = weir_tensor_new(WEIR_DTYPE_F64, 1, &n);
  g_autoptr(WeirTensor) b = weir_tensor_new(WEIR_DTYPE_F64, 1, &n);
  weir_tensor_set(a, 0, 1.0);
  weir_tensor_set(b, 0, 1.0 + 1e-7);
  weir_tensor_set(a, 1, NAN);
  weir_tensor_set(b, 1, NAN);
  weir_tensor_set(a, 2, INFINITY);
  weir_tensor_set(b, 2, INFINITY);
  double err = -1;
  g_autoptr(GError) error = NULL;
  assert_true(weir_tensor_allclose(a, b, 1e-5, 1e-6, &err, &error));
  assert_true(err > 0 && err < 1e-6);
  /* An unmatched infinity or NaN is a mismatch, whatever the tolerance. */
  weir_tensor_set(b, 2, 1e300);
  assert_false(weir_tensor_allclose(a, b, 1.0, 1.0, &err, &error));
  assert_non_null(strstr(error->message, "element 2"));
  g_clear_error(&error);
  weir_tensor_set(b, 2, INFINITY);
  weir_tensor_set(b, 1, 0.0);
  assert_false(weir_tensor_allclose(a, b, 1.0, 1.0, NULL, &error));
  assert_non_null(strstr(error->message, "element 1"));
  g_clear_error(&error);
  /* Shapes must agree. */
  gint64 m = 4;
  g_autoptr(WeirTensor) d = weir_tensor_new(WEIR_DTYPE_F64, 1, &m);
  assert_false(weir_tensor_allclose(a, d, 1, 1, NULL, &error));
  assert_non_null(strstr(error->message, "f64[3] vs f64[4]"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_new_is_zeroed_and_aligned),
      cmocka_unit_test(test_set_get_converts_like_c),
      cmocka_unit_test(test_random_is_reproducible),
      cmocka_unit_test(test_allclose),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
