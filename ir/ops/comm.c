/* comm.c — communication between processes as library nodes (issue 19).
 *
 * Data-parallel training averages gradients over the processes (ranks) of
 * an MPI job.  The communication is part of the program, as library nodes,
 * so that the graph, the analyses and the GUI show it like any other data
 * movement:
 *
 *   Allreduce(x0, x1, ...) -> (y0, y1, ...)
 *       y_k = the element-wise sum (reduce = "sum", the default) or mean
 *       (reduce = "mean") of x_k over every rank.  One node reduces a
 *       bucket of tensors in one collective call.  In place when y_k is
 *       the container of x_k.
 *   Broadcast(x0, x1, ...) -> (y0, y1, ...)
 *       y_k = x_k of rank `root` (default 0) on every rank.
 *
 * The non-blocking form of Allreduce is two nodes with the bucket in
 * flight between them, so the graph shows where the communication starts
 * and where it ends:
 *
 *   AllreduceStart(x0, x1, ...) -> (buf, req)
 *       buf (1-D, the inputs' dtype, as many elements as all inputs) =
 *       the inputs flattened and packed in order; the element-wise sum of
 *       buf over the ranks is started (MPI_Iallreduce) and req (i64 [1])
 *       is its request handle.  Until the matching wait, buf belongs to the
 *       collective: nothing else may read or write it.
 *   AllreduceWait(buf, req) -> (y0, y1, ...)
 *       waits for req; y_k = its slice of buf (the sum over the ranks; the
 *       mean with reduce = "mean"), in the order of the start's inputs.
 *       The outputs' shapes are their containers' (their volumes must add
 *       up to buf's length).
 *   AllreduceTest(req0, req1, ...) -> (req0, req1, ...)
 *       lets the collectives of the requests progress (MPI_Test), in place:
 *       a completed request becomes the null request, whose wait returns at
 *       once.  Placed between the nodes of the backward pass that run while
 *       buckets are in flight (Open MPI progresses a non-blocking
 *       collective only inside MPI calls).  In one process: nothing.
 *
 * Each output has the dtype and shape of its input (f32, f64, i32, i64).
 * With one process (no MPI, or the interpreter) both are the identity: the
 * sum and the mean over one rank are the value itself.  The pure
 * expansions (ir/lower/expand/comm.c) are those copies; the native
 * implementation "mpi" (core/native-mpi.c) calls MPI.
 *
 * FLOPs: an Allreduce adds (and for the mean divides) once per element on
 * each rank (a ring or tree reduction adds (P - 1) / P of the elements per
 * rank and step; counted as one per element, the large-P limit); a
 * Broadcast computes nothing.  Communicated bytes (the analyses'
 * comm_bytes): the payload, the bytes of every input, which each rank
 * contributes (Allreduce) or the root sends (Broadcast).  A ring allreduce
 * sends and receives 2 (P - 1) / P times that per rank (docs/distributed.md).
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-ops.h"

void weir_ops_register_comm(void);

static const WeirOpAttrSpec allreduce_attrs[] = {
    {"reduce", WEIR_ATTR_STRING, FALSE, "sum", 0, 0},
};

static const WeirOpAttrSpec broadcast_attrs[] = {
    {"root", WEIR_ATTR_INT, FALSE, "0", 0, 0},
};

static const WeirOpAttrSpec wait_attrs[] = {
    {"reduce", WEIR_ATTR_STRING, FALSE, "sum", 0, 0},
};

static gboolean comm_dtype(WeirDType t) {
  return t == WEIR_DTYPE_F32 || t == WEIR_DTYPE_F64 || t == WEIR_DTYPE_I32 ||
         t == WEIR_DTYPE_I64;
}

static gboolean check_reduce(const WeirNode *n, GError **error) {
  const char *r = weir_node_attr_string(n, "reduce", "sum");
  if (strcmp(r, "sum") != 0 && strcmp(r, "mean") != 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "reduce is '%s': 'sum' or 'mean'", r);
  return TRUE;
}

static gboolean infer_comm(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (ctx->n_outputs != ctx->n_inputs)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "has %u inputs and %u outputs: one output per input",
                          ctx->n_inputs, ctx->n_outputs);
  if (g_strcmp0(n->op, "Allreduce") == 0) {
    if (!check_reduce(n, error))
      return FALSE;
  } else if (weir_node_attr_int(n, "root", 0) < 0) {
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "root is negative (%" G_GINT64_FORMAT ")",
                          weir_node_attr_int(n, "root", 0));
  }
  for (guint k = 0; k < ctx->n_inputs; k++) {
    const WeirOpValue *x = &ctx->inputs[k];
    if (!x->present)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n, "input %u is missing",
                            k);
    if (!comm_dtype(x->dtype))
      return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                            "input %u is %s: f32, f64, i32 or i64 is supported",
                            k, weir_dtype_name(x->dtype));
    weir_op_set_output(ctx, k, x->dtype, x->rank, x->shape);
  }
  return TRUE;
}

/* AllreduceStart: buf = the inputs packed (1-D), req = i64 [1]. */
static gboolean infer_start(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (ctx->n_outputs != 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "has %u outputs: the buffer and the request",
                          ctx->n_outputs);
  g_autoptr(WeirExpr) total = weir_expr_const(0);
  WeirDType t = WEIR_DTYPE_COUNT;
  for (guint k = 0; k < ctx->n_inputs; k++) {
    const WeirOpValue *x = weir_op_require_input(ctx, k, error);
    if (!x)
      return FALSE;
    if (!comm_dtype(x->dtype))
      return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                            "input %u is %s: f32, f64, i32 or i64 is supported",
                            k, weir_dtype_name(x->dtype));
    if (t != WEIR_DTYPE_COUNT && x->dtype != t)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "input %u is %s, input 0 %s: one dtype per bucket",
                            k, weir_dtype_name(x->dtype), weir_dtype_name(t));
    t = x->dtype;
    g_autoptr(WeirExpr) v = weir_expr_const(1);
    for (guint d = 0; d < x->rank; d++) {
      WeirExpr *m = weir_expr_mul(v, x->shape[d]);
      weir_expr_unref(v);
      v = m;
    }
    WeirExpr *sum = weir_expr_add(total, v);
    weir_expr_unref(total);
    total = sum;
  }
  WeirExpr *one = weir_expr_const(1);
  weir_op_set_output(ctx, 0, t, 1, &total);
  weir_op_set_output(ctx, 1, WEIR_DTYPE_I64, 1, &one);
  weir_expr_unref(one);
  return TRUE;
}

