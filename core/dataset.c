/* dataset.c — labelled data sets for training (weir-dataset.h).
 *
 * Structure: CSV reading (a line source over a GIO stream, gunzipped when
 * the name ends in ".gz"; header detection; label column resolution;
 * numeric parsing), then .npy (through weir_tensor_read_npy), then the
 * operations: scale, permutation, shuffle, split and gather.
 *
 * Rows are collected as doubles into a GArray while reading (the number of
 * rows is unknown until the end) and converted to float32 features and
 * int64 labels at the end.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include <gio/gio.h>

#include "weir-dataset.h"
#include "weir-tensor-io.h"

void weir_dataset_free(WeirDataset *d) {
  if (!d)
    return;
  g_free(d->source);
  g_free(d->features);
  g_free(d->labels);
  g_free(d->label_column);
  g_free(d);
}

static WeirDataset *dataset_new(const char *source, gint64 n_samples,
                                gint64 n_features, const char *label_column) {
  WeirDataset *d = g_new0(WeirDataset, 1);
  d->source = g_strdup(source);
  d->n_samples = n_samples;
  d->n_features = n_features;
  d->features = g_new0(float, MAX(n_samples * n_features, 1));
  d->labels = g_new0(gint64, MAX(n_samples, 1));
  d->label_column = g_strdup(label_column);
  return d;
}

/* Resolves the label column among n_cols columns: a header name, else an
 * integer index (negative from the end), else the last column. */
static gboolean resolve_label(const char *source, const char *label,
                              char **header, guint n_cols, guint *out,
                              GError **error) {
  if (n_cols < 2) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %u column%s: need at least one feature column and a "
                "label column",
                source, n_cols, n_cols == 1 ? "" : "s");
    return FALSE;
  }
  if (!label) {
    *out = n_cols - 1;
    return TRUE;
  }
  if (header) {
    for (guint i = 0; i < n_cols; i++) {
      if (g_strcmp0(g_strstrip(header[i]), label) == 0) {
        *out = i;
        return TRUE;
      }
    }
  }
  char *end = NULL;
  errno = 0;
  gint64 idx = g_ascii_strtoll(label, &end, 10);
  if (*label == '\0' || *end != '\0' || errno != 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: no label column '%s' (%s)", source, label,
                header ? "not a column name or index"
                       : "the file has no header: give a column index");
    return FALSE;
  }
  if (idx < 0)
    idx += n_cols;
  if (idx < 0 || idx >= (gint64)n_cols) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: label column %s is out of range (%u columns)", source,
                label, n_cols);
    return FALSE;
  }
  *out = (guint)idx;
  return TRUE;
}

static gboolean parse_number(const char *text, double *out) {
  while (g_ascii_isspace(*text))
    text++;
  if (*text == '\0')
    return FALSE;
  char *end = NULL;
  errno = 0;
  double v = g_ascii_strtod(text, &end);
  while (g_ascii_isspace(*end))
    end++;
  if (*end != '\0' || errno == ERANGE)
    return FALSE;
  *out = v;
  return TRUE;
}

static gboolean check_label(const char *source, const char *where, double v,
                            gint64 *out, GError **error) {
  if (!isfinite(v) || v < 0 || v != floor(v) || v > 1e15) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %slabel %g is not a class index (a non-negative "
                "integer)",
                source, where, v);
    return FALSE;
  }
  *out = (gint64)v;
  return TRUE;
}

/* Builds the data set from rows of n_cols doubles. */
static WeirDataset *dataset_from_rows(const char *source, const double *rows,
                                      gint64 n_rows, guint n_cols,
                                      guint label_col, const char *label_name,
                                      const gint64 *line_numbers,
                                      GError **error) {
  g_autoptr(WeirDataset) d =
      dataset_new(source, n_rows, n_cols - 1, label_name);
  for (gint64 r = 0; r < n_rows; r++) {
    const double *row = rows + r * n_cols;
    float *f = d->features + r * d->n_features;
    for (guint c = 0, k = 0; c < n_cols; c++) {
      if (c != label_col)
        f[k++] = (float)row[c];
    }
    g_autofree char *where =
        line_numbers
            ? g_strdup_printf("%" G_GINT64_FORMAT ": ", line_numbers[r])
            : g_strdup_printf("row %" G_GINT64_FORMAT ": ", r);
    if (!check_label(source, where, row[label_col], &d->labels[r], error))
      return NULL;
    d->n_classes = MAX(d->n_classes, d->labels[r] + 1);
  }
  return g_steal_pointer(&d);
}

