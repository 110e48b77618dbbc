/* workspace.c — sessions stored in one SQLite file (*.weir).
 *
 * Schema (format "weir-workspace", version 1; docs/sessions.md):
 *   meta(format, version, created_by)                 one row
 *   programs(id = 1, name, source, original, current_step, bindings,
 *            checksum)
 *   steps(idx, transform, state, nodes, labels, site, params, params_json,
 *         bytes_before_expr, bytes_before, bytes_after_expr, bytes_after,
 *         flops_before_expr, flops_before, flops_after_expr, flops_after,
 *         seconds, timestamp, program, checksum)
 *   bookmarks(name, step)                             step 0: the original
 *   results(step, json)                               benchmark results
 * A figure is stored as its expression text (NULL: unknown) and its value
 * (NULL: not known).  checksum is the SHA-256 of the program text beside it:
 * opening checks every one, so damage inside a snapshot that SQLite's own
 * checks cannot see is reported instead of surfacing at a later "goto".
 *
 * Saving never writes into the target: it builds a complete new database
 * in a temporary file of the same directory (one transaction, no journal
 * since nobody else sees the file), syncs it, renames it over the target
 * and syncs the directory.  rename() is atomic, so a crash leaves either
 * the old file or the new one (plus, at worst, a stale temporary file
 * ".NAME.<host>-<pid>.XXXXXX", which the next open or save of NAME removes
 * once its owner is gone: weir-scratch.h).  Opening reads everything into
 * memory and closes the database again.
 */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "session-private.h"
#include "weir-json.h"
#include "weir-limits.h"
#include "weir-scratch.h"

const char *weir_version(void);

static const char schema[] =
    "CREATE TABLE meta(format TEXT NOT NULL, version INTEGER NOT NULL,"
    " created_by TEXT NOT NULL);"
    "CREATE TABLE programs(id INTEGER PRIMARY KEY CHECK (id = 1),"
    " name TEXT NOT NULL, source TEXT, original TEXT NOT NULL,"
    " current_step INTEGER NOT NULL, bindings TEXT NOT NULL,"
    " checksum TEXT NOT NULL);"
    "CREATE TABLE steps(idx INTEGER PRIMARY KEY, transform TEXT NOT NULL,"
    " state INTEGER NOT NULL, nodes TEXT NOT NULL, labels TEXT NOT NULL,"
    " site TEXT NOT NULL, params TEXT NOT NULL, params_json TEXT NOT NULL,"
    " bytes_before_expr TEXT, bytes_before INTEGER,"
    " bytes_after_expr TEXT, bytes_after INTEGER,"
    " flops_before_expr TEXT, flops_before INTEGER,"
    " flops_after_expr TEXT, flops_after INTEGER,"
    " seconds REAL NOT NULL, timestamp INTEGER NOT NULL,"
    " program TEXT NOT NULL, checksum TEXT NOT NULL);"
    "CREATE TABLE bookmarks(name TEXT PRIMARY KEY, step INTEGER NOT NULL);"
    "CREATE TABLE results(step INTEGER PRIMARY KEY, json TEXT NOT NULL);";

static gboolean db_fail(sqlite3 *db, const char *path, const char *what,
                        GError **error) {
  int code = sqlite3_errcode(db);
  WeirErrorCode wc = (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
                         ? WEIR_ERROR_INVALID
                         : WEIR_ERROR_IO;
  g_set_error(error, WEIR_ERROR, wc, "%s: %s: %s", path, what,
              sqlite3_errmsg(db));
  return FALSE;
}

static gboolean db_exec(sqlite3 *db, const char *path, const char *sql,
                        GError **error) {
  if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
    return db_fail(db, path, "writing", error);
  return TRUE;
}

/* ------------------------------------------------------------------ save */

static void bind_text(sqlite3_stmt *st, int i, const char *text) {
  if (text)
    sqlite3_bind_text(st, i, text, -1, SQLITE_STATIC);
  else
    sqlite3_bind_null(st, i);
}

static void bind_figure(sqlite3_stmt *st, int i, const WeirFigure *f) {
  bind_text(st, i, f->expr);
  if (f->known)
    sqlite3_bind_int64(st, i + 1, f->value);
  else
    sqlite3_bind_null(st, i + 1);
}

static char *bindings_to_json(GHashTable *bindings) {
  json_object *o = json_object_new_object();
  g_autoptr(GPtrArray) names = weir_bindings_sorted_names(bindings);
  for (guint i = 0; i < names->len; i++) {
    const char *name = g_ptr_array_index(names, i);
    const gint64 *v = g_hash_table_lookup(bindings, name);
    json_object_object_add(o, name, json_object_new_int64(*v));
  }
  char *out =
      g_strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
  json_object_put(o);
  return out;
}

static char *labels_to_json(const GPtrArray *labels) {
  json_object *a = json_object_new_array();
  for (guint i = 0; i < labels->len; i++)
    json_object_array_add(a,
                          json_object_new_string(g_ptr_array_index(labels, i)));
  char *out = g_strdup(json_object_to_json_string_ext(
      a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(a);
  return out;
}

static char *nodes_to_text(const WeirSite *site) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < site->n_nodes; i++)
    g_string_append_printf(s, "%s%u", i ? "," : "", site->nodes[i]);
  return g_string_free(s, FALSE);
}

/* Runs one prepared insert and resets it. */
static gboolean step_stmt(sqlite3 *db, sqlite3_stmt *st, const char *path,
                          GError **error) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE)
    return db_fail(db, path, "writing", error);
  return TRUE;
}

