/* test-prepack.c — weights pre-packed once, when the kernel is loaded
 * (docs/native.md, "pre-packed weights"; docs/codegen.md, "Pre-packed
 * constants").
 *
 * A Conv whose weight is a bound constant (the implementation "weir", the
 * f32 default), or a MatMul or Gemm whose B is, is generated with
 * <prefix>_prepack, and the kernel packs the weight at load: its output
 * matches the interpreter on the pure expansion at 1, 2 and 3 threads for
 * odd sizes (M or N not a whole number of microkernel rows or columns,
 * several K blocks, several M or N blocks through the node's own MC or
 * NC, groups, a 1x1 kernel read in place, B transposed), is bit for bit
 * the output
 * of the same kernel packing per call (WEIR_PREPACK=0), and follows new
 * weights: the same compiled object bound to other weights (a cache hit)
 * packs those.  A weight given as an argument is never pre-packed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "runtime-fixture.h"
#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-interp.h"
#include "weir-kernels.h"
#include "weir-ops.h"
#include "weir-validate.h"

typedef struct {
  const char *name;
  gint64 m, c, h, w, k, stride, pad, group;
  gint64 mc; /* the node's own gemm_mc, 0 for none */
  /* the GEMM's orientation (impl_params orient; 2: channels in the
   * vectors, the weight in panels of TMR rows), 0 for none (by shape) */
  gint64 orient;
} ConvCase;

static const ConvCase cases[] = {
    {"odd_m", 13, 5, 9, 9, 3, 1, 1, 1, 0, 0},
    /* C/g * kh * kw = 630: three K blocks; MC 8: two M blocks of 20 rows */
    {"k_blocks", 20, 70, 7, 7, 3, 2, 1, 1, 8, 0},
    {"groups", 12, 6, 5, 6, 3, 1, 0, 3, 0, 0},
    {"plain_1x1", 9, 17, 4, 5, 1, 1, 0, 1, 0, 0},
    /* the usual tile's tail with the channels in the vectors (tail14p):
     * a 1x1 on a 14x14 map, odd rows, two K blocks */
    {"tail_1x1", 61, 300, 14, 14, 1, 1, 0, 1, 0, 1},
    /* channels in the vectors: odd rows, three K blocks (K 1620: the
     * transposed driver's k blocks are deeper, s2conv14p), three M blocks
     * (MC 40 -> blocks of one TMR panel), groups; by shape a strided 1x1
     * on a 7x7 map (channels on AVX-512) and a plain one (not, since
     * tail14p) */
    {"channels_odd_m", 50, 40, 7, 7, 1, 1, 0, 1, 0, 2},
    {"channels_k_blocks", 20, 180, 7, 7, 3, 2, 1, 1, 0, 2},
    {"channels_m_blocks", 100, 30, 6, 6, 1, 1, 0, 1, 40, 2},
    {"channels_groups", 12, 6, 5, 6, 3, 1, 0, 3, 0, 2},
    {"channels_by_shape", 480, 96, 13, 13, 1, 2, 0, 1, 0, 0},
    /* (K 576, MobileNetV2's 576 -> 160 projection's: three K blocks, one
     * tile and the 1-column tail per A panel, each panel's tile
     * prefetching the next, across K blocks at the last; mob17) */
    {"plain_by_shape", 480, 576, 7, 7, 1, 1, 0, 1, 0, 0},
    /* the transposed driver's prefetch of the next A block (r50): odd
     * rows, two K blocks (K 990), a 5x5 map (three 8-column panels and
     * one of 1); the blocks' last prefetches stop at the end of A (the
     * kernels are compiled with WEIR_GEMM_CHECK_PF, which fails the call
     * otherwise) */
    {"channels_prefetch", 100, 110, 5, 5, 3, 1, 1, 1, 0, 2},
    /* the same, the threads splitting the A vectors (r51): 10 vectors of
     * rows on a 7x7 map (seven 8-column panels: split by vectors at 2 and
     * 3 threads), MC 40 (blocks of one 48-row panel: 3, 3, 3 and 1
     * vectors on AVX-512), two K blocks; a thread's share starts and ends
     * inside blocks, and each block's prefetch must take exactly the
     * thread's panels of the next block it computes in
     * (WEIR_GEMM_CHECK_PF fails the call otherwise) */
    {"channels_by_m", 150, 300, 7, 7, 1, 1, 0, 1, 40, 2},
    /* the one-column last panel joined to the one before it (r53): a 1x17
     * map (8, 8 and 1 columns), one vector of rows, so the threads split
     * the B panels: at 1 thread the join, at 2 the second thread's panels
     * 1 and 2 joined, at 3 the third thread's last panel alone */
    {"channels_join", 16, 40, 1, 17, 1, 1, 0, 1, 0, 2},
};

