/* test-profile.c — the instrumented build and `weir profile`
 * (core/weir-profile.h, docs/analysis.md).
 *
 *  - The instrumented and the plain kernel of LeNet and of its training
 *    step compute the same outputs, bit for bit, from the same arguments
 *    (the timing brackets change nothing else).
 *  - The profile of LeNet lists every top-level node of the lowered
 *    program that computes (library nodes, maps, tasklets), each once;
 *    every time is non-negative and their sum positive; the roofline
 *    figures follow from a given hardware profile.
 *  - The plain source has no profile code (the option is off by default);
 *    the instrumented one has the entry points of weir-codegen.h, and its
 *    cache key differs.
 *  - The SVG roofline is well-formed XML with one point per node.
 *  - The bytes of each node are its modeled memory traffic (none for a
 *    map without a traffic model: no GB/s from a logical volume).
 *  - `weir profile --format csv` and `--format json` parse: one CSV row
 *    and one JSON node per slot, with the same node ids.
 * No timed assertion: only signs and sums of the measured times. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <glib/gstdio.h>
#include <json-c/json.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>

#include "weir.h"

static WeirGraph *load_model(const char *name) {
  g_autofree char *path =
      g_strdup_printf("%s/samples/models/%s.onnx", WEIR_SRCDIR, name);
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_onnx_import(path, NULL, &error);
  assert_null(error);
  return g;
}

static WeirGraph *training_step(const WeirGraph *fwd) {
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.steps = 1;
  g_autoptr(GError) error = NULL;
  WeirGraph *t = weir_train_graph(fwd, &o, &error);
  assert_null(error);
  return t;
}

/* Random arguments of g's compiled code (owned tensors). */
static GHashTable *arguments(const WeirGraph *g, guint64 seed) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                           (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) list = weir_codegen_arguments(g);
  for (guint i = 0; i < list->len; i++) {
    const WeirContainer *c = g_ptr_array_index(list, i);
    g_autoptr(GError) error = NULL;
    WeirTensor *t = weir_evaluate_random_input(c, NULL, seed, &error);
    assert_null(error);
    g_hash_table_insert(args, c->name, t);
  }
  return args;
}

static void same_outputs(const char *model, gboolean train) {
  g_autoptr(WeirGraph) fwd = load_model(model);
  g_autoptr(WeirGraph) g = train ? training_step(fwd) : weir_graph_copy(fwd);
  g_autoptr(GError) error = NULL;
  WeirCompileOptions plain_o = {0}, timed_o = {.profile = TRUE};
  g_autoptr(WeirKernel) plain = weir_kernel_compile(g, &plain_o, NULL, &error);
  assert_null(error);
  g_autoptr(WeirKernel) timed = weir_kernel_compile(g, &timed_o, NULL, &error);
  assert_null(error);
  guint n = 0;
  assert_false(weir_kernel_profile(plain, &n, NULL, NULL));
  assert_true(weir_kernel_profile(timed, &n, NULL, NULL));
  assert_true(n > 0);
  g_autoptr(GHashTable) a = arguments(g, 7);
  g_autoptr(GHashTable) b = arguments(g, 7);
  assert_true(weir_kernel_run(plain, NULL, a, &error));
  assert_true(weir_kernel_run(timed, NULL, b, &error));
  g_autoptr(GPtrArray) list = weir_codegen_arguments(g);
  for (guint i = 0; i < list->len; i++) {
    const WeirContainer *c = g_ptr_array_index(list, i);
    const WeirTensor *x = g_hash_table_lookup(a, c->name);
    const WeirTensor *y = g_hash_table_lookup(b, c->name);
    assert_int_equal(x->count, y->count);
    for (gint64 k = 0; k < x->count; k++)
      if (weir_tensor_get(x, k) != weir_tensor_get(y, k))
        fail_msg("%s%s: argument '%s' element %" G_GINT64_FORMAT
                 " differs: %g vs %g",
                 model, train ? " (training step)" : "", c->name, k,
                 weir_tensor_get(x, k), weir_tensor_get(y, k));
  }
}

