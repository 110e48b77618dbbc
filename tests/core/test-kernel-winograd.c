/* test-kernel-winograd.c — Weir's Winograd convolution F(4x4, 3x3), the
 * native implementation "winograd" of Conv (core/kernels/winograd.c),
 * against the reference interpreter running the pure expansion.
 *
 * One program holds many independent Conv nodes: odd sizes, padding 0, 1,
 * 2 and asymmetric, channel counts that are not multiples of the vector
 * width, more input channels than one k block of the GEMM, batch 2,
 * output maps that are not multiples of the 4x4 tile, several blocks of
 * tiles (impl_params "tiles"), enough tiles that at 2 threads each takes
 * its own blocks, no bias, and every epilogue kind the
 * kernels know (clip, sigmoid, SiLU, HardSwish, GELU, a residual with and
 * without an activation), each node's comment saying what it applies.  It
 * is compiled for every ISA the CPU has ($WEIR_ISA lowers it) and run at 1
 * and 2 threads; the filters are arguments, so U is computed per call.  A
 * second program has constant filters, transformed and packed at load,
 * checked the same way and bit for bit against packing per call
 * (WEIR_PREPACK=0).  Also: what the implementation refuses (an explicit
 * choice that does not apply is an error naming the node), and the
 * default choice by shape.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>

#include "runtime-fixture.h"
#include "weir-attr.h"
#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-expr.h"
#include "weir-hw.h"
#include "weir-interp.h"
#include "weir-kernels.h"
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-tensor-io.h"
#include "weir-validate.h"

#include "kernel-check.h"
#include "pure-reference.h"

#define FLAGS "-O1 -fopenmp -fPIC -shared"

/* Winograd F(4x4, 3x3) in f32 rounds more than the direct sum, and its
 * error grows with the sum's terms rather than with each output: the
 * tolerance against the interpreter is relative to each element (RTOL)
 * plus an absolute part of ATOL or ATOL_SCALE times the node's largest
 * output, whichever is larger (a small output of a 270-channel sum is off
 * by about 1e-5 of the largest). */
#define RTOL 1e-4
#define ATOL 2e-4
#define ATOL_SCALE 3e-5

typedef struct {
  const char *x, *w, *b, *y;
  gint64 pads[4]; /* top, left, bottom, right */
  const char *epi;
  gboolean residual;
  const char *mark;
  gint64 tiles; /* impl_params tiles, 0: the default */
} Case;

