/* test-kernel-stem.c — the native implementation "stem" of Conv (Weir's
 * direct convolution for few input channels, core/kernels/stem.c) against
 * the reference interpreter running the pure expansion of the same
 * program.
 *
 * One program holds many independent Conv nodes (one per case, with their
 * own containers), all set to "stem", so one compile covers them:
 * MobileNetV2's stem shape (3 -> 32, 3x3, stride 2, pad 1) shrunk, odd
 * output channel counts (blocks of 8 and single channels), output rows
 * that are not multiples of any vector (one, two and three vectors and a
 * partial one), stride 1, 3 and unequal strides, asymmetric padding,
 * padding beyond the kernel's reach, dilation, a 5x5 and a 1x1 kernel,
 * ResNet's 7x7 stride-2 stem shrunk (rows of 2, 5, 6 and 7 vectors,
 * odd sizes, asymmetric padding), 160 taps (the most accepted),
 * batch 1 to 3, with and without bias; epilogues (ReLU6, ReLU, sigmoid,
 * SiLU, HardSwish, a residual) in the store and one left as a map.  The
 * program is generated once per ISA the CPU has ($WEIR_ISA lowers it),
 * must call the kernel, and must match the interpreter within 1e-4 at 1,
 * 2 and 3 OpenMP threads; every output element is pre-set to a sentinel,
 * so an element the kernel skips fails.  Also: the default choice (stride
 * 2 and few taps only) and the refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "runtime-fixture.h"
#include "weir-attr.h"
#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-hw.h"
#include "weir-interp.h"
#include "weir-kernels.h"
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-tensor-io.h"
#include "weir-validate.h"

#include "kernel-check.h"

#define FLAGS "-O2 -fopenmp -fPIC -shared"

/* One Conv: X [n, c, h, w], W [m, c, kh, kw], strides, pads (top, left,
 * bottom, right), dilations, bias or not; an epilogue as in
 * test-kernel-depthwise (tasklet code over x and r writing y; `mark` what
 * the call's comment must say, "" when it stays a map). */
typedef struct {
  gint64 n, c, m, h, w, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  gboolean bias;
  const char *epi;
  gboolean residual;
  const char *mark;
} Case;

static const Case cases[] = {
    /* MobileNetV2's stem, 30 x 30 in: 15 columns (one partial vector) */
    {1, 3, 32, 30, 30, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE},
    /* 13 output channels (a block of 8, five single ones), batch 2,
     * 21 columns, no bias */
    {2, 3, 13, 37, 41, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, FALSE},
    /* stride 1, 50 columns (two vectors, one, a partial one at 16
     * lanes) */
    {1, 2, 9, 11, 50, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE},
    /* stride 3 without padding (the scalar phase split) */
    {1, 1, 8, 20, 23, 3, 3, 3, 3, 0, 0, 0, 0, 1, 1, TRUE},
    /* asymmetric padding and dilation 2 */
    {1, 3, 10, 17, 19, 3, 3, 2, 2, 2, 1, 0, 2, 2, 2, TRUE},
    /* a 5x5 kernel on two channels (50 taps) */
    {1, 2, 16, 23, 29, 5, 5, 2, 2, 2, 2, 2, 2, 1, 1, TRUE},
    /* a 1x1 kernel at stride 2 on four channels */
    {1, 4, 8, 9, 9, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, TRUE},
    /* padding beyond the kernel's reach: whole rows and columns of
     * zeros */
    {1, 3, 8, 6, 7, 3, 3, 2, 2, 3, 3, 3, 3, 1, 1, TRUE},
    /* a wide row: 300 columns; 3 images */
    {3, 3, 16, 4, 600, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE},
    /* unequal strides */
    {1, 3, 9, 14, 18, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, TRUE},
    /* one output column, one output row */
    {1, 3, 8, 3, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE},
    /* ResNet's stem (3 -> 64, 7x7, stride 2, pad 3: 147 taps), 21 rows
     * of its 224 columns (112 out: blocks of 3, 2 and 2 vectors at 16
     * lanes) */
    {1, 3, 16, 21, 224, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, TRUE},
    /* 7x7 at stride 2, batch 2, 13 channels, asymmetric padding, odd
     * sizes (18 columns out), no bias */
    {2, 3, 13, 19, 37, 7, 7, 2, 2, 3, 2, 1, 3, 1, 1, FALSE},
    /* 7x7 at stride 2: 85 and 75 columns out (6 and 5 vectors at 16
     * lanes), padding beyond the bottom edge */
    {1, 3, 9, 15, 170, 7, 7, 2, 2, 3, 3, 5, 3, 1, 1, TRUE},
    {1, 3, 8, 9, 150, 7, 7, 2, 2, 0, 3, 3, 3, 1, 1, TRUE},
    /* the most taps accepted: 160 (10 channels, 4x4) */
    {1, 10, 8, 12, 40, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, TRUE},
};

