/* weir.c — the `weir` command-line program.
 *
 * A thin client of libweir: every subcommand parses its options, calls the
 * library and prints the result.  Errors from the library arrive as GErrors
 * and are printed here, once, with a non-zero exit status.
 *
 *   weir import MODEL.onnx -o OUT.json [-D SYM=VALUE]...
 *                                           ONNX model -> Weir program
 *   weir info FILE [-D SYM=VALUE]...        data-movement summary
 *   weir validate FILE                      validate, report every problem
 *   weir expand FILE [--op TYPE] -o OUT.json
 *                                           expand library nodes
 *   weir run-ref FILE [--input NAME=FILE]... [--expect NAME=FILE]...
 *                [--output NAME=FILE]... [-D SYM=VALUE]... [--seed N]
 *                                           run the reference interpreter
 *   weir conformance [--expected-unsupported FILE]
 *                    [--backend interp|compiled] DIR...
 *                                           run ONNX node tests
 *   weir ops                                the operators Weir knows
 *   weir transforms FILE [--tier N] [--node NAME]
 *                                           transformations that apply,
 *                                           their sites, legal or why not
 *   weir apply FILE NAME [--site N[,N...]] [--param K=V]... -o OUT.json
 *                                           apply one transformation and
 *                                           print the data-movement change
 *   weir codegen FILE [-o DIR]              write <prefix>.c and <prefix>.h
 *   weir run FILE [--input NAME=FILE]... [--expect NAME=FILE]...
 *            [--output NAME=FILE]... [--check] [-D SYM=VALUE]... [--seed N]
 *            [--cc CC] [--cflags FLAGS]     compile (through the compile
 *                                           cache) and run; --check also
 *                                           runs the interpreter and compares
 *   weir bench FILE [-D ...] [--threads N] [--reps N] [--warmup N]
 *                                           cold and cached compile time,
 *                                           run time, GFLOP/s and GB/s
 *   weir cache stats|clear                  the compile cache
 *   weir train MODEL.onnx --data FILE [--label COL] [--epochs N] [--batch B]
 *              [--optimizer sgd|momentum|adam] [--lr LR] [--seed S]
 *              [--threads T] [--steps-per-call K] [--val-fraction F]
 *              [--scale S] [--standardize] [--recipe R.json]
 *              [--loss mse [--target-columns COLS | --targets N |
 *               --target-file FILE]] [--params RE] [--freeze RE]
 *              -o TRAINED.onnx
 *                                           compiled training with progress,
 *                                           held-out accuracy per epoch and
 *                                           the trained model written back
 *   weir train-graph MODEL --loss L [--target NAME] [--output NAME]
 *            --optimizer O [--lr X] [--momentum X] [--weight-decay X]
 *            [--steps K] [--params REGEX] [--freeze REGEX]
 *            -o TRAIN.json|TRAIN.weir
 *                                           derive the training program
 *
 * Workspaces (*.weir: a model and its history; docs/sessions.md):
 *   weir new MODEL -o WS.weir [--force]     start a workspace (alias: open)
 *   weir apply WS.weir NAME [--site SITE] [--param K=V]...
 *                                           a new step in the history
 *   weir undo WS.weir | weir redo WS.weir | weir goto WS.weir K|BOOKMARK
 *   weir history WS.weir [--export-recipe R.json]
 *   weir bookmark WS.weir NAME [--step K]
 *   weir optimize MODEL --recipe R.json [-o OUT.weir|OUT.json] [--report]
 * Every command that changes a workspace saves it and prints the
 * data-movement summary of its current program.
 *
 * FILE is a Weir program (.json), an ONNX model (.onnx), imported on the
 * fly, or a workspace (.weir): its current program.  Random inputs are the
 * same in run-ref, run and bench for the same seed (each argument container
 * is filled with seed + its id).
 * `transforms`, `apply` and `optimize` also load the plugins found on
 * WEIR_PLUGIN_PATH and in $XDG_DATA_HOME/weir/plugins; refused plugins are
 * reported as warnings.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "weir.h"

typedef int (*CommandFunc)(int argc, char **argv);

typedef struct {
  const char *name;
  const char *args;
  const char *summary;
  CommandFunc run;
} Command;

static int cmd_import(int argc, char **argv);
static int cmd_info(int argc, char **argv);
static int cmd_validate(int argc, char **argv);
static int cmd_expand(int argc, char **argv);
static int cmd_run_ref(int argc, char **argv);
static int cmd_conformance(int argc, char **argv);
static int cmd_ops(int argc, char **argv);
static int cmd_transforms(int argc, char **argv);
static int cmd_apply(int argc, char **argv);
static int cmd_codegen(int argc, char **argv);
static int cmd_run(int argc, char **argv);
static int cmd_bench(int argc, char **argv);
static int cmd_cache(int argc, char **argv);
static int cmd_new(int argc, char **argv);
static int cmd_undo(int argc, char **argv);
static int cmd_redo(int argc, char **argv);
static int cmd_goto(int argc, char **argv);
static int cmd_history(int argc, char **argv);
static int cmd_bookmark(int argc, char **argv);
static int cmd_optimize(int argc, char **argv);
static int cmd_export(int argc, char **argv);

static int cmd_train(int argc, char **argv);
static int cmd_train_graph(int argc, char **argv);

static const Command commands[] = {
    {"import", "MODEL.onnx -o OUT.json [-D SYM=VALUE]...",
     "import an ONNX model as a Weir program", cmd_import},
    {"info", "FILE [--count MODE] [-D SYM=VALUE]...",
     "print containers, data movement, FLOPs and peak memory", cmd_info},
    {"validate", "FILE", "check a program and report every problem",
     cmd_validate},
    {"expand", "FILE [--op TYPE] -o OUT.json",
     "expand library nodes into maps and tasklets", cmd_expand},
    {"run-ref", "FILE [--input N=F]... [--expect N=F]...",
     "run the reference interpreter, compare outputs", cmd_run_ref},
    {"conformance",
     "[--expected-unsupported FILE] [--backend interp|compiled] DIR...",
     "run ONNX backend node tests through Weir", cmd_conformance},
    {"ops", "", "list the operators Weir knows, with their attributes",
     cmd_ops},
    {"transforms", "FILE [--tier N] [--node NAME]",
     "list applicable transformations and their sites", cmd_transforms},
    {"apply", "FILE NAME [--site N,..] [-p K=V].. -o OUT",
     "apply a transformation and report the data-movement change", cmd_apply},
    {"codegen", "FILE [-o DIR]", "write the generated C source and header",
     cmd_codegen},
    {"run", "FILE [--input N=F]... [--check]",
     "compile and run; compare outputs or with the interpreter", cmd_run},
    {"bench", "FILE [-D ...] [--threads N] [--reps N]",
     "time compiling and running a program", cmd_bench},
    {"cache", "stats|clear", "show or empty the compile cache", cmd_cache},
    {"new", "MODEL -o WS.weir [-D SYM=VALUE]...",
     "start a workspace from a model (alias: open)", cmd_new},
    {"open", "MODEL -o WS.weir", "same as new", cmd_new},
    {"apply", "WS.weir NAME [--site SITE] [-p K=V]..",
     "apply in a workspace: a new history step", cmd_apply},
    {"undo", "WS.weir", "go back one step", cmd_undo},
    {"redo", "WS.weir", "go forward one step", cmd_redo},
    {"goto", "WS.weir K|BOOKMARK", "make step K (0: the model) current",
     cmd_goto},
    {"history", "WS.weir [--export-recipe R.json]",
     "list the steps; export them as a recipe", cmd_history},
    {"bookmark", "WS.weir NAME [--step K]", "name the current step (or K)",
     cmd_bookmark},
    {"optimize", "MODEL --recipe R.json [-o OUT] [--report]",
     "apply a recipe to a model", cmd_optimize},
    {"export", "WS.weir|FILE -o DIR [--input N=F]...",
     "write a standalone kernel: C, Makefile, harness, README", cmd_export},

    {"train", "MODEL.onnx --data FILE -o OUT.onnx [...]",
     "train a model on a data set with compiled training", cmd_train},
    {"train-graph", "MODEL --loss L --optimizer O [...] -o OUT",
     "derive the training program (forward, loss, backward, update)",
     cmd_train_graph},
};

static void print_error(const char *prefix, const GError *error) {
  fprintf(stderr, "weir %s: %s\n", prefix, error->message);
}

/* ------------------------------------------------------------ formatting */

/* "512 B", "8.0 KiB", "1.1 MiB" (IEC units, plain ASCII spaces). */
static char *format_bytes(gint64 b) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (b < 1024)
    return g_strdup_printf("%" G_GINT64_FORMAT " B", b);
  double v = (double)b / 1024.0;
  guint u = 0;
  while (v >= 1024.0 && u + 1 < G_N_ELEMENTS(units)) {
    v /= 1024.0;
    u++;
  }
  return g_strdup_printf("%.1f %s", v, units[u]);
}

/* A quantity as text: the number when known (bytes formatted as sizes),
 * else the symbolic expression. */
static char *format_quantity(const WeirQuantity *q, gboolean bytes) {
  if (q->known)
    return bytes ? format_bytes(q->value)
                 : g_strdup_printf("%" G_GINT64_FORMAT, q->value);
  if (q->expr) {
    g_autofree char *e = weir_expr_to_string(q->expr);
    return bytes ? g_strdup_printf("%s B", e) : g_steal_pointer(&e);
  }
  return g_strdup("?");
}

static char *shape_text(const WeirContainer *c) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < c->shape->len; d++) {
    g_autofree char *e = weir_expr_to_string(g_ptr_array_index(c->shape, d));
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* A simple left-aligned text table. */
typedef struct {
  guint ncols;
  GPtrArray *cells; /* char*, row-major */
} Table;

static Table *table_new(guint ncols) {
  Table *t = g_new0(Table, 1);
  t->ncols = ncols;
  t->cells = g_ptr_array_new_with_free_func(g_free);
  return t;
}

/* Adds one row of ncols cells (transfer full). */
static void table_row(Table *t, ...) {
  va_list ap;
  va_start(ap, t);
  for (guint i = 0; i < t->ncols; i++)
    g_ptr_array_add(t->cells, va_arg(ap, char *));
  va_end(ap);
}

static void table_print(Table *t) {
  g_autofree guint *width = g_new0(guint, t->ncols);
  for (guint i = 0; i < t->cells->len; i++) {
    guint w = (guint)g_utf8_strlen(g_ptr_array_index(t->cells, i), -1);
    width[i % t->ncols] = MAX(width[i % t->ncols], w);
  }
  for (guint i = 0; i < t->cells->len; i++) {
    const char *cell = g_ptr_array_index(t->cells, i);
    guint col = i % t->ncols;
    if (col == 0)
      printf("  ");
    if (col + 1 == t->ncols)
      printf("%s\n", cell);
    else
      printf("%s%*s  ", cell,
             (int)(width[col] - (guint)g_utf8_strlen(cell, -1)), "");
  }
  g_ptr_array_unref(t->cells);
  g_free(t);
}

/* ---------------------------------------------------------------- options */

static char **defines;
static gint64 seed = 1;
static char *output_path;
static char *op_type;
static gboolean any_opset;
static char **input_specs;
static char **expect_specs;
static char **output_specs;
static double opt_rtol = -1, opt_atol = -1;
static char *expected_path;
static char *backend;

static const GOptionEntry define_entries[] = {
    {"define", 'D', 0, G_OPTION_ARG_STRING_ARRAY, &defines,
     "Bind a symbol to a value", "SYM=VALUE"},
    {NULL}};

static const GOptionEntry import_entries[] = {
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
     "Write the program to FILE (JSON)", "FILE"},
    {"any-opset", 0, 0, G_OPTION_ARG_NONE, &any_opset,
     "Import opsets outside 11..17 with a warning", NULL},
    {NULL}};

static const GOptionEntry expand_entries[] = {
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
     "Write the expanded program to FILE (JSON)", "FILE"},
    {"op", 0, 0, G_OPTION_ARG_STRING, &op_type,
     "Expand only library nodes of this operator", "TYPE"},
    {NULL}};

static gint opt_run_reps;

static char *info_count = NULL;

static const GOptionEntry info_entries[] = {
    {"count", 0, 0, G_OPTION_ARG_STRING, &info_count,
     "Count the program as it is (as-is, the default), as the code "
     "generator compiles it (compiled: library nodes with a native "
     "implementation kept, the others expanded), or with every library "
     "node expanded into maps (expanded)",
     "as-is|compiled|expanded"},
    {NULL}};

static const GOptionEntry run_entries[] = {
    {"seed", 0, 0, G_OPTION_ARG_INT64, &seed,
     "Seed of the random inputs (default 1)", "N"},
    {"input", 0, 0, G_OPTION_ARG_STRING_ARRAY, &input_specs,
     "Read an argument from a tensor file (.pb or .npy)", "NAME=FILE"},
    {"expect", 0, 0, G_OPTION_ARG_STRING_ARRAY, &expect_specs,
     "Compare an argument after the run with a tensor file", "NAME=FILE"},
    {"output", 0, 0, G_OPTION_ARG_STRING_ARRAY, &output_specs,
     "Write an argument after the run to a tensor file", "NAME=FILE"},
    {"rtol", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rtol,
     "Relative tolerance of --expect (default 1e-4; integers exact)", "R"},
    {"atol", 0, 0, G_OPTION_ARG_DOUBLE, &opt_atol,
     "Absolute tolerance of --expect (default 1e-5)", "A"},
    {"reps", 0, 0, G_OPTION_ARG_INT, &opt_run_reps,
     "After the checked run, time N more runs (median in the summary)", "N"},
    {NULL}};

static const GOptionEntry conformance_entries[] = {
    {"expected-unsupported", 0, 0, G_OPTION_ARG_FILENAME, &expected_path,
     "Tests expected not to pass, with reasons", "FILE"},
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
    {NULL}};

static GHashTable *parse_defines(GError **error) {
  GHashTable *b = weir_bindings_new();
  for (guint i = 0; defines && defines[i]; i++) {
    const char *eq = strchr(defines[i], '=');
    char *end = NULL;
    gint64 v = 0;
    if (eq)
      v = g_ascii_strtoll(eq + 1, &end, 10);
    if (!eq || eq == defines[i] || !end || end == eq + 1 || *end) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "-D %s: expected SYM=INTEGER", defines[i]);
      g_hash_table_unref(b);
      return NULL;
    }
    g_autofree char *name = g_strndup(defines[i], (gsize)(eq - defines[i]));
    weir_bindings_set(b, name, v);
  }
  return b;
}

/* Parses options; leaves the positional arguments in argv.  Returns FALSE
 * (after printing) on bad usage. */
static gboolean parse_options_with(const char *cmd, const char *usage,
                                   const GOptionEntry *const *extras, int *argc,
                                   char ***argv) {
  g_autofree char *param = g_strdup_printf("%s %s", cmd, usage);
  g_autoptr(GOptionContext) ctx = g_option_context_new(param);
  g_option_context_add_main_entries(ctx, define_entries, NULL);
  for (guint i = 0; extras && extras[i]; i++)
    g_option_context_add_main_entries(ctx, extras[i], NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, argc, argv, &error)) {
    fprintf(stderr, "weir %s: %s\n", cmd, error->message);
    return FALSE;
  }
  return TRUE;
}

