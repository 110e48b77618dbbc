/* linalg.c — the linear-algebra operators: Gemm, MatMul, Conv,
 * ConvTranspose and Einsum (ONNX semantics).
 *
 * Layout of this file:
 *   1. small helpers: error prefixes naming the node, attribute readers,
 *      dtype checks, the container behind a connector (for FLOP counts);
 *   2. the shared geometry of Conv / ConvTranspose and the Einsum equation
 *      parser (declared in weir-ops-linalg.h, also used by the expansions);
 *   3. per operator: attribute schema, inference, FLOP count;
 *   4. the record table and weir_ops_register_linalg().
 *
 * FLOP conventions: one multiply-add is 2 FLOPs.  Gemm counts 2*M*N*K plus
 * M*N when C is present (the beta*C term); MatMul 2*batch*M*N*K; Conv
 * 2 * output elements * (C/group) * kernel size; ConvTranspose 2 * input
 * elements * (M/group) * kernel size; Einsum one multiply per extra operand
 * and one add (when something is summed) per point of the iteration space.
 * Bias additions of Conv / ConvTranspose are not counted.  Det counts its
 * LU factorization (Gaussian elimination with partial pivoting): for
 * column k of an n x n matrix, n - k - 1 quotients and 2 (n - k - 1)^2
 * for the row updates, then n - 1 products of the pivots and the sign,
 * per matrix.
 */
#include <stdarg.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-ops-linalg.h"
#include "weir-ops.h"

void weir_ops_register_linalg(void);

/* ------------------------------------------------------------- helpers */

/* The INTS attribute `name`, or NULL when absent (or empty, which ONNX
 * exporters sometimes write for "not given"). */
static const GArray *attr_ints(const WeirNode *n, const char *name) {
  const WeirAttr *a = weir_node_attr(n, name);
  if (!a || a->type != WEIR_ATTR_INTS || !a->ints || a->ints->len == 0)
    return NULL;
  return a->ints;
}

static gboolean expr_is(const WeirExpr *e, gint64 v) {
  gint64 c;
  return weir_expr_is_const(e, &c) && c == v;
}

/* Whether a constant expression is below `bound` (FALSE when symbolic). */
static gboolean expr_const_below(const WeirExpr *e, gint64 bound) {
  gint64 c;
  return weir_expr_is_const(e, &c) && c < bound;
}

#define DT(x) (1u << WEIR_DTYPE_##x)
#define FLOAT_TYPES (DT(F32) | DT(F64) | DT(F16) | DT(BF16))
#define MATMUL_TYPES (FLOAT_TYPES | DT(I32) | DT(I64))
/* Conv also takes i32: the expansions of ConvInteger and QLinearConv
 * compute their integer products with it. */
#define CONV_TYPES (FLOAT_TYPES | DT(I32))
#define QUANT_TYPES (DT(U8) | DT(I8))
#define NUMERIC_TYPES                                                          \
  (DT(F32) | DT(F64) | DT(I32) | DT(I64) | DT(U8) | DT(F16) | DT(BF16) |       \
   DT(I8) | DT(I16) | DT(U16) | DT(U32) | DT(U64))

static gboolean input_present(const WeirOpInferContext *ctx, guint k) {
  return k < ctx->n_inputs && ctx->inputs[k].present;
}

/* Inputs 0..n-1 (those present) all have one dtype from `allowed`. */
static gboolean check_dtypes(const WeirOpInferContext *ctx, guint n,
                             guint allowed, GError **error) {
  const WeirNode *node = ctx->node;
  if (!input_present(ctx, 0))
    return weir_node_fail(error, WEIR_ERROR_INVALID, node,
                          "input 0 is missing");
  WeirDType t = ctx->inputs[0].dtype;
  if (!(allowed & (1u << t)))
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, node,
        "input 0 has dtype %s, which the operator does not accept",
        weir_dtype_name(t));
  for (guint k = 1; k < n; k++) {
    if (!input_present(ctx, k))
      continue;
    if (ctx->inputs[k].dtype != t)
      return weir_node_fail(error, WEIR_ERROR_INVALID, node,
                            "input %u has dtype %s, expected %s like input 0",
                            k, weir_dtype_name(ctx->inputs[k].dtype),
                            weir_dtype_name(t));
  }
  return TRUE;
}

static gboolean check_rank(const WeirOpInferContext *ctx, guint k, guint rank,
                           GError **error) {
  if (ctx->inputs[k].rank != rank)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input %u has rank %u, expected %u", k,
                          ctx->inputs[k].rank, rank);
  return TRUE;
}

/* Two dimensions that must be the same size. */
static gboolean check_same_dim(const WeirNode *node, const char *what,
                               WeirExpr *a, WeirExpr *b, GError **error) {
  if (weir_expr_equal(a, b))
    return TRUE;
  g_autofree char *ta = weir_expr_to_string(a);
  g_autofree char *tb = weir_expr_to_string(b);
  return weir_node_fail(error, WEIR_ERROR_INVALID, node, "%s differ: %s and %s",
                        what, ta, tb);
}

/* The container wired to connector in<k> / out<k> of n, or NULL. */
static const WeirContainer *port_container(const WeirGraph *g,
                                           const WeirState *s,
                                           const WeirNode *n, gboolean input,
                                           guint k) {
  g_autofree char *conn = g_strdup_printf(input ? "in%u" : "out%u", k);
  const WeirMemlet *m =
      weir_state_connector_memlet(s, n->id, conn, input, TRUE);
  return m ? weir_graph_container(g, m->data) : NULL;
}

static WeirExpr *dim(const WeirContainer *c, guint d) {
  return g_ptr_array_index(c->shape, d);
}

/* Product of dims [from, to) of c (new reference). */
static WeirExpr *dims_product(const WeirContainer *c, guint from, guint to) {
  WeirExpr *p = weir_expr_const(1);
  for (guint d = from; d < to; d++) {
    WeirExpr *next = weir_expr_mul(p, dim(c, d));
    weir_expr_unref(p);
    p = next;
  }
  return p;
}

static WeirExpr *mul_owned(WeirExpr *a, WeirExpr *b) {
  WeirExpr *r = weir_expr_mul(a, b);
  weir_expr_unref(a);
  weir_expr_unref(b);
  return r;
}

/* ----------------------------------------------------- conv geometry */

