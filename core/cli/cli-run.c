/* cli-run.c — running programs: `weir run-ref` (the reference
 * interpreter), `weir run` (compiled, through the compile cache, checked
 * against files or the interpreter) and `weir bench` (compile and run
 * times).  run and bench compile, run, compare and time through
 * weir_evaluate; this file loads the tensor files, prints, and compares
 * with --expect files (shared with run-ref).  Random inputs are the same in
 * the three for the same seed (weir_evaluate_random_input). */
#include <glib/gstdio.h>
#include <string.h>

#include "cli.h"
#include "weir-hw.h"

/* ------------------------------------------------- inputs and outputs */

/* A tensor file per --input, keyed by the name given. */
typedef struct {
  char *name;
  char *file;
  WeirTensor *tensor;
} TensorSpec;

static void tensor_spec_free(gpointer p) {
  TensorSpec *t = p;
  g_free(t->name);
  g_free(t->file);
  weir_tensor_free(t->tensor);
  g_free(t);
}

/* Binds the symbols that are whole dimensions of c from the shape of t. */
static void bind_from_tensor(const WeirContainer *c, const WeirTensor *t,
                             GHashTable *bindings) {
  for (guint d = 0; d < c->shape->len && d < t->rank; d++) {
    WeirExpr *e = g_ptr_array_index(c->shape, d);
    if (weir_expr_kind(e) == WEIR_EXPR_SYMBOL &&
        !g_hash_table_contains(bindings, weir_expr_symbol_name(e)))
      weir_bindings_set(bindings, weir_expr_symbol_name(e), t->shape[d]);
  }
}

static char *tensor_shape_text(const WeirTensor *t) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < t->rank; d++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? ", " : "",
                           t->shape[d]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* A program loaded for a run with its arguments. */
typedef struct {
  WeirGraph *g;
  GHashTable *names;  /* ONNX name -> container name */
  GHashTable *args;   /* container name (borrowed from g) -> WeirTensor* */
  guint expanded;     /* library nodes expanded */
  guint level;        /* optimization level applied (weir-pipeline.h) */
  guint applied;      /* transformations its pipeline applied */
  guint64 max_memory; /* --max-memory in bytes (0: the physical memory) */
  double import_s;    /* reading/importing the file */
  double optimize_s;  /* the pipeline of `level` */
} Prepared;

static void prepared_clear(Prepared *p) {
  g_clear_pointer(&p->args, g_hash_table_unref);
  g_clear_pointer(&p->names, g_hash_table_unref);
  g_clear_pointer(&p->g, weir_graph_free);
}

/* Loads file (an ONNX model is imported with the shapes of the --input
 * tensors), applies the pipeline of optimization level p->level (0: none),
 * expands its library nodes when expand is set, binds the --input
 * tensors (symbols that are whole dimensions are bound from their shapes)
 * and fills the other arguments with random values: every non-transient
 * container, or with abi_only only the arguments of compiled code (not the
 * constants).  Returns 0, or the exit status after printing the problem. */
