/* tuning.c — node signatures and the tuning database (weir-tuning.h).
 *
 * The database is a plain SQLite file written by `weir tune` and read by
 * the -O3 step apply-tuning (through weir_tuning_lookup).  Writers open it
 * read-write in WAL mode with a busy timeout, readers read-only; every put
 * is one statement (its own transaction), so a crash loses at most the
 * candidate being stored.  Schema: docs/tuning.md.
 */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "sqlite-wal.h"
#include "weir-attr.h"
#include "weir-hw.h"
#include "weir-native.h"
#include "weir-tuning.h"
#include "weir.h"

G_DEFINE_AUTOPTR_CLEANUP_FUNC(sqlite3_stmt, sqlite3_finalize)

#define BUSY_TIMEOUT_MS 10000

static const char *const status_names[] = {"ok", "rejected", "failed"};

const char *weir_tuning_status_name(WeirTuningStatus s) {
  return (guint)s < G_N_ELEMENTS(status_names) ? status_names[s] : "?";
}

static gboolean status_from_name(const char *name, WeirTuningStatus *out) {
  for (guint i = 0; i < G_N_ELEMENTS(status_names); i++)
    if (g_strcmp0(name, status_names[i]) == 0) {
      *out = (WeirTuningStatus)i;
      return TRUE;
    }
  return FALSE;
}

void weir_tuning_record_free(WeirTuningRecord *r) {
  if (!r)
    return;
  g_free(r->key);
  g_free(r->signature);
  g_free(r->hw);
  g_free(r->op);
  g_free(r->impl);
  g_free(r->params);
  g_free(r->message);
  g_free(r->date);
  g_free(r->weir_version);
  g_free(r);
}

/* ------------------------------------------------------------- signature */

char *weir_tuning_hw_identity(void) {
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  return g_strdup_printf("%s; %s; %u logical cores; L1d %" G_GINT64_FORMAT
                         " L2 %" G_GINT64_FORMAT " L3 %" G_GINT64_FORMAT,
                         hw->cpu_model, weir_hw_isa_name(hw->isa),
                         hw->logical_cores, hw->l1d_bytes, hw->l2_bytes,
                         hw->l3_bytes);
}

guint weir_tuning_default_threads(void) {
  const char *env = g_getenv("OMP_NUM_THREADS");
  guint64 v;
  if (env && g_ascii_string_to_unsigned(env, 10, 1, 4096, &v, NULL))
    return (guint)v;
  return (guint)MAX(1, g_get_num_processors());
}

/* Attributes that say how a node is implemented, not what it computes. */
static gboolean implementation_attr(const char *name) {
  return strcmp(name, "impl") == 0 || strcmp(name, "impl_params") == 0 ||
         strcmp(name, "tuned") == 0;
}

static void append_exprs(GString *s, const GPtrArray *xs) {
  g_string_append_c(s, '[');
  for (guint i = 0; i < xs->len; i++) {
    g_autofree char *t = weir_expr_to_string(g_ptr_array_index(xs, i));
    g_string_append_printf(s, "%s%s", i ? ", " : "", t);
  }
  g_string_append_c(s, ']');
}

static void append_port(GString *s, const WeirGraph *g, const WeirState *st,
                        const WeirNode *n, gboolean input, const char *conn) {
  const WeirContainer *c = NULL;
  for (guint i = 0; i < st->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(st->edges, i);
    if (m->data && (input ? (m->dst == n->id && !g_strcmp0(m->dst_conn, conn))
                          : (m->src == n->id && !g_strcmp0(m->src_conn, conn))))
      c = weir_graph_container(g, m->data);
  }
  g_string_append_printf(s, "%s %s ", input ? "in" : "out", conn);
  if (!c) {
    g_string_append(s, "none\n");
    return;
  }
  g_string_append_printf(s, "%s ", weir_dtype_name(c->dtype));
  append_exprs(s, c->shape);
  g_string_append(s, " strides ");
  append_exprs(s, c->strides);
  g_string_append_c(s, '\n');
}

