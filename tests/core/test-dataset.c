/* test-dataset.c — data sets for training: CSV (plain and gzip'd), .npy,
 * label columns, errors naming file and line, scaling, seeded shuffle and
 * the held-out split.  scikit-learn's digits as packaged by Debian
 * (python3-sklearn) is read as the real gzip'd file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <gio/gio.h>
#include <glib/gstdio.h>
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
      cmocka_unit_test(test_shuffle_and_split),
      cmocka_unit_test(test_gather),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
