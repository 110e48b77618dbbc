/* test-gui-app.c: the workbench application driven through its actions in
 * a real window (run under Xvfb; exits 77, skipped, without a display).
 *
 * The tests run in order on one window, as a new user would: bad files are
 * refused with a message and no crash; the sample residual CNN opens; its
 * library nodes are expanded ("Apply to All Sites"); a node is selected
 * and its properties and transformations shown; a tier-3 fusion is
 * previewed and applied and the data-movement total drops; a tier-4
 * transient reuse is applied; undo, redo and a click in the history move
 * the cursor and the undo/redo actions follow; the code view highlights
 * the selected scope; the program is run and benchmarked against the
 * original in a worker and the timings land in the history; the recipe,
 * the workspace and the kernel are exported.  Then the main window is
 * rendered to PNGs (WEIR_SHOT_DIR) and an apply + redraw on a program of
 * about 2,000 nodes is timed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <glib/gstdio.h>

#include "../chain-program.h"
#include "weir-application.h"
#include "weir-rows.h"
#include "weir-window-private.h"

typedef struct {
  WeirApplication *app;
  WeirWindow *w;
  WeirWindow *main; /* the first window (fx.w is another one meanwhile) */
  char *tmp;
  gint64 bytes_expanded; /* total after expansion */
  gint64 bytes_fused;    /* after the fusion */
} Fixture;

static Fixture fx;

/* --------------------------------------------------------------- helpers */

static void iterate(void) {
  while (g_main_context_iteration(NULL, FALSE))
    ;
}

/* Runs the main loop until the graph view has its picture and no run is
 * going on, or timeout_s pass. */
static gboolean wait_idle(double timeout_s) {
  gint64 deadline = g_get_monotonic_time() + (gint64)(timeout_s * 1e6);
  WeirGraphView *v = weir_window_get_graph_view(fx.w);
  while (g_get_monotonic_time() < deadline) {
    if (!g_main_context_iteration(NULL, FALSE)) {
      if (!weir_graph_view_is_busy(v) && !weir_window_is_running(fx.w) &&
          !weir_window_is_scanning(fx.w))
        return TRUE;
      g_usleep(2000);
    }
  }
  return FALSE;
}

static void activate(const char *name, GVariant *param) {
  GActionGroup *g = g_str_has_prefix(name, "app.") ? G_ACTION_GROUP(fx.app)
                                                   : G_ACTION_GROUP(fx.w);
  const char *n = strchr(name, '.') + 1;
  assert_true(g_action_group_has_action(g, n));
  assert_true(g_action_group_get_action_enabled(g, n));
  g_action_group_activate_action(g, n, param);
  iterate();
}

static gboolean enabled(const char *name) {
  return g_action_group_get_action_enabled(G_ACTION_GROUP(fx.w), name);
}

static gint64 total_bytes(void) {
  const WeirAnalysis *a = weir_window_get_analysis(fx.w);
  assert_non_null(a);
  assert_true(a->total_bytes.known);
  return a->total_bytes.value;
}

static gboolean model_has_text(GListModel *m, const char *text) {
  guint n = g_list_model_get_n_items(m);
  for (guint i = 0; i < n; i++) {
    g_autoptr(WeirRow) r = g_list_model_get_item(m, i);
    if ((r->title && strstr(r->title, text)) ||
        (r->subtitle && strstr(r->subtitle, text)))
      return TRUE;
  }
  return FALSE;
}

static gboolean transform_listed(const char *name, guint *tier) {
  g_autoptr(GPtrArray) a = weir_window_list_transforms(fx.w);
  for (guint i = 0; i < a->len; i++) {
    WeirRow *r = g_ptr_array_index(a, i);
    if (g_str_equal(r->title, name)) {
      if (tier)
        *tier = r->tier;
      return TRUE;
    }
  }
  return FALSE;
}

/* The node of kind with label in the current program (state in *state). */
static const WeirNode *find_node(WeirNodeKind kind, const char *label,
                                 guint *state) {
  const WeirGraph *g = weir_session_current(weir_window_get_session(fx.w));
  for (guint s = 0; s < g->states->len; s++) {
    const WeirState *st = g_ptr_array_index(g->states, s);
    for (guint i = 0; i < st->nodes->len; i++) {
      const WeirNode *n = g_ptr_array_index(st->nodes, i);
      if (n->kind == kind && n->label && g_str_equal(n->label, label)) {
        *state = st->id;
        return n;
      }
    }
  }
  return NULL;
}

static void select_node(guint state, guint id) {
  WeirElement e = {.kind = WEIR_ELEMENT_NODE, .state = state, .id = id};
  weir_graph_view_select(weir_window_get_graph_view(fx.w), &e);
  assert_true(wait_idle(120));
}

static void clear_selection(void) {
  weir_graph_view_select(weir_window_get_graph_view(fx.w), NULL);
  assert_true(wait_idle(120));
}

static char *tmp_path(const char *name) {
  return g_build_filename(fx.tmp, name, NULL);
}

static const char *title(void) {
  return gtk_window_get_title(GTK_WINDOW(fx.w));
}

/* Prints the widgets at least 450 px wide at their minimum (debugging
 * layouts: WEIR_GUI_DEBUG_SIZES=1). */
static void print_wide(GtkWidget *w, int depth) {
  int mn, nat;
  gtk_widget_measure(w, GTK_ORIENTATION_HORIZONTAL, -1, &mn, &nat, NULL, NULL);
  if (GTK_IS_PANED(w))
    printf("%*spaned position %d alloc %d\n", depth * 2, "",
           gtk_paned_get_position(GTK_PANED(w)), gtk_widget_get_width(w));
  if (mn < 450 && !GTK_IS_PANED(w) && depth > 3)
    return;
  if (mn < 450 && depth > 3 && nat < 450)
    return;
  printf("%*s%s min %d nat %d alloc %d\n", depth * 2, "", G_OBJECT_TYPE_NAME(w),
         mn, nat, gtk_widget_get_width(w));
  for (GtkWidget *c = gtk_widget_get_first_child(w); c;
       c = gtk_widget_get_next_sibling(c))
    print_wide(c, depth + 1);
}

