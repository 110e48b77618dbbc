/* test-transform.c — the transformation framework: registry rules,
 * parameters, sites and legality, all-or-nothing application.
 *
 * The test registers its own transformations (static records, as a plugin
 * would), among them ones that break the program on purpose, and checks
 * that a failed application leaves the program byte-identical. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-json.h"
#include "weir-recipe.h"
#include "weir-transform-private.h"
#include "weir-transform.h"
#include "weir-validate.h"

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    const char *hay_ = (hay);                                                  \
    if (!hay_ || !strstr(hay_, (needle)))                                      \
      fail_msg("expected to find '%s' in: %s", (needle),                       \
               hay_ ? hay_ : "(null)");                                        \
  } while (0)

static WeirGraph *load_sample(const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_load(path, &error);
  if (!g)
    fail_msg("%s: %s", path, error->message);
  return g;
}

/* ------------------------------------------------ test transformations */

static gboolean apply_noop(WeirGraph *g, const WeirSite *site,
                           const WeirParams *p, GError **error) {
  (void)g, (void)site, (void)p, (void)error;
  return TRUE;
}

/* A parameterized transformation that records what it was given. */
static const WeirParamSpec all_params[] = {
    {.name = "tile",
     .type = WEIR_PARAM_INT,
     .default_value = "8",
     .min = 1,
     .max = 64,
     .doc = "tile size"},
    {.name = "alpha",
     .type = WEIR_PARAM_FLOAT,
     .default_value = "0.5",
     .fmin = 0.0,
     .fmax = 1.0},
    {.name = "fast", .type = WEIR_PARAM_BOOL, .default_value = "false"},
    {.name = "tag", .type = WEIR_PARAM_STRING, .default_value = "x"},
    {.name = "impl",
     .type = WEIR_PARAM_CHOICE,
     .default_value = "pure",
     .choices = "pure|blas|im2col"},
    {.name = "sizes",
     .type = WEIR_PARAM_INTS,
     .default_value = "4,4",
     .min = 1,
     .max = 1024},
    {.name = "count",
     .type = WEIR_PARAM_INT,
     .default_value = NULL,
     .doc = "how many (required)"},
};

static const WeirTransformInfo t_params = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "test-params",
    .tier = 2,
    .description = "parameters",
    .params = all_params,
    .n_params = G_N_ELEMENTS(all_params),
    .apply = apply_noop,
};

/* Pattern: map_entry -> tasklet.  Changes the tasklet's label. */
static const WeirPatternNode entry_tasklet_nodes[] = {
    {.kind = WEIR_NODE_MAP_ENTRY},
    {.kind = WEIR_NODE_TASKLET},
};
static const WeirPatternEdge entry_tasklet_edges[] = {{0, 1}};
static const WeirPattern entry_tasklet = {
    .nodes = entry_tasklet_nodes,
    .n_nodes = 2,
    .edges = entry_tasklet_edges,
    .n_edges = 1,
};

static gboolean relabel_can_apply(const WeirGraph *g, const WeirSite *site,
                                  const WeirParams *p, char **reason) {
  (void)p;
  const WeirState *s = weir_graph_state(g, site->state);
  const WeirNode *n = weir_state_node(s, site->nodes[1]);
  if (strcmp(n->label, "forbidden") == 0) {
    *reason = g_strdup("the tasklet is labelled 'forbidden'");
    return FALSE;
  }
  return TRUE;
}

static gboolean relabel_apply(WeirGraph *g, const WeirSite *site,
                              const WeirParams *p, GError **error) {
  (void)p, (void)error;
  WeirState *s = weir_graph_state(g, site->state);
  WeirNode *n = weir_state_node(s, site->nodes[1]);
  g_free(n->label);
  n->label = g_strdup("relabelled");
  return TRUE;
}

static const WeirTransformInfo t_relabel = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "test-relabel",
    .tier = 1,
    .description = "relabel a tasklet",
    .pattern = &entry_tasklet,
    .can_apply = relabel_can_apply,
    .apply = relabel_apply,
};

