/* test-train-blocks.c — the training-mode building blocks of training
 * programs (issue 16, item 3) against PyTorch: batch normalization in
 * training mode with its running statistics, learning-rate schedules
 * computed from the step counter, gradient clipping by global norm and
 * gradient accumulation; and dropout's counter-based mask.
 *
 * tests/core/data/make-train-blocks.py wrote, for each case of
 * tests/core/data/train-blocks/, a small model (model.onnx), K steps of
 * batches (inputs.npy, targets.npy) and what PyTorch 1.13 computed over
 * them: the loss of each step, the parameters after the first step and
 * after all K, the running statistics after K, and the options in Weir's
 * terms (manifest.json).  Each case runs the training program in the
 * interpreter and as compiled code: all K steps in one call, the first
 * step alone (for SGD: the gradient, recovered as (p - p1) / lr), and the K
 * steps split over two calls (the schedule continues from the step
 * counter).
 *
 * PyTorch cannot give dropout's mask (another generator), so the dropout
 * tests check its statistics (the kept fraction), the scale 1 / (1 - p),
 * that the gradient is exactly the one of the mask the forward used, that
 * the mask is a function of the step counter (K steps in one call or K
 * calls, interpreted or compiled, 1 or 2 threads: bit-identical), and
 * Philox-4x32-10's known-answer vectors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <glib/gstdio.h>
#include <json-c/json.h>
#include <math.h>
#include <string.h>

#include "weir-code.h"
#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-onnx.h"
#include "weir-ops.h"
#include "weir-runtime.h"
#include "weir-tensor-io.h"
#include "weir-train.h"
#include "weir-validate.h"

static char *case_file(const char *name, const char *file) {
  return g_build_filename(WEIR_SRCDIR, "tests", "core", "data", "train-blocks",
                          name, file, NULL);
}

static WeirTensor *load_npy(const char *name, const char *file) {
  g_autofree char *path = case_file(name, file);
  g_autoptr(GError) error = NULL;
  WeirTensor *t = weir_tensor_read_npy(path, &error);
  if (!t)
    fail_msg("%s", error->message);
  return t;
}

/* Rows [from, from + n) of t's first axis. */
static WeirTensor *rows(const WeirTensor *t, gint64 from, gint64 n) {
  g_autofree gint64 *shape = g_memdup2(t->shape, sizeof(gint64) * t->rank);
  shape[0] = n;
  WeirTensor *r = weir_tensor_new(t->dtype, t->rank, shape);
  gsize row = weir_tensor_nbytes(t) / t->shape[0];
  memcpy(r->data, (const char *)t->data + from * row, n * row);
  return r;
}

static const char *container_of(const WeirGraph *g, const char *onnx) {
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g->containers->pdata[i];
    if (g_strcmp0(c->initializer, onnx) == 0)
      return c->name;
  }
  fail_msg("no container for initializer '%s'", onnx);
  return NULL;
}