/* Renders the whole window (header bar included) to dir/name. */
static void shoot(const char *name) {
  assert_true(wait_idle(60));
  GtkWidget *win = GTK_WIDGET(fx.w);
  /* let the revealers finish and the view draw */
  gint64 until = g_get_monotonic_time() + 400000;
  while (g_get_monotonic_time() < until)
    if (!g_main_context_iteration(NULL, FALSE))
      g_usleep(5000);
  int wd = gtk_widget_get_width(win), ht = gtk_widget_get_height(win);
  if (g_getenv("WEIR_GUI_DEBUG_SIZES"))
    print_wide(win, 0);
  assert_true(wd > 0 && ht > 0);
  g_autoptr(GdkPaintable) p = gtk_widget_paintable_new(win);
  /* on a loaded machine the window may not have drawn yet (an empty
   * snapshot): keep iterating the main loop for up to 10 s */
  GskRenderNode *node = NULL;
  for (gint64 stop = g_get_monotonic_time() + 10000000;
       !node && g_get_monotonic_time() < stop;) {
    GtkSnapshot *s = gtk_snapshot_new();
    gdk_paintable_snapshot(p, s, wd, ht);
    node = gtk_snapshot_free_to_node(s);
    if (!node) {
      while (g_main_context_iteration(NULL, FALSE))
        ;
      g_usleep(20000);
    }
  }
  assert_non_null(node);
  GskRenderer *r = gtk_native_get_renderer(GTK_NATIVE(win));
  graphene_rect_t rect = GRAPHENE_RECT_INIT(0, 0, (float)wd, (float)ht);
  g_autoptr(GdkTexture) t = gsk_renderer_render_texture(r, node, &rect);
  gsk_render_node_unref(node);
  const char *dir = g_getenv("WEIR_SHOT_DIR");
  g_autofree char *path = g_build_filename(dir ? dir : ".", name, NULL);
  assert_true(gdk_texture_save_to_png(t, path));
  printf("screenshot: %s (%dx%d)\n", path, wd, ht);
}

/* ----------------------------------------------------------------- tests */

/* Bad files: a message in the window naming the file, nothing opened. */
static void test_bad_files(void **state) {
  (void)state;
  g_autofree char *garbage = tmp_path("garbage.onnx");
  g_autofree char *json = tmp_path("broken.json");
  g_autofree char *ws = tmp_path("fake.weir");
  g_autofree char *missing = tmp_path("missing.onnx");
  assert_true(g_file_set_contents(garbage, "\x08\x07not a model", -1, NULL));
  assert_true(
      g_file_set_contents(json, "{\"format\": \"weir-ir\", ", -1, NULL));
  assert_true(g_file_set_contents(ws, "SQLite format 2 (not)", -1, NULL));
  const char *const bad[] = {garbage, json, ws, missing};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    activate("app.open-file", g_variant_new_string(bad[i]));
    assert_true(weir_window_is_empty(fx.w));
    const char *m = weir_window_get_message(fx.w);
    assert_non_null(m);
    g_autofree char *base = g_path_get_basename(bad[i]);
    if (!strstr(m, base))
      fail_msg("message '%s' does not name %s", m, base);
    assert_string_equal(title(), "Weir");
  }
  assert_false(enabled("run"));
  assert_false(enabled("undo"));
}

/* The sample residual CNN opens: title, status totals, panels. */
static void test_open_resnet(void **state) {
  (void)state;
  activate("app.open-file",
           g_variant_new_string(WEIR_SRCDIR "/samples/models/resnet.onnx"));
  assert_true(wait_idle(60));
  assert_false(weir_window_is_empty(fx.w));
  assert_null(weir_window_get_message(fx.w));
  assert_non_null(strstr(title(), "resnet.onnx"));
  assert_null(strstr(title(), "*"));
  assert_true(
      g_str_has_prefix(weir_window_get_status_text(fx.w), "Modeled traffic "));
  assert_int_equal(g_list_model_get_n_items(weir_window_get_history(fx.w)), 1);
  assert_true(weir_graph_view_n_drawn_nodes(weir_window_get_graph_view(fx.w)) >
              20);
  guint tier = 0;
  assert_true(transform_listed("expand-library-node", &tier));
  assert_int_equal(tier, 1);
  assert_true(transform_listed("batchnorm-folding", &tier));
  assert_int_equal(tier, 2);
  /* no fusion applies before expansion */
  assert_false(transform_listed("map-fusion", NULL));
  assert_false(enabled("undo"));
  assert_false(enabled("redo"));
  assert_true(enabled("run"));
  assert_true(model_has_text(weir_window_get_properties(fx.w), "resnet"));
}

/* "Apply to All Sites" of expand-library-node: one step per node. */
static void test_expand_all(void **state) {
  (void)state;
  gint64 before = total_bytes();
  assert_true(weir_window_select_transform(fx.w, "expand-library-node"));
  assert_true(wait_idle(120));
  assert_true(g_list_model_get_n_items(weir_window_get_sites(fx.w)) >= 20);
  assert_true(model_has_text(weir_window_get_sites(fx.w), "legal"));
  activate("win.apply-all", NULL);
  assert_true(wait_idle(60));
  WeirSession *s = weir_window_get_session(fx.w);
  assert_int_equal(weir_session_n_steps(s), 20);
  assert_int_equal(weir_session_cursor(s), 20);
  const WeirAnalysis *a = weir_window_get_analysis(fx.w);
  assert_int_equal(a->node_counts[WEIR_NODE_LIBRARY], 0);
  assert_non_null(strstr(weir_window_get_message(fx.w), "20 sites"));
  assert_non_null(strstr(title(), "*resnet.onnx"));
  assert_true(enabled("undo"));
  assert_false(enabled("redo"));
  assert_int_equal(g_list_model_get_n_items(weir_window_get_history(fx.w)), 21);
  fx.bytes_expanded = total_bytes();
  assert_true(fx.bytes_expanded != before);
  assert_true(transform_listed("map-fusion", NULL));
  assert_true(transform_listed("transient-reuse", NULL));
}

