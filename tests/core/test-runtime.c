/* test-runtime.c — the compiler driver and kernels.
 *
 * Hand-written kernels that follow the generated-code ABI test the driver,
 * the loader and the argument checks independently of the code generator;
 * their results and error messages are compared with the reference
 * interpreter on the same program and inputs.  The generated-code tests at
 * the end compile the bundled samples.  Every test uses a private cache
 * directory (runtime-fixture.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "runtime-fixture.h"
#include "weir-codegen.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-tensor-io.h"

static int setup(void **state) {
  *state = fixture_new();
  return 0;
}

static int teardown(void **state) {
  fixture_free(*state);
  return 0;
}

static WeirGraph *load_sample(const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_load(path, &err);
  if (!g)
    fail_msg("%s: %s", name, err->message);
  return g;
}

static GHashTable *tensors_new(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                               (GDestroyNotify)weir_tensor_free);
}

static void put(GHashTable *args, const char *name, WeirDType dtype, guint rank,
                const gint64 *shape, guint64 seed) {
  WeirTensor *t = weir_tensor_new(dtype, rank, shape);
  weir_tensor_fill_random(t, seed);
  g_hash_table_replace(args, g_strdup(name), t);
}

static GHashTable *copy_tensors(GHashTable *args) {
  GHashTable *c = tensors_new();
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, args);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(c, g_strdup(k), weir_tensor_copy(v));
  return c;
}

/* Every tensor of a equals the one of the same name in b. */
static void assert_same_tensors(GHashTable *a, GHashTable *b, double rtol,
                                double atol) {
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, a);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    g_autoptr(GError) err = NULL;
    if (!weir_tensor_allclose(v, g_hash_table_lookup(b, k), rtol, atol, NULL,
                              &err))
      fail_msg("'%s': %s", (char *)k, err->message);
  }
}

/* ------------------------------------------------- hand-written kernels */

static const char vector_add_source[] =
    "#include <stdint.h>\n"
    "int vector_add_run(void *const args[], const int64_t symbols[],\n"
    "    const void *const consts[], void *workspace) {\n"
    "  const float *A = args[0], *B = args[1];\n"
    "  float *C = args[2];\n"
    "  for (int64_t i = 0; i < symbols[0]; i++)\n"
    "    C[i] = A[i] + B[i];\n"
    "  return 0;\n"
    "}\n"
    "int vector_add_abi_version(void) { return 2; }\n"
    "unsigned long vector_add_workspace_size(const void *s) { (void)s; return "
    "0; }\n";

/* samples/loop.json: x = x * a + b, T times; symbols {T, t}. */
static const char loop_source[] =
    "#include <stdint.h>\n"
    "int axpb_loop_run(void *const args[], const int64_t symbols[],\n"
    "    const void *const consts[], void *workspace) {\n"
    "  float *x = args[0];\n"
    "  const float a = *(const float *)args[1], b = *(const float *)args[2];\n"
    "  for (int64_t t = 0; t < symbols[0]; t++)\n"
    "    for (int i = 0; i < 256; i++)\n"
    "      x[i] = x[i] * a + b;\n"
    "  return 0;\n"
    "}\n"
    "int axpb_loop_abi_version(void) { return 2; }\n"
    "unsigned long axpb_loop_workspace_size(const void *s) { (void)s; return "
    "0; }\n";

