/* test-tuning.c — the tuning database, node signatures, implementation
 * parameters, `weir_tune` on a sample model and -O3's apply-tuning
 * (core/weir-tuning.h, core/weir-tune.h, docs/tuning.md).
 *
 * Two test-only native implementations of Gemm are registered here:
 * "test-wrong" writes a constant (the tuner must reject it), "test-loop" is
 * a correct triple loop with a parameter "unroll" (a #pragma GCC unroll
 * factor), which shows parameters going from the database through
 * apply-tuning and the node's "impl_params" to the emitter and the compile
 * cache key.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "tmpdir-fixture.h"
#include "weir-attr.h"
#include "weir.h"

/* --------------------------------------------------- test implementations */

static gboolean test_gemm_accepts(const WeirGraph *g, const WeirState *s,
                                  const WeirNode *n, char **reason) {
  const WeirContainer *a = weir_native_port(g, s, n, TRUE, 0);
  const WeirContainer *b = weir_native_port(g, s, n, TRUE, 1);
  const WeirContainer *c = weir_native_port(g, s, n, TRUE, 2);
  const WeirContainer *y = weir_native_port(g, s, n, FALSE, 0);
  if (!a || !b || !y || y->dtype != WEIR_DTYPE_F32 || a->shape->len != 2 ||
      b->shape->len != 2 || weir_node_attr_int(n, "transA", 0) != 0 ||
      (c && c->shape->len != 1)) {
    *reason = g_strdup("test implementations take f32 A*op(B) (+ C[N])");
    return FALSE;
  }
  return TRUE;
}

/* "M", "N", "K" and whether B is transposed, as C text. */
static void gemm_sizes(WeirNativeEmit *e, char **m, char **nn, char **k) {
  const WeirContainer *a = weir_native_port(e->g, e->s, e->n, TRUE, 0);
  const WeirContainer *y = weir_native_port(e->g, e->s, e->n, FALSE, 0);
  *m = e->expr_c(e, g_ptr_array_index(a->shape, 0));
  *k = e->expr_c(e, g_ptr_array_index(a->shape, 1));
  *nn = e->expr_c(e, g_ptr_array_index(y->shape, 1));
}

static gboolean test_wrong_emit(WeirNativeEmit *e, GError **error) {
  (void)error;
  g_autofree char *m = NULL, *n = NULL, *k = NULL;
  gemm_sizes(e, &m, &n, &k);
  g_string_append_printf(e->code,
                         "for (long i_ = 0; i_ < (long)(%s) * (long)(%s); "
                         "i_++)\n  ((float *)(%s))[i_] = 0.25f;\n",
                         m, n, e->out[0].ptr);
  return TRUE;
}

static gboolean test_loop_emit(WeirNativeEmit *e, GError **error) {
  (void)error;
  g_autofree char *m = NULL, *n = NULL, *k = NULL;
  gemm_sizes(e, &m, &n, &k);
  gint64 unroll = weir_native_param(e->n, "unroll", 1);
  gboolean tb = weir_node_attr_int(e->n, "transB", 0) != 0;
  double alpha = weir_node_attr_float(e->n, "alpha", 1.0);
  double beta = weir_node_attr_float(e->n, "beta", 1.0);
  g_autofree char *bidx = tb ? g_strdup_printf("j_ * (%s) + k_", k)
                             : g_strdup_printf("k_ * (%s) + j_", n);
  g_autofree char *bias =
      e->in[2].c
          ? g_strdup_printf(" + (float)%.17g * ((const float *)(%s))[j_]", beta,
                            e->in[2].ptr)
          : g_strdup("");
  GString *c = e->code;
  g_string_append_printf(c, "for (long i_ = 0; i_ < (long)(%s); i_++)\n", m);
  g_string_append_printf(c, "  for (long j_ = 0; j_ < (long)(%s); j_++) {\n",
                         n);
  g_string_append(c, "    float acc_ = 0;\n");
  g_string_append_printf(c, "#pragma GCC unroll %" G_GINT64_FORMAT "\n",
                         unroll);
  g_string_append_printf(c, "    for (long k_ = 0; k_ < (long)(%s); k_++)\n",
                         k);
  g_string_append_printf(c,
                         "      acc_ += ((const float *)(%s))[i_ * (%s) + k_] "
                         "* ((const float *)(%s))[%s];\n",
                         e->in[0].ptr, k, e->in[1].ptr, bidx);
  g_string_append_printf(c,
                         "    ((float *)(%s))[i_ * (%s) + j_] = (float)%.17g "
                         "* acc_%s;\n  }\n",
                         e->out[0].ptr, n, alpha, bias);
  return TRUE;
}