static gboolean parse_options(const char *cmd, const char *usage,
                              const GOptionEntry *extra, int *argc,
                              char ***argv) {
  const GOptionEntry *const extras[] = {extra, NULL};
  return parse_options_with(cmd, usage, extras, argc, argv);
}

static void print_warnings(const char *cmd, GPtrArray *warnings) {
  for (guint i = 0; i < warnings->len; i++)
    fprintf(stderr, "weir %s: warning: %s\n", cmd,
            (const char *)g_ptr_array_index(warnings, i));
}

static gboolean is_workspace_path(const char *path) {
  return g_str_has_suffix(path, ".weir");
}

static WeirSession *open_workspace(const char *cmd, const char *path) {
  g_autoptr(GError) error = NULL;
  if (!is_workspace_path(path)) {
    fprintf(stderr,
            "weir %s: %s is not a workspace (.weir); start one with 'weir "
            "new %s -o NAME.weir'\n",
            cmd, path, path);
    return NULL;
  }
  WeirSession *s = weir_workspace_open(path, &error);
  if (!s)
    print_error(cmd, error);
  return s;
}

/* --impl OP=NAME (run, bench, codegen): the implementation of every library
 * node of OP (the node attribute "impl", see core/weir-native.h). */
static char **impl_specs;

static gboolean apply_impls(const char *cmd, WeirGraph *g) {
  for (guint i = 0; impl_specs && impl_specs[i]; i++) {
    const char *eq = strchr(impl_specs[i], '=');
    if (!eq || eq == impl_specs[i] || !eq[1]) {
      fprintf(stderr, "weir %s: --impl %s: expected OP=IMPL\n", cmd,
              impl_specs[i]);
      return FALSE;
    }
    g_autofree char *op = g_strndup(impl_specs[i], eq - impl_specs[i]);
    g_autoptr(GError) error = NULL;
    if (!weir_native_set_impl(g, op, eq + 1, NULL, &error)) {
      fprintf(stderr, "weir %s: --impl %s: %s\n", cmd, impl_specs[i],
              error->message);
      return FALSE;
    }
  }
  return TRUE;
}

/* Loads a program: JSON, an ONNX model imported with opts (may be NULL), or
 * the current program of a workspace, and applies the --impl choices.
 * Reports errors and warnings. */
static WeirGraph *load_program_with(const char *cmd, const char *path,
                                    WeirOnnxImportOptions *opts) {
  g_autoptr(GError) error = NULL;
  WeirGraph *g;
  if (is_workspace_path(path)) {
    g_autoptr(WeirSession) s = open_workspace(cmd, path);
    if (!s)
      return NULL; /* open_workspace reported it */
    g = weir_graph_copy(weir_session_current(s));
  } else if (weir_onnx_is_model_path(path)) {
    WeirOnnxImportOptions local = {0};
    if (!opts)
      opts = &local;
    g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
    opts->warnings = warnings;
    opts->allow_any_opset = opts->allow_any_opset || any_opset;
    g = weir_onnx_import(path, opts, &error);
    opts->warnings = NULL;
    print_warnings(cmd, warnings);
  } else {
    g = weir_graph_load(path, &error);
  }
  if (!g) {
    print_error(cmd, error);
    return NULL;
  }
  if (!apply_impls(cmd, g)) {
    weir_graph_free(g);
    return NULL;
  }
  return g;
}

static WeirGraph *load_program(const char *cmd, const char *path) {
  return load_program_with(cmd, path, NULL);
}

static guint count_library_nodes(const WeirGraph *g) {
  guint n = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++)
      n += ((const WeirNode *)g_ptr_array_index(s->nodes, k))->kind ==
           WEIR_NODE_LIBRARY;
  }
  return n;
}

/* ----------------------------------------------------------------- import */

static int cmd_import(int argc, char **argv) {
  if (!parse_options("import", "MODEL.onnx -o OUT.json", import_entries, &argc,
                     &argv))
    return 2;
  if (argc != 2 || !output_path) {
    fprintf(stderr,
            "usage: weir import MODEL.onnx -o OUT.json [-D SYM=VALUE]...\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = parse_defines(&error);
  if (!bindings) {
    print_error("import", error);
    return 2;
  }
  WeirOnnxImportOptions opts = {.symbols = bindings};
  g_autoptr(WeirGraph) g = NULL;
  if (weir_onnx_is_model_path(argv[1]))
    g = load_program_with("import", argv[1], &opts);
  else
    fprintf(stderr, "weir import: %s: not an ONNX model (.onnx)\n", argv[1]);
  if (!g)
    return 1;
  if (!weir_graph_save(g, output_path, &error)) {
    print_error("import", error);
    return 1;
  }
  GString *syms = g_string_new(NULL);
  for (guint i = 0; i < g->symbols->len; i++)
    g_string_append_printf(syms, "%s%s", i ? ", " : "",
                           (const char *)g_ptr_array_index(g->symbols, i));
  printf("%s -> %s: %u library nodes, %u containers, symbols: %s\n", argv[1],
         output_path, count_library_nodes(g), g->containers->len,
         syms->len ? syms->str : "(none)");
  g_string_free(syms, TRUE);
  return 0;
}

/* ------------------------------------------------------------------- info */

static int compare_memlet_bytes(gconstpointer a, gconstpointer b) {
  const WeirMemletCost *x = *(const WeirMemletCost *const *)a;
  const WeirMemletCost *y = *(const WeirMemletCost *const *)b;
  gint64 vx = x->bytes.known ? x->bytes.value : -1;
  gint64 vy = y->bytes.known ? y->bytes.value : -1;
  if (vx != vy)
    return vx > vy ? -1 : 1;
  return x->edge < y->edge ? -1 : x->edge > y->edge;
}

static int cmd_info(int argc, char **argv) {
  if (!parse_options("info", "FILE", info_entries, &argc, &argv))
    return 2;
  const char *count = info_count ? info_count : "as-is";
  if (argc != 2 ||
      (strcmp(count, "as-is") != 0 && strcmp(count, "compiled") != 0 &&
       strcmp(count, "expanded") != 0)) {
    fprintf(stderr, "usage: weir info FILE [--count as-is|compiled|expanded] "
                    "[-D SYM=VALUE]...\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = parse_defines(&error);
  if (!bindings) {
    print_error("info", error);
    return 2;
  }
  g_autoptr(WeirGraph) g = load_program("info", argv[1]);
  if (!g)
    return 1;
  if ((strcmp(count, "compiled") == 0 && !weir_native_expand_rest(g, &error)) ||
      (strcmp(count, "expanded") == 0 &&
       !weir_expand_all(g, NULL, NULL, &error))) {
    fprintf(stderr, "weir info: %s: --count %s: %s\n", argv[1], count,
            error->message);
    return 1;
  }
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, bindings, &error);
  if (!a) {
    print_error("info", error);
    return 1;
  }

  printf("program   %s  (%s)\n", g->name, argv[1]);
  if (strcmp(count, "as-is") != 0)
    printf("counted   %s\n", strcmp(count, "compiled") == 0
                                 ? "as compiled (native library nodes "
                                   "kept, the rest expanded)"
                                 : "with every library node expanded");
  GString *syms = g_string_new(NULL);
  for (guint i = 0; i < g->symbols->len; i++) {
    const char *s = g_ptr_array_index(g->symbols, i);
    gint64 *v = g_hash_table_lookup(bindings, s);
    g_string_append_printf(syms, "%s%s", i ? ", " : "", s);
    if (v)
      g_string_append_printf(syms, "=%" G_GINT64_FORMAT, *v);
  }
  printf("symbols   %s\n", syms->len ? syms->str : "(none)");
  g_string_free(syms, TRUE);
  printf("states    %u   transitions %u\n", g->states->len,
         g->transitions->len);
  printf("nodes    ");
  for (guint k = 0; k < WEIR_NODE_KIND_COUNT; k++)
    printf(" %s %u", weir_node_kind_name((WeirNodeKind)k), a->node_counts[k]);
  printf("\n\nContainers\n");
  Table *t = table_new(5);
  table_row(t, g_strdup("name"), g_strdup("dtype"), g_strdup("shape"),
            g_strdup("kind"), g_strdup("size"));
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    g_autoptr(WeirExpr) bytes = weir_container_bytes(c);
    gint64 v;
    char *size;
    if (weir_expr_eval(bytes, bindings, &v, NULL))
      size = format_bytes(v);
    else {
      g_autofree char *e = weir_expr_to_string(bytes);
      size = g_strdup_printf("%s B", e);
    }
    const char *kind = c->initial     ? "constant"
                       : c->transient ? "transient"
                                      : "argument";
    table_row(t, g_strdup(c->name), g_strdup(weir_dtype_name(c->dtype)),
              shape_text(c),
              c->initializer
                  ? g_strdup_printf("%s (initializer %s)", kind, c->initializer)
                  : g_strdup(kind),
              size);
  }
  table_print(t);

  printf("\nData movement and FLOPs per state (each state counted once)\n");
  t = table_new(4);
  table_row(t, g_strdup("state"), g_strdup("bytes moved"), g_strdup("FLOPs"),
            g_strdup("FLOP/byte"));
  for (guint i = 0; i < a->states->len; i++) {
    const WeirStateCost *sc = g_ptr_array_index(a->states, i);
    const WeirState *s = weir_graph_state(g, sc->state);
    char *oi = (sc->bytes.known && sc->flops.known && sc->bytes.value > 0)
                   ? g_strdup_printf("%.3f", (double)sc->flops.value /
                                                 (double)sc->bytes.value)
                   : g_strdup("-");
    table_row(t, g_strdup_printf("%u %s", s->id, s->label),
              format_quantity(&sc->bytes, TRUE),
              format_quantity(&sc->flops, FALSE), oi);
  }
  table_row(t, g_strdup("total"), format_quantity(&a->total_bytes, TRUE),
            format_quantity(&a->total_flops, FALSE),
            a->intensity_known ? g_strdup_printf("%.3f", a->intensity)
                               : g_strdup("-"));
  table_print(t);

  g_autofree char *peak = format_quantity(&a->peak_transient_bytes, TRUE);
  printf("\nPeak transient memory  %s", peak);
  if (a->peak_live && a->peak_live->len) {
    printf("  (");
    for (guint i = 0; i < a->peak_live->len; i++)
      printf("%s%s", i ? ", " : "", (char *)g_ptr_array_index(a->peak_live, i));
    printf(")");
  }
  printf("\n\nTop memlets by bytes moved\n");
  g_autoptr(GPtrArray) sorted = g_ptr_array_new();
  for (guint i = 0; i < a->memlets->len; i++) {
    WeirMemletCost *mc = g_ptr_array_index(a->memlets, i);
    const WeirState *s = weir_graph_state(g, mc->state);
    const WeirMemlet *m = weir_state_memlet(s, mc->edge);
    if (m && m->data)
      g_ptr_array_add(sorted, mc);
  }
  g_ptr_array_sort(sorted, compare_memlet_bytes);
  t = table_new(6);
  table_row(t, g_strdup("memlet"), g_strdup("state"), g_strdup("data"),
            g_strdup("subset"), g_strdup("volume x runs"), g_strdup("bytes"));
  for (guint i = 0; i < sorted->len && i < 10; i++) {
    const WeirMemletCost *mc = g_ptr_array_index(sorted, i);
    const WeirState *s = weir_graph_state(g, mc->state);
    const WeirMemlet *m = weir_state_memlet(s, mc->edge);
    g_autofree char *vol = weir_expr_to_string(m->volume);
    g_autofree char *runs = format_quantity(&mc->executions, FALSE);
    table_row(t,
              g_strdup_printf("%u (%u -> %u)%s", m->id, m->src, m->dst,
                              m->wcr ? " wcr" : ""),
              g_strdup(s->label), g_strdup(m->data),
              weir_subset_to_string(m->subset),
              g_strdup_printf("%s x %s", vol, runs),
              format_quantity(&mc->bytes, TRUE));
  }
  table_print(t);
  return 0;
}

/* --------------------------------------------------------------- validate */

static int cmd_validate(int argc, char **argv) {
  if (!parse_options("validate", "FILE", NULL, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir validate FILE\n");
    return 2;
  }
  g_autoptr(WeirGraph) g = load_program("validate", argv[1]);
  if (!g)
    return 1;
  guint nodes = 0, edges = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    nodes += s->nodes->len;
    edges += s->edges->len;
  }
  printf("%s: valid (%u containers, %u states, %u nodes, %u memlets)\n",
         argv[1], g->containers->len, g->states->len, nodes, edges);
  return 0;
}

/* ----------------------------------------------------------------- expand */

static int cmd_expand(int argc, char **argv) {
  if (!parse_options("expand", "FILE -o OUT.json", expand_entries, &argc,
                     &argv))
    return 2;
  if (argc != 2 || !output_path) {
    fprintf(stderr, "usage: weir expand FILE [--op TYPE] -o OUT.json\n");
    return 2;
  }
  g_autoptr(WeirGraph) g = load_program("expand", argv[1]);
  if (!g)
    return 1;
  g_autoptr(GError) error = NULL;
  guint count = 0;
  if (!weir_expand_all(g, op_type, &count, &error)) {
    fprintf(stderr, "weir expand: %s: %s\n", argv[1], error->message);
    return 1;
  }
  if (!weir_graph_save(g, output_path, &error)) {
    print_error("expand", error);
    return 1;
  }
  printf("%s -> %s: expanded %u library node%s%s%s (%u left)\n", argv[1],
         output_path, count, count == 1 ? "" : "s", op_type ? " of " : "",
         op_type ? op_type : "", count_library_nodes(g));
  return 0;
}

/* ------------------------------------------------ running: shared helpers */

/* Splits "NAME=FILE". */
static gboolean split_spec(const char *cmd, const char *option,
                           const char *spec, char **name, char **file) {
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec || !eq[1]) {
    fprintf(stderr, "weir %s: --%s %s: expected NAME=FILE\n", cmd, option,
            spec);
    return FALSE;
  }
  *name = g_strndup(spec, (gsize)(eq - spec));
  *file = g_strdup(eq + 1);
  return TRUE;
}

/* The argument container called name: by container name, by the ONNX name
 * the importer recorded, or by the label of one of its access nodes. */
static const WeirContainer *find_argument(const WeirGraph *g, GHashTable *names,
                                          const char *name) {
  const WeirContainer *c = weir_graph_container(g, name);
  if (!c && names && g_hash_table_lookup(names, name))
    c = weir_graph_container(g, g_hash_table_lookup(names, name));
  for (guint i = 0; !c && i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; !c && k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->label, name) == 0)
        c = weir_graph_container(g, n->data);
    }
  }
  return c && !c->transient ? c : NULL;
}

static char *argument_list(const WeirGraph *g) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (!c->transient)
      g_string_append_printf(s, "%s%s", s->len ? ", " : "", c->name);
  }
  return g_string_free(s, FALSE);
}

static const WeirContainer *
require_argument(const char *cmd, const WeirGraph *g, GHashTable *names,
                 const char *option, const char *name) {
  const WeirContainer *c = find_argument(g, names, name);
  if (!c) {
    g_autofree char *list = argument_list(g);
    fprintf(stderr,
            "weir %s: --%s %s: no argument of that name (arguments: "
            "%s)\n",
            cmd, option, name, list);
  }
  return c;
}

/* A tensor file per --input, keyed by the name given. */
typedef struct {
  char *name;
  char *file;
  WeirTensor *tensor;
} TensorSpec;