/* Select a node: its properties, and the transformations at it. */
static void test_select_node(void **state) {
  (void)state;
  guint st = 0;
  const WeirNode *exit =
      find_node(WEIR_NODE_MAP_EXIT, "/bn/BatchNormalization", &st);
  assert_non_null(exit);
  select_node(st, exit->id);
  GListModel *props = weir_window_get_properties(fx.w);
  assert_true(model_has_text(props, "map_exit"));
  assert_true(model_has_text(props, "logical volume in"));
  /* only transformations with a site at the node (or whole-program) */
  assert_true(transform_listed("map-fusion", NULL));
  assert_false(transform_listed("horizontal-map-fusion", NULL));
  assert_true(transform_listed("transient-reuse", NULL));
  assert_true(weir_window_select_transform(fx.w, "map-fusion"));
  assert_true(wait_idle(120));
  GListModel *sites = weir_window_get_sites(fx.w);
  assert_int_equal(g_list_model_get_n_items(sites), 1);
  g_autoptr(WeirRow) site = g_list_model_get_item(sites, 0);
  assert_true(site->legal);
  assert_int_equal(site->site.nodes[0], exit->id);
  assert_true(enabled("apply"));
  assert_true(enabled("preview"));
}

/* Preview then apply the tier-3 fusion: the total drops. */
static void test_fusion(void **state) {
  (void)state;
  WeirSession *s = weir_window_get_session(fx.w);
  guint steps = weir_session_n_steps(s);
  activate("win.preview", NULL);
  assert_true(weir_window_is_previewing(fx.w));
  const char *p = weir_window_get_preview_text(fx.w);
  assert_non_null(p);
  assert_non_null(strstr(p, "map-fusion"));
  assert_non_null(strstr(p, "\u2192"));
  /* previewing does not change the session */
  assert_int_equal(weir_session_n_steps(s), steps);
  assert_true(wait_idle(60));
  shoot("workbench-preview.png");
  activate("win.apply", NULL);
  assert_true(wait_idle(60));
  assert_false(weir_window_is_previewing(fx.w));
  assert_int_equal(weir_session_n_steps(s), steps + 1);
  const WeirStep *st = weir_session_step(s, steps + 1);
  assert_string_equal(st->transform, "map-fusion");
  fx.bytes_fused = total_bytes();
  printf("apply map-fusion on resnet: %.1f ms (session, analysis, panels)\n",
         weir_window_last_apply_ms(fx.w));
  assert_true(fx.bytes_fused < fx.bytes_expanded);
  assert_true(st->bytes_after.known &&
              st->bytes_after.value < st->bytes_before.value);
  /* the history row shows the delta */
  g_autoptr(WeirRow) row =
      g_list_model_get_item(weir_window_get_history(fx.w), steps + 1);
  assert_non_null(strstr(row->title, "map-fusion"));
  assert_non_null(strstr(row->subtitle, "logical volume"));
  assert_non_null(strstr(row->subtitle, "-"));
  assert_true(row->current);
}

/* The tier-4 transient reuse on the whole program. */
static void test_transient_reuse(void **state) {
  (void)state;
  clear_selection();
  WeirSession *s = weir_window_get_session(fx.w);
  guint steps = weir_session_n_steps(s);
  gint64 peak = weir_window_get_analysis(fx.w)->peak_transient_bytes.value;
  assert_true(weir_window_select_transform(fx.w, "transient-reuse"));
  assert_true(wait_idle(120));
  GListModel *sites = weir_window_get_sites(fx.w);
  assert_int_equal(g_list_model_get_n_items(sites), 1);
  g_autoptr(WeirRow) site = g_list_model_get_item(sites, 0);
  assert_string_equal(site->title, "whole program");
  assert_true(site->legal);
  assert_true(weir_window_select_site(fx.w, 0));
  activate("win.apply", NULL);
  assert_true(wait_idle(60));
  assert_int_equal(weir_session_n_steps(s), steps + 1);
  assert_string_equal(weir_session_step(s, steps + 1)->transform,
                      "transient-reuse");
  assert_true(weir_window_get_analysis(fx.w)->peak_transient_bytes.value <=
              peak);
  /* data movement stays below the expanded program's */
  assert_true(total_bytes() < fx.bytes_expanded);
}

/* Undo, redo and a click in the history; the actions (and so the toolbar
 * buttons bound to them) follow the session. */
static void test_undo_redo(void **state) {
  (void)state;
  WeirSession *s = weir_window_get_session(fx.w);
  guint n = weir_session_n_steps(s);
  g_autofree char *json = g_strdup(weir_session_current_json(s));
  activate("win.undo", NULL);
  assert_int_equal(weir_session_cursor(s), n - 1);
  assert_true(enabled("redo"));
  assert_true(total_bytes() == fx.bytes_fused);
  activate("win.undo", NULL);
  assert_int_equal(weir_session_cursor(s), n - 2);
  assert_true(total_bytes() == fx.bytes_expanded);
  activate("win.redo", NULL);
  activate("win.redo", NULL);
  assert_int_equal(weir_session_cursor(s), n);
  assert_false(enabled("redo"));
  assert_string_equal(weir_session_current_json(s), json);
  /* a click on row 0 goes to the original, on row n back */
  assert_true(weir_window_select_history(fx.w, 0));
  iterate();
  assert_int_equal(weir_session_cursor(s), 0);
  assert_false(enabled("undo"));
  assert_true(enabled("redo"));
  assert_true(weir_window_select_history(fx.w, n));
  iterate();
  assert_int_equal(weir_session_cursor(s), n);
  assert_string_equal(weir_session_current_json(s), json);
  assert_true(wait_idle(60));
  /* bookmark */
  assert_true(weir_window_bookmark(fx.w, "reused"));
  iterate();
  g_autoptr(WeirRow) row =
      g_list_model_get_item(weir_window_get_history(fx.w), n);
  assert_non_null(strstr(row->subtitle, "\u2605 reused"));
  assert_false(weir_window_bookmark(fx.w, ""));
  assert_non_null(weir_window_get_message(fx.w));
}

