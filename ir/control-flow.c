/* control-flow.c — structuring a program's state machine into loops and
 * branches (weir-control-flow.h states what the tree means).
 *
 * Conventions of this file:
 *  - The walk follows the transitions from the start state and appends
 *    statements to a sequence; a Region says what reaching a state means
 *    inside the current loop or branch (continue, break, the join that ends
 *    the branch).
 *  - Every state is placed once.  Reaching a placed state again in a way
 *    that none of the rules covers marks the walk failed, and the whole
 *    program takes the fallback (a label per state, gotos).
 *  - Sets of state ids are GHashTables used as sets (only membership is
 *    asked, never the order); every list is in id order or walk order.
 */
#include <string.h>

#include "weir-control-flow.h"

/* ------------------------------------------------------------------ nodes */

static void arm_free(gpointer p);

static void node_free(gpointer p) {
  WeirControlNode *n = p;
  if (!n)
    return;
  g_clear_pointer(&n->items, g_ptr_array_unref);
  node_free(n->body);
  g_free(n);
}

static void arm_free(gpointer p) {
  WeirControlArm *a = p;
  node_free(a->body);
  g_free(a);
}

static WeirControlNode *node_new(WeirControlKind kind) {
  WeirControlNode *n = g_new0(WeirControlNode, 1);
  n->kind = kind;
  return n;
}

static WeirControlNode *seq_new(void) {
  WeirControlNode *n = node_new(WEIR_CONTROL_SEQUENCE);
  n->items = g_ptr_array_new_with_free_func(node_free);
  return n;
}

static WeirControlNode *seq_add(WeirControlNode *seq, WeirControlKind kind,
                                guint state) {
  WeirControlNode *n = node_new(kind);
  n->state = state;
  g_ptr_array_add(seq->items, n);
  return n;
}

/* The assignments of t, when it has any. */
static void seq_assign(WeirControlNode *seq, const WeirTransition *t) {
  if (!t || t->assign_names->len == 0)
    return;
  seq_add(seq, WEIR_CONTROL_ASSIGN, 0)->transition = t->id;
}

static WeirControlNode *if_new(WeirControlNode *seq) {
  WeirControlNode *n = seq_add(seq, WEIR_CONTROL_IF, 0);
  n->items = g_ptr_array_new_with_free_func(arm_free);
  return n;
}

/* A new arm of an IF node; returns its body. */
static WeirControlNode *if_arm(WeirControlNode *n, guint transition,
                               gboolean negate) {
  WeirControlArm *a = g_new0(WeirControlArm, 1);
  a->cond.transition = transition;
  a->cond.negate = negate;
  a->body = seq_new();
  g_ptr_array_add(n->items, a);
  return a->body;
}

/* A CONTINUE that ends a loop body says nothing. */
static void strip_continue(WeirControlNode *body) {
  GPtrArray *items = body->items;
  if (items->len > 0 &&
      ((WeirControlNode *)g_ptr_array_index(items, items->len - 1))->kind ==
          WEIR_CONTROL_CONTINUE)
    g_ptr_array_set_size(items, items->len - 1);
}

void weir_control_flow_free(WeirControlFlow *cf) {
  if (!cf)
    return;
  node_free(cf->root);
  if (cf->reached)
    g_array_unref(cf->reached);
  g_free(cf);
}

/* ------------------------------------------------------------ transitions */

GPtrArray *weir_control_out_transitions(const WeirGraph *g, guint s) {
  GPtrArray *r = g_ptr_array_new();
  for (guint i = 0; i < g->transitions->len; i++) {
    WeirTransition *t = g_ptr_array_index(g->transitions, i);
    if (t->src != s)
      continue;
    g_ptr_array_add(r, t);
    if (!t->condition)
      break;
  }
  return r;
}

gboolean weir_control_assignments_sequential(const WeirTransition *t) {
  for (guint a = 1; a < t->assign_names->len; a++) {
    g_autoptr(GPtrArray) names =
        weir_expr_symbols(g_ptr_array_index(t->assign_values, a));
    for (guint b = 0; b < a; b++)
      for (guint i = 0; i < names->len; i++)
        if (strcmp(g_ptr_array_index(names, i),
                   g_ptr_array_index(t->assign_names, b)) == 0)
          return FALSE;
  }
  return TRUE;
}

