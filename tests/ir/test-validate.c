/* test-validate.c — the validator.
 *
 * Valid programs (built with the builder, equivalent to the JSON samples) give
 * no problem.  Then one test per rule: start from a small valid graph, break
 * exactly one thing, and check that weir_graph_check() reports a problem
 * whose element and message name the right ids and names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-validate.h"

/* ------------------------------------------------------------------ helpers */

static const char *const NONE[] = {NULL};

static void dump(GPtrArray *problems) {
  for (guint i = 0; i < problems->len; i++) {
    const WeirProblem *p = g_ptr_array_index(problems, i);
    print_message("  %s: %s\n", p->element, p->message);
  }
}

static void assert_valid(WeirGraph *g) {
  g_autoptr(GPtrArray) problems = weir_graph_check(g);
  if (problems->len)
    dump(problems);
  assert_int_equal(problems->len, 0);
  g_autoptr(GError) error = NULL;
  assert_true(weir_graph_validate(g, &error));
  assert_null(error);
}

/* The problem whose element contains `element` and whose message contains
 * `message`; fails the test (listing every problem) when there is none. */
static const WeirProblem *find(GPtrArray *problems, const char *element,
                               const char *message) {
  for (guint i = 0; i < problems->len; i++) {
    const WeirProblem *p = g_ptr_array_index(problems, i);
    if (strstr(p->element, element) && strstr(p->message, message))
      return p;
  }
  print_message("no problem '%s: ...%s...' among %u:\n", element, message,
                problems->len);
  dump(problems);
  fail();
  return NULL;
}

/* Checks g and asserts one problem as above; returns its ids in *out. */
static void expect(WeirGraph *g, const char *element, const char *message,
                   WeirProblem *out) {
  g_autoptr(GPtrArray) problems = weir_graph_check(g);
  const WeirProblem *p = find(problems, element, message);
  if (out) {
    *out = *p;
    out->element = out->message = NULL;
  }
}

static WeirMemlet *memlet(WeirGraph *g, WeirState *s, guint src, const char *sc,
                          guint dst, const char *dc, const char *data,
                          const char *subset) {
  g_autoptr(GError) error = NULL;
  WeirMemlet *m =
      weir_state_add_memlet(g, s, src, sc, dst, dc, data, subset, &error);
  assert_non_null(m);
  return m;
}

static void array(WeirGraph *g, const char *name, WeirDType dtype,
                  const char *shape, gboolean transient) {
  g_autoptr(GError) error = NULL;
  assert_non_null(
      weir_graph_add_array(g, name, dtype, shape, transient, &error));
}

/* vector_add: C[i] = A[i] + B[i] for i in [0, size). */
typedef struct {
  WeirGraph *g;
  WeirState *s;
  WeirNode *a, *b, *entry, *t, *exit, *c;
  WeirMemlet *in_a, *in_b, *ta, *tb, *tc, *out_c;
} Vadd;

static void vadd_build(Vadd *v, const char *size) {
  g_autoptr(GError) error = NULL;
  memset(v, 0, sizeof *v);
  v->g = weir_graph_new("vector_add");
  if (g_ascii_isalpha(size[0]))
    weir_graph_add_symbol(v->g, size);
  array(v->g, "A", WEIR_DTYPE_F32, size, FALSE);
  array(v->g, "B", WEIR_DTYPE_F32, size, FALSE);
  array(v->g, "C", WEIR_DTYPE_F32, size, FALSE);
  v->s = weir_graph_add_state(v->g, "main");
  v->a = weir_state_add_access(v->g, v->s, "A");
  v->b = weir_state_add_access(v->g, v->s, "B");
  g_autofree char *range = g_strdup_printf("0:%s", size);
  const char *params[] = {"i", NULL}, *ranges[] = {range, NULL};
  v->entry = weir_state_add_map(v->g, v->s, "add", params, ranges,
                                WEIR_SCHEDULE_PARALLEL, &v->exit, &error);
  assert_non_null(v->entry);
  weir_node_add_in_conn(v->entry, "IN_A");
  weir_node_add_in_conn(v->entry, "IN_B");
  weir_node_add_out_conn(v->entry, "OUT_A");
  weir_node_add_out_conn(v->entry, "OUT_B");
  weir_node_add_in_conn(v->exit, "IN_C");
  weir_node_add_out_conn(v->exit, "OUT_C");
  const char *ins[] = {"a", "b", NULL}, *outs[] = {"c", NULL};
  v->t = weir_state_add_tasklet(v->g, v->s, "add", ins, outs, "c = a + b");
  v->c = weir_state_add_access(v->g, v->s, "C");
  guint e = v->entry->id, x = v->exit->id;
  v->in_a = memlet(v->g, v->s, v->a->id, NULL, e, "IN_A", "A", range);
  v->in_b = memlet(v->g, v->s, v->b->id, NULL, e, "IN_B", "B", range);
  v->ta = memlet(v->g, v->s, e, "OUT_A", v->t->id, "a", "A", "i");
  v->tb = memlet(v->g, v->s, e, "OUT_B", v->t->id, "b", "B", "i");
  v->tc = memlet(v->g, v->s, v->t->id, "c", x, "IN_C", "C", "i");
  v->out_c = memlet(v->g, v->s, x, "OUT_C", v->c->id, NULL, "C", range);
}

/* Replaces the subset of a memlet. */
static void set_subset(WeirMemlet *m, const char *text) {
  g_autoptr(GError) error = NULL;
  WeirSubset *s = weir_subset_parse(text, &error);
  assert_non_null(s);
  weir_subset_free(m->subset);
  m->subset = s;
}

/* --------------------------------------------------------- valid programs */

static void test_valid_vector_add(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  assert_valid(v.g);
  weir_graph_free(v.g);
  vadd_build(&v, "10");
  assert_valid(v.g);
  weir_graph_free(v.g);
}

/* samples/matmul.json: an init state with an empty memlet and an
 * input-less tasklet, then C += A @ B with wcr. */
