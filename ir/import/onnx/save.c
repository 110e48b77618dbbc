/* save.c — writing an ONNX model back with new initializer values.
 *
 * The original file is decoded into protobuf-c's generated ModelProto, the
 * chosen initializers of the main graph get their new data (raw_data,
 * little-endian; the typed data fields are emptied, as the ONNX spec wants
 * exactly one of them), and the message is packed again.  Everything else
 * (nodes, names, opsets, metadata, other initializers) is what protobuf-c
 * decoded, so the file differs from the original only in those tensors
 * (and in field order, which protobuf does not fix).
 *
 * The unpacked message owns its buffers: new data (and new metadata
 * entries) are swapped in for the pack and the original pointers are put
 * back before the message is freed.
 */
#include <string.h>

#include "onnx-private.h"

typedef struct {
  Onnx__TensorProto *proto;
  protobuf_c_boolean has_raw_data;
  ProtobufCBinaryData raw_data;
  size_t n_float, n_double, n_int32, n_int64, n_uint64;
  guint8 *bytes; /* the new raw data (owned) */
  size_t n_dims; /* the old shape, when a new one (owned) is swapped in */
  int64_t *dims, *new_dims;
} Swap;

static void swap_restore(Swap *s) {
  Onnx__TensorProto *p = s->proto;
  p->has_raw_data = s->has_raw_data;
  p->raw_data = s->raw_data;
  p->n_float_data = s->n_float;
  p->n_double_data = s->n_double;
  p->n_int32_data = s->n_int32;
  p->n_int64_data = s->n_int64;
  p->n_uint64_data = s->n_uint64;
  g_free(s->bytes);
  if (s->new_dims) {
    p->n_dims = s->n_dims;
    p->dims = s->dims;
    g_free(s->new_dims);
  }
}

static gboolean swap_in(Swap *s, Onnx__TensorProto *p, const WeirTensor *t,
                        gboolean reshape, const char *source, GError **error) {
  const char *name = p->name ? p->name : "";
  WeirDType dtype;
  if (!weir_onnx_type_to_dtype(p->data_type, &dtype) || dtype != t->dtype) {
    g_autofree char *want = weir_onnx_type_name(p->data_type);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: initializer '%s' is %s, the new value is %s", source, name,
                want, weir_dtype_name(t->dtype));
    return FALSE;
  }
  gboolean same = p->n_dims == t->rank;
  for (guint i = 0; same && i < t->rank; i++)
    same = p->dims[i] == t->shape[i];
  if (!same && !reshape) {
    g_autofree char *got = weir_tensor_describe(t);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: initializer '%s' has %zu dimensions of another shape than "
                "the new value %s",
                source, name, p->n_dims, got);
    return FALSE;
  }
  if (p->has_data_location &&
      p->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: initializer '%s' keeps its data in an external file",
                source, name);
    return FALSE;
  }
  gsize size = weir_dtype_size(t->dtype);
  s->proto = p;
  s->has_raw_data = p->has_raw_data;
  s->raw_data = p->raw_data;
  s->n_float = p->n_float_data;
  s->n_double = p->n_double_data;
  s->n_int32 = p->n_int32_data;
  s->n_int64 = p->n_int64_data;
  s->n_uint64 = p->n_uint64_data;
  s->bytes = g_malloc(MAX(t->count * size, 1));
  weir_onnx_copy_le(s->bytes, t->data, t->count, size);
  p->has_raw_data = TRUE;
  p->raw_data.len = t->count * size;
  p->raw_data.data = s->bytes;
  p->n_float_data = p->n_double_data = p->n_int32_data = 0;
  p->n_int64_data = p->n_uint64_data = 0;
  if (!same) {
    s->n_dims = p->n_dims;
    s->dims = p->dims;
    s->new_dims = g_new(int64_t, MAX(t->rank, 1));
    for (guint i = 0; i < t->rank; i++)
      s->new_dims[i] = t->shape[i];
    p->n_dims = t->rank;
    p->dims = s->new_dims;
  }
  return TRUE;
}

static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static gboolean save(const char *source_path, GHashTable *values,
                     GHashTable *metadata, gboolean reshape, const char *path,
                     GError **error);

gboolean weir_onnx_save_with_initializers(const char *source_path,
                                          GHashTable *values, const char *path,
                                          GError **error) {
  return save(source_path, values, NULL, FALSE, path, error);
}

gboolean weir_onnx_save_with_metadata(const char *source_path,
                                      GHashTable *values, GHashTable *metadata,
                                      const char *path, GError **error) {
  return save(source_path, values, metadata, TRUE, path, error);
}

/* Metadata entries set for the pack: existing keys get the new value,
 * others are appended (sorted by key). */
typedef struct {
  Onnx__StringStringEntryProto **old_props;
  size_t old_n;
  GPtrArray *entries; /* Onnx__StringStringEntryProto*, owned */
  Onnx__StringStringEntryProto **props;
  char **old_values; /* per old entry: the value replaced, or NULL */
} MetaSwap;

static void meta_entry_free(gpointer p) {
  Onnx__StringStringEntryProto *e = p;
  g_free(e->key);
  g_free(e->value);
  g_free(e);
}

