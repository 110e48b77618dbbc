/* scratch.c — temporaries named after their owner, and their cleaning
 * (weir-scratch.h). */
#include "weir-scratch.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "weir-cache.h"

static char *host_name(void) {
  GString *s = g_string_new(NULL);
  for (const char *p = g_get_host_name(); *p && s->len < 32; p++)
    g_string_append_c(s, g_ascii_isalnum(*p) ? *p : '_');
  if (s->len == 0)
    g_string_append(s, "host");
  return g_string_free(s, FALSE);
}

char *weir_scratch_owner(void) {
  g_autofree char *host = host_name();
  return g_strdup_printf("%s-%ld", host, (long)getpid());
}

gboolean weir_scratch_is_stale(const char *owner, gint64 mtime) {
  gint64 now = g_get_real_time() / G_USEC_PER_SEC;
  if (now - mtime > WEIR_STALE_SECONDS)
    return TRUE;
  if (!owner)
    return FALSE;
  const char *dash = strrchr(owner, '-');
  if (!dash || !dash[1])
    return FALSE;
  g_autofree char *host = g_strndup(owner, (gsize)(dash - owner));
  g_autofree char *here = host_name();
  if (strcmp(host, here) != 0)
    return FALSE;
  char *end = NULL;
  gint64 pid = g_ascii_strtoll(dash + 1, &end, 10);
  if (*end || pid <= 0 || pid > G_MAXINT32 || pid == (gint64)getpid())
    return FALSE;
  return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

char *weir_scratch_root(void) {
  const char *env = g_getenv("WEIR_SCRATCH_DIR");
  if (env && *env)
    return g_strdup(env);
  g_autofree char *cache = weir_cache_default_dir();
  return g_build_filename(cache, "tmp", NULL);
}

void weir_scratch_remove(const char *dir) {
  GStatBuf st;
  if (g_lstat(dir, &st) != 0)
    return;
  if (S_ISDIR(st.st_mode)) {
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
      g_autofree char *p = g_build_filename(dir, name, NULL);
      weir_scratch_remove(p);
    }
    g_rmdir(dir);
  } else {
    g_unlink(dir);
  }
}

/* The owner part of "weir-<what>-<host>-<pid>-XXXXXX", or NULL when name is
 * not a scratch directory name. (transfer full) */
static char *scratch_owner_of(const char *name) {
  gsize len = strlen(name);
  if (!g_str_has_prefix(name, "weir-") || len < 5 + 7 + 4 ||
      name[len - 7] != '-')
    return NULL;
  const char *what_end = strchr(name + 5, '-');
  if (!what_end || what_end >= name + len - 7)
    return NULL;
  return g_strndup(what_end + 1, (gsize)(name + len - 7 - (what_end + 1)));
}

/* "weir-cc-XXXXXX" and the like: the names of earlier versions. */
static gboolean legacy_name(const char *name) {
  const char *prefixes[] = {"weir-cc-", "weir-rt-", "weir-bench-"};
  for (guint i = 0; i < G_N_ELEMENTS(prefixes); i++)
    if (g_str_has_prefix(name, prefixes[i]) &&
        strlen(name) == strlen(prefixes[i]) + 6)
      return TRUE;
  return FALSE;
}

guint weir_scratch_clean(const char *root) {
  guint removed = 0;
  g_autoptr(GDir) d = root ? g_dir_open(root, 0, NULL) : NULL;
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    g_autofree char *owner = scratch_owner_of(name);
    if (!owner)
      continue;
    g_autofree char *p = g_build_filename(root, name, NULL);
    GStatBuf st;
    if (g_lstat(p, &st) != 0 || !S_ISDIR(st.st_mode) ||
        !weir_scratch_is_stale(owner, (gint64)st.st_mtime))
      continue;
    weir_scratch_remove(p);
    removed++;
  }
  g_autoptr(GDir) t = g_dir_open(g_get_tmp_dir(), 0, NULL);
  while (t && (name = g_dir_read_name(t))) {
    if (!legacy_name(name))
      continue;
    g_autofree char *p = g_build_filename(g_get_tmp_dir(), name, NULL);
    GStatBuf st;
    if (g_lstat(p, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        !weir_scratch_is_stale(NULL, st.st_mtime))
      continue;
    weir_scratch_remove(p);
    removed++;
  }
  return removed;
}

char *weir_scratch_dir_new(const char *prefix, GError **error) {
  g_return_val_if_fail(prefix != NULL, NULL);
  g_autofree char *root = weir_scratch_root();
  if (g_mkdir_with_parents(root, 0700) != 0) {
    int e = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "cannot create the scratch directory %s: %s", root,
                g_strerror(e));
    return NULL;
  }
  static gsize cleaned = 0;
  if (g_once_init_enter(&cleaned)) {
    weir_scratch_clean(root);
    g_once_init_leave(&cleaned, 1);
  }
  g_autofree char *owner = weir_scratch_owner();
  char *path = g_strdup_printf("%s/%s-%s-XXXXXX", root, prefix, owner);
  if (!g_mkdtemp_full(path, 0700)) {
    int e = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "cannot create a scratch directory in %s: %s", root,
                g_strerror(e));
    g_free(path);
    return NULL;
  }
  return path;
}
