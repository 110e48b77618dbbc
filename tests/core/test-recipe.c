/* test-recipe.c — recipes: parse errors with JSON paths, printing, site
 * selectors, picks, repeat, optional steps, all-or-nothing application,
 * determinism, recipes built through the library, and export of a
 * session's history that replays to the same program byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "testing-transforms.h"
#include "weir-expand.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-recipe.h"
#include "weir-transform.h"

static int setup(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  weir_transforms_init();
  if (!testing_transforms_register(&error))
    fail_msg("%s", error->message);
  return 0;
}

static WeirGraph *load_sample(const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_load(path, &error);
  if (!g)
    fail_msg("%s", error->message);
  return g;
}

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    if (!strstr((hay), (needle)))                                              \
      fail_msg("expected to find '%s' in:\n%s", (needle), (hay));              \
  } while (0)

/* A recipe from its steps' JSON (without the header). */
static WeirRecipe *recipe_of(const char *steps) {
  g_autofree char *text = g_strdup_printf(
      "{\"format\": \"weir-recipe\", \"version\": 1, \"steps\": [%s]}", steps);
  g_autoptr(GError) error = NULL;
  WeirRecipe *r = weir_recipe_parse(text, -1, "r.json", &error);
  if (!r)
    fail_msg("%s", error->message);
  return r;
}

/* --------------------------------------------------------------- parsing */

static void test_parse_errors(void **state) {
  (void)state;
  static const struct {
    const char *text, *message;
  } cases[] = {
      {"{", "r.json: line 1: not valid JSON"},
      {"{\"format\": \"weir-recipe\",\n \"version\": 1,\n \"steps\": [}",
       "r.json: line 3: not valid JSON"},
      {"[]", "r.json: top level: expected an object, found array"},
      {"{\"version\": 1, \"steps\": []}", "r.json: format: expected"},
      {"{\"format\": \"weir-ir\", \"version\": 1}", "is this a recipe?"},
      {"{\"format\": \"weir-recipe\", \"version\": 0, \"steps\": []}",
       "r.json: version: expected an integer >= 1"},
      {"{\"format\": \"weir-recipe\", \"version\": 2, \"steps\": []}",
       "r.json was written for recipe format version 2; this Weir reads up "
       "to 1"},
      {"{\"format\": \"weir-recipe\", \"version\": 1}",
       "r.json: steps: expected a list of steps"},
      {"{\"format\": \"weir-recipe\", \"version\": 1, \"steps\": [], "
       "\"extra\": 1}",
       "r.json: top level: unknown key 'extra'"},
      {"{\"format\": \"weir-recipe\", \"version\": 1, \"steps\": []} x",
       "r.json: line 1: text after the end of the recipe"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirRecipe) r =
        weir_recipe_parse(cases[i].text, -1, "r.json", &error);
    if (r)
      fail_msg("case %u parsed", i);
    assert_contains(error->message, cases[i].message);
  }

  static const struct {
    const char *steps, *message;
  } step_cases[] = {
      {"{}", "r.json: steps[0]: missing \"transform\""},
      {"{\"transform\": 3}",
       "r.json: steps[0].transform: expected a string, found int"},
      {"{\"transform\": \"a\"}, {\"transform\": \"b\", \"sight\": {}}",
       "r.json: steps[1]: unknown key 'sight'"},
      {"{\"transform\": \"a\", \"site\": []}",
       "r.json: steps[0].site: expected an object, found array"},
      {"{\"transform\": \"a\", \"site\": {\"index\": -1}}",
       "r.json: steps[0].site.index: expected an integer >= 0"},
      {"{\"transform\": \"a\", \"site\": {\"all\": false}}",
       "r.json: steps[0].site.all: expected true"},
      {"{\"transform\": \"a\", \"site\": {\"all\": true, \"first\": true}}",
       "r.json: steps[0].site: give at most one of"},
      {"{\"transform\": \"a\", \"site\": {\"nodes\": [3], \"node\": \"x\"}}",
       "\"nodes\" names one exact site"},
      {"{\"transform\": \"a\", \"site\": {\"nodes\": [0]}}",
       "r.json: steps[0].site.nodes[0]: expected an integer >= 1"},
      {"{\"transform\": \"a\", \"site\": {\"state\": 0}}",
       "r.json: steps[0].site.state: expected a state id"},
      {"{\"transform\": \"a\", \"site\": {\"labels\": [\"x\", 1]}}",
       "r.json: steps[0].site.labels[1]: expected a string, found int"},
      {"{\"transform\": \"a\", \"site\": {\"ndoe\": \"x\"}}",
       "r.json: steps[0].site: unknown key 'ndoe'"},
      {"{\"transform\": \"a\", \"params\": {\"tile\": {}}}",
       "r.json: steps[0].params.tile: expected a string, number, boolean or "
       "list of integers, found object"},
      {"{\"transform\": \"a\", \"params\": {\"tile\": [1, \"2\"]}}",
       "r.json: steps[0].params.tile: a list value holds integers only"},
      {"{\"transform\": \"a\", \"repeat\": \"forever\"}",
       "r.json: steps[0].repeat: expected \"until-no-match\""},
      {"{\"transform\": \"a\", \"repeat\": \"until-no-match\", "
       "\"max_iterations\": 0}",
       "r.json: steps[0].max_iterations: expected an integer >= 1"},
      {"{\"tier\": 5}", "r.json: steps[0].tier: expected a tier: 1, 2, 3 or 4"},
      {"{\"tier\": 1, \"transform\": \"a\"}",
       "r.json: steps[0]: give \"transform\" or \"tier\", not both"},
      {"{\"tier\": 1, \"params\": {\"tile\": 4}}",
       "r.json: steps[0].params: a \"tier\" step runs every transformation"},
      {"{\"transform\": \"a\", \"optional\": \"yes\"}",
       "r.json: steps[0].optional: expected true or false, found string"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(step_cases); i++) {
    g_autofree char *text = g_strdup_printf(
        "{\"format\": \"weir-recipe\", \"version\": 1, \"steps\": [%s]}",
        step_cases[i].steps);
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirRecipe) r = weir_recipe_parse(text, -1, "r.json", &error);
    if (r)
      fail_msg("step case %u parsed", i);
    assert_contains(error->message, step_cases[i].message);
  }
}

