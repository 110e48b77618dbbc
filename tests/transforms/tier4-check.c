/* tier4-check.c — shared checks of the tier-4 transformation tests (see
 * tier4-check.h). */
#include "tier4-check.h"

#include "weir-import.h"
#include "weir-runtime.h"

static const char *const sample_files[] = {"vector_add.json", "matmul.json",
                                           "softmax.json", "loop.json"};
static const char *const model_names[] = {"mlp", "lenet", "resnet",
                                          "transformer"};

static GPtrArray *programs; /* T4Program*, loaded on first use */

static GHashTable *sample_symbols(void) {
  GHashTable *b = weir_bindings_new();
  weir_bindings_set(b, "N", 37);
  weir_bindings_set(b, "T", 3);
  weir_bindings_set(b, "t", 0);
  return b;
}

static GHashTable *random_args(const WeirGraph *g, GHashTable *symbols) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    gint64 shape[16];
    assert_true(c->shape->len <= G_N_ELEMENTS(shape));
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(g_ptr_array_index(c->shape, d), symbols,
                                 &shape[d], NULL));
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    /* seeded by the name, so a renamed or renumbered program gets the same
     * inputs */
    weir_tensor_fill_random(t, 1000 + g_str_hash(c->name));
    g_hash_table_insert(args, g_strdup(c->name), t);
  }
  return args;
}

GHashTable *t4c_run(const WeirGraph *g, GHashTable *symbols) {
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  GHashTable *args = random_args(copy, symbols);
  g_autoptr(GError) error = NULL;
  if (!weir_interpret(copy, symbols, args, NULL, &error))
    fail_msg("%s: %s", g->name, error->message);
  return args;
}

static WeirGraph *load_model(const char *name, GHashTable *symbols) {
  g_autofree char *file = g_strdup_printf("%s.onnx", name);
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", file, NULL);
  WeirOnnxImportOptions opts = {.symbols = symbols};
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_onnx_import(path, &opts, &error);
  if (!g)
    fail_msg("%s: %s", path, error->message);
  if (!weir_expand_all(g, NULL, NULL, &error))
    fail_msg("%s: %s", path, error->message);
  return g;
}

static void load_programs(void) {
  if (programs)
    return;
  programs = g_ptr_array_new();
  for (guint i = 0; i < G_N_ELEMENTS(sample_files); i++) {
    T4Program *p = g_new0(T4Program, 1);
    p->name = sample_files[i];
    g_autofree char *path =
        g_build_filename(WEIR_SRCDIR, "samples", sample_files[i], NULL);
    g_autoptr(GError) error = NULL;
    p->g = weir_graph_load(path, &error);
    if (!p->g)
      fail_msg("%s", error->message);
    p->symbols = sample_symbols();
    g_ptr_array_add(programs, p);
  }
  for (guint i = 0; i < G_N_ELEMENTS(model_names); i++) {
    T4Program *p = g_new0(T4Program, 1);
    p->name = model_names[i];
    p->model = TRUE;
    p->symbols = weir_bindings_new();
    g_autoptr(GHashTable) import_symbols = weir_bindings_new();
    weir_bindings_set(import_symbols, "batch", 4);
    p->g = load_model(model_names[i], import_symbols);
    g_ptr_array_add(programs, p);
  }
  for (guint i = 0; i < programs->len; i++) {
    T4Program *p = g_ptr_array_index(programs, i);
    p->expected = t4c_run(p->g, p->symbols);
  }
}

guint t4c_n_programs(void) {
  load_programs();
  return programs->len;
}

const T4Program *t4c_program(guint i) {
  load_programs();
  return g_ptr_array_index(programs, i);
}

const T4Program *t4c_find(const char *name) {
  load_programs();
  for (guint i = 0; i < programs->len; i++) {
    const T4Program *p = g_ptr_array_index(programs, i);
    if (strcmp(p->name, name) == 0)
      return p;
  }
  fail_msg("no program '%s'", name);
  return NULL;
}

