/* gi.c — boxed types and binding-friendly calls for GObject Introspection
 * (weir-gi.h).
 *
 * Shared boxed types keep their extra references in one table (pointer ->
 * number of references beyond the first), so the C structures themselves
 * and their _free functions stay as they are: a pointer absent from the
 * table has exactly one reference. */
#include "weir-gi.h"
#include "weir-hw.h"

#include <string.h>

#include "session-private.h"

/* ------------------------------------------------------ shared references */

static GMutex shared_lock;
static GHashTable *shared_refs; /* gpointer -> GUINT_TO_POINTER(extra refs) */

static gpointer shared_ref(gpointer p) {
  if (!p)
    return NULL;
  g_mutex_lock(&shared_lock);
  if (!shared_refs)
    shared_refs = g_hash_table_new(g_direct_hash, g_direct_equal);
  guint extra = GPOINTER_TO_UINT(g_hash_table_lookup(shared_refs, p));
  g_hash_table_insert(shared_refs, p, GUINT_TO_POINTER(extra + 1));
  g_mutex_unlock(&shared_lock);
  return p;
}

/* Drops one reference; TRUE when it was the last (the caller frees). */
static gboolean shared_unref(gpointer p) {
  if (!p)
    return FALSE;
  g_mutex_lock(&shared_lock);
  guint extra =
      shared_refs ? GPOINTER_TO_UINT(g_hash_table_lookup(shared_refs, p)) : 0;
  if (extra > 1)
    g_hash_table_insert(shared_refs, p, GUINT_TO_POINTER(extra - 1));
  else if (extra == 1)
    g_hash_table_remove(shared_refs, p);
  g_mutex_unlock(&shared_lock);
  return extra == 0;
}

