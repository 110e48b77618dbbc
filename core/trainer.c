/* trainer.c — running compiled training on a data set (weir-trainer.h).
 *
 * Structure: import of the forward program with the batch bound, the
 * programs (training, evaluation; optional recipe; one compile_many), the
 * state tensors, one call of K steps, evaluation, the epoch loop, and the
 * ONNX write-back.
 *
 * Conventions: tensors are keyed by container name.  `state` owns every
 * persistent tensor (parameters, optimizer state, step, skipped); the
 * argument tables handed to weir_kernel_run borrow them, plus the batch
 * buffers owned by a Buffers struct (one for K steps, one for a shorter
 * last call).  Host byte order is little-endian (initial data is copied
 * as is), as everywhere in the runtime.
 */
#include <math.h>
#include <string.h>

#include "train-common.h"
#include "weir-codegen.h"
#include "weir-dataset.h"
#include "weir-import.h"
#include "weir-limits.h"
#include "weir-mpi.h"
#include "weir-pipeline.h"
#include "weir-recipe.h"
#include "weir-trainer.h"
#include "weir-transform.h"

void weir_trainer_options_init(WeirTrainerOptions *o) {
  memset(o, 0, sizeof *o);
  weir_train_options_init(&o->train);
  o->epochs = 1;
  o->batch = 32;
  o->steps_per_call = 1;
  o->seed = 1;
  o->distributed = TRUE;
}

/* The per-call tensors for k steps. */
typedef struct {
  gint64 k;
  WeirTensor *input;  /* [k, batch, ...sample shape] float */
  WeirTensor *target; /* [k, batch] int64, or (mse) [k, batch, ...output
                         sample shape] float */
  WeirTensor *losses; /* [k] float */
  GHashTable *args;   /* container -> WeirTensor* (borrowed) */
} Buffers;

struct _WeirTrainer {
  char *model_path;
  WeirTrainerOptions opts;
  gint64 n_features;
  GArray *sample_shape; /* gint64, the input's dims after the batch */
  WeirGraph *forward;
  WeirGraph *program;
  WeirGraph *eval;
  char *input_name;  /* container of the input (same in all programs) */
  char *output_name; /* container of the forward output */
  char *target_name;
  gboolean regression;   /* mse on float targets */
  gint64 out_per_sample; /* output values per sample */
  WeirKernel *train_kernel, *eval_kernel;
  GHashTable *state;        /* name -> WeirTensor* (owned) */
  GHashTable *initializers; /* ONNX names of the model's initializers */
  char *pruned; /* keep_zeros pattern from the model's "weir.pruned" */
  Buffers full, last;
  WeirTensor *eval_input, *eval_output;
  GHashTable *eval_args;
  gint64 steps;
  int rank, ranks; /* the MPI job (0 and 1 alone) */
};

static void buffers_clear(Buffers *b) {
  g_clear_pointer(&b->input, weir_tensor_free);
  g_clear_pointer(&b->target, weir_tensor_free);
  g_clear_pointer(&b->losses, weir_tensor_free);
  g_clear_pointer(&b->args, g_hash_table_unref);
  b->k = 0;
}

void weir_trainer_free(WeirTrainer *t) {
  if (!t)
    return;
  buffers_clear(&t->full);
  buffers_clear(&t->last);
  g_clear_pointer(&t->eval_args, g_hash_table_unref);
  g_clear_pointer(&t->eval_input, weir_tensor_free);
  g_clear_pointer(&t->eval_output, weir_tensor_free);
  g_clear_pointer(&t->state, g_hash_table_unref);
  g_clear_pointer(&t->initializers, g_hash_table_unref);
  g_clear_pointer(&t->pruned, g_free);
  g_clear_pointer(&t->train_kernel, weir_kernel_free);
  g_clear_pointer(&t->eval_kernel, weir_kernel_free);
  g_clear_pointer(&t->forward, weir_graph_free);
  g_clear_pointer(&t->program, weir_graph_free);
  g_clear_pointer(&t->eval, weir_graph_free);
  g_clear_pointer(&t->sample_shape, g_array_unref);
  g_free(t->input_name);
  g_free(t->output_name);
  g_free(t->target_name);
  g_free(t->model_path);
  g_free(t);
}