static gboolean ast_same(const WeirAst *a, const WeirAst *b) {
  g_autofree char *x = weir_ast_to_string(a);
  g_autofree char *y = weir_ast_to_string(b);
  return strcmp(x, y) == 0;
}

static gboolean int_comparison(const WeirAst *n) {
  return n->kind == WEIR_AST_BINARY && n->op >= WEIR_OP_LT &&
         n->op <= WEIR_OP_NE && !weir_dtype_is_float(weir_ast_operand_type(n));
}

static WeirOp op_negate(WeirOp op) {
  switch (op) {
  case WEIR_OP_LT:
    return WEIR_OP_GE;
  case WEIR_OP_GE:
    return WEIR_OP_LT;
  case WEIR_OP_LE:
    return WEIR_OP_GT;
  case WEIR_OP_GT:
    return WEIR_OP_LE;
  case WEIR_OP_EQ:
    return WEIR_OP_NE;
  default:
    return WEIR_OP_EQ;
  }
}

static WeirOp op_swap(WeirOp op) {
  switch (op) {
  case WEIR_OP_LT:
    return WEIR_OP_GT;
  case WEIR_OP_GT:
    return WEIR_OP_LT;
  case WEIR_OP_LE:
    return WEIR_OP_GE;
  case WEIR_OP_GE:
    return WEIR_OP_LE;
  default:
    return op;
  }
}

/* TRUE when condition b holds exactly when a does not. */
static gboolean conditions_complement(const WeirTransition *ta,
                                      const WeirTransition *tb) {
  if (!ta->condition || !tb->condition || !ta->condition->expr ||
      !tb->condition->expr)
    return FALSE;
  const WeirAst *a = ta->condition->expr, *b = tb->condition->expr;
  if (b->kind == WEIR_AST_UNARY && b->op == WEIR_OP_NOT && ast_same(b->a, a))
    return TRUE;
  if (a->kind == WEIR_AST_UNARY && a->op == WEIR_OP_NOT && ast_same(a->a, b))
    return TRUE;
  if (!int_comparison(a) || !int_comparison(b))
    return FALSE;
  if (b->op == op_negate(a->op) && ast_same(a->a, b->a) && ast_same(a->b, b->b))
    return TRUE;
  return b->op == op_swap(op_negate(a->op)) && ast_same(a->a, b->b) &&
         ast_same(a->b, b->a);
}

/* A list of transitions covers every case (one of them is always taken). */
static gboolean transitions_total(GPtrArray *ts) {
  if (ts->len == 0)
    return FALSE;
  const WeirTransition *last = g_ptr_array_index(ts, ts->len - 1);
  if (!last->condition)
    return TRUE;
  return ts->len == 2 && conditions_complement(g_ptr_array_index(ts, 0), last);
}

/* ---------------------------------------------------------------- regions */

typedef struct _Region Region;

struct _Region {
  const Region *up;
  guint header;         /* loop header: reaching it is "continue" (0: none) */
  guint exit;           /* loop exit: reaching it is "break" (0: none) */
  guint stop;           /* join: reaching it ends this region (0: none) */
  gboolean tail_is_end; /* falling off the region ends the program */
  gboolean incr_back;   /* FOR loop: the back edge's assignments are in the
                           update clause */
};

typedef struct {
  const WeirGraph *g;
  GHashTable *placed; /* state ids already in the tree */
  gboolean failed;    /* the graph needs gotos */
} Flow;

static gboolean region_blocks(const Region *r, guint s) {
  for (; r; r = r->up)
    if (r->header == s)
      return TRUE;
  return FALSE;
}

/* States reachable from s (s included) without entering blocked headers;
 * backwards when reverse.  A set; the caller unrefs it. */
