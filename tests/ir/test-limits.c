/* test-limits.c — checked sizes and the memory budget (ir/weir-limits.h),
 * the checked tensor constructor and expression evaluation, and the
 * analysis figures that overflow (issue 11, cases 1 to 4). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "weir-analysis.h"
#include "weir-expr.h"
#include "weir-json.h"
#include "weir-limits.h"
#include "weir-ops.h"
#include "weir-tensor.h"

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    if (!strstr((hay), (needle)))                                              \
      fail_msg("expected to find '%s' in:\n%s", (needle), (hay));              \
  } while (0)

static void test_shape_size(void **state) {
  (void)state;
  gint64 count = 0, bytes = 0;
  const gint64 ok[] = {2, 3, 4};
  assert_true(weir_shape_size(WEIR_DTYPE_F64, 3, ok, &count, &bytes, NULL));
  assert_int_equal(count, 24);
  assert_int_equal(bytes, 192);
  assert_true(weir_shape_size(WEIR_DTYPE_F32, 0, NULL, &count, &bytes, NULL));
  assert_int_equal(count, 1);

  g_autoptr(GError) error = NULL;
  const gint64 square[] = {G_GINT64_CONSTANT(1) << 32, G_GINT64_CONSTANT(1)
                                                           << 32};
  assert_false(
      weir_shape_size(WEIR_DTYPE_F32, 2, square, &count, &bytes, &error));
  assert_contains(error->message, "4294967296 x 4294967296 elements of f32: "
                                  "the element count overflows 64 bits");
  g_clear_error(&error);
  /* a zero dimension after the overflow makes an empty tensor */
  const gint64 empty[] = {G_GINT64_CONSTANT(1) << 40,
                          G_GINT64_CONSTANT(1) << 40, 0};
  assert_true(weir_shape_size(WEIR_DTYPE_F32, 3, empty, &count, &bytes, NULL));
  assert_int_equal(count, 0);
  assert_int_equal(bytes, 0);
  const gint64 huge[] = {G_GINT64_CONSTANT(1) << 62};
  assert_false(weir_shape_size(WEIR_DTYPE_F32, 1, huge, NULL, NULL, &error));
  assert_contains(error->message, "the byte size overflows 64 bits");
  g_clear_error(&error);
  const gint64 negative[] = {3, -5};
  assert_false(
      weir_shape_size(WEIR_DTYPE_F32, 2, negative, NULL, NULL, &error));
  assert_contains(error->message, "dimension 1 is negative (-5)");
}

/* Issue 11 case 1: the count and byte size overflowed, 64 bytes were
 * allocated and the random fill wrote past them. */
static void test_tensor_try_new(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  const gint64 huge[] = {G_GINT64_CONSTANT(1) << 62};
  WeirTensor *t = weir_tensor_try_new(WEIR_DTYPE_F32, 1, huge, &error);
  assert_null(t);
  assert_contains(error->message, "overflows 64 bits");
  g_clear_error(&error);
  const gint64 negative[] = {-5};
  assert_null(weir_tensor_try_new(WEIR_DTYPE_F32, 1, negative, &error));
  assert_contains(error->message, "negative");
  g_clear_error(&error);
#ifndef __SANITIZE_ADDRESS__
  /* fits in 64 bits, but no machine has the memory: an error, not an
   * abort (2^60 bytes).  ASan's allocator aborts on such a request by
   * design (allocator_may_return_null=0), so not under ASan. */
  const gint64 big[] = {G_GINT64_CONSTANT(1) << 57};
  assert_null(weir_tensor_try_new(WEIR_DTYPE_F64, 1, big, &error));
  assert_contains(error->message, "cannot allocate 1152921504606846976 bytes");
  g_clear_error(&error);
#endif
  const gint64 small[] = {3, 5};
  g_autoptr(WeirTensor) ok =
      weir_tensor_try_new(WEIR_DTYPE_I32, 2, small, &error);
  assert_non_null(ok);
  assert_int_equal(ok->count, 15);
  for (gint64 i = 0; i < ok->count; i++)
    assert_true(weir_tensor_get(ok, i) == 0.0);
}

static void test_eval_checked(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirExpr) e = weir_expr_parse("N*N + 1", &error);
  assert_non_null(e);
  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "N", G_GINT64_CONSTANT(1) << 32);
  gint64 v = 0;
  /* the wrapping evaluation gives 1; the checked one refuses */
  assert_true(weir_expr_eval(e, b, &v, NULL));
  assert_int_equal(v, 1);
  assert_false(weir_expr_eval_checked(e, b, &v, &error));
  assert_contains(error->message, "overflows 64 bits");
  g_clear_error(&error);
  weir_bindings_set(b, "N", 1000);
  assert_true(weir_expr_eval_checked(e, b, &v, &error));
  assert_int_equal(v, 1000001);
}

