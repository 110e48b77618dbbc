/* weir.c — the `weir` command-line program.
 *
 * A thin client of libweir: every subcommand parses its options, calls the
 * library and prints the result.  Errors from the library arrive as GErrors
 * and are printed here, once, with a non-zero exit status.
 *
 *   weir info FILE [-D SYM=VALUE]...        data-movement summary
 *   weir validate FILE                      validate, report every problem
 *   weir run-ref FILE [-D SYM=VALUE]... [--seed N]
 *                                           run the reference interpreter
 *                                           on random inputs
 *
 * Workspaces (*.weir: a model, its history, bookmarks; docs/sessions.md):
 *   weir new MODEL -o WS.weir [--force]     start a workspace (alias: open)
 * MODEL and FILE may also be a workspace: its current program.
 *   weir transforms FILE [--tier N] [--node NAME]
 *                                           transformations and their sites
 *   weir apply WS.weir NAME [--site SITE] [--param K=V]...
 *   weir undo WS.weir | weir redo WS.weir | weir goto WS.weir K|BOOKMARK
 *   weir history WS.weir [--export-recipe R.json]
 *   weir bookmark WS.weir NAME [--step K]
 *   weir optimize MODEL --recipe R.json [-o OUT.weir|OUT.json] [--report]
 * Every command that changes a workspace saves it and prints the
 * data-movement summary of its current program.
 */
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "weir.h"

typedef int (*CommandFunc)(int argc, char **argv);

typedef struct {
  const char *name;
  const char *args;
  const char *summary;
  CommandFunc run;
} Command;

static int cmd_info(int argc, char **argv);
static int cmd_validate(int argc, char **argv);
static int cmd_run_ref(int argc, char **argv);
static int cmd_new(int argc, char **argv);
static int cmd_transforms(int argc, char **argv);
static int cmd_apply(int argc, char **argv);
static int cmd_undo(int argc, char **argv);
static int cmd_redo(int argc, char **argv);
static int cmd_goto(int argc, char **argv);
static int cmd_history(int argc, char **argv);
static int cmd_bookmark(int argc, char **argv);
static int cmd_optimize(int argc, char **argv);

static const Command commands[] = {
    {"info", "FILE [-D SYM=VALUE]...",
     "print containers, data movement, FLOPs and peak memory", cmd_info},
    {"validate", "FILE", "check a program and report every problem",
     cmd_validate},
    {"run-ref", "FILE [-D SYM=VALUE]... [--seed N]",
     "run the reference interpreter on random inputs", cmd_run_ref},
    {"new", "MODEL -o WS.weir [-D SYM=VALUE]...",
     "start a workspace from a model (alias: open)", cmd_new},
    {"open", "MODEL -o WS.weir", "same as new", cmd_new},
    {"transforms", "FILE [--tier N] [--node NAME]",
     "list transformations and where they apply", cmd_transforms},
    {"apply", "WS.weir NAME [--site SITE] [--param K=V]...",
     "apply a transformation (a new history step)", cmd_apply},
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

static const GOptionEntry define_entries[] = {
    {"define", 'D', 0, G_OPTION_ARG_STRING_ARRAY, &defines,
     "Bind a symbol to a value", "SYM=VALUE"},
    {NULL}};

static const GOptionEntry run_entries[] = {
    {"seed", 0, 0, G_OPTION_ARG_INT64, &seed,
     "Seed of the random inputs (default 1)", "N"},
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
static gboolean parse_options(const char *cmd, const char *usage,
                              const GOptionEntry *extra, int *argc,
                              char ***argv) {
  g_autofree char *param = g_strdup_printf("%s %s", cmd, usage);
  g_autoptr(GOptionContext) ctx = g_option_context_new(param);
  g_option_context_add_main_entries(ctx, define_entries, NULL);
  if (extra)
    g_option_context_add_main_entries(ctx, extra, NULL);
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, argc, argv, &error)) {
    fprintf(stderr, "weir %s: %s\n", cmd, error->message);
    return FALSE;
  }
  return TRUE;
}

