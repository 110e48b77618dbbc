/* test-pipeline.c — the optimization levels (core/weir-pipeline.h) and
 * their differential tests.
 *
 * The pipelines are recipes shipped as data; this checks that they parse,
 * print back the same, are optional steps only, name no implementation but
 * "default", and nest: -O1's steps are the start of -O2's, -O2's of -O3's,
 * so the history of -O3 on a model holds, as its first applications, those
 * of -O2 and -O1.
 *
 * Differential test, per site: on every sample model (the .onnx files of
 * samples/models, the .json files of samples) and on
 * tests/core/data/activations.onnx (the activations the sample models
 * lack: SiLU, HardSwish, ReLU6, Sigmoid, Tanh, GELU, a residual Add and a
 * scale) and tests/core/data/squeeze-excite.onnx (squeeze-and-excitation
 * gates in front of a 1x1 and a 3x3 convolution), weir_session_optimize(-O3)
 * records each
 * application of each transformation as one history step.  The program
 * after every step is compiled (native implementations kept) and run at 1
 * and at 2 OpenMP threads on the same seeded inputs, and every argument
 * must equal what the reference interpreter computes on the pure expansion
 * of the model as imported, within 1e-4.  Per level: weir_pipeline_apply of
 * -O1, -O2 and -O3 gives exactly the program of the session after as many
 * steps as it applied, so each level is checked by the same runs, and its
 * output equals the compiled -O0 program's as well. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

#include <cmocka.h>
#include <string.h>

#include "test-parts.h"
#include "weir.h"

#define TOL 1e-4

/* ------------------------------------------------------------- the levels */

static void test_parse_level(void **state) {
  (void)state;
  guint l = 9;
  assert_true(weir_pipeline_parse_level("-O2", &l, NULL));
  assert_int_equal(l, 2);
  assert_true(weir_pipeline_parse_level("O0", &l, NULL));
  assert_int_equal(l, 0);
  assert_true(weir_pipeline_parse_level("3", &l, NULL));
  assert_int_equal(l, 3);
  g_autoptr(GError) error = NULL;
  assert_false(weir_pipeline_parse_level("-O4", &l, &error));
  assert_non_null(strstr(error->message, "'-O4' is not an optimization level"));
  g_clear_error(&error);
  assert_false(weir_pipeline_parse_level("-O", &l, &error));
  g_clear_error(&error);
  assert_null(weir_pipeline_recipe(4, &error));
  assert_non_null(strstr(error->message, "no optimization level 4"));
}

static const WeirRecipeStep *step_of(const WeirRecipe *r, guint i) {
  return g_ptr_array_index(r->steps, i);
}

static void test_levels(void **state) {
  (void)state;
  g_autoptr(WeirRecipe) prev = NULL;
  for (guint level = 0; level <= WEIR_OPT_LEVEL_MAX; level++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirRecipe) r = weir_pipeline_recipe(level, &error);
    if (!r)
      fail_msg("-O%u: %s", level, error->message);
    g_autofree char *source = g_strdup_printf("-O%u", level);
    assert_string_equal(r->source, source);
    if (level == 0)
      assert_int_equal(r->steps->len, 0);
    else
      assert_true(r->steps->len > (prev ? prev->steps->len : 0));
    /* printable: print(parse(print)) == print */
    g_autofree char *text = weir_recipe_to_json(r);
    g_autoptr(WeirRecipe) back = weir_recipe_parse(text, -1, "x", &error);
    assert_non_null(back);
    g_autofree char *text2 = weir_recipe_to_json(back);
    assert_string_equal(text, text2);
    for (guint i = 0; i < r->steps->len; i++) {
      const WeirRecipeStep *st = step_of(r, i);
      assert_true(st->optional);
      assert_true(st->repeat);
      assert_int_equal(st->pick, WEIR_RECIPE_PICK_ALL);
      assert_non_null(weir_transform_lookup(st->transform));
      /* the native choice is left to the defaults */
      for (guint k = 0; st->params[k]; k++)
        if (g_str_has_prefix(st->params[k], "impl="))
          assert_string_equal(st->params[k], "impl=default");
    }
    /* nested: the previous level's steps come first */
    for (guint i = 0; prev && i < prev->steps->len; i++) {
      const WeirRecipeStep *a = step_of(prev, i), *b = step_of(r, i);
      assert_string_equal(a->transform, b->transform);
      assert_string_equal(a->params_json, b->params_json);
      assert_string_equal(a->site_text, b->site_text);
    }
    g_clear_pointer(&prev, weir_recipe_free);
    prev = g_steal_pointer(&r);
  }
}

