/* cli-train.c — training: `weir train` (compiled training on a data set,
 * the trained model written back as ONNX) and `weir train-graph` (the
 * training program itself); docs/training.md. */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* ------------------------------------------------ training program options
 * Shared by `weir train` and `weir train-graph`: the loss, the optimizer
 * and its hyper-parameters, and which constants are trained. */

typedef struct {
  char *loss, *optimizer, *params, *freeze, *keep_zeros;
  double lr, momentum, weight_decay, beta1, beta2, epsilon; /* < 0: default */
  /* loss options (NULL / < 0: default) */
  char *reduction, *class_axis, *ignore_index, *class_weights, *label_dtype;
  double label_smoothing, huber_delta;
  GArray *weights; /* parsed class_weights (double), owned */
  /* schedules, clipping, accumulation (NULL / < 0: default) */
  char *lr_schedule;
  gint64 warmup_steps, total_steps, lr_step_size, accumulate;
  double warmup_start_factor, lr_gamma, lr_min, clip_grad_norm, dropout_seed;
  gboolean per_tensor_update;
} TrainProgram;

#define TRAIN_PROGRAM_INIT                                                     \
  {                                                                            \
    .lr = -1, .momentum = -1, .weight_decay = -1, .beta1 = -1, .beta2 = -1,    \
    .epsilon = -1, .label_smoothing = -1, .huber_delta = -1,                   \
    .warmup_steps = -1, .total_steps = -1, .lr_step_size = -1,                 \
    .accumulate = -1, .warmup_start_factor = -1, .lr_gamma = -1, .lr_min = -1, \
    .clip_grad_norm = -1, .dropout_seed = -1                                   \
  }