void t4c_assert_same(GHashTable *expected, GHashTable *got, double rtol,
                     const char *what) {
  g_autoptr(GList) keys = g_hash_table_get_keys(expected);
  keys = g_list_sort(keys, (GCompareFunc)strcmp);
  for (GList *k = keys; k; k = k->next) {
    const WeirTensor *a = g_hash_table_lookup(expected, k->data);
    const WeirTensor *b = g_hash_table_lookup(got, k->data);
    if (!b)
      fail_msg("%s: no output '%s'", what, (const char *)k->data);
    g_autoptr(GError) error = NULL;
    gboolean fl = weir_dtype_is_float(a->dtype);
    if (!weir_tensor_allclose(b, a, fl ? rtol : 0, fl ? rtol : 0, NULL, &error))
      fail_msg("%s: '%s': %s", what, (const char *)k->data, error->message);
  }
}

const WeirTransformInfo *t4c_transform(const char *name, guint tier) {
  weir_transforms_init();
  const WeirTransformInfo *t = weir_transform_lookup(name);
  if (!t)
    fail_msg("transformation '%s' is not registered", name);
  assert_int_equal(t->tier, tier);
  return t;
}

WeirParams *t4c_params(const WeirTransformInfo *t, const char *const *assign) {
  g_autoptr(GError) error = NULL;
  WeirParams *p = weir_params_parse(t, assign, &error);
  if (!p)
    fail_msg("%s", error->message);
  return p;
}

WeirGraph *t4c_apply_checked(const T4Program *p, const WeirTransformInfo *t,
                             const WeirSite *site, const WeirParams *params,
                             double rtol, WeirApplyReport *report) {
  WeirGraph *q = weir_graph_copy(p->g);
  g_autoptr(GError) error = NULL;
  g_autofree char *where = weir_site_describe(p->g, site);
  if (!weir_transform_apply(q, t, site, params, p->symbols, report, &error))
    fail_msg("%s on %s at %s: %s", t->name, p->name, where, error->message);
  if (!weir_graph_validate(q, &error))
    fail_msg("%s on %s at %s: %s", t->name, p->name, where, error->message);
  /* the JSON form loads back to the same program */
  g_autofree char *json = weir_graph_to_json(q);
  g_autoptr(WeirGraph) back = weir_graph_from_json(json, -1, NULL, &error);
  if (!back)
    fail_msg("%s on %s at %s: %s", t->name, p->name, where, error->message);
  g_autoptr(GHashTable) got = t4c_run(q, p->symbols);
  g_autofree char *what =
      g_strdup_printf("%s on %s at %s", t->name, p->name, where);
  t4c_assert_same(p->expected, got, rtol, what);
  return q;
}

void t4c_compiled_check(const T4Program *p, const WeirGraph *g, double rtol) {
  WeirCompileOptions opts = {.no_cache = TRUE};
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &opts, NULL, &error);
  if (!k)
    fail_msg("%s: compiling: %s", p->name, error->message);
  g_autoptr(GHashTable) args = random_args(g, p->symbols);
  if (!weir_kernel_run(k, p->symbols, args, &error))
    fail_msg("%s: running: %s", p->name, error->message);
  g_autofree char *what = g_strdup_printf("%s (compiled)", p->name);
  t4c_assert_same(p->expected, args, rtol, what);
}

gint64 t4c_bytes(const WeirGraph *g, GHashTable *symbols) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, symbols, &error);
  if (!a)
    fail_msg("%s", error->message);
  assert_true(a->total_bytes.known);
  return a->total_bytes.value;
}

gint64 t4c_peak(const WeirGraph *g, GHashTable *symbols) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, symbols, &error);
  if (!a)
    fail_msg("%s", error->message);
  assert_true(a->peak_transient_bytes.known);
  return a->peak_transient_bytes.value;
}

char *t4c_refusal(const WeirTransformInfo *t, const WeirGraph *g,
                  const WeirSite *site, const WeirParams *params) {
  char *reason = NULL;
  if (weir_transform_can_apply(t, g, site, params, &reason)) {
    g_autofree char *where = weir_site_describe(g, site);
    fail_msg("%s: site %s should be refused", t->name, where);
  }
  assert_non_null(reason);
  return reason;
}

WeirNode *t4c_access(WeirGraph *g, WeirState *s, const char *name,
                     const char *shape, gboolean transient) {
  if (!weir_graph_container(g, name)) {
    g_autoptr(GError) error = NULL;
    if (!weir_graph_add_array(g, name, WEIR_DTYPE_F32, shape, transient,
                              &error))
      fail_msg("%s", error->message);
  }
  return weir_state_add_access(g, s, name);
}