static const gint64 unroll_values[] = {1, 4};
static const WeirNativeParam test_loop_params[] = {
    {.name = "unroll",
     .doc = "#pragma GCC unroll of the k loop",
     .values = unroll_values,
     .n_values = G_N_ELEMENTS(unroll_values)},
};

static const WeirNativeImpl test_wrong = {.op = "Gemm",
                                          .impl = "test-wrong",
                                          .accepts = test_gemm_accepts,
                                          .emit = test_wrong_emit};
static const WeirNativeImpl test_loop = {.op = "Gemm",
                                         .impl = "test-loop",
                                         .accepts = test_gemm_accepts,
                                         .emit = test_loop_emit,
                                         .params = test_loop_params,
                                         .n_params =
                                             G_N_ELEMENTS(test_loop_params)};

static int group_setup(void **state) {
  (void)state;
  weir_native_register(&test_wrong);
  weir_native_register(&test_loop);
  return tmpdir_setup("weir-test-tuning");
}

static int group_teardown(void **state) {
  (void)state;
  return tmpdir_teardown();
}

static char *tmp_file(const char *name) {
  return g_build_filename(tmp_dir, name, NULL);
}

static void remove_db(const char *path) {
  static const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
  for (guint i = 0; i < G_N_ELEMENTS(sfx); i++) {
    g_autofree char *p = g_strconcat(path, sfx[i], NULL);
    g_remove(p);
  }
}

/* ------------------------------------------------------------- database */

static WeirTuningRecord *record(const char *key, const char *impl,
                                const char *params, WeirTuningStatus st,
                                double median) {
  WeirTuningRecord *r = g_new0(WeirTuningRecord, 1);
  r->key = g_strdup(key);
  r->signature = g_strdup_printf("signature of %s", key);
  r->hw = g_strdup("test machine");
  r->op = g_strdup("Gemm");
  r->impl = g_strdup(impl);
  r->params = g_strdup(params);
  r->status = st;
  r->median_s = median;
  r->runs = 3;
  r->max_abs_error = st == WEIR_TUNING_FAILED ? -1 : 1e-7;
  r->message = g_strdup(st == WEIR_TUNING_OK ? "" : "why not");
  return r;
}