static json_object *member(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

static void read_options(json_object *m, WeirTrainOptions *o) {
  json_object *opts = member(m, "options"), *v;
  weir_train_options_init(o);
  assert_true(
      weir_loss_from_name(json_object_get_string(member(m, "loss")), &o->loss));
  assert_true(weir_optimizer_from_name(
      json_object_get_string(member(opts, "optimizer")), &o->optimizer));
  o->lr = json_object_get_double(member(opts, "lr"));
  if ((v = member(opts, "momentum")))
    o->momentum = json_object_get_double(v);
  if ((v = member(opts, "lr_schedule")))
    assert_true(
        weir_lr_schedule_from_name(json_object_get_string(v), &o->lr_schedule));
  if ((v = member(opts, "lr_step_size")))
    o->lr_step_size = json_object_get_int64(v);
  if ((v = member(opts, "lr_gamma")))
    o->lr_gamma = json_object_get_double(v);
  if ((v = member(opts, "lr_min")))
    o->lr_min = json_object_get_double(v);
  if ((v = member(opts, "total_steps")))
    o->total_steps = json_object_get_int64(v);
  if ((v = member(opts, "warmup_steps")))
    o->warmup_steps = json_object_get_int64(v);
  if ((v = member(opts, "warmup_start_factor")))
    o->warmup_start_factor = json_object_get_double(v);
  if ((v = member(opts, "clip_grad_norm")))
    o->clip_grad_norm = json_object_get_double(v);
  if ((v = member(opts, "accumulate")))
    o->accumulate = json_object_get_int64(v);
}

static void compare(const char *what, const WeirTensor *got,
                    const WeirTensor *want, double atol, double rtol) {
  assert_int_equal(got->rank, want->rank);
  for (guint d = 0; d < got->rank; d++)
    assert_int_equal(got->shape[d], want->shape[d]);
  for (gint64 i = 0; i < got->count; i++) {
    double a = weir_tensor_get(got, i), b = weir_tensor_get(want, i);
    if (!(fabs(a - b) <= atol + rtol * fabs(b)))
      fail_msg("%s[%" G_GINT64_FORMAT "]: %.9g, PyTorch %.9g", what, i, a, b);
  }
}

/* The state of a run: every argument of prog, parameters and running
 * statistics from the forward program's initializers, the rest zero
 * (input and target set by the caller). */
static GHashTable *initial_state(const WeirGraph *prog, const WeirGraph *fwd,
                                 GHashTable *sym) {
  GHashTable *state = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                            (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) args = weir_codegen_arguments(prog);
  for (guint i = 0; i < args->len; i++) {
    const WeirContainer *c = args->pdata[i];
    if (!strcmp(c->name, "input") || !strcmp(c->name, "target"))
      continue;
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(c->shape->pdata[d], sym, &shape[d], NULL));
    WeirTensor *v = weir_tensor_new(c->dtype, c->shape->len, shape);
    memset(v->data, 0, weir_tensor_nbytes(v));
    const WeirContainer *fc = weir_graph_container(fwd, c->name);
    if (fc && fc->initial) {
      gsize n = 0;
      const void *data = g_bytes_get_data(fc->initial, &n);
      assert_int_equal(n, weir_tensor_nbytes(v));
      memcpy(v->data, data, n);
    }
    g_hash_table_insert(state, g_strdup(c->name), v);
  }
  return state;
}

/* One call of prog over batches [from, from + n) (micro-batches). */
static void run(WeirGraph *prog, gboolean compiled, GHashTable *state,
                const WeirTensor *inputs, const WeirTensor *targets,
                gint64 from, gint64 n, gint64 steps) {
  g_hash_table_replace(state, g_strdup("input"), rows(inputs, from, n));
  g_hash_table_replace(state, g_strdup("target"), rows(targets, from, n));
  {
    const WeirTensor *l = g_hash_table_lookup(state, "losses");
    g_autofree gint64 *shape = g_memdup2(l->shape, sizeof(gint64) * l->rank);
    shape[0] = steps;
    WeirTensor *fresh = weir_tensor_new(l->dtype, l->rank, shape);
    memset(fresh->data, 0, weir_tensor_nbytes(fresh));
    g_hash_table_replace(state, g_strdup("losses"), fresh);
  }
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "K", steps);
  g_autoptr(GError) error = NULL;
  if (compiled) {
    WeirCompileOptions co = {0};
    g_autoptr(WeirKernel) k = weir_kernel_compile(prog, &co, NULL, &error);
    if (!k)
      fail_msg("%s", error->message);
    if (!weir_kernel_run(k, sym, state, &error))
      fail_msg("%s", error->message);
  } else {
    g_autoptr(WeirGraph) x = weir_graph_copy(prog);
    if (!weir_expand_all(x, NULL, NULL, &error) ||
        !weir_interpret(x, sym, state, NULL, &error))
      fail_msg("%s", error->message);
  }
}

