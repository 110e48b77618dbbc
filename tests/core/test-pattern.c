/* test-pattern.c — the generic subgraph matcher on hand-built graphs:
 * chains, diamonds, filters (kind, op, transient), no match, many matches,
 * deterministic order across states, distinct nodes, parallel memlets,
 * and the site check used by the framework's legality wrapper. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-transform-private.h"

/* ------------------------------------------------------------ building */

static guint access_node(WeirGraph *g, WeirState *s, const char *name,
                         gboolean transient) {
  if (!weir_graph_container(g, name))
    assert_non_null(
        weir_graph_add_array(g, name, WEIR_DTYPE_F32, "4", transient, NULL));
  return weir_state_add_access(g, s, name)->id;
}

static guint tasklet(WeirGraph *g, WeirState *s, const char *label) {
  return weir_state_add_tasklet(g, s, label, NULL, NULL, "")->id;
}

static guint library(WeirGraph *g, WeirState *s, const char *op) {
  return weir_state_add_library(g, s, op, op, NULL, NULL)->id;
}

/* An empty memlet: the matcher only looks at which nodes are joined. */
static void edge(WeirGraph *g, WeirState *s, guint src, guint dst) {
  g_autoptr(GError) error = NULL;
  if (!weir_state_add_memlet(g, s, src, NULL, dst, NULL, NULL, NULL, &error))
    fail_msg("memlet %u -> %u: %s", src, dst, error->message);
}

static void assert_site(GArray *sites, guint i, guint state, guint n, ...) {
  assert_true(i < sites->len);
  const WeirSite *site = &g_array_index(sites, WeirSite, i);
  assert_int_equal(site->state, state);
  assert_int_equal(site->n_nodes, n);
  va_list ap;
  va_start(ap, n);
  for (guint k = 0; k < n; k++)
    assert_int_equal(site->nodes[k], va_arg(ap, guint));
  va_end(ap);
}

/* ------------------------------------------------------------- patterns */

static void test_chain(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("chain");
  WeirState *s = weir_graph_add_state(g, "main");
  guint a = access_node(g, s, "A", FALSE);
  guint t1 = tasklet(g, s, "t1");
  guint b = access_node(g, s, "B", TRUE);
  guint t2 = tasklet(g, s, "t2");
  guint c = access_node(g, s, "C", FALSE);
  edge(g, s, a, t1);
  edge(g, s, t1, b);
  edge(g, s, b, t2);
  edge(g, s, t2, c);

  /* access -> tasklet -> access: two matches, in order. */
  const WeirPatternNode n3[] = {
      {.kind = WEIR_NODE_ACCESS},
      {.kind = WEIR_NODE_TASKLET},
      {.kind = WEIR_NODE_ACCESS},
  };
  const WeirPatternEdge e3[] = {{0, 1}, {1, 2}};
  WeirPattern p = {.nodes = n3, .n_nodes = 3, .edges = e3, .n_edges = 2};
  g_autoptr(GArray) m = weir_pattern_match(g, &p);
  assert_int_equal(m->len, 2);
  assert_site(m, 0, s->id, 3, a, t1, b);
  assert_site(m, 1, s->id, 3, b, t2, c);

  /* The middle access node must be transient: one match left. */
  const WeirPatternNode n5[] = {
      {.kind = WEIR_NODE_TASKLET},
      {.kind = WEIR_NODE_ACCESS, .transient = TRUE},
      {.kind = WEIR_NODE_TASKLET},
  };
  WeirPattern pt = {.nodes = n5, .n_nodes = 3, .edges = e3, .n_edges = 2};
  g_autoptr(GArray) mt = weir_pattern_match(g, &pt);
  assert_int_equal(mt->len, 1);
  assert_site(mt, 0, s->id, 3, t1, b, t2);

  /* Reversed edge direction in the pattern: tasklet <- access written as
   * pattern edge 1 -> 0. */
  const WeirPatternNode n2[] = {{.kind = WEIR_NODE_TASKLET},
                                {.kind = WEIR_NODE_ACCESS}};
  const WeirPatternEdge back[] = {{1, 0}};
  WeirPattern pb = {.nodes = n2, .n_nodes = 2, .edges = back, .n_edges = 1};
  g_autoptr(GArray) mb = weir_pattern_match(g, &pb);
  assert_int_equal(mb->len, 2);
  assert_site(mb, 0, s->id, 2, t1, a);
  assert_site(mb, 1, s->id, 2, t2, b);

  /* No edges: every pair of distinct nodes of the kinds. */
  WeirPattern pn = {.nodes = n2, .n_nodes = 2};
  g_autoptr(GArray) mn = weir_pattern_match(g, &pn);
  assert_int_equal(mn->len, 6);
  assert_site(mn, 0, s->id, 2, t1, a);
  assert_site(mn, 1, s->id, 2, t1, b);
  assert_site(mn, 5, s->id, 2, t2, c);
}

