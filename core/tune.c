/* tune.c — the auto-tuner (weir-tune.h): one-node programs, candidates,
 * checking against the reference, timing, and the tuning database.
 */
#include <math.h>
#include <string.h>

#include "weir-analysis.h"
#include "weir-evaluate.h"
#include "weir-native.h"
#include "weir-tune.h"
#include "weir-validate.h"

#define DEFAULT_RTOL 1e-3
#define DEFAULT_ATOL 1e-3
#define DEFAULT_INTERPRET_FLOPS 20000000ull
/* a candidate this much slower than the best so far keeps its one checked
 * run as its time */
#define SLOW_FACTOR 4.0
/* timed runs of one candidate take about this long at most */
#define TIMING_SECONDS 0.5

static void signature_free(WeirTuneSignature *t) {
  if (!t)
    return;
  g_free(t->key);
  g_free(t->op);
  g_free(t->label);
  g_free(t->shape);
  g_free(t->first_impl);
  g_free(t->best_impl);
  g_free(t->best_params);
  if (t->candidates)
    g_ptr_array_unref(t->candidates);
  g_free(t);
}

void weir_tune_report_free(WeirTuneReport *r) {
  if (!r)
    return;
  if (r->signatures)
    g_ptr_array_unref(r->signatures);
  g_free(r->db_path);
  g_free(r);
}

/* ------------------------------------------------------ one-node program */

static WeirContainer *copy_container(WeirGraph *ng, const WeirContainer *c,
                                     GError **error) {
  WeirContainer *have = weir_graph_container(ng, c->name);
  if (have)
    return have;
  /* constants keep their data (bound when the kernel is loaded, as in the
   * model); everything else becomes an argument of random values */
  WeirContainer *nc = weir_graph_add_container(
      ng, c->name, c->dtype, c->shape->len, (WeirExpr *const *)c->shape->pdata,
      c->initial ? c->transient : FALSE, error);
  if (!nc)
    return NULL;
  weir_container_set_strides(nc, (WeirExpr *const *)c->strides->pdata);
  if (c->initial)
    weir_container_set_initial(nc, c->initial);
  return nc;
}

WeirGraph *weir_tune_node_program(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, GError **error) {
  g_return_val_if_fail(g && s && n && n->kind == WEIR_NODE_LIBRARY, NULL);
  g_autofree char *name = g_strdup_printf("tune_%s", n->op);
  g_autoptr(WeirGraph) ng = weir_graph_new(name);
  for (guint i = 0; i < g->symbols->len; i++)
    weir_graph_add_symbol(ng, g_ptr_array_index(g->symbols, i));
  WeirState *ns = weir_graph_add_state(ng, "node");
  WeirNode *nn = weir_state_add_library(ng, ns, n->label, n->op, NULL, NULL);
  for (guint i = 0; i < n->in_conns->len; i++)
    weir_node_add_in_conn(nn, g_ptr_array_index(n->in_conns, i));
  for (guint i = 0; i < n->out_conns->len; i++)
    weir_node_add_out_conn(nn, g_ptr_array_index(n->out_conns, i));
  weir_node_copy_attrs(nn, n);
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    gboolean in = m->dst == n->id, out = m->src == n->id;
    if (!(in || out) || !m->data)
      continue;
    const WeirContainer *c = weir_graph_container(g, m->data);
    if (!c || !copy_container(ng, c, error))
      return NULL;
    WeirNode *a = weir_state_add_access(ng, ns, c->name);
    g_autofree char *subset = weir_subset_to_string(m->subset);
    WeirMemlet *nm =
        in ? weir_state_add_memlet(ng, ns, a->id, NULL, nn->id, m->dst_conn,
                                   c->name, subset, error)
           : weir_state_add_memlet(ng, ns, nn->id, m->src_conn, a->id, NULL,
                                   c->name, subset, error);
    if (!nm)
      return NULL;
    nm->wcr = m->wcr;
  }
  if (!weir_graph_validate(ng, error)) {
    g_prefix_error(error,
                   "one-node program of '%s' (%s): ", n->label ? n->label : "",
                   n->op);
    return NULL;
  }
  return g_steal_pointer(&ng);
}

/* ------------------------------------------------------------ candidates */

typedef struct {
  char *impl;
  char *params; /* "" for the defaults */
} Candidate;

