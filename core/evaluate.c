/* evaluate.c — compile, run, validate and time (weir-evaluate.h). */
#include "weir-evaluate.h"

#include <json-c/json.h>
#include <time.h>

#include "weir-codegen.h"
#include "weir-conformance.h"
#include "weir-expand.h"
#include "weir-expr.h"
#include "weir-interp.h"
#include "weir-limits.h"
#include "weir-tensor.h"

static void report(WeirProgressFunc progress, gpointer user, double f,
                   const char *phase) {
  if (progress)
    progress(f, phase, user);
}

static char *shape_text(guint rank, const gint64 *shape,
                        const gboolean *known) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < rank; d++) {
    if (d)
      g_string_append(s, ", ");
    if (known && !known[d])
      g_string_append_c(s, '?');
    else
      g_string_append_printf(s, "%" G_GINT64_FORMAT, shape[d]);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static const WeirContainer *find_argument(const WeirGraph *g,
                                          const char *name) {
  g_autoptr(GPtrArray) list = weir_codegen_arguments(g);
  for (guint i = 0; i < list->len; i++) {
    const WeirContainer *c = g_ptr_array_index(list, i);
    if (g_str_equal(c->name, name))
      return c;
  }
  return NULL;
}

gboolean weir_evaluate_check_tensor(const WeirGraph *g, GHashTable *bindings,
                                    const char *what, const char *name,
                                    const WeirTensor *t, GError **error) {
  g_return_val_if_fail(g && name && t, FALSE);
  if (!what)
    what = "tensor";
  const WeirContainer *c = find_argument(g, name);
  if (!c) {
    GString *list = g_string_new(NULL);
    g_autoptr(GPtrArray) args = weir_codegen_arguments(g);
    for (guint i = 0; i < args->len; i++) {
      const WeirContainer *a = g_ptr_array_index(args, i);
      g_string_append_printf(list, "%s%s", i ? ", " : "", a->name);
    }
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s '%s': program '%s' has no argument of that name "
                "(arguments: %s)",
                what, name, g->name, list->len ? list->str : "none");
    g_string_free(list, TRUE);
    return FALSE;
  }
  guint rank = c->shape->len;
  g_autofree gint64 *shape = g_new0(gint64, rank + 1);
  g_autofree gboolean *known = g_new0(gboolean, rank + 1);
  gboolean same = t->rank == rank;
  for (guint d = 0; d < rank; d++) {
    known[d] = weir_expr_eval(g_ptr_array_index(c->shape, d), bindings,
                              &shape[d], NULL);
    if (same && known[d] && shape[d] != t->shape[d])
      same = FALSE;
  }
  if (t->dtype != c->dtype || !same) {
    g_autofree char *want = shape_text(rank, shape, known);
    g_autofree char *have = shape_text(t->rank, t->shape, NULL);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s '%s' is %s%s, but the tensor is %s%s", what, c->name,
                weir_dtype_name(c->dtype), want, weir_dtype_name(t->dtype),
                have);
    return FALSE;
  }
  return TRUE;
}

WeirTensor *weir_evaluate_random_input(const WeirContainer *c,
                                       GHashTable *bindings, guint64 seed,
                                       GError **error) {
  g_return_val_if_fail(c != NULL, NULL);
  g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
  for (guint d = 0; d < c->shape->len; d++) {
    if (!weir_expr_eval(g_ptr_array_index(c->shape, d), bindings, &shape[d],
                        error))
      return NULL;
    if (shape[d] < 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "dimension %u is %" G_GINT64_FORMAT, d, shape[d]);
      return NULL;
    }
  }
  WeirTensor *t = weir_tensor_try_new(c->dtype, c->shape->len, shape, error);
  if (t)
    weir_tensor_fill_random(t, seed + c->id);
  return t;
}

/* Binds the symbols that are whole dimensions of the inputs' containers
 * from their shapes (when not bound yet), as `weir run --input` does. */
static void bind_from_inputs(const WeirGraph *g, GHashTable *inputs,
                             GHashTable *bindings) {
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, inputs);
  while (g_hash_table_iter_next(&it, &key, &value)) {
    const WeirContainer *c = find_argument(g, key);
    const WeirTensor *t = value;
    for (guint d = 0; c && d < c->shape->len && d < t->rank; d++) {
      WeirExpr *e = g_ptr_array_index(c->shape, d);
      if (weir_expr_kind(e) == WEIR_EXPR_SYMBOL &&
          !g_hash_table_contains(bindings, weir_expr_symbol_name(e)))
        weir_bindings_set(bindings, weir_expr_symbol_name(e), t->shape[d]);
    }
  }
}

