/* quantize.c — rewrites Conv, Gemm and MatMul into int8 arithmetic from
 * calibrated ranges ("quantize", tier 2).
 *
 * Site: one state (no nodes) holding at least one Conv, Gemm or MatMul
 * library node.  Parameters:
 *   ranges       "name=lo:hi,..." — the calibrated range of every float
 *                tensor the rewrite reads or writes (weir_quantize_calibrate
 *                in core/weir-quantize.h writes this text; `weir quantize`
 *                passes it), so the step replays from a recipe without the
 *                calibration data;
 *   per_channel  weights get one scale per output channel instead of one
 *                per tensor;
 *   exclude      a regular expression: nodes whose label it matches stay
 *                in f32;
 *   activations  u8 (default) or s8 for the activations.
 *
 * Quantization scheme:
 *   - weights: symmetric s8, scale max|w| / 127 (per tensor, or per output
 *     channel), zero point 0, values rint(w / scale) in [-127, 127];
 *   - activations: asymmetric, the range widened to contain 0, scale
 *     (hi - lo) / 255, zero point rint(qmin - lo / scale) clamped to the
 *     type (u8: 0..255, s8: -128..127);
 *   - bias: i32 rint(b / (x_scale * w_scale[channel])), added to the
 *     int32 accumulator.
 *
 * Rewrite, in dataflow order:
 *   - Conv (constant weights, optional constant bias) becomes QLinearConv;
 *     Gemm (alpha = beta = 1, transA = 0, constant B and C over the
 *     columns) and MatMul (constant 2-D B) become QLinearMatMulBias (Weir's
 *     QLinearMatMul with an i32 bias per column, B stored [K, N]):
 *     y = saturate(rint(f32(acc + bias[n]) * m[n]) + y_zp),
 *     m[n] = x_scale * w_scale[n] / y_scale, computed in the int8 GEMM's
 *     store;
 *   - a Relu that is the only reader of such an output folds into the
 *     requantization: the output is quantized with the Relu output's range
 *     (lo = 0, so the zero point is the type's minimum and saturation is
 *     the Relu);
 *   - an operand that is not already int8 is quantized by a QuantizeLinear;
 *     MaxPool, Flatten, Reshape, Squeeze, Unsqueeze and Identity of an
 *     int8 tensor run on the int8 tensor (they commute with the monotonic
 *     quantization), so consecutive quantized operators pass int8;
 *   - a DequantizeLinear gives back the float tensor where something
 *     still reads it (or it is a program output).
 *
 * Legality: every Conv/Gemm/MatMul of the state whose label the exclude
 * pattern does not match must be rewritable; otherwise the transformation
 * is refused naming the node and the problem, and the program is left as
 * it was.  At least one node must remain after exclusion.
 */
#include <math.h>
#include <string.h>

#include "tier2-util.h"
#include "weir-attr.h"
#include "weir-plugin.h"

gboolean weir_tier2_register_quantize(GError **error);

typedef struct {
  double lo, hi;
} Range;

typedef struct {
  GHashTable *ranges; /* name -> Range* */
  gboolean per_channel;
  GRegex *exclude; /* NULL: none */
  WeirDType act;   /* u8 or i8 */
} Ctx;

static void ctx_clear(Ctx *c) {
  if (c->ranges)
    g_hash_table_unref(c->ranges);
  if (c->exclude)
    g_regex_unref(c->exclude);
  memset(c, 0, sizeof *c);
}

static gboolean parse_ranges(const char *text, GHashTable *out, char **reason) {
  g_auto(GStrv) items = g_strsplit(text ? text : "", ",", -1);
  for (guint i = 0; items[i]; i++) {
    const char *item = g_strstrip(items[i]);
    if (!*item)
      continue;
    const char *eq = strrchr(item, '=');
    const char *colon = eq ? strchr(eq + 1, ':') : NULL;
    char *end1 = NULL, *end2 = NULL;
    double lo = colon ? g_ascii_strtod(eq + 1, &end1) : 0;
    double hi = colon ? g_ascii_strtod(colon + 1, &end2) : 0;
    if (!eq || eq == item || !colon || end1 != colon || !end2 || *end2 ||
        !isfinite(lo) || !isfinite(hi) || lo > hi)
      return weir_tier2_reject(reason,
                               "ranges: '%s' is not NAME=LO:HI with finite "
                               "LO <= HI",
                               item);
    Range *r = g_new(Range, 1);
    r->lo = lo;
    r->hi = hi;
    g_hash_table_replace(out, g_strndup(item, (gsize)(eq - item)), r);
  }
  return TRUE;
}