static const Case cases[] = {
    {"1, 5, 9, 11", "7, 5, 3, 3", "7", "1, 7, 9, 11", {1, 1, 1, 1}},
    {"2, 3, 8, 8", "4, 3, 3, 3", "4", "2, 4, 6, 6", {0, 0, 0, 0}},
    {"1, 17, 13, 10", "19, 17, 3, 3", NULL, "1, 19, 15, 12", {2, 2, 2, 2}},
    {"1, 8, 10, 9", "12, 8, 3, 3", "12", "1, 12, 9, 9", {0, 2, 1, 0}},
    {"1, 20, 7, 7",
     "33, 20, 3, 3",
     "33",
     "1, 33, 7, 7",
     {1, 1, 1, 1},
     "y = max(x + r, 0.0)",
     TRUE,
     "winograd F(4x4, 3x3) + residual + clip"},
    {"2, 6, 12, 12",
     "9, 6, 3, 3",
     "9",
     "2, 9, 12, 12",
     {1, 1, 1, 1},
     "s = 1 / (1 + exp(-x))\ny = s * x",
     FALSE,
     "+ SiLU"},
    {"1, 70, 30, 30",
     "40, 70, 3, 3",
     "40",
     "1, 40, 30, 30",
     {1, 1, 1, 1},
     "y = min(max(x, 0.0), 6.0)",
     FALSE,
     "+ clip",
     48},
    {"1, 300, 6, 6", "20, 300, 3, 3", "20", "1, 20, 6, 6", {1, 1, 1, 1}},
    /* V packed as the GEMM's B over several blocks of tiles and two k
     * blocks */
    {"2, 270, 13, 11",
     "37, 270, 3, 3",
     "37",
     "2, 37, 13, 11",
     {1, 1, 1, 1},
     "y = max(x, 0.0)",
     FALSE,
     "+ clip",
     48},
    {"2, 16, 21, 19",
     "16, 16, 3, 3",
     "16",
     "2, 16, 21, 19",
     {1, 1, 1, 1},
     "y = x + r",
     TRUE,
     "+ residual",
     48},
    /* enough tiles (2 x 14 x 13 = 364: at 2 threads at least four blocks
     * of 48 each) that each thread takes its own run of the GEMM's
     * panels (rows of tiles and images crossing the blocks) */
    {"2, 20, 54, 50",
     "24, 20, 3, 3",
     "24",
     "2, 24, 54, 50",
     {1, 1, 1, 1},
     "y = max(x + r, 0.0)",
     TRUE,
     "+ residual + clip",
     48},
    /* fewer panels than that, but at least 32 tiles per thread (s18): at
     * 2 threads each thread takes half of the tiles, not cut on panels
     * (15 x 14 = 210 tiles, 105 a thread in blocks of 35; 3 x 6 x 7 =
     * 126 tiles, the threads' boundary inside the second image, blocks of
     * 32 and 31) */
    {"1, 24, 58, 54",
     "20, 24, 3, 3",
     "20",
     "1, 20, 58, 54",
     {1, 1, 1, 1},
     "y = max(x + r, 0.0)",
     TRUE,
     "+ residual + clip",
     48},
    {"3, 10, 22, 26",
     "13, 10, 3, 3",
     "13",
     "3, 13, 22, 26",
     {1, 1, 1, 1},
     "y = x + r",
     TRUE,
     "+ residual",
     48},
    /* maps of one or two tiles a row at a batch: the transforms' vectors
     * of 16 tiles take several rows of tiles and images at once (a 4x4
     * map, one tile an image; asymmetric padding 2) */
    {"5, 6, 4, 4", "8, 6, 3, 3", "8", "5, 8, 4, 4", {1, 1, 1, 1}},
    {"4, 5, 6, 5",
     "7, 5, 3, 3",
     "7",
     "4, 7, 7, 4",
     {2, 1, 1, 0},
     "y = max(x + r, 0.0)",
     TRUE,
     "+ residual + clip"},
    /* 400 images of one tile: at 2 threads each thread on its own panels,
     * 16 images a vector */
    {"400, 4, 4, 4",
     "8, 4, 3, 3",
     "8",
     "400, 8, 4, 4",
     {1, 1, 1, 1},
     "y = max(x, 0.0)",
     FALSE,
     "+ clip",
     48},
    {"1, 4, 6, 6",
     "5, 4, 3, 3",
     "5",
     "1, 5, 6, 6",
     {1, 1, 1, 1},
     "y = 1 / (1 + exp(-x))",
     FALSE,
     "+ sigmoid"},
    {"1, 4, 5, 5",
     "6, 4, 3, 3",
     "6",
     "1, 6, 5, 5",
     {1, 1, 1, 1},
     "y = x * max(0.0, min(1.0, x / 6.0 + 0.5))",
     FALSE,
     "+ HardSwish"},
    {"1, 4, 5, 5",
     "6, 4, 3, 3",
     "6",
     "1, 6, 5, 5",
     {1, 1, 1, 1},
     "y = 0.5 * x * (1 + erf(x * 0.7071067811865476))",
     FALSE,
     "+ GELU"},
};

