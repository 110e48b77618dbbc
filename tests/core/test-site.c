/* test-site.c — weir_site_parse: sites written as text (the `--site`
 * syntax): node ids with or without a state, @K, label patterns, the only
 * site, and the errors for each. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-json.h"
#include "weir-transform.h"

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    const char *hay_ = (hay);                                                  \
    if (!hay_ || !strstr(hay_, (needle)))                                      \
      fail_msg("expected to find '%s' in: %s", (needle),                       \
               hay_ ? hay_ : "(null)");                                        \
  } while (0)

static WeirGraph *load_sample(const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_load(path, &error);
  if (!g)
    fail_msg("%s: %s", path, error->message);
  return g;
}

/* samples/softmax.json: one state (6) with the maps init (node 8), rowmax
 * (13), expsum (17) and normalize (22); map-tiling has a site at each, in
 * that order. */
static WeirGraph *softmax(void) {
  return load_sample("softmax.json");
}

static const WeirTransformInfo *tiling(void) {
  weir_transforms_init();
  const WeirTransformInfo *t = weir_transform_lookup("map-tiling");
  assert_non_null(t);
  return t;
}

/* Parses text, expecting success; returns the site. */
static WeirSite parse_ok(const WeirGraph *g, const WeirTransformInfo *t,
                         const char *text) {
  WeirSite site;
  memset(&site, 0xff, sizeof site);
  g_autoptr(GError) error = NULL;
  if (!weir_site_parse(g, t, text, &site, &error))
    fail_msg("--site %s: %s", text ? text : "(null)", error->message);
  return site;
}

/* Parses text, expecting an error containing want. */
static void parse_fails(const WeirGraph *g, const WeirTransformInfo *t,
                        const char *text, const char *want) {
  WeirSite site = {0};
  g_autoptr(GError) error = NULL;
  assert_false(weir_site_parse(g, t, text, &site, &error));
  assert_non_null(error);
  assert_int_equal(error->code, WEIR_ERROR_INVALID);
  assert_contains(error->message, want);
}

static void test_ids(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = softmax();
  /* ids need no transformation; the state is the first node's */
  WeirSite s = parse_ok(g, NULL, "13");
  assert_int_equal(s.state, 6);
  assert_int_equal(s.n_nodes, 1);
  assert_int_equal(s.nodes[0], 13);
  /* blanks around ids (the program-file parser allowed them) */
  s = parse_ok(g, NULL, " 13 , 17 ");
  assert_int_equal(s.state, 6);
  assert_int_equal(s.n_nodes, 2);
  assert_int_equal(s.nodes[0], 13);
  assert_int_equal(s.nodes[1], 17);
  /* STATE:ids (the workspace parser allowed them) */
  s = parse_ok(g, NULL, "6:22");
  assert_int_equal(s.state, 6);
  assert_int_equal(s.n_nodes, 1);
  assert_int_equal(s.nodes[0], 22);
  s = parse_ok(g, tiling(), "6: 8,13");
  assert_int_equal(s.n_nodes, 2);
  assert_int_equal(s.nodes[1], 13);

  parse_fails(g, NULL, "99", "--site 99: program 'softmax' has no node 99");
  parse_fails(g, NULL, "13,99", "state 6 of program 'softmax' has no node 99");
  parse_fails(g, NULL, "7:13", "--site 7:13: program 'softmax' has no state 7");
  parse_fails(g, NULL, "6:99", "state 6 of program 'softmax' has no node 99");
  parse_fails(g, NULL, "0", "'0' is not a node id");
  parse_fails(g, NULL, "13,,17", "'' is not a node id");
  parse_fails(g, NULL, ":13", "'' is not a state id");
  parse_fails(g, NULL, "1,2,3,4,5,6,7,8,9", "expected 1 to 8 node ids");
  /* @K and patterns need the transformation */
  parse_fails(g, NULL, "@1", "expected node ids such as 7,9 or STATE:7,9");
  parse_fails(g, NULL, "rowmax", "expected node ids such as 7,9");
}

static void test_index(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = softmax();
  const WeirTransformInfo *t = tiling();
  WeirSite s = parse_ok(g, t, "@0");
  assert_int_equal(s.nodes[0], 8);
  s = parse_ok(g, t, "@2");
  assert_int_equal(s.state, 6);
  assert_int_equal(s.nodes[0], 17);
  parse_fails(g, t, "@4", "--site @4: map-tiling has 4 sites (@0..@3)");
  parse_fails(g, t, "@x", "map-tiling has 4 sites");
  parse_fails(g, t, "@", "map-tiling has 4 sites");
}

static void test_pattern(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = softmax();
  const WeirTransformInfo *t = tiling();
  WeirSite s = parse_ok(g, t, "exp*");
  assert_int_equal(s.nodes[0], 17);
  s = parse_ok(g, t, "normalize");
  assert_int_equal(s.nodes[0], 22);
  s = parse_ok(g, t, "?nit");
  assert_int_equal(s.nodes[0], 8);
  /* several: listed with their @K */
  parse_fails(g, t, "*m*",
              "map-tiling: 3 sites match *m*; choose one with --site:\n"
              "  @1  state 6: node 13 (map_entry 'rowmax')\n"
              "  @2  state 6: node 17 (map_entry 'expsum')\n"
              "  @3  state 6: node 22 (map_entry 'normalize')");
  parse_fails(g, t, "zz*", "map-tiling: no site whose first node matches zz*");
}

static void test_only_site(void **state) {
  (void)state;
  const WeirTransformInfo *t = tiling();
  g_autoptr(WeirGraph) g = softmax();
  parse_fails(g, t, NULL,
              "map-tiling: 4 sites; choose one with --site:\n"
              "  @0  state 6: node 8 (map_entry 'init')");
  g_autoptr(WeirGraph) v = load_sample("vector_add.json");
  WeirSite s = parse_ok(v, t, NULL);
  assert_int_equal(s.state, 4);
  assert_int_equal(s.n_nodes, 1);
  assert_int_equal(s.nodes[0], 7);
  parse_fails(v, NULL, NULL, "expected node ids");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ids),
      cmocka_unit_test(test_index),
      cmocka_unit_test(test_pattern),
      cmocka_unit_test(test_only_site),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