static WeirKernel *compile_source(Fixture *f, const char *source,
                                  const char *prefix, const WeirGraph *g) {
  g_autoptr(GError) err = NULL;
  WeirKernel *k =
      weir_kernel_compile_source(source, prefix, g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("compile %s: %s", prefix, err->message);
  return k;
}

static GHashTable *vector_add_args(gint64 n) {
  GHashTable *args = tensors_new();
  put(args, "A", WEIR_DTYPE_F32, 1, &n, 1);
  put(args, "B", WEIR_DTYPE_F32, 1, &n, 2);
  put(args, "C", WEIR_DTYPE_F32, 1, &n, 3);
  return args;
}

static void test_handwritten_matches_interpreter(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(WeirKernel) k =
      compile_source(f, vector_add_source, "vector_add", g);
  assert_string_equal(weir_kernel_prefix(k), "vector_add");
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "N", 1000);
  g_autoptr(GHashTable) args = vector_add_args(1000);
  g_autoptr(GHashTable) ref = copy_tensors(args);
  g_autoptr(GError) err = NULL;
  if (!weir_kernel_run(k, sym, args, &err))
    fail_msg("run: %s", err->message);
  if (!weir_interpret(g, sym, ref, NULL, &err))
    fail_msg("interpret: %s", err->message);
  assert_same_tensors(args, ref, 0, 0);
  WeirTensor *c = g_hash_table_lookup(args, "C");
  assert_true(weir_tensor_get(c, 999) != 0);

  /* a loop over states: t is assigned by a transition, only T is bound */
  g_autoptr(WeirGraph) lg = load_sample("loop.json");
  g_autoptr(WeirKernel) lk = compile_source(f, loop_source, "axpb_loop", lg);
  g_autoptr(GHashTable) lsym = weir_bindings_new();
  weir_bindings_set(lsym, "T", 5);
  g_autoptr(GHashTable) largs = tensors_new();
  gint64 n = 256;
  put(largs, "x", WEIR_DTYPE_F32, 1, &n, 7);
  put(largs, "a", WEIR_DTYPE_F32, 0, NULL, 8);
  put(largs, "b", WEIR_DTYPE_F32, 0, NULL, 9);
  g_autoptr(GHashTable) lref = copy_tensors(largs);
  if (!weir_kernel_run(lk, lsym, largs, &err))
    fail_msg("run loop: %s", err->message);
  if (!weir_interpret(lg, lsym, lref, NULL, &err))
    fail_msg("interpret loop: %s", err->message);
  assert_same_tensors(largs, lref, 1e-6, 1e-6);
}

/* The compiled kernel rejects bad arguments with the interpreter's words. */
static void test_argument_errors_match_interpreter(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(WeirKernel) k =
      compile_source(f, vector_add_source, "vector_add", g);
  const struct {
    const char *what, *expect;
  } cases[] = {
      {"short", "argument 'A': expected f32[100], got f32[99]"},
      {"dtype", "argument 'B': expected f32[100], got f64[100]"},
      {"rank", "argument 'C': expected f32[100], got f32[10, 10]"},
      {"missing", "missing argument 'C' (f32[100])"},
      {"unknown", "argument 'Z' does not name a container"},
      {"unbound", "container 'A': shape dimension 0: "},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GHashTable) sym = weir_bindings_new();
    if (strcmp(cases[i].what, "unbound") != 0)
      weir_bindings_set(sym, "N", 100);
    g_autoptr(GHashTable) args = vector_add_args(100);
    const char *w = cases[i].what;
    if (strcmp(w, "short") == 0) {
      gint64 n = 99;
      put(args, "A", WEIR_DTYPE_F32, 1, &n, 1);
    } else if (strcmp(w, "dtype") == 0) {
      gint64 n = 100;
      put(args, "B", WEIR_DTYPE_F64, 1, &n, 1);
    } else if (strcmp(w, "rank") == 0) {
      gint64 s[2] = {10, 10};
      put(args, "C", WEIR_DTYPE_F32, 2, s, 1);
    } else if (strcmp(w, "missing") == 0) {
      g_hash_table_remove(args, "C");
    } else if (strcmp(w, "unknown") == 0) {
      gint64 n = 1;
      put(args, "Z", WEIR_DTYPE_F32, 1, &n, 1);
    }
    g_autoptr(GError) kerr = NULL, ierr = NULL;
    assert_false(weir_kernel_run(k, sym, args, &kerr));
    assert_false(weir_interpret(g, sym, args, NULL, &ierr));
    assert_int_equal(kerr->code, WEIR_ERROR_INVALID);
    if (!strstr(kerr->message, cases[i].expect))
      fail_msg("%s: '%s' lacks '%s'", w, kerr->message, cases[i].expect);
    assert_string_equal(kerr->message, ierr->message);
  }
}