static WeirGraph *program(const char *name) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new(name);
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    const Case *c = &cases[k];
    const char *ins[5] = {"in0", "in1"};
    guint ni = 2;
    if (c->b)
      ins[ni++] = "in2";
    if (c->residual)
      ins[ni++] = "epi0";
    const char *outs[] = {"out0", NULL};
    g_autofree char *label = g_strdup_printf("n%u", k);
    WeirNode *lib = weir_state_add_library(g, s, label, "Conv", ins, outs);
    g_autofree char *xn = g_strdup_printf("X%u", k);
    g_autofree char *wn = g_strdup_printf("W%u", k);
    g_autofree char *bn = g_strdup_printf("B%u", k);
    g_autofree char *yn = g_strdup_printf("Y%u", k);
    g_autofree char *rn = g_strdup_printf("R%u", k);
    add_port(g, s, lib, xn, WEIR_DTYPE_F32, c->x, "in0", TRUE);
    add_port(g, s, lib, wn, WEIR_DTYPE_F32, c->w, "in1", TRUE);
    if (c->b)
      add_port(g, s, lib, bn, WEIR_DTYPE_F32, c->b, "in2", TRUE);
    if (c->residual)
      add_port(g, s, lib, rn, WEIR_DTYPE_F32, c->y, "epi0", TRUE);
    add_port(g, s, lib, yn, WEIR_DTYPE_F32, c->y, "out0", FALSE);
    weir_node_set_attr_ints(lib, "pads", c->pads, 4);
    if (!weir_op_check_attrs(lib, &err))
      fail_msg("%s: %s", label, err->message);
    if (c->epi) {
      const char *econns[3] = {"y", "x", "r"};
      weir_node_set_attr_string(lib, WEIR_EPILOGUE_CODE, c->epi);
      weir_node_set_attr_strings(lib, WEIR_EPILOGUE_CONNS, econns,
                                 c->residual ? 3 : 2);
    }
  }
  if (!weir_graph_validate(g, &err))
    fail_msg("%s: %s", name, err->message);
  return g;
}

/* Sets impl = winograd on every Conv of g, with the cases' tiles. */
static void choose(WeirGraph *g) {
  for (guint s = 0; s < g->states->len; s++) {
    WeirState *st = g_ptr_array_index(g->states, s);
    for (guint i = 0; i < st->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(st->nodes, i);
      guint k;
      if (n->kind != WEIR_NODE_LIBRARY)
        continue;
      weir_node_set_attr_string(n, "impl", "winograd");
      if (sscanf(n->label, "n%u", &k) != 1 || k >= G_N_ELEMENTS(cases))
        continue;
      if (!cases[k].tiles)
        continue;
      g_autofree char *pt =
          g_strdup_printf("tiles=%" G_GINT64_FORMAT, cases[k].tiles);
      const char *ps[] = {pt};
      weir_node_set_attr_strings(n, "impl_params", ps, 1);
    }
  }
}

/* Runs k at `threads` on a copy of args (outputs first set to garbage) and
 * compares Y0..Y<nodes-1> with ref; returns the results. */
static GHashTable *run_check(WeirKernel *k, const char *what, GHashTable *args,
                             GHashTable *ref, guint nodes, int threads) {
  g_autoptr(GError) err = NULL;
  assert_true(weir_kernel_set_threads(k, threads, &err));
  GHashTable *got = copy_args(args);
  for (guint n = 0; n < nodes; n++) {
    g_autofree char *yn = g_strdup_printf("Y%u", n);
    WeirTensor *y = g_hash_table_lookup(got, yn);
    for (gint64 e = 0; e < y->count; e++)
      weir_tensor_set(y, e, 12345.0); /* every element must be written */
  }
  if (!weir_kernel_run(k, NULL, got, &err))
    fail_msg("%s: %s", what, err->message);
  for (guint n = 0; n < nodes; n++) {
    g_autofree char *yn = g_strdup_printf("Y%u", n);
    const WeirTensor *want = g_hash_table_lookup(ref, yn);
    double big = 0;
    for (gint64 e = 0; e < want->count; e++)
      big = MAX(big, fabs(weir_tensor_get(want, e)));
    if (!weir_tensor_allclose(g_hash_table_lookup(got, yn), want, RTOL,
                              MAX(ATOL, ATOL_SCALE * big), NULL, &err))
      fail_msg("%s node n%u (%d threads): %s", what, n, threads, err->message);
  }
  return got;
}

/* The arguments of the program and the interpreter's results on them,
 * shared by test_nodes and test_prepacked: the interpreter (on the pure
 * expansion) is most of this test's time, more so under the sanitizers. */
typedef struct {
  GHashTable *args, *ref;
} Shared;

