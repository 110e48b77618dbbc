/* prune-channels.c — structured pruning: the `structure=channels` part of
 * the transformation `prune` (prune.c).
 *
 * A producer is a Conv (group 1, weight [M, C, ...]), Gemm (weight [M, K]
 * with transB=1, [K, M] without) or MatMul (rank-2 weight [K, M]) whose
 * weight is selected.  Its M output channels are ranked by the L1 (or L2)
 * norm of their weights; the round(sparsity x M) smallest (at most M - 1;
 * ties: the lower index first) are removed: rows of the weight and entries
 * of the bias.
 *
 * The output is then followed, in its state, through nodes that work per
 * channel and are shrunk with it:
 *   - element-wise activations (Relu, LeakyRelu, Sigmoid, Tanh, Elu, Selu,
 *     Softplus, Softsign, HardSigmoid, HardSwish, Gelu, Identity, Clip with
 *     constant scalar bounds), pooling (MaxPool, AveragePool, GlobalMaxPool,
 *     GlobalAveragePool) and inference Dropout: only the shape changes;
 *   - BatchNormalization (inference): its four parameters lose the entries;
 *   - Add, Sub, Mul, Div with a constant other operand: the constant loses
 *     the entries where it has one per channel (broadcast dimensions of 1
 *     stay);
 *   - Flatten (axis 1) of a Conv's [N, C, H, W] output: the features of a
 *     channel are H x W consecutive columns, removed together;
 * until the layers that consume the channels as their input channels: Conv
 * (group 1; weight columns, axis 1), Gemm (A = the value, transA 0; rows of
 * B, or columns with transB=1) and MatMul (rank 2; rows of B).  Those keep
 * their output channels (unless they are producers too).
 *
 * A producer whose channels reach a program argument (the model's output
 * layer, whose channels are the classes) is left alone.  Anything else on
 * the way — a residual Add of two computed values, Reshape, Concat,
 * Softmax, a value read in another state, a constant or weight that is
 * shared — makes the whole application illegal, with a reason naming the
 * node and the problem; the program is not changed.
 *
 * Every value on the way is a transient written by one node; its channel
 * dimension shrinks and the memlets naming it get the new full subset.
 * Weights, biases and parameters are edited in place (their ONNX
 * initializer names are kept); all removals of one tensor (its own output
 * channels and the input channels a producer before it lost) are applied
 * together, from the norms of the original weights.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prune-private.h"
#include "tier2-util.h"
#include "weir-attr.h"
#include "weir-expand.h"

/* Removal along one axis of a tensor: keep[i] for each index. */
typedef struct {
  guint axis;
  gint64 n;       /* the dimension before */
  gboolean *keep; /* n entries (owned) */
} AxisCut;

/* Everything one application changes. */
typedef struct {
  GHashTable *constants; /* name -> GPtrArray of AxisCut* */
  GHashTable *values;    /* name -> AxisCut* (transients: shape only) */
  GPtrArray *order;      /* names of changed containers, in order seen */
  guint producers;       /* producers pruned */
  char *problem;         /* first obstacle (owned), NULL when none */
} Plan;

static void cut_free(gpointer p) {
  AxisCut *c = p;
  g_free(c->keep);
  g_free(c);
}

static AxisCut *cut_new(guint axis, gint64 n, const gboolean *keep,
                        gint64 block) {
  AxisCut *c = g_new0(AxisCut, 1);
  c->axis = axis;
  c->n = n;
  c->keep = g_new(gboolean, n);
  for (gint64 i = 0; i < n; i++)
    c->keep[i] = keep[i / block];
  return c;
}

static void plan_init(Plan *p) {
  p->constants = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                       (GDestroyNotify)g_ptr_array_unref);
  p->values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, cut_free);
  p->order = g_ptr_array_new_with_free_func(g_free);
  p->producers = 0;
  p->problem = NULL;
}

static void plan_clear(Plan *p) {
  g_clear_pointer(&p->constants, g_hash_table_unref);
  g_clear_pointer(&p->values, g_hash_table_unref);
  g_clear_pointer(&p->order, g_ptr_array_unref);
  g_clear_pointer(&p->problem, g_free);
}