#define WEIR_DEFINE_SHARED_BOXED(TypeName, type_name, free_func)               \
  static TypeName *type_name##_boxed_ref(TypeName *p) {                        \
    return shared_ref(p);                                                      \
  }                                                                            \
  static void type_name##_boxed_unref(TypeName *p) {                           \
    if (shared_unref(p))                                                       \
      free_func(p);                                                            \
  }                                                                            \
  G_DEFINE_BOXED_TYPE(TypeName, type_name, type_name##_boxed_ref,              \
                      type_name##_boxed_unref)

static void evaluation_free(WeirEvaluation *e) {
  weir_evaluation_clear(e);
  g_free(e);
}

WEIR_DEFINE_SHARED_BOXED(WeirSession, weir_session, weir_session_free)
WEIR_DEFINE_SHARED_BOXED(WeirKernel, weir_kernel, weir_kernel_free)
WEIR_DEFINE_SHARED_BOXED(WeirTrainer, weir_trainer, weir_trainer_free)
WEIR_DEFINE_SHARED_BOXED(WeirRecipe, weir_recipe, weir_recipe_free)
WEIR_DEFINE_SHARED_BOXED(WeirRecipeReport, weir_recipe_report,
                         weir_recipe_report_free)
WEIR_DEFINE_SHARED_BOXED(WeirAnalysis, weir_analysis, weir_analysis_free)
WEIR_DEFINE_SHARED_BOXED(WeirEvaluation, weir_evaluation, evaluation_free)
WEIR_DEFINE_SHARED_BOXED(WeirProfile, weir_profile, weir_profile_free)
WEIR_DEFINE_SHARED_BOXED(WeirDataset, weir_dataset, weir_dataset_free)

GType weir_error_get_type(void) {
  static gsize type = 0;
  if (g_once_init_enter(&type)) {
    static const GEnumValue values[] = {
        {WEIR_ERROR_PARSE, "WEIR_ERROR_PARSE", "parse"},
        {WEIR_ERROR_INVALID, "WEIR_ERROR_INVALID", "invalid"},
        {WEIR_ERROR_UNSUPPORTED, "WEIR_ERROR_UNSUPPORTED", "unsupported"},
        {WEIR_ERROR_IO, "WEIR_ERROR_IO", "io"},
        {WEIR_ERROR_RUNTIME, "WEIR_ERROR_RUNTIME", "runtime"},
        {WEIR_ERROR_VERSION, "WEIR_ERROR_VERSION", "version"},
        {0, NULL, NULL},
    };
    g_once_init_leave(&type, g_enum_register_static("WeirErrorCode", values));
  }
  return type;
}

/* ----------------------------------------------------------- value types */

static WeirGraph *graph_copy(WeirGraph *g) {
  return weir_graph_copy(g);
}
G_DEFINE_BOXED_TYPE(WeirGraph, weir_graph, graph_copy, weir_graph_free)

static WeirTensor *tensor_copy(WeirTensor *t) {
  return weir_tensor_copy(t);
}
G_DEFINE_BOXED_TYPE(WeirTensor, weir_tensor, tensor_copy, weir_tensor_free)

G_DEFINE_BOXED_TYPE(WeirExpr, weir_expr, weir_expr_ref, weir_expr_unref)

static WeirSite *site_copy(WeirSite *s) {
  return g_memdup2(s, sizeof *s);
}
G_DEFINE_BOXED_TYPE(WeirSite, weir_site, site_copy, weir_site_free)

WeirSite *weir_site_new(guint state, const guint *nodes, guint n_nodes) {
  g_return_val_if_fail(n_nodes <= WEIR_SITE_MAX_NODES, NULL);
  g_return_val_if_fail(n_nodes == 0 || nodes != NULL, NULL);
  WeirSite *s = g_new0(WeirSite, 1);
  s->state = state;
  s->n_nodes = n_nodes;
  if (n_nodes)
    memcpy(s->nodes, nodes, n_nodes * sizeof *nodes);
  return s;
}

const guint *weir_site_get_nodes(const WeirSite *site, guint *n) {
  g_return_val_if_fail(site != NULL && n != NULL, NULL);
  *n = site->n_nodes;
  return site->nodes;
}

void weir_site_free(WeirSite *site) {
  g_free(site);
}

static void figure_copy(const WeirFigure *src, WeirFigure *dst) {
  *dst = *src;
  dst->expr = g_strdup(src->expr);
}

static WeirStep *step_copy(WeirStep *s) {
  WeirStep *c = weir_step_new();
  c->index = s->index;
  c->transform = g_strdup(s->transform);
  c->site = s->site;
  for (guint i = 0; i < s->labels->len; i++)
    g_ptr_array_add(c->labels, g_strdup(g_ptr_array_index(s->labels, i)));
  c->site_text = g_strdup(s->site_text);
  c->params = g_strdup(s->params);
  c->params_json = g_strdup(s->params_json);
  figure_copy(&s->bytes_before, &c->bytes_before);
  figure_copy(&s->bytes_after, &c->bytes_after);
  figure_copy(&s->flops_before, &c->flops_before);
  figure_copy(&s->flops_after, &c->flops_after);
  c->seconds = s->seconds;
  c->timestamp = s->timestamp;
  c->bookmark = g_strdup(s->bookmark);
  c->results = g_strdup(s->results);
  c->program = g_strdup(s->program);
  return c;
}
G_DEFINE_BOXED_TYPE(WeirStep, weir_step, step_copy, weir_step_free)

static WeirBenchResult *bench_copy(WeirBenchResult *r) {
  WeirBenchResult *c = g_memdup2(r, sizeof *r);
  c->times = g_memdup2(r->times, r->repetitions * sizeof *r->times);
  return c;
}
static void bench_free(WeirBenchResult *r) {
  weir_bench_result_clear(r);
  g_free(r);
}
G_DEFINE_BOXED_TYPE(WeirBenchResult, weir_bench_result, bench_copy, bench_free)

/* Registry records live as long as the process. */
static WeirTransformInfo *info_copy(WeirTransformInfo *t) {
  return t;
}
static void info_free(WeirTransformInfo *t) {
  (void)t;
}
G_DEFINE_BOXED_TYPE(WeirTransformInfo, weir_transform_info, info_copy,
                    info_free)

/* ------------------------------------------------------------ symbols */

/* name -> gint64* from an a{sx} GVariant (NULL: an empty table). */
static GHashTable *bindings_from_variant(GVariant *v, GError **error) {
  GHashTable *b = weir_bindings_new();
  if (!v)
    return b;
  if (!g_variant_is_of_type(v, G_VARIANT_TYPE("a{sx}"))) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "symbol values must be a GVariant of type a{sx} (name -> "
                "value), not %s",
                g_variant_get_type_string(v));
    g_hash_table_unref(b);
    return NULL;
  }
  GVariantIter it;
  const char *name;
  gint64 value;
  g_variant_iter_init(&it, v);
  while (g_variant_iter_next(&it, "{&sx}", &name, &value))
    weir_bindings_set(b, name, value);
  return b;
}

