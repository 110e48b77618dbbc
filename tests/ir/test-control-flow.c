/* test-control-flow.c — the structured control flow of state machines.
 *
 * weir_control_structure() on samples/loop.json (checked through
 * weir_control_flow_to_string, with the sample's ids) and on state graphs
 * built here: branches that join, branches without an else, nested for
 * loops, a while loop, an endless loop left by a break, simultaneous
 * assignments, and graphs that have no structured form (a loop entered at
 * two states, a loop left to two places), which take the goto fallback.
 * The hand-built trees are compared as text written by this file from the
 * tree's fields, with states and transitions named by their labels
 * ("guard", "guard>body"), so the expectations do not depend on ids.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-control-flow.h"
#include "weir-json.h"
#include "weir-validate.h"

/* ---------------------------------------------------------------- helpers */

/* A state; busy ones get an access node, so they have dataflow. */
static WeirState *add_state(WeirGraph *g, const char *label, gboolean busy) {
  WeirState *s = weir_graph_add_state(g, label);
  if (busy)
    weir_state_add_access(g, s, "x");
  return s;
}

/* A transition with an optional condition and up to two assignments
 * ("sym", "value" pairs, NULL-terminated). */
static WeirTransition *edge(WeirGraph *g, const WeirState *a,
                            const WeirState *b, const char *cond, ...) {
  g_autoptr(GError) err = NULL;
  WeirTransition *t = weir_graph_add_transition(g, a->id, b->id, cond, &err);
  if (!t)
    fail_msg("transition: %s", err->message);
  va_list ap;
  va_start(ap, cond);
  for (const char *sym; (sym = va_arg(ap, const char *));) {
    const char *value = va_arg(ap, const char *);
    if (!weir_transition_add_assignment(t, sym, value, &err))
      fail_msg("assignment: %s", err->message);
  }
  va_end(ap);
  return t;
}

static WeirGraph *program(void) {
  WeirGraph *g = weir_graph_new("flow");
  g_autoptr(GError) err = NULL;
  if (!weir_graph_add_array(g, "x", WEIR_DTYPE_I64, "", FALSE, &err))
    fail_msg("container: %s", err->message);
  weir_graph_add_symbol(g, "N");
  weir_graph_add_symbol(g, "M");
  weir_graph_add_symbol(g, "i");
  weir_graph_add_symbol(g, "j");
  return g;
}

static const char *state_name(const WeirGraph *g, guint id) {
  const WeirState *s = weir_graph_state(g, id);
  assert_non_null(s);
  return s->label;
}

static void append_transition(GString *out, const WeirGraph *g, guint id) {
  const WeirTransition *t = weir_graph_transition(g, id);
  assert_non_null(t);
  g_string_append_printf(out, "%s>%s", state_name(g, t->src),
                         state_name(g, t->dst));
}

static void append_cond(GString *out, const WeirGraph *g, WeirControlCond c) {
  assert_int_not_equal(c.transition, 0);
  if (c.negate)
    g_string_append_c(out, '!');
  append_transition(out, g, c.transition);
}

static void indent(GString *out, guint depth) {
  for (guint d = 0; d < depth; d++)
    g_string_append(out, "  ");
}