static void test_same_outputs(void **state) {
  (void)state;
  same_outputs("lenet", FALSE);
  same_outputs("lenet", TRUE);
  same_outputs("transformer", FALSE);
}

static void test_every_node(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_model("lenet");
  g_autoptr(GHashTable) args = arguments(g, 1);
  WeirHwProfile hw = {.measured = TRUE,
                      .peak_gflops_1t = 10,
                      .peak_gflops_all = 20,
                      .bandwidth_gbs = 5};
  WeirProfileOptions o = {.warmup = 1, .repetitions = 3, .hw = &hw};
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirProfile) p = weir_profile_run(g, NULL, args, &o, &error);
  assert_null(error);
  assert_non_null(p);
  assert_true(p->peak_gflops == 20 && p->bandwidth_gbs == 5);

  /* every computing top-level node of the lowered program, once */
  g_autoptr(WeirGraph) lowered = weir_graph_copy(g);
  assert_true(weir_lower(
      lowered, &(WeirLowerOptions){.native = TRUE, .split_epilogues = TRUE},
      &error));
  g_autoptr(GHashTable) seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  double sum = 0;
  for (guint i = 0; i < p->nodes->len; i++) {
    const WeirProfileNode *n = g_ptr_array_index(p->nodes, i);
    assert_false(g_hash_table_contains(seen, GUINT_TO_POINTER(n->node)));
    g_hash_table_add(seen, GUINT_TO_POINTER(n->node));
    assert_true(n->seconds >= 0);
    sum += n->seconds;
    /* the roofline from the figures: bound = max(F / peak, B / bw) */
    if (n->flops_known && n->bytes_known) {
      double want = MAX((double)n->flops / 20e9, (double)n->bytes / 5e9);
      assert_true(fabs(n->bound_seconds - want) <= 1e-12 + 1e-9 * want);
      assert_non_null(n->bound);
    }
  }
  assert_true(sum > 0);
  assert_true(fabs(sum - p->node_sum) <= 1e-12);
  assert_true(p->run_median > 0);
  guint computing = 0;
  for (guint i = 0; i < lowered->states->len; i++) {
    const WeirState *s = g_ptr_array_index(lowered->states, i);
    g_autoptr(WeirScopes) sc = weir_state_scopes(s, &error);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (weir_scopes_parent(sc, n->id) != 0 ||
          (n->kind != WEIR_NODE_LIBRARY && n->kind != WEIR_NODE_MAP_ENTRY &&
           n->kind != WEIR_NODE_TASKLET && n->kind != WEIR_NODE_NESTED))
        continue;
      computing++;
      if (!g_hash_table_contains(seen, GUINT_TO_POINTER(n->id)))
        fail_msg("node %u '%s' is not in the profile", n->id, n->label);
    }
  }
  /* 2 Conv, 2 Gemm (their epilogues in the store), the MaxPool kernel,
   * the Flatten copy */
  assert_true(computing >= 6);

  /* the SVG: well-formed, one point per node with all figures */
  g_autofree char *svg = weir_profile_roofline_svg(p, "lenet <test> & co");
  g_autoptr(GMarkupParseContext) ctx = g_markup_parse_context_new(
      &(GMarkupParser){0}, G_MARKUP_DEFAULT_FLAGS, NULL, NULL);
  assert_true(g_markup_parse_context_parse(ctx, svg, -1, &error));
  assert_true(g_markup_parse_context_end_parse(ctx, &error));
  guint points = 0, circles = 0;
  for (guint i = 0; i < p->nodes->len; i++) {
    const WeirProfileNode *n = g_ptr_array_index(p->nodes, i);
    points += n->flops_known && n->bytes_known && n->flops > 0 &&
              n->bytes > 0 && n->seconds > 0 && n->gflops > 0;
  }
  for (const char *c = svg; (c = strstr(c, "<circle")); c++)
    circles++;
  assert_int_equal(circles, points);
}