static void train_program_clear(TrainProgram *tp) {
  g_clear_pointer(&tp->loss, g_free);
  g_clear_pointer(&tp->optimizer, g_free);
  g_clear_pointer(&tp->params, g_free);
  g_clear_pointer(&tp->freeze, g_free);
  g_clear_pointer(&tp->keep_zeros, g_free);
  g_clear_pointer(&tp->reduction, g_free);
  g_clear_pointer(&tp->class_axis, g_free);
  g_clear_pointer(&tp->ignore_index, g_free);
  g_clear_pointer(&tp->class_weights, g_free);
  g_clear_pointer(&tp->label_dtype, g_free);
  g_clear_pointer(&tp->lr_schedule, g_free);
  g_clear_pointer(&tp->weights, g_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TrainProgram, train_program_clear)

/* The training program options, as entries of a command's table. */
#define TRAIN_PROGRAM_ENTRIES(tp)                                              \
  {"loss",                                                                     \
   0,                                                                          \
   0,                                                                          \
   G_OPTION_ARG_STRING,                                                        \
   &(tp)->loss,                                                                \
   "cross-entropy (alias softmax-cross-entropy) or nll (class labels); "       \
   "mse, l1, huber or bce-with-logits (float targets)",                        \
   "LOSS"},                                                                    \
      {"reduction",                                                            \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING,                                                    \
       &(tp)->reduction,                                                       \
       "mean (default), sum or none",                                          \
       "R"},                                                                   \
      {"class-axis",                                                           \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING,                                                    \
       &(tp)->class_axis,                                                      \
       "Axis of the classes in the output (negative: from the end; "           \
       "default 1)",                                                           \
       "A"},                                                                   \
      {"ignore-index",                                                         \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING,                                                    \
       &(tp)->ignore_index,                                                    \
       "Labels equal to N count for nothing",                                  \
       "N"},                                                                   \
      {"label-smoothing",                                                      \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(tp)->label_smoothing,                                                 \
       "Label smoothing of cross-entropy (default 0)",                         \
       "X"},                                                                   \
      {"class-weights",                                                        \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING,                                                    \
       &(tp)->class_weights,                                                   \
       "Weight of each class, comma-separated",                                \
       "W,W,..."},                                                             \
      {"label-dtype",                                                          \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING,                                                    \
       &(tp)->label_dtype,                                                     \
       "Dtype of the class labels: i64 (default) or i32",                      \
       "T"},                                                                   \
      {"huber-delta",                                                          \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(tp)->huber_delta,                                                     \
       "Delta of the huber loss (default 1)",                                  \
       "X"},                                                                   \
      {"optimizer",                                                            \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING,                                                    \
       &(tp)->optimizer,                                                       \
       "sgd, momentum or adam",                                                \
       "OPT"},                                                                 \
      {"lr",      0,                                                           \
       0,         G_OPTION_ARG_DOUBLE,                                         \
       &(tp)->lr, "Learning rate (default 0.01)",                              \
       "X"},                                                                   \
      {"momentum",                                                             \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(tp)->momentum,                                                        \
       "Momentum (default 0.9)",                                               \
       "X"},                                                                   \
      {"beta1",                                                                \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(tp)->beta1,                                                           \
       "Adam beta1 (default 0.9)",                                             \
       "X"},                                                                   \
      {"beta2",                                                                \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(tp)->beta2,                                                           \
       "Adam beta2 (default 0.999)",                                           \
       "X"},                                                                   \
      {"epsilon",                                                              \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(tp)->epsilon,                                                         \
       "Adam epsilon (default 1e-8)",                                          \
       "X"},                                                                   \
      {"weight-decay",                                                         \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(tp)->weight_decay,                                                    \
       "L2 weight decay added to the gradient (default 0)",                    \
       "X"},                                                                   \
      {"lr-schedule",                                                          \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING,                                                    \
       &(tp)->lr_schedule,                                                     \
       "Learning-rate schedule computed in the program from the step "         \
       "counter: constant (default), step or cosine",                          \
       "S"},                                                                   \
      {"warmup-steps",                                                         \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_INT64,                                                     \
       &(tp)->warmup_steps,                                                    \
       "Linear warm-up over the first N steps (then the schedule)",            \
       "N"},                                                                   \
      {"warmup-start-factor",                                                  \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(tp)->warmup_start_factor,                                             \
       "Factor of the learning rate at the first warm-up step (default "       \
       "1/N)",                                                                 \
       "F"},                                                                   \
      {"total-steps",                                                          \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_INT64,                                                     \
       &(tp)->total_steps,                                                     \
       "Steps of the cosine schedule, warm-up included",                       \
       "N"},                                                                   \
      {"lr-step-size",                                                         \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_INT64,                                                     \
       &(tp)->lr_step_size,                                                    \
       "Step schedule: multiply the rate by --lr-gamma every N steps",         \
       "N"},                                                                   \
      {"lr-gamma",                                                             \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(tp)->lr_gamma,                                                        \
       "Factor of the step schedule (default 0.1)",                            \
       "G"},                                                                   \
      {"lr-min",                                                               \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(tp)->lr_min,                                                          \
       "Final rate of the cosine schedule (default 0)",                        \
       "X"},                                                                   \
      {"clip-grad-norm",                                                       \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(tp)->clip_grad_norm,                                                  \
       "Scale the gradients so that their global 2-norm is at most X",         \
       "X"},                                                                   \
      {"accumulate",                                                           \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_INT64,                                                     \
       &(tp)->accumulate,                                                      \
       "Accumulate the gradients of K micro-batches per update",               \
       "K"},                                                                   \
      {"dropout-seed",                                                         \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_DOUBLE,                                                    \
       &(tp)->dropout_seed,                                                    \
       "Seed of the Dropout masks (default 0)",                                \
       "S"},                                                                   \
      {"params",                                                               \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING,                                                    \
       &(tp)->params,                                                          \
       "Train the float constants whose container or ONNX initializer name "   \
       "matches REGEX (default: the ONNX initializers, docs/training.md)",     \
       "REGEX"},                                                               \
      {"freeze",                                                               \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_STRING,                                                    \
       &(tp)->freeze,                                                          \
       "Do not train the parameters whose name matches REGEX",                 \
       "REGEX"},                                                               \
      {"per-tensor-update",                                                    \
       0,                                                                      \
       0,                                                                      \
       G_OPTION_ARG_NONE,                                                      \
       &(tp)->per_tensor_update,                                               \
       "One optimizer node per tensor and one finiteness sum per gradient "    \
       "(default: OptimizerUpdate and SumAll over all of them)",               \
       NULL},                                                                  \
  {                                                                            \
    "keep-zeros", 0, 0, G_OPTION_ARG_STRING, &(tp)->keep_zeros,                \
        "Pruned parameters: those whose name matches REGEX keep their zeros "  \
        "(default for `weir train`: the ones `weir prune` recorded)",          \
        "REGEX"                                                                \
  }

/* Applies the options above to o (set by weir_train_options_init); FALSE
 * after printing on an unknown loss or optimizer. */
static gboolean train_program_options(const char *cmd, TrainProgram *tp,
                                      WeirTrainOptions *o) {
  if (tp->loss && !weir_loss_from_name(tp->loss, &o->loss)) {
    fprintf(stderr,
            "weir %s: unknown loss '%s' (cross-entropy, nll, mse, l1, huber, "
            "bce-with-logits)\n",
            cmd, tp->loss);
    return FALSE;
  }
  if (tp->reduction &&
      !weir_reduction_from_name(tp->reduction, &o->reduction)) {
    fprintf(stderr, "weir %s: unknown reduction '%s' (mean, sum, none)\n", cmd,
            tp->reduction);
    return FALSE;
  }
  if (tp->class_axis) {
    gint64 a;
    if (!g_ascii_string_to_signed(tp->class_axis, 10, -64, 64, &a, NULL)) {
      fprintf(stderr, "weir %s: --class-axis '%s' is not an axis\n", cmd,
              tp->class_axis);
      return FALSE;
    }
    o->class_axis = (int)a;
  }
  if (tp->ignore_index) {
    if (!g_ascii_string_to_signed(tp->ignore_index, 10, G_MININT64, G_MAXINT64,
                                  &o->ignore_index, NULL)) {
      fprintf(stderr, "weir %s: --ignore-index '%s' is not an integer\n", cmd,
              tp->ignore_index);
      return FALSE;
    }
    o->has_ignore_index = TRUE;
  }
  if (tp->label_smoothing >= 0)
    o->label_smoothing = tp->label_smoothing;
  if (tp->huber_delta >= 0)
    o->huber_delta = tp->huber_delta;
  if (tp->label_dtype &&
      (!weir_dtype_from_name(tp->label_dtype, &o->label_dtype) ||
       (o->label_dtype != WEIR_DTYPE_I64 &&
        o->label_dtype != WEIR_DTYPE_I32))) {
    fprintf(stderr, "weir %s: --label-dtype '%s' is not i64 or i32\n", cmd,
            tp->label_dtype);
    return FALSE;
  }
  if (tp->class_weights) {
    g_auto(GStrv) parts = g_strsplit(tp->class_weights, ",", -1);
    tp->weights = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint i = 0; parts[i]; i++) {
      char *end = NULL;
      double w = g_ascii_strtod(parts[i], &end);
      if (end == parts[i] || *end) {
        fprintf(stderr, "weir %s: --class-weights: '%s' is not a number\n", cmd,
                parts[i]);
        return FALSE;
      }
      g_array_append_val(tp->weights, w);
    }
    o->class_weights = (const double *)tp->weights->data;
    o->n_class_weights = tp->weights->len;
  }
  if (tp->optimizer &&
      !weir_optimizer_from_name(tp->optimizer, &o->optimizer)) {
    fprintf(stderr, "weir %s: unknown optimizer '%s' (sgd, momentum, adam)\n",
            cmd, tp->optimizer);
    return FALSE;
  }
  if (tp->lr >= 0)
    o->lr = tp->lr;
  if (tp->momentum >= 0)
    o->momentum = tp->momentum;
  if (tp->weight_decay >= 0)
    o->weight_decay = tp->weight_decay;
  if (tp->beta1 >= 0)
    o->beta1 = tp->beta1;
  if (tp->beta2 >= 0)
    o->beta2 = tp->beta2;
  if (tp->epsilon >= 0)
    o->epsilon = tp->epsilon;
  if (tp->lr_schedule &&
      !weir_lr_schedule_from_name(tp->lr_schedule, &o->lr_schedule)) {
    fprintf(stderr,
            "weir %s: unknown learning-rate schedule '%s' (constant, step, "
            "cosine)\n",
            cmd, tp->lr_schedule);
    return FALSE;
  }
  if (tp->warmup_steps >= 0)
    o->warmup_steps = tp->warmup_steps;
  if (tp->warmup_start_factor >= 0)
    o->warmup_start_factor = tp->warmup_start_factor;
  if (tp->total_steps >= 0)
    o->total_steps = tp->total_steps;
  if (tp->lr_step_size >= 0)
    o->lr_step_size = tp->lr_step_size;
  if (tp->lr_gamma >= 0)
    o->lr_gamma = tp->lr_gamma;
  if (tp->lr_min >= 0)
    o->lr_min = tp->lr_min;
  if (tp->clip_grad_norm >= 0)
    o->clip_grad_norm = tp->clip_grad_norm;
  if (tp->accumulate >= 0)
    o->accumulate = tp->accumulate;
  if (tp->dropout_seed >= 0)
    o->dropout_seed = tp->dropout_seed;
  o->params = tp->params;
  o->freeze = tp->freeze;
  o->keep_zeros = tp->keep_zeros;
  o->per_tensor_update = tp->per_tensor_update;
  return TRUE;
}

