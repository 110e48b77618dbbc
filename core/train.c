/* train.c — training programs (core/weir-train.h).
 *
 * weir_train_graph() copies the forward program and turns it into a loop
 * over K training steps:
 *
 *   init --k = 0--> guard --k < K--> step --> update --> count --k = k+1-->
 * guard
 *
 *   step    copies batch k of every input (and of the target) out of the
 *           batch buffers, runs the forward nodes, the loss, the backward
 *           nodes (ir/lower/autodiff.c) and computes the finiteness check: the
 * sum of the loss and of every gradient, which is finite only when they all are
 * (an overflow of that sum also counts as non-finite; one SumAll node);
 * update  the optimizer: one OptimizerUpdate node over every parameter and
 * its state tensors (WeirTrainOptions.per_tensor_update: one Pointwise node
 * per parameter and state tensor, and one ReduceSum per gradient in the
 * check), keeping the old values when the check is not finite; count
 * writes losses[k] and increments "step" or "skipped". Nothing leaves the
 * program between steps: the skip decision is data (the check) consumed by the
 * update, never a host-side branch.
 */
#include <math.h>
#include <string.h>

#include "weir-autodiff.h"
#include "weir-expand.h"
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-train.h"

void weir_train_options_init(WeirTrainOptions *o) {
  memset(o, 0, sizeof *o);
  o->loss = WEIR_LOSS_SOFTMAX_CROSS_ENTROPY;
  o->optimizer = WEIR_OPTIMIZER_SGD;
  o->lr = 0.01;
  o->momentum = 0.9;
  o->beta1 = 0.9;
  o->beta2 = 0.999;
  o->epsilon = 1e-8;
  o->reduction = WEIR_REDUCTION_MEAN;
  o->class_axis = 1;
  o->label_dtype = WEIR_DTYPE_I64;
  o->huber_delta = 1.0;
  o->lr_gamma = 0.1;
}

gboolean weir_loss_from_name(const char *name, WeirLoss *out) {
  static const struct {
    const char *name;
    WeirLoss loss;
  } names[] = {
      {"softmax-cross-entropy", WEIR_LOSS_SOFTMAX_CROSS_ENTROPY},
      {"cross-entropy", WEIR_LOSS_SOFTMAX_CROSS_ENTROPY},
      {"mse", WEIR_LOSS_MSE},
      {"nll", WEIR_LOSS_NLL},
      {"bce-with-logits", WEIR_LOSS_BCE_WITH_LOGITS},
      {"l1", WEIR_LOSS_L1},
      {"huber", WEIR_LOSS_HUBER},
  };
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    if (g_strcmp0(name, names[i].name) == 0) {
      *out = names[i].loss;
      return TRUE;
    }
  return FALSE;
}

gboolean weir_reduction_from_name(const char *name, WeirReduction *out) {
  if (g_strcmp0(name, "mean") == 0)
    *out = WEIR_REDUCTION_MEAN;
  else if (g_strcmp0(name, "sum") == 0)
    *out = WEIR_REDUCTION_SUM;
  else if (g_strcmp0(name, "none") == 0)
    *out = WEIR_REDUCTION_NONE;
  else
    return FALSE;
  return TRUE;
}

gboolean weir_optimizer_from_name(const char *name, WeirOptimizer *out) {
  if (g_strcmp0(name, "sgd") == 0)
    *out = WEIR_OPTIMIZER_SGD;
  else if (g_strcmp0(name, "momentum") == 0)
    *out = WEIR_OPTIMIZER_MOMENTUM;
  else if (g_strcmp0(name, "adam") == 0)
    *out = WEIR_OPTIMIZER_ADAM;
  else
    return FALSE;
  return TRUE;
}

gboolean weir_lr_schedule_from_name(const char *name, WeirLrSchedule *out) {
  if (g_strcmp0(name, "constant") == 0)
    *out = WEIR_LR_CONSTANT;
  else if (g_strcmp0(name, "step") == 0)
    *out = WEIR_LR_STEP;
  else if (g_strcmp0(name, "cosine") == 0)
    *out = WEIR_LR_COSINE;
  else
    return FALSE;
  return TRUE;
}

/* ------------------------------------------------------- forward program */

static gboolean is_written(const WeirState *s, const char *name) {
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind != WEIR_NODE_ACCESS || g_strcmp0(n->data, name) != 0)
      continue;
    g_autoptr(GPtrArray) in = weir_state_in_edges(s, n->id);
    if (in->len > 0)
      return TRUE;
  }
  return FALSE;
}

/* The single state of a forward program, its inputs (arguments read only)
 * and outputs (arguments written), as borrowed names. */
static WeirState *forward_parts(const WeirGraph *g, GPtrArray *inputs,
                                GPtrArray *outputs, GError **error) {
  if (g->states->len != 1) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "program '%s': a training program is derived from a "
                "single-state forward program (this one has %u states)",
                g->name, g->states->len);
    return NULL;
  }
  WeirState *s = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_NESTED) {
      g_autofree char *what = weir_describe_node(s, n);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "program '%s': %s: nested programs cannot be "
                  "differentiated",
                  g->name, what);
      return NULL;
    }
  }
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient || c->initial)
      continue;
    g_ptr_array_add(is_written(s, c->name) ? outputs : inputs, c->name);
  }
  return s;
}

/* Whether the program records which containers came from ONNX
 * initializers (the importer sets WeirContainer.initializer). */
static gboolean records_initializers(const WeirGraph *g) {
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->initializer)
      return TRUE;
  }
  return FALSE;
}

/* The default rule for a float container c with constant data.
 *
 * When the program records initializers: c is a candidate exactly when it
 * came from an ONNX initializer whose name does not start with '/'.
 * PyTorch names the outputs of exported nodes "/scope/Op_output_0"; an
 * initializer with such a name is a node output that the exporter's
 * constant folding replaced by its value (a computed constant, not a
 * module's parameter or buffer).  "onnx::Op_N" names are kept: PyTorch
 * gives them to folded transposes of weights (the transformer's
 * "onnx::MatMul_123" is self_attn.in_proj_weight transposed), which are
 * parameters.  Constant node outputs (epsilons, exponents, scales) are
 * never initializers.
 *
 * Otherwise (a program written by hand or before the attribute): more than
 * one element.  Single-element constants are the epsilons, exponents and
 * scale factors that exporters write as Constant nodes (a
 * LayerNormalization decomposed into Pow(x, 2), Add(var, 1e-5)); training
 * them would be wrong (and Pow's exponent gradient is NaN for negative
 * bases). */
static gboolean default_candidate(const WeirContainer *c, gboolean recorded) {
  if (recorded)
    return c->initializer && c->initializer[0] != '/';
  g_autoptr(WeirExpr) v = weir_container_volume(c);
  gint64 n;
  return !(weir_expr_is_const(v, &n) && n <= 1);
}

static gboolean name_matches(const GRegex *re, const WeirContainer *c) {
  return g_regex_match(re, c->name, 0, NULL) ||
         (c->initializer && g_regex_match(re, c->initializer, 0, NULL));
}

static GRegex *compile_regex(const WeirGraph *g, const char *option,
                             const char *pattern, GError **error) {
  GError *local = NULL;
  GRegex *re = g_regex_new(pattern, 0, 0, &local);
  if (!re) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "program '%s': %s '%s': %s", g->name, option, pattern,
                local->message);
    g_error_free(local);
  }
  return re;
}

/* The candidates for parameters (borrowed names, NULL-terminated): float
 * containers with constant data, chosen by the default rule or options. */
static GPtrArray *candidates(const WeirGraph *g, const WeirTrainOptions *o,
                             GError **error) {
  g_autoptr(GRegex) params = NULL;
  g_autoptr(GRegex) freeze = NULL;
  if (o && o->params &&
      !(params = compile_regex(g, "--params", o->params, error)))
    return NULL;
  if (o && o->freeze &&
      !(freeze = compile_regex(g, "--freeze", o->freeze, error)))
    return NULL;
  gboolean recorded = records_initializers(g);
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (!c->initial || !weir_dtype_is_float(c->dtype))
      continue;
    if (params ? !name_matches(params, c) : !default_candidate(c, recorded))
      continue;
    if (freeze && name_matches(freeze, c))
      continue;
    g_ptr_array_add(out, c->name);
  }
  g_ptr_array_add(out, NULL);
  return out;
}

char **weir_train_select_parameters(const WeirGraph *forward,
                                    const WeirTrainOptions *options,
                                    GError **error) {
  g_autoptr(GPtrArray) cands = candidates(forward, options, error);
  if (!cands)
    return NULL;
  g_autoptr(GPtrArray) inputs = g_ptr_array_new();
  g_autoptr(GPtrArray) outputs = g_ptr_array_new();
  WeirState *s = forward_parts(forward, inputs, outputs, NULL);
  if (!s)
    return g_new0(char *, 1);
  g_ptr_array_add(outputs, NULL);
  return weir_autodiff_dependencies(forward, s,
                                    (const char *const *)cands->pdata,
                                    (const char *const *)outputs->pdata);
}

char **weir_train_parameters(const WeirGraph *forward) {
  return weir_train_select_parameters(forward, NULL, NULL);
}

/* Makes c an argument without data. */
static void make_argument(WeirContainer *c) {
  c->transient = FALSE;
  weir_container_set_initial(c, NULL);
}

WeirGraph *weir_train_eval_graph(const WeirGraph *forward,
                                 const WeirTrainOptions *options,
                                 GError **error) {
  g_autoptr(GPtrArray) inputs = g_ptr_array_new();
  g_autoptr(GPtrArray) outputs = g_ptr_array_new();
  if (!forward_parts(forward, inputs, outputs, error))
    return NULL;
  g_auto(GStrv) params = weir_train_select_parameters(forward, options, error);
  if (!params)
    return NULL;
  WeirGraph *g = weir_graph_copy(forward);
  for (guint i = 0; params[i]; i++)
    make_argument(weir_graph_container(g, params[i]));
  /* BatchNormalization running statistics (inputs 3 and 4), which the
   * training program updates */
  WeirState *s = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    const WeirNode *n = weir_state_node(s, m->dst);
    if (n && n->kind == WEIR_NODE_LIBRARY &&
        g_strcmp0(n->op, "BatchNormalization") == 0 && m->data &&
        (g_strcmp0(m->dst_conn, "in3") == 0 ||
         g_strcmp0(m->dst_conn, "in4") == 0))
      make_argument(weir_graph_container(g, m->data));
  }
  return g;
}

/* --------------------------------------------------------------- building */

typedef struct {
  WeirGraph *g;
  WeirState *s;
  GHashTable *access; /* name -> WeirNode* to read from in s */
} Builder;

static WeirNode *reader(Builder *b, const char *name) {
  WeirNode *a = g_hash_table_lookup(b->access, name);
  if (!a) {
    a = weir_state_add_access(b->g, b->s, name);
    g_hash_table_insert(b->access, g_strdup(name), a);
  }
  return a;
}

static char *full_subset(const WeirGraph *g, const char *name) {
  g_autoptr(WeirSubset) sub =
      weir_container_full_subset(weir_graph_container(g, name));
  return weir_subset_to_string(sub);
}

static void builder_enter(Builder *b, WeirState *s) {
  b->s = s;
  g_hash_table_remove_all(b->access);
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *a = g_ptr_array_index(s->nodes, i);
    if (a->kind != WEIR_NODE_ACCESS)
      continue;
    g_autoptr(GPtrArray) in = weir_state_in_edges(s, a->id);
    if (in->len > 0 || !g_hash_table_contains(b->access, a->data))
      g_hash_table_replace(b->access, g_strdup(a->data), a);
  }
}

/* A library node reading ins and writing outs (each through an access
 * node, full subsets); outputs become the values later nodes read. */
static WeirNode *lib(Builder *b, const char *op, const char *label,
                     const char *const *ins, guint n_ins,
                     const char *const *outs, guint n_outs) {
  g_autoptr(GPtrArray) ic = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) oc = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < n_ins; k++)
    g_ptr_array_add(ic, g_strdup_printf("in%u", k));
  g_ptr_array_add(ic, NULL);
  for (guint k = 0; k < n_outs; k++)
    g_ptr_array_add(oc, g_strdup_printf("out%u", k));
  g_ptr_array_add(oc, NULL);
  WeirNode *n = weir_state_add_library(b->g, b->s, label, op,
                                       (const char *const *)ic->pdata,
                                       (const char *const *)oc->pdata);
  for (guint k = 0; k < n_ins; k++) {
    WeirNode *a = reader(b, ins[k]);
    g_autofree char *sub = full_subset(b->g, ins[k]);
    weir_state_add_memlet(b->g, b->s, a->id, NULL, n->id, ic->pdata[k], ins[k],
                          sub, NULL);
  }
  for (guint k = 0; k < n_outs; k++) {
    WeirNode *a = weir_state_add_access(b->g, b->s, outs[k]);
    g_autofree char *sub = full_subset(b->g, outs[k]);
    weir_state_add_memlet(b->g, b->s, n->id, oc->pdata[k], a->id, NULL, outs[k],
                          sub, NULL);
    g_hash_table_replace(b->access, g_strdup(outs[k]), a);
  }
  return n;
}

static const char *transient(Builder *b, const char *base, WeirDType dtype,
                             guint rank, WeirExpr *const *shape) {
  g_autofree char *name = weir_graph_fresh_name(b->g, base);
  WeirContainer *c =
      weir_graph_add_container(b->g, name, dtype, rank, shape, TRUE, NULL);
  g_assert(c);
  return c->name;
}

static const char *transient_like(Builder *b, const char *base,
                                  const char *like) {
  const WeirContainer *c = weir_graph_container(b->g, like);
  return transient(b, base, c->dtype, c->shape->len,
                   (WeirExpr *const *)c->shape->pdata);
}

static const char *pointwise(Builder *b, const char *base, const char *like,
                             const char *out, const char *code,
                             const char *const *ins, guint n_ins) {
  if (!out)
    out = transient_like(b, base, like);
  WeirNode *n = lib(b, "Pointwise", out, ins, n_ins, &out, 1);
  weir_node_set_attr_string(n, "code", code);
  return out;
}