/* AllreduceWait: buf 1-D, req i64; the outputs are their containers'. */
static gboolean infer_wait(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (!check_reduce(n, error))
    return FALSE;
  const WeirOpValue *buf = weir_op_require_input(ctx, 0, error);
  const WeirOpValue *req = buf ? weir_op_require_input(ctx, 1, error) : NULL;
  if (!req)
    return FALSE;
  if (buf->rank != 1 || !comm_dtype(buf->dtype))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 0 (the buffer) is %s of rank %u: a 1-D f32, "
                          "f64, i32 or i64 buffer",
                          weir_dtype_name(buf->dtype), buf->rank);
  if (req->dtype != WEIR_DTYPE_I64)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 1 (the request) is %s: i64",
                          weir_dtype_name(req->dtype));
  return TRUE;
}

/* AllreduceTest: requests (i64 [1]) in place. */
static gboolean infer_test(WeirOpInferContext *ctx, GError **error) {
  const WeirNode *n = ctx->node;
  if (ctx->n_outputs != ctx->n_inputs)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "has %u inputs and %u outputs: one output per input",
                          ctx->n_inputs, ctx->n_outputs);
  for (guint k = 0; k < ctx->n_inputs; k++) {
    const WeirOpValue *x = weir_op_require_input(ctx, k, error);
    if (!x)
      return FALSE;
    if (x->dtype != WEIR_DTYPE_I64)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "input %u is %s: a request (i64)", k,
                            weir_dtype_name(x->dtype));
    weir_op_set_output(ctx, k, x->dtype, x->rank, x->shape);
  }
  return TRUE;
}

