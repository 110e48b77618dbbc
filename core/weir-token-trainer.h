/* weir-token-trainer.h — next-token training on a token file, with
 * checkpoints.
 *
 * A WeirTokenTrainer trains a language model: an ONNX model with one real
 * input, integer tokens [batch, T] (i32 or i64), and an output of logits
 * [batch, T, vocab].  The data is a token file (.npy of i32 or i64, read
 * flat).  Step s reads `batch` windows one after the other from the data
 * position p: window j has inputs tokens[p + jT .. p + jT + T) and targets
 * tokens[p + jT + 1 .. p + jT + T + 1); the position then moves by batch x
 * T, back to 0 when the next batch would not fit (an epoch).  The loss is
 * cross-entropy over the last axis (options->train: label smoothing,
 * ignore_index, class weights apply; the class axis is forced to -1);
 * the training program is weir_train_graph's with K symbolic, compiled
 * once.  Perplexity is exp(mean loss).
 *
 * Checkpoints hold everything the next step depends on: every persistent
 * argument of the training program (parameters, optimizer state, "step",
 * "skipped"), the data position and the number of steps done.  They are
 * written to PATH.tmp and renamed over PATH (atomic on POSIX file
 * systems), so a run killed at any moment leaves the previous checkpoint
 * or the new one, whole.  A run resumed from a checkpoint computes
 * bit-for-bit what the uninterrupted run computes (same compiled code,
 * same thread count), since calls never straddle a checkpoint step.
 *
 * File format (little-endian): the 8 bytes "WEIRCKPT", a u64 header
 * length, a JSON header {"format": "weir-checkpoint", "version": 1,
 * "steps", "position", "tensors": [{"name", "dtype", "shape", "offset",
 * "nbytes"}]} and the tensors' bytes (offsets from the end of the header).
 */
#ifndef WEIR_TOKEN_TRAINER_H
#define WEIR_TOKEN_TRAINER_H

#include "weir-runtime.h"
#include "weir-train.h"

G_BEGIN_DECLS

typedef struct {
  gint64 steps;             /* steps done since the start of training */
  double loss;              /* mean loss of the steps since the last report */
  double perplexity;        /* exp(loss) */
  gint64 skipped;           /* steps skipped so far (non-finite) */
  gint64 position;          /* data position after the step */
  double tokens_per_second; /* target tokens per second of wall time */
} WeirTokenProgress;

typedef void (*WeirTokenProgressFunc)(const WeirTokenProgress *p,
                                      gpointer user_data);

typedef struct {
  WeirTrainOptions train; /* optimizer and loss options */
  gint64 batch;           /* windows per step (default 8) */
  gint64 context;         /* T, tokens per window (default 32) */
  gint64 steps_per_call;  /* K (default 1) */
  int threads;            /* OpenMP threads; 0: default */
  guint opt_level;        /* pipeline level applied (default 0) */
  WeirCompileOptions compile;
  gint64 report_every;            /* progress every N steps (default 10) */
  WeirTokenProgressFunc progress; /* may be NULL */
  gpointer user_data;
} WeirTokenTrainerOptions;

WEIR_API void weir_token_trainer_options_init(WeirTokenTrainerOptions *o);

typedef struct _WeirTokenTrainer WeirTokenTrainer;

/* Loads the model and the token file, builds and compiles the training
 * program and initializes the state from the model's initializers.
 * Errors name the file and the problem (a token outside [0, vocab), a
 * file shorter than one window, an input that is not [batch, T]
 * integers).  (transfer full: weir_token_trainer_free) */
/**
 * weir_token_trainer_new: (skip)
 */
WEIR_API WeirTokenTrainer *
weir_token_trainer_new(const char *model_path, const char *tokens_path,
                       const WeirTokenTrainerOptions *options, GError **error);
WEIR_API void weir_token_trainer_free(WeirTokenTrainer *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirTokenTrainer, weir_token_trainer_free)

/* Trains until `steps` steps are done in total (a resumed trainer counts
 * the steps of its checkpoint).  With checkpoint != NULL and every > 0, a
 * checkpoint is written after every step that is a multiple of `every`
 * and after the last one. */
WEIR_API gboolean weir_token_trainer_run(WeirTokenTrainer *t, gint64 steps,
                                         const char *checkpoint, gint64 every,
                                         GError **error);

/* Writes / reads a checkpoint (format above).  Loading checks that every
 * tensor of the checkpoint is a persistent argument of this trainer's
 * program with the same dtype and shape, and that none is missing. */
WEIR_API gboolean weir_token_trainer_save_checkpoint(WeirTokenTrainer *t,
                                                     const char *path,
                                                     GError **error);
WEIR_API gboolean weir_token_trainer_load_checkpoint(WeirTokenTrainer *t,
                                                     const char *path,
                                                     GError **error);

/* Writes the model with the trained initializers (as
 * weir_trainer_save_onnx). */
WEIR_API gboolean weir_token_trainer_save_onnx(WeirTokenTrainer *t,
                                               const char *path,
                                               GError **error);

/* Steps done; the data position; the vocabulary size. */
WEIR_API gint64 weir_token_trainer_steps(const WeirTokenTrainer *t);
WEIR_API gint64 weir_token_trainer_position(const WeirTokenTrainer *t);
WEIR_API gint64 weir_token_trainer_vocab(const WeirTokenTrainer *t);
/* A persistent tensor by container name (borrowed), or NULL. */
WEIR_API const WeirTensor *weir_token_trainer_state(const WeirTokenTrainer *t,
                                                    const char *name);

G_END_DECLS

#endif
