/* test-dataset.c — data sets for training: CSV (plain and gzip'd), .npy,
 * label columns, regression targets (columns, a second file, blank-
 * separated CSV, standardization), errors naming file and line, scaling,
 * seeded shuffle and the held-out split.  scikit-learn's digits as packaged by
 * Debian (python3-sklearn) is read as the real gzip'd file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <gio/gio.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "weir-dataset.h"
#include "weir-tensor-io.h"

#include "tmpdir-fixture.h"

#define DIGITS                                                                 \
  "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"

static int setup(void **state) {
  (void)state;
  return tmpdir_setup("weir-dataset");
}

static int teardown(void **state) {
  (void)state;
  return tmpdir_teardown();
}

static char *write_text(const char *name, const char *text) {
  char *path = g_build_filename(tmp_dir, name, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_file_set_contents(path, text, -1, &error))
    fail_msg("%s", error->message);
  return path;
}

/* Loads text written to name, expecting an error that contains want. */
static void assert_load_fails(const char *name, const char *text,
                              const char *label, const char *want) {
  g_autofree char *path = write_text(name, text);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) d = weir_dataset_load(path, label, &error);
  assert_null(d);
  assert_non_null(error);
  if (!strstr(error->message, want) || !strstr(error->message, name))
    fail_msg("error '%s' lacks '%s' or the file name", error->message, want);
}

static void test_csv_plain(void **state) {
  (void)state;
  g_autofree char *path =
      write_text("plain.csv", "1,2,3,0\n\n 4.5 , -6,7e1, 2\r\n8,9,10,1\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) d = weir_dataset_load(path, NULL, &error);
  assert_non_null(d);
  assert_int_equal(d->n_samples, 3);
  assert_int_equal(d->n_features, 3);
  assert_int_equal(d->n_classes, 3);
  assert_string_equal(d->label_column, "3");
  const float want[] = {1, 2, 3, 4.5f, -6, 70, 8, 9, 10};
  for (int i = 0; i < 9; i++)
    assert_true(d->features[i] == want[i]);
  assert_int_equal(d->labels[0], 0);
  assert_int_equal(d->labels[1], 2);
  assert_int_equal(d->labels[2], 1);
}

static void test_csv_header_and_label_choice(void **state) {
  (void)state;
  g_autofree char *path = write_text("header.csv", "a,class,b\n1,3,2\n5,0,6\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) d = weir_dataset_load(path, "class", &error);
  assert_non_null(d);
  assert_int_equal(d->n_samples, 2);
  assert_int_equal(d->n_features, 2);
  assert_string_equal(d->label_column, "class");
  assert_true(d->features[0] == 1 && d->features[1] == 2);
  assert_true(d->features[2] == 5 && d->features[3] == 6);
  assert_int_equal(d->labels[0], 3);
  assert_int_equal(d->n_classes, 4);

  /* the same column by index, and counted from the end */
  g_autoptr(WeirDataset) by_index = weir_dataset_load(path, "1", &error);
  assert_non_null(by_index);
  assert_int_equal(by_index->labels[0], 3);
  g_autoptr(WeirDataset) from_end = weir_dataset_load(path, "-2", &error);
  assert_non_null(from_end);
  assert_int_equal(from_end->labels[1], 0);
  assert_string_equal(from_end->label_column, "class");
}

static void test_csv_errors(void **state) {
  (void)state;
  assert_load_fails("word.csv", "1,2\n3,x\n", NULL,
                    "word.csv:2: column 1: 'x' is not a number");
  assert_load_fails("ragged.csv", "1,2,0\n3,4\n", NULL,
                    "ragged.csv:2: 2 columns, expected 3");
  assert_load_fails("frac.csv", "1,2,0\n3,4,1.5\n", NULL,
                    "frac.csv: 2: label 1.5 is not a class index");
  assert_load_fails("neg.csv", "1,-1\n", NULL, "label -1 is not a class");
  assert_load_fails("name.csv", "a,b\n1,0\n", "c", "no label column 'c'");
  assert_load_fails("range.csv", "1,2,0\n", "3",
                    "label column 3 is out of "
                    "range (3 columns)");
  assert_load_fails("noheader.csv", "1,2,0\n", "label",
                    "the file has no header");
  assert_load_fails("empty.csv", "\n\n", NULL, "no data rows");
  assert_load_fails("one.csv", "1\n2\n", NULL, "1 column");
  assert_load_fails("data.txt", "1,0\n", NULL, "unknown data format");

  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) d =
      weir_dataset_load("/nonexistent/x.csv", NULL, &error);
  assert_null(d);
  assert_int_equal(error->code, WEIR_ERROR_IO);
  assert_non_null(strstr(error->message, "/nonexistent/x.csv"));
}

static void test_csv_gzip(void **state) {
  (void)state;
  /* a small file compressed here with GIO's compressor */
  const char *text = "0.5,1,1\n2,3,0\n";
  g_autoptr(GZlibCompressor) z =
      g_zlib_compressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP, -1);
  guint8 out[256];
  gsize read = 0, written = 0;
  g_autoptr(GError) error = NULL;
  GConverterResult r =
      g_converter_convert(G_CONVERTER(z), text, strlen(text), out, sizeof out,
                          G_CONVERTER_INPUT_AT_END, &read, &written, &error);
  assert_int_equal(r, G_CONVERTER_FINISHED);
  g_autofree char *path = g_build_filename(tmp_dir, "small.csv.gz", NULL);
  assert_true(
      g_file_set_contents(path, (const char *)out, (gssize)written, &error));
  g_autoptr(WeirDataset) d = weir_dataset_load(path, NULL, &error);
  assert_non_null(d);
  assert_int_equal(d->n_samples, 2);
  assert_true(d->features[0] == 0.5f && d->features[3] == 3);
  assert_int_equal(d->labels[0], 1);

  /* not gzip data behind a .gz name */
  assert_load_fails("bad.csv.gz", "1,0\n", NULL, "bad.csv.gz");
}