static gboolean problem(Plan *p, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static gboolean problem(Plan *p, const char *fmt, ...) {
  if (!p->problem) {
    va_list ap;
    va_start(ap, fmt);
    p->problem = g_strdup_vprintf(fmt, ap);
    va_end(ap);
  }
  return FALSE;
}

static gboolean in_list(const char *op, const char *const *list) {
  for (guint i = 0; list[i]; i++)
    if (g_strcmp0(op, list[i]) == 0)
      return TRUE;
  return FALSE;
}

static const char *const per_channel_ops[] = {"Relu",
                                              "LeakyRelu",
                                              "Sigmoid",
                                              "Tanh",
                                              "Elu",
                                              "Selu",
                                              "Softplus",
                                              "Softsign",
                                              "HardSigmoid",
                                              "HardSwish",
                                              "Gelu",
                                              "Identity",
                                              "Clip",
                                              "MaxPool",
                                              "AveragePool",
                                              "GlobalMaxPool",
                                              "GlobalAveragePool",
                                              "Dropout",
                                              NULL};
static const char *const arith_ops[] = {"Add", "Sub", "Mul", "Div", NULL};

static gint64 dim(const WeirContainer *c, guint d) {
  gint64 v = -1;
  if (d >= c->shape->len ||
      !weir_expr_is_const(g_ptr_array_index(c->shape, d), &v))
    return -1;
  return v;
}

/* Whether every memlet naming c covers all of it (the shapes change, so
 * the memlets get the new full subset). */
static gboolean all_full(const WeirGraph *g, const WeirContainer *c) {
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  for (guint si = 0; si < g->states->len; si++) {
    const WeirState *s = g_ptr_array_index(g->states, si);
    for (guint e = 0; e < s->edges->len; e++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, e);
      if (g_strcmp0(m->data, c->name) == 0 &&
          !weir_subset_equal(m->subset, full))
        return FALSE;
    }
  }
  return TRUE;
}

/* Adds a cut of constant c (which must be read once in the program). */
static gboolean cut_constant(Plan *p, const WeirGraph *g, const WeirNode *n,
                             const WeirContainer *c, guint axis,
                             const gboolean *keep, gint64 block) {
  WeirTier2Use use;
  weir_tier2_use(g, c->name, &use);
  if (!weir_tier2_is_constant(c))
    return problem(p, "%s '%s': input '%s' is not a constant", n->op, n->label,
                   c->name);
  if (use.reads != 1)
    return problem(p,
                   "%s '%s': constant '%s' is read %u times; a shared "
                   "constant cannot lose channels for one reader",
                   n->op, n->label, c->name, use.reads);
  if (!all_full(g, c))
    return problem(p, "%s '%s': constant '%s' is accessed in parts", n->op,
                   n->label, c->name);
  g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
  if (!weir_tier2_concrete_shape(c, shape))
    return problem(p, "%s '%s': constant '%s' has a symbolic shape", n->op,
                   n->label, c->name);
  GPtrArray *cuts = g_hash_table_lookup(p->constants, c->name);
  if (!cuts) {
    cuts = g_ptr_array_new_with_free_func(cut_free);
    g_hash_table_insert(p->constants, g_strdup(c->name), cuts);
    g_ptr_array_add(p->order, g_strdup(c->name));
  }
  for (guint i = 0; i < cuts->len; i++)
    if (((AxisCut *)cuts->pdata[i])->axis == axis)
      return problem(p, "%s '%s': constant '%s' would be cut twice on axis %u",
                     n->op, n->label, c->name, axis);
  g_ptr_array_add(cuts, cut_new(axis, shape[axis], keep, block));
  return TRUE;
}

/* A per-channel constant operand of Add/Mul/... (or a bias): cut where it
 * has one entry per channel of value axis `axis` of a rank-`rank` value. */
static gboolean cut_broadcast(Plan *p, const WeirGraph *g, const WeirNode *n,
                              const WeirContainer *c, guint rank, guint axis,
                              gint64 channels, const gboolean *keep,
                              gint64 block) {
  guint r = c->shape->len;
  if (r > rank)
    return problem(p, "%s '%s': constant '%s' has a higher rank than the value",
                   n->op, n->label, c->name);
  if ((gint64)axis < (gint64)rank - (gint64)r)
    return TRUE; /* broadcast along the channels */
  guint ca = axis - (rank - r);
  gint64 d = dim(c, ca);
  if (d == 1)
    return TRUE;
  if (d != channels)
    return problem(p,
                   "%s '%s': constant '%s' has %" G_GINT64_FORMAT
                   " entries along the channels, not %" G_GINT64_FORMAT,
                   n->op, n->label, c->name, d, channels);
  return cut_constant(p, g, n, c, ca, keep, block);
}

