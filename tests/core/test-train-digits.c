/* test-train-digits.c — a real training run: the digits MLP and the small
 * digits CNN (samples/models/digits_*.onnx) trained with the compiled
 * training program on scikit-learn's handwritten digits as packaged by
 * Debian (python3-sklearn), seeded, reach at least 95% accuracy on the
 * held-out 20%; the model written back as ONNX is accepted by python3-onnx
 * and its NumPy evaluation gives the logits Weir's evaluation program
 * gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <glib/gstdio.h>
#include <string.h>

#include "weir-tensor-io.h"
#include "weir-trainer.h"

#include "numpy-check.h"
#include "tmpdir-fixture.h"

#define DIGITS                                                                 \
  "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"

static int setup(void **state) {
  (void)state;
  return tmpdir_setup("weir-train-digits");
}

static int teardown(void **state) {
  (void)state;
  return tmpdir_teardown();
}

typedef struct {
  const char *model;
  guint rank; /* of the model's input */
  WeirOptimizer optimizer;
  double lr;
  gint64 epochs, batch, k;
  gboolean supported; /* FALSE: the training side cannot build it yet */
} Case;

static void progress(const WeirTrainProgress *p, gpointer user_data) {
  (void)user_data;
  if (p->epoch_done)
    print_message("  epoch %" G_GINT64_FORMAT ": loss %.4f, held-out %.2f%%, "
                  "%.0f samples/s\n",
                  p->epoch, p->epoch_loss, 100 * p->val_accuracy,
                  p->samples_per_second);
}

static void train_case(void **state) {
  const Case *c = *state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) data = weir_dataset_load(DIGITS, NULL, &error);
  if (!data)
    fail_msg("%s", error->message);
  weir_dataset_scale(data, 1.0 / 16);
  weir_dataset_shuffle(data, 1);
  WeirDataset *train_set = NULL, *val_set = NULL;
  assert_true(weir_dataset_split(data, 0.2, &train_set, &val_set, &error));
  g_autoptr(WeirDataset) train = train_set;
  g_autoptr(WeirDataset) val = val_set;

  g_autofree char *model =
      g_strdup_printf("%s/samples/models/%s.onnx", WEIR_SRCDIR, c->model);
  WeirTrainerOptions o;
  weir_trainer_options_init(&o);
  o.train.optimizer = c->optimizer;
  o.train.lr = c->lr;
  o.epochs = c->epochs;
  o.batch = c->batch;
  o.steps_per_call = c->k;
  o.seed = 1;
  o.progress = progress;
  gint64 t0 = g_get_monotonic_time();
  o.threads = 1; /* the machine running the tests is shared */
  g_autoptr(WeirTrainer) t = weir_trainer_new(model, 64, &o, &error);
  if (!c->supported) {
    if (t)
      fail_msg("%s: the trainer now builds this model: mark it supported in "
               "test-train-digits.c",
               c->model);
    print_message("%s: not covered by the training side yet: %s\n", c->model,
                  error->message);
    g_clear_error(&error); /* skip() does not return */
    g_clear_pointer(&model, g_free);
    g_clear_pointer(&val, weir_dataset_free);
    g_clear_pointer(&train, weir_dataset_free);
    g_clear_pointer(&data, weir_dataset_free);
    skip();
  }
  if (!t)
    fail_msg("%s", error->message);
  double compile_s = (double)(g_get_monotonic_time() - t0) / 1e6;

  /* before training: about chance */
  double acc0 = 0;
  assert_true(weir_trainer_evaluate(t, val, &acc0, NULL, &error));
  assert_true(acc0 < 0.5);

  t0 = g_get_monotonic_time();
  if (!weir_trainer_fit(t, train, val, &error))
    fail_msg("%s", error->message);
  double train_s = (double)(g_get_monotonic_time() - t0) / 1e6;
  double acc = 0, loss = 0;
  assert_true(weir_trainer_evaluate(t, val, &acc, &loss, &error));
  print_message("%s: held-out accuracy %.2f%% (before: %.2f%%), loss %.4f; "
                "build+compile %.2f s, %" G_GINT64_FORMAT " steps in %.2f s\n",
                c->model, 100 * acc, 100 * acc0, loss, compile_s,
                weir_trainer_steps(t), train_s);
  assert_true(acc >= 0.95);
  assert_int_equal(weir_trainer_steps(t),
                   c->epochs * (train->n_samples / c->batch));
  assert_int_equal(weir_trainer_skipped(t), 0);

  /* the model written back: python3-onnx loads it and agrees with Weir */
  g_autofree char *out = g_build_filename(tmp_dir, "trained.onnx", NULL);
  if (!weir_trainer_save_onnx(t, out, &error))
    fail_msg("%s", error->message);
  gint64 n = val->n_samples, classes = weir_trainer_n_classes(t);
  gint64 in_shape[4] = {n, 64, 0, 0};
  if (c->rank == 4) {
    in_shape[1] = 1;
    in_shape[2] = in_shape[3] = 8;
  }
  g_autoptr(WeirTensor) x = weir_tensor_new(WEIR_DTYPE_F32, c->rank, in_shape);
  weir_dataset_gather(val, NULL, 0, n, x->data, NULL);
  gint64 out_shape[2] = {n, classes};
  g_autoptr(WeirTensor) y = weir_tensor_new(WEIR_DTYPE_F32, 2, out_shape);
  assert_true(weir_trainer_predict(t, val, y->data, &error));
  g_autofree char *xp = g_build_filename(tmp_dir, "x.npy", NULL);
  g_autofree char *yp = g_build_filename(tmp_dir, "y.npy", NULL);
  assert_true(weir_tensor_write_npy(x, xp, &error));
  assert_true(weir_tensor_write_npy(y, yp, &error));
  assert_int_equal(onnx_numpy_check(out, xp, yp, "1e-3", "1e-4"), 0);
  /* the original model does not give these logits */
  assert_int_equal(onnx_numpy_check(model, xp, yp, "1e-3", "1e-4"), 1);
}

static const Case cases[] = {
    {"digits_mlp", 2, WEIR_OPTIMIZER_ADAM, 0.01, 10, 32, 4, TRUE},
    {"digits_cnn", 4, WEIR_OPTIMIZER_ADAM, 0.01, 8, 32, 1, TRUE},
};

int main(void) {
  struct CMUnitTest tests[G_N_ELEMENTS(cases)];
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    tests[i] = (struct CMUnitTest){cases[i].model, train_case, NULL, NULL,
                                   (void *)&cases[i]};
  return _cmocka_run_group_tests("test-train-digits", tests,
                                 G_N_ELEMENTS(cases), setup, teardown);
}
