/* weir-tuning.h — the tuning database: node signatures and the timings of
 * the implementations tried for them (`weir tune`, used by -O3).
 *
 * A *signature* says what a library node computes and where: its operator,
 * the dtype, shape and strides of every operand, its attributes (but not
 * its implementation choice, "impl" / "impl_params", nor the "tuned" mark
 * set from the database), the thread count and the hardware identity
 * (CPU model, vector ISA, cores and caches as detected, weir-hw.h).  Its
 * canonical text (one line per item, attributes sorted by name) is hashed
 * with SHA-256; the hex digest is the *key*.  Two nodes with the same key
 * run the same generated code, so they are tuned once.
 *
 * The database is one SQLite file: $WEIR_TUNING_DB when set, else
 * g_get_user_data_dir()/weir/tuning.db.  docs/tuning.md gives the schema;
 * a file with another schema version is refused with a message naming it.
 */
#ifndef WEIR_TUNING_H
#define WEIR_TUNING_H

#include "weir-graph.h"

G_BEGIN_DECLS

#define WEIR_TUNING_SCHEMA_VERSION 1

/* What happened to one candidate of one signature. */
typedef enum {
  WEIR_TUNING_OK = 0,   /* checked against the reference and timed */
  WEIR_TUNING_REJECTED, /* ran, but its outputs differ from the reference */
  WEIR_TUNING_FAILED,   /* did not compile, load or run */
} WeirTuningStatus;

/* Name of a status ("ok", "rejected", "failed"); borrowed. */
WEIR_API const char *weir_tuning_status_name(WeirTuningStatus s);

/* One row of the database: a candidate (implementation and parameters) of
 * a signature.  Every string is owned. */
typedef struct {
  char *key;       /* hex SHA-256 of signature */
  char *signature; /* canonical text (weir_tuning_signature) */
  char *hw;        /* hardware identity (weir_tuning_hw_identity) */
  char *op;
  char *impl;   /* "pure" or a native implementation */
  char *params; /* "" or "kc=128,mc=96" (weir_native_params_text) */
  WeirTuningStatus status;
  double median_s;      /* median run time (0 unless ok) */
  guint runs;           /* timed runs behind median_s */
  double max_abs_error; /* largest |candidate - reference| (-1: none) */
  char *message;        /* why rejected or failed, else "" */
  char *date;           /* ISO 8601 UTC of the measurement */
  char *weir_version;
} WeirTuningRecord;

WEIR_API void weir_tuning_record_free(WeirTuningRecord *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirTuningRecord, weir_tuning_record_free)

/* The identity of this machine as tuning sees it: "CPU model; ISA; N
 * logical cores; L1d/L2/L3 bytes" (honours $WEIR_ISA and
 * $WEIR_HW_CACHES, which change the generated kernels). (transfer full) */
WEIR_API char *weir_tuning_hw_identity(void);

/* The thread count tuning and -O3 assume when none is given: the value of
 * $OMP_NUM_THREADS when it is a positive integer, else the number of
 * processors (the default of a kernel's runs). */
WEIR_API guint weir_tuning_default_threads(void);

/* The canonical signature text of library node n of state s of g at
 * `threads` threads (0: weir_tuning_default_threads()) on this machine;
 * *key (optional) receives its hex SHA-256. (transfer full) */
WEIR_API char *weir_tuning_signature(const WeirGraph *g, const WeirState *s,
                                     const WeirNode *n, guint threads,
                                     char **key);

/* $WEIR_TUNING_DB, else g_get_user_data_dir()/weir/tuning.db.
 * (transfer full) */
WEIR_API char *weir_tuning_db_path(void);

typedef struct _WeirTuningDb WeirTuningDb;

/* Opens the database at path (NULL: weir_tuning_db_path()).  With create,
 * a missing file (and its directory) is created with the current schema;
 * without, the file is opened read-only and a missing file is an error
 * G_FILE_ERROR / G_FILE_ERROR_NOENT.  A file that is not a tuning
 * database of schema WEIR_TUNING_SCHEMA_VERSION is refused (WEIR_ERROR_VERSION
 * for another version), the message naming the file. (transfer full) */
/**
 * weir_tuning_db_open: (skip)
 */
WEIR_API WeirTuningDb *weir_tuning_db_open(const char *path, gboolean create,
                                           GError **error);
WEIR_API void weir_tuning_db_close(WeirTuningDb *db);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirTuningDb, weir_tuning_db_close)
/* The file's path (borrowed). */
WEIR_API const char *weir_tuning_db_file(const WeirTuningDb *db);

/* Stores r, replacing the row of the same (key, impl, params).  date and
 * weir_version may be NULL: now and weir_version().  The database must
 * have been opened with create. */
WEIR_API gboolean weir_tuning_db_put(WeirTuningDb *db,
                                     const WeirTuningRecord *r, GError **error);
/* The fastest "ok" row of key (ties: by impl, then params), or NULL
 * (without an error) when there is none. (transfer full) */
/**
 * weir_tuning_db_best: (skip)
 */
WEIR_API WeirTuningRecord *weir_tuning_db_best(WeirTuningDb *db,
                                               const char *key, GError **error);
/* Every row of key (NULL: of all keys), ordered by key, status, median
 * time, impl and params: a GPtrArray of WeirTuningRecord* that frees them
 * (transfer full), NULL on error. */
/**
 * weir_tuning_db_list: (skip)
 */
WEIR_API GPtrArray *weir_tuning_db_list(WeirTuningDb *db, const char *key,
                                        GError **error);

/* What -O3 (the transformation apply-tuning) takes for node n: the best
 * row of its signature at `threads` threads (0: the default) in the
 * default database (weir_tuning_db_path()).  *out receives it, or NULL
 * when there is no database, no row, or the row names an implementation
 * that is not registered, does not accept n or has other parameters
 * (a database written by another Weir).  FALSE only for a database that
 * cannot be read. */
WEIR_API gboolean weir_tuning_lookup(const WeirGraph *g, const WeirState *s,
                                     const WeirNode *n, guint threads,
                                     WeirTuningRecord **out, GError **error);

G_END_DECLS

#endif
