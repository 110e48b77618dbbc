/* tier2-check.c — shared test helpers of the tier-2 transformations (see
 * tier2-check.h). */
#include "tier2-check.h"

#include "weir-expand.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-ops.h"
#include "weir-tensor-io.h"
#include "weir-tensor.h"
#include "weir-validate.h"

/* ------------------------------------------------------------ building */

WeirGraph *t2_graph(const char *name, WeirState **s) {
  WeirGraph *g = weir_graph_new(name);
  *s = weir_graph_add_state(g, "main");
  return g;
}

WeirContainer *t2_array(WeirGraph *g, const char *name, WeirDType dtype,
                        const char *shape, gboolean transient) {
  g_autoptr(GError) err = NULL;
  WeirContainer *c =
      weir_graph_add_array(g, name, dtype, shape, transient, &err);
  if (!c)
    fail_msg("container %s: %s", name, err->message);
  return c;
}

static WeirTensor *container_tensor(const WeirContainer *c) {
  guint rank = c->shape->len;
  g_autofree gint64 *shape = g_new0(gint64, rank + 1);
  for (guint d = 0; d < rank; d++)
    if (!weir_expr_is_const(g_ptr_array_index(c->shape, d), &shape[d]))
      fail_msg("container %s: symbolic shape", c->name);
  return weir_tensor_new(c->dtype, rank, shape);
}

static void set_data(WeirContainer *c, const WeirTensor *t) {
  g_autoptr(GBytes) b = g_bytes_new(t->data, weir_tensor_nbytes(t));
  weir_container_set_initial(c, b);
}

WeirContainer *t2_const(WeirGraph *g, const char *name, WeirDType dtype,
                        const char *shape, const double *values) {
  WeirContainer *c = t2_array(g, name, dtype, shape, TRUE);
  g_autoptr(WeirTensor) t = container_tensor(c);
  for (gint64 i = 0; i < t->count; i++)
    weir_tensor_set(t, i, values[i]);
  set_data(c, t);
  return c;
}

WeirContainer *t2_const_fill(WeirGraph *g, const char *name, WeirDType dtype,
                             const char *shape, double value) {
  WeirContainer *c = t2_array(g, name, dtype, shape, TRUE);
  g_autoptr(WeirTensor) t = container_tensor(c);
  for (gint64 i = 0; i < t->count; i++)
    weir_tensor_set(t, i, value);
  set_data(c, t);
  return c;
}

WeirContainer *t2_const_random(WeirGraph *g, const char *name, WeirDType dtype,
                               const char *shape, guint64 seed) {
  WeirContainer *c = t2_array(g, name, dtype, shape, TRUE);
  g_autoptr(WeirTensor) t = container_tensor(c);
  weir_tensor_fill_random(t, seed);
  set_data(c, t);
  return c;
}

WeirNode *t2_access(WeirGraph *g, WeirState *s, const char *name) {
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, name) == 0)
      return n;
  }
  if (!weir_graph_container(g, name))
    fail_msg("no container '%s'", name);
  return weir_state_add_access(g, s, name);
}

static char *full_subset(WeirGraph *g, const char *name) {
  WeirContainer *c = weir_graph_container(g, name);
  if (!c)
    fail_msg("no container '%s'", name);
  g_autoptr(WeirSubset) sub = weir_container_full_subset(c);
  return weir_subset_to_string(sub);
}

WeirNode *t2_op(WeirGraph *g, WeirState *s, const char *op, const char *label,
                const char *const *ins, const char *const *outs) {
  g_autoptr(GPtrArray) in_conns = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) out_conns = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; ins && ins[k]; k++)
    if (*ins[k])
      g_ptr_array_add(in_conns, g_strdup_printf("in%u", k));
  for (guint k = 0; outs && outs[k]; k++)
    g_ptr_array_add(out_conns, g_strdup_printf("out%u", k));
  g_ptr_array_add(in_conns, NULL);
  g_ptr_array_add(out_conns, NULL);
  WeirNode *n = weir_state_add_library(g, s, label, op,
                                       (const char *const *)in_conns->pdata,
                                       (const char *const *)out_conns->pdata);
  g_autoptr(GError) err = NULL;
  for (guint k = 0; ins && ins[k]; k++) {
    if (!*ins[k])
      continue;
    WeirNode *a = t2_access(g, s, ins[k]);
    g_autofree char *conn = g_strdup_printf("in%u", k);
    g_autofree char *sub = full_subset(g, ins[k]);
    if (!weir_state_add_memlet(g, s, a->id, NULL, n->id, conn, ins[k], sub,
                               &err))
      fail_msg("memlet: %s", err->message);
  }
  for (guint k = 0; outs && outs[k]; k++) {
    WeirNode *a = t2_access(g, s, outs[k]);
    g_autofree char *conn = g_strdup_printf("out%u", k);
    g_autofree char *sub = full_subset(g, outs[k]);
    if (!weir_state_add_memlet(g, s, n->id, conn, a->id, NULL, outs[k], sub,
                               &err))
      fail_msg("memlet: %s", err->message);
  }
  return n;
}

