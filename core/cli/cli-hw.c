/* cli-hw.c — `weir hw [--remeasure] [--json]`: the hardware profile
 * (core/weir-hw.h, docs/hardware.md). */
#include "cli.h"

static char *format_cache(gint64 bytes) {
  if (bytes <= 0)
    return g_strdup("unknown");
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) == 0)
    return g_strdup_printf("%" G_GINT64_FORMAT " MiB", bytes / (1024 * 1024));
  return g_strdup_printf("%" G_GINT64_FORMAT " KiB", bytes / 1024);
}

int cli_cmd_hw(int argc, char **argv) {
  g_auto(GStrv) defines = NULL;
  gboolean remeasure = FALSE, json = FALSE;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      {"remeasure", 0, 0, G_OPTION_ARG_NONE, &remeasure,
       "Measure again instead of using the cached profile", NULL},
      {"json", 0, 0, G_OPTION_ARG_NONE, &json, "Print the profile as JSON",
       NULL},
      {NULL}};
  if (!cli_parse_options("hw", "[--remeasure] [--json]", entries, &argc, &argv))
    return 2;
  if (argc != 1) {
    fprintf(stderr, "usage: weir hw [--remeasure] [--json]\n");
    return 2;
  }
  g_autoptr(GError) error = NULL;
  guint before = weir_hw_measure_count();
  g_autoptr(WeirHwProfile) p = weir_hw_profile_get(remeasure, &error);
  if (!p) {
    cli_print_error("hw", error);
    return 1;
  }
  if (json) {
    g_autofree char *text = weir_hw_profile_to_json(p);
    fputs(text, stdout);
    return 0;
  }
  g_autofree char *path = weir_hw_profile_path();
  g_autofree char *l1 = format_cache(p->l1d_bytes);
  g_autofree char *l2 = format_cache(p->l2_bytes);
  g_autofree char *l3 = format_cache(p->l3_bytes);
  printf("cpu            %s\n", p->cpu_model);
  printf("isa            %s (%u floats per vector)\n", weir_hw_isa_name(p->isa),
         p->vector_floats);
  if (p->int8_dot || p->bf16_dot)
    printf("dot products   %s%s%s\n", p->int8_dot ? "int8 (AVX512_VNNI)" : "",
           p->int8_dot && p->bf16_dot ? ", " : "",
           p->bf16_dot ? "bf16 (AVX512_BF16)" : "");
  printf("cores          %u logical, %u physical\n", p->logical_cores,
         p->physical_cores);
  printf("caches         L1d %s, L2 %s per core; L3 %s\n", l1, l2, l3);
  printf("peak f32       %.1f GFLOP/s (1 thread), %.1f GFLOP/s (%u threads)\n",
         p->peak_gflops_1t, p->peak_gflops_all, p->logical_cores);
  printf("bandwidth      %.1f GB/s (triad, %u threads)\n", p->bandwidth_gbs,
         p->logical_cores);
  g_autofree char *model = format_cache(weir_hw_model_cache_bytes(p));
  if (p->cache_knee_bytes > 0) {
    g_autofree char *knee = format_cache(p->cache_knee_bytes);
    printf("cache knee     %s (largest triad working set at half the best "
           "bandwidth or more, 1 thread)\n",
           knee);
    printf("traffic model  %s cache (the knee; docs/analysis.md)\n", model);
  } else
    printf("traffic model  %s cache (L2 + 2 MiB of L3 per core; the knee is "
           "not measured: weir hw --remeasure)\n",
           model);
  printf("profile        %s (%s)\n", path,
         weir_hw_measure_count() > before ? "measured now" : "cached");
  if (p->measured && p->load_average >= 0) {
    printf("measured at    load average %.2f on %u processors\n",
           p->load_average, p->logical_cores);
    /* More runnable work than half the processors: the loops shared the
     * cores with it.  The peak counts each thread's own CPU time, so only
     * the bandwidth (a wall-time rate) is lowered by that. */
    if (p->load_average > 0.5 * p->logical_cores)
      printf("warning        the machine was busy: the bandwidth may be too "
             "low; run `weir hw --remeasure` when it is idle\n");
  }
  return 0;
}
