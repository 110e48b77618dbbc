/* test-shape.c — the shape and data-movement operators: schemas, shape
 * inference (symbolic dimensions, int_values chains, errors) and the pure
 * expansions run in the reference interpreter.
 *
 * Differential tests build access nodes -> library node -> access nodes by
 * hand (an Op: inputs added one by one, output containers shaped by the
 * operator's own inference), expand every library node, validate, interpret
 * on seeded random inputs and compare with a reference written here with
 * plain loops over row-major indices.  These operators only move data, so
 * results must match exactly (Range on floats within 1e-5 relative).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "weir-expand.h"
#include "weir-interp.h"
#include "weir-ops.h"
#include "weir-validate.h"

#define N_VALUE 3 /* value bound to the symbol N when running */
#define MAX_RANK 6

/* ------------------------------------------------------------ indices */

static void unravel(gint64 i, const gint64 *shape, guint rank, gint64 *idx) {
  for (guint d = rank; d-- > 0;) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
}

static gint64 ravel(const gint64 *idx, const gint64 *shape, guint rank) {
  gint64 i = 0;
  for (guint d = 0; d < rank; d++)
    i = i * shape[d] + idx[d];
  return i;
}

/* ---------------------------------------------------------- op harness */

typedef struct {
  WeirGraph *g;
  WeirState *s;
  WeirNode *n;
  guint n_in, n_out;
  GHashTable *args; /* container name -> WeirTensor* (owned) */
  GHashTable *syms;
  WeirTensor *in[8], *out[8]; /* borrowed from args */
} Op;

static Op *op_new(const char *op, const char *label) {
  Op *o = g_new0(Op, 1);
  o->g = weir_graph_new("test");
  weir_graph_add_symbol(o->g, "N");
  o->s = weir_graph_add_state(o->g, "main");
  o->n = weir_state_add_library(o->g, o->s, label, op, NULL, NULL);
  o->args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                  (GDestroyNotify)weir_tensor_free);
  o->syms = weir_bindings_new();
  weir_bindings_set(o->syms, "N", N_VALUE);
  return o;
}

static void op_free(Op *o) {
  weir_graph_free(o->g);
  g_hash_table_unref(o->args);
  g_hash_table_unref(o->syms);
  g_free(o);
}

static char *full_subset(const WeirContainer *c) {
  g_autoptr(WeirSubset) s = weir_container_full_subset(c);
  return weir_subset_to_string(s);
}

static WeirTensor *tensor_for(Op *o, const WeirContainer *c) {
  gint64 shape[MAX_RANK];
  for (guint d = 0; d < c->shape->len; d++) {
    GError *error = NULL;
    assert_true(weir_expr_eval(c->shape->pdata[d], o->syms, &shape[d], &error));
  }
  WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
  g_hash_table_insert(o->args, g_strdup(c->name), t);
  return t;
}

/* Adds input k (container "x<k>") filled with random values. */
static WeirTensor *op_input(Op *o, WeirDType dtype, const char *shape,
                            guint64 seed) {
  g_autofree char *name = g_strdup_printf("x%u", o->n_in);
  g_autofree char *conn = g_strdup_printf("in%u", o->n_in);
  GError *error = NULL;
  WeirContainer *c =
      weir_graph_add_array(o->g, name, dtype, shape, FALSE, &error);
  assert_non_null(c);
  WeirNode *a = weir_state_add_access(o->g, o->s, name);
  weir_node_add_in_conn(o->n, conn);
  g_autofree char *sub = full_subset(c);
  assert_non_null(weir_state_add_memlet(o->g, o->s, a->id, NULL, o->n->id, conn,
                                        name, sub, &error));
  WeirTensor *t = tensor_for(o, c);
  weir_tensor_fill_random(t, seed);
  o->in[o->n_in++] = t;
  return t;
}

/* The WeirOpValue of a container (shape borrowed). */
static WeirOpValue value_of(const WeirContainer *c) {
  WeirOpValue v = {0};
  v.present = TRUE;
  v.dtype = c->dtype;
  v.rank = c->shape->len;
  v.shape = (WeirExpr **)c->shape->pdata;
  return v;
}

/* Checks the attributes, infers n_out outputs from the input containers and
 * adds them as containers "y<k>" with access nodes. */
static void op_finish(Op *o, guint n_out) {
  GError *error = NULL;
  if (!weir_op_check_attrs(o->n, &error))
    fail_msg("%s", error->message);
  const WeirOpInfo *info = weir_op_lookup(o->n->op);
  assert_non_null(info);
  WeirOpValue ins[8] = {{0}};
  WeirOpValue outs[8] = {{0}};
  for (guint k = 0; k < o->n_in; k++) {
    g_autofree char *name = g_strdup_printf("x%u", k);
    ins[k] = value_of(weir_graph_container(o->g, name));
  }
  WeirOpInferContext ctx = {o->n, o->n_in, ins, n_out, outs, NULL};
  if (!info->infer(&ctx, &error))
    fail_msg("%s", error->message);
  for (guint k = 0; k < n_out; k++) {
    g_autofree char *name = g_strdup_printf("y%u", k);
    g_autofree char *conn = g_strdup_printf("out%u", k);
    WeirContainer *c = weir_graph_add_container(
        o->g, name, outs[k].dtype, outs[k].rank, outs[k].shape, FALSE, &error);
    assert_non_null(c);
    WeirNode *a = weir_state_add_access(o->g, o->s, name);
    weir_node_add_out_conn(o->n, conn);
    g_autofree char *sub = full_subset(c);
    assert_non_null(weir_state_add_memlet(o->g, o->s, o->n->id, conn, a->id,
                                          NULL, name, sub, &error));
    o->out[k] = tensor_for(o, c);
    weir_op_value_clear(&outs[k]);
  }
  o->n_out = n_out;
}

/* Expands every library node, checks that none is left and that the
 * program is valid, and interprets it. */
static void op_run(Op *o) {
  GError *error = NULL;
  guint count = 0;
  if (!weir_expand_all(o->g, NULL, &count, &error))
    fail_msg("%s", error->message);
  assert_int_equal(count, 1);
  for (guint i = 0; i < o->g->states->len; i++) {
    WeirState *s = g_ptr_array_index(o->g->states, i);
    for (guint k = 0; k < s->nodes->len; k++)
      assert_int_not_equal(((WeirNode *)s->nodes->pdata[k])->kind,
                           WEIR_NODE_LIBRARY);
  }
  if (!weir_graph_validate(o->g, &error))
    fail_msg("%s", error->message);
  if (!weir_interpret(o->g, o->syms, o->args, NULL, &error))
    fail_msg("%s", error->message);
  o->n = NULL;
  o->s = NULL;
}

static void assert_tensor_equal(const WeirTensor *got, const WeirTensor *want) {
  GError *error = NULL;
  assert_int_equal(got->dtype, want->dtype);
  assert_int_equal(got->rank, want->rank);
  for (guint d = 0; d < got->rank; d++)
    assert_int_equal(got->shape[d], want->shape[d]);
  if (!weir_tensor_allclose(got, want, 1e-5, 0, NULL, &error))
    fail_msg("%s", error->message);
}

static WeirTensor *like(const WeirTensor *t) {
  return weir_tensor_new(t->dtype, t->rank, t->shape);
}

/* ------------------------------------------------------ infer harness */

/* A value with a shape given as text ("N, 64"); free with
 * weir_op_value_clear. */
static WeirOpValue val(WeirDType dtype, const char *shape) {
  WeirOpValue v = {0};
  v.present = TRUE;
  v.dtype = dtype;
  g_auto(GStrv) parts = g_strsplit(shape, ",", -1);
  v.rank = *shape ? g_strv_length(parts) : 0;
  v.shape = g_new0(WeirExpr *, v.rank + 1);
  for (guint d = 0; d < v.rank; d++)
    v.shape[d] = weir_expr_parse(parts[d], NULL);
  return v;
}

static void set_int_values(WeirOpValue *v, const char *values) {
  g_auto(GStrv) parts = g_strsplit(values, ",", -1);
  g_clear_pointer(&v->int_values, g_ptr_array_unref);
  v->int_values =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint i = 0; *values && parts[i]; i++)
    g_ptr_array_add(v->int_values, weir_expr_parse(parts[i], NULL));
}

static char *exprs_text(WeirExpr *const *e, guint n) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < n; i++) {
    g_autofree char *t = weir_expr_to_string(e[i]);
    g_string_append_printf(s, "%s%s", i ? ", " : "", t);
  }
  return g_string_free(s, FALSE);
}

static void assert_shape(const WeirOpValue *v, const char *want) {
  g_autofree char *got = exprs_text(v->shape, v->rank);
  assert_string_equal(got, want);
}

static void assert_int_values(const WeirOpValue *v, const char *want) {
  assert_non_null(v->int_values);
  g_autofree char *got =
      exprs_text((WeirExpr *const *)v->int_values->pdata, v->int_values->len);
  assert_string_equal(got, want);
}

/* A library node for inference tests, in its own graph. */
typedef struct {
  WeirGraph *g;
  WeirNode *n;
} Lib;

static Lib lib_new(const char *op) {
  Lib l;
  l.g = weir_graph_new("infer");
  WeirState *s = weir_graph_add_state(l.g, "main");
  l.n = weir_state_add_library(l.g, s, "node1", op, NULL, NULL);
  return l;
}

static gboolean infer(Lib *l, WeirOpValue *ins, guint n_in, WeirOpValue *outs,
                      guint n_out, GError **error) {
  if (!weir_op_check_attrs(l->n, error))
    return FALSE;
  WeirOpInferContext ctx = {l->n, n_in, ins, n_out, outs, NULL};
  return weir_op_lookup(l->n->op)->infer(&ctx, error);
}

static void clear_values(WeirOpValue *v, guint n) {
  for (guint i = 0; i < n; i++)
    weir_op_value_clear(&v[i]);
}

/* ------------------------------------------------------------- schemas */

