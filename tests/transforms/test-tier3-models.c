/* test-tier3-models.c — the tier-3 transformations on the bundled PyTorch
 * models (samples/models), imported and expanded into maps and tasklets.
 *
 * For every transformation and model: the legal sites are the expected ones
 * (checked by the labels of the operators they join, so the test does not
 * depend on node ids), refused sites give the expected reasons, and
 * applying at each legal site (each on a fresh copy) validates, reduces (or
 * keeps) the data movement as the transformation promises and computes the
 * same output on the model's reference input.  resnet takes seconds per
 * run in the interpreter, so there every site is applied and checked but
 * outputs are compared once, after the whole pipeline.  The pipeline
 * (state, map, map-reduce, horizontal and tasklet fusion to a fixpoint)
 * must match PyTorch's reference output too, interpreted and compiled. */
#include "tier3-check.h"
#include "weir-import.h"
#include "weir-runtime.h"
#include "weir-tensor-io.h"
#include "weir.h"

typedef struct {
  WeirGraph *g;      /* imported and expanded */
  WeirTensor *input; /* reference input (PyTorch's) */
  WeirTensor *expected;
  char *in_container, *out_container;
  WeirTensor *base; /* output of the untransformed program */
} Model;

static void model_free(Model *m) {
  weir_graph_free(m->g);
  weir_tensor_free(m->input);
  weir_tensor_free(m->expected);
  weir_tensor_free(m->base);
  g_free(m->in_container);
  g_free(m->out_container);
  g_free(m);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Model, model_free)

static WeirTensor *run_model(const Model *m, const WeirGraph *g) {
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  WeirTensor *out = weir_tensor_new(m->expected->dtype, m->expected->rank,
                                    m->expected->shape);
  g_hash_table_insert(args, m->in_container, weir_tensor_copy(m->input));
  g_hash_table_insert(args, m->out_container, out);
  g_autoptr(GError) error = NULL;
  if (!weir_interpret(copy, NULL, args, NULL, &error))
    fail_msg("%s: %s", g->name, error->message);
  return weir_tensor_copy(out);
}

