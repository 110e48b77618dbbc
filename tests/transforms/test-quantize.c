/* test-quantize.c — the int8 quantize transformation and its calibration
 * (transforms/tier2/quantize.c, core/quantize.c):
 *  - calibrated ranges of every tensor of the digits CNN on its reference
 *    input agree with a NumPy forward pass (tests/core/data/
 *    quantize-ranges.py wrote the expected text);
 *  - the percentile method on a known distribution;
 *  - the rewritten program has int8 products (QLinearConv, and
 *    QLinearMatMulBias for the fully connected layers: no i32 accumulator
 *    in memory), one QuantizeLinear at the
 *    input and one DequantizeLinear at the output, no Relu, and computes
 *    the f32 program's output within a few quantization steps;
 *  - unsupported patterns and missing ranges are refused with the node and
 *    the problem named, and a failed application leaves the program as it
 *    was;
 *  - the step replays from an exported recipe to the same program. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "weir-expand.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-native.h"
#include "weir-quantize.h"
#include "weir-recipe.h"
#include "weir-session.h"
#include "weir-tensor-io.h"
#include "weir-transform.h"

static char *src(const char *rel) {
  return g_build_filename(WEIR_SRCDIR, rel, NULL);
}

static WeirGraph *digits_cnn(void) {
  g_autofree char *path = src("samples/models/digits_cnn.onnx");
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_onnx_import(path, NULL, &error);
  assert_null(error);
  assert_non_null(g);
  return g;
}

static WeirTensor *digits_input(void) {
  g_autofree char *path = src("samples/models/digits_cnn/input_0.npy");
  g_autoptr(GError) error = NULL;
  WeirTensor *t = weir_tensor_read_npy(path, &error);
  assert_null(error);
  return t;
}

static char *calibrate(const WeirGraph *g, WeirCalibrateMethod m, double p) {
  g_autoptr(GPtrArray) batches =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_tensor_free);
  g_ptr_array_add(batches, digits_input());
  g_autoptr(GError) error = NULL;
  char *r = weir_quantize_calibrate(g, NULL, batches, m, p, &error);
  assert_null(error);
  assert_non_null(r);
  return r;
}

/* name -> "lo:hi" */
static GHashTable *split_ranges(const char *text) {
  GHashTable *t =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autofree char *copy = g_strstrip(g_strdup(text));
  g_auto(GStrv) items = g_strsplit(copy, ",", -1);
  for (guint i = 0; items[i]; i++) {
    char *eq = strrchr(items[i], '=');
    assert_non_null(eq);
    g_hash_table_insert(t, g_strndup(items[i], (gsize)(eq - items[i])),
                        g_strdup(eq + 1));
  }
  return t;
}

static void test_calibrate_vs_numpy(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = digits_cnn();
  g_autofree char *got = calibrate(g, WEIR_CALIBRATE_MINMAX, 0);
  g_autofree char *path = src("tests/core/data/quantize-digits-cnn-ranges.txt");
  g_autofree char *want = NULL;
  assert_true(g_file_get_contents(path, &want, NULL, NULL));
  g_autoptr(GHashTable) a = split_ranges(got);
  g_autoptr(GHashTable) b = split_ranges(want);
  assert_int_equal(g_hash_table_size(a), g_hash_table_size(b));
  assert_int_equal(g_hash_table_size(b), 8);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, b);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    const char *mine = g_hash_table_lookup(a, k);
    assert_non_null(mine);
    double lo1, hi1, lo2, hi2;
    assert_int_equal(sscanf(mine, "%lf:%lf", &lo1, &hi1), 2);
    assert_int_equal(sscanf(v, "%lf:%lf", &lo2, &hi2), 2);
    assert_true(fabs(lo1 - lo2) <= 1e-5 * (1 + fabs(lo2)));
    assert_true(fabs(hi1 - hi2) <= 1e-5 * (1 + fabs(hi2)));
  }
  /* the calibration did not change the program */
  g_autoptr(WeirGraph) fresh = digits_cnn();
  g_autofree char *j1 = weir_graph_to_json(g);
  g_autofree char *j2 = weir_graph_to_json(fresh);
  assert_string_equal(j1, j2);
}