/* A tensor for every argument container of g, keyed by container name
 * (borrowed from g): a copy of the one given in inputs (checked), else
 * random values. */
static GHashTable *make_arguments(const WeirGraph *g, GHashTable *bindings,
                                  GHashTable *inputs, guint64 seed,
                                  GError **error) {
  if (inputs) {
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, inputs);
    while (g_hash_table_iter_next(&it, &key, &value))
      if (!weir_evaluate_check_tensor(g, bindings, "input", key, value,
                                      error)) {
        g_prefix_error(error, "program '%s': ", g->name);
        return NULL;
      }
  }
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) list = weir_codegen_arguments(g);
  for (guint i = 0; i < list->len; i++) {
    const WeirContainer *c = g_ptr_array_index(list, i);
    const WeirTensor *given =
        inputs ? g_hash_table_lookup(inputs, c->name) : NULL;
    if (given) {
      g_hash_table_insert(args, c->name, weir_tensor_copy(given));
      continue;
    }
    g_autoptr(GError) local = NULL;
    WeirTensor *t = weir_evaluate_random_input(c, bindings, seed, &local);
    if (!t) {
      g_propagate_prefixed_error(error, g_steal_pointer(&local),
                                 "program '%s': argument '%s': ", g->name,
                                 c->name);
      return NULL;
    }
    g_hash_table_insert(args, c->name, t);
  }
  return g_steal_pointer(&args);
}

static void comparison_free(gpointer p) {
  WeirComparison *c = p;
  g_free(c->argument);
  g_free(c->against);
  g_free(c->detail);
  g_free(c);
}

/* Compares got with want (floats within the tolerances, others exactly)
 * into out; the first mismatch is kept. */
static void compare_into(WeirEvaluation *out, const char *name,
                         const WeirTensor *got, const WeirTensor *want,
                         const char *against, const WeirEvaluateOptions *o) {
  gboolean exact = !weir_dtype_is_float(got->dtype);
  double err = 0;
  g_autoptr(GError) diff = NULL;
  gboolean ok = weir_tensor_allclose(got, want, exact ? 0 : o->rtol,
                                     exact ? 0 : o->atol, &err, &diff);
  WeirComparison *c = g_new0(WeirComparison, 1);
  c->argument = g_strdup(name);
  c->against = g_strdup(against);
  c->max_abs_error = err;
  c->rtol = exact ? 0 : o->rtol;
  c->atol = exact ? 0 : o->atol;
  c->ok = ok;
  c->detail = !ok && diff ? g_strdup(diff->message) : NULL;
  g_ptr_array_add(out->comparisons, c);
  out->n_compared++;
  out->max_abs_error = MAX(out->max_abs_error, err);
  if (!ok && out->matches) {
    out->matches = FALSE;
    out->mismatch = g_strdup_printf("argument '%s' (against %s): %s", name,
                                    against, diff ? diff->message : "differs");
  }
}

static gboolean cancelled(GCancellable *cancellable, GError **error) {
  return g_cancellable_set_error_if_cancelled(cancellable, error);
}

/* warmup untimed and repetitions timed runs of k, reporting progress
 * from f0 to f1; the summary goes to *out. */
static gboolean time_runs(WeirKernel *k, GHashTable *bindings, GHashTable *args,
                          const WeirEvaluateOptions *o, const char *who,
                          WeirProgressFunc progress, gpointer user, double f0,
                          double f1, GCancellable *cancellable,
                          WeirBenchResult *out, GError **error) {
  g_autofree double *times = g_new0(double, o->repetitions);
  guint total = o->warmup + o->repetitions;
  for (guint r = 0; r < total; r++) {
    g_autofree char *phase =
        r < o->warmup
            ? g_strdup_printf("%swarm-up %u of %u", who, r + 1, o->warmup)
            : g_strdup_printf("%stiming run %u of %u", who, r - o->warmup + 1,
                              o->repetitions);
    report(progress, user, f0 + (f1 - f0) * r / total, phase);
    if (cancelled(cancellable, error))
      return FALSE;
    /* nanoseconds: g_get_monotonic_time's microseconds round a small
     * kernel's run down to 0 */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!weir_kernel_run(k, bindings, args, error))
      return FALSE;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (r >= o->warmup)
      times[r - o->warmup] = (double)(t1.tv_sec - t0.tv_sec) +
                             (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  }
  weir_bench_summarize(times, o->repetitions, out);
  return TRUE;
}

