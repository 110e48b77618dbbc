/* sqlite-wal.h — switching an SQLite database to write-ahead logging when
 * several processes may open it at once.  Internal to libweir.
 */
#ifndef WEIR_SQLITE_WAL_H
#define WEIR_SQLITE_WAL_H

#include <sqlite3.h>

/* Puts db in WAL mode and returns an SQLite result code (SQLITE_OK on
 * success).  Changing the journal mode needs an exclusive lock, and SQLite
 * returns SQLITE_BUSY at once, without calling the busy handler, when two
 * connections race for it (it would otherwise deadlock); this retries for
 * up to timeout_ms.  A database already in WAL mode is left alone without
 * taking that lock. */
int weir_sqlite_use_wal(sqlite3 *db, int timeout_ms);

#endif