static void tensor_spec_free(gpointer p) {
  TensorSpec *t = p;
  g_free(t->name);
  g_free(t->file);
  weir_tensor_free(t->tensor);
  g_free(t);
}

/* Binds the symbols that are whole dimensions of c from the shape of t. */
static void bind_from_tensor(const WeirContainer *c, const WeirTensor *t,
                             GHashTable *bindings) {
  for (guint d = 0; d < c->shape->len && d < t->rank; d++) {
    WeirExpr *e = g_ptr_array_index(c->shape, d);
    if (weir_expr_kind(e) == WEIR_EXPR_SYMBOL &&
        !g_hash_table_contains(bindings, weir_expr_symbol_name(e)))
      weir_bindings_set(bindings, weir_expr_symbol_name(e), t->shape[d]);
  }
}

static char *tensor_shape_text(const WeirTensor *t) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < t->rank; d++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? ", " : "",
                           t->shape[d]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* A program loaded for a run with its arguments. */
typedef struct {
  WeirGraph *g;
  GHashTable *names; /* ONNX name -> container name */
  GHashTable *args;  /* container name (borrowed from g) -> WeirTensor* */
  guint expanded;    /* library nodes expanded */
} Prepared;

static void prepared_clear(Prepared *p) {
  g_clear_pointer(&p->args, g_hash_table_unref);
  g_clear_pointer(&p->names, g_hash_table_unref);
  g_clear_pointer(&p->g, weir_graph_free);
}

/* Loads file (an ONNX model is imported with the shapes of the --input
 * tensors), expands its library nodes when expand is set, binds the --input
 * tensors (symbols that are whole dimensions are bound from their shapes)
 * and fills the other arguments with random values: every non-transient
 * container, or with abi_only only the arguments of compiled code (not the
 * constants).  Returns 0, or the exit status after printing the problem. */
static int prepare_run(const char *cmd, const char *file, GHashTable *bindings,
                       gboolean expand, gboolean abi_only, Prepared *p) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) ins = g_ptr_array_new_with_free_func(tensor_spec_free);
  for (guint i = 0; input_specs && input_specs[i]; i++) {
    TensorSpec *t = g_new0(TensorSpec, 1);
    g_ptr_array_add(ins, t);
    if (!split_spec(cmd, "input", input_specs[i], &t->name, &t->file))
      return 2;
    t->tensor = weir_tensor_load(t->file, NULL, &error);
    if (!t->tensor) {
      print_error(cmd, error);
      return 1;
    }
  }

  p->names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  for (guint i = 0; i < ins->len; i++) {
    TensorSpec *t = g_ptr_array_index(ins, i);
    GArray *shape = g_array_new(FALSE, FALSE, sizeof(gint64));
    g_array_append_vals(shape, t->tensor->shape, t->tensor->rank);
    g_hash_table_replace(shapes, t->name, shape);
  }
  WeirOnnxImportOptions opts = {
      .symbols = bindings, .input_shapes = shapes, .names = p->names};
  p->g = load_program_with(cmd, file, &opts);
  if (!p->g)
    return 1;
  if (expand && !weir_expand_all(p->g, NULL, &p->expanded, &error)) {
    fprintf(stderr, "weir %s: %s: %s\n", cmd, file, error->message);
    return 1;
  }
  const WeirGraph *g = p->g;

  p->args = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                  (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < ins->len; i++) {
    TensorSpec *t = g_ptr_array_index(ins, i);
    const WeirContainer *c =
        require_argument(cmd, g, p->names, "input", t->name);
    if (!c)
      return 2;
    if (t->tensor->dtype != c->dtype) {
      fprintf(stderr, "weir %s: %s: dtype %s, but argument '%s' is %s\n", cmd,
              t->file, weir_dtype_name(t->tensor->dtype), c->name,
              weir_dtype_name(c->dtype));
      return 1;
    }
    bind_from_tensor(c, t->tensor, bindings);
    g_hash_table_replace(p->args, c->name, g_steal_pointer(&t->tensor));
  }
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    const WeirTensor *given = g_hash_table_lookup(p->args, c->name);
    if (abi_only && c->initial && !given)
      continue;
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    for (guint d = 0; d < c->shape->len; d++) {
      g_autoptr(GError) local = NULL;
      if (!weir_expr_eval(g_ptr_array_index(c->shape, d), bindings, &shape[d],
                          &local)) {
        fprintf(stderr,
                "weir %s: %s: container '%s': %s (bind it with "
                "-D or give the argument with --input)\n",
                cmd, file, c->name, local->message);
        return 2;
      }
    }
    if (given) {
      gboolean same = given->rank == c->shape->len;
      for (guint d = 0; same && d < given->rank; d++)
        same = given->shape[d] == shape[d];
      if (!same) {
        g_autofree char *a = tensor_shape_text(given);
        g_autofree char *b = shape_text(c);
        fprintf(stderr,
                "weir %s: %s: --input for '%s' has shape %s, but the "
                "argument is %s\n",
                cmd, file, c->name, a, b);
        return 1;
      }
      continue;
    }
    WeirTensor *tensor = weir_tensor_new(c->dtype, c->shape->len, shape);
    weir_tensor_fill_random(tensor, (guint64)seed + c->id);
    g_hash_table_insert(p->args, c->name, tensor);
  }
  return 0;
}

/* Prints sum, min, max and the first values of each tensor of args, in
 * container order. */
static void print_tensors(const WeirGraph *g, GHashTable *args) {
  Table *t = table_new(6);
  table_row(t, g_strdup("argument"), g_strdup("type"), g_strdup("sum"),
            g_strdup("min"), g_strdup("max"), g_strdup("first values"));
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    const WeirTensor *x = g_hash_table_lookup(args, c->name);
    if (c->transient || !x)
      continue;
    double sum = 0, lo = G_MAXDOUBLE, hi = -G_MAXDOUBLE;
    GString *first = g_string_new(NULL);
    for (gint64 k = 0; k < x->count; k++) {
      double v = weir_tensor_get(x, k);
      sum += v;
      lo = MIN(lo, v);
      hi = MAX(hi, v);
      if (k < 4)
        g_string_append_printf(first, "%s%.6g", k ? ", " : "", v);
    }
    if (x->count > 4)
      g_string_append(first, ", ...");
    table_row(t, g_strdup(c->name), weir_tensor_describe(x),
              g_strdup_printf("%.6g", sum), g_strdup_printf("%.6g", lo),
              g_strdup_printf("%.6g", hi), g_string_free(first, FALSE));
  }
  table_print(t);
}

/* Compares got with want (float dtypes with the tolerances, others
 * exactly); prints one line "<label>: max abs error ...: ok|MISMATCH". */
static gboolean compare_tensor(const char *label, const WeirTensor *got,
                               const WeirTensor *want, const char *want_name) {
  gboolean exact = !weir_dtype_is_float(got->dtype);
  double r = exact ? 0 : (opt_rtol >= 0 ? opt_rtol : WEIR_CONFORMANCE_RTOL);
  double a = exact ? 0 : (opt_atol >= 0 ? opt_atol : WEIR_CONFORMANCE_ATOL);
  double err = 0;
  g_autoptr(GError) diff = NULL;
  gboolean ok = got->dtype == want->dtype && got->rank == want->rank;
  for (guint d = 0; ok && d < got->rank; d++)
    ok = got->shape[d] == want->shape[d];
  if (!ok) {
    g_autofree char *x = weir_tensor_describe(got);
    g_autofree char *y = weir_tensor_describe(want);
    printf("%s: %s, but %s holds %s: MISMATCH\n", label, x, want_name, y);
    return FALSE;
  }
  ok = weir_tensor_allclose(got, want, r, a, &err, &diff);
  printf("%s: max abs error %.3g (rtol %g, atol %g): %s\n", label, err, r, a,
         ok ? "ok" : "MISMATCH");
  if (!ok)
    printf("  %s\n", diff->message);
  return ok;
}

/* The --expect comparisons; returns the exit status (0, 1 on a mismatch,
 * 2 on bad usage). */
static int check_expects(const char *cmd, const Prepared *p) {
  int status = 0;
  for (guint i = 0; expect_specs && expect_specs[i]; i++) {
    g_autofree char *name = NULL, *path = NULL;
    if (!split_spec(cmd, "expect", expect_specs[i], &name, &path))
      return 2;
    const WeirContainer *c =
        require_argument(cmd, p->g, p->names, "expect", name);
    if (!c)
      return 2;
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirTensor) want = weir_tensor_load(path, NULL, &error);
    if (!want) {
      print_error(cmd, error);
      return 1;
    }
    const WeirTensor *got = g_hash_table_lookup(p->args, c->name);
    if (!got) {
      fprintf(stderr, "weir %s: --expect %s: '%s' is a constant\n", cmd, name,
              c->name);
      return 2;
    }
    if (!compare_tensor(c->name, got, want, path))
      status = 1;
  }
  return status;
}

/* The --output files; returns the exit status. */
static int write_outputs(const char *cmd, const Prepared *p) {
  for (guint i = 0; output_specs && output_specs[i]; i++) {
    g_autofree char *name = NULL, *path = NULL;
    if (!split_spec(cmd, "output", output_specs[i], &name, &path))
      return 2;
    const WeirContainer *c =
        require_argument(cmd, p->g, p->names, "output", name);
    if (!c)
      return 2;
    const WeirTensor *t = g_hash_table_lookup(p->args, c->name);
    g_autoptr(GError) error = NULL;
    if (!t) {
      fprintf(stderr, "weir %s: --output %s: '%s' is a constant\n", cmd, name,
              c->name);
      return 2;
    }
    if (!weir_tensor_save(t, c->name, path, &error)) {
      print_error(cmd, error);
      return 1;
    }
    printf("%s: written to %s\n", c->name, path);
  }
  return 0;
}

/* "12.3 us", "4.567 ms", "1.234 s" */
static char *format_seconds(double s) {
  if (s < 1e-3)
    return g_strdup_printf("%.1f us", s * 1e6);
  if (s < 1.0)
    return g_strdup_printf("%.3f ms", s * 1e3);
  return g_strdup_printf("%.3f s", s);
}

/* ---------------------------------------------------------------- run-ref */

static int cmd_run_ref(int argc, char **argv) {
  static const char *const usage_text =
      "usage: weir run-ref FILE [--input NAME=FILE]... [--expect "
      "NAME=FILE]...\n"
      "                    [--output NAME=FILE]... [--rtol R] [--atol A]\n"
      "                    [-D SYM=VALUE]... [--seed N]\n";
  if (!parse_options("run-ref", "FILE", run_entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    fputs(usage_text, stderr);
    return 2;
  }
  const char *file = argv[1];
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = parse_defines(&error);
  if (!bindings) {
    print_error("run-ref", error);
    return 2;
  }
  Prepared p = {0};
  int status = prepare_run("run-ref", file, bindings, TRUE, FALSE, &p);
  if (status) {
    prepared_clear(&p);
    return status;
  }
  gint64 t0 = g_get_monotonic_time();
  if (!weir_interpret(p.g, bindings, p.args, NULL, &error)) {
    fprintf(stderr, "weir run-ref: %s: %s\n", file, error->message);
    prepared_clear(&p);
    return 1;
  }
  gint64 t1 = g_get_monotonic_time();
  printf("%s: interpreted in %.3f s", file, (double)(t1 - t0) / 1e6);
  if (p.expanded)
    printf(" (%u library node%s expanded first)", p.expanded,
           p.expanded == 1 ? "" : "s");
  printf("\n");
  print_tensors(p.g, p.args);
  status = check_expects("run-ref", &p);
  if (status != 2) {
    int out = write_outputs("run-ref", &p);
    status = out ? out : status;
  }
  prepared_clear(&p);
  return status;
}

/* ------------------------------------------------- compile options (CLI) */

static char *opt_cc, *opt_cflags, *opt_cache_dir;
static gboolean opt_no_cache;

static const GOptionEntry compile_entries[] = {
    {"impl", 0, 0, G_OPTION_ARG_STRING_ARRAY, &impl_specs,
     "Implementation of every node of OP: pure, blas, im2col, direct "
     "(repeatable)",
     "OP=IMPL"},
    {"cc", 0, 0, G_OPTION_ARG_STRING, &opt_cc,
     "C compiler (default: $CC or cc)", "CC"},
    {"cflags", 0, 0, G_OPTION_ARG_STRING, &opt_cflags,
     "Compiler flags (default: " WEIR_COMPILE_DEFAULT_FLAGS ")", "FLAGS"},
    {"cache-dir", 0, 0, G_OPTION_ARG_FILENAME, &opt_cache_dir,
     "Compile cache directory (default: $WEIR_CACHE_DIR or "
     "$XDG_CACHE_HOME/weir)",
     "DIR"},
    {"no-cache", 0, 0, G_OPTION_ARG_NONE, &opt_no_cache,
     "Compile without the cache", NULL},
    {NULL}};

static WeirCompileOptions compile_options(void) {
  return (WeirCompileOptions){.compiler = opt_cc,
                              .flags = opt_cflags,
                              .cache_dir = opt_cache_dir,
                              .no_cache = opt_no_cache};
}

/* Prints a compile error; generated sources live in a temporary directory,
 * so say how to get them. */
static void print_compile_error(const char *cmd, const char *file,
                                const GError *error) {
  fprintf(stderr, "weir %s: %s: %s\n", cmd, file, error->message);
  if (error->code == WEIR_ERROR_RUNTIME &&
      g_str_has_prefix(error->message, "compiling"))
    fprintf(stderr,
            "(the source was generated in a temporary directory; "
            "'weir codegen %s -o DIR' writes it out)\n",
            file);
}

/* ---------------------------------------------------------------- codegen */

static gboolean opt_no_openmp;

static const GOptionEntry codegen_entries[] = {
    {"impl", 0, 0, G_OPTION_ARG_STRING_ARRAY, &impl_specs,
     "Implementation of every node of OP: pure, blas, im2col, direct "
     "(repeatable)",
     "OP=IMPL"},
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
     "Directory for <prefix>.c and <prefix>.h (default: .)", "DIR"},
    {"no-openmp", 0, 0, G_OPTION_ARG_NONE, &opt_no_openmp,
     "Leave out the OpenMP pragmas", NULL},
    {NULL}};

static int cmd_codegen(int argc, char **argv) {
  if (!parse_options("codegen", "FILE", codegen_entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir codegen FILE [-o DIR] [--no-openmp]\n");
    return 2;
  }
  g_autoptr(WeirGraph) g = load_program("codegen", argv[1]);
  if (!g)
    return 1;
  g_autoptr(GError) error = NULL;
  WeirCodegenOptions cg = {.openmp = !opt_no_openmp};
  g_autofree char *source = weir_codegen_c(g, &cg, &error);
  if (!source) {
    fprintf(stderr, "weir codegen: %s: %s\n", argv[1], error->message);
    return 1;
  }
  g_autofree char *header = weir_codegen_header(g);
  g_autofree char *prefix = weir_codegen_prefix(g);
  const char *dir = output_path ? output_path : ".";
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    fprintf(stderr, "weir codegen: %s: %s\n", dir, g_strerror(errno));
    return 1;
  }
  g_autofree char *cname = g_strconcat(prefix, ".c", NULL);
  g_autofree char *hname = g_strconcat(prefix, ".h", NULL);
  g_autofree char *cpath = g_build_filename(dir, cname, NULL);
  g_autofree char *hpath = g_build_filename(dir, hname, NULL);
  if (!g_file_set_contents(cpath, source, -1, &error) ||
      !g_file_set_contents(hpath, header, -1, &error)) {
    print_error("codegen", error);
    return 1;
  }
  printf("wrote %s and %s\n", cpath, hpath);
  return 0;
}

