/* native.c — the built-in native implementations of library nodes: the
 * emitters (BLAS Gemm/MatMul, im2col and direct Conv; the training backward
 * operators ConvGradFilter, ConvGradInput and MaxPoolGrad), registered by
 * weir_init() in the registry of ir/lower/native-choice.c, which also makes
 * the choice between them and the pure expansions.
 *
 * Conventions of the emitted code: every operand is a row-major container
 * (accepts() checks it) passed as a pointer to element 0; sizes are int64_t
 * C expressions of the program symbols.  Helper functions are templates
 * over the element type: "@T@" is the C type, "@B@" the BLAS prefix (s, d)
 * and "@S@" the name suffix (f32, f64).  Loops inside helpers carry OpenMP
 * pragmas guarded by _OPENMP, so a unit compiled without -fopenmp stays
 * warning-free.  BLAS calls are never made inside a parallel region:
 * OpenBLAS uses its own threads.
 *
 * The Gemm, MatMul and im2col Conv emitters take the GEMM they call as a
 * parameter (WeirNativeGemm, weir-kernels.h): cblas_<p>gemm for the
 * implementations registered here, Weir's weir_gemm_<sfx> for "weir"
 * (core/kernels/native-weir.c registers those with this parameter).
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-expand.h"
#include "weir-kernels.h"
#include "weir-native.h"
#include "weir-ops-linalg.h"
#include "weir-ops.h"
#include "weir-runtime.h"
#include "weir-validate.h"

void weir_native_register_builtin(void);

/* ---------------------------------------------------------------- operands */

static const WeirContainer *port(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n, gboolean input, guint k) {
  return weir_native_port(g, s, n, input, k);
}

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

static gboolean dim_is(const WeirContainer *c, guint d, gint64 v) {
  gint64 x;
  return weir_expr_is_const(dim(c, d), &x) && x == v;
}

static gboolean blas_dtype(WeirDType t) {
  return t == WEIR_DTYPE_F32 || t == WEIR_DTYPE_F64;
}

/* Checks that the given operands exist (when required), have one BLAS
 * dtype and are row-major. */
static gboolean check_operands(const WeirContainer *const *c, guint n,
                               guint required, char **reason) {
  for (guint i = 0; i < n; i++) {
    if (!c[i]) {
      if (i < required) {
        *reason = g_strdup_printf("operand %u is missing", i);
        return FALSE;
      }
      continue;
    }
    if (!blas_dtype(c[i]->dtype) || c[i]->dtype != c[0]->dtype) {
      *reason = g_strdup_printf("'%s' is %s; f32 or f64 (all alike) needed",
                                c[i]->name, weir_dtype_name(c[i]->dtype));
      return FALSE;
    }
    if (!weir_kernel_row_major(c[i])) {
      *reason = g_strdup_printf("'%s' is not stored row-major", c[i]->name);
      return FALSE;
    }
  }
  return TRUE;
}

/* ------------------------------------------------------------ templates */

/* sfx: the name suffix, NULL for the dtype's. */
static char *instantiate_sfx(const char *text, WeirDType t, const char *sfx) {
  gboolean f32 = t == WEIR_DTYPE_F32;
  GString *s = g_string_new(text);
  g_string_replace(s, "@T@", f32 ? "float" : "double", 0);
  g_string_replace(s, "@B@", f32 ? "s" : "d", 0);
  g_string_replace(s, "@S@", sfx ? sfx : f32 ? "f32" : "f64", 0);
  return g_string_free(s, FALSE);
}

static char *instantiate(const char *text, WeirDType t) {
  return instantiate_sfx(text, t, NULL);
}

static void use_helper(WeirNativeEmit *e, const char *name_tmpl,
                       const char *text_tmpl, WeirDType t) {
  g_autofree char *name = instantiate(name_tmpl, t);
  g_autofree char *text = instantiate(text_tmpl, t);
  e->helper(e, name, text);
}

static char *number(double v, WeirDType t) {
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.17g", v);
  if (!strpbrk(buf, ".eEn"))
    g_strlcat(buf, ".0", sizeof buf);
  return t == WEIR_DTYPE_F32 ? g_strdup_printf("%sf", buf) : g_strdup(buf);
}

static const char *label(const WeirNode *n) {
  return n->label && n->label[0] ? n->label : "";
}

/* "/ * Gemm 'x' (node 5): blas * /" with the label made comment-safe. */
static void emit_header(WeirNativeEmit *e, const char *impl) {
  g_autofree char *l = g_strdup(label(e->n));
  for (char *p = l; *p; p++)
    if (*p == '*' || *p == '/' || (guchar)*p < 0x20 || (guchar)*p >= 0x7f)
      *p = '_';
  g_string_append_printf(e->code, "/* %s '%s' (node %u): %s */\n", e->n->op, l,
                         e->n->id, impl);
}

static char *dim_c(WeirNativeEmit *e, const WeirContainer *c, guint d) {
  return e->expr_c(e, dim(c, d));
}

/* The product of dims [from, to) of c as C text ("1" when empty). */
static char *dims_product(WeirNativeEmit *e, const WeirContainer *c, guint from,
                          guint to) {
  g_autoptr(WeirExpr) p = weir_expr_const(1);
  for (guint d = from; d < to; d++) {
    WeirExpr *q = weir_expr_mul(p, dim(c, d));
    weir_expr_unref(p);
    p = q;
  }
  return e->expr_c(e, p);
}

/* The product of dims [from, to) of c as an expression (transfer full). */
static WeirExpr *dims_expr(const WeirContainer *c, guint from, guint to) {
  WeirExpr *p = weir_expr_const(1);
  for (guint d = from; d < to; d++) {
    WeirExpr *q = weir_expr_mul(p, dim(c, d));
    weir_expr_unref(p);
    p = q;
  }
  return p;
}

/* A scratch block of `elements` (taken over) elements of t for the node's
 * call, from the kernel's workspace: the C text of a typed pointer to it
 * ("(float *)scratch"). */
static char *scratch_of(WeirNativeEmit *e, WeirExpr *elements, WeirDType t) {
  g_autoptr(WeirExpr) el = elements;
  g_autoptr(WeirExpr) bytes =
      weir_expr_mul_const(el, (gint64)weir_dtype_size(t));
  g_autofree char *p = e->scratch(e, bytes);
  return g_strdup_printf("(%s *)%s", t == WEIR_DTYPE_F32 ? "float" : "double",
                         p);
}

static void use_blas(WeirNativeEmit *e) {
  e->library(e, "openblas");
}

/* ------------------------------------------------------------- the GEMM */

/* The operands of one GEMM call, row-major c = alpha op(a) op(b) + beta c,
 * as C text (borrowed). */
typedef struct {
  gboolean ta, tb;
  const char *m, *n, *k, *alpha, *a, *lda, *b, *ldb, *beta, *c, *ldc;
  /* Weir's GEMM only: ", bias, r, ldr, act, lo, hi, cb, scale" of the
   * epilogue in its store (weir_gemm_<id>_ep), or NULL */
  const char *ep;
  /* Weir's GEMM only: a "const float *" to op(b) pre-packed at load
   * (weir_kernel_gemm_prepack_b; weir_gemm_<id>_pb), or NULL */
  const char *bpk;
} GemmCall;

/* Prepares the calls of GEMM `which` for a node whose products are at
 * most m x n x k (borrowed expressions, NULL = 1): records the library or
 * the helper.  *name receives the function to call, *work the work-space
 * argument of Weir's GEMM (scratch of the kernel's workspace; NULL for
 * cblas), both owned.  FALSE for an invalid blocking attribute. */
static gboolean gemm_prepare(WeirNativeEmit *e, WeirNativeGemm which,
                             WeirDType t, const WeirExpr *m, const WeirExpr *n,
                             const WeirExpr *k, char **name, char **work,
                             GError **error) {
  if (which == WEIR_NATIVE_GEMM_CBLAS) {
    use_blas(e);
    *name = g_strdup(t == WEIR_DTYPE_F32 ? "cblas_sgemm" : "cblas_dgemm");
    *work = NULL;
    return TRUE;
  }
  WeirGemmBlocking bl;
  *work = weir_kernel_gemm_use(e, t, m, n, k, &bl, error);
  if (!*work)
    return FALSE;
  *name = weir_kernel_gemm_name(&bl);
  return TRUE;
}

/* Appends one call of GEMM `which` (function `name`) at indentation
 * `indent`; work is gemm_prepare's. */
static void gemm_call(WeirNativeEmit *e, WeirNativeGemm which, const char *name,
                      const char *indent, const GemmCall *c, const char *work) {
  if (which == WEIR_NATIVE_GEMM_CBLAS)
    g_string_append_printf(
        e->code,
        "%s%s(CblasRowMajor, %s, %s, (int)(%s), (int)(%s), "
        "(int)(%s), %s, %s, (int)(%s), %s, (int)(%s), %s, %s, (int)(%s));\n",
        indent, name, c->ta ? "CblasTrans" : "CblasNoTrans",
        c->tb ? "CblasTrans" : "CblasNoTrans", c->m, c->n, c->k, c->alpha, c->a,
        c->lda, c->b, c->ldb, c->beta, c->c, c->ldc);
  else if (c->bpk)
    g_string_append_printf(
        e->code,
        "%s%s |= %s_pb(%d, %d, %s, %s, %s, %s, %s, "
        "%s, %s, %s, %s, %s, %s, %s%s, %s);\n",
        indent, e->status, name, c->ta, c->tb, c->m, c->n, c->k, c->alpha, c->a,
        c->lda, c->b, c->bpk, c->ldb, c->beta, c->c, c->ldc,
        c->ep ? c->ep : ", NULL, NULL, 0, 0, 0, 0, NULL, 1", work);
  else
    g_string_append_printf(e->code,
                           "%s%s |= %s%s(%d, %d, %s, %s, %s, %s, %s, "
                           "%s, %s, %s, %s, %s, %s%s, %s);\n",
                           indent, e->status, name, c->ep ? "_ep" : "", c->ta,
                           c->tb, c->m, c->n, c->k, c->alpha, c->a, c->lda,
                           c->b, c->ldb, c->beta, c->c, c->ldc,
                           c->ep ? c->ep : "", work);
}

/* The node's epilogue for GEMM `which` (Weir's applies it in its store):
 * *args (owned) the arguments ", NULL, r + roff, ldr, act, lo, hi, cb,
 * scale" of
 * weir_gemm_<id>_ep, NULL when the node has none (or for cblas, which
 * never gets one: the code generator splits it off); *what the words for
 * the node's comment.  roff and ldr are C text. */