/* A node too fast for a rate (timed below WEIR_PROFILE_RATE_MIN_SECONDS,
 * so gflops 0: a small node on a fast machine) is no point of the
 * roofline, and the axes stay finite.  (It was a point: log10(0) made the
 * lowest decade -inf, and the GUI's cairo roofline looped over decades
 * until the machine ran out of memory.) */
static void test_roofline_fast_node(void **state) {
  (void)state;
  WeirProfile p = {.peak_gflops = 265, .bandwidth_gbs = 42};
  p.nodes = g_ptr_array_new();
  WeirProfileNode slow = {.label = "slow",
                          .seconds = 1e-3,
                          .flops_known = TRUE,
                          .bytes_known = TRUE,
                          .flops = 1000000,
                          .bytes = 10000,
                          .gflops = 1.0};
  WeirProfileNode fast = {.label = "fast",
                          .seconds = 1e-7,
                          .flops_known = TRUE,
                          .bytes_known = TRUE,
                          .flops = 100,
                          .bytes = 100,
                          .gflops = 0};
  g_ptr_array_add(p.nodes, &slow);
  g_ptr_array_add(p.nodes, &fast);
  double x = 0, y = 0;
  assert_true(weir_profile_roofline_point(&slow, &x, &y));
  assert_true(x == 100 && y == 1.0);
  assert_false(weir_profile_roofline_point(&fast, &x, &y));
  WeirRooflineAxes ax;
  weir_profile_roofline_axes(&p, &ax);
  assert_true(isfinite(ax.lx0) && isfinite(ax.lx1) && isfinite(ax.ly0) &&
              isfinite(ax.ly1));
  assert_true(ax.lx0 < ax.lx1 && ax.lx1 - ax.lx0 <= 12);
  assert_true(ax.ly0 < ax.ly1 && ax.ly1 - ax.ly0 <= 13);
  g_autofree char *svg = weir_profile_roofline_svg(&p, "fast");
  guint circles = 0;
  for (const char *c = svg; (c = strstr(c, "<circle")); c++)
    circles++;
  assert_int_equal(circles, 1);
  /* an absurd rate is clamped, not followed */
  slow.gflops = 1e300;
  weir_profile_roofline_axes(&p, &ax);
  assert_true(ax.ly1 - ax.ly0 <= 13);
  g_ptr_array_unref(p.nodes);
}

/* The bytes of every node are its modeled memory traffic: with a
 * profile whose model cache is 256 KiB, each equals the traffic of that
 * operation in the analysis of the lowered program; without a cache (no
 * model) no map has bytes (its logical volume is not memory traffic) and
 * so no GB/s. */
