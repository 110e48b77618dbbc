/* test-gi.c — the boxed types and binding-friendly calls of weir-gi.h, from
 * C: shared boxed objects freed exactly once (run under ASan with leak
 * detection, which the Python suite cannot use), value copies that are
 * deep, symbol values as GVariants, tensors from bytes, result records.
 * tests/python/test_weir.py exercises the same calls through PyGObject. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-gi.h"
#include "weir-json.h"

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    const char *hay_ = (hay);                                                  \
    if (!hay_ || !strstr(hay_, (needle)))                                      \
      fail_msg("expected to find '%s' in: %s", (needle),                       \
               hay_ ? hay_ : "(null)");                                        \
  } while (0)

static WeirGraph *load_sample(const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_load(path, &error);
  if (!g)
    fail_msg("%s: %s", path, error->message);
  return g;
}

/* A shared boxed object: copies are the same pointer; it is freed with the
 * last reference (a leak or a double free fails under ASan). */
static void test_shared_session(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("matmul.json");
  WeirSession *s = weir_session_new(g, NULL, NULL, NULL);
  assert_non_null(s);
  WeirSession *c1 = g_boxed_copy(WEIR_TYPE_SESSION, s);
  WeirSession *c2 = g_boxed_copy(WEIR_TYPE_SESSION, c1);
  assert_ptr_equal(c1, s);
  assert_ptr_equal(c2, s);
  g_boxed_free(WEIR_TYPE_SESSION, c1);
  g_boxed_free(WEIR_TYPE_SESSION, s);
  /* still alive: one reference left */
  assert_int_equal(weir_session_n_steps(c2), 0);
  g_boxed_free(WEIR_TYPE_SESSION, c2);

  /* a pointer never copied is freed by its first release */
  WeirRecipe *r = weir_recipe_new("t");
  g_boxed_free(WEIR_TYPE_RECIPE, r);
}

static void test_value_copies(void **state) {
  (void)state;
  const gint64 shape[] = {2, 3};
  g_autoptr(WeirTensor) t = weir_tensor_new(WEIR_DTYPE_F32, 2, shape);
  weir_tensor_set(t, 4, 2.5);
  WeirTensor *c = g_boxed_copy(WEIR_TYPE_TENSOR, t);
  assert_ptr_not_equal(c, t);
  assert_ptr_not_equal(c->data, t->data);
  assert_true(weir_tensor_get(c, 4) == 2.5);
  g_boxed_free(WEIR_TYPE_TENSOR, c);

  const guint nodes[] = {7, 9};
  WeirSite *s = weir_site_new(3, nodes, 2);
  WeirSite *sc = g_boxed_copy(WEIR_TYPE_SITE, s);
  guint n = 0;
  const guint *ids = weir_site_get_nodes(sc, &n);
  assert_int_equal(n, 2);
  assert_int_equal(ids[1], 9);
  assert_int_equal(sc->state, 3);
  g_boxed_free(WEIR_TYPE_SITE, sc);
  weir_site_free(s);

  /* registry records are not copied */
  weir_init();
  const WeirTransformInfo *info = weir_transform_lookup("map-tiling");
  assert_non_null(info);
  assert_ptr_equal(g_boxed_copy(WEIR_TYPE_TRANSFORM_INFO, info), info);
  g_boxed_free(WEIR_TYPE_TRANSFORM_INFO, (gpointer)info);
  assert_non_null(weir_transform_lookup("map-tiling")->name);
}

static void test_step_copy(void **state) {
  (void)state;
  weir_init();
  g_autoptr(WeirGraph) g = load_sample("matmul.json");
  g_autoptr(WeirSession) s = weir_session_new(g, "matmul.json", NULL, NULL);
  const WeirTransformInfo *t = weir_transform_lookup("map-tiling");
  g_autoptr(GPtrArray) sites = weir_transform_list_sites(t, g);
  assert_true(sites->len > 0);
  g_autoptr(GError) error = NULL;
  const WeirStep *step = weir_session_apply(
      s, "map-tiling", g_ptr_array_index(sites, 0), NULL, &error);
  assert_non_null(step);
  WeirStep *copy = g_boxed_copy(WEIR_TYPE_STEP, step);
  assert_ptr_not_equal(copy, step);
  assert_string_equal(copy->transform, "map-tiling");
  assert_ptr_not_equal(copy->program, step->program);
  assert_string_equal(copy->program, step->program);
  assert_int_equal(copy->labels->len, step->labels->len);
  g_boxed_free(WEIR_TYPE_STEP, copy);
  for (guint i = 0; i < sites->len; i++)
    weir_site_free(g_ptr_array_index(sites, i));
}

