/* test-kernel-bgemm.c — the native implementation "weir-bf16" of MatMul,
 * Gemm and Conv (Weir's bf16 GEMM, core/kernels/gemm-bf16.c) against the
 * reference interpreter.
 *
 * The reference is the interpreter running the pure expansion of the same
 * program in f32 on the same values (every bf16 value is an f32 value):
 * bf16 inputs, f32 accumulation.  The kernel's sum is in another order and
 * its result is rounded to bf16 once, so each element must be within half
 * a bf16 step (at most 2^-8 of the value: 8 significant bits) of the
 * reference plus a bound of the f32
 * rounding of a depth-k sum of terms of magnitude at most 1 (2^-18 times
 * the sum's largest magnitude).  A wrong pair, a missed tail or a wrong
 * stride is off by about one product, some tenths for these operands.
 *
 * One program holds a node per case: sizes that are not multiples of the
 * microtile and odd depths (the last pair half zero), a batched MatMul, Gemm
 * with transA / transB, alpha, beta and C of every broadcast shape, Conv
 * with padding, strides, dilation, a bias, batch 2 and a 1x1 kernel; with
 * $WEIR_HW_CACHES giving a 16 KiB L2 the largest product spans several B
 * blocks.  The default implementation of every node must be "weir-bf16",
 * the generated code must call the kernel on the path the ISA gives
 * (AVX-512 BF16 where the CPU has it, portable C: every one this CPU runs,
 * through $WEIR_ISA), and the outputs must agree at 1 and 2 threads.
 */
#include <math.h>
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
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-tensor-io.h"
#include "weir-validate.h"

#include "kernel-check.h"

#define FLAGS "-O2 -fopenmp -fPIC -shared"

/* Gemm's C: none, [N], [M, 1], [1, N], [M, N], a scalar */
enum { C_NONE, C_ROW, C_COL, C_ROW2, C_FULL, C_SCALAR };

typedef struct {
  const char *op;
  /* matmul / gemm: batch (0: rank 2), m, k, n; gemm: transA, transB,
   * alpha, beta, C */
  gint64 batch, m, k, n;
  int ta, tb;
  double alpha, beta;
  int c;
  /* conv: n, c, h, w, m, kh, kw, strides, pads (top, left, bottom,
   * right), dilations, bias */
  gint64 cn, cc, ch, cw, cm, kh, kw, sh, sw, pt, pl, pb, pr, dh, dw;
  gboolean bias;
} Case;

static const Case cases[] = {
    {.op = "MatMul", .m = 37, .k = 29, .n = 53},
    {.op = "MatMul", .batch = 2, .m = 7, .k = 19, .n = 45},
    {.op = "MatMul", .m = 1, .k = 5, .n = 3},
    {.op = "MatMul", .m = 1, .k = 1, .n = 1},
    /* larger than one B block with a 16 KiB L2 */
    {.op = "MatMul", .m = 75, .k = 131, .n = 230},
    {.op = "Gemm",
     .m = 13,
     .k = 33,
     .n = 40,
     .alpha = 1,
     .beta = 1,
     .c = C_ROW},
    {.op = "Gemm",
     .m = 17,
     .k = 8,
     .n = 9,
     .ta = 1,
     .alpha = 0.5,
     .beta = 2,
     .c = C_COL},
    {.op = "Gemm",
     .m = 9,
     .k = 21,
     .n = 35,
     .tb = 1,
     .alpha = 1,
     .beta = 1,
     .c = C_FULL},
    {.op = "Gemm",
     .m = 20,
     .k = 3,
     .n = 6,
     .ta = 1,
     .tb = 1,
     .alpha = -1.5,
     .beta = 0.25,
     .c = C_ROW2},
    {.op = "Gemm",
     .m = 5,
     .k = 64,
     .n = 33,
     .alpha = 1,
     .beta = 1,
     .c = C_SCALAR},
    {.op = "Gemm", .m = 8, .k = 7, .n = 32, .alpha = 2, .beta = 1, .c = C_NONE},
    {.op = "Conv",
     .cn = 2,
     .cc = 3,
     .ch = 9,
     .cw = 11,
     .cm = 5,
     .kh = 3,
     .kw = 3,
     .sh = 1,
     .sw = 1,
     .pt = 1,
     .pl = 1,
     .pb = 1,
     .pr = 1,
     .dh = 1,
     .dw = 1,
     .bias = TRUE},
    {.op = "Conv",
     .cn = 1,
     .cc = 3,
     .ch = 12,
     .cw = 12,
     .cm = 7,
     .kh = 3,
     .kw = 3,
     .sh = 2,
     .sw = 1,
     .pt = 2,
     .pl = 0,
     .pb = 1,
     .pr = 2,
     .dh = 2,
     .dw = 2},
    {.op = "Conv",
     .cn = 1,
     .cc = 16,
     .ch = 6,
     .cw = 5,
     .cm = 33,
     .kh = 1,
     .kw = 1,
     .sh = 1,
     .sw = 1,
     .dh = 1,
     .dw = 1,
     .bias = TRUE},
};

