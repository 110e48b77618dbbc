/* token-trainer.c — next-token training with checkpoints
 * (weir-token-trainer.h).
 *
 * Structure: import (the token input bound to [batch, T]), the training
 * program (cross-entropy over the last axis, K symbolic) compiled once,
 * the persistent state, the windows of a call, the run loop, checkpoints
 * and the ONNX write-back.  Tensors are keyed by container name; `state`
 * owns the persistent ones, the argument table of a call borrows them.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <json-c/json.h>

#include "train-common.h"
#include "weir-codegen.h"
#include "weir-import.h"
#include "weir-onnx.h"
#include "weir-pipeline.h"
#include "weir-tensor-io.h"
#include "weir-token-trainer.h"

void weir_token_trainer_options_init(WeirTokenTrainerOptions *o) {
  memset(o, 0, sizeof *o);
  weir_train_options_init(&o->train);
  o->batch = 8;
  o->context = 32;
  o->steps_per_call = 1;
  o->report_every = 10;
}

struct _WeirTokenTrainer {
  char *model_path, *tokens_path;
  WeirTokenTrainerOptions opts;
  WeirGraph *forward, *program;
  WeirKernel *kernel;
  char *input_name, *target_name;
  WeirDType input_dtype;
  gint64 vocab;
  gint64 *tokens; /* n_tokens */
  gint64 n_tokens;
  gint64 position, steps;
  GHashTable *state; /* name -> WeirTensor* (owned) */
};

void weir_token_trainer_free(WeirTokenTrainer *t) {
  if (!t)
    return;
  g_clear_pointer(&t->state, g_hash_table_unref);
  g_clear_pointer(&t->kernel, weir_kernel_free);
  g_clear_pointer(&t->forward, weir_graph_free);
  g_clear_pointer(&t->program, weir_graph_free);
  g_free(t->tokens);
  g_free(t->input_name);
  g_free(t->target_name);
  g_free(t->model_path);
  g_free(t->tokens_path);
  g_free(t);
}

gint64 weir_token_trainer_steps(const WeirTokenTrainer *t) {
  return t->steps;
}
gint64 weir_token_trainer_position(const WeirTokenTrainer *t) {
  return t->position;
}
gint64 weir_token_trainer_vocab(const WeirTokenTrainer *t) {
  return t->vocab;
}
const WeirTensor *weir_token_trainer_state(const WeirTokenTrainer *t,
                                           const char *name) {
  return g_hash_table_lookup(t->state, name);
}

/* ---- import ------------------------------------------------------------ */

static gboolean import_model(WeirTokenTrainer *t, GError **error) {
  const char *path = t->model_path;
  g_autoptr(WeirOnnxModel) model = weir_onnx_model_load(path, error);
  if (!model)
    return FALSE;
  const WeirOnnxGraph *g = weir_onnx_model_graph(model);
  const WeirOnnxValueInfo *input =
      weir_train_model_input(g, path, "next-token training", error);
  if (!input)
    return FALSE;
  if (!input->has_shape || input->rank != 2 || !input->dtype_ok ||
      (input->dtype != WEIR_DTYPE_I64 && input->dtype != WEIR_DTYPE_I32)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: next-token training needs one input of integer tokens "
                "[batch, T]",
                path);
    return FALSE;
  }
  const gint64 want[2] = {t->opts.batch, t->opts.context};
  for (guint d = 0; d < 2; d++)
    if (input->dims[d].value >= 0 && input->dims[d].value != want[d]) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: input '%s' has a fixed %s of %" G_GINT64_FORMAT
                  "; train with --%s %" G_GINT64_FORMAT,
                  path, input->name, d ? "context" : "batch",
                  input->dims[d].value, d ? "context" : "batch",
                  input->dims[d].value);
      return FALSE;
    }
  t->input_dtype = input->dtype;
  if (g->n_outputs != 1) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: the model has %u outputs; next-token training needs one "
                "(the logits)",
                path, g->n_outputs);
    return FALSE;
  }
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  t->forward =
      weir_train_import_shaped(model, input->name, want, 2, names, error);
  if (!t->forward)
    return FALSE;
  t->input_name = g_strdup(g_hash_table_lookup(names, input->name));
  const char *out = g_hash_table_lookup(names, g->outputs[0].name);
  const WeirContainer *oc = out ? weir_graph_container(t->forward, out) : NULL;
  gint64 b, tt;
  if (!oc || oc->shape->len != 3 ||
      !weir_expr_eval(oc->shape->pdata[0], NULL, &b, NULL) ||
      !weir_expr_eval(oc->shape->pdata[1], NULL, &tt, NULL) ||
      !weir_expr_eval(oc->shape->pdata[2], NULL, &t->vocab, NULL) ||
      b != t->opts.batch || tt != t->opts.context) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: output '%s' is not logits [batch, T, vocab]", path,
                g->outputs[0].name);
    return FALSE;
  }
  return TRUE;
}