/* The trained parameters and running statistics of state `st` written
 * into the ONNX model (weir_onnx_save_with_initializers, as `weir train`
 * does), imported again and run in inference mode on the first batch:
 * PyTorch's eval-mode output of the trained model. */
static void check_written_model(const char *name, const char *model,
                                const WeirGraph *fwd, GHashTable *st,
                                const WeirTensor *inputs) {
  g_autoptr(GHashTable) values = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < fwd->containers->len; i++) {
    const WeirContainer *c = fwd->containers->pdata[i];
    WeirTensor *v = g_hash_table_lookup(st, c->name);
    if (c->initializer && v)
      g_hash_table_insert(values, c->initializer, v);
  }
  g_autofree char *dir = g_dir_make_tmp("weir-train-blocks-XXXXXX", NULL);
  assert_non_null(dir);
  g_autofree char *path = g_build_filename(dir, "trained.onnx", NULL);
  g_autoptr(GError) error = NULL;
  if (!weir_onnx_save_with_initializers(model, values, path, &error))
    fail_msg("%s", error->message);
  g_autoptr(WeirGraph) trained = weir_onnx_import(path, NULL, &error);
  g_unlink(path);
  g_rmdir(dir);
  if (!trained)
    fail_msg("%s", error->message);
  g_autoptr(WeirTensor) want = load_npy(name, "eval_output.npy");
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  g_autoptr(WeirTensor) x = rows(inputs, 0, 1);
  WeirTensor *in = weir_tensor_new(x->dtype, x->rank - 1, x->shape + 1);
  memcpy(in->data, x->data, weir_tensor_nbytes(in));
  g_hash_table_insert(args, g_strdup("input"), in);
  WeirTensor *out = weir_tensor_new(want->dtype, want->rank, want->shape);
  g_hash_table_insert(args, g_strdup("output"), out);
  if (!weir_expand_all(trained, NULL, NULL, &error) ||
      !weir_interpret(trained, NULL, args, NULL, &error))
    fail_msg("%s", error->message);
  g_autofree char *what =
      g_strdup_printf("%s: the written model's eval output", name);
  compare(what, out, want, 1e-5, 1e-4);
}

/* Runs the case: (a) the first step alone, (b) all K steps in one call,
 * (c) the K steps over two calls; compares with PyTorch. */