/* -------------------------------------------------------------- tensors */

WeirTensor *weir_tensor_new_from_bytes(WeirDType dtype, const gint64 *shape,
                                       guint rank, GBytes *data,
                                       GError **error) {
  g_return_val_if_fail(data != NULL, NULL);
  g_return_val_if_fail((guint)dtype < WEIR_DTYPE_COUNT, NULL);
  g_autoptr(WeirTensor) t = weir_tensor_try_new(dtype, rank, shape, error);
  if (!t)
    return NULL;
  gsize n = 0;
  const void *p = g_bytes_get_data(data, &n);
  if (n != weir_tensor_nbytes(t)) {
    g_autofree char *d = weir_tensor_describe(t);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "tensor %s needs %" G_GSIZE_FORMAT
                " bytes, got %" G_GSIZE_FORMAT,
                d, weir_tensor_nbytes(t), n);
    return NULL;
  }
  if (n)
    memcpy(t->data, p, n);
  return g_steal_pointer(&t);
}

GBytes *weir_tensor_get_bytes(const WeirTensor *t) {
  g_return_val_if_fail(t != NULL, NULL);
  return g_bytes_new(t->data, weir_tensor_nbytes(t));
}

const gint64 *weir_tensor_get_shape(const WeirTensor *t, guint *rank) {
  g_return_val_if_fail(t != NULL && rank != NULL, NULL);
  *rank = t->rank;
  return t->shape;
}

guintptr weir_tensor_get_data_address(WeirTensor *t) {
  g_return_val_if_fail(t != NULL, 0);
  return (guintptr)t->data;
}

/* ------------------------------------------------------------- programs */

const char *weir_graph_get_name(const WeirGraph *g) {
  g_return_val_if_fail(g != NULL, NULL);
  return g->name;
}

char **weir_graph_argument_names(const WeirGraph *g) {
  g_return_val_if_fail(g != NULL, NULL);
  GStrvBuilder *b = g_strv_builder_new();
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (!c->transient && !c->initial)
      g_strv_builder_add(b, c->name);
  }
  char **names = g_strv_builder_end(b);
  g_strv_builder_unref(b);
  return names;
}

WeirTensor *weir_graph_new_argument(const WeirGraph *g, const char *name,
                                    GVariant *symbols, GError **error) {
  g_return_val_if_fail(g != NULL && name != NULL, NULL);
  const WeirContainer *c = weir_graph_container(g, name);
  if (!c || c->transient || c->initial) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "program '%s': '%s' is not an argument container", g->name,
                name);
    return NULL;
  }
  g_autoptr(GHashTable) b = bindings_from_variant(symbols, error);
  if (!b)
    return NULL;
  g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
  for (guint d = 0; d < c->shape->len; d++) {
    g_autoptr(GError) local = NULL;
    if (!weir_expr_eval_checked(g_ptr_array_index(c->shape, d), b, &shape[d],
                                &local)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "program '%s': argument '%s', dimension %u: %s", g->name,
                  name, d, local->message);
      return NULL;
    }
  }
  return weir_tensor_try_new(c->dtype, c->shape->len, shape, error);
}

/* ------------------------------------------------------------- kernels */

gboolean weir_kernel_run_tensors(WeirKernel *k, GVariant *symbols,
                                 GHashTable *args, GError **error) {
  g_return_val_if_fail(k != NULL && args != NULL, FALSE);
  g_autoptr(GHashTable) b = bindings_from_variant(symbols, error);
  return b && weir_kernel_run(k, b, args, error);
}