static gboolean ctx_init(Ctx *c, const WeirParams *p, char **reason) {
  memset(c, 0, sizeof *c);
  c->ranges = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  if (!parse_ranges(weir_params_get_string(p, "ranges"), c->ranges, reason))
    return FALSE;
  c->per_channel = weir_params_get_bool(p, "per_channel");
  const char *ex = weir_params_get_string(p, "exclude");
  if (ex && *ex) {
    g_autoptr(GError) e = NULL;
    c->exclude = g_regex_new(ex, 0, 0, &e);
    if (!c->exclude)
      return weir_tier2_reject(reason,
                               "exclude: '%s' is not a regular "
                               "expression: %s",
                               ex, e->message);
  }
  c->act = g_strcmp0(weir_params_get_string(p, "activations"), "s8") == 0
               ? WEIR_DTYPE_I8
               : WEIR_DTYPE_U8;
  return TRUE;
}

static gboolean is_product(const WeirNode *n) {
  return weir_tier2_is_op(n, "Conv") || weir_tier2_is_op(n, "Gemm") ||
         weir_tier2_is_op(n, "MatMul");
}

static gboolean excluded(const Ctx *c, const WeirNode *n) {
  return c->exclude && g_regex_match(c->exclude, n->label, 0, NULL);
}

static gboolean is_passthrough(const WeirNode *n) {
  static const char *const ops[] = {"MaxPool", "Flatten",   "Reshape",
                                    "Squeeze", "Unsqueeze", "Identity"};
  if (!n || n->kind != WEIR_NODE_LIBRARY)
    return FALSE;
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++)
    if (strcmp(n->op, ops[i]) == 0)
      return n->out_conns->len == 1;
  return FALSE;
}

/* Library nodes of s in dataflow order (Kahn's algorithm over memlets,
 * smallest id first among the ready ones: deterministic). */
static GArray *library_order(const WeirState *s) {
  g_autoptr(GHashTable) indeg = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    gpointer k = GUINT_TO_POINTER(m->dst);
    g_hash_table_insert(
        indeg, k,
        GUINT_TO_POINTER(GPOINTER_TO_UINT(g_hash_table_lookup(indeg, k)) + 1));
  }
  GArray *order = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GArray) ready = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (!g_hash_table_lookup(indeg, GUINT_TO_POINTER(n->id)))
      g_array_append_val(ready, n->id);
  }
  while (ready->len) {
    guint best = 0;
    for (guint i = 1; i < ready->len; i++)
      if (g_array_index(ready, guint, i) < g_array_index(ready, guint, best))
        best = i;
    guint id = g_array_index(ready, guint, best);
    g_array_remove_index(ready, best);
    const WeirNode *n = weir_state_node(s, id);
    if (n && n->kind == WEIR_NODE_LIBRARY)
      g_array_append_val(order, id);
    g_autoptr(GPtrArray) out = weir_state_out_edges(s, id);
    for (guint i = 0; i < out->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(out, i);
      gpointer k = GUINT_TO_POINTER(m->dst);
      guint d = GPOINTER_TO_UINT(g_hash_table_lookup(indeg, k)) - 1;
      g_hash_table_insert(indeg, k, GUINT_TO_POINTER(d));
      if (d == 0)
        g_array_append_val(ready, m->dst);
    }
  }
  return order;
}

static gint64 const_dim(const WeirContainer *c, guint d) {
  gint64 v = -1;
  if (d < c->shape->len)
    weir_expr_is_const(g_ptr_array_index(c->shape, d), &v);
  return v;
}

static gint64 elements(const WeirContainer *c) {
  gint64 n = 1;
  for (guint d = 0; d < c->shape->len; d++) {
    gint64 v = const_dim(c, d);
    if (v < 0)
      return -1;
    n *= v;
  }
  return n;
}

/* The single reader of transient y, when it is a Relu writing a float
 * tensor and y is used nowhere else. */
static WeirNode *sole_relu(const WeirGraph *g, const WeirState *s,
                           const WeirTier2Port *y) {
  if (!y->container->transient)
    return NULL;
  WeirTier2Use use;
  weir_tier2_use(g, y->container->name, &use);
  if (use.reads != 1 || use.writes != 1 ||
      !weir_tier2_local(g, s, y->container->name))
    return NULL;
  g_autoptr(GPtrArray) out = weir_state_out_edges(s, y->access->id);
  if (out->len != 1)
    return NULL;
  const WeirMemlet *m = g_ptr_array_index(out, 0);
  WeirNode *r = weir_state_node(s, m->dst);
  WeirTier2Port z;
  if (!weir_tier2_is_op(r, "Relu") || !weir_tier2_port(g, s, r, FALSE, 0, &z) ||
      !weir_tier2_same_layout(y->container, z.container))
    return NULL;
  return r;
}