static void test_no_match(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("none");
  WeirState *s = weir_graph_add_state(g, "main");
  guint a = access_node(g, s, "A", FALSE);
  guint t = tasklet(g, s, "t");
  edge(g, s, a, t);
  const WeirPatternNode n[] = {{.kind = WEIR_NODE_TASKLET},
                               {.kind = WEIR_NODE_TASKLET}};
  const WeirPatternEdge e[] = {{0, 1}};
  WeirPattern p = {.nodes = n, .n_nodes = 2, .edges = e, .n_edges = 1};
  g_autoptr(GArray) m = weir_pattern_match(g, &p);
  assert_int_equal(m->len, 0);
  /* A kind absent from the program. */
  const WeirPatternNode me[] = {{.kind = WEIR_NODE_MAP_ENTRY}};
  WeirPattern pm = {.nodes = me, .n_nodes = 1};
  g_autoptr(GArray) m2 = weir_pattern_match(g, &pm);
  assert_int_equal(m2->len, 0);
  /* An empty program. */
  g_autoptr(WeirGraph) empty = weir_graph_new("empty");
  g_autoptr(GArray) m3 = weir_pattern_match(empty, &pm);
  assert_int_equal(m3->len, 0);
  /* The only candidates would repeat a node: A -> t <- A. */
  const WeirPatternNode two_in[] = {{.kind = WEIR_NODE_ACCESS},
                                    {.kind = WEIR_NODE_TASKLET},
                                    {.kind = WEIR_NODE_ACCESS}};
  const WeirPatternEdge e2[] = {{0, 1}, {2, 1}};
  WeirPattern p2 = {.nodes = two_in, .n_nodes = 3, .edges = e2, .n_edges = 2};
  g_autoptr(GArray) m4 = weir_pattern_match(g, &p2);
  assert_int_equal(m4->len, 0);
}

static void test_diamond(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("diamond");
  WeirState *s = weir_graph_add_state(g, "main");
  guint x = access_node(g, s, "X", FALSE);
  guint ta = tasklet(g, s, "a");
  guint tb = tasklet(g, s, "b");
  guint z = access_node(g, s, "Z", FALSE);
  guint tc = tasklet(g, s, "c"); /* reads X, writes elsewhere */
  guint w = access_node(g, s, "W", FALSE);
  edge(g, s, x, ta);
  edge(g, s, x, tb);
  edge(g, s, x, tc);
  edge(g, s, ta, z);
  edge(g, s, tb, z);
  edge(g, s, tc, w);
  /* Two parallel memlets must not duplicate matches. */
  edge(g, s, ta, z);

  const WeirPatternNode n[] = {
      {.kind = WEIR_NODE_ACCESS},
      {.kind = WEIR_NODE_TASKLET},
      {.kind = WEIR_NODE_TASKLET},
      {.kind = WEIR_NODE_ACCESS},
  };
  const WeirPatternEdge e[] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
  WeirPattern p = {.nodes = n, .n_nodes = 4, .edges = e, .n_edges = 4};
  g_autoptr(GArray) m = weir_pattern_match(g, &p);
  assert_int_equal(m->len, 2);
  assert_site(m, 0, s->id, 4, x, ta, tb, z);
  assert_site(m, 1, s->id, 4, x, tb, ta, z);

  /* Fan-out (shared input) without the join: 3 * 2 ordered pairs. */
  WeirPattern fan = {.nodes = n, .n_nodes = 3, .edges = e, .n_edges = 2};
  g_autoptr(GArray) mf = weir_pattern_match(g, &fan);
  assert_int_equal(mf->len, 6);
  assert_site(mf, 0, s->id, 3, x, ta, tb);
  assert_site(mf, 1, s->id, 3, x, ta, tc);
  assert_site(mf, 2, s->id, 3, x, tb, ta);
  assert_site(mf, 5, s->id, 3, x, tc, tb);
}