/* Reads an INTS attribute of exactly `len` values (or fills `dflt` when
 * absent), each at least `min`. */
static gboolean read_ints(const WeirNode *n, const char *name, guint len,
                          gint64 dflt, gint64 min, gint64 *out,
                          GError **error) {
  const GArray *a = attr_ints(n, name);
  if (!a) {
    for (guint i = 0; i < len; i++)
      out[i] = dflt;
    return TRUE;
  }
  if (a->len != len)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "attribute '%s' has %u values, expected %u", name,
                          a->len, len);
  for (guint i = 0; i < len; i++) {
    out[i] = g_array_index(a, gint64, i);
    if (out[i] < min)
      return weir_node_fail(
          error, WEIR_ERROR_INVALID, n,
          "attribute '%s' has value %" G_GINT64_FORMAT
          " at position %u, expected at least %" G_GINT64_FORMAT,
          name, out[i], i, min);
  }
  return TRUE;
}

void weir_conv_geometry_clear(WeirConvGeometry *geo) {
  for (guint i = 0; i < WEIR_CONV_MAX_SPATIAL; i++) {
    g_clear_pointer(&geo->kernel[i], weir_expr_unref);
    g_clear_pointer(&geo->pad_begin[i], weir_expr_unref);
    g_clear_pointer(&geo->pad_end[i], weir_expr_unref);
    g_clear_pointer(&geo->out[i], weir_expr_unref);
  }
}

/* Splits a total padding between begin and end: SAME_UPPER puts the odd
 * element at the end, anything else at the beginning. */
static void split_padding(WeirExpr *total, gboolean upper, WeirExpr **begin,
                          WeirExpr **end) {
  g_autoptr(WeirExpr) two = weir_expr_const(2);
  g_autoptr(WeirExpr) half = weir_expr_floordiv(total, two);
  g_autoptr(WeirExpr) rest = weir_expr_sub(total, half);
  *begin = weir_expr_ref(upper ? half : rest);
  *end = weir_expr_ref(upper ? rest : half);
}

static gboolean conv_geometry_dim(const WeirNode *n, gboolean transposed,
                                  const char *auto_pad, const gint64 *pads,
                                  const GArray *output_shape, guint i,
                                  WeirExpr *in, WeirConvGeometry *geo,
                                  GError **error) {
  guint ns = geo->n_spatial;
  gint64 s = geo->strides[i], d = geo->dilations[i];
  /* Extent of the dilated kernel: (k - 1) * d + 1. */
  g_autoptr(WeirExpr) km1 = weir_expr_add_const(geo->kernel[i], -1);
  g_autoptr(WeirExpr) km1d = weir_expr_mul_const(km1, d);
  g_autoptr(WeirExpr) extent = weir_expr_add_const(km1d, 1);
  g_autoptr(WeirExpr) stride = weir_expr_const(s);
  gboolean same = g_str_has_prefix(auto_pad, "SAME_");
  gboolean upper = strcmp(auto_pad, "SAME_UPPER") == 0;
  gboolean valid = strcmp(auto_pad, "VALID") == 0;

  if (!transposed) {
    if (same) {
      /* out = ceil(in / s); pad what the last window needs. */
      g_autoptr(WeirExpr) t = weir_expr_add_const(in, s - 1);
      geo->out[i] = weir_expr_floordiv(t, stride);
      g_autoptr(WeirExpr) om1 = weir_expr_add_const(geo->out[i], -1);
      g_autoptr(WeirExpr) span = weir_expr_mul_const(om1, s);
      g_autoptr(WeirExpr) need = weir_expr_add(span, extent);
      g_autoptr(WeirExpr) over = weir_expr_sub(need, in);
      g_autoptr(WeirExpr) zero = weir_expr_const(0);
      g_autoptr(WeirExpr) total = weir_expr_max(zero, over);
      split_padding(total, upper, &geo->pad_begin[i], &geo->pad_end[i]);
    } else {
      geo->pad_begin[i] = weir_expr_const(valid ? 0 : pads[i]);
      geo->pad_end[i] = weir_expr_const(valid ? 0 : pads[i + ns]);
      g_autoptr(WeirExpr) padded = weir_expr_add(in, geo->pad_begin[i]);
      g_autoptr(WeirExpr) padded2 = weir_expr_add(padded, geo->pad_end[i]);
      g_autoptr(WeirExpr) room = weir_expr_sub(padded2, extent);
      g_autoptr(WeirExpr) steps = weir_expr_floordiv(room, stride);
      geo->out[i] = weir_expr_add_const(steps, 1);
    }
  } else {
    /* Full output: s * (in - 1) + output_padding + extent. */
    g_autoptr(WeirExpr) im1 = weir_expr_add_const(in, -1);
    g_autoptr(WeirExpr) span = weir_expr_mul_const(im1, s);
    g_autoptr(WeirExpr) span2 = weir_expr_add(span, extent);
    g_autoptr(WeirExpr) full =
        weir_expr_add_const(span2, geo->output_padding[i]);
    WeirExpr *requested = NULL;
    if (output_shape) {
      guint off = output_shape->len - ns;
      requested = weir_expr_const(g_array_index(output_shape, gint64, off + i));
    }
    if (same) {
      geo->out[i] = requested ? requested : weir_expr_mul_const(in, s);
      g_autoptr(WeirExpr) total = weir_expr_sub(full, geo->out[i]);
      split_padding(total, upper, &geo->pad_begin[i], &geo->pad_end[i]);
    } else {
      geo->pad_begin[i] = weir_expr_const(valid ? 0 : pads[i]);
      if (requested) {
        /* The full output cropped by pad_begin; what does not fit is cut
         * (or zero-extended) at the end. */
        geo->out[i] = requested;
        g_autoptr(WeirExpr) t = weir_expr_sub(full, geo->pad_begin[i]);
        geo->pad_end[i] = weir_expr_sub(t, geo->out[i]);
      } else {
        geo->pad_end[i] = weir_expr_const(valid ? 0 : pads[i + ns]);
        g_autoptr(WeirExpr) t = weir_expr_sub(full, geo->pad_begin[i]);
        geo->out[i] = weir_expr_sub(t, geo->pad_end[i]);
      }
    }
  }
  if (expr_const_below(geo->out[i], 1)) {
    g_autofree char *text = weir_expr_to_string(geo->out[i]);
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "output size in spatial dimension %u would be %s", i,
                          text);
  }
  return TRUE;
}