static GInputStream *open_text(const char *path, gboolean gzip,
                               GError **error) {
  g_autoptr(GFile) file = g_file_new_for_path(path);
  GError *local = NULL;
  g_autoptr(GFileInputStream) in = g_file_read(file, NULL, &local);
  if (!in) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: %s", path,
                local->message);
    g_error_free(local);
    return NULL;
  }
  if (!gzip)
    return G_INPUT_STREAM(g_steal_pointer(&in));
  g_autoptr(GZlibDecompressor) z =
      g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP);
  return g_converter_input_stream_new(G_INPUT_STREAM(in), G_CONVERTER(z));
}

static WeirDataset *load_csv(const char *path, const char *label, gboolean gzip,
                             GError **error) {
  g_autoptr(GInputStream) raw = open_text(path, gzip, error);
  if (!raw)
    return NULL;
  g_autoptr(GDataInputStream) in = g_data_input_stream_new(raw);
  g_data_input_stream_set_newline_type(in, G_DATA_STREAM_NEWLINE_TYPE_ANY);

  g_autoptr(GArray) values = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GArray) lines = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_auto(GStrv) header = NULL;
  guint n_cols = 0;
  gint64 line_no = 0;
  for (;;) {
    GError *local = NULL;
    gsize len = 0;
    g_autofree char *line =
        g_data_input_stream_read_line(in, &len, NULL, &local);
    if (local) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                  "%s:%" G_GINT64_FORMAT ": %s", path, line_no + 1,
                  local->message);
      g_error_free(local);
      return NULL;
    }
    if (!line)
      break;
    line_no++;
    if (strlen(line) != len) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "%s:%" G_GINT64_FORMAT ": not a text file (NUL byte)", path,
                  line_no);
      return NULL;
    }
    g_strstrip(line);
    if (*line == '\0')
      continue;
    g_auto(GStrv) fields = g_strsplit(line, ",", -1);
    guint n = g_strv_length(fields);
    gboolean first = n_cols == 0;
    if (first) {
      n_cols = n;
      gboolean numeric = TRUE;
      for (guint c = 0; c < n; c++) {
        double v;
        if (!parse_number(fields[c], &v))
          numeric = FALSE;
      }
      if (!numeric) {
        header = g_steal_pointer(&fields);
        continue;
      }
    } else if (n != n_cols) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "%s:%" G_GINT64_FORMAT ": %u columns, expected %u", path,
                  line_no, n, n_cols);
      return NULL;
    }
    for (guint c = 0; c < n; c++) {
      double v;
      if (!parse_number(fields[c], &v)) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                    "%s:%" G_GINT64_FORMAT ": column %u: '%s' is not a number",
                    path, line_no, c, g_strstrip(fields[c]));
        return NULL;
      }
      g_array_append_val(values, v);
    }
    g_array_append_val(lines, line_no);
  }
  if (lines->len == 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s: no data rows",
                path);
    return NULL;
  }
  guint label_col = 0;
  if (!resolve_label(path, label, header, n_cols, &label_col, error))
    return NULL;
  g_autofree char *label_name = header ? g_strdup(g_strstrip(header[label_col]))
                                       : g_strdup_printf("%u", label_col);
  return dataset_from_rows(path, (const double *)values->data, lines->len,
                           n_cols, label_col, label_name,
                           (const gint64 *)lines->data, error);
}

static WeirDataset *load_npy(const char *path, const char *label,
                             GError **error) {
  g_autoptr(WeirTensor) t = weir_tensor_read_npy(path, error);
  if (!t)
    return NULL;
  if (t->rank != 2) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: a data set must be a 2-D array (samples x columns), got "
                "rank %u",
                path, t->rank);
    return NULL;
  }
  if (t->dtype == WEIR_DTYPE_BOOL) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: boolean arrays are not data sets", path);
    return NULL;
  }
  if (t->shape[0] == 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s: no data rows",
                path);
    return NULL;
  }
  guint n_cols = (guint)t->shape[1];
  guint label_col = 0;
  if (!resolve_label(path, label, NULL, n_cols, &label_col, error))
    return NULL;
  g_autofree double *rows = g_new(double, t->count);
  for (gint64 i = 0; i < t->count; i++)
    rows[i] = weir_tensor_get(t, i);
  g_autofree char *label_name = g_strdup_printf("%u", label_col);
  return dataset_from_rows(path, rows, t->shape[0], n_cols, label_col,
                           label_name, NULL, error);
}