static void check_case(const char *name, gboolean compiled) {
  g_autofree char *mpath = case_file(name, "manifest.json");
  json_object *m = json_object_from_file(mpath);
  assert_non_null(m);
  g_autoptr(WeirTensor) inputs = load_npy(name, "inputs.npy");
  g_autoptr(WeirTensor) targets = load_npy(name, "targets.npy");
  g_autoptr(WeirTensor) want_losses = load_npy(name, "losses.npy");
  g_autofree char *model = case_file(name, "model.onnx");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) fwd = weir_onnx_import(model, NULL, &error);
  if (!fwd)
    fail_msg("%s", error->message);
  WeirTrainOptions o;
  read_options(m, &o);
  gint64 K = json_object_get_int64(member(m, "steps"));
  gint64 A = o.accumulate > 1 ? o.accumulate : 1;
  g_autoptr(WeirGraph) prog = weir_train_graph(fwd, &o, &error);
  if (!prog)
    fail_msg("%s: %s", name, error->message);
  assert_true(weir_graph_validate(prog, &error));
  json_object *params = member(m, "parameters");
  json_object *buffers = member(m, "buffers");
  g_autoptr(GHashTable) sym1 = weir_bindings_new();
  weir_bindings_set(sym1, "K", 1);

  /* (a) the first step */
  {
    g_autoptr(GHashTable) st = initial_state(prog, fwd, sym1);
    run(prog, compiled, st, inputs, targets, 0, A, 1);
    const WeirTensor *l = g_hash_table_lookup(st, "losses");
    double want = weir_tensor_get(want_losses, 0);
    if (!(fabs(weir_tensor_get(l, 0) - want) <= 1e-5 + 1e-5 * fabs(want)))
      fail_msg("%s: first loss %.9g, PyTorch %.9g", name, weir_tensor_get(l, 0),
               want);
    for (size_t i = 0; i < json_object_array_length(params); i++) {
      const char *onnx =
          json_object_get_string(json_object_array_get_idx(params, i));
      g_autofree char *file = g_strdup_printf("first_%zu.npy", i);
      g_autoptr(WeirTensor) want1 = load_npy(name, file);
      const WeirTensor *got = g_hash_table_lookup(st, container_of(fwd, onnx));
      g_autofree char *what =
          g_strdup_printf("%s: %s after the first step", name, onnx);
      compare(what, got, want1, 2e-6, 1e-4);
      if (o.optimizer == WEIR_OPTIMIZER_SGD &&
          o.lr_schedule == WEIR_LR_CONSTANT && o.warmup_steps == 0) {
        /* the gradient, (p0 - p1) / lr, against PyTorch's */
        const WeirContainer *fc =
            weir_graph_container(fwd, container_of(fwd, onnx));
        const float *p0 = g_bytes_get_data(fc->initial, NULL);
        for (gint64 e = 0; e < got->count; e++) {
          double g = (p0[e] - weir_tensor_get(got, e)) / o.lr;
          double gw = (p0[e] - weir_tensor_get(want1, e)) / o.lr;
          if (!(fabs(g - gw) <= 2e-5 + 1e-4 * fabs(gw)))
            fail_msg("%s: gradient of %s[%" G_GINT64_FORMAT
                     "]: %.9g, PyTorch %.9g",
                     name, onnx, e, g, gw);
        }
      }
    }
  }
  /* (b) K steps in one call, (c) in two calls */
  for (int split = 0; split < 2; split++) {
    g_autoptr(GHashTable) sym = weir_bindings_new();
    weir_bindings_set(sym, "K", K);
    g_autoptr(GHashTable) st = initial_state(prog, fwd, sym1);
    g_autoptr(WeirTensor) losses = NULL;
    if (!split) {
      run(prog, compiled, st, inputs, targets, 0, K * A, K);
      losses = weir_tensor_copy(g_hash_table_lookup(st, "losses"));
    } else {
      gint64 h = K / 2;
      run(prog, compiled, st, inputs, targets, 0, h * A, h);
      g_autoptr(WeirTensor) l1 =
          weir_tensor_copy(g_hash_table_lookup(st, "losses"));
      run(prog, compiled, st, inputs, targets, h * A, (K - h) * A, K - h);
      const WeirTensor *l2 = g_hash_table_lookup(st, "losses");
      gint64 shape = K;
      losses = weir_tensor_new(l1->dtype, 1, &shape);
      for (gint64 i = 0; i < K; i++)
        weir_tensor_set(losses, i,
                        i < h ? weir_tensor_get(l1, i)
                              : weir_tensor_get(l2, i - h));
    }
    g_autofree char *lwhat =
        g_strdup_printf("%s%s: losses", name, split ? " (two calls)" : "");
    compare(lwhat, losses, want_losses, 1e-5, 1e-4);
    assert_int_equal(
        (gint64)weir_tensor_get(g_hash_table_lookup(st, "step"), 0), K);
    assert_int_equal(
        (gint64)weir_tensor_get(g_hash_table_lookup(st, "skipped"), 0), 0);
    for (size_t i = 0; i < json_object_array_length(params); i++) {
      const char *onnx =
          json_object_get_string(json_object_array_get_idx(params, i));
      g_autofree char *file = g_strdup_printf("final_%zu.npy", i);
      g_autoptr(WeirTensor) want = load_npy(name, file);
      g_autofree char *what =
          g_strdup_printf("%s%s: %s after %" G_GINT64_FORMAT " steps", name,
                          split ? " (two calls)" : "", onnx, K);
      compare(what, g_hash_table_lookup(st, container_of(fwd, onnx)), want,
              1e-5, 1e-4);
    }
    for (size_t i = 0; i < json_object_array_length(buffers); i++) {
      const char *onnx =
          json_object_get_string(json_object_array_get_idx(buffers, i));
      g_autofree char *file = g_strdup_printf("buffer_%zu.npy", i);
      g_autoptr(WeirTensor) want = load_npy(name, file);
      g_autofree char *what =
          g_strdup_printf("%s%s: running statistic %s", name,
                          split ? " (two calls)" : "", onnx);
      compare(what, g_hash_table_lookup(st, container_of(fwd, onnx)), want,
              1e-5, 1e-4);
    }
    if (!split && json_object_array_length(buffers) > 0)
      check_written_model(name, model, fwd, st, inputs);
  }
  json_object_put(m);
}