static int prepare_run(const char *cmd, const char *file, GHashTable *bindings,
                       char **impls, const CliTensors *io, gboolean expand,
                       gboolean abi_only, Prepared *p) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) ins = g_ptr_array_new_with_free_func(tensor_spec_free);
  for (guint i = 0; io->inputs && io->inputs[i]; i++) {
    TensorSpec *t = g_new0(TensorSpec, 1);
    g_ptr_array_add(ins, t);
    if (!cli_split_spec(cmd, "input", io->inputs[i], &t->name, &t->file))
      return 2;
    t->tensor = weir_tensor_load(t->file, NULL, &error);
    if (!t->tensor) {
      cli_print_error(cmd, error);
      return 1;
    }
  }

  p->names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  for (guint i = 0; i < ins->len; i++) {
    TensorSpec *t = g_ptr_array_index(ins, i);
    GArray *shape = g_array_new(FALSE, FALSE, sizeof(gint64));
    g_array_append_vals(shape, t->tensor->shape, t->tensor->rank);
    g_hash_table_replace(shapes, t->name, shape);
  }
  WeirOnnxImportOptions opts = {
      .symbols = bindings, .input_shapes = shapes, .names = p->names};
  gint64 t0 = g_get_monotonic_time();
  p->g = cli_load_program(cmd, file, &opts, impls);
  if (!p->g)
    return 1;
  gint64 t1 = g_get_monotonic_time();
  if (!cli_optimize(cmd, file, p->g, p->level, bindings, &p->applied))
    return 1;
  p->import_s = (double)(t1 - t0) / 1e6;
  p->optimize_s = (double)(g_get_monotonic_time() - t1) / 1e6;
  if (expand && !weir_expand_all(p->g, NULL, &p->expanded, &error)) {
    fprintf(stderr, "weir %s: %s: %s\n", cmd, file, error->message);
    return 1;
  }
  const WeirGraph *g = p->g;

  p->args = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                  (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < ins->len; i++) {
    TensorSpec *t = g_ptr_array_index(ins, i);
    const WeirContainer *c =
        cli_require_argument(cmd, g, p->names, "input", t->name);
    if (!c)
      return 2;
    if (t->tensor->dtype != c->dtype) {
      fprintf(stderr, "weir %s: %s: dtype %s, but argument '%s' is %s\n", cmd,
              t->file, weir_dtype_name(t->tensor->dtype), c->name,
              weir_dtype_name(c->dtype));
      return 1;
    }
    bind_from_tensor(c, t->tensor, bindings);
    g_hash_table_replace(p->args, c->name, g_steal_pointer(&t->tensor));
  }
  if (!cli_max_memory_limit(cmd, io->max_memory, &p->max_memory))
    return 2;
  if (!weir_graph_check_memory(g, bindings, p->max_memory, &error)) {
    fprintf(stderr, "weir %s: %s: %s\n", cmd, file, error->message);
    return 1;
  }
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    const WeirTensor *given = g_hash_table_lookup(p->args, c->name);
    if (abi_only && c->initial && !given)
      continue;
    g_autoptr(GError) local = NULL;
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    for (guint d = 0; d < c->shape->len; d++) {
      if (!weir_expr_eval(g_ptr_array_index(c->shape, d), bindings, &shape[d],
                          &local)) {
        fprintf(stderr,
                "weir %s: %s: container '%s': %s (bind it with "
                "-D or give the argument with --input)\n",
                cmd, file, c->name, local->message);
        return 2;
      }
    }
    if (!given) {
      WeirTensor *tensor =
          weir_evaluate_random_input(c, bindings, (guint64)io->seed, &local);
      if (!tensor) {
        fprintf(stderr, "weir %s: %s: container '%s': %s\n", cmd, file, c->name,
                local->message);
        return 1;
      }
      g_hash_table_insert(p->args, c->name, tensor);
      continue;
    }
    gboolean same = given->rank == c->shape->len;
    for (guint d = 0; same && d < given->rank; d++)
      same = given->shape[d] == shape[d];
    if (!same) {
      g_autofree char *a = tensor_shape_text(given);
      g_autofree char *b = cli_shape_text(c);
      fprintf(stderr,
              "weir %s: %s: --input for '%s' has shape %s, but the "
              "argument is %s\n",
              cmd, file, c->name, a, b);
      return 1;
    }
  }
  return 0;
}

/* Prints sum, min, max and the first values of each tensor of args, in
 * container order. */
static void print_tensors(const WeirGraph *g, GHashTable *args) {
  CliTable *t = cli_table_new(6);
  cli_table_row(t, g_strdup("argument"), g_strdup("type"), g_strdup("sum"),
                g_strdup("min"), g_strdup("max"), g_strdup("first values"));
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    const WeirTensor *x = g_hash_table_lookup(args, c->name);
    if (c->transient || !x)
      continue;
    double sum = 0, lo = G_MAXDOUBLE, hi = -G_MAXDOUBLE;
    GString *first = g_string_new(NULL);
    for (gint64 k = 0; k < x->count; k++) {
      double v = weir_tensor_get(x, k);
      sum += v;
      lo = MIN(lo, v);
      hi = MAX(hi, v);
      if (k < 4)
        g_string_append_printf(first, "%s%.6g", k ? ", " : "", v);
    }
    if (x->count > 4)
      g_string_append(first, ", ...");
    cli_table_row(t, g_strdup(c->name), weir_tensor_describe(x),
                  g_strdup_printf("%.6g", sum), g_strdup_printf("%.6g", lo),
                  g_strdup_printf("%.6g", hi), g_string_free(first, FALSE));
  }
  cli_table_print(t);
}

/* Compares got with want (float dtypes with the tolerances, others
 * exactly); prints one line "<label>: max abs error ...: ok|MISMATCH". */
