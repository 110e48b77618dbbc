/* weir-conformance.h — running the ONNX backend node tests.
 *
 * An ONNX node test is a directory with a model.onnx and data sets
 * test_data_set_<n>/ holding input_<k>.pb and output_<k>.pb (TensorProto
 * files; input k is the model's k-th graph input that is not an
 * initializer, output k its k-th graph output).  Running a test imports the
 * model with the concrete shapes of the data set's inputs, runs it — on the
 * reference interpreter after expanding every library node, or (backend
 * "compiled") as generated code built through the compile cache — and
 * compares each output:
 * floating outputs with |got - expected| <= atol + rtol * |expected|
 * (default rtol 1e-4, atol 1e-5), integer and bool outputs exactly.
 *
 * Expectations (a text file, reviewed by a human, e.g.
 * tests/conformance/expected-unsupported.txt):
 *
 *   # comment
 *   test_lstm_defaults          # LSTM is not implemented
 *   test_gemm_big rtol=1e-3 atol=1e-4   # reason for the looser tolerance
 *
 * A line holding a test name and a reason after '#' lists a test that is
 * expected not to pass (an operator or feature Weir does not support).  A
 * line with rtol= / atol= after the name overrides the tolerances of that
 * test instead.  Every line needs a reason.
 *
 * Known bad test data (a second file, e.g.
 * tests/conformance/known-bad-data.txt): tests whose stored data
 * contradicts the ONNX specification, so that no correct implementation
 * passes them.  Each line names the test, the status that bad data gives
 * (FAIL or error) and the evidence:
 *
 *   test_adam_multiple  FAIL   # outputs made with epsilon 1e-2, ...
 *
 * Such a test that ends with exactly that status is reported as "bad data",
 * counted on its own (never as a pass, never as a FAIL), and does not fail
 * the run; with any other status it is an unexpected result, and when it
 * passes the runner says so (the data was fixed: remove the line).  So a
 * FAIL always means that Weir computed something else than the test's
 * data, which the specification supports.
 *
 * The library does not print: the runner returns results and the caller
 * (the `weir conformance` command, tests, the GUI) shows them.
 */
#ifndef WEIR_CONFORMANCE_H
#define WEIR_CONFORMANCE_H

#include "weir-runtime.h"
#include "weir-types.h"

G_BEGIN_DECLS

#define WEIR_CONFORMANCE_RTOL 1e-4
#define WEIR_CONFORMANCE_ATOL 1e-5
/* Compiler flags of the compiled backend when none are given: -O1, as a
 * node test is compiled once and run once. */
#define WEIR_CONFORMANCE_COMPILE_FLAGS                                         \
  "-O1 -march=native -fopenmp -fPIC -shared"
/* Tests whose programs weir_conformance_run_tests compiles together. */
#define WEIR_CONFORMANCE_COMPILE_BATCH 16

typedef enum {
  WEIR_CONFORMANCE_PASS,
  WEIR_CONFORMANCE_FAIL,        /* ran, but an output differs */
  WEIR_CONFORMANCE_UNSUPPORTED, /* an operator or feature Weir lacks */
  WEIR_CONFORMANCE_ERROR,       /* anything else went wrong */
  /* listed as known bad test data, and it did not pass in the way the list
   * says (WeirConformanceResult.data_status) */
  WEIR_CONFORMANCE_BAD_DATA,
} WeirConformanceStatus;

/* "pass", "FAIL", "unsupported", "error", "bad data" (borrowed static
 * string). */
WEIR_API const char *weir_conformance_status_name(WeirConformanceStatus s);

typedef struct _WeirConformanceExpectations WeirConformanceExpectations;

/* Reads an expectations file (format above).  Errors name the file and the
 * line. (transfer full) */
/**
 * weir_conformance_expectations_load: (skip)
 */
WEIR_API WeirConformanceExpectations *
weir_conformance_expectations_load(const char *path, GError **error);
WEIR_API void
weir_conformance_expectations_free(WeirConformanceExpectations *e);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirConformanceExpectations,
                              weir_conformance_expectations_free)
/* An empty list (nothing expected, no bad data). (transfer full) */
/**
 * weir_conformance_expectations_new: (skip)
 */
WEIR_API WeirConformanceExpectations *weir_conformance_expectations_new(void);
/* Adds the known bad test data listed in the file at path (format above)
 * to e.  Errors name the file and the line: a line without a status (FAIL
 * or error) or without evidence, a test listed twice or also listed as
 * expected not to pass. */
/**
 * weir_conformance_expectations_load_bad_data: (skip)
 */
WEIR_API gboolean weir_conformance_expectations_load_bad_data(
    WeirConformanceExpectations *e, const char *path, GError **error);
/* The evidence that test's data is bad, and the status it gives (may be
 * NULL), or NULL when it is not listed. (borrowed) */
/**
 * weir_conformance_bad_data_reason: (skip)
 */
WEIR_API const char *
weir_conformance_bad_data_reason(const WeirConformanceExpectations *e,
                                 const char *test,
                                 WeirConformanceStatus *status);
/* The reason test is listed as expected not to pass, or NULL. (borrowed) */
WEIR_API const char *
weir_conformance_expected_reason(const WeirConformanceExpectations *e,
                                 const char *test);