/* The code view: generated C, the selected map's loops highlighted. */
static void test_code_view(void **state) {
  (void)state;
  guint st = 0;
  const WeirNode *entry = find_node(WEIR_NODE_MAP_ENTRY, "/block1/Relu", &st);
  assert_non_null(entry);
  guint id = entry->id;
  weir_window_show_page(fx.w, 2);
  iterate();
  g_autofree char *code = weir_window_get_code(fx.w);
  assert_non_null(strstr(code, "_run("));
  select_node(st, id);
  guint first = 0, last = 0;
  assert_true(weir_window_get_code_highlight(fx.w, &first, &last));
  assert_true(first < last);
  g_auto(GStrv) lines = g_strsplit(code, "\n", -1);
  g_autofree char *want = g_strdup_printf("/* map %u '", id);
  assert_non_null(strstr(lines[first], want));
  shoot("workbench-code.png");
  clear_selection();
  assert_false(weir_window_get_code_highlight(fx.w, &first, &last));
}

/* Run and benchmark in the worker: results per step, compared with the
 * original program. */
static void test_run_and_bench(void **state) {
  (void)state;
  WeirSession *s = weir_window_get_session(fx.w);
  guint n = weir_session_cursor(s);
  activate("win.run", NULL);
  assert_true(weir_window_is_running(fx.w));
  assert_false(enabled("run"));
  assert_true(enabled("cancel"));
  assert_true(wait_idle(600));
  assert_false(enabled("cancel"));
  const char *res = weir_session_get_results(s, n);
  assert_non_null(res);
  assert_non_null(strstr(res, "\"matches\":true"));
  assert_non_null(strstr(weir_window_get_message(fx.w), "outputs match"));
  /* the run was profiled: per-node times on the graph view (the measured
   * time overlay) and the roofline page of this step */
  const WeirProfile *prof = weir_window_current_profile(fx.w);
  assert_non_null(prof);
  assert_true(prof->nodes->len > 0);
  WeirGraphView *view = weir_window_get_graph_view(fx.w);
  guint timed = 0;
  for (guint i = 0; i < prof->nodes->len; i++) {
    const WeirProfileNode *pn = g_ptr_array_index(prof->nodes, i);
    double t = -1;
    if (pn->source &&
        weir_graph_view_get_time(view, pn->state, pn->source, &t)) {
      assert_true(t >= 0);
      timed++;
    }
  }
  assert_true(timed > 0);
  activate("win.overlay", g_variant_new_string("time"));
  assert_int_equal(weir_graph_view_get_overlay(view), WEIR_OVERLAY_TIME);
  activate("win.zoom-fit", NULL);
  shoot("workbench-time.png");
  weir_window_show_page(fx.w, 4);
  iterate();
  shoot("workbench-roofline.png");
  activate("win.overlay", g_variant_new_string("none"));

  activate("win.bench", NULL);
  assert_true(wait_idle(600));
  assert_non_null(weir_window_current_profile(fx.w));
  assert_int_equal(weir_window_current_profile(fx.w)->repetitions, 10);
  res = weir_session_get_results(s, n);
  assert_non_null(strstr(res, "\"label\":\"bench\""));
  assert_non_null(strstr(res, "\"repetitions\":10"));
  g_autoptr(WeirRow) row =
      g_list_model_get_item(weir_window_get_history(fx.w), n);
  assert_non_null(strstr(row->subtitle, "bench: "));
  assert_non_null(strstr(row->subtitle, "(original "));

  /* the original's own timing, on row 0 */
  activate("win.goto", g_variant_new_uint32(0));
  activate("win.bench", NULL);
  assert_true(wait_idle(600));
  g_autoptr(WeirRow) row0 =
      g_list_model_get_item(weir_window_get_history(fx.w), 0);
  assert_non_null(strstr(row0->subtitle, "bench: "));
  activate("win.goto", g_variant_new_uint32(n));
  assert_true(wait_idle(60));

  /* cancel: the run stops (or had already finished), and the window is
   * usable again */
  /* Started without iterating the main loop: a benchmark from the compile
   * cache can finish within one iteration, and its completion (which
   * disables cancel) is only delivered by the main loop. */
  assert_true(enabled("bench"));
  g_action_group_activate_action(G_ACTION_GROUP(fx.w), "bench", NULL);
  assert_true(enabled("cancel"));
  activate("win.cancel", NULL);
  assert_true(wait_idle(600));
  assert_false(weir_window_is_running(fx.w));
  assert_true(enabled("run"));
  weir_window_show_page(fx.w, 1);
  shoot("workbench-history.png");
}

/* Run with tensor files (the Run page, as `weir run --input/--expect`):
 * the sample's input_0.pb as the input and output_0.pb as the expected
 * output match; a file of the wrong shape, a damaged file and an
 * expectation for the wrong argument are refused with a message naming the
 * file; a wrong expectation is a mismatch shown in the window. */