/* A Relu of 0..999 (one batch [1000]): percentile 99 cuts the ends. */
static void test_calibrate_percentile(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_new("relu");
  assert_true(weir_graph_add_symbol(g, "n"));
  assert_non_null(
      weir_graph_add_array(g, "x", WEIR_DTYPE_F32, "n", FALSE, &error));
  assert_non_null(
      weir_graph_add_array(g, "y", WEIR_DTYPE_F32, "n", FALSE, &error));
  WeirState *s = weir_graph_add_state(g, "main");
  const char *ins[] = {"in0", NULL}, *outs[] = {"out0", NULL};
  WeirNode *r = weir_state_add_library(g, s, "relu", "Relu", ins, outs);
  WeirNode *xa = weir_state_add_access(g, s, "x");
  WeirNode *ya = weir_state_add_access(g, s, "y");
  assert_non_null(weir_state_add_memlet(g, s, xa->id, NULL, r->id, "in0", "x",
                                        "0:n", &error));
  assert_non_null(weir_state_add_memlet(g, s, r->id, "out0", ya->id, NULL, "y",
                                        "0:n", &error));
  gint64 n = 1000;
  WeirTensor *t = weir_tensor_new(WEIR_DTYPE_F32, 1, &n);
  for (gint64 i = 0; i < n; i++)
    weir_tensor_set(t, i, (double)((i * 7) % 1000) - 100.0); /* -100..899 */
  g_autoptr(GPtrArray) batches =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_tensor_free);
  g_ptr_array_add(batches, t);
  g_autofree char *mm = weir_quantize_calibrate(
      g, "x", batches, WEIR_CALIBRATE_MINMAX, 0, &error);
  assert_null(error);
  assert_string_equal(mm, "x=-100:899,y=0:899");
  /* sorted values v[k] = k - 100; p99: index round(0.99 * 999) = 989 */
  g_autofree char *pc = weir_quantize_calibrate(
      g, "x", batches, WEIR_CALIBRATE_PERCENTILE, 99, &error);
  assert_null(error);
  assert_string_equal(pc, "x=-90:889,y=0:889");
  g_autofree char *bad = weir_quantize_calibrate(
      g, "x", batches, WEIR_CALIBRATE_PERCENTILE, 20, &error);
  assert_null(bad);
  assert_non_null(strstr(error->message, "percentile 20"));
}

static guint count_op(const WeirGraph *g, const char *op) {
  guint n = 0;
  for (guint si = 0; si < g->states->len; si++) {
    const WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      const WeirNode *x = g_ptr_array_index(s->nodes, i);
      if (x->kind == WEIR_NODE_LIBRARY && strcmp(x->op, op) == 0)
        n++;
    }
  }
  return n;
}

static gboolean quantize(WeirGraph *g, const char *ranges, const char *extra,
                         GError **error) {
  const WeirTransformInfo *t = weir_transform_lookup("quantize");
  assert_non_null(t);
  g_autofree char *p0 = g_strdup_printf("ranges=%s", ranges);
  const char *params[] = {p0, extra, NULL};
  g_autoptr(WeirParams) wp = weir_params_parse(t, params, error);
  if (!wp)
    return FALSE;
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  assert_int_equal(sites->len, 1);
  WeirApplyReport report;
  gboolean ok = weir_transform_apply(g, t, &g_array_index(sites, WeirSite, 0),
                                     wp, NULL, &report, error);
  if (ok)
    weir_apply_report_clear(&report);
  return ok;
}

/* Runs g interpreted on the digits input; returns the output. */
static WeirTensor *run(const WeirGraph *program) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_copy(program);
  assert_true(weir_expand_all(g, NULL, NULL, &error));
  assert_null(error);
  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "batch", 8);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  g_hash_table_insert(args, "input", digits_input());
  gint64 shape[2] = {8, 10};
  g_hash_table_insert(args, "output",
                      weir_tensor_new(WEIR_DTYPE_F32, 2, shape));
  assert_true(weir_interpret(g, b, args, NULL, &error));
  assert_null(error);
  return weir_tensor_copy(g_hash_table_lookup(args, "output"));
}

static double output_scale(const char *ranges) {
  g_autoptr(GHashTable) r = split_ranges(ranges);
  double lo, hi;
  assert_int_equal(
      sscanf(g_hash_table_lookup(r, "output"), "%lf:%lf", &lo, &hi), 2);
  return (MAX(hi, 0) - MIN(lo, 0)) / 255.0;
}