static void candidate_free(Candidate *c) {
  g_free(c->impl);
  g_free(c->params);
  g_free(c);
}

static void add_candidate(GPtrArray *list, const char *impl,
                          const char *params) {
  for (guint i = 0; i < list->len; i++) {
    const Candidate *c = g_ptr_array_index(list, i);
    if (strcmp(c->impl, impl) == 0 && strcmp(c->params, params) == 0)
      return;
  }
  Candidate *c = g_new0(Candidate, 1);
  c->impl = g_strdup(impl);
  c->params = g_strdup(params);
  g_ptr_array_add(list, c);
}

/* impl with its default parameters, then each value of each parameter. */
static void add_impl(GPtrArray *list, const WeirNativeImpl *ni,
                     const char *impl) {
  add_candidate(list, impl, "");
  for (guint p = 0; ni && p < ni->n_params; p++)
    for (guint v = 0; v < ni->params[p].n_values; v++) {
      g_autofree char *text = g_strdup_printf(
          "%s=%" G_GINT64_FORMAT, ni->params[p].name, ni->params[p].values[v]);
      add_candidate(list, impl, text);
    }
}

/* The candidates for node n (of the one-node program g), in the order
 * tried: the current choice, the other native implementations by name,
 * "pure". */
static GPtrArray *node_candidates(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n) {
  GPtrArray *list =
      g_ptr_array_new_with_free_func((GDestroyNotify)candidate_free);
  const char *first = weir_native_chosen(g, s, n);
  const WeirNativeImpl *fni = weir_native_lookup(n->op, first);
  if (fni) {
    g_autofree char *params = weir_native_params_text(n);
    add_candidate(list, first, params); /* as the program has it */
    add_impl(list, fni, first);
  }
  g_auto(GStrv) all = weir_native_impls();
  gsize oplen = strlen(n->op);
  for (guint i = 0; all[i]; i++) {
    if (strncmp(all[i], n->op, oplen) != 0 || all[i][oplen] != '/')
      continue;
    const char *impl = all[i] + oplen + 1;
    const WeirNativeImpl *ni = weir_native_lookup(n->op, impl);
    g_autofree char *reason = NULL;
    if (ni && ni->accepts(g, s, n, &reason))
      add_impl(list, ni, impl);
  }
  add_candidate(list, "pure", "");
  return list;
}

/* Whether some native implementation accepts n. */
static gboolean tunable(const WeirGraph *g, const WeirState *s,
                        const WeirNode *n) {
  if (n->kind != WEIR_NODE_LIBRARY || !n->op)
    return FALSE;
  g_auto(GStrv) all = weir_native_impls();
  gsize oplen = strlen(n->op);
  for (guint i = 0; all[i]; i++) {
    if (strncmp(all[i], n->op, oplen) != 0 || all[i][oplen] != '/')
      continue;
    const WeirNativeImpl *ni = weir_native_lookup(n->op, all[i] + oplen + 1);
    g_autofree char *reason = NULL;
    if (ni && ni->accepts(g, s, n, &reason))
      return TRUE;
  }
  return FALSE;
}

/* ------------------------------------------------------------- the tuner */

typedef struct {
  char *key;
  char *signature;
  WeirGraph *program; /* one-node */
  guint n_nodes;
  double flops;
  char *label;
} Work;

static void work_free(Work *w) {
  g_free(w->key);
  g_free(w->signature);
  g_free(w->label);
  if (w->program)
    weir_graph_free(w->program);
  g_free(w);
}

static int compare_work(gconstpointer a, gconstpointer b) {
  const Work *x = *(Work *const *)a, *y = *(Work *const *)b;
  double fx = x->flops * x->n_nodes, fy = y->flops * y->n_nodes;
  if (fx != fy)
    return fx > fy ? -1 : 1;
  return strcmp(x->key, y->key);
}

static WeirNode *only_library_node(const WeirGraph *g, WeirState **s) {
  *s = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < (*s)->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index((*s)->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY)
      return n;
  }
  return NULL;
}

typedef struct {
  const WeirTuneOptions *o;
  WeirTuneProgressFunc progress;
  gpointer user;
  gint64 t0;
} Ctx;

