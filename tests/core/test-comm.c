/* test-comm.c — the collectives Allreduce and Broadcast (ir/ops/comm.c,
 * ir/lower/expand/comm.c, core/native-mpi.c) in one process, and the
 * data-parallel training program (core/train.c, --data-parallel).
 *
 * In one process (no mpirun: MPI is not initialized) the sum and the mean
 * over the ranks and the broadcast value are the inputs: the interpreter
 * on the pure expansion and the compiled code (the native "mpi"
 * implementation when libweir has MPI) must both give them.  The analyses
 * report the bytes communicated apart from the bytes moved.  A
 * data-parallel training program holds one Allreduce per bucket (blocking)
 * or one AllreduceStart / AllreduceWait pair per bucket (overlapped, each
 * start before the backward nodes that do not lead to it, each wait after
 * every backward node) and, in one process, takes exactly the step of the
 * plain program.  The equivalence over two ranks is test-mpi-train (suite
 * mpi).
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

/* x0 [3, 4] and x1 [5] (f32) -> AllreduceStart -> buf [17], req [1]
 * (transients; buf_len elements) -> AllreduceWait (reduce) -> y0, y1. */
static WeirGraph *build_pair(const char *reduce, const char *buf_len) {
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_new("pair");
  WeirState *s = weir_graph_add_state(g, "main");
  static const char *const names[][2] = {
      {"x0", "3, 4"}, {"x1", "5"}, {"y0", "3, 4"}, {"y1", "5"}};
  for (guint i = 0; i < G_N_ELEMENTS(names); i++)
    assert_non_null(weir_graph_add_array(g, names[i][0], WEIR_DTYPE_F32,
                                         names[i][1], FALSE, &error));
  assert_non_null(
      weir_graph_add_array(g, "buf", WEIR_DTYPE_F32, buf_len, TRUE, &error));
  assert_non_null(
      weir_graph_add_array(g, "req", WEIR_DTYPE_I64, "1", TRUE, &error));
  static const char *const two_in[] = {"in0", "in1", NULL};
  static const char *const two_out[] = {"out0", "out1", NULL};
  WeirNode *st = weir_state_add_library(g, s, "bucket_start", "AllreduceStart",
                                        two_in, two_out);
  WeirNode *wt = weir_state_add_library(g, s, "bucket_wait", "AllreduceWait",
                                        two_in, two_out);
  if (reduce)
    weir_node_set_attr_string(wt, "reduce", reduce);
  assert_true(weir_op_check_attrs(st, &error));
  assert_true(weir_op_check_attrs(wt, &error));
  for (guint k = 0; k < 2; k++) {
    WeirNode *a = weir_state_add_access(g, s, names[k][0]);
    wire(g, s, a->id, NULL, st->id, two_in[k], names[k][0]);
    const char *mid = k == 0 ? "buf" : "req";
    WeirNode *m = weir_state_add_access(g, s, mid);
    wire(g, s, st->id, two_out[k], m->id, NULL, mid);
    wire(g, s, m->id, NULL, wt->id, two_in[k], mid);
    WeirNode *b = weir_state_add_access(g, s, names[k + 2][0]);
    wire(g, s, wt->id, two_out[k], b->id, NULL, names[k + 2][0]);
  }
  if (!weir_graph_validate(g, &error))
    fail_msg("pair: %s", error->message);
  return g;
}

/* The pair in one process: the outputs are the inputs, interpreted (pure
 * expansion: copies into and out of the buffer) and compiled (the "mpi"
 * implementation without MPI initialized: one rank); the payload is
 * counted at the start, the division of the mean at the wait. */
static void test_pair(void **state) {
  (void)state;
  static const char *const reduces[] = {"sum", "mean"};
  for (guint i = 0; i < G_N_ELEMENTS(reduces); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirGraph) g = build_pair(reduces[i], "17");
    g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, NULL, &error);
    assert_non_null(a);
    assert_int_equal(a->total_comm_bytes.value, 68);
    assert_int_equal(a->total_flops.value, i == 0 ? 17 : 34);
    const WeirState *s = g_ptr_array_index(g->states, 0);
    for (guint j = 0; j < s->nodes->len; j++) {
      const WeirNode *n = s->nodes->pdata[j];
      if (n->kind != WEIR_NODE_LIBRARY)
        continue;
      assert_string_equal(weir_native_default_impl(g, s, n),
                          weir_mpi_available() ? "mpi" : "pure");
      const WeirNodeCost *nc = weir_analysis_node(a, n->id);
      assert_int_equal(nc->comm_bytes.known ? nc->comm_bytes.value : 0,
                       strcmp(n->op, "AllreduceStart") == 0 ? 68 : 0);
    }
    WeirCompileOptions opts = {.flags = "-O1 -fPIC -shared", .no_cache = TRUE};
    g_autoptr(WeirKernel) k = weir_kernel_compile(g, &opts, NULL, &error);
    if (!k)
      fail_msg("compiled pair: %s", error->message);
    g_autoptr(GHashTable) cargs = args_of(g);
    if (!weir_kernel_run(k, NULL, cargs, &error))
      fail_msg("compiled pair: %s", error->message);
    check_identity(cargs, FALSE, "compiled AllreduceStart/Wait");
    guint count = 0;
    if (!weir_expand_all(g, NULL, &count, &error))
      fail_msg("pair: %s", error->message);
    assert_int_equal(count, 2);
    g_autoptr(GHashTable) args = args_of(g);
    if (!weir_interpret(g, NULL, args, NULL, &error))
      fail_msg("pair: %s", error->message);
    check_identity(args, FALSE, "interpreted AllreduceStart/Wait");
  }
}

