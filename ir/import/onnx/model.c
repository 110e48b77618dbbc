/* model.c — loading an ONNX model and building its read-only view.
 *
 * Structure:
 *  1. loading: the file is memory-mapped, unpacked by the protobuf-c code
 *     generated from onnx.proto, and the mapping dropped (protobuf-c copies
 *     strings and bytes, so tensors live once, in the unpacked message);
 *  2. building the view (build_graph and its helpers), which also performs
 *     the structural checks: every value a node reads must be in scope,
 *     where a scope is the set of names a graph has defined so far chained
 *     to the scope of the enclosing graph at the node holding the subgraph;
 *  3. accessors and look-ups used by the importer.
 *
 * The view borrows every string it can from the unpacked message; what it
 * must create (arrays of structs, generated names, NUL-terminated attribute
 * strings) is allocated with model_alloc / model_strdup and freed with the
 * model.  Look-up tables only map names to entries; nothing iterates them,
 * so the view's order is always the file's order.
 */
#include <string.h>

#include "onnx-private.h"

/* Subgraphs nested deeper than this are refused rather than recursed. */
#define MAX_GRAPH_DEPTH 64

typedef struct {
  WeirOnnxGraph pub;     /* first: a WeirOnnxGraph* is a GraphPriv* */
  GHashTable *inits;     /* name -> WeirOnnxInitializer* */
  GHashTable *infos;     /* name -> WeirOnnxValueInfo* (first entry) */
  GHashTable *producers; /* name -> WeirOnnxNode* */
} GraphPriv;

struct _WeirOnnxModel {
  char *source;
  Onnx__ModelProto *proto;
  GPtrArray *mem;    /* blocks of the view, g_free */
  GPtrArray *graphs; /* GraphPriv*, graph_priv_free */
  GraphPriv *main;
  WeirOnnxOpset *opsets;
  guint n_opsets;
  guint n_unknown_dims; /* counter for "unk__<n>" */
};

/* Names defined so far in one graph, and the scope it is nested in. */
typedef struct Scope {
  GHashTable *defined; /* set of borrowed names */
  const struct Scope *parent;
} Scope;

static void graph_priv_free(gpointer p) {
  GraphPriv *g = p;
  g_hash_table_unref(g->inits);
  g_hash_table_unref(g->infos);
  g_hash_table_unref(g->producers);
  g_free(g);
}

void weir_onnx_model_free(WeirOnnxModel *model) {
  if (!model)
    return;
  g_ptr_array_unref(model->graphs);
  g_ptr_array_unref(model->mem);
  if (model->proto)
    onnx__model_proto__free_unpacked(model->proto, NULL);
  g_free(model->source);
  g_free(model);
}

static gpointer model_alloc(WeirOnnxModel *m, gsize n, gsize size) {
  gpointer p = g_malloc0_n(n ? n : 1, size);
  g_ptr_array_add(m->mem, p);
  return p;
}

static const char *model_take(WeirOnnxModel *m, char *s) {
  g_ptr_array_add(m->mem, s);
  return s;
}

static const char *str_or_empty(const char *s) {
  return s ? s : "";
}

static gboolean scope_has(const Scope *scope, const char *name) {
  for (; scope; scope = scope->parent)
    if (g_hash_table_contains(scope->defined, name))
      return TRUE;
  return FALSE;
}

/* ---- value infos ---------------------------------------------------- */

static void fill_dims(WeirOnnxModel *m, WeirOnnxValueInfo *vi,
                      const Onnx__TensorShapeProto *shape) {
  vi->has_shape = TRUE;
  vi->rank = (guint)shape->n_dim;
  WeirOnnxDim *dims = model_alloc(m, shape->n_dim, sizeof(WeirOnnxDim));
  for (gsize k = 0; k < shape->n_dim; k++) {
    const Onnx__TensorShapeProto__Dimension *d = shape->dim[k];
    if (d &&
        d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
        d->dim_value >= 0) {
      dims[k].value = d->dim_value;
      continue;
    }
    dims[k].value = -1;
    if (d &&
        d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
        d->dim_param && d->dim_param[0])
      dims[k].param = d->dim_param;
    else
      dims[k].param =
          model_take(m, g_strdup_printf("unk__%u", m->n_unknown_dims++));
  }
  vi->dims = dims;
}

