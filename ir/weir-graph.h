/* weir-graph.h — the stateful dataflow multigraph.
 *
 * A WeirGraph is a whole program:
 *   - data containers (arrays and scalars) with dtype, symbolic shape and
 *     strides, transient (internal) or argument, optional constant data;
 *   - free integer symbols (sizes such as a batch size, loop counters);
 *   - a control-flow graph of states joined by transitions that carry a
 *     condition and symbol assignments;
 *   - in each state an acyclic dataflow multigraph of nodes (access,
 *     tasklet, map entry/exit, library, nested program) joined by memlets.
 *
 * Storage and identity.  States, nodes, memlets and transitions carry
 * integer ids that are unique within the graph, start at 1 (0 means "none")
 * and are never reused by the builder, so history entries, JSON, SQLite
 * rows and GUI selections can refer to them across edits.  Arrays of
 * elements are kept sorted by id, so iteration order is deterministic.
 *
 * The structs below are readable by every client (transforms, codegen, the
 * GUI).  Change a graph only through the functions in this header: they keep
 * the ids, the name index and the parsed caches consistent.
 *
 * Ranges are half-open: begin:end:step covers begin, begin+step, ... < end
 * (step > 0).  A subset has one range per dimension of its container; the
 * text "i" stands for "i:i+1".
 */
#ifndef WEIR_GRAPH_H
#define WEIR_GRAPH_H

#include "weir-code.h"
#include "weir-expr.h"
#include "weir-types.h"

G_BEGIN_DECLS

/* ---------------------------------------------------------------- ranges */

typedef struct {
  WeirExpr *begin, *end, *step; /* owned */
} WeirRange;

typedef struct {
  guint rank;
  WeirRange *dims; /* rank entries, owned */
} WeirSubset;

/* Parses "b:e[:s], ..." (one item per dimension; "x" means "x:x+1"); the
 * empty string is the subset of a scalar (rank 0). */
/**
 * weir_subset_parse: (skip)
 */
WEIR_API WeirSubset *weir_subset_parse(const char *text, GError **error);
WEIR_API char *weir_subset_to_string(const WeirSubset *s);
/**
 * weir_subset_copy: (skip)
 */
WEIR_API WeirSubset *weir_subset_copy(const WeirSubset *s);
WEIR_API void weir_subset_free(WeirSubset *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirSubset, weir_subset_free)
WEIR_API gboolean weir_subset_equal(const WeirSubset *a, const WeirSubset *b);
/* Number of elements: product of the range sizes. */
WEIR_API WeirExpr *weir_subset_volume(const WeirSubset *s);
/* Whether every range covers exactly one element (a constant size of 1). */
WEIR_API gboolean weir_subset_is_point(const WeirSubset *s);
/* Substitutes symbols in every range (map: name -> WeirExpr*). */
/**
 * weir_subset_substitute: (skip)
 */
WEIR_API WeirSubset *weir_subset_substitute(const WeirSubset *s,
                                            GHashTable *map);

/* Parses one range "b:e[:s]" or "x". */
WEIR_API gboolean weir_range_parse(const char *text, WeirRange *out,
                                   GError **error);
WEIR_API char *weir_range_to_string(const WeirRange *r);
WEIR_API void weir_range_clear(WeirRange *r);
WEIR_API void weir_range_copy(const WeirRange *src, WeirRange *dst);
/* Number of points: (end - begin + step - 1) // step, at least 0 when
 * concrete. */
WEIR_API WeirExpr *weir_range_size(const WeirRange *r);

/* Largest value the range takes, begin + ((end - begin - 1) // step) *
 * step, or NULL when the step is not a positive constant. (transfer full) */
WEIR_API WeirExpr *weir_range_last(const WeirRange *r);

/* ------------------------------------------------------------ containers */