static void test_schemas_and_defaults(void **state) {
  (void)state;
  static const char *const ops[] = {
      "Transpose", "Reshape", "Flatten", "Squeeze",         "Unsqueeze",
      "Concat",    "Split",   "Slice",   "Gather",          "Expand",
      "Pad",       "Tile",    "Shape",   "ConstantOfShape", "Range"};
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++) {
    const WeirOpInfo *info = weir_op_lookup(ops[i]);
    assert_non_null(info);
    assert_non_null(info->infer);
    assert_non_null(info->flops);
  }
  GError *error = NULL;
  Lib l = lib_new("Pad");
  weir_node_set_attr_ints(l.n, "pads", (gint64[]){1, 1}, 2);
  assert_true(weir_op_check_attrs(l.n, &error));
  assert_string_equal(weir_node_attr(l.n, "mode")->s, "constant");
  assert_true(weir_node_attr(l.n, "value")->f == 0.0);
  assert_null(weir_node_attr(l.n, "axes"));
  weir_graph_free(l.g);

  l = lib_new("Flatten");
  assert_true(weir_op_check_attrs(l.n, &error));
  assert_int_equal(weir_node_attr(l.n, "axis")->i, 1);
  weir_graph_free(l.g);

  l = lib_new("Reshape");
  assert_true(weir_op_check_attrs(l.n, &error));
  assert_int_equal(weir_node_attr(l.n, "allowzero")->i, 0);
  weir_graph_free(l.g);

  l = lib_new("ConstantOfShape");
  assert_true(weir_op_check_attrs(l.n, &error));
  assert_int_equal(weir_node_attr(l.n, "dtype")->i, 1);
  assert_true(weir_node_attr(l.n, "value")->f == 0.0);
  weir_graph_free(l.g);

  /* Concat's axis is required. */
  l = lib_new("Concat");
  assert_false(weir_op_check_attrs(l.n, &error));
  assert_non_null(strstr(error->message, "'axis'"));
  g_clear_error(&error);
  weir_graph_free(l.g);

  /* Attributes that later opsets pass as inputs say so. */
  const WeirOpInfo *slice = weir_op_lookup("Slice");
  gboolean found = FALSE;
  for (guint i = 0; i < slice->n_attrs; i++)
    if (strcmp(slice->attrs[i].name, "steps") == 0) {
      assert_int_equal(slice->attrs[i].from_input, 5);
      assert_int_equal(slice->attrs[i].input_since, 10);
      found = TRUE;
    }
  assert_true(found);

  /* Data movement costs no FLOPs. */
  Op *o = op_new("Transpose", "t");
  op_input(o, WEIR_DTYPE_F32, "2, 3", 1);
  op_finish(o, 1);
  g_autoptr(WeirExpr) f = weir_op_lookup("Transpose")->flops(o->g, o->s, o->n);
  gint64 fv = -1;
  assert_true(weir_expr_is_const(f, &fv));
  assert_int_equal(fv, 0);
  op_free(o);
}

/* ----------------------------------------------------------- Transpose */

static void test_transpose_infer(void **state) {
  (void)state;
  GError *error = NULL;
  Lib l = lib_new("Transpose");
  WeirOpValue in[1] = {val(WEIR_DTYPE_F32, "N, 3, 5")}, out[1] = {{0}};
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "5, 3, N"); /* default: reversed */
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_ints(l.n, "perm", (gint64[]){0, 2, 1}, 3);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "N, 5, 3");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_ints(l.n, "perm", (gint64[]){0, 0, 1}, 3);
  assert_false(infer(&l, in, 1, out, 1, &error));
  assert_non_null(strstr(error->message, "node 'node1' (Transpose)"));
  g_clear_error(&error);
  clear_values(in, 1);
  clear_values(out, 1);
  weir_graph_free(l.g);
}

static void test_transpose_run(void **state) {
  (void)state;
  static const gint64 perms[][3] = {
      {-1, 0, 0}, {0, 2, 1}, {1, 0, 2}, {2, 0, 1}, {1, 2, 0}};
  for (guint c = 0; c < G_N_ELEMENTS(perms); c++) {
    for (guint t = 0; t < 2; t++) {
      WeirDType dt = t ? WEIR_DTYPE_I64 : WEIR_DTYPE_F32;
      Op *o = op_new("Transpose", "trans1");
      WeirTensor *x = op_input(o, dt, "2, N, 4", 10 + c);
      gint64 perm[3] = {2, 1, 0};
      if (perms[c][0] >= 0) {
        memcpy(perm, perms[c], sizeof perm);
        weir_node_set_attr_ints(o->n, "perm", perm, 3);
      }
      op_finish(o, 1);
      op_run(o);
      g_autoptr(WeirTensor) want = like(o->out[0]);
      for (gint64 i = 0; i < want->count; i++) {
        gint64 oi[3], xi[3];
        unravel(i, want->shape, 3, oi);
        for (guint d = 0; d < 3; d++)
          xi[perm[d]] = oi[d];
        weir_tensor_set(want, i, weir_tensor_get(x, ravel(xi, x->shape, 3)));
      }
      assert_int_equal(want->shape[0], x->shape[perm[0]]);
      assert_tensor_equal(o->out[0], want);
      op_free(o);
    }
  }
}

/* ------------------------------------- Reshape, Flatten, (Un)Squeeze */

static void test_reshape_infer(void **state) {
  (void)state;
  GError *error = NULL;
  Lib l = lib_new("Reshape");
  WeirOpValue in[2] = {val(WEIR_DTYPE_F32, "N, 64, 7, 7"),
                       val(WEIR_DTYPE_I64, "2")};
  WeirOpValue out[1] = {{0}};
  /* Target [N, -1] known only as int_values of input 1. */
  set_int_values(&in[1], "N, -1");
  assert_true(infer(&l, in, 2, out, 1, &error));
  assert_shape(&out[0], "N, 3136");
  weir_op_value_clear(&out[0]);
  /* As an attribute: 0 copies the input dimension. */
  weir_node_set_attr_ints(l.n, "shape", (gint64[]){0, -1, 7}, 3);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "N, 448, 7");
  weir_op_value_clear(&out[0]);
  /* Two -1 are an error naming the node. */
  weir_node_set_attr_ints(l.n, "shape", (gint64[]){-1, -1}, 2);
  assert_false(infer(&l, in, 1, out, 1, &error));
  assert_non_null(strstr(error->message, "node 'node1' (Reshape)"));
  g_clear_error(&error);
  /* allowzero keeps a 0. */
  weir_op_value_clear(&in[0]);
  in[0] = val(WEIR_DTYPE_F32, "0, 3");
  weir_node_set_attr_ints(l.n, "shape", (gint64[]){3, 0}, 2);
  weir_node_set_attr_int(l.n, "allowzero", 1);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "3, 0");
  weir_op_value_clear(&out[0]);
  /* Element counts must agree. */
  weir_node_set_attr_ints(l.n, "shape", (gint64[]){4, 5}, 2);
  weir_op_value_clear(&in[0]);
  in[0] = val(WEIR_DTYPE_F32, "2, 3");
  assert_false(infer(&l, in, 1, out, 1, &error));
  g_clear_error(&error);
  clear_values(in, 2);
  clear_values(out, 1);
  weir_graph_free(l.g);
}

static void test_flatten_squeeze_infer(void **state) {
  (void)state;
  GError *error = NULL;
  WeirOpValue in[1] = {val(WEIR_DTYPE_F32, "N, 64, 7, 7")}, out[1] = {{0}};
  Lib l = lib_new("Flatten");
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "N, 3136");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_int(l.n, "axis", 0);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "1, 3136*N");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_int(l.n, "axis", -1);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "448*N, 7");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_int(l.n, "axis", 5);
  assert_false(infer(&l, in, 1, out, 1, &error));
  g_clear_error(&error);
  weir_graph_free(l.g);
  weir_op_value_clear(&in[0]);

  in[0] = val(WEIR_DTYPE_F32, "1, N, 1, 3");
  l = lib_new("Squeeze");
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "N, 3");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_ints(l.n, "axes", (gint64[]){-2}, 1);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "1, N, 3");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_ints(l.n, "axes", (gint64[]){3}, 1);
  assert_false(infer(&l, in, 1, out, 1, &error));
  assert_non_null(strstr(error->message, "must be 1"));
  g_clear_error(&error);
  weir_graph_free(l.g);

  l = lib_new("Unsqueeze");
  weir_node_set_attr_ints(l.n, "axes", (gint64[]){-1, 0}, 2);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "1, 1, N, 1, 3, 1");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_ints(l.n, "axes", (gint64[]){1, 1}, 2);
  assert_false(infer(&l, in, 1, out, 1, &error));
  g_clear_error(&error);
  weir_graph_free(l.g);
  clear_values(in, 1);
  clear_values(out, 1);
}

/* Runs a one-input shape-only op and checks it became a single copy with
 * the elements in the same row-major order. */
static void run_copy_op(const char *op, WeirDType dt, const char *shape,
                        const char *attr, const gint64 *v, guint nv,
                        gboolean is_int, const char *want_shape) {
  Op *o = op_new(op, "reshape1");
  WeirTensor *x = op_input(o, dt, shape, 7);
  if (attr && is_int)
    weir_node_set_attr_int(o->n, attr, v[0]);
  else if (attr)
    weir_node_set_attr_ints(o->n, attr, v, nv);
  op_finish(o, 1);
  op_run(o);
  /* Explicit copy: one memlet between the access nodes, no map. */
  WeirState *s = g_ptr_array_index(o->g->states, 0);
  assert_int_equal(s->edges->len, 1);
  assert_int_equal(s->nodes->len, 2);
  WeirMemlet *m = g_ptr_array_index(s->edges, 0);
  assert_string_equal(m->data, "x0");
  assert_non_null(m->other);
  GString *got = g_string_new(NULL);
  for (guint d = 0; d < o->out[0]->rank; d++)
    g_string_append_printf(got, "%s%" G_GINT64_FORMAT, d ? ", " : "",
                           o->out[0]->shape[d]);
  assert_string_equal(got->str, want_shape);
  g_string_free(got, TRUE);
  g_autoptr(WeirTensor) want = like(o->out[0]);
  assert_int_equal(want->count, x->count);
  for (gint64 i = 0; i < x->count; i++)
    weir_tensor_set(want, i, weir_tensor_get(x, i));
  assert_tensor_equal(o->out[0], want);
  op_free(o);
}

static void test_copy_ops_run(void **state) {
  (void)state;
  run_copy_op("Reshape", WEIR_DTYPE_F32, "2, 3, 4", "shape", (gint64[]){4, -1},
              2, FALSE, "4, 6");
  run_copy_op("Reshape", WEIR_DTYPE_I32, "2, N, 4", "shape",
              (gint64[]){0, 0, 2, 2}, 4, FALSE, "2, 3, 2, 2");
  run_copy_op("Reshape", WEIR_DTYPE_U8, "2, 3", "shape", (gint64[]){-1}, 1,
              FALSE, "6");
  static const char *const flat[] = {"1, 18", "2, 9", "6, 3", "18, 1"};
  for (gint64 axis = -3; axis <= 3; axis++)
    run_copy_op("Flatten", WEIR_DTYPE_F64, "2, 3, N", "axis", &axis, 1, TRUE,
                flat[axis < 0 ? axis + 3 : axis]);
  run_copy_op("Squeeze", WEIR_DTYPE_BOOL, "1, 3, 1, 2", NULL, NULL, 0, FALSE,
              "3, 2");
  run_copy_op("Squeeze", WEIR_DTYPE_F32, "1, 3, 1, 2", "axes", (gint64[]){-2},
              1, FALSE, "1, 3, 2");
  run_copy_op("Unsqueeze", WEIR_DTYPE_I64, "3, N", "axes", (gint64[]){0, 3}, 2,
              FALSE, "1, 3, 3, 1");
  run_copy_op("Squeeze", WEIR_DTYPE_F32, "1", NULL, NULL, 0, FALSE, "");
}

