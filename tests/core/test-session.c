/* test-session.c — sessions: apply, exact undo/redo/goto, redo-tail
 * truncation, replay, bookmarks, results, notifications.
 *
 * Exactness is checked on JSON text: after undo the current program's JSON
 * must equal, byte for byte, the JSON recorded before the step; after redo
 * the JSON recorded after it.  The steps are the testing transformations
 * (testing-transforms.h) over the JSON samples and a program with library
 * nodes whose expansion changes the graph's structure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "session-private.h"
#include "testing-transforms.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-transform.h"

static const char *const samples[] = {"vector_add.json", "matmul.json",
                                      "softmax.json", "loop.json"};

static WeirGraph *load_sample(const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_load(path, &error);
  if (!g)
    fail_msg("%s", error->message);
  return g;
}

static int setup(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  weir_transforms_init();
  if (!testing_transforms_register(&error))
    fail_msg("%s", error->message);
  return 0;
}

static WeirSite one_node(guint state, guint node) {
  WeirSite s = {.state = state, .n_nodes = 1, .nodes = {node}};
  return s;
}

/* Sites of a transformation in the session's current program. */
static GArray *sites_of(const WeirSession *s, const char *name) {
  return weir_transform_sites(weir_transform_lookup(name),
                              weir_session_current(s));
}

#define assert_json_is(session, expected)                                      \
  do {                                                                         \
    g_autofree char *now_ = weir_graph_to_json(weir_session_current(session)); \
    assert_string_equal(now_, (expected));                                     \
    assert_string_equal(weir_session_current_json(session), (expected));       \
  } while (0)

/* Applies schedule and tile steps at every map of every sample, then walks
 * the history back and forth checking every program byte for byte. */
static void test_exact_undo_redo_samples(void **state) {
  (void)state;
  for (guint si = 0; si < G_N_ELEMENTS(samples); si++) {
    g_autoptr(WeirGraph) g = load_sample(samples[si]);
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirSession) s = weir_session_new(g, samples[si], NULL, &error);
    assert_non_null(s);
    g_autoptr(GPtrArray) jsons = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(jsons, weir_graph_to_json(g));
    assert_string_equal(weir_session_current_json(s),
                        g_ptr_array_index(jsons, 0));

    g_autoptr(GArray) maps = sites_of(s, "test-schedule");
    assert_true(maps->len > 0);
    for (guint i = 0; i < maps->len; i++) {
      const WeirSite *site = &g_array_index(maps, WeirSite, i);
      const char *sched[] = {"schedule=sequential", NULL};
      const WeirNode *n =
          weir_graph_node(weir_session_current(s), site->nodes[0], NULL);
      if (n->map->schedule == WEIR_SCHEDULE_SEQUENTIAL)
        sched[0] = "schedule=simd";
      /* The current program is replaced by apply: keep what we need. */
      g_autofree char *label = g_strdup(n->label);
      const WeirStep *st =
          weir_session_apply(s, "test-schedule", site, sched, &error);
      if (!st)
        fail_msg("%s: %s", samples[si], error->message);
      assert_int_equal(st->index, weir_session_n_steps(s));
      assert_string_equal(st->labels->pdata[0], label);
      g_ptr_array_add(jsons, weir_graph_to_json(weir_session_current(s)));
      /* The tile has one size per parameter of the map. */
      n = weir_graph_node(weir_session_current(s), site->nodes[0], NULL);
      GString *tile = g_string_new("tile=");
      for (guint d = 0; d < n->map->params->len; d++)
        g_string_append_printf(tile, "%s%u", d ? "," : "", 4 + d);
      const char *tp[] = {tile->str, NULL};
      st = weir_session_apply(s, "test-tile", site, tp, &error);
      g_string_free(tile, TRUE);
      if (!st)
        fail_msg("%s: %s", samples[si], error->message);
      g_ptr_array_add(jsons, weir_graph_to_json(weir_session_current(s)));
    }
    guint n = weir_session_n_steps(s);
    assert_int_equal(n, jsons->len - 1);
    assert_int_equal(weir_session_cursor(s), n);
    /* Each step changed something. */
    for (guint k = 1; k <= n; k++)
      assert_string_not_equal(g_ptr_array_index(jsons, k),
                              g_ptr_array_index(jsons, k - 1));

    for (guint k = n; k > 0; k--) {
      assert_true(weir_session_undo(s, &error));
      assert_int_equal(weir_session_cursor(s), k - 1);
      assert_json_is(s, g_ptr_array_index(jsons, k - 1));
    }
    assert_false(weir_session_undo(s, &error));
    assert_non_null(strstr(error->message, "nothing to undo"));
    g_clear_error(&error);
    for (guint k = 1; k <= n; k++) {
      assert_true(weir_session_redo(s, &error));
      assert_json_is(s, g_ptr_array_index(jsons, k));
    }
    assert_false(weir_session_redo(s, &error));
    g_clear_error(&error);
    /* Jumps in a fixed pseudo-random order. */
    GRand *rand = g_rand_new_with_seed(7 + si);
    for (guint i = 0; i < 20; i++) {
      guint k = (guint)g_rand_int_range(rand, 0, (gint32)n + 1);
      assert_true(weir_session_goto(s, k, &error));
      assert_int_equal(weir_session_cursor(s), k);
      assert_json_is(s, g_ptr_array_index(jsons, k));
    }
    g_rand_free(rand);
    assert_false(weir_session_goto(s, n + 1, &error));
    assert_non_null(strstr(error->message, "does not exist"));
    g_clear_error(&error);
    /* The original is never touched. */
    g_autofree char *orig = weir_graph_to_json(weir_session_original(s));
    assert_string_equal(orig, g_ptr_array_index(jsons, 0));
    assert_true(weir_session_replay(s, &error));
  }
}

