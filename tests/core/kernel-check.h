/* kernel-check.h — arguments and ISAs for the tests of Weir's own kernels
 * (test-kernel-gemm, test-kernel-depthwise): random tensors for every
 * container of a program, copies of them, and the ISAs this CPU runs.
 * Header-only (static functions); include after cmocka.h and weir-hw.h. */
#ifndef WEIR_TEST_KERNEL_CHECK_H
#define WEIR_TEST_KERNEL_CHECK_H

static inline GHashTable *tensors_new(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                               (GDestroyNotify)weir_tensor_free);
}

/* A random tensor for every container of g (concrete shapes), seeded by
 * seed + the container's id. */
static inline GHashTable *random_args(const WeirGraph *g, guint64 seed) {
  GHashTable *args = tensors_new();
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    gint64 shape[8] = {0};
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(g_ptr_array_index(c->shape, d), NULL,
                                 &shape[d], NULL));
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    weir_tensor_fill_random(t, seed + c->id);
    g_hash_table_replace(args, g_strdup(c->name), t);
  }
  return args;
}

static inline GHashTable *copy_args(GHashTable *args) {
  GHashTable *c = tensors_new();
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, args);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(c, g_strdup(k), weir_tensor_copy(v));
  return c;
}

/* The ISAs this CPU can run, best first. */
static inline guint isas(WeirHwIsa *out) {
  g_unsetenv("WEIR_ISA");
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  guint n = 0;
  for (int i = hw->isa; i >= 0; i--)
    out[n++] = (WeirHwIsa)i;
  return n;
}

#endif