/* Changes a lot, then fails. */
static gboolean failing_apply(WeirGraph *g, const WeirSite *site,
                              const WeirParams *p, GError **error) {
  (void)p;
  WeirState *s = weir_graph_state(g, site->state);
  weir_state_remove_node(s, site->nodes[1]);
  weir_graph_add_array(g, "junk", WEIR_DTYPE_F32, "7", TRUE, NULL);
  weir_graph_add_state(g, "junk");
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
              "the test transformation gives up");
  return FALSE;
}

static const WeirTransformInfo t_failing = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "test-failing",
    .tier = 3,
    .description = "fails after changing the program",
    .pattern = &entry_tasklet,
    .apply = failing_apply,
};

/* Claims success but leaves an invalid program (a tasklet whose output
 * connectors lost their memlets). */
static gboolean breaking_apply(WeirGraph *g, const WeirSite *site,
                               const WeirParams *p, GError **error) {
  (void)p, (void)error;
  WeirState *s = weir_graph_state(g, site->state);
  g_autoptr(GPtrArray) out = weir_state_out_edges(s, site->nodes[1]);
  for (guint i = 0; i < out->len; i++)
    weir_state_remove_memlet(s, ((WeirMemlet *)g_ptr_array_index(out, i))->id);
  return TRUE;
}

static const WeirTransformInfo t_breaking = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "test-breaking",
    .tier = 3,
    .description = "breaks the program",
    .pattern = &entry_tasklet,
    .apply = breaking_apply,
};

/* A hand-written matcher: every access node of a non-transient container,
 * last id first. */
static void args_match(const WeirGraph *g, GArray *sites) {
  for (guint i = g->states->len; i-- > 0;) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = s->nodes->len; k-- > 0;) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_ACCESS)
        continue;
      const WeirContainer *c = weir_graph_container(g, n->data);
      if (c->transient)
        continue;
      WeirSite site = {.state = s->id, .n_nodes = 1, .nodes = {n->id}};
      g_array_append_val(sites, site);
    }
  }
}

static const WeirTransformInfo t_args = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "test-args",
    .tier = 4,
    .description = "hand-written matcher",
    .match = args_match,
    .apply = apply_noop,
};

/* Neither pattern nor match: a whole-program pass. */
static const WeirTransformInfo t_pass = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "test-pass",
    .tier = 4,
    .description = "whole program",
    .apply = apply_noop,
};

/* Pattern refined by match: keeps only the last match. */
static void keep_last(const WeirGraph *g, GArray *sites) {
  (void)g;
  if (sites->len > 1)
    g_array_remove_range(sites, 0, sites->len - 1);
}

static const WeirPatternNode access_node[] = {{.kind = WEIR_NODE_ACCESS}};
static const WeirPattern access_pattern = {.nodes = access_node, .n_nodes = 1};

static const WeirTransformInfo t_refine = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "test-refine",
    .tier = 2,
    .description = "pattern refined by match",
    .pattern = &access_pattern,
    .match = keep_last,
    .apply = apply_noop,
};

static int setup(void **state) {
  (void)state;
  weir_transforms_init();
  const WeirTransformInfo *all[] = {&t_params,   &t_relabel, &t_failing,
                                    &t_breaking, &t_args,    &t_pass,
                                    &t_refine};
  for (guint i = 0; i < G_N_ELEMENTS(all); i++) {
    g_autoptr(GError) error = NULL;
    if (!weir_transform_register(all[i], &error))
      fail_msg("%s: %s", all[i]->name, error->message);
  }
  return 0;
}

/* ----------------------------------------------------------------- registry */

static gboolean register_fails(const WeirTransformInfo *info,
                               const char *expect, gint code) {
  g_autoptr(GError) error = NULL;
  gboolean ok = weir_transform_register(info, &error);
  assert_false(ok);
  assert_non_null(error);
  assert_int_equal(error->code, code);
  assert_contains(error->message, expect);
  return TRUE;
}