static gboolean write_db(const WeirSession *s, sqlite3 *db, const char *path,
                         GError **error) {
  if (!db_exec(db, path,
               "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
               " BEGIN;",
               error) ||
      !db_exec(db, path, schema, error))
    return FALSE;

  sqlite3_stmt *st = NULL;
  gboolean ok = FALSE;
  g_autofree char *created_by = g_strdup_printf("weir %s", weir_version());
  g_autofree char *bindings = bindings_to_json(weir_session_bindings(s));
  g_autofree char *original_sum = g_compute_checksum_for_string(
      G_CHECKSUM_SHA256, weir_session_original_json(s), -1);

  if (sqlite3_prepare_v2(db, "INSERT INTO meta VALUES (?, ?, ?)", -1, &st,
                         NULL) != SQLITE_OK)
    goto fail;
  bind_text(st, 1, WEIR_WORKSPACE_FORMAT);
  sqlite3_bind_int(st, 2, WEIR_WORKSPACE_VERSION);
  bind_text(st, 3, created_by);
  if (!step_stmt(db, st, path, error))
    goto out;
  sqlite3_finalize(st);

  if (sqlite3_prepare_v2(db,
                         "INSERT INTO programs VALUES (1, ?, ?, ?, ?, ?, ?)",
                         -1, &st, NULL) != SQLITE_OK)
    goto fail;
  bind_text(st, 1, weir_session_original(s)->name);
  bind_text(st, 2, weir_session_source(s));
  bind_text(st, 3, weir_session_original_json(s));
  sqlite3_bind_int64(st, 4, weir_session_cursor(s));
  bind_text(st, 5, bindings);
  bind_text(st, 6, original_sum);
  if (!step_stmt(db, st, path, error))
    goto out;
  sqlite3_finalize(st);

  if (sqlite3_prepare_v2(db,
                         "INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
                         "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                         -1, &st, NULL) != SQLITE_OK)
    goto fail;
  for (guint k = 1; k <= weir_session_n_steps(s); k++) {
    const WeirStep *step = weir_session_step(s, k);
    g_autofree char *nodes = nodes_to_text(&step->site);
    g_autofree char *labels = labels_to_json(step->labels);
    sqlite3_bind_int64(st, 1, step->index);
    bind_text(st, 2, step->transform);
    sqlite3_bind_int64(st, 3, step->site.state);
    bind_text(st, 4, nodes);
    bind_text(st, 5, labels);
    bind_text(st, 6, step->site_text);
    bind_text(st, 7, step->params);
    bind_text(st, 8, step->params_json);
    bind_figure(st, 9, &step->bytes_before);
    bind_figure(st, 11, &step->bytes_after);
    bind_figure(st, 13, &step->flops_before);
    bind_figure(st, 15, &step->flops_after);
    sqlite3_bind_double(st, 17, step->seconds);
    sqlite3_bind_int64(st, 18, step->timestamp);
    bind_text(st, 19, step->program);
    g_autofree char *sum =
        g_compute_checksum_for_string(G_CHECKSUM_SHA256, step->program, -1);
    bind_text(st, 20, sum);
    if (!step_stmt(db, st, path, error))
      goto out;
  }
  sqlite3_finalize(st);

  if (sqlite3_prepare_v2(db, "INSERT INTO bookmarks VALUES (?, ?)", -1, &st,
                         NULL) != SQLITE_OK)
    goto fail;
  if (weir_session_original_bookmark(s)) {
    bind_text(st, 1, weir_session_original_bookmark(s));
    sqlite3_bind_int64(st, 2, 0);
    if (!step_stmt(db, st, path, error))
      goto out;
  }
  for (guint k = 1; k <= weir_session_n_steps(s); k++) {
    const WeirStep *step = weir_session_step(s, k);
    if (!step->bookmark)
      continue;
    bind_text(st, 1, step->bookmark);
    sqlite3_bind_int64(st, 2, k);
    if (!step_stmt(db, st, path, error))
      goto out;
  }
  sqlite3_finalize(st);

  if (sqlite3_prepare_v2(db, "INSERT INTO results VALUES (?, ?)", -1, &st,
                         NULL) != SQLITE_OK)
    goto fail;
  for (guint k = 1; k <= weir_session_n_steps(s); k++) {
    const WeirStep *step = weir_session_step(s, k);
    if (!step->results)
      continue;
    sqlite3_bind_int64(st, 1, k);
    bind_text(st, 2, step->results);
    if (!step_stmt(db, st, path, error))
      goto out;
  }
  sqlite3_finalize(st);
  st = NULL;
  return db_exec(db, path, "COMMIT;", error);

fail:
  db_fail(db, path, "preparing", error);
out:
  sqlite3_finalize(st);
  return ok;
}

static gboolean sync_path(const char *path, int flags, GError **error) {
  int fd = g_open(path, flags, 0);
  if (fd < 0 || fsync(fd) != 0) {
    int e = errno;
    if (fd >= 0)
      close(fd);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: syncing: %s", path,
                g_strerror(e));
    return FALSE;
  }
  close(fd);
  return TRUE;
}

/* Removes the stale temporaries that interrupted saves of path left:
 * ".BASE.<host>-<pid>.XXXXXX" by the rule of weir-scratch.h, and
 * ".BASE.XXXXXX" of earlier versions (no owner) once older than
 * WEIR_STALE_SECONDS. */
static void clean_temporaries(const char *path) {
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *base = g_path_get_basename(path);
  g_autofree char *prefix = g_strdup_printf(".%s.", base);
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    if (!g_str_has_prefix(name, prefix))
      continue;
    const char *rest = name + strlen(prefix);
    gsize len = strlen(rest);
    g_autofree char *owner = NULL;
    if (len > 7 && rest[len - 7] == '.') {
      owner = g_strndup(rest, len - 7);
      const char *dash = strrchr(owner, '-');
      if (!dash || !dash[1] ||
          strspn(dash + 1, "0123456789") != strlen(dash + 1))
        continue;
    } else if (len != 6 || strchr(rest, '.')) {
      continue;
    }
    g_autofree char *p = g_build_filename(dir, name, NULL);
    GStatBuf st;
    if (g_lstat(p, &st) == 0 && S_ISREG(st.st_mode) &&
        weir_scratch_is_stale(owner, (gint64)st.st_mtime))
      g_unlink(p);
  }
}

