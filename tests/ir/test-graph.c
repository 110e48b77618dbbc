/* test-graph.c — graph builder, ids, copies, subsets, scopes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "weir-graph.h"

static const char *const none[] = {NULL};

/* A map over i in 0:N reading A[i] into a tasklet writing B[i]. */
static WeirGraph *build_map_graph(guint *ids) {
  WeirGraph *g = weir_graph_new("t");
  weir_graph_add_symbol(g, "N");
  assert_non_null(
      weir_graph_add_array(g, "A", WEIR_DTYPE_F32, "N", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "B", WEIR_DTYPE_F32, "N", FALSE, NULL));
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *exit = NULL;
  const char *params[] = {"i", NULL}, *ranges[] = {"0:N", NULL};
  WeirNode *entry = weir_state_add_map(g, s, "m", params, ranges,
                                       WEIR_SCHEDULE_PARALLEL, &exit, NULL);
  assert_non_null(entry);
  weir_node_add_in_conn(entry, "IN_A");
  weir_node_add_out_conn(entry, "OUT_A");
  weir_node_add_in_conn(exit, "IN_B");
  weir_node_add_out_conn(exit, "OUT_B");
  const char *ins[] = {"x", NULL}, *outs[] = {"y", NULL};
  WeirNode *t = weir_state_add_tasklet(g, s, "double", ins, outs, "y = 2 * x");
  WeirNode *b = weir_state_add_access(g, s, "B");
  assert_non_null(weir_state_add_memlet(g, s, a->id, NULL, entry->id, "IN_A",
                                        "A", "0:N", NULL));
  assert_non_null(weir_state_add_memlet(g, s, entry->id, "OUT_A", t->id, "x",
                                        "A", "i", NULL));
  assert_non_null(weir_state_add_memlet(g, s, t->id, "y", exit->id, "IN_B", "B",
                                        "i", NULL));
  assert_non_null(weir_state_add_memlet(g, s, exit->id, "OUT_B", b->id, NULL,
                                        "B", "0:N", NULL));
  if (ids) {
    ids[0] = a->id;
    ids[1] = entry->id;
    ids[2] = exit->id;
    ids[3] = t->id;
    ids[4] = b->id;
  }
  return g;
}

static void test_ids_unique_and_sorted(void **state) {
  (void)state;
  guint ids[5];
  g_autoptr(WeirGraph) g = build_map_graph(ids);
  WeirState *s = g_ptr_array_index(g->states, 0);
  /* Containers 1-2, state 3, then nodes in creation order. */
  assert_int_equal(s->id, 3);
  assert_int_equal(ids[0], 4);
  assert_int_equal(ids[1] + 1, ids[2]); /* exit right after entry */
  guint last = 0;
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    assert_true(n->id > last);
    last = n->id;
  }
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    assert_true(m->id > last);
    last = m->id;
  }
  /* Removal never lets an id come back. */
  assert_true(weir_state_remove_node(s, ids[4]));
  WeirNode *n = weir_state_add_access(g, s, "B");
  assert_true(n->id > last);
  assert_null(weir_state_node(s, ids[4]));
  assert_ptr_equal(weir_state_node(s, n->id), n);
}

static void test_remove_node_drops_edges(void **state) {
  (void)state;
  guint ids[5];
  g_autoptr(WeirGraph) g = build_map_graph(ids);
  WeirState *s = g_ptr_array_index(g->states, 0);
  assert_int_equal(s->edges->len, 4);
  assert_true(weir_state_remove_node(s, ids[3])); /* the tasklet */
  assert_int_equal(s->edges->len, 2);
  assert_false(weir_state_remove_node(s, ids[3]));
  g_autoptr(GPtrArray) in = weir_state_in_edges(s, ids[2]);
  assert_int_equal(in->len, 0);
}