static void test_pair_errors(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = build_pair("max", "17");
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirNode *wt = NULL;
  for (guint i = 0; i < s->nodes->len; i++)
    if (!g_strcmp0(((WeirNode *)s->nodes->pdata[i])->op, "AllreduceWait"))
      wt = s->nodes->pdata[i];
  assert_non_null(wt);
  WeirExpr *n17 = weir_expr_const(17), *n1 = weir_expr_const(1);
  WeirOpValue in[2] = {
      {.present = TRUE, .dtype = WEIR_DTYPE_F32, .rank = 1, .shape = &n17},
      {.present = TRUE, .dtype = WEIR_DTYPE_I64, .rank = 1, .shape = &n1}};
  WeirOpValue out[2] = {0};
  WeirOpInferContext ctx = {
      .node = wt, .n_inputs = 2, .inputs = in, .n_outputs = 2, .outputs = out};
  const WeirOpInfo *wait = weir_op_lookup("AllreduceWait");
  assert_false(wait->infer(&ctx, &error));
  assert_non_null(strstr(error->message, "reduce is 'max'"));
  assert_non_null(strstr(error->message, "bucket_wait"));
  g_clear_error(&error);
  weir_node_set_attr_string(wt, "reduce", "mean");
  in[1].dtype = WEIR_DTYPE_F32;
  assert_false(wait->infer(&ctx, &error));
  assert_non_null(strstr(error->message, "the request"));
  g_clear_error(&error);
  /* a start over two dtypes */
  const WeirOpInfo *start = weir_op_lookup("AllreduceStart");
  in[1].dtype = WEIR_DTYPE_F64;
  in[1].shape = &n17;
  ctx.node = wt;
  assert_false(start->infer(&ctx, &error));
  assert_non_null(strstr(error->message, "one dtype per bucket"));
  g_clear_error(&error);
  /* a wait whose outputs do not fill the buffer: refused on expansion */
  weir_expr_unref(n17);
  weir_expr_unref(n1);
  g_autoptr(WeirGraph) bad = build_pair("sum", "18");
  assert_false(weir_expand_all(bad, NULL, NULL, &error));
  assert_non_null(strstr(error->message, "17 elements, buffer 'buf' 18"));
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

static WeirGraph *train(const WeirGraph *fwd, gboolean dp, gint64 bucket,
                        gboolean overlap) {
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.lr = 0.1;
  o.steps = 1;
  o.data_parallel = dp;
  o.bucket_bytes = bucket;
  o.no_overlap = !overlap;
  g_autoptr(GError) err = NULL;
  WeirGraph *t = weir_train_graph(fwd, &o, &err);
  if (!t || !weir_graph_validate(t, &err))
    fail_msg("%s", err->message);
  return t;
}

/* The nodes of operator op in t (borrowed). */
static GPtrArray *nodes_of(const WeirGraph *t, const char *op) {
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; i < t->states->len; i++) {
    const WeirState *s = t->states->pdata[i];
    for (guint j = 0; j < s->nodes->len; j++) {
      WeirNode *n = s->nodes->pdata[j];
      if (n->kind == WEIR_NODE_LIBRARY && !g_strcmp0(n->op, op)) {
        if (strcmp(op, "AllreduceStart") != 0)
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
  g_autoptr(WeirGraph) plain = train(fwd, FALSE, 0, TRUE);
  g_autoptr(GPtrArray) none = nodes_of(plain, "Allreduce");
  g_autoptr(GPtrArray) none_s = nodes_of(plain, "AllreduceStart");
  assert_int_equal(none->len + none_s->len, 0);
  g_autoptr(GHashTable) bind = weir_bindings_new();
  for (guint i = 0; i < fwd->symbols->len; i++)
    weir_bindings_set(bind, g_ptr_array_index(fwd->symbols, i), 4);
  gint64 expect = 4; /* the f32 loss */
  for (guint i = 0; params[i]; i++) {
    g_autoptr(WeirExpr) b =
        weir_container_bytes(weir_graph_container(fwd, params[i]));
    gint64 v;
    assert_true(weir_expr_is_const(b, &v));
    expect += v;
  }
  for (int overlap = 0; overlap < 2; overlap++) {
    /* blocking: Allreduce nodes; overlapped: as many start / wait pairs
     * and no Allreduce */
    const char *op = overlap ? "AllreduceStart" : "Allreduce";
    /* default 25 MiB: one bucket with every gradient and the loss */
    g_autoptr(WeirGraph) one = train(fwd, TRUE, 0, overlap);
    g_autoptr(GPtrArray) a1 = nodes_of(one, op);
    assert_int_equal(a1->len, 1);
    const WeirNode *n = a1->pdata[0];
    assert_int_equal(n->in_conns->len, np + 1);
    g_autoptr(GPtrArray) w1 = nodes_of(one, "AllreduceWait");
    assert_int_equal(w1->len, overlap ? 1 : 0);
    if (overlap) {
      g_autoptr(GPtrArray) blocking = nodes_of(one, "Allreduce");
      assert_int_equal(blocking->len, 0);
      n = w1->pdata[0];
      assert_int_equal(n->out_conns->len, np + 1);
    }
    /* 1-byte buckets: one gradient each, the loss with the last */
    g_autoptr(WeirGraph) many = train(fwd, TRUE, 1, overlap);
    g_autoptr(GPtrArray) an = nodes_of(many, op);
    assert_int_equal(an->len, np);
    g_autoptr(GPtrArray) wn = nodes_of(many, "AllreduceWait");
    assert_int_equal(wn->len, overlap ? np : 0);
    /* the analysis counts every gradient byte and the loss, once */
    g_autoptr(GError) err = NULL;
    g_autoptr(WeirAnalysis) a = weir_analysis_compute(one, bind, &err);
    assert_non_null(a);
    assert_true(a->total_comm_bytes.known);
    assert_int_equal(a->total_comm_bytes.value, expect);
    g_autoptr(WeirAnalysis) am = weir_analysis_compute(many, bind, &err);
    assert_non_null(am);
    assert_int_equal(am->total_comm_bytes.value, expect);
  }
}

/* Position of every node of s in its schedule (the deterministic
 * topological order the code generator follows), by node id. */
static GHashTable *positions(const WeirState *s) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, &err);
  if (!sc)
    fail_msg("%s", err->message);
  GHashTable *pos = g_hash_table_new(NULL, NULL);
  for (guint i = 0; i < sc->order->len; i++)
    g_hash_table_insert(pos,
                        GUINT_TO_POINTER(g_array_index(sc->order, guint, i)),
                        GUINT_TO_POINTER(i + 1));
  return pos;
}

static guint pos_of(GHashTable *pos, guint id) {
  guint p = GPOINTER_TO_UINT(g_hash_table_lookup(pos, GUINT_TO_POINTER(id)));
  assert_true(p > 0);
  return p;
}

/* Whether `to` is reached from `from` along memlets. */
static gboolean reaches(const WeirState *s, guint from, guint to) {
  g_autoptr(GHashTable) seen = g_hash_table_new(NULL, NULL);
  g_autoptr(GArray) todo = g_array_new(FALSE, FALSE, sizeof(guint));
  g_array_append_val(todo, from);
  while (todo->len) {
    guint x = g_array_index(todo, guint, todo->len - 1);
    g_array_set_size(todo, todo->len - 1);
    if (x == to)
      return TRUE;
    g_autoptr(GPtrArray) es = weir_state_out_edges(s, x);
    for (guint i = 0; i < es->len; i++) {
      guint y = ((const WeirMemlet *)es->pdata[i])->dst;
      if (g_hash_table_add(seen, GUINT_TO_POINTER(y)))
        g_array_append_val(todo, y);
    }
  }
  return FALSE;
}

/* Checks the schedule of the step state of t: every start before each
 * computing node of the forward and backward passes (ids below the first
 * collective) that does not lead to it, every wait after all of them and
 * after every start, every AllreduceTest between the first start and the
 * first wait.  Returns how many backward nodes run while a bucket is in
 * flight (after its start); *n_tests counts the AllreduceTest nodes. */
static guint check_overlap_order(const WeirGraph *t, guint *n_starts,
                                 guint *n_tests) {
  const WeirState *s = NULL;
  for (guint i = 0; i < t->states->len; i++)
    if (!strcmp(((WeirState *)t->states->pdata[i])->label, "step"))
      s = t->states->pdata[i];
  assert_non_null(s);
  g_autoptr(GArray) starts = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GArray) waits = g_array_new(FALSE, FALSE, sizeof(guint));
  guint first = G_MAXUINT;
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = s->nodes->pdata[i];
    if (!g_strcmp0(n->op, "AllreduceStart"))
      g_array_append_val(starts, n->id);
    else if (!g_strcmp0(n->op, "AllreduceWait"))
      g_array_append_val(waits, n->id);
    else
      continue;
    first = MIN(first, n->id);
  }
  assert_true(starts->len > 0);
  assert_int_equal(starts->len, waits->len);
  g_autoptr(GHashTable) pos = positions(s);
  guint overlapped = 0;
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = s->nodes->pdata[i];
    if (n->id >= first || n->kind == WEIR_NODE_ACCESS)
      continue;
    guint p = pos_of(pos, n->id);
    for (guint k = 0; k < starts->len; k++) {
      guint st = g_array_index(starts, guint, k);
      if (reaches(s, n->id, st))
        continue; /* the start depends on it */
      if (pos_of(pos, st) > p)
        fail_msg("node %u '%s' runs before start %u, which it does not feed",
                 n->id, n->label, st);
      overlapped++;
    }
    for (guint k = 0; k < waits->len; k++)
      if (pos_of(pos, g_array_index(waits, guint, k)) < p)
        fail_msg("wait %u runs before node %u '%s'",
                 g_array_index(waits, guint, k), n->id, n->label);
  }
  for (guint k = 0; k < waits->len; k++)
    for (guint j = 0; j < starts->len; j++)
      assert_true(pos_of(pos, g_array_index(waits, guint, k)) >
                  pos_of(pos, g_array_index(starts, guint, j)));
  /* the progress tests run while buckets are in flight: after a start,
   * before the waits */
  guint first_start = G_MAXUINT, first_wait = G_MAXUINT;
  for (guint k = 0; k < starts->len; k++) {
    first_start =
        MIN(first_start, pos_of(pos, g_array_index(starts, guint, k)));
    first_wait = MIN(first_wait, pos_of(pos, g_array_index(waits, guint, k)));
  }
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = s->nodes->pdata[i];
    if (g_strcmp0(n->op, "AllreduceTest") != 0)
      continue;
    guint p = pos_of(pos, n->id);
    assert_true(p > first_start && p < first_wait);
    (*n_tests)++;
  }
  *n_starts = starts->len;
  return overlapped;
}