static const char *program_json =
    "{\"format\": \"weir-ir\", \"version\": 1, \"name\": \"p\","
    " \"symbols\": [\"N\", \"M\"],"
    " \"containers\": ["
    "  {\"id\": 1, \"name\": \"A\", \"dtype\": \"f32\", \"shape\": [\"N\"]},"
    "  {\"id\": 2, \"name\": \"W\", \"dtype\": \"f64\", \"shape\": [\"4\"],"
    "   \"transient\": true},"
    "  {\"id\": 3, \"name\": \"B\", \"dtype\": \"f32\","
    "   \"shape\": [\"N\", \"M\"]}],"
    " \"start\": 4, \"states\": [{\"id\": 4, \"label\": \"s\", \"nodes\": [],"
    " \"edges\": []}], \"transitions\": [], \"next_id\": 5}";

static void test_container_sizes(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_from_json(program_json, -1, "p", &error);
  if (!g)
    fail_msg("%s", error->message);
  g_autoptr(GHashTable) b = weir_bindings_new();
  /* unbound symbols: skipped by the check, not counted by the need */
  assert_true(weir_graph_check_sizes(g, b, NULL));
  WeirMemoryNeed need;
  assert_true(weir_graph_memory_need(g, b, &need, NULL));
  assert_int_equal(need.total, 32);
  assert_int_equal(need.transients, 32);

  weir_bindings_set(b, "N", -5);
  assert_false(weir_graph_check_sizes(g, b, &error));
  assert_contains(error->message, "container 'A': dimension 0 (N) is -5: a "
                                  "size cannot be negative (with N=-5)");
  g_clear_error(&error);

  weir_bindings_set(b, "N", G_GINT64_CONSTANT(1) << 40);
  weir_bindings_set(b, "M", G_GINT64_CONSTANT(1) << 30);
  assert_false(weir_graph_check_sizes(g, b, &error));
  assert_contains(error->message, "container 'B'");
  assert_contains(error->message, "M=1073741824, N=1099511627776");
  g_clear_error(&error);

  weir_bindings_set(b, "N", 1000);
  weir_bindings_set(b, "M", 10);
  assert_true(weir_graph_memory_need(g, b, &need, &error));
  assert_int_equal(need.arguments, 4000 + 40000);
  assert_int_equal(need.parameters, 0);
  assert_int_equal(need.transients, 32);
  assert_int_equal(need.total, 44032);
  assert_true(weir_memory_budget_check(g, &need, 44032, NULL));
  assert_false(weir_memory_budget_check(g, &need, 44031, &error));
  assert_contains(error->message,
                  "program 'p' needs 43.0 KiB (44032 bytes: arguments 43.0 "
                  "KiB, parameters 0 bytes, transients 32 bytes), more than "
                  "the memory limit of 43.0 KiB (set with --max-memory)");
  g_clear_error(&error);
  /* the default limit is the physical memory */
  assert_true(weir_physical_memory() > 0);
  assert_true(weir_graph_check_memory(g, b, 0, NULL));
  weir_bindings_set(b, "N", G_GINT64_CONSTANT(1) << 50);
  weir_bindings_set(b, "M", 1);
  assert_false(weir_graph_check_memory(g, b, 0, &error));
  assert_contains(error->message, "(the physical memory; --max-memory "
                                  "changes it)");

  /* weir validate's view: constant shapes only */
  g_autoptr(GPtrArray) errors = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  weir_graph_check_size_limits(g, errors, warnings);
  assert_int_equal(errors->len, 0);
  assert_int_equal(warnings->len, 0);
}

static void test_size_parse(void **state) {
  (void)state;
  guint64 v = 0;
  assert_true(weir_size_parse("512", &v, NULL));
  assert_int_equal(v, 512);
  assert_true(weir_size_parse("8G", &v, NULL));
  assert_int_equal(v, G_GUINT64_CONSTANT(8) << 30);
  assert_true(weir_size_parse("3MiB", &v, NULL));
  assert_int_equal(v, G_GUINT64_CONSTANT(3) << 20);
  assert_true(weir_size_parse("2tb", &v, NULL));
  assert_int_equal(v, G_GUINT64_CONSTANT(2) << 40);
  assert_true(weir_size_parse("100B", &v, NULL));
  assert_int_equal(v, 100);
  const char *bad[] = {"", "-1", "G", "5Q", "5 G", "1.5G", "5iB"};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(GError) error = NULL;
    if (weir_size_parse(bad[i], &v, &error))
      fail_msg("'%s' parsed", bad[i]);
    assert_contains(error->message, "is not a size");
  }
  g_autoptr(GError) error = NULL;
  assert_false(weir_size_parse("99999999999T", &v, &error));
  assert_contains(error->message, "overflows 64 bits");
}

/* Issue 11 case 4: the FLOPs of a pooling with a huge kernel_shape
 * overflowed a gint64 (undefined behaviour); now they are unknown. */
static void test_pool_flops_overflow(void **state) {
  (void)state;
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "tests/cli/hostile/huge-pool.json", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_load(path, &error);
  if (!g)
    fail_msg("%s", error->message);
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, NULL, &error);
  assert_non_null(a);
  assert_false(a->total_flops.known);
  assert_null(a->total_flops.expr);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shape_size),
      cmocka_unit_test(test_tensor_try_new),
      cmocka_unit_test(test_eval_checked),
      cmocka_unit_test(test_container_sizes),
      cmocka_unit_test(test_size_parse),
      cmocka_unit_test(test_pool_flops_overflow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