/* Structural steps (new nodes, new ids): expanding library nodes. */
static void test_exact_structural(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = testing_relu_chain();
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirSession) s = weir_session_new(g, NULL, NULL, &error);
  assert_non_null(s);
  g_autofree char *j0 = weir_graph_to_json(g);
  g_autoptr(GArray) libs = sites_of(s, "test-expand");
  assert_int_equal(libs->len, 2);
  WeirSite first = g_array_index(libs, WeirSite, 0);
  WeirSite second = g_array_index(libs, WeirSite, 1);
  assert_non_null(weir_session_apply(s, "test-expand", &second, NULL, &error));
  g_autofree char *j1 = g_strdup(weir_session_current_json(s));
  assert_non_null(weir_session_apply(s, "test-expand", &first, NULL, &error));
  g_autofree char *j2 = g_strdup(weir_session_current_json(s));
  const WeirStep *st = weir_session_step(s, 2);
  assert_string_equal(st->transform, "test-expand");
  assert_string_equal(st->labels->pdata[0], "relu1");
  assert_string_equal(st->params, "impl=pure");
  assert_string_equal(st->params_json, "{\"impl\":\"pure\"}");
  assert_non_null(strstr(st->site_text, "relu1"));
  /* Expanding adds maps: more nodes than before. */
  assert_true(weir_session_current(s)->next_id > g->next_id);

  assert_true(weir_session_goto(s, 0, &error));
  assert_json_is(s, j0);
  assert_true(weir_session_goto(s, 2, &error));
  assert_json_is(s, j2);
  assert_true(weir_session_undo(s, &error));
  assert_json_is(s, j1);

  /* The expanded program computes what the library nodes did (interpret
   * the fully expanded one on random inputs and check relu(relu(x))). */
  assert_true(weir_session_redo(s, &error));
  g_autoptr(WeirGraph) run = weir_graph_copy(weir_session_current(s));
  gint64 shape[] = {4, 8};
  g_autoptr(WeirTensor) x = weir_tensor_new(WEIR_DTYPE_F32, 2, shape);
  g_autoptr(WeirTensor) y = weir_tensor_new(WEIR_DTYPE_F32, 2, shape);
  weir_tensor_fill_random(x, 42);
  g_autoptr(GHashTable) args = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(args, "x", x);
  g_hash_table_insert(args, "y", y);
  if (!weir_interpret(run, NULL, args, NULL, &error))
    fail_msg("%s", error->message);
  for (gint64 i = 0; i < x->count; i++) {
    double v = weir_tensor_get(x, i);
    assert_true(weir_tensor_get(y, i) == (v > 0 ? v : 0));
  }
  assert_true(weir_session_replay(s, &error));
}

/* The bundled models: every library node expanded, one step each, through
 * the built-in expand-library-node; the whole history is then walked and
 * replayed.  Prints the memory the history holds. */