static void fill_value_info(WeirOnnxModel *m, WeirOnnxValueInfo *vi,
                            const Onnx__ValueInfoProto *p) {
  vi->name = str_or_empty(p ? p->name : NULL);
  const Onnx__TypeProto *type = p ? p->type : NULL;
  if (!type || type->value_case == ONNX__TYPE_PROTO__VALUE__NOT_SET) {
    vi->kind = WEIR_ONNX_VALUE_NO_TYPE;
    return;
  }
  if (type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
      !type->tensor_type) {
    vi->kind = WEIR_ONNX_VALUE_OTHER;
    return;
  }
  vi->kind = WEIR_ONNX_VALUE_TENSOR;
  const Onnx__TypeProto__Tensor *tt = type->tensor_type;
  vi->onnx_type = tt->has_elem_type ? tt->elem_type : 0;
  vi->dtype_ok = weir_onnx_type_to_dtype(vi->onnx_type, &vi->dtype);
  if (tt->shape)
    fill_dims(m, vi, tt->shape);
}

static WeirOnnxValueInfo *build_value_infos(WeirOnnxModel *m, GraphPriv *g,
                                            Onnx__ValueInfoProto **list,
                                            gsize n) {
  WeirOnnxValueInfo *out = model_alloc(m, n, sizeof(WeirOnnxValueInfo));
  for (gsize k = 0; k < n; k++) {
    fill_value_info(m, &out[k], list[k]);
    if (out[k].name[0] && !g_hash_table_contains(g->infos, out[k].name))
      g_hash_table_insert(g->infos, (gpointer)out[k].name, &out[k]);
  }
  return out;
}

/* ---- attributes ----------------------------------------------------- */

static GraphPriv *build_graph(WeirOnnxModel *m, const Onnx__GraphProto *gp,
                              const WeirOnnxGraph *parent,
                              const WeirOnnxNode *owner, const Scope *outer,
                              guint depth, GError **error);

/* Older files may leave the type out: take it from the field that is set. */
static WeirOnnxAttrType infer_attr_type(const Onnx__AttributeProto *a) {
  if (a->has_type &&
      a->type != ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__UNDEFINED)
    return (WeirOnnxAttrType)a->type;
  if (a->has_f)
    return WEIR_ONNX_ATTR_FLOAT;
  if (a->has_i)
    return WEIR_ONNX_ATTR_INT;
  if (a->has_s)
    return WEIR_ONNX_ATTR_STRING;
  if (a->t)
    return WEIR_ONNX_ATTR_TENSOR;
  if (a->g)
    return WEIR_ONNX_ATTR_GRAPH;
  if (a->n_floats)
    return WEIR_ONNX_ATTR_FLOATS;
  if (a->n_ints)
    return WEIR_ONNX_ATTR_INTS;
  if (a->n_strings)
    return WEIR_ONNX_ATTR_STRINGS;
  if (a->n_tensors)
    return WEIR_ONNX_ATTR_TENSORS;
  if (a->n_graphs)
    return WEIR_ONNX_ATTR_GRAPHS;
  return WEIR_ONNX_ATTR_UNDEFINED;
}

