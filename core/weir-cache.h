/* weir-cache.h — the compile cache: shared objects keyed by what built them.
 *
 * Layout of a cache directory (docs/runtime.md):
 *   <dir>/weir-cache.db         SQLite index (WAL mode): one row per object
 *                               with key, size, SHA-256 of the bytes,
 *                               created, last_used (µs since the epoch), hits
 *   <dir>/objects/<key>.so      the shared objects
 *
 * The key is the hex SHA-256 of the generated source, the compiler identity,
 * the compiler flags and the ABI version (weir_cache_key).  Objects are
 * written to a temporary file in objects/ and renamed into place; renames,
 * unlinks and index changes happen inside one SQLite write transaction (busy
 * timeout 30 s), so several processes can share a cache.  After an insert,
 * least recently used objects are evicted until the total size is within
 * the limit (the object just inserted is always kept).  A lookup checks the
 * object's size and checksum; an object that is missing or damaged is
 * removed from the index and the lookup reports a miss.
 *
 * A WeirCache is used by one thread at a time.
 */
#ifndef WEIR_CACHE_H
#define WEIR_CACHE_H

#include "weir-types.h"

G_BEGIN_DECLS

/* Default size limit: 1 GiB (environment: WEIR_CACHE_MAX_BYTES). */
#define WEIR_CACHE_DEFAULT_MAX_BYTES ((gint64)1 << 30)

typedef struct _WeirCache WeirCache;

typedef struct {
  gint64 entries;     /* objects in the index */
  gint64 total_bytes; /* sum of their sizes */
  gint64 hits;        /* sum of the hit counters */
  gint64 max_bytes;   /* the size limit in force */
} WeirCacheStats;

/* The directory used when none is given: $WEIR_CACHE_DIR when set and
 * non-empty, else g_get_user_cache_dir()/weir. (transfer full) */
WEIR_API char *weir_cache_default_dir(void);

/* Opens (creating when needed) the cache in dir; NULL dir means
 * weir_cache_default_dir().  The size limit is $WEIR_CACHE_MAX_BYTES when
 * set (an error when it is not a positive integer), else 1 GiB.
 * (transfer full, weir_cache_free) */
/**
 * weir_cache_open: (skip)
 */
WEIR_API WeirCache *weir_cache_open(const char *dir, GError **error);
WEIR_API void weir_cache_free(WeirCache *cache);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirCache, weir_cache_free)

/* The cache directory (borrowed). */
WEIR_API const char *weir_cache_dir(const WeirCache *cache);
/* Overrides the size limit (bytes, > 0); it applies from the next insert. */
WEIR_API void weir_cache_set_max_bytes(WeirCache *cache, gint64 max_bytes);

/* The key of an object: hex SHA-256 over a format tag, abi_version,
 * compiler_identity, flags and source (each length-delimited).
 * (transfer full) */
WEIR_API char *weir_cache_key(const char *source, const char *compiler_identity,
                              const char *flags, int abi_version);

/* Looks key up.  On a hit returns the object's path (transfer full) and
 * updates last_used and hits.  On a miss returns NULL without an error; when
 * the index had the key but the object was missing or damaged, the entry is
 * removed and *recovered (optional) is set to TRUE.  NULL with an error on
 * database or file system failures. */
WEIR_API char *weir_cache_lookup(WeirCache *cache, const char *key,
                                 gboolean *recovered, GError **error);

/* Stores object under key (replacing an existing object), then evicts least
 * recently used objects beyond the size limit.  *path_out (optional)
 * receives the object's path (transfer full). */
WEIR_API gboolean weir_cache_insert(WeirCache *cache, const char *key,
                                    GBytes *object, char **path_out,
                                    GError **error);

/* Removes key's object and index entry (e.g. after it failed to load).
 * Removing an absent key is not an error. */
WEIR_API gboolean weir_cache_remove(WeirCache *cache, const char *key,
                                    GError **error);

WEIR_API gboolean weir_cache_stats(WeirCache *cache, WeirCacheStats *out,
                                   GError **error);

/* Removes every object (and stray temporary files) and every index entry. */
WEIR_API gboolean weir_cache_clear(WeirCache *cache, GError **error);

G_END_DECLS

#endif