/* ---- import -------------------------------------------------------- */

/* Imports the model with its one real input's first dimension bound to
 * the batch size; fills sample_shape, input_name and output_name (the
 * container of the ONNX output `output`, or of the only output when NULL). */
static gboolean import_forward(WeirTrainer *t, const char *output,
                               GError **error) {
  const char *path = t->model_path;
  g_autoptr(WeirOnnxModel) model = weir_onnx_model_load(path, error);
  if (!model)
    return FALSE;
  const WeirOnnxGraph *g = weir_onnx_model_graph(model);
  t->initializers =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < g->n_initializers; i++)
    g_hash_table_add(t->initializers, g_strdup(g->initializers[i].name));
  /* `weir prune` lists the pruned initializers (comma separated): they
   * keep their zeros while training */
  const char *pruned = weir_onnx_model_metadata(model, "weir.pruned");
  if (pruned && *pruned) {
    g_auto(GStrv) names = g_strsplit(pruned, ",", -1);
    GString *re = g_string_new("^(?:");
    for (guint i = 0; names[i]; i++) {
      g_autofree char *q = g_regex_escape_string(names[i], -1);
      g_string_append_printf(re, "%s%s", i ? "|" : "", q);
    }
    g_string_append(re, ")$");
    t->pruned = g_string_free(re, FALSE);
  }
  const WeirOnnxValueInfo *input =
      weir_train_model_input(g, path, "training", error);
  if (!input)
    return FALSE;
  if (!input->has_shape || input->rank < 2 || !input->dtype_ok ||
      input->dtype != WEIR_DTYPE_F32) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: input '%s' must be a float tensor [batch, ...] of known "
                "rank",
                path, input->name);
    return FALSE;
  }
  t->sample_shape = g_array_new(FALSE, FALSE, sizeof(gint64));
  gint64 per_sample = 1;
  for (guint d = 1; d < input->rank; d++) {
    if (input->dims[d].value < 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: input '%s': dimension %u ('%s') is symbolic; only "
                  "the batch dimension may be",
                  path, input->name, d,
                  input->dims[d].param ? input->dims[d].param : "?");
      return FALSE;
    }
    g_array_append_val(t->sample_shape, input->dims[d].value);
    per_sample *= input->dims[d].value;
  }
  if (per_sample != t->n_features) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: input '%s' takes %" G_GINT64_FORMAT
                " values per sample, the data has %" G_GINT64_FORMAT
                " features",
                path, input->name, per_sample, t->n_features);
    return FALSE;
  }
  if (input->dims[0].value >= 0 && input->dims[0].value != t->opts.batch) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: input '%s' has a fixed batch of %" G_GINT64_FORMAT
                "; train with --batch %" G_GINT64_FORMAT
                " or export the model with a dynamic batch dimension",
                path, input->name, input->dims[0].value, input->dims[0].value);
    return FALSE;
  }

  g_autoptr(GArray) shape = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_val(shape, t->opts.batch);
  g_array_append_vals(shape, t->sample_shape->data, t->sample_shape->len);
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  t->forward =
      weir_train_import_shaped(model, input->name, (const gint64 *)shape->data,
                               shape->len, names, error);
  if (!t->forward)
    return FALSE;
  t->input_name = g_strdup(g_hash_table_lookup(names, input->name));
  const char *out_onnx = output;
  if (!out_onnx) {
    if (g->n_outputs != 1) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: the model has %u outputs: name the one the loss reads",
                  path, g->n_outputs);
      return FALSE;
    }
    out_onnx = g->outputs[0].name;
  }
  const char *out = g_hash_table_lookup(names, out_onnx);
  if (!out) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s: no output '%s'",
                path, out_onnx);
    return FALSE;
  }
  t->output_name = g_strdup(out);
  return TRUE;
}

/* ---- state ---------------------------------------------------------- */