gboolean weir_workspace_save(const WeirSession *s, const char *path,
                             GError **error) {
  g_return_val_if_fail(s != NULL && path != NULL, FALSE);
  clean_temporaries(path);
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *base = g_path_get_basename(path);
  g_autofree char *owner = weir_scratch_owner();
  g_autofree char *tmp = g_strdup_printf("%s/.%s.%s.XXXXXX", dir, base, owner);
  int fd = g_mkstemp_full(tmp, O_RDWR | O_CLOEXEC, 0666);
  if (fd < 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "%s: cannot create a temporary file in %s: %s", path, dir,
                g_strerror(errno));
    return FALSE;
  }
  /* Keep the permissions of the file being replaced. */
  struct stat old;
  if (g_stat(path, &old) == 0)
    (void)fchmod(fd, old.st_mode & 07777);
  close(fd);

  sqlite3 *db = NULL;
  gboolean ok = FALSE;
  if (sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
    db_fail(db, path, "creating the temporary database", error);
  } else if (write_db(s, db, path, error)) {
    ok = TRUE;
  }
  if (sqlite3_close(db) != SQLITE_OK && ok) {
    ok = FALSE;
    db_fail(db, path, "closing", error);
  }
  if (ok)
    ok = sync_path(tmp, O_RDONLY, error);
  if (ok && g_rename(tmp, path) != 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: renaming %s: %s", path,
                tmp, g_strerror(errno));
    ok = FALSE;
  }
  if (!ok) {
    g_unlink(tmp);
    return FALSE;
  }
  return sync_path(dir, O_RDONLY | O_DIRECTORY, error);
}