static void meta_swap_in(MetaSwap *ms, Onnx__ModelProto *m,
                         GHashTable *metadata) {
  ms->old_props = m->metadata_props;
  ms->old_n = m->n_metadata_props;
  ms->entries = g_ptr_array_new_with_free_func(meta_entry_free);
  ms->old_values = g_new0(char *, ms->old_n + 1);
  g_autoptr(GPtrArray) keys = g_ptr_array_new();
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, metadata);
  while (g_hash_table_iter_next(&it, &key, NULL))
    g_ptr_array_add(keys, key);
  g_ptr_array_sort(keys, compare_names);
  ms->props = g_new0(Onnx__StringStringEntryProto *, ms->old_n + keys->len + 1);
  size_t n = 0;
  for (size_t i = 0; i < ms->old_n; i++)
    ms->props[n++] = m->metadata_props[i];
  for (guint k = 0; k < keys->len; k++) {
    const char *value = g_hash_table_lookup(metadata, keys->pdata[k]);
    gboolean found = FALSE;
    for (size_t i = 0; i < ms->old_n && !found; i++) {
      if (g_strcmp0(m->metadata_props[i]->key, keys->pdata[k]) == 0) {
        ms->old_values[i] = m->metadata_props[i]->value;
        m->metadata_props[i]->value = (char *)value;
        found = TRUE;
      }
    }
    if (found)
      continue;
    Onnx__StringStringEntryProto *e = g_new0(Onnx__StringStringEntryProto, 1);
    onnx__string_string_entry_proto__init(e);
    e->key = g_strdup(keys->pdata[k]);
    e->value = g_strdup(value);
    g_ptr_array_add(ms->entries, e);
    ms->props[n++] = e;
  }
  m->metadata_props = ms->props;
  m->n_metadata_props = n;
}

static void meta_swap_restore(MetaSwap *ms, Onnx__ModelProto *m) {
  for (size_t i = 0; i < ms->old_n; i++) {
    if (ms->old_values[i])
      ms->old_props[i]->value = ms->old_values[i];
  }
  m->metadata_props = ms->old_props;
  m->n_metadata_props = ms->old_n;
  g_free(ms->props);
  g_free(ms->old_values);
  g_ptr_array_unref(ms->entries);
}

static gboolean save(const char *source_path, GHashTable *values,
                     GHashTable *metadata, gboolean reshape, const char *path,
                     GError **error) {
  g_return_val_if_fail(source_path && values && path, FALSE);
  GError *local = NULL;
  g_autoptr(GMappedFile) file = g_mapped_file_new(source_path, FALSE, &local);
  if (!file) {
    g_set_error_literal(error, WEIR_ERROR, WEIR_ERROR_IO, local->message);
    g_error_free(local);
    return FALSE;
  }
  Onnx__ModelProto *m = onnx__model_proto__unpack(
      NULL, g_mapped_file_get_length(file),
      (const guint8 *)g_mapped_file_get_contents(file));
  if (!m || !m->graph) {
    if (m)
      onnx__model_proto__free_unpacked(m, NULL);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: not a valid ONNX model", source_path);
    return FALSE;
  }

  /* names in sorted order, so the first error is always the same one */
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, values);
  while (g_hash_table_iter_next(&it, &key, NULL))
    g_ptr_array_add(names, key);
  g_ptr_array_sort(names, compare_names);

  Onnx__GraphProto *g = m->graph;
  g_autoptr(GArray) swaps = g_array_new(FALSE, TRUE, sizeof(Swap));
  gboolean ok = TRUE;
  for (guint k = 0; ok && k < names->len; k++) {
    const char *name = names->pdata[k];
    Onnx__TensorProto *p = NULL;
    for (size_t i = 0; i < g->n_initializer && !p; i++) {
      if (g_strcmp0(g->initializer[i]->name, name) == 0)
        p = g->initializer[i];
    }
    if (!p) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: the model has no initializer '%s'", source_path, name);
      ok = FALSE;
      break;
    }
    Swap s = {0};
    ok = swap_in(&s, p, g_hash_table_lookup(values, name), reshape, source_path,
                 error);
    if (ok)
      g_array_append_val(swaps, s);
    for (size_t i = 0; ok && s.new_dims && i < g->n_input; i++)
      if (g_strcmp0(g->input[i]->name, name) == 0) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                    "%s: initializer '%s' changes shape and is also declared "
                    "as a graph input",
                    source_path, name);
        ok = FALSE;
      }
  }
  /* a new shape makes the recorded shapes of values computed from it
   * stale: the (optional) value_info entries are left out */
  gboolean reshaped = FALSE;
  for (guint i = 0; i < swaps->len; i++)
    reshaped = reshaped || g_array_index(swaps, Swap, i).new_dims;
  size_t n_value_info = g->n_value_info;
  if (reshaped)
    g->n_value_info = 0;
  MetaSwap ms = {0};
  gboolean meta_in = ok && metadata;
  if (meta_in)
    meta_swap_in(&ms, m, metadata);
  if (ok) {
    gsize len = onnx__model_proto__get_packed_size(m);
    g_autofree guint8 *out = g_malloc(MAX(len, 1));
    onnx__model_proto__pack(m, out);
    if (!g_file_set_contents(path, (const char *)out, (gssize)len, &local)) {
      g_set_error_literal(error, WEIR_ERROR, WEIR_ERROR_IO, local->message);
      g_error_free(local);
      ok = FALSE;
    }
  }
  if (meta_in)
    meta_swap_restore(&ms, m);
  g->n_value_info = n_value_info;
  for (guint i = 0; i < swaps->len; i++)
    swap_restore(&g_array_index(swaps, Swap, i));
  onnx__model_proto__free_unpacked(m, NULL);
  return ok;
}
