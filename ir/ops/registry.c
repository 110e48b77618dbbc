/* registry.c — the operator registry, attribute checking, inference helpers.
 *
 * Two tables, both keyed by name and guarded by one mutex: operator records
 * (WeirOpInfo, static data owned by their modules) and expansion functions
 * keyed by "op/impl".  The built-in operator records are registered by
 * weir_init() (core/init.c) through weir_ops_register_builtin()
 * (ir/ops/builtin.c); the registry never registers them itself.
 */
#include <stdlib.h>
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

static GMutex registry_lock;
static GHashTable *ops;        /* name -> const WeirOpInfo* */
static GHashTable *expansions; /* "op/impl" -> WeirExpandFunc */

static void ensure_tables(void) {
  /* Called with registry_lock held. */
  if (!ops) {
    ops = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    expansions = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  }
}

void weir_op_register(const WeirOpInfo *info) {
  g_return_if_fail(info && info->name);
  g_mutex_lock(&registry_lock);
  ensure_tables();
  g_hash_table_replace(ops, g_strdup(info->name), (gpointer)info);
  g_mutex_unlock(&registry_lock);
}

const WeirOpInfo *weir_op_lookup(const char *name) {
  if (!name)
    return NULL;
  g_mutex_lock(&registry_lock);
  ensure_tables();
  const WeirOpInfo *info = g_hash_table_lookup(ops, name);
  g_mutex_unlock(&registry_lock);
  return info;
}

static gboolean is_default_domain(const char *domain) {
  return !domain || !*domain || strcmp(domain, "ai.onnx") == 0;
}

const WeirOpInfo *weir_op_lookup_onnx(const char *domain, const char *op_type) {
  const WeirOpInfo *info = weir_op_lookup(op_type);
  if (!info)
    return NULL;
  if (is_default_domain(domain))
    return is_default_domain(info->domain) ? info : NULL;
  return g_strcmp0(info->domain, domain) == 0 ? info : NULL;
}

static int cmp_str(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

GPtrArray *weir_op_names(void) {
  GPtrArray *names = g_ptr_array_new();
  g_mutex_lock(&registry_lock);
  ensure_tables();
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, ops);
  while (g_hash_table_iter_next(&it, &key, NULL))
    g_ptr_array_add(names, key);
  g_mutex_unlock(&registry_lock);
  g_ptr_array_sort(names, cmp_str);
  return names;
}

void weir_op_register_expansion(const char *op, const char *impl,
                                WeirExpandFunc func) {
  g_return_if_fail(op && impl && func);
  g_mutex_lock(&registry_lock);
  ensure_tables();
  g_hash_table_replace(expansions, g_strdup_printf("%s/%s", op, impl),
                       (gpointer)func);
  g_mutex_unlock(&registry_lock);
}

WeirExpandFunc weir_op_expansion(const char *op, const char *impl) {
  g_autofree char *key = g_strdup_printf("%s/%s", op, impl ? impl : "pure");
  g_mutex_lock(&registry_lock);
  ensure_tables();
  WeirExpandFunc f = (WeirExpandFunc)g_hash_table_lookup(expansions, key);
  g_mutex_unlock(&registry_lock);
  return f;
}