typedef struct {
  guint id;
  char *name;
  WeirDType dtype;
  GPtrArray *shape;   /* WeirExpr*; empty for a scalar */
  GPtrArray *strides; /* WeirExpr*, in elements; row-major unless set */
  gboolean transient; /* internal to the program (else an argument) */
  GBytes *initial;    /* constant initial data, little-endian, or NULL */
  /* Name of the ONNX initializer the container was imported from (owned),
   * or NULL: Constant node outputs, folded values, inputs, transients.
   * Kept when the data is taken away (a training program's parameters are
   * arguments that still name their initializer); weir_train_parameters
   * trains these by default (docs/training.md). */
  char *initializer;
  /* A data-dependent length: the name (owned) of an i64 scalar container
   * holding, after a run, how many entries of dimension count_dim are
   * valid; the extent of that dimension is only an upper bound.  NULL
   * when every extent is exact.  The validator refuses any read of such a
   * container inside the program; the runtime trims the program's outputs
   * to their counts (weir_container_trim).  Set by the importer for
   * NonZero, Compress and Unique (docs/ir-format.md). */
  char *count;
  guint count_dim;
} WeirContainer;

/* Number of elements (product of the shape) and total size in bytes. */
WEIR_API WeirExpr *weir_container_volume(const WeirContainer *c);
WEIR_API WeirExpr *weir_container_bytes(const WeirContainer *c);
/* Full subset 0:shape[d] in every dimension. */
/**
 * weir_container_full_subset: (skip)
 */
WEIR_API WeirSubset *weir_container_full_subset(const WeirContainer *c);

/* ----------------------------------------------------------------- nodes */

#define WEIR_NODE_KINDS(X)                                                     \
  X(ACCESS, "access")                                                          \
  X(TASKLET, "tasklet")                                                        \
  X(MAP_ENTRY, "map_entry")                                                    \
  X(MAP_EXIT, "map_exit")                                                      \
  X(LIBRARY, "library")                                                        \
  X(NESTED, "nested")

typedef enum {
#define WEIR_X(id, name) WEIR_NODE_##id,
  WEIR_NODE_KINDS(WEIR_X)
#undef WEIR_X
      WEIR_NODE_KIND_COUNT
} WeirNodeKind;

WEIR_API const char *weir_node_kind_name(WeirNodeKind kind);
WEIR_API gboolean weir_node_kind_from_name(const char *name, WeirNodeKind *out);

#define WEIR_SCHEDULES(X)                                                      \
  X(SEQUENTIAL, "sequential")                                                  \
  X(PARALLEL, "parallel")                                                      \
  X(SIMD, "simd")

typedef enum {
#define WEIR_X(id, name) WEIR_SCHEDULE_##id,
  WEIR_SCHEDULES(WEIR_X)
#undef WEIR_X
      WEIR_SCHEDULE_COUNT
} WeirSchedule;

WEIR_API const char *weir_schedule_name(WeirSchedule s);
WEIR_API gboolean weir_schedule_from_name(const char *name, WeirSchedule *out);

/* A map scope: for (params) in product(ranges).  Owned by its entry node. */
typedef struct {
  GPtrArray *params; /* char* */
  GArray *ranges;    /* WeirRange, one per param */
  WeirSchedule schedule;
  GArray *tile;   /* gint64 tile size per param (0 = untiled); may be
                     empty (no tiling) */
  guint unroll;   /* unroll factor of the innermost loop (0/1: none) */
  guint collapse; /* OpenMP collapse depth (0: none) */
} WeirMap;

#define WEIR_ATTR_TYPES(X)                                                     \
  X(INT, "int")                                                                \
  X(FLOAT, "float")                                                            \
  X(STRING, "string")                                                          \
  X(INTS, "ints")                                                              \
  X(FLOATS, "floats")                                                          \
  X(STRINGS, "strings")

typedef enum {
#define WEIR_X(id, name) WEIR_ATTR_##id,
  WEIR_ATTR_TYPES(WEIR_X)
#undef WEIR_X
      WEIR_ATTR_TYPE_COUNT
} WeirAttrType;

WEIR_API const char *weir_attr_type_name(WeirAttrType t);

/* A typed attribute of a library node. */
typedef struct {
  char *name;
  WeirAttrType type;
  gint64 i;           /* INT */
  double f;           /* FLOAT */
  char *s;            /* STRING */
  GArray *ints;       /* INTS: gint64 */
  GArray *floats;     /* FLOATS: double */
  GPtrArray *strings; /* STRINGS: char* */
} WeirAttr;

