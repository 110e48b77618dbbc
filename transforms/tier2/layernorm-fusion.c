/* layernorm-fusion.c — a layer normalization spelled out in elementary
 * operators, as exporters before ONNX opset 17 write it (PyTorch's
 * nn.LayerNorm at opset 13: BERT's and the sample transformer's norms),
 * becomes one LayerNormalization node.
 *
 * Site: [mean, sub, pow, var, add, sqrt, div, mul], the eight nodes of
 *
 *   M = ReduceMean(X)            axes the last k axes of X, keepdims
 *   D = Sub(X, M)
 *   P = Pow(D, 2)                2 a constant
 *   V = ReduceMean(P)            the same axes, keepdims
 *   A = Add(V, eps)              eps a constant of one element (either order)
 *   S = Sqrt(A)
 *   N = Div(D, S)
 *   Y = Mul(N, W)                (either order)
 *
 * optionally followed by Y' = Add(Y, B) (either order), the only reader
 * of Y, which then becomes the node's bias.  The result is
 * LayerNormalization(X, W[, B]) with axis = the first reduced axis and
 * epsilon = eps, writing Y (or Y'): the same arithmetic (mean, centered
 * squares, 1 / sqrt(var + eps), scale, bias) as one library node, which
 * the code generator then runs one row at a time (implementation "weir",
 * core/kernels/norm.c) where the spelled-out form took a pass over the
 * tensor per operator.
 *
 * Legality: every node follows the library-node conventions and has no
 * ordering (empty) memlets; the intermediate results M, D, P, V, A, S, N
 * (and Y when a bias Add follows) are transients written once and read
 * only by the pattern (D by Pow and Div), in this state; ReduceMean takes
 * its axes as an attribute (not an input), keeps the reduced dimensions,
 * and both reduce the same trailing axes; W and B broadcast to X's shape
 * (unidirectionally, as LayerNormalization's Scale and B must) and the
 * output has X's shape; X, W and B hold one value in the state; float
 * dtypes.  The new node reads X, W and B through the access nodes the
 * pattern read them from and writes the output's access node, so the
 * order of the state is kept; the pattern's containers and constants
 * that nothing else uses are dropped.
 */
#include <string.h>

#include "tier2-util.h"
#include "weir-attr.h"
#include "weir-ops.h"
#include "weir-plugin.h"

gboolean weir_tier2_register_layernorm_fusion(GError **error);

enum { MEAN, SUB, POW, VAR, ADD, SQRT, DIV, MUL, BIAS, N_LN };

static const char *const ln_ops[N_LN] = {"ReduceMean", "Sub", "Pow",
                                         "ReduceMean", "Add", "Sqrt",
                                         "Div",        "Mul", "Add"};

typedef struct {
  WeirNode *n[N_LN];        /* n[BIAS] NULL without a bias Add */
  WeirTier2Port x, w, b, y; /* b.container NULL without a bias */
  guint axis;
  double eps;
} LnMatch;

/* The only library node of s reading container `name`, with the
 * connector it reads through in *conn (borrowed); NULL when there is no
 * reader or more than one. */
static WeirNode *sole_reader(const WeirState *s, const char *name,
                             const char **conn) {
  WeirNode *r = NULL;
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    const WeirNode *src = weir_state_node(s, m->src);
    if (!m->data || g_strcmp0(m->data, name) != 0 || !src ||
        src->kind != WEIR_NODE_ACCESS)
      continue;
    if (r)
      return NULL;
    r = weir_state_node(s, m->dst);
    *conn = m->dst_conn;
  }
  return r && r->kind == WEIR_NODE_LIBRARY ? r : NULL;
}

/* The readers of `name` in s (library nodes through data memlets), into
 * out[0..max); returns their number (max + 1 when there are more). */
static guint readers(const WeirState *s, const char *name, WeirNode **out,
                     guint max) {
  guint k = 0;
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    const WeirNode *src = weir_state_node(s, m->src);
    if (!m->data || g_strcmp0(m->data, name) != 0 || !src ||
        src->kind != WEIR_NODE_ACCESS)
      continue;
    if (k == max)
      return max + 1;
    out[k++] = weir_state_node(s, m->dst);
  }
  return k;
}

/* For a binary node n reading `known` on one input: the port of its other
 * input into *other; FALSE when neither input is `known`. */
