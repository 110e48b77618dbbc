/* control.c — the state machine of a program as C control flow.
 *
 * The structure comes from the IR analysis weir_control_structure()
 * (ir/weir-control-flow.h): loops (while, for, for (;;)) and branches
 * (if / else if / else) when the state graph has that shape, a label per
 * state and gotos otherwise.  This file prints that tree.
 *
 * Conventions:
 *  - "The program ends" is "goto done;" (the label before the function's
 *    return, printed when used).
 *  - Symbol assignments of a transition are simultaneous: they are
 *    printed one after the other only when no value reads a symbol
 *    assigned before it, else through temporaries.
 *  - States the program never reaches are left out, with what they use:
 *    the dataflow of the reached states is generated first, in state order.
 */
#include <string.h>

#include "codegen-private.h"
#include "weir-control-flow.h"

/* ------------------------------------------------------------ assignments */

static const char *assign_target(Fn *f, const char *name) {
  if (!g_hash_table_contains(f->sym_written, name))
    g_hash_table_add(f->sym_written, g_strdup(name));
  return cg_namer_get(f->names, "s", name);
}

/* The assignments as "a = x, b = y" when doing them one after the other
 * gives the simultaneous result, else NULL. */
static char *assign_inline(Fn *f, const WeirTransition *t) {
  if (!weir_control_assignments_sequential(t))
    return NULL;
  GString *s = g_string_new(NULL);
  for (guint a = 0; a < t->assign_names->len; a++) {
    g_autofree char *x = cg_sym_text(f, g_ptr_array_index(t->assign_values, a));
    g_string_append_printf(
        s, "%s%s = %s", a ? ", " : "",
        assign_target(f, g_ptr_array_index(t->assign_names, a)), x);
  }
  return g_string_free(s, FALSE);
}

static void emit_assign(Fn *f, Out *o, const WeirTransition *t) {
  guint n = t->assign_names->len;
  if (n == 0)
    return;
  if (weir_control_assignments_sequential(t)) {
    for (guint a = 0; a < n; a++) {
      g_autofree char *x =
          cg_sym_text(f, g_ptr_array_index(t->assign_values, a));
      cg_out_line(o, "%s = %s;",
                  assign_target(f, g_ptr_array_index(t->assign_names, a)), x);
    }
    return;
  }
  /* simultaneous: every value first */
  g_autoptr(Namer) names = cg_namer_new(f->names);
  g_autofree const char **tmp = g_new0(const char *, n + 1);
  cg_out_line(o, "{");
  o->depth++;
  for (guint a = 0; a < n; a++) {
    g_autofree char *base = g_strdup_printf(
        "%s_next", (const char *)g_ptr_array_index(t->assign_names, a));
    tmp[a] = cg_namer_fresh(names, base);
    g_autofree char *x = cg_sym_text(f, g_ptr_array_index(t->assign_values, a));
    cg_out_line(o, "const int64_t %s = %s;", tmp[a], x);
  }
  for (guint a = 0; a < n; a++)
    cg_out_line(o, "%s = %s;",
                assign_target(f, g_ptr_array_index(t->assign_names, a)),
                tmp[a]);
  o->depth--;
  cg_out_line(o, "}");
}

/* ------------------------------------------------------------- the printer */

typedef struct {
  Fn *f;
  GHashTable *text; /* state id -> dataflow text (borrowed) */
} Printer;

static const WeirTransition *transition(Printer *p, guint id) {
  const WeirTransition *t = weir_graph_transition(p->f->g, id);
  g_assert(t);
  return t;
}

/* The condition as C text, "!(...)" when negated. */
static char *cond_text(Printer *p, WeirControlCond c) {
  Fn *f = p->f;
  const WeirTransition *t = transition(p, c.transition);
  int prec;
  char *text;
  if (!t->condition || !t->condition->expr || !t->condition->checked) {
    cg_gen_fail(f->gen, WEIR_ERROR_INVALID,
                "%s, transition %u: the condition is not type-checked",
                f->where, t->id);
    prec = P_ATOM;
    text = g_strdup("0");
  } else {
    text = cg_ast_truth(f, NULL, t->condition->expr, &prec);
  }
  if (!c.negate)
    return text;
  text = cg_wrap(text, &prec, P_UNARY + 1);
  char *r = g_strdup_printf("!%s", text);
  g_free(text);
  return r;
}