/* Binding of a nested program's symbol to an expression of the outer scope. */
typedef struct {
  char *name;
  WeirExpr *value;
} WeirSymbolBinding;

typedef struct _WeirGraph WeirGraph;

typedef struct {
  guint id;
  WeirNodeKind kind;
  char *label;
  GPtrArray *in_conns;  /* char*, in declaration order */
  GPtrArray *out_conns; /* char* */
  /* ACCESS */
  char *data;
  /* TASKLET */
  char *code_text; /* source as given */
  WeirCode *code;  /* parsed (NULL when the text does not parse); the
                      validator type-checks it */
  /* MAP_ENTRY */
  WeirMap *map;
  /* MAP_EXIT */
  guint entry; /* id of the matching entry */
  /* LIBRARY */
  char *op;
  GPtrArray *attrs; /* WeirAttr*, sorted by name */
  /* NESTED */
  WeirGraph *nested;     /* owned */
  GPtrArray *symbol_map; /* WeirSymbolBinding*, sorted by name */
} WeirNode;

/* --------------------------------------------------------------- memlets */

#define WEIR_WCRS(X)                                                           \
  X(NONE, "none")                                                              \
  X(SUM, "sum")                                                                \
  X(PROD, "prod")                                                              \
  X(MIN, "min")                                                                \
  X(MAX, "max")

typedef enum {
#define WEIR_X(id, name) WEIR_WCR_##id,
  WEIR_WCRS(WEIR_X)
#undef WEIR_X
      WEIR_WCR_COUNT
} WeirWcr;

WEIR_API const char *weir_wcr_name(WeirWcr w);
WEIR_API gboolean weir_wcr_from_name(const char *name, WeirWcr *out);

/* An edge of a state's dataflow graph.  data == NULL is an empty memlet: an
 * ordering dependency that moves nothing. */
typedef struct {
  guint id;
  guint src, dst; /* node ids */
  char *src_conn; /* NULL: none (access nodes) */
  char *dst_conn;
  char *data;         /* container name, or NULL */
  WeirSubset *subset; /* subset of data */
  WeirSubset *other;  /* copies between access nodes: subset of the
                         other end's container, or NULL */
  WeirExpr *volume;   /* elements moved per execution of the edge */
  gboolean dynamic;   /* volume is an upper bound (data-dependent) */
  WeirWcr wcr;        /* write-conflict resolution of writes */
} WeirMemlet;

/* ---------------------------------------------------------------- states */

typedef struct {
  guint id;
  char *label;
  GPtrArray *nodes; /* WeirNode*, sorted by id */
  GPtrArray *edges; /* WeirMemlet*, sorted by id */
} WeirState;

typedef struct {
  guint id;
  guint src, dst;           /* state ids */
  char *condition_text;     /* NULL: always taken */
  WeirCode *condition;      /* parsed, or NULL */
  GPtrArray *assign_names;  /* char* symbol names, in order */
  GPtrArray *assign_values; /* WeirExpr*; assignments are simultaneous */
} WeirTransition;

/* ----------------------------------------------------------------- graph */

struct _WeirGraph {
  char *name;
  GPtrArray *symbols;     /* char*, sorted */
  GPtrArray *containers;  /* WeirContainer*, sorted by id */
  GHashTable *by_name;    /* name -> WeirContainer* (index, not owned) */
  GPtrArray *states;      /* WeirState*, sorted by id */
  GPtrArray *transitions; /* WeirTransition*, sorted by id */
  guint start;            /* id of the start state (0 until set) */
  guint next_id;          /* next id for any element */
};

WEIR_API WeirGraph *weir_graph_new(const char *name);
WEIR_API void weir_graph_free(WeirGraph *g);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirGraph, weir_graph_free)
/* Deep copy with the same ids. */
WEIR_API WeirGraph *weir_graph_copy(const WeirGraph *g);

/* Symbols.  Adding an existing name is a no-op returning FALSE. */
WEIR_API gboolean weir_graph_add_symbol(WeirGraph *g, const char *name);
WEIR_API gboolean weir_graph_has_symbol(const WeirGraph *g, const char *name);

/* Adds a container with the given shape (borrowed WeirExpr*s, n = rank) and
 * row-major strides.  Returns NULL with an error when the name is taken or
 * not an identifier.  Returned pointer is borrowed (owned by g). */
