/* cli-util.c — what the commands of `weir` share (cli.h): option parsing,
 * -D bindings, loading programs and workspaces, tables and formatting. */
#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "cli.h"
#include "weir-attr.h"

void cli_print_error(const char *cmd, const GError *error) {
  fprintf(stderr, "weir %s: %s\n", cmd, error->message);
}

void cli_print_compile_error(const char *cmd, const char *file,
                             const GError *error) {
  fprintf(stderr, "weir %s: %s: %s\n", cmd, file, error->message);
  if (error->code == WEIR_ERROR_RUNTIME &&
      g_str_has_prefix(error->message, "compiling"))
    fprintf(stderr,
            "(the source was generated in a temporary directory; "
            "'weir codegen %s -o DIR' writes it out)\n",
            file);
}

/* ------------------------------------------------------------ formatting */

char *cli_format_bytes(gint64 b) {
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

char *cli_format_quantity(const WeirQuantity *q, gboolean bytes) {
  if (q->known)
    return bytes ? cli_format_bytes(q->value)
                 : g_strdup_printf("%" G_GINT64_FORMAT, q->value);
  if (q->expr) {
    g_autofree char *e = weir_expr_to_string(q->expr);
    return bytes ? g_strdup_printf("%s B", e) : g_steal_pointer(&e);
  }
  return g_strdup("?");
}

char *cli_format_seconds(double s) {
  if (s < 1e-3)
    return g_strdup_printf("%.1f us", s * 1e6);
  if (s < 1.0)
    return g_strdup_printf("%.3f ms", s * 1e3);
  return g_strdup_printf("%.3f s", s);
}

char *cli_format_change(const WeirFigure *a, const WeirFigure *b,
                        gboolean bytes) {
  g_autofree char *x = weir_figure_format(a, bytes);
  g_autofree char *y = weir_figure_format(b, bytes);
  if (a->known && b->known && a->value != 0)
    return g_strdup_printf("%s -> %s (%+.1f%%)", x, y,
                           100.0 * (double)(b->value - a->value) /
                               (double)a->value);
  return g_strdup_printf("%s -> %s", x, y);
}

char *cli_shape_text(const WeirContainer *c) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < c->shape->len; d++) {
    g_autofree char *e = weir_expr_to_string(g_ptr_array_index(c->shape, d));
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

struct CliTable {
  guint ncols;
  GPtrArray *cells; /* char*, row-major */
};

CliTable *cli_table_new(guint ncols) {
  CliTable *t = g_new0(CliTable, 1);
  t->ncols = ncols;
  t->cells = g_ptr_array_new_with_free_func(g_free);
  return t;
}

void cli_table_row(CliTable *t, ...) {
  va_list ap;
  va_start(ap, t);
  for (guint i = 0; i < t->ncols; i++)
    g_ptr_array_add(t->cells, va_arg(ap, char *));
  va_end(ap);
}

void cli_table_print(CliTable *t) {
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

void cli_compile_clear(CliCompile *c) {
  g_clear_pointer(&c->cc, g_free);
  g_clear_pointer(&c->cflags, g_free);
  g_clear_pointer(&c->cache_dir, g_free);
}

WeirCompileOptions cli_compile_options(const CliCompile *c) {
  return (WeirCompileOptions){.compiler = c->cc,
                              .flags = c->cflags,
                              .cache_dir = c->cache_dir,
                              .no_cache = c->no_cache};
}

void cli_tensors_clear(CliTensors *t) {
  g_clear_pointer(&t->inputs, g_strfreev);
  g_clear_pointer(&t->expects, g_strfreev);
  g_clear_pointer(&t->outputs, g_strfreev);
  g_clear_pointer(&t->max_memory, g_free);
}

gboolean cli_max_memory_limit(const char *cmd, const char *text,
                              guint64 *limit) {
  g_autoptr(GError) error = NULL;
  *limit = 0;
  if (text && !weir_size_parse(text, limit, &error)) {
    fprintf(stderr, "weir %s: --max-memory: %s\n", cmd, error->message);
    return FALSE;
  }
  return TRUE;
}

GHashTable *cli_parse_defines(char **defines, GError **error) {
  GHashTable *b = weir_bindings_new();
  for (guint i = 0; defines && defines[i]; i++) {
    const char *eq = strchr(defines[i], '=');
    char *end = NULL;
    gint64 v = 0;
    errno = 0;
    if (eq)
      v = g_ascii_strtoll(eq + 1, &end, 10);
    if (eq && errno == ERANGE) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "-D %s: the value does not fit in 64 bits", defines[i]);
      g_hash_table_unref(b);
      return NULL;
    }
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

gboolean cli_parse_options(const char *cmd, const char *usage,
                           const GOptionEntry *entries, int *argc,
                           char ***argv) {
  g_autofree char *param = g_strdup_printf("%s %s", cmd, usage);
  g_autoptr(GOptionContext) ctx = g_option_context_new(param);
  g_option_context_add_main_entries(ctx, entries, NULL);
  /* -O0 .. -O9 are spelled like a compiler's: for a command that takes
   * --opt-level, each becomes "--opt-level=N" before GOption sees it (the
   * rewritten strings are freed once GOption has consumed them). */
  gboolean takes_level = FALSE;
  for (guint i = 0; entries[i].long_name; i++)
    takes_level |= strcmp(entries[i].long_name, "opt-level") == 0;
  g_autoptr(GPtrArray) rewritten = g_ptr_array_new_with_free_func(g_free);
  for (int i = 1; takes_level && i < *argc; i++) {
    const char *a = (*argv)[i];
    if (strcmp(a, "--") == 0)
      break;
    if (a[0] == '-' && a[1] == 'O' && g_ascii_isdigit(a[2]) && !a[3]) {
      char *r = g_strdup_printf("--opt-level=%s", a + 2);
      g_ptr_array_add(rewritten, r);
      (*argv)[i] = r;
    }
  }
  g_autoptr(GError) error = NULL;
  if (!g_option_context_parse(ctx, argc, argv, &error)) {
    fprintf(stderr, "weir %s: %s\n", cmd, error->message);
    return FALSE;
  }
  return TRUE;
}

gboolean cli_opt_level(const char *cmd, const char *text, const char *file,
                       guint *level) {
  *level = file && cli_is_workspace_path(file) ? 0 : WEIR_OPT_LEVEL_DEFAULT;
  if (!text)
    return TRUE;
  g_autoptr(GError) error = NULL;
  if (!weir_pipeline_parse_level(text, level, &error)) {
    fprintf(stderr, "weir %s: -O%s: %s\n", cmd, text, error->message);
    return FALSE;
  }
  return TRUE;
}

gboolean cli_optimize(const char *cmd, const char *file, WeirGraph *g,
                      guint level, GHashTable *bindings, guint *applied) {
  if (applied)
    *applied = 0;
  if (level == 0)
    return TRUE;
  cli_load_transformations(cmd);
  g_autoptr(WeirRecipeReport) report = weir_recipe_report_new();
  g_autoptr(GError) error = NULL;
  if (!weir_pipeline_apply(g, level, bindings, report, &error)) {
    fprintf(stderr, "weir %s: %s: -O%u: %s\n", cmd, file, level,
            error->message);
    return FALSE;
  }
  for (guint i = 0; applied && i < report->steps->len; i++)
    *applied += ((WeirRecipeStepReport *)g_ptr_array_index(report->steps, i))
                    ->applied->len;
  return TRUE;
}

gboolean cli_split_spec(const char *cmd, const char *option, const char *spec,
                        char **name, char **file) {
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

/* --------------------------------------------------------------- programs */

static void print_warnings(const char *cmd, GPtrArray *warnings) {
  for (guint i = 0; i < warnings->len; i++)
    fprintf(stderr, "weir %s: warning: %s\n", cmd,
            (const char *)g_ptr_array_index(warnings, i));
}

gboolean cli_is_workspace_path(const char *path) {
  return g_str_has_suffix(path, ".weir");
}

WeirSession *cli_open_workspace(const char *cmd, const char *path) {
  g_autoptr(GError) error = NULL;
  if (!cli_is_workspace_path(path)) {
    fprintf(stderr,
            "weir %s: %s is not a workspace (.weir); start one with 'weir "
            "new %s -o NAME.weir'\n",
            cmd, path, path);
    return NULL;
  }
  WeirSession *s = weir_workspace_open(path, &error);
  if (!s)
    cli_print_error(cmd, error);
  return s;
}

gboolean cli_save_workspace(const char *cmd, const WeirSession *s,
                            const char *path) {
  g_autoptr(GError) error = NULL;
  if (weir_workspace_save(s, path, &error))
    return TRUE;
  cli_print_error(cmd, error);
  return FALSE;
}

gboolean cli_apply_impls(const char *cmd, char **impls, WeirGraph *g) {
  for (guint i = 0; impls && impls[i]; i++) {
    const char *eq = strchr(impls[i], '=');
    if (!eq || eq == impls[i] || !eq[1]) {
      fprintf(stderr, "weir %s: --impl %s: expected OP=IMPL\n", cmd, impls[i]);
      return FALSE;
    }
    g_autofree char *op = g_strndup(impls[i], eq - impls[i]);
    g_autoptr(GError) error = NULL;
    if (!weir_native_set_impl(g, op, eq + 1, NULL, &error)) {
      fprintf(stderr, "weir %s: --impl %s: %s\n", cmd, impls[i],
              error->message);
      return FALSE;
    }
  }
  return TRUE;
}

WeirGraph *cli_load_program(const char *cmd, const char *path,
                            WeirOnnxImportOptions *opts, char **impls) {
  g_autoptr(GError) error = NULL;
  WeirGraph *g;
  if (cli_is_workspace_path(path)) {
    g_autoptr(WeirSession) s = cli_open_workspace(cmd, path);
    if (!s)
      return NULL; /* cli_open_workspace reported it */
    g = weir_graph_copy(weir_session_current(s));
  } else if (weir_onnx_is_model_path(path)) {
    WeirOnnxImportOptions local = {0};
    if (!opts)
      opts = &local;
    g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
    opts->warnings = warnings;
    g = weir_onnx_import(path, opts, &error);
    opts->warnings = NULL;
    print_warnings(cmd, warnings);
  } else {
    g = weir_graph_load(path, &error);
  }
  if (!g) {
    cli_print_error(cmd, error);
    return NULL;
  }
  if (!cli_apply_impls(cmd, impls, g)) {
    weir_graph_free(g);
    return NULL;
  }
  return g;
}

void cli_load_transformations(const char *cmd) {
  weir_transforms_init();
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func(g_free);
  weir_plugins_load(problems);
  for (guint i = 0; i < problems->len; i++)
    fprintf(stderr, "weir %s: warning: %s\n", cmd,
            (char *)g_ptr_array_index(problems, i));
}

guint cli_count_library_nodes(const WeirGraph *g) {
  guint n = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++)
      n += ((const WeirNode *)g_ptr_array_index(s->nodes, k))->kind ==
           WEIR_NODE_LIBRARY;
  }
  return n;
}

/* The argument container called name (see cli_require_argument). */
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

const WeirContainer *cli_require_argument(const char *cmd, const WeirGraph *g,
                                          GHashTable *names, const char *option,
                                          const char *name) {
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

/* ----------------------------------------------------------------- tuning */

static void collect_tuned(const WeirGraph *g, GPtrArray *out) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY && weir_node_attr(n, "tuned"))
        g_ptr_array_add(out, (gpointer)n);
      if (n->kind == WEIR_NODE_NESTED && n->nested)
        collect_tuned(n->nested, out);
    }
  }
}

