/* test-codegen.c — the C code generator, tested against the interpreter.
 *
 * Differential tests: every program is generated, compiled with the system
 * C compiler into a shared object (the same warnings as the product asks:
 * -std=c11 -Wall -Wextra -Werror), loaded with GModule and run on random
 * inputs; the interpreter runs on copies of the same inputs and every
 * argument must come out equal (exactly for integers, within 1e-5 relative
 * for floats).  The suite is registered twice in tests/meson.build, with
 * OMP_NUM_THREADS=1 and 2, so parallel loops and atomics run on two
 * threads too.  Programs cover each feature: the samples, all dtypes and
 * tasklet functions, write-conflict resolution under parallel maps, tiling,
 * unrolling, simd, collapse, copies, strides, indexed connectors, loops and
 * branches over states (structured and goto), nested programs, constants,
 * symbolic sizes, private transients and hostile names.  The golden test
 * compares the code of samples/vector_add.json byte for byte with
 * tests/core/golden/vector_add.c (WEIR_UPDATE_GOLDEN=1 rewrites it).
 * WEIR_CODEGEN_DUMP=DIR keeps every generated source in DIR.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <gmodule.h>
#include <math.h>
#include <string.h>

#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-native.h"
#include "weir-ops.h"
#include "weir-runtime.h"
#include "weir-validate.h"

#define S(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ----------------------------------------------------------- graph helpers */

static WeirMemlet *edge(WeirGraph *g, WeirState *s, WeirNode *src,
                        const char *src_conn, WeirNode *dst,
                        const char *dst_conn, const char *data,
                        const char *subset) {
  g_autoptr(GError) err = NULL;
  WeirMemlet *m = weir_state_add_memlet(g, s, src->id, src_conn, dst->id,
                                        dst_conn, data, subset, &err);
  if (!m)
    fail_msg("memlet: %s", err->message);
  return m;
}

static WeirContainer *array(WeirGraph *g, const char *name, WeirDType dtype,
                            const char *shape, gboolean transient) {
  g_autoptr(GError) err = NULL;
  WeirContainer *c =
      weir_graph_add_array(g, name, dtype, shape, transient, &err);
  if (!c)
    fail_msg("container: %s", err->message);
  return c;
}

static WeirNode *map(WeirGraph *g, WeirState *s, const char *label,
                     const char *const *params, const char *const *ranges,
                     WeirSchedule schedule, WeirNode **exit) {
  g_autoptr(GError) err = NULL;
  WeirNode *e =
      weir_state_add_map(g, s, label, params, ranges, schedule, exit, &err);
  if (!e)
    fail_msg("map: %s", err->message);
  return e;
}

/* access -> entry (IN_x) -> entry (OUT_x) -> dst.conn */
static WeirMemlet *map_in(WeirGraph *g, WeirState *s, WeirNode *access,
                          WeirNode *entry, WeirNode *dst, const char *conn,
                          const char *outer, const char *inner) {
  const char *x = access->data;
  g_autofree char *in = g_strconcat("IN_", x, NULL);
  g_autofree char *out = g_strconcat("OUT_", x, NULL);
  if (!weir_node_has_in_conn(entry, in)) {
    weir_node_add_in_conn(entry, in);
    weir_node_add_out_conn(entry, out);
    edge(g, s, access, NULL, entry, in, x, outer);
  }
  return edge(g, s, entry, out, dst, conn, x, inner);
}

/* src.conn -> exit (IN_x) -> exit (OUT_x) -> access */
static WeirMemlet *map_out(WeirGraph *g, WeirState *s, WeirNode *src,
                           const char *conn, WeirNode *exit, WeirNode *access,
                           const char *inner, const char *outer, WeirWcr wcr) {
  const char *x = access->data;
  g_autofree char *in = g_strconcat("IN_", x, NULL);
  g_autofree char *out = g_strconcat("OUT_", x, NULL);
  WeirMemlet *m = edge(g, s, src, conn, exit, in, x, inner);
  m->wcr = wcr;
  if (!weir_node_has_in_conn(exit, in)) {
    weir_node_add_in_conn(exit, in);
    weir_node_add_out_conn(exit, out);
    WeirMemlet *o = edge(g, s, exit, out, access, NULL, x, outer);
    o->wcr = wcr;
  }
  return m;
}

static WeirTransition *transition(WeirGraph *g, WeirState *a, WeirState *b,
                                  const char *cond) {
  g_autoptr(GError) err = NULL;
  WeirTransition *t = weir_graph_add_transition(g, a->id, b->id, cond, &err);
  if (!t)
    fail_msg("transition: %s", err->message);
  return t;
}

static void assign(WeirTransition *t, const char *sym, const char *value) {
  g_autoptr(GError) err = NULL;
  if (!weir_transition_add_assignment(t, sym, value, &err))
    fail_msg("assignment: %s", err->message);
}

static void validate(WeirGraph *g) {
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(g, &err))
    fail_msg("program '%s' is invalid: %s", g->name, err->message);
}

/* -------------------------------------------------------------- compiling */

typedef int (*RunFunc)(void *const args[], const gint64 symbols[],
                       const void *const consts[], void *workspace);
typedef size_t (*WorkspaceFunc)(const gint64 symbols[]);
typedef int (*AbiFunc)(void);

static char *tmpdir;
static guint compiled;
static GModule *libgomp;

static int setup_all(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  /* OpenMP's worker threads outlive a parallel region: keep the runtime
   * loaded when a kernel that pulled it in is unloaded */
  libgomp = g_module_open("libgomp.so.1", G_MODULE_BIND_LAZY);
  if (!libgomp)
    return -1;
  tmpdir = g_dir_make_tmp("weir-codegen-XXXXXX", &err);
  return tmpdir ? 0 : -1;
}

static int teardown_all(void **state) {
  (void)state;
  if (!tmpdir)
    return 0;
  g_autoptr(GDir) dir = g_dir_open(tmpdir, 0, NULL);
  const char *name;
  while (dir && (name = g_dir_read_name(dir))) {
    g_autofree char *path = g_build_filename(tmpdir, name, NULL);
    g_remove(path);
  }
  g_rmdir(tmpdir);
  g_clear_pointer(&tmpdir, g_free);
  return 0;
}

/* Compiles C source into a shared object with the system compiler and the
 * warnings generated code must survive; fails the test with the
 * compiler's messages. */
static GModule *compile_source(const char *src, gboolean openmp) {
  guint k = compiled++;
  g_autofree char *c = g_strdup_printf("%s/k%u.c", tmpdir, k);
  g_autofree char *so = g_strdup_printf("%s/k%u.so", tmpdir, k);
  g_autoptr(GError) err = NULL;
  if (!g_file_set_contents(c, src, -1, &err))
    fail_msg("writing %s: %s", c, err->message);
  const char *cc = g_getenv("CC") ? g_getenv("CC") : "cc";
  g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
  const char *flags[] = {"-std=c11", "-Wall",   "-Wextra", "-Werror", "-O2",
                         "-fPIC",    "-shared", "-o",      so,        c};
  g_ptr_array_add(argv, g_strdup(cc));
  for (guint i = 0; i < G_N_ELEMENTS(flags); i++)
    g_ptr_array_add(argv, g_strdup(flags[i]));
  if (openmp)
    g_ptr_array_add(argv, g_strdup("-fopenmp"));
  /* libraries the code asks for (native implementations) */
  g_auto(GStrv) libs = weir_codegen_libraries(src);
  for (guint i = 0; libs && libs[i]; i++)
    g_ptr_array_add(argv, g_strdup_printf("-l%s", libs[i]));
  g_ptr_array_add(argv, g_strdup("-lm"));
  g_ptr_array_add(argv, NULL);
  g_autofree char *out = NULL, *errs = NULL;
  int status = 0;
  if (!g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_SEARCH_PATH, NULL,
                    NULL, &out, &errs, &status, &err))
    fail_msg("running %s: %s", cc, err->message);
  if (!g_spawn_check_wait_status(status, NULL)) {
    g_printerr("%s\n%s\n", src, errs);
    fail_msg("%s (above) does not compile", c);
  }
  GModule *m = g_module_open(so, G_MODULE_BIND_LOCAL);
  if (!m)
    fail_msg("loading %s: %s", so, g_module_error());
  return m;
}

/* Generates g's code; with WEIR_CODEGEN_DUMP=DIR also writes it to
 * DIR/<prefix>.c (DIR/<prefix>-plain.c without OpenMP) for reading. */
static char *generate(const WeirGraph *g, const WeirCodegenOptions *opts) {
  g_autoptr(GError) err = NULL;
  char *src = weir_codegen_c(g, opts, &err);
  if (!src)
    fail_msg("generating '%s': %s", g->name, err->message);
  const char *dump = g_getenv("WEIR_CODEGEN_DUMP");
  if (dump) {
    g_autofree char *prefix = weir_codegen_prefix(g);
    g_autofree char *name = g_strdup_printf(
        "%s%s.c", prefix, opts && !opts->openmp ? "-plain" : "");
    g_autofree char *path = g_build_filename(dump, name, NULL);
    g_file_set_contents(path, src, -1, NULL);
  }
  return src;
}

typedef struct {
  GModule *module;
  RunFunc run;
  WorkspaceFunc workspace_size;
  /* run with a workspace of workspace_size bytes (the runtime's way), or
   * with NULL (the kernel allocates its own): the OpenMP variant of each
   * program takes the first, the plain one the second */
  gboolean workspace;
  const void **consts; /* the constant table, from the program */
} Kernel;

static void kernel_load(const WeirGraph *g, const WeirCodegenOptions *opts,
                        Kernel *k) {
  g_autofree char *src = generate(g, opts);
  k->module = compile_source(src, !opts || opts->openmp);
  g_autofree char *prefix = weir_codegen_prefix(g);
  g_autofree char *run = g_strdup_printf("%s_run", prefix);
  g_autofree char *abi = g_strdup_printf("%s_abi_version", prefix);
  g_autofree char *ws = g_strdup_printf("%s_workspace_size", prefix);
  gpointer p = NULL, q = NULL, w = NULL;
  if (!g_module_symbol(k->module, run, &p) ||
      !g_module_symbol(k->module, abi, &q) ||
      !g_module_symbol(k->module, ws, &w))
    fail_msg("'%s', '%s' or '%s' missing", run, abi, ws);
  k->run = (RunFunc)p;
  k->workspace_size = (WorkspaceFunc)w;
  k->workspace = !opts || opts->openmp;
  g_autoptr(GPtrArray) consts = weir_codegen_constants(g);
  k->consts = g_new0(const void *, consts->len + 1);
  for (guint i = 0; i < consts->len; i++)
    k->consts[i] = g_bytes_get_data(
        ((WeirContainer *)g_ptr_array_index(consts, i))->initial, NULL);
  assert_int_equal(((AbiFunc)q)(), WEIR_CODEGEN_ABI_VERSION);
}

static void kernel_unload(Kernel *k) {
  if (k->module)
    g_module_close(k->module);
  k->module = NULL;
  g_clear_pointer(&k->consts, g_free);
}

/* ------------------------------------------------------ differential runs */

/* Fills an input tensor; NULL: weir_tensor_fill_random. */
typedef void (*FillFunc)(const char *name, WeirTensor *t, guint64 seed);

/* Set by a test: floats must match the interpreter exactly. */
static gboolean exact_floats;

static gint64 symbol_value(GHashTable *symbols, const char *name) {
  const gint64 *v = symbols ? g_hash_table_lookup(symbols, name) : NULL;
  return v ? *v : 0;
}

/* Runs g with the interpreter and with the kernel k on the same inputs and
 * compares every argument. */
