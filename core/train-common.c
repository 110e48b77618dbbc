/* train-common.c — see train-common.h. */
#include <string.h>

#include "train-common.h"
#include "weir-codegen.h"
#include "weir-import.h"

const WeirOnnxValueInfo *weir_train_model_input(const WeirOnnxGraph *g,
                                                const char *path,
                                                const char *what,
                                                GError **error) {
  const WeirOnnxValueInfo *input = NULL;
  for (guint i = 0; i < g->n_inputs; i++) {
    if (!weir_onnx_graph_is_real_input(g, g->inputs[i].name))
      continue;
    if (input) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: the model has several inputs ('%s', '%s'); %s needs "
                  "one",
                  path, input->name, g->inputs[i].name, what);
      return NULL;
    }
    input = &g->inputs[i];
  }
  if (!input)
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: the model has no input", path);
  return input;
}

WeirGraph *weir_train_import_shaped(WeirOnnxModel *model, const char *input,
                                    const gint64 *shape, guint rank,
                                    GHashTable *names, GError **error) {
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  GArray *dims = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_vals(dims, shape, rank);
  g_hash_table_insert(shapes, (gpointer)input, dims);
  WeirOnnxImportOptions io = {0};
  io.input_shapes = shapes;
  io.names = names;
  return weir_onnx_import_model(model, &io, error);
}

static gboolean skipped(const char *name, const char *const *skip) {
  for (guint i = 0; skip && skip[i]; i++)
    if (strcmp(name, skip[i]) == 0)
      return TRUE;
  return FALSE;
}

GHashTable *weir_train_state_new(const WeirGraph *program,
                                 const WeirGraph *forward, GHashTable *bindings,
                                 const char *const *skip, const char *path,
                                 GError **error) {
  g_autoptr(GHashTable) state = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) args = weir_codegen_arguments(program);
  for (guint i = 0; i < args->len; i++) {
    const WeirContainer *c = args->pdata[i];
    if (skipped(c->name, skip))
      continue;
    g_autofree gint64 *shape = g_new0(gint64, MAX(c->shape->len, 1));
    for (guint d = 0; d < c->shape->len; d++)
      if (!weir_expr_eval(c->shape->pdata[d], bindings, &shape[d], error)) {
        g_prefix_error(error, "%s: container '%s': ", path, c->name);
        return NULL;
      }
    g_autoptr(WeirTensor) v =
        weir_tensor_try_new(c->dtype, c->shape->len, shape, error);
    if (!v) {
      g_prefix_error(error, "%s: container '%s': ", path, c->name);
      return NULL;
    }
    const WeirContainer *f = weir_graph_container(forward, c->name);
    if (f && f->initial) {
      gsize n = 0;
      const void *data = g_bytes_get_data(f->initial, &n);
      if (f->dtype != c->dtype || n != weir_tensor_nbytes(v)) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "%s: parameter '%s' of the training program does not "
                    "match the model's initializer",
                    path, c->name);
        return NULL;
      }
      memcpy(v->data, data, n);
    } else {
      memset(v->data, 0, weir_tensor_nbytes(v));
    }
    g_hash_table_insert(state, g_strdup(c->name), g_steal_pointer(&v));
  }
  return g_steal_pointer(&state);
}
