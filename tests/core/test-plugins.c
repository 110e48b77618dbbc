/* test-plugins.c — loading plugins from shared objects.
 *
 * Links the shared libweir (as the CLI does), so the plugins' undefined
 * references resolve against the same registry the test reads.  The
 * example plugin (plugins/int8-fake-quant.c) and the broken test plugins
 * (tests/core/plugins/) are copied into a temporary directory named by
 * WEIR_PLUGIN_PATH; each refusal must explain itself and the rest must
 * still load.  The example plugin is then applied to the samples and its
 * outputs checked through the reference interpreter against quantization
 * computed here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "weir-import.h"
#include "weir-tensor-io.h"
#include "weir.h"

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    const char *hay_ = (hay);                                                  \
    if (!hay_ || !strstr(hay_, (needle)))                                      \
      fail_msg("expected to find '%s' in: %s", (needle),                       \
               hay_ ? hay_ : "(null)");                                        \
  } while (0)

static char *tmp_root;     /* removed at the end */
static char *plugin_dir;   /* WEIR_PLUGIN_PATH */
static char *example_path; /* the example plugin's copy in plugin_dir */

static void copy_file(const char *from, const char *dir, const char *name) {
  g_autofree char *text = NULL;
  gsize len = 0;
  g_autoptr(GError) error = NULL;
  if (!g_file_get_contents(from, &text, &len, &error))
    fail_msg("%s", error->message);
  g_autofree char *to = g_build_filename(dir, name, NULL);
  if (!g_file_set_contents(to, text, (gssize)len, &error))
    fail_msg("%s", error->message);
}

static void remove_tree(const char *path) {
  if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
    GDir *d = g_dir_open(path, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
      g_autofree char *child = g_build_filename(path, name, NULL);
      remove_tree(child);
    }
    if (d)
      g_dir_close(d);
    g_rmdir(path);
  } else {
    g_unlink(path);
  }
}

static int setup(void **state) {
  (void)state;
  tmp_root = g_dir_make_tmp("weir-plugins-XXXXXX", NULL);
  assert_non_null(tmp_root);
  plugin_dir = g_build_filename(tmp_root, "plugins", NULL);
  g_autofree char *data = g_build_filename(tmp_root, "data", NULL);
  g_mkdir(plugin_dir, 0700);
  g_mkdir(data, 0700);
  /* Sorted order: the bad ones come before and after the good one. */
  copy_file(PLUGIN_NO_ENTRY, plugin_dir, "a-no-entry.so");
  copy_file(PLUGIN_BAD_VERSION, plugin_dir, "b-bad-version.so");
  copy_file(PLUGIN_DUPLICATE, plugin_dir, "c-duplicate.so");
  copy_file(PLUGIN_EXAMPLE, plugin_dir, "d-int8-fake-quant.so");
  copy_file(PLUGIN_QUIET, plugin_dir, "e-quiet-failure.so");
  g_autofree char *garbage = g_build_filename(plugin_dir, "f-garbage.so", NULL);
  g_file_set_contents(garbage, "not an ELF file\n", -1, NULL);
  g_autofree char *readme = g_build_filename(plugin_dir, "README.txt", NULL);
  g_file_set_contents(readme, "ignored\n", -1, NULL);
  example_path = g_build_filename(plugin_dir, "d-int8-fake-quant.so", NULL);
  /* Set before anything asks GLib for the user data directory. */
  g_autofree char *path =
      g_strdup_printf("%s:%s/does-not-exist", plugin_dir, tmp_root);
  g_setenv("WEIR_PLUGIN_PATH", path, TRUE);
  g_setenv("XDG_DATA_HOME", data, TRUE);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  remove_tree(tmp_root);
  g_free(tmp_root);
  g_free(plugin_dir);
  g_free(example_path);
  return 0;
}

/* --------------------------------------------------------------- loading */