static const Range *range_of(const Ctx *c, const char *name) {
  return g_hash_table_lookup(c->ranges, name);
}

/* Whether n (a Conv, Gemm or MatMul) can be rewritten; *reason when not.
 * `xq` tells that its input will already be int8 (no range needed). */
static gboolean check_product(const WeirGraph *g, const WeirState *s,
                              const WeirNode *n, const Ctx *c, gboolean xq,
                              char **reason) {
  if (!weir_tier2_wired(g, s, n))
    return weir_tier2_reject(reason,
                             "%s '%s' does not follow the library-node "
                             "conventions",
                             n->op, n->label);
  WeirTier2Port x, w, b, y;
  if (!weir_tier2_port(g, s, n, TRUE, 0, &x) ||
      !weir_tier2_port(g, s, n, TRUE, 1, &w) ||
      !weir_tier2_port(g, s, n, FALSE, 0, &y))
    return weir_tier2_reject(reason, "%s '%s' lacks an input or output", n->op,
                             n->label);
  if (n->out_conns->len != 1)
    return weir_tier2_reject(reason, "%s '%s' has %u outputs", n->op, n->label,
                             n->out_conns->len);
  if (x.container->dtype != WEIR_DTYPE_F32 ||
      y.container->dtype != WEIR_DTYPE_F32)
    return weir_tier2_reject(reason, "%s '%s' does not compute in f32", n->op,
                             n->label);
  if (!weir_tier2_is_constant(w.container) ||
      w.container->dtype != WEIR_DTYPE_F32 || elements(w.container) < 0)
    return weir_tier2_reject(reason,
                             "%s '%s': weights '%s' are not a constant f32 "
                             "tensor of a known shape (exclude the node to "
                             "keep it in f32)",
                             n->op, n->label, w.container->name);
  gboolean has_b = weir_tier2_port(g, s, n, TRUE, 2, &b);
  guint wr = w.container->shape->len;
  gint64 channels;
  if (weir_tier2_is_op(n, "Conv")) {
    if (wr < 3)
      return weir_tier2_reject(reason, "Conv '%s': weights of rank %u",
                               n->label, wr);
    channels = const_dim(w.container, 0);
  } else {
    if (wr != 2)
      return weir_tier2_reject(reason,
                               "%s '%s': weights '%s' have rank %u, not 2",
                               n->op, n->label, w.container->name, wr);
    if (x.container->shape->len < 2)
      return weir_tier2_reject(reason, "%s '%s': input '%s' has rank %u", n->op,
                               n->label, x.container->name,
                               x.container->shape->len);
    gboolean tb = FALSE;
    if (weir_tier2_is_op(n, "Gemm")) {
      if (weir_node_attr_float(n, "alpha", 1.0) != 1.0 ||
          weir_node_attr_float(n, "beta", 1.0) != 1.0 ||
          weir_node_attr_int(n, "transA", 0) != 0)
        return weir_tier2_reject(reason,
                                 "Gemm '%s': alpha, beta or transA is not "
                                 "the default",
                                 n->label);
      tb = weir_node_attr_int(n, "transB", 0) != 0;
    } else if (has_b) {
      return weir_tier2_reject(reason, "MatMul '%s' has a third input",
                               n->label);
    }
    channels = const_dim(w.container, tb ? 0 : 1);
  }
  if (has_b) {
    const WeirContainer *bc = b.container;
    if (!weir_tier2_is_constant(bc) || bc->dtype != WEIR_DTYPE_F32 ||
        elements(bc) != channels ||
        (bc->shape->len >= 1 && const_dim(bc, bc->shape->len - 1) != channels))
      return weir_tier2_reject(reason,
                               "%s '%s': bias '%s' is not a constant f32 "
                               "vector over the output channels",
                               n->op, n->label, bc->name);
  }
  if (!xq && !range_of(c, x.container->name))
    return weir_tier2_reject(reason,
                             "%s '%s': input '%s' has no calibrated range",
                             n->op, n->label, x.container->name);
  WeirNode *r = sole_relu(g, s, &y);
  const char *out = y.container->name;
  WeirTier2Port z;
  if (r && weir_tier2_port(g, s, r, FALSE, 0, &z))
    out = z.container->name;
  if (!range_of(c, out))
    return weir_tier2_reject(reason,
                             "%s '%s': output '%s' has no calibrated range",
                             n->op, n->label, out);
  return TRUE;
}

/* Checks every product of s in dataflow order; *count receives how many
 * will be rewritten. */
