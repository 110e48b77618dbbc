/* text.c — the pure expansion of TfIdfVectorizer (schema in ir/ops/text.c).
 *
 * The pool and the output coordinate of each pool n-gram become constant
 * transients (i64); the counts start at 0; for each n-gram length n one map
 * over (row, pool n-gram, skip, start position) adds 1 at the n-gram's
 * output coordinate when the tokens at start, start + (skip + 1), ...
 * equal it (an indexed write: a dynamic memlet, summed); a last map turns
 * the counts into TF, IDF or TFIDF values with each coordinate's weight
 * (1 without weights).
 */
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_text(void);

/* A constant vector transient of len elements of dtype (i64 from gint64
 * values, or f32 from double values at v), and an access node of it. */
static WeirNode *constant(WeirGraph *g, WeirState *s, const WeirNode *n,
                          const char *what, const void *v, guint len,
                          WeirDType dtype) {
  g_autoptr(WeirExpr) le = weir_expr_const(len);
  g_autofree char *base = weir_expand_name(n, what);
  WeirContainer *c = weir_expand_add_transient(g, base, dtype, 1, &le);
  gsize es = weir_dtype_size(dtype);
  guint8 *data = g_malloc0(len * es + 1);
  for (guint i = 0; i < len; i++) {
    if (dtype == WEIR_DTYPE_I64) {
      gint64 x = GINT64_TO_LE(((const gint64 *)v)[i]);
      memcpy(data + i * es, &x, es);
    } else {
      float f = (float)((const double *)v)[i];
      memcpy(data + i * es, &f, es);
    }
  }
  g_autoptr(GBytes) bytes = g_bytes_new_take(data, len * es);
  weir_container_set_initial(c, bytes);
  return weir_state_add_access(g, s, c->name);
}