/* -------------------------------------------------------------- Concat */

static void test_concat_infer(void **state) {
  (void)state;
  GError *error = NULL;
  Lib l = lib_new("Concat");
  weir_node_set_attr_int(l.n, "axis", -1);
  WeirOpValue in[3] = {val(WEIR_DTYPE_I64, "1"), val(WEIR_DTYPE_I64, "1"),
                       val(WEIR_DTYPE_I64, "2")};
  WeirOpValue out[1] = {{0}};
  set_int_values(&in[0], "N");
  set_int_values(&in[1], "-1");
  set_int_values(&in[2], "7, 7");
  assert_true(infer(&l, in, 3, out, 1, &error));
  assert_shape(&out[0], "4");
  assert_int_values(&out[0], "N, -1, 7, 7");
  clear_values(in, 3);
  clear_values(out, 1);
  /* Symbolic sizes add up; other dimensions must agree. */
  weir_node_set_attr_int(l.n, "axis", 1);
  in[0] = val(WEIR_DTYPE_F32, "N, 3");
  in[1] = val(WEIR_DTYPE_F32, "N, N");
  assert_true(infer(&l, in, 2, out, 1, &error));
  assert_shape(&out[0], "N, N + 3");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_int(l.n, "axis", 0);
  assert_false(infer(&l, in, 2, out, 1, &error));
  assert_non_null(strstr(error->message, "dimension 1"));
  g_clear_error(&error);
  clear_values(in, 2);
  weir_graph_free(l.g);
}

static void test_concat_run(void **state) {
  (void)state;
  static const char *const shapes[][3] = {
      {"1, 3, 4", "2, 3, 4", "N, 3, 4"},
      {"2, 1, 4", "2, N, 4", "2, 2, 4"},
      {"2, 3, 1", "2, 3, 2", "2, 3, N"},
  };
  for (gint64 axis = -3; axis < 3; axis++) {
    guint a = (guint)(axis < 0 ? axis + 3 : axis);
    WeirDType dt = axis < 0 ? WEIR_DTYPE_I32 : WEIR_DTYPE_F32;
    Op *o = op_new("Concat", "cat1");
    WeirTensor *x[3];
    for (guint k = 0; k < 3; k++)
      x[k] = op_input(o, dt, shapes[a][k], 20 + k);
    weir_node_set_attr_int(o->n, "axis", axis);
    op_finish(o, 1);
    op_run(o);
    g_autoptr(WeirTensor) want = like(o->out[0]);
    for (gint64 i = 0; i < want->count; i++) {
      gint64 idx[3];
      unravel(i, want->shape, 3, idx);
      guint k = 0;
      while (idx[a] >= x[k]->shape[a])
        idx[a] -= x[k++]->shape[a];
      weir_tensor_set(want, i,
                      weir_tensor_get(x[k], ravel(idx, x[k]->shape, 3)));
    }
    assert_tensor_equal(o->out[0], want);
    op_free(o);
  }
}

/* --------------------------------------------------------------- Split */

static void test_split_infer(void **state) {
  (void)state;
  GError *error = NULL;
  Lib l = lib_new("Split");
  WeirOpValue in[1] = {val(WEIR_DTYPE_F32, "N, 7")}, out[3] = {{0}};
  weir_node_set_attr_int(l.n, "axis", 1);
  assert_true(infer(&l, in, 1, out, 3, &error));
  assert_shape(&out[0], "N, 3");
  assert_shape(&out[2], "N, 1"); /* the last part is smaller */
  clear_values(out, 3);
  weir_node_set_attr_int(l.n, "axis", 0);
  assert_true(infer(&l, in, 1, out, 2, &error));
  assert_shape(&out[0], "(N + 1) // 2, 7");
  assert_shape(&out[1], "N - (N + 1) // 2, 7");
  clear_values(out, 2);
  weir_node_set_attr_int(l.n, "axis", 1);
  weir_node_set_attr_ints(l.n, "split", (gint64[]){2, 4}, 2);
  assert_false(infer(&l, in, 1, out, 2, &error)); /* 6 != 7 */
  assert_non_null(strstr(error->message, "add up to 6"));
  g_clear_error(&error);
  clear_values(in, 1);
  /* Parts of known shape vectors. */
  in[0] = val(WEIR_DTYPE_I64, "3");
  set_int_values(&in[0], "N, 5, 6");
  weir_node_set_attr_int(l.n, "axis", 0);
  weir_node_set_attr_ints(l.n, "split", (gint64[]){1, 2}, 2);
  assert_true(infer(&l, in, 1, out, 2, &error));
  assert_int_values(&out[0], "N");
  assert_int_values(&out[1], "5, 6");
  clear_values(out, 2);
  clear_values(in, 1);
  weir_graph_free(l.g);
}

static void test_split_run(void **state) {
  (void)state;
  static const gint64 explicit_sizes[] = {2, 0, 5};
  for (guint c = 0; c < 4; c++) {
    Op *o = op_new("Split", "split1");
    WeirTensor *x = op_input(o, c == 1 ? WEIR_DTYPE_I64 : WEIR_DTYPE_F32,
                             "2, 7, N", 30 + c);
    guint axis = c == 3 ? 0 : 1, n_out = c == 3 ? 2 : 3;
    weir_node_set_attr_int(o->n, "axis", c == 3 ? -3 : 1);
    if (c == 2)
      weir_node_set_attr_ints(o->n, "split", explicit_sizes, 3);
    if (c == 1)
      weir_node_set_attr_int(o->n, "num_outputs", 3);
    op_finish(o, n_out);
    op_run(o);
    gint64 offset = 0;
    for (guint k = 0; k < n_out; k++) {
      g_autoptr(WeirTensor) want = like(o->out[k]);
      for (gint64 i = 0; i < want->count; i++) {
        gint64 idx[3];
        unravel(i, want->shape, 3, idx);
        idx[axis] += offset;
        weir_tensor_set(want, i, weir_tensor_get(x, ravel(idx, x->shape, 3)));
      }
      assert_tensor_equal(o->out[k], want);
      offset += want->shape[axis];
    }
    assert_int_equal(offset, x->shape[axis]);
    if (c != 2)
      assert_int_equal(o->out[n_out - 1]->shape[axis],
                       n_out == 3 ? 1 : 1); /* 7 -> 3,3,1; 2 -> 1,1 */
    op_free(o);
  }
}

/* --------------------------------------------------------------- Slice */

/* ONNX slice of one axis, computed directly from the spec. */
static void ref_slice(gint64 dim, gint64 start, gint64 end, gint64 step,
                      gint64 *first, gint64 *count) {
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = start < 0 ? 0 : start > dim ? dim : start;
    end = end < 0 ? 0 : end > dim ? dim : end;
  } else {
    start = start < 0 ? 0 : start > dim - 1 ? dim - 1 : start;
    end = end < -1 ? -1 : end > dim - 1 ? dim - 1 : end;
  }
  gint64 n = 0;
  for (gint64 i = start; step > 0 ? i < end : i > end; i += step)
    n++;
  *first = start;
  *count = n;
}

static void test_slice_infer(void **state) {
  (void)state;
  GError *error = NULL;
  Lib l = lib_new("Slice");
  WeirOpValue in[1] = {val(WEIR_DTYPE_F32, "N, 10")}, out[1] = {{0}};
  weir_node_set_attr_ints(l.n, "starts", (gint64[]){0, 1}, 2);
  weir_node_set_attr_ints(l.n, "ends", (gint64[]){G_MAXINT64, -1}, 2);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "N, 8");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_ints(l.n, "steps", (gint64[]){1, 0}, 2);
  assert_false(infer(&l, in, 1, out, 1, &error));
  g_clear_error(&error);
  clear_values(in, 1);
  /* Slices of a known shape vector. */
  in[0] = val(WEIR_DTYPE_I64, "4");
  set_int_values(&in[0], "N, 3, 5, 7");
  weir_node_set_attr_ints(l.n, "starts", (gint64[]){-1}, 1);
  weir_node_set_attr_ints(l.n, "ends", (gint64[]){G_MININT64}, 1);
  weir_node_set_attr_ints(l.n, "steps", (gint64[]){-2}, 1);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "2");
  assert_int_values(&out[0], "7, 3");
  clear_values(in, 1);
  clear_values(out, 1);
  weir_graph_free(l.g);
}

static void test_slice_run(void **state) {
  (void)state;
  typedef struct {
    gint64 starts[3], ends[3], axes[3], steps[3];
    guint n;
    gboolean with_axes, with_steps;
  } SliceCase;
  static const SliceCase cases[] = {
      {{0, 1}, {3, -1}, {0}, {0}, 2, FALSE, FALSE},
      {{1}, {G_MAXINT64}, {-1}, {1}, 1, TRUE, FALSE},
      {{-1, 20}, {G_MININT64, -1000}, {2, 1}, {-1, -2}, 2, TRUE, TRUE},
      {{-100, 0, 1}, {100, 4, 5}, {0, 1, 2}, {2, 3, 2}, 3, TRUE, TRUE},
      {{3}, {1}, {1}, {1}, 1, TRUE, TRUE}, /* empty */
      {{4, 0}, {0, -1}, {2, 0}, {-3, 1}, 2, TRUE, TRUE},
  };
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    const SliceCase *sc = &cases[c];
    Op *o = op_new("Slice", "slice1");
    WeirTensor *x =
        op_input(o, c % 2 ? WEIR_DTYPE_F32 : WEIR_DTYPE_I32, "N, 5, 6", 40 + c);
    weir_node_set_attr_ints(o->n, "starts", sc->starts, sc->n);
    weir_node_set_attr_ints(o->n, "ends", sc->ends, sc->n);
    if (sc->with_axes)
      weir_node_set_attr_ints(o->n, "axes", sc->axes, sc->n);
    if (sc->with_steps)
      weir_node_set_attr_ints(o->n, "steps", sc->steps, sc->n);
    op_finish(o, 1);
    op_run(o);
    gint64 first[3] = {0, 0, 0}, step[3] = {1, 1, 1}, count[3];
    memcpy(count, x->shape, sizeof count);
    for (guint i = 0; i < sc->n; i++) {
      gint64 a = sc->with_axes ? sc->axes[i] : i;
      if (a < 0)
        a += 3;
      step[a] = sc->with_steps ? sc->steps[i] : 1;
      ref_slice(x->shape[a], sc->starts[i], sc->ends[i], step[a], &first[a],
                &count[a]);
    }
    g_autoptr(WeirTensor) want = weir_tensor_new(x->dtype, 3, count);
    for (gint64 i = 0; i < want->count; i++) {
      gint64 idx[3];
      unravel(i, want->shape, 3, idx);
      for (guint d = 0; d < 3; d++)
        idx[d] = first[d] + step[d] * idx[d];
      weir_tensor_set(want, i, weir_tensor_get(x, ravel(idx, x->shape, 3)));
    }
    assert_tensor_equal(o->out[0], want);
    op_free(o);
  }
}

/* -------------------------------------------------------------- Gather */