/* A map copying buf[k, ...] (a batch buffer) into step, or with store
 * step into buf[k, ...]. */
static gboolean slice_map(Builder *b, const char *buf, const char *step,
                          const char *k, gboolean store, GError **error) {
  const WeirContainer *d = weir_graph_container(b->g, step);
  guint r = d->shape->len;
  g_autoptr(GPtrArray) params = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) ranges = g_ptr_array_new_with_free_func(g_free);
  GString *inner = g_string_new(k), *outer = g_string_new(k),
          *out_inner = g_string_new(NULL);
  for (guint i = 0; i < r; i++) {
    g_autofree char *dim = weir_expr_to_string(d->shape->pdata[i]);
    g_ptr_array_add(params, g_strdup_printf("p%u", i));
    g_ptr_array_add(ranges, g_strdup_printf("0:%s", dim));
    g_string_append_printf(inner, ", p%u", i);
    g_string_append_printf(outer, ", 0:%s", dim);
    g_string_append_printf(out_inner, "%sp%u", i ? ", " : "", i);
  }
  g_ptr_array_add(params, NULL);
  g_ptr_array_add(ranges, NULL);
  g_autofree char *buf_inner = g_string_free(inner, FALSE);
  g_autofree char *buf_outer = g_string_free(outer, FALSE);
  g_autofree char *step_inner = g_string_free(out_inner, FALSE);
  g_autofree char *step_full = full_subset(b->g, step);
  const char *src = store ? step : buf, *dst = store ? buf : step;
  const char *src_inner = store ? step_inner : buf_inner;
  const char *src_outer = store ? step_full : buf_outer;
  const char *dst_inner = store ? buf_inner : step_inner;
  const char *dst_outer = store ? buf_outer : step_full;
  g_autofree char *label =
      g_strdup_printf("%s_%s", store ? "record" : "batch", dst);
  WeirNode *exit = NULL;
  WeirNode *entry = weir_state_add_map(
      b->g, b->s, label, (const char *const *)params->pdata,
      (const char *const *)ranges->pdata, WEIR_SCHEDULE_PARALLEL, &exit, error);
  if (!entry)
    return FALSE;
  g_autofree char *in_c = g_strdup_printf("IN_%s", src);
  g_autofree char *out_c = g_strdup_printf("OUT_%s", src);
  g_autofree char *din_c = g_strdup_printf("IN_%s", dst);
  g_autofree char *dout_c = g_strdup_printf("OUT_%s", dst);
  weir_node_add_in_conn(entry, in_c);
  weir_node_add_out_conn(entry, out_c);
  weir_node_add_in_conn(exit, din_c);
  weir_node_add_out_conn(exit, dout_c);
  static const char *const tin[] = {"x", NULL}, *const tout[] = {"y", NULL};
  WeirNode *t = weir_state_add_tasklet(b->g, b->s, label, tin, tout, "y = x");
  WeirNode *a_src = reader(b, src);
  WeirNode *a_dst = weir_state_add_access(b->g, b->s, dst);
  g_hash_table_replace(b->access, g_strdup(dst), a_dst);
  /* a store writes part of the buffer: the memlet covers batch k only */
  return weir_state_add_memlet(b->g, b->s, a_src->id, NULL, entry->id, in_c,
                               src, src_outer, error) &&
         weir_state_add_memlet(b->g, b->s, entry->id, out_c, t->id, "x", src,
                               src_inner, error) &&
         weir_state_add_memlet(b->g, b->s, t->id, "y", exit->id, din_c, dst,
                               dst_inner, error) &&
         weir_state_add_memlet(b->g, b->s, exit->id, dout_c, a_dst->id, NULL,
                               dst, dst_outer, error);
}

static gboolean slice_copy(Builder *b, const char *src, const char *dst,
                           const char *k, GError **error) {
  return slice_map(b, src, dst, k, FALSE, error);
}

static gboolean slice_store(Builder *b, const char *src, const char *dst,
                            const char *k, GError **error) {
  return slice_map(b, dst, src, k, TRUE, error);
}

/* A tasklet (no map) with the given connectors and subsets. */
static gboolean
tasklet(Builder *b, const char *label, guint n_ins, const char *const *in_conns,
        const char *const *in_data, const char *const *in_subsets, guint n_outs,
        const char *const *out_conns, const char *const *out_data,
        const char *const *out_subsets, const char *code, GError **error) {
  g_autoptr(GPtrArray) ic = g_ptr_array_new();
  g_autoptr(GPtrArray) oc = g_ptr_array_new();
  for (guint i = 0; i < n_ins; i++)
    g_ptr_array_add(ic, (gpointer)in_conns[i]);
  g_ptr_array_add(ic, NULL);
  for (guint i = 0; i < n_outs; i++)
    g_ptr_array_add(oc, (gpointer)out_conns[i]);
  g_ptr_array_add(oc, NULL);
  WeirNode *t =
      weir_state_add_tasklet(b->g, b->s, label, (const char *const *)ic->pdata,
                             (const char *const *)oc->pdata, code);
  for (guint i = 0; i < n_ins; i++)
    if (!weir_state_add_memlet(b->g, b->s, reader(b, in_data[i])->id, NULL,
                               t->id, in_conns[i], in_data[i], in_subsets[i],
                               error))
      return FALSE;
  for (guint i = 0; i < n_outs; i++) {
    WeirNode *a = weir_state_add_access(b->g, b->s, out_data[i]);
    if (!weir_state_add_memlet(b->g, b->s, t->id, out_conns[i], a->id, NULL,
                               out_data[i], out_subsets[i], error))
      return FALSE;
  }
  return TRUE;
}

/* Replaces container `name` (an argument of the forward program) by a
 * transient `<name>_step` in every node and memlet of s, and re-adds `name`
 * as the batch buffer [K, ...shape].  Returns the transient's name. */
static const char *batch_input(WeirGraph *g, WeirState *s, const char *name,
                               WeirExpr *K, GError **error) {
  WeirContainer *c = weir_graph_container(g, name);
  g_autofree char *base = g_strdup_printf("%s_step", name);
  g_autofree char *step = weir_graph_fresh_name(g, base);
  guint r = c->shape->len;
  WeirDType dtype = c->dtype;
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, r + 1);
  shape[0] = K;
  for (guint d = 0; d < r; d++)
    shape[d + 1] = weir_expr_ref(c->shape->pdata[d]);
  g_autofree char *keep = g_strdup(name);
  WeirContainer *sc = weir_graph_add_container(
      g, step, dtype, r, (WeirExpr *const *)shape + 1, TRUE, error);
  gboolean ok = sc != NULL;
  if (ok) {
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(s->nodes, i);
      if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, keep) == 0)
        weir_access_set_data(n, step);
    }
    for (guint i = 0; i < s->edges->len; i++) {
      WeirMemlet *m = g_ptr_array_index(s->edges, i);
      if (g_strcmp0(m->data, keep) == 0)
        weir_memlet_set_data(m, step);
    }
    weir_graph_remove_container(g, keep);
    ok = weir_graph_add_container(g, keep, dtype, r + 1, shape, FALSE, error) !=
         NULL;
  }
  for (guint d = 1; d <= r; d++)
    weir_expr_unref(shape[d]);
  return ok ? sc->name : NULL;
}

/* A size expression as tasklet text (parenthesized). (transfer full) */
static char *expr_code(const WeirExpr *e) {
  g_autofree char *t = weir_expr_to_string(e);
  return g_strdup_printf("(%s)", t);
}

/* ----------------------------------------------------------------- losses
 *
 * Every loss is built from library nodes between the output and the loss
 * value, and differentiated by the same reverse sweep as the model (the
 * seed is a tensor of ones shaped like the loss value):
 *   cross-entropy  SoftmaxCrossEntropyLoss (its rule fuses softmax and
 *                  one-hot into one map), after a Transpose that moves the
 *                  class axis to position 1 when it is elsewhere; label
 *                  smoothing adds eps / C times the sum over the classes of
 *                  -w_c log p_c (PyTorch's formula, its mean included);
 *   nll            NegativeLogLikelihoodLoss, the same way;
 *   mse, l1, huber, bce-with-logits
 *                  one Pointwise node per element (differentiated from its
 *                  code), then ReduceMean or ReduceSum over every axis. */

static gboolean is_class_loss(WeirLoss l) {
  return l == WEIR_LOSS_SOFTMAX_CROSS_ENTROPY || l == WEIR_LOSS_NLL;
}

static const char *loss_name(WeirLoss l) {
  switch (l) {
  case WEIR_LOSS_SOFTMAX_CROSS_ENTROPY:
    return "cross-entropy";
  case WEIR_LOSS_NLL:
    return "nll";
  case WEIR_LOSS_MSE:
    return "mse";
  case WEIR_LOSS_BCE_WITH_LOGITS:
    return "bce-with-logits";
  case WEIR_LOSS_L1:
    return "l1";
  case WEIR_LOSS_HUBER:
    return "huber";
  }
  return "?";
}

/* The class axis of an output of rank r (class losses). */
static gboolean class_axis(const WeirTrainOptions *o, const char *out, guint r,
                           guint *axis, GError **error) {
  if (r < 2) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s needs an output with a batch and a class axis (rank >= "
                "2); '%s' has rank %u",
                loss_name(o->loss), out, r);
    return FALSE;
  }
  gint64 a = o->class_axis < 0 ? (gint64)r + o->class_axis : o->class_axis;
  if (a < 0 || a >= r) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "class axis %d is outside output '%s' of rank %u",
                o->class_axis, out, r);
    return FALSE;
  }
  *axis = (guint)a;
  return TRUE;
}

/* The target's shape for output oc (borrowed expressions; free the array
 * with g_free): the output's without the class axis for class losses, the
 * output's otherwise.  NULL with an error for a bad class axis. */
static WeirExpr **target_shape(const WeirTrainOptions *o,
                               const WeirContainer *oc, guint *rank,
                               GError **error) {
  guint r = oc->shape->len;
  WeirExpr **shape = g_new0(WeirExpr *, r + 1);
  if (!is_class_loss(o->loss)) {
    for (guint d = 0; d < r; d++)
      shape[d] = oc->shape->pdata[d];
    *rank = r;
    return shape;
  }
  guint axis;
  if (!class_axis(o, oc->name, r, &axis, error)) {
    g_free(shape);
    return NULL;
  }
  guint k = 0;
  for (guint d = 0; d < r; d++)
    if (d != axis)
      shape[k++] = oc->shape->pdata[d];
  *rank = k;
  return shape;
}

/* x reduced over every axis with op (ReduceSum, ReduceMean) into a new
 * scalar. */
static const char *reduce_all(Builder *b, const char *x, const char *op,
                              const char *base) {
  const WeirContainer *c = weir_graph_container(b->g, x);
  guint r = c->shape->len;
  const char *y = transient(b, base, c->dtype, 0, NULL);
  g_autofree gint64 *axes = g_new0(gint64, r ? r : 1);
  for (guint d = 0; d < r; d++)
    axes[d] = d;
  WeirNode *n = lib(b, op, y, &x, 1, &y, 1);
  weir_node_set_attr_ints(n, "axes", axes, r);
  weir_node_set_attr_int(n, "keepdims", 0);
  return y;
}

/* A constant holding the class weights with shape [C, 1 x ones]. */
static const char *weights_constant(Builder *b, const WeirTrainOptions *o,
                                    WeirDType dtype, WeirExpr *classes,
                                    guint ones, GError **error) {
  gint64 n;
  if (!weir_expr_is_const(classes, &n) || n != (gint64)o->n_class_weights) {
    g_autofree char *c = weir_expr_to_string(classes);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%u class weights given for %s classes", o->n_class_weights, c);
    return NULL;
  }
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  g_autofree WeirExpr **shape = g_new0(WeirExpr *, ones + 1);
  shape[0] = classes;
  for (guint d = 1; d <= ones; d++)
    shape[d] = one;
  const char *name = transient(b, "class_weights", dtype, ones + 1, shape);
  gsize es = dtype == WEIR_DTYPE_F64 ? 8 : 4;
  guint8 *data = g_malloc(es * (gsize)n);
  for (gint64 i = 0; i < n; i++) {
    if (es == 8) {
      double v = o->class_weights[i];
      memcpy(data + 8 * i, &v, 8);
    } else {
      float v = (float)o->class_weights[i];
      memcpy(data + 4 * i, &v, 4);
    }
  }
  g_autoptr(GBytes) bytes = g_bytes_new_take(data, es * (gsize)n);
  weir_container_set_initial(weir_graph_container(b->g, name), bytes);
  return name;
}

/* Cross-entropy or NLL of output `out` (class axis moved to 1) against
 * labels t; returns the loss value (scalar, or t's shape for none). */