gboolean weir_conv_geometry_compute(const WeirNode *n, gboolean transposed,
                                    guint ns, WeirExpr *const *in_spatial,
                                    WeirExpr *const *w_spatial,
                                    WeirConvGeometry *geo, GError **error) {
  memset(geo, 0, sizeof *geo);
  geo->n_spatial = ns;
  if (ns == 0 || ns > WEIR_CONV_MAX_SPATIAL)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "%u spatial dimensions (supported: 1 to %u)", ns,
                          WEIR_CONV_MAX_SPATIAL);
  geo->group = weir_node_attr_int(n, "group", 1);
  if (geo->group < 1)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "attribute 'group' is %" G_GINT64_FORMAT ", expected >= 1", geo->group);
  gint64 pads[2 * WEIR_CONV_MAX_SPATIAL];
  if (!read_ints(n, "strides", ns, 1, 1, geo->strides, error) ||
      !read_ints(n, "dilations", ns, 1, 1, geo->dilations, error) ||
      !read_ints(n, "pads", 2 * ns, 0, transposed ? G_MININT64 : 0, pads,
                 error))
    return FALSE;
  if (transposed &&
      !read_ints(n, "output_padding", ns, 0, 0, geo->output_padding, error))
    return FALSE;

  const GArray *ks = attr_ints(n, "kernel_shape");
  if (ks && ks->len != ns)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "attribute 'kernel_shape' has %u values, expected %u",
                          ks->len, ns);
  for (guint i = 0; i < ns; i++) {
    if (!ks) {
      geo->kernel[i] = weir_expr_ref(w_spatial[i]);
      continue;
    }
    gint64 k = g_array_index(ks, gint64, i);
    gint64 wk;
    if (k < 1 || (weir_expr_is_const(w_spatial[i], &wk) && wk != k))
      return weir_node_fail(
          error, WEIR_ERROR_INVALID, n,
          "attribute 'kernel_shape' has %" G_GINT64_FORMAT
          " in spatial dimension %u, which does not match the "
          "weights",
          k, i);
    geo->kernel[i] = weir_expr_const(k);
  }

  const char *auto_pad = weir_node_attr_string(n, "auto_pad", "NOTSET");
  if (strcmp(auto_pad, "NOTSET") != 0 && strcmp(auto_pad, "VALID") != 0 &&
      strcmp(auto_pad, "SAME_UPPER") != 0 &&
      strcmp(auto_pad, "SAME_LOWER") != 0)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "attribute 'auto_pad' is '%s', expected NOTSET, SAME_UPPER, "
        "SAME_LOWER or VALID",
        auto_pad);

  const GArray *output_shape = transposed ? attr_ints(n, "output_shape") : NULL;
  if (output_shape && output_shape->len != ns && output_shape->len != ns + 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "attribute 'output_shape' has %u values, expected %u",
                          output_shape->len, ns);

  for (guint i = 0; i < ns; i++)
    if (!conv_geometry_dim(n, transposed, auto_pad, pads, output_shape, i,
                           in_spatial[i], geo, error))
      return FALSE;
  return TRUE;
}

/* ------------------------------------------------------ einsum parser */

void weir_einsum_free(WeirEinsum *e) {
  if (!e)
    return;
  g_strfreev(e->inputs);
  g_free(e->output);
  g_free(e->ellipsis);
  g_free(e);
}

/* A term's subscripts are letters; the output's are distinct (an input
 * may repeat one: a diagonal). */
static gboolean einsum_term_ok(const char *term, gboolean output,
                               GError **error) {
  for (const char *p = term; *p; p++) {
    if (!g_ascii_isalpha(*p)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "invalid character '%c' in term '%s'", *p, term);
      return FALSE;
    }
    if (output && strchr(p + 1, *p)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "subscript '%c' repeated in the output '%s'", *p, term);
      return FALSE;
    }
  }
  return TRUE;
}

/* Whether term holds an ellipsis: none (FALSE), one "..." (TRUE), or dots
 * used otherwise (an error). */
static gboolean einsum_has_ellipsis(const char *term, gboolean *has,
                                    GError **error) {
  guint dots = 0;
  for (const char *p = term; *p; p++)
    dots += *p == '.';
  *has = dots == 3 && strstr(term, "...") != NULL;
  if (dots != 0 && !*has) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "term '%s': '.' is only allowed as one '...'", term);
    return FALSE;
  }
  return TRUE;
}

/* term with its "..." replaced by the letters ell. (transfer full) */
static char *einsum_substitute(const char *term, const char *ell) {
  const char *at = strstr(term, "...");
  if (!at)
    return g_strdup(term);
  return g_strdup_printf("%.*s%s%s", (int)(at - term), term, ell, at + 3);
}