static GHashTable *reach(const WeirGraph *g, guint s, const Region *r,
                         gboolean reverse) {
  GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GArray) work = g_array_new(FALSE, FALSE, sizeof(guint));
  g_hash_table_add(seen, GUINT_TO_POINTER(s));
  g_array_append_val(work, s);
  while (work->len) {
    guint x = g_array_index(work, guint, work->len - 1);
    g_array_set_size(work, work->len - 1);
    if (x != s && region_blocks(r, x))
      continue;
    for (guint i = 0; i < g->transitions->len; i++) {
      const WeirTransition *t = g_ptr_array_index(g->transitions, i);
      guint from = reverse ? t->dst : t->src, to = reverse ? t->src : t->dst;
      if (from != x || g_hash_table_contains(seen, GUINT_TO_POINTER(to)))
        continue;
      g_hash_table_add(seen, GUINT_TO_POINTER(to));
      g_array_append_val(work, to);
    }
  }
  return seen;
}

/* s can reach itself again inside the current region. */
static gboolean is_loop_header(const WeirGraph *g, guint s, const Region *r) {
  for (guint i = 0; i < g->transitions->len; i++) {
    const WeirTransition *t = g_ptr_array_index(g->transitions, i);
    if (t->src != s)
      continue;
    if (t->dst == s)
      return TRUE;
    if (region_blocks(r, t->dst))
      continue;
    g_autoptr(GHashTable) from = reach(g, t->dst, r, FALSE);
    if (g_hash_table_contains(from, GUINT_TO_POINTER(s)))
      return TRUE;
  }
  return FALSE;
}

/* ------------------------------------------------------------------- walk */

static void flow_seq(Flow *fl, WeirControlNode *seq, guint s, const Region *r,
                     gboolean at_header, const WeirTransition *via);

/* Taking t: a jump (continue/break) is appended with t's assignments and
 * FALSE returned; otherwise TRUE, and the caller continues with t->dst
 * and appends the assignments. */
static gboolean flow_take(WeirControlNode *seq, const WeirTransition *t,
                          const Region *r) {
  if (t->dst == r->header || t->dst == r->exit) {
    if (!(t->dst == r->header && r->incr_back))
      seq_assign(seq, t);
    seq_add(seq,
            t->dst == r->header ? WEIR_CONTROL_CONTINUE : WEIR_CONTROL_BREAK,
            0);
    return FALSE;
  }
  return TRUE;
}

/* The closest state every path from s passes through before leaving the
 * region (reaching its header, exit or stop, or the end of the program),
 * or 0. */
static guint find_join(Flow *fl, guint s, const Region *r) {
  const WeirGraph *g = fl->g;
  /* the states of the region reachable from s */
  g_autoptr(GArray) nodes = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GHashTable) index = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_array_append_val(nodes, s);
  g_hash_table_insert(index, GUINT_TO_POINTER(s), GUINT_TO_POINTER(1));
  for (guint k = 0; k < nodes->len; k++) {
    guint x = g_array_index(nodes, guint, k);
    g_autoptr(GPtrArray) ts = weir_control_out_transitions(g, x);
    for (guint i = 0; i < ts->len; i++) {
      guint d = ((WeirTransition *)g_ptr_array_index(ts, i))->dst;
      if (d == r->header || d == r->exit || d == r->stop ||
          region_blocks(r, d) ||
          g_hash_table_contains(fl->placed, GUINT_TO_POINTER(d)) ||
          g_hash_table_contains(index, GUINT_TO_POINTER(d)))
        continue;
      g_array_append_val(nodes, d);
      g_hash_table_insert(index, GUINT_TO_POINTER(d),
                          GUINT_TO_POINTER(nodes->len));
    }
  }
  guint n = nodes->len, vexit = n; /* the virtual exit */
  /* postdominator sets as an (n+1) x (n+1) matrix */
  g_autofree guint8 *pd = g_new(guint8, (n + 1) * (n + 1));
  memset(pd, 1, (n + 1) * (n + 1));
  memset(pd + vexit * (n + 1), 0, n + 1);
  pd[vexit * (n + 1) + vexit] = 1;
  g_autofree guint8 *acc = g_new(guint8, n + 1);
  gboolean changed = TRUE;
  while (changed) {
    changed = FALSE;
    for (guint k = 0; k < n; k++) {
      guint x = g_array_index(nodes, guint, k);
      g_autoptr(GPtrArray) ts = weir_control_out_transitions(g, x);
      memset(acc, 1, n + 1);
      /* the end of the program when no condition holds is an exit, except
       * at s itself: that case is a separate "else end" */
      gboolean to_exit = k > 0 && !transitions_total(ts);
      for (guint i = 0; i < ts->len; i++) {
        guint d = ((WeirTransition *)g_ptr_array_index(ts, i))->dst;
        guint j =
            GPOINTER_TO_UINT(g_hash_table_lookup(index, GUINT_TO_POINTER(d)));
        if (j == 0 || d == s) { /* leaves the region (or loops to s) */
          to_exit = TRUE;
          continue;
        }
        for (guint y = 0; y <= n; y++)
          acc[y] &= pd[(j - 1) * (n + 1) + y];
      }
      if (to_exit)
        for (guint y = 0; y <= n; y++)
          acc[y] &= pd[vexit * (n + 1) + y];
      acc[k] = 1;
      if (memcmp(acc, pd + k * (n + 1), n + 1) != 0) {
        memcpy(pd + k * (n + 1), acc, n + 1);
        changed = TRUE;
      }
    }
  }
  /* the closest strict postdominator has the largest set */
  guint best = G_MAXUINT, best_size = 0;
  for (guint y = 0; y <= n; y++) {
    if (y == 0 || !pd[y])
      continue;
    guint size = 0;
    for (guint z = 0; z <= n; z++)
      size += pd[y * (n + 1) + z];
    if (size > best_size) {
      best = y;
      best_size = size;
    }
  }
  if (best == G_MAXUINT || best == vexit)
    return 0;
  return g_array_index(nodes, guint, best);
}