static void test_library_ops(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("ops");
  WeirState *s = weir_graph_add_state(g, "main");
  guint x = access_node(g, s, "X", FALSE);
  guint conv = library(g, s, "Conv");
  guint t = access_node(g, s, "T", TRUE);
  guint relu = library(g, s, "Relu");
  guint y = access_node(g, s, "Y", FALSE);
  guint relu2 = library(g, s, "Relu");
  guint y2 = access_node(g, s, "Y2", FALSE);
  edge(g, s, x, conv);
  edge(g, s, conv, t);
  edge(g, s, t, relu);
  edge(g, s, relu, y);
  edge(g, s, y, relu2);
  edge(g, s, relu2, y2);

  const WeirPatternNode n[] = {
      {.kind = WEIR_NODE_LIBRARY, .op = "Conv"},
      {.kind = WEIR_NODE_ACCESS},
      {.kind = WEIR_NODE_LIBRARY, .op = "Relu"},
  };
  const WeirPatternEdge e[] = {{0, 1}, {1, 2}};
  WeirPattern p = {.nodes = n, .n_nodes = 3, .edges = e, .n_edges = 2};
  g_autoptr(GArray) m = weir_pattern_match(g, &p);
  assert_int_equal(m->len, 1);
  assert_site(m, 0, s->id, 3, conv, t, relu);

  /* Any op. */
  const WeirPatternNode any[] = {{.kind = WEIR_NODE_LIBRARY}};
  WeirPattern pa = {.nodes = any, .n_nodes = 1};
  g_autoptr(GArray) ma = weir_pattern_match(g, &pa);
  assert_int_equal(ma->len, 3);
  assert_site(ma, 2, s->id, 1, relu2);

  /* Relu -> access -> Relu */
  const WeirPatternNode rr[] = {
      {.kind = WEIR_NODE_LIBRARY, .op = "Relu"},
      {.kind = WEIR_NODE_ACCESS},
      {.kind = WEIR_NODE_LIBRARY, .op = "Relu"},
  };
  WeirPattern prr = {.nodes = rr, .n_nodes = 3, .edges = e, .n_edges = 2};
  g_autoptr(GArray) mrr = weir_pattern_match(g, &prr);
  assert_int_equal(mrr->len, 1);
  assert_site(mrr, 0, s->id, 3, relu, y, relu2);
}

static void test_many_and_ordering(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("many");
  /* Two states; the second gets lower node ids for its first nodes than
   * the first state's last ones, so order is by state first. */
  WeirState *s1 = weir_graph_add_state(g, "one");
  WeirState *s2 = weir_graph_add_state(g, "two");
  GArray *ids1 = g_array_new(FALSE, FALSE, sizeof(guint));
  GArray *ids2 = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < 40; i++) {
    WeirState *s = i % 2 ? s2 : s1;
    g_autofree char *name = g_strdup_printf("x%u", i);
    guint a = access_node(g, s, name, FALSE);
    guint t = tasklet(g, s, name);
    edge(g, s, a, t);
    g_array_append_val(i % 2 ? ids2 : ids1, a);
    g_array_append_val(i % 2 ? ids2 : ids1, t);
  }
  const WeirPatternNode n[] = {{.kind = WEIR_NODE_ACCESS},
                               {.kind = WEIR_NODE_TASKLET}};
  const WeirPatternEdge e[] = {{0, 1}};
  WeirPattern p = {.nodes = n, .n_nodes = 2, .edges = e, .n_edges = 1};
  g_autoptr(GArray) m = weir_pattern_match(g, &p);
  assert_int_equal(m->len, 40);
  for (guint i = 0; i < 20; i++) {
    assert_site(m, i, s1->id, 2, g_array_index(ids1, guint, 2 * i),
                g_array_index(ids1, guint, 2 * i + 1));
    assert_site(m, 20 + i, s2->id, 2, g_array_index(ids2, guint, 2 * i),
                g_array_index(ids2, guint, 2 * i + 1));
  }
  /* Same result on a deep copy, and again. */
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  g_autoptr(GArray) m2 = weir_pattern_match(copy, &p);
  assert_int_equal(m2->len, m->len);
  assert_memory_equal(m->data, m2->data, m->len * sizeof(WeirSite));
  g_array_unref(ids1);
  g_array_unref(ids2);

  /* Eight-node pattern (the maximum): a chain of 8 in a chain of 12. */
  g_autoptr(WeirGraph) c = weir_graph_new("long");
  WeirState *s = weir_graph_add_state(c, "main");
  guint ids[12];
  for (guint i = 0; i < 12; i++) {
    ids[i] = i % 2 ? tasklet(c, s, "t") : access_node(c, s, "A", FALSE);
    if (i)
      edge(c, s, ids[i - 1], ids[i]);
  }
  WeirPatternNode chain[8];
  WeirPatternEdge chain_e[7];
  for (guint i = 0; i < 8; i++) {
    chain[i] =
        (WeirPatternNode){.kind = i % 2 ? WEIR_NODE_TASKLET : WEIR_NODE_ACCESS};
    if (i)
      chain_e[i - 1] = (WeirPatternEdge){i - 1, i};
  }
  WeirPattern pc = {
      .nodes = chain, .n_nodes = 8, .edges = chain_e, .n_edges = 7};
  g_autoptr(GArray) mc = weir_pattern_match(c, &pc);
  assert_int_equal(mc->len, 3); /* starting at access nodes 0, 2, 4 */
  for (guint k = 0; k < 3; k++)
    for (guint i = 0; i < 8; i++)
      assert_int_equal(g_array_index(mc, WeirSite, k).nodes[i], ids[2 * k + i]);
}

