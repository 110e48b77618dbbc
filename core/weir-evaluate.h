/* weir-evaluate.h — compile, run, validate and time a program against a
 * reference program, in one call that a worker thread can make.
 *
 * This is what the workbench's "Run" and "Benchmark" do, and what a script
 * does to see which transformation step bought what:
 *
 *   1. compile `program` through the compile cache (weir_kernel_compile);
 *   2. when `reference` is given (typically the original program of a
 *      session), compile it too;
 *   3. fill every argument container of `program` with the tensor given
 *      for it in opts->inputs (a file loaded with weir_tensor_load, as
 *      `weir run --input`), else with reproducible random values
 *      (weir_evaluate_random_input, the rule of `weir run` and of exported
 *      kernels); the reference gets copies of the same tensors;
 *   4. run each once and compare every argument of `program` with the
 *      reference's container of the same name and with the tensor given
 *      for it in opts->expected (floats with rtol/atol, others exactly);
 *   5. time `program`, then the reference, each with warmup untimed and
 *      repetitions timed runs (monotonic clock), so their medians compare
 *      like with like.
 *
 * Progress is reported through a callback (from the calling thread) with a
 * fraction in [0, 1] and a phase text; a GCancellable is checked between
 * phases and between repetitions, and a cancelled evaluation fails with
 * G_IO_ERROR_CANCELLED.  Neither program is changed, and neither may be
 * changed by another thread during the call.
 */
#ifndef WEIR_EVALUATE_H
#define WEIR_EVALUATE_H

#include <gio/gio.h>

#include "weir-graph.h"
#include "weir-runtime.h"
#include "weir-tensor.h"

G_BEGIN_DECLS

typedef struct {
  guint warmup;      /* untimed runs (0 allowed) */
  guint repetitions; /* timed runs; 0 means 1 */
  guint64 seed;      /* random inputs; 0 means 1 (as `weir run`) */
  double rtol, atol; /* tolerances; both 0: WEIR_CONFORMANCE_RTOL/ATOL */
  /* Compiler, flags and cache (borrowed; may be NULL: defaults). */
  const WeirCompileOptions *compile;
  /* Argument values instead of random ones: container name -> WeirTensor*
   * (borrowed; may be NULL).  Each must name an argument of program with
   * its dtype and shape (weir_evaluate_check_tensor); a symbol that is a
   * whole dimension of an input and is not in bindings is bound from the
   * input's shape. */
  GHashTable *inputs;
  /* Expected argument values after the run (outputs), compared with the
   * program's like the reference's: container name -> WeirTensor*
   * (borrowed; may be NULL). */
  GHashTable *expected;
  /* Memory budget of the run in bytes (weir_graph_check_memory): 0 means
   * the physical memory.  The program (and the reference) must each fit. */
  guint64 max_memory;
  /* Run the reference with the reference interpreter (weir_interpret on a
   * copy with its library nodes expanded) instead of compiling it: the
   * check of `weir run --check`.  It runs once, on the same inputs, and is
   * not timed (reference_seconds is that one run). */
  gboolean reference_interpreted;
  /* Only the checked run: no warm-up and no timed runs (bench stays
   * empty; first_run_seconds has the time). */
  gboolean no_timing;
  /* OpenMP threads of program's kernel (weir_kernel_set_threads); 0: its
   * default.  A kernel that cannot set them runs with its default and
   * threads_error says why. */
  int threads;
} WeirEvaluateOptions;

/* One comparison of an argument of program after the checked run. */
typedef struct {
  char *argument;       /* container name (owned) */
  char *against;        /* "the reference" or "the expected output" (owned) */
  double max_abs_error; /* largest |got - want| */
  double rtol, atol;    /* the tolerances used (0 for integers) */
  gboolean ok;
  char *detail; /* where it differs most, when not ok (owned) */
} WeirComparison;

