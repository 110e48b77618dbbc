/* testing-transforms.c — see testing-transforms.h.  Built into the tests
 * that link libweir statically, and as a plugin (with
 * -DTESTING_TRANSFORMS_PLUGIN) for the CLI tests. */
#include <string.h>

#include "testing-transforms.h"
#include "weir-expand.h"

#ifndef TESTING_TRANSFORMS_PLUGIN
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "weir-import.h"
#endif

/* Every node of a kind, by state then node id. */
static void match_kind(const WeirGraph *g, GArray *sites, WeirNodeKind kind) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != kind)
        continue;
      WeirSite site = {.state = s->id, .n_nodes = 1, .nodes = {n->id}};
      g_array_append_val(sites, site);
    }
  }
}

static WeirNode *site_node(const WeirGraph *g, const WeirSite *site) {
  const WeirState *s = weir_graph_state(g, site->state);
  return s && site->n_nodes == 1 ? weir_state_node(s, site->nodes[0]) : NULL;
}

static void match_maps(const WeirGraph *g, GArray *sites) {
  match_kind(g, sites, WEIR_NODE_MAP_ENTRY);
}

static gboolean is_map(const WeirNode *n, char **reason) {
  if (!n || n->kind != WEIR_NODE_MAP_ENTRY) {
    *reason = g_strdup("the site is not one map entry");
    return FALSE;
  }
  return TRUE;
}

/* ----------------------------------------------------------- test-schedule */

static gboolean schedule_can_apply(const WeirGraph *g, const WeirSite *site,
                                   const WeirParams *p, char **reason) {
  const WeirNode *n = site_node(g, site);
  if (!is_map(n, reason))
    return FALSE;
  const char *want = weir_params_get_string(p, "schedule");
  if (strcmp(weir_schedule_name(n->map->schedule), want) == 0) {
    *reason =
        g_strdup_printf("map '%s' already has schedule %s", n->label, want);
    return FALSE;
  }
  return TRUE;
}

static gboolean schedule_apply(WeirGraph *g, const WeirSite *site,
                               const WeirParams *p, GError **error) {
  WeirNode *n = site_node(g, site);
  WeirSchedule sch;
  if (!weir_schedule_from_name(weir_params_get_string(p, "schedule"), &sch)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "bad schedule");
    return FALSE;
  }
  n->map->schedule = sch;
  return TRUE;
}

static const WeirParamSpec schedule_params[] = {
    {.name = "schedule",
     .type = WEIR_PARAM_CHOICE,
     .default_value = "simd",
     .choices = "sequential|parallel|simd",
     .doc = "the new schedule"},
};

static const WeirTransformInfo schedule_info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "test-schedule",
    .tier = 1,
    .description = "sets the schedule of a map (test)",
    .params = schedule_params,
    .n_params = G_N_ELEMENTS(schedule_params),
    .match = match_maps,
    .can_apply = schedule_can_apply,
    .apply = schedule_apply,
};

/* --------------------------------------------------------------- test-tile */

static gboolean tile_can_apply(const WeirGraph *g, const WeirSite *site,
                               const WeirParams *p, char **reason) {
  const WeirNode *n = site_node(g, site);
  if (!is_map(n, reason))
    return FALSE;
  const GArray *t = weir_params_get_ints(p, "tile");
  if (t->len != n->map->params->len) {
    *reason = g_strdup_printf("map '%s' has %u parameters, tile gives %u "
                              "sizes",
                              n->label, n->map->params->len, t->len);
    return FALSE;
  }
  return TRUE;
}

static gboolean tile_apply(WeirGraph *g, const WeirSite *site,
                           const WeirParams *p, GError **error) {
  (void)error;
  WeirNode *n = site_node(g, site);
  const GArray *t = weir_params_get_ints(p, "tile");
  g_array_set_size(n->map->tile, 0);
  g_array_append_vals(n->map->tile, t->data, t->len);
  return TRUE;
}

static void match_parallel_maps(const WeirGraph *g, GArray *sites) {
  match_kind(g, sites, WEIR_NODE_MAP_ENTRY);
  for (guint i = sites->len; i-- > 0;) {
    const WeirNode *n = site_node(g, &g_array_index(sites, WeirSite, i));
    if (n->map->schedule == WEIR_SCHEDULE_SEQUENTIAL)
      g_array_remove_index(sites, i);
  }
}

static const WeirParamSpec tile_params[] = {
    {.name = "tile",
     .type = WEIR_PARAM_INTS,
     .default_value = "32",
     .min = 1,
     .max = 4096,
     .doc = "tile size per map parameter"},
};

