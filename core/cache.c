/* cache.c — the compile cache (weir-cache.h).
 *
 * Conventions of this file:
 *  - Every change to objects/ that other processes can observe (a rename
 *    into place, an unlink) happens while this process holds SQLite's write
 *    lock (BEGIN IMMEDIATE ... COMMIT), so the index and the directory
 *    change together as seen by other well-behaved processes.  Temporary
 *    files are written before taking the lock, to keep it short.
 *  - Keys are checked to be 64 lowercase hex digits before they become file
 *    names.
 *  - Times are microseconds since the epoch (g_get_real_time), so LRU order
 *    is meaningful between processes and within a second.
 *  - Database errors become WEIR_ERROR_IO errors naming the index file.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <sqlite3.h>

#include "sqlite-wal.h"
#include "weir-cache.h"

#define SCHEMA_VERSION 1
#define BUSY_TIMEOUT_MS 30000
#define KEY_FORMAT "weir-cache-key 1"
/* Temporary files older than this are removed by weir_cache_clear; newer
 * ones may belong to an insert in progress. */
#define STALE_TMP_SECONDS 3600

G_DEFINE_AUTOPTR_CLEANUP_FUNC(sqlite3_stmt, sqlite3_finalize)

struct _WeirCache {
  char *dir;
  char *objects; /* dir/objects */
  char *db_path;
  sqlite3 *db;
  gint64 max_bytes;
};

/* ------------------------------------------------------------- helpers */

static gboolean db_fail(WeirCache *c, const char *what, GError **error) {
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "cache index '%s': %s: %s",
              c->db_path, what, sqlite3_errmsg(c->db));
  return FALSE;
}

static gboolean db_exec(WeirCache *c, const char *sql, GError **error) {
  char *msg = NULL;
  if (sqlite3_exec(c->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "cache index '%s': %s: %s",
                c->db_path, sql, msg ? msg : sqlite3_errmsg(c->db));
    sqlite3_free(msg);
    return FALSE;
  }
  return TRUE;
}

static sqlite3_stmt *db_prepare(WeirCache *c, const char *sql, GError **error) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK) {
    db_fail(c, sql, error);
    return NULL;
  }
  return st;
}

static gboolean db_begin(WeirCache *c, GError **error) {
  return db_exec(c, "BEGIN IMMEDIATE", error);
}

static gboolean db_commit(WeirCache *c, GError **error) {
  if (db_exec(c, "COMMIT", error))
    return TRUE;
  sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
  return FALSE;
}

static void db_rollback(WeirCache *c) {
  if (!sqlite3_get_autocommit(c->db))
    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
}

static gboolean valid_key(const char *key, GError **error) {
  gboolean ok = key && strlen(key) == 64;
  for (guint i = 0; ok && i < 64; i++)
    ok = g_ascii_isdigit(key[i]) || (key[i] >= 'a' && key[i] <= 'f');
  if (!ok)
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "cache: '%s' is not a cache key (64 hex digits)",
                key ? key : "(null)");
  return ok;
}

static char *object_path(const WeirCache *c, const char *key) {
  g_autofree char *file = g_strconcat(key, ".so", NULL);
  return g_build_filename(c->objects, file, NULL);
}

static char *sha256_hex(const void *data, gsize len) {
  return g_compute_checksum_for_data(G_CHECKSUM_SHA256, data, len);
}

/* Parses "123", "64K", "512M", "1G" (binary multiples). */
static gboolean parse_size(const char *text, gint64 *out) {
  char *end = NULL;
  errno = 0;
  gint64 v = g_ascii_strtoll(text, &end, 10);
  if (errno || end == text || v <= 0)
    return FALSE;
  int shift = 0;
  switch (g_ascii_toupper(*end)) {
  case '\0':
    break;
  case 'K':
    shift = 10;
    break;
  case 'M':
    shift = 20;
    break;
  case 'G':
    shift = 30;
    break;
  default:
    return FALSE;
  }
  if (*end && end[1] &&
      !(g_ascii_strcasecmp(end + 1, "iB") == 0 ||
        g_ascii_strcasecmp(end + 1, "B") == 0))
    return FALSE;
  if (v > (G_MAXINT64 >> shift))
    return FALSE;
  *out = v << shift;
  return TRUE;
}

