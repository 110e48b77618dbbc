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
  g_free(d->targets);
  g_free(d->target_mean);
  g_free(d->target_std);
  g_free(d);
}

static WeirDataset *dataset_new(const char *source, gint64 n_samples,
                                gint64 n_features, gint64 n_targets,
                                const char *label_column) {
  WeirDataset *d = g_new0(WeirDataset, 1);
  d->source = g_strdup(source);
  d->n_samples = n_samples;
  d->n_features = n_features;
  d->n_targets = n_targets;
  d->features = g_new0(float, MAX(n_samples * n_features, 1));
  d->labels = g_new0(gint64, MAX(n_samples, 1));
  d->targets = g_new0(float, MAX(n_samples * n_targets, 1));
  d->label_column = g_strdup(label_column);
  return d;
}

/* A table read from a file: n_rows x n_cols doubles, the header (NULL when
 * the file has none) and the line of each row (NULL for .npy). */
typedef struct {
  GArray *values; /* double */
  GArray *lines;  /* gint64 */
  GStrv header;
  guint n_cols;
  gint64 n_rows;
} Table;

static void table_clear(Table *t) {
  g_clear_pointer(&t->values, g_array_unref);
  g_clear_pointer(&t->lines, g_array_unref);
  g_clear_pointer(&t->header, g_strfreev);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Table, table_clear)

static const double *table_row(const Table *t, gint64 r) {
  return (const double *)t->values->data + r * t->n_cols;
}

static char *table_where(const Table *t, gint64 r) {
  return t->lines ? g_strdup_printf("%" G_GINT64_FORMAT ": ",
                                    g_array_index(t->lines, gint64, (guint)r))
                  : g_strdup_printf("row %" G_GINT64_FORMAT ": ", r);
}

/* Resolves one column among n_cols: a header name, else an integer index
 * (negative from the end).  what: "label" or "target". */
static gboolean resolve_column(const char *source, const char *what,
                               const char *label, char **header, guint n_cols,
                               guint *out, GError **error) {
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
                "%s: no %s column '%s' (%s)", source, what, label,
                header ? "not a column name or index"
                       : "the file has no header: give a column index");
    return FALSE;
  }
  if (idx < 0)
    idx += n_cols;
  if (idx < 0 || idx >= (gint64)n_cols) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %s column %s is out of range (%u columns)", source, what,
                label, n_cols);
    return FALSE;
  }
  *out = (guint)idx;
  return TRUE;
}

/* The label column: resolve_column, or the last column when label is
 * NULL. */
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
  return resolve_column(source, "label", label, header, n_cols, out, error);
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

/* Builds a data set from a table: column c is a feature when role[c] < 0
 * and role[c] != ROLE_LABEL, the label when ROLE_LABEL, target role[c]
 * otherwise. */
#define ROLE_FEATURE (-1)
#define ROLE_LABEL (-2)