static int shared_setup(void **state) {
  g_autoptr(WeirGraph) g = program("winograd");
  choose(g);
  Shared *sh = g_new0(Shared, 1);
  sh->args = random_args(g, 5);
  sh->ref = pure_reference(g, sh->args);
  *state = sh;
  return 0;
}

static int shared_teardown(void **state) {
  Shared *sh = *state;
  g_hash_table_unref(sh->args);
  g_hash_table_unref(sh->ref);
  g_free(sh);
  return 0;
}

static void test_nodes(void **state) {
  const Shared *sh = *state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = program("winograd");
  choose(g);
  GHashTable *args = sh->args, *ref = sh->ref;
  Fixture *f = fixture_new_shared();
  f->opts.flags = FLAGS;
  WeirHwIsa list[3];
  guint ni = isas(list);
  for (guint i = 0; i < ni; i++) {
    g_setenv("WEIR_ISA", weir_hw_isa_name(list[i]), TRUE);
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s: %s", weir_hw_isa_name(list[i]), err->message);
    assert_non_null(strstr(src, "weir_wino_f32("));
    for (guint n = 0; n < G_N_ELEMENTS(cases); n++) {
      check_mark(src, "winograd", n, "winograd F(4x4, 3x3)", "");
      if (cases[n].mark)
        check_mark(src, "winograd", n, cases[n].mark, "");
      if (cases[n].tiles)
        check_mark(src, "winograd", n, ", 48 tiles a block", "");
    }
    /* the filters are arguments: transformed per call */
    assert_null(strstr(src, "filters transformed at load"));
    g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
    if (!k)
      fail_msg("%s: %s", weir_hw_isa_name(list[i]), err->message);
    for (int threads = 1; threads <= 2; threads++) {
      g_autofree char *what =
          g_strdup_printf("winograd (%s)", weir_hw_isa_name(list[i]));
      g_autoptr(GHashTable) got =
          run_check(k, what, args, ref, G_N_ELEMENTS(cases), threads);
    }
  }
  g_unsetenv("WEIR_ISA");
  fixture_free(f);
}

/* The cases with constant filters and biases (bound, never written). */
static void make_constant(WeirGraph *g, GHashTable *args) {
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    const char *names[2] = {"W", "B"};
    for (guint j = 0; j < 2; j++) {
      g_autofree char *nm = g_strdup_printf("%s%u", names[j], k);
      WeirContainer *c = weir_graph_container(g, nm);
      WeirTensor *t = g_hash_table_lookup(args, nm);
      if (!c || !t)
        continue;
      g_autoptr(GBytes) b = g_bytes_new(t->data, weir_tensor_nbytes(t));
      weir_container_set_initial(c, b);
      g_hash_table_remove(args, nm);
    }
  }
}

static void test_prepacked(void **state) {
  const Shared *sh = *state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = program("winograd_const");
  choose(g);
  /* the same values as test_nodes, the filters and biases now constants:
   * the same results */
  g_autoptr(GHashTable) args = copy_args(sh->args);
  make_constant(g, args);
  GHashTable *ref = sh->ref;
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  if (!src)
    fail_msg("%s", err->message);
  for (guint n = 0; n < G_N_ELEMENTS(cases); n++)
    check_mark(src, "winograd_const", n, "filters transformed at load", "");
  assert_non_null(strstr(src, "weir_wino_prepack_f32("));
  Fixture *f = fixture_new_shared();
  f->opts.flags = FLAGS;
  g_unsetenv("WEIR_PREPACK");
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("%s", err->message);
  assert_true(weir_kernel_prepacked_bytes(k) > 0);
  g_autoptr(GHashTable) got1 = NULL;
  for (int threads = 1; threads <= 2; threads++) {
    GHashTable *got =
        run_check(k, "winograd_const", args, ref, G_N_ELEMENTS(cases), threads);
    if (threads == 1)
      got1 = got;
    else
      g_hash_table_unref(got);
  }
  /* the same object transforming the filters per call: the same bits */
  g_setenv("WEIR_PREPACK", "0", TRUE);
  g_autoptr(WeirKernel) k0 = weir_kernel_compile(g, &f->opts, NULL, &err);
  assert_non_null(k0);
  assert_int_equal(weir_kernel_prepacked_bytes(k0), 0);
  g_autoptr(GHashTable) got0 = run_check(k0, "winograd_const (per call)", args,
                                         ref, G_N_ELEMENTS(cases), 1);
  g_unsetenv("WEIR_PREPACK");
  for (guint n = 0; n < G_N_ELEMENTS(cases); n++) {
    g_autofree char *yn = g_strdup_printf("Y%u", n);
    WeirTensor *a = g_hash_table_lookup(got0, yn);
    WeirTensor *b = g_hash_table_lookup(got1, yn);
    assert_memory_equal(a->data, b->data, weir_tensor_nbytes(a));
  }
  fixture_free(f);
}