/* expand-library-node impl=default leaves what the code generator runs
 * natively and expands the rest. */
static void test_expand_default(void **state) {
  (void)state;
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "lenet.onnx", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_onnx_import(path, NULL, &error);
  assert_non_null(g);
  const WeirTransformInfo *t = weir_transform_lookup("expand-library-node");
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  const char *const params[] = {"impl=default", NULL};
  g_autoptr(WeirParams) p = weir_params_parse(t, params, &error);
  assert_non_null(p);
  guint native = 0, expandable = 0;
  for (guint i = 0; i < sites->len; i++) {
    const WeirSite *site = &g_array_index(sites, WeirSite, i);
    const WeirState *s = weir_graph_state(g, site->state);
    const WeirNode *n = weir_state_node(s, site->nodes[0]);
    g_autofree char *reason = NULL;
    gboolean ok = weir_transform_can_apply(t, g, site, p, &reason);
    const char *impl = weir_native_default_impl(g, s, n);
    if (weir_native_lookup(n->op, impl)) {
      assert_false(ok);
      assert_non_null(strstr(reason, "keeps its native implementation"));
      native++;
    } else {
      assert_true(ok);
      expandable++;
    }
  }
  /* 2 Conv, 2 Gemm and the MaxPool (Weir's pooling kernel) native; 3 Relu
   * and Flatten expanded */
  assert_int_equal(native, 5);
  assert_int_equal(expandable, 4);
}

/* ------------------------------------------------------------ the models */

/* The differential cases run as PIPELINE_PARTS meson tests
 * (tests/meson.build passes "PART/PIPELINE_PARTS"), so meson runs them
 * beside each other instead of one long test at the end of the suite; a
 * model's part balances the parts' times (gcc compiling the programs is
 * most of it).  Part 0 also runs the tests of the levels. */
#define PIPELINE_PARTS 4

typedef struct {
  const char *dir;  /* under WEIR_SRCDIR */
  const char *file; /* .onnx or .json */
  guint part;       /* < PIPELINE_PARTS */
} Model;

static const Model models[] = {
    {"samples/models", "mlp.onnx", 0},
    {"samples/models", "digits_mlp.onnx", 0},
    {"samples/models", "diabetes_mlp.onnx", 0},
    {"samples/models", "digits_cnn.onnx", 0},
    {"samples/models", "lenet.onnx", 0},
    {"samples/models", "lenet64.onnx", 0},
    {"samples/models", "resnet.onnx", 2},
    {"samples/models", "transformer.onnx", 3},
    {"tests/core/data", "activations.onnx", 1},
    {"tests/core/data", "squeeze-excite.onnx", 2},
    {"samples", "vector_add.json", 0},
    {"samples", "matmul.json", 0},
    {"samples", "softmax.json", 0},
    {"samples", "loop.json", 0},
};