static void test_exact_models(void **state) {
  (void)state;
  const WeirTransformInfo *t = weir_transform_lookup("expand-library-node");
  assert_non_null(t);
  for (guint mi = 0; mi < G_N_ELEMENTS(testing_models); mi++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirGraph) g = testing_import_model(testing_models[mi]);
    g_autoptr(WeirSession) s =
        weir_session_new(g, testing_models[mi], NULL, &error);
    if (!s)
      fail_msg("%s: %s", testing_models[mi], error->message);
    g_autoptr(GPtrArray) jsons = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(jsons, weir_graph_to_json(g));
    for (;;) {
      g_autoptr(GArray) sites =
          weir_transform_sites(t, weir_session_current(s));
      if (sites->len == 0)
        break;
      /* The last site: expansions never renumber what is left. */
      const WeirSite *site = &g_array_index(sites, WeirSite, sites->len - 1);
      if (!weir_session_apply(s, t->name, site, NULL, &error))
        fail_msg("%s: %s", testing_models[mi], error->message);
      g_ptr_array_add(jsons, weir_graph_to_json(weir_session_current(s)));
    }
    guint n = weir_session_n_steps(s);
    assert_true(n >= 5);
    for (guint k = n; k > 0; k--) {
      assert_true(weir_session_undo(s, &error));
      assert_json_is(s, g_ptr_array_index(jsons, k - 1));
    }
    for (guint k = 1; k <= n; k++) {
      assert_true(weir_session_redo(s, &error));
      assert_json_is(s, g_ptr_array_index(jsons, k));
    }
    for (guint k = 0; k <= n; k += 3) {
      assert_true(weir_session_goto(s, k, &error));
      assert_json_is(s, g_ptr_array_index(jsons, k));
    }
    if (!weir_session_replay(s, &error))
      fail_msg("%s: %s", testing_models[mi], error->message);
    gsize bytes = weir_session_history_bytes(s);
    print_message("%-12s %3u steps: history %7.1f KiB (%5.1f KiB per step; "
                  "original %5.1f KiB, expanded %5.1f KiB)\n",
                  testing_models[mi], n, (double)bytes / 1024.0,
                  (double)bytes / 1024.0 / (n + 1),
                  (double)strlen(g_ptr_array_index(jsons, 0)) / 1024.0,
                  (double)strlen(g_ptr_array_index(jsons, n)) / 1024.0);
  }
}

typedef struct {
  GString *log;
} Recorder;

static void on_changed(gpointer user) {
  g_string_append(((Recorder *)user)->log, "changed;");
}

static void on_steps(guint position, guint removed, guint added,
                     gpointer user) {
  g_string_append_printf(((Recorder *)user)->log, "steps(%u,%u,%u);", position,
                         removed, added);
}

static void on_step(guint index, gpointer user) {
  g_string_append_printf(((Recorder *)user)->log, "step(%u);", index);
}

static void on_cursor(guint cursor, gpointer user) {
  g_string_append_printf(((Recorder *)user)->log, "cursor(%u);", cursor);
}

static const WeirSessionCallbacks recorder_callbacks = {
    .changed = on_changed,
    .steps_changed = on_steps,
    .step_updated = on_step,
    .cursor_changed = on_cursor,
};

/* Applying after an undo drops the redo tail; the callbacks say so in
 * GListModel terms. */