/* One Conv X[1, c, h, h] * W[m, c, 3, 3] with attributes set by attrs. */
static WeirGraph *one_conv_n(gint64 n, gint64 c, gint64 m, gint64 h, gint64 k,
                             void (*attrs)(WeirNode *), const char *yshape) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new("one");
  WeirState *s = weir_graph_add_state(g, "main");
  const char *ins[] = {"in0", "in1", NULL};
  const char *outs[] = {"out0", NULL};
  WeirNode *lib = weir_state_add_library(g, s, "conv", "Conv", ins, outs);
  g_autofree char *xs =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                      n, c, h, h);
  g_autofree char *ws =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                      m, c, k, k);
  add_port(g, s, lib, "X", WEIR_DTYPE_F32, xs, "in0", TRUE);
  add_port(g, s, lib, "W", WEIR_DTYPE_F32, ws, "in1", TRUE);
  add_port(g, s, lib, "Y", WEIR_DTYPE_F32, yshape, "out0", FALSE);
  if (attrs)
    attrs(lib);
  if (!weir_op_check_attrs(lib, &err) || !weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  return g;
}

static WeirGraph *one_conv(gint64 c, gint64 m, gint64 h, gint64 k,
                           void (*attrs)(WeirNode *), const char *yshape) {
  return one_conv_n(1, c, m, h, k, attrs, yshape);
}

static void pad1(WeirNode *n) {
  gint64 pads[4] = {1, 1, 1, 1};
  weir_node_set_attr_ints(n, "pads", pads, 4);
}
static void stride2(WeirNode *n) {
  gint64 st[2] = {2, 2};
  weir_node_set_attr_ints(n, "strides", st, 2);
  pad1(n);
}

static WeirNode *conv_node(WeirGraph *g) {
  WeirState *st = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < st->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(st->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY)
      return n;
  }
  return NULL;
}