/* Epilogues applied in the store (and one the kernel leaves as a map). */
static const Case epilogues[] = {
    {1, 3, 32, 34, 34, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE,
     "y = min(max(x, 0.0), 6.0)", FALSE,
     "stem (direct, few input channels) + "
     "clip"},
    {2, 3, 12, 19, 27, 3, 3, 2, 2, 0, 1, 1, 0, 1, 1, TRUE, "y = max(x, 0)",
     FALSE, "+ clip"},
    {1, 3, 9, 22, 22, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, FALSE,
     "y = 1 / (1 + exp(-x))", FALSE, "+ sigmoid"},
    {1, 3, 32, 40, 40, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE,
     "s = 1 / (1 + exp(-x))\ny = x * s", FALSE, "+ SiLU"},
    {1, 3, 10, 26, 26, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE,
     "y = x * max(0, min(1, x / 6 + 0.5))", FALSE, "+ HardSwish"},
    {1, 3, 11, 18, 35, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE,
     "y = min(max(x + r, 0.0), 6.0)", TRUE, "+ residual + clip"},
    {2, 2, 9, 12, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, FALSE, "y = r + x", TRUE,
     "+ residual */"},
    /* ResNet's stem and its ReLU, shrunk (51 columns: a block of 2
     * vectors stored by the summing function, one of 2 partial); ReLU6 on
     * 65 columns (3 vectors stored by the summing function, then 2) */
    {1, 3, 16, 23, 101, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, TRUE, "y = max(x, 0)",
     FALSE, "+ clip"},
    {1, 3, 9, 10, 130, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE,
     "y = min(max(x, 0.0), 6.0)", FALSE, "+ clip"},
    /* not an activation the kernel knows: a map after the call */
    {1, 3, 8, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE, "y = x * x - 1.5",
     FALSE, ""},
};

