/* cli-conformance.c — `weir conformance`: the ONNX backend node tests run
 * through Weir (core/weir-conformance.h, docs/onnx.md). */
#include <string.h>

#include "cli.h"

static const char *short_detail(const WeirConformanceResult *r) {
  const char *d = r->detail ? r->detail : "";
  gsize len = strlen(r->path);
  if (strncmp(d, r->path, len) == 0) {
    const char *rest = strstr(d + len, ": ");
    if (rest)
      return rest + 2;
  }
  return d;
}

/* "FAIL (max error E) detail", "error (detail)", ... of status st. */
static void append_status(GString *s, WeirConformanceStatus st,
                          const WeirConformanceResult *r) {
  g_string_append(s, weir_conformance_status_name(st));
  if (st == WEIR_CONFORMANCE_FAIL)
    g_string_append_printf(s, " (max error %.3g) %s", r->max_error,
                           short_detail(r));
  else if (st != WEIR_CONFORMANCE_PASS)
    g_string_append_printf(s, " (%s)", short_detail(r));
}

static char *status_text(const WeirConformanceResult *r) {
  GString *s = g_string_new(NULL);
  if (r->status == WEIR_CONFORMANCE_BAD_DATA) {
    /* what the test's data gave, then why that is not Weir's failure */
    g_string_append(s, "bad data: ");
    append_status(s, r->data_status, r);
    g_string_append(s, "  [known bad data]");
    return g_string_free(s, FALSE);
  }
  append_status(s, r->status, r);
  if (r->expected_reason && r->status == WEIR_CONFORMANCE_PASS)
    g_string_append(s, "  [listed as expected not to pass: remove it]");
  else if (r->expected_reason)
    g_string_append(s, "  [expected]");
  else if (r->bad_data_reason && r->status == WEIR_CONFORMANCE_PASS)
    g_string_append(s, "  [listed as known bad data: remove it]");
  else if (r->bad_data_reason)
    g_string_append(s, "  [listed as known bad data with another status]");
  return g_string_free(s, FALSE);
}

typedef struct {
  int width;
} ConformancePrinter;

static void print_conformance_result(const WeirConformanceResult *r,
                                     gpointer user_data) {
  const ConformancePrinter *p = user_data;
  g_autofree char *st = status_text(r);
  printf("%-*s  %s\n", p->width, r->name, st);
  fflush(stdout);
}

