/* sqlite-wal.c — see sqlite-wal.h. */
#include <glib.h>
#include <string.h>

#include "sqlite-wal.h"

/* The journal mode as SQLite reports it, into mode[size]; SQLite result
 * code.  With set, asks for WAL first. */
static int journal_mode(sqlite3 *db, gboolean set, char *mode, size_t size) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(
      db, set ? "PRAGMA journal_mode=WAL" : "PRAGMA journal_mode", -1, &st,
      NULL);
  if (rc != SQLITE_OK)
    return rc;
  rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) {
    const unsigned char *text = sqlite3_column_text(st, 0);
    g_strlcpy(mode, text ? (const char *)text : "", size);
    rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  return rc;
}

int weir_sqlite_use_wal(sqlite3 *db, int timeout_ms) {
  gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
  char mode[16];
  for (;;) {
    int rc = journal_mode(db, FALSE, mode, sizeof mode);
    if (rc == SQLITE_OK && g_ascii_strcasecmp(mode, "wal") == 0)
      return SQLITE_OK;
    if (rc == SQLITE_OK)
      rc = journal_mode(db, TRUE, mode, sizeof mode);
    if (rc == SQLITE_OK && g_ascii_strcasecmp(mode, "wal") == 0)
      return SQLITE_OK;
    /* The switch can also come back unchanged (the old mode) when another
     * connection held a lock; both cases are retried until the deadline. */
    if (rc != SQLITE_OK && rc != SQLITE_BUSY && rc != SQLITE_LOCKED)
      return rc;
    if (g_get_monotonic_time() >= deadline)
      return rc == SQLITE_OK ? SQLITE_BUSY : rc;
    g_usleep(2000 + g_random_int_range(0, 3000));
  }
}
