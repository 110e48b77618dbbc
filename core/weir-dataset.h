/* weir-dataset.h — labelled data sets for training.
 *
 * A WeirDataset is a table of samples: n_features float32 features and
 * one int64 class label per sample, held row-major in memory.  It is read
 * from
 *  - CSV text (".csv"), optionally gzip-compressed (".csv.gz"; decoded
 *    with GIO's GZlibDecompressor): comma-separated numeric columns, one
 *    sample per line; blank lines are skipped.  A first line with a field
 *    that is not a number is a header naming the columns;
 *  - NumPy ".npy" files: a 2-D array (float32, float64, int32, int64 or
 *    uint8), one sample per row.
 * CSV fields are separated by commas, or by blanks (spaces, tabs) when
 * the first line of the file has no comma (scikit-learn's diabetes files).
 *
 * For classification one column is the label: by name (a header field),
 * by index (0-based; negative counts from the end, -1 being the last
 * column), or the last column when none is given.  Labels must be
 * non-negative integers (class indices); every other column is a feature,
 * in file order.
 *
 * For regression a sample has n_targets float targets instead: columns of
 * the same file (weir_dataset_load_targets) or the columns of a second
 * file with one row per sample (weir_dataset_attach_targets).
 *
 * Errors name the file and, for CSV, the line and column
 * ("digits.csv.gz:12: column 3: 'x' is not a number").
 */
#ifndef WEIR_DATASET_H
#define WEIR_DATASET_H

#include "weir-types.h"

G_BEGIN_DECLS

typedef struct {
  char *source;       /* file name, for messages (owned) */
  gint64 n_samples;   /* rows */
  gint64 n_features;  /* feature columns */
  float *features;    /* n_samples x n_features, row-major (owned) */
  gint64 *labels;     /* n_samples class indices (owned) */
  gint64 n_classes;   /* 1 + the largest label (0 when empty) */
  char *label_column; /* the label column's name, or its index as text;
                         for regression the target columns ("a,b") or
                         the target file (owned; NULL: none) */
  gint64 n_targets;   /* float targets per sample (0: classification) */
  float *targets;     /* n_samples x n_targets, row-major (owned) */
  /* Set by weir_dataset_standardize(targets = TRUE): the training split's
   * mean and standard deviation of each target column, which the targets
   * were standardized with ((y - mean) / std); NULL otherwise. (owned) */
  double *target_mean, *target_std;
} WeirDataset;

/* Reads path, choosing the format by its extension (".csv", ".csv.gz",
 * ".npy", case-insensitive).  label: column name or index as text, NULL for
 * the last column.  (transfer full: weir_dataset_free) */
/**
 * weir_dataset_load:
 * @label: (nullable):
 * Returns: (transfer full):
 */
WEIR_API WeirDataset *weir_dataset_load(const char *path, const char *label,
                                        GError **error);
/* A regression data set: the columns named by `columns` (comma-separated
 * header names or indices, negative from the end; in that order) are the
 * targets; NULL takes the last n_last columns (0: none, every column is a
 * feature; attach the targets from another file).  Errors name the file
 * and the column.  (transfer full: weir_dataset_free) */
WEIR_API WeirDataset *weir_dataset_load_targets(const char *path,
                                                const char *columns,
                                                gint64 n_last, GError **error);

/* Replaces d's targets by the columns of path (.csv, .csv.gz or .npy; a
 * 1-D .npy array is one column), which must have one row per sample of d.
 * Non-finite targets are errors naming the row. */
WEIR_API gboolean weir_dataset_attach_targets(WeirDataset *d, const char *path,
                                              GError **error);

WEIR_API void weir_dataset_free(WeirDataset *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirDataset, weir_dataset_free)

/* Multiplies every feature by factor (e.g. 1/16 for the 0..16 pixel values
 * of scikit-learn's digits). */
WEIR_API void weir_dataset_scale(WeirDataset *d, double factor);

/* A permutation of 0..n-1 (Fisher-Yates with GLib's Mersenne Twister seeded
 * with seed): the same seed gives the same order on every platform.
 * (transfer full, g_free) */
/**
 * weir_dataset_permutation: (skip)
 */
WEIR_API gint64 *weir_dataset_permutation(gint64 n, guint64 seed);

/* Shuffles the samples with weir_dataset_permutation(n, seed). */
WEIR_API void weir_dataset_shuffle(WeirDataset *d, guint64 seed);

/* Standardizes train (features and/or targets) to zero mean and unit
 * standard deviation per column, with the statistics of train, and applies
 * the same statistics to val (may be NULL): a held-out split never leaks
 * into its scaling.  A constant column is only centred.  For targets the
 * statistics are kept in target_mean / target_std of both data sets, so
 * that predictions can be mapped back to the original units; targets are
 * standardized once (a second call leaves them). */
/**
 * weir_dataset_standardize:
 * @val: (nullable):
 */
WEIR_API void weir_dataset_standardize(WeirDataset *train, WeirDataset *val,
                                       gboolean features, gboolean targets);

/* Splits d into its first n - n_val samples (*train_out) and its last
 * n_val samples (*val_out), n_val = round(n * val_fraction).  Shuffle
 * first for a random split.  Fails when val_fraction is outside [0, 1) or
 * when either part would be empty (a zero val_fraction gives an empty
 * validation set, which is allowed).  Both results are new data sets;
 * n_classes, targets and target statistics of both are d's. */
/**
 * weir_dataset_split:
 * @train_out: (out) (transfer full):
 * @val_out: (out) (transfer full):
 */
WEIR_API gboolean weir_dataset_split(const WeirDataset *d, double val_fraction,
                                     WeirDataset **train_out,
                                     WeirDataset **val_out, GError **error);

/* Copies the samples order[start..start+n) (indices into d; order NULL
 * means 0, 1, ...) into features (n x n_features floats) and labels (n
 * entries; may be NULL). */
/**
 * weir_dataset_gather: (skip)
 */
WEIR_API void weir_dataset_gather(const WeirDataset *d, const gint64 *order,
                                  gint64 start, gint64 n, float *features,
                                  gint64 *labels);
/* weir_dataset_gather with the targets too (n x n_targets floats); each
 * of features, labels and targets may be NULL. */
/**
 * weir_dataset_gather_targets: (skip)
 */
WEIR_API void weir_dataset_gather_targets(const WeirDataset *d,
                                          const gint64 *order, gint64 start,
                                          gint64 n, float *features,
                                          gint64 *labels, float *targets);

G_END_DECLS

#endif