static void compare_run(WeirGraph *g, Kernel *k, GHashTable *symbols,
                        FillFunc fill) {
  g_autoptr(GPtrArray) args = weir_codegen_arguments(g);
  g_autoptr(GPtrArray) mine =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_tensor_free);
  g_autoptr(GHashTable) ref = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < args->len; i++) {
    const WeirContainer *c = g_ptr_array_index(args, i);
    guint rank = c->shape->len;
    g_autofree gint64 *shape = g_new0(gint64, rank + 1);
    for (guint d = 0; d < rank; d++) {
      g_autoptr(GError) err = NULL;
      if (!weir_expr_eval(g_ptr_array_index(c->shape, d), symbols, &shape[d],
                          &err))
        fail_msg("shape of '%s': %s", c->name, err->message);
    }
    WeirTensor *t = weir_tensor_new(c->dtype, rank, shape);
    if (fill)
      fill(c->name, t, 100 + i);
    else
      weir_tensor_fill_random(t, 100 + i);
    g_ptr_array_add(mine, t);
    g_hash_table_insert(ref, c->name, weir_tensor_copy(t));
  }
  g_autoptr(GError) err = NULL;
  if (!weir_interpret(g, symbols, ref, NULL, &err))
    fail_msg("interpreting '%s': %s", g->name, err->message);
  g_autofree void **ptrs = g_new0(void *, args->len + 1);
  for (guint i = 0; i < args->len; i++)
    ptrs[i] = ((WeirTensor *)g_ptr_array_index(mine, i))->data;
  g_autofree gint64 *syms = g_new0(gint64, g->symbols->len + 1);
  for (guint i = 0; i < g->symbols->len; i++)
    syms[i] = symbol_value(symbols, g_ptr_array_index(g->symbols, i));
  void *ws = NULL;
  if (k->workspace) {
    size_t n = k->workspace_size(syms);
    ws = n ? g_aligned_alloc(1, n, 64) : NULL;
    if (n)
      memset(ws, 0xa5, n); /* the kernel may not rely on zeros */
  }
  assert_int_equal(k->run((void *const *)ptrs, syms, k->consts, ws), 0);
  g_aligned_free(ws);
  for (guint i = 0; i < args->len; i++) {
    const WeirContainer *c = g_ptr_array_index(args, i);
    WeirTensor *a = g_ptr_array_index(mine, i);
    WeirTensor *b = g_hash_table_lookup(ref, c->name);
    gboolean fl = weir_dtype_is_float(c->dtype);
    g_autoptr(GError) e = NULL;
    double rtol = fl && !exact_floats ? 1e-5 : 0;
    double atol = fl && !exact_floats ? 1e-6 : 0;
    /* sums in another order round differently at every step: a few ulps
     * of f16 (2^-11) or bf16 (2^-8) */
    if (fl && !exact_floats && weir_dtype_is_half(c->dtype))
      rtol = atol = c->dtype == WEIR_DTYPE_F16 ? 1e-2 : 6e-2;
    if (!weir_tensor_allclose(a, b, rtol, atol, NULL, &e))
      fail_msg("program '%s', argument '%s': generated code and interpreter "
               "differ: %s",
               g->name, c->name, e->message);
  }
}

/* Compiles g with and without OpenMP and compares it with the interpreter
 * for each set of symbol values (a NULL-terminated list of bindings, or
 * one run without symbols when sets is NULL). */
static void check_sets(WeirGraph *g, GHashTable **sets, FillFunc fill) {
  validate(g);
  WeirCodegenOptions plain = {.openmp = FALSE};
  const WeirCodegenOptions *variants[] = {NULL, &plain};
  for (guint v = 0; v < G_N_ELEMENTS(variants); v++) {
    Kernel k = {0};
    kernel_load(g, variants[v], &k);
    if (!sets)
      compare_run(g, &k, NULL, fill);
    for (guint i = 0; sets && sets[i]; i++)
      compare_run(g, &k, sets[i], fill);
    kernel_unload(&k);
  }
}

static void check(WeirGraph *g, GHashTable *symbols, FillFunc fill) {
  GHashTable *sets[] = {symbols, NULL};
  check_sets(g, symbols ? sets : NULL, fill);
}

static GHashTable *bindings(const char *name, gint64 value, ...) {
  GHashTable *b = weir_bindings_new();
  va_list ap;
  va_start(ap, value);
  while (name) {
    weir_bindings_set(b, name, value);
    name = va_arg(ap, const char *);
    if (name)
      value = va_arg(ap, gint64);
  }
  va_end(ap);
  return b;
}

static void free_sets(GHashTable **sets) {
  for (guint i = 0; sets[i]; i++)
    g_hash_table_unref(sets[i]);
}

static WeirGraph *load_sample(const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_load(path, &err);
  if (!g)
    fail_msg("%s: %s", path, err->message);
  return g;
}

/* Generated code contains / lacks a fragment. */
static void assert_contains(const char *src, const char *fragment) {
  if (!strstr(src, fragment)) {
    g_printerr("%s\n", src);
    fail_msg("the generated code above lacks '%s'", fragment);
  }
}

static void assert_lacks(const char *src, const char *fragment) {
  if (strstr(src, fragment)) {
    g_printerr("%s\n", src);
    fail_msg("the generated code above contains '%s'", fragment);
  }
}

/* ----------------------------------------------------------------- samples */

static void test_samples(void **state) {
  (void)state;
  g_autoptr(WeirGraph) va = load_sample("vector_add.json");
  g_autoptr(GHashTable) n = bindings("N", 1000, NULL);
  check(va, n, NULL);
  g_autoptr(WeirGraph) mm = load_sample("matmul.json");
  check(mm, NULL, NULL);
  g_autoptr(WeirGraph) sm = load_sample("softmax.json");
  check(sm, NULL, NULL);
  g_autoptr(WeirGraph) lp = load_sample("loop.json");
  GHashTable *sets[] = {bindings("T", 3, NULL), bindings("T", 0, NULL), NULL};
  check_sets(lp, sets, NULL);
  free_sets(sets);
}

/* ------------------------------------------------------------------ dtypes */

/* Every third float element is NaN, every fifth infinite, so NaN
 * propagation, isnan/isfinite and saturating conversions are exercised. */
static void fill_special(const char *name, WeirTensor *t, guint64 seed) {
  (void)name;
  weir_tensor_fill_random(t, seed);
  if (!weir_dtype_is_float(t->dtype))
    return;
  for (gint64 i = 0; i < t->count; i++) {
    if (i % 3 == 2)
      weir_tensor_set(t, i, NAN);
    else if (i % 5 == 4)
      weir_tensor_set(t, i, i % 2 ? INFINITY : -INFINITY);
    else
      weir_tensor_set(t, i, weir_tensor_get(t, i) * (1 + i % 7));
  }
}

/* One tasklet per output type over inputs of all six dtypes, using every
 * operator and function of the tasklet language. */
static WeirGraph *build_dtypes(void) {
  WeirGraph *g = weir_graph_new("dtypes");
  weir_graph_add_symbol(g, "N");
  const char *in[] = {"xf", "xd", "xi", "xl", "xb", "xu"};
  const char *out[] = {"of", "od", "oi", "ol", "ob", "ou"};
  const char *conn[] = {"a", "b", "c", "d", "e", "f"};
  WeirDType types[] = {WEIR_DTYPE_F32, WEIR_DTYPE_F64,  WEIR_DTYPE_I32,
                       WEIR_DTYPE_I64, WEIR_DTYPE_BOOL, WEIR_DTYPE_U8};
  for (guint k = 0; k < 6; k++) {
    array(g, in[k], types[k], "N", FALSE);
    array(g, out[k], types[k], "N", FALSE);
  }
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *ex;
  WeirNode *en =
      map(g, s, "all", S("i"), S("0:N"), WEIR_SCHEDULE_PARALLEL, &ex);
  const char *code =
      "t = a * 2 + f32(c) / 3 - 0.1\n"
      "u = d * 0.5 + sqrt(abs(b)) + exp(-abs(b) / 4) - log(1.5 + a * a)\n"
      "u = u + tanh(a) + erf(b) + sin(b) * cos(a) + floor(b * 3) + ceil(a)\n"
      "u = u + pow(abs(b), 1.5) + pow(c, 2) + abs(c - 5)\n"
      "of = t + min(a, b, 0.25) - max(a, -0.5) + (e ? 1 : 0) + a % 0.3\n"
      "od = u + (isnan(b) ? 1 : 0) + (isfinite(b) ? 2.0 : -2.0) + f64(c)\n"
      "oi = c * 3 - d / (c + 1) + c % 4 + i32(a * 100) / 1000 + min(c, 4) + "
      "max(d, 2) + (-c) / 3 + (-c) % 3 + i32(b) / 100000 + i32(f) * 1000000 "
      "- i\n"
      "ol = d * d - c + i64(b * 1e15) / 1000000 + (c > 3 && d < 7 ? 10 : -10) "
      "+ (!e ? 1 : 0) + i + pow(d, 3) + i64(1e30) / 10000000000 + i64(-b) / "
      "1000000\n"
      "bb = a > b || e && c > 2 || !(c != d) || isnan(a)\n"
      "ou = u8(f + 200) + f * 2 + u8(a) + u8(-3.5) + bool(c) + u8(b * 40)\n"
      "k = bool(a) && bool(f)\n"
      "ob = bb != k";
  WeirNode *t =
      weir_state_add_tasklet(g, s, "mix", S("a", "b", "c", "d", "e", "f"),
                             S("of", "od", "oi", "ol", "ob", "ou"), code);
  for (guint k = 0; k < 6; k++) {
    map_in(g, s, weir_state_add_access(g, s, in[k]), en, t, conn[k], "0:N",
           "i");
    map_out(g, s, t, out[k], ex, weir_state_add_access(g, s, out[k]), "i",
            "0:N", WEIR_WCR_NONE);
  }
  return g;
}

static void test_dtypes(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_dtypes();
  g_autoptr(GHashTable) n = bindings("N", 64, NULL);
  check(g, n, fill_special);
}

/* --------------------------------------------------------------------- wcr */

/* For one dtype: X[R, C] reduced over a parallel (i, j) map into o*[i]
 * (iterations conflict: atomics), into the scalar tot, and over a parallel
 * i map into p*[i] (no conflict: plain updates). */
static WeirGraph *build_wcr(WeirDType dt) {
  g_autofree char *name = g_strdup_printf("wcr_%s", weir_dtype_name(dt));
  WeirGraph *g = weir_graph_new(name);
  array(g, "X", dt, "12, 5", FALSE);
  const char *outs[] = {"osum", "oprod", "omin", "omax"};
  const char *plain[] = {"psum", "pprod", "pmin", "pmax"};
  WeirWcr wcrs[] = {WEIR_WCR_SUM, WEIR_WCR_PROD, WEIR_WCR_MIN, WEIR_WCR_MAX};
  for (guint k = 0; k < 4; k++) {
    array(g, outs[k], dt, "12", FALSE);
    array(g, plain[k], dt, "12", FALSE);
  }
  array(g, "tot", dt, "", FALSE);
  array(g, "rsum", dt, "12", FALSE);
  WeirState *s = weir_graph_add_state(g, "reduce");
  WeirNode *ex;
  /* the parallel loop (j, the first parameter) is split among the
   * threads; every j updates every element i: atomics */
  WeirNode *en = map(g, s, "rows_cols", S("j", "i"), S("0:5", "0:12"),
                     WEIR_SCHEDULE_PARALLEL, &ex);
  WeirNode *t = weir_state_add_tasklet(g, s, "red", S("x"),
                                       S("s", "p", "lo", "hi", "all"),
                                       "s = x\np = x\nlo = x\nhi = x\nall = x");
  map_in(g, s, weir_state_add_access(g, s, "X"), en, t, "x", "0:12, 0:5",
         "i, j");
  const char *c5[] = {"s", "p", "lo", "hi"};
  for (guint k = 0; k < 4; k++)
    map_out(g, s, t, c5[k], ex, weir_state_add_access(g, s, outs[k]), "i",
            "0:12", wcrs[k]);
  map_out(g, s, t, "all", ex, weir_state_add_access(g, s, "tot"), "", "",
          WEIR_WCR_SUM);
  WeirNode *ex2;
  WeirNode *en2 =
      map(g, s, "rows", S("r"), S("0:12"), WEIR_SCHEDULE_PARALLEL, &ex2);
  WeirNode *t2 =
      weir_state_add_tasklet(g, s, "first", S("x"), S("s", "p", "lo", "hi"),
                             "s = x\np = x\nlo = x\nhi = x");
  map_in(g, s, weir_state_add_access(g, s, "X"), en2, t2, "x", "0:12, 0",
         "r, 0");
  for (guint k = 0; k < 4; k++)
    map_out(g, s, t2, c5[k], ex2, weir_state_add_access(g, s, plain[k]), "r",
            "0:12", wcrs[k]);
  /* rsum[i] += X[i, j] with i split among the threads and j inside one
   * thread: each thread owns its elements, no atomics */
  WeirNode *ex3;
  WeirNode *en3 = map(g, s, "split_rows", S("i", "j"), S("0:12", "0:5"),
                      WEIR_SCHEDULE_PARALLEL, &ex3);
  WeirNode *t3 = weir_state_add_tasklet(g, s, "acc", S("x"), S("s"), "s = x");
  map_in(g, s, weir_state_add_access(g, s, "X"), en3, t3, "x", "0:12, 0:5",
         "i, j");
  map_out(g, s, t3, "s", ex3, weir_state_add_access(g, s, "rsum"), "i", "0:12",
          WEIR_WCR_SUM);
  return g;
}

static void fill_wcr(const char *name, WeirTensor *t, guint64 seed) {
  weir_tensor_fill_random(t, seed);
  /* a NaN in one row of X: min/max must propagate it */
  if (weir_dtype_is_float(t->dtype) && strcmp(name, "X") == 0)
    weir_tensor_set(t, 7, NAN);
}