static gboolean expand_tfidf(WeirGraph *g, WeirState *s, WeirNode *n,
                             GError **error) {
  WeirPort x, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  const GArray *pool = weir_node_attr_ints(n, "pool_int64s");
  const GArray *counts = weir_node_attr_ints(n, "ngram_counts");
  const GArray *idx = weir_node_attr_ints(n, "ngram_indexes");
  const WeirAttr *wa = weir_node_attr(n, "weights");
  const char *mode = weir_node_attr_string(n, "mode", "TF");
  gint64 lo = weir_node_attr_int(n, "min_gram_length", 1);
  gint64 hi = weir_node_attr_int(n, "max_gram_length", 1);
  gint64 skip = weir_node_attr_int(n, "max_skip_count", 0);
  gint64 dim = 0;
  if (!weir_expr_is_const(y.shape[y.rank - 1], &dim) || !pool || !counts ||
      !idx || (x.rank != 1 && x.rank != 2) || y.rank != x.rank)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "the pool, the n-gram counts and indexes, and "
                          "tokens of rank 1 or 2 are needed");
  /* The pool n-grams of each length: [start, end) in the pool and the
   * ordinal of the first. */
  guint np = pool->len, nc = counts->len;
  gint64 ord = 0;
  gint64 *ords = g_newa(gint64, nc + 1);
  for (guint k = 0; k < nc; k++) {
    gint64 start = g_array_index(counts, gint64, k);
    gint64 end = k + 1 < nc ? g_array_index(counts, gint64, k + 1) : np;
    if (start < 0 || end < start || end > (gint64)np ||
        (end - start) % (k + 1) != 0)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "ngram_counts does not split the pool into "
                            "n-grams");
    ords[k] = ord;
    ord += (end - start) / (k + 1);
  }
  if (ord != (gint64)idx->len)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "ngram_indexes has %u entries for %" G_GINT64_FORMAT
                          " pool n-grams",
                          idx->len, ord);
  /* each coordinate's weight (1 without weights) */
  g_autofree double *wc = g_new0(double, dim + 1);
  for (gint64 j = 0; j < dim; j++)
    wc[j] = 1;
  for (guint i = 0; wa && wa->type == WEIR_ATTR_FLOATS && i < wa->floats->len &&
                    i < idx->len;
       i++)
    wc[g_array_index(idx, gint64, i)] = g_array_index(wa->floats, double, i);

  gboolean batched = x.rank == 2;
  WeirExpr *row_len = x.shape[x.rank - 1];
  g_autoptr(WeirExpr) de = weir_expr_const(dim);
  WeirExpr *cshape[2] = {batched ? x.shape[0] : de, de};
  g_autofree char *cbase = weir_expand_name(n, "counts");
  WeirContainer *cc = weir_expand_add_transient(
      g, cbase, WEIR_DTYPE_F32, batched ? 2 : 1, batched ? cshape : &de);
  WeirNode *cnt = weir_state_add_access(g, s, cc->name);
  WeirNode *cnt_init = weir_state_add_access(g, s, cc->name);
  {
    guint r = batched ? 2 : 1;
    g_auto(GStrv) p = weir_expand_fresh_params(g, r);
    g_auto(GStrv) ranges =
        weir_expand_full_ranges(r, batched ? cshape : (WeirExpr **)&de);
    g_autofree char *at = weir_expand_index_subset(r, (const char *const *)p);
    WeirTaskletPort out = {cnt_init, "y", at, WEIR_WCR_NONE};
    g_autofree char *label = g_strdup_printf("%s_init", n->label);
    if (!weir_expand_map(g, s, label, r, (const char *const *)p,
                         (const char *const *)ranges, NULL, 0, &out, 1, "y = 0",
                         NULL, 0, error))
      return FALSE;
  }
  WeirNode *pl = constant(g, s, n, "pool", pool->data, np, WEIR_DTYPE_I64);
  WeirNode *ix =
      constant(g, s, n, "coordinate", idx->data, idx->len, WEIR_DTYPE_I64);
  g_autofree char *lc = weir_expand_expr_code(row_len);
  gboolean any = FALSE;
  for (gint64 len = lo; len <= hi && len <= (gint64)nc; len++) {
    gint64 start = g_array_index(counts, gint64, len - 1);
    gint64 end = len < (gint64)nc ? g_array_index(counts, gint64, len) : np;
    gint64 grams = (end - start) / len;
    if (grams == 0)
      continue;
    any = TRUE;
    /* params: [b,] gram, skip, position */
    guint r = batched ? 4 : 3;
    g_auto(GStrv) p = weir_expand_fresh_params(g, r);
    const char *b = batched ? p[0] : NULL;
    const char *gm = p[r - 3], *sk = p[r - 2], *at = p[r - 1];
    g_autoptr(GPtrArray) ranges = g_ptr_array_new_with_free_func(g_free);
    if (batched) {
      g_autofree char *bc = weir_expand_expr_code(x.shape[0]);
      g_ptr_array_add(ranges, g_strdup_printf("0:%s", bc));
    }
    g_ptr_array_add(ranges, g_strdup_printf("0:%" G_GINT64_FORMAT, grams));
    g_ptr_array_add(ranges, g_strdup_printf("0:%" G_GINT64_FORMAT,
                                            len == 1 ? 1 : skip + 1));
    g_ptr_array_add(ranges, g_strdup_printf("0:%s", lc));
    g_ptr_array_add(ranges, NULL);
    GString *code = g_string_new(NULL);
    g_string_append_printf(code,
                           "last = %s + %" G_GINT64_FORMAT " * (%s + 1)\n"
                           "m = last < %s",
                           at, len - 1, sk, lc);
    for (gint64 t = 0; t < len; t++) {
      g_autofree char *tok = g_strdup_printf(
          "min(%s + %" G_GINT64_FORMAT " * (%s + 1), %s - 1)", at, t, sk, lc);
      g_string_append_printf(code,
                             " && x[%s%s%s] == p[%" G_GINT64_FORMAT
                             " + %s * %" G_GINT64_FORMAT " + %" G_GINT64_FORMAT
                             "]",
                             b ? b : "", b ? ", " : "", tok, start, gm, len, t);
    }
    g_string_append_printf(code,
                           "\nj = c[%" G_GINT64_FORMAT " + %s]\n"
                           "y[%s%sj] = m ? 1 : 0",
                           ords[len - 1], gm, b ? b : "", b ? ", " : "");
    g_autofree char *text = g_string_free(code, FALSE);
    WeirTaskletPort ins[3] = {{x.access, "x", NULL, WEIR_WCR_NONE},
                              {pl, "p", NULL, WEIR_WCR_NONE},
                              {ix, "c", NULL, WEIR_WCR_NONE}};
    WeirTaskletPort out = {cnt, "y", NULL, WEIR_WCR_SUM};
    g_autofree char *label =
        g_strdup_printf("%s_count_%" G_GINT64_FORMAT, n->label, len);
    WeirNode *top = weir_expand_map(g, s, label, r, (const char *const *)p,
                                    (const char *const *)ranges->pdata, ins, 3,
                                    &out, 1, text, &cnt_init, 1, error);
    if (!top)
      return FALSE;
    weir_expand_dynamic_input(s, top, x.container->name, "x");
    weir_expand_dynamic_input(s, top, pl->data, "p");
    weir_expand_dynamic_input(s, top, ix->data, "c");
    g_autoptr(WeirExpr) it = weir_expr_const(1);
    weir_expand_dynamic_output(s, top, "y", it);
  }
  WeirNode *src = any ? cnt : cnt_init;
  /* y = TF: count; IDF: weight when it occurs; TFIDF: count x weight */
  WeirNode *w = constant(g, s, n, "weight", wc, (guint)dim, WEIR_DTYPE_F32);
  guint r = y.rank;
  g_auto(GStrv) p = weir_expand_fresh_params(g, r);
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, y.shape);
  g_autofree char *at = weir_expand_index_subset(r, (const char *const *)p);
  const char *code = strcmp(mode, "IDF") == 0     ? "y = c > 0 ? w : 0"
                     : strcmp(mode, "TFIDF") == 0 ? "y = c * w"
                                                  : "y = c";
  WeirTaskletPort ins[2] = {{src, "c", at, WEIR_WCR_NONE},
                            {w, "w", p[r - 1], WEIR_WCR_NONE}};
  WeirTaskletPort out = {y.access, "y", at, WEIR_WCR_NONE};
  g_autofree char *label = g_strdup_printf("%s_value", n->label);
  if (!weir_expand_map(g, s, label, r, (const char *const *)p,
                       (const char *const *)ranges, ins, 2, &out, 1, code, NULL,
                       0, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

void weir_expand_register_text(void) {
  weir_op_register_expansion("TfIdfVectorizer", "pure", expand_tfidf);
}
