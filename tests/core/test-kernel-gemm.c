/* test-kernel-gemm.c — the native implementation "weir" (Weir's own GEMM,
 * core/kernels/) of Gemm, MatMul and Conv against the reference
 * interpreter running the pure expansion of the same program.
 *
 * Each program holds many independent library nodes (one per case, with
 * their own containers) so that one compile covers them all: Gemm at sizes
 * around the microtile of every ISA (1, 7, 33, 100, MR +- 1, NR +- 1) and
 * past the cache blocks (K > KC, N > NC, M > MC), fewer rows than half a
 * microtile (the unpacked path), all four transposes,
 * alpha, beta and C broadcast four ways; MatMul with batch dimensions,
 * broadcast and vector operands; Conv with padding, stride, dilation,
 * groups, 1x1, with and without bias, batch 1 and 2; epilogues (bias,
 * every activation the kernels know, a residual) applied in the GEMM's
 * store, each node's comment saying so.  Every program is
 * generated once per ISA the CPU has ($WEIR_ISA lowers it: avx512f,
 * avx2+fma, generic), must name that ISA and call weir_gemm (no BLAS), and
 * must match the interpreter within 1e-4 with 1, 2 and 3 OpenMP threads.
 * A sample model with fused epilogues (lenet and its recipe) compiled with
 * "weir" everywhere matches too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "runtime-fixture.h"
#include "weir-attr.h"
#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-expr.h"
#include "weir-hw.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-kernels.h"
#include "weir-native.h"
#include "weir-onnx.h"
#include "weir-ops.h"
#include "weir-recipe.h"
#include "weir-tensor-io.h"
#include "weir-validate.h"

#include "kernel-check.h"

#define FLAGS "-O1 -fopenmp -fPIC -shared"

/* One library node: op, input shapes ("" = omitted) and output shape;
 * optionally an epilogue: tasklet code over x (the node's result) and r (a
 * residual R<k> of the output's shape, or of shape `rshape` (broadcast),
 * when `residual`) writing y, and what the node's comment must then say
 * (`mark`; "" when the epilogue must stay a separate map). */
typedef struct {
  const char *op;
  const char *in[3];
  const char *out;
  void (*attrs)(WeirNode *n);
  const char *epi;
  gboolean residual;
  const char *mark;
  const char *rshape; /* NULL: the output's */
  /* a second extra input S<k> of this shape ("s" in the code, after r;
   * NULL: none) */
  const char *sshape;
  /* scalar constants K<k>_<i> (transient, one f32 element of initial
   * data: an exporter's Constant), "k0".. in the code, after r and s */
  guint nconst;
  double consts[3];
} Node;

/* Adds node k of the program: containers A<k>, B<k>, C<k> (inputs 0..2)
 * and Y<k>. */
static void add_node(WeirGraph *g, WeirState *s, guint k, const Node *nd,
                     WeirDType dt) {
  g_autoptr(GError) err = NULL;
  static const char *const conns[] = {"in0", "in1", "in2"};
  static const char *const letters[] = {"A", "B", "C"};
  const char *ins[9] = {NULL};
  guint ni = 0;
  for (guint i = 0; i < 3; i++)
    if (nd->in[i] && *nd->in[i])
      ins[ni++] = conns[i];
  static const char *const epis[] = {"epi0", "epi1", "epi2", "epi3", "epi4"};
  guint ne = 0;
  if (nd->residual)
    ins[ni++] = epis[ne++];
  if (nd->sshape)
    ins[ni++] = epis[ne++];
  for (guint i = 0; i < nd->nconst; i++)
    ins[ni++] = epis[ne++];
  const char *outs[] = {"out0", NULL};
  g_autofree char *label = g_strdup_printf("n%u", k);
  WeirNode *lib = weir_state_add_library(g, s, label, nd->op, ins, outs);
  for (guint i = 0; i < 3; i++) {
    if (!nd->in[i] || !*nd->in[i])
      continue;
    g_autofree char *name = g_strdup_printf("%s%u", letters[i], k);
    add_port(g, s, lib, name, dt, nd->in[i], conns[i], TRUE);
  }
  g_autofree char *yname = g_strdup_printf("Y%u", k);
  add_port(g, s, lib, yname, dt, nd->out, "out0", FALSE);
  if (nd->residual) {
    g_autofree char *rname = g_strdup_printf("R%u", k);
    add_port(g, s, lib, rname, dt, nd->rshape ? nd->rshape : nd->out, "epi0",
             TRUE);
  }
  guint ei = nd->residual ? 1 : 0;
  if (nd->sshape) {
    g_autofree char *sname = g_strdup_printf("S%u", k);
    add_port(g, s, lib, sname, dt, nd->sshape, epis[ei++], TRUE);
  }
  for (guint i = 0; i < nd->nconst; i++) {
    g_autofree char *kname = g_strdup_printf("K%u_%u", k, i);
    WeirContainer *c =
        weir_graph_add_array(g, kname, WEIR_DTYPE_F32, "1", TRUE, &err);
    if (!c)
      fail_msg("%s: %s", kname, err->message);
    float v = (float)nd->consts[i];
    g_autoptr(GBytes) data = g_bytes_new(&v, sizeof v);
    weir_container_set_initial(c, data);
    WeirNode *a = weir_state_add_access(g, s, kname);
    assert_true(weir_state_add_memlet(g, s, a->id, NULL, lib->id, epis[ei++],
                                      kname, "0", &err));
  }
  if (nd->attrs)
    nd->attrs(lib);
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", label, err->message);
  if (nd->epi) {
    const char *econns[8] = {"y", "x"};
    guint nc = 2;
    if (nd->residual)
      econns[nc++] = "r";
    if (nd->sshape)
      econns[nc++] = "s";
    static const char *const kn[] = {"k0", "k1", "k2"};
    for (guint i = 0; i < nd->nconst; i++)
      econns[nc++] = kn[i];
    weir_node_set_attr_string(lib, WEIR_EPILOGUE_CODE, nd->epi);
    weir_node_set_attr_strings(lib, WEIR_EPILOGUE_CONNS, econns, nc);
  }
}

static WeirGraph *program(const char *name, const Node *nodes, guint n,
                          WeirDType dt) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new(name);
  WeirState *s = weir_graph_add_state(g, "main");
  for (guint k = 0; k < n; k++)
    add_node(g, s, k, &nodes[k], dt);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s: %s", name, err->message);
  return g;
}

/* Compiles g with every library node set to "weir" for every ISA and
 * compares every Y<k> with the interpreter on the pure expansion. */
static void check_program(const WeirGraph *g0, const Node *nd, guint nodes,
                          WeirDType dt) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_graph_copy(g0);
  for (guint s = 0; s < g->states->len; s++) {
    WeirState *st = g_ptr_array_index(g->states, s);
    for (guint k = 0; k < st->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(st->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY)
        weir_node_set_attr_string(n, "impl", "weir");
    }
  }
  g_autoptr(GHashTable) args = random_args(g, 11);
  g_autoptr(GHashTable) ref = copy_args(args);
  g_autoptr(WeirGraph) pure = weir_graph_copy(g0);
  for (guint s = 0; s < pure->states->len; s++) {
    WeirState *st = g_ptr_array_index(pure->states, s);
    for (guint k = 0; k < st->nodes->len; k++) /* "weir"'s parameters */
      weir_node_remove_attr(g_ptr_array_index(st->nodes, k), "impl_params");
  }
  if (!weir_expand_all(pure, NULL, NULL, &err))
    fail_msg("%s: pure expansion: %s", g->name, err->message);
  if (!weir_interpret(pure, NULL, ref, NULL, &err))
    fail_msg("%s: interpreter: %s", g->name, err->message);
  Fixture *f = fixture_new_shared();
  f->opts.flags = FLAGS;
  WeirHwIsa list[3];
  guint ni = isas(list);
  const char *sfx = dt == WEIR_DTYPE_F64 ? "f64" : "f32";
  for (guint i = 0; i < ni; i++) {
    g_setenv("WEIR_ISA", weir_hw_isa_name(list[i]), TRUE);
    g_autofree char *src = weir_codegen_c(g, NULL, &err);
    if (!src)
      fail_msg("%s: %s", g->name, err->message);
    g_autofree char *isa_mark = g_strdup_printf(
        "implementation \"weir\") for %s:", weir_hw_isa_name(list[i]));
    g_autofree char *call = g_strdup_printf("weir_gemm_%s(", sfx);
    if (!strstr(src, isa_mark) || !strstr(src, call))
      fail_msg("%s: no '%s' or '%s' in the generated code", g->name, isa_mark,
               call);
    assert_null(strstr(src, "cblas_"));
    for (guint n = 0; n < nodes; n++)
      if (nd[n].epi)
        check_mark(src, g->name, n, nd[n].mark, "weir +");
    g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
    if (!k)
      fail_msg("%s (%s): %s", g->name, weir_hw_isa_name(list[i]), err->message);
    for (int threads = 1; threads <= 3; threads++) {
      assert_true(weir_kernel_set_threads(k, threads, &err));
      g_autoptr(GHashTable) got = copy_args(args);
      for (guint n = 0; n < nodes; n++) {
        g_autofree char *yn = g_strdup_printf("Y%u", n);
        WeirTensor *y = g_hash_table_lookup(got, yn);
        gint64 count =
            (gint64)(weir_tensor_nbytes(y) / (dt == WEIR_DTYPE_F32 ? 4 : 8));
        for (gint64 e = 0; e < count; e++)
          weir_tensor_set(y, e, 12345.0); /* every element must be written */
      }
      if (!weir_kernel_run(k, NULL, got, &err))
        fail_msg("%s: %s", g->name, err->message);
      for (guint n = 0; n < nodes; n++) {
        g_autofree char *yn = g_strdup_printf("Y%u", n);
        if (!weir_tensor_allclose(g_hash_table_lookup(got, yn),
                                  g_hash_table_lookup(ref, yn), 1e-4, 1e-4,
                                  NULL, &err))
          fail_msg("%s node n%u (%s, %s, %d threads): %s", g->name, n,
                   weir_hw_isa_name(list[i]), sfx, threads, err->message);
      }
    }
  }
  g_unsetenv("WEIR_ISA");
  fixture_free(f);
}

/* ------------------------------------------------------------------ Gemm */