WeirEinsum *weir_einsum_parse(const char *equation, guint n_inputs,
                              const guint *ranks, GError **error) {
  GString *clean = g_string_new(NULL);
  for (const char *p = equation ? equation : ""; *p; p++)
    if (!g_ascii_isspace(*p))
      g_string_append_c(clean, *p);
  g_autofree char *text = g_string_free(clean, FALSE);
  char *arrow = strstr(text, "->");
  if (arrow && strstr(arrow + 2, "->")) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "equation '%s' has more than one '->'", text);
    return NULL;
  }
  g_autofree char *lhs = arrow ? g_strndup(text, arrow - text) : g_strdup(text);
  g_auto(GStrv) raw = g_strsplit(lhs, ",", -1);
  if (g_strv_length(raw) != n_inputs) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "equation '%s' has %u input terms for %u inputs", text,
                g_strv_length(raw), n_inputs);
    return NULL;
  }
  /* The ellipsis: each input's "..." stands for its dimensions that the
   * letters do not name (k of them); they are aligned on the right, as
   * broadcasting aligns, and get the last k of K fresh letters. */
  g_autofree guint *k_of = g_new0(guint, n_inputs + 1);
  guint n_ell = 0;
  for (guint k = 0; k < n_inputs; k++) {
    gboolean has;
    if (!einsum_has_ellipsis(raw[k], &has, error))
      return NULL;
    if (!has)
      continue;
    if (!ranks) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "equation '%s': '...' needs the inputs' ranks", text);
      return NULL;
    }
    guint named = (guint)strlen(raw[k]) - 3;
    if (ranks[k] < named) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "term '%s' names %u dimensions, but input %u has rank %u",
                  raw[k], named, k, ranks[k]);
      return NULL;
    }
    k_of[k] = ranks[k] - named;
    n_ell = MAX(n_ell, k_of[k]);
  }
  gboolean out_has = FALSE;
  if (arrow && !einsum_has_ellipsis(arrow + 2, &out_has, error))
    return NULL;
  char ell[64] = {0};
  guint found = 0;
  static const char pool[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  for (const char *c = pool; *c && found < n_ell; c++)
    if (!strchr(text, *c))
      ell[found++] = *c;
  if (found < n_ell) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "equation '%s': no letters left for the %u dimensions of "
                "'...'",
                text, n_ell);
    return NULL;
  }

  g_autoptr(WeirEinsum) e = g_new0(WeirEinsum, 1);
  e->n_inputs = n_inputs;
  e->inputs = g_new0(char *, n_inputs + 1);
  e->ellipsis = g_strdup(ell);
  guint counts[256] = {0};
  for (guint k = 0; k < n_inputs; k++) {
    e->inputs[k] = einsum_substitute(raw[k], ell + (n_ell - k_of[k]));
    if (!einsum_term_ok(e->inputs[k], FALSE, error))
      return NULL;
    for (const char *p = e->inputs[k]; *p; p++)
      counts[(guchar)*p]++;
  }
  if (arrow) {
    e->output = einsum_substitute(arrow + 2, ell);
    if (!einsum_term_ok(e->output, TRUE, error))
      return NULL;
    for (const char *p = e->output; *p; p++)
      if (!counts[(guchar)*p]) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "output subscript '%c' of equation '%s' appears in no "
                    "input",
                    *p, text);
        return NULL;
      }
  } else {
    /* Implicit form: the ellipsis' dimensions, then the letters used
     * exactly once, in ASCII order. */
    GString *out = g_string_new(ell);
    for (guint c = 0; c < 256; c++)
      if (counts[c] == 1 && !strchr(ell, (char)c))
        g_string_append_c(out, (char)c);
    e->output = g_string_free(out, FALSE);
  }
  return g_steal_pointer(&e);
}

/* ------------------------------------------------------------- Gemm */

static const WeirOpAttrSpec gemm_attrs[] = {
    {"alpha", WEIR_ATTR_FLOAT, FALSE, "1.0", 0, 0},
    {"beta", WEIR_ATTR_FLOAT, FALSE, "1.0", 0, 0},
    {"transA", WEIR_ATTR_INT, FALSE, "0", 0, 0},
    {"transB", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};

/* C must be unidirectionally broadcastable to (M, N). */
static gboolean gemm_check_c(const WeirOpInferContext *ctx, WeirExpr *m,
                             WeirExpr *nn, GError **error) {
  const WeirOpValue *c = &ctx->inputs[2];
  if (c->rank > 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input 2 (C) has rank %u, expected at most 2",
                          c->rank);
  WeirExpr *target[2] = {m, nn};
  for (guint d = 0; d < c->rank; d++) {
    WeirExpr *want = target[2 - c->rank + d];
    if (!expr_is(c->shape[d], 1) && !weir_expr_equal(c->shape[d], want)) {
      g_autofree char *have = weir_expr_to_string(c->shape[d]);
      g_autofree char *need = weir_expr_to_string(want);
      return weir_node_fail(
          error, WEIR_ERROR_INVALID, ctx->node,
          "input 2 (C) has size %s in dimension %u, which does not "
          "broadcast to %s",
          have, d, need);
    }
  }
  return TRUE;
}

static gboolean gemm_infer(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (!input_present(ctx, 1))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 1 (B) is missing");
  if (!check_dtypes(ctx, 3, MATMUL_TYPES, error) ||
      !check_rank(ctx, 0, 2, error) || !check_rank(ctx, 1, 2, error))
    return FALSE;
  gboolean ta = weir_node_attr_int(n, "transA", 0) != 0;
  gboolean tb = weir_node_attr_int(n, "transB", 0) != 0;
  WeirExpr *const *a = ctx->inputs[0].shape;
  WeirExpr *const *b = ctx->inputs[1].shape;
  WeirExpr *m = ta ? a[1] : a[0], *ka = ta ? a[0] : a[1];
  WeirExpr *kb = tb ? b[1] : b[0], *nn = tb ? b[0] : b[1];
  if (!check_same_dim(n, "inner dimensions of A and B", ka, kb, error))
    return FALSE;
  if (input_present(ctx, 2) && !gemm_check_c(ctx, m, nn, error))
    return FALSE;
  WeirExpr *shape[2] = {m, nn};
  weir_op_set_output(ctx, 0, ctx->inputs[0].dtype, 2, shape);
  return TRUE;
}

static WeirExpr *gemm_flops(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n) {
  const WeirContainer *a = port_container(g, s, n, TRUE, 0);
  const WeirContainer *y = port_container(g, s, n, FALSE, 0);
  if (!a || !y || a->shape->len != 2 || y->shape->len != 2)
    return NULL;
  WeirExpr *k = dim(a, weir_node_attr_int(n, "transA", 0) ? 0 : 1);
  g_autoptr(WeirExpr) mn = weir_container_volume(y);
  g_autoptr(WeirExpr) mnk = weir_expr_mul(mn, k);
  g_autoptr(WeirExpr) f = weir_expr_mul_const(mnk, 2);
  if (port_container(g, s, n, TRUE, 2))
    return weir_expr_add(f, mn);
  return weir_expr_ref(f);
}

/* ----------------------------------------------------------- MatMul */

static gboolean matmul_infer(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (!input_present(ctx, 1))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n, "input 1 is missing");
  if (!check_dtypes(ctx, 2, MATMUL_TYPES, error))
    return FALSE;
  const WeirOpValue *a = &ctx->inputs[0], *b = &ctx->inputs[1];
  if (a->rank == 0 || b->rank == 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input %u is a scalar; MatMul needs rank >= 1",
                          a->rank == 0 ? 0 : 1);
  /* 1-D operands: A is promoted to (1, K), B to (K, 1). */
  WeirExpr *ka = a->shape[a->rank - 1];
  WeirExpr *kb = b->rank == 1 ? b->shape[0] : b->shape[b->rank - 2];
  if (!check_same_dim(n, "inner dimensions of A and B", ka, kb, error))
    return FALSE;
  guint ba = a->rank >= 2 ? a->rank - 2 : 0;
  guint bb = b->rank >= 2 ? b->rank - 2 : 0;
  guint ranks[2] = {ba, bb};
  WeirExpr *const *shapes[2] = {a->shape, b->shape};
  guint brank = 0;
  WeirExpr **batch = NULL;
  g_autoptr(GError) local = NULL;
  if (!weir_op_broadcast(2, ranks, shapes, &brank, &batch, &local))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n, "batch dimensions: %s",
                          local->message);
  g_autoptr(GPtrArray) out = g_ptr_array_new();
  for (guint d = 0; d < brank; d++)
    g_ptr_array_add(out, batch[d]);
  if (a->rank >= 2)
    g_ptr_array_add(out, a->shape[a->rank - 2]);
  if (b->rank >= 2)
    g_ptr_array_add(out, b->shape[b->rank - 1]);
  weir_op_set_output(ctx, 0, a->dtype, out->len, (WeirExpr *const *)out->pdata);
  for (guint d = 0; d < brank; d++)
    weir_expr_unref(batch[d]);
  g_free(batch);
  return TRUE;
}