/* Follows value v (channel axis `axis`, `channels` entries, channel i
 * kept when keep[i / block]) to its readers in s. */
static gboolean follow(Plan *p, const WeirGraph *g, const WeirState *s,
                       const WeirNode *from, const WeirContainer *v, guint axis,
                       gint64 channels, const gboolean *keep, gint64 block);

static gboolean shrink_value(Plan *p, const WeirGraph *g, const WeirState *s,
                             const WeirNode *writer, const WeirContainer *v,
                             guint axis, gint64 channels, const gboolean *keep,
                             gint64 block) {
  if (!v->transient)
    return problem(p,
                   "%s '%s' writes program argument '%s', whose channels "
                   "cannot change",
                   writer->op, writer->label, v->name);
  WeirTier2Use use;
  weir_tier2_use(g, v->name, &use);
  if (use.writes != 1 || !weir_tier2_local(g, s, v->name))
    return problem(p,
                   "value '%s' (written by %s '%s') is written more than once "
                   "or used in another state",
                   v->name, writer->op, writer->label);
  if (dim(v, axis) != channels)
    return problem(p,
                   "value '%s' of %s '%s' does not have %" G_GINT64_FORMAT
                   " entries on axis %u",
                   v->name, writer->op, writer->label, channels, axis);
  if (!all_full(g, v))
    return problem(p, "value '%s' of %s '%s' is accessed in parts", v->name,
                   writer->op, writer->label);
  if (g_hash_table_contains(p->values, v->name))
    return TRUE; /* reached twice (two producers cannot share it) */
  g_hash_table_insert(p->values, g_strdup(v->name),
                      cut_new(axis, channels, keep, block));
  g_ptr_array_add(p->order, g_strdup(v->name));
  return follow(p, g, s, writer, v, axis, channels, keep, block);
}