static void tn_half(WeirNode *n) {
  weir_node_set_attr_int(n, "transA", 1);
  weir_node_set_attr_float(n, "alpha", 0.5);
  weir_node_set_attr_float(n, "beta", -2.0);
}
static void nt_three(WeirNode *n) {
  weir_node_set_attr_int(n, "transB", 1);
  weir_node_set_attr_float(n, "alpha", 3.0);
}
static void tt_quarter(WeirNode *n) {
  weir_node_set_attr_int(n, "transA", 1);
  weir_node_set_attr_int(n, "transB", 1);
  weir_node_set_attr_float(n, "beta", 0.25);
}
static void nt(WeirNode *n) {
  weir_node_set_attr_int(n, "transB", 1);
}
static void tn(WeirNode *n) {
  weir_node_set_attr_int(n, "transA", 1);
}
static void beta_zero(WeirNode *n) {
  weir_node_set_attr_float(n, "beta", 0.0);
}

/* (m, n, k) = sizes around MR (8 avx512, 6 avx2, 4 generic) and NR (48,
 * 16, 16), and past KC (<= 512), NC and MC (672 and 680 here). */
static const Node gemms[] = {
    {"Gemm", {"1, 1", "1, 1", ""}, "1, 1", NULL},
    {"Gemm", {"7, 100", "100, 33", "7, 33"}, "7, 33", NULL},
    {"Gemm", {"7, 33", "7, 100", "100"}, "33, 100", tn_half},
    {"Gemm", {"100, 33", "7, 33", "100, 1"}, "100, 7", nt_three},
    {"Gemm", {"47, 9", "49, 47", "1"}, "9, 49", tt_quarter},
    /* the unpacked path's four rows of op(b) at a time, with a remainder of
     * three in the last block of 256 columns, two rows of c added to */
    {"Gemm", {"2, 37", "259, 37", "2, 259"}, "2, 259", nt},
    {"Gemm", {"7, 9", "9, 47", ""}, "7, 47", NULL},
    {"Gemm", {"5, 15", "15, 17", ""}, "5, 17", NULL},
    {"Gemm", {"17, 520", "15, 520", ""}, "17, 15", nt},
    {"Gemm", {"20, 9", "20, 700", ""}, "9, 700", tn},
    {"Gemm", {"690, 5", "5, 3", ""}, "690, 3", NULL},
    {"Gemm", {"13, 385", "385, 95", "13, 95"}, "13, 95", beta_zero},
    {"Gemm", {"0, 3", "0, 4", "3, 4"}, "3, 4", tn_half},
    /* fewer rows than half a microtile: the unpacked path */
    {"Gemm", {"3, 40", "50, 40", "50"}, "3, 50", nt_three},
    {"Gemm", {"40, 2", "40, 300", "2, 300"}, "2, 300", tn_half},
    {"Gemm", {"1, 700", "700, 1000", ""}, "1, 1000", NULL},
    /* a classifier at batch 1 (transB): 1003 = 3 x 256 + 235 columns */
    {"Gemm", {"1, 1283", "1003, 1283", "1003"}, "1, 1003", nt_three},
    {"Gemm", {"70, 1", "90, 70", ""}, "1, 90", tt_quarter},
};

static void test_gemm_f32(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g =
      program("gemms", gemms, G_N_ELEMENTS(gemms), WEIR_DTYPE_F32);
  check_program(g, gemms, G_N_ELEMENTS(gemms), WEIR_DTYPE_F32);
}

static void test_gemm_f64(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program("gemms64", gemms, 7, WEIR_DTYPE_F64);
  check_program(g, gemms, 7, WEIR_DTYPE_F64);
}

/* ---------------------------------------------------------------- MatMul */

static const Node matmuls[] = {
    {"MatMul", {"3, 7, 33", "33, 49", ""}, "3, 7, 49", NULL},
    {"MatMul", {"2, 1, 5, 9", "3, 9, 17", ""}, "2, 3, 5, 17", NULL},
    {"MatMul", {"33", "2, 33, 10", ""}, "2, 10", NULL},
    {"MatMul", {"4, 33", "33", ""}, "4", NULL},
    {"MatMul", {"64, 100", "100, 50", ""}, "64, 50", NULL},
};

static void test_matmul(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g =
      program("matmuls", matmuls, G_N_ELEMENTS(matmuls), WEIR_DTYPE_F32);
  check_program(g, matmuls, G_N_ELEMENTS(matmuls), WEIR_DTYPE_F32);
}

/* ------------------------------------------------------------------ Conv */

static void set2(WeirNode *n, const char *name, gint64 a, gint64 b) {
  gint64 v[2] = {a, b};
  weir_node_set_attr_ints(n, name, v, 2);
}
static void pad1(WeirNode *n) {
  gint64 pads[4] = {1, 1, 1, 1};
  weir_node_set_attr_ints(n, "pads", pads, 4);
}
static void g2_s2_p1(WeirNode *n) {
  weir_node_set_attr_int(n, "group", 2);
  set2(n, "strides", 2, 2);
  pad1(n);
}
static void dil(WeirNode *n) {
  set2(n, "dilations", 2, 1);
  gint64 pads[4] = {2, 0, 1, 1};
  weir_node_set_attr_ints(n, "pads", pads, 4);
}
static void s2(WeirNode *n) {
  set2(n, "strides", 2, 2);
}

/* group, equal strides and dilations, pads (top, left, bottom, right) */
static void set_geo(WeirNode *n, gint64 group, gint64 stride, gint64 dil,
                    gint64 t, gint64 l, gint64 b, gint64 r) {
  gint64 pads[4] = {t, l, b, r};
  weir_node_set_attr_int(n, "group", group);
  set2(n, "strides", stride, stride);
  set2(n, "dilations", dil, dil);
  weir_node_set_attr_ints(n, "pads", pads, 4);
}
static void stem(WeirNode *n) {
  set_geo(n, 1, 2, 1, 3, 3, 3, 3);
}
static void asym(WeirNode *n) {
  set_geo(n, 1, 1, 1, 0, 2, 1, 0);
}
static void dil_s2(WeirNode *n) {
  set_geo(n, 1, 2, 2, 1, 0, 2, 1);
}
static void g2_1x1_s2(WeirNode *n) {
  set_geo(n, 2, 2, 1, 0, 0, 0, 0);
}
static void s2_p1(WeirNode *n) {
  set_geo(n, 1, 2, 1, 1, 1, 1, 1);
}
static void s3_p1(WeirNode *n) {
  set_geo(n, 1, 3, 1, 1, 1, 1, 1);
}

static const Node convs[] = {
    {"Conv", {"2, 5, 9, 8", "6, 5, 3, 3", "6"}, "2, 6, 9, 8", pad1},
    {"Conv", {"1, 4, 7, 7", "8, 4, 1, 1", "8"}, "1, 8, 7, 7", NULL},
    {"Conv", {"2, 4, 9, 9", "6, 2, 3, 3", ""}, "2, 6, 5, 5", g2_s2_p1},
    {"Conv", {"1, 3, 10, 11", "4, 3, 3, 2", "4"}, "1, 4, 9, 11", dil},
    {"Conv", {"2, 8, 5, 5", "9, 8, 1, 1", ""}, "2, 9, 5, 5", NULL},
    {"Conv", {"1, 16, 9, 9", "49, 16, 1, 1", "49"}, "1, 49, 5, 5", s2},
    /* the patches gathered by the packing (implicit im2col): a 7x7 stem
     * at stride 2, K past KC (64 * 9), N past NC (45 * 45), asymmetric
     * padding, dilation with stride, groups with a strided 1x1, batch 3 */
    {"Conv", {"1, 3, 23, 21", "8, 3, 7, 7", "8"}, "1, 8, 12, 11", stem},
    {"Conv", {"1, 64, 6, 7", "10, 64, 3, 3", "10"}, "1, 10, 6, 7", pad1},
    {"Conv", {"1, 2, 45, 45", "5, 2, 3, 3", ""}, "1, 5, 45, 45", pad1},
    {"Conv", {"1, 3, 13, 10", "4, 3, 3, 3", "4"}, "1, 4, 12, 10", asym},
    {"Conv", {"1, 4, 17, 15", "6, 4, 3, 3", "6"}, "1, 6, 8, 6", dil_s2},
    {"Conv", {"3, 6, 9, 9", "8, 3, 1, 1", "8"}, "3, 8, 5, 5", g2_1x1_s2},
    /* output rows at least a panel wide (the packing's copies of runs):
     * the stem's stride 2 and padding 3, a stride 3 */
    {"Conv", {"1, 3, 101, 99", "8, 3, 7, 7", "8"}, "1, 8, 51, 50", stem},
    {"Conv", {"1, 2, 8, 150", "5, 2, 3, 3", "5"}, "1, 5, 3, 50", s3_p1},
};

static void test_conv(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g =
      program("convs", convs, G_N_ELEMENTS(convs), WEIR_DTYPE_F32);
  check_program(g, convs, G_N_ELEMENTS(convs), WEIR_DTYPE_F32);
}

/* ------------------------------------------- channels in the vectors */

static void g2(WeirNode *n) {
  weir_node_set_attr_int(n, "group", 2);
}

/* The transposed microtile (weir_gemm_runt): forced by the node's
 * parameter orient=2 at sizes around its tile on every ISA (rows: 48 x 8
 * on AVX-512, 24 x 4 on AVX2, 16 x 4 portable), with every epilogue, the
 * patches gathered by its own packing, several k blocks, groups and
 * batch 2; orient=1 keeps the usual tile; a 1x1 convolution on a 7x7 map
 * takes the transposed one by shape on AVX-512 (the cost model), one on
 * a 14x14 map does not. */