static void test_registry_rules(void **state) {
  (void)state;
  /* Duplicate names. */
  register_fails(&t_relabel,
                 "a transformation named 'test-relabel' is already registered",
                 WEIR_ERROR_INVALID);
  static const WeirTransformInfo dup_builtin = {.api_version = 1,
                                                .name = "expand-library-node",
                                                .tier = 1,
                                                .apply = apply_noop};
  register_fails(&dup_builtin, "'expand-library-node' is already registered",
                 WEIR_ERROR_INVALID);
  /* Newer API. */
  static const WeirTransformInfo newer = {.api_version =
                                              WEIR_PLUGIN_API_VERSION + 1,
                                          .name = "test-newer",
                                          .tier = 1,
                                          .apply = apply_noop};
  g_autofree char *msg = g_strdup_printf(
      "plugin 'test-newer' was built for plugin API version %d, this Weir "
      "provides %d",
      WEIR_PLUGIN_API_VERSION + 1, WEIR_PLUGIN_API_VERSION);
  register_fails(&newer, msg, WEIR_ERROR_VERSION);
  /* Missing parts, bad tiers, bad names. */
  static const WeirTransformInfo no_name = {
      .api_version = 1, .tier = 1, .apply = apply_noop};
  register_fails(&no_name, "without a name", WEIR_ERROR_INVALID);
  static const WeirTransformInfo no_apply = {
      .api_version = 1, .name = "test-no-apply", .tier = 1};
  register_fails(&no_apply, "'test-no-apply' has no apply function",
                 WEIR_ERROR_INVALID);
  static const WeirTransformInfo tier0 = {
      .api_version = 1, .name = "test-tier0", .tier = 0, .apply = apply_noop};
  register_fails(&tier0, "tier 0 is not one of 1, 2, 3, 4", WEIR_ERROR_INVALID);
  static const WeirTransformInfo tier5 = {
      .api_version = 1, .name = "test-tier5", .tier = 5, .apply = apply_noop};
  register_fails(&tier5, "tier 5", WEIR_ERROR_INVALID);
  static const WeirTransformInfo bad_name = {
      .api_version = 1, .name = "Map_Tiling", .tier = 1, .apply = apply_noop};
  register_fails(&bad_name, "lower-case", WEIR_ERROR_INVALID);
  /* A default outside its own range is a broken record. */
  static const WeirParamSpec bad_default[] = {{.name = "n",
                                               .type = WEIR_PARAM_INT,
                                               .default_value = "0",
                                               .min = 1,
                                               .max = 4}};
  static const WeirTransformInfo bad_def = {.api_version = 1,
                                            .name = "test-bad-default",
                                            .tier = 1,
                                            .params = bad_default,
                                            .n_params = 1,
                                            .apply = apply_noop};
  register_fails(&bad_def, "default", WEIR_ERROR_INVALID);
  /* A pattern edge out of range. */
  static const WeirPatternEdge bad_edges[] = {{0, 3}};
  static const WeirPattern bad_pattern = {
      .nodes = access_node, .n_nodes = 1, .edges = bad_edges, .n_edges = 1};
  static const WeirTransformInfo bad_pat = {.api_version = 1,
                                            .name = "test-bad-pattern",
                                            .tier = 1,
                                            .pattern = &bad_pattern,
                                            .apply = apply_noop};
  register_fails(&bad_pat, "pattern edge 0", WEIR_ERROR_INVALID);
  /* None of the refused ones is registered. */
  assert_null(weir_transform_lookup("test-newer"));
  assert_null(weir_transform_lookup("test-no-apply"));
  assert_null(weir_transform_lookup("test-bad-default"));
  assert_ptr_equal(weir_transform_lookup("test-relabel"), &t_relabel);
  assert_non_null(weir_transform_lookup("expand-library-node"));
}