static gboolean build_attr(WeirOnnxModel *m, WeirOnnxAttr *out,
                           const Onnx__AttributeProto *a,
                           const WeirOnnxNode *node, const Scope *scope,
                           guint depth, GError **error) {
  out->name = str_or_empty(a->name);
  out->type = infer_attr_type(a);
  g_autofree char *ctx =
      g_strdup_printf("%s: node '%s' (%s): attribute '%s'", m->source,
                      node->name, node->op_type, out->name);
  switch (out->type) {
  case WEIR_ONNX_ATTR_FLOAT:
    out->f = a->f;
    out->n = 1;
    break;
  case WEIR_ONNX_ATTR_INT:
    out->i = a->i;
    out->n = 1;
    break;
  case WEIR_ONNX_ATTR_STRING:
    out->s = model_take(m, g_strndup((const char *)a->s.data, a->s.len));
    out->n = 1;
    break;
  case WEIR_ONNX_ATTR_TENSOR:
    if (!a->t) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: tensor attribute without a tensor", ctx);
      return FALSE;
    }
    if (!weir_onnx_tensor_check(a->t, ctx, NULL, error))
      return FALSE;
    out->t = a->t;
    out->n = 1;
    break;
  case WEIR_ONNX_ATTR_GRAPH: {
    if (!a->g) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: graph attribute without a graph", ctx);
      return FALSE;
    }
    GraphPriv *sub =
        build_graph(m, a->g, node->graph, node, scope, depth + 1, error);
    if (!sub)
      return FALSE;
    out->g = &sub->pub;
    out->n = 1;
    break;
  }
  case WEIR_ONNX_ATTR_FLOATS:
    out->n = a->n_floats;
    out->floats = a->floats;
    break;
  case WEIR_ONNX_ATTR_INTS:
    out->n = a->n_ints;
    out->ints = (const gint64 *)a->ints;
    break;
  case WEIR_ONNX_ATTR_STRINGS: {
    const char **strings = model_alloc(m, a->n_strings + 1, sizeof(char *));
    for (gsize k = 0; k < a->n_strings; k++)
      strings[k] = model_take(
          m, g_strndup((const char *)a->strings[k].data, a->strings[k].len));
    out->n = a->n_strings;
    out->strings = strings;
    break;
  }
  case WEIR_ONNX_ATTR_TENSORS:
    for (gsize k = 0; k < a->n_tensors; k++) {
      g_autofree char *tctx =
          g_strdup_printf("%s[%" G_GSIZE_FORMAT "]", ctx, k);
      if (!weir_onnx_tensor_check(a->tensors[k], tctx, NULL, error))
        return FALSE;
    }
    out->n = a->n_tensors;
    out->tensors = (const Onnx__TensorProto *const *)a->tensors;
    break;
  case WEIR_ONNX_ATTR_GRAPHS: {
    const WeirOnnxGraph **graphs =
        model_alloc(m, a->n_graphs, sizeof(WeirOnnxGraph *));
    for (gsize k = 0; k < a->n_graphs; k++) {
      GraphPriv *sub = build_graph(m, a->graphs[k], node->graph, node, scope,
                                   depth + 1, error);
      if (!sub)
        return FALSE;
      graphs[k] = &sub->pub;
    }
    out->n = a->n_graphs;
    out->graphs = graphs;
    break;
  }
  default:
    /* sparse tensors, type protos and unknown types: reported by type */
    break;
  }
  return TRUE;
}

/* ---- graphs --------------------------------------------------------- */

static gboolean define(Scope *scope, const char *name, const char *what,
                       const char *ctx, GError **error) {
  if (g_hash_table_contains(scope->defined, name)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %s '%s' is already defined", ctx, what, name);
    return FALSE;
  }
  g_hash_table_add(scope->defined, (gpointer)name);
  return TRUE;
}

static gboolean build_initializers(WeirOnnxModel *m, GraphPriv *g,
                                   const Onnx__GraphProto *gp, Scope *scope,
                                   const char *gctx, GError **error) {
  WeirOnnxInitializer *inits =
      model_alloc(m, gp->n_initializer, sizeof(WeirOnnxInitializer));
  for (gsize k = 0; k < gp->n_initializer; k++) {
    const Onnx__TensorProto *t = gp->initializer[k];
    WeirOnnxInitializer *in = &inits[k];
    in->name = str_or_empty(t->name);
    g_autofree char *ctx =
        g_strdup_printf("%s: initializer '%s'", gctx, in->name);
    if (!in->name[0]) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: initializer %" G_GSIZE_FORMAT " has no name", gctx, k);
      return FALSE;
    }
    if (!weir_onnx_tensor_check(t, ctx, NULL, error))
      return FALSE;
    if (g_hash_table_contains(g->inits, in->name)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: initializer '%s' is defined twice", gctx, in->name);
      return FALSE;
    }
    in->onnx_type = t->has_data_type ? t->data_type : 0;
    in->dtype_ok = weir_onnx_type_to_dtype(in->onnx_type, &in->dtype);
    in->rank = (guint)t->n_dims;
    in->dims = (const gint64 *)t->dims;
    in->proto = t;
    g_hash_table_insert(g->inits, (gpointer)in->name, in);
    /* an initializer may repeat a graph input's name (a default value) */
    g_hash_table_add(scope->defined, (gpointer)in->name);
  }
  g->pub.n_initializers = (guint)gp->n_initializer;
  g->pub.initializers = inits;
  return TRUE;
}