WeirBenchResult *weir_kernel_bench_tensors(WeirKernel *k, GVariant *symbols,
                                           GHashTable *args, guint warmup,
                                           guint repetitions, GError **error) {
  g_return_val_if_fail(k != NULL && args != NULL, NULL);
  g_autoptr(GHashTable) b = bindings_from_variant(symbols, error);
  if (!b)
    return NULL;
  WeirBenchOptions opts = {.warmup = warmup, .repetitions = repetitions};
  WeirBenchResult *r = g_new0(WeirBenchResult, 1);
  if (!weir_kernel_bench(k, b, args, &opts, r, error)) {
    bench_free(r);
    return NULL;
  }
  return r;
}

const double *weir_bench_result_get_times(const WeirBenchResult *r, guint *n) {
  g_return_val_if_fail(r != NULL && n != NULL, NULL);
  *n = r->repetitions;
  return r->times;
}

/* ------------------------------------------------------------ analyses */

static gint64 quantity_value(const WeirQuantity *q) {
  return q->known ? q->value : -1;
}

static const char *node_label(const WeirGraph *g, guint state, guint node,
                              const char **kind, const char **op) {
  const WeirState *s = weir_graph_state(g, state);
  const WeirNode *n = s ? weir_state_node(s, node) : NULL;
  *kind = n ? weir_node_kind_name(n->kind) : "";
  *op = n && n->kind == WEIR_NODE_LIBRARY && n->op ? n->op : "";
  return n && n->label ? n->label : "";
}

WeirAnalysis *weir_analysis_compute_symbols(const WeirGraph *g,
                                            GVariant *symbols, GError **error) {
  g_return_val_if_fail(g != NULL, NULL);
  g_autoptr(GHashTable) b = bindings_from_variant(symbols, error);
  if (!b)
    return NULL;
  /* the modeled traffic with this machine's cache, as `weir info` */
  g_autoptr(WeirHwProfile) hw = weir_hw_profile_cached();
  return weir_analysis_compute_traffic(g, b, weir_hw_model_cache_bytes(hw),
                                       error);
}

GVariant *weir_analysis_to_variant(const WeirAnalysis *a, const WeirGraph *g) {
  g_return_val_if_fail(a != NULL && g != NULL, NULL);
  GVariantBuilder nodes;
  g_variant_builder_init(&nodes, G_VARIANT_TYPE("aa{sv}"));
  for (guint i = 0; i < a->nodes->len; i++) {
    const WeirNodeCost *c = g_ptr_array_index(a->nodes, i);
    const char *kind, *op;
    const char *label = node_label(g, c->state, c->node, &kind, &op);
    GVariantBuilder n;
    g_variant_builder_init(&n, G_VARIANT_TYPE_VARDICT);
    g_variant_builder_add(&n, "{sv}", "state", g_variant_new_uint32(c->state));
    g_variant_builder_add(&n, "{sv}", "node", g_variant_new_uint32(c->node));
    g_variant_builder_add(&n, "{sv}", "label", g_variant_new_string(label));
    g_variant_builder_add(&n, "{sv}", "kind", g_variant_new_string(kind));
    g_variant_builder_add(&n, "{sv}", "op", g_variant_new_string(op));
    g_variant_builder_add(&n, "{sv}", "bytes_in",
                          g_variant_new_int64(quantity_value(&c->bytes_in)));
    g_variant_builder_add(&n, "{sv}", "bytes_out",
                          g_variant_new_int64(quantity_value(&c->bytes_out)));
    g_variant_builder_add(&n, "{sv}", "traffic",
                          g_variant_new_int64(quantity_value(&c->traffic)));
    g_variant_builder_add(&n, "{sv}", "flops",
                          g_variant_new_int64(quantity_value(&c->flops)));
    g_variant_builder_add_value(&nodes, g_variant_builder_end(&n));
  }
  GVariantBuilder b;
  g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add(&b, "{sv}", "total_bytes",
                        g_variant_new_int64(quantity_value(&a->total_bytes)));
  g_variant_builder_add(&b, "{sv}", "total_traffic",
                        g_variant_new_int64(quantity_value(&a->total_traffic)));
  g_variant_builder_add(&b, "{sv}", "total_flops",
                        g_variant_new_int64(quantity_value(&a->total_flops)));
  g_variant_builder_add(
      &b, "{sv}", "peak_transient_bytes",
      g_variant_new_int64(quantity_value(&a->peak_transient_bytes)));
  g_variant_builder_add(
      &b, "{sv}", "intensity",
      g_variant_new_double(a->intensity_known ? a->intensity : -1.0));
  g_variant_builder_add(&b, "{sv}", "nodes", g_variant_builder_end(&nodes));
  return g_variant_ref_sink(g_variant_builder_end(&b));
}

