/* tier1-check.c — see tier1-check.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "tier1-check.h"
#include "weir-expand.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-tensor.h"
#include "weir-validate.h"

void t1_program_free(T1Program *p) {
  g_free(p->name);
  weir_graph_free(p->g);
  g_hash_table_unref(p->bindings);
  g_free(p);
}

WeirGraph *t1_load_sample(const char *file) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", file, NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_load(path, &err);
  if (!g)
    fail_msg("%s: %s", path, err->message);
  return g;
}

GHashTable *t1_bindings(const char *first, ...) {
  GHashTable *b = weir_bindings_new();
  va_list ap;
  va_start(ap, first);
  for (const char *name = first; name; name = va_arg(ap, const char *))
    weir_bindings_set(b, name, va_arg(ap, gint64));
  va_end(ap);
  return b;
}

static void add_program(GPtrArray *out, const char *name, WeirGraph *g,
                        GHashTable *bindings) {
  T1Program *p = g_new0(T1Program, 1);
  p->name = g_strdup(name);
  p->g = g;
  p->bindings = bindings;
  g_ptr_array_add(out, p);
}

/* A sample model, imported with its batch size bound and every library
 * node expanded. */
static WeirGraph *load_model(const char *name, const char *batch) {
  g_autofree char *file = g_strdup_printf("%s.onnx", name);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", file, NULL);
  g_autoptr(GHashTable) symbols = weir_bindings_new();
  if (batch)
    weir_bindings_set(symbols, batch, 2);
  WeirOnnxImportOptions opts = {.symbols = symbols};
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_onnx_import(path, &opts, &err);
  if (!g)
    fail_msg("%s: %s", path, err->message);
  if (!weir_expand_all(g, NULL, NULL, &err))
    fail_msg("%s: %s", path, err->message);
  return g_steal_pointer(&g);
}

GPtrArray *t1_programs(gboolean with_models) {
  GPtrArray *out =
      g_ptr_array_new_with_free_func((GDestroyNotify)t1_program_free);
  add_program(out, "vector_add", t1_load_sample("vector_add.json"),
              t1_bindings("N", (gint64)37, NULL));
  add_program(out, "matmul", t1_load_sample("matmul.json"),
              t1_bindings(NULL, NULL));
  add_program(out, "softmax", t1_load_sample("softmax.json"),
              t1_bindings(NULL, NULL));
  add_program(out, "loop", t1_load_sample("loop.json"),
              t1_bindings("T", (gint64)3, NULL));
  if (!with_models)
    return out;
  static const char *const models[][2] = {{"mlp", "batch"},
                                          {"lenet", NULL},
                                          {"resnet", NULL},
                                          {"transformer", NULL}};
  for (guint i = 0; i < G_N_ELEMENTS(models); i++) {
    T1Program *p = g_new0(T1Program, 1);
    p->name = g_strdup(models[i][0]);
    p->g = load_model(models[i][0], models[i][1]);
    p->bindings = weir_bindings_new();
    p->model = TRUE;
    g_ptr_array_add(out, p);
  }
  return out;
}

static WeirTensor *tensor_for(const WeirContainer *c, GHashTable *bindings) {
  gint64 shape[16];
  g_assert(c->shape->len <= G_N_ELEMENTS(shape));
  for (guint d = 0; d < c->shape->len; d++) {
    g_autoptr(GError) err = NULL;
    if (!weir_expr_eval(g_ptr_array_index(c->shape, d), bindings, &shape[d],
                        &err))
      fail_msg("shape of '%s': %s", c->name, err->message);
  }
  return weir_tensor_new(c->dtype, c->shape->len, shape);
}

GHashTable *t1_run_inputs(const WeirGraph *g, GHashTable *bindings,
                          guint64 seed) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    WeirTensor *t = tensor_for(c, bindings);
    weir_tensor_fill_random(t, seed + c->id);
    g_hash_table_insert(args, g_strdup(c->name), t);
  }
  return args;
}

static gboolean has_library_nodes(const WeirGraph *g) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++)
      if (((WeirNode *)g_ptr_array_index(s->nodes, k))->kind ==
          WEIR_NODE_LIBRARY)
        return TRUE;
  }
  return FALSE;
}