static WeirDataset *dataset_from_table(const char *source, const Table *t,
                                       const int *role, gint64 n_targets,
                                       const char *label_name, GError **error) {
  gint64 n_features = 0;
  for (guint c = 0; c < t->n_cols; c++)
    n_features += role[c] == ROLE_FEATURE;
  g_autoptr(WeirDataset) d =
      dataset_new(source, t->n_rows, n_features, n_targets, label_name);
  for (gint64 r = 0; r < t->n_rows; r++) {
    const double *row = table_row(t, r);
    float *f = d->features + r * d->n_features;
    float *y = d->targets + r * n_targets;
    for (guint c = 0, k = 0; c < t->n_cols; c++) {
      if (role[c] == ROLE_FEATURE)
        f[k++] = (float)row[c];
      else if (role[c] >= 0) {
        if (!isfinite(row[c])) {
          g_autofree char *where = table_where(t, r);
          g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                      "%s: %starget %g is not finite", source, where, row[c]);
          return NULL;
        }
        y[role[c]] = (float)row[c];
      } else {
        g_autofree char *where = table_where(t, r);
        if (!check_label(source, where, row[c], &d->labels[r], error))
          return NULL;
        d->n_classes = MAX(d->n_classes, d->labels[r] + 1);
      }
    }
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

/* The fields of a line: split at commas, or at runs of blanks when the
 * file's first line has no comma (scikit-learn's diabetes files). */
static GStrv split_fields(const char *line, gboolean blanks) {
  if (!blanks)
    return g_strsplit(line, ",", -1);
  g_autoptr(GPtrArray) out = g_ptr_array_new();
  const char *p = line;
  while (*p) {
    while (*p == ' ' || *p == '\t')
      p++;
    if (!*p)
      break;
    const char *q = p;
    while (*q && *q != ' ' && *q != '\t')
      q++;
    g_ptr_array_add(out, g_strndup(p, (gsize)(q - p)));
    p = q;
  }
  g_ptr_array_add(out, NULL);
  return (GStrv)g_ptr_array_free(g_steal_pointer(&out), FALSE);
}

static gboolean read_csv(const char *path, gboolean gzip, Table *t,
                         GError **error) {
  g_autoptr(GInputStream) raw = open_text(path, gzip, error);
  if (!raw)
    return FALSE;
  g_autoptr(GDataInputStream) in = g_data_input_stream_new(raw);
  g_data_input_stream_set_newline_type(in, G_DATA_STREAM_NEWLINE_TYPE_ANY);

  t->values = g_array_new(FALSE, FALSE, sizeof(double));
  t->lines = g_array_new(FALSE, FALSE, sizeof(gint64));
  guint n_cols = 0;
  gint64 line_no = 0;
  gboolean blanks = FALSE;
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
      return FALSE;
    }
    if (!line)
      break;
    line_no++;
    if (strlen(line) != len) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "%s:%" G_GINT64_FORMAT ": not a text file (NUL byte)", path,
                  line_no);
      return FALSE;
    }
    g_strstrip(line);
    if (*line == '\0')
      continue;
    gboolean first = n_cols == 0;
    if (first)
      blanks = strchr(line, ',') == NULL;
    g_auto(GStrv) fields = split_fields(line, blanks);
    guint n = g_strv_length(fields);
    if (first) {
      n_cols = n;
      gboolean numeric = TRUE;
      for (guint c = 0; c < n; c++) {
        double v;
        if (!parse_number(fields[c], &v))
          numeric = FALSE;
      }
      if (!numeric) {
        t->header = g_steal_pointer(&fields);
        continue;
      }
    } else if (n != n_cols) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "%s:%" G_GINT64_FORMAT ": %u columns, expected %u", path,
                  line_no, n, n_cols);
      return FALSE;
    }
    for (guint c = 0; c < n; c++) {
      double v;
      if (!parse_number(fields[c], &v)) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                    "%s:%" G_GINT64_FORMAT ": column %u: '%s' is not a number",
                    path, line_no, c, g_strstrip(fields[c]));
        return FALSE;
      }
      g_array_append_val(t->values, v);
    }
    g_array_append_val(t->lines, line_no);
  }
  if (t->lines->len == 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s: no data rows",
                path);
    return FALSE;
  }
  t->n_cols = n_cols;
  t->n_rows = t->lines->len;
  return TRUE;
}

/* A .npy table: a 2-D array, or a 1-D one read as one column when
 * allow_1d (target files). */
static gboolean read_npy(const char *path, gboolean allow_1d, Table *t,
                         GError **error) {
  g_autoptr(WeirTensor) v = weir_tensor_read_npy(path, error);
  if (!v)
    return FALSE;
  if (v->rank != 2 && !(allow_1d && v->rank == 1)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: a data set must be a 2-D array (samples x columns), got "
                "rank %u",
                path, v->rank);
    return FALSE;
  }
  if (v->dtype == WEIR_DTYPE_BOOL) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: boolean arrays are not data sets", path);
    return FALSE;
  }
  if (v->shape[0] == 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s: no data rows",
                path);
    return FALSE;
  }
  t->n_rows = v->shape[0];
  t->n_cols = v->rank == 2 ? (guint)v->shape[1] : 1;
  t->values = g_array_sized_new(FALSE, FALSE, sizeof(double), (guint)v->count);
  for (gint64 i = 0; i < v->count; i++) {
    double x = weir_tensor_get(v, i);
    g_array_append_val(t->values, x);
  }
  return TRUE;
}

static gboolean read_table(const char *path, gboolean allow_1d, Table *t,
                           GError **error) {
  g_autofree char *lower = g_ascii_strdown(path, -1);
  if (g_str_has_suffix(lower, ".csv"))
    return read_csv(path, FALSE, t, error);
  if (g_str_has_suffix(lower, ".csv.gz"))
    return read_csv(path, TRUE, t, error);
  if (g_str_has_suffix(lower, ".npy"))
    return read_npy(path, allow_1d, t, error);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
              "%s: unknown data format (expected .csv, .csv.gz or .npy)", path);
  return FALSE;
}