static const Node chans[] = {
    /* 50 rows: two whole vectors and a partial one on AVX-512; 49
     * columns: six whole panels and one of a column */
    {"Conv", {"1, 40, 7, 7", "50, 40, 1, 1", "50"}, "1, 50, 7, 7", NULL},
    /* K 1800: three k blocks (the tile added to c, then the epilogue;
     * the transposed driver's k blocks are up to 768 deep) */
    {"Conv",
     {"1, 1800, 5, 5", "100, 1800, 1, 1", ""},
     "1, 100, 5, 5",
     NULL,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv",
     {"1, 7, 3, 3", "13, 7, 1, 1", "13"},
     "1, 13, 3, 3",
     NULL,
     "s = 1 / (1 + exp(-x))\ny = s * x",
     FALSE,
     "weir + SiLU"},
    /* the patches gathered into TNR-wide panels (padding, a 3x3 kernel) */
    {"Conv",
     {"1, 6, 7, 7", "20, 6, 3, 3", "20"},
     "1, 20, 7, 7",
     pad1,
     "y = min(max(x, 0.0), 6.0)",
     FALSE,
     "weir + clip"},
    {"Conv",
     {"1, 16, 9, 9", "33, 16, 1, 1", "33"},
     "1, 33, 5, 5",
     s2,
     "y = 1 / (1 + exp(-x))",
     FALSE,
     "weir + sigmoid"},
    {"Conv",
     {"2, 8, 6, 6", "34, 4, 1, 1", "34"},
     "2, 34, 6, 6",
     g2,
     "y = x * max(0, min(1, x / 6 + 0.5))",
     FALSE,
     "weir + HardSwish"},
    {"Conv",
     {"2, 8, 6, 6", "34, 4, 1, 1", "34"},
     "2, 34, 6, 6",
     g2,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv",
     {"1, 24, 14, 14", "96, 24, 1, 1", "96"},
     "1, 96, 14, 14",
     NULL,
     "y = x + r",
     TRUE,
     "weir + residual"},
    /* ResNet's last stage, smaller: 3x3 patches on 7x7 maps, K = 1647
     * in three k blocks of an odd 549 rows (the gathered panels' last row
     * alone; the transposed driver's k blocks are up to 768 deep), a
     * residual; the strided 3x3 from 14x14; dilation with stride and
     * asymmetric padding */
    {"Conv",
     {"1, 183, 7, 7", "50, 183, 3, 3", "50"},
     "1, 50, 7, 7",
     pad1,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv", {"1, 5, 14, 14", "20, 5, 3, 3", "20"}, "1, 20, 7, 7", s2_p1},
    {"Conv", {"1, 4, 9, 9", "20, 4, 3, 3", ""}, "1, 20, 4, 3", dil_s2},
    /* the usual tile, forced */
    {"Conv", {"1, 40, 7, 7", "50, 40, 1, 1", "50"}, "1, 50, 7, 7", NULL},
    /* by shape: 480 x 49 x 96 from patches (a strided 1x1: channels on
     * AVX-512), 96 x 196 x 24 (not) */
    {"Conv", {"1, 96, 13, 13", "480, 96, 1, 1", "480"}, "1, 480, 7, 7", s2},
    {"Conv", {"1, 24, 14, 14", "96, 24, 1, 1", "96"}, "1, 96, 14, 14", NULL},
    /* and the same 480 x 49 x 96 as a plain 1x1: the usual tile with its
     * transposed tail (tail14p) */
    {"Conv", {"1, 96, 7, 7", "480, 96, 1, 1", "480"}, "1, 480, 7, 7", NULL},
    /* squeeze-and-excitation FCs (a GEMV: B one column wide, its one
     * panel packed with TNR - 1 columns of zeros per row, r52): 45 rows
     * (a partial vector) over K 777 with SiLU, 3 columns (a 1x3 map) with
     * sigmoid */
    {"Conv",
     {"1, 777, 1, 1", "45, 777, 1, 1", "45"},
     "1, 45, 1, 1",
     NULL,
     "s = 1 / (1 + exp(-x))\ny = s * x",
     FALSE,
     "weir + SiLU"},
    {"Conv",
     {"1, 61, 1, 3", "50, 61, 1, 1", "50"},
     "1, 50, 1, 3",
     NULL,
     "y = 1 / (1 + exp(-x))",
     FALSE,
     "weir + sigmoid"},
};
/* orient per node (0: none, by shape) */
static const gint64 chans_orient[] = {2, 2, 2, 2, 2, 2, 2, 2, 2,
                                      2, 2, 1, 0, 0, 0, 2, 2};

static void test_conv_channels(void **state) {
  (void)state;
  G_STATIC_ASSERT(G_N_ELEMENTS(chans) == G_N_ELEMENTS(chans_orient));
  g_autoptr(WeirGraph) g =
      program("channels", chans, G_N_ELEMENTS(chans), WEIR_DTYPE_F32);
  WeirState *st = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < st->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(st->nodes, i);
    guint k;
    if (n->kind != WEIR_NODE_LIBRARY || sscanf(n->label, "n%u", &k) != 1 ||
        !chans_orient[k])
      continue;
    g_autofree char *p = g_strdup_printf(
        "%s=%" G_GINT64_FORMAT, WEIR_GEMM_PARAM_ORIENT, chans_orient[k]);
    const char *ps[] = {p};
    weir_node_set_attr_strings(n, "impl_params", ps, 1);
  }
  check_program(g, chans, G_N_ELEMENTS(chans), WEIR_DTYPE_F32);
  /* which nodes took the transposed driver, on the best ISA */
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) gw = weir_graph_copy(g);
  st = g_ptr_array_index(gw->states, 0);
  for (guint i = 0; i < st->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(st->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY)
      weir_node_set_attr_string(n, "impl", "weir");
  }
  g_unsetenv("WEIR_ISA");
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  g_autofree char *src = weir_codegen_c(gw, NULL, &err);
  if (!src)
    fail_msg("%s", err->message);
  assert_non_null(strstr(src, "weir_gemm_runt_f32("));
  for (guint k = 0; k < G_N_ELEMENTS(chans); k++) {
    gboolean want = chans_orient[k] == 2 || (chans_orient[k] == 0 && k == 12 &&
                                             hw->isa == WEIR_HW_ISA_AVX512);
    check_mark(src, "channels", k, want ? "channels in the vectors" : "",
               "channels in the vectors");
  }
  /* $WEIR_GEMM_ORIENT=1 keeps the shape rule's node on the usual tile,
   * and the kernels' part of the cache key says so */
  g_autofree char *sig = weir_kernels_signature();
  g_setenv("WEIR_GEMM_ORIENT", "1", TRUE);
  g_autofree char *src1 = weir_codegen_c(gw, NULL, &err);
  g_autofree char *sig1 = weir_kernels_signature();
  g_unsetenv("WEIR_GEMM_ORIENT");
  assert_non_null(src1);
  check_mark(src1, "channels", 12, "", "channels in the vectors");
  check_mark(src1, "channels", 0, "channels in the vectors",
             "channels in the vectors");
  assert_string_not_equal(sig, sig1);
  /* the cost model: 7x7 maps on AVX-512, not 14x14 ones, not f64 */
  WeirHwProfile avx = {.isa = WEIR_HW_ISA_AVX512,
                       .l1d_bytes = 48 * 1024,
                       .l2_bytes = 1024 * 1024,
                       .logical_cores = 2};
  WeirGemmBlocking b, b64;
  weir_kernel_gemm_blocking(&avx, WEIR_DTYPE_F32, &b);
  weir_kernel_gemm_blocking(&avx, WEIR_DTYPE_F64, &b64);
  assert_int_equal(b.tmr, 48);
  assert_int_equal(b.tnr, 8);
  assert_int_equal(b64.tnr, 0);
  assert_true(weir_kernel_gemm_channels_in_vectors(&b, 1152, 49, 192, TRUE));
  assert_true(weir_kernel_gemm_channels_in_vectors(&b, 192, 49, 1152, TRUE));
  assert_true(weir_kernel_gemm_channels_in_vectors(&b, 480, 49, 96, TRUE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 480, 196, 80, TRUE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 64, 3136, 64, TRUE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b64, 1152, 49, 192, TRUE));
  /* ResNet-50's 1x1 convolutions (orient14o, docs/performance.md): the
   * usual tile measured as fast or faster on 28x28 and 14x14 maps (the
   * transposed one within 0.97-1.1 of it by the model, under the 0.9
   * margin), the transposed one 14-16% faster on 7x7 maps (0.78) */
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 256, 784, 512, TRUE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 512, 784, 128, TRUE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 256, 196, 1024, TRUE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 1024, 196, 256, TRUE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 512, 196, 1024, TRUE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 1024, 196, 512, TRUE));
  assert_true(weir_kernel_gemm_channels_in_vectors(&b, 512, 49, 2048, TRUE));
  assert_true(weir_kernel_gemm_channels_in_vectors(&b, 2048, 49, 512, TRUE));
  assert_true(weir_kernel_gemm_channels_in_vectors(&b, 2048, 49, 1024, TRUE));
  /* without patches (1x1 at unit stride) the usual tile's 1-column tail
   * on 7x7 maps is counted with the channels in the vectors (tail14p):
   * the usual tile then, measured 5-15% faster on ResNet-50's, MobileNetV2's
   * and EfficientNet-B0's 1x1 shapes; 14x14 and 28x28 unchanged */
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 512, 49, 2048, FALSE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 2048, 49, 512, FALSE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 160, 49, 960, FALSE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 1280, 49, 320, FALSE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 1152, 49, 192, FALSE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 1024, 196, 256, FALSE));
  assert_false(weir_kernel_gemm_channels_in_vectors(&b, 256, 784, 512, FALSE));
  /* nor on AVX2, which has no such tail: the transposed tile as before */
  WeirHwProfile av2 = avx;
  av2.isa = WEIR_HW_ISA_AVX2;
  WeirGemmBlocking b2;
  weir_kernel_gemm_blocking(&av2, WEIR_DTYPE_F32, &b2);
  assert_int_equal(
      weir_kernel_gemm_channels_in_vectors(&b2, 2048, 49, 512, FALSE),
      weir_kernel_gemm_channels_in_vectors(&b2, 2048, 49, 512, TRUE));
  /* an orientation the node's dtype or the kernel does not have */
  g_autoptr(WeirGraph) g64 = program("channels64", chans, 1, WEIR_DTYPE_F64);
  st = g_ptr_array_index(g64->states, 0);
  for (guint i = 0; i < st->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(st->nodes, i);
    if (n->kind != WEIR_NODE_LIBRARY)
      continue;
    const char *ps[] = {"orient=2"};
    weir_node_set_attr_strings(n, "impl_params", ps, 1);
    weir_node_set_attr_string(n, "impl", "weir");
  }
  g_clear_error(&err);
  g_autofree char *bad = weir_codegen_c(g64, NULL, &err);
  assert_null(bad);
  assert_non_null(strstr(err->message, "orient=2"));
  assert_non_null(strstr(err->message, "'n0'"));
}

/* ------------------------------------------------------------ epilogues */

static void g3(WeirNode *n) {
  weir_node_set_attr_int(n, "group", 3);
  pad1(n);
}

/* Every activation the kernels know, with and without a residual, on the
 * packed path (K past KC too), the unpacked one (a few rows), K = 0,
 * MatMul batches, and Conv at batch 1 and 2 (the scatter), 1x1 (the
 * direct GEMM), groups, stride and dilation; one epilogue the kernels do
 * not know stays a map. */
