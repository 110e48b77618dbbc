/* weir-ops-update.h — the multi-tensor operators of training programs.
 *
 * A training program (core/train.c) updates every parameter after every
 * step and checks every gradient for non-finite values.  Done per tensor,
 * that is one loop (one parallel region in the compiled code) per
 * parameter and per optimizer state; these two operators do it over all
 * the tensors at once, so the code generator can give each one parallel
 * region with the work split by element ranges across the tensors
 * (core/kernels/multi-tensor.c):
 *
 *   OptimizerUpdate(check, [step], [lr], [scale], P1, G1, [M1, [V1]],
 *                   P2, ..., T1, X1, T2, X2, ...)
 *       -> P1, [M1, [V1]], P2, ..., T1, T2, ...
 *     The optimizer step of every group (P: parameter, G: its gradient,
 *     M, V: its first and second moments), all of one dtype, in place:
 *       g' = G * scale (with `scale_input`), + weight_decay P (if != 0)
 *       sgd       P -= lr g'
 *       momentum  M = momentum M + g';  P -= lr M
 *       adam      M = beta1 M + (1 - beta1) g'
 *                 V = beta2 V + (1 - beta2) g'^2
 *                 P -= lr (M / (1 - beta1^t)) /
 *                      (sqrt(V / (1 - beta2^t)) + epsilon),  t = step + 1
 *     and after the groups one pair (T, X) per entry k of the FLOATS
 *     attribute `ema_keep` (none without it), the moving averages of
 *     batch normalization's running statistics:
 *       T = keep_k T + (1 - keep_k) X
 *     Nothing changes unless `check` (a scalar) is finite.  lr is the
 *     attribute `lr`, or the scalar input when `lr_input` is 1.  The
 *     arithmetic is that of the per-tensor Pointwise nodes it replaces
 *     (docs/training.md, "Optimizers").
 *   SumAll(X1, X2, ...) -> y
 *     The sum of every element of every input (of their squares when the
 *     attribute `square` is 1), a scalar of the inputs' dtype.
 *
 * Shapes, attributes and the input layout are checked by the schemas in
 * ir/ops/update.c; the layout is read with weir_update_layout by the
 * expansion, the native implementation and the training-program builder.
 */
#ifndef WEIR_OPS_UPDATE_H
#define WEIR_OPS_UPDATE_H

#include "weir-graph.h"

G_BEGIN_DECLS

typedef enum {
  WEIR_UPDATE_SGD,
  WEIR_UPDATE_MOMENTUM,
  WEIR_UPDATE_ADAM,
} WeirUpdateKind;

/* Where the inputs of an OptimizerUpdate node are. */
typedef struct {
  WeirUpdateKind kind;
  guint per_group; /* inputs per group: 2 (P, G), 3 (+ M) or 4 (+ M, V) */
  guint outs;      /* outputs per group: 1, 2 or 3 */
  gint step;       /* input index of the step counter, -1 without */
  gint lr;         /* input index of the learning rate, -1 without */
  gint scale;      /* input index of the gradient scale, -1 without */
  guint first;     /* input index of the first group's P */
  guint groups;    /* number of groups */
  guint ema_first; /* input index of the first moving average's T */
  guint emas;      /* number of moving averages (pairs T, X) */
} WeirUpdateLayout;

/* The optimizer named by OptimizerUpdate's attribute (sgd, momentum,
 * adam); FALSE for another name. */
WEIR_API gboolean weir_update_kind_from_name(const char *name,
                                             WeirUpdateKind *out);

/* Reads the layout of OptimizerUpdate node n with n_inputs inputs from its
 * attributes.  FALSE with an error naming the node when the count does not
 * fit the attributes. */
WEIR_API gboolean weir_update_layout(const WeirNode *n, guint n_inputs,
                                     WeirUpdateLayout *out, GError **error);

/* Input index of member `member` (0 P, 1 G, 2 M, 3 V) of group j, and
 * output index of member `member` (0 P, 1 M, 2 V). */
static inline guint weir_update_input(const WeirUpdateLayout *l, guint j,
                                      guint member) {
  return l->first + j * l->per_group + member;
}
static inline guint weir_update_output(const WeirUpdateLayout *l, guint j,
                                       guint member) {
  return j * l->outs + member;
}
/* Input index of member `member` (0 T, 1 X) of moving average e, and the
 * output index of its T. */
static inline guint weir_update_ema_input(const WeirUpdateLayout *l, guint e,
                                          guint member) {
  return l->ema_first + 2 * e + member;
}
static inline guint weir_update_ema_output(const WeirUpdateLayout *l, guint e) {
  return l->groups * l->outs + e;
}
/* The keep factor of moving average e (attribute ema_keep). */
WEIR_API double weir_update_ema_keep(const WeirNode *n, guint e);

G_END_DECLS

#endif /* WEIR_OPS_UPDATE_H */