static gint64 out_size(gint64 in, gint64 k, gint64 s, gint64 p0, gint64 p1,
                       gint64 d) {
  return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

static char *shape4(gint64 a, gint64 b, gint64 c, gint64 d) {
  return g_strdup_printf("%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                         ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT,
                         a, b, c, d);
}

static WeirNode *add_case(WeirGraph *g, WeirState *s, guint k, const Case *c) {
  g_autoptr(GError) err = NULL;
  const char *ins[] = {"in0", "in1", NULL, NULL, NULL};
  guint ni = 2;
  if (c->bias)
    ins[ni++] = "in2";
  if (c->residual)
    ins[ni++] = "epi0";
  const char *outs[] = {"out0", NULL};
  g_autofree char *label = g_strdup_printf("n%u", k);
  WeirNode *lib = weir_state_add_library(g, s, label, "Conv", ins, outs);
  gint64 oh = out_size(c->h, c->kh, c->sh, c->pt, c->pb, c->dh);
  gint64 ow = out_size(c->w, c->kw, c->sw, c->pl, c->pr, c->dw);
  g_autofree char *xs = shape4(c->n, c->c, c->h, c->w);
  g_autofree char *ws = shape4(c->m, c->c, c->kh, c->kw);
  g_autofree char *bs = g_strdup_printf("%" G_GINT64_FORMAT, c->m);
  g_autofree char *ys = shape4(c->n, c->m, oh, ow);
  g_autofree char *xn = g_strdup_printf("X%u", k),
                  *wn = g_strdup_printf("W%u", k),
                  *bn = g_strdup_printf("B%u", k),
                  *yn = g_strdup_printf("Y%u", k);
  add_port(g, s, lib, xn, WEIR_DTYPE_F32, xs, "in0", TRUE);
  add_port(g, s, lib, wn, WEIR_DTYPE_F32, ws, "in1", TRUE);
  if (c->bias)
    add_port(g, s, lib, bn, WEIR_DTYPE_F32, bs, "in2", TRUE);
  add_port(g, s, lib, yn, WEIR_DTYPE_F32, ys, "out0", FALSE);
  if (c->residual) {
    g_autofree char *rn = g_strdup_printf("R%u", k);
    add_port(g, s, lib, rn, WEIR_DTYPE_F32, ys, "epi0", TRUE);
  }
  weir_node_set_attr_int(lib, "group", 1);
  gint64 st[2] = {c->sh, c->sw}, di[2] = {c->dh, c->dw},
         pads[4] = {c->pt, c->pl, c->pb, c->pr}, ks[2] = {c->kh, c->kw};
  weir_node_set_attr_ints(lib, "strides", st, 2);
  weir_node_set_attr_ints(lib, "dilations", di, 2);
  weir_node_set_attr_ints(lib, "pads", pads, 4);
  weir_node_set_attr_ints(lib, "kernel_shape", ks, 2);
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", label, err->message);
  if (c->epi) {
    const char *conns[] = {"y", "x", "r"};
    weir_node_set_attr_string(lib, WEIR_EPILOGUE_CODE, c->epi);
    weir_node_set_attr_strings(lib, WEIR_EPILOGUE_CONNS, conns,
                               c->residual ? 3 : 2);
  }
  return lib;
}

/* Compiles g (every Conv on "stem") for every ISA and compares every Y<k>
 * with the interpreter on the pure expansion, at 1, 2 and 3 threads. */
static void check_program(WeirGraph *g, const Case *cs, guint nodes) {
  g_autoptr(GError) err = NULL;
  g_autoptr(GHashTable) args = random_args(g, 11);
  g_autoptr(GHashTable) ref = copy_args(args);
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("%s: pure expansion: %s", g->name, err->message);
  if (!weir_interpret(pure, NULL, ref, NULL, &err))
    fail_msg("%s: interpreter: %s", g->name, err->message);
  guint count = 0;
  if (!weir_native_set_impl(g, "Conv", "stem", &count, &err))
    fail_msg("%s: %s", g->name, err->message);
  assert_int_equal(count, nodes);
  Fixture *f = fixture_new_shared();
  f->opts.flags = FLAGS;
  WeirHwIsa list[3];
  guint ni = isas(list);
  for (guint i = 0; i < ni; i++) {
    g_setenv("WEIR_ISA", weir_hw_isa_name(list[i]), TRUE);
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s: %s", g->name, err->message);
    if (!strstr(src, "status |= weir_stem_f32(X0, ") ||
        !strstr(src, "weir_stem_row16") == (list[i] == WEIR_HW_ISA_AVX512))
      fail_msg("%s: the stem kernel for %s is not called", g->name,
               weir_hw_isa_name(list[i]));
    for (guint n = 0; n < nodes; n++)
      if (cs[n].epi)
        check_mark(src, g->name, n, cs[n].mark, "channels) +");
    g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
    if (!k)
      fail_msg("%s (%s): %s", g->name, weir_hw_isa_name(list[i]), err->message);
    check_runs(k, args, ref, nodes, g->name, weir_hw_isa_name(list[i]));
  }
  g_unsetenv("WEIR_ISA");
  fixture_free(f);
}

static void test_stem(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_graph_new("stem");
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++)
    add_case(g, s, k, &cases[k]);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  check_program(g, cases, G_N_ELEMENTS(cases));
}

static void test_epilogues(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_graph_new("epilogues");
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < G_N_ELEMENTS(epilogues); k++)
    add_case(g, s, k, &epilogues[k]);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  check_program(g, epilogues, G_N_ELEMENTS(epilogues));
}

/* The default: MobileNetV2's and ResNet's stems (27 and 147 taps) take
 * it; stride 1, 16 input channels, 4 output channels and a 7x7 kernel on
 * 4 channels (196 taps, not accepted) do not. */