/* -------------------------------------------------------------------- run */

static gboolean opt_check;

static const GOptionEntry check_entries[] = {
    {"check", 0, 0, G_OPTION_ARG_NONE, &opt_check,
     "Also run the reference interpreter on the same inputs and compare "
     "every argument",
     NULL},
    {NULL}};

static GHashTable *copy_tensor_table(GHashTable *args) {
  GHashTable *copy = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                           (GDestroyNotify)weir_tensor_free);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, args);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(copy, k, weir_tensor_copy(v));
  return copy;
}

/* Runs the interpreter on ref (a copy of the inputs, keyed by the names of
 * p->g) and compares every argument with the compiled run's.  Returns the
 * exit status. */
static int check_reference(const char *file, const Prepared *p,
                           GHashTable *bindings, GHashTable *ref) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) expanded = weir_graph_copy(p->g);
  gint64 t0 = g_get_monotonic_time();
  if (!weir_expand_all(expanded, NULL, NULL, &error) ||
      !weir_interpret(expanded, bindings, ref, NULL, &error)) {
    fprintf(stderr, "weir run: %s: reference interpreter: %s\n", file,
            error->message);
    return 1;
  }
  g_autofree char *took =
      format_seconds((double)(g_get_monotonic_time() - t0) / 1e6);
  printf("check against the reference interpreter (%s):\n", took);
  int status = 0;
  for (guint i = 0; i < p->g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(p->g->containers, i);
    const WeirTensor *got = g_hash_table_lookup(p->args, c->name);
    if (c->transient || !got)
      continue;
    g_autofree char *label = g_strconcat("  ", c->name, NULL);
    if (!compare_tensor(label, got, g_hash_table_lookup(ref, c->name),
                        "the interpreter"))
      status = 1;
  }
  return status;
}

/* The summary of `weir run`: data movement and FLOPs of the program as
 * imported and as compiled (library nodes expanded), peak transient
 * memory, and the run time (median of --reps more runs when asked).
 * Returns FALSE when the timed runs fail. */
static gboolean print_run_summary(const char *file, Prepared *p, WeirKernel *k,
                                  GHashTable *bindings, double first_run) {
  g_autoptr(GError) local = NULL;
  g_autoptr(WeirAnalysis) lib = weir_analysis_compute(p->g, bindings, &local);
  g_clear_error(&local);
  g_autoptr(WeirGraph) expanded = weir_graph_copy(p->g);
  g_autoptr(WeirAnalysis) exp =
      weir_expand_all(expanded, NULL, NULL, &local)
          ? weir_analysis_compute(expanded, bindings, &local)
          : NULL;
  printf("summary\n");
  if (lib) {
    g_autofree char *b = format_quantity(&lib->total_bytes, TRUE);
    g_autofree char *pk = format_quantity(&lib->peak_transient_bytes, TRUE);
    printf("  data movement   %s between operators (library nodes), peak "
           "transient memory %s\n",
           b, pk);
  }
  if (exp) {
    g_autofree char *b = format_quantity(&exp->total_bytes, TRUE);
    g_autofree char *f = format_quantity(&exp->total_flops, FALSE);
    printf("  expanded        %s moved, %s FLOPs", b, f);
    if (exp->intensity_known)
      printf(", %.3f FLOP/B", exp->intensity);
    printf("\n");
  }
  double t = first_run;
  const char *how = "one run";
  g_autofree char *how_many = NULL;
  if (opt_run_reps > 0) {
    WeirBenchOptions bo = {.warmup = 1, .repetitions = (guint)opt_run_reps};
    WeirBenchResult r;
    if (!weir_kernel_bench(k, bindings, p->args, &bo, &r, &local)) {
      fprintf(stderr, "weir run: %s: timed runs: %s\n", file, local->message);
      return FALSE;
    }
    t = r.median;
    how = how_many = g_strdup_printf("median of %d runs", opt_run_reps);
    weir_bench_result_clear(&r);
  }
  g_autofree char *ts = format_seconds(t);
  {
    gsize ws = 0;
    weir_kernel_workspace(k, &ws);
    g_autofree char *cb = g_format_size_full(weir_kernel_constants_bytes(k),
                                             G_FORMAT_SIZE_IEC_UNITS);
    g_autofree char *wb = g_format_size_full(ws, G_FORMAT_SIZE_IEC_UNITS);
    printf("  kernel memory   parameters %s (bound, not copied), workspace "
           "%s\n",
           cb, wb);
  }
  printf("  time            %s (%s)", ts, how);
  if (exp && exp->total_flops.known && t > 0)
    printf(", %.3f GFLOP/s", (double)exp->total_flops.value / t / 1e9);
  printf("\n");
  return TRUE;
}

static int cmd_run(int argc, char **argv) {
  static const char *const usage_text =
      "usage: weir run FILE [--input NAME=FILE]... [--expect NAME=FILE]...\n"
      "                [--output NAME=FILE]... [--check] [--rtol R] "
      "[--atol A] [--reps N]\n"
      "                [-D SYM=VALUE]... [--seed N] [--cc CC] [--cflags "
      "FLAGS]\n";
  const GOptionEntry *const extras[] = {run_entries, check_entries,
                                        compile_entries, NULL};
  if (!parse_options_with("run", "FILE", extras, &argc, &argv))
    return 2;
  if (argc != 2) {
    fputs(usage_text, stderr);
    return 2;
  }
  const char *file = argv[1];
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = parse_defines(&error);
  if (!bindings) {
    print_error("run", error);
    return 2;
  }
  Prepared p = {0};
  gint64 t_import = g_get_monotonic_time();
  int status = prepare_run("run", file, bindings, FALSE, TRUE, &p);
  if (status) {
    prepared_clear(&p);
    return status;
  }
  g_autofree char *imported =
      format_seconds((double)(g_get_monotonic_time() - t_import) / 1e6);
  g_autoptr(GHashTable) ref = opt_check ? copy_tensor_table(p.args) : NULL;

  WeirCompileOptions opts = compile_options();
  WeirCompileInfo info = {0};
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(WeirKernel) k = weir_kernel_compile(p.g, &opts, &info, &error);
  if (!k) {
    print_compile_error("run", file, error);
    weir_compile_info_clear(&info);
    prepared_clear(&p);
    return 1;
  }
  g_autofree char *took =
      format_seconds((double)(g_get_monotonic_time() - t0) / 1e6);
  g_autofree char *keyed = format_seconds(info.key_seconds);
  g_autofree char *generated = format_seconds(info.codegen_seconds);
  g_autofree char *compiler = format_seconds(info.compile_seconds);
  printf("%s: read and prepared in %s (model import, inputs)\n", file,
         imported);
  if (info.cache_hit)
    printf("%s: loaded from the compile cache in %s (key %.12s computed in "
           "%s, no C generated)\n",
           file, took, info.key, keyed);
  else
    printf(
        "%s: compiled in %s%s (key %.12s; C generated in %s, %" G_GSIZE_FORMAT
        " bytes; compiler %s)\n",
        file, took, info.recovered ? ", replacing a damaged cache entry" : "",
        info.key, generated, info.source_bytes, compiler);
  weir_compile_info_clear(&info);

  t0 = g_get_monotonic_time();
  if (!weir_kernel_run(k, bindings, p.args, &error)) {
    fprintf(stderr, "weir run: %s: %s\n", file, error->message);
    prepared_clear(&p);
    return 1;
  }
  gint64 run_us = g_get_monotonic_time() - t0;
  g_autofree char *ran = format_seconds((double)run_us / 1e6);
  printf("%s: ran in %s\n", file, ran);
  print_tensors(p.g, p.args);
  if (opt_check)
    status = check_reference(file, &p, bindings, ref);
  int expects = check_expects("run", &p);
  if (expects != 2) {
    int out = write_outputs("run", &p);
    expects = out ? out : expects;
  }
  if (!print_run_summary(file, &p, k, bindings, (double)run_us / 1e6))
    status = status ? status : 1;
  prepared_clear(&p);
  return expects ? expects : status;
}

/* ------------------------------------------------------------------ bench */

static gint opt_threads, opt_reps = 10, opt_warmup = 3;
static gboolean opt_cold;

static const GOptionEntry bench_entries[] = {
    {"seed", 0, 0, G_OPTION_ARG_INT64, &seed,
     "Seed of the random inputs (default 1)", "N"},
    {"threads", 't', 0, G_OPTION_ARG_INT, &opt_threads,
     "OpenMP threads (default: OMP_NUM_THREADS or one per processor)", "N"},
    {"reps", 'r', 0, G_OPTION_ARG_INT, &opt_reps,
     "Timed repetitions (default 10)", "N"},
    {"warmup", 'w', 0, G_OPTION_ARG_INT, &opt_warmup,
     "Untimed warm-up runs (default 3)", "N"},
    {"cold", 0, 0, G_OPTION_ARG_NONE, &opt_cold,
     "Also measure a cold compile (in a fresh temporary cache) and print it "
     "with the cached load",
     NULL},
    {NULL}};

static void remove_tree(const char *path) {
  if (g_file_test(path, G_FILE_TEST_IS_DIR) &&
      !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
      g_autofree char *p = g_build_filename(path, name, NULL);
      remove_tree(p);
    }
    g_rmdir(path);
  } else
    g_unlink(path);
}

/* Compiles g twice with a fresh cache in a temporary directory: a cold
 * compile (*cold: the whole call, *compiler: the compiler alone), then a
 * cached one (*cached).  Returns the cached kernel. */
static WeirKernel *compile_cold_and_cached(const WeirGraph *g, double *cold,
                                           double *compiler, double *cached,
                                           GError **error) {
  g_autofree char *dir = g_dir_make_tmp("weir-bench-XXXXXX", error);
  if (!dir)
    return NULL;
  WeirCompileOptions opts = compile_options();
  opts.cache_dir = dir;
  opts.no_cache = FALSE;
  WeirCompileInfo info = {0};
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(WeirKernel) first = weir_kernel_compile(g, &opts, &info, error);
  gint64 t1 = g_get_monotonic_time();
  *cold = (double)(t1 - t0) / 1e6;
  *compiler = info.compile_seconds;
  weir_compile_info_clear(&info);
  WeirKernel *k = NULL;
  if (first) {
    k = weir_kernel_compile(g, &opts, &info, error);
    *cached = (double)(g_get_monotonic_time() - t1) / 1e6;
    if (k && !info.cache_hit) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                  "the second compile missed the cache");
      g_clear_pointer(&k, weir_kernel_free);
    }
    weir_compile_info_clear(&info);
  }
  remove_tree(dir);
  return k;
}

/* Rate of a quantity per second in units of 10^9, or "-". */
static char *format_rate(const WeirQuantity *q, double seconds,
                         const char *unit) {
  if (!q->known || seconds <= 0)
    return g_strdup("-");
  return g_strdup_printf("%.3f %s", (double)q->value / seconds / 1e9, unit);
}

static int cmd_bench(int argc, char **argv) {
  const GOptionEntry *const extras[] = {bench_entries, compile_entries, NULL};
  if (!parse_options_with("bench", "FILE", extras, &argc, &argv))
    return 2;
  if (argc != 2 || opt_reps < 1 || opt_warmup < 0 || opt_threads < 0) {
    fprintf(stderr, "usage: weir bench FILE [-D SYM=VALUE]... [--threads N] "
                    "[--reps N>=1] [--warmup N>=0] [--cold]\n");
    return 2;
  }
  const char *file = argv[1];
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = parse_defines(&error);
  if (!bindings) {
    print_error("bench", error);
    return 2;
  }
  Prepared p = {0};
  int status = prepare_run("bench", file, bindings, FALSE, TRUE, &p);
  if (status) {
    prepared_clear(&p);
    return status;
  }
  double cold = 0, compiler = 0, cached = 0;
  gboolean hit = FALSE;
  g_autoptr(WeirKernel) k = NULL;
  if (opt_cold)
    k = compile_cold_and_cached(p.g, &cold, &compiler, &cached, &error);
  else {
    /* through the compile cache, like weir run */
    WeirCompileOptions opts = compile_options();
    WeirCompileInfo info = {0};
    gint64 t0 = g_get_monotonic_time();
    k = weir_kernel_compile(p.g, &opts, &info, &error);
    cold = (double)(g_get_monotonic_time() - t0) / 1e6;
    compiler = info.compile_seconds;
    hit = info.cache_hit;
    weir_compile_info_clear(&info);
  }
  if (!k) {
    print_compile_error("bench", file, error);
    prepared_clear(&p);
    return 1;
  }
  g_autofree char *threads = g_strdup("default");
  if (opt_threads > 0) {
    g_free(threads);
    if (weir_kernel_set_threads(k, opt_threads, &error))
      threads = g_strdup_printf("%d", opt_threads);
    else {
      fprintf(stderr, "weir bench: note: %s; --threads ignored\n",
              error->message);
      g_clear_error(&error);
      threads = g_strdup("1 (no OpenMP)");
    }
  }
  WeirBenchOptions bo = {.warmup = (guint)opt_warmup,
                         .repetitions = (guint)opt_reps};
  WeirBenchResult r;
  if (!weir_kernel_bench(k, bindings, p.args, &bo, &r, &error)) {
    fprintf(stderr, "weir bench: %s: %s\n", file, error->message);
    prepared_clear(&p);
    return 1;
  }
  /* FLOPs and bytes of the program as compiled: library nodes expanded */
  g_autoptr(WeirGraph) expanded = weir_graph_copy(p.g);
  g_autoptr(GError) local = NULL;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(
      weir_expand_all(expanded, NULL, NULL, &local) ? expanded : p.g, bindings,
      &local);

  printf("program  %s  (%s)\n", p.g->name, file);
  g_autofree char *c1 = format_seconds(cold), *c2 = format_seconds(compiler),
                  *c3 = format_seconds(cached);
  if (opt_cold)
    printf("compile  cold %s (compiler %s), cached %s\n", c1, c2, c3);
  else if (hit)
    printf("compile  loaded from the compile cache in %s (--cold: measure a "
           "cold compile)\n",
           c1);
  else
    printf("compile  %s (compiler %s; now in the compile cache)\n", c1, c2);
  {
    g_autofree char *blas = weir_kernel_blas_info(k);
    const char *coretype = g_getenv("OPENBLAS_CORETYPE");
    if (blas)
      printf("blas     %s (OPENBLAS_CORETYPE %s)\n", blas,
             coretype ? coretype : "unset");
  }
  printf("runs     %d warm-up, %d timed, threads %s\n", opt_warmup, opt_reps,
         threads);
  g_autofree char *med = format_seconds(r.median), *lo = format_seconds(r.min),
                  *hi = format_seconds(r.max);
  printf("time     median %s, min %s, max %s\n", med, lo, hi);
  if (a) {
    g_autofree char *flops = format_quantity(&a->total_flops, FALSE);
    g_autofree char *bytes = format_quantity(&a->total_bytes, TRUE);
    g_autofree char *gflops = format_rate(&a->total_flops, r.median, "GFLOP/s");
    g_autofree char *gbs = format_rate(&a->total_bytes, r.median, "GB/s");
    printf("FLOPs    %s  ->  %s at the median time\n", flops, gflops);
    printf("bytes    %s  ->  %s at the median time\n", bytes, gbs);
  } else
    printf("FLOPs    - (analysis: %s)\n", local->message);
  weir_bench_result_clear(&r);
  prepared_clear(&p);
  return 0;
}

