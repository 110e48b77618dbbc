/* test-train-regression.c — regression with the compiled training program:
 * samples/models/diabetes_mlp.onnx trained with mse on scikit-learn's
 * diabetes data as packaged by Debian (python3-sklearn; 10 blank-separated
 * feature columns in one file, the target in another), standardized,
 * seeded.  The held-out R² must be clearly better than predicting the mean
 * (>= 0.4; scikit-learn's LinearRegression reaches 0.46 on average over
 * random 80/20 splits, docs/training.md); the host-side MSE and R² are
 * checked against a recomputation from the predictions; the model written
 * back agrees with Weir's evaluation program in python3-onnx + NumPy; and
 * the trainer refuses targets that do not fit the output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "weir-tensor-io.h"
#include "weir-trainer.h"

#include "numpy-check.h"
#include "tmpdir-fixture.h"

#define SK "/usr/lib/python3/dist-packages/sklearn/datasets/data/"
#define MODEL WEIR_SRCDIR "/samples/models/diabetes_mlp.onnx"

static int setup(void **state) {
  (void)state;
  return tmpdir_setup("weir-train-regression");
}

static int teardown(void **state) {
  (void)state;
  return tmpdir_teardown();
}

static void progress(const WeirTrainProgress *p, gpointer user_data) {
  int *epochs_seen = user_data;
  if (!p->epoch_done)
    return;
  (*epochs_seen)++;
  /* a regression run reports MSE and R², not an accuracy */
  assert_true(p->val_accuracy < 0);
  assert_false(isnan(p->val_r2));
  print_message("  epoch %" G_GINT64_FORMAT ": loss %.4f, held-out MSE %.1f, "
                "R2 %.4f\n",
                p->epoch, p->epoch_loss, p->val_loss, p->val_r2);
}

/* The diabetes data, shuffled with seed 1, split 80/20, standardized. */
static void load_split(WeirDataset **train, WeirDataset **val) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) d =
      weir_dataset_load_targets(SK "diabetes_data_raw.csv.gz", NULL, 0, &error);
  if (!d ||
      !weir_dataset_attach_targets(d, SK "diabetes_target.csv.gz", &error))
    fail_msg("%s", error->message);
  weir_dataset_shuffle(d, 1);
  assert_true(weir_dataset_split(d, 0.2, train, val, &error));
  weir_dataset_standardize(*train, *val, TRUE, TRUE);
}

