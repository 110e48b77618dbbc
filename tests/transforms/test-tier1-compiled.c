/* test-tier1-compiled.c — tier-1 transformations through the code
 * generator: chains of transformations applied to the samples, compiled
 * with the system compiler (OpenMP on), run, and compared with the
 * interpreter on the untransformed program. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "tier1-check.h"
#include "weir-codegen.h"
#include "weir-runtime.h"
#include "weir-tensor.h"

static void assert_compiled_matches(WeirGraph *before, WeirGraph *after,
                                    GHashTable *bindings, double rtol) {
  g_autoptr(GError) err = NULL;
  g_autofree char *src = weir_codegen_c(after, NULL, &err);
  if (!src)
    fail_msg("codegen: %s", err->message);
  WeirCompileOptions opts = {.no_cache = TRUE};
  g_autoptr(WeirKernel) k = weir_kernel_compile(after, &opts, NULL, &err);
  if (!k)
    fail_msg("compile: %s", err->message);
  g_autoptr(GHashTable) want = t1_run(before, bindings, 99);
  /* the same random inputs, run by the kernel */
  g_autoptr(GHashTable) none = weir_bindings_new();
  g_autoptr(GHashTable) fresh = t1_run_inputs(after, bindings, 99);
  if (!weir_kernel_run(k, bindings ? bindings : none, fresh, &err))
    fail_msg("run: %s", err->message);
  for (guint i = 0; i < before->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(before->containers, i);
    if (c->transient)
      continue;
    const WeirTensor *w = g_hash_table_lookup(want, c->name);
    const WeirTensor *t = g_hash_table_lookup(fresh, c->name);
    double tol = weir_dtype_is_float(c->dtype) ? rtol : 0;
    if (!weir_tensor_allclose(t, w, tol, tol, NULL, &err))
      fail_msg("'%s', container '%s': %s\n%s", after->name, c->name,
               err->message, src);
  }
}

static void apply(WeirGraph *g, const char *name, guint state, guint n, guint a,
                  guint b, const char *param) {
  WeirSite site = n == 1 ? t1_site(state, 1, a) : t1_site(state, 2, a, b);
  const char *p[] = {param, NULL};
  t1_apply(g, name, &site, param ? p : NULL);
}

/* matmul: (i, k, j) order, 16x16 tiles over i and j, parallel tiles, SIMD
 * j, unrolled; then the same as a MatMul library node. */
static void test_matmul_chain(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t1_load_sample("matmul.json");
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  apply(g, "map-interchange", 12, 1, 15, 0, "order=0,2,1");
  apply(g, "map-tiling", 12, 1, 15, 0, "tile=16,0,16");
  WeirNode *tiles = t1_map_by_label(g, "matmul_tiles", NULL);
  g_autofree char *why = t1_reason(
      g, "map-collapse",
      &(WeirSite){.state = 12, .n_nodes = 1, .nodes = {tiles->id}}, NULL);
  assert_null(why);
  apply(g, "map-collapse", 12, 1, tiles->id, 0, NULL);
  apply(g, "vectorize", 12, 1, 15, 0, "width=8");
  apply(g, "unroll", 12, 1, 15, 0, "factor=4");
  assert_compiled_matches(before, g, NULL, 1e-4);

  g_autoptr(WeirGraph) lib = t1_load_sample("matmul.json");
  apply(lib, "gemm-extraction", 12, 1, 15, 0, NULL);
  assert_compiled_matches(before, lib, NULL, 1e-4);
}

/* vector_add (symbolic N): tiles of 32, SIMD inside; softmax: normalize
 * vectorized with its rows parallel. */
static void test_elementwise(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t1_load_sample("vector_add.json");
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  apply(g, "map-tiling", 4, 1, 7, 0, "tile=32");
  apply(g, "vectorize", 4, 1, 7, 0, "width=8");
  g_autoptr(GHashTable) b = t1_bindings("N", (gint64)1000, NULL);
  assert_compiled_matches(before, g, b, 1e-6);

  g_autoptr(WeirGraph) sm = t1_load_sample("softmax.json");
  g_autoptr(WeirGraph) smb = weir_graph_copy(sm);
  WeirState *s = NULL;
  WeirNode *norm = t1_map_by_label(sm, "normalize", &s);
  apply(sm, "vectorize", s->id, 1, norm->id, 0, "width=16");
  WeirNode *outer = t1_map_by_label(sm, "normalize_outer", NULL);
  assert_non_null(outer);
  WeirNode *rowmax = t1_map_by_label(sm, "rowmax", NULL);
  apply(sm, "map-collapse", s->id, 1, rowmax->id, 0, NULL);
  assert_compiled_matches(smb, sm, NULL, 1e-5);
}

/* The transformer with every gemm extracted and strength reduced. */
static void test_transformer(void **state) {
  (void)state;
  g_autoptr(GPtrArray) programs = t1_programs(TRUE);
  T1Program *tr = g_ptr_array_index(programs, programs->len - 1);
  assert_string_equal(tr->name, "transformer");
  g_autoptr(WeirGraph) g = weir_graph_copy(tr->g);
  const char *names[] = {"gemm-extraction", "strength-reduction"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    g_autoptr(GArray) sites = t1_sites(g, names[i]);
    for (guint k = 0; k < sites->len; k++) {
      const WeirSite *site = &g_array_index(sites, WeirSite, k);
      g_autofree char *r = t1_reason(g, names[i], site, NULL);
      if (!r)
        t1_apply(g, names[i], site, NULL);
    }
  }
  assert_compiled_matches(tr->g, g, NULL, 1e-4);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul_chain),
      cmocka_unit_test(test_elementwise),
      cmocka_unit_test(test_transformer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
