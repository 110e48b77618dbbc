/* test-import-scaling.c — import, validation, analysis and JSON of large
 * generated ONNX models (issue 17: linear time in the number of nodes).
 *
 * The models are built in memory at test time: a chain of 100,000 Relu
 * nodes, a chain of 20,000 Add nodes that all read one constant (an access
 * node with 20,000 memlets), and 10,000 parallel Relu branches summed by a
 * tree of Add nodes.  Nothing is timed here: the guard is the test's meson
 * timeout (tests/meson.build).  The quadratic code this replaced needed
 * minutes for the 100,000-node chain (its validator scanned every memlet
 * per node, its peak-memory sweep kept one live set per position and
 * compared all pairs); the linear code takes seconds, even under the
 * sanitizers, so a return of the quadratic behaviour fails by timeout.
 *
 * The figures checked (node counts, bytes moved, FLOPs, peak transient
 * memory and its live set) are those the code before the change gave on
 * the same models (`weir info` on tests/bench/gen-chain-onnx.py's output). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <string.h>

#include "onnx.pb-c.h"
#include "weir-analysis.h"
#include "weir-import.h"
#include "weir-json.h"
#include "weir-validate.h"

#define APPEND(arr, n, item)                                                   \
  do {                                                                         \
    (arr) = g_renew(__typeof__(*(arr)), (arr), (n) + 1);                       \
    (arr)[(n)++] = (item);                                                     \
  } while (0)

/* A float tensor value info of shape [1, 16]. */
static Onnx__ValueInfoProto *tensor_info(const char *name) {
  Onnx__ValueInfoProto *v = g_new0(Onnx__ValueInfoProto, 1);
  onnx__value_info_proto__init(v);
  v->name = g_strdup(name);
  v->type = g_new0(Onnx__TypeProto, 1);
  onnx__type_proto__init(v->type);
  v->type->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
  Onnx__TypeProto__Tensor *t = g_new0(Onnx__TypeProto__Tensor, 1);
  onnx__type_proto__tensor__init(t);
  t->has_elem_type = TRUE;
  t->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
  t->shape = g_new0(Onnx__TensorShapeProto, 1);
  onnx__tensor_shape_proto__init(t->shape);
  const gint64 dims[2] = {1, 16};
  for (guint i = 0; i < 2; i++) {
    Onnx__TensorShapeProto__Dimension *d =
        g_new0(Onnx__TensorShapeProto__Dimension, 1);
    onnx__tensor_shape_proto__dimension__init(d);
    d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
    d->dim_value = dims[i];
    APPEND(t->shape->dim, t->shape->n_dim, d);
  }
  v->type->tensor_type = t;
  return v;
}

static void add_node(Onnx__GraphProto *g, const char *op, const char *in0,
                     const char *in1, const char *out) {
  Onnx__NodeProto *n = g_new0(Onnx__NodeProto, 1);
  onnx__node_proto__init(n);
  n->op_type = g_strdup(op);
  n->name = g_strdup(out);
  APPEND(n->input, n->n_input, g_strdup(in0));
  if (in1)
    APPEND(n->input, n->n_input, g_strdup(in1));
  APPEND(n->output, n->n_output, g_strdup(out));
  APPEND(g->node, g->n_node, n);
}

typedef enum { CHAIN_RELU, CHAIN_ADD, WIDE } Kind;

/* The model as bytes (the shapes of tests/bench/gen-chain-onnx.py). */
static GBytes *build_model(Kind kind, guint n) {
  Onnx__ModelProto *m = g_new0(Onnx__ModelProto, 1);
  onnx__model_proto__init(m);
  m->has_ir_version = TRUE;
  m->ir_version = 8;
  Onnx__OperatorSetIdProto *o = g_new0(Onnx__OperatorSetIdProto, 1);
  onnx__operator_set_id_proto__init(o);
  o->has_version = TRUE;
  o->version = 13;
  APPEND(m->opset_import, m->n_opset_import, o);
  Onnx__GraphProto *g = g_new0(Onnx__GraphProto, 1);
  onnx__graph_proto__init(g);
  g->name = g_strdup("scaling");
  m->graph = g;
  APPEND(g->input, g->n_input, tensor_info("x"));
  char *last = g_strdup("x");
  if (kind == CHAIN_ADD) {
    Onnx__TensorProto *c = g_new0(Onnx__TensorProto, 1);
    onnx__tensor_proto__init(c);
    c->name = g_strdup("c");
    c->has_data_type = TRUE;
    c->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    APPEND(c->dims, c->n_dims, 16);
    for (guint i = 0; i < 16; i++)
      APPEND(c->float_data, c->n_float_data, 0.5f);
    APPEND(g->initializer, g->n_initializer, c);
  }
  if (kind == WIDE) {
    GPtrArray *level = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < n; i++) {
      char *b = g_strdup_printf("b%u", i);
      add_node(g, "Relu", "x", NULL, b);
      g_ptr_array_add(level, b);
    }
    for (guint k = 0; level->len > 1;) {
      GPtrArray *next = g_ptr_array_new_with_free_func(g_free);
      for (guint j = 0; j + 1 < level->len; j += 2) {
        char *s = g_strdup_printf("s%u", k++);
        add_node(g, "Add", g_ptr_array_index(level, j),
                 g_ptr_array_index(level, j + 1), s);
        g_ptr_array_add(next, s);
      }
      if (level->len % 2)
        g_ptr_array_add(next,
                        g_strdup(g_ptr_array_index(level, level->len - 1)));
      g_ptr_array_unref(level);
      level = next;
    }
    g_free(last);
    last = g_strdup(g_ptr_array_index(level, 0));
    g_ptr_array_unref(level);
  } else {
    for (guint i = 0; i < n; i++) {
      char *t = g_strdup_printf("t%u", i);
      add_node(g, kind == CHAIN_ADD ? "Add" : "Relu", last,
               kind == CHAIN_ADD ? "c" : NULL, t);
      g_free(last);
      last = t;
    }
  }
  APPEND(g->output, g->n_output, tensor_info(last));
  g_free(last);
  gsize len = onnx__model_proto__get_packed_size(m);
  guint8 *buf = g_malloc(len);
  onnx__model_proto__pack(m, buf);
  onnx__model_proto__free_unpacked(m, NULL);
  return g_bytes_new_take(buf, len);
}