static void test_symbol_and_constant_errors(void **state) {
  Fixture *f = *state;
  g_autoptr(GError) err = NULL;
  /* a declared symbol nothing binds or assigns */
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  weir_graph_add_symbol(g, "M");
  g_autoptr(WeirKernel) k =
      compile_source(f, vector_add_source, "vector_add", g);
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "N", 10);
  g_autoptr(GHashTable) args = vector_add_args(10);
  assert_false(weir_kernel_run(k, sym, args, &err));
  assert_non_null(strstr(err->message, "symbol 'M'"));
  g_clear_error(&err);

  /* a constant container is compiled in, not passed */
  g_autoptr(WeirGraph) cg = load_sample("vector_add.json");
  WeirContainer *b = weir_graph_container(cg, "B");
  g_autoptr(GBytes) data = g_bytes_new_static("\0\0\0\0", 4);
  weir_container_set_initial(b, data);
  g_autoptr(WeirKernel) ck =
      compile_source(f, vector_add_source, "vector_add", cg);
  assert_false(weir_kernel_run(ck, sym, args, &err));
  assert_non_null(strstr(err->message, "argument 'B' names a constant"));
  g_clear_error(&err);

  /* without a program only raw calls work */
  g_autoptr(WeirKernel) raw =
      compile_source(f, vector_add_source, "vector_add", NULL);
  assert_false(weir_kernel_run(raw, sym, args, &err));
  assert_non_null(strstr(err->message, "weir_kernel_call"));
}

/* vector_add.json with every container of n elements (a constant). */
static WeirGraph *vector_add_fixed(gint64 n) {
  WeirGraph *g = load_sample("vector_add.json");
  g_autoptr(WeirExpr) e = weir_expr_const(n);
  for (guint i = 0; i < g->containers->len; i++)
    assert_true(
        weir_container_set_shape(g_ptr_array_index(g->containers, i), 1, &e));
  return g;
}

/* The size check of weir_kernel_run: skipped after the first call that
 * passed it when no layout has a symbol, made in every call otherwise, and
 * never remembered when it fails.  The argument checks stay in every call. */
static void test_size_check_per_call(void **state) {
  Fixture *f = *state;
  g_autoptr(GError) err = NULL;
  /* symbolic layouts: N = 100 passes, then N = 2^63 - 1 must fail the size
   * check (not reach the argument check) */
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(WeirKernel) k =
      compile_source(f, vector_add_source, "vector_add", g);
  g_autoptr(GHashTable) sym = weir_bindings_new();
  g_autoptr(GHashTable) args = vector_add_args(100);
  weir_bindings_set(sym, "N", 100);
  if (!weir_kernel_run(k, sym, args, &err))
    fail_msg("run: %s", err->message);
  weir_bindings_set(sym, "N", G_MAXINT64);
  assert_false(weir_kernel_run(k, sym, args, &err));
  if (!strstr(err->message, "byte size overflows 64 bits"))
    fail_msg("symbolic, second call: '%s'", err->message);
  g_clear_error(&err);

  /* fixed layouts that overflow: every call fails the size check */
  g_autoptr(WeirGraph) huge = vector_add_fixed((gint64)1 << 62);
  g_autoptr(WeirKernel) hk =
      compile_source(f, vector_add_source, "vector_add", huge);
  weir_bindings_set(sym, "N", 100);
  for (guint call = 0; call < 2; call++) {
    assert_false(weir_kernel_run(hk, sym, args, &err));
    if (!strstr(err->message, "byte size overflows 64 bits"))
      fail_msg("fixed, huge, call %u: '%s'", call, err->message);
    g_clear_error(&err);
  }

  /* fixed layouts that fit: repeated calls compute the interpreter's
   * result, and a wrong argument is still refused after the check was
   * skipped */
  g_autoptr(WeirGraph) fg = vector_add_fixed(100);
  g_autoptr(WeirKernel) fk =
      compile_source(f, vector_add_source, "vector_add", fg);
  for (guint call = 0; call < 3; call++) {
    g_autoptr(GHashTable) a = vector_add_args(100);
    put(a, "A", WEIR_DTYPE_F32, 1, (const gint64[]){100}, 10 + call);
    g_autoptr(GHashTable) ref = copy_tensors(a);
    if (!weir_kernel_run(fk, sym, a, &err))
      fail_msg("fixed, call %u: %s", call, err->message);
    if (!weir_interpret(fg, sym, ref, NULL, &err))
      fail_msg("interpret: %s", err->message);
    assert_same_tensors(a, ref, 0, 0);
  }
  g_autoptr(GHashTable) bad = vector_add_args(99);
  assert_false(weir_kernel_run(fk, sym, bad, &err));
  assert_non_null(strstr(err->message, "expected f32[100], got f32[99]"));
}

