/* test-import.c — the ONNX importer: real models from the ONNX test data
 * (libonnx-testdata) and the bundled samples, and small models built here
 * with the generated protobuf-c code to reach one rule at a time (symbols,
 * names, normalization, unsupported operators, malformed input).
 *
 * Tests that need the test data skip when it is not installed
 * (WEIR_ONNX_TESTDATA overrides its location). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <string.h>

#include "onnx.pb-c.h"
#include "weir-import.h"
#include "weir-json.h"
#include "weir-ops.h"
#include "weir-validate.h"

static const char *data_dir(void) {
  const char *env = g_getenv("WEIR_ONNX_TESTDATA");
  return env ? env : "/usr/share/libonnx-testdata/data";
}

static char *data_path(const char *rel) {
  char *p = g_build_filename(data_dir(), rel, NULL);
  if (!g_file_test(p, G_FILE_TEST_EXISTS)) {
    g_free(p);
    return NULL;
  }
  return p;
}

#define NEED_DATA(var, rel)                                                    \
  g_autofree char *var = data_path(rel);                                       \
  if (!var) {                                                                  \
    print_message("libonnx-testdata not installed (%s): skipping\n", rel);     \
    skip();                                                                    \
  }

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    if (!strstr((hay), (needle)))                                              \
      fail_msg("expected to find '%s' in:\n%s", (needle), (hay));              \
  } while (0)

static WeirGraph *import_ok(const char *path,
                            const WeirOnnxImportOptions *opts) {
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_onnx_import(path, opts, &error);
  if (!g)
    fail_msg("%s", error->message);
  return g;
}

/* The PyTorch exports of the test data use opset 6, outside the supported
 * range: they import with a warning. */
static WeirGraph *import_old_opset(const char *path) {
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  WeirOnnxImportOptions opts = {.allow_any_opset = TRUE, .warnings = warnings};
  WeirGraph *g = import_ok(path, &opts);
  assert_int_equal(warnings->len, 1);
  assert_contains(g_ptr_array_index(warnings, 0),
                  "opset 6 is outside the supported range 11 to 17");
  return g;
}

/* ------------------------------------------------------------- helpers */

static const WeirNode *only_library(const WeirGraph *g) {
  const WeirState *s = g_ptr_array_index(g->states, 0);
  const WeirNode *found = NULL;
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind != WEIR_NODE_LIBRARY)
      continue;
    assert_null(found);
    found = n;
  }
  assert_non_null(found);
  return found;
}

static const WeirNode *access_of(const WeirGraph *g, const char *container) {
  const WeirState *s = g_ptr_array_index(g->states, 0);
  const WeirNode *found = NULL;
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_ACCESS && strcmp(n->data, container) == 0) {
      assert_null(found); /* one access node per container */
      found = n;
    }
  }
  assert_non_null(found);
  return found;
}

static char *container_shape(const WeirGraph *g, const char *name) {
  const WeirContainer *c = weir_graph_container(g, name);
  if (!c)
    fail_msg("no container '%s'", name);
  GString *s = g_string_new(NULL);
  for (guint d = 0; d < c->shape->len; d++) {
    g_autofree char *e = weir_expr_to_string(g_ptr_array_index(c->shape, d));
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  return g_string_free(s, FALSE);
}

#define assert_shape(g, name, want)                                            \
  do {                                                                         \
    g_autofree char *got_ = container_shape((g), (name));                      \
    assert_string_equal(got_, (want));                                         \
  } while (0)

static void assert_conns(const GPtrArray *conns, const char *want) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < conns->len; i++)
    g_string_append_printf(s, "%s%s", i ? "," : "",
                           (const char *)g_ptr_array_index(conns, i));
  assert_string_equal(s->str, want);
  g_string_free(s, TRUE);
}

/* The memlet reaching (dst_conn) or leaving (src_conn) node n. */
static const WeirMemlet *memlet_at(const WeirGraph *g, const WeirNode *n,
                                   const char *conn, gboolean input) {
  const WeirState *s = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (input && m->dst == n->id && g_strcmp0(m->dst_conn, conn) == 0)
      return m;
    if (!input && m->src == n->id && g_strcmp0(m->src_conn, conn) == 0)
      return m;
  }
  fail_msg("no memlet at %s of node '%s'", conn, n->label);
  return NULL;
}

static void assert_memlet(const WeirGraph *g, const WeirNode *n,
                          const char *conn, gboolean input, const char *data,
                          const char *subset) {
  const WeirMemlet *m = memlet_at(g, n, conn, input);
  assert_string_equal(m->data, data);
  g_autofree char *sub = weir_subset_to_string(m->subset);
  assert_string_equal(sub, subset);
}

/* --------------------------------------------------- building models */

/* A model under construction: the protobuf-c structures, freed with
 * onnx__model_proto__free_unpacked (everything is malloc'ed). */
typedef Onnx__ModelProto Model;

#define APPEND(arr, n, item)                                                   \
  do {                                                                         \
    (arr) = g_renew(__typeof__(*(arr)), (arr), (n) + 1);                       \
    (arr)[(n)++] = (item);                                                     \
  } while (0)

static Model *model_new(gint64 opset) {
  Model *m = g_new0(Model, 1);
  onnx__model_proto__init(m);
  m->has_ir_version = TRUE;
  m->ir_version = 8;
  Onnx__OperatorSetIdProto *o = g_new0(Onnx__OperatorSetIdProto, 1);
  onnx__operator_set_id_proto__init(o);
  o->has_version = TRUE;
  o->version = opset;
  APPEND(m->opset_import, m->n_opset_import, o);
  m->graph = g_new0(Onnx__GraphProto, 1);
  onnx__graph_proto__init(m->graph);
  m->graph->name = g_strdup("built");
  return m;
}

/* A tensor value info.  dims: "2,N,?" (numbers, dim_params, '?' for a
 * dimension with neither), "" for a scalar, NULL for no shape. */
static Onnx__ValueInfoProto *value_info(const char *name, int elem,
                                        const char *dims) {
  Onnx__ValueInfoProto *v = g_new0(Onnx__ValueInfoProto, 1);
  onnx__value_info_proto__init(v);
  v->name = g_strdup(name);
  v->type = g_new0(Onnx__TypeProto, 1);
  onnx__type_proto__init(v->type);
  v->type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  Onnx__TypeProto__Tensor *t = g_new0(Onnx__TypeProto__Tensor, 1);
  onnx__type_proto__tensor__init(t);
  t->has_elem_type = TRUE;
  t->elem_type = elem;
  v->type->tensor_type = t;
  if (!dims)
    return v;
  t->shape = g_new0(Onnx__TensorShapeProto, 1);
  onnx__tensor_shape_proto__init(t->shape);
  g_auto(GStrv) parts = g_strsplit(dims, ",", -1);
  for (guint i = 0; *dims && parts[i]; i++) {
    Onnx__TensorShapeProto__Dimension *d =
        g_new0(Onnx__TensorShapeProto__Dimension, 1);
    onnx__tensor_shape_proto__dimension__init(d);
    if (g_ascii_isdigit(parts[i][0])) {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
      d->dim_value = g_ascii_strtoll(parts[i], NULL, 10);
    } else if (strcmp(parts[i], "?") != 0) {
      d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
      d->dim_param = g_strdup(parts[i]);
    }
    APPEND(t->shape->dim, t->shape->n_dim, d);
  }
  return v;
}