static void test_run_with_files(void **state) {
  (void)state;
  WeirSession *s = weir_window_get_session(fx.w);
  guint n = weir_session_cursor(s);
  weir_window_show_page(fx.w, 3);
  const char *in = WEIR_SRCDIR "/samples/models/resnet/input_0.pb";
  const char *out = WEIR_SRCDIR "/samples/models/resnet/output_0.pb";
  g_autofree char *in_spec = g_strconcat("input=", in, NULL);
  g_autofree char *out_spec = g_strconcat("output=", out, NULL);
  activate("win.set-input", g_variant_new_string(in_spec));
  assert_string_equal(weir_window_get_input_file(fx.w, "input", FALSE), in);
  activate("win.set-expected", g_variant_new_string(out_spec));
  assert_string_equal(weir_window_get_input_file(fx.w, "output", TRUE), out);
  assert_null(weir_window_get_input_file(fx.w, "output", FALSE));
  activate("win.run", NULL);
  assert_true(wait_idle(600));
  const char *m = weir_window_get_message(fx.w);
  assert_non_null(m);
  if (!strstr(m, "outputs match") ||
      !strstr(m, "1 input from files, 1 expected output checked"))
    fail_msg("run with files: '%s'", m);
  printf("run with files: %s\n", m);
  assert_non_null(strstr(weir_session_get_results(s, n), "\"matches\":true"));
  shoot("workbench-run.png");

  /* a tensor of the wrong shape: refused, the chosen file stays */
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirTensor) small =
      weir_tensor_new(WEIR_DTYPE_F32, 4, (gint64[]){1, 3, 16, 16});
  g_autofree char *small_path = tmp_path("small.npy");
  assert_true(weir_tensor_save(small, "input", small_path, &err));
  g_autofree char *small_spec = g_strconcat("input=", small_path, NULL);
  activate("win.set-input", g_variant_new_string(small_spec));
  m = weir_window_get_message(fx.w);
  if (!strstr(m, "small.npy") ||
      !strstr(m, "is f32[2, 3, 16, 16], but the tensor is f32[1, 3, 16, 16]"))
    fail_msg("wrong shape: '%s'", m);
  assert_string_equal(weir_window_get_input_file(fx.w, "input", FALSE), in);
  /* a damaged file */
  g_autofree char *junk = tmp_path("junk.pb");
  assert_true(g_file_set_contents(junk, "\xff\xff\xff not a tensor", -1, NULL));
  g_autofree char *junk_spec = g_strconcat("input=", junk, NULL);
  activate("win.set-input", g_variant_new_string(junk_spec));
  m = weir_window_get_message(fx.w);
  if (!strstr(m, "junk.pb"))
    fail_msg("damaged file: '%s'", m);
  assert_string_equal(weir_window_get_input_file(fx.w, "input", FALSE), in);
  /* no such argument */
  g_autofree char *nope_spec = g_strconcat("nope=", in, NULL);
  activate("win.set-input", g_variant_new_string(nope_spec));
  m = weir_window_get_message(fx.w);
  if (!strstr(m, "'nope'") || !strstr(m, "arguments: input, output"))
    fail_msg("no such argument: '%s'", m);

  /* a wrong expectation: the run reports the mismatch */
  g_autoptr(WeirTensor) want = weir_tensor_load(out, NULL, &err);
  assert_non_null(want);
  for (gint64 i = 0; i < want->count; i++)
    weir_tensor_set(want, i, weir_tensor_get(want, i) + 1.0);
  g_autofree char *wrong = tmp_path("wrong.npy");
  assert_true(weir_tensor_save(want, "output", wrong, &err));
  g_autofree char *wrong_spec = g_strconcat("output=", wrong, NULL);
  activate("win.set-expected", g_variant_new_string(wrong_spec));
  activate("win.run", NULL);
  assert_true(wait_idle(600));
  m = weir_window_get_message(fx.w);
  if (!strstr(m, "OUTPUTS DIFFER") || !strstr(m, "expected output") ||
      !strstr(m, "'output'"))
    fail_msg("wrong expectation: '%s'", m);
  assert_non_null(strstr(weir_session_get_results(s, n), "\"matches\":false"));

  /* back to random inputs */
  activate("win.clear-inputs", NULL);
  assert_null(weir_window_get_input_file(fx.w, "input", FALSE));
  assert_null(weir_window_get_input_file(fx.w, "output", TRUE));
  activate("win.run", NULL);
  assert_true(wait_idle(600));
  m = weir_window_get_message(fx.w);
  assert_non_null(strstr(m, "outputs match"));
  assert_null(strstr(m, "from files"));
  weir_window_show_page(fx.w, 0);
}

/* Export the recipe (it replays to the same program), save the workspace
 * (title loses its marker; it reopens with the same history), export the
 * kernel, apply the recipe to a fresh window. */
static void test_export(void **state) {
  (void)state;
  WeirSession *s = weir_window_get_session(fx.w);
  g_autofree char *recipe = tmp_path("resnet.recipe.json");
  activate("win.export-recipe-to", g_variant_new_string(recipe));
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirRecipe) r = weir_recipe_load(recipe, &err);
  assert_non_null(r);
  assert_int_equal(r->steps->len, weir_session_cursor(s));
  g_autoptr(WeirGraph) g = weir_graph_copy(weir_session_original(s));
  assert_true(weir_recipe_apply(g, r, NULL, NULL, &err));
  g_autofree char *json = weir_graph_to_json(g);
  assert_string_equal(json, weir_session_current_json(s));

  g_autofree char *ws = tmp_path("resnet.weir");
  activate("win.save-to", g_variant_new_string(ws));
  assert_false(weir_window_is_dirty(fx.w));
  assert_string_equal(title(), "resnet.weir \u2014 Weir");
  g_autoptr(WeirSession) back = weir_workspace_open(ws, &err);
  assert_non_null(back);
  assert_int_equal(weir_session_n_steps(back), weir_session_n_steps(s));

  g_autofree char *kdir = tmp_path("kernel");
  activate("win.export-kernel-to", g_variant_new_string(kdir));
  g_autofree char *prefix = weir_codegen_prefix(weir_session_current(s));
  g_autofree char *cname = g_strconcat(prefix, ".c", NULL);
  g_autofree char *cpath = g_build_filename(kdir, cname, NULL);
  assert_true(g_file_test(cpath, G_FILE_TEST_IS_REGULAR));
  /* the whole artifact: build file, harness, expected outputs, README */
  static const char *const parts[] = {"Makefile", "main.c", "README.md"};
  for (guint i = 0; i < G_N_ELEMENTS(parts); i++) {
    g_autofree char *part = g_build_filename(kdir, parts[i], NULL);
    assert_true(g_file_test(part, G_FILE_TEST_IS_REGULAR));
  }

  /* A second window: the workspace opens there (this one is not empty),
   * and a recipe applies to a fresh model. */
  activate("app.open-file",
           g_variant_new_string(WEIR_SRCDIR "/samples/models/resnet.onnx"));
  GList *wins = gtk_application_get_windows(GTK_APPLICATION(fx.app));
  assert_int_equal(g_list_length(wins), 2);
  WeirWindow *other =
      WEIR_WINDOW(wins->data == fx.w ? wins->next->data : wins->data);
  assert_false(weir_window_is_empty(other));
  g_action_group_activate_action(G_ACTION_GROUP(other), "apply-recipe-file",
                                 g_variant_new_string(recipe));
  iterate();
  WeirSession *os = weir_window_get_session(other);
  assert_int_equal(weir_session_n_steps(os), weir_session_cursor(s));
  assert_string_equal(weir_session_current_json(os),
                      weir_session_current_json(s));
  assert_non_null(strstr(weir_window_get_message(other), "applied"));
  /* a bad recipe: a message, no change */
  g_autofree char *bad = tmp_path("bad.recipe.json");
  assert_true(
      g_file_set_contents(bad, "{\"format\": \"weir-recipe\"}", -1, NULL));
  guint before = weir_session_n_steps(os);
  g_action_group_activate_action(G_ACTION_GROUP(other), "apply-recipe-file",
                                 g_variant_new_string(bad));
  iterate();
  assert_int_equal(weir_session_n_steps(os), before);
  assert_non_null(strstr(weir_window_get_message(other), "bad.recipe.json"));
  gtk_window_destroy(GTK_WINDOW(other));
  iterate();
}