GHashTable *t1_run(WeirGraph *g, GHashTable *bindings, guint64 seed) {
  if (has_library_nodes(g)) {
    /* the interpreter runs expanded programs */
    g_autoptr(GError) err = NULL;
    g_autoptr(WeirGraph) expanded = weir_graph_copy(g);
    if (!weir_expand_all(expanded, NULL, NULL, &err))
      fail_msg("expand '%s': %s", g->name, err->message);
    return t1_run(expanded, bindings, seed);
  }
  GHashTable *args = t1_run_inputs(g, bindings, seed);
  g_autoptr(GError) err = NULL;
  if (!weir_interpret(g, bindings, args, NULL, &err))
    fail_msg("interpret '%s': %s", g->name, err->message);
  return args;
}

/* Compares the argument containers of `before` in want (outputs of the
 * untransformed program) with a run of `after`. */
static void compare_outputs(const WeirGraph *before, GHashTable *want,
                            WeirGraph *after, GHashTable *bindings,
                            double rtol) {
  g_autoptr(GHashTable) got = t1_run(after, bindings, 1234);
  for (guint i = 0; i < before->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(before->containers, i);
    if (c->transient)
      continue;
    const WeirTensor *w = g_hash_table_lookup(want, c->name);
    const WeirTensor *t = g_hash_table_lookup(got, c->name);
    if (!t)
      fail_msg("'%s' is no longer an argument after the transformation",
               c->name);
    double tol = weir_dtype_is_float(c->dtype) ? rtol : 0.0;
    g_autoptr(GError) err = NULL;
    if (!weir_tensor_allclose(t, w, tol, tol, NULL, &err))
      fail_msg("program '%s', container '%s': %s", before->name, c->name,
               err->message);
  }
}

void t1_assert_same_outputs(WeirGraph *before, WeirGraph *after,
                            GHashTable *bindings, double rtol) {
  g_autoptr(GHashTable) want = t1_run(before, bindings, 1234);
  compare_outputs(before, want, after, bindings, rtol);
}

/* Outputs of the untransformed sample models, computed once per test
 * program (name -> outputs). */
static GHashTable *model_outputs(T1Program *p) {
  static GHashTable *cache;
  if (!cache)
    cache = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                  (GDestroyNotify)g_hash_table_unref);
  GHashTable *want = g_hash_table_lookup(cache, p->name);
  if (!want) {
    want = t1_run(p->g, p->bindings, 1234);
    g_hash_table_insert(cache, g_strdup(p->name), want);
  }
  return want;
}

const WeirTransformInfo *t1_transform(const char *name) {
  weir_transforms_init();
  const WeirTransformInfo *t = weir_transform_lookup(name);
  if (!t)
    fail_msg("transformation '%s' is not registered", name);
  return t;
}

GArray *t1_sites(const WeirGraph *g, const char *name) {
  return weir_transform_sites(t1_transform(name), g);
}

static WeirParams *params_for(const WeirTransformInfo *t,
                              const char *const *params) {
  g_autoptr(GError) err = NULL;
  WeirParams *p = weir_params_parse(t, params, &err);
  if (!p)
    fail_msg("parameters of '%s': %s", t->name, err->message);
  return p;
}

char *t1_reason(const WeirGraph *g, const char *name, const WeirSite *site,
                const char *const *params) {
  const WeirTransformInfo *t = t1_transform(name);
  g_autoptr(WeirParams) p = params_for(t, params);
  char *reason = NULL;
  if (weir_transform_can_apply(t, g, site, p, &reason)) {
    g_free(reason);
    return NULL;
  }
  if (!reason)
    fail_msg("'%s' refused a site without a reason", name);
  return reason;
}

void t1_apply(WeirGraph *g, const char *name, const WeirSite *site,
              const char *const *params) {
  const WeirTransformInfo *t = t1_transform(name);
  g_autoptr(WeirParams) p = params_for(t, params);
  g_autoptr(GError) err = NULL;
  if (!weir_transform_apply(g, t, site, p, NULL, NULL, &err)) {
    g_autofree char *d = weir_site_describe(g, site);
    fail_msg("apply '%s' at %s: %s", name, d, err->message);
  }
  if (!weir_graph_validate(g, &err))
    fail_msg("after '%s': %s", name, err->message);
  /* The result survives a JSON round trip. */
  g_autofree char *json = weir_graph_to_json(g);
  g_autoptr(WeirGraph) back = weir_graph_from_json(json, -1, "result", &err);
  if (!back)
    fail_msg("after '%s', reloading the JSON: %s", name, err->message);
}

guint t1_apply_everywhere(const char *name, const char *const *params,
                          double rtol, gboolean with_models) {
  return t1_apply_everywhere_full(name, params, rtol, with_models, NULL, NULL);
}

