/* cli-prune.c — `weir prune`: the tier-2 transformation `prune` applied to
 * a whole model, as one step of a session.
 *
 *   weir prune MODEL --sparsity S [--scope tensor|global]
 *       [--structured channels] [--criterion l1|l2] [--exclude REGEX]
 *       -o OUT
 *
 * OUT is a workspace (.weir: the model and the step in its history), a
 * program (.json) or, for an ONNX MODEL, an ONNX model (.onnx): the
 * original file with the new initializer values (and shapes, for
 * structured pruning) and the metadata entry "weir.pruned" listing the
 * pruned initializers that hold zeros (comma separated), which `weir
 * train` reads to keep their zeros while fine-tuning.  It prints the
 * step's data-movement report (logical volume and FLOPs before and after)
 * and, per pruned weight, its zeros and the bytes a sparse format would
 * not move.
 */
#include <string.h>

#include "cli.h"

/* Elements and zeros of a floating constant. */
static gboolean count_zeros(const WeirContainer *c, gint64 *count,
                            gint64 *zeros) {
  if (!c->initial || !weir_dtype_is_float(c->dtype))
    return FALSE;
  guint rank = c->shape->len;
  g_autofree gint64 *shape = g_new0(gint64, rank + 1);
  for (guint d = 0; d < rank; d++)
    if (!weir_expr_is_const(g_ptr_array_index(c->shape, d), &shape[d]))
      return FALSE;
  g_autoptr(WeirTensor) t = weir_tensor_new(c->dtype, rank, shape);
  gsize size = 0;
  const void *data = g_bytes_get_data(c->initial, &size);
  if (size != weir_tensor_nbytes(t))
    return FALSE;
  if (size)
    memcpy(t->data, data, size);
  *count = t->count;
  *zeros = 0;
  for (gint64 k = 0; k < t->count; k++)
    *zeros += weir_tensor_get(t, k) == 0;
  return TRUE;
}

/* The containers whose constant data or shape changed from a to b
 * (borrowed from b, in b's container order). */
static GPtrArray *changed_constants(const WeirGraph *a, const WeirGraph *b) {
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; i < b->containers->len; i++) {
    WeirContainer *c = g_ptr_array_index(b->containers, i);
    const WeirContainer *old = weir_graph_container(a, c->name);
    if (!c->initial || !old || !old->initial)
      continue;
    if (!g_bytes_equal(c->initial, old->initial))
      g_ptr_array_add(out, c);
  }
  return out;
}

static void print_weights(const WeirGraph *before, GPtrArray *changed) {
  CliTable *t = cli_table_new(4);
  cli_table_row(t, g_strdup("weight"), g_strdup("shape"), g_strdup("zeros"),
                g_strdup("sparsity"));
  gint64 dense = 0, zero = 0;
  for (guint i = 0; i < changed->len; i++) {
    const WeirContainer *c = changed->pdata[i];
    const WeirContainer *old = weir_graph_container(before, c->name);
    gint64 n0 = 0, z0 = 0, n1 = 0, z1 = 0;
    if (!count_zeros(old, &n0, &z0) || !count_zeros(c, &n1, &z1))
      continue;
    g_autofree char *s0 = cli_shape_text(old);
    g_autofree char *s1 = cli_shape_text(c);
    char *shape = g_strcmp0(s0, s1) == 0 ? g_strdup(s1)
                                         : g_strdup_printf("%s -> %s", s0, s1);
    cli_table_row(
        t, g_strdup(c->initializer ? c->initializer : c->name), shape,
        g_strdup_printf("%" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT, z0, z1),
        g_strdup_printf("%.1f%%", n1 ? 100.0 * (double)z1 / (double)n1 : 0.0));
    gint64 size = (gint64)weir_dtype_size(c->dtype);
    dense += n1 * size;
    zero += z1 * size;
  }
  cli_table_print(t);
  if (zero > 0) {
    g_autofree char *db = cli_format_bytes(dense);
    g_autofree char *nb = cli_format_bytes(dense - zero);
    g_autofree char *zb = cli_format_bytes(zero);
    printf("  pruned weights: %s dense, %s nonzero: a sparse format would "
           "not move the %s of zeros (the dense program still moves them)\n",
           db, nb, zb);
  }
}

