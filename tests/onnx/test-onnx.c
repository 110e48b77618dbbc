/* test-onnx.c — the ONNX reading layer: models from the ONNX test data
 * (libonnx-testdata), their tensors, and models made invalid on purpose by
 * editing a real one through the generated protobuf-c code.
 *
 * Tests that need the test data skip when it is not installed
 * (WEIR_ONNX_TESTDATA overrides its location). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "onnx.pb-c.h"
#include "weir-onnx.h"
#include "weir-tensor-io.h"

#define assert_error(err, dom, c)                                              \
  do {                                                                         \
    assert_non_null(err);                                                      \
    assert_int_equal((err)->domain, (dom));                                    \
    assert_int_equal((err)->code, (c));                                        \
  } while (0)

static const char *data_dir(void) {
  const char *env = g_getenv("WEIR_ONNX_TESTDATA");
  return env ? env : "/usr/share/libonnx-testdata/data";
}

/* path of a file under the test data, or NULL (and the test skips) */
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

static WeirOnnxModel *load_ok(const char *path) {
  g_autoptr(GError) error = NULL;
  WeirOnnxModel *m = weir_onnx_model_load(path, &error);
  if (!m)
    fail_msg("%s", error->message);
  return m;
}

static void assert_ints(const gint64 *got, gsize n, const gint64 *want,
                        gsize n_want) {
  assert_int_equal(n, n_want);
  for (gsize k = 0; k < n; k++)
    assert_int_equal(got[k], want[k]);
}

static void assert_concrete_shape(const WeirOnnxValueInfo *vi,
                                  const gint64 *want, guint rank) {
  assert_int_equal(vi->kind, WEIR_ONNX_VALUE_TENSOR);
  assert_true(vi->has_shape);
  assert_int_equal(vi->rank, rank);
  for (guint k = 0; k < rank; k++) {
    assert_null(vi->dims[k].param);
    assert_int_equal(vi->dims[k].value, want[k]);
  }
}

/* ---- reading real models -------------------------------------------- */

static void test_conv_model(void **state) {
  (void)state;
  NEED_DATA(path, "node/test_conv_with_strides_padding/model.onnx");
  g_autoptr(WeirOnnxModel) m = load_ok(path);
  assert_string_equal(weir_onnx_model_source(m), path);
  assert_int_equal(weir_onnx_model_ir_version(m), 6);
  assert_string_equal(weir_onnx_model_producer(m), "backend-test");
  assert_int_equal(weir_onnx_model_opset(m, ""), 11);
  assert_int_equal(weir_onnx_model_opset(m, "ai.onnx"), 11);
  assert_int_equal(weir_onnx_model_opset(m, NULL), 11);
  assert_int_equal(weir_onnx_model_opset(m, "ai.onnx.ml"), 0);

  const WeirOnnxGraph *g = weir_onnx_model_graph(m);
  assert_string_equal(g->name, "test_conv_with_strides_padding");
  assert_null(g->parent);
  assert_int_equal(g->n_inputs, 2);
  assert_string_equal(g->inputs[0].name, "x");
  assert_true(g->inputs[0].dtype_ok);
  assert_int_equal(g->inputs[0].dtype, WEIR_DTYPE_F32);
  assert_concrete_shape(&g->inputs[0], (gint64[]){1, 1, 7, 5}, 4);
  assert_concrete_shape(&g->inputs[1], (gint64[]){1, 1, 3, 3}, 4);
  assert_true(weir_onnx_graph_is_real_input(g, "x"));
  assert_true(weir_onnx_graph_is_real_input(g, "W"));
  assert_false(weir_onnx_graph_is_real_input(g, "y"));
  assert_int_equal(g->n_outputs, 1);
  assert_concrete_shape(&g->outputs[0], (gint64[]){1, 1, 4, 3}, 4);
  assert_ptr_equal(weir_onnx_graph_value_info(g, "y"), &g->outputs[0]);

  assert_int_equal(g->n_nodes, 1);
  const WeirOnnxNode *n = &g->nodes[0];
  assert_string_equal(n->op_type, "Conv");
  assert_string_equal(n->name, "Conv_0"); /* generated: the file has none */
  assert_string_equal(n->domain, "");
  assert_ptr_equal(n->graph, g);
  assert_int_equal(n->n_inputs, 2);
  assert_string_equal(n->inputs[0], "x");
  assert_string_equal(n->inputs[1], "W");
  assert_string_equal(n->outputs[0], "y");
  assert_ptr_equal(weir_onnx_graph_producer(g, "y"), n);
  assert_null(weir_onnx_graph_producer(g, "x"));

  const gint64 *ints;
  gsize len;
  g_autoptr(GError) error = NULL;
  assert_true(weir_onnx_node_attr_ints(n, "strides", &ints, &len, &error));
  assert_ints(ints, len, (gint64[]){2, 2}, 2);
  assert_true(weir_onnx_node_attr_ints(n, "pads", &ints, &len, &error));
  assert_ints(ints, len, (gint64[]){1, 1, 1, 1}, 4);
  assert_true(weir_onnx_node_attr_ints(n, "dilations", &ints, &len, &error));
  assert_null(ints);
  assert_int_equal(len, 0);
  gint64 group;
  assert_true(weir_onnx_node_attr_int(n, "group", 1, &group, &error));
  assert_int_equal(group, 1);
  /* wrong type: an error naming file, node and attribute */
  gint64 i;
  assert_false(weir_onnx_node_attr_int(n, "strides", 0, &i, &error));
  assert_non_null(strstr(error->message, "node 'Conv_0' (Conv)"));
  assert_non_null(strstr(error->message, "'strides' should be of type int"));
  assert_non_null(strstr(error->message, path));
}