static void test_check_site(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("check");
  WeirState *s = weir_graph_add_state(g, "main");
  guint a = access_node(g, s, "A", FALSE);
  guint t = tasklet(g, s, "t");
  guint b = access_node(g, s, "B", TRUE);
  guint u = tasklet(g, s, "u");
  edge(g, s, a, t);
  edge(g, s, t, b);
  const WeirPatternNode n[] = {{.kind = WEIR_NODE_ACCESS},
                               {.kind = WEIR_NODE_TASKLET}};
  const WeirPatternEdge e[] = {{0, 1}};
  WeirPattern p = {.nodes = n, .n_nodes = 2, .edges = e, .n_edges = 1};
  char *reason = NULL;
  WeirSite ok = {.state = s->id, .n_nodes = 2, .nodes = {a, t}};
  assert_true(weir_pattern_check_site(g, &p, &ok, &reason));
  WeirSite noedge = {.state = s->id, .n_nodes = 2, .nodes = {a, u}};
  assert_false(weir_pattern_check_site(g, &p, &noedge, &reason));
  g_autofree char *want =
      g_strdup_printf("no memlet from node %u to node %u", a, u);
  assert_non_null(strstr(reason, want));
  g_clear_pointer(&reason, g_free);
  WeirSite kind = {.state = s->id, .n_nodes = 2, .nodes = {t, b}};
  assert_false(weir_pattern_check_site(g, &p, &kind, &reason));
  assert_non_null(strstr(reason, "site position 1 must be an access node"));
  g_clear_pointer(&reason, g_free);
  const WeirPatternNode tr[] = {{.kind = WEIR_NODE_ACCESS, .transient = TRUE}};
  WeirPattern ptr = {.nodes = tr, .n_nodes = 1};
  WeirSite notr = {.state = s->id, .n_nodes = 1, .nodes = {a}};
  assert_false(weir_pattern_check_site(g, &ptr, &notr, &reason));
  assert_non_null(strstr(reason, "an access node of a transient"));
  g_clear_pointer(&reason, g_free);
  const WeirPatternNode lib[] = {{.kind = WEIR_NODE_LIBRARY, .op = "Conv"}};
  WeirPattern plib = {.nodes = lib, .n_nodes = 1};
  assert_false(weir_pattern_check_site(g, &plib, &notr, &reason));
  assert_non_null(strstr(reason, "a library node 'Conv'"));
  g_clear_pointer(&reason, g_free);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chain),
      cmocka_unit_test(test_no_match),
      cmocka_unit_test(test_diamond),
      cmocka_unit_test(test_library_ops),
      cmocka_unit_test(test_many_and_ordering),
      cmocka_unit_test(test_check_site),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