static const Node epilogues[] = {
    {"Gemm",
     {"7, 100", "100, 33", "33"},
     "7, 33",
     NULL,
     "y = max(x, 0)",
     FALSE,
     "weir + clip"},
    {"Gemm",
     {"37, 520", "520, 61", ""},
     "37, 61",
     NULL,
     "y = min(max(x, 0.0), 6.0)",
     FALSE,
     "weir + clip"},
    {"Gemm",
     {"19, 45", "45, 50", "19, 50"},
     "19, 50",
     NULL,
     "y = 1 / (1 + exp(-x))",
     FALSE,
     "weir + sigmoid"},
    {"Gemm",
     {"3, 40", "50, 40", "50"},
     "3, 50",
     nt_three,
     "s = 1 / (1 + exp(-x))\ny = x * s",
     FALSE,
     "weir + SiLU"},
    {"Gemm",
     {"1, 300", "300, 70", "70"},
     "1, 70",
     NULL,
     "y = x * max(0, min(1, x / 6 + 0.5))",
     FALSE,
     "weir + HardSwish"},
    {"Gemm",
     {"0, 3", "0, 4", "3, 4"},
     "3, 4",
     tn_half,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Gemm",
     {"33, 21", "21, 95", ""},
     "33, 95",
     NULL,
     "y = r + x",
     TRUE,
     "weir + residual */"},
    {"MatMul",
     {"3, 7, 33", "33, 49", ""},
     "3, 7, 49",
     NULL,
     "y = x / (1 + exp(-x))",
     FALSE,
     "weir + SiLU"},
    {"MatMul",
     {"2, 1, 5, 9", "3, 9, 17", ""},
     "2, 3, 5, 17",
     NULL,
     "a = x + r\ny = max(a, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv",
     {"2, 5, 9, 8", "6, 5, 3, 3", "6"},
     "2, 6, 9, 8",
     pad1,
     "y = max(x, 0)",
     FALSE,
     "weir + clip"},
    {"Conv",
     {"1, 6, 11, 13", "9, 2, 3, 3", "9"},
     "1, 9, 11, 13",
     g3,
     "s = 1 / (1 + exp(-x))\ny = s * x",
     FALSE,
     "weir + SiLU"},
    {"Conv",
     {"2, 6, 11, 13", "9, 2, 3, 3", "9"},
     "2, 9, 11, 13",
     g3,
     "y = min(max(x + r, 0.0), 6.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv",
     {"2, 8, 5, 5", "9, 8, 1, 1", "9"},
     "2, 9, 5, 5",
     NULL,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv",
     {"1, 16, 9, 9", "49, 16, 1, 1", "49"},
     "1, 49, 5, 5",
     s2,
     "y = x * max(0, min(1, x / 6 + 0.5))",
     FALSE,
     "weir + HardSwish"},
    {"Conv",
     {"1, 3, 10, 11", "4, 3, 3, 2", "4"},
     "1, 4, 9, 11",
     dil,
     "y = 1 / (1 + exp(-x))",
     FALSE,
     "weir + sigmoid"},
    /* bias and clip applied to full microtiles in registers (mobile14i),
     * edge tiles by the store's epilogue: 20 rows (two full panels and 4),
     * 96 and 120 columns, K past KC (the last block adds then clips); SiLU,
     * sigmoid and HardSwish in registers too (silu14o): 48 rows (whole
     * panels for every MR), K past KC, and 20 rows (an edge panel) */
    {"Conv",
     {"1, 300, 8, 12", "20, 300, 1, 1", "20"},
     "1, 20, 8, 12",
     NULL,
     "y = min(max(x, 0.0), 6.0)",
     FALSE,
     "weir + clip"},
    {"Conv",
     {"1, 4, 10, 12", "16, 4, 3, 3", "16"},
     "1, 16, 10, 12",
     pad1,
     "y = max(x, 0)",
     FALSE,
     "weir + clip"},
    {"Conv",
     {"1, 24, 8, 12", "19, 24, 1, 1", "19"},
     "1, 19, 8, 12",
     NULL,
     "s = 1 / (1 + exp(-x))\ny = x * s",
     FALSE,
     "weir + SiLU"},
    {"Conv",
     {"1, 300, 8, 12", "48, 300, 1, 1", "48"},
     "1, 48, 8, 12",
     NULL,
     "s = 1 / (1 + exp(-x))\ny = x * s",
     FALSE,
     "weir + SiLU"},
    {"Conv",
     {"1, 16, 8, 12", "48, 16, 1, 1", "48"},
     "1, 48, 8, 12",
     NULL,
     "y = 1 / (1 + exp(-x))",
     FALSE,
     "weir + sigmoid"},
    {"Conv",
     {"1, 16, 8, 15", "20, 16, 1, 1", "20"},
     "1, 20, 8, 15",
     NULL,
     "y = x * max(0, min(1, x / 6 + 0.5))",
     FALSE,
     "weir + HardSwish"},
    {"Conv",
     {"1, 4, 7, 7", "8, 4, 1, 1", "8"},
     "1, 8, 7, 7",
     NULL,
     "y = x * x - 1.5",
     FALSE,
     ""},
    /* a bias per column (a linear layer's, broadcast over the rows): Gemm
     * and MatMul apply it with a row stride of 0; Conv splits it off */
    {"Gemm",
     {"33, 21", "21, 95", ""},
     "33, 95",
     NULL,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + column bias + clip",
     "95"},
    {"MatMul",
     {"3, 7, 33", "33, 49", ""},
     "3, 7, 49",
     NULL,
     "y = x + r",
     TRUE,
     "weir + column bias */",
     "1, 49"},
    {"MatMul",
     {"2, 1, 5, 9", "3, 9, 17", ""},
     "2, 3, 5, 17",
     NULL,
     "a = r + x\ny = max(a, 0.0)",
     TRUE,
     "weir + column bias + clip",
     "17"},
    {"Conv",
     {"1, 4, 7, 7", "8, 4, 1, 1", "8"},
     "1, 8, 7, 7",
     NULL,
     "y = x + r",
     TRUE,
     "",
     "7"},
    /* GELU after a linear layer's bias, as an exporter writes it (the
     * constants sqrt(2), 1 and 0.5 as scalar constant inputs), and with
     * literals in another order */
    {"MatMul",
     {"1, 37, 21", "21, 53", ""},
     "1, 37, 53",
     NULL,
     "t = r + x\nu = t / k0\ne = erf(u)\nw = e + k1\nv = t * w\ny = v * k2",
     TRUE,
     "weir + column bias + GELU",
     "53",
     NULL,
     3,
     {1.4142135381698608, 1.0, 0.5}},
    {"Gemm",
     {"9, 21", "21, 70", ""},
     "9, 70",
     NULL,
     "y = 0.5 * x * (1 + erf(x * 0.7071067811865476))",
     FALSE,
     "weir + GELU"},
    /* a linear layer's bias and a skip connection: two extra inputs */
    {"MatMul",
     {"1, 19, 40", "40, 66", ""},
     "1, 19, 66",
     NULL,
     "a = s + x\ny = r + a",
     TRUE,
     "weir + column bias + residual */",
     NULL,
     "66"},
    {"Gemm",
     {"30, 8", "8, 17", ""},
     "30, 17",
     NULL,
     "y = max(x + r + s, 0.0)",
     TRUE,
     "weir + column bias + residual + clip",
     "1, 17",
     "30, 17"},
    /* the attention scores divided by sqrt(d): a scale, batched */
    {"MatMul",
     {"3, 20, 8", "3, 8, 20", ""},
     "3, 20, 20",
     NULL,
     "y = x / 8.0",
     FALSE,
     "weir + scale */"},
    /* a scale Conv does not take; two residuals of the output's shape */
    {"Conv",
     {"1, 4, 7, 7", "8, 4, 1, 1", "8"},
     "1, 8, 7, 7",
     NULL,
     "y = x * 0.5",
     FALSE,
     ""},
    {"Gemm",
     {"12, 8", "8, 17", ""},
     "12, 17",
     NULL,
     "y = x + r + s",
     TRUE,
     "",
     NULL,
     "12, 17"},
};

static void test_epilogues(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g =
      program("epilogues", epilogues, G_N_ELEMENTS(epilogues), WEIR_DTYPE_F32);
  check_program(g, epilogues, G_N_ELEMENTS(epilogues), WEIR_DTYPE_F32);
}

/* ------------------------------------------- a node's own blocking */

/* Small blocks, so every loop of the driver runs several times. */
static void own_small(WeirNode *n) {
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_MR, 5);
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_NV, 2);
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_KC, 37);
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_MC, 23);
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_NC, 50);
}
/* Another microtile, cache blocks from the profile. */
static void own_tile(WeirNode *n) {
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_MR, 14);
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_NV, 1);
}
/* Default and own blockings side by side in one unit: each own blocking
 * gets its own copy of the GEMM (and of the convolution helper).  The
 * blocking attributes are the code generator's, not the operators' (the
 * schema check of add_node does not know them): set after, by owns_set. */
static const Node owns[] = {
    {"Gemm", {"100, 90", "90, 130", "130"}, "100, 130", NULL},
    {"Gemm", {"100, 90", "90, 130", "130"}, "100, 130", NULL},
    {"Gemm", {"33, 70", "70, 41", ""}, "33, 41", NULL},
    {"MatMul", {"2, 30, 40", "40, 75", ""}, "2, 30, 75", NULL},
    {"Conv", {"2, 5, 9, 8", "26, 5, 3, 3", "26"}, "2, 26, 9, 8", pad1},
    /* KC 37 with kk 360: the epilogue after the last of several k blocks */
    {"Conv",
     {"1, 40, 7, 7", "30, 40, 1, 1", ""},
     "1, 30, 7, 7",
     NULL,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
};
static void (*const owns_set[])(WeirNode *n) = {own_small, NULL,      own_tile,
                                                own_small, own_small, own_tile};

static void test_own_blocking(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g =
      program("owns", owns, G_N_ELEMENTS(owns), WEIR_DTYPE_F32);
  WeirState *st = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < st->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(st->nodes, i);
    guint k;
    if (n->kind == WEIR_NODE_LIBRARY && sscanf(n->label, "n%u", &k) == 1 &&
        owns_set[k])
      owns_set[k](n);
  }
  check_program(g, owns, G_N_ELEMENTS(owns), WEIR_DTYPE_F32);
  /* the names carry the blocking, mc and nc rounded to whole microtiles */
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  WeirGemmBlocking b;
  WeirNode *n0 = NULL;
  for (guint i = 0; i < st->nodes->len && !n0; i++) {
    WeirNode *n = g_ptr_array_index(st->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY && g_strcmp0(n->label, "n0") == 0)
      n0 = n;
  }
  assert_non_null(n0);
  assert_true(weir_kernel_gemm_blocking_node(hw, WEIR_DTYPE_F32, n0, &b, &err));
  g_autofree char *id = g_strdup_printf("f32_5x%u_37_20_%u", 2 * b.vl,
                                        MAX(50 / (2 * b.vl), 1) * 2 * b.vl);
  assert_string_equal(b.id, id);
  assert_true(
      weir_kernel_gemm_blocking_node(hw, WEIR_DTYPE_F32, NULL, &b, &err));
  assert_string_equal(b.id, "f32");
  /* a value out of range is an error naming the attribute */
  weir_node_set_attr_int(n0, WEIR_GEMM_ATTR_MR, 0);
  weir_node_set_attr_string(n0, "impl", "weir");
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  assert_null(src);
  assert_non_null(strstr(err->message, WEIR_GEMM_ATTR_MR));
}