static const char *const cases[] = {
    "accumulate_ce_sgd_clip",
    "accumulate_sgd",
    "bn_conv_momentum",
    "bn_mlp_sgd",
    "clip_adam_cosine",
    "clip_sgd",
    "lr_cosine_adam",
    "lr_step_sgd",
    "lr_warmup_cosine_momentum",
    "lr_warmup_sgd",
    "lr_warmup_step_adam",
};

static void test_interpreted(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    check_case(cases[i], FALSE);
}

static void test_compiled(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    check_case(cases[i], TRUE);
}

/* ------------------------------------------------------------- dropout */

#define DB 256 /* batch */
#define DF 64  /* features */

/* output = Dropout(input * w, ratio) with w [DF] (trained), MSE with
 * reduction none against target 0, SGD. */
static WeirGraph *dropout_program(double ratio, double lr, double seed) {
  g_autoptr(WeirGraph) g = weir_graph_new("drop");
  WeirState *s = weir_graph_add_state(g, "main");
  g_autofree char *shape = g_strdup_printf("%d, %d", DB, DF);
  g_autofree char *full = g_strdup_printf("0:%d, 0:%d", DB, DF);
  g_autofree char *wshape = g_strdup_printf("%d", DF);
  g_autofree char *wfull = g_strdup_printf("0:%d", DF);
  g_assert(
      weir_graph_add_array(g, "input", WEIR_DTYPE_F32, shape, FALSE, NULL));
  WeirContainer *w =
      weir_graph_add_array(g, "w", WEIR_DTYPE_F32, wshape, TRUE, NULL);
  float ones[DF];
  for (int i = 0; i < DF; i++)
    ones[i] = 1;
  g_autoptr(GBytes) b = g_bytes_new(ones, sizeof ones);
  weir_container_set_initial(w, b);
  g_assert(
      weir_graph_add_array(g, "scaled", WEIR_DTYPE_F32, shape, TRUE, NULL));
  g_assert(
      weir_graph_add_array(g, "output", WEIR_DTYPE_F32, shape, FALSE, NULL));
  const char *i2[] = {"in0", "in1", NULL}, *i1[] = {"in0", NULL},
             *o1[] = {"out0", NULL};
  WeirNode *mul = weir_state_add_library(g, s, "mul", "Mul", i2, o1);
  WeirNode *drop = weir_state_add_library(g, s, "drop", "Dropout", i1, o1);
  weir_node_set_attr_float(drop, "ratio", ratio);
  WeirNode *ax = weir_state_add_access(g, s, "input");
  WeirNode *aw = weir_state_add_access(g, s, "w");
  WeirNode *as = weir_state_add_access(g, s, "scaled");
  WeirNode *ao = weir_state_add_access(g, s, "output");
  g_assert(weir_state_add_memlet(g, s, ax->id, NULL, mul->id, "in0", "input",
                                 full, NULL));
  g_assert(weir_state_add_memlet(g, s, aw->id, NULL, mul->id, "in1", "w", wfull,
                                 NULL));
  g_assert(weir_state_add_memlet(g, s, mul->id, "out0", as->id, NULL, "scaled",
                                 full, NULL));
  g_assert(weir_state_add_memlet(g, s, as->id, NULL, drop->id, "in0", "scaled",
                                 full, NULL));
  g_assert(weir_state_add_memlet(g, s, drop->id, "out0", ao->id, NULL, "output",
                                 full, NULL));
  g_autoptr(GError) err = NULL;
  g_assert(weir_op_check_attrs(mul, &err) && weir_op_check_attrs(drop, &err));
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.loss = WEIR_LOSS_MSE;
  o.reduction = WEIR_REDUCTION_NONE;
  o.lr = lr;
  o.dropout_seed = seed;
  WeirGraph *t = weir_train_graph(g, &o, &err);
  if (!t)
    fail_msg("%s", err->message);
  assert_true(weir_graph_validate(t, &err));
  return t;
}