static gboolean gemm_epilogue(WeirNativeEmit *e, WeirNativeGemm which,
                              const char *roff, const char *ldr, char **args,
                              const char **what, GError **error) {
  *args = NULL;
  *what = "";
  if (which == WEIR_NATIVE_GEMM_CBLAS || !weir_epilogue_present(e->n))
    return TRUE;
  WeirEpilogueKind k;
  const char *r;
  g_autofree char *lo = NULL, *hi = NULL;
  if (!weir_kernel_epilogue_use(e, "Weir's GEMM", &k, &r, &lo, &hi, error))
    return FALSE;
  /* a bias per column (one row broadcast): row stride 0, no offset */
  g_autofree char *rp = k.residual < 0 ? g_strdup("NULL")
                        : k.per_column ? g_strdup(r)
                                       : g_strdup_printf("%s + %s", r, roff);
  /* beside a residual, the column bias is its own argument */
  const char *cb = k.colbias >= 0 ? e->epi[k.colbias].ptr : "NULL";
  if (!cb) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "node %u ('%s'): epilogue input epi%d has no container",
                e->n->id, e->n->label ? e->n->label : "", k.colbias);
    return FALSE;
  }
  char sc[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(sc, sizeof sc, "%.9g", k.scale);
  *args = g_strdup_printf(", NULL, %s, %s, %d, %s, %s, %s, %s%sf", rp,
                          k.per_column ? "0" : ldr, k.act, lo, hi, cb, sc,
                          strpbrk(sc, ".eEn") ? "" : ".0");
  *what = weir_kernel_epilogue_what(&k);
  return TRUE;
}

/* op(b) (k x n, b given as n x k when tb) pre-packed at load for Weir's
 * GEMM (weir_kernel_gemm_prepack_b): when b is a bound constant, the
 * sizes are constant and the call has enough rows m to take the packed
 * path (below half a microtile it reads b unpacked).  NULL otherwise.
 * (transfer full) */
static char *gemm_prepack_b(WeirNativeEmit *e, WeirNativeGemm which,
                            WeirDType t, const WeirContainer *b, gboolean tb,
                            const WeirExpr *m, const WeirExpr *k,
                            const WeirExpr *n) {
  gint64 cm, ck, cn;
  if (which == WEIR_NATIVE_GEMM_CBLAS || !b || !m || !k || !n ||
      !weir_expr_is_const(m, &cm) || !weir_expr_is_const(k, &ck) ||
      !weir_expr_is_const(n, &cn))
    return NULL;
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  WeirGemmBlocking bl;
  if (!weir_kernel_gemm_blocking_node(hw, t, e->n, &bl, NULL) ||
      cm < MAX(bl.mr / 2, 2))
    return NULL;
  return weir_kernel_gemm_prepack_b(e, t, &bl, b, tb, ck, cn);
}

/* The header word of the node's comment. */
static const char *gemm_impl_word(WeirNativeGemm which) {
  return which == WEIR_NATIVE_GEMM_CBLAS ? "blas" : "weir";
}

/* ------------------------------------------------------------------ Gemm */

gboolean weir_native_gemm_accepts(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, char **reason) {
  const WeirContainer *c[4] = {port(g, s, n, TRUE, 0), port(g, s, n, TRUE, 1),
                               port(g, s, n, FALSE, 0), port(g, s, n, TRUE, 2)};
  if (!check_operands(c, 4, 3, reason))
    return FALSE;
  if (c[0]->shape->len != 2 || c[1]->shape->len != 2 || c[2]->shape->len != 2 ||
      (c[3] && c[3]->shape->len > 2)) {
    *reason = g_strdup("A, B and Y must be matrices and C of rank <= 2");
    return FALSE;
  }
  return TRUE;
}

/* y[m x n] = beta * c (c broadcast): the helper of each GEMM, which is
 * named after it; only the signature's wrapping and the OpenMP clause
 * differ. */
static const char gemm_fill_body[] =
    "  for (int64_t i = 0; i < m; i++)\n"
    "    for (int64_t j = 0; j < n; j++)\n"
    "      y[i * n + j] = beta * c[(cr == 1 ? 0 : i) * cc + (cc == 1 ? 0 : "
    "j)];\n"
    "}\n";

static const char *const gemm_fill_name[] = {"weir_gemm_fill_@S@",
                                             "weir_wgemm_fill_@S@"};

static const char *const gemm_fill_head[] = {
    "static void weir_gemm_fill_@S@(@T@ *y, const @T@ *c, int64_t m, "
    "int64_t n,\n"
    "                              int64_t cr, int64_t cc, @T@ beta) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for\n",
    "static void weir_wgemm_fill_@S@(@T@ *y, const @T@ *c, int64_t m,\n"
    "                                int64_t n, int64_t cr, int64_t cc,\n"
    "                                @T@ beta) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for if (m * n > 65536)\n"};

static gboolean gemm_emit(WeirNativeEmit *e, WeirNativeGemm which,
                          GError **error) {
  const WeirNode *n = e->n;
  const WeirNativeOperand *a = &e->in[0], *b = &e->in[1], *c = &e->in[2],
                          *y = &e->out[0];
  WeirDType t = y->c->dtype;
  gboolean ta = weir_node_attr_int(n, "transA", 0) != 0;
  gboolean tb = weir_node_attr_int(n, "transB", 0) != 0;
  g_autofree char *alpha = number(weir_node_attr_float(n, "alpha", 1.0), t);
  g_autofree char *beta = number(weir_node_attr_float(n, "beta", 1.0), t);
  g_autofree char *m = dim_c(e, y->c, 0), *nn = dim_c(e, y->c, 1);
  g_autofree char *k = dim_c(e, a->c, ta ? 0 : 1);
  g_autofree char *lda = dim_c(e, a->c, 1), *ldb = dim_c(e, b->c, 1);
  g_autofree char *ep = NULL;
  const char *what;
  if (!gemm_epilogue(e, which, "0", nn, &ep, &what, error))
    return FALSE;
  g_autofree char *head = g_strconcat(gemm_impl_word(which), what, NULL);
  emit_header(e, head);
  if (c->c) {
    guint r = c->c->shape->len;
    g_autofree char *cr = r == 2 ? dim_c(e, c->c, 0) : g_strdup("1");
    g_autofree char *cc = r >= 1 ? dim_c(e, c->c, r - 1) : g_strdup("1");
    g_autofree char *text =
        g_strconcat("/* y[m x n] = beta * c, c broadcast from cr x cc (1 or "
                    "full) */\n",
                    gemm_fill_head[which], "#endif\n", gemm_fill_body, NULL);
    use_helper(e, gemm_fill_name[which], text, t);
    g_autofree char *fill = instantiate(gemm_fill_name[which], t);
    g_string_append_printf(e->code, "%s(%s, %s, %s, %s, %s, %s, %s);\n", fill,
                           y->ptr, c->ptr, m, nn, cr, cc, beta);
  }
  g_autofree char *fn = NULL, *work = NULL;
  if (!gemm_prepare(e, which, t, dim(y->c, 0), dim(y->c, 1),
                    dim(a->c, ta ? 0 : 1), &fn, &work, error))
    return FALSE;
  g_autofree char *bpk = gemm_prepack_b(e, which, t, b->c, tb, dim(y->c, 0),
                                        dim(a->c, ta ? 0 : 1), dim(y->c, 1));
  if (bpk)
    g_string_append(e->code, "/* B pre-packed at load */\n");
  GemmCall call = {
      ta,     tb, m,  nn, k, alpha, a->ptr, lda, b->ptr, ldb, c->c ? "1" : "0",
      y->ptr, nn, ep, bpk};
  gemm_call(e, which, fn, "", &call, work);
  return TRUE;
}

/* ---------------------------------------------------------------- MatMul */

gboolean weir_native_matmul_accepts(const WeirGraph *g, const WeirState *s,
                                    const WeirNode *n, char **reason) {
  const WeirContainer *c[3] = {port(g, s, n, TRUE, 0), port(g, s, n, TRUE, 1),
                               port(g, s, n, FALSE, 0)};
  if (!check_operands(c, 3, 3, reason))
    return FALSE;
  guint ra = c[0]->shape->len, rb = c[1]->shape->len, ry = c[2]->shape->len;
  guint core = (ra == 1 ? 0 : 1) + (rb == 1 ? 0 : 1);
  if (ra == 0 || rb == 0 || ry < core) {
    *reason = g_strdup("scalar operands or an output of unexpected rank");
    return FALSE;
  }
  guint nb = ry - core;
  if ((ra > 1 && ra - 2 > nb) || (rb > 1 && rb - 2 > nb)) {
    *reason = g_strdup("operands have more batch dimensions than the output");
    return FALSE;
  }
  return TRUE;
}

/* Adds "i * stride" to offset variable `var` for operand c (matrix rank
 * `core` = 2, batch dims aligned right with the output's nb batch dims)
 * for output batch dim d. */
static void batch_term(WeirNativeEmit *e, GString *code, const char *var,
                       const WeirContainer *c, guint nb, guint d) {
  guint r = c->shape->len;
  if (r < 2)
    return;
  guint cb = r - 2;
  if (d + cb < nb)
    return; /* c has no such dimension: broadcast */
  guint cd = d + cb - nb;
  if (dim_is(c, cd, 1))
    return;
  g_autofree char *stride = dims_product(e, c, cd + 1, r);
  g_string_append_printf(code, "    %s += i * (%s);\n", var, stride);
}

/* Whether a batched A ([..., m, k]) times a matrix B ([k, n]) can be one
 * GEMM of all the batch's rows: A has every batch axis of Y (no
 * broadcast), so its rows, like Y's, are contiguous. */
static gboolean matmul_folds(const WeirContainer *a, const WeirContainer *b,
                             const WeirContainer *y) {
  guint ra = a->shape->len, ry = y->shape->len;
  if (b->shape->len != 2 || ra < 3 || ra != ry)
    return FALSE;
  for (guint d = 0; d + 2 < ra; d++)
    if (!weir_expr_equal(dim(a, d), dim(y, d)))
      return FALSE;
  return TRUE;
}

/* One GEMM per batch element: the batch loop is serial; OpenBLAS, resp.
 * Weir's GEMM, splits each call over the threads.  A batched A times a
 * shared matrix B (a linear layer over a sequence) is one GEMM whose rows
 * are the whole batch's (matmul_folds). */