/* ------------------------------------------------------------------ cache */

static const GOptionEntry cache_entries[] = {
    {"cache-dir", 0, 0, G_OPTION_ARG_FILENAME, &opt_cache_dir,
     "Compile cache directory (default: $WEIR_CACHE_DIR or "
     "$XDG_CACHE_HOME/weir)",
     "DIR"},
    {NULL}};

static int cmd_cache(int argc, char **argv) {
  if (!parse_options("cache", "stats|clear", cache_entries, &argc, &argv))
    return 2;
  if (argc != 2 ||
      (strcmp(argv[1], "stats") != 0 && strcmp(argv[1], "clear") != 0)) {
    fprintf(stderr, "usage: weir cache stats|clear [--cache-dir DIR]\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirCache) cache = weir_cache_open(opt_cache_dir, &error);
  WeirCacheStats st;
  if (!cache || !weir_cache_stats(cache, &st, &error)) {
    print_error("cache", error);
    return 1;
  }
  g_autofree char *size = format_bytes(st.total_bytes);
  if (strcmp(argv[1], "clear") == 0) {
    if (!weir_cache_clear(cache, &error)) {
      print_error("cache", error);
      return 1;
    }
    printf("removed %" G_GINT64_FORMAT " object%s (%s) from %s\n", st.entries,
           st.entries == 1 ? "" : "s", size, weir_cache_dir(cache));
    return 0;
  }
  g_autofree char *limit = format_bytes(st.max_bytes);
  printf("location  %s\n", weir_cache_dir(cache));
  printf("objects   %" G_GINT64_FORMAT "\n", st.entries);
  printf("size      %s (limit %s)\n", size, limit);
  printf("hits      %" G_GINT64_FORMAT "\n", st.hits);
  return 0;
}

/* ------------------------------------------------------------ conformance */

/* The detail of a result without the model path in front. */
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

static char *status_text(const WeirConformanceResult *r) {
  GString *s = g_string_new(weir_conformance_status_name(r->status));
  if (r->status == WEIR_CONFORMANCE_FAIL)
    g_string_append_printf(s, " (max error %.3g) %s", r->max_error,
                           short_detail(r));
  else if (r->status != WEIR_CONFORMANCE_PASS)
    g_string_append_printf(s, " (%s)", short_detail(r));
  if (r->expected_reason && r->status == WEIR_CONFORMANCE_PASS)
    g_string_append(s, "  [listed as expected not to pass: remove it]");
  else if (r->expected_reason)
    g_string_append(s, "  [expected]");
  return g_string_free(s, FALSE);
}

/* Compile options of `weir conformance --backend compiled` (no --impl:
 * every library node gets its default implementation). */
static const GOptionEntry conformance_compile_entries[] = {
    {"cc", 0, 0, G_OPTION_ARG_STRING, &opt_cc,
     "C compiler of the compiled backend (default: $CC or cc)", "CC"},
    {"cflags", 0, 0, G_OPTION_ARG_STRING, &opt_cflags,
     "Compiler flags of the compiled backend "
     "(default: " WEIR_CONFORMANCE_COMPILE_FLAGS ")",
     "FLAGS"},
    {"cache-dir", 0, 0, G_OPTION_ARG_FILENAME, &opt_cache_dir,
     "Compile cache directory (default: $WEIR_CACHE_DIR or "
     "$XDG_CACHE_HOME/weir)",
     "DIR"},
    {"no-cache", 0, 0, G_OPTION_ARG_NONE, &opt_no_cache,
     "Compile without the cache", NULL},
    {NULL}};

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

static int cmd_conformance(int argc, char **argv) {
  const GOptionEntry *const extras[] = {conformance_entries,
                                        conformance_compile_entries, NULL};
  if (!parse_options_with("conformance", "DIR...", extras, &argc, &argv))
    return 2;
  if (argc < 2) {
    fprintf(stderr, "usage: weir conformance [--expected-unsupported FILE] "
                    "[--backend interp|compiled] DIR...\n");
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
      print_error("conformance", error);
      return 2;
    }
  }
  g_autoptr(GPtrArray) tests =
      weir_conformance_find_tests((const char *const *)argv + 1, &error);
  if (!tests) {
    print_error("conformance", error);
    return 2;
  }
  WeirCompileOptions copts = compile_options();
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
  Table *t = table_new(7);
  table_row(t, g_strdup("operator"), g_strdup("tests"), g_strdup("pass"),
            g_strdup("FAIL"), g_strdup("unsupported"), g_strdup("error"),
            g_strdup("unexpected"));
  g_autoptr(GPtrArray) totals = weir_conformance_totals(results);
  g_autoptr(WeirConformanceTotals) all = weir_conformance_overall(results);
  g_ptr_array_add(totals, g_steal_pointer(&all));
  for (guint i = 0; i < totals->len; i++) {
    const WeirConformanceTotals *x = g_ptr_array_index(totals, i);
    table_row(t, g_strdup(x->op), g_strdup_printf("%u", x->tests),
              g_strdup_printf("%u", x->pass), g_strdup_printf("%u", x->fail),
              g_strdup_printf("%u", x->unsupported),
              g_strdup_printf("%u", x->error),
              g_strdup_printf("%u", x->failures));
  }
  table_print(t);
  const WeirConformanceTotals *sum = g_ptr_array_index(totals, totals->len - 1);
  printf("\n%u tests: %u pass, %u FAIL, %u unsupported, %u error (backend "
         "%s, %.1f s)\n",
         sum->tests, sum->pass, sum->fail, sum->unsupported, sum->error,
         backend ? backend : "interp", seconds);

  guint stale = 0;
  for (guint i = 0; i < results->len; i++) {
    const WeirConformanceResult *r = g_ptr_array_index(results, i);
    if (r->expected_reason && r->status == WEIR_CONFORMANCE_PASS)
      stale++;
  }
  if (stale)
    printf("%u test%s listed in %s now pass%s: remove them from the list\n",
           stale, stale == 1 ? "" : "s", expected_path, stale == 1 ? "es" : "");
  if (sum->failures) {
    printf("\n%u unexpected result%s (a test of a supported operator that "
           "does not pass and is not listed%s%s):\n",
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

/* -------------------------------------------------------------------- ops */

static char *count_text(guint lo, guint hi) {
  if (hi == WEIR_OP_VARIADIC)
    return g_strdup_printf("%u+", lo);
  return lo == hi ? g_strdup_printf("%u", lo)
                  : g_strdup_printf("%u-%u", lo, hi);
}

static int cmd_ops(int argc, char **argv) {
  if (!parse_options("ops", "", NULL, &argc, &argv))
    return 2;
  if (argc != 1) {
    fprintf(stderr, "usage: weir ops\n");
    return 2;
  }
  weir_expansions_init();
  g_autoptr(GPtrArray) names = weir_op_names();
  Table *t = table_new(5);
  table_row(t, g_strdup("operator"), g_strdup("inputs"), g_strdup("outputs"),
            g_strdup("expansion"),
            g_strdup("attributes (<- input k from opset n)"));
  for (guint i = 0; i < names->len; i++) {
    const WeirOpInfo *info = weir_op_lookup(g_ptr_array_index(names, i));
    GString *attrs = g_string_new(NULL);
    for (guint k = 0; k < info->n_attrs; k++) {
      const WeirOpAttrSpec *a = &info->attrs[k];
      g_string_append_printf(attrs, "%s%s%s", k ? ", " : "", a->name,
                             a->required ? "!" : "");
      if (a->from_input)
        g_string_append_printf(attrs, " <- %u from %u", a->from_input,
                               a->input_since);
    }
    /* Operators of other ONNX domains show it: "domain.Op". */
    table_row(t,
              info->domain ? g_strdup_printf("%s.%s", info->domain, info->name)
                           : g_strdup(info->name),
              count_text(info->min_inputs, info->max_inputs),
              count_text(info->min_outputs, info->max_outputs),
              g_strdup(weir_op_expansion(info->name, "pure") ? "pure" : "-"),
              g_string_free(attrs, FALSE));
  }
  table_print(t);
  printf("\n%u operators ('!': required attribute)\n", names->len);
  return 0;
}

/* ---------------------------------------------------------- transforms */

static gint tier_filter;
static char *node_filter;
static char *site_arg;
static char **param_args;
static char *output_path;

static const GOptionEntry transforms_entries[] = {
    {"tier", 0, 0, G_OPTION_ARG_INT, &tier_filter,
     "Only transformations of this tier (1-4)", "N"},
    {"node", 0, 0, G_OPTION_ARG_STRING, &node_filter,
     "Only sites that include this node (label or id)", "NAME"},
    {NULL}};

static const GOptionEntry apply_entries[] = {
    {"site", 0, 0, G_OPTION_ARG_STRING, &site_arg,
     "Node ids of the site, as listed by 'weir transforms'; for a workspace "
     "also STATE:N,.., @K (K-th site) or a label pattern",
     "SITE"},
    {"param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &param_args,
     "Set a parameter of the transformation", "K=V"},
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
     "Write the transformed program here", "OUT.json"},
    {NULL}};

/* Registers the built-in transformations and loads the plugins, printing
 * the refused ones as warnings. */
static void load_transformations(const char *cmd) {
  weir_transforms_init();
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func(g_free);
  weir_plugins_load(problems);
  for (guint i = 0; i < problems->len; i++)
    fprintf(stderr, "weir %s: warning: %s\n", cmd,
            (char *)g_ptr_array_index(problems, i));
}

static int apply_workspace(const char *path, const char *name);

/* "--site 7,9" for a site; "(whole program)" for a pass. */
static char *site_option(const WeirSite *site) {
  if (site->n_nodes == 0)
    return g_strdup("(whole program)");
  GString *s = g_string_new("--site ");
  for (guint k = 0; k < site->n_nodes; k++)
    g_string_append_printf(s, "%s%u", k ? "," : "", site->nodes[k]);
  return g_string_free(s, FALSE);
}

/* Whether the site includes a node whose label (or id) is name. */
static gboolean site_has_node(const WeirGraph *g, const WeirSite *site,
                              const char *name) {
  for (guint k = 0; k < site->n_nodes; k++) {
    const WeirNode *n = weir_graph_node(g, site->nodes[k], NULL);
    g_autofree char *id = g_strdup_printf("%u", site->nodes[k]);
    if (strcmp(id, name) == 0 || (n && g_strcmp0(n->label, name) == 0))
      return TRUE;
  }
  return FALSE;
}

static int cmd_transforms(int argc, char **argv) {
  if (!parse_options("transforms", "FILE", transforms_entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir transforms FILE [--tier N] [--node NAME]\n");
    return 2;
  }
  if (tier_filter < 0 || tier_filter > 4) {
    fprintf(stderr, "weir transforms: --tier %d: expected 1, 2, 3 or 4\n",
            tier_filter);
    return 2;
  }
  g_autoptr(WeirGraph) g = load_program("transforms", argv[1]);
  if (!g)
    return 1;
  load_transformations("transforms");
  g_autoptr(GPtrArray) list = weir_transforms_list();
  guint n_transforms = 0, n_sites = 0, n_legal = 0;
  for (guint i = 0; i < list->len; i++) {
    const WeirTransformInfo *t = g_ptr_array_index(list, i);
    if (tier_filter && t->tier != (guint)tier_filter)
      continue;
    g_autoptr(GArray) sites = weir_transform_sites(t, g);
    Table *table = NULL;
    for (guint k = 0; k < sites->len; k++) {
      const WeirSite *site = &g_array_index(sites, WeirSite, k);
      if (node_filter && !site_has_node(g, site, node_filter))
        continue;
      if (!table) {
        printf("%stier %u  %s: %s\n", n_transforms ? "\n" : "", t->tier,
               t->name, t->description ? t->description : "");
        table = table_new(3);
        n_transforms++;
      }
      char *reason = NULL;
      gboolean legal = weir_transform_can_apply(t, g, site, NULL, &reason);
      g_autofree char *where = weir_site_describe(g, site);
      n_sites++;
      n_legal += legal;
      table_row(
          table, site_option(site), g_strdup(legal ? "legal" : "not legal"),
          legal ? g_strdup(where) : g_strdup_printf("%s: %s", where, reason));
      g_free(reason);
    }
    if (table)
      table_print(table);
  }
  if (n_transforms == 0)
    printf("no transformation has a site in %s%s%s\n", argv[1],
           node_filter ? " at node " : "", node_filter ? node_filter : "");
  else
    printf("\n%u transformation%s, %u site%s, %u legal\n", n_transforms,
           n_transforms == 1 ? "" : "s", n_sites, n_sites == 1 ? "" : "s",
           n_legal);
  return 0;
}

/* ------------------------------------------------------------------ apply */

/* Parses "7,9,12" into a site; the state is the one holding the first
 * node. */
static gboolean parse_site(const WeirGraph *g, const char *text, WeirSite *site,
                           GError **error) {
  memset(site, 0, sizeof *site);
  g_auto(GStrv) parts = g_strsplit(text, ",", -1);
  guint n = g_strv_length(parts);
  if (n == 0 || n > WEIR_SITE_MAX_NODES) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "--site %s: expected 1 to %d node ids separated by commas",
                text, WEIR_SITE_MAX_NODES);
    return FALSE;
  }
  for (guint k = 0; k < n; k++) {
    char *end = NULL;
    guint64 v = g_ascii_strtoull(g_strstrip(parts[k]), &end, 10);
    if (!parts[k][0] || !end || *end || v == 0 || v > G_MAXUINT) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--site %s: '%s' is not a node id", text, parts[k]);
      return FALSE;
    }
    site->nodes[k] = (guint)v;
  }
  site->n_nodes = n;
  WeirState *s = NULL;
  if (!weir_graph_node(g, site->nodes[0], &s)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "--site %s: program '%s' has no node %u", text, g->name,
                site->nodes[0]);
    return FALSE;
  }
  site->state = s->id;
  return TRUE;
}

/* "+1.5 KiB (+25.0%)" between two known quantities. */
static char *format_delta(const WeirQuantity *before, const WeirQuantity *after,
                          gboolean bytes) {
  if (!before->known || !after->known)
    return g_strdup("");
  gint64 d = after->value - before->value;
  if (d == 0)
    return g_strdup("  (unchanged)");
  g_autofree char *mag =
      bytes ? format_bytes(d < 0 ? -d : d)
            : g_strdup_printf("%" G_GINT64_FORMAT, d < 0 ? -d : d);
  if (before->value == 0)
    return g_strdup_printf("  (%s%s)", d < 0 ? "-" : "+", mag);
  return g_strdup_printf("  (%s%s, %+.1f%%)", d < 0 ? "-" : "+", mag,
                         100.0 * (double)d / (double)before->value);
}