WeirDataset *weir_dataset_load(const char *path, const char *label,
                               GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  g_autofree char *lower = g_ascii_strdown(path, -1);
  if (g_str_has_suffix(lower, ".csv"))
    return load_csv(path, label, FALSE, error);
  if (g_str_has_suffix(lower, ".csv.gz"))
    return load_csv(path, label, TRUE, error);
  if (g_str_has_suffix(lower, ".npy"))
    return load_npy(path, label, error);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
              "%s: unknown data format (expected .csv, .csv.gz or .npy)", path);
  return NULL;
}

void weir_dataset_scale(WeirDataset *d, double factor) {
  g_return_if_fail(d != NULL);
  for (gint64 i = 0; i < d->n_samples * d->n_features; i++)
    d->features[i] = (float)(d->features[i] * factor);
}

gint64 *weir_dataset_permutation(gint64 n, guint64 seed) {
  gint64 *p = g_new(gint64, MAX(n, 1));
  for (gint64 i = 0; i < n; i++)
    p[i] = i;
  guint32 words[2] = {(guint32)seed, (guint32)(seed >> 32)};
  GRand *rand = g_rand_new_with_seed_array(words, 2);
  for (gint64 i = n - 1; i > 0; i--) {
    /* g_rand_int_range takes gint32 bounds: data sets are far smaller */
    gint64 j = g_rand_int_range(rand, 0, (gint32)(i + 1));
    gint64 tmp = p[i];
    p[i] = p[j];
    p[j] = tmp;
  }
  g_rand_free(rand);
  return p;
}

void weir_dataset_gather(const WeirDataset *d, const gint64 *order,
                         gint64 start, gint64 n, float *features,
                         gint64 *labels) {
  g_return_if_fail(d != NULL && start >= 0 && start + n <= d->n_samples);
  for (gint64 i = 0; i < n; i++) {
    gint64 src = order ? order[start + i] : start + i;
    memcpy(features + i * d->n_features, d->features + src * d->n_features,
           sizeof(float) * d->n_features);
    if (labels)
      labels[i] = d->labels[src];
  }
}

void weir_dataset_shuffle(WeirDataset *d, guint64 seed) {
  g_return_if_fail(d != NULL);
  g_autofree gint64 *p = weir_dataset_permutation(d->n_samples, seed);
  g_autofree float *f = g_new(float, MAX(d->n_samples * d->n_features, 1));
  g_autofree gint64 *l = g_new(gint64, MAX(d->n_samples, 1));
  weir_dataset_gather(d, p, 0, d->n_samples, f, l);
  g_free(d->features);
  g_free(d->labels);
  d->features = g_steal_pointer(&f);
  d->labels = g_steal_pointer(&l);
}

static WeirDataset *dataset_slice(const WeirDataset *d, gint64 start,
                                  gint64 n) {
  WeirDataset *s = dataset_new(d->source, n, d->n_features, d->label_column);
  weir_dataset_gather(d, NULL, start, n, s->features, s->labels);
  s->n_classes = d->n_classes;
  return s;
}

gboolean weir_dataset_split(const WeirDataset *d, double val_fraction,
                            WeirDataset **train_out, WeirDataset **val_out,
                            GError **error) {
  g_return_val_if_fail(d != NULL && train_out && val_out, FALSE);
  if (!(val_fraction >= 0 && val_fraction < 1)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: validation fraction %g is not in [0, 1)", d->source,
                val_fraction);
    return FALSE;
  }
  gint64 n_val = (gint64)llround((double)d->n_samples * val_fraction);
  gint64 n_train = d->n_samples - n_val;
  if (n_train <= 0 || (val_fraction > 0 && n_val == 0)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %" G_GINT64_FORMAT " samples cannot be split with a "
                "validation fraction of %g (%" G_GINT64_FORMAT
                " for training, %" G_GINT64_FORMAT " held out)",
                d->source, d->n_samples, val_fraction, n_train, n_val);
    return FALSE;
  }
  *train_out = dataset_slice(d, 0, n_train);
  *val_out = dataset_slice(d, n_train, n_val);
  return TRUE;
}