void t2_normalize(WeirGraph *g) {
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(s->nodes, i);
      g_autoptr(GError) err = NULL;
      if (n->kind == WEIR_NODE_LIBRARY && !weir_op_check_attrs(n, &err))
        fail_msg("%s", err->message);
    }
  }
}

WeirGraph *t2_load_sample(const char *file) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", file, NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_load(path, &err);
  if (!g)
    fail_msg("%s: %s", path, err->message);
  return g;
}

const T2Sample t2_samples[] = {
    {"vector_add.json", "N=16"},
    {"matmul.json", ""},
    {"softmax.json", ""},
    {"loop.json", "T=3"},
};
const guint t2_n_samples = G_N_ELEMENTS(t2_samples);

GHashTable *t2_bindings(const char *text) {
  GHashTable *b = weir_bindings_new();
  g_auto(GStrv) items = g_strsplit(text, ",", -1);
  for (guint i = 0; items[i]; i++) {
    if (!*items[i])
      continue;
    g_auto(GStrv) kv = g_strsplit(items[i], "=", 2);
    weir_bindings_set(b, kv[0], g_ascii_strtoll(kv[1], NULL, 10));
  }
  return b;
}

/* ---------------------------------------------------- transformations */

const WeirTransformInfo *t2_lookup(const char *name) {
  weir_transforms_init();
  const WeirTransformInfo *t = weir_transform_lookup(name);
  if (!t)
    fail_msg("transformation '%s' is not registered", name);
  return t;
}

GArray *t2_sites(const WeirTransformInfo *t, const WeirGraph *g) {
  return weir_transform_sites(t, g);
}

guint t2_n_sites(const WeirTransformInfo *t, const WeirGraph *g) {
  g_autoptr(GArray) sites = t2_sites(t, g);
  return sites->len;
}

WeirSite t2_site(const WeirState *s, guint n, const guint *nodes) {
  WeirSite site = {.state = s->id, .n_nodes = n};
  for (guint i = 0; i < n; i++)
    site.nodes[i] = nodes[i];
  return site;
}

static WeirParams *params(const WeirTransformInfo *t,
                          const char *const *assignments) {
  g_autoptr(GError) err = NULL;
  WeirParams *p = weir_params_parse(t, assignments, &err);
  if (!p)
    fail_msg("parameters of %s: %s", t->name, err->message);
  return p;
}

char *t2_reason(const WeirTransformInfo *t, const WeirGraph *g,
                const WeirSite *site, const char *const *assignments) {
  g_autoptr(WeirParams) p = params(t, assignments);
  char *reason = NULL;
  if (weir_transform_can_apply(t, g, site, p, &reason)) {
    g_autofree char *where = weir_site_describe(g, site);
    fail_msg("%s: expected %s to be illegal", t->name, where);
  }
  if (!reason)
    fail_msg("%s: can_apply gave no reason", t->name);
  return reason;
}

void t2_apply(WeirGraph *g, const WeirTransformInfo *t, const WeirSite *site,
              const char *const *assignments, GHashTable *bindings,
              WeirApplyReport *report) {
  g_autoptr(WeirParams) p = params(t, assignments);
  g_autoptr(GError) err = NULL;
  if (!weir_transform_apply(g, t, site, p, bindings, report, &err))
    fail_msg("%s", err->message);
}

