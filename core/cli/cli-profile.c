/* cli-profile.c — `weir profile MODEL`: time per node of an instrumented
 * kernel beside its FLOPs, bytes and roofline bound (core/weir-profile.h,
 * docs/cli.md, docs/analysis.md). */
#include <errno.h>
#include <string.h>

#include <json-c/json.h>

#include "cli.h"
#ifdef WEIR_HAVE_ROOFLINE_PNG
#include <fontconfig/fontconfig.h>

#include "weir-roofline.h"
#endif

/* The arguments of compiled code, random (seed), in a table name ->
 * WeirTensor* (owned).  NULL after printing. */
static GHashTable *random_arguments(const WeirGraph *g, GHashTable *bindings,
                                    guint64 seed, const char *file) {
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) list = weir_codegen_arguments(g);
  for (guint i = 0; i < list->len; i++) {
    const WeirContainer *c = g_ptr_array_index(list, i);
    g_autoptr(GError) error = NULL;
    WeirTensor *t = weir_evaluate_random_input(c, bindings, seed, &error);
    if (!t) {
      fprintf(stderr,
              "weir profile: %s: argument '%s': %s (bind its symbols with "
              "-D)\n",
              file, c->name, error->message);
      return NULL;
    }
    g_hash_table_insert(args, c->name, t);
  }
  return g_steal_pointer(&args);
}

static char *fmt_count(gboolean known, gint64 v) {
  return known ? g_strdup_printf("%" G_GINT64_FORMAT, v) : g_strdup("-");
}

static char *fmt_rate(gboolean known, double v) {
  return known ? g_strdup_printf("%.3f", v) : g_strdup("-");
}

/* A CSV field: quoted when it holds a comma, a quote or a newline. */
static void csv_field(GString *s, const char *text, gboolean last) {
  if (strpbrk(text, ",\"\n")) {
    g_string_append_c(s, '"');
    for (const char *p = text; *p; p++) {
      if (*p == '"')
        g_string_append_c(s, '"');
      g_string_append_c(s, *p);
    }
    g_string_append_c(s, '"');
  } else
    g_string_append(s, text);
  g_string_append_c(s, last ? '\n' : ',');
}

static void print_csv(const WeirProfile *p) {
  GString *s = g_string_new(
      "state,node,label,op,seconds,share,flops,bytes,gflops,gbs,bound,"
      "bound_seconds,fraction\n");
  for (guint i = 0; i < p->nodes->len; i++) {
    const WeirProfileNode *n = g_ptr_array_index(p->nodes, i);
    g_autofree char *st = g_strdup_printf("%u", n->state);
    g_autofree char *id = g_strdup_printf("%u", n->node);
    g_autofree char *sec = g_strdup_printf("%.9g", n->seconds);
    g_autofree char *share = g_strdup_printf("%.6f", n->share);
    g_autofree char *fl = n->flops_known
                              ? g_strdup_printf("%" G_GINT64_FORMAT, n->flops)
                              : g_strdup("");
    g_autofree char *by = n->bytes_known
                              ? g_strdup_printf("%" G_GINT64_FORMAT, n->bytes)
                              : g_strdup("");
    g_autofree char *gf = g_strdup_printf("%.6g", n->gflops);
    g_autofree char *gb = g_strdup_printf("%.6g", n->gbs);
    g_autofree char *bs = g_strdup_printf("%.9g", n->bound_seconds);
    g_autofree char *fr = g_strdup_printf("%.6f", n->fraction);
    csv_field(s, st, FALSE);
    csv_field(s, id, FALSE);
    csv_field(s, n->label, FALSE);
    csv_field(s, n->op, FALSE);
    csv_field(s, sec, FALSE);
    csv_field(s, share, FALSE);
    csv_field(s, fl, FALSE);
    csv_field(s, by, FALSE);
    csv_field(s, gf, FALSE);
    csv_field(s, gb, FALSE);
    csv_field(s, n->bound ? n->bound : "", FALSE);
    csv_field(s, bs, FALSE);
    csv_field(s, fr, TRUE);
  }
  fputs(s->str, stdout);
  g_string_free(s, TRUE);
}

