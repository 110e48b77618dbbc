/* test-kernel-winograd-grad.c — ConvGradInput on Weir's Winograd
 * convolution (implementation "winograd" of ConvGradInput,
 * core/kernels/winograd.c) against the reference interpreter running the
 * pure expansion of ConvGradInput.
 *
 * One program holds independent ConvGradInput nodes: odd map sizes,
 * padding 0, 1, 2 and asymmetric, batch 2 and 3, channel counts that are
 * not multiples of the vector width, more output channels than one k block
 * of the GEMM, several blocks of tiles (impl_params "tiles").  It is
 * compiled for every ISA the CPU has ($WEIR_ISA lowers it) and run at 1
 * and 2 threads, every element of dX first set to garbage.  Also: what the
 * implementation refuses (an explicit choice that does not apply is an
 * error naming the node) and the default choice by shape (the forward
 * convolution's rule).
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

/* as in test-kernel-winograd.c: relative to each element plus an absolute
 * part scaled by the node's largest output */
#define RTOL 1e-4
#define ATOL 2e-4
#define ATOL_SCALE 3e-5

typedef struct {
  const char *dy, *w, *dx; /* dY [n, m, oh, ow], W [m, c, 3, 3], dX */
  gint64 pads[4];          /* top, left, bottom, right */
  gint64 tiles;            /* impl_params tiles, 0: the default */
} Case;

static const Case cases[] = {
    {"1, 7, 9, 11", "7, 5, 3, 3", "1, 5, 9, 11", {1, 1, 1, 1}},
    {"2, 4, 6, 6", "4, 5, 3, 3", "2, 5, 8, 8", {0, 0, 0, 0}},
    {"1, 19, 15, 12", "19, 17, 3, 3", "1, 17, 13, 10", {2, 2, 2, 2}},
    {"1, 12, 9, 9", "12, 8, 3, 3", "1, 8, 10, 9", {0, 2, 1, 0}},
    {"3, 33, 7, 7", "33, 20, 3, 3", "3, 20, 7, 7", {1, 1, 1, 1}},
    {"1, 40, 30, 30", "40, 70, 3, 3", "1, 70, 30, 30", {1, 1, 1, 1}, 48},
    /* more dY channels than one k block, several blocks of tiles */
    {"2, 270, 13, 11", "270, 37, 3, 3", "2, 37, 13, 11", {1, 1, 1, 1}, 48},
    {"2, 16, 21, 19", "16, 16, 3, 3", "2, 16, 21, 19", {1, 1, 1, 1}},
    {"2, 9, 14, 14", "9, 6, 3, 3", "2, 6, 16, 16", {0, 0, 0, 0}},
    /* enough tiles (364: at 2 threads at least four blocks of 48 each)
     * that each thread takes its own run of panels */
    {"2, 24, 54, 50", "24, 20, 3, 3", "2, 20, 54, 50", {1, 1, 1, 1}, 48},
};

static void attrs(WeirNode *n, const gint64 *pads) {
  gint64 k[2] = {3, 3}, one[2] = {1, 1};
  weir_node_set_attr_ints(n, "kernel_shape", k, 2);
  weir_node_set_attr_ints(n, "strides", one, 2);
  weir_node_set_attr_ints(n, "dilations", one, 2);
  weir_node_set_attr_ints(n, "pads", pads, 4);
}

static WeirNode *add_grad(WeirGraph *g, WeirState *s, const char *label,
                          guint k, const char *dy, const char *w,
                          const char *dx, const gint64 *pads) {
  g_autoptr(GError) err = NULL;
  const char *ins[] = {"in0", "in1", "in2", NULL};
  const char *outs[] = {"out0", NULL};
  WeirNode *lib =
      weir_state_add_library(g, s, label, "ConvGradInput", ins, outs);
  g_autofree char *dyn = g_strdup_printf("DY%u", k);
  g_autofree char *wn = g_strdup_printf("W%u", k);
  g_autofree char *xn = g_strdup_printf("X%u", k);
  g_autofree char *yn = g_strdup_printf("Y%u", k);
  add_port(g, s, lib, dyn, WEIR_DTYPE_F32, dy, "in0", TRUE);
  add_port(g, s, lib, wn, WEIR_DTYPE_F32, w, "in1", TRUE);
  add_port(g, s, lib, xn, WEIR_DTYPE_F32, dx, "in2", TRUE);
  add_port(g, s, lib, yn, WEIR_DTYPE_F32, dx, "out0", FALSE);
  attrs(lib, pads);
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", label, err->message);
  return lib;
}