static gboolean matmul_emit(WeirNativeEmit *e, WeirNativeGemm which,
                            GError **error) {
  const WeirNativeOperand *a = &e->in[0], *b = &e->in[1], *y = &e->out[0];
  WeirDType t = y->c->dtype;
  guint ra = a->c->shape->len, rb = b->c->shape->len, ry = y->c->shape->len;
  gboolean av = ra == 1, bv = rb == 1;
  guint nb = ry - (av ? 0 : 1) - (bv ? 0 : 1);
  gboolean fold = matmul_folds(a->c, b->c, y->c);
  g_autofree char *m = av ? g_strdup("1") : dim_c(e, a->c, ra - 2);
  if (fold) {
    g_autofree char *rows = dims_product(e, a->c, 0, ra - 1);
    g_free(m);
    m = g_steal_pointer(&rows);
  }
  g_autofree char *k = dim_c(e, a->c, ra - 1);
  g_autofree char *nn = bv ? g_strdup("1") : dim_c(e, b->c, rb - 1);
  g_autofree char *ldb = bv ? g_strdup("1") : g_strdup(nn);
  g_autofree char *ep = NULL;
  const char *what;
  /* the residual of batch element bi */
  g_autofree char *roff = nb == 0 || fold
                              ? g_strdup("0")
                              : g_strdup_printf("bi * (%s) * (%s)", m, nn);
  if (!gemm_epilogue(e, which, roff, nn, &ep, &what, error))
    return FALSE;
  g_autofree char *head = g_strconcat(gemm_impl_word(which), what, NULL);
  emit_header(e, head);
  g_autofree char *fn = NULL, *work = NULL;
  g_autoptr(WeirExpr) rows = NULL;
  if (fold) {
    rows = weir_expr_const(1);
    for (guint d = 0; d + 1 < ra; d++) {
      WeirExpr *p = weir_expr_mul(rows, dim(a->c, d));
      weir_expr_unref(rows);
      rows = p;
    }
  }
  if (!gemm_prepare(e, which, t,
                    fold ? rows
                    : av ? NULL
                         : dim(a->c, ra - 2),
                    bv ? NULL : dim(b->c, rb - 1), dim(a->c, ra - 1), &fn,
                    &work, error))
    return FALSE;
  if (nb == 0 || fold) {
    g_autofree char *bpk =
        av || bv ? NULL
                 : gemm_prepack_b(e, which, t, b->c, FALSE,
                                  fold ? rows : dim(a->c, ra - 2),
                                  dim(a->c, ra - 1), dim(b->c, rb - 1));
    if (bpk)
      g_string_append(e->code, "/* B pre-packed at load */\n");
    GemmCall call = {FALSE,  FALSE, m,   nn,     k,  "1", a->ptr, k,
                     b->ptr, ldb,   "0", y->ptr, nn, ep,  bpk};
    gemm_call(e, which, fn, "", &call, work);
    return TRUE;
  }
  g_autofree char *count = dims_product(e, y->c, 0, nb);
  g_string_append_printf(e->code,
                         "for (int64_t bi = 0; bi < %s; bi++) {\n"
                         "  int64_t rest = bi, oa = 0, ob = 0;\n",
                         count);
  for (guint d = nb; d-- > 0;) {
    g_autofree char *yd = dim_c(e, y->c, d);
    GString *terms = g_string_new(NULL);
    batch_term(e, terms, "oa", a->c, nb, d);
    batch_term(e, terms, "ob", b->c, nb, d);
    if (terms->len)
      g_string_append_printf(e->code,
                             "  {\n"
                             "    int64_t i = rest %% (%s);\n"
                             "%s"
                             "  }\n",
                             yd, terms->str);
    g_string_append_printf(e->code, "  rest /= (%s);\n", yd);
    g_string_free(terms, TRUE);
  }
  g_autofree char *pa = g_strdup_printf("%s + oa", a->ptr);
  g_autofree char *pb = g_strdup_printf("%s + ob", b->ptr);
  g_autofree char *py = g_strdup_printf("%s + bi * (%s) * (%s)", y->ptr, m, nn);
  GemmCall call = {FALSE, FALSE, m,   nn,  k,  "1", pa,
                   k,     pb,    ldb, "0", py, nn,  ep};
  g_string_append(e->code, "  (void)rest;\n");
  gemm_call(e, which, fn, "  ", &call, work);
  g_string_append(e->code, "}\n");
  return TRUE;
}

/* ------------------------------------------------------------------ Conv */

typedef struct {
  const WeirContainer *x, *w, *b, *y;
  WeirConvGeometry geo;
} ConvInfo;