/**
 * weir_graph_add_container: (skip)
 */
WEIR_API WeirContainer *weir_graph_add_container(WeirGraph *g, const char *name,
                                                 WeirDType dtype, guint rank,
                                                 WeirExpr *const *shape,
                                                 gboolean transient,
                                                 GError **error);
/* Same with the shape as text, e.g. "N, 4*M" ("" for a scalar). */
/**
 * weir_graph_add_array:
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirContainer *weir_graph_add_array(WeirGraph *g, const char *name,
                                             WeirDType dtype, const char *shape,
                                             gboolean transient,
                                             GError **error);
/**
 * weir_graph_container:
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirContainer *weir_graph_container(const WeirGraph *g,
                                             const char *name);
/* Removes a container (memlets naming it are left to the caller). */
WEIR_API gboolean weir_graph_remove_container(WeirGraph *g, const char *name);
/* Replaces the strides (borrowed exprs, rank of the container). */
WEIR_API void weir_container_set_strides(WeirContainer *c,
                                         WeirExpr *const *strides);
/* Sets constant data (transfer none: the bytes are referenced). */
WEIR_API void weir_container_set_initial(WeirContainer *c, GBytes *data);
/* Records (a copy of) name as the ONNX initializer c came from; NULL
 * clears it. */
WEIR_API void weir_container_set_initializer(WeirContainer *c,
                                             const char *name);
/* Makes dimension dim of c's extent an upper bound, the valid length
 * being the value of the i64 scalar container named count (a copy is
 * kept); count NULL clears it.  Checked by the validator. */
WEIR_API void weir_container_set_count(WeirContainer *c, const char *count,
                                       guint dim);

/* States and transitions.  The first state added becomes the start state. */
/**
 * weir_graph_add_state:
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirState *weir_graph_add_state(WeirGraph *g, const char *label);
/**
 * weir_graph_state:
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirState *weir_graph_state(const WeirGraph *g, guint id);
/* The transition with that id (borrowed), or NULL. */
/**
 * weir_graph_transition:
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirTransition *weir_graph_transition(const WeirGraph *g, guint id);
WEIR_API void weir_graph_set_start(WeirGraph *g, guint state_id);
/* condition: text in the tasklet language or NULL (always).  Returns NULL
 * with an error when the condition does not parse. */
/**
 * weir_graph_add_transition:
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirTransition *weir_graph_add_transition(WeirGraph *g, guint src,
                                                   guint dst,
                                                   const char *condition,
                                                   GError **error);
WEIR_API gboolean weir_transition_add_assignment(WeirTransition *t,
                                                 const char *symbol,
                                                 const char *value,
                                                 GError **error);

/**
 * weir_transition_data_reads:
 * @g: the program of @t
 * @t: a transition
 *
 * The containers of @g whose value the condition of @t reads: the names
 * in it that are not symbols of @g, in order of first appearance (the
 * order of the condition's input slots after validation).  Such a
 * container must hold one element (rank 0, or every dimension 1); the
 * validator checks that, and reports a name that is neither.
 *
 * Returns: (transfer container) (element-type utf8): the names, borrowed
 *   from the containers of @g
 */
WEIR_API GPtrArray *weir_transition_data_reads(const WeirGraph *g,
                                               const WeirTransition *t);
/**
 * weir_graph_condition_reads:
 * @g: a program
 * @name: a container name
 *
 * Returns: TRUE when the condition of a transition of @g reads container
 *   @name (a use that transformations must keep, like a memlet reading it)
 */
WEIR_API gboolean weir_graph_condition_reads(const WeirGraph *g,
                                             const char *name);

/* Nodes.  Connector lists are NULL-terminated arrays of names (borrowed) or
 * NULL for none.  Returned nodes are borrowed. */
/**
 * weir_state_add_access:
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirNode *weir_state_add_access(WeirGraph *g, WeirState *s,
                                         const char *data);
/* The code is parsed now; a parse error is kept for the validator to report
 * (the node is still added, with code == NULL). */