WeirProfile *weir_profile_run_tensors(const WeirGraph *g, GVariant *symbols,
                                      GHashTable *args, guint warmup,
                                      guint repetitions, GError **error) {
  g_return_val_if_fail(g != NULL && args != NULL, NULL);
  g_autoptr(GHashTable) b = bindings_from_variant(symbols, error);
  if (!b)
    return NULL;
  /* the modeled traffic with this machine's cache, and its roofline when
   * measured, as `weir profile` */
  g_autoptr(WeirHwProfile) hw = weir_hw_profile_cached();
  WeirProfileOptions opts = {
      .warmup = warmup, .repetitions = repetitions, .hw = hw};
  return weir_profile_run(g, b, args, &opts, error);
}

GVariant *weir_profile_to_variant(const WeirProfile *p) {
  g_return_val_if_fail(p != NULL, NULL);
  GVariantBuilder nodes;
  g_variant_builder_init(&nodes, G_VARIANT_TYPE("aa{sv}"));
  for (guint i = 0; i < p->nodes->len; i++) {
    const WeirProfileNode *pn = g_ptr_array_index(p->nodes, i);
    GVariantBuilder n;
    g_variant_builder_init(&n, G_VARIANT_TYPE_VARDICT);
    g_variant_builder_add(&n, "{sv}", "state", g_variant_new_uint32(pn->state));
    g_variant_builder_add(&n, "{sv}", "node", g_variant_new_uint32(pn->node));
    g_variant_builder_add(&n, "{sv}", "label",
                          g_variant_new_string(pn->label ? pn->label : ""));
    g_variant_builder_add(&n, "{sv}", "op",
                          g_variant_new_string(pn->op ? pn->op : ""));
    g_variant_builder_add(&n, "{sv}", "seconds",
                          g_variant_new_double(pn->seconds));
    g_variant_builder_add(&n, "{sv}", "share", g_variant_new_double(pn->share));
    g_variant_builder_add(
        &n, "{sv}", "flops",
        g_variant_new_int64(pn->flops_known ? pn->flops : -1));
    g_variant_builder_add(
        &n, "{sv}", "bytes",
        g_variant_new_int64(pn->bytes_known ? pn->bytes : -1));
    g_variant_builder_add_value(&nodes, g_variant_builder_end(&n));
  }
  GVariantBuilder b;
  g_variant_builder_init(&b, G_VARIANT_TYPE_VARDICT);
  g_variant_builder_add(&b, "{sv}", "run_median",
                        g_variant_new_double(p->run_median));
  g_variant_builder_add(&b, "{sv}", "node_sum",
                        g_variant_new_double(p->node_sum));
  g_variant_builder_add(&b, "{sv}", "nodes", g_variant_builder_end(&nodes));
  return g_variant_ref_sink(g_variant_builder_end(&b));
}

/* ----------------------------------------------------------- evaluation */

WeirEvaluation *weir_evaluate_tensors(const WeirGraph *program,
                                      const WeirGraph *reference,
                                      GVariant *symbols, GHashTable *inputs,
                                      guint warmup, guint repetitions,
                                      guint64 seed, GError **error) {
  g_return_val_if_fail(program != NULL, NULL);
  g_autoptr(GHashTable) b = bindings_from_variant(symbols, error);
  if (!b)
    return NULL;
  WeirEvaluateOptions opts = {
      .warmup = warmup,
      .repetitions = repetitions,
      .seed = seed,
      .inputs = inputs,
  };
  WeirEvaluation *e = g_new0(WeirEvaluation, 1);
  if (!weir_evaluate(program, reference, b, &opts, NULL, NULL, NULL, e,
                     error)) {
    evaluation_free(e);
    return NULL;
  }
  return e;
}