/* ------------------------------------------------------- compiler errors */

static void test_compiler_failure_has_diagnostics(void **state) {
  Fixture *f = *state;
  const char *source = "int broken_run(void *const a[], const long s[], const "
                       "void *c, void *w) {\n"
                       "  return undeclared_thing + ;\n"
                       "}\n";
  g_autoptr(GError) err = NULL;
  WeirCompileInfo info = {0};
  g_autoptr(WeirKernel) k =
      weir_kernel_compile_source(source, "broken", NULL, &f->opts, &info, &err);
  assert_null(k);
  assert_int_equal(err->code, WEIR_ERROR_RUNTIME);
  const char *want[] = {"compiling 'broken' failed (exit status",
                        f->wrapper, /* the command line */
                        " -O1 -fPIC -shared -o ",
                        "broken.c:2", /* the diagnostics, with the line */
                        "undeclared_thing"};
  for (guint i = 0; i < G_N_ELEMENTS(want); i++)
    if (!strstr(err->message, want[i]))
      fail_msg("'%s' lacks '%s'", err->message, want[i]);
  /* nothing was cached */
  g_autoptr(WeirCache) c = weir_cache_open(f->cache_dir, NULL);
  WeirCacheStats st;
  assert_true(weir_cache_stats(c, &st, NULL));
  assert_int_equal(st.entries, 0);
  weir_compile_info_clear(&info);
}

static void test_diagnostics_are_truncated(void **state) {
  Fixture *f = *state;
  GString *src = g_string_new(NULL);
  for (int i = 0; i < 200; i++)
    g_string_append_printf(src, "int f%d(void) { return missing_%d; }\n", i, i);
  g_autoptr(GError) err = NULL;
  g_autofree char *out = g_build_filename(f->dir, "x.so", NULL);
  assert_false(weir_compile(src->str, "many", out, &f->opts, NULL, &err));
  g_string_free(src, TRUE);
  assert_non_null(strstr(err->message, "more lines of compiler output]"));
  assert_non_null(strstr(err->message, "missing_0"));
  assert_null(strstr(err->message, "missing_199"));
  assert_true(strlen(err->message) < 9000);
}

static void test_compiler_not_found(void **state) {
  Fixture *f = *state;
  f->opts.compiler = "/nonexistent/weir-cc";
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirKernel) k = weir_kernel_compile_source(
      vector_add_source, "vector_add", NULL, &f->opts, NULL, &err);
  assert_null(k);
  assert_int_equal(err->code, WEIR_ERROR_IO);
  assert_non_null(strstr(err->message, "/nonexistent/weir-cc"));
}

