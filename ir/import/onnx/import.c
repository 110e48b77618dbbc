/* import.c — the ONNX importer: an ONNX model's main graph as a Weir program.
 *
 * The passes, in order (weir-import.h states the result's conventions):
 *  1. check_operators: every node's operator is known (or is Constant);
 *     all unknown ones are reported together.  Then the opset.
 *  2. import_inputs: symbol names for the inputs' symbolic dimensions,
 *     bindings from the options, argument containers.
 *  3. import_node, for each node in file order: a Constant node becomes a
 *     constant value; any other node a library node (attributes converted,
 *     inputs that the latest opset takes as attributes moved into them,
 *     semantic changes of older opsets recorded, schema defaults filled in),
 *     whose outputs get their dtype and shape from the operator's inference
 *     and are compared with what the model declares.
 *  4. import_outputs: graph outputs are arguments (a constant or an input
 *     listed as an output is copied into its own container when needed).
 *  5. the program is validated.
 *
 * Values.  Every ONNX value name maps to one Value: what inference knows
 * (dtype, shape, constant content, int_values) and, once created, its
 * container and the one access node through which it is read and written.
 * ONNX values are assigned once and nodes come in topological order, so one
 * access node per container keeps the state acyclic.
 */
#include <string.h>

#include "onnx-control.h"
#include "onnx-private.h"
#include "weir-import.h"
#include "weir-ops.h"
#include "weir-validate.h"

/* Integer constants up to this many elements also get int_values, so that
 * shape computations mixing constants and Shape outputs stay known. */
#define MAX_INT_VALUES 64

typedef struct {
  char *name; /* ONNX name */
  WeirDType dtype;
  guint rank;
  WeirExpr **shape;      /* rank entries (owned references) */
  WeirTensor *value;     /* constant content, or NULL (owned) */
  GPtrArray *int_values; /* WeirExpr*, or NULL */
  gboolean is_input;     /* a real graph input */
  gboolean is_output;    /* a graph output */
  gboolean initializer;  /* decoded from an initializer of the same name */
  char *container;       /* container name once created, or NULL */
  guint access;          /* its access node, or 0 */
  gboolean bounded;      /* a data-dependent length (WeirContainer.count) */
  guint bounded_dim;
} Value;

typedef struct {
  const WeirOnnxModel *model;
  const WeirOnnxGraph *graph;
  const char *source;
  const WeirOnnxImportOptions *opts;
  gint64 opset;
  WeirGraph *g;
  WeirState *state;
  GHashTable *values;    /* ONNX name -> Value* (owned) */
  GHashTable *outputs;   /* set of graph output names (borrowed) */
  GHashTable *symbol_of; /* dim_param -> symbol name (owned) */
  GHashTable *bound;     /* dim_param -> gint64* (owned) */
  const WeirOnnxBodyInput *body_inputs; /* subgraphs: what the caller knows
                                           of inputs (borrowed) */
  guint n_body_inputs;
} Importer;

static void value_free(gpointer p) {
  Value *v = p;
  for (guint d = 0; d < v->rank && v->shape; d++)
    weir_expr_unref(v->shape[d]);
  g_free(v->shape);
  if (v->value)
    weir_tensor_free(v->value);
  if (v->int_values)
    g_ptr_array_unref(v->int_values);
  g_free(v->container);
  g_free(v->name);
  g_free(v);
}

static Value *value_new(Importer *imp, const char *name) {
  Value *v = g_new0(Value, 1);
  v->name = g_strdup(name);
  v->is_output = g_hash_table_contains(imp->outputs, name);
  g_hash_table_replace(imp->values, v->name, v);
  return v;
}

static Value *value_lookup(Importer *imp, const char *name) {
  return g_hash_table_lookup(imp->values, name);
}

/* Sets v's shape from a tensor's concrete dims. */
static void value_set_tensor_shape(Value *v, const WeirTensor *t) {
  v->dtype = t->dtype;
  v->rank = t->rank;
  v->shape = g_new0(WeirExpr *, t->rank ? t->rank : 1);
  for (guint d = 0; d < t->rank; d++)
    v->shape[d] = weir_expr_const(t->shape[d]);
}

/* Element i of an integer (or bool) tensor, exactly (through a double,
 * large int64 values such as Slice's INT64_MAX ends would not survive). */
static gint64 tensor_int(const WeirTensor *t, gint64 i) {
  switch (t->dtype) {
  case WEIR_DTYPE_I64:
    return ((const gint64 *)t->data)[i];
  case WEIR_DTYPE_I32:
    return ((const gint32 *)t->data)[i];
  case WEIR_DTYPE_U8:
  case WEIR_DTYPE_BOOL:
    return ((const guint8 *)t->data)[i];
  case WEIR_DTYPE_I8:
    return ((const gint8 *)t->data)[i];
  case WEIR_DTYPE_I16:
    return ((const gint16 *)t->data)[i];
  case WEIR_DTYPE_U16:
    return ((const guint16 *)t->data)[i];
  case WEIR_DTYPE_U32:
    return ((const guint32 *)t->data)[i];
  case WEIR_DTYPE_U64:
    return (gint64)((const guint64 *)t->data)[i];
  case WEIR_DTYPE_F32:
  case WEIR_DTYPE_F64:
  case WEIR_DTYPE_F16:
  case WEIR_DTYPE_BF16:
  case WEIR_DTYPE_COUNT:
    break;
  }
  g_return_val_if_reached(0);
}

/* Gives a small integer constant int_values too. */
static void value_set_constant(Value *v, WeirTensor *t) {
  value_set_tensor_shape(v, t);
  v->value = t;
  if ((t->dtype == WEIR_DTYPE_I64 || t->dtype == WEIR_DTYPE_I32) &&
      t->rank <= 1 && t->count <= MAX_INT_VALUES) {
    v->int_values =
        g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
    for (gint64 i = 0; i < t->count; i++)
      g_ptr_array_add(v->int_values, weir_expr_const(tensor_int(t, i)));
  }
}