/* The name of column c for messages: its header field, or its index. */
static char *column_name(const Table *t, guint c) {
  return t->header ? g_strdup(g_strstrip(t->header[c]))
                   : g_strdup_printf("%u", c);
}

WeirDataset *weir_dataset_load(const char *path, const char *label,
                               GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  g_auto(Table) t = {0};
  if (!read_table(path, FALSE, &t, error))
    return NULL;
  guint label_col = 0;
  if (!resolve_label(path, label, t.header, t.n_cols, &label_col, error))
    return NULL;
  g_autofree int *role = g_new(int, t.n_cols);
  for (guint c = 0; c < t.n_cols; c++)
    role[c] = c == label_col ? ROLE_LABEL : ROLE_FEATURE;
  g_autofree char *label_name = column_name(&t, label_col);
  return dataset_from_table(path, &t, role, 0, label_name, error);
}

WeirDataset *weir_dataset_load_targets(const char *path, const char *columns,
                                       gint64 n_last, GError **error) {
  g_return_val_if_fail(path != NULL && n_last >= 0, NULL);
  g_auto(Table) t = {0};
  if (!read_table(path, FALSE, &t, error))
    return NULL;
  g_autofree int *role = g_new(int, t.n_cols);
  for (guint c = 0; c < t.n_cols; c++)
    role[c] = ROLE_FEATURE;
  g_autoptr(GString) names = g_string_new(NULL);
  gint64 n_targets = 0;
  if (columns) {
    g_auto(GStrv) items = g_strsplit(columns, ",", -1);
    for (guint i = 0; items[i]; i++) {
      guint c = 0;
      if (!resolve_column(path, "target", g_strstrip(items[i]), t.header,
                          t.n_cols, &c, error))
        return NULL;
      if (role[c] != ROLE_FEATURE) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "%s: target column '%s' is given twice", path, items[i]);
        return NULL;
      }
      role[c] = (int)n_targets++;
    }
  } else {
    if (n_last > (gint64)t.n_cols) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: %" G_GINT64_FORMAT " target columns, but the file has "
                  "%u columns",
                  path, n_last, t.n_cols);
      return NULL;
    }
    for (guint c = t.n_cols - (guint)n_last; c < t.n_cols; c++)
      role[c] = (int)n_targets++;
  }
  if (n_targets == (gint64)t.n_cols) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: every column is a target: no feature is left", path);
    return NULL;
  }
  for (gint64 k = 0; k < n_targets; k++) {
    for (guint c = 0; c < t.n_cols; c++) {
      if (role[c] == (int)k) {
        g_autofree char *name = column_name(&t, c);
        g_string_append_printf(names, "%s%s", k ? "," : "", name);
      }
    }
  }
  return dataset_from_table(path, &t, role, n_targets,
                            n_targets ? names->str : NULL, error);
}

gboolean weir_dataset_attach_targets(WeirDataset *d, const char *path,
                                     GError **error) {
  g_return_val_if_fail(d != NULL && path != NULL, FALSE);
  g_auto(Table) t = {0};
  if (!read_table(path, TRUE, &t, error))
    return FALSE;
  if (t.n_rows != d->n_samples) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %" G_GINT64_FORMAT
                " rows of targets for the %" G_GINT64_FORMAT " samples of %s",
                path, t.n_rows, d->n_samples, d->source);
    return FALSE;
  }
  g_free(d->targets);
  d->n_targets = t.n_cols;
  d->targets = g_new(float, MAX(t.n_rows * t.n_cols, 1));
  const double *v = (const double *)t.values->data;
  for (gint64 i = 0; i < t.n_rows * t.n_cols; i++) {
    if (!isfinite(v[i])) {
      g_autofree char *where = table_where(&t, i / t.n_cols);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: %starget %g is not finite", path, where, v[i]);
      d->n_targets = 0;
      return FALSE;
    }
    d->targets[i] = (float)v[i];
  }
  g_free(d->label_column);
  d->label_column = g_strdup(path);
  return TRUE;
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

void weir_dataset_gather_targets(const WeirDataset *d, const gint64 *order,
                                 gint64 start, gint64 n, float *features,
                                 gint64 *labels, float *targets) {
  g_return_if_fail(d != NULL && start >= 0 && start + n <= d->n_samples);
  for (gint64 i = 0; i < n; i++) {
    gint64 src = order ? order[start + i] : start + i;
    if (features)
      memcpy(features + i * d->n_features, d->features + src * d->n_features,
             sizeof(float) * d->n_features);
    if (labels)
      labels[i] = d->labels[src];
    if (targets)
      memcpy(targets + i * d->n_targets, d->targets + src * d->n_targets,
             sizeof(float) * d->n_targets);
  }
}