/* The tree from its fields, with labels for ids. */
static void render(GString *out, const WeirGraph *g, const WeirControlNode *n,
                   guint depth) {
  if (n->kind == WEIR_CONTROL_SEQUENCE) {
    assert_non_null(n->items);
    for (guint i = 0; i < n->items->len; i++)
      render(out, g, g_ptr_array_index(n->items, i), depth);
    return;
  }
  indent(out, depth);
  switch (n->kind) {
  case WEIR_CONTROL_STATE:
    g_string_append_printf(out, "state %s\n", state_name(g, n->state));
    break;
  case WEIR_CONTROL_ASSIGN:
    g_string_append(out, "assign ");
    append_transition(out, g, n->transition);
    g_string_append_c(out, '\n');
    break;
  case WEIR_CONTROL_IF:
    for (guint i = 0; i < n->items->len; i++) {
      const WeirControlArm *a = g_ptr_array_index(n->items, i);
      if (i > 0)
        indent(out, depth);
      if (a->cond.transition == 0) {
        g_string_append(out, "else\n");
      } else {
        g_string_append(out, i ? "elif " : "if ");
        append_cond(out, g, a->cond);
        g_string_append_c(out, '\n');
      }
      assert_int_equal(a->body->kind, WEIR_CONTROL_SEQUENCE);
      render(out, g, a->body, depth + 1);
    }
    break;
  case WEIR_CONTROL_LOOP:
    g_string_append_printf(out, "%s %s",
                           n->loop == WEIR_CONTROL_LOOP_FOR     ? "for"
                           : n->loop == WEIR_CONTROL_LOOP_WHILE ? "while"
                                                                : "forever",
                           state_name(g, n->state));
    if (n->init) {
      g_string_append(out, " init ");
      append_transition(out, g, n->init);
    }
    if (n->loop != WEIR_CONTROL_LOOP_FOREVER) {
      g_string_append(out, " cond ");
      append_cond(out, g, n->cond);
    }
    if (n->loop == WEIR_CONTROL_LOOP_FOR) {
      g_string_append(out, " update ");
      append_transition(out, g, n->update);
    } else {
      assert_int_equal(n->update, 0);
    }
    g_string_append_c(out, '\n');
    assert_int_equal(n->body->kind, WEIR_CONTROL_SEQUENCE);
    render(out, g, n->body, depth + 1);
    break;
  case WEIR_CONTROL_BREAK:
    g_string_append(out, "break\n");
    break;
  case WEIR_CONTROL_CONTINUE:
    g_string_append(out, "continue\n");
    break;
  case WEIR_CONTROL_END:
    g_string_append(out, "end\n");
    break;
  case WEIR_CONTROL_LABEL:
    g_string_append_printf(out, "label %s\n", state_name(g, n->state));
    break;
  case WEIR_CONTROL_GOTO:
    g_string_append_printf(out, "goto %s\n", state_name(g, n->state));
    break;
  case WEIR_CONTROL_SEQUENCE:
    break;
  }
}

/* Validates g (which type-checks the conditions), structures it and
 * renders the tree; *structured receives whether it is structured. */
static char *structure(WeirGraph *g, gboolean *structured) {
  g_autoptr(GError) err = NULL;
  if (!weir_graph_validate(g, &err))
    fail_msg("validate: %s", err->message);
  g_autoptr(WeirControlFlow) cf = weir_control_structure(g, &err);
  if (!cf)
    fail_msg("structure: %s", err->message);
  *structured = cf->structured;
  GString *out = g_string_new(NULL);
  render(out, g, cf->root, 0);
  return g_string_free(out, FALSE);
}

static void assert_tree(WeirGraph *g, gboolean want_structured,
                        const char *want) {
  gboolean structured;
  g_autofree char *got = structure(g, &structured);
  if (strcmp(got, want) != 0)
    fail_msg("tree:\n%s\nexpected:\n%s", got, want);
  assert_int_equal(structured, want_structured);
}

/* ------------------------------------------------------------------ tests */

static void test_sample_loop(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g =
      weir_graph_load(WEIR_SRCDIR "/samples/loop.json", &err);
  if (!g)
    fail_msg("load: %s", err->message);
  if (!weir_graph_validate(g, &err))
    fail_msg("validate: %s", err->message);
  g_autoptr(WeirControlFlow) cf = weir_control_structure(g, &err);
  assert_non_null(cf);
  assert_true(cf->structured);
  /* init (4) -t23 t = 0-> guard (5) -t24 t < T-> body (6) -t25 t = t + 1->
   * guard; guard -t26 t >= T-> done (7) */
  g_autofree char *text = weir_control_flow_to_string(cf);
  assert_string_equal(text, "state 4\n"
                            "for t23; t24; t25 header 5:\n"
                            "  state 6\n"
                            "state 7\n");
  /* every state is reached */
  assert_int_equal(cf->reached->len, 4);
  for (guint i = 0; i < 4; i++)
    assert_int_equal(g_array_index(cf->reached, guint, i), 4 + i);
  /* the fields behind the text */
  assert_int_equal(cf->root->items->len, 3);
  const WeirControlNode *loop = g_ptr_array_index(cf->root->items, 1);
  assert_int_equal(loop->kind, WEIR_CONTROL_LOOP);
  assert_int_equal(loop->loop, WEIR_CONTROL_LOOP_FOR);
  assert_int_equal(loop->state, 5);
  assert_int_equal(loop->cond.transition, 24);
  assert_false(loop->cond.negate);
  assert_int_equal(loop->init, 23);
  assert_int_equal(loop->update, 25);
}