static void test_valid_matmul(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_new("matmul");
  array(g, "A", WEIR_DTYPE_F32, "64, 32", FALSE);
  array(g, "B", WEIR_DTYPE_F32, "32, 48", FALSE);
  array(g, "C", WEIR_DTYPE_F32, "64, 48", FALSE);
  WeirState *init = weir_graph_add_state(g, "init");
  const char *p2[] = {"i", "j", NULL}, *r2[] = {"0:64", "0:48", NULL};
  WeirNode *x1;
  WeirNode *e1 = weir_state_add_map(g, init, "init", p2, r2,
                                    WEIR_SCHEDULE_PARALLEL, &x1, &error);
  weir_node_add_in_conn(x1, "IN_C");
  weir_node_add_out_conn(x1, "OUT_C");
  const char *c_out[] = {"c", NULL};
  WeirNode *zero =
      weir_state_add_tasklet(g, init, "zero", NONE, c_out, "c = 0");
  WeirNode *c1 = weir_state_add_access(g, init, "C");
  memlet(g, init, e1->id, NULL, zero->id, NULL, NULL, NULL);
  memlet(g, init, zero->id, "c", x1->id, "IN_C", "C", "i, j");
  memlet(g, init, x1->id, "OUT_C", c1->id, NULL, "C", "0:64, 0:48");

  WeirState *mul = weir_graph_add_state(g, "multiply");
  WeirNode *a = weir_state_add_access(g, mul, "A");
  WeirNode *b = weir_state_add_access(g, mul, "B");
  const char *p3[] = {"i", "j", "k", NULL};
  const char *r3[] = {"0:64", "0:48", "0:32", NULL};
  WeirNode *x2;
  WeirNode *e2 = weir_state_add_map(g, mul, "matmul", p3, r3,
                                    WEIR_SCHEDULE_PARALLEL, &x2, &error);
  weir_node_add_in_conn(e2, "IN_A");
  weir_node_add_in_conn(e2, "IN_B");
  weir_node_add_out_conn(e2, "OUT_A");
  weir_node_add_out_conn(e2, "OUT_B");
  weir_node_add_in_conn(x2, "IN_C");
  weir_node_add_out_conn(x2, "OUT_C");
  const char *ab[] = {"a", "b", NULL};
  WeirNode *mac = weir_state_add_tasklet(g, mul, "mac", ab, c_out, "c = a * b");
  WeirNode *c2 = weir_state_add_access(g, mul, "C");
  memlet(g, mul, a->id, NULL, e2->id, "IN_A", "A", "0:64, 0:32");
  memlet(g, mul, b->id, NULL, e2->id, "IN_B", "B", "0:32, 0:48");
  memlet(g, mul, e2->id, "OUT_A", mac->id, "a", "A", "i, k");
  memlet(g, mul, e2->id, "OUT_B", mac->id, "b", "B", "k, j");
  memlet(g, mul, mac->id, "c", x2->id, "IN_C", "C", "i, j")->wcr = WEIR_WCR_SUM;
  memlet(g, mul, x2->id, "OUT_C", c2->id, NULL, "C", "0:64, 0:48")->wcr =
      WEIR_WCR_SUM;
  assert_non_null(weir_graph_add_transition(g, init->id, mul->id, NULL, NULL));
  assert_valid(g);
}

/* samples/loop.json: a counted loop over states with scalars. */
static WeirGraph *build_loop(WeirTransition **guard_out) {
  WeirGraph *g = weir_graph_new("axpb_loop");
  weir_graph_add_symbol(g, "T");
  weir_graph_add_symbol(g, "t");
  array(g, "x", WEIR_DTYPE_F32, "256", FALSE);
  array(g, "a", WEIR_DTYPE_F32, "", FALSE);
  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *guard = weir_graph_add_state(g, "guard");
  WeirState *body = weir_graph_add_state(g, "body");
  WeirState *done = weir_graph_add_state(g, "done");
  WeirNode *x = weir_state_add_access(g, body, "x");
  WeirNode *av = weir_state_add_access(g, body, "a");
  const char *p[] = {"i", NULL}, *r[] = {"0:256", NULL};
  WeirNode *exit;
  WeirNode *entry = weir_state_add_map(g, body, "axpb", p, r,
                                       WEIR_SCHEDULE_PARALLEL, &exit, NULL);
  weir_node_add_in_conn(entry, "IN_x");
  weir_node_add_in_conn(entry, "IN_a");
  weir_node_add_out_conn(entry, "OUT_x");
  weir_node_add_out_conn(entry, "OUT_a");
  weir_node_add_in_conn(exit, "IN_x");
  weir_node_add_out_conn(exit, "OUT_x");
  const char *ins[] = {"xi", "av", NULL}, *outs[] = {"xo", NULL};
  WeirNode *t = weir_state_add_tasklet(g, body, "axpb", ins, outs,
                                       "xo = xi * av + f32(t)");
  WeirNode *x2 = weir_state_add_access(g, body, "x");
  memlet(g, body, x->id, NULL, entry->id, "IN_x", "x", "0:256");
  g_autoptr(WeirExpr) n256 = weir_expr_const(256);
  weir_memlet_set_volume(
      memlet(g, body, av->id, NULL, entry->id, "IN_a", "a", ""), n256);
  memlet(g, body, entry->id, "OUT_x", t->id, "xi", "x", "i");
  memlet(g, body, entry->id, "OUT_a", t->id, "av", "a", "");
  memlet(g, body, t->id, "xo", exit->id, "IN_x", "x", "i");
  memlet(g, body, exit->id, "OUT_x", x2->id, NULL, "x", "0:256");
  WeirTransition *tr =
      weir_graph_add_transition(g, init->id, guard->id, NULL, NULL);
  assert_true(weir_transition_add_assignment(tr, "t", "0", NULL));
  WeirTransition *gt =
      weir_graph_add_transition(g, guard->id, body->id, "t < T", NULL);
  tr = weir_graph_add_transition(g, body->id, guard->id, NULL, NULL);
  assert_true(weir_transition_add_assignment(tr, "t", "t + 1", NULL));
  assert_non_null(
      weir_graph_add_transition(g, guard->id, done->id, "t >= T", NULL));
  if (guard_out)
    *guard_out = gt;
  return g;
}