static void add_input(Model *m, const char *name, int elem, const char *dims) {
  APPEND(m->graph->input, m->graph->n_input, value_info(name, elem, dims));
}

static void add_output(Model *m, const char *name, int elem, const char *dims) {
  APPEND(m->graph->output, m->graph->n_output, value_info(name, elem, dims));
}

static void add_value_info(Model *m, const char *name, int elem,
                           const char *dims) {
  APPEND(m->graph->value_info, m->graph->n_value_info,
         value_info(name, elem, dims));
}

/* ins / outs: comma-separated names ("" items are omitted values). */
static Onnx__NodeProto *add_node_to(Onnx__GraphProto *g, const char *op,
                                    const char *name, const char *ins,
                                    const char *outs) {
  Onnx__NodeProto *n = g_new0(Onnx__NodeProto, 1);
  onnx__node_proto__init(n);
  n->op_type = g_strdup(op);
  if (name)
    n->name = g_strdup(name);
  g_auto(GStrv) in = g_strsplit(ins, ",", -1);
  for (guint i = 0; *ins && in[i]; i++)
    APPEND(n->input, n->n_input, g_strdup(in[i]));
  g_auto(GStrv) out = g_strsplit(outs, ",", -1);
  for (guint i = 0; *outs && out[i]; i++)
    APPEND(n->output, n->n_output, g_strdup(out[i]));
  APPEND(g->node, g->n_node, n);
  return n;
}

static Onnx__NodeProto *add_node(Model *m, const char *op, const char *name,
                                 const char *ins, const char *outs) {
  return add_node_to(m->graph, op, name, ins, outs);
}

static Onnx__AttributeProto *attr_new(Onnx__NodeProto *n, const char *name,
                                      Onnx__AttributeProto__AttributeType t) {
  Onnx__AttributeProto *a = g_new0(Onnx__AttributeProto, 1);
  onnx__attribute_proto__init(a);
  a->name = g_strdup(name);
  a->has_type = TRUE;
  a->type = t;
  APPEND(n->attribute, n->n_attribute, a);
  return a;
}

static void attr_int(Onnx__NodeProto *n, const char *name, gint64 v) {
  Onnx__AttributeProto *a =
      attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = TRUE;
  a->i = v;
}

static void attr_float(Onnx__NodeProto *n, const char *name, float v) {
  Onnx__AttributeProto *a =
      attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = TRUE;
  a->f = v;
}

static void attr_floats(Onnx__NodeProto *n, const char *name, const float *v,
                        gsize count) {
  Onnx__AttributeProto *a =
      attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
  a->floats = g_memdup2(v, count * sizeof(float));
  a->n_floats = count;
}

static void attr_ints(Onnx__NodeProto *n, const char *name, const gint64 *v,
                      gsize count) {
  Onnx__AttributeProto *a =
      attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->ints = g_memdup2(v, count * sizeof(gint64));
  a->n_ints = count;
}

/* A GRAPH attribute holding an empty graph. */
static void attr_graph(Onnx__NodeProto *n, const char *name) {
  Onnx__AttributeProto *a =
      attr_new(n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
  a->g = g_new0(Onnx__GraphProto, 1);
  onnx__graph_proto__init(a->g);
  a->g->name = g_strdup(name);
}

static Onnx__TensorProto *tensor_f32(const char *name, const gint64 *dims,
                                     gsize rank, const float *v, gsize n) {
  Onnx__TensorProto *t = g_new0(Onnx__TensorProto, 1);
  onnx__tensor_proto__init(t);
  t->name = g_strdup(name);
  t->has_data_type = TRUE;
  t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  t->dims = g_memdup2(dims, MAX(rank, 1) * sizeof(gint64));
  t->n_dims = rank;
  t->float_data = g_memdup2(v, MAX(n, 1) * sizeof(float));
  t->n_float_data = n;
  return t;
}

static Onnx__TensorProto *tensor_i64(const char *name, const gint64 *dims,
                                     gsize rank, const gint64 *v, gsize n) {
  Onnx__TensorProto *t = g_new0(Onnx__TensorProto, 1);
  onnx__tensor_proto__init(t);
  t->name = g_strdup(name);
  t->has_data_type = TRUE;
  t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
  t->dims = g_memdup2(dims, MAX(rank, 1) * sizeof(gint64));
  t->n_dims = rank;
  t->int64_data = g_memdup2(v, MAX(n, 1) * sizeof(gint64));
  t->n_int64_data = n;
  return t;
}

static void add_initializer(Model *m, Onnx__TensorProto *t) {
  APPEND(m->graph->initializer, m->graph->n_initializer, t);
}

/* Packs, loads and imports a built model (freed here); returns the graph
 * or NULL with *error set. */
static WeirGraph *import_built(Model *m, const WeirOnnxImportOptions *opts,
                               GError **error) {
  gsize size = onnx__model_proto__get_packed_size(m);
  g_autofree guint8 *buf = g_malloc(size + 1);
  onnx__model_proto__pack(m, buf);
  onnx__model_proto__free_unpacked(m, NULL);
  g_autoptr(WeirOnnxModel) model =
      weir_onnx_model_load_from_data(buf, size, "built.onnx", error);
  if (!model)
    return NULL;
  return weir_onnx_import_model(model, opts, error);
}

static WeirGraph *import_built_ok(Model *m, const WeirOnnxImportOptions *opts) {
  g_autoptr(GError) error = NULL;
  WeirGraph *g = import_built(m, opts, &error);
  if (!g)
    fail_msg("%s", error->message);
  return g;
}

/* The error message of a built model that must not import. */
static char *import_error(Model *m, const WeirOnnxImportOptions *opts,
                          WeirErrorCode code) {
  g_autoptr(GError) error = NULL;
  WeirGraph *g = import_built(m, opts, &error);
  if (g) {
    weir_graph_free(g);
    fail_msg("the model imported");
  }
  assert_int_equal(error->domain, WEIR_ERROR);
  if (error->code != (int)code)
    fail_msg("error code %d, expected %d: %s", error->code, code,
             error->message);
  assert_true(g_str_has_prefix(error->message, "built.onnx: "));
  return g_strdup(error->message);
}

#define F32 ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT
#define I64 ONNX__TENSOR_PROTO__DATA_TYPE__INT64

/* ------------------------------------------------------- real models */

static void test_add_model(void **state) {
  (void)state;
  NEED_DATA(path, "node/test_add/model.onnx");
  g_autoptr(WeirGraph) g = import_ok(path, NULL);
  assert_string_equal(g->name, "test_add");
  assert_int_equal(g->states->len, 1);
  const WeirState *s = g_ptr_array_index(g->states, 0);
  assert_string_equal(s->label, "main");
  assert_int_equal(g->symbols->len, 0);
  assert_int_equal(g->containers->len, 3);
  for (guint i = 0; i < 3; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    assert_false(c->transient); /* x, y inputs; sum output */
    assert_int_equal(c->dtype, WEIR_DTYPE_F32);
  }
  assert_shape(g, "sum", "3, 4, 5");
  const WeirNode *n = only_library(g);
  assert_string_equal(n->op, "Add");
  assert_string_equal(n->label, "Add_0");
  assert_conns(n->in_conns, "in0,in1");
  assert_conns(n->out_conns, "out0");
  assert_memlet(g, n, "in0", TRUE, "x", "0:3, 0:4, 0:5");
  assert_memlet(g, n, "in1", TRUE, "y", "0:3, 0:4, 0:5");
  assert_memlet(g, n, "out0", FALSE, "sum", "0:3, 0:4, 0:5");
  assert_string_equal(access_of(g, "x")->label, "x");
  assert_int_equal(s->nodes->len, 4);
  assert_int_equal(s->edges->len, 3);
}

static void test_conv_models(void **state) {
  (void)state;
  NEED_DATA(path, "node/test_conv_with_strides_padding/model.onnx");
  g_autoptr(WeirGraph) g = import_ok(path, NULL);
  const WeirNode *n = only_library(g);
  assert_string_equal(n->op, "Conv");
  const WeirAttr *a = weir_node_attr(n, "strides");
  assert_non_null(a);
  assert_int_equal(a->type, WEIR_ATTR_INTS);
  assert_int_equal(a->ints->len, 2);
  assert_int_equal(g_array_index(a->ints, gint64, 0), 2);
  a = weir_node_attr(n, "pads");
  assert_int_equal(a->ints->len, 4);
  assert_int_equal(g_array_index(a->ints, gint64, 3), 1);
  /* Output shape from inference, matching the declared [1, 1, 4, 3]. */
  assert_shape(g, "y", "1, 1, 4, 3");
  assert_memlet(g, n, "in1", TRUE, "W", "0, 0, 0:3, 0:3");

  /* A PyTorch export: the weights and bias are initializers, which become
   * transient containers holding their data. */
  NEED_DATA(torch, "pytorch-converted/test_Conv2d/model.onnx");
  g_autoptr(WeirGraph) t = import_old_opset(torch);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirOnnxModel) model = weir_onnx_model_load(torch, &error);
  const WeirOnnxGraph *og = weir_onnx_model_graph(model);
  guint constants = 0;
  for (guint i = 0; i < t->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(t->containers, i);
    if (!c->initial)
      continue;
    constants++;
    assert_true(c->transient);
    /* The access node keeps the ONNX name; the data is the initializer's. */
    const WeirNode *acc = access_of(t, c->name);
    g_autoptr(WeirTensor) want =
        weir_onnx_graph_decode_initializer(og, acc->label, &error);
    assert_non_null(want);
    gsize size = 0;
    const void *data = g_bytes_get_data(c->initial, &size);
    assert_int_equal(size, weir_tensor_nbytes(want));
    assert_memory_equal(data, want->data, size);
  }
  assert_int_equal(constants, og->n_initializers);
  const WeirNode *conv = only_library(t);
  assert_conns(conv->in_conns, "in0,in1,in2");
}

