/* bench-transforms.c — what the GUI's transformations panel costs
 * (docs/performance.md, "GUI"; not a pass/fail test: it prints a table).
 *
 *   bench-transforms [--chain N] [--models a,b] [--only NAME]
 *                    [--no-legality] [--dump FILE]
 *
 * Programs: the chain of N element-wise maps the GUI figures use (N = 500
 * gives 2,001 nodes: access, then map entry, tasklet, map exit, access per
 * map; the same program tests/gui/test-gui-app.c opens), then each sample
 * model of samples/models imported as the GUI imports it (no options) and
 * expanded (weir_expand_all).  --chain 0 skips the chain, --models none the
 * models.
 *
 * For every registered transformation it prints the sites found, the time
 * (wall ms, and the thread's CPU ms in parentheses)
 * of weir_transform_sites (what the panel's worker runs for every
 * transformation after each change) and the time of weir_transform_can_apply
 * on every site with default parameters (what the worker runs for the
 * selected transformation's sites).  The per-program total line is the
 * panel refill at its worst: every transformation's sites, and the
 * legality of every site of every transformation.
 *
 * --dump FILE writes every site (its description) and its verdict with the
 * reason, per program and transformation, so that two builds can be
 * compared with diff (the results must not change with speed-ups).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include "weir-expand.h"
#include "weir-import.h"
#include "weir-init.h"
#include "weir-json.h"
#include "weir-transform.h"

#include "../chain-program.h"

static gint opt_chain = 500;
static char *opt_models, *opt_only, *opt_dump;
static gboolean opt_no_legality;

static const GOptionEntry entries[] = {
    {"chain", 'c', 0, G_OPTION_ARG_INT, &opt_chain,
     "Maps in the chain program (default 500: 2,001 nodes; 0: none)", "N"},
    {"models", 'm', 0, G_OPTION_ARG_STRING, &opt_models,
     "Sample models, comma-separated (default: all of samples/models; "
     "'none': no model)",
     "a,b"},
    {"only", 'o', 0, G_OPTION_ARG_STRING, &opt_only, "Only this transformation",
     "NAME"},
    {"no-legality", 0, 0, G_OPTION_ARG_NONE, &opt_no_legality,
     "Do not check the legality of the sites", NULL},
    {"dump", 'd', 0, G_OPTION_ARG_FILENAME, &opt_dump,
     "Write every site and its verdict to FILE", "FILE"},
    G_OPTION_ENTRY_NULL};

static const char *const all_models[] = {
    "mlp",     "digits_mlp", "digits_cnn",  "lenet",
    "lenet64", "resnet",     "transformer", NULL};

static WeirGraph *load_chain(guint ops, GError **error) {
  g_autofree char *text = chain_json(ops);
  return weir_graph_from_json(text, -1, "<chain>", error);
}

static WeirGraph *load_model(const char *name, GError **error) {
  g_autofree char *file = g_strdup_printf("%s.onnx", name);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", file, NULL);
  g_autoptr(WeirGraph) g = weir_onnx_import(path, NULL, error);
  if (!g || !weir_expand_all(g, NULL, NULL, error))
    return NULL;
  return g_steal_pointer(&g);
}

static guint count_nodes(const WeirGraph *g) {
  guint n = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    n += s->nodes->len;
  }
  return n;
}

static double now_ms(void) {
  return (double)g_get_monotonic_time() / 1e3;
}

/* CPU time of this thread: the machine is shared, so wall times depend on
 * the load, CPU times much less. */