static void test_valid_loop(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_loop(NULL);
  assert_valid(g);
  /* Validation is repeatable (type checking refills the caches). */
  assert_valid(g);
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  assert_valid(copy);
}

/* samples/softmax.json in small: a row reduction into a transient with wcr
 * max, an ordering (empty) memlet from an access node into a map entry, and
 * a copy between two access nodes. */
static void test_valid_reduction_and_copy(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("rowmax");
  array(g, "X", WEIR_DTYPE_F32, "32, 64", FALSE);
  array(g, "mx", WEIR_DTYPE_F32, "32", TRUE);
  array(g, "Y", WEIR_DTYPE_F32, "32", FALSE);
  array(g, "Z", WEIR_DTYPE_F32, "4, 8", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = weir_state_add_access(g, s, "X");
  WeirNode *first = weir_state_add_access(g, s, "Y");
  const char *p[] = {"i", "j", NULL}, *r[] = {"0:32", "0:64", NULL};
  WeirNode *exit;
  WeirNode *entry = weir_state_add_map(g, s, "rowmax", p, r,
                                       WEIR_SCHEDULE_PARALLEL, &exit, NULL);
  weir_node_add_in_conn(entry, "IN_X");
  weir_node_add_out_conn(entry, "OUT_X");
  weir_node_add_in_conn(exit, "IN_mx");
  weir_node_add_out_conn(exit, "OUT_mx");
  const char *ins[] = {"x", NULL}, *outs[] = {"m", NULL};
  WeirNode *t = weir_state_add_tasklet(g, s, "max", ins, outs, "m = x");
  WeirNode *mx = weir_state_add_access(g, s, "mx");
  WeirNode *y = weir_state_add_access(g, s, "Y");
  WeirNode *z = weir_state_add_access(g, s, "Z");
  memlet(g, s, first->id, NULL, entry->id, NULL, NULL, NULL);
  memlet(g, s, x->id, NULL, entry->id, "IN_X", "X", "0:32, 0:64");
  memlet(g, s, entry->id, "OUT_X", t->id, "x", "X", "i, j");
  memlet(g, s, t->id, "m", exit->id, "IN_mx", "mx", "i")->wcr = WEIR_WCR_MAX;
  WeirMemlet *out =
      memlet(g, s, exit->id, "OUT_mx", mx->id, NULL, "mx", "0:32");
  out->wcr = WEIR_WCR_MAX;
  g_autoptr(WeirExpr) n2048 = weir_expr_const(2048);
  weir_memlet_set_volume(out, n2048);
  memlet(g, s, mx->id, NULL, y->id, NULL, "mx", "0:32");
  WeirMemlet *cp = memlet(g, s, mx->id, NULL, z->id, NULL, "mx", "0:32");
  assert_true(weir_memlet_set_other(cp, "0:4, 0:8", NULL));
  assert_valid(g);
}

/* A nested program y = 2 * x over M elements, bound to the outer N. */
static WeirGraph *build_inner(void) {
  WeirGraph *in = weir_graph_new("scale");
  weir_graph_add_symbol(in, "M");
  array(in, "x", WEIR_DTYPE_F32, "M", FALSE);
  array(in, "y", WEIR_DTYPE_F32, "M", FALSE);
  array(in, "tmp", WEIR_DTYPE_F32, "M", TRUE);
  WeirState *s = weir_graph_add_state(in, "main");
  WeirNode *x = weir_state_add_access(in, s, "x");
  WeirNode *y = weir_state_add_access(in, s, "y");
  const char *ins[] = {"v", NULL}, *outs[] = {"w", NULL};
  WeirNode *t =
      weir_state_add_tasklet(in, s, "scale", ins, outs, "w[0] = 2 * v[0]");
  memlet(in, s, x->id, NULL, t->id, "v", "x", "0:M");
  memlet(in, s, t->id, "w", y->id, NULL, "y", "0:M");
  return in;
}

static WeirGraph *build_outer(WeirNode **nested_out) {
  WeirGraph *g = weir_graph_new("outer");
  weir_graph_add_symbol(g, "N");
  array(g, "A", WEIR_DTYPE_F32, "N", FALSE);
  array(g, "B", WEIR_DTYPE_F32, "N", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *b = weir_state_add_access(g, s, "B");
  const char *ins[] = {"x", NULL}, *outs[] = {"y", NULL};
  WeirNode *n = weir_state_add_nested(g, s, "scale", build_inner(), ins, outs);
  assert_true(weir_node_bind_symbol(n, "M", "N", NULL));
  memlet(g, s, a->id, NULL, n->id, "x", "A", "0:N");
  memlet(g, s, n->id, "y", b->id, NULL, "B", "0:N");
  if (nested_out)
    *nested_out = n;
  return g;
}

static void test_valid_nested(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_outer(NULL);
  assert_valid(g);
}

/* -------------------------------------------------------------- containers */

static void test_container_name_not_identifier(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  WeirContainer *c = weir_graph_container(v.g, "B");
  g_hash_table_remove(v.g->by_name, "B");
  g_free(c->name);
  c->name = g_strdup("2B");
  g_hash_table_insert(v.g->by_name, c->name, c);
  expect(v.g, "container '2B'", "'2B' is not an identifier", NULL);
  weir_graph_free(v.g);
}

static void test_container_strides_rank(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  WeirContainer *c = weir_graph_container(v.g, "A");
  g_ptr_array_add(c->strides, weir_expr_const(1));
  expect(v.g, "container 'A'", "2 strides for a shape of rank 1", NULL);
  weir_graph_free(v.g);
}

static void test_container_undeclared_shape_symbol(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  array(v.g, "T", WEIR_DTYPE_F64, "N, K", TRUE);
  expect(v.g, "container 'T'", "unknown symbol 'K' in shape dimension 1", NULL);
  weir_graph_free(v.g);
}

static void test_container_initial_size(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "10");
  g_autoptr(GBytes) bytes = g_bytes_new_static("0123456789ab", 12);
  weir_container_set_initial(weir_graph_container(v.g, "A"), bytes);
  expect(v.g, "container 'A'", "initial data has 12 bytes, expected 40", NULL);
  weir_graph_free(v.g);

  /* Symbolic shapes cannot have constant data. */
  vadd_build(&v, "N");
  weir_container_set_initial(weir_graph_container(v.g, "B"), bytes);
  expect(v.g, "container 'B'", "initial data needs a concrete shape", NULL);
  weir_graph_free(v.g);

  /* The right size is fine. */
  vadd_build(&v, "3");
  weir_container_set_initial(weir_graph_container(v.g, "A"), bytes);
  assert_valid(v.g);
  weir_graph_free(v.g);
}

/* ----------------------------------------------------------------- program */

static void test_program_start_state(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  weir_graph_set_start(v.g, 999);
  expect(v.g, "program", "start state 999 does not exist", NULL);
  weir_graph_free(v.g);

  g_autoptr(WeirGraph) empty = weir_graph_new("empty");
  expect(empty, "program", "no states", NULL);
}

static void test_transition_missing_state(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_loop(NULL);
  WeirTransition *t = weir_graph_add_transition(g, 5, 77, NULL, NULL);
  g_autofree char *element = g_strdup_printf("transition %u (5 -> 77)", t->id);
  WeirProblem p;
  expect(g, element, "destination state 77 does not exist", &p);
  assert_int_equal(p.transition, t->id);
  assert_int_equal(p.state, 0);
}

static void test_transition_undeclared_assignment(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_loop(NULL);
  WeirTransition *t = g_ptr_array_index(g->transitions, 0);
  assert_true(weir_transition_add_assignment(t, "u", "t + 1", NULL));
  assert_true(weir_transition_add_assignment(t, "t", "q * 2", NULL));
  g_autofree char *element =
      g_strdup_printf("transition %u (%u -> %u)", t->id, t->src, t->dst);
  expect(g, element, "assignment to undeclared symbol 'u'", NULL);
  expect(g, element, "unknown symbol 'q' in assignment t = 2*q", NULL);
}

static void test_transition_condition_type_error(void **state) {
  (void)state;
  WeirTransition *guard;
  g_autoptr(WeirGraph) g = build_loop(&guard);
  g_autofree char *element = g_strdup_printf("transition %u (%u -> %u)",
                                             guard->id, guard->src, guard->dst);
  /* A floating condition. */
  g_autoptr(WeirCode) cond = weir_code_parse_condition("t * 0.5", NULL);
  assert_non_null(cond);
  weir_code_free(guard->condition);
  guard->condition = g_steal_pointer(&cond);
  expect(g, element, "condition must be bool or integer", NULL);
  /* An undeclared name. */
  weir_code_free(guard->condition);
  guard->condition = weir_code_parse_condition("t < K", NULL);
  expect(g, element, "unknown name 'K'", NULL);
  /* Text that does not parse (as a loader would leave it). */
  g_clear_pointer(&guard->condition, weir_code_free);
  g_free(guard->condition_text);
  guard->condition_text = g_strdup("t < ");
  expect(g, element, "condition 't < ' does not parse", NULL);
}

/* -------------------------------------------------------------- memlets */

static void test_bounds_concrete(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "10");
  set_subset(v.in_a, "0:11");
  g_autofree char *element = weir_describe_memlet(v.s, v.in_a);
  WeirProblem p;
  expect(v.g, element,
         "subset '0:11' on 'A' is out of bounds in dimension 0 (reaches 11, "
         "size 10)",
         &p);
  assert_int_equal(p.edge, v.in_a->id);
  assert_int_equal(p.state, v.s->id);
  set_subset(v.in_a, "-2:10");
  expect(v.g, element, "out of bounds in dimension 0 (starts at -2)", NULL);
  weir_graph_free(v.g);
}