static void test_load_directory(void **state) {
  (void)state;
  g_autoptr(GPtrArray) problems = g_ptr_array_new_with_free_func(g_free);
  guint n = weir_plugins_load(problems);
  assert_int_equal(n, 1);
  for (guint i = 0; i < problems->len; i++)
    printf("# %s\n", (char *)g_ptr_array_index(problems, i));
  assert_int_equal(problems->len, 5);
  g_autofree char *p0 = g_strdup_printf(
      "plugin '%s/a-no-entry.so': no symbol weir_plugin_register", plugin_dir);
  assert_string_equal(g_ptr_array_index(problems, 0), p0);
  g_autofree char *p1 = g_strdup_printf(
      "plugin '%s/b-bad-version.so': API version %d is newer than this "
      "Weir's %d",
      plugin_dir, WEIR_PLUGIN_API_VERSION + 1, WEIR_PLUGIN_API_VERSION);
  assert_contains(g_ptr_array_index(problems, 1), p1);
  g_autofree char *p2 =
      g_strdup_printf("plugin '%s/c-duplicate.so': registers "
                      "'expand-library-node', which already exists",
                      plugin_dir);
  assert_string_equal(g_ptr_array_index(problems, 2), p2);
  g_autofree char *p3 = g_strdup_printf(
      "plugin '%s/e-quiet-failure.so': registration failed", plugin_dir);
  assert_contains(g_ptr_array_index(problems, 3), p3);
  g_autofree char *p4 =
      g_strdup_printf("plugin '%s/f-garbage.so': cannot be loaded", plugin_dir);
  assert_contains(g_ptr_array_index(problems, 4), p4);

  const WeirTransformInfo *t = weir_transform_lookup("int8-fake-quant");
  assert_non_null(t);
  assert_int_equal(t->tier, 2);
  /* Refused plugins leave nothing behind. */
  assert_null(weir_transform_lookup("test-future"));
  assert_null(weir_transform_lookup("plugin-extra"));
  assert_null(weir_transform_lookup("plugin-quiet"));
  assert_non_null(weir_transform_lookup("expand-library-node"));
  g_autoptr(GPtrArray) list = weir_transforms_list();
  gboolean listed = FALSE;
  for (guint i = 0; i < list->len; i++)
    listed = listed || g_ptr_array_index(list, i) == t;
  assert_true(listed);

  /* A directory is scanned once. */
  g_autoptr(GPtrArray) again = g_ptr_array_new_with_free_func(g_free);
  assert_int_equal(weir_plugins_load(again), 0);
  assert_int_equal(again->len, 0);
  assert_ptr_equal(weir_transform_lookup("int8-fake-quant"), t);
}

static void test_load_file(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  /* The same file again: already loaded, nothing happens. */
  assert_true(weir_plugin_load_file(example_path, &error));
  /* The same plugin under another name: its transformation exists. */
  g_autofree char *other = g_build_filename(tmp_root, "again", NULL);
  g_mkdir(other, 0700);
  copy_file(PLUGIN_EXAMPLE, other, "copy.so");
  g_autofree char *copy = g_build_filename(other, "copy.so", NULL);
  assert_false(weir_plugin_load_file(copy, &error));
  g_autofree char *msg = g_strdup_printf(
      "plugin '%s': registers 'int8-fake-quant', which already exists", copy);
  assert_string_equal(error->message, msg);
  g_clear_error(&error);
  /* Missing files. */
  g_autofree char *missing = g_build_filename(other, "missing.so", NULL);
  assert_false(weir_plugin_load_file(missing, &error));
  assert_contains(error->message, "missing.so");
  g_clear_error(&error);
  /* Directly, without the directory scan. */
  assert_false(weir_plugin_load_file(PLUGIN_NO_ENTRY, &error));
  assert_contains(error->message, "no symbol weir_plugin_register");
  assert_non_null(weir_transform_lookup("int8-fake-quant"));
}

/* ------------------------------------------------------- the example */