static gboolean check_state(const WeirGraph *g, const WeirState *s,
                            const Ctx *c, guint *count, char **reason) {
  g_autoptr(GArray) order = library_order(s);
  g_autoptr(GHashTable) quantized =
      g_hash_table_new(g_str_hash, g_str_equal); /* borrowed names */
  *count = 0;
  for (guint i = 0; i < order->len; i++) {
    const WeirNode *n = weir_state_node(s, g_array_index(order, guint, i));
    WeirTier2Port x, y;
    if (is_product(n) && !excluded(c, n)) {
      gboolean xq = weir_tier2_port(g, s, n, TRUE, 0, &x) &&
                    g_hash_table_contains(quantized, x.container->name);
      if (!check_product(g, s, n, c, xq, reason))
        return FALSE;
      weir_tier2_port(g, s, n, FALSE, 0, &y);
      WeirNode *r = sole_relu(g, s, &y);
      WeirTier2Port z;
      if (r && weir_tier2_port(g, s, r, FALSE, 0, &z))
        g_hash_table_add(quantized, z.container->name);
      else
        g_hash_table_add(quantized, y.container->name);
      (*count)++;
    } else if (is_passthrough(n) && weir_tier2_port(g, s, n, TRUE, 0, &x) &&
               g_hash_table_contains(quantized, x.container->name) &&
               weir_tier2_port(g, s, n, FALSE, 0, &y) &&
               y.container->transient) {
      g_hash_table_add(quantized, y.container->name);
    }
  }
  return TRUE;
}

static void qt_match(const WeirGraph *g, GArray *sites) {
  for (guint si = 0; si < g->states->len; si++) {
    const WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++)
      if (is_product(g_ptr_array_index(s->nodes, i))) {
        WeirSite site = {.state = s->id, .n_nodes = 0};
        g_array_append_val(sites, site);
        break;
      }
  }
}

static gboolean qt_can_apply(const WeirGraph *g, const WeirSite *site,
                             const WeirParams *params, char **reason) {
  WeirState *s = weir_tier2_site_state(g, site->state);
  if (!s || site->n_nodes != 0)
    return weir_tier2_reject(reason, "the site is not a state");
  Ctx c;
  gboolean ok = ctx_init(&c, params, reason);
  guint count = 0;
  if (ok)
    ok = check_state(g, s, &c, &count, reason);
  if (ok && count == 0)
    ok = weir_tier2_reject(reason,
                           "state %u '%s' has no Conv, Gemm or MatMul left to "
                           "quantize",
                           s->id, s->label);
  ctx_clear(&c);
  return ok;
}

/* ---------------------------------------------------------------- apply */

/* A quantized stand-in for a float tensor. */
typedef struct {
  char *qname;   /* the int8 container */
  guint qaccess; /* its access node (written by the producer) */
  guint faccess; /* the float tensor's access node, which a
                    DequantizeLinear writes if still read (0: none) */
  double scale;
  gint64 zp;
  char *sname, *zname; /* scale and zero point constants */
} QTensor;

static void qtensor_free(QTensor *q) {
  g_free(q->qname);
  g_free(q->sname);
  g_free(q->zname);
  g_free(q);
}

static void act_params(const Ctx *c, const Range *r, double *scale,
                       gint64 *zp) {
  double lo = MIN(r->lo, 0.0), hi = MAX(r->hi, 0.0);
  double qmin = c->act == WEIR_DTYPE_U8 ? 0 : -128;
  double qmax = qmin + 255;
  double s = (double)(float)((hi - lo) / 255.0);
  if (!(s > 0) || !isfinite(s))
    s = 1.0;
  double z = rint(qmin - lo / s);
  *scale = s;
  *zp = (gint64)CLAMP(z, qmin, qmax);
}

static char *fresh_name(const WeirGraph *g, const char *base) {
  for (guint k = 0;; k++) {
    char *name = k ? g_strdup_printf("%s_%u", base, k) : g_strdup(base);
    if (!weir_graph_container(g, name) && !weir_graph_has_symbol(g, name))
      return name;
    g_free(name);
  }
}

static WeirContainer *add_scalar(WeirGraph *g, const char *base,
                                 WeirDType dtype, double v) {
  g_autoptr(WeirTensor) t = weir_tensor_new(dtype, 0, NULL);
  weir_tensor_set(t, 0, v);
  return weir_tier2_add_constant(g, base, t);
}

static WeirContainer *add_transient(WeirGraph *g, const char *base,
                                    WeirDType dtype, const WeirContainer *like,
                                    GError **error) {
  g_autofree char *name = fresh_name(g, base);
  return weir_graph_add_container(g, name, dtype, like->shape->len,
                                  (WeirExpr *const *)like->shape->pdata, TRUE,
                                  error);
}