static void test_gemm_attributes(void **state) {
  (void)state;
  NEED_DATA(path, "node/test_gemm_all_attributes/model.onnx");
  g_autoptr(WeirGraph) g = import_ok(path, NULL);
  const WeirNode *n = only_library(g);
  assert_string_equal(n->op, "Gemm");
  const WeirAttr *a = weir_node_attr(n, "alpha");
  assert_int_equal(a->type, WEIR_ATTR_FLOAT);
  assert_float_equal(a->f, 0.25, 1e-7);
  assert_float_equal(weir_node_attr(n, "beta")->f, 0.35, 1e-7);
  assert_int_equal(weir_node_attr(n, "transA")->i, 1);
  assert_int_equal(weir_node_attr(n, "transB")->i, 1);

  /* Defaults are filled in from the schema. */
  NEED_DATA(plain, "node/test_gemm_default_no_bias/model.onnx");
  g_autoptr(WeirGraph) d = import_ok(plain, NULL);
  n = only_library(d);
  assert_float_equal(weir_node_attr(n, "alpha")->f, 1.0, 0);
  assert_int_equal(weir_node_attr(n, "transA")->i, 0);
  assert_conns(n->in_conns, "in0,in1");
}

/* The bundled MLP has a symbolic batch dimension: it stays a symbol, and
 * binding it makes every shape concrete. */
static void test_symbolic_batch(void **state) {
  (void)state;
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "mlp.onnx", NULL);
  g_autoptr(WeirGraph) g = import_ok(path, NULL);
  assert_int_equal(g->symbols->len, 1);
  assert_string_equal(g_ptr_array_index(g->symbols, 0), "batch");
  assert_shape(g, "input", "batch, 64");
  assert_shape(g, "output", "batch, 10");
  assert_shape(g, "_Relu_output_0", "batch, 128");
  assert_false(weir_graph_container(g, "output")->transient);
  assert_true(weir_graph_container(g, "fc1_weight")->transient);
  assert_string_equal(access_of(g, "fc1_weight")->label, "fc1.weight");

  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "batch", 4);
  WeirOnnxImportOptions opts = {.symbols = b};
  g_autoptr(WeirGraph) bound = import_ok(path, &opts);
  assert_int_equal(bound->symbols->len, 0);
  assert_shape(bound, "output", "4, 10");

  /* The same through the shape of an input. */
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  GArray *shape = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_vals(shape, (gint64[]){7, 64}, 2);
  g_hash_table_insert(shapes, "input", shape);
  WeirOnnxImportOptions by_shape = {.input_shapes = shapes};
  g_autoptr(WeirGraph) g7 = import_ok(path, &by_shape);
  assert_shape(g7, "output", "7, 10");

  /* A shape that contradicts the model. */
  g_array_index(shape, gint64, 1) = 65;
  g_autoptr(GError) error = NULL;
  assert_null(weir_onnx_import(path, &by_shape, &error));
  assert_contains(error->message, "input 'input': dimension 1 is 64, but "
                                  "the given shape has 65");
}

static void test_json_round_trip(void **state) {
  (void)state;
  NEED_DATA(path, "pytorch-converted/test_Conv2d/model.onnx");
  g_autoptr(WeirGraph) g = import_old_opset(path);
  g_autofree char *text = weir_graph_to_json(g);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) back = weir_graph_from_json(text, -1, "x", &error);
  if (!back)
    fail_msg("%s", error->message);
  g_autofree char *again = weir_graph_to_json(back);
  assert_string_equal(text, again);
  /* Importing twice gives the same bytes. */
  g_autoptr(WeirGraph) g2 = import_old_opset(path);
  g_autofree char *text2 = weir_graph_to_json(g2);
  assert_string_equal(text, text2);
}

static void test_constant_output(void **state) {
  (void)state;
  NEED_DATA(path, "node/test_constant/model.onnx");
  g_autoptr(WeirGraph) g = import_ok(path, NULL);
  /* The output is an argument filled by a copy from a constant. */
  const WeirContainer *out = weir_graph_container(g, "values");
  assert_non_null(out);
  assert_false(out->transient);
  assert_null(out->initial);
  const WeirContainer *k = weir_graph_container(g, "values_value");
  assert_non_null(k);
  assert_true(k->transient);
  assert_non_null(k->initial);
  const WeirState *s = g_ptr_array_index(g->states, 0);
  assert_int_equal(s->edges->len, 1);
  const WeirMemlet *m = g_ptr_array_index(s->edges, 0);
  assert_int_equal(m->src, access_of(g, "values_value")->id);
  assert_int_equal(m->dst, access_of(g, "values")->id);
}