static void say(Ctx *c, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void say(Ctx *c, const char *fmt, ...) {
  if (!c->progress)
    return;
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *line = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  c->progress(line, c->user);
}

static double elapsed(const Ctx *c) {
  return (double)(g_get_monotonic_time() - c->t0) / 1e6;
}

static gboolean out_of_budget(const Ctx *c) {
  return c->o->budget_seconds > 0 && elapsed(c) >= c->o->budget_seconds;
}

/* The program of candidate cand: a copy of w's with the node's choice. */
static WeirGraph *candidate_program(const Work *w, const Candidate *cand,
                                    GError **error) {
  g_autoptr(WeirGraph) g = weir_graph_copy(w->program);
  WeirState *s;
  WeirNode *n = only_library_node(g, &s);
  weir_node_set_attr_string(n, "impl", cand->impl);
  const WeirNativeImpl *ni = weir_native_lookup(n->op, cand->impl);
  if (!weir_native_set_params(n, ni, cand->params, error))
    return NULL;
  return g_steal_pointer(&g);
}

static WeirTuningRecord *new_record(const Work *w, const char *hw,
                                    const Candidate *cand) {
  WeirTuningRecord *r = g_new0(WeirTuningRecord, 1);
  WeirState *s;
  const WeirNode *n = only_library_node(w->program, &s);
  r->key = g_strdup(w->key);
  r->signature = g_strdup(w->signature);
  r->hw = g_strdup(hw);
  r->op = g_strdup(n->op);
  r->impl = g_strdup(cand->impl);
  r->params = g_strdup(cand->params);
  r->max_abs_error = -1;
  r->message = g_strdup("");
  return r;
}

static void set_failed(WeirTuningRecord *r, WeirTuningStatus st,
                       const char *msg) {
  r->status = st;
  g_free(r->message);
  r->message = g_strdup(msg);
}

/* The outputs of the node (containers written by it), from ev's. */
static GHashTable *output_tensors(const WeirGraph *g, GHashTable *outputs) {
  GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                        (GDestroyNotify)weir_tensor_free);
  WeirState *s;
  const WeirNode *n = only_library_node(g, &s);
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->src != n->id || !m->data)
      continue;
    const WeirTensor *x = g_hash_table_lookup(outputs, m->data);
    if (x)
      g_hash_table_replace(t, g_strdup(m->data), weir_tensor_copy(x));
  }
  return t;
}

/* Runs candidate cand once against expected and times it; fills r. */
static void try_candidate(Ctx *c, const Work *w, const Candidate *cand,
                          GHashTable *expected, double best,
                          WeirTuningRecord *r) {
  const WeirTuneOptions *o = c->o;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = candidate_program(w, cand, &error);
  if (!g) {
    set_failed(r, WEIR_TUNING_FAILED, error->message);
    return;
  }
  WeirEvaluateOptions eo = {
      .seed = o->seed ? o->seed : 1,
      .rtol = o->rtol > 0 || o->atol > 0 ? o->rtol : DEFAULT_RTOL,
      .atol = o->rtol > 0 || o->atol > 0 ? o->atol : DEFAULT_ATOL,
      .compile = o->compile,
      .expected = expected,
      .no_timing = TRUE,
      .threads = (int)o->threads,
  };
  WeirEvaluation ev;
  if (!weir_evaluate(g, NULL, o->bindings, &eo, NULL, NULL, NULL, &ev,
                     &error)) {
    set_failed(r, WEIR_TUNING_FAILED, error->message);
    return;
  }
  r->max_abs_error = ev.max_abs_error;
  double first = ev.first_run_seconds;
  gboolean matches = ev.matches;
  g_autofree char *mismatch = g_strdup(ev.mismatch);
  weir_evaluation_clear(&ev);
  if (!matches) {
    g_autofree char *msg =
        g_strdup_printf("outputs differ from the reference: %s",
                        mismatch ? mismatch : "(no detail)");
    set_failed(r, WEIR_TUNING_REJECTED, msg);
    return;
  }
  r->status = WEIR_TUNING_OK;
  if (best > 0 && first > SLOW_FACTOR * best) {
    /* the checked run pays for first touches and library start-up: one
     * more run decides whether the candidate is worth timing */
    eo.expected = NULL;
    eo.no_timing = FALSE;
    eo.warmup = 0;
    eo.repetitions = 1;
    if (!weir_evaluate(g, NULL, o->bindings, &eo, NULL, NULL, NULL, &ev,
                       &error)) {
      set_failed(r, WEIR_TUNING_FAILED, error->message);
      return;
    }
    double second = ev.bench.median;
    weir_evaluation_clear(&ev);
    if (second > SLOW_FACTOR * best) {
      r->median_s = second;
      r->runs = 1;
      g_free(r->message);
      r->message = g_strdup_printf(
          "timed once after its checked run: more than %gx the best so far",
          SLOW_FACTOR);
      return;
    }
    first = second;
  }
  guint reps = o->repetitions ? o->repetitions : 10;
  if (first > 0)
    reps = (guint)CLAMP(TIMING_SECONDS / first, 3.0, (double)reps);
  eo.expected = NULL;
  eo.no_timing = FALSE;
  eo.warmup = o->warmup ? o->warmup : 1;
  eo.repetitions = reps;
  if (!weir_evaluate(g, NULL, o->bindings, &eo, NULL, NULL, NULL, &ev,
                     &error)) {
    set_failed(r, WEIR_TUNING_FAILED, error->message);
    return;
  }
  r->median_s = ev.bench.median;
  r->runs = reps;
  weir_evaluation_clear(&ev);
}