static void test_bad_kernels(void **state) {
  Fixture *f = *state;
  const struct {
    const char *source, *prefix, *expect;
    int code;
  } cases[] = {
      {"int k_run(void *const a[], const long s[], const void *c, void *w) { "
       "return 0; }\n"
       "int k_abi_version(void) { return 3; }\n",
       "k", "ABI version 3", WEIR_ERROR_VERSION},
      {"int k_run(void *const a[], const long s[], const void *c, void *w) { "
       "return 0; }\n"
       "int k_abi_version(void) { return 2; }\n",
       "k", "does not define 'k_workspace_size'", WEIR_ERROR_RUNTIME},
      {"int k_abi_version(void) { return 2; }\n"
       "unsigned long k_workspace_size(const void *s) { (void)s; return 0; }\n",
       "k", "does not define 'k_run'", WEIR_ERROR_RUNTIME},
      {"int k_run(void *const a[], const long s[], const void *c, void *w) { "
       "return 0; }\n",
       "k", "does not define 'k_abi_version'", WEIR_ERROR_RUNTIME},
      {"int k_run(void *const a[], const long s[], const void *c, void *w) { "
       "return 0; }\n"
       "int k_abi_version(void) { return 2; }\n"
       "unsigned long k_workspace_size(const void *s) { (void)s; return 0; }\n",
       "no such name!", "not a C identifier", WEIR_ERROR_INVALID},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) err = NULL;
    g_autoptr(WeirKernel) k = weir_kernel_compile_source(
        cases[i].source, cases[i].prefix, NULL, &f->opts, NULL, &err);
    assert_null(k);
    if (!strstr(err->message, cases[i].expect))
      fail_msg("case %u: '%s' lacks '%s'", i, err->message, cases[i].expect);
    assert_int_equal(err->code, cases[i].code);
  }

  /* a non-zero status from the entry point is an error */
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirKernel) k =
      compile_source(f,
                     "int fail_run(void *const a[], const long s[], const void "
                     "*c, void *w) { return 3; }\n"
                     "int fail_abi_version(void) { return 2; }\n"
                     "unsigned long fail_workspace_size(const void *s) { "
                     "(void)s; return 0; }\n",
                     "fail", NULL);
  assert_false(weir_kernel_call(k, NULL, NULL, &err));
  assert_int_equal(err->code, WEIR_ERROR_RUNTIME);
  assert_non_null(strstr(err->message, "status 3"));
}

static void test_flags_and_identity(void **state) {
  Fixture *f = *state;
  g_autoptr(GError) err = NULL;
  f->opts.flags = "  -O2   '-DNAME=a b'  -fPIC ";
  g_autofree char *flags = weir_compiler_flags(&f->opts, &err);
  assert_string_equal(flags, "-O2 '-DNAME=a b' -fPIC");
  f->opts.flags = "-O2 '-DX";
  assert_null(weir_compiler_flags(&f->opts, &err));
  assert_int_equal(err->code, WEIR_ERROR_INVALID);
  g_clear_error(&err);
  f->opts.flags = NULL;
  g_autofree char *def = weir_compiler_flags(&f->opts, &err);
  assert_string_equal(def, WEIR_COMPILE_DEFAULT_FLAGS);

  /* identity: the first line of --version, asked once per process */
  g_autofree char *id1 = weir_compiler_identity(&f->opts, &err);
  g_autofree char *id2 = weir_compiler_identity(&f->opts, &err);
  assert_non_null(id1);
  assert_true(*id1 && !strchr(id1, '\n'));
  assert_string_equal(id1, id2);
  g_autofree char *log = NULL;
  assert_true(g_file_get_contents(f->log, &log, NULL, NULL));
  assert_string_equal(log, "--version\n");

  /* the compiler command: option, else $CC, else cc */
  WeirCompileOptions none = {0};
  g_setenv("CC", "my-cc -m64", TRUE);
  g_autofree char *c1 = weir_compiler_command(&none);
  assert_string_equal(c1, "my-cc -m64");
  g_unsetenv("CC");
  g_autofree char *c2 = weir_compiler_command(NULL);
  assert_string_equal(c2, "cc");
  g_autofree char *c3 = weir_compiler_command(&f->opts);
  assert_string_equal(c3, f->wrapper);
}