const WeirTensor *weir_evaluation_get_output(const WeirEvaluation *e,
                                             const char *name) {
  g_return_val_if_fail(e != NULL && name != NULL, NULL);
  return e->outputs ? g_hash_table_lookup(e->outputs, name) : NULL;
}

const WeirBenchResult *weir_evaluation_get_bench(const WeirEvaluation *e) {
  g_return_val_if_fail(e != NULL, NULL);
  return &e->bench;
}

/* -------------------------------------------------------------- training */

WeirDataset *weir_dataset_new_from_bytes(GBytes *features, gint64 n_samples,
                                         gint64 n_features, GBytes *labels,
                                         const char *source, GError **error) {
  g_return_val_if_fail(features != NULL, NULL);
  if (!source)
    source = "<memory>";
  gsize nf = 0, nl = 0;
  const float *f = g_bytes_get_data(features, &nf);
  const gint64 *l = labels ? g_bytes_get_data(labels, &nl) : NULL;
  if (n_samples < 0 || n_features <= 0 ||
      (guint64)n_samples > G_MAXSIZE / sizeof(float) / (guint64)n_features ||
      nf != (gsize)n_samples * (gsize)n_features * sizeof(float)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %" G_GINT64_FORMAT " samples of %" G_GINT64_FORMAT
                " float32 features need %" G_GINT64_FORMAT
                " bytes, got %" G_GSIZE_FORMAT,
                source, n_samples, n_features,
                n_samples * n_features * (gint64)sizeof(float), nf);
    return NULL;
  }
  if (labels && nl != (gsize)n_samples * sizeof(gint64)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: %" G_GINT64_FORMAT " int64 labels need %" G_GINT64_FORMAT
                " bytes, got %" G_GSIZE_FORMAT,
                source, n_samples, n_samples * (gint64)sizeof(gint64), nl);
    return NULL;
  }
  WeirDataset *d = g_new0(WeirDataset, 1);
  d->source = g_strdup(source);
  d->n_samples = n_samples;
  d->n_features = n_features;
  d->features = g_memdup2(f, nf ? nf : 1);
  d->labels = g_new0(gint64, n_samples ? n_samples : 1);
  for (gint64 i = 0; l && i < n_samples; i++) {
    if (l[i] < 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: sample %" G_GINT64_FORMAT
                  ": negative label %" G_GINT64_FORMAT,
                  source, i, l[i]);
      weir_dataset_free(d);
      return NULL;
    }
    d->labels[i] = l[i];
    d->n_classes = MAX(d->n_classes, l[i] + 1);
  }
  return d;
}

/* Reads an integer option of any integer GVariant type. */
static gboolean option_int(const char *key, GVariant *v, gint64 *out,
                           GError **error) {
  if (g_variant_is_of_type(v, G_VARIANT_TYPE_INT64))
    *out = g_variant_get_int64(v);
  else if (g_variant_is_of_type(v, G_VARIANT_TYPE_UINT64) &&
           g_variant_get_uint64(v) <= G_MAXINT64)
    *out = (gint64)g_variant_get_uint64(v);
  else if (g_variant_is_of_type(v, G_VARIANT_TYPE_INT32))
    *out = g_variant_get_int32(v);
  else if (g_variant_is_of_type(v, G_VARIANT_TYPE_UINT32))
    *out = g_variant_get_uint32(v);
  else {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "trainer option '%s': expected an integer, got %s", key,
                g_variant_get_type_string(v));
    return FALSE;
  }
  return TRUE;
}

static gboolean option_double(const char *key, GVariant *v, double *out,
                              GError **error) {
  gint64 i;
  if (g_variant_is_of_type(v, G_VARIANT_TYPE_DOUBLE)) {
    *out = g_variant_get_double(v);
    return TRUE;
  }
  if (!option_int(key, v, &i, NULL)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "trainer option '%s': expected a number, got %s", key,
                g_variant_get_type_string(v));
    return FALSE;
  }
  *out = (double)i;
  return TRUE;
}

