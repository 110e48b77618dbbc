/* test-training-ops.c — the ONNX training operators Adam, Momentum and
 * Adagrad (ir/ops/optimizers.c, ir/lower/expand/optimizers.c) and
 * BatchNormalization in training mode (ir/lower/expand/
 * batchnorm-training.c), and Pointwise (ir/ops/training.c: its map is
 * sequential exactly when its attribute serial is 1): schemas and domain,
 * inference and its errors,
 * FLOPs against the analysis of the expansion, and small cases computed by
 * hand, run in the reference interpreter and as compiled code.
 *
 * Each case builds access nodes -> library node -> access nodes (output
 * shapes from the operator's inference) with inputs named in0, in1, ...
 * and outputs out0, out1, ..., and lists the expected output values.  The
 * arithmetic of each expectation is written next to it.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "weir-analysis.h"
#include "weir-expand.h"
#include "weir-interp.h"
#include "weir-ops.h"
#include "weir-runtime.h"
#include "weir-validate.h"

#define F32 WEIR_DTYPE_F32
#define F64 WEIR_DTYPE_F64
#define I64 WEIR_DTYPE_I64
#define TRAINING "ai.onnx.preview.training"
#define MAX_VALUES 8
#define MAX_IO 12

typedef struct {
  WeirDType dtype;
  const char *shape;
  double v[MAX_VALUES];
} Tensor;

typedef struct {
  const char *title;
  const char *op;
  guint n_ins, n_outs;
  Tensor ins[MAX_IO];
  Tensor outs[MAX_IO]; /* dtype and shape expected from inference */
  struct {
    const char *name;
    double v;
  } f[5];
  struct {
    const char *name;
    gint64 v;
  } i[2];
  const char *mode;          /* Momentum's mode, or NULL */
  gboolean omit_out[MAX_IO]; /* outputs the node does not have */
  double tol;                /* relative tolerance (f32 cases) */
  const char *code;          /* Pointwise's code, or NULL */
} Case;

/* ----------------------------------------------------------------- cases */