static char *shape_text(guint rank, WeirExpr *const *shape) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < rank; d++) {
    g_autofree char *e = weir_expr_to_string(shape[d]);
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* ------------------------------------------------------------------ names */

gboolean weir_onnx_is_model_path(const char *path) {
  gsize len = path ? strlen(path) : 0;
  return len > 5 && g_ascii_strcasecmp(path + len - 5, ".onnx") == 0;
}

/* An identifier made from an ONNX name: invalid characters become '_', a
 * leading digit gets a 'v' in front, the empty name becomes "v". */
static char *sanitize(const char *name) {
  GString *s = g_string_new(NULL);
  if (!*name || g_ascii_isdigit(*name))
    g_string_append_c(s, 'v');
  for (const char *p = name; *p; p++)
    g_string_append_c(s, g_ascii_isalnum(*p) || *p == '_' ? *p : '_');
  return g_string_free(s, FALSE);
}

static gboolean name_taken(Importer *imp, const char *name) {
  return weir_graph_container(imp->g, name) ||
         weir_graph_has_symbol(imp->g, name);
}

/* A fresh identifier for a container based on an ONNX name. */
static char *container_name(Importer *imp, const char *onnx_name) {
  g_autofree char *base = sanitize(onnx_name);
  if (!name_taken(imp, base))
    return g_steal_pointer(&base);
  for (guint i = 1;; i++) {
    char *name = g_strdup_printf("%s_%u", base, i);
    if (!name_taken(imp, name))
      return name;
    g_free(name);
  }
}

/* ---------------------------------------------------------------- errors */

static gboolean fail(Importer *imp, GError **error, WeirErrorCode code,
                     const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static gboolean fail(Importer *imp, GError **error, WeirErrorCode code,
                     const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, WEIR_ERROR, code, "%s: %s", imp->source, msg);
  return FALSE;
}

/* Re-raises a library error with the file name in front. */
static gboolean fail_prefixed(Importer *imp, GError **error, GError *local) {
  g_set_error(error, WEIR_ERROR, local->code, "%s: %s", imp->source,
              local->message);
  g_error_free(local);
  return FALSE;
}

static void warn(Importer *imp, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void warn(Importer *imp, const char *fmt, ...) {
  if (!imp->opts || !imp->opts->warnings)
    return;
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_ptr_array_add(imp->opts->warnings,
                  g_strdup_printf("%s: %s", imp->source, msg));
}

/* ------------------------------------------------------- pass 1: support */

typedef struct {
  char *op;         /* "LSTM", or "domain.Op" outside the default domain */
  GPtrArray *nodes; /* char* node names (borrowed from the model) */
} Unsupported;

static void unsupported_free(gpointer p) {
  Unsupported *u = p;
  g_free(u->op);
  g_ptr_array_unref(u->nodes);
  g_free(u);
}

static gboolean is_default_domain(const char *domain) {
  return !domain || !*domain || strcmp(domain, "ai.onnx") == 0;
}

/* Reports every node whose operator Weir does not know, in one error. */
static gboolean check_operators(Importer *imp, GError **error) {
  g_autoptr(GPtrArray) list = g_ptr_array_new_with_free_func(unsupported_free);
  guint total = 0;
  for (guint i = 0; i < imp->graph->n_nodes; i++) {
    const WeirOnnxNode *n = &imp->graph->nodes[i];
    gboolean known =
        (is_default_domain(n->domain) && strcmp(n->op_type, "Constant") == 0) ||
        weir_op_lookup_onnx(n->domain, n->op_type) != NULL ||
        weir_onnx_control_known(n);
    if (known)
      continue;
    g_autofree char *op = is_default_domain(n->domain)
                              ? g_strdup(n->op_type)
                              : g_strdup_printf("%s.%s", n->domain, n->op_type);
    Unsupported *u = NULL;
    for (guint k = 0; k < list->len && !u; k++) {
      Unsupported *x = g_ptr_array_index(list, k);
      if (strcmp(x->op, op) == 0)
        u = x;
    }
    if (!u) {
      u = g_new0(Unsupported, 1);
      u->op = g_steal_pointer(&op);
      u->nodes = g_ptr_array_new();
      g_ptr_array_add(list, u);
    }
    g_ptr_array_add(u->nodes, (gpointer)n->name);
    total++;
  }
  if (total == 0)
    return TRUE;
  /* "2 unsupported operators (5 nodes): ..." counts operator types; the
   * node count is added when it differs. */
  GString *msg = g_string_new(NULL);
  g_string_append_printf(msg, "%u unsupported operator%s", list->len,
                         list->len == 1 ? "" : "s");
  if (total != list->len)
    g_string_append_printf(msg, " (%u nodes)", total);
  g_string_append(msg, ": ");
  for (guint k = 0; k < list->len; k++) {
    Unsupported *u = g_ptr_array_index(list, k);
    g_string_append_printf(msg, "%s%s (%u node%s: ", k ? ", " : "", u->op,
                           u->nodes->len, u->nodes->len == 1 ? "" : "s");
    for (guint j = 0; j < u->nodes->len; j++)
      g_string_append_printf(msg, "%s%s", j ? ", " : "",
                             (const char *)g_ptr_array_index(u->nodes, j));
    g_string_append_c(msg, ')');
  }
  g_autofree char *text = g_string_free(msg, FALSE);
  return fail(imp, error, WEIR_ERROR_UNSUPPORTED, "%s", text);
}

/* Operators of other domains (ai.onnx.preview.training) follow version 1
 * of their domain, the only one there is. */
static gboolean check_domain_opsets(Importer *imp, GError **error) {
  for (guint i = 0; i < imp->graph->n_nodes; i++) {
    const char *domain = imp->graph->nodes[i].domain;
    if (is_default_domain(domain))
      continue;
    gint64 version = weir_onnx_model_opset(imp->model, domain);
    if (version == 1)
      continue;
    if (imp->opts && imp->opts->allow_any_opset) {
      /* One warning per domain. */
      gboolean seen = FALSE;
      for (guint k = 0; k < i && !seen; k++)
        seen = g_strcmp0(imp->graph->nodes[k].domain, domain) == 0;
      if (!seen)
        warn(imp,
             "domain %s: opset %" G_GINT64_FORMAT " is not version 1; its "
             "operators are read by the rules of version 1",
             domain, version);
      continue;
    }
    return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
                "node '%s' (%s): opset %" G_GINT64_FORMAT " of domain %s is "
                "not supported (Weir imports version 1)",
                imp->graph->nodes[i].name, imp->graph->nodes[i].op_type,
                version, domain);
  }
  return TRUE;
}

static gboolean check_opset(Importer *imp, GError **error) {
  if (!check_domain_opsets(imp, error))
    return FALSE;
  imp->opset = weir_onnx_model_opset(imp->model, "");
  if (imp->opset == 0) {
    /* Only a problem when some node is in the default domain. */
    for (guint i = 0; i < imp->graph->n_nodes; i++)
      if (is_default_domain(imp->graph->nodes[i].domain))
        return fail(imp, error, WEIR_ERROR_INVALID,
                    "the model does not import the default ONNX opset");
    return TRUE;
  }
  if (imp->opset >= WEIR_ONNX_OPSET_MIN && imp->opset <= WEIR_ONNX_OPSET_MAX)
    return TRUE;
  if (imp->opts && imp->opts->allow_any_opset) {
    warn(imp,
         "opset %" G_GINT64_FORMAT " is outside the supported range %d to "
         "%d; operators are read by the rules Weir knows",
         imp->opset, WEIR_ONNX_OPSET_MIN, WEIR_ONNX_OPSET_MAX);
    return TRUE;
  }
  return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
              "opset %" G_GINT64_FORMAT " is not supported (Weir imports "
              "opsets %d to %d)",
              imp->opset, WEIR_ONNX_OPSET_MIN, WEIR_ONNX_OPSET_MAX);
}

/* -------------------------------------------------------- pass 2: inputs */

static gboolean is_unnamed_dim(const WeirOnnxDim *d) {
  return d->value < 0 && g_str_has_prefix(d->param, "unk__");
}

/* A binding from the options for dim_param `param` known in the program as
 * `symbol`. */
static const gint64 *option_binding(Importer *imp, const char *param,
                                    const char *symbol) {
  if (!imp->opts || !imp->opts->symbols)
    return NULL;
  const gint64 *v = g_hash_table_lookup(imp->opts->symbols, param);
  return v ? v : g_hash_table_lookup(imp->opts->symbols, symbol);
}

static gboolean bind(Importer *imp, const char *param, gint64 value,
                     const char *why, GError **error) {
  const gint64 *old = g_hash_table_lookup(imp->bound, param);
  if (old && *old != value)
    return fail(imp, error, WEIR_ERROR_INVALID,
                "dimension '%s' is %" G_GINT64_FORMAT " by %s but was "
                "already bound to %" G_GINT64_FORMAT,
                param, value, why, *old);
  if (value < 0)
    return fail(imp, error, WEIR_ERROR_INVALID,
                "dimension '%s' cannot be %" G_GINT64_FORMAT " (%s)", param,
                value, why);
  gint64 *v = g_new(gint64, 1);
  *v = value;
  g_hash_table_replace(imp->bound, g_strdup(param), v);
  return TRUE;
}

/* Names the symbols: dim_params first (made identifiers, distinct), then
 * unnamed dimensions ("N", "N_1", ...).  Only real inputs define symbols. */
static void name_symbols(Importer *imp) {
  g_autoptr(GHashTable) used =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (int pass = 0; pass < 2; pass++) {
    for (guint i = 0; i < imp->graph->n_inputs; i++) {
      const WeirOnnxValueInfo *vi = &imp->graph->inputs[i];
      if (!weir_onnx_graph_is_real_input(imp->graph, vi->name))
        continue;
      for (guint d = 0; d < vi->rank; d++) {
        const WeirOnnxDim *dim = &vi->dims[d];
        if (dim->value >= 0 || is_unnamed_dim(dim) != (pass == 1) ||
            g_hash_table_contains(imp->symbol_of, dim->param))
          continue;
        g_autofree char *base =
            pass == 0 ? sanitize(dim->param) : g_strdup("N");
        char *name = g_strdup(base);
        for (guint k = 1; g_hash_table_contains(used, name); k++) {
          g_free(name);
          name = g_strdup_printf("%s_%u", base, k);
        }
        g_hash_table_add(used, g_strdup(name));
        g_hash_table_replace(imp->symbol_of, g_strdup(dim->param), name);
      }
    }
  }
}

/* Collects bindings: from the options' input shapes, then from the
 * options' symbol values. */