static void test_container_defaults(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("c");
  g_autoptr(GError) error = NULL;
  WeirContainer *c =
      weir_graph_add_array(g, "X", WEIR_DTYPE_F64, "N, 3, M", TRUE, &error);
  assert_non_null(c);
  assert_int_equal(c->shape->len, 3);
  g_autofree char *s0 = weir_expr_to_string(g_ptr_array_index(c->strides, 0));
  g_autofree char *s1 = weir_expr_to_string(g_ptr_array_index(c->strides, 1));
  g_autofree char *s2 = weir_expr_to_string(g_ptr_array_index(c->strides, 2));
  assert_string_equal(s0, "3*M");
  assert_string_equal(s1, "M");
  assert_string_equal(s2, "1");
  g_autoptr(WeirExpr) bytes = weir_container_bytes(c);
  g_autofree char *b = weir_expr_to_string(bytes);
  assert_string_equal(b, "24*M*N");
  /* Duplicate and non-identifier names are refused with a message. */
  assert_null(weir_graph_add_array(g, "X", WEIR_DTYPE_F32, "", FALSE, &error));
  assert_non_null(strstr(error->message, "already exists"));
  g_clear_error(&error);
  assert_null(weir_graph_add_array(g, "9x", WEIR_DTYPE_F32, "", FALSE, &error));
  assert_non_null(strstr(error->message, "not an identifier"));
  g_clear_error(&error);
  assert_null(
      weir_graph_add_array(g, "Y", WEIR_DTYPE_F32, "N +", FALSE, &error));
  assert_non_null(strstr(error->message, "container 'Y'"));
  /* Scalars have rank 0 and volume 1. */
  WeirContainer *s =
      weir_graph_add_array(g, "s", WEIR_DTYPE_I32, "", FALSE, NULL);
  assert_int_equal(s->shape->len, 0);
  g_autoptr(WeirExpr) v = weir_container_volume(s);
  gint64 one = 0;
  assert_true(weir_expr_is_const(v, &one));
  assert_int_equal(one, 1);
  assert_true(weir_graph_remove_container(g, "s"));
  assert_null(weir_graph_container(g, "s"));
}

static void test_subsets(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirSubset) s = weir_subset_parse("i, 0:N, k:k+8:2", &error);
  assert_non_null(s);
  assert_int_equal(s->rank, 3);
  g_autofree char *text = weir_subset_to_string(s);
  assert_string_equal(text, "i, 0:N, k:k + 8:2");
  g_autoptr(WeirExpr) vol = weir_subset_volume(s);
  g_autofree char *vt = weir_expr_to_string(vol);
  assert_string_equal(vt, "4*N");
  g_autoptr(WeirSubset) again = weir_subset_parse(text, NULL);
  assert_true(weir_subset_equal(s, again));
  /* Substitution of a map parameter. */
  g_autoptr(GHashTable) map = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(WeirExpr) five = weir_expr_const(5);
  g_hash_table_insert(map, "k", five);
  g_autoptr(WeirSubset) sub = weir_subset_substitute(s, map);
  g_autofree char *st = weir_subset_to_string(sub);
  assert_string_equal(st, "i, 0:N, 5:13:2");
  /* Scalar subset. */
  g_autoptr(WeirSubset) scalar = weir_subset_parse("", NULL);
  assert_int_equal(scalar->rank, 0);
  /* Points: every range one element (a scalar subset is one). */
  assert_true(weir_subset_is_point(scalar));
  assert_false(weir_subset_is_point(s));
  g_autoptr(WeirSubset) point = weir_subset_parse("i, 3, k + 1:k + 2", NULL);
  assert_true(weir_subset_is_point(point));
  g_autoptr(WeirSubset) two = weir_subset_parse("i, 0:2", NULL);
  assert_false(weir_subset_is_point(two));
  /* Errors name the dimension. */
  assert_null(weir_subset_parse("0:N, 1:2:3:4", &error));
  assert_non_null(strstr(error->message, "dimension 1"));
  g_clear_error(&error);
  assert_null(weir_subset_parse("0:(N", &error));
  assert_non_null(error);
}