static gboolean load_tokens(WeirTokenTrainer *t, GError **error) {
  g_autoptr(WeirTensor) x = weir_tensor_read_npy(t->tokens_path, error);
  if (!x)
    return FALSE;
  if (x->dtype != WEIR_DTYPE_I64 && x->dtype != WEIR_DTYPE_I32) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: tokens must be i32 or i64, not %s", t->tokens_path,
                weir_dtype_name(x->dtype));
    return FALSE;
  }
  t->n_tokens = x->count;
  t->tokens = g_new(gint64, MAX(t->n_tokens, 1));
  for (gint64 i = 0; i < t->n_tokens; i++) {
    gint64 v = x->dtype == WEIR_DTYPE_I64 ? ((const gint64 *)x->data)[i]
                                          : ((const gint32 *)x->data)[i];
    if (v < 0 || v >= t->vocab) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: token %" G_GINT64_FORMAT " at index %" G_GINT64_FORMAT
                  " is outside the vocabulary [0, %" G_GINT64_FORMAT ")",
                  t->tokens_path, v, i, t->vocab);
      return FALSE;
    }
    t->tokens[i] = v;
  }
  gint64 need = t->opts.batch * t->opts.context + 1;
  if (t->n_tokens < need) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %" G_GINT64_FORMAT " tokens; one step of %" G_GINT64_FORMAT
                " windows of %" G_GINT64_FORMAT " needs %" G_GINT64_FORMAT,
                t->tokens_path, t->n_tokens, t->opts.batch, t->opts.context,
                need);
    return FALSE;
  }
  return TRUE;
}

static gboolean init_state(WeirTokenTrainer *t, GError **error) {
  const char *const skip[] = {t->input_name, t->target_name, "losses", NULL};
  t->state = weir_train_state_new(t->program, t->forward, NULL, skip,
                                  t->model_path, error);
  return t->state != NULL;
}

WeirTokenTrainer *weir_token_trainer_new(const char *model_path,
                                         const char *tokens_path,
                                         const WeirTokenTrainerOptions *options,
                                         GError **error) {
  g_return_val_if_fail(model_path && tokens_path && options, NULL);
  if (options->batch <= 0 || options->context <= 0 ||
      options->steps_per_call <= 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: batch, context and steps per call must be positive",
                model_path);
    return NULL;
  }
  if (options->train.reduction == WEIR_REDUCTION_NONE) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: next-token training needs reduction mean or sum",
                model_path);
    return NULL;
  }
  g_autoptr(WeirTokenTrainer) t = g_new0(WeirTokenTrainer, 1);
  t->model_path = g_strdup(model_path);
  t->tokens_path = g_strdup(tokens_path);
  t->opts = *options;
  t->opts.train.output = NULL;
  t->opts.train.target = NULL;
  if (!import_model(t, error) || !load_tokens(t, error))
    return NULL;
  WeirTrainOptions to = options->train;
  to.loss = WEIR_LOSS_SOFTMAX_CROSS_ENTROPY;
  to.class_axis = -1;
  to.steps = 0;
  to.output = NULL;
  t->target_name = g_strdup("target");
  to.target = t->target_name;
  t->program = weir_train_graph(t->forward, &to, error);
  if (!t->program) {
    g_prefix_error(error, "%s: ", model_path);
    return NULL;
  }
  if (options->opt_level > 0) {
    g_autoptr(GHashTable) bindings = weir_bindings_new();
    weir_bindings_set(bindings, "K", options->steps_per_call);
    if (!weir_pipeline_apply(t->program, options->opt_level, bindings, NULL,
                             error)) {
      g_prefix_error(error,
                     "-O%u: training program of %s: ", options->opt_level,
                     model_path);
      return NULL;
    }
  }
  const WeirGraph *graphs[1] = {t->program};
  WeirKernel *kernels[1] = {NULL};
  if (!weir_kernel_compile_many(graphs, 1, &options->compile, kernels, NULL,
                                error)) {
    g_prefix_error(error, "%s: ", model_path);
    return NULL;
  }
  t->kernel = kernels[0];
  if (options->threads > 0)
    weir_kernel_set_threads(t->kernel, options->threads, NULL);
  if (!init_state(t, error))
    return NULL;
  return g_steal_pointer(&t);
}