static void test_wcr(void **state) {
  (void)state;
  for (guint d = 0; d < WEIR_DTYPE_COUNT; d++) {
    g_autoptr(WeirGraph) g = build_wcr((WeirDType)d);
    check(g, NULL, fill_wcr);
    g_autofree char *src = generate(g, NULL);
    if (d == WEIR_DTYPE_BOOL)
      assert_contains(src, "#pragma omp atomic\n        osum[i] |= x;");
    else if (weir_dtype_is_half((WeirDType)d)) /* compare-and-swap */
      assert_contains(src, "weir_atomic_sum_");
    else
      assert_contains(src, "#pragma omp atomic\n        osum[i] += x;");
    if (d != WEIR_DTYPE_BOOL) {
      g_autofree char *cas = g_strdup_printf("weir_atomic_min_%s(&omin[i], x)",
                                             weir_dtype_name((WeirDType)d));
      assert_contains(src, cas);
    }
    /* the per-row map writes distinct elements: no atomics */
    assert_contains(src, "psum[r] ");
    assert_lacks(src, "atomic\n      psum");
    /* nor does the map whose inner loop reduces into its thread's rows */
    assert_contains(src, "rsum[i] ");
    assert_lacks(src, "atomic\n        rsum");
  }
}

/* A parallel map whose first loop has one iteration (a batch of 1) also
 * splits the next loop among the threads (collapse(2)): "omp parallel for"
 * over one iteration would run the whole map on one thread.  A map that
 * resolves write conflicts keeps its split when splitting the channel loop
 * too would make its sum over channels atomic, and splits it when every
 * channel has its own sum (global average pooling at batch 1). */
