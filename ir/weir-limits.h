/* weir-limits.h — checked sizes and the memory budget of a run.
 *
 * Every size Weir computes from input (a shape in a JSON program, a
 * dimension in an ONNX model, a symbol bound with -D) goes through checked
 * arithmetic: an element count, a storage span or a byte size that does not
 * fit in a gint64 is an error naming the container and the symbols, never a
 * wrapped-around value.  Before allocating for a run, the bytes the program
 * needs are compared with a budget (docs/reliability.md).
 */
#ifndef WEIR_LIMITS_H
#define WEIR_LIMITS_H

#include "weir-graph.h"

G_BEGIN_DECLS

/* Size of one container with its shape evaluated. */
typedef struct {
  gint64 elements; /* product of the shape */
  gint64 span;     /* elements its storage covers (from the strides) */
  gint64 bytes;    /* span x dtype size */
} WeirContainerSize;

/* Evaluates c's shape and strides with bindings (name -> gint64*, may be
 * NULL) using checked arithmetic.  Returns FALSE with WEIR_ERROR_INVALID
 * when a dimension is negative, a stride is negative, or the element count,
 * the span or the byte size (plus alignment padding) overflows a gint64;
 * the message starts with "container 'NAME'" and names the bound symbols of
 * its shape with their values.  An unbound symbol fails with
 * WEIR_ERROR_INVALID "unbound symbol 'N'" (also prefixed). */
WEIR_API gboolean weir_container_size(const WeirContainer *c,
                                      GHashTable *bindings,
                                      WeirContainerSize *out, GError **error);

/* weir_container_size for every top-level container of g whose shape can
 * be evaluated with bindings: containers with an unbound symbol are
 * skipped.  Returns FALSE with the first problem. */
WEIR_API gboolean weir_graph_check_sizes(const WeirGraph *g,
                                         GHashTable *bindings, GError **error);

/* Bytes the program needs for a run, by kind of container (top-level
 * containers; the interpreter and the generated code allocate each of
 * them once). */
typedef struct {
  gint64 arguments;  /* non-transient containers without constant data */
  gint64 parameters; /* non-transient containers with constant data */
  gint64 transients;
  gint64 total; /* the sum (checked) */
} WeirMemoryNeed;

/* Fills need, checking every size (weir_container_size).  Containers with
 * an unbound symbol are not counted (the run fails on them later, naming
 * the symbol).  Fails on a bad size or on overflow of the sum. */
WEIR_API gboolean weir_graph_memory_need(const WeirGraph *g,
                                         GHashTable *bindings,
                                         WeirMemoryNeed *need, GError **error);

/* Physical memory of this machine in bytes (sysconf), or 0 when unknown. */
WEIR_API guint64 weir_physical_memory(void);

/* The memory budget: limit bytes, or when limit is 0, the physical memory
 * (no check when that is unknown).  Returns FALSE with WEIR_ERROR_RUNTIME
 * when need exceeds it; the message gives the figures: "program 'P' needs
 * 4.0 TiB (4398046511104 bytes: arguments ..., parameters ...,
 * transients ...), more than the memory limit of 7.6 GiB (the physical
 * memory; --max-memory changes it)". */
WEIR_API gboolean weir_memory_budget_check(const WeirGraph *g,
                                           const WeirMemoryNeed *need,
                                           guint64 limit, GError **error);

/* weir_graph_memory_need then weir_memory_budget_check. */
WEIR_API gboolean weir_graph_check_memory(const WeirGraph *g,
                                          GHashTable *bindings, guint64 limit,
                                          GError **error);

/* Parses a size: a non-negative integer with an optional suffix K, M, G or
 * T (powers of 1024; "KiB", "MB" ... and lower case accepted) or B.
 * "0" means no explicit limit.  FALSE with WEIR_ERROR_INVALID on anything
 * else or on overflow. */
WEIR_API gboolean weir_size_parse(const char *text, guint64 *out,
                                  GError **error);

/* Problems with sizes that weir validate reports without bindings: the
 * containers whose constant shape overflows (errors, appended to errors as
 * char*) and those larger than the physical memory of this machine
 * (warnings).  Both arrays take owned strings. */
/**
 * weir_graph_check_size_limits:
 * @errors: (element-type utf8):
 * @warnings: (element-type utf8):
 */
WEIR_API void weir_graph_check_size_limits(const WeirGraph *g,
                                           GPtrArray *errors,
                                           GPtrArray *warnings);

G_END_DECLS

#endif
