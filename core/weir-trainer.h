/* weir-trainer.h — running compiled training on a data set.
 *
 * A WeirTrainer holds one model being trained:
 *  - the forward program, imported from an ONNX model with its batch
 *    dimension bound to the batch size;
 *  - the training program of weir_train_graph() (weir-train.h) with a
 *    symbolic number K of steps per call, and the evaluation program of
 *    weir_train_eval_graph(), both compiled through the compile cache
 *    (weir-runtime.h) in one weir_kernel_compile_many call;
 *  - the state that persists between calls: every argument of the
 *    training program other than the batch buffer, the targets and the
 *    losses — parameters (initialized from the model's initializers),
 *    running statistics, optimizer state, "step" and "skipped" (zeros).
 *    The evaluation program binds the same tensors, so evaluating never
 *    copies parameters.
 *
 * weir_trainer_fit() runs epochs: each epoch shuffles the training samples
 * with (seed, epoch), cuts them into steps_per_epoch = n / batch full
 * batches (the remainder is left out of that epoch), fills a batch buffer
 * of K batches and makes one call per K steps (the last call of an epoch
 * may run fewer steps, with K bound to what is left).  After each call it
 * reports progress; after each epoch it evaluates the held-out samples
 * (the last partial batch is padded and the padding ignored).
 *
 * Two losses: softmax cross-entropy on the int64 class labels of the data
 * set (held-out accuracy and mean cross-entropy from the logits), and mse
 * on its float targets (n_targets per sample, as many as the output has
 * values per sample; held-out MSE and R², in the targets' original units
 * when the data set was standardized).
 */
#ifndef WEIR_TRAINER_H
#define WEIR_TRAINER_H

#include "weir-dataset.h"
#include "weir-runtime.h"
#include "weir-train.h"

G_BEGIN_DECLS

typedef struct {
  gint64 epoch, epochs;         /* 1-based epoch number, of epochs */
  gint64 step, steps_per_epoch; /* steps done in this epoch */
  gint64 total_steps;           /* steps done since the start */
  double loss;                  /* mean loss of the steps of the last call */
  double samples_per_second;    /* training samples per second of wall time
                                   in this epoch (batch filling + calls) */
  gint64 skipped;               /* steps skipped so far (non-finite) */
  gboolean epoch_done;          /* the end-of-epoch report: */
  double epoch_loss;            /* mean loss over the epoch's steps */
  double val_accuracy;          /* held-out accuracy in [0, 1], or -1 */
  double val_loss;              /* held-out mean cross-entropy (mse: the
                                   held-out MSE), or -1 */
  double epoch_seconds;         /* wall time of the epoch's training */
  double val_r2;                /* mse: held-out R² (mean over the target
                                   columns, as scikit-learn's r2_score);
                                   NAN otherwise */
} WeirTrainProgress;

typedef void (*WeirTrainProgressFunc)(const WeirTrainProgress *p,
                                      gpointer user_data);

typedef struct {
  WeirTrainOptions train; /* loss, optimizer, learning rate, ...; the
                             trainer leaves train.steps 0 (symbolic K) */
  gint64 epochs;          /* default 1 */
  gint64 batch;           /* samples per step (default 32) */
  gint64 steps_per_call;  /* K: steps per call of the program (default 1) */
  guint64 seed;           /* shuffling (default 1) */
  int threads;            /* OpenMP threads of both programs; 0: default */
  WeirCompileOptions compile;
  /* A recipe (weir-recipe.h) applied to the training program before it is
   * compiled; NULL: none. (borrowed) */
  const char *recipe_path;
  WeirTrainProgressFunc progress; /* may be NULL */
  gpointer user_data;
  /* Memory budget in bytes for the training program's buffers with one
   * step per call (weir_graph_check_memory); 0: the physical memory. */
  guint64 max_memory;
  /* Optimization level (weir-pipeline.h) whose pipeline is applied to the
   * training and evaluation programs when no recipe_path is given; 0 (the
   * default of weir_trainer_options_init): none.  `weir train` uses 2. */
  guint opt_level;
  /* Data parallel over the ranks of the MPI job (weir-mpi.h,
   * docs/distributed.md) when the job has more than one process (then
   * train.data_parallel is set): the initial state is broadcast from rank
   * 0, every rank runs `batch` samples per step, disjoint from the other
   * ranks' (the epoch's permutation is the same on every rank; step s of
   * rank r takes the samples s * P + r of it in batches), the gradients
   * are averaged inside the program, and after every epoch a checksum of
   * the parameters is compared over the ranks (an error when they
   * disagree).  Set by weir_trainer_options_init to TRUE; FALSE trains
   * alone even inside an MPI job. */
  gboolean distributed;
} WeirTrainerOptions;

