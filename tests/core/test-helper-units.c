/* test-helper-units.c — kernel helpers compiled once into objects of the
 * compile cache (WeirCodegenOptions.helper_units; docs/runtime.md,
 * "Helper objects").
 *
 * Programs with one Gemm node (Weir's own GEMM) and a sample CNN:
 *  - the helper text becomes a unit of its own; the program's unit
 *    declares its entry point instead of pasting it; weir_codegen_c still
 *    pastes it (static);
 *  - a second program with the same helper compiles only its own unit and
 *    links the cached object (the compiler log counts the `-c` compiles);
 *  - a cached object truncated on disk (checksum) or stored damaged with a
 *    valid checksum (the link fails) is rebuilt, never linked into a
 *    broken kernel;
 *  - other helper parameters (f64) or other flags get other objects;
 *  - every kernel computes what the interpreter computes, at 1 and 2
 *    threads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "kernel-check.h"
#include "runtime-fixture.h"
#include "weir-codegen.h"
#include "weir-evaluate.h"
#include "weir-expand.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-validate.h"

static int setup(void **state) {
  *state = fixture_new();
  return 0;
}

static int teardown(void **state) {
  fixture_free(*state);
  return 0;
}

/* Y = X0 (m x k) X1 (k x n), one Gemm node. */
static WeirGraph *gemm_graph(const char *name, WeirDType dt, gint64 m, gint64 k,
                             gint64 n) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new(name);
  WeirState *s = weir_graph_add_state(g, "main");
  const char *ins[] = {"in0", "in1", NULL};
  const char *outs[] = {"out0", NULL};
  WeirNode *lib = weir_state_add_library(g, s, "gemm", "Gemm", ins, outs);
  const char *names[] = {"X0", "X1", "Y"};
  g_autofree char *s0 =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT, m, k);
  g_autofree char *s1 =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT, k, n);
  g_autofree char *sy =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT, m, n);
  const char *shapes[] = {s0, s1, sy};
  for (guint i = 0; i < 3; i++) {
    WeirContainer *c =
        weir_graph_add_array(g, names[i], dt, shapes[i], FALSE, &err);
    if (!c)
      fail_msg("%s: %s", name, err->message);
    g_autoptr(WeirSubset) full = weir_container_full_subset(c);
    g_autofree char *sub = weir_subset_to_string(full);
    WeirNode *a = weir_state_add_access(g, s, names[i]);
    if (i < 2)
      assert_true(weir_state_add_memlet(g, s, a->id, NULL, lib->id, ins[i],
                                        names[i], sub, &err));
    else
      assert_true(weir_state_add_memlet(g, s, lib->id, "out0", a->id, NULL,
                                        names[i], sub, &err));
  }
  assert_true(weir_op_check_attrs(lib, &err));
  if (!weir_graph_validate(g, &err))
    fail_msg("%s: %s", name, err->message);
  /* Weir's own GEMM (f64 defaults to a BLAS where there is one) */
  if (!weir_native_set_impl(g, "Gemm", "weir", NULL, &err))
    fail_msg("%s: %s", name, err->message);
  return g;
}

/* k computes what the interpreter computes on g, at 1 and 2 threads. */
static void check_outputs(WeirKernel *k, const WeirGraph *g) {
  g_autoptr(GError) err = NULL;
  g_autoptr(GHashTable) args = random_args(g, 3);
  g_autoptr(GHashTable) want = copy_args(args);
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("%s: expansion: %s", g->name, err->message);
  if (!weir_interpret(pure, NULL, want, NULL, &err))
    fail_msg("%s: interpreter: %s", g->name, err->message);
  g_autoptr(GPtrArray) list = weir_codegen_arguments(g);
  for (int threads = 1; threads <= 2; threads++) {
    if (!weir_kernel_set_threads(k, threads, NULL) && threads > 1)
      continue;
    g_autoptr(GHashTable) got = copy_args(args);
    if (!weir_kernel_run(k, NULL, got, &err))
      fail_msg("%s: %s", g->name, err->message);
    for (guint i = 0; i < list->len; i++) {
      const WeirContainer *c = g_ptr_array_index(list, i);
      if (!weir_tensor_allclose(g_hash_table_lookup(got, c->name),
                                g_hash_table_lookup(want, c->name), 1e-4, 1e-5,
                                NULL, &err))
        fail_msg("%s, '%s', %d threads: %s", g->name, c->name, threads,
                 err->message);
    }
  }
}

static WeirKernel *compile(Fixture *f, const WeirGraph *g,
                           const WeirCompileOptions *opts,
                           WeirCompileInfo *info) {
  g_autoptr(GError) err = NULL;
  WeirKernel *k = weir_kernel_compile(g, opts ? opts : &f->opts, info, &err);
  if (!k)
    fail_msg("%s: %s", g->name, err->message);
  return k;
}