static void test_list_sorted(void **state) {
  (void)state;
  g_autoptr(GPtrArray) list = weir_transforms_list();
  assert_true(list->len >= 8);
  for (guint i = 1; i < list->len; i++) {
    const WeirTransformInfo *a = g_ptr_array_index(list, i - 1);
    const WeirTransformInfo *b = g_ptr_array_index(list, i);
    assert_true(a->tier < b->tier ||
                (a->tier == b->tier && strcmp(a->name, b->name) < 0));
  }
  gboolean seen = FALSE;
  for (guint i = 0; i < list->len; i++)
    seen = seen || g_ptr_array_index(list, i) == &t_pass;
  assert_true(seen);
  /* Idempotent init. */
  weir_transforms_init();
  g_autoptr(GPtrArray) again = weir_transforms_list();
  assert_int_equal(again->len, list->len);
}

static void test_unregister(void **state) {
  (void)state;
  static const WeirTransformInfo tmp = {.api_version = 1,
                                        .name = "test-temporary",
                                        .tier = 2,
                                        .apply = apply_noop};
  assert_true(weir_transform_register(&tmp, NULL));
  assert_non_null(weir_transform_lookup("test-temporary"));
  assert_true(weir_transform_unregister("test-temporary"));
  assert_null(weir_transform_lookup("test-temporary"));
  assert_false(weir_transform_unregister("test-temporary"));
  g_autoptr(GPtrArray) list = weir_transforms_list();
  for (guint i = 0; i < list->len; i++)
    assert_ptr_not_equal(g_ptr_array_index(list, i), &tmp);
}

/* --------------------------------------------------------------- params */

static void expect_param_error(const char *const *assign, const char *expect) {
  g_autoptr(GError) error = NULL;
  WeirParams *p = weir_params_parse(&t_params, assign, &error);
  assert_null(p);
  assert_non_null(error);
  assert_contains(error->message, "transformation 'test-params'");
  assert_contains(error->message, expect);
}

static void test_params_parse(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  const char *a1[] = {"count=3", NULL};
  g_autoptr(WeirParams) p = weir_params_parse(&t_params, a1, &error);
  assert_non_null(p);
  assert_int_equal(weir_params_get_int(p, "tile"), 8);
  assert_int_equal(weir_params_get_int(p, "count"), 3);
  assert_true(weir_params_get_float(p, "alpha") == 0.5);
  assert_false(weir_params_get_bool(p, "fast"));
  assert_string_equal(weir_params_get_string(p, "tag"), "x");
  assert_string_equal(weir_params_get_string(p, "impl"), "pure");
  const GArray *sizes = weir_params_get_ints(p, "sizes");
  assert_int_equal(sizes->len, 2);
  assert_int_equal(g_array_index(sizes, gint64, 1), 4);
  g_autofree char *text = weir_params_to_string(p);
  assert_string_equal(text, "alpha=0.5,count=3,fast=false,impl=pure,"
                            "sizes=4,4,tag=x,tile=8");

  const char *a2[] = {"tile=64",  "alpha=0.1",   "fast=true",
                      "tag=a b",  "impl=im2col", "sizes= 1, 2 ,1024",
                      "count=-7", NULL};
  g_autoptr(WeirParams) q = weir_params_parse(&t_params, a2, &error);
  assert_non_null(q);
  assert_int_equal(weir_params_get_int(q, "tile"), 64);
  assert_true(weir_params_get_bool(q, "fast"));
  assert_int_equal(weir_params_get_int(q, "count"), -7);
  g_autofree char *qt = weir_params_to_string(q);
  assert_string_equal(qt, "alpha=0.1,count=-7,fast=true,impl=im2col,"
                          "sizes=1,2,1024,tag=a b,tile=64");
  /* No parameters at all. */
  g_autoptr(WeirParams) none = weir_params_parse(&t_relabel, NULL, &error);
  g_autofree char *nt = weir_params_to_string(none);
  assert_string_equal(nt, "");
}