static void test_unsupported_real_model(void **state) {
  (void)state;
  NEED_DATA(path, "node/test_bernoulli/model.onnx");
  g_autoptr(GError) error = NULL;
  assert_null(weir_onnx_import(path, NULL, &error));
  assert_int_equal(error->code, WEIR_ERROR_UNSUPPORTED);
  g_autofree char *want = g_strdup_printf(
      "%s: 1 unsupported operator: Bernoulli (1 node: Bernoulli_0)", path);
  assert_string_equal(error->message, want);
}

/* ------------------------------------------------------ built models */

static void test_symbol_names(void **state) {
  (void)state;
  Model *m = model_new(13);
  add_input(m, "x", F32, "batch size,?,3");
  add_input(m, "y", F32, "?,N");
  add_output(m, "a", F32, NULL);
  add_output(m, "b", F32, NULL);
  add_node(m, "Relu", "r1", "x", "a");
  add_node(m, "Relu", "r2", "y", "b");
  g_autoptr(WeirGraph) g = import_built_ok(m, NULL);
  /* dim_params first (made identifiers), then unnamed dimensions. */
  assert_int_equal(g->symbols->len, 4);
  assert_shape(g, "x", "batch_size, N_1, 3");
  assert_shape(g, "y", "N_2, N");
  assert_shape(g, "a", "batch_size, N_1, 3");

  /* Bindings by dim_param or by the symbol's name. */
  m = model_new(13);
  add_input(m, "x", F32, "batch size,?,3");
  add_output(m, "a", F32, NULL);
  add_node(m, "Relu", "r1", "x", "a");
  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "batch size", 2);
  weir_bindings_set(b, "N", 5);
  weir_bindings_set(b, "unused", 1);
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  WeirOnnxImportOptions opts = {.symbols = b, .warnings = warnings};
  g_autoptr(WeirGraph) bound = import_built_ok(m, &opts);
  assert_int_equal(bound->symbols->len, 0);
  assert_shape(bound, "a", "2, 5, 3");
  assert_int_equal(warnings->len, 1);
  assert_string_equal(g_ptr_array_index(warnings, 0),
                      "built.onnx: symbol 'unused' is not a dimension of any "
                      "input");
}

static void test_names(void **state) {
  (void)state;
  Model *m = model_new(13);
  add_input(m, "input.1", F32, "2");
  add_input(m, "0", F32, "2");
  add_output(m, "out:0", F32, "2");
  add_node(m, "Add", "add/1", "input.1,0", "out:0");
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  WeirOnnxImportOptions opts = {.names = names};
  g_autoptr(WeirGraph) g = import_built_ok(m, &opts);
  assert_non_null(weir_graph_container(g, "input_1"));
  assert_non_null(weir_graph_container(g, "v0"));
  assert_non_null(weir_graph_container(g, "out_0"));
  assert_string_equal(access_of(g, "input_1")->label, "input.1");
  assert_string_equal(access_of(g, "v0")->label, "0");
  assert_string_equal(access_of(g, "out_0")->label, "out:0");
  assert_string_equal(only_library(g)->label, "add/1");
  assert_int_equal(g_hash_table_size(names), 3);
  assert_string_equal(g_hash_table_lookup(names, "input.1"), "input_1");
  assert_string_equal(g_hash_table_lookup(names, "out:0"), "out_0");

  /* Names that clash after sanitizing get a suffix. */
  m = model_new(13);
  add_input(m, "a.b", F32, "2");
  add_input(m, "a_b", F32, "2");
  add_output(m, "c", F32, "2");
  add_node(m, "Add", NULL, "a.b,a_b", "c");
  g_autoptr(WeirGraph) h = import_built_ok(m, NULL);
  assert_string_equal(access_of(h, "a_b")->label, "a.b");
  assert_string_equal(access_of(h, "a_b_1")->label, "a_b");
}

static void test_unsupported_listing(void **state) {
  (void)state;
  Model *m = model_new(13);
  add_input(m, "x", F32, "2,3");
  add_output(m, "y", F32, NULL);
  add_node(m, "Bernoulli", "bern1", "x", "h1");
  add_node(m, "Relu", "relu", "h1", "r");
  add_node(m, "Bernoulli", "bern2", "r", "h2");
  add_node(m, "Multinomial", "mult", "h2", "i");
  Onnx__NodeProto *n = add_node(m, "Foo", "foo", "i", "y");
  n->domain = g_strdup("com.example");
  g_autofree char *msg = import_error(m, NULL, WEIR_ERROR_UNSUPPORTED);
  assert_string_equal(
      msg, "built.onnx: 3 unsupported operators (4 nodes): Bernoulli "
           "(2 nodes: bern1, bern2), Multinomial (1 node: mult), "
           "com.example.Foo (1 node: foo)");

  /* One operator in several nodes is one operator. */
  m = model_new(13);
  add_input(m, "x", F32, "2,3");
  add_output(m, "y", F32, NULL);
  add_node(m, "Mystery", "a", "x", "h");
  add_node(m, "Mystery", "b", "h", "y");
  g_autofree char *one = import_error(m, NULL, WEIR_ERROR_UNSUPPORTED);
  assert_string_equal(one, "built.onnx: 1 unsupported operator (2 nodes): "
                           "Mystery (2 nodes: a, b)");
}

static void test_constants(void **state) {
  (void)state;
  Model *m = model_new(13);
  add_input(m, "x", F32, "3");
  add_output(m, "y", F32, "3");
  Onnx__NodeProto *k = add_node(m, "Constant", "k", "", "c");
  attr_floats(k, "value_floats", (float[]){1, 2, 3}, 3);
  add_node(m, "Add", "add", "x,c", "y");
  g_autoptr(WeirGraph) g = import_built_ok(m, NULL);
  const WeirContainer *c = weir_graph_container(g, "c");
  assert_non_null(c);
  assert_true(c->transient);
  assert_int_equal(c->dtype, WEIR_DTYPE_F32);
  assert_shape(g, "c", "3");
  gsize size;
  const float *v = g_bytes_get_data(c->initial, &size);
  assert_int_equal(size, 12);
  assert_float_equal(v[2], 3.0, 0);
  assert_memlet(g, only_library(g), "in1", TRUE, "c", "0:3");

  /* A constant that only feeds an attribute leaves no container. */
  m = model_new(13);
  add_input(m, "x", F32, "3");
  add_output(m, "y", F32, "3");
  k = add_node(m, "Constant", "lo", "", "min");
  attr_float(k, "value_float", -1);
  add_node(m, "Clip", "clip", "x,min", "y");
  g_autoptr(WeirGraph) h = import_built_ok(m, NULL);
  assert_null(weir_graph_container(h, "min"));
  assert_int_equal(h->containers->len, 2);

  /* A Constant without a value. */
  m = model_new(13);
  add_output(m, "y", F32, NULL);
  k = add_node(m, "Constant", "k", "", "y");
  g_autofree char *msg = import_error(m, NULL, WEIR_ERROR_INVALID);
  assert_string_equal(msg, "built.onnx: node 'k' (Constant): expected "
                           "exactly one attribute (value, value_float(s) "
                           "or value_int(s)), found 0");
}

/* Inputs that the latest opset takes as constant tensors become
 * attributes; their connectors are dropped, the others keep their
 * position. */