static char *shape_text(guint rank, const gint64 *d) {
  if (rank == 0)
    return g_strdup("1");
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < rank; i++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? ", " : "", d[i]);
  return g_string_free(s, FALSE);
}

static void add_in(WeirGraph *g, WeirState *s, WeirNode *lib, guint k,
                   const char *name, WeirDType t, guint rank, const gint64 *d,
                   guint conn) {
  g_autofree char *nm = g_strdup_printf("%s%u", name, k);
  g_autofree char *sh = shape_text(rank, d);
  g_autofree char *cn = g_strdup_printf("in%u", conn);
  add_port(g, s, lib, nm, t, sh, cn, TRUE);
}

static gint64 out_size(gint64 in, gint64 k, gint64 st, gint64 p0, gint64 p1,
                       gint64 d) {
  return (in + p0 + p1 - d * (k - 1) - 1) / st + 1;
}

/* Case k as a node of g with operands of type t. */
static WeirNode *add_case(WeirGraph *g, WeirState *s, guint k, const Case *c,
                          WeirDType t) {
  g_autoptr(GError) err = NULL;
  gboolean conv = strcmp(c->op, "Conv") == 0, gemm = strcmp(c->op, "Gemm") == 0;
  gboolean third = (conv && c->bias) || (gemm && c->c != C_NONE);
  const char *ins[] = {"in0", "in1", third ? "in2" : NULL, NULL};
  const char *outs[] = {"out0", NULL};
  g_autofree char *label = g_strdup_printf("n%u", k);
  WeirNode *lib = weir_state_add_library(g, s, label, c->op, ins, outs);
  gint64 ad[4], bd[4], yd[4], cd[2];
  guint ar, br, yr, cr = 0;
  if (conv) {
    ar = br = yr = 4;
    gint64 oh = out_size(c->ch, c->kh, c->sh, c->pt, c->pb, c->dh);
    gint64 ow = out_size(c->cw, c->kw, c->sw, c->pl, c->pr, c->dw);
    gint64 x[4] = {c->cn, c->cc, c->ch, c->cw},
           w[4] = {c->cm, c->cc, c->kh, c->kw}, y[4] = {c->cn, c->cm, oh, ow};
    memcpy(ad, x, sizeof x);
    memcpy(bd, w, sizeof w);
    memcpy(yd, y, sizeof y);
    cr = 1;
    cd[0] = c->cm;
    gint64 st[2] = {c->sh, c->sw}, di[2] = {c->dh, c->dw},
           pads[4] = {c->pt, c->pl, c->pb, c->pr}, ks[2] = {c->kh, c->kw};
    weir_node_set_attr_ints(lib, "strides", st, 2);
    weir_node_set_attr_ints(lib, "dilations", di, 2);
    weir_node_set_attr_ints(lib, "pads", pads, 4);
    weir_node_set_attr_ints(lib, "kernel_shape", ks, 2);
  } else if (gemm) {
    ar = br = yr = 2;
    ad[0] = c->ta ? c->k : c->m;
    ad[1] = c->ta ? c->m : c->k;
    bd[0] = c->tb ? c->n : c->k;
    bd[1] = c->tb ? c->k : c->n;
    yd[0] = c->m;
    yd[1] = c->n;
    if (c->ta)
      weir_node_set_attr_int(lib, "transA", 1);
    if (c->tb)
      weir_node_set_attr_int(lib, "transB", 1);
    weir_node_set_attr_float(lib, "alpha", c->alpha);
    weir_node_set_attr_float(lib, "beta", c->beta);
    switch (c->c) {
    case C_ROW:
      cr = 1;
      cd[0] = c->n;
      break;
    case C_COL:
      cr = 2;
      cd[0] = c->m;
      cd[1] = 1;
      break;
    case C_ROW2:
      cr = 2;
      cd[0] = 1;
      cd[1] = c->n;
      break;
    case C_FULL:
      cr = 2;
      cd[0] = c->m;
      cd[1] = c->n;
      break;
    default:
      cr = 0;
    }
  } else {
    ar = yr = c->batch ? 3 : 2;
    br = 2;
    guint o = c->batch ? 1 : 0;
    ad[0] = yd[0] = c->batch;
    ad[o] = yd[o] = c->m;
    ad[o + 1] = c->k;
    yd[o + 1] = c->n;
    bd[0] = c->k;
    bd[1] = c->n;
  }
  add_in(g, s, lib, k, "A", t, ar, ad, 0);
  add_in(g, s, lib, k, "B", t, br, bd, 1);
  if (third)
    add_in(g, s, lib, k, "C", t, cr, cd, 2);
  g_autofree char *yn = g_strdup_printf("Y%u", k);
  g_autofree char *ys = shape_text(yr, yd);
  add_port(g, s, lib, yn, t, ys, "out0", FALSE);
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", label, err->message);
  return lib;
}