/* The reference outputs of w: the pure expansion compiled, checked against
 * the interpreter when the node is small.  NULL with a message when the
 * reference itself cannot be computed. */
static GHashTable *reference_outputs(Ctx *c, const Work *w, char **message) {
  const WeirTuneOptions *o = c->o;
  g_autoptr(GError) error = NULL;
  Candidate pure = {.impl = "pure", .params = ""};
  g_autoptr(WeirGraph) g = candidate_program(w, &pure, &error);
  guint64 limit =
      o->interpret_max_flops ? o->interpret_max_flops : DEFAULT_INTERPRET_FLOPS;
  gboolean interp = w->flops > 0 && w->flops <= (double)limit;
  WeirEvaluateOptions eo = {
      .seed = o->seed ? o->seed : 1,
      .rtol = o->rtol > 0 || o->atol > 0 ? o->rtol : DEFAULT_RTOL,
      .atol = o->rtol > 0 || o->atol > 0 ? o->atol : DEFAULT_ATOL,
      .compile = o->compile,
      .no_timing = TRUE,
      .reference_interpreted = interp,
      .threads = (int)o->threads,
  };
  WeirEvaluation ev;
  if (!g || !weir_evaluate(g, interp ? g : NULL, o->bindings, &eo, NULL, NULL,
                           NULL, &ev, &error)) {
    *message = g_strdup_printf("reference (pure expansion): %s",
                               error ? error->message : "?");
    return NULL;
  }
  if (interp && !ev.matches) {
    *message = g_strdup_printf("the compiled pure expansion differs from the "
                               "interpreter: %s",
                               ev.mismatch ? ev.mismatch : "?");
    weir_evaluation_clear(&ev);
    return NULL;
  }
  GHashTable *t = output_tensors(g, ev.outputs);
  weir_evaluation_clear(&ev);
  return t;
}

/* Times the candidate of r again (a second round, after every other
 * candidate ran) and keeps the better median: a burst of load during one
 * candidate's runs then does not decide alone. */
static void retime(Ctx *c, const Work *w, WeirTuningRecord *r) {
  const WeirTuneOptions *o = c->o;
  Candidate cand = {.impl = r->impl, .params = r->params};
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = candidate_program(w, &cand, &error);
  if (!g)
    return;
  WeirEvaluateOptions eo = {
      .seed = o->seed ? o->seed : 1,
      .compile = o->compile,
      .threads = (int)o->threads,
      .warmup = o->warmup ? o->warmup : 1,
      .repetitions = r->runs,
  };
  WeirEvaluation ev;
  if (!weir_evaluate(g, NULL, o->bindings, &eo, NULL, NULL, NULL, &ev, &error))
    return;
  double again = ev.bench.median;
  weir_evaluation_clear(&ev);
  g_free(r->message);
  r->message =
      g_strdup_printf("best of 2 rounds: %.6g s, %.6g s", r->median_s, again);
  r->median_s = MIN(r->median_s, again);
}

