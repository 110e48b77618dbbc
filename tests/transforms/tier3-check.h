/* tier3-check.h — checks shared by the tier-3 transformation tests.
 *
 * Included by each tests/transforms/test-*.c of tier 3 (static inline, so a
 * test that does not use a helper does not warn).  The helpers assert with
 * cmocka, so they only run inside a test.
 *
 *   t3_load_sample("softmax.json")      a program from samples/
 *   t3_symbols(g, value)                every symbol of g bound to value
 *   t3_run(g, symbols, seed)            runs g on seeded random arguments
 *   t3_assert_same_outputs(a, b, ...)   runs both, compares every argument
 *   t3_bytes(g, symbols)                total bytes moved
 *   t3_sites / t3_why / t3_apply        the framework's entry points
 *   t3_apply_each_legal_site(...)       every legal site, each on a copy,
 *                                       valid and output-preserving
 */
#ifndef TIER3_CHECK_H
#define TIER3_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "weir-analysis.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-transform.h"
#include "weir-validate.h"

static inline WeirGraph *t3_load_sample(const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_load(path, &error);
  if (!g)
    fail_msg("loading %s: %s", path, error->message);
  return g;
}

static inline GHashTable *t3_symbols(const WeirGraph *g, gint64 value) {
  GHashTable *b = weir_bindings_new();
  for (guint i = 0; i < g->symbols->len; i++)
    weir_bindings_set(b, g_ptr_array_index(g->symbols, i), value);
  return b;
}

static inline void t3_assert_valid(WeirGraph *g) {
  g_autoptr(GError) error = NULL;
  if (!weir_graph_validate(g, &error))
    fail_msg("%s", error->message);
}

/* Arguments (name -> WeirTensor*, owned) after running g on random values
 * (seeded per argument by its name).  Every non-transient container is an
 * argument. */
static inline GHashTable *t3_run(WeirGraph *g, GHashTable *symbols,
                                 guint64 seed) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    guint rank = c->shape->len;
    g_autofree gint64 *shape = g_new0(gint64, rank ? rank : 1);
    for (guint d = 0; d < rank; d++) {
      g_autoptr(GError) error = NULL;
      if (!weir_expr_eval(g_ptr_array_index(c->shape, d), symbols, &shape[d],
                          &error))
        fail_msg("shape of '%s': %s", c->name, error->message);
    }
    WeirTensor *t = weir_tensor_new(c->dtype, rank, shape);
    weir_tensor_fill_random(t, seed * 1000003 + g_str_hash(c->name));
    g_hash_table_insert(args, g_strdup(c->name), t);
  }
  g_autoptr(GError) error = NULL;
  if (!weir_interpret(g, symbols, args, NULL, &error))
    fail_msg("interpret '%s': %s", g->name, error->message);
  return args;
}

/* Runs both programs on the same seeded arguments and compares every
 * argument afterwards: exactly for integers, within rtol for floats. */
static inline void t3_assert_same_outputs(WeirGraph *before, WeirGraph *after,
                                          GHashTable *symbols, double rtol) {
  for (guint64 seed = 1; seed <= 2; seed++) {
    g_autoptr(GHashTable) a = t3_run(before, symbols, seed);
    g_autoptr(GHashTable) b = t3_run(after, symbols, seed);
    for (guint i = 0; i < before->containers->len; i++) {
      const WeirContainer *c = g_ptr_array_index(before->containers, i);
      if (c->transient)
        continue;
      const WeirTensor *ta = g_hash_table_lookup(a, c->name);
      const WeirTensor *tb = g_hash_table_lookup(b, c->name);
      if (!tb)
        fail_msg("argument '%s' disappeared", c->name);
      double tol = weir_dtype_is_float(c->dtype) ? rtol : 0;
      g_autoptr(GError) error = NULL;
      if (!weir_tensor_allclose(tb, ta, tol, tol * 1e-3, NULL, &error))
        fail_msg("'%s' of '%s' differs: %s", c->name, before->name,
                 error->message);
    }
  }
}

static inline gint64 t3_bytes(const WeirGraph *g, GHashTable *symbols) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, symbols, &error);
  if (!a)
    fail_msg("analysis: %s", error->message);
  assert_true(a->total_bytes.known);
  return a->total_bytes.value;
}

static inline const WeirTransformInfo *t3_lookup(const char *name) {
  weir_transforms_init();
  const WeirTransformInfo *t = weir_transform_lookup(name);
  if (!t)
    fail_msg("transformation '%s' is not registered", name);
  return t;
}

static inline GArray *t3_sites(const char *name, const WeirGraph *g) {
  return weir_transform_sites(t3_lookup(name), g);
}

/* NULL when the site is legal, else the reason (transfer full). */
static inline char *t3_why(const char *name, const WeirGraph *g,
                           const WeirSite *site) {
  char *reason = NULL;
  if (weir_transform_can_apply(t3_lookup(name), g, site, NULL, &reason)) {
    g_free(reason);
    return NULL;
  }
  if (!reason)
    fail_msg("%s: can_apply refused a site without a reason", name);
  return reason;
}

