/* reduce.c — implementation "weir" of SumTo, ReduceSum and ReduceMean
 * (docs/native.md, "Sums over axes"): the input viewed as [s0, k0, s, k1]
 * (weir_native_reduce_layout, ir/lower/native-choice.c) and summed over s0
 * and s into the [k0, k1] output.
 *
 * Two loop shapes, both reading the input in its storage order:
 *  - k1 == 1 (the summed axes innermost, or a plane per kept index: a batch
 *    norm's sum over N, H, W of NCHW): per k0, the runs of s contiguous
 *    values summed into 32 partial sums (vectorized) added pairwise;
 *  - k1 > 1 (the innermost axis kept: a bias gradient's sum over the rows
 *    of [rows, width]): per k0 and block of columns, every row added into
 *    a local vector of column sums (the loop over the block vectorizes; the
 *    block is the whole width up to 1024 elements, or the width cut into
 *    one block per thread, so each thread streams contiguous pieces of
 *    rows).
 * Parallel over the (k0, block) tasks; when there are fewer tasks than
 * threads and the output is small (at most WEIR_REDUCE_PART_CAP values),
 * the rows are also cut into up to WEIR_REDUCE_CHUNKS chunks whose partial
 * results go to the node's scratch block and are added in chunk order
 * afterwards.  No atomics; the result depends on the thread count only
 * (the chunks), never on timing.  Small inputs (below 32768 values) run
 * on one thread.  ReduceMean divides each sum by s0 * s as the pure
 * expansion does.
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-expr.h"
#include "weir-kernels.h"

#define PART_CAP 16384
#define CHUNKS 16

/* clang-format off */
static const char reduce_text[] =
    "#ifdef _OPENMP\n"
    "#include <omp.h>\n"
    "#endif\n"
    "/* Weir's sum over axes (SumTo, ReduceSum, ReduceMean, \"weir\"): x viewed\n"
    " * as [s0, k0, s, k1], y[k0, k1] the sum over s0 and s (divided by\n"
    " * s0 * s when mean).  Tasks (k0, block of columns) split over the\n"
    " * threads; with fewer tasks than threads the rows are cut into chunks\n"
    " * whose partials (part, up to 16 x k0 * k1 values when k0 * k1 <= cap)\n"
    " * are added in chunk order. */\n"
    "#define WEIR_REDUCE_CHUNKS 16\n"
    "#define WEIR_REDUCE_BLOCK 1024\n"
    "static @T@ weir_reduce_run_@S@(const @T@ *x, int64_t n) {\n"
    "  @T@ p[32] = {0};\n"
    "  int64_t i = 0;\n"
    "  for (; i + 32 <= n; i += 32)\n"
    "    for (int j = 0; j < 32; j++)\n"
    "      p[j] += x[i + j];\n"
    "  for (int j = 0; i < n; i++, j++)\n"
    "    p[j] += x[i];\n"
    "  for (int w = 16; w > 0; w /= 2)\n"
    "    for (int j = 0; j < w; j++)\n"
    "      p[j] += p[j + w];\n"
    "  return p[0];\n"
    "}\n"
    "/* the rows [r0, r1) of task (k0, columns [j0, j0 + nj)) into dst */\n"
    "static void weir_reduce_task_@S@(const @T@ *x, int64_t k0n, int64_t sn,\n"
    "                                 int64_t k1n, int64_t k0, int64_t j0,\n"
    "                                 int64_t nj, int64_t r0, int64_t r1,\n"
    "                                 @T@ *dst) {\n"
    "  if (r0 >= r1) {\n"
    "    for (int64_t j = 0; j < nj; j++)\n"
    "      dst[j] = 0;\n"
    "    return;\n"
    "  }\n"
    "  int64_t s0 = r0 / sn, s = r0 - s0 * sn;\n"
    "  if (k1n == 1) {\n"
    "    /* runs of up to sn contiguous values */\n"
    "    @T@ acc = 0;\n"
    "    for (int64_t r = r0; r < r1;) {\n"
    "      int64_t len = sn - s < r1 - r ? sn - s : r1 - r;\n"
    "      acc += weir_reduce_run_@S@(x + (s0 * k0n + k0) * sn + s, len);\n"
    "      r += len;\n"
    "      s0++;\n"
    "      s = 0;\n"
    "    }\n"
    "    dst[0] = acc;\n"
    "    return;\n"
    "  }\n"
    "  @T@ acc[WEIR_REDUCE_BLOCK];\n"
    "  for (int64_t j = 0; j < nj; j++)\n"
    "    acc[j] = 0;\n"
    "  for (int64_t r = r0; r < r1; r++) {\n"
    "    const @T@ *row = x + ((s0 * k0n + k0) * sn + s) * k1n + j0;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp simd\n"
    "#endif\n"
    "    for (int64_t j = 0; j < nj; j++)\n"
    "      acc[j] += row[j];\n"
    "    if (++s == sn) {\n"
    "      s = 0;\n"
    "      s0++;\n"
    "    }\n"
    "  }\n"
    "  for (int64_t j = 0; j < nj; j++)\n"
    "    dst[j] = acc[j];\n"
    "}\n"
    "static void weir_reduce_@S@(const @T@ *x, @T@ *y, int64_t s0n, int64_t k0n,\n"
    "                            int64_t sn, int64_t k1n, int mean,\n"
    "                            @T@ *part, int64_t cap) {\n"
    "  const int64_t rows = s0n * sn, outs = k0n * k1n;\n"
    "  if (outs == 0)\n"
    "    return;\n"
    "  int nt = 1;\n"
    "#ifdef _OPENMP\n"
    "  nt = omp_get_max_threads();\n"
    "#endif\n"
    "  if (rows * outs < 32768)\n"
    "    nt = 1;\n"
    "  /* columns per block: the width up to WEIR_REDUCE_BLOCK, narrower\n"
    "   * (multiples of 16, at least 64) to give every thread a block */\n"
    "  int64_t cb = k1n < WEIR_REDUCE_BLOCK ? k1n : WEIR_REDUCE_BLOCK;\n"
    "  if (k1n > 1 && k0n * ((k1n + cb - 1) / cb) < nt) {\n"
    "    int64_t want = (nt + k0n - 1) / k0n;\n"
    "    int64_t w = ((k1n + want - 1) / want + 15) / 16 * 16;\n"
    "    if (w < 64)\n"
    "      w = 64;\n"
    "    if (w < cb)\n"
    "      cb = w;\n"
    "  }\n"
    "  const int64_t nb = (k1n + cb - 1) / cb, tasks = k0n * nb;\n"
    "  int64_t nc = 1;\n"
    "  if (tasks < nt && outs <= cap && rows > 1) {\n"
    "    nc = (nt + tasks - 1) / tasks;\n"
    "    if (nc > WEIR_REDUCE_CHUNKS)\n"
    "      nc = WEIR_REDUCE_CHUNKS;\n"
    "    if (nc > rows)\n"
    "      nc = rows;\n"
    "  }\n"
    "  const int64_t all = tasks * nc;\n"
    "  const @T@ div = (@T@)rows;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1 && all > 1)\n"
    "#endif\n"
    "  for (int64_t q = 0; q < all; q++) {\n"
    "    const int64_t c = q / tasks, t = q - c * tasks;\n"
    "    const int64_t k0 = t / nb, j0 = (t - k0 * nb) * cb;\n"
    "    const int64_t nj = k1n - j0 < cb ? k1n - j0 : cb;\n"
    "    @T@ *dst = nc == 1 ? y + k0 * k1n + j0 : part + c * outs + k0 * k1n + j0;\n"
    "    weir_reduce_task_@S@(x, k0n, sn, k1n, k0, j0, nj, rows * c / nc,\n"
    "                         rows * (c + 1) / nc, dst);\n"
    "    if (nc == 1 && mean)\n"
    "      for (int64_t j = 0; j < nj; j++)\n"
    "        dst[j] = dst[j] / div;\n"
    "  }\n"
    "  if (nc > 1)\n"
    "    for (int64_t i = 0; i < outs; i++) {\n"
    "      @T@ v = part[i];\n"
    "      for (int64_t c = 1; c < nc; c++)\n"
    "        v += part[c * outs + i];\n"
    "      y[i] = mean ? v / div : v;\n"
    "    }\n"
    "}\n";