/* The comma-separated initializer names recorded in "weir.pruned": the old
 * entry's names and those of changed that hold zeros, without repeats.
 * (transfer full) */
static char *pruned_list(const char *old, GPtrArray *changed) {
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  if (old && *old) {
    g_auto(GStrv) parts = g_strsplit(old, ",", -1);
    for (guint i = 0; parts[i]; i++)
      g_ptr_array_add(names, g_strdup(parts[i]));
  }
  for (guint i = 0; i < changed->len; i++) {
    const WeirContainer *c = changed->pdata[i];
    gint64 n = 0, z = 0;
    if (!count_zeros(c, &n, &z) || z == 0)
      continue; /* nothing to keep (structured pruning, biases) */
    gboolean seen = FALSE;
    for (guint k = 0; k < names->len && !seen; k++)
      seen = g_strcmp0(names->pdata[k], c->initializer) == 0;
    if (!seen)
      g_ptr_array_add(names, g_strdup(c->initializer));
  }
  g_ptr_array_add(names, NULL);
  return g_strjoinv(",", (char **)names->pdata);
}

static gboolean write_onnx(const char *model_path, GPtrArray *changed,
                           const char *out, GError **error) {
  g_autoptr(WeirOnnxModel) model = weir_onnx_model_load(model_path, error);
  if (!model)
    return FALSE;
  g_autoptr(GHashTable) values = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < changed->len; i++) {
    const WeirContainer *c = changed->pdata[i];
    if (!c->initializer) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: pruned weight '%s' is not an initializer of the model",
                  model_path, c->name);
      return FALSE;
    }
    guint rank = c->shape->len;
    g_autofree gint64 *shape = g_new0(gint64, rank + 1);
    for (guint d = 0; d < rank; d++)
      weir_expr_is_const(g_ptr_array_index(c->shape, d), &shape[d]);
    WeirTensor *t = weir_tensor_new(c->dtype, rank, shape);
    gsize size = 0;
    const void *data = g_bytes_get_data(c->initial, &size);
    g_assert(size == weir_tensor_nbytes(t));
    memcpy(t->data, data, size);
    g_hash_table_insert(values, c->initializer, t);
  }
  g_autofree char *list =
      pruned_list(weir_onnx_model_metadata(model, "weir.pruned"), changed);
  g_autoptr(GHashTable) meta = g_hash_table_new(g_str_hash, g_str_equal);
  if (*list)
    g_hash_table_insert(meta, "weir.pruned", list);
  return weir_onnx_save_with_metadata(model_path, values, meta, out, error);
}