static WeirExpr *matmul_flops(const WeirGraph *g, const WeirState *s,
                              const WeirNode *n) {
  const WeirContainer *a = port_container(g, s, n, TRUE, 0);
  const WeirContainer *y = port_container(g, s, n, FALSE, 0);
  if (!a || !y || a->shape->len == 0)
    return NULL;
  g_autoptr(WeirExpr) vol = weir_container_volume(y);
  g_autoptr(WeirExpr) vk = weir_expr_mul(vol, dim(a, a->shape->len - 1));
  return weir_expr_mul_const(vk, 2);
}

/* -------------------------------------------- Conv and ConvTranspose */

static const WeirOpAttrSpec conv_attrs[] = {
    {"auto_pad", WEIR_ATTR_STRING, FALSE, "NOTSET", 0, 0},
    {"dilations", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"group", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"kernel_shape", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"pads", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"strides", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
};

static const WeirOpAttrSpec conv_transpose_attrs[] = {
    {"auto_pad", WEIR_ATTR_STRING, FALSE, "NOTSET", 0, 0},
    {"dilations", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"group", WEIR_ATTR_INT, FALSE, "1", 0, 0},
    {"kernel_shape", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"output_padding", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"output_shape", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"pads", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"strides", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
};

/* Checks that a multiple of g: `what` (size e) divisible by the group. */
static gboolean check_divisible(const WeirNode *n, const char *what,
                                WeirExpr *e, gint64 group, GError **error) {
  gint64 v;
  if (group > 1 && weir_expr_is_const(e, &v) && v % group != 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "%s (%" G_GINT64_FORMAT
                          ") is not divisible by group %" G_GINT64_FORMAT,
                          what, v, group);
  return TRUE;
}

static gboolean conv_infer_common(WeirOpInferContext *ctx, gboolean transposed,
                                  GError **error) {
  const WeirNode *n = ctx->node;
  if (!input_present(ctx, 1))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 1 (W) is missing");
  if (!check_dtypes(ctx, 3, CONV_TYPES, error))
    return FALSE;
  const WeirOpValue *x = &ctx->inputs[0], *w = &ctx->inputs[1];
  if (x->rank < 3)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 0 (X) has rank %u, expected at least 3 (N, C, "
                          "spatial...)",
                          x->rank);
  if (!check_rank(ctx, 1, x->rank, error))
    return FALSE;
  guint ns = x->rank - 2;
  g_auto(WeirConvGeometry) geo = {0};
  if (!weir_conv_geometry_compute(n, transposed, ns, x->shape + 2, w->shape + 2,
                                  &geo, error))
    return FALSE;
  g_autoptr(WeirExpr) group = weir_expr_const(geo.group);
  WeirExpr *channels_out;
  if (!transposed) {
    /* W is (M, C/group, k...). */
    g_autoptr(WeirExpr) c = weir_expr_mul(w->shape[1], group);
    if (!check_same_dim(n, "input channels of X and W (times group)",
                        x->shape[1], c, error) ||
        !check_divisible(n, "the number of output channels", w->shape[0],
                         geo.group, error))
      return FALSE;
    channels_out = weir_expr_ref(w->shape[0]);
  } else {
    /* W is (C, M/group, k...). */
    if (!check_same_dim(n, "input channels of X and W", x->shape[1],
                        w->shape[0], error) ||
        !check_divisible(n, "the number of input channels", x->shape[1],
                         geo.group, error))
      return FALSE;
    channels_out = weir_expr_mul(w->shape[1], group);
  }
  g_autoptr(WeirExpr) m = channels_out;
  if (input_present(ctx, 2)) {
    if (!check_rank(ctx, 2, 1, error) ||
        !check_same_dim(n, "bias size and output channels",
                        ctx->inputs[2].shape[0], m, error))
      return FALSE;
  }
  WeirExpr *shape[WEIR_CONV_MAX_SPATIAL + 2];
  shape[0] = x->shape[0];
  shape[1] = m;
  for (guint i = 0; i < ns; i++)
    shape[2 + i] = geo.out[i];
  weir_op_set_output(ctx, 0, x->dtype, ns + 2, shape);
  return TRUE;
}

static gboolean conv_infer(WeirOpInferContext *ctx, GError **error) {
  return conv_infer_common(ctx, FALSE, error);
}

static gboolean conv_transpose_infer(WeirOpInferContext *ctx, GError **error) {
  return conv_infer_common(ctx, TRUE, error);
}

/* 2 * elements of `per` * W[1] * kernel size. */
static WeirExpr *conv_flops_of(const WeirContainer *per,
                               const WeirContainer *w) {
  if (!per || !w || w->shape->len < 3)
    return NULL;
  WeirExpr *v = weir_container_volume(per);
  v = mul_owned(v, dims_product(w, 1, w->shape->len));
  return mul_owned(v, weir_expr_const(2));
}

static WeirExpr *conv_flops(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n) {
  return conv_flops_of(port_container(g, s, n, FALSE, 0),
                       port_container(g, s, n, TRUE, 1));
}

static WeirExpr *conv_transpose_flops(const WeirGraph *g, const WeirState *s,
                                      const WeirNode *n) {
  return conv_flops_of(port_container(g, s, n, TRUE, 0),
                       port_container(g, s, n, TRUE, 1));
}

/* ------------------------------ integer and quantized products (ONNX) */

/* MatMulInteger (A, B, a_zero_point, b_zero_point) and ConvInteger (x, w,
 * x_zero_point, w_zero_point) give int32 (A - a_zp) x (B - b_zp); their
 * QLinear forms (operands as (q, scale, zero point) triples, then y_scale,
 * y_zero_point and for QLinearConv an int32 bias) requantize that product:
 * y = saturate(rint(acc * (a_scale b_scale / y_scale)) + y_zp).  Shapes
 * are MatMul's and Conv's, inferred on the integer operands. */

static gboolean check_input(const WeirOpInferContext *ctx, guint k,
                            const char *what, guint allowed, GError **error) {
  if (!input_present(ctx, k))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input %u (%s) is missing", k, what);
  WeirDType t = ctx->inputs[k].dtype;
  if (!(allowed & (1u << t)))
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, ctx->node,
                          "input %u (%s) has dtype %s, which the operator does "
                          "not accept",
                          k, what, weir_dtype_name(t));
  return TRUE;
}

/* An optional zero point or a scale (k) for operand `of`: its dtype (that
 * of input `like`, or f32 when like < 0), and a scalar or, when
 * len != NULL, a vector of that length. */
static gboolean check_qparam(const WeirOpInferContext *ctx, guint k,
                             const char *what, gint like, WeirExpr *len,
                             gboolean required, GError **error) {
  if (!input_present(ctx, k)) {
    if (required)
      return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                            "input %u (%s) is missing", k, what);
    return TRUE;
  }
  const WeirOpValue *v = &ctx->inputs[k];
  WeirDType want = like < 0 ? WEIR_DTYPE_F32 : ctx->inputs[like].dtype;
  if (v->dtype != want)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input %u (%s) has dtype %s, expected %s", k, what,
                          weir_dtype_name(v->dtype), weir_dtype_name(want));
  gint64 c;
  gboolean single = TRUE;
  for (guint d = 0; d < v->rank; d++)
    if (!weir_expr_is_const(v->shape[d], &c) || c != 1)
      single = FALSE;
  if (single)
    return TRUE;
  if (len && v->rank == 1 && weir_expr_equal(v->shape[0], len))
    return TRUE;
  return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, ctx->node,
                        "input %u (%s) must be a scalar%s", k, what,
                        len ? " or a vector over its axis" : "");
}