static gboolean compare_tensor(const char *label, const WeirTensor *got,
                               const WeirTensor *want, const char *want_name,
                               const CliTensors *io) {
  gboolean exact = !weir_dtype_is_float(got->dtype);
  double r = exact ? 0 : (io->rtol >= 0 ? io->rtol : WEIR_CONFORMANCE_RTOL);
  double a = exact ? 0 : (io->atol >= 0 ? io->atol : WEIR_CONFORMANCE_ATOL);
  double err = 0;
  g_autoptr(GError) diff = NULL;
  gboolean ok = got->dtype == want->dtype && got->rank == want->rank;
  for (guint d = 0; ok && d < got->rank; d++)
    ok = got->shape[d] == want->shape[d];
  if (!ok) {
    g_autofree char *x = weir_tensor_describe(got);
    g_autofree char *y = weir_tensor_describe(want);
    printf("%s: %s, but %s holds %s: MISMATCH\n", label, x, want_name, y);
    return FALSE;
  }
  ok = weir_tensor_allclose(got, want, r, a, &err, &diff);
  printf("%s: max abs error %.3g (rtol %g, atol %g): %s\n", label, err, r, a,
         ok ? "ok" : "MISMATCH");
  if (!ok)
    printf("  %s\n", diff->message);
  return ok;
}

/* The --expect comparisons; returns the exit status (0, 1 on a mismatch,
 * 2 on bad usage). */
static int check_expects(const char *cmd, const CliTensors *io,
                         const Prepared *p) {
  int status = 0;
  for (guint i = 0; io->expects && io->expects[i]; i++) {
    g_autofree char *name = NULL, *path = NULL;
    if (!cli_split_spec(cmd, "expect", io->expects[i], &name, &path))
      return 2;
    const WeirContainer *c =
        cli_require_argument(cmd, p->g, p->names, "expect", name);
    if (!c)
      return 2;
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirTensor) want = weir_tensor_load(path, NULL, &error);
    if (!want) {
      cli_print_error(cmd, error);
      return 1;
    }
    const WeirTensor *got = g_hash_table_lookup(p->args, c->name);
    if (!got) {
      fprintf(stderr, "weir %s: --expect %s: '%s' is a constant\n", cmd, name,
              c->name);
      return 2;
    }
    /* An output of a data-dependent length: its valid part. */
    g_autoptr(WeirTensor) valid =
        weir_container_trim(p->g, c, got, p->args, &error);
    if (!valid) {
      cli_print_error(cmd, error);
      return 1;
    }
    if (!compare_tensor(c->name, valid, want, path, io))
      status = 1;
  }
  return status;
}

/* The --output files; returns the exit status. */
static int write_outputs(const char *cmd, const CliTensors *io,
                         const Prepared *p) {
  for (guint i = 0; io->outputs && io->outputs[i]; i++) {
    g_autofree char *name = NULL, *path = NULL;
    if (!cli_split_spec(cmd, "output", io->outputs[i], &name, &path))
      return 2;
    const WeirContainer *c =
        cli_require_argument(cmd, p->g, p->names, "output", name);
    if (!c)
      return 2;
    const WeirTensor *t = g_hash_table_lookup(p->args, c->name);
    g_autoptr(GError) error = NULL;
    if (!t) {
      fprintf(stderr, "weir %s: --output %s: '%s' is a constant\n", cmd, name,
              c->name);
      return 2;
    }
    g_autoptr(WeirTensor) valid =
        weir_container_trim(p->g, c, t, p->args, &error);
    if (!valid || !weir_tensor_save(valid, c->name, path, &error)) {
      cli_print_error(cmd, error);
      return 1;
    }
    printf("%s: written to %s\n", c->name, path);
  }
  return 0;
}

