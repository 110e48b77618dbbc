/* cli-export.c — generated code out of Weir: `weir codegen` (the C source
 * and header) and `weir export` (a standalone kernel directory: C,
 * Makefile, harness, data, README; core/weir-export.h). */
#include <errno.h>
#include <string.h>

#include <glib/gstdio.h>

#include "cli.h"

/* ---------------------------------------------------------------- codegen */

int cli_cmd_codegen(int argc, char **argv) {
  g_auto(GStrv) defines = NULL, impls = NULL;
  g_autofree char *output_path = NULL;
  gboolean opt_no_openmp = FALSE;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      CLI_IMPL_ENTRY(&impls),
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
       "Directory for <prefix>.c and <prefix>.h (default: .)", "DIR"},
      {"no-openmp", 0, 0, G_OPTION_ARG_NONE, &opt_no_openmp,
       "Leave out the OpenMP pragmas", NULL},
      {NULL}};
  if (!cli_parse_options("codegen", "FILE", entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir codegen FILE [-o DIR] [--no-openmp]\n");
    return 2;
  }
  g_autoptr(WeirGraph) g = cli_load_program("codegen", argv[1], NULL, impls);
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
    cli_print_error("codegen", error);
    return 1;
  }
  printf("wrote %s and %s\n", cpath, hpath);
  return 0;
}
/* ----------------------------------------------------------------- export */

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
    if (!cli_split_spec("export", option, specs[i], &name, &path)) {
      g_hash_table_unref(t);
      return NULL;
    }
    WeirTensor *x = weir_tensor_load(path, NULL, &error);
    if (!x) {
      cli_print_error("export", error);
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
    const WeirContainer *c =
        cli_require_argument("export", g, names, option, name);
    if (!c) {
      g_hash_table_unref(t);
      return NULL;
    }
    g_hash_table_replace(t, c->name, g_hash_table_lookup(given, name));
  }
  return t;
}

int cli_cmd_export(int argc, char **argv) {
  static const char *const usage_text =
      "usage: weir export WS.weir|FILE(.json|.onnx) -o DIR [--force] "
      "[-O0|-O1|-O2|-O3]\n"
      "                   [--impl OP=IMPL]... [-D SYM=VALUE]... [--seed N]\n"
      "                   [--input NAME=FILE]... [--expect NAME=FILE]...\n"
      "                   [--rtol R] [--atol A]\n";
  g_auto(GStrv) defines = NULL, impls = NULL;
  g_auto(CliTensors) io = CLI_TENSORS_INIT;
  g_autofree char *output_path = NULL;
  gboolean force = FALSE;
  g_autofree char *level_text = NULL;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      CLI_OPT_LEVEL_ENTRY(&level_text),
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
       "The directory to write", "DIR"},
      {"force", 0, 0, G_OPTION_ARG_NONE, &force,
       "Replace a directory that is not empty", NULL},
      CLI_IMPL_ENTRY(&impls),
      {"seed", 0, 0, G_OPTION_ARG_INT64, &io.seed,
       "Seed of the generated inputs (default 1)", "N"},
      {"input", 0, 0, G_OPTION_ARG_STRING_ARRAY, &io.inputs,
       "An input from a tensor file (.npy or .pb), stored in DIR/data",
       "NAME=FILE"},
      {"expect", 0, 0, G_OPTION_ARG_STRING_ARRAY, &io.expects,
       "An expected output from a tensor file instead of the interpreter's",
       "NAME=FILE"},
      {"rtol", 0, 0, G_OPTION_ARG_DOUBLE, &io.rtol,
       "Relative tolerance of the harness (default 1e-4; integers exact)", "R"},
      {"atol", 0, 0, G_OPTION_ARG_DOUBLE, &io.atol,
       "Absolute tolerance of the harness (default 1e-5)", "A"},
      {NULL}};
  if (!cli_parse_options("export", "FILE -o DIR", entries, &argc, &argv))
    return 2;
  if (argc != 2 || !output_path) {
    fputs(usage_text, stderr);
    return 2;
  }
  const char *file = argv[1];
  guint level;
  if (!cli_opt_level("export", level_text, file, &level))
    return 2;
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = cli_parse_defines(defines, &error);
  if (!bindings) {
    cli_print_error("export", error);
    return 2;
  }
  g_autoptr(GHashTable) inputs = load_specs("input", io.inputs);
  g_autoptr(GHashTable) expects =
      inputs ? load_specs("expect", io.expects) : NULL;
  if (!expects)
    return 1;

  g_autoptr(WeirSession) session = NULL;
  g_autoptr(WeirGraph) g = NULL;
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  if (cli_is_workspace_path(file)) {
    cli_load_transformations("export");
    session = cli_open_workspace("export", file);
    if (!session)
      return 1;
    g = weir_graph_copy(weir_session_current(session));
    if (!cli_apply_impls("export", impls, g))
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
    g = cli_load_program("export", file, &opts, impls);
    if (!g)
      return 1;
  }
  if (!cli_optimize("export", file, g, level, bindings, NULL))
    return 1;
  g_autoptr(GHashTable) in = by_container(g, names, "input", inputs);
  g_autoptr(GHashTable) ex =
      in ? by_container(g, names, "expect", expects) : NULL;
  if (!ex)
    return 2;

  WeirExportOptions opts = {.symbols = bindings,
                            .inputs = in,
                            .expected = ex,
                            .seed = (guint64)io.seed,
                            .rtol = io.rtol,
                            .atol = io.atol,
                            .force = force,
                            .source = file,
                            .session = session};
  WeirExportInfo info = {0};
  if (!weir_export(g, output_path, &opts, &info, &error)) {
    cli_print_error("export", error);
    return 1;
  }
  printf("%s -> %s: kernel '%s', %u input%s from files, %u generated "
         "(seed %" G_GINT64_FORMAT "), %u output%s (expected: %s)\n",
         file, output_path, info.prefix, info.n_inputs,
         info.n_inputs == 1 ? "" : "s", info.n_generated, io.seed,
         info.n_outputs, info.n_outputs == 1 ? "" : "s",
         info.interpreted ? "reference interpreter" : "given");
  for (guint i = 0; i < info.files->len; i++)
    printf("  %s\n", (const char *)g_ptr_array_index(info.files, i));
  printf("build and run: make -C %s && (cd %s && ./harness)\n", output_path,
         output_path);
  weir_export_info_clear(&info);
  return 0;
}