static void append_attr(GString *s, const WeirAttr *a) {
  g_string_append_printf(s, "attr %s %s ", a->name,
                         weir_attr_type_name(a->type));
  switch (a->type) {
  case WEIR_ATTR_INT:
    g_string_append_printf(s, "%" G_GINT64_FORMAT, a->i);
    break;
  case WEIR_ATTR_FLOAT:
    g_string_append_printf(s, "%.17g", a->f);
    break;
  case WEIR_ATTR_STRING:
    g_string_append_printf(s, "%zu:%s", strlen(a->s ? a->s : ""),
                           a->s ? a->s : "");
    break;
  case WEIR_ATTR_INTS:
    for (guint i = 0; i < a->ints->len; i++)
      g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? "," : "",
                             g_array_index(a->ints, gint64, i));
    break;
  case WEIR_ATTR_FLOATS:
    for (guint i = 0; i < a->floats->len; i++)
      g_string_append_printf(s, "%s%.17g", i ? "," : "",
                             g_array_index(a->floats, double, i));
    break;
  case WEIR_ATTR_STRINGS:
    for (guint i = 0; i < a->strings->len; i++) {
      const char *t = g_ptr_array_index(a->strings, i);
      g_string_append_printf(s, "%s%zu:%s", i ? "," : "", strlen(t), t);
    }
    break;
  default:
    break;
  }
  g_string_append_c(s, '\n');
}

char *weir_tuning_signature(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n, guint threads, char **key) {
  g_return_val_if_fail(g && s && n && n->kind == WEIR_NODE_LIBRARY, NULL);
  GString *t = g_string_new("weir-tuning-signature 1\n");
  g_string_append_printf(t, "op %s\n", n->op);
  for (guint i = 0; i < n->in_conns->len; i++)
    append_port(t, g, s, n, TRUE, g_ptr_array_index(n->in_conns, i));
  for (guint i = 0; i < n->out_conns->len; i++)
    append_port(t, g, s, n, FALSE, g_ptr_array_index(n->out_conns, i));
  for (guint i = 0; i < n->attrs->len; i++) { /* sorted by name */
    const WeirAttr *a = g_ptr_array_index(n->attrs, i);
    if (!implementation_attr(a->name))
      append_attr(t, a);
  }
  g_string_append_printf(t, "threads %u\n",
                         threads ? threads : weir_tuning_default_threads());
  g_autofree char *hw = weir_tuning_hw_identity();
  g_string_append_printf(t, "hw %s\n", hw);
  if (key)
    *key = g_compute_checksum_for_string(G_CHECKSUM_SHA256, t->str, t->len);
  return g_string_free(t, FALSE);
}

/* -------------------------------------------------------------- database */

struct _WeirTuningDb {
  sqlite3 *db;
  char *path;
  gboolean writable;
};

char *weir_tuning_db_path(void) {
  const char *env = g_getenv("WEIR_TUNING_DB");
  if (env && *env)
    return g_strdup(env);
  return g_build_filename(g_get_user_data_dir(), "weir", "tuning.db", NULL);
}

static gboolean db_fail(WeirTuningDb *db, const char *what, GError **error) {
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "tuning database '%s': %s: %s",
              db->path, what, db->db ? sqlite3_errmsg(db->db) : "no handle");
  return FALSE;
}

static gboolean db_exec(WeirTuningDb *db, const char *sql, GError **error) {
  char *msg = NULL;
  if (sqlite3_exec(db->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "tuning database '%s': %s",
                db->path, msg ? msg : "error");
    sqlite3_free(msg);
    return FALSE;
  }
  return TRUE;
}

static sqlite3_stmt *db_prepare(WeirTuningDb *db, const char *sql,
                                GError **error) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db->db, sql, -1, &st, NULL) != SQLITE_OK) {
    db_fail(db, "prepare", error);
    return NULL;
  }
  return st;
}

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS schema_version ("
    "  version INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS results ("
    "  key TEXT NOT NULL,"
    "  signature TEXT NOT NULL,"
    "  hw TEXT NOT NULL,"
    "  op TEXT NOT NULL,"
    "  impl TEXT NOT NULL,"
    "  params TEXT NOT NULL,"
    "  status TEXT NOT NULL CHECK (status IN ('ok', 'rejected', 'failed')),"
    "  median_s REAL NOT NULL,"
    "  runs INTEGER NOT NULL,"
    "  max_abs_error REAL NOT NULL,"
    "  message TEXT NOT NULL,"
    "  date TEXT NOT NULL,"
    "  weir_version TEXT NOT NULL,"
    "  PRIMARY KEY (key, impl, params));"
    "CREATE INDEX IF NOT EXISTS results_best ON results (key, status, "
    "median_s);";

/* Reads the schema version: 0 for a database without the table. */
static gboolean read_version(WeirTuningDb *db, gint64 *version,
                             GError **error) {
  g_autoptr(sqlite3_stmt) st = db_prepare(
      db,
      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = "
      "'schema_version'",
      error);
  if (!st)
    return FALSE;
  if (sqlite3_step(st) != SQLITE_ROW)
    return db_fail(db, "read the schema", error);
  if (sqlite3_column_int(st, 0) == 0) {
    *version = 0;
    return TRUE;
  }
  g_autoptr(sqlite3_stmt) v =
      db_prepare(db, "SELECT version FROM schema_version", error);
  if (!v)
    return FALSE;
  int rc = sqlite3_step(v);
  if (rc != SQLITE_ROW) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "tuning database '%s': the schema_version table is empty",
                db->path);
    return FALSE;
  }
  *version = sqlite3_column_int64(v, 0);
  return TRUE;
}