static const Case cases[] = {
    /* g = 0.5 x + G (norm_coefficient 0.5); T = 2 > 0, so beta stays 0.25;
     * V_new = 0.5 V + 0.25 g; X_new = X - 0.1 V_new.
     * X1 = [2, -4]: g = [2, -1], V_new = [2 + 0.5, 1 - 0.25],
     *   X_new = [2 - 0.25, -4 - 0.075].
     * X2 = [[1, 0]]: g = [-1.5, 4], V_new = [-0.375, 0.5 + 1],
     *   X_new = [1 + 0.0375, -0.15]. */
    {"Momentum, two tensors, norm_coefficient", "Momentum", 8, 4,
     .ins = {{F64, "", {0.1}},
             {I64, "", {2}},
             {F64, "2", {2, -4}},
             {F64, "1, 2", {1, 0}},
             {F64, "2", {1, 1}},
             {F64, "1, 2", {-2, 4}},
             {F64, "2", {4, 2}},
             {F64, "1, 2", {0, 1}}},
     .outs = {{F64, "2", {1.75, -4.075}},
              {F64, "1, 2", {1.0375, -0.15}},
              {F64, "2", {2.5, 0.75}},
              {F64, "1, 2", {-0.375, 1.5}}},
     .f = {{"alpha", 0.5}, {"beta", 0.25}, {"norm_coefficient", 0.5}},
     .mode = "standard"},
    /* T = 0: the first step uses beta = 1.  V_new = 0.9 V + G =
     * [0.9 + 0.5, 0.9 - 1, -0.9 + 2]; X_new = X - 0.5 V_new. */
    {"Momentum, first step (T = 0), f32", "Momentum", 5, 2,
     .ins = {{F32, "", {0.5}},
             {I64, "", {0}},
             {F32, "3", {1, 2, 3}},
             {F32, "3", {0.5, -1, 2}},
             {F32, "3", {1, 1, -1}}},
     .outs = {{F32, "3", {0.3, 2.05, 2.45}}, {F32, "3", {1.4, -0.1, 1.1}}},
     .f = {{"alpha", 0.9}, {"beta", 0.1}, {"norm_coefficient", 0}},
     .mode = "standard", .tol = 1e-6},
    /* Nesterov: g = 0.25 X + G = [2, 0]; V_new = 0.5 V + 1 g = [3, -1];
     * X_new = X - 0.2 (g + 0.5 V_new) = [4 - 0.2 * 3.5, -2 - 0.2 * -0.5]. */
    {"Momentum, nesterov", "Momentum", 5, 2,
     .ins = {{F64, "", {0.2}},
             {I64, "", {1}},
             {F64, "2", {4, -2}},
             {F64, "2", {1, 0.5}},
             {F64, "2", {2, -2}}},
     .outs = {{F64, "2", {3.3, -1.9}}, {F64, "2", {3, -1}}},
     .f = {{"alpha", 0.5}, {"beta", 1.0}, {"norm_coefficient", 0.25}},
     .mode = "nesterov"},
    /* r = 0.3 / (1 + 2 * 0.5) = 0.15; g = 0.5 X + G; H_new = H + g^2;
     * X_new = X - r g / (sqrt(H_new) + 1).
     * X1 = [2]: g = 4, H_new = 16, X_new = 2 - 0.6 / 5.
     * X2 = [-2, 0]: g = [0, 3], H_new = [0, 16], X_new = [-2, -0.45 / 5]. */
    {"Adagrad, two tensors, decay and norm_coefficient", "Adagrad", 8, 4,
     .ins = {{F64, "", {0.3}},
             {I64, "", {2}},
             {F64, "1", {2}},
             {F64, "2", {-2, 0}},
             {F64, "1", {3}},
             {F64, "2", {1, 3}},
             {F64, "1", {0}},
             {F64, "2", {0, 7}}},
     .outs = {{F64, "1", {1.88}},
              {F64, "2", {-2, -0.09}},
              {F64, "1", {16}},
              {F64, "2", {0, 16}}},
     .f = {{"decay_factor", 0.5}, {"epsilon", 1.0}, {"norm_coefficient", 0.5}}},
    /* T = 1: lr = 0.1 sqrt(1 - 0.75) / (1 - 0.5) = 0.1.
     * V_new = 0.5 V + 0.5 G = [1, -1]; H_new = 0.75 H + 0.25 G^2 = [4, 4];
     * X_new = (1 - 0.5) (X - 0.1 V_new / 2) = [0.5 * 0.95, 0.5 * -0.95]. */
    {"Adam, bias correction and norm_coefficient_post", "Adam", 6, 3,
     .ins = {{F64, "", {0.1}},
             {I64, "", {1}},
             {F64, "2", {1, -1}},
             {F64, "2", {2, -4}},
             {F64, "2", {0, 2}},
             {F64, "2", {4, 0}}},
     .outs = {{F64, "2", {0.475, -0.475}},
              {F64, "2", {1, -1}},
              {F64, "2", {4, 4}}},
     .f = {{"alpha", 0.5},
           {"beta", 0.75},
           {"epsilon", 0},
           {"norm_coefficient_post", 0.5}}},
    /* Defaults alpha 0.9, beta 0.999, epsilon 1e-6; T = 0: lr = R = 0.01;
     * g = 0.5 X + G.
     * X1 = [1, 2]: g = [1, 0.5], V_new = [0.1, 0.05],
     *   H_new = [0.001, 0.00025], X_new = X - 0.01 V_new /
     *   (sqrt(H_new) + 1e-6) = [1 - 0.001 / 0.0316238, 2 - 0.0005 /
     *   0.0158124].
     * X2 = [-1]: g = 0.5, V_new = 0.09 + 0.05, H_new = 0.00999 + 0.00025,
     *   X_new = -1 - 0.0014 / 0.101201. */
    {"Adam, two tensors, defaults, f32", "Adam", 10, 6,
     .ins = {{F32, "", {0.01}},
             {I64, "", {0}},
             {F32, "2", {1, 2}},
             {F32, "1", {-1}},
             {F32, "2", {0.5, -0.5}},
             {F32, "1", {1}},
             {F32, "2", {0, 0}},
             {F32, "1", {0.1}},
             {F32, "2", {0, 0}},
             {F32, "1", {0.01}}},
     .outs = {{F32, "2", {0.9683782233666944, 1.9683792232718331}},
              {F32, "1", {-1.0138348280458378}},
              {F32, "2", {0.1, 0.05}},
              {F32, "1", {0.14}},
              {F32, "2", {0.001, 0.00025}},
              {F32, "1", {0.01024}}},
     .f = {{"norm_coefficient", 0.5}}, .tol = 1e-5},
    /* Adam whose moment outputs are omitted: only X_new is written
     * (same numbers as the bias-correction case). */
    {"Adam, only X_new", "Adam", 6, 3,
     .ins = {{F64, "", {0.1}},
             {I64, "", {1}},
             {F64, "2", {1, -1}},
             {F64, "2", {2, -4}},
             {F64, "2", {0, 2}},
             {F64, "2", {4, 0}}},
     .outs = {{F64, "2", {0.475, -0.475}}},
     .f = {{"alpha", 0.5},
           {"beta", 0.75},
           {"epsilon", 0},
           {"norm_coefficient_post", 0.5}},
     .omit_out = {FALSE, TRUE, TRUE}},
    /* X (N = 2, C = 2, D = 2): channel 0 holds 1, 3, 5, 7 (mean 4,
     * population variance (9 + 1 + 1 + 9) / 4 = 5), channel 1 holds 2s
     * (mean 2, variance 0).  epsilon 4: 1/sqrt(var + eps) = [1/3, 1/2].
     * Y = (x - mean) inv scale + B with scale [2, 1], B [0.5, -1]:
     * channel 0: (x - 4) 2/3 + 0.5 = [-1.5, -1/6, 7/6, 2.5], channel 1: -1.
     * momentum 0.5: running_mean = 0.5 [1, 0] + 0.5 [4, 2] = [2.5, 1],
     * running_var = 0.5 [2, 1] + 0.5 [5, 0] = [3.5, 0.5]. */
    {"BatchNormalization, training mode", "BatchNormalization", 5, 3,
     .ins = {{F64, "2, 2, 2", {1, 3, 2, 2, 5, 7, 2, 2}},
             {F64, "2", {2, 1}},
             {F64, "2", {0.5, -1}},
             {F64, "2", {1, 0}},
             {F64, "2", {2, 1}}},
     .outs = {{F64, "2, 2, 2", {-1.5, -1.0 / 6, -1, -1, 7.0 / 6, 2.5, -1, -1}},
              {F64, "2", {2.5, 1}},
              {F64, "2", {3.5, 0.5}}},
     .f = {{"epsilon", 4}, {"momentum", 0.5}}, .i = {{"training_mode", 1}}},
    /* The same in f32 with only Y (the running statistics not asked for). */
    {"BatchNormalization, training mode, Y only, f32", "BatchNormalization", 5,
     1,
     .ins = {{F32, "2, 2, 2", {1, 3, 2, 2, 5, 7, 2, 2}},
             {F32, "2", {2, 1}},
             {F32, "2", {0.5, -1}},
             {F32, "2", {1, 0}},
             {F32, "2", {2, 1}}},
     .outs = {{F32, "2, 2, 2", {-1.5, -1.0 / 6, -1, -1, 7.0 / 6, 2.5, -1, -1}}},
     .f = {{"epsilon", 4}, {"momentum", 0.5}}, .i = {{"training_mode", 1}},
     .tol = 1e-6},
    /* Momentum with only its first output (the ONNX node lists one):
     * the first-step case above. */
    {"Momentum, trailing outputs left out", "Momentum", 5, 1,
     .ins = {{F32, "", {0.5}},
             {I64, "", {0}},
             {F32, "3", {1, 2, 3}},
             {F32, "3", {0.5, -1, 2}},
             {F32, "3", {1, 1, -1}}},
     .outs = {{F32, "3", {0.3, 2.05, 2.45}}},
     .f = {{"alpha", 0.9}, {"beta", 0.1}, {"norm_coefficient", 0}},
     .mode = "standard", .tol = 1e-6},
    /* The node and inputs of the ONNX node test test_adam_multiple (onnx
     * 1.12): alpha 0.95, beta 0.85, norm_coefficient 0.001, epsilon left
     * to its default 1e-6, T = 0 (lr = R = 0.1).
     * X1 = [1]: g = 0.001 - 1 = -0.999, V_new = 1.9 - 0.05 * 0.999 =
     *   1.85005, H_new = 0.425 + 0.15 * 0.998001 = 0.57470015,
     *   X_new = 1 - 0.1 * 1.85005 / (sqrt(0.57470015) + 1e-6).
     * X2 = [1, 2]: g = [-0.999, -2.998], V_new = [3.8 - 0.04995,
     *   0.95 - 0.1499], H_new = [0.85 + 0.14970015, 8.5 + 1.3482006],
     *   X_new = X - 0.1 V_new / (sqrt(H_new) + 1e-6).
     * The test's stored X outputs (0.75913626, 0.6286528, 1.9745853) are
     * the next case's, computed with epsilon 1e-2 that the model does not
     * state (onnx/onnx#7749): tests/conformance/known-bad-data.txt. */
    {"Adam, test_adam_multiple's node (epsilon default), f32", "Adam", 10, 6,
     .ins = {{F32, "", {0.1}},
             {I64, "", {0}},
             {F32, "1", {1}},
             {F32, "2", {1, 2}},
             {F32, "1", {-1}},
             {F32, "2", {-1, -3}},
             {F32, "1", {2}},
             {F32, "2", {4, 1}},
             {F32, "1", {0.5}},
             {F32, "2", {1, 10}}},
     .outs = {{F32, "1", {0.7559593136160893}},
              {F32, "2", {0.624939139845553, 1.974504373464075}},
              {F32, "1", {1.85005}},
              {F32, "2", {3.75005, 0.8001}},
              {F32, "1", {0.57470015}},
              {F32, "2", {0.99970015, 9.8482006}}},
     .f = {{"alpha", 0.95}, {"beta", 0.85}, {"norm_coefficient", 0.001}},
     .tol = 1e-5},
    /* The same with epsilon 1e-2: X_new = X - 0.1 V_new / (sqrt(H_new) +
     * 0.01), which gives test_adam_multiple's stored outputs. */
    {"Adam, test_adam_multiple's node with epsilon 1e-2, f32", "Adam", 10, 6,
     .ins = {{F32, "", {0.1}},
             {I64, "", {0}},
             {F32, "1", {1}},
             {F32, "2", {1, 2}},
             {F32, "1", {-1}},
             {F32, "2", {-1, -3}},
             {F32, "1", {2}},
             {F32, "2", {4, 1}},
             {F32, "1", {0.5}},
             {F32, "2", {1, 10}}},
     .outs = {{F32, "1", {0.7591362374762826}},
              {F32, "2", {0.6286527936593902, 1.9745853505437945}},
              {F32, "1", {1.85005}},
              {F32, "2", {3.75005, 0.8001}},
              {F32, "1", {0.57470015}},
              {F32, "2", {0.99970015, 9.8482006}}},
     .f = {{"alpha", 0.95},
           {"beta", 0.85},
           {"norm_coefficient", 0.001},
           {"epsilon", 0.01}},
     .tol = 1e-5},
    /* Pointwise y = a * b + 1 (b broadcast over the rows), as a parallel
     * map, then with serial = 1 as a sequential one (same values) */
    {"Pointwise", "Pointwise", 2, 1,
     .ins = {{F64, "2, 3", {1, 2, 3, 4, 5, 6}}, {F64, "3", {2, -1, 0.5}}},
     .outs = {{F64, "2, 3", {3, -1, 2.5, 9, -4, 4}}}, .i = {{"flops", 2}},
     .code = "y = a * b + 1"},
    {"Pointwise, serial", "Pointwise", 2, 1,
     .ins = {{F64, "2, 3", {1, 2, 3, 4, 5, 6}}, {F64, "3", {2, -1, 0.5}}},
     .outs = {{F64, "2, 3", {3, -1, 2.5, 9, -4, 4}}},
     .i = {{"flops", 2}, {"serial", 1}}, .code = "y = a * b + 1"},
};