static void conv_info_clear(ConvInfo *ci) {
  weir_conv_geometry_clear(&ci->geo);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(ConvInfo, conv_info_clear)

static gboolean conv_info(const WeirGraph *g, const WeirState *s,
                          const WeirNode *n, ConvInfo *ci, char **reason) {
  ci->x = port(g, s, n, TRUE, 0);
  ci->w = port(g, s, n, TRUE, 1);
  ci->b = port(g, s, n, TRUE, 2);
  ci->y = port(g, s, n, FALSE, 0);
  const WeirContainer *c[4] = {ci->x, ci->w, ci->y, ci->b};
  if (!check_operands(c, 4, 3, reason))
    return FALSE;
  if (ci->x->shape->len != 4 || ci->w->shape->len != 4 ||
      ci->y->shape->len != 4 || (ci->b && ci->b->shape->len != 1)) {
    *reason = g_strdup("only 2-D convolutions (rank-4 X, W, Y) are native");
    return FALSE;
  }
  g_autoptr(GError) local = NULL;
  if (!weir_conv_geometry_compute(
          n, FALSE, 2, (WeirExpr *const *)ci->x->shape->pdata + 2,
          (WeirExpr *const *)ci->w->shape->pdata + 2, &ci->geo, &local)) {
    *reason = g_strdup(local->message);
    return FALSE;
  }
  return TRUE;
}

static gboolean const_is(WeirExpr *e, gint64 v) {
  gint64 x;
  return weir_expr_is_const(e, &x) && x == v;
}

static gboolean conv_is_1x1(const ConvInfo *ci) {
  const WeirConvGeometry *g = &ci->geo;
  return g->group == 1 && dim_is(ci->w, 2, 1) && dim_is(ci->w, 3, 1) &&
         g->strides[0] == 1 && g->strides[1] == 1 &&
         const_is(g->pad_begin[0], 0) && const_is(g->pad_begin[1], 0) &&
         const_is(g->pad_end[0], 0) && const_is(g->pad_end[1], 0);
}

static gboolean conv_is_depthwise(const ConvInfo *ci) {
  gint64 gr = ci->geo.group;
  return gr > 1 && dim_is(ci->x, 1, gr) && dim_is(ci->w, 0, gr) &&
         dim_is(ci->w, 1, 1);
}

static gboolean direct_accepts(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n, char **reason) {
  g_auto(ConvInfo) ci = {0};
  if (!conv_info(g, s, n, &ci, reason))
    return FALSE;
  if (!conv_is_1x1(&ci) && !conv_is_depthwise(&ci)) {
    *reason = g_strdup("direct convolution needs a 1x1 kernel (unit stride, "
                       "no padding, one group) or a depthwise one "
                       "(group == C == M)");
    return FALSE;
  }
  return TRUE;
}

/* The patches of group g of every image into col[kk x n*oh*ow] (the
 * loop of the im2col helper; Weir's GEMM gathers its patches in its
 * packing instead, core/kernels/gemm.c): each patch row is split into
 * the columns that fall in the padding (zeros) and those inside the
 * image (copies).
 * "@SAME@" is where a faster path may go; "@COLS@" and "@SW1@" complete
 * two comments. */
static const char conv_patches[] =
    "    for (int64_t r = 0; r < kk; r++) {\n"
    "      for (int64_t in = 0; in < n; in++) {\n"
    "        const int64_t ic = r / (kh * kw), i = r / kw % kh, j = r % kw;\n"
    "        const @T@ *xc = x + (in * c + g * cg + ic) * h * wd;\n"
    "        @T@ *dst = col + r * cols + in * ohw;\n"
    "        /* @COLS@columns q with 0 <= q * sw + off < wd: [qlo, qhi) */\n"
    "        const int64_t off = j * dw - pw;\n"
    "        int64_t qlo = off >= 0 ? 0 : (-off + sw - 1) / sw;\n"
    "        int64_t qhi = wd - off > 0 ? (wd - off + sw - 1) / sw : 0;\n"
    "        qlo = qlo < ow ? qlo : ow;\n"
    "        qhi = qhi < ow ? qhi : ow;\n"
    "        qhi = qhi > qlo ? qhi : qlo;\n"
    "@SAME@"
    "        for (int64_t p = 0; p < oh; p++) {\n"
    "          const int64_t ih = p * sh + i * dh - ph;\n"
    "          @T@ *d = dst + p * ow;\n"
    "          if (ih < 0 || ih >= h) {\n"
    "            for (int64_t q = 0; q < ow; q++)\n"
    "              d[q] = (@T@)0;\n"
    "            continue;\n"
    "          }\n"
    "          const @T@ *src = xc + ih * wd + off;\n"
    "          for (int64_t q = 0; q < qlo; q++)\n"
    "            d[q] = (@T@)0;\n"
    "          if (sw == 1)@SW1@\n"
    "            memcpy(d + qlo, src + qlo, (size_t)(qhi - qlo) * "
    "sizeof(@T@));\n"
    "          else\n"
    "            for (int64_t q = qlo; q < qhi; q++)\n"
    "              d[q] = src[q * sw];\n"
    "          for (int64_t q = qhi; q < ow; q++)\n"
    "            d[q] = (@T@)0;\n"
    "        }\n"
    "      }\n"
    "    }\n";

/* @SAME@ of the im2col helper: at stride 1 with rows as wide as the
 * image, a whole patch plane as one copy. */
static const char conv_patches_same[] =
    "        if (sw == 1 && sh * wd == ow && qlo < qhi) {\n"
    "          /* the patch plane is the image plane shifted by delta: one\n"
    "           * copy from the first to the last element inside the image,\n"
    "           * then the columns and rows in the padding set to zero */\n"
    "          const int64_t offh = i * dh - ph;\n"
    "          int64_t plo = offh >= 0 ? 0 : (-offh + sh - 1) / sh;\n"
    "          int64_t phi = h - offh > 0 ? (h - offh + sh - 1) / sh : 0;\n"
    "          plo = plo < oh ? plo : oh;\n"
    "          phi = phi < oh ? phi : oh;\n"
    "          phi = phi > plo ? phi : plo;\n"
    "          if (plo < phi) {\n"
    "            const int64_t delta = offh * wd + off;\n"
    "            const int64_t k0 = plo * ow + qlo, k1 = (phi - 1) * ow + "
    "qhi;\n"
    "            memcpy(dst + k0, xc + k0 + delta, (size_t)(k1 - k0) * "
    "sizeof(@T@));\n"
    "            for (int64_t p = plo; p < phi; p++) {\n"
    "              for (int64_t q = 0; q < qlo; q++)\n"
    "                dst[p * ow + q] = (@T@)0;\n"
    "              for (int64_t q = qhi; q < ow; q++)\n"
    "                dst[p * ow + q] = (@T@)0;\n"
    "            }\n"
    "          }\n"
    "          for (int64_t k = 0; k < plo * ow; k++)\n"
    "            dst[k] = (@T@)0;\n"
    "          for (int64_t k = phi * ow; k < ohw; k++)\n"
    "            dst[k] = (@T@)0;\n"
    "          continue;\n"
    "        }\n";

/* conv_im2col_head, the patches, conv_im2col_tail. */
static const char conv_im2col_head[] =
    "/* 2-D convolution as im2col + GEMM, per group over the whole batch:\n"
    " * col[kk x n*oh*ow] holds the patches of every image side by side, so\n"
    " * one GEMM per group, tmp[mg x n*oh*ow] = w[mg x kk] * col, replaces n\n"
    " * small ones; tmp is then scattered to y (NCHW) with the bias added.\n"
    " * With one image the GEMM writes y directly.  Each patch row is split\n"
    " * into the columns that fall in the padding (zeros) and those inside\n"
    " * the image (copies), so the inner loops carry no bounds tests; at\n"
    " * stride 1 with oh*ow rows as wide as the image (same padding) a whole\n"
    " * patch plane is one copy.  col and tmp live in the scratch block the\n"
    " * caller passes (kk*n*oh*ow elements, plus mg*n*oh*ow when n > 1). */\n"
    "static void weir_conv2d_im2col_@S@(const @T@ *x, const @T@ *w, const "
    "@T@ *b,\n"
    "                                 @T@ *y, int64_t n, int64_t c, int64_t "
    "h,\n"
    "                                 int64_t wd, int64_t m, int64_t kh,\n"
    "                                 int64_t kw, int64_t oh, int64_t ow,\n"
    "                                 int64_t groups, int64_t sh, int64_t "
    "sw,\n"
    "                                 int64_t dh, int64_t dw, int64_t ph,\n"
    "                                 int64_t pw, @T@ *col) {\n"
    "  const int64_t cg = c / groups, mg = m / groups;\n"
    "  const int64_t kk = cg * kh * kw, ohw = oh * ow, cols = n * ohw;\n"
    "  if (n == 0 || m == 0 || ohw == 0)\n"
    "    return;\n"
    "  @T@ *tmp = col + kk * cols;\n"
    "  for (int64_t g = 0; g < groups; g++) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2)\n"
    "#endif\n";

static const char conv_im2col_tail[] =
    "    const @T@ *wg = w + g * mg * kk;\n"
    "    if (n == 1) {\n"
    "      @T@ *yg = y + g * mg * ohw;\n"
    "      if (b)\n"
    "        for (int64_t oc = 0; oc < mg; oc++)\n"
    "          for (int64_t p = 0; p < ohw; p++)\n"
    "            yg[oc * ohw + p] = b[g * mg + oc];\n"
    "      cblas_@B@gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, "
    "(int)mg,\n"
    "                    (int)ohw, (int)kk, 1, wg, (int)kk, col, (int)ohw,\n"
    "                    b ? 1 : 0, yg, (int)ohw);\n"
    "      continue;\n"
    "    }\n"
    "    cblas_@B@gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)mg,\n"
    "                  (int)cols, (int)kk, 1, wg, (int)kk, col, (int)cols, 0,\n"
    "                  tmp, (int)cols);\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2)\n"
    "#endif\n"
    "    for (int64_t in = 0; in < n; in++) {\n"
    "      for (int64_t oc = 0; oc < mg; oc++) {\n"
    "        const @T@ bias = b ? b[g * mg + oc] : (@T@)0;\n"
    "        const @T@ *src = tmp + oc * cols + in * ohw;\n"
    "        @T@ *dst = y + (in * m + g * mg + oc) * ohw;\n"
    "        for (int64_t p = 0; p < ohw; p++)\n"
    "          dst[p] = src[p] + bias;\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

/* Weir's helper. */
static const char conv_weir[] =
    "/* weir_wconv2d's images i0 .. i1 - 1 in calls of nb images: per call "
    "and\n"
    " * group, the GEMM on the images' patches side by side into tmp[mg x\n"
    " * cnt*oh*ow] (with the bias, and the activation when there is no r), "
    "then\n"
    " * scattered to each image's y with r and the activation.  gw: the "
    "GEMM's\n"
    " * packing buffers.  par: the scatter as a parallel loop (0 inside a\n"
    " * parallel region, where the GEMM runs on the calling thread alone). */\n"
    "static int weir_wconv2d_@S@_calls(\n"
    "    const @T@ *x, const @T@ *w, const @T@ *wpk, int64_t wps, const @T@ "
    "*b,\n"
    "    @T@ *y, const @T@ *r, int64_t c, int64_t h, int64_t wd, int64_t m,\n"
    "    int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t groups,\n"
    "    int64_t sh, int64_t sw, int64_t dh, int64_t dw, int64_t ph, int64_t "
    "pw,\n"
    "    int act, @T@ lo, @T@ hi, int64_t i0, int64_t i1, int64_t nb, @T@ "
    "*tmp,\n"
    "    void *gw, int par) {\n"
    "  const int64_t cg = c / groups, mg = m / groups;\n"
    "  const int64_t kk = cg * kh * kw, ohw = oh * ow;\n"
    "  int st = 0;\n"
    "  (void)par;\n"
    "  for (int64_t j = i0; j < i1; j += nb) {\n"
    "    const int64_t cnt = i1 - j < nb ? i1 - j : nb, cols = cnt * ohw;\n"
    "    for (int64_t g = 0; g < groups; g++) {\n"
    "      const @T@ *xg = x + (j * c + g * cg) * h * wd;\n"
    "      const weir_gemm_patches_@S@ im = {xg, h,  wd, kh, kw, ow, sh,\n"
    "                                        sw, dh, dw, ph, pw, oh, c * h * "
    "wd};\n"
    "      const weir_gemm_epilogue_@S@ ep = {\n"
    "          b ? b + g * mg : NULL, NULL, cols, r ? 0 : act, lo, hi,\n"
    "          NULL, (@T@)1};\n"
    "      st |= weir_gemm_runp_@S@(0, 0, mg, cols, kk, (@T@)1, w + g * mg * "
    "kk,\n"
    "                               kk, wpk ? wpk + g * wps : NULL, xg, NULL,\n"
    "                               cols, &im, (@T@)0, tmp, cols,\n"
    "                               b || (act && !r) ? &ep : NULL, gw);\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2) if (par && mg * cols > 16384)\n"
    "#endif\n"
    "      for (int64_t ii = 0; ii < cnt; ii++)\n"
    "        for (int64_t oc = 0; oc < mg; oc++) {\n"
    "          const int64_t yo = ((j + ii) * m + g * mg + oc) * ohw;\n"
    "          const @T@ *s = tmp + oc * cols + ii * ohw;\n"
    "          if (r)\n"
    "            for (int64_t p = 0; p < ohw; p++)\n"
    "              y[yo + p] = weir_act1_@D@(s[p] + r[yo + p], act, lo, hi);\n"
    "          else\n"
    "            memcpy(y + yo, s, sizeof(@T@) * (size_t)ohw);\n"
    "        }\n"
    "    }\n"
    "  }\n"
    "  return st;\n"
    "}\n"
    "/* 2-D convolution on Weir's GEMM, per image and group:\n"
    " * y_g[mg x oh*ow] = w_g[mg x kk] * patches(x_g)[kk x oh*ow], the\n"
    " * patches gathered by the GEMM's packing straight from x (implicit\n"
    " * im2col; a 1x1 kernel at unit stride without padding reads x as it\n"
    " * is).  The epilogue y = act(conv + b + r) (b, r NULL: none; act as\n"
    " * weir_act1) is applied by the GEMM to each microtile as it is stored.\n"
    " * ws is the caller's scratch: the GEMM's packing buffers.  wpk (NULL:\n"
    " * none) is w packed once for the GEMM (weir_prepack_a), group g at\n"
    " * wpk + g * wps.  nb > 1 (small maps): nb images per GEMM, their\n"
    " * patches side by side as its columns, the product (with the bias, and\n"
    " * the activation when there is no r) in tmp[mg x nb*oh*ow] at the\n"
    " * start of ws (the packing buffers after it, 64-byte aligned), then\n"
    " * scattered to each image's y with r and the activation.  nbt > 0\n"
    " * (images per call when the threads take whole images, 1 when nb is;\n"
    " * nsl threads at most, each with tsb bytes of ws: its tmp when nb > 1,\n"
    " * then its GEMM's packing buffers): at 2 threads or more, with as\n"
    " * many images as threads (a multiple of the thread count, or at least\n"
    " * four a thread) and more multiply-adds than one call's GEMM needs to\n"
    " * use threads, one parallel region in which each thread takes the\n"
    " * contiguous images\n"
    " * schedule(static) gives it (as weir_bnstats and the element-wise maps\n"
    " * after it) and runs their GEMMs (nbt images each) and copies on its\n"
    " * own, so a thread keeps its images from one kernel to the next. */\n"
    "static int weir_wconv2d_@S@(const @T@ *x, const @T@ *w, const @T@ *wpk,\n"
    "                            int64_t wps, const @T@ *b,\n"
    "                            @T@ *y, const @T@ *r, int64_t n, int64_t c,\n"
    "                            int64_t h, int64_t wd, int64_t m, int64_t "
    "kh,\n"
    "                            int64_t kw, int64_t oh, int64_t ow,\n"
    "                            int64_t groups, int64_t sh, int64_t sw,\n"
    "                            int64_t dh, int64_t dw, int64_t ph,\n"
    "                            int64_t pw, int act, @T@ lo, @T@ hi,\n"
    "                            int64_t nb, int64_t nbt, int64_t tsb,\n"
    "                            int nsl, void *ws) {\n"
    "  const int64_t cg = c / groups, mg = m / groups;\n"
    "  const int64_t kk = cg * kh * kw, ohw = oh * ow;\n"
    "  const int plain = kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 "
    "&&\n"
    "                    pw == 0 && oh == h && ow == wd;\n"
    "  int st = 0;\n"
    "  int nt = 1;\n"
    "#ifdef _OPENMP\n"
    "  if (nbt > 0 && !omp_in_parallel())\n"
    "    nt = omp_get_max_threads();\n"
    "#endif\n"
    "  if (nt > nsl)\n"
    "    nt = nsl;\n"
    "  if (nt > 1 && ohw > 0 && mg > 0 && n * m * ohw * kk > 32768 &&\n"
    "      (n % nt == 0 ? n >= nt : n >= 4 * nt)) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel num_threads(nt) reduction(| : st)\n"
    "#endif\n"
    "    {\n"
    "#ifdef _OPENMP\n"
    "      const int64_t tn = omp_get_num_threads(), tid = "
    "omp_get_thread_num();\n"
    "#else\n"
    "      const int64_t tn = 1, tid = 0;\n"
    "#endif\n"
    "      /* the images of schedule(static): n / tn each, one more for the\n"
    "       * first n % tn threads */\n"
    "      const int64_t q = n / tn, rm = n % tn;\n"
    "      const int64_t j0 = tid * q + (tid < rm ? tid : rm);\n"
    "      const int64_t j1 = j0 + q + (tid < rm);\n"
    "      void *mine = (char *)ws + (size_t)tid * (size_t)tsb;\n"
    "      /* one image a call: each GEMM straight into y, in the thread's\n"
    "       * packing buffers */\n"
    "      for (int64_t in = j0; in < j1 && nb <= 1; in++)\n"
    "        for (int64_t g = 0; g < groups; g++) {\n"
    "          const @T@ *xg = x + (in * c + g * cg) * h * wd;\n"
    "          const int64_t yo = (in * m + g * mg) * ohw;\n"
    "          const weir_gemm_patches_@S@ im = {xg, h,  wd, kh, kw, ow,\n"
    "                                            sh, sw, dh, dw, ph, pw, 0, "
    "0};\n"
    "          const weir_gemm_epilogue_@S@ ep = {\n"
    "              b ? b + g * mg : NULL, r ? r + yo : NULL, ohw, act, lo, "
    "hi,\n"
    "              NULL, (@T@)1};\n"
    "          st |= weir_gemm_runp_@S@(\n"
    "              0, 0, mg, ohw, kk, (@T@)1, w + g * mg * kk, kk,\n"
    "              wpk ? wpk + g * wps : NULL, xg, NULL, ohw,\n"
    "              plain ? NULL : &im, (@T@)0, y + yo, ohw,\n"
    "              b || r || act ? &ep : NULL, mine);\n"
    "        }\n"
    "      @T@ *tmp = mine;\n"
    "      void *gw = (char *)tmp + ((size_t)(mg * nbt * ohw) * sizeof(@T@) "
    "+\n"
    "                                63) / 64 * 64;\n"
    "      if (nb > 1)\n"
    "        st |= weir_wconv2d_@S@_calls(x, w, wpk, wps, b, y, r, c, h, wd, "
    "m, kh,\n"
    "                                     kw, oh, ow, groups, sh, sw, dh, dw, "
    "ph,\n"
    "                                     pw, act, lo, hi, j0, j1, nbt, tmp, "
    "gw, 0);\n"
    "    }\n"
    "    return st;\n"
    "  }\n"
    "  if (nb > 1 && n > 1 && ohw > 0 && mg > 0) {\n"
    "    @T@ *tmp = ws;\n"
    "    void *gw = (char *)ws + ((size_t)(mg * nb * ohw) * sizeof(@T@) + 63) "
    "/\n"
    "                                64 * 64;\n"
    "    return weir_wconv2d_@S@_calls(x, w, wpk, wps, b, y, r, c, h, wd, m, "
    "kh, kw,\n"
    "                                  oh, ow, groups, sh, sw, dh, dw, ph, pw, "
    "act,\n"
    "                                  lo, hi, 0, n, nb, tmp, gw, 1);\n"
    "  }\n"
    "  for (int64_t in = 0; in < n; in++) {\n"
    "    for (int64_t g = 0; g < groups; g++) {\n"
    "      const @T@ *xg = x + (in * c + g * cg) * h * wd;\n"
    "      const int64_t yo = (in * m + g * mg) * ohw;\n"
    "      const weir_gemm_patches_@S@ im = {xg, h,  wd, kh, kw, ow,\n"
    "                                        sh, sw, dh, dw, ph, pw, 0, 0};\n"
    "      const weir_gemm_epilogue_@S@ ep = {\n"
    "          b ? b + g * mg : NULL, r ? r + yo : NULL, ohw, act, lo, hi,\n"
    "          NULL, (@T@)1};\n"
    "      st |= weir_gemm_runp_@S@(0, 0, mg, ohw, kk, (@T@)1, w + g * mg * "
    "kk,\n"
    "                               kk, wpk ? wpk + g * wps : NULL, xg, NULL,\n"
    "                               ohw,\n"
    "                               plain ? NULL : &im, (@T@)0, y + yo, ohw,\n"
    "                               b || r || act ? &ep : NULL, ws);\n"
    "    }\n"
    "  }\n"
    "  return st;\n"
    "}\n";

static const char conv_1x1[] =
    "/* 1x1 convolution (unit stride, no padding, one group): per image,\n"
    " * y[m x hw] = w[m x c] * x[c x hw] (+ bias), a GEMM without im2col. */\n"
    "static void weir_conv2d_1x1_@S@(const @T@ *x, const @T@ *w, const @T@ "
    "*b,\n"
    "                               @T@ *y, int64_t n, int64_t c, int64_t "
    "hw,\n"
    "                               int64_t m) {\n"
    "  for (int64_t in = 0; in < n; in++) {\n"
    "    @T@ *yn = y + in * m * hw;\n"
    "    if (b)\n"
    "      for (int64_t oc = 0; oc < m; oc++)\n"
    "        for (int64_t p = 0; p < hw; p++)\n"
    "          yn[oc * hw + p] = b[oc];\n"
    "    cblas_@B@gemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, "
    "(int)hw,\n"
    "                (int)c, 1, w, (int)c, x + in * c * hw, (int)hw, b ? 1 : "
    "0, yn,\n"
    "                (int)hw);\n"
    "  }\n"
    "}\n";

static const char conv_depthwise[] =
    "/* Depthwise 2-D convolution (group == C == M): a direct loop nest.\n"
    " * Per output row, each kernel tap adds w * (a shifted input row) over\n"
    " * the columns whose input lies inside the image, [qlo, qhi): no bounds\n"
    " * test per element, and at unit stride a contiguous loop the compiler\n"
    " * vectorizes.  Each output sums its taps in the same order as one\n"
    " * accumulator would (bias first, then row-major taps). */\n"
    "static void weir_conv2d_depthwise_@S@(const @T@ *x, const @T@ *w,\n"
    "                                     const @T@ *b, @T@ *y, int64_t n,\n"
    "                                     int64_t c, int64_t h, int64_t wd,\n"
    "                                     int64_t kh, int64_t kw, int64_t "
    "oh,\n"
    "                                     int64_t ow, int64_t sh, int64_t "
    "sw,\n"
    "                                     int64_t dh, int64_t dw, int64_t "
    "ph,\n"
    "                                     int64_t pw) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for collapse(2)\n"
    "#endif\n"
    "  for (int64_t in = 0; in < n; in++) {\n"
    "    for (int64_t ch = 0; ch < c; ch++) {\n"
    "      const @T@ *xc = x + (in * c + ch) * h * wd;\n"
    "      const @T@ *wc = w + ch * kh * kw;\n"
    "      @T@ *yc = y + (in * c + ch) * oh * ow;\n"
    "      const @T@ bias = b ? b[ch] : (@T@)0;\n"
    "      for (int64_t p = 0; p < oh; p++) {\n"
    "        @T@ *restrict yr = yc + p * ow;\n"
    "        for (int64_t q = 0; q < ow; q++)\n"
    "          yr[q] = bias;\n"
    "        for (int64_t i = 0; i < kh; i++) {\n"
    "          const int64_t ih = p * sh + i * dh - ph;\n"
    "          if (ih < 0 || ih >= h)\n"
    "            continue;\n"
    "          const @T@ *restrict xr = xc + ih * wd;\n"
    "          for (int64_t j = 0; j < kw; j++) {\n"
    "            const @T@ wv = wc[i * kw + j];\n"
    "            /* columns q with 0 <= q * sw + off < wd: [qlo, qhi) */\n"
    "            const int64_t off = j * dw - pw;\n"
    "            int64_t qlo = off >= 0 ? 0 : (-off + sw - 1) / sw;\n"
    "            int64_t qhi = wd - off > 0 ? (wd - off + sw - 1) / sw : 0;\n"
    "            qlo = qlo < ow ? qlo : ow;\n"
    "            qhi = qhi < ow ? qhi : ow;\n"
    "            if (sw == 1)\n"
    "              for (int64_t q = qlo; q < qhi; q++)\n"
    "                yr[q] += wv * xr[q + off];\n"
    "            else\n"
    "              for (int64_t q = qlo; q < qhi; q++)\n"
    "                yr[q] += wv * xr[q * sw + off];\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

/* The text of an im2col helper: head, the patches loop (conv_patches
 * with its three holes filled), tail. (transfer full) */
static char *conv_text(const char *head, const char *same, const char *cols,
                       const char *sw1, const char *tail) {
  GString *p = g_string_new(conv_patches);
  g_string_replace(p, "@SAME@", same, 0);
  g_string_replace(p, "@COLS@", cols, 0);
  g_string_replace(p, "@SW1@", sw1, 0);
  g_autofree char *patches = g_string_free(p, FALSE);
  return g_strconcat(head, patches, tail, NULL);
}

/* The scratch of weir_conv2d_im2col: col (kk x n*oh*ow) and tmp
 * (mg x n*oh*ow, when n > 1 or may be), as a typed pointer. */
static char *conv_im2col_scratch(WeirNativeEmit *e, const ConvInfo *ci) {
  g_autoptr(WeirExpr) kk = dims_expr(ci->w, 1, 4);
  g_autoptr(WeirExpr) oh_ow = dims_expr(ci->y, 2, 4);
  g_autoptr(WeirExpr) cols = weir_expr_mul(dim(ci->y, 0), oh_ow);
  WeirExpr *elements = weir_expr_mul(kk, cols);
  if (!dim_is(ci->x, 0, 1) && !dim_is(ci->x, 0, 0)) {
    g_autoptr(WeirExpr) gr = weir_expr_const(ci->geo.group);
    g_autoptr(WeirExpr) mg = weir_expr_floordiv(dim(ci->w, 0), gr);
    g_autoptr(WeirExpr) ntmp = weir_expr_mul(mg, cols);
    WeirExpr *sum = weir_expr_add(elements, ntmp);
    weir_expr_unref(elements);
    elements = sum;
  }
  return scratch_of(e, elements, ci->y->dtype);
}

/* The scratch of weir_wconv2d: the GEMM's packing buffers for its
 * products (M/g x nb*oh*ow x C/g*kh*kw), with blocking *out, which is
 * recorded, after (nb > 1) the product tmp[M/g x nb*oh*ow], rounded up to
 * 64 bytes; *nb is set to 1 when those sizes are not constants.  With nb
 * > 1 and a GEMM of more than one thread, also room for the path where
 * the threads take whole images: *nbt (> 0) images per call, min(nb,
 * ceil(n / threads)), and per thread *tsb bytes (its tmp[M/g x
 * nbt*oh*ow] and one thread's packing buffers, each rounded up to 64
 * bytes); otherwise *nbt = *tsb = 0.  "(void *)..." or "NULL"; NULL on
 * error. */
static char *conv_weir_scratch(WeirNativeEmit *e, const ConvInfo *ci,
                               gint64 *nb, gint64 *nbt, gint64 *tsb,
                               WeirGemmBlocking *out, GError **error) {
  WeirDType t = ci->y->dtype;
  const WeirContainer *w = ci->w, *y = ci->y;
  if (!weir_kernel_gemm_record(e, t, out, error))
    return NULL;
  g_autoptr(WeirExpr) groups = weir_expr_const(ci->geo.group);
  g_autoptr(WeirExpr) ohw = weir_expr_mul(dim(y, 2), dim(y, 3));
  g_autoptr(WeirExpr) khw = weir_expr_mul(dim(w, 2), dim(w, 3));
  g_autoptr(WeirExpr) kk = weir_expr_mul(dim(w, 1), khw); /* C/g * kh * kw */
  g_autoptr(WeirExpr) mg = weir_expr_floordiv(dim(w, 0), groups);
  *nbt = *tsb = 0;
  if (*nb > 1) {
    g_autoptr(WeirExpr) nbe = weir_expr_const(*nb);
    g_autoptr(WeirExpr) cols = weir_expr_mul(nbe, ohw);
    g_autoptr(WeirExpr) work =
        weir_kernel_gemm_work_bytes(t, out, mg, cols, kk);
    gint64 mgc, colsc, wb, n, ohwc;
    if (work && weir_expr_is_const(mg, &mgc) &&
        weir_expr_is_const(cols, &colsc) && weir_expr_is_const(work, &wb) &&
        weir_expr_is_const(ohw, &ohwc) &&
        weir_expr_is_const(dim(ci->y, 0), &n)) {
      gint64 es = (gint64)weir_dtype_size(t);
      gint64 tb = (mgc * colsc * es + 63) / 64 * 64;
      gint64 total = tb + wb, thr = MAX(out->threads, 1);
      if (thr > 1 && n >= thr) {
        /* one thread's calls: nbt images, its packing buffers those of a
         * call of nbt*oh*ow columns on one thread (the work space holds
         * one slot per thread) */
        gint64 per = MIN(*nb, (n + thr - 1) / thr);
        g_autoptr(WeirExpr) pe = weir_expr_const(per * ohwc);
        g_autoptr(WeirExpr) pw =
            weir_kernel_gemm_work_bytes(t, out, mg, pe, kk);
        gint64 pwb;
        if (pw && weir_expr_is_const(pw, &pwb)) {
          *nbt = per;
          *tsb = (mgc * per * ohwc * es + 63) / 64 * 64 +
                 (pwb / thr + 63) / 64 * 64;
          total = MAX(total, thr * *tsb);
        }
      }
      return weir_kernel_scratch_arg(e, weir_expr_const(total));
    }
    *nb = 1;
  }
  /* one image a call: with the threads taking whole images, thread t's
   * GEMMs run alone in slot t of the packing buffers (the slots of a call
   * of all the threads: work / threads bytes each) */
  WeirExpr *work = weir_kernel_gemm_work_bytes(t, out, mg, ohw, kk);
  gint64 wb, thr = MAX(out->threads, 1);
  if (work && thr > 1 && weir_expr_is_const(work, &wb) && wb % thr == 0) {
    *nbt = 1;
    *tsb = wb / thr;
  }
  return weir_kernel_scratch_arg(e, work);
}

/* Images per call of weir_wconv2d: for a small output map (oh*ow below
 * WEIR_CONV_BATCH_MAP) at constant batch n > 1, as many as fill about
 * WEIR_CONV_BATCH_COLS columns of the GEMM (all n at most); else 1. */
#define WEIR_CONV_BATCH_MAP 256
#define WEIR_CONV_BATCH_COLS 1024
static gint64 conv_weir_images(const ConvInfo *ci) {
  gint64 n, oh, ow;
  if (!weir_expr_is_const(dim(ci->y, 0), &n) ||
      !weir_expr_is_const(dim(ci->y, 2), &oh) ||
      !weir_expr_is_const(dim(ci->y, 3), &ow) || n <= 1 || oh <= 0 || ow <= 0 ||
      oh * ow >= WEIR_CONV_BATCH_MAP)
    return 1;
  gint64 nb = WEIR_CONV_BATCH_COLS / (oh * ow);
  return nb < 1 ? 1 : nb > n ? n : nb;
}

/* direct: the 1x1 or depthwise helper; otherwise im2col on GEMM `which`. */
static gboolean conv_emit(WeirNativeEmit *e, gboolean direct,
                          WeirNativeGemm which, GError **error) {
  g_auto(ConvInfo) ci = {0};
  g_autofree char *reason = NULL;
  if (!conv_info(e->g, e->s, e->n, &ci, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "%s", reason);
    return FALSE;
  }
  WeirDType t = ci.y->dtype;
  const char *sfx = t == WEIR_DTYPE_F32 ? "f32" : "f64";
  const char *xp = e->in[0].ptr, *wp = e->in[1].ptr, *yp = e->out[0].ptr;
  const char *bp = e->in[2].c ? e->in[2].ptr : "NULL";
  g_autofree char *n = dim_c(e, ci.x, 0), *c = dim_c(e, ci.x, 1),
                  *h = dim_c(e, ci.x, 2), *w = dim_c(e, ci.x, 3),
                  *m = dim_c(e, ci.w, 0), *kh = dim_c(e, ci.w, 2),
                  *kw = dim_c(e, ci.w, 3), *oh = dim_c(e, ci.y, 2),
                  *ow = dim_c(e, ci.y, 3);
  g_autofree char *ph = e->expr_c(e, ci.geo.pad_begin[0]);
  g_autofree char *pw = e->expr_c(e, ci.geo.pad_begin[1]);
  const WeirConvGeometry *geo = &ci.geo;
  if (direct && conv_is_1x1(&ci)) {
    emit_header(e, "direct (1x1)");
    use_blas(e);
    use_helper(e, "weir_conv2d_1x1_@S@", conv_1x1, t);
    g_autofree char *hw = dims_product(e, ci.x, 2, 4);
    g_string_append_printf(e->code,
                           "weir_conv2d_1x1_%s(%s, %s, %s, %s, %s, %s, %s, "
                           "%s);\n",
                           sfx, xp, wp, bp, yp, n, c, hw, m);
    return TRUE;
  }
  if (direct) {
    emit_header(e, "direct (depthwise)");
    use_helper(e, "weir_conv2d_depthwise_@S@", conv_depthwise, t);
    g_string_append_printf(
        e->code,
        "weir_conv2d_depthwise_%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
        "%s, %s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
        ", %" G_GINT64_FORMAT ", %s, %s);\n",
        sfx, xp, wp, bp, yp, n, c, h, w, kh, kw, oh, ow, geo->strides[0],
        geo->strides[1], geo->dilations[0], geo->dilations[1], ph, pw);
    return TRUE;
  }
  const char *name, *rp = "NULL";
  g_autofree char *text = NULL, *ws = NULL, *status = NULL;
  g_autofree char *lo = NULL, *hi = NULL;
  WeirGemmBlocking bl = {0};
  WeirEpilogueKind ek = {.act = 0, .residual = -1, .colbias = -1, .scale = 1.0};
  gboolean ep = FALSE;         /* Weir's helper: the epilogue's arguments */
  g_autofree char *wpk = NULL; /* Weir's helper: the pre-packed weight */
  gint64 wps = 0, nb = 1;      /* Weir's helper: images per GEMM */
  gint64 nbt = 0, tsb = 0;     /* and per call and thread's scratch when
                                * the threads take whole images */
  if (which == WEIR_NATIVE_GEMM_CBLAS) {
    emit_header(e, "im2col");
    use_blas(e);
    name = "weir_conv2d_im2col";
    text =
        conv_text(conv_im2col_head, conv_patches_same, "",
                  " /* the common case, as a plain copy */", conv_im2col_tail);
    ws = conv_im2col_scratch(e, &ci);
    status = g_strdup("");
  } else {
    ep = TRUE;
    const char *r;
    if (!weir_kernel_epilogue_use(e, "Weir's GEMM", &ek, &r, &lo, &hi, error))
      return FALSE;
    rp = r;
    name = "weir_wconv2d";
    nb = conv_weir_images(&ci);
    ws = conv_weir_scratch(e, &ci, &nb, &nbt, &tsb, &bl, error);
    if (!ws)
      return FALSE;
    /* the orientation of the GEMM: the node's parameter, else by shape
     * (constant shapes, f32) */
    gint64 orient = weir_native_param(e->n, WEIR_GEMM_PARAM_ORIENT, 0);
    if (orient == 0 && bl.tnr) /* $WEIR_GEMM_ORIENT, for comparisons */
      orient = weir_kernel_gemm_orient_env();
    if (orient < 0 || orient > 2 || (orient == 2 && !bl.tnr)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "node %u ('%s'): %s=%" G_GINT64_FORMAT
                  " is not an orientation of Weir's GEMM for %s (1: the "
                  "vectors along the output pixels; 2: along the output "
                  "channels, f32 only)",
                  e->n->id, e->n->label ? e->n->label : "",
                  WEIR_GEMM_PARAM_ORIENT, orient, weir_dtype_name(t));
      return FALSE;
    }
    gboolean channels = orient == 2;
    /* the weight packed once, when the kernel is loaded (a bound
     * constant of constant shape, f32) */
    gint64 mw, cw, khw, kww, ohc, owc;
    if (weir_expr_is_const(dim(ci.w, 0), &mw) &&
        weir_expr_is_const(dim(ci.w, 1), &cw) &&
        weir_expr_is_const(dim(ci.w, 2), &khw) &&
        weir_expr_is_const(dim(ci.w, 3), &kww) && geo->group > 0 &&
        mw % geo->group == 0) {
      gint64 mg = mw / geo->group, kk = cw * khw * kww;
      /* B gathered from patches unless weir_wconv2d's `plain` holds (a
       * 1x1 at unit stride without padding, one image per call) */
      gint64 xh, xw;
      gboolean plain = khw == 1 && kww == 1 && geo->strides[0] == 1 &&
                       geo->strides[1] == 1 && const_is(geo->pad_begin[0], 0) &&
                       const_is(geo->pad_begin[1], 0) && nb <= 1 &&
                       weir_expr_is_const(dim(ci.x, 2), &xh) &&
                       weir_expr_is_const(dim(ci.x, 3), &xw);
      if (orient == 0 && weir_expr_is_const(dim(ci.y, 2), &ohc) &&
          weir_expr_is_const(dim(ci.y, 3), &owc))
        channels = weir_kernel_gemm_channels_in_vectors(
            &bl, mg, nb * ohc * owc, kk, !plain || ohc != xh || owc != xw);
      if (channels) {
        wpk = weir_kernel_gemm_prepack_at(e, t, &bl, e->in[1].c, geo->group, mg,
                                          kk);
        if (wpk)
          wps = weir_kernel_gemm_prepacked_at_elements(&bl, 1, mg, kk);
      } else {
        wpk = weir_kernel_gemm_prepack_a(e, t, &bl, e->in[1].c, geo->group, mg,
                                         kk);
        if (wpk)
          wps = weir_kernel_gemm_prepacked_a_elements(&bl, 1, mg, kk);
      }
    }
    /* the helper's suffix is its GEMM's: a node's own blocking gets its
     * own copy; with channels in the vectors weir_wconv2dt calls the
     * transposed driver */
    sfx = bl.id;
    GString *tx = g_string_new(conv_weir);
    if (channels) {
      name = "weir_wconv2dt";
      g_string_replace(tx, "weir_wconv2d_@S@", "weir_wconv2dt_@S@", 0);
      g_string_replace(tx, "weir_gemm_runp_@S@", "weir_gemm_runt_@S@", 0);
      g_string_replace(tx, "on Weir's GEMM, per image and group:\n",
                       "on Weir's GEMM with the output channels in the\n"
                       " * vectors (weir_gemm_runt; wpk in its panels of TMR "
                       "rows), per image\n * and group:\n",
                       0);
    }
    text = g_string_free(tx, FALSE);
    status = g_strdup_printf("%s |= ", e->status);
    g_autofree char *imgs =
        nb > 1 && nbt > 0
            ? g_strdup_printf(", %" G_GINT64_FORMAT
                              " images per GEMM (%" G_GINT64_FORMAT
                              " when the threads take whole images)",
                              nb, nbt)
        : nb > 1 ? g_strdup_printf(", %" G_GINT64_FORMAT " images per GEMM", nb)
                 : g_strdup("");
    g_autofree char *head =
        g_strconcat("weir", weir_kernel_epilogue_what(&ek),
                    wpk ? ", weight pre-packed" : "",
                    channels ? ", channels in the vectors" : "", imgs, NULL);
    emit_header(e, head);
  }
  g_autofree char *helper = g_strdup_printf("%s_%s", name, sfx);
  g_autofree char *body = instantiate_sfx(text, t, sfx);
  if (ep) { /* Weir's helper's activation */
    GString *bs = g_string_new(body);
    g_string_replace(bs, "@D@", t == WEIR_DTYPE_F32 ? "f32" : "f64", 0);
    g_free(body);
    body = g_string_free(bs, FALSE);
  }
  e->helper(e, helper, body);
  /* Weir's helper takes the residual after y and the activation before
   * its scratch */
  g_autofree char *rarg = ep ? g_strdup_printf(", %s", rp) : g_strdup("");
  g_autofree char *warg =
      ep ? g_strdup_printf(", %s, %" G_GINT64_FORMAT, wpk ? wpk : "NULL", wps)
         : g_strdup("");
  g_autofree char *aarg =
      ep ? g_strdup_printf(", %d, %s, %s, %" G_GINT64_FORMAT
                           ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %u",
                           ek.act, lo, hi, nb, nbt, tsb, MAX(bl.threads, 1))
         : g_strdup("");
  g_string_append_printf(e->code,
                         "%s%s_%s(%s, %s%s, %s, %s%s, %s, %s, %s, %s, %s, %s, "
                         "%s, %s, %s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                         ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                         ", %" G_GINT64_FORMAT ", %s, %s%s, %s);\n",
                         status, name, sfx, xp, wp, warg, bp, yp, rarg, n, c, h,
                         w, m, kh, kw, oh, ow, geo->group, geo->strides[0],
                         geo->strides[1], geo->dilations[0], geo->dilations[1],
                         ph, pw, aarg, ws);
  return TRUE;
}