guint t1_apply_everywhere_full(const char *name, const char *const *params,
                               double rtol, gboolean with_models,
                               void (*prepare)(WeirGraph *g), guint *refused) {
  g_autoptr(GPtrArray) programs = t1_programs(with_models);
  guint applied = 0;
  if (refused)
    *refused = 0;
  for (guint i = 0; i < programs->len; i++) {
    T1Program *p = g_ptr_array_index(programs, i);
    if (prepare)
      prepare(p->g);
    g_autoptr(GArray) sites = t1_sites(p->g, name);
    /* Models are large: every legal site is applied to one copy (each
     * site still legal when its turn comes), which is run once. */
    g_autoptr(WeirGraph) all = p->model ? weir_graph_copy(p->g) : NULL;
    guint here = 0;
    for (guint k = 0; k < sites->len; k++) {
      const WeirSite *site = &g_array_index(sites, WeirSite, k);
      g_autofree char *reason = t1_reason(all ? all : p->g, name, site, params);
      if (reason) {
        if (refused)
          (*refused)++;
        if (g_getenv("T1_VERBOSE"))
          print_message("%s: '%s': %s\n", name, p->name, reason);
        continue;
      }
      here++;
      if (all) {
        t1_apply(all, name, site, params);
        continue;
      }
      g_autoptr(WeirGraph) copy = weir_graph_copy(p->g);
      t1_apply(copy, name, site, params);
      t1_assert_same_outputs(p->g, copy, p->bindings, rtol);
    }
    if (all && here) {
      if (prepare)
        t1_assert_same_outputs(p->g, all, p->bindings, rtol);
      else
        compare_outputs(p->g, model_outputs(p), all, p->bindings, rtol);
    }
    applied += here;
    if (g_getenv("T1_VERBOSE"))
      print_message("%s: %u of %u sites applied in '%s'\n", name, here,
                    sites->len, p->name);
  }
  return applied;
}

gint64 t1_total_bytes(const WeirGraph *g, GHashTable *bindings) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, bindings, &err);
  if (!a)
    fail_msg("analysis: %s", err->message);
  if (!a->total_bytes.known)
    fail_msg("total bytes of '%s' are not known", g->name);
  return a->total_bytes.value;
}

static WeirNode *find_node(const WeirGraph *g, WeirNodeKind kind,
                           const char *label, WeirState **state) {
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == kind && g_strcmp0(n->label, label) == 0) {
        if (state)
          *state = s;
        return n;
      }
    }
  }
  return NULL;
}

WeirNode *t1_map_by_label(const WeirGraph *g, const char *label,
                          WeirState **state) {
  return find_node(g, WEIR_NODE_MAP_ENTRY, label, state);
}

WeirNode *t1_tasklet_by_label(const WeirGraph *g, const char *label,
                              WeirState **state) {
  return find_node(g, WEIR_NODE_TASKLET, label, state);
}

WeirSite t1_site(guint state, guint n, ...) {
  WeirSite site = {0};
  site.state = state;
  site.n_nodes = n;
  va_list ap;
  va_start(ap, n);
  for (guint i = 0; i < n; i++)
    site.nodes[i] = va_arg(ap, guint);
  va_end(ap);
  return site;
}

gboolean t1_sites_have(const GArray *sites, guint node) {
  for (guint i = 0; i < sites->len; i++)
    if (g_array_index(sites, WeirSite, i).nodes[0] == node)
      return TRUE;
  return FALSE;
}

static char *full_subset(const WeirContainer *c) {
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  return weir_subset_to_string(full);
}