static void test_bounds_map_parameter(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  set_subset(v.ta, "i + 1");
  g_autofree char *element = weir_describe_memlet(v.s, v.ta);
  expect(v.g, element,
         "subset 'i + 1' on 'A' is out of bounds in dimension 0 (reaches N + "
         "1, size N)",
         NULL);
  /* Decreasing in i: the smallest i gives the largest end. */
  set_subset(v.ta, "N - i");
  expect(v.g, element, "(reaches N + 1, size N)", NULL);
  set_subset(v.ta, "N - 1 - i");
  assert_valid(v.g);
  set_subset(v.ta, "N - 2 - i");
  expect(v.g, element, "(starts at -1)", NULL);
  /* Not decidable (i*i is not linear in i): no problem. */
  set_subset(v.ta, "i*i");
  assert_valid(v.g);
  weir_graph_free(v.g);

  /* A concrete map with a step: i in 0, 4, 8 on 10 elements is fine, i + 3
   * reaches 12. */
  vadd_build(&v, "10");
  WeirRange *r = &g_array_index(v.entry->map->ranges, WeirRange, 0);
  weir_expr_unref(r->step);
  r->step = weir_expr_const(4);
  assert_valid(v.g);
  set_subset(v.tc, "i + 3");
  g_autofree char *tc = weir_describe_memlet(v.s, v.tc);
  expect(v.g, tc, "(reaches 12, size 10)", NULL);
  weir_graph_free(v.g);
}

static void test_subset_step_positive(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  set_subset(v.in_b, "0:N:0");
  g_autofree char *element = weir_describe_memlet(v.s, v.in_b);
  expect(v.g, element, "has step 0 in dimension 0", NULL);
  weir_graph_free(v.g);
}