static WeirGraph *program(const char *name) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new(name);
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    const Case *c = &cases[k];
    g_autofree char *label = g_strdup_printf("n%u", k);
    WeirNode *lib = add_grad(g, s, label, k, c->dy, c->w, c->dx, c->pads);
    weir_node_set_attr_string(lib, "impl", "winograd");
    if (c->tiles) {
      g_autofree char *pt =
          g_strdup_printf("tiles=%" G_GINT64_FORMAT, c->tiles);
      const char *ps[] = {pt};
      weir_node_set_attr_strings(lib, "impl_params", ps, 1);
    }
  }
  if (!weir_graph_validate(g, &err))
    fail_msg("%s: %s", name, err->message);
  return g;
}

static void test_nodes(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = program("winograd_grad");
  g_autoptr(GHashTable) args = random_args(g, 11);
  g_autoptr(GHashTable) ref = pure_reference(g, args);
  Fixture *f = fixture_new_shared();
  f->opts.flags = FLAGS;
  WeirHwIsa list[3];
  guint ni = isas(list);
  for (guint i = 0; i < ni; i++) {
    g_setenv("WEIR_ISA", weir_hw_isa_name(list[i]), TRUE);
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s: %s", weir_hw_isa_name(list[i]), err->message);
    assert_non_null(strstr(src, "weir_wino_grad_input_f32("));
    for (guint n = 0; n < G_N_ELEMENTS(cases); n++) {
      check_mark(src, "winograd_grad", n,
                 "winograd F(4x4, 3x3) of dY with the flipped filter", "");
      if (cases[n].tiles)
        check_mark(src, "winograd_grad", n, ", 48 tiles a block", "");
    }
    g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
    if (!k)
      fail_msg("%s: %s", weir_hw_isa_name(list[i]), err->message);
    for (int threads = 1; threads <= 2; threads++) {
      assert_true(weir_kernel_set_threads(k, threads, &err));
      g_autoptr(GHashTable) got = copy_args(args);
      for (guint n = 0; n < G_N_ELEMENTS(cases); n++) {
        g_autofree char *yn = g_strdup_printf("Y%u", n);
        WeirTensor *y = g_hash_table_lookup(got, yn);
        for (gint64 e = 0; e < y->count; e++)
          weir_tensor_set(y, e, 12345.0); /* every element must be written */
      }
      /* twice: the scratch (flipped filter, U) is reused */
      for (int rep = 0; rep < 2; rep++)
        if (!weir_kernel_run(k, NULL, got, &err))
          fail_msg("%s: %s", weir_hw_isa_name(list[i]), err->message);
      for (guint n = 0; n < G_N_ELEMENTS(cases); n++) {
        g_autofree char *yn = g_strdup_printf("Y%u", n);
        const WeirTensor *want = g_hash_table_lookup(ref, yn);
        double big = 0;
        for (gint64 e = 0; e < want->count; e++)
          big = MAX(big, fabs(weir_tensor_get(want, e)));
        if (!weir_tensor_allclose(g_hash_table_lookup(got, yn), want, RTOL,
                                  MAX(ATOL, ATOL_SCALE * big), NULL, &err))
          fail_msg("%s node n%u (%d threads): %s", weir_hw_isa_name(list[i]), n,
                   threads, err->message);
      }
    }
  }
  g_unsetenv("WEIR_ISA");
  fixture_free(f);
}

/* One ConvGradInput of dY [1, m, oh, oh], W [m, c, k, k] into dX
 * [1, c, h, h] with stride st and padding p on every side. */