static WeirGraph *program(WeirDType t) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new(t == WEIR_DTYPE_BF16 ? "bgemm" : "bgemm_ref");
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++)
    add_case(g, s, k, &cases[k], t);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  return g;
}

/* The depth of case c's sums. */
static gint64 depth(const Case *c) {
  return strcmp(c->op, "Conv") == 0 ? c->cc * c->kh * c->kw : c->k;
}

/* The f32 copy of every tensor of args. (transfer full) */
static GHashTable *as_f32(GHashTable *args) {
  GHashTable *out = tensors_new();
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, args);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    const WeirTensor *t = v;
    WeirTensor *f = weir_tensor_new(WEIR_DTYPE_F32, t->rank, t->shape);
    for (gint64 e = 0; e < t->count; e++)
      weir_tensor_set(f, e, weir_tensor_get(t, e));
    g_hash_table_insert(out, g_strdup(k), f);
  }
  return out;
}

static void run_program(WeirGraph *g, const char *path, GHashTable *args,
                        GHashTable *ref) {
  g_autoptr(GError) err = NULL;
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  if (!src)
    fail_msg("%s", err->message);
  g_autofree char *mark = g_strdup_printf("weir-bf16 (bf16 GEMM, %s)", path);
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++)
    check_mark(src, path, k, mark, "");
  Fixture *f = fixture_new();
  f->opts.flags = FLAGS;
  g_autoptr(WeirKernel) kern = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!kern)
    fail_msg("%s", err->message);
  for (int threads = 1; threads <= 2; threads++) {
    assert_true(weir_kernel_set_threads(kern, threads, &err));
    g_autoptr(GHashTable) got = copy_args(args);
    for (guint n = 0; n < G_N_ELEMENTS(cases); n++) {
      g_autofree char *yn = g_strdup_printf("Y%u", n);
      WeirTensor *y = g_hash_table_lookup(got, yn);
      for (gint64 e = 0; e < y->count; e++)
        weir_tensor_set(y, e, 77); /* every element must be written */
    }
    if (!weir_kernel_run(kern, NULL, got, &err))
      fail_msg("%s", err->message);
    for (guint n = 0; n < G_N_ELEMENTS(cases); n++) {
      g_autofree char *yn = g_strdup_printf("Y%u", n);
      const WeirTensor *a = g_hash_table_lookup(got, yn),
                       *b = g_hash_table_lookup(ref, yn);
      assert_int_equal(a->count, b->count);
      const Case *c = &cases[n];
      const double scale =
          strcmp(c->op, "Gemm") == 0
              ? fabs(c->alpha) * (double)depth(c) + fabs(c->beta) + 1
              : (double)depth(c) + 1;
      for (gint64 e = 0; e < a->count; e++) {
        const double x = weir_tensor_get(a, e), r = weir_tensor_get(b, e);
        const double tol = fabs(r) * ldexp(1, -8) + scale * ldexp(1, -18);
        if (!(fabs(x - r) <= tol))
          fail_msg("%s, node n%u (%s, %d threads): element %" G_GINT64_FORMAT
                   " is %.9g, the interpreter (f32) says %.9g",
                   path, n, cases[n].op, threads, e, x, r);
      }
    }
  }
  fixture_free(f);
}