/**
 * weir_state_add_tasklet:
 * @ins: (array zero-terminated=1) (nullable):
 * @outs: (array zero-terminated=1) (nullable):
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirNode *weir_state_add_tasklet(WeirGraph *g, WeirState *s,
                                          const char *label,
                                          const char *const *ins,
                                          const char *const *outs,
                                          const char *code);
/* Adds a map entry and its exit.  ranges: one text range per param
 * ("0:N", "0:N:2").  *exit_out receives the exit node.  The connectors of
 * the scope (IN_x/OUT_x on the entry, IN_x/OUT_x on the exit, by the
 * convention that data x passes through IN_x and leaves by OUT_x) are added
 * with weir_node_add_in_conn / weir_node_add_out_conn. */
/**
 * weir_state_add_map:
 * @params: (array zero-terminated=1):
 * @ranges: (array zero-terminated=1):
 * @exit_out: (out) (transfer none):
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirNode *
weir_state_add_map(WeirGraph *g, WeirState *s, const char *label,
                   const char *const *params, const char *const *ranges,
                   WeirSchedule schedule, WeirNode **exit_out, GError **error);
/**
 * weir_state_add_library:
 * @ins: (array zero-terminated=1) (nullable):
 * @outs: (array zero-terminated=1) (nullable):
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirNode *weir_state_add_library(WeirGraph *g, WeirState *s,
                                          const char *label, const char *op,
                                          const char *const *ins,
                                          const char *const *outs);
/* nested: (transfer full). */
/**
 * weir_state_add_nested:
 * @ins: (array zero-terminated=1) (nullable):
 * @outs: (array zero-terminated=1) (nullable):
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirNode *weir_state_add_nested(WeirGraph *g, WeirState *s,
                                         const char *label, WeirGraph *nested,
                                         const char *const *ins,
                                         const char *const *outs);
/* Binds a symbol of a nested program to an outer expression (text). */
WEIR_API gboolean weir_node_bind_symbol(WeirNode *n, const char *name,
                                        const char *value, GError **error);

/**
 * weir_state_node:
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirNode *weir_state_node(const WeirState *s, guint id);
/* Finds a node anywhere in g; *state_out (optional) receives its state. */
/**
 * weir_graph_node:
 * @state_out: (out) (optional) (transfer none):
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirNode *weir_graph_node(const WeirGraph *g, guint id,
                                   WeirState **state_out);
/* The exit of a map entry (borrowed), or NULL. */
/**
 * weir_state_map_exit:
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirNode *weir_state_map_exit(const WeirState *s,
                                       const WeirNode *entry);
/* Removes a node and every memlet touching it.  For a map entry, the exit is
 * not removed (the caller removes the scope it wants). */
WEIR_API gboolean weir_state_remove_node(WeirState *s, guint id);

WEIR_API gboolean weir_node_has_in_conn(const WeirNode *n, const char *name);
WEIR_API gboolean weir_node_has_out_conn(const WeirNode *n, const char *name);
WEIR_API void weir_node_add_in_conn(WeirNode *n, const char *name);
WEIR_API void weir_node_add_out_conn(WeirNode *n, const char *name);

/* Library node attributes (replacing an attribute of the same name). */
WEIR_API void weir_node_set_attr_int(WeirNode *n, const char *name, gint64 v);
WEIR_API void weir_node_set_attr_float(WeirNode *n, const char *name, double v);
WEIR_API void weir_node_set_attr_string(WeirNode *n, const char *name,
                                        const char *v);
WEIR_API void weir_node_set_attr_ints(WeirNode *n, const char *name,
                                      const gint64 *v, guint count);
WEIR_API void weir_node_set_attr_floats(WeirNode *n, const char *name,
                                        const double *v, guint count);
WEIR_API void weir_node_set_attr_strings(WeirNode *n, const char *name,
                                         const char *const *v, guint count);
/* Borrowed, or NULL when absent. */
WEIR_API const WeirAttr *weir_node_attr(const WeirNode *n, const char *name);
/* Sets every attribute of src on dst (replacing those of the same name). */
WEIR_API void weir_node_copy_attrs(WeirNode *dst, const WeirNode *src);
/* Removes attribute name; FALSE when n has none of that name. */
WEIR_API gboolean weir_node_remove_attr(WeirNode *n, const char *name);