/* Every sample model must be in the list above, in one of the parts. */
static void test_all_samples_listed(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(models); i++)
    if (models[i].part >= PIPELINE_PARTS)
      fail_msg("%s: part %u of %d", models[i].file, models[i].part,
               PIPELINE_PARTS);
  const char *dirs[] = {"samples/models", "samples"};
  const char *exts[] = {".onnx", ".json"};
  for (guint d = 0; d < 2; d++) {
    g_autofree char *path = g_build_filename(WEIR_SRCDIR, dirs[d], NULL);
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    assert_non_null(dir);
    const char *name;
    while ((name = g_dir_read_name(dir))) {
      if (!g_str_has_suffix(name, exts[d]))
        continue;
      gboolean found = FALSE;
      for (guint i = 0; i < G_N_ELEMENTS(models); i++)
        found |= strcmp(models[i].dir, dirs[d]) == 0 &&
                 strcmp(models[i].file, name) == 0;
      if (!found)
        fail_msg("%s/%s is not in test-pipeline.c's list", dirs[d], name);
    }
  }
}

/* The model with every symbol bound to 4 (transfer full), bindings in
 * *symbols. */
static WeirGraph *load_model(const Model *m, GHashTable **symbols) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, m->dir, m->file, NULL);
  g_autoptr(GError) error = NULL;
  *symbols = weir_bindings_new();
  WeirGraph *g;
  if (g_str_has_suffix(m->file, ".onnx")) {
    /* bind the symbolic dimensions at import (batch 4) */
    g_autoptr(WeirGraph) probe = weir_onnx_import(path, NULL, &error);
    if (!probe)
      fail_msg("%s: %s", path, error->message);
    for (guint i = 0; i < probe->symbols->len; i++)
      weir_bindings_set(*symbols, g_ptr_array_index(probe->symbols, i), 4);
    WeirOnnxImportOptions opts = {.symbols = *symbols};
    g = weir_onnx_import(path, &opts, &error);
  } else {
    g = weir_graph_load(path, &error);
    for (guint i = 0; g && i < g->symbols->len; i++)
      weir_bindings_set(*symbols, g_ptr_array_index(g->symbols, i), 4);
  }
  if (!g)
    fail_msg("%s: %s", path, error->message);
  return g;
}

/* Seeded random values for every argument of g (transfer full). */
static GHashTable *random_args(const WeirGraph *g, GHashTable *symbols) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    g_autoptr(GError) error = NULL;
    WeirTensor *t = weir_evaluate_random_input(c, symbols, 7, &error);
    if (!t)
      fail_msg("'%s': %s", c->name, error->message);
    g_hash_table_insert(args, g_strdup(c->name), t);
  }
  return args;
}

static GHashTable *copy_args(GHashTable *args) {
  GHashTable *copy = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, args);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(copy, g_strdup(k), weir_tensor_copy(v));
  return copy;
}

/* Every tensor of want equals got's within TOL (integers exactly). */
static void assert_args_close(GHashTable *got, GHashTable *want,
                              const char *what) {
  g_autoptr(GList) names = g_hash_table_get_keys(want);
  names = g_list_sort(names, (GCompareFunc)strcmp);
  for (GList *l = names; l; l = l->next) {
    const WeirTensor *w = g_hash_table_lookup(want, l->data);
    const WeirTensor *t = g_hash_table_lookup(got, l->data);
    assert_non_null(t);
    double tol = weir_dtype_is_float(w->dtype) ? TOL : 0;
    g_autoptr(GError) error = NULL;
    if (!weir_tensor_allclose(t, w, tol, tol, NULL, &error))
      fail_msg("%s, argument '%s': %s", what, (char *)l->data, error->message);
  }
}

/* Runs k at 1 and at 2 threads on copies of inputs; both results must
 * equal want.  *out (optional) receives the 2-thread result. */
static void run_and_compare(WeirKernel *k, GHashTable *symbols,
                            GHashTable *inputs, GHashTable *want,
                            const char *what, GHashTable **out) {
  for (int threads = 1; threads <= 2; threads++) {
    g_autoptr(GError) error = NULL;
    /* a kernel without OpenMP loops has no threads to set */
    weir_kernel_set_threads(k, threads, NULL);
    g_autoptr(GHashTable) args = copy_args(inputs);
    if (!weir_kernel_run(k, symbols, args, &error))
      fail_msg("%s: run: %s", what, error->message);
    g_autofree char *w = g_strdup_printf("%s, %d thread%s", what, threads,
                                         threads == 1 ? "" : "s");
    assert_args_close(args, want, w);
    if (threads == 2 && out)
      *out = g_steal_pointer(&args);
  }
}