static void test_compile_many(void **state) {
  Fixture *f = *state;
  enum { N = 4 };
  char *src[N], *out[N];
  WeirCompileJob jobs[N];
  for (int i = 0; i < N; i++) {
    src[i] = g_strdup_printf("int unit%d(void) { return %s; }\n", i,
                             i == 2 ? "oops" : "1");
    out[i] = g_strdup_printf("%s/unit%d.so", f->dir, i);
    jobs[i] = (WeirCompileJob){.source = src[i], .output = out[i]};
  }
  g_autoptr(GError) err = NULL;
  assert_false(weir_compile_many(jobs, N, &f->opts, &err));
  assert_non_null(strstr(err->message, "oops"));
  for (int i = 0; i < N; i++) {
    if (i == 2) {
      assert_non_null(jobs[i].error);
      assert_false(g_file_test(out[i], G_FILE_TEST_EXISTS));
    } else {
      assert_null(jobs[i].error);
      assert_true(jobs[i].seconds > 0);
      assert_true(g_file_test(out[i], G_FILE_TEST_IS_REGULAR));
    }
    g_clear_error(&jobs[i].error);
  }
  assert_int_equal(fixture_compiles(f), N);
  for (int i = 0; i < N; i++) {
    g_free(src[i]);
    g_free(out[i]);
  }
}

/* ------------------------------------------------------ threads, timing */

static const char threads_source[] =
    "#include <stdint.h>\n"
    "#include <omp.h>\n"
    "int threads_run(void *const args[], const int64_t symbols[],\n"
    "    const void *const consts[], void *workspace) {\n"
    "  int32_t *out = args[0];\n"
    "  (void)symbols;\n"
    "#pragma omp parallel\n"
    "  {\n"
    "#pragma omp single\n"
    "    out[0] = omp_get_num_threads();\n"
    "  }\n"
    "  return 0;\n"
    "}\n"
    "int threads_abi_version(void) { return 2; }\n"
    "unsigned long threads_workspace_size(const void *s) { (void)s; return 0; "
    "}\n";

static void test_set_threads(void **state) {
  Fixture *f = *state;
  f->opts.flags = "-O1 -fopenmp -fPIC -shared";
  g_autoptr(WeirKernel) k = compile_source(f, threads_source, "threads", NULL);
  g_autoptr(GError) err = NULL;
  for (int n = 1; n <= 3; n++) {
    gint32 out = 0;
    void *args[] = {&out};
    assert_true(weir_kernel_set_threads(k, n, &err));
    assert_true(weir_kernel_call(k, args, NULL, &err));
    assert_int_equal(out, n);
  }
  f->opts.flags = TEST_FLAGS;
  g_autoptr(WeirKernel) plain =
      compile_source(f, vector_add_source, "vector_add", NULL);
  assert_false(weir_kernel_set_threads(plain, 2, &err));
  assert_int_equal(err->code, WEIR_ERROR_UNSUPPORTED);
}

static void test_bench(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(WeirKernel) k =
      compile_source(f, vector_add_source, "vector_add", g);
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "N", 100000);
  g_autoptr(GHashTable) args = vector_add_args(100000);
  WeirBenchOptions bo = {.warmup = 2, .repetitions = 7};
  WeirBenchResult r;
  g_autoptr(GError) err = NULL;
  assert_true(weir_kernel_bench(k, sym, args, &bo, &r, &err));
  assert_int_equal(r.repetitions, 7);
  assert_true(r.min > 0);
  assert_true(r.min <= r.median && r.median <= r.max);
  assert_true(r.min <= r.mean && r.mean <= r.max);
  for (guint i = 0; i < 7; i++)
    assert_true(r.times[i] >= r.min && r.times[i] <= r.max);
  weir_bench_result_clear(&r);
  assert_null(r.times);
  /* bad arguments are reported before anything runs */
  weir_bindings_set(sym, "N", 5);
  assert_false(weir_kernel_bench(k, sym, args, &bo, &r, &err));
  assert_non_null(strstr(err->message, "argument 'A'"));
}

static void test_summarize(void **state) {
  (void)state;
  const double odd[] = {3, 1, 2};
  WeirBenchResult r;
  weir_bench_summarize(odd, 3, &r);
  assert_true(r.median == 2 && r.min == 1 && r.max == 3 && r.mean == 2);
  assert_true(r.times[0] == 3); /* run order kept */
  weir_bench_result_clear(&r);
  const double even[] = {4, 1, 3, 2};
  weir_bench_summarize(even, 4, &r);
  assert_true(r.median == 2.5 && r.min == 1 && r.max == 4 && r.mean == 2.5);
  weir_bench_result_clear(&r);
}