static void print_json(const WeirProfile *p, const char *name,
                       const char *file) {
  json_object *root = json_object_new_object();
  json_object_object_add(root, "program", json_object_new_string(name));
  json_object_object_add(root, "file", json_object_new_string(file));
  json_object_object_add(root, "threads", json_object_new_int(p->threads));
  json_object_object_add(root, "repetitions",
                         json_object_new_int((int)p->repetitions));
  json_object_object_add(root, "bytes_measure",
                         json_object_new_string("modeled traffic"));
  json_object_object_add(root, "peak_gflops",
                         json_object_new_double(p->peak_gflops));
  json_object_object_add(root, "bandwidth_gbs",
                         json_object_new_double(p->bandwidth_gbs));
  json_object_object_add(root, "node_sum_seconds",
                         json_object_new_double(p->node_sum));
  json_object_object_add(root, "sum_median_seconds",
                         json_object_new_double(p->sum_median));
  json_object_object_add(root, "run_median_seconds",
                         json_object_new_double(p->run_median));
  json_object_object_add(root, "instrumented_median_seconds",
                         json_object_new_double(p->instrumented_median));
  json_object *nodes = json_object_new_array();
  for (guint i = 0; i < p->nodes->len; i++) {
    const WeirProfileNode *n = g_ptr_array_index(p->nodes, i);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "state", json_object_new_int((int)n->state));
    json_object_object_add(o, "state_label",
                           json_object_new_string(n->state_label));
    json_object_object_add(o, "node", json_object_new_int((int)n->node));
    json_object_object_add(o, "label", json_object_new_string(n->label));
    json_object_object_add(o, "op", json_object_new_string(n->op));
    json_object_object_add(o, "seconds", json_object_new_double(n->seconds));
    json_object_object_add(o, "share", json_object_new_double(n->share));
    json_object_object_add(
        o, "flops", n->flops_known ? json_object_new_int64(n->flops) : NULL);
    json_object_object_add(
        o, "bytes", n->bytes_known ? json_object_new_int64(n->bytes) : NULL);
    json_object_object_add(o, "gflops", json_object_new_double(n->gflops));
    json_object_object_add(o, "gbs", json_object_new_double(n->gbs));
    json_object_object_add(o, "bound",
                           n->bound ? json_object_new_string(n->bound) : NULL);
    json_object_object_add(o, "bound_seconds",
                           json_object_new_double(n->bound_seconds));
    json_object_object_add(o, "fraction", json_object_new_double(n->fraction));
    json_object_array_add(nodes, o);
  }
  json_object_object_add(root, "nodes", nodes);
  puts(json_object_to_json_string_ext(
      root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(root);
}

static void print_text(const WeirProfile *p, const WeirGraph *g,
                       const char *file, guint level, const char *threads) {
  printf("program   %s  (%s, -O%u), threads %s, %u repetitions (median per "
         "node)\n",
         g->name, file, level, threads, p->repetitions);
  if (p->peak_gflops > 0)
    printf("roofline  peak %.1f GFLOP/s, bandwidth %.1f GB/s (weir hw); "
           "bytes: modeled traffic\n",
           p->peak_gflops, p->bandwidth_gbs);
  else
    printf("roofline  none: the hardware profile is not measured (weir hw)\n");
  CliTable *t = cli_table_new(11);
  cli_table_row(t, g_strdup("node"), g_strdup("op"), g_strdup("time"),
                g_strdup("share"), g_strdup("FLOPs"), g_strdup("bytes"),
                g_strdup("GFLOP/s"), g_strdup("GB/s"), g_strdup("bound"),
                g_strdup("of bound"), g_strdup("state"));
  for (guint i = 0; i < p->nodes->len; i++) {
    const WeirProfileNode *n = g_ptr_array_index(p->nodes, i);
    cli_table_row(
        t, g_strdup_printf("%u %s", n->node, n->label), g_strdup(n->op),
        cli_format_seconds(n->seconds),
        g_strdup_printf("%.1f%%", 100 * n->share),
        fmt_count(n->flops_known, n->flops),
        n->bytes_known ? cli_format_bytes(n->bytes) : g_strdup("-"),
        fmt_rate(n->flops_known && n->seconds >= WEIR_PROFILE_RATE_MIN_SECONDS,
                 n->gflops),
        fmt_rate(n->bytes_known && n->seconds >= WEIR_PROFILE_RATE_MIN_SECONDS,
                 n->gbs),
        g_strdup(n->bound ? n->bound : "-"),
        n->bound ? g_strdup_printf("%.1f%%", 100 * n->fraction) : g_strdup("-"),
        g_strdup(n->state_label));
  }
  cli_table_print(t);
  g_autofree char *sum = cli_format_seconds(p->node_sum);
  g_autofree char *run = cli_format_seconds(p->run_median);
  g_autofree char *ins = cli_format_seconds(p->instrumented_median);
  printf("sum of node times %s; uninstrumented run %s (median), sum / run "
         "%.1f%%; instrumented run %s\n",
         sum, run, p->run_median > 0 ? 100 * p->node_sum / p->run_median : 0,
         ins);
  g_autofree char *per = cli_format_seconds(p->sum_median);
  printf("per run   the nodes took %s of an instrumented run (median of the "
         "runs' sums), %.1f%% of the uninstrumented run\n",
         per, p->run_median > 0 ? 100 * p->sum_median / p->run_median : 0);
}

int cli_cmd_profile(int argc, char **argv) {
  g_auto(GStrv) defines = NULL, impls = NULL;
  g_auto(CliCompile) cc = {0};
  g_autofree char *level_text = NULL, *format = NULL, *plot = NULL;
  gint opt_threads = 0, opt_reps = 10, opt_warmup = 3;
  gint64 seed = 1;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      CLI_OPT_LEVEL_ENTRY(&level_text),
      {"threads", 't', 0, G_OPTION_ARG_INT, &opt_threads,
       "OpenMP threads (default: OMP_NUM_THREADS or one per processor)", "N"},
      {"reps", 'r', 0, G_OPTION_ARG_INT, &opt_reps,
       "Timed repetitions of each kernel (default 10)", "N"},
      {"warmup", 'w', 0, G_OPTION_ARG_INT, &opt_warmup,
       "Untimed warm-up runs of each kernel (default 3)", "N"},
      {"seed", 0, 0, G_OPTION_ARG_INT64, &seed,
       "Seed of the random arguments (default 1)", "N"},
      {"format", 0, 0, G_OPTION_ARG_STRING, &format,
       "Output: text (default), csv or json", "FORMAT"},
      {"plot", 0, 0, G_OPTION_ARG_FILENAME, &plot,
       "Write the roofline with one point per node (.svg or .png)", "FILE"},
      CLI_COMPILE_ENTRIES(&impls, &cc),
      {NULL}};
  const char *usage =
      "usage: weir profile MODEL [-O0|-O1|-O2|-O3] [-D SYM=VALUE]... "
      "[--threads N] [--reps N>=1] [--warmup N>=0] [--format "
      "text|csv|json] [--plot ROOFLINE.svg|.png]\n";
  if (!cli_parse_options("profile", "MODEL", entries, &argc, &argv))
    return 2;
  if (argc != 2 || opt_reps < 1 || opt_warmup < 0 || opt_threads < 0 ||
      (format && strcmp(format, "text") != 0 && strcmp(format, "csv") != 0 &&
       strcmp(format, "json") != 0)) {
    fputs(usage, stderr);
    return 2;
  }
#ifdef WEIR_HAVE_ROOFLINE_PNG
  gboolean png = plot && g_str_has_suffix(plot, ".png");
#else
  gboolean png = FALSE;
#endif
  if (plot && !png && !g_str_has_suffix(plot, ".svg")) {
#ifdef WEIR_HAVE_ROOFLINE_PNG
    fprintf(stderr, "weir profile: --plot %s: write .svg or .png\n", plot);
#else
    fprintf(stderr,
            "weir profile: --plot %s: this weir was built without cairo: "
            "only SVG is written (.svg; convert it, e.g. rsvg-convert)\n",
            plot);
#endif
    return 2;
  }
  const char *file = argv[1];
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = cli_parse_defines(defines, &error);
  if (!bindings) {
    cli_print_error("profile", error);
    return 2;
  }
  guint level = 0;
  if (!cli_opt_level("profile", level_text, file, &level))
    return 2;
  WeirOnnxImportOptions iopts = {.symbols = bindings};
  g_autoptr(WeirGraph) g = cli_load_program("profile", file, &iopts, impls);
  if (!g)
    return 1;
  if (!cli_optimize("profile", file, g, level, bindings, NULL))
    return 1;
  if (!weir_graph_check_memory(g, bindings, 0, &error)) {
    fprintf(stderr, "weir profile: %s: %s\n", file, error->message);
    return 1;
  }
  g_autoptr(GHashTable) args =
      random_arguments(g, bindings, (guint64)seed, file);
  if (!args)
    return 1;
  g_autoptr(WeirHwProfile) hw = weir_hw_profile_get(FALSE, &error);
  if (!hw) {
    fprintf(stderr, "weir profile: note: no roofline: %s\n", error->message);
    g_clear_error(&error);
  }
  WeirCompileOptions copts = cli_compile_options(&cc);
  WeirProfileOptions po = {.warmup = (guint)opt_warmup,
                           .repetitions = (guint)opt_reps,
                           .threads = opt_threads,
                           .compile = &copts,
                           .hw = hw};
  g_autoptr(WeirProfile) p = weir_profile_run(g, bindings, args, &po, &error);
  if (!p) {
    cli_print_compile_error("profile", file, error);
    return 1;
  }
  g_autofree char *threads = opt_threads > 0
                                 ? g_strdup_printf("%d", opt_threads)
                                 : g_strdup("default");
  if (!format || strcmp(format, "text") == 0)
    print_text(p, g, file, level, threads);
  else if (strcmp(format, "csv") == 0)
    print_csv(p);
  else
    print_json(p, g->name, file);
  if (plot) {
    g_autofree char *title =
        g_strdup_printf("%s: roofline, one point per node", g->name);
    gboolean ok;
#ifdef WEIR_HAVE_ROOFLINE_PNG
    if (png) {
      ok = weir_roofline_write_png(p, title, 900, 600, plot, &error);
      /* cairo's toy text API keeps fonts and fontconfig its caches for
       * the process: release both (the sanitizers' leak check) */
      cairo_debug_reset_static_data();
      FcFini();
    } else
#endif
    {
      g_autofree char *svg = weir_profile_roofline_svg(p, title);
      ok = g_file_set_contents(plot, svg, -1, &error);
    }
    if (!ok) {
      cli_print_error("profile", error);
      return 1;
    }
    if (!format || strcmp(format, "text") == 0)
      printf("roofline  written to %s\n", plot);
  }
  return 0;
}
