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
 *   weir codegen FILE [-o DIR]              write <prefix>.c and <prefix>.h
 *   weir run FILE [-D ...] [--input NAME=FILE]... [--expect NAME=FILE]...
 *            [--output NAME=FILE]... [--check] [--seed N] [--cc CC]
 *            [--cflags FLAGS]               compile (through the cache) and
 *                                           run; compare with references
 *   weir bench FILE [-D ...] [--threads N] [--reps N] [--warmup N]
 *                                           cold and cached compile time,
 *                                           run time, GFLOP/s and GB/s
 *   weir cache stats|clear                  the compile cache
 *
 * Tensor files are ONNX TensorProto (.pb) or NumPy (.npy).  Random inputs
 * are the same in run-ref, run and bench for the same seed (each argument
 * container is filled with seed + its id).
 */
#include <errno.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "weir-tensor-io.h"
#include "weir.h"

#include <glib/gstdio.h>

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
static int cmd_codegen(int argc, char **argv);
static int cmd_run(int argc, char **argv);
static int cmd_bench(int argc, char **argv);
static int cmd_cache(int argc, char **argv);

static const Command commands[] = {
    {"info", "FILE [-D SYM=VALUE]...",
     "print containers, data movement, FLOPs and peak memory", cmd_info},
    {"validate", "FILE", "check a program and report every problem",
     cmd_validate},
    {"run-ref", "FILE [-D SYM=VALUE]... [--seed N]",
     "run the reference interpreter on random inputs", cmd_run_ref},
    {"codegen", "FILE [-o DIR]", "write the generated C source and header",
     cmd_codegen},
    {"run", "FILE [-D ...] [--input ...] [--check]",
     "compile and run; --check compares with the interpreter", cmd_run},
    {"bench", "FILE [-D ...] [--threads N] [--reps N]",
     "time compiling and running a program", cmd_bench},
    {"cache", "stats|clear", "show or empty the compile cache", cmd_cache},
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
static gboolean parse_options_with(const char *cmd, const char *usage,
                                   const GOptionEntry *extra,
                                   const GOptionEntry *extra2, int *argc,
                                   char ***argv) {
  g_autofree char *param = g_strdup_printf("%s %s", cmd, usage);
  g_autoptr(GOptionContext) ctx = g_option_context_new(param);
  g_option_context_add_main_entries(ctx, define_entries, NULL);
  if (extra)
    g_option_context_add_main_entries(ctx, extra, NULL);
  if (extra2)
    g_option_context_add_main_entries(ctx, extra2, NULL);
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
  return parse_options_with(cmd, usage, extra, NULL, argc, argv);
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

/* ------------------------------------------------------- tensors, tables */

/* Evaluates c's shape with the bindings (the error suggests -D). */
static gint64 *container_shape(const char *file, const WeirContainer *c,
                               GHashTable *bindings, GError **error) {
  g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
  for (guint d = 0; d < c->shape->len; d++) {
    g_autoptr(GError) local = NULL;
    if (!weir_expr_eval(g_ptr_array_index(c->shape, d), bindings, &shape[d],
                        &local)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: container '%s': %s (bind it with -D)", file, c->name,
                  local->message);
      return NULL;
    }
  }
  return g_steal_pointer(&shape);
}

/* A container filled with the reproducible random values of `seed`. */
static WeirTensor *random_tensor(const char *file, const WeirContainer *c,
                                 GHashTable *bindings, GError **error) {
  g_autofree gint64 *shape = container_shape(file, c, bindings, error);
  if (!shape)
    return NULL;
  WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
  weir_tensor_fill_random(t, (guint64)seed + c->id);
  return t;
}

/* name -> WeirTensor*, names borrowed from the program. */
static GHashTable *tensor_table_new(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                               (GDestroyNotify)weir_tensor_free);
}

/* Prints sum, min, max and the first values of each tensor in args, in
 * container order. */