static const char *build_class_loss(Builder *b, const WeirTrainOptions *o,
                                    const char *out, const char *t,
                                    GError **error) {
  const WeirContainer *c = weir_graph_container(b->g, out);
  guint r = c->shape->len, axis;
  if (!class_axis(o, out, r, &axis, error))
    return NULL;
  gboolean ce = o->loss == WEIR_LOSS_SOFTMAX_CROSS_ENTROPY;
  if (o->label_smoothing != 0 && !ce) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "label smoothing is an option of cross-entropy, not of %s",
                loss_name(o->loss));
    return NULL;
  }
  if (o->label_smoothing < 0 || o->label_smoothing > 1) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "label smoothing %g is outside [0, 1]", o->label_smoothing);
    return NULL;
  }
  WeirDType dtype = c->dtype;
  WeirExpr *classes = c->shape->pdata[axis];
  const char *x = out;
  if (axis != 1) {
    /* [N, C, D...]: the first other axis, the classes, the rest */
    g_autofree gint64 *perm = g_new0(gint64, r);
    g_autofree WeirExpr **shape = g_new0(WeirExpr *, r);
    guint first = axis == 0 ? 1 : 0, k = 2;
    perm[0] = first;
    perm[1] = axis;
    for (guint d = 0; d < r; d++)
      if (d != axis && d != first)
        perm[k++] = d;
    for (guint d = 0; d < r; d++)
      shape[d] = c->shape->pdata[perm[d]];
    x = transient(b, "class_scores", dtype, r, shape);
    WeirNode *n = lib(b, "Transpose", "loss_class_axis", &out, 1, &x, 1);
    weir_node_set_attr_ints(n, "perm", perm, r);
  }
  const char *w = NULL;
  if (o->class_weights &&
      !(w = weights_constant(b, o, dtype, classes, 0, error)))
    return NULL;
  const char *reduction = o->reduction == WEIR_REDUCTION_NONE  ? "none"
                          : o->reduction == WEIR_REDUCTION_SUM ? "sum"
                                                               : "mean";
  const WeirContainer *tc = weir_graph_container(b->g, t);
  const char *main =
      o->reduction == WEIR_REDUCTION_NONE
          ? transient(b, ce ? "ce_loss" : "nll_loss", dtype, tc->shape->len,
                      (WeirExpr *const *)tc->shape->pdata)
          : transient(b, ce ? "ce_loss" : "nll_loss", dtype, 0, NULL);
  gboolean smooth = o->label_smoothing != 0;
  /* cross-entropy keeps its log-probabilities for the backward pass (the
   * rule would recompute them otherwise) */
  const char *lp = ce ? transient_like(b, "log_probs", x) : NULL;
  const char *ins[] = {x, t, w};
  const char *outs[] = {main, lp};
  WeirNode *n =
      lib(b, ce ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss",
          "loss", ins, w ? 3 : 2, outs, ce ? 2 : 1);
  weir_node_set_attr_string(n, "reduction", reduction);
  if (o->has_ignore_index)
    weir_node_set_attr_int(n, "ignore_index", o->ignore_index);
  if (!smooth)
    return main;

  /* PyTorch: (1 - eps) ce + eps / C * smooth, smooth_e = -sum_c w_c lp_c
   * (0 for an ignored label), reduced: none; sum; mean = sum / sum of the
   * labels' weights with weights, else the mean over every element. */
  const char *neg;
  if (o->class_weights) {
    const char *wb = weights_constant(b, o, dtype, classes, r - 2, error);
    if (!wb)
      return NULL;
    const char *pins[] = {lp, wb};
    neg = pointwise(b, "smooth_terms", lp, NULL, "y = -a * b", pins, 2);
  } else {
    neg = pointwise(b, "smooth_terms", lp, NULL, "y = -a", &lp, 1);
  }
  const char *per = transient(b, "smooth_loss", dtype, tc->shape->len,
                              (WeirExpr *const *)tc->shape->pdata);
  gint64 one_axis = 1;
  n = lib(b, "ReduceSum", "smooth_sum", &neg, 1, &per, 1);
  weir_node_set_attr_ints(n, "axes", &one_axis, 1);
  weir_node_set_attr_int(n, "keepdims", 0);
  g_autofree char *mask = NULL;
  if (o->has_ignore_index) {
    mask = g_strdup_printf("y = b == %" G_GINT64_FORMAT " ? 0 : a",
                           o->ignore_index);
    const char *mins[] = {per, t};
    per = pointwise(b, "smooth_loss", per, NULL, mask, mins, 2);
  }
  const char *sm = per;
  if (o->reduction == WEIR_REDUCTION_SUM) {
    sm = reduce_all(b, per, "ReduceSum", "smooth_total");
  } else if (o->reduction == WEIR_REDUCTION_MEAN && !o->class_weights) {
    sm = reduce_all(b, per, "ReduceMean", "smooth_total");
  } else if (o->reduction == WEIR_REDUCTION_MEAN) {
    const char *idx = t;
    if (o->has_ignore_index) {
      g_autofree char *clamp = g_strdup_printf(
          "y = a == %" G_GINT64_FORMAT " ? 0 : a", o->ignore_index);
      idx = pointwise(b, "label_index", t, NULL, clamp, &t, 1);
    }
    const char *gw = transient(b, "label_weights", dtype, tc->shape->len,
                               (WeirExpr *const *)tc->shape->pdata);
    const char *gins[] = {w, idx};
    n = lib(b, "Gather", "label_weights", gins, 2, &gw, 1);
    weir_node_set_attr_int(n, "axis", 0);
    if (o->has_ignore_index) {
      const char *mins[] = {gw, t};
      gw = pointwise(b, "label_weights", gw, NULL, mask, mins, 2);
    }
    const char *wsum = reduce_all(b, gw, "ReduceSum", "label_weight_sum");
    const char *ssum = reduce_all(b, per, "ReduceSum", "smooth_sum");
    const char *dins[] = {ssum, wsum};
    sm = pointwise(b, "smooth_total", ssum, NULL, "y = a / b", dins, 2);
  }
  g_autofree char *cl = expr_code(classes);
  g_autofree char *code =
      g_strdup_printf("y = %.17g * a + %.17g / %s * b", 1 - o->label_smoothing,
                      o->label_smoothing, cl);
  const char *fins[] = {main, sm};
  return pointwise(b, "loss_value", main, NULL, code, fins, 2);
}

/* The loss of output `out` against target `t` (the step's slice): returns
 * the loss value (a new transient: a scalar, or per element for reduction
 * none). */
static const char *build_loss(Builder *b, const WeirTrainOptions *o,
                              const char *out, const char *t, GError **error) {
  if (is_class_loss(o->loss))
    return build_class_loss(b, o, out, t, error);
  const char *code = NULL;
  g_autofree char *huber = NULL;
  switch (o->loss) {
  case WEIR_LOSS_MSE:
    code = "y = (a - b) * (a - b)";
    break;
  case WEIR_LOSS_L1:
    /* derivative sign(a - b), 0 where a == b (as PyTorch) */
    code = "d = a - b\ny = d > 0 ? d : (d < 0 ? -d : 0)";
    break;
  case WEIR_LOSS_HUBER:
    if (!(o->huber_delta > 0)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "the huber delta must be positive (%g)", o->huber_delta);
      return NULL;
    }
    huber =
        g_strdup_printf("d = a - b\n"
                        "ad = abs(d)\n"
                        "y = ad < %.17g ? 0.5 * d * d : %.17g * (ad - "
                        "%.17g)",
                        o->huber_delta, o->huber_delta, 0.5 * o->huber_delta);
    code = huber;
    break;
  case WEIR_LOSS_BCE_WITH_LOGITS:
    /* max(a, 0) - a b + log(1 + exp(-|a|)), per sign so that no exp
     * overflows; derivative sigmoid(a) - b on both branches */
    code = "y = a >= 0 ? a * (1 - b) + log(1 + exp(-a)) : "
           "log(1 + exp(a)) - a * b";
    break;
  default:
    g_assert_not_reached();
  }
  const char *ins[] = {out, t};
  const char *per = pointwise(b, "loss_elements", out, NULL, code, ins, 2);
  if (o->reduction == WEIR_REDUCTION_NONE)
    return per;
  return reduce_all(
      b, per, o->reduction == WEIR_REDUCTION_SUM ? "ReduceSum" : "ReduceMean",
      "loss_value");
}

/* ------------------------------------------------ training-mode lowering
 *
 * Operators whose training behaviour differs from inference are replaced,
 * before differentiation, by library nodes that have backward rules:
 *   BatchNormalization: batch statistics (one BatchNormStats node: mean,
 *     biased variance over every axis but the channels and
 *     std = sqrt(var + eps)), then one BatchNormApply
 *     (x - mean) / std * scale + bias, whose backward rule is one
 *     BatchNormGrad (ir/ops/training.c: two passes over dY and x); the
 *     running statistics are updated in the update state (momentum as in
 *     ONNX: running = momentum * running + (1 - momentum) * batch; the
 *     variance is the unbiased one, as PyTorch keeps it).
 *   LayerNormalization: the same normalization over axes axis..rank-1.
 *   Dropout: y = x * mask with mask = 1 / (1 - ratio) or 0 drawn from
 *     Philox-4x32-10 (the tasklet function philox) with key = the seed and
 *     counter = (steps attempted * A + micro-batch, element): a function of
 *     the program's step counters, so the same for any thread count, K or
 *     call boundaries, and different at every step.
 */

typedef struct {
  char *target; /* container updated in place */
  char *value;  /* transient with the new value (same shape) */
  double keep;  /* target = keep * target + (1 - keep) * value */
} RunningUpdate;

static void running_update_free(gpointer p) {
  RunningUpdate *u = p;
  g_free(u->target);
  g_free(u->value);
  g_free(u);
}

/* Moves every reader of access node old to access node fresh, then removes
 * old. */
static void replace_access(WeirState *s, WeirNode *old, WeirNode *fresh) {
  g_autoptr(GPtrArray) outs = weir_state_out_edges(s, old->id);
  for (guint j = 0; j < outs->len; j++)
    weir_memlet_set_src(s, outs->pdata[j], fresh->id, NULL);
  weir_state_remove_node(s, old->id);
}

/* The access node writing `name` in s, or NULL. */
static WeirNode *writer_of(WeirState *s, const char *name) {
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind != WEIR_NODE_ACCESS || g_strcmp0(n->data, name) != 0)
      continue;
    g_autoptr(GPtrArray) in = weir_state_in_edges(s, n->id);
    if (in->len > 0)
      return n;
  }
  return NULL;
}

/* The container on connector in<k> / out<k> of n: a copy, since lowering
 * removes the node and its memlets (owned by `keep`). */
static const char *port_data_in(GPtrArray *keep, WeirState *s, WeirNode *n,
                                gboolean in, guint k);

static const char *port_data(WeirState *s, WeirNode *n, gboolean in, guint k) {
  g_autofree char *conn = g_strdup_printf(in ? "in%u" : "out%u", k);
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if ((in ? m->dst : m->src) == n->id &&
        g_strcmp0(in ? m->dst_conn : m->src_conn, conn) == 0)
      return m->data;
  }
  return NULL;
}

static const char *port_data_in(GPtrArray *keep, WeirState *s, WeirNode *n,
                                gboolean in, guint k) {
  const char *d = port_data(s, n, in, k);
  if (!d)
    return NULL;
  char *copy = g_strdup(d);
  g_ptr_array_add(keep, copy);
  return copy;
}

static gboolean output_used(WeirState *s, const char *name) {
  WeirNode *w = name ? writer_of(s, name) : NULL;
  if (!w)
    return FALSE;
  g_autoptr(GPtrArray) outs = weir_state_out_edges(s, w->id);
  return outs->len > 0;
}

/* A scalar constant container. */
static const char *constant(Builder *b, const char *base, WeirDType dtype,
                            double v) {
  const char *name = transient(b, base, dtype, 0, NULL);
  WeirContainer *c = weir_graph_container(b->g, name);
  g_autoptr(GBytes) bytes = NULL;
  if (dtype == WEIR_DTYPE_F64) {
    bytes = g_bytes_new(&v, sizeof v);
  } else {
    float f = (float)v;
    bytes = g_bytes_new(&f, sizeof f);
  }
  weir_container_set_initial(c, bytes);
  return name;
}

/* The batch statistics of x over `axes` (mask), kept (keepdims): mean,
 * variance and std = sqrt(var + eps); *centered_out: x - mean. */
static void batch_stats(Builder *b, const char *label, const char *x,
                        const gboolean *mask, double eps, const char **mean_out,
                        const char **var_out, const char **std_out,
                        const char **centered_out) {
  const WeirContainer *cx = weir_graph_container(b->g, x);
  guint r = cx->shape->len;
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  g_autofree WeirExpr **kshape = g_new0(WeirExpr *, r);
  g_autoptr(GArray) axes = g_array_new(FALSE, FALSE, sizeof(gint64));
  for (guint d = 0; d < r; d++) {
    kshape[d] = mask[d] ? one : g_ptr_array_index(cx->shape, d);
    if (mask[d]) {
      gint64 v = d;
      g_array_append_val(axes, v);
    }
  }
  g_autofree char *mb = g_strdup_printf("%s_mean", label);
  g_autofree char *vb = g_strdup_printf("%s_var", label);
  const char *mean = transient(b, mb, cx->dtype, r, kshape);
  WeirNode *n = lib(b, "ReduceMean", mean, &x, 1, &mean, 1);
  weir_node_set_attr_ints(n, "axes", (gint64 *)axes->data, axes->len);
  weir_node_set_attr_int(n, "keepdims", 1);
  const char *xc = transient_like(b, "centered", x);
  const char *ins[] = {x, mean};
  lib(b, "Sub", xc, ins, 2, &xc, 1);
  const char *sq = transient_like(b, "centered_sq", x);
  const char *ins2[] = {xc, xc};
  lib(b, "Mul", sq, ins2, 2, &sq, 1);
  const char *var = transient(b, vb, cx->dtype, r, kshape);
  n = lib(b, "ReduceMean", var, &sq, 1, &var, 1);
  weir_node_set_attr_ints(n, "axes", (gint64 *)axes->data, axes->len);
  weir_node_set_attr_int(n, "keepdims", 1);
  const char *e = constant(b, "epsilon", cx->dtype, eps);
  const char *ve = transient(b, "var_eps", cx->dtype, r, kshape);
  const char *ins3[] = {var, e};
  lib(b, "Add", ve, ins3, 2, &ve, 1);
  const char *sd = transient(b, "std", cx->dtype, r, kshape);
  lib(b, "Sqrt", sd, &ve, 1, &sd, 1);
  *mean_out = mean;
  *var_out = var;
  *std_out = sd;
  *centered_out = xc;
}

/* A batch norm's statistics of x ([N, C, ...]) over every dimension but
 * the channels, kept ([1, C, 1, ...]), from one BatchNormStats node:
 * mean, biased variance and std = sqrt(var + eps). */
