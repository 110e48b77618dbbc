/* cli-session.c — workspaces (*.weir, docs/sessions.md): `weir new`
 * (alias `open`), `undo`, `redo`, `goto`, `history` and `bookmark`, and
 * the data-movement summary every command that changes a workspace
 * prints.  `weir apply WS.weir` is in cli-transform.c. */
#include <string.h>

#include "cli.h"

/* ---------------------------------------------------------------- summary */

/* Figures of a program: modeled traffic, logical volume, FLOPs, peak
 * transient memory. */
typedef struct {
  WeirFigure traffic, bytes, flops, peak;
} Figures;

static void figures_clear(Figures *f) {
  weir_figure_clear(&f->traffic);
  weir_figure_clear(&f->bytes);
  weir_figure_clear(&f->flops);
  weir_figure_clear(&f->peak);
}

static void figures_of(const WeirGraph *g, GHashTable *bindings, gint64 cache,
                       Figures *f) {
  g_autoptr(WeirAnalysis) a =
      weir_analysis_compute_traffic(g, bindings, cache, NULL);
  if (!a)
    return;
  weir_figure_set(&f->traffic, &a->total_traffic);
  weir_figure_set(&f->bytes, &a->total_bytes);
  weir_figure_set(&f->flops, &a->total_flops);
  weir_figure_set(&f->peak, &a->peak_transient_bytes);
}

void cli_print_workspace_summary(const char *path, const WeirSession *s) {
  guint k = weir_session_cursor(s), n = weir_session_n_steps(s);
  const WeirGraph *g = weir_session_current(s);
  printf("workspace %s  (program %s", path, g->name);
  if (weir_session_source(s))
    printf(", from %s", weir_session_source(s));
  printf(")\n");
  if (k == 0) {
    printf("step      0 of %u: the original program", n);
    if (weir_session_original_bookmark(s))
      printf("  [%s]", weir_session_original_bookmark(s));
    printf("\n");
  } else {
    const WeirStep *st = weir_session_step(s, k);
    printf("step      %u of %u: %s at %s", k, n, st->transform, st->site_text);
    if (st->bookmark)
      printf("  [%s]", st->bookmark);
    printf("\n");
  }
  Figures now = {0}, orig = {0};
  g_autoptr(WeirHwProfile) hw = weir_hw_profile_cached();
  gint64 cache = weir_hw_model_cache_bytes(hw);
  figures_of(g, weir_session_bindings(s), cache, &now);
  figures_of(weir_session_original(s), weir_session_bindings(s), cache, &orig);
  g_autofree char *traffic =
      cli_format_change(&orig.traffic, &now.traffic, TRUE);
  g_autofree char *cache_text = cli_format_bytes(cache);
  g_autofree char *bytes = cli_format_change(&orig.bytes, &now.bytes, TRUE);
  g_autofree char *flops = cli_format_change(&orig.flops, &now.flops, FALSE);
  g_autofree char *peak = cli_format_change(&orig.peak, &now.peak, TRUE);
  printf("modeled traffic        %s  (original -> now; %s cache)\n", traffic,
         cache_text);
  printf("logical volume         %s\n", bytes);
  printf("FLOPs                  %s\n", flops);
  printf("peak transient memory  %s\n", peak);
  figures_clear(&now);
  figures_clear(&orig);
}

/* -------------------------------------------------------------------- new */

int cli_cmd_new(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  g_autofree char *output_path = NULL;
  gboolean force = FALSE;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
       "Write the workspace to FILE (.weir)", "FILE"},
      {"force", 0, 0, G_OPTION_ARG_NONE, &force,
       "Replace an existing workspace", NULL},
      {NULL}};
  if (!cli_parse_options("new", "MODEL -o WS.weir", entries, &argc, &argv))
    return 2;
  if (argc != 2 || !output_path) {
    fprintf(stderr, "usage: weir new MODEL -o WS.weir [--force] "
                    "[-D SYM=VALUE]...\n");
    return 2;
  }
  if (!cli_is_workspace_path(output_path)) {
    fprintf(stderr, "weir new: %s: a workspace file name ends in .weir\n",
            output_path);
    return 2;
  }
  if (!force && g_file_test(output_path, G_FILE_TEST_EXISTS)) {
    fprintf(stderr,
            "weir new: %s exists (its history would be lost); use --force "
            "to replace it\n",
            output_path);
    return 1;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = cli_parse_defines(defines, &error);
  if (!bindings) {
    cli_print_error("new", error);
    return 2;
  }
  WeirOnnxImportOptions opts = {.symbols = bindings};
  g_autoptr(WeirGraph) g = cli_load_program("new", argv[1], &opts, NULL);
  if (!g)
    return 1;
  g_autoptr(WeirSession) s = weir_session_new(g, argv[1], bindings, &error);
  if (!s) {
    fprintf(stderr, "weir new: %s: %s\n", argv[1], error->message);
    return 1;
  }
  if (!cli_save_workspace("new", s, output_path))
    return 1;
  cli_print_workspace_summary(output_path, s);
  return 0;
}

/* ------------------------------------------------------ undo, redo, goto */