/* Memlet carrying all of container c between nodes src and dst. */
static gboolean wire(WeirGraph *g, WeirState *s, guint src, const char *sconn,
                     guint dst, const char *dconn, const WeirContainer *c,
                     GError **error) {
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autofree char *text = weir_subset_to_string(full);
  return weir_state_add_memlet(g, s, src, sconn, dst, dconn, c->name, text,
                               error) != NULL;
}

/* Reads constant c into input connector conn of n (a new access node). */
static gboolean read_const(WeirGraph *g, WeirState *s, WeirNode *n,
                           const char *conn, const WeirContainer *c,
                           GError **error) {
  WeirNode *a = weir_state_add_access(g, s, c->name);
  return wire(g, s, a->id, NULL, n->id, conn, c, error);
}

static WeirNode *add_library(WeirGraph *g, WeirState *s, const char *label,
                             const char *op, guint n_in) {
  static const char *const ins[] = {"in0", "in1", "in2", "in3", "in4",
                                    "in5", "in6", "in7", "in8", NULL};
  const char *in[10];
  for (guint i = 0; i < n_in; i++)
    in[i] = ins[i];
  in[n_in] = NULL;
  const char *outs[] = {"out0", NULL};
  return weir_state_add_library(g, s, label, op, in, outs);
}

/* The quantized form of float tensor x read through port xp: the existing
 * one, or a new QuantizeLinear from x's access node. */
static QTensor *ensure_quantized(WeirGraph *g, WeirState *s, const Ctx *c,
                                 GHashTable *qmap, const WeirTier2Port *xp,
                                 GError **error) {
  const char *xname = xp->container->name;
  QTensor *q = g_hash_table_lookup(qmap, xname);
  if (q)
    return q;
  q = g_new0(QTensor, 1);
  act_params(c, range_of(c, xname), &q->scale, &q->zp);
  g_autofree char *sb = g_strdup_printf("%s_scale", xname);
  g_autofree char *zb = g_strdup_printf("%s_zero_point", xname);
  g_autofree char *qb = g_strdup_printf("%s_quantized", xname);
  q->sname = g_strdup(add_scalar(g, sb, WEIR_DTYPE_F32, q->scale)->name);
  q->zname = g_strdup(add_scalar(g, zb, c->act, (double)q->zp)->name);
  WeirContainer *qc = add_transient(g, qb, c->act, xp->container, error);
  if (!qc) {
    qtensor_free(q);
    return NULL;
  }
  q->qname = g_strdup(qc->name);
  g_hash_table_insert(qmap, g_strdup(xname), q);
  g_autofree char *label = g_strdup_printf("%s_QuantizeLinear", xname);
  WeirNode *ql = add_library(g, s, label, "QuantizeLinear", 3);
  WeirNode *qa = weir_state_add_access(g, s, q->qname);
  q->qaccess = qa->id;
  if (!wire(g, s, xp->access->id, NULL, ql->id, "in0", xp->container, error) ||
      !read_const(g, s, ql, "in1", weir_graph_container(g, q->sname), error) ||
      !read_const(g, s, ql, "in2", weir_graph_container(g, q->zname), error) ||
      !wire(g, s, ql->id, "out0", qa->id, NULL, qc, error))
    return NULL;
  return q;
}

/* Symmetric s8 weights: scales per channel (one entry when not per
 * channel).  wt is [channels, per] when `rows`, else [per, channels]. */
static void quantize_weights(const WeirTensor *wt, gint64 channels,
                             gboolean rows, gboolean per_channel, WeirTensor *q,
                             double *scales) {
  gint64 per = channels ? wt->count / channels : 0;
  guint n_s = per_channel ? (guint)channels : 1;
  for (guint k = 0; k < n_s; k++)
    scales[k] = 0;
  for (gint64 i = 0; i < wt->count; i++) {
    gint64 ch = rows ? i / per : i % channels;
    guint k = per_channel ? (guint)ch : 0;
    scales[k] = MAX(scales[k], fabs(weir_tensor_get(wt, i)));
  }
  for (guint k = 0; k < n_s; k++) {
    double s = (double)(float)(scales[k] / 127.0);
    scales[k] = s > 0 && isfinite(s) ? s : 1.0;
  }
  for (gint64 i = 0; i < wt->count; i++) {
    gint64 ch = rows ? i / per : i % channels;
    double s = scales[per_channel ? ch : 0];
    weir_tensor_set(q, i, CLAMP(rint(weir_tensor_get(wt, i) / s), -127, 127));
  }
}