static gboolean evaluate(const WeirGraph *program, const WeirGraph *reference,
                         GHashTable *bindings, const WeirEvaluateOptions *opts,
                         GCancellable *cancellable, WeirProgressFunc progress,
                         gpointer user, WeirEvaluation *out, GError **error) {
  WeirEvaluateOptions o = opts ? *opts : (WeirEvaluateOptions){0};
  if (o.repetitions == 0)
    o.repetitions = 1;
  if (o.seed == 0)
    o.seed = 1;
  if (o.rtol == 0 && o.atol == 0) {
    o.rtol = WEIR_CONFORMANCE_RTOL;
    o.atol = WEIR_CONFORMANCE_ATOL;
  }
  memset(out, 0, sizeof *out);
  out->comparisons = g_ptr_array_new_with_free_func(comparison_free);
  /* a private copy when inputs may bind symbols */
  g_autoptr(GHashTable) own = NULL;
  if (!bindings || o.inputs) {
    own = weir_bindings_new();
    if (bindings) {
      GHashTableIter it;
      gpointer key, value;
      g_hash_table_iter_init(&it, bindings);
      while (g_hash_table_iter_next(&it, &key, &value))
        weir_bindings_set(own, key, *(const gint64 *)value);
    }
    if (o.inputs)
      bind_from_inputs(program, o.inputs, own);
    bindings = own;
  }
  if (o.expected) {
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, o.expected);
    while (g_hash_table_iter_next(&it, &key, &value))
      if (!weir_evaluate_check_tensor(program, bindings, "expected output", key,
                                      value, error)) {
        g_prefix_error(error, "program '%s': ", program->name);
        return FALSE;
      }
  }

  /* The fractions: compiling dominates a cold run, timing a warm one. */
  const double f_compile = 0.4, f_ref = 0.5, f_runs = 0.95;
  GError *local = NULL;

  report(progress, user, 0.0, "compiling");
  if (cancelled(cancellable, error))
    return FALSE;
  WeirCompileInfo info = {0};
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(WeirKernel) k =
      weir_kernel_compile(program, o.compile, &info, &local);
  out->compile_seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
  out->compiler_seconds = info.compile_seconds;
  out->cache_hit = info.cache_hit;
  out->cache_recovered = info.recovered;
  out->cache_key = g_steal_pointer(&info.key);
  out->key_seconds = info.key_seconds;
  out->codegen_seconds = info.codegen_seconds;
  out->source_bytes = info.source_bytes;
  out->units = info.units;
  weir_compile_info_clear(&info);
  if (!k) {
    g_propagate_prefixed_error(error, local,
                               "compiling program '%s': ", program->name);
    return FALSE;
  }
  if (k && o.threads > 0 && !weir_kernel_set_threads(k, o.threads, &local)) {
    out->threads_error = g_strdup(local->message);
    g_clear_error(&local);
  }
  g_autoptr(WeirKernel) rk = NULL;
  if (reference && !o.reference_interpreted) {
    report(progress, user, f_compile / 2, "compiling the reference");
    if (cancelled(cancellable, error))
      return FALSE;
    rk = weir_kernel_compile(reference, o.compile, NULL, &local);
    if (!rk) {
      g_propagate_prefixed_error(
          error, local,
          "compiling the reference program '%s': ", reference->name);
      return FALSE;
    }
  }

  report(progress, user, f_compile, "preparing inputs");
  if (cancelled(cancellable, error))
    return FALSE;
  if (!weir_graph_check_memory(program, bindings, o.max_memory, error) ||
      (reference &&
       !weir_graph_check_memory(reference, bindings, o.max_memory, error)))
    return FALSE;
  g_autoptr(GHashTable) args =
      make_arguments(program, bindings, o.inputs, o.seed, error);
  if (!args)
    return FALSE;
  g_autoptr(GHashTable) ref_args = NULL;
  if (reference) {
    ref_args = make_arguments(reference, bindings, NULL, o.seed, error);
    if (!ref_args)
      return FALSE;
    /* Same inputs by name: program's random values win, so containers
     * created by transformations with new ids still agree. */
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, ref_args);
    while (g_hash_table_iter_next(&it, &key, &value)) {
      const WeirTensor *mine = g_hash_table_lookup(args, key);
      if (!mine) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "program '%s' has no argument '%s' of the reference "
                    "program",
                    program->name, (const char *)key);
        return FALSE;
      }
      g_hash_table_iter_replace(&it, weir_tensor_copy(mine));
    }
    report(progress, user, f_compile, "running the reference");
    if (o.reference_interpreted) {
      g_autoptr(WeirGraph) expanded = weir_graph_copy(reference);
      gint64 r0 = g_get_monotonic_time();
      if (!weir_expand_all(expanded, NULL, NULL, &local) ||
          !weir_interpret(expanded, bindings, ref_args,
                          &(WeirInterpOptions){.max_memory = o.max_memory},
                          &local)) {
        g_propagate_prefixed_error(error, local, "reference interpreter: ");
        return FALSE;
      }
      out->reference_seconds = (double)(g_get_monotonic_time() - r0) / 1e6;
    } else if (!weir_kernel_run(rk, bindings, ref_args, &local)) {
      g_propagate_prefixed_error(error, local, "running the reference: ");
      return FALSE;
    }
  }

  /* The first run gives the outputs compared below (later runs overwrite
   * the arguments, in-place kernels included). */
  report(progress, user, f_ref, "running");
  if (cancelled(cancellable, error))
    return FALSE;
  g_autoptr(GHashTable) first = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  {
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, args);
    while (g_hash_table_iter_next(&it, &key, &value))
      g_hash_table_insert(first, key, weir_tensor_copy(value));
  }
  struct timespec r0, r1;
  clock_gettime(CLOCK_MONOTONIC, &r0);
  if (!weir_kernel_run(k, bindings, first, &local)) {
    g_propagate_prefixed_error(error, local,
                               "running program '%s': ", program->name);
    return FALSE;
  }
  clock_gettime(CLOCK_MONOTONIC, &r1);
  out->first_run_seconds = (double)(r1.tv_sec - r0.tv_sec) +
                           (double)(r1.tv_nsec - r0.tv_nsec) * 1e-9;

  if (reference || o.expected) {
    out->validated = TRUE;
    out->matches = TRUE;
    g_autoptr(GPtrArray) list = weir_codegen_arguments(program);
    for (guint i = 0; i < list->len; i++) {
      const WeirContainer *c = g_ptr_array_index(list, i);
      const WeirTensor *got = g_hash_table_lookup(first, c->name);
      const WeirTensor *want =
          ref_args ? g_hash_table_lookup(ref_args, c->name) : NULL;
      if (want)
        compare_into(out, c->name, got, want,
                     o.reference_interpreted ? "the interpreter"
                                             : "the original program",
                     &o);
      want = o.expected ? g_hash_table_lookup(o.expected, c->name) : NULL;
      if (want) {
        compare_into(out, c->name, got, want, "the expected output", &o);
        out->n_expected++;
      }
    }
  }

  out->outputs = g_steal_pointer(&first);
  out->constants_bytes = weir_kernel_constants_bytes(k);
  out->prepacked_bytes = weir_kernel_prepacked_bytes(k);
  weir_kernel_workspace(k, &out->workspace_bytes);
  if (o.no_timing) {
    report(progress, user, 1.0, "done");
    return TRUE;
  }
  /* Timing: the program, then the reference with the same warm-up and
   * repetitions, so the two medians compare like with like. */
  const double f_prog =
      reference && !o.reference_interpreted ? (f_ref + f_runs) / 2 : f_runs;
  if (!time_runs(k, bindings, args, &o, "", progress, user, f_ref, f_prog,
                 cancellable, &out->bench, error)) {
    g_prefix_error(error, "program '%s': ", program->name);
    return FALSE;
  }
  if (reference && !o.reference_interpreted) {
    WeirBenchResult rb = {0};
    if (!time_runs(rk, bindings, ref_args, &o, "reference ", progress, user,
                   f_prog, f_runs, cancellable, &rb, error)) {
      g_prefix_error(error, "reference program '%s': ", reference->name);
      return FALSE;
    }
    out->reference_seconds = rb.median;
    weir_bench_result_clear(&rb);
  }
  report(progress, user, 1.0, "done");
  return TRUE;
}