static void test_bytes_are_traffic(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_model("lenet");
  g_autoptr(GHashTable) args = arguments(g, 1);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) lowered = weir_graph_copy(g);
  assert_true(weir_lower(
      lowered, &(WeirLowerOptions){.native = TRUE, .split_epilogues = TRUE},
      &error));
  WeirHwProfile hw = {.l2_bytes = 256 << 10,
                      .measured = TRUE,
                      .peak_gflops_1t = 10,
                      .peak_gflops_all = 20,
                      .bandwidth_gbs = 5};
  assert_int_equal(weir_hw_model_cache_bytes(&hw), 256 << 10);
  g_autoptr(WeirAnalysis) a =
      weir_analysis_compute_traffic(lowered, NULL, 256 << 10, &error);
  assert_non_null(a);
  WeirProfileOptions o = {.warmup = 0, .repetitions = 1, .hw = &hw};
  g_autoptr(WeirProfile) p = weir_profile_run(g, NULL, args, &o, &error);
  assert_non_null(p);
  guint maps = 0;
  gint64 sum = 0;
  for (guint i = 0; i < p->nodes->len; i++) {
    const WeirProfileNode *n = g_ptr_array_index(p->nodes, i);
    const WeirNodeCost *c = weir_analysis_node(a, n->node);
    assert_non_null(c);
    assert_true(n->bytes_known);
    /* a copy's traffic is its memlet's (writes always count), which the
     * analysis keeps on the memlet, not on the access node */
    const WeirQuantity *want =
        strcmp(n->op, "copy") == 0 ? &c->bytes_in : &c->traffic;
    if (!want->known)
      fail_msg("node %u '%s' (%s): no traffic", n->node, n->label, n->op);
    assert_int_equal(n->bytes, want->value);
    sum += n->bytes;
    maps += strcmp(n->op, "map") == 0;
  }
  assert_true(maps >= 3);
  /* the nodes together are the program's traffic (LeNet has one state) */
  assert_true(a->total_traffic.known);
  assert_int_equal(sum, a->total_traffic.value);
  assert_true(a->total_traffic.value < a->total_bytes.value);

  /* no cache: no model; maps have no bytes and no rate */
  WeirHwProfile none = hw;
  none.l2_bytes = 0;
  o.hw = &none;
  g_autoptr(WeirProfile) q = weir_profile_run(g, NULL, args, &o, &error);
  assert_non_null(q);
  guint unknown = 0;
  for (guint i = 0; i < q->nodes->len; i++) {
    const WeirProfileNode *n = g_ptr_array_index(q->nodes, i);
    if (strcmp(n->op, "map") != 0)
      continue;
    assert_false(n->bytes_known);
    assert_true(n->gbs == 0);
    assert_null(n->bound);
    unknown++;
  }
  assert_int_equal(unknown, maps);
}

static void test_codegen_option(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_model("lenet");
  g_autoptr(GError) error = NULL;
  g_autofree char *plain = weir_codegen_c(g, NULL, &error);
  g_autofree char *off =
      weir_codegen_c(g, &(WeirCodegenOptions){.openmp = TRUE}, &error);
  g_autofree char *on = weir_codegen_c(
      g, &(WeirCodegenOptions){.openmp = TRUE, .profile = TRUE}, &error);
  assert_null(error);
  assert_string_equal(plain, off);
  assert_null(strstr(plain, "_profile_"));
  assert_null(strstr(plain, "clock_gettime"));
  assert_non_null(strstr(on, "torch_jit_profile_count(void)"));
  assert_non_null(strstr(on, "torch_jit_profile_nodes(void)"));
  assert_non_null(strstr(on, "torch_jit_profile_times(void)"));
  assert_non_null(strstr(on, "clock_gettime(CLOCK_MONOTONIC"));
  /* no allocation added: as many malloc calls as the plain code */
  guint m0 = 0, m1 = 0;
  for (const char *c = plain; (c = strstr(c, "malloc(")); c++)
    m0++;
  for (const char *c = on; (c = strstr(c, "malloc(")); c++)
    m1++;
  assert_int_equal(m0, m1);
  g_autofree char *k0 = weir_kernel_key(g, &(WeirCompileOptions){0}, &error);
  g_autofree char *k1 =
      weir_kernel_key(g, &(WeirCompileOptions){.profile = TRUE}, &error);
  assert_string_not_equal(k0, k1);
}

static char *run_cli(const char *format, int *status) {
  const char *argv[] = {WEIR_CLI, "profile",  "samples/models/lenet.onnx",
                        "--reps", "2",        "--warmup",
                        "1",      "--format", format,
                        NULL};
  g_autofree char *err = NULL;
  char *out = NULL;
  int ws = 0;
  g_autoptr(GError) error = NULL;
  assert_true(g_spawn_sync(WEIR_SRCDIR, (char **)argv, NULL, G_SPAWN_DEFAULT,
                           NULL, NULL, &out, &err, &ws, &error));
  *status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  if (*status != 0)
    fail_msg("weir profile --format %s: %s", format, err);
  return out;
}