/* Appends the loop headed by h; returns the state after it (0: none). */
static guint flow_loop(Flow *fl, WeirControlNode *seq, guint h, const Region *r,
                       const WeirTransition *via) {
  const WeirGraph *g = fl->g;
  g_autoptr(GHashTable) fwd = reach(g, h, r, FALSE);
  g_autoptr(GHashTable) bwd = reach(g, h, r, TRUE);
  g_autoptr(GHashTable) body = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint i = 0; i < g->states->len; i++) {
    guint id = ((WeirState *)g_ptr_array_index(g->states, i))->id;
    if (g_hash_table_contains(fwd, GUINT_TO_POINTER(id)) &&
        g_hash_table_contains(bwd, GUINT_TO_POINTER(id)) &&
        (id == h || !region_blocks(r, id)))
      g_hash_table_add(body, GUINT_TO_POINTER(id));
  }
  guint exit = 0, n_exits = 0, n_entries = 0, n_back = 0;
  const WeirTransition *back = NULL;
  for (guint i = 0; i < g->transitions->len; i++) {
    const WeirTransition *t = g_ptr_array_index(g->transitions, i);
    gboolean src_in = g_hash_table_contains(body, GUINT_TO_POINTER(t->src));
    gboolean dst_in = g_hash_table_contains(body, GUINT_TO_POINTER(t->dst));
    if (dst_in && !src_in) {
      if (t->dst != h) {
        fl->failed = TRUE; /* a second entry */
        return 0;
      }
      n_entries++;
    }
    if (src_in && !dst_in) {
      if (exit && exit != t->dst) {
        fl->failed = TRUE; /* exits to two places */
        return 0;
      }
      exit = t->dst;
      n_exits++;
    }
    if (src_in && t->dst == h) {
      back = t;
      n_back++;
    }
  }
  const WeirState *hs = weir_graph_state(g, h);
  Region inner = {.up = r, .header = h, .exit = exit};
  WeirControlNode *loop = seq_add(seq, WEIR_CONTROL_LOOP, h);
  loop->body = seq_new();
  if (via && via->assign_names->len > 0)
    loop->init = via->id;
  g_autoptr(GPtrArray) ts = weir_control_out_transitions(g, h);
  /* while / for: an empty header whose two transitions enter the body or
   * leave the loop, the only way out */
  if (hs && hs->nodes->len == 0 && ts->len == 2 && transitions_total(ts) &&
      n_exits == 1) {
    const WeirTransition *t0 = g_ptr_array_index(ts, 0);
    const WeirTransition *t1 = g_ptr_array_index(ts, 1);
    gboolean in0 = g_hash_table_contains(body, GUINT_TO_POINTER(t0->dst));
    gboolean in1 = g_hash_table_contains(body, GUINT_TO_POINTER(t1->dst));
    if (in0 != in1) {
      const WeirTransition *tb = in0 ? t0 : t1, *tx = in0 ? t1 : t0;
      /* the condition to stay: tb's own, or not t0's when tb has none */
      if (tb == t0 || tb->condition)
        loop->cond.transition = tb->id;
      else
        loop->cond = (WeirControlCond){.transition = t0->id, .negate = TRUE};
      /* for: the back edge assigns and both clauses are plain sequences */
      gboolean init_ok =
          !via || (n_entries == 1 && weir_control_assignments_sequential(via));
      gboolean for_form = back && n_back == 1 && back != tb &&
                          tb->assign_names->len == 0 &&
                          back->assign_names->len > 0 &&
                          weir_control_assignments_sequential(back) && init_ok;
      g_hash_table_add(fl->placed, GUINT_TO_POINTER(h));
      if (for_form) {
        loop->loop = WEIR_CONTROL_LOOP_FOR;
        loop->update = back->id;
        inner.incr_back = TRUE;
      } else {
        loop->loop = WEIR_CONTROL_LOOP_WHILE;
      }
      flow_seq(fl, loop->body, tb->dst, &inner, FALSE, tb);
      strip_continue(loop->body);
      seq_assign(seq, tx);
      return exit;
    }
  }
  loop->loop = WEIR_CONTROL_LOOP_FOREVER;
  flow_seq(fl, loop->body, h, &inner, TRUE, NULL);
  strip_continue(loop->body);
  return exit;
}