int cli_cmd_prune(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  g_autofree char *output_path = NULL, *scope = NULL, *structured = NULL,
                  *criterion = NULL, *exclude = NULL;
  double sparsity = -1;
  gboolean force = FALSE;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"sparsity", 's', 0, G_OPTION_ARG_DOUBLE, &sparsity,
       "Fraction of the weights (or of the output channels) to remove, 0..1",
       "S"},
      {"scope", 0, 0, G_OPTION_ARG_STRING, &scope,
       "tensor (the fraction per weight, default) or global (one threshold "
       "over all selected weights)",
       "tensor|global"},
      {"structured", 0, 0, G_OPTION_ARG_STRING, &structured,
       "Remove whole output channels and shrink the layers that read them",
       "channels"},
      {"criterion", 0, 0, G_OPTION_ARG_STRING, &criterion,
       "Norm ranking the channels (default l1)", "l1|l2"},
      {"exclude", 0, 0, G_OPTION_ARG_STRING, &exclude,
       "Leave the weights whose container or initializer name matches REGEX",
       "REGEX"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
       "Write the result: a workspace (.weir), a program (.json) or, for an "
       "ONNX model, an ONNX model (.onnx)",
       "OUT"},
      {"force", 0, 0, G_OPTION_ARG_NONE, &force,
       "Replace an existing workspace", NULL},
      {NULL}};
  if (!cli_parse_options("prune", "MODEL --sparsity S -o OUT", entries, &argc,
                         &argv))
    return 2;
  if (argc != 2 || !output_path || sparsity < 0) {
    fprintf(stderr,
            "usage: weir prune MODEL --sparsity S [--scope tensor|global] "
            "[--structured channels] [--criterion l1|l2] [--exclude REGEX] "
            "-o OUT.weir|OUT.json|OUT.onnx\n");
    return 2;
  }
  gboolean to_onnx = g_str_has_suffix(output_path, ".onnx");
  if (to_onnx && !weir_onnx_is_model_path(argv[1])) {
    fprintf(stderr,
            "weir prune: %s: an ONNX result needs an ONNX model (write .weir "
            "or .json)\n",
            argv[1]);
    return 2;
  }
  if (cli_is_workspace_path(output_path) && !force &&
      g_file_test(output_path, G_FILE_TEST_EXISTS)) {
    fprintf(stderr,
            "weir prune: %s exists (its history would be lost); use --force "
            "to replace it, or `weir apply WS.weir prune` to add a step\n",
            output_path);
    return 1;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = cli_parse_defines(defines, &error);
  if (!bindings) {
    cli_print_error("prune", error);
    return 2;
  }
  g_autoptr(GPtrArray) params = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(params, g_strdup_printf("sparsity=%.17g", sparsity));
  if (scope)
    g_ptr_array_add(params, g_strdup_printf("scope=%s", scope));
  if (structured)
    g_ptr_array_add(params, g_strdup_printf("structure=%s", structured));
  if (criterion)
    g_ptr_array_add(params, g_strdup_printf("criterion=%s", criterion));
  if (exclude)
    g_ptr_array_add(params, g_strdup_printf("exclude=%s", exclude));
  g_ptr_array_add(params, NULL);

  WeirOnnxImportOptions opts = {.symbols = bindings};
  g_autoptr(WeirGraph) g = cli_load_program("prune", argv[1], &opts, NULL);
  if (!g)
    return 1;
  cli_load_transformations("prune");
  g_autoptr(WeirSession) s = weir_session_new(g, argv[1], bindings, &error);
  if (!s) {
    fprintf(stderr, "weir prune: %s: %s\n", argv[1], error->message);
    return 1;
  }
  WeirSite site = {.state = 0, .n_nodes = 0};
  const WeirStep *st = weir_session_apply(
      s, "prune", &site, (const char *const *)params->pdata, &error);
  if (!st) {
    cli_print_error("prune", error);
    return 1;
  }
  g_autofree char *bytes =
      cli_format_change(&st->bytes_before, &st->bytes_after, TRUE);
  g_autofree char *flops =
      cli_format_change(&st->flops_before, &st->flops_after, FALSE);
  printf("step %u: %s (%s) in %.3f s\n  logical volume %s\n  FLOPs %s\n",
         st->index, st->transform, st->params, st->seconds, bytes, flops);
  const WeirGraph *cur = weir_session_current(s);
  g_autoptr(GPtrArray) changed = changed_constants(g, cur);
  print_weights(g, changed);

  if (cli_is_workspace_path(output_path)) {
    if (!cli_save_workspace("prune", s, output_path))
      return 1;
    cli_print_workspace_summary(output_path, s);
    return 0;
  }
  gboolean ok = to_onnx ? write_onnx(argv[1], changed, output_path, &error)
                        : weir_graph_save(cur, output_path, &error);
  if (!ok) {
    cli_print_error("prune", error);
    return 1;
  }
  printf("wrote %s\n", output_path);
  return 0;
}