/* The overlay action switches the view and the drop-down. */
static void test_overlay_and_shots(void **state) {
  (void)state;
  activate("win.overlay", g_variant_new_string("bytes"));
  WeirGraphView *v = weir_window_get_graph_view(fx.w);
  assert_int_equal(weir_graph_view_get_overlay(v), WEIR_OVERLAY_BYTES);
  g_autoptr(GVariant) st =
      g_action_group_get_action_state(G_ACTION_GROUP(fx.w), "overlay");
  assert_string_equal(g_variant_get_string(st, NULL), "bytes");
  /* the transformations page at a selected node, bytes overlay */
  guint sid = 0;
  const WeirNode *n = find_node(WEIR_NODE_MAP_ENTRY, "/block2/Relu", &sid);
  assert_non_null(n);
  select_node(sid, n->id);
  weir_window_show_page(fx.w, 0);
  assert_true(weir_window_select_transform(fx.w, "map-fusion"));
  assert_true(wait_idle(120));
  activate("win.zoom-fit", NULL);
  shoot("workbench-transforms.png");
  g_action_group_activate_action(G_ACTION_GROUP(fx.w), "overlay",
                                 g_variant_new_string("nonsense"));
  iterate();
  assert_int_equal(weir_graph_view_get_overlay(v), WEIR_OVERLAY_BYTES);
  assert_non_null(strstr(weir_window_get_message(fx.w), "nonsense"));
}

/* Apply + redraw on a program of about 2,000 nodes: chain_json() from
 * tests/chain-program.h. */
static gint64 layout_done_at;

static void on_layout_done(WeirGraphView *v, gpointer user) {
  (void)v;
  (void)user;
  if (!layout_done_at)
    layout_done_at = g_get_monotonic_time();
}

static gboolean built_with_sanitizers(void) {
#if defined(__SANITIZE_ADDRESS__)
  return TRUE;
#else
  return FALSE;
#endif
}

static void test_perf_2000_nodes(void **state) {
  (void)state;
  /* timings under the sanitizers mean nothing, and the 2,000-node layout
   * takes minutes there */
  if (g_getenv("WEIR_GUI_SKIP_PERF") || built_with_sanitizers())
    skip();
  g_autofree char *path = tmp_path("chain.json");
  g_autofree char *text = chain_json(500);
  assert_true(g_file_set_contents(path, text, -1, NULL));
  /* into this window: close the document first by opening in a new one */
  gint64 t0 = g_get_monotonic_time();
  activate("app.open-file", g_variant_new_string(path));
  GList *wins = gtk_application_get_windows(GTK_APPLICATION(fx.app));
  WeirWindow *main_w = fx.w;
  fx.w = WEIR_WINDOW(wins->data == main_w ? wins->next->data : wins->data);
  assert_true(wait_idle(120));
  double open_ms = (double)(g_get_monotonic_time() - t0) / 1e3;
  WeirGraphView *v = weir_window_get_graph_view(fx.w);
  guint nodes = weir_graph_view_n_drawn_nodes(v);
  assert_true(nodes >= 2000);
  double first_layout = weir_graph_view_last_layout_ms(v);

  guint st = 0;
  const WeirNode *exit = find_node(WEIR_NODE_MAP_EXIT, "op250", &st);
  assert_non_null(exit);
  select_node(st, exit->id);
  assert_true(weir_window_select_transform(fx.w, "map-fusion"));
  assert_true(wait_idle(120));
  assert_int_equal(g_list_model_get_n_items(weir_window_get_sites(fx.w)), 1);
  gint64 bytes = total_bytes();
  layout_done_at = 0;
  gulong h =
      g_signal_connect(v, "layout-done", G_CALLBACK(on_layout_done), NULL);
  t0 = g_get_monotonic_time();
  activate("win.apply", NULL);
  double apply_ms = weir_window_last_apply_ms(fx.w);
  /* before any main-loop turn: the provisional picture of the new program
   * is there; drawing it once (as the next frame will) */
  assert_true(weir_graph_view_is_provisional(v));
  guint prov_nodes = weir_graph_view_n_drawn_nodes(v);
  assert_true(prov_nodes < nodes); /* fusion removed nodes */
  double prov_ms = weir_graph_view_last_provisional_ms(v);
  GtkSnapshot *snap = gtk_snapshot_new();
  GTK_WIDGET_GET_CLASS(GTK_WIDGET(v))->snapshot(GTK_WIDGET(v), snap);
  GskRenderNode *rn = gtk_snapshot_free_to_node(snap);
  g_clear_pointer(&rn, gsk_render_node_unref);
  double prov_draw_ms = weir_graph_view_last_draw_ms(v);
  double prov_shown_ms = (double)(g_get_monotonic_time() - t0) / 1e3;
  assert_true(wait_idle(300));
  assert_false(weir_graph_view_is_provisional(v));
  assert_int_equal(weir_graph_view_n_drawn_nodes(v), prov_nodes);
  double total_ms = (double)(g_get_monotonic_time() - t0) / 1e3;
  g_signal_handler_disconnect(v, h);
  assert_true(layout_done_at > 0);
  double redrawn_ms = (double)(layout_done_at - t0) / 1e3;
  double layout_ms = weir_graph_view_last_layout_ms(v);
  double dot_ms = weir_graph_view_last_dot_ms(v);
  double draw_ms = weir_graph_view_last_draw_ms(v);
  assert_true(total_bytes() < bytes);
  printf("perf: %u nodes drawn; open %.0f ms (first layout %.0f ms)\n", nodes,
         open_ms, first_layout);
  printf("perf: apply map-fusion (session, analysis, panels) %.1f ms; "
         "layout %.1f ms (dot %.1f ms); draw %.1f ms; apply until the new "
         "picture %.1f ms; until the panels are refilled %.1f ms\n",
         apply_ms, layout_ms, dot_ms, draw_ms, redrawn_ms, total_ms);
  printf("perf: provisional picture %u nodes: built in %.1f ms, drawn in "
         "%.1f ms; apply until it is drawn %.1f ms\n",
         prov_nodes, prov_ms, prov_draw_ms, prov_shown_ms);
  /* generous bound on a shared machine; the figures are the point */
  assert_true(apply_ms < 10000);
  gtk_window_destroy(GTK_WINDOW(fx.w));
  fx.w = main_w;
  iterate();
}