int cli_cmd_conformance(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  g_autofree char *expected_path = NULL, *bad_data_path = NULL, *backend = NULL;
  gboolean any_opset = FALSE;
  double opt_rtol = -1, opt_atol = -1;
  /* Compile options of --backend compiled (no --impl: every library node
   * gets its default implementation). */
  g_auto(CliCompile) cc = {0};
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"expected-unsupported", 0, 0, G_OPTION_ARG_FILENAME, &expected_path,
       "Tests expected not to pass, with reasons", "FILE"},
      {"known-bad-data", 0, 0, G_OPTION_ARG_FILENAME, &bad_data_path,
       "Tests whose stored data contradicts the ONNX specification, with "
       "the status it gives and the evidence",
       "FILE"},
      {"backend", 0, 0, G_OPTION_ARG_STRING, &backend,
       "Execution backend: interp (default) or compiled (generated C, "
       "compiled with -O1 unless --cflags says otherwise)",
       "NAME"},
      {"any-opset", 0, 0, G_OPTION_ARG_NONE, &any_opset,
       "Import opsets outside 11..17 (warnings are not shown)", NULL},
      {"rtol", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rtol,
       "Relative tolerance for float outputs (default 1e-4)", "R"},
      {"atol", 0, 0, G_OPTION_ARG_DOUBLE, &opt_atol,
       "Absolute tolerance for float outputs (default 1e-5)", "A"},
      {"cc", 0, 0, G_OPTION_ARG_STRING, &cc.cc,
       "C compiler of the compiled backend (default: $CC or cc)", "CC"},
      {"cflags", 0, 0, G_OPTION_ARG_STRING, &cc.cflags,
       "Compiler flags of the compiled backend "
       "(default: " WEIR_CONFORMANCE_COMPILE_FLAGS ")",
       "FLAGS"},
      CLI_CACHE_DIR_ENTRY(&cc.cache_dir),
      CLI_NO_CACHE_ENTRY(&cc),
      {NULL}};
  if (!cli_parse_options("conformance", "DIR...", entries, &argc, &argv))
    return 2;
  if (argc < 2) {
    fprintf(stderr, "usage: weir conformance [--expected-unsupported FILE] "
                    "[--known-bad-data FILE] [--backend interp|compiled] "
                    "DIR...\n");
    return 2;
  }
  if (backend && strcmp(backend, "interp") != 0 &&
      strcmp(backend, "compiled") != 0) {
    fprintf(stderr,
            "weir conformance: unknown backend '%s' (known: interp, "
            "compiled)\n",
            backend);
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirConformanceExpectations) expectations = NULL;
  if (expected_path) {
    expectations = weir_conformance_expectations_load(expected_path, &error);
    if (!expectations) {
      cli_print_error("conformance", error);
      return 2;
    }
  }
  if (bad_data_path) {
    if (!expectations)
      expectations = weir_conformance_expectations_new();
    if (!weir_conformance_expectations_load_bad_data(expectations,
                                                     bad_data_path, &error)) {
      cli_print_error("conformance", error);
      return 2;
    }
  }
  g_autoptr(GPtrArray) tests =
      weir_conformance_find_tests((const char *const *)argv + 1, &error);
  if (!tests) {
    cli_print_error("conformance", error);
    return 2;
  }
  WeirCompileOptions copts = cli_compile_options(&cc);
  WeirConformanceOptions opts = {.expectations = expectations,
                                 .rtol = opt_rtol,
                                 .atol = opt_atol,
                                 .backend = backend,
                                 .allow_any_opset = any_opset,
                                 .compile = &copts};
  ConformancePrinter printer = {.width = 4};
  for (guint i = 0; i < tests->len; i++) {
    g_autofree char *base = g_path_get_basename(g_ptr_array_index(tests, i));
    printer.width = MAX(printer.width, (int)strlen(base));
  }
  printf("%-*s  status\n", printer.width, "test");
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(GPtrArray) results = weir_conformance_run_tests(
      tests, &opts, print_conformance_result, &printer);
  double seconds = (double)(g_get_monotonic_time() - t0) / 1e6;

  printf("\nTotals per operator\n");
  CliTable *t = cli_table_new(8);
  cli_table_row(t, g_strdup("operator"), g_strdup("tests"), g_strdup("pass"),
                g_strdup("FAIL"), g_strdup("unsupported"), g_strdup("error"),
                g_strdup("bad data"), g_strdup("unexpected"));
  g_autoptr(GPtrArray) totals = weir_conformance_totals(results);
  g_autoptr(WeirConformanceTotals) all = weir_conformance_overall(results);
  g_ptr_array_add(totals, g_steal_pointer(&all));
  for (guint i = 0; i < totals->len; i++) {
    const WeirConformanceTotals *x = g_ptr_array_index(totals, i);
    cli_table_row(
        t, g_strdup(x->op), g_strdup_printf("%u", x->tests),
        g_strdup_printf("%u", x->pass), g_strdup_printf("%u", x->fail),
        g_strdup_printf("%u", x->unsupported), g_strdup_printf("%u", x->error),
        g_strdup_printf("%u", x->bad_data), g_strdup_printf("%u", x->failures));
  }
  cli_table_print(t);
  const WeirConformanceTotals *sum = g_ptr_array_index(totals, totals->len - 1);
  printf("\n%u tests: %u pass, %u FAIL, %u unsupported, %u error, %u bad "
         "data (backend %s, %.1f s)\n",
         sum->tests, sum->pass, sum->fail, sum->unsupported, sum->error,
         sum->bad_data, backend ? backend : "interp", seconds);

  guint stale = 0, fixed = 0;
  for (guint i = 0; i < results->len; i++) {
    const WeirConformanceResult *r = g_ptr_array_index(results, i);
    if (r->expected_reason && r->status == WEIR_CONFORMANCE_PASS)
      stale++;
    if (r->bad_data_reason && r->status == WEIR_CONFORMANCE_PASS)
      fixed++;
  }
  if (stale)
    printf("%u test%s listed in %s now pass%s: remove them from the list\n",
           stale, stale == 1 ? "" : "s", expected_path, stale == 1 ? "es" : "");
  if (fixed)
    printf("%u test%s listed as known bad data in %s now pass%s (was the "
           "data fixed?): remove them from the list\n",
           fixed, fixed == 1 ? "" : "s", bad_data_path, fixed == 1 ? "es" : "");
  if (sum->failures) {
    printf("\n%u unexpected result%s (a test of a supported operator that "
           "does not pass and is not listed%s%s, or known bad data that gave "
           "another status):\n",
           sum->failures, sum->failures == 1 ? "" : "s",
           expected_path ? " in " : "", expected_path ? expected_path : "");
    for (guint i = 0; i < results->len; i++) {
      const WeirConformanceResult *r = g_ptr_array_index(results, i);
      if (!weir_conformance_result_is_failure(r))
        continue;
      g_autofree char *st = status_text(r);
      printf("  %s  %s\n", r->name, st);
    }
    return 1;
  }
  return 0;
}