static gboolean trainer_option(WeirTrainerOptions *o, const char *key,
                               GVariant *v, GError **error) {
  gint64 i = 0;
  if (g_str_equal(key, "loss") || g_str_equal(key, "optimizer") ||
      g_str_equal(key, "recipe")) {
    if (!g_variant_is_of_type(v, G_VARIANT_TYPE_STRING)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "trainer option '%s': expected a string, got %s", key,
                  g_variant_get_type_string(v));
      return FALSE;
    }
    const char *s = g_variant_get_string(v, NULL);
    gboolean ok = TRUE;
    if (g_str_equal(key, "loss"))
      ok = weir_loss_from_name(s, &o->train.loss);
    else if (g_str_equal(key, "optimizer"))
      ok = weir_optimizer_from_name(s, &o->train.optimizer);
    else
      o->recipe_path = s; /* borrowed from the options variant */
    if (!ok)
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "trainer option '%s': unknown value '%s'", key, s);
    return ok;
  }
  if (g_str_equal(key, "lr"))
    return option_double(key, v, &o->train.lr, error);
  if (g_str_equal(key, "momentum"))
    return option_double(key, v, &o->train.momentum, error);
  if (g_str_equal(key, "weight_decay"))
    return option_double(key, v, &o->train.weight_decay, error);
  gint64 *field = g_str_equal(key, "epochs")           ? &o->epochs
                  : g_str_equal(key, "batch")          ? &o->batch
                  : g_str_equal(key, "steps_per_call") ? &o->steps_per_call
                                                       : NULL;
  if (field) {
    if (!option_int(key, v, field, error))
      return FALSE;
    if (*field <= 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "trainer option '%s': must be positive", key);
      return FALSE;
    }
    return TRUE;
  }
  if (g_str_equal(key, "seed") || g_str_equal(key, "threads") ||
      g_str_equal(key, "opt_level")) {
    if (!option_int(key, v, &i, error))
      return FALSE;
    if (i < 0 || i > G_MAXINT ||
        (g_str_equal(key, "opt_level") && i > WEIR_OPT_LEVEL_MAX)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "trainer option '%s': %" G_GINT64_FORMAT " is out of range",
                  key, i);
      return FALSE;
    }
    if (g_str_equal(key, "seed"))
      o->seed = (guint64)i;
    else if (g_str_equal(key, "threads"))
      o->threads = (int)i;
    else
      o->opt_level = (guint)i;
    return TRUE;
  }
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
              "unknown trainer option '%s'", key);
  return FALSE;
}

WeirTrainer *weir_trainer_new_with_options(const char *model_path,
                                           gint64 n_features, GVariant *options,
                                           GError **error) {
  g_return_val_if_fail(model_path != NULL, NULL);
  WeirTrainerOptions o;
  weir_trainer_options_init(&o);
  if (options) {
    if (!g_variant_is_of_type(options, G_VARIANT_TYPE_VARDICT)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "trainer options must be a GVariant of type a{sv}, not %s",
                  g_variant_get_type_string(options));
      return NULL;
    }
    GVariantIter it;
    const char *key;
    GVariant *value;
    g_variant_iter_init(&it, options);
    while (g_variant_iter_next(&it, "{&sv}", &key, &value)) {
      gboolean ok = trainer_option(&o, key, value, error);
      g_variant_unref(value);
      if (!ok)
        return NULL;
    }
  }
  return weir_trainer_new(model_path, n_features, &o, error);
}

GBytes *weir_trainer_predict_bytes(WeirTrainer *t, const WeirDataset *d,
                                   GError **error) {
  g_return_val_if_fail(t != NULL && d != NULL, NULL);
  gsize n = (gsize)d->n_samples * (gsize)weir_trainer_n_classes(t);
  float *logits = g_new0(float, n ? n : 1);
  if (!weir_trainer_predict(t, d, logits, error)) {
    g_free(logits);
    return NULL;
  }
  return g_bytes_new_take(logits, n * sizeof(float));
}

/* ----------------------------------------------------- transformations */

GPtrArray *weir_transform_list_sites(const WeirTransformInfo *t,
                                     const WeirGraph *g) {
  g_return_val_if_fail(t != NULL && g != NULL, NULL);
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  /* No free function: bindings take the elements over (transfer full). */
  GPtrArray *out = g_ptr_array_new();
  for (guint i = 0; sites && i < sites->len; i++)
    g_ptr_array_add(out, site_copy(&g_array_index(sites, WeirSite, i)));
  return out;
}
