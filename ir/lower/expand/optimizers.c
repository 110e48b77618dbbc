/* optimizers.c — pure expansions of the ONNX training operators Adam,
 * Momentum and Adagrad (schemas in ir/ops/optimizers.c).
 *
 * Each node becomes
 *   one scalar tasklet   reading R and T and writing the step's scalar
 *                        coefficient into an f64 transient "<label>_lr"
 *                        (a scalar container, written once);
 *   one map per tensor   over the shape of X_j, reading x, g (and v, h)
 *                        element by element and the coefficient, writing
 *                        the new x (and v, h).
 * The formulas are ONNX's (with G_reg = norm_coefficient X + G):
 *
 *   Adam      lr    = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R
 *             V_new = alpha V + (1 - alpha) G_reg
 *             H_new = beta H + (1 - beta) G_reg^2
 *             X_new = (1 - norm_coefficient_post)
 *                     (X - lr V_new / (sqrt(H_new) + epsilon))
 *   Momentum  b     = T > 0 ? beta : 1
 *             V_new = alpha V + b G_reg
 *             X_new = X - R V_new                  (mode "standard")
 *             X_new = X - R (G_reg + alpha V_new)  (mode "nesterov")
 *   Adagrad   lr    = R / (1 + T decay_factor)
 *             H_new = H + G_reg^2
 *             X_new = X - lr G_reg / (sqrt(H_new) + epsilon)
 *
 * Attributes become exact literals of the tasklet code; a zero
 * norm_coefficient (or norm_coefficient_post) leaves its term out, so the
 * code (and its FLOPs, which ir/ops/optimizers.c counts the same way) is
 * that of the plain update.  The element arithmetic is done in X's dtype
 * except where it meets the f64 coefficient.  An output the node does not
 * have (an omitted ONNX output) is simply not written.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_optimizers(void);

static double attr_float(const WeirNode *n, const char *name) {
  const WeirAttr *a = weir_node_attr(n, name);
  return a && a->type == WEIR_ATTR_FLOAT ? a->f : 0.0;
}

/* The exact literal of v, parenthesized when negative. (transfer full) */
static char *literal(double v) {
  g_autofree char *lit = weir_expand_float_literal(v);
  if (v < 0 || signbit(v))
    return g_strdup_printf("(%s)", lit);
  return g_steal_pointer(&lit);
}

/* The subset of element 0 of a container all of whose dimensions are 1:
 * "0, 0" (or "" for a scalar).  FALSE when it has more than one element. */
static gboolean point_subset(const WeirPort *p, char **out) {
  GString *s = g_string_new(NULL);
  for (guint d = 0; d < p->rank; d++) {
    gint64 v;
    if (!weir_expr_is_const(p->shape[d], &v) || v != 1) {
      g_string_free(s, TRUE);
      return FALSE;
    }
    g_string_append(s, d ? ", 0" : "0");
  }
  *out = g_string_free(s, FALSE);
  return TRUE;
}

static gboolean same_shape(const WeirPort *a, const WeirPort *b) {
  if (a->rank != b->rank)
    return FALSE;
  for (guint d = 0; d < a->rank; d++)
    if (!weir_expr_equal(a->shape[d], b->shape[d]))
      return FALSE;
  return TRUE;
}

typedef enum { OPT_ADAM, OPT_MOMENTUM, OPT_ADAGRAD } OptKind;

/* Input tensor kinds after X and G, and the tasklet connector of each
 * kind (x, g, then v and/or h). */
typedef struct {
  OptKind kind;
  guint kinds;             /* 3 or 4 */
  const char *conns[4];    /* tasklet input connectors per kind */
  const char *outs[3];     /* tasklet output connectors per output kind */
  const char *new_vals[3]; /* the local holding each output's value */
} OptShape;

static const OptShape shapes[] = {
    {OPT_ADAM,
     4,
     {"x", "g", "v", "h"},
     {"x_new", "v_new", "h_new"},
     {"xn", "vn", "hn"}},
    {OPT_MOMENTUM, 3, {"x", "g", "v"}, {"x_new", "v_new"}, {"xn", "vn"}},
    {OPT_ADAGRAD, 3, {"x", "g", "h"}, {"x_new", "h_new"}, {"xn", "hn"}},
};