static void test_truncate_redo_tail(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("matmul.json");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirSession) s = weir_session_new(g, NULL, NULL, &error);
  Recorder rec = {g_string_new(NULL)};
  weir_session_set_callbacks(s, &recorder_callbacks, &rec);
  g_autoptr(GArray) maps = sites_of(s, "test-tile");
  assert_true(maps->len >= 2);
  WeirSite m0 = g_array_index(maps, WeirSite, 0);
  WeirSite m1 = g_array_index(maps, WeirSite, 1);
  const WeirNode *n0 = weir_graph_node(g, m0.nodes[0], NULL);
  const WeirNode *n1 = weir_graph_node(g, m1.nodes[0], NULL);
  g_autofree char *t0 =
      g_strdup_printf("tile=%s", n0->map->params->len == 2 ? "8,8" : "8");
  g_autofree char *t1 =
      g_strdup_printf("tile=%s", n1->map->params->len == 3 ? "2,2,2" : "2,2");
  const char *p0[] = {t0, NULL}, *p1[] = {t1, NULL};
  assert_non_null(weir_session_apply(s, "test-tile", &m0, p0, &error));
  assert_non_null(weir_session_apply(s, "test-schedule", &m0, NULL, &error));
  assert_non_null(weir_session_apply(s, "test-schedule", &m1, NULL, &error));
  assert_int_equal(weir_session_n_steps(s), 3);
  assert_true(weir_session_bookmark(s, 3, "last", &error));
  assert_true(weir_session_bookmark(s, 1, "tiled", &error));
  assert_true(weir_session_set_results(s, 2, "{\"ms\": 1.5}", &error));
  assert_true(weir_session_undo(s, &error));
  assert_true(weir_session_undo(s, &error));
  g_autofree char *before = g_strdup(weir_session_current_json(s));
  g_string_truncate(rec.log, 0);
  if (!weir_session_apply(s, "test-tile", &m1, p1, &error))
    fail_msg("%s", error->message);
  assert_string_equal(rec.log->str, "steps(1,2,1);cursor(2);changed;");
  assert_int_equal(weir_session_n_steps(s), 2);
  assert_int_equal(weir_session_cursor(s), 2);
  assert_false(weir_session_can_redo(s));
  assert_string_equal(weir_session_step(s, 2)->transform, "test-tile");
  /* The bookmark and results of the dropped steps went with them. */
  assert_false(weir_session_find_bookmark(s, "last", NULL));
  guint k = 9;
  assert_true(weir_session_find_bookmark(s, "tiled", &k));
  assert_int_equal(k, 1);
  assert_null(weir_session_get_results(s, 2));
  assert_true(weir_session_undo(s, &error));
  assert_json_is(s, before);
  weir_session_set_callbacks(s, NULL, NULL);
  g_string_free(rec.log, TRUE);
}

/* Failed and illegal applications change nothing and say why. */
static void test_failures_change_nothing(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirSession) s = weir_session_new(g, NULL, NULL, &error);
  Recorder rec = {g_string_new(NULL)};
  weir_session_set_callbacks(s, &recorder_callbacks, &rec);
  g_autofree char *j0 = g_strdup(weir_session_current_json(s));
  WeirSite whole = {0};
  assert_null(weir_session_apply(s, "test-fail", &whole, NULL, &error));
  assert_non_null(strstr(error->message, "deliberate failure"));
  g_clear_error(&error);
  assert_json_is(s, j0);
  assert_int_equal(weir_session_n_steps(s), 0);

  /* vector_add's map (node 7) is already parallel. */
  WeirSite map = one_node(4, 7);
  const char *par[] = {"schedule=parallel", NULL};
  assert_null(weir_session_apply(s, "test-schedule", &map, par, &error));
  assert_non_null(strstr(error->message, "already has schedule parallel"));
  g_clear_error(&error);
  const char *bad[] = {"schedule=vectorized", NULL};
  assert_null(weir_session_apply(s, "test-schedule", &map, bad, &error));
  assert_non_null(strstr(error->message, "schedule"));
  g_clear_error(&error);
  const char *two[] = {"tile=4,4", NULL};
  assert_null(weir_session_apply(s, "test-tile", &map, two, &error));
  assert_non_null(strstr(error->message, "has 1 parameters, tile gives 2"));
  g_clear_error(&error);
  assert_null(weir_session_apply(s, "no-such-thing", &map, NULL, &error));
  assert_non_null(strstr(error->message, "unknown transformation"));
  g_clear_error(&error);
  WeirSite gone = one_node(4, 999);
  assert_null(weir_session_apply(s, "test-schedule", &gone, NULL, &error));
  assert_non_null(strstr(error->message, "999"));
  g_clear_error(&error);
  assert_json_is(s, j0);
  assert_int_equal(weir_session_n_steps(s), 0);
  assert_string_equal(rec.log->str, "");
  weir_session_set_callbacks(s, NULL, NULL);
  g_string_free(rec.log, TRUE);
}