WeirGraph *t1_map_program(const char *decls, const char *symbols,
                          const char *params, const char *ranges,
                          WeirSchedule schedule, const T1Port *ins, guint n_in,
                          const T1Port *outs, guint n_out, const char *code,
                          guint *state, guint *entry) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new("test");
  g_auto(GStrv) syms = g_strsplit(symbols, ",", -1);
  for (guint i = 0; syms[i]; i++)
    if (*g_strstrip(syms[i]))
      weir_graph_add_symbol(g, syms[i]);
  g_auto(GStrv) ds = g_strsplit(decls, ";", -1);
  for (guint i = 0; ds[i]; i++) {
    g_auto(GStrv) parts = g_strsplit(ds[i], ":", 3);
    assert_int_equal(g_strv_length(parts), 3);
    WeirDType dt;
    if (!weir_dtype_from_name(parts[1], &dt))
      fail_msg("dtype '%s'", parts[1]);
    if (!weir_graph_add_array(g, g_strstrip(parts[0]), dt, parts[2], FALSE,
                              &err))
      fail_msg("container '%s': %s", parts[0], err->message);
  }
  WeirState *s = weir_graph_add_state(g, "main");
  g_auto(GStrv) ps = g_strsplit(params, ",", -1);
  g_auto(GStrv) rs = g_strsplit(ranges, ";", -1);
  WeirNode *exit = NULL;
  WeirNode *e =
      weir_state_add_map(g, s, "m", (const char *const *)ps,
                         (const char *const *)rs, schedule, &exit, &err);
  if (!e)
    fail_msg("map: %s", err->message);
  g_autoptr(WeirExpr) iters = weir_expr_const(1);
  for (guint i = 0; i < e->map->ranges->len; i++) {
    g_autoptr(WeirExpr) size =
        weir_range_size(&g_array_index(e->map->ranges, WeirRange, i));
    WeirExpr *next = weir_expr_mul(iters, size);
    weir_expr_unref(iters);
    iters = next;
  }
  g_autoptr(GPtrArray) in_names = g_ptr_array_new();
  g_autoptr(GPtrArray) out_names = g_ptr_array_new();
  for (guint i = 0; i < n_in; i++)
    g_ptr_array_add(in_names, (gpointer)ins[i].conn);
  for (guint i = 0; i < n_out; i++)
    g_ptr_array_add(out_names, (gpointer)outs[i].conn);
  g_ptr_array_add(in_names, NULL);
  g_ptr_array_add(out_names, NULL);
  WeirNode *t =
      weir_state_add_tasklet(g, s, "body", (const char *const *)in_names->pdata,
                             (const char *const *)out_names->pdata, code);
  for (guint i = 0; i < n_in; i++) {
    WeirContainer *c = weir_graph_container(g, ins[i].data);
    g_autofree char *full = full_subset(c);
    g_autofree char *in_conn = g_strdup_printf("IN_%s", c->name);
    g_autofree char *out_conn = g_strdup_printf("OUT_%s", c->name);
    WeirMemlet *inner =
        weir_state_add_memlet(g, s, e->id, out_conn, t->id, ins[i].conn,
                              c->name, ins[i].subset, &err);
    if (!inner)
      fail_msg("memlet: %s", err->message);
    g_autoptr(WeirExpr) vol = weir_expr_mul(inner->volume, iters);
    if (!weir_node_has_in_conn(e, in_conn)) {
      WeirNode *a = weir_state_add_access(g, s, c->name);
      weir_node_add_in_conn(e, in_conn);
      weir_node_add_out_conn(e, out_conn);
      WeirMemlet *outer = weir_state_add_memlet(g, s, a->id, NULL, e->id,
                                                in_conn, c->name, full, &err);
      weir_memlet_set_volume(outer, vol);
    } else {
      for (guint k = 0; k < s->edges->len; k++) {
        WeirMemlet *m = g_ptr_array_index(s->edges, k);
        if (m->dst == e->id && g_strcmp0(m->dst_conn, in_conn) == 0) {
          g_autoptr(WeirExpr) sum = weir_expr_add(m->volume, vol);
          weir_memlet_set_volume(m, sum);
        }
      }
    }
  }
  if (n_in == 0)
    assert_non_null(weir_state_add_memlet(g, s, e->id, NULL, t->id, NULL, NULL,
                                          NULL, &err));
  for (guint i = 0; i < n_out; i++) {
    WeirContainer *c = weir_graph_container(g, outs[i].data);
    g_autofree char *full = full_subset(c);
    g_autofree char *in_conn = g_strdup_printf("IN_%s", c->name);
    g_autofree char *out_conn = g_strdup_printf("OUT_%s", c->name);
    WeirMemlet *inner =
        weir_state_add_memlet(g, s, t->id, outs[i].conn, exit->id, in_conn,
                              c->name, outs[i].subset, &err);
    if (!inner)
      fail_msg("memlet: %s", err->message);
    inner->wcr = outs[i].wcr;
    if (!weir_node_has_out_conn(exit, out_conn)) {
      WeirNode *a = weir_state_add_access(g, s, c->name);
      weir_node_add_in_conn(exit, in_conn);
      weir_node_add_out_conn(exit, out_conn);
      WeirMemlet *outer = weir_state_add_memlet(g, s, exit->id, out_conn, a->id,
                                                NULL, c->name, full, &err);
      g_autoptr(WeirExpr) vol = weir_expr_mul(inner->volume, iters);
      weir_memlet_set_volume(outer, vol);
      outer->wcr = outs[i].wcr;
    }
  }
  if (!weir_graph_validate(g, &err))
    fail_msg("test program: %s", err->message);
  *state = s->id;
  *entry = e->id;
  return g;
}