static void test_range_size(void **state) {
  (void)state;
  struct {
    const char *range;
    const char *size;
  } cases[] = {
      {"0:N", "N"},     {"2:10", "8"},    {"0:10:3", "4"},
      {"5:2", "0"},     {"i", "1"},       {"0:N:2", "(N + 1) // 2"},
      {"1:N + 1", "N"}, {"0:2*N:2", "N"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    WeirRange r;
    assert_true(weir_range_parse(cases[i].range, &r, NULL));
    g_autoptr(WeirExpr) size = weir_range_size(&r);
    g_autofree char *text = weir_expr_to_string(size);
    if (g_strcmp0(text, cases[i].size) != 0)
      fail_msg("size of %s: got %s, want %s", cases[i].range, text,
               cases[i].size);
    weir_range_clear(&r);
  }
}

static void test_copy_is_deep_and_equal(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_map_graph(NULL);
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirNode *lib = weir_state_add_library(g, s, "conv", "Conv", none, none);
  gint64 pads[] = {1, 1, 1, 1};
  weir_node_set_attr_ints(lib, "pads", pads, 4);
  weir_node_set_attr_float(lib, "alpha", 0.5);
  weir_node_set_attr_string(lib, "auto_pad", "NOTSET");
  weir_node_set_attr_int(lib, "group", 2);
  weir_node_set_attr_int(lib, "group", 3); /* replaces */
  assert_int_equal(lib->attrs->len, 4);
  /* Attributes are kept sorted by name. */
  assert_string_equal(((WeirAttr *)g_ptr_array_index(lib->attrs, 0))->name,
                      "alpha");
  assert_int_equal(weir_node_attr(lib, "group")->i, 3);
  WeirState *s2 = weir_graph_add_state(g, "next");
  WeirTransition *t =
      weir_graph_add_transition(g, s->id, s2->id, "N > 0", NULL);
  assert_non_null(t);
  assert_true(weir_transition_add_assignment(t, "N", "N - 1", NULL));

  g_autoptr(WeirGraph) c = weir_graph_copy(g);
  assert_int_equal(c->next_id, g->next_id);
  assert_int_equal(c->states->len, 2);
  WeirState *cs = g_ptr_array_index(c->states, 0);
  assert_int_equal(cs->nodes->len, s->nodes->len);
  WeirNode *clib = weir_state_node(cs, lib->id);
  assert_non_null(clib);
  assert_ptr_not_equal(clib, lib);
  assert_int_equal(weir_node_attr(clib, "pads")->ints->len, 4);
  /* Changing the copy leaves the original alone. */
  weir_node_set_attr_int(clib, "group", 7);
  assert_int_equal(weir_node_attr(lib, "group")->i, 3);
  WeirTransition *ct = g_ptr_array_index(c->transitions, 0);
  assert_string_equal(ct->condition_text, "N > 0");
  assert_non_null(ct->condition);
  assert_string_equal(g_ptr_array_index(ct->assign_names, 0), "N");
}

static void test_scopes(void **state) {
  (void)state;
  guint ids[5];
  g_autoptr(WeirGraph) g = build_map_graph(ids);
  WeirState *s = g_ptr_array_index(g->states, 0);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, &error);
  assert_non_null(sc);
  assert_int_equal(sc->order->len, 5);
  assert_int_equal(weir_scopes_parent(sc, ids[0]), 0);
  assert_int_equal(weir_scopes_parent(sc, ids[1]), 0);
  assert_int_equal(weir_scopes_parent(sc, ids[3]), ids[1]);
  assert_int_equal(weir_scopes_parent(sc, ids[2]), 0);
  assert_int_equal(weir_scopes_parent(sc, ids[4]), 0);
  /* Topological: the access node A first, B last. */
  assert_int_equal(g_array_index(sc->order, guint, 0), ids[0]);
  assert_int_equal(g_array_index(sc->order, guint, 4), ids[4]);
  assert_ptr_equal(weir_state_map_exit(s, weir_state_node(s, ids[1])),
                   weir_state_node(s, ids[2]));

  /* A cycle is reported. */
  assert_non_null(weir_state_add_memlet(g, s, ids[4], NULL, ids[0], NULL, NULL,
                                        NULL, NULL));
  assert_null(weir_state_scopes(s, &error));
  assert_non_null(strstr(error->message, "cycle"));
}