static WeirTensor *tensor_for(const WeirContainer *c, GHashTable *bindings,
                              const char *what, GError **error) {
  g_autofree gint64 *shape = g_new0(gint64, MAX(c->shape->len, 1));
  for (guint d = 0; d < c->shape->len; d++) {
    if (!weir_expr_eval(c->shape->pdata[d], bindings, &shape[d], error)) {
      g_prefix_error(error, "%s: container '%s': ", what, c->name);
      return NULL;
    }
  }
  WeirTensor *x = weir_tensor_try_new(c->dtype, c->shape->len, shape, error);
  if (!x)
    g_prefix_error(error, "%s: container '%s': ", what, c->name);
  return x;
}

static gboolean init_state(WeirTrainer *t, GError **error) {
  g_autoptr(GHashTable) bindings = weir_bindings_new();
  weir_bindings_set(bindings, "K", 1);
  if (!weir_graph_check_memory(t->program, bindings, t->opts.max_memory,
                               error)) {
    g_prefix_error(error, "%s: ", t->model_path);
    return FALSE;
  }
  const char *const skip[] = {t->input_name, t->target_name, "losses", NULL};
  t->state = weir_train_state_new(t->program, t->forward, bindings, skip,
                                  t->model_path, error);
  return t->state != NULL;
}

static GHashTable *state_args(WeirTrainer *t) {
  GHashTable *args = g_hash_table_new(g_str_hash, g_str_equal);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, t->state);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(args, k, v);
  return args;
}

static WeirTensor *batch_tensor(gint64 lead, gint64 batch,
                                const GArray *sample) {
  g_autofree gint64 *shape = g_new(gint64, sample->len + 2);
  guint r = 0;
  if (lead > 0)
    shape[r++] = lead;
  shape[r++] = batch;
  for (guint i = 0; i < sample->len; i++)
    shape[r++] = g_array_index(sample, gint64, i);
  return weir_tensor_new(WEIR_DTYPE_F32, r, shape);
}

/* Micro-batches per step (gradient accumulation). */
static gint64 micro_batches(const WeirTrainer *t) {
  return t->opts.train.accumulate > 1 ? t->opts.train.accumulate : 1;
}

static void buffers_init(WeirTrainer *t, Buffers *b, gint64 k) {
  buffers_clear(b);
  b->k = k;
  /* k steps of micro_batches batches each */
  gint64 kb = k * micro_batches(t);
  b->input = batch_tensor(kb, t->opts.batch, t->sample_shape);
  if (t->regression) {
    const WeirTensor *o = t->eval_output;
    g_autofree gint64 *tshape = g_new(gint64, o->rank + 1);
    tshape[0] = kb;
    memcpy(tshape + 1, o->shape, sizeof(gint64) * o->rank);
    b->target = weir_tensor_new(WEIR_DTYPE_F32, o->rank + 1, tshape);
  } else {
    gint64 tshape[2] = {kb, t->opts.batch};
    b->target = weir_tensor_new(WEIR_DTYPE_I64, 2, tshape);
  }
  b->losses = weir_tensor_new(WEIR_DTYPE_F32, 1, &k);
  b->args = state_args(t);
  g_hash_table_insert(b->args, t->input_name, b->input);
  g_hash_table_insert(b->args, t->target_name, b->target);
  g_hash_table_insert(b->args, (gpointer) "losses", b->losses);
}

/* The evaluation program's arguments: its input and output, and the
 * state tensors for everything else (checked by name and size). */