static void test_diabetes(void **state) {
  (void)state;
  WeirDataset *a = NULL, *b = NULL;
  load_split(&a, &b);
  g_autoptr(WeirDataset) train = a;
  g_autoptr(WeirDataset) val = b;
  g_autoptr(GError) error = NULL;

  WeirTrainerOptions o;
  weir_trainer_options_init(&o);
  o.train.loss = WEIR_LOSS_MSE;
  o.train.optimizer = WEIR_OPTIMIZER_ADAM;
  o.train.lr = 0.003;
  o.epochs = 10;
  o.batch = 16;
  o.steps_per_call = 4;
  o.seed = 1;
  o.threads = 1; /* the machine running the tests is shared */
  int epochs_seen = 0;
  o.progress = progress;
  o.user_data = &epochs_seen;
  g_autoptr(WeirTrainer) t = weir_trainer_new(MODEL, 10, &o, &error);
  if (!t)
    fail_msg("%s", error->message);
  assert_true(weir_trainer_is_regression(t));
  assert_int_equal(weir_trainer_n_classes(t), 1);

  /* a classification figure is refused for an mse model */
  assert_false(weir_trainer_evaluate(t, val, NULL, NULL, &error));
  assert_non_null(strstr(error->message, "mse"));
  g_clear_error(&error);

  double mse0 = 0, r20 = 0;
  assert_true(weir_trainer_evaluate_regression(t, val, &mse0, &r20, &error));
  gint64 t0 = g_get_monotonic_time();
  if (!weir_trainer_fit(t, train, val, &error))
    fail_msg("%s", error->message);
  double secs = (double)(g_get_monotonic_time() - t0) / 1e6;
  double mse = 0, r2 = 0;
  assert_true(weir_trainer_evaluate_regression(t, val, &mse, &r2, &error));
  print_message("diabetes_mlp: held-out MSE %.1f, R2 %.4f (before: MSE %.1f, "
                "R2 %.4f); %" G_GINT64_FORMAT " steps in %.2f s\n",
                mse, r2, mse0, r20, weir_trainer_steps(t), secs);
  assert_int_equal(epochs_seen, 10);
  assert_true(r2 > r20 + 0.3);
  assert_true(r2 >= 0.4);
  assert_int_equal(weir_trainer_steps(t), 10 * (train->n_samples / 16));
  assert_int_equal(weir_trainer_skipped(t), 0);

  /* MSE and R² recomputed here from the predictions, in original units */
  gint64 n = val->n_samples;
  gint64 xs[2] = {n, 10}, ys[2] = {n, 1};
  g_autoptr(WeirTensor) x = weir_tensor_new(WEIR_DTYPE_F32, 2, xs);
  g_autoptr(WeirTensor) y = weir_tensor_new(WEIR_DTYPE_F32, 2, ys);
  weir_dataset_gather(val, NULL, 0, n, x->data, NULL);
  assert_true(weir_trainer_predict(t, val, y->data, &error));
  const float *p = y->data;
  double m = val->target_mean[0], sd = val->target_std[0], mean = 0;
  for (gint64 i = 0; i < n; i++)
    mean += val->targets[i] * sd + m;
  mean /= (double)n;
  double sse = 0, sst = 0;
  for (gint64 i = 0; i < n; i++) {
    double truth = val->targets[i] * sd + m;
    sse += (p[i] * sd + m - truth) * (p[i] * sd + m - truth);
    sst += (truth - mean) * (truth - mean);
  }
  assert_float_equal(mse, sse / (double)n, 1e-6 * mse);
  assert_float_equal(r2, 1 - sse / sst, 1e-9);
  /* diabetes targets are 25..346: an MSE in original units, not ~0.5 */
  assert_true(mse > 1000);

  /* the model written back computes the same predictions */
  g_autofree char *out = g_build_filename(tmp_dir, "trained.onnx", NULL);
  if (!weir_trainer_save_onnx(t, out, &error))
    fail_msg("%s", error->message);
  g_autofree char *xp = g_build_filename(tmp_dir, "x.npy", NULL);
  g_autofree char *yp = g_build_filename(tmp_dir, "y.npy", NULL);
  assert_true(weir_tensor_write_npy(x, xp, &error));
  assert_true(weir_tensor_write_npy(y, yp, &error));
  assert_int_equal(onnx_numpy_check(out, xp, yp, "1e-3", "1e-4"), 0);
  assert_int_equal(onnx_numpy_check(MODEL, xp, yp, "1e-3", "1e-4"), 1);
}

/* Targets that do not fit the model's output are refused, naming both. */
static void test_target_mismatch(void **state) {
  (void)state;
  g_autofree char *path = g_build_filename(tmp_dir, "two.csv", NULL);
  g_autoptr(GString) text = g_string_new(NULL);
  for (int i = 0; i < 40; i++) {
    for (int c = 0; c < 12; c++)
      g_string_append_printf(text, "%s%d", c ? "," : "", (i * 7 + c) % 11);
    g_string_append_c(text, '\n');
  }
  g_autoptr(GError) error = NULL;
  assert_true(g_file_set_contents(path, text->str, -1, &error));
  g_autoptr(WeirDataset) d = weir_dataset_load_targets(path, NULL, 2, &error);
  assert_non_null(d);
  WeirTrainerOptions o;
  weir_trainer_options_init(&o);
  o.train.loss = WEIR_LOSS_MSE;
  o.batch = 8;
  o.threads = 1;
  g_autoptr(WeirTrainer) t = weir_trainer_new(MODEL, 10, &o, &error);
  if (!t)
    fail_msg("%s", error->message);
  assert_false(weir_trainer_fit(t, d, NULL, &error));
  assert_non_null(strstr(error->message, "two.csv"));
  assert_non_null(strstr(error->message, "2 targets per sample"));
  assert_non_null(strstr(error->message, "diabetes_mlp.onnx"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_diabetes),
      cmocka_unit_test(test_target_mismatch),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