static void test_parse_and_print(void **state) {
  (void)state;
  g_autoptr(WeirRecipe) r = recipe_of(
      "{\"transform\": \"map-tiling\", \"site\": {\"node\": \"conv1*\", "
      "\"state\": \"main\"}, \"params\": {\"tile\": [32, 32], \"unroll\": 4, "
      "\"simd\": true, \"alpha\": 0.5}, \"repeat\": \"until-no-match\", "
      "\"max_iterations\": 7, \"optional\": true, \"comment\": \"why\"},"
      "{\"transform\": \"expand\", \"site\": {\"op\": \"Conv\", \"index\": 2}},"
      "{\"transform\": \"fuse\", \"site\": {\"labels\": [\"a\", \"b\"], "
      "\"first\": true}},"
      "{\"transform\": \"pass\", \"site\": {\"state\": 4, \"nodes\": [7, 9]}}");
  assert_int_equal(r->steps->len, 4);
  const WeirRecipeStep *s0 = g_ptr_array_index(r->steps, 0);
  assert_string_equal(s0->transform, "map-tiling");
  assert_string_equal(s0->node_glob, "conv1*");
  assert_string_equal(s0->state_glob, "main");
  assert_int_equal(s0->pick, WEIR_RECIPE_PICK_ALL);
  assert_string_equal(s0->params[0], "tile=32,32");
  assert_string_equal(s0->params[1], "unroll=4");
  assert_string_equal(s0->params[2], "simd=true");
  assert_string_equal(s0->params[3], "alpha=0.5");
  assert_null(s0->params[4]);
  assert_true(s0->repeat);
  assert_int_equal(s0->max_iterations, 7);
  assert_true(s0->optional);
  const WeirRecipeStep *s1 = g_ptr_array_index(r->steps, 1);
  assert_string_equal(s1->op, "Conv");
  assert_int_equal(s1->pick, WEIR_RECIPE_PICK_INDEX);
  assert_int_equal(s1->index, 2);
  assert_null(s1->params[0]);
  const WeirRecipeStep *s3 = g_ptr_array_index(r->steps, 3);
  assert_int_equal(s3->state_id, 4);
  assert_int_equal(s3->nodes->len, 2);

  /* Printing and parsing again is stable. */
  g_autofree char *text = weir_recipe_to_json(r);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirRecipe) again = weir_recipe_parse(text, -1, "x", &error);
  assert_non_null(again);
  g_autofree char *text2 = weir_recipe_to_json(again);
  assert_string_equal(text, text2);
  assert_contains(text, "\"format\": \"weir-recipe\"");
  assert_contains(text, "\"max_iterations\": 7");
}

/* -------------------------------------------------------------- applying */

/* Applies and returns the report; fails the test on error. */
static WeirRecipeReport *apply_ok(WeirGraph *g, const char *steps) {
  g_autoptr(WeirRecipe) r = recipe_of(steps);
  WeirRecipeReport *rep = weir_recipe_report_new();
  g_autoptr(GError) error = NULL;
  if (!weir_recipe_apply(g, r, NULL, rep, &error))
    fail_msg("%s", error->message);
  assert_true(rep->ok);
  return rep;
}

/* Applies expecting failure; the program must be unchanged. */
static char *apply_fails(WeirGraph *g, const char *steps) {
  g_autoptr(WeirRecipe) r = recipe_of(steps);
  g_autoptr(WeirRecipeReport) rep = weir_recipe_report_new();
  g_autoptr(GError) error = NULL;
  g_autofree char *before = weir_graph_to_json(g);
  if (weir_recipe_apply(g, r, NULL, rep, &error))
    fail_msg("applied: %s", steps);
  assert_false(rep->ok);
  g_autofree char *after = weir_graph_to_json(g);
  assert_string_equal(before, after);
  return g_strdup(error->message);
}

