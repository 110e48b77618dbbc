/* training.c — pure expansions of the training operators (ir/ops/training.c).
 *
 *   Pointwise: one map over the output shape (parameters p0, p1, ...)
 *     holding one tasklet with the node's code; input k is tasklet
 *     connector 'a' + k, read through its numpy-broadcast subset; a
 *     parallel map, or a sequential one when the node's serial is 1.
 *   SumTo: a map that zeroes the output, then a map over x that adds each
 *     element into the output element it broadcasts from (WCR sum); its
 *     loops over the dimensions y keeps come first (no atomics).
 *   ConvGradFilter: dW[m, c, kh, kw] += dY[n, m, oh, ow] * X[n, ci, ih, iw]
 *     over (m, c, kh, kw, n, oh, ow), ih = oh s - p + kh d; positions in
 *     the padding add 0 (the read index is clamped into range).
 *   ConvGradInput: dX[n, ci, ih, iw] += dY[n, m, oh, ow] * W[m, c, kh, kw]
 *     over (n, ci, ih, iw, m in the group, kh, kw) where ih + p - kh d is a
 *     multiple of the stride (a gather: every write is a plain element).
 *   MaxPoolGrad: the window offset of the first maximum of each window
 *     (WCR min over the window of "offset if x == y"), then a map over the
 *     output adding dY at that position of dX (WCR sum).
 *   AveragePoolGrad: dY / count added to every position of the window.
 */
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_training(void);

static gboolean expand_pointwise(WeirGraph *g, WeirState *s, WeirNode *n,
                                 GError **error) {
  const WeirAttr *code = weir_node_attr(n, "code");
  if (!code || code->type != WEIR_ATTR_STRING)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "attribute 'code' is missing");
  WeirPort y;
  if (!weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  guint n_ins = n->in_conns->len;
  if (n_ins == 0 || n_ins > 8)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n, "needs 1 to 8 inputs");
  g_auto(GStrv) params = weir_expand_params("p", y.rank);
  g_auto(GStrv) ranges = weir_expand_full_ranges(y.rank, y.shape);
  g_autofree WeirTaskletPort *ins = g_new0(WeirTaskletPort, n_ins);
  g_autoptr(GPtrArray) texts = g_ptr_array_new_with_free_func(g_free);
  static const char *const names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
  for (guint k = 0; k < n_ins; k++) {
    WeirPort x;
    if (!weir_port_require_input(g, s, n, k, &x, error))
      return FALSE;
    /* inputs broadcast to the output, never the other way (a [1] step
     * counter read by the update of a rank-0 value) */
    if (x.rank > y.rank) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "node '%s' (%s): input %u ('%s') has rank %u, more than "
                  "the output '%s' (rank %u) it would broadcast to",
                  n->label, n->op, k, x.container->name, x.rank,
                  y.container->name, y.rank);
      return FALSE;
    }
    char *sub = weir_expand_broadcast_subset(x.rank, x.shape, y.rank,
                                             (const char *const *)params);
    g_ptr_array_add(texts, sub);
    ins[k] = (WeirTaskletPort){x.access, names[k], sub, WEIR_WCR_NONE};
  }
  g_autofree char *out_sub =
      weir_expand_index_subset(y.rank, (const char *const *)params);
  WeirTaskletPort out = {y.access, "y", out_sub, WEIR_WCR_NONE};
  WeirNode *top =
      weir_expand_map(g, s, n->label, y.rank, (const char *const *)params,
                      (const char *const *)ranges, ins, n_ins, &out, 1, code->s,
                      NULL, 0, error);
  if (!top)
    return FALSE;
  /* serial = 1: one thread (a few values; no parallel region) */
  if (top->kind == WEIR_NODE_MAP_ENTRY && weir_node_attr_int(n, "serial", 0))
    top->map->schedule = WEIR_SCHEDULE_SEQUENTIAL;
  weir_state_remove_node(s, n->id);
  return TRUE;
}