/* ----------------------------------------------------------------- key */

static void key_field(GChecksum *sum, const char *name, const char *value) {
  g_autofree char *head =
      g_strdup_printf("%s %" G_GSIZE_FORMAT "\n", name, strlen(value));
  g_checksum_update(sum, (const guchar *)head, -1);
  g_checksum_update(sum, (const guchar *)value, (gssize)strlen(value));
  g_checksum_update(sum, (const guchar *)"\n", 1);
}

char *weir_cache_key(const char *source, const char *compiler_identity,
                     const char *flags, int abi_version) {
  g_return_val_if_fail(source && compiler_identity && flags, NULL);
  g_autoptr(GChecksum) sum = g_checksum_new(G_CHECKSUM_SHA256);
  g_autofree char *abi = g_strdup_printf("%d", abi_version);
  key_field(sum, "format", KEY_FORMAT);
  key_field(sum, "abi", abi);
  key_field(sum, "compiler", compiler_identity);
  key_field(sum, "flags", flags);
  key_field(sum, "source", source);
  return g_strdup(g_checksum_get_string(sum));
}

/* ---------------------------------------------------------------- open */

char *weir_cache_default_dir(void) {
  const char *env = g_getenv("WEIR_CACHE_DIR");
  if (env && *env)
    return g_strdup(env);
  return g_build_filename(g_get_user_cache_dir(), "weir", NULL);
}

static gboolean open_db(WeirCache *c, GError **error) {
  int rc = sqlite3_open_v2(
      c->db_path, &c->db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, NULL);
  if (rc != SQLITE_OK)
    return db_fail(c, "open", error);
  sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
  /* WAL lets readers run while one process writes; NORMAL sync is safe with
   * WAL (a power loss may drop the last transactions, never corrupt). */
  if (weir_sqlite_use_wal(c->db, BUSY_TIMEOUT_MS) != SQLITE_OK)
    return db_fail(c, "PRAGMA journal_mode=WAL", error);
  if (!db_exec(c, "PRAGMA synchronous=NORMAL", error))
    return FALSE;
  if (!db_begin(c, error))
    return FALSE;
  g_autoptr(sqlite3_stmt) st = db_prepare(c, "PRAGMA user_version", error);
  if (!st || sqlite3_step(st) != SQLITE_ROW) {
    if (st)
      db_fail(c, "PRAGMA user_version", error);
    db_rollback(c);
    return FALSE;
  }
  int version = sqlite3_column_int(st, 0);
  if (version > SCHEMA_VERSION) {
    db_rollback(c);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_VERSION,
                "cache index '%s': schema version %d is newer than this "
                "Weir's (%d)",
                c->db_path, version, SCHEMA_VERSION);
    return FALSE;
  }
  if (version < SCHEMA_VERSION &&
      !db_exec(c,
               "CREATE TABLE IF NOT EXISTS objects ("
               "  key TEXT PRIMARY KEY NOT NULL,"
               "  size INTEGER NOT NULL,"
               "  sha256 TEXT NOT NULL,"
               "  created INTEGER NOT NULL,"
               "  last_used INTEGER NOT NULL,"
               "  hits INTEGER NOT NULL DEFAULT 0);"
               "CREATE INDEX IF NOT EXISTS objects_lru"
               "  ON objects (last_used, key);"
               "PRAGMA user_version = 1;",
               error)) {
    db_rollback(c);
    return FALSE;
  }
  return db_commit(c, error);
}

/* Removes the index and every file in objects/ (a cache can always be
 * rebuilt). */
static void wipe(WeirCache *c) {
  const char *suffixes[] = {"", "-wal", "-shm"};
  for (guint i = 0; i < G_N_ELEMENTS(suffixes); i++) {
    g_autofree char *p = g_strconcat(c->db_path, suffixes[i], NULL);
    g_unlink(p);
  }
  g_autoptr(GDir) d = g_dir_open(c->objects, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    g_autofree char *p = g_build_filename(c->objects, name, NULL);
    g_unlink(p);
  }
}