/* ------------------------------------------- the threads' split */

/* Small blocks with several B panels per NC block: MR 5, NV 2, NC 170
 * (160 columns: 5 panels of 32 on AVX-512, 10 of 16 on AVX2, 20 of 8
 * portable), MC 23 (four M blocks of 20 rows at 61 rows). */
static void split_small(WeirNode *n) {
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_MR, 5);
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_NV, 2);
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_KC, 37);
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_MC, 23);
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_NC, 170);
}
/* The usual tile (not the transposed one the shape rule may pick). */
static void split_orient1(WeirNode *n) {
  g_autofree char *p = g_strdup_printf("%s=1", WEIR_GEMM_PARAM_ORIENT);
  const char *ps[] = {p};
  weir_node_set_attr_strings(n, "impl_params", ps, 1);
}
/* The usual tile, padding 1 (a 3x3's patches: B packed in the call). */
static void split_orient1_pad1(WeirNode *n) {
  split_orient1(n);
  pad1(n);
}
/* The transposed tile with small blocks (scal17): k blocks of 35 and A
 * blocks of tab = 100 x 37 elements, so on AVX-512 a 3x3 convolution of
 * 50 -> 200 channels on a 7x7 map has M blocks of 96, 96 and 8 rows (6,
 * 6 and 1 vectors), split over the threads as 13 vectors: 6 + 7 at two
 * threads (the second thread's share in two blocks), 4 + 4 + 5 at three
 * (panels split between threads). */
static void split_orient2(WeirNode *n) {
  g_autofree char *p = g_strdup_printf("%s=2", WEIR_GEMM_PARAM_ORIENT);
  const char *ps[] = {p};
  weir_node_set_attr_strings(n, "impl_params", ps, 1);
  pad1(n);
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_KC, 37);
  weir_node_set_attr_int(n, WEIR_GEMM_ATTR_MC, 100);
}

static void s3(WeirNode *n) {
  set2(n, "strides", 3, 3);
}
/* stride 2, padded at the bottom and the right only: the last output row
 * and column lie in the padding */
static void s2_pad_end(WeirNode *n) {
  set2(n, "strides", 2, 2);
  gint64 pads[4] = {0, 0, 1, 1};
  weir_node_set_attr_ints(n, "pads", pads, 4);
}

/* The tiles of an NC block split by their cost over 1, 2 and 3 threads
 * (conv14k): a B panel shared by two threads, its rows split, an edge
 * panel cheaper than a full one, several M blocks (the rows of a thread's
 * tiles within each), A packed per call by each thread for its rows only;
 * and a residual block's Add + ReLU applied in the microtile's
 * registers (full tiles) or after the store (edges); strided 1x1
 * convolutions, one over two k blocks, one whose last output row and
 * column lie in the padding. */