static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void bench_program(const char *what, const WeirGraph *g, FILE *dump) {
  g_autoptr(GPtrArray) all = weir_transforms_list();
  printf("\n%s: %u nodes\n", what, count_nodes(g));
  printf("%-26s %6s %10s %8s %10s %8s %6s\n", "transformation", "sites",
         "enumerate", "(cpu)", "legality", "(cpu)", "legal");
  double total_enum = 0, total_legal = 0, total_enum_cpu = 0,
         total_legal_cpu = 0;
  guint total_sites = 0;
  if (dump)
    fprintf(dump, "# program %s\n", what);
  for (guint i = 0; i < all->len; i++) {
    const WeirTransformInfo *t = g_ptr_array_index(all, i);
    if (opt_only && strcmp(t->name, opt_only) != 0)
      continue;
    double t0 = now_ms(), c0 = cpu_ms();
    g_autoptr(GArray) sites = weir_transform_sites(t, g);
    double enum_ms = now_ms() - t0, enum_cpu = cpu_ms() - c0;
    g_autoptr(GError) perr = NULL;
    g_autoptr(WeirParams) p = weir_params_parse(t, NULL, &perr);
    guint legal = 0;
    double legal_ms = 0, legal_cpu = 0;
    if (dump)
      fprintf(dump, "## %s: %u sites\n", t->name, sites->len);
    for (guint k = 0; !opt_no_legality && p && k < sites->len; k++) {
      const WeirSite *s = &g_array_index(sites, WeirSite, k);
      g_autofree char *reason = NULL;
      t0 = now_ms();
      c0 = cpu_ms();
      gboolean ok = weir_transform_can_apply(t, g, s, p, &reason);
      legal_ms += now_ms() - t0;
      legal_cpu += cpu_ms() - c0;
      legal += ok;
      if (dump) {
        g_autofree char *d = weir_site_describe(g, s);
        fprintf(dump, "%s: %s\n", d, ok ? "legal" : reason);
      }
    }
    printf("%-26s %6u %10.1f %8.1f %10.1f %8.1f %6u\n", t->name, sites->len,
           enum_ms, enum_cpu, legal_ms, legal_cpu, legal);
    fflush(stdout);
    total_enum += enum_ms;
    total_legal += legal_ms;
    total_enum_cpu += enum_cpu;
    total_legal_cpu += legal_cpu;
    total_sites += sites->len;
  }
  printf("%-26s %6u %10.1f %8.1f %10.1f %8.1f\n", "total", total_sites,
         total_enum, total_enum_cpu, total_legal, total_legal_cpu);
}

int main(int argc, char **argv) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GOptionContext) ctx =
      g_option_context_new("- time the transformations panel's scans");
  g_option_context_add_main_entries(ctx, entries, NULL);
  if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
    fprintf(stderr, "bench-transforms: %s\n", error->message);
    return 2;
  }
  weir_init();
  if (opt_only && !weir_transform_lookup(opt_only)) {
    fprintf(stderr, "bench-transforms: no transformation '%s'\n", opt_only);
    return 2;
  }
  FILE *dump = NULL;
  if (opt_dump && !(dump = fopen(opt_dump, "w"))) {
    fprintf(stderr, "bench-transforms: cannot write %s\n", opt_dump);
    return 2;
  }
  int status = 0;
  if (opt_chain > 0) {
    g_autoptr(WeirGraph) g = load_chain((guint)opt_chain, &error);
    if (!g) {
      fprintf(stderr, "bench-transforms: chain: %s\n", error->message);
      status = 1;
    } else {
      g_autofree char *what = g_strdup_printf("chain of %d maps", opt_chain);
      bench_program(what, g, dump);
    }
  }
  g_auto(GStrv) models = opt_models ? g_strsplit(opt_models, ",", -1)
                                    : g_strdupv((GStrv)all_models);
  for (guint i = 0; models[i]; i++) {
    if (strcmp(models[i], "none") == 0 || !*models[i])
      continue;
    g_clear_error(&error);
    g_autoptr(WeirGraph) g = load_model(models[i], &error);
    if (!g) {
      fprintf(stderr, "bench-transforms: %s: %s\n", models[i], error->message);
      status = 1;
      continue;
    }
    g_autofree char *what = g_strdup_printf("%s (expanded)", models[i]);
    bench_program(what, g, dump);
  }
  if (dump)
    fclose(dump);
  return status;
}