static guint applications(const WeirRecipeReport *r) {
  guint n = 0;
  for (guint i = 0; i < r->steps->len; i++)
    n += ((WeirRecipeStepReport *)g_ptr_array_index(r->steps, i))->applied->len;
  return n;
}

static void check_model(const Model *m) {
  g_autoptr(GHashTable) symbols = NULL;
  g_autoptr(WeirGraph) g = load_model(m, &symbols);
  g_autoptr(GError) error = NULL;

  /* the reference: the pure expansion, interpreted */
  g_autoptr(WeirGraph) pure = weir_graph_copy(g);
  if (!weir_expand_all(pure, NULL, NULL, &error))
    fail_msg("%s: expand: %s", m->file, error->message);
  g_autoptr(GHashTable) inputs = random_args(g, symbols);
  g_autoptr(GHashTable) want = copy_args(inputs);
  if (!weir_interpret(pure, symbols, want, NULL, &error))
    fail_msg("%s: interpret: %s", m->file, error->message);

  /* -O3 step by step: every application is a history step */
  g_autoptr(WeirSession) s = weir_session_new(g, m->file, symbols, &error);
  assert_non_null(s);
  WeirRecipeReport *rep = NULL;
  if (!weir_session_optimize(s, WEIR_OPT_LEVEL_MAX, &rep, &error))
    fail_msg("%s: -O%d: %s", m->file, WEIR_OPT_LEVEL_MAX, error->message);
  g_autoptr(WeirRecipeReport) report = rep;
  guint n = weir_session_n_steps(s);
  assert_int_equal(n, applications(report));
  assert_int_equal(weir_session_cursor(s), n);

  /* each level is a prefix of that history */
  guint level_steps[WEIR_OPT_LEVEL_MAX + 1] = {0};
  for (guint level = 1; level <= WEIR_OPT_LEVEL_MAX; level++) {
    g_autoptr(WeirGraph) x = weir_graph_copy(g);
    g_autoptr(WeirRecipeReport) r = weir_recipe_report_new();
    if (!weir_pipeline_apply(x, level, symbols, r, &error))
      fail_msg("%s: -O%u: %s", m->file, level, error->message);
    level_steps[level] = applications(r);
    assert_true(level_steps[level] <= n);
    assert_true(level_steps[level] >= level_steps[level - 1]);
    g_autofree char *json = weir_graph_to_json(x);
    const char *at = level_steps[level]
                         ? weir_session_step(s, level_steps[level])->program
                         : weir_session_original_json(s);
    g_autoptr(WeirGraph) y = weir_graph_from_json(at, -1, "step", &error);
    assert_non_null(y);
    g_autofree char *json2 = weir_graph_to_json(y);
    if (strcmp(json, json2) != 0)
      fail_msg("%s: -O%u is not the session after %u steps", m->file, level,
               level_steps[level]);
  }

  /* the program before any step and after each, compiled; identical C is
   * compiled once */
  g_autoptr(GPtrArray) programs =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_graph_free);
  g_autoptr(GPtrArray) unique = g_ptr_array_new(); /* WeirGraph*, borrowed */
  g_autoptr(GHashTable) by_source =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GArray) kernel_of = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint k = 0; k <= n; k++) {
    const char *json =
        k ? weir_session_step(s, k)->program : weir_session_original_json(s);
    WeirGraph *x = weir_graph_from_json(json, -1, "step", &error);
    assert_non_null(x);
    g_ptr_array_add(programs, x);
    char *src = weir_codegen_c(x, NULL, &error);
    if (!src)
      fail_msg("%s: step %u: codegen: %s", m->file, k, error->message);
    gpointer idx;
    guint u;
    if (g_hash_table_lookup_extended(by_source, src, NULL, &idx)) {
      u = GPOINTER_TO_UINT(idx);
      g_free(src);
    } else {
      u = unique->len;
      g_ptr_array_add(unique, x);
      g_hash_table_insert(by_source, src, GUINT_TO_POINTER(u));
    }
    g_array_append_val(kernel_of, u);
  }
  /* The programs of the levels (and -O0) with the default flags, as `weir
   * run` compiles them; the intermediate steps with -O1, which compiles
   * several times faster (the transformations are under test, not the C
   * compiler). */
  WeirKernel **kernels = g_new0(WeirKernel *, unique->len);
  g_autoptr(GPtrArray) fast = g_ptr_array_new(), full = g_ptr_array_new();
  g_autoptr(GArray) fast_at = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GArray) full_at = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint u = 0; u < unique->len; u++) {
    gboolean is_level = FALSE;
    for (guint k = 0; k <= n; k++)
      if (g_array_index(kernel_of, guint, k) == u)
        for (guint l = 0; l <= WEIR_OPT_LEVEL_MAX; l++)
          is_level |= level_steps[l] == k;
    g_ptr_array_add(is_level ? full : fast, g_ptr_array_index(unique, u));
    g_array_append_val(is_level ? full_at : fast_at, u);
  }
  /* With $WEIR_TEST_CACHE_DIR (.ci/run sets it for both of its runs) the
   * programs compile through that cache, so the sanitizer run loads the
   * objects the plain run compiled: the key covers the generated program,
   * the compiler, the flags and the host CPU, and the objects are never
   * instrumented (docs/reliability.md, "Test suite time").  The
   * transformations, the code generator (weir_codegen_c above) and the
   * runs are those of the build under test either way. */
  const char *shared = test_shared_cache_dir();
  gboolean no_cache = !shared;
  WeirCompileOptions co = {.no_cache = no_cache,
                           .cache_dir = no_cache ? NULL : shared};
  WeirCompileOptions cfast = {.no_cache = no_cache,
                              .cache_dir = no_cache ? NULL : shared,
                              .flags =
                                  "-O1 -march=native -fopenmp -fPIC -shared"};
  g_autofree WeirKernel **kf = g_new0(WeirKernel *, fast->len + 1);
  g_autofree WeirKernel **kl = g_new0(WeirKernel *, full->len + 1);
  if (!weir_kernel_compile_many((const WeirGraph *const *)full->pdata,
                                full->len, &co, kl, NULL, &error) ||
      (fast->len &&
       !weir_kernel_compile_many((const WeirGraph *const *)fast->pdata,
                                 fast->len, &cfast, kf, NULL, &error)))
    fail_msg("%s: compile: %s", m->file, error->message);
  for (guint i = 0; i < full->len; i++)
    kernels[g_array_index(full_at, guint, i)] = kl[i];
  for (guint i = 0; i < fast->len; i++)
    kernels[g_array_index(fast_at, guint, i)] = kf[i];

  g_autoptr(GHashTable) o0 = NULL;
  g_autoptr(GHashTable) done =
      g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, NULL);
  for (guint k = 0; k <= n; k++) {
    guint u = g_array_index(kernel_of, guint, k);
    gboolean is_level = FALSE;
    for (guint l = 1; l <= WEIR_OPT_LEVEL_MAX; l++)
      is_level |= level_steps[l] == k;
    if (g_hash_table_contains(done, GUINT_TO_POINTER(u)) && !is_level && k != 0)
      continue; /* the same C as a program already run */
    g_hash_table_add(done, GUINT_TO_POINTER(u));
    const WeirStep *st = k ? weir_session_step(s, k) : NULL;
    g_autofree char *what =
        st ? g_strdup_printf("%s: step %u (%s at %s)", m->file, k,
                             st->transform, st->site_text)
           : g_strdup_printf("%s: -O0", m->file);
    g_autoptr(GHashTable) out = NULL;
    run_and_compare(kernels[u], symbols, inputs, want, what, &out);
    if (k == 0)
      o0 = g_steal_pointer(&out);
    for (guint l = 1; l <= WEIR_OPT_LEVEL_MAX; l++)
      if (level_steps[l] == k && k) {
        g_autofree char *w =
            g_strdup_printf("%s: -O%u against -O0", m->file, l);
        assert_args_close(out, o0, w);
      }
  }
  for (guint u = 0; u < unique->len; u++)
    weir_kernel_free(kernels[u]);
  g_free(kernels);
  printf("# %s: %u steps (-O1 %u, -O2 %u, -O3 %u), %u distinct programs "
         "compiled\n",
         m->file, n, level_steps[1], level_steps[2], level_steps[3],
         unique->len);
}