static void test_params_errors(void **state) {
  (void)state;
  const char *range[] = {"count=1", "tile=0", NULL};
  expect_param_error(range,
                     "parameter 'tile': 0 is out of range (allowed 1..64)");
  const char *range2[] = {"count=1", "tile=65", NULL};
  expect_param_error(range2, "65 is out of range (allowed 1..64)");
  const char *notint[] = {"count=1", "tile=8x", NULL};
  expect_param_error(notint, "parameter 'tile': '8x' is not an integer");
  const char *fl[] = {"count=1", "alpha=1.5", NULL};
  expect_param_error(fl, "parameter 'alpha': 1.5 is out of range (allowed "
                         "0..1)");
  const char *nan[] = {"count=1", "alpha=nan", NULL};
  expect_param_error(nan, "'nan' is not a finite number");
  const char *b[] = {"count=1", "fast=yes", NULL};
  expect_param_error(b, "'yes' is not a boolean (allowed: true, false)");
  const char *ch[] = {"count=1", "impl=fast", NULL};
  expect_param_error(ch, "parameter 'impl': 'fast' is not one of the choices "
                         "(allowed: pure, blas, im2col)");
  const char *ints[] = {"count=1", "sizes=1,x", NULL};
  expect_param_error(ints, "parameter 'sizes': '1,x' is not a comma-separated "
                           "list of integers");
  const char *ints2[] = {"count=1", "sizes=1,2000", NULL};
  expect_param_error(ints2, "element 2 = 2000 is out of range (allowed "
                            "1..1024)");
  const char *unknown[] = {"count=1", "tiles=4", NULL};
  expect_param_error(unknown, "unknown parameter 'tiles' (parameters: alpha, "
                              "count, fast, impl, sizes, tag, tile)");
  const char *noeq[] = {"count", NULL};
  expect_param_error(noeq, "'count' is not of the form name=value");
  const char *twice[] = {"count=1", "count=2", NULL};
  expect_param_error(twice, "parameter 'count' is given twice");
  expect_param_error(NULL, "parameter 'count' is required");
  /* Unknown names for a transformation without parameters. */
  g_autoptr(GError) error = NULL;
  const char *x[] = {"a=1", NULL};
  assert_null(weir_params_parse(&t_relabel, x, &error));
  assert_contains(error->message, "it has no parameters");
}

/* ---------------------------------------------------------------- sites */

static void test_sites_and_describe(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("matmul.json");
  g_autoptr(GArray) sites = weir_transform_sites(&t_relabel, g);
  /* init: 5 -> 6; multiply: 15 -> 16. */
  assert_int_equal(sites->len, 2);
  WeirSite *s0 = &g_array_index(sites, WeirSite, 0);
  assert_int_equal(s0->state, 4);
  assert_int_equal(s0->nodes[0], 5);
  assert_int_equal(s0->nodes[1], 6);
  g_autofree char *d = weir_site_describe(g, s0);
  assert_string_equal(d, "state 4: nodes 5, 6 (map_entry 'init', tasklet "
                         "'zero')");

  g_autoptr(GArray) args = weir_transform_sites(&t_args, g);
  /* Hand-written order is kept: 18 (C), 14 (B), 13 (A), then 8 (C). */
  assert_int_equal(args->len, 4);
  assert_int_equal(g_array_index(args, WeirSite, 0).nodes[0], 18);
  assert_int_equal(g_array_index(args, WeirSite, 3).nodes[0], 8);
  g_autofree char *d1 =
      weir_site_describe(g, &g_array_index(args, WeirSite, 0));
  assert_string_equal(d1, "state 12: node 18 (access 'C')");

  g_autoptr(GArray) pass = weir_transform_sites(&t_pass, g);
  assert_int_equal(pass->len, 1);
  assert_int_equal(g_array_index(pass, WeirSite, 0).state, 0);
  assert_int_equal(g_array_index(pass, WeirSite, 0).n_nodes, 0);
  g_autofree char *d2 =
      weir_site_describe(g, &g_array_index(pass, WeirSite, 0));
  assert_string_equal(d2, "whole program");
  assert_true(weir_transform_can_apply(
      &t_pass, g, &g_array_index(pass, WeirSite, 0), NULL, NULL));

  g_autoptr(GArray) refined = weir_transform_sites(&t_refine, g);
  assert_int_equal(refined->len, 1);
  assert_int_equal(g_array_index(refined, WeirSite, 0).nodes[0], 18);

  WeirSite missing = {.state = 12, .n_nodes = 1, .nodes = {99}};
  g_autofree char *d3 = weir_site_describe(g, &missing);
  assert_string_equal(d3, "state 12: node 99 (missing)");
}

