/* tier2-util.h — helpers shared by the tier-2 (operator graph)
 * transformations.
 *
 * Tier-2 transformations work on library nodes that follow the conventions
 * of ir/weir-ops.h: connectors in<k> / out<k>, each with exactly one memlet
 * to or from an access node with the container's full subset.  The helpers
 * below find those ports, tell how a container is used in the whole program
 * (who writes it, who reads it, in which states), and perform the edits
 * several transformations share: making the readers of one container read
 * another, removing a node whose output equals its input, dropping
 * containers nobody uses any more, adding constant containers.
 *
 * Only the public IR API is used.
 */
#ifndef WEIR_TIER2_UTIL_H
#define WEIR_TIER2_UTIL_H

#include "weir-analysis.h"
#include "weir-graph.h"
#include "weir-tensor.h"

G_BEGIN_DECLS

/* One connector of a library node and what it is wired to. */
typedef struct {
  WeirMemlet *memlet;       /* the connector's memlet (borrowed) */
  WeirNode *access;         /* the access node at its other end */
  WeirContainer *container; /* the access node's container */
} WeirTier2Port;

/* Fills *out for connector "in<k>" (input) or "out<k>" of n.  Returns FALSE
 * when the connector is absent or not wired to an access node by exactly
 * one memlet naming the access node's container. */
gboolean weir_tier2_port(const WeirGraph *g, const WeirState *s,
                         const WeirNode *n, gboolean input, guint k,
                         WeirTier2Port *out);

/* Port of the i-th declared input (or output) connector of n, whatever its
 * number (Clip with only a max has in0 and in2). */
gboolean weir_tier2_nth_port(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, gboolean input, guint i,
                             WeirTier2Port *out);

/* TRUE when every connector of n is named in<k> / out<k> and wired as
 * weir_tier2_port expects (the library-node conventions). */
gboolean weir_tier2_wired(const WeirGraph *g, const WeirState *s,
                          const WeirNode *n);

/* TRUE when n is a library node of operator op (n may be NULL). */
gboolean weir_tier2_is_op(const WeirNode *n, const char *op);

/* Appends to sites (WeirSite) one two-node site {producer, consumer} for
 * each library node of operator `consumer` whose input 0 is wired and
 * written, in the same state, by a library node of operator `producer`. */
void weir_tier2_match_fed_by(const WeirGraph *g, GArray *sites,
                             const char *producer, const char *consumer);

/* The node that writes container `name` in s when exactly one memlet in s
 * enters an access node of it (that memlet's source), else NULL. */
WeirNode *weir_tier2_writer(const WeirGraph *g, const WeirState *s,
                            const char *name);

/* How a container is used in the whole program (nested programs have
 * their own containers and are not looked into). */
typedef struct {
  guint writes;       /* memlets into access nodes of it (empty memlets,
                         which only order, are not counted) */
  guint reads;        /* memlets out of access nodes of it (idem) */
  guint access_nodes; /* access nodes naming it */
  guint states;       /* states with an access node or memlet of it */
} WeirTier2Use;

void weir_tier2_use(const WeirGraph *g, const char *name, WeirTier2Use *out);

/* TRUE when every access node and memlet of container `name` is in s. */
gboolean weir_tier2_local(const WeirGraph *g, const WeirState *s,
                          const char *name);

/* A container holds one value for the whole of state s when it is written
 * at most once in the program, and only in s: reading it anywhere in s after
 * its writer gives the same data.  Otherwise FALSE with *reason. */
gboolean weir_tier2_single_value(const WeirGraph *g, const WeirState *s,
                                 const WeirContainer *c, char **reason);

/* A transient with constant data (the only kind of constant Weir has). */
gboolean weir_tier2_is_constant(const WeirContainer *c);

/* Concrete shape of c into shape[] (c->shape->len entries); FALSE when a
 * dimension is symbolic. */
gboolean weir_tier2_concrete_shape(const WeirContainer *c, gint64 *shape);

/* Shapes (rank and every dimension, symbolically) and dtypes equal. */
gboolean weir_tier2_same_layout(const WeirContainer *a, const WeirContainer *b);

/* The constant data of c as a tensor (transfer full), or NULL when c has no
 * constant data. */
WeirTensor *weir_tier2_constant_tensor(const WeirContainer *c);

/* TRUE when c is a constant whose every element equals v; with
 * match_sign, floating zeros must also have the sign of v (+0.0 or
 * -0.0). */
gboolean weir_tier2_constant_is(const WeirContainer *c, double v,
                                gboolean match_sign);

/* Adds a transient constant container holding t, named after base (made
 * unique).  Borrowed result. */
WeirContainer *weir_tier2_add_constant(WeirGraph *g, const char *base,
                                       const WeirTensor *t);

/* Same op-independent attribute lists: names, types and values (floats
 * compared bit for bit, so 0.0 and -0.0 differ). */