/* ------------------------------------------------ generated-code samples */

typedef struct {
  const char *file;
  const char *sym[2];
  gint64 val[2];
} Sample;

static const Sample samples[] = {
    {"vector_add.json", {"N"}, {1000}},
    {"matmul.json", {NULL}, {0}},
    {"softmax.json", {NULL}, {0}},
    {"loop.json", {"T"}, {3}},
};

static GHashTable *sample_bindings(const Sample *s) {
  GHashTable *b = weir_bindings_new();
  for (guint i = 0; i < G_N_ELEMENTS(s->sym) && s->sym[i]; i++)
    weir_bindings_set(b, s->sym[i], s->val[i]);
  return b;
}

/* Random tensors for the ABI arguments of g. */
static GHashTable *random_arguments(const WeirGraph *g, GHashTable *b) {
  GHashTable *args = tensors_new();
  g_autoptr(GPtrArray) abi = weir_codegen_arguments(g);
  for (guint i = 0; i < abi->len; i++) {
    const WeirContainer *c = g_ptr_array_index(abi, i);
    gint64 shape[8] = {0};
    g_assert(c->shape->len <= 8);
    for (guint d = 0; d < c->shape->len; d++)
      g_assert_true(
          weir_expr_eval(g_ptr_array_index(c->shape, d), b, &shape[d], NULL));
    put(args, c->name, c->dtype, c->shape->len, shape, 100 + c->id);
  }
  return args;
}

/* Every sample compiled (with OpenMP) gives the interpreter's results; a
 * second compile is a cache hit because generated code is deterministic. */
static void test_samples_match_interpreter(void **state) {
  Fixture *f = *state;
  f->opts.flags = "-O2 -fopenmp -fPIC -shared";
  for (guint i = 0; i < G_N_ELEMENTS(samples); i++) {
    const Sample *s = &samples[i];
    g_autoptr(WeirGraph) g = load_sample(s->file);
    g_autoptr(GHashTable) b = sample_bindings(s);
    g_autoptr(GError) err = NULL;
    WeirCompileInfo info = {0};
    g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, &info, &err);
    if (!k)
      fail_msg("%s: %s", s->file, err->message);
    assert_false(info.cache_hit);
    weir_compile_info_clear(&info);
    g_autoptr(GHashTable) args = random_arguments(g, b);
    g_autoptr(GHashTable) ref = copy_tensors(args);
    if (!weir_kernel_run(k, b, args, &err))
      fail_msg("%s: run: %s", s->file, err->message);
    if (!weir_interpret(g, b, ref, NULL, &err))
      fail_msg("%s: interpret: %s", s->file, err->message);
    assert_same_tensors(args, ref, 1e-4, 1e-5);

    g_autoptr(WeirKernel) again = weir_kernel_compile(g, &f->opts, &info, &err);
    assert_non_null(again);
    assert_true(info.cache_hit);
    weir_compile_info_clear(&info);
  }
  assert_int_equal(fixture_compiles(f), G_N_ELEMENTS(samples));
}

/* Several programs compiled at once: misses built in parallel, then all
 * hits. */