static void batchnorm_stats(Builder *b, const char *label, const char *x,
                            double eps, const char **mean_out,
                            const char **var_out, const char **std_out) {
  const WeirContainer *cx = weir_graph_container(b->g, x);
  guint r = cx->shape->len;
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  g_autofree WeirExpr **kshape = g_new0(WeirExpr *, r);
  for (guint d = 0; d < r; d++)
    kshape[d] = d == 1 ? g_ptr_array_index(cx->shape, d) : one;
  g_autofree char *mb = g_strdup_printf("%s_mean", label);
  g_autofree char *vb = g_strdup_printf("%s_var", label);
  g_autofree char *sb = g_strdup_printf("%s_std", label);
  const char *outs[] = {transient(b, mb, cx->dtype, r, kshape),
                        transient(b, vb, cx->dtype, r, kshape),
                        transient(b, sb, cx->dtype, r, kshape)};
  WeirNode *n = lib(b, "BatchNormStats", outs[0], &x, 1, outs, 3);
  weir_node_set_attr_float(n, "epsilon", eps);
  *mean_out = outs[0];
  *var_out = outs[1];
  *std_out = outs[2];
}

/* x normalized over `axes` (mask) with eps: returns the normalized value,
 * and the batch mean and variance kept (keepdims). */
static const char *normalize(Builder *b, const char *label, const char *x,
                             const gboolean *mask, double eps,
                             const char **mean_out, const char **var_out) {
  const char *sd, *xc;
  batch_stats(b, label, x, mask, eps, mean_out, var_out, &sd, &xc);
  const char *xn = transient_like(b, "normalized", x);
  const char *ins2[] = {xc, sd};
  lib(b, "Div", xn, ins2, 2, &xn, 1);
  return xn;
}

/* y = xn * scale + bias into a new access node replacing old_y's. */
static void affine(Builder *b, const char *xn, const char *scale,
                   const char *bias, const char *y, WeirNode *old,
                   guint channel_rank) {
  const char *sc = scale, *bi = bias;
  if (channel_rank > 1) {
    /* [C] -> [C, 1, ...] to broadcast along the channel axis */
    for (guint k = 0; k < 2; k++) {
      const char *src = k == 0 ? scale : bias;
      if (!src)
        continue;
      const WeirContainer *c = weir_graph_container(b->g, src);
      g_autoptr(WeirExpr) one = weir_expr_const(1);
      g_autofree WeirExpr **shape = g_new0(WeirExpr *, channel_rank);
      g_autofree gint64 *axes = g_new0(gint64, channel_rank - 1);
      shape[0] = g_ptr_array_index(c->shape, 0);
      for (guint d = 1; d < channel_rank; d++) {
        shape[d] = one;
        axes[d - 1] = d;
      }
      const char *t = transient(b, "channel", c->dtype, channel_rank, shape);
      WeirNode *n = lib(b, "Unsqueeze", t, &src, 1, &t, 1);
      weir_node_set_attr_ints(n, "axes", axes, channel_rank - 1);
      if (k == 0)
        sc = t;
      else
        bi = t;
    }
  }
  const char *scaled = bi ? transient_like(b, "scaled", xn) : y;
  const char *ins[] = {xn, sc};
  lib(b, "Mul", scaled, ins, 2, &scaled, 1);
  if (bi) {
    const char *ins2[] = {scaled, bi};
    lib(b, "Add", y, ins2, 2, &y, 1);
  }
  WeirNode *fresh = g_hash_table_lookup(b->access, y);
  if (old && fresh && old != fresh)
    replace_access(b->s, old, fresh);
}

static gboolean lower_node(Builder *b, const WeirTrainOptions *o, WeirNode *n,
                           const char *jm, gint64 A, GPtrArray *updates,
                           GError **error) {
  WeirState *s = b->s;
  const WeirAttr *a;
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func(g_free);
  if (strcmp(n->op, "BatchNormalization") == 0) {
    const char *x = port_data_in(keep, s, n, TRUE, 0),
               *scale = port_data_in(keep, s, n, TRUE, 1),
               *bias = port_data_in(keep, s, n, TRUE, 2),
               *rm = port_data_in(keep, s, n, TRUE, 3),
               *rv = port_data_in(keep, s, n, TRUE, 4),
               *y = port_data_in(keep, s, n, FALSE, 0);
    if (output_used(s, port_data_in(keep, s, n, FALSE, 1)) ||
        output_used(s, port_data_in(keep, s, n, FALSE, 2))) {
      g_autofree char *what = weir_describe_node(s, n);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: the running statistics outputs are read by other "
                  "nodes",
                  what);
      return FALSE;
    }
    a = weir_node_attr(n, "epsilon");
    double eps = a && a->type == WEIR_ATTR_FLOAT ? a->f : 1e-5;
    a = weir_node_attr(n, "momentum");
    double mom = a && a->type == WEIR_ATTR_FLOAT ? a->f : 0.9;
    g_autofree char *label = g_strcanon(g_strdup(n->label),
                                        "abcdefghijklmnopqrstuvwxyz"
                                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_",
                                        '_');
    const WeirContainer *cx = weir_graph_container(b->g, x);
    guint r = cx->shape->len;
    g_autoptr(WeirExpr) count = weir_expr_const(1);
    for (guint d = 0; d < r; d++)
      if (d != 1) {
        WeirExpr *c2 = weir_expr_mul(count, g_ptr_array_index(cx->shape, d));
        weir_expr_unref(count);
        count = c2;
      }
    /* drop the node and the access nodes of its unused outputs */
    for (guint j = 1; j < 3; j++) {
      WeirNode *w = writer_of(s, port_data_in(keep, s, n, FALSE, j));
      if (w)
        weir_state_remove_node(s, w->id);
    }
    WeirNode *old_y = writer_of(s, y);
    weir_state_remove_node(s, n->id);
    /* the statistics as one BatchNormStats node (the running averages
     * read them; one pass over x in Weir's kernel), the normalization and
     * affine step as one BatchNormApply, whose backward is one
     * BatchNormGrad (two passes over dY and x) */
    const char *mean, *var, *sd;
    batchnorm_stats(b, label, x, eps, &mean, &var, &sd);
    const char *ins[] = {x, scale, bias, mean, sd};
    lib(b, "BatchNormApply", y, ins, 5, &y, 1);
    WeirNode *fresh = g_hash_table_lookup(b->access, y);
    if (old_y && fresh && old_y != fresh)
      replace_access(b->s, old_y, fresh);
    /* batch statistics as [C] for the running averages */
    const char *stats[] = {mean, var};
    const char *targets[] = {rm, rv};
    for (guint j = 0; j < 2; j++) {
      const WeirContainer *tc = weir_graph_container(b->g, targets[j]);
      const char *flat =
          transient_like(b, j ? "batch_var" : "batch_mean", targets[j]);
      const char *src = stats[j];
      if (j == 1) {
        g_autofree char *cnt = expr_code(count);
        g_autofree char *code =
            g_strdup_printf("y = a * %s / (%s - 1)", cnt, cnt);
        /* C values: on one thread (a parallel region would cost more
         * than the loop; the step has one per batch norm) */
        const char *uv = transient_like(b, "unbiased_var", var);
        WeirNode *pw = lib(b, "Pointwise", uv, &var, 1, &uv, 1);
        weir_node_set_attr_string(pw, "code", code);
        weir_node_set_attr_int(pw, "serial", 1);
        src = uv;
      }
      WeirNode *rs = lib(b, "Reshape", flat, &src, 1, &flat, 1);
      gint64 c = -1;
      weir_node_set_attr_ints(rs, "shape", &c, 1);
      (void)tc;
      RunningUpdate *u = g_new0(RunningUpdate, 1);
      u->target = g_strdup(targets[j]);
      u->value = g_strdup(flat);
      u->keep = mom;
      g_ptr_array_add(updates, u);
    }
    return TRUE;
  }
  if (strcmp(n->op, "LayerNormalization") == 0) {
    const char *x = port_data_in(keep, s, n, TRUE, 0),
               *scale = port_data_in(keep, s, n, TRUE, 1),
               *bias = port_data_in(keep, s, n, TRUE, 2),
               *y = port_data_in(keep, s, n, FALSE, 0);
    if (output_used(s, port_data_in(keep, s, n, FALSE, 1)) ||
        output_used(s, port_data_in(keep, s, n, FALSE, 2))) {
      g_autofree char *what = weir_describe_node(s, n);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: the Mean / InvStdDev outputs are read by other nodes",
                  what);
      return FALSE;
    }
    a = weir_node_attr(n, "epsilon");
    double eps = a && a->type == WEIR_ATTR_FLOAT ? a->f : 1e-5;
    a = weir_node_attr(n, "axis");
    gint64 axis = a && a->type == WEIR_ATTR_INT ? a->i : -1;
    guint r = weir_graph_container(b->g, x)->shape->len;
    if (axis < 0)
      axis += r;
    g_autofree gboolean *mask = g_new0(gboolean, r);
    for (guint d = axis; d < r; d++)
      mask[d] = TRUE;
    g_autofree char *label = g_strcanon(g_strdup(n->label),
                                        "abcdefghijklmnopqrstuvwxyz"
                                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_",
                                        '_');
    for (guint j = 1; j < 3; j++) {
      WeirNode *w = writer_of(s, port_data_in(keep, s, n, FALSE, j));
      if (w)
        weir_state_remove_node(s, w->id);
    }
    WeirNode *old_y = writer_of(s, y);
    weir_state_remove_node(s, n->id);
    const char *mean, *var;
    const char *xn = normalize(b, label, x, mask, eps, &mean, &var);
    affine(b, xn, scale, bias, y, old_y, 1);
    return TRUE;
  }
  if (strcmp(n->op, "Dropout") == 0) {
    const char *x = port_data_in(keep, s, n, TRUE, 0),
               *y = port_data_in(keep, s, n, FALSE, 0);
    if (output_used(s, port_data_in(keep, s, n, FALSE, 1))) {
      g_autofree char *what = weir_describe_node(s, n);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: the mask output is read by other nodes", what);
      return FALSE;
    }
    a = weir_node_attr(n, "ratio");
    double ratio = a && a->type == WEIR_ATTR_FLOAT ? a->f : 0.5;
    if (!(ratio >= 0 && ratio < 1)) {
      g_autofree char *what = weir_describe_node(s, n);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: dropout ratio %g is outside [0, 1)", what, ratio);
      return FALSE;
    }
    a = weir_node_attr(n, "seed");
    /* Philox key: the program's seed, the node's seed attribute and its id
     * (each Dropout node draws its own stream) */
    guint64 key =
        (guint64)(gint64)o->dropout_seed * 0x9E3779B97F4A7C15u +
        (guint64)(a && a->type == WEIR_ATTR_INT ? a->i : 0) * 1000003u + n->id;
    gint64 seed = (gint64)(key & G_MAXINT64);
    WeirNode *w = writer_of(s, port_data_in(keep, s, n, FALSE, 1));
    if (w)
      weir_state_remove_node(s, w->id);
    WeirNode *old = writer_of(s, y);
    weir_state_remove_node(s, n->id);
    const WeirContainer *cx = weir_graph_container(b->g, x);
    guint r = cx->shape->len;
    if (r == 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "Dropout of a rank-0 value '%s' in training mode", x);
      return FALSE;
    }
    /* linear element index from the Pointwise map parameters p0, p1, ... */
    GString *lin = g_string_new("0");
    for (guint d = 0; d < r; d++) {
      g_string_append_printf(lin, " + p%u", d);
      for (guint e = d + 1; e < r; e++) {
        g_autofree char *dt = expr_code(g_ptr_array_index(cx->shape, e));
        g_string_append_printf(lin, " * %s", dt);
      }
    }
    g_autofree char *lin_s = g_string_free(lin, FALSE);
    /* keep when the first Philox-4x32-10 word of (key, counter = (steps
     * attempted * A + micro-batch, element)) is >= ratio * 2^32: the same
     * mask for a given step whatever the threads, K or call boundaries */
    gint64 threshold = (gint64)llround(ratio * 4294967296.0);
    g_autofree char *code =
        g_strdup_printf("r = philox(%" G_GINT64_FORMAT
                        ", (b + c) * %" G_GINT64_FORMAT " + %s, %s)\n"
                        "y = r >= %" G_GINT64_FORMAT " ? %.17g : 0",
                        seed, A, jm, lin_s, threshold, 1 / (1 - ratio));
    const char *mins[] = {x, "step", "skipped"};
    const char *mask = pointwise(b, "dropout_mask", x, NULL, code, mins, 3);
    WeirNode *mn = g_hash_table_lookup(b->access, mask);
    g_autoptr(GPtrArray) mk = weir_state_in_edges(s, mn->id);
    weir_node_set_attr_int(
        weir_state_node(s, ((WeirMemlet *)mk->pdata[0])->src), "differentiable",
        0);
    const char *ins[] = {x, mask};
    lib(b, "Mul", y, ins, 2, &y, 1);
    WeirNode *fresh = g_hash_table_lookup(b->access, y);
    if (old && fresh && old != fresh)
      replace_access(s, old, fresh);
    return TRUE;
  }
  return TRUE;
}

static gboolean lower_training(Builder *b, const WeirTrainOptions *o,
                               const char *jm, gint64 A, GPtrArray *updates,
                               GError **error) {
  g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < b->s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(b->s->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY &&
        (strcmp(n->op, "BatchNormalization") == 0 ||
         strcmp(n->op, "LayerNormalization") == 0 ||
         strcmp(n->op, "Dropout") == 0))
      g_array_append_val(ids, n->id);
  }
  for (guint i = 0; i < ids->len; i++) {
    WeirNode *n = weir_state_node(b->s, g_array_index(ids, guint, i));
    builder_enter(b, b->s);
    if (!lower_node(b, o, n, jm, A, updates, error))
      return FALSE;
  }
  builder_enter(b, b->s);
  return TRUE;
}

/* Whether some map of g has a parameter called name (an expanded forward
 * program). */
static gboolean is_map_param(const WeirGraph *g, const char *name) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      for (guint p = 0;
           n->kind == WEIR_NODE_MAP_ENTRY && p < n->map->params->len; p++)
        if (g_strcmp0(g_ptr_array_index(n->map->params, p), name) == 0)
          return TRUE;
    }
  }
  return FALSE;
}

static char *fresh_symbol(WeirGraph *g, const char *base) {
  char *name = g_strdup(base);
  for (guint i = 1; weir_graph_has_symbol(g, name) ||
                    weir_graph_container(g, name) || is_map_param(g, name);
       i++) {
    g_free(name);
    name = g_strdup_printf("%s_%u", base, i);
  }
  return name;
}

