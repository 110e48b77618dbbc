/* plugins.c — loading third-party transformations from shared objects.
 *
 * A plugin is a shared object exporting WEIR_PLUGIN_ENTRY
 * (weir_plugin_register), opened with GModule (G_MODULE_BIND_LOCAL: its
 * symbols never leak into the process), whose undefined references resolve
 * against the libweir already loaded.  The entry point is called with the
 * host's API version and registers its transformations.  The registrations
 * made during that call are captured: if any was refused, or the entry
 * point fails, every transformation the plugin did register is removed
 * again and the module is unloaded, so a refused plugin leaves no trace.
 * A loaded plugin stays resident for the life of the process (its records
 * are borrowed by the registry).
 *
 * Directories: each entry of WEIR_PLUGIN_PATH (':'-separated), then
 * g_get_user_data_dir()/weir/plugins; in each, the *.so files in sorted
 * order.  A directory is scanned once per process, a file (by its real
 * path) loaded at most once.
 */
#include <stdlib.h>
#include <string.h>

#include <gmodule.h>

#include "weir-transform-private.h"

static GMutex plugins_lock;      /* serializes loading */
static GHashTable *loaded_files; /* real path -> GModule* */
static GHashTable *scanned_dirs; /* real path -> NULL */

static char *real_path(const char *path) {
  char *r = realpath(path, NULL);
  if (!r)
    return g_strdup(path);
  char *copy = g_strdup(r);
  free(r);
  return copy;
}

/* Builds the message explaining why a plugin's registration failed. */
static void refusal_error(const char *path, const WeirRegisterCapture *c,
                          const GError *entry_error, GError **error) {
  if (c->newer_version)
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_VERSION,
                "plugin '%s': API version %u is newer than this Weir's %d "
                "(transformation '%s'); rebuild it against this Weir",
                path, c->newer_version, WEIR_PLUGIN_API_VERSION,
                c->newer_name ? c->newer_name : "(unnamed)");
  else if (c->duplicate)
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "plugin '%s': registers '%s', which already exists", path,
                c->duplicate);
  else if (c->first_refusal)
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "plugin '%s': registration refused: %s", path,
                c->first_refusal);
  else if (entry_error)
    g_set_error(error, WEIR_ERROR, entry_error->code,
                "plugin '%s': registration failed: %s", path,
                entry_error->message);
  else
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "plugin '%s': registration failed (%s returned FALSE without "
                "an error)",
                path, WEIR_PLUGIN_ENTRY);
}

/* Loads one file; called with plugins_lock held.  *already is set when the
 * file was loaded before. */
static gboolean load_locked(const char *path, gboolean *already,
                            GError **error) {
  *already = FALSE;
  if (!g_module_supported()) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "plugin '%s': this platform cannot load modules", path);
    return FALSE;
  }
  if (!loaded_files)
    loaded_files = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autofree char *real = real_path(path);
  if (g_hash_table_contains(loaded_files, real)) {
    *already = TRUE;
    return TRUE;
  }
  if (!g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "plugin '%s': no such file",
                path);
    return FALSE;
  }
  GModule *module = g_module_open(path, G_MODULE_BIND_LOCAL);
  if (!module) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "plugin '%s': cannot be loaded: %s", path, g_module_error());
    return FALSE;
  }
  gpointer sym = NULL;
  if (!g_module_symbol(module, WEIR_PLUGIN_ENTRY, &sym) || !sym) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "plugin '%s': no symbol %s", path, WEIR_PLUGIN_ENTRY);
    g_module_close(module);
    return FALSE;
  }
  WeirPluginRegisterFunc entry = (WeirPluginRegisterFunc)sym;

  WeirRegisterCapture capture;
  g_autoptr(GError) entry_error = NULL;
  weir_transform_capture_begin(&capture);
  gboolean ok = entry(WEIR_PLUGIN_API_VERSION, &entry_error);
  weir_transform_capture_end();
  if (!ok || capture.first_refusal) {
    refusal_error(path, &capture, entry_error, error);
    /* Roll back before the records' memory goes away with the module. */
    for (guint i = 0; i < capture.registered->len; i++)
      weir_transform_unregister(g_ptr_array_index(capture.registered, i));
    weir_register_capture_clear(&capture);
    g_module_close(module);
    return FALSE;
  }
  weir_register_capture_clear(&capture);
  g_module_make_resident(module);
  g_hash_table_insert(loaded_files, g_steal_pointer(&real), module);
  return TRUE;
}

gboolean weir_plugin_load_file(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, FALSE);
  g_mutex_lock(&plugins_lock);
  gboolean already;
  gboolean ok = load_locked(path, &already, error);
  g_mutex_unlock(&plugins_lock);
  return ok;
}

static int compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static gboolean has_so_suffix(const char *name) {
  return g_str_has_suffix(name, ".so") && strlen(name) > 3;
}

/* Loads the plugins of one directory; returns how many were loaded. */
static guint load_directory(const char *dir, GPtrArray *problems) {
  if (!scanned_dirs)
    scanned_dirs = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  if (!g_file_test(dir, G_FILE_TEST_IS_DIR))
    return 0; /* a missing directory is not a problem */
  g_autofree char *real = real_path(dir);
  if (g_hash_table_contains(scanned_dirs, real))
    return 0;
  g_hash_table_add(scanned_dirs, g_strdup(real));

  g_autoptr(GError) error = NULL;
  g_autoptr(GDir) d = g_dir_open(dir, 0, &error);
  if (!d) {
    if (problems)
      g_ptr_array_add(problems, g_strdup_printf("plugin directory '%s': %s",
                                                dir, error->message));
    return 0;
  }
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  const char *name;
  while ((name = g_dir_read_name(d)))
    if (has_so_suffix(name))
      g_ptr_array_add(names, g_strdup(name));
  g_ptr_array_sort(names, compare_strings);
  guint count = 0;
  for (guint i = 0; i < names->len; i++) {
    g_autofree char *path =
        g_build_filename(dir, (char *)g_ptr_array_index(names, i), NULL);
    g_autoptr(GError) local = NULL;
    gboolean already;
    if (load_locked(path, &already, &local)) {
      if (!already)
        count++;
    } else if (problems) {
      g_ptr_array_add(problems, g_strdup(local->message));
    }
  }
  return count;
}

guint weir_plugins_load(GPtrArray *problems) {
  g_autoptr(GPtrArray) dirs = g_ptr_array_new_with_free_func(g_free);
  const char *env = g_getenv("WEIR_PLUGIN_PATH");
  if (env) {
    g_auto(GStrv) parts = g_strsplit(env, G_SEARCHPATH_SEPARATOR_S, -1);
    for (guint i = 0; parts[i]; i++)
      if (parts[i][0])
        g_ptr_array_add(dirs, g_strdup(parts[i]));
  }
  g_ptr_array_add(
      dirs, g_build_filename(g_get_user_data_dir(), "weir", "plugins", NULL));
  guint count = 0;
  g_mutex_lock(&plugins_lock);
  for (guint i = 0; i < dirs->len; i++)
    count += load_directory(g_ptr_array_index(dirs, i), problems);
  g_mutex_unlock(&plugins_lock);
  return count;
}