/* -------------------------------------------------------------- builders */

static void value_from_container(const WeirContainer *c, WeirOpValue *v) {
  memset(v, 0, sizeof *v);
  v->present = TRUE;
  v->dtype = c->dtype;
  v->rank = c->shape->len;
  v->shape = (WeirExpr **)c->shape->pdata;
}

/* Runs op's inference on inputs of the given dtypes and shapes. */
static gboolean infer(WeirNode *lib, WeirContainer **ins, guint n_ins,
                      WeirOpValue *outs, guint n_outs, GError **error) {
  WeirOpValue values[MAX_IO];
  for (guint k = 0; k < n_ins; k++)
    value_from_container(ins[k], &values[k]);
  memset(outs, 0, sizeof *outs * n_outs);
  WeirOpInferContext ctx = {.node = lib,
                            .n_inputs = n_ins,
                            .inputs = values,
                            .n_outputs = n_outs,
                            .outputs = outs};
  const WeirOpInfo *info = weir_op_lookup(lib->op);
  assert_non_null(info);
  return info->infer(&ctx, error);
}

static void set_attrs(WeirNode *lib, const Case *c) {
  for (guint k = 0; k < G_N_ELEMENTS(c->f) && c->f[k].name; k++)
    weir_node_set_attr_float(lib, c->f[k].name, c->f[k].v);
  for (guint k = 0; k < G_N_ELEMENTS(c->i) && c->i[k].name; k++)
    weir_node_set_attr_int(lib, c->i[k].name, c->i[k].v);
  if (c->mode)
    weir_node_set_attr_string(lib, "mode", c->mode);
  if (c->code)
    weir_node_set_attr_string(lib, "code", c->code);
}