/* The state of the dropout program for K steps: input = 1, target = 0,
 * w = 1, step = step0. */
static GHashTable *dropout_state(gint64 K, gint64 step0) {
  GHashTable *st = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                         (GDestroyNotify)weir_tensor_free);
  gint64 x[3] = {K, DB, DF}, wsh = DF, one = 1;
  WeirTensor *in = weir_tensor_new(WEIR_DTYPE_F32, 3, x);
  WeirTensor *t = weir_tensor_new(WEIR_DTYPE_F32, 3, x);
  WeirTensor *l = weir_tensor_new(WEIR_DTYPE_F32, 3, x);
  WeirTensor *w = weir_tensor_new(WEIR_DTYPE_F32, 1, &wsh);
  WeirTensor *step = weir_tensor_new(WEIR_DTYPE_I64, 1, &one);
  WeirTensor *skipped = weir_tensor_new(WEIR_DTYPE_I64, 1, &one);
  for (gint64 i = 0; i < in->count; i++) {
    weir_tensor_set(in, i, 1);
    weir_tensor_set(t, i, 0);
    weir_tensor_set(l, i, 0);
  }
  for (gint64 i = 0; i < DF; i++)
    weir_tensor_set(w, i, 1);
  weir_tensor_set(step, 0, (double)step0);
  weir_tensor_set(skipped, 0, 0);
  g_hash_table_insert(st, g_strdup("input"), in);
  g_hash_table_insert(st, g_strdup("target"), t);
  g_hash_table_insert(st, g_strdup("losses"), l);
  g_hash_table_insert(st, g_strdup("w"), w);
  g_hash_table_insert(st, g_strdup("step"), step);
  g_hash_table_insert(st, g_strdup("skipped"), skipped);
  return st;
}

/* Runs K steps (interpreted, or compiled with `threads` threads); returns
 * the losses [K, DB, DF] (transfer full) and w after the steps in *w_out. */
static WeirTensor *dropout_run(WeirGraph *t, gint64 K, gint64 step0,
                               int threads, WeirTensor **w_out) {
  g_autoptr(GHashTable) st = dropout_state(K, step0);
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "K", K);
  g_autoptr(GError) err = NULL;
  if (threads > 0) {
    WeirCompileOptions co = {0};
    g_autoptr(WeirKernel) k = weir_kernel_compile(t, &co, NULL, &err);
    if (!k)
      fail_msg("%s", err->message);
    if (!weir_kernel_set_threads(k, threads, &err))
      fail_msg("%s", err->message);
    if (!weir_kernel_run(k, sym, st, &err))
      fail_msg("%s", err->message);
  } else {
    g_autoptr(WeirGraph) x = weir_graph_copy(t);
    if (!weir_expand_all(x, NULL, NULL, &err) ||
        !weir_interpret(x, sym, st, NULL, &err))
      fail_msg("%s", err->message);
  }
  assert_int_equal((gint64)weir_tensor_get(g_hash_table_lookup(st, "step"), 0),
                   step0 + K);
  if (w_out)
    *w_out = weir_tensor_copy(g_hash_table_lookup(st, "w"));
  return weir_tensor_copy(g_hash_table_lookup(st, "losses"));
}

