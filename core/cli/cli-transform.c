/* cli-transform.c — commands that change a program: `weir expand`,
 * `transforms`, `apply` (to a program file or in a workspace) and
 * `optimize` (a recipe). */
#include <string.h>

#include "cli.h"

/* ----------------------------------------------------------------- expand */

int cli_cmd_expand(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  g_autofree char *output_path = NULL, *op_type = NULL;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
       "Write the expanded program to FILE (JSON)", "FILE"},
      {"op", 0, 0, G_OPTION_ARG_STRING, &op_type,
       "Expand only library nodes of this operator", "TYPE"},
      {NULL}};
  if (!cli_parse_options("expand", "FILE -o OUT.json", entries, &argc, &argv))
    return 2;
  if (argc != 2 || !output_path) {
    fprintf(stderr, "usage: weir expand FILE [--op TYPE] -o OUT.json\n");
    return 2;
  }
  g_autoptr(WeirGraph) g = cli_load_program("expand", argv[1], NULL, NULL);
  if (!g)
    return 1;
  g_autoptr(GError) error = NULL;
  guint count = 0;
  if (!weir_lower(g, &(WeirLowerOptions){.op = op_type, .count = &count},
                  &error)) {
    fprintf(stderr, "weir expand: %s: %s\n", argv[1], error->message);
    return 1;
  }
  if (!weir_graph_save(g, output_path, &error)) {
    cli_print_error("expand", error);
    return 1;
  }
  printf("%s -> %s: expanded %u library node%s%s%s (%u left)\n", argv[1],
         output_path, count, count == 1 ? "" : "s", op_type ? " of " : "",
         op_type ? op_type : "", cli_count_library_nodes(g));
  return 0;
}

static int apply_workspace(const char *path, const char *name,
                           const char *output_path, const char *site_arg,
                           char **param_args);

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