static void wire(WeirGraph *g, WeirState *s, guint src, const char *src_conn,
                 guint dst, const char *dst_conn, const WeirContainer *c) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autofree char *subset = weir_subset_to_string(full);
  if (!weir_state_add_memlet(g, s, src, src_conn, dst, dst_conn, c->name,
                             subset, &error))
    fail_msg("memlet: %s", error->message);
}

/* access nodes in0.. -> library node -> access nodes out0.. (outputs the
 * case omits get no connector). */
static WeirGraph *build_case(const Case *c) {
  WeirGraph *g = weir_graph_new("case");
  WeirState *s = weir_graph_add_state(g, "main");
  g_autoptr(GPtrArray) in_conns = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) out_conns = g_ptr_array_new_with_free_func(g_free);
  WeirContainer *ins[MAX_IO];
  g_autoptr(GError) error = NULL;
  for (guint k = 0; k < c->n_ins; k++) {
    g_autofree char *name = g_strdup_printf("in%u", k);
    ins[k] = weir_graph_add_array(g, name, c->ins[k].dtype, c->ins[k].shape,
                                  FALSE, &error);
    assert_non_null(ins[k]);
    g_ptr_array_add(in_conns, g_strdup(name));
  }
  g_ptr_array_add(in_conns, NULL);
  for (guint k = 0; k < c->n_outs; k++)
    if (!c->omit_out[k])
      g_ptr_array_add(out_conns, g_strdup_printf("out%u", k));
  g_ptr_array_add(out_conns, NULL);
  WeirNode *lib =
      weir_state_add_library(g, s, "opt", c->op, (const char **)in_conns->pdata,
                             (const char **)out_conns->pdata);
  set_attrs(lib, c);
  if (!weir_op_check_attrs(lib, &error))
    fail_msg("%s: %s", c->title, error->message);
  for (guint k = 0; k < c->n_ins; k++) {
    WeirNode *a = weir_state_add_access(g, s, ins[k]->name);
    g_autofree char *conn = g_strdup_printf("in%u", k);
    wire(g, s, a->id, NULL, lib->id, conn, ins[k]);
  }
  WeirOpValue outs[MAX_IO];
  if (!infer(lib, ins, c->n_ins, outs, c->n_outs, &error))
    fail_msg("%s: inference failed: %s", c->title, error->message);
  for (guint k = 0; k < c->n_outs; k++) {
    /* The inferred dtype and shape are the expected ones. */
    g_autofree char *name = g_strdup_printf("out%u", k);
    if (c->omit_out[k]) {
      weir_op_value_clear(&outs[k]);
      continue;
    }
    WeirContainer *expect = weir_graph_add_array(
        g, "expect", c->outs[k].dtype, c->outs[k].shape, FALSE, &error);
    assert_non_null(expect);
    assert_true(outs[k].present);
    if (outs[k].dtype != expect->dtype || outs[k].rank != expect->shape->len)
      fail_msg("%s: output %u is %s of rank %u, expected %s of rank %u",
               c->title, k, weir_dtype_name(outs[k].dtype), outs[k].rank,
               weir_dtype_name(expect->dtype), expect->shape->len);
    for (guint d = 0; d < outs[k].rank; d++)
      assert_true(weir_expr_equal(outs[k].shape[d],
                                  g_ptr_array_index(expect->shape, d)));
    weir_graph_remove_container(g, "expect");
    WeirContainer *y = weir_graph_add_container(
        g, name, outs[k].dtype, outs[k].rank, outs[k].shape, FALSE, &error);
    assert_non_null(y);
    WeirNode *a = weir_state_add_access(g, s, name);
    wire(g, s, lib->id, name, a->id, NULL, y);
    weir_op_value_clear(&outs[k]);
  }
  assert_true(weir_graph_validate(g, &error));
  return g;
}