static WeirSchedule schedule_of(const WeirGraph *g, guint node) {
  return weir_graph_node(g, node, NULL)->map->schedule;
}

static void test_selectors(void **state) {
  (void)state;
  /* softmax: maps init 8, rowmax 13, expsum 17, normalize 22 (parallel). */
  g_autoptr(WeirGraph) g = load_sample("softmax.json");
  g_autoptr(WeirRecipeReport) r1 =
      apply_ok(g, "{\"transform\": \"test-schedule\", \"site\": {\"node\": "
                  "\"*m*\"}}");
  const WeirRecipeStepReport *sr = g_ptr_array_index(r1->steps, 0);
  assert_int_equal(sr->matched, 3);
  assert_int_equal(sr->applied->len, 3);
  assert_true(sr->validated);
  assert_int_equal(schedule_of(g, 8), WEIR_SCHEDULE_PARALLEL);
  assert_int_equal(schedule_of(g, 13), WEIR_SCHEDULE_SIMD);
  assert_int_equal(schedule_of(g, 17), WEIR_SCHEDULE_SIMD);
  assert_int_equal(schedule_of(g, 22), WEIR_SCHEDULE_SIMD);

  /* first: the first legal candidate (init; then, init being simd, the
   * next one that is not). */
  g_autoptr(WeirGraph) g2 = load_sample("softmax.json");
  g_autoptr(WeirRecipeReport) r2 = apply_ok(
      g2, "{\"transform\": \"test-schedule\", \"site\": {\"first\": true}},"
          "{\"transform\": \"test-schedule\", \"site\": {\"first\": true}},"
          "{\"transform\": \"test-schedule\", \"site\": {\"first\": true}, "
          "\"params\": {\"schedule\": \"sequential\"}}");
  assert_int_equal(schedule_of(g2, 8), WEIR_SCHEDULE_SEQUENTIAL);
  assert_int_equal(schedule_of(g2, 13), WEIR_SCHEDULE_SIMD);
  assert_int_equal(schedule_of(g2, 17), WEIR_SCHEDULE_PARALLEL);
  sr = g_ptr_array_index(r2->steps, 1);
  assert_int_equal(sr->applied->len, 1);
  assert_contains((char *)g_ptr_array_index(sr->applied, 0), "rowmax");
  assert_int_equal(sr->skipped->len, 1);
  assert_contains((char *)g_ptr_array_index(sr->skipped, 0),
                  "map 'init' already has schedule simd");

  /* index, labels, state (id and glob), nodes. */
  g_autoptr(WeirGraph) g3 = load_sample("softmax.json");
  g_autoptr(WeirRecipeReport) r3 = apply_ok(
      g3, "{\"transform\": \"test-schedule\", \"site\": {\"index\": 2}},"
          "{\"transform\": \"test-schedule\", \"site\": {\"labels\": "
          "[\"normalize\"]}, \"params\": {\"schedule\": \"sequential\"}}");
  assert_int_equal(schedule_of(g3, 8), WEIR_SCHEDULE_PARALLEL);
  assert_int_equal(schedule_of(g3, 17), WEIR_SCHEDULE_SIMD);
  assert_int_equal(schedule_of(g3, 22), WEIR_SCHEDULE_SEQUENTIAL);

  g_autoptr(WeirGraph) m = load_sample("matmul.json");
  g_autoptr(WeirRecipeReport) r4 = apply_ok(
      m, "{\"transform\": \"test-schedule\", \"site\": {\"state\": "
         "\"mul*\"}},"
         "{\"transform\": \"test-tile\", \"site\": {\"state\": 4}, "
         "\"params\": {\"tile\": \"8,8\"}},"
         "{\"transform\": \"test-schedule\", \"site\": {\"nodes\": [5]}, "
         "\"params\": {\"schedule\": \"sequential\"}}");
  assert_int_equal(schedule_of(m, 15), WEIR_SCHEDULE_SIMD);
  assert_int_equal(schedule_of(m, 5), WEIR_SCHEDULE_SEQUENTIAL);
  const WeirNode *init = weir_graph_node(m, 5, NULL);
  assert_int_equal(init->map->tile->len, 2);
  assert_int_equal(g_array_index(init->map->tile, gint64, 1), 8);
  sr = g_ptr_array_index(r4->steps, 1);
  assert_int_equal(sr->matched, 1);

  /* op: library nodes of the relu chain. */
  g_autoptr(WeirGraph) rc = testing_relu_chain();
  g_autoptr(WeirRecipeReport) r5 =
      apply_ok(rc, "{\"transform\": \"test-expand\", \"site\": {\"op\": "
                   "\"Relu\", \"node\": \"relu2\"}}");
  assert_int_equal(((WeirRecipeStepReport *)r5->steps->pdata[0])->matched, 1);
  guint libs = 0;
  const WeirState *s = g_ptr_array_index(rc->states, 0);
  for (guint i = 0; i < s->nodes->len; i++)
    libs += ((WeirNode *)s->nodes->pdata[i])->kind == WEIR_NODE_LIBRARY;
  assert_int_equal(libs, 1);
  g_autofree char *e =
      apply_fails(rc, "{\"transform\": \"test-expand\", \"site\": {\"op\": "
                      "\"Conv\"}}");
  assert_contains(e, "matched nothing");
}