/* Loads a program file (JSON), reporting errors. */
static WeirGraph *load_program(const char *cmd, const char *path) {
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_load(path, &error);
  if (!g)
    print_error(cmd, error);
  return g;
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
  if (!parse_options("info", "FILE", NULL, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir info FILE [-D SYM=VALUE]...\n");
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
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, bindings, &error);
  if (!a) {
    print_error("info", error);
    return 1;
  }

  printf("program   %s  (%s)\n", g->name, argv[1]);
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
    table_row(t, g_strdup(c->name), g_strdup(weir_dtype_name(c->dtype)),
              shape_text(c),
              g_strdup(c->transient ? "transient"
                                    : (c->initial ? "constant" : "argument")),
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

/* ---------------------------------------------------------------- run-ref */

static int cmd_run_ref(int argc, char **argv) {
  if (!parse_options("run-ref", "FILE", run_entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir run-ref FILE [-D SYM=VALUE]... [--seed N]\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = parse_defines(&error);
  if (!bindings) {
    print_error("run-ref", error);
    return 2;
  }
  g_autoptr(WeirGraph) g = load_program("run-ref", argv[1]);
  if (!g)
    return 1;
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    for (guint d = 0; d < c->shape->len; d++) {
      g_autoptr(GError) local = NULL;
      if (!weir_expr_eval(g_ptr_array_index(c->shape, d), bindings, &shape[d],
                          &local)) {
        fprintf(stderr,
                "weir run-ref: %s: container '%s': %s (bind it with "
                "-D)\n",
                argv[1], c->name, local->message);
        return 2;
      }
    }
    WeirTensor *tensor = weir_tensor_new(c->dtype, c->shape->len, shape);
    weir_tensor_fill_random(tensor, (guint64)seed + c->id);
    g_hash_table_insert(args, c->name, tensor);
  }
  gint64 t0 = g_get_monotonic_time();
  if (!weir_interpret(g, bindings, args, NULL, &error)) {
    fprintf(stderr, "weir run-ref: %s: %s\n", argv[1], error->message);
    return 1;
  }
  gint64 t1 = g_get_monotonic_time();
  printf("%s: interpreted in %.3f s\n", argv[1], (double)(t1 - t0) / 1e6);
  Table *t = table_new(6);
  table_row(t, g_strdup("argument"), g_strdup("type"), g_strdup("sum"),
            g_strdup("min"), g_strdup("max"), g_strdup("first values"));
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    const WeirTensor *x = g_hash_table_lookup(args, c->name);
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
  return 0;
}

/* ------------------------------------------------------------- workspaces */

static char *output_path;
static gboolean force;
static gint tier_filter;
static char *node_filter;
static char *site_text;
static char **param_specs;
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

static const GOptionEntry transforms_entries[] = {
    {"tier", 0, 0, G_OPTION_ARG_INT, &tier_filter,
     "Only transformations of tier N (1-4)", "N"},
    {"node", 0, 0, G_OPTION_ARG_STRING, &node_filter,
     "Only sites with a node of this id or label pattern", "NAME"},
    {NULL}};

static const GOptionEntry apply_entries[] = {
    {"site", 0, 0, G_OPTION_ARG_STRING, &site_text,
     "Where: @K (K-th listed site), node ids 7,9 or STATE:7,9, or a label "
     "pattern of the first node",
     "SITE"},
    {"param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &param_specs,
     "Set a parameter", "K=V"},
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

static gboolean is_workspace_path(const char *path) {
  return g_str_has_suffix(path, ".weir");
}

/* Registers the built-in transformations and loads plugins, reporting
 * refused plugins as warnings. */
static void init_transforms(const char *cmd) {
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func(g_free);
  weir_transforms_init();
  weir_plugins_load(problems);
  for (guint i = 0; i < problems->len; i++)
    fprintf(stderr, "weir %s: warning: %s\n", cmd,
            (const char *)g_ptr_array_index(problems, i));
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

/* A program file, or the current program of a workspace (a copy). */
static WeirGraph *load_any(const char *cmd, const char *path) {
  if (!is_workspace_path(path))
    return load_program(cmd, path);
  g_autoptr(WeirSession) s = open_workspace(cmd, path);
  return s ? weir_graph_copy(weir_session_current(s)) : NULL;
}

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
  g_autoptr(WeirGraph) g = load_any("new", argv[1]);
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

/* ------------------------------------------------------------- transforms */

/* The site has a node whose id is filter (a number) or whose label matches
 * it (a pattern). */
static gboolean site_has_node(const WeirGraph *g, const WeirSite *site,
                              const char *filter, GPatternSpec *spec) {
  guint64 id = 0;
  gboolean numeric =
      g_ascii_string_to_unsigned(filter, 10, 1, G_MAXUINT, &id, NULL);
  const WeirState *s = weir_graph_state(g, site->state);
  for (guint i = 0; i < site->n_nodes && s; i++) {
    const WeirNode *n = weir_state_node(s, site->nodes[i]);
    if (!n)
      continue;
    if (numeric ? n->id == id : g_pattern_spec_match_string(spec, n->label))
      return TRUE;
  }
  return FALSE;
}

static void print_param_specs(const WeirTransformInfo *t) {
  for (guint i = 0; i < t->n_params; i++) {
    const WeirParamSpec *p = &t->params[i];
    static const char *const types[] = {"int",    "float",  "bool",
                                        "string", "choice", "ints"};
    printf("      --param %s=%s  (%s%s%s) %s\n", p->name,
           p->default_value ? p->default_value : "REQUIRED", types[p->type],
           p->type == WEIR_PARAM_CHOICE ? ": " : "",
           p->type == WEIR_PARAM_CHOICE ? p->choices : "",
           p->doc ? p->doc : "");
  }
}

static int cmd_transforms(int argc, char **argv) {
  if (!parse_options("transforms", "FILE", transforms_entries, &argc, &argv))
    return 2;
  if (argc != 2 || tier_filter < 0 || tier_filter > 4) {
    fprintf(stderr, "usage: weir transforms FILE [--tier N] [--node NAME]\n");
    return 2;
  }
  g_autoptr(WeirGraph) g = load_any("transforms", argv[1]);
  if (!g)
    return 1;
  init_transforms("transforms");
  g_autoptr(GPatternSpec) spec =
      node_filter ? g_pattern_spec_new(node_filter) : NULL;
  g_autoptr(GPtrArray) list = weir_transforms_list();
  guint shown = 0;
  for (guint i = 0; i < list->len; i++) {
    const WeirTransformInfo *t = g_ptr_array_index(list, i);
    if (tier_filter && t->tier != (guint)tier_filter)
      continue;
    g_autoptr(GArray) sites = weir_transform_sites(t, g);
    g_autoptr(GArray) keep = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint k = 0; k < sites->len; k++)
      if (!node_filter || site_has_node(g, &g_array_index(sites, WeirSite, k),
                                        node_filter, spec))
        g_array_append_val(keep, k);
    if (node_filter && keep->len == 0)
      continue;
    shown++;
    printf("tier %u  %s — %s\n", t->tier, t->name,
           t->description ? t->description : "");
    print_param_specs(t);
    g_autoptr(GError) perror = NULL;
    g_autoptr(WeirParams) defaults = weir_params_parse(t, NULL, &perror);
    if (keep->len == 0)
      printf("    (no sites)\n");
    for (guint k = 0; k < keep->len; k++) {
      guint idx = g_array_index(keep, guint, k);
      const WeirSite *site = &g_array_index(sites, WeirSite, idx);
      g_autofree char *where = weir_site_describe(g, site);
      g_autofree char *reason = NULL;
      if (!defaults)
        printf("    @%u  %s  (needs parameters)\n", idx, where);
      else if (weir_transform_can_apply(t, g, site, defaults, &reason))
        printf("    @%u  %s\n", idx, where);
      else
        printf("    @%u  %s  (not applicable: %s)\n", idx, where, reason);
    }
  }
  if (shown == 0)
    printf("no transformation%s%s%s\n", node_filter ? " applies to " : "",
           node_filter ? node_filter : " is registered",
           tier_filter ? " in this tier" : "");
  return 0;
}

/* ------------------------------------------------------------------ apply */

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

static int cmd_apply(int argc, char **argv) {
  if (!parse_options("apply", "WS.weir NAME", apply_entries, &argc, &argv))
    return 2;
  if (argc != 3) {
    fprintf(stderr, "usage: weir apply WS.weir NAME [--site SITE] "
                    "[--param K=V]...\n");
    return 2;
  }
  g_autoptr(WeirSession) s = open_workspace("apply", argv[1]);
  if (!s)
    return 1;
  init_transforms("apply");
  const WeirTransformInfo *t = weir_transform_lookup(argv[2]);
  if (!t) {
    fprintf(stderr,
            "weir apply: unknown transformation '%s' (see 'weir transforms "
            "%s')\n",
            argv[2], argv[1]);
    return 1;
  }
  g_autoptr(GError) error = NULL;
  WeirSite site;
  if (!resolve_site(t, weir_session_current(s), site_text, &site, &error)) {
    print_error("apply", error);
    return 1;
  }
  const WeirStep *st = weir_session_apply(
      s, t->name, &site, (const char *const *)param_specs, &error);
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
  if (!save_workspace("apply", s, argv[1]))
    return 1;
  print_summary(argv[1], s);
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

static int cmd_undo(int argc, char **argv) {
  if (!parse_options("undo", "WS.weir", NULL, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir undo WS.weir\n");
    return 2;
  }
  return move_cursor("undo", argv[1], weir_session_undo, NULL);
}

static int cmd_redo(int argc, char **argv) {
  if (!parse_options("redo", "WS.weir", NULL, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir redo WS.weir\n");
    return 2;
  }
  return move_cursor("redo", argv[1], weir_session_redo, NULL);
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
    init_transforms("history");
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
  g_autoptr(WeirGraph) g = load_any("optimize", argv[1]);
  if (!g)
    return 1;
  init_transforms("optimize");
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

/* ------------------------------------------------------------------- main */

static void usage(FILE *out) {
  fprintf(out, "usage: weir COMMAND [ARGS...]\n\nCommands:\n");
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(out, "  %-10s %-44s %s\n", commands[i].name, commands[i].args,
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