static void test_cli_formats(void **state) {
  (void)state;
  int status;
  g_autofree char *json = run_cli("json", &status);
  json_object *root = json_tokener_parse(json);
  assert_non_null(root);
  json_object *nodes = NULL;
  assert_true(json_object_object_get_ex(root, "nodes", &nodes));
  size_t n = json_object_array_length(nodes);
  /* 2 Conv, 2 Gemm (their epilogues in the store), the MaxPool kernel,
   * the Flatten copy */
  assert_true(n >= 6);
  double sum = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *o = json_object_array_get_idx(nodes, i), *sec = NULL;
    assert_true(json_object_object_get_ex(o, "seconds", &sec));
    assert_true(json_object_get_double(sec) >= 0);
    sum += json_object_get_double(sec);
  }
  assert_true(sum > 0);
  g_autofree char *csv = run_cli("csv", &status);
  g_auto(GStrv) lines = g_strsplit(csv, "\n", -1);
  assert_true(g_str_has_prefix(lines[0], "state,node,label,op,seconds"));
  guint rows = 0;
  for (guint i = 1; lines[i] && *lines[i]; i++) {
    rows++;
    g_auto(GStrv) cells = g_strsplit(lines[i], ",", -1);
    assert_true(g_strv_length(cells) >= 13);
    /* the same node ids, in the same order, as the JSON */
    json_object *o = json_object_array_get_idx(nodes, i - 1), *id = NULL;
    assert_true(json_object_object_get_ex(o, "node", &id));
    assert_int_equal(g_ascii_strtoll(cells[1], NULL, 10),
                     json_object_get_int(id));
  }
  assert_int_equal(rows, n);
  json_object_put(root);
}

/* --plot x.png: a 900 x 600 PNG drawn with cairo (the command line links
 * the weir_roofline library); another suffix is bad usage. */
static void test_cli_png(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-profile-png-XXXXXX", NULL);
  g_autofree char *png = g_build_filename(dir, "roofline.png", NULL);
  g_autofree char *gif = g_build_filename(dir, "roofline.gif", NULL);
  const char *argv[] = {WEIR_CLI, "profile", "samples/models/lenet.onnx",
                        "--reps", "1",       "--warmup",
                        "0",      "--plot",  png,
                        NULL};
  int ws = 0;
  g_autofree char *out = NULL, *err = NULL;
  assert_true(g_spawn_sync(WEIR_SRCDIR, (char **)argv, NULL, G_SPAWN_DEFAULT,
                           NULL, NULL, &out, &err, &ws, NULL));
  if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0)
    fail_msg("weir profile --plot png: %s", err);
  assert_non_null(strstr(out, "roofline  written to "));
  g_autofree char *data = NULL;
  gsize len = 0;
  assert_true(g_file_get_contents(png, &data, &len, NULL));
  assert_true(len > 1000);
  assert_memory_equal(data, "\x89PNG\r\n\x1a\n", 8);
  /* IHDR: width and height, big-endian */
  const guchar *u = (const guchar *)data;
  assert_int_equal((u[16] << 24) | (u[17] << 16) | (u[18] << 8) | u[19], 900);
  assert_int_equal((u[20] << 24) | (u[21] << 16) | (u[22] << 8) | u[23], 600);
  argv[8] = gif;
  g_clear_pointer(&out, g_free);
  g_clear_pointer(&err, g_free);
  assert_true(g_spawn_sync(WEIR_SRCDIR, (char **)argv, NULL, G_SPAWN_DEFAULT,
                           NULL, NULL, &out, &err, &ws, NULL));
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 2);
  assert_non_null(strstr(err, ".svg or .png"));
  g_unlink(png);
  g_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_outputs),
      cmocka_unit_test(test_every_node),
      cmocka_unit_test(test_codegen_option),
      cmocka_unit_test(test_cli_formats),
      cmocka_unit_test(test_cli_png),
      cmocka_unit_test(test_bytes_are_traffic),
      cmocka_unit_test(test_roofline_fast_node),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