gboolean weir_evaluate(const WeirGraph *program, const WeirGraph *reference,
                       GHashTable *bindings, const WeirEvaluateOptions *opts,
                       GCancellable *cancellable, WeirProgressFunc progress,
                       gpointer user, WeirEvaluation *out, GError **error) {
  g_return_val_if_fail(program != NULL && out != NULL, FALSE);
  if (evaluate(program, reference, bindings, opts, cancellable, progress, user,
               out, error))
    return TRUE;
  weir_evaluation_clear(out);
  return FALSE;
}

void weir_evaluation_clear(WeirEvaluation *e) {
  if (!e)
    return;
  weir_bench_result_clear(&e->bench);
  g_clear_pointer(&e->mismatch, g_free);
  g_clear_pointer(&e->cache_key, g_free);
  g_clear_pointer(&e->outputs, g_hash_table_unref);
  g_clear_pointer(&e->comparisons, g_ptr_array_unref);
  g_clear_pointer(&e->threads_error, g_free);
  memset(e, 0, sizeof *e);
}

char *weir_evaluation_to_json(const WeirEvaluation *e, const char *label) {
  json_object *o = json_object_new_object();
  if (label)
    json_object_object_add(o, "label", json_object_new_string(label));
  json_object_object_add(o, "median_s",
                         json_object_new_double(e->bench.median));
  json_object_object_add(o, "min_s", json_object_new_double(e->bench.min));
  json_object_object_add(o, "max_s", json_object_new_double(e->bench.max));
  json_object_object_add(o, "repetitions",
                         json_object_new_int((int)e->bench.repetitions));
  json_object_object_add(o, "compile_s",
                         json_object_new_double(e->compile_seconds));
  json_object_object_add(o, "cache_hit", json_object_new_boolean(e->cache_hit));
  json_object_object_add(o, "reference_s",
                         json_object_new_double(e->reference_seconds));
  json_object_object_add(o, "validated", json_object_new_boolean(e->validated));
  json_object_object_add(o, "matches", json_object_new_boolean(e->matches));
  json_object_object_add(o, "max_abs_error",
                         json_object_new_double(e->max_abs_error));
  char *text =
      g_strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
  json_object_put(o);
  return text;
}