static gboolean same_bits(const WeirTensor *a, const WeirTensor *b, gsize off,
                          gsize n) {
  return memcmp((const char *)a->data + off, (const char *)b->data, n) == 0;
}

/* The kept fraction and the scale; the gradient of w is exactly that of
 * the mask the forward pass used (recovered from the per-element losses,
 * mask^2 with input = w = 1). */
static void test_dropout_statistics(void **state) {
  (void)state;
  const double ratios[] = {0.1, 0.25, 0.5};
  for (guint r = 0; r < G_N_ELEMENTS(ratios); r++) {
    double p = ratios[r], lr = 1e-3;
    g_autoptr(WeirGraph) t = dropout_program(p, lr, 7);
    g_autoptr(WeirTensor) w = NULL;
    g_autoptr(WeirTensor) losses = dropout_run(t, 1, 0, 1, &w);
    float scale = (float)(1 / (1 - p)), sq = scale * scale;
    gint64 kept = 0;
    for (int f = 0; f < DF; f++) {
      double sum = 0; /* sum over the batch of mask^2 */
      for (int i = 0; i < DB; i++) {
        float l = (float)weir_tensor_get(losses, (gint64)i * DF + f);
        if (l != 0) {
          assert_true(l == sq); /* kept: scaled by exactly 1 / (1 - p) */
          kept++;
          sum += l;
        }
      }
      /* d/dw sum (x w m)^2 = 2 sum m^2 (x = w = 1); one mask element
       * different would move it by 2 scale^2, far above the f32 rounding
       * of the sum */
      double grad = (1 - weir_tensor_get(w, f)) / lr, want = 2 * sum;
      if (!(fabs(grad - want) <= 1e-5 * want + 1e-3))
        fail_msg("ratio %g: gradient of w[%d] %.9g, from the mask %.9g", p, f,
                 grad, want);
    }
    double frac = (double)kept / (DB * DF);
    /* 16384 draws: the standard deviation of the fraction is <= 0.004 */
    if (!(fabs(frac - (1 - p)) < 0.02))
      fail_msg("ratio %g: kept %.4f of the elements", p, frac);
  }
}

/* The mask is a function of (seed, step counter, element): K steps in one
 * call equal K calls of one step; interpreted, compiled with 1 and with 2
 * threads: bit-identical; different at every step and for another seed. */
static void test_dropout_reproducible(void **state) {
  (void)state;
  const gint64 K = 3;
  gsize per = sizeof(float) * DB * DF;
  g_autoptr(WeirGraph) t = dropout_program(0.5, 0, 11);
  g_autoptr(WeirTensor) one = dropout_run(t, K, 0, 1, NULL);
  g_autoptr(WeirTensor) two = dropout_run(t, K, 0, 2, NULL);
  g_autoptr(WeirTensor) interp = dropout_run(t, K, 0, 0, NULL);
  assert_true(same_bits(one, two, 0, per * K));
  assert_true(same_bits(one, interp, 0, per * K));
  for (gint64 k = 0; k < K; k++) {
    g_autoptr(WeirTensor) single = dropout_run(t, 1, k, 2, NULL);
    assert_true(same_bits(one, single, per * k, per));
    if (k > 0)
      assert_false(same_bits(one, single, 0, per));
  }
  g_autoptr(WeirGraph) t2 = dropout_program(0.5, 0, 12);
  g_autoptr(WeirTensor) other = dropout_run(t2, 1, 0, 1, NULL);
  assert_false(same_bits(one, other, 0, per));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_interpreted),
      cmocka_unit_test(test_compiled),
      cmocka_unit_test(test_dropout_statistics),
      cmocka_unit_test(test_dropout_reproducible),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