/* Runs `base` on inputs map[0..n) of ctx seen as i32 (absent where
 * map[i] is absent), writing ctx's outputs. */
static gboolean infer_on_i32(WeirOpInferContext *ctx, const guint *map, guint n,
                             gboolean (*base)(WeirOpInferContext *, GError **),
                             GError **error) {
  WeirOpValue ins[3];
  memset(ins, 0, sizeof ins);
  for (guint i = 0; i < n; i++) {
    if (!input_present(ctx, map[i]))
      continue;
    ins[i] = ctx->inputs[map[i]];
    ins[i].dtype = WEIR_DTYPE_I32;
    ins[i].value = NULL;
    ins[i].int_values = NULL;
  }
  WeirOpInferContext sub = *ctx;
  sub.n_inputs = n;
  sub.inputs = ins;
  return base(&sub, error);
}

static gboolean matmul_integer_infer(WeirOpInferContext *ctx, GError **error) {
  if (!check_input(ctx, 0, "A", QUANT_TYPES, error) ||
      !check_input(ctx, 1, "B", QUANT_TYPES, error))
    return FALSE;
  const WeirOpValue *a = &ctx->inputs[0], *b = &ctx->inputs[1];
  if (a->rank < 2 || b->rank < 2)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, ctx->node,
                          "1-D operands are not supported");
  if (!check_qparam(ctx, 2, "a_zero_point", 0, a->shape[a->rank - 2], FALSE,
                    error) ||
      !check_qparam(ctx, 3, "b_zero_point", 1, b->shape[b->rank - 1], FALSE,
                    error))
    return FALSE;
  static const guint map[] = {0, 1};
  if (!infer_on_i32(ctx, map, 2, matmul_infer, error))
    return FALSE;
  ctx->outputs[0].dtype = WEIR_DTYPE_I32;
  return TRUE;
}

static gboolean conv_integer_infer(WeirOpInferContext *ctx, GError **error) {
  if (!check_input(ctx, 0, "x", QUANT_TYPES, error) ||
      !check_input(ctx, 1, "w", QUANT_TYPES, error))
    return FALSE;
  const WeirOpValue *w = &ctx->inputs[1];
  if (!check_qparam(ctx, 2, "x_zero_point", 0, NULL, FALSE, error) ||
      !check_qparam(ctx, 3, "w_zero_point", 1, w->rank ? w->shape[0] : NULL,
                    FALSE, error))
    return FALSE;
  static const guint map[] = {0, 1};
  if (!infer_on_i32(ctx, map, 2, conv_infer, error))
    return FALSE;
  ctx->outputs[0].dtype = WEIR_DTYPE_I32;
  return TRUE;
}

/* Inputs of the QLinear forms: operand A at 0 (scale 1, zero point 2),
 * operand B at 3 (4, 5), y_scale 6, y_zero_point 7. */
static gboolean qlinear_params(WeirOpInferContext *ctx, WeirExpr *a_len,
                               WeirExpr *b_len, GError **error) {
  return check_qparam(ctx, 1, "a_scale", -1, a_len, TRUE, error) &&
         check_qparam(ctx, 2, "a_zero_point", 0, a_len, TRUE, error) &&
         check_qparam(ctx, 4, "b_scale", -1, b_len, TRUE, error) &&
         check_qparam(ctx, 5, "b_zero_point", 3, b_len, TRUE, error) &&
         check_qparam(ctx, 6, "y_scale", -1, NULL, TRUE, error) &&
         check_input(ctx, 7, "y_zero_point", QUANT_TYPES, error) &&
         check_qparam(ctx, 7, "y_zero_point", 7, NULL, TRUE, error);
}