static gboolean init_eval(WeirTrainer *t, GError **error) {
  t->eval_input = batch_tensor(0, t->opts.batch, t->sample_shape);
  t->eval_args = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) args = weir_codegen_arguments(t->eval);
  for (guint i = 0; i < args->len; i++) {
    const WeirContainer *c = args->pdata[i];
    if (!strcmp(c->name, t->input_name)) {
      g_hash_table_insert(t->eval_args, t->input_name, t->eval_input);
    } else if (!strcmp(c->name, t->output_name)) {
      t->eval_output = tensor_for(c, NULL, t->model_path, error);
      if (!t->eval_output)
        return FALSE;
      const WeirTensor *o = t->eval_output;
      if (t->regression ? (o->rank < 1 || o->shape[0] != t->opts.batch ||
                           o->dtype != WEIR_DTYPE_F32)
                        : (o->rank != 2 || o->dtype != WEIR_DTYPE_F32)) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                    "%s: output '%s' is not float [batch, %s]", t->model_path,
                    c->name, t->regression ? "...targets" : "classes");
        return FALSE;
      }
      t->out_per_sample = o->count / MAX(o->shape[0], 1);
      g_hash_table_insert(t->eval_args, t->output_name, t->eval_output);
    } else {
      WeirTensor *v = g_hash_table_lookup(t->state, c->name);
      if (!v) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "%s: argument '%s' of the evaluation program is not "
                    "one of the training program",
                    t->model_path, c->name);
        return FALSE;
      }
      g_hash_table_insert(t->eval_args, c->name, v);
    }
  }
  if (!t->eval_output) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: the evaluation program has no output '%s'", t->model_path,
                t->output_name);
    return FALSE;
  }
  return TRUE;
}

/* ---- construction ----------------------------------------------------- */

static gboolean apply_recipe(WeirTrainer *t, const char *path, GError **error) {
  g_autoptr(WeirRecipe) recipe = weir_recipe_load(path, error);
  if (!recipe)
    return FALSE;
  g_autoptr(GHashTable) bindings = weir_bindings_new();
  weir_bindings_set(bindings, "K", t->opts.steps_per_call);
  if (!weir_recipe_apply(t->program, recipe, bindings, NULL, error)) {
    g_prefix_error(error, "%s: training program of %s: ", path, t->model_path);
    return FALSE;
  }
  return TRUE;
}

/* The pipeline of an optimization level on both programs. */
static gboolean apply_level(WeirTrainer *t, guint level, GError **error) {
  g_autoptr(GHashTable) bindings = weir_bindings_new();
  weir_bindings_set(bindings, "K", t->opts.steps_per_call);
  if (!weir_pipeline_apply(t->program, level, bindings, NULL, error)) {
    g_prefix_error(error, "-O%u: training program of %s: ", level,
                   t->model_path);
    return FALSE;
  }
  if (!weir_pipeline_apply(t->eval, level, bindings, NULL, error)) {
    g_prefix_error(error, "-O%u: evaluation program of %s: ", level,
                   t->model_path);
    return FALSE;
  }
  return TRUE;
}

/* ---- data parallel ---------------------------------------------------- */

static int compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The state tensors' names, sorted: the same order on every rank. */
static GPtrArray *state_names(WeirTrainer *t) {
  GPtrArray *names = g_ptr_array_new();
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init(&it, t->state);
  while (g_hash_table_iter_next(&it, &k, NULL))
    g_ptr_array_add(names, k);
  g_ptr_array_sort(names, compare_names);
  return names;
}

/* Every rank starts from rank 0's parameters and optimizer state. */
static gboolean broadcast_state(WeirTrainer *t, GError **error) {
  if (t->ranks <= 1)
    return TRUE;
  g_autoptr(GPtrArray) names = state_names(t);
  for (guint i = 0; i < names->len; i++) {
    WeirTensor *v = g_hash_table_lookup(t->state, names->pdata[i]);
    if (!weir_mpi_broadcast(v->data, weir_tensor_nbytes(v), 0, error)) {
      g_prefix_error(error, "%s: broadcasting '%s': ", t->model_path,
                     (const char *)names->pdata[i]);
      return FALSE;
    }
  }
  return TRUE;
}

/* A checksum of the trainable state (every float tensor), position
 * weighted so that swapped values differ; identical tensors give the
 * identical sum on every rank. */
static double state_checksum(WeirTrainer *t) {
  g_autoptr(GPtrArray) names = state_names(t);
  double sum = 0;
  for (guint i = 0; i < names->len; i++) {
    const WeirTensor *v = g_hash_table_lookup(t->state, names->pdata[i]);
    if (v->dtype != WEIR_DTYPE_F32 && v->dtype != WEIR_DTYPE_F64)
      continue;
    for (gint64 j = 0; j < v->count; j++)
      sum += weir_tensor_get(v, j) * (double)(1 + (j + i) % 7);
  }
  return sum;
}

