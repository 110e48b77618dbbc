/* test-graph-edit-tier2.c — graph editing functions added by the tier2
 * branch: weir_tasklet_set_code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-graph.h"
#include "weir-validate.h"

/* B = 2 * A through one top-level tasklet. */
static WeirGraph *scalar_graph(WeirNode **t_out) {
  WeirGraph *g = weir_graph_new("edit");
  WeirState *s = weir_graph_add_state(g, "main");
  assert_non_null(
      weir_graph_add_array(g, "A", WEIR_DTYPE_F32, "", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "B", WEIR_DTYPE_F32, "", FALSE, NULL));
  const char *ins[] = {"a", NULL}, *outs[] = {"b", NULL};
  WeirNode *t = weir_state_add_tasklet(g, s, "t", ins, outs, "b = 2 * a");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *b = weir_state_add_access(g, s, "B");
  assert_non_null(
      weir_state_add_memlet(g, s, a->id, NULL, t->id, "a", "A", "", NULL));
  assert_non_null(
      weir_state_add_memlet(g, s, t->id, "b", b->id, NULL, "B", "", NULL));
  *t_out = t;
  return g;
}

static void test_set_code(void **state) {
  (void)state;
  WeirNode *t;
  g_autoptr(WeirGraph) g = scalar_graph(&t);
  assert_true(weir_graph_validate(g, NULL));
  guint id = t->id, next = g->next_id;

  assert_true(weir_tasklet_set_code(t, "b = a * a + 1"));
  assert_string_equal(t->code_text, "b = a * a + 1");
  assert_non_null(t->code);
  g_autofree char *canon = weir_code_to_string(t->code);
  assert_string_equal(canon, "b = a * a + 1");
  assert_int_equal(t->id, id);        /* same node */
  assert_int_equal(g->next_id, next); /* no id used */
  assert_true(weir_graph_validate(g, NULL));

  /* text that does not parse is kept for the validator to report */
  assert_true(weir_tasklet_set_code(t, "b = a +"));
  assert_null(t->code);
  assert_string_equal(t->code_text, "b = a +");
  g_autoptr(GError) err = NULL;
  assert_false(weir_graph_validate(g, &err));
  g_autofree char *where = g_strdup_printf("node %u (tasklet 't')", id);
  assert_non_null(strstr(err->message, where));

  /* a body that no longer assigns the output is caught by the checker */
  assert_true(weir_tasklet_set_code(t, "x = a"));
  assert_non_null(t->code);
  assert_false(weir_graph_validate(g, NULL));
  assert_true(weir_tasklet_set_code(t, NULL)); /* empty body */
  assert_string_equal(t->code_text, "");
}

static void test_not_a_tasklet(void **state) {
  (void)state;
  WeirNode *t;
  g_autoptr(WeirGraph) g = scalar_graph(&t);
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirNode *a = NULL;
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_ACCESS)
      a = n;
  }
  assert_false(weir_tasklet_set_code(a, "b = a"));
  assert_null(a->code_text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_set_code),
      cmocka_unit_test(test_not_a_tasklet),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