static void test_inputs_to_attributes(void **state) {
  (void)state;
  Model *m = model_new(13);
  add_input(m, "x", F32, "4");
  add_input(m, "hi", F32, "");
  add_output(m, "y", F32, "4");
  add_initializer(m, tensor_f32("lo", NULL, 0, (float[]){-0.5f}, 1));
  add_node(m, "Clip", "clip", "x,lo,hi", "y");
  g_autoptr(WeirGraph) g = import_built_ok(m, NULL);
  const WeirNode *n = only_library(g);
  const WeirAttr *a = weir_node_attr(n, "min");
  assert_non_null(a);
  assert_int_equal(a->type, WEIR_ATTR_FLOAT);
  assert_float_equal(a->f, -0.5, 0);
  assert_null(weir_node_attr(n, "max")); /* a runtime input */
  assert_conns(n->in_conns, "in0,in2");
  assert_memlet(g, n, "in2", TRUE, "hi", "");
  assert_null(weir_graph_container(g, "lo"));

  /* Dropout (opset 12+): ratio and training_mode are inputs. */
  m = model_new(13);
  add_input(m, "x", F32, "4");
  add_output(m, "y", F32, "4");
  add_initializer(m, tensor_f32("r", NULL, 0, (float[]){0.25f}, 1));
  add_node(m, "Dropout", "drop", "x,r", "y");
  g_autoptr(WeirGraph) d = import_built_ok(m, NULL);
  n = only_library(d);
  assert_float_equal(weir_node_attr(n, "ratio")->f, 0.25, 0);
  assert_conns(n->in_conns, "in0");

  /* A tensor that cannot give the attribute. */
  m = model_new(13);
  add_input(m, "x", F32, "4");
  add_output(m, "y", F32, "4");
  add_initializer(m, tensor_f32("lo", (gint64[]){2}, 1, (float[]){1, 2}, 2));
  add_node(m, "Clip", "clip", "x,lo", "y");
  g_autofree char *msg = import_error(m, NULL, WEIR_ERROR_INVALID);
  assert_string_equal(msg, "built.onnx: node 'clip' (Clip): input 2 'lo' "
                           "must have one element to give attribute 'min', "
                           "not 2");
}

/* An operator registered by this test whose second input must be a
 * constant (as Reshape's shape is). */
static gboolean copy_infer(WeirOpInferContext *ctx, GError **error) {
  (void)error;
  weir_op_set_output(ctx, 0, ctx->inputs[0].dtype, ctx->inputs[0].rank,
                     ctx->inputs[0].shape);
  return TRUE;
}

static const WeirOpAttrSpec test_shape_attrs[] = {
    {"shape", WEIR_ATTR_INTS, FALSE, NULL, 2, 5},
};

static const WeirOpInfo test_shape_op = {
    .name = "TestShapeOp",
    .min_inputs = 1,
    .max_inputs = 1,
    .min_outputs = 1,
    .max_outputs = 1,
    .attrs = test_shape_attrs,
    .n_attrs = G_N_ELEMENTS(test_shape_attrs),
    .infer = copy_infer,
};

static void test_constant_input_required(void **state) {
  (void)state;
  weir_op_register(&test_shape_op);
  Model *m = model_new(13);
  add_input(m, "x", F32, "4");
  add_input(m, "s", I64, "1");
  add_output(m, "y", F32, "4");
  add_node(m, "TestShapeOp", "r", "x,s", "y");
  g_autofree char *msg = import_error(m, NULL, WEIR_ERROR_UNSUPPORTED);
  assert_string_equal(msg, "built.onnx: node 'r' (TestShapeOp): input 2 "
                           "'shape' must be a constant");

  m = model_new(13);
  add_input(m, "x", F32, "4");
  add_output(m, "y", F32, "4");
  add_initializer(m, tensor_i64("s", (gint64[]){2}, 1, (gint64[]){2, 2}, 2));
  add_node(m, "TestShapeOp", "r", "x,s", "y");
  g_autoptr(WeirGraph) g = import_built_ok(m, NULL);
  const WeirAttr *a = weir_node_attr(only_library(g), "shape");
  assert_int_equal(a->type, WEIR_ATTR_INTS);
  assert_int_equal(a->ints->len, 2);
  assert_conns(only_library(g)->in_conns, "in0");
}

static void test_declared_shapes(void **state) {
  (void)state;
  Model *m = model_new(13);
  add_input(m, "x", F32, "2,3");
  add_output(m, "y", F32, "2,4");
  add_node(m, "Relu", "relu", "x", "y");
  g_autofree char *msg = import_error(m, NULL, WEIR_ERROR_INVALID);
  assert_string_equal(msg, "built.onnx: node 'relu' (Relu): output 0 'y': "
                           "inferred shape [2, 3], but the model declares "
                           "[2, 4] (dimension 1)");

  m = model_new(13);
  add_input(m, "x", F32, "2,3");
  add_output(m, "y", F32, NULL);
  add_value_info(m, "t", F32, "6");
  add_node(m, "Relu", "relu", "x", "t");
  add_node(m, "Relu", "relu2", "t", "y");
  g_autofree char *msg2 = import_error(m, NULL, WEIR_ERROR_INVALID);
  assert_string_equal(msg2, "built.onnx: node 'relu' (Relu): output 0 't': "
                            "inferred shape [2, 3], but the model declares "
                            "[6] (rank 1, not 2)");

  m = model_new(13);
  add_input(m, "x", F32, "2,3");
  add_output(m, "y", I64, NULL);
  add_node(m, "Relu", "relu", "x", "y");
  g_autofree char *msg3 = import_error(m, NULL, WEIR_ERROR_INVALID);
  assert_string_equal(msg3, "built.onnx: node 'relu' (Relu): output 0 'y': "
                            "inferred dtype f32, but the model declares i64");

  /* Symbolic and unnamed declared dimensions are not compared. */
  m = model_new(13);
  add_input(m, "x", F32, "B,3");
  add_output(m, "y", F32, "?,3");
  add_node(m, "Relu", "relu", "x", "y");
  g_autoptr(WeirGraph) g = import_built_ok(m, NULL);
  assert_shape(g, "y", "B, 3");
}

static void test_malformed_and_unsupported(void **state) {
  (void)state;
  /* An attribute of the wrong type. */
  Model *m = model_new(13);
  add_input(m, "a", F32, "2,3");
  add_input(m, "b", F32, "3,4");
  add_output(m, "y", F32, NULL);
  Onnx__NodeProto *n = add_node(m, "Gemm", "gemm", "a,b", "y");
  attr_int(n, "alpha", 2);
  g_autofree char *msg = import_error(m, NULL, WEIR_ERROR_INVALID);
  assert_contains(msg, "node 'gemm' (Gemm): attribute 'alpha' must be of "
                       "type float, not int");

  /* An attribute the operator does not have. */
  m = model_new(13);
  add_input(m, "x", F32, "2");
  add_output(m, "y", F32, NULL);
  n = add_node(m, "Relu", "relu", "x", "y");
  attr_ints(n, "bogus", (gint64[]){1}, 1);
  g_autofree char *msg2 = import_error(m, NULL, WEIR_ERROR_INVALID);
  assert_string_equal(msg2, "built.onnx: node 'relu' (Relu): unknown "
                            "attribute 'bogus'");

  /* A subgraph on an operator Weir knows. */
  m = model_new(13);
  add_input(m, "x", F32, "2");
  add_output(m, "y", F32, NULL);
  n = add_node(m, "Relu", "relu", "x", "y");
  attr_graph(n, "body");
  g_autofree char *msg3 = import_error(m, NULL, WEIR_ERROR_UNSUPPORTED);
  assert_string_equal(msg3, "built.onnx: node 'relu' (Relu): attribute "
                            "'body' is a subgraph (control flow is not "
                            "supported)");

  /* Element types Weir has no dtype for. */
  m = model_new(13);
  add_input(m, "x", ONNX__TENSOR_PROTO__DATA_TYPE__STRING, "2");
  add_output(m, "y", F32, NULL);
  add_node(m, "Relu", "relu", "x", "y");
  g_autofree char *msg4 = import_error(m, NULL, WEIR_ERROR_UNSUPPORTED);
  assert_string_equal(msg4, "built.onnx: input 'x' has element type "
                            "STRING, which Weir does not support");

  /* An input without a shape. */
  m = model_new(13);
  add_input(m, "x", F32, NULL);
  add_output(m, "y", F32, NULL);
  add_node(m, "Relu", "relu", "x", "y");
  g_autofree char *msg5 = import_error(m, NULL, WEIR_ERROR_UNSUPPORTED);
  assert_string_equal(msg5, "built.onnx: input 'x' has no shape (give one "
                            "in the import options)");

  /* Inference errors name the node. */
  m = model_new(13);
  add_input(m, "a", F32, "2,3");
  add_input(m, "b", F32, "4,5");
  add_output(m, "y", F32, NULL);
  add_node(m, "MatMul", "mm", "a,b", "y");
  g_autofree char *msg6 = import_error(m, NULL, WEIR_ERROR_INVALID);
  assert_true(g_str_has_prefix(msg6, "built.onnx: node 'mm' (MatMul): "));
}