static GHashTable *tensors_new(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                               (GDestroyNotify)weir_tensor_free);
}

/* Random data for constant container c (seeded). */
static void set_random_initial(WeirContainer *c, const gint64 *shape,
                               guint rank, guint64 seed) {
  g_autoptr(WeirTensor) t = weir_tensor_new(WEIR_DTYPE_F32, rank, shape);
  weir_tensor_fill_random(t, seed);
  g_autoptr(GBytes) b = g_bytes_new(t->data, weir_tensor_nbytes(t));
  weir_container_set_initial(c, b);
}

static void add_access(WeirGraph *g, WeirState *s, WeirNode *lib,
                       const char *name, const char *conn, gboolean input) {
  g_autoptr(GError) err = NULL;
  WeirContainer *c = weir_graph_container(g, name);
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autofree char *sub = weir_subset_to_string(full);
  WeirNode *a = weir_state_add_access(g, s, name);
  if (input)
    assert_true(weir_state_add_memlet(g, s, a->id, NULL, lib->id, conn, name,
                                      sub, &err));
  else
    assert_true(weir_state_add_memlet(g, s, lib->id, conn, a->id, NULL, name,
                                      sub, &err));
}

/* X (argument) * W (constant, random from seed) + B (constant) -> Y. */
static WeirGraph *conv_graph(const ConvCase *cc, guint64 seed) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new(cc->name);
  WeirState *s = weir_graph_add_state(g, "main");
  const char *ins[] = {"in0", "in1", "in2", NULL};
  const char *outs[] = {"out0", NULL};
  WeirNode *lib = weir_state_add_library(g, s, "conv", "Conv", ins, outs);
  gint64 oh = (cc->h + 2 * cc->pad - cc->k) / cc->stride + 1;
  gint64 ow = (cc->w + 2 * cc->pad - cc->k) / cc->stride + 1;
  gint64 ws[4] = {cc->m, cc->c / cc->group, cc->k, cc->k};
  gint64 bs[1] = {cc->m};
  g_autofree char *xs = g_strdup_printf(
      "1, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT, cc->c,
      cc->h, cc->w);
  g_autofree char *wss =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                      ws[0], ws[1], ws[2], ws[3]);
  g_autofree char *bss = g_strdup_printf("%" G_GINT64_FORMAT, cc->m);
  g_autofree char *ys = g_strdup_printf(
      "1, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT, cc->m,
      oh, ow);
  assert_non_null(
      weir_graph_add_array(g, "X", WEIR_DTYPE_F32, xs, FALSE, &err));
  WeirContainer *w =
      weir_graph_add_array(g, "W", WEIR_DTYPE_F32, wss, FALSE, &err);
  WeirContainer *b =
      weir_graph_add_array(g, "B", WEIR_DTYPE_F32, bss, FALSE, &err);
  assert_non_null(
      weir_graph_add_array(g, "Y", WEIR_DTYPE_F32, ys, FALSE, &err));
  set_random_initial(w, ws, 4, seed);
  set_random_initial(b, bs, 1, 1); /* a literal when small: the same */
  add_access(g, s, lib, "X", "in0", TRUE);
  add_access(g, s, lib, "W", "in1", TRUE);
  add_access(g, s, lib, "B", "in2", TRUE);
  add_access(g, s, lib, "Y", "out0", FALSE);
  gint64 pads[4] = {cc->pad, cc->pad, cc->pad, cc->pad};
  gint64 strides[2] = {cc->stride, cc->stride};
  weir_node_set_attr_ints(lib, "pads", pads, 4);
  weir_node_set_attr_ints(lib, "strides", strides, 2);
  weir_node_set_attr_int(lib, "group", cc->group);
  assert_true(weir_op_check_attrs(lib, &err));
  if (cc->mc) /* an implementation attribute, not the operator's */
    weir_node_set_attr_int(lib, WEIR_GEMM_ATTR_MC, cc->mc);
  if (cc->orient) {
    g_autofree char *p = g_strdup_printf("%s=%" G_GINT64_FORMAT,
                                         WEIR_GEMM_PARAM_ORIENT, cc->orient);
    const char *ps[] = {p};
    weir_node_set_attr_strings(lib, "impl_params", ps, 1);
  }
  if (!weir_graph_validate(g, &err))
    fail_msg("%s: %s", cc->name, err->message);
  return g;
}