static void test_choice(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  /* refused: stride 2, a 5x5 kernel, fewer than 4 output channels; an
   * explicit choice is then an error naming the node */
  struct {
    gint64 c, m, h, k;
    void (*attrs)(WeirNode *);
    const char *y;
    const char *why;
  } refused[] = {
      {8, 8, 8, 3, stride2, "1, 8, 4, 4", "stride 1"},
      {8, 8, 8, 5, pad1, "1, 8, 6, 6", "3x3"},
      {8, 3, 8, 3, pad1, "1, 3, 8, 8", "at least 4 output channels"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
    g_autoptr(WeirGraph) g =
        one_conv(refused[i].c, refused[i].m, refused[i].h, refused[i].k,
                 refused[i].attrs, refused[i].y);
    WeirNode *n = conv_node(g);
    WeirState *st = g_ptr_array_index(g->states, 0);
    assert_string_not_equal(weir_native_default_impl(g, st, n), "winograd");
    weir_node_set_attr_string(n, "impl", "winograd");
    const WeirNativeImpl *ni = NULL;
    assert_false(weir_native_choice(g, st, n, &ni, &err));
    assert_non_null(err);
    if (!strstr(err->message, "conv") || !strstr(err->message, refused[i].why))
      fail_msg("unexpected error: %s", err->message);
    g_clear_error(&err);
  }
  /* the default by shape: 64 channels on 56x56 and 28x28 maps take it,
   * and, with a constant filter (transformed once at load), smaller maps
   * with at least 32 tiles over the batch (256 channels on 8x8 and 512 on
   * 4x4 at batch 32); batch-1 7x7 maps (4 tiles), 31 tiles, a filter
   * that is not a constant on the small maps and 16 channels do not */
  struct {
    gint64 n, c, m, h;
    const char *y;
    gboolean konst, want;
  } dflt[] = {
      {1, 64, 64, 56, "1, 64, 56, 56", FALSE, TRUE},
      {1, 128, 128, 28, "1, 128, 28, 28", FALSE, TRUE},
      {1, 512, 512, 7, "1, 512, 7, 7", TRUE, FALSE},
      {1, 16, 16, 56, "1, 16, 56, 56", FALSE, FALSE},
      {32, 256, 256, 8, "32, 256, 8, 8", TRUE, TRUE},
      {32, 256, 256, 8, "32, 256, 8, 8", FALSE, FALSE},
      {32, 512, 512, 4, "32, 512, 4, 4", TRUE, TRUE},
      {31, 512, 512, 4, "31, 512, 4, 4", TRUE, FALSE},
      {8, 512, 512, 7, "8, 512, 7, 7", TRUE, TRUE},
      {32, 16, 16, 8, "32, 16, 8, 8", TRUE, FALSE},
  };
  for (guint i = 0; i < G_N_ELEMENTS(dflt); i++) {
    g_autoptr(WeirGraph) g = one_conv_n(dflt[i].n, dflt[i].c, dflt[i].m,
                                        dflt[i].h, 3, pad1, dflt[i].y);
    if (dflt[i].konst) {
      gsize nb = (gsize)(dflt[i].m * dflt[i].c * 9) * sizeof(float);
      g_autoptr(GBytes) b = g_bytes_new_take(g_malloc0(nb), nb);
      weir_container_set_initial(weir_graph_container(g, "W"), b);
    }
    WeirNode *n = conv_node(g);
    WeirState *st = g_ptr_array_index(g->states, 0);
    assert_string_equal(weir_native_default_impl(g, st, n),
                        dflt[i].want ? "winograd" : "weir");
  }
  /* the default block of tiles on AVX-512 (NR 48 columns: 48 tiles for
   * 128 channels): a batch-1 28x28 map's 49 tiles in one block (in blocks
   * of 48 the last would hold one tile and read all of U again), a 30x30
   * map's 64 tiles (more than an eighth over 48) and a 56x56 map's 196 in
   * blocks of 48 */
  struct {
    gint64 h;
    const char *y, *mark;
  } blocks[] = {
      {28, "1, 128, 28, 28", ", 49 tiles a block"},
      {30, "1, 128, 30, 30", ", 48 tiles a block"},
      {56, "1, 128, 56, 56", ", 48 tiles a block"},
  };
  WeirHwIsa list[3];
  guint ni = isas(list);
  for (guint i = 0;
       i < G_N_ELEMENTS(blocks) && ni > 0 && list[0] == WEIR_HW_ISA_AVX512;
       i++) {
    g_autoptr(WeirGraph) g =
        one_conv(128, 128, blocks[i].h, 3, pad1, blocks[i].y);
    weir_node_set_attr_string(conv_node(g), "impl", "winograd");
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s", err->message);
    if (!strstr(src, blocks[i].mark))
      fail_msg("%s: expected '%s' in the emitted comment", blocks[i].y,
               blocks[i].mark);
  }
  /* a bad block of tiles is an error naming the node */
  g_autoptr(WeirGraph) g = one_conv(8, 8, 8, 3, pad1, "1, 8, 8, 8");
  WeirNode *n = conv_node(g);
  weir_node_set_attr_string(n, "impl", "winograd");
  const char *ps[] = {"tiles=0"};
  weir_node_set_attr_strings(n, "impl_params", ps, 1);
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  assert_null(src);
  assert_non_null(err);
  assert_non_null(strstr(err->message, "'conv'"));
  assert_non_null(strstr(err->message, "tiles"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nodes),
      cmocka_unit_test(test_prepacked),
      cmocka_unit_test(test_choice),
  };
  return cmocka_run_group_tests(tests, shared_setup, shared_teardown);
}