/* Elements over every input of n. */
static WeirExpr *input_sum(const WeirGraph *g, const WeirState *s,
                           const WeirNode *n, gboolean bytes) {
  WeirExpr *total = weir_expr_const(0);
  for (guint k = 0; k < n->in_conns->len; k++) {
    const WeirMemlet *m = weir_state_connector_memlet(
        s, n->id, g_ptr_array_index(n->in_conns, k), TRUE, FALSE);
    const WeirContainer *c =
        m && m->data ? weir_graph_container(g, m->data) : NULL;
    if (!c) {
      weir_expr_unref(total);
      return NULL;
    }
    g_autoptr(WeirExpr) v =
        bytes ? weir_container_bytes(c) : weir_container_volume(c);
    WeirExpr *sum = weir_expr_add(total, v);
    weir_expr_unref(total);
    total = sum;
  }
  return total;
}

static WeirExpr *flops_allreduce(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n) {
  g_autoptr(WeirExpr) v = input_sum(g, s, n, FALSE);
  if (!v)
    return NULL;
  gboolean mean =
      g_strcmp0(weir_node_attr_string(n, "reduce", "sum"), "mean") == 0;
  return weir_expr_mul_const(v, mean ? 2 : 1);
}

static WeirExpr *flops_broadcast(const WeirGraph *g, const WeirState *s,
                                 const WeirNode *n) {
  (void)g;
  (void)s;
  (void)n;
  return weir_expr_const(0);
}

static WeirExpr *comm_bytes(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n) {
  return input_sum(g, s, n, TRUE);
}

static const WeirOpInfo op_allreduce = {
    .name = "Allreduce",
    .min_inputs = 1,
    .max_inputs = WEIR_OP_VARIADIC,
    .min_outputs = 1,
    .max_outputs = WEIR_OP_VARIADIC,
    .attrs = allreduce_attrs,
    .n_attrs = G_N_ELEMENTS(allreduce_attrs),
    .infer = infer_comm,
    .flops = flops_allreduce,
    .comm_bytes = comm_bytes,
};

/* The reduction is counted at the start (one add per element), the
 * division of the mean at the wait; the payload at the start. */
static WeirExpr *flops_start(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n) {
  return input_sum(g, s, n, FALSE);
}

static WeirExpr *flops_wait(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n) {
  if (g_strcmp0(weir_node_attr_string(n, "reduce", "sum"), "mean") != 0)
    return weir_expr_const(0);
  const WeirMemlet *m =
      weir_state_connector_memlet(s, n->id, "in0", TRUE, FALSE);
  const WeirContainer *c =
      m && m->data ? weir_graph_container(g, m->data) : NULL;
  return c ? weir_container_volume(c) : NULL;
}

static const WeirOpInfo op_allreduce_start = {
    .name = "AllreduceStart",
    .min_inputs = 1,
    .max_inputs = WEIR_OP_VARIADIC,
    .min_outputs = 2,
    .max_outputs = 2,
    .infer = infer_start,
    .flops = flops_start,
    .comm_bytes = comm_bytes,
};

static const WeirOpInfo op_allreduce_wait = {
    .name = "AllreduceWait",
    .min_inputs = 2,
    .max_inputs = 2,
    .min_outputs = 1,
    .max_outputs = WEIR_OP_VARIADIC,
    .attrs = wait_attrs,
    .n_attrs = G_N_ELEMENTS(wait_attrs),
    .infer = infer_wait,
    .flops = flops_wait,
};

static const WeirOpInfo op_allreduce_test = {
    .name = "AllreduceTest",
    .min_inputs = 1,
    .max_inputs = WEIR_OP_VARIADIC,
    .min_outputs = 1,
    .max_outputs = WEIR_OP_VARIADIC,
    .infer = infer_test,
    .flops = flops_broadcast,
};

static const WeirOpInfo op_broadcast = {
    .name = "Broadcast",
    .min_inputs = 1,
    .max_inputs = WEIR_OP_VARIADIC,
    .min_outputs = 1,
    .max_outputs = WEIR_OP_VARIADIC,
    .attrs = broadcast_attrs,
    .n_attrs = G_N_ELEMENTS(broadcast_attrs),
    .infer = infer_comm,
    .flops = flops_broadcast,
    .comm_bytes = comm_bytes,
};

void weir_ops_register_comm(void) {
  weir_op_register(&op_allreduce);
  weir_op_register(&op_broadcast);
  weir_op_register(&op_allreduce_start);
  weir_op_register(&op_allreduce_wait);
  weir_op_register(&op_allreduce_test);
}