static void test_opsets(void **state) {
  (void)state;
  Model *m = model_new(9);
  add_input(m, "x", F32, "2");
  add_output(m, "y", F32, NULL);
  add_node(m, "Relu", "relu", "x", "y");
  g_autofree char *msg = import_error(m, NULL, WEIR_ERROR_UNSUPPORTED);
  assert_string_equal(msg, "built.onnx: opset 9 is not supported (Weir "
                           "imports opsets 11 to 17)");

  m = model_new(18);
  add_input(m, "x", F32, "2");
  add_output(m, "y", F32, NULL);
  add_node(m, "Relu", "relu", "x", "y");
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  WeirOnnxImportOptions opts = {.allow_any_opset = TRUE, .warnings = warnings};
  g_autoptr(WeirGraph) g = import_built_ok(m, &opts);
  assert_int_equal(warnings->len, 1);
  assert_contains(g_ptr_array_index(warnings, 0), "opset 18 is outside");
}

/* The training operators are in domain ai.onnx.preview.training, version
 * 1, and only there. */
static Model *training_model(const char *domain, gint64 version) {
  Model *m = model_new(17);
  Onnx__OperatorSetIdProto *o = g_new0(Onnx__OperatorSetIdProto, 1);
  onnx__operator_set_id_proto__init(o);
  o->domain = g_strdup("ai.onnx.preview.training");
  o->has_version = TRUE;
  o->version = version;
  APPEND(m->opset_import, m->n_opset_import, o);
  add_input(m, "R", F32, "");
  add_input(m, "T", I64, "");
  static const char *const names[] = {"X", "G", "V", "H"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    add_input(m, names[i], F32, "2,3");
  add_output(m, "X_new", F32, "2,3");
  add_output(m, "V_new", F32, NULL);
  add_output(m, "H_new", F32, NULL);
  Onnx__NodeProto *n =
      add_node(m, "Adam", "adam", "R,T,X,G,V,H", "X_new,V_new,H_new");
  if (domain)
    n->domain = g_strdup(domain);
  attr_float(n, "beta", 0.5f);
  return m;
}

static void test_training_domain(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g =
      import_built_ok(training_model("ai.onnx.preview.training", 1), NULL);
  const WeirNode *n = only_library(g);
  assert_string_equal(n->op, "Adam");
  assert_conns(n->in_conns, "in0,in1,in2,in3,in4,in5");
  assert_conns(n->out_conns, "out0,out1,out2");
  assert_float_equal(weir_node_attr(n, "beta")->f, 0.5, 1e-7);
  assert_float_equal(weir_node_attr(n, "alpha")->f, 0.9, 1e-12);
  assert_shape(g, "H_new", "2, 3");

  /* Adam is no operator of the default domain. */
  g_autofree char *msg =
      import_error(training_model(NULL, 1), NULL, WEIR_ERROR_UNSUPPORTED);
  assert_string_equal(
      msg, "built.onnx: 1 unsupported operator: Adam (1 node: adam)");
  g_autofree char *other = import_error(training_model("com.example", 1), NULL,
                                        WEIR_ERROR_UNSUPPORTED);
  assert_contains(other, "com.example.Adam (1 node: adam)");

  /* Only version 1 of the training domain exists. */
  g_autofree char *version =
      import_error(training_model("ai.onnx.preview.training", 2), NULL,
                   WEIR_ERROR_UNSUPPORTED);
  assert_string_equal(version, "built.onnx: node 'adam' (Adam): opset 2 of "
                               "domain ai.onnx.preview.training is not "
                               "supported (Weir imports version 1)");
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  WeirOnnxImportOptions opts = {.allow_any_opset = TRUE, .warnings = warnings};
  g_autoptr(WeirGraph) any =
      import_built_ok(training_model("ai.onnx.preview.training", 2), &opts);
  assert_int_equal(warnings->len, 1);
  assert_contains(g_ptr_array_index(warnings, 0),
                  "domain ai.onnx.preview.training: opset 2");

  /* BatchNormalization in training mode gives the running statistics. */
  NEED_DATA(bn, "node/test_batchnorm_example_training_mode/model.onnx");
  g_autoptr(WeirGraph) b = import_ok(bn, NULL);
  const WeirNode *bn_node = only_library(b);
  assert_int_equal(weir_node_attr(bn_node, "training_mode")->i, 1);
  assert_conns(bn_node->out_conns, "out0,out1,out2");
  assert_shape(b, "output_mean", "3");
  assert_shape(b, "output_var", "3");
}

static void assert_ints_attr(const WeirNode *n, const char *name,
                             const gint64 *want, guint count) {
  const WeirAttr *a = weir_node_attr(n, name);
  if (!a)
    fail_msg("node '%s' has no attribute '%s'", n->label, name);
  assert_int_equal(a->type, WEIR_ATTR_INTS);
  assert_int_equal(a->ints->len, count);
  for (guint i = 0; i < count; i++)
    assert_int_equal(g_array_index(a->ints, gint64, i), want[i]);
}

/* A Reshape chain with Constant shapes (PyTorch's PixelShuffle): the
 * constants become attributes and leave no containers. */
static void test_reshape_chain(void **state) {
  (void)state;
  NEED_DATA(path, "pytorch-converted/test_PixelShuffle/model.onnx");
  g_autoptr(WeirGraph) g = import_old_opset(path);
  const WeirState *s = g_ptr_array_index(g->states, 0);
  guint reshapes = 0;
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind != WEIR_NODE_LIBRARY || strcmp(n->op, "Reshape") != 0)
      continue;
    assert_conns(n->in_conns, "in0");
    assert_non_null(weir_node_attr(n, "shape"));
    reshapes++;
  }
  assert_int_equal(reshapes, 2);
  for (guint i = 0; i < g->containers->len; i++)
    assert_null(
        ((const WeirContainer *)g_ptr_array_index(g->containers, i))->initial);
  assert_shape(g, "v5", "1, 1, 12, 12");

  /* The ONNX node tests give Reshape's shape as a graph input: Weir needs
   * it as a constant. */
  NEED_DATA(node, "node/test_reshape_reordered_all_dims/model.onnx");
  g_autoptr(GError) error = NULL;
  assert_null(weir_onnx_import(node, NULL, &error));
  assert_int_equal(error->code, WEIR_ERROR_UNSUPPORTED);
  assert_contains(error->message,
                  "node 'Reshape_0' (Reshape): input 2 'shape' must be a "
                  "constant");
  /* ... which the options can give. */
  gint64 dims[] = {3};
  g_autoptr(WeirTensor) shape = weir_tensor_new(WEIR_DTYPE_I64, 1, dims);
  gint64 *v = shape->data;
  v[0] = 4;
  v[1] = 2;
  v[2] = 3;
  g_autoptr(GHashTable) values = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(values, "shape", shape);
  WeirOnnxImportOptions opts = {.input_values = values};
  g_autoptr(WeirGraph) r = import_ok(node, &opts);
  assert_ints_attr(only_library(r), "shape", (gint64[]){4, 2, 3}, 3);
  assert_null(weir_graph_container(r, "shape"));
  assert_shape(r, "reshaped", "4, 2, 3");
}