static void test_choice(void **state) {
  (void)state;
  static const struct {
    Case c;
    const char *impl;
  } want[] = {
      {{1, 3, 32, 224, 224, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE}, "stem"},
      {{1, 3, 32, 224, 224, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, TRUE}, NULL},
      {{1, 3, 64, 224, 224, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, TRUE}, "stem"},
      {{1, 4, 64, 224, 224, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, TRUE}, NULL},
      {{1, 16, 32, 56, 56, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE}, NULL},
      {{1, 3, 4, 32, 32, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, TRUE}, NULL},
  };
  const WeirNativeImpl *ni = weir_native_lookup("Conv", "stem");
  assert_non_null(ni);
  for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
    g_autoptr(WeirGraph) g = weir_graph_new("choice");
    WeirState *s = weir_graph_add_state(g, "main");
    WeirNode *n = add_case(g, s, 0, &want[i].c);
    const char *impl = weir_native_default_impl(g, s, n);
    if (want[i].impl)
      assert_string_equal(impl, want[i].impl);
    else
      assert_string_not_equal(impl, "stem");
    /* accepted up to 160 taps */
    g_autofree char *why = NULL;
    gboolean ok = ni->accepts(g, s, n, &why);
    gint64 taps = want[i].c.c * want[i].c.kh * want[i].c.kw;
    assert_int_equal(ok, taps <= 160);
    if (!ok)
      assert_non_null(strstr(why, "taps"));
  }
}

/* What the kernel does not take: f64, two groups. */
static void test_refusals(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  for (guint t = 0; t < 2; t++) {
    gboolean f64 = t == 0;
    g_autoptr(WeirGraph) g = weir_graph_new("refuse");
    WeirState *s = weir_graph_add_state(g, "main");
    const char *ins[] = {"in0", "in1", NULL};
    const char *outs[] = {"out0", NULL};
    WeirNode *lib = weir_state_add_library(g, s, "c", "Conv", ins, outs);
    WeirDType dt = f64 ? WEIR_DTYPE_F64 : WEIR_DTYPE_F32;
    const char *names[] = {"X", "W", "Y"};
    const char *shapes[] = {"1, 4, 6, 6", f64 ? "4, 4, 3, 3" : "4, 2, 3, 3",
                            "1, 4, 4, 4"};
    const char *conns[] = {"in0", "in1", "out0"};
    for (guint i = 0; i < 3; i++) {
      WeirContainer *c =
          weir_graph_add_array(g, names[i], dt, shapes[i], FALSE, &err);
      assert_non_null(c);
      g_autoptr(WeirSubset) full = weir_container_full_subset(c);
      g_autofree char *sub = weir_subset_to_string(full);
      WeirNode *a = weir_state_add_access(g, s, names[i]);
      if (i < 2)
        assert_true(weir_state_add_memlet(g, s, a->id, NULL, lib->id, conns[i],
                                          names[i], sub, &err));
      else
        assert_true(weir_state_add_memlet(g, s, lib->id, conns[i], a->id, NULL,
                                          names[i], sub, &err));
    }
    weir_node_set_attr_int(lib, "group", f64 ? 1 : 2);
    const WeirNativeImpl *ni = weir_native_lookup("Conv", "stem");
    assert_non_null(ni);
    g_autofree char *why = NULL;
    assert_false(ni->accepts(g, s, lib, &why));
    assert_non_null(why);
    assert_non_null(strstr(why, f64 ? "f32" : "one group"));
    /* an explicit choice that does not apply is an error naming it */
    guint count = 0;
    assert_true(weir_native_set_impl(g, "Conv", "stem", &count, &err));
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    assert_null(src);
    assert_non_null(err);
    assert_non_null(strstr(err->message, "stem"));
    g_clear_error(&err);
  }
}

/* The text follows the ISA: the vector width and the block of columns
 * (3 vectors on AVX-512, 1 elsewhere). */
static void test_text(void **state) {
  (void)state;
  static const struct {
    WeirHwIsa isa;
    guint vl;
    const char *nb;
  } want[] = {{WEIR_HW_ISA_AVX512, 16, "acc[WEIR_STEM_MB][3]"},
              {WEIR_HW_ISA_AVX2, 8, "acc[WEIR_STEM_MB][1]"},
              {WEIR_HW_ISA_GENERIC, 4, "acc[WEIR_STEM_MB][1]"}};
  for (guint i = 0; i < G_N_ELEMENTS(want); i++) {
    g_autofree char *text = weir_kernel_stem_text(want[i].isa, want[i].vl);
    g_autofree char *fn = g_strdup_printf("weir_stem_row%u(", want[i].vl);
    assert_non_null(strstr(text, fn));
    assert_non_null(strstr(text, want[i].nb));
    assert_null(strstr(text, "@"));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text),      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_choice),    cmocka_unit_test(test_stem),
      cmocka_unit_test(test_epilogues),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