static GHashTable *random_args(const WeirGraph *g, GHashTable *symbols,
                               guint64 seed) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    gint64 shape[8];
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(g_ptr_array_index(c->shape, d), symbols,
                                 &shape[d], NULL));
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    weir_tensor_fill_random(t, seed + c->id);
    g_hash_table_insert(args, g_strdup(c->name), t);
  }
  return args;
}

static GHashTable *copy_args(GHashTable *args) {
  GHashTable *out = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                          (GDestroyNotify)weir_tensor_free);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, args);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(out, g_strdup(k), weir_tensor_copy(v));
  return out;
}

static void run(WeirGraph *g, GHashTable *symbols, GHashTable *args) {
  g_autoptr(GError) error = NULL;
  if (!weir_interpret(g, symbols, args, NULL, &error))
    fail_msg("%s: %s", g->name, error->message);
}

/* What the plugin computes, in f32 as the interpreter does. */
static float quant_f32(float x, float scale) {
  float q = floorf(x / scale + 0.5f);
  q = fminf(fmaxf(q, -128.0f), 127.0f);
  return q * scale;
}

static WeirGraph *load_sample(const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_load(path, &error);
  if (!g)
    fail_msg("%s", error->message);
  return g;
}

/* Applies the plugin at node `node` of g with scale and checks that
 * container `out` becomes the quantized value of the untransformed output,
 * while the other arguments are unchanged. */
static void check_quantized_output(const char *sample, guint node,
                                   const char *out, const char *scale_text,
                                   GHashTable *symbols) {
  const WeirTransformInfo *t = weir_transform_lookup("int8-fake-quant");
  assert_non_null(t);
  g_autoptr(WeirGraph) g = load_sample(sample);
  g_autoptr(WeirGraph) q = weir_graph_copy(g);
  const char *assign[] = {scale_text, NULL};
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirParams) p = weir_params_parse(t, assign, &error);
  assert_non_null(p);
  WeirState *st = NULL;
  assert_non_null(weir_graph_node(q, node, &st));
  WeirSite site = {.state = st->id, .n_nodes = 1, .nodes = {node}};
  WeirApplyReport r;
  if (!weir_transform_apply(q, t, &site, p, symbols, &r, &error))
    fail_msg("%s: %s", sample, error->message);
  /* Two passes over the quantized array. */
  const WeirContainer *c = weir_graph_container(q, out);
  g_autoptr(WeirExpr) bytes = weir_container_bytes(c);
  gint64 nbytes;
  assert_true(weir_expr_eval(bytes, symbols, &nbytes, NULL));
  assert_true(r.bytes_before.known && r.bytes_after.known);
  assert_int_equal(r.bytes_after.value - r.bytes_before.value, 2 * nbytes);
  weir_apply_report_clear(&r);

  g_autoptr(GHashTable) a0 = random_args(g, symbols, 7);
  g_autoptr(GHashTable) a1 = copy_args(a0);
  run(g, symbols, a0);
  run(q, symbols, a1);
  double scale = weir_params_get_float(p, "scale");
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, a0);
  guint clamped = 0;
  while (g_hash_table_iter_next(&it, &k, &v)) {
    const WeirTensor *ref = v;
    const WeirTensor *got = g_hash_table_lookup(a1, k);
    if (strcmp(k, out) != 0) {
      assert_true(weir_tensor_allclose(got, ref, 0, 0, NULL, NULL));
      continue;
    }
    for (gint64 i = 0; i < ref->count; i++) {
      float want = quant_f32((float)weir_tensor_get(ref, i), (float)scale);
      if (fabsf(want) >= 127.0f * (float)scale)
        clamped++;
      if ((float)weir_tensor_get(got, i) != want)
        fail_msg("%s: %s[%" G_GINT64_FORMAT "] = %.9g, expected %.9g (from "
                 "%.9g)",
                 sample, out, i, weir_tensor_get(got, i), (double)want,
                 weir_tensor_get(ref, i));
    }
  }
  (void)clamped;
}