static const Node splits[] = {
    /* 61 x 150 x 80 and 61 x 330 x 80 (two NC blocks and an edge one) */
    {"Gemm", {"61, 80", "80, 150", "150"}, "61, 150", NULL},
    {"Gemm",
     {"61, 80", "80, 330", ""},
     "61, 330",
     NULL,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Gemm", {"80, 61", "330, 80", "61, 1"}, "61, 330", tt_quarter},
    /* ResNet's 14x14 bottleneck: 5 panels, the last of 4 columns */
    {"Conv",
     {"1, 24, 14, 14", "100, 24, 1, 1", "100"},
     "1, 100, 14, 14",
     NULL,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    /* the downsample: 1x1 stride 2 onto 14x14 */
    {"Conv",
     {"1, 16, 28, 28", "40, 16, 1, 1", "40"},
     "1, 40, 14, 14",
     s2,
     NULL},
    /* 28x28: NC blocks of 10 and 7 panels (AVX-512), three threads
     * splitting B panels; a bias, a residual and ReLU6's clip */
    {"Conv",
     {"1, 8, 28, 28", "20, 8, 1, 1", "20"},
     "1, 20, 28, 28",
     NULL,
     "y = min(max(x + r, 0.0), 6.0)",
     TRUE,
     "weir + residual + clip"},
    /* the same with small blocks, groups and batch 2 */
    {"Conv",
     {"2, 8, 13, 13", "66, 4, 1, 1", "66"},
     "2, 66, 13, 13",
     g2,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    /* stride 3 over two k blocks, 81 columns in panels of small blocks */
    {"Conv", {"1, 50, 27, 27", "30, 50, 1, 1", "30"}, "1, 30, 9, 9", s3},
    {"Conv", {"1, 8, 10, 10", "16, 8, 1, 1", ""}, "1, 16, 6, 6", s2_pad_end},
    /* a 3x3 to 17x17 on the usual tile (AVX-512: 6 panels of 48 and a
     * 1-column tail, B gathered from the patches): the threads'
     * boundaries, within a tile of a panel edge, moved to it at 2 and 3
     * threads; the 1x1 s2 onto 14x14 above likewise at 2 (scal17) */
    {"Conv", {"1, 6, 17, 17", "40, 6, 3, 3", "40"}, "1, 40, 17, 17", NULL},
    /* the transposed tile's A vectors split over all M blocks, a bias, a
     * residual and ReLU */
    {"Conv",
     {"1, 50, 7, 7", "200, 50, 3, 3", "200"},
     "1, 200, 7, 7",
     NULL,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
};
static void (*const splits_set[])(WeirNode *n) = {
    split_small,   split_small,        split_small,  split_orient1,
    split_orient1, split_orient1,      split_small,  split_small,
    split_orient1, split_orient1_pad1, split_orient2};

static void test_thread_split(void **state) {
  (void)state;
  G_STATIC_ASSERT(G_N_ELEMENTS(splits) == G_N_ELEMENTS(splits_set));
  g_autoptr(WeirGraph) g =
      program("splits", splits, G_N_ELEMENTS(splits), WEIR_DTYPE_F32);
  WeirState *st = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < st->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(st->nodes, i);
    guint k;
    if (n->kind == WEIR_NODE_LIBRARY && sscanf(n->label, "n%u", &k) == 1)
      splits_set[k](n);
  }
  check_program(g, splits, G_N_ELEMENTS(splits), WEIR_DTYPE_F32);
}

/* ----------------------------------------------- B read in place */

/* 1x1 convolutions at unit stride read X as B in place (conv14n): the
 * microkernel takes its rows ldb apart, and a last panel with a partial
 * vector is packed.  Around the vector widths of every ISA (16, 8, 4
 * lanes): N = 99 (panels 48 + 48 + 3), 96 (whole panels), 16 (one panel
 * of one AVX-512 vector), 1681 (past NC, its last panel 1 column), 7x7
 * with the usual tile forced; K = 3 (below a vector), 16, 300 (two k
 * blocks: the second adds to c); bias, clip, residual (the fast store and
 * edge tiles through weir_gemm_epi), SiLU and HardSwish (the fast store
 * on full tiles since silu14o: 96 and 48 rows, N 192 and 96, K = 300 with
 * two k blocks); groups and batch
 * 2 (B a slice of X); the channel-vector tile (weir_gemm_runt) forced,
 * whose B panels of TNR columns are read in place too (K 900: two of
 * its k blocks).  A strided 1x1 and
 * a Gemm's B (not transposed, and transposed: packed) next to them.  Each
 * program is checked with B in place up to any k, never ($WEIR_GEMM_INPLACE_K
 * 0) and up to k 20 (the K = 300 nodes packed, the others in place). */
static const Node inplace[] = {
    {"Conv",
     {"1, 16, 9, 11", "24, 16, 1, 1", "24"},
     "1, 24, 9, 11",
     NULL,
     "y = min(max(x, 0.0), 6.0)",
     FALSE,
     "weir + clip"},
    {"Conv",
     {"1, 300, 8, 12", "20, 300, 1, 1", "20"},
     "1, 20, 8, 12",
     NULL,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv",
     {"1, 3, 4, 4", "9, 3, 1, 1", ""},
     "1, 9, 4, 4",
     NULL,
     "y = x + r",
     TRUE,
     "weir + residual"},
    {"Conv",
     {"1, 5, 41, 41", "11, 5, 1, 1", "11"},
     "1, 11, 41, 41",
     NULL,
     "s = 1 / (1 + exp(-x))\ny = s * x",
     FALSE,
     "weir + SiLU"},
    {"Conv",
     {"2, 8, 6, 6", "34, 4, 1, 1", "34"},
     "2, 34, 6, 6",
     g2,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv", {"1, 300, 7, 7", "50, 300, 1, 1", "50"}, "1, 50, 7, 7", NULL},
    {"Conv", {"2, 16, 9, 9", "33, 16, 1, 1", "33"}, "2, 33, 5, 5", s2},
    /* the channel-vector tile (orient=2): 8, 4 and 4 columns a panel, N =
     * 63 and 48 (a last panel of 7 columns, packed, or none), two k
     * blocks, a residual */
    {"Conv",
     {"1, 900, 7, 9", "50, 900, 1, 1", "50"},
     "1, 50, 7, 9",
     NULL,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv", {"1, 24, 6, 8", "70, 24, 1, 1", ""}, "1, 70, 6, 8", NULL},
    {"Gemm", {"9, 17", "17, 99", "99"}, "9, 99", NULL},
    {"Gemm", {"9, 17", "99, 17", ""}, "9, 99", nt},
    {"Conv",
     {"1, 32, 12, 16", "96, 32, 1, 1", "96"},
     "1, 96, 12, 16",
     NULL,
     "s = 1 / (1 + exp(-x))\ny = x * s",
     FALSE,
     "weir + SiLU"},
    {"Conv",
     {"1, 300, 8, 12", "48, 300, 1, 1", "48"},
     "1, 48, 8, 12",
     NULL,
     "y = x / (1 + exp(-x))",
     FALSE,
     "weir + SiLU"},
    {"Conv",
     {"2, 16, 8, 12", "48, 16, 1, 1", ""},
     "2, 48, 8, 12",
     NULL,
     "y = x * max(0, min(1, x / 6 + 0.5))",
     FALSE,
     "weir + HardSwish"},
};

static void test_conv_inplace(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g =
      program("inplace", inplace, G_N_ELEMENTS(inplace), WEIR_DTYPE_F32);
  WeirState *st = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < st->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(st->nodes, i);
    if (n->kind != WEIR_NODE_LIBRARY)
      continue;
    if (g_str_equal(n->label, "n5")) {
      const char *ps[] = {WEIR_GEMM_PARAM_ORIENT "=1"};
      weir_node_set_attr_strings(n, "impl_params", ps, 1);
    } else if (g_str_equal(n->label, "n7") || g_str_equal(n->label, "n8")) {
      const char *ps[] = {WEIR_GEMM_PARAM_ORIENT "=2"};
      weir_node_set_attr_strings(n, "impl_params", ps, 1);
    }
  }
  static const char *const envs[] = {NULL, "0", "20"};
  g_autofree char *sig = weir_kernels_signature();
  for (guint e = 0; e < G_N_ELEMENTS(envs); e++) {
    if (envs[e])
      g_setenv("WEIR_GEMM_INPLACE_K", envs[e], TRUE);
    check_program(g, inplace, G_N_ELEMENTS(inplace), WEIR_DTYPE_F32);
    /* the threshold is in the GEMM's text, and the kernels' part of the
     * cache key says when the environment changed it */
    g_autoptr(WeirGraph) gw = weir_graph_copy(g);
    WeirState *sw = g_ptr_array_index(gw->states, 0);
    for (guint i = 0; i < sw->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(sw->nodes, i);
      if (n->kind == WEIR_NODE_LIBRARY)
        weir_node_set_attr_string(n, "impl", "weir");
    }
    g_autofree char *src = weir_codegen_c(gw, NULL, &err);
    if (!src)
      fail_msg("%s", err->message);
    g_autofree char *rule = g_strdup_printf(
        "k <= %u;", envs[e] ? (guint)g_ascii_strtoull(envs[e], NULL, 10)
                            : WEIR_GEMM_INPLACE_K);
    if (!strstr(src, rule))
      fail_msg("no '%s' in the generated GEMM", rule);
    g_autofree char *sig1 = weir_kernels_signature();
    if (envs[e])
      assert_string_not_equal(sig, sig1);
    else
      assert_string_equal(sig, sig1);
    g_unsetenv("WEIR_GEMM_INPLACE_K");
  }
  /* not a number: the default */
  g_setenv("WEIR_GEMM_INPLACE_K", "lots", TRUE);
  assert_int_equal(weir_kernel_gemm_inplace_k(), WEIR_GEMM_INPLACE_K);
  g_unsetenv("WEIR_GEMM_INPLACE_K");
}

/* ----------------------------------- the usual tile's narrow tail */

/* The last panel's partial vector of at most TNR columns (N % 16 in 1..8
 * on AVX-512) computed with the channels in the vectors from the usual
 * MR-high A panels (tail14p): N = 196 (four panels and 4 columns), 49,
 * 4 + 16k, 8 + 16, past NC; odd M (a transposed tile of 6 panels and one
 * of 2, the last row panel partial); two k blocks; B read in place,
 * packed (transposed), and as a strided 1x1 convolution's patches; beta 1
 * (the tail added to C); epilogues in the tail's store.  The other ISAs
 * run the same nodes without the tail. */
static const Node tails[] = {
    {"Conv",
     {"1, 300, 14, 14", "61, 300, 1, 1", "61"},
     "1, 61, 14, 14",
     NULL,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv",
     {"1, 40, 14, 14", "100, 40, 1, 1", "100"},
     "1, 100, 14, 14",
     NULL,
     "s = 1 / (1 + exp(-x))\ny = s * x",
     FALSE,
     "weir + SiLU"},
    {"Conv", {"1, 24, 27, 27", "21, 24, 1, 1", ""}, "1, 21, 14, 14", s2},
    {"Conv", {"1, 64, 7, 7", "53, 64, 1, 1", "53"}, "1, 53, 7, 7", NULL},
    {"Gemm", {"100, 300", "300, 52", "100, 52"}, "100, 52", NULL},
    {"Gemm", {"13, 20", "68, 20", ""}, "13, 68", nt},
    {"MatMul", {"37, 260", "260, 36", ""}, "37, 36", NULL},
    {"Gemm", {"9, 30", "30, 1028", ""}, "9, 1028", NULL},
    {"Gemm", {"50, 33", "33, 24", ""}, "50, 24", NULL},
};

static void test_gemm_tail(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g =
      program("tails", tails, G_N_ELEMENTS(tails), WEIR_DTYPE_F32);
  /* the convolutions on the usual tile (the shape rule would take the
   * transposed one for some) */
  WeirState *st = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < st->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(st->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY && g_str_equal(n->op, "Conv")) {
      const char *ps[] = {WEIR_GEMM_PARAM_ORIENT "=1"};
      weir_node_set_attr_strings(n, "impl_params", ps, 1);
    }
  }
  check_program(g, tails, G_N_ELEMENTS(tails), WEIR_DTYPE_F32);
  /* which blockings have the tail: AVX-512 f32 (8 x 48, two A panels to a
   * vector), not AVX2 (6 x 16), the portable tile (4 x 16: its 4 columns
   * fill a vector), f64, or a node's own MR of 4 */
  WeirHwProfile hw = {.isa = WEIR_HW_ISA_AVX512,
                      .l1d_bytes = 48 * 1024,
                      .l2_bytes = 1024 * 1024,
                      .logical_cores = 2};
  WeirGemmBlocking b;
  weir_kernel_gemm_blocking(&hw, WEIR_DTYPE_F32, &b);
  assert_true(weir_kernel_gemm_has_tail(&b));
  g_autofree char *text = weir_kernel_gemm_text(WEIR_DTYPE_F32, &b);
  assert_non_null(strstr(text, "weir_gemm_ukp_tab_f32[tr - 1]("));
  assert_non_null(strstr(text, "nc % 16 <= 8 ? nc % 16 : 0;"));
  b.mr = 4;
  assert_false(weir_kernel_gemm_has_tail(&b));
  weir_kernel_gemm_blocking(&hw, WEIR_DTYPE_F64, &b);
  assert_false(weir_kernel_gemm_has_tail(&b));
  g_autofree char *t64 = weir_kernel_gemm_text(WEIR_DTYPE_F64, &b);
  assert_null(strstr(t64, "weir_gemm_ukp_tab"));
  assert_non_null(strstr(t64, "nc % 8 <= 0 ? nc % 8 : 0;"));
  hw.isa = WEIR_HW_ISA_AVX2;
  weir_kernel_gemm_blocking(&hw, WEIR_DTYPE_F32, &b);
  assert_false(weir_kernel_gemm_has_tail(&b));
  hw.isa = WEIR_HW_ISA_GENERIC;
  weir_kernel_gemm_blocking(&hw, WEIR_DTYPE_F32, &b);
  assert_false(weir_kernel_gemm_has_tail(&b));
  g_autofree char *tg = weir_kernel_gemm_text(WEIR_DTYPE_F32, &b);
  assert_null(strstr(tg, "weir_gemm_ukp_tab"));
}

/* ------------------------------- strided patches packed from runs */

static void s2_p2(WeirNode *n) {
  set_geo(n, 1, 2, 1, 2, 2, 2, 2);
}
static void s1_asym(WeirNode *n) {
  set_geo(n, 1, 1, 1, 2, 0, 0, 1);
}

/* The patches of maps from half a vector to NR - 1 wide at stride 1 or
 * 2, packed from segments of output rows with masked loads and permutes
 * on AVX-512 (s2conv14p; the other ISAs and $WEIR_GEMM_PACK_RUNS 0 keep
 * the gathers or the scalar table).  The usual tile (48-wide panels, 16
 * lanes, maps 8 to 47 wide): ResNet's strided 3x3 onto 28x28 (the panels
 * straddle output rows) with a ReLU, a 3x3 at stride 2 onto 14x14 with
 * K = 270 in two k blocks cut inside a channel, a 1x1 downsample from an
 * odd 27x27, the narrowest map (8x8) and the widest (47x47: N past NC)
 * at stride 2, a 5x5 with padding 2, dilation with stride and asymmetric
 * padding, stride 1 with asymmetric padding, a residual.  The transposed
 * tile forced (orient=2: 8-wide panels, 8 lanes, maps 4 to 7 wide):
 * ResNet's 3x3 on 7x7 (K 900: two k blocks), its strided 3x3 from 14x14 with a
 * residual, a 1x1 at stride 2 from 13x13, the narrowest map (4x4), and
 * dilation with stride and asymmetric padding.  Each program is checked
 * with the segments from ow 8 (the default: the transposed tile's maps
 * gathered), never (0), from ow 16 (the 8x8 and 14x14 maps gathered too)
 * and from ow 4 (the transposed tile's maps from segments). */
static const Node runs[] = {
    {"Conv",
     {"1, 9, 56, 56", "16, 9, 3, 3", "16"},
     "1, 16, 28, 28",
     s2_p1,
     "y = max(x, 0.0)",
     FALSE,
     "weir + clip"},
    {"Conv", {"1, 30, 28, 28", "12, 30, 3, 3", "12"}, "1, 12, 14, 14", s2_p1},
    {"Conv", {"1, 20, 27, 27", "24, 20, 1, 1", "24"}, "1, 24, 14, 14", s2},
    {"Conv", {"1, 3, 16, 16", "5, 3, 3, 3", "5"}, "1, 5, 8, 8", s2_p1},
    {"Conv", {"1, 2, 94, 94", "4, 2, 3, 3", ""}, "1, 4, 47, 47", s2_p1},
    {"Conv", {"1, 3, 40, 38", "6, 3, 5, 5", "6"}, "1, 6, 20, 19", s2_p2},
    {"Conv", {"1, 4, 21, 33", "7, 4, 3, 3", "7"}, "1, 7, 10, 15", dil_s2},
    {"Conv", {"1, 5, 13, 20", "6, 5, 3, 3", "6"}, "1, 6, 13, 19", s1_asym},
    {"Conv",
     {"1, 8, 24, 24", "10, 8, 3, 3", "10"},
     "1, 10, 12, 12",
     s2_p1,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    /* the transposed tile (n9 on) */
    {"Conv", {"1, 100, 7, 7", "50, 100, 3, 3", "50"}, "1, 50, 7, 7", pad1},
    {"Conv",
     {"1, 24, 14, 14", "20, 24, 3, 3", "20"},
     "1, 20, 7, 7",
     s2_p1,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv", {"1, 16, 13, 13", "30, 16, 1, 1", "30"}, "1, 30, 7, 7", s2},
    {"Conv", {"1, 6, 8, 8", "7, 6, 3, 3", "7"}, "1, 7, 4, 4", s2_p1},
    {"Conv", {"1, 4, 15, 17", "5, 4, 3, 3", "5"}, "1, 5, 7, 7", dil_s2},
};

static void test_conv_runs(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g =
      program("runs", runs, G_N_ELEMENTS(runs), WEIR_DTYPE_F32);
  WeirState *st = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < st->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(st->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY && n->label[0] == 'n' &&
        g_ascii_strtoll(n->label + 1, NULL, 10) >= 9) {
      const char *ps[] = {WEIR_GEMM_PARAM_ORIENT "=2"};
      weir_node_set_attr_strings(n, "impl_params", ps, 1);
    }
  }
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  static const char *const envs[] = {NULL, "0", "16", "4"};
  g_autofree char *sig = weir_kernels_signature();
  for (guint e = 0; e < G_N_ELEMENTS(envs); e++) {
    if (envs[e])
      g_setenv("WEIR_GEMM_PACK_RUNS", envs[e], TRUE);
    check_program(g, runs, G_N_ELEMENTS(runs), WEIR_DTYPE_F32);
    /* the threshold is in the GEMM's text (f32 on AVX-512), and the
     * kernels' part of the cache key says when the environment changed
     * it */
    g_autoptr(WeirGraph) gw = weir_graph_copy(g);
    WeirState *sw = g_ptr_array_index(gw->states, 0);
    for (guint i = 0; i < sw->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(sw->nodes, i);
      if (n->kind == WEIR_NODE_LIBRARY)
        weir_node_set_attr_string(n, "impl", "weir");
    }
    g_autofree char *src = weir_codegen_c(gw, NULL, &err);
    if (!src)
      fail_msg("%s", err->message);
    if (hw->isa == WEIR_HW_ISA_AVX512) {
      const guint64 v = envs[e] ? g_ascii_strtoull(envs[e], NULL, 10) : 0;
      g_autofree char *rule =
          g_strdup_printf("ow >= %u &&", !envs[e] ? WEIR_GEMM_PACK_RUNS
                                         : v == 0 ? (guint)G_MAXINT32
                                                  : (guint)v);
      if (!strstr(src, rule) || !strstr(src, "weir_gemm_pack_runs_f32(") ||
          !strstr(src, "weir_gemm_tpack_runs_f32("))
        fail_msg("no '%s' and runs in the generated GEMM", rule);
    } else if (strstr(src, "weir_gemm_pack_runs")) {
      fail_msg("runs packed on %s", weir_hw_isa_name(hw->isa));
    }
    g_autofree char *sig1 = weir_kernels_signature();
    if (envs[e])
      assert_string_not_equal(sig, sig1);
    else
      assert_string_equal(sig, sig1);
    g_unsetenv("WEIR_GEMM_PACK_RUNS");
  }
  /* not a number: the default */
  g_setenv("WEIR_GEMM_PACK_RUNS", "wide", TRUE);
  assert_int_equal(weir_kernel_gemm_pack_runs(), WEIR_GEMM_PACK_RUNS);
  g_unsetenv("WEIR_GEMM_PACK_RUNS");
}

/* ------------------------------------------- a sample with epilogues */

static void test_lenet_epilogues(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autofree char *path =
      g_strdup_printf("%s/samples/models/lenet.onnx", WEIR_SRCDIR);
  g_autofree char *in =
      g_strdup_printf("%s/samples/models/lenet/input_0.pb", WEIR_SRCDIR);
  g_autoptr(WeirTensor) input = weir_tensor_load(in, NULL, &err);
  assert_non_null(input);
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  GArray *shape0 = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_vals(shape0, input->shape, input->rank);
  g_hash_table_insert(shapes, (gpointer) "input", shape0);
  WeirOnnxImportOptions opts = {.input_shapes = shapes};
  g_autoptr(WeirGraph) g = weir_onnx_import(path, &opts, &err);
  if (!g)
    fail_msg("lenet: %s", err->message);
  g_autofree char *rpath =
      g_strdup_printf("%s/samples/recipes/lenet.json", WEIR_SRCDIR);
  g_autoptr(WeirRecipe) r = weir_recipe_load(rpath, &err);
  assert_non_null(r);
  if (!weir_recipe_apply(g, r, NULL, NULL, &err))
    fail_msg("lenet recipe: %s", err->message);
  guint fused = 0, set = 0;
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_LIBRARY ||
          (g_strcmp0(n->op, "Gemm") != 0 && g_strcmp0(n->op, "Conv") != 0 &&
           g_strcmp0(n->op, "MatMul") != 0))
        continue;
      fused += weir_node_attr(n, "epilogue") != NULL;
      const WeirNativeImpl *ni = weir_native_lookup(n->op, "weir");
      g_autofree char *why = NULL;
      if (ni->accepts(g, s, n, &why)) {
        weir_node_set_attr_string(n, "impl", "weir");
        set++;
      }
    }
  }
  assert_true(fused > 0); /* the recipe fuses epilogues */
  assert_true(set > 0);
  g_autoptr(GPtrArray) abi = weir_codegen_arguments(g);
  g_autoptr(GHashTable) args = tensors_new();
  const char *out_name = NULL;
  for (guint a = 0; a < abi->len; a++) {
    const WeirContainer *c = g_ptr_array_index(abi, a);
    gint64 shape[8] = {0};
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(g_ptr_array_index(c->shape, d), NULL,
                                 &shape[d], NULL));
    if (strcmp(c->name, "input") == 0) {
      g_hash_table_replace(args, g_strdup(c->name), weir_tensor_copy(input));
    } else {
      g_hash_table_replace(args, g_strdup(c->name),
                           weir_tensor_new(c->dtype, c->shape->len, shape));
      out_name = c->name;
    }
  }
  assert_non_null(out_name);
  Fixture *f = fixture_new_shared();
  f->opts.flags = FLAGS;
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("lenet: %s", err->message);
  g_autofree char *exp =
      g_strdup_printf("%s/samples/models/lenet/output_0.pb", WEIR_SRCDIR);
  g_autoptr(WeirTensor) torch = weir_tensor_load(exp, NULL, &err);
  assert_non_null(torch);
  for (int threads = 1; threads <= 2; threads++) {
    assert_true(weir_kernel_set_threads(k, threads, &err));
    g_autoptr(GHashTable) got = copy_args(args);
    if (!weir_kernel_run(k, NULL, got, &err))
      fail_msg("lenet: %s", err->message);
    if (!weir_tensor_allclose(g_hash_table_lookup(got, out_name), torch, 1e-4,
                              1e-5, NULL, &err))
      fail_msg("lenet, weir, %d threads, vs PyTorch: %s", threads,
               err->message);
  }
  fixture_free(f);
}