/* Figures recorded with each step. */
static void test_step_figures(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("vector_add.json");
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "N", 1000);
  g_autoptr(WeirSession) s = weir_session_new(g, "vector_add.json", b, &error);
  WeirSite map = one_node(4, 7);
  gint64 t0 = g_get_real_time();
  const WeirStep *st =
      weir_session_apply(s, "test-schedule", &map, NULL, &error);
  assert_non_null(st);
  assert_true(st->bytes_before.known);
  assert_int_equal(st->bytes_before.value, 12000);
  assert_int_equal(st->bytes_after.value, 12000);
  assert_string_equal(st->bytes_before.expr, "12*N");
  assert_true(st->flops_before.known);
  assert_int_equal(st->flops_before.value, 1000);
  assert_true(st->seconds >= 0);
  assert_true(st->timestamp >= t0 && st->timestamp <= g_get_real_time());
  assert_string_equal(weir_session_source(s), "vector_add.json");
  g_autofree char *f = weir_figure_format(&st->bytes_before, TRUE);
  assert_string_equal(f, "11.7 KiB");
  WeirFigure unknown = {0};
  g_autofree char *u = weir_figure_format(&unknown, FALSE);
  assert_string_equal(u, "?");
}

static void test_bookmarks_and_results(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("softmax.json");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirSession) s = weir_session_new(g, NULL, NULL, &error);
  g_autoptr(GArray) maps = sites_of(s, "test-schedule");
  for (guint i = 0; i < 2; i++)
    assert_non_null(weir_session_apply(
        s, "test-schedule", &g_array_index(maps, WeirSite, i), NULL, &error));
  assert_true(weir_session_bookmark(s, 0, "baseline", &error));
  assert_true(weir_session_bookmark(s, 2, "fast", &error));
  assert_string_equal(weir_session_original_bookmark(s), "baseline");
  assert_string_equal(weir_session_step(s, 2)->bookmark, "fast");
  /* Moving a name; replacing a step's bookmark. */
  assert_true(weir_session_bookmark(s, 1, "fast", &error));
  assert_null(weir_session_step(s, 2)->bookmark);
  assert_string_equal(weir_session_step(s, 1)->bookmark, "fast");
  assert_true(weir_session_bookmark(s, 1, "quick", &error));
  assert_false(weir_session_find_bookmark(s, "fast", NULL));
  assert_false(weir_session_bookmark(s, 3, "x", &error));
  assert_non_null(strstr(error->message, "step 3 does not exist"));
  g_clear_error(&error);
  assert_false(weir_session_bookmark(s, 1, "42", &error));
  assert_non_null(strstr(error->message, "cannot be a number"));
  g_clear_error(&error);
  assert_false(weir_session_bookmark(s, 1, "", &error));
  g_clear_error(&error);
  assert_true(weir_session_remove_bookmark(s, "quick"));
  assert_false(weir_session_remove_bookmark(s, "quick"));

  assert_true(
      weir_session_set_results(s, 1, "{\"median_ms\": 0.25}\n", &error));
  assert_string_equal(weir_session_get_results(s, 1),
                      "{\"median_ms\": 0.25}\n");
  assert_false(weir_session_set_results(s, 1, "{\"median_ms\": ", &error));
  assert_non_null(strstr(error->message, "results of step 1"));
  g_clear_error(&error);
  assert_false(weir_session_set_results(s, 1, "{} {}", &error));
  g_clear_error(&error);
  assert_false(weir_session_set_results(s, 0, "{}", &error));
  g_clear_error(&error);
  assert_true(weir_session_set_results(s, 1, NULL, &error));
  assert_null(weir_session_get_results(s, 1));
}

/* Replay notices a history that no longer matches what the
 * transformations do. */
static void test_replay_detects_divergence(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("matmul.json");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirSession) s = weir_session_new(g, NULL, NULL, &error);
  g_autoptr(GArray) maps = sites_of(s, "test-schedule");
  for (guint i = 0; i < maps->len; i++)
    assert_non_null(weir_session_apply(
        s, "test-schedule", &g_array_index(maps, WeirSite, i), NULL, &error));
  assert_true(weir_session_replay(s, &error));
  WeirStep *st = (WeirStep *)weir_session_step(s, 2);
  char *at = strstr(st->program, "\"simd\"");
  assert_non_null(at);
  memcpy(at, "\"SIMD\"", 6);
  assert_false(weir_session_replay(s, &error));
  assert_non_null(strstr(error->message, "step 2"));
  assert_non_null(strstr(error->message, "different program"));
  memcpy(at, "\"simd\"", 6);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_exact_undo_redo_samples),
      cmocka_unit_test(test_exact_structural),
      cmocka_unit_test(test_exact_models),
      cmocka_unit_test(test_truncate_redo_tail),
      cmocka_unit_test(test_failures_change_nothing),
      cmocka_unit_test(test_step_figures),
      cmocka_unit_test(test_bookmarks_and_results),
      cmocka_unit_test(test_replay_detects_divergence),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