static void test_failures(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("softmax.json");
  g_autofree char *e1 = apply_fails(
      g, "{\"transform\": \"test-schedule\", \"site\": {\"node\": \"init\"}},"
         "{\"transform\": \"test-schedule\", \"site\": {\"node\": "
         "\"nothing*\"}}");
  assert_string_equal(e1, "r.json: steps[1] (test-schedule, site "
                          "{\"node\":\"nothing*\"}): matched nothing");
  g_autofree char *e2 =
      apply_fails(g, "{\"transform\": \"test-schedule\", \"params\": "
                     "{\"schedule\": \"parallel\"}}");
  assert_contains(e2, "steps[0] (test-schedule, site {}): 4 sites matched, "
                      "none can be applied: ");
  assert_contains(e2, "map 'init' already has schedule parallel; ");
  assert_contains(e2, "map 'normalize' already has schedule parallel");
  g_autofree char *e3 =
      apply_fails(g, "{\"transform\": \"test-schedule\", \"site\": "
                     "{\"index\": 4}}");
  assert_contains(e3, "index 4 is out of range: the selector matched 4 sites");
  g_autofree char *e4 = apply_fails(
      g, "{\"transform\": \"test-schedule\", \"site\": {\"index\": 0}, "
         "\"params\": {\"schedule\": \"parallel\"}}");
  assert_contains(e4, "cannot be applied at state 6: node 8");
  assert_contains(e4, "already has schedule parallel");
  g_autofree char *e5 = apply_fails(g, "{\"transform\": \"no-such\"}");
  assert_contains(e5, "unknown transformation 'no-such'");
  g_autofree char *e6 = apply_fails(
      g, "{\"transform\": \"test-schedule\", \"params\": {\"speed\": 3}}");
  assert_contains(e6, "speed");
  g_autofree char *e7 = apply_fails(g, "{\"transform\": \"test-fail\"}");
  assert_contains(e7, "deliberate failure");
  g_autofree char *e8 = apply_fails(
      g, "{\"transform\": \"test-schedule\", \"site\": {\"nodes\": [999]}}");
  assert_contains(e8, "matched nothing");
  /* A step that keeps applying hits the cap. */
  g_autofree char *e9 = apply_fails(
      g, "{\"transform\": \"test-tile\", \"site\": {\"node\": \"init\"}, "
         "\"repeat\": \"until-no-match\", \"max_iterations\": 3}");
  assert_contains(e9, "no fixpoint after 3 iterations");
}

static void test_optional_and_partial(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("softmax.json");
  /* "all" skips the illegal candidates and applies the rest; optional
   * failed steps leave no trace and the run goes on. */
  g_autoptr(WeirRecipeReport) rep = apply_ok(
      g, "{\"transform\": \"test-schedule\", \"site\": {\"node\": \"init\"}},"
         "{\"transform\": \"test-fail\", \"optional\": true},"
         "{\"transform\": \"test-schedule\", \"site\": {\"node\": \"zzz\"}, "
         "\"optional\": true},"
         "{\"transform\": \"test-schedule\"}");
  assert_int_equal(rep->steps->len, 4);
  const WeirRecipeStepReport *s1 = g_ptr_array_index(rep->steps, 1);
  assert_false(s1->ok);
  assert_contains(s1->error, "deliberate failure");
  assert_true(s1->validated);
  const WeirRecipeStepReport *s2 = g_ptr_array_index(rep->steps, 2);
  assert_false(s2->ok);
  assert_string_equal(s2->error, "matched nothing");
  const WeirRecipeStepReport *s3 = g_ptr_array_index(rep->steps, 3);
  assert_true(s3->ok);
  assert_int_equal(s3->matched, 4);
  assert_int_equal(s3->applied->len, 3);
  assert_int_equal(s3->skipped->len, 1);
  assert_contains((char *)g_ptr_array_index(s3->skipped, 0),
                  "map 'init' already has schedule simd");
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++)
      assert_string_not_equal(((WeirNode *)s->nodes->pdata[k])->label,
                              "clobbered");
  }
  g_autofree char *text = weir_recipe_report_to_text(rep);
  assert_contains(text, "step 2  test-fail  site {}");
  assert_contains(text, "skipped (optional step failed): 0 matched");
  assert_contains(text, "test-fail: deliberate failure");
  assert_contains(text, "4 matched, 3 applied");
  assert_contains(text, "total: ok");
  /* the bytes are the logical volume, and say so (issue 15) */
  assert_contains(text, "\n  logical volume ");
  assert_null(strstr(text, "bytes moved"));
}