static void test_gemm_float_and_int_attributes(void **state) {
  (void)state;
  NEED_DATA(path, "node/test_gemm_all_attributes/model.onnx");
  g_autoptr(WeirOnnxModel) m = load_ok(path);
  const WeirOnnxNode *n = &weir_onnx_model_graph(m)->nodes[0];
  assert_string_equal(n->op_type, "Gemm");
  g_autoptr(GError) error = NULL;
  float alpha, beta;
  gint64 ta, tb;
  assert_true(weir_onnx_node_attr_float(n, "alpha", 1.0f, &alpha, &error));
  assert_true(weir_onnx_node_attr_float(n, "beta", 1.0f, &beta, &error));
  assert_true(weir_onnx_node_attr_int(n, "transA", 0, &ta, &error));
  assert_true(weir_onnx_node_attr_int(n, "transB", 0, &tb, &error));
  assert_float_equal(alpha, 0.25, 1e-7);
  assert_float_equal(beta, 0.35, 1e-7);
  assert_int_equal(ta, 1);
  assert_int_equal(tb, 1);
  const WeirOnnxAttr *a = weir_onnx_node_attr(n, "alpha");
  assert_non_null(a);
  assert_int_equal(a->type, WEIR_ONNX_ATTR_FLOAT);
  assert_null(weir_onnx_node_attr(n, "gamma"));
}

static void test_string_attribute(void **state) {
  (void)state;
  NEED_DATA(path, "node/test_conv_with_autopad_same/model.onnx");
  g_autoptr(WeirOnnxModel) m = load_ok(path);
  const WeirOnnxNode *n = &weir_onnx_model_graph(m)->nodes[0];
  const char *pad;
  g_autoptr(GError) error = NULL;
  assert_true(
      weir_onnx_node_attr_string(n, "auto_pad", "NOTSET", &pad, &error));
  assert_string_equal(pad, "SAME_LOWER");
  assert_true(weir_onnx_node_attr_string(n, "missing", "NOTSET", &pad, &error));
  assert_string_equal(pad, "NOTSET");
}

static void test_omitted_optional_input(void **state) {
  (void)state;
  NEED_DATA(path, "node/test_clip_default_max/model.onnx");
  g_autoptr(WeirOnnxModel) m = load_ok(path);
  const WeirOnnxNode *n = &weir_onnx_model_graph(m)->nodes[0];
  assert_string_equal(n->op_type, "Clip");
  assert_int_equal(n->n_inputs, 3);
  assert_string_equal(n->inputs[1], "");
  assert_null(weir_onnx_node_input(n, 1));
  assert_string_equal(weir_onnx_node_input(n, 2), "max");
  assert_null(weir_onnx_node_input(n, 3));
  assert_int_equal(weir_onnx_node_n_present_inputs(n), 3);
}