static gboolean build_node(WeirOnnxModel *m, GraphPriv *g, WeirOnnxNode *node,
                           const Onnx__NodeProto *np, guint index, Scope *scope,
                           guint depth, GError **error) {
  node->index = index;
  node->graph = &g->pub;
  node->op_type = str_or_empty(np->op_type);
  node->domain = str_or_empty(np->domain);
  if (strcmp(node->domain, "ai.onnx") == 0)
    node->domain = "";
  if (np->name && np->name[0])
    node->name = np->name;
  else
    node->name = model_take(
        m, g_strdup_printf("%s_%u", node->op_type[0] ? node->op_type : "node",
                           index));
  if (!node->op_type[0]) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: node %u ('%s') has no op_type", m->source, index,
                node->name);
    return FALSE;
  }
  g_autofree char *ctx = g_strdup_printf("%s: node '%s' (%s)", m->source,
                                         node->name, node->op_type);

  const char **inputs = model_alloc(m, np->n_input + 1, sizeof(char *));
  for (gsize k = 0; k < np->n_input; k++) {
    inputs[k] = str_or_empty(np->input[k]);
    if (inputs[k][0] && !scope_has(scope, inputs[k])) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: input '%s' is not a graph input, an initializer or an "
                  "output of an earlier node",
                  ctx, inputs[k]);
      return FALSE;
    }
  }
  node->n_inputs = (guint)np->n_input;
  node->inputs = inputs;

  WeirOnnxAttr *attrs = model_alloc(m, np->n_attribute, sizeof(WeirOnnxAttr));
  node->n_attrs = (guint)np->n_attribute;
  node->attrs = attrs;
  for (gsize k = 0; k < np->n_attribute; k++)
    if (!build_attr(m, &attrs[k], np->attribute[k], node, scope, depth, error))
      return FALSE;

  const char **outputs = model_alloc(m, np->n_output + 1, sizeof(char *));
  for (gsize k = 0; k < np->n_output; k++) {
    outputs[k] = str_or_empty(np->output[k]);
    if (!outputs[k][0])
      continue;
    if (!define(scope, outputs[k], "output", ctx, error))
      return FALSE;
    g_hash_table_insert(g->producers, (gpointer)outputs[k], node);
  }
  node->n_outputs = (guint)np->n_output;
  node->outputs = outputs;
  return TRUE;
}