static int move_cursor(const char *cmd, const char *path,
                       gboolean (*move)(WeirSession *, GError **),
                       const char *target) {
  g_autoptr(WeirSession) s = cli_open_workspace(cmd, path);
  if (!s)
    return 1;
  g_autoptr(GError) error = NULL;
  gboolean ok;
  if (move) {
    ok = move(s, &error);
  } else {
    guint64 k;
    guint step;
    if (g_ascii_string_to_unsigned(target, 10, 0, G_MAXUINT, &k, NULL))
      step = (guint)k;
    else if (!weir_session_find_bookmark(s, target, &step)) {
      fprintf(stderr, "weir goto: no step or bookmark '%s' in %s\n", target,
              path);
      return 1;
    }
    ok = weir_session_goto(s, step, &error);
  }
  if (!ok) {
    fprintf(stderr, "weir %s: %s: %s\n", cmd, path, error->message);
    return 1;
  }
  if (!cli_save_workspace(cmd, s, path))
    return 1;
  cli_print_workspace_summary(path, s);
  return 0;
}

/* weir undo|redo WS.weir */
static int step_once(const char *cmd, int argc, char **argv,
                     gboolean (*move)(WeirSession *, GError **)) {
  g_auto(GStrv) defines = NULL;
  const GOptionEntry entries[] = {CLI_DEFINE_ENTRY(&defines), {NULL}};
  if (!cli_parse_options(cmd, "WS.weir", entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir %s WS.weir\n", cmd);
    return 2;
  }
  return move_cursor(cmd, argv[1], move, NULL);
}

int cli_cmd_undo(int argc, char **argv) {
  return step_once("undo", argc, argv, weir_session_undo);
}

int cli_cmd_redo(int argc, char **argv) {
  return step_once("redo", argc, argv, weir_session_redo);
}

int cli_cmd_goto(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  const GOptionEntry entries[] = {CLI_DEFINE_ENTRY(&defines), {NULL}};
  if (!cli_parse_options("goto", "WS.weir K|BOOKMARK", entries, &argc, &argv))
    return 2;
  if (argc != 3) {
    fprintf(stderr, "usage: weir goto WS.weir K|BOOKMARK\n");
    return 2;
  }
  return move_cursor("goto", argv[1], NULL, argv[2]);
}

/* ---------------------------------------------------------------- history */

int cli_cmd_history(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  g_autofree char *export_path = NULL;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"export-recipe", 0, 0, G_OPTION_ARG_FILENAME, &export_path,
       "Write steps 1..current as a recipe", "FILE"},
      {NULL}};
  if (!cli_parse_options("history", "WS.weir", entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir history WS.weir [--export-recipe R.json]\n");
    return 2;
  }
  g_autoptr(WeirSession) s = cli_open_workspace("history", argv[1]);
  if (!s)
    return 1;
  guint cursor = weir_session_cursor(s);
  CliTable *t = cli_table_new(7);
  cli_table_row(t, g_strdup(""), g_strdup("step"), g_strdup("transformation"),
                g_strdup("site"), g_strdup("parameters"),
                g_strdup("logical volume"), g_strdup("bookmark"));
  cli_table_row(t, g_strdup(cursor == 0 ? ">" : ""), g_strdup("0"),
                g_strdup("(original)"),
                g_strdup(weir_session_source(s) ? weir_session_source(s) : ""),
                g_strdup(""), g_strdup(""),
                g_strdup(weir_session_original_bookmark(s)
                             ? weir_session_original_bookmark(s)
                             : ""));
  for (guint k = 1; k <= weir_session_n_steps(s); k++) {
    const WeirStep *st = weir_session_step(s, k);
    cli_table_row(t, g_strdup(k == cursor ? ">" : ""), g_strdup_printf("%u", k),
                  g_strdup(st->transform), g_strdup(st->site_text),
                  g_strdup(st->params),
                  cli_format_change(&st->bytes_before, &st->bytes_after, TRUE),
                  g_strdup(st->bookmark ? st->bookmark : ""));
  }
  cli_table_print(t);
  guint n = weir_session_n_steps(s);
  if (cursor + 1 == n)
    printf("(step %u can be redone)\n", n);
  else if (cursor < n)
    printf("(steps %u..%u can be redone)\n", cursor + 1, n);
  if (export_path) {
    cli_load_transformations("history");
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirRecipe) r = weir_session_export_recipe(s, &error);
    if (!r || !weir_recipe_save(r, export_path, &error)) {
      cli_print_error("history", error);
      return 1;
    }
    printf("exported steps 1..%u to %s\n", cursor, export_path);
  }
  return 0;
}

/* --------------------------------------------------------------- bookmark */

int cli_cmd_bookmark(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  gint bookmark_step = -1;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"step", 0, 0, G_OPTION_ARG_INT, &bookmark_step,
       "Bookmark step K instead of the current one (0: the model)", "K"},
      {NULL}};
  if (!cli_parse_options("bookmark", "WS.weir NAME", entries, &argc, &argv))
    return 2;
  if (argc != 3) {
    fprintf(stderr, "usage: weir bookmark WS.weir NAME [--step K]\n");
    return 2;
  }
  g_autoptr(WeirSession) s = cli_open_workspace("bookmark", argv[1]);
  if (!s)
    return 1;
  guint step =
      bookmark_step >= 0 ? (guint)bookmark_step : weir_session_cursor(s);
  g_autoptr(GError) error = NULL;
  if (!weir_session_bookmark(s, step, argv[2], &error)) {
    fprintf(stderr, "weir bookmark: %s: %s\n", argv[1], error->message);
    return 1;
  }
  if (!cli_save_workspace("bookmark", s, argv[1]))
    return 1;
  printf("bookmark '%s' on step %u\n", argv[2], step);
  cli_print_workspace_summary(argv[1], s);
  return 0;
}