/* The gradient with L2 weight decay as tasklet text, for gradient
 * connector gc and parameter connector pc. (transfer full) */
static char *decayed(const WeirTrainOptions *o, const char *gc,
                     const char *pc) {
  if (o->weight_decay == 0)
    return g_strdup(gc);
  return g_strdup_printf("(%s + %.17g * %s)", gc, o->weight_decay, pc);
}

/* The optimizer update of parameter p with gradient gr in state b->s.
 * Every node keeps the old value when the check is not finite. */
static void build_update(Builder *b, const WeirTrainOptions *o, const char *p,
                         const char *gr, const char *check,
                         GHashTable *state_names, const char *lr_name) {
  /* the learning rate: a literal, or the scheduled value, read through the
   * connector after the others (`lr_name`, a scalar of P's dtype) */
  g_autofree char *lr = g_strdup_printf("%.17g", o->lr);
  if (o->optimizer == WEIR_OPTIMIZER_SGD) {
    /* P = P - lr g   (a = P, b = G, c = check, d = lr) */
    g_autofree char *gx = decayed(o, "b", "a");
    g_autofree char *code = g_strdup_printf("y = isfinite(c) ? a - %s * %s : a",
                                            lr_name ? "d" : lr, gx);
    const char *ins[] = {p, gr, check, lr_name};
    pointwise(b, NULL, p, p, code, ins, lr_name ? 4 : 3);
    return;
  }
  g_autofree char *mkey = g_strdup_printf("%s_m", p);
  g_autofree char *vkey = g_strdup_printf("%s_v", p);
  const char *mm = g_hash_table_lookup(state_names, mkey);
  const char *vv = g_hash_table_lookup(state_names, vkey);
  /* (a = m or v, b = G, c = P, d = check) */
  g_autofree char *gx = decayed(o, "b", "c");
  if (o->optimizer == WEIR_OPTIMIZER_MOMENTUM) {
    /* m = mu m + g; P = P - lr m */
    g_autofree char *code = g_strdup_printf(
        "y = isfinite(d) ? %.17g * a + %s : a", o->momentum, gx);
    const char *ins[] = {mm, gr, p, check};
    pointwise(b, NULL, mm, mm, code, ins, 4);
    g_autofree char *code2 =
        g_strdup_printf("y = isfinite(c) ? a - %s * b : a", lr_name ? "d" : lr);
    const char *ins2[] = {p, mm, check, lr_name};
    pointwise(b, NULL, p, p, code2, ins2, lr_name ? 4 : 3);
    return;
  }
  /* Adam: m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
   * P = P - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps), t = step + 1 */
  {
    g_autofree char *code =
        g_strdup_printf("y = isfinite(d) ? %.17g * a + %.17g * %s : a",
                        o->beta1, 1 - o->beta1, gx);
    const char *ins[] = {mm, gr, p, check};
    pointwise(b, NULL, mm, mm, code, ins, 4);
  }
  {
    g_autofree char *code =
        g_strdup_printf("y = isfinite(d) ? %.17g * a + %.17g * %s * %s : a",
                        o->beta2, 1 - o->beta2, gx, gx);
    const char *ins[] = {vv, gr, p, check};
    pointwise(b, NULL, vv, vv, code, ins, 4);
  }
  /* A rank-0 parameter (a learned scalar) reads the [1] step counter as a
   * rank-0 copy: a Pointwise input may not have a higher rank than its
   * output (issue 7). */
  const char *step = "step";
  if (weir_graph_container(b->g, p)->shape->len == 0) {
    step = transient(b, "step_scalar", WEIR_DTYPE_I64, 0, NULL);
    static const char *const x[] = {"x", NULL}, *const y[] = {"y", NULL};
    WeirNode *t = weir_state_add_tasklet(b->g, b->s, step, x, y, "y = x");
    WeirNode *dst = weir_state_add_access(b->g, b->s, step);
    weir_state_add_memlet(b->g, b->s, reader(b, "step")->id, NULL, t->id, "x",
                          "step", "0", NULL);
    weir_state_add_memlet(b->g, b->s, t->id, "y", dst->id, NULL, step, "",
                          NULL);
    g_hash_table_replace(b->access, g_strdup(step), dst);
  }
  /* a = P, b = m, c = v, d = step, e = check, f = lr */
  g_autofree char *code =
      g_strdup_printf("t = f64(d + 1)\n"
                      "y = isfinite(e) ? a - %s * (b / (1 - pow(%.17g, t))) / "
                      "(sqrt(c / (1 - pow(%.17g, t))) + %.17g) : a",
                      lr_name ? "f" : lr, o->beta1, o->beta2, o->epsilon);
  const char *ins[] = {p, mm, vv, step, check, lr_name};
  pointwise(b, NULL, p, p, code, ins, lr_name ? 6 : 5);
}

/* The optimizer update of every parameter in params (all of one dtype,
 * gradients in grads) as OptimizerUpdate nodes in state b->s: one node,
 * unless its inputs would exceed what a native call takes
 * (WEIR_NATIVE_MAX_PORTS), then consecutive groups per node.  The
 * scalars: the check, the step counter (Adam), the scheduled learning rate
 * lr_name and the clipping coefficient scale (each when not NULL).  The
 * running statistics of emas (RunningUpdate*, may be NULL), from the
 * first, join the last node while their dtype is the parameters' and
 * they fit; returns how many did (the caller updates the others). */
static guint build_fused_update(Builder *b, const WeirTrainOptions *o,
                                char **params, GHashTable *grads,
                                const char *check, GHashTable *state_names,
                                const char *lr_name, const char *scale,
                                GPtrArray *emas) {
  static const char *const names[] = {"sgd", "momentum", "adam"};
  guint kind = o->optimizer == WEIR_OPTIMIZER_SGD        ? 0
               : o->optimizer == WEIR_OPTIMIZER_MOMENTUM ? 1
                                                         : 2;
  guint per_group = 2 + kind;
  g_autoptr(GPtrArray) scalars = g_ptr_array_new();
  g_ptr_array_add(scalars, (gpointer)check);
  if (kind == 2)
    g_ptr_array_add(scalars, (gpointer) "step");
  if (lr_name)
    g_ptr_array_add(scalars, (gpointer)lr_name);
  if (scale)
    g_ptr_array_add(scalars, (gpointer)scale);
  guint cap = (WEIR_NATIVE_MAX_PORTS - scalars->len) / per_group;
  guint np = g_strv_length(params);
  guint n_nodes = (np + cap - 1) / cap;
  /* the moving averages the last node takes */
  WeirDType dtype = weir_graph_container(b->g, params[0])->dtype;
  guint last_groups = np - (n_nodes - 1) * cap;
  guint room =
      (WEIR_NATIVE_MAX_PORTS - scalars->len - last_groups * per_group) / 2;
  guint taken = 0;
  while (emas && taken < emas->len && taken < room) {
    const RunningUpdate *u = g_ptr_array_index(emas, taken);
    if (weir_graph_container(b->g, u->target)->dtype != dtype)
      break;
    taken++;
  }
  for (guint first = 0, node = 0; first < np; first += cap, node++) {
    guint end = MIN(np, first + cap);
    g_autoptr(GPtrArray) ins = g_ptr_array_new();
    g_autoptr(GPtrArray) outs = g_ptr_array_new();
    for (guint i = 0; i < scalars->len; i++)
      g_ptr_array_add(ins, scalars->pdata[i]);
    for (guint j = first; j < end; j++) {
      const char *p = params[j];
      g_autofree char *mkey = g_strdup_printf("%s_m", p);
      g_autofree char *vkey = g_strdup_printf("%s_v", p);
      const char *mm = g_hash_table_lookup(state_names, mkey);
      const char *vv = g_hash_table_lookup(state_names, vkey);
      g_ptr_array_add(ins, (gpointer)p);
      g_ptr_array_add(ins, g_hash_table_lookup(grads, p));
      g_ptr_array_add(outs, (gpointer)p);
      if (kind >= 1) {
        g_ptr_array_add(ins, (gpointer)mm);
        g_ptr_array_add(outs, (gpointer)mm);
      }
      if (kind == 2) {
        g_ptr_array_add(ins, (gpointer)vv);
        g_ptr_array_add(outs, (gpointer)vv);
      }
    }
    gboolean last = end == np;
    g_autoptr(GArray) keep = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint e = 0; last && e < taken; e++) {
      const RunningUpdate *u = g_ptr_array_index(emas, e);
      g_ptr_array_add(ins, u->target);
      g_ptr_array_add(ins, u->value);
      g_ptr_array_add(outs, u->target);
      g_array_append_val(keep, u->keep);
    }
    g_autofree char *label =
        n_nodes > 1 ? g_strdup_printf("update_%u", node) : g_strdup("update");
    WeirNode *n =
        lib(b, "OptimizerUpdate", label, (const char *const *)ins->pdata,
            ins->len, (const char *const *)outs->pdata, outs->len);
    weir_node_set_attr_string(n, "optimizer", names[kind]);
    weir_node_set_attr_float(n, "lr", o->lr);
    weir_node_set_attr_float(n, "weight_decay", o->weight_decay);
    if (kind == 1)
      weir_node_set_attr_float(n, "momentum", o->momentum);
    if (kind == 2) {
      weir_node_set_attr_float(n, "beta1", o->beta1);
      weir_node_set_attr_float(n, "beta2", o->beta2);
      weir_node_set_attr_float(n, "epsilon", o->epsilon);
    }
    weir_node_set_attr_int(n, "lr_input", lr_name != NULL);
    weir_node_set_attr_int(n, "scale_input", scale != NULL);
    if (keep->len)
      weir_node_set_attr_floats(n, "ema_keep", (const double *)keep->data,
                                keep->len);
  }
  return taken;
}

/* ------------------------------------------------------ pruning masks */

/* The masks of the parameters that keep their zeros (options->keep_zeros):
 * parameter name -> WeirTensor* (u8, 1 where forward's constant data is
 * nonzero), only for parameters with at least one zero.  NULL with an
 * error for a bad pattern. */
static GHashTable *pruning_masks(const WeirGraph *forward, char **params,
                                 const WeirTrainOptions *o, GError **error) {
  GHashTable *masks = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                            (GDestroyNotify)weir_tensor_free);
  if (!o->keep_zeros)
    return masks;
  g_autoptr(GRegex) re =
      compile_regex(forward, "--keep-zeros", o->keep_zeros, error);
  if (!re) {
    g_hash_table_unref(masks);
    return NULL;
  }
  for (guint i = 0; params[i]; i++) {
    const WeirContainer *c = weir_graph_container(forward, params[i]);
    if (!name_matches(re, c) || !c->initial)
      continue;
    guint rank = c->shape->len;
    g_autofree gint64 *shape = g_new0(gint64, rank + 1);
    gboolean concrete = TRUE;
    for (guint d = 0; d < rank && concrete; d++)
      concrete = weir_expr_is_const(g_ptr_array_index(c->shape, d), &shape[d]);
    if (!concrete)
      continue;
    g_autoptr(WeirTensor) w = weir_tensor_new(c->dtype, rank, shape);
    gsize size = 0;
    const void *data = g_bytes_get_data(c->initial, &size);
    if (size != weir_tensor_nbytes(w))
      continue;
    memcpy(w->data, data, size);
    g_autoptr(WeirTensor) m = weir_tensor_new(WEIR_DTYPE_U8, rank, shape);
    gint64 zeros = 0;
    for (gint64 k = 0; k < w->count; k++) {
      gboolean nz = weir_tensor_get(w, k) != 0;
      ((guint8 *)m->data)[k] = nz;
      zeros += !nz;
    }
    if (zeros > 0)
      g_hash_table_insert(masks, g_strdup(params[i]), g_steal_pointer(&m));
  }
  return masks;
}

/* P = mask ? P : 0 after the update of P: a constant mask container and
 * one Pointwise node in state b->s. */
static void build_mask_step(Builder *b, const char *p, const WeirTensor *mask) {
  g_autofree char *base = g_strdup_printf("%s_mask", p);
  g_autofree char *name = weir_graph_fresh_name(b->g, base);
  const WeirContainer *pc = weir_graph_container(b->g, p);
  WeirContainer *c =
      weir_graph_add_container(b->g, name, WEIR_DTYPE_U8, pc->shape->len,
                               (WeirExpr *const *)pc->shape->pdata, TRUE, NULL);
  g_assert(c);
  g_autoptr(GBytes) bytes = g_bytes_new(mask->data, weir_tensor_nbytes(mask));
  weir_container_set_initial(c, bytes);
  const char *ins[] = {p, c->name};
  pointwise(b, NULL, p, p, "y = b != 0 ? a : 0", ins, 2);
}

/* ------------------------------------------------ learning-rate schedule */

/* The tasklet code computing the learning rate from s = the step counter
 * (docs/training.md, "Learning-rate schedules"). (transfer full) */
static char *lr_schedule_code(const WeirTrainOptions *o) {
  GString *c = g_string_new("t = f64(s)\n");
  gint64 n = o->warmup_steps;
  /* u: the schedule's own step, after the warm-up */
  if (o->lr_schedule != WEIR_LR_CONSTANT) {
    if (n > 0)
      g_string_append_printf(c, "u = max(t - %" G_GINT64_FORMAT ", 0.0)\n", n);
    else
      g_string_append(c, "u = t\n");
  }
  switch (o->lr_schedule) {
  case WEIR_LR_CONSTANT:
    g_string_append_printf(c, "b = %.17g\n", o->lr);
    break;
  case WEIR_LR_STEP:
    g_string_append_printf(
        c, "b = %.17g * pow(%.17g, floor(u / %" G_GINT64_FORMAT "))\n", o->lr,
        o->lr_gamma, o->lr_step_size);
    break;
  case WEIR_LR_COSINE:
    g_string_append_printf(
        c,
        "b = %.17g + (%.17g - %.17g) * (1 + cos(3.141592653589793 * u / "
        "%" G_GINT64_FORMAT ")) / 2\n",
        o->lr_min, o->lr, o->lr_min, o->total_steps - n);
    break;
  }
  if (n > 0) {
    double f = o->warmup_start_factor > 0 ? o->warmup_start_factor : 1.0 / n;
    g_string_append_printf(c,
                           "y = t < %" G_GINT64_FORMAT
                           " ? %.17g * (%.17g + %.17g * t / %" G_GINT64_FORMAT
                           ") : b",
                           n, o->lr, f, 1 - f, n);
  } else {
    g_string_append(c, "y = b");
  }
  return g_string_free(c, FALSE);
}