/* The scalar step: code of the tasklet reading r and t, writing lr. */
static char *scalar_code(const OptShape *sh, const WeirNode *n) {
  switch (sh->kind) {
  case OPT_ADAM: {
    g_autofree char *a = literal(attr_float(n, "alpha"));
    g_autofree char *b = literal(attr_float(n, "beta"));
    return g_strdup_printf("lr = t > 0 ? f64(r) * sqrt(1 - pow(%s, f64(t))) "
                           "/ (1 - pow(%s, f64(t))) : f64(r)",
                           b, a);
  }
  case OPT_MOMENTUM: {
    g_autofree char *b = literal(attr_float(n, "beta"));
    return g_strdup_printf("lr = t > 0 ? %s : 1.0", b);
  }
  case OPT_ADAGRAD: {
    g_autofree char *d = literal(attr_float(n, "decay_factor"));
    return g_strdup_printf("lr = f64(r) / (1 + f64(t) * %s)", d);
  }
  }
  g_assert_not_reached();
}

/* The element update: locals xn (and vn, hn) from x, g (v, h), lr and, for
 * Momentum, r. (transfer full) */
static char *element_code(const OptShape *sh, const WeirNode *n) {
  GString *c = g_string_new(NULL);
  double norm = attr_float(n, "norm_coefficient");
  if (norm != 0.0) {
    g_autofree char *nl = literal(norm);
    g_string_append_printf(c, "gr = %s * x + g\n", nl);
  } else {
    g_string_append(c, "gr = g\n");
  }
  switch (sh->kind) {
  case OPT_ADAM: {
    double alpha = attr_float(n, "alpha"), beta = attr_float(n, "beta");
    double post = attr_float(n, "norm_coefficient_post");
    g_autofree char *a = literal(alpha);
    g_autofree char *a1 = literal(1.0 - alpha);
    g_autofree char *b = literal(beta);
    g_autofree char *b1 = literal(1.0 - beta);
    g_autofree char *eps = literal(attr_float(n, "epsilon"));
    g_string_append_printf(c,
                           "vn = %s * v + %s * gr\n"
                           "hn = %s * h + %s * gr * gr\n",
                           a, a1, b, b1);
    if (post != 0.0) {
      g_autofree char *p1 = literal(1.0 - post);
      g_string_append_printf(c, "xn = %s * (x - lr * vn / (sqrt(hn) + %s))", p1,
                             eps);
    } else {
      g_string_append_printf(c, "xn = x - lr * vn / (sqrt(hn) + %s)", eps);
    }
    break;
  }
  case OPT_MOMENTUM: {
    g_autofree char *a = literal(attr_float(n, "alpha"));
    const WeirAttr *mode = weir_node_attr(n, "mode");
    gboolean nesterov = mode && mode->type == WEIR_ATTR_STRING &&
                        strcmp(mode->s, "nesterov") == 0;
    g_string_append_printf(c, "vn = %s * v + lr * gr\n", a);
    if (nesterov)
      g_string_append_printf(c, "xn = x - r * (gr + %s * vn)", a);
    else
      g_string_append(c, "xn = x - r * vn");
    break;
  }
  case OPT_ADAGRAD: {
    g_autofree char *eps = literal(attr_float(n, "epsilon"));
    g_string_append_printf(c,
                           "hn = h + gr * gr\n"
                           "xn = x - lr * gr / (sqrt(hn) + %s)",
                           eps);
    break;
  }
  }
  return g_string_free(c, FALSE);
}