static const WeirTransformInfo tile_info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "test-tile",
    .tier = 1,
    .description = "sets the tile sizes of a map (test)",
    .params = tile_params,
    .n_params = G_N_ELEMENTS(tile_params),
    .match = match_parallel_maps,
    .can_apply = tile_can_apply,
    .apply = tile_apply,
};

/* ------------------------------------------------------------- test-expand */

static void match_library(const WeirGraph *g, GArray *sites) {
  match_kind(g, sites, WEIR_NODE_LIBRARY);
}

static gboolean expand_can_apply(const WeirGraph *g, const WeirSite *site,
                                 const WeirParams *p, char **reason) {
  (void)p;
  const WeirNode *n = site_node(g, site);
  if (!n || n->kind != WEIR_NODE_LIBRARY) {
    *reason = g_strdup("the site is not one library node");
    return FALSE;
  }
  return TRUE;
}

static gboolean expand_apply(WeirGraph *g, const WeirSite *site,
                             const WeirParams *p, GError **error) {
  return weir_expand_node(g, site->nodes[0], weir_params_get_string(p, "impl"),
                          error);
}

static const WeirParamSpec expand_params[] = {
    {.name = "impl",
     .type = WEIR_PARAM_STRING,
     .default_value = "pure",
     .doc = "implementation"},
};

static const WeirTransformInfo expand_info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "test-expand",
    .tier = 1,
    .description = "expands a library node (test)",
    .params = expand_params,
    .n_params = G_N_ELEMENTS(expand_params),
    .match = match_library,
    .can_apply = expand_can_apply,
    .apply = expand_apply,
};

/* --------------------------------------------------------------- test-fail */

static void match_program(const WeirGraph *g, GArray *sites) {
  (void)g;
  WeirSite site = {0};
  g_array_append_val(sites, site);
}

static gboolean fail_apply(WeirGraph *g, const WeirSite *site,
                           const WeirParams *p, GError **error) {
  (void)site;
  (void)p;
  /* Leave the program half changed: the framework must restore it. */
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      g_free(n->label);
      n->label = g_strdup("clobbered");
    }
  }
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
              "test-fail: deliberate failure");
  return FALSE;
}

static const WeirTransformInfo fail_info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "test-fail",
    .tier = 4,
    .description = "changes the program, then fails (test)",
    .match = match_program,
    .apply = fail_apply,
};

gboolean testing_transforms_register(GError **error) {
  static gboolean done;
  if (done)
    return TRUE;
  done = weir_transform_register(&schedule_info, error) &&
         weir_transform_register(&tile_info, error) &&
         weir_transform_register(&expand_info, error) &&
         weir_transform_register(&fail_info, error);
  return done;
}

WeirGraph *testing_relu_chain(void) {
  WeirGraph *g = weir_graph_new("relu_chain");
  weir_graph_add_array(g, "x", WEIR_DTYPE_F32, "4, 8", FALSE, NULL);
  weir_graph_add_array(g, "t", WEIR_DTYPE_F32, "4, 8", TRUE, NULL);
  weir_graph_add_array(g, "y", WEIR_DTYPE_F32, "4, 8", FALSE, NULL);
  WeirState *s = weir_graph_add_state(g, "main");
  const char *ins[] = {"in0", NULL}, *outs[] = {"out0", NULL};
  WeirNode *x = weir_state_add_access(g, s, "x");
  WeirNode *r1 = weir_state_add_library(g, s, "relu1", "Relu", ins, outs);
  WeirNode *t = weir_state_add_access(g, s, "t");
  WeirNode *r2 = weir_state_add_library(g, s, "relu2", "Relu", ins, outs);
  WeirNode *y = weir_state_add_access(g, s, "y");
  weir_state_add_memlet(g, s, x->id, NULL, r1->id, "in0", "x", "0:4, 0:8",
                        NULL);
  weir_state_add_memlet(g, s, r1->id, "out0", t->id, NULL, "t", "0:4, 0:8",
                        NULL);
  weir_state_add_memlet(g, s, t->id, NULL, r2->id, "in0", "t", "0:4, 0:8",
                        NULL);
  weir_state_add_memlet(g, s, r2->id, "out0", y->id, NULL, "y", "0:4, 0:8",
                        NULL);
  return g;
}

#ifndef TESTING_TRANSFORMS_PLUGIN
const char *const testing_models[4] = {"mlp", "lenet", "resnet", "transformer"};

WeirGraph *testing_import_model(const char *name) {
  g_autofree char *file = g_strdup_printf("%s.onnx", name);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", file, NULL);
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_onnx_import(path, NULL, &error);
  if (!g)
    fail_msg("%s", error->message);
  return g;
}
#else
gboolean weir_plugin_register(guint host_api_version, GError **error);

gboolean weir_plugin_register(guint host_api_version, GError **error) {
  (void)host_api_version;
  return testing_transforms_register(error);
}
#endif
