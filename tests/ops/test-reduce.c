/* test-reduce.c — the reduction family: schemas, inference, FLOPs and the
 * pure expansions run in the reference interpreter.
 *
 * Each expansion test builds a one-node program with the builder API
 * (access nodes -> library node -> access nodes, following the library-node
 * conventions of weir-ops.h), fills the defaults with weir_op_check_attrs,
 * expands it with weir_expand_all, checks that the result validates and has
 * no library node left, runs it on seeded random inputs and compares with a
 * reference computed here in plain C loops in double precision.  The
 * references are written from the ONNX definitions, independently of the
 * expansions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "weir-expand.h"
#include "weir-init.h"
#include "weir-interp.h"
#include "weir-ops.h"
#include "weir-validate.h"

#define MAXR 6

/* ------------------------------------------------------------ one case */

/* A program with one library node; inputs in0.. and outputs out0.. read
 * and write containers X0.. / Y0.. (shapes may use the symbol N). */
typedef struct {
  WeirGraph *g;
  WeirState *s;
  WeirNode *node;
  GHashTable *symbols;
  WeirTensor *in[4];
  WeirTensor *out[4];
} Case;

static Case *case_new(const char *op, const char *label, gint64 n_value) {
  Case *c = g_new0(Case, 1);
  c->g = weir_graph_new("test");
  c->s = weir_graph_add_state(c->g, "main");
  weir_graph_add_symbol(c->g, "N");
  c->node = weir_state_add_library(c->g, c->s, label, op, NULL, NULL);
  c->symbols = weir_bindings_new();
  weir_bindings_set(c->symbols, "N", n_value);
  return c;
}

static void case_free(Case *c) {
  weir_graph_free(c->g);
  g_hash_table_unref(c->symbols);
  for (guint k = 0; k < 4; k++) {
    g_clear_pointer(&c->in[k], weir_tensor_free);
    g_clear_pointer(&c->out[k], weir_tensor_free);
  }
  g_free(c);
}

static WeirTensor *new_tensor(Case *c, WeirContainer *ct) {
  gint64 dims[MAXR];
  for (guint d = 0; d < ct->shape->len; d++) {
    g_autoptr(GError) err = NULL;
    if (!weir_expr_eval(g_ptr_array_index(ct->shape, d), c->symbols, &dims[d],
                        &err))
      fail_msg("shape: %s", err->message);
  }
  return weir_tensor_new(ct->dtype, ct->shape->len, dims);
}

static WeirContainer *add_port(Case *c, gboolean input, guint k,
                               WeirDType dtype, const char *shape) {
  g_autoptr(GError) err = NULL;
  g_autofree char *name = g_strdup_printf(input ? "X%u" : "Y%u", k);
  g_autofree char *conn = g_strdup_printf(input ? "in%u" : "out%u", k);
  WeirContainer *ct =
      weir_graph_add_array(c->g, name, dtype, shape, FALSE, &err);
  if (!ct)
    fail_msg("container: %s", err->message);
  WeirNode *a = weir_state_add_access(c->g, c->s, name);
  g_autoptr(WeirSubset) full = weir_container_full_subset(ct);
  g_autofree char *sub = weir_subset_to_string(full);
  if (input) {
    weir_node_add_in_conn(c->node, conn);
    assert_non_null(weir_state_add_memlet(c->g, c->s, a->id, NULL, c->node->id,
                                          conn, name, sub, &err));
  } else {
    weir_node_add_out_conn(c->node, conn);
    assert_non_null(weir_state_add_memlet(c->g, c->s, c->node->id, conn, a->id,
                                          NULL, name, sub, &err));
  }
  return ct;
}

/* Input k with random data from seed. */
static WeirTensor *case_input(Case *c, guint k, WeirDType dtype,
                              const char *shape, guint64 seed) {
  WeirContainer *ct = add_port(c, TRUE, k, dtype, shape);
  c->in[k] = new_tensor(c, ct);
  weir_tensor_fill_random(c->in[k], seed);
  return c->in[k];
}

static WeirTensor *case_output(Case *c, guint k, WeirDType dtype,
                               const char *shape) {
  WeirContainer *ct = add_port(c, FALSE, k, dtype, shape);
  c->out[k] = new_tensor(c, ct);
  return c->out[k];
}

static void set_ints(Case *c, const char *name, guint n, ...) {
  gint64 v[MAXR * 2];
  va_list ap;
  va_start(ap, n);
  for (guint i = 0; i < n; i++)
    v[i] = va_arg(ap, int);
  va_end(ap);
  weir_node_set_attr_ints(c->node, name, v, n);
}

static gboolean has_library(const WeirGraph *g) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY)
        return TRUE;
    }
  }
  return FALSE;
}

/* Defaults, expansion, validation, interpretation. */
static void case_run(Case *c) {
  g_autoptr(GError) err = NULL;
  if (!weir_op_check_attrs(c->node, &err))
    fail_msg("check_attrs: %s", err->message);
  guint count = 0;
  if (!weir_expand_all(c->g, NULL, &count, &err))
    fail_msg("expand: %s", err->message);
  assert_int_equal(count, 1);
  assert_false(has_library(c->g));
  if (!weir_graph_validate(c->g, &err))
    fail_msg("validate: %s", err->message);
  g_autoptr(GHashTable) args = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint k = 0; k < 4; k++) {
    if (c->in[k])
      g_hash_table_insert(args, g_strdup_printf("X%u", k), c->in[k]);
    if (c->out[k])
      g_hash_table_insert(args, g_strdup_printf("Y%u", k), c->out[k]);
  }
  gboolean ok = weir_interpret(c->g, c->symbols, args, NULL, &err);
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, args);
  while (g_hash_table_iter_next(&it, &key, NULL))
    g_free(key);
  if (!ok)
    fail_msg("interpret: %s", err->message);
}

static void expect_close(const WeirTensor *got, const WeirTensor *want) {
  g_autoptr(GError) err = NULL;
  double rtol = got->dtype == WEIR_DTYPE_F32 ? 1e-5 : 1e-9;
  double atol = got->dtype == WEIR_DTYPE_F32 ? 1e-6 : 1e-12;
  if (!weir_tensor_allclose(got, want, rtol, atol, NULL, &err))
    fail_msg("mismatch: %s", err->message);
}

/* ---------------------------------------------------------- indexing */

static void unravel(const WeirTensor *t, gint64 flat, gint64 *idx) {
  for (guint d = t->rank; d-- > 0;) {
    idx[d] = flat % t->shape[d];
    flat /= t->shape[d];
  }
}

static gint64 ravel(const WeirTensor *t, const gint64 *idx) {
  gint64 flat = 0;
  for (guint d = 0; d < t->rank; d++)
    flat = flat * t->shape[d] + idx[d];
  return flat;
}

/* Index in y of element idx of x when dims `reduced` are reduced. */
static gint64 reduced_flat(const WeirTensor *y, const gint64 *idx, guint rank,
                           const gboolean *reduced, gboolean keepdims) {
  gint64 out[MAXR];
  guint r = 0;
  for (guint d = 0; d < rank; d++) {
    if (!reduced[d])
      out[r++] = idx[d];
    else if (keepdims)
      out[r++] = 0;
  }
  return ravel(y, out);
}

/* ------------------------------------------------------- schema tests */