static void test_repeat(void **state) {
  (void)state;
  g_autoptr(WeirGraph) a = testing_relu_chain();
  g_autoptr(WeirRecipeReport) ra =
      apply_ok(a, "{\"transform\": \"test-expand\", \"site\": {\"first\": "
                  "true}, \"repeat\": \"until-no-match\"}");
  const WeirRecipeStepReport *sr = g_ptr_array_index(ra->steps, 0);
  assert_int_equal(sr->iterations, 3);
  assert_int_equal(sr->applied->len, 2);
  g_autoptr(WeirGraph) b = testing_relu_chain();
  g_autoptr(WeirRecipeReport) rb =
      apply_ok(b, "{\"transform\": \"test-expand\", \"repeat\": "
                  "\"until-no-match\"}");
  sr = g_ptr_array_index(rb->steps, 0);
  assert_int_equal(sr->iterations, 2);
  assert_int_equal(sr->applied->len, 2);
  /* Both ways give the same program here. */
  g_autofree char *ja = weir_graph_to_json(a);
  g_autofree char *jb = weir_graph_to_json(b);
  assert_string_equal(ja, jb);
}

static void test_determinism(void **state) {
  (void)state;
  static const char *const samples[] = {"vector_add.json", "matmul.json",
                                        "softmax.json", "loop.json"};
  const char *steps =
      "{\"transform\": \"test-schedule\", \"site\": {\"index\": 0}, "
      "\"params\": {\"schedule\": \"sequential\"}},"
      "{\"transform\": \"test-tile\", \"site\": {\"first\": true}, "
      "\"params\": {\"tile\": 16}, \"optional\": true},"
      "{\"transform\": \"test-schedule\", \"optional\": true}";
  for (guint i = 0; i < G_N_ELEMENTS(samples); i++) {
    g_autoptr(WeirGraph) x = load_sample(samples[i]);
    g_autoptr(WeirGraph) y = load_sample(samples[i]);
    g_autoptr(WeirRecipeReport) rx = apply_ok(x, steps);
    g_autoptr(WeirRecipeReport) ry = apply_ok(y, steps);
    g_autofree char *jx = weir_graph_to_json(x);
    g_autofree char *jy = weir_graph_to_json(y);
    assert_string_equal(jx, jy);
    g_autoptr(WeirGraph) orig = load_sample(samples[i]);
    g_autofree char *jo = weir_graph_to_json(orig);
    assert_string_not_equal(jx, jo);
  }
}

/* "tier": N runs every transformation of the tier with the selector. */
static void test_tier_steps(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = load_sample("softmax.json");
  g_autoptr(WeirRecipeReport) rep =
      apply_ok(g, "{\"tier\": 1, \"site\": {\"node\": \"init\"}},"
                  "{\"tier\": 4, \"optional\": true}");
  const WeirRecipeStepReport *s0 = g_ptr_array_index(rep->steps, 0);
  assert_string_equal(s0->transform, "tier 1");
  /* test-schedule and test-tile apply at init (built-in tier-1
   * transformations may apply there too: vectorize does). */
  assert_true(s0->applied->len >= 2);
  assert_int_equal(schedule_of(g, 8), WEIR_SCHEDULE_SIMD);
  const WeirNode *init = weir_graph_node(g, 8, NULL);
  assert_int_equal(init->map->tile->len, 1);
  assert_int_equal(g_array_index(init->map->tile, gint64, 0), 32);
  const WeirRecipeStepReport *s1 = g_ptr_array_index(rep->steps, 1);
  assert_false(s1->ok);
  assert_contains(s1->error, "deliberate failure");
  g_autoptr(WeirRecipe) r = recipe_of("{\"tier\": 2, \"optional\": true}");
  g_autofree char *text = weir_recipe_to_json(r);
  assert_contains(text, "\"tier\": 2");
  g_autofree char *e = apply_fails(g, "{\"tier\": 1, \"site\": {\"node\": "
                                      "\"none\"}}");
  assert_contains(e, "steps[0] (tier 1, site {\"node\":\"none\"}): matched "
                     "nothing");
}

/* ---------------------------------------------------------------- export */

/* softmax with two maps labelled "init": label selectors are ambiguous. */
static WeirGraph *ambiguous_softmax(void) {
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "softmax.json", NULL);
  g_autofree char *text = NULL;
  assert_true(g_file_get_contents(path, &text, NULL, NULL));
  g_auto(GStrv) parts = g_strsplit(text, "\"label\": \"rowmax\"", -1);
  g_autofree char *renamed = g_strjoinv("\"label\": \"init\"", parts);
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_from_json(renamed, -1, "renamed", &error);
  if (!g)
    fail_msg("%s", error->message);
  return g;
}