/* "0.5", "1/16" */
static gboolean parse_scale(const char *text, double *out) {
  char *end = NULL;
  double num = g_ascii_strtod(text, &end);
  if (end == text)
    return FALSE;
  if (*end == '/') {
    const char *rest = end + 1;
    double den = g_ascii_strtod(rest, &end);
    if (end == rest || den == 0)
      return FALSE;
    num /= den;
  }
  if (*end != '\0')
    return FALSE;
  *out = num;
  return TRUE;
}

typedef struct {
  gboolean tty;
  gboolean quiet;
  double last_val_accuracy;
  double last_val_mse, last_val_r2; /* mse: the last held-out figures */
  gint64 last_draw; /* monotonic µs of the last progress line */
} TrainPrinter;

static void print_progress(const WeirTrainProgress *p, gpointer user_data) {
  TrainPrinter *pr = user_data;
  if (p->epoch_done) {
    pr->last_val_accuracy = p->val_accuracy;
    pr->last_val_mse = p->val_loss;
    pr->last_val_r2 = p->val_r2;
    if (pr->quiet)
      return;
    if (pr->tty)
      printf("\r\033[K");
    printf("epoch %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
           ": loss %.4f, %.0f samples/s, %.2f s",
           p->epoch, p->epochs, p->epoch_loss, p->samples_per_second,
           p->epoch_seconds);
    if (p->val_accuracy >= 0)
      printf(", held-out accuracy %.2f%% (loss %.4f)", 100 * p->val_accuracy,
             p->val_loss);
    else if (!isnan(p->val_r2))
      printf(", held-out MSE %.4g (R\u00b2 %.4f)", p->val_loss, p->val_r2);
    if (p->skipped)
      printf(", %" G_GINT64_FORMAT " steps skipped", p->skipped);
    printf("\n");
    fflush(stdout);
    return;
  }
  if (!pr->tty || pr->quiet)
    return;
  /* redraw at most ten times a second, and at the end of the epoch */
  gint64 now = g_get_monotonic_time();
  if (now - pr->last_draw < 100000 && p->step < p->steps_per_epoch)
    return;
  pr->last_draw = now;
  int width = 24;
  int done = (int)(width * p->step / MAX(p->steps_per_epoch, 1));
  char bar[32];
  for (int i = 0; i < width; i++)
    bar[i] = i < done ? '#' : '.';
  bar[width] = '\0';
  printf("\r\033[Kepoch %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
         " [%s] step %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
         "  loss %.4f  %.0f samples/s",
         p->epoch, p->epochs, bar, p->step, p->steps_per_epoch, p->loss,
         p->samples_per_second);
  fflush(stdout);
}