static int compare_median(gconstpointer a, gconstpointer b) {
  const WeirTuningRecord *x = *(WeirTuningRecord *const *)a;
  const WeirTuningRecord *y = *(WeirTuningRecord *const *)b;
  return (x->median_s > y->median_s) - (x->median_s < y->median_s);
}

static char *first_output_shape(const WeirGraph *g) {
  WeirState *s;
  const WeirNode *n = only_library_node(g, &s);
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  if (!y)
    return g_strdup("?");
  GString *t = g_string_new(weir_dtype_name(y->dtype));
  g_string_append_c(t, '[');
  for (guint d = 0; d < y->shape->len; d++) {
    g_autofree char *x = weir_expr_to_string(g_ptr_array_index(y->shape, d));
    g_string_append_printf(t, "%s%s", d ? ", " : "", x);
  }
  g_string_append_c(t, ']');
  return g_string_free(t, FALSE);
}

static WeirTuneSignature *tune_one(Ctx *c, WeirTuningDb *db, const char *hw,
                                   const Work *w, WeirTuneReport *rep,
                                   GError **error) {
  WeirTuneSignature *t = g_new0(WeirTuneSignature, 1);
  WeirState *s;
  const WeirNode *n = only_library_node(w->program, &s);
  t->key = g_strdup(w->key);
  t->op = g_strdup(n->op);
  t->label = g_strdup(w->label);
  t->shape = first_output_shape(w->program);
  t->n_nodes = w->n_nodes;
  t->flops = w->flops;
  t->candidates =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_tuning_record_free);
  t->first_impl = g_strdup(weir_native_chosen(w->program, s, n));
  g_autoptr(GPtrArray) cands = node_candidates(w->program, s, n);
  say(c, "%.12s %s '%s' %s (%u node%s, %u candidates)", w->key, n->op, w->label,
      t->shape, w->n_nodes, w->n_nodes == 1 ? "" : "s", cands->len);
  g_autofree char *why = NULL;
  g_autoptr(GHashTable) expected = reference_outputs(c, w, &why);
  if (!expected) {
    say(c, "  no reference: %s", why);
    t->complete = FALSE;
    return t;
  }
  double best = 0;
  guint i;
  for (i = 0; i < cands->len; i++) {
    if (out_of_budget(c)) {
      rep->out_of_budget = TRUE;
      break;
    }
    const Candidate *cand = g_ptr_array_index(cands, i);
    WeirTuningRecord *r = new_record(w, hw, cand);
    try_candidate(c, w, cand, expected, best, r);
    rep->n_candidates++;
    if (r->status == WEIR_TUNING_REJECTED)
      rep->n_rejected++;
    if (r->status == WEIR_TUNING_FAILED)
      rep->n_failed++;
    if (r->status == WEIR_TUNING_OK && (best == 0 || r->median_s < best))
      best = r->median_s;
    if (r->status == WEIR_TUNING_OK)
      say(c, "  %-8s %-16s %10.3f ms  (max error %.2g, %u run%s)", r->impl,
          *r->params ? r->params : "-", r->median_s * 1e3, r->max_abs_error,
          r->runs, r->runs == 1 ? "" : "s");
    else
      say(c, "  %-8s %-16s %s: %s", r->impl, *r->params ? r->params : "-",
          weir_tuning_status_name(r->status), r->message);
    g_ptr_array_add(t->candidates, r);
    if (!weir_tuning_db_put(db, r, error)) {
      signature_free(t);
      return NULL;
    }
  }
  t->complete = i == cands->len;
  /* a second round for the two fastest that were fully timed */
  g_autoptr(GPtrArray) timed = g_ptr_array_new();
  for (guint k = 0; k < t->candidates->len; k++) {
    WeirTuningRecord *r = g_ptr_array_index(t->candidates, k);
    if (r->status == WEIR_TUNING_OK && r->runs > 1)
      g_ptr_array_add(timed, r);
  }
  g_ptr_array_sort(timed, compare_median);
  for (guint k = 0; k < MIN(timed->len, 2) && timed->len > 1; k++) {
    if (out_of_budget(c)) {
      rep->out_of_budget = TRUE;
      break;
    }
    WeirTuningRecord *r = g_ptr_array_index(timed, k);
    retime(c, w, r);
    say(c, "  %-8s %-16s %10.3f ms  (second round; %s)", r->impl,
        *r->params ? r->params : "-", r->median_s * 1e3, r->message);
    if (!weir_tuning_db_put(db, r, error)) {
      signature_free(t);
      return NULL;
    }
  }
  for (guint k = 0; k < t->candidates->len; k++) {
    const WeirTuningRecord *r = g_ptr_array_index(t->candidates, k);
    if (k == 0 && r->status == WEIR_TUNING_OK)
      t->first_s = r->median_s;
    if (r->status == WEIR_TUNING_OK &&
        (!t->best_impl || r->median_s < t->best_s)) {
      g_free(t->best_impl);
      g_free(t->best_params);
      t->best_impl = g_strdup(r->impl);
      t->best_params = g_strdup(r->params);
      t->best_s = r->median_s;
    }
  }
  return t;
}