static void test_unknown_symbol_in_subset(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  array(v.g, "D", WEIR_DTYPE_F32, "N, N", FALSE);
  WeirNode *d = weir_state_add_access(v.g, v.s, "D");
  weir_node_add_in_conn(v.exit, "IN_D");
  weir_node_add_out_conn(v.exit, "OUT_D");
  const char *outs[] = {"o", NULL};
  WeirNode *t = weir_state_add_tasklet(v.g, v.s, "t2", NONE, outs, "o = 1");
  memlet(v.g, v.s, v.entry->id, NULL, t->id, NULL, NULL, NULL);
  WeirMemlet *m = memlet(v.g, v.s, t->id, "o", v.exit->id, "IN_D", "D", "i, k");
  memlet(v.g, v.s, v.exit->id, "OUT_D", d->id, NULL, "D", "0:N, 0:N");
  g_autofree char *element = weir_describe_memlet(v.s, m);
  expect(v.g, element, "unknown symbol 'k' in subset 'i, k'", NULL);
  /* Outside the map, i is unknown too. */
  set_subset(v.out_c, "i");
  g_autofree char *out = weir_describe_memlet(v.s, v.out_c);
  expect(v.g, out, "unknown symbol 'i' in subset 'i'", NULL);
  weir_graph_free(v.g);
}

static void test_subset_wrong_rank(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  set_subset(v.in_a, "0:N, 0");
  g_autofree char *element = weir_describe_memlet(v.s, v.in_a);
  expect(v.g, element, "subset '0:N, 0' has rank 2 but 'A' has rank 1", NULL);
  weir_graph_free(v.g);
}

static void test_unknown_container(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  weir_graph_remove_container(v.g, "B");
  g_autofree char *element = weir_describe_memlet(v.s, v.in_b);
  expect(v.g, element, "unknown container 'B'", NULL);
  g_autofree char *node = weir_describe_node(v.s, v.b);
  expect(v.g, node, "access node names unknown container 'B'", NULL);
  weir_graph_free(v.g);
}

static void test_volume_unknown_symbol(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  g_autoptr(WeirExpr) vol = weir_expr_parse("N*P", NULL);
  weir_memlet_set_volume(v.in_a, vol);
  g_autofree char *element = weir_describe_memlet(v.s, v.in_a);
  expect(v.g, element, "unknown symbol 'P' in volume", NULL);
  weir_graph_free(v.g);
}

static void test_access_container_mismatch(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  g_free(v.out_c->data);
  v.out_c->data = g_strdup("B");
  g_autofree char *element = weir_describe_memlet(v.s, v.out_c);
  g_autofree char *msg =
      g_strdup_printf("memlet names 'B' but node %u accesses 'C'", v.c->id);
  expect(v.g, element, msg, NULL);
  weir_graph_free(v.g);
}

static void test_copy_rules(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("copy");
  array(g, "A", WEIR_DTYPE_F32, "10", FALSE);
  array(g, "B", WEIR_DTYPE_F32, "10", FALSE);
  array(g, "M", WEIR_DTYPE_F32, "2, 5", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *b = weir_state_add_access(g, s, "B");
  WeirNode *m = weir_state_add_access(g, s, "M");
  WeirMemlet *ab = memlet(g, s, a->id, NULL, b->id, NULL, "A", "0:5");
  WeirMemlet *am = memlet(g, s, a->id, NULL, m->id, NULL, "A", "0:10");
  assert_true(weir_memlet_set_other(am, "0:2, 0:5", NULL));
  assert_valid(g);
  g_autofree char *e_ab = weir_describe_memlet(s, ab);
  g_autofree char *e_am = weir_describe_memlet(s, am);

  /* Mismatched volumes. */
  assert_true(weir_memlet_set_other(ab, "0:4", NULL));
  expect(g, e_ab, "copy moves 5 elements of 'A' but 4 elements of 'B'", NULL);
  assert_true(weir_memlet_set_other(ab, NULL, NULL));
  /* other with the wrong rank. */
  assert_true(weir_memlet_set_other(am, "0:10", NULL));
  expect(g, e_am, "other subset '0:10' has rank 1 but 'M' has rank 2", NULL);
  /* Without other, the subset applies to both ends. */
  assert_true(weir_memlet_set_other(am, NULL, NULL));
  expect(g, e_am, "subset '0:10' has rank 1 but 'M' has rank 2", NULL);
  assert_true(weir_memlet_set_other(am, "0:2, 0:5", NULL));
  /* data must name one of the two ends. */
  g_free(ab->data);
  ab->data = g_strdup("M");
  set_subset(ab, "0:1, 0:5");
  g_autofree char *e_ab2 = weir_describe_memlet(s, ab);
  expect(g, e_ab2, "copy names 'M', which is neither 'A' nor 'B'", NULL);
}

static void test_wcr_on_read(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  /* Writes accumulate: tasklet -> exit -> access node. */
  v.tc->wcr = WEIR_WCR_SUM;
  v.out_c->wcr = WEIR_WCR_SUM;
  assert_valid(v.g);
  v.in_a->wcr = WEIR_WCR_MAX;
  g_autofree char *in_a = weir_describe_memlet(v.s, v.in_a);
  expect(v.g, in_a, "wcr 'max' on a memlet that reads", NULL);
  weir_graph_free(v.g);
}

static void test_dangling_memlet_end(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  v.out_c->dst = 999;
  g_autofree char *element = weir_describe_memlet(v.s, v.out_c);
  expect(v.g, element, "destination node 999 is not in the state", NULL);
  /* weir_state_scopes refuses such a state instead of crashing. */
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirScopes) scopes = weir_state_scopes(v.s, &error);
  assert_null(scopes);
  assert_non_null(strstr(error->message, "not in the state"));
  weir_graph_free(v.g);
}

/* ------------------------------------------------------------ connectors */

static void test_dangling_connector(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  g_free(v.tc->src_conn);
  v.tc->src_conn = g_strdup("q");
  g_autofree char *element = weir_describe_memlet(v.s, v.tc);
  g_autofree char *msg = g_strdup_printf(
      "output connector 'q' does not exist on node %u (tasklet 'add')",
      v.t->id);
  expect(v.g, element, msg, NULL);
  /* The tasklet's own output is now unconnected. */
  g_autofree char *node = weir_describe_node(v.s, v.t);
  expect(v.g, node, "output connector 'c' has no memlet", NULL);
  weir_graph_free(v.g);
}

static void test_missing_connector_on_memlet(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  g_clear_pointer(&v.tb->dst_conn, g_free);
  g_autofree char *element = weir_describe_memlet(v.s, v.tb);
  g_autofree char *msg = g_strdup_printf(
      "memlet enters node %u (tasklet 'add') without a connector", v.t->id);
  expect(v.g, element, msg, NULL);
  weir_graph_free(v.g);
}

