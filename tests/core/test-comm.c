/* test-comm.c — the collectives Allreduce and Broadcast (ir/ops/comm.c,
 * ir/lower/expand/comm.c, core/native-mpi.c) in one process, and the
 * data-parallel training program (core/train.c, --data-parallel).
 *
 * In one process (no mpirun: MPI is not initialized) the sum and the mean
 * over the ranks and the broadcast value are the inputs: the interpreter
 * on the pure expansion and the compiled code (the native "mpi"
 * implementation when libweir has MPI) must both give them.  The analyses
 * report the bytes communicated apart from the bytes moved.  A
 * data-parallel training program holds one Allreduce per bucket and, in one
 * process, takes exactly the step of the plain program.  The equivalence
 * over two ranks is test-mpi-train (suite mpi).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-analysis.h"
#include "weir-attr.h"
#include "weir-expand.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-mpi.h"
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-runtime.h"
#include "weir-train.h"
#include "weir-validate.h"

static void wire(WeirGraph *g, WeirState *s, guint src, const char *src_conn,
                 guint dst, const char *dst_conn, const char *name) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirSubset) full =
      weir_container_full_subset(weir_graph_container(g, name));
  g_autofree char *subset = weir_subset_to_string(full);
  if (!weir_state_add_memlet(g, s, src, src_conn, dst, dst_conn, name, subset,
                             &error))
    fail_msg("memlet: %s", error->message);
}

/* x0 [3, 4] and x1 [5] (f32) -> op -> y0, y1; with in_place, y0 is x0. */
static WeirGraph *build(const char *op, const char *reduce, gboolean in_place) {
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_new("comm");
  WeirState *s = weir_graph_add_state(g, "main");
  assert_non_null(
      weir_graph_add_array(g, "x0", WEIR_DTYPE_F32, "3, 4", FALSE, &error));
  assert_non_null(
      weir_graph_add_array(g, "x1", WEIR_DTYPE_F32, "5", FALSE, &error));
  if (!in_place)
    assert_non_null(
        weir_graph_add_array(g, "y0", WEIR_DTYPE_F32, "3, 4", FALSE, &error));
  assert_non_null(
      weir_graph_add_array(g, "y1", WEIR_DTYPE_F32, "5", FALSE, &error));
  static const char *const ins[] = {"in0", "in1", NULL};
  static const char *const outs[] = {"out0", "out1", NULL};
  WeirNode *n = weir_state_add_library(g, s, "bucket", op, ins, outs);
  if (reduce)
    weir_node_set_attr_string(n, "reduce", reduce);
  assert_true(weir_op_check_attrs(n, &error));
  const char *xs[] = {"x0", "x1"};
  const char *ys[] = {in_place ? "x0" : "y0", "y1"};
  for (guint k = 0; k < 2; k++) {
    WeirNode *a = weir_state_add_access(g, s, xs[k]);
    wire(g, s, a->id, NULL, n->id, ins[k], xs[k]);
    WeirNode *b = weir_state_add_access(g, s, ys[k]);
    wire(g, s, n->id, outs[k], b->id, NULL, ys[k]);
  }
  if (!weir_graph_validate(g, &error))
    fail_msg("%s: %s", op, error->message);
  return g;
}

static GHashTable *args_of(const WeirGraph *g) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    gint64 shape[4];
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_is_const(c->shape->pdata[d], &shape[d]));
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    if (c->name[0] == 'x')
      weir_tensor_fill_random(t, (guint64)c->name[1]);
    g_hash_table_insert(args, g_strdup(c->name), t);
  }
  return args;
}

/* y_k (or x0 in place) equal the random inputs. */
static void check_identity(GHashTable *args, gboolean in_place,
                           const char *how) {
  for (guint k = 0; k < 2; k++) {
    g_autofree char *x = g_strdup_printf("x%u", k);
    g_autofree char *y = g_strdup_printf("y%u", k);
    const WeirTensor *xt = g_hash_table_lookup(args, x);
    const WeirTensor *yt =
        g_hash_table_lookup(args, in_place && k == 0 ? x : y);
    g_autoptr(WeirTensor) expect =
        weir_tensor_new(xt->dtype, xt->rank, xt->shape);
    weir_tensor_fill_random(expect, (guint64)x[1]);
    for (gint64 i = 0; i < xt->count; i++)
      if (weir_tensor_get(yt, i) != weir_tensor_get(expect, i))
        fail_msg("%s: %s[%" G_GINT64_FORMAT "] = %g, expected %g", how, y, i,
                 weir_tensor_get(yt, i), weir_tensor_get(expect, i));
  }
}