int cli_cmd_transforms(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  gint tier_filter = 0;
  g_autofree char *node_filter = NULL;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"tier", 0, 0, G_OPTION_ARG_INT, &tier_filter,
       "Only transformations of this tier (1-4)", "N"},
      {"node", 0, 0, G_OPTION_ARG_STRING, &node_filter,
       "Only sites that include this node (label or id)", "NAME"},
      {NULL}};
  if (!cli_parse_options("transforms", "FILE", entries, &argc, &argv))
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
  g_autoptr(WeirGraph) g = cli_load_program("transforms", argv[1], NULL, NULL);
  if (!g)
    return 1;
  cli_load_transformations("transforms");
  g_autoptr(GPtrArray) list = weir_transforms_list();
  guint n_transforms = 0, n_sites = 0, n_legal = 0;
  for (guint i = 0; i < list->len; i++) {
    const WeirTransformInfo *t = g_ptr_array_index(list, i);
    if (tier_filter && t->tier != (guint)tier_filter)
      continue;
    g_autoptr(GArray) sites = weir_transform_sites(t, g);
    CliTable *table = NULL;
    for (guint k = 0; k < sites->len; k++) {
      const WeirSite *site = &g_array_index(sites, WeirSite, k);
      if (node_filter && !site_has_node(g, site, node_filter))
        continue;
      if (!table) {
        printf("%stier %u  %s: %s\n", n_transforms ? "\n" : "", t->tier,
               t->name, t->description ? t->description : "");
        table = cli_table_new(3);
        n_transforms++;
      }
      char *reason = NULL;
      gboolean legal = weir_transform_can_apply(t, g, site, NULL, &reason);
      g_autofree char *where = weir_site_describe(g, site);
      n_sites++;
      n_legal += legal;
      cli_table_row(
          table, site_option(site), g_strdup(legal ? "legal" : "not legal"),
          legal ? g_strdup(where) : g_strdup_printf("%s: %s", where, reason));
      g_free(reason);
    }
    if (table)
      cli_table_print(table);
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

/* "+1.5 KiB (+25.0%)" between two known quantities. */
static char *format_delta(const WeirQuantity *before, const WeirQuantity *after,
                          gboolean bytes) {
  if (!before->known || !after->known)
    return g_strdup("");
  gint64 d = after->value - before->value;
  if (d == 0)
    return g_strdup("  (unchanged)");
  g_autofree char *mag =
      bytes ? cli_format_bytes(d < 0 ? -d : d)
            : g_strdup_printf("%" G_GINT64_FORMAT, d < 0 ? -d : d);
  if (before->value == 0)
    return g_strdup_printf("  (%s%s)", d < 0 ? "-" : "+", mag);
  return g_strdup_printf("  (%s%s, %+.1f%%)", d < 0 ? "-" : "+", mag,
                         100.0 * (double)d / (double)before->value);
}

int cli_cmd_apply(int argc, char **argv) {
  g_auto(GStrv) defines = NULL, param_args = NULL;
  g_autofree char *site_arg = NULL, *output_path = NULL;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"site", 0, 0, G_OPTION_ARG_STRING, &site_arg,
       "The site: node ids as listed by 'weir transforms' (N,.. or "
       "STATE:N,..), @K (the K-th site) or a pattern of its first node's "
       "label",
       "SITE"},
      {"param", 'p', 0, G_OPTION_ARG_STRING_ARRAY, &param_args,
       "Set a parameter of the transformation", "K=V"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
       "Write the transformed program here", "OUT.json"},
      {NULL}};
  if (!cli_parse_options("apply", "FILE NAME", entries, &argc, &argv))
    return 2;
  if (argc == 3 && cli_is_workspace_path(argv[1]))
    return apply_workspace(argv[1], argv[2], output_path, site_arg, param_args);
  if (argc != 3 || !output_path) {
    fprintf(stderr, "usage: weir apply FILE NAME [--site N[,N...]] "
                    "[--param K=V]... -o OUT.json [-D SYM=VALUE]...\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = cli_parse_defines(defines, &error);
  if (!bindings) {
    cli_print_error("apply", error);
    return 2;
  }
  g_autoptr(WeirGraph) g = cli_load_program("apply", argv[1], NULL, NULL);
  if (!g)
    return 1;
  cli_load_transformations("apply");
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
    cli_print_error("apply", error);
    return 2;
  }
  WeirSite site;
  if (site_arg) {
    if (!weir_site_parse(g, t, site_arg, &site, &error)) {
      cli_print_error("apply", error);
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
    cli_print_error("apply", error);
    return 1;
  }
  g_autofree char *ptext = weir_params_to_string(params);
  printf("applied %s at %s%s%s%s in %.3f s\n", t->name, where,
         *ptext ? " (" : "", ptext, *ptext ? ")" : "", report.seconds);
  g_autofree char *bb = cli_format_quantity(&report.bytes_before, TRUE);
  g_autofree char *ba = cli_format_quantity(&report.bytes_after, TRUE);
  g_autofree char *bd =
      format_delta(&report.bytes_before, &report.bytes_after, TRUE);
  g_autofree char *fb = cli_format_quantity(&report.flops_before, FALSE);
  g_autofree char *fa = cli_format_quantity(&report.flops_after, FALSE);
  g_autofree char *fd =
      format_delta(&report.flops_before, &report.flops_after, FALSE);
  printf("  logical volume %s -> %s%s\n", bb, ba, bd);
  printf("  FLOPs          %s -> %s%s\n", fb, fa, fd);
  weir_apply_report_clear(&report);
  if (!weir_graph_save(g, output_path, &error)) {
    cli_print_error("apply", error);
    return 1;
  }
  printf("wrote %s\n", output_path);
  return 0;
}

/* ------------------------------------------------------- apply (workspace) */

/* weir apply WS.weir NAME: a new step in the workspace's history. */
static int apply_workspace(const char *path, const char *name,
                           const char *output_path, const char *site_arg,
                           char **param_args) {
  if (output_path) {
    fprintf(stderr,
            "weir apply: %s: a workspace is saved in place (-o is "
            "for program files)\n",
            path);
    return 2;
  }
  g_autoptr(WeirSession) s = cli_open_workspace("apply", path);
  if (!s)
    return 1;
  cli_load_transformations("apply");
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
  if (!weir_site_parse(weir_session_current(s), t, site_arg, &site, &error)) {
    cli_print_error("apply", error);
    return 1;
  }
  const WeirStep *st = weir_session_apply(
      s, t->name, &site, (const char *const *)param_args, &error);
  if (!st) {
    cli_print_error("apply", error);
    return 1;
  }
  g_autofree char *bytes =
      cli_format_change(&st->bytes_before, &st->bytes_after, TRUE);
  g_autofree char *flops =
      cli_format_change(&st->flops_before, &st->flops_after, FALSE);
  printf("step %u: %s at %s (%s) in %.3f s\n  logical volume %s, FLOPs %s\n",
         st->index, st->transform, st->site_text, st->params, st->seconds,
         bytes, flops);
  if (!cli_save_workspace("apply", s, path))
    return 1;
  cli_print_workspace_summary(path, s);
  return 0;
}

/* --------------------------------------------------------------- optimize */

int cli_cmd_optimize(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  g_autofree char *recipe_path = NULL, *output_path = NULL;
  gboolean show_report = FALSE, print_pipeline = FALSE;
  g_autofree char *level_text = NULL;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"recipe", 'r', 0, G_OPTION_ARG_FILENAME, &recipe_path,
       "The recipe to apply", "FILE"},
      CLI_OPT_LEVEL_ENTRY(&level_text),
      {"print-pipeline", 0, 0, G_OPTION_ARG_NONE, &print_pipeline,
       "Print the recipe of the optimization level (-O) and exit", NULL},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
       "Write the result: a workspace (.weir, with the history) or a "
       "program (.json)",
       "FILE"},
      {"report", 0, 0, G_OPTION_ARG_NONE, &show_report,
       "Print what every step did", NULL},
      {NULL}};
  if (!cli_parse_options("optimize", "MODEL --recipe R.json|-ON", entries,
                         &argc, &argv))
    return 2;
  guint level;
  if (!cli_opt_level("optimize", level_text, NULL, &level))
    return 2;
  g_autoptr(GError) error = NULL;
  if (print_pipeline) {
    if (argc != 1 || recipe_path) {
      fprintf(stderr,
              "usage: weir optimize --print-pipeline [-O0|-O1|-O2|-O3]\n");
      return 2;
    }
    g_autofree char *text = weir_pipeline_text(level, &error);
    if (!text) {
      cli_print_error("optimize", error);
      return 1;
    }
    fputs(text, stdout);
    return 0;
  }
  if (argc != 2 || (!recipe_path) == (!level_text)) {
    fprintf(stderr,
            "usage: weir optimize MODEL --recipe R.json|-O0|-O1|-O2|-O3 "
            "[-o OUT.weir|OUT.json] [--report] [-D SYM=VALUE]...\n"
            "       weir optimize --print-pipeline [-O0|-O1|-O2|-O3]\n");
    return 2;
  }
  g_autoptr(GHashTable) bindings = cli_parse_defines(defines, &error);
  if (!bindings) {
    cli_print_error("optimize", error);
    return 2;
  }
  g_autoptr(WeirRecipe) recipe = recipe_path
                                     ? weir_recipe_load(recipe_path, &error)
                                     : weir_pipeline_recipe(level, &error);
  if (!recipe) {
    cli_print_error("optimize", error);
    return 1;
  }
  WeirOnnxImportOptions opts = {.symbols = bindings};
  g_autoptr(WeirGraph) g = cli_load_program("optimize", argv[1], &opts, NULL);
  if (!g)
    return 1;
  cli_load_transformations("optimize");
  g_autoptr(WeirRecipeReport) report = weir_recipe_report_new();
  g_autoptr(WeirSession) s = NULL;
  gboolean ok;
  if (output_path && cli_is_workspace_path(output_path)) {
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
    cli_print_error("optimize", error);
    return 1;
  }
  guint applied = 0;
  for (guint i = 0; i < report->steps->len; i++)
    applied += ((WeirRecipeStepReport *)g_ptr_array_index(report->steps, i))
                   ->applied->len;
  g_autofree char *bytes =
      cli_format_change(&report->bytes_before, &report->bytes_after, TRUE);
  g_autofree char *flops =
      cli_format_change(&report->flops_before, &report->flops_after, FALSE);
  g_autofree char *what =
      recipe_path ? g_strdup(recipe_path) : g_strdup_printf("-O%u", level);
  printf("%s: %u recipe step%s, %u application%s\n  logical volume %s\n  "
         "FLOPs          %s\n",
         what, report->steps->len, report->steps->len == 1 ? "" : "s", applied,
         applied == 1 ? "" : "s", bytes, flops);
  if (output_path) {
    gboolean saved = s ? weir_workspace_save(s, output_path, &error)
                       : weir_graph_save(g, output_path, &error);
    if (!saved) {
      cli_print_error("optimize", error);
      return 1;
    }
    printf("wrote %s\n", output_path);
  }
  return 0;
}