static GraphPriv *build_graph(WeirOnnxModel *m, const Onnx__GraphProto *gp,
                              const WeirOnnxGraph *parent,
                              const WeirOnnxNode *owner, const Scope *outer,
                              guint depth, GError **error) {
  GraphPriv *g = g_new0(GraphPriv, 1);
  g->inits = g_hash_table_new(g_str_hash, g_str_equal);
  g->infos = g_hash_table_new(g_str_hash, g_str_equal);
  g->producers = g_hash_table_new(g_str_hash, g_str_equal);
  g_ptr_array_add(m->graphs, g);
  g->pub.name = str_or_empty(gp->name);
  g->pub.source = m->source;
  g->pub.parent = parent;
  g->pub.owner = owner;

  const char *gctx =
      owner
          ? model_take(m, g_strdup_printf("%s: graph '%s' of node '%s'",
                                          m->source, g->pub.name, owner->name))
          : m->source;
  if (depth > MAX_GRAPH_DEPTH) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "%s: subgraphs nested more than %d deep", gctx,
                MAX_GRAPH_DEPTH);
    return NULL;
  }

  g_autoptr(GHashTable) defined = g_hash_table_new(g_str_hash, g_str_equal);
  Scope scope = {defined, outer};

  g->pub.n_inputs = (guint)gp->n_input;
  g->pub.inputs = build_value_infos(m, g, gp->input, gp->n_input);
  for (guint k = 0; k < g->pub.n_inputs; k++) {
    const char *name = g->pub.inputs[k].name;
    if (!name[0]) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: graph input %u has no name", gctx, k);
      return NULL;
    }
    if (!define(&scope, name, "graph input", gctx, error))
      return NULL;
  }
  g->pub.n_outputs = (guint)gp->n_output;
  g->pub.outputs = build_value_infos(m, g, gp->output, gp->n_output);
  g->pub.n_value_infos = (guint)gp->n_value_info;
  g->pub.value_infos =
      build_value_infos(m, g, gp->value_info, gp->n_value_info);

  if (!build_initializers(m, g, gp, &scope, gctx, error))
    return NULL;

  WeirOnnxNode *nodes = model_alloc(m, gp->n_node, sizeof(WeirOnnxNode));
  g->pub.n_nodes = (guint)gp->n_node;
  g->pub.nodes = nodes;
  for (gsize k = 0; k < gp->n_node; k++)
    if (!build_node(m, g, &nodes[k], gp->node[k], (guint)k, &scope, depth,
                    error))
      return NULL;

  for (guint k = 0; k < g->pub.n_outputs; k++) {
    const char *name = g->pub.outputs[k].name;
    if (!name[0] || !scope_has(&scope, name)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: graph output '%s' is not defined by any node, input "
                  "or initializer",
                  gctx, name);
      return NULL;
    }
  }
  return g;
}

/* ---- loading -------------------------------------------------------- */

static gboolean build_model(WeirOnnxModel *m, GError **error) {
  const Onnx__ModelProto *p = m->proto;
  if (!p->has_ir_version || p->ir_version < 1) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: not a valid ONNX model (no ir_version)", m->source);
    return FALSE;
  }
  if (!p->graph) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: not a valid ONNX model (no graph)", m->source);
    return FALSE;
  }
  m->n_opsets = (guint)p->n_opset_import;
  m->opsets = model_alloc(m, p->n_opset_import, sizeof(WeirOnnxOpset));
  for (gsize k = 0; k < p->n_opset_import; k++) {
    const char *domain = str_or_empty(p->opset_import[k]->domain);
    m->opsets[k].domain = strcmp(domain, "ai.onnx") == 0 ? "" : domain;
    m->opsets[k].version =
        p->opset_import[k]->has_version ? p->opset_import[k]->version : 0;
  }
  m->main = build_graph(m, p->graph, NULL, NULL, NULL, 0, error);
  return m->main != NULL;
}

WeirOnnxModel *weir_onnx_model_load_from_data(const guint8 *data, gsize len,
                                              const char *source,
                                              GError **error) {
  const char *src = source ? source : "<memory>";
  if (len == 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: not a valid ONNX model (empty file)", src);
    return NULL;
  }
  g_return_val_if_fail(data != NULL, NULL);
  Onnx__ModelProto *proto = onnx__model_proto__unpack(NULL, len, data);
  if (!proto) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: not a valid ONNX model (protobuf decoding failed)", src);
    return NULL;
  }
  g_autoptr(WeirOnnxModel) m = g_new0(WeirOnnxModel, 1);
  m->source = g_strdup(src);
  m->proto = proto;
  m->mem = g_ptr_array_new_with_free_func(g_free);
  m->graphs = g_ptr_array_new_with_free_func(graph_priv_free);
  if (!build_model(m, error))
    return NULL;
  return g_steal_pointer(&m);
}

WeirOnnxModel *weir_onnx_model_load(const char *path, GError **error) {
  g_return_val_if_fail(path != NULL, NULL);
  GError *local = NULL;
  g_autoptr(GMappedFile) file = g_mapped_file_new(path, FALSE, &local);
  if (!file) {
    /* GLib's message already names the file */
    g_set_error_literal(error, WEIR_ERROR, WEIR_ERROR_IO, local->message);
    g_error_free(local);
    return NULL;
  }
  return weir_onnx_model_load_from_data(
      (const guint8 *)g_mapped_file_get_contents(file),
      g_mapped_file_get_length(file), path, error);
}

/* ---- accessors ------------------------------------------------------ */