WeirCache *weir_cache_open(const char *dir, GError **error) {
  g_autoptr(WeirCache) c = g_new0(WeirCache, 1);
  c->dir = dir && *dir ? g_strdup(dir) : weir_cache_default_dir();
  c->objects = g_build_filename(c->dir, "objects", NULL);
  c->db_path = g_build_filename(c->dir, "weir-cache.db", NULL);
  c->max_bytes = WEIR_CACHE_DEFAULT_MAX_BYTES;
  const char *env = g_getenv("WEIR_CACHE_MAX_BYTES");
  if (env && *env && !parse_size(env, &c->max_bytes)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "WEIR_CACHE_MAX_BYTES='%s': expected a positive size in "
                "bytes (optionally with K, M or G)",
                env);
    return NULL;
  }
  if (g_mkdir_with_parents(c->objects, 0700) != 0) {
    int e = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "cache directory '%s': cannot create: %s", c->objects,
                g_strerror(e));
    return NULL;
  }
  g_autoptr(GError) local = NULL;
  if (!open_db(c, &local)) {
    int rc = c->db ? sqlite3_errcode(c->db) : SQLITE_OK;
    if (rc != SQLITE_NOTADB && rc != SQLITE_CORRUPT) {
      g_propagate_error(error, g_steal_pointer(&local));
      return NULL;
    }
    /* A damaged index: a cache can be rebuilt, so start over once. */
    sqlite3_close(c->db);
    c->db = NULL;
    wipe(c);
    if (!open_db(c, error)) {
      g_prefix_error(error, "after removing a damaged index: ");
      return NULL;
    }
  }
  return g_steal_pointer(&c);
}

void weir_cache_free(WeirCache *c) {
  if (!c)
    return;
  if (c->db)
    sqlite3_close(c->db);
  g_free(c->dir);
  g_free(c->objects);
  g_free(c->db_path);
  g_free(c);
}

const char *weir_cache_dir(const WeirCache *c) {
  return c->dir;
}

void weir_cache_set_max_bytes(WeirCache *c, gint64 max_bytes) {
  g_return_if_fail(max_bytes > 0);
  c->max_bytes = max_bytes;
}

/* ------------------------------------------------------------- entries */

/* Deletes key's row and file; inside a transaction. */
static gboolean drop_entry(WeirCache *c, const char *key, GError **error) {
  g_autoptr(sqlite3_stmt) st =
      db_prepare(c, "DELETE FROM objects WHERE key = ?1", error);
  if (!st)
    return FALSE;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  if (sqlite3_step(st) != SQLITE_DONE)
    return db_fail(c, "delete", error);
  g_autofree char *path = object_path(c, key);
  if (g_unlink(path) != 0 && errno != ENOENT) {
    int e = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "cache object '%s': cannot remove: %s", path, g_strerror(e));
    return FALSE;
  }
  return TRUE;
}

/* Whether the object at path has the recorded size and checksum. */
static gboolean object_intact(const char *path, gint64 size,
                              const char *sha256) {
  GStatBuf st;
  if (g_stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
      (gint64)st.st_size != size)
    return FALSE;
  g_autofree char *data = NULL;
  gsize len = 0;
  if (!g_file_get_contents(path, &data, &len, NULL) || (gint64)len != size)
    return FALSE;
  g_autofree char *hex = sha256_hex(data, len);
  return strcmp(hex, sha256) == 0;
}

/* The body of a lookup, inside a transaction.  *path_out stays NULL on a
 * miss. */