static const char *attr_text(const WeirNode *n, const char *name) {
  static char buf[64];
  const WeirAttr *a = weir_node_attr(n, name);
  if (!a)
    return "absent";
  switch (a->type) {
  case WEIR_ATTR_INT:
    g_snprintf(buf, sizeof buf, "%" G_GINT64_FORMAT, a->i);
    break;
  case WEIR_ATTR_FLOAT:
    g_snprintf(buf, sizeof buf, "%g", a->f);
    break;
  case WEIR_ATTR_STRING:
    g_snprintf(buf, sizeof buf, "%s", a->s);
    break;
  default:
    g_snprintf(buf, sizeof buf, "list of %u", a->ints ? a->ints->len : 0);
  }
  return buf;
}

static void test_schema_defaults(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  Case *c = case_new("ReduceMean", "rm", 1);
  assert_true(weir_op_check_attrs(c->node, &err));
  assert_string_equal(attr_text(c->node, "keepdims"), "1");
  assert_string_equal(attr_text(c->node, "noop_with_empty_axes"), "0");
  assert_string_equal(attr_text(c->node, "axes"), "absent");
  case_free(c);

  c = case_new("ArgMin", "am", 1);
  assert_true(weir_op_check_attrs(c->node, &err));
  assert_string_equal(attr_text(c->node, "axis"), "0");
  assert_string_equal(attr_text(c->node, "select_last_index"), "0");
  case_free(c);

  c = case_new("Softmax", "sm", 1);
  assert_true(weir_op_check_attrs(c->node, &err));
  assert_string_equal(attr_text(c->node, "axis"), "-1");
  assert_string_equal(attr_text(c->node, "legacy_2d"), "0");
  case_free(c);

  c = case_new("LayerNormalization", "ln", 1);
  assert_true(weir_op_check_attrs(c->node, &err));
  assert_string_equal(attr_text(c->node, "epsilon"), "1e-05");
  assert_string_equal(attr_text(c->node, "stash_type"), "1");
  case_free(c);

  c = case_new("AveragePool", "ap", 1);
  assert_false(weir_op_check_attrs(c->node, &err)); /* kernel_shape */
  assert_non_null(strstr(err->message, "kernel_shape"));
  g_clear_error(&err);
  set_ints(c, "kernel_shape", 2, 2, 2);
  assert_true(weir_op_check_attrs(c->node, &err));
  assert_string_equal(attr_text(c->node, "auto_pad"), "NOTSET");
  assert_string_equal(attr_text(c->node, "count_include_pad"), "0");
  assert_string_equal(attr_text(c->node, "pads"), "absent");
  case_free(c);

  /* Axes come from input 2 in newer opsets. */
  const WeirOpInfo *sum = weir_op_lookup("ReduceSum");
  const WeirOpInfo *l2 = weir_op_lookup("ReduceL2");
  assert_non_null(sum);
  assert_non_null(l2);
  for (guint i = 0; i < sum->n_attrs; i++)
    if (strcmp(sum->attrs[i].name, "axes") == 0) {
      assert_int_equal(sum->attrs[i].from_input, 2);
      assert_int_equal(sum->attrs[i].input_since, 13);
    }
  for (guint i = 0; i < l2->n_attrs; i++)
    if (strcmp(l2->attrs[i].name, "axes") == 0)
      assert_int_equal(l2->attrs[i].input_since, 18);
  g_autoptr(GPtrArray) names = weir_op_names();
  guint found = 0;
  const char *ours[] = {"ReduceSum",
                        "ReduceMean",
                        "ReduceMax",
                        "ReduceMin",
                        "ReduceProd",
                        "ReduceL1",
                        "ReduceL2",
                        "ReduceSumSquare",
                        "ReduceLogSumExp",
                        "ArgMax",
                        "ArgMin",
                        "Softmax",
                        "LogSoftmax",
                        "LayerNormalization",
                        "GlobalAveragePool",
                        "GlobalMaxPool",
                        "MaxPool",
                        "AveragePool"};
  for (guint i = 0; i < names->len; i++)
    for (guint k = 0; k < G_N_ELEMENTS(ours); k++)
      found += strcmp(g_ptr_array_index(names, i), ours[k]) == 0;
  assert_int_equal(found, G_N_ELEMENTS(ours));
  weir_init();
  for (guint k = 0; k < G_N_ELEMENTS(ours); k++)
    assert_non_null(weir_op_expansion(ours[k], "pure"));
}

/* ---------------------------------------------------- inference tests */

/* Runs the op's inference on inputs given as "f32:N, 4, 5" (NULL entries
 * are omitted inputs) and returns the outputs as "f32[N, 1, 5]; ..." or the
 * error message. */
static char *infer(const WeirNode *node, guint n_in, const char *const *ins,
                   guint n_out) {
  const WeirOpInfo *info = weir_op_lookup(node->op);
  assert_non_null(info);
  WeirOpValue in[4] = {0}, out[4] = {0};
  WeirExpr *exprs[4][MAXR] = {{0}};
  for (guint k = 0; k < n_in; k++) {
    if (!ins[k])
      continue;
    g_auto(GStrv) parts = g_strsplit(ins[k], ":", 2);
    in[k].present = TRUE;
    assert_true(weir_dtype_from_name(parts[0], &in[k].dtype));
    g_auto(GStrv) dims = g_strsplit(parts[1], ",", -1);
    in[k].rank = *parts[1] ? g_strv_length(dims) : 0;
    for (guint d = 0; d < in[k].rank; d++) {
      exprs[k][d] = weir_expr_parse(dims[d], NULL);
      assert_non_null(exprs[k][d]);
    }
    in[k].shape = exprs[k];
  }
  WeirOpInferContext ctx = {node, n_in, in, n_out, out, NULL};
  g_autoptr(GError) err = NULL;
  GString *res = g_string_new(NULL);
  if (!info->infer(&ctx, &err)) {
    g_string_append(res, err->message);
  } else {
    for (guint k = 0; k < n_out; k++) {
      g_string_append_printf(res, "%s%s[", k ? "; " : "",
                             weir_dtype_name(out[k].dtype));
      for (guint d = 0; d < out[k].rank; d++) {
        g_autofree char *t = weir_expr_to_string(out[k].shape[d]);
        g_string_append_printf(res, "%s%s", d ? ", " : "", t);
      }
      g_string_append_c(res, ']');
    }
  }
  for (guint k = 0; k < 4; k++) {
    weir_op_value_clear(&out[k]);
    for (guint d = 0; d < MAXR; d++)
      if (exprs[k][d])
        weir_expr_unref(exprs[k][d]);
  }
  return g_string_free(res, FALSE);
}

#define INFER1(node, x) infer(node, 1, (const char *const[]){x}, 1)

static void expect_infer(char *got, const char *want) {
  if (strstr(got, want) == NULL)
    fail_msg("inference gave '%s', expected '%s'", got, want);
  g_free(got);
}