static gboolean im2col_emit(WeirNativeEmit *e, GError **error) {
  return conv_emit(e, FALSE, WEIR_NATIVE_GEMM_CBLAS, error);
}

static gboolean direct_emit(WeirNativeEmit *e, GError **error) {
  return conv_emit(e, TRUE, WEIR_NATIVE_GEMM_CBLAS, error);
}

gboolean weir_native_emit_gemm(WeirNativeEmit *e, WeirNativeGemm which,
                               GError **error) {
  return gemm_emit(e, which, error);
}

gboolean weir_native_emit_matmul(WeirNativeEmit *e, WeirNativeGemm which,
                                 GError **error) {
  return matmul_emit(e, which, error);
}

gboolean weir_native_emit_conv(WeirNativeEmit *e, WeirNativeGemm which,
                               GError **error) {
  return conv_emit(e, FALSE, which, error);
}

gboolean weir_native_conv_accepts(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, char **reason) {
  g_auto(ConvInfo) ci = {0};
  return conv_info(g, s, n, &ci, reason);
}

static gboolean blas_gemm_emit(WeirNativeEmit *e, GError **error) {
  return weir_native_emit_gemm(e, WEIR_NATIVE_GEMM_CBLAS, error);
}

static gboolean blas_matmul_emit(WeirNativeEmit *e, GError **error) {
  return weir_native_emit_matmul(e, WEIR_NATIVE_GEMM_CBLAS, error);
}