static gboolean other_input(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n, const WeirContainer *known,
                            WeirTier2Port *other) {
  WeirTier2Port a, b;
  if (!weir_tier2_port(g, s, n, TRUE, 0, &a) ||
      !weir_tier2_port(g, s, n, TRUE, 1, &b))
    return FALSE;
  if (a.container == known && b.container != known) {
    *other = b;
    return TRUE;
  }
  if (b.container == known && a.container != known) {
    *other = a;
    return TRUE;
  }
  return FALSE;
}

static WeirContainer *out0(const WeirGraph *g, const WeirState *s,
                           const WeirNode *n) {
  WeirTier2Port p;
  return weir_tier2_port(g, s, n, FALSE, 0, &p) ? p.container : NULL;
}

static WeirContainer *in_k(const WeirGraph *g, const WeirState *s,
                           const WeirNode *n, guint k) {
  WeirTier2Port p;
  return weir_tier2_port(g, s, n, TRUE, k, &p) ? p.container : NULL;
}

/* The operator chain from ReduceMean `mean` (its nodes and ports, no
 * legality beyond the wiring); FALSE with *reason otherwise. */
static gboolean ln_find(const WeirGraph *g, const WeirState *s, WeirNode *mean,
                        LnMatch *m, char **reason) {
  memset(m, 0, sizeof *m);
  m->n[MEAN] = mean;
  if (!weir_tier2_is_op(mean, "ReduceMean") ||
      !weir_tier2_port(g, s, mean, TRUE, 0, &m->x))
    return weir_tier2_reject(reason, "the site does not start with a wired "
                                     "ReduceMean");
  const char *conn = NULL;
  WeirContainer *mc = out0(g, s, mean);
  WeirNode *sub = mc ? sole_reader(s, mc->name, &conn) : NULL;
  if (!weir_tier2_is_op(sub, "Sub") || in_k(g, s, sub, 0) != m->x.container ||
      in_k(g, s, sub, 1) != mc)
    return weir_tier2_reject(reason,
                             "the mean of ReduceMean '%s' is not subtracted "
                             "from its input (and read by nothing else)",
                             mean->label);
  m->n[SUB] = sub;
  WeirContainer *dc = out0(g, s, sub);
  WeirNode *dr[2];
  if (!dc || readers(s, dc->name, dr, 2) != 2)
    return weir_tier2_reject(reason,
                             "the centered input of Sub '%s' is not read by "
                             "a Pow and a Div",
                             sub->label);
  for (guint i = 0; i < 2; i++) {
    if (weir_tier2_is_op(dr[i], "Pow") && in_k(g, s, dr[i], 0) == dc)
      m->n[POW] = dr[i];
    else if (weir_tier2_is_op(dr[i], "Div") && in_k(g, s, dr[i], 0) == dc)
      m->n[DIV] = dr[i];
  }
  if (!m->n[POW] || !m->n[DIV])
    return weir_tier2_reject(reason,
                             "the centered input of Sub '%s' is not read by "
                             "a Pow and a Div",
                             sub->label);
  WeirContainer *c = out0(g, s, m->n[POW]);
  WeirNode *next = c ? sole_reader(s, c->name, &conn) : NULL;
  if (!weir_tier2_is_op(next, "ReduceMean"))
    return weir_tier2_reject(reason, "the square is not averaged");
  m->n[VAR] = next;
  c = out0(g, s, next);
  next = c ? sole_reader(s, c->name, &conn) : NULL;
  if (!weir_tier2_is_op(next, "Add"))
    return weir_tier2_reject(reason, "no epsilon is added to the variance");
  m->n[ADD] = next;
  c = out0(g, s, next);
  next = c ? sole_reader(s, c->name, &conn) : NULL;
  if (!weir_tier2_is_op(next, "Sqrt"))
    return weir_tier2_reject(reason, "the variance is not square-rooted");
  m->n[SQRT] = next;
  c = out0(g, s, next);
  if (!c || in_k(g, s, m->n[DIV], 1) != c)
    return weir_tier2_reject(reason,
                             "Div '%s' does not divide by the "
                             "deviation",
                             m->n[DIV]->label);
  c = out0(g, s, m->n[DIV]);
  next = c ? sole_reader(s, c->name, &conn) : NULL;
  if (!weir_tier2_is_op(next, "Mul") || !other_input(g, s, next, c, &m->w))
    return weir_tier2_reject(reason,
                             "the normalized input of Div '%s' is not "
                             "scaled by a Mul",
                             m->n[DIV]->label);
  m->n[MUL] = next;
  if (!weir_tier2_port(g, s, next, FALSE, 0, &m->y))
    return weir_tier2_reject(reason, "Mul '%s' has no output", next->label);
  /* a bias: the only reader of the scaled result, an Add */
  WeirNode *bias = sole_reader(s, m->y.container->name, &conn);
  WeirTier2Port b;
  if (m->y.container->transient && weir_tier2_is_op(bias, "Add") &&
      other_input(g, s, bias, m->y.container, &b) &&
      weir_tier2_port(g, s, bias, FALSE, 0, &m->y)) {
    m->n[BIAS] = bias;
    m->b = b;
  }
  return TRUE;
}