static void test_infer_reduce(void **state) {
  (void)state;
  Case *c = case_new("ReduceSum", "r1", 1);
  assert_true(weir_op_check_attrs(c->node, NULL));
  expect_infer(INFER1(c->node, "f32:N, 4, 5"), "f32[1, 1, 1]");
  set_ints(c, "axes", 1, 1);
  expect_infer(INFER1(c->node, "f32:N, 4, 5"), "f32[N, 1, 5]");
  set_ints(c, "axes", 2, -1, 0);
  weir_node_set_attr_int(c->node, "keepdims", 0);
  expect_infer(INFER1(c->node, "i64:N, 4, 5"), "i64[4]");
  set_ints(c, "axes", 1, 3);
  expect_infer(INFER1(c->node, "f32:N, 4, 5"),
               "node 'r1' (ReduceSum): axis 3 is out of range");
  set_ints(c, "axes", 2, 1, -2);
  expect_infer(INFER1(c->node, "f32:N, 4, 5"), "axis 1 is given twice");
  set_ints(c, "axes", 0);
  weir_node_set_attr_int(c->node, "noop_with_empty_axes", 1);
  expect_infer(INFER1(c->node, "f64:N, 4, 5"), "f64[N, 4, 5]");
  expect_infer(INFER1(c->node, "bool:N, 4"), "dtype bool");
  expect_infer(infer(c->node, 2, (const char *const[]){"f32:4", "i64:1"}, 1),
               "axes given as input 1");
  case_free(c);

  c = case_new("ReduceMax", "r2", 1);
  assert_true(weir_op_check_attrs(c->node, NULL));
  weir_node_set_attr_int(c->node, "keepdims", 0);
  expect_infer(INFER1(c->node, "u8:N, 4"), "u8[]");
  case_free(c);

  c = case_new("ArgMax", "a1", 1);
  assert_true(weir_op_check_attrs(c->node, NULL));
  weir_node_set_attr_int(c->node, "axis", -1);
  expect_infer(INFER1(c->node, "f32:N, 4, 5"), "i64[N, 4, 1]");
  weir_node_set_attr_int(c->node, "keepdims", 0);
  expect_infer(INFER1(c->node, "f32:N, 4, 5"), "i64[N, 4]");
  weir_node_set_attr_int(c->node, "axis", -4);
  expect_infer(INFER1(c->node, "f32:N, 4, 5"), "axis -4 is out of range");
  case_free(c);

  c = case_new("LogSoftmax", "s1", 1);
  assert_true(weir_op_check_attrs(c->node, NULL));
  expect_infer(INFER1(c->node, "f64:N, 7"), "f64[N, 7]");
  expect_infer(INFER1(c->node, "i32:N, 7"), "dtype i32");
  case_free(c);

  c = case_new("LayerNormalization", "ln", 1);
  assert_true(weir_op_check_attrs(c->node, NULL));
  weir_node_set_attr_int(c->node, "axis", 1);
  expect_infer(infer(c->node, 3,
                     (const char *const[]){"f64:N, 4, 5", "f64:4, 5", "f64:5"},
                     3),
               "f64[N, 4, 5]; f32[N, 1, 1]; f32[N, 1, 1]");
  expect_infer(
      infer(c->node, 2, (const char *const[]){"f32:N, 4, 5", "f32:3, 5"}, 1),
      "input 1 does not broadcast to input 0");
  expect_infer(
      infer(c->node, 2, (const char *const[]){"f32:N, 4, 5", "f64:5"}, 1),
      "input 1 has dtype f64, input 0 f32");
  case_free(c);

  c = case_new("GlobalAveragePool", "gp", 1);
  expect_infer(INFER1(c->node, "f32:N, 3, 7, 9"), "f32[N, 3, 1, 1]");
  case_free(c);
}

static void test_infer_pool(void **state) {
  (void)state;
  Case *c = case_new("MaxPool", "pool1", 1);
  set_ints(c, "kernel_shape", 2, 3, 3);
  assert_true(weir_op_check_attrs(c->node, NULL));
  expect_infer(INFER1(c->node, "f32:N, 3, 32, 32"), "f32[N, 3, 30, 30]");
  set_ints(c, "strides", 2, 2, 2);
  set_ints(c, "pads", 4, 1, 1, 1, 1);
  expect_infer(INFER1(c->node, "f32:N, 3, 32, 31"), "f32[N, 3, 16, 16]");
  weir_node_set_attr_int(c->node, "ceil_mode", 1);
  set_ints(c, "pads", 4, 0, 0, 0, 0);
  /* floor: 15, ceil: 16 for 32; 31 -> 15 both ways */
  expect_infer(INFER1(c->node, "f32:N, 3, 32, 31"), "f32[N, 3, 16, 15]");
  /* ceil_mode must not start a window in the end padding: in 5, k 2,
   * s 2, pads 0/1 -> ceil((5 + 1 - 2) / 2) + 1 = 3, last start 4 < 5. */
  set_ints(c, "kernel_shape", 1, 2);
  set_ints(c, "strides", 1, 2);
  set_ints(c, "pads", 2, 0, 1);
  expect_infer(INFER1(c->node, "f32:1, 1, 5"), "f32[1, 1, 3]");
  /* in 4, k 1, s 2, pads 0/2: ceil((4+2-1)/2)+1 = 4 but start 6 >= 4. */
  set_ints(c, "kernel_shape", 1, 1);
  set_ints(c, "pads", 2, 0, 2);
  expect_infer(INFER1(c->node, "f32:1, 1, 4"), "f32[1, 1, 3]");
  weir_node_set_attr_string(c->node, "auto_pad", "SAME_UPPER");
  set_ints(c, "kernel_shape", 1, 3);
  expect_infer(INFER1(c->node, "f32:1, 1, N"), "f32[1, 1, (N + 1) // 2]");
  weir_node_set_attr_string(c->node, "auto_pad", "VALID");
  weir_node_set_attr_int(c->node, "ceil_mode", 0);
  expect_infer(INFER1(c->node, "f32:1, 1, 9"), "f32[1, 1, 4]");
  weir_node_set_attr_string(c->node, "auto_pad", "FOO");
  expect_infer(INFER1(c->node, "f32:1, 1, 9"), "auto_pad 'FOO'");
  weir_node_set_attr_string(c->node, "auto_pad", "NOTSET");
  expect_infer(INFER1(c->node, "f32:1, 9"),
               "node 'pool1' (MaxPool): input 0 has rank 2");
  expect_infer(INFER1(c->node, "f32:1, 1, 9, 9"),
               "'kernel_shape' has 1 values, expected 2");
  set_ints(c, "kernel_shape", 1, 12);
  expect_infer(INFER1(c->node, "f32:1, 1, 9"), "does not fit");
  case_free(c);

  c = case_new("AveragePool", "pool2", 1);
  set_ints(c, "kernel_shape", 3, 2, 2, 2);
  set_ints(c, "dilations", 3, 1, 2, 1);
  assert_true(weir_op_check_attrs(c->node, NULL));
  expect_infer(INFER1(c->node, "f64:N, 2, 5, 6, 7"), "f64[N, 2, 4, 4, 6]");
  expect_infer(INFER1(c->node, "u8:N, 2, 5, 6, 7"), "dtype u8");
  case_free(c);
}

static void test_flops(void **state) {
  (void)state;
  Case *c = case_new("ReduceL2", "r", 1);
  case_input(c, 0, WEIR_DTYPE_F32, "N, 4, 5", 1);
  case_output(c, 0, WEIR_DTYPE_F32, "N, 1, 5");
  const WeirOpInfo *info = weir_op_lookup("ReduceL2");
  g_autoptr(WeirExpr) f = info->flops(c->g, c->s, c->node);
  g_autofree char *t = weir_expr_to_string(f);
  assert_string_equal(t, "45*N"); /* 2 per element + sqrt per output */
  case_free(c);

  c = case_new("MaxPool", "p", 1);
  set_ints(c, "kernel_shape", 2, 3, 3);
  case_input(c, 0, WEIR_DTYPE_F32, "N, 2, 5, 5", 1);
  case_output(c, 0, WEIR_DTYPE_F32, "N, 2, 3, 3");
  info = weir_op_lookup("MaxPool");
  g_autoptr(WeirExpr) f2 = info->flops(c->g, c->s, c->node);
  g_autofree char *t2 = weir_expr_to_string(f2);
  assert_string_equal(t2, "162*N");
  case_free(c);
}