/* The blocking follows the profile: the microtile from the ISA, KC from
 * L1, NC and MC from L2, each a multiple of its tile. */
static void test_blocking(void **state) {
  (void)state;
  WeirHwProfile hw = {.isa = WEIR_HW_ISA_AVX512,
                      .l1d_bytes = 48 * 1024,
                      .l2_bytes = 2 * 1024 * 1024};
  WeirGemmBlocking b;
  weir_kernel_gemm_blocking(&hw, WEIR_DTYPE_F32, &b);
  assert_int_equal(b.vl, 16);
  assert_int_equal(b.nr, b.nv * b.vl);
  assert_int_equal(b.kc, 256);
  assert_int_equal(b.nc % b.nr, 0);
  assert_int_equal(b.mc % b.mr, 0);
  assert_true((gint64)b.kc * b.nc * 4 <= hw.l2_bytes / 2);
  hw.isa = WEIR_HW_ISA_AVX2;
  hw.l1d_bytes = 32 * 1024;
  hw.l2_bytes = 256 * 1024;
  weir_kernel_gemm_blocking(&hw, WEIR_DTYPE_F64, &b);
  assert_int_equal(b.vl, 4);
  assert_true(b.kc >= 64 && b.kc <= 512 && b.kc % 16 == 0);
  assert_true((gint64)b.kc * b.nc * 8 <= hw.l2_bytes / 2);
  /* the text names the ISA and the sizes, so the cache key covers them */
  g_autofree char *text = weir_kernel_gemm_text(WEIR_DTYPE_F64, &b);
  g_autofree char *head = g_strdup_printf(
      "for avx2+fma:\n * microtile MR %u x NR %u (%u vectors of %u), blocks "
      "KC %u,\n * MC %u, NC %u",
      b.mr, b.nr, b.nv, b.vl, b.kc, b.mc, b.nc);
  if (!strstr(text, head))
    fail_msg("no '%s' in the GEMM text", head);
}

/* Each thread of a call packs into its own buffers: room for one per
 * logical core of the profile, and no barrier or work-shared loop (whose
 * implicit barrier puts the waiting thread to sleep) in the driver. */
static void test_thread_slots(void **state) {
  (void)state;
  WeirHwProfile hw = {.isa = WEIR_HW_ISA_AVX512,
                      .l1d_bytes = 48 * 1024,
                      .l2_bytes = 2 * 1024 * 1024,
                      .logical_cores = 1};
  WeirGemmBlocking b1, b3;
  weir_kernel_gemm_blocking(&hw, WEIR_DTYPE_F32, &b1);
  hw.logical_cores = 3;
  weir_kernel_gemm_blocking(&hw, WEIR_DTYPE_F32, &b3);
  assert_int_equal(b1.threads, 1);
  assert_int_equal(b3.threads, 3);
  hw.logical_cores = 1000;
  WeirGemmBlocking bmax;
  weir_kernel_gemm_blocking(&hw, WEIR_DTYPE_F32, &bmax);
  assert_int_equal(bmax.threads, WEIR_GEMM_MAX_THREADS);
  /* the work space: one slot of packing buffers per thread */
  g_autoptr(WeirExpr) m = weir_expr_const(300);
  g_autoptr(WeirExpr) n = weir_expr_const(200);
  g_autoptr(WeirExpr) k = weir_expr_const(700);
  g_autoptr(WeirExpr) w1 =
      weir_kernel_gemm_work_bytes(WEIR_DTYPE_F32, &b1, m, n, k);
  g_autoptr(WeirExpr) w3 =
      weir_kernel_gemm_work_bytes(WEIR_DTYPE_F32, &b3, m, n, k);
  gint64 v1 = 0, v3 = 0;
  assert_true(weir_expr_is_const(w1, &v1) && weir_expr_is_const(w3, &v3));
  assert_true(v1 > 0);
  assert_int_equal(v3, 3 * v1);
  g_autofree char *text = weir_kernel_gemm_text(WEIR_DTYPE_F32, &b3);
  assert_non_null(strstr(text, "packing\n * buffers for 3 threads"));
  assert_null(strstr(text, "omp barrier"));
  assert_null(strstr(text, "omp for"));
  assert_non_null(strstr(text, "num_threads(nthr)"));
}

