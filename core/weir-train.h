/* weir-train.h: training programs.
 *
 * weir_train_graph() turns a forward (inference) program, as imported from
 * ONNX, into one ordinary Weir program that performs K full training
 * steps per call: forward, loss, backward (reverse-mode automatic
 * differentiation), and the optimizer update, with no host-side decision
 * between steps (sync-free).
 *
 * ABI of a training program (the argument containers, by name; the
 * runtime binds arguments by name):
 *   - every trainable parameter keeps its forward name; it is an
 *     argument (transient = FALSE, no initial data), read and updated in
 *     place. A parameter is a floating-point container with initial data
 *     in the forward program that some loss-contributing value depends on
 *     through differentiable inputs and that the selection rule picks: by
 *     default the ONNX initializers (WeirContainer.initializer) except
 *     those whose name starts with '/' (values PyTorch's exporter folded);
 *     for a program that records no initializer, containers of more than
 *     one element (single-element constants are exporters' epsilons and
 *     exponents).  options->params / options->freeze override the rule.
 *     weir_train_select_parameters() lists them in order.
 *   - optimizer state per parameter P: "P_m" (momentum / Adam first
 *     moment), "P_v" (Adam second moment); same shape and dtype as P,
 *     arguments, zero at the start of training.  (Container names are
 *     identifiers, so the separator is '_'; when "P_m" is taken the name
 *     gets a numeric suffix, "P_m_1".)
 *   - "step"    int64 [1]  in/out: completed steps (Adam bias correction).
 *   - "skipped" int64 [1]  in/out: steps skipped because a gradient or the
 *     loss was not finite (parameters and optimizer state unchanged).
 *   - each forward input X becomes "X" with shape [K, ...forward shape]
 *     (a batch buffer of K batches); the target is `target` with shape
 *     [K, ...output shape without the class axis] class labels
 *     (options->label_dtype, i64 by default; cross-entropy and nll) or
 *     [K, ...output shape] float (the other losses).
 *   - "losses" [K], the output's float dtype: the loss of each step (as
 *     reduced; NaN/inf for a skipped step); with reduction "none",
 *     [K, ...per-element loss shape].
 *   - symbol "K" (number of steps per call) unless options->steps > 0
 *     fixes it.
 * Other forward parameters (e.g. BatchNormalization running statistics)
 * are arguments updated in place too, under their forward names.
 * Structure, operators and limits: docs/training.md.
 */
#ifndef WEIR_TRAIN_H
#define WEIR_TRAIN_H

#include "weir-graph.h"

G_BEGIN_DECLS

/* Losses (docs/training.md, "Losses").  Cross-entropy and NLL read class
 * labels (the output's shape without the class axis); the others a float
 * target shaped like the output. */
typedef enum {
  WEIR_LOSS_SOFTMAX_CROSS_ENTROPY, /* "cross-entropy", "softmax-cross-entropy"
                                    */
  WEIR_LOSS_MSE,                   /* "mse" */
  WEIR_LOSS_NLL,             /* "nll": the output holds log-probabilities */
  WEIR_LOSS_BCE_WITH_LOGITS, /* "bce-with-logits" */
  WEIR_LOSS_L1,              /* "l1" */
  WEIR_LOSS_HUBER,           /* "huber" */
} WeirLoss;

typedef enum {
  WEIR_REDUCTION_MEAN, /* "mean" (default) */
  WEIR_REDUCTION_SUM,  /* "sum" */
  WEIR_REDUCTION_NONE, /* "none": per-element losses; the gradient is that of
                          their sum (PyTorch's loss.backward(ones)) */
} WeirReduction;

/* Learning-rate schedules, computed inside the program from the step
 * counter (docs/training.md, "Learning-rate schedules"). */
typedef enum {
  WEIR_LR_CONSTANT, /* "constant" (default) */
  WEIR_LR_STEP,     /* "step": lr * gamma^floor(t / step_size) */
  WEIR_LR_COSINE,   /* "cosine": lr_min + (lr - lr_min)(1 + cos(pi t / T))/2 */
} WeirLrSchedule;

typedef enum {
  WEIR_OPTIMIZER_SGD,
  WEIR_OPTIMIZER_MOMENTUM,
  WEIR_OPTIMIZER_ADAM,
} WeirOptimizer;