/* ------------------------------------------------------ Reduce* runs */

typedef enum {
  K_SUM,
  K_MEAN,
  K_MAX,
  K_MIN,
  K_PROD,
  K_L1,
  K_L2,
  K_SUMSQ,
  K_LSE
} Kind;

static const char *const kind_ops[] = {
    "ReduceSum", "ReduceMean",      "ReduceMax",
    "ReduceMin", "ReduceProd",      "ReduceL1",
    "ReduceL2",  "ReduceSumSquare", "ReduceLogSumExp"};

static WeirTensor *ref_reduce(Kind kind, const WeirTensor *x,
                              const gboolean *reduced, gboolean keepdims,
                              WeirDType dtype) {
  gint64 shape[MAXR];
  guint r = 0;
  for (guint d = 0; d < x->rank; d++) {
    if (!reduced[d])
      shape[r++] = x->shape[d];
    else if (keepdims)
      shape[r++] = 1;
  }
  WeirTensor *y = weir_tensor_new(dtype, r, shape);
  double *acc = g_new0(double, y->count);
  double *mx = g_new0(double, y->count);
  gint64 *cnt = g_new0(gint64, y->count);
  for (gint64 i = 0; i < y->count; i++)
    mx[i] = -INFINITY;
  for (gint64 i = 0; i < x->count; i++) {
    gint64 idx[MAXR];
    unravel(x, i, idx);
    gint64 o = reduced_flat(y, idx, x->rank, reduced, keepdims);
    mx[o] = fmax(mx[o], weir_tensor_get(x, i));
  }
  for (gint64 i = 0; i < x->count; i++) {
    gint64 idx[MAXR];
    unravel(x, i, idx);
    gint64 o = reduced_flat(y, idx, x->rank, reduced, keepdims);
    double v = weir_tensor_get(x, i);
    if (cnt[o] == 0)
      acc[o] = kind == K_PROD  ? 1
               : kind == K_MIN ? INFINITY
               : kind == K_MAX ? -INFINITY
                               : 0;
    cnt[o]++;
    switch (kind) {
    case K_SUM:
    case K_MEAN:
      acc[o] += v;
      break;
    case K_MAX:
      acc[o] = fmax(acc[o], v);
      break;
    case K_MIN:
      acc[o] = fmin(acc[o], v);
      break;
    case K_PROD:
      acc[o] *= v;
      break;
    case K_L1:
      acc[o] += fabs(v);
      break;
    case K_L2:
    case K_SUMSQ:
      acc[o] += v * v;
      break;
    case K_LSE:
      acc[o] += exp(v - mx[o]);
      break;
    }
  }
  for (gint64 o = 0; o < y->count; o++) {
    double v = acc[o];
    if (kind == K_MEAN)
      v = weir_dtype_is_float(dtype) ? v / cnt[o] : trunc(v / cnt[o]);
    else if (kind == K_L2)
      v = sqrt(v);
    else if (kind == K_LSE)
      v = log(v) + mx[o];
    weir_tensor_set(y, o, v);
  }
  g_free(acc);
  g_free(mx);
  g_free(cnt);
  return y;
}

typedef struct {
  guint n_axes;
  gint64 axes[3];
  gboolean keepdims;
} AxesCase;

static void run_reduce(Kind kind, WeirDType dtype, const char *shape,
                       gint64 n_value, const AxesCase *ac, guint64 seed) {
  Case *c = case_new(kind_ops[kind], "red", n_value);
  WeirTensor *x = case_input(c, 0, dtype, shape, seed);
  gboolean reduced[MAXR] = {0};
  for (guint i = 0; i < ac->n_axes; i++)
    reduced[(ac->axes[i] + x->rank) % x->rank] = TRUE;
  if (ac->n_axes == 0)
    for (guint d = 0; d < x->rank; d++)
      reduced[d] = TRUE;
  /* Output shape text from the input's. */
  g_auto(GStrv) dims = g_strsplit(shape, ",", -1);
  GString *ys = g_string_new(NULL);
  for (guint d = 0; d < x->rank; d++) {
    if (reduced[d] && !ac->keepdims)
      continue;
    g_string_append_printf(ys, "%s%s", ys->len ? ", " : "",
                           reduced[d] ? "1" : dims[d]);
  }
  case_output(c, 0, dtype, ys->str);
  g_string_free(ys, TRUE);
  weir_node_set_attr_ints(c->node, "axes", ac->axes, ac->n_axes);
  weir_node_set_attr_int(c->node, "keepdims", ac->keepdims);
  case_run(c);
  g_autoptr(WeirTensor) want =
      ref_reduce(kind, x, reduced, ac->keepdims, dtype);
  expect_close(c->out[0], want);
  case_free(c);
}

static void test_reduce_float(void **state) {
  (void)state;
  const AxesCase cases[] = {
      {1, {1}, TRUE}, {2, {0, 2}, TRUE}, {1, {-1}, FALSE},
      {0, {0}, TRUE}, {0, {0}, FALSE},   {3, {2, 0, 1}, FALSE},
  };
  for (guint k = K_SUM; k <= K_LSE; k++)
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
      run_reduce(k, WEIR_DTYPE_F32, "N, 4, 5", 3, &cases[i], 10 + i);
      run_reduce(k, WEIR_DTYPE_F64, "2, N, 3", 4, &cases[i], 20 + i);
    }
}

static void test_reduce_int(void **state) {
  (void)state;
  const AxesCase cases[] = {{1, {0}, TRUE}, {1, {-1}, FALSE}, {0, {0}, FALSE}};
  for (guint k = K_SUM; k <= K_LSE; k++)
    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
      if (k == K_PROD && i == 2)
        continue; /* the product of 12 digits overflows i32 */
      run_reduce(k, WEIR_DTYPE_I32, "3, N", 4, &cases[i], 30 + i);
      run_reduce(k, WEIR_DTYPE_I64, "N, 2, 2", 3, &cases[i], 40 + i);
    }
  /* ReduceMax / ReduceMin accept u8 and bool. */
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    run_reduce(K_MAX, WEIR_DTYPE_U8, "3, N", 4, &cases[i], 50 + i);
    run_reduce(K_MIN, WEIR_DTYPE_U8, "3, N", 4, &cases[i], 50 + i);
    run_reduce(K_MAX, WEIR_DTYPE_BOOL, "3, N", 4, &cases[i], 60 + i);
    run_reduce(K_MIN, WEIR_DTYPE_BOOL, "3, N", 4, &cases[i], 60 + i);
  }
}