static void print_tensors(const WeirGraph *g, GHashTable *args) {
  Table *t = table_new(6);
  table_row(t, g_strdup("argument"), g_strdup("type"), g_strdup("sum"),
            g_strdup("min"), g_strdup("max"), g_strdup("first values"));
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    const WeirTensor *x = g_hash_table_lookup(args, c->name);
    if (!x)
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

/* "12.3 us", "4.56 ms", "1.234 s" */
static char *format_seconds(double s) {
  if (s < 1e-3)
    return g_strdup_printf("%.1f us", s * 1e6);
  if (s < 1.0)
    return g_strdup_printf("%.3f ms", s * 1e3);
  return g_strdup_printf("%.3f s", s);
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
  g_autoptr(GHashTable) args = tensor_table_new();
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    WeirTensor *tensor = random_tensor(argv[1], c, bindings, &error);
    if (!tensor) {
      print_error("run-ref", error);
      return 2;
    }
    g_hash_table_insert(args, c->name, tensor);
  }
  gint64 t0 = g_get_monotonic_time();
  if (!weir_interpret(g, bindings, args, NULL, &error)) {
    fprintf(stderr, "weir run-ref: %s: %s\n", argv[1], error->message);
    return 1;
  }
  gint64 t1 = g_get_monotonic_time();
  printf("%s: interpreted in %.3f s\n", argv[1], (double)(t1 - t0) / 1e6);
  print_tensors(g, args);
  return 0;
}

/* ------------------------------------------------- compile options (CLI) */

static char *opt_cc, *opt_cflags, *opt_cache_dir;
static gboolean opt_no_cache;

static const GOptionEntry compile_entries[] = {
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
  if (error->code == WEIR_ERROR_RUNTIME && strstr(error->message, "compiling"))
    fprintf(stderr,
            "(the source was generated in a temporary directory; "
            "'weir codegen %s -o DIR' writes it out)\n",
            file);
}

/* Ordered list of the argument containers of g that are not given. */
static gboolean add_random_arguments(const char *file, const WeirGraph *g,
                                     GHashTable *bindings, GHashTable *args,
                                     GError **error) {
  g_autoptr(GPtrArray) abi = weir_codegen_arguments(g);
  for (guint i = 0; i < abi->len; i++) {
    const WeirContainer *c = g_ptr_array_index(abi, i);
    if (g_hash_table_contains(args, c->name))
      continue;
    WeirTensor *t = random_tensor(file, c, bindings, error);
    if (!t)
      return FALSE;
    g_hash_table_insert(args, c->name, t);
  }
  return TRUE;
}

/* ---------------------------------------------------------------- codegen */

static char *opt_out_dir;
static gboolean opt_no_openmp;

static const GOptionEntry codegen_entries[] = {
    {"output", 'o', 0, G_OPTION_ARG_FILENAME, &opt_out_dir,
     "Directory for <prefix>.c and <prefix>.h (default: .)", "DIR"},
    {"no-openmp", 0, 0, G_OPTION_ARG_NONE, &opt_no_openmp,
     "Leave out the OpenMP pragmas", NULL},
    {NULL}};

static int cmd_codegen(int argc, char **argv) {
  if (!parse_options("codegen", "FILE", codegen_entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir codegen FILE [-o DIR]\n");
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
  const char *dir = opt_out_dir ? opt_out_dir : ".";
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
    fprintf(stderr, "weir codegen: %s\n", error->message);
    return 1;
  }
  printf("wrote %s and %s\n", cpath, hpath);
  return 0;
}

/* -------------------------------------------------------------------- run */

static char **opt_inputs, **opt_expects, **opt_outputs;
static gboolean opt_check;
static double opt_rtol = 1e-4, opt_atol = 1e-5;

static const GOptionEntry exec_entries[] = {
    {"seed", 0, 0, G_OPTION_ARG_INT64, &seed,
     "Seed of the random inputs (default 1)", "N"},
    {"input", 'i', 0, G_OPTION_ARG_STRING_ARRAY, &opt_inputs,
     "Read argument NAME from a .pb or .npy file (NAME= may be left out for "
     "a .pb file that names its tensor)",
     "NAME=FILE"},
    {"expect", 'e', 0, G_OPTION_ARG_STRING_ARRAY, &opt_expects,
     "Compare argument NAME after the run with a .pb or .npy file",
     "NAME=FILE"},
    {"output", 'o', 0, G_OPTION_ARG_STRING_ARRAY, &opt_outputs,
     "Write argument NAME after the run to a .npy or .pb file", "NAME=FILE"},
    {"check", 0, 0, G_OPTION_ARG_NONE, &opt_check,
     "Also run the reference interpreter on the same inputs and compare", NULL},
    {"rtol", 0, 0, G_OPTION_ARG_DOUBLE, &opt_rtol,
     "Relative tolerance of comparisons (default 1e-4)", "R"},
    {"atol", 0, 0, G_OPTION_ARG_DOUBLE, &opt_atol,
     "Absolute tolerance of comparisons (default 1e-5)", "A"},
    {NULL}};

/* Splits "NAME=FILE"; for a bare FILE, *name is NULL. */
static void split_assignment(const char *arg, char **name, char **file) {
  const char *eq = strchr(arg, '=');
  if (eq && eq != arg) {
    *name = g_strndup(arg, (gsize)(eq - arg));
    *file = g_strdup(eq + 1);
  } else {
    *name = NULL;
    *file = g_strdup(eq ? eq + 1 : arg);
  }
}

/* The argument container called name, or NULL with an error naming the
 * option. */
static const WeirContainer *argument_named(const WeirGraph *g,
                                           const char *option, const char *name,
                                           GError **error) {
  const WeirContainer *c = weir_graph_container(g, name);
  if (!c || c->transient || c->initial) {
    g_autoptr(GPtrArray) abi = weir_codegen_arguments(g);
    GString *names = g_string_new(NULL);
    for (guint i = 0; i < abi->len; i++)
      g_string_append_printf(
          names, "%s%s", i ? ", " : "",
          ((WeirContainer *)g_ptr_array_index(abi, i))->name);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s %s: program '%s' has no argument '%s' (arguments: %s)",
                option, name, g->name, name, names->str);
    g_string_free(names, TRUE);
    return NULL;
  }
  return c;
}