/* Like t3_why with parameters ("name=value", NULL-terminated). */
static inline char *t3_why_params(const char *name, const WeirGraph *g,
                                  const WeirSite *site,
                                  const char *const *assignments) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirParams) params =
      weir_params_parse(t3_lookup(name), assignments, &error);
  if (!params)
    fail_msg("%s: %s", name, error->message);
  char *reason = NULL;
  if (weir_transform_can_apply(t3_lookup(name), g, site, params, &reason)) {
    g_free(reason);
    return NULL;
  }
  return reason;
}

static inline void t3_assert_reason(const char *name, const WeirGraph *g,
                                    const WeirSite *site,
                                    const char *fragment) {
  g_autofree char *why = t3_why(name, g, site);
  if (!why)
    fail_msg("%s: site accepted, expected a reason with '%s'", name, fragment);
  if (!strstr(why, fragment))
    fail_msg("%s: reason '%s' does not contain '%s'", name, why, fragment);
}

/* Applies with parameters ("name=value", NULL-terminated; NULL: the
 * defaults) and validates. */
static inline void t3_apply_params(const char *name, WeirGraph *g,
                                   const WeirSite *site,
                                   const char *const *assignments) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirParams) params =
      weir_params_parse(t3_lookup(name), assignments, &error);
  if (!params)
    fail_msg("%s: %s", name, error->message);
  if (!weir_transform_apply(g, t3_lookup(name), site, params, NULL, NULL,
                            &error))
    fail_msg("%s: %s", name, error->message);
  t3_assert_valid(g);
}

static inline void t3_apply(const char *name, WeirGraph *g,
                            const WeirSite *site) {
  t3_apply_params(name, g, site, NULL);
}

/* A site by node ids (state, then up to 8 node ids, 0-terminated). */
static inline WeirSite t3_site(guint state, ...) {
  WeirSite site = {0};
  site.state = state;
  va_list ap;
  va_start(ap, state);
  for (guint id;
       site.n_nodes < WEIR_SITE_MAX_NODES && (id = va_arg(ap, guint));)
    site.nodes[site.n_nodes++] = id;
  va_end(ap);
  return site;
}

static inline gboolean t3_site_equal(const WeirSite *a, const WeirSite *b) {
  if (a->state != b->state || a->n_nodes != b->n_nodes)
    return FALSE;
  for (guint i = 0; i < a->n_nodes; i++)
    if (a->nodes[i] != b->nodes[i])
      return FALSE;
  return TRUE;
}

/* Applies the transformation at each legal site of g, each time on a fresh
 * copy: the result validates and computes the same outputs.  Returns the
 * number of legal sites. */
static inline guint t3_apply_each_legal_site(const char *name,
                                             const WeirGraph *g,
                                             GHashTable *symbols, double rtol) {
  g_autoptr(GArray) sites = t3_sites(name, g);
  guint legal = 0;
  for (guint i = 0; i < sites->len; i++) {
    const WeirSite *site = &g_array_index(sites, WeirSite, i);
    g_autofree char *why = t3_why(name, g, site);
    if (why)
      continue;
    legal++;
    g_autoptr(WeirGraph) before = weir_graph_copy(g);
    g_autoptr(WeirGraph) after = weir_graph_copy(g);
    t3_apply(name, after, site);
    t3_assert_same_outputs(before, after, symbols, rtol);
  }
  return legal;
}

/* Applies the first legal site again and again until none is left; returns
 * how many times it applied. */
static inline guint t3_apply_to_fixpoint(const char *name, WeirGraph *g) {
  guint count = 0;
  for (;;) {
    g_autoptr(GArray) sites = t3_sites(name, g);
    gboolean applied = FALSE;
    for (guint i = 0; i < sites->len && !applied; i++) {
      const WeirSite *site = &g_array_index(sites, WeirSite, i);
      g_autofree char *why = t3_why(name, g, site);
      if (why)
        continue;
      t3_apply(name, g, site);
      applied = TRUE;
      count++;
    }
    if (!applied)
      return count;
  }
}

/* --------------------------------------------------------------- builder */

/* One tasklet connector of a test map: the access node it reads or
 * writes, the tasklet connector, the subset in the map's parameters. */
typedef struct {
  WeirNode *access;
  const char *conn;
  const char *subset;
  WeirWcr wcr;
} T3Port;

static inline WeirMemlet *t3_edge(WeirGraph *g, WeirState *s, guint src,
                                  const char *sc, guint dst, const char *dc,
                                  const char *data, const char *subset) {
  g_autoptr(GError) error = NULL;
  WeirMemlet *m =
      weir_state_add_memlet(g, s, src, sc, dst, dc, data, subset, &error);
  if (!m)
    fail_msg("memlet: %s", error->message);
  return m;
}