static gboolean first_legal(const WeirTransformInfo *t, const WeirGraph *g,
                            WeirSite *out) {
  g_autoptr(GArray) sites = t2_sites(t, g);
  g_autoptr(WeirParams) p = params(t, NULL);
  for (guint i = 0; i < sites->len; i++) {
    WeirSite *site = &g_array_index(sites, WeirSite, i);
    g_autofree char *reason = NULL;
    if (weir_transform_can_apply(t, g, site, p, &reason)) {
      *out = *site;
      return TRUE;
    }
  }
  return FALSE;
}

guint t2_apply_all(WeirGraph *g, const WeirTransformInfo *t,
                   GHashTable *bindings) {
  guint done = 0;
  WeirSite site;
  while (first_legal(t, g, &site)) {
    if (done > 10000)
      fail_msg("%s does not reach a fixpoint", t->name);
    t2_apply(g, t, &site, NULL, bindings, NULL);
    done++;
  }
  return done;
}

guint t2_count_legal(const WeirTransformInfo *t, const WeirGraph *g) {
  g_autoptr(GArray) sites = t2_sites(t, g);
  g_autoptr(WeirParams) p = params(t, NULL);
  guint n = 0;
  for (guint i = 0; i < sites->len; i++) {
    g_autofree char *reason = NULL;
    if (weir_transform_can_apply(t, g, &g_array_index(sites, WeirSite, i), p,
                                 &reason))
      n++;
  }
  return n;
}

/* ------------------------------------------------------------ checking */

static gint cmp_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

GHashTable *t2_run(const WeirGraph *g, GHashTable *bindings, guint64 seed) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  if (!weir_expand_all(copy, NULL, NULL, &err))
    fail_msg("expanding '%s': %s", g->name, err->message);
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  for (guint i = 0; i < copy->containers->len; i++) {
    WeirContainer *c = g_ptr_array_index(copy->containers, i);
    if (!c->transient)
      g_ptr_array_add(names, c->name);
  }
  g_ptr_array_sort(names, cmp_names); /* seeds by name, not by id */
  for (guint i = 0; i < names->len; i++) {
    WeirContainer *c = weir_graph_container(copy, g_ptr_array_index(names, i));
    guint rank = c->shape->len;
    g_autofree gint64 *shape = g_new0(gint64, rank + 1);
    for (guint d = 0; d < rank; d++)
      if (!weir_expr_eval(g_ptr_array_index(c->shape, d), bindings, &shape[d],
                          &err))
        fail_msg("shape of %s: %s", c->name, err->message);
    WeirTensor *t = weir_tensor_new(c->dtype, rank, shape);
    weir_tensor_fill_random(t, seed * 1000 + i);
    g_hash_table_insert(args, g_strdup(c->name), t);
  }
  if (!weir_interpret(copy, bindings, args, NULL, &err))
    fail_msg("interpreting '%s': %s", g->name, err->message);
  return args;
}

/* Compares the arguments of two runs (see t2_assert_same). */
static void assert_same_args(GHashTable *a, GHashTable *b, double rtol) {
  g_autoptr(GList) keys = g_hash_table_get_keys(a);
  keys = g_list_sort(keys, (GCompareFunc)strcmp);
  if (g_hash_table_size(a) != g_hash_table_size(b))
    fail_msg("the programs have %u and %u arguments", g_hash_table_size(a),
             g_hash_table_size(b));
  for (GList *l = keys; l; l = l->next) {
    const WeirTensor *ta = g_hash_table_lookup(a, l->data);
    const WeirTensor *tb = g_hash_table_lookup(b, l->data);
    if (!tb)
      fail_msg("argument '%s' disappeared", (const char *)l->data);
    g_autoptr(GError) err = NULL;
    gboolean fl = weir_dtype_is_float(ta->dtype);
    if (!weir_tensor_allclose(tb, ta, fl ? rtol : 0, fl ? rtol / 10 : 0, NULL,
                              &err))
      fail_msg("argument '%s' differs: %s", (const char *)l->data,
               err->message);
  }
}

void t2_assert_same(const WeirGraph *before, const WeirGraph *after,
                    GHashTable *bindings, double rtol) {
  g_autoptr(GHashTable) a = t2_run(before, bindings, 7);
  g_autoptr(GHashTable) b = t2_run(after, bindings, 7);
  assert_same_args(a, b, rtol);
}