/* Shape -> Gather -> Unsqueeze -> Concat -> Reshape with a symbolic batch:
 * the target shape is known symbolically, so the Reshape needs no shape
 * input; with the batch bound it is a plain constant attribute. */
static Model *reshape_chain_model(void) {
  Model *m = model_new(13);
  add_input(m, "x", F32, "N,3,4");
  add_output(m, "y", F32, NULL);
  add_initializer(m, tensor_i64("zero", NULL, 0, (gint64[]){0}, 1));
  add_initializer(m, tensor_i64("axes", (gint64[]){1}, 1, (gint64[]){0}, 1));
  add_initializer(m, tensor_i64("twelve", (gint64[]){1}, 1, (gint64[]){12}, 1));
  add_node(m, "Shape", "shape", "x", "s");
  Onnx__NodeProto *n = add_node(m, "Gather", "gather", "s,zero", "batch");
  attr_int(n, "axis", 0);
  add_node(m, "Unsqueeze", "unsqueeze", "batch,axes", "b1");
  n = add_node(m, "Concat", "concat", "b1,twelve", "target");
  attr_int(n, "axis", 0);
  add_node(m, "Reshape", "reshape", "x,target", "y");
  return m;
}

static const WeirNode *node_with_op(const WeirGraph *g, const char *op) {
  const WeirState *s = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY && strcmp(n->op, op) == 0)
      return n;
  }
  fail_msg("no %s node", op);
  return NULL;
}

static void test_symbolic_reshape_chain(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = import_built_ok(reshape_chain_model(), NULL);
  assert_shape(g, "y", "N, 12");
  const WeirNode *r = node_with_op(g, "Reshape");
  assert_conns(r->in_conns, "in0");
  assert_null(weir_node_attr(r, "shape"));
  /* The Unsqueeze axes became an attribute. */
  assert_ints_attr(node_with_op(g, "Unsqueeze"), "axes", (gint64[]){0}, 1);

  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "N", 5);
  WeirOnnxImportOptions opts = {.symbols = b};
  g_autoptr(WeirGraph) c = import_built_ok(reshape_chain_model(), &opts);
  assert_shape(c, "y", "5, 12");
  assert_ints_attr(node_with_op(c, "Reshape"), "shape", (gint64[]){5, 12}, 2);
}

/* PyTorch's x.expand(batch, -1, -1): Shape -> Gather -> Unsqueeze ->
 * Concat with -1s, then Where(Equal(shape, -1), 1, shape) -> Expand.  The
 * shape is known at import (Equal of a size with -1 is false), so Expand
 * needs no shape input. */
static Model *expand_chain_model(void) {
  Model *m = model_new(13);
  add_input(m, "x", F32, "B,4");
  add_output(m, "y", F32, NULL);
  add_initializer(
      m, tensor_f32("cls", (gint64[]){1, 1, 4}, 3, (float[]){1, 2, 3, 4}, 4));
  add_initializer(m, tensor_i64("zero", NULL, 0, (gint64[]){0}, 1));
  add_initializer(m, tensor_i64("axes", (gint64[]){1}, 1, (gint64[]){0}, 1));
  add_initializer(m,
                  tensor_i64("rest", (gint64[]){2}, 1, (gint64[]){-1, -1}, 2));
  add_initializer(m, tensor_i64("minus1", NULL, 0, (gint64[]){-1}, 1));
  add_initializer(m,
                  tensor_i64("ones", (gint64[]){3}, 1, (gint64[]){1, 1, 1}, 3));
  add_node(m, "Shape", "shape", "x", "s");
  Onnx__NodeProto *n = add_node(m, "Gather", "gather", "s,zero", "batch");
  attr_int(n, "axis", 0);
  add_node(m, "Unsqueeze", "unsqueeze", "batch,axes", "b1");
  n = add_node(m, "Concat", "concat", "b1,rest", "wanted");
  attr_int(n, "axis", 0);
  add_node(m, "Equal", "equal", "wanted,minus1", "is_keep");
  add_node(m, "Where", "where", "is_keep,ones,wanted", "target");
  add_node(m, "Expand", "expand", "cls,target", "y");
  return m;
}

static void test_expand_shape_folding(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = import_built_ok(expand_chain_model(), NULL);
  assert_shape(g, "y", "B, 1, 4");
  assert_conns(node_with_op(g, "Expand")->in_conns, "in0");

  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "B", 3);
  WeirOnnxImportOptions opts = {.symbols = b};
  g_autoptr(WeirGraph) c = import_built_ok(expand_chain_model(), &opts);
  assert_shape(c, "y", "3, 1, 4");
  const WeirNode *e = node_with_op(c, "Expand");
  assert_conns(e->in_conns, "in0");
  assert_ints_attr(e, "shape", (gint64[]){3, 1, 1}, 3);
}

/* torchvision's Swin pads by amounts computed with Mod from the input's
 * size, reordered by Reshape -> Slice (step -1) -> Transpose -> Reshape:
 * the pads are known at import. */