gboolean weir_tune(const WeirGraph *program, const WeirTuneOptions *opts,
                   WeirTuneProgressFunc progress, gpointer user,
                   WeirTuneReport **report, GError **error) {
  g_return_val_if_fail(program && report, FALSE);
  *report = NULL;
  WeirTuneOptions o = opts ? *opts : (WeirTuneOptions){0};
  if (!o.threads)
    o.threads = weir_tuning_default_threads();
  Ctx c = {.o = &o,
           .progress = progress,
           .user = user,
           .t0 = g_get_monotonic_time()};
  g_autoptr(WeirTuningDb) db = weir_tuning_db_open(o.db_path, TRUE, error);
  if (!db)
    return FALSE;
  g_autoptr(WeirTuneReport) rep = g_new0(WeirTuneReport, 1);
  rep->db_path = g_strdup(weir_tuning_db_file(db));
  rep->signatures =
      g_ptr_array_new_with_free_func((GDestroyNotify)signature_free);

  /* the work: one entry per signature, in decreasing order of FLOPs */
  g_autoptr(GPtrArray) work =
      g_ptr_array_new_with_free_func((GDestroyNotify)work_free);
  g_autoptr(GHashTable) by_key = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < program->states->len; i++) {
    const WeirState *s = g_ptr_array_index(program->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (!tunable(program, s, n))
        continue;
      rep->n_nodes++;
      g_autofree char *key = NULL;
      g_autofree char *sig =
          weir_tuning_signature(program, s, n, o.threads, &key);
      Work *w = g_hash_table_lookup(by_key, key);
      if (w) {
        w->n_nodes++;
        continue;
      }
      w = g_new0(Work, 1);
      w->key = g_steal_pointer(&key);
      w->signature = g_steal_pointer(&sig);
      w->n_nodes = 1;
      w->label = g_strdup(n->label ? n->label : "");
      w->program = weir_tune_node_program(program, s, n, error);
      if (!w->program) {
        work_free(w);
        return FALSE;
      }
      g_autoptr(GError) local = NULL;
      g_autoptr(WeirAnalysis) a =
          weir_analysis_compute(w->program, o.bindings, &local);
      if (a && a->total_flops.known)
        w->flops = (double)a->total_flops.value;
      g_ptr_array_add(work, w);
      g_hash_table_insert(by_key, w->key, w);
    }
  }
  g_ptr_array_sort(work, compare_work);
  say(&c, "%u tunable node%s, %u signature%s, %u thread%s, database %s",
      rep->n_nodes, rep->n_nodes == 1 ? "" : "s", work->len,
      work->len == 1 ? "" : "s", o.threads, o.threads == 1 ? "" : "s",
      rep->db_path);
  g_autofree char *hw = weir_tuning_hw_identity();
  for (guint i = 0; i < work->len; i++) {
    if (out_of_budget(&c)) {
      rep->out_of_budget = TRUE;
      say(&c, "budget of %g s used up: %u signature%s not tuned",
          o.budget_seconds, work->len - i, work->len - i == 1 ? "" : "s");
      break;
    }
    WeirTuneSignature *t =
        tune_one(&c, db, hw, g_ptr_array_index(work, i), rep, error);
    if (!t)
      return FALSE;
    g_ptr_array_add(rep->signatures, t);
  }
  rep->seconds = elapsed(&c);
  *report = g_steal_pointer(&rep);
  return TRUE;
}