WEIR_API void weir_trainer_options_init(WeirTrainerOptions *o);

typedef struct _WeirTrainer WeirTrainer;

/* Imports model_path (its one real input gets the batch dimension
 * options->batch; the other dimensions must be concrete and hold
 * n_features values per sample), builds and compiles the training and
 * evaluation programs and initializes the state.  Errors name the model
 * and the problem.  (transfer full: weir_trainer_free) */
/**
 * weir_trainer_new: (skip)
 */
WEIR_API WeirTrainer *weir_trainer_new(const char *model_path,
                                       gint64 n_features,
                                       const WeirTrainerOptions *options,
                                       GError **error);
WEIR_API void weir_trainer_free(WeirTrainer *t);
/* The number of ranks t trains on (1 alone; see `distributed`). */
WEIR_API int weir_trainer_ranks(const WeirTrainer *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirTrainer, weir_trainer_free)

/* Trains for options->epochs epochs on train, evaluating val (may be NULL
 * or empty) after each. */
/**
 * weir_trainer_fit:
 * @val: (nullable):
 */
WEIR_API gboolean weir_trainer_fit(WeirTrainer *t, const WeirDataset *train,
                                   const WeirDataset *val, GError **error);

/* Runs the evaluation program over d: *accuracy (fraction of samples whose
 * largest logit is at their label) and *loss (mean softmax cross-entropy),
 * both optional.  Fails for a trainer of an mse model. */
/**
 * weir_trainer_evaluate:
 * @accuracy: (out) (optional):
 * @loss: (out) (optional):
 */
WEIR_API gboolean weir_trainer_evaluate(WeirTrainer *t, const WeirDataset *d,
                                        double *accuracy, double *loss,
                                        GError **error);

/* The logits of the evaluation program for every sample of d, into logits
 * (d->n_samples x weir_trainer_n_classes(t) floats). */
/**
 * weir_trainer_predict: (skip)
 */
WEIR_API gboolean weir_trainer_predict(WeirTrainer *t, const WeirDataset *d,
                                       float *logits, GError **error);
/* The number of classes (the output's values per sample; for mse the
 * number of targets). */
WEIR_API gint64 weir_trainer_n_classes(const WeirTrainer *t);

/* Whether the trainer runs mse on float targets. */
WEIR_API gboolean weir_trainer_is_regression(const WeirTrainer *t);

/* For an mse trainer: *mse (mean squared error over every target of every
 * sample) and *r2 (coefficient of determination 1 - SSE/SST per target
 * column against the mean of d's targets, averaged over the columns), both
 * in original units when d carries target_mean / target_std (predictions
 * are mapped back the same way); both optional.  d must have as many
 * targets as the output has values per sample. */
/**
 * weir_trainer_evaluate_regression:
 * @mse: (out) (optional):
 * @r2: (out) (optional):
 */
WEIR_API gboolean weir_trainer_evaluate_regression(WeirTrainer *t,
                                                   const WeirDataset *d,
                                                   double *mse, double *r2,
                                                   GError **error);

/* Writes the model back as ONNX: the original file with every initializer
 * the training updated (parameters, running statistics) replaced by its
 * current value (weir_onnx_save_with_initializers).  Values of Constant
 * nodes are not written back (the file keeps them). */
WEIR_API gboolean weir_trainer_save_onnx(WeirTrainer *t, const char *path,
                                         GError **error);

/* The current value of a persistent argument of the training program by
 * container name ("fc1_weight", "fc1_weight.m", "step"), or NULL.
 * (borrowed, valid until the next call that trains) */
/**
 * weir_trainer_state:
 * Returns: (transfer none) (nullable):
 */
WEIR_API const WeirTensor *weir_trainer_state(const WeirTrainer *t,
                                              const char *name);

/* The training program as compiled (borrowed). */
WEIR_API const WeirGraph *weir_trainer_program(const WeirTrainer *t);

/* Steps done and steps skipped so far. */
WEIR_API gint64 weir_trainer_steps(const WeirTrainer *t);
WEIR_API gint64 weir_trainer_skipped(const WeirTrainer *t);

G_END_DECLS

#endif