/* Unsaved changes: closing asks Save / Discard / Cancel. */
static WeirWindow *other_window(WeirWindow *than) {
  for (GList *l = gtk_application_get_windows(GTK_APPLICATION(fx.app)); l;
       l = l->next)
    if (WEIR_IS_WINDOW(l->data) && l->data != than)
      return l->data;
  return NULL;
}

static guint n_windows(void) {
  guint n = 0;
  for (GList *l = gtk_application_get_windows(GTK_APPLICATION(fx.app)); l;
       l = l->next)
    n += WEIR_IS_WINDOW(l->data);
  return n;
}

static WeirWindow *open_second(const char *path) {
  activate("app.open-file", g_variant_new_string(path));
  WeirWindow *o = other_window(fx.w);
  assert_non_null(o);
  assert_false(weir_window_is_empty(o));
  assert_false(weir_window_is_dirty(o));
  return o;
}

/* Optimize -O2 (win.optimize): the default pipeline on a fresh resnet in a
 * second window, every application a step of the history panel. */
static void test_optimize(void **state) {
  (void)state;
  fx.w = fx.main;
  WeirWindow *o = open_second(WEIR_SRCDIR "/samples/models/resnet.onnx");
  g_object_add_weak_pointer(G_OBJECT(o), (gpointer *)&o);
  gtk_window_set_default_size(GTK_WINDOW(o), 1280, 800);
  fx.w = o;
  assert_true(wait_idle(60));
  activate("win.optimize", g_variant_new_uint32(2));
  assert_true(wait_idle(120));
  WeirSession *s = weir_window_get_session(o);
  /* as many steps as the pipeline applies (tests/core/test-pipeline.c) */
  g_autoptr(WeirGraph) g = weir_graph_copy(weir_session_original(s));
  g_autoptr(WeirRecipeReport) r = weir_recipe_report_new();
  assert_true(weir_pipeline_apply(g, 2, NULL, r, NULL));
  guint n = 0;
  for (guint i = 0; i < r->steps->len; i++)
    n += ((WeirRecipeStepReport *)g_ptr_array_index(r->steps, i))->applied->len;
  assert_true(n > 20);
  assert_int_equal(weir_session_n_steps(s), n);
  assert_int_equal(weir_session_cursor(s), n);
  g_autofree char *json = weir_graph_to_json(g);
  assert_string_equal(weir_session_current_json(s), json);
  GListModel *history = weir_window_get_history(o);
  assert_int_equal(g_list_model_get_n_items(history), n + 1);
  assert_true(model_has_text(history, "batchnorm-folding"));
  assert_true(model_has_text(history, "epilogue-fusion"));
  assert_non_null(strstr(weir_window_get_message(o), "Optimized at -O2"));
  assert_true(weir_window_is_dirty(o));
  weir_window_show_page(o, 1); /* the history panel */
  shoot("workbench-optimize.png");
  /* close it without saving */
  gtk_window_close(GTK_WINDOW(o));
  iterate();
  weir_window_confirm_respond(o, WEIR_CONFIRM_DISCARD);
  iterate();
  assert_null(o);
  fx.w = fx.main;
}