static void ln_match(const WeirGraph *g, GArray *sites) {
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(s->nodes, i);
      LnMatch m;
      if (!weir_tier2_is_op(n, "ReduceMean") || !ln_find(g, s, n, &m, NULL))
        continue;
      WeirSite site = {.state = s->id, .n_nodes = MUL + 1};
      for (guint k = 0; k <= MUL; k++)
        site.nodes[k] = m.n[k]->id;
      g_array_append_val(sites, site);
    }
  }
}

/* The reduced axes of ReduceMean n on an input of `rank`: a trailing run
 * [*first, rank), from the attribute "axes" (none: every axis). */
static gboolean reduced_axes(const WeirNode *n, guint rank, guint *first,
                             char **reason) {
  if (n->in_conns->len != 1)
    return weir_tier2_reject(reason,
                             "ReduceMean '%s' takes its axes as a "
                             "tensor input",
                             n->label);
  if (weir_node_attr_int(n, "keepdims", 1) != 1)
    return weir_tier2_reject(reason,
                             "ReduceMean '%s' drops the reduced "
                             "dimensions",
                             n->label);
  const GArray *axes = weir_node_attr_ints(n, "axes");
  g_autofree gboolean *red = g_new0(gboolean, rank + 1);
  if (!axes || axes->len == 0)
    for (guint d = 0; d < rank; d++)
      red[d] = TRUE;
  for (guint i = 0; axes && i < axes->len; i++) {
    gint64 a = g_array_index(axes, gint64, i);
    if (a < 0)
      a += rank;
    if (a < 0 || a >= (gint64)rank)
      return weir_tier2_reject(reason, "ReduceMean '%s' has an invalid axis",
                               n->label);
    red[a] = TRUE;
  }
  guint f = rank;
  while (f > 0 && red[f - 1])
    f--;
  for (guint d = 0; d < f; d++)
    if (red[d])
      return weir_tier2_reject(reason,
                               "ReduceMean '%s' does not reduce trailing axes "
                               "only",
                               n->label);
  if (f == rank)
    return weir_tier2_reject(reason, "ReduceMean '%s' reduces nothing",
                             n->label);
  *first = f;
  return TRUE;
}

/* c broadcasts to x's shape unidirectionally (numpy rules, c's
 * dimensions equal to x's or 1). */
static gboolean broadcasts_to(const WeirContainer *c, const WeirContainer *x) {
  guint rc = c->shape->len, rx = x->shape->len;
  if (rc > rx)
    return FALSE;
  for (guint k = 0; k < rc; k++) {
    const WeirExpr *d = g_ptr_array_index(c->shape, rc - 1 - k);
    gint64 v;
    if (!(weir_expr_is_const(d, &v) && v == 1) &&
        !weir_expr_equal(d, g_ptr_array_index(x->shape, rx - 1 - k)))
      return FALSE;
  }
  return TRUE;
}

/* Container `name` is a transient written once and read `reads` times,
 * only in s. */
static gboolean private_result(const WeirGraph *g, const WeirState *s,
                               const WeirContainer *c, guint reads) {
  WeirTier2Use use;
  weir_tier2_use(g, c->name, &use);
  return c->transient && use.writes == 1 && use.reads == reads &&
         weir_tier2_local(g, s, c->name);
}

static gboolean only_data_memlets(const WeirState *s, const WeirNode *n) {
  g_autoptr(GPtrArray) in = weir_state_in_edges(s, n->id);
  g_autoptr(GPtrArray) out = weir_state_out_edges(s, n->id);
  for (guint i = 0; i < in->len; i++)
    if (!((WeirMemlet *)g_ptr_array_index(in, i))->data)
      return FALSE;
  for (guint i = 0; i < out->len; i++)
    if (!((WeirMemlet *)g_ptr_array_index(out, i))->data)
      return FALSE;
  return TRUE;
}