static void test_db_round_trip(void **state) {
  (void)state;
  g_autofree char *path = tmp_file("round-trip.db");
  g_autoptr(GError) err = NULL;

  /* opening without create: a missing file is G_FILE_ERROR_NOENT */
  g_autoptr(WeirTuningDb) none = weir_tuning_db_open(path, FALSE, &err);
  assert_null(none);
  assert_true(g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT));
  g_clear_error(&err);

  {
    g_autoptr(WeirTuningDb) db = weir_tuning_db_open(path, TRUE, &err);
    assert_non_null(db);
    g_autoptr(WeirTuningRecord) a =
        record("k1", "weir", "", WEIR_TUNING_OK, 2e-3);
    g_autoptr(WeirTuningRecord) b =
        record("k1", "test-loop", "unroll=4", WEIR_TUNING_OK, 1e-3);
    g_autoptr(WeirTuningRecord) c =
        record("k1", "test-wrong", "", WEIR_TUNING_REJECTED, 1e-6);
    g_autoptr(WeirTuningRecord) d =
        record("k2", "blas", "", WEIR_TUNING_OK, 5e-3);
    assert_true(weir_tuning_db_put(db, a, &err));
    assert_true(weir_tuning_db_put(db, b, &err));
    assert_true(weir_tuning_db_put(db, c, &err));
    assert_true(weir_tuning_db_put(db, d, &err));
    /* the same (key, impl, params) replaces: weir is now the fastest */
    a->median_s = 0.5e-3;
    assert_true(weir_tuning_db_put(db, a, &err));
    assert_null(err);
  }

  /* read back read-only: the best ok row, never the rejected faster one */
  g_autoptr(WeirTuningDb) db = weir_tuning_db_open(path, FALSE, &err);
  assert_non_null(db);
  g_autoptr(WeirTuningRecord) best = weir_tuning_db_best(db, "k1", &err);
  assert_non_null(best);
  assert_string_equal(best->impl, "weir");
  assert_true(best->median_s == 0.5e-3);
  assert_string_equal(best->hw, "test machine");
  assert_string_equal(best->signature, "signature of k1");
  assert_string_equal(best->weir_version, weir_version());
  assert_int_equal(strlen(best->date), strlen("2026-01-01T00:00:00Z"));
  g_autoptr(WeirTuningRecord) nobody = weir_tuning_db_best(db, "k3", &err);
  assert_null(nobody);
  assert_null(err);
  g_autoptr(GPtrArray) all = weir_tuning_db_list(db, NULL, &err);
  assert_int_equal(all->len, 4);
  g_autoptr(GPtrArray) k1 = weir_tuning_db_list(db, "k1", &err);
  assert_int_equal(k1->len, 3);
  const WeirTuningRecord *rej = g_ptr_array_index(k1, 2);
  assert_string_equal(rej->impl, "test-wrong");
  assert_int_equal(rej->status, WEIR_TUNING_REJECTED);
  assert_string_equal(rej->message, "why not");
  const WeirTuningRecord *second = g_ptr_array_index(k1, 1);
  assert_string_equal(second->params, "unroll=4");
  /* read-only handles refuse writes */
  assert_false(weir_tuning_db_put(db, best, &err));
  assert_non_null(err);
  g_clear_error(&err);
}