static gboolean consume(Plan *p, const WeirGraph *g, const WeirState *s,
                        const WeirNode *n, guint k, const WeirContainer *v,
                        guint axis, gint64 channels, const gboolean *keep,
                        gint64 block) {
  guint rank = v->shape->len;
  WeirTier2Port out;
  gboolean has_out = weir_tier2_port(g, s, n, FALSE, 0, &out);
  if (!weir_tier2_wired(g, s, n) || !has_out)
    return problem(p, "%s '%s' does not follow the library-node conventions",
                   n->op, n->label);
  if (weir_tier2_is_op(n, "Conv")) {
    WeirTier2Port w;
    if (k != 0 || axis != 1 || block != 1 ||
        weir_node_attr_int(n, "group", 1) != 1 ||
        !weir_tier2_port(g, s, n, TRUE, 1, &w))
      return problem(p,
                     "Conv '%s' reads the channels other than as the input "
                     "channels of a group-1 convolution",
                     n->label);
    return cut_constant(p, g, n, w.container, 1, keep, block);
  }
  if (weir_tier2_is_op(n, "Gemm") || weir_tier2_is_op(n, "MatMul")) {
    WeirTier2Port w;
    gboolean gemm = weir_tier2_is_op(n, "Gemm");
    if (k != 0 || rank != 2 || axis != 1 ||
        (gemm && weir_node_attr_int(n, "transA", 0) != 0) ||
        !weir_tier2_port(g, s, n, TRUE, 1, &w) || w.container->shape->len != 2)
      return problem(p,
                     "%s '%s' reads the channels other than as the features "
                     "of its first (untransposed) operand with a rank-2 "
                     "weight",
                     n->op, n->label);
    guint wa = gemm && weir_node_attr_int(n, "transB", 0) ? 1 : 0;
    return cut_constant(p, g, n, w.container, wa, keep, block);
  }
  if (in_list(n->op, per_channel_ops)) {
    if (k != 0 || n->out_conns->len != 1)
      return problem(p, "%s '%s' has more than one output", n->op, n->label);
    if (weir_tier2_is_op(n, "Clip")) {
      for (guint j = 1; j <= 2; j++) {
        WeirTier2Port b;
        if (weir_tier2_port(g, s, n, TRUE, j, &b) &&
            !weir_tier2_is_constant(b.container))
          return problem(p, "Clip '%s' has a computed bound '%s'", n->label,
                         b.container->name);
      }
    }
    if (g_str_has_suffix(n->op, "Pool") && axis != 1)
      return problem(p, "%s '%s' pools over the channel axis %u", n->op,
                     n->label, axis);
    return shrink_value(p, g, s, n, out.container, axis, channels, keep, block);
  }
  if (weir_tier2_is_op(n, "BatchNormalization")) {
    const WeirAttr *tm = weir_node_attr(n, "training_mode");
    if (k != 0 || n->out_conns->len != 1 || axis != 1 ||
        (tm && tm->type == WEIR_ATTR_INT && tm->i != 0))
      return problem(p,
                     "BatchNormalization '%s' is in training mode or "
                     "normalizes another axis",
                     n->label);
    for (guint j = 1; j <= 4; j++) {
      WeirTier2Port b;
      if (!weir_tier2_port(g, s, n, TRUE, j, &b) ||
          b.container->shape->len != 1 ||
          !cut_constant(p, g, n, b.container, 0, keep, block))
        return problem(p,
                       "BatchNormalization '%s': parameter %u is not a "
                       "constant with one entry per channel",
                       n->label, j);
    }
    return shrink_value(p, g, s, n, out.container, axis, channels, keep, block);
  }
  if (in_list(n->op, arith_ops)) {
    WeirTier2Port other;
    if (!weir_tier2_port(g, s, n, TRUE, 1 - k, &other))
      return problem(p, "%s '%s' has no second operand", n->op, n->label);
    if (!weir_tier2_is_constant(other.container))
      return problem(p,
                     "%s '%s' combines the channels with computed value '%s' "
                     "(a residual connection whose other branch keeps every "
                     "channel)",
                     n->op, n->label, other.container->name);
    if (!cut_broadcast(p, g, n, other.container, rank, axis, channels, keep,
                       block))
      return FALSE;
    if (out.container->shape->len != rank)
      return problem(p, "%s '%s' broadcasts to a higher rank", n->op, n->label);
    return shrink_value(p, g, s, n, out.container, axis, channels, keep, block);
  }
  if (weir_tier2_is_op(n, "Flatten")) {
    gint64 fa = weir_node_attr_int(n, "axis", 1);
    if (fa != 1 || axis != 1 || block != 1 || rank < 2)
      return problem(p,
                     "Flatten '%s' (axis %" G_GINT64_FORMAT
                     ") mixes the channels with other dimensions",
                     n->label, fa);
    gint64 inner = 1;
    for (guint d = 2; d < rank; d++) {
      gint64 x = dim(v, d);
      if (x < 0)
        return problem(p, "Flatten '%s': value '%s' has a symbolic dimension",
                       n->label, v->name);
      inner *= x;
    }
    return shrink_value(p, g, s, n, out.container, 1, channels * inner, keep,
                        inner);
  }
  return problem(p,
                 "%s '%s' reads the channels and cannot be shrunk (it mixes "
                 "channels or is not a per-channel operator)",
                 n->op, n->label);
}

static gboolean follow(Plan *p, const WeirGraph *g, const WeirState *s,
                       const WeirNode *from, const WeirContainer *v, guint axis,
                       gint64 channels, const gboolean *keep, gint64 block) {
  (void)from;
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *a = g_ptr_array_index(s->nodes, i);
    if (a->kind != WEIR_NODE_ACCESS || g_strcmp0(a->data, v->name) != 0)
      continue;
    g_autoptr(GPtrArray) out = weir_state_out_edges(s, a->id);
    for (guint j = 0; j < out->len; j++) {
      const WeirMemlet *m = g_ptr_array_index(out, j);
      if (!m->data)
        continue;
      const WeirNode *n = weir_state_node(s, m->dst);
      guint k = 0;
      if (!n || n->kind != WEIR_NODE_LIBRARY || !m->dst_conn ||
          sscanf(m->dst_conn, "in%u", &k) != 1)
        return problem(p,
                       "value '%s' is read by something other than an "
                       "operator (node %u)",
                       v->name, m->dst);
      if (!consume(p, g, s, n, k, v, axis, channels, keep, block))
        return FALSE;
    }
  }
  return TRUE;
}

