/* pipeline.c — the optimization levels: their recipes, read from the
 * GResource compiled from data/pipelines/ (weir-pipeline.h). */
#include <gio/gio.h>
#include <string.h>

#include "weir-pipeline.h"

/* data/pipelines/pipelines.gresource.xml, compiled by core/meson.build */
GResource *weir_pipelines_get_resource(void);

#define PIPELINE_RESOURCE "/org/weir/pipelines/O%u.json"

gboolean weir_pipeline_parse_level(const char *text, guint *level,
                                   GError **error) {
  g_return_val_if_fail(text != NULL && level != NULL, FALSE);
  const char *p = text;
  if (p[0] == '-')
    p++;
  if (p[0] == 'O')
    p++;
  if (p[0] >= '0' && p[0] <= '0' + WEIR_OPT_LEVEL_MAX && p[1] == '\0') {
    *level = (guint)(p[0] - '0');
    return TRUE;
  }
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
              "'%s' is not an optimization level (expected 0 to %d, as -O2 "
              "or 2)",
              text, WEIR_OPT_LEVEL_MAX);
  return FALSE;
}

char *weir_pipeline_text(guint level, GError **error) {
  if (level > WEIR_OPT_LEVEL_MAX) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "no optimization level %u (the levels are 0 to %d)", level,
                WEIR_OPT_LEVEL_MAX);
    return NULL;
  }
  g_autofree char *path = g_strdup_printf(PIPELINE_RESOURCE, level);
  g_autoptr(GBytes) b = g_resource_lookup_data(
      weir_pipelines_get_resource(), path, G_RESOURCE_LOOKUP_FLAGS_NONE, error);
  if (!b)
    return NULL;
  gsize len = 0;
  const char *data = g_bytes_get_data(b, &len);
  return g_strndup(data, len);
}

WeirRecipe *weir_pipeline_recipe(guint level, GError **error) {
  g_autofree char *text = weir_pipeline_text(level, error);
  if (!text)
    return NULL;
  g_autofree char *source = g_strdup_printf("-O%u", level);
  return weir_recipe_parse(text, -1, source, error);
}

gboolean weir_pipeline_apply(WeirGraph *program, guint level,
                             GHashTable *bindings, WeirRecipeReport *report,
                             GError **error) {
  g_return_val_if_fail(program != NULL, FALSE);
  g_autoptr(WeirRecipe) r = weir_pipeline_recipe(level, error);
  if (!r)
    return FALSE;
  return weir_recipe_apply(program, r, bindings, report, error);
}

gboolean weir_session_optimize(WeirSession *session, guint level,
                               WeirRecipeReport **report, GError **error) {
  g_return_val_if_fail(session != NULL, FALSE);
  WeirRecipeReport *rep = weir_recipe_report_new();
  g_autoptr(WeirRecipe) r = weir_pipeline_recipe(level, error);
  gboolean ok = r && weir_recipe_apply_session(session, r, rep, error);
  if (report)
    *report = rep;
  else
    weir_recipe_report_free(rep);
  return ok;
}