static gboolean check_ranks_agree(WeirTrainer *t, gint64 epoch,
                                  GError **error) {
  if (t->ranks <= 1)
    return TRUE;
  double lo, hi, c = state_checksum(t);
  if (!weir_mpi_min_max_f64(c, &lo, &hi, error)) {
    g_prefix_error(error,
                   "%s: epoch %" G_GINT64_FORMAT " checksum: ", t->model_path,
                   epoch);
    return FALSE;
  }
  if (lo != hi) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "%s: after epoch %" G_GINT64_FORMAT " the parameters of the "
                "%d ranks differ (checksums from %.17g to %.17g)",
                t->model_path, epoch, t->ranks, lo, hi);
    return FALSE;
  }
  return TRUE;
}

int weir_trainer_ranks(const WeirTrainer *t) {
  return t->ranks;
}

WeirTrainer *weir_trainer_new(const char *model_path, gint64 n_features,
                              const WeirTrainerOptions *options,
                              GError **error) {
  g_return_val_if_fail(model_path && options, NULL);
  g_autoptr(WeirTrainer) t = g_new0(WeirTrainer, 1);
  t->model_path = g_strdup(model_path);
  t->opts = *options;
  /* borrowed strings are used during construction only */
  t->opts.recipe_path = NULL;
  t->opts.train.output = NULL;
  t->opts.train.target = NULL;
  t->n_features = n_features;
  if (options->batch <= 0 || options->epochs < 0 ||
      options->steps_per_call <= 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: batch (%" G_GINT64_FORMAT
                ") and steps per call (%" G_GINT64_FORMAT ") must be positive",
                model_path, options->batch, options->steps_per_call);
    return NULL;
  }
  if ((options->train.loss != WEIR_LOSS_SOFTMAX_CROSS_ENTROPY &&
       options->train.loss != WEIR_LOSS_MSE) ||
      options->train.reduction == WEIR_REDUCTION_NONE) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: training on a data set takes cross-entropy or mse with "
                "reduction mean or sum (the other losses are for training "
                "programs and --tokens)",
                model_path);
    return NULL;
  }
  t->regression = options->train.loss == WEIR_LOSS_MSE;
  if (!import_forward(t, options->train.output, error))
    return NULL;

  t->rank = 0;
  t->ranks = 1;
  if (options->distributed && weir_mpi_size() > 1) {
    t->rank = weir_mpi_rank();
    t->ranks = weir_mpi_size();
  }
  WeirTrainOptions to = options->train;
  if (t->ranks > 1)
    to.data_parallel = TRUE;
  to.output = t->output_name;
  to.steps = 0; /* symbol K: the last call of an epoch may be shorter */
  t->target_name =
      g_strdup(options->train.target ? options->train.target : "target");
  to.target = t->target_name;
  if (!to.keep_zeros)
    to.keep_zeros = t->pruned;
  t->program = weir_train_graph(t->forward, &to, error);
  if (!t->program)
    return NULL;
  t->eval = weir_train_eval_graph(t->forward, &to, error);
  if (!t->eval)
    return NULL;
  if (options->recipe_path && !apply_recipe(t, options->recipe_path, error))
    return NULL;
  if (!options->recipe_path && options->opt_level > 0 &&
      !apply_level(t, options->opt_level, error))
    return NULL;

  const WeirGraph *graphs[2] = {t->program, t->eval};
  WeirKernel *kernels[2] = {NULL, NULL};
  if (!weir_kernel_compile_many(graphs, 2, &options->compile, kernels, NULL,
                                error)) {
    g_prefix_error(error, "%s: ", model_path);
    return NULL;
  }
  t->train_kernel = kernels[0];
  t->eval_kernel = kernels[1];
  if (options->threads > 0) {
    /* a kernel without parallel loops has no OpenMP to configure */
    weir_kernel_set_threads(t->train_kernel, options->threads, NULL);
    weir_kernel_set_threads(t->eval_kernel, options->threads, NULL);
  }
  if (!init_state(t, error) || !init_eval(t, error) ||
      !broadcast_state(t, error))
    return NULL;
  buffers_init(t, &t->full, options->steps_per_call);
  return g_steal_pointer(&t);
}