/* clang-format on */

/* The node's label, safe inside a C comment. (transfer full) */
static char *comment_label(const WeirNode *n) {
  char *l = weir_kernel_comment_label(n);
  return l;
}

static gboolean reduce_accepts(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n, char **reason) {
  const WeirContainer *x = weir_native_port(g, s, n, TRUE, 0);
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  if (!x || !y) {
    *reason = g_strdup(x ? "out0 is not connected" : "in0 is not connected");
    return FALSE;
  }
  if ((x->dtype != WEIR_DTYPE_F32 && x->dtype != WEIR_DTYPE_F64) ||
      y->dtype != x->dtype) {
    *reason = g_strdup_printf("'%s' is %s and '%s' %s; one dtype, f32 or "
                              "f64, needed",
                              x->name, weir_dtype_name(x->dtype), y->name,
                              weir_dtype_name(y->dtype));
    return FALSE;
  }
  if (!weir_kernel_row_major(x) || !weir_kernel_row_major(y)) {
    *reason = g_strdup_printf("'%s' is not stored row-major",
                              weir_kernel_row_major(x) ? y->name : x->name);
    return FALSE;
  }
  if (x == y) {
    *reason = g_strdup_printf("'%s' is both input and output", x->name);
    return FALSE;
  }
  WeirNativeReduce r;
  if (!weir_native_reduce_layout(g, s, n, &r, reason))
    return FALSE;
  weir_native_reduce_clear(&r);
  return TRUE;
}