WeirTuningDb *weir_tuning_db_open(const char *path, gboolean create,
                                  GError **error) {
  g_autofree char *def = path ? NULL : weir_tuning_db_path();
  const char *file = path ? path : def;
  if (!create && !g_file_test(file, G_FILE_TEST_EXISTS)) {
    g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_NOENT,
                "tuning database '%s' does not exist (run weir tune)", file);
    return NULL;
  }
  if (create) {
    g_autofree char *dir = g_path_get_dirname(file);
    if (g_mkdir_with_parents(dir, 0700) != 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                  "tuning database '%s': cannot create directory '%s'", file,
                  dir);
      return NULL;
    }
  }
  WeirTuningDb *db = g_new0(WeirTuningDb, 1);
  db->path = g_strdup(file);
  db->writable = create;
  int flags = create ? SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                     : SQLITE_OPEN_READONLY;
  if (sqlite3_open_v2(file, &db->db, flags | SQLITE_OPEN_FULLMUTEX, NULL) !=
      SQLITE_OK) {
    db_fail(db, "open", error);
    weir_tuning_db_close(db);
    return NULL;
  }
  sqlite3_busy_timeout(db->db, BUSY_TIMEOUT_MS);
  gint64 version = 0;
  if (!read_version(db, &version, error)) {
    weir_tuning_db_close(db);
    return NULL;
  }
  if (version == 0 && create) {
    if (weir_sqlite_use_wal(db->db, BUSY_TIMEOUT_MS) != SQLITE_OK) {
      db_fail(db, "PRAGMA journal_mode=WAL", error);
      weir_tuning_db_close(db);
      return NULL;
    }
    g_autofree char *sql = g_strdup_printf(
        "BEGIN IMMEDIATE; %s "
        "INSERT INTO schema_version (version) SELECT %d WHERE NOT EXISTS "
        "(SELECT 1 FROM schema_version); COMMIT;",
        schema_sql, WEIR_TUNING_SCHEMA_VERSION);
    if (!db_exec(db, sql, error)) {
      sqlite3_exec(db->db, "ROLLBACK", NULL, NULL, NULL);
      weir_tuning_db_close(db);
      return NULL;
    }
    version = WEIR_TUNING_SCHEMA_VERSION;
  }
  if (version != WEIR_TUNING_SCHEMA_VERSION) {
    if (version == 0)
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "'%s' is not a tuning database (no schema_version table)",
                  file);
    else
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_VERSION,
                  "tuning database '%s' has schema version %" G_GINT64_FORMAT
                  "; this Weir reads version %d",
                  file, version, WEIR_TUNING_SCHEMA_VERSION);
    weir_tuning_db_close(db);
    return NULL;
  }
  return db;
}

void weir_tuning_db_close(WeirTuningDb *db) {
  if (!db)
    return;
  if (db->db)
    sqlite3_close(db->db);
  g_free(db->path);
  g_free(db);
}

const char *weir_tuning_db_file(const WeirTuningDb *db) {
  return db->path;
}

static char *now_iso8601(void) {
  g_autoptr(GDateTime) t = g_date_time_new_now_utc();
  return g_date_time_format(t, "%Y-%m-%dT%H:%M:%SZ");
}

gboolean weir_tuning_db_put(WeirTuningDb *db, const WeirTuningRecord *r,
                            GError **error) {
  g_return_val_if_fail(db && r && r->key && r->impl, FALSE);
  if (!db->writable) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "tuning database '%s' was opened read-only", db->path);
    return FALSE;
  }
  g_autoptr(sqlite3_stmt) st = db_prepare(
      db,
      "INSERT OR REPLACE INTO results (key, signature, hw, op, impl, params, "
      "status, median_s, runs, max_abs_error, message, date, weir_version) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
      error);
  if (!st)
    return FALSE;
  g_autofree char *date = r->date ? NULL : now_iso8601();
  const char *text[] = {r->key,
                        r->signature ? r->signature : "",
                        r->hw ? r->hw : "",
                        r->op ? r->op : "",
                        r->impl,
                        r->params ? r->params : "",
                        weir_tuning_status_name(r->status)};
  for (guint i = 0; i < G_N_ELEMENTS(text); i++)
    sqlite3_bind_text(st, (int)i + 1, text[i], -1, SQLITE_TRANSIENT);
  sqlite3_bind_double(st, 8, r->median_s);
  sqlite3_bind_int64(st, 9, r->runs);
  sqlite3_bind_double(st, 10, r->max_abs_error);
  sqlite3_bind_text(st, 11, r->message ? r->message : "", -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 12, r->date ? r->date : date, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 13, r->weir_version ? r->weir_version : weir_version(),
                    -1, SQLITE_TRANSIENT);
  if (sqlite3_step(st) != SQLITE_DONE)
    return db_fail(db, "store a result", error);
  return TRUE;
}