/* Output-channel norms of producer weight w: channel m along axis. */
static double *channel_norms(const WeirTensor *w, guint axis, gboolean l2) {
  gint64 m = w->shape[axis];
  gint64 inner = 1;
  for (guint d = axis + 1; d < w->rank; d++)
    inner *= w->shape[d];
  double *norm = g_new0(double, m);
  for (gint64 i = 0; i < w->count; i++) {
    gint64 c = (i / inner) % m;
    double x = weir_tensor_get(w, i);
    norm[c] += l2 ? x * x : fabs(x);
  }
  return norm;
}

typedef struct {
  double norm;
  gint64 index;
} Ranked;

static int compare_ranked(const void *pa, const void *pb) {
  const Ranked *a = pa, *b = pb;
  if (a->norm != b->norm)
    return a->norm < b->norm ? -1 : 1;
  return a->index < b->index ? -1 : a->index > b->index;
}

/* Plans the pruning of every producer weighted by ws.  FALSE with
 * p->problem when something is in the way. */
static gboolean make_plan(const WeirGraph *g, GPtrArray *ws,
                          const WeirParams *params, Plan *p) {
  double sparsity = weir_params_get_float(params, "sparsity");
  gboolean l2 =
      g_strcmp0(weir_params_get_string(params, "criterion"), "l2") == 0;
  for (guint si = 0; si < g->states->len; si++) {
    const WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, i);
      WeirTier2Port w, y;
      if (!(weir_tier2_is_op(n, "Conv") || weir_tier2_is_op(n, "Gemm") ||
            weir_tier2_is_op(n, "MatMul")) ||
          !weir_tier2_port(g, s, n, TRUE, 1, &w) ||
          !g_ptr_array_find(ws, w.container, NULL))
        continue;
      if (!weir_tier2_wired(g, s, n) || !weir_tier2_port(g, s, n, FALSE, 0, &y))
        return problem(p,
                       "%s '%s' does not follow the library-node "
                       "conventions",
                       n->op, n->label);
      if (!y.container->transient)
        continue; /* the output layer: its channels are the model's */
      if (weir_epilogue_present(n))
        return problem(p, "%s '%s' has an epilogue", n->op, n->label);
      /* the weight's output-channel axis and the output's channel axis */
      guint wa = 0, ya = 1;
      if (weir_tier2_is_op(n, "Conv")) {
        if (weir_node_attr_int(n, "group", 1) != 1)
          return problem(p, "Conv '%s' is a grouped convolution", n->label);
      } else if (weir_tier2_is_op(n, "Gemm")) {
        wa = weir_node_attr_int(n, "transB", 0) ? 0 : 1;
      } else {
        if (w.container->shape->len != 2 || y.container->shape->len != 2)
          return problem(p, "MatMul '%s' is not a rank-2 product", n->label);
        wa = 1;
      }
      g_autoptr(WeirTensor) wt = weir_tier2_constant_tensor(w.container);
      if (!wt)
        return problem(p, "%s '%s': weight '%s' has no concrete data", n->op,
                       n->label, w.container->name);
      gint64 m = wt->shape[wa];
      gint64 r = MIN((gint64)llround(sparsity * (double)m), m - 1);
      if (r <= 0)
        continue;
      g_autofree double *norm = channel_norms(wt, wa, l2);
      g_autofree Ranked *rank = g_new(Ranked, m);
      for (gint64 c = 0; c < m; c++)
        rank[c] = (Ranked){norm[c], c};
      qsort(rank, (size_t)m, sizeof *rank, compare_ranked);
      g_autofree gboolean *keep = g_new(gboolean, m);
      for (gint64 c = 0; c < m; c++)
        keep[c] = TRUE;
      for (gint64 c = 0; c < r; c++)
        keep[rank[c].index] = FALSE;
      if (!cut_constant(p, g, n, w.container, wa, keep, 1))
        return FALSE;
      WeirTier2Port b;
      if (weir_tier2_port(g, s, n, TRUE, 2, &b) &&
          !(weir_tier2_is_op(n, "Conv")
                ? cut_constant(p, g, n, b.container, 0, keep, 1)
                : cut_broadcast(p, g, n, b.container, 2, 1, m, keep, 1)))
        return FALSE;
      if (!shrink_value(p, g, s, n, y.container, ya, m, keep, 1))
        return FALSE;
      p->producers++;
    }
  }
  if (p->producers == 0)
    return problem(p, "no layer has output channels to remove: each "
                      "selected layer writes a program output or keeps all "
                      "its channels at this sparsity");
  return TRUE;
}