static void test_reduce_special(void **state) {
  (void)state;
  /* noop_with_empty_axes copies the input. */
  Case *c = case_new("ReduceSumSquare", "noop", 2);
  WeirTensor *x = case_input(c, 0, WEIR_DTYPE_F32, "N, 3", 5);
  case_output(c, 0, WEIR_DTYPE_F32, "N, 3");
  weir_node_set_attr_int(c->node, "noop_with_empty_axes", 1);
  case_run(c);
  expect_close(c->out[0], x);
  case_free(c);

  /* A scalar input reduces to itself. */
  c = case_new("ReduceL2", "scalar", 1);
  x = case_input(c, 0, WEIR_DTYPE_F64, "", 6);
  case_output(c, 0, WEIR_DTYPE_F64, "");
  case_run(c);
  assert_true(fabs(weir_tensor_get(c->out[0], 0) -
                   fabs(weir_tensor_get(x, 0))) < 1e-12);
  case_free(c);

  /* LogSumExp stays finite for large inputs and handles -inf. */
  c = case_new("ReduceLogSumExp", "lse", 1);
  x = case_input(c, 0, WEIR_DTYPE_F32, "2, 3", 7);
  case_output(c, 0, WEIR_DTYPE_F32, "2");
  set_ints(c, "axes", 1, 1);
  weir_node_set_attr_int(c->node, "keepdims", 0);
  const double v[] = {1000, 1000, 1000, -INFINITY, -INFINITY, -INFINITY};
  for (guint i = 0; i < 6; i++)
    weir_tensor_set(x, i, v[i]);
  case_run(c);
  assert_true(fabs(weir_tensor_get(c->out[0], 0) - (1000 + log(3.0))) < 1e-3);
  assert_true(isinf(weir_tensor_get(c->out[0], 1)) &&
              weir_tensor_get(c->out[0], 1) < 0);
  case_free(c);

  /* The expansion refuses a wrong output shape, naming the node. */
  c = case_new("ReduceSum", "bad", 1);
  case_input(c, 0, WEIR_DTYPE_F32, "2, 3", 1);
  case_output(c, 0, WEIR_DTYPE_F32, "2");
  assert_true(weir_op_check_attrs(c->node, NULL));
  g_autoptr(GError) err = NULL;
  assert_false(weir_expand_all(c->g, NULL, NULL, &err));
  assert_non_null(strstr(err->message, "node 'bad' (ReduceSum)"));
  assert_non_null(strstr(err->message, "has rank 1, expected 2"));
  assert_true(has_library(c->g)); /* unchanged */
  case_free(c);
}

/* --------------------------------------------------------- Arg* runs */

static void run_arg(const char *op, WeirDType dtype, gint64 axis,
                    gboolean keepdims, gboolean last, guint64 seed) {
  Case *c = case_new(op, "arg", 3);
  WeirTensor *x = case_input(c, 0, dtype, "N, 4, 5", seed);
  guint ax = (guint)((axis + 3) % 3);
  const char *full[] = {"N", "4", "5"};
  GString *ys = g_string_new(NULL);
  for (guint d = 0; d < 3; d++) {
    if (d == ax && !keepdims)
      continue;
    g_string_append_printf(ys, "%s%s", ys->len ? ", " : "",
                           d == ax ? "1" : full[d]);
  }
  case_output(c, 0, WEIR_DTYPE_I64, ys->str);
  g_string_free(ys, TRUE);
  weir_node_set_attr_int(c->node, "axis", axis);
  weir_node_set_attr_int(c->node, "keepdims", keepdims);
  weir_node_set_attr_int(c->node, "select_last_index", last);
  case_run(c);

  gboolean is_max = strcmp(op, "ArgMax") == 0;
  gboolean reduced[3] = {0};
  reduced[ax] = TRUE;
  g_autoptr(WeirTensor) want = weir_tensor_copy(c->out[0]);
  for (gint64 o = 0; o < want->count; o++)
    weir_tensor_set(want, o, -1);
  /* Scan each slice in order, keeping the first / last extreme. */
  for (gint64 i = 0; i < x->count; i++) {
    gint64 idx[MAXR];
    unravel(x, i, idx);
    gint64 o = reduced_flat(want, idx, 3, reduced, keepdims);
    gint64 best = (gint64)weir_tensor_get(want, o);
    double v = weir_tensor_get(x, i);
    gboolean better = TRUE;
    if (best >= 0) {
      gint64 bidx[MAXR];
      memcpy(bidx, idx, sizeof bidx);
      bidx[ax] = best;
      double b = weir_tensor_get(x, ravel(x, bidx));
      better = is_max ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
    }
    if (better)
      weir_tensor_set(want, o, (double)idx[ax]);
  }
  expect_close(c->out[0], want);
  case_free(c);
}

static void test_argmax_argmin(void **state) {
  (void)state;
  const char *ops[] = {"ArgMax", "ArgMin"};
  const WeirDType types[] = {WEIR_DTYPE_F32, WEIR_DTYPE_I32, WEIR_DTYPE_U8,
                             WEIR_DTYPE_I64, WEIR_DTYPE_F64};
  guint64 seed = 100;
  for (guint o = 0; o < 2; o++)
    for (guint t = 0; t < G_N_ELEMENTS(types); t++)
      for (gint64 axis = -1; axis <= 2; axis++)
        for (guint flags = 0; flags < 4; flags++)
          run_arg(ops[o], types[t], axis, flags & 1, (flags & 2) != 0, seed++);
}

/* ------------------------------------------------------ Softmax runs */

static void run_softmax(const char *op, gint64 axis, gboolean legacy,
                        WeirDType dtype, guint64 seed) {
  Case *c = case_new(op, "softmax", 2);
  WeirTensor *x = case_input(c, 0, dtype, "N, 3, 4", seed);
  case_output(c, 0, dtype, "N, 3, 4");
  weir_node_set_attr_int(c->node, "axis", axis);
  weir_node_set_attr_int(c->node, "legacy_2d", legacy);
  case_run(c);
  guint ax = (guint)((axis + 3) % 3);
  /* As a 2-D problem: rows x cols, where cols are the reduced axes
   * (axis alone, or axis..end for legacy) and the others index rows. */
  gboolean reduced[3] = {0};
  for (guint d = ax; d < (legacy ? 3 : ax + 1); d++)
    reduced[d] = TRUE;
  gint64 kshape[3];
  for (guint d = 0; d < 3; d++)
    kshape[d] = reduced[d] ? 1 : x->shape[d];
  g_autoptr(WeirTensor) mx = weir_tensor_new(WEIR_DTYPE_F64, 3, kshape);
  g_autoptr(WeirTensor) sum = weir_tensor_new(WEIR_DTYPE_F64, 3, kshape);
  for (gint64 i = 0; i < mx->count; i++)
    weir_tensor_set(mx, i, -INFINITY);
  for (gint64 i = 0; i < x->count; i++) {
    gint64 idx[MAXR];
    unravel(x, i, idx);
    gint64 o = reduced_flat(mx, idx, 3, reduced, TRUE);
    weir_tensor_set(mx, o, fmax(weir_tensor_get(mx, o), weir_tensor_get(x, i)));
  }
  for (gint64 i = 0; i < x->count; i++) {
    gint64 idx[MAXR];
    unravel(x, i, idx);
    gint64 o = reduced_flat(mx, idx, 3, reduced, TRUE);
    weir_tensor_set(sum, o,
                    weir_tensor_get(sum, o) +
                        exp(weir_tensor_get(x, i) - weir_tensor_get(mx, o)));
  }
  g_autoptr(WeirTensor) want = weir_tensor_copy(x);
  for (gint64 i = 0; i < x->count; i++) {
    gint64 idx[MAXR];
    unravel(x, i, idx);
    gint64 o = reduced_flat(mx, idx, 3, reduced, TRUE);
    double e = weir_tensor_get(x, i) - weir_tensor_get(mx, o);
    double z = weir_tensor_get(sum, o);
    weir_tensor_set(want, i,
                    strcmp(op, "Softmax") == 0 ? exp(e) / z : e - log(z));
  }
  expect_close(c->out[0], want);
  case_free(c);
}