#define SELECT_COLUMNS                                                         \
  "SELECT key, signature, hw, op, impl, params, status, median_s, runs, "      \
  "max_abs_error, message, date, weir_version FROM results "

static char *column_text(sqlite3_stmt *st, int i) {
  const unsigned char *t = sqlite3_column_text(st, i);
  return g_strdup(t ? (const char *)t : "");
}

static WeirTuningRecord *row_record(sqlite3_stmt *st) {
  WeirTuningRecord *r = g_new0(WeirTuningRecord, 1);
  r->key = column_text(st, 0);
  r->signature = column_text(st, 1);
  r->hw = column_text(st, 2);
  r->op = column_text(st, 3);
  r->impl = column_text(st, 4);
  r->params = column_text(st, 5);
  g_autofree char *status = column_text(st, 6);
  if (!status_from_name(status, &r->status))
    r->status = WEIR_TUNING_FAILED;
  r->median_s = sqlite3_column_double(st, 7);
  r->runs = (guint)sqlite3_column_int64(st, 8);
  r->max_abs_error = sqlite3_column_double(st, 9);
  r->message = column_text(st, 10);
  r->date = column_text(st, 11);
  r->weir_version = column_text(st, 12);
  return r;
}

WeirTuningRecord *weir_tuning_db_best(WeirTuningDb *db, const char *key,
                                      GError **error) {
  g_return_val_if_fail(db && key, NULL);
  g_autoptr(sqlite3_stmt) st =
      db_prepare(db,
                 SELECT_COLUMNS "WHERE key = ?1 AND status = 'ok' "
                                "ORDER BY median_s, impl, params LIMIT 1",
                 error);
  if (!st)
    return NULL;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW)
    return row_record(st);
  if (rc != SQLITE_DONE)
    db_fail(db, "read", error);
  return NULL;
}

GPtrArray *weir_tuning_db_list(WeirTuningDb *db, const char *key,
                               GError **error) {
  g_return_val_if_fail(db != NULL, NULL);
  g_autoptr(sqlite3_stmt) st = db_prepare(
      db,
      key ? SELECT_COLUMNS "WHERE key = ?1 ORDER BY key, status, median_s, "
                           "impl, params"
          : SELECT_COLUMNS "ORDER BY key, status, median_s, impl, params",
      error);
  if (!st)
    return NULL;
  if (key)
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
  GPtrArray *rows =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_tuning_record_free);
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    g_ptr_array_add(rows, row_record(st));
  if (rc != SQLITE_DONE) {
    db_fail(db, "read", error);
    g_ptr_array_unref(rows);
    return NULL;
  }
  return rows;
}

/* ---------------------------------------------------------------- lookup */

gboolean weir_tuning_lookup(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n, guint threads,
                            WeirTuningRecord **out, GError **error) {
  *out = NULL;
  g_autofree char *path = weir_tuning_db_path();
  if (!g_file_test(path, G_FILE_TEST_EXISTS))
    return TRUE;
  g_autoptr(GError) local = NULL;
  g_autoptr(WeirTuningDb) db = weir_tuning_db_open(path, FALSE, &local);
  if (!db) {
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
  }
  g_autofree char *key = NULL;
  g_autofree char *sig = weir_tuning_signature(g, s, n, threads, &key);
  g_autoptr(WeirTuningRecord) r = weir_tuning_db_best(db, key, error);
  if (!r)
    return error == NULL || *error == NULL;
  /* a row this Weir cannot honour (another build's implementations) is
   * ignored, as if absent */
  const WeirNativeImpl *ni = weir_native_lookup(n->op, r->impl);
  if (strcmp(r->impl, "pure") != 0) {
    g_autofree char *reason = NULL;
    if (!ni || !ni->accepts(g, s, n, &reason))
      return TRUE;
  }
  if (!weir_native_params_valid(ni, r->params, NULL))
    return TRUE;
  *out = g_steal_pointer(&r);
  return TRUE;
}