static void test_can_apply(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("matmul.json");
  char *reason = NULL;
  WeirSite ok = {.state = 12, .n_nodes = 2, .nodes = {15, 16}};
  assert_true(weir_transform_can_apply(&t_relabel, g, &ok, NULL, &reason));
  assert_null(reason);

  /* Nodes of another state. */
  WeirSite other = {.state = 12, .n_nodes = 2, .nodes = {5, 6}};
  assert_false(weir_transform_can_apply(&t_relabel, g, &other, NULL, &reason));
  assert_contains(reason, "node 5 is in state 4 'init', not in state 12 "
                          "'multiply'");
  g_clear_pointer(&reason, g_free);

  WeirSite nostate = {.state = 77, .n_nodes = 1, .nodes = {5}};
  assert_false(weir_transform_can_apply(&t_args, g, &nostate, NULL, &reason));
  assert_contains(reason, "state 77 does not exist");
  g_clear_pointer(&reason, g_free);

  WeirSite nonode = {.state = 12, .n_nodes = 1, .nodes = {4242}};
  assert_false(weir_transform_can_apply(&t_args, g, &nonode, NULL, &reason));
  assert_contains(reason, "node 4242 is not in state 12 'multiply'");
  g_clear_pointer(&reason, g_free);

  /* Kinds that do not fit the pattern. */
  WeirSite kinds = {.state = 12, .n_nodes = 2, .nodes = {13, 16}};
  assert_false(weir_transform_can_apply(&t_relabel, g, &kinds, NULL, &reason));
  assert_contains(reason, "site position 1 must be a map_entry node");
  g_clear_pointer(&reason, g_free);
  WeirState *s = weir_graph_state(g, 12);
  WeirSite wrong_count = {.state = 12, .n_nodes = 1, .nodes = {15}};
  assert_false(
      weir_transform_can_apply(&t_relabel, g, &wrong_count, NULL, &reason));
  assert_contains(reason, "the site has 1 node, the pattern 2");
  g_clear_pointer(&reason, g_free);

  /* The transformation's own reason. */
  WeirNode *tasklet = weir_state_node(s, 16);
  g_free(tasklet->label);
  tasklet->label = g_strdup("forbidden");
  assert_false(weir_transform_can_apply(&t_relabel, g, &ok, NULL, &reason));
  assert_string_equal(reason, "the tasklet is labelled 'forbidden'");
  g_clear_pointer(&reason, g_free);

  /* Required parameters without values. */
  WeirSite whole = {0};
  assert_false(weir_transform_can_apply(&t_params, g, &whole, NULL, &reason));
  assert_contains(reason, "parameter 'count' is required");
  g_clear_pointer(&reason, g_free);
  /* Parameters of another transformation. */
  const char *a[] = {"count=1", NULL};
  g_autoptr(WeirParams) p = weir_params_parse(&t_params, a, NULL);
  assert_false(weir_transform_can_apply(&t_pass, g, &whole, p, &reason));
  assert_contains(reason, "parsed for transformation 'test-params'");
  g_clear_pointer(&reason, g_free);
  assert_true(weir_transform_can_apply(&t_params, g, &whole, p, NULL));
}

/* ---------------------------------------------------------------- apply */