static void copy_attrs(WeirNode *to, const WeirNode *from) {
  for (guint i = 0; i < from->attrs->len; i++) {
    const WeirAttr *a = g_ptr_array_index(from->attrs, i);
    switch (a->type) {
    case WEIR_ATTR_INT:
      weir_node_set_attr_int(to, a->name, a->i);
      break;
    case WEIR_ATTR_FLOAT:
      weir_node_set_attr_float(to, a->name, a->f);
      break;
    case WEIR_ATTR_STRING:
      weir_node_set_attr_string(to, a->name, a->s);
      break;
    case WEIR_ATTR_INTS:
      weir_node_set_attr_ints(to, a->name, (const gint64 *)a->ints->data,
                              a->ints->len);
      break;
    default:
      break;
    }
  }
}

static gboolean rewrite_product(WeirGraph *g, WeirState *s, const Ctx *c,
                                GHashTable *qmap, WeirNode *n, GError **error) {
  WeirTier2Port x, w, b, y, z;
  weir_tier2_port(g, s, n, TRUE, 0, &x);
  weir_tier2_port(g, s, n, TRUE, 1, &w);
  weir_tier2_port(g, s, n, FALSE, 0, &y);
  gboolean has_b = weir_tier2_port(g, s, n, TRUE, 2, &b);
  WeirNode *relu = sole_relu(g, s, &y);
  if (relu)
    weir_tier2_port(g, s, relu, FALSE, 0, &z);
  const WeirTier2Port *outp = relu ? &z : &y;

  g_autofree char *label = g_strdup(n->label);
  g_autofree char *wname = g_strdup(w.container->name);
  g_autofree char *bname = has_b ? g_strdup(b.container->name) : NULL;
  g_autofree char *yname = g_strdup(y.container->name);
  g_autofree char *outname = g_strdup(outp->container->name);
  gboolean conv = weir_tier2_is_op(n, "Conv");
  gboolean tb =
      weir_tier2_is_op(n, "Gemm") && weir_node_attr_int(n, "transB", 0) != 0;

  QTensor *xq = ensure_quantized(g, s, c, qmap, &x, error);
  if (!xq)
    return FALSE;
  /* weights */
  g_autoptr(WeirTensor) wt = weir_tier2_constant_tensor(w.container);
  g_autoptr(WeirTensor) bt =
      has_b ? weir_tier2_constant_tensor(b.container) : NULL;
  gint64 channels = conv || tb ? wt->shape[0] : wt->shape[1];
  gint64 per = wt->count / channels;
  g_autoptr(WeirTensor) wq = NULL;
  g_autofree double *ws = g_new0(double, channels);
  if (conv) {
    wq = weir_tensor_new(WEIR_DTYPE_I8, wt->rank, wt->shape);
    quantize_weights(wt, channels, TRUE, c->per_channel, wq, ws);
  } else {
    /* QLinearMatMulBias's B is [K, N] */
    gint64 shape[2] = {per, channels};
    g_autoptr(WeirTensor) kn = weir_tensor_new(WEIR_DTYPE_F32, 2, shape);
    for (gint64 k = 0; k < per; k++)
      for (gint64 j = 0; j < channels; j++)
        weir_tensor_set(
            kn, k * channels + j,
            weir_tensor_get(wt, tb ? j * per + k : k * channels + j));
    wq = weir_tensor_new(WEIR_DTYPE_I8, 2, shape);
    quantize_weights(kn, channels, FALSE, c->per_channel, wq, ws);
  }
  if (!c->per_channel)
    for (gint64 j = 1; j < channels; j++)
      ws[j] = ws[0];
  /* output quantization */
  QTensor *yq = g_new0(QTensor, 1);
  act_params(c, range_of(c, outname), &yq->scale, &yq->zp);
  g_autofree char *sb = g_strdup_printf("%s_scale", outname);
  g_autofree char *zb = g_strdup_printf("%s_zero_point", outname);
  g_autofree char *qb = g_strdup_printf("%s_quantized", outname);
  yq->sname = g_strdup(add_scalar(g, sb, WEIR_DTYPE_F32, yq->scale)->name);
  yq->zname = g_strdup(add_scalar(g, zb, c->act, (double)yq->zp)->name);
  WeirContainer *yqc = add_transient(g, qb, c->act, outp->container, error);
  if (!yqc) {
    qtensor_free(yq);
    return FALSE;
  }
  yq->qname = g_strdup(yqc->name);
  yq->faccess = outp->access->id;
  yq->qaccess = weir_state_add_access(g, s, yq->qname)->id;
  g_hash_table_insert(qmap, g_strdup(outname), yq);

  /* bias in i32, in units of x_scale * w_scale */
  g_autoptr(WeirTensor) bq = weir_tensor_new(WEIR_DTYPE_I32, 1, &channels);
  for (gint64 j = 0; j < channels; j++) {
    double v = bt ? weir_tensor_get(bt, j) / (xq->scale * ws[j]) : 0.0;
    weir_tensor_set(bq, j, CLAMP(rint(v), -2147483647.0, 2147483647.0));
  }
  g_autofree char *wqb = g_strdup_printf("%s_quantized", wname);
  WeirContainer *wqc = weir_tier2_add_constant(g, wqb, wq);
  g_autofree char *bqb = g_strdup_printf("%s_bias_quantized", wname);
  WeirContainer *bqc = weir_tier2_add_constant(g, bqb, bq);
  gint64 n_s = c->per_channel ? channels : 1;
  g_autoptr(WeirTensor) wst =
      c->per_channel ? weir_tensor_new(WEIR_DTYPE_F32, 1, &channels)
                     : weir_tensor_new(WEIR_DTYPE_F32, 0, NULL);
  g_autoptr(WeirTensor) wzt = c->per_channel
                                  ? weir_tensor_new(WEIR_DTYPE_I8, 1, &channels)
                                  : weir_tensor_new(WEIR_DTYPE_I8, 0, NULL);
  for (gint64 j = 0; j < n_s; j++)
    weir_tensor_set(wst, j, ws[j]);
  g_autofree char *wsb = g_strdup_printf("%s_scale", wname);
  g_autofree char *wzb = g_strdup_printf("%s_zero_point", wname);
  WeirContainer *wsc = weir_tier2_add_constant(g, wsb, wst);
  WeirContainer *wzc = weir_tier2_add_constant(g, wzb, wzt);

  guint x_access = xq->qaccess;
  WeirContainer *xqc = weir_graph_container(g, xq->qname);
  /* QLinearConv, or for Gemm and MatMul QLinearMatMulBias: both take the
   * bias and requantize in Weir's int8 GEMM's store (bias per output
   * channel or per column, multiplier x_scale w_scale / y_scale), so no
   * i32 accumulator reaches memory */
  WeirNode *q =
      add_library(g, s, label, conv ? "QLinearConv" : "QLinearMatMulBias", 9);
  if (conv)
    copy_attrs(q, n);
  if (!wire(g, s, x_access, NULL, q->id, "in0", xqc, error) ||
      !read_const(g, s, q, "in1", weir_graph_container(g, xq->sname), error) ||
      !read_const(g, s, q, "in2", weir_graph_container(g, xq->zname), error) ||
      !read_const(g, s, q, "in3", wqc, error) ||
      !read_const(g, s, q, "in4", wsc, error) ||
      !read_const(g, s, q, "in5", wzc, error) ||
      !read_const(g, s, q, "in6", weir_graph_container(g, yq->sname), error) ||
      !read_const(g, s, q, "in7", weir_graph_container(g, yq->zname), error) ||
      !read_const(g, s, q, "in8", bqc, error) ||
      !wire(g, s, q->id, "out0", yq->qaccess, NULL, yqc, error))
    return FALSE;
  /* drop the float nodes */
  if (relu) {
    guint ya = y.access->id;
    weir_state_remove_node(s, relu->id);
    weir_state_remove_node(s, ya);
  }
  weir_state_remove_node(s, n->id);
  weir_tier2_drop_if_unused(g, yname);
  weir_tier2_drop_if_unused(g, wname);
  if (bname)
    weir_tier2_drop_if_unused(g, bname);
  return TRUE;
}