static gboolean expand_sum_to(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  WeirPort x, like, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_input(g, s, n, 1, &like, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  g_auto(GStrv) yp = weir_expand_params("j", y.rank);
  g_auto(GStrv) yr = weir_expand_full_ranges(y.rank, y.shape);
  g_auto(GStrv) xp = weir_expand_params("i", x.rank);
  g_auto(GStrv) xr = weir_expand_full_ranges(x.rank, x.shape);
  g_autofree char *y_index =
      weir_expand_index_subset(y.rank, (const char *const *)yp);
  g_autofree char *x_index =
      weir_expand_index_subset(x.rank, (const char *const *)xp);
  g_autofree char *acc = weir_expand_broadcast_subset(y.rank, y.shape, x.rank,
                                                      (const char *const *)xp);
  /* The sum map's loops: the dimensions of x that y keeps (not broadcast
   * from size 1) first, then the summed ones, so that the outer loop,
   * which threads split, writes distinct elements of y (no atomics). */
  g_autofree const char **sp = g_new0(const char *, x.rank + 1);
  g_autofree const char **sr = g_new0(const char *, x.rank + 1);
  guint k = 0;
  for (int pass = 0; pass < 2; pass++)
    for (guint d = 0; d < x.rank; d++) {
      gint64 one;
      gboolean summed =
          d < x.rank - y.rank ||
          (weir_expr_is_const(y.shape[d - (x.rank - y.rank)], &one) &&
           one == 1);
      if (summed == (pass == 1)) {
        sp[k] = xp[d];
        sr[k++] = xr[d];
      }
    }
  g_autofree char *init_label = g_strdup_printf("%s_init", n->label);
  g_autofree char *sum_label = g_strdup_printf("%s_sum", n->label);
  WeirNode *y1 = weir_state_add_access(g, s, y.container->name);
  WeirTaskletPort init_out = {y1, "y", y_index, WEIR_WCR_NONE};
  WeirTaskletPort in_x = {x.access, "x", x_index, WEIR_WCR_NONE};
  WeirTaskletPort acc_out = {y.access, "y", acc, WEIR_WCR_SUM};
  if (!weir_expand_map(g, s, init_label, y.rank, (const char *const *)yp,
                       (const char *const *)yr, NULL, 0, &init_out, 1, "y = 0",
                       NULL, 0, error) ||
      !weir_expand_map(g, s, sum_label, x.rank, sp, sr, &in_x, 1, &acc_out, 1,
                       "y = x", &y1, 1, error))
    return FALSE;
  /* `like` only gave the shape. */
  guint like_access = like.access->id;
  weir_state_remove_node(s, n->id);
  g_autoptr(GPtrArray) lin = weir_state_in_edges(s, like_access);
  g_autoptr(GPtrArray) lout = weir_state_out_edges(s, like_access);
  if (lin->len == 0 && lout->len == 0)
    weir_state_remove_node(s, like_access);
  return TRUE;
}

/* --------------------------------------------------------------- windows */

typedef struct {
  gint64 k[2], s[2], p[2], d[2], group, include_pad;
} Window;

static gboolean ints2(const WeirNode *n, const char *name, gint64 *out,
                      GError **error) {
  const WeirAttr *a = weir_node_attr(n, name);
  if (!a || a->type != WEIR_ATTR_INTS || a->ints->len < 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "needs explicit INTS attributes kernel_shape, "
                          "strides, pads and dilations (two spatial "
                          "dimensions)");
  out[0] = g_array_index(a->ints, gint64, 0);
  out[1] = g_array_index(a->ints, gint64, 1);
  return TRUE;
}

static gboolean window_read(const WeirNode *n, Window *w, GError **error) {
  if (!ints2(n, "kernel_shape", w->k, error) ||
      !ints2(n, "strides", w->s, error) || !ints2(n, "pads", w->p, error) ||
      !ints2(n, "dilations", w->d, error))
    return FALSE;
  const WeirAttr *g = weir_node_attr(n, "group");
  w->group = g && g->type == WEIR_ATTR_INT ? g->i : 1;
  const WeirAttr *c = weir_node_attr(n, "count_include_pad");
  w->include_pad = c && c->type == WEIR_ATTR_INT ? c->i : 0;
  if (w->group < 1 || w->s[0] < 1 || w->s[1] < 1 || w->d[0] < 1 || w->d[1] < 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "strides, dilations and group must be positive");
  return TRUE;
}

/* Tasklet text of dimension d of a port. (transfer full) */
static char *dim(const WeirPort *p, guint d) {
  return weir_expand_expr_code(p->shape[d]);
}

/* "0:<dim>" ranges of a port's dimensions listed in dims (-1: a literal
 * bound given in lits). */
static char *range_of(const WeirPort *p, guint d) {
  g_autofree char *e = dim(p, d);
  return g_strdup_printf("0:%s", e);
}

/* Zeroes out.container through a new access node (returned). */
static WeirNode *zero(WeirGraph *g, WeirState *s, const WeirNode *n,
                      const WeirPort *out, GError **error) {
  g_auto(GStrv) params = weir_expand_params("j", out->rank);
  g_auto(GStrv) ranges = weir_expand_full_ranges(out->rank, out->shape);
  g_autofree char *index =
      weir_expand_index_subset(out->rank, (const char *const *)params);
  g_autofree char *label = g_strdup_printf("%s_zero", n->label);
  WeirNode *a = weir_state_add_access(g, s, out->container->name);
  WeirTaskletPort o = {a, "y", index, WEIR_WCR_NONE};
  if (!weir_expand_map(g, s, label, out->rank, (const char *const *)params,
                       (const char *const *)ranges, NULL, 0, &o, 1, "y = 0",
                       NULL, 0, error))
    return NULL;
  return a;
}

/* Removes the access node of an input used only for its shape. */
static void drop_if_unused(WeirState *s, guint id) {
  g_autoptr(GPtrArray) in = weir_state_in_edges(s, id);
  g_autoptr(GPtrArray) out = weir_state_out_edges(s, id);
  if (in->len == 0 && out->len == 0)
    weir_state_remove_node(s, id);
}

static gboolean expand_conv_grad_filter(WeirGraph *g, WeirState *s, WeirNode *n,
                                        GError **error) {
  Window w;
  WeirPort dy, x, like, dw;
  if (!window_read(n, &w, error) ||
      !weir_port_require_input(g, s, n, 0, &dy, error) ||
      !weir_port_require_input(g, s, n, 1, &x, error) ||
      !weir_port_require_input(g, s, n, 2, &like, error) ||
      !weir_port_require_output(g, s, n, 0, &dw, error))
    return FALSE;
  WeirNode *dw1 = zero(g, s, n, &dw, error);
  if (!dw1)
    return FALSE;
  g_autofree char *N = dim(&dy, 0), *M = dim(&dy, 1), *OH = dim(&dy, 2),
                  *OW = dim(&dy, 3), *H = dim(&x, 2), *W = dim(&x, 3),
                  *CG = dim(&dw, 1);
  const char *params[] = {"i_m", "i_c",  "i_kh", "i_kw",
                          "i_n", "i_oh", "i_ow", NULL};
  g_autofree char *r0 = range_of(&dw, 0), *r1 = range_of(&dw, 1),
                  *r2 = range_of(&dw, 2), *r3 = range_of(&dw, 3),
                  *r4 = g_strdup_printf("0:%s", N),
                  *r5 = g_strdup_printf("0:%s", OH),
                  *r6 = g_strdup_printf("0:%s", OW);
  const char *ranges[] = {r0, r1, r2, r3, r4, r5, r6, NULL};
  g_autofree char *code = g_strdup_printf(
      "ci = (i_m / (%s / %" G_GINT64_FORMAT ")) * %s + i_c\n"
      "ih = i_oh * %" G_GINT64_FORMAT " - %" G_GINT64_FORMAT
      " + i_kh * %" G_GINT64_FORMAT "\n"
      "iw = i_ow * %" G_GINT64_FORMAT " - %" G_GINT64_FORMAT
      " + i_kw * %" G_GINT64_FORMAT "\n"
      "ok = ih >= 0 && ih < %s && iw >= 0 && iw < %s\n"
      "v = x[i_n, ci, min(max(ih, 0), %s - 1), min(max(iw, 0), %s - 1)]\n"
      "y = ok ? a * v : 0",
      M, w.group, CG, w.s[0], w.p[0], w.d[0], w.s[1], w.p[1], w.d[1], H, W, H,
      W);
  WeirTaskletPort ins[] = {
      {dy.access, "a", "i_n, i_m, i_oh, i_ow", WEIR_WCR_NONE},
      {x.access, "x", NULL, WEIR_WCR_NONE},
  };
  WeirTaskletPort out = {dw.access, "y", "i_m, i_c, i_kh, i_kw", WEIR_WCR_SUM};
  g_autofree char *label = g_strdup_printf("%s_acc", n->label);
  if (!weir_expand_map(g, s, label, 7, params, ranges, ins, 2, &out, 1, code,
                       &dw1, 1, error))
    return FALSE;
  (void)M;
  guint like_id = like.access->id;
  weir_state_remove_node(s, n->id);
  drop_if_unused(s, like_id);
  return TRUE;
}

static gboolean expand_conv_grad_input(WeirGraph *g, WeirState *s, WeirNode *n,
                                       GError **error) {
  Window w;
  WeirPort dy, wt, like, dx;
  if (!window_read(n, &w, error) ||
      !weir_port_require_input(g, s, n, 0, &dy, error) ||
      !weir_port_require_input(g, s, n, 1, &wt, error) ||
      !weir_port_require_input(g, s, n, 2, &like, error) ||
      !weir_port_require_output(g, s, n, 0, &dx, error))
    return FALSE;
  WeirNode *dx1 = zero(g, s, n, &dx, error);
  if (!dx1)
    return FALSE;
  g_autofree char *M = dim(&dy, 1), *OH = dim(&dy, 2), *OW = dim(&dy, 3),
                  *CG = dim(&wt, 1), *KH = dim(&wt, 2), *KW = dim(&wt, 3);
  g_autoptr(WeirExpr) grp = weir_expr_const(w.group);
  g_autoptr(WeirExpr) mg = weir_expr_floordiv(dy.shape[1], grp);
  g_autofree char *MG = weir_expand_expr_code(mg);
  g_autofree char *MG_range = weir_expr_to_string(mg);
  const char *params[] = {"i_n",  "i_ci", "i_ih", "i_iw",
                          "i_mm", "i_kh", "i_kw", NULL};
  g_autofree char *r0 = range_of(&dx, 0), *r1 = range_of(&dx, 1),
                  *r2 = range_of(&dx, 2), *r3 = range_of(&dx, 3),
                  *r4 = g_strdup_printf("0:%s", MG_range),
                  *r5 = g_strdup_printf("0:%s", KH),
                  *r6 = g_strdup_printf("0:%s", KW);
  const char *ranges[] = {r0, r1, r2, r3, r4, r5, r6, NULL};
  g_autofree char *code = g_strdup_printf(
      "m = (i_ci / %s) * %s + i_mm\n"
      "c = i_ci %% %s\n"
      "th = i_ih + %" G_GINT64_FORMAT " - i_kh * %" G_GINT64_FORMAT "\n"
      "tw = i_iw + %" G_GINT64_FORMAT " - i_kw * %" G_GINT64_FORMAT "\n"
      "oh = th / %" G_GINT64_FORMAT "\n"
      "ow = tw / %" G_GINT64_FORMAT "\n"
      "ok = th >= 0 && tw >= 0 && th %% %" G_GINT64_FORMAT
      " == 0 && tw %% %" G_GINT64_FORMAT " == 0 && oh < %s && ow < %s\n"
      "v = dy[i_n, m, min(max(oh, 0), %s - 1), min(max(ow, 0), %s - 1)] * "
      "w[m, c, i_kh, i_kw]\n"
      "y = ok ? v : 0",
      CG, MG, CG, w.p[0], w.d[0], w.p[1], w.d[1], w.s[0], w.s[1], w.s[0],
      w.s[1], OH, OW, OH, OW);
  WeirTaskletPort ins[] = {
      {dy.access, "dy", NULL, WEIR_WCR_NONE},
      {wt.access, "w", NULL, WEIR_WCR_NONE},
  };
  WeirTaskletPort out = {dx.access, "y", "i_n, i_ci, i_ih, i_iw", WEIR_WCR_SUM};
  g_autofree char *label = g_strdup_printf("%s_acc", n->label);
  if (!weir_expand_map(g, s, label, 7, params, ranges, ins, 2, &out, 1, code,
                       &dx1, 1, error))
    return FALSE;
  guint like_id = like.access->id;
  weir_state_remove_node(s, n->id);
  drop_if_unused(s, like_id);
  return TRUE;
}

/* The window position of output (i_oh, i_ow) and offset (kh, kw) as
 * tasklet lines defining ih, iw and ok (inside the input). */
static char *window_pos(const Window *w, const char *kh, const char *kw,
                        const char *H, const char *W) {
  return g_strdup_printf("ih = i_oh * %" G_GINT64_FORMAT " - %" G_GINT64_FORMAT
                         " + %s * %" G_GINT64_FORMAT "\n"
                         "iw = i_ow * %" G_GINT64_FORMAT " - %" G_GINT64_FORMAT
                         " + %s * %" G_GINT64_FORMAT "\n"
                         "ok = ih >= 0 && ih < %s && iw >= 0 && iw < %s\n",
                         w->s[0], w->p[0], kh, w->d[0], w->s[1], w->p[1], kw,
                         w->d[1], H, W);
}

static gboolean expand_max_pool_grad(WeirGraph *g, WeirState *s, WeirNode *n,
                                     GError **error) {
  Window w;
  WeirPort dy, x, y, dx;
  if (!window_read(n, &w, error) ||
      !weir_port_require_input(g, s, n, 0, &dy, error) ||
      !weir_port_require_input(g, s, n, 1, &x, error) ||
      !weir_port_require_input(g, s, n, 2, &y, error) ||
      !weir_port_require_output(g, s, n, 0, &dx, error))
    return FALSE;
  g_autofree char *base = g_strdup_printf("%s_argmax", n->label);
  WeirContainer *idx =
      weir_expand_add_transient(g, base, WEIR_DTYPE_I64, dy.rank, dy.shape);
  WeirPort ip = {.access = weir_state_add_access(g, s, idx->name),
                 .container = idx,
                 .rank = dy.rank,
                 .shape = dy.shape};
  gint64 big = w.k[0] * w.k[1];
  g_autofree char *H = dim(&x, 2), *W = dim(&x, 3);
  /* idx = big; idx = min over the window of (x == y ? offset : big) */
  g_auto(GStrv) jp = weir_expand_params("j", 4);
  g_auto(GStrv) jr = weir_expand_full_ranges(4, dy.shape);
  g_autofree char *jidx = weir_expand_index_subset(4, (const char *const *)jp);
  g_autofree char *init = g_strdup_printf("r = %" G_GINT64_FORMAT, big);
  WeirTaskletPort init_out = {ip.access, "r", jidx, WEIR_WCR_NONE};
  g_autofree char *l1 = g_strdup_printf("%s_init", n->label);
  if (!weir_expand_map(g, s, l1, 4, (const char *const *)jp,
                       (const char *const *)jr, NULL, 0, &init_out, 1, init,
                       NULL, 0, error))
    return FALSE;
  WeirNode *idx2 = weir_state_add_access(g, s, idx->name);
  g_autofree char *pos = window_pos(&w, "i_kh", "i_kw", H, W);
  g_autofree char *code1 = g_strdup_printf(
      "%sv = x[i_n, i_c, min(max(ih, 0), %s - 1), min(max(iw, 0), %s - 1)]\n"
      "r = ok && v == m ? i_kh * %" G_GINT64_FORMAT
      " + i_kw : %" G_GINT64_FORMAT,
      pos, H, W, w.k[1], big);
  const char *p6[] = {"i_n", "i_c", "i_oh", "i_ow", "i_kh", "i_kw", NULL};
  g_autofree char *r0 = range_of(&dy, 0), *r1 = range_of(&dy, 1),
                  *r2 = range_of(&dy, 2), *r3 = range_of(&dy, 3),
                  *r4 = g_strdup_printf("0:%" G_GINT64_FORMAT, w.k[0]),
                  *r5 = g_strdup_printf("0:%" G_GINT64_FORMAT, w.k[1]);
  const char *ranges6[] = {r0, r1, r2, r3, r4, r5, NULL};
  WeirTaskletPort ins1[] = {
      {x.access, "x", NULL, WEIR_WCR_NONE},
      {y.access, "m", "i_n, i_c, i_oh, i_ow", WEIR_WCR_NONE},
  };
  WeirTaskletPort out1 = {idx2, "r", "i_n, i_c, i_oh, i_ow", WEIR_WCR_MIN};
  g_autofree char *l2 = g_strdup_printf("%s_argmax", n->label);
  if (!weir_expand_map(g, s, l2, 6, p6, ranges6, ins1, 2, &out1, 1, code1,
                       &ip.access, 1, error))
    return FALSE;
  WeirNode *dx1 = zero(g, s, n, &dx, error);
  if (!dx1)
    return FALSE;
  g_autofree char *pos2 = window_pos(&w, "kh", "kw", H, W);
  g_autofree char *code2 = g_strdup_printf(
      "kh = r / %" G_GINT64_FORMAT "\nkw = r %% %" G_GINT64_FORMAT "\n%s"
      "y[i_n, i_c, min(max(ih, 0), %s - 1), min(max(iw, 0), %s - 1)] = "
      "ok && r < %" G_GINT64_FORMAT " ? a : 0",
      w.k[1], w.k[1], pos2, H, W, big);
  const char *p4[] = {"i_n", "i_c", "i_oh", "i_ow", NULL};
  const char *ranges4[] = {r0, r1, r2, r3, NULL};
  WeirTaskletPort ins2[] = {
      {idx2, "r", "i_n, i_c, i_oh, i_ow", WEIR_WCR_NONE},
      {dy.access, "a", "i_n, i_c, i_oh, i_ow", WEIR_WCR_NONE},
  };
  WeirTaskletPort out2 = {dx.access, "y", NULL, WEIR_WCR_SUM};
  g_autofree char *l3 = g_strdup_printf("%s_scatter", n->label);
  if (!weir_expand_map(g, s, l3, 4, p4, ranges4, ins2, 2, &out2, 1, code2, &dx1,
                       1, error))
    return FALSE;
  weir_state_remove_node(s, n->id);
  return TRUE;
}

static gboolean expand_avg_pool_grad(WeirGraph *g, WeirState *s, WeirNode *n,
                                     GError **error) {
  Window w;
  WeirPort dy, x, dx;
  if (!window_read(n, &w, error) ||
      !weir_port_require_input(g, s, n, 0, &dy, error) ||
      !weir_port_require_input(g, s, n, 1, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &dx, error))
    return FALSE;
  if (!w.include_pad && (w.d[0] != 1 || w.d[1] != 1))
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "count_include_pad = 0 with dilations is not supported");
  WeirNode *dx1 = zero(g, s, n, &dx, error);
  if (!dx1)
    return FALSE;
  g_autofree char *H = dim(&x, 2), *W = dim(&x, 3);
  g_autofree char *pos = window_pos(&w, "i_kh", "i_kw", H, W);
  g_autofree char *cnt =
      w.include_pad
          ? g_strdup_printf("cnt = %" G_GINT64_FORMAT, w.k[0] * w.k[1])
          : g_strdup_printf(
                "h0 = i_oh * %" G_GINT64_FORMAT " - %" G_GINT64_FORMAT "\n"
                "w0 = i_ow * %" G_GINT64_FORMAT " - %" G_GINT64_FORMAT "\n"
                "cnt = (min(h0 + %" G_GINT64_FORMAT ", %s) - max(h0, 0)) * "
                "(min(w0 + %" G_GINT64_FORMAT ", %s) - max(w0, 0))",
                w.s[0], w.p[0], w.s[1], w.p[1], w.k[0], H, w.k[1], W);
  g_autofree char *code = g_strdup_printf(
      "%s%s\n"
      "y[i_n, i_c, min(max(ih, 0), %s - 1), min(max(iw, 0), %s - 1)] = "
      "ok ? a / cnt : 0",
      pos, cnt, H, W);
  const char *p6[] = {"i_n", "i_c", "i_oh", "i_ow", "i_kh", "i_kw", NULL};
  g_autofree char *r0 = range_of(&dy, 0), *r1 = range_of(&dy, 1),
                  *r2 = range_of(&dy, 2), *r3 = range_of(&dy, 3),
                  *r4 = g_strdup_printf("0:%" G_GINT64_FORMAT, w.k[0]),
                  *r5 = g_strdup_printf("0:%" G_GINT64_FORMAT, w.k[1]);
  const char *ranges6[] = {r0, r1, r2, r3, r4, r5, NULL};
  WeirTaskletPort in = {dy.access, "a", "i_n, i_c, i_oh, i_ow", WEIR_WCR_NONE};
  WeirTaskletPort out = {dx.access, "y", NULL, WEIR_WCR_SUM};
  g_autofree char *label = g_strdup_printf("%s_scatter", n->label);
  if (!weir_expand_map(g, s, label, 6, p6, ranges6, &in, 1, &out, 1, code, &dx1,
                       1, error))
    return FALSE;
  guint x_id = x.access->id;
  weir_state_remove_node(s, n->id);
  drop_if_unused(s, x_id);
  return TRUE;
}