/* A tensor of g's output Y's shape (zeros). */
static WeirTensor *output_of(const WeirGraph *g) {
  const WeirContainer *y = weir_graph_container(g, "Y");
  gint64 shape[4];
  assert_true(y->shape->len <= G_N_ELEMENTS(shape));
  for (guint d = 0; d < y->shape->len; d++)
    assert_true(
        weir_expr_eval(g_ptr_array_index(y->shape, d), NULL, &shape[d], NULL));
  return weir_tensor_new(WEIR_DTYPE_F32, y->shape->len, shape);
}

/* The interpreter's Y on the pure expansion of g for input x. */
static WeirTensor *reference(const WeirGraph *g, const WeirTensor *x) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  for (guint s = 0; s < pure->states->len; s++) {
    WeirState *st = g_ptr_array_index(pure->states, s);
    for (guint k = 0; k < st->nodes->len; k++) /* "weir"'s parameters */
      weir_node_remove_attr(g_ptr_array_index(st->nodes, k), "impl_params");
  }
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("pure expansion: %s", err->message);
  g_autoptr(GHashTable) args = tensors_new();
  g_hash_table_insert(args, g_strdup("X"), weir_tensor_copy(x));
  g_hash_table_insert(args, g_strdup("Y"), output_of(g));
  if (!weir_interpret(pure, NULL, args, NULL, &err))
    fail_msg("interpreter: %s", err->message);
  return weir_tensor_copy(g_hash_table_lookup(args, "Y"));
}

/* Runs kernel k on x with `threads` threads; Y (owned) starts as garbage. */
static WeirTensor *run(WeirKernel *k, const WeirGraph *g, const WeirTensor *x,
                       int threads) {
  g_autoptr(GError) err = NULL;
  g_autoptr(GError) terr = NULL;
  if (!weir_kernel_set_threads(k, threads, &terr))
    fail_msg("%d threads: %s", threads, terr->message);
  g_autoptr(GHashTable) args = tensors_new();
  g_hash_table_insert(args, g_strdup("X"), weir_tensor_copy(x));
  WeirTensor *y = output_of(g);
  for (gint64 e = 0; e < y->count; e++)
    weir_tensor_set(y, e, 12345.0);
  g_hash_table_insert(args, g_strdup("Y"), y);
  if (!weir_kernel_run(k, NULL, args, &err))
    fail_msg("run: %s", err->message);
  return weir_tensor_copy(y);
}

static int setup(void **state) {
  Fixture *f = fixture_new_shared();
  /* OpenMP, so that 2 and 3 threads are threads, and the transposed
   * driver checking its prefetches' addresses (r50) */
  f->opts.flags = "-O1 -fopenmp -fPIC -shared -DWEIR_GEMM_CHECK_PF";
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_free(*state);
  g_unsetenv("WEIR_PREPACK");
  return 0;
}

/* g (weights of one seed) and g2 (the same program, other weights) on
 * input x: the source has `marker` and a _prepack function; the kernel
 * pre-packs `bytes`, matches the interpreter at 1 and 2 threads, gives
 * the same bits packing per call, and g2's kernel (a cache hit) matches
 * g2's interpreter. */