static void export_and_replay(WeirSession *s) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirRecipe) r = weir_session_export_recipe(s, &error);
  if (!r)
    fail_msg("%s", error->message);
  assert_int_equal(r->steps->len, weir_session_cursor(s));
  /* Through its text, as a user would keep it. */
  g_autofree char *text = weir_recipe_to_json(r);
  g_autoptr(WeirRecipe) back = weir_recipe_parse(text, -1, "exported", &error);
  if (!back)
    fail_msg("%s\n%s", error->message, text);
  g_autoptr(WeirGraph) g = weir_graph_from_json(weir_session_original_json(s),
                                                -1, "original", &error);
  if (!weir_recipe_apply(g, back, NULL, NULL, &error))
    fail_msg("%s\n%s", error->message, text);
  g_autofree char *json = weir_graph_to_json(g);
  assert_string_equal(json, weir_session_current_json(s));
  /* Also applied to a fresh session: the same history length. */
  g_autoptr(WeirGraph) orig = weir_graph_from_json(
      weir_session_original_json(s), -1, "original", &error);
  g_autoptr(WeirSession) s2 = weir_session_new(orig, NULL, NULL, &error);
  if (!weir_recipe_apply_session(s2, back, NULL, &error))
    fail_msg("%s", error->message);
  assert_int_equal(weir_session_n_steps(s2), weir_session_cursor(s));
  assert_string_equal(weir_session_current_json(s2),
                      weir_session_current_json(s));
}

/* A recipe built through the library (weir_recipe_new, _add_step: what the
 * workbench's "Apply to All Sites" uses) is the recipe that its JSON
 * says: it prints with every parameter explicit, parses back to the same
 * text, and applies as the parsed one does; bad steps are refused with
 * the step's path and leave the recipe unchanged. */
static void test_build(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirRecipe) r = weir_recipe_new("built");
  const char *const sequential[] = {"schedule=sequential", NULL};
  assert_true(weir_recipe_add_step(r, "test-schedule", sequential, &error));
  assert_true(weir_recipe_add_step(r, "test-tile", NULL, &error));
  assert_int_equal(r->steps->len, 2);
  const WeirRecipeStep *s0 = g_ptr_array_index(r->steps, 0);
  assert_string_equal(s0->path, "steps[0]");
  assert_string_equal(s0->transform, "test-schedule");
  assert_int_equal(s0->pick, WEIR_RECIPE_PICK_ALL);
  assert_string_equal(s0->site_text, "{}");
  assert_string_equal(s0->params[0], "schedule=sequential");
  assert_null(s0->params[1]);
  const WeirRecipeStep *s1 = g_ptr_array_index(r->steps, 1);
  assert_string_equal(s1->params[0], "tile=32"); /* the default, explicit */

  g_autofree char *text = weir_recipe_to_json(r);
  assert_contains(text, "\"transform\": \"test-schedule\"");
  assert_contains(text, "\"schedule\": \"sequential\"");
  assert_contains(text, "\"tile\": \"32\""); /* a list of integers */
  g_autoptr(WeirRecipe) back = weir_recipe_parse(text, -1, "back", &error);
  if (!back)
    fail_msg("%s", error->message);
  g_autofree char *again = weir_recipe_to_json(back);
  assert_string_equal(text, again);

  /* Applied, it does what the same step written as JSON does. */
  g_autoptr(WeirRecipe) one = weir_recipe_new("built");
  assert_true(weir_recipe_add_step(one, "test-schedule", sequential, &error));
  g_autoptr(WeirGraph) a = load_sample("softmax.json");
  g_autoptr(WeirGraph) b = load_sample("softmax.json");
  g_autoptr(WeirRecipeReport) ra = weir_recipe_report_new();
  if (!weir_recipe_apply(a, one, NULL, ra, &error))
    fail_msg("%s", error->message);
  g_autoptr(WeirRecipeReport) rb =
      apply_ok(b, "{\"transform\": \"test-schedule\", \"params\": "
                  "{\"schedule\": \"sequential\"}}");
  const WeirRecipeStepReport *sa = g_ptr_array_index(ra->steps, 0);
  const WeirRecipeStepReport *sb = g_ptr_array_index(rb->steps, 0);
  assert_int_equal(sa->matched, 4);
  assert_int_equal(sa->applied->len, sb->applied->len);
  assert_true(sa->applied->len > 0);
  g_autofree char *ja = weir_graph_to_json(a);
  g_autofree char *jb = weir_graph_to_json(b);
  assert_string_equal(ja, jb);
  for (guint i = 0; i < sa->applied->len; i++)
    assert_string_equal(g_ptr_array_index(sa->applied, i),
                        g_ptr_array_index(sb->applied, i));

  /* Refused steps. */
  assert_false(weir_recipe_add_step(r, "no-such", NULL, &error));
  assert_string_equal(error->message, "built: steps[2].transform: unknown "
                                      "transformation 'no-such'");
  g_clear_error(&error);
  const char *const bad[] = {"schedule=sideways", NULL};
  assert_false(weir_recipe_add_step(r, "test-schedule", bad, &error));
  assert_contains(error->message, "built: steps[2].params: ");
  assert_contains(error->message, "sideways");
  g_clear_error(&error);
  const char *const unknown[] = {"speed=3", NULL};
  assert_false(weir_recipe_add_step(r, "test-schedule", unknown, &error));
  assert_contains(error->message, "speed");
  assert_int_equal(r->steps->len, 2);
}