static WeirTensor *tensor_of(const WeirContainer *c, const double *v) {
  gint64 shape[8];
  guint rank = c->shape->len;
  for (guint d = 0; d < rank; d++)
    assert_true(weir_expr_is_const(g_ptr_array_index(c->shape, d), &shape[d]));
  WeirTensor *t = weir_tensor_new(c->dtype, rank, shape);
  for (gint64 i = 0; i < t->count; i++)
    weir_tensor_set(t, i, v ? v[i] : NAN);
  return t;
}

/* Arguments of case c: inputs with their values, outputs filled with NaN.
 * (container name -> WeirTensor*, owned) */
static GHashTable *case_args(const WeirGraph *g, const Case *c) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint k = 0; k < c->n_ins; k++) {
    g_autofree char *name = g_strdup_printf("in%u", k);
    const WeirContainer *ct = weir_graph_container(g, name);
    g_hash_table_insert(args, g_strdup(name), tensor_of(ct, c->ins[k].v));
  }
  for (guint k = 0; k < c->n_outs; k++) {
    if (c->omit_out[k])
      continue;
    g_autofree char *name = g_strdup_printf("out%u", k);
    const WeirContainer *ct = weir_graph_container(g, name);
    g_hash_table_insert(args, g_strdup(name), tensor_of(ct, NULL));
  }
  return args;
}

static void check_outputs(const Case *c, GHashTable *args, const char *how) {
  double rtol = c->tol > 0 ? c->tol : 1e-12;
  for (guint k = 0; k < c->n_outs; k++) {
    if (c->omit_out[k])
      continue;
    g_autofree char *name = g_strdup_printf("out%u", k);
    const WeirTensor *got = g_hash_table_lookup(args, name);
    for (gint64 i = 0; i < got->count; i++) {
      double e = c->outs[k].v[i], v = weir_tensor_get(got, i);
      if (!(fabs(v - e) <= rtol * fabs(e) + rtol))
        fail_msg("%s (%s): output %u element %" G_GINT64_FORMAT
                 ": got %.17g, expected %.17g",
                 c->title, how, k, i, v, e);
    }
  }
}

/* ------------------------------------------------------------------ tests */