static int cmp_key(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

char **weir_op_expansions(void) {
  g_autoptr(GStrvBuilder) b = g_strv_builder_new();
  g_mutex_lock(&registry_lock);
  ensure_tables();
  guint n = 0;
  g_autofree gpointer *keys = g_hash_table_get_keys_as_array(expansions, &n);
  qsort(keys, n, sizeof(gpointer), cmp_key);
  for (guint i = 0; i < n; i++)
    g_strv_builder_add(b, keys[i]);
  g_mutex_unlock(&registry_lock);
  return g_strv_builder_end(b);
}

/* ------------------------------------------------------------ attributes */

static gboolean parse_default(WeirNode *n, const WeirOpAttrSpec *spec,
                              GError **error) {
  const char *text = spec->default_value;
  switch (spec->type) {
  case WEIR_ATTR_INT:
    weir_node_set_attr_int(n, spec->name, g_ascii_strtoll(text, NULL, 10));
    return TRUE;
  case WEIR_ATTR_FLOAT:
    weir_node_set_attr_float(n, spec->name, g_ascii_strtod(text, NULL));
    return TRUE;
  case WEIR_ATTR_STRING:
    weir_node_set_attr_string(n, spec->name, text);
    return TRUE;
  case WEIR_ATTR_INTS: {
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    guint len = *text ? g_strv_length(parts) : 0;
    g_autofree gint64 *v = g_new0(gint64, len + 1);
    for (guint i = 0; i < len; i++)
      v[i] = g_ascii_strtoll(parts[i], NULL, 10);
    weir_node_set_attr_ints(n, spec->name, v, len);
    return TRUE;
  }
  case WEIR_ATTR_FLOATS: {
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    guint len = *text ? g_strv_length(parts) : 0;
    g_autofree double *v = g_new0(double, len + 1);
    for (guint i = 0; i < len; i++)
      v[i] = g_ascii_strtod(parts[i], NULL);
    weir_node_set_attr_floats(n, spec->name, v, len);
    return TRUE;
  }
  case WEIR_ATTR_STRINGS: {
    g_auto(GStrv) parts = g_strsplit(text, ",", -1);
    guint len = *text ? g_strv_length(parts) : 0;
    weir_node_set_attr_strings(n, spec->name, (const char *const *)parts, len);
    return TRUE;
  }
  case WEIR_ATTR_TYPE_COUNT:
    break;
  }
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
              "node '%s' (%s): attribute '%s' has an unknown type", n->label,
              n->op, spec->name);
  return FALSE;
}

gboolean weir_op_check_attrs(WeirNode *n, GError **error) {
  g_return_val_if_fail(n->kind == WEIR_NODE_LIBRARY, FALSE);
  const WeirOpInfo *info = weir_op_lookup(n->op);
  if (!info) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "node '%s': unsupported operator '%s'", n->label, n->op);
    return FALSE;
  }
  /* Unknown attributes. */
  for (guint i = 0; i < n->attrs->len; i++) {
    const WeirAttr *a = g_ptr_array_index(n->attrs, i);
    gboolean known = FALSE;
    for (guint k = 0; k < info->n_attrs && !known; k++)
      known = strcmp(info->attrs[k].name, a->name) == 0;
    if (!known) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "node '%s' (%s): unknown attribute '%s'", n->label, n->op,
                  a->name);
      return FALSE;
    }
  }
  for (guint k = 0; k < info->n_attrs; k++) {
    const WeirOpAttrSpec *spec = &info->attrs[k];
    const WeirAttr *a = weir_node_attr(n, spec->name);
    if (a) {
      if (a->type != spec->type) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "node '%s' (%s): attribute '%s' must be of type %s, not "
                    "%s",
                    n->label, n->op, spec->name,
                    weir_attr_type_name(spec->type),
                    weir_attr_type_name(a->type));
        return FALSE;
      }
      continue;
    }
    if (spec->required) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "node '%s' (%s): required attribute '%s' is missing",
                  n->label, n->op, spec->name);
      return FALSE;
    }
    if (spec->default_value && !parse_default(n, spec, error))
      return FALSE;
  }
  return TRUE;
}

/* ------------------------------------------------------------- inference */

const WeirOpValue *weir_op_input(const WeirOpInferContext *ctx, guint k) {
  if (k >= ctx->n_inputs || !ctx->inputs[k].present)
    return NULL;
  return &ctx->inputs[k];
}

const WeirOpValue *weir_op_require_input(const WeirOpInferContext *ctx, guint k,
                                         GError **error) {
  const WeirOpValue *v = weir_op_input(ctx, k);
  if (!v)
    weir_node_fail(error, WEIR_ERROR_INVALID, ctx->node, "input %u is missing",
                   k);
  return v;
}

gboolean weir_op_normalize_axis(const WeirNode *n, const char *what,
                                gint64 axis, guint rank, gboolean inclusive,
                                guint *out, GError **error) {
  gint64 r = rank, a = axis < 0 ? axis + r : axis;
  if (a < 0 || a > r || (a == r && !inclusive))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "%s %" G_GINT64_FORMAT " is out of range for rank %u",
                          what, axis, rank);
  *out = (guint)a;
  return TRUE;
}

void weir_op_set_output(WeirOpInferContext *ctx, guint k, WeirDType dtype,
                        guint rank, WeirExpr *const *shape) {
  g_return_if_fail(k < ctx->n_outputs);
  WeirOpValue *v = &ctx->outputs[k];
  for (guint d = 0; d < v->rank && v->shape; d++)
    weir_expr_unref(v->shape[d]);
  g_free(v->shape);
  v->present = TRUE;
  v->dtype = dtype;
  v->rank = rank;
  v->shape = g_new0(WeirExpr *, rank ? rank : 1);
  for (guint d = 0; d < rank; d++)
    v->shape[d] = weir_expr_ref(shape[d]);
}