/* ------------------------------------------------------------------ open */

typedef struct {
  sqlite3 *db;
  const char *path;
} Reader;

static gboolean corrupt(const Reader *r, GError **error, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static gboolean corrupt(const Reader *r, GError **error, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
              "%s: corrupt workspace: %s", r->path, msg);
  return FALSE;
}

static gboolean prepare(const Reader *r, const char *sql, sqlite3_stmt **st,
                        GError **error) {
  if (sqlite3_prepare_v2(r->db, sql, -1, st, NULL) == SQLITE_OK)
    return TRUE;
  int code = sqlite3_errcode(r->db);
  if (code == SQLITE_NOTADB)
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: not a Weir workspace (not an SQLite database)", r->path);
  else if (code == SQLITE_CORRUPT)
    corrupt(r, error, "%s", sqlite3_errmsg(r->db));
  else
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: not a Weir workspace or corrupt: %s", r->path,
                sqlite3_errmsg(r->db));
  return FALSE;
}

/* Step result: SQLITE_ROW, SQLITE_DONE, or FALSE with an error. */
static int next_row(const Reader *r, sqlite3_stmt *st, GError **error) {
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW || rc == SQLITE_DONE)
    return rc;
  corrupt(r, error, "%s", sqlite3_errmsg(r->db));
  return 0;
}

static char *column_text(sqlite3_stmt *st, int i) {
  const unsigned char *t = sqlite3_column_text(st, i);
  return t ? g_strdup((const char *)t) : NULL;
}

static void column_figure(sqlite3_stmt *st, int i, WeirFigure *f) {
  f->expr = column_text(st, i);
  f->known = sqlite3_column_type(st, i + 1) == SQLITE_INTEGER;
  f->value = f->known ? sqlite3_column_int64(st, i + 1) : 0;
}

static gboolean read_meta(const Reader *r, GError **error) {
  sqlite3_stmt *st = NULL;
  if (!prepare(r, "SELECT format, version FROM meta", &st, error))
    return FALSE;
  int rc = next_row(r, st, error);
  gboolean ok = FALSE;
  if (rc == SQLITE_DONE) {
    corrupt(r, error, "the meta table is empty");
  } else if (rc == SQLITE_ROW) {
    const char *format = (const char *)sqlite3_column_text(st, 0);
    gint64 version = sqlite3_column_int64(st, 1);
    if (g_strcmp0(format, WEIR_WORKSPACE_FORMAT) != 0)
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: not a Weir workspace (format '%s')", r->path,
                  format ? format : "");
    else if (version > WEIR_WORKSPACE_VERSION)
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_VERSION,
                  "%s was written by Weir format version %" G_GINT64_FORMAT
                  "; this Weir reads up to %d",
                  r->path, version, WEIR_WORKSPACE_VERSION);
    else if (version < 1)
      corrupt(r, error, "format version %" G_GINT64_FORMAT, version);
    else
      ok = TRUE;
  }
  sqlite3_finalize(st);
  return ok;
}

static gboolean check_integrity(const Reader *r, GError **error) {
  sqlite3_stmt *st = NULL;
  if (!prepare(r, "PRAGMA quick_check", &st, error))
    return FALSE;
  int rc = next_row(r, st, error);
  gboolean ok = rc == SQLITE_ROW;
  if (ok) {
    const char *res = (const char *)sqlite3_column_text(st, 0);
    if (g_strcmp0(res, "ok") != 0) {
      corrupt(r, error, "%s", res ? res : "integrity check failed");
      ok = FALSE;
    }
  }
  sqlite3_finalize(st);
  return ok;
}

static GHashTable *bindings_from_json(const Reader *r, const char *text,
                                      GError **error) {
  json_object *o = json_tokener_parse(text ? text : "");
  if (!o || !json_object_is_type(o, json_type_object)) {
    json_object_put(o);
    corrupt(r, error, "programs.bindings is not a JSON object");
    return NULL;
  }
  GHashTable *b = weir_bindings_new();
  json_object_object_foreach(o, key, val) {
    if (!json_object_is_type(val, json_type_int)) {
      json_object_put(o);
      g_hash_table_unref(b);
      corrupt(r, error, "programs.bindings: '%s' is not an integer", key);
      return NULL;
    }
    weir_bindings_set(b, key, json_object_get_int64(val));
  }
  json_object_put(o);
  return b;
}