static void test_schema_and_analysis(void **state) {
  (void)state;
  assert_non_null(weir_op_lookup("Allreduce"));
  assert_non_null(weir_op_lookup("Broadcast"));
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = build("Allreduce", "mean", FALSE);
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, NULL, &error);
  assert_non_null(a);
  /* 17 f32 elements: 68 bytes communicated, 2 FLOPs each (add, divide) */
  assert_true(a->total_comm_bytes.known);
  assert_int_equal(a->total_comm_bytes.value, 68);
  assert_true(a->total_flops.known);
  assert_int_equal(a->total_flops.value, 34);
  const WeirState *s = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    const WeirNodeCost *nc = weir_analysis_node(a, n->id);
    assert_true(nc->comm_bytes.known);
    assert_int_equal(nc->comm_bytes.value,
                     n->kind == WEIR_NODE_LIBRARY ? 68 : 0);
  }
  g_autoptr(WeirGraph) b = build("Broadcast", NULL, FALSE);
  g_autoptr(WeirAnalysis) ab = weir_analysis_compute(b, NULL, &error);
  assert_int_equal(ab->total_comm_bytes.value, 68);
  assert_int_equal(ab->total_flops.value, 0);
  /* a program without collectives communicates nothing */
  assert_true(weir_expand_all(b, NULL, NULL, &error));
  g_autoptr(WeirAnalysis) ae = weir_analysis_compute(b, NULL, &error);
  assert_true(ae->total_comm_bytes.known);
  assert_int_equal(ae->total_comm_bytes.value, 0);
}

static void test_bad_nodes(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = build("Allreduce", "max", FALSE);
  const WeirState *s = g_ptr_array_index(g->states, 0);
  const WeirNode *n = NULL;
  for (guint i = 0; i < s->nodes->len && !n; i++)
    if (((WeirNode *)s->nodes->pdata[i])->kind == WEIR_NODE_LIBRARY)
      n = s->nodes->pdata[i];
  const WeirOpInfo *info = weir_op_lookup("Allreduce");
  WeirOpValue in[2] = {0}, out[2] = {0};
  for (guint k = 0; k < 2; k++) {
    const WeirContainer *c = weir_graph_container(g, k == 0 ? "x0" : "x1");
    in[k].present = TRUE;
    in[k].dtype = c->dtype;
    in[k].rank = c->shape->len;
    in[k].shape = (WeirExpr **)c->shape->pdata;
  }
  WeirOpInferContext ctx = {
      .node = n, .n_inputs = 2, .inputs = in, .n_outputs = 2, .outputs = out};
  assert_false(info->infer(&ctx, &error));
  assert_non_null(strstr(error->message, "reduce is 'max'"));
  assert_non_null(strstr(error->message, "bucket"));
  g_clear_error(&error);
  ctx.n_outputs = 1;
  weir_node_set_attr_string((WeirNode *)n, "reduce", "sum");
  assert_false(info->infer(&ctx, &error));
  assert_non_null(strstr(error->message, "one output per input"));
}

static void test_interpreter(void **state) {
  (void)state;
  static const char *const ops[][2] = {
      {"Allreduce", "sum"}, {"Allreduce", "mean"}, {"Broadcast", NULL}};
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++)
    for (int in_place = 0; in_place < 2; in_place++) {
      g_autoptr(GError) error = NULL;
      g_autoptr(WeirGraph) g = build(ops[i][0], ops[i][1], in_place);
      guint count = 0;
      if (!weir_expand_all(g, NULL, &count, &error))
        fail_msg("%s: %s", ops[i][0], error->message);
      assert_int_equal(count, 1);
      g_autoptr(GHashTable) args = args_of(g);
      if (!weir_interpret(g, NULL, args, NULL, &error))
        fail_msg("%s: %s", ops[i][0], error->message);
      check_identity(args, in_place, ops[i][0]);
    }
}