static void test_digits(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) d = weir_dataset_load(DIGITS, NULL, &error);
  if (!d)
    fail_msg("%s", error->message);
  assert_int_equal(d->n_samples, 1797);
  assert_int_equal(d->n_features, 64);
  assert_int_equal(d->n_classes, 10);
  /* the first image starts 0,0,5,13,9,1 and is a zero; the second a one */
  assert_true(d->features[2] == 5 && d->features[3] == 13);
  assert_int_equal(d->labels[0], 0);
  assert_int_equal(d->labels[1], 1);
  float max = 0;
  gint64 counts[10] = {0};
  for (gint64 i = 0; i < d->n_samples * 64; i++)
    max = MAX(max, d->features[i]);
  for (gint64 i = 0; i < d->n_samples; i++)
    counts[d->labels[i]]++;
  assert_true(max == 16);
  for (int c = 0; c < 10; c++)
    assert_in_range(counts[c], 170, 190);
  weir_dataset_scale(d, 1.0 / 16);
  assert_true(d->features[3] == 13.0f / 16);
}

static void test_npy(void **state) {
  (void)state;
  gint64 shape[2] = {3, 3};
  g_autoptr(WeirTensor) t = weir_tensor_new(WEIR_DTYPE_F64, 2, shape);
  const double v[] = {2, 0.25, 0.5, 0, 1, 2, 1, -3, 4};
  memcpy(t->data, v, sizeof v);
  g_autofree char *path = g_build_filename(tmp_dir, "data.npy", NULL);
  g_autoptr(GError) error = NULL;
  assert_true(weir_tensor_write_npy(t, path, &error));
  g_autoptr(WeirDataset) d = weir_dataset_load(path, "0", &error);
  assert_non_null(d);
  assert_int_equal(d->n_samples, 3);
  assert_int_equal(d->n_features, 2);
  assert_int_equal(d->labels[0], 2);
  assert_int_equal(d->labels[2], 1);
  assert_true(d->features[0] == 0.25f && d->features[5] == 4);

  /* rank 1 is refused; so is a fractional label */
  gint64 n = 4;
  g_autoptr(WeirTensor) flat = weir_tensor_new(WEIR_DTYPE_F32, 1, &n);
  g_autofree char *flat_path = g_build_filename(tmp_dir, "flat.npy", NULL);
  assert_true(weir_tensor_write_npy(flat, flat_path, &error));
  g_autoptr(WeirDataset) none = weir_dataset_load(flat_path, NULL, &error);
  assert_null(none);
  assert_non_null(strstr(error->message, "2-D array"));
  g_clear_error(&error);
  g_autoptr(WeirDataset) frac = weir_dataset_load(path, "1", &error);
  assert_null(frac);
  assert_non_null(strstr(error->message, "row 0: label 0.25"));
}