/* The SHA-256 of text equals column i of st. */
static gboolean checksum_ok(const char *text, sqlite3_stmt *st, int i) {
  g_autofree char *sum =
      g_compute_checksum_for_string(G_CHECKSUM_SHA256, text, -1);
  return g_strcmp0(sum, (const char *)sqlite3_column_text(st, i)) == 0;
}

/* Builds the session from the programs row st is on. */
static WeirSession *session_from_row(const Reader *r, sqlite3_stmt *st,
                                     gint64 *cursor, GError **error) {
  g_autofree char *source = column_text(st, 0);
  g_autofree char *original = column_text(st, 1);
  *cursor = sqlite3_column_int64(st, 2);
  g_autoptr(GHashTable) bindings =
      bindings_from_json(r, (const char *)sqlite3_column_text(st, 3), error);
  if (!bindings)
    return NULL;
  if (!original) {
    corrupt(r, error, "no original program");
    return NULL;
  }
  if (!checksum_ok(original, st, 4)) {
    corrupt(r, error, "the original program does not match its checksum");
    return NULL;
  }
  g_autofree char *where = g_strdup_printf("%s: original program", r->path);
  WeirGraph *g = weir_graph_from_json(original, -1, where, error);
  if (!g)
    return NULL;
  g_autoptr(GError) local = NULL;
  if (!weir_graph_check_sizes(g, bindings, &local)) {
    weir_graph_free(g);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: the symbol values stored in the workspace do not fit "
                "the program: %s",
                r->path, local->message);
    return NULL;
  }
  return weir_session_new_stored(g, g_steal_pointer(&original), source,
                                 bindings);
}

static WeirSession *read_program(const Reader *r, gint64 *cursor,
                                 GError **error) {
  sqlite3_stmt *st = NULL;
  if (!prepare(r,
               "SELECT source, original, current_step, bindings, checksum "
               "FROM "
               "programs WHERE id = 1",
               &st, error))
    return NULL;
  WeirSession *s = NULL;
  int rc = next_row(r, st, error);
  if (rc == SQLITE_DONE)
    corrupt(r, error, "no program");
  else if (rc == SQLITE_ROW)
    s = session_from_row(r, st, cursor, error);
  sqlite3_finalize(st);
  return s;
}

static gboolean parse_nodes(const char *text, WeirSite *site) {
  site->n_nodes = 0;
  if (!text || !*text)
    return TRUE;
  g_auto(GStrv) items = g_strsplit(text, ",", -1);
  for (guint i = 0; items[i]; i++) {
    guint64 v;
    if (i >= WEIR_SITE_MAX_NODES ||
        !g_ascii_string_to_unsigned(items[i], 10, 1, G_MAXUINT, &v, NULL))
      return FALSE;
    site->nodes[site->n_nodes++] = (guint)v;
  }
  return TRUE;
}

static gboolean parse_labels(const char *text, GPtrArray *labels) {
  json_object *a = json_tokener_parse(text ? text : "");
  gboolean ok = a && json_object_is_type(a, json_type_array);
  for (size_t i = 0; ok && i < json_object_array_length(a); i++) {
    json_object *v = json_object_array_get_idx(a, i);
    ok = json_object_is_type(v, json_type_string);
    if (ok)
      g_ptr_array_add(labels, g_strdup(json_object_get_string(v)));
  }
  json_object_put(a);
  return ok;
}