static void test_if_else(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program();
  WeirState *a = add_state(g, "a", TRUE), *b = add_state(g, "b", TRUE);
  WeirState *c = add_state(g, "c", TRUE), *d = add_state(g, "d", TRUE);
  edge(g, a, b, "N > 0", NULL);
  edge(g, a, c, "N <= 0", "i", "1", NULL);
  edge(g, b, d, NULL, NULL);
  edge(g, c, d, NULL, NULL);
  /* complementary conditions: the second arm is the else */
  assert_tree(g, TRUE,
              "state a\n"
              "if a>b\n"
              "  state b\n"
              "else\n"
              "  assign a>c\n"
              "  state c\n"
              "state d\n");
}

static void test_if_chain_without_else(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program();
  WeirState *a = add_state(g, "a", TRUE), *b = add_state(g, "b", TRUE);
  WeirState *c = add_state(g, "c", TRUE), *d = add_state(g, "d", TRUE);
  WeirState *e = add_state(g, "e", TRUE);
  edge(g, a, b, "N > 5", NULL);
  edge(g, a, c, "N > 2", NULL);
  edge(g, b, d, NULL, NULL);
  edge(g, c, d, NULL, NULL);
  edge(g, d, e, "M == 0", NULL);
  /* no condition holds: the program ends; d's only transition is tested
   * the other way round */
  assert_tree(g, TRUE,
              "state a\n"
              "if a>b\n"
              "  state b\n"
              "elif a>c\n"
              "  state c\n"
              "else\n"
              "  end\n"
              "state d\n"
              "if !d>e\n"
              "  end\n"
              "state e\n");
}

static void test_nested_for_loops(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program();
  WeirState *init = add_state(g, "init", TRUE), *og = add_state(g, "og", FALSE);
  WeirState *ob = add_state(g, "ob", TRUE), *ig = add_state(g, "ig", FALSE);
  WeirState *ib = add_state(g, "ib", TRUE), *ol = add_state(g, "ol", TRUE);
  WeirState *end = add_state(g, "end", TRUE);
  edge(g, init, og, NULL, "i", "0", NULL);
  edge(g, og, ob, "i < N", NULL);
  edge(g, ob, ig, NULL, "j", "0", NULL);
  edge(g, ig, ib, "j < M", NULL);
  edge(g, ib, ig, NULL, "j", "j + 1", NULL);
  edge(g, ig, ol, "j >= M", NULL);
  edge(g, ol, og, NULL, "i", "i + 1", NULL);
  edge(g, og, end, "i >= N", NULL);
  assert_tree(g, TRUE,
              "state init\n"
              "for og init init>og cond og>ob update ol>og\n"
              "  state ob\n"
              "  for ig init ob>ig cond ig>ib update ib>ig\n"
              "    state ib\n"
              "  state ol\n"
              "state end\n");
}

static void test_while_and_forever(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program();
  WeirState *a = add_state(g, "a", TRUE), *h = add_state(g, "h", FALSE);
  WeirState *b = add_state(g, "b", TRUE), *c = add_state(g, "c", TRUE);
  WeirState *hb = add_state(g, "hb", TRUE), *d = add_state(g, "d", TRUE);
  WeirState *e = add_state(g, "e", TRUE);
  edge(g, a, h, NULL, "i", "0", "j", "i", NULL);
  /* two back edges: no update clause, a while loop; the second
   * condition is the first negated */
  edge(g, h, b, "!(i == N)", NULL);
  edge(g, h, c, "i == N", NULL);
  edge(g, b, h, "i < M", "i", "i + 2", NULL);
  edge(g, b, h, NULL, "i", "i + 1", NULL);
  /* a header with dataflow: an endless loop left by a break */
  edge(g, c, hb, NULL, NULL);
  edge(g, hb, d, "j < N", NULL);
  edge(g, hb, e, "j >= N", NULL);
  edge(g, d, hb, NULL, "j", "j + 1", NULL);
  assert_tree(g, TRUE,
              "state a\n"
              "while h init a>h cond h>b\n"
              "  state b\n"
              "  if b>h\n"
              "    assign b>h\n"
              "    continue\n"
              "  assign b>h\n"
              "state c\n"
              "forever hb\n"
              "  state hb\n"
              "  if hb>e\n"
              "    break\n"
              "  state d\n"
              "  assign d>hb\n"
              "state e\n");
}

static void test_swapped_assignments(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program();
  WeirState *a = add_state(g, "a", TRUE), *h = add_state(g, "h", FALSE);
  WeirState *b = add_state(g, "b", TRUE), *c = add_state(g, "c", TRUE);
  WeirTransition *in = edge(g, a, h, NULL, "i", "0", NULL);
  edge(g, h, b, "i < N", NULL);
  /* j reads the i assigned before it: not an update clause */
  WeirTransition *back = edge(g, b, h, NULL, "i", "j", "j", "i + 1", NULL);
  edge(g, h, c, "i >= N", NULL);
  assert_true(weir_control_assignments_sequential(in));
  assert_false(weir_control_assignments_sequential(back));
  assert_tree(g, TRUE,
              "state a\n"
              "while h init a>h cond h>b\n"
              "  state b\n"
              "  assign b>h\n"
              "state c\n");
}

