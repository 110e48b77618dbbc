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
 *   weir transforms FILE [--tier N] [--node NAME]
 *                                           transformations that apply,
 *                                           their sites, legal or why not
 *   weir apply FILE NAME [--site N[,N...]] [--param K=V]... -o OUT.json
 *                                           apply one transformation and
 *                                           print the data-movement change
 *
 * `transforms` and `apply` also load the plugins found on WEIR_PLUGIN_PATH
 * and in $XDG_DATA_HOME/weir/plugins; refused plugins are reported as
 * warnings.
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
static int cmd_transforms(int argc, char **argv);
static int cmd_apply(int argc, char **argv);

static const Command commands[] = {
    {"info", "FILE [-D SYM=VALUE]...",
     "print containers, data movement, FLOPs and peak memory", cmd_info},
    {"validate", "FILE", "check a program and report every problem",
     cmd_validate},
    {"run-ref", "FILE [-D SYM=VALUE]... [--seed N]",
     "run the reference interpreter on random inputs", cmd_run_ref},
    {"transforms", "FILE [--tier N] [--node NAME]",
     "list applicable transformations and their sites", cmd_transforms},
    {"apply", "FILE NAME [--site N,...] [--param K=V]... -o OUT",
     "apply a transformation and report the data-movement change", cmd_apply},
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
     "Node ids of the site, as listed by 'weir transforms'", "N[,N...]"},
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

/* ------------------------------------------------------------------- main */

static void usage(FILE *out) {
  fprintf(out, "usage: weir COMMAND [ARGS...]\n\nCommands:\n");
  for (guint i = 0; i < G_N_ELEMENTS(commands); i++)
    fprintf(out, "  %-10s %-48s %s\n", commands[i].name, commands[i].args,
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
