/* test-compile-units.c — a program split into compile units
 * (weir_codegen_units) computes what the single unit computes.
 *
 * With a tiny unit size the sample models (LeNet, the residual CNN, the
 * transformer) and LeNet's training step (a loop whose counter is passed to
 * the parts) are cut into many parts; each is compiled with the runtime
 * ($WEIR_CODEGEN_UNIT_BYTES) split and unsplit and run on the same inputs.
 * Also: the split is deterministic, small programs stay one unit (the text
 * of weir_codegen_c), and the unit size is part of the cache key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "kernel-check.h"
#include "runtime-fixture.h"
#include "weir-codegen.h"
#include "weir-evaluate.h"
#include "weir-import.h"
#include "weir-native.h"
#include "weir-train.h"

static WeirGraph *lenet(void) {
  return import_sample("lenet", (gint64[]){4, 1, 8, 8}, 4);
}

static WeirGraph *lenet_training(void) {
  g_autoptr(WeirGraph) g = lenet();
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.optimizer = WEIR_OPTIMIZER_ADAM;
  o.loss = WEIR_LOSS_MSE;
  o.steps = 3;
  g_autoptr(GError) err = NULL;
  WeirGraph *t = weir_train_graph(g, &o, &err);
  if (!t)
    fail_msg("training program: %s", err->message);
  return t;
}

/* Runs g compiled with $WEIR_CODEGEN_UNIT_BYTES = unit_bytes on the
 * arguments of seed 1; returns them (container name -> tensor). */
static GHashTable *run_with_units(Fixture *fx, WeirGraph *g,
                                  const char *unit_bytes, guint *units) {
  g_setenv("WEIR_CODEGEN_UNIT_BYTES", unit_bytes, TRUE);
  g_autoptr(GError) err = NULL;
  WeirCompileInfo info;
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &fx->opts, &info, &err);
  g_unsetenv("WEIR_CODEGEN_UNIT_BYTES");
  if (!k)
    fail_msg("%s (units of %s bytes): %s", g->name, unit_bytes, err->message);
  *units = info.units;
  weir_compile_info_clear(&info);
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                           (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) list = weir_codegen_arguments(g);
  for (guint i = 0; i < list->len; i++) {
    const WeirContainer *c = g_ptr_array_index(list, i);
    WeirTensor *t = weir_evaluate_random_input(c, NULL, 1, &err);
    if (!t)
      fail_msg("%s: %s", c->name, err->message);
    g_hash_table_insert(args, c->name, t);
  }
  if (!weir_kernel_run(k, NULL, args, &err))
    fail_msg("%s: %s", g->name, err->message);
  return args;
}

static void check_split(Fixture *fx, WeirGraph *g) {
  guint one = 0, many = 0;
  g_autoptr(GHashTable) a = run_with_units(fx, g, "0", &one);
  g_autoptr(GHashTable) b = run_with_units(fx, g, "512", &many);
  assert_int_equal(one, 1);
  if (many < 3)
    fail_msg("%s: %u units with 512 bytes each", g->name, many);
  g_autoptr(GPtrArray) list = weir_codegen_arguments(g);
  for (guint i = 0; i < list->len; i++) {
    const WeirContainer *c = g_ptr_array_index(list, i);
    g_autoptr(GError) err = NULL;
    if (!weir_tensor_allclose(g_hash_table_lookup(b, c->name),
                              g_hash_table_lookup(a, c->name), 1e-5, 1e-6, NULL,
                              &err))
      fail_msg("%s, '%s': split and single unit differ: %s", g->name, c->name,
               err->message);
  }
}

static void test_models(void **state) {
  g_autoptr(WeirGraph) l = lenet();
  check_split(*state, l);
  g_autoptr(WeirGraph) r = import_sample("resnet", (gint64[]){2, 3, 16, 16}, 4);
  check_split(*state, r);
  g_autoptr(WeirGraph) t = lenet_training();
  check_split(*state, t);
}

static void test_units_text(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = lenet();
  g_autoptr(GError) err = NULL;
  /* OpenBLAS for the Gemm nodes (the f32 default is Weir's own GEMM), so
   * that the entry unit must carry the link line of a part */
  guint count = 0;
  assert_true(weir_native_set_impl(g, "Gemm", "blas", &count, &err));
  assert_true(count > 0);
  WeirCodegenOptions split = {.openmp = TRUE, .unit_bytes = 512};
  g_autoptr(GPtrArray) u1 = weir_codegen_units(g, &split, &err);
  g_autoptr(GPtrArray) u2 = weir_codegen_units(g, &split, &err);
  assert_non_null(u1);
  assert_true(u1->len > 2);
  assert_int_equal(u1->len, u2->len);
  for (guint i = 0; i < u1->len; i++)
    assert_string_equal(g_ptr_array_index(u1, i), g_ptr_array_index(u2, i));
  const char *entry = g_ptr_array_index(u1, 0);
  assert_non_null(strstr(entry, "torch_jit_part1(args, symbols, consts, "
                                "arena);"));
  assert_non_null(strstr(entry, "/* weir-link: openblas */"));
  /* the parts are in the other units, with the helpers they call */
  const char *part = g_ptr_array_index(u1, 1);
  /* int when a step of the part can fail (Weir's GEMM allocates its
   * packing buffers), else void */
  assert_non_null(strstr(part, "weir_hidden int torch_jit_part1(")
                      ? strstr(part, "weir_hidden int torch_jit_part1(")
                      : strstr(part, "weir_hidden void torch_jit_part1("));
  assert_null(strstr(part, "int torch_jit_run("));
  /* small enough: one unit, the text of weir_codegen_c */
  WeirCodegenOptions big = {.openmp = TRUE, .unit_bytes = 1 << 20};
  g_autoptr(GPtrArray) one = weir_codegen_units(g, &big, &err);
  g_autofree char *c = weir_codegen_c(g, NULL, &err);
  assert_int_equal(one->len, 1);
  assert_string_equal(g_ptr_array_index(one, 0), c);
}

static void test_key_covers_split(void **state) {
  Fixture *fx = *state;
  g_autoptr(WeirGraph) g = lenet();
  g_autoptr(GError) err = NULL;
  g_setenv("WEIR_CODEGEN_UNIT_BYTES", "512", TRUE);
  g_autofree char *k1 = weir_kernel_key(g, &fx->opts, &err);
  g_setenv("WEIR_CODEGEN_UNIT_BYTES", "0", TRUE);
  g_autofree char *k2 = weir_kernel_key(g, &fx->opts, &err);
  g_unsetenv("WEIR_CODEGEN_UNIT_BYTES");
  assert_non_null(k1);
  assert_non_null(k2);
  assert_string_not_equal(k1, k2);
}

static int setup(void **state) {
  *state = fixture_new();
  return 0;
}

static int teardown(void **state) {
  fixture_free(*state);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_models, setup, teardown),
      cmocka_unit_test(test_units_text),
      cmocka_unit_test_setup_teardown(test_key_covers_split, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