static void test_export_replay(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = ambiguous_softmax();
  g_autoptr(WeirSession) s = weir_session_new(g, "softmax", NULL, &error);
  assert_non_null(s);
  /* rowmax (13), now labelled "init" like map 8. */
  WeirSite m13 = {.state = 6, .n_nodes = 1, .nodes = {13}};
  WeirSite m8 = {.state = 6, .n_nodes = 1, .nodes = {8}};
  WeirSite m22 = {.state = 6, .n_nodes = 1, .nodes = {22}};
  const char *seq[] = {"schedule=sequential", NULL};
  const char *tile[] = {"tile=4,8", NULL};
  const char *tile1[] = {"tile=64", NULL};
  assert_non_null(weir_session_apply(s, "test-schedule", &m13, NULL, &error));
  assert_non_null(weir_session_apply(s, "test-tile", &m13, tile, &error));
  /* test-tile's matches leave out sequential maps: exported by id. */
  assert_non_null(weir_session_apply(s, "test-schedule", &m8, seq, &error));
  assert_non_null(weir_session_apply(s, "test-tile", &m8, tile1, &error));
  assert_non_null(weir_session_apply(s, "test-schedule", &m22, seq, &error));
  /* A step in the redo tail is not exported. */
  assert_non_null(weir_session_apply(s, "test-tile", &m22, tile, &error));
  assert_true(weir_session_undo(s, &error));

  g_autoptr(WeirRecipe) r = weir_session_export_recipe(s, &error);
  assert_non_null(r);
  assert_int_equal(r->steps->len, 5);
  const WeirRecipeStep *s0 = g_ptr_array_index(r->steps, 0);
  assert_string_equal(s0->site_text, "{\"labels\":[\"init\"],\"index\":1}");
  assert_string_equal(s0->params_json, "{\"schedule\":\"simd\"}");
  const WeirRecipeStep *s3 = g_ptr_array_index(r->steps, 3);
  assert_string_equal(s3->site_text, "{\"state\":6,\"nodes\":[8]}");
  const WeirRecipeStep *s4 = g_ptr_array_index(r->steps, 4);
  assert_string_equal(s4->site_text, "{\"labels\":[\"normalize\"]}");
  export_and_replay(s);

  /* Structural steps and a whole-program-free history. */
  g_autoptr(WeirGraph) rc = testing_relu_chain();
  g_autoptr(WeirSession) s2 = weir_session_new(rc, NULL, NULL, &error);
  g_autoptr(GArray) libs =
      weir_transform_sites(weir_transform_lookup("test-expand"), rc);
  WeirSite r2 = g_array_index(libs, WeirSite, 1);
  assert_non_null(weir_session_apply(s2, "test-expand", &r2, NULL, &error));
  g_autoptr(GArray) maps = weir_transform_sites(
      weir_transform_lookup("test-schedule"), weir_session_current(s2));
  assert_true(maps->len > 0);
  assert_non_null(weir_session_apply(
      s2, "test-schedule", &g_array_index(maps, WeirSite, 0), NULL, &error));
  r2 = g_array_index(libs, WeirSite, 0);
  assert_non_null(weir_session_apply(s2, "test-expand", &r2, NULL, &error));
  export_and_replay(s2);

  /* An empty history exports an empty recipe. */
  g_autoptr(WeirSession) empty = weir_session_new(rc, NULL, NULL, &error);
  export_and_replay(empty);
}

static void test_session_apply_rollback(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = load_sample("softmax.json");
  g_autoptr(WeirSession) s = weir_session_new(g, NULL, NULL, &error);
  g_autoptr(WeirRecipe) r = recipe_of(
      "{\"transform\": \"test-schedule\", \"site\": {\"node\": \"init\"}},"
      "{\"transform\": \"test-tile\", \"site\": {\"node\": \"*m*\"}, "
      "\"params\": {\"tile\": \"2,2\"}},"
      "{\"transform\": \"test-tile\", \"site\": {\"node\": \"*\"}, "
      "\"params\": {\"tile\": \"2,2\"}, \"repeat\": \"until-no-match\", "
      "\"max_iterations\": 2}");
  g_autoptr(WeirRecipeReport) rep = weir_recipe_report_new();
  assert_false(weir_recipe_apply_session(s, r, rep, &error));
  assert_contains(error->message, "steps[2]");
  assert_contains(error->message, "no fixpoint");
  /* Steps 1 and 2 of the recipe made 1 + 3 history steps; the failed third
   * one is rolled back (its applications wait in the redo tail). */
  assert_int_equal(weir_session_cursor(s), 4);
  assert_true(weir_session_n_steps(s) > 4);
  assert_int_equal(rep->steps->len, 3);
}

/* ---------------------------------------------------------------- models */

/* Runs g on seeded random arguments (batch = 2 where symbolic); returns
 * name -> WeirTensor*. */