/* ---- running ---------------------------------------------------------- */

static gint64 scalar_i64(const WeirTrainer *t, const char *name) {
  const WeirTensor *v = g_hash_table_lookup(t->state, name);
  return v && v->count == 1 ? (gint64)weir_tensor_get(v, 0) : 0;
}

gint64 weir_trainer_steps(const WeirTrainer *t) {
  return t->steps;
}
gint64 weir_trainer_skipped(const WeirTrainer *t) {
  return scalar_i64(t, "skipped");
}

const WeirTensor *weir_trainer_state(const WeirTrainer *t, const char *name) {
  return g_hash_table_lookup(t->state, name);
}

const WeirGraph *weir_trainer_program(const WeirTrainer *t) {
  return t->program;
}

/* Runs k steps on the batches order[first .. first + k*batch); returns the
 * mean loss in *loss. */
static gboolean run_call(WeirTrainer *t, const WeirDataset *d,
                         const gint64 *order, gint64 first, gint64 k,
                         double *loss, GError **error) {
  Buffers *b = &t->full;
  if (k != t->full.k) {
    if (t->last.k != k)
      buffers_init(t, &t->last, k);
    b = &t->last;
  }
  if (t->regression)
    weir_dataset_gather_targets(d, order, first,
                                k * micro_batches(t) * t->opts.batch,
                                b->input->data, NULL, b->target->data);
  else
    weir_dataset_gather(d, order, first, k * micro_batches(t) * t->opts.batch,
                        b->input->data, b->target->data);
  g_autoptr(GHashTable) symbols = weir_bindings_new();
  weir_bindings_set(symbols, "K", k);
  if (!weir_kernel_run(t->train_kernel, symbols, b->args, error)) {
    g_prefix_error(error, "%s: training step %" G_GINT64_FORMAT ": ",
                   t->model_path, t->steps + 1);
    return FALSE;
  }
  double sum = 0;
  const float *l = b->losses->data;
  for (gint64 i = 0; i < k; i++)
    sum += l[i];
  *loss = sum / (double)k;
  t->steps += k;
  return TRUE;
}

gboolean weir_trainer_predict(WeirTrainer *t, const WeirDataset *d,
                              float *logits, GError **error) {
  g_return_val_if_fail(t && d && logits, FALSE);
  if (d->n_features != t->n_features) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %" G_GINT64_FORMAT
                " features, the model takes %" G_GINT64_FORMAT,
                d->source, d->n_features, t->n_features);
    return FALSE;
  }
  gint64 batch = t->opts.batch, classes = t->out_per_sample;
  for (gint64 start = 0; start < d->n_samples; start += batch) {
    gint64 n = MIN(batch, d->n_samples - start);
    memset(t->eval_input->data, 0, weir_tensor_nbytes(t->eval_input));
    weir_dataset_gather(d, NULL, start, n, t->eval_input->data, NULL);
    if (!weir_kernel_run(t->eval_kernel, NULL, t->eval_args, error)) {
      g_prefix_error(error, "%s: evaluation: ", t->model_path);
      return FALSE;
    }
    memcpy(logits + start * classes, t->eval_output->data,
           sizeof(float) * (gsize)(n * classes));
  }
  return TRUE;
}

gint64 weir_trainer_n_classes(const WeirTrainer *t) {
  return t->out_per_sample;
}

gboolean weir_trainer_is_regression(const WeirTrainer *t) {
  return t->regression;
}

/* The value of target column c in original units (undoing
 * weir_dataset_standardize when d was standardized). */
static double unscale(const WeirDataset *d, gint64 c, double v) {
  return d->target_mean ? v * d->target_std[c] + d->target_mean[c] : v;
}