static Model *load_model(const char *name) {
  Model *m = g_new0(Model, 1);
  g_autofree char *file = g_strdup_printf("%s.onnx", name);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", file, NULL);
  g_autofree char *in_path = g_build_filename(WEIR_SRCDIR, "samples", "models",
                                              name, "input_0.pb", NULL);
  g_autofree char *out_path = g_build_filename(WEIR_SRCDIR, "samples", "models",
                                               name, "output_0.pb", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *in_name = NULL, *out_name = NULL;
  m->input = weir_tensor_read_pb(in_path, &in_name, &error);
  m->expected = weir_tensor_read_pb(out_path, &out_name, &error);
  assert_non_null(m->input);
  assert_non_null(m->expected);
  g_autoptr(GHashTable) symbols = weir_bindings_new();
  if (strcmp(name, "mlp") == 0)
    weir_bindings_set(symbols, "batch", m->input->shape[0]);
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  WeirOnnxImportOptions opts = {.symbols = symbols, .names = names};
  m->g = weir_onnx_import(path, &opts, &error);
  if (!m->g || !weir_expand_all(m->g, NULL, NULL, &error))
    fail_msg("%s: %s", path, error->message);
  m->in_container = g_strdup(g_hash_table_lookup(names, in_name));
  m->out_container = g_strdup(g_hash_table_lookup(names, out_name));
  m->base = run_model(m, m->g);
  g_autoptr(GError) err = NULL;
  if (!weir_tensor_allclose(m->base, m->expected, 1e-4, 1e-4, NULL, &err))
    fail_msg("%s before any transformation: %s", name, err->message);
  return m;
}

static void assert_same_output(const Model *m, const WeirGraph *g,
                               const char *what) {
  g_autoptr(WeirTensor) out = run_model(m, g);
  g_autoptr(GError) error = NULL;
  if (!weir_tensor_allclose(out, m->base, 1e-5, 1e-7, NULL, &error))
    fail_msg("%s: %s", what, error->message);
}

static const WeirNode *site_node(const WeirGraph *g, const WeirSite *site,
                                 guint k) {
  return weir_state_node(weir_graph_state(g, site->state), site->nodes[k]);
}

/* "A -> B", the labels of the two maps (or tasklets) a site joins
 * (transfer full). */
static char *site_labels(const WeirGraph *g, const WeirSite *site) {
  if (site->n_nodes == 0)
    return g_strdup_printf("state %u", site->state);
  guint first = site_node(g, site, 0)->kind == WEIR_NODE_ACCESS ? 1 : 0;
  return g_strdup_printf("%s -> %s", site_node(g, site, first)->label,
                         site_node(g, site, site->n_nodes - 1)->label);
}

/* Bytes of one container. */
static gint64 container_bytes(const WeirGraph *g, const char *name) {
  g_autoptr(WeirExpr) e = weir_container_bytes(weir_graph_container(g, name));
  gint64 v = 0;
  assert_true(weir_expr_eval(e, NULL, &v, NULL));
  return v;
}

/* Iterations of the map of an entry or exit. */
static gint64 map_iterations(const WeirGraph *g, const WeirNode *n) {
  const WeirState *s = NULL;
  for (guint i = 0; i < g->states->len && !s; i++)
    if (weir_state_node(g_ptr_array_index(g->states, i), n->id))
      s = g_ptr_array_index(g->states, i);
  const WeirNode *entry =
      n->kind == WEIR_NODE_MAP_EXIT ? weir_state_node(s, n->entry) : n;
  gint64 size = 1;
  for (guint k = 0; k < entry->map->ranges->len; k++) {
    g_autoptr(WeirExpr) r =
        weir_range_size(&g_array_index(entry->map->ranges, WeirRange, k));
    gint64 v = 0;
    assert_true(weir_expr_eval(r, NULL, &v, NULL));
    size *= v;
  }
  return size;
}

/* Applies `name` at every legal site, each on a copy of m's program:
 * validation, the data-movement check of the transformation, and (when
 * run) the outputs.  The labels of the legal sites, joined by "; ", must be
 * `expect`.  Returns the number of legal sites. */
static guint check_each_site(const Model *m, const char *name,
                             const char *const *params, gboolean run_outputs,
                             const char *expect) {
  g_autoptr(GArray) sites = t3_sites(name, m->g);
  g_autoptr(GString) legal = g_string_new(NULL);
  guint n = 0;
  gint64 bytes0 = t3_bytes(m->g, NULL);
  for (guint i = 0; i < sites->len; i++) {
    const WeirSite *site = &g_array_index(sites, WeirSite, i);
    g_autofree char *why = t3_why_params(name, m->g, site, params);
    if (why)
      continue;
    n++;
    g_autofree char *labels = site_labels(m->g, site);
    g_string_append_printf(legal, "%s%s", legal->len ? "; " : "", labels);
    g_autoptr(WeirGraph) g = weir_graph_copy(m->g);
    t3_apply_params(name, g, site, params);
    gint64 drop = bytes0 - t3_bytes(g, NULL);
    if (strcmp(name, "map-fusion") == 0) {
      /* T's write and read disappear (at least). */
      const char *t = site_node(m->g, site, 1)->data;
      assert_true(drop >= 2 * container_bytes(m->g, t));
      assert_null(weir_graph_container(g, t));
    } else if (strcmp(name, "map-reduce-fusion") == 0) {
      /* Over the same space, at least T's read disappears.  Over a larger
       * space A's inputs are read once per point of it: a trade that may
       * move more bytes (documented). */
      if (map_iterations(m->g, site_node(m->g, site, 0)) ==
          map_iterations(m->g, site_node(m->g, site, 2)))
        assert_true(drop >=
                    container_bytes(m->g, site_node(m->g, site, 1)->data));
    } else {
      assert_true(drop >= 0);
    }
    if (run_outputs) {
      g_autofree char *what = g_strdup_printf("%s at %s", name, labels);
      assert_same_output(m, g, what);
    }
  }
  if (expect && strcmp(legal->str, expect) != 0)
    fail_msg("%s on %s: legal sites\n  %s\nexpected\n  %s", name, m->g->name,
             legal->str, expect);
  return n;
}

/* The reason for the site joining labels a -> b (first match). */
static void assert_reason_at(const Model *m, const char *name, const char *a,
                             const char *b, const char *fragment) {
  g_autoptr(GArray) sites = t3_sites(name, m->g);
  for (guint i = 0; i < sites->len; i++) {
    const WeirSite *site = &g_array_index(sites, WeirSite, i);
    g_autofree char *labels = site_labels(m->g, site);
    g_autofree char *want = g_strdup_printf("%s -> %s", a, b);
    if (strcmp(labels, want) == 0) {
      t3_assert_reason(name, m->g, site, fragment);
      return;
    }
  }
  fail_msg("%s: no site %s -> %s", name, a, b);
}

#define RECOMPUTE ((const char *const[]){"recompute=true", NULL})

static const char *const pipeline[] = {
    "state-fusion", "map-fusion", "map-reduce-fusion", "horizontal-map-fusion",
    "tasklet-fusion"};

/* Applies `name` at its first legal site that does not increase the data
 * movement, again and again; returns how many times it applied. */
static guint apply_while_not_worse(const char *name, WeirGraph *g,
                                   const char *const *params) {
  guint count = 0;
  for (gboolean applied = TRUE; applied;) {
    applied = FALSE;
    g_autoptr(GArray) sites = t3_sites(name, g);
    gint64 bytes = t3_bytes(g, NULL);
    for (guint i = 0; i < sites->len && !applied; i++) {
      const WeirSite *site = &g_array_index(sites, WeirSite, i);
      g_autofree char *why = t3_why_params(name, g, site, params);
      if (why)
        continue;
      g_autoptr(WeirGraph) trial = weir_graph_copy(g);
      t3_apply_params(name, trial, site, params);
      if (t3_bytes(trial, NULL) > bytes)
        continue;
      t3_apply_params(name, g, site, params);
      applied = TRUE;
      count++;
    }
  }
  return count;
}

/* Every tier-3 transformation to a fixpoint (map-reduce-fusion with
 * recompute=true), skipping applications that would move more bytes (a
 * recompute trade that does not pay); returns the number of
 * applications. */
static guint run_pipeline(WeirGraph *g) {
  guint total = 0;
  for (;;) {
    guint round = 0;
    for (guint i = 0; i < G_N_ELEMENTS(pipeline); i++)
      round += apply_while_not_worse(
          pipeline[i], g,
          strcmp(pipeline[i], "map-reduce-fusion") == 0 ? RECOMPUTE : NULL);
    total += round;
    if (round == 0)
      return total;
  }
}

static void check_pipeline(const Model *m) {
  g_autoptr(WeirGraph) g = weir_graph_copy(m->g);
  gint64 bytes0 = t3_bytes(g, NULL);
  assert_true(run_pipeline(g) > 0);
  assert_true(t3_bytes(g, NULL) < bytes0);
  assert_same_output(m, g, "pipeline");
  g_autoptr(WeirTensor) out = run_model(m, g);
  g_autoptr(GError) error = NULL;
  if (!weir_tensor_allclose(out, m->expected, 1e-4, 1e-4, NULL, &error))
    fail_msg("pipeline against PyTorch: %s", error->message);

  /* The fused program compiles to C (scalars handed between tasklets stay
   * local to an iteration) and computes the same. */
  WeirCompileOptions opts = {.no_cache = TRUE};
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &opts, NULL, &error);
  if (!k)
    fail_msg("compiling the fused %s: %s", g->name, error->message);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  WeirTensor *compiled = weir_tensor_new(m->expected->dtype, m->expected->rank,
                                         m->expected->shape);
  g_hash_table_insert(args, m->in_container, weir_tensor_copy(m->input));
  g_hash_table_insert(args, m->out_container, compiled);
  if (!weir_kernel_run(k, NULL, args, &error))
    fail_msg("running the fused %s: %s", g->name, error->message);
  if (!weir_tensor_allclose(compiled, out, 1e-4, 1e-5, NULL, &error))
    fail_msg("compiled pipeline against the interpreter: %s", error->message);
}