const char *weir_onnx_model_source(const WeirOnnxModel *model) {
  return model->source;
}

gint64 weir_onnx_model_ir_version(const WeirOnnxModel *model) {
  return model->proto->ir_version;
}

const char *weir_onnx_model_producer(const WeirOnnxModel *model) {
  return str_or_empty(model->proto->producer_name);
}

const char *weir_onnx_model_producer_version(const WeirOnnxModel *model) {
  return str_or_empty(model->proto->producer_version);
}

const char *weir_onnx_model_metadata(const WeirOnnxModel *model,
                                     const char *key) {
  for (size_t i = 0; i < model->proto->n_metadata_props; i++) {
    const Onnx__StringStringEntryProto *e = model->proto->metadata_props[i];
    if (e->key && g_strcmp0(e->key, key) == 0)
      return str_or_empty(e->value);
  }
  return NULL;
}

const WeirOnnxOpset *weir_onnx_model_opsets(const WeirOnnxModel *model,
                                            guint *n_out) {
  if (n_out)
    *n_out = model->n_opsets;
  return model->opsets;
}

gint64 weir_onnx_model_opset(const WeirOnnxModel *model, const char *domain) {
  if (!domain || strcmp(domain, "ai.onnx") == 0)
    domain = "";
  for (guint k = 0; k < model->n_opsets; k++)
    if (strcmp(model->opsets[k].domain, domain) == 0)
      return model->opsets[k].version;
  return 0;
}

const WeirOnnxGraph *weir_onnx_model_graph(const WeirOnnxModel *model) {
  return &model->main->pub;
}

WeirTensor *weir_onnx_model_initializer(const WeirOnnxModel *model,
                                        const char *name, GError **error) {
  return weir_onnx_graph_decode_initializer(&model->main->pub, name, error);
}

const WeirOnnxInitializer *
weir_onnx_graph_initializer(const WeirOnnxGraph *graph, const char *name) {
  return g_hash_table_lookup(((const GraphPriv *)graph)->inits, name);
}

const WeirOnnxValueInfo *weir_onnx_graph_value_info(const WeirOnnxGraph *graph,
                                                    const char *name) {
  return g_hash_table_lookup(((const GraphPriv *)graph)->infos, name);
}

const WeirOnnxNode *weir_onnx_graph_producer(const WeirOnnxGraph *graph,
                                             const char *name) {
  return g_hash_table_lookup(((const GraphPriv *)graph)->producers, name);
}

gboolean weir_onnx_graph_is_initializer(const WeirOnnxGraph *graph,
                                        const char *name) {
  return weir_onnx_graph_initializer(graph, name) != NULL;
}

gboolean weir_onnx_graph_is_real_input(const WeirOnnxGraph *graph,
                                       const char *name) {
  if (weir_onnx_graph_is_initializer(graph, name))
    return FALSE;
  for (guint k = 0; k < graph->n_inputs; k++)
    if (strcmp(graph->inputs[k].name, name) == 0)
      return TRUE;
  return FALSE;
}

WeirTensor *weir_onnx_graph_decode_initializer(const WeirOnnxGraph *graph,
                                               const char *name,
                                               GError **error) {
  const WeirOnnxInitializer *in = weir_onnx_graph_initializer(graph, name);
  if (!in) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: no initializer named '%s'", graph->source, name);
    return NULL;
  }
  g_autofree char *ctx =
      g_strdup_printf("%s: initializer '%s'", graph->source, name);
  return weir_onnx_tensor_decode(in->proto, ctx, error);
}

/* ---- attributes of a node ------------------------------------------- */

