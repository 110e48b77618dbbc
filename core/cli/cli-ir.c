/* cli-ir.c — commands about one program as it is: `weir import`, `info`,
 * `validate` and `ops`. */
#include <string.h>

#include "cli.h"
#include "weir-attr.h"

/* ----------------------------------------------------------------- import */

int cli_cmd_import(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  g_autofree char *output_path = NULL;
  gboolean any_opset = FALSE;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
       "Write the program to FILE (JSON)", "FILE"},
      {"any-opset", 0, 0, G_OPTION_ARG_NONE, &any_opset,
       "Import opsets outside 11..17 with a warning", NULL},
      {NULL}};
  if (!cli_parse_options("import", "MODEL.onnx -o OUT.json", entries, &argc,
                         &argv))
    return 2;
  if (argc != 2 || !output_path) {
    fprintf(stderr,
            "usage: weir import MODEL.onnx -o OUT.json [-D SYM=VALUE]...\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = cli_parse_defines(defines, &error);
  if (!bindings) {
    cli_print_error("import", error);
    return 2;
  }
  WeirOnnxImportOptions opts = {.symbols = bindings,
                                .allow_any_opset = any_opset};
  g_autoptr(WeirGraph) g = NULL;
  if (weir_onnx_is_model_path(argv[1]))
    g = cli_load_program("import", argv[1], &opts, NULL);
  else
    fprintf(stderr, "weir import: %s: not an ONNX model (.onnx)\n", argv[1]);
  if (!g)
    return 1;
  if (!weir_graph_save(g, output_path, &error)) {
    cli_print_error("import", error);
    return 1;
  }
  GString *syms = g_string_new(NULL);
  for (guint i = 0; i < g->symbols->len; i++)
    g_string_append_printf(syms, "%s%s", i ? ", " : "",
                           (const char *)g_ptr_array_index(g->symbols, i));
  printf("%s -> %s: %u library nodes, %u containers, symbols: %s\n", argv[1],
         output_path, cli_count_library_nodes(g), g->containers->len,
         syms->len ? syms->str : "(none)");
  g_string_free(syms, TRUE);
  return 0;
}

/* ------------------------------------------------------------------- info */

/* FLOPs per byte of modeled traffic, or "-". (transfer full) */
static char *format_intensity(const WeirQuantity *flops,
                              const WeirQuantity *traffic) {
  if (!flops->known || !traffic->known || traffic->value <= 0)
    return g_strdup("-");
  return g_strdup_printf("%.3f", (double)flops->value / (double)traffic->value);
}

static int compare_memlet_bytes(gconstpointer a, gconstpointer b) {
  const WeirMemletCost *x = *(const WeirMemletCost *const *)a;
  const WeirMemletCost *y = *(const WeirMemletCost *const *)b;
  gint64 vx = x->bytes.known ? x->bytes.value : -1;
  gint64 vy = y->bytes.known ? y->bytes.value : -1;
  if (vx != vy)
    return vx > vy ? -1 : 1;
  return x->edge < y->edge ? -1 : x->edge > y->edge;
}

/* The collectives (Allreduce, Broadcast, AllreduceStart:
 * docs/distributed.md) with the bytes each communicates between
 * processes, and the AllreduceWait where each non-blocking one ends;
 * nothing when there are none. */
static void print_communication(const WeirGraph *g, const WeirAnalysis *a) {
  CliTable *t = NULL;
  for (guint i = 0; i < a->nodes->len; i++) {
    const WeirNodeCost *nc = g_ptr_array_index(a->nodes, i);
    const WeirState *s = weir_graph_state(g, nc->state);
    const WeirNode *n = weir_state_node(s, nc->node);
    /* a non-blocking bucket ends at its wait, which moves no more bytes */
    gboolean wait = n && g_strcmp0(n->op, "AllreduceWait") == 0;
    gint64 zero;
    if (!wait &&
        (!nc->comm_bytes.expr ||
         (weir_expr_is_const(nc->comm_bytes.expr, &zero) && zero == 0)))
      continue;
    if (!t) {
      g_autofree char *total = cli_format_quantity(&a->total_comm_bytes, TRUE);
      printf("\nCommunication between processes  %s per run "
             "(payload of each collective)\n",
             total);
      t = cli_table_new(5);
      cli_table_row(t, g_strdup("node"), g_strdup("state"), g_strdup("op"),
                    g_strdup("tensors"), g_strdup("bytes"));
    }
    const char *r = weir_node_attr_string(n, "reduce", NULL);
    cli_table_row(
        t, g_strdup_printf("%u %s", n->id, n->label), g_strdup(s->label),
        r ? g_strdup_printf("%s (%s)", n->op, r) : g_strdup(n->op),
        g_strdup_printf("%u", wait ? n->out_conns->len : n->in_conns->len),
        wait ? g_strdup("(ends)") : cli_format_quantity(&nc->comm_bytes, TRUE));
  }
  if (t)
    cli_table_print(t);
}

int cli_cmd_info(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  g_autofree char *info_count = NULL, *level_text = NULL;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"opt-level", 'O', 0, G_OPTION_ARG_STRING, &level_text,
       "Apply the pipeline of an optimization level first, as weir run "
       "does (default: the program as it is)",
       "N"},
      {"count", 0, 0, G_OPTION_ARG_STRING, &info_count,
       "Count the program as it is (as-is, the default), as the code "
       "generator compiles it (compiled: library nodes with a native "
       "implementation kept, the others expanded), or with every library "
       "node expanded into maps (expanded)",
       "as-is|compiled|expanded"},
      {NULL}};
  if (!cli_parse_options("info", "FILE", entries, &argc, &argv))
    return 2;
  const char *count = info_count ? info_count : "as-is";
  if (argc != 2 ||
      (strcmp(count, "as-is") != 0 && strcmp(count, "compiled") != 0 &&
       strcmp(count, "expanded") != 0)) {
    fprintf(stderr, "usage: weir info FILE [-O0|-O1|-O2|-O3] "
                    "[--count as-is|compiled|expanded] [-D SYM=VALUE]...\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = cli_parse_defines(defines, &error);
  if (!bindings) {
    cli_print_error("info", error);
    return 2;
  }
  /* with -O, the program as `weir run` prepares it: an ONNX model imported
   * with the -D values in its shapes */
  WeirOnnxImportOptions io = {.symbols = bindings};
  g_autoptr(WeirGraph) g =
      cli_load_program("info", argv[1], level_text ? &io : NULL, NULL);
  if (!g)
    return 1;
  guint level = 0;
  if (level_text && (!cli_opt_level("info", level_text, NULL, &level) ||
                     !cli_optimize("info", argv[1], g, level, bindings, NULL)))
    return 1;
  if (!weir_graph_check_sizes(g, bindings, &error)) {
    fprintf(stderr, "weir info: %s: %s\n", argv[1], error->message);
    return 1;
  }
  g_autoptr(GPtrArray) too_big = g_ptr_array_new_with_free_func(g_free);
  weir_graph_check_size_limits(g, too_big, too_big);
  for (guint i = 0; i < too_big->len; i++)
    fprintf(stderr, "weir info: warning: %s\n",
            (const char *)g_ptr_array_index(too_big, i));
  if ((strcmp(count, "compiled") == 0 && !weir_native_expand_rest(g, &error)) ||
      (strcmp(count, "expanded") == 0 &&
       !weir_expand_all(g, NULL, NULL, &error))) {
    fprintf(stderr, "weir info: %s: --count %s: %s\n", argv[1], count,
            error->message);
    return 1;
  }
  /* the modeled traffic uses the cache of this machine's profile (the
   * cached measurement when there is one; never measured here) */
  g_autoptr(WeirHwProfile) hw = weir_hw_profile_cached();
  gint64 cache = weir_hw_model_cache_bytes(hw);
  g_autoptr(WeirAnalysis) a =
      weir_analysis_compute_traffic(g, bindings, cache, &error);
  if (!a) {
    cli_print_error("info", error);
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
  CliTable *t = cli_table_new(5);
  cli_table_row(t, g_strdup("name"), g_strdup("dtype"), g_strdup("shape"),
                g_strdup("kind"), g_strdup("size"));
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    g_autoptr(WeirExpr) bytes = weir_container_bytes(c);
    gint64 v;
    char *size;
    if (weir_expr_eval(bytes, bindings, &v, NULL))
      size = cli_format_bytes(v);
    else {
      g_autofree char *e = weir_expr_to_string(bytes);
      size = g_strdup_printf("%s B", e);
    }
    const char *kind = c->initial     ? "constant"
                       : c->transient ? "transient"
                                      : "argument";
    cli_table_row(t, g_strdup(c->name), g_strdup(weir_dtype_name(c->dtype)),
                  cli_shape_text(c),
                  c->initializer ? g_strdup_printf("%s (initializer %s)", kind,
                                                   c->initializer)
                                 : g_strdup(kind),
                  size);
  }
  cli_table_print(t);

  g_autofree char *cache_text = cli_format_bytes(cache);
  printf("\nData movement and FLOPs per state (each state counted once; "
         "modeled traffic: what must come from memory with a %s cache, "
         "logical volume: what the memlets name, docs/analysis.md)\n",
         cache_text);
  t = cli_table_new(5);
  cli_table_row(t, g_strdup("state"), g_strdup("modeled traffic"),
                g_strdup("logical volume"), g_strdup("FLOPs"),
                g_strdup("FLOP/byte of traffic"));
  for (guint i = 0; i < a->states->len; i++) {
    const WeirStateCost *sc = g_ptr_array_index(a->states, i);
    const WeirState *s = weir_graph_state(g, sc->state);
    cli_table_row(t, g_strdup_printf("%u %s", s->id, s->label),
                  cli_format_quantity(&sc->traffic, TRUE),
                  cli_format_quantity(&sc->bytes, TRUE),
                  cli_format_quantity(&sc->flops, FALSE),
                  format_intensity(&sc->flops, &sc->traffic));
  }
  cli_table_row(t, g_strdup("total"),
                cli_format_quantity(&a->total_traffic, TRUE),
                cli_format_quantity(&a->total_bytes, TRUE),
                cli_format_quantity(&a->total_flops, FALSE),
                format_intensity(&a->total_flops, &a->total_traffic));
  cli_table_print(t);
  cli_print_tuned_nodes(g);

  g_autofree char *peak = cli_format_quantity(&a->peak_transient_bytes, TRUE);
  printf("\nPeak transient memory  %s", peak);
  if (a->peak_live && a->peak_live->len) {
    printf("  (");
    for (guint i = 0; i < a->peak_live->len; i++)
      printf("%s%s", i ? ", " : "", (char *)g_ptr_array_index(a->peak_live, i));
    printf(")");
  }
  printf("\n");
  print_communication(g, a);
  printf("\nTop memlets by logical volume\n");
  g_autoptr(GPtrArray) sorted = g_ptr_array_new();
  for (guint i = 0; i < a->memlets->len; i++) {
    WeirMemletCost *mc = g_ptr_array_index(a->memlets, i);
    const WeirState *s = weir_graph_state(g, mc->state);
    const WeirMemlet *m = weir_state_memlet(s, mc->edge);
    if (m && m->data)
      g_ptr_array_add(sorted, mc);
  }
  g_ptr_array_sort(sorted, compare_memlet_bytes);
  t = cli_table_new(6);
  cli_table_row(t, g_strdup("memlet"), g_strdup("state"), g_strdup("data"),
                g_strdup("subset"), g_strdup("volume x runs"),
                g_strdup("bytes"));
  for (guint i = 0; i < sorted->len && i < 10; i++) {
    const WeirMemletCost *mc = g_ptr_array_index(sorted, i);
    const WeirState *s = weir_graph_state(g, mc->state);
    const WeirMemlet *m = weir_state_memlet(s, mc->edge);
    g_autofree char *vol = weir_expr_to_string(m->volume);
    g_autofree char *runs = cli_format_quantity(&mc->executions, FALSE);
    cli_table_row(t,
                  g_strdup_printf("%u (%u -> %u)%s", m->id, m->src, m->dst,
                                  m->wcr ? " wcr" : ""),
                  g_strdup(s->label), g_strdup(m->data),
                  weir_subset_to_string(m->subset),
                  g_strdup_printf("%s x %s", vol, runs),
                  cli_format_quantity(&mc->bytes, TRUE));
  }
  cli_table_print(t);
  return 0;
}

/* --------------------------------------------------------------- validate */

int cli_cmd_validate(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  const GOptionEntry entries[] = {CLI_DEFINE_ENTRY(&defines), {NULL}};
  if (!cli_parse_options("validate", "FILE", entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    fprintf(stderr, "usage: weir validate FILE\n");
    return 2;
  }
  g_autoptr(WeirGraph) g = cli_load_program("validate", argv[1], NULL, NULL);
  if (!g)
    return 1;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  gboolean runnable = weir_graph_check_runnable(g, warnings, &error);
  for (guint i = 0; i < warnings->len; i++)
    fprintf(stderr, "weir validate: warning: %s\n",
            (const char *)g_ptr_array_index(warnings, i));
  if (!runnable) {
    fprintf(stderr, "weir validate: %s:\n%s\n", argv[1], error->message);
    return 1;
  }
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

/* -------------------------------------------------------------------- ops */

static char *count_text(guint lo, guint hi) {
  if (hi == WEIR_OP_VARIADIC)
    return g_strdup_printf("%u+", lo);
  return lo == hi ? g_strdup_printf("%u", lo)
                  : g_strdup_printf("%u-%u", lo, hi);
}

int cli_cmd_ops(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  const GOptionEntry entries[] = {CLI_DEFINE_ENTRY(&defines), {NULL}};
  if (!cli_parse_options("ops", "", entries, &argc, &argv))
    return 2;
  if (argc != 1) {
    fprintf(stderr, "usage: weir ops\n");
    return 2;
  }
  weir_expansions_init();
  g_autoptr(GPtrArray) names = weir_op_names();
  CliTable *t = cli_table_new(5);
  cli_table_row(t, g_strdup("operator"), g_strdup("inputs"),
                g_strdup("outputs"), g_strdup("expansion"),
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
    cli_table_row(
        t,
        info->domain ? g_strdup_printf("%s.%s", info->domain, info->name)
                     : g_strdup(info->name),
        count_text(info->min_inputs, info->max_inputs),
        count_text(info->min_outputs, info->max_outputs),
        g_strdup(weir_op_expansion(info->name, "pure") ? "pure" : "-"),
        g_string_free(attrs, FALSE));
  }
  cli_table_print(t);
  printf("\n%u operators ('!': required attribute)\n", names->len);
  return 0;
}