static int cmd_apply(int argc, char **argv) {
  if (!parse_options("apply", "FILE NAME", apply_entries, &argc, &argv))
    return 2;
  if (argc == 3 && is_workspace_path(argv[1]))
    return apply_workspace(argv[1], argv[2]);
  if (argc != 3 || !output_path) {
    fprintf(stderr, "usage: weir apply FILE NAME [--site N[,N...]] "
                    "[--param K=V]... -o OUT.json [-D SYM=VALUE]...\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = parse_defines(&error);
  if (!bindings) {
    print_error("apply", error);
    return 2;
  }
  g_autoptr(WeirGraph) g = load_program("apply", argv[1]);
  if (!g)
    return 1;
  load_transformations("apply");
  const WeirTransformInfo *t = weir_transform_lookup(argv[2]);
  if (!t) {
    fprintf(stderr,
            "weir apply: unknown transformation '%s' (see 'weir transforms "
            "%s')\n",
            argv[2], argv[1]);
    return 2;
  }
  g_autoptr(WeirParams) params =
      weir_params_parse(t, (const char *const *)param_args, &error);
  if (!params) {
    print_error("apply", error);
    return 2;
  }
  WeirSite site;
  if (site_arg) {
    if (!parse_site(g, site_arg, &site, &error)) {
      print_error("apply", error);
      return 2;
    }
  } else {
    g_autoptr(GArray) sites = weir_transform_sites(t, g);
    if (sites->len != 1) {
      fprintf(stderr,
              "weir apply: %s has %u sites in %s; choose one with --site (see "
              "'weir transforms %s')\n",
              t->name, sites->len, argv[1], argv[1]);
      return 2;
    }
    site = g_array_index(sites, WeirSite, 0);
  }
  g_autofree char *where = weir_site_describe(g, &site);
  WeirApplyReport report;
  if (!weir_transform_apply(g, t, &site, params, bindings, &report, &error)) {
    print_error("apply", error);
    return 1;
  }
  g_autofree char *ptext = weir_params_to_string(params);
  printf("applied %s at %s%s%s%s in %.3f s\n", t->name, where,
         *ptext ? " (" : "", ptext, *ptext ? ")" : "", report.seconds);
  g_autofree char *bb = format_quantity(&report.bytes_before, TRUE);
  g_autofree char *ba = format_quantity(&report.bytes_after, TRUE);
  g_autofree char *bd =
      format_delta(&report.bytes_before, &report.bytes_after, TRUE);
  g_autofree char *fb = format_quantity(&report.flops_before, FALSE);
  g_autofree char *fa = format_quantity(&report.flops_after, FALSE);
  g_autofree char *fd =
      format_delta(&report.flops_before, &report.flops_after, FALSE);
  printf("  data movement  %s -> %s%s\n", bb, ba, bd);
  printf("  FLOPs          %s -> %s%s\n", fb, fa, fd);
  weir_apply_report_clear(&report);
  if (!weir_graph_save(g, output_path, &error)) {
    print_error("apply", error);
    return 1;
  }
  printf("wrote %s\n", output_path);
  return 0;
}

/* ------------------------------------------------------------- workspaces */

static gboolean force;
static char *export_path;
static gint bookmark_step = -1;
static char *recipe_path;
static gboolean show_report;

static const GOptionEntry new_entries[] = {
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
     "Write the workspace to FILE (.weir)", "FILE"},
    {"force", 0, 0, G_OPTION_ARG_NONE, &force, "Replace an existing workspace",
     NULL},
    {NULL}};

static const GOptionEntry history_entries[] = {
    {"export-recipe", 0, 0, G_OPTION_ARG_FILENAME, &export_path,
     "Write steps 1..current as a recipe", "FILE"},
    {NULL}};

static const GOptionEntry bookmark_entries[] = {
    {"step", 0, 0, G_OPTION_ARG_INT, &bookmark_step,
     "Bookmark step K instead of the current one (0: the model)", "K"},
    {NULL}};

static const GOptionEntry optimize_entries[] = {
    {"recipe", 'r', 0, G_OPTION_ARG_FILENAME, &recipe_path,
     "The recipe to apply", "FILE"},
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
     "Write the result: a workspace (.weir, with the history) or a program "
     "(.json)",
     "FILE"},
    {"report", 0, 0, G_OPTION_ARG_NONE, &show_report,
     "Print what every step did", NULL},
    {NULL}};

static gboolean save_workspace(const char *cmd, const WeirSession *s,
                               const char *path) {
  g_autoptr(GError) error = NULL;
  if (weir_workspace_save(s, path, &error))
    return TRUE;
  print_error(cmd, error);
  return FALSE;
}

/* "12.0 KiB -> 9.0 KiB (-25.0%)" */
static char *format_change(const WeirFigure *a, const WeirFigure *b,
                           gboolean bytes) {
  g_autofree char *x = weir_figure_format(a, bytes);
  g_autofree char *y = weir_figure_format(b, bytes);
  if (a->known && b->known && a->value != 0)
    return g_strdup_printf("%s -> %s (%+.1f%%)", x, y,
                           100.0 * (double)(b->value - a->value) /
                               (double)a->value);
  return g_strdup_printf("%s -> %s", x, y);
}

/* Figures of a program: total bytes, FLOPs, peak transient memory. */
typedef struct {
  WeirFigure bytes, flops, peak;
} Figures;

static void figures_clear(Figures *f) {
  weir_figure_clear(&f->bytes);
  weir_figure_clear(&f->flops);
  weir_figure_clear(&f->peak);
}

static void figures_of(const WeirGraph *g, GHashTable *bindings, Figures *f) {
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, bindings, NULL);
  if (!a)
    return;
  weir_figure_set(&f->bytes, &a->total_bytes);
  weir_figure_set(&f->flops, &a->total_flops);
  weir_figure_set(&f->peak, &a->peak_transient_bytes);
}

/* The data-movement summary printed after every change. */
static void print_summary(const char *path, const WeirSession *s) {
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
  figures_of(g, weir_session_bindings(s), &now);
  figures_of(weir_session_original(s), weir_session_bindings(s), &orig);
  g_autofree char *bytes = format_change(&orig.bytes, &now.bytes, TRUE);
  g_autofree char *flops = format_change(&orig.flops, &now.flops, FALSE);
  g_autofree char *peak = format_change(&orig.peak, &now.peak, TRUE);
  printf("bytes moved            %s  (original -> now)\n", bytes);
  printf("FLOPs                  %s\n", flops);
  printf("peak transient memory  %s\n", peak);
  figures_clear(&now);
  figures_clear(&orig);
}

/* -------------------------------------------------------------------- new */

static int cmd_new(int argc, char **argv) {
  if (!parse_options("new", "MODEL -o WS.weir", new_entries, &argc, &argv))
    return 2;
  if (argc != 2 || !output_path) {
    fprintf(stderr, "usage: weir new MODEL -o WS.weir [--force] "
                    "[-D SYM=VALUE]...\n");
    return 2;
  }
  if (!is_workspace_path(output_path)) {
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
  g_autoptr(GHashTable) bindings = parse_defines(&error);
  if (!bindings) {
    print_error("new", error);
    return 2;
  }
  WeirOnnxImportOptions opts = {.symbols = bindings};
  g_autoptr(WeirGraph) g = load_program_with("new", argv[1], &opts);
  if (!g)
    return 1;
  g_autoptr(WeirSession) s = weir_session_new(g, argv[1], bindings, &error);
  if (!s) {
    fprintf(stderr, "weir new: %s: %s\n", argv[1], error->message);
    return 1;
  }
  if (!save_workspace("new", s, output_path))
    return 1;
  print_summary(output_path, s);
  return 0;
}

/* ------------------------------------------------------- apply (workspace) */

/* Parses "7", "7,9,12" or "3:7,9" into site; FALSE when text is not of
 * that form. */
static gboolean parse_site_ids(const WeirGraph *g, const char *text,
                               WeirSite *site, GError **error) {
  const char *colon = strchr(text, ':');
  const char *list = colon ? colon + 1 : text;
  for (const char *c = text; *c; c++)
    if (!g_ascii_isdigit(*c) && *c != ',' && *c != ':')
      return FALSE;
  memset(site, 0, sizeof *site);
  g_auto(GStrv) items = g_strsplit(list, ",", -1);
  for (guint i = 0; items[i]; i++) {
    guint64 v;
    if (site->n_nodes == WEIR_SITE_MAX_NODES ||
        !g_ascii_string_to_unsigned(items[i], 10, 1, G_MAXUINT, &v, NULL)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--site %s: expected node ids such as 7,9 or STATE:7,9",
                  text);
      return TRUE;
    }
    site->nodes[site->n_nodes++] = (guint)v;
  }
  if (colon) {
    guint64 v;
    g_autofree char *st = g_strndup(text, (gsize)(colon - text));
    if (!g_ascii_string_to_unsigned(st, 10, 1, G_MAXUINT, &v, NULL)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--site %s: bad state id", text);
      return TRUE;
    }
    site->state = (guint)v;
  } else {
    WeirState *st = NULL;
    if (!weir_graph_node(g, site->nodes[0], &st)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--site %s: the program has no node %u", text,
                  site->nodes[0]);
      return TRUE;
    }
    site->state = st->id;
  }
  return TRUE;
}

static void list_sites(GString *out, const WeirGraph *g, GArray *sites,
                       const GArray *which) {
  guint n = which ? which->len : sites->len;
  for (guint i = 0; i < n && i < 12; i++) {
    guint k = which ? g_array_index(which, guint, i) : i;
    g_autofree char *d =
        weir_site_describe(g, &g_array_index(sites, WeirSite, k));
    g_string_append_printf(out, "\n  @%u  %s", k, d);
  }
  if (n > 12)
    g_string_append_printf(out, "\n  ... and %u more", n - 12);
}

/* Resolves --site (text may be NULL) against t's sites in g. */
static gboolean resolve_site(const WeirTransformInfo *t, const WeirGraph *g,
                             const char *text, WeirSite *site, GError **error) {
  g_autoptr(GError) local = NULL;
  if (text && parse_site_ids(g, text, site, &local)) {
    if (local) {
      g_propagate_error(error, g_steal_pointer(&local));
      return FALSE;
    }
    return TRUE;
  }
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  if (text && text[0] == '@') {
    guint64 k;
    if (!g_ascii_string_to_unsigned(text + 1, 10, 0, G_MAXUINT, &k, NULL) ||
        k >= sites->len) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--site %s: %s has %u site%s (@0..@%u)", text, t->name,
                  sites->len, sites->len == 1 ? "" : "s",
                  sites->len ? sites->len - 1 : 0);
      return FALSE;
    }
    *site = g_array_index(sites, WeirSite, k);
    return TRUE;
  }
  g_autoptr(GArray) which = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GPatternSpec) spec = text ? g_pattern_spec_new(text) : NULL;
  for (guint k = 0; k < sites->len; k++) {
    const WeirSite *c = &g_array_index(sites, WeirSite, k);
    const WeirState *st = weir_graph_state(g, c->state);
    const WeirNode *n =
        st && c->n_nodes ? weir_state_node(st, c->nodes[0]) : NULL;
    if (!spec || (n && g_pattern_spec_match_string(spec, n->label)))
      g_array_append_val(which, k);
  }
  if (which->len == 1) {
    *site = g_array_index(sites, WeirSite, g_array_index(which, guint, 0));
    return TRUE;
  }
  GString *msg = g_string_new(NULL);
  if (which->len == 0)
    g_string_append_printf(msg, "%s: no site%s%s", t->name,
                           text ? " whose first node matches " : "",
                           text ? text : " in this program");
  else {
    g_string_append_printf(msg,
                           "%s: %u sites%s%s; choose one with --site:", t->name,
                           which->len, text ? " match " : "", text ? text : "");
    list_sites(msg, g, sites, which);
  }
  g_set_error_literal(error, WEIR_ERROR, WEIR_ERROR_INVALID, msg->str);
  g_string_free(msg, TRUE);
  return FALSE;
}

/* weir apply WS.weir NAME: a new step in the workspace's history. */
static int apply_workspace(const char *path, const char *name) {
  if (output_path) {
    fprintf(stderr,
            "weir apply: %s: a workspace is saved in place (-o is "
            "for program files)\n",
            path);
    return 2;
  }
  g_autoptr(WeirSession) s = open_workspace("apply", path);
  if (!s)
    return 1;
  load_transformations("apply");
  const WeirTransformInfo *t = weir_transform_lookup(name);
  if (!t) {
    fprintf(stderr,
            "weir apply: unknown transformation '%s' (see 'weir transforms "
            "%s')\n",
            name, path);
    return 1;
  }
  g_autoptr(GError) error = NULL;
  WeirSite site;
  if (!resolve_site(t, weir_session_current(s), site_arg, &site, &error)) {
    print_error("apply", error);
    return 1;
  }
  const WeirStep *st = weir_session_apply(
      s, t->name, &site, (const char *const *)param_args, &error);
  if (!st) {
    print_error("apply", error);
    return 1;
  }
  g_autofree char *bytes =
      format_change(&st->bytes_before, &st->bytes_after, TRUE);
  g_autofree char *flops =
      format_change(&st->flops_before, &st->flops_after, FALSE);
  printf("step %u: %s at %s (%s) in %.3f s\n  bytes moved %s, FLOPs %s\n",
         st->index, st->transform, st->site_text, st->params, st->seconds,
         bytes, flops);
  if (!save_workspace("apply", s, path))
    return 1;
  print_summary(path, s);
  return 0;
}

/* ------------------------------------------------------ undo, redo, goto */

/* Opens, moves the cursor with move(), saves, prints. */
static int move_cursor(const char *cmd, const char *path,
                       gboolean (*move)(WeirSession *, GError **),
                       const char *target) {
  g_autoptr(WeirSession) s = open_workspace(cmd, path);
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
  if (!save_workspace(cmd, s, path))
    return 1;
  print_summary(path, s);
  return 0;
}