/* if / else if / else over the transitions ts of s; returns the join. */
static guint flow_branch(Flow *fl, WeirControlNode *seq, guint s, GPtrArray *ts,
                         const Region *r) {
  gboolean total = transitions_total(ts);
  /* a branch that only jumps (continue/break) first, then the other
   * inline: "if (c) break" */
  if (ts->len == 2 && total) {
    for (guint k = 0; k < 2; k++) {
      const WeirTransition *j = g_ptr_array_index(ts, k);
      const WeirTransition *other = g_ptr_array_index(ts, 1 - k);
      if (j->dst != r->header && j->dst != r->exit)
        continue;
      WeirControlNode *arm = k == 0 || j->condition
                                 ? if_arm(if_new(seq), j->id, FALSE)
                                 : if_arm(if_new(seq), other->id, TRUE);
      flow_take(arm, j, r);
      if (flow_take(seq, other, r))
        flow_seq(fl, seq, other->dst, r, FALSE, other);
      return 0;
    }
  }
  guint join = find_join(fl, s, r);
  Region br = {.up = r->up,
               .header = r->header,
               .exit = r->exit,
               .stop = join,
               .incr_back = r->incr_back};
  WeirControlNode *n = if_new(seq);
  for (guint i = 0; i < ts->len; i++) {
    const WeirTransition *t = g_ptr_array_index(ts, i);
    gboolean last = i + 1 == ts->len;
    gboolean is_else = i > 0 && (!t->condition || (last && total));
    WeirControlNode *arm = if_arm(n, is_else ? 0 : t->id, FALSE);
    if (flow_take(arm, t, &br))
      flow_seq(fl, arm, t->dst, &br, FALSE, t);
  }
  if (!total && !(r->tail_is_end && join == 0))
    seq_add(if_arm(n, 0, FALSE), WEIR_CONTROL_END, 0);
  return join;
}