static void test_model(void **state) {
  check_model(*state);
}

/* The activation fixture: every Conv/Gemm takes its activation as an
 * epilogue at -O2, and the batch norms are folded. */
static void test_activations_fused(void **state) {
  (void)state;
  const Model m = {"tests/core/data", "activations.onnx"};
  g_autoptr(GHashTable) symbols = NULL;
  g_autoptr(WeirGraph) g = load_model(&m, &symbols);
  g_autoptr(GError) error = NULL;
  assert_true(weir_pipeline_apply(g, 2, symbols, NULL, &error));
  guint with_epilogue = 0, library = 0, pools = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_LIBRARY)
        continue;
      if (strcmp(n->op, "GlobalAveragePool") == 0) {
        /* stays native (Weir's global-pooling kernel), no epilogue */
        pools++;
        assert_false(weir_epilogue_present(n));
        continue;
      }
      library++;
      with_epilogue += weir_epilogue_present(n);
      assert_true(strcmp(n->op, "Conv") == 0 || strcmp(n->op, "Gemm") == 0);
    }
  }
  /* six convolutions (SiLU, HardSwish, ReLU6, Sigmoid, Tanh, residual Add
   * and scale) and the linear layer (GELU); the global pooling between
   * them keeps its native implementation */
  assert_int_equal(library, 7);
  assert_int_equal(with_epilogue, 7);
  assert_int_equal(pools, 1);
}