static void test_tasklet_input_without_memlet(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  guint id = v.tb->id;
  assert_true(weir_state_remove_memlet(v.s, id));
  g_autofree char *node = weir_describe_node(v.s, v.t);
  WeirProblem p;
  expect(v.g, node, "input connector 'b' has no memlet", &p);
  assert_int_equal(p.node, v.t->id);
  weir_graph_free(v.g);
}

static void test_tasklet_input_two_memlets(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  memlet(v.g, v.s, v.entry->id, "OUT_A", v.t->id, "a", "A", "i");
  g_autofree char *node = weir_describe_node(v.s, v.t);
  expect(v.g, node, "input connector 'a' has 2 memlets", NULL);
  weir_graph_free(v.g);
}

static void test_empty_memlet_with_connector(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  weir_node_add_in_conn(v.t, "z");
  WeirMemlet *m = memlet(v.g, v.s, v.entry->id, NULL, v.t->id, "z", NULL, NULL);
  g_autofree char *element = weir_describe_memlet(v.s, m);
  expect(v.g, element, "empty memlet uses connector 'z'", NULL);
  weir_graph_free(v.g);
}

static void test_duplicate_connector(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  g_ptr_array_add(v.t->in_conns, g_strdup("a"));
  g_autofree char *node = weir_describe_node(v.s, v.t);
  expect(v.g, node, "input connector 'a' is declared twice", NULL);
  weir_graph_free(v.g);
}

/* ------------------------------------------------------------------ maps */

static void test_map_entry_without_exit(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  assert_true(weir_state_remove_node(v.s, v.exit->id));
  g_autofree char *node = weir_describe_node(v.s, v.entry);
  WeirProblem p;
  expect(v.g, node, "map entry has no exit", &p);
  assert_int_equal(p.node, v.entry->id);
  weir_graph_free(v.g);
}

static void test_map_exit_without_entry(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  v.exit->entry = 999;
  g_autofree char *node = weir_describe_node(v.s, v.exit);
  expect(v.g, node, "map exit refers to entry 999, which is not in the state",
         NULL);
  v.exit->entry = v.t->id;
  g_autofree char *msg = g_strdup_printf(
      "map exit refers to node %u (tasklet 'add'), which is not a map entry",
      v.t->id);
  expect(v.g, node, msg, NULL);
  weir_graph_free(v.g);
}

static void test_map_two_exits(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  const char *p[] = {"j", NULL}, *r[] = {"0:N", NULL};
  WeirNode *x2;
  WeirNode *e2 = weir_state_add_map(v.g, v.s, "other", p, r,
                                    WEIR_SCHEDULE_SEQUENTIAL, &x2, NULL);
  x2->entry = v.entry->id;
  g_autofree char *node = weir_describe_node(v.s, v.entry);
  g_autofree char *msg = g_strdup_printf("map entry has 2 exits (nodes %u, %u)",
                                         v.exit->id, x2->id);
  expect(v.g, node, msg, NULL);
  g_autofree char *other = weir_describe_node(v.s, e2);
  expect(v.g, other, "map entry has no exit", NULL);
  weir_graph_free(v.g);
}

static void test_map_connector_pairs(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  weir_node_add_in_conn(v.entry, "IN_Q");
  weir_node_add_out_conn(v.exit, "OUT_R");
  weir_node_add_out_conn(v.exit, "bogus");
  g_autofree char *entry = weir_describe_node(v.s, v.entry);
  g_autofree char *exit = weir_describe_node(v.s, v.exit);
  expect(v.g, entry, "connector 'IN_Q' has no matching 'OUT_Q'", NULL);
  expect(v.g, entry, "input connector 'IN_Q' has 0 memlets", NULL);
  expect(v.g, exit, "connector 'OUT_R' has no matching 'IN_R'", NULL);
  expect(v.g, exit, "output connector 'bogus' is not named OUT_x", NULL);
  weir_graph_free(v.g);
}

static void test_map_container_mismatch(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  g_free(v.ta->data);
  v.ta->data = g_strdup("B");
  g_autofree char *entry = weir_describe_node(v.s, v.entry);
  g_autofree char *msg = g_strdup_printf(
      "memlet %u leaves 'OUT_A' with 'B' but memlet %u brings 'A' into 'IN_A'",
      v.ta->id, v.in_a->id);
  WeirProblem p;
  expect(v.g, entry, msg, &p);
  assert_int_equal(p.edge, v.ta->id);
  assert_int_equal(p.node, v.entry->id);
  weir_graph_free(v.g);
}

static void test_map_parameters(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  WeirMap *m = v.entry->map;
  g_ptr_array_add(m->params, g_strdup("i"));
  WeirRange r = {weir_expr_const(0), weir_expr_symbol("K"),
                 weir_expr_const(-1)};
  g_array_append_val(m->ranges, r);
  g_autofree char *entry = weir_describe_node(v.s, v.entry);
  expect(v.g, entry, "map parameter 'i' appears twice", NULL);
  expect(v.g, entry, "unknown symbol 'K' in range '0:K:-1'", NULL);
  expect(v.g, entry, "has step -1; steps must be positive", NULL);
  weir_graph_free(v.g);

  vadd_build(&v, "N");
  g_free(g_ptr_array_index(v.entry->map->params, 0));
  g_ptr_array_index(v.entry->map->params, 0) = g_strdup("N");
  g_autofree char *e2 = weir_describe_node(v.s, v.entry);
  expect(v.g, e2, "map parameter 'N' shadows a symbol", NULL);
  weir_graph_free(v.g);
}

static void test_cycle(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  memlet(v.g, v.s, v.c->id, NULL, v.a->id, NULL, "C", "0:N");
  g_autofree char *element = g_strdup_printf("state %u 'main'", v.s->id);
  WeirProblem p;
  expect(v.g, element, "the dataflow graph has a cycle", &p);
  assert_int_equal(p.state, v.s->id);
  assert_int_equal(p.node, 0);
  weir_graph_free(v.g);
}