static void test_apply_success(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "N", 1000);
  WeirState *s = weir_graph_state(g, 4);
  WeirNode *untouched = weir_state_node(s, 5);
  WeirSite site = {.state = 4, .n_nodes = 2, .nodes = {7, 8}};
  WeirApplyReport r;
  g_autoptr(GError) error = NULL;
  if (!weir_transform_apply(g, &t_relabel, &site, NULL, b, &r, &error))
    fail_msg("%s", error->message);
  assert_string_equal(weir_state_node(s, 8)->label, "relabelled");
  /* Elements not touched keep their addresses. */
  assert_ptr_equal(weir_graph_state(g, 4), s);
  assert_ptr_equal(weir_state_node(s, 5), untouched);
  assert_true(r.bytes_before.known && r.bytes_after.known);
  assert_int_equal(r.bytes_before.value, 12000);
  assert_int_equal(r.bytes_after.value, 12000);
  assert_true(r.flops_before.known);
  assert_int_equal(r.flops_after.value, 1000);
  assert_true(r.seconds >= 0);
  g_autofree char *e = weir_expr_to_string(r.bytes_before.expr);
  assert_string_equal(e, "12*N");
  weir_apply_report_clear(&r);
  assert_null(r.bytes_before.expr);

  /* Without bindings the figures stay symbolic; report may be NULL. */
  WeirApplyReport r2;
  assert_true(
      weir_transform_apply(g, &t_relabel, &site, NULL, NULL, &r2, NULL));
  assert_false(r2.bytes_after.known);
  assert_non_null(r2.bytes_after.expr);
  weir_apply_report_clear(&r2);
  assert_true(
      weir_transform_apply(g, &t_relabel, &site, NULL, NULL, NULL, NULL));
}

static void test_apply_refused(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autofree char *before = weir_graph_to_json(g);
  WeirSite bad = {.state = 4, .n_nodes = 2, .nodes = {5, 8}};
  g_autoptr(GError) error = NULL;
  assert_false(
      weir_transform_apply(g, &t_relabel, &bad, NULL, NULL, NULL, &error));
  assert_contains(error->message, "transformation 'test-relabel' cannot be "
                                  "applied at state 4: nodes 5, 8");
  assert_contains(error->message, "must be a map_entry node");
  g_autofree char *after = weir_graph_to_json(g);
  assert_string_equal(before, after);
  g_clear_error(&error);
  /* Missing required parameter. */
  WeirSite whole = {0};
  assert_false(
      weir_transform_apply(g, &t_params, &whole, NULL, NULL, NULL, &error));
  assert_contains(error->message, "parameter 'count' is required");
}

static void test_apply_failure_restores(void **state) {
  (void)state;
  const char *samples[] = {"vector_add.json", "matmul.json", "softmax.json",
                           "loop.json"};
  for (guint i = 0; i < G_N_ELEMENTS(samples); i++) {
    g_autoptr(WeirGraph) g = load_sample(samples[i]);
    g_autofree char *before = weir_graph_to_json(g);
    guint next_id = g->next_id;
    g_autoptr(GArray) sites = weir_transform_sites(&t_failing, g);
    assert_true(sites->len > 0);
    for (guint k = 0; k < sites->len; k++) {
      WeirApplyReport r;
      g_autoptr(GError) error = NULL;
      WeirGraph *addr = g;
      assert_false(weir_transform_apply(g, &t_failing,
                                        &g_array_index(sites, WeirSite, k),
                                        NULL, NULL, &r, &error));
      assert_ptr_equal(g, addr);
      assert_int_equal(error->code, WEIR_ERROR_UNSUPPORTED);
      assert_contains(error->message, "transformation 'test-failing' failed "
                                      "at state");
      assert_contains(error->message, "the program is unchanged");
      assert_contains(error->message, "the test transformation gives up");
      g_autofree char *after = weir_graph_to_json(g);
      assert_string_equal(before, after);
      assert_int_equal(g->next_id, next_id);
      assert_null(weir_graph_container(g, "junk"));
      assert_null(r.bytes_before.expr);
      weir_apply_report_clear(&r);
    }
    /* Still valid and usable. */
    assert_true(weir_graph_validate(g, NULL));
  }
}