static gboolean lr_schedule_valid(const WeirTrainOptions *o, GError **error) {
  const char *bad = NULL;
  if (o->warmup_steps < 0)
    bad = "the warm-up steps are negative";
  else if (o->warmup_steps > 0 &&
           !(o->warmup_start_factor >= 0 && o->warmup_start_factor <= 1))
    bad = "the warm-up start factor is outside [0, 1]";
  else if (o->lr_schedule == WEIR_LR_STEP && o->lr_step_size <= 0)
    bad = "the step schedule needs a step size > 0";
  else if (o->lr_schedule == WEIR_LR_COSINE &&
           o->total_steps - MAX(o->warmup_steps, 0) <= 0)
    bad = "the cosine schedule needs total steps > the warm-up steps";
  else if (o->clip_grad_norm < 0 || !isfinite(o->clip_grad_norm))
    bad = "the gradient clipping norm is negative or not finite";
  else if (o->accumulate < 0)
    bad = "the accumulation count is negative";
  if (bad)
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "training options: %s",
                bad);
  return bad == NULL;
}

/* A scalar of dtype `dtype` holding the step's learning rate, computed in
 * the current state from the step counter (one tasklet per dtype; cached in
 * names[dtype]).  NULL for a constant rate without warm-up (a literal). */
static const char *lr_value(Builder *b, const WeirTrainOptions *o,
                            WeirDType dtype, const char **names,
                            GError **error) {
  if (o->lr_schedule == WEIR_LR_CONSTANT && o->warmup_steps <= 0)
    return NULL;
  if (names[dtype])
    return names[dtype];
  g_autofree char *base = g_strdup_printf("lr_%s", weir_dtype_name(dtype));
  const char *lr = transient(b, base, dtype, 0, NULL);
  g_autofree char *code = lr_schedule_code(o);
  const char *ic[] = {"s"}, *id[] = {"step"}, *is[] = {"0"};
  const char *oc[] = {"y"}, *od[] = {lr}, *os[] = {""};
  g_autofree char *label =
      g_strdup_printf("lr_schedule_%s", weir_dtype_name(dtype));
  if (!tasklet(b, label, 1, ic, id, is, 1, oc, od, os, code, error))
    return NULL;
  /* the tasklet's output access node is what the updates read */
  WeirNode *w = NULL;
  for (guint i = 0; i < b->s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(b->s->nodes, i);
    if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, lr) == 0)
      w = n;
  }
  g_hash_table_replace(b->access, g_strdup(lr), w);
  names[dtype] = lr;
  return lr;
}

/* --------------------------------------------------- gradient clipping */

/* Every gradient of params (in grads, replaced by the clipped ones) times
 * min(1, max_norm / (||g|| + 1e-6)), ||g|| the 2-norm of all of them
 * (torch.nn.utils.clip_grad_norm_). */
static void clip_gradients(Builder *b, double max_norm, char **params,
                           GHashTable *grads) {
  g_autoptr(GPtrArray) parts = g_ptr_array_new();
  WeirDType dtype = WEIR_DTYPE_F32;
  for (guint i = 0; params[i]; i++) {
    const char *gr = g_hash_table_lookup(grads, params[i]);
    const WeirContainer *gc = weir_graph_container(b->g, gr);
    dtype = gc->dtype;
    g_autofree char *base = g_strdup_printf("%s_sqnorm", params[i]);
    const char *sq = transient(b, base, gc->dtype, 0, NULL);
    guint r = gc->shape->len;
    g_autofree gint64 *axes = g_new0(gint64, r ? r : 1);
    for (guint d = 0; d < r; d++)
      axes[d] = d;
    WeirNode *n = lib(b, "ReduceSumSquare", sq, &gr, 1, &sq, 1);
    weir_node_set_attr_ints(n, "axes", axes, r);
    weir_node_set_attr_int(n, "keepdims", 0);
    g_ptr_array_add(parts, (gpointer)sq);
  }
  const char *total = transient(b, "grad_sqnorm", dtype, 0, NULL);
  lib(b, "Sum", total, (const char *const *)parts->pdata, parts->len, &total,
      1);
  g_autofree char *code =
      g_strdup_printf("y = min(%.17g / (sqrt(a) + 1e-6), 1.0)", max_norm);
  const char *coef = pointwise(b, "clip_coef", total, NULL, code, &total, 1);
  for (guint i = 0; params[i]; i++) {
    const char *gr = g_hash_table_lookup(grads, params[i]);
    g_autofree char *base = g_strdup_printf("%s_clipped", gr);
    const char *ins[] = {gr, coef};
    const char *cl = pointwise(b, base, gr, NULL, "y = a * b", ins, 2);
    g_hash_table_replace(grads, g_strdup(params[i]), g_strdup(cl));
  }
}

/* The clipping coefficient min(1, max_norm / (||g|| + 1e-6)) of the
 * gradients of params as a scalar (its name), the squared norm one SumAll
 * over all of them; the optimizer multiplies each gradient by it
 * (OptimizerUpdate's scale input) instead of a clipped copy per gradient. */
static const char *clip_scale(Builder *b, double max_norm, char **params,
                              GHashTable *grads) {
  g_autoptr(GPtrArray) parts = g_ptr_array_new();
  for (guint i = 0; params[i]; i++)
    g_ptr_array_add(parts, g_hash_table_lookup(grads, params[i]));
  const WeirContainer *gc = weir_graph_container(b->g, parts->pdata[0]);
  const char *total = transient(b, "grad_sqnorm", gc->dtype, 0, NULL);
  WeirNode *n = lib(b, "SumAll", total, (const char *const *)parts->pdata,
                    parts->len, &total, 1);
  weir_node_set_attr_int(n, "square", 1);
  g_autofree char *code =
      g_strdup_printf("y = min(%.17g / (sqrt(a) + 1e-6), 1.0)", max_norm);
  return pointwise(b, "clip_coef", total, NULL, code, &total, 1);
}

/* ---------------------------------------------------------- data parallel */

#define BUCKET_DEFAULT_BYTES ((gint64)25 << 20)

/* The buckets built so far: the ids of their Allreduce (blocking) or
 * AllreduceStart nodes, and, overlapped, what their waits will read and
 * write. */
typedef struct {
  GArray *starts;   /* guint node ids */
  GPtrArray *waits; /* Pending*, overlapped only */
} Buckets;

typedef struct {
  char *label;         /* allreduce_bucket<i> */
  const char *pair[2]; /* buffer, request (the graph's names) */
  GPtrArray *avg;      /* the outputs' names (borrowed from the graph) */
} Pending;

static void pending_free(gpointer p) {
  Pending *w = p;
  g_free(w->label);
  g_ptr_array_unref(w->avg);
  g_free(w);
}

/* One bucket over names[0..n), averaged into fresh transients <name>_avg,
 * which replace the originals in *out: blocking, one Allreduce (mean)
 * node; overlapped, an AllreduceStart into the transient buffer
 * <label>_buf and request <label>_req, whose AllreduceWait (unpacking them
 * into the averages) add_waits adds later. */
static void allreduce_bucket(Builder *b, gboolean overlap, Buckets *bk,
                             guint index, const char *const *names, guint n,
                             const char **out) {
  g_autofree const char **avg = g_new0(const char *, n + 1);
  for (guint i = 0; i < n; i++) {
    g_autofree char *base = g_strdup_printf("%s_avg", names[i]);
    avg[i] = transient_like(b, base, names[i]);
  }
  g_autofree char *label = g_strdup_printf("allreduce_bucket%u", index);
  if (!overlap) {
    WeirNode *node = lib(b, "Allreduce", label, names, n, avg, n);
    weir_node_set_attr_string(node, "reduce", "mean");
    g_array_append_val(bk->starts, node->id);
  } else {
    g_autoptr(WeirExpr) total = weir_expr_const(0);
    for (guint i = 0; i < n; i++) {
      g_autoptr(WeirExpr) v =
          weir_container_volume(weir_graph_container(b->g, names[i]));
      WeirExpr *sum = weir_expr_add(total, v);
      weir_expr_unref(total);
      total = sum;
    }
    g_autoptr(WeirExpr) one = weir_expr_const(1);
    g_autofree char *bbase = g_strdup_printf("%s_buf", label);
    g_autofree char *rbase = g_strdup_printf("%s_req", label);
    const WeirContainer *c0 = weir_graph_container(b->g, names[0]);
    Pending *w = g_new0(Pending, 1);
    w->label = g_strdup(label);
    w->pair[0] = transient(b, bbase, c0->dtype, 1, &total);
    w->pair[1] = transient(b, rbase, WEIR_DTYPE_I64, 1, &one);
    w->avg = g_ptr_array_new();
    for (guint i = 0; i < n; i++)
      g_ptr_array_add(w->avg, (gpointer)avg[i]);
    g_autofree char *slabel = g_strdup_printf("%s_start", label);
    WeirNode *st = lib(b, "AllreduceStart", slabel, names, n, w->pair, 2);
    g_array_append_val(bk->starts, st->id);
    g_ptr_array_add(bk->waits, w);
  }
  for (guint i = 0; i < n; i++)
    out[i] = avg[i];
}

/* The nodes reached from id (forward: successors, else predecessors)
 * through any memlet, id excluded unless on a cycle: seen[] by node id. */
static void reach(const WeirState *s, guint id, gboolean forward,
                  gboolean *seen) {
  g_autoptr(GArray) todo = g_array_new(FALSE, FALSE, sizeof(guint));
  g_array_append_val(todo, id);
  while (todo->len) {
    guint x = g_array_index(todo, guint, todo->len - 1);
    g_array_set_size(todo, todo->len - 1);
    g_autoptr(GPtrArray) es =
        forward ? weir_state_out_edges(s, x) : weir_state_in_edges(s, x);
    for (guint i = 0; i < es->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(es, i);
      guint y = forward ? m->dst : m->src;
      if (!seen[y]) {
        seen[y] = TRUE;
        g_array_append_val(todo, y);
      }
    }
  }
}

/* The computing nodes next to x (forward: after it, else before it),
 * looking through access nodes (and copies between them). */
static void neighbours(const WeirState *s, guint x, gboolean forward,
                       GArray *out) {
  g_autoptr(GArray) todo = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_array_append_val(todo, x);
  while (todo->len) {
    guint y = g_array_index(todo, guint, todo->len - 1);
    g_array_set_size(todo, todo->len - 1);
    g_autoptr(GPtrArray) es =
        forward ? weir_state_out_edges(s, y) : weir_state_in_edges(s, y);
    for (guint i = 0; i < es->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(es, i);
      guint z = forward ? m->dst : m->src;
      if (!g_hash_table_add(seen, GUINT_TO_POINTER(z)))
        continue;
      if (weir_state_node(s, z)->kind == WEIR_NODE_ACCESS)
        g_array_append_val(todo, z);
      else
        g_array_append_val(out, z);
    }
  }
}

/* Orders the starts of the overlapped buckets with ordering edges (empty
 * memlets), so that any schedule of the state, before or after lowering,
 * starts each bucket as soon as its gradients are done: each
 * AllreduceStart precedes the nodes of the forward and backward passes
 * (ids up to `last`) that it does not depend on (an edge to each first one
 * of them: their predecessors are all the start's ancestors). */
static void order_starts(Builder *b, const Buckets *bk, guint last) {
  WeirState *s = b->s;
  guint top = b->g->next_id;
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, NULL);
  g_assert(sc);
  g_autofree gboolean *anc = g_new(gboolean, top);
  for (guint k = 0; k < bk->starts->len; k++) {
    guint st = g_array_index(bk->starts, guint, k);
    g_autoptr(GArray) firsts = g_array_new(FALSE, FALSE, sizeof(guint));
    {
      g_autoptr(WeirEdgeIndex) ix = weir_edge_index_begin(s);
      memset(anc, 0, top * sizeof *anc);
      reach(s, st, FALSE, anc); /* edges added for earlier buckets included */
      for (guint i = 0; i < s->nodes->len; i++) {
        const WeirNode *x = g_ptr_array_index(s->nodes, i);
        if (x->id > last || anc[x->id] || x->kind == WEIR_NODE_ACCESS ||
            x->kind == WEIR_NODE_MAP_EXIT || weir_scopes_parent(sc, x->id))
          continue;
        g_autoptr(GArray) before = g_array_new(FALSE, FALSE, sizeof(guint));
        neighbours(s, x->id, FALSE, before);
        gboolean first = TRUE;
        for (guint j = 0; j < before->len && first; j++)
          first = anc[g_array_index(before, guint, j)];
        if (first)
          g_array_append_val(firsts, x->id);
      }
    }
    for (guint i = 0; i < firsts->len; i++)
      weir_state_add_memlet(b->g, s, st, NULL, g_array_index(firsts, guint, i),
                            NULL, NULL, NULL, NULL);
  }
}

/* Progress of the buckets in flight: after each library node of the
 * forward and backward passes (ids up to `last`) that runs after some
 * starts, an AllreduceTest on those starts' requests (in place), before
 * the node's successors.  Open MPI progresses a non-blocking collective
 * only inside MPI calls: without these, the whole reduction would happen
 * in the wait (docs/distributed.md, "Progress").  Built in the schedule's
 * order, so that the tests of one request, chained by its container,
 * follow that order. */