void weir_dataset_gather(const WeirDataset *d, const gint64 *order,
                         gint64 start, gint64 n, float *features,
                         gint64 *labels) {
  weir_dataset_gather_targets(d, order, start, n, features, labels, NULL);
}

void weir_dataset_shuffle(WeirDataset *d, guint64 seed) {
  g_return_if_fail(d != NULL);
  g_autofree gint64 *p = weir_dataset_permutation(d->n_samples, seed);
  g_autofree float *f = g_new(float, MAX(d->n_samples * d->n_features, 1));
  g_autofree gint64 *l = g_new(gint64, MAX(d->n_samples, 1));
  g_autofree float *y = g_new(float, MAX(d->n_samples * d->n_targets, 1));
  weir_dataset_gather_targets(d, p, 0, d->n_samples, f, l, y);
  g_free(d->features);
  g_free(d->labels);
  g_free(d->targets);
  d->features = g_steal_pointer(&f);
  d->labels = g_steal_pointer(&l);
  d->targets = g_steal_pointer(&y);
}

static double *copy_doubles(const double *v, gint64 n) {
  return v ? g_memdup2(v, sizeof(double) * (gsize)n) : NULL;
}

static WeirDataset *dataset_slice(const WeirDataset *d, gint64 start,
                                  gint64 n) {
  WeirDataset *s =
      dataset_new(d->source, n, d->n_features, d->n_targets, d->label_column);
  weir_dataset_gather_targets(d, NULL, start, n, s->features, s->labels,
                              s->targets);
  s->n_classes = d->n_classes;
  s->target_mean = copy_doubles(d->target_mean, d->n_targets);
  s->target_std = copy_doubles(d->target_std, d->n_targets);
  return s;
}

/* Mean and standard deviation (population) of column c of an n x width
 * float array; a constant column gets std 1. */
static void column_stats(const float *v, gint64 n, gint64 width, gint64 c,
                         double *mean, double *std) {
  double sum = 0, sq = 0;
  for (gint64 i = 0; i < n; i++)
    sum += v[i * width + c];
  double m = n > 0 ? sum / (double)n : 0;
  for (gint64 i = 0; i < n; i++) {
    double x = v[i * width + c] - m;
    sq += x * x;
  }
  double sd = n > 0 ? sqrt(sq / (double)n) : 0;
  *mean = m;
  *std = sd > 0 ? sd : 1;
}

static void apply_stats(float *v, gint64 n, gint64 width, gint64 c, double mean,
                        double std) {
  for (gint64 i = 0; i < n; i++)
    v[i * width + c] = (float)((v[i * width + c] - mean) / std);
}

void weir_dataset_standardize(WeirDataset *train, WeirDataset *val,
                              gboolean features, gboolean targets) {
  g_return_if_fail(train != NULL);
  g_return_if_fail(!val || (val->n_features == train->n_features &&
                            val->n_targets == train->n_targets));
  if (features) {
    for (gint64 c = 0; c < train->n_features; c++) {
      double m, sd;
      column_stats(train->features, train->n_samples, train->n_features, c, &m,
                   &sd);
      apply_stats(train->features, train->n_samples, train->n_features, c, m,
                  sd);
      if (val)
        apply_stats(val->features, val->n_samples, val->n_features, c, m, sd);
    }
  }
  if (!targets || train->n_targets == 0 || train->target_mean)
    return;
  gint64 nt = train->n_targets;
  train->target_mean = g_new(double, nt);
  train->target_std = g_new(double, nt);
  for (gint64 c = 0; c < nt; c++) {
    column_stats(train->targets, train->n_samples, nt, c,
                 &train->target_mean[c], &train->target_std[c]);
    apply_stats(train->targets, train->n_samples, nt, c, train->target_mean[c],
                train->target_std[c]);
    if (val)
      apply_stats(val->targets, val->n_samples, nt, c, train->target_mean[c],
                  train->target_std[c]);
  }
  if (val) {
    g_free(val->target_mean);
    g_free(val->target_std);
    val->target_mean = copy_doubles(train->target_mean, nt);
    val->target_std = copy_doubles(train->target_std, nt);
  }
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