static void test_validation_failure_restores(void **state) {
  (void)state;
  const char *samples[] = {"vector_add.json", "matmul.json", "softmax.json"};
  for (guint i = 0; i < G_N_ELEMENTS(samples); i++) {
    g_autoptr(WeirGraph) g = load_sample(samples[i]);
    g_autofree char *before = weir_graph_to_json(g);
    g_autoptr(GArray) sites = weir_transform_sites(&t_breaking, g);
    for (guint k = 0; k < sites->len; k++) {
      g_autoptr(GError) error = NULL;
      assert_false(weir_transform_apply(g, &t_breaking,
                                        &g_array_index(sites, WeirSite, k),
                                        NULL, NULL, NULL, &error));
      assert_int_equal(error->code, WEIR_ERROR_INVALID);
      assert_contains(error->message, "transformation 'test-breaking' at "
                                      "state");
      assert_contains(error->message, "produced an invalid program (the "
                                      "program is unchanged)");
      assert_contains(error->message, "tasklet");
      g_autofree char *after = weir_graph_to_json(g);
      assert_string_equal(before, after);
    }
  }
}

static void test_invalid_before(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  /* Break the program outside the transformation's reach. */
  WeirState *s = weir_graph_state(g, 4);
  WeirMemlet *m = weir_state_memlet(s, 13);
  weir_subset_free(m->subset);
  m->subset = weir_subset_parse("i + 1", NULL);
  g_autofree char *before = weir_graph_to_json(g);
  WeirSite site = {.state = 4, .n_nodes = 2, .nodes = {7, 8}};
  g_autoptr(GError) error = NULL;
  assert_false(
      weir_transform_apply(g, &t_relabel, &site, NULL, NULL, NULL, &error));
  assert_contains(error->message, "the program was invalid before the "
                                  "transformation");
  assert_contains(error->message, "out of bounds");
  g_autofree char *after = weir_graph_to_json(g);
  assert_string_equal(before, after);
}

/* A recipe step on a bare program applies without a snapshot per
 * application and validates once at its end (core/recipe.c); when the
 * end is invalid, the step runs again checked: the error names the
 * application that broke the program, and the program is as before the
 * step (non-optional: the whole recipe fails and nothing changes;
 * optional: the step leaves no trace and the next one runs). */
static void test_recipe_step_validation(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("softmax.json");
  g_autofree char *before = weir_graph_to_json(g);
  const char *const texts[] = {
      "{\"format\": \"weir-recipe\", \"version\": 1, \"steps\": "
      "[{\"transform\": \"test-breaking\"}]}",
      "{\"format\": \"weir-recipe\", \"version\": 1, \"steps\": "
      "[{\"transform\": \"test-breaking\", \"optional\": true}]}"};
  for (guint i = 0; i < G_N_ELEMENTS(texts); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirRecipe) r = weir_recipe_parse(texts[i], -1, "r.json", &error);
    assert_non_null(r);
    g_autoptr(WeirRecipeReport) rep = weir_recipe_report_new();
    gboolean ok = weir_recipe_apply(g, r, NULL, rep, &error);
    assert_int_equal(rep->steps->len, 1);
    const WeirRecipeStepReport *sr = g_ptr_array_index(rep->steps, 0);
    assert_false(sr->ok);
    assert_true(sr->validated);
    assert_contains(sr->error, "transformation 'test-breaking' at state");
    assert_contains(sr->error, "produced an invalid program");
    if (i == 0) {
      assert_false(ok);
      assert_contains(error->message, "r.json: steps[0] (test-breaking");
    } else {
      assert_true(ok);
    }
    g_autofree char *after = weir_graph_to_json(g);
    assert_string_equal(before, after);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry_rules),
      cmocka_unit_test(test_list_sorted),
      cmocka_unit_test(test_unregister),
      cmocka_unit_test(test_params_parse),
      cmocka_unit_test(test_params_errors),
      cmocka_unit_test(test_sites_and_describe),
      cmocka_unit_test(test_can_apply),
      cmocka_unit_test(test_apply_success),
      cmocka_unit_test(test_apply_refused),
      cmocka_unit_test(test_apply_failure_restores),
      cmocka_unit_test(test_validation_failure_restores),
      cmocka_unit_test(test_invalid_before),
      cmocka_unit_test(test_recipe_step_validation),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