static void add_progress(Builder *b, const Buckets *bk, guint last) {
  WeirState *s = b->s;
  guint top = b->g->next_id, ns = bk->starts->len;
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, NULL);
  g_assert(sc);
  g_autofree gboolean *desc = g_new0(gboolean, (gsize)top * ns);
  {
    g_autoptr(WeirEdgeIndex) ix = weir_edge_index_begin(s);
    for (guint k = 0; k < ns; k++)
      reach(s, g_array_index(bk->starts, guint, k), TRUE,
            desc + (gsize)k * top);
  }
  g_autoptr(GArray) order = g_array_copy(sc->order);
  guint count = 0;
  for (guint i = 0; i < order->len; i++) {
    guint id = g_array_index(order, guint, i);
    const WeirNode *x = weir_state_node(s, id);
    if (id > last || x->kind != WEIR_NODE_LIBRARY || weir_scopes_parent(sc, id))
      continue;
    g_autoptr(GPtrArray) reqs = g_ptr_array_new();
    for (guint k = 0; k < ns; k++)
      if (desc[(gsize)k * top + id])
        g_ptr_array_add(reqs,
                        (gpointer)((Pending *)bk->waits->pdata[k])->pair[1]);
    if (!reqs->len)
      continue;
    g_autoptr(GArray) after = g_array_new(FALSE, FALSE, sizeof(guint));
    neighbours(s, id, TRUE, after);
    g_autofree char *label = g_strdup_printf("allreduce_progress%u", count++);
    WeirNode *t =
        lib(b, "AllreduceTest", label, (const char *const *)reqs->pdata,
            reqs->len, (const char *const *)reqs->pdata, reqs->len);
    weir_state_add_memlet(b->g, s, id, NULL, t->id, NULL, NULL, NULL, NULL);
    for (guint j = 0; j < after->len; j++)
      if (g_array_index(after, guint, j) <= last)
        weir_state_add_memlet(b->g, s, t->id, NULL,
                              g_array_index(after, guint, j), NULL, NULL, NULL,
                              NULL);
  }
}

/* The AllreduceWait of each overlapped bucket, unpacking it into its
 * averages, ordered after the backward pass: the last nodes of the forward
 * and backward passes (the ones no other such node follows) and every
 * start precede the first wait, and each wait the next. */
static void add_waits(Builder *b, const Buckets *bk, guint last) {
  WeirState *s = b->s;
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, NULL);
  g_assert(sc);
  g_autoptr(GArray) waits = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint k = 0; k < bk->waits->len; k++) {
    const Pending *w = bk->waits->pdata[k];
    g_autofree char *label = g_strdup_printf("%s_wait", w->label);
    WeirNode *wt = lib(b, "AllreduceWait", label, w->pair, 2,
                       (const char *const *)w->avg->pdata, w->avg->len);
    weir_node_set_attr_string(wt, "reduce", "mean");
    g_array_append_val(waits, wt->id);
  }
  if (!waits->len)
    return;
  guint w0 = g_array_index(waits, guint, 0);
  g_autoptr(GArray) sinks = g_array_new(FALSE, FALSE, sizeof(guint));
  {
    g_autoptr(WeirEdgeIndex) ix = weir_edge_index_begin(s);
    for (guint i = 0; i < s->nodes->len; i++) {
      const WeirNode *x = g_ptr_array_index(s->nodes, i);
      if (x->id > last || x->kind == WEIR_NODE_ACCESS ||
          x->kind == WEIR_NODE_MAP_ENTRY || weir_scopes_parent(sc, x->id))
        continue;
      g_autoptr(GArray) after = g_array_new(FALSE, FALSE, sizeof(guint));
      neighbours(s, x->id, TRUE, after);
      gboolean sink = TRUE;
      for (guint j = 0; j < after->len && sink; j++)
        sink = g_array_index(after, guint, j) > last;
      if (sink)
        g_array_append_val(sinks, x->id);
    }
  }
  for (guint i = 0; i < sinks->len; i++)
    weir_state_add_memlet(b->g, s, g_array_index(sinks, guint, i), NULL, w0,
                          NULL, NULL, NULL, NULL);
  /* every bucket is in flight before the first wait */
  for (guint k = 0; k < bk->starts->len; k++)
    weir_state_add_memlet(b->g, s, g_array_index(bk->starts, guint, k), NULL,
                          w0, NULL, NULL, NULL, NULL);
  for (guint k = 1; k < waits->len; k++)
    weir_state_add_memlet(b->g, s, g_array_index(waits, guint, k - 1), NULL,
                          g_array_index(waits, guint, k), NULL, NULL, NULL,
                          NULL);
}

/* Averages the gradients of params (in grads, replaced by the averages)
 * and *loss over the ranks: buckets of at most bucket_bytes, filled from
 * the last parameter to the first (the order in which the backward pass
 * completes them), one dtype each, at most 63 tensors; the loss joins the last
 * bucket when its dtype matches. */
static void add_data_parallel(Builder *b, const WeirTrainOptions *o,
                              char **params, GHashTable *grads,
                              const char **loss) {
  gint64 cap = o->bucket_bytes > 0 ? o->bucket_bytes : BUCKET_DEFAULT_BYTES;
  gboolean overlap = !o->no_overlap;
  guint last = b->g->next_id - 1; /* the forward and backward passes */
  Buckets bk = {g_array_new(FALSE, FALSE, sizeof(guint)),
                g_ptr_array_new_with_free_func(pending_free)};
  guint np = g_strv_length(params);
  g_autoptr(GPtrArray) bucket = g_ptr_array_new(); /* gradient names */
  g_autoptr(GPtrArray) owners = g_ptr_array_new(); /* parameter names */
  gint64 bytes = 0;
  guint index = 0;
  WeirDType dtype = WEIR_DTYPE_COUNT;
  const guint max_tensors = 63;
  for (guint j = np; j-- > 0;) {
    const char *gr = g_hash_table_lookup(grads, params[j]);
    if (!gr)
      continue; /* reported by the caller's check */
    const WeirContainer *gc = weir_graph_container(b->g, gr);
    g_autoptr(WeirExpr) be = weir_container_bytes(gc);
    gint64 size;
    if (!weir_expr_is_const(be, &size))
      size = cap; /* symbolic: a bucket of its own */
    if (bucket->len > 0 && (bytes + size > cap || gc->dtype != dtype ||
                            bucket->len >= max_tensors)) {
      g_autofree const char **avg = g_new0(const char *, bucket->len);
      allreduce_bucket(b, overlap, &bk, index++,
                       (const char *const *)bucket->pdata, bucket->len, avg);
      for (guint i = 0; i < bucket->len; i++)
        g_hash_table_replace(grads, g_strdup(owners->pdata[i]),
                             g_strdup(avg[i]));
      g_ptr_array_set_size(bucket, 0);
      g_ptr_array_set_size(owners, 0);
      bytes = 0;
    }
    g_ptr_array_add(bucket, (gpointer)gr);
    g_ptr_array_add(owners, params[j]);
    bytes += size;
    dtype = gc->dtype;
  }
  /* the loss (a scalar) with the last bucket, or alone */
  const WeirContainer *lc = weir_graph_container(b->g, *loss);
  gboolean with_loss = bucket->len > 0 && lc->dtype == dtype;
  if (with_loss)
    g_ptr_array_add(bucket, (gpointer)*loss);
  if (bucket->len > 0) {
    g_autofree const char **avg = g_new0(const char *, bucket->len);
    allreduce_bucket(b, overlap, &bk, index++,
                     (const char *const *)bucket->pdata, bucket->len, avg);
    for (guint i = 0; i < owners->len; i++)
      g_hash_table_replace(grads, g_strdup(owners->pdata[i]), g_strdup(avg[i]));
    if (with_loss)
      *loss = avg[owners->len];
  }
  if (!with_loss) {
    const char *avg;
    allreduce_bucket(b, overlap, &bk, index++, loss, 1, &avg);
    *loss = avg;
  }
  if (overlap) {
    order_starts(b, &bk, last);
    add_progress(b, &bk, last);
    add_waits(b, &bk, last);
  }
  g_array_unref(bk.starts);
  g_ptr_array_unref(bk.waits);
}