static void test_nested_map_scopes(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("nest");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *oexit = NULL, *iexit = NULL;
  const char *p1[] = {"i", NULL}, *r1[] = {"0:4", NULL};
  const char *p2[] = {"j", NULL}, *r2[] = {"0:i", NULL};
  WeirNode *outer = weir_state_add_map(g, s, "outer", p1, r1,
                                       WEIR_SCHEDULE_SEQUENTIAL, &oexit, NULL);
  WeirNode *inner = weir_state_add_map(g, s, "inner", p2, r2,
                                       WEIR_SCHEDULE_SIMD, &iexit, NULL);
  WeirNode *t = weir_state_add_tasklet(g, s, "t", NULL, NULL, "");
  weir_state_add_memlet(g, s, outer->id, NULL, inner->id, NULL, NULL, NULL,
                        NULL);
  weir_state_add_memlet(g, s, inner->id, NULL, t->id, NULL, NULL, NULL, NULL);
  weir_state_add_memlet(g, s, t->id, NULL, iexit->id, NULL, NULL, NULL, NULL);
  weir_state_add_memlet(g, s, iexit->id, NULL, oexit->id, NULL, NULL, NULL,
                        NULL);
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, NULL);
  assert_non_null(sc);
  assert_int_equal(weir_scopes_parent(sc, inner->id), outer->id);
  assert_int_equal(weir_scopes_parent(sc, t->id), inner->id);
  assert_int_equal(weir_scopes_parent(sc, iexit->id), outer->id);
  assert_int_equal(weir_scopes_parent(sc, oexit->id), 0);
}

static void test_bad_builder_input(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("bad");
  WeirState *s = weir_graph_add_state(g, "main");
  g_autoptr(GError) error = NULL;
  const char *p[] = {"i", "j", NULL}, *r[] = {"0:4", NULL};
  assert_null(weir_state_add_map(g, s, "m", p, r, WEIR_SCHEDULE_SEQUENTIAL,
                                 NULL, &error));
  assert_non_null(strstr(error->message, "2 parameters but 1 ranges"));
  g_clear_error(&error);
  assert_null(
      weir_state_add_memlet(g, s, 99, NULL, 100, NULL, "A", "0", &error));
  assert_non_null(strstr(error->message, "not in the state"));
  g_clear_error(&error);
  assert_null(weir_graph_add_transition(g, s->id, s->id, "t <", &error));
  assert_non_null(strstr(error->message, "transition condition"));
  g_clear_error(&error);
  WeirTransition *t = weir_graph_add_transition(g, s->id, s->id, NULL, NULL);
  assert_false(weir_transition_add_assignment(t, "t", "t +", &error));
  assert_non_null(strstr(error->message, "t = t +"));
  /* An unparsable tasklet is kept, for the validator to report. */
  WeirNode *bad = weir_state_add_tasklet(g, s, "bad", NULL, NULL, "y = = 1");
  assert_null(bad->code);
  assert_string_equal(bad->code_text, "y = = 1");
}

static void test_names_tables(void **state) {
  (void)state;
  for (guint k = 0; k < WEIR_NODE_KIND_COUNT; k++) {
    WeirNodeKind back;
    assert_true(weir_node_kind_from_name(weir_node_kind_name(k), &back));
    assert_int_equal(back, k);
  }
  for (guint k = 0; k < WEIR_WCR_COUNT; k++) {
    WeirWcr back;
    assert_true(weir_wcr_from_name(weir_wcr_name(k), &back));
    assert_int_equal(back, k);
  }
  for (guint k = 0; k < WEIR_SCHEDULE_COUNT; k++) {
    WeirSchedule back;
    assert_true(weir_schedule_from_name(weir_schedule_name(k), &back));
    assert_int_equal(back, k);
  }
  WeirNodeKind kind;
  assert_false(weir_node_kind_from_name("Access", &kind));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ids_unique_and_sorted),
      cmocka_unit_test(test_remove_node_drops_edges),
      cmocka_unit_test(test_container_defaults),
      cmocka_unit_test(test_subsets),
      cmocka_unit_test(test_range_size),
      cmocka_unit_test(test_copy_is_deep_and_equal),
      cmocka_unit_test(test_scopes),
      cmocka_unit_test(test_nested_map_scopes),
      cmocka_unit_test(test_bad_builder_input),
      cmocka_unit_test(test_names_tables),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