int cli_cmd_run_ref(int argc, char **argv) {
  static const char *const usage_text =
      "usage: weir run-ref FILE [--input NAME=FILE]... [--expect "
      "NAME=FILE]...\n"
      "                    [--output NAME=FILE]... [--rtol R] [--atol A]\n"
      "                    [-D SYM=VALUE]... [--seed N]\n";
  g_auto(GStrv) defines = NULL;
  g_auto(CliTensors) io = CLI_TENSORS_INIT;
  gint reps = 0; /* accepted as by `weir run`; the interpreter is not timed */
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      CLI_TENSOR_ENTRIES(&io),
      {"reps", 0, 0, G_OPTION_ARG_INT, &reps,
       "After the checked run, time N more runs (median in the summary)", "N"},
      CLI_MAX_MEMORY_ENTRY(&io.max_memory),
      {NULL}};
  if (!cli_parse_options("run-ref", "FILE", entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    fputs(usage_text, stderr);
    return 2;
  }
  const char *file = argv[1];
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = cli_parse_defines(defines, &error);
  if (!bindings) {
    cli_print_error("run-ref", error);
    return 2;
  }
  Prepared p = {0};
  int status =
      prepare_run("run-ref", file, bindings, NULL, &io, TRUE, FALSE, &p);
  if (status) {
    prepared_clear(&p);
    return status;
  }
  gint64 t0 = g_get_monotonic_time();
  if (!weir_interpret(p.g, bindings, p.args,
                      &(WeirInterpOptions){.max_memory = p.max_memory},
                      &error)) {
    fprintf(stderr, "weir run-ref: %s: %s\n", file, error->message);
    prepared_clear(&p);
    return 1;
  }
  gint64 t1 = g_get_monotonic_time();
  printf("%s: interpreted in %.3f s", file, (double)(t1 - t0) / 1e6);
  if (p.expanded)
    printf(" (%u library node%s expanded first)", p.expanded,
           p.expanded == 1 ? "" : "s");
  printf("\n");
  print_tensors(p.g, p.args);
  status = check_expects("run-ref", &io, &p);
  if (status != 2) {
    int out = write_outputs("run-ref", &io, &p);
    status = out ? out : status;
  }
  prepared_clear(&p);
  return status;
}

/* -------------------------------------------------------------------- run */

/* The comparisons with the reference interpreter (--check), as
 * compare_tensor prints them; returns the exit status. */
static int print_reference_check(const WeirEvaluation *ev) {
  g_autofree char *took = cli_format_seconds(ev->reference_seconds);
  printf("check against the reference interpreter (%s):\n", took);
  int status = 0;
  for (guint i = 0; i < ev->comparisons->len; i++) {
    const WeirComparison *c = g_ptr_array_index(ev->comparisons, i);
    printf("  %s: max abs error %.3g (rtol %g, atol %g): %s\n", c->argument,
           c->max_abs_error, c->rtol, c->atol, c->ok ? "ok" : "MISMATCH");
    if (!c->ok) {
      printf("  %s\n", c->detail ? c->detail : "");
      status = 1;
    }
  }
  return status;
}

/* The summary of `weir run`: data movement and FLOPs of the program as
 * imported and as compiled (library nodes expanded), peak transient
 * memory, and the run time (the median of the --reps timed runs, else the
 * checked run). */