/* ------------------------------------------------------ training backward
 *
 * ConvGradFilter (im2col), ConvGradInput (col2im) and MaxPoolGrad (direct)
 * of ir/ops/training.c.  Their attributes are explicit (kernel_shape,
 * strides, pads as begin values then end values, dilations, group); the
 * pure expansions are ir/lower/expand/training.c. */

typedef struct {
  const WeirContainer *dy, *a, *out; /* a: X (filter, pool) or W (input) */
  gint64 k[2], s[2], p[2], d[2], group;
} GradInfo;

static gboolean grad_ints2(const WeirNode *n, const char *name, gint64 *v,
                           char **reason) {
  const WeirAttr *a = weir_node_attr(n, name);
  if (!a || a->type != WEIR_ATTR_INTS || a->ints->len < 2) {
    *reason =
        g_strdup_printf("attribute '%s' must list two spatial values", name);
    return FALSE;
  }
  v[0] = g_array_index(a->ints, gint64, 0);
  v[1] = g_array_index(a->ints, gint64, 1);
  return TRUE;
}

static gboolean grad_info(const WeirGraph *g, const WeirState *s,
                          const WeirNode *n, GradInfo *gi, char **reason) {
  gi->dy = port(g, s, n, TRUE, 0);
  gi->a = port(g, s, n, TRUE, 1);
  gi->out = port(g, s, n, FALSE, 0);
  const WeirContainer *c[3] = {gi->dy, gi->a, gi->out};
  if (!check_operands(c, 3, 3, reason))
    return FALSE;
  if (gi->dy->shape->len != 4 || gi->a->shape->len != 4 ||
      gi->out->shape->len != 4) {
    *reason = g_strdup("only two spatial dimensions (rank-4 operands) are "
                       "native");
    return FALSE;
  }
  if (!grad_ints2(n, "kernel_shape", gi->k, reason) ||
      !grad_ints2(n, "strides", gi->s, reason) ||
      !grad_ints2(n, "pads", gi->p, reason) ||
      !grad_ints2(n, "dilations", gi->d, reason))
    return FALSE;
  gi->group = weir_node_attr_int(n, "group", 1);
  if (gi->group < 1 || gi->s[0] < 1 || gi->s[1] < 1 || gi->d[0] < 1 ||
      gi->d[1] < 1 || gi->k[0] < 1 || gi->k[1] < 1) {
    *reason = g_strdup("kernel_shape, strides, dilations and group must be "
                       "positive");
    return FALSE;
  }
  return TRUE;
}