WeirGraph *weir_train_graph(const WeirGraph *forward,
                            const WeirTrainOptions *options, GError **error) {
  WeirTrainOptions defaults;
  if (!options) {
    weir_train_options_init(&defaults);
    options = &defaults;
  }
  if (!lr_schedule_valid(options, error))
    return NULL;
  /* micro-batches per update */
  gint64 A = options->accumulate > 1 ? options->accumulate : 1;
  g_autoptr(GPtrArray) inputs = g_ptr_array_new();
  g_autoptr(GPtrArray) outputs = g_ptr_array_new();
  WeirState *fs = forward_parts(forward, inputs, outputs, error);
  if (!fs)
    return NULL;
  const char *out_name = options->output;
  if (!out_name) {
    if (outputs->len != 1) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "program '%s' has %u outputs: name the one the loss reads",
                  forward->name, outputs->len);
      return NULL;
    }
    out_name = g_ptr_array_index(outputs, 0);
  } else {
    gboolean found = FALSE;
    for (guint i = 0; i < outputs->len; i++)
      found = found || g_strcmp0(outputs->pdata[i], out_name) == 0;
    if (!found) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "program '%s' has no output '%s'", forward->name, out_name);
      return NULL;
    }
  }
  const char *target_name = options->target ? options->target : "target";
  g_auto(GStrv) params = weir_train_select_parameters(forward, options, error);
  if (!params)
    return NULL;
  if (!params[0]) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "program '%s': output '%s' depends on no trainable parameter",
                forward->name, out_name);
    return NULL;
  }

  g_autoptr(GHashTable) masks = pruning_masks(forward, params, options, error);
  if (!masks)
    return NULL;

  g_autoptr(WeirGraph) g = weir_graph_copy(forward);
  g_free(g->name);
  g->name = g_strdup_printf("%s_train", forward->name);
  WeirState *s = g_ptr_array_index(g->states, 0);
  g_free(s->label);
  s->label = g_strdup("step");
  for (guint i = 0; params[i]; i++)
    make_argument(weir_graph_container(g, params[i]));
  if (weir_graph_container(g, target_name) ||
      weir_graph_has_symbol(g, target_name)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "program '%s': the target name '%s' is taken", forward->name,
                target_name);
    return NULL;
  }
  static const char *const reserved[] = {"losses", "step", "skipped"};
  for (guint i = 0; i < G_N_ELEMENTS(reserved); i++)
    if (weir_graph_container(g, reserved[i])) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "program '%s': container name '%s' is reserved for the "
                  "training ABI",
                  forward->name, reserved[i]);
      return NULL;
    }

  g_autoptr(WeirExpr) K = NULL;
  if (options->steps > 0) {
    K = weir_expr_const(options->steps);
  } else {
    if (weir_graph_container(g, "K")) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "program '%s': symbol name 'K' is taken by a container",
                  forward->name);
      return NULL;
    }
    weir_graph_add_symbol(g, "K");
    K = weir_expr_symbol("K");
  }
  g_autofree char *k = fresh_symbol(g, "k");
  weir_graph_add_symbol(g, k);
  /* with accumulation: micro-batch j of step k is batch k * A + j of the
   * buffers, which hold K * A batches */
  g_autofree char *jm = NULL;
  g_autofree char *micro = NULL; /* the buffer index */
  g_autoptr(WeirExpr) KB = NULL;
  if (A > 1) {
    jm = fresh_symbol(g, "micro_batch");
    weir_graph_add_symbol(g, jm);
    micro = g_strdup_printf("%s * %" G_GINT64_FORMAT " + %s", k, A, jm);
    g_autoptr(WeirExpr) ae = weir_expr_const(A);
    KB = weir_expr_mul(K, ae);
  } else {
    micro = g_strdup(k);
    KB = weir_expr_ref(K);
  }

  /* the step counters, read by the Dropout masks: made before the
   * lowering when there is a Dropout node, else with the other ABI
   * containers (so that programs without one keep their node ids) */
  gboolean early_counters = FALSE;
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    early_counters = early_counters || (n->kind == WEIR_NODE_LIBRARY &&
                                        strcmp(n->op, "Dropout") == 0);
  }
  if (early_counters) {
    g_autoptr(WeirExpr) one = weir_expr_const(1);
    if (!weir_graph_add_container(g, "step", WEIR_DTYPE_I64, 1, &one, FALSE,
                                  error) ||
        !weir_graph_add_container(g, "skipped", WEIR_DTYPE_I64, 1, &one, FALSE,
                                  error))
      return NULL;
  }
  g_autoptr(GHashTable) access =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  Builder b = {.g = g, .access = access};
  builder_enter(&b, s);

  /* Batch buffers. */
  for (guint i = 0; i < inputs->len; i++) {
    const char *x = inputs->pdata[i];
    const char *xs = batch_input(g, s, x, KB, error);
    if (!xs)
      return NULL;
    builder_enter(&b, s);
    /* the copy map writes the access node the forward nodes read */
    WeirNode *old = g_hash_table_lookup(b.access, xs);
    if (!slice_copy(&b, x, xs, micro, error))
      return NULL;
    if (old) {
      /* redirect readers of the old (unwritten) access node */
      WeirNode *fresh = g_hash_table_lookup(b.access, xs);
      g_autoptr(GPtrArray) outs = weir_state_out_edges(s, old->id);
      for (guint j = 0; j < outs->len; j++)
        weir_memlet_set_src(s, outs->pdata[j], fresh->id, NULL);
      weir_state_remove_node(s, old->id);
    }
  }
  WeirContainer *oc = weir_graph_container(g, out_name);
  oc->transient = TRUE;
  g_autoptr(GPtrArray) updates =
      g_ptr_array_new_with_free_func(running_update_free);
  if (!lower_training(&b, options, jm ? jm : "0", A, updates, error))
    return NULL;
  for (guint i = 0; i < updates->len; i++) {
    RunningUpdate *u = g_ptr_array_index(updates, i);
    make_argument(weir_graph_container(g, u->target));
  }

  /* Target. */
  {
    guint r;
    g_autofree WeirExpr **tshape = target_shape(options, oc, &r, error);
    if (!tshape)
      return NULL;
    WeirDType dtype = oc->dtype;
    if (is_class_loss(options->loss)) {
      dtype = options->label_dtype;
      if (dtype != WEIR_DTYPE_I64 && dtype != WEIR_DTYPE_I32) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "class labels are i64 or i32, not %s",
                    weir_dtype_name(dtype));
        return NULL;
      }
    }
    g_autofree WeirExpr **shape = g_new0(WeirExpr *, r + 1);
    shape[0] = KB;
    for (guint d = 0; d < r; d++)
      shape[d + 1] = tshape[d];
    if (!weir_graph_add_container(g, target_name, dtype, r + 1, shape, FALSE,
                                  error))
      return NULL;
  }
  const char *t_step;
  {
    const WeirContainer *tc = weir_graph_container(g, target_name);
    t_step = transient(&b, "target_step", tc->dtype, tc->shape->len - 1,
                       (WeirExpr *const *)tc->shape->pdata + 1);
    if (!slice_copy(&b, target_name, t_step, micro, error))
      return NULL;
  }
  const char *loss = build_loss(&b, options, out_name, t_step, error);
  if (!loss)
    return NULL;
  /* the seed: d loss / d loss = 1 (ones for per-element losses) */
  const char *ones = transient_like(&b, "loss_seed", loss);
  {
    WeirNode *n = lib(&b, "Pointwise", ones, &loss, 1, &ones, 1);
    weir_node_set_attr_string(n, "code", "y = 1");
    weir_node_set_attr_int(n, "differentiable", 0);
    weir_node_set_attr_int(n, "flops", 0);
  }

  /* Backward. */
  g_autoptr(GHashTable) seeds = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(seeds, (gpointer)loss, (gpointer)ones);
  g_autoptr(GHashTable) grads =
      weir_autodiff_state(g, s, seeds, (const char *const *)params, error);
  if (!grads)
    return NULL;
  builder_enter(&b, s);
  WeirState *ainit = NULL, *mguard = NULL, *accumulated = NULL;
  if (A > 1) {
    /* acc_P += grad P and loss_acc += loss in the step state; zeroed in
     * accum_init; the mean in the state `accumulated`, which the check,
     * clipping and the update read */
    ainit = weir_graph_add_state(g, "accum_init");
    mguard = weir_graph_add_state(g, "micro_guard");
    accumulated = weir_graph_add_state(g, "accumulated");
    g_autoptr(GPtrArray) accs = g_ptr_array_new();
    for (guint i = 0; params[i]; i++) {
      const char *gr = g_hash_table_lookup(grads, params[i]);
      if (!gr)
        continue; /* reported below */
      g_autofree char *base = g_strdup_printf("%s_acc", gr);
      g_ptr_array_add(accs, (gpointer)transient_like(&b, base, gr));
    }
    const char *lacc = transient_like(&b, "loss_acc", loss);
    g_ptr_array_add(accs, (gpointer)lacc);
    builder_enter(&b, ainit);
    for (guint i = 0; i < accs->len; i++) {
      const char *acc = accs->pdata[i];
      /* reads acc (ignored): a Pointwise takes its shape from its inputs */
      WeirNode *n = lib(&b, "Pointwise", acc, &acc, 1, &acc, 1);
      weir_node_set_attr_string(n, "code", "y = 0");
      weir_node_set_attr_int(n, "differentiable", 0);
    }
    builder_enter(&b, s);
    for (guint i = 0, a = 0; params[i]; i++) {
      const char *gr = g_hash_table_lookup(grads, params[i]);
      if (!gr)
        continue;
      const char *acc = accs->pdata[a++];
      const char *ins[] = {acc, gr};
      pointwise(&b, NULL, acc, acc, "y = a + b", ins, 2);
    }
    {
      const char *ins[] = {lacc, loss};
      pointwise(&b, NULL, lacc, lacc, "y = a + b", ins, 2);
    }
    builder_enter(&b, accumulated);
    g_autofree char *mean = g_strdup_printf("y = a / %" G_GINT64_FORMAT, A);
    for (guint i = 0, a = 0; params[i]; i++) {
      const char *gr = g_hash_table_lookup(grads, params[i]);
      if (!gr)
        continue;
      const char *acc = accs->pdata[a++];
      g_autofree char *base = g_strdup_printf("%s_mean", gr);
      const char *m = pointwise(&b, base, acc, NULL, mean, &acc, 1);
      g_hash_table_replace(grads, g_strdup(params[i]), g_strdup(m));
    }
    loss = pointwise(&b, "loss_mean", lacc, NULL, mean, &lacc, 1);
  }
  if (options->data_parallel)
    add_data_parallel(&b, options, params, grads, &loss);

  /* Finiteness check: loss + sum of every gradient; one SumAll node over
   * all of them unless per-tensor nodes were asked for, or the gradients
   * and the loss differ in dtype (SumAll sums one dtype). */
  const WeirContainer *lc = weir_graph_container(g, loss);
  guint loss_rank = lc->shape->len;
  gboolean fused = !options->per_tensor_update && lc->dtype == oc->dtype;
  for (guint i = 0; params[i]; i++) {
    const char *gr = g_hash_table_lookup(grads, params[i]);
    if (!gr) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "program '%s': parameter '%s' gets no gradient in the "
                  "training program",
                  forward->name, params[i]);
      return NULL;
    }
    fused = fused && weir_graph_container(g, gr)->dtype == lc->dtype;
  }
  g_autoptr(GPtrArray) parts = g_ptr_array_new();
  g_ptr_array_add(
      parts, (gpointer)(loss_rank && !fused
                            ? reduce_all(&b, loss, "ReduceSum", "loss_total")
                            : loss));
  for (guint i = 0; params[i]; i++) {
    const char *gr = g_hash_table_lookup(grads, params[i]);
    if (fused) {
      g_ptr_array_add(parts, (gpointer)gr);
      continue;
    }
    const WeirContainer *gc = weir_graph_container(g, gr);
    g_autofree char *base = g_strdup_printf("%s_gsum", params[i]);
    const char *sum = transient(&b, base, gc->dtype, 0, NULL);
    guint r = gc->shape->len;
    g_autofree gint64 *axes = g_new0(gint64, r ? r : 1);
    for (guint d = 0; d < r; d++)
      axes[d] = d;
    WeirNode *n = lib(&b, "ReduceSum", sum, &gr, 1, &sum, 1);
    weir_node_set_attr_ints(n, "axes", axes, r);
    weir_node_set_attr_int(n, "keepdims", 0);
    g_ptr_array_add(parts, (gpointer)sum);
  }
  const char *check = transient(&b, "check", oc->dtype, 0, NULL);
  lib(&b, fused ? "SumAll" : "Sum", "check", (const char *const *)parts->pdata,
      parts->len, &check, 1);
  const char *clip_coef = NULL;
  if (options->clip_grad_norm > 0 && fused)
    clip_coef = clip_scale(&b, options->clip_grad_norm, params, grads);
  else if (options->clip_grad_norm > 0)
    clip_gradients(&b, options->clip_grad_norm, params, grads);

  /* ABI containers. */
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  g_autofree WeirExpr **lshape = g_new0(WeirExpr *, loss_rank + 1);
  lshape[0] = K;
  for (guint d = 0; d < loss_rank; d++)
    lshape[d + 1] = lc->shape->pdata[d];
  /* step and skipped after losses, as they always were: the positional
   * ABI (weir_kernel_call, exported kernels) keeps its argument order */
  if (early_counters) {
    weir_graph_remove_container(g, "step");
    weir_graph_remove_container(g, "skipped");
  }
  if (!weir_graph_add_container(g, "losses", oc->dtype, loss_rank + 1, lshape,
                                FALSE, error) ||
      !weir_graph_add_container(g, "step", WEIR_DTYPE_I64, 1, &one, FALSE,
                                error) ||
      !weir_graph_add_container(g, "skipped", WEIR_DTYPE_I64, 1, &one, FALSE,
                                error))
    return NULL;
  g_autoptr(GHashTable) state_names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  if (options->optimizer != WEIR_OPTIMIZER_SGD) {
    for (guint i = 0; params[i]; i++) {
      const char *suffixes[] = {"m", "v"};
      guint n_s = options->optimizer == WEIR_OPTIMIZER_ADAM ? 2 : 1;
      for (guint j = 0; j < n_s; j++) {
        g_autofree char *key = g_strdup_printf("%s_%s", params[i], suffixes[j]);
        g_autofree char *name = weir_graph_fresh_name(g, key);
        const WeirContainer *pc = weir_graph_container(g, params[i]);
        if (!weir_graph_add_container(g, name, pc->dtype, pc->shape->len,
                                      (WeirExpr *const *)pc->shape->pdata,
                                      FALSE, error))
          return NULL;
        g_hash_table_insert(state_names, g_steal_pointer(&key),
                            g_steal_pointer(&name));
      }
    }
  }

  /* States and transitions. */
  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *guard = weir_graph_add_state(g, "guard");
  WeirState *update = weir_graph_add_state(g, "update");
  WeirState *count = weir_graph_add_state(g, "count");
  weir_graph_set_start(g, init->id);
  g_autofree char *cond = NULL;
  {
    g_autofree char *ks = weir_expr_to_string(K);
    cond = g_strdup_printf("%s < %s", k, ks);
  }
  g_autofree char *next = g_strdup_printf("%s + 1", k);
  WeirTransition *t0 =
      weir_graph_add_transition(g, init->id, guard->id, NULL, error);
  WeirTransition *t1, *t2;
  if (A > 1) {
    g_autofree char *mcond = g_strdup_printf("%s < %" G_GINT64_FORMAT, jm, A);
    g_autofree char *mdone = g_strdup_printf("%s >= %" G_GINT64_FORMAT, jm, A);
    g_autofree char *jnext = g_strdup_printf("%s + 1", jm);
    t1 = weir_graph_add_transition(g, guard->id, ainit->id, cond, error);
    WeirTransition *ta =
        weir_graph_add_transition(g, ainit->id, mguard->id, NULL, error);
    WeirTransition *tb =
        weir_graph_add_transition(g, mguard->id, s->id, mcond, error);
    WeirTransition *tc =
        weir_graph_add_transition(g, s->id, mguard->id, NULL, error);
    WeirTransition *td =
        weir_graph_add_transition(g, mguard->id, accumulated->id, mdone, error);
    t2 = weir_graph_add_transition(g, accumulated->id, update->id, NULL, error);
    if (!t1 || !ta || !tb || !tc || !td ||
        !weir_transition_add_assignment(ta, jm, "0", error) ||
        !weir_transition_add_assignment(tc, jm, jnext, error))
      return NULL;
  } else {
    t1 = weir_graph_add_transition(g, guard->id, s->id, cond, error);
    t2 = weir_graph_add_transition(g, s->id, update->id, NULL, error);
  }
  WeirTransition *t3 =
      weir_graph_add_transition(g, update->id, count->id, NULL, error);
  WeirTransition *t4 =
      weir_graph_add_transition(g, count->id, guard->id, NULL, error);
  if (!t0 || !t1 || !t2 || !t3 || !t4 ||
      !weir_transition_add_assignment(t0, k, "0", error) ||
      !weir_transition_add_assignment(t4, k, next, error))
    return NULL;

  /* Optimizer. */
  builder_enter(&b, update);
  const char *lr_names[WEIR_DTYPE_COUNT] = {0};
  guint emas_done = 0; /* running statistics updated by OptimizerUpdate */
  if (fused) {
    const char *lr = lr_value(&b, options, lc->dtype, lr_names, error);
    if (!lr && error && *error)
      return NULL;
    emas_done =
        build_fused_update(&b, options, params, grads, check, state_names, lr,
                           clip_coef, A > 1 ? NULL : updates);
  }
  for (guint i = 0; params[i] && !fused; i++) {
    const char *lr =
        lr_value(&b, options, weir_graph_container(g, params[i])->dtype,
                 lr_names, error);
    if (!lr && error && *error)
      return NULL;
    build_update(&b, options, params[i], g_hash_table_lookup(grads, params[i]),
                 check, state_names, lr);
  }
  /* pruned parameters keep their zeros */
  for (guint i = 0; params[i]; i++) {
    const WeirTensor *mask = g_hash_table_lookup(masks, params[i]);
    if (mask)
      build_mask_step(&b, params[i], mask);
  }
  /* running statistics: with accumulation after every micro-batch (as
   * PyTorch's forward passes), kept when the batch statistic is not
   * finite; else in the update, gated by the check (those not already in
   * the OptimizerUpdate node) */
  if (A > 1)
    builder_enter(&b, s);
  for (guint i = emas_done; i < updates->len; i++) {
    RunningUpdate *u = g_ptr_array_index(updates, i);
    g_autofree char *code = g_strdup_printf(
        "y = isfinite(c) ? %.17g * a + %.17g * b : a", u->keep, 1 - u->keep);
    const char *ins[] = {u->target, u->value, A > 1 ? u->value : check};
    pointwise(&b, NULL, u->target, u->target, code, ins, 3);
  }

  /* losses[k], step, skipped. */
  builder_enter(&b, count);
  {
    if (loss_rank > 0) {
      if (!slice_store(&b, loss, "losses", k, error))
        return NULL;
    } else {
      const char *ic[] = {"a"}, *id[] = {loss}, *is[] = {""};
      const char *oc2[] = {"y"}, *od[] = {"losses"}, *os[] = {k};
      if (!tasklet(&b, "record_loss", 1, ic, id, is, 1, oc2, od, os, "y = a",
                   error))
        return NULL;
    }
    const char *ic3[] = {"s", "q", "c"}, *id3[] = {"step", "skipped", check},
               *is3[] = {"0", "0", ""};
    const char *oc3[] = {"s_out", "q_out"}, *od3[] = {"step", "skipped"},
               *os3[] = {"0", "0"};
    if (!tasklet(&b, "count_step", 3, ic3, id3, is3, 2, oc3, od3, os3,
                 "ok = isfinite(c)\n"
                 "s_out = ok ? s + 1 : s\n"
                 "q_out = ok ? q : q + 1",
                 error))
      return NULL;
  }

  /* Attribute defaults of every node added here. */
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *st = g_ptr_array_index(g->states, i);
    for (guint j = 0; j < st->nodes->len; j++) {
      WeirNode *n = g_ptr_array_index(st->nodes, j);
      if (n->kind == WEIR_NODE_LIBRARY && !weir_op_check_attrs(n, error))
        return NULL;
    }
  }
  return g_steal_pointer(&g);
}