static void test_two_scopes(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  const char *p[] = {"j", NULL}, *r[] = {"0:N", NULL};
  WeirNode *x2;
  WeirNode *e2 = weir_state_add_map(v.g, v.s, "other", p, r,
                                    WEIR_SCHEDULE_SEQUENTIAL, &x2, NULL);
  memlet(v.g, v.s, e2->id, NULL, v.t->id, NULL, NULL, NULL);
  memlet(v.g, v.s, v.t->id, NULL, x2->id, NULL, NULL, NULL);
  g_autofree char *element = g_strdup_printf("state %u 'main'", v.s->id);
  g_autofree char *msg =
      g_strdup_printf("node %u 'add' is reached from two scopes", v.t->id);
  expect(v.g, element, msg, NULL);
  weir_graph_free(v.g);
}

/* ---------------------------------------------------------------- tasklets */

static void test_tasklet_parse_error(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  const char *ins[] = {"x", NULL}, *outs[] = {"y", NULL};
  WeirNode *t = weir_state_add_tasklet(v.g, v.s, "bad", ins, outs, "y = x +");
  assert_null(t->code);
  g_autofree char *node = weir_describe_node(v.s, t);
  WeirProblem p;
  expect(v.g, node, "tasklet body does not parse: line 1", &p);
  assert_int_equal(p.node, t->id);
  g_autoptr(GError) error = NULL;
  assert_false(weir_tasklet_check(v.g, v.s, t, &error));
  assert_non_null(strstr(error->message, "does not parse"));
  weir_graph_free(v.g);
}

static void test_tasklet_type_error(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  /* a covers 4 elements (rank 1, indexed); a float index is an error. */
  set_subset(v.ta, "0:4");
  set_subset(v.in_a, "0:N");
  weir_code_free(v.t->code);
  g_free(v.t->code_text);
  v.t->code_text = g_strdup("c = a[0.5] + b");
  v.t->code = weir_code_parse(v.t->code_text, NULL);
  g_autofree char *node = weir_describe_node(v.s, v.t);
  expect(v.g, node, "must be an integer (found f64)", NULL);
  g_autoptr(GError) error = NULL;
  assert_false(weir_tasklet_check(v.g, v.s, v.t, &error));
  assert_non_null(strstr(error->message, node));
  /* A scalar connector (subset of one element) cannot be indexed. */
  weir_code_free(v.t->code);
  v.t->code = weir_code_parse("c = a[0] + b", NULL);
  set_subset(v.ta, "i");
  expect(v.g, node, "scalar input connector 'a' cannot be indexed", NULL);
  /* The map parameter is an integer symbol inside the scope. */
  set_subset(v.ta, "0:N");
  weir_code_free(v.t->code);
  v.t->code = weir_code_parse("c = a[i] + b", NULL);
  assert_valid(v.g);
  g_clear_error(&error);
  assert_true(weir_tasklet_check(v.g, v.s, v.t, &error));
  weir_graph_free(v.g);
}

static void test_tasklet_output_never_assigned(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  weir_code_free(v.t->code);
  v.t->code = weir_code_parse("s = a + b", NULL);
  g_autofree char *node = weir_describe_node(v.s, v.t);
  expect(v.g, node, "output connector 'c' is never assigned", NULL);
  weir_graph_free(v.g);
}

/* --------------------------------------------------------- library, nested */

static void test_library_without_op(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  WeirNode *lib = weir_state_add_library(v.g, v.s, "gemm", "", NONE, NONE);
  g_autofree char *node = weir_describe_node(v.s, lib);
  expect(v.g, node, "library node has no op", NULL);
  weir_graph_free(v.g);
}

static void test_library_connectors(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  const char *ins[] = {"X", NULL}, *outs[] = {"Y", NULL};
  WeirNode *lib = weir_state_add_library(v.g, v.s, NULL, "Relu", ins, outs);
  g_autofree char *node = weir_describe_node(v.s, lib);
  expect(v.g, node, "input connector 'X' has no memlet", NULL);
  expect(v.g, node, "output connector 'Y' has no memlet", NULL);
  weir_graph_free(v.g);
}

static void test_nested_errors(void **state) {
  (void)state;
  WeirNode *n;
  g_autoptr(WeirGraph) g = build_outer(&n);
  WeirState *s;
  assert_non_null(weir_graph_node(g, n->id, &s));
  g_autofree char *node = weir_describe_node(s, n);

  /* An error inside the nested program, prefixed with the node. */
  WeirState *inner = g_ptr_array_index(n->nested->states, 0);
  WeirMemlet *im = g_ptr_array_index(inner->edges, 0);
  set_subset(im, "0:M + 1");
  g_autofree char *inner_elem = weir_describe_memlet(inner, im);
  g_autofree char *full = g_strdup_printf("%s, %s", node, inner_elem);
  WeirProblem p;
  expect(g, full, "out of bounds in dimension 0 (reaches M + 1, size M)", &p);
  assert_int_equal(p.node, n->id);
  assert_int_equal(p.state, s->id);
  set_subset(im, "0:M");
  assert_valid(g);

  /* Bindings: unknown nested symbol, unknown outer symbol. */
  assert_true(weir_node_bind_symbol(n, "Q", "1", NULL));
  assert_true(weir_node_bind_symbol(n, "M", "N + K", NULL));
  expect(g, node, "binds 'Q', which is not a symbol of the nested program",
         NULL);
  expect(g, node, "unknown symbol 'K' in binding M = K + N", NULL);
  g_ptr_array_set_size(n->symbol_map, 0);

  /* Connectors name argument containers; every argument is connected. */
  g_free(g_ptr_array_index(n->in_conns, 0));
  g_ptr_array_index(n->in_conns, 0) = g_strdup("tmp");
  WeirMemlet *in = g_ptr_array_index(s->edges, 0);
  g_free(in->dst_conn);
  in->dst_conn = g_strdup("tmp");
  expect(g, node, "connector 'tmp' names a transient container", NULL);
  expect(g, node,
         "argument container 'x' of the nested program is not "
         "connected",
         NULL);
  g_free(g_ptr_array_index(n->in_conns, 0));
  g_ptr_array_index(n->in_conns, 0) = g_strdup("nope");
  expect(g, node, "connector 'nope' does not name a container", NULL);
}