static void test_gather_infer(void **state) {
  (void)state;
  GError *error = NULL;
  Lib l = lib_new("Gather");
  WeirOpValue in[2] = {val(WEIR_DTYPE_F32, "N, 5, 6"),
                       val(WEIR_DTYPE_I64, "2, 3")};
  WeirOpValue out[1] = {{0}};
  weir_node_set_attr_int(l.n, "axis", 1);
  assert_true(infer(&l, in, 2, out, 1, &error));
  assert_shape(&out[0], "N, 2, 3, 6");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_int(l.n, "axis", -3);
  assert_true(infer(&l, in, 2, out, 1, &error));
  assert_shape(&out[0], "2, 3, 5, 6");
  weir_op_value_clear(&out[0]);
  clear_values(in, 2);
  /* Float indices are refused. */
  in[0] = val(WEIR_DTYPE_F32, "3");
  in[1] = val(WEIR_DTYPE_F32, "");
  assert_false(infer(&l, in, 2, out, 1, &error));
  assert_non_null(strstr(error->message, "indices"));
  g_clear_error(&error);
  clear_values(in, 2);
  weir_graph_free(l.g);
}

static void test_gather_run(void **state) {
  (void)state;
  typedef struct {
    const char *data, *ind;
    gint64 axis;
    WeirDType ind_type;
  } GatherCase;
  static const GatherCase cases[] = {
      {"5, 3", "2, 2", 0, WEIR_DTYPE_I64}, {"N, 4, 2", "3", 1, WEIR_DTYPE_I32},
      {"2, 3, 4", "", -1, WEIR_DTYPE_I64}, {"4", "2, 3", 0, WEIR_DTYPE_I32},
      {"3, 1", "2", 1, WEIR_DTYPE_I64},
  };
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    const GatherCase *gc = &cases[c];
    Op *o = op_new("Gather", "gather1");
    WeirTensor *x =
        op_input(o, c == 2 ? WEIR_DTYPE_U8 : WEIR_DTYPE_F32, gc->data, 50 + c);
    WeirTensor *ind = op_input(o, gc->ind_type, gc->ind, 0);
    guint r = x->rank, q = ind->rank;
    guint axis = (guint)(gc->axis < 0 ? gc->axis + r : gc->axis);
    gint64 dim = x->shape[axis];
    for (gint64 i = 0; i < ind->count; i++) /* in [-dim, dim) */
      weir_tensor_set(ind, i, (double)((i * 7 + c) % (2 * dim) - dim));
    weir_node_set_attr_int(o->n, "axis", gc->axis);
    op_finish(o, 1);
    op_run(o);
    g_autoptr(WeirTensor) want = like(o->out[0]);
    assert_int_equal(want->rank, r + q - 1);
    for (gint64 i = 0; i < want->count; i++) {
      gint64 oi[MAX_RANK], xi[MAX_RANK], qi[MAX_RANK];
      unravel(i, want->shape, want->rank, oi);
      for (guint d = 0; d < q; d++)
        qi[d] = oi[axis + d];
      gint64 j = (gint64)weir_tensor_get(ind, ravel(qi, ind->shape, q));
      for (guint d = 0; d < r; d++)
        xi[d] = d < axis    ? oi[d]
                : d == axis ? (j < 0 ? j + dim : j)
                            : oi[d + q - 1];
      weir_tensor_set(want, i, weir_tensor_get(x, ravel(xi, x->shape, r)));
    }
    assert_tensor_equal(o->out[0], want);
    op_free(o);
  }
}

/* ---------------------------------------------------------- Expand, Tile */

static void test_expand_tile_infer(void **state) {
  (void)state;
  GError *error = NULL;
  Lib l = lib_new("Expand");
  WeirOpValue in[2] = {val(WEIR_DTYPE_F32, "N, 1"), val(WEIR_DTYPE_I64, "3")};
  WeirOpValue out[1] = {{0}};
  weir_node_set_attr_ints(l.n, "shape", (gint64[]){2, 1, 4}, 3);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "2, N, 4"); /* bidirectional */
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_ints(l.n, "shape", (gint64[]){3, 4}, 2);
  assert_false(infer(&l, in, 1, out, 1, &error)); /* N vs 3 */
  g_clear_error(&error);
  weir_graph_free(l.g);

  l = lib_new("Tile");
  weir_node_set_attr_ints(l.n, "repeats", (gint64[]){2, 3}, 2);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "2*N, 3");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_ints(l.n, "repeats", (gint64[]){2}, 1);
  assert_false(infer(&l, in, 1, out, 1, &error));
  g_clear_error(&error);
  weir_graph_free(l.g);
  clear_values(in, 2);
}

static void test_expand_run(void **state) {
  (void)state;
  static const struct {
    const char *in;
    gint64 shape[4];
    guint n;
  } cases[] = {
      {"3, 1", {2, 1, 4}, 3},
      {"1, N, 1", {2, 1, 5}, 3},
      {"4", {1}, 1},
      {"", {2, 3}, 2},
  };
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    Op *o = op_new("Expand", "expand1");
    WeirTensor *x = op_input(o, c == 1 ? WEIR_DTYPE_BOOL : WEIR_DTYPE_F64,
                             cases[c].in, 60 + c);
    weir_node_set_attr_ints(o->n, "shape", cases[c].shape, cases[c].n);
    op_finish(o, 1);
    op_run(o);
    g_autoptr(WeirTensor) want = like(o->out[0]);
    guint r = want->rank, off = r - x->rank;
    for (gint64 i = 0; i < want->count; i++) {
      gint64 oi[MAX_RANK], xi[MAX_RANK];
      unravel(i, want->shape, r, oi);
      for (guint d = 0; d < x->rank; d++)
        xi[d] = x->shape[d] == 1 ? 0 : oi[d + off];
      weir_tensor_set(want, i,
                      weir_tensor_get(x, ravel(xi, x->shape, x->rank)));
    }
    assert_tensor_equal(o->out[0], want);
    op_free(o);
  }
}

static void test_tile_run(void **state) {
  (void)state;
  static const gint64 reps[][3] = {{1, 1, 1}, {2, 1, 3}, {1, 3, 2}, {0, 1, 1}};
  for (guint c = 0; c < G_N_ELEMENTS(reps); c++) {
    Op *o = op_new("Tile", "tile1");
    WeirTensor *x =
        op_input(o, c % 2 ? WEIR_DTYPE_I32 : WEIR_DTYPE_F32, "2, 1, N", 70 + c);
    weir_node_set_attr_ints(o->n, "repeats", reps[c], 3);
    op_finish(o, 1);
    op_run(o);
    g_autoptr(WeirTensor) want = like(o->out[0]);
    for (gint64 i = 0; i < want->count; i++) {
      gint64 idx[3];
      unravel(i, want->shape, 3, idx);
      for (guint d = 0; d < 3; d++)
        idx[d] %= x->shape[d];
      weir_tensor_set(want, i, weir_tensor_get(x, ravel(idx, x->shape, 3)));
    }
    assert_tensor_equal(o->out[0], want);
    op_free(o);
  }
}

/* ----------------------------------------------------------------- Pad */

static void test_pad_infer(void **state) {
  (void)state;
  GError *error = NULL;
  Lib l = lib_new("Pad");
  WeirOpValue in[1] = {val(WEIR_DTYPE_F32, "N, 4")}, out[1] = {{0}};
  weir_node_set_attr_ints(l.n, "pads", (gint64[]){1, 0, 2, -1}, 4);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "N + 3, 3");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_ints(l.n, "pads", (gint64[]){1, 2}, 2);
  weir_node_set_attr_ints(l.n, "axes", (gint64[]){-1}, 1);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "N, 7");
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_string(l.n, "mode", "wrap");
  assert_false(infer(&l, in, 1, out, 1, &error));
  assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED));
  g_clear_error(&error);
  clear_values(in, 1);
  weir_graph_free(l.g);
}

static gint64 ref_pad_index(gint64 i, gint64 dim, const char *mode) {
  if (i >= 0 && i < dim)
    return i;
  if (strcmp(mode, "edge") == 0)
    return i < 0 ? 0 : dim - 1;
  if (strcmp(mode, "reflect") == 0)
    return i < 0 ? -i : 2 * (dim - 1) - i;
  return -1;
}

static void test_pad_run(void **state) {
  (void)state;
  static const char *const modes[] = {"constant", "reflect", "edge"};
  static const gint64 pads[][4] = {
      {1, 2, 2, 1}, {0, 0, 0, 0}, {2, -1, 0, 3}, {-1, 1, 1, -2}};
  for (guint m = 0; m < G_N_ELEMENTS(modes); m++) {
    for (guint c = 0; c < G_N_ELEMENTS(pads); c++) {
      WeirDType dt = c == 3 ? WEIR_DTYPE_I32 : WEIR_DTYPE_F32;
      Op *o = op_new("Pad", "pad1");
      WeirTensor *x = op_input(o, dt, "N, 4", 80 + c);
      weir_node_set_attr_ints(o->n, "pads", pads[c], 4);
      weir_node_set_attr_string(o->n, "mode", modes[m]);
      double value = dt == WEIR_DTYPE_I32 ? 7 : 1.5;
      if (m == 0)
        weir_node_set_attr_float(o->n, "value", value);
      op_finish(o, 1);
      op_run(o);
      g_autoptr(WeirTensor) want = like(o->out[0]);
      for (gint64 i = 0; i < want->count; i++) {
        gint64 idx[2];
        gboolean inside = TRUE;
        unravel(i, want->shape, 2, idx);
        for (guint d = 0; d < 2; d++) {
          idx[d] = ref_pad_index(idx[d] - pads[c][d], x->shape[d], modes[m]);
          inside = inside && idx[d] >= 0;
        }
        weir_tensor_set(want, i,
                        inside ? weir_tensor_get(x, ravel(idx, x->shape, 2))
                               : value);
      }
      assert_tensor_equal(o->out[0], want);
      op_free(o);
    }
  }
}

/* -------------------------------------------------------------- Shape */