static gboolean collect_bindings(Importer *imp, GError **error) {
  const WeirOnnxGraph *gr = imp->graph;
  if (imp->opts && imp->opts->input_shapes) {
    for (guint i = 0; i < gr->n_inputs; i++) {
      const WeirOnnxValueInfo *vi = &gr->inputs[i];
      GArray *shape = g_hash_table_lookup(imp->opts->input_shapes, vi->name);
      if (!shape || !weir_onnx_graph_is_real_input(gr, vi->name))
        continue;
      if (!vi->has_shape)
        continue;
      if (shape->len != vi->rank)
        return fail(imp, error, WEIR_ERROR_INVALID,
                    "input '%s' has rank %u, but the given shape has %u "
                    "dimensions",
                    vi->name, vi->rank, shape->len);
      for (guint d = 0; d < vi->rank; d++) {
        gint64 given = g_array_index(shape, gint64, d);
        const WeirOnnxDim *dim = &vi->dims[d];
        if (dim->value >= 0 && dim->value != given)
          return fail(imp, error, WEIR_ERROR_INVALID,
                      "input '%s': dimension %u is %" G_GINT64_FORMAT
                      ", but the given shape has %" G_GINT64_FORMAT,
                      vi->name, d, dim->value, given);
        if (dim->value < 0) {
          g_autofree char *why =
              g_strdup_printf("the shape of input '%s'", vi->name);
          if (!bind(imp, dim->param, given, why, error))
            return FALSE;
        }
      }
    }
  }
  /* Symbol values from the options, by dim_param or symbol name (sorted
   * for deterministic messages). */
  g_autoptr(GList) params = g_hash_table_get_keys(imp->symbol_of);
  params = g_list_sort(params, (GCompareFunc)strcmp);
  for (GList *l = params; l; l = l->next) {
    const char *param = l->data;
    const char *symbol = g_hash_table_lookup(imp->symbol_of, param);
    const gint64 *v = option_binding(imp, param, symbol);
    if (v && !bind(imp, param, *v, "the options", error))
      return FALSE;
  }
  if (imp->opts && imp->opts->symbols) {
    g_autoptr(GList) keys = g_hash_table_get_keys(imp->opts->symbols);
    keys = g_list_sort(keys, (GCompareFunc)strcmp);
    for (GList *l = keys; l; l = l->next) {
      gboolean used = g_hash_table_contains(imp->symbol_of, l->data);
      GHashTableIter it;
      gpointer sym;
      g_hash_table_iter_init(&it, imp->symbol_of);
      while (!used && g_hash_table_iter_next(&it, NULL, &sym))
        used = strcmp(sym, l->data) == 0;
      if (!used)
        warn(imp, "symbol '%s' is not a dimension of any input",
             (const char *)l->data);
    }
  }
  return TRUE;
}

/* The expression of one dimension of an input. */
static WeirExpr *dim_expr(Importer *imp, const WeirOnnxDim *dim) {
  if (dim->value >= 0)
    return weir_expr_const(dim->value);
  const gint64 *v = g_hash_table_lookup(imp->bound, dim->param);
  if (v)
    return weir_expr_const(*v);
  const char *name = g_hash_table_lookup(imp->symbol_of, dim->param);
  g_assert(name);
  weir_graph_add_symbol(imp->g, name);
  return weir_expr_symbol(name);
}

static const char *dtype_problem(const WeirOnnxValueInfo *vi) {
  if (vi->kind == WEIR_ONNX_VALUE_NO_TYPE)
    return "has no type";
  if (vi->kind == WEIR_ONNX_VALUE_OTHER)
    return "is not a tensor (sequences, maps and optionals are not "
           "supported)";
  return NULL;
}

/* Creates the container of v (shape and dtype known) and its access node. */
static gboolean value_materialize(Importer *imp, Value *v, gboolean transient,
                                  GError **error) {
  /* A constant that is also a graph output leaves the plain name to the
   * output's argument container. */
  g_autofree char *base = transient && v->is_output
                              ? g_strdup_printf("%s_value", v->name)
                              : g_strdup(v->name);
  g_autofree char *name = container_name(imp, base);
  g_autoptr(GError) local = NULL;
  WeirContainer *c = weir_graph_add_container(imp->g, name, v->dtype, v->rank,
                                              v->shape, transient, &local);
  if (!c)
    return fail(imp, error, WEIR_ERROR_INVALID, "value '%s': %s", v->name,
                local->message);
  if (v->value && transient) {
    gsize size = weir_dtype_size(v->dtype);
    gsize nbytes = (gsize)v->value->count * size;
    guint8 *le = g_malloc(nbytes ? nbytes : 1);
    weir_onnx_copy_le(le, v->value->data, (gsize)v->value->count, size);
    g_autoptr(GBytes) bytes = g_bytes_new_take(le, nbytes);
    weir_container_set_initial(c, bytes);
    if (v->initializer)
      weir_container_set_initializer(c, v->name);
  }
  WeirNode *a = weir_state_add_access(imp->g, imp->state, c->name);
  g_free(a->label);
  a->label = g_strdup(v->name);
  v->container = g_strdup(c->name);
  v->access = a->id;
  if (!transient && imp->opts && imp->opts->names)
    g_hash_table_replace(imp->opts->names, g_strdup(v->name),
                         g_strdup(c->name));
  return TRUE;
}

/* An input given a value in the options: a constant like an initializer. */
static gboolean input_as_constant(Importer *imp, const WeirOnnxValueInfo *vi,
                                  const WeirTensor *t, GError **error) {
  if (t->dtype != vi->dtype)
    return fail(imp, error, WEIR_ERROR_INVALID,
                "input '%s' is %s, but the value given for it is %s", vi->name,
                weir_dtype_name(vi->dtype), weir_dtype_name(t->dtype));
  gboolean ok = !vi->has_shape || vi->rank == t->rank;
  for (guint d = 0; ok && vi->has_shape && d < vi->rank; d++)
    ok = vi->dims[d].value < 0 || vi->dims[d].value == t->shape[d];
  if (!ok) {
    g_autofree char *desc = weir_tensor_describe(t);
    return fail(imp, error, WEIR_ERROR_INVALID,
                "input '%s': the value given for it (%s) does not have the "
                "declared shape",
                vi->name, desc);
  }
  Value *v = value_new(imp, vi->name);
  value_set_constant(v, weir_tensor_copy(t));
  return TRUE;
}

static const WeirOnnxBodyInput *body_input(const Importer *imp,
                                           const char *name) {
  for (guint i = 0; i < imp->n_body_inputs; i++)
    if (strcmp(imp->body_inputs[i].name, name) == 0)
      return &imp->body_inputs[i];
  return NULL;
}

/* An input of a subgraph whose type (or value) the caller gives. */
static gboolean import_body_input(Importer *imp, const WeirOnnxValueInfo *vi,
                                  const WeirOnnxBodyInput *bi, GError **error) {
  gboolean typed = vi && vi->kind == WEIR_ONNX_VALUE_TENSOR;
  if (vi && !typed && vi->kind != WEIR_ONNX_VALUE_NO_TYPE)
    return fail(imp, error, WEIR_ERROR_UNSUPPORTED, "input '%s' %s", bi->name,
                dtype_problem(vi));
  if (typed && !vi->dtype_ok) {
    g_autofree char *t = weir_onnx_type_name(vi->onnx_type);
    return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
                "input '%s' has element type %s, which Weir does not "
                "support",
                bi->name, t);
  }
  Value *v = value_new(imp, bi->name);
  v->is_input = TRUE;
  v->dtype = typed ? vi->dtype : bi->dtype;
  if (typed && vi->has_shape) {
    v->rank = vi->rank;
    v->shape = g_new0(WeirExpr *, vi->rank ? vi->rank : 1);
    for (guint d = 0; d < vi->rank; d++)
      v->shape[d] = dim_expr(imp, &vi->dims[d]);
  } else {
    v->rank = bi->rank;
    v->shape = g_new0(WeirExpr *, bi->rank ? bi->rank : 1);
    for (guint d = 0; d < bi->rank; d++)
      v->shape[d] = weir_expr_ref(bi->shape[d]);
  }
  if (bi->symbol) {
    if (v->dtype != WEIR_DTYPE_I64 || v->rank > 1)
      return fail(imp, error, WEIR_ERROR_INVALID,
                  "input '%s' must be one int64", bi->name);
    weir_graph_add_symbol(imp->g, bi->symbol);
    v->int_values =
        g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
    g_ptr_array_add(v->int_values, weir_expr_symbol(bi->symbol));
  }
  return value_materialize(imp, v, FALSE, error);
}