static gboolean lookup_locked(WeirCache *c, const char *key, char **path_out,
                              gboolean *recovered, GError **error) {
  g_autoptr(sqlite3_stmt) st =
      db_prepare(c, "SELECT size, sha256 FROM objects WHERE key = ?1", error);
  if (!st)
    return FALSE;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  int rc = sqlite3_step(st);
  if (rc == SQLITE_DONE)
    return TRUE; /* a plain miss */
  if (rc != SQLITE_ROW)
    return db_fail(c, "lookup", error);
  gint64 size = sqlite3_column_int64(st, 0);
  const char *text = (const char *)sqlite3_column_text(st, 1);
  g_autofree char *sha = g_strdup(text ? text : "");
  g_clear_pointer(&st, sqlite3_finalize);

  g_autofree char *path = object_path(c, key);
  if (!object_intact(path, size, sha)) {
    if (!drop_entry(c, key, error))
      return FALSE;
    *recovered = TRUE;
    return TRUE;
  }
  g_autoptr(sqlite3_stmt) up =
      db_prepare(c,
                 "UPDATE objects SET last_used = ?2, hits = hits + 1 "
                 "WHERE key = ?1",
                 error);
  if (!up)
    return FALSE;
  sqlite3_bind_text(up, 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_int64(up, 2, g_get_real_time());
  if (sqlite3_step(up) != SQLITE_DONE)
    return db_fail(c, "update", error);
  *path_out = g_steal_pointer(&path);
  return TRUE;
}

char *weir_cache_lookup(WeirCache *c, const char *key, gboolean *recovered,
                        GError **error) {
  gboolean rec = FALSE;
  if (recovered)
    *recovered = FALSE;
  if (!valid_key(key, error) || !db_begin(c, error))
    return NULL;
  g_autofree char *path = NULL;
  if (!lookup_locked(c, key, &path, &rec, error)) {
    db_rollback(c);
    return NULL;
  }
  if (!db_commit(c, error))
    return NULL;
  if (recovered)
    *recovered = rec;
  return g_steal_pointer(&path);
}

/* Writes bytes to a new temporary file in objects/; returns its path. */
static char *write_temp(WeirCache *c, const char *key, GBytes *object,
                        GError **error) {
  g_autofree char *tmpl = g_strdup_printf(".tmp-%.16s-XXXXXX", key);
  char *path = g_build_filename(c->objects, tmpl, NULL);
  int fd = g_mkstemp_full(path, O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0) {
    int e = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "cache directory '%s': cannot create a temporary file: %s",
                c->objects, g_strerror(e));
    g_free(path);
    return NULL;
  }
  gsize len = 0;
  const char *data = g_bytes_get_data(object, &len);
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = errno;
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                  "cache object '%s': write failed: %s", path, g_strerror(e));
      close(fd);
      g_unlink(path);
      g_free(path);
      return NULL;
    }
    data += n;
    len -= (gsize)n;
  }
  if (close(fd) != 0) {
    int e = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "cache object '%s': close failed: %s", path, g_strerror(e));
    g_unlink(path);
    g_free(path);
    return NULL;
  }
  return path;
}

/* Evicts least recently used entries other than keep until the total size
 * is at most the limit; inside a transaction. */
static gboolean evict(WeirCache *c, const char *keep, GError **error) {
  g_autoptr(sqlite3_stmt) tot =
      db_prepare(c, "SELECT COALESCE(SUM(size), 0) FROM objects", error);
  if (!tot)
    return FALSE;
  if (sqlite3_step(tot) != SQLITE_ROW)
    return db_fail(c, "size", error);
  gint64 total = sqlite3_column_int64(tot, 0);
  if (total <= c->max_bytes)
    return TRUE;
  g_autoptr(GPtrArray) victims = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(sqlite3_stmt) st = db_prepare(
      c,
      "SELECT key, size FROM objects WHERE key <> ?1 ORDER BY last_used, key",
      error);
  if (!st)
    return FALSE;
  sqlite3_bind_text(st, 1, keep, -1, SQLITE_STATIC);
  int rc;
  while (total > c->max_bytes && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    g_ptr_array_add(victims,
                    g_strdup((const char *)sqlite3_column_text(st, 0)));
    total -= sqlite3_column_int64(st, 1);
  }
  g_clear_pointer(&st, sqlite3_finalize);
  for (guint i = 0; i < victims->len; i++)
    if (!drop_entry(c, g_ptr_array_index(victims, i), error))
      return FALSE;
  return TRUE;
}