static void test_shape_infer_chain(void **state) {
  (void)state;
  GError *error = NULL;
  /* x: [N, 64, 7, 7]; s = Shape(x); b = Gather(s, 0); u = Unsqueeze(b, 0);
   * t = Concat(u, [-1]); Reshape(x, t) -> [N, 3136]. */
  WeirOpValue x = val(WEIR_DTYPE_F32, "N, 64, 7, 7");
  WeirOpValue s = {0}, b = {0}, u = {0}, t = {0}, r = {0};
  Lib l = lib_new("Shape");
  assert_true(infer(&l, &x, 1, &s, 1, &error));
  assert_shape(&s, "4");
  assert_int_values(&s, "N, 64, 7, 7");
  assert_int_equal(s.dtype, WEIR_DTYPE_I64);
  weir_graph_free(l.g);

  l = lib_new("Gather");
  WeirOpValue gin[2] = {s, val(WEIR_DTYPE_I64, "")};
  set_int_values(&gin[1], "0");
  assert_true(infer(&l, gin, 2, &b, 1, &error));
  assert_shape(&b, "");
  assert_int_values(&b, "N");
  weir_op_value_clear(&gin[1]);
  weir_graph_free(l.g);

  l = lib_new("Unsqueeze");
  weir_node_set_attr_ints(l.n, "axes", (gint64[]){0}, 1);
  assert_true(infer(&l, &b, 1, &u, 1, &error));
  assert_shape(&u, "1");
  assert_int_values(&u, "N");
  weir_graph_free(l.g);

  l = lib_new("Concat");
  weir_node_set_attr_int(l.n, "axis", 0);
  WeirOpValue cin[2] = {u, val(WEIR_DTYPE_I64, "1")};
  set_int_values(&cin[1], "-1");
  assert_true(infer(&l, cin, 2, &t, 1, &error));
  assert_int_values(&t, "N, -1");
  weir_op_value_clear(&cin[1]);
  weir_graph_free(l.g);

  l = lib_new("Reshape");
  WeirOpValue rin[2] = {x, t};
  assert_true(infer(&l, rin, 2, &r, 1, &error));
  assert_shape(&r, "N, 3136");
  weir_graph_free(l.g);

  /* Shape-15 start/end. */
  WeirOpValue p = {0};
  l = lib_new("Shape");
  weir_node_set_attr_int(l.n, "start", -3);
  weir_node_set_attr_int(l.n, "end", -1);
  assert_true(infer(&l, &x, 1, &p, 1, &error));
  assert_int_values(&p, "64, 7");
  weir_op_value_clear(&p);
  weir_node_set_attr_int(l.n, "start", 10);
  assert_true(infer(&l, &x, 1, &p, 1, &error));
  assert_shape(&p, "0");
  weir_op_value_clear(&p);
  weir_graph_free(l.g);

  WeirOpValue all[] = {x, s, b, u, t, r};
  clear_values(all, G_N_ELEMENTS(all));
}

static void test_int_values_binary(void **state) {
  (void)state;
  Lib l = lib_new("Mul");
  WeirOpValue in[2] = {val(WEIR_DTYPE_I64, "2"), val(WEIR_DTYPE_I64, "")};
  WeirOpValue out[1] = {{0}};
  set_int_values(&in[0], "N, 7");
  set_int_values(&in[1], "64");
  WeirOpInferContext ctx = {l.n, 2, in, 1, out, NULL};
  assert_true(weir_op_int_values_binary(&ctx, NULL));
  assert_int_values(&out[0], "64*N, 448");
  assert_true(weir_op_int_values_binary(&ctx, "Add"));
  assert_int_values(&out[0], "N + 64, 71");
  assert_true(weir_op_int_values_binary(&ctx, "Sub"));
  assert_int_values(&out[0], "N - 64, -57");
  weir_op_value_clear(&in[1]);
  in[1] = val(WEIR_DTYPE_I64, "");
  set_int_values(&in[1], "-2");
  weir_op_value_clear(&in[0]);
  in[0] = val(WEIR_DTYPE_I64, "2");
  set_int_values(&in[0], "-7, 2*N");
  assert_true(weir_op_int_values_binary(&ctx, "Div"));
  assert_int_values(&out[0], "3, -N"); /* truncates toward zero */
  weir_op_value_clear(&in[0]);
  in[0] = val(WEIR_DTYPE_I64, "1");
  set_int_values(&in[0], "N");
  assert_false(weir_op_int_values_binary(&ctx, "Div")); /* N / -2 unknown */
  weir_op_value_clear(&in[1]);
  in[1] = val(WEIR_DTYPE_I64, "");
  assert_false(weir_op_int_values_binary(&ctx, "Add")); /* unknown input */
  clear_values(in, 2);
  clear_values(out, 1);
  weir_graph_free(l.g);
}

static void test_shape_run(void **state) {
  (void)state;
  for (guint c = 0; c < 3; c++) {
    Op *o = op_new("Shape", "shape1");
    op_input(o, WEIR_DTYPE_F32, "N, 4, 5", 1);
    if (c == 1)
      weir_node_set_attr_int(o->n, "start", 1);
    if (c == 2) {
      weir_node_set_attr_int(o->n, "start", -2);
      weir_node_set_attr_int(o->n, "end", -1);
    }
    op_finish(o, 1);
    op_run(o);
    static const gint64 all[] = {N_VALUE, 4, 5};
    gint64 first = c == 0 ? 0 : 1, len = c == 0 ? 3 : c == 1 ? 2 : 1;
    assert_int_equal(o->out[0]->dtype, WEIR_DTYPE_I64);
    assert_int_equal(o->out[0]->count, len);
    for (gint64 i = 0; i < len; i++)
      assert_int_equal(((gint64 *)o->out[0]->data)[i], all[first + i]);
    op_free(o);
  }
}

/* ---------------------------------------------- ConstantOfShape, Range */

static void test_constant_of_shape(void **state) {
  (void)state;
  GError *error = NULL;
  Lib l = lib_new("ConstantOfShape");
  WeirOpValue in[1] = {val(WEIR_DTYPE_I64, "2")}, out[1] = {{0}};
  set_int_values(&in[0], "N, 3");
  weir_node_set_attr_int(l.n, "dtype", 7);
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_shape(&out[0], "N, 3");
  assert_int_equal(out[0].dtype, WEIR_DTYPE_I64);
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_int(l.n, "dtype", 10); /* FLOAT16 */
  assert_true(infer(&l, in, 1, out, 1, &error));
  assert_int_equal(out[0].dtype, WEIR_DTYPE_F16);
  weir_op_value_clear(&out[0]);
  weir_node_set_attr_int(l.n, "dtype", 8); /* STRING */
  assert_false(infer(&l, in, 1, out, 1, &error));
  assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED));
  g_clear_error(&error);
  clear_values(in, 1);
  weir_graph_free(l.g);

  static const struct {
    gint64 dtype;
    double value;
    gint64 shape[2];
    guint rank;
  } cases[] = {
      {1, 1.5, {2, 3}, 2}, {7, -3, {4}, 1}, {9, 1, {2, 2}, 2}, {6, 5, {0}, 0}};
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    Op *o = op_new("ConstantOfShape", "cos1");
    weir_node_set_attr_ints(o->n, "shape", cases[c].shape, cases[c].rank);
    weir_node_set_attr_int(o->n, "dtype", cases[c].dtype);
    weir_node_set_attr_float(o->n, "value", cases[c].value);
    op_finish(o, 1);
    op_run(o);
    g_autoptr(WeirTensor) want = like(o->out[0]);
    for (gint64 i = 0; i < want->count; i++)
      weir_tensor_set(want, i, cases[c].value);
    assert_int_equal(want->rank, cases[c].rank);
    assert_tensor_equal(o->out[0], want);
    op_free(o);
  }
}

static void test_range(void **state) {
  (void)state;
  GError *error = NULL;
  static const struct {
    gint64 dtype;
    double start, limit, delta;
    gint64 len;
  } cases[] = {
      {1, 1, 5, 2, 2},        {7, 10, 4, -3, 2}, {6, 0, 10, 3, 4},
      {11, 0.5, 2.0, 0.3, 5}, {1, 5, 1, 1, 0},
  };
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    Op *o = op_new("Range", "range1");
    weir_node_set_attr_int(o->n, "dtype", cases[c].dtype);
    weir_node_set_attr_float(o->n, "start", cases[c].start);
    weir_node_set_attr_float(o->n, "limit", cases[c].limit);
    weir_node_set_attr_float(o->n, "delta", cases[c].delta);
    op_finish(o, 1);
    assert_int_equal(o->out[0]->count, cases[c].len);
    op_run(o);
    g_autoptr(WeirTensor) want = like(o->out[0]);
    for (gint64 i = 0; i < want->count; i++)
      weir_tensor_set(want, i, cases[c].start + i * cases[c].delta);
    assert_tensor_equal(o->out[0], want);
    op_free(o);
  }
  /* A symbolic integer range from int_values inputs. */
  Lib l = lib_new("Range");
  WeirOpValue in[3] = {val(WEIR_DTYPE_I64, ""), val(WEIR_DTYPE_I64, ""),
                       val(WEIR_DTYPE_I64, "")};
  WeirOpValue out[1] = {{0}};
  set_int_values(&in[0], "0");
  set_int_values(&in[1], "N");
  set_int_values(&in[2], "1");
  assert_true(infer(&l, in, 3, out, 1, &error));
  assert_shape(&out[0], "N");
  assert_int_equal(out[0].dtype, WEIR_DTYPE_I64);
  weir_op_value_clear(&out[0]);
  set_int_values(&in[2], "0");
  assert_false(infer(&l, in, 3, out, 1, &error));
  g_clear_error(&error);
  clear_values(in, 3);
  weir_graph_free(l.g);
}

/* Integer arithmetic and casts of the elementwise family keep shape
 * computations known (and symbolic) at import time. */