static void test_subgraphs(void **state) {
  (void)state;
  NEED_DATA(path, "node/test_loop11/model.onnx");
  g_autoptr(WeirOnnxModel) m = load_ok(path);
  const WeirOnnxGraph *g = weir_onnx_model_graph(m);
  const WeirOnnxNode *loop = &g->nodes[0];
  assert_string_equal(loop->op_type, "Loop");
  const WeirOnnxAttr *body = weir_onnx_node_attr(loop, "body");
  assert_non_null(body);
  assert_int_equal(body->type, WEIR_ONNX_ATTR_GRAPH);
  const WeirOnnxGraph *b = body->g;
  assert_string_equal(b->name, "loop_body");
  assert_ptr_equal(b->parent, g);
  assert_ptr_equal(b->owner, loop);
  assert_int_equal(b->n_inputs, 3);
  assert_int_equal(b->n_outputs, 3);
  assert_int_equal(b->n_nodes, 9);
  /* a Constant in the body, with a tensor attribute decoded on request */
  const WeirOnnxNode *c = &b->nodes[1];
  assert_string_equal(c->op_type, "Constant");
  assert_ptr_equal(c->graph, b);
  const WeirOnnxAttr *value = weir_onnx_node_attr(c, "value");
  assert_int_equal(value->type, WEIR_ONNX_ATTR_TENSOR);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTensor) x = weir_onnx_tensor_decode(value->t, "x", &error);
  assert_non_null(x);
  assert_int_equal(x->dtype, WEIR_DTYPE_F32);
  assert_int_equal(x->rank, 1);
  assert_int_equal(x->shape[0], 5);
  for (gint64 k = 0; k < 5; k++)
    assert_float_equal(weir_tensor_get(x, k), (double)(k + 1), 0);

  NEED_DATA(if_path, "node/test_if/model.onnx");
  g_autoptr(WeirOnnxModel) mi = load_ok(if_path);
  const WeirOnnxNode *n = &weir_onnx_model_graph(mi)->nodes[0];
  assert_string_equal(weir_onnx_node_attr(n, "then_branch")->g->name,
                      "then_body");
  assert_string_equal(weir_onnx_node_attr(n, "else_branch")->g->name,
                      "else_body");
  assert_int_equal(weir_onnx_model_graph(mi)->inputs[0].dtype, WEIR_DTYPE_BOOL);
  assert_int_equal(weir_onnx_model_graph(mi)->inputs[0].rank, 0);
}

static void test_initializers_and_unknown_dims(void **state) {
  (void)state;
  NEED_DATA(path, "simple/test_sequence_model1/model.onnx");
  g_autoptr(WeirOnnxModel) m = load_ok(path);
  const WeirOnnxGraph *g = weir_onnx_model_graph(m);
  assert_int_equal(g->n_inputs, 5);
  assert_int_equal(g->n_initializers, 2);
  /* inputs that also have an initializer are not real inputs */
  assert_true(weir_onnx_graph_is_real_input(g, "X"));
  assert_false(weir_onnx_graph_is_real_input(g, "pos"));
  assert_true(weir_onnx_graph_is_initializer(g, "pos"));
  assert_false(weir_onnx_graph_is_initializer(g, "X"));
  const WeirOnnxInitializer *in = weir_onnx_graph_initializer(g, "pos");
  assert_non_null(in);
  assert_int_equal(in->dtype, WEIR_DTYPE_I64);
  assert_int_equal(in->rank, 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTensor) pos = weir_onnx_model_initializer(m, "pos", &error);
  assert_non_null(pos);
  assert_int_equal(pos->rank, 0);
  assert_int_equal(pos->count, 1);
  assert_null(weir_onnx_model_initializer(m, "nope", &error));
  assert_non_null(strstr(error->message, "no initializer named 'nope'"));
  /* an output dimension with neither value nor name gets a generated one */
  const WeirOnnxValueInfo *out = weir_onnx_graph_value_info(g, "out");
  assert_non_null(out);
  assert_int_equal(out->rank, 3);
  assert_int_equal(out->dims[0].value, -1);
  assert_string_equal(out->dims[0].param, "unk__0");
  assert_int_equal(out->dims[1].value, 3);
}