static void test_registered(void **state) {
  (void)state;
  static const char *const names[] = {"Adam", "Momentum", "Adagrad"};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++) {
    const WeirOpInfo *info = weir_op_lookup(names[i]);
    assert_non_null(info);
    assert_string_equal(info->domain, TRAINING);
    assert_ptr_equal(weir_op_lookup_onnx(TRAINING, names[i]), info);
    /* Not an operator of the default domain. */
    assert_null(weir_op_lookup_onnx("", names[i]));
    assert_null(weir_op_lookup_onnx("ai.onnx", names[i]));
    assert_null(weir_op_lookup_onnx(NULL, names[i]));
    assert_int_equal(info->max_inputs, WEIR_OP_VARIADIC);
  }
  /* Default-domain operators are not in the training domain. */
  assert_non_null(weir_op_lookup_onnx("", "BatchNormalization"));
  assert_non_null(weir_op_lookup_onnx("ai.onnx", "Relu"));
  assert_null(weir_op_lookup_onnx(TRAINING, "Relu"));
  assert_null(weir_op_lookup_onnx("com.example", "Adam"));
}

/* Schema defaults are ONNX's; Momentum's attributes are all required. */
static void test_attrs(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  WeirState *s = weir_graph_add_state(g, "main");
  g_autoptr(GError) error = NULL;
  WeirNode *adam = weir_state_add_library(g, s, "a", "Adam", NULL, NULL);
  assert_true(weir_op_check_attrs(adam, &error));
  static const struct {
    const char *name;
    double v;
  } adam_defaults[] = {{"alpha", 0.9},
                       {"beta", 0.999},
                       {"epsilon", 1e-6},
                       {"norm_coefficient", 0},
                       {"norm_coefficient_post", 0}};
  for (guint i = 0; i < G_N_ELEMENTS(adam_defaults); i++) {
    const WeirAttr *a = weir_node_attr(adam, adam_defaults[i].name);
    assert_non_null(a);
    assert_true(a->f == adam_defaults[i].v);
  }
  WeirNode *ada = weir_state_add_library(g, s, "b", "Adagrad", NULL, NULL);
  assert_true(weir_op_check_attrs(ada, &error));
  assert_true(weir_node_attr(ada, "decay_factor")->f == 0.0);
  assert_true(weir_node_attr(ada, "epsilon")->f == 1e-6);

  WeirNode *mom = weir_state_add_library(g, s, "m", "Momentum", NULL, NULL);
  weir_node_set_attr_float(mom, "alpha", 0.9);
  weir_node_set_attr_float(mom, "beta", 0.1);
  weir_node_set_attr_float(mom, "norm_coefficient", 0);
  assert_false(weir_op_check_attrs(mom, &error));
  assert_non_null(strstr(error->message, "'m'"));
  assert_non_null(strstr(error->message, "'mode'"));
  g_clear_error(&error);
  weir_node_set_attr_int(mom, "mode", 1);
  assert_false(weir_op_check_attrs(mom, &error));
  assert_non_null(strstr(error->message, "mode"));
}

/* An inference failure whose message contains fragment. */
static void expect_infer_error(const char *op, const char *mode,
                               const WeirDType *dtypes,
                               const char *const *shapes, guint n_ins,
                               guint n_outs, const char *fragment) {
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *lib = weir_state_add_library(g, s, "bad_node", op, NULL, NULL);
  if (mode) {
    weir_node_set_attr_float(lib, "alpha", 0.9);
    weir_node_set_attr_float(lib, "beta", 0.1);
    weir_node_set_attr_float(lib, "norm_coefficient", 0);
    weir_node_set_attr_string(lib, "mode", mode);
  }
  g_autoptr(GError) error = NULL;
  assert_true(weir_op_check_attrs(lib, &error));
  WeirContainer *ins[MAX_IO];
  for (guint k = 0; k < n_ins; k++) {
    g_autofree char *name = g_strdup_printf("v%u", k);
    ins[k] = weir_graph_add_array(g, name, dtypes[k], shapes[k], FALSE, &error);
    assert_non_null(ins[k]);
  }
  WeirOpValue outs[MAX_IO];
  assert_false(infer(lib, ins, n_ins, outs, n_outs, &error));
  for (guint k = 0; k < n_outs; k++)
    weir_op_value_clear(&outs[k]);
  assert_int_equal(error->code, WEIR_ERROR_INVALID);
  if (!strstr(error->message, fragment) ||
      !strstr(error->message, "'bad_node'"))
    fail_msg("%s: unexpected message: %s", op, error->message);
}