/* ---- running ------------------------------------------------------------ */

/* Runs k steps from the current position; adds their losses to *sum. */
static gboolean run_call(WeirTokenTrainer *t, gint64 k, double *sum,
                         GError **error) {
  gint64 B = t->opts.batch, T = t->opts.context;
  /* with gradient accumulation a step reads A micro-batches */
  gint64 A = t->opts.train.accumulate > 1 ? t->opts.train.accumulate : 1;
  gint64 shape[3] = {k * A, B, T};
  WeirDType ldt = t->opts.train.label_dtype;
  g_autoptr(WeirTensor) input = weir_tensor_new(t->input_dtype, 3, shape);
  g_autoptr(WeirTensor) target = weir_tensor_new(ldt, 3, shape);
  g_autoptr(WeirTensor) losses = weir_tensor_new(WEIR_DTYPE_F32, 1, &k);
  for (gint64 s = 0; s < k * A; s++) {
    if (t->position + B * T + 1 > t->n_tokens)
      t->position = 0; /* the next epoch */
    for (gint64 j = 0; j < B * T; j++) {
      gint64 i = (s * B * T) + j, p = t->position + j;
      if (t->input_dtype == WEIR_DTYPE_I64)
        ((gint64 *)input->data)[i] = t->tokens[p];
      else
        ((gint32 *)input->data)[i] = (gint32)t->tokens[p];
      if (ldt == WEIR_DTYPE_I64)
        ((gint64 *)target->data)[i] = t->tokens[p + 1];
      else
        ((gint32 *)target->data)[i] = (gint32)t->tokens[p + 1];
    }
    t->position += B * T;
  }
  g_autoptr(GHashTable) args = g_hash_table_new(g_str_hash, g_str_equal);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, t->state);
  while (g_hash_table_iter_next(&it, &key, &value))
    g_hash_table_insert(args, key, value);
  g_hash_table_insert(args, t->input_name, input);
  g_hash_table_insert(args, t->target_name, target);
  g_hash_table_insert(args, (gpointer) "losses", losses);
  g_autoptr(GHashTable) symbols = weir_bindings_new();
  weir_bindings_set(symbols, "K", k);
  if (!weir_kernel_run(t->kernel, symbols, args, error)) {
    g_prefix_error(error, "%s: training step %" G_GINT64_FORMAT ": ",
                   t->model_path, t->steps + 1);
    return FALSE;
  }
  for (gint64 s = 0; s < k; s++)
    *sum += ((const float *)losses->data)[s];
  t->steps += k;
  return TRUE;
}