/* weir undo|redo WS.weir */
static int step_once(const char *cmd, int argc, char **argv,
                     gboolean (*move)(WeirSession *, GError **)) {
  if (!parse_options(cmd, "WS.weir", NULL, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir %s WS.weir\n", cmd);
    return 2;
  }
  return move_cursor(cmd, argv[1], move, NULL);
}

static int cmd_undo(int argc, char **argv) {
  return step_once("undo", argc, argv, weir_session_undo);
}

static int cmd_redo(int argc, char **argv) {
  return step_once("redo", argc, argv, weir_session_redo);
}

static int cmd_goto(int argc, char **argv) {
  if (!parse_options("goto", "WS.weir K|BOOKMARK", NULL, &argc, &argv))
    return 2;
  if (argc != 3) {
    fprintf(stderr, "usage: weir goto WS.weir K|BOOKMARK\n");
    return 2;
  }
  return move_cursor("goto", argv[1], NULL, argv[2]);
}

/* ---------------------------------------------------------------- history */

static int cmd_history(int argc, char **argv) {
  if (!parse_options("history", "WS.weir", history_entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir history WS.weir [--export-recipe R.json]\n");
    return 2;
  }
  g_autoptr(WeirSession) s = open_workspace("history", argv[1]);
  if (!s)
    return 1;
  guint cursor = weir_session_cursor(s);
  Table *t = table_new(7);
  table_row(t, g_strdup(""), g_strdup("step"), g_strdup("transformation"),
            g_strdup("site"), g_strdup("parameters"), g_strdup("bytes moved"),
            g_strdup("bookmark"));
  table_row(t, g_strdup(cursor == 0 ? ">" : ""), g_strdup("0"),
            g_strdup("(original)"),
            g_strdup(weir_session_source(s) ? weir_session_source(s) : ""),
            g_strdup(""), g_strdup(""),
            g_strdup(weir_session_original_bookmark(s)
                         ? weir_session_original_bookmark(s)
                         : ""));
  for (guint k = 1; k <= weir_session_n_steps(s); k++) {
    const WeirStep *st = weir_session_step(s, k);
    table_row(t, g_strdup(k == cursor ? ">" : ""), g_strdup_printf("%u", k),
              g_strdup(st->transform), g_strdup(st->site_text),
              g_strdup(st->params),
              format_change(&st->bytes_before, &st->bytes_after, TRUE),
              g_strdup(st->bookmark ? st->bookmark : ""));
  }
  table_print(t);
  guint n = weir_session_n_steps(s);
  if (cursor + 1 == n)
    printf("(step %u can be redone)\n", n);
  else if (cursor < n)
    printf("(steps %u..%u can be redone)\n", cursor + 1, n);
  if (export_path) {
    load_transformations("history");
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirRecipe) r = weir_session_export_recipe(s, &error);
    if (!r || !weir_recipe_save(r, export_path, &error)) {
      print_error("history", error);
      return 1;
    }
    printf("exported steps 1..%u to %s\n", cursor, export_path);
  }
  return 0;
}

/* --------------------------------------------------------------- bookmark */

static int cmd_bookmark(int argc, char **argv) {
  if (!parse_options("bookmark", "WS.weir NAME", bookmark_entries, &argc,
                     &argv))
    return 2;
  if (argc != 3) {
    fprintf(stderr, "usage: weir bookmark WS.weir NAME [--step K]\n");
    return 2;
  }
  g_autoptr(WeirSession) s = open_workspace("bookmark", argv[1]);
  if (!s)
    return 1;
  guint step =
      bookmark_step >= 0 ? (guint)bookmark_step : weir_session_cursor(s);
  g_autoptr(GError) error = NULL;
  if (!weir_session_bookmark(s, step, argv[2], &error)) {
    fprintf(stderr, "weir bookmark: %s: %s\n", argv[1], error->message);
    return 1;
  }
  if (!save_workspace("bookmark", s, argv[1]))
    return 1;
  printf("bookmark '%s' on step %u\n", argv[2], step);
  print_summary(argv[1], s);
  return 0;
}

/* --------------------------------------------------------------- optimize */

static int cmd_optimize(int argc, char **argv) {
  if (!parse_options("optimize", "MODEL --recipe R.json", optimize_entries,
                     &argc, &argv))
    return 2;
  if (argc != 2 || !recipe_path) {
    fprintf(stderr, "usage: weir optimize MODEL --recipe R.json "
                    "[-o OUT.weir|OUT.json] [--report] [-D SYM=VALUE]...\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = parse_defines(&error);
  if (!bindings) {
    print_error("optimize", error);
    return 2;
  }
  g_autoptr(WeirRecipe) recipe = weir_recipe_load(recipe_path, &error);
  if (!recipe) {
    print_error("optimize", error);
    return 1;
  }
  WeirOnnxImportOptions opts = {.symbols = bindings};
  g_autoptr(WeirGraph) g = load_program_with("optimize", argv[1], &opts);
  if (!g)
    return 1;
  load_transformations("optimize");
  g_autoptr(WeirRecipeReport) report = weir_recipe_report_new();
  g_autoptr(WeirSession) s = NULL;
  gboolean ok;
  if (output_path && is_workspace_path(output_path)) {
    s = weir_session_new(g, argv[1], bindings, &error);
    ok = s && weir_recipe_apply_session(s, recipe, report, &error);
  } else {
    ok = weir_recipe_apply(g, recipe, bindings, report, &error);
  }
  if (show_report || !ok) {
    g_autofree char *text = weir_recipe_report_to_text(report);
    printf("%s", text);
  }
  if (!ok) {
    print_error("optimize", error);
    return 1;
  }
  guint applied = 0;
  for (guint i = 0; i < report->steps->len; i++)
    applied += ((WeirRecipeStepReport *)g_ptr_array_index(report->steps, i))
                   ->applied->len;
  g_autofree char *bytes =
      format_change(&report->bytes_before, &report->bytes_after, TRUE);
  g_autofree char *flops =
      format_change(&report->flops_before, &report->flops_after, FALSE);
  printf("%s: %u recipe step%s, %u application%s\n  bytes moved %s\n  "
         "FLOPs       %s\n",
         recipe_path, report->steps->len, report->steps->len == 1 ? "" : "s",
         applied, applied == 1 ? "" : "s", bytes, flops);
  if (output_path) {
    gboolean saved = s ? weir_workspace_save(s, output_path, &error)
                       : weir_graph_save(g, output_path, &error);
    if (!saved) {
      print_error("optimize", error);
      return 1;
    }
    printf("wrote %s\n", output_path);
  }
  return 0;
}

/* ----------------------------------------------------------------- export */

static const GOptionEntry export_entries[] = {
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
     "The directory to write", "DIR"},
    {"force", 0, 0, G_OPTION_ARG_NONE, &force,
     "Replace a directory that is not empty", NULL},
    {"impl", 0, 0, G_OPTION_ARG_STRING_ARRAY, &impl_specs,
     "Implementation of every node of OP: pure, blas, im2col, direct "
     "(repeatable)",
     "OP=IMPL"},
    {"seed", 0, 0, G_OPTION_ARG_INT64, &seed,
     "Seed of the generated inputs (default 1)", "N"},
    {"input", 0, 0, G_OPTION_ARG_STRING_ARRAY, &input_specs,
     "An input from a tensor file (.npy or .pb), stored in DIR/data",
     "NAME=FILE"},
    {"expect", 0, 0, G_OPTION_ARG_STRING_ARRAY, &expect_specs,
     "An expected output from a tensor file instead of the interpreter's",
     "NAME=FILE"},
    {"rtol", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rtol,
     "Relative tolerance of the harness (default 1e-4; integers exact)", "R"},
    {"atol", 0, 0, G_OPTION_ARG_DOUBLE, &opt_atol,
     "Absolute tolerance of the harness (default 1e-5)", "A"},
    {NULL}};

static gint compare_key_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys of a table keyed by strings, sorted (borrowed strings). */
static GPtrArray *sorted_keys(GHashTable *table) {
  GPtrArray *keys = g_ptr_array_new();
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init(&it, table);
  while (g_hash_table_iter_next(&it, &k, NULL))
    g_ptr_array_add(keys, k);
  g_ptr_array_sort(keys, compare_key_strings);
  return keys;
}

/* Loads the tensor files of specs (NAME=FILE) into a table keyed by the
 * name given; NULL after printing the problem. */
static GHashTable *load_specs(const char *option, char **specs) {
  GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                        (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; specs && specs[i]; i++) {
    g_autofree char *name = NULL, *path = NULL;
    g_autoptr(GError) error = NULL;
    if (!split_spec("export", option, specs[i], &name, &path)) {
      g_hash_table_unref(t);
      return NULL;
    }
    WeirTensor *x = weir_tensor_load(path, NULL, &error);
    if (!x) {
      print_error("export", error);
      g_hash_table_unref(t);
      return NULL;
    }
    g_hash_table_replace(t, g_steal_pointer(&name), x);
  }
  return t;
}

/* The tensors of given (keyed by the names the user gave: containers, ONNX
 * names or access-node labels) keyed by container name (borrowed from g);
 * the tensors are borrowed from given.  NULL after printing. */
static GHashTable *by_container(const WeirGraph *g, GHashTable *names,
                                const char *option, GHashTable *given) {
  GHashTable *t = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) keys = sorted_keys(given);
  for (guint i = 0; i < keys->len; i++) {
    const char *name = g_ptr_array_index(keys, i);
    const WeirContainer *c = require_argument("export", g, names, option, name);
    if (!c) {
      g_hash_table_unref(t);
      return NULL;
    }
    g_hash_table_replace(t, c->name, g_hash_table_lookup(given, name));
  }
  return t;
}

static int cmd_export(int argc, char **argv) {
  static const char *const usage_text =
      "usage: weir export WS.weir|FILE(.json|.onnx) -o DIR [--force]\n"
      "                   [--impl OP=IMPL]... [-D SYM=VALUE]... [--seed N]\n"
      "                   [--input NAME=FILE]... [--expect NAME=FILE]...\n"
      "                   [--rtol R] [--atol A]\n";
  if (!parse_options("export", "FILE -o DIR", export_entries, &argc, &argv))
    return 2;
  if (argc != 2 || !output_path) {
    fputs(usage_text, stderr);
    return 2;
  }
  const char *file = argv[1];
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = parse_defines(&error);
  if (!bindings) {
    print_error("export", error);
    return 2;
  }
  g_autoptr(GHashTable) inputs = load_specs("input", input_specs);
  g_autoptr(GHashTable) expects =
      inputs ? load_specs("expect", expect_specs) : NULL;
  if (!expects)
    return 1;

  g_autoptr(WeirSession) session = NULL;
  g_autoptr(WeirGraph) g = NULL;
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  if (is_workspace_path(file)) {
    load_transformations("export");
    session = open_workspace("export", file);
    if (!session)
      return 1;
    g = weir_graph_copy(weir_session_current(session));
    if (!apply_impls("export", g))
      return 1;
  } else {
    g_autoptr(GHashTable) shapes = g_hash_table_new_full(
        g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, inputs);
    while (g_hash_table_iter_next(&it, &k, &v)) {
      const WeirTensor *t = v;
      GArray *shape = g_array_new(FALSE, FALSE, sizeof(gint64));
      g_array_append_vals(shape, t->shape, t->rank);
      g_hash_table_replace(shapes, k, shape);
    }
    WeirOnnxImportOptions opts = {
        .symbols = bindings, .input_shapes = shapes, .names = names};
    g = load_program_with("export", file, &opts);
    if (!g)
      return 1;
  }
  g_autoptr(GHashTable) in = by_container(g, names, "input", inputs);
  g_autoptr(GHashTable) ex =
      in ? by_container(g, names, "expect", expects) : NULL;
  if (!ex)
    return 2;

  WeirExportOptions opts = {.symbols = bindings,
                            .inputs = in,
                            .expected = ex,
                            .seed = (guint64)seed,
                            .rtol = opt_rtol,
                            .atol = opt_atol,
                            .force = force,
                            .source = file,
                            .session = session};
  WeirExportInfo info = {0};
  if (!weir_export(g, output_path, &opts, &info, &error)) {
    print_error("export", error);
    return 1;
  }
  printf("%s -> %s: kernel '%s', %u input%s from files, %u generated "
         "(seed %" G_GINT64_FORMAT "), %u output%s (expected: %s)\n",
         file, output_path, info.prefix, info.n_inputs,
         info.n_inputs == 1 ? "" : "s", info.n_generated, seed, info.n_outputs,
         info.n_outputs == 1 ? "" : "s",
         info.interpreted ? "reference interpreter" : "given");
  for (guint i = 0; i < info.files->len; i++)
    printf("  %s\n", (const char *)g_ptr_array_index(info.files, i));
  printf("build and run: make -C %s && (cd %s && ./harness)\n", output_path,
         output_path);
  weir_export_info_clear(&info);
  return 0;
}

/* ------------------------------------------------------------------ train */

/* ---------------------------------------- training program options
 * Shared by `weir train` and `weir train-graph`: the loss, the optimizer
 * and its hyper-parameters, and which constants are trained. */
static char *tp_loss, *tp_optimizer, *tp_params, *tp_freeze;
static double tp_lr = -1, tp_momentum = -1, tp_weight_decay = -1;
static double tp_beta1 = -1, tp_beta2 = -1, tp_epsilon = -1;

static const GOptionEntry train_program_entries[] = {
    {"loss", 0, 0, G_OPTION_ARG_STRING, &tp_loss,
     "softmax-cross-entropy (class labels) or mse (float targets: "
     "regression)",
     "LOSS"},
    {"optimizer", 0, 0, G_OPTION_ARG_STRING, &tp_optimizer,
     "sgd, momentum or adam", "OPT"},
    {"lr", 0, 0, G_OPTION_ARG_DOUBLE, &tp_lr, "Learning rate (default 0.01)",
     "X"},
    {"momentum", 0, 0, G_OPTION_ARG_DOUBLE, &tp_momentum,
     "Momentum (default 0.9)", "X"},
    {"beta1", 0, 0, G_OPTION_ARG_DOUBLE, &tp_beta1, "Adam beta1 (default 0.9)",
     "X"},
    {"beta2", 0, 0, G_OPTION_ARG_DOUBLE, &tp_beta2,
     "Adam beta2 (default 0.999)", "X"},
    {"epsilon", 0, 0, G_OPTION_ARG_DOUBLE, &tp_epsilon,
     "Adam epsilon (default 1e-8)", "X"},
    {"weight-decay", 0, 0, G_OPTION_ARG_DOUBLE, &tp_weight_decay,
     "L2 weight decay added to the gradient (default 0)", "X"},
    {"params", 0, 0, G_OPTION_ARG_STRING, &tp_params,
     "Train the float constants whose container or ONNX initializer name "
     "matches REGEX (default: the ONNX initializers, docs/training.md)",
     "REGEX"},
    {"freeze", 0, 0, G_OPTION_ARG_STRING, &tp_freeze,
     "Do not train the parameters whose name matches REGEX", "REGEX"},
    {NULL}};

/* Applies the options above to o (set by weir_train_options_init); FALSE
 * after printing on an unknown loss or optimizer. */
static gboolean train_program_options(const char *cmd, WeirTrainOptions *o) {
  if (tp_loss && !weir_loss_from_name(tp_loss, &o->loss)) {
    fprintf(stderr, "weir %s: unknown loss '%s' (softmax-cross-entropy, mse)\n",
            cmd, tp_loss);
    return FALSE;
  }
  if (tp_optimizer && !weir_optimizer_from_name(tp_optimizer, &o->optimizer)) {
    fprintf(stderr, "weir %s: unknown optimizer '%s' (sgd, momentum, adam)\n",
            cmd, tp_optimizer);
    return FALSE;
  }
  if (tp_lr >= 0)
    o->lr = tp_lr;
  if (tp_momentum >= 0)
    o->momentum = tp_momentum;
  if (tp_weight_decay >= 0)
    o->weight_decay = tp_weight_decay;
  if (tp_beta1 >= 0)
    o->beta1 = tp_beta1;
  if (tp_beta2 >= 0)
    o->beta2 = tp_beta2;
  if (tp_epsilon >= 0)
    o->epsilon = tp_epsilon;
  o->params = tp_params;
  o->freeze = tp_freeze;
  return TRUE;
}

static char *fit_data, *fit_label, *fit_scale;
static char *fit_recipe, *fit_output;
static char *fit_target_columns, *fit_target_file;
static gint64 fit_targets = -1;
static gboolean fit_standardize;
static gint64 fit_epochs = 10, fit_batch = 32, fit_k = 1;
static gint64 fit_seed = 1;
static gint fit_threads;
static double fit_val_fraction = 0.2;
static gboolean fit_quiet;

static const GOptionEntry fit_entries[] = {
    {"data", 0, 0, G_OPTION_ARG_FILENAME, &fit_data,
     "Training data: .csv, .csv.gz or .npy (samples x columns)", "FILE"},
    {"label", 0, 0, G_OPTION_ARG_STRING, &fit_label,
     "Label column: header name or index (negative from the end; default: "
     "the last column)",
     "COL"},
    {"epochs", 0, 0, G_OPTION_ARG_INT64, &fit_epochs, "Epochs (default 10)",
     "N"},
    {"batch", 0, 0, G_OPTION_ARG_INT64, &fit_batch,
     "Samples per step (default 32)", "B"},
    {"target-columns", 0, 0, G_OPTION_ARG_STRING, &fit_target_columns,
     "mse: the target columns, comma-separated header names or indices "
     "(default: the last column)",
     "COLS"},
    {"targets", 0, 0, G_OPTION_ARG_INT64, &fit_targets,
     "mse: the last N columns are the targets (default 1)", "N"},
    {"target-file", 0, 0, G_OPTION_ARG_FILENAME, &fit_target_file,
     "mse: the targets are the columns of FILE (.csv, .csv.gz, .npy; one row "
     "per sample); every column of --data is a feature",
     "FILE"},
    {"standardize", 0, 0, G_OPTION_ARG_NONE, &fit_standardize,
     "Standardize the features (and mse targets) to mean 0, std 1 with the "
     "training split's statistics",
     NULL},
    {"seed", 0, 0, G_OPTION_ARG_INT64, &fit_seed,
     "Seed of the split and the shuffles (default 1)", "S"},
    {"threads", 0, 0, G_OPTION_ARG_INT, &fit_threads,
     "OpenMP threads (default: OMP_NUM_THREADS or all)", "T"},
    {"steps-per-call", 'k', 0, G_OPTION_ARG_INT64, &fit_k,
     "Steps run by one call of the compiled program (default 1)", "K"},
    {"val-fraction", 0, 0, G_OPTION_ARG_DOUBLE, &fit_val_fraction,
     "Fraction of the samples held out for evaluation (default 0.2)", "F"},
    {"scale", 0, 0, G_OPTION_ARG_STRING, &fit_scale,
     "Multiply every feature by S (a number or a fraction: 1/16)", "S"},
    {"recipe", 'r', 0, G_OPTION_ARG_FILENAME, &fit_recipe,
     "Apply a recipe to the training program before compiling it", "FILE"},
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &fit_output,
     "Write the trained model (ONNX) here", "FILE"},
    {"quiet", 'q', 0, G_OPTION_ARG_NONE, &fit_quiet,
     "Print only the final summary", NULL},
    {NULL}};