/* The names listed as expected not to pass, sorted (transfer container). */
/**
 * weir_conformance_expected_tests: (skip)
 */
WEIR_API GPtrArray *
weir_conformance_expected_tests(const WeirConformanceExpectations *e);

typedef struct {
  /* May be NULL (nothing expected, default tolerances). (borrowed) */
  const WeirConformanceExpectations *expectations;
  /* Tolerances for floating outputs; negative: the defaults. */
  double rtol, atol;
  /* Execution backend: "interp" (the reference interpreter; NULL means
   * it) or "compiled" (the program is compiled by the code generator and
   * the compiler driver, through the compile cache, and run natively; its
   * library nodes get their default implementations, as in weir run). */
  const char *backend;
  /* Import models of opsets outside WEIR_ONNX_OPSET_MIN..MAX (see
   * WeirOnnxImportOptions.allow_any_opset) instead of reporting them as
   * unsupported. */
  gboolean allow_any_opset;
  /* The compiled backend's compiler, cache and flags (borrowed, may be
   * NULL); flags NULL means WEIR_CONFORMANCE_COMPILE_FLAGS. */
  const WeirCompileOptions *compile;
} WeirConformanceOptions;

typedef struct {
  char *name; /* the test directory's base name ("test_add") */
  char *path; /* the test directory */
  /* The operator the test is counted under: the model's operator, or for
   * tests of several operators (function expansions) the one its name
   * starts with. */
  char *op;
  WeirConformanceStatus status;
  /* PASS: NULL.  FAIL: which output differs and by how much.
   * UNSUPPORTED: the operator(s) or feature.  ERROR: the message. */
  char *detail;
  /* The largest absolute error over every output and data set (0 when
   * nothing was compared). */
  double max_error;
  guint n_data_sets;
  double seconds;
  /* The test is listed in the expectations (with this reason), or NULL. */
  char *expected_reason;
  /* Every operator of the model is known to Weir (an UNSUPPORTED status is
   * then a missing feature, not a missing operator). */
  gboolean ops_known;
  /* The test is listed as known bad data (with this evidence), or NULL. */
  char *bad_data_reason;
  /* BAD_DATA: the status the run gave (FAIL or error; detail and
   * max_error are its); otherwise equal to status. */
  WeirConformanceStatus data_status;
} WeirConformanceResult;

WEIR_API void weir_conformance_result_free(WeirConformanceResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirConformanceResult,
                              weir_conformance_result_free)

/* TRUE when the result should make a conformance run fail: the test did
 * not pass, is not listed in the expectations, is not known bad data
 * (status BAD_DATA), and is not merely a test of an operator Weir does not
 * implement. */
WEIR_API gboolean
weir_conformance_result_is_failure(const WeirConformanceResult *r);

/* The tests under each directory: a directory with a model.onnx is a test;
 * otherwise its subdirectories that have one are (sorted by name).
 * Returns paths (char*, owned by the array) in order, or NULL with an
 * error when a directory does not exist or holds no test. */
/**
 * weir_conformance_find_tests: (skip)
 */
WEIR_API GPtrArray *weir_conformance_find_tests(const char *const *dirs,
                                                GError **error);

/* Runs one test directory.  Never fails: problems are in the result.
 * opts may be NULL. (transfer full) */
/**
 * weir_conformance_run_test: (skip)
 */
WEIR_API WeirConformanceResult *
weir_conformance_run_test(const char *dir, const WeirConformanceOptions *opts);

/* Called with each result as soon as it is known (borrowed). */
typedef void (*WeirConformanceFunc)(const WeirConformanceResult *r,
                                    gpointer user_data);

/* Runs the tests in dirs (paths, e.g. from weir_conformance_find_tests) in
 * order and returns their results in that order (owned by the array).  The
 * compiled backend prepares WEIR_CONFORMANCE_COMPILE_BATCH tests at a time
 * and compiles their programs together, the cache misses in parallel
 * (weir_kernel_compile_many); a test's seconds then include its share of
 * that compile.  each (optional) sees every result in order. */
/**
 * weir_conformance_run_tests: (skip)
 */
WEIR_API GPtrArray *
weir_conformance_run_tests(GPtrArray *dirs, const WeirConformanceOptions *opts,
                           WeirConformanceFunc each, gpointer user_data);

/* Per-operator counts of a list of results. */
typedef struct {
  char *op;
  guint tests, pass, fail, unsupported, error;
  guint failures; /* results for which weir_conformance_result_is_failure */
  guint bad_data; /* results of status BAD_DATA */
} WeirConformanceTotals;

WEIR_API void weir_conformance_totals_free(WeirConformanceTotals *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirConformanceTotals,
                              weir_conformance_totals_free)
/* One entry per operator, sorted by name (results: WeirConformanceResult*;
 * returns WeirConformanceTotals*, owned by the array). */
/**
 * weir_conformance_totals: (skip)
 */
WEIR_API GPtrArray *weir_conformance_totals(GPtrArray *results);
/* Sums of every field over all results (op is "total"). (transfer full) */
/**
 * weir_conformance_overall: (skip)
 */
WEIR_API WeirConformanceTotals *weir_conformance_overall(GPtrArray *results);

G_END_DECLS

#endif
