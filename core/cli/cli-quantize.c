/* cli-quantize.c — `weir quantize`: calibrate a float model on sample data
 * and rewrite it into int8 with the quantize transformation
 * (docs/precision.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "weir-quantize.h"

int cli_cmd_quantize(int argc, char **argv) {
  g_autofree char *calibrate = NULL, *output_path = NULL, *exclude = NULL;
  g_autofree char *method = NULL, *input = NULL, *activations = NULL;
  g_autofree char *ranges_out = NULL, *onnx_out = NULL;
  gboolean per_channel = FALSE;
  double percentile = 99.99;
  const GOptionEntry entries[] = {
      {"calibrate", 0, 0, G_OPTION_ARG_FILENAME, &calibrate,
       "Calibration samples: an .npy batch or a directory of .npy batches",
       "DATA"},
      {"per-channel", 0, 0, G_OPTION_ARG_NONE, &per_channel,
       "One weight scale per output channel", NULL},
      {"exclude", 0, 0, G_OPTION_ARG_STRING, &exclude,
       "Keep the Conv/Gemm/MatMul nodes whose label matches in f32", "REGEX"},
      {"method", 0, 0, G_OPTION_ARG_STRING, &method,
       "Range of a tensor: minmax (default) or percentile", "METHOD"},
      {"percentile", 0, 0, G_OPTION_ARG_DOUBLE, &percentile,
       "Percentile of --method percentile (default 99.99)", "P"},
      {"activations", 0, 0, G_OPTION_ARG_STRING, &activations,
       "Activation type: u8 (default) or s8", "TYPE"},
      {"input", 0, 0, G_OPTION_ARG_STRING, &input,
       "The input the samples feed (default: the only one)", "NAME"},
      {"ranges", 0, 0, G_OPTION_ARG_FILENAME, &ranges_out,
       "Also write the calibrated ranges (the step's parameter) here", "FILE"},
      {"onnx", 0, 0, G_OPTION_ARG_FILENAME, &onnx_out,
       "Also write the quantized model in ONNX's QDQ form (MODEL must be "
       "an ONNX model)",
       "OUT.onnx"},
      {"output", 'o', 0, G_OPTION_ARG_FILENAME, &output_path,
       "The quantized program (.json) or a workspace (.weir) whose history "
       "holds the quantize step",
       "OUT"},
      {NULL}};
  if (!cli_parse_options("quantize", "MODEL", entries, &argc, &argv))
    return 2;
  if (argc != 2 || !calibrate || !output_path) {
    fprintf(stderr,
            "usage: weir quantize MODEL --calibrate DATA "
            "[--per-channel] [--exclude REGEX] [--method "
            "minmax|percentile] [--onnx OUT.onnx] -o OUT.json|OUT.weir\n");
    return 2;
  }
  WeirCalibrateMethod m = WEIR_CALIBRATE_MINMAX;
  if (method && strcmp(method, "percentile") == 0)
    m = WEIR_CALIBRATE_PERCENTILE;
  else if (method && strcmp(method, "minmax") != 0) {
    fprintf(stderr,
            "weir quantize: --method is minmax or percentile, not "
            "'%s'\n",
            method);
    return 2;
  }
  g_autoptr(WeirGraph) g = cli_load_program("quantize", argv[1], NULL, NULL);
  if (!g)
    return 1;
  cli_load_transformations("quantize");
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) batches = weir_quantize_load_samples(calibrate, &error);
  if (!batches) {
    cli_print_error("quantize", error);
    return 1;
  }
  gint64 samples = 0;
  for (guint i = 0; i < batches->len; i++) {
    const WeirTensor *t = g_ptr_array_index(batches, i);
    samples += t->rank ? t->shape[0] : 1;
  }
  gint64 t0 = g_get_monotonic_time();
  g_autofree char *ranges =
      weir_quantize_calibrate(g, input, batches, m, percentile, &error);
  if (!ranges) {
    cli_print_error("quantize", error);
    return 1;
  }
  printf("%s: calibrated on %" G_GINT64_FORMAT " samples in %u batches "
         "(%s) in %.2f s\n",
         argv[1], samples, batches->len,
         m == WEIR_CALIBRATE_MINMAX ? "min/max" : "percentile",
         (g_get_monotonic_time() - t0) / 1e6);
  if (ranges_out && !g_file_set_contents(ranges_out, ranges, -1, &error)) {
    cli_print_error("quantize", error);
    return 1;
  }
  if (onnx_out) {
    if (!weir_quantize_export_qdq(argv[1], ranges, per_channel, exclude,
                                  activations && strcmp(activations, "s8") == 0,
                                  onnx_out, &error)) {
      cli_print_error("quantize", error);
      return 1;
    }
    printf("wrote %s (QDQ)\n", onnx_out);
  }
  g_autoptr(GPtrArray) params = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(params, g_strdup_printf("ranges=%s", ranges));
  g_ptr_array_add(params, g_strdup_printf("per_channel=%s",
                                          per_channel ? "true" : "false"));
  if (exclude)
    g_ptr_array_add(params, g_strdup_printf("exclude=%s", exclude));
  if (activations)
    g_ptr_array_add(params, g_strdup_printf("activations=%s", activations));
  g_ptr_array_add(params, NULL);
  const WeirTransformInfo *t = weir_transform_lookup("quantize");
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  if (sites->len == 0) {
    fprintf(stderr, "weir quantize: %s has no Conv, Gemm or MatMul\n", argv[1]);
    return 1;
  }
  WeirSite site = g_array_index(sites, WeirSite, 0);
  if (cli_is_workspace_path(output_path)) {
    g_autoptr(WeirSession) s = weir_session_new(g, argv[1], NULL, &error);
    if (!s) {
      cli_print_error("quantize", error);
      return 1;
    }
    const WeirStep *st = weir_session_apply(
        s, "quantize", &site, (const char *const *)params->pdata, &error);
    if (!st) {
      cli_print_error("quantize", error);
      return 1;
    }
    g_autofree char *bytes =
        cli_format_change(&st->bytes_before, &st->bytes_after, TRUE);
    printf("step %u: quantize at %s\n  logical volume %s\n", st->index,
           st->site_text, bytes);
    if (!cli_save_workspace("quantize", s, output_path))
      return 1;
    printf("wrote %s\n", output_path);
    return 0;
  }
  g_autoptr(WeirParams) wp =
      weir_params_parse(t, (const char *const *)params->pdata, &error);
  if (!wp) {
    cli_print_error("quantize", error);
    return 2;
  }
  WeirApplyReport report;
  if (!weir_transform_apply(g, t, &site, wp, NULL, &report, &error)) {
    cli_print_error("quantize", error);
    return 1;
  }
  g_autofree char *bb = cli_format_quantity(&report.bytes_before, TRUE);
  g_autofree char *ba = cli_format_quantity(&report.bytes_after, TRUE);
  printf("quantized in %.3f s\n  logical volume %s -> %s\n", report.seconds, bb,
         ba);
  weir_apply_report_clear(&report);
  if (!weir_graph_save(g, output_path, &error)) {
    cli_print_error("quantize", error);
    return 1;
  }
  printf("wrote %s\n", output_path);
  return 0;
}