static void test_compile_many_samples(void **state) {
  Fixture *f = *state;
  enum { N = G_N_ELEMENTS(samples) };
  WeirGraph *graphs[N];
  for (guint i = 0; i < N; i++)
    graphs[i] = load_sample(samples[i].file);
  for (int round = 0; round < 2; round++) {
    WeirKernel *kernels[N];
    WeirCompileInfo infos[N];
    g_autoptr(GError) err = NULL;
    if (!weir_kernel_compile_many((const WeirGraph *const *)graphs, N, &f->opts,
                                  kernels, infos, &err))
      fail_msg("compile many: %s", err->message);
    for (guint i = 0; i < N; i++) {
      assert_non_null(kernels[i]);
      assert_int_equal(infos[i].cache_hit, round == 1);
      g_autoptr(GHashTable) b = sample_bindings(&samples[i]);
      g_autoptr(GHashTable) args = random_arguments(graphs[i], b);
      if (!weir_kernel_run(kernels[i], b, args, &err))
        fail_msg("%s: %s", samples[i].file, err->message);
      weir_kernel_free(kernels[i]);
      weir_compile_info_clear(&infos[i]);
    }
  }
  assert_int_equal(fixture_compiles(f), N);
  for (guint i = 0; i < N; i++)
    weir_graph_free(graphs[i]);
}

/* A PyTorch model (samples/models/mlp.onnx), imported and compiled,
 * reproduces PyTorch's output. */
static void test_model_matches_pytorch(void **state) {
  Fixture *f = *state;
  g_autofree char *model =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "mlp.onnx", NULL);
  g_autofree char *in_path = g_build_filename(WEIR_SRCDIR, "samples", "models",
                                              "mlp", "input_0.npy", NULL);
  g_autofree char *out_path = g_build_filename(WEIR_SRCDIR, "samples", "models",
                                               "mlp", "output_0.npy", NULL);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirTensor) input = weir_tensor_read_npy(in_path, &err);
  g_autoptr(WeirTensor) want = weir_tensor_read_npy(out_path, &err);
  assert_non_null(input);
  assert_non_null(want);
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  GArray *shape = g_array_new(FALSE, FALSE, sizeof(gint64));
  g_array_append_vals(shape, input->shape, input->rank);
  g_hash_table_insert(shapes, "input", shape);
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  WeirOnnxImportOptions io = {.input_shapes = shapes, .names = names};
  g_autoptr(WeirGraph) g = weir_onnx_import(model, &io, &err);
  if (!g)
    fail_msg("import: %s", err->message);

  f->opts.flags = "-O2 -fopenmp -fPIC -shared";
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("compile: %s", err->message);
  const char *in_name = g_hash_table_lookup(names, "input");
  const char *out_name = g_hash_table_lookup(names, "output");
  assert_non_null(in_name);
  assert_non_null(out_name);
  const WeirContainer *oc = weir_graph_container(g, out_name);
  g_autoptr(GHashTable) args = tensors_new();
  g_hash_table_insert(args, g_strdup(in_name), weir_tensor_copy(input));
  g_hash_table_insert(args, g_strdup(out_name),
                      weir_tensor_new(oc->dtype, want->rank, want->shape));
  g_autoptr(GHashTable) sym = weir_bindings_new();
  if (!weir_kernel_run(k, sym, args, &err))
    fail_msg("run: %s", err->message);
  if (!weir_tensor_allclose(g_hash_table_lookup(args, out_name), want, 1e-4,
                            1e-5, NULL, &err))
    fail_msg("output: %s", err->message);
}

int main(void) {
  /* never the user's cache, whatever a test forgets */
  g_autofree char *home = g_dir_make_tmp("weir-test-home-XXXXXX", NULL);
  g_setenv("XDG_CACHE_HOME", home, TRUE);
  g_unsetenv("WEIR_CACHE_DIR");
  g_unsetenv("WEIR_CACHE_MAX_BYTES");
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
  const struct CMUnitTest tests[] = {
      T(test_handwritten_matches_interpreter),
      T(test_argument_errors_match_interpreter),
      T(test_symbol_and_constant_errors),
      T(test_size_check_per_call),
      T(test_compiler_failure_has_diagnostics),
      T(test_diagnostics_are_truncated),
      T(test_compiler_not_found),
      T(test_bad_kernels),
      T(test_flags_and_identity),
      T(test_compile_many),
      T(test_set_threads),
      T(test_bench),
      T(test_samples_match_interpreter),
      T(test_compile_many_samples),
      T(test_model_matches_pytorch),
      cmocka_unit_test(test_summarize),
  };
#undef T
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  remove_tree(home);
  return rc;
}