static void test_unit_leading_loop(void **state) {
  (void)state;
  const WeirDType dt = WEIR_DTYPE_F32;
  g_autoptr(WeirGraph) g = weir_graph_new("unit_lead");
  array(g, "X", dt, "1, 6, 5", FALSE);
  array(g, "Y", dt, "1, 6, 5", FALSE);
  array(g, "Z", dt, "1, 1, 5", FALSE);
  array(g, "P", dt, "1, 6", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *ex, *ex2;
  WeirNode *en = map(g, s, "twice", S("n", "c", "h"), S("0:1", "0:6", "0:5"),
                     WEIR_SCHEDULE_PARALLEL, &ex);
  WeirNode *t =
      weir_state_add_tasklet(g, s, "twice", S("x"), S("y"), "y = x * 2");
  map_in(g, s, weir_state_add_access(g, s, "X"), en, t, "x", "0:1, 0:6, 0:5",
         "n, c, h");
  map_out(g, s, t, "y", ex, weir_state_add_access(g, s, "Y"), "n, c, h",
          "0:1, 0:6, 0:5", WEIR_WCR_NONE);
  WeirNode *en2 = map(g, s, "chan_sum", S("n", "c", "h"),
                      S("0:1", "0:6", "0:5"), WEIR_SCHEDULE_PARALLEL, &ex2);
  WeirNode *t2 = weir_state_add_tasklet(g, s, "sum", S("x"), S("z"), "z = x");
  map_in(g, s, weir_state_add_access(g, s, "X"), en2, t2, "x", "0:1, 0:6, 0:5",
         "n, c, h");
  map_out(g, s, t2, "z", ex2, weir_state_add_access(g, s, "Z"), "n, 0, h",
          "0:1, 0:1, 0:5", WEIR_WCR_SUM);
  WeirNode *ex3;
  WeirNode *en3 = map(g, s, "pool", S("n", "c", "h"), S("0:1", "0:6", "0:5"),
                      WEIR_SCHEDULE_PARALLEL, &ex3);
  WeirNode *t3 = weir_state_add_tasklet(g, s, "pool", S("x"), S("p"), "p = x");
  map_in(g, s, weir_state_add_access(g, s, "X"), en3, t3, "x", "0:1, 0:6, 0:5",
         "n, c, h");
  map_out(g, s, t3, "p", ex3, weir_state_add_access(g, s, "P"), "n, c",
          "0:1, 0:6", WEIR_WCR_SUM);
  check(g, NULL, NULL);
  g_autofree char *src = generate(g, NULL);
  /* 'twice' and 'pool' split two loops, 'chan_sum' one */
  static const char split2[] = "#pragma omp parallel for collapse(2)";
  const char *first = strstr(src, split2);
  assert_non_null(first);
  const char *second = strstr(first + strlen(split2), split2);
  assert_non_null(second);
  assert_null(strstr(second + strlen(split2), "collapse("));
  const char *pool = strstr(src, "map 'pool'");
  const char *chan = strstr(src, "map 'chan_sum'");
  if (!pool)
    pool = strstr(src, "'pool'");
  if (!chan)
    chan = strstr(src, "'chan_sum'");
  assert_non_null(pool);
  assert_non_null(chan);
  assert_true(second > pool && first < chan);
  assert_lacks(src, "atomic");
}

/* ------------------------------------------------------------ accumulators */

/* Reductions whose element does not depend on the inner loops, for one
 * dtype: the code generator accumulates them in a local (docs/codegen.md,
 * "Accumulators").  With `exact_only`, only the reductions whose
 * additions keep their order (no atomic combine), so the generated code
 * must match the interpreter bit for bit. */
static WeirGraph *build_accumulators(WeirDType dt, gboolean exact_only) {
  g_autofree char *name = g_strdup_printf("acc_%s%s", weir_dtype_name(dt),
                                          exact_only ? "_exact" : "");
  WeirGraph *g = weir_graph_new(name);
  array(g, "X", dt, "6, 5, 7", FALSE);
  array(g, "G", dt, "6, 5, 7", FALSE);
  array(g, "S", dt, "5", FALSE);
  array(g, "T", dt, "5", FALSE);
  WeirState *s = weir_graph_add_state(g, "reduce");
  /* the fused shape: G[n, c, h] = x and S[c] += x in the channel-first
   * order, threads split c: S[c] accumulates over n and h in a local */
  WeirNode *ex;
  WeirNode *en = map(g, s, "chan_sum", S("c", "n", "h"), S("0:5", "0:6", "0:7"),
                     WEIR_SCHEDULE_PARALLEL, &ex);
  WeirNode *t =
      weir_state_add_tasklet(g, s, "grad", S("x"), S("g", "s"), "g = x\ns = x");
  map_in(g, s, weir_state_add_access(g, s, "X"), en, t, "x", "0:6, 0:5, 0:7",
         "n, c, h");
  map_out(g, s, t, "g", ex, weir_state_add_access(g, s, "G"), "n, c, h",
          "0:6, 0:5, 0:7", WEIR_WCR_NONE);
  map_out(g, s, t, "s", ex, weir_state_add_access(g, s, "S"), "c", "0:5",
          WEIR_WCR_SUM);
  /* a map nest: T[c] over an inner (n, h) map, hosted by the outer map */
  WeirNode *ox, *ix;
  WeirNode *oe =
      map(g, s, "outer", S("c"), S("0:5"), WEIR_SCHEDULE_PARALLEL, &ox);
  WeirNode *ie = map(g, s, "inner", S("n", "h"), S("0:6", "0:7"),
                     WEIR_SCHEDULE_SEQUENTIAL, &ix);
  WeirNode *t2 = weir_state_add_tasklet(
      g, s, "nest", S("x"), exact_only ? S("s") : S("s", "all"),
      exact_only ? "s = x" : "s = x\nall = x");
  weir_node_add_in_conn(ie, "IN_X");
  map_in(g, s, weir_state_add_access(g, s, "X"), oe, ie, "IN_X",
         "0:6, 0:5, 0:7", "0:6, c, 0:7");
  weir_node_add_out_conn(ie, "OUT_X");
  edge(g, s, ie, "OUT_X", t2, "x", "X", "n, c, h");
  WeirNode *ta = weir_state_add_access(g, s, "T");
  weir_node_add_in_conn(ix, "IN_T");
  weir_node_add_out_conn(ix, "OUT_T");
  weir_node_add_in_conn(ox, "IN_T");
  weir_node_add_out_conn(ox, "OUT_T");
  edge(g, s, t2, "s", ix, "IN_T", "T", "c")->wcr = WEIR_WCR_SUM;
  edge(g, s, ix, "OUT_T", ox, "IN_T", "T", "c")->wcr = WEIR_WCR_SUM;
  edge(g, s, ox, "OUT_T", ta, NULL, "T", "0:5")->wcr = WEIR_WCR_SUM;
  if (exact_only)
    return g;
  /* tot: the outer map's threads share it, so the inner map hosts it and
   * combines atomically once per c */
  array(g, "tot", dt, "", FALSE);
  WeirNode *tt = weir_state_add_access(g, s, "tot");
  weir_node_add_in_conn(ix, "IN_tot");
  weir_node_add_out_conn(ix, "OUT_tot");
  weir_node_add_in_conn(ox, "IN_tot");
  weir_node_add_out_conn(ox, "OUT_tot");
  edge(g, s, t2, "all", ix, "IN_tot", "tot", "")->wcr = WEIR_WCR_SUM;
  edge(g, s, ix, "OUT_tot", ox, "IN_tot", "tot", "")->wcr = WEIR_WCR_SUM;
  edge(g, s, ox, "OUT_tot", tt, NULL, "tot", "")->wcr = WEIR_WCR_SUM;
  /* M[c] = max over n, h with the threads splitting n: a local per (n, c),
   * combined atomically */
  array(g, "M", dt, "5", FALSE);
  WeirNode *ex2;
  WeirNode *en2 = map(g, s, "chan_max", S("n", "c", "h"),
                      S("0:6", "0:5", "0:7"), WEIR_SCHEDULE_PARALLEL, &ex2);
  WeirNode *t3 = weir_state_add_tasklet(g, s, "mx", S("x"), S("m"), "m = x");
  map_in(g, s, weir_state_add_access(g, s, "X"), en2, t3, "x", "0:6, 0:5, 0:7",
         "n, c, h");
  map_out(g, s, t3, "m", ex2, weir_state_add_access(g, s, "M"), "c", "0:5",
          WEIR_WCR_MAX);
  /* U += X[n, c, 3]: one element for the whole parallel map, a local per
   * iteration of n */
  array(g, "U", dt, "", FALSE);
  WeirNode *ex5;
  WeirNode *en5 = map(g, s, "flat", S("n", "c"), S("0:6", "0:5"),
                      WEIR_SCHEDULE_PARALLEL, &ex5);
  WeirNode *t7 = weir_state_add_tasklet(g, s, "all", S("x"), S("u"), "u = x");
  map_in(g, s, weir_state_add_access(g, s, "X"), en5, t7, "x", "0:6, 0:5, 0:7",
         "n, c, 3");
  map_out(g, s, t7, "u", ex5, weir_state_add_access(g, s, "U"), "", "",
          WEIR_WCR_SUM);
  /* O[n, c] += X[n, c, 0] * ...: the innermost index c feeds the element,
   * nothing to hoist */
  array(g, "O", dt, "6, 5", FALSE);
  WeirNode *ex3;
  WeirNode *en3 = map(g, s, "no_hoist", S("n", "c"), S("0:6", "0:5"),
                      WEIR_SCHEDULE_PARALLEL, &ex3);
  WeirNode *t4 = weir_state_add_tasklet(g, s, "id", S("x"), S("o"), "o = x");
  map_in(g, s, weir_state_add_access(g, s, "X"), en3, t4, "x", "0:6, 0:5, 0",
         "n, c, 0");
  map_out(g, s, t4, "o", ex3, weir_state_add_access(g, s, "O"), "n, c",
          "0:6, 0:5", WEIR_WCR_SUM);
  /* R[c] += R[c] over n: the tasklet reads the element it reduces into,
   * which must stay in memory */
  array(g, "R", dt, "5", FALSE);
  WeirNode *ex4;
  WeirNode *en4 = map(g, s, "reread", S("c", "n"), S("0:5", "0:6"),
                      WEIR_SCHEDULE_SEQUENTIAL, &ex4);
  WeirNode *t5 = weir_state_add_tasklet(g, s, "again", S("q"), S("r"), "r = q");
  map_in(g, s, weir_state_add_access(g, s, "R"), en4, t5, "q", "0:5", "c");
  map_out(g, s, t5, "r", ex4, weir_state_add_access(g, s, "R"), "c", "0:5",
          WEIR_WCR_SUM);
  return g;
}

static void test_accumulators(void **state) {
  (void)state;
  /* the local has the element's storage type */
  const char *ct[] = {"float",    "double",   "int32_t", "int64_t", "uint8_t",
                      "uint8_t",  NULL,       NULL,      "int8_t",  "int16_t",
                      "uint16_t", "uint32_t", "uint64_t"};
  G_STATIC_ASSERT(G_N_ELEMENTS(ct) == WEIR_DTYPE_COUNT);
  for (guint d = 0; d < WEIR_DTYPE_COUNT; d++) {
    WeirDType dt = (WeirDType)d;
    if (weir_dtype_is_half(dt)) /* atomic f16/bf16 updates are refused */
      continue;
    gboolean b = dt == WEIR_DTYPE_BOOL;
    g_autoptr(WeirGraph) g = build_accumulators(dt, FALSE);
    check(g, NULL, fill_wcr);
    g_autofree char *src = generate(g, NULL);
    /* S[c] over the loops n, h inside the parallel c loop */
    g_autofree char *decl =
        g_strdup_printf("    %s S_acc = S[c]; /* sum into S */\n"
                        "    for (int64_t n = 0; n < 6; n++) {",
                        ct[d]);
    assert_contains(src, decl);
    assert_contains(src, b ? "S_acc |= x;" : "S_acc += x;");
    assert_contains(src, "    S[c] = S_acc;\n  }\n");
    assert_lacks(src, "S[c] +=");
    assert_lacks(src, "S[c] |=");
    /* the nest: T around the inner map, tot inside the outer loop */
    const char *zero = dt == WEIR_DTYPE_F32   ? "-0.0f"
                       : dt == WEIR_DTYPE_F64 ? "-0.0"
                                              : "0";
    assert_contains(src, "T_acc = T[c]; /* sum into T */\n");
    g_autofree char *tot0 = g_strdup_printf(
        "tot_acc = %s; /* sum into tot */\n    /* map 20 'inner'", zero);
    assert_contains(src, tot0);
    assert_contains(src, "    T[c] = T_acc;\n");
    g_autofree char *tot = g_strdup_printf("tot_acc = %s;", zero);
    assert_contains(src, tot);
    assert_contains(src, b ? "#pragma omp atomic\n    tot[0] |= tot_acc;"
                           : "#pragma omp atomic\n    tot[0] += tot_acc;");
    /* max over (n, c, h) with n split among the threads: a local per
     * (n, c), combined atomically */
    if (!b) {
      g_autofree char *cas = g_strdup_printf(
          "weir_atomic_max_%s(&M[c], M_acc);", weir_dtype_name(dt));
      assert_contains(src, cas);
    }
    /* the scalar over the parallel map (n, c): inside the n loop */
    g_autofree char *u = g_strdup_printf(
        "  for (int64_t n = 0; n < 6; n++) {\n    %s U_acc = %s; /* sum into U "
        "*/\n    for (int64_t c = 0; c < 5; c++) {",
        ct[d], zero);
    assert_contains(src, u);
    assert_contains(src, b ? "#pragma omp atomic\n    U[0] |= U_acc;\n  }\n"
                           : "#pragma omp atomic\n    U[0] += U_acc;\n  }\n");
    /* not hoisted: the innermost index feeds O; R is read inside */
    assert_lacks(src, "O_acc");
    assert_contains(src, "O[n * 5 + c] ");
    assert_lacks(src, "R_acc");
    /* without OpenMP every combine is a plain store */
    WeirCodegenOptions plain = {.openmp = FALSE};
    g_autofree char *p = generate(g, &plain);
    assert_contains(p, "M_acc = M[c];");
    assert_contains(p, "tot_acc = tot[0];");
    assert_contains(p, "tot[0] = tot_acc;");
    assert_contains(p, "U_acc = U[0]; /* sum into U */\n  /* map");
  }
  /* where the order of the additions is kept, floats are bit-identical */
  exact_floats = TRUE;
  for (guint d = 0; d < 2; d++) {
    g_autoptr(WeirGraph) g = build_accumulators((WeirDType)d, TRUE);
    check(g, NULL, fill_wcr);
  }
  exact_floats = FALSE;
}

/* ------------------------------------------------------------ loop shapes */

/* Tiling (with a step and a remainder), collapse, unroll and simd. */
static WeirGraph *build_schedules(void) {
  WeirGraph *g = weir_graph_new("schedules");
  array(g, "X", WEIR_DTYPE_F32, "37, 20", FALSE);
  array(g, "Y", WEIR_DTYPE_F32, "37, 20", FALSE);
  array(g, "Z", WEIR_DTYPE_F32, "20", FALSE);
  array(g, "s", WEIR_DTYPE_F32, "", FALSE);
  array(g, "W", WEIR_DTYPE_F64, "6, 7, 8", FALSE);
  WeirState *st = weir_graph_add_state(g, "main");
  /* Y[i, j] for j in 0:20:3, tiled 8 x 2, collapse 2 */
  WeirNode *ex;
  WeirNode *en = map(g, st, "tiled", S("i", "j"), S("0:37", "0:20:3"),
                     WEIR_SCHEDULE_PARALLEL, &ex);
  gint64 tiles[] = {8, 2};
  g_array_append_vals(en->map->tile, tiles, 2);
  en->map->collapse = 2;
  WeirNode *t = weir_state_add_tasklet(g, st, "scale", S("x"), S("y"),
                                       "y = x * 2 + i - j");
  map_in(g, st, weir_state_add_access(g, st, "X"), en, t, "x", "0:37, 0:20:3",
         "i, j");
  map_out(g, st, t, "y", ex, weir_state_add_access(g, st, "Y"), "i, j",
          "0:37, 0:20:3", WEIR_WCR_NONE);
  /* Z[k] = X[3, k] + 1, simd, unrolled by 4 */
  WeirNode *ex2;
  WeirNode *en2 =
      map(g, st, "vec", S("k"), S("0:20"), WEIR_SCHEDULE_SIMD, &ex2);
  en2->map->unroll = 4;
  WeirNode *t2 =
      weir_state_add_tasklet(g, st, "inc", S("x"), S("z"), "z = x + 1");
  map_in(g, st, weir_state_add_access(g, st, "X"), en2, t2, "x", "3, 0:20",
         "3, k");
  map_out(g, st, t2, "z", ex2, weir_state_add_access(g, st, "Z"), "k", "0:20",
          WEIR_WCR_NONE);
  /* s += X[5, k]: a simd map whose iterations update one element */
  WeirNode *ex3;
  WeirNode *en3 =
      map(g, st, "dot", S("k"), S("0:20"), WEIR_SCHEDULE_SIMD, &ex3);
  WeirNode *t3 = weir_state_add_tasklet(g, st, "acc", S("x"), S("o"), "o = x");
  map_in(g, st, weir_state_add_access(g, st, "X"), en3, t3, "x", "5, 0:20",
         "5, k");
  map_out(g, st, t3, "o", ex3, weir_state_add_access(g, st, "s"), "", "",
          WEIR_WCR_SUM);
  /* three parameters, collapse 3, tiled on the last one only */
  WeirNode *ex4;
  WeirNode *en4 = map(g, st, "cube", S("a", "b", "c"), S("0:6", "1:7", "0:8"),
                      WEIR_SCHEDULE_PARALLEL, &ex4);
  gint64 tiles4[] = {0, 0, 3};
  g_array_append_vals(en4->map->tile, tiles4, 3);
  en4->map->collapse = 3;
  en4->map->unroll = 2;
  WeirNode *t4 = weir_state_add_tasklet(g, st, "w", NULL, S("w"),
                                        "w = a * 100 + b * 10 + c");
  edge(g, st, en4, NULL, t4, NULL, NULL, NULL);
  map_out(g, st, t4, "w", ex4, weir_state_add_access(g, st, "W"), "a, b, c",
          "0:6, 1:7, 0:8", WEIR_WCR_NONE);
  return g;
}

static void test_schedules(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_schedules();
  check(g, NULL, NULL);
  g_autofree char *src = generate(g, NULL);
  assert_contains(src, "#pragma omp parallel for collapse(2)\n");
  assert_contains(src, "for (int64_t i_tile = 0; i_tile < 37; i_tile += 8)");
  assert_contains(src, "for (int64_t j_tile = 0; j_tile < 20; j_tile += 6)");
  assert_contains(src, "for (int64_t i = i_tile; i < weir_min_i64(");
  assert_contains(src, "j += 3)");
  assert_contains(src, "/* unroll 4 left to the vectorizer */\n  #pragma omp "
                       "simd\n  for (int64_t k = 0; k < 20; k++)");
  assert_contains(src, "/* not vectorized: iterations may update the same "
                       "element */");
  /* collapse limited to the loops with fixed bounds: a, b, c_tile */
  assert_contains(src, "#pragma omp parallel for collapse(3)\n  for (int64_t "
                       "c_tile = 0;");
  assert_contains(src, "#pragma GCC unroll 2\n");
  /* without OpenMP: no pragma at all except unrolling */
  WeirCodegenOptions plain = {.openmp = FALSE};
  g_autofree char *p = generate(g, &plain);
  assert_lacks(p, "#pragma omp");
  assert_contains(p, "#pragma GCC unroll 4");
}

/* ------------------------------------------------------------------- copies */

static WeirGraph *build_copies(void) {
  WeirGraph *g = weir_graph_new("copies");
  array(g, "A", WEIR_DTYPE_F32, "6, 8", FALSE);
  array(g, "B", WEIR_DTYPE_F32, "8, 6", FALSE);
  array(g, "C", WEIR_DTYPE_F32, "3", FALSE);
  array(g, "D", WEIR_DTYPE_F32, "16", FALSE);
  array(g, "E", WEIR_DTYPE_F32, "6, 8", FALSE);
  array(g, "F", WEIR_DTYPE_F32, "2, 2", FALSE);
  array(g, "G", WEIR_DTYPE_F32, "4, 12", FALSE);
  array(g, "H", WEIR_DTYPE_F32, "6, 8", FALSE);
  array(g, "T", WEIR_DTYPE_F32, "6, 8", TRUE);
  array(g, "R", WEIR_DTYPE_F32, "4, 3", FALSE);
  WeirState *s = weir_graph_add_state(g, "copy");
  WeirNode *a = weir_state_add_access(g, s, "A");
  /* a block into another place (subset on A, other on B) */
  WeirMemlet *m = edge(g, s, a, NULL, weir_state_add_access(g, s, "B"), NULL,
                       "A", "0:4, 2:6");
  assert_true(weir_memlet_set_other(m, "1:5, 0:4", NULL));
  /* a strided column into a vector (subset named on the destination) */
  m = edge(g, s, a, NULL, weir_state_add_access(g, s, "C"), NULL, "C", "0:3");
  assert_true(weir_memlet_set_other(m, "0:6:2, 1", NULL));
  /* two rows into a vector: the shapes differ */
  m = edge(g, s, a, NULL, weir_state_add_access(g, s, "D"), NULL, "A",
           "1:3, 0:8");
  assert_true(weir_memlet_set_other(m, "0:16", NULL));
  /* whole and contiguous: memcpy */
  edge(g, s, a, NULL, weir_state_add_access(g, s, "E"), NULL, "A", "0:6, 0:8");
  /* a corner */
  m = edge(g, s, a, NULL, weir_state_add_access(g, s, "F"), NULL, "F",
           "0:2, 0:2");
  assert_true(weir_memlet_set_other(m, "4:6, 6:8", NULL));
  /* reshaping whole copy 6x8 -> 4x12: also a memcpy */
  m = edge(g, s, a, NULL, weir_state_add_access(g, s, "G"), NULL, "A",
           "0:6, 0:8");
  assert_true(weir_memlet_set_other(m, "0:4, 0:12", NULL));
  /* through a transient */
  WeirNode *tt = weir_state_add_access(g, s, "T");
  edge(g, s, a, NULL, tt, NULL, "A", "0:6, 0:8");
  edge(g, s, tt, NULL, weir_state_add_access(g, s, "H"), NULL, "T", "0:6, 0:8");
  /* 3 x 4 elements (every other column) into a 4 x 3 array */
  m = edge(g, s, a, NULL, weir_state_add_access(g, s, "R"), NULL, "A",
           "0:3, 0:8:2");
  assert_true(weir_memlet_set_other(m, "0:4, 0:3", NULL));
  return g;
}

static void test_copies(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_copies();
  check(g, NULL, NULL);
  g_autofree char *src = generate(g, NULL);
  assert_contains(src, "memcpy(E, A, (size_t)48 * sizeof(float));");
  assert_contains(src, "memcpy(G, A, (size_t)48 * sizeof(float));");
  assert_contains(src, "F[k0 * 2 + k1] = A[k0 * 8 + k1 + 38];");
  /* the flat index split into R's dimensions and flattened again: the
   * divisions cancel (divmod_expand), a plain index */
  assert_contains(src, "R[k0 * 4 + k1] = A[k0 * 8 + k1 * 2];");
  assert_true(strstr(src, "weir_floordiv") == NULL);
}

/* -------------------------------------------------------- strides, gathers */

/* Column-major arguments and transients, strided subsets, indexed inputs
 * and outputs, and a gather through an index array. */
static WeirGraph *build_indexed(void) {
  WeirGraph *g = weir_graph_new("indexed");
  weir_graph_add_symbol(g, "N");
  WeirContainer *cm = array(g, "M", WEIR_DTYPE_F64, "5, 4", FALSE);
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  g_autoptr(WeirExpr) five = weir_expr_const(5);
  WeirExpr *colmajor[] = {one, five};
  weir_container_set_strides(cm, colmajor);
  array(g, "table", WEIR_DTYPE_F32, "10", FALSE);
  array(g, "idx", WEIR_DTYPE_I64, "N", FALSE);
  array(g, "gathered", WEIR_DTYPE_F32, "N", FALSE);
  array(g, "pairs", WEIR_DTYPE_F32, "N, 2", FALSE);
  array(g, "sums", WEIR_DTYPE_F64, "3", FALSE);
  WeirContainer *ct = array(g, "Tc", WEIR_DTYPE_F64, "5, 4", TRUE);
  weir_container_set_strides(ct, colmajor);
  array(g, "out", WEIR_DTYPE_F64, "5, 4", FALSE);
  WeirState *s = weir_graph_add_state(g, "gather");
  WeirNode *ex;
  WeirNode *en = map(g, s, "g", S("i"), S("0:N"), WEIR_SCHEDULE_PARALLEL, &ex);
  WeirNode *t = weir_state_add_tasklet(
      g, s, "look", S("tab", "k"), S("o", "p"),
      "o = tab[k]\np[0, 0] = tab[(k + 1) % 10] * 2\np[0, 1] = tab[9 - k]");
  map_in(g, s, weir_state_add_access(g, s, "table"), en, t, "tab", "0:10",
         "0:10");
  map_in(g, s, weir_state_add_access(g, s, "idx"), en, t, "k", "0:N", "i");
  map_out(g, s, t, "o", ex, weir_state_add_access(g, s, "gathered"), "i", "0:N",
          WEIR_WCR_NONE);
  map_out(g, s, t, "p", ex, weir_state_add_access(g, s, "pairs"), "i, 0:2",
          "0:N, 0:2", WEIR_WCR_NONE);
  /* sums[r] = sum of a 2-D block of M with an offset and a step */
  WeirNode *ex2;
  WeirNode *en2 =
      map(g, s, "blocks", S("r"), S("0:3"), WEIR_SCHEDULE_PARALLEL, &ex2);
  WeirNode *t2 = weir_state_add_tasklet(
      g, s, "block", S("m"), S("o"),
      "o = m[0, 0] + m[0, 1] * 10 + m[1, 0] * 100 + m[1, 1] * 1000");
  map_in(g, s, weir_state_add_access(g, s, "M"), en2, t2, "m", "0:5, 0:4",
         "r:r + 3:2, 1:4:2");
  map_out(g, s, t2, "o", ex2, weir_state_add_access(g, s, "sums"), "r", "0:3",
          WEIR_WCR_NONE);
  /* Tc = M + 1 elementwise (both column-major), then out = Tc * i */
  WeirState *s2 = weir_graph_add_state(g, "strided");
  WeirNode *ex3;
  WeirNode *en3 = map(g, s2, "plus", S("i", "j"), S("0:5", "0:4"),
                      WEIR_SCHEDULE_PARALLEL, &ex3);
  WeirNode *t3 =
      weir_state_add_tasklet(g, s2, "plus", S("m"), S("o"), "o = m + 1");
  map_in(g, s2, weir_state_add_access(g, s2, "M"), en3, t3, "m", "0:5, 0:4",
         "i, j");
  WeirNode *tc = weir_state_add_access(g, s2, "Tc");
  map_out(g, s2, t3, "o", ex3, tc, "i, j", "0:5, 0:4", WEIR_WCR_NONE);
  WeirNode *ex4;
  WeirNode *en4 = map(g, s2, "times", S("i", "j"), S("0:5", "0:4"),
                      WEIR_SCHEDULE_SEQUENTIAL, &ex4);
  WeirNode *t4 =
      weir_state_add_tasklet(g, s2, "times", S("m"), S("o"), "o = m * i");
  map_in(g, s2, tc, en4, t4, "m", "0:5, 0:4", "i, j");
  map_out(g, s2, t4, "o", ex4, weir_state_add_access(g, s2, "out"), "i, j",
          "0:5, 0:4", WEIR_WCR_NONE);
  /* one output connector, a one-element memlet and a longer one: the
   * value goes to the first element of each */
  array(g, "dup", WEIR_DTYPE_I32, "4", FALSE);
  WeirNode *t5 = weir_state_add_tasklet(g, s2, "dup", NULL, S("d"), "d = 7");
  edge(g, s2, t5, "d", weir_state_add_access(g, s2, "dup"), NULL, "dup", "1");
  edge(g, s2, t5, "d", weir_state_add_access(g, s2, "dup"), NULL, "dup", "2:4");
  transition(g, s, s2, NULL);
  return g;
}

static void fill_indices(const char *name, WeirTensor *t, guint64 seed) {
  weir_tensor_fill_random(t, seed);
  if (strcmp(name, "idx") == 0)
    for (gint64 i = 0; i < t->count; i++)
      weir_tensor_set(t, i, (double)((i * 7 + 3) % 10));
}

static void test_indexed(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_indexed();
  g_autoptr(GHashTable) n = bindings("N", 23, NULL);
  check(g, n, fill_indices);
  g_autofree char *src = generate(g, NULL);
  /* accessors relative to the subset's start, with the container strides */
  assert_contains(src, "const float *const tab = table;");
  assert_contains(src, "const double *const m = M + r + 5;");
  assert_contains(src, "m[10] * 10.0");
  assert_contains(src, "p[1] = tab[9 - k];");
  assert_contains(src, "float *const p = pairs + i * 2;");
}

/* ------------------------------------------------------------- control flow */

/* X[M, M] (an argument view): X[i, j] = 2 * X[i, j] + M */
static WeirGraph *build_block_program(void) {
  WeirGraph *g = weir_graph_new("block");
  weir_graph_add_symbol(g, "M");
  array(g, "X", WEIR_DTYPE_F64, "M, M", FALSE);
  WeirState *s = weir_graph_add_state(g, "body");
  WeirNode *exit;
  WeirNode *entry = map(g, s, "scale", S("i", "j"), S("0:M", "0:M"),
                        WEIR_SCHEDULE_PARALLEL, &exit);
  WeirNode *t =
      weir_state_add_tasklet(g, s, "scale", S("x"), S("y"), "y = 2.0 * x + M");
  map_in(g, s, weir_state_add_access(g, s, "X"), entry, t, "x", "0:M, 0:M",
         "i, j");
  map_out(g, s, t, "y", exit, weir_state_add_access(g, s, "X"), "i, j",
          "0:M, 0:M", WEIR_WCR_NONE);
  return g;
}

/* out[k] (i64) = expr, in state s. */
static void put(WeirGraph *g, WeirState *s, const char *label, guint k,
                const char *expr, WeirWcr wcr) {
  g_autofree char *code = g_strdup_printf("o = %s", expr);
  g_autofree char *sub = g_strdup_printf("%u", k);
  WeirNode *t = weir_state_add_tasklet(g, s, label, NULL, S("o"), code);
  WeirMemlet *m =
      edge(g, s, t, "o", weir_state_add_access(g, s, "out"), NULL, "out", sub);
  m->wcr = wcr;
}

/* A branch, then a counted loop, then a simultaneous assignment. */
static WeirGraph *build_branch_loop(void) {
  WeirGraph *g = weir_graph_new("branch_loop");
  weir_graph_add_symbol(g, "K");
  weir_graph_add_symbol(g, "n");
  weir_graph_add_symbol(g, "t");
  weir_graph_add_symbol(g, "u");
  array(g, "out", WEIR_DTYPE_I64, "3", FALSE);
  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *pos = weir_graph_add_state(g, "pos");
  WeirState *neg = weir_graph_add_state(g, "neg");
  WeirState *guard = weir_graph_add_state(g, "guard");
  WeirState *body = weir_graph_add_state(g, "body");
  WeirState *done = weir_graph_add_state(g, "done");
  put(g, pos, "one", 0, "1", WEIR_WCR_NONE);
  put(g, neg, "minus", 0, "-K", WEIR_WCR_NONE);
  put(g, body, "acc", 1, "t * t", WEIR_WCR_SUM);
  put(g, done, "fin", 2, "t * 1000 + u", WEIR_WCR_NONE);
  transition(g, init, pos, "K > 0");
  transition(g, init, neg, NULL);
  WeirTransition *tr = transition(g, pos, guard, NULL);
  assign(tr, "t", "0");
  assign(tr, "u", "n");
  tr = transition(g, neg, guard, NULL);
  assign(tr, "t", "0");
  assign(tr, "u", "n");
  transition(g, guard, body, "t < n");
  tr = transition(g, body, guard, NULL);
  assign(tr, "t", "t + 1");
  /* simultaneous: t takes the old u, u the old t */
  tr = transition(g, guard, done, "t >= n");
  assign(tr, "t", "u * 100");
  assign(tr, "u", "t + 1");
  return g;
}

/* A loop whose guard state has dataflow, nested in a counted loop whose
 * inner range depends on the outer counter. */
static WeirGraph *build_nested_loops(void) {
  WeirGraph *g = weir_graph_new("nested_loops");
  weir_graph_add_symbol(g, "P");
  weir_graph_add_symbol(g, "p");
  weir_graph_add_symbol(g, "q");
  array(g, "out", WEIR_DTYPE_I64, "3", FALSE);
  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *og = weir_graph_add_state(g, "outer_guard");
  WeirState *ig = weir_graph_add_state(g, "inner_guard");
  WeirState *ib = weir_graph_add_state(g, "inner_body");
  WeirState *end = weir_graph_add_state(g, "end");
  put(g, ig, "count", 0, "1", WEIR_WCR_SUM);
  put(g, ib, "acc", 1, "p * 10 + q", WEIR_WCR_SUM);
  put(g, end, "fin", 2, "p * 100 + q", WEIR_WCR_NONE);
  WeirTransition *tr = transition(g, init, og, NULL);
  assign(tr, "p", "0");
  assign(tr, "q", "-1");
  tr = transition(g, og, ig, "p < P");
  assign(tr, "q", "0");
  transition(g, og, end, "!(p < P)");
  transition(g, ig, ib, "q <= p");
  tr = transition(g, ig, og, NULL);
  assign(tr, "p", "p + 1");
  tr = transition(g, ib, ig, NULL);
  assign(tr, "q", "q + 1");
  return g;
}

/* A cycle entered at two states: only gotos express it.  Also ends the
 * program when no transition holds. */
static WeirGraph *build_irreducible(void) {
  WeirGraph *g = weir_graph_new("irreducible");
  weir_graph_add_symbol(g, "K");
  weir_graph_add_symbol(g, "c");
  array(g, "out", WEIR_DTYPE_I64, "3", FALSE);
  WeirState *s = weir_graph_add_state(g, "start");
  WeirState *a = weir_graph_add_state(g, "a");
  WeirState *b = weir_graph_add_state(g, "b");
  WeirState *e = weir_graph_add_state(g, "e");
  put(g, a, "a", 0, "1", WEIR_WCR_SUM);
  put(g, b, "b", 1, "c", WEIR_WCR_SUM);
  put(g, e, "e", 2, "c * 7", WEIR_WCR_NONE);
  WeirTransition *tr = transition(g, s, a, "K > 0");
  assign(tr, "c", "0");
  tr = transition(g, s, b, "K > -5");
  assign(tr, "c", "0");
  tr = transition(g, a, b, NULL);
  assign(tr, "c", "c + 1");
  tr = transition(g, b, a, "c < 5");
  assign(tr, "c", "c + 1");
  transition(g, b, e, "c < 100");
  return g;
}

/* If / else if / else with a join, and a branch that ends the program. */
static WeirGraph *build_diamond(void) {
  WeirGraph *g = weir_graph_new("diamond");
  weir_graph_add_symbol(g, "K");
  array(g, "out", WEIR_DTYPE_I64, "3", FALSE);
  WeirState *s = weir_graph_add_state(g, "start");
  WeirState *a = weir_graph_add_state(g, "small");
  WeirState *b = weir_graph_add_state(g, "medium");
  WeirState *c = weir_graph_add_state(g, "large");
  WeirState *j = weir_graph_add_state(g, "join");
  WeirState *x = weir_graph_add_state(g, "extra");
  put(g, a, "a", 0, "10", WEIR_WCR_NONE);
  put(g, b, "b", 0, "20", WEIR_WCR_NONE);
  put(g, c, "c", 0, "30", WEIR_WCR_NONE);
  put(g, j, "j", 1, "K", WEIR_WCR_SUM);
  put(g, x, "x", 2, "K * K", WEIR_WCR_NONE);
  transition(g, s, a, "K < 2");
  transition(g, s, b, "K < 5");
  transition(g, s, c, "K < 9");
  transition(g, a, j, NULL);
  transition(g, b, j, NULL);
  transition(g, c, j, NULL);
  transition(g, j, x, "K % 2 == 0");
  /* never reached: nothing of it may appear in the code */
  array(g, "Z", WEIR_DTYPE_F64, "2, 2", FALSE);
  WeirState *orphan = weir_graph_add_state(g, "orphan");
  WeirNode *n = weir_state_add_nested(g, orphan, "blk", build_block_program(),
                                      S("X"), S("X"));
  assert_true(weir_node_bind_symbol(n, "M", "2", NULL));
  edge(g, orphan, weir_state_add_access(g, orphan, "Z"), NULL, n, "X", "Z",
       "0:2, 0:2");
  edge(g, orphan, n, "X", weir_state_add_access(g, orphan, "Z"), NULL, "Z",
       "0:2, 0:2");
  transition(g, orphan, j, NULL);
  return g;
}

static void test_control_flow(void **state) {
  (void)state;
  g_autoptr(WeirGraph) bl = build_branch_loop();
  GHashTable *s1[] = {
      bindings("K", -4, "n", 0, NULL), bindings("K", -4, "n", 5, NULL),
      bindings("K", 3, "n", 0, NULL), bindings("K", 3, "n", 5, NULL), NULL};
  check_sets(bl, s1, NULL);
  free_sets(s1);
  g_autofree char *src = generate(bl, NULL);
  assert_contains(src, "if (K > 0) {");
  assert_contains(src, "} else {");
  assert_contains(src, "for (; t < n; t = t + 1) {");
  assert_contains(src, "const int64_t t_next = u * 100;");
  assert_lacks(src, "goto");

  g_autoptr(WeirGraph) nl = build_nested_loops();
  GHashTable *s2[] = {bindings("P", 0, NULL), bindings("P", 4, NULL), NULL};
  check_sets(nl, s2, NULL);
  free_sets(s2);
  g_autofree char *src2 = generate(nl, NULL);
  assert_contains(src2, "while (p < P) {");
  assert_contains(src2, "for (;;) {");
  assert_contains(src2, "if (!(q <= p)) {");
  assert_lacks(src2, "goto");

  g_autoptr(WeirGraph) ir = build_irreducible();
  GHashTable *s3[9] = {NULL};
  for (gint64 K = -6; K <= 1; K++)
    s3[K + 6] = bindings("K", K, NULL);
  check_sets(ir, s3, NULL);
  free_sets(s3);
  g_autofree char *src3 = generate(ir, NULL);
  assert_contains(src3, "goto state_");

  g_autoptr(WeirGraph) di = build_diamond();
  GHashTable *s4[12] = {NULL};
  for (gint64 K = 0; K <= 10; K++)
    s4[K] = bindings("K", K, NULL);
  check_sets(di, s4, NULL);
  free_sets(s4);
  g_autofree char *src4 = generate(di, NULL);
  assert_contains(src4, "} else if (K < 5) {");
  assert_contains(src4, "goto done;");
  assert_lacks(src4, "goto state_");
  assert_lacks(src4, "orphan");
  assert_lacks(src4, "nested_");
}

/* ------------------------------------------------------------------- nested */

/* A nested program on a strided block of A, its size bound to B + 1. */
static WeirGraph *build_nested_block(void) {
  WeirGraph *g = weir_graph_new("outer");
  weir_graph_add_symbol(g, "B");
  array(g, "A", WEIR_DTYPE_F64, "8, 8", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *n =
      weir_state_add_nested(g, s, "blk", build_block_program(), S("X"), S("X"));
  assert_true(weir_node_bind_symbol(n, "M", "B + 1", NULL));
  WeirNode *a2 = weir_state_add_access(g, s, "A");
  edge(g, s, a, NULL, n, "X", "A", "0:8:2, B - 1:B + 3");
  edge(g, s, n, "X", a2, NULL, "A", "0:8:2, B - 1:B + 3");
  return g;
}

/* Per row: a loop over the row accumulating a sum of squares in a stack
 * transient, then y = x / sqrt(1 + sum) + a copy through a big (arena)
 * transient.  Control flow inside dataflow. */
static WeirGraph *build_row_program(void) {
  WeirGraph *g = weir_graph_new("row norm");
  weir_graph_add_symbol(g, "C");
  weir_graph_add_symbol(g, "k");
  array(g, "x", WEIR_DTYPE_F32, "C", FALSE);
  array(g, "y", WEIR_DTYPE_F32, "C", FALSE);
  array(g, "acc", WEIR_DTYPE_F32, "", TRUE);
  array(g, "big", WEIR_DTYPE_F32, "2000", TRUE);
  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *guard = weir_graph_add_state(g, "guard");
  WeirState *body = weir_graph_add_state(g, "body");
  WeirState *fin = weir_graph_add_state(g, "fin");
  WeirNode *t0 = weir_state_add_tasklet(g, init, "zero", NULL, S("o"), "o = 0");
  edge(g, init, t0, "o", weir_state_add_access(g, init, "acc"), NULL, "acc",
       "");
  WeirNode *t1 =
      weir_state_add_tasklet(g, body, "sq", S("v"), S("o"), "o = v * v");
  edge(g, body, weir_state_add_access(g, body, "x"), NULL, t1, "v", "x", "k");
  WeirMemlet *m = edge(g, body, t1, "o", weir_state_add_access(g, body, "acc"),
                       NULL, "acc", "");
  m->wcr = WEIR_WCR_SUM;
  WeirNode *ex;
  WeirNode *en =
      map(g, fin, "scale", S("j"), S("0:C"), WEIR_SCHEDULE_PARALLEL, &ex);
  WeirNode *t2 =
      weir_state_add_tasklet(g, fin, "scale", S("v", "s"), S("o", "b"),
                             "o = v / sqrt(1 + s)\nb = v * 2");
  map_in(g, fin, weir_state_add_access(g, fin, "x"), en, t2, "v", "0:C", "j");
  map_in(g, fin, weir_state_add_access(g, fin, "acc"), en, t2, "s", "", "");
  WeirNode *bg = weir_state_add_access(g, fin, "big");
  map_out(g, fin, t2, "o", ex, weir_state_add_access(g, fin, "y"), "j", "0:C",
          WEIR_WCR_NONE);
  map_out(g, fin, t2, "b", ex, bg, "j", "0:C", WEIR_WCR_NONE);
  WeirState *fin2 = weir_graph_add_state(g, "fin2");
  WeirNode *ex2;
  WeirNode *en2 =
      map(g, fin2, "add", S("j"), S("0:C"), WEIR_SCHEDULE_SEQUENTIAL, &ex2);
  WeirNode *t3 =
      weir_state_add_tasklet(g, fin2, "add", S("b"), S("o"), "o = b");
  map_in(g, fin2, weir_state_add_access(g, fin2, "big"), en2, t3, "b", "0:C",
         "j");
  map_out(g, fin2, t3, "o", ex2, weir_state_add_access(g, fin2, "y"), "j",
          "0:C", WEIR_WCR_SUM);
  WeirTransition *tr = transition(g, init, guard, NULL);
  assign(tr, "k", "0");
  transition(g, guard, body, "k < C");
  tr = transition(g, body, guard, NULL);
  assign(tr, "k", "k + 1");
  transition(g, guard, fin, "k >= C");
  transition(g, fin, fin2, NULL);
  return g;
}

static WeirGraph *build_nested_rows(WeirSchedule schedule) {
  WeirGraph *g = weir_graph_new("rows");
  weir_graph_add_symbol(g, "R");
  weir_graph_add_symbol(g, "W");
  array(g, "X", WEIR_DTYPE_F32, "R, W", FALSE);
  array(g, "Y", WEIR_DTYPE_F32, "R, W", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *ex;
  WeirNode *en = map(g, s, "rows", S("r"), S("0:R"), schedule, &ex);
  WeirNode *n = weir_state_add_nested(g, s, "norm", build_row_program(),
                                      S("x", "y"), S("y"));
  assert_true(weir_node_bind_symbol(n, "C", "W", NULL));
  map_in(g, s, weir_state_add_access(g, s, "X"), en, n, "x", "0:R, 0:W",
         "r, 0:W");
  map_in(g, s, weir_state_add_access(g, s, "Y"), en, n, "y", "0:R, 0:W",
         "r, 0:W");
  map_out(g, s, n, "y", ex, weir_state_add_access(g, s, "Y"), "r, 0:W",
          "0:R, 0:W", WEIR_WCR_NONE);
  return g;
}

/* A nested program inside a nested program. */
static WeirGraph *build_nested_twice(void) {
  WeirGraph *mid = weir_graph_new("mid");
  weir_graph_add_symbol(mid, "M");
  array(mid, "X", WEIR_DTYPE_F64, "M, M", FALSE);
  WeirState *s = weir_graph_add_state(mid, "call");
  WeirNode *n = weir_state_add_nested(mid, s, "inner", build_block_program(),
                                      S("X"), S("X"));
  assert_true(weir_node_bind_symbol(n, "M", "M - 1", NULL));
  edge(mid, s, weir_state_add_access(mid, s, "X"), NULL, n, "X", "X",
       "1:M, 0:M - 1");
  edge(mid, s, n, "X", weir_state_add_access(mid, s, "X"), NULL, "X",
       "1:M, 0:M - 1");
  WeirGraph *g = weir_graph_new("twice");
  array(g, "A", WEIR_DTYPE_F64, "6, 6", FALSE);
  WeirState *t = weir_graph_add_state(g, "main");
  WeirNode *o = weir_state_add_nested(g, t, "mid", mid, S("X"), S("X"));
  assert_true(weir_node_bind_symbol(o, "M", "5", NULL));
  edge(g, t, weir_state_add_access(g, t, "A"), NULL, o, "X", "A", "1:6, 1:6");
  edge(g, t, o, "X", weir_state_add_access(g, t, "A"), NULL, "A", "1:6, 1:6");
  return g;
}

static void test_nested(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_nested_block();
  g_autoptr(GHashTable) b = bindings("B", 3, NULL);
  check(g, b, NULL);
  g_autofree char *src = generate(g, NULL);
  assert_contains(src, "static void nested_");
  assert_contains(src, "(A + B - 1, 16, 1, B + 1);");
  assert_contains(src, "X[i * X_s0 + j * X_s1] = 2.0 * x + (double)M;");

  g_autoptr(WeirGraph) rows = build_nested_rows(WEIR_SCHEDULE_PARALLEL);
  g_autoptr(GHashTable) rw = bindings("R", 9, "W", 13, NULL);
  check(rows, rw, NULL);
  g_autofree char *src2 = generate(rows, NULL);
  /* the nested function has an arena, so it can fail; called by several
   * threads at once, it allocates it for each call (ws NULL) */
  assert_contains(src2, "static int nested_");
  assert_contains(src2, "uint8_t *ws) {");
  assert_contains(src2, "unsigned char *const arena = ws ? ws : "
                        "aligned_alloc(64, 8000);");
  assert_contains(src2, "#pragma omp atomic\n    status |= nested_6_norm(X + "
                        "r * W, 1, Y + r * W, 1, W, NULL);");
  assert_contains(src2, "y[j * y_s0] += b;");
  /* called from sequential code, it gets its arena from the caller's
   * scratch block, which is part of the workspace */
  g_autoptr(WeirGraph) seq = build_nested_rows(WEIR_SCHEDULE_SEQUENTIAL);
  check(seq, rw, NULL);
  g_autofree char *src3 = generate(seq, NULL);
  assert_contains(src3, "status |= nested_6_norm(X + r * W, 1, Y + r * W, 1, "
                        "W, scratch);");
  assert_contains(src3, "uint8_t *const scratch = (uint8_t *)arena; /* "
                        "scratch of native calls and nested programs */");
  assert_contains(src3, "size_t rows_workspace_size(const int64_t "
                        "symbols[]) {\n  (void)symbols;\n  return 8000;");

  g_autoptr(WeirGraph) tw = build_nested_twice();
  check(tw, NULL, NULL);
}

/* --------------------------------------------------------------- constants */

static GBytes *le_bytes(WeirDType dt, const double *v, guint n) {
  gsize es = weir_dtype_size(dt);
  guint8 *buf = g_malloc0(es * n + 1);
  for (guint i = 0; i < n; i++) {
    guint8 *p = buf + i * es;
    switch (dt) {
    case WEIR_DTYPE_F32: {
      float f = (float)v[i];
      guint32 bits;
      memcpy(&bits, &f, 4);
      bits = GUINT32_TO_LE(bits);
      memcpy(p, &bits, 4);
      break;
    }
    case WEIR_DTYPE_F64: {
      guint64 bits;
      memcpy(&bits, &v[i], 8);
      bits = GUINT64_TO_LE(bits);
      memcpy(p, &bits, 8);
      break;
    }
    case WEIR_DTYPE_I32: {
      guint32 bits = GUINT32_TO_LE((guint32)(gint32)v[i]);
      memcpy(p, &bits, 4);
      break;
    }
    case WEIR_DTYPE_I64: {
      guint64 bits = GUINT64_TO_LE((guint64)(gint64)v[i]);
      memcpy(p, &bits, 8);
      break;
    }
    default:
      *p = (guint8)v[i];
      break;
    }
  }
  return g_bytes_new_take(buf, es * n);
}

static void constant(WeirGraph *g, const char *name, WeirDType dt,
                     const char *shape, gboolean transient, const double *v,
                     guint n) {
  WeirContainer *c = array(g, name, dt, shape, transient);
  g_autoptr(GBytes) b = le_bytes(dt, v, n);
  weir_container_set_initial(c, b);
}

static WeirGraph *build_constants(void) {
  WeirGraph *g = weir_graph_new("constants");
  const double w[] = {0.1, -2.5, 3e-7, 1e30, 1.0 / 3, -0.0};
  constant(g, "W", WEIR_DTYPE_F32, "2, 3", FALSE, w, 6);
  const double d[] = {NAN, 1e-300, -0.0, 2.0 / 3};
  constant(g, "D", WEIR_DTYPE_F64, "4", TRUE, d, 4);
  const double l[] = {(double)G_MININT64, 9007199254740993.0, -7};
  constant(g, "L", WEIR_DTYPE_I64, "3", FALSE, l, 3);
  const double i32v[] = {(double)G_MININT32, 2147483647, -1};
  constant(g, "I", WEIR_DTYPE_I32, "3", FALSE, i32v, 3);
  const double bu[] = {1, 0, 1, 255};
  constant(g, "Bv", WEIR_DTYPE_BOOL, "3", FALSE, bu, 3);
  constant(g, "U", WEIR_DTYPE_U8, "4", FALSE, bu, 4);
  /* written constant data: copied into storage at entry */
  const double acc[] = {1, 2, 3};
  constant(g, "Acc", WEIR_DTYPE_F32, "3", TRUE, acc, 3);
  /* constant with column-major strides */
  constant(g, "Cs", WEIR_DTYPE_F32, "2, 3", TRUE, w, 6);
  WeirContainer *cs = weir_graph_container(g, "Cs");
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  g_autoptr(WeirExpr) two = weir_expr_const(2);
  WeirExpr *colmajor[] = {one, two};
  weir_container_set_strides(cs, colmajor);
  array(g, "out", WEIR_DTYPE_F64, "3, 8", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *ex;
  WeirNode *en =
      map(g, s, "use", S("i"), S("0:3"), WEIR_SCHEDULE_PARALLEL, &ex);
  WeirNode *t = weir_state_add_tasklet(
      g, s, "use", S("w", "dd", "ll", "ii", "bb", "uu", "a", "cs"),
      S("o", "acc"),
      "o[0, 0] = w[0, i] + w[1, i]\no[0, 1] = dd[i] * 1e300\n"
      "o[0, 2] = f64(ll[i] / 1000000)\no[0, 3] = ii[i]\n"
      "o[0, 4] = bb[i] ? 1 : 0\no[0, 5] = uu[i] + uu[3]\n"
      "o[0, 6] = cs[1, i]\no[0, 7] = isnan(dd[0]) ? 7 : 8\n"
      "acc = a * 10 + i");
  map_in(g, s, weir_state_add_access(g, s, "W"), en, t, "w", "0:2, 0:3",
         "0:2, 0:3");
  map_in(g, s, weir_state_add_access(g, s, "D"), en, t, "dd", "0:4", "0:4");
  map_in(g, s, weir_state_add_access(g, s, "L"), en, t, "ll", "0:3", "0:3");
  map_in(g, s, weir_state_add_access(g, s, "I"), en, t, "ii", "0:3", "0:3");
  map_in(g, s, weir_state_add_access(g, s, "Bv"), en, t, "bb", "0:3", "0:3");
  map_in(g, s, weir_state_add_access(g, s, "U"), en, t, "uu", "0:4", "0:4");
  map_in(g, s, weir_state_add_access(g, s, "Acc"), en, t, "a", "0:3", "i");
  map_in(g, s, weir_state_add_access(g, s, "Cs"), en, t, "cs", "0:2, 0:3",
         "0:2, 0:3");
  map_out(g, s, t, "o", ex, weir_state_add_access(g, s, "out"), "i, 0:8",
          "0:3, 0:8", WEIR_WCR_NONE);
  WeirNode *acc_out = weir_state_add_access(g, s, "Acc");
  map_out(g, s, t, "acc", ex, acc_out, "i", "0:3", WEIR_WCR_SUM);
  /* a second state reads the updated Acc */
  WeirState *s2 = weir_graph_add_state(g, "again");
  WeirMemlet *m = edge(g, s2, weir_state_add_access(g, s2, "Acc"), NULL,
                       weir_state_add_access(g, s2, "out"), NULL, "Acc", "0:3");
  assert_true(weir_memlet_set_other(m, "0, 5:8", NULL));
  transition(g, s, s2, NULL);
  return g;
}

static void test_constants(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_constants();
  check(g, NULL, NULL);
  g_autofree char *src = generate(g, NULL);
  assert_contains(src, "static const float W[6] = {");
  assert_contains(src, "0.1f, -2.5f, 3e-07f, 1e+30f, 0.33333334f, -0.0f,");
  assert_contains(src, "NAN, 1e-300, -0.0, 0.6666666666666666,");
  assert_contains(src, "(-INT64_C(9223372036854775807) - 1), "
                       "INT64_C(9007199254740992), -7,");
  assert_contains(src, "(-2147483647 - 1), 2147483647, -1,");
  assert_contains(src, "static const float Acc_init[3] = {");
  assert_contains(src, "memcpy(Acc, Acc_init, sizeof Acc_init);");
  assert_contains(src, "Cs[k0 + k1 * 2] = Cs_init[k0 * 3 + k1];");
}

/* ------------------------------------------------- transients and symbols */

/* A transient of symbolic size (arena sized at run time) used across two
 * states, and a scalar transient private to each iteration of a parallel
 * map. */
static WeirGraph *build_transients(void) {
  WeirGraph *g = weir_graph_new("transients");
  weir_graph_add_symbol(g, "N");
  array(g, "a", WEIR_DTYPE_F32, "N", FALSE);
  array(g, "b", WEIR_DTYPE_F32, "N", FALSE);
  array(g, "tmp", WEIR_DTYPE_F32, "N, 2", TRUE);
  array(g, "cnt", WEIR_DTYPE_I32, "N + 3", TRUE);
  array(g, "v", WEIR_DTYPE_F64, "", TRUE);
  WeirState *s = weir_graph_add_state(g, "fill");
  WeirNode *ex;
  WeirNode *en =
      map(g, s, "fill", S("i"), S("0:N"), WEIR_SCHEDULE_PARALLEL, &ex);
  WeirNode *t = weir_state_add_tasklet(g, s, "two", S("x"), S("pq"),
                                       "pq[0, 0] = x * 2\npq[0, 1] = x + 1");
  map_in(g, s, weir_state_add_access(g, s, "a"), en, t, "x", "0:N", "i");
  WeirNode *tmp = weir_state_add_access(g, s, "tmp");
  map_out(g, s, t, "pq", ex, tmp, "i, 0:2", "0:N, 0:2", WEIR_WCR_NONE);
  WeirState *s2 = weir_graph_add_state(g, "use");
  WeirNode *ex2;
  WeirNode *en2 =
      map(g, s2, "use", S("i"), S("0:N"), WEIR_SCHEDULE_PARALLEL, &ex2);
  /* v is written and read inside one iteration: private to it */
  WeirNode *t1 = weir_state_add_tasklet(g, s2, "diff", S("p", "q"), S("d"),
                                        "d = p * q - 1");
  map_in(g, s2, weir_state_add_access(g, s2, "tmp"), en2, t1, "p", "0:N, 0:2",
         "i, 0");
  map_in(g, s2, weir_state_add_access(g, s2, "tmp"), en2, t1, "q", "0:N, 0:2",
         "i, 1");
  WeirNode *v = weir_state_add_access(g, s2, "v");
  edge(g, s2, t1, "d", v, NULL, "v", "");
  /* an accumulation into the private copy: no atomic needed */
  WeirNode *bump = weir_state_add_tasklet(g, s2, "bump", S("d"), S("o"),
                                          "o = d * 0.5 + 0.25");
  edge(g, s2, v, NULL, bump, "d", "v", "");
  WeirNode *v2 = weir_state_add_access(g, s2, "v");
  WeirMemlet *acc = edge(g, s2, bump, "o", v2, NULL, "v", "");
  acc->wcr = WEIR_WCR_SUM;
  WeirNode *t2 = weir_state_add_tasklet(g, s2, "out", S("d"), S("o", "c"),
                                        "o = d / 2 + i\nc = i");
  edge(g, s2, v2, NULL, t2, "d", "v", "");
  map_out(g, s2, t2, "o", ex2, weir_state_add_access(g, s2, "b"), "i", "0:N",
          WEIR_WCR_NONE);
  map_out(g, s2, t2, "c", ex2, weir_state_add_access(g, s2, "cnt"), "i + 3",
          "3:N + 3", WEIR_WCR_SUM);
  transition(g, s, s2, NULL);
  return g;
}

static void test_transients(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_transients();
  GHashTable *sets[] = {bindings("N", 1, NULL), bindings("N", 10, NULL),
                        bindings("N", 1000, NULL), NULL};
  check_sets(g, sets, NULL);
  free_sets(sets);
  g_autofree char *src = generate(g, NULL);
  assert_contains(src, "weir_align64((size_t)(N * 2) * sizeof(float))");
  assert_contains(src, "double v[1] = {0};");
  assert_contains(src, "      v[0] += d * 0.5 + 0.25;");
  assert_lacks(src, "atomic\n      v[0]");
  assert_contains(src, "aligned_alloc(64, arena_bytes > 0 ? arena_bytes : 64)");
  assert_contains(src, "if (!workspace)\n    free(arena);");
  assert_contains(src, "size_t transients_workspace_size(const int64_t "
                       "symbols[]) {\n  const int64_t N = symbols[0];\n");
}

/* Zero fill of the arena: a transient written whole by a map before it is
 * read is left as it is; one written only in part keeps its zero fill
 * (the tests run with MALLOC_PERTURB_, so a missing fill shows). */
static WeirGraph *build_zero_fill(void) {
  WeirGraph *g = weir_graph_new("zero_fill");
  weir_graph_add_symbol(g, "N");
  array(g, "a", WEIR_DTYPE_F32, "N", FALSE);
  array(g, "b", WEIR_DTYPE_F32, "N", FALSE);
  array(g, "whole", WEIR_DTYPE_F32, "N", TRUE);
  array(g, "part", WEIR_DTYPE_F32, "N", TRUE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *ex;
  WeirNode *en =
      map(g, s, "make", S("i"), S("0:N"), WEIR_SCHEDULE_PARALLEL, &ex);
  WeirNode *t =
      weir_state_add_tasklet(g, s, "three", S("x"), S("y"), "y = x * 3");
  map_in(g, s, weir_state_add_access(g, s, "a"), en, t, "x", "0:N", "i");
  WeirNode *whole = weir_state_add_access(g, s, "whole");
  map_out(g, s, t, "y", ex, whole, "i", "0:N", WEIR_WCR_NONE);
  WeirNode *ex2;
  WeirNode *en2 =
      map(g, s, "tail", S("i"), S("1:N"), WEIR_SCHEDULE_PARALLEL, &ex2);
  WeirNode *t2 =
      weir_state_add_tasklet(g, s, "inc", S("x"), S("y"), "y = x + 1");
  map_in(g, s, weir_state_add_access(g, s, "a"), en2, t2, "x", "1:N", "i");
  WeirNode *part = weir_state_add_access(g, s, "part");
  map_out(g, s, t2, "y", ex2, part, "i", "1:N", WEIR_WCR_NONE);
  WeirNode *ex3;
  WeirNode *en3 =
      map(g, s, "sum", S("i"), S("0:N"), WEIR_SCHEDULE_PARALLEL, &ex3);
  WeirNode *t3 =
      weir_state_add_tasklet(g, s, "add", S("p", "q"), S("y"), "y = p + q");
  map_in(g, s, whole, en3, t3, "p", "0:N", "i");
  map_in(g, s, part, en3, t3, "q", "0:N", "i");
  map_out(g, s, t3, "y", ex3, weir_state_add_access(g, s, "b"), "i", "0:N",
          WEIR_WCR_NONE);
  return g;
}

static void test_zero_fill(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_zero_fill();
  GHashTable *sets[] = {bindings("N", 1, NULL), bindings("N", 33, NULL),
                        bindings("N", 5000, NULL), NULL};
  check_sets(g, sets, NULL);
  free_sets(sets);
  g_autofree char *src = generate(g, NULL);
  assert_contains(src, "/* whole: written whole before it is read */");
  assert_contains(src, "memset(arena + whole_bytes, 0, part_bytes);");
  assert_lacks(src, "memset(arena, 0, arena_bytes");
}

/* ------------------------------------------------------------------- names */

/* Names from a model file that are C keywords, macros, or names the
 * generated code uses itself; labels that try to end a comment. */
static WeirGraph *build_names(void) {
  WeirGraph *g = weir_graph_new("1st model */ #include <x>");
  weir_graph_add_symbol(g, "double");
  const char *names[] = {"int",  "args", "symbols", "arena",    "NAN",
                         "done", "exp",  "weir_x",  "INT8_MAX", "nested_q"};
  for (guint k = 0; k < G_N_ELEMENTS(names); k++)
    array(g, names[k], WEIR_DTYPE_F32, "double", FALSE);
  array(g, "status", WEIR_DTYPE_F32, "double", TRUE);
  WeirState *s = weir_graph_add_state(g, "st */ ?\?/ \n evil");
  WeirNode *ex;
  WeirNode *en =
      map(g, s, "m */ x", S("for"), S("0:double"), WEIR_SCHEDULE_PARALLEL, &ex);
  WeirNode *t = weir_state_add_tasklet(
      g, s, "*/ t", S("return", "if", "exp"), S("float", "int"),
      "while = return + if * exp\nfloat = while\nint = while * for");
  map_in(g, s, weir_state_add_access(g, s, "args"), en, t, "return", "0:double",
         "for");
  map_in(g, s, weir_state_add_access(g, s, "NAN"), en, t, "if", "0:double",
         "for");
  map_in(g, s, weir_state_add_access(g, s, "exp"), en, t, "exp", "0:double",
         "for");
  WeirNode *st = weir_state_add_access(g, s, "status");
  map_out(g, s, t, "float", ex, st, "for", "0:double", WEIR_WCR_NONE);
  map_out(g, s, t, "int", ex, weir_state_add_access(g, s, "int"), "for",
          "0:double", WEIR_WCR_NONE);
  edge(g, s, st, NULL, weir_state_add_access(g, s, "done"), NULL, "status",
       "0:double");
  return g;
}

static void test_names(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_names();
  g_autoptr(GHashTable) b = bindings("double", 17, NULL);
  check(g, b, NULL);
  g_autofree char *prefix = weir_codegen_prefix(g);
  assert_string_equal(prefix, "v1st_model_____include__x_");
  g_autofree char *src = generate(g, NULL);
  /* nothing from the file ends a comment early or reaches the code raw */
  const char *body = strstr(src, "*/\n#include <math.h>");
  assert_non_null(body);
  assert_lacks(body + 2, "*/ ");
  assert_lacks(src, "?\?/");
  assert_contains(src, "const int64_t double_ = symbols[0];");
  assert_contains(src, "float *const int_ = (float *)args[0];");
  assert_contains(src, "for (int64_t for_ = 0; for_ < double_; for_++)");

  g_autoptr(WeirGraph) dup = weir_graph_new("while");
  g_autofree char *p2 = weir_codegen_prefix(dup);
  assert_string_equal(p2, "while_");
}

/* ----------------------------------------------------- library expansions */

/* One library node (operator conventions of weir-ops.h): inputs X<k> on
 * in<k>, the output Y on out0. */
typedef struct {
  const char *op;
  const char *in[4];
  const char *out;
  const char *ints_name; /* an INTS attribute, or NULL */
  gint64 ints[4];
  guint n_ints;
} OpCase;

static WeirGraph *build_op(const OpCase *oc) {
  g_autofree char *name = g_strdup_printf("op_%s", oc->op);
  WeirGraph *g = weir_graph_new(name);
  weir_graph_add_symbol(g, "N");
  WeirState *s = weir_graph_add_state(g, "main");
  const char *ins[5] = {NULL};
  const char *all[] = {"in0", "in1", "in2", "in3"};
  guint n = 0;
  for (; n < 4 && oc->in[n]; n++)
    ins[n] = all[n];
  WeirNode *lib = weir_state_add_library(g, s, "node", oc->op, ins, S("out0"));
  for (guint k = 0; k < n; k++) {
    g_autofree char *x = g_strdup_printf("X%u", k);
    WeirContainer *c = array(g, x, WEIR_DTYPE_F32, oc->in[k], FALSE);
    g_autoptr(WeirSubset) full = weir_container_full_subset(c);
    g_autofree char *sub = weir_subset_to_string(full);
    edge(g, s, weir_state_add_access(g, s, x), NULL, lib, ins[k], x, sub);
  }
  WeirContainer *y = array(g, "Y", WEIR_DTYPE_F32, oc->out, FALSE);
  g_autoptr(WeirSubset) full = weir_container_full_subset(y);
  g_autofree char *sub = weir_subset_to_string(full);
  edge(g, s, lib, "out0", weir_state_add_access(g, s, "Y"), NULL, "Y", sub);
  if (oc->ints_name)
    weir_node_set_attr_ints(lib, oc->ints_name, oc->ints, oc->n_ints);
  if (oc->op[0] == 'M' && strcmp(oc->op, "MaxPool") == 0)
    weir_node_set_attr_ints(lib, "strides", oc->ints, oc->n_ints);
  g_autoptr(GError) err = NULL;
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s: %s", oc->op, err->message);
  return g;
}

/* The code of a program with library nodes comes from their chosen
 * implementations (expansions, or native calls such as BLAS): it must agree
 * with the interpreter on the program expanded into maps. */
static void test_library_ops(void **state) {
  (void)state;
  static const OpCase cases[] = {
      {"Gemm", {"8, 5", "5, 6", "6"}, "8, 6", NULL, {0}, 0},
      {"MatMul", {"3, 4, 5", "5, 2"}, "3, 4, 2", NULL, {0}, 0},
      {"Softmax", {"4, 7"}, "4, 7", NULL, {0}, 0},
      {"LayerNormalization", {"3, 8", "8", "8"}, "3, 8", NULL, {0}, 0},
      {"MaxPool", {"1, 2, 6, 6"}, "1, 2, 3, 3", "kernel_shape", {2, 2}, 2},
      {"Conv", {"1, 2, 5, 5", "3, 2, 3, 3", "3"}, "1, 3, 3, 3", NULL, {0}, 0},
      {"Relu", {"N, 5"}, "N, 5", NULL, {0}, 0},
      {"Add", {"N, 5", "5"}, "N, 5", NULL, {0}, 0},
      {"Sigmoid", {"N"}, "N", NULL, {0}, 0},
  };
  g_autoptr(GHashTable) n = bindings("N", 11, NULL);
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autoptr(WeirGraph) g = build_op(&cases[k]);
    g_autoptr(WeirGraph) expanded = weir_graph_copy(g);
    g_autoptr(GError) err = NULL;
    if (!weir_expand_all(expanded, NULL, NULL, &err))
      fail_msg("expanding %s: %s", cases[k].op, err->message);
    Kernel kern = {0};
    kernel_load(g, NULL, &kern);
    compare_run(expanded, &kern, n, NULL);
    kernel_unload(&kern);
    /* generating did not change the program */
    assert_int_equal(g->states->len, 1);
  }
}

/* ---------------------------------------------- golden text, determinism */

static void test_golden(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autofree char *src = generate(g, NULL);
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "tests", "core",
                                           "golden", "vector_add.c", NULL);
  if (g_getenv("WEIR_UPDATE_GOLDEN"))
    assert_true(g_file_set_contents(path, src, -1, NULL));
  g_autofree char *want = NULL;
  g_autoptr(GError) err = NULL;
  if (!g_file_get_contents(path, &want, NULL, &err))
    fail_msg("%s: %s", path, err->message);
  if (strcmp(src, want) != 0)
    fail_msg("generated code differs from %s:\n%s", path, src);
}

typedef WeirGraph *(*Builder)(void);

static WeirGraph *build_nested_rows_parallel(void) {
  return build_nested_rows(WEIR_SCHEDULE_PARALLEL);
}

static void test_determinism(void **state) {
  (void)state;
  Builder builders[] = {build_dtypes,       build_schedules,
                        build_copies,       build_indexed,
                        build_branch_loop,  build_nested_loops,
                        build_irreducible,  build_diamond,
                        build_nested_block, build_nested_rows_parallel,
                        build_constants,    build_transients,
                        build_names};
  for (guint k = 0; k < G_N_ELEMENTS(builders); k++) {
    g_autoptr(WeirGraph) g = builders[k]();
    g_autoptr(WeirGraph) h = builders[k]();
    g_autofree char *a = generate(g, NULL);
    g_autofree char *b = generate(g, NULL);
    g_autofree char *c = generate(h, NULL);
    assert_string_equal(a, b);
    assert_string_equal(a, c);
    /* the JSON round trip keeps the code */
    g_autofree char *json = weir_graph_to_json(g);
    g_autoptr(GError) err = NULL;
    g_autoptr(WeirGraph) back = weir_graph_from_json(json, -1, NULL, &err);
    if (!back)
      fail_msg("%s: %s", g->name, err->message);
    g_autofree char *d = generate(back, NULL);
    assert_string_equal(a, d);
  }
}

/* ---------------------------------------------------------- api and errors */

static void test_header_and_arguments(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_constants();
  g_autoptr(GPtrArray) args = weir_codegen_arguments(g);
  /* constants are not arguments */
  assert_int_equal(args->len, 1);
  assert_string_equal(((WeirContainer *)g_ptr_array_index(args, 0))->name,
                      "out");
  g_autoptr(WeirGraph) va = load_sample("vector_add.json");
  g_autofree char *h = weir_codegen_header(va);
  assert_contains(h, "int vector_add_run(void *const args[], const int64_t "
                     "symbols[],\n"
                     "        const void *const consts[], void *workspace);");
  assert_contains(h, "size_t vector_add_workspace_size(const int64_t "
                     "symbols[]);");
  assert_contains(h, " *   args[2]  C  f32[N]\n");
  assert_contains(h, " *   symbols[0]  N\n");
  /* the header compiles on its own, and with the source */
  GModule *m = compile_source(h, FALSE);
  g_module_close(m);
  g_autofree char *src = generate(va, NULL);
  g_autofree char *both = g_strconcat(h, src, NULL);
  m = compile_source(both, TRUE);
  g_module_close(m);
  /* the source does not change the program */
  g_autofree char *before = weir_graph_to_json(va);
  g_autofree char *again = generate(va, NULL);
  g_autofree char *after = weir_graph_to_json(va);
  assert_string_equal(before, after);
}

static void test_errors(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  /* an invalid program */
  g_autoptr(WeirGraph) g = weir_graph_new("bad");
  array(g, "A", WEIR_DTYPE_F32, "4", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *t = weir_state_add_tasklet(g, s, "t", NULL, S("o"), "o = 1");
  edge(g, s, t, "o", weir_state_add_access(g, s, "A"), NULL, "A", "7");
  assert_null(weir_codegen_c(g, NULL, &err));
  assert_true(g_error_matches(err, WEIR_ERROR, WEIR_ERROR_INVALID));
  assert_non_null(strstr(err->message, "out of bounds"));
  g_clear_error(&err);
  /* a library node without an expansion */
  g_autoptr(WeirGraph) lib = weir_graph_new("lib");
  array(lib, "A", WEIR_DTYPE_F32, "4", FALSE);
  array(lib, "B", WEIR_DTYPE_F32, "4", FALSE);
  WeirState *ls = weir_graph_add_state(lib, "main");
  WeirNode *op =
      weir_state_add_library(lib, ls, "mystery", "NoSuchOp", S("x"), S("y"));
  edge(lib, ls, weir_state_add_access(lib, ls, "A"), NULL, op, "x", "A", "0:4");
  edge(lib, ls, op, "y", weir_state_add_access(lib, ls, "B"), NULL, "B", "0:4");
  assert_null(weir_codegen_c(lib, NULL, &err));
  assert_non_null(err);
  assert_non_null(strstr(err->message, "mystery"));
  g_clear_error(&err);
  /* a layout that depends on a symbol the program assigns */
  g_autoptr(WeirGraph) lay = weir_graph_new("layout");
  weir_graph_add_symbol(lay, "t");
  array(lay, "A", WEIR_DTYPE_F32, "t + 1", FALSE);
  WeirState *s1 = weir_graph_add_state(lay, "one");
  WeirState *s2 = weir_graph_add_state(lay, "two");
  WeirNode *w = weir_state_add_tasklet(lay, s2, "w", NULL, S("o"), "o = 1");
  edge(lay, s2, w, "o", weir_state_add_access(lay, s2, "A"), NULL, "A", "0");
  WeirTransition *tr = transition(lay, s1, s2, NULL);
  assign(tr, "t", "3");
  assert_null(weir_codegen_c(lay, NULL, &err));
  assert_true(g_error_matches(err, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED));
  assert_non_null(strstr(err->message, "container 'A' uses symbol 't'"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden),
      cmocka_unit_test(test_samples),
      cmocka_unit_test(test_dtypes),
      cmocka_unit_test(test_wcr),
      cmocka_unit_test(test_unit_leading_loop),
      cmocka_unit_test(test_accumulators),
      cmocka_unit_test(test_schedules),
      cmocka_unit_test(test_copies),
      cmocka_unit_test(test_indexed),
      cmocka_unit_test(test_control_flow),
      cmocka_unit_test(test_nested),
      cmocka_unit_test(test_constants),
      cmocka_unit_test(test_transients),
      cmocka_unit_test(test_zero_fill),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_library_ops),
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_header_and_arguments),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