static GHashTable *run_program(const WeirGraph *program) {
  g_autoptr(WeirGraph) g = weir_graph_copy(program);
  g_autoptr(GHashTable) syms = weir_bindings_new();
  for (guint i = 0; i < g->symbols->len; i++)
    weir_bindings_set(syms, g_ptr_array_index(g->symbols, i), 2);
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    gint64 shape[8];
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(g_ptr_array_index(c->shape, d), syms,
                                 &shape[d], NULL));
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    weir_tensor_fill_random(t, 1000 + c->id);
    g_hash_table_insert(args, g_strdup(c->name), t);
  }
  g_autoptr(GError) error = NULL;
  if (!weir_interpret(g, syms, args, NULL, &error))
    fail_msg("%s", error->message);
  return args;
}

static guint count_library(const WeirGraph *g) {
  guint n = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++)
      n += ((WeirNode *)s->nodes->pdata[k])->kind == WEIR_NODE_LIBRARY;
  }
  return n;
}

/* A recipe on the bundled models: op selector, repeat, first; the result
 * is the same bytes every time and computes what the fully expanded model
 * computes. */
static void test_models(void **state) {
  (void)state;
  const char *steps =
      "{\"transform\": \"expand-library-node\", \"site\": {\"op\": "
      "\"Conv\"}, \"optional\": true},"
      "{\"transform\": \"expand-library-node\", \"site\": {\"node\": "
      "\"*Relu*\", \"first\": true}, \"optional\": true},"
      "{\"transform\": \"expand-library-node\", \"repeat\": "
      "\"until-no-match\"},"
      "{\"transform\": \"test-schedule\", \"site\": {\"first\": true}}";
  for (guint mi = 0; mi < G_N_ELEMENTS(testing_models); mi++) {
    const char *name = testing_models[mi];
    g_autoptr(WeirGraph) a = testing_import_model(name);
    g_autoptr(WeirGraph) b = testing_import_model(name);
    guint libs = count_library(a);
    g_autoptr(WeirRecipeReport) ra = apply_ok(a, steps);
    g_autoptr(WeirRecipeReport) rb = apply_ok(b, steps);
    g_autofree char *ja = weir_graph_to_json(a);
    g_autofree char *jb = weir_graph_to_json(b);
    assert_string_equal(ja, jb);
    assert_int_equal(count_library(a), 0);
    guint applied = 0;
    for (guint i = 0; i < 3; i++) {
      const WeirRecipeStepReport *sr = g_ptr_array_index(ra->steps, i);
      assert_true(sr->validated);
      applied += sr->applied->len;
    }
    assert_int_equal(applied, libs);
    const WeirRecipeStepReport *conv = g_ptr_array_index(ra->steps, 0);
    if (strcmp(name, "lenet") == 0)
      assert_int_equal(conv->applied->len, 2);
    if (strcmp(name, "mlp") == 0)
      assert_false(conv->ok); /* no Conv: an optional step skipped */

    /* Same outputs as expanding everything at once (on the two small
     * models: the interpreter is slow, and expand-library-node's own tests
     * check every model against PyTorch). */
    if (mi >= 2)
      continue;
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirGraph) ref = testing_import_model(name);
    assert_true(weir_expand_all(ref, NULL, NULL, &error));
    g_autoptr(GHashTable) out_a = run_program(a);
    g_autoptr(GHashTable) out_r = run_program(ref);
    GHashTableIter it;
    gpointer key, val;
    g_hash_table_iter_init(&it, out_r);
    while (g_hash_table_iter_next(&it, &key, &val)) {
      const WeirTensor *x = g_hash_table_lookup(out_a, key);
      assert_non_null(x);
      if (!weir_tensor_allclose(x, val, 1e-5, 1e-6, NULL, &error))
        fail_msg("%s: %s: %s", name, (char *)key, error->message);
    }
  }
}

/* A session on a model, driven by label globs and ids; its exported recipe
 * replays to the same bytes. */
static void test_model_export(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = testing_import_model("resnet");
  g_autoptr(WeirSession) s = weir_session_new(g, "resnet", NULL, &error);
  g_autoptr(WeirRecipe) r =
      recipe_of("{\"transform\": \"expand-library-node\", \"site\": {\"node\": "
                "\"/block1/*\"}},"
                "{\"transform\": \"test-schedule\", \"site\": {\"index\": 3}},"
                "{\"transform\": \"expand-library-node\", \"site\": {\"op\": "
                "\"Add\", \"first\": true}}");
  if (!weir_recipe_apply_session(s, r, NULL, &error))
    fail_msg("%s", error->message);
  assert_true(weir_session_n_steps(s) >= 4);
  assert_true(weir_session_undo(s, &error));
  export_and_replay(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_parse_and_print),
      cmocka_unit_test(test_selectors),
      cmocka_unit_test(test_failures),
      cmocka_unit_test(test_optional_and_partial),
      cmocka_unit_test(test_repeat),
      cmocka_unit_test(test_tier_steps),
      cmocka_unit_test(test_determinism),
      cmocka_unit_test(test_build),
      cmocka_unit_test(test_export_replay),
      cmocka_unit_test(test_session_apply_rollback),
      cmocka_unit_test(test_models),
      cmocka_unit_test(test_model_export),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