static void test_example_outputs(void **state) {
  (void)state;
  g_autoptr(GHashTable) n = weir_bindings_new();
  weir_bindings_set(n, "N", 300);
  /* Sums of two values in [-1, 1): scale 0.01 clamps beyond 1.27. */
  check_quantized_output("vector_add.json", 10, "C", "scale=0.01", n);
  check_quantized_output("vector_add.json", 10, "C", "scale=0.25", n);
  check_quantized_output("matmul.json", 18, "C", "scale=0.05", NULL);
  check_quantized_output("softmax.json", 25, "Y", "scale=0.0001", NULL);
}

/* Every site of every sample: valid, and applying is all-or-nothing. */
static void test_example_every_site(void **state) {
  (void)state;
  const WeirTransformInfo *t = weir_transform_lookup("int8-fake-quant");
  const char *samples[] = {"vector_add.json", "matmul.json", "softmax.json",
                           "loop.json"};
  guint legal = 0, illegal = 0;
  for (guint i = 0; i < G_N_ELEMENTS(samples); i++) {
    g_autoptr(WeirGraph) g = load_sample(samples[i]);
    g_autoptr(GArray) sites = weir_transform_sites(t, g);
    for (guint k = 0; k < sites->len; k++) {
      const WeirSite *site = &g_array_index(sites, WeirSite, k);
      g_autoptr(WeirGraph) q = weir_graph_copy(g);
      g_autofree char *reason = NULL;
      g_autoptr(GError) error = NULL;
      if (!weir_transform_can_apply(t, q, site, NULL, &reason)) {
        illegal++;
        assert_contains(reason, "has another access node");
        g_autofree char *before = weir_graph_to_json(q);
        assert_false(
            weir_transform_apply(q, t, site, NULL, NULL, NULL, &error));
        g_autofree char *after = weir_graph_to_json(q);
        assert_string_equal(before, after);
        continue;
      }
      legal++;
      if (!weir_transform_apply(q, t, site, NULL, NULL, NULL, &error))
        fail_msg("%s: %s", samples[i], error->message);
      assert_true(weir_graph_validate(q, NULL));
      /* The program still runs; quantized values are finite. */
      g_autoptr(GHashTable) sym = weir_bindings_new();
      weir_bindings_set(sym, "N", 64);
      weir_bindings_set(sym, "T", 2);
      g_autoptr(GHashTable) args = random_args(q, sym, 3);
      run(q, sym, args);
    }
  }
  /* vector_add C; matmul C in both states; softmax mx and s (both access
   * nodes of each, ordered), e and Y; loop x after the map. */
  assert_int_equal(legal, 10);
  assert_int_equal(illegal, 0);
}