static void test_pytorch_model_with_weights(void **state) {
  (void)state;
  NEED_DATA(path, "pytorch-converted/test_Conv2d/model.onnx");
  g_autoptr(WeirOnnxModel) m = load_ok(path);
  assert_string_equal(weir_onnx_model_producer(m), "pytorch");
  assert_int_equal(weir_onnx_model_opset(m, ""), 6);
  const WeirOnnxGraph *g = weir_onnx_model_graph(m);
  assert_false(weir_onnx_graph_is_real_input(g, "1"));
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTensor) w = weir_onnx_model_initializer(m, "1", &error);
  assert_non_null(w);
  g_autofree char *d = weir_tensor_describe(w);
  assert_string_equal(d, "f32[4, 3, 3, 2]");
}

static void test_all_test_models_load(void **state) {
  (void)state;
  NEED_DATA(root, "node");
  const char *dirs[] = {"node", "pytorch-converted", "pytorch-operator",
                        "simple"};
  guint loaded = 0;
  for (guint d = 0; d < G_N_ELEMENTS(dirs); d++) {
    g_autofree char *dir_path = g_build_filename(data_dir(), dirs[d], NULL);
    g_autoptr(GDir) dir = g_dir_open(dir_path, 0, NULL);
    if (!dir)
      continue;
    const char *entry;
    while ((entry = g_dir_read_name(dir))) {
      g_autofree char *p =
          g_build_filename(dir_path, entry, "model.onnx", NULL);
      if (!g_file_test(p, G_FILE_TEST_EXISTS))
        continue;
      g_autoptr(WeirOnnxModel) m = load_ok(p);
      loaded++;
    }
  }
  assert_true(loaded > 500);
}

/* ---- tensors of the test data --------------------------------------- */

static WeirTensor *read_pb_ok(const char *path) {
  g_autoptr(GError) error = NULL;
  WeirTensor *t = weir_tensor_read_pb(path, NULL, &error);
  if (!t)
    fail_msg("%s", error->message);
  return t;
}

static void test_relu_data(void **state) {
  (void)state;
  NEED_DATA(in_path, "node/test_relu/test_data_set_0/input_0.pb");
  NEED_DATA(out_path, "node/test_relu/test_data_set_0/output_0.pb");
  g_autofree char *name = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTensor) x = weir_tensor_read_pb(in_path, &name, &error);
  assert_non_null(x);
  assert_string_equal(name, "x");
  g_autoptr(WeirTensor) y = read_pb_ok(out_path);
  g_autofree char *d = weir_tensor_describe(x);
  assert_string_equal(d, "f32[3, 4, 5]");
  g_autoptr(WeirTensor) want = weir_tensor_copy(x);
  guint negatives = 0;
  for (gint64 k = 0; k < want->count; k++) {
    double v = weir_tensor_get(x, k);
    negatives += v < 0;
    weir_tensor_set(want, k, v > 0 ? v : 0);
  }
  assert_true(negatives > 0);
  assert_true(weir_tensor_allclose(y, want, 0, 0, NULL, &error));
}

