/* test-graph-edit-tier1.c — the graph editing helpers added for the tier-1
 * transformations: tasklet code replacement, connector removal, memlet
 * rerouting and subsets, map dimensions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "weir-graph.h"
#include "weir-validate.h"

typedef struct {
  WeirGraph *g;
  WeirState *s;
  WeirNode *a, *entry, *exit, *t, *b;
  WeirMemlet *in, *inner_in, *inner_out, *out;
} Fixture;

/* B[i] = 2 * A[i] for i in 0:N. */
static void build(Fixture *f) {
  f->g = weir_graph_new("t");
  weir_graph_add_symbol(f->g, "N");
  assert_non_null(
      weir_graph_add_array(f->g, "A", WEIR_DTYPE_F32, "N", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(f->g, "B", WEIR_DTYPE_F32, "N", FALSE, NULL));
  f->s = weir_graph_add_state(f->g, "main");
  f->a = weir_state_add_access(f->g, f->s, "A");
  const char *params[] = {"i", NULL}, *ranges[] = {"0:N", NULL};
  f->entry = weir_state_add_map(f->g, f->s, "m", params, ranges,
                                WEIR_SCHEDULE_SEQUENTIAL, &f->exit, NULL);
  weir_node_add_in_conn(f->entry, "IN_A");
  weir_node_add_out_conn(f->entry, "OUT_A");
  weir_node_add_in_conn(f->exit, "IN_B");
  weir_node_add_out_conn(f->exit, "OUT_B");
  const char *ins[] = {"x", NULL}, *outs[] = {"y", NULL};
  f->t = weir_state_add_tasklet(f->g, f->s, "double", ins, outs, "y = 2 * x");
  f->b = weir_state_add_access(f->g, f->s, "B");
  f->in = weir_state_add_memlet(f->g, f->s, f->a->id, NULL, f->entry->id,
                                "IN_A", "A", "0:N", NULL);
  f->inner_in = weir_state_add_memlet(f->g, f->s, f->entry->id, "OUT_A",
                                      f->t->id, "x", "A", "i", NULL);
  f->inner_out = weir_state_add_memlet(f->g, f->s, f->t->id, "y", f->exit->id,
                                       "IN_B", "B", "i", NULL);
  f->out = weir_state_add_memlet(f->g, f->s, f->exit->id, "OUT_B", f->b->id,
                                 NULL, "B", "0:N", NULL);
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(f->g, &err))
    fail_msg("%s", err->message);
}

static void test_set_code(void **state) {
  (void)state;
  Fixture f;
  build(&f);
  weir_tasklet_set_code(f.t, "y = x + x");
  assert_string_equal(f.t->code_text, "y = x + x");
  assert_non_null(f.t->code);
  assert_true(weir_graph_validate(f.g, NULL));
  /* A parse error is kept for the validator. */
  weir_tasklet_set_code(f.t, "y = x +");
  assert_null(f.t->code);
  assert_false(weir_graph_validate(f.g, NULL));
  weir_graph_free(f.g);
}

static void test_remove_conn(void **state) {
  (void)state;
  Fixture f;
  build(&f);
  assert_true(weir_node_remove_in_conn(f.entry, "IN_A"));
  assert_false(weir_node_has_in_conn(f.entry, "IN_A"));
  assert_false(weir_node_remove_in_conn(f.entry, "IN_A"));
  assert_true(weir_node_has_out_conn(f.entry, "OUT_A"));
  assert_true(weir_node_remove_out_conn(f.entry, "OUT_A"));
  assert_false(weir_node_remove_out_conn(f.entry, "nope"));
  assert_int_equal(f.entry->in_conns->len, 0);
  assert_int_equal(f.entry->out_conns->len, 0);
  weir_graph_free(f.g);
}

/* Rerouting keeps the memlet's id and contents: here the map is bypassed by
 * a second map in front of it. */