/* -------------------------------------------------------- several at once */

static void test_all_problems_in_order(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  /* program level: a bad container and a bad transition */
  array(v.g, "T", WEIR_DTYPE_F32, "K", TRUE);
  WeirTransition *t = weir_graph_add_transition(v.g, v.s->id, 88, NULL, NULL);
  /* state: a memlet out of bounds, a wcr on a read, a bad tasklet */
  set_subset(v.in_b, "0:N + 2");
  v.in_a->wcr = WEIR_WCR_SUM;
  weir_code_free(v.t->code);
  v.t->code = weir_code_parse("c = a + b + q", NULL);
  WeirState *s2 = weir_graph_add_state(v.g, "second");
  weir_state_add_access(v.g, s2, "Z");

  g_autoptr(GPtrArray) problems = weir_graph_check(v.g);
  dump(problems);
  assert_int_equal(problems->len, 6);
  const WeirProblem *p0 = g_ptr_array_index(problems, 0);
  const WeirProblem *p1 = g_ptr_array_index(problems, 1);
  const WeirProblem *p2 = g_ptr_array_index(problems, 2);
  const WeirProblem *p3 = g_ptr_array_index(problems, 3);
  const WeirProblem *p4 = g_ptr_array_index(problems, 4);
  const WeirProblem *p5 = g_ptr_array_index(problems, 5);
  assert_string_equal(p0->element, "container 'T'");
  assert_int_equal(p1->transition, t->id);
  assert_int_equal(p2->node, v.t->id);
  assert_non_null(strstr(p2->message, "unknown name 'q'"));
  assert_int_equal(p3->edge, v.in_a->id);
  assert_non_null(strstr(p3->message, "wcr"));
  assert_int_equal(p4->edge, v.in_b->id);
  assert_non_null(strstr(p4->message, "reaches N + 2, size N"));
  assert_int_equal(p5->state, s2->id);
  assert_non_null(strstr(p5->message, "unknown container 'Z'"));

  /* The same order twice, and in validate's message. */
  g_autoptr(GPtrArray) again = weir_graph_check(v.g);
  assert_int_equal(again->len, problems->len);
  for (guint i = 0; i < again->len; i++) {
    const WeirProblem *a = g_ptr_array_index(again, i);
    const WeirProblem *b = g_ptr_array_index(problems, i);
    assert_string_equal(a->element, b->element);
    assert_string_equal(a->message, b->message);
  }
  g_autoptr(GError) error = NULL;
  assert_false(weir_graph_validate(v.g, &error));
  assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_INVALID));
  assert_true(g_str_has_prefix(error->message, "6 problems:\ncontainer 'T': "
                                               "unknown symbol 'K'"));
  g_autofree char *last = g_strdup_printf("\n%s: %s", p5->element, p5->message);
  assert_true(g_str_has_suffix(error->message, last));
  weir_graph_free(v.g);
}

static void test_validate_one_problem(void **state) {
  (void)state;
  Vadd v;
  vadd_build(&v, "N");
  weir_graph_set_start(v.g, 500);
  g_autoptr(GError) error = NULL;
  assert_false(weir_graph_validate(v.g, &error));
  assert_string_equal(error->message,
                      "1 problem:\nprogram: start state 500 does not exist");
  weir_graph_free(v.g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_vector_add),
      cmocka_unit_test(test_valid_matmul),
      cmocka_unit_test(test_valid_loop),
      cmocka_unit_test(test_valid_reduction_and_copy),
      cmocka_unit_test(test_valid_nested),
      cmocka_unit_test(test_container_name_not_identifier),
      cmocka_unit_test(test_container_strides_rank),
      cmocka_unit_test(test_container_undeclared_shape_symbol),
      cmocka_unit_test(test_container_initial_size),
      cmocka_unit_test(test_program_start_state),
      cmocka_unit_test(test_transition_missing_state),
      cmocka_unit_test(test_transition_undeclared_assignment),
      cmocka_unit_test(test_transition_condition_type_error),
      cmocka_unit_test(test_bounds_concrete),
      cmocka_unit_test(test_bounds_map_parameter),
      cmocka_unit_test(test_subset_step_positive),
      cmocka_unit_test(test_unknown_symbol_in_subset),
      cmocka_unit_test(test_subset_wrong_rank),
      cmocka_unit_test(test_unknown_container),
      cmocka_unit_test(test_volume_unknown_symbol),
      cmocka_unit_test(test_access_container_mismatch),
      cmocka_unit_test(test_copy_rules),
      cmocka_unit_test(test_wcr_on_read),
      cmocka_unit_test(test_dangling_memlet_end),
      cmocka_unit_test(test_dangling_connector),
      cmocka_unit_test(test_missing_connector_on_memlet),
      cmocka_unit_test(test_tasklet_input_without_memlet),
      cmocka_unit_test(test_tasklet_input_two_memlets),
      cmocka_unit_test(test_empty_memlet_with_connector),
      cmocka_unit_test(test_duplicate_connector),
      cmocka_unit_test(test_map_entry_without_exit),
      cmocka_unit_test(test_map_exit_without_entry),
      cmocka_unit_test(test_map_two_exits),
      cmocka_unit_test(test_map_connector_pairs),
      cmocka_unit_test(test_map_container_mismatch),
      cmocka_unit_test(test_map_parameters),
      cmocka_unit_test(test_cycle),
      cmocka_unit_test(test_two_scopes),
      cmocka_unit_test(test_tasklet_parse_error),
      cmocka_unit_test(test_tasklet_type_error),
      cmocka_unit_test(test_tasklet_output_never_assigned),
      cmocka_unit_test(test_library_without_op),
      cmocka_unit_test(test_library_connectors),
      cmocka_unit_test(test_nested_errors),
      cmocka_unit_test(test_all_problems_in_order),
      cmocka_unit_test(test_validate_one_problem),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