/* Imports (which validates), checks again, analyses and round-trips the
 * model through JSON; returns the analysis. */
static WeirAnalysis *import_and_analyse(Kind kind, guint n,
                                        WeirGraph **graph_out) {
  g_autoptr(GBytes) bytes = build_model(kind, n);
  g_autoptr(GError) error = NULL;
  gsize len;
  const guint8 *data = g_bytes_get_data(bytes, &len);
  g_autoptr(WeirOnnxModel) model =
      weir_onnx_model_load_from_data(data, len, "scaling.onnx", &error);
  assert_non_null(model);
  WeirGraph *g = weir_onnx_import_model(model, NULL, &error);
  if (!g)
    fail_msg("import: %s", error->message);
  g_autoptr(GPtrArray) problems = weir_graph_check(g);
  assert_int_equal(problems->len, 0);
  WeirAnalysis *a = weir_analysis_compute(g, NULL, &error);
  if (!a)
    fail_msg("analysis: %s", error->message);
  /* JSON: written, read back and written again, byte for byte. */
  g_autofree char *json = weir_graph_to_json(g);
  g_autoptr(WeirGraph) back =
      weir_graph_from_json(json, -1, "scaling.json", &error);
  if (!back)
    fail_msg("JSON: %s", error->message);
  g_autofree char *json2 = weir_graph_to_json(back);
  assert_string_equal(json, json2);
  *graph_out = g;
  return a;
}

static void assert_live(const WeirAnalysis *a, const char *const *names) {
  guint n = g_strv_length((char **)names);
  assert_int_equal(a->peak_live->len, n);
  for (guint i = 0; i < n; i++)
    assert_string_equal(g_ptr_array_index(a->peak_live, i), names[i]);
}

/* 100,000 Relu: 100,001 access nodes, 200,000 memlets of 64 B; one FLOP
 * per element; two [1, 16] f32 transients live at once. */
static void test_relu_chain(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = NULL;
  g_autoptr(WeirAnalysis) a = import_and_analyse(CHAIN_RELU, 100000, &g);
  assert_int_equal(g->containers->len, 100001);
  assert_int_equal(a->node_counts[WEIR_NODE_ACCESS], 100001);
  assert_int_equal(a->node_counts[WEIR_NODE_LIBRARY], 100000);
  assert_true(a->total_bytes.known && a->total_flops.known);
  assert_int_equal(a->total_bytes.value, 100000 * 128);
  assert_int_equal(a->total_flops.value, 100000 * 16);
  assert_true(a->peak_transient_bytes.known);
  assert_int_equal(a->peak_transient_bytes.value, 128);
  assert_live(a, (const char *const[]){"t0", "t1", NULL});
}

/* 20,000 Add reading one constant c (the access node of c has 20,000
 * outgoing memlets): c and two transients at the peak. */
static void test_add_chain(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = NULL;
  g_autoptr(WeirAnalysis) a = import_and_analyse(CHAIN_ADD, 20000, &g);
  assert_int_equal(a->node_counts[WEIR_NODE_ACCESS], 20002);
  assert_int_equal(a->node_counts[WEIR_NODE_LIBRARY], 20000);
  assert_int_equal(a->total_bytes.value, 20000 * 192);
  assert_int_equal(a->total_flops.value, 20000 * 16);
  assert_int_equal(a->peak_transient_bytes.value, 192);
  assert_live(a, (const char *const[]){"c", "t0", "t1", NULL});
}

/* 10,000 branches from x summed pairwise: every branch is live when the
 * first Add runs (b0 .. b9999 and its result s0). */
static void test_wide(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = NULL;
  g_autoptr(WeirAnalysis) a = import_and_analyse(WIDE, 10000, &g);
  assert_int_equal(a->node_counts[WEIR_NODE_LIBRARY], 19999);
  assert_int_equal(a->peak_transient_bytes.value, 10001 * 64);
  assert_int_equal(a->peak_live->len, 10001);
  assert_string_equal(g_ptr_array_index(a->peak_live, 0), "b0");
  assert_string_equal(g_ptr_array_index(a->peak_live, 10000), "s0");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_relu_chain),
      cmocka_unit_test(test_add_chain),
      cmocka_unit_test(test_wide),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