static gboolean reduce_emit(WeirNativeEmit *e, GError **error) {
  g_autofree char *reason = NULL;
  if (!reduce_accepts(e->g, e->s, e->n, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
                e->n->id, e->n->label ? e->n->label : "", reason);
    return FALSE;
  }
  WeirNativeReduce r;
  if (!weir_native_reduce_layout(e->g, e->s, e->n, &r, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "node %u ('%s'): %s",
                e->n->id, e->n->label ? e->n->label : "", reason);
    return FALSE;
  }
  WeirDType t = e->out[0].c->dtype;
  const char *sfx = t == WEIR_DTYPE_F32 ? "f32" : "f64";
  const char *ct = t == WEIR_DTYPE_F32 ? "float" : "double";
  g_autofree char *hname = weir_kernel_instantiate("weir_reduce_@S@", t);
  g_autofree char *htext = weir_kernel_instantiate(reduce_text, t);
  e->helper(e, hname, htext);
  /* scratch for the chunks' partials: 16 x min(k0 * k1, cap) values */
  g_autoptr(WeirExpr) outs = weir_expr_mul(r.k0, r.k1);
  g_autoptr(WeirExpr) cap = weir_expr_const(PART_CAP);
  g_autoptr(WeirExpr) held = weir_expr_min(outs, cap);
  g_autoptr(WeirExpr) bytes =
      weir_expr_mul_const(held, CHUNKS * (gint64)weir_dtype_size(t));
  g_autofree char *scratch = e->scratch(e, bytes);
  g_autofree char *s0 = e->expr_c(e, r.s0), *k0 = e->expr_c(e, r.k0),
                  *sn = e->expr_c(e, r.s), *k1 = e->expr_c(e, r.k1);
  gboolean mean = strcmp(e->n->op, "ReduceMean") == 0;
  g_autofree char *lbl = comment_label(e->n);
  g_string_append_printf(e->code,
                         "/* %s '%s' (node %u): weir, [%s x %s x %s x %s] "
                         "%s over the first and third */\n",
                         e->n->op, lbl, e->n->id, s0, k0, sn, k1,
                         mean ? "averaged" : "summed");
  g_string_append_printf(e->code,
                         "weir_reduce_%s(%s, %s, %s, %s, %s, %s, %d, (%s *)%s, "
                         "%d);\n",
                         sfx, e->in[0].ptr, e->out[0].ptr, s0, k0, sn, k1,
                         mean ? 1 : 0, ct, scratch, PART_CAP);
  /* SumTo's second input only gave the shape */
  if (e->n->in_conns->len > 1 && e->in[1].c && e->in[1].ptr)
    g_string_append_printf(e->code, "(void)%s;\n", e->in[1].ptr);
  weir_native_reduce_clear(&r);
  return TRUE;
}

static const WeirNativeImpl sum_to_impl = {
    .op = "SumTo",
    .impl = "weir",
    .accepts = reduce_accepts,
    .emit = reduce_emit,
};

static const WeirNativeImpl reduce_sum_impl = {
    .op = "ReduceSum",
    .impl = "weir",
    .accepts = reduce_accepts,
    .emit = reduce_emit,
};

static const WeirNativeImpl reduce_mean_impl = {
    .op = "ReduceMean",
    .impl = "weir",
    .accepts = reduce_accepts,
    .emit = reduce_emit,
};

void weir_native_register_reduce(void) {
  weir_native_register(&sum_to_impl);
  weir_native_register(&reduce_sum_impl);
  weir_native_register(&reduce_mean_impl);
}