static gboolean load_inputs(const WeirGraph *g, GHashTable *args,
                            GError **error) {
  for (guint i = 0; opt_inputs && opt_inputs[i]; i++) {
    g_autofree char *name = NULL, *file = NULL, *stored = NULL;
    split_assignment(opt_inputs[i], &name, &file);
    WeirTensor *t = weir_tensor_load(file, &stored, error);
    if (!t)
      return FALSE;
    if (!name && stored && *stored)
      name = g_strdup(stored);
    if (!name) {
      weir_tensor_free(t);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--input %s: give the argument as NAME=FILE", file);
      return FALSE;
    }
    const WeirContainer *c = argument_named(g, "--input", name, error);
    if (!c) {
      weir_tensor_free(t);
      return FALSE;
    }
    g_hash_table_replace(args, c->name, t);
  }
  return TRUE;
}

/* Compares args with the --expect files; prints one line per file. */
static gboolean check_expected(const WeirGraph *g, GHashTable *args,
                               gboolean *all_ok, GError **error) {
  for (guint i = 0; opt_expects && opt_expects[i]; i++) {
    g_autofree char *name = NULL, *file = NULL, *stored = NULL;
    split_assignment(opt_expects[i], &name, &file);
    g_autoptr(WeirTensor) want = weir_tensor_load(file, &stored, error);
    if (!want)
      return FALSE;
    if (!name && stored && *stored)
      name = g_strdup(stored);
    if (!name) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--expect %s: give the argument as NAME=FILE", file);
      return FALSE;
    }
    const WeirContainer *c = argument_named(g, "--expect", name, error);
    if (!c)
      return FALSE;
    const WeirTensor *got = g_hash_table_lookup(args, c->name);
    double err = 0;
    g_autoptr(GError) diff = NULL;
    if (weir_tensor_allclose(got, want, opt_rtol, opt_atol, &err, &diff))
      printf("expect  %s = %s: ok (max |error| %.3g)\n", c->name, file, err);
    else {
      printf("expect  %s = %s: MISMATCH: %s\n", c->name, file, diff->message);
      *all_ok = FALSE;
    }
  }
  return TRUE;
}

/* Runs the interpreter on ref (a copy of the inputs) and compares every
 * argument with the compiled run's. */
