/* kernel-check.h — arguments and ISAs for the tests of Weir's own kernels
 * (test-kernel-gemm, test-kernel-depthwise): containers on a library
 * node, random tensors for every container of a program, copies of them,
 * the ISAs this CPU runs, the check of a call's comment, and the run of
 * a compiled program at 1-3 threads against reference outputs.
 * Header-only (static functions); include after cmocka.h and weir-hw.h. */
#ifndef WEIR_TEST_KERNEL_CHECK_H
#define WEIR_TEST_KERNEL_CHECK_H

#include "weir-hw.h"
#include "weir-import.h"
#include "weir-runtime.h"

static inline GHashTable *tensors_new(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                               (GDestroyNotify)weir_tensor_free);
}

/* A random tensor for every argument of g (concrete shapes; transients,
 * constants among them, are the program's own), seeded by seed + the
 * container's id. */
static inline GHashTable *random_args(const WeirGraph *g, guint64 seed) {
  GHashTable *args = tensors_new();
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
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

/* Fails unless a and b hold the same values element by element (an
 * output computed at `threads` threads against its 1-thread result); what
 * names the output in the message. */
static inline void assert_same_bits(const WeirTensor *a, const WeirTensor *b,
                                    const char *what, int threads) {
  for (gint64 e = 0; e < a->count; e++)
    if (weir_tensor_get(a, e) != weir_tensor_get(b, e))
      fail_msg("%s[%" G_GINT64_FORMAT "]: %.17g at %d threads, %.17g at 1",
               what, e, weir_tensor_get(a, e), threads, weir_tensor_get(b, e));
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

/* Adds container `name` of shape `shape` on connector conn of lib. */
static inline void add_port(WeirGraph *g, WeirState *s, WeirNode *lib,
                            const char *name, WeirDType dt, const char *shape,
                            const char *conn, gboolean input) {
  g_autoptr(GError) err = NULL;
  WeirContainer *x = weir_graph_add_array(g, name, dt, shape, FALSE, &err);
  if (!x)
    fail_msg("%s: %s", name, err->message);
  g_autoptr(WeirSubset) full = weir_container_full_subset(x);
  g_autofree char *sub = weir_subset_to_string(full);
  WeirNode *a = weir_state_add_access(g, s, name);
  if (input)
    assert_true(weir_state_add_memlet(g, s, a->id, NULL, lib->id, conn, name,
                                      sub, &err));
  else
    assert_true(weir_state_add_memlet(g, s, lib->id, conn, a->id, NULL, name,
                                      sub, &err));
}

/* Fails unless the comment before node n<n>'s call in src (the program
 * `prog`'s code) says `mark`, or, when mark is "", does not say `fused`
 * (the epilogue stayed a separate map). */
static inline void check_mark(const char *src, const char *prog, guint n,
                              const char *mark, const char *fused) {
  g_autofree char *label = g_strdup_printf("'n%u' (node ", n);
  const char *at = strstr(src, label);
  assert_non_null(at);
  const char *end = strstr(at, "*/");
  assert_non_null(end);
  g_autofree char *what = g_strndup(at, (gsize)(end + 2 - at));
  if (*mark ? !strstr(what, mark) : strstr(what, fused) != NULL)
    fail_msg("%s: node n%u is emitted as %s, expected '%s'", prog, n, what,
             mark);
}

/* Runs k (program `prog`, compiled for `isa`) on copies of args at 1, 2
 * and 3 threads, with every element of its outputs Y0 .. Y<nodes-1> set
 * to a sentinel first, and fails unless each output is within 1e-4 of
 * ref's. */
static inline void check_runs(WeirKernel *k, GHashTable *args, GHashTable *ref,
                              guint nodes, const char *prog, const char *isa) {
  g_autoptr(GError) err = NULL;
  for (int threads = 1; threads <= 3; threads++) {
    assert_true(weir_kernel_set_threads(k, threads, &err));
    g_autoptr(GHashTable) got = copy_args(args);
    for (guint n = 0; n < nodes; n++) {
      g_autofree char *yn = g_strdup_printf("Y%u", n);
      WeirTensor *y = g_hash_table_lookup(got, yn);
      gint64 count = (gint64)(weir_tensor_nbytes(y) / 4);
      for (gint64 e = 0; e < count; e++)
        weir_tensor_set(y, e, 12345.0); /* every element must be written */
    }
    if (!weir_kernel_run(k, NULL, got, &err))
      fail_msg("%s: %s", prog, err->message);
    for (guint n = 0; n < nodes; n++) {
      g_autofree char *yn = g_strdup_printf("Y%u", n);
      if (!weir_tensor_allclose(g_hash_table_lookup(got, yn),
                                g_hash_table_lookup(ref, yn), 1e-4, 1e-4, NULL,
                                &err))
        fail_msg("%s node n%u (%s, %d threads): %s", prog, n, isa, threads,
                 err->message);
    }
  }
}

#ifdef WEIR_SRCDIR
/* (Tests that know WEIR_SRCDIR.) Sample model samples/models/<name>.onnx
 * imported with its input "input" of the given shape; fails the test when it
 * cannot be. */
static inline WeirGraph *import_sample(const char *name, const gint64 *shape,
                                       guint rank) {
  g_autofree char *file = g_strconcat(name, ".onnx", NULL);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", file, NULL);
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  GArray *a = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_vals(a, shape, rank);
  g_hash_table_insert(shapes, "input", a);
  WeirOnnxImportOptions io = {.input_shapes = shapes};
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_onnx_import(path, &io, &err);
  if (!g)
    fail_msg("%s: %s", name, err->message);
  return g;
}
#endif

#endif