static void test_add_data(void **state) {
  (void)state;
  const char *cases[] = {"node/test_add", "node/test_add_bcast",
                         "node/test_add_uint8"};
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    g_autofree char *base = g_build_filename(cases[c], "test_data_set_0", NULL);
    g_autofree char *ra = g_build_filename(base, "input_0.pb", NULL);
    g_autofree char *rb = g_build_filename(base, "input_1.pb", NULL);
    g_autofree char *rs = g_build_filename(base, "output_0.pb", NULL);
    NEED_DATA(pa, ra);
    NEED_DATA(pb, rb);
    NEED_DATA(ps, rs);
    g_autoptr(WeirTensor) a = read_pb_ok(pa);
    g_autoptr(WeirTensor) b = read_pb_ok(pb);
    g_autoptr(WeirTensor) s = read_pb_ok(ps);
    assert_int_equal(a->rank, 3);
    assert_int_equal(s->count, a->count);
    if (c == 2)
      assert_int_equal(a->dtype, WEIR_DTYPE_U8);
    else
      assert_int_equal(a->dtype, WEIR_DTYPE_F32);
    /* b broadcasts along the leading dimensions in test_add_bcast */
    for (gint64 k = 0; k < s->count; k++) {
      double want = weir_tensor_get(a, k) + weir_tensor_get(b, k % b->count);
      if (a->dtype == WEIR_DTYPE_U8)
        want = fmod(want, 256);
      assert_float_equal(weir_tensor_get(s, k), want, 1e-6);
    }
  }
}

static void test_other_dtypes(void **state) {
  (void)state;
  /* int64 and bool tensors */
  NEED_DATA(p64, "node/test_argmax_default_axis_example/test_data_set_0/"
                 "output_0.pb");
  g_autoptr(WeirTensor) idx = read_pb_ok(p64);
  assert_int_equal(idx->dtype, WEIR_DTYPE_I64);
  NEED_DATA(pb, "node/test_and2d/test_data_set_0/input_0.pb");
  g_autoptr(WeirTensor) b = read_pb_ok(pb);
  assert_int_equal(b->dtype, WEIR_DTYPE_BOOL);
  for (gint64 k = 0; k < b->count; k++)
    assert_true(((guint8 *)b->data)[k] <= 1);
  /* double */
  NEED_DATA(pd, "node/test_max_float64/test_data_set_0/input_0.pb");
  g_autoptr(WeirTensor) d = read_pb_ok(pd);
  assert_int_equal(d->dtype, WEIR_DTYPE_F64);
  /* float16, stored as its bits: test_max_float16's first input is
   * [3, 2, 1] */
  NEED_DATA(ph, "node/test_max_float16/test_data_set_0/input_0.pb");
  g_autoptr(WeirTensor) h = read_pb_ok(ph);
  assert_int_equal(h->dtype, WEIR_DTYPE_F16);
  assert_int_equal(((guint16 *)h->data)[2], 0x3c00);
  assert_float_equal(weir_tensor_get(h, 0), 3.0, 0);
  assert_float_equal(weir_tensor_get(h, 1), 2.0, 0);
}

/* ---- invalid models ------------------------------------------------- */

static guint8 *read_bytes(const char *path, gsize *len) {
  char *data = NULL;
  g_autoptr(GError) error = NULL;
  if (!g_file_get_contents(path, &data, len, &error))
    fail_msg("%s", error->message);
  return (guint8 *)data;
}

/* Loads a model from bytes; either it loads or there is an error. */
static gboolean load_or_error(const guint8 *data, gsize len) {
  GError *error = NULL;
  WeirOnnxModel *m =
      weir_onnx_model_load_from_data(data, len, "x.onnx", &error);
  if (m) {
    assert_null(error);
    /* walk it: every tensor either decodes or errors */
    const WeirOnnxGraph *g = weir_onnx_model_graph(m);
    for (guint k = 0; k < g->n_initializers; k++) {
      WeirTensor *t =
          weir_onnx_tensor_decode(g->initializers[k].proto, "i", &error);
      assert_true((t == NULL) == (error != NULL));
      weir_tensor_free(t);
      g_clear_error(&error);
    }
    weir_onnx_model_free(m);
    return TRUE;
  }
  assert_non_null(error);
  assert_true(g_str_has_prefix(error->message, "x.onnx: "));
  g_error_free(error);
  return FALSE;
}