/* ---- next-token mode (--tokens) ------------------------------------------ */

typedef struct {
  const char *tokens, *checkpoint, *resume, *output;
  gint64 context, steps, every, batch, k;
  int threads;
  gboolean quiet;
} TokenRun;

static void token_progress(const WeirTokenProgress *p, gpointer user_data) {
  const TokenRun *r = user_data;
  if (r->quiet)
    return;
  printf("step %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
         "  loss %.4f  perplexity %.3f  %.0f tokens/s%s\n",
         p->steps, r->steps, p->loss, p->perplexity, p->tokens_per_second,
         p->skipped ? "  (steps skipped)" : "");
  fflush(stdout);
}

static int train_tokens(const char *model, TokenRun *r,
                        const WeirTokenTrainerOptions *base) {
  WeirTokenTrainerOptions o = *base;
  o.batch = r->batch;
  o.context = r->context;
  o.steps_per_call = r->k;
  o.threads = r->threads;
  o.progress = token_progress;
  o.user_data = r;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTokenTrainer) t =
      weir_token_trainer_new(model, r->tokens, &o, &error);
  if (!t || (r->resume &&
             !weir_token_trainer_load_checkpoint(t, r->resume, &error))) {
    cli_print_error("train", error);
    return 1;
  }
  if (r->resume && !r->quiet)
    printf("resumed from %s at step %" G_GINT64_FORMAT
           " (data position %" G_GINT64_FORMAT ")\n",
           r->resume, weir_token_trainer_steps(t),
           weir_token_trainer_position(t));
  if (!weir_token_trainer_run(t, r->steps, r->checkpoint, r->every, &error) ||
      !weir_token_trainer_save_onnx(t, r->output, &error)) {
    cli_print_error("train", error);
    return 1;
  }
  printf("%s -> %s: %" G_GINT64_FORMAT " steps of next-token training "
         "(vocabulary %" G_GINT64_FORMAT ")\n",
         model, r->output, weir_token_trainer_steps(t),
         weir_token_trainer_vocab(t));
  return 0;
}