static void test_softmax(void **state) {
  (void)state;
  const char *ops[] = {"Softmax", "LogSoftmax"};
  guint64 seed = 200;
  for (guint o = 0; o < 2; o++)
    for (gint64 axis = -3; axis <= 2; axis++) {
      run_softmax(ops[o], axis, FALSE, WEIR_DTYPE_F32, seed++);
      run_softmax(ops[o], axis, TRUE, WEIR_DTYPE_F64, seed++);
    }
}

/* ----------------------------------------------- LayerNormalization */

static void run_layernorm(gint64 axis, const char *scale_shape,
                          const char *bias_shape, gboolean stats,
                          WeirDType dtype, guint64 seed) {
  Case *c = case_new("LayerNormalization", "ln", 2);
  WeirTensor *x = case_input(c, 0, dtype, "N, 3, 4", seed);
  WeirTensor *sc = case_input(c, 1, dtype, scale_shape, seed + 1);
  WeirTensor *b =
      bias_shape ? case_input(c, 2, dtype, bias_shape, seed + 2) : NULL;
  case_output(c, 0, dtype, "N, 3, 4");
  guint ax = (guint)((axis + 3) % 3);
  const char *kshapes[] = {"1, 1, 1", "N, 1, 1", "N, 3, 1"};
  if (stats) {
    case_output(c, 1, WEIR_DTYPE_F32, kshapes[ax]);
    case_output(c, 2, WEIR_DTYPE_F32, kshapes[ax]);
  }
  weir_node_set_attr_int(c->node, "axis", axis);
  weir_node_set_attr_float(c->node, "epsilon", 1e-3);
  case_run(c);

  gboolean reduced[3] = {0};
  for (guint d = ax; d < 3; d++)
    reduced[d] = TRUE;
  g_autoptr(WeirTensor) mean = weir_tensor_new(
      WEIR_DTYPE_F64, 3,
      (gint64[]){ax > 0 ? x->shape[0] : 1, ax > 1 ? x->shape[1] : 1, 1});
  g_autoptr(WeirTensor) var = weir_tensor_copy(mean);
  gint64 n = 1;
  for (guint d = ax; d < 3; d++)
    n *= x->shape[d];
  for (gint64 i = 0; i < x->count; i++) {
    gint64 idx[MAXR];
    unravel(x, i, idx);
    gint64 o = reduced_flat(mean, idx, 3, reduced, TRUE);
    weir_tensor_set(
        mean, o, weir_tensor_get(mean, o) + weir_tensor_get(x, i) / (double)n);
  }
  for (gint64 i = 0; i < x->count; i++) {
    gint64 idx[MAXR];
    unravel(x, i, idx);
    gint64 o = reduced_flat(mean, idx, 3, reduced, TRUE);
    double d = weir_tensor_get(x, i) - weir_tensor_get(mean, o);
    weir_tensor_set(var, o, weir_tensor_get(var, o) + d * d / (double)n);
  }
  g_autoptr(WeirTensor) want = weir_tensor_copy(x);
  for (gint64 i = 0; i < x->count; i++) {
    gint64 idx[MAXR];
    unravel(x, i, idx);
    gint64 o = reduced_flat(mean, idx, 3, reduced, TRUE);
    /* Scale and B broadcast from the right (size-1 dims read index 0). */
    gint64 si[MAXR], bi[MAXR];
    for (guint d = 0; d < sc->rank; d++) {
      guint xd = 3 - sc->rank + d;
      si[d] = sc->shape[d] == 1 ? 0 : idx[xd];
    }
    double y = (weir_tensor_get(x, i) - weir_tensor_get(mean, o)) /
               sqrt(weir_tensor_get(var, o) + 1e-3) *
               weir_tensor_get(sc, ravel(sc, si));
    if (b) {
      for (guint d = 0; d < b->rank; d++) {
        guint xd = 3 - b->rank + d;
        bi[d] = b->shape[d] == 1 ? 0 : idx[xd];
      }
      y += weir_tensor_get(b, ravel(b, bi));
    }
    weir_tensor_set(want, i, y);
  }
  expect_close(c->out[0], want);
  if (stats) {
    g_autoptr(WeirTensor) m32 = weir_tensor_copy(c->out[1]);
    g_autoptr(WeirTensor) i32 = weir_tensor_copy(c->out[2]);
    for (gint64 o = 0; o < m32->count; o++) {
      weir_tensor_set(m32, o, weir_tensor_get(mean, o));
      weir_tensor_set(i32, o, 1 / sqrt(weir_tensor_get(var, o) + 1e-3));
    }
    expect_close(c->out[1], m32);
    expect_close(c->out[2], i32);
  }
  case_free(c);
}

static void test_layernorm(void **state) {
  (void)state;
  run_layernorm(-1, "4", "4", FALSE, WEIR_DTYPE_F32, 300);
  run_layernorm(-1, "4", NULL, TRUE, WEIR_DTYPE_F64, 310);
  run_layernorm(1, "3, 4", "1, 4", TRUE, WEIR_DTYPE_F32, 320);
  run_layernorm(0, "3, 4", "3, 1", TRUE, WEIR_DTYPE_F64, 330);
  run_layernorm(-2, "1", NULL, FALSE, WEIR_DTYPE_F32, 340);
}

/* ------------------------------------------------------------ pooling */

typedef struct {
  guint m;      /* spatial dims */
  gint64 in[3]; /* spatial input sizes */
  gint64 k[3], s[3], dil[3];
  gint64 pads[6]; /* explicit pads (NOTSET) */
  const char *auto_pad;
  gboolean ceil_mode, include_pad;
  gint64 out[3]; /* expected output sizes */
} PoolCase;

/* Pads actually used for dimension d (begin, end). */
static void ref_pads(const PoolCase *p, guint d, gint64 *pb, gint64 *pe) {
  if (strcmp(p->auto_pad, "NOTSET") == 0) {
    *pb = p->pads[d];
    *pe = p->pads[d + p->m];
    return;
  }
  if (strcmp(p->auto_pad, "VALID") == 0) {
    *pb = *pe = 0;
    return;
  }
  gint64 total =
      (p->out[d] - 1) * p->s[d] + (p->k[d] - 1) * p->dil[d] + 1 - p->in[d];
  if (total < 0)
    total = 0;
  *pb = strcmp(p->auto_pad, "SAME_UPPER") == 0 ? total / 2 : total - total / 2;
  *pe = total - *pb;
}

/* ONNX's flat index of element xi of x: row major over the whole tensor
 * (order 0), or column major over the spatial axes of each (n, c) plane
 * (order 1). */
static gint64 ref_flat_index(const WeirTensor *x, const gint64 *xi,
                             gint64 order) {
  if (order == 0)
    return ravel(x, xi);
  gint64 plane = 1, s = 0;
  for (guint d = 2; d < x->rank; d++)
    plane *= x->shape[d];
  for (guint d = x->rank; d-- > 2;)
    s = s * x->shape[d] + xi[d];
  return (xi[0] * x->shape[1] + xi[1]) * plane + s;
}

/* The pooling of x (reference), shaped like y; for MaxPool with `ind`
 * (shaped like y, i64), also the indices of the maxima in storage order
 * `order` (the smallest index among equal maxima). */