static void test_truncated_models(void **state) {
  (void)state;
  NEED_DATA(path, "node/test_loop11/model.onnx");
  gsize len;
  g_autofree guint8 *data = read_bytes(path, &len);
  assert_true(load_or_error(data, len));
  guint failed = 0;
  for (gsize cut = 0; cut < len; cut++)
    failed += !load_or_error(data, cut);
  /* almost every prefix cuts a message or loses the graph */
  assert_true(failed > len * 9 / 10);

  g_autoptr(GError) error = NULL;
  assert_null(
      weir_onnx_model_load_from_data(data, len / 2, "cut.onnx", &error));
  assert_string_equal(
      error->message,
      "cut.onnx: not a valid ONNX model (protobuf decoding failed)");
}

static void test_corrupted_models(void **state) {
  (void)state;
  const char *models[] = {"node/test_conv_with_strides_padding/model.onnx",
                          "pytorch-converted/test_Conv2d/model.onnx",
                          "node/test_if/model.onnx"};
  for (guint m = 0; m < G_N_ELEMENTS(models); m++) {
    NEED_DATA(path, models[m]);
    gsize len;
    g_autofree guint8 *orig = read_bytes(path, &len);
    g_autofree guint8 *data = g_memdup2(orig, len);
    g_autoptr(GRand) rand = g_rand_new_with_seed(1234 + m);
    guint loaded = 0, failed = 0;
    for (guint round = 0; round < 600; round++) {
      memcpy(data, orig, len);
      guint flips = 1 + round % 4;
      for (guint f = 0; f < flips; f++)
        data[g_rand_int_range(rand, 0, (gint32)len)] ^=
            (guint8)g_rand_int_range(rand, 1, 256);
      if (load_or_error(data, len))
        loaded++;
      else
        failed++;
    }
    assert_true(failed > 0);
    assert_true(loaded > 0);
  }
}

static void test_missing_and_empty_files(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  assert_null(weir_onnx_model_load("/nonexistent/model.onnx", &error));
  assert_error(error, WEIR_ERROR, WEIR_ERROR_IO);
  assert_non_null(strstr(error->message, "/nonexistent/model.onnx"));
  g_clear_error(&error);

  g_autofree char *dir = g_dir_make_tmp("weir-onnx-XXXXXX", NULL);
  g_autofree char *empty = g_build_filename(dir, "empty.onnx", NULL);
  assert_true(g_file_set_contents(empty, "", 0, NULL));
  assert_null(weir_onnx_model_load(empty, &error));
  assert_error(error, WEIR_ERROR, WEIR_ERROR_PARSE);
  g_autofree char *want =
      g_strdup_printf("%s: not a valid ONNX model (empty file)", empty);
  assert_string_equal(error->message, want);
  g_clear_error(&error);

  /* a protobuf that decodes but is no model */
  const guint8 junk[] = {0x08, 0x01};
  assert_null(
      weir_onnx_model_load_from_data(junk, sizeof junk, "j.onnx", &error));
  assert_string_equal(error->message,
                      "j.onnx: not a valid ONNX model (no graph)");
  g_remove(empty);
  g_rmdir(dir);
}

/* Unpacks a real model, lets edit change it, packs it and loads the
 * result; returns the error (the model must not load). */
static GError *load_edited(const char *rel,
                           void (*edit)(Onnx__ModelProto *, gpointer),
                           gpointer user_data, WeirOnnxModel **loaded) {
  g_autofree char *path = data_path(rel);
  gsize len;
  g_autofree guint8 *data = read_bytes(path, &len);
  Onnx__ModelProto *p = onnx__model_proto__unpack(NULL, len, data);
  assert_non_null(p);
  edit(p, user_data);
  gsize size = onnx__model_proto__get_packed_size(p);
  g_autofree guint8 *buf = g_malloc(size);
  onnx__model_proto__pack(p, buf);
  GError *error = NULL;
  WeirOnnxModel *m =
      weir_onnx_model_load_from_data(buf, size, "edited.onnx", &error);
  if (loaded)
    *loaded = m;
  else
    weir_onnx_model_free(m);
  onnx__model_proto__free_unpacked(p, NULL);
  return error;
}

static void rename_node_input(Onnx__ModelProto *p, gpointer data) {
  (void)data;
  g_free(p->graph->node[0]->input[1]);
  p->graph->node[0]->input[1] = g_strdup("nowhere");
}