static gboolean import_inputs(Importer *imp, GError **error) {
  const WeirOnnxGraph *gr = imp->graph;
  name_symbols(imp);
  if (!collect_bindings(imp, error))
    return FALSE;
  for (guint i = 0; i < gr->n_inputs; i++) {
    const WeirOnnxValueInfo *vi = &gr->inputs[i];
    if (!weir_onnx_graph_is_real_input(gr, vi->name))
      continue;
    if (value_lookup(imp, vi->name))
      return fail(imp, error, WEIR_ERROR_INVALID,
                  "input '%s' is declared twice", vi->name);
    const WeirOnnxBodyInput *bi = body_input(imp, vi->name);
    if (bi && !bi->captured) {
      if (!import_body_input(imp, vi, bi, error))
        return FALSE;
      continue;
    }
    const char *problem = dtype_problem(vi);
    if (problem)
      return fail(imp, error, WEIR_ERROR_UNSUPPORTED, "input '%s' %s", vi->name,
                  problem);
    if (!vi->dtype_ok) {
      g_autofree char *t = weir_onnx_type_name(vi->onnx_type);
      return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
                  "input '%s' has element type %s, which Weir does not "
                  "support",
                  vi->name, t);
    }
    const WeirTensor *fixed =
        imp->opts && imp->opts->input_values
            ? g_hash_table_lookup(imp->opts->input_values, vi->name)
            : NULL;
    if (fixed) {
      if (!input_as_constant(imp, vi, fixed, error))
        return FALSE;
      continue;
    }
    GArray *given = imp->opts && imp->opts->input_shapes
                        ? g_hash_table_lookup(imp->opts->input_shapes, vi->name)
                        : NULL;
    Value *v = value_new(imp, vi->name);
    v->is_input = TRUE;
    v->dtype = vi->dtype;
    if (vi->has_shape) {
      v->rank = vi->rank;
      v->shape = g_new0(WeirExpr *, vi->rank ? vi->rank : 1);
      for (guint d = 0; d < vi->rank; d++)
        v->shape[d] = dim_expr(imp, &vi->dims[d]);
    } else if (given) {
      v->rank = given->len;
      v->shape = g_new0(WeirExpr *, given->len ? given->len : 1);
      for (guint d = 0; d < given->len; d++)
        v->shape[d] = weir_expr_const(g_array_index(given, gint64, d));
    } else {
      return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
                  "input '%s' has no shape (give one in the import options)",
                  vi->name);
    }
    if (!value_materialize(imp, v, FALSE, error))
      return FALSE;
  }
  for (guint i = 0; i < imp->n_body_inputs; i++) {
    const WeirOnnxBodyInput *bi = &imp->body_inputs[i];
    if (!bi->captured)
      continue;
    if (value_lookup(imp, bi->name))
      return fail(imp, error, WEIR_ERROR_INVALID,
                  "input '%s' is declared twice", bi->name);
    if (!import_body_input(imp, NULL, bi, error))
      return FALSE;
  }
  return TRUE;
}

/* The value of name, from the table or (initializers) decoded on first use.
 * NULL with an error when the name is not defined (yet). */
static Value *value_get(Importer *imp, const char *name,
                        const WeirOnnxNode *user, guint k, GError **error) {
  Value *v = value_lookup(imp, name);
  if (v)
    return v;
  if (weir_onnx_graph_is_initializer(imp->graph, name)) {
    const WeirOnnxInitializer *init =
        weir_onnx_graph_initializer(imp->graph, name);
    if (!init->dtype_ok) {
      g_autofree char *t = weir_onnx_type_name(init->onnx_type);
      fail(imp, error, WEIR_ERROR_UNSUPPORTED,
           "initializer '%s' has element type %s, which Weir does not "
           "support",
           name, t);
      return NULL;
    }
    g_autoptr(GError) local = NULL;
    WeirTensor *t =
        weir_onnx_graph_decode_initializer(imp->graph, name, &local);
    if (!t) {
      g_propagate_error(error, g_steal_pointer(&local));
      return NULL;
    }
    v = value_new(imp, name);
    value_set_constant(v, t);
    v->initializer = TRUE;
    return v;
  }
  if (user)
    fail(imp, error, WEIR_ERROR_INVALID,
         "node '%s' (%s): input %u '%s' is not defined before the node (the "
         "graph is not topologically sorted)",
         user->name, user->op_type, k + 1, name);
  else
    fail(imp, error, WEIR_ERROR_INVALID, "output '%s' is never computed", name);
  return NULL;
}

/* ------------------------------------------------------ pass 3: Constant */

static WeirTensor *tensor_from_floats(const float *f, gsize n, gboolean list) {
  gint64 dim = (gint64)n;
  WeirTensor *t = weir_tensor_new(WEIR_DTYPE_F32, list ? 1 : 0, &dim);
  for (gsize i = 0; i < n; i++)
    weir_tensor_set(t, (gint64)i, f[i]);
  return t;
}

static WeirTensor *tensor_from_ints(const gint64 *v, gsize n, gboolean list) {
  gint64 dim = (gint64)n;
  WeirTensor *t = weir_tensor_new(WEIR_DTYPE_I64, list ? 1 : 0, &dim);
  memcpy(t->data, v, n * sizeof(gint64));
  return t;
}

static gboolean import_constant(Importer *imp, const WeirOnnxNode *n,
                                GError **error) {
  if (n->n_attrs != 1)
    return fail(imp, error, WEIR_ERROR_INVALID,
                "node '%s' (Constant): expected exactly one attribute "
                "(value, value_float(s) or value_int(s)), found %u",
                n->name, n->n_attrs);
  if (n->n_outputs != 1 || !*n->outputs[0])
    return fail(imp, error, WEIR_ERROR_INVALID,
                "node '%s' (Constant): expected one output", n->name);
  const WeirOnnxAttr *a = &n->attrs[0];
  WeirTensor *t = NULL;
  if (strcmp(a->name, "value") == 0 && a->type == WEIR_ONNX_ATTR_TENSOR) {
    g_autofree char *ctx = g_strdup_printf(
        "%s: node '%s' (Constant): attribute 'value'", imp->source, n->name);
    t = weir_onnx_tensor_decode(a->t, ctx, error);
    if (!t)
      return FALSE;
  } else if (strcmp(a->name, "value_float") == 0 &&
             a->type == WEIR_ONNX_ATTR_FLOAT) {
    t = tensor_from_floats(&a->f, 1, FALSE);
  } else if (strcmp(a->name, "value_floats") == 0 &&
             a->type == WEIR_ONNX_ATTR_FLOATS) {
    t = tensor_from_floats(a->floats, a->n, TRUE);
  } else if (strcmp(a->name, "value_int") == 0 &&
             a->type == WEIR_ONNX_ATTR_INT) {
    t = tensor_from_ints(&a->i, 1, FALSE);
  } else if (strcmp(a->name, "value_ints") == 0 &&
             a->type == WEIR_ONNX_ATTR_INTS) {
    t = tensor_from_ints(a->ints, a->n, TRUE);
  } else if (g_str_has_prefix(a->name, "value_string") ||
             strcmp(a->name, "sparse_value") == 0) {
    return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
                "node '%s' (Constant): attribute '%s' is not supported "
                "(strings and sparse tensors)",
                n->name, a->name);
  } else {
    return fail(imp, error, WEIR_ERROR_INVALID,
                "node '%s' (Constant): attribute '%s' of type %s is not a "
                "constant value",
                n->name, a->name, weir_onnx_attr_type_name(a->type));
  }
  Value *v = value_new(imp, n->outputs[0]);
  value_set_constant(v, t);
  return TRUE;
}

/* ----------------------------------------------- pass 3: library nodes */

static gboolean convert_attr(Importer *imp, const WeirOnnxNode *on,
                             const WeirOpInfo *info, const WeirOnnxAttr *a,
                             WeirNode *n, GError **error);

/* The schema's spec of attribute name, or NULL. */
static const WeirOpAttrSpec *attr_spec(const WeirOpInfo *info,
                                       const char *name) {
  for (guint k = 0; k < info->n_attrs; k++)
    if (strcmp(info->attrs[k].name, name) == 0)
      return &info->attrs[k];
  return NULL;
}

/* Sets attribute spec->name of n from a constant tensor.  what names the
 * tensor in messages. */