WeirMemlet *t4c_memlet(WeirGraph *g, WeirState *s, guint src, const char *sc,
                       guint dst, const char *dc, const char *data,
                       const char *subset) {
  g_autoptr(GError) error = NULL;
  g_autofree char *full = NULL;
  if (data && !subset) {
    WeirContainer *c = weir_graph_container(g, data);
    assert_non_null(c);
    g_autoptr(WeirSubset) f = weir_container_full_subset(c);
    full = weir_subset_to_string(f);
    subset = full;
  }
  WeirMemlet *m =
      weir_state_add_memlet(g, s, src, sc, dst, dc, data, subset, &error);
  if (!m)
    fail_msg("%s", error->message);
  return m;
}

WeirNode *t4c_map(WeirGraph *g, WeirState *s, const char *label,
                  const char *params, const char *ranges, const T4Port *ins,
                  guint n_in, const T4Port *outs, guint n_out,
                  const char *code) {
  g_auto(GStrv) ps = g_strsplit(params, ",", -1);
  g_auto(GStrv) rs = g_strsplit(ranges, ",", -1);
  for (guint i = 0; ps[i]; i++)
    g_strstrip(ps[i]);
  for (guint i = 0; rs[i]; i++)
    g_strstrip(rs[i]);
  WeirNode *exit = NULL;
  g_autoptr(GError) error = NULL;
  WeirNode *entry = weir_state_add_map(g, s, label, (const char *const *)ps,
                                       (const char *const *)rs,
                                       WEIR_SCHEDULE_PARALLEL, &exit, &error);
  if (!entry)
    fail_msg("%s", error->message);
  g_autoptr(WeirExpr) runs = weir_expr_const(1);
  for (guint i = 0; i < entry->map->ranges->len; i++) {
    g_autoptr(WeirExpr) size =
        weir_range_size(&g_array_index(entry->map->ranges, WeirRange, i));
    WeirExpr *next = weir_expr_mul(runs, size);
    weir_expr_unref(runs);
    runs = next;
  }
  g_autoptr(GPtrArray) in_names = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) out_names = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < n_in; i++)
    g_ptr_array_add(in_names, g_strdup(ins[i].conn));
  g_ptr_array_add(in_names, NULL);
  for (guint i = 0; i < n_out; i++)
    g_ptr_array_add(out_names, g_strdup(outs[i].conn));
  g_ptr_array_add(out_names, NULL);
  WeirNode *t =
      weir_state_add_tasklet(g, s, label, (const char *const *)in_names->pdata,
                             (const char *const *)out_names->pdata, code);
  guint eid = entry->id, xid = exit->id, tid = t->id;
  if (n_in == 0)
    t4c_memlet(g, s, eid, NULL, tid, NULL, NULL, NULL);
  for (guint i = 0; i < n_in; i++) {
    const char *data = ins[i].access->data;
    g_autofree char *cin = g_strdup_printf("IN_%s", data);
    g_autofree char *cout = g_strdup_printf("OUT_%s", data);
    WeirNode *e = weir_state_node(s, eid);
    if (!weir_node_has_in_conn(e, cin)) {
      weir_node_add_in_conn(e, cin);
      weir_node_add_out_conn(e, cout);
      WeirMemlet *m =
          t4c_memlet(g, s, ins[i].access->id, NULL, eid, cin, data, NULL);
      weir_memlet_set_volume(m, runs);
    }
    t4c_memlet(g, s, eid, cout, tid, ins[i].conn, data, ins[i].subset);
  }
  for (guint i = 0; i < n_out; i++) {
    const char *data = outs[i].access->data;
    g_autofree char *cin = g_strdup_printf("IN_%s", data);
    g_autofree char *cout = g_strdup_printf("OUT_%s", data);
    WeirNode *x = weir_state_node(s, xid);
    weir_node_add_in_conn(x, cin);
    weir_node_add_out_conn(x, cout);
    t4c_memlet(g, s, tid, outs[i].conn, xid, cin, data, outs[i].subset);
    WeirMemlet *m =
        t4c_memlet(g, s, xid, cout, outs[i].access->id, NULL, data, NULL);
    weir_memlet_set_volume(m, runs);
  }
  return weir_state_node(s, eid);
}

void t4c_validate(WeirGraph *g) {
  g_autoptr(GError) error = NULL;
  if (!weir_graph_validate(g, &error))
    fail_msg("%s", error->message);
}