static void test_db_schema(void **state) {
  (void)state;
  g_autofree char *path = tmp_file("schema.db");
  g_autoptr(GError) err = NULL;
  {
    g_autoptr(WeirTuningDb) db = weir_tuning_db_open(path, TRUE, &err);
    assert_non_null(db);
  }
  sqlite3 *raw = NULL;
  assert_int_equal(sqlite3_open(path, &raw), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  assert_int_equal(sqlite3_prepare_v2(raw, "SELECT version FROM schema_version",
                                      -1, &st, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(st, 0), WEIR_TUNING_SCHEMA_VERSION);
  assert_int_equal(sqlite3_step(st), SQLITE_DONE); /* exactly one row */
  sqlite3_finalize(st);
  /* the documented columns */
  assert_int_equal(
      sqlite3_exec(raw,
                   "SELECT key, signature, hw, op, impl, params, status, "
                   "median_s, runs, max_abs_error, message, date, "
                   "weir_version FROM results",
                   NULL, NULL, NULL),
      SQLITE_OK);
  /* another version is refused, naming the file and both versions */
  assert_int_equal(sqlite3_exec(raw, "UPDATE schema_version SET version = 7",
                                NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(raw);
  g_autoptr(WeirTuningDb) db = weir_tuning_db_open(path, TRUE, &err);
  assert_null(db);
  assert_true(g_error_matches(err, WEIR_ERROR, WEIR_ERROR_VERSION));
  assert_non_null(strstr(err->message, path));
  assert_non_null(strstr(err->message, "version 7"));
  g_clear_error(&err);

  /* an SQLite file that is not a tuning database is refused */
  g_autofree char *other = tmp_file("other.db");
  assert_int_equal(sqlite3_open(other, &raw), SQLITE_OK);
  assert_int_equal(sqlite3_exec(raw, "CREATE TABLE t (x)", NULL, NULL, NULL),
                   SQLITE_OK);
  sqlite3_close(raw);
  g_autoptr(WeirTuningDb) db2 = weir_tuning_db_open(other, FALSE, &err);
  assert_null(db2);
  assert_non_null(strstr(err->message, "not a tuning database"));
}

/* ------------------------------------------------------------ signatures */

/* A one-MatMul program A[m,k] * B[k,n] with containers named by prefix. */
static WeirGraph *matmul_program(const char *prefix, int m, int k, int n) {
  WeirGraph *g = weir_graph_new("mm");
  g_autofree char *an = g_strdup_printf("%sA", prefix);
  g_autofree char *bn = g_strdup_printf("%sB", prefix);
  g_autofree char *yn = g_strdup_printf("%sY", prefix);
  g_autofree char *as = g_strdup_printf("%d, %d", m, k);
  g_autofree char *bs = g_strdup_printf("%d, %d", k, n);
  g_autofree char *ys = g_strdup_printf("%d, %d", m, n);
  assert_non_null(weir_graph_add_array(g, an, WEIR_DTYPE_F32, as, FALSE, NULL));
  assert_non_null(weir_graph_add_array(g, bn, WEIR_DTYPE_F32, bs, FALSE, NULL));
  assert_non_null(weir_graph_add_array(g, yn, WEIR_DTYPE_F32, ys, FALSE, NULL));
  WeirState *s = weir_graph_add_state(g, "s");
  WeirNode *a = weir_state_add_access(g, s, an);
  WeirNode *b = weir_state_add_access(g, s, bn);
  WeirNode *y = weir_state_add_access(g, s, yn);
  const char *ins[] = {"in0", "in1", NULL}, *outs[] = {"out0", NULL};
  WeirNode *mm = weir_state_add_library(g, s, "mm", "MatMul", ins, outs);
  g_autofree char *asub = g_strdup_printf("0:%d, 0:%d", m, k);
  g_autofree char *bsub = g_strdup_printf("0:%d, 0:%d", k, n);
  g_autofree char *ysub = g_strdup_printf("0:%d, 0:%d", m, n);
  assert_non_null(
      weir_state_add_memlet(g, s, a->id, NULL, mm->id, "in0", an, asub, NULL));
  assert_non_null(
      weir_state_add_memlet(g, s, b->id, NULL, mm->id, "in1", bn, bsub, NULL));
  assert_non_null(
      weir_state_add_memlet(g, s, mm->id, "out0", y->id, NULL, yn, ysub, NULL));
  assert_true(weir_graph_validate(g, NULL));
  return g;
}

static WeirNode *first_library(const WeirGraph *g, WeirState **s) {
  for (guint i = 0; i < g->states->len; i++) {
    *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < (*s)->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index((*s)->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY)
        return n;
    }
  }
  return NULL;
}

static char *key_of(const WeirGraph *g, guint threads) {
  WeirState *s;
  WeirNode *n = first_library(g, &s);
  char *key = NULL;
  g_autofree char *text = weir_tuning_signature(g, s, n, threads, &key);
  assert_non_null(text);
  assert_true(g_str_has_prefix(text, "weir-tuning-signature 1\nop MatMul\n"));
  return key;
}

static void test_signature(void **state) {
  (void)state;
  g_autoptr(WeirGraph) a = matmul_program("", 4, 8, 5);
  g_autoptr(WeirGraph) b = matmul_program("other_", 4, 8, 5);
  g_autoptr(WeirGraph) c = matmul_program("", 4, 9, 5);
  g_autofree char *ka = key_of(a, 2);
  assert_int_equal(strlen(ka), 64);
  g_autofree char *ka2 = key_of(a, 2);
  g_autofree char *kb = key_of(b, 2);
  g_autofree char *kc = key_of(c, 2);
  g_autofree char *k1 = key_of(a, 1);
  assert_string_equal(ka, ka2);    /* stable */
  assert_string_equal(ka, kb);     /* container names do not matter */
  assert_string_not_equal(ka, kc); /* a shape does */
  assert_string_not_equal(ka, k1); /* so does the thread count */

  /* the implementation choice is not part of it; other attributes are */
  WeirState *s;
  WeirNode *n = first_library(a, &s);
  weir_node_set_attr_string(n, "impl", "blas");
  weir_node_set_attr_string(n, "tuned", "0123");
  g_autofree char *kimpl = key_of(a, 2);
  assert_string_equal(ka, kimpl);
  weir_node_set_attr_string(n, "epilogue", "out = max(x, 0.0)");
  g_autofree char *kepi = key_of(a, 2);
  assert_string_not_equal(ka, kepi);

  /* the hardware identity: a lower ISA is another machine */
  g_autoptr(WeirHwProfile) hw = weir_hw_detect();
  if (hw->isa != WEIR_HW_ISA_GENERIC) {
    g_setenv("WEIR_ISA", "generic", TRUE);
    g_autofree char *kisa = key_of(a, 2);
    g_unsetenv("WEIR_ISA");
    assert_string_not_equal(kimpl, kisa);
  }
}

/* ---------------------------------------------------------------- params */

static void test_params(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = matmul_program("", 4, 8, 5);
  WeirState *s;
  WeirNode *n = first_library(g, &s);
  g_autoptr(GError) err = NULL;
  const WeirNativeImpl *loop = weir_native_lookup("Gemm", "test-loop");
  assert_non_null(loop);
  assert_true(weir_native_set_params(n, loop, " unroll=4 ", &err));
  g_autofree char *text = weir_native_params_text(n);
  assert_string_equal(text, "unroll=4");
  assert_int_equal(weir_native_param(n, "unroll", 1), 4);
  assert_int_equal(weir_native_param(n, "other", 9), 9);
  /* unknown names, bad values and repeats are refused, naming them */
  assert_false(weir_native_set_params(n, loop, "unrol=4", &err));
  assert_non_null(strstr(err->message, "'unrol'"));
  g_clear_error(&err);
  assert_false(weir_native_set_params(n, loop, "unroll=x", &err));
  g_clear_error(&err);
  assert_false(weir_native_set_params(n, loop, "unroll=1,unroll=2", &err));
  g_clear_error(&err);
  assert_false(weir_native_set_params(n, NULL, "unroll=1", &err));
  g_clear_error(&err);
  assert_int_equal(weir_native_param(n, "unroll", 1), 4); /* unchanged */

  /* params that are not the chosen implementation's are an error of the
   * choice, naming the node */
  weir_node_set_attr_string(n, "impl", "blas");
  const WeirNativeImpl *ni = NULL;
  assert_false(weir_native_choice(g, s, n, &ni, &err));
  assert_non_null(strstr(err->message, "mm"));
  assert_non_null(strstr(err->message, "'unroll'"));
  g_clear_error(&err);
  /* choosing another implementation with --impl drops them */
  assert_true(weir_native_set_impl(g, "MatMul", "blas", NULL, &err));
  assert_null(weir_node_attr(n, "impl_params"));
  assert_true(weir_native_choice(g, s, n, &ni, &err));
  /* removing */
  assert_true(weir_native_set_params(n, NULL, "", &err));
  assert_null(weir_node_attr(n, "impl_params"));
}

/* ------------------------------------------------------------- end to end */

static WeirGraph *lenet(void) {
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "lenet.onnx", NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_onnx_import(path, NULL, &err);
  assert_non_null(g);
  return g;
}

/* The compiled program's outputs against the interpreter's. */
static void assert_matches_interpreter(const WeirGraph *g) {
  g_autoptr(GError) err = NULL;
  WeirEvaluateOptions eo = {.reference_interpreted = TRUE, .no_timing = TRUE};
  WeirEvaluation ev;
  assert_true(weir_evaluate(g, g, NULL, &eo, NULL, NULL, NULL, &ev, &err));
  assert_true(ev.validated);
  assert_true(ev.matches);
  weir_evaluation_clear(&ev);
}

static const WeirNode *node_labelled(const WeirGraph *g, const char *label,
                                     WeirState **s) {
  for (guint i = 0; i < g->states->len; i++) {
    *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < (*s)->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index((*s)->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY && g_strcmp0(n->label, label) == 0)
        return n;
    }
  }
  return NULL;
}

static void test_tune_lenet(void **state) {
  (void)state;
  g_autofree char *db_path = tmp_file("lenet.db");
  remove_db(db_path);
  g_setenv("WEIR_TUNING_DB", db_path, TRUE);
  g_autoptr(GError) err = NULL;

  /* without a database -O3 tunes nothing */
  g_autoptr(WeirGraph) plain = lenet();
  assert_true(weir_pipeline_apply(plain, 3, NULL, NULL, &err));
  g_autofree char *plain_key = weir_kernel_key(plain, NULL, &err);

  g_autoptr(WeirGraph) g = lenet();
  assert_true(weir_pipeline_apply(g, 3, NULL, NULL, &err));
  g_autofree char *again_key = weir_kernel_key(g, NULL, &err);
  assert_string_equal(plain_key, again_key);
  WeirTuneOptions o = {.budget_seconds = 900, .repetitions = 3};
  g_autoptr(WeirTuneReport) rep = NULL;
  assert_true(weir_tune(g, &o, NULL, NULL, &rep, &err));
  assert_null(err);
  assert_string_equal(rep->db_path, db_path);
  /* two Conv and two Gemm nodes of different shapes and the MaxPool
   * (/pool/MaxPool), now a native node with Weir's pooling kernel: five
   * signatures */
  assert_int_equal(rep->n_nodes, 5);
  assert_int_equal(rep->signatures->len, 5);
  assert_false(rep->out_of_budget);
  guint wrong = 0, loops = 0;
  for (guint i = 0; i < rep->signatures->len; i++) {
    const WeirTuneSignature *t = g_ptr_array_index(rep->signatures, i);
    assert_true(t->complete);
    assert_non_null(t->best_impl);
    assert_true(t->best_s > 0);
    assert_string_not_equal(t->best_impl, "test-wrong");
    for (guint k = 0; k < t->candidates->len; k++) {
      const WeirTuningRecord *r = g_ptr_array_index(t->candidates, k);
      if (strcmp(r->impl, "test-wrong") == 0) {
        wrong++;
        assert_int_equal(r->status, WEIR_TUNING_REJECTED);
        assert_non_null(strstr(r->message, "differ"));
      } else {
        assert_int_equal(r->status, WEIR_TUNING_OK);
      }
      if (strcmp(r->impl, "test-loop") == 0)
        loops++;
    }
  }
  /* each Gemm: test-wrong rejected; test-loop with its defaults and each
   * unroll value */
  assert_int_equal(wrong, 2);
  assert_int_equal(loops, 2 * 3);
  assert_int_equal(rep->n_rejected, 2);
  assert_int_equal(rep->n_failed, 0);

  /* -O3 now applies the winners: every native node carries the best row
   * of its signature */
  g_autoptr(WeirGraph) t = lenet();
  assert_true(weir_pipeline_apply(t, 3, NULL, NULL, &err));
  g_autoptr(WeirTuningDb) db = weir_tuning_db_open(db_path, FALSE, &err);
  assert_non_null(db);
  guint tuned = 0;
  for (guint i = 0; i < t->states->len; i++) {
    WeirState *s = g_ptr_array_index(t->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_LIBRARY)
        continue;
      g_autofree char *key = NULL;
      g_autofree char *sig = weir_tuning_signature(t, s, n, 0, &key);
      g_autoptr(WeirTuningRecord) best = weir_tuning_db_best(db, key, &err);
      assert_non_null(best);
      assert_string_equal(weir_node_attr_string(n, "impl", ""), best->impl);
      g_autofree char *params = weir_native_params_text(n);
      assert_string_equal(params, best->params);
      assert_true(
          g_str_has_prefix(key, weir_node_attr_string(n, "tuned", "-")));
      tuned++;
    }
  }
  assert_int_equal(tuned, 5);
  assert_matches_interpreter(t);
  g_unsetenv("WEIR_TUNING_DB");
}

/* A row decides: parameters go from the database through apply-tuning to
 * the emitter and the compile cache key; rows this Weir cannot honour are
 * ignored. */
static void test_apply_params(void **state) {
  (void)state;
  g_autofree char *db_path = tmp_file("params.db");
  remove_db(db_path);
  g_setenv("WEIR_TUNING_DB", db_path, TRUE);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = lenet();
  assert_true(weir_pipeline_apply(g, 3, NULL, NULL, &err));
  WeirState *s;
  const WeirNode *fc1 = node_labelled(g, "/fc1/Gemm", &s);
  assert_non_null(fc1);
  g_autofree char *key = NULL;
  g_autofree char *sig = weir_tuning_signature(g, s, fc1, 0, &key);
  {
    g_autoptr(WeirTuningDb) db = weir_tuning_db_open(db_path, TRUE, &err);
    assert_non_null(db);
    g_autoptr(WeirTuningRecord) a =
        record(key, "weir", "", WEIR_TUNING_OK, 1.0);
    g_autoptr(WeirTuningRecord) b =
        record(key, "test-loop", "unroll=4", WEIR_TUNING_OK, 0.5);
    /* faster, but not usable here: an unknown implementation, a parameter
     * the implementation does not have, a rejected candidate */
    g_autoptr(WeirTuningRecord) c =
        record(key, "no-such", "", WEIR_TUNING_OK, 0.1);
    g_autoptr(WeirTuningRecord) d =
        record(key, "test-wrong", "", WEIR_TUNING_REJECTED, 0.01);
    assert_true(weir_tuning_db_put(db, a, &err));
    assert_true(weir_tuning_db_put(db, b, &err));
    assert_true(weir_tuning_db_put(db, c, &err));
    assert_true(weir_tuning_db_put(db, d, &err));
  }
  /* the unknown implementation is the best row, so nothing is applied */
  g_autoptr(WeirGraph) t0 = lenet();
  assert_true(weir_pipeline_apply(t0, 3, NULL, NULL, &err));
  const WeirNode *n0 = node_labelled(t0, "/fc1/Gemm", &s);
  assert_null(weir_node_attr(n0, "tuned"));
  {
    g_autoptr(WeirTuningDb) db = weir_tuning_db_open(db_path, TRUE, &err);
    g_autoptr(WeirTuningRecord) c =
        record(key, "no-such", "", WEIR_TUNING_FAILED, 0);
    assert_true(weir_tuning_db_put(db, c, &err));
  }

  /* through a session: apply-tuning is a step of the history */
  g_autoptr(WeirGraph) imported = lenet();
  g_autoptr(WeirSession) session =
      weir_session_new(imported, "lenet.onnx", NULL, &err);
  assert_non_null(session);
  g_autoptr(WeirRecipeReport) report = NULL;
  assert_true(weir_session_optimize(session, 3, &report, &err));
  gboolean in_history = FALSE;
  for (guint i = 0; i < report->steps->len; i++) {
    const WeirRecipeStepReport *st = g_ptr_array_index(report->steps, i);
    if (strcmp(st->transform, "apply-tuning") == 0 && st->applied->len == 1)
      in_history = TRUE;
  }
  assert_true(in_history);
  const WeirGraph *t = weir_session_current(session);
  const WeirNode *n = node_labelled(t, "/fc1/Gemm", &s);
  assert_string_equal(weir_node_attr_string(n, "impl", ""), "test-loop");
  g_autofree char *params = weir_native_params_text(n);
  assert_string_equal(params, "unroll=4");
  char tuned[17];
  g_strlcpy(tuned, key, sizeof tuned);
  assert_string_equal(weir_node_attr_string(n, "tuned", ""), tuned);

  /* the emitter sees the parameter; the cache key covers it */
  g_autofree char *c4 = weir_codegen_c(t, NULL, &err);
  assert_non_null(c4);
  assert_non_null(strstr(c4, "#pragma GCC unroll 4\n"));
  g_autofree char *key4 = weir_kernel_key(t, NULL, &err);
  g_autoptr(WeirGraph) t1 = weir_graph_copy(t);
  WeirNode *n1 = (WeirNode *)node_labelled(t1, "/fc1/Gemm", &s);
  assert_true(weir_native_set_params(
      n1, weir_native_lookup("Gemm", "test-loop"), "unroll=1", &err));
  g_autofree char *key1 = weir_kernel_key(t1, NULL, &err);
  assert_string_not_equal(key4, key1);
  g_autofree char *c1 = weir_codegen_c(t1, NULL, &err);
  assert_non_null(strstr(c1, "#pragma GCC unroll 1\n"));

  /* and the compiled program still computes what the interpreter does */
  assert_matches_interpreter(t);
  g_unsetenv("WEIR_TUNING_DB");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_db_round_trip), cmocka_unit_test(test_db_schema),
      cmocka_unit_test(test_signature),     cmocka_unit_test(test_params),
      cmocka_unit_test(test_apply_params),  cmocka_unit_test(test_tune_lenet),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