gboolean weir_prune_channels_check(const WeirGraph *g, GPtrArray *ws,
                                   const WeirParams *params, char **reason) {
  Plan p;
  plan_init(&p);
  gboolean ok = make_plan(g, ws, params, &p);
  if (!ok && reason)
    *reason = g_strdup_printf("structured pruning refused: %s", p.problem);
  plan_clear(&p);
  return ok;
}

/* The tensor t with the cuts applied (transfer full). */
static WeirTensor *apply_cuts(const WeirTensor *t, GPtrArray *cuts) {
  gint64 shape[8];
  g_assert(t->rank <= G_N_ELEMENTS(shape));
  const gboolean *keep[8] = {0};
  for (guint d = 0; d < t->rank; d++)
    shape[d] = t->shape[d];
  for (guint i = 0; i < cuts->len; i++) {
    const AxisCut *c = cuts->pdata[i];
    keep[c->axis] = c->keep;
    gint64 kept = 0;
    for (gint64 j = 0; j < c->n; j++)
      kept += c->keep[j];
    shape[c->axis] = kept;
  }
  WeirTensor *out = weir_tensor_new(t->dtype, t->rank, shape);
  gint64 o = 0;
  for (gint64 i = 0; i < t->count; i++) {
    gint64 rest = i;
    gboolean take = TRUE;
    for (gint64 d = (gint64)t->rank - 1; d >= 0; d--) {
      gint64 x = rest % t->shape[d];
      rest /= t->shape[d];
      if (keep[d] && !keep[d][x])
        take = FALSE;
    }
    if (take)
      weir_tensor_set(out, o++, weir_tensor_get(t, i));
  }
  g_assert(o == out->count);
  return out;
}

static void set_shape(WeirContainer *c, const gint64 *shape, guint rank) {
  g_autoptr(GPtrArray) exprs =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint d = 0; d < rank; d++)
    g_ptr_array_add(exprs, shape[d] >= 0
                               ? weir_expr_const(shape[d])
                               : weir_expr_ref(g_ptr_array_index(c->shape, d)));
  gboolean ok =
      weir_container_set_shape(c, rank, (WeirExpr *const *)exprs->pdata);
  g_assert(ok);
}

gboolean weir_prune_channels_apply(WeirGraph *g, GPtrArray *ws,
                                   const WeirParams *params, GError **error) {
  Plan p;
  plan_init(&p);
  if (!make_plan(g, ws, params, &p)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "prune: structured pruning refused: %s", p.problem);
    plan_clear(&p);
    return FALSE;
  }
  for (guint i = 0; i < p.order->len; i++) {
    const char *name = p.order->pdata[i];
    WeirContainer *c = weir_graph_container(g, name);
    GPtrArray *cuts = g_hash_table_lookup(p.constants, name);
    guint rank = c->shape->len;
    g_autofree gint64 *shape = g_new0(gint64, rank + 1);
    if (cuts) {
      g_autoptr(WeirTensor) t = weir_tier2_constant_tensor(c);
      g_autoptr(WeirTensor) nt = apply_cuts(t, cuts);
      for (guint d = 0; d < rank; d++)
        shape[d] = nt->shape[d];
      weir_container_set_initial(c, NULL);
      set_shape(c, shape, rank);
      g_autoptr(GBytes) bytes = g_bytes_new(nt->data, weir_tensor_nbytes(nt));
      weir_container_set_initial(c, bytes);
    } else {
      const AxisCut *cut = g_hash_table_lookup(p.values, name);
      for (guint d = 0; d < rank; d++)
        shape[d] = -1; /* kept as it is (may be symbolic) */
      gint64 kept = 0;
      for (gint64 j = 0; j < cut->n; j++)
        kept += cut->keep[j];
      shape[cut->axis] = kept;
      set_shape(c, shape, rank);
    }
    /* every memlet naming c gets the new full subset */
    g_autoptr(WeirSubset) full = weir_container_full_subset(c);
    g_autoptr(WeirExpr) volume = weir_subset_volume(full);
    for (guint si = 0; si < g->states->len; si++) {
      WeirState *s = g_ptr_array_index(g->states, si);
      for (guint e = 0; e < s->edges->len; e++) {
        WeirMemlet *m = g_ptr_array_index(s->edges, e);
        if (g_strcmp0(m->data, name) != 0)
          continue;
        weir_memlet_set_subset(m, full);
        weir_memlet_set_volume(m, volume);
      }
    }
  }
  plan_clear(&p);
  return TRUE;
}