static void test_pad_shape_folding(void **state) {
  (void)state;
  Model *m = model_new(13);
  add_input(m, "x", F32, "1,5,3");
  add_output(m, "y", F32, NULL);
  add_initializer(m, tensor_i64("two", NULL, 0, (gint64[]){2}, 1));
  add_initializer(m, tensor_i64("seven", NULL, 0, (gint64[]){7}, 1));
  add_initializer(m, tensor_i64("axes", (gint64[]){1}, 1, (gint64[]){0}, 1));
  add_initializer(m, tensor_i64("zero1", (gint64[]){1}, 1, (gint64[]){0}, 1));
  add_initializer(
      m, tensor_i64("zeros4", (gint64[]){4}, 1, (gint64[]){0, 0, 0, 0}, 4));
  add_initializer(m,
                  tensor_i64("pairs", (gint64[]){2}, 1, (gint64[]){-1, 2}, 2));
  add_initializer(m, tensor_i64("flat", (gint64[]){1}, 1, (gint64[]){-1}, 1));
  add_initializer(m, tensor_i64("st", (gint64[]){1}, 1, (gint64[]){-1}, 1));
  add_initializer(
      m, tensor_i64("en", (gint64[]){1}, 1, (gint64[]){G_MININT64 + 1}, 1));
  add_initializer(m, tensor_i64("ax0", (gint64[]){1}, 1, (gint64[]){0}, 1));
  add_initializer(m, tensor_i64("step", (gint64[]){1}, 1, (gint64[]){-1}, 1));
  add_node(m, "Shape", "shape", "x", "s");
  Onnx__NodeProto *n = add_node(m, "Gather", "gather", "s,two", "w");
  attr_int(n, "axis", 0);
  add_node(m, "Mod", "mod1", "w,seven", "wm");      /* 3 */
  add_node(m, "Sub", "sub", "seven,wm", "left");    /* 4 */
  add_node(m, "Mod", "mod2", "left,seven", "padw"); /* 4 */
  add_node(m, "Unsqueeze", "unsqueeze", "padw,axes", "padw1");
  n = add_node(m, "Concat", "concat1", "zero1,padw1", "wpair"); /* [0, 4] */
  attr_int(n, "axis", 0);
  n = add_node(m, "Concat", "concat2", "wpair,zeros4", "torch_order");
  attr_int(n, "axis", 0);
  add_node(m, "Reshape", "reshape1", "torch_order,pairs", "p2");
  add_node(m, "Slice", "slice", "p2,st,en,ax0,step", "rev");
  add_node(m, "Transpose", "transpose", "rev", "tr");
  add_node(m, "Reshape", "reshape2", "tr,flat", "pads");
  add_node(m, "Pad", "pad", "x,pads", "y");
  g_autoptr(WeirGraph) g = import_built_ok(m, NULL);
  assert_shape(g, "y", "1, 5, 7");
  const WeirNode *p = node_with_op(g, "Pad");
  assert_conns(p->in_conns, "in0");
  assert_ints_attr(p, "pads", (gint64[]){0, 0, 0, 0, 0, 4}, 6);
}

/* Softmax changed meaning in opset 13; older models get legacy_2d. */
static void test_softmax_opsets(void **state) {
  (void)state;
  NEED_DATA(old, "pytorch-converted/test_Softmax/model.onnx");
  g_autoptr(WeirGraph) g = import_old_opset(old);
  const WeirNode *n = only_library(g);
  assert_int_equal(weir_node_attr(n, "legacy_2d")->i, 1);
  assert_non_null(weir_node_attr(n, "axis"));

  NEED_DATA(new, "node/test_softmax_axis_0/model.onnx");
  g_autoptr(WeirGraph) h = import_ok(new, NULL);
  n = only_library(h);
  assert_int_equal(weir_node_attr(n, "legacy_2d")->i, 0);
  assert_int_equal(weir_node_attr(n, "axis")->i, 0);

  /* Opset 11 without an axis: the old default, 1. */
  Model *m = model_new(11);
  add_input(m, "x", F32, "2,3,4");
  add_output(m, "y", F32, NULL);
  add_node(m, "LogSoftmax", "ls", "x", "y");
  g_autoptr(WeirGraph) k = import_built_ok(m, NULL);
  n = only_library(k);
  assert_int_equal(weir_node_attr(n, "legacy_2d")->i, 1);
  assert_int_equal(weir_node_attr(n, "axis")->i, 1);
}

/* Models with random bytes changed: each either imports into a valid
 * program or fails with a message naming the file (and, under
 * AddressSanitizer, without leaking on any of those error paths). */
static void test_corrupted_models(void **state) {
  (void)state;
  g_autofree char *samples =
      g_build_filename(WEIR_SRCDIR, "samples", "models", NULL);
  const char *models[] = {"transformer.onnx", "lenet.onnx",
                          "node/test_conv_with_strides_padding/model.onnx",
                          "node/test_gemm_all_attributes/model.onnx",
                          "pytorch-converted/test_PixelShuffle/model.onnx"};
  for (guint m = 0; m < G_N_ELEMENTS(models); m++) {
    g_autofree char *path = g_str_has_suffix(models[m], "/model.onnx")
                                ? data_path(models[m])
                                : g_build_filename(samples, models[m], NULL);
    if (!path)
      continue;
    g_autofree char *orig = NULL;
    gsize len = 0;
    assert_true(g_file_get_contents(path, &orig, &len, NULL));
    g_autofree guint8 *data = g_malloc(len);
    g_autoptr(GRand) rand = g_rand_new_with_seed(77 + m);
    guint imported = 0, failed = 0;
    WeirOnnxImportOptions opts = {.allow_any_opset = TRUE};
    for (guint round = 0; round < 300; round++) {
      memcpy(data, orig, len);
      for (guint f = 0; f < 1 + round % 3; f++)
        data[g_rand_int_range(rand, 0, (gint32)len)] ^=
            (guint8)g_rand_int_range(rand, 1, 256);
      GError *error = NULL;
      WeirOnnxModel *model =
          weir_onnx_model_load_from_data(data, len, "fuzz.onnx", &error);
      WeirGraph *g =
          model ? weir_onnx_import_model(model, &opts, &error) : NULL;
      assert_true((g == NULL) == (error != NULL));
      if (g) {
        imported++;
        assert_true(weir_graph_validate(g, NULL));
      } else {
        failed++;
        assert_true(g_str_has_prefix(error->message, "fuzz.onnx: "));
      }
      g_clear_error(&error);
      weir_graph_free(g);
      weir_onnx_model_free(model);
    }
    assert_true(imported > 0);
    assert_true(failed > 0);
  }
}

/* Every model of the ONNX node tests either imports into a valid program
 * or fails with a message that starts with its file name. */
static void test_all_node_models(void **state) {
  (void)state;
  NEED_DATA(dir, "node");
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  const char *name;
  guint ok = 0, failed = 0;
  while ((name = g_dir_read_name(d))) {
    g_autofree char *path = g_build_filename(dir, name, "model.onnx", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirGraph) g = weir_onnx_import(path, NULL, &error);
    if (g) {
      ok++;
      continue;
    }
    failed++;
    assert_true(g_str_has_prefix(error->message, path));
    assert_true(error->code == WEIR_ERROR_UNSUPPORTED ||
                error->code == WEIR_ERROR_INVALID);
  }
  assert_true(ok > 100);
  print_message("%u node test models import, %u do not\n", ok, failed);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_add_model),
      cmocka_unit_test(test_conv_models),
      cmocka_unit_test(test_gemm_attributes),
      cmocka_unit_test(test_symbolic_batch),
      cmocka_unit_test(test_json_round_trip),
      cmocka_unit_test(test_constant_output),
      cmocka_unit_test(test_unsupported_real_model),
      cmocka_unit_test(test_symbol_names),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_unsupported_listing),
      cmocka_unit_test(test_constants),
      cmocka_unit_test(test_inputs_to_attributes),
      cmocka_unit_test(test_constant_input_required),
      cmocka_unit_test(test_declared_shapes),
      cmocka_unit_test(test_malformed_and_unsupported),
      cmocka_unit_test(test_opsets),
      cmocka_unit_test(test_training_domain),
      cmocka_unit_test(test_reshape_chain),
      cmocka_unit_test(test_symbolic_reshape_chain),
      cmocka_unit_test(test_expand_shape_folding),
      cmocka_unit_test(test_pad_shape_folding),
      cmocka_unit_test(test_softmax_opsets),
      cmocka_unit_test(test_corrupted_models),
      cmocka_unit_test(test_all_node_models),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