static void test_mlp(void **state) {
  (void)state;
  g_autoptr(Model) m = load_model("mlp");
  /* Gemm -> Relu: the Gemm accumulates into its output. */
  assert_int_equal(check_each_site(m, "map-fusion", NULL, TRUE, ""), 0);
  assert_reason_at(m, "map-fusion", "/fc1/Gemm_mac", "/Relu",
                   "is written with wcr 'sum' by map '/fc1/Gemm_mac'");
  /* Relu -> next Gemm: relu recomputed per output column. */
  check_each_site(m, "map-reduce-fusion", NULL, TRUE, "");
  assert_reason_at(m, "map-reduce-fusion", "/Relu", "/fc2/Gemm_mac",
                   "iterates over more points than map '/Relu'");
  check_each_site(m, "map-reduce-fusion", RECOMPUTE, TRUE,
                  "/Relu -> /fc2/Gemm_mac; /Relu_1 -> /fc3/Gemm_mac");
  assert_int_equal(check_each_site(m, "horizontal-map-fusion", NULL, TRUE, ""),
                   0);
  assert_int_equal(check_each_site(m, "tasklet-fusion", NULL, TRUE, ""), 0);
  assert_int_equal(check_each_site(m, "state-fusion", NULL, TRUE, ""), 0);
  check_pipeline(m);
}