static WeirTensor *ref_pool(const char *op, const PoolCase *p,
                            const WeirTensor *x, const WeirTensor *y,
                            WeirTensor *ind, gint64 order) {
  gboolean is_max = strcmp(op, "MaxPool") == 0;
  WeirTensor *want = weir_tensor_copy(y);
  for (gint64 o = 0; o < y->count; o++) {
    gint64 oi[MAXR];
    unravel(y, o, oi);
    gint64 best = G_MAXINT64;
    double acc = is_max ? -INFINITY : 0;
    gint64 inside = 0, padded = 1;
    /* Count of taps inside [-pb, in + pe) per dim, for include_pad. */
    for (guint d = 0; d < p->m; d++) {
      gint64 pb, pe, n = 0;
      ref_pads(p, d, &pb, &pe);
      for (gint64 k = 0; k < p->k[d]; k++) {
        gint64 pos = oi[2 + d] * p->s[d] - pb + k * p->dil[d];
        n += pos >= -pb && pos < p->in[d] + pe;
      }
      padded *= n;
    }
    gint64 taps = 1;
    for (guint d = 0; d < p->m; d++)
      taps *= p->k[d];
    for (gint64 t = 0; t < taps; t++) {
      gint64 rem = t, xi[MAXR] = {oi[0], oi[1]};
      gboolean ok = TRUE;
      for (guint d = p->m; d-- > 0;) {
        gint64 k = rem % p->k[d], pb, pe;
        rem /= p->k[d];
        ref_pads(p, d, &pb, &pe);
        xi[2 + d] = oi[2 + d] * p->s[d] - pb + k * p->dil[d];
        ok = ok && xi[2 + d] >= 0 && xi[2 + d] < p->in[d];
      }
      if (!ok)
        continue;
      double v = weir_tensor_get(x, ravel(x, xi));
      gint64 at = ref_flat_index(x, xi, order);
      if (is_max && (v > acc || (v == acc && at < best)))
        best = at;
      acc = is_max ? fmax(acc, v) : acc + v;
      inside++;
    }
    if (!is_max)
      acc /= (double)(p->include_pad ? padded : inside);
    weir_tensor_set(want, o, acc);
    if (ind)
      weir_tensor_set(ind, o, (double)best);
  }
  return want;
}

/* With order 0 or 1, MaxPool also gives Indices in that storage_order. */
static void run_pool(const char *op, const PoolCase *p, WeirDType dtype,
                     guint64 seed, gint64 order) {
  Case *c = case_new(op, "pool", 2);
  GString *xs = g_string_new("N, 2");
  GString *ys = g_string_new("N, 2");
  for (guint d = 0; d < p->m; d++) {
    g_string_append_printf(xs, ", %" G_GINT64_FORMAT, p->in[d]);
    g_string_append_printf(ys, ", %" G_GINT64_FORMAT, p->out[d]);
  }
  WeirTensor *x = case_input(c, 0, dtype, xs->str, seed);
  case_output(c, 0, dtype, ys->str);
  if (order >= 0) {
    case_output(c, 1, WEIR_DTYPE_I64, ys->str);
    weir_node_set_attr_int(c->node, "storage_order", order);
  }
  weir_node_set_attr_ints(c->node, "kernel_shape", p->k, p->m);
  weir_node_set_attr_ints(c->node, "strides", p->s, p->m);
  weir_node_set_attr_ints(c->node, "dilations", p->dil, p->m);
  if (strcmp(p->auto_pad, "NOTSET") == 0)
    weir_node_set_attr_ints(c->node, "pads", p->pads, 2 * p->m);
  weir_node_set_attr_string(c->node, "auto_pad", p->auto_pad);
  weir_node_set_attr_int(c->node, "ceil_mode", p->ceil_mode);
  if (strcmp(op, "AveragePool") == 0)
    weir_node_set_attr_int(c->node, "count_include_pad", p->include_pad);

  /* Inference agrees with the expected output shape. */
  assert_true(weir_op_check_attrs(c->node, NULL));
  g_autofree char *want_shape =
      g_strdup_printf("%s[%s]", weir_dtype_name(dtype), ys->str);
  g_autofree char *in_text =
      g_strdup_printf("%s:%s", weir_dtype_name(dtype), xs->str);
  expect_infer(INFER1(c->node, in_text), want_shape);
  g_string_free(xs, TRUE);
  g_string_free(ys, TRUE);
  case_run(c);

  g_autoptr(WeirTensor) ind = order >= 0 ? weir_tensor_copy(c->out[1]) : NULL;
  g_autoptr(WeirTensor) want = ref_pool(op, p, x, c->out[0], ind, order);
  expect_close(c->out[0], want);
  if (ind) {
    g_autoptr(GError) err = NULL;
    if (!weir_tensor_allclose(c->out[1], ind, 0, 0, NULL, &err))
      fail_msg("Indices: %s", err->message);
  }
  case_free(c);
}

static const PoolCase pool_cases[] = {
    /* 1-D default */
    {1, {8}, {3}, {1}, {1}, {0, 0}, "NOTSET", FALSE, FALSE, {6}},
    /* 2-D default, strides, pads */
    {2, {5, 6}, {2, 2}, {1, 1}, {1, 1}, {0}, "NOTSET", FALSE, FALSE, {4, 5}},
    {2, {5, 6}, {3, 3}, {2, 2}, {1, 1}, {0}, "NOTSET", FALSE, FALSE, {2, 2}},
    {2,
     {5, 6},
     {3, 3},
     {2, 1},
     {1, 1},
     {1, 2, 1, 0},
     "NOTSET",
     FALSE,
     FALSE,
     {3, 6}},
    {2,
     {5, 6},
     {3, 3},
     {2, 1},
     {1, 1},
     {1, 2, 1, 0},
     "NOTSET",
     FALSE,
     TRUE,
     {3, 6}},
    /* dilations */
    {2,
     {7, 6},
     {2, 3},
     {1, 2},
     {2, 2},
     {1, 0, 1, 1},
     "NOTSET",
     FALSE,
     FALSE,
     {7, 2}},
    {2,
     {7, 6},
     {2, 3},
     {1, 2},
     {2, 2},
     {1, 0, 1, 1},
     "NOTSET",
     FALSE,
     TRUE,
     {7, 2}},
    /* ceil_mode: windows hanging past the end */
    {2, {5, 6}, {3, 2}, {2, 2}, {1, 1}, {0}, "NOTSET", TRUE, FALSE, {2, 3}},
    {2,
     {6, 6},
     {3, 3},
     {2, 2},
     {1, 1},
     {1, 1, 1, 1},
     "NOTSET",
     TRUE,
     TRUE,
     {4, 4}},
    /* auto_pad */
    {2,
     {5, 6},
     {3, 2},
     {2, 1},
     {1, 1},
     {0},
     "SAME_UPPER",
     FALSE,
     FALSE,
     {3, 6}},
    {2, {5, 6}, {3, 2}, {2, 1}, {1, 1}, {0}, "SAME_LOWER", FALSE, TRUE, {3, 6}},
    {2,
     {5, 6},
     {2, 4},
     {2, 1},
     {1, 1},
     {0},
     "SAME_LOWER",
     FALSE,
     FALSE,
     {3, 6}},
    {2, {5, 6}, {3, 2}, {2, 2}, {1, 1}, {0}, "VALID", FALSE, FALSE, {2, 3}},
    /* 3-D */
    {3,
     {4, 5, 3},
     {2, 3, 2},
     {1, 2, 1},
     {1, 1, 2},
     {0, 1, 1, 1, 1, 0},
     "NOTSET",
     FALSE,
     FALSE,
     {4, 3, 2}},
    {3,
     {4, 5, 3},
     {2, 3, 2},
     {2, 2, 1},
     {1, 1, 1},
     {1, 1, 0, 0, 1, 1},
     "NOTSET",
     TRUE,
     TRUE,
     {3, 3, 3}},
    /* a plane of one element (scalar connector) */
    {1, {1}, {3}, {1}, {1}, {1, 1}, "NOTSET", FALSE, FALSE, {1}},
};