gboolean weir_trainer_evaluate_regression(WeirTrainer *t, const WeirDataset *d,
                                          double *mse, double *r2,
                                          GError **error) {
  g_return_val_if_fail(t && d, FALSE);
  gint64 nt = t->out_per_sample;
  if (!t->regression || d->n_targets != nt) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %" G_GINT64_FORMAT " targets per sample, the model's "
                "output '%s' has %" G_GINT64_FORMAT " values per sample%s",
                d->source, d->n_targets, t->output_name, nt,
                t->regression ? "" : " (and is trained as a classifier)");
    return FALSE;
  }
  gint64 n = d->n_samples;
  g_autofree float *pred = g_new(float, MAX(n * nt, 1));
  if (!weir_trainer_predict(t, d, pred, error))
    return FALSE;
  double sse_all = 0, r2_sum = 0;
  for (gint64 c = 0; c < nt; c++) {
    double mean = 0;
    for (gint64 i = 0; i < n; i++)
      mean += unscale(d, c, d->targets[i * nt + c]);
    mean /= (double)MAX(n, 1);
    double sse = 0, sst = 0;
    for (gint64 i = 0; i < n; i++) {
      double y = unscale(d, c, d->targets[i * nt + c]);
      double e = unscale(d, c, pred[i * nt + c]) - y;
      sse += e * e;
      sst += (y - mean) * (y - mean);
    }
    sse_all += sse;
    /* as scikit-learn's r2_score: a constant column scores 1 when
     * predicted exactly, else 0 */
    r2_sum += sst > 0 ? 1 - sse / sst : (sse == 0 ? 1 : 0);
  }
  if (mse)
    *mse = sse_all / (double)MAX(n * nt, 1);
  if (r2)
    *r2 = r2_sum / (double)MAX(nt, 1);
  return TRUE;
}

gboolean weir_trainer_evaluate(WeirTrainer *t, const WeirDataset *d,
                               double *accuracy, double *loss, GError **error) {
  g_return_val_if_fail(t && d, FALSE);
  if (t->regression) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: the model is trained with mse: evaluate it with "
                "weir_trainer_evaluate_regression",
                t->model_path);
    return FALSE;
  }
  gint64 classes = t->out_per_sample;
  g_autofree float *logits = g_new(float, MAX(d->n_samples * classes, 1));
  if (!weir_trainer_predict(t, d, logits, error))
    return FALSE;
  gint64 correct = 0;
  double total = 0;
  for (gint64 i = 0; i < d->n_samples; i++) {
    const float *row = logits + i * classes;
    gint64 best = 0;
    double max = row[0];
    for (gint64 c = 1; c < classes; c++) {
      if (row[c] > max) {
        max = row[c];
        best = c;
      }
    }
    gint64 label = d->labels[i];
    double sum = 0;
    for (gint64 c = 0; c < classes; c++)
      sum += exp(row[c] - max);
    double logit = label < classes ? row[label] : -INFINITY;
    total += log(sum) + max - logit;
    correct += best == label;
  }
  double n = (double)MAX(d->n_samples, 1);
  if (accuracy)
    *accuracy = (double)correct / n;
  if (loss)
    *loss = total / n;
  return TRUE;
}