/* Regression targets: columns by header name and index (in the order
 * given), the last N columns, blank-separated CSV, errors. */
static void test_csv_targets(void **state) {
  (void)state;
  g_autofree char *path =
      write_text("reg.csv", "a,b,y1,c,y2\n1,2,10,3,20\n4,5,40,6,50\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) d =
      weir_dataset_load_targets(path, "y2, 2", 0, &error);
  assert_non_null(d);
  assert_int_equal(d->n_samples, 2);
  assert_int_equal(d->n_features, 3);
  assert_int_equal(d->n_targets, 2);
  assert_string_equal(d->label_column, "y2,y1");
  const float f[] = {1, 2, 3, 4, 5, 6}, y[] = {20, 10, 50, 40};
  for (int i = 0; i < 6; i++)
    assert_true(d->features[i] == f[i]);
  for (int i = 0; i < 4; i++)
    assert_true(d->targets[i] == y[i]);

  g_autoptr(WeirDataset) last =
      weir_dataset_load_targets(path, NULL, 2, &error);
  assert_non_null(last);
  assert_int_equal(last->n_features, 3);
  assert_int_equal(last->n_targets, 2);
  assert_true(last->targets[0] == 3 && last->targets[1] == 20);
  assert_string_equal(last->label_column, "c,y2");

  /* blanks as separators when the first line has no comma */
  g_autofree char *blank =
      write_text("blank.csv", "x1 x2\ty\n1  2 3\n 4\t5 6 \n");
  g_autoptr(WeirDataset) b = weir_dataset_load_targets(blank, "y", 0, &error);
  assert_non_null(b);
  assert_int_equal(b->n_features, 2);
  assert_true(b->features[2] == 4 && b->features[3] == 5);
  assert_true(b->targets[0] == 3 && b->targets[1] == 6);

  g_autoptr(WeirDataset) e1 = weir_dataset_load_targets(path, "z", 0, &error);
  assert_null(e1);
  assert_non_null(strstr(error->message, "no target column 'z'"));
  assert_non_null(strstr(error->message, "reg.csv"));
  g_clear_error(&error);
  g_autoptr(WeirDataset) e2 =
      weir_dataset_load_targets(path, "y1,2", 0, &error);
  assert_null(e2);
  assert_non_null(strstr(error->message, "given twice"));
  g_clear_error(&error);
  g_autoptr(WeirDataset) e3 = weir_dataset_load_targets(path, NULL, 5, &error);
  assert_null(e3);
  assert_non_null(strstr(error->message, "no feature is left"));
  g_clear_error(&error);
  g_autoptr(WeirDataset) e4 = weir_dataset_load_targets(path, NULL, 6, &error);
  assert_null(e4);
  assert_non_null(strstr(error->message, "6 target columns"));
  g_clear_error(&error);
  g_autofree char *nan = write_text("nan.csv", "1,2\n3,nan\n");
  g_autoptr(WeirDataset) e5 = weir_dataset_load_targets(nan, NULL, 1, &error);
  assert_null(e5);
  assert_non_null(
      strstr(error->message, "nan.csv: 2: target nan is not finite"));
}

/* Targets from a second file (CSV and a 1-D .npy); the packaged diabetes
 * data (blank-separated, gzip'd); shuffling and splitting keep each
 * sample's targets with its features. */
static void test_target_file(void **state) {
  (void)state;
  g_autofree char *xs = write_text("x.csv", "1,2\n3,4\n5,6\n");
  g_autofree char *ys = write_text("y.csv", "10,11\n30,31\n50,51\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) d = weir_dataset_load_targets(xs, NULL, 0, &error);
  assert_non_null(d);
  assert_int_equal(d->n_features, 2);
  assert_int_equal(d->n_targets, 0);
  assert_true(weir_dataset_attach_targets(d, ys, &error));
  assert_int_equal(d->n_targets, 2);
  assert_true(d->targets[2] == 30 && d->targets[5] == 51);

  gint64 n = 3;
  g_autoptr(WeirTensor) t = weir_tensor_new(WEIR_DTYPE_F64, 1, &n);
  const double v[] = {-1, -3, -5};
  memcpy(t->data, v, sizeof v);
  g_autofree char *npy = g_build_filename(tmp_dir, "y.npy", NULL);
  assert_true(weir_tensor_write_npy(t, npy, &error));
  assert_true(weir_dataset_attach_targets(d, npy, &error));
  assert_int_equal(d->n_targets, 1);
  assert_true(d->targets[1] == -3);

  /* every sample keeps its own target through shuffle and split */
  weir_dataset_shuffle(d, 7);
  for (gint64 i = 0; i < 3; i++)
    assert_true(d->targets[i] == -d->features[2 * i]);
  WeirDataset *a = NULL, *b = NULL;
  assert_true(weir_dataset_split(d, 0.34, &a, &b, &error));
  g_autoptr(WeirDataset) train = a;
  g_autoptr(WeirDataset) val = b;
  assert_int_equal(val->n_targets, 1);
  assert_true(val->targets[0] == -val->features[0]);

  g_autofree char *short_y = write_text("short.csv", "1\n2\n");
  assert_false(weir_dataset_attach_targets(d, short_y, &error));
  assert_non_null(strstr(error->message, "2 rows of targets for the 3"));
  g_clear_error(&error);

#define SK "/usr/lib/python3/dist-packages/sklearn/datasets/data/"
  g_autoptr(WeirDataset) dia =
      weir_dataset_load_targets(SK "diabetes_data_raw.csv.gz", NULL, 0, &error);
  assert_non_null(dia);
  assert_true(
      weir_dataset_attach_targets(dia, SK "diabetes_target.csv.gz", &error));
  assert_int_equal(dia->n_samples, 442);
  assert_int_equal(dia->n_features, 10);
  assert_int_equal(dia->n_targets, 1);
  /* first row: 59 2 32.1 101.0 157 93.2 38.0 4.0 4.8598 87 -> 151 */
  assert_true(dia->features[0] == 59 && dia->features[9] == 87);
  assert_true(dia->targets[0] == 151);
}

/* Standardization uses the training split's statistics for both splits
 * and keeps the target statistics for mapping predictions back. */
static void test_standardize(void **state) {
  (void)state;
  g_autofree char *path =
      write_text("std.csv", "1,10,5\n3,10,7\n5,10,9\n7,10,100\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) d = weir_dataset_load_targets(path, NULL, 1, &error);
  assert_non_null(d);
  WeirDataset *a = NULL, *b = NULL;
  assert_true(weir_dataset_split(d, 0.25, &a, &b, &error));
  g_autoptr(WeirDataset) train = a;
  g_autoptr(WeirDataset) val = b;
  weir_dataset_standardize(train, val, TRUE, TRUE);
  /* column 0 of train: 1, 3, 5: mean 3, std sqrt(8/3) */
  double sd = sqrt(8.0 / 3);
  assert_float_equal(train->features[0], -2 / sd, 1e-6);
  assert_float_equal(val->features[0], 4 / sd, 1e-6);
  /* a constant column is only centred */
  assert_float_equal(train->features[1], 0, 0);
  assert_float_equal(val->features[1], 0, 0);
  assert_non_null(train->target_mean);
  assert_float_equal(train->target_mean[0], 7, 1e-9);
  assert_float_equal(val->target_mean[0], 7, 1e-9);
  assert_float_equal(val->target_std[0], sd, 1e-9);
  assert_float_equal(val->targets[0], 93 / sd, 1e-4);
  /* targets are standardized once */
  weir_dataset_standardize(train, val, FALSE, TRUE);
  assert_float_equal(val->targets[0], 93 / sd, 1e-4);
}

static void test_shuffle_and_split(void **state) {
  (void)state;
  GString *text = g_string_new(NULL);
  for (int i = 0; i < 100; i++)
    g_string_append_printf(text, "%d,%d,%d\n", i, 2 * i, i % 7);
  g_autofree char *path = write_text("hundred.csv", text->str);
  g_string_free(text, TRUE);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) d = weir_dataset_load(path, NULL, &error);
  assert_non_null(d);

  /* a permutation, reproducible, depending on the seed */
  g_autofree gint64 *p1 = weir_dataset_permutation(100, 7);
  g_autofree gint64 *p2 = weir_dataset_permutation(100, 7);
  g_autofree gint64 *p3 = weir_dataset_permutation(100, 8);
  gboolean seen[100] = {0};
  int fixed = 0;
  for (int i = 0; i < 100; i++) {
    assert_in_range(p1[i], 0, 99);
    assert_false(seen[p1[i]]);
    seen[p1[i]] = TRUE;
    fixed += p1[i] == i;
  }
  assert_memory_equal(p1, p2, 100 * sizeof(gint64));
  assert_memory_not_equal(p1, p3, 100 * sizeof(gint64));
  assert_true(fixed < 10);

  weir_dataset_shuffle(d, 7);
  for (int i = 0; i < 100; i++) {
    /* rows move whole: features and label stay together */
    assert_true(d->features[2 * i] == (float)p1[i]);
    assert_true(d->features[2 * i + 1] == (float)(2 * p1[i]));
    assert_int_equal(d->labels[i], p1[i] % 7);
  }

  WeirDataset *train = NULL, *val = NULL;
  assert_true(weir_dataset_split(d, 0.2, &train, &val, &error));
  assert_int_equal(train->n_samples, 80);
  assert_int_equal(val->n_samples, 20);
  assert_int_equal(val->n_classes, 7);
  assert_true(val->features[0] == d->features[160]);
  assert_int_equal(val->labels[19], d->labels[99]);
  weir_dataset_free(train);
  weir_dataset_free(val);

  assert_true(weir_dataset_split(d, 0, &train, &val, &error));
  assert_int_equal(val->n_samples, 0);
  weir_dataset_free(train);
  weir_dataset_free(val);

  assert_false(weir_dataset_split(d, 1.0, &train, &val, &error));
  assert_non_null(strstr(error->message, "not in [0, 1)"));
  g_clear_error(&error);
  assert_false(weir_dataset_split(d, 0.001, &train, &val, &error));
  assert_non_null(strstr(error->message, "cannot be split"));
}

static void test_gather(void **state) {
  (void)state;
  g_autofree char *path = write_text("g.csv", "1,2,0\n3,4,1\n5,6,2\n");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirDataset) d = weir_dataset_load(path, NULL, &error);
  assert_non_null(d);
  const gint64 order[] = {2, 0, 1};
  float f[4];
  gint64 l[2];
  weir_dataset_gather(d, order, 1, 2, f, l);
  assert_true(f[0] == 1 && f[1] == 2 && f[2] == 3 && f[3] == 4);
  assert_int_equal(l[0], 0);
  assert_int_equal(l[1], 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_csv_plain),
      cmocka_unit_test(test_csv_header_and_label_choice),
      cmocka_unit_test(test_csv_errors),
      cmocka_unit_test(test_csv_gzip),
      cmocka_unit_test(test_digits),
      cmocka_unit_test(test_npy),
      cmocka_unit_test(test_csv_targets),
      cmocka_unit_test(test_target_file),
      cmocka_unit_test(test_standardize),
      cmocka_unit_test(test_shuffle_and_split),
      cmocka_unit_test(test_gather),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