/* The squeeze-and-excitation fixture: at -O1 both gates are moved onto the
 * weights of the convolution after them (channel-scale-folding), so no
 * Mul writes a feature map any more. */
static void test_squeeze_excite_folded(void **state) {
  (void)state;
  const Model m = {"tests/core/data", "squeeze-excite.onnx"};
  g_autoptr(GHashTable) symbols = NULL;
  g_autoptr(WeirGraph) g = load_model(&m, &symbols);
  g_autoptr(GError) error = NULL;
  assert_true(weir_pipeline_apply(g, 1, symbols, NULL, &error));
  guint scaled = 0;
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    scaled += g_str_has_suffix(c->name, "_scaled") && c->shape->len == 4;
  }
  assert_int_equal(scaled, 2);
}

/* test-pipeline [PART/PARTS]: without an argument every test; with one,
 * the models of that part (and the tests of the levels in part 0). */
int main(int argc, char **argv) {
  unsigned part;
  gboolean all;
  if (!test_parts_arg(argc, argv, PIPELINE_PARTS, &part, &all))
    return 2;
  struct CMUnitTest tests[3 + 1 + 1 + 1 + G_N_ELEMENTS(models)];
  guint n = 0;
  if (all || part == 0) {
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_parse_level);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_levels);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_expand_default);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_all_samples_listed);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(test_activations_fused);
    tests[n++] =
        (struct CMUnitTest)cmocka_unit_test(test_squeeze_excite_folded);
  }
  for (guint i = 0; i < G_N_ELEMENTS(models); i++)
    if (all || models[i].part == part)
      tests[n++] = (struct CMUnitTest){.name = models[i].file,
                                       .test_func = test_model,
                                       .initial_state = (void *)&models[i]};
  return _cmocka_run_group_tests("pipeline", tests, n, NULL, NULL);
}