gboolean weir_tier2_attrs_equal(const WeirNode *a, const WeirNode *b);

/* FALSE for operators whose result is not a function of their inputs
 * (random generators, Dropout in training mode). */
gboolean weir_tier2_is_deterministic(const WeirNode *n);

/* The permutation of a Transpose node of the given rank into perm[] (the
 * reversed dimensions when it has no "perm"); FALSE when the attribute is
 * not a permutation of 0..rank-1. */
gboolean weir_tier2_transpose_perm(const WeirNode *n, guint rank, gint64 *perm);

/* Whether every read of container `from` in s can be moved to another
 * container of the same layout: each memlet leaving an access node of it
 * goes to a library, tasklet or nested node or is a copy (not into a map
 * scope, whose inner memlets and connectors are named after the
 * container).  Otherwise FALSE with *reason. */
gboolean weir_tier2_can_redirect_reads(const WeirGraph *g, const WeirState *s,
                                       const char *from, char **reason);

/* Moves every memlet leaving an access node of `from` in s so that it
 * leaves `to` (an access node of a container with the same layout)
 * instead, naming to's container; access nodes of `from` left without
 * memlets are removed. */
gboolean weir_tier2_redirect_reads(WeirGraph *g, WeirState *s, const char *from,
                                   WeirNode *to, GError **error);

/* Whether node n, with input x and output y holding the same elements in
 * the same order, can be removed (see weir_tier2_bypass).  FALSE with
 * *reason when not. */
gboolean weir_tier2_can_bypass(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n, const WeirTier2Port *x,
                               const WeirTier2Port *y, char **reason);

/* Removes n (read x, wrote y).  When y is transient, its readers read x
 * instead and y is removed; when y is a program argument (a graph output),
 * a copy memlet x -> y takes n's place, so the argument is still written.
 * Containers left unused are dropped. */
gboolean weir_tier2_bypass(WeirGraph *g, WeirState *s, WeirNode *n,
                           const WeirTier2Port *x, const WeirTier2Port *y,
                           GError **error);

/* Two one-input, one-output library nodes in a row: a reads x (in0) and
 * writes y (out0), b reads y (in0) and writes z (out0). */
typedef struct {
  WeirTier2Port x, y, z;
} WeirTier2Chain;

/* Fills *c; FALSE with *reason when a or b lacks those ports or b does not
 * read a's output. */
gboolean weir_tier2_chain(const WeirGraph *g, const WeirState *s,
                          const WeirNode *a, const WeirNode *b,
                          WeirTier2Chain *c, char **reason);

/* Whether the chain can be collapsed: y is a transient read only by b and
 * written only by a, in this state.  identity: the pair computes z = x and
 * is to be removed (checked as by weir_tier2_can_bypass); otherwise it is
 * to be replaced by one node reading x and writing z (z written only by b,
 * x holding one value in the state). */
gboolean weir_tier2_chain_can_collapse(const WeirGraph *g, const WeirState *s,
                                       const WeirNode *b,
                                       const WeirTier2Chain *c,
                                       gboolean identity, char **reason);

/* Removes both nodes of an identity chain (weir_tier2_bypass from x to
 * z); y is dropped. */
gboolean weir_tier2_chain_remove(WeirGraph *g, WeirState *s, WeirNode *a,
                                 WeirNode *b, const WeirTier2Chain *c,
                                 GError **error);

/* Replaces both nodes by one new library node `op` labelled like b,
 * reading x through in0 and writing z through out0 (the caller sets its
 * attributes); y is dropped.  Returns the new node (borrowed) or NULL. */
WeirNode *weir_tier2_chain_replace(WeirGraph *g, WeirState *s, WeirNode *a,
                                   WeirNode *b, const WeirTier2Chain *c,
                                   const char *op, GError **error);

/* The permutation of Transpose a followed by Transpose b on rank
 * dimensions: output dimension k is input dimension p1[p2[k]].  FALSE when
 * a permutation is invalid. */
gboolean weir_tier2_compose_transposes(const WeirNode *a, const WeirNode *b,
                                       guint rank, gint64 *perm);
gboolean weir_tier2_perm_is_identity(const gint64 *perm, guint rank);

/* Drops what nobody uses any more: in every state, access nodes of `name`
 * without memlets; then, for a transient that no memlet or access node
 * names, the container.  Program arguments are never removed. */
void weir_tier2_drop_if_unused(WeirGraph *g, const char *name);

/* A reason text (transfer full), for can_apply. */
char *weir_tier2_reason(const char *fmt, ...) G_GNUC_PRINTF(1, 2);

/* Sets *reason (when reason != NULL) and returns FALSE. */
gboolean weir_tier2_reject(char **reason, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);

/* The site's state and node k, checked to exist (NULL otherwise). */
WeirState *weir_tier2_site_state(const WeirGraph *g, guint state);
WeirNode *weir_tier2_site_node(const WeirState *s, guint id);

G_END_DECLS

#endif