/* The keys of the cache's objects other than `except` (hex, owned). */
static GPtrArray *other_keys(const Fixture *f, const char *except) {
  GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
  g_autofree char *dir = g_build_filename(f->cache_dir, "objects", NULL);
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d)))
    if (g_str_has_suffix(name, ".so") && strlen(name) == 67 &&
        strncmp(name, except, 64) != 0)
      g_ptr_array_add(keys, g_strndup(name, 64));
  return keys;
}

static gboolean matches(const char *text, const char *pattern) {
  return g_regex_match_simple(pattern, text, 0, 0);
}

static void test_units_text(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = gemm_graph("ga", WEIR_DTYPE_F32, 37, 29, 23);
  g_autoptr(GError) err = NULL;
  WeirCodegenOptions with = {.openmp = TRUE, .helper_units = TRUE};
  g_autoptr(GPtrArray) units = weir_codegen_units(g, &with, &err);
  if (!units)
    fail_msg("%s", err->message);
  g_autofree char *one = weir_codegen_c(g, NULL, &err);
  assert_non_null(one);
  /* standalone: pasted, static */
  assert_true(matches(one, "static[^;{]*\\bweir_gemm_f32\\("));
  assert_null(strstr(one, WEIR_CODEGEN_HELPER_UNIT_TAG));
  assert_null(strstr(one, "weir_hidden"));
  assert_true(units->len >= 2);
  const char *prog = g_ptr_array_index(units, 0);
  assert_false(g_str_has_prefix(prog, WEIR_CODEGEN_HELPER_UNIT_TAG));
  /* the program declares the entry point, one helper unit defines it */
  const char *decl = "weir_hidden[^;{}]*\\bweir_gemm_f32\\([^;{}]*\\);";
  const char *def = "weir_hidden[^;{}]*\\bweir_gemm_f32\\([^;{}]*\\)\\s*\\{";
  assert_true(matches(prog, decl));
  assert_false(matches(prog, "static[^;{}]*\\bweir_gemm_f32\\("));
  guint defining = 0;
  for (guint i = 1; i < units->len; i++) {
    const char *u = g_ptr_array_index(units, i);
    assert_true(g_str_has_prefix(u, WEIR_CODEGEN_HELPER_UNIT_TAG));
    defining += matches(u, def);
  }
  assert_int_equal(defining, 1);
  /* deterministic */
  g_autoptr(GPtrArray) again = weir_codegen_units(g, &with, &err);
  assert_int_equal(again->len, units->len);
  for (guint i = 0; i < units->len; i++)
    assert_string_equal(g_ptr_array_index(again, i),
                        g_ptr_array_index(units, i));
}

static void test_reuse(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) a = gemm_graph("ga", WEIR_DTYPE_F32, 37, 29, 23);
  g_autoptr(WeirGraph) b = gemm_graph("gb", WEIR_DTYPE_F32, 19, 29, 41);
  WeirCompileInfo ia = {0}, ib = {0};
  g_autoptr(WeirKernel) ka = compile(f, a, NULL, &ia);
  assert_true(ia.helper_units >= 1);
  assert_int_equal(ia.helper_hits, 0);
  guint after_a = fixture_helper_compiles(f);
  assert_int_equal(after_a, ia.helper_units);
  g_autoptr(WeirKernel) kb = compile(f, b, NULL, &ib);
  /* the same GEMM helper: found, not compiled again */
  assert_true(ib.helper_units >= 1);
  assert_int_equal(ib.helper_hits, ib.helper_units);
  assert_int_equal(fixture_helper_compiles(f), after_a);
  check_outputs(ka, a);
  check_outputs(kb, b);
  /* without helper units: nothing linked from the cache */
  g_setenv("WEIR_HELPER_UNITS", "0", TRUE);
  WeirCompileInfo ic = {0};
  g_autoptr(WeirKernel) kc = compile(f, b, NULL, &ic);
  g_unsetenv("WEIR_HELPER_UNITS");
  assert_false(ic.cache_hit); /* its own key */
  assert_int_equal(ic.helper_units, 0);
  assert_int_equal(fixture_helper_compiles(f), after_a);
  check_outputs(kc, b);
  weir_compile_info_clear(&ia);
  weir_compile_info_clear(&ib);
  weir_compile_info_clear(&ic);
}

/* Damages every cached helper object of program a (mode 0: truncated on
 * disk, the checksum finds it; 1: stored damaged with a valid checksum,
 * the link finds it), then compiles b, which uses the same helper. */