int cli_cmd_train(int argc, char **argv) {
  static const char *const usage_text =
      "usage: weir train MODEL.onnx --data FILE -o OUT.onnx [--label COL]\n"
      "                  [--epochs N] [--batch B] [--optimizer "
      "sgd|momentum|adam]\n"
      "                  [--lr LR] [--momentum M] [--beta1 B1] [--beta2 B2]\n"
      "                  [--epsilon E] [--weight-decay WD] [--seed S]\n"
      "                  [--threads T] [--steps-per-call K] "
      "[--val-fraction F]\n"
      "                  [--scale S] [--standardize] [--recipe R.json | "
      "-O0|-O1|-O2|-O3]\n"
      "                  [--loss mse [--target-columns COLS | --targets N |\n"
      "                   --target-file FILE]] [--params REGEX] "
      "[--freeze REGEX]\n"
      "                  [--cc CC] [--cflags FLAGS]\n"
      "                  [--lr-schedule constant|step|cosine] "
      "[--warmup-steps N]\n"
      "                  [--warmup-start-factor F] [--total-steps N] "
      "[--lr-min X]\n"
      "                  [--lr-step-size N] [--lr-gamma G] "
      "[--clip-grad-norm X]\n"
      "                  [--accumulate K] [--dropout-seed S] "
      "[--per-tensor-update]\n"
      "       weir train MODEL.onnx --tokens FILE.npy --context T --steps N\n"
      "                  -o OUT.onnx [--batch B] [--checkpoint FILE --every "
      "N]\n"
      "                  [--resume FILE] [optimizer and loss options]\n";
  g_auto(GStrv) defines = NULL, impls = NULL;
  g_auto(TrainProgram) tp = TRAIN_PROGRAM_INIT;
  g_auto(CliCompile) cc = {0};
  g_autofree char *fit_data = NULL, *fit_label = NULL, *fit_scale = NULL;
  g_autofree char *fit_recipe = NULL, *fit_output = NULL;
  g_autofree char *fit_target_columns = NULL, *fit_target_file = NULL;
  gint64 fit_targets = -1;
  gboolean fit_standardize = FALSE;
  gint64 fit_epochs = 10, fit_batch = 32, fit_k = 1;
  gint64 fit_seed = 1;
  gint fit_threads = 0;
  double fit_val_fraction = 0.2;
  gboolean fit_quiet = FALSE;
  g_autofree char *max_memory = NULL;
  g_autofree char *level_text = NULL;
  g_autofree char *tok_file = NULL, *tok_checkpoint = NULL, *tok_resume = NULL;
  gint64 tok_context = 32, tok_steps = -1, tok_every = 0, tok_report = 10;
  double fit_bucket_mb = 0;
  gboolean fit_no_overlap = FALSE;
  /* --impl is accepted (as before the split) but training chooses the
   * implementations itself. */
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"data", 0, 0, G_OPTION_ARG_FILENAME, &fit_data,
       "Training data: .csv, .csv.gz or .npy (samples x columns)", "FILE"},
      {"label", 0, 0, G_OPTION_ARG_STRING, &fit_label,
       "Label column: header name or index (negative from the end; default: "
       "the last column)",
       "COL"},
      {"epochs", 0, 0, G_OPTION_ARG_INT64, &fit_epochs, "Epochs (default 10)",
       "N"},
      {"tokens", 0, 0, G_OPTION_ARG_FILENAME, &tok_file,
       "Next-token training on a token file (.npy of i32/i64)", "FILE"},
      {"context", 0, 0, G_OPTION_ARG_INT64, &tok_context,
       "--tokens: tokens per window (default 32)", "T"},
      {"steps", 0, 0, G_OPTION_ARG_INT64, &tok_steps,
       "--tokens: train until N steps are done", "N"},
      {"checkpoint", 0, 0, G_OPTION_ARG_FILENAME, &tok_checkpoint,
       "--tokens: write a checkpoint to FILE every --every steps", "FILE"},
      {"every", 0, 0, G_OPTION_ARG_INT64, &tok_every,
       "--tokens: steps between checkpoints", "N"},
      {"resume", 0, 0, G_OPTION_ARG_FILENAME, &tok_resume,
       "--tokens: continue from a checkpoint", "FILE"},
      {"report-every", 0, 0, G_OPTION_ARG_INT64, &tok_report,
       "--tokens: print the loss every N steps (default 10)", "N"},
      {"batch", 0, 0, G_OPTION_ARG_INT64, &fit_batch,
       "Samples per step (default 32)", "B"},
      {"target-columns", 0, 0, G_OPTION_ARG_STRING, &fit_target_columns,
       "mse: the target columns, comma-separated header names or indices "
       "(default: the last column)",
       "COLS"},
      {"targets", 0, 0, G_OPTION_ARG_INT64, &fit_targets,
       "mse: the last N columns are the targets (default 1)", "N"},
      {"target-file", 0, 0, G_OPTION_ARG_FILENAME, &fit_target_file,
       "mse: the targets are the columns of FILE (.csv, .csv.gz, .npy; one row "
       "per sample); every column of --data is a feature",
       "FILE"},
      {"standardize", 0, 0, G_OPTION_ARG_NONE, &fit_standardize,
       "Standardize the features (and mse targets) to mean 0, std 1 with the "
       "training split's statistics",
       NULL},
      {"seed", 0, 0, G_OPTION_ARG_INT64, &fit_seed,
       "Seed of the split and the shuffles (default 1)", "S"},
      {"threads", 0, 0, G_OPTION_ARG_INT, &fit_threads,
       "OpenMP threads (default: OMP_NUM_THREADS or all)", "T"},
      {"steps-per-call", 'k', 0, G_OPTION_ARG_INT64, &fit_k,
       "Steps run by one call of the compiled program (default 1)", "K"},
      {"val-fraction", 0, 0, G_OPTION_ARG_DOUBLE, &fit_val_fraction,
       "Fraction of the samples held out for evaluation (default 0.2)", "F"},
      {"scale", 0, 0, G_OPTION_ARG_STRING, &fit_scale,
       "Multiply every feature by S (a number or a fraction: 1/16)", "S"},
      {"recipe", 'r', 0, G_OPTION_ARG_FILENAME, &fit_recipe,
       "Apply a recipe to the training program before compiling it "
       "(instead of the -O pipeline)",
       "FILE"},
      CLI_OPT_LEVEL_ENTRY(&level_text),
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &fit_output,
       "Write the trained model (ONNX) here", "FILE"},
      {"quiet", 'q', 0, G_OPTION_ARG_NONE, &fit_quiet,
       "Print only the final summary", NULL},
      {"bucket-mb", 0, 0, G_OPTION_ARG_DOUBLE, &fit_bucket_mb,
       "Under mpirun: gradients averaged in buckets of at most MB MiB "
       "(default 25; docs/distributed.md)",
       "MB"},
      {"no-overlap", 0, 0, G_OPTION_ARG_NONE, &fit_no_overlap,
       "Under mpirun: reduce each bucket with a blocking Allreduce after the "
       "backward pass instead of overlapping it (AllreduceStart / "
       "AllreduceWait)",
       NULL},
      CLI_MAX_MEMORY_ENTRY(&max_memory),
      TRAIN_PROGRAM_ENTRIES(&tp),
      CLI_COMPILE_ENTRIES(&impls, &cc),
      {NULL}};
  if (!cli_parse_options("train", "MODEL.onnx", entries, &argc, &argv))
    return 2;
  if (argc == 2 && tok_file) {
    if (fit_data || !fit_output || tok_steps < 0 ||
        (tok_checkpoint && tok_every <= 0) || tok_context <= 0 ||
        fit_batch <= 0 || fit_k <= 0 || tok_report <= 0) {
      fprintf(stderr, "weir train: --tokens needs --steps N and -o, no "
                      "--data, and --every N > 0 with --checkpoint\n");
      return 2;
    }
    WeirTokenTrainerOptions to;
    weir_token_trainer_options_init(&to);
    to.train.class_axis = -1;
    if (!train_program_options("train", &tp, &to.train))
      return 2;
    to.compile = cli_compile_options(&cc);
    to.report_every = tok_report;
    if (!cli_opt_level("train", level_text, NULL, &to.opt_level))
      return 2;
    TokenRun r = {.tokens = tok_file,
                  .checkpoint = tok_checkpoint,
                  .resume = tok_resume,
                  .output = fit_output,
                  .context = tok_context,
                  .steps = tok_steps,
                  .every = tok_every,
                  .batch = fit_batch,
                  .k = fit_k,
                  .threads = fit_threads,
                  .quiet = fit_quiet};
    return train_tokens(argv[1], &r, &to);
  }
  if (argc != 2 || !fit_data || !fit_output) {
    fputs(usage_text, stderr);
    return 2;
  }
  const char *model = argv[1];
  g_autoptr(GError) error = NULL;

  /* Under mpirun: one rank of a data-parallel job (docs/distributed.md);
   * rank 0 alone prints and writes the model. */
  if (weir_mpi_launched()) {
    if (!weir_mpi_available())
      fprintf(stderr, "weir train: started by an MPI launcher, but this "
                      "Weir is built without MPI: every process trains "
                      "alone\n");
    else if (!weir_mpi_init(FALSE, &error)) {
      cli_print_error("train", error);
      return 1;
    }
  }
  int rank = weir_mpi_rank(), ranks = weir_mpi_size();
  if (rank != 0 && !freopen("/dev/null", "w", stdout)) {
    fprintf(stderr, "weir train: rank %d: cannot silence stdout\n", rank);
    return 1;
  }

  WeirTrainerOptions o;
  weir_trainer_options_init(&o);
  if (!train_program_options("train", &tp, &o.train))
    return 2;
  if (fit_bucket_mb < 0) {
    fprintf(stderr, "weir train: --bucket-mb must be positive\n");
    return 2;
  }
  o.train.bucket_bytes = (gint64)(fit_bucket_mb * 1048576.0);
  o.train.no_overlap = fit_no_overlap;
  gboolean mse = o.train.loss == WEIR_LOSS_MSE;
  if (!mse && (fit_target_columns || fit_target_file || fit_targets >= 0)) {
    fprintf(stderr, "weir train: --target-columns, --targets and "
                    "--target-file need --loss mse\n");
    return 2;
  }
  if (!!fit_target_columns + !!fit_target_file + (fit_targets >= 0) > 1) {
    fprintf(stderr, "weir train: give one of --target-columns, --targets "
                    "and --target-file\n");
    return 2;
  }
  if (mse && fit_label) {
    fprintf(stderr, "weir train: --label is for class labels; with --loss "
                    "mse name the targets with --target-columns\n");
    return 2;
  }
  if (fit_targets == 0) {
    fprintf(stderr, "weir train: --targets must be positive\n");
    return 2;
  }
  o.epochs = fit_epochs;
  o.batch = fit_batch;
  o.steps_per_call = fit_k;
  o.seed = (guint64)fit_seed;
  o.threads = fit_threads;
  o.compile = cli_compile_options(&cc);
  o.recipe_path = fit_recipe;
  if (!cli_opt_level("train", level_text, NULL, &o.opt_level))
    return 2;
  if (fit_recipe && level_text) {
    fprintf(stderr, "weir train: give --recipe or -O, not both\n");
    return 2;
  }
  double scale = 1;
  if (fit_scale && !parse_scale(fit_scale, &scale)) {
    fprintf(stderr, "weir train: --scale %s: expected a number or A/B\n",
            fit_scale);
    return 2;
  }
  if (fit_epochs < 0 || fit_batch <= 0 || fit_k <= 0) {
    fprintf(stderr, "weir train: --epochs, --batch and --steps-per-call "
                    "must be positive\n");
    return 2;
  }

  g_autoptr(WeirDataset) data =
      !mse
          ? weir_dataset_load(fit_data, fit_label, &error)
          : weir_dataset_load_targets(fit_data, fit_target_columns,
                                      fit_target_file ? 0 : MAX(fit_targets, 1),
                                      &error);
  if (!data || (fit_target_file &&
                !weir_dataset_attach_targets(data, fit_target_file, &error))) {
    cli_print_error("train", error);
    return 1;
  }
  if (scale != 1)
    weir_dataset_scale(data, scale);
  weir_dataset_shuffle(data, (guint64)fit_seed);
  WeirDataset *train_set = NULL, *val_set = NULL;
  if (!weir_dataset_split(data, fit_val_fraction, &train_set, &val_set,
                          &error)) {
    cli_print_error("train", error);
    return 1;
  }
  g_autoptr(WeirDataset) train = train_set;
  g_autoptr(WeirDataset) val = val_set;
  if (fit_standardize)
    weir_dataset_standardize(train, val, TRUE, mse);
  if (mse)
    printf("%s: %" G_GINT64_FORMAT " samples of %" G_GINT64_FORMAT
           " features, %" G_GINT64_FORMAT " target%s (%s%s): %" G_GINT64_FORMAT
           " for training, %" G_GINT64_FORMAT " held out%s\n",
           fit_data, data->n_samples, data->n_features, data->n_targets,
           data->n_targets == 1 ? "" : "s",
           fit_target_file ? "file " : "column ", data->label_column,
           train->n_samples, val->n_samples,
           fit_standardize ? ", standardized" : "");
  else
    printf("%s: %" G_GINT64_FORMAT " samples of %" G_GINT64_FORMAT
           " features, %" G_GINT64_FORMAT
           " classes (label column %s): %" G_GINT64_FORMAT
           " for training, %" G_GINT64_FORMAT " held out%s\n",
           fit_data, data->n_samples, data->n_features, data->n_classes,
           data->label_column, train->n_samples, val->n_samples,
           fit_standardize ? ", features standardized" : "");

  gint64 t0 = g_get_monotonic_time();
  TrainPrinter printer = {.tty = isatty(fileno(stdout)),
                          .quiet = fit_quiet,
                          .last_val_accuracy = -1,
                          .last_val_r2 = NAN};
  o.progress = print_progress;
  o.user_data = &printer;
  if (!cli_max_memory_limit("train", max_memory, &o.max_memory))
    return 2;
  g_autoptr(WeirTrainer) trainer =
      weir_trainer_new(model, data->n_features, &o, &error);
  if (!trainer) {
    cli_print_compile_error("train", model, error);
    return 1;
  }
  g_autofree char *took =
      cli_format_seconds((double)(g_get_monotonic_time() - t0) / 1e6);
  const WeirGraph *prog = weir_trainer_program(trainer);
  printf("%s: training program with %u containers built and compiled in %s "
         "(batch %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
         " step%s per call, %s, lr %g)\n",
         model, prog->containers->len, took, fit_batch, fit_k,
         fit_k == 1 ? "" : "s", tp.optimizer ? tp.optimizer : "sgd",
         o.train.lr);
  if (weir_trainer_ranks(trainer) > 1)
    printf("data parallel on %d ranks (MPI): batch %" G_GINT64_FORMAT
           " per rank, %" G_GINT64_FORMAT " samples per step, gradients "
           "averaged by %s in the program\n",
           ranks, fit_batch, fit_batch * ranks,
           fit_no_overlap ? "blocking Allreduce"
                          : "AllreduceStart/AllreduceWait (overlapping the "
                            "backward pass)");
  fflush(stdout);

  t0 = g_get_monotonic_time();
  if (!weir_trainer_fit(trainer, train, val, &error)) {
    if (printer.tty)
      printf("\n");
    cli_print_error("train", error);
    return 1;
  }
  double secs = (double)(g_get_monotonic_time() - t0) / 1e6;
  /* --epochs 0: the model as given, evaluated (a pruned model before
   * fine-tuning, docs/precision.md) */
  if (fit_epochs == 0 && val->n_samples > 0 &&
      !weir_trainer_is_regression(trainer)) {
    double acc = -1;
    if (!weir_trainer_evaluate(trainer, val, &acc, NULL, &error)) {
      cli_print_error("train", error);
      return 1;
    }
    printer.last_val_accuracy = acc;
  }
  if (rank == 0 && !weir_trainer_save_onnx(trainer, fit_output, &error)) {
    cli_print_error("train", error);
    return 1;
  }
  printf("trained %" G_GINT64_FORMAT " steps in %.2f s",
         weir_trainer_steps(trainer), secs);
  if (weir_trainer_ranks(trainer) > 1)
    printf(" on %d ranks", weir_trainer_ranks(trainer));
  if (printer.last_val_accuracy >= 0)
    printf(", held-out accuracy %.2f%%", 100 * printer.last_val_accuracy);
  else if (!isnan(printer.last_val_r2))
    printf(", held-out MSE %.4g, R\u00b2 %.4f", printer.last_val_mse,
           printer.last_val_r2);
  if (weir_trainer_skipped(trainer))
    printf(", %" G_GINT64_FORMAT " steps skipped (non-finite)",
           weir_trainer_skipped(trainer));
  printf("\nwrote %s\n", fit_output);
  return 0;
}