static gboolean qlinear_matmul_infer(WeirOpInferContext *ctx, GError **error) {
  if (!check_input(ctx, 0, "a", QUANT_TYPES, error) ||
      !check_input(ctx, 3, "b", QUANT_TYPES, error))
    return FALSE;
  const WeirOpValue *a = &ctx->inputs[0], *b = &ctx->inputs[3];
  if (a->rank < 2 || b->rank < 2)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, ctx->node,
                          "1-D operands are not supported");
  if (!qlinear_params(ctx, a->shape[a->rank - 2], b->shape[b->rank - 1], error))
    return FALSE;
  static const guint map[] = {0, 3};
  if (!infer_on_i32(ctx, map, 2, matmul_infer, error))
    return FALSE;
  ctx->outputs[0].dtype = ctx->inputs[7].dtype;
  return TRUE;
}

/* QLinearMatMulBias (Weir's own operator, written by the quantize
 * transformation for Gemm and MatMul): QLinearMatMul's eight inputs and an
 * int32 bias (input 8, a scalar or one per column of b) added to the
 * accumulator before the requantization, as QLinearConv's B:
 * y = saturate(rint(f32(acc + bias) * (a_scale b_scale / y_scale)) + y_zp). */
static gboolean qlinear_matmul_bias_infer(WeirOpInferContext *ctx,
                                          GError **error) {
  /* the bias first: the outputs are only set when everything holds */
  if (!check_input(ctx, 3, "b", QUANT_TYPES, error) ||
      !check_input(ctx, 8, "bias", DT(I32), error))
    return FALSE;
  const WeirOpValue *b = &ctx->inputs[3], *bias = &ctx->inputs[8];
  gint64 c;
  gboolean single = TRUE;
  for (guint d = 0; d < bias->rank; d++)
    if (!weir_expr_is_const(bias->shape[d], &c) || c != 1)
      single = FALSE;
  if (!single && !(b->rank >= 1 && bias->rank == 1 &&
                   weir_expr_equal(bias->shape[0], b->shape[b->rank - 1])))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input 8 (bias) must be a scalar or one value per "
                          "column of b");
  return qlinear_matmul_infer(ctx, error);
}

static gboolean qlinear_conv_infer(WeirOpInferContext *ctx, GError **error) {
  if (!check_input(ctx, 0, "x", QUANT_TYPES, error) ||
      !check_input(ctx, 3, "w", QUANT_TYPES, error))
    return FALSE;
  const WeirOpValue *w = &ctx->inputs[3];
  if (!qlinear_params(ctx, NULL, w->rank ? w->shape[0] : NULL, error))
    return FALSE;
  if (input_present(ctx, 8) && !check_input(ctx, 8, "B", DT(I32), error))
    return FALSE;
  static const guint map[] = {0, 3, 8};
  if (!infer_on_i32(ctx, map, 3, conv_infer, error))
    return FALSE;
  ctx->outputs[0].dtype = ctx->inputs[7].dtype;
  return TRUE;
}

/* The products' FLOPs (the zero points' subtractions and the
 * requantization are element-wise and left out). */
static WeirExpr *quant_matmul_flops(const WeirGraph *g, const WeirState *s,
                                    const WeirNode *n) {
  return matmul_flops(g, s, n);
}

static WeirExpr *conv_integer_flops(const WeirGraph *g, const WeirState *s,
                                    const WeirNode *n) {
  return conv_flops_of(port_container(g, s, n, FALSE, 0),
                       port_container(g, s, n, TRUE, 1));
}

static WeirExpr *qlinear_conv_flops(const WeirGraph *g, const WeirState *s,
                                    const WeirNode *n) {
  return conv_flops_of(port_container(g, s, n, FALSE, 0),
                       port_container(g, s, n, TRUE, 3));
}

/* ----------------------------------------------------------- Einsum */

static const WeirOpAttrSpec einsum_attrs[] = {
    {"equation", WEIR_ATTR_STRING, TRUE, NULL, 0, 0},
};

static gboolean einsum_infer(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (!check_dtypes(ctx, ctx->n_inputs, NUMERIC_TYPES, error))
    return FALSE;
  g_autoptr(GError) local = NULL;
  g_autofree guint *ranks = g_new0(guint, ctx->n_inputs + 1);
  for (guint k = 0; k < ctx->n_inputs; k++)
    ranks[k] = input_present(ctx, k) ? ctx->inputs[k].rank : 0;
  g_autoptr(WeirEinsum) e = weir_einsum_parse(
      weir_node_attr_string(n, "equation", ""), ctx->n_inputs, ranks, &local);
  if (!e)
    return weir_node_fail(error, local->code, n, "%s", local->message);
  WeirExpr *size[256] = {NULL};
  for (guint k = 0; k < e->n_inputs; k++) {
    const char *term = e->inputs[k];
    if (!input_present(ctx, k) || ctx->inputs[k].rank != strlen(term))
      return weir_node_fail(
          error, WEIR_ERROR_INVALID, n,
          "input %u has rank %u but its term '%s' has %u subscripts", k,
          input_present(ctx, k) ? ctx->inputs[k].rank : 0, term,
          (guint)strlen(term));
    for (guint d = 0; term[d]; d++) {
      WeirExpr **slot = &size[(guchar)term[d]];
      if (!*slot) {
        *slot = ctx->inputs[k].shape[d];
      } else if (!weir_expr_equal(*slot, ctx->inputs[k].shape[d])) {
        g_autofree char *a = weir_expr_to_string(*slot);
        g_autofree char *b = weir_expr_to_string(ctx->inputs[k].shape[d]);
        if (strchr(e->ellipsis, term[d]))
          return weir_node_fail(
              error, WEIR_ERROR_UNSUPPORTED, n,
              "dimensions of '...' of sizes %s and %s (broadcasting them "
              "is not supported)",
              a, b);
        return weir_node_fail(
            error, WEIR_ERROR_INVALID, n,
            "subscript '%c' has size %s in one input and %s in "
            "input %u",
            term[d], a, b, k);
      }
    }
  }
  guint rank = strlen(e->output);
  WeirExpr *shape[256];
  for (guint d = 0; d < rank; d++)
    shape[d] = size[(guchar)e->output[d]];
  weir_op_set_output(ctx, 0, ctx->inputs[0].dtype, rank, shape);
  return TRUE;
}