static gboolean conv_grad_accepts(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, char **reason) {
  GradInfo gi;
  return grad_info(g, s, n, &gi, reason);
}

/* Shared by both convolution gradients: the patches of one image and one
 * group as rows of col[kk x oh*ow] (r = (ic, i, j)), zeros in the padding. */
static const char conv_grad_im2col[] =
    "/* im2col of image plane group xg (cg channels of h x wd) into\n"
    " * col[cg*kh*kw x oh*ow]; positions in the padding are zero. */\n"
    "static void weir_conv2d_grad_cols_@S@(const @T@ *xg, @T@ *col, int64_t "
    "cg,\n"
    "                           int64_t h, int64_t wd, int64_t kh,\n"
    "                           int64_t kw, int64_t oh, int64_t ow,\n"
    "                           int64_t sh, int64_t sw, int64_t dh,\n"
    "                           int64_t dw, int64_t ph, int64_t pw) {\n"
    "  const int64_t kk = cg * kh * kw, ohw = oh * ow;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for\n"
    "#endif\n"
    "  for (int64_t r = 0; r < kk; r++) {\n"
    "    const int64_t ic = r / (kh * kw), i = r / kw % kh, j = r % kw;\n"
    "    const @T@ *xc = xg + ic * h * wd;\n"
    "    @T@ *dst = col + r * ohw;\n"
    "    for (int64_t p = 0; p < oh; p++) {\n"
    "      const int64_t ih = p * sh + i * dh - ph;\n"
    "      for (int64_t q = 0; q < ow; q++) {\n"
    "        const int64_t iw = q * sw + j * dw - pw;\n"
    "        dst[p * ow + q] = ih >= 0 && ih < h && iw >= 0 && iw < wd\n"
    "                              ? xc[ih * wd + iw]\n"
    "                              : (@T@)0;\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

static const char conv_grad_filter[] =
    "/* Filter gradient of a 2-D convolution: per group g and image,\n"
    " * dw_g[mg x kk] += dy_g[mg x oh*ow] * col^T, col the image's patches\n"
    " * (im2col, [kk x oh*ow] in the caller's scratch block col); the first\n"
    " * image's GEMM overwrites dw_g. */\n"
    "static void weir_conv2d_grad_filter_@S@(const @T@ *dy, const @T@ *x,\n"
    "                                      @T@ *dwt, int64_t n, int64_t c,\n"
    "                                      int64_t h, int64_t wd, int64_t m,\n"
    "                                      int64_t kh, int64_t kw,\n"
    "                                      int64_t oh, int64_t ow,\n"
    "                                      int64_t groups, int64_t sh,\n"
    "                                      int64_t sw, int64_t dh,\n"
    "                                      int64_t dw, int64_t ph,\n"
    "                                      int64_t pw, @T@ *col) {\n"
    "  const int64_t cg = c / groups, mg = m / groups;\n"
    "  const int64_t kk = cg * kh * kw, ohw = oh * ow;\n"
    "  if (n == 0 || ohw == 0) {\n"
    "    for (int64_t k = 0; k < m * kk; k++)\n"
    "      dwt[k] = (@T@)0;\n"
    "    return;\n"
    "  }\n"
    "  for (int64_t g = 0; g < groups; g++) {\n"
    "    for (int64_t in = 0; in < n; in++) {\n"
    "      weir_conv2d_grad_cols_@S@(x + (in * c + g * cg) * h * wd, col, cg, "
    "h, wd, "
    "kh,\n"
    "                     kw, oh, ow, sh, sw, dh, dw, ph, pw);\n"
    "      cblas_@B@gemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)mg,\n"
    "                    (int)kk, (int)ohw, 1, dy + (in * m + g * mg) * ohw,\n"
    "                    (int)ohw, col, (int)ohw, in == 0 ? 0 : 1,\n"
    "                    dwt + g * mg * kk, (int)kk);\n"
    "    }\n"
    "  }\n"
    "}\n";

static const char conv_grad_input[] =
    "/* Input gradient of a 2-D convolution: per image and group g,\n"
    " * col[kk x oh*ow] = w_g^T[kk x mg] * dy_g[mg x oh*ow] (one GEMM), then\n"
    " * col2im adds every column entry into the input position it was read\n"
    " * from.  The col2im loop is split across threads by input channel: a\n"
    " * channel's rows only touch that channel, so no two threads write the\n"
    " * same element.  col is the caller's scratch block ([kk x oh*ow]). */\n"
    "static void weir_conv2d_grad_input_@S@(const @T@ *dy, const @T@ *wt,\n"
    "                                     @T@ *dx, int64_t n, int64_t c,\n"
    "                                     int64_t h, int64_t wd, int64_t m,\n"
    "                                     int64_t kh, int64_t kw, int64_t oh,\n"
    "                                     int64_t ow, int64_t groups,\n"
    "                                     int64_t sh, int64_t sw, int64_t dh,\n"
    "                                     int64_t dw, int64_t ph,\n"
    "                                     int64_t pw, @T@ *col) {\n"
    "  const int64_t cg = c / groups, mg = m / groups;\n"
    "  const int64_t kk = cg * kh * kw, ohw = oh * ow;\n"
    "  for (int64_t k = 0; k < n * c * h * wd; k++)\n"
    "    dx[k] = (@T@)0;\n"
    "  if (n == 0 || ohw == 0 || mg == 0)\n"
    "    return;\n"
    "  for (int64_t in = 0; in < n; in++) {\n"
    "    for (int64_t g = 0; g < groups; g++) {\n"
    "      cblas_@B@gemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)kk,\n"
    "                    (int)ohw, (int)mg, 1, wt + g * mg * kk, (int)kk,\n"
    "                    dy + (in * m + g * mg) * ohw, (int)ohw, 0, col,\n"
    "                    (int)ohw);\n"
    "      @T@ *dxg = dx + (in * c + g * cg) * h * wd;\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for\n"
    "#endif\n"
    "      for (int64_t ic = 0; ic < cg; ic++) {\n"
    "        @T@ *dxc = dxg + ic * h * wd;\n"
    "        for (int64_t i = 0; i < kh; i++) {\n"
    "          for (int64_t j = 0; j < kw; j++) {\n"
    "            const @T@ *src = col + ((ic * kh + i) * kw + j) * ohw;\n"
    "            for (int64_t p = 0; p < oh; p++) {\n"
    "              const int64_t ih = p * sh + i * dh - ph;\n"
    "              if (ih < 0 || ih >= h)\n"
    "                continue;\n"
    "              for (int64_t q = 0; q < ow; q++) {\n"
    "                const int64_t iw = q * sw + j * dw - pw;\n"
    "                if (iw >= 0 && iw < wd)\n"
    "                  dxc[ih * wd + iw] += src[p * ow + q];\n"
    "              }\n"
    "            }\n"
    "          }\n"
    "        }\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