gboolean weir_token_trainer_run(WeirTokenTrainer *t, gint64 steps,
                                const char *checkpoint, gint64 every,
                                GError **error) {
  gint64 report = MAX(t->opts.report_every, 1);
  double sum = 0;
  gint64 n = 0, t0 = g_get_monotonic_time(), first = t->steps;
  while (t->steps < steps) {
    gint64 k = MIN(t->opts.steps_per_call, steps - t->steps);
    /* calls end at checkpoint and report steps */
    if (checkpoint && every > 0)
      k = MIN(k, every - t->steps % every);
    k = MIN(k, report - t->steps % report);
    if (!run_call(t, k, &sum, error))
      return FALSE;
    n += k;
    if (checkpoint && every > 0 &&
        (t->steps % every == 0 || t->steps == steps) &&
        !weir_token_trainer_save_checkpoint(t, checkpoint, error))
      return FALSE;
    if (t->opts.progress && (t->steps % report == 0 || t->steps == steps)) {
      double secs = (double)(g_get_monotonic_time() - t0) / 1e6;
      const WeirTensor *sk = g_hash_table_lookup(t->state, "skipped");
      WeirTokenProgress p = {
          .steps = t->steps,
          .loss = sum / (double)n,
          .perplexity = exp(sum / (double)n),
          .skipped = sk ? (gint64)weir_tensor_get(sk, 0) : 0,
          .position = t->position,
          .tokens_per_second =
              secs > 0 ? (double)((t->steps - first) * t->opts.batch *
                                  t->opts.context *
                                  MAX(t->opts.train.accumulate, 1)) /
                             secs
                       : 0,
      };
      t->opts.progress(&p, t->opts.user_data);
      sum = 0;
      n = 0;
    }
  }
  return TRUE;
}

/* ---- checkpoints -------------------------------------------------------- */

static const char magic[8] = {'W', 'E', 'I', 'R', 'C', 'K', 'P', 'T'};

static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The persistent tensors' names, sorted (deterministic files). */
static GPtrArray *sorted_names(GHashTable *state) {
  GPtrArray *names = g_ptr_array_new();
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, state);
  while (g_hash_table_iter_next(&it, &key, NULL))
    g_ptr_array_add(names, key);
  g_ptr_array_sort(names, compare_names);
  return names;
}

gboolean weir_token_trainer_save_checkpoint(WeirTokenTrainer *t,
                                            const char *path, GError **error) {
  g_autoptr(GPtrArray) names = sorted_names(t->state);
  json_object *h = json_object_new_object();
  json_object_object_add(h, "format",
                         json_object_new_string("weir-checkpoint"));
  json_object_object_add(h, "version", json_object_new_int(1));
  json_object_object_add(h, "steps", json_object_new_int64(t->steps));
  json_object_object_add(h, "position", json_object_new_int64(t->position));
  json_object *list = json_object_new_array();
  gsize offset = 0;
  for (guint i = 0; i < names->len; i++) {
    const WeirTensor *v = g_hash_table_lookup(t->state, names->pdata[i]);
    json_object *e = json_object_new_object();
    json_object_object_add(e, "name", json_object_new_string(names->pdata[i]));
    json_object_object_add(e, "dtype",
                           json_object_new_string(weir_dtype_name(v->dtype)));
    json_object *shape = json_object_new_array();
    for (guint d = 0; d < v->rank; d++)
      json_object_array_add(shape, json_object_new_int64(v->shape[d]));
    json_object_object_add(e, "shape", shape);
    json_object_object_add(e, "offset", json_object_new_int64((gint64)offset));
    json_object_object_add(
        e, "nbytes", json_object_new_int64((gint64)weir_tensor_nbytes(v)));
    json_object_array_add(list, e);
    offset += weir_tensor_nbytes(v);
  }
  json_object_object_add(h, "tensors", list);
  const char *text = json_object_to_json_string_ext(h, JSON_C_TO_STRING_PLAIN);
  guint64 hlen = strlen(text);
  GByteArray *buf = g_byte_array_new();
  g_byte_array_append(buf, (const guint8 *)magic, 8);
  guint64 le = GUINT64_TO_LE(hlen);
  g_byte_array_append(buf, (const guint8 *)&le, 8);
  g_byte_array_append(buf, (const guint8 *)text, (guint)hlen);
  json_object_put(h);
  for (guint i = 0; i < names->len; i++) {
    const WeirTensor *v = g_hash_table_lookup(t->state, names->pdata[i]);
    g_byte_array_append(buf, v->data, (guint)weir_tensor_nbytes(v));
  }
  /* PATH.tmp, flushed to disk, then renamed over PATH */
  gboolean ok = g_file_set_contents_full(
      path, (const char *)buf->data, (gssize)buf->len,
      G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_DURABLE, 0644,
      error);
  g_byte_array_unref(buf);
  if (!ok)
    g_prefix_error(error, "checkpoint: ");
  return ok;
}