static gboolean read_steps(const Reader *r, WeirSession *s, GError **error) {
  sqlite3_stmt *st = NULL;
  if (!prepare(r,
               "SELECT idx, transform, state, nodes, labels, site, params, "
               "params_json, bytes_before_expr, bytes_before, "
               "bytes_after_expr, bytes_after, flops_before_expr, "
               "flops_before, flops_after_expr, flops_after, seconds, "
               "timestamp, program, checksum FROM steps ORDER BY idx",
               &st, error))
    return FALSE;
  gboolean ok = TRUE;
  int rc;
  while (ok && (rc = next_row(r, st, error)) == SQLITE_ROW) {
    g_autoptr(WeirStep) step = weir_step_new();
    gint64 idx = sqlite3_column_int64(st, 0);
    step->transform = column_text(st, 1);
    gint64 state = sqlite3_column_int64(st, 2);
    step->site_text = column_text(st, 5);
    step->params = column_text(st, 6);
    step->params_json = column_text(st, 7);
    column_figure(st, 8, &step->bytes_before);
    column_figure(st, 10, &step->bytes_after);
    column_figure(st, 12, &step->flops_before);
    column_figure(st, 14, &step->flops_after);
    step->seconds = sqlite3_column_double(st, 16);
    step->timestamp = sqlite3_column_int64(st, 17);
    step->program = column_text(st, 18);
    if (idx != (gint64)weir_session_n_steps(s) + 1) {
      ok = corrupt(r, error, "step %" G_GINT64_FORMAT " follows step %u", idx,
                   weir_session_n_steps(s));
    } else if (!step->transform || !step->site_text || !step->params ||
               !step->params_json || !step->program || state < 0 ||
               state > G_MAXUINT) {
      ok = corrupt(r, error, "step %" G_GINT64_FORMAT ": missing fields", idx);
    } else if (!checksum_ok(step->program, st, 19)) {
      ok = corrupt(r, error,
                   "the program of step %" G_GINT64_FORMAT
                   " does not match its checksum",
                   idx);
    } else if (!parse_nodes((const char *)sqlite3_column_text(st, 3),
                            &step->site) ||
               !parse_labels((const char *)sqlite3_column_text(st, 4),
                             step->labels)) {
      ok = corrupt(r, error, "step %" G_GINT64_FORMAT ": bad site", idx);
    } else {
      step->site.state = (guint)state;
      weir_session_push_step(s, g_steal_pointer(&step));
    }
  }
  sqlite3_finalize(st);
  return ok && rc == SQLITE_DONE;
}

static gboolean read_extras(const Reader *r, WeirSession *s, GError **error) {
  sqlite3_stmt *st = NULL;
  int rc;
  gboolean ok = TRUE;
  if (!prepare(r, "SELECT name, step FROM bookmarks ORDER BY name", &st, error))
    return FALSE;
  while (ok && (rc = next_row(r, st, error)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 0);
    gint64 k = sqlite3_column_int64(st, 1);
    if (!name || k < 0 || k > weir_session_n_steps(s))
      ok = corrupt(r, error, "bookmark '%s' on step %" G_GINT64_FORMAT,
                   name ? name : "", k);
    else if (k == 0)
      weir_session_set_original_bookmark(s, name);
    else {
      WeirStep *step = (WeirStep *)weir_session_step(s, (guint)k);
      g_free(step->bookmark);
      step->bookmark = g_strdup(name);
    }
  }
  sqlite3_finalize(st);
  if (!ok || rc != SQLITE_DONE)
    return FALSE;

  if (!prepare(r, "SELECT step, json FROM results ORDER BY step", &st, error))
    return FALSE;
  while (ok && (rc = next_row(r, st, error)) == SQLITE_ROW) {
    gint64 k = sqlite3_column_int64(st, 0);
    if (k < 1 || k > weir_session_n_steps(s)) {
      ok = corrupt(r, error, "results of step %" G_GINT64_FORMAT, k);
    } else {
      WeirStep *step = (WeirStep *)weir_session_step(s, (guint)k);
      g_free(step->results);
      step->results = column_text(st, 1);
    }
  }
  sqlite3_finalize(st);
  return ok && rc == SQLITE_DONE;
}

WeirSession *weir_workspace_open(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  clean_temporaries(path);
  if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: %s", path,
                g_strerror(ENOENT));
    return NULL;
  }
  if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: is a directory", path);
    return NULL;
  }
  Reader r = {.path = path};
  if (sqlite3_open_v2(path, &r.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: cannot open: %s", path,
                r.db ? sqlite3_errmsg(r.db) : "out of memory");
    sqlite3_close(r.db);
    return NULL;
  }
  WeirSession *s = NULL;
  gint64 cursor = 0;
  if (read_meta(&r, error) && check_integrity(&r, error) &&
      (s = read_program(&r, &cursor, error))) {
    gboolean ok = read_steps(&r, s, error) && read_extras(&r, s, error);
    if (ok && (cursor < 0 || cursor > weir_session_n_steps(s)))
      ok = corrupt(&r, error, "current step %" G_GINT64_FORMAT " of %u steps",
                   cursor, weir_session_n_steps(s));
    if (ok && !weir_session_restore_cursor(s, (guint)cursor, error))
      ok = FALSE;
    if (!ok)
      g_clear_pointer(&s, weir_session_free);
  }
  sqlite3_close(r.db);
  return s;
}