static void check(Fixture *f, const char *name, const WeirGraph *g,
                  const WeirGraph *g2, const WeirTensor *x, gint64 bytes,
                  const char *marker) {
  g_autoptr(GError) err = NULL;
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  if (!src)
    fail_msg("%s: %s", name, err->message);
  if (!strstr(src, marker) || !strstr(src, "_prepack(const"))
    fail_msg("%s: the weight is not pre-packed", name);
  g_autoptr(WeirTensor) want = reference(g, x);

  g_unsetenv("WEIR_PREPACK");
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("%s: %s", name, err->message);
  assert_int_equal(weir_kernel_prepacked_bytes(k), bytes);
  g_autoptr(WeirTensor) packed1 = NULL;
  for (int threads = 1; threads <= 3; threads++) {
    g_autoptr(WeirTensor) y = run(k, g, x, threads);
    if (!weir_tensor_allclose(y, want, 1e-4, 1e-5, NULL, &err))
      fail_msg("%s (%d threads): %s", name, threads, err->message);
    if (threads == 1)
      packed1 = weir_tensor_copy(y);
  }

  /* the same object packing per call: the same bits */
  g_setenv("WEIR_PREPACK", "0", TRUE);
  WeirCompileInfo info;
  g_autoptr(WeirKernel) k0 = weir_kernel_compile(g, &f->opts, &info, &err);
  assert_non_null(k0);
  assert_true(info.cache_hit);
  weir_compile_info_clear(&info);
  assert_int_equal(weir_kernel_prepacked_bytes(k0), 0);
  g_autoptr(WeirTensor) y0 = run(k0, g, x, 1);
  assert_memory_equal(y0->data, packed1->data, weir_tensor_nbytes(y0));
  g_unsetenv("WEIR_PREPACK");

  /* other weights for the same object: packed anew at load */
  g_autoptr(WeirKernel) k2 = weir_kernel_compile(g2, &f->opts, &info, &err);
  assert_non_null(k2);
  assert_true(info.cache_hit);
  weir_compile_info_clear(&info);
  g_autoptr(WeirTensor) want2 = reference(g2, x);
  assert_false(weir_tensor_allclose(want2, want, 1e-4, 1e-5, NULL, NULL));
  for (int threads = 1; threads <= 3; threads++) {
    g_autoptr(WeirTensor) y = run(k2, g2, x, threads);
    if (!weir_tensor_allclose(y, want2, 1e-4, 1e-5, NULL, &err))
      fail_msg("%s, other weights (%d threads): %s", name, threads,
               err->message);
  }
}

static WeirGemmBlocking blocking(const WeirGraph *g) {
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  WeirGemmBlocking bl;
  const WeirState *s = g_ptr_array_index(g->states, 0);
  const WeirNode *lib = NULL;
  for (guint k = 0; k < s->nodes->len; k++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY)
      lib = n;
  }
  assert_true(
      weir_kernel_gemm_blocking_node(hw, WEIR_DTYPE_F32, lib, &bl, NULL));
  return bl;
}

static void test_conv_cases(void **state) {
  Fixture *f = *state;
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    const ConvCase *cc = &cases[i];
    g_autoptr(WeirGraph) g = conv_graph(cc, 11 + i);
    g_autoptr(WeirGraph) g2 = conv_graph(cc, 101 + i);
    gint64 xs[4] = {1, cc->c, cc->h, cc->w};
    g_autoptr(WeirTensor) x = weir_tensor_new(WEIR_DTYPE_F32, 4, xs);
    weir_tensor_fill_random(x, 5 + i);
    /* the weight's groups, each M/g rounded up to whole MR-high panels
     * (TMR-high with channels in the vectors) */
    WeirGemmBlocking bl = blocking(g);
    gint64 mg = cc->m / cc->group, kk = cc->c / cc->group * cc->k * cc->k;
    gint64 oh = (cc->h + 2 * cc->pad - cc->k) / cc->stride + 1;
    gint64 ow = (cc->w + 2 * cc->pad - cc->k) / cc->stride + 1;
    gboolean patches = cc->k != 1 || cc->stride != 1 || cc->pad != 0;
    gboolean ch = cc->orient == 2 ||
                  (cc->orient == 0 && weir_kernel_gemm_channels_in_vectors(
                                          &bl, mg, oh * ow, kk, patches));
    check(
        f, cc->name, g, g2, x,
        4 * (ch ? weir_kernel_gemm_prepacked_at_elements(&bl, cc->group, mg, kk)
                : weir_kernel_gemm_prepacked_a_elements(&bl, cc->group, mg,
                                                        kk)),
        ch ? "weight pre-packed, channels in the vectors"
           : "weight pre-packed");
  }
}

/* MatMul (a linear layer over a sequence: one GEMM of all its rows) and
 * Gemm (B transposed) with a constant B. */