typedef struct {
  gboolean cache_hit;       /* program's object came from the cache */
  double compile_seconds;   /* wall time of compiling program (both 0-ish
                               on a cache hit) */
  WeirBenchResult bench;    /* timings of program */
  double reference_seconds; /* median run of the reference (0: none) */
  gboolean validated;       /* a reference was given and compared */
  gboolean matches;         /* every compared argument is within tolerance */
  double max_abs_error;     /* largest difference over compared arguments */
  guint n_compared;         /* arguments compared */
  char *mismatch;           /* first mismatch, or NULL (owned) */
  guint n_expected;         /* of n_compared: against opts->expected */
  char *cache_key;          /* compile cache key of program (owned) */
  gboolean cache_recovered; /* a damaged cache entry was replaced */
  double compiler_seconds;  /* of compile_seconds: the C compiler alone */
  double first_run_seconds; /* the checked run of program */
  /* program's arguments after the checked run: container name (borrowed
   * from program) -> WeirTensor* (owned by the evaluation). */
  GHashTable *outputs;
  GPtrArray *comparisons; /* WeirComparison*, in argument order (owned) */
  char *threads_error;    /* why opts->threads was not set, or NULL */
  double key_seconds;     /* of compile_seconds: computing the cache key */
  double codegen_seconds; /* of compile_seconds: generating C (0 on a hit) */
  gsize source_bytes;     /* size of the generated C (0 on a hit) */
  guint units;            /* its compile units (0 on a hit) */
  gsize constants_bytes;  /* parameters bound to the kernel (not copied) */
  gsize workspace_bytes;  /* the kernel's workspace after the runs */
  gsize prepacked_bytes;  /* weights packed once at load (owned by it) */
} WeirEvaluation;

/* Called with the fraction done (0..1) and what happens now (borrowed). */
typedef void (*WeirProgressFunc)(double fraction, const char *phase,
                                 gpointer user);

/* Evaluates program (see above).  bindings: symbol values (name ->
 * gint64*, may be NULL when the program has none unbound).  reference,
 * opts, cancellable and progress may be NULL.  On success fills *out
 * (clear it with weir_evaluation_clear); a mismatch is a success with
 * matches = FALSE.  On failure *out is left cleared.  Errors name the
 * program and the phase. */
/**
 * weir_evaluate: (skip)
 */
WEIR_API gboolean weir_evaluate(const WeirGraph *program,
                                const WeirGraph *reference,
                                GHashTable *bindings,
                                const WeirEvaluateOptions *opts,
                                GCancellable *cancellable,
                                WeirProgressFunc progress, gpointer user,
                                WeirEvaluation *out, GError **error);
WEIR_API void weir_evaluation_clear(WeirEvaluation *e);

/* The one rule for inputs nobody gave, shared by weir_evaluate, `weir
 * run-ref`, `run` and `bench`, and weir_export (whose harness repeats it in
 * C): a tensor of c's dtype and shape, the shape evaluated with bindings
 * (may be NULL), filled by weir_tensor_fill_random with seed + c->id, so
 * the same seed gives every container the same values everywhere.  NULL
 * with the error of the dimension that has no value (weir_expr_eval's,
 * naming the symbol) or is negative, or weir_tensor_try_new's when the
 * tensor cannot be made; callers add which argument it is.
 * (transfer full) */
WEIR_API WeirTensor *weir_evaluate_random_input(const WeirContainer *c,
                                                GHashTable *bindings,
                                                guint64 seed, GError **error);

/* Checks that t can be the value of argument `name` of g: name is an
 * argument container (not transient, not a constant), and t has its dtype
 * and shape (shape evaluated with bindings, which may be NULL; an unbound
 * symbol matches any extent).  Errors name the argument and both shapes or
 * dtypes, e.g. "input 'input' is f32[1, 3, 32, 32], but the tensor is
 * f32[1, 3, 16, 16]"; what ("input", "expected output") starts them. */
WEIR_API gboolean weir_evaluate_check_tensor(const WeirGraph *g,
                                             GHashTable *bindings,
                                             const char *what, const char *name,
                                             const WeirTensor *t,
                                             GError **error);

/* The evaluation as a compact JSON object text (transfer full), as stored
 * in a session step's results (weir_session_set_results):
 *   {"median_s": .., "min_s": .., "max_s": .., "repetitions": N,
 *    "compile_s": .., "cache_hit": b, "reference_s": ..,
 *    "validated": b, "matches": b, "max_abs_error": .., "label": "..."}
 * label (may be NULL) is stored as given ("run", "bench"). */
WEIR_API char *weir_evaluation_to_json(const WeirEvaluation *e,
                                       const char *label);

/* Reads back the median time of a results text written by
 * weir_evaluation_to_json; FALSE when the text has none. */
WEIR_API gboolean weir_evaluation_median_from_json(const char *json,
                                                   double *median_s);

/* One line for people from a results text of weir_evaluation_to_json:
 * "bench: 1.234 ms (original 1.456 ms, 1.18x faster), outputs match" —
 * or NULL when the text is not such a result. (transfer full) */
WEIR_API char *weir_evaluation_describe_json(const char *json);

G_END_DECLS

#endif