static void print_run_summary(const Prepared *p, GHashTable *bindings,
                              const WeirEvaluation *ev, gint reps) {
  g_autoptr(GError) local = NULL;
  /* the program as compiled: native library nodes kept (each operand
   * once, FLOPs by the operator's hand count), the rest expanded into the
   * maps the kernel runs */
  g_autoptr(WeirGraph) compiled = weir_graph_copy(p->g);
  g_autoptr(WeirHwProfile) cached_hw = weir_hw_profile_cached();
  gint64 cache = weir_hw_model_cache_bytes(cached_hw);
  g_autoptr(WeirAnalysis) exp = weir_analysis_compute_traffic(
      weir_native_expand_rest(compiled, &local) ? compiled : p->g, bindings,
      cache, &local);
  printf("summary\n");
  printf("  level           -O%u (%u transformation%s applied)\n", p->level,
         p->applied, p->applied == 1 ? "" : "s");
  g_autofree char *tuned = cli_tuned_summary(p->g);
  if (tuned)
    printf("  tuned           %s from the tuning database (weir info -O%u "
           "lists them)\n",
           tuned, p->level);
  if (exp) {
    g_autofree char *tr = cli_format_quantity(&exp->total_traffic, TRUE);
    g_autofree char *cache_text = cli_format_bytes(cache);
    g_autofree char *pk = cli_format_quantity(&exp->peak_transient_bytes, TRUE);
    g_autofree char *b = cli_format_quantity(&exp->total_bytes, TRUE);
    g_autofree char *f = cli_format_quantity(&exp->total_flops, FALSE);
    printf("  traffic         %s (modeled memory traffic as compiled, %s "
           "cache), peak transient memory %s\n",
           tr, cache_text, pk);
    printf("  FLOPs           %s as compiled", f);
    if (exp->total_flops.known && exp->total_traffic.known &&
        exp->total_traffic.value > 0)
      printf(", %.3f FLOP/B of traffic",
             (double)exp->total_flops.value / (double)exp->total_traffic.value);
    printf("\n");
    printf("  logical volume  %s (what the memlets name, not memory traffic; "
           "docs/analysis.md)\n",
           b);
  }
  double t = reps > 0 ? ev->bench.median : ev->first_run_seconds;
  g_autofree char *how = reps > 0 ? g_strdup_printf("median of %d runs", reps)
                                  : g_strdup("one run");
  g_autofree char *ts = cli_format_seconds(t);
  g_autofree char *cb =
      g_format_size_full(ev->constants_bytes, G_FORMAT_SIZE_IEC_UNITS);
  g_autofree char *wb =
      g_format_size_full(ev->workspace_bytes, G_FORMAT_SIZE_IEC_UNITS);
  printf("  kernel memory   parameters %s (bound, not copied), ", cb);
  if (ev->prepacked_bytes) {
    g_autofree char *pb =
        g_format_size_full(ev->prepacked_bytes, G_FORMAT_SIZE_IEC_UNITS);
    printf("weights pre-packed %s (packed once at load), ", pb);
  }
  printf("workspace %s (transients and scratch, allocated once)\n", wb);
  printf("  time            %s (%s)", ts, how);
  double gflops = 0;
  if (exp && exp->total_flops.known && t > 0) {
    gflops = (double)exp->total_flops.value / t / 1e9;
    printf(", %.3f GFLOP/s", gflops);
  }
  printf("\n");
  /* Timed runs are set against the machine's measured peak (weir hw: the
   * profile is measured once, a few seconds, and cached). */
  if (reps > 0 && gflops > 0) {
    g_autoptr(WeirHwProfile) hw = weir_hw_profile_get(FALSE, NULL);
    if (hw && hw->measured && hw->peak_gflops_1t > 0) {
      guint threads = hw->logical_cores;
      const char *omp = g_getenv("OMP_NUM_THREADS");
      guint64 v;
      if (omp && g_ascii_string_to_unsigned(omp, 10, 1, 4096, &v, NULL))
        threads = (guint)v;
      double peak = threads <= 1 ? hw->peak_gflops_1t
                    : threads >= hw->logical_cores
                        ? hw->peak_gflops_all
                        : hw->peak_gflops_1t * threads;
      printf("  vs peak         %.1f%% of this machine's measured f32 FMA peak "
             "(%.1f GFLOP/s on %u thread%s; weir hw)\n",
             100.0 * gflops / peak, peak, threads, threads == 1 ? "" : "s");
    }
  }
}

/* The tensors of args that are arguments of compiled code (a constant
 * given with --input is not passed to it). */
static GHashTable *abi_inputs(const WeirGraph *g, GHashTable *args) {
  GHashTable *t = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) list = weir_codegen_arguments(g);
  for (guint i = 0; i < list->len; i++) {
    const WeirContainer *c = g_ptr_array_index(list, i);
    gpointer x = g_hash_table_lookup(args, c->name);
    if (x)
      g_hash_table_insert(t, c->name, x);
  }
  return t;
}