static gboolean bad_checkpoint(GError **error, const char *path,
                               const char *what) {
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s: %s", path, what);
  return FALSE;
}

gboolean weir_token_trainer_load_checkpoint(WeirTokenTrainer *t,
                                            const char *path, GError **error) {
  g_autofree char *data = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &data, &len, error))
    return FALSE;
  guint64 hlen = 0;
  if (len < 16 || memcmp(data, magic, 8) != 0)
    return bad_checkpoint(error, path, "not a Weir checkpoint");
  memcpy(&hlen, data + 8, 8);
  hlen = GUINT64_FROM_LE(hlen);
  if (hlen > len - 16)
    return bad_checkpoint(error, path, "truncated header");
  g_autofree char *text = g_strndup(data + 16, hlen);
  json_object *h = json_tokener_parse(text);
  if (!h)
    return bad_checkpoint(error, path, "the header is not JSON");
  gboolean ok = FALSE;
  json_object *steps, *position, *list;
  gsize base = 16 + hlen;
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  if (!json_object_object_get_ex(h, "steps", &steps) ||
      !json_object_object_get_ex(h, "position", &position) ||
      !json_object_object_get_ex(h, "tensors", &list) ||
      !json_object_is_type(list, json_type_array)) {
    bad_checkpoint(error, path, "the header lacks steps, position or tensors");
    goto out;
  }
  /* check everything before changing anything */
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < json_object_array_length(list); i++) {
      json_object *e = json_object_array_get_idx(list, i), *f;
      const char *name = json_object_object_get_ex(e, "name", &f)
                             ? json_object_get_string(f)
                             : NULL;
      WeirTensor *v = name ? g_hash_table_lookup(t->state, name) : NULL;
      if (!v) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "%s: tensor '%s' is not part of the training state of %s",
                    path, name ? name : "?", t->model_path);
        goto out;
      }
      gint64 off = json_object_object_get_ex(e, "offset", &f)
                       ? json_object_get_int64(f)
                       : -1;
      gint64 nb = json_object_object_get_ex(e, "nbytes", &f)
                      ? json_object_get_int64(f)
                      : -1;
      const char *dt = json_object_object_get_ex(e, "dtype", &f)
                           ? json_object_get_string(f)
                           : "";
      json_object *shape = NULL;
      gboolean same = nb == (gint64)weir_tensor_nbytes(v) &&
                      !g_strcmp0(dt, weir_dtype_name(v->dtype)) &&
                      json_object_object_get_ex(e, "shape", &shape) &&
                      json_object_array_length(shape) == v->rank;
      for (guint d = 0; same && d < v->rank; d++)
        same = json_object_get_int64(json_object_array_get_idx(shape, d)) ==
               v->shape[d];
      if (!same) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "%s: tensor '%s' has another dtype or shape than in the "
                    "training program of %s",
                    path, name, t->model_path);
        goto out;
      }
      if (off < 0 || (guint64)off + (guint64)nb > len - base) {
        bad_checkpoint(error, path, "truncated data");
        goto out;
      }
      if (pass == 0)
        g_hash_table_add(seen, (gpointer)name);
      else
        memcpy(v->data, data + base + off, (gsize)nb);
    }
    if (pass == 0 && g_hash_table_size(seen) != g_hash_table_size(t->state)) {
      bad_checkpoint(error, path,
                     "some tensor of the training state is missing");
      goto out;
    }
  }
  t->steps = json_object_get_int64(steps);
  t->position = json_object_get_int64(position);
  ok = TRUE;
out:
  json_object_put(h);
  return ok;
}

/* ---- write-back -----------------------------------------------------------
 */

gboolean weir_token_trainer_save_onnx(WeirTokenTrainer *t, const char *path,
                                      GError **error) {
  g_autoptr(GHashTable) values = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < t->forward->containers->len; i++) {
    const WeirContainer *c = t->forward->containers->pdata[i];
    WeirTensor *v = g_hash_table_lookup(t->state, c->name);
    if (c->initial && c->initializer && v)
      g_hash_table_insert(values, c->initializer, v);
  }
  return weir_onnx_save_with_initializers(t->model_path, values, path, error);
}