static void test_infer_errors(void **state) {
  (void)state;
  const WeirDType ok_t[] = {F32, I64, F32, F32, F32, F32, F32};
  const char *const ok_s[] = {"", "", "3", "3", "3", "3", "3"};
  /* 7 inputs: not R, T and a multiple of 4 tensors. */
  expect_infer_error("Adam", NULL, ok_t, ok_s, 7, 3, "multiple of 4");
  /* Adam with one tensor has up to 3 outputs. */
  expect_infer_error("Adam", NULL, ok_t, ok_s, 6, 4, "expected 1 to 3");
  const WeirDType bad_t[] = {F32, F32, F32, F32, F32};
  expect_infer_error("Adagrad", NULL, bad_t, ok_s, 5, 2,
                     "input 1 (T) has dtype f32");
  const WeirDType int_r[] = {I64, I64, F32, F32, F32};
  expect_infer_error("Adagrad", NULL, int_r, ok_s, 5, 2, "input 0 (R)");
  const char *const vec_r[] = {"2", "", "3", "3", "3"};
  expect_infer_error("Adagrad", NULL, ok_t, vec_r, 5, 2,
                     "input 0 (R) must be a scalar");
  const char *const bad_g[] = {"", "", "3", "4", "3"};
  expect_infer_error("Momentum", "standard", ok_t, bad_g, 5, 2,
                     "input 3 (G1) has shape [4], but X1 has [3]");
  const WeirDType mixed[] = {F32, I64, F32, F64, F32};
  expect_infer_error("Momentum", "standard", mixed, ok_s, 5, 2,
                     "input 3 (G1) has dtype f64");
  const WeirDType int_x[] = {F32, I64, I64, I64, I64};
  expect_infer_error("Momentum", "standard", int_x, ok_s, 5, 2,
                     "input 2 (X1) has dtype i64");
  expect_infer_error("Momentum", "heavy-ball", ok_t, ok_s, 5, 2,
                     "'mode' is 'heavy-ball'");
  /* Two tensors: the second V has the wrong shape. */
  const WeirDType two_t[] = {F32, I64, F32, F32, F32, F32, F32, F32};
  const char *const two_s[] = {"", "", "2", "3", "2", "3", "2", "2"};
  expect_infer_error("Momentum", "standard", two_t, two_s, 8, 4,
                     "input 7 (V2) has shape [2], but X2 has [3]");
}

/* Each case runs in the interpreter; the expansion has no library node
 * left and validates; the operator's FLOPs equal the analysis of the
 * expanded program. */
static void test_cases_interp(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    const Case *c = &cases[i];
    g_autoptr(WeirGraph) g = build_case(c);
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirAnalysis) before = weir_analysis_compute(g, NULL, &error);
    assert_non_null(before);
    assert_true(before->total_flops.known);
    guint count = 0;
    if (!weir_expand_all(g, NULL, &count, &error))
      fail_msg("%s: expansion failed: %s", c->title, error->message);
    assert_int_equal(count, 1);
    assert_non_null(weir_op_expansion(c->op, "pure"));
    if (!weir_graph_validate(g, &error))
      fail_msg("%s: invalid after expansion: %s", c->title, error->message);
    WeirState *s = g_ptr_array_index(g->states, 0);
    for (guint n = 0; n < s->nodes->len; n++) {
      const WeirNode *x = g_ptr_array_index(s->nodes, n);
      assert_int_not_equal(x->kind, WEIR_NODE_LIBRARY);
      /* Pointwise: one map, sequential exactly when serial = 1 */
      if (c->code && x->kind == WEIR_NODE_MAP_ENTRY) {
        gboolean serial = FALSE;
        for (guint k = 0; k < G_N_ELEMENTS(c->i) && c->i[k].name; k++)
          serial = serial || (!strcmp(c->i[k].name, "serial") && c->i[k].v);
        assert_int_equal(x->map->schedule, serial ? WEIR_SCHEDULE_SEQUENTIAL
                                                  : WEIR_SCHEDULE_PARALLEL);
      }
    }
    g_autoptr(WeirAnalysis) after = weir_analysis_compute(g, NULL, &error);
    assert_non_null(after);
    assert_true(after->total_flops.known);
    if (before->total_flops.value != after->total_flops.value)
      fail_msg("%s: operator FLOPs %" G_GINT64_FORMAT
               ", expanded %" G_GINT64_FORMAT,
               c->title, before->total_flops.value, after->total_flops.value);

    g_autoptr(GHashTable) args = case_args(g, c);
    if (!weir_interpret(g, NULL, args, NULL, &error))
      fail_msg("%s: interpretation failed: %s", c->title, error->message);
    check_outputs(c, args, "interpreter");
  }
}

/* The same cases as compiled code (one compile of all programs, in
 * parallel, without the cache). */
