/* cli-tune.c — `weir tune FILE [-O N] [--budget S] [--threads N]`: time the
 * implementations of every native library node and store the winners in
 * the tuning database (core/weir-tune.h, docs/tuning.md); `--list` prints
 * what the database holds. */
#include "cli.h"

static void print_progress(const char *line, gpointer user) {
  (void)user;
  printf("%s\n", line);
  fflush(stdout);
}

static char *format_ms(double s) {
  return s > 0 ? g_strdup_printf("%.3f", s * 1e3) : g_strdup("-");
}

static void print_summary(const WeirTuneReport *r) {
  printf("\nsummary (%u signature%s tuned of the %u tunable node%s; %u "
         "candidate%s tried, %u rejected, %u failed; %.1f s%s)\n",
         r->signatures->len, r->signatures->len == 1 ? "" : "s", r->n_nodes,
         r->n_nodes == 1 ? "" : "s", r->n_candidates,
         r->n_candidates == 1 ? "" : "s", r->n_rejected, r->n_failed,
         r->seconds, r->out_of_budget ? ", budget used up" : "");
  gboolean partial = FALSE;
  CliTable *t = cli_table_new(8);
  cli_table_row(t, g_strdup("key"), g_strdup("op"), g_strdup("node"),
                g_strdup("output"), g_strdup("nodes"), g_strdup("before ms"),
                g_strdup("tuned"), g_strdup("ms"));
  for (guint i = 0; i < r->signatures->len; i++) {
    const WeirTuneSignature *s = g_ptr_array_index(r->signatures, i);
    g_autofree char *first = format_ms(s->first_s);
    char *best = s->best_impl ? g_strdup_printf("%s%s%s%s", s->best_impl,
                                                *s->best_params ? " (" : "",
                                                s->best_params,
                                                *s->best_params ? ")" : "")
                              : g_strdup("(none)");
    char *before = g_strdup_printf("%s (%s)", first, s->first_impl);
    partial = partial || !s->complete;
    cli_table_row(t, g_strdup_printf("%.12s", s->key), g_strdup(s->op),
                  g_strdup(s->label), g_strdup(s->shape),
                  g_strdup_printf("%u", s->n_nodes), before,
                  g_strdup_printf("%s%s", best, s->complete ? "" : " *"),
                  format_ms(s->best_s));
    g_free(best);
  }
  cli_table_print(t);
  if (partial)
    printf("(* not every candidate was tried)\n");
  printf("database %s; -O3 uses it (weir run FILE -O3)\n", r->db_path);
}

static int list_db(const char *path) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTuningDb) db = weir_tuning_db_open(path, FALSE, &error);
  if (!db) {
    cli_print_error("tune", error);
    return 1;
  }
  g_autoptr(GPtrArray) rows = weir_tuning_db_list(db, NULL, &error);
  if (!rows) {
    cli_print_error("tune", error);
    return 1;
  }
  printf("%s: %u result%s\n", weir_tuning_db_file(db), rows->len,
         rows->len == 1 ? "" : "s");
  CliTable *t = cli_table_new(8);
  cli_table_row(t, g_strdup("key"), g_strdup("op"), g_strdup("impl"),
                g_strdup("params"), g_strdup("status"), g_strdup("ms"),
                g_strdup("max error"), g_strdup("date"));
  for (guint i = 0; i < rows->len; i++) {
    const WeirTuningRecord *r = g_ptr_array_index(rows, i);
    cli_table_row(
        t, g_strdup_printf("%.12s", r->key), g_strdup(r->op), g_strdup(r->impl),
        g_strdup(*r->params ? r->params : "-"),
        g_strdup(weir_tuning_status_name(r->status)),
        r->status == WEIR_TUNING_OK ? format_ms(r->median_s) : g_strdup("-"),
        r->max_abs_error >= 0 ? g_strdup_printf("%.2g", r->max_abs_error)
                              : g_strdup("-"),
        g_strdup(r->date));
  }
  cli_table_print(t);
  return 0;
}

int cli_cmd_tune(int argc, char **argv) {
  static const char usage[] =
      "usage: weir tune FILE [-O0|-O1|-O2|-O3] [--budget S] [--threads N] "
      "[--reps N] [--db PATH] [-D SYM=VALUE]...\n"
      "       weir tune --list [--db PATH]\n";
  g_auto(GStrv) defines = NULL, impls = NULL;
  g_auto(CliCompile) cc = {0};
  g_autofree char *level_text = NULL, *db = NULL;
  double budget = 0;
  gint threads = 0, reps = 10;
  gboolean list = FALSE;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      CLI_OPT_LEVEL_ENTRY(&level_text),
      {"budget", 0, 0, G_OPTION_ARG_DOUBLE, &budget,
       "Seconds for the whole tuning (default: no limit)", "S"},
      {"threads", 't', 0, G_OPTION_ARG_INT, &threads,
       "Threads of the timed runs and of the signatures (default: "
       "OMP_NUM_THREADS or one per processor)",
       "N"},
      {"reps", 0, 0, G_OPTION_ARG_INT, &reps,
       "Timed runs per candidate at most (median; default 10)", "N"},
      {"db", 0, 0, G_OPTION_ARG_FILENAME, &db,
       "Tuning database (default: $WEIR_TUNING_DB or "
       "$XDG_DATA_HOME/weir/tuning.db)",
       "PATH"},
      {"list", 0, 0, G_OPTION_ARG_NONE, &list,
       "Print the results stored in the database", NULL},
      CLI_COMPILE_ENTRIES(&impls, &cc),
      {NULL}};
  if (!cli_parse_options("tune", "FILE", entries, &argc, &argv))
    return 2;
  if (list && argc == 1)
    return list_db(db);
  if (argc != 2 || budget < 0 || threads < 0 || reps < 1) {
    fputs(usage, stderr);
    return 2;
  }
  const char *file = argv[1];
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = cli_parse_defines(defines, &error);
  if (!bindings) {
    cli_print_error("tune", error);
    return 2;
  }
  guint level;
  if (!cli_opt_level("tune", level_text, file, &level))
    return 2;
  if (!level_text && !cli_is_workspace_path(file))
    level = WEIR_OPT_LEVEL_MAX; /* tune what -O3 compiles */
  WeirOnnxImportOptions io = {.symbols = bindings};
  g_autoptr(WeirGraph) g = cli_load_program("tune", file, &io, impls);
  if (!g)
    return 1;
  if (!cli_optimize("tune", file, g, level, bindings, NULL))
    return 1;
  WeirCompileOptions copts = cli_compile_options(&cc);
  WeirTuneOptions o = {.budget_seconds = budget,
                       .threads = (guint)threads,
                       .repetitions = (guint)reps,
                       .compile = &copts,
                       .bindings = bindings,
                       .db_path = db};
  g_autofree char *budget_text =
      budget > 0 ? g_strdup_printf("%g s", budget) : g_strdup("none");
  printf("%s: -O%u, budget %s\n", file, level, budget_text);
  g_autoptr(WeirTuneReport) report = NULL;
  if (!weir_tune(g, &o, print_progress, NULL, &report, &error)) {
    fprintf(stderr, "weir tune: %s: %s\n", file, error->message);
    return 1;
  }
  print_summary(report);
  return 0;
}