static void check_rewrite(const char *extra) {
  g_autoptr(WeirGraph) g = digits_cnn();
  g_autofree char *ranges = calibrate(g, WEIR_CALIBRATE_MINMAX, 0);
  g_autoptr(WeirTensor) want = run(g);
  g_autoptr(GError) error = NULL;
  assert_true(quantize(g, ranges, extra, &error));
  assert_null(error);
  assert_int_equal(count_op(g, "QuantizeLinear"), 1);
  assert_int_equal(count_op(g, "DequantizeLinear"), 1);
  assert_int_equal(count_op(g, "QLinearConv"), 1);
  /* the fully connected layers requantize in the GEMM's store: no
   * MatMulInteger, no i32 accumulator, no requantization map */
  assert_int_equal(count_op(g, "QLinearMatMulBias"), 2);
  assert_int_equal(count_op(g, "MatMulInteger"), 0);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *ct = g_ptr_array_index(g->containers, i);
    if (ct->dtype == WEIR_DTYPE_I32 && !ct->initial)
      fail_msg("i32 container '%s' is not a constant", ct->name);
  }
  assert_int_equal(count_op(g, "Conv"), 0);
  assert_int_equal(count_op(g, "Gemm"), 0);
  assert_int_equal(count_op(g, "Relu"), 0);
  /* compiled, the products and the u8 MaxPool are Weir's kernels (the int8
   * GEMM, the MaxPool kernel on u8), not expansions */
  guint native = 0;
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *st = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < st->nodes->len; i++) {
      WeirNode *x = g_ptr_array_index(st->nodes, i);
      if (x->kind != WEIR_NODE_LIBRARY ||
          (strcmp(x->op, "QLinearConv") != 0 &&
           strcmp(x->op, "QLinearMatMulBias") != 0 &&
           strcmp(x->op, "MaxPool") != 0))
        continue;
      if (strcmp(weir_native_default_impl(g, st, x), "weir") != 0)
        fail_msg("%s '%s' would be expanded, not run by Weir's kernel", x->op,
                 x->label);
      native++;
    }
  }
  assert_int_equal(native, 4);
  /* MaxPool and Flatten pass u8 */
  g_autofree char *json = weir_graph_to_json(g);
  assert_non_null(strstr(json, "_pool_MaxPool_output_0_quantized"));
  assert_non_null(strstr(json, "_Flatten_output_0_quantized"));
  assert_null(strstr(json, "\"_Relu_output_0\""));
  g_autoptr(WeirTensor) got = run(g);
  double step = output_scale(ranges), worst = 0;
  for (gint64 i = 0; i < want->count; i++)
    worst =
        MAX(worst, fabs(weir_tensor_get(got, i) - weir_tensor_get(want, i)));
  /* errors of the input, conv, fc1 and output quantizations add up to a
   * few steps of the output; the float program's logits span ~0.76 */
  print_message("largest difference %g = %.2f output steps\n", worst,
                worst / step);
  assert_true(worst <= 4 * step);
  assert_true(worst > 0); /* it is really quantized */
}

static void test_rewrite_per_tensor(void **state) {
  (void)state;
  check_rewrite(NULL);
}

static void test_rewrite_per_channel_s8(void **state) {
  (void)state;
  check_rewrite("per_channel=true");
  g_autoptr(WeirGraph) g = digits_cnn();
  g_autofree char *ranges = calibrate(g, WEIR_CALIBRATE_MINMAX, 0);
  g_autoptr(GError) error = NULL;
  const WeirTransformInfo *t = weir_transform_lookup("quantize");
  g_autofree char *p0 = g_strdup_printf("ranges=%s", ranges);
  const char *params[] = {p0, "activations=s8", "per_channel=true", NULL};
  g_autoptr(WeirParams) wp = weir_params_parse(t, params, &error);
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  WeirApplyReport report;
  assert_true(weir_transform_apply(g, t, &g_array_index(sites, WeirSite, 0), wp,
                                   NULL, &report, &error));
  weir_apply_report_clear(&report);
  g_autoptr(WeirGraph) f = digits_cnn();
  g_autoptr(WeirTensor) want = run(f);
  g_autoptr(WeirTensor) got = run(g);
  double step = output_scale(ranges), worst = 0;
  for (gint64 i = 0; i < want->count; i++)
    worst =
        MAX(worst, fabs(weir_tensor_get(got, i) - weir_tensor_get(want, i)));
  assert_true(worst <= 4 * step);
}