static void emit_done(Fn *f, Out *o) {
  f->uses_done = TRUE;
  cg_out_line(o, "goto done;");
}

static void print_node(Printer *p, Out *o, const WeirControlNode *n);

static void print_if(Printer *p, Out *o, const WeirControlNode *n) {
  for (guint i = 0; i < n->items->len; i++) {
    const WeirControlArm *a = g_ptr_array_index(n->items, i);
    if (a->cond.transition == 0) {
      cg_out_line(o, "} else {");
    } else {
      g_autofree char *c = cond_text(p, a->cond);
      cg_out_line(o, "%sif (%s) {", i ? "} else " : "", c);
    }
    o->depth++;
    print_node(p, o, a->body);
    o->depth--;
  }
  cg_out_line(o, "}");
}

static void print_loop(Printer *p, Out *o, const WeirControlNode *n) {
  Fn *f = p->f;
  const WeirState *hs = weir_graph_state(f->g, n->state);
  g_autofree char *label = cg_comment_text(hs ? hs->label : "");
  g_autofree char *cond =
      n->loop == WEIR_CONTROL_LOOP_FOREVER ? NULL : cond_text(p, n->cond);
  if (n->loop == WEIR_CONTROL_LOOP_FOR) {
    g_autofree char *init =
        n->init ? assign_inline(f, transition(p, n->init)) : g_strdup("");
    g_autofree char *update = assign_inline(f, transition(p, n->update));
    g_assert(init && update); /* the analysis checked both */
    cg_out_line(o, "/* loop: state %u '%s' */", n->state, label);
    cg_out_line(o, "for (%s; %s; %s) {", init, cond, update);
  } else {
    if (n->init)
      emit_assign(f, o, transition(p, n->init));
    cg_out_line(o, "/* loop: state %u '%s' */", n->state, label);
    if (cond)
      cg_out_line(o, "while (%s) {", cond);
    else
      cg_out_line(o, "for (;;) {");
  }
  o->depth++;
  print_node(p, o, n->body);
  o->depth--;
  cg_out_line(o, "}");
}

static void print_node(Printer *p, Out *o, const WeirControlNode *n) {
  Fn *f = p->f;
  switch (n->kind) {
  case WEIR_CONTROL_SEQUENCE:
    for (guint i = 0; i < n->items->len; i++)
      print_node(p, o, g_ptr_array_index(n->items, i));
    break;
  case WEIR_CONTROL_STATE: {
    const WeirState *st = weir_graph_state(f->g, n->state);
    g_autofree char *label = cg_comment_text(st ? st->label : "");
    cg_out_line(o, "/* state %u '%s' */", n->state, label);
    cg_out_paste(o, g_hash_table_lookup(p->text, GUINT_TO_POINTER(n->state)));
    break;
  }
  case WEIR_CONTROL_ASSIGN:
    emit_assign(f, o, transition(p, n->transition));
    break;
  case WEIR_CONTROL_IF:
    print_if(p, o, n);
    break;
  case WEIR_CONTROL_LOOP:
    print_loop(p, o, n);
    break;
  case WEIR_CONTROL_BREAK:
    cg_out_line(o, "break;");
    break;
  case WEIR_CONTROL_CONTINUE:
    cg_out_line(o, "continue;");
    break;
  case WEIR_CONTROL_END:
    emit_done(f, o);
    break;
  case WEIR_CONTROL_LABEL: /* at the start of the line */
    g_string_append_printf(o->s, "state_%u:\n", n->state);
    break;
  case WEIR_CONTROL_GOTO:
    cg_out_line(o, "goto state_%u;", n->state);
    break;
  }
}

char *cg_flow_body(Fn *f) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirControlFlow) cf = weir_control_structure(f->g, &error);
  if (!cf) {
    cg_gen_fail(f->gen, WEIR_ERROR_INVALID, "%s: %s", f->where, error->message);
    return g_strdup("");
  }
  g_autoptr(GHashTable) text =
      g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  for (guint i = 0; i < cf->reached->len; i++) {
    guint id = g_array_index(cf->reached, guint, i);
    g_hash_table_insert(text, GUINT_TO_POINTER(id),
                        cg_state_text(f, weir_graph_state(f->g, id)));
  }
  Printer p = {.f = f, .text = text};
  Out o = cg_out_new(1);
  print_node(&p, &o, cf->root);
  return cg_out_free(&o);
}