/* Compiled with the default choice: "mpi" when libweir has MPI (and MPI
 * is not initialized here: one rank), else the pure expansion. */
static void test_compiled(void **state) {
  (void)state;
  static const char *const ops[][2] = {
      {"Allreduce", "sum"}, {"Allreduce", "mean"}, {"Broadcast", NULL}};
  assert_false(weir_mpi_active());
  assert_int_equal(weir_mpi_size(), 1);
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++)
    for (int in_place = 0; in_place < 2; in_place++) {
      g_autoptr(GError) error = NULL;
      g_autoptr(WeirGraph) g = build(ops[i][0], ops[i][1], in_place);
      const WeirState *s = g_ptr_array_index(g->states, 0);
      for (guint j = 0; j < s->nodes->len; j++) {
        const WeirNode *n = s->nodes->pdata[j];
        if (n->kind == WEIR_NODE_LIBRARY)
          assert_string_equal(weir_native_default_impl(g, s, n),
                              weir_mpi_available() ? "mpi" : "pure");
      }
      WeirCompileOptions opts = {.flags = "-O1 -fPIC -shared",
                                 .no_cache = TRUE};
      g_autoptr(WeirKernel) k = weir_kernel_compile(g, &opts, NULL, &error);
      if (!k)
        fail_msg("%s: %s", ops[i][0], error->message);
      g_autoptr(GHashTable) args = args_of(g);
      if (!weir_kernel_run(k, NULL, args, &error))
        fail_msg("%s: %s", ops[i][0], error->message);
      check_identity(args, in_place, ops[i][0]);
    }
}

/* ------------------------------------------------------ data parallel */

static WeirGraph *load_mlp(void) {
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "mlp.onnx", NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_onnx_import(path, NULL, &err);
  if (!g)
    fail_msg("%s", err->message);
  return g;
}

static WeirGraph *train(const WeirGraph *fwd, gboolean dp, gint64 bucket) {
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.lr = 0.1;
  o.steps = 1;
  o.data_parallel = dp;
  o.bucket_bytes = bucket;
  g_autoptr(GError) err = NULL;
  WeirGraph *t = weir_train_graph(fwd, &o, &err);
  if (!t || !weir_graph_validate(t, &err))
    fail_msg("%s", err->message);
  return t;
}

/* The Allreduce nodes of t (borrowed). */
static GPtrArray *allreduces(const WeirGraph *t) {
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; i < t->states->len; i++) {
    const WeirState *s = t->states->pdata[i];
    for (guint j = 0; j < s->nodes->len; j++) {
      WeirNode *n = s->nodes->pdata[j];
      if (n->kind == WEIR_NODE_LIBRARY && !g_strcmp0(n->op, "Allreduce")) {
        assert_string_equal(weir_node_attr_string(n, "reduce", ""), "mean");
        assert_string_equal(s->label, "step");
        g_ptr_array_add(out, n);
      }
    }
  }
  return out;
}

static void test_buckets(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = load_mlp();
  g_auto(GStrv) params = weir_train_parameters(fwd);
  guint np = g_strv_length(params);
  assert_true(np >= 2);
  g_autoptr(WeirGraph) plain = train(fwd, FALSE, 0);
  g_autoptr(GPtrArray) none = allreduces(plain);
  assert_int_equal(none->len, 0);
  /* default 25 MiB: one bucket with every gradient and the loss */
  g_autoptr(WeirGraph) one = train(fwd, TRUE, 0);
  g_autoptr(GPtrArray) a1 = allreduces(one);
  assert_int_equal(a1->len, 1);
  const WeirNode *n = a1->pdata[0];
  assert_int_equal(n->in_conns->len, np + 1);
  /* 1-byte buckets: one gradient each, the loss with the last */
  g_autoptr(WeirGraph) many = train(fwd, TRUE, 1);
  g_autoptr(GPtrArray) an = allreduces(many);
  assert_int_equal(an->len, np);
  /* the analysis counts every gradient byte and the loss */
  g_autoptr(GError) err = NULL;
  g_autoptr(GHashTable) bind = weir_bindings_new();
  for (guint i = 0; i < fwd->symbols->len; i++)
    weir_bindings_set(bind, g_ptr_array_index(fwd->symbols, i), 4);
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(one, bind, &err);
  assert_non_null(a);
  gint64 expect = 4; /* the f32 loss */
  for (guint i = 0; params[i]; i++) {
    g_autoptr(WeirExpr) b =
        weir_container_bytes(weir_graph_container(fwd, params[i]));
    gint64 v;
    assert_true(weir_expr_is_const(b, &v));
    expect += v;
  }
  assert_true(a->total_comm_bytes.known);
  assert_int_equal(a->total_comm_bytes.value, expect);
}