/* A map (params and ranges comma-separated) holding one tasklet; outer
 * memlets cover the whole container with volume = inner volume x
 * iterations; ports on the same access node share a connector.  Returns the
 * entry; *exit_out (optional) receives the exit, *tasklet_out the tasklet. */
static inline WeirNode *t3_map(WeirGraph *g, WeirState *s, const char *label,
                               const char *params, const char *ranges,
                               const char *code, const T3Port *ins, guint n_ins,
                               const T3Port *outs, guint n_outs,
                               WeirNode **exit_out, WeirNode **tasklet_out) {
  g_auto(GStrv) p = g_strsplit(params, ",", -1);
  g_auto(GStrv) r = g_strsplit(ranges, ",", -1);
  WeirNode *exit = NULL;
  g_autoptr(GError) error = NULL;
  WeirNode *entry = weir_state_add_map(g, s, label, (const char *const *)p,
                                       (const char *const *)r,
                                       WEIR_SCHEDULE_PARALLEL, &exit, &error);
  if (!entry)
    fail_msg("map: %s", error->message);
  g_autoptr(GPtrArray) in_names = g_ptr_array_new();
  g_autoptr(GPtrArray) out_names = g_ptr_array_new();
  for (guint i = 0; i < n_ins; i++)
    g_ptr_array_add(in_names, (gpointer)ins[i].conn);
  g_ptr_array_add(in_names, NULL);
  for (guint i = 0; i < n_outs; i++)
    g_ptr_array_add(out_names, (gpointer)outs[i].conn);
  g_ptr_array_add(out_names, NULL);
  WeirNode *t =
      weir_state_add_tasklet(g, s, label, (const char *const *)in_names->pdata,
                             (const char *const *)out_names->pdata, code);
  g_autoptr(WeirExpr) size = weir_expr_const(1);
  for (guint i = 0; i < entry->map->ranges->len; i++) {
    g_autoptr(WeirExpr) rs =
        weir_range_size(&g_array_index(entry->map->ranges, WeirRange, i));
    WeirExpr *next = weir_expr_mul(size, rs);
    weir_expr_unref(size);
    size = next;
  }
  for (guint k = 0; k < n_ins + n_outs; k++) {
    gboolean in = k < n_ins;
    const T3Port *port = in ? &ins[k] : &outs[k - n_ins];
    const char *x = port->access->data;
    WeirContainer *c = weir_graph_container(g, x);
    g_autoptr(WeirSubset) full = weir_container_full_subset(c);
    g_autofree char *full_text = weir_subset_to_string(full);
    g_autofree char *ic = g_strconcat("IN_", x, NULL);
    g_autofree char *oc = g_strconcat("OUT_", x, NULL);
    WeirNode *scope = in ? entry : exit;
    gboolean have = weir_node_has_in_conn(scope, ic);
    weir_node_add_in_conn(scope, ic);
    weir_node_add_out_conn(scope, oc);
    WeirMemlet *inner =
        in ? t3_edge(g, s, entry->id, oc, t->id, port->conn, x, port->subset)
           : t3_edge(g, s, t->id, port->conn, exit->id, ic, x, port->subset);
    inner->wcr = port->wcr;
    if (have) {
      /* Shared connector: the outer memlet counts this access too. */
      for (guint e = 0; e < s->edges->len; e++) {
        WeirMemlet *o = g_ptr_array_index(s->edges, e);
        if ((in && o->dst == entry->id && g_strcmp0(o->dst_conn, ic) == 0) ||
            (!in && o->src == exit->id && g_strcmp0(o->src_conn, oc) == 0)) {
          g_autoptr(WeirExpr) add = weir_expr_mul(inner->volume, size);
          g_autoptr(WeirExpr) v = weir_expr_add(o->volume, add);
          weir_memlet_set_volume(o, v);
        }
      }
      continue;
    }
    WeirMemlet *outer =
        in ? t3_edge(g, s, port->access->id, NULL, entry->id, ic, x, full_text)
           : t3_edge(g, s, exit->id, oc, port->access->id, NULL, x, full_text);
    g_autoptr(WeirExpr) v = weir_expr_mul(inner->volume, size);
    weir_memlet_set_volume(outer, v);
    outer->wcr = port->wcr;
  }
  if (n_ins == 0) /* keeps the tasklet inside the scope */
    t3_edge(g, s, entry->id, NULL, t->id, NULL, NULL, NULL);
  if (exit_out)
    *exit_out = exit;
  if (tasklet_out)
    *tasklet_out = t;
  return entry;
}

static inline WeirContainer *t3_array(WeirGraph *g, const char *name,
                                      const char *shape, gboolean transient) {
  g_autoptr(GError) error = NULL;
  WeirContainer *c =
      weir_graph_add_array(g, name, WEIR_DTYPE_F32, shape, transient, &error);
  if (!c)
    fail_msg("container: %s", error->message);
  return c;
}

#endif