static void test_tensor_bytes(void **state) {
  (void)state;
  const float v[6] = {1, 2, 3, 4, 5, 6};
  const gint64 shape[] = {2, 3};
  g_autoptr(GBytes) b = g_bytes_new(v, sizeof v);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTensor) t =
      weir_tensor_new_from_bytes(WEIR_DTYPE_F32, shape, 2, b, &error);
  assert_non_null(t);
  assert_true(weir_tensor_get(t, 5) == 6.0);
  guint rank = 0;
  const gint64 *sh = weir_tensor_get_shape(t, &rank);
  assert_int_equal(rank, 2);
  assert_int_equal(sh[1], 3);
  assert_ptr_equal((gpointer)weir_tensor_get_data_address(t), t->data);
  g_autoptr(GBytes) back = weir_tensor_get_bytes(t);
  assert_true(g_bytes_equal(back, b));

  const gint64 wrong[] = {2, 4};
  assert_null(weir_tensor_new_from_bytes(WEIR_DTYPE_F32, wrong, 2, b, &error));
  assert_contains(error->message, "32 bytes, got 24");
}

static void test_symbols_variant(void **state) {
  (void)state;
  weir_init();
  g_autoptr(WeirGraph) g = load_sample("matmul.json");
  g_auto(GStrv) names = weir_graph_argument_names(g);
  assert_int_equal(g_strv_length(names), 3);
  assert_string_equal(names[0], "A");

  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTensor) a = weir_graph_new_argument(g, "A", NULL, &error);
  assert_non_null(a);
  assert_int_equal(a->shape[0], 64);
  g_autoptr(GVariant) bad = g_variant_ref_sink(g_variant_new_int32(1));
  assert_null(weir_graph_new_argument(g, "A", bad, &error));
  assert_contains(error->message, "a{sx}");
  g_clear_error(&error);
  assert_null(weir_graph_new_argument(g, "nope", NULL, &error));
  assert_contains(error->message, "'nope' is not an argument");
  g_clear_error(&error);

  g_autoptr(WeirAnalysis) an = weir_analysis_compute_symbols(g, NULL, &error);
  assert_non_null(an);
  g_autoptr(GVariant) v = weir_analysis_to_variant(an, g);
  gint64 flops = 0;
  assert_true(g_variant_lookup(v, "total_flops", "x", &flops));
  assert_int_equal(flops, 2 * 64 * 32 * 48);
  g_autoptr(GVariant) nodes =
      g_variant_lookup_value(v, "nodes", G_VARIANT_TYPE("aa{sv}"));
  assert_non_null(nodes);
  assert_true(g_variant_n_children(nodes) > 0);
}

static void test_error_enum(void **state) {
  (void)state;
  GEnumClass *k = g_type_class_ref(WEIR_TYPE_ERROR_CODE);
  assert_string_equal(g_enum_get_value(k, WEIR_ERROR_IO)->value_nick, "io");
  assert_string_equal(g_enum_get_value(k, WEIR_ERROR_VERSION)->value_nick,
                      "version");
  g_type_class_unref(k);
}

static void test_dataset_bytes(void **state) {
  (void)state;
  const float f[4] = {0, 1, 2, 3};
  const gint64 l[2] = {1, 4};
  g_autoptr(GBytes) fb = g_bytes_new(f, sizeof f);
  g_autoptr(GBytes) lb = g_bytes_new(l, sizeof l);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) d =
      weir_dataset_new_from_bytes(fb, 2, 2, lb, "mem", &error);
  assert_non_null(d);
  assert_int_equal(d->n_classes, 5);
  assert_true(d->features[3] == 3.0f);
  assert_null(weir_dataset_new_from_bytes(fb, 3, 2, lb, "mem", &error));
  assert_contains(error->message, "mem: 3 samples");
  g_clear_error(&error);
  const gint64 neg[2] = {0, -1};
  g_autoptr(GBytes) nb = g_bytes_new(neg, sizeof neg);
  assert_null(weir_dataset_new_from_bytes(fb, 2, 2, nb, NULL, &error));
  assert_contains(error->message, "<memory>: sample 1: negative label");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_shared_session),
      cmocka_unit_test(test_value_copies),
      cmocka_unit_test(test_step_copy),
      cmocka_unit_test(test_tensor_bytes),
      cmocka_unit_test(test_symbols_variant),
      cmocka_unit_test(test_error_enum),
      cmocka_unit_test(test_dataset_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