/* The whole legality check of a site; fills *m. */
static gboolean ln_check(const WeirGraph *g, const WeirSite *site, LnMatch *m,
                         char **reason) {
  WeirState *s = weir_tier2_site_state(g, site->state);
  if (!s || site->n_nodes != MUL + 1)
    return weir_tier2_reject(reason, "the site is not the eight nodes of a "
                                     "spelled-out layer normalization");
  WeirNode *mean = weir_tier2_site_node(s, site->nodes[0]);
  if (!ln_find(g, s, mean, m, reason))
    return FALSE;
  for (guint k = 0; k <= MUL; k++)
    if (m->n[k]->id != site->nodes[k])
      return weir_tier2_reject(reason,
                               "the site's node %u is not the %s of "
                               "the pattern",
                               site->nodes[k], ln_ops[k]);
  for (guint k = 0; k < N_LN; k++) {
    if (!m->n[k])
      continue;
    if (!weir_tier2_wired(g, s, m->n[k]) || !only_data_memlets(s, m->n[k]))
      return weir_tier2_reject(reason,
                               "%s '%s' does not follow the library-node "
                               "conventions or has ordering edges",
                               m->n[k]->op, m->n[k]->label);
  }
  const WeirContainer *x = m->x.container;
  if (!weir_dtype_is_float(x->dtype))
    return weir_tier2_reject(reason, "'%s' is %s, not a float", x->name,
                             weir_dtype_name(x->dtype));
  guint rank = x->shape->len, f1 = 0, f2 = 0;
  if (!reduced_axes(m->n[MEAN], rank, &f1, reason) ||
      !reduced_axes(m->n[VAR], rank, &f2, reason))
    return FALSE;
  if (f1 != f2)
    return weir_tier2_reject(reason,
                             "ReduceMean '%s' and '%s' reduce "
                             "different axes",
                             m->n[MEAN]->label, m->n[VAR]->label);
  m->axis = f1;
  if (!weir_tier2_constant_is(in_k(g, s, m->n[POW], 1), 2.0, FALSE))
    return weir_tier2_reject(reason, "Pow '%s' does not square",
                             m->n[POW]->label);
  WeirTier2Port eps;
  WeirContainer *vc = out0(g, s, m->n[VAR]);
  g_autoptr(WeirTensor) et = NULL;
  if (other_input(g, s, m->n[ADD], vc, &eps))
    et = weir_tier2_constant_tensor(eps.container);
  if (!et || et->count != 1)
    return weir_tier2_reject(reason,
                             "Add '%s' does not add a constant "
                             "epsilon",
                             m->n[ADD]->label);
  m->eps = weir_tensor_get(et, 0);
  /* the intermediate results: private to the pattern */
  const WeirNode *producers[] = {
      m->n[MEAN], m->n[SUB],  m->n[POW], m->n[VAR],
      m->n[ADD],  m->n[SQRT], m->n[DIV], m->n[BIAS] ? m->n[MUL] : NULL};
  for (guint k = 0; k < G_N_ELEMENTS(producers); k++) {
    if (!producers[k])
      continue;
    const WeirContainer *c = out0(g, s, producers[k]);
    if (!private_result(g, s, c, producers[k] == m->n[SUB] ? 2 : 1))
      return weir_tier2_reject(reason,
                               "the result '%s' of %s '%s' is also used "
                               "elsewhere",
                               c->name, producers[k]->op, producers[k]->label);
  }
  if (!broadcasts_to(m->w.container, x) ||
      (m->b.container && !broadcasts_to(m->b.container, x)))
    return weir_tier2_reject(reason,
                             "the scale or bias does not broadcast to "
                             "the shape of '%s'",
                             x->name);
  if (!weir_tier2_same_layout(m->y.container, x) ||
      m->w.container->dtype != x->dtype ||
      (m->b.container && m->b.container->dtype != x->dtype))
    return weir_tier2_reject(reason,
                             "the output '%s' or the scale and bias "
                             "differ from '%s' in shape or dtype",
                             m->y.container->name, x->name);
  g_autofree char *why = NULL;
  const WeirContainer *ins[] = {x, m->w.container, m->b.container};
  for (guint k = 0; k < G_N_ELEMENTS(ins); k++)
    if (ins[k] && !weir_tier2_single_value(g, s, ins[k], &why))
      return weir_tier2_reject(reason, "input %s", why);
  return TRUE;
}