static gboolean check_reference(const WeirGraph *g, GHashTable *bindings,
                                GHashTable *args, GHashTable *ref,
                                gboolean *all_ok, GError **error) {
  g_autoptr(WeirGraph) expanded = weir_graph_copy(g);
  if (!weir_expand_all(expanded, NULL, NULL, error))
    return FALSE;
  gint64 t0 = g_get_monotonic_time();
  if (!weir_interpret(expanded, bindings, ref, NULL, error)) {
    g_prefix_error(error, "reference interpreter: ");
    return FALSE;
  }
  g_autofree char *took =
      format_seconds((double)(g_get_monotonic_time() - t0) / 1e6);
  printf("check   against the reference interpreter (%s):\n", took);
  g_autoptr(GPtrArray) abi = weir_codegen_arguments(g);
  for (guint i = 0; i < abi->len; i++) {
    const WeirContainer *c = g_ptr_array_index(abi, i);
    double err = 0;
    g_autoptr(GError) diff = NULL;
    if (weir_tensor_allclose(g_hash_table_lookup(args, c->name),
                             g_hash_table_lookup(ref, c->name), opt_rtol,
                             opt_atol, &err, &diff))
      printf("          %s: ok (max |error| %.3g)\n", c->name, err);
    else {
      printf("          %s: MISMATCH: %s\n", c->name, diff->message);
      *all_ok = FALSE;
    }
  }
  return TRUE;
}

static gboolean write_outputs(const WeirGraph *g, GHashTable *args,
                              GError **error) {
  for (guint i = 0; opt_outputs && opt_outputs[i]; i++) {
    g_autofree char *name = NULL, *file = NULL;
    split_assignment(opt_outputs[i], &name, &file);
    if (!name) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--output %s: give the argument as NAME=FILE", file);
      return FALSE;
    }
    const WeirContainer *c = argument_named(g, "--output", name, error);
    if (!c || !weir_tensor_save(g_hash_table_lookup(args, c->name), c->name,
                                file, error))
      return FALSE;
    printf("wrote   %s to %s\n", c->name, file);
  }
  return TRUE;
}

static GHashTable *copy_tensor_table(GHashTable *args) {
  GHashTable *copy = tensor_table_new();
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, args);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(copy, k, weir_tensor_copy(v));
  return copy;
}

static int cmd_run(int argc, char **argv) {
  if (!parse_options_with("run", "FILE", exec_entries, compile_entries, &argc,
                          &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir run FILE [-D SYM=VALUE]... [--input "
                    "NAME=FILE]... [--expect NAME=FILE]... [--output "
                    "NAME=FILE]... [--check]\n");
    return 2;
  }
  const char *file = argv[1];
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = parse_defines(&error);
  if (!bindings) {
    print_error("run", error);
    return 2;
  }
  g_autoptr(WeirGraph) g = load_program("run", file);
  if (!g)
    return 1;
  g_autoptr(GHashTable) args = tensor_table_new();
  if (!load_inputs(g, args, &error)) {
    print_error("run", error);
    return 1;
  }
  if (!add_random_arguments(file, g, bindings, args, &error)) {
    print_error("run", error);
    return 2;
  }
  g_autoptr(GHashTable) ref = opt_check ? copy_tensor_table(args) : NULL;

  WeirCompileOptions opts = compile_options();
  WeirCompileInfo info = {0};
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &opts, &info, &error);
  if (!k) {
    print_compile_error("run", file, error);
    weir_compile_info_clear(&info);
    return 1;
  }
  g_autofree char *took =
      format_seconds((double)(g_get_monotonic_time() - t0) / 1e6);
  if (info.cache_hit)
    printf("compile %s: from the cache in %s (key %.12s)\n", file, took,
           info.key);
  else
    printf("compile %s: compiled in %s%s (key %.12s)\n", file, took,
           info.recovered ? ", replacing a damaged cache entry" : "", info.key);
  weir_compile_info_clear(&info);

  t0 = g_get_monotonic_time();
  if (!weir_kernel_run(k, bindings, args, &error)) {
    fprintf(stderr, "weir run: %s: %s\n", file, error->message);
    return 1;
  }
  g_autofree char *ran =
      format_seconds((double)(g_get_monotonic_time() - t0) / 1e6);
  printf("run     %s\n", ran);
  print_tensors(g, args);

  gboolean all_ok = TRUE;
  if ((opt_check &&
       !check_reference(g, bindings, args, ref, &all_ok, &error)) ||
      !check_expected(g, args, &all_ok, &error) ||
      !write_outputs(g, args, &error)) {
    fprintf(stderr, "weir run: %s: %s\n", file, error->message);
    return 1;
  }
  return all_ok ? 0 : 1;
}

/* ------------------------------------------------------------------ bench */