typedef struct {
  const char *name, *op;
  gint64 batch, m, k, n;
  gboolean tb;
  gint64 kc, nc; /* the node's own blocking, 0 for none */
} GemmCase;

static const GemmCase gemm_cases[] = {
    {"matmul_odd_n", "MatMul", 3, 40, 70, 100, FALSE, 0, 0},
    /* KC 32: three K blocks; NC 48: three N blocks, the last partial */
    {"matmul_blocks", "MatMul", 1, 9, 90, 100, FALSE, 32, 48},
    {"gemm_tb", "Gemm", 0, 10, 33, 50, TRUE, 0, 0},
};

/* Y = X * op(W), W a constant of random values from seed. */
static WeirGraph *gemm_graph(const GemmCase *gc, guint64 seed) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new(gc->name);
  WeirState *s = weir_graph_add_state(g, "main");
  const char *ins[] = {"in0", "in1", NULL};
  const char *outs[] = {"out0", NULL};
  WeirNode *lib = weir_state_add_library(g, s, "mm", gc->op, ins, outs);
  g_autofree char *xs =
      gc->batch ? g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                                  ", %" G_GINT64_FORMAT,
                                  gc->batch, gc->m, gc->k)
                : g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                                  gc->m, gc->k);
  gint64 ws[2] = {gc->tb ? gc->n : gc->k, gc->tb ? gc->k : gc->n};
  g_autofree char *wss =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT, ws[0], ws[1]);
  g_autofree char *ys =
      gc->batch ? g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                                  ", %" G_GINT64_FORMAT,
                                  gc->batch, gc->m, gc->n)
                : g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                                  gc->m, gc->n);
  assert_non_null(
      weir_graph_add_array(g, "X", WEIR_DTYPE_F32, xs, FALSE, &err));
  WeirContainer *w =
      weir_graph_add_array(g, "W", WEIR_DTYPE_F32, wss, FALSE, &err);
  assert_non_null(
      weir_graph_add_array(g, "Y", WEIR_DTYPE_F32, ys, FALSE, &err));
  set_random_initial(w, ws, 2, seed);
  add_access(g, s, lib, "X", "in0", TRUE);
  add_access(g, s, lib, "W", "in1", TRUE);
  add_access(g, s, lib, "Y", "out0", FALSE);
  if (gc->tb)
    weir_node_set_attr_int(lib, "transB", 1);
  assert_true(weir_op_check_attrs(lib, &err));
  if (gc->kc)
    weir_node_set_attr_int(lib, WEIR_GEMM_ATTR_KC, gc->kc);
  if (gc->nc)
    weir_node_set_attr_int(lib, WEIR_GEMM_ATTR_NC, gc->nc);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s: %s", gc->name, err->message);
  return g;
}

static void test_gemm_cases(void **state) {
  Fixture *f = *state;
  for (guint i = 0; i < G_N_ELEMENTS(gemm_cases); i++) {
    const GemmCase *gc = &gemm_cases[i];
    g_autoptr(WeirGraph) g = gemm_graph(gc, 21 + i);
    g_autoptr(WeirGraph) g2 = gemm_graph(gc, 201 + i);
    gint64 xs[3] = {gc->batch, gc->m, gc->k};
    g_autoptr(WeirTensor) x = gc->batch
                                  ? weir_tensor_new(WEIR_DTYPE_F32, 3, xs)
                                  : weir_tensor_new(WEIR_DTYPE_F32, 2, xs + 1);
    weir_tensor_fill_random(x, 9 + i);
    WeirGemmBlocking bl = blocking(g);
    check(f, gc->name, g, g2, x,
          4 * weir_kernel_gemm_prepacked_b_elements(&bl, gc->k, gc->n),
          "B pre-packed at load");
  }
}

/* A weight given as an argument is read as it is in every call. */
static void test_argument_weight(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = conv_graph(&cases[0], 3);
  WeirContainer *w = weir_graph_container(g, "W");
  weir_container_set_initial(w, NULL);
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  assert_non_null(src);
  assert_null(strstr(src, "weight pre-packed"));
  assert_null(strstr(src, "_prepack("));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_conv_cases, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gemm_cases, setup, teardown),
      cmocka_unit_test(test_argument_weight),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