static void swap_loop_body_nodes(Onnx__ModelProto *p, gpointer data) {
  (void)data;
  Onnx__GraphProto *body = p->graph->node[0]->attribute[0]->g;
  Onnx__NodeProto *t = body->node[2];
  body->node[2] = body->node[3]; /* Add reads 'one' before it is made */
  body->node[3] = t;
}

static void duplicate_output(Onnx__ModelProto *p, gpointer data) {
  (void)data;
  Onnx__GraphProto *body = p->graph->node[0]->attribute[0]->g;
  g_free(body->node[2]->output[0]);
  body->node[2]->output[0] = g_strdup("x");
}

static void drop_graph_output_producer(Onnx__ModelProto *p, gpointer data) {
  (void)data;
  g_free(p->graph->output[0]->name);
  p->graph->output[0]->name = g_strdup("ghost");
}

static void test_structural_errors(void **state) {
  (void)state;
  NEED_DATA(conv, "node/test_conv_with_strides_padding/model.onnx");
  NEED_DATA(loop, "node/test_loop11/model.onnx");
  g_autoptr(GError) e1 =
      load_edited("node/test_conv_with_strides_padding/model.onnx",
                  rename_node_input, NULL, NULL);
  assert_non_null(e1);
  assert_string_equal(e1->message,
                      "edited.onnx: node 'Conv_0' (Conv): input 'nowhere' "
                      "is not a graph input, an initializer or an output of "
                      "an earlier node");
  g_autoptr(GError) e2 = load_edited("node/test_loop11/model.onnx",
                                     swap_loop_body_nodes, NULL, NULL);
  assert_non_null(e2);
  assert_non_null(strstr(e2->message, "input 'one' is not"));
  g_autoptr(GError) e3 =
      load_edited("node/test_loop11/model.onnx", duplicate_output, NULL, NULL);
  assert_non_null(e3);
  assert_non_null(strstr(e3->message, "output 'x' is already defined"));
  g_autoptr(GError) e4 = load_edited("node/test_add/model.onnx",
                                     drop_graph_output_producer, NULL, NULL);
  assert_non_null(e4);
  assert_non_null(strstr(e4->message, "graph output 'ghost' is not defined"));
}

/* Adds an initializer 'W' (replacing the input of the same name) whose
 * bytes are set by the edit data. */
typedef struct {
  gint32 type;
  gsize raw_len; /* raw_data bytes, or G_MAXSIZE for float_data */
  gboolean external;
} InitSpec;

