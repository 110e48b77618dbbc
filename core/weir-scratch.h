/* weir-scratch.h — temporary files and directories that a crash can leave
 * behind, and the rule that removes them (docs/reliability.md, "Litter").
 *
 * Every temporary Weir creates outside its final place carries its owner in
 * its name: "<prefix>-<host>-<pid>-XXXXXX" for scratch directories, and
 * ".<NAME>.<host>-<pid>.XXXXXX" beside a workspace being saved.  One is
 * stale, and may be removed by anyone, when
 *   - its owner ran on this host and that process no longer exists
 *     (kill(pid, 0) fails with ESRCH), or
 *   - it was last modified more than WEIR_STALE_SECONDS ago (an owner on
 *     another host sharing the directory, or a pid reused since).
 * A temporary of a live process of this host is never removed before that
 * age, so a save or a compile in progress is safe from the cleaning.
 */
#ifndef WEIR_SCRATCH_H
#define WEIR_SCRATCH_H

#include "weir-types.h"

G_BEGIN_DECLS

#define WEIR_STALE_SECONDS 3600

/* "<host>-<pid>" of this process, the host reduced to [A-Za-z0-9_] (at
 * most 32 characters). (transfer full) */
WEIR_API char *weir_scratch_owner(void);

/* Whether a temporary whose name holds owner "<host>-<pid>" (NULL when the
 * name has none: only the age counts) and was last modified at mtime
 * (seconds since the epoch) is stale by the rule above. */
WEIR_API gboolean weir_scratch_is_stale(const char *owner, gint64 mtime);

/* Where scratch directories live: $WEIR_SCRATCH_DIR when set, else
 * weir_cache_default_dir()/tmp. (transfer full) */
WEIR_API char *weir_scratch_root(void);

/* A new empty directory <root>/<prefix>-<owner>-XXXXXX (mode 0700; the
 * root is created when missing).  The first call of a process first removes
 * the stale scratch directories of the root (weir_scratch_clean).  Remove
 * it with weir_scratch_remove. (transfer full) */
WEIR_API char *weir_scratch_dir_new(const char *prefix, GError **error);

/* Removes the stale scratch directories in root (entries named
 * "weir-*-<host>-<pid>-XXXXXX"), and in the system temporary directory the
 * directories of earlier versions ("weir-cc-XXXXXX", "weir-rt-XXXXXX",
 * "weir-bench-XXXXXX") owned by this user and older than
 * WEIR_STALE_SECONDS.  Returns how many were removed. */
WEIR_API guint weir_scratch_clean(const char *root);

/* Removes dir and everything in it (symbolic links are removed, not
 * followed).  Errors are ignored. */
WEIR_API void weir_scratch_remove(const char *dir);

G_END_DECLS

#endif