gboolean weir_trainer_fit(WeirTrainer *t, const WeirDataset *train,
                          const WeirDataset *val, GError **error) {
  g_return_val_if_fail(t && train, FALSE);
  if (train->n_features != t->n_features) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %" G_GINT64_FORMAT
                " features, the model takes %" G_GINT64_FORMAT,
                train->source, train->n_features, t->n_features);
    return FALSE;
  }
  gint64 classes = t->out_per_sample;
  if (t->regression) {
    const WeirDataset *sets[2] = {train, val};
    for (guint i = 0; i < 2; i++) {
      const WeirDataset *d = sets[i];
      if (d && d->n_samples > 0 && d->n_targets != t->out_per_sample) {
        g_set_error(
            error, WEIR_ERROR, WEIR_ERROR_INVALID,
            "%s: %" G_GINT64_FORMAT
            " targets per sample, but output '%s' of %s has %" G_GINT64_FORMAT
            " values per sample",
            d->source, d->n_targets, t->output_name, t->model_path,
            t->out_per_sample);
        return FALSE;
      }
    }
  } else if (train->n_classes > classes) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: label %" G_GINT64_FORMAT " is out of range: the model "
                "has %" G_GINT64_FORMAT " classes",
                train->source, train->n_classes - 1, classes);
    return FALSE;
  }
  /* a step takes micro_batches batches (gradient accumulation) */
  gint64 batch = t->opts.batch * micro_batches(t),
         k_max = t->opts.steps_per_call;
  /* with P ranks a step takes P batches: rank r the r-th of them */
  gint64 steps_per_epoch = train->n_samples / (batch * t->ranks);
  if (steps_per_epoch == 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %" G_GINT64_FORMAT " training samples do not fill one "
                "batch of %" G_GINT64_FORMAT "%s",
                train->source, train->n_samples, batch,
                t->ranks > 1 ? " on every rank" : "");
    return FALSE;
  }
  for (gint64 epoch = 1; epoch <= t->opts.epochs; epoch++) {
    g_autofree gint64 *order = weir_dataset_permutation(
        train->n_samples, t->opts.seed * 1000003u + (guint64)epoch);
    if (t->ranks > 1) {
      /* this rank's samples, step after step */
      gint64 *mine = g_new(gint64, steps_per_epoch * batch);
      for (gint64 s = 0; s < steps_per_epoch; s++)
        memcpy(mine + s * batch, order + (s * t->ranks + t->rank) * batch,
               sizeof(gint64) * (gsize)batch);
      g_free(order);
      order = mine;
    }
    WeirTrainProgress p = {0};
    p.epoch = epoch;
    p.epochs = t->opts.epochs;
    p.steps_per_epoch = steps_per_epoch;
    p.val_accuracy = p.val_loss = -1;
    p.val_r2 = NAN;
    double loss_sum = 0;
    gint64 t0 = g_get_monotonic_time();
    for (gint64 step = 0; step < steps_per_epoch;) {
      gint64 k = MIN(k_max, steps_per_epoch - step);
      double loss = 0;
      if (!run_call(t, train, order, step * batch, k, &loss, error))
        return FALSE;
      step += k;
      loss_sum += loss * (double)k;
      double secs = (double)(g_get_monotonic_time() - t0) / 1e6;
      p.step = step;
      p.total_steps = t->steps;
      p.loss = loss;
      p.samples_per_second =
          secs > 0 ? (double)(step * batch * t->ranks) / secs : 0;
      p.skipped = weir_trainer_skipped(t);
      if (t->opts.progress)
        t->opts.progress(&p, t->opts.user_data);
    }
    p.epoch_seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
    p.epoch_loss = loss_sum / (double)steps_per_epoch;
    if (val && val->n_samples > 0 &&
        !(t->regression ? weir_trainer_evaluate_regression(t, val, &p.val_loss,
                                                           &p.val_r2, error)
                        : weir_trainer_evaluate(t, val, &p.val_accuracy,
                                                &p.val_loss, error)))
      return FALSE;
    if (!check_ranks_agree(t, epoch, error))
      return FALSE;
    p.epoch_done = TRUE;
    if (t->opts.progress)
      t->opts.progress(&p, t->opts.user_data);
  }
  return TRUE;
}

/* ---- write-back ------------------------------------------------------- */

/* The ONNX name of a forward container: the label of its access node. */
static const char *onnx_name(const WeirGraph *g, const char *container) {
  for (guint s = 0; s < g->states->len; s++) {
    const WeirState *st = g->states->pdata[s];
    for (guint i = 0; i < st->nodes->len; i++) {
      const WeirNode *n = st->nodes->pdata[i];
      if (n->kind == WEIR_NODE_ACCESS && !g_strcmp0(n->data, container))
        return n->label && *n->label ? n->label : container;
    }
  }
  return container;
}

gboolean weir_trainer_save_onnx(WeirTrainer *t, const char *path,
                                GError **error) {
  g_autoptr(GHashTable) values = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < t->forward->containers->len; i++) {
    const WeirContainer *c = t->forward->containers->pdata[i];
    WeirTensor *v = g_hash_table_lookup(t->state, c->name);
    const char *name = onnx_name(t->forward, c->name);
    /* outputs of Constant nodes have initial data too, but no initializer
     * to write them to: they are left as the file has them */
    if (c->initial && v && g_hash_table_contains(t->initializers, name))
      g_hash_table_insert(values, (gpointer)name, v);
  }
  return weir_onnx_save_with_initializers(t->model_path, values, path, error);
}