static void add_initializer(Onnx__ModelProto *p, gpointer data) {
  const InitSpec *spec = data;
  Onnx__GraphProto *g = p->graph;
  Onnx__TensorProto *t = g_malloc(sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = g_strdup("W");
  t->n_dims = 2;
  t->dims = g_new(int64_t, 2);
  t->dims[0] = 3;
  t->dims[1] = 3;
  t->has_data_type = TRUE;
  t->data_type = spec->type;
  if (spec->raw_len == G_MAXSIZE) {
    t->n_float_data = 9;
    t->float_data = g_new0(float, 9);
    for (guint k = 0; k < 9; k++)
      t->float_data[k] = (float)k / 2;
  } else {
    t->has_raw_data = TRUE;
    t->raw_data.len = spec->raw_len;
    t->raw_data.data = g_malloc0(spec->raw_len + 1);
  }
  if (spec->external) {
    t->has_data_location = TRUE;
    t->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
  }
  g->initializer =
      g_renew(Onnx__TensorProto *, g->initializer, g->n_initializer + 1);
  g->initializer[g->n_initializer++] = t;
}

static void test_initializer_errors(void **state) {
  (void)state;
  NEED_DATA(conv, "node/test_conv_with_strides_padding/model.onnx");
  const char *rel = "node/test_conv_with_strides_padding/model.onnx";

  /* float_data: loads, decodes, and W stops being a real input */
  InitSpec ok = {WEIR_ONNX_TYPE_FLOAT, G_MAXSIZE, FALSE};
  WeirOnnxModel *m = NULL;
  g_autoptr(GError) e0 = load_edited(rel, add_initializer, &ok, &m);
  assert_null(e0);
  assert_non_null(m);
  assert_false(weir_onnx_graph_is_real_input(weir_onnx_model_graph(m), "W"));
  g_autoptr(WeirTensor) w = weir_onnx_model_initializer(m, "W", &e0);
  assert_non_null(w);
  assert_float_equal(weir_tensor_get(w, 8), 4.0, 0);
  weir_onnx_model_free(m);

  /* raw_data length mismatch is caught at load time */
  InitSpec short_raw = {WEIR_ONNX_TYPE_FLOAT, 35, FALSE};
  g_autoptr(GError) e1 = load_edited(rel, add_initializer, &short_raw, NULL);
  assert_non_null(e1);
  assert_string_equal(e1->message,
                      "edited.onnx: initializer 'W': raw_data has 35 bytes, "
                      "expected 36 (9 x FLOAT of 4 bytes)");

  /* COMPLEX64 loads (the importer decides) but does not decode */
  InitSpec half = {WEIR_ONNX_TYPE_COMPLEX64, 72, FALSE};
  g_autoptr(GError) e2 = load_edited(rel, add_initializer, &half, &m);
  assert_null(e2);
  const WeirOnnxInitializer *in =
      weir_onnx_graph_initializer(weir_onnx_model_graph(m), "W");
  assert_false(in->dtype_ok);
  assert_int_equal(in->onnx_type, WEIR_ONNX_TYPE_COMPLEX64);
  assert_null(weir_onnx_model_initializer(m, "W", &e2));
  assert_error(e2, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED);
  assert_string_equal(e2->message, "edited.onnx: initializer 'W': "
                                   "unsupported element type COMPLEX64");
  weir_onnx_model_free(m);

  /* external data */
  InitSpec ext = {WEIR_ONNX_TYPE_FLOAT, 0, TRUE};
  g_autoptr(GError) e3 = load_edited(rel, add_initializer, &ext, &m);
  assert_null(e3);
  assert_null(weir_onnx_model_initializer(m, "W", &e3));
  assert_error(e3, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED);
  assert_non_null(strstr(e3->message, "external data"));
  weir_onnx_model_free(m);
}

static void test_type_names(void **state) {
  (void)state;
  for (guint d = 0; d < WEIR_DTYPE_COUNT; d++) {
    WeirDType back;
    assert_true(weir_onnx_type_to_dtype(weir_onnx_type_from_dtype((WeirDType)d),
                                        &back));
    assert_int_equal(back, d);
  }
  assert_false(weir_onnx_type_to_dtype(WEIR_ONNX_TYPE_STRING, NULL));
  assert_false(weir_onnx_type_to_dtype(99, NULL));
  g_autofree char *a = weir_onnx_type_name(WEIR_ONNX_TYPE_BFLOAT16);
  g_autofree char *b = weir_onnx_type_name(99);
  assert_string_equal(a, "BFLOAT16");
  assert_string_equal(b, "type 99");
  assert_string_equal(weir_onnx_attr_type_name(WEIR_ONNX_ATTR_INTS), "ints");
  assert_string_equal(weir_onnx_attr_type_name(99), "unknown");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv_model),
      cmocka_unit_test(test_gemm_float_and_int_attributes),
      cmocka_unit_test(test_string_attribute),
      cmocka_unit_test(test_omitted_optional_input),
      cmocka_unit_test(test_subgraphs),
      cmocka_unit_test(test_initializers_and_unknown_dims),
      cmocka_unit_test(test_pytorch_model_with_weights),
      cmocka_unit_test(test_all_test_models_load),
      cmocka_unit_test(test_relu_data),
      cmocka_unit_test(test_add_data),
      cmocka_unit_test(test_other_dtypes),
      cmocka_unit_test(test_truncated_models),
      cmocka_unit_test(test_corrupted_models),
      cmocka_unit_test(test_missing_and_empty_files),
      cmocka_unit_test(test_structural_errors),
      cmocka_unit_test(test_initializer_errors),
      cmocka_unit_test(test_type_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