/* In one process the data-parallel step is the plain step, compiled. */
static void test_one_process_step(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = load_mlp();
  g_autoptr(WeirGraph) t0 = train(fwd, FALSE, 0);
  g_autoptr(WeirGraph) t1 = train(fwd, TRUE, 1);
  g_autoptr(GHashTable) symbols = weir_bindings_new();
  for (guint i = 0; i < fwd->symbols->len; i++)
    weir_bindings_set(symbols, g_ptr_array_index(fwd->symbols, i), 4);
  GHashTable *args[2];
  WeirGraph *ts[2] = {t0, t1};
  for (guint p = 0; p < 2; p++) {
    g_autoptr(GError) err = NULL;
    WeirCompileOptions opts = {.flags = "-O1 -fPIC -shared", .no_cache = TRUE};
    g_autoptr(WeirKernel) k = weir_kernel_compile(ts[p], &opts, NULL, &err);
    if (!k)
      fail_msg("%s", err->message);
    args[p] = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                    (GDestroyNotify)weir_tensor_free);
    for (guint i = 0; i < ts[p]->containers->len; i++) {
      const WeirContainer *c = ts[p]->containers->pdata[i];
      if (c->transient)
        continue;
      gint64 shape[8];
      for (guint d = 0; d < c->shape->len; d++)
        assert_true(
            weir_expr_eval(c->shape->pdata[d], symbols, &shape[d], NULL));
      WeirTensor *v = weir_tensor_new(c->dtype, c->shape->len, shape);
      const WeirContainer *f = weir_graph_container(fwd, c->name);
      if (f && f->initial)
        memcpy(v->data, g_bytes_get_data(f->initial, NULL),
               weir_tensor_nbytes(v));
      else if (!strcmp(c->name, "target"))
        for (gint64 j = 0; j < v->count; j++)
          weir_tensor_set(v, j, (double)(j % 3));
      else if (c->dtype == WEIR_DTYPE_F32)
        weir_tensor_fill_random(v, 5);
      g_hash_table_insert(args[p], g_strdup(c->name), v);
    }
    if (!weir_kernel_run(k, symbols, args[p], &err))
      fail_msg("%s", err->message);
  }
  GHashTableIter it;
  gpointer key, val;
  guint compared = 0;
  g_hash_table_iter_init(&it, args[0]);
  while (g_hash_table_iter_next(&it, &key, &val)) {
    const WeirTensor *a = val, *b = g_hash_table_lookup(args[1], key);
    assert_non_null(b);
    assert_int_equal(a->count, b->count);
    for (gint64 j = 0; j < a->count; j++)
      if (weir_tensor_get(a, j) != weir_tensor_get(b, j))
        fail_msg("'%s'[%" G_GINT64_FORMAT "]: %.9g plain, %.9g data parallel",
                 (char *)key, j, weir_tensor_get(a, j), weir_tensor_get(b, j));
    compared++;
  }
  assert_true(compared >= 5);
  /* the step was taken */
  const WeirTensor *step = g_hash_table_lookup(args[1], "step");
  assert_int_equal((gint64)weir_tensor_get(step, 0), 1);
  g_hash_table_unref(args[0]);
  g_hash_table_unref(args[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schema_and_analysis),
      cmocka_unit_test(test_bad_nodes),
      cmocka_unit_test(test_interpreter),
      cmocka_unit_test(test_compiled),
      cmocka_unit_test(test_buckets),
      cmocka_unit_test(test_one_process_step),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
