/* test-graph-edit-tier3.c — the graph edits added for the tier-3
 * transformations: connector removal, tasklet bodies (branch tier2 added
 * weir_tasklet_set_code; tier 3 relies on it), moving a state's
 * elements, removing and retargeting transitions, removing states. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-graph.h"
#include "weir-validate.h"

static void test_remove_connectors(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  WeirState *s = weir_graph_add_state(g, "main");
  const char *ins[] = {"a", "b", NULL}, *outs[] = {"y", "z", NULL};
  WeirNode *t = weir_state_add_tasklet(g, s, "t", ins, outs, "y = a\nz = b");
  assert_true(weir_node_remove_in_conn(t, "a"));
  assert_false(weir_node_has_in_conn(t, "a"));
  assert_true(weir_node_has_in_conn(t, "b"));
  assert_int_equal(t->in_conns->len, 1);
  assert_false(weir_node_remove_in_conn(t, "a"));
  assert_false(weir_node_remove_in_conn(t, "y")); /* an output */
  assert_true(weir_node_remove_out_conn(t, "z"));
  assert_int_equal(t->out_conns->len, 1);
  assert_string_equal(g_ptr_array_index(t->out_conns, 0), "y");
  assert_false(weir_node_remove_out_conn(t, NULL));
}

static void test_tasklet_set_code(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  assert_non_null(
      weir_graph_add_array(g, "A", WEIR_DTYPE_F32, "", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "B", WEIR_DTYPE_F32, "", FALSE, NULL));
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *b = weir_state_add_access(g, s, "B");
  const char *ins[] = {"x", NULL}, *outs[] = {"y", NULL};
  WeirNode *t = weir_state_add_tasklet(g, s, "t", ins, outs, "y = x");
  assert_non_null(
      weir_state_add_memlet(g, s, a->id, NULL, t->id, "x", "A", "", NULL));
  assert_non_null(
      weir_state_add_memlet(g, s, t->id, "y", b->id, NULL, "B", "", NULL));
  assert_true(weir_graph_validate(g, NULL));

  weir_tasklet_set_code(t, "u = x * 2\ny = u + 1");
  assert_string_equal(t->code_text, "u = x * 2\ny = u + 1");
  assert_non_null(t->code);
  assert_int_equal(t->code->stmts->len, 2);
  assert_true(weir_graph_validate(g, NULL));

  /* A body that does not parse is kept for the validator to report. */
  weir_tasklet_set_code(t, "y = (x");
  assert_null(t->code);
  assert_string_equal(t->code_text, "y = (x");
  g_autoptr(GError) error = NULL;
  assert_false(weir_graph_validate(g, &error));
  assert_non_null(strstr(error->message, "does not parse"));
}

/* Two states, each writing one scalar: s1 -> s2 -> s3. */
static WeirGraph *build_states(guint *ids) {
  WeirGraph *g = weir_graph_new("t");
  assert_non_null(
      weir_graph_add_array(g, "A", WEIR_DTYPE_F32, "", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "B", WEIR_DTYPE_F32, "", FALSE, NULL));
  WeirState *s1 = weir_graph_add_state(g, "one");
  WeirState *s2 = weir_graph_add_state(g, "two");
  WeirState *s3 = weir_graph_add_state(g, "three");
  const char *outs[] = {"y", NULL};
  WeirNode *t1 = weir_state_add_tasklet(g, s1, "t1", NULL, outs, "y = 1");
  WeirNode *a = weir_state_add_access(g, s1, "A");
  assert_non_null(
      weir_state_add_memlet(g, s1, t1->id, "y", a->id, NULL, "A", "", NULL));
  WeirNode *t2 = weir_state_add_tasklet(g, s2, "t2", NULL, outs, "y = 2");
  WeirNode *b = weir_state_add_access(g, s2, "B");
  assert_non_null(
      weir_state_add_memlet(g, s2, t2->id, "y", b->id, NULL, "B", "", NULL));
  WeirTransition *x = weir_graph_add_transition(g, s1->id, s2->id, NULL, NULL);
  WeirTransition *y = weir_graph_add_transition(g, s2->id, s3->id, NULL, NULL);
  ids[0] = s1->id;
  ids[1] = s2->id;
  ids[2] = s3->id;
  ids[3] = x->id;
  ids[4] = y->id;
  return g;
}

static void test_move_elements(void **state) {
  (void)state;
  guint ids[5];
  g_autoptr(WeirGraph) g = build_states(ids);
  WeirState *s1 = weir_graph_state(g, ids[0]);
  WeirState *s2 = weir_graph_state(g, ids[1]);
  /* A node added to s1 after s2's nodes makes the ids interleave. */
  WeirNode *late = weir_state_add_access(g, s1, "B");
  weir_state_move_elements(s1, s2);
  assert_int_equal(s2->nodes->len, 0);
  assert_int_equal(s2->edges->len, 0);
  assert_int_equal(s1->nodes->len, 5);
  assert_int_equal(s1->edges->len, 2);
  for (guint i = 1; i < s1->nodes->len; i++) {
    WeirNode *p = g_ptr_array_index(s1->nodes, i - 1);
    WeirNode *n = g_ptr_array_index(s1->nodes, i);
    assert_true(p->id < n->id);
  }
  for (guint i = 1; i < s1->edges->len; i++) {
    WeirMemlet *p = g_ptr_array_index(s1->edges, i - 1);
    WeirMemlet *m = g_ptr_array_index(s1->edges, i);
    assert_true(p->id < m->id);
  }
  assert_ptr_equal(weir_state_node(s1, late->id), late);
  /* The moved state is still usable and the graph still valid. */
  weir_state_add_access(g, s2, "A");
  assert_int_equal(s2->nodes->len, 1);
  assert_true(weir_graph_validate(g, NULL));
}

static void test_transitions_and_states(void **state) {
  (void)state;
  guint ids[5];
  g_autoptr(WeirGraph) g = build_states(ids);
  /* s2 is still joined: refused; so is the start state. */
  assert_false(weir_graph_remove_state(g, ids[1]));
  assert_false(weir_graph_remove_state(g, ids[0]));
  assert_false(weir_graph_remove_state(g, 9999));

  /* s1 -> s3 directly, then drop s1 -> s2 and s2. */
  assert_true(weir_graph_retarget_transition(g, ids[4], ids[0], ids[2]));
  WeirTransition *t = g_ptr_array_index(g->transitions, 1);
  assert_int_equal(t->id, ids[4]);
  assert_int_equal(t->src, ids[0]);
  assert_int_equal(t->dst, ids[2]);
  assert_false(weir_graph_retarget_transition(g, ids[4], ids[0], 9999));
  assert_false(weir_graph_retarget_transition(g, 9999, ids[0], ids[2]));
  assert_true(weir_graph_remove_transition(g, ids[3]));
  assert_false(weir_graph_remove_transition(g, ids[3]));
  assert_int_equal(g->transitions->len, 1);
  assert_true(weir_graph_remove_state(g, ids[1]));
  assert_null(weir_graph_state(g, ids[1]));
  assert_int_equal(g->states->len, 2);
  assert_true(weir_graph_validate(g, NULL));
  /* Ids are never reused. */
  WeirState *s = weir_graph_add_state(g, "new");
  assert_true(s->id > ids[4]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_remove_connectors),
      cmocka_unit_test(test_tasklet_set_code),
      cmocka_unit_test(test_move_elements),
      cmocka_unit_test(test_transitions_and_states),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
