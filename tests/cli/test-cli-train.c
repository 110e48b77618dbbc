/* test-cli-train.c — `weir train`, run as a user would run it: a short
 * seeded run on scikit-learn's digits (plain progress lines when stdout is
 * not a terminal, the trained model written), a regression run (--loss mse)
 * on its diabetes data, and bad usage and bad data
 * reported with the file and the problem. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <sys/wait.h>

#include <glib.h>

#include "tmpdir-fixture.h"

#define DIGITS                                                                 \
  "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
#define MLP "samples/models/digits_mlp.onnx"

typedef struct {
  int status;
  char *out;
  char *err;
} Run;

static int setup(void **state) {
  (void)state;
  return tmpdir_setup("weir-cli-train");
}

static int teardown(void **state) {
  (void)state;
  return tmpdir_teardown();
}

static void run_clear(Run *r) {
  g_free(r->out);
  g_free(r->err);
}

/* Runs `weir train` with a NULL-terminated argument list, from the source
 * directory, with one OpenMP thread. */
static Run run_train(const char *first, ...) {
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  g_ptr_array_add(argv, (gpointer)WEIR_CLI);
  g_ptr_array_add(argv, (gpointer) "train");
  va_list ap;
  va_start(ap, first);
  for (const char *a = first; a; a = va_arg(ap, const char *))
    g_ptr_array_add(argv, (gpointer)a);
  va_end(ap);
  g_ptr_array_add(argv, NULL);
  g_auto(GStrv) env =
      g_environ_setenv(g_get_environ(), "OMP_NUM_THREADS", "1", TRUE);
  Run r = {0};
  int wait_status = 0;
  g_autoptr(GError) error = NULL;
  gboolean ok =
      g_spawn_sync(WEIR_SRCDIR, (char **)argv->pdata, env, G_SPAWN_DEFAULT,
                   NULL, NULL, &r.out, &r.err, &wait_status, &error);
  assert_true(ok);
  r.status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  return r;
}

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    if (!strstr((hay), (needle)))                                              \
      fail_msg("expected to find '%s' in:\n%s", (needle), (hay));              \
  } while (0)

static void test_train_digits(void **state) {
  (void)state;
  g_autofree char *out = g_build_filename(tmp_dir, "mlp.onnx", NULL);
  Run r = run_train(MLP, "--data", DIGITS, "--scale", "1/16", "--epochs", "3",
                    "--batch", "32", "--optimizer", "adam", "--lr", "0.01",
                    "--steps-per-call", "5", "--seed", "3", "--threads", "1",
                    "-o", out, NULL);
  if (r.status != 0)
    fail_msg("status %d:\n%s%s", r.status, r.out, r.err);
  assert_contains(r.out, "1797 samples of 64 features, 10 classes (label "
                         "column 64): 1438 for training, 359 held out");
  assert_contains(r.out, "5 steps per call, adam, lr 0.01");
  assert_contains(r.out, "epoch 1/3: loss ");
  assert_contains(r.out, "epoch 3/3: loss ");
  assert_contains(r.out, "held-out accuracy");
  assert_contains(r.out, "trained 132 steps"); /* 3 x floor(1438 / 32) */
  assert_contains(r.out, "wrote ");
  /* not a terminal: plain lines, no carriage returns or escapes */
  assert_null(strchr(r.out, '\r'));
  assert_null(strchr(r.out, '\033'));
  GStatBuf st;
  assert_int_equal(g_stat(out, &st), 0);
  assert_true(st.st_size > 15000);
  run_clear(&r);
}

/* a recipe applied to the training program before it is compiled */
static void test_train_with_recipe(void **state) {
  (void)state;
  g_autofree char *out = g_build_filename(tmp_dir, "recipe.onnx", NULL);
  Run r = run_train(MLP, "--data", DIGITS, "--scale", "1/16", "--epochs", "1",
                    "--optimizer", "adam", "--recipe",
                    "samples/recipes/expand-convs-first.json", "-o", out, NULL);
  if (r.status != 0)
    fail_msg("status %d:\n%s%s", r.status, r.out, r.err);
  assert_contains(r.out, "trained 44 steps");
  run_clear(&r);

  r = run_train(MLP, "--data", DIGITS, "--recipe", "no-such-recipe.json", "-o",
                out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "no-such-recipe.json");
  run_clear(&r);
}

#define SK "/usr/lib/python3/dist-packages/sklearn/datasets/data/"

/* regression: --loss mse on the diabetes data (features and target in two
 * blank-separated gzip'd files), standardized; held-out MSE and R² */