static void check_damaged(Fixture *f, int mode) {
  g_autoptr(WeirGraph) a = gemm_graph("ga", WEIR_DTYPE_F32, 37, 29, 23);
  g_autoptr(WeirGraph) b = gemm_graph("gb", WEIR_DTYPE_F32, 19, 29, 41);
  WeirCompileInfo ia = {0}, ib = {0};
  g_autoptr(WeirKernel) ka = compile(f, a, NULL, &ia);
  g_autoptr(GPtrArray) keys = other_keys(f, ia.key);
  assert_int_equal(keys->len, ia.helper_units);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirCache) cache = weir_cache_open(f->cache_dir, &err);
  assert_non_null(cache);
  for (guint i = 0; i < keys->len; i++) {
    const char *key = g_ptr_array_index(keys, i);
    g_autofree char *path = weir_cache_lookup(cache, key, NULL, &err);
    assert_non_null(path);
    if (mode == 0) {
      g_autofree char *data = NULL;
      gsize len = 0;
      assert_true(g_file_get_contents(path, &data, &len, NULL));
      assert_true(g_file_set_contents(path, data, (gssize)(len / 2), NULL));
    } else {
      static const char junk[] = "not an object file\n";
      g_autoptr(GBytes) bytes = g_bytes_new_static(junk, sizeof junk - 1);
      assert_true(weir_cache_insert(cache, key, bytes, NULL, &err));
    }
  }
  guint before = fixture_helper_compiles(f);
  g_autoptr(WeirKernel) kb = compile(f, b, NULL, &ib);
  assert_int_equal(ib.helper_rebuilt, keys->len);
  assert_int_equal(ib.helper_hits, 0);
  assert_int_equal(fixture_helper_compiles(f), before + keys->len);
  check_outputs(kb, b);
  /* rebuilt in the cache: a third program finds them whole */
  g_autoptr(WeirGraph) c = gemm_graph("gc", WEIR_DTYPE_F32, 5, 29, 3);
  WeirCompileInfo ic = {0};
  g_autoptr(WeirKernel) kc = compile(f, c, NULL, &ic);
  assert_int_equal(ic.helper_hits, ic.helper_units);
  assert_int_equal(ic.helper_rebuilt, 0);
  check_outputs(kc, c);
  weir_compile_info_clear(&ia);
  weir_compile_info_clear(&ib);
  weir_compile_info_clear(&ic);
}

static void test_truncated(void **state) {
  check_damaged(*state, 0);
}
static void test_stored_damaged(void **state) {
  check_damaged(*state, 1);
}

static void test_other_parameters(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) a = gemm_graph("ga", WEIR_DTYPE_F32, 37, 29, 23);
  g_autoptr(WeirGraph) d = gemm_graph("gd", WEIR_DTYPE_F64, 37, 29, 23);
  WeirCompileInfo ia = {0}, id = {0}, ie = {0};
  g_autoptr(WeirKernel) ka = compile(f, a, NULL, &ia);
  g_autoptr(WeirKernel) kd = compile(f, d, NULL, &id);
  /* f64: another helper text, another object */
  assert_true(id.helper_units >= 1);
  assert_int_equal(id.helper_hits, 0);
  check_outputs(kd, d);
  /* other flags: other objects (the flags are part of the helper's key) */
  g_autoptr(WeirGraph) b = gemm_graph("gb", WEIR_DTYPE_F32, 19, 29, 41);
  WeirCompileOptions o = f->opts;
  o.flags = TEST_FLAGS " -DWEIR_TEST_OTHER_FLAGS=1";
  guint before = fixture_helper_compiles(f);
  g_autoptr(WeirKernel) ke = compile(f, b, &o, &ie);
  assert_true(ie.helper_units >= 1);
  assert_int_equal(ie.helper_hits, 0);
  assert_int_equal(fixture_helper_compiles(f), before + ie.helper_units);
  check_outputs(ke, b);
  weir_compile_info_clear(&ia);
  weir_compile_info_clear(&id);
  weir_compile_info_clear(&ie);
}

/* CNNs with several helpers (GEMM, pooling, activations): the sample
 * residual CNN, then LeNet as two programs (another name: another
 * program key, the same helpers, which the second reuses); all match the
 * interpreter. */
static void test_cnn(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) r = import_sample("resnet", (gint64[]){2, 3, 16, 16}, 4);
  g_autoptr(WeirGraph) l4 = import_sample("lenet", (gint64[]){4, 1, 8, 8}, 4);
  g_autoptr(WeirGraph) l2 = weir_graph_copy(l4); /* another program */
  g_free(l2->name);
  l2->name = g_strdup("lenet_again");
  WeirCompileInfo ir = {0}, i4 = {0}, i2 = {0};
  g_autoptr(WeirKernel) kr = compile(f, r, NULL, &ir);
  assert_true(ir.helper_units >= 2);
  g_autoptr(WeirKernel) k4 = compile(f, l4, NULL, &i4);
  g_autoptr(WeirKernel) k2 = compile(f, l2, NULL, &i2);
  assert_false(i2.cache_hit);
  assert_true(i2.helper_hits >= 1);
  check_outputs(kr, r);
  check_outputs(k4, l4);
  check_outputs(k2, l2);
  weir_compile_info_clear(&ir);
  weir_compile_info_clear(&i4);
  weir_compile_info_clear(&i2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_units_text),
      cmocka_unit_test_setup_teardown(test_reuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stored_damaged, setup, teardown),
      cmocka_unit_test_setup_teardown(test_other_parameters, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cnn, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