static void test_pool(void **state) {
  (void)state;
  guint64 seed = 400;
  for (guint i = 0; i < G_N_ELEMENTS(pool_cases); i++) {
    const PoolCase *p = &pool_cases[i];
    gboolean dilated = FALSE;
    for (guint d = 0; d < p->m; d++)
      dilated = dilated || p->dil[d] != 1;
    run_pool("MaxPool", p, WEIR_DTYPE_F32, seed++, -1);
    run_pool("AveragePool", p, i % 2 ? WEIR_DTYPE_F64 : WEIR_DTYPE_F32, seed++,
             -1);
    /* Indices in both storage orders (u8 data has ties) */
    run_pool("MaxPool", p, WEIR_DTYPE_F32, seed++, i % 2);
    if (!dilated)
      run_pool("MaxPool", p, WEIR_DTYPE_U8, seed++, (i + 1) % 2);
  }
}

/* Symbolic spatial size: SAME padding computed from N in the tasklets. */
static void test_pool_symbolic(void **state) {
  (void)state;
  const char *ops[] = {"MaxPool", "AveragePool"};
  const char *pads[] = {"SAME_UPPER", "SAME_LOWER"};
  for (guint o = 0; o < 2; o++)
    for (guint a = 0; a < 2; a++)
      for (gint64 n = 6; n <= 7; n++) {
        Case *c = case_new(ops[o], "sympool", n);
        WeirTensor *x = case_input(c, 0, WEIR_DTYPE_F32, "1, 2, N", 600 + n);
        case_output(c, 0, WEIR_DTYPE_F32, "1, 2, (N + 1) // 2");
        if (o == 0) { /* Indices, row or column major */
          case_output(c, 1, WEIR_DTYPE_I64, "1, 2, (N + 1) // 2");
          weir_node_set_attr_int(c->node, "storage_order", a);
        }
        set_ints(c, "kernel_shape", 1, 4);
        set_ints(c, "strides", 1, 2);
        weir_node_set_attr_string(c->node, "auto_pad", pads[a]);
        if (o == 1)
          weir_node_set_attr_int(c->node, "count_include_pad", 1);
        case_run(c);
        PoolCase p = {1,   {n},     {4},   {2},    {1},
                      {0}, pads[a], FALSE, o == 1, {(n + 1) / 2}};
        g_autoptr(WeirTensor) ind = o == 0 ? weir_tensor_copy(c->out[1]) : NULL;
        g_autoptr(WeirTensor) want = ref_pool(ops[o], &p, x, c->out[0], ind, a);
        expect_close(c->out[0], want);
        if (ind)
          assert_true(weir_tensor_allclose(c->out[1], ind, 0, 0, NULL, NULL));
        case_free(c);
      }
}

/* MaxPool's Indices: inferred as int64 of Y's shape; storage_order is 0
 * or 1; the expansion orders the index map after the maximum. */
static void test_pool_indices(void **state) {
  (void)state;
  Case *c = case_new("MaxPool", "mp", 1);
  set_ints(c, "kernel_shape", 1, 2);
  expect_infer(infer(c->node, 1, (const char *const[]){"u8:N, 3, 4"}, 2),
               "u8[N, 3, 3]; i64[N, 3, 3]");
  weir_node_set_attr_int(c->node, "storage_order", 2);
  expect_infer(infer(c->node, 1, (const char *const[]){"u8:N, 3, 4"}, 2),
               "node 'mp' (MaxPool): storage_order is 2");
  case_free(c);

  /* [1, 1, 4] = 3 7 7 1, windows of 2: maxima 7 7 7, the tie in the
   * middle window at indices 1 and 2 gives 1. */
  c = case_new("MaxPool", "mp", 1);
  WeirTensor *x = case_input(c, 0, WEIR_DTYPE_F32, "1, 1, 4", 1);
  static const float xv[] = {3, 7, 7, 1};
  for (guint i = 0; i < 4; i++)
    weir_tensor_set(x, i, xv[i]);
  case_output(c, 0, WEIR_DTYPE_F32, "1, 1, 3");
  case_output(c, 1, WEIR_DTYPE_I64, "1, 1, 3");
  set_ints(c, "kernel_shape", 1, 2);
  case_run(c);
  static const gint64 want[] = {1, 1, 2};
  for (guint i = 0; i < 3; i++) {
    assert_float_equal(weir_tensor_get(c->out[0], i), 7, 0);
    assert_int_equal((gint64)weir_tensor_get(c->out[1], i), want[i]);
  }
  case_free(c);
}

static void test_global_pool(void **state) {
  (void)state;
  const char *ops[] = {"GlobalAveragePool", "GlobalMaxPool"};
  for (guint o = 0; o < 2; o++) {
    Case *c = case_new(ops[o], "gp", 2);
    WeirTensor *x = case_input(c, 0, WEIR_DTYPE_F32, "N, 3, 4, 5", 500 + o);
    case_output(c, 0, WEIR_DTYPE_F32, "N, 3, 1, 1");
    case_run(c);
    gboolean reduced[4] = {FALSE, FALSE, TRUE, TRUE};
    g_autoptr(WeirTensor) want =
        ref_reduce(o ? K_MAX : K_MEAN, x, reduced, TRUE, WEIR_DTYPE_F32);
    expect_close(c->out[0], want);
    case_free(c);
  }
}

/* The expansion's structure: init map, WCR reduce map ordered after it,
 * finalize map, labels derived from the node. */
static void test_expansion_structure(void **state) {
  (void)state;
  Case *c = case_new("ReduceMean", "net/mean:0", 4);
  case_input(c, 0, WEIR_DTYPE_F32, "N, 8", 1);
  case_output(c, 0, WEIR_DTYPE_F32, "N");
  set_ints(c, "axes", 1, 1);
  weir_node_set_attr_int(c->node, "keepdims", 0);
  case_run(c);
  guint maps = 0, wcr = 0, empty = 0;
  /* The expansion replaced the program: look the state up again. */
  const WeirState *s = g_ptr_array_index(c->g->states, 0);
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_MAP_ENTRY) {
      maps++;
      assert_non_null(g_str_has_prefix(n->label, "net/mean:0_") ? n : NULL);
    }
  }
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    wcr += m->wcr == WEIR_WCR_SUM;
    empty += m->data == NULL;
  }
  assert_int_equal(maps, 3); /* init, sum, mean */
  assert_int_equal(wcr, 2);  /* tasklet -> exit -> access */
  assert_true(empty >= 1);   /* init before the accumulation */
  /* The transient is named after the label, as an identifier. */
  assert_non_null(weir_graph_container(c->g, "net_mean_0_sum"));
  case_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schema_defaults),
      cmocka_unit_test(test_infer_reduce),
      cmocka_unit_test(test_infer_pool),
      cmocka_unit_test(test_flops),
      cmocka_unit_test(test_reduce_float),
      cmocka_unit_test(test_reduce_int),
      cmocka_unit_test(test_reduce_special),
      cmocka_unit_test(test_argmax_argmin),
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_layernorm),
      cmocka_unit_test(test_global_pool),
      cmocka_unit_test(test_pool),
      cmocka_unit_test(test_pool_symbolic),
      cmocka_unit_test(test_pool_indices),
      cmocka_unit_test(test_expansion_structure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