static void test_bgemm(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  /* a 16 KiB L2: B blocks of 32 columns at depth 131 */
  g_setenv("WEIR_HW_CACHES", "32768,16384,1048576", TRUE);
  g_autoptr(WeirGraph) g = program(WEIR_DTYPE_BF16);
  g_autoptr(WeirGraph) gref = program(WEIR_DTYPE_F32);
  WeirState *s = g_ptr_array_index(g->states, 0);
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY)
      assert_string_equal(weir_native_default_impl(g, s, n), "weir-bf16");
  }
  /* bf16 values in [-1, 1); the reference: the same values in f32 */
  g_autoptr(GHashTable) args = random_args(g, 18);
  g_autoptr(GHashTable) ref = as_f32(args);
  if (!weir_expand_all(gref, NULL, NULL, &err))
    fail_msg("pure expansion: %s", err->message);
  if (!weir_interpret(gref, NULL, ref, NULL, &err))
    fail_msg("interpreter: %s", err->message);
  WeirHwIsa list[3];
  guint n_isa = isas(list);
  for (guint i = 0; i < n_isa; i++) {
    g_setenv("WEIR_ISA", weir_hw_isa_name(list[i]), TRUE);
    g_autoptr(WeirHwProfile) hw = weir_hw_detect();
    run_program(g, hw->bf16_dot ? "avx512-bf16" : "portable", args, ref);
  }
  g_unsetenv("WEIR_ISA");
  g_unsetenv("WEIR_HW_CACHES");
}

/* Grouped convolutions, f32 operands and a broadcast batch stay elsewhere. */
static void test_refusals(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("refused");
  WeirState *s = weir_graph_add_state(g, "main");
  Case grouped = cases[11];
  grouped.cc = 4;
  grouped.cm = 4;
  WeirNode *gr = add_case(g, s, 0, &grouped, WEIR_DTYPE_BF16);
  weir_node_set_attr_int(gr, "group", 2);
  WeirNode *f32 = add_case(g, s, 1, &cases[0], WEIR_DTYPE_F32);
  const WeirNativeImpl *ni = weir_native_lookup("Conv", "weir-bf16");
  assert_non_null(ni);
  g_autofree char *reason = NULL;
  assert_false(ni->accepts(g, s, gr, &reason));
  assert_non_null(strstr(reason, "grouped"));
  assert_string_not_equal(weir_native_default_impl(g, s, gr), "weir-bf16");
  ni = weir_native_lookup("MatMul", "weir-bf16");
  g_clear_pointer(&reason, g_free);
  assert_false(ni->accepts(g, s, f32, &reason));
  assert_non_null(strstr(reason, "not bf16"));
  assert_string_equal(weir_native_default_impl(g, s, f32), "weir");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bgemm),
      cmocka_unit_test(test_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