/* Moves tmp into place and records it; inside a transaction. */
static gboolean insert_locked(WeirCache *c, const char *key, const char *tmp,
                              const char *path, gint64 size, const char *sha,
                              GError **error) {
  if (g_rename(tmp, path) != 0) {
    int e = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "cache object '%s': cannot rename into place: %s", path,
                g_strerror(e));
    return FALSE;
  }
  g_autoptr(sqlite3_stmt) st = db_prepare(
      c,
      "INSERT INTO objects (key, size, sha256, created, last_used, hits) "
      "VALUES (?1, ?2, ?3, ?4, ?4, 0) "
      "ON CONFLICT (key) DO UPDATE SET size = excluded.size, "
      "sha256 = excluded.sha256, last_used = excluded.last_used",
      error);
  if (!st)
    return FALSE;
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 2, size);
  sqlite3_bind_text(st, 3, sha, -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 4, g_get_real_time());
  if (sqlite3_step(st) != SQLITE_DONE)
    return db_fail(c, "insert", error);
  return evict(c, key, error);
}

gboolean weir_cache_insert(WeirCache *c, const char *key, GBytes *object,
                           char **path_out, GError **error) {
  g_return_val_if_fail(object != NULL, FALSE);
  if (path_out)
    *path_out = NULL;
  if (!valid_key(key, error))
    return FALSE;
  g_autofree char *tmp = write_temp(c, key, object, error);
  if (!tmp)
    return FALSE;
  g_autofree char *path = object_path(c, key);
  gsize len = 0;
  const void *data = g_bytes_get_data(object, &len);
  g_autofree char *sha = sha256_hex(data, len);
  if (!db_begin(c, error)) {
    g_unlink(tmp);
    return FALSE;
  }
  if (!insert_locked(c, key, tmp, path, (gint64)len, sha, error)) {
    db_rollback(c);
    g_unlink(tmp);
    return FALSE;
  }
  if (!db_commit(c, error))
    return FALSE;
  if (path_out)
    *path_out = g_steal_pointer(&path);
  return TRUE;
}

gboolean weir_cache_remove(WeirCache *c, const char *key, GError **error) {
  if (!valid_key(key, error) || !db_begin(c, error))
    return FALSE;
  if (!drop_entry(c, key, error)) {
    db_rollback(c);
    return FALSE;
  }
  return db_commit(c, error);
}

gboolean weir_cache_stats(WeirCache *c, WeirCacheStats *out, GError **error) {
  memset(out, 0, sizeof *out);
  out->max_bytes = c->max_bytes;
  g_autoptr(sqlite3_stmt) st =
      db_prepare(c,
                 "SELECT COUNT(*), COALESCE(SUM(size), 0), "
                 "COALESCE(SUM(hits), 0) FROM objects",
                 error);
  if (!st)
    return FALSE;
  if (sqlite3_step(st) != SQLITE_ROW)
    return db_fail(c, "stats", error);
  out->entries = sqlite3_column_int64(st, 0);
  out->total_bytes = sqlite3_column_int64(st, 1);
  out->hits = sqlite3_column_int64(st, 2);
  return TRUE;
}

gboolean weir_cache_clear(WeirCache *c, GError **error) {
  if (!db_begin(c, error))
    return FALSE;
  if (!db_exec(c, "DELETE FROM objects", error)) {
    db_rollback(c);
    return FALSE;
  }
  g_autoptr(GError) local = NULL;
  g_autoptr(GDir) d = g_dir_open(c->objects, 0, &local);
  if (!d) {
    db_rollback(c);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "cache directory: %s",
                local->message);
    return FALSE;
  }
  gint64 now = g_get_real_time() / G_USEC_PER_SEC;
  const char *name;
  while ((name = g_dir_read_name(d))) {
    g_autofree char *p = g_build_filename(c->objects, name, NULL);
    if (g_str_has_prefix(name, ".tmp-")) {
      /* may belong to an insert in progress in another process */
      GStatBuf st;
      if (g_stat(p, &st) == 0 && now - (gint64)st.st_mtime < STALE_TMP_SECONDS)
        continue;
    }
    if (g_unlink(p) != 0 && errno != ENOENT) {
      int e = errno;
      db_rollback(c);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                  "cache object '%s': cannot remove: %s", p, g_strerror(e));
      return FALSE;
    }
  }
  return db_commit(c, error);
}