/* The overlapped program: starts as early as the dataflow allows, waits
 * after the backward pass; the blocking form has no pair. */
static void test_overlap_order(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = load_mlp();
  g_auto(GStrv) params = weir_train_parameters(fwd);
  guint np = g_strv_length(params);
  g_autoptr(WeirGraph) many = train(fwd, TRUE, 1, TRUE);
  guint n_starts = 0, n_tests = 0;
  guint overlapped = check_overlap_order(many, &n_starts, &n_tests);
  assert_int_equal(n_starts, np);
  /* progress points after the backward nodes that run meanwhile */
  assert_true(n_tests > 0);
  /* the last layer's buckets start while earlier layers' backward runs */
  assert_true(overlapped > 0);
  print_message("%u (start, backward node) pairs overlap, %u tests\n",
                overlapped, n_tests);
  g_autoptr(WeirGraph) one = train(fwd, TRUE, 0, TRUE);
  check_overlap_order(one, &n_starts, &n_tests);
  assert_int_equal(n_starts, 1);
}

/* In one process the data-parallel step is the plain step, compiled. */
static void one_process_step(const WeirGraph *fwd, gboolean overlap);

static void test_one_process_step(void **state) {
  (void)state;
  g_autoptr(WeirGraph) fwd = load_mlp();
  for (int overlap = 0; overlap < 2; overlap++)
    one_process_step(fwd, overlap);
}

static void one_process_step(const WeirGraph *fwd, gboolean overlap) {
  g_autoptr(WeirGraph) t0 = train(fwd, FALSE, 0, TRUE);
  g_autoptr(WeirGraph) t1 = train(fwd, TRUE, 1, overlap);
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
        fail_msg("'%s'[%" G_GINT64_FORMAT "]: %.9g plain, %.9g data parallel "
                 "(%s)",
                 (char *)key, j, weir_tensor_get(a, j), weir_tensor_get(b, j),
                 overlap ? "overlapped" : "blocking");
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
      cmocka_unit_test(test_pair),
      cmocka_unit_test(test_pair_errors),
      cmocka_unit_test(test_buckets),
      cmocka_unit_test(test_overlap_order),
      cmocka_unit_test(test_one_process_step),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