static void test_loop_entered_twice(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program();
  WeirState *a = add_state(g, "a", TRUE), *b = add_state(g, "b", TRUE);
  WeirState *c = add_state(g, "c", TRUE), *e = add_state(g, "e", TRUE);
  add_state(g, "unreached", TRUE);
  edge(g, a, b, "N > 0", NULL);
  edge(g, a, c, "N > -5", "i", "0", NULL);
  edge(g, b, c, NULL, "i", "i + 1", NULL);
  edge(g, c, b, "i < 5", NULL);
  edge(g, c, e, "i < 100", NULL);
  /* b and c form a loop with two entries: labels and gotos, the start
   * first, the rest in id order; unreached states are left out */
  assert_tree(g, FALSE,
              "state a\n"
              "if a>b\n"
              "  goto b\n"
              "if a>c\n"
              "  assign a>c\n"
              "  goto c\n"
              "end\n"
              "label b\n"
              "state b\n"
              "assign b>c\n"
              "label c\n"
              "state c\n"
              "if c>b\n"
              "  goto b\n"
              "if c>e\n"
              "  goto e\n"
              "end\n"
              "label e\n"
              "state e\n");
}

static void test_loop_with_two_exits(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program();
  WeirState *h = add_state(g, "h", TRUE), *b = add_state(g, "b", TRUE);
  WeirState *x = add_state(g, "x", TRUE), *y = add_state(g, "y", TRUE);
  edge(g, h, b, "i < N", NULL);
  edge(g, h, x, "i >= N", NULL);
  edge(g, b, h, "i < M", "i", "i + 1", NULL);
  edge(g, b, y, NULL, NULL);
  /* the loop h-b leaves to x and to y */
  assert_tree(g, FALSE,
              "label h\n"
              "state h\n"
              "if h>b\n"
              "  goto b\n"
              "if h>x\n"
              "  goto x\n"
              "end\n"
              "label b\n"
              "state b\n"
              "if b>h\n"
              "  assign b>h\n"
              "  goto h\n"
              "goto y\n"
              "label x\n"
              "state x\n"
              "end\n"
              "label y\n"
              "state y\n");
}

static void test_transitions_taken(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program();
  WeirState *a = add_state(g, "a", TRUE), *b = add_state(g, "b", TRUE);
  WeirTransition *t1 = edge(g, a, b, "N > 0", NULL);
  WeirTransition *t2 = edge(g, a, b, NULL, NULL);
  edge(g, a, a, NULL, NULL); /* after an unconditional one: never taken */
  g_autoptr(GPtrArray) ts = weir_control_out_transitions(g, a->id);
  assert_int_equal(ts->len, 2);
  assert_ptr_equal(g_ptr_array_index(ts, 0), t1);
  assert_ptr_equal(g_ptr_array_index(ts, 1), t2);
  g_autoptr(GPtrArray) none = weir_control_out_transitions(g, b->id);
  assert_int_equal(none->len, 0);
}

static void test_errors(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = program();
  g_autoptr(GError) err = NULL;
  assert_null(weir_control_structure(g, &err));
  assert_non_null(err);
  assert_non_null(strstr(err->message, "program 'flow'"));
  assert_non_null(strstr(err->message, "start state 0 does not exist"));
  g_clear_error(&err);
  WeirState *a = add_state(g, "a", TRUE), *b = add_state(g, "b", TRUE);
  WeirTransition *t = edge(g, a, b, NULL, NULL);
  t->dst = 999;
  assert_null(weir_control_structure(g, &err));
  assert_non_null(err);
  g_autofree char *want = g_strdup_printf(
      "program 'flow', transition %u: state 999 does not exist", t->id);
  assert_string_equal(err->message, want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sample_loop),
      cmocka_unit_test(test_if_else),
      cmocka_unit_test(test_if_chain_without_else),
      cmocka_unit_test(test_nested_for_loops),
      cmocka_unit_test(test_while_and_forever),
      cmocka_unit_test(test_swapped_assignments),
      cmocka_unit_test(test_loop_entered_twice),
      cmocka_unit_test(test_loop_with_two_exits),
      cmocka_unit_test(test_transitions_taken),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