static gboolean attr_from_tensor(Importer *imp, const WeirOnnxNode *on,
                                 const WeirOpAttrSpec *spec,
                                 const WeirTensor *t, const char *what,
                                 WeirNode *n, GError **error) {
  gboolean is_float = weir_dtype_is_float(t->dtype);
  switch (spec->type) {
  case WEIR_ATTR_INT:
  case WEIR_ATTR_FLOAT:
    if (t->count != 1)
      return fail(imp, error, WEIR_ERROR_INVALID,
                  "node '%s' (%s): %s must have one element to give "
                  "attribute '%s', not %" G_GINT64_FORMAT,
                  on->name, on->op_type, what, spec->name, t->count);
    if (spec->type == WEIR_ATTR_FLOAT) {
      weir_node_set_attr_float(n, spec->name, weir_tensor_get(t, 0));
      return TRUE;
    }
    if (is_float)
      return fail(imp, error, WEIR_ERROR_INVALID,
                  "node '%s' (%s): %s must be an integer tensor (attribute "
                  "'%s'), not %s",
                  on->name, on->op_type, what, spec->name,
                  weir_dtype_name(t->dtype));
    weir_node_set_attr_int(n, spec->name, tensor_int(t, 0));
    return TRUE;
  case WEIR_ATTR_INTS: {
    if (is_float)
      return fail(imp, error, WEIR_ERROR_INVALID,
                  "node '%s' (%s): %s must be an integer tensor (attribute "
                  "'%s'), not %s",
                  on->name, on->op_type, what, spec->name,
                  weir_dtype_name(t->dtype));
    g_autofree gint64 *v = g_new0(gint64, t->count + 1);
    for (gint64 i = 0; i < t->count; i++)
      v[i] = tensor_int(t, i);
    weir_node_set_attr_ints(n, spec->name, v, (guint)t->count);
    return TRUE;
  }
  case WEIR_ATTR_FLOATS: {
    g_autofree double *v = g_new0(double, t->count + 1);
    for (gint64 i = 0; i < t->count; i++)
      v[i] = weir_tensor_get(t, i);
    weir_node_set_attr_floats(n, spec->name, v, (guint)t->count);
    return TRUE;
  }
  case WEIR_ATTR_STRING:
  case WEIR_ATTR_STRINGS:
  case WEIR_ATTR_TYPE_COUNT:
    break;
  }
  return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
              "node '%s' (%s): %s cannot give attribute '%s' of type %s",
              on->name, on->op_type, what, spec->name,
              weir_attr_type_name(spec->type));
}

/* Tensor-valued attributes: the schema says which form the operator wants
 * (ConstantOfShape's value as a FLOAT, and its element type as "dtype"). */
static gboolean attr_tensor(Importer *imp, const WeirOnnxNode *on,
                            const WeirOpInfo *info, const WeirOnnxAttr *a,
                            WeirNode *n, GError **error) {
  const WeirOpAttrSpec *spec = attr_spec(info, a->name);
  if (!spec)
    return fail(imp, error, WEIR_ERROR_INVALID,
                "node '%s' (%s): unknown attribute '%s'", on->name, on->op_type,
                a->name);
  g_autofree char *ctx =
      g_strdup_printf("%s: node '%s' (%s): attribute '%s'", imp->source,
                      on->name, on->op_type, a->name);
  g_autoptr(WeirTensor) t = weir_onnx_tensor_decode(a->t, ctx, error);
  if (!t)
    return FALSE;
  g_autofree char *what = g_strdup_printf("tensor attribute '%s'", a->name);
  if (!attr_from_tensor(imp, on, spec, t, what, n, error))
    return FALSE;
  const WeirOpAttrSpec *dt = attr_spec(info, "dtype");
  if (dt && dt->type == WEIR_ATTR_STRING)
    weir_node_set_attr_string(n, "dtype", weir_dtype_name(t->dtype));
  else if (dt && dt->type == WEIR_ATTR_INT)
    weir_node_set_attr_int(n, "dtype", weir_onnx_type_from_dtype(t->dtype));
  return TRUE;
}

static gboolean convert_attr(Importer *imp, const WeirOnnxNode *on,
                             const WeirOpInfo *info, const WeirOnnxAttr *a,
                             WeirNode *n, GError **error) {
  /* Attributes of opsets before 7 that later opsets dropped without a
   * change of meaning: a memory hint, and the inference flag when it says
   * inference. */
  if (imp->opset < 7 && (strcmp(a->name, "consumed_inputs") == 0 ||
                         (strcmp(a->name, "is_test") == 0 &&
                          a->type == WEIR_ONNX_ATTR_INT && a->i == 1)))
    return TRUE;
  /* Before opset 7, broadcasting had to be asked for; without an axis it
   * aligns the trailing dimensions, as numpy broadcasting does. */
  if (imp->opset < 7 && strcmp(a->name, "broadcast") == 0 &&
      !weir_onnx_node_attr(on, "axis"))
    return TRUE;
  if (imp->opset < 7 && strcmp(a->name, "axis") == 0 &&
      weir_onnx_node_attr(on, "broadcast") && !attr_spec(info, "axis"))
    return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
                "node '%s' (%s): broadcasting from an 'axis' (opset 6 and "
                "before) is not supported",
                on->name, on->op_type);
  switch (a->type) {
  case WEIR_ONNX_ATTR_FLOAT:
    weir_node_set_attr_float(n, a->name, a->f);
    return TRUE;
  case WEIR_ONNX_ATTR_INT:
    weir_node_set_attr_int(n, a->name, a->i);
    return TRUE;
  case WEIR_ONNX_ATTR_STRING:
    weir_node_set_attr_string(n, a->name, a->s);
    return TRUE;
  case WEIR_ONNX_ATTR_INTS:
    weir_node_set_attr_ints(n, a->name, a->ints, (guint)a->n);
    return TRUE;
  case WEIR_ONNX_ATTR_FLOATS: {
    g_autofree double *v = g_new0(double, a->n + 1);
    for (gsize i = 0; i < a->n; i++)
      v[i] = a->floats[i];
    weir_node_set_attr_floats(n, a->name, v, (guint)a->n);
    return TRUE;
  }
  case WEIR_ONNX_ATTR_STRINGS:
    weir_node_set_attr_strings(n, a->name, a->strings, (guint)a->n);
    return TRUE;
  case WEIR_ONNX_ATTR_TENSOR:
    return attr_tensor(imp, on, info, a, n, error);
  case WEIR_ONNX_ATTR_GRAPH:
  case WEIR_ONNX_ATTR_GRAPHS:
    return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
                "node '%s' (%s): attribute '%s' is a subgraph (control "
                "flow is not supported)",
                on->name, on->op_type, a->name);
  case WEIR_ONNX_ATTR_TENSORS:
  case WEIR_ONNX_ATTR_SPARSE_TENSOR:
  case WEIR_ONNX_ATTR_SPARSE_TENSORS:
  case WEIR_ONNX_ATTR_TYPE_PROTO:
  case WEIR_ONNX_ATTR_TYPE_PROTOS:
    return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
                "node '%s' (%s): attribute '%s' has type %s, which Weir "
                "does not support",
                on->name, on->op_type, a->name,
                weir_onnx_attr_type_name(a->type));
  case WEIR_ONNX_ATTR_UNDEFINED:
    break;
  }
  return fail(imp, error, WEIR_ERROR_INVALID,
              "node '%s' (%s): attribute '%s' has no type and no value",
              on->name, on->op_type, a->name);
}

/* Semantic changes of older opsets, recorded as attributes. */
static void record_legacy(Importer *imp, const WeirOnnxNode *on, WeirNode *n) {
  static const char *const softmax_like[] = {"Softmax", "LogSoftmax",
                                             "Hardmax"};
  for (guint i = 0; i < G_N_ELEMENTS(softmax_like); i++) {
    if (strcmp(on->op_type, softmax_like[i]) != 0 || imp->opset >= 13)
      continue;
    /* Before opset 13 the input is coerced to 2-D at `axis` (default 1). */
    weir_node_set_attr_int(n, "legacy_2d", 1);
    if (!weir_node_attr(n, "axis"))
      weir_node_set_attr_int(n, "axis", 1);
  }
  /* RoiAlign before opset 16 had no coordinate_transformation_mode and
   * behaved as output_half_pixel (16's default is half_pixel). */
  if (strcmp(on->op_type, "RoiAlign") == 0 && imp->opset < 16 &&
      !weir_node_attr(n, "coordinate_transformation_mode"))
    weir_node_set_attr_string(n, "coordinate_transformation_mode",
                              "output_half_pixel");
}

/* When a value input becomes a float attribute, its element type would be
 * lost: an operator whose output type follows it (Range) has a "dtype"
 * attribute (an ONNX type number) in its schema, set here unless the node
 * has one. */
static void keep_dtype(const WeirOnnxNode *on, const WeirOpInfo *info,
                       const WeirOpAttrSpec *from, WeirDType dtype,
                       WeirNode *n) {
  const WeirOpAttrSpec *spec = attr_spec(info, "dtype");
  if (!spec || spec->type != WEIR_ATTR_INT ||
      (from->type != WEIR_ATTR_FLOAT && from->type != WEIR_ATTR_FLOATS) ||
      weir_onnx_node_attr(on, "dtype") || weir_node_attr(n, "dtype"))
    return;
  weir_node_set_attr_int(n, "dtype", weir_onnx_type_from_dtype(dtype));
}