static void flow_seq(Flow *fl, WeirControlNode *seq, guint s, const Region *r,
                     gboolean at_header, const WeirTransition *via) {
  while (s && !fl->failed) {
    gboolean header_here = at_header && s == r->header;
    at_header = FALSE;
    if (!header_here) {
      if (s == r->header || s == r->exit) {
        if (!(s == r->header && r->incr_back))
          seq_assign(seq, via);
        seq_add(seq,
                s == r->header ? WEIR_CONTROL_CONTINUE : WEIR_CONTROL_BREAK, 0);
        return;
      }
      if (s != r->stop &&
          !g_hash_table_contains(fl->placed, GUINT_TO_POINTER(s)) &&
          is_loop_header(fl->g, s, r)) {
        s = flow_loop(fl, seq, s, r, via);
        via = NULL;
        continue;
      }
    }
    seq_assign(seq, via);
    via = NULL;
    if (s == r->stop)
      return;
    if (g_hash_table_contains(fl->placed, GUINT_TO_POINTER(s))) {
      fl->failed = TRUE;
      return;
    }
    g_hash_table_add(fl->placed, GUINT_TO_POINTER(s));
    seq_add(seq, WEIR_CONTROL_STATE, s);
    g_autoptr(GPtrArray) ts = weir_control_out_transitions(fl->g, s);
    if (ts->len == 0) {
      if (!r->tail_is_end)
        seq_add(seq, WEIR_CONTROL_END, 0);
      return;
    }
    const WeirTransition *t0 = g_ptr_array_index(ts, 0);
    if (ts->len == 1) {
      if (t0->condition) /* else the program ends */
        seq_add(if_arm(if_new(seq), t0->id, TRUE), WEIR_CONTROL_END, 0);
      if (!flow_take(seq, t0, r))
        return;
      via = t0;
      s = t0->dst;
      continue;
    }
    s = flow_branch(fl, seq, s, ts, r);
  }
}

/* --------------------------------------------------------------- fallback */

/* Any state graph: a label per state that a goto names, the states in
 * order (the start first), the transitions as conditional gotos. */
static WeirControlNode *flow_goto(const WeirGraph *g, GArray *reached) {
  g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
  g_array_append_val(order, g->start);
  for (guint i = 0; i < reached->len; i++) {
    guint id = g_array_index(reached, guint, i);
    if (id != g->start)
      g_array_append_val(order, id);
  }
  g_autoptr(GHashTable) targets =
      g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GPtrArray) parts = g_ptr_array_new_with_free_func(node_free);
  for (guint k = 0; k < order->len; k++) {
    guint s = g_array_index(order, guint, k);
    guint next = k + 1 < order->len ? g_array_index(order, guint, k + 1) : 0;
    WeirControlNode *part = seq_new();
    g_ptr_array_add(parts, part);
    seq_add(part, WEIR_CONTROL_STATE, s);
    g_autoptr(GPtrArray) ts = weir_control_out_transitions(g, s);
    gboolean always = FALSE;
    for (guint i = 0; i < ts->len; i++) {
      const WeirTransition *t = g_ptr_array_index(ts, i);
      WeirControlNode *at = part;
      if (t->condition)
        at = if_arm(if_new(part), t->id, FALSE);
      else
        always = TRUE;
      seq_assign(at, t);
      if (!(always && t->dst == next)) {
        seq_add(at, WEIR_CONTROL_GOTO, t->dst);
        g_hash_table_add(targets, GUINT_TO_POINTER(t->dst));
      }
    }
    if (!always && next)
      seq_add(part, WEIR_CONTROL_END, 0);
  }
  WeirControlNode *root = seq_new();
  for (guint k = 0; k < order->len; k++) {
    guint id = g_array_index(order, guint, k);
    if (g_hash_table_contains(targets, GUINT_TO_POINTER(id)))
      seq_add(root, WEIR_CONTROL_LABEL, id);
    WeirControlNode *part = g_ptr_array_index(parts, k);
    for (guint i = 0; i < part->items->len; i++)
      g_ptr_array_add(root->items, g_ptr_array_index(part->items, i));
    g_ptr_array_set_free_func(part->items, NULL);
  }
  return root;
}

/* -------------------------------------------------------------- the entry */