static void test_lenet(void **state) {
  (void)state;
  g_autoptr(Model) m = load_model("lenet");
  assert_int_equal(check_each_site(m, "map-fusion", NULL, TRUE, ""), 0);
  assert_reason_at(m, "map-fusion", "/conv1/Conv_mac", "/Relu",
                   "is written with wcr 'sum'");
  check_each_site(m, "map-reduce-fusion", RECOMPUTE, TRUE,
                  "/Relu -> /pool/MaxPool_max; /Relu_2 -> /fc2/Gemm_mac");
  /* MaxPool's 2x2 windows with stride 2 tile its input: the ReLU fuses
   * into it without recomputing anything (i2 becomes k0 + 2*o0). */
  check_each_site(m, "map-reduce-fusion", NULL, TRUE,
                  "/Relu -> /pool/MaxPool_max");
  check_pipeline(m);
}

static void test_resnet(void **state) {
  (void)state;
  g_autoptr(Model) m = load_model("resnet");
  /* BatchNormalization -> Relu, BN -> residual Add, Add -> Relu. */
  check_each_site(m, "map-fusion", NULL, FALSE,
                  "/bn/BatchNormalization -> /Relu; "
                  "/block1/bn1/BatchNormalization -> /block1/Relu; "
                  "/block1/bn2/BatchNormalization -> /block1/Add; "
                  "/block1/Add -> /block1/Relu_1; "
                  "/block2/bn1/BatchNormalization -> /block2/Relu; "
                  "/block2/bn2/BatchNormalization -> /block2/Add; "
                  "/block2/Add -> /block2/Relu_1");
  assert_reason_at(m, "map-fusion", "/Relu", "/block1/Add",
                   "is also read by node");
  /* The last Relu -> GlobalAveragePool's sum. */
  check_each_site(m, "map-reduce-fusion", NULL, FALSE,
                  "/block2/Relu_1 -> /pool/GlobalAveragePool_sum");
  assert_reason_at(m, "map-reduce-fusion", "/Relu", "/block1/conv1/Conv_mac",
                   "at other indices than map '/Relu' writes");
  check_each_site(m, "horizontal-map-fusion", NULL, FALSE, "");
  check_pipeline(m);
}

static void test_transformer(void **state) {
  (void)state;
  g_autoptr(Model) m = load_model("transformer");
  guint n = check_each_site(m, "map-fusion", NULL, TRUE, NULL);
  assert_true(n >= 8);
  /* LayerNorm tail: Div -> Mul -> Add (scale, shift). */
  assert_reason_at(m, "map-fusion", "/norm1/Sub", "/norm1/Pow",
                   "is also read by node");
  /* The first of the two sites from expsum to normalize: the sum. */
  assert_reason_at(m, "map-fusion", "/self_attn/Softmax_expsum",
                   "/self_attn/Softmax_normalize",
                   "'_self_attn_Softmax_sum' is written with wcr 'sum'");
  /* Over the same space: into the LayerNorms' sums. */
  n = check_each_site(m, "map-reduce-fusion", NULL, TRUE,
                      "/Add -> /norm1/ReduceMean_sum; "
                      "/norm1/Pow -> /norm1/ReduceMean_1_sum; "
                      "/Add_1 -> /norm2/ReduceMean_sum; "
                      "/norm2/Pow -> /norm2/ReduceMean_1_sum");
  /* Recomputing into the batched products too. */
  n = check_each_site(m, "map-reduce-fusion", RECOMPUTE, TRUE, NULL);
  assert_true(n >= 8);
  check_each_site(m, "horizontal-map-fusion", NULL, TRUE,
                  "/self_attn/Slice -> /self_attn/Slice_1; "
                  "/self_attn/Slice -> /self_attn/Slice_2; "
                  "/self_attn/Slice_1 -> /self_attn/Slice_2; "
                  "/self_attn/Mul -> /self_attn/Mul_1; "
                  "/self_attn/Mul -> /self_attn/Mul_2; "
                  "/self_attn/Mul_1 -> /self_attn/Mul_2");
  check_pipeline(m);
}

int main(void) {
  weir_transforms_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlp),
      cmocka_unit_test(test_lenet),
      cmocka_unit_test(test_resnet),
      cmocka_unit_test(test_transformer),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