/* ------------------------------------------------------------ GatherGrad */

static gboolean expand_gather_grad(WeirGraph *g, WeirState *s, WeirNode *n,
                                   GError **error) {
  WeirPort dy, ind, like, out;
  if (!weir_port_require_input(g, s, n, 0, &dy, error) ||
      !weir_port_require_input(g, s, n, 1, &ind, error) ||
      !weir_port_require_input(g, s, n, 2, &like, error) ||
      !weir_port_require_output(g, s, n, 0, &out, error))
    return FALSE;
  const WeirAttr *a = weir_node_attr(n, "axis");
  gint64 axis = a && a->type == WEIR_ATTR_INT ? a->i : 0;
  if (axis < 0)
    axis += out.rank;
  if (axis < 0 || axis >= (gint64)out.rank)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n, "axis out of range");
  WeirNode *z = zero(g, s, n, &out, error);
  if (!z)
    return FALSE;
  g_auto(GStrv) params = weir_expand_params("i", dy.rank);
  g_auto(GStrv) ranges = weir_expand_full_ranges(dy.rank, dy.shape);
  g_autofree char *dy_index =
      weir_expand_index_subset(dy.rank, (const char *const *)params);
  GString *ii = g_string_new(NULL), *oi = g_string_new(NULL);
  for (guint d = 0; d < ind.rank; d++)
    g_string_append_printf(ii, "%s%s", d ? ", " : "", params[axis + d]);
  for (guint d = 0; d < out.rank; d++) {
    if (d)
      g_string_append(oi, ", ");
    if ((gint64)d < axis)
      g_string_append(oi, params[d]);
    else if ((gint64)d == axis)
      g_string_append(oi, "j");
    else
      g_string_append(oi, params[d - 1 + ind.rank]);
  }
  g_autofree char *ii_s = g_string_free(ii, FALSE);
  g_autofree char *oi_s = g_string_free(oi, FALSE);
  g_autofree char *dim = weir_expand_expr_code(out.shape[axis]);
  g_autofree char *code =
      g_strdup_printf("j = k < 0 ? k + %s : k\ny[%s] = a", dim, oi_s);
  WeirTaskletPort ins[] = {
      {dy.access, "a", dy_index, WEIR_WCR_NONE},
      {ind.access, "k", ii_s, WEIR_WCR_NONE},
  };
  WeirTaskletPort o = {out.access, "y", NULL, WEIR_WCR_SUM};
  g_autofree char *label = g_strdup_printf("%s_scatter", n->label);
  if (!weir_expand_map(g, s, label, dy.rank, (const char *const *)params,
                       (const char *const *)ranges, ins, 2, &o, 1, code, &z, 1,
                       error))
    return FALSE;
  guint like_id = like.access->id;
  weir_state_remove_node(s, n->id);
  drop_if_unused(s, like_id);
  return TRUE;
}

void weir_expand_register_training(void) {
  weir_op_register_expansion("GatherGrad", "pure", expand_gather_grad);
  weir_op_register_expansion("ConvGradInput", "pure", expand_conv_grad_input);
  weir_op_register_expansion("ConvGradFilter", "pure", expand_conv_grad_filter);
  weir_op_register_expansion("MaxPoolGrad", "pure", expand_max_pool_grad);
  weir_op_register_expansion("AveragePoolGrad", "pure", expand_avg_pool_grad);
  weir_op_register_expansion("Pointwise", "pure", expand_pointwise);
  weir_op_register_expansion("SumTo", "pure", expand_sum_to);
}