guint t2_check_every_site(const WeirTransformInfo *t, const WeirGraph *g,
                          GHashTable *bindings, double rtol) {
  g_autoptr(GArray) sites = t2_sites(t, g);
  g_autoptr(WeirParams) p = params(t, NULL);
  g_autoptr(GHashTable) reference = NULL;
  guint legal = 0;
  for (guint i = 0; i < sites->len; i++) {
    const WeirSite *site = &g_array_index(sites, WeirSite, i);
    g_autofree char *reason = NULL;
    if (!weir_transform_can_apply(t, g, site, p, &reason))
      continue;
    legal++;
    if (!reference)
      reference = t2_run(g, bindings, 7);
    g_autoptr(WeirGraph) copy = weir_graph_copy(g);
    t2_apply(copy, t, site, NULL, bindings, NULL);
    g_autoptr(GError) err = NULL;
    if (!weir_graph_validate(copy, &err))
      fail_msg("%s: %s", t->name, err->message);
    g_autoptr(GHashTable) after = t2_run(copy, bindings, 7);
    assert_same_args(reference, after, rtol);
  }
  if (legal) {
    g_autoptr(WeirGraph) copy = weir_graph_copy(g);
    t2_apply_all(copy, t, bindings);
    g_autoptr(GHashTable) after = t2_run(copy, bindings, 7);
    assert_same_args(reference, after, rtol);
    /* deterministic: the same program gives the same bytes */
    g_autoptr(WeirGraph) again = weir_graph_copy(g);
    t2_apply_all(again, t, bindings);
    g_autofree char *j1 = weir_graph_to_json(copy);
    g_autofree char *j2 = weir_graph_to_json(again);
    assert_string_equal(j1, j2);
  }
  return legal;
}

/* ---------------------------------------------------------------- models */

const T2Model t2_models[] = {
    {"mlp", "batch=4"},
    {"lenet", ""},
    {"resnet", ""},
    {"transformer", ""},
};
const guint t2_n_models = G_N_ELEMENTS(t2_models);

WeirGraph *t2_import_model(const char *name) {
  g_autofree char *file = g_strdup_printf("%s.onnx", name);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", file, NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_onnx_import(path, NULL, &err);
  if (!g)
    fail_msg("%s: %s", path, err->message);
  return g;
}

WeirGraph *t2_expanded_model(const char *name) {
  WeirGraph *g = t2_import_model(name);
  g_autoptr(GError) err = NULL;
  if (!weir_expand_all(g, NULL, NULL, &err))
    fail_msg("expanding %s: %s", name, err->message);
  return g;
}

static WeirTensor *model_tensor(const char *model, const char *file) {
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", model, file, NULL);
  g_autoptr(GError) err = NULL;
  WeirTensor *t = weir_tensor_read_pb(path, NULL, &err);
  if (!t)
    fail_msg("%s: %s", path, err->message);
  return t;
}

void t2_assert_reference(const WeirGraph *g, const char *model,
                         GHashTable *bindings, double tol) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  if (!weir_expand_all(copy, NULL, NULL, &err))
    fail_msg("expanding '%s': %s", g->name, err->message);
  WeirContainer *out = weir_graph_container(copy, "output");
  g_autoptr(WeirTensor) want = model_tensor(model, "output_0.pb");
  if (!out)
    fail_msg("%s: no container 'output'", model);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  g_hash_table_insert(args, g_strdup("input"),
                      model_tensor(model, "input_0.pb"));
  g_hash_table_insert(args, g_strdup("output"),
                      weir_tensor_new(want->dtype, want->rank, want->shape));
  if (!weir_interpret(copy, bindings, args, NULL, &err))
    fail_msg("interpreting '%s': %s", model, err->message);
  const WeirTensor *have = g_hash_table_lookup(args, "output");
  if (!weir_tensor_allclose(have, want, tol, tol, NULL, &err))
    fail_msg("%s: output differs from the reference: %s", model, err->message);
}

gint64 t2_bytes(const WeirGraph *g, GHashTable *bindings) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, bindings, &err);
  if (!a)
    fail_msg("analysis: %s", err->message);
  if (!a->total_bytes.known)
    fail_msg("data movement of '%s' is not known", g->name);
  return a->total_bytes.value;
}

guint t2_count_ops(const WeirGraph *g, const char *op) {
  guint n = 0;
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *node = g_ptr_array_index(s->nodes, i);
      if (node->kind == WEIR_NODE_LIBRARY &&
          (!op || g_strcmp0(node->op, op) == 0))
        n++;
    }
  }
  return n;
}