/* ------------------------------------------------------------ train-graph */

int cli_cmd_train_graph(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  g_auto(TrainProgram) tp = TRAIN_PROGRAM_INIT;
  g_autofree char *train_target = NULL, *train_output = NULL;
  g_autofree char *output_path = NULL;
  gint64 train_steps = 0;
  gboolean data_parallel = FALSE;
  double bucket_mb = 0;
  gboolean no_overlap = FALSE;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"target", 0, 0, G_OPTION_ARG_STRING, &train_target,
       "Name of the target argument (default: target)", "NAME"},
      {"output", 0, 0, G_OPTION_ARG_STRING, &train_output,
       "Forward output the loss reads (default: the only one)", "NAME"},
      {"steps", 0, 0, G_OPTION_ARG_INT64, &train_steps,
       "Fix the number of steps per call (default: symbol K)", "K"},
      {"output-file", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
       "Write the training program (.json) or a workspace (.weir)", "FILE"},
      {"data-parallel", 0, 0, G_OPTION_ARG_NONE, &data_parallel,
       "Average the gradients and the loss over the ranks of an MPI job "
       "(Allreduce nodes; docs/distributed.md)",
       NULL},
      {"bucket-mb", 0, 0, G_OPTION_ARG_DOUBLE, &bucket_mb,
       "With --data-parallel: at most MB MiB of gradients per Allreduce "
       "(default 25)",
       "MB"},
      {"no-overlap", 0, 0, G_OPTION_ARG_NONE, &no_overlap,
       "With --data-parallel: one blocking Allreduce per bucket after the "
       "backward pass, instead of an AllreduceStart as soon as the bucket's "
       "gradients are done and an AllreduceWait after the backward pass",
       NULL},
      TRAIN_PROGRAM_ENTRIES(&tp),
      {NULL}};
  if (!cli_parse_options("train-graph", "MODEL -o OUT", entries, &argc, &argv))
    return 2;
  if (argc != 2 || !output_path || !tp.loss || !tp.optimizer) {
    fprintf(
        stderr,
        "usage: weir train-graph MODEL.onnx --loss "
        "{softmax-cross-entropy,mse} [--target NAME] [--output NAME] "
        "--optimizer {sgd,momentum,adam} [--lr X] [--momentum X] "
        "[--beta1 X] [--beta2 X] [--epsilon X] [--weight-decay X] [--steps "
        "K] [--params REGEX] "
        "[--freeze REGEX] [--data-parallel [--bucket-mb MB] [--no-overlap]] "
        "[--lr-schedule constant|step|cosine] [--warmup-steps N] "
        "[--warmup-start-factor F] [--total-steps N] [--lr-min X] "
        "[--lr-step-size N] [--lr-gamma G] [--clip-grad-norm X] "
        "[--accumulate K] [--dropout-seed S] [--per-tensor-update] "
        "-o TRAIN.json|TRAIN.weir\n");
    return 2;
  }
  WeirTrainOptions o;
  weir_train_options_init(&o);
  if (!train_program_options("train-graph", &tp, &o))
    return 2;
  if (train_steps < 0) {
    fprintf(stderr, "weir train-graph: --steps must be positive\n");
    return 2;
  }
  o.target = train_target;
  o.output = train_output;
  o.steps = train_steps;
  if (bucket_mb < 0 || (bucket_mb > 0 && !data_parallel)) {
    fprintf(stderr, "weir train-graph: --bucket-mb takes a positive size "
                    "and needs --data-parallel\n");
    return 2;
  }
  if (no_overlap && !data_parallel) {
    fprintf(stderr, "weir train-graph: --no-overlap needs --data-parallel\n");
    return 2;
  }
  o.data_parallel = data_parallel;
  o.bucket_bytes = (gint64)(bucket_mb * 1048576.0);
  o.no_overlap = no_overlap;
  g_autoptr(WeirGraph) fwd =
      cli_load_program("train-graph", argv[1], NULL, NULL);
  if (!fwd)
    return 1;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) t = weir_train_graph(fwd, &o, &error);
  if (!t || !weir_graph_validate(t, &error)) {
    fprintf(stderr, "weir train-graph: %s: %s\n", argv[1], error->message);
    return 1;
  }
  g_auto(GStrv) params = weir_train_select_parameters(fwd, &o, NULL);
  if (cli_is_workspace_path(output_path)) {
    g_autoptr(WeirSession) s = weir_session_new(t, argv[1], NULL, &error);
    if (!s) {
      cli_print_error("train-graph", error);
      return 1;
    }
    if (!cli_save_workspace("train-graph", s, output_path))
      return 1;
  } else if (!weir_graph_save(t, output_path, &error)) {
    cli_print_error("train-graph", error);
    return 1;
  }
  printf("%s -> %s: training program '%s', %u parameters, %s loss, %s, "
         "%u states\n",
         argv[1], output_path, t->name, g_strv_length(params), tp.loss,
         tp.optimizer, t->states->len);
  return 0;
}