/* "0.5", "1/16" */
static gboolean parse_scale(const char *text, double *out) {
  char *end = NULL;
  double num = g_ascii_strtod(text, &end);
  if (end == text)
    return FALSE;
  if (*end == '/') {
    const char *rest = end + 1;
    double den = g_ascii_strtod(rest, &end);
    if (end == rest || den == 0)
      return FALSE;
    num /= den;
  }
  if (*end != '\0')
    return FALSE;
  *out = num;
  return TRUE;
}

typedef struct {
  gboolean tty;
  gboolean quiet;
  double last_val_accuracy;
  double last_val_mse, last_val_r2; /* mse: the last held-out figures */
  gint64 last_draw; /* monotonic µs of the last progress line */
} TrainPrinter;

static void print_progress(const WeirTrainProgress *p, gpointer user_data) {
  TrainPrinter *pr = user_data;
  if (p->epoch_done) {
    pr->last_val_accuracy = p->val_accuracy;
    pr->last_val_mse = p->val_loss;
    pr->last_val_r2 = p->val_r2;
    if (pr->quiet)
      return;
    if (pr->tty)
      printf("\r\033[K");
    printf("epoch %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
           ": loss %.4f, %.0f samples/s, %.2f s",
           p->epoch, p->epochs, p->epoch_loss, p->samples_per_second,
           p->epoch_seconds);
    if (p->val_accuracy >= 0)
      printf(", held-out accuracy %.2f%% (loss %.4f)", 100 * p->val_accuracy,
             p->val_loss);
    else if (!isnan(p->val_r2))
      printf(", held-out MSE %.4g (R\u00b2 %.4f)", p->val_loss, p->val_r2);
    if (p->skipped)
      printf(", %" G_GINT64_FORMAT " steps skipped", p->skipped);
    printf("\n");
    fflush(stdout);
    return;
  }
  if (!pr->tty || pr->quiet)
    return;
  /* redraw at most ten times a second, and at the end of the epoch */
  gint64 now = g_get_monotonic_time();
  if (now - pr->last_draw < 100000 && p->step < p->steps_per_epoch)
    return;
  pr->last_draw = now;
  int width = 24;
  int done = (int)(width * p->step / MAX(p->steps_per_epoch, 1));
  char bar[32];
  for (int i = 0; i < width; i++)
    bar[i] = i < done ? '#' : '.';
  bar[width] = '\0';
  printf("\r\033[Kepoch %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
         " [%s] step %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
         "  loss %.4f  %.0f samples/s",
         p->epoch, p->epochs, bar, p->step, p->steps_per_epoch, p->loss,
         p->samples_per_second);
  fflush(stdout);
}

static int cmd_train(int argc, char **argv) {
  static const char *const usage_text =
      "usage: weir train MODEL.onnx --data FILE -o OUT.onnx [--label COL]\n"
      "                  [--epochs N] [--batch B] [--optimizer "
      "sgd|momentum|adam]\n"
      "                  [--lr LR] [--momentum M] [--beta1 B1] [--beta2 B2]\n"
      "                  [--epsilon E] [--weight-decay WD] [--seed S]\n"
      "                  [--threads T] [--steps-per-call K] "
      "[--val-fraction F]\n"
      "                  [--scale S] [--standardize] [--recipe R.json]\n"
      "                  [--loss mse [--target-columns COLS | --targets N |\n"
      "                   --target-file FILE]] [--params REGEX] "
      "[--freeze REGEX]\n"
      "                  [--cc CC] [--cflags FLAGS]\n";
  const GOptionEntry *const extras[] = {fit_entries, train_program_entries,
                                        compile_entries, NULL};
  if (!parse_options_with("train", "MODEL.onnx", extras, &argc, &argv))
    return 2;
  if (argc != 2 || !fit_data || !fit_output) {
    fputs(usage_text, stderr);
    return 2;
  }
  const char *model = argv[1];
  g_autoptr(GError) error = NULL;

  WeirTrainerOptions o;
  weir_trainer_options_init(&o);
  if (!train_program_options("train", &o.train))
    return 2;
  gboolean mse = o.train.loss == WEIR_LOSS_MSE;
  if (!mse && (fit_target_columns || fit_target_file || fit_targets >= 0)) {
    fprintf(stderr, "weir train: --target-columns, --targets and "
                    "--target-file need --loss mse\n");
    return 2;
  }
  if (!!fit_target_columns + !!fit_target_file + (fit_targets >= 0) > 1) {
    fprintf(stderr, "weir train: give one of --target-columns, --targets "
                    "and --target-file\n");
    return 2;
  }
  if (mse && fit_label) {
    fprintf(stderr, "weir train: --label is for class labels; with --loss "
                    "mse name the targets with --target-columns\n");
    return 2;
  }
  if (fit_targets == 0) {
    fprintf(stderr, "weir train: --targets must be positive\n");
    return 2;
  }
  o.epochs = fit_epochs;
  o.batch = fit_batch;
  o.steps_per_call = fit_k;
  o.seed = (guint64)fit_seed;
  o.threads = fit_threads;
  o.compile = compile_options();
  o.recipe_path = fit_recipe;
  double scale = 1;
  if (fit_scale && !parse_scale(fit_scale, &scale)) {
    fprintf(stderr, "weir train: --scale %s: expected a number or A/B\n",
            fit_scale);
    return 2;
  }
  if (fit_epochs < 0 || fit_batch <= 0 || fit_k <= 0) {
    fprintf(stderr, "weir train: --epochs, --batch and --steps-per-call "
                    "must be positive\n");
    return 2;
  }

  g_autoptr(WeirDataset) data =
      !mse
          ? weir_dataset_load(fit_data, fit_label, &error)
          : weir_dataset_load_targets(fit_data, fit_target_columns,
                                      fit_target_file ? 0 : MAX(fit_targets, 1),
                                      &error);
  if (!data || (fit_target_file &&
                !weir_dataset_attach_targets(data, fit_target_file, &error))) {
    print_error("train", error);
    return 1;
  }
  if (scale != 1)
    weir_dataset_scale(data, scale);
  weir_dataset_shuffle(data, (guint64)fit_seed);
  WeirDataset *train_set = NULL, *val_set = NULL;
  if (!weir_dataset_split(data, fit_val_fraction, &train_set, &val_set,
                          &error)) {
    print_error("train", error);
    return 1;
  }
  g_autoptr(WeirDataset) train = train_set;
  g_autoptr(WeirDataset) val = val_set;
  if (fit_standardize)
    weir_dataset_standardize(train, val, TRUE, mse);
  if (mse)
    printf("%s: %" G_GINT64_FORMAT " samples of %" G_GINT64_FORMAT
           " features, %" G_GINT64_FORMAT " target%s (%s%s): %" G_GINT64_FORMAT
           " for training, %" G_GINT64_FORMAT " held out%s\n",
           fit_data, data->n_samples, data->n_features, data->n_targets,
           data->n_targets == 1 ? "" : "s",
           fit_target_file ? "file " : "column ", data->label_column,
           train->n_samples, val->n_samples,
           fit_standardize ? ", standardized" : "");
  else
    printf("%s: %" G_GINT64_FORMAT " samples of %" G_GINT64_FORMAT
           " features, %" G_GINT64_FORMAT
           " classes (label column %s): %" G_GINT64_FORMAT
           " for training, %" G_GINT64_FORMAT " held out%s\n",
           fit_data, data->n_samples, data->n_features, data->n_classes,
           data->label_column, train->n_samples, val->n_samples,
           fit_standardize ? ", features standardized" : "");

  gint64 t0 = g_get_monotonic_time();
  TrainPrinter printer = {.tty = isatty(fileno(stdout)),
                          .quiet = fit_quiet,
                          .last_val_accuracy = -1,
                          .last_val_r2 = NAN};
  o.progress = print_progress;
  o.user_data = &printer;
  g_autoptr(WeirTrainer) trainer =
      weir_trainer_new(model, data->n_features, &o, &error);
  if (!trainer) {
    print_compile_error("train", model, error);
    return 1;
  }
  g_autofree char *took =
      format_seconds((double)(g_get_monotonic_time() - t0) / 1e6);
  const WeirGraph *prog = weir_trainer_program(trainer);
  printf("%s: training program with %u containers built and compiled in %s "
         "(batch %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
         " step%s per call, %s, lr %g)\n",
         model, prog->containers->len, took, fit_batch, fit_k,
         fit_k == 1 ? "" : "s", tp_optimizer ? tp_optimizer : "sgd",
         o.train.lr);
  fflush(stdout);

  t0 = g_get_monotonic_time();
  if (!weir_trainer_fit(trainer, train, val, &error)) {
    if (printer.tty)
      printf("\n");
    print_error("train", error);
    return 1;
  }
  double secs = (double)(g_get_monotonic_time() - t0) / 1e6;
  if (!weir_trainer_save_onnx(trainer, fit_output, &error)) {
    print_error("train", error);
    return 1;
  }
  printf("trained %" G_GINT64_FORMAT " steps in %.2f s",
         weir_trainer_steps(trainer), secs);
  if (printer.last_val_accuracy >= 0)
    printf(", held-out accuracy %.2f%%", 100 * printer.last_val_accuracy);
  else if (!isnan(printer.last_val_r2))
    printf(", held-out MSE %.4g, R\u00b2 %.4f", printer.last_val_mse,
           printer.last_val_r2);
  if (weir_trainer_skipped(trainer))
    printf(", %" G_GINT64_FORMAT " steps skipped (non-finite)",
           weir_trainer_skipped(trainer));
  printf("\nwrote %s\n", fit_output);
  return 0;
}

/* ------------------------------------------------------------------- main */

static void usage(FILE *out) {
  fprintf(out, "usage: weir COMMAND [ARGS...]\n\nCommands:\n");
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(out, "  %-11s %-42s %s\n", commands[i].name, commands[i].args,
            commands[i].summary);
  fprintf(out, "\n'weir COMMAND --help' describes the options of a "
               "command; 'weir --version' prints the version.\n");
}

int main(int argc, char **argv) {
  setlocale(LC_ALL, "");
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0 ||
      strcmp(argv[1], "-h") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("weir %s\n", weir_version());
    return 0;
  }
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++) {
    if (strcmp(argv[1], commands[i].name) == 0)
      return commands[i].run(argc - 1, argv + 1);
  }
  fprintf(stderr, "weir: unknown command '%s'\n\n", argv[1]);
  usage(stderr);
  return 2;
}

/* ------------------------------------------------------------ train-graph */

static char *train_target, *train_output;
static gint64 train_steps = 0;

static const GOptionEntry train_graph_entries[] = {
    {"target", 0, 0, G_OPTION_ARG_STRING, &train_target,
     "Name of the target argument (default: target)", "NAME"},
    {"output", 0, 0, G_OPTION_ARG_STRING, &train_output,
     "Forward output the loss reads (default: the only one)", "NAME"},
    {"steps", 0, 0, G_OPTION_ARG_INT64, &train_steps,
     "Fix the number of steps per call (default: symbol K)", "K"},
    {"output-file", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
     "Write the training program (.json) or a workspace (.weir)", "FILE"},
    {NULL}};

static int cmd_train_graph(int argc, char **argv) {
  const GOptionEntry *const extras[] = {train_graph_entries,
                                        train_program_entries, NULL};
  if (!parse_options_with("train-graph", "MODEL -o OUT", extras, &argc, &argv))
    return 2;
  if (argc != 2 || !output_path || !tp_loss || !tp_optimizer) {
    fprintf(stderr,
            "usage: weir train-graph MODEL.onnx --loss "
            "{softmax-cross-entropy,mse} [--target NAME] [--output NAME] "
            "--optimizer {sgd,momentum,adam} [--lr X] [--momentum X] "
            "[--beta1 X] [--beta2 X] [--epsilon X] [--weight-decay X] [--steps "
            "K] [--params REGEX] "
            "[--freeze REGEX] -o TRAIN.json|TRAIN.weir\n");
    return 2;
  }
  WeirTrainOptions o;
  weir_train_options_init(&o);
  if (!train_program_options("train-graph", &o))
    return 2;
  if (train_steps < 0) {
    fprintf(stderr, "weir train-graph: --steps must be positive\n");
    return 2;
  }
  o.target = train_target;
  o.output = train_output;
  o.steps = train_steps;
  g_autoptr(WeirGraph) fwd = load_program("train-graph", argv[1]);
  if (!fwd)
    return 1;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) t = weir_train_graph(fwd, &o, &error);
  if (!t || !weir_graph_validate(t, &error)) {
    fprintf(stderr, "weir train-graph: %s: %s\n", argv[1], error->message);
    return 1;
  }
  g_auto(GStrv) params = weir_train_select_parameters(fwd, &o, NULL);
  if (is_workspace_path(output_path)) {
    g_autoptr(WeirSession) s = weir_session_new(t, argv[1], NULL, &error);
    if (!s) {
      print_error("train-graph", error);
      return 1;
    }
    if (!save_workspace("train-graph", s, output_path))
      return 1;
  } else if (!weir_graph_save(t, output_path, &error)) {
    print_error("train-graph", error);
    return 1;
  }
  printf("%s -> %s: training program '%s', %u parameters, %s loss, %s, "
         "%u states\n",
         argv[1], output_path, t->name, g_strv_length(params), tp_loss,
         tp_optimizer, t->states->len);
  return 0;
}