static gboolean ln_can_apply(const WeirGraph *g, const WeirSite *site,
                             const WeirParams *params, char **reason) {
  (void)params;
  LnMatch m;
  return ln_check(g, site, &m, reason);
}

/* A port's container name, access node and full subset. */
typedef struct {
  char *name, *subset;
  guint access;
} Wire;

static void wire_init(Wire *w, const WeirTier2Port *p) {
  g_autoptr(WeirSubset) full = weir_container_full_subset(p->container);
  w->name = g_strdup(p->container->name);
  w->subset = weir_subset_to_string(full);
  w->access = p->access->id;
}

static void wire_clear(Wire *w) {
  g_free(w->name);
  g_free(w->subset);
}

/* "_ln1_ReduceMean" -> "_ln1_LayerNormalization". (transfer full) */
static char *ln_label(const WeirNode *mean) {
  const char *l = mean->label ? mean->label : "";
  const char *at = strstr(l, "ReduceMean");
  if (!at)
    return g_strdup_printf("%s_LayerNormalization", l);
  return g_strdup_printf("%.*sLayerNormalization%s", (int)(at - l), l,
                         at + strlen("ReduceMean"));
}

static gboolean ln_apply(WeirGraph *g, const WeirSite *site,
                         const WeirParams *params, GError **error) {
  (void)params;
  LnMatch m;
  g_autofree char *reason = NULL;
  if (!ln_check(g, site, &m, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "layernorm-fusion: %s",
                reason);
    return FALSE;
  }
  WeirState *s = weir_tier2_site_state(g, site->state);
  gboolean has_b = m.b.container != NULL;
  Wire x, w, b = {0}, y;
  wire_init(&x, &m.x);
  wire_init(&w, &m.w);
  if (has_b)
    wire_init(&b, &m.b);
  wire_init(&y, &m.y);
  g_autofree char *label = ln_label(m.n[MEAN]);
  /* the pattern's own containers and constants, dropped when unused */
  g_autoptr(GPtrArray) drop = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < N_LN; k++) {
    if (!m.n[k])
      continue;
    for (guint i = 0; i < m.n[k]->in_conns->len; i++) {
      WeirTier2Port p;
      if (weir_tier2_nth_port(g, s, m.n[k], TRUE, i, &p))
        g_ptr_array_add(drop, g_strdup(p.container->name));
    }
    WeirContainer *c = out0(g, s, m.n[k]);
    if (c)
      g_ptr_array_add(drop, g_strdup(c->name));
  }
  for (guint k = 0; k < N_LN; k++)
    if (m.n[k])
      weir_state_remove_node(s, m.n[k]->id);
  const char *ins[] = {"in0", "in1", has_b ? "in2" : NULL, NULL};
  const char *outs[] = {"out0", NULL};
  WeirNode *ln =
      weir_state_add_library(g, s, label, "LayerNormalization", ins, outs);
  weir_node_set_attr_int(ln, "axis", m.axis);
  weir_node_set_attr_float(ln, "epsilon", m.eps);
  gboolean ok =
      weir_state_add_memlet(g, s, x.access, NULL, ln->id, "in0", x.name,
                            x.subset, error) &&
      weir_state_add_memlet(g, s, w.access, NULL, ln->id, "in1", w.name,
                            w.subset, error) &&
      (!has_b || weir_state_add_memlet(g, s, b.access, NULL, ln->id, "in2",
                                       b.name, b.subset, error)) &&
      weir_state_add_memlet(g, s, ln->id, "out0", y.access, NULL, y.name,
                            y.subset, error) &&
      weir_op_check_attrs(ln, error);
  wire_clear(&x);
  wire_clear(&w);
  wire_clear(&b);
  wire_clear(&y);
  if (!ok)
    return FALSE;
  for (guint i = 0; i < drop->len; i++)
    weir_tier2_drop_if_unused(g, g_ptr_array_index(drop, i));
  return TRUE;
}

static const WeirTransformInfo layernorm_fusion = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "layernorm-fusion",
    .tier = 2,
    .description = "a layer normalization spelled out as ReduceMean, Sub, "
                   "Pow, ReduceMean, Add, Sqrt, Div, Mul (and a bias Add) "
                   "becomes one LayerNormalization node",
    .match = ln_match,
    .can_apply = ln_can_apply,
    .apply = ln_apply,
};

gboolean weir_tier2_register_layernorm_fusion(GError **error) {
  return weir_transform_register(&layernorm_fusion, error);
}
