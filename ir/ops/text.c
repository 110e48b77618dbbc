/* text.c — operators on token sequences.
 *
 *   TfIdfVectorizer   x (i32 or i64 tokens, [N] or [B, N]) -> f32 [D] or
 *                     [B, D], D = the largest of ngram_indexes + 1: for
 *                     every n-gram of the pool (pool_int64s, the n-grams of
 *                     length n starting at ngram_counts[n - 1]) and every
 *                     skip 0..max_skip_count (n > 1; consecutive tokens of
 *                     the n-gram max_skip + 1 apart at most), the number of
 *                     places it occurs in the row, as TF (the count), IDF
 *                     (its weight when it occurs) or TFIDF (count x weight),
 *                     in output coordinate ngram_indexes[its place in the
 *                     pool].  String tokens (pool_strings) are not
 *                     supported: Weir has no string dtype.
 *
 * The expansion (ir/lower/expand/text.c) compares integers: 0 FLOPs.
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_text(void);

#define INVALID WEIR_ERROR_INVALID
#define UNSUPPORTED WEIR_ERROR_UNSUPPORTED

static gboolean infer_tfidf(WeirOpInferContext *ctx, GError **error) {
  const WeirOpValue *x = weir_op_require_input(ctx, 0, error);
  if (!x)
    return FALSE;
  const WeirNode *n = ctx->node;
  if (weir_node_attr(n, "pool_strings") || !weir_node_attr(n, "pool_int64s"))
    return weir_node_fail(error, UNSUPPORTED, n,
                          "only integer pools (pool_int64s) are supported");
  if ((x->dtype != WEIR_DTYPE_I32 && x->dtype != WEIR_DTYPE_I64) ||
      x->rank < 1 || x->rank > 2)
    return weir_node_fail(error, INVALID, n,
                          "input 0 must be an i32 or i64 tensor of rank 1 or "
                          "2");
  const char *mode = weir_node_attr_string(n, "mode", "");
  if (strcmp(mode, "TF") != 0 && strcmp(mode, "IDF") != 0 &&
      strcmp(mode, "TFIDF") != 0)
    return weir_node_fail(error, INVALID, n, "mode '%s'", mode);
  const GArray *idx = weir_node_attr_ints(n, "ngram_indexes");
  const GArray *counts = weir_node_attr_ints(n, "ngram_counts");
  gint64 lo = weir_node_attr_int(n, "min_gram_length", 0);
  gint64 hi = weir_node_attr_int(n, "max_gram_length", 0);
  if (!idx || !counts || lo < 1 || hi < lo ||
      weir_node_attr_int(n, "max_skip_count", -1) < 0)
    return weir_node_fail(error, INVALID, n,
                          "ngram_indexes, ngram_counts, 1 <= min_gram_length "
                          "<= max_gram_length and max_skip_count >= 0 "
                          "expected");
  gint64 d = 0;
  for (guint i = 0; i < idx->len; i++) {
    gint64 v = g_array_index(idx, gint64, i);
    if (v < 0)
      return weir_node_fail(error, INVALID, n, "negative ngram_indexes");
    d = MAX(d, v + 1);
  }
  g_autoptr(WeirExpr) de = weir_expr_const(d);
  WeirExpr *shape[2] = {x->shape[0], de};
  if (x->rank == 1)
    weir_op_set_output(ctx, 0, WEIR_DTYPE_F32, 1, &shape[1]);
  else
    weir_op_set_output(ctx, 0, WEIR_DTYPE_F32, 2, shape);
  return TRUE;
}

static const WeirOpAttrSpec tfidf_attrs[] = {
    {"max_gram_length", WEIR_ATTR_INT, TRUE, NULL, 0, 0},
    {"max_skip_count", WEIR_ATTR_INT, TRUE, NULL, 0, 0},
    {"min_gram_length", WEIR_ATTR_INT, TRUE, NULL, 0, 0},
    {"mode", WEIR_ATTR_STRING, TRUE, NULL, 0, 0},
    {"ngram_counts", WEIR_ATTR_INTS, TRUE, NULL, 0, 0},
    {"ngram_indexes", WEIR_ATTR_INTS, TRUE, NULL, 0, 0},
    {"pool_int64s", WEIR_ATTR_INTS, FALSE, NULL, 0, 0},
    {"pool_strings", WEIR_ATTR_STRINGS, FALSE, NULL, 0, 0},
    {"weights", WEIR_ATTR_FLOATS, FALSE, NULL, 0, 0},
};

static const WeirOpInfo text_ops[] = {
    {.name = "TfIdfVectorizer",
     .min_inputs = 1,
     .max_inputs = 1,
     .min_outputs = 1,
     .max_outputs = 1,
     .attrs = tfidf_attrs,
     .n_attrs = G_N_ELEMENTS(tfidf_attrs),
     .infer = infer_tfidf,
     .flops = weir_op_flops_zero},
};

void weir_ops_register_text(void) {
  for (guint i = 0; i < G_N_ELEMENTS(text_ops); i++)
    weir_op_register(&text_ops[i]);
}