static void test_reroute(void **state) {
  (void)state;
  Fixture f;
  build(&f);
  guint id = f.in->id;
  const char *params[] = {"o", NULL}, *ranges[] = {"0:1", NULL};
  WeirNode *oexit = NULL;
  WeirNode *outer = weir_state_add_map(f.g, f.s, "outer", params, ranges,
                                       WEIR_SCHEDULE_SEQUENTIAL, &oexit, NULL);
  weir_node_add_in_conn(outer, "IN_A");
  weir_node_add_out_conn(outer, "OUT_A");
  weir_node_add_in_conn(oexit, "IN_B");
  weir_node_add_out_conn(oexit, "OUT_B");
  assert_false(weir_memlet_set_dst(f.s, f.in, 9999, "IN_A"));
  assert_true(weir_memlet_set_dst(f.s, f.in, outer->id, "IN_A"));
  assert_int_equal(f.in->id, id);
  assert_int_equal(f.in->dst, outer->id);
  assert_string_equal(f.in->dst_conn, "IN_A");
  assert_string_equal(f.in->data, "A");
  assert_non_null(weir_state_add_memlet(f.g, f.s, outer->id, "OUT_A",
                                        f.entry->id, "IN_A", "A", "0:N", NULL));
  assert_true(weir_memlet_set_src(f.s, f.out, oexit->id, "OUT_B"));
  assert_string_equal(f.out->src_conn, "OUT_B");
  assert_non_null(weir_state_add_memlet(f.g, f.s, f.exit->id, "OUT_B",
                                        oexit->id, "IN_B", "B", "0:N", NULL));
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(f.g, &err))
    fail_msg("%s", err->message);
  g_autoptr(WeirScopes) sc = weir_state_scopes(f.s, NULL);
  assert_int_equal(weir_scopes_parent(sc, f.entry->id), outer->id);
  assert_int_equal(weir_scopes_parent(sc, f.t->id), f.entry->id);
  /* Clearing a connector. */
  assert_true(weir_memlet_set_src(f.s, f.out, oexit->id, NULL));
  assert_null(f.out->src_conn);
  weir_graph_free(f.g);
}

static void test_set_subset(void **state) {
  (void)state;
  Fixture f;
  build(&f);
  g_autoptr(WeirSubset) sub = weir_subset_parse("0:N:2", NULL);
  weir_memlet_set_subset(f.in, sub);
  g_autofree char *text = weir_subset_to_string(f.in->subset);
  assert_string_equal(text, "0:N:2");
  assert_true(f.in->subset != sub);
  /* the volume is the caller's business */
  g_autofree char *vol = weir_expr_to_string(f.in->volume);
  assert_string_equal(vol, "N");
  weir_graph_free(f.g);
}

static void test_map_dims(void **state) {
  (void)state;
  Fixture f;
  build(&f);
  WeirMap *m = f.entry->map;
  WeirRange r[2];
  assert_true(weir_range_parse("0:N:4", &r[0], NULL));
  assert_true(weir_range_parse("0:4", &r[1], NULL));
  const char *params[] = {"io", "ii"};
  const gint64 tile[] = {0, 2};
  m->unroll = 3;
  weir_map_set_dims(m, 2, params, r, tile);
  weir_range_clear(&r[0]);
  weir_range_clear(&r[1]);
  assert_int_equal(m->params->len, 2);
  assert_string_equal(g_ptr_array_index(m->params, 1), "ii");
  g_autofree char *t0 =
      weir_range_to_string(&g_array_index(m->ranges, WeirRange, 0));
  assert_string_equal(t0, "0:N:4");
  assert_int_equal(m->tile->len, 2);
  assert_int_equal(g_array_index(m->tile, gint64, 1), 2);
  assert_int_equal(m->unroll, 3);
  /* Arguments may come from the map itself (a permutation). */
  const char *swapped[] = {g_ptr_array_index(m->params, 1),
                           g_ptr_array_index(m->params, 0)};
  WeirRange sr[2] = {g_array_index(m->ranges, WeirRange, 1),
                     g_array_index(m->ranges, WeirRange, 0)};
  weir_map_set_dims(m, 2, swapped, sr, NULL);
  assert_string_equal(g_ptr_array_index(m->params, 0), "ii");
  g_autofree char *t1 =
      weir_range_to_string(&g_array_index(m->ranges, WeirRange, 1));
  assert_string_equal(t1, "0:N:4");
  assert_int_equal(m->tile->len, 0);
  weir_graph_free(f.g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_set_code), cmocka_unit_test(test_remove_conn),
      cmocka_unit_test(test_reroute),  cmocka_unit_test(test_set_subset),
      cmocka_unit_test(test_map_dims),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