static void test_exclude(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = digits_cnn();
  g_autofree char *ranges = calibrate(g, WEIR_CALIBRATE_MINMAX, 0);
  g_autoptr(GError) error = NULL;
  assert_true(quantize(g, ranges, "exclude=fc2", &error));
  assert_int_equal(count_op(g, "Gemm"), 1);
  assert_int_equal(count_op(g, "QLinearMatMulBias"), 1);
  assert_int_equal(count_op(g, "QLinearConv"), 1);
  /* fc2 reads the float Relu_1 output again */
  assert_int_equal(count_op(g, "DequantizeLinear"), 1);
  g_autoptr(WeirTensor) got = run(g);
  assert_int_equal(got->count, 80);
}

static void test_refused(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = digits_cnn();
  g_autofree char *ranges = calibrate(g, WEIR_CALIBRATE_MINMAX, 0);
  g_autofree char *before = weir_graph_to_json(g);
  g_autoptr(GError) error = NULL;
  /* a range missing */
  g_auto(GStrv) items = g_strsplit(ranges, ",", -1);
  g_autoptr(GString) kept = g_string_new(NULL);
  for (guint i = 0; items[i]; i++)
    if (!g_str_has_prefix(items[i], "_Relu_1_output_0="))
      g_string_append_printf(kept, "%s%s", kept->len ? "," : "", items[i]);
  const char *partial = kept->str;
  assert_false(quantize(g, partial, NULL, &error));
  assert_non_null(error);
  print_message("%s\n", error->message);
  assert_non_null(strstr(error->message, "/fc1/Gemm"));
  assert_non_null(strstr(error->message, "_Relu_1_output_0"));
  assert_non_null(strstr(error->message, "no calibrated range"));
  g_autofree char *after = weir_graph_to_json(g);
  assert_string_equal(before, after);
  g_clear_error(&error);
  /* a bad range text */
  assert_false(quantize(g, "input=3:1", NULL, &error));
  assert_non_null(strstr(error->message, "input=3:1"));
  g_clear_error(&error);
  /* everything excluded */
  assert_false(quantize(g, ranges, "exclude=.", &error));
  assert_non_null(strstr(error->message, "no Conv, Gemm or MatMul"));
  g_clear_error(&error);
  /* weights that are not constants: the first Gemm's weights become an
   * argument */
  weir_graph_container(g, "fc1_weight")->transient = FALSE;
  weir_container_set_initial(weir_graph_container(g, "fc1_weight"), NULL);
  g_autofree char *before2 = weir_graph_to_json(g);
  assert_false(quantize(g, ranges, NULL, &error));
  assert_non_null(strstr(error->message, "Gemm '/fc1/Gemm'"));
  assert_non_null(strstr(error->message, "fc1_weight"));
  assert_non_null(strstr(error->message, "not a constant"));
  g_autofree char *after2 = weir_graph_to_json(g);
  assert_string_equal(before2, after2);
}

static void test_recipe_round_trip(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = digits_cnn();
  g_autofree char *ranges = calibrate(g, WEIR_CALIBRATE_MINMAX, 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirSession) s =
      weir_session_new(g, "digits_cnn.onnx", NULL, &error);
  assert_non_null(s);
  const WeirTransformInfo *t = weir_transform_lookup("quantize");
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  g_autofree char *p0 = g_strdup_printf("ranges=%s", ranges);
  const char *params[] = {p0, "per_channel=true", NULL};
  const WeirStep *st = weir_session_apply(
      s, "quantize", &g_array_index(sites, WeirSite, 0), params, &error);
  assert_null(error);
  assert_non_null(st);
  g_autoptr(WeirRecipe) r = weir_session_export_recipe(s, &error);
  assert_null(error);
  g_autofree char *text = weir_recipe_to_json(r);
  assert_non_null(strstr(text, "\"quantize\""));
  g_autoptr(WeirRecipe) back = weir_recipe_parse(text, -1, "r.json", &error);
  assert_null(error);
  g_autoptr(WeirGraph) h = digits_cnn();
  assert_true(weir_recipe_apply(h, back, NULL, NULL, &error));
  assert_null(error);
  g_autofree char *j1 = weir_graph_to_json(h);
  assert_string_equal(j1, weir_session_current_json(s));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_calibrate_vs_numpy),
      cmocka_unit_test(test_calibrate_percentile),
      cmocka_unit_test(test_rewrite_per_tensor),
      cmocka_unit_test(test_rewrite_per_channel_s8),
      cmocka_unit_test(test_exclude),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_recipe_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