/* Runs pass-through node n on the int8 stand-in of its input. */
static gboolean rewrite_passthrough(WeirGraph *g, WeirState *s, const Ctx *c,
                                    GHashTable *qmap, WeirNode *n,
                                    GError **error) {
  WeirTier2Port x, y;
  weir_tier2_port(g, s, n, TRUE, 0, &x);
  weir_tier2_port(g, s, n, FALSE, 0, &y);
  const QTensor *xq = g_hash_table_lookup(qmap, x.container->name);
  g_autofree char *yname = g_strdup(y.container->name);
  g_autofree char *qb = g_strdup_printf("%s_quantized", yname);
  WeirContainer *yqc = add_transient(g, qb, c->act, y.container, error);
  if (!yqc)
    return FALSE;
  QTensor *yq = g_new0(QTensor, 1);
  yq->qname = g_strdup(yqc->name);
  yq->scale = xq->scale;
  yq->zp = xq->zp;
  yq->sname = g_strdup(xq->sname);
  yq->zname = g_strdup(xq->zname);
  yq->faccess = y.access->id;
  yq->qaccess = weir_state_add_access(g, s, yq->qname)->id;
  guint xa = xq->qaccess;
  WeirContainer *xqc = weir_graph_container(g, xq->qname);
  g_hash_table_insert(qmap, g_strdup(yname), yq);
  weir_state_remove_memlet(s, x.memlet->id);
  weir_state_remove_memlet(s, y.memlet->id);
  return wire(g, s, xa, NULL, n->id, "in0", xqc, error) &&
         wire(g, s, n->id, "out0", yq->qaccess, NULL, yqc, error);
}