/* The compile-cache key covers the kernels' ISA: the same program with
 * $WEIR_ISA lowered gets another key (and the same one again without). */
static void test_key_covers_isa(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = program("gemms", gemms, 2, WEIR_DTYPE_F32);
  WeirCompileOptions opts = {.flags = FLAGS};
  g_unsetenv("WEIR_ISA");
  g_autofree char *k1 = weir_kernel_key(g, &opts, &err);
  assert_non_null(k1);
  g_setenv("WEIR_ISA", "generic", TRUE);
  g_autofree char *k2 = weir_kernel_key(g, &opts, &err);
  g_unsetenv("WEIR_ISA");
  g_autofree char *k3 = weir_kernel_key(g, &opts, &err);
  assert_string_equal(k1, k3);
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  if (hw->isa != WEIR_HW_ISA_GENERIC)
    assert_string_not_equal(k1, k2);
}

/* ------------------------------------- several images per GEMM call */

/* Small output maps at batch > 1 (batch14m): nb images side by side as
 * the GEMM's columns, the product scattered to y with the residual and
 * the activation: one chunk of all 32 images (4x4 maps), chunks with a
 * remainder (14x14: 5 + 5 + 2), 1x1, 3x3 and 7x7 maps, stride 2,
 * padding, groups, bias, ReLU, clip, a residual; batch 1 and a 16x16 map
 * keep one image per call. */
static const Node batched[] = {
    {"Conv",
     {"32, 6, 4, 4", "10, 6, 3, 3", "10"},
     "32, 10, 4, 4",
     pad1,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv",
     {"5, 4, 8, 8", "7, 4, 3, 3", ""},
     "5, 7, 8, 8",
     pad1,
     "y = max(x, 0.0)",
     FALSE,
     "weir + clip"},
    {"Conv",
     {"3, 5, 14, 14", "9, 5, 3, 3", "9"},
     "3, 9, 7, 7",
     s2_p1,
     "y = x + r",
     TRUE,
     "weir + residual"},
    {"Conv", {"2, 3, 3, 3", "5, 3, 3, 3", "5"}, "2, 5, 1, 1", NULL},
    {"Conv",
     {"32, 8, 3, 3", "6, 4, 1, 1", "6"},
     "32, 6, 3, 3",
     g2,
     "y = min(max(x + r, 0.0), 6.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv",
     {"12, 3, 14, 14", "4, 3, 1, 1", "4"},
     "12, 4, 14, 14",
     NULL,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv",
     {"3, 4, 8, 8", "6, 2, 3, 3", "6"},
     "3, 6, 4, 4",
     g2_s2_p1,
     "y = max(x, 0.0)",
     FALSE,
     "weir + clip"},
    {"Conv", {"1, 4, 8, 8", "5, 4, 3, 3", "5"}, "1, 5, 8, 8", pad1},
    {"Conv", {"2, 3, 16, 16", "4, 3, 1, 1", ""}, "2, 4, 16, 16", NULL},
};
/* images per GEMM call of each node (1: none said) */
static const int batched_nb[] = {32, 5, 3, 2, 32, 5, 3, 1, 1};

/* Builds the convolution nodes nd[0 .. count-1] of dtype dt as program
 * `name` (f64 keeps the epilogues as separate maps), checks it against the
 * interpreter (check_program), and returns its C with every library node
 * on Weir's kernels, for the marks of the images per call. */
static char *conv_source(const char *name, const Node *nd, guint count,
                         WeirDType dt) {
  g_autoptr(GError) err = NULL;
  Node *nodes = g_memdup2(nd, sizeof *nd * count);
  for (guint n = 0; n < count; n++)
    if (dt == WEIR_DTYPE_F64 && nodes[n].epi)
      nodes[n].mark = "";
  g_autoptr(WeirGraph) g = program(name, nodes, count, dt);
  check_program(g, nodes, count, dt);
  g_free(nodes);
  g_autoptr(WeirGraph) gw = weir_graph_copy(g);
  for (guint s = 0; s < gw->states->len; s++) {
    WeirState *st = g_ptr_array_index(gw->states, s);
    for (guint k = 0; k < st->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(st->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY)
        weir_node_set_attr_string(n, "impl", "weir");
    }
  }
  char *src = weir_codegen_c(gw, NULL, &err);
  if (!src)
    fail_msg("%s: %s", name, err->message);
  return src;
}

static void check_batched(WeirDType dt) {
  g_autofree char *src =
      conv_source("batched", batched, G_N_ELEMENTS(batched), dt);
  for (guint n = 0; n < G_N_ELEMENTS(batched); n++) {
    g_autofree char *want =
        g_strdup_printf("%d images per GEMM", batched_nb[n]);
    check_mark(src, "batched", n, batched_nb[n] > 1 ? want : "",
               "images per GEMM");
  }
}

static void test_conv_batched_f32(void **state) {
  (void)state;
  check_batched(WEIR_DTYPE_F32);
}

static void test_conv_batched_f64(void **state) {
  (void)state;
  check_batched(WEIR_DTYPE_F64);
}

/* The threads take whole images (tlocf19): with as many images as
 * threads (a multiple of the thread count, or four or more a thread) each
 * thread runs the GEMMs of the contiguous images schedule(static) gives
 * it, nbt images a call (min(nb, ceil(n / cores))).  Generated for 3
 * cores ($WEIR_HW_CORES), run at 1, 2 and 3 threads: 13 images on 8x8
 * (nbt 5: at 2 threads 7 + 6 images, calls of 5 + 2 and 5 + 1; at 3
 * threads 5 + 4 + 4), 26 on 14x14 with a residual (nb 5, nbt 5: 13 a
 * thread at 2 threads, 5 + 5 + 3), 9 on 4x4 with groups and stride 2
 * (nbt 3: 5 + 4 at 2 threads, 3 each at 3), 7 on 8x8 (at 2 and 3 threads
 * neither a multiple nor four a thread: the column split as before), 2
 * on 4x4 (fewer images than cores: no such path); one image a call
 * (maps of 256 pixels): 13 on 16x16 with a residual (7 + 6, 5 + 4 + 4),
 * 10 on 16x16, 1x1 with groups (5 + 5 at 2 threads; at 3 the per-image
 * column split). */
static const Node by_image[] = {
    {"Conv",
     {"13, 5, 8, 8", "11, 5, 3, 3", "11"},
     "13, 11, 8, 8",
     pad1,
     "y = max(x, 0.0)",
     FALSE,
     "weir + clip"},
    {"Conv",
     {"26, 3, 14, 14", "9, 3, 3, 3", "9"},
     "26, 9, 14, 14",
     pad1,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv",
     {"9, 4, 8, 8", "6, 2, 3, 3", "6"},
     "9, 6, 4, 4",
     g2_s2_p1,
     "y = x + r",
     TRUE,
     "weir + residual"},
    {"Conv", {"7, 6, 8, 8", "5, 6, 3, 3", ""}, "7, 5, 8, 8", pad1},
    {"Conv", {"2, 3, 4, 4", "4, 3, 1, 1", "4"}, "2, 4, 4, 4", NULL},
    {"Conv",
     {"13, 4, 16, 16", "6, 4, 3, 3", "6"},
     "13, 6, 16, 16",
     pad1,
     "y = max(x + r, 0.0)",
     TRUE,
     "weir + residual + clip"},
    {"Conv", {"10, 8, 16, 16", "6, 4, 1, 1", "6"}, "10, 6, 16, 16", g2},
};
/* images per call (nb) and when the threads take whole images (nbt; 0:
 * not said) */
static const int by_image_nb[] = {13, 5, 9, 7, 2, 1, 1};
static const int by_image_nbt[] = {5, 5, 3, 3, 0, 1, 1};

static void check_by_image(WeirDType dt) {
  g_setenv("WEIR_HW_CORES", "3", TRUE);
  g_autofree char *src =
      conv_source("by_image", by_image, G_N_ELEMENTS(by_image), dt);
  g_unsetenv("WEIR_HW_CORES");
  for (guint n = 0; n < G_N_ELEMENTS(by_image); n++) {
    g_autofree char *want =
        by_image_nb[n] == 1 ? g_strdup("")
        : by_image_nbt[n] > 0
            ? g_strdup_printf("%d images per GEMM (%d when the threads take "
                              "whole images)",
                              by_image_nb[n], by_image_nbt[n])
            : g_strdup_printf("%d images per GEMM */", by_image_nb[n]);
    check_mark(src, "by_image", n, want, "images per GEMM");
  }
}

static void test_conv_by_image_f32(void **state) {
  (void)state;
  check_by_image(WEIR_DTYPE_F32);
}

static void test_conv_by_image_f64(void **state) {
  (void)state;
  check_by_image(WEIR_DTYPE_F64);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_blocking),
      cmocka_unit_test(test_key_covers_isa),
      cmocka_unit_test(test_thread_slots),
      cmocka_unit_test(test_gemm_f32),
      cmocka_unit_test(test_gemm_f64),
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_conv),
      cmocka_unit_test(test_conv_channels),
      cmocka_unit_test(test_conv_batched_f32),
      cmocka_unit_test(test_conv_batched_f64),
      cmocka_unit_test(test_conv_by_image_f32),
      cmocka_unit_test(test_conv_by_image_f64),
      cmocka_unit_test(test_conv_inplace),
      cmocka_unit_test(test_gemm_tail),
      cmocka_unit_test(test_conv_runs),
      cmocka_unit_test(test_epilogues),
      cmocka_unit_test(test_own_blocking),
      cmocka_unit_test(test_thread_split),
      cmocka_unit_test(test_lenet_epilogues),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
