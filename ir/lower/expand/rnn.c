/* rnn.c — the pure expansion of RNN, GRU and LSTM (schemas in
 * ir/ops/rnn.c): a loop over time in Weir's own control flow.
 *
 * The library node becomes one nested program node whose connectors are the
 * operator's inputs and outputs (arguments X, W, R, B, L (sequence_lens),
 * H0, C0, P, Y, YH, YC of the nested program, those the node has).  The
 * nested program holds the states
 *
 *   init --(t = 0)--> guard --(t < T)--> step --(t = t + 1)--> guard
 *                     guard --(t >= T)--> fin
 *
 * with transients Hs (and Cs for LSTM) of shape [D, T + 1, B, H]: init
 * writes the initial state to Hs[:, 0]; step t reads Hs[d, t] and writes
 * Hs[d, t + 1]; fin copies Hs[:, 1:] to Y and Hs[:, T] to Y_h.  A step is,
 * per direction d: Zx[d] = X[t] W[d]^T + Wb[d] and Zh[d] = Hs[d, t] R[d]^T
 * + Rb[d] (an initialization map and two WCR-sum maps; [B, G*H] each),
 * then one element-wise map over [B, H] computing the cell from the gate
 * slices.  The reverse direction reads X at T - 1 - t and its Y at time u
 * is Hs[d, T - u].  GRU with linear_before_reset = 0 computes the reset
 * gate first (map "reset": Rh = r * Hs[d, t]) and accumulates Rh Rh_w^T
 * into the third gate of Zh.  sequence_lens holds the state once t reaches
 * a row's length and zeroes Y there; the reverse direction then reads row
 * b of X at len_b - 1 - t and its Y at time u is Hs[d, len_b - u] (indexed
 * reads, marked dynamic).  A map over t is not
 * used: iterations of a map are independent by the IR's definition.
 */
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_rnn(void);

#define INVALID WEIR_ERROR_INVALID
#define UNSUPPORTED WEIR_ERROR_UNSUPPORTED

/* Names of the nested program's arguments, by input then output index. */
static const char *const in_names[] = {"X", "W",  "R",  "B",
                                       "L", "H0", "C0", "P"};
static const char *const out_names[] = {"Y", "YH", "YC"};

typedef struct {
  WeirGraph *ng; /* the nested program (borrowed while building) */
  const WeirNode *n;
  guint gates, dirs;
  gint64 hidden;
  gboolean layout1, gru, lstm, lbr, input_forget, has_len;
  char *t;         /* the loop symbol */
  char *T, *B, *I; /* sizes as expression text (subsets) */
  char **p;        /* map parameters, 3 */
  gboolean in[8];  /* inputs present */
  gboolean out[3]; /* outputs present */
  GPtrArray *acts; /* char*: activation names, per_dir * dirs */
  GArray *alpha;   /* double, or NULL */
  GArray *beta;    /* double, or NULL */
  gboolean has_clip;
  double clip;
} Rnn;