/* Gives back float tensors still needed; removes the others. */
static gboolean finish(WeirGraph *g, WeirState *s, GHashTable *qmap,
                       GError **error) {
  g_autoptr(GList) keys = g_hash_table_get_keys(qmap);
  keys = g_list_sort(keys, (GCompareFunc)strcmp);
  for (GList *l = keys; l; l = l->next) {
    const char *fname = l->data;
    const QTensor *q = g_hash_table_lookup(qmap, fname);
    if (!q->faccess)
      continue;
    WeirNode *fa = weir_state_node(s, q->faccess);
    WeirContainer *fc = weir_graph_container(g, fname);
    if (!fa || !fc)
      continue;
    g_autoptr(GPtrArray) out = weir_state_out_edges(s, fa->id);
    /* still read here, read in another state, or an argument: given back */
    if (out->len == 0 && fc->transient && weir_tier2_local(g, s, fname)) {
      weir_state_remove_node(s, fa->id);
      weir_tier2_drop_if_unused(g, fname);
      continue;
    }
    g_autofree char *label = g_strdup_printf("%s_DequantizeLinear", fname);
    WeirNode *dq = add_library(g, s, label, "DequantizeLinear", 3);
    if (!wire(g, s, q->qaccess, NULL, dq->id, "in0",
              weir_graph_container(g, q->qname), error) ||
        !read_const(g, s, dq, "in1", weir_graph_container(g, q->sname),
                    error) ||
        !read_const(g, s, dq, "in2", weir_graph_container(g, q->zname),
                    error) ||
        !wire(g, s, dq->id, "out0", fa->id, NULL, fc, error))
      return FALSE;
  }
  return TRUE;
}

static gboolean qt_apply(WeirGraph *g, const WeirSite *site,
                         const WeirParams *params, GError **error) {
  WeirState *s = weir_tier2_site_state(g, site->state);
  Ctx c;
  g_autofree char *reason = NULL;
  if (!ctx_init(&c, params, &reason)) {
    ctx_clear(&c);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "quantize: %s", reason);
    return FALSE;
  }
  g_autoptr(GHashTable) qmap = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)qtensor_free);
  g_autoptr(GArray) order = library_order(s);
  gboolean ok = TRUE;
  for (guint i = 0; ok && i < order->len; i++) {
    WeirNode *n = weir_state_node(s, g_array_index(order, guint, i));
    WeirTier2Port x, y;
    if (!n)
      continue; /* a Relu folded into its producer */
    if (is_product(n) && !excluded(&c, n)) {
      ok = rewrite_product(g, s, &c, qmap, n, error);
    } else if (is_passthrough(n) && weir_tier2_port(g, s, n, TRUE, 0, &x) &&
               g_hash_table_contains(qmap, x.container->name) &&
               weir_tier2_port(g, s, n, FALSE, 0, &y) &&
               y.container->transient) {
      ok = rewrite_passthrough(g, s, &c, qmap, n, error);
    }
  }
  if (ok)
    ok = finish(g, s, qmap, error);
  ctx_clear(&c);
  return ok;
}

static const WeirParamSpec qt_params[] = {
    {.name = "ranges",
     .type = WEIR_PARAM_STRING,
     .default_value = NULL,
     .doc = "calibrated ranges NAME=LO:HI,... of the float tensors "
            "(weir quantize --calibrate writes them)"},
    {.name = "per_channel",
     .type = WEIR_PARAM_BOOL,
     .default_value = "false",
     .doc = "one weight scale per output channel instead of per tensor"},
    {.name = "exclude",
     .type = WEIR_PARAM_STRING,
     .default_value = "",
     .doc = "regular expression: Conv/Gemm/MatMul nodes whose label matches "
            "stay in f32"},
    {.name = "activations",
     .type = WEIR_PARAM_CHOICE,
     .default_value = "u8",
     .choices = "u8|s8",
     .doc = "element type of the quantized activations (asymmetric)"},
};

static const WeirTransformInfo quantize = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "quantize",
    .tier = 2,
    .description = "rewrite Conv/Gemm/MatMul into int8 with int32 "
                   "accumulation from calibrated ranges",
    .params = qt_params,
    .n_params = G_N_ELEMENTS(qt_params),
    .match = qt_match,
    .can_apply = qt_can_apply,
    .apply = qt_apply,
};

gboolean weir_tier2_register_quantize(GError **error) {
  return weir_transform_register(&quantize, error);
}