static void test_close_confirm(void **state) {
  (void)state;
  const char *resnet = WEIR_SRCDIR "/samples/models/resnet.onnx";
  const char *mlp = WEIR_SRCDIR "/samples/models/mlp.onnx";
  /* only the main window (an earlier failure may have left another) */
  fx.w = fx.main;
  WeirWindow *stray;
  while ((stray = other_window(fx.w))) {
    gtk_window_destroy(GTK_WINDOW(stray));
    iterate();
  }
  assert_int_equal(n_windows(), 1);

  /* no changes: closes at once */
  WeirWindow *o = open_second(resnet);
  g_object_add_weak_pointer(G_OBJECT(o), (gpointer *)&o);
  gtk_window_close(GTK_WINDOW(o));
  iterate();
  assert_null(o);
  assert_int_equal(n_windows(), 1);

  /* changes: the dialog, the window stays; Cancel keeps it, twice */
  o = open_second(resnet);
  g_object_add_weak_pointer(G_OBJECT(o), (gpointer *)&o);
  assert_true(weir_window_bookmark(o, "changed"));
  assert_true(weir_window_is_dirty(o));
  gtk_window_close(GTK_WINDOW(o));
  iterate();
  assert_non_null(o);
  GtkWindow *d = weir_window_get_confirm_dialog(o);
  assert_non_null(d);
  assert_true(gtk_widget_get_visible(GTK_WIDGET(d)));
  assert_true(gtk_window_get_transient_for(d) == GTK_WINDOW(o));
  assert_true(gtk_window_get_modal(d));
  /* a second close while it is up: the same dialog */
  gtk_window_close(GTK_WINDOW(o));
  iterate();
  assert_true(weir_window_get_confirm_dialog(o) == d);
  g_object_add_weak_pointer(G_OBJECT(d), (gpointer *)&d);
  weir_window_confirm_respond(o, WEIR_CONFIRM_CANCEL);
  iterate();
  assert_null(d);
  assert_non_null(o);
  assert_null(weir_window_get_confirm_dialog(o));
  assert_true(weir_window_is_dirty(o));
  assert_int_equal(n_windows(), 2);
  /* the dialog's own close button is Cancel too */
  gtk_window_close(GTK_WINDOW(o));
  iterate();
  d = weir_window_get_confirm_dialog(o);
  assert_non_null(d);
  gtk_window_close(d);
  iterate();
  assert_null(weir_window_get_confirm_dialog(o));
  assert_non_null(o);
  /* and so is Escape (its shortcut activates window.close) */
  gtk_window_close(GTK_WINDOW(o));
  iterate();
  d = weir_window_get_confirm_dialog(o);
  assert_non_null(d);
  assert_true(gtk_widget_activate_action(GTK_WIDGET(d), "window.close", NULL));
  iterate();
  assert_null(weir_window_get_confirm_dialog(o));
  assert_non_null(o);

  /* opening another file over the changes asks too: Cancel keeps the
   * session, Discard opens the file */
  WeirSession *before = weir_window_get_session(o);
  assert_false(weir_window_open_path(o, mlp));
  iterate();
  assert_non_null(weir_window_get_confirm_dialog(o));
  weir_window_confirm_respond(o, WEIR_CONFIRM_CANCEL);
  assert_true(weir_window_get_session(o) == before);
  assert_true(weir_window_is_dirty(o));
  assert_false(weir_window_open_path(o, mlp));
  weir_window_confirm_respond(o, WEIR_CONFIRM_DISCARD);
  iterate();
  assert_non_null(o);
  assert_non_null(strstr(gtk_window_get_title(GTK_WINDOW(o)), "mlp.onnx"));
  assert_false(weir_window_is_dirty(o));

  /* Quit asks every window with changes; Cancel keeps one, Discard
   * closes the other */
  assert_true(weir_window_bookmark(o, "changed again"));
  assert_true(weir_window_bookmark(fx.w, "before quit"));
  activate("app.quit", NULL);
  assert_non_null(o);
  assert_non_null(weir_window_get_confirm_dialog(o));
  assert_non_null(weir_window_get_confirm_dialog(fx.w));
  weir_window_confirm_respond(fx.w, WEIR_CONFIRM_CANCEL);
  assert_int_equal(n_windows(), 2);
  weir_window_confirm_respond(o, WEIR_CONFIRM_DISCARD);
  iterate();
  assert_null(o);
  assert_int_equal(n_windows(), 1);

  /* Save writes the workspace, then closes (the main window, saved to
   * resnet.weir by test_export) */
  WeirWindow *w = fx.w;
  const char *ws = weir_window_get_workspace_path(w);
  assert_non_null(ws);
  g_autofree char *ws_path = g_strdup(ws);
  assert_true(weir_window_bookmark(w, "saved on close"));
  assert_true(weir_window_is_dirty(w));
  guint cursor = weir_session_cursor(weir_window_get_session(w));
  g_object_add_weak_pointer(G_OBJECT(w), (gpointer *)&w);
  gtk_window_close(GTK_WINDOW(w));
  iterate();
  assert_non_null(w);
  assert_non_null(weir_window_get_confirm_dialog(w));
  weir_window_confirm_respond(w, WEIR_CONFIRM_SAVE);
  iterate();
  assert_null(w);
  fx.w = fx.main = NULL;
  assert_int_equal(n_windows(), 0);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirSession) back = weir_workspace_open(ws_path, &err);
  assert_non_null(back);
  guint step = 0;
  assert_true(weir_session_find_bookmark(back, "saved on close", &step));
  assert_int_equal(step, cursor);
}

/* ------------------------------------------------------------------ main */

static void rm_rf(const char *path) {
  if (g_file_test(path, G_FILE_TEST_IS_DIR) &&
      !g_file_test(path, G_FILE_TEST_IS_SYMLINK)) {
    g_autoptr(GDir) d = g_dir_open(path, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
      g_autofree char *p = g_build_filename(path, name, NULL);
      rm_rf(p);
    }
    g_rmdir(path);
  } else {
    g_unlink(path);
  }
}

int main(void) {
  /* private user directories: recent files, compile cache */
  g_autofree char *tmp = g_dir_make_tmp("weir-gui-test-XXXXXX", NULL);
  g_autofree char *data = g_build_filename(tmp, "data", NULL);
  g_autofree char *cache = g_build_filename(tmp, "cache", NULL);
  g_setenv("XDG_DATA_HOME", data, TRUE);
  g_setenv("XDG_CACHE_HOME", cache, TRUE);
  g_setenv("WEIR_CACHE_DIR", cache, TRUE);
  g_setenv("GSETTINGS_BACKEND", "memory", TRUE);
  /* quick compiles: the tests check results and plumbing, not speed */
  if (!gtk_init_check()) {
    fprintf(stderr, "no display: skipped\n");
    rm_rf(tmp);
    return 77;
  }
  fx.tmp = tmp;
  fx.app = weir_application_new();
  g_autoptr(GError) err = NULL;
  if (!g_application_register(G_APPLICATION(fx.app), NULL, &err)) {
    fprintf(stderr, "register: %s\n", err->message);
    return 1;
  }
  g_application_activate(G_APPLICATION(fx.app));
  iterate();
  fx.w =
      WEIR_WINDOW(gtk_application_get_active_window(GTK_APPLICATION(fx.app)));
  if (!fx.w) {
    fprintf(stderr, "no window\n");
    return 1;
  }
  fx.main = fx.w;
  gtk_window_set_default_size(GTK_WINDOW(fx.w), 1280, 800);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_open_resnet),
      cmocka_unit_test(test_expand_all),
      cmocka_unit_test(test_select_node),
      cmocka_unit_test(test_fusion),
      cmocka_unit_test(test_transient_reuse),
      cmocka_unit_test(test_undo_redo),
      cmocka_unit_test(test_code_view),
      cmocka_unit_test(test_run_and_bench),
      cmocka_unit_test(test_run_with_files),
      cmocka_unit_test(test_export),
      cmocka_unit_test(test_overlay_and_shots),
      cmocka_unit_test(test_perf_2000_nodes),
      cmocka_unit_test(test_optimize),
      cmocka_unit_test(test_close_confirm),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  GList *wins =
      g_list_copy(gtk_application_get_windows(GTK_APPLICATION(fx.app)));
  for (GList *l = wins; l; l = l->next)
    gtk_window_destroy(GTK_WINDOW(l->data));
  g_list_free(wins);
  iterate();
  g_clear_object(&fx.app);
  rm_rf(tmp);
  return failed;
}