static void test_train_regression(void **state) {
  (void)state;
  g_autofree char *out = g_build_filename(tmp_dir, "diabetes.onnx", NULL);
  Run r = run_train("samples/models/diabetes_mlp.onnx", "--loss", "mse",
                    "--data", SK "diabetes_data_raw.csv.gz", "--target-file",
                    SK "diabetes_target.csv.gz", "--standardize", "--epochs",
                    "10", "--batch", "16", "--optimizer", "adam", "--lr",
                    "0.003", "--seed", "1", "--threads", "1", "-o", out, NULL);
  if (r.status != 0)
    fail_msg("status %d:\n%s%s", r.status, r.out, r.err);
  assert_contains(r.out, "442 samples of 10 features, 1 target (file ");
  assert_contains(r.out, "354 for training, 88 held out, standardized");
  assert_contains(r.out, "epoch 1/10: loss ");
  assert_contains(r.out, "held-out MSE ");
  assert_contains(r.out, "trained 220 steps"); /* 10 x floor(354 / 16) */
  assert_null(strstr(r.out, "accuracy"));
  const char *r2 = strstr(r.out, "R\u00b2 ");
  assert_non_null(r2);
  /* the final summary's R² */
  const char *last = r2;
  while ((r2 = strstr(last + 1, "R\u00b2 ")))
    last = r2;
  double v = g_ascii_strtod(last + strlen("R\u00b2 "), NULL);
  print_message("final held-out R2 %.4f\n", v);
  assert_true(v >= 0.4);
  assert_true(g_file_test(out, G_FILE_TEST_EXISTS));
  run_clear(&r);

  /* several target columns by name; a frozen layer */
  g_autofree char *csv = g_build_filename(tmp_dir, "multi.csv", NULL);
  g_autoptr(GString) text = g_string_new("a,b,c,d,e,f,g,h,i,j,y\n");
  for (int i = 0; i < 40; i++) {
    for (int c = 0; c < 11; c++)
      g_string_append_printf(text, "%s%d", c ? "," : "", (i * 3 + c * 5) % 13);
    g_string_append_c(text, '\n');
  }
  assert_true(g_file_set_contents(csv, text->str, -1, NULL));
  r = run_train("samples/models/diabetes_mlp.onnx", "--loss", "mse", "--data",
                csv, "--target-columns", "y", "--freeze", "^fc1", "--epochs",
                "1", "--batch", "8", "-o", out, NULL);
  if (r.status != 0)
    fail_msg("status %d:\n%s%s", r.status, r.out, r.err);
  assert_contains(r.out, "40 samples of 10 features, 1 target (column y)");
  run_clear(&r);
  r = run_train("samples/models/diabetes_mlp.onnx", "--loss", "mse", "--data",
                csv, "--target-columns", "i,j", "-o", out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "takes 10 values per sample, the data has 9");
  run_clear(&r);
  r = run_train("samples/models/diabetes_mlp.onnx", "--loss", "mse", "--data",
                csv, "--target-columns", "zz", "-o", out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "multi.csv: no target column 'zz'");
  run_clear(&r);
  r = run_train(MLP, "--data", DIGITS, "--target-columns", "y", "-o", out,
                NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "need --loss mse");
  run_clear(&r);
  r = run_train("samples/models/diabetes_mlp.onnx", "--loss", "mse", "--data",
                csv, "--targets", "1", "--target-file", csv, "-o", out, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "give one of");
  run_clear(&r);
}

static void test_usage_and_errors(void **state) {
  (void)state;
  g_autofree char *out = g_build_filename(tmp_dir, "never.onnx", NULL);
  Run r = run_train(MLP, "-o", out, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "usage: weir train");
  run_clear(&r);

  r = run_train(MLP, "--data", DIGITS, "--optimizer", "rmsprop", "-o", out,
                NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "unknown optimizer 'rmsprop'");
  run_clear(&r);

  r = run_train(MLP, "--data", DIGITS, "--scale", "1/0", "-o", out, NULL);
  assert_int_equal(r.status, 2);
  assert_contains(r.err, "--scale 1/0");
  run_clear(&r);

  r = run_train(MLP, "--data", DIGITS, "--label", "pixels", "-o", out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "digits.csv.gz: no label column 'pixels'");
  run_clear(&r);

  /* data that does not fit the model */
  g_autofree char *csv = g_build_filename(tmp_dir, "small.csv", NULL);
  assert_true(g_file_set_contents(csv,
                                  "x,y,label\n1,2,0\n3,4,1\n5,6,0\n"
                                  "7,8,1\n9,10,0\n",
                                  -1, NULL));
  r = run_train(MLP, "--data", csv, "--label", "label", "--batch", "2", "-o",
                out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "takes 64 values per sample, the data has 2 "
                         "features");
  run_clear(&r);

  r = run_train(MLP, "--data", csv, "--val-fraction", "1.5", "-o", out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "validation fraction 1.5 is not in [0, 1)");
  run_clear(&r);

  /* a model with a fixed batch trained with another one */
  r = run_train("samples/models/lenet.onnx", "--data", DIGITS, "--batch", "16",
                "-o", out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "fixed batch of 4");
  run_clear(&r);
  assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_train_digits),
      cmocka_unit_test(test_train_with_recipe),
      cmocka_unit_test(test_train_regression),
      cmocka_unit_test(test_usage_and_errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
