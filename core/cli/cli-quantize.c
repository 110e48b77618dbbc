/* cli-quantize.c — `weir quantize`: calibrate a float model on sample data
 * and rewrite it into int8 with the quantize transformation, or with
 * --precision bf16 run its Conv/Gemm/MatMul in bf16 with the cast-bf16
 * transformation (docs/precision.md). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "weir-quantize.h"

/* Applies transformation `name` with params (NULL-terminated) at its first
 * site of g and writes the program (OUT.json) or a workspace whose history
 * holds the step (OUT.weir).  Returns the exit status. */
static int apply_and_write(const char *model, WeirGraph *g, const char *name,
                           GPtrArray *params, const char *output_path) {
  g_autoptr(GError) error = NULL;
  const WeirTransformInfo *t = weir_transform_lookup(name);
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  if (sites->len == 0) {
    fprintf(stderr, "weir quantize: %s has no Conv, Gemm or MatMul\n", model);
    return 1;
  }
  WeirSite site = g_array_index(sites, WeirSite, 0);
  if (cli_is_workspace_path(output_path)) {
    g_autoptr(WeirSession) s = weir_session_new(g, model, NULL, &error);
    if (!s) {
      cli_print_error("quantize", error);
      return 1;
    }
    const WeirStep *st = weir_session_apply(
        s, name, &site, (const char *const *)params->pdata, &error);
    if (!st) {
      cli_print_error("quantize", error);
      return 1;
    }
    g_autofree char *bytes =
        cli_format_change(&st->bytes_before, &st->bytes_after, TRUE);
    printf("step %u: %s at %s\n  logical volume %s\n", st->index, name,
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
  printf("%s applied in %.3f s\n  logical volume %s -> %s\n", name,
         report.seconds, bb, ba);
  weir_apply_report_clear(&report);
  if (!weir_graph_save(g, output_path, &error)) {
    cli_print_error("quantize", error);
    return 1;
  }
  printf("wrote %s\n", output_path);
  return 0;
}

int cli_cmd_quantize(int argc, char **argv) {
  g_autofree char *calibrate = NULL, *output_path = NULL, *exclude = NULL;
  g_autofree char *method = NULL, *input = NULL, *activations = NULL;
  g_autofree char *ranges_out = NULL, *onnx_out = NULL, *precision = NULL;
  gboolean per_channel = FALSE;
  double percentile = 99.99;
  const GOptionEntry entries[] = {
      {"precision", 0, 0, G_OPTION_ARG_STRING, &precision,
       "int8 (default: calibrated int8 arithmetic) or bf16 (Conv/Gemm/MatMul "
       "in bf16, no calibration)",
       "TYPE"},
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
  gboolean bf16 = g_strcmp0(precision, "bf16") == 0;
  if (precision && !bf16 && strcmp(precision, "int8") != 0) {
    fprintf(stderr, "weir quantize: --precision is int8 or bf16, not '%s'\n",
            precision);
    return 2;
  }
  if (argc != 2 || (!calibrate && !bf16) || !output_path) {
    fprintf(stderr,
            "usage: weir quantize MODEL --calibrate DATA "
            "[--per-channel] [--exclude REGEX] [--method "
            "minmax|percentile] [--onnx OUT.onnx] -o OUT.json|OUT.weir\n"
            "       weir quantize MODEL --precision bf16 [--exclude REGEX] "
            "-o OUT.json|OUT.weir\n");
    return 2;
  }
  if (bf16) {
    /* the int8 options have no meaning for bf16: refuse, not ignore */
    const char *extra = calibrate     ? "--calibrate"
                        : per_channel ? "--per-channel"
                        : method      ? "--method"
                        : activations ? "--activations"
                        : input       ? "--input"
                        : ranges_out  ? "--ranges"
                        : onnx_out    ? "--onnx"
                                      : NULL;
    if (extra) {
      fprintf(stderr,
              "weir quantize: %s applies to int8, not to --precision "
              "bf16\n",
              extra);
      return 2;
    }
    g_autoptr(WeirGraph) g = cli_load_program("quantize", argv[1], NULL, NULL);
    if (!g)
      return 1;
    cli_load_transformations("quantize");
    g_autoptr(GPtrArray) params = g_ptr_array_new_with_free_func(g_free);
    if (exclude)
      g_ptr_array_add(params, g_strdup_printf("exclude=%s", exclude));
    g_ptr_array_add(params, NULL);
    return apply_and_write(argv[1], g, "cast-bf16", params, output_path);
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
  return apply_and_write(argv[1], g, "quantize", params, output_path);
}