static void rnn_clear(Rnn *r) {
  g_free(r->t);
  g_free(r->T);
  g_free(r->B);
  g_free(r->I);
  g_strfreev(r->p);
  g_clear_pointer(&r->acts, g_ptr_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Rnn, rnn_clear)

/* Tasklet text of activation number a applied to expression z (with the
 * clip applied to its input). */
static char *activation(const Rnn *r, guint a, const char *z, GError **error) {
  const char *name = g_ptr_array_index(r->acts, a);
  g_autofree char *x = NULL;
  if (r->has_clip) {
    g_autofree char *c = weir_expand_float_literal(r->clip);
    x = g_strdup_printf("max(-%s, min(%s, %s))", c, c, z);
  } else {
    x = g_strdup_printf("(%s)", z);
  }
  gboolean has_a = r->alpha && a < r->alpha->len;
  gboolean has_b = r->beta && a < r->beta->len;
  double av = has_a ? g_array_index(r->alpha, double, a) : 0;
  double bv = has_b ? g_array_index(r->beta, double, a) : 0;
#define ALPHA(d) weir_expand_float_literal(has_a ? av : (d))
#define BETA(d) weir_expand_float_literal(has_b ? bv : (d))
  if (g_ascii_strcasecmp(name, "Sigmoid") == 0)
    return g_strdup_printf("(1 / (1 + exp(-%s)))", x);
  if (g_ascii_strcasecmp(name, "Tanh") == 0)
    return g_strdup_printf("tanh(%s)", x);
  if (g_ascii_strcasecmp(name, "Relu") == 0)
    return g_strdup_printf("max(%s, 0)", x);
  if (g_ascii_strcasecmp(name, "Softsign") == 0)
    return g_strdup_printf("(%s / (1 + abs(%s)))", x, x);
  if (g_ascii_strcasecmp(name, "Softplus") == 0)
    return g_strdup_printf("log(1 + exp(%s))", x);
  g_autofree char *al = NULL, *be = NULL;
  if (g_ascii_strcasecmp(name, "Affine") == 0) {
    al = ALPHA(1.0);
    be = BETA(0.0);
    return g_strdup_printf("(%s * %s + %s)", al, x, be);
  }
  if (g_ascii_strcasecmp(name, "LeakyRelu") == 0) {
    al = ALPHA(0.01);
    return g_strdup_printf("(%s >= 0 ? %s : %s * %s)", x, x, al, x);
  }
  if (g_ascii_strcasecmp(name, "ThresholdedRelu") == 0) {
    al = ALPHA(1.0);
    return g_strdup_printf("(%s > %s ? %s : 0)", x, al, x);
  }
  if (g_ascii_strcasecmp(name, "ScaledTanh") == 0) {
    al = ALPHA(1.0);
    be = BETA(1.0);
    return g_strdup_printf("(%s * tanh(%s * %s))", al, be, x);
  }
  if (g_ascii_strcasecmp(name, "HardSigmoid") == 0) {
    al = ALPHA(0.2);
    be = BETA(0.5);
    return g_strdup_printf("max(0, min(1, %s * %s + %s))", al, x, be);
  }
  if (g_ascii_strcasecmp(name, "Elu") == 0) {
    al = ALPHA(1.0);
    return g_strdup_printf("(%s >= 0 ? %s : %s * (exp(%s) - 1))", x, x, al, x);
  }
#undef ALPHA
#undef BETA
  weir_node_fail(error, UNSUPPORTED, r->n, "activation '%s' is not supported",
                 name);
  return NULL;
}

static WeirNode *acc_node(const Rnn *r, WeirState *st, const char *name) {
  return weir_state_add_access(r->ng, st, name);
}

/* A map over params p[0..np) with the given ranges (text). */
static WeirNode *map_node(const Rnn *r, WeirState *st, const char *label,
                          guint np, const char *r0, const char *r1,
                          const char *r2, const WeirTaskletPort *ins,
                          guint n_ins, const WeirTaskletPort *outs,
                          guint n_outs, const char *code, WeirNode *after,
                          GError **error) {
  const char *ranges[] = {r0, r1, r2};
  WeirNode *af[] = {after};
  return weir_expand_map(r->ng, st, label, np, (const char *const *)r->p,
                         ranges, ins, n_ins, outs, n_outs, code, af,
                         after ? 1 : 0, error);
}

static gboolean map(const Rnn *r, WeirState *st, const char *label, guint np,
                    const char *r0, const char *r1, const char *r2,
                    const WeirTaskletPort *ins, guint n_ins,
                    const WeirTaskletPort *outs, guint n_outs, const char *code,
                    WeirNode *after, GError **error) {
  return map_node(r, st, label, np, r0, r1, r2, ins, n_ins, outs, n_outs, code,
                  after, error) != NULL;
}

/* init: Hs[:, 0] (and Cs[:, 0]) from the initial state, or 0. */
static gboolean build_init(Rnn *r, WeirState *st, GError **error) {
  const char *b = r->p[1], *d = r->p[0], *k = r->p[2];
  g_autofree char *rd = g_strdup_printf("0:%u", r->dirs);
  g_autofree char *rb = g_strdup_printf("0:%s", r->B);
  g_autofree char *rk = g_strdup_printf("0:%" G_GINT64_FORMAT, r->hidden);
  g_autofree char *at = g_strdup_printf("%s, 0, %s, %s", d, b, k);
  g_autofree char *from = r->layout1 ? g_strdup_printf("%s, %s, %s", b, d, k)
                                     : g_strdup_printf("%s, %s, %s", d, b, k);
  for (guint c = 0; c < (r->lstm ? 2u : 1u); c++) {
    gboolean given = r->in[c ? 6 : 5];
    WeirTaskletPort in = {given ? acc_node(r, st, c ? "C0" : "H0") : NULL, "v",
                          from, WEIR_WCR_NONE};
    WeirTaskletPort out = {acc_node(r, st, c ? "Cs" : "Hs"), "h", at,
                           WEIR_WCR_NONE};
    if (!map(r, st, c ? "init_c" : "init_h", 3, rd, rb, rk, &in, given ? 1 : 0,
             &out, 1, given ? "h = v" : "h = 0", NULL, error))
      return FALSE;
  }
  return TRUE;
}

/* The cell's tasklet for direction d (activations from a0). */
static char *cell_code(const Rnn *r, guint a0, GError **error) {
  GString *c = g_string_new(NULL);
  g_autofree char *f0 = NULL, *f1 = NULL, *f2 = NULL, *f3 = NULL;
  g_autofree char *g0 = NULL, *h0 = NULL;
  gboolean ok = TRUE;
  if (r->gates == 1) {
    ok = (f0 = activation(r, a0, "x0 + h0", error)) != NULL;
    if (ok)
      g_string_append_printf(c, "hn = %s\n", f0);
  } else if (r->gru) {
    ok = (f0 = activation(r, a0, "x0 + h0", error)) &&
         (f1 = activation(r, a0, "x1 + h1", error)) &&
         (g0 = activation(r, a0 + 1, r->lbr ? "x2 + rt * h2" : "x2 + h2",
                          error));
    if (ok)
      g_string_append_printf(c,
                             "zt = %s\nrt = %s\nht = %s\n"
                             "hn = (1 - zt) * ht + zt * hp\n",
                             f0, f1, g0);
  } else {
    /* gates i, o, f, c; peepholes P = [pi, po, pf] */
    ok = (f0 = activation(r, a0, r->in[7] ? "x0 + h0 + pi * cp" : "x0 + h0",
                          error)) &&
         (f2 = activation(r, a0, r->in[7] ? "x2 + h2 + pf * cp" : "x2 + h2",
                          error)) &&
         (g0 = activation(r, a0 + 1, "x3 + h3", error)) &&
         (f1 = activation(r, a0, r->in[7] ? "x1 + h1 + po * cn" : "x1 + h1",
                          error)) &&
         (h0 = activation(r, a0 + 2, "cn", error));
    if (ok)
      g_string_append_printf(c,
                             "it = %s\nft = %s\nct = %s\n"
                             "cn = ft * cp + it * ct\not = %s\nhn = ot * %s\n",
                             f0, r->input_forget ? "1 - it" : f2, g0, f1, h0);
  }
  if (!ok) {
    g_string_free(c, TRUE);
    return NULL;
  }
  if (r->has_len) {
    g_string_append_printf(c, "h = %s < len ? hn : hp\n", r->t);
    if (r->lstm)
      g_string_append_printf(c, "c = %s < len ? cn : cp\n", r->t);
  } else {
    g_string_append(c, "h = hn\n");
    if (r->lstm)
      g_string_append(c, "c = cn\n");
  }
  return g_string_free(c, FALSE);
}

/* step, direction d. */
static gboolean build_step_dir(Rnn *r, WeirState *st, guint d, gboolean rev,
                               GError **error) {
  const char *b = r->p[0], *j = r->p[1], *k = r->p[2];
  gint64 H = r->hidden, GH = r->gates * r->hidden;
  g_autofree char *tx =
      rev ? g_strdup_printf("(%s) - 1 - %s", r->T, r->t) : g_strdup(r->t);
  g_autofree char *rb = g_strdup_printf("0:%s", r->B);
  g_autofree char *rgh = g_strdup_printf("0:%" G_GINT64_FORMAT, GH);
  g_autofree char *ri = g_strdup_printf("0:%s", r->I);
  g_autofree char *rh = g_strdup_printf("0:%" G_GINT64_FORMAT, H);
  g_autofree char *z_at = g_strdup_printf("%u, %s, %s", d, b, j);
  g_autofree char *l_zx = g_strdup_printf("zx_init_%u", d);

  /* Zx = Wb, Zh = Rb (or 0) */
  WeirNode *zx0 = acc_node(r, st, "Zx"), *zh0 = acc_node(r, st, "Zh");
  g_autofree char *wb_at = g_strdup_printf("%u, %s", d, j);
  g_autofree char *rb_at =
      g_strdup_printf("%u, %" G_GINT64_FORMAT " + %s", d, GH, j);
  WeirNode *bias = r->in[3] ? acc_node(r, st, "B") : NULL;
  WeirTaskletPort bin[] = {{bias, "wb", wb_at, WEIR_WCR_NONE},
                           {bias, "rb", rb_at, WEIR_WCR_NONE}};
  WeirTaskletPort zout[] = {{zx0, "zx", z_at, WEIR_WCR_NONE},
                            {zh0, "zh", z_at, WEIR_WCR_NONE}};
  if (!map(r, st, l_zx, 2, rb, rgh, NULL, bin, bias ? 2 : 0, zout, 2,
           bias ? "zx = wb\nzh = rb" : "zx = 0\nzh = 0", NULL, error))
    return FALSE;

  /* Zx += X[tx] W[d]^T; reversed with sequence lengths, row b reads
   * X[len_b - 1 - t] (an indexed read: the place depends on the data) */
  gboolean indexed = rev && r->has_len;
  g_autofree char *tl = g_strdup_printf("max(len - 1 - %s, 0)", r->t);
  g_autofree char *x_at = indexed ? NULL
                          : r->layout1
                              ? g_strdup_printf("%s, %s, %s", b, tx, k)
                              : g_strdup_printf("%s, %s, %s", tx, b, k);
  g_autofree char *x_code =
      !indexed     ? g_strdup("zx = x * w")
      : r->layout1 ? g_strdup_printf("zx = x[%s, %s, %s] * w", b, tl, k)
                   : g_strdup_printf("zx = x[%s, %s, %s] * w", tl, b, k);
  g_autofree char *w_at = g_strdup_printf("%u, %s, %s", d, j, k);
  WeirNode *zx1 = acc_node(r, st, "Zx");
  WeirNode *wacc = acc_node(r, st, "W"), *racc = acc_node(r, st, "R");
  WeirTaskletPort xin[] = {
      {acc_node(r, st, "X"), "x", x_at, WEIR_WCR_NONE},
      {wacc, "w", w_at, WEIR_WCR_NONE},
      {indexed ? acc_node(r, st, "L") : NULL, "len", b, WEIR_WCR_NONE}};
  WeirTaskletPort xout = {zx1, "zx", z_at, WEIR_WCR_SUM};
  g_autofree char *l_x = g_strdup_printf("input_%u", d);
  WeirNode *xmap = map_node(r, st, l_x, 3, rb, rgh, ri, xin, indexed ? 3 : 2,
                            &xout, 1, x_code, zx0, error);
  if (!xmap)
    return FALSE;
  if (indexed)
    weir_expand_dynamic_input(st, xmap, "X", "x");

  /* Zh += Hs[d, t] R[d]^T (GRU without linear_before_reset: gates z, r) */
  WeirNode *hs_in = acc_node(r, st, "Hs");
  g_autofree char *hp_at = g_strdup_printf("%u, %s, %s, %s", d, r->t, b, k);
  g_autofree char *rgj =
      g_strdup_printf("0:%" G_GINT64_FORMAT, r->gru && !r->lbr ? 2 * H : GH);
  WeirNode *zh1 = acc_node(r, st, "Zh");
  WeirTaskletPort hin[] = {{hs_in, "h", hp_at, WEIR_WCR_NONE},
                           {racc, "w", w_at, WEIR_WCR_NONE}};
  WeirTaskletPort hout = {zh1, "zh", z_at, WEIR_WCR_SUM};
  g_autofree char *l_h = g_strdup_printf("recurrence_%u", d);
  if (!map(r, st, l_h, 3, rb, rgj, rh, hin, 2, &hout, 1, "zh = h * w", zh0,
           error))
    return FALSE;
  WeirNode *zh = zh1;

  if (r->gru && !r->lbr) {
    /* Rh = f(zx_r + zh_r) * Hs[d, t]; Zh[:, 2H:] += Rh R_h^T */
    /* the map is over (b, j): j indexes the hidden units */
    g_autofree char *g1b =
        g_strdup_printf("%u, %s, %" G_GINT64_FORMAT " + %s", d, b, H, j);
    g_autofree char *hp2 = g_strdup_printf("%u, %s, %s, %s", d, r->t, b, j);
    g_autofree char *rh_at = g_strdup_printf("%u, %s, %s", d, b, j);
    g_autofree char *f =
        activation(r, 2 * (rev && r->dirs == 2 ? 1 : 0), "zx + zh", error);
    if (!f)
      return FALSE;
    g_autofree char *code = g_strdup_printf("rh = %s * h", f);
    WeirNode *rh_acc = acc_node(r, st, "Rh");
    WeirTaskletPort rin[] = {{zx1, "zx", g1b, WEIR_WCR_NONE},
                             {zh1, "zh", g1b, WEIR_WCR_NONE},
                             {hs_in, "h", hp2, WEIR_WCR_NONE}};
    WeirTaskletPort rout = {rh_acc, "rh", rh_at, WEIR_WCR_NONE};
    g_autofree char *l_r = g_strdup_printf("reset_%u", d);
    if (!map(r, st, l_r, 2, rb, rh, NULL, rin, 3, &rout, 1, code, NULL, error))
      return FALSE;
    g_autofree char *rh_k = g_strdup_printf("%u, %s, %s", d, b, k);
    g_autofree char *w2 =
        g_strdup_printf("%u, %" G_GINT64_FORMAT " + %s, %s", d, 2 * H, j, k);
    g_autofree char *z2 =
        g_strdup_printf("%u, %s, %" G_GINT64_FORMAT " + %s", d, b, 2 * H, j);
    WeirNode *zh2 = acc_node(r, st, "Zh");
    WeirTaskletPort in2[] = {{rh_acc, "h", rh_k, WEIR_WCR_NONE},
                             {racc, "w", w2, WEIR_WCR_NONE}};
    WeirTaskletPort out2 = {zh2, "zh", z2, WEIR_WCR_SUM};
    g_autofree char *l_2 = g_strdup_printf("recurrence_reset_%u", d);
    if (!map(r, st, l_2, 3, rb, rh, rh, in2, 2, &out2, 1, "zh = h * w", zh1,
             error))
      return FALSE;
    zh = zh2;
  }

  /* the cell, over (b, k) with k = p[1] */
  guint per_dir = r->gates == 1 ? 1 : r->gates == 3 ? 2 : 3;
  g_autofree char *code =
      cell_code(r, (rev && r->dirs == 2 ? 1 : 0) * per_dir, error);
  if (!code)
    return FALSE;
  GPtrArray *strs = g_ptr_array_new_with_free_func(g_free);
  WeirTaskletPort cin[16];
  guint nin = 0;
  static const char *const xc[] = {"x0", "x1", "x2", "x3"};
  static const char *const hc[] = {"h0", "h1", "h2", "h3"};
  for (guint gi = 0; gi < r->gates; gi++) {
    char *at =
        g_strdup_printf("%u, %s, %" G_GINT64_FORMAT " + %s", d, b, gi * H, j);
    g_ptr_array_add(strs, at);
    cin[nin++] = (WeirTaskletPort){zx1, xc[gi], at, WEIR_WCR_NONE};
    cin[nin++] = (WeirTaskletPort){zh, hc[gi], at, WEIR_WCR_NONE};
  }
  char *hp_c = g_strdup_printf("%u, %s, %s, %s", d, r->t, b, j);
  g_ptr_array_add(strs, hp_c);
  if (r->gru || r->has_len)
    cin[nin++] = (WeirTaskletPort){hs_in, "hp", hp_c, WEIR_WCR_NONE};
  WeirNode *cs_in = NULL;
  if (r->lstm) {
    cs_in = acc_node(r, st, "Cs");
    cin[nin++] = (WeirTaskletPort){cs_in, "cp", hp_c, WEIR_WCR_NONE};
  }
  if (r->lstm && r->in[7]) {
    WeirNode *pacc = acc_node(r, st, "P");
    static const char *const pc[] = {"pi", "po", "pf"};
    for (guint q = 0; q < 3; q++) {
      char *at = g_strdup_printf("%u, %" G_GINT64_FORMAT " + %s", d, q * H, j);
      g_ptr_array_add(strs, at);
      cin[nin++] = (WeirTaskletPort){pacc, pc[q], at, WEIR_WCR_NONE};
    }
  }
  if (r->has_len)
    cin[nin++] =
        (WeirTaskletPort){acc_node(r, st, "L"), "len", b, WEIR_WCR_NONE};
  char *hn_at = g_strdup_printf("%u, %s + 1, %s, %s", d, r->t, b, j);
  g_ptr_array_add(strs, hn_at);
  WeirTaskletPort cout[] = {
      {acc_node(r, st, "Hs"), "h", hn_at, WEIR_WCR_NONE},
      {r->lstm ? acc_node(r, st, "Cs") : NULL, "c", hn_at, WEIR_WCR_NONE}};
  g_autofree char *l_c = g_strdup_printf("cell_%u", d);
  gboolean ok = map(r, st, l_c, 2, rb, rh, NULL, cin, nin, cout,
                    r->lstm ? 2 : 1, code, NULL, error);
  g_ptr_array_unref(strs);
  return ok;
}

/* fin: Y, Y_h, Y_c from Hs and Cs. */
static gboolean build_fin(Rnn *r, WeirState *st, const gboolean *rev,
                          GError **error) {
  const char *p0 = r->p[0], *p1 = r->p[1], *p2 = r->p[2];
  g_autofree char *rt = g_strdup_printf("0:%s", r->T);
  g_autofree char *rb = g_strdup_printf("0:%s", r->B);
  g_autofree char *rk = g_strdup_printf("0:%" G_GINT64_FORMAT, r->hidden);
  g_autofree char *rd = g_strdup_printf("0:%u", r->dirs);
  if (r->out[0]) {
    WeirNode *hs = acc_node(r, st, "Hs"), *y = acc_node(r, st, "Y");
    WeirNode *len = r->has_len ? acc_node(r, st, "L") : NULL;
    for (guint d = 0; d < r->dirs; d++) {
      /* params (u, b, k) */
      gboolean indexed = rev[d] && len;
      g_autofree char *src =
          indexed ? NULL
          : rev[d]
              ? g_strdup_printf("%u, (%s) - %s, %s, %s", d, r->T, p0, p1, p2)
              : g_strdup_printf("%u, %s + 1, %s, %s", d, p0, p1, p2);
      g_autofree char *dst =
          r->layout1 ? g_strdup_printf("%s, %s, %u, %s", p1, p0, d, p2)
                     : g_strdup_printf("%s, %u, %s, %s", p0, d, p1, p2);
      WeirTaskletPort in[] = {{hs, "v", src, WEIR_WCR_NONE},
                              {len, "len", p1, WEIR_WCR_NONE}};
      WeirTaskletPort out = {y, "y", dst, WEIR_WCR_NONE};
      g_autofree char *code =
          indexed ? g_strdup_printf(
                        "y = %s < len ? v[%u, max(len - %s, 0), %s, %s] : 0",
                        p0, d, p0, p1, p2)
          : len ? g_strdup_printf("y = %s < len ? v : 0", p0)
                : g_strdup("y = v");
      g_autofree char *label = g_strdup_printf("y_%u", d);
      WeirNode *ymap = map_node(r, st, label, 3, rt, rb, rk, in, len ? 2 : 1,
                                &out, 1, code, NULL, error);
      if (!ymap)
        return FALSE;
      if (indexed)
        weir_expand_dynamic_input(st, ymap, "Hs", "v");
    }
  }
  /* params (d, b, k) */
  g_autofree char *src = g_strdup_printf("%s, %s, %s, %s", p0, r->T, p1, p2);
  g_autofree char *dst = r->layout1 ? g_strdup_printf("%s, %s, %s", p1, p0, p2)
                                    : g_strdup_printf("%s, %s, %s", p0, p1, p2);
  for (guint c = 0; c < 2; c++) {
    if (!r->out[1 + c])
      continue;
    WeirTaskletPort in = {acc_node(r, st, c ? "Cs" : "Hs"), "v", src,
                          WEIR_WCR_NONE};
    WeirTaskletPort out = {acc_node(r, st, c ? "YC" : "YH"), "y", dst,
                           WEIR_WCR_NONE};
    if (!map(r, st, c ? "y_c" : "y_h", 3, rd, rb, rk, &in, 1, &out, 1, "y = v",
             NULL, error))
      return FALSE;
  }
  return TRUE;
}

static gint cmp_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static char *expr_text(WeirExpr *e) {
  return weir_expr_to_string(e);
}

static char *full_subset(const WeirContainer *c) {
  g_autoptr(WeirSubset) s = weir_container_full_subset(c);
  return weir_subset_to_string(s);
}

static gboolean expand_rnn(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  g_auto(Rnn) r = {0};
  r.n = n;
  r.gates = g_strcmp0(n->op, "GRU") == 0    ? 3
            : g_strcmp0(n->op, "LSTM") == 0 ? 4
                                            : 1;
  r.gru = r.gates == 3;
  r.lstm = r.gates == 4;
  WeirPort ports[8] = {0}, outs[3] = {0};
  for (guint k = 0; k < 8; k++) {
    g_autoptr(GError) local = NULL;
    r.in[k] = weir_port_input(g, s, n, k, &ports[k], &local);
    if (local) {
      g_propagate_error(error, g_steal_pointer(&local));
      return FALSE;
    }
    if (k < 3 && !r.in[k])
      return weir_node_fail(error, INVALID, n, "input %u is missing", k);
  }
  for (guint k = 0; k < 3; k++) {
    g_autoptr(GError) local = NULL;
    r.out[k] = weir_port_output(g, s, n, k, &outs[k], &local);
    if (local) {
      g_propagate_error(error, g_steal_pointer(&local));
      return FALSE;
    }
  }
  const char *dir = weir_node_attr_string(n, "direction", "forward");
  gboolean rev[2] = {FALSE, TRUE};
  r.dirs = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
  if (strcmp(dir, "reverse") == 0)
    rev[0] = TRUE;
  r.layout1 = weir_node_attr_int(n, "layout", 0) != 0;
  r.lbr = weir_node_attr_int(n, "linear_before_reset", 0) != 0;
  r.input_forget = weir_node_attr_int(n, "input_forget", 0) != 0;
  r.has_len = r.in[4];
  const WeirContainer *xc = ports[0].container;
  if (xc->shape->len != 3 || ports[1].rank != 3)
    return weir_node_fail(error, INVALID, n, "X and W must have rank 3");
  gint64 gh = 0;
  if (!weir_expr_is_const(ports[1].shape[1], &gh) || gh % r.gates)
    return weir_node_fail(error, INVALID, n,
                          "W's second dimension is not a constant multiple "
                          "of %u",
                          r.gates);
  r.hidden = gh / r.gates;
  WeirExpr *T = ports[0].shape[r.layout1 ? 1 : 0];
  WeirExpr *B = ports[0].shape[r.layout1 ? 0 : 1];
  r.T = expr_text(T);
  r.B = expr_text(B);
  r.I = expr_text(ports[0].shape[2]);
  /* activations */
  guint per_dir = r.gates == 1 ? 1 : r.gates == 3 ? 2 : 3;
  r.acts = g_ptr_array_new();
  const WeirAttr *a = weir_node_attr(n, "activations");
  if (a && a->type == WEIR_ATTR_STRINGS) {
    if (a->strings->len != per_dir * r.dirs)
      return weir_node_fail(error, INVALID, n, "%u activations, expected %u",
                            a->strings->len, per_dir * r.dirs);
    for (guint i = 0; i < a->strings->len; i++)
      g_ptr_array_add(r.acts, g_ptr_array_index(a->strings, i));
  } else {
    static const char *const dflt[3][3] = {
        {"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    for (guint d = 0; d < r.dirs; d++)
      for (guint i = 0; i < per_dir; i++)
        g_ptr_array_add(r.acts, (gpointer)dflt[per_dir - 1][i]);
  }
  const WeirAttr *al = weir_node_attr(n, "activation_alpha");
  const WeirAttr *be = weir_node_attr(n, "activation_beta");
  r.alpha = al && al->type == WEIR_ATTR_FLOATS ? al->floats : NULL;
  r.beta = be && be->type == WEIR_ATTR_FLOATS ? be->floats : NULL;
  const WeirAttr *clip = weir_node_attr(n, "clip");
  r.has_clip = clip && clip->type == WEIR_ATTR_FLOAT;
  r.clip = r.has_clip ? clip->f : 0;

  /* The nested program: symbols of the shapes (bound to themselves), the
   * loop symbol, arguments and transients. */
  g_autoptr(WeirGraph) ng = weir_graph_new(n->label ? n->label : n->op);
  r.ng = ng;
  g_autoptr(GHashTable) syms =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint k = 0; k < 11; k++) {
    const WeirPort *p = k < 8 ? &ports[k] : &outs[k - 8];
    if (!(k < 8 ? r.in[k] : r.out[k - 8]))
      continue;
    for (guint d = 0; d < p->rank; d++)
      weir_expr_collect_symbols(p->shape[d], syms);
  }
  g_autoptr(GPtrArray) sym_list = g_ptr_array_new();
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, syms);
  while (g_hash_table_iter_next(&it, &key, NULL))
    g_ptr_array_add(sym_list, key);
  g_ptr_array_sort(sym_list, cmp_names);
  for (guint i = 0; i < sym_list->len; i++)
    weir_graph_add_symbol(ng, g_ptr_array_index(sym_list, i));
  r.t = g_strdup("t");
  for (guint i = 0; weir_graph_has_symbol(ng, r.t); i++) {
    g_free(r.t);
    r.t = g_strdup_printf("t_%u", i);
  }
  weir_graph_add_symbol(ng, r.t);
  r.p = weir_expand_fresh_params(ng, 3);
  for (guint k = 0; k < 11; k++) {
    const WeirPort *p = k < 8 ? &ports[k] : &outs[k - 8];
    if (!(k < 8 ? r.in[k] : r.out[k - 8]))
      continue;
    if (!weir_graph_add_container(ng, k < 8 ? in_names[k] : out_names[k - 8],
                                  p->container->dtype, p->rank, p->shape, FALSE,
                                  error))
      return FALSE;
  }
  WeirDType dt = xc->dtype;
  g_autoptr(WeirExpr) dirs_e = weir_expr_const(r.dirs);
  g_autoptr(WeirExpr) t1 = weir_expr_add_const(T, 1);
  g_autoptr(WeirExpr) h_e = weir_expr_const(r.hidden);
  g_autoptr(WeirExpr) gh_e = weir_expr_const(gh);
  WeirExpr *hs_shape[] = {dirs_e, t1, B, h_e};
  WeirExpr *z_shape[] = {dirs_e, B, gh_e};
  WeirExpr *rh_shape[] = {dirs_e, B, h_e};
  if (!weir_graph_add_container(ng, "Hs", dt, 4, hs_shape, TRUE, error) ||
      (r.lstm &&
       !weir_graph_add_container(ng, "Cs", dt, 4, hs_shape, TRUE, error)) ||
      !weir_graph_add_container(ng, "Zx", dt, 3, z_shape, TRUE, error) ||
      !weir_graph_add_container(ng, "Zh", dt, 3, z_shape, TRUE, error) ||
      (r.gru && !r.lbr &&
       !weir_graph_add_container(ng, "Rh", dt, 3, rh_shape, TRUE, error)))
    return FALSE;

  WeirState *init = weir_graph_add_state(ng, "init");
  WeirState *guard = weir_graph_add_state(ng, "guard");
  WeirState *step = weir_graph_add_state(ng, "step");
  WeirState *fin = weir_graph_add_state(ng, "fin");
  g_autofree char *tcode = weir_expand_expr_code(T);
  g_autofree char *go = g_strdup_printf("%s < %s", r.t, tcode);
  g_autofree char *stop = g_strdup_printf("%s >= %s", r.t, tcode);
  g_autofree char *inc = g_strdup_printf("%s + 1", r.t);
  WeirTransition *t0 =
      weir_graph_add_transition(ng, init->id, guard->id, NULL, error);
  if (!t0 || !weir_transition_add_assignment(t0, r.t, "0", error))
    return FALSE;
  if (!weir_graph_add_transition(ng, guard->id, step->id, go, error))
    return FALSE;
  WeirTransition *back =
      weir_graph_add_transition(ng, step->id, guard->id, NULL, error);
  if (!back || !weir_transition_add_assignment(back, r.t, inc, error))
    return FALSE;
  if (!weir_graph_add_transition(ng, guard->id, fin->id, stop, error))
    return FALSE;
  if (!build_init(&r, init, error))
    return FALSE;
  for (guint d = 0; d < r.dirs; d++)
    if (!build_step_dir(&r, step, d, rev[d], error))
      return FALSE;
  if (!build_fin(&r, fin, rev, error))
    return FALSE;

  /* The nested node, wired to the library node's access nodes. */
  const char *ins[9] = {0}, *onames[4] = {0};
  guint ni = 0, no = 0;
  for (guint k = 0; k < 8; k++)
    if (r.in[k])
      ins[ni++] = in_names[k];
  for (guint k = 0; k < 3; k++)
    if (r.out[k])
      onames[no++] = out_names[k];
  const char *label = n->label ? n->label : n->op;
  WeirNode *nn =
      weir_state_add_nested(g, s, label, g_steal_pointer(&ng), ins, onames);
  r.ng = NULL;
  for (guint i = 0; i < sym_list->len; i++) {
    const char *sym = g_ptr_array_index(sym_list, i);
    if (!weir_node_bind_symbol(nn, sym, sym, error))
      return FALSE;
  }
  for (guint k = 0; k < 11; k++) {
    const WeirPort *p = k < 8 ? &ports[k] : &outs[k - 8];
    if (!(k < 8 ? r.in[k] : r.out[k - 8]))
      continue;
    g_autofree char *full = full_subset(p->container);
    const char *conn = k < 8 ? in_names[k] : out_names[k - 8];
    if (!(k < 8 ? weir_state_add_memlet(g, s, p->access->id, NULL, nn->id, conn,
                                        p->container->name, full, error)
                : weir_state_add_memlet(g, s, nn->id, conn, p->access->id, NULL,
                                        p->container->name, full, error)))
      return FALSE;
  }
  weir_state_remove_node(s, n->id);
  return TRUE;
}

void weir_expand_register_rnn(void) {
  weir_op_register_expansion("RNN", "pure", expand_rnn);
  weir_op_register_expansion("GRU", "pure", expand_rnn);
  weir_op_register_expansion("LSTM", "pure", expand_rnn);
}