void weir_op_set_output_bounded(WeirOpInferContext *ctx, guint k, guint dim) {
  g_return_if_fail(k < ctx->n_outputs);
  WeirOpValue *v = &ctx->outputs[k];
  g_return_if_fail(v->present && dim < v->rank);
  v->bounded = TRUE;
  v->bounded_dim = dim;
}

void weir_op_set_output_int_values(WeirOpInferContext *ctx, guint k,
                                   WeirExpr *const *values, guint n) {
  g_return_if_fail(k < ctx->n_outputs);
  WeirOpValue *v = &ctx->outputs[k];
  g_clear_pointer(&v->int_values, g_ptr_array_unref);
  v->int_values =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint i = 0; i < n; i++)
    g_ptr_array_add(v->int_values, weir_expr_ref(values[i]));
}

/* ----------------------------------------------------------------- names */

char *weir_graph_fresh_name(const WeirGraph *g, const char *base) {
  if (!weir_graph_container(g, base))
    return g_strdup(base);
  for (guint i = 1;; i++) {
    char *name = g_strdup_printf("%s_%u", base, i);
    if (!weir_graph_container(g, name))
      return name;
    g_free(name);
  }
}

gboolean weir_op_broadcast(guint n, const guint *ranks,
                           WeirExpr *const *const *shapes, guint *out_rank,
                           WeirExpr ***out_shape, GError **error) {
  guint rank = 0;
  for (guint i = 0; i < n; i++)
    rank = MAX(rank, ranks[i]);
  WeirExpr **shape = g_new0(WeirExpr *, rank ? rank : 1);
  for (guint d = 0; d < rank; d++) {
    WeirExpr *dim = NULL;
    for (guint i = 0; i < n; i++) {
      if (d + ranks[i] < rank)
        continue; /* this input has no such (leading) dimension */
      WeirExpr *e = shapes[i][d + ranks[i] - rank];
      gint64 v;
      if (weir_expr_is_const(e, &v) && v == 1)
        continue;
      if (!dim) {
        dim = e;
      } else if (!weir_expr_equal(dim, e)) {
        g_autofree char *a = weir_expr_to_string(dim);
        g_autofree char *b = weir_expr_to_string(e);
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "shapes cannot be broadcast: dimension %u is %s in one "
                    "input and %s in another",
                    d, a, b);
        for (guint k = 0; k < d; k++)
          weir_expr_unref(shape[k]);
        g_free(shape);
        return FALSE;
      }
    }
    shape[d] = dim ? weir_expr_ref(dim) : weir_expr_const(1);
  }
  *out_rank = rank;
  *out_shape = shape;
  return TRUE;
}

void weir_op_value_clear(WeirOpValue *v) {
  for (guint d = 0; d < v->rank && v->shape; d++)
    weir_expr_unref(v->shape[d]);
  g_clear_pointer(&v->shape, g_free);
  g_clear_pointer(&v->int_values, g_ptr_array_unref);
}

gboolean weir_op_dtype_from_onnx(gint64 onnx_type, WeirDType *out) {
  static const struct {
    gint64 onnx;
    WeirDType dtype;
  } types[] = {
      {1, WEIR_DTYPE_F32},   {2, WEIR_DTYPE_U8},   {3, WEIR_DTYPE_I8},
      {4, WEIR_DTYPE_U16},   {5, WEIR_DTYPE_I16},  {6, WEIR_DTYPE_I32},
      {7, WEIR_DTYPE_I64},   {9, WEIR_DTYPE_BOOL}, {10, WEIR_DTYPE_F16},
      {11, WEIR_DTYPE_F64},  {12, WEIR_DTYPE_U32}, {13, WEIR_DTYPE_U64},
      {16, WEIR_DTYPE_BF16},
  };
  G_STATIC_ASSERT(G_N_ELEMENTS(types) == WEIR_DTYPE_COUNT);
  for (guint i = 0; i < G_N_ELEMENTS(types); i++)
    if (types[i].onnx == onnx_type) {
      *out = types[i].dtype;
      return TRUE;
    }
  return FALSE;
}

WeirExpr *weir_op_flops_zero(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n) {
  (void)g;
  (void)s;
  (void)n;
  return weir_expr_const(0);
}