/* How an ONNX input of a library node is used. */
typedef enum {
  INPUT_ABSENT,   /* omitted (or beyond the node's inputs) */
  INPUT_WIRED,    /* data through connector in<k> */
  INPUT_ATTR,     /* moved into an attribute: no connector */
  INPUT_SYMBOLIC, /* shown to inference (int_values), then dropped */
} InputUse;

/* Moves inputs that the latest opset takes as attributes into them (see
 * WeirOpAttrSpec.from_input).  uses[k] is updated for every input:
 *  - a constant (initializer, Constant node, or integers computed from
 *    concrete shapes) gives the attribute, and the connector is dropped;
 *  - integer attributes (shapes, axes, pads, repeats, ...) decide the
 *    output's shape, so they must be known: symbolic int_values are shown
 *    to inference, which puts them into the output shape, and the connector
 *    is dropped; anything else is an error;
 *  - float attributes (Clip's min and max, Pad's value, ...) may also come
 *    at run time: the input stays a connector. */
static gboolean normalize_inputs(Importer *imp, const WeirOnnxNode *on,
                                 const WeirOpInfo *info, Value **inputs,
                                 InputUse *uses, WeirNode *n, GError **error) {
  for (guint s = 0; s < info->n_attrs; s++) {
    const WeirOpAttrSpec *spec = &info->attrs[s];
    if (spec->from_input == 0 || imp->opset < spec->input_since)
      continue;
    guint k = spec->from_input - 1;
    if (k >= on->n_inputs || uses[k] == INPUT_ABSENT)
      continue;
    Value *v = inputs[k];
    g_autofree char *what = g_strdup_printf("input %u '%s'", k + 1, v->name);
    if (v->value) {
      if (!attr_from_tensor(imp, on, spec, v->value, what, n, error))
        return FALSE;
      keep_dtype(on, info, spec, v->value->dtype, n);
      uses[k] = INPUT_ATTR;
      continue;
    }
    gboolean concrete = v->int_values != NULL;
    for (guint i = 0; concrete && i < v->int_values->len; i++)
      concrete = weir_expr_is_const(g_ptr_array_index(v->int_values, i), NULL);
    if (concrete &&
        (spec->type == WEIR_ATTR_INTS || spec->type == WEIR_ATTR_INT ||
         spec->type == WEIR_ATTR_FLOATS || spec->type == WEIR_ATTR_FLOAT)) {
      /* Computed from concrete shapes: a constant after all. */
      gint64 len = v->int_values->len;
      g_autoptr(WeirTensor) t =
          weir_tensor_new(WEIR_DTYPE_I64, v->rank, v->rank == 1 ? &len : NULL);
      for (guint i = 0; i < v->int_values->len && i < t->count; i++)
        ((gint64 *)t->data)[i] =
            weir_expr_const_value(g_ptr_array_index(v->int_values, i));
      if (!attr_from_tensor(imp, on, spec, t, what, n, error))
        return FALSE;
      keep_dtype(on, info, spec, v->dtype, n);
      uses[k] = INPUT_ATTR;
      continue;
    }
    if (spec->type != WEIR_ATTR_INTS && spec->type != WEIR_ATTR_INT)
      continue; /* a value (Clip's min): also taken as data at run time */
    if (v->int_values) {
      uses[k] = INPUT_SYMBOLIC;
      continue;
    }
    return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
                "node '%s' (%s): input %u '%s' must be a constant", on->name,
                on->op_type, spec->from_input, spec->name);
  }
  return TRUE;
}

/* Compares an inferred value with what the model declares for it. */
static gboolean check_declared(Importer *imp, const WeirOnnxNode *on, guint k,
                               const Value *v, GError **error) {
  const WeirOnnxValueInfo *vi = weir_onnx_graph_value_info(imp->graph, v->name);
  if (!vi || vi->kind != WEIR_ONNX_VALUE_TENSOR)
    return TRUE;
  if (vi->dtype_ok && vi->dtype != v->dtype)
    return fail(imp, error, WEIR_ERROR_INVALID,
                "node '%s' (%s): output %u '%s': inferred dtype %s, but the "
                "model declares %s",
                on->name, on->op_type, k, v->name, weir_dtype_name(v->dtype),
                weir_dtype_name(vi->dtype));
  if (!vi->has_shape)
    return TRUE;
  gboolean ok = vi->rank == v->rank;
  guint bad = 0;
  for (guint d = 0; ok && d < vi->rank; d++) {
    gint64 c;
    /* A data-dependent length: the model declares the length of its
     * example, at most the bound. */
    gboolean bound = v->bounded && d == v->bounded_dim;
    if (vi->dims[d].value >= 0 && weir_expr_is_const(v->shape[d], &c) &&
        (bound ? c < vi->dims[d].value : c != vi->dims[d].value)) {
      ok = FALSE;
      bad = d;
    }
  }
  if (ok)
    return TRUE;
  g_autofree char *inferred = shape_text(v->rank, v->shape);
  GString *decl = g_string_new("[");
  for (guint d = 0; d < vi->rank; d++) {
    if (vi->dims[d].value >= 0)
      g_string_append_printf(decl, "%s%" G_GINT64_FORMAT, d ? ", " : "",
                             vi->dims[d].value);
    else
      g_string_append_printf(decl, "%s%s", d ? ", " : "",
                             is_unnamed_dim(&vi->dims[d]) ? "?"
                                                          : vi->dims[d].param);
  }
  g_string_append_c(decl, ']');
  g_autofree char *declared = g_string_free(decl, FALSE);
  if (vi->rank != v->rank)
    return fail(imp, error, WEIR_ERROR_INVALID,
                "node '%s' (%s): output %u '%s': inferred shape %s, but the "
                "model declares %s (rank %u, not %u)",
                on->name, on->op_type, k, v->name, inferred, declared, vi->rank,
                v->rank);
  return fail(imp, error, WEIR_ERROR_INVALID,
              "node '%s' (%s): output %u '%s': inferred shape %s, but the "
              "model declares %s (dimension %u)",
              on->name, on->op_type, k, v->name, inferred, declared, bad);
}

/* The access node of v, creating v's container on first use (only
 * constants are created late: inputs and node outputs have theirs). */
static gboolean value_access(Importer *imp, Value *v, GError **error) {
  if (v->access)
    return TRUE;
  g_assert(v->value);
  return value_materialize(imp, v, TRUE, error);
}

static gboolean add_memlet(Importer *imp, guint src, const char *src_conn,
                           guint dst, const char *dst_conn, const Value *v,
                           GError **error) {
  const WeirContainer *c = weir_graph_container(imp->g, v->container);
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autoptr(GError) local = NULL;
  /* the subset as a structure, not formatted and parsed again */
  WeirMemlet *m = weir_state_add_memlet(imp->g, imp->state, src, src_conn, dst,
                                        dst_conn, v->container, "", &local);
  if (!m)
    return fail(imp, error, WEIR_ERROR_INVALID, "value '%s': %s", v->name,
                local->message);
  g_autoptr(WeirExpr) volume = weir_subset_volume(full);
  weir_memlet_set_volume(m, volume);
  weir_subset_free(m->subset);
  m->subset = g_steal_pointer(&full);
  return TRUE;
}

/* Outputs of a data-dependent length (WeirOpValue.bounded): the node's
 * output connector "count" writes an i64 scalar argument container,
 * "<node>_count", which each such output's container names as its count
 * (docs/ir-format.md); the runtime trims the outputs to it. */
static gboolean bind_count(Importer *imp, const WeirOnnxNode *on, WeirNode *n,
                           Value *const *results, guint n_out, GError **error) {
  gboolean any = FALSE;
  for (guint k = 0; k < n_out; k++)
    any |= results[k] && results[k]->bounded;
  if (!any)
    return TRUE;
  g_autofree char *base =
      g_strdup_printf("%s_count", *on->name ? on->name : on->op_type);
  Value count = {.name = base, .dtype = WEIR_DTYPE_I64, .rank = 0};
  count.shape = g_new0(WeirExpr *, 1);
  gboolean ok = value_materialize(imp, &count, FALSE, error);
  if (ok) {
    weir_node_add_out_conn(n, "count");
    ok = add_memlet(imp, n->id, "count", count.access, NULL, &count, error);
  }
  for (guint k = 0; ok && k < n_out; k++)
    if (results[k] && results[k]->bounded)
      weir_container_set_count(
          weir_graph_container(imp->g, results[k]->container), count.container,
          results[k]->bounded_dim);
  g_free(count.shape);
  g_free(count.container);
  return ok;
}