static WeirExpr *einsum_flops(const WeirGraph *g, const WeirState *s,
                              const WeirNode *n) {
  guint n_in = 0;
  while (port_container(g, s, n, TRUE, n_in))
    n_in++;
  g_autofree guint *ranks = g_new0(guint, n_in + 1);
  for (guint k = 0; k < n_in; k++)
    ranks[k] = port_container(g, s, n, TRUE, k)->shape->len;
  g_autoptr(WeirEinsum) e = weir_einsum_parse(
      weir_node_attr_string(n, "equation", ""), n_in, ranks, NULL);
  if (!e)
    return NULL;
  gboolean seen[256] = {FALSE};
  WeirExpr *points = weir_expr_const(1);
  guint n_letters = 0;
  for (guint k = 0; k < n_in; k++) {
    const WeirContainer *c = port_container(g, s, n, TRUE, k);
    for (guint d = 0; e->inputs[k][d] && d < c->shape->len; d++) {
      guchar l = (guchar)e->inputs[k][d];
      if (seen[l])
        continue;
      seen[l] = TRUE;
      n_letters++;
      points = mul_owned(points, weir_expr_ref(dim(c, d)));
    }
  }
  gboolean sums = n_letters > strlen(e->output);
  return mul_owned(points, weir_expr_const(n_in - 1 + (sums ? 1 : 0)));
}

/* ------------------------------------------------------------------ Det */

/* Det: X [*, M, M] -> Y [*], M known at import and at most
 * WEIR_OP_DET_MAX_ORDER (the expansion unrolls the factorization). */
static gboolean det_infer(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  if (!weir_dtype_is_float(x->dtype))
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input 0 has dtype %s, expected a floating type",
                          weir_dtype_name(x->dtype));
  if (x->rank < 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node,
                          "input 0 has rank %u, expected at least 2", x->rank);
  if (!check_same_dim(ctx->node, "the last two dimensions",
                      x->shape[x->rank - 2], x->shape[x->rank - 1], error))
    return FALSE;
  gint64 m;
  if (!weir_expr_is_const(x->shape[x->rank - 1], &m) ||
      m > WEIR_OP_DET_MAX_ORDER)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, ctx->node,
                          "matrices must be of a known order up to %d",
                          WEIR_OP_DET_MAX_ORDER);
  weir_op_set_output(ctx, 0, x->dtype, x->rank - 2, x->shape);
  return TRUE;
}

static WeirExpr *det_flops(const WeirGraph *g, const WeirState *s,
                           const WeirNode *n) {
  const WeirContainer *x = port_container(g, s, n, TRUE, 0);
  gint64 m;
  if (!x || x->shape->len < 2 ||
      !weir_expr_is_const(dim(x, x->shape->len - 1), &m))
    return NULL;
  gint64 per = m > 0 ? m - 1 : 0;
  for (gint64 k = 0; k < m; k++)
    per += (m - k - 1) * (1 + 2 * (m - k - 1));
  WeirExpr *batch = dims_product(x, 0, x->shape->len - 2);
  return mul_owned(batch, weir_expr_const(per));
}

/* ------------------------------------------------------- registration */

static const WeirOpInfo linalg_ops[] = {
    {
        .name = "Gemm",
        .min_inputs = 2,
        .max_inputs = 3,
        .min_outputs = 1,
        .max_outputs = 1,
        .attrs = gemm_attrs,
        .n_attrs = G_N_ELEMENTS(gemm_attrs),
        .infer = gemm_infer,
        .flops = gemm_flops,
    },
    {
        .name = "MatMul",
        .min_inputs = 2,
        .max_inputs = 2,
        .min_outputs = 1,
        .max_outputs = 1,
        .attrs = NULL,
        .n_attrs = 0,
        .infer = matmul_infer,
        .flops = matmul_flops,
    },
    {
        .name = "Conv",
        .min_inputs = 2,
        .max_inputs = 3,
        .min_outputs = 1,
        .max_outputs = 1,
        .attrs = conv_attrs,
        .n_attrs = G_N_ELEMENTS(conv_attrs),
        .infer = conv_infer,
        .flops = conv_flops,
    },
    {
        .name = "ConvTranspose",
        .min_inputs = 2,
        .max_inputs = 3,
        .min_outputs = 1,
        .max_outputs = 1,
        .attrs = conv_transpose_attrs,
        .n_attrs = G_N_ELEMENTS(conv_transpose_attrs),
        .infer = conv_transpose_infer,
        .flops = conv_transpose_flops,
    },
    {
        .name = "MatMulInteger",
        .min_inputs = 2,
        .max_inputs = 4,
        .min_outputs = 1,
        .max_outputs = 1,
        .infer = matmul_integer_infer,
        .flops = quant_matmul_flops,
    },
    {
        .name = "ConvInteger",
        .min_inputs = 2,
        .max_inputs = 4,
        .min_outputs = 1,
        .max_outputs = 1,
        .attrs = conv_attrs,
        .n_attrs = G_N_ELEMENTS(conv_attrs),
        .infer = conv_integer_infer,
        .flops = conv_integer_flops,
    },
    {
        .name = "QLinearMatMul",
        .min_inputs = 8,
        .max_inputs = 8,
        .min_outputs = 1,
        .max_outputs = 1,
        .infer = qlinear_matmul_infer,
        .flops = quant_matmul_flops,
    },
    {
        .name = "QLinearMatMulBias",
        .min_inputs = 9,
        .max_inputs = 9,
        .min_outputs = 1,
        .max_outputs = 1,
        .infer = qlinear_matmul_bias_infer,
        .flops = quant_matmul_flops,
    },
    {
        .name = "QLinearConv",
        .min_inputs = 8,
        .max_inputs = 9,
        .min_outputs = 1,
        .max_outputs = 1,
        .attrs = conv_attrs,
        .n_attrs = G_N_ELEMENTS(conv_attrs),
        .infer = qlinear_conv_infer,
        .flops = qlinear_conv_flops,
    },
    {
        .name = "Einsum",
        .min_inputs = 1,
        .max_inputs = WEIR_OP_VARIADIC,
        .min_outputs = 1,
        .max_outputs = 1,
        .attrs = einsum_attrs,
        .n_attrs = G_N_ELEMENTS(einsum_attrs),
        .infer = einsum_infer,
        .flops = einsum_flops,
    },
    {
        .name = "Det",
        .min_inputs = 1,
        .max_inputs = 1,
        .min_outputs = 1,
        .max_outputs = 1,
        .infer = det_infer,
        .flops = det_flops,
    },
};

void weir_ops_register_linalg(void) {
  for (guint i = 0; i < G_N_ELEMENTS(linalg_ops); i++)
    weir_op_register(&linalg_ops[i]);
}