WeirControlFlow *weir_control_structure(const WeirGraph *g, GError **error) {
  if (!weir_graph_state(g, g->start)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "program '%s': start state %u does not exist", g->name,
                g->start);
    return NULL;
  }
  for (guint i = 0; i < g->transitions->len; i++) {
    const WeirTransition *t = g_ptr_array_index(g->transitions, i);
    guint missing = !weir_graph_state(g, t->src)   ? t->src
                    : !weir_graph_state(g, t->dst) ? t->dst
                                                   : 0;
    if (missing) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "program '%s', transition %u: state %u does not exist",
                  g->name, t->id, missing);
      return NULL;
    }
  }
  WeirControlFlow *cf = g_new0(WeirControlFlow, 1);
  cf->reached = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GHashTable) seen = reach(g, g->start, NULL, FALSE);
  for (guint i = 0; i < g->states->len; i++) {
    guint id = ((WeirState *)g_ptr_array_index(g->states, i))->id;
    if (g_hash_table_contains(seen, GUINT_TO_POINTER(id)))
      g_array_append_val(cf->reached, id);
  }
  Flow fl = {.g = g};
  fl.placed = g_hash_table_new(g_direct_hash, g_direct_equal);
  Region top = {.tail_is_end = TRUE};
  cf->root = seq_new();
  flow_seq(&fl, cf->root, g->start, &top, FALSE, NULL);
  g_hash_table_unref(fl.placed);
  cf->structured = !fl.failed;
  if (fl.failed) {
    node_free(cf->root);
    cf->root = flow_goto(g, cf->reached);
  }
  return cf;
}

/* ------------------------------------------------------------------- dump */

static void cond_dump(GString *s, WeirControlCond c) {
  g_string_append_printf(s, "%st%u", c.negate ? "!" : "", c.transition);
}

static void node_dump(GString *s, const WeirControlNode *n, guint depth) {
  if (n->kind == WEIR_CONTROL_SEQUENCE) {
    for (guint i = 0; i < n->items->len; i++)
      node_dump(s, g_ptr_array_index(n->items, i), depth);
    return;
  }
  for (guint d = 0; d < depth; d++)
    g_string_append(s, "  ");
  switch (n->kind) {
  case WEIR_CONTROL_STATE:
    g_string_append_printf(s, "state %u\n", n->state);
    break;
  case WEIR_CONTROL_ASSIGN:
    g_string_append_printf(s, "assign t%u\n", n->transition);
    break;
  case WEIR_CONTROL_IF:
    for (guint i = 0; i < n->items->len; i++) {
      const WeirControlArm *a = g_ptr_array_index(n->items, i);
      if (i > 0)
        for (guint d = 0; d < depth; d++)
          g_string_append(s, "  ");
      if (a->cond.transition == 0) {
        g_string_append(s, "else:\n");
      } else {
        g_string_append(s, i ? "elif " : "if ");
        cond_dump(s, a->cond);
        g_string_append(s, ":\n");
      }
      node_dump(s, a->body, depth + 1);
    }
    break;
  case WEIR_CONTROL_LOOP:
    if (n->loop == WEIR_CONTROL_LOOP_FOR) {
      if (n->init)
        g_string_append_printf(s, "for t%u; ", n->init);
      else
        g_string_append(s, "for -; ");
      cond_dump(s, n->cond);
      g_string_append_printf(s, "; t%u header %u:\n", n->update, n->state);
    } else {
      if (n->loop == WEIR_CONTROL_LOOP_WHILE) {
        g_string_append(s, "while ");
        cond_dump(s, n->cond);
        g_string_append_c(s, ' ');
      } else {
        g_string_append(s, "loop ");
      }
      g_string_append_printf(s, "header %u", n->state);
      if (n->init)
        g_string_append_printf(s, " init t%u", n->init);
      g_string_append(s, ":\n");
    }
    node_dump(s, n->body, depth + 1);
    break;
  case WEIR_CONTROL_BREAK:
    g_string_append(s, "break\n");
    break;
  case WEIR_CONTROL_CONTINUE:
    g_string_append(s, "continue\n");
    break;
  case WEIR_CONTROL_END:
    g_string_append(s, "end\n");
    break;
  case WEIR_CONTROL_LABEL:
    g_string_append_printf(s, "label %u\n", n->state);
    break;
  case WEIR_CONTROL_GOTO:
    g_string_append_printf(s, "goto %u\n", n->state);
    break;
  case WEIR_CONTROL_SEQUENCE:
    break;
  }
}

char *weir_control_flow_to_string(const WeirControlFlow *cf) {
  GString *s = g_string_new(NULL);
  node_dump(s, cf->root, 0);
  return g_string_free(s, FALSE);
}