static const char max_pool_grad[] =
    "/* MaxPool gradient: dx = 0, then the gradient of each output element\n"
    " * goes to the first maximum of its window (the first in-image position\n"
    " * whose value equals y, in kernel order).  Split across threads by\n"
    " * (image, channel) plane: the windows of a plane only touch that\n"
    " * plane, so every add is a plain one. */\n"
    "static void weir_max_pool_grad_@S@(const @T@ *dy, const @T@ *x,\n"
    "                                  const @T@ *y, @T@ *dx, int64_t nc,\n"
    "                                  int64_t h, int64_t wd, int64_t oh,\n"
    "                                  int64_t ow, int64_t kh, int64_t kw,\n"
    "                                  int64_t sh, int64_t sw, int64_t dh,\n"
    "                                  int64_t dw, int64_t ph, int64_t pw) {\n"
    "#ifdef _OPENMP\n"
    "#pragma omp parallel for\n"
    "#endif\n"
    "  for (int64_t pl = 0; pl < nc; pl++) {\n"
    "    const @T@ *xc = x + pl * h * wd;\n"
    "    const @T@ *yc = y + pl * oh * ow, *dyc = dy + pl * oh * ow;\n"
    "    @T@ *dxc = dx + pl * h * wd;\n"
    "    for (int64_t k = 0; k < h * wd; k++)\n"
    "      dxc[k] = (@T@)0;\n"
    "    for (int64_t p = 0; p < oh; p++) {\n"
    "      for (int64_t q = 0; q < ow; q++) {\n"
    "        const @T@ mx = yc[p * ow + q];\n"
    "        int64_t at = -1;\n"
    "        for (int64_t i = 0; i < kh && at < 0; i++) {\n"
    "          const int64_t ih = p * sh + i * dh - ph;\n"
    "          if (ih < 0 || ih >= h)\n"
    "            continue;\n"
    "          for (int64_t j = 0; j < kw; j++) {\n"
    "            const int64_t iw = q * sw + j * dw - pw;\n"
    "            if (iw >= 0 && iw < wd && xc[ih * wd + iw] == mx) {\n"
    "              at = ih * wd + iw;\n"
    "              break;\n"
    "            }\n"
    "          }\n"
    "        }\n"
    "        if (at >= 0)\n"
    "          dxc[at] += dyc[p * ow + q];\n"
    "      }\n"
    "    }\n"
    "  }\n"
    "}\n";

static gboolean grad_emit_common(WeirNativeEmit *e, GradInfo *gi,
                                 GError **error) {
  g_autofree char *reason = NULL;
  if (!grad_info(e->g, e->s, e->n, gi, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED, "%s", reason);
    return FALSE;
  }
  return TRUE;
}

/* kind: 'f' filter gradient, 'i' input gradient. */
static gboolean conv_grad_emit(WeirNativeEmit *e, char kind, GError **error) {
  GradInfo gi;
  if (!grad_emit_common(e, &gi, error))
    return FALSE;
  WeirDType t = gi.out->dtype;
  const char *sfx = t == WEIR_DTYPE_F32 ? "f32" : "f64";
  /* image sizes from X (dX for the input gradient, X for the filter's),
   * kernel sizes from W (dW, resp. W) */
  const WeirContainer *xc = kind == 'f' ? gi.a : gi.out;
  const WeirContainer *wc = kind == 'f' ? gi.out : gi.a;
  g_autofree char *n = dim_c(e, xc, 0), *c = dim_c(e, xc, 1),
                  *h = dim_c(e, xc, 2), *w = dim_c(e, xc, 3),
                  *m = dim_c(e, wc, 0), *kh = dim_c(e, wc, 2),
                  *kw = dim_c(e, wc, 3), *oh = dim_c(e, gi.dy, 2),
                  *ow = dim_c(e, gi.dy, 3);
  emit_header(e, kind == 'f' ? "im2col" : "col2im");
  use_blas(e);
  if (kind == 'f') {
    use_helper(e, "weir_conv2d_grad_cols_@S@", conv_grad_im2col, t);
    use_helper(e, "weir_conv2d_grad_filter_@S@", conv_grad_filter, t);
  } else {
    use_helper(e, "weir_conv2d_grad_input_@S@", conv_grad_input, t);
  }
  /* col: (C/group * kh * kw) x oh*ow, the same for every image; wc is
   * [M, C/group, kh, kw] */
  g_autoptr(WeirExpr) kk = dims_expr(wc, 1, 4);
  g_autoptr(WeirExpr) ohw = dims_expr(gi.dy, 2, 4);
  g_autofree char *col = scratch_of(e, weir_expr_mul(kk, ohw), t);
  g_string_append_printf(
      e->code,
      "weir_conv2d_grad_%s_%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
      "%s, %s, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %s);\n",
      kind == 'f' ? "filter" : "input", sfx, e->in[0].ptr, e->in[1].ptr,
      e->out[0].ptr, n, c, h, w, m, kh, kw, oh, ow, gi.group, gi.s[0], gi.s[1],
      gi.d[0], gi.d[1], gi.p[0], gi.p[1], col);
  return TRUE;
}

static gboolean conv_grad_filter_emit(WeirNativeEmit *e, GError **error) {
  return conv_grad_emit(e, 'f', error);
}

static gboolean conv_grad_input_emit(WeirNativeEmit *e, GError **error) {
  return conv_grad_emit(e, 'i', error);
}

static gboolean max_pool_grad_accepts(const WeirGraph *g, const WeirState *s,
                                      const WeirNode *n, char **reason) {
  GradInfo gi;
  if (!grad_info(g, s, n, &gi, reason))
    return FALSE;
  const WeirContainer *y = port(g, s, n, TRUE, 2);
  const WeirContainer *c[1] = {y};
  if (!check_operands(c, 1, 1, reason))
    return FALSE;
  if (y->dtype != gi.out->dtype) {
    *reason = g_strdup_printf("'%s' is %s; all operands alike needed", y->name,
                              weir_dtype_name(y->dtype));
    return FALSE;
  }
  return TRUE;
}

static gboolean max_pool_grad_emit(WeirNativeEmit *e, GError **error) {
  GradInfo gi;
  if (!grad_emit_common(e, &gi, error))
    return FALSE;
  WeirDType t = gi.out->dtype;
  const char *sfx = t == WEIR_DTYPE_F32 ? "f32" : "f64";
  g_autofree char *nc = dims_product(e, gi.out, 0, 2), *h = dim_c(e, gi.out, 2),
                  *w = dim_c(e, gi.out, 3), *oh = dim_c(e, gi.dy, 2),
                  *ow = dim_c(e, gi.dy, 3);
  emit_header(e, "direct");
  use_helper(e, "weir_max_pool_grad_@S@", max_pool_grad, t);
  g_string_append_printf(
      e->code,
      "weir_max_pool_grad_%s(%s, %s, %s, %s, %s, %s, %s, %s, %s, "
      "%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
      ", %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ");\n",
      sfx, e->in[0].ptr, e->in[1].ptr, e->in[2].ptr, e->out[0].ptr, nc, h, w,
      oh, ow, gi.k[0], gi.k[1], gi.s[0], gi.s[1], gi.d[0], gi.d[1], gi.p[0],
      gi.p[1]);
  return TRUE;
}

static const WeirNativeImpl builtin[] = {
    {.op = "Gemm",
     .impl = "blas",
     .accepts = weir_native_gemm_accepts,
     .emit = blas_gemm_emit},
    {.op = "MatMul",
     .impl = "blas",
     .accepts = weir_native_matmul_accepts,
     .emit = blas_matmul_emit},
    {.op = "Conv",
     .impl = "im2col",
     .accepts = weir_native_conv_accepts,
     .emit = im2col_emit},
    {.op = "Conv",
     .impl = "direct",
     .accepts = direct_accepts,
     .emit = direct_emit},
    {.op = "ConvGradFilter",
     .impl = "im2col",
     .accepts = conv_grad_accepts,
     .emit = conv_grad_filter_emit},
    {.op = "ConvGradInput",
     .impl = "col2im",
     .accepts = conv_grad_accepts,
     .emit = conv_grad_input_emit},
    {.op = "MaxPoolGrad",
     .impl = "direct",
     .accepts = max_pool_grad_accepts,
     .emit = max_pool_grad_emit},
};

/* Registers the built-in native implementations (weir_init). */
void weir_native_register_builtin(void) {
  for (guint i = 0; i < G_N_ELEMENTS(builtin); i++)
    weir_native_register(&builtin[i]);
  weir_native_register_depthwise();    /* core/kernels/depthwise.c */
  weir_native_register_winograd();     /* core/kernels/winograd.c */
  weir_native_register_stem();         /* core/kernels/stem.c */
  weir_native_register_conv_grad();    /* core/kernels/conv-grad.c */
  weir_native_register_pool();         /* core/kernels/pool.c */
  weir_native_register_norm();         /* core/kernels/norm.c */
  weir_native_register_qgemm();        /* core/kernels/gemm-int8.c */
  weir_native_register_bgemm();        /* core/kernels/gemm-bf16.c */
  weir_native_register_multi_tensor(); /* core/kernels/multi-tensor.c */
  weir_native_register_reduce();       /* core/kernels/reduce.c */
}

/* ------------------------------------------------------------- libraries */

char **weir_codegen_libraries(const char *source) {
  g_autoptr(GStrvBuilder) b = g_strv_builder_new();
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  static const char tag[] = "/* weir-link:";
  g_auto(GStrv) found = NULL;
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  for (const char *p = source; p && *p;) {
    const char *nl = strchr(p, '\n');
    gsize len = nl ? (gsize)(nl - p) : strlen(p);
    if (len > sizeof tag && strncmp(p, tag, sizeof tag - 1) == 0) {
      g_autofree char *line =
          g_strndup(p + sizeof tag - 1, len - sizeof tag + 1);
      char *end = strstr(line, "*/");
      if (end)
        *end = '\0';
      g_auto(GStrv) words = g_strsplit_set(line, " \t", -1);
      for (guint i = 0; words[i]; i++) {
        const char *w = words[i];
        if (!*w ||
            strspn(w, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                      "0123456789_+.-") != strlen(w) ||
            w[0] == '-')
          continue;
        g_ptr_array_add(names, g_strdup(w));
      }
    }
    p += len + (nl ? 1 : 0);
  }
  for (guint i = 0; i < names->len; i++) {
    const char *w = g_ptr_array_index(names, i);
    if (g_hash_table_add(seen, (gpointer)w))
      g_strv_builder_add(b, w);
  }
  found = g_strv_builder_end(b);
  g_ptr_array_unref(names);
  return g_steal_pointer(&found);
}