gboolean weir_evaluation_median_from_json(const char *json, double *median_s) {
  if (!json)
    return FALSE;
  json_object *o = json_tokener_parse(json);
  json_object *m = NULL;
  gboolean ok = o && json_object_object_get_ex(o, "median_s", &m) &&
                (json_object_is_type(m, json_type_double) ||
                 json_object_is_type(m, json_type_int));
  if (ok && median_s)
    *median_s = json_object_get_double(m);
  json_object_put(o);
  return ok;
}

/* "12.3 us", "4.567 ms", "1.234 s" (as the command line prints them). */
static char *format_seconds(double s) {
  if (s < 1e-3)
    return g_strdup_printf("%.1f us", s * 1e6);
  if (s < 1.0)
    return g_strdup_printf("%.3f ms", s * 1e3);
  return g_strdup_printf("%.3f s", s);
}

static double get_double(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v)
                                               : 0.0;
}

static gboolean get_bool(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) && json_object_get_boolean(v);
}

char *weir_evaluation_describe_json(const char *json) {
  double median = 0;
  if (!weir_evaluation_median_from_json(json, &median))
    return NULL;
  json_object *o = json_tokener_parse(json);
  GString *s = g_string_new(NULL);
  json_object *label = NULL;
  if (json_object_object_get_ex(o, "label", &label) &&
      json_object_is_type(label, json_type_string))
    g_string_append_printf(s, "%s: ", json_object_get_string(label));
  g_autofree char *m = format_seconds(median);
  g_string_append(s, m);
  double ref = get_double(o, "reference_s");
  if (ref > 0 && median > 0) {
    g_autofree char *r = format_seconds(ref);
    double ratio = ref / median;
    if (ratio >= 1.0)
      g_string_append_printf(s, " (original %s, %.2fx faster)", r, ratio);
    else
      g_string_append_printf(s, " (original %s, %.2fx slower)", r, 1.0 / ratio);
  }
  if (get_bool(o, "validated"))
    g_string_append(s, get_bool(o, "matches") ? ", outputs match"
                                              : ", OUTPUTS DIFFER");
  json_object_put(o);
  return g_string_free(s, FALSE);
}