static gboolean expand_optimizer(WeirGraph *g, WeirState *s, WeirNode *n,
                                 GError **error) {
  const OptShape *sh = NULL;
  static const char *const names[] = {"Adam", "Momentum", "Adagrad"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    if (strcmp(n->op, names[i]) == 0)
      sh = &shapes[i];
  if (!sh)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n, "not an optimizer");
  if (!weir_op_check_attrs(n, error))
    return FALSE;
  const WeirAttr *mode = weir_node_attr(n, "mode");
  if (mode && mode->type == WEIR_ATTR_STRING &&
      strcmp(mode->s, "standard") != 0 && strcmp(mode->s, "nesterov") != 0)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "attribute 'mode' is '%s', expected 'standard' or 'nesterov'", mode->s);

  /* Inputs are in0 .. in<count-1> with none omitted. */
  guint count = 0;
  while (TRUE) {
    g_autofree char *conn = g_strdup_printf("in%u", count);
    if (!weir_node_has_in_conn(n, conn))
      break;
    count++;
  }
  if (count != n->in_conns->len || count < 2 + sh->kinds ||
      (count - 2) % sh->kinds != 0)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "has %u inputs: expected R, T and a multiple of %u tensors",
        n->in_conns->len, sh->kinds);
  guint k = (count - 2) / sh->kinds;

  WeirPort r, t;
  g_autofree char *r_sub = NULL, *t_sub = NULL;
  if (!weir_port_require_input(g, s, n, 0, &r, error) ||
      !weir_port_require_input(g, s, n, 1, &t, error))
    return FALSE;
  if (!point_subset(&r, &r_sub))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 0 (R, '%s') must be a scalar",
                          r.container->name);
  if (!point_subset(&t, &t_sub))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 1 (T, '%s') must be a scalar",
                          t.container->name);
  if (!weir_dtype_is_float(r.container->dtype) ||
      t.container->dtype != WEIR_DTYPE_I64)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "R must be a float scalar and T an i64 scalar");

  /* The scalar coefficient. */
  g_autofree char *lr_base = weir_expand_name(n, "lr");
  WeirContainer *lrc =
      weir_expand_add_transient(g, lr_base, WEIR_DTYPE_F64, 0, NULL);
  WeirNode *lr = weir_state_add_access(g, s, lrc->name);
  g_autofree char *lr_code = scalar_code(sh, n);
  g_autofree char *lr_label = g_strdup_printf("%s_lr", n->label);
  WeirTaskletPort lr_ins[] = {{r.access, "r", r_sub, WEIR_WCR_NONE},
                              {t.access, "t", t_sub, WEIR_WCR_NONE}};
  WeirTaskletPort lr_out = {lr, "lr", "", WEIR_WCR_NONE};
  if (!weir_expand_map(g, s, lr_label, 0, NULL, NULL, lr_ins, 2, &lr_out, 1,
                       lr_code, NULL, 0, error))
    return FALSE;

  g_autofree char *elem = element_code(sh, n);
  for (guint j = 0; j < k; j++) {
    WeirPort ins[4];
    for (guint kind = 0; kind < sh->kinds; kind++) {
      if (!weir_port_require_input(g, s, n, 2 + kind * k + j, &ins[kind],
                                   error))
        return FALSE;
      if (kind > 0 && (!same_shape(&ins[kind], &ins[0]) ||
                       ins[kind].container->dtype != ins[0].container->dtype))
        return weir_node_fail(
            error, WEIR_ERROR_INVALID, n,
            "input %u ('%s') must have the dtype and shape of input "
            "%u ('%s')",
            2 + kind * k + j, ins[kind].container->name, 2 + j,
            ins[0].container->name);
    }
    if (!weir_dtype_is_float(ins[0].container->dtype))
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "input %u ('%s') must be f32 or f64", 2 + j,
                            ins[0].container->name);
    guint rank = ins[0].rank;
    g_auto(GStrv) params = weir_expand_params("i", rank);
    g_auto(GStrv) ranges = weir_expand_full_ranges(rank, ins[0].shape);
    g_autofree char *index =
        weir_expand_index_subset(rank, (const char *const *)params);

    WeirTaskletPort tins[6];
    guint n_tins = 0;
    for (guint kind = 0; kind < sh->kinds; kind++)
      tins[n_tins++] = (WeirTaskletPort){ins[kind].access, sh->conns[kind],
                                         index, WEIR_WCR_NONE};
    tins[n_tins++] = (WeirTaskletPort){lr, "lr", "", WEIR_WCR_NONE};
    if (sh->kind == OPT_MOMENTUM)
      tins[n_tins++] = (WeirTaskletPort){r.access, "r", r_sub, WEIR_WCR_NONE};

    WeirTaskletPort touts[3];
    guint n_touts = 0;
    GString *code = g_string_new(elem);
    for (guint o = 0; o + 1 < sh->kinds; o++) {
      WeirPort out;
      g_autoptr(GError) local = NULL;
      if (!weir_port_output(g, s, n, o * k + j, &out, &local)) {
        if (local) {
          g_string_free(code, TRUE);
          g_propagate_error(error, g_steal_pointer(&local));
          return FALSE;
        }
        continue; /* an omitted output */
      }
      if (!same_shape(&out, &ins[0])) {
        g_string_free(code, TRUE);
        return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                              "output %u ('%s') must have the shape of '%s'",
                              o * k + j, out.container->name,
                              ins[0].container->name);
      }
      touts[n_touts++] =
          (WeirTaskletPort){out.access, sh->outs[o], index, WEIR_WCR_NONE};
      g_string_append_printf(code, "\n%s = %s", sh->outs[o], sh->new_vals[o]);
    }
    g_autofree char *body = g_string_free(code, FALSE);
    if (n_touts == 0)
      continue;
    g_autofree char *label = g_strdup_printf("%s_%u", n->label, j + 1);
    if (!weir_expand_map(g, s, label, rank, (const char *const *)params,
                         (const char *const *)ranges, tins, n_tins, touts,
                         n_touts, body, NULL, 0, error))
      return FALSE;
  }
  weir_state_remove_node(s, n->id);
  return TRUE;
}

void weir_expand_register_optimizers(void) {
  weir_op_register_expansion("Adam", "pure", expand_optimizer);
  weir_op_register_expansion("Momentum", "pure", expand_optimizer);
  weir_op_register_expansion("Adagrad", "pure", expand_optimizer);
}