void cli_print_tuned_nodes(const WeirGraph *g) {
  g_autoptr(GPtrArray) nodes = g_ptr_array_new();
  collect_tuned(g, nodes);
  if (!nodes->len)
    return;
  printf("\nTuned nodes (weir tune; the tuning database's choice, set by "
         "apply-tuning)\n");
  CliTable *t = cli_table_new(5);
  cli_table_row(t, g_strdup("node"), g_strdup("op"), g_strdup("impl"),
                g_strdup("params"), g_strdup("signature"));
  for (guint i = 0; i < nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(nodes, i);
    char *params = weir_native_params_text(n);
    if (!*params) {
      g_free(params);
      params = g_strdup("-");
    }
    cli_table_row(t, g_strdup_printf("%u %s", n->id, n->label ? n->label : ""),
                  g_strdup(n->op),
                  g_strdup(weir_node_attr_string(n, "impl", "?")), params,
                  g_strdup(weir_node_attr_string(n, "tuned", "?")));
  }
  cli_table_print(t);
}

char *cli_tuned_summary(const WeirGraph *g) {
  g_autoptr(GPtrArray) nodes = g_ptr_array_new();
  collect_tuned(g, nodes);
  if (!nodes->len)
    return NULL;
  /* implementations in order of first appearance */
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  g_autoptr(GArray) counts = g_array_new(FALSE, TRUE, sizeof(guint));
  for (guint i = 0; i < nodes->len; i++) {
    const char *impl =
        weir_node_attr_string(g_ptr_array_index(nodes, i), "impl", "?");
    guint k;
    for (k = 0; k < names->len; k++)
      if (strcmp(g_ptr_array_index(names, k), impl) == 0)
        break;
    if (k == names->len) {
      g_ptr_array_add(names, (gpointer)impl);
      guint zero = 0;
      g_array_append_val(counts, zero);
    }
    g_array_index(counts, guint, k)++;
  }
  GString *s = g_string_new(NULL);
  g_string_append_printf(s, "%u node%s (", nodes->len,
                         nodes->len == 1 ? "" : "s");
  for (guint k = 0; k < names->len; k++)
    g_string_append_printf(s, "%s%s %u", k ? ", " : "",
                           (const char *)g_ptr_array_index(names, k),
                           g_array_index(counts, guint, k));
  g_string_append_c(s, ')');
  return g_string_free(s, FALSE);
}