int cli_cmd_run(int argc, char **argv) {
  static const char *const usage_text =
      "usage: weir run FILE [-O0|-O1|-O2|-O3] [--input NAME=FILE]... "
      "[--expect NAME=FILE]...\n"
      "                [--output NAME=FILE]... [--check] [--rtol R] "
      "[--atol A] [--reps N]\n"
      "                [-D SYM=VALUE]... [--seed N] [--cc CC] [--cflags "
      "FLAGS]\n";
  g_auto(GStrv) defines = NULL, impls = NULL;
  g_auto(CliTensors) io = CLI_TENSORS_INIT;
  g_auto(CliCompile) cc = {0};
  gint reps = 0;
  gboolean check = FALSE;
  g_autofree char *level_text = NULL;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      CLI_OPT_LEVEL_ENTRY(&level_text),
      CLI_TENSOR_ENTRIES(&io),
      {"reps", 0, 0, G_OPTION_ARG_INT, &reps,
       "After the checked run, time N more runs (median in the summary)", "N"},
      CLI_MAX_MEMORY_ENTRY(&io.max_memory),
      {"check", 0, 0, G_OPTION_ARG_NONE, &check,
       "Also run the reference interpreter on the same inputs and compare "
       "every argument",
       NULL},
      CLI_COMPILE_ENTRIES(&impls, &cc),
      {NULL}};
  if (!cli_parse_options("run", "FILE", entries, &argc, &argv))
    return 2;
  if (argc != 2) {
    fputs(usage_text, stderr);
    return 2;
  }
  const char *file = argv[1];
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = cli_parse_defines(defines, &error);
  if (!bindings) {
    cli_print_error("run", error);
    return 2;
  }
  Prepared p = {0};
  if (!cli_opt_level("run", level_text, file, &p.level))
    return 2;
  gint64 t_import = g_get_monotonic_time();
  int status = prepare_run("run", file, bindings, impls, &io, FALSE, TRUE, &p);
  if (status) {
    prepared_clear(&p);
    return status;
  }
  g_autofree char *imported =
      cli_format_seconds((double)(g_get_monotonic_time() - t_import) / 1e6);

  /* compile, the checked run, the interpreter's run (--check) and the
   * timed runs (--reps) */
  WeirCompileOptions copts = cli_compile_options(&cc);
  g_autoptr(GHashTable) inputs = abi_inputs(p.g, p.args);
  WeirEvaluateOptions eo = {
      .warmup = 1,
      .repetitions = reps > 0 ? (guint)reps : 1,
      .seed = (guint64)io.seed,
      .rtol = io.rtol >= 0 ? io.rtol : WEIR_CONFORMANCE_RTOL,
      .atol = io.atol >= 0 ? io.atol : WEIR_CONFORMANCE_ATOL,
      .compile = &copts,
      .inputs = inputs,
      .reference_interpreted = check,
      .max_memory = p.max_memory,
      .no_timing = reps <= 0,
  };
  WeirEvaluation ev;
  if (!weir_evaluate(p.g, check ? p.g : NULL, bindings, &eo, NULL, NULL, NULL,
                     &ev, &error)) {
    cli_print_compile_error("run", file, error);
    prepared_clear(&p);
    return 1;
  }
  g_autofree char *took = cli_format_seconds(ev.compile_seconds);
  g_autofree char *keyed = cli_format_seconds(ev.key_seconds);
  g_autofree char *generated = cli_format_seconds(ev.codegen_seconds);
  g_autofree char *compiler = cli_format_seconds(ev.compiler_seconds);
  g_autofree char *import_text = cli_format_seconds(p.import_s);
  g_autofree char *optimize_text = cli_format_seconds(p.optimize_s);
  printf("%s: read and prepared in %s (model import %s, -O%u %s, inputs)\n",
         file, imported, import_text, p.level, optimize_text);
  if (ev.cache_hit)
    printf("%s: loaded from the compile cache in %s (key %.12s computed in "
           "%s, no C generated)\n",
           file, took, ev.cache_key, keyed);
  else
    printf("%s: compiled in %s%s (key %.12s; C generated in %s, "
           "%" G_GSIZE_FORMAT " bytes in %u unit%s; compiler %s)\n",
           file, took,
           ev.cache_recovered ? ", replacing a damaged cache entry" : "",
           ev.cache_key, generated, ev.source_bytes, ev.units,
           ev.units == 1 ? "" : "s", compiler);
  g_autofree char *ran = cli_format_seconds(ev.first_run_seconds);
  printf("%s: ran in %s\n", file, ran);
  g_hash_table_unref(p.args);
  p.args = g_steal_pointer(&ev.outputs);
  print_tensors(p.g, p.args);
  if (check)
    status = print_reference_check(&ev);
  int expects = check_expects("run", &io, &p);
  if (expects != 2) {
    int out = write_outputs("run", &io, &p);
    expects = out ? out : expects;
  }
  print_run_summary(&p, bindings, &ev, reps);
  weir_evaluation_clear(&ev);
  prepared_clear(&p);
  return expects ? expects : status;
}

/* ------------------------------------------------------------------ bench */

static void remove_tree(const char *path) {
  if (g_file_test(path, G_FILE_TEST_IS_DIR) &&
      !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
      g_autofree char *p = g_build_filename(path, name, NULL);
      remove_tree(p);
    }
    g_rmdir(path);
  } else
    g_unlink(path);
}

/* The cached compile of g from dir, the cache an evaluation compiled it
 * into (*cached: its wall time).  Returns the kernel. */