static gint opt_threads, opt_reps = 10, opt_warmup = 3;

static const GOptionEntry bench_entries[] = {
    {"seed", 0, 0, G_OPTION_ARG_INT64, &seed,
     "Seed of the random inputs (default 1)", "N"},
    {"threads", 't', 0, G_OPTION_ARG_INT, &opt_threads,
     "OpenMP threads (default: OMP_NUM_THREADS or one per processor)", "N"},
    {"reps", 'r', 0, G_OPTION_ARG_INT, &opt_reps,
     "Timed repetitions (default 10)", "N"},
    {"warmup", 'w', 0, G_OPTION_ARG_INT, &opt_warmup,
     "Untimed warm-up runs (default 3)", "N"},
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
 * compile, then a cached one.  Returns the cached kernel. */
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
  *cold = (double)(t1 - t0) / 1e6;
  remove_tree(dir);
  return k;
}

/* "12.3 GFLOP/s"-style rate of `amount` per `seconds`, or "-". */
static char *format_rate(const WeirQuantity *q, double seconds,
                         const char *unit) {
  if (!q->known || seconds <= 0)
    return g_strdup("-");
  return g_strdup_printf("%.3f %s", (double)q->value / seconds / 1e9, unit);
}

static int cmd_bench(int argc, char **argv) {
  if (!parse_options_with("bench", "FILE", bench_entries, compile_entries,
                          &argc, &argv))
    return 2;
  if (argc != 2 || opt_reps < 1 || opt_warmup < 0 || opt_threads < 0) {
    fprintf(stderr, "usage: weir bench FILE [-D SYM=VALUE]... [--threads N] "
                    "[--reps N>=1] [--warmup N>=0]\n");
    return 2;
  }
  const char *file = argv[1];
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = parse_defines(&error);
  if (!bindings) {
    print_error("bench", error);
    return 2;
  }
  g_autoptr(WeirGraph) g = load_program("bench", file);
  if (!g)
    return 1;
  g_autoptr(GHashTable) args = tensor_table_new();
  if (!add_random_arguments(file, g, bindings, args, &error)) {
    print_error("bench", error);
    return 2;
  }
  double cold = 0, compiler = 0, cached = 0;
  g_autoptr(WeirKernel) k =
      compile_cold_and_cached(g, &cold, &compiler, &cached, &error);
  if (!k) {
    print_compile_error("bench", file, error);
    return 1;
  }
  const char *threads = "default";
  g_autofree char *threads_text = NULL;
  if (opt_threads > 0) {
    if (weir_kernel_set_threads(k, opt_threads, &error))
      threads = threads_text = g_strdup_printf("%d", opt_threads);
    else {
      fprintf(stderr, "weir bench: note: %s; --threads ignored\n",
              error->message);
      g_clear_error(&error);
      threads = "1 (no OpenMP)";
    }
  }
  WeirBenchOptions bo = {.warmup = (guint)opt_warmup,
                         .repetitions = (guint)opt_reps};
  WeirBenchResult r;
  if (!weir_kernel_bench(k, bindings, args, &bo, &r, &error)) {
    fprintf(stderr, "weir bench: %s: %s\n", file, error->message);
    return 1;
  }
  /* FLOPs and bytes of the program as compiled: library nodes expanded */
  g_autoptr(WeirGraph) expanded = weir_graph_copy(g);
  g_autoptr(GError) local = NULL;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(
      weir_expand_all(expanded, NULL, NULL, &local) ? expanded : g, bindings,
      &local);

  printf("program  %s  (%s)\n", g->name, file);
  g_autofree char *c1 = format_seconds(cold), *c2 = format_seconds(compiler),
                  *c3 = format_seconds(cached);
  printf("compile  cold %s (compiler %s), cached %s\n", c1, c2, c3);
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
    printf("FLOPs    %s  ->  %s (median)\n", flops, gflops);
    printf("bytes    %s  ->  %s (median)\n", bytes, gbs);
  } else
    printf("FLOPs    - (analysis: %s)\n", local->message);
  weir_bench_result_clear(&r);
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

/* ------------------------------------------------------------------- main */

static void usage(FILE *out) {
  fprintf(out, "usage: weir COMMAND [ARGS...]\n\nCommands:\n");
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(out, "  %-9s %-40s %s\n", commands[i].name, commands[i].args,
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