static gboolean import_library(Importer *imp, const WeirOnnxNode *on,
                               GError **error) {
  const WeirOpInfo *info = weir_op_lookup(on->op_type);
  g_assert(info);
  /* Inference writes outputs by position: a node without the outputs its
   * operator produces is malformed (found by tests/fuzz: a Conv with no
   * output reached weir_op_set_output's assertion). */
  if (on->n_outputs < info->min_outputs)
    return fail(imp, error, WEIR_ERROR_INVALID,
                "node '%s' (%s): %u outputs, expected at least %u", on->name,
                on->op_type, on->n_outputs, info->min_outputs);
  guint n_in = on->n_inputs;
  g_autofree Value **inputs = g_new0(Value *, n_in + 1);
  g_autofree InputUse *uses = g_new0(InputUse, n_in + 1);
  for (guint k = 0; k < n_in; k++) {
    if (!*on->inputs[k])
      continue;
    inputs[k] = value_get(imp, on->inputs[k], on, k, error);
    if (!inputs[k])
      return FALSE;
    if (inputs[k]->bounded)
      return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
                  "node '%s' (%s): input %u '%s' has a data-dependent length "
                  "(dimension %u), which only a graph output may have in "
                  "Weir (docs/onnx.md)",
                  on->name, on->op_type, k + 1, on->inputs[k],
                  inputs[k]->bounded_dim);
    uses[k] = INPUT_WIRED;
  }
  WeirNode *n = weir_state_add_library(imp->g, imp->state, on->name,
                                       on->op_type, NULL, NULL);
  for (guint i = 0; i < on->n_attrs; i++)
    if (!convert_attr(imp, on, info, &on->attrs[i], n, error))
      return FALSE;
  if (!normalize_inputs(imp, on, info, inputs, uses, n, error))
    return FALSE;
  record_legacy(imp, on, n);
  g_autoptr(GError) local = NULL;
  if (!weir_op_check_attrs(n, &local)) {
    /* a required attribute that came as symbolic int_values (a Slice end
     * computed from a Loop's iteration number): the operator needs it
     * known at import */
    for (guint k = 0; k < n_in; k++)
      if (uses[k] == INPUT_SYMBOLIC)
        return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
                    "node '%s' (%s): input %u '%s' depends on run-time "
                    "symbols (such as a Loop's iteration number), and %s "
                    "needs it as a constant",
                    on->name, on->op_type, k, on->inputs[k], on->op_type);
    return fail_prefixed(imp, error, g_steal_pointer(&local));
  }

  /* Shape inference.  Inputs are positional; trailing unused ones are left
   * out so the count is what the operator sees. */
  guint n_ctx = 0;
  for (guint k = 0; k < n_in; k++)
    if (uses[k] == INPUT_WIRED || uses[k] == INPUT_SYMBOLIC)
      n_ctx = k + 1;
  g_autofree WeirOpValue *ins = g_new0(WeirOpValue, n_ctx + 1);
  for (guint k = 0; k < n_ctx; k++) {
    if (uses[k] != INPUT_WIRED && uses[k] != INPUT_SYMBOLIC)
      continue;
    const Value *v = inputs[k];
    ins[k].present = TRUE;
    ins[k].dtype = v->dtype;
    ins[k].rank = v->rank;
    ins[k].shape = v->shape;
    ins[k].value = v->value;
    ins[k].int_values = v->int_values;
  }
  guint n_out = on->n_outputs;
  g_autofree WeirOpValue *outs = g_new0(WeirOpValue, n_out + 1);
  WeirOpInferContext ctx = {.node = n,
                            .n_inputs = n_ctx,
                            .inputs = ins,
                            .n_outputs = n_out,
                            .outputs = outs};
  gboolean ok = info->infer ? info->infer(&ctx, &local) : FALSE;
  if (!ok && !local)
    g_set_error(&local, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "node '%s' (%s): shape inference failed", on->name,
                on->op_type);
  /* Take the outputs (the values own their shapes from here on). */
  g_autofree Value **results = g_new0(Value *, n_out + 1);
  for (guint k = 0; ok && k < n_out; k++) {
    if (!*on->outputs[k])
      continue;
    if (!outs[k].present) {
      g_set_error(&local, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "node '%s' (%s): output %u '%s' is not supported (the "
                  "operator's inference does not give it)",
                  on->name, on->op_type, k, on->outputs[k]);
      ok = FALSE;
      break;
    }
    if (value_lookup(imp, on->outputs[k])) {
      g_set_error(&local, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "node '%s' (%s): output %u '%s' is defined twice", on->name,
                  on->op_type, k, on->outputs[k]);
      ok = FALSE;
      break;
    }
    Value *v = value_new(imp, on->outputs[k]);
    v->dtype = outs[k].dtype;
    v->rank = outs[k].rank;
    v->shape = g_steal_pointer(&outs[k].shape);
    if (!v->shape)
      v->shape = g_new0(WeirExpr *, 1);
    v->int_values = g_steal_pointer(&outs[k].int_values);
    v->bounded = outs[k].bounded;
    v->bounded_dim = outs[k].bounded_dim;
    results[k] = v;
  }
  for (guint k = 0; k < n_out; k++)
    weir_op_value_clear(&outs[k]);
  if (!ok)
    return fail_prefixed(imp, error, g_steal_pointer(&local));

  for (guint k = 0; k < n_out; k++)
    if (results[k] && !check_declared(imp, on, k, results[k], error))
      return FALSE;

  /* Connectors and memlets. */
  for (guint k = 0; k < n_in; k++) {
    if (uses[k] != INPUT_WIRED)
      continue;
    g_autofree char *conn = g_strdup_printf("in%u", k);
    weir_node_add_in_conn(n, conn);
    if (!value_access(imp, inputs[k], error) ||
        !add_memlet(imp, inputs[k]->access, NULL, n->id, conn, inputs[k],
                    error))
      return FALSE;
  }
  for (guint k = 0; k < n_out; k++) {
    if (!results[k])
      continue;
    g_autofree char *conn = g_strdup_printf("out%u", k);
    weir_node_add_out_conn(n, conn);
    if (!value_materialize(imp, results[k], !results[k]->is_output, error) ||
        !add_memlet(imp, n->id, conn, results[k]->access, NULL, results[k],
                    error))
      return FALSE;
  }
  return bind_count(imp, on, n, results, n_out, error);
}

/* A control-flow node (Scan, onnx-control.h): a nested program node with
 * connectors in<k> / out<k>, bound to the symbols of its shapes. */
