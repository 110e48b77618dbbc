/* weir-tune.h — the auto-tuner behind `weir tune` (docs/tuning.md).
 *
 * weir_tune() takes a program as it will be compiled (usually after the
 * pipeline of an optimization level) and, for every library node that a
 * native implementation accepts, builds a one-node program (the node, its
 * operands as arguments of random values, constant operands bound with
 * their data), and times the candidates for it:
 *
 *   - the node's current choice first (its "impl" attribute or the
 *     default, weir_native_chosen), then every other registered native
 *     implementation that accepts it (by name), then "pure" (the
 *     maps-and-tasklets expansion);
 *   - for a native implementation with tunable parameters
 *     (WeirNativeImpl.params): its defaults, then each value of each
 *     parameter with the others at their defaults (a coordinate sweep).
 *
 * Each candidate is compiled through the compile cache and run once on the
 * same inputs; its outputs are compared with the reference (the pure
 * expansion compiled, itself checked against the reference interpreter
 * when the node has at most opts->interpret_max_flops FLOPs) with rtol and
 * atol.  A candidate that differs is *rejected*, one that does not compile
 * or run has *failed*; both are reported and stored, never chosen.  The
 * others are timed (warm-up, then the median of up to opts->repetitions
 * runs, fewer for slow candidates; one whose checked run and one more run
 * both take more than 4x the best median so far keeps that second run as
 * its time).  The two fastest fully timed candidates are then timed a
 * second time, after all the others, and keep the better of their two
 * medians, so one burst of load on a shared machine does not decide
 * alone.  Nodes with the same
 * signature (weir-tuning.h) are tuned once.  Signatures are taken in
 * decreasing order of their FLOPs (times the nodes sharing them), and the
 * budget (wall seconds, for everything) is checked before each candidate:
 * what was measured before it ran out is stored.
 *
 * Every candidate's outcome is stored in the tuning database (replacing an
 * earlier measurement of the same candidate), so -O3 (apply-tuning) picks
 * the fastest "ok" one.
 */
#ifndef WEIR_TUNE_H
#define WEIR_TUNE_H

#include "weir-graph.h"
#include "weir-runtime.h"
#include "weir-tuning.h"

G_BEGIN_DECLS

typedef struct {
  double budget_seconds; /* wall time for the whole tuning; 0: no limit */
  guint threads;         /* 0: weir_tuning_default_threads() */
  guint repetitions;     /* timed runs per candidate at most; 0: 10 */
  guint warmup;          /* untimed runs before them; 0: 1 */
  double rtol, atol;     /* both 0: WEIR_CONFORMANCE_RTOL / _ATOL */
  guint64 seed;          /* random inputs; 0: 1 */
  /* Reference by the interpreter up to this many FLOPs; 0: 2e7. */
  guint64 interpret_max_flops;
  const WeirCompileOptions *compile; /* borrowed; NULL: defaults */
  GHashTable *bindings;              /* symbol values (borrowed; may be NULL) */
  const char *db_path;               /* NULL: weir_tuning_db_path() */
} WeirTuneOptions;

/* What was done for one signature. */
typedef struct {
  char *key;         /* signature key (hex SHA-256) */
  char *op;          /* operator */
  char *label;       /* the first node's label */
  char *shape;       /* "f32[1, 64, 56, 56]": the node's first output */
  guint n_nodes;     /* nodes of the program with this signature */
  double flops;      /* of one node (0: unknown) */
  char *first_impl;  /* the choice before tuning (the first candidate) */
  double first_s;    /* its median, 0 when it was not measured */
  char *best_impl;   /* the fastest accepted candidate, or NULL */
  char *best_params; /* its parameters ("" for none) */
  double best_s;
  gboolean complete;     /* every candidate was tried */
  GPtrArray *candidates; /* WeirTuningRecord*, in the order tried */
} WeirTuneSignature;

typedef struct {
  GPtrArray *signatures; /* WeirTuneSignature*, in the order tuned */
  guint n_nodes;         /* tunable nodes in the program */
  guint n_candidates;    /* candidates tried */
  guint n_rejected, n_failed;
  gboolean out_of_budget; /* stopped by the budget */
  double seconds;         /* wall time */
  char *db_path;          /* the database written */
} WeirTuneReport;

WEIR_API void weir_tune_report_free(WeirTuneReport *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirTuneReport, weir_tune_report_free)

/* Called with one line of progress (borrowed), from the calling thread. */
typedef void (*WeirTuneProgressFunc)(const char *line, gpointer user);

/* Tunes program (not changed; see above).  opts and progress may be NULL.
 * *report receives what was done (transfer full).  Errors: the database
 * cannot be opened or written, or a one-node program cannot be built;
 * candidates that fail are reported, not errors. */
/**
 * weir_tune: (skip)
 */
WEIR_API gboolean weir_tune(const WeirGraph *program,
                            const WeirTuneOptions *opts,
                            WeirTuneProgressFunc progress, gpointer user,
                            WeirTuneReport **report, GError **error);

/* The one-node program of library node n of state s of g, as the tuner
 * times it: every operand a container of the same dtype, shape and strides
 * (an argument, or a constant with the same data when it has data), the
 * node with its attributes.  (transfer full) */
WEIR_API WeirGraph *weir_tune_node_program(const WeirGraph *g,
                                           const WeirState *s,
                                           const WeirNode *n, GError **error);

G_END_DECLS

#endif
