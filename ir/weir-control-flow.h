/* weir-control-flow.h — the state machine of a program as structured
 * control flow (an analysis: the graph is not changed).
 *
 * weir_control_structure() reads the states and transitions of a program
 * and returns a tree of statements: sequences, the dataflow of a state, the
 * assignments of a transition, if / else if / else, loops (while, for with
 * init / condition / update, and an endless loop left by break), break,
 * continue and "the program ends".  When one part of the state graph does
 * not have that shape (a loop entered at two states or left to two places,
 * a state reached again after it was placed, outside a loop), the
 * whole program falls back to a label per state and gotos, which is always
 * correct.  The C code generator prints this tree (core/codegen/control.c,
 * docs/codegen.md "States and transitions").
 *
 * What the tree means:
 *  - The transitions leaving a state are taken in id order up to the first
 *    unconditional one (later ones are never taken); when none holds, the
 *    program ends.  weir_control_out_transitions() lists them.
 *  - A condition is the condition of one transition, possibly negated.
 *  - The assignments of a transition are simultaneous (WEIR_CONTROL_ASSIGN
 *    stands for all of them); a loop's init and update are assignments too.
 *    ASSIGN nodes are only made for transitions that assign something.
 *  - States the program never reaches are not in the tree; `reached` lists
 *    the ones it does.
 *  - The tree is deterministic: it depends on the ids and the order of the
 *    program's states and transitions only.
 *
 * Structuring rules (the shapes recognised):
 *  - a state with one transition falls through to its destination; with a
 *    condition, "if (!cond) end" comes first;
 *  - a loop is a header state that can reach itself again; its body is the
 *    states on a path from the header back to it.  It must have a single
 *    entry (the header) and a single exit state, else the fallback is used.
 *    When the header has no nodes and exactly two complementary transitions
 *    (`t < T` / `t >= T`, `c` / `!(c)`, or a second one without condition),
 *    one into the body and one out, it is WHILE (condition: the one into
 *    the body) or FOR when there is one back edge, it assigns something,
 *    the transition into the body assigns nothing, and the back edge's
 *    assignments (and those of the one transition that enters the loop, if
 *    the walk came through one) can run one after the other; otherwise
 *    FOREVER, with the header's dataflow first in the body and
 *    "if (c) break" where it leaves;
 *  - branches are IF arms in transition order up to the state where they
 *    join (the closest postdominator); a branch that only jumps (break or
 *    continue) is an arm of its own and the other transition follows it;
 *  - reaching the loop header is CONTINUE and the exit is BREAK (a CONTINUE
 *    that would end a loop body is left out).
 */
#ifndef WEIR_CONTROL_FLOW_H
#define WEIR_CONTROL_FLOW_H

#include "weir-graph.h"

G_BEGIN_DECLS

typedef enum {
  WEIR_CONTROL_SEQUENCE, /* items: WeirControlNode*, run in order */
  WEIR_CONTROL_STATE,    /* the dataflow of state `state` */
  WEIR_CONTROL_ASSIGN,   /* the assignments of transition `transition` */
  WEIR_CONTROL_IF,       /* items: WeirControlArm*; the first arm whose
                            condition holds runs; an arm without condition
                            ("else") is the last */
  WEIR_CONTROL_LOOP,     /* header `state`, `loop`, `cond`, `init`,
                            `update`, `body` */
  WEIR_CONTROL_BREAK,    /* leaves the innermost loop */
  WEIR_CONTROL_CONTINUE, /* the next iteration of the innermost loop (after
                            its update, in a FOR loop) */
  WEIR_CONTROL_END,      /* the program ends here */
  WEIR_CONTROL_LABEL,    /* fallback: the place of state `state`, a target of
                            WEIR_CONTROL_GOTO */
  WEIR_CONTROL_GOTO,     /* fallback: continue at the LABEL of `state` */
} WeirControlKind;

typedef enum {
  WEIR_CONTROL_LOOP_WHILE,   /* while (cond) body */
  WEIR_CONTROL_LOOP_FOR,     /* for (init; cond; update) body */
  WEIR_CONTROL_LOOP_FOREVER, /* for (;;) body, left by BREAK or END */
} WeirControlLoopKind;

/* The condition of transition `transition` (negated when `negate`);
 * transition 0 means "always" (an else arm). */
typedef struct {
  guint transition;
  gboolean negate;
} WeirControlCond;

typedef struct _WeirControlNode WeirControlNode;

struct _WeirControlNode {
  WeirControlKind kind;
  guint state;      /* STATE, LABEL, GOTO: the state; LOOP: its header */
  guint transition; /* ASSIGN: the transition whose assignments run */
  GPtrArray *items; /* SEQUENCE: WeirControlNode*; IF: WeirControlArm*
                       (owned, with their contents); NULL otherwise */
  /* LOOP only */
  WeirControlLoopKind loop;
  WeirControlCond cond; /* WHILE, FOR: the loop runs while it holds */
  guint init;   /* a transition whose assignments run before the loop (the
                   one that enters it; FOR: its init clause), 0: none */
  guint update; /* FOR: the back edge, whose assignments are the update
                   clause (its CONTINUEs run them); 0 otherwise */
  WeirControlNode *body; /* a SEQUENCE (owned) */
};

typedef struct {
  WeirControlCond cond;  /* transition 0: else */
  WeirControlNode *body; /* a SEQUENCE (owned) */
} WeirControlArm;

typedef struct {
  WeirControlNode *root; /* a SEQUENCE (owned) */
  gboolean structured;   /* FALSE: the fallback (labels and gotos) */
  GArray *reached; /* guint ids of the states the program can reach from its
                      start, in the order of g->states (owned) */
} WeirControlFlow;

/* The control flow of g's state machine.  g is borrowed and must not change
 * while the result is used (the tree refers to states and transitions by
 * id).  Returns NULL with an error (WEIR_ERROR_INVALID) when g has no start
 * state or a transition leads to a state that does not exist; any valid
 * program has a result.  Free with weir_control_flow_free(). */
/**
 * weir_control_structure: (skip)
 */
WEIR_API WeirControlFlow *weir_control_structure(const WeirGraph *g,
                                                 GError **error);
WEIR_API void weir_control_flow_free(WeirControlFlow *cf);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirControlFlow, weir_control_flow_free)

/* The transitions leaving state s that can be taken: in id order, up to
 * the first unconditional one.  The array is owned by the caller (free with
 * g_ptr_array_unref); the transitions are borrowed from g. */
/**
 * weir_control_out_transitions: (skip)
 */
WEIR_API GPtrArray *weir_control_out_transitions(const WeirGraph *g, guint s);

/* TRUE when the assignments of t give the simultaneous result when they
 * run one after the other (no value reads a symbol assigned before it). */
WEIR_API gboolean weir_control_assignments_sequential(const WeirTransition *t);

/* The tree as indented text, one statement a line, for tests and dumps:
 *   state 3 | assign t7 | break | continue | end | label 3 | goto 3
 *   if t5: / elif !t6: / else:      (arms; bodies indented by two spaces)
 *   while t5 header 3 [init t4]:    for t4; t5; t9 header 3:  (init "-"
 *   when none)  loop header 3 [init t4]:
 * Owned by the caller (g_free). */
WEIR_API char *weir_control_flow_to_string(const WeirControlFlow *cf);

G_END_DECLS

#endif /* WEIR_CONTROL_FLOW_H */