static gboolean import_control(Importer *imp, const WeirOnnxNode *on,
                               GError **error) {
  /* If and Loop: the values of this graph their subgraphs read become
   * extra inputs (Scan's body may not read any) */
  g_autoptr(GPtrArray) caps = g_ptr_array_new();
  gboolean scan = strcmp(on->op_type, "Scan") == 0;
  for (guint a = 0; !scan && a < on->n_attrs; a++)
    if (on->attrs[a].type == WEIR_ONNX_ATTR_GRAPH && on->attrs[a].g) {
      g_autoptr(GPtrArray) c = weir_onnx_subgraph_captures(on->attrs[a].g);
      for (guint j = 0; j < c->len; j++) {
        gboolean seen = FALSE;
        for (guint i = 0; i < caps->len && !seen; i++)
          seen = strcmp(caps->pdata[i], c->pdata[j]) == 0;
        if (!seen)
          g_ptr_array_add(caps, c->pdata[j]);
      }
    }
  guint n_node_in = on->n_inputs, n_cap = caps->len;
  guint n_in = n_node_in + n_cap, n_out = on->n_outputs;
  g_autofree Value **inputs = g_new0(Value *, n_in + 1);
  g_autofree WeirOnnxShape *ins = g_new0(WeirOnnxShape, n_in + 1);
  for (guint k = 0; k < n_in; k++) {
    const char *x = k < n_node_in ? on->inputs[k] : caps->pdata[k - n_node_in];
    if (!*x)
      continue;
    inputs[k] = value_get(imp, x, on, k, error);
    if (!inputs[k])
      return FALSE;
    if (inputs[k]->bounded)
      return fail(imp, error, WEIR_ERROR_UNSUPPORTED,
                  "node '%s' (%s): input %u '%s' has a data-dependent length "
                  "(dimension %u), which only a graph output may have in "
                  "Weir (docs/onnx.md)",
                  on->name, on->op_type, k, x, inputs[k]->bounded_dim);
    ins[k] = (WeirOnnxShape){.present = TRUE,
                             .dtype = inputs[k]->dtype,
                             .rank = inputs[k]->rank,
                             .shape = inputs[k]->shape};
    if (inputs[k]->int_values && inputs[k]->int_values->len == 1)
      ins[k].is_constant = weir_expr_is_const(
          g_ptr_array_index(inputs[k]->int_values, 0), &ins[k].constant);
  }
  g_autofree WeirOnnxShape *outs = g_new0(WeirOnnxShape, n_out + 1);
  for (guint k = 0; k < n_out; k++) {
    const WeirOnnxValueInfo *vi =
        *on->outputs[k] ? weir_onnx_graph_value_info(imp->graph, on->outputs[k])
                        : NULL;
    outs[k].declared = vi && vi->kind == WEIR_ONNX_VALUE_TENSOR &&
                               vi->has_shape && vi->rank > 0
                           ? vi->dims[0].value
                           : -1;
  }
  g_autoptr(GError) local = NULL;
  WeirGraph *prog =
      strcmp(on->op_type, "If") == 0
          ? weir_onnx_if_program(imp->model, on, imp->opts,
                                 weir_onnx_import_subgraph, n_cap,
                                 (const char *const *)caps->pdata, n_node_in,
                                 ins, n_out, outs, &local)
      : strcmp(on->op_type, "Loop") == 0
          ? weir_onnx_loop_program(imp->model, on, imp->opts,
                                   weir_onnx_import_subgraph, n_cap,
                                   (const char *const *)caps->pdata, n_node_in,
                                   ins, n_out, outs, &local)
          : weir_onnx_scan_program(imp->model, on, imp->opset, imp->opts,
                                   weir_onnx_import_subgraph, n_in, ins, n_out,
                                   outs, &local);
  if (!prog) {
    for (guint k = 0; k < n_out; k++)
      weir_onnx_shape_clear(&outs[k]);
    return fail_prefixed(imp, error, g_steal_pointer(&local));
  }
  WeirNode *n =
      weir_state_add_nested(imp->g, imp->state, on->name, prog, NULL, NULL);
  for (guint i = 0; i < prog->symbols->len; i++) {
    const char *sym = g_ptr_array_index(prog->symbols, i);
    if (weir_graph_has_symbol(imp->g, sym) &&
        !weir_node_bind_symbol(n, sym, sym, error)) {
      for (guint k = 0; k < n_out; k++)
        weir_onnx_shape_clear(&outs[k]);
      return FALSE;
    }
  }
  gboolean ok = TRUE;
  g_autofree Value **results = g_new0(Value *, n_out + 1);
  for (guint k = 0; ok && k < n_in; k++) {
    if (!inputs[k])
      continue;
    g_autofree char *conn = g_strdup_printf("in%u", k);
    weir_node_add_in_conn(n, conn);
    ok =
        value_access(imp, inputs[k], error) &&
        add_memlet(imp, inputs[k]->access, NULL, n->id, conn, inputs[k], error);
  }
  for (guint k = 0; k < n_out; k++) {
    if (!ok || !*on->outputs[k]) {
      weir_onnx_shape_clear(&outs[k]);
      continue;
    }
    if (value_lookup(imp, on->outputs[k])) {
      weir_onnx_shape_clear(&outs[k]);
      ok = fail(imp, error, WEIR_ERROR_INVALID,
                "node '%s' (%s): output %u '%s' is defined twice", on->name,
                on->op_type, k, on->outputs[k]);
      continue;
    }
    Value *v = value_new(imp, on->outputs[k]);
    v->dtype = outs[k].dtype;
    v->rank = outs[k].rank;
    v->shape = g_steal_pointer(&outs[k].shape);
    v->bounded = outs[k].bounded;
    v->bounded_dim = 0;
    results[k] = v;
    g_autofree char *conn = g_strdup_printf("out%u", k);
    weir_node_add_out_conn(n, conn);
    ok = check_declared(imp, on, k, v, error) &&
         value_materialize(imp, v, !v->is_output, error) &&
         add_memlet(imp, n->id, conn, v->access, NULL, v, error);
  }
  return ok && bind_count(imp, on, n, results, n_out, error);
}

/* ------------------------------------------------------- pass 4: outputs */

static gboolean import_outputs(Importer *imp, GError **error) {
  const WeirOnnxGraph *gr = imp->graph;
  for (guint i = 0; i < gr->n_outputs; i++) {
    const WeirOnnxValueInfo *vi = &gr->outputs[i];
    const char *problem = dtype_problem(vi);
    if (problem && vi->kind == WEIR_ONNX_VALUE_OTHER)
      return fail(imp, error, WEIR_ERROR_UNSUPPORTED, "output '%s' %s",
                  vi->name, problem);
    Value *v = value_get(imp, vi->name, NULL, 0, error);
    if (!v)
      return FALSE;
    if (!v->value)
      continue; /* computed into its argument container, or an input */
    /* A constant output: its data is in a transient, copied into the
     * argument container. */
    if (!value_access(imp, v, error))
      return FALSE;
    Value out = {.name = v->name,
                 .dtype = v->dtype,
                 .rank = v->rank,
                 .shape = v->shape,
                 .is_output = TRUE};
    if (!value_materialize(imp, &out, FALSE, error))
      return FALSE;
    gboolean ok = add_memlet(imp, v->access, NULL, out.access, NULL, v, error);
    g_free(out.container);
    if (!ok)
      return FALSE;
  }
  return TRUE;
}

/* -------------------------------------------------------------- driver */

/* Imports `graph` of model (the main graph or a subgraph). */
static WeirGraph *import_graph(const WeirOnnxModel *model,
                               const WeirOnnxGraph *graph,
                               const WeirOnnxImportOptions *opts,
                               const WeirOnnxBodyInput *body_inputs,
                               guint n_body_inputs, GError **error) {
  Importer imp = {0};
  imp.body_inputs = body_inputs;
  imp.n_body_inputs = n_body_inputs;
  imp.model = model;
  imp.graph = graph;
  imp.source = weir_onnx_model_source(model);
  imp.opts = opts;
  if (!check_operators(&imp, error) || !check_opset(&imp, error))
    return NULL;

  g_autofree char *base = g_path_get_basename(imp.source);
  char *dot = strrchr(base, '.');
  if (dot && dot != base)
    *dot = '\0';
  g_autoptr(WeirGraph) g =
      weir_graph_new(*imp.graph->name ? imp.graph->name : base);
  imp.g = g;
  imp.state = weir_graph_add_state(g, "main");
  g_autoptr(GHashTable) values =
      g_hash_table_new_full(g_str_hash, g_str_equal, NULL, value_free);
  g_autoptr(GHashTable) outputs = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GHashTable) symbol_of =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) bound =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  imp.values = values;
  imp.outputs = outputs;
  imp.symbol_of = symbol_of;
  imp.bound = bound;
  for (guint i = 0; i < imp.graph->n_outputs; i++)
    g_hash_table_add(outputs, (gpointer)imp.graph->outputs[i].name);

  if (!import_inputs(&imp, error))
    return NULL;
  for (guint i = 0; i < imp.graph->n_nodes; i++) {
    const WeirOnnxNode *on = &imp.graph->nodes[i];
    gboolean ok =
        strcmp(on->op_type, "Constant") == 0 ? import_constant(&imp, on, error)
        : weir_onnx_control_known(on)        ? import_control(&imp, on, error)
                                             : import_library(&imp, on, error);
    if (!ok)
      return NULL;
  }
  if (!import_outputs(&imp, error))
    return NULL;

  g_autoptr(GError) local = NULL;
  if (!weir_graph_validate(g, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: the imported program is invalid: %s", imp.source,
                local->message);
    return NULL;
  }
  return g_steal_pointer(&g);
}

WeirGraph *weir_onnx_import_model(const WeirOnnxModel *model,
                                  const WeirOnnxImportOptions *opts,
                                  GError **error) {
  g_return_val_if_fail(model != NULL, NULL);
  return import_graph(model, weir_onnx_model_graph(model), opts, NULL, 0,
                      error);
}

WeirGraph *weir_onnx_import_subgraph(const WeirOnnxModel *model,
                                     const WeirOnnxGraph *graph,
                                     const WeirOnnxImportOptions *opts,
                                     GHashTable *names,
                                     const WeirOnnxBodyInput *inputs,
                                     guint n_inputs, GError **error) {
  WeirOnnxImportOptions o = {0};
  if (opts)
    o = *opts;
  o.names = names;
  return import_graph(model, graph, &o, inputs, n_inputs, error);
}

WeirGraph *weir_onnx_import(const char *path, const WeirOnnxImportOptions *opts,
                            GError **error) {
  g_autoptr(WeirOnnxModel) model = weir_onnx_model_load(path, error);
  if (!model)
    return NULL;
  return weir_onnx_import_model(model, opts, error);
}