static void test_example_scalar_and_refusals(void **state) {
  (void)state;
  const WeirTransformInfo *t = weir_transform_lookup("int8-fake-quant");
  g_autoptr(WeirGraph) g = weir_graph_new("scalar");
  WeirState *s = weir_graph_add_state(g, "main");
  assert_non_null(
      weir_graph_add_array(g, "X", WEIR_DTYPE_F32, "4", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "S", WEIR_DTYPE_F32, "", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "K", WEIR_DTYPE_I32, "", FALSE, NULL));
  WeirNode *x = weir_state_add_access(g, s, "X");
  const char *ins[] = {"x", NULL};
  const char *outs[] = {"y", "k", NULL};
  WeirNode *tk = weir_state_add_tasklet(g, s, "first", ins, outs,
                                        "y = x * 3.0\nk = i32(x * 10.0)");
  WeirNode *sn = weir_state_add_access(g, s, "S");
  WeirNode *kn = weir_state_add_access(g, s, "K");
  assert_non_null(
      weir_state_add_memlet(g, s, x->id, NULL, tk->id, "x", "X", "1", NULL));
  assert_non_null(
      weir_state_add_memlet(g, s, tk->id, "y", sn->id, NULL, "S", "", NULL));
  assert_non_null(
      weir_state_add_memlet(g, s, tk->id, "k", kn->id, NULL, "K", "", NULL));
  assert_true(weir_graph_validate(g, NULL));
  guint sid = s->id, xid = x->id, snid = sn->id, knid = kn->id;

  /* Sites: only the float array that is written. */
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  assert_int_equal(sites->len, 1);
  assert_int_equal(g_array_index(sites, WeirSite, 0).nodes[0], snid);

  char *reason = NULL;
  WeirSite on_x = {.state = sid, .n_nodes = 1, .nodes = {xid}};
  assert_false(weir_transform_can_apply(t, g, &on_x, NULL, &reason));
  assert_contains(reason, "is not written in state");
  g_clear_pointer(&reason, g_free);
  WeirSite on_k = {.state = sid, .n_nodes = 1, .nodes = {knid}};
  assert_false(weir_transform_can_apply(t, g, &on_k, NULL, &reason));
  assert_contains(reason, "container 'K' is i32, not a float array");
  g_clear_pointer(&reason, g_free);
  WeirSite on_tasklet = {.state = sid, .n_nodes = 1, .nodes = {tk->id}};
  assert_false(weir_transform_can_apply(t, g, &on_tasklet, NULL, &reason));
  assert_contains(reason, "must be an access node");
  g_clear_pointer(&reason, g_free);
  /* Parameter range. */
  const char *bad[] = {"scale=0", NULL};
  g_autoptr(GError) error = NULL;
  assert_null(weir_params_parse(t, bad, &error));
  assert_contains(error->message, "transformation 'int8-fake-quant': parameter "
                                  "'scale': 0 is out of range");
  g_clear_error(&error);

  WeirSite on_s = {.state = sid, .n_nodes = 1, .nodes = {snid}};
  const char *assign[] = {"scale=0.5", NULL};
  g_autoptr(WeirParams) p = weir_params_parse(t, assign, NULL);
  if (!weir_transform_apply(g, t, &on_s, p, NULL, NULL, &error))
    fail_msg("%s", error->message);
  g_autoptr(GHashTable) args = random_args(g, NULL, 11);
  const WeirTensor *xt = g_hash_table_lookup(args, "X");
  float x1 = (float)weir_tensor_get(xt, 1);
  run(g, NULL, args);
  float want = quant_f32(x1 * 3.0f, 0.5f);
  assert_true((float)weir_tensor_get(g_hash_table_lookup(args, "S"), 0) ==
              want);
  /* The new access node of S comes after the site: applying again is
   * legal and changes nothing (quantization is idempotent). */
  WeirSite again = {.state = sid, .n_nodes = 1, .nodes = {snid}};
  if (!weir_transform_apply(g, t, &again, p, NULL, NULL, &error))
    fail_msg("%s", error->message);
  g_autoptr(GHashTable) args2 = random_args(g, NULL, 11);
  run(g, NULL, args2);
  assert_true((float)weir_tensor_get(g_hash_table_lookup(args2, "S"), 0) ==
              want);

  /* A reader of S through an access node not ordered with the site. */
  assert_non_null(
      weir_graph_add_array(g, "Z", WEIR_DTYPE_F32, "", FALSE, NULL));
  WeirNode *r = weir_state_add_access(g, s, "S");
  const char *zin[] = {"s", NULL};
  const char *zout[] = {"z", NULL};
  WeirNode *tz = weir_state_add_tasklet(g, s, "read", zin, zout, "z = s");
  WeirNode *zn = weir_state_add_access(g, s, "Z");
  assert_non_null(
      weir_state_add_memlet(g, s, r->id, NULL, tz->id, "s", "S", "", NULL));
  assert_non_null(
      weir_state_add_memlet(g, s, tz->id, "z", zn->id, NULL, "Z", "", NULL));
  g_autofree char *before = weir_graph_to_json(g);
  assert_false(weir_transform_apply(g, t, &again, p, NULL, NULL, &error));
  g_autofree char *msg = g_strdup_printf(
      "container 'S' has another access node (node %u) in state %u 'main' "
      "that is not ordered with node %u",
      r->id, sid, snid);
  assert_contains(error->message, msg);
  g_autofree char *after = weir_graph_to_json(g);
  assert_string_equal(before, after);
}