static void test_cases_compiled(void **state) {
  (void)state;
  guint n = G_N_ELEMENTS(cases);
  WeirGraph *graphs[G_N_ELEMENTS(cases)];
  WeirKernel *kernels[G_N_ELEMENTS(cases)] = {0};
  g_autoptr(GError) error = NULL;
  for (guint i = 0; i < n; i++) {
    graphs[i] = build_case(&cases[i]);
    assert_true(weir_expand_all(graphs[i], NULL, NULL, &error));
  }
  WeirCompileOptions opts = {.flags = "-O1 -fopenmp -fPIC -shared",
                             .no_cache = TRUE};
  if (!weir_kernel_compile_many((const WeirGraph *const *)graphs, n, &opts,
                                kernels, NULL, &error))
    fail_msg("compile: %s", error->message);
  for (guint i = 0; i < n; i++) {
    g_autoptr(GHashTable) args = case_args(graphs[i], &cases[i]);
    g_autoptr(GHashTable) symbols = weir_bindings_new();
    if (!weir_kernel_run(kernels[i], symbols, args, &error))
      fail_msg("%s: run: %s", cases[i].title, error->message);
    check_outputs(&cases[i], args, "compiled");
    weir_kernel_free(kernels[i]);
    weir_graph_free(graphs[i]);
  }
}

/* Batch statistics over a symbolic batch N: the count N * D is symbolic in
 * the expansion; FLOPs stay symbolic. */
static void test_batchnorm_symbolic(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("bn");
  weir_graph_add_symbol(g, "N");
  WeirState *s = weir_graph_add_state(g, "main");
  g_autoptr(GError) error = NULL;
  const char *const names[] = {"x", "scale", "b", "mean", "var"};
  const char *const shapes[] = {"N, 2, 2", "2", "2", "2", "2"};
  const char *in_conns[] = {"in0", "in1", "in2", "in3", "in4", NULL};
  const char *out_conns[] = {"out0", "out1", "out2", NULL};
  WeirNode *lib = weir_state_add_library(g, s, "bn", "BatchNormalization",
                                         in_conns, out_conns);
  weir_node_set_attr_int(lib, "training_mode", 1);
  weir_node_set_attr_float(lib, "epsilon", 4);
  weir_node_set_attr_float(lib, "momentum", 0.5);
  assert_true(weir_op_check_attrs(lib, &error));
  WeirContainer *ins[5];
  for (guint k = 0; k < 5; k++) {
    ins[k] = weir_graph_add_array(g, names[k], F64, shapes[k], FALSE, &error);
    WeirNode *a = weir_state_add_access(g, s, names[k]);
    wire(g, s, a->id, NULL, lib->id, in_conns[k], ins[k]);
  }
  WeirOpValue outs[3];
  assert_true(infer(lib, ins, 5, outs, 3, &error));
  const char *const out_names[] = {"y", "running_mean", "running_var"};
  for (guint k = 0; k < 3; k++) {
    WeirContainer *y =
        weir_graph_add_container(g, out_names[k], outs[k].dtype, outs[k].rank,
                                 outs[k].shape, FALSE, &error);
    weir_op_value_clear(&outs[k]);
    WeirNode *a = weir_state_add_access(g, s, out_names[k]);
    wire(g, s, lib->id, out_conns[k], a->id, NULL, y);
  }
  assert_int_equal(weir_graph_container(g, "y")->shape->len, 3);
  const WeirOpInfo *info = weir_op_lookup("BatchNormalization");
  g_autoptr(WeirExpr) flops = info->flops(g, s, lib);
  /* 9 per element of X (N * 4 of them), 11 per channel. */
  g_autoptr(GHashTable) b3 = weir_bindings_new();
  weir_bindings_set(b3, "N", 3);
  gint64 v = 0;
  assert_true(weir_expr_eval(flops, b3, &v, NULL));
  assert_int_equal(v, 9 * 12 + 11 * 2);

  assert_true(weir_expand_all(g, NULL, NULL, &error));
  assert_true(weir_graph_validate(g, &error));
  /* N = 2 gives the hand-computed case above. */
  const Case *c = &cases[7];
  g_autoptr(GHashTable) b2 = weir_bindings_new();
  weir_bindings_set(b2, "N", 2);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  gint64 xs[] = {2, 2, 2}, vs[] = {2};
  for (guint k = 0; k < 5; k++) {
    WeirTensor *t = weir_tensor_new(F64, k ? 1 : 3, k ? vs : xs);
    for (gint64 i = 0; i < t->count; i++)
      weir_tensor_set(t, i, c->ins[k].v[i]);
    g_hash_table_insert(args, (gpointer)names[k], t);
  }
  for (guint k = 0; k < 3; k++)
    g_hash_table_insert(args, (gpointer)out_names[k],
                        weir_tensor_new(F64, k ? 1 : 3, k ? vs : xs));
  assert_true(weir_interpret(g, b2, args, NULL, &error));
  for (guint k = 0; k < 3; k++) {
    const WeirTensor *t = g_hash_table_lookup(args, out_names[k]);
    for (gint64 i = 0; i < t->count; i++)
      assert_true(fabs(weir_tensor_get(t, i) - c->outs[k].v[i]) < 1e-12);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registered),
      cmocka_unit_test(test_attrs),
      cmocka_unit_test(test_infer_errors),
      cmocka_unit_test(test_cases_interp),
      cmocka_unit_test(test_batchnorm_symbolic),
      cmocka_unit_test(test_cases_compiled),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