static WeirKernel *compile_cached(const WeirGraph *g, const CliCompile *cc,
                                  const char *dir, double *cached,
                                  GError **error) {
  WeirCompileOptions opts = cli_compile_options(cc);
  opts.cache_dir = dir;
  opts.no_cache = FALSE;
  WeirCompileInfo info = {0};
  gint64 t0 = g_get_monotonic_time();
  WeirKernel *k = weir_kernel_compile(g, &opts, &info, error);
  *cached = (double)(g_get_monotonic_time() - t0) / 1e6;
  if (k && !info.cache_hit) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "the second compile missed the cache");
    g_clear_pointer(&k, weir_kernel_free);
  }
  weir_compile_info_clear(&info);
  return k;
}

/* Rate of a quantity per second in units of 10^9, or "-". */
static char *format_rate(const WeirQuantity *q, double seconds,
                         const char *unit) {
  if (!q->known || seconds <= 0)
    return g_strdup("-");
  return g_strdup_printf("%.3f %s", (double)q->value / seconds / 1e9, unit);
}

int cli_cmd_bench(int argc, char **argv) {
  g_auto(GStrv) defines = NULL, impls = NULL;
  g_auto(CliTensors) io = CLI_TENSORS_INIT;
  g_auto(CliCompile) cc = {0};
  gint opt_threads = 0, opt_reps = 10, opt_warmup = 3;
  gboolean opt_cold = FALSE;
  g_autofree char *level_text = NULL;
  const GOptionEntry entries[] = {
      CLI_DEFINE_ENTRY(&defines),
      CLI_OPT_LEVEL_ENTRY(&level_text),
      {"seed", 0, 0, G_OPTION_ARG_INT64, &io.seed,
       "Seed of the random inputs (default 1)", "N"},
      {"threads", 't', 0, G_OPTION_ARG_INT, &opt_threads,
       "OpenMP threads (default: OMP_NUM_THREADS or one per processor)", "N"},
      {"reps", 'r', 0, G_OPTION_ARG_INT, &opt_reps,
       "Timed repetitions (default 10)", "N"},
      {"warmup", 'w', 0, G_OPTION_ARG_INT, &opt_warmup,
       "Untimed warm-up runs (default 3)", "N"},
      {"cold", 0, 0, G_OPTION_ARG_NONE, &opt_cold,
       "Also measure a cold compile (in a fresh temporary cache) and print it "
       "with the cached load",
       NULL},
      CLI_MAX_MEMORY_ENTRY(&io.max_memory),
      CLI_COMPILE_ENTRIES(&impls, &cc),
      {NULL}};
  if (!cli_parse_options("bench", "FILE", entries, &argc, &argv))
    return 2;
  if (argc != 2 || opt_reps < 1 || opt_warmup < 0 || opt_threads < 0) {
    fprintf(stderr,
            "usage: weir bench FILE [-O0|-O1|-O2|-O3] [-D SYM=VALUE]... "
            "[--threads N] "
            "[--reps N>=1] [--warmup N>=0] [--cold]\n");
    return 2;
  }
  const char *file = argv[1];
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) bindings = cli_parse_defines(defines, &error);
  if (!bindings) {
    cli_print_error("bench", error);
    return 2;
  }
  Prepared p = {0};
  if (!cli_opt_level("bench", level_text, file, &p.level))
    return 2;
  int status =
      prepare_run("bench", file, bindings, impls, &io, FALSE, TRUE, &p);
  if (status) {
    prepared_clear(&p);
    return status;
  }
  /* Through the compile cache, like weir run.  With --cold: a cold compile
   * into a fresh cache in a temporary directory, the timed runs
   * (weir_evaluate), then a cached compile from that cache. */
  g_autofree char *dir = NULL;
  if (opt_cold && !(dir = weir_scratch_dir_new("weir-bench", &error))) {
    cli_print_error("bench", error);
    prepared_clear(&p);
    return 1;
  }
  WeirCompileOptions copts = cli_compile_options(&cc);
  if (opt_cold) {
    copts.cache_dir = dir;
    copts.no_cache = FALSE;
  }
  g_autoptr(GHashTable) inputs = abi_inputs(p.g, p.args);
  WeirEvaluateOptions eo = {.warmup = (guint)opt_warmup,
                            .repetitions = (guint)opt_reps,
                            .seed = (guint64)io.seed,
                            .compile = &copts,
                            .inputs = inputs,
                            .threads = opt_threads,
                            .max_memory = p.max_memory};
  WeirEvaluation ev;
  double cached = 0;
  g_autoptr(WeirKernel) k = NULL;
  gboolean ok =
      weir_evaluate(p.g, NULL, bindings, &eo, NULL, NULL, NULL, &ev, &error);
  /* the kernel for the BLAS line: the cached compile of --cold, else a
   * lookup of what weir_evaluate just put in the cache */
  if (ok) {
    k = opt_cold ? compile_cached(p.g, &cc, dir, &cached, &error)
                 : weir_kernel_compile(p.g, &copts, NULL, &error);
    ok = k != NULL;
  }
  if (dir)
    remove_tree(dir);
  if (!ok) {
    cli_print_compile_error("bench", file, error);
    weir_evaluation_clear(&ev);
    prepared_clear(&p);
    return 1;
  }
  g_autofree char *threads = g_strdup("default");
  if (opt_threads > 0) {
    g_free(threads);
    if (!ev.threads_error)
      threads = g_strdup_printf("%d", opt_threads);
    else {
      fprintf(stderr, "weir bench: note: %s; --threads ignored\n",
              ev.threads_error);
      threads = g_strdup("1 (no OpenMP)");
    }
  }
  const WeirBenchResult r = ev.bench;
  /* FLOPs and bytes of the program as compiled: the library nodes with a
   * native implementation kept (their FLOPs are the operator's hand count),
   * the others expanded into the maps the kernel runs */
  g_autoptr(WeirGraph) compiled = weir_graph_copy(p.g);
  g_autoptr(GError) local = NULL;
  g_autoptr(WeirHwProfile) hw = weir_hw_profile_cached();
  gint64 cache = weir_hw_model_cache_bytes(hw);
  g_autoptr(WeirAnalysis) a = weir_analysis_compute_traffic(
      weir_native_expand_rest(compiled, &local) ? compiled : p.g, bindings,
      cache, &local);

  printf("program  %s  (%s, -O%u: %u transformation%s applied)\n", p.g->name,
         file, p.level, p.applied, p.applied == 1 ? "" : "s");
  g_autofree char *c1 = cli_format_seconds(ev.compile_seconds),
                  *c2 = cli_format_seconds(ev.compiler_seconds),
                  *c3 = cli_format_seconds(cached);
  if (opt_cold)
    printf("compile  cold %s (compiler %s), cached %s\n", c1, c2, c3);
  else if (ev.cache_hit)
    printf("compile  loaded from the compile cache in %s (--cold: measure a "
           "cold compile)\n",
           c1);
  else
    printf("compile  %s (compiler %s; now in the compile cache)\n", c1, c2);
  {
    g_autofree char *blas = weir_kernel_blas_info(k);
    const char *coretype = g_getenv("OPENBLAS_CORETYPE");
    if (blas)
      printf("blas     %s (OPENBLAS_CORETYPE %s)\n", blas,
             coretype ? coretype : "unset");
  }
  printf("runs     %d warm-up, %d timed, threads %s\n", opt_warmup, opt_reps,
         threads);
  if (weir_kernel_openmp_wait())
    printf("waiting  idle OpenMP threads %s\n", weir_kernel_openmp_wait());
  g_autofree char *med = cli_format_seconds(r.median),
                  *lo = cli_format_seconds(r.min),
                  *hi = cli_format_seconds(r.max);
  printf("time     median %s, min %s, max %s\n", med, lo, hi);
  if (a) {
    g_autofree char *flops = cli_format_quantity(&a->total_flops, FALSE);
    g_autofree char *bytes = cli_format_quantity(&a->total_bytes, TRUE);
    g_autofree char *gflops = format_rate(&a->total_flops, r.median, "GFLOP/s");
    printf("FLOPs    %s  ->  %s at the median time\n", flops, gflops);
    g_autofree char *traffic = cli_format_quantity(&a->total_traffic, TRUE);
    g_autofree char *tgbs = format_rate(&a->total_traffic, r.median, "GB/s");
    g_autofree char *cache_text = cli_format_bytes(cache);
    printf("traffic  %s  ->  %s at the median time (modeled memory traffic, "
           "%s cache)\n",
           traffic, tgbs, cache_text);
    printf("logical  %s (logical volume: every memlet touching a container; "
           "not memory traffic, so no rate)\n",
           bytes);
  } else
    printf("FLOPs    - (analysis: %s)\n", local->message);
  weir_evaluation_clear(&ev);
  prepared_clear(&p);
  return 0;
}