/* The expanded sample models: every legal site applies and validates;
 * quantizing the model's output after its last writer gives PyTorch's
 * output, quantized. */
static void check_model(const char *name, const char *batch_symbol) {
  const WeirTransformInfo *t = weir_transform_lookup("int8-fake-quant");
  g_autofree char *onnx = g_strdup_printf("%s.onnx", name);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", onnx, NULL);
  g_autofree char *in_path = g_build_filename(WEIR_SRCDIR, "samples", "models",
                                              name, "input_0.pb", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *in_name = NULL;
  g_autoptr(WeirTensor) input = weir_tensor_read_pb(in_path, &in_name, &error);
  assert_non_null(input);
  g_autoptr(GHashTable) symbols = weir_bindings_new();
  if (batch_symbol)
    weir_bindings_set(symbols, batch_symbol, input->shape[0]);
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  WeirOnnxImportOptions opts = {.symbols = symbols, .names = names};
  g_autoptr(WeirGraph) g = weir_onnx_import(path, &opts, &error);
  if (!g || !weir_expand_all(g, NULL, NULL, &error))
    fail_msg("%s: %s", name, error->message);
  const char *in_container = g_hash_table_lookup(names, in_name);

  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  guint legal = 0;
  for (guint k = 0; k < sites->len; k++) {
    const WeirSite *site = &g_array_index(sites, WeirSite, k);
    if (!weir_transform_can_apply(t, g, site, NULL, NULL))
      continue;
    legal++;
    g_autoptr(WeirGraph) q = weir_graph_copy(g);
    if (!weir_transform_apply(q, t, site, NULL, NULL, NULL, &error))
      fail_msg("%s: %s", name, error->message);
  }
  assert_true(legal > 0);

  /* The output: a written argument other than the input, at an access node
   * that nothing reads afterwards. */
  const WeirSite *out_site = NULL;
  const char *out_name = NULL;
  for (guint k = 0; k < sites->len; k++) {
    const WeirSite *site = &g_array_index(sites, WeirSite, k);
    const WeirNode *n = weir_graph_node(g, site->nodes[0], NULL);
    const WeirContainer *c = weir_graph_container(g, n->data);
    WeirState *st = weir_graph_state(g, site->state);
    g_autoptr(GPtrArray) readers = weir_state_out_edges(st, n->id);
    if (!c->transient && !c->initial && strcmp(c->name, in_container) != 0 &&
        readers->len == 0 && weir_transform_can_apply(t, g, site, NULL, NULL)) {
      out_site = site;
      out_name = c->name;
    }
  }
  assert_non_null(out_site);
  g_autoptr(WeirGraph) q = weir_graph_copy(g);
  const char *assign[] = {"scale=0.01", NULL};
  g_autoptr(WeirParams) p = weir_params_parse(t, assign, NULL);
  assert_true(weir_transform_apply(q, t, out_site, p, NULL, NULL, NULL));
  g_autoptr(GHashTable) a0 = random_args(g, symbols, 5);
  g_hash_table_replace(a0, g_strdup(in_container), weir_tensor_copy(input));
  g_autoptr(GHashTable) a1 = copy_args(a0);
  run(g, symbols, a0);
  run(q, symbols, a1);
  const WeirTensor *ref = g_hash_table_lookup(a0, out_name);
  const WeirTensor *got = g_hash_table_lookup(a1, out_name);
  for (gint64 i = 0; i < ref->count; i++)
    assert_true((float)weir_tensor_get(got, i) ==
                quant_f32((float)weir_tensor_get(ref, i), 0.01f));
}

static void test_example_models(void **state) {
  (void)state;
  check_model("mlp", "batch");
  check_model("lenet", NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load_directory),
      cmocka_unit_test(test_load_file),
      cmocka_unit_test(test_example_outputs),
      cmocka_unit_test(test_example_every_site),
      cmocka_unit_test(test_example_scalar_and_refusals),
      cmocka_unit_test(test_example_models),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