/* Memlets.  subset: text on `data` (NULL data: an empty memlet, subset
 * ignored).  The volume defaults to the subset's element count.  Returns a
 * borrowed memlet, or NULL with an error when a node id is not in s or the
 * subset does not parse. */
/**
 * weir_state_add_memlet:
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirMemlet *weir_state_add_memlet(WeirGraph *g, WeirState *s,
                                           guint src, const char *src_conn,
                                           guint dst, const char *dst_conn,
                                           const char *data, const char *subset,
                                           GError **error);
WEIR_API void weir_memlet_set_volume(WeirMemlet *m, WeirExpr *volume);
WEIR_API gboolean weir_memlet_set_other(WeirMemlet *m, const char *subset,
                                        GError **error);
/**
 * weir_state_memlet:
 * Returns: (transfer none) (nullable):
 */
WEIR_API WeirMemlet *weir_state_memlet(const WeirState *s, guint id);
WEIR_API gboolean weir_state_remove_memlet(WeirState *s, guint id);
/* New arrays of the memlets entering / leaving a node, by id (borrowed
 * pointers; free the array with g_ptr_array_unref). */
/**
 * weir_state_in_edges:
 * Returns: (transfer container) (element-type WeirMemlet):
 */
WEIR_API GPtrArray *weir_state_in_edges(const WeirState *s, guint node);
/**
 * weir_state_out_edges:
 * Returns: (transfer container) (element-type WeirMemlet):
 */
WEIR_API GPtrArray *weir_state_out_edges(const WeirState *s, guint node);
/* The first memlet (by id) on connector conn of node: entering it when
 * input, else leaving it; with_data: only a non-empty memlet.  NULL when
 * there is none. */
WEIR_API const WeirMemlet *
weir_state_connector_memlet(const WeirState *s, guint node, const char *conn,
                            gboolean input, gboolean with_data);

/* An index of a state's memlets by their ends, for code that reads a whole
 * state without changing it (the analysis, the validator).  Between
 * weir_edge_index_begin(s) and weir_edge_index_end, on the calling thread,
 * weir_state_in_edges, weir_state_out_edges and
 * weir_state_connector_memlet on s take time in the node's degree instead
 * of the state's size (the library FLOP functions of the analysis call
 * them once per node).  s must not change meanwhile.  Indexes nest (the
 * innermost one of a state is used).  (transfer full: weir_edge_index_end) */
typedef struct _WeirEdgeIndex WeirEdgeIndex;
/**
 * weir_edge_index_begin: (skip)
 */
WEIR_API WeirEdgeIndex *weir_edge_index_begin(const WeirState *s);
WEIR_API void weir_edge_index_end(WeirEdgeIndex *ix);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirEdgeIndex, weir_edge_index_end)
/* The memlets entering (input) or leaving node, in id order (borrowed,
 * valid until weir_edge_index_end; never NULL). */
/**
 * weir_edge_index_memlets: (skip)
 */
WEIR_API GPtrArray *weir_edge_index_memlets(const WeirEdgeIndex *ix, guint node,
                                            gboolean input);

/* Scope structure of a state. */
typedef struct {
  GArray *order;      /* guint node ids in a deterministic topological order
                         (smallest ready id first) */
  GHashTable *parent; /* node id -> id of the innermost enclosing map entry
                         (absent: top level); map exits belong to the scope
                         that contains their entry */
} WeirScopes;

/* Computes the topological order and the scope tree.  Fails when the state
 * has a cycle or a node is reached from two different scopes.  In
 * O((nodes + memlets) log nodes); the results for the last few distinct
 * states (by node ids, kinds, exits' entries and memlet ends, compared in
 * full) are remembered, so asking again for an unchanged state only copies
 * the order.  The parent table may be shared between results: read it,
 * never change it.  (transfer full: weir_scopes_free) */
/**
 * weir_state_scopes: (skip)
 */
WEIR_API WeirScopes *weir_state_scopes(const WeirState *s, GError **error);
WEIR_API void weir_scopes_free(WeirScopes *sc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirScopes, weir_scopes_free)
/* Enclosing map entry of a node (0: top level). */
WEIR_API guint weir_scopes_parent(const WeirScopes *sc, guint node);