const char *weir_onnx_attr_type_name(WeirOnnxAttrType type) {
  static const char *const names[] = {
      [WEIR_ONNX_ATTR_UNDEFINED] = "undefined",
      [WEIR_ONNX_ATTR_FLOAT] = "float",
      [WEIR_ONNX_ATTR_INT] = "int",
      [WEIR_ONNX_ATTR_STRING] = "string",
      [WEIR_ONNX_ATTR_TENSOR] = "tensor",
      [WEIR_ONNX_ATTR_GRAPH] = "graph",
      [WEIR_ONNX_ATTR_FLOATS] = "floats",
      [WEIR_ONNX_ATTR_INTS] = "ints",
      [WEIR_ONNX_ATTR_STRINGS] = "strings",
      [WEIR_ONNX_ATTR_TENSORS] = "tensors",
      [WEIR_ONNX_ATTR_GRAPHS] = "graphs",
      [WEIR_ONNX_ATTR_SPARSE_TENSOR] = "sparse tensor",
      [WEIR_ONNX_ATTR_SPARSE_TENSORS] = "sparse tensors",
      [WEIR_ONNX_ATTR_TYPE_PROTO] = "type",
      [WEIR_ONNX_ATTR_TYPE_PROTOS] = "types",
  };
  if ((guint)type < G_N_ELEMENTS(names))
    return names[type];
  return "unknown";
}

const WeirOnnxAttr *weir_onnx_node_attr(const WeirOnnxNode *node,
                                        const char *name) {
  for (guint k = 0; k < node->n_attrs; k++)
    if (strcmp(node->attrs[k].name, name) == 0)
      return &node->attrs[k];
  return NULL;
}

/* *out: the attribute, or NULL when absent; FALSE if it has another type. */
static gboolean typed_attr(const WeirOnnxNode *node, const char *name,
                           WeirOnnxAttrType want, const WeirOnnxAttr **out,
                           GError **error) {
  *out = weir_onnx_node_attr(node, name);
  if (*out && (*out)->type != want) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: node '%s' (%s): attribute '%s' should be of type %s, "
                "not %s",
                node->graph->source, node->name, node->op_type, name,
                weir_onnx_attr_type_name(want),
                weir_onnx_attr_type_name((*out)->type));
    return FALSE;
  }
  return TRUE;
}

gboolean weir_onnx_node_attr_int(const WeirOnnxNode *node, const char *name,
                                 gint64 def, gint64 *out, GError **error) {
  const WeirOnnxAttr *a;
  if (!typed_attr(node, name, WEIR_ONNX_ATTR_INT, &a, error))
    return FALSE;
  *out = a ? a->i : def;
  return TRUE;
}

gboolean weir_onnx_node_attr_float(const WeirOnnxNode *node, const char *name,
                                   float def, float *out, GError **error) {
  const WeirOnnxAttr *a;
  if (!typed_attr(node, name, WEIR_ONNX_ATTR_FLOAT, &a, error))
    return FALSE;
  *out = a ? a->f : def;
  return TRUE;
}

gboolean weir_onnx_node_attr_string(const WeirOnnxNode *node, const char *name,
                                    const char *def, const char **out,
                                    GError **error) {
  const WeirOnnxAttr *a;
  if (!typed_attr(node, name, WEIR_ONNX_ATTR_STRING, &a, error))
    return FALSE;
  *out = a ? a->s : def;
  return TRUE;
}

gboolean weir_onnx_node_attr_ints(const WeirOnnxNode *node, const char *name,
                                  const gint64 **out, gsize *n_out,
                                  GError **error) {
  const WeirOnnxAttr *a;
  if (!typed_attr(node, name, WEIR_ONNX_ATTR_INTS, &a, error))
    return FALSE;
  *out = a ? a->ints : NULL;
  *n_out = a ? a->n : 0;
  return TRUE;
}

gboolean weir_onnx_node_attr_floats(const WeirOnnxNode *node, const char *name,
                                    const float **out, gsize *n_out,
                                    GError **error) {
  const WeirOnnxAttr *a;
  if (!typed_attr(node, name, WEIR_ONNX_ATTR_FLOATS, &a, error))
    return FALSE;
  *out = a ? a->floats : NULL;
  *n_out = a ? a->n : 0;
  return TRUE;
}

guint weir_onnx_node_n_present_inputs(const WeirOnnxNode *node) {
  guint n = node->n_inputs;
  while (n > 0 && !node->inputs[n - 1][0])
    n--;
  return n;
}

const char *weir_onnx_node_input(const WeirOnnxNode *node, guint k) {
  if (k >= node->n_inputs || !node->inputs[k][0])
    return NULL;
  return node->inputs[k];
}