static WeirGraph *one_grad_n(gint64 nb, gint64 c, gint64 m, gint64 h, gint64 k,
                             gint64 st, gint64 p, gint64 group) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new("one");
  WeirState *s = weir_graph_add_state(g, "main");
  gint64 oh = (h + 2 * p - k) / st + 1;
  g_autofree char *dy =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                      nb, m, oh, oh);
  g_autofree char *w =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                      m, c / group, k, k);
  g_autofree char *dx =
      g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                      nb, c, h, h);
  gint64 pads[4] = {p, p, p, p};
  WeirNode *n = add_grad(g, s, "cgi", 0, dy, w, dx, pads);
  gint64 ks[2] = {k, k}, sts[2] = {st, st};
  weir_node_set_attr_ints(n, "kernel_shape", ks, 2);
  weir_node_set_attr_ints(n, "strides", sts, 2);
  if (group > 1)
    weir_node_set_attr_int(n, "group", group);
  if (!weir_op_check_attrs(n, &err) || !weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  return g;
}

static WeirGraph *one_grad(gint64 c, gint64 m, gint64 h, gint64 k, gint64 st,
                           gint64 p, gint64 group) {
  return one_grad_n(1, c, m, h, k, st, p, group);
}

static WeirNode *grad_node(WeirGraph *g) {
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
  /* refused: stride 2, a 5x5 kernel, two groups, padding 3, fewer than 4
   * input channels; an explicit choice is then an error naming the node */
  struct {
    gint64 c, m, h, k, st, p, group;
    const char *why;
  } refused[] = {
      {8, 8, 8, 3, 2, 1, 1, "stride 1"},
      {8, 8, 8, 5, 1, 1, 1, "3x3"},
      {8, 8, 8, 3, 1, 1, 2, "one group"},
      {8, 8, 8, 3, 1, 3, 1, "paddings of 0 to 2"},
      {3, 8, 8, 3, 1, 1, 1, "at least 4 input channels"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(refused); i++) {
    g_autoptr(WeirGraph) g =
        one_grad(refused[i].c, refused[i].m, refused[i].h, refused[i].k,
                 refused[i].st, refused[i].p, refused[i].group);
    WeirNode *n = grad_node(g);
    WeirState *st = g_ptr_array_index(g->states, 0);
    assert_string_not_equal(weir_native_default_impl(g, st, n), "winograd");
    weir_node_set_attr_string(n, "impl", "winograd");
    const WeirNativeImpl *ni = NULL;
    assert_false(weir_native_choice(g, st, n, &ni, &err));
    assert_non_null(err);
    if (!strstr(err->message, "cgi") || !strstr(err->message, refused[i].why))
      fail_msg("unexpected error: %s", err->message);
    g_clear_error(&err);
  }
  /* the default by shape, the forward rule: 64 channels on 56x56 and 128
   * on 28x28 maps take it; 512 on 7x7 at batch 1, 16 channels, and 256
   * on 8x8 at batch 32 (128 tiles: the forward rule takes those only
   * with a filter transformed once at load, and the flipped filter is
   * transformed in every call) do not */
  struct {
    gint64 n, c, m, h;
    gboolean want;
  } dflt[] = {
      {1, 64, 64, 56, TRUE},  {1, 128, 128, 28, TRUE},  {1, 512, 512, 7, FALSE},
      {1, 16, 16, 56, FALSE}, {32, 256, 256, 8, FALSE}, {32, 16, 16, 8, FALSE},
  };
  for (guint i = 0; i < G_N_ELEMENTS(dflt); i++) {
    g_autoptr(WeirGraph) g =
        one_grad_n(dflt[i].n, dflt[i].c, dflt[i].m, dflt[i].h, 3, 1, 1, 1);
    WeirNode *n = grad_node(g);
    WeirState *st = g_ptr_array_index(g->states, 0);
    assert_string_equal(weir_native_default_impl(g, st, n),
                        dflt[i].want ? "winograd" : "weir");
  }
  /* a bad block of tiles is an error naming the node */
  g_autoptr(WeirGraph) g = one_grad(8, 8, 8, 3, 1, 1, 1);
  WeirNode *n = grad_node(g);
  weir_node_set_attr_string(n, "impl", "winograd");
  const char *ps[] = {"tiles=0"};
  weir_node_set_attr_strings(n, "impl_params", ps, 1);
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  assert_null(src);
  assert_non_null(err);
  assert_non_null(strstr(err->message, "'cgi'"));
  assert_non_null(strstr(err->message, "tiles"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nodes),
      cmocka_unit_test(test_choice),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