/* Human-readable name of an element for messages:
 * "state 1 'main', node 5 (tasklet 'add')". (transfer full) */
WEIR_API char *weir_describe_node(const WeirState *s, const WeirNode *n);
WEIR_API char *weir_describe_memlet(const WeirState *s, const WeirMemlet *m);

/* ------------------------------------------- editing helpers (branch tier1)
 * Used by the tier-1 transformations; each keeps ids and caches consistent.
 */

/* (weir_tasklet_set_code, also needed here, is declared by branch tier2
 * below.) */
/* Removes a connector name from a node; memlets on it are left to the
 * caller.  FALSE when the node has no such connector. */
WEIR_API gboolean weir_node_remove_in_conn(WeirNode *n, const char *name);
WEIR_API gboolean weir_node_remove_out_conn(WeirNode *n, const char *name);
/* Moves the source (destination) of memlet m to node `node` of s and its
 * connector to conn (NULL: none), keeping the memlet's id, data, subsets,
 * volume and wcr.  FALSE when the node is not in s. */
WEIR_API gboolean weir_memlet_set_src(const WeirState *s, WeirMemlet *m,
                                      guint node, const char *conn);
WEIR_API gboolean weir_memlet_set_dst(const WeirState *s, WeirMemlet *m,
                                      guint node, const char *conn);
/* Replaces a memlet's subset by a copy of `subset` (the volume is left as
 * it is: set it with weir_memlet_set_volume). */
WEIR_API void weir_memlet_set_subset(WeirMemlet *m, const WeirSubset *subset);
/* Replaces the parameters and ranges of a map (n >= 1, copied).  tile: n
 * sizes, or NULL for no tiling.  Schedule, unroll and collapse are kept. */
WEIR_API void weir_map_set_dims(WeirMap *m, guint n, const char *const *params,
                                const WeirRange *ranges, const gint64 *tile);
/* ---- added by branch tier2 ---- */

/* Replaces the body of tasklet n by code (parsed now; a parse error is kept
 * for the validator to report, with n->code == NULL, as for
 * weir_state_add_tasklet).  Returns FALSE when n is not a tasklet. */
WEIR_API gboolean weir_tasklet_set_code(WeirNode *n, const char *code);

/* ------------------------------------------- edits added by branch tier3 */

/* Moves every node and memlet of src into dst (ids kept; both arrays of dst
 * stay sorted by id); src is left empty.  Both states belong to the same
 * graph. */
WEIR_API void weir_state_move_elements(WeirState *dst, WeirState *src);

/* Removes a transition.  Returns FALSE when there is none with that id. */
WEIR_API gboolean weir_graph_remove_transition(WeirGraph *g, guint id);

/* Changes the source and destination states of a transition (its id, and
 * so its priority among the transitions leaving a state, is kept).
 * Returns FALSE when the transition or one of the states does not
 * exist. */
WEIR_API gboolean weir_graph_retarget_transition(WeirGraph *g, guint id,
                                                 guint src, guint dst);

/* Removes a state with its nodes and memlets.  Refused (FALSE) for the start
 * state, for a state that a transition still joins, and for an unknown
 * id. */
WEIR_API gboolean weir_graph_remove_state(WeirGraph *g, guint id);

/* --------------------------------------------- edits added by branch tier4 */

/* Makes access node n read or write container `data` instead (the memlets
 * touching it are left to the caller).  FALSE when n is not an access
 * node. */
WEIR_API gboolean weir_access_set_data(WeirNode *n, const char *data);
/* Makes a (non-empty) memlet name container `data` instead; its subset is
 * left as it is (change it too when the containers differ in shape).
 * FALSE for an empty memlet. */
WEIR_API gboolean weir_memlet_set_data(WeirMemlet *m, const char *data);
/* Replaces a container's shape (borrowed exprs, rank entries; the rank may
 * change) and resets its strides to row-major.  Memlets naming it are left
 * to the caller.  FALSE when the container has constant data, whose size
 * would no longer match. */
WEIR_API gboolean weir_container_set_shape(WeirContainer *c, guint rank,
                                           WeirExpr *const *shape);

G_END_DECLS

#endif