static void test_int_values_through_elementwise(void **state) {
  (void)state;
  struct {
    const char *op, *a, *b, *want;
  } cases[] = {
      {"Mul", "N, 64", "2, 2", "2*N, 128"},
      {"Add", "N, 3", "1", "N + 1, 4"},
      {"Sub", "N", "N", "0"},
      {"Div", "64*N, 7", "64, 2", "N, 3"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    Lib l = lib_new(cases[i].op);
    g_auto(GStrv) pa = g_strsplit(cases[i].a, ",", -1);
    g_autofree char *sa = g_strdup_printf("%u", g_strv_length(pa));
    WeirOpValue in[2] = {val(WEIR_DTYPE_I64, sa), val(WEIR_DTYPE_I64, "1")};
    g_auto(GStrv) pb = g_strsplit(cases[i].b, ",", -1);
    if (g_strv_length(pb) != 1) {
      weir_op_value_clear(&in[1]);
      g_autofree char *sb = g_strdup_printf("%u", g_strv_length(pb));
      in[1] = val(WEIR_DTYPE_I64, sb);
    }
    set_int_values(&in[0], cases[i].a);
    set_int_values(&in[1], cases[i].b);
    WeirOpValue out[1] = {{0}};
    GError *error = NULL;
    if (!infer(&l, in, 2, out, 1, &error))
      fail_msg("%s: %s", cases[i].op, error->message);
    assert_int_values(&out[0], cases[i].want);
    clear_values(in, 2);
    clear_values(out, 1);
    weir_graph_free(l.g);
  }
  /* Cast between integer types carries the values too. */
  Lib l = lib_new("Cast");
  weir_node_set_attr_int(l.n, "to", 6); /* INT32 */
  WeirOpValue in[1] = {val(WEIR_DTYPE_I64, "2")};
  set_int_values(&in[0], "N, 5");
  WeirOpValue out[1] = {{0}};
  assert_true(infer(&l, in, 1, out, 1, NULL));
  assert_int_values(&out[0], "N, 5");
  clear_values(in, 1);
  clear_values(out, 1);
  weir_graph_free(l.g);
}

/* Shape values known at import through comparisons, Where, Not and Mod
 * (PyTorch's expand(-1) and Swin's padding), and through 2-D Slice and
 * Transpose (the reordering of pads). */
static void test_int_values_folding(void **state) {
  (void)state;
  struct {
    const char *op, *a, *b, *want;
    gint64 fmod;
  } cases[] = {
      {"Equal", "N, -1, 3", "-1", "0, 1, 0", 0},
      {"Equal", "N, N + 1", "N", "1, 0", 0},
      {"Less", "N, N - 2", "N + 1", "1, 1", 0},
      {"GreaterOrEqual", "5, 2", "3", "1, 0", 0},
      {"Mod", "7, -7, 7, -7", "3, 3, -3, -3", "1, 2, -2, -1", 0},
      {"Mod", "7, -7, 7, -7", "3, 3, -3, -3", "1, -1, 1, -1", 1},
      {"Mod", "N, 14", "7", "N % 7, 0", 0},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    Lib l = lib_new(cases[i].op);
    if (strcmp(cases[i].op, "Mod") == 0)
      weir_node_set_attr_int(l.n, "fmod", cases[i].fmod);
    g_auto(GStrv) pa = g_strsplit(cases[i].a, ",", -1);
    g_auto(GStrv) pb = g_strsplit(cases[i].b, ",", -1);
    g_autofree char *sa = g_strdup_printf("%u", g_strv_length(pa));
    g_autofree char *sb = g_strdup_printf("%u", g_strv_length(pb));
    WeirOpValue in[2] = {val(WEIR_DTYPE_I64, sa), val(WEIR_DTYPE_I64, sb)};
    set_int_values(&in[0], cases[i].a);
    set_int_values(&in[1], cases[i].b);
    WeirOpValue out[1] = {{0}};
    GError *error = NULL;
    if (!infer(&l, in, 2, out, 1, &error))
      fail_msg("%s: %s", cases[i].op, error->message);
    assert_int_values(&out[0], cases[i].want);
    clear_values(in, 2);
    clear_values(out, 1);
    weir_graph_free(l.g);
  }
  /* A symbolic comparison that is not known gives nothing. */
  {
    Lib l = lib_new("Less");
    WeirOpValue in[2] = {val(WEIR_DTYPE_I64, "1"), val(WEIR_DTYPE_I64, "1")};
    set_int_values(&in[0], "N");
    set_int_values(&in[1], "3");
    WeirOpValue out[1] = {{0}};
    assert_true(infer(&l, in, 2, out, 1, NULL));
    assert_null(out[0].int_values);
    clear_values(in, 2);
    clear_values(out, 1);
    weir_graph_free(l.g);
  }
  /* Where(Equal(shape, -1), 1, shape) and Not. */
  {
    Lib l = lib_new("Where");
    WeirOpValue in[3] = {val(WEIR_DTYPE_BOOL, "3"), val(WEIR_DTYPE_I64, "3"),
                         val(WEIR_DTYPE_I64, "3")};
    set_int_values(&in[0], "0, 1, 1");
    set_int_values(&in[1], "1, 1, 1");
    set_int_values(&in[2], "N, -1, -1");
    WeirOpValue out[1] = {{0}};
    assert_true(infer(&l, in, 3, out, 1, NULL));
    assert_int_values(&out[0], "N, 1, 1");
    clear_values(in, 3);
    clear_values(out, 1);
    weir_graph_free(l.g);
    Lib m = lib_new("Not");
    WeirOpValue x[1] = {val(WEIR_DTYPE_BOOL, "2")};
    set_int_values(&x[0], "0, 1");
    WeirOpValue y[1] = {{0}};
    assert_true(infer(&m, x, 1, y, 1, NULL));
    assert_int_values(&y[0], "1, 0");
    clear_values(x, 1);
    clear_values(y, 1);
    weir_graph_free(m.g);
  }
  /* [[0, 4], [1, 2], [3, 5]] reversed along axis 0 and transposed. */
  {
    Lib l = lib_new("Slice");
    gint64 st[] = {-1}, en[] = {G_MININT64 + 1}, ax[] = {0}, sp[] = {-1};
    weir_node_set_attr_ints(l.n, "starts", st, 1);
    weir_node_set_attr_ints(l.n, "ends", en, 1);
    weir_node_set_attr_ints(l.n, "axes", ax, 1);
    weir_node_set_attr_ints(l.n, "steps", sp, 1);
    WeirOpValue in[1] = {val(WEIR_DTYPE_I64, "3, 2")};
    set_int_values(&in[0], "0, 4, 1, 2, 3, N");
    WeirOpValue out[1] = {{0}};
    assert_true(infer(&l, in, 1, out, 1, NULL));
    assert_int_values(&out[0], "3, N, 1, 2, 0, 4");
    weir_graph_free(l.g);
    Lib t = lib_new("Transpose");
    WeirOpValue tr[1] = {{0}};
    assert_true(infer(&t, out, 1, tr, 1, NULL));
    assert_shape(&tr[0], "2, 3");
    assert_int_values(&tr[0], "3, 1, 0, N, 2, 4");
    clear_values(in, 1);
    clear_values(out, 1);
    clear_values(tr, 1);
    weir_graph_free(t.g);
  }
}

/* ---------------------------------------------------------- ScatterND */

static void test_scatter_nd(void **state) {
  (void)state;
  static const char *const reductions[] = {"none", "add", "mul", "max", "min"};
  for (guint r = 0; r < G_N_ELEMENTS(reductions); r++) {
    /* data [4, 3]; indices [3, 1] address rows (one negative, and for the
     * reductions one repeated); updates [3, 3]. */
    Op *o = op_new("ScatterND", "scatter1");
    WeirTensor *x = op_input(o, WEIR_DTYPE_F32, "4, 3", 70 + r);
    WeirTensor *ind = op_input(o, WEIR_DTYPE_I64, "3, 1", 0);
    WeirTensor *u = op_input(o, WEIR_DTYPE_F32, "3, 3", 80 + r);
    gint64 rows[] = {2, -4, r == 0 ? 3 : 2}; /* -4 is row 0 */
    for (guint i = 0; i < 3; i++)
      weir_tensor_set(ind, i, (double)rows[i]);
    weir_node_set_attr_string(o->n, "reduction", reductions[r]);
    op_finish(o, 1);
    op_run(o);
    g_autoptr(WeirTensor) want = like(o->out[0]);
    for (gint64 i = 0; i < want->count; i++)
      weir_tensor_set(want, i, weir_tensor_get(x, i));
    for (guint i = 0; i < 3; i++) {
      gint64 row = rows[i] < 0 ? rows[i] + 4 : rows[i];
      for (gint64 j = 0; j < 3; j++) {
        double a = weir_tensor_get(want, row * 3 + j);
        double b = weir_tensor_get(u, i * 3 + j);
        double v = r == 1   ? a + b
                   : r == 2 ? a * b
                   : r == 3 ? MAX(a, b)
                   : r == 4 ? MIN(a, b)
                            : b;
        weir_tensor_set(want, row * 3 + j, (float)v);
      }
    }
    assert_tensor_equal(o->out[0], want);
    op_free(o);
  }
  /* Indices addressing single elements of a [2, 2, N] tensor. */
  Op *o = op_new("ScatterND", "scatter2");
  WeirTensor *x = op_input(o, WEIR_DTYPE_I32, "2, 2, N", 90);
  WeirTensor *ind = op_input(o, WEIR_DTYPE_I64, "2, 3", 0);
  WeirTensor *u = op_input(o, WEIR_DTYPE_I32, "2", 91);
  gint64 idx[] = {1, 0, 2, 0, 1, -1};
  for (guint i = 0; i < 6; i++)
    weir_tensor_set(ind, i, (double)idx[i]);
  op_finish(o, 1);
  op_run(o);
  g_autoptr(WeirTensor) want = like(o->out[0]);
  for (gint64 i = 0; i < want->count; i++)
    weir_tensor_set(want, i, weir_tensor_get(x, i));
  weir_tensor_set(want, (1 * 2 + 0) * N_VALUE + 2, weir_tensor_get(u, 0));
  weir_tensor_set(want, (0 * 2 + 1) * N_VALUE + N_VALUE - 1,
                  weir_tensor_get(u, 1));
  assert_tensor_equal(o->out[0], want);
  op_free(o);

  /* Inference errors. */
  Lib l = lib_new("ScatterND");
  WeirOpValue in[3] = {val(WEIR_DTYPE_F32, "4, 3"), val(WEIR_DTYPE_I64, "2, 1"),
                       val(WEIR_DTYPE_F32, "2, 4")};
  WeirOpValue out[1] = {{0}};
  g_autoptr(GError) error = NULL;
  assert_false(infer(&l, in, 3, out, 1, &error));
  assert_non_null(
      strstr(error->message, "indices.shape[:-1] + data.shape[1:]"));
  clear_values(in, 3);
  weir_graph_free(l.g);
}

/* ------------------------------------------------------------- Resize */

static void test_resize(void **state) {
  (void)state;
  /* The ONNX examples: [[1, 2], [3, 4]] scaled by 2 (linear, half_pixel)
   * and by (2, 3) (nearest, round_prefer_floor). */
  static const float linear[] = {1,   1.25, 1.75, 2,   1.5, 1.75, 2.25, 2.5,
                                 2.5, 2.75, 3.25, 3.5, 3,   3.25, 3.75, 4};
  static const float nearest[] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                  3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  for (guint c = 0; c < 2; c++) {
    Op *o = op_new("Resize", "resize1");
    WeirTensor *x = op_input(o, WEIR_DTYPE_F32, "N, 1, 2, 2", 0);
    for (gint64 i = 0; i < x->count; i++)
      weir_tensor_set(x, i, (double)(i % 4 + 1));
    double scales[] = {1, 1, 2, c == 0 ? 2 : 3};
    weir_node_set_attr_floats(o->n, "scales", scales, 4);
    weir_node_set_attr_string(o->n, "mode", c == 0 ? "linear" : "nearest");
    op_finish(o, 1);
    g_autofree char *shape = exprs_text(
        (WeirExpr *const *)weir_graph_container(o->g, "y0")->shape->pdata, 4);
    assert_string_equal(shape, c == 0 ? "N, 1, 4, 4" : "N, 1, 4, 6");
    /* FLOPs: bilinear, 3 interpolations of 3 operations per element. */
    g_autoptr(WeirExpr) f = weir_op_lookup("Resize")->flops(o->g, o->s, o->n);
    g_autofree char *ft = weir_expr_to_string(f);
    assert_string_equal(ft, c == 0 ? "144*N" : "0");
    op_run(o);
    const float *want = c == 0 ? linear : nearest;
    gint64 per = c == 0 ? 16 : 24;
    for (gint64 i = 0; i < o->out[0]->count; i++)
      assert_float_equal(weir_tensor_get(o->out[0], i), want[i % per], 1e-6);
    op_free(o);
  }
  /* align_corners with sizes, and the axis of size 1 kept. */
  Op *o = op_new("Resize", "resize2");
  WeirTensor *x = op_input(o, WEIR_DTYPE_F64, "1, 3", 0);
  for (gint64 i = 0; i < 3; i++)
    weir_tensor_set(x, i, (double)(i * i));
  gint64 sizes[] = {2, 5};
  weir_node_set_attr_ints(o->n, "sizes", sizes, 2);
  weir_node_set_attr_string(o->n, "mode", "linear");
  weir_node_set_attr_string(o->n, "coordinate_transformation_mode",
                            "align_corners");
  op_finish(o, 1);
  op_run(o);
  static const double ac[] = {0, 0.5, 1, 2.5, 4};
  for (gint64 i = 0; i < 10; i++)
    assert_float_equal(weir_tensor_get(o->out[0], i), ac[i % 5], 1e-12);
  op_free(o);

  /* Cubic weights add up to 1: a constant input stays constant, also with
   * exclude_outside. */
  for (guint ex = 0; ex < 2; ex++) {
    Op *c = op_new("Resize", "resize3");
    WeirTensor *cx = op_input(c, WEIR_DTYPE_F32, "1, 1, 3, 4", 0);
    for (gint64 i = 0; i < cx->count; i++)
      weir_tensor_set(cx, i, 5.0);
    double sc[] = {1, 1, 2, 1.5};
    weir_node_set_attr_floats(c->n, "scales", sc, 4);
    weir_node_set_attr_string(c->n, "mode", "cubic");
    weir_node_set_attr_int(c->n, "exclude_outside", ex);
    op_finish(c, 1);
    g_autoptr(WeirExpr) f = weir_op_lookup("Resize")->flops(c->g, c->s, c->n);
    g_autofree char *ft = weir_expr_to_string(f);
    assert_string_equal(ft, "1260"); /* 36 elements x 5 combinations x 7 */
    op_run(c);
    for (gint64 i = 0; i < c->out[0]->count; i++)
      assert_float_equal(weir_tensor_get(c->out[0], i), 5.0, 1e-5);
    op_free(c);
  }

  /* tf_crop_and_resize (ONNX's example with an extrapolation value): X
   * [2, 1, 4, 4] = 1..16 twice, rows 0.4..1.2 and columns 0.6..1.7 of the image
   * onto 3 x 3.  Rows 1.2, 2.4, 3.6 and columns 1.8, 3.45, 5.1: row 3.6
   * and columns 3.45 and 5.1 are outside [0, 3] and give 10.  Linear
   * interpolates 1 + 4 row + col; nearest rounds to (1, 2) and (2, 2). */
  static const float crop_linear[] = {7.6f, 10, 10, 12.4f, 10, 10, 10, 10, 10};
  static const float crop_nearest[] = {7, 10, 10, 11, 10, 10, 10, 10, 10};
  for (guint c = 0; c < 2; c++) {
    Op *t = op_new("Resize", "resize4");
    WeirTensor *tx = op_input(t, WEIR_DTYPE_F32, "2, 1, 4, 4", 0);
    for (gint64 i = 0; i < tx->count; i++)
      weir_tensor_set(tx, i, (double)(i % 16 + 1));
    double roi[] = {0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7};
    weir_node_set_attr_floats(t->n, "roi", roi, 8);
    weir_node_set_attr_ints(t->n, "sizes", (gint64[]){2, 1, 3, 3}, 4);
    weir_node_set_attr_string(t->n, "coordinate_transformation_mode",
                              "tf_crop_and_resize");
    weir_node_set_attr_string(t->n, "mode", c == 0 ? "linear" : "nearest");
    weir_node_set_attr_float(t->n, "extrapolation_value", 10);
    op_finish(t, 1);
    /* Only the two cropped axes are interpolated (18 elements x 3
     * interpolations x 3): the first two, roi 0..1, are kept. */
    g_autoptr(WeirExpr) f = weir_op_lookup("Resize")->flops(t->g, t->s, t->n);
    g_autofree char *ft = weir_expr_to_string(f);
    assert_string_equal(ft, c == 0 ? "162" : "0");
    op_run(t);
    const float *want = c == 0 ? crop_linear : crop_nearest;
    for (gint64 i = 0; i < t->out[0]->count; i++)
      assert_float_equal(weir_tensor_get(t->out[0], i), want[i % 9], 1e-5);
    op_free(t);
  }

  /* Refused: tf_crop_and_resize without a roi or with one of the wrong
   * length, a fractional scale of a symbolic dimension, both scales and
   * sizes. */
  struct {
    const char *mode;
    double scale;
    gboolean sizes;
    WeirErrorCode code;
  } bad[] = {
      {"tf_crop_and_resize", 2, FALSE, WEIR_ERROR_INVALID},
      {"nearest", 1.5, FALSE, WEIR_ERROR_UNSUPPORTED},
      {"nearest", 2, TRUE, WEIR_ERROR_INVALID},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    Lib l = lib_new("Resize");
    if (strcmp(bad[i].mode, "nearest") != 0)
      weir_node_set_attr_string(l.n, "coordinate_transformation_mode",
                                bad[i].mode);
    double sc[] = {bad[i].scale, 1};
    weir_node_set_attr_floats(l.n, "scales", sc, 2);
    if (bad[i].sizes)
      weir_node_set_attr_ints(l.n, "sizes", (gint64[]){2, 2}, 2);
    WeirOpValue in[1] = {val(WEIR_DTYPE_F32, "N, 2")};
    WeirOpValue out[1] = {{0}};
    g_autoptr(GError) error = NULL;
    assert_false(infer(&l, in, 1, out, 1, &error));
    assert_int_equal(error->code, bad[i].code);
    if (i == 0) {
      assert_non_null(strstr(error->message, "'roi'"));
      /* a roi of 2 entries for a rank-2 input (4 needed) */
      g_clear_error(&error);
      weir_node_set_attr_floats(l.n, "roi", (double[]){0, 1}, 2);
      assert_false(infer(&l, in, 1, out, 1, &error));
      assert_int_equal(error->code, WEIR_ERROR_INVALID);
      assert_non_null(strstr(error->message, "'roi' has 2 entries"));
    }
    clear_values(in, 1);
    weir_graph_free(l.g);
  }
}

/* ----------------------------------------------------------- Upsample */

/* Upsample is Resize with asymmetric coordinates and floor rounding. */
static void test_upsample(void **state) {
  (void)state;
  /* ONNX's example (test_upsample_nearest): [[1, 2], [3, 4]] by (2, 3). */
  static const float nearest[] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                  3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  /* linear by (2, 2), asymmetric: source rows and columns 0, 0.5, 1, 1.5
   * (the last clamped to the edge); Resize's half_pixel would give
   * 1, 1.25, 1.75, 2 in the first row. */
  static const float linear[] = {1, 1.5, 2, 2, 2, 2.5, 3, 3,
                                 3, 3.5, 4, 4, 3, 3.5, 4, 4};
  for (guint c = 0; c < 2; c++) {
    Op *o = op_new("Upsample", "up");
    WeirTensor *x = op_input(o, WEIR_DTYPE_F32, "N, 1, 2, 2", 0);
    for (gint64 i = 0; i < x->count; i++)
      weir_tensor_set(x, i, (double)(i % 4 + 1));
    double scales[] = {1, 1, 2, c == 0 ? 3 : 2};
    weir_node_set_attr_floats(o->n, "scales", scales, 4);
    if (c == 1)
      weir_node_set_attr_string(o->n, "mode", "linear");
    op_finish(o, 1);
    g_autofree char *shape = exprs_text(
        (WeirExpr *const *)weir_graph_container(o->g, "y0")->shape->pdata, 4);
    assert_string_equal(shape, c == 0 ? "N, 1, 4, 6" : "N, 1, 4, 4");
    g_autoptr(WeirExpr) f = weir_op_lookup("Upsample")->flops(o->g, o->s, o->n);
    g_autofree char *ft = weir_expr_to_string(f);
    assert_string_equal(ft, c == 0 ? "0" : "144*N");
    op_run(o);
    const float *want = c == 0 ? nearest : linear;
    gint64 per = c == 0 ? 24 : 16;
    for (gint64 i = 0; i < o->out[0]->count; i++)
      assert_float_equal(weir_tensor_get(o->out[0], i), want[i % per], 1e-6);
    op_free(o);
  }
  /* A fractional scale rounds the source coordinate down: width 2 by
   * 2.5 is 5 wide, sources 0, 0.4, 0.8, 1.2, 1.6 -> 0, 0, 0, 1, 1. */
  Op *o = op_new("Upsample", "up2");
  WeirTensor *x = op_input(o, WEIR_DTYPE_F64, "1, 2", 0);
  weir_tensor_set(x, 0, 7);
  weir_tensor_set(x, 1, 9);
  weir_node_set_attr_floats(o->n, "scales", (double[]){1, 2.5}, 2);
  op_finish(o, 1);
  op_run(o);
  static const double frac[] = {7, 7, 7, 9, 9};
  assert_int_equal(o->out[0]->count, 5);
  for (gint64 i = 0; i < 5; i++)
    assert_float_equal(weir_tensor_get(o->out[0], i), frac[i], 0);
  op_free(o);

  /* Refused: a scale below 1, mode cubic, no scales, scales as data. */
  struct {
    const char *mode;
    double scale;
    gboolean scales, data;
    const char *message;
  } bad[] = {
      {"nearest", 0.5, TRUE, FALSE, "scales[0] is 0.5"},
      {"cubic", 2, TRUE, FALSE, "mode 'cubic' (expected nearest or linear)"},
      {"nearest", 2, FALSE, FALSE, "'scales' must be given"},
      {"nearest", 2, FALSE, TRUE, "input 1 'scales' must be known"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    Lib l = lib_new("Upsample");
    weir_node_set_attr_string(l.n, "mode", bad[i].mode);
    if (bad[i].scales)
      weir_node_set_attr_floats(l.n, "scales", (double[]){bad[i].scale, 1}, 2);
    WeirOpValue in[2] = {val(WEIR_DTYPE_F32, "N, 2"), val(WEIR_DTYPE_F32, "2")};
    WeirOpValue out[1] = {{0}};
    g_autoptr(GError) error = NULL;
    assert_false(infer(&l, in, bad[i].data ? 2 : 1, out, 1, &error));
    if (!strstr(error->message, bad[i].message))
      fail_msg("%s", error->message);
    clear_values(in, 2);
    weir_graph_free(l.g);
  }
}

/* --------------------------------------------------------- GridSample */

static void test_gridsample(void **state) {
  (void)state;
  /* Bicubic with border and reflection padding, with and without
   * align_corners (the node tests cover bicubic with zeros only): X =
   * [[0, 1], [2, 3], [4, 5]] sampled at 1.7 x the points of ONNX's bicubic
   * example (most fall outside the image); the values are PyTorch's
   * grid_sample (torch 2, float32). */
  static const float grid[] = {-1, -1, -0.5, -0.5, -0.2, -0.2, 0,   0,
                               0,  0,  -0.2, -0.2, 0.5,  0.5,  1.0, 1.0};
  static const struct {
    const char *pad;
    gint64 align;
    float y[8];
  } cases[] = {
      {"border",
       0,
       {0.0f, -0.32772693f, 0.93097591f, 2.5f, 2.5f, 0.93097591f, 5.3277297f,
        5.0000033f}},
      {"border",
       1,
       {-0.20540623f, 0.28694549f, 1.44495296f, 2.5f, 2.5f, 1.44495296f,
        4.71305466f, 5.20540810f}},
      {"reflection",
       0,
       {1.08418751f, -0.46968666f, 0.93097591f, 2.5f, 2.5f, 0.93097591f,
        5.46968937f, 3.91581345f}},
      {"reflection",
       1,
       {1.40875161f, 0.08015625f, 1.27412832f, 2.5f, 2.5f, 1.27412832f,
        4.91984415f, 3.59125066f}},
  };
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    Op *o = op_new("GridSample", "gs");
    WeirTensor *x = op_input(o, WEIR_DTYPE_F32, "1, 1, 3, 2", 0);
    WeirTensor *gr = op_input(o, WEIR_DTYPE_F32, "1, 2, 4, 2", 0);
    for (gint64 i = 0; i < x->count; i++)
      weir_tensor_set(x, i, (double)i);
    for (gint64 i = 0; i < gr->count; i++)
      weir_tensor_set(gr, i, 1.7 * grid[i]);
    weir_node_set_attr_string(o->n, "mode", "bicubic");
    weir_node_set_attr_string(o->n, "padding_mode", cases[c].pad);
    weir_node_set_attr_int(o->n, "align_corners", cases[c].align);
    op_finish(o, 1);
    g_autofree char *shape = exprs_text(
        (WeirExpr *const *)weir_graph_container(o->g, "y0")->shape->pdata, 4);
    assert_string_equal(shape, "1, 1, 2, 4");
    g_autoptr(WeirExpr) f =
        weir_op_lookup("GridSample")->flops(o->g, o->s, o->n);
    g_autofree char *ft = weir_expr_to_string(f);
    assert_string_equal(ft, "280"); /* 8 elements x 35 */
    op_run(o);
    for (gint64 i = 0; i < 8; i++)
      assert_float_equal(weir_tensor_get(o->out[0], i), cases[c].y[i], 2e-5);
    op_free(o);
  }
  /* Refused: an unknown mode, a grid whose last dimension is not 2, an
   * input of rank 5 (the 3-D form of later opsets). */
  struct {
    const char *mode, *x, *grid;
    WeirErrorCode code;
  } bad[] = {
      {"area", "1, 1, 3, 3", "1, 2, 2, 2", WEIR_ERROR_INVALID},
      {"bilinear", "1, 1, 3, 3", "1, 2, 2, 3", WEIR_ERROR_INVALID},
      {"bilinear", "1, 1, 3, 3, 3", "1, 2, 2, 2, 3", WEIR_ERROR_UNSUPPORTED},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    Lib l = lib_new("GridSample");
    weir_node_set_attr_string(l.n, "mode", bad[i].mode);
    WeirOpValue in[2] = {val(WEIR_DTYPE_F32, bad[i].x),
                         val(WEIR_DTYPE_F32, bad[i].grid)};
    WeirOpValue out[1] = {{0}};
    g_autoptr(GError) error = NULL;
    assert_false(infer(&l, in, 2, out, 1, &error));
    assert_int_equal(error->code, bad[i].code);
    assert_non_null(strstr(error->message, "node 'node1' (GridSample)"));
    clear_values(in, 2);
    weir_graph_free(l.g);
  }
}

/* ------------------------------------------------------------- DFT, STFT */

/* The direct DFT of complex x (n samples, re/im interleaved), zero-padded
 * or truncated to len, at frequency k. */
static void ref_dft(const double *x, gint64 n, gint64 len, gint64 k,
                    gboolean inverse, double *re, double *im) {
  long double sr = 0, si = 0;
  for (gint64 t = 0; t < MIN(n, len); t++) {
    long double th = 2 * G_PI * (long double)((k * t) % len) / len;
    long double c = cosl(th), sn = inverse ? sinl(th) : -sinl(th);
    sr += x[2 * t] * c - x[2 * t + 1] * sn;
    si += x[2 * t] * sn + x[2 * t + 1] * c;
  }
  *re = (double)(inverse ? sr / len : sr);
  *im = (double)(inverse ? si / len : si);
}

static void test_dft(void **state) {
  (void)state;
  /* Complex input (the node tests only have real ones), along axis 1 of
   * [2, 5, 3, 2], padded to 8, truncated to 3 (inverse), onesided. */
  static const struct {
    gint64 len;
    gboolean inverse, onesided;
    const char *shape;
  } cases[] = {
      {8, FALSE, FALSE, "2, 8, 3, 2"},
      {3, TRUE, FALSE, "2, 3, 3, 2"},
      {5, FALSE, TRUE, "2, 3, 3, 2"},
  };
  for (guint c = 0; c < G_N_ELEMENTS(cases); c++) {
    Op *o = op_new("DFT", "dft");
    WeirTensor *x = op_input(o, WEIR_DTYPE_F64, "2, 5, 3, 2", 7);
    weir_node_set_attr_int(o->n, "axis", 1);
    weir_node_set_attr_int(o->n, "dft_length", cases[c].len);
    weir_node_set_attr_int(o->n, "inverse", cases[c].inverse);
    weir_node_set_attr_int(o->n, "onesided", cases[c].onesided);
    op_finish(o, 1);
    g_autofree char *shape = exprs_text(
        (WeirExpr *const *)weir_graph_container(o->g, "y0")->shape->pdata, 4);
    assert_string_equal(shape, cases[c].shape);
    g_autoptr(WeirExpr) f = weir_op_lookup("DFT")->flops(o->g, o->s, o->n);
    g_autoptr(WeirExpr) want_f =
        weir_expr_const(o->out[0]->count * 4 * MIN(cases[c].len, 5));
    assert_true(weir_expr_equal(f, want_f));
    op_run(o);
    gint64 bins = o->out[0]->shape[1];
    for (gint64 b = 0; b < 2; b++)
      for (gint64 j = 0; j < 3; j++) {
        double sig[10];
        for (gint64 t = 0; t < 5; t++)
          for (gint64 q = 0; q < 2; q++)
            sig[2 * t + q] = weir_tensor_get(x, ((b * 5 + t) * 3 + j) * 2 + q);
        for (gint64 k = 0; k < bins; k++) {
          double re, im;
          ref_dft(sig, 5, cases[c].len, k, cases[c].inverse, &re, &im);
          gint64 at = ((b * bins + k) * 3 + j) * 2;
          assert_float_equal(weir_tensor_get(o->out[0], at), re, 1e-12);
          assert_float_equal(weir_tensor_get(o->out[0], at + 1), im, 1e-12);
        }
      }
    op_free(o);
  }
}

/* ------------------------------------------------------------- RoiAlign */

static void test_roialign(void **state) {
  (void)state;
  /* X = [[1, 2], [3, 4]], the region (0, 0)-(4, 4) at spatial_scale 0.5,
   * output_half_pixel, one bin of 2 x 2 samples at 0.5 and 1.5: by hand,
   * the bilinear samples are 2.5, 3, 3.5 and 4 (the last row and column
   * clamp), so avg is 3.25; max keeps the largest weighted neighbour, 4. */
  for (guint m = 0; m < 2; m++) {
    Op *o = op_new("RoiAlign", "roi");
    WeirTensor *x = op_input(o, WEIR_DTYPE_F32, "1, 1, 2, 2", 0);
    WeirTensor *r = op_input(o, WEIR_DTYPE_F32, "1, 4", 0);
    WeirTensor *b = op_input(o, WEIR_DTYPE_I64, "1", 0);
    for (gint64 i = 0; i < 4; i++) {
      weir_tensor_set(x, i, (double)(i + 1));
      weir_tensor_set(r, i, i < 2 ? 0.0 : 4.0);
    }
    weir_tensor_set(b, 0, 0);
    weir_node_set_attr_string(o->n, "coordinate_transformation_mode",
                              "output_half_pixel");
    weir_node_set_attr_string(o->n, "mode", m == 0 ? "avg" : "max");
    weir_node_set_attr_int(o->n, "sampling_ratio", 2);
    weir_node_set_attr_float(o->n, "spatial_scale", 0.5);
    op_finish(o, 1);
    op_run(o);
    assert_float_equal(weir_tensor_get(o->out[0], 0), m == 0 ? 3.25 : 4.0,
                       1e-6);
    op_free(o);
  }
  /* Refused: the adaptive sampling (sampling_ratio 0). */
  Lib l = lib_new("RoiAlign");
  WeirOpValue in[3] = {val(WEIR_DTYPE_F32, "1, 1, 4, 4"),
                       val(WEIR_DTYPE_F32, "2, 4"), val(WEIR_DTYPE_I64, "2")};
  WeirOpValue out[1] = {{0}};
  g_autoptr(GError) error = NULL;
  assert_false(infer(&l, in, 3, out, 1, &error));
  assert_int_equal(error->code, WEIR_ERROR_UNSUPPORTED);
  assert_non_null(strstr(error->message, "node 'node1' (RoiAlign)"));
  clear_values(in, 3);
  weir_graph_free(l.g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schemas_and_defaults),
      cmocka_unit_test(test_transpose_infer),
      cmocka_unit_test(test_transpose_run),
      cmocka_unit_test(test_reshape_infer),
      cmocka_unit_test(test_flatten_squeeze_infer),
      cmocka_unit_test(test_copy_ops_run),
      cmocka_unit_test(test_concat_infer),
      cmocka_unit_test(test_concat_run),
      cmocka_unit_test(test_split_infer),
      cmocka_unit_test(test_split_run),
      cmocka_unit_test(test_slice_infer),
      cmocka_unit_test(test_slice_run),
      cmocka_unit_test(test_gather_infer),
      cmocka_unit_test(test_gather_run),
      cmocka_unit_test(test_expand_tile_infer),
      cmocka_unit_test(test_expand_run),
      cmocka_unit_test(test_tile_run),
      cmocka_unit_test(test_pad_infer),
      cmocka_unit_test(test_pad_run),
      cmocka_unit_test(test_shape_infer_chain),
      cmocka_unit_test(test_int_values_binary),
      cmocka_unit_test(test_shape_run),
      cmocka_unit_test(test_constant_of_shape),
      cmocka_unit_test(test_range),
      cmocka_unit_test(test_int_values_through_elementwise),
      cmocka_unit_test(test_int_values_folding),
      cmocka_unit_test(test_scatter_nd),
      cmocka_unit_test(test_resize),
      cmocka_unit_test(test_upsample),
      cmocka_unit_test(test_gridsample),
      cmocka_unit_test(test_dft),
      cmocka_unit_test(test_roialign),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
