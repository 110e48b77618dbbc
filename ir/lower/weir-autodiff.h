/* weir-autodiff.h — reverse-mode automatic differentiation of a state.
 *
 * Differentiation works at the operator level: every operator that can be
 * differentiated has a backward rule, registered by op name next to the
 * operator registry (built-in rules: ir/lower/grad.c).  A rule reads the
 * forward node's inputs and outputs and the gradients of its outputs, and
 * adds library nodes to the same state that compute the gradients of its
 * inputs.  The backward pass is therefore an ordinary dataflow graph of
 * library nodes (Gemm, ReduceSum, Pointwise, SumTo, ...), which expand,
 * interpret, compile and transform like the forward pass.
 *
 * Where an operator has no rule, the fallback differentiates its expansion
 * instead (maps and tasklets, reverse mode over each tasklet with symbolic
 * derivatives of its code and WCR-sum accumulation of the gradients:
 * ir/lower/autodiff-maps.c); a state may also hold map scopes and tasklets from
 * the start.
 *
 * Conventions:
 *  - The state holds access nodes, library nodes, map scopes (one tasklet
 *    each) and tasklets at the top level.  Each forward value is written
 *    once, or initialized and then accumulated through WCR memlets, before
 *    it is read.
 *  - Gradients are new transients named "<value>_grad" (fresh names).  When
 *    a value feeds several nodes, their contributions are summed by one Sum
 *    node before the value's producer is differentiated.
 *  - A rule may give the same container as the gradient of several inputs
 *    or pass a gradient through unchanged (Identity, Add without
 *    broadcasting); gradients are never written in place.
 */
#ifndef WEIR_AUTODIFF_H
#define WEIR_AUTODIFF_H

#include "weir-graph.h"

G_BEGIN_DECLS

typedef struct _WeirGradContext WeirGradContext;

/* Adds the nodes computing the gradients of the inputs of
 * weir_grad_node(ctx) that weir_grad_wants() asks for, and reports each with
 * weir_grad_add().  Errors name the node and the problem. */
typedef gboolean (*WeirGradRule)(WeirGradContext *ctx, GError **error);

/* Registers a rule (replacing one for the same op). */
/**
 * weir_grad_register: (skip)
 */
WEIR_API void weir_grad_register(const char *op, WeirGradRule rule);
/* The rule for op, or NULL. */
/**
 * weir_grad_lookup: (skip)
 */
WEIR_API WeirGradRule weir_grad_lookup(const char *op);
/* The operators that have a backward rule, sorted (transfer full). */
/**
 * weir_grad_ops:
 * Returns: (transfer full) (array zero-terminated=1):
 */
WEIR_API char **weir_grad_ops(void);
/* FALSE for inputs that never carry a gradient (indices, shapes, running
 * statistics): Gather's indices, BatchNormalization's mean and var, ... */
WEIR_API gboolean weir_grad_input_differentiable(const char *op, guint k);

/* --- for rules --- */

/* The forward node (borrowed). */
WEIR_API const WeirNode *weir_grad_node(const WeirGradContext *ctx);
WEIR_API WeirGraph *weir_grad_graph(const WeirGradContext *ctx);
/* Container names of forward input / output k, NULL when absent. */
WEIR_API const char *weir_grad_input(const WeirGradContext *ctx, guint k);
WEIR_API const char *weir_grad_output(const WeirGradContext *ctx, guint k);
/* The gradient of output k (a container name), or NULL when output k does
 * not reach the loss (its gradient is zero). */
WEIR_API const char *weir_grad_dout(WeirGradContext *ctx, guint k,
                                    GError **error);
/* Whether the gradient of input k is needed. */
WEIR_API gboolean weir_grad_wants(const WeirGradContext *ctx, guint k);
/* Reports `name` as (a contribution to) the gradient of input k. */
WEIR_API void weir_grad_add(WeirGradContext *ctx, guint k, const char *name);

/* A new transient with a fresh name from base, shaped like container
 * `like` (dtype too unless dtype >= 0 is given).  (borrowed name) */
WEIR_API const char *weir_grad_new_like(WeirGradContext *ctx, const char *base,
                                        const char *like, int dtype);
/* A new transient with an explicit shape (borrowed exprs). */
WEIR_API const char *weir_grad_new(WeirGradContext *ctx, const char *base,
                                   WeirDType dtype, guint rank,
                                   WeirExpr *const *shape);
/* Adds library node `op` reading containers ins[0..n_ins) (NULL entries:
 * omitted inputs) and writing outs, each through an access node with the
 * full subset.  Set attributes on the returned (borrowed) node; defaults
 * are filled when the sweep ends. */
/**
 * weir_grad_op: (skip)
 */
WEIR_API WeirNode *weir_grad_op(WeirGradContext *ctx, const char *op,
                                const char *label, const char *const *ins,
                                guint n_ins, const char *const *outs,
                                guint n_outs);
/* Shorthand: a Pointwise node with code over ins, writing a new transient
 * shaped like `like` (dtype of like); returns its name (borrowed). */
WEIR_API const char *weir_grad_pointwise(WeirGradContext *ctx, const char *base,
                                         const char *like, const char *code,
                                         const char *const *ins, guint n_ins);
/* `name` reduced (SumTo) to the shape of container `target` when the shapes
 * differ, else `name` itself (borrowed). */
WEIR_API const char *weir_grad_sum_to(WeirGradContext *ctx, const char *name,
                                      const char *target);
/* Fails with "node 'L' (Op): <message>" (always returns FALSE). */
WEIR_API gboolean weir_grad_fail(const WeirGradContext *ctx, GError **error,
                                 WeirErrorCode code, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

/* --- the sweep --- */

/* Differentiates the library nodes of state s of g.  seeds: forward value
 * name -> gradient container name (char* -> char*, borrowed), the
 * gradients flowing in (e.g. the logits' gradient computed by a loss).
 * wrt: the names whose gradients are wanted.  Adds the backward nodes to s
 * and returns a new table name -> gradient container name (owned strings)
 * for each name of wrt that some seed depends on.  Library nodes on a path
 * from wrt to a seed without a rule are expanded first (their pure
 * expansions, weir_expand_nodes); fails naming the node when one cannot be
 * differentiated. */
/**
 * weir_autodiff_state: (skip)
 */
WEIR_API GHashTable *weir_autodiff_state(WeirGraph *g, WeirState *s,
                                         GHashTable *seeds,
                                         const char *const *wrt,
                                         GError **error);

/* Names (owned) of the containers in `candidates` (NULL-terminated) on
 * which some value of `targets` depends through differentiable inputs, in
 * the order of candidates. */
/**
 * weir_autodiff_dependencies:
 * Returns: (transfer full) (array zero-terminated=1):
 */
WEIR_API char **weir_autodiff_dependencies(const WeirGraph *g,
                                           const WeirState *s,
                                           const char *const *candidates,
                                           const char *const *targets);

G_END_DECLS

#endif