typedef struct {
  WeirLoss loss;
  const char *output; /* forward output the loss reads; NULL: the only one */
  const char *target; /* name of the target argument; NULL: "target" */
  WeirOptimizer optimizer;
  double lr;           /* default 0.01 */
  double momentum;     /* default 0.9 */
  double beta1, beta2; /* default 0.9, 0.999 */
  double epsilon;      /* default 1e-8 */
  double weight_decay; /* default 0 (L2 added to the gradient) */
  gint64 steps;        /* K fixed when > 0; else symbol "K" */
  double dropout_seed; /* seed of Dropout masks (training mode) */
  /* Parameter selection (GRegex patterns, searched in the container name
   * and in the ONNX initializer name; borrowed, may be NULL).  params
   * replaces the default rule: the float constants that match are the
   * candidates; freeze removes the matching ones from the candidates. */
  const char *params;
  const char *freeze;
  /* Loss options (cross-entropy and nll unless said otherwise). */
  WeirReduction reduction;
  int class_axis;            /* axis of the classes in the output; negative
                                counts from the end; default 1 */
  gboolean has_ignore_index; /* labels equal to ignore_index count for
                                nothing (neither loss nor mean) */
  gint64 ignore_index;
  double label_smoothing;      /* cross-entropy only, default 0 */
  const double *class_weights; /* borrowed, n_class_weights entries (the
                                  class count), or NULL */
  guint n_class_weights;
  WeirDType label_dtype; /* i64 (default) or i32 */
  double huber_delta;    /* huber, default 1 */
  /* Data-parallel training over the ranks of an MPI job
   * (docs/distributed.md): after the backward pass, the gradients (in
   * reverse parameter order, as the backward pass completes them) and the
   * loss are averaged over the ranks by Allreduce nodes (reduce = mean),
   * one per bucket of at most bucket_bytes (0: 25 MiB; a tensor larger
   * than that is a bucket of its own), before the finiteness check and the
   * optimizer read them.  With one process the averages are the values. */
  gboolean data_parallel;
  gint64 bucket_bytes;
  /* Data parallel: each bucket is reduced by an AllreduceStart
   * (MPI_Iallreduce) placed as soon as its gradients are done and an
   * AllreduceWait after the backward pass, so the communication overlaps
   * the rest of the backward pass; no_overlap: one blocking Allreduce per
   * bucket after the backward pass instead. */
  gboolean no_overlap;
  /* Learning-rate schedule, a function of t = the program's `step`
   * counter (completed updates), so K steps per call stay one call and a
   * resumed run continues the schedule.  With warmup_steps = N > 0 the
   * first N steps use lr * (f + (1 - f) t / N) (f = warmup_start_factor,
   * 0 meaning 1 / N: PyTorch's LinearLR) and the schedule then runs on
   * t - N (PyTorch's SequentialLR).  cosine: T = total_steps - N (required
   * > 0), minimum lr_min; step: lr_step_size (> 0) and lr_gamma. */
  WeirLrSchedule lr_schedule;
  gint64 warmup_steps;
  double warmup_start_factor;
  gint64 total_steps;
  gint64 lr_step_size;
  double lr_gamma; /* default 0.1 */
  double lr_min;
  /* Gradient clipping by global norm (torch.nn.utils.clip_grad_norm_):
   * when > 0, every gradient is multiplied by
   * min(1, clip_grad_norm / (||g||_2 + 1e-6)), the norm taken over all
   * the parameters' gradients together. */
  double clip_grad_norm;
  /* Gradient accumulation: when > 1, each of the K steps runs `accumulate`
   * micro-batches (forward and backward) and one update with the mean of
   * their gradients; the batch buffers and targets then hold K *
   * accumulate micro-batches (step k, micro-batch j reads index
   * k * accumulate + j) and losses[k] is the mean of the micro-batches'
   * losses. */
  gint64 accumulate;
  /* Pruned parameters (GRegex pattern, searched in the container name and
   * the ONNX initializer name; borrowed, may be NULL): every trained
   * parameter that matches and has zeros in its constant data keeps them.
   * Its mask (u8, 1 where the initial value is nonzero) is a constant of
   * the program, and a Pointwise node after the optimizer's update in the
   * update state sets the masked elements back to 0 (docs/training.md,
   * "Fine-tuning a pruned model"). */
  const char *keep_zeros;
  /* The optimizer update and the finiteness check per tensor: one
   * Pointwise node per parameter and state tensor and one ReduceSum per
   * gradient, as before the multi-tensor operators.  By default (FALSE)
   * the update state holds one OptimizerUpdate node per parameter dtype
   * and the check (and the clipping norm) is one SumAll node, which the
   * code generator runs as one parallel region each (docs/training.md,
   * "Optimizers"). */
  gboolean per_tensor_update;
} WeirTrainOptions;

WEIR_API void weir_train_options_init(WeirTrainOptions *o);

WEIR_API gboolean weir_loss_from_name(const char *name, WeirLoss *out);
WEIR_API gboolean weir_reduction_from_name(const char *name,
                                           WeirReduction *out);
WEIR_API gboolean weir_optimizer_from_name(const char *name,
                                           WeirOptimizer *out);
WEIR_API gboolean weir_lr_schedule_from_name(const char *name,
                                             WeirLrSchedule *out);

/* The training program; NULL with an error naming the node and the
 * operator when some node on a path to the loss cannot be differentiated. */
WEIR_API WeirGraph *weir_train_graph(const WeirGraph *forward,
                                     const WeirTrainOptions *options,
                                     GError **error);

/* Names of the trainable parameters of `forward` under options (NULL: the
 * default rule), in container order (a NULL-terminated array to free with
 * g_strfreev); NULL with an error for a bad params/freeze pattern. */
/**
 * weir_train_select_parameters:
 * @options: (nullable):
 * Returns: (transfer full) (array zero-terminated=1):
 */
WEIR_API char **weir_train_select_parameters(const WeirGraph *forward,
                                             const WeirTrainOptions *options,
                                             GError **error);
/* weir_train_select_parameters with the default rule. */
/**
 * weir_train_parameters:
 * Returns: (transfer full) (array zero-terminated=1):
 */
WEIR_API char **weir_train_parameters(const WeirGraph *forward);

/* The forward program with its parameters (chosen as by
 * weir_train_select_parameters with options, which may be NULL) turned into
 * arguments, for evaluating a model while it trains without recompiling. */
WEIR_API WeirGraph *weir_train_eval_graph(const WeirGraph *forward,
                                          const WeirTrainOptions *options,
                                          GError **error);

G_END_DECLS

#endif
