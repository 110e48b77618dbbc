/* test-graph-edit-tier4.c — the graph edits added for the tier-4
 * transformations: retargeting an access node and a memlet to another
 * container, and replacing a container's shape. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-json.h"
#include "weir-validate.h"

/* A[4, 8] -> copy -> B[4, 8] (transient), plus C[4, 8] (transient). */
static WeirGraph *copy_program(guint *a_out, guint *b_out, guint *m_out) {
  WeirGraph *g = weir_graph_new("copy");
  WeirState *s = weir_graph_add_state(g, "main");
  assert_non_null(
      weir_graph_add_array(g, "A", WEIR_DTYPE_F32, "4, 8", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "B", WEIR_DTYPE_F32, "4, 8", TRUE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "C", WEIR_DTYPE_F32, "4, 8", TRUE, NULL));
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *b = weir_state_add_access(g, s, "B");
  WeirMemlet *m = weir_state_add_memlet(g, s, a->id, NULL, b->id, NULL, "A",
                                        "0:4, 0:8", NULL);
  assert_non_null(m);
  *a_out = a->id;
  *b_out = b->id;
  *m_out = m->id;
  assert_true(weir_graph_validate(g, NULL));
  return g;
}

static void test_retarget(void **state) {
  (void)state;
  guint a, b, mid;
  g_autoptr(WeirGraph) g = copy_program(&a, &b, &mid);
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirNode *bn = weir_state_node(s, b);
  WeirMemlet *m = weir_state_memlet(s, mid);
  /* The copy now writes C. */
  assert_true(weir_access_set_data(bn, "C"));
  assert_string_equal(bn->data, "C");
  assert_true(weir_graph_validate(g, NULL));
  /* The memlet may name the destination instead. */
  assert_true(weir_memlet_set_data(m, "C"));
  assert_string_equal(m->data, "C");
  assert_true(weir_graph_validate(g, NULL));
  g_autofree char *json = weir_graph_to_json(g);
  assert_non_null(strstr(json, "\"data\": \"C\""));
  /* Not an access node; an empty memlet. */
  WeirNode *t = weir_state_add_tasklet(g, s, "t", NULL, NULL, "");
  assert_false(weir_access_set_data(t, "A"));
  WeirMemlet *empty =
      weir_state_add_memlet(g, s, a, NULL, t->id, NULL, NULL, NULL, NULL);
  assert_non_null(empty);
  assert_false(weir_memlet_set_data(empty, "A"));
  assert_null(empty->data);
}

static void test_set_shape(void **state) {
  (void)state;
  guint a, b, mid;
  g_autoptr(WeirGraph) g = copy_program(&a, &b, &mid);
  WeirContainer *c = weir_graph_container(g, "C");
  /* Non-row-major strides are reset with the new shape. */
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  g_autoptr(WeirExpr) four = weir_expr_const(4);
  WeirExpr *strides[] = {one, four};
  weir_container_set_strides(c, strides);
  g_autoptr(WeirExpr) n = weir_expr_symbol("N");
  g_autoptr(WeirExpr) three = weir_expr_const(3);
  WeirExpr *shape[] = {three, n, four};
  weir_graph_add_symbol(g, "N");
  assert_true(weir_container_set_shape(c, 3, shape));
  assert_int_equal(c->shape->len, 3);
  assert_int_equal(c->strides->len, 3);
  g_autofree char *s0 = weir_expr_to_string(g_ptr_array_index(c->strides, 0));
  g_autofree char *s1 = weir_expr_to_string(g_ptr_array_index(c->strides, 1));
  g_autofree char *s2 = weir_expr_to_string(g_ptr_array_index(c->strides, 2));
  assert_string_equal(s0, "4*N");
  assert_string_equal(s1, "4");
  assert_string_equal(s2, "1");
  /* A scalar. */
  assert_true(weir_container_set_shape(c, 0, NULL));
  assert_int_equal(c->shape->len, 0);
  assert_int_equal(c->strides->len, 0);
  assert_true(weir_graph_validate(g, NULL));
  /* Constant data keeps its shape. */
  WeirContainer *k =
      weir_graph_add_array(g, "K", WEIR_DTYPE_U8, "2", TRUE, NULL);
  g_autoptr(GBytes) bytes = g_bytes_new("ab", 2);
  weir_container_set_initial(k, bytes);
  assert_false(weir_container_set_shape(k, 1, shape));
  assert_int_equal(k->shape->len, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_retarget),
      cmocka_unit_test(test_set_shape),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
