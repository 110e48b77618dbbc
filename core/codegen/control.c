/* control.c — the state machine of a program as C control flow.
 *
 * Structured loops (while, for, for (;;)) and branches (if / else if /
 * else) when the state graph has that shape; a label per state and gotos
 * otherwise (the whole function falls back when one part does not fit).
 *
 * Conventions:
 *  - The transitions leaving a state are taken in id order up to the first
 *    unconditional one; when none holds the program ends ("goto done").
 *  - Symbol assignments of a transition are simultaneous: they are
 *    printed one after the other only when no value reads a symbol
 *    assigned before it, else through temporaries.
 *  - States the program never reaches are left out, with what they use.
 */
#include <string.h>

#include "codegen-private.h"

/* ------------------------------------------------------------- control flow */

/* Transitions leaving s in id order, up to the first unconditional one
 * (later ones are never taken).  Borrowed pointers; free the array. */
static GPtrArray *out_transitions(const WeirGraph *g, guint s) {
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

static char *cond_text(Fn *f, const WeirTransition *t, int *prec) {
  if (!t->condition || !t->condition->expr || !t->condition->checked) {
    cg_gen_fail(f->gen, WEIR_ERROR_INVALID,
                "%s, transition %u: the condition is not type-checked",
                f->where, t->id);
    *prec = P_ATOM;
    return g_strdup("0");
  }
  return cg_ast_truth(f, NULL, t->condition->expr, prec);
}

static const char *assign_target(Fn *f, const char *name) {
  if (!g_hash_table_contains(f->sym_written, name))
    g_hash_table_add(f->sym_written, g_strdup(name));
  return cg_namer_get(f->names, "s", name);
}

/* The assignments as "a = x, b = y" when doing them one after the other
 * gives the simultaneous result (no value reads a symbol assigned before
 * it), else NULL. */
static char *assign_inline(Fn *f, const WeirTransition *t) {
  GString *s = g_string_new(NULL);
  for (guint a = 0; a < t->assign_names->len; a++) {
    WeirExpr *v = g_ptr_array_index(t->assign_values, a);
    g_autoptr(GPtrArray) names = weir_expr_symbols(v);
    for (guint b = 0; b < a; b++)
      for (guint i = 0; i < names->len; i++)
        if (strcmp(g_ptr_array_index(names, i),
                   g_ptr_array_index(t->assign_names, b)) == 0) {
          g_string_free(s, TRUE);
          return NULL;
        }
    g_autofree char *x = cg_sym_text(f, v);
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
  g_autofree char *in = assign_inline(f, t);
  if (in) {
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

static gboolean ast_same(const WeirAst *a, const WeirAst *b) {
  g_autofree char *x = weir_ast_to_string(a);
  g_autofree char *y = weir_ast_to_string(b);
  return strcmp(x, y) == 0;
}

static gboolean int_comparison(const WeirAst *n) {
  return n->kind == WEIR_AST_BINARY && n->op >= WEIR_OP_LT &&
         n->op <= WEIR_OP_NE &&
         !weir_dtype_is_float(cg_arith_operand_type(n->a, n->b));
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

typedef struct _Region Region;

struct _Region {
  const Region *up;
  guint header;         /* loop header: reaching it is "continue" (0: none) */
  guint exit;           /* loop exit: reaching it is "break" (0: none) */
  guint stop;           /* join: reaching it ends this region (0: none) */
  gboolean tail_is_end; /* falling off the region ends the program */
  gboolean incr_back;   /* for loop: the back edge's assignments are in the
                           increment clause */
};

typedef struct {
  Fn *f;
  GHashTable *text;    /* state id -> dataflow text (borrowed) */
  GHashTable *emitted; /* state ids */
  gboolean failed;     /* the graph needs gotos */
} Flow;

static gboolean region_blocks(const Region *r, guint s) {
  for (; r; r = r->up)
    if (r->header == s)
      return TRUE;
  return FALSE;
}

/* States reachable from s (s included) without entering blocked headers;
 * backwards when reverse. */
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
static gboolean is_loop_header(Flow *fl, guint s, const Region *r) {
  const WeirGraph *g = fl->f->g;
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

static void flow_seq(Flow *fl, Out *o, guint s, const Region *r,
                     gboolean at_header, const WeirTransition *via);

static void emit_done(Fn *f, Out *o) {
  f->uses_done = TRUE;
  cg_out_line(o, "goto done;");
}

/* Taking t: a jump (continue/break) is emitted with t's assignments and
 * FALSE returned; otherwise TRUE, and the caller continues with t->dst
 * and emits the assignments. */
static gboolean flow_take(Flow *fl, Out *o, const WeirTransition *t,
                          const Region *r) {
  if (t->dst == r->header || t->dst == r->exit) {
    if (!(t->dst == r->header && r->incr_back))
      emit_assign(fl->f, o, t);
    cg_out_line(o, t->dst == r->header ? "continue;" : "break;");
    return FALSE;
  }
  return TRUE;
}

/* The closest state every path from s passes through before leaving the
 * region (reaching its header, exit or stop, or the end of the program),
 * or 0. */
static guint find_join(Flow *fl, guint s, const Region *r) {
  const WeirGraph *g = fl->f->g;
  /* the states of the region reachable from s */
  g_autoptr(GArray) nodes = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GHashTable) index = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_array_append_val(nodes, s);
  g_hash_table_insert(index, GUINT_TO_POINTER(s), GUINT_TO_POINTER(1));
  for (guint k = 0; k < nodes->len; k++) {
    guint x = g_array_index(nodes, guint, k);
    g_autoptr(GPtrArray) ts = out_transitions(g, x);
    for (guint i = 0; i < ts->len; i++) {
      guint d = ((WeirTransition *)g_ptr_array_index(ts, i))->dst;
      if (d == r->header || d == r->exit || d == r->stop ||
          region_blocks(r, d) ||
          g_hash_table_contains(fl->emitted, GUINT_TO_POINTER(d)) ||
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
      g_autoptr(GPtrArray) ts = out_transitions(g, x);
      memset(acc, 1, n + 1);
      /* the end of the program when no condition holds is an exit, except
       * at s itself: that case is a separate "else goto done" */
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

/* Emits the loop headed by h; returns the state after it (0: none). */
static guint flow_loop(Flow *fl, Out *o, guint h, const Region *r,
                       const WeirTransition *via) {
  Fn *f = fl->f;
  const WeirGraph *g = f->g;
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
  g_autofree char *label = cg_comment_text(hs ? hs->label : "");
  Region inner = {.up = r, .header = h, .exit = exit};
  g_autoptr(GPtrArray) ts = out_transitions(g, h);
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
      int p;
      g_autofree char *cond = NULL;
      if (tb == t0 || tb->condition) {
        cond = cond_text(f, tb, &p);
      } else {
        g_autofree char *c0 = cond_text(f, t0, &p);
        c0 = cg_wrap(g_steal_pointer(&c0), &p, P_UNARY + 1);
        cond = g_strdup_printf("!%s", c0);
      }
      g_autofree char *init =
          via && n_entries == 1 ? assign_inline(f, via) : NULL;
      g_autofree char *incr =
          back && n_back == 1 && back != tb && tb->assign_names->len == 0
              ? assign_inline(f, back)
              : NULL;
      gboolean for_form = incr && incr[0] && (!via || init);
      g_hash_table_add(fl->emitted, GUINT_TO_POINTER(h));
      if (via && !for_form)
        emit_assign(f, o, via);
      cg_out_line(o, "/* loop: state %u '%s' */", h, label);
      if (for_form) {
        cg_out_line(o, "for (%s; %s; %s) {", via ? init : "", cond, incr);
        inner.incr_back = TRUE;
      } else {
        cg_out_line(o, "while (%s) {", cond);
      }
      Out b = cg_out_new(o->depth + 1);
      flow_seq(fl, &b, tb->dst, &inner, FALSE, tb);
      cg_out_strip_continue(&b);
      g_autofree char *bt = cg_out_free(&b);
      g_string_append(o->s, bt);
      cg_out_line(o, "}");
      emit_assign(f, o, tx);
      return exit;
    }
  }
  if (via)
    emit_assign(f, o, via);
  cg_out_line(o, "/* loop: state %u '%s' */", h, label);
  cg_out_line(o, "for (;;) {");
  Out b = cg_out_new(o->depth + 1);
  flow_seq(fl, &b, h, &inner, TRUE, NULL);
  cg_out_strip_continue(&b);
  g_autofree char *bt = cg_out_free(&b);
  g_string_append(o->s, bt);
  cg_out_line(o, "}");
  return exit;
}

/* if / else if / else over the transitions of s; returns the join. */
static guint flow_branch(Flow *fl, Out *o, guint s, GPtrArray *ts,
                         const Region *r) {
  Fn *f = fl->f;
  gboolean total = transitions_total(ts);
  /* a branch that only jumps (continue/break) first, then the other
   * inline: "if (c) break;" */
  if (ts->len == 2 && total) {
    for (guint k = 0; k < 2; k++) {
      const WeirTransition *j = g_ptr_array_index(ts, k);
      const WeirTransition *other = g_ptr_array_index(ts, 1 - k);
      if (j->dst != r->header && j->dst != r->exit)
        continue;
      int p;
      g_autofree char *cond = NULL;
      if (k == 0 || j->condition) {
        cond = cond_text(f, j, &p);
      } else {
        g_autofree char *c0 = cond_text(f, other, &p);
        c0 = cg_wrap(g_steal_pointer(&c0), &p, P_UNARY + 1);
        cond = g_strdup_printf("!%s", c0);
      }
      cg_out_line(o, "if (%s) {", cond);
      o->depth++;
      flow_take(fl, o, j, r);
      o->depth--;
      cg_out_line(o, "}");
      if (flow_take(fl, o, other, r))
        flow_seq(fl, o, other->dst, r, FALSE, other);
      return 0;
    }
  }
  guint join = find_join(fl, s, r);
  Region br = {.up = r->up,
               .header = r->header,
               .exit = r->exit,
               .stop = join,
               .incr_back = r->incr_back};
  for (guint i = 0; i < ts->len; i++) {
    const WeirTransition *t = g_ptr_array_index(ts, i);
    gboolean last = i + 1 == ts->len;
    if (i > 0 && (!t->condition || (last && total))) {
      cg_out_line(o, "} else {");
    } else {
      int p;
      g_autofree char *cond = cond_text(f, t, &p);
      cg_out_line(o, "%sif (%s) {", i ? "} else " : "", cond);
    }
    o->depth++;
    if (flow_take(fl, o, t, &br))
      flow_seq(fl, o, t->dst, &br, FALSE, t);
    o->depth--;
  }
  if (!total && !(r->tail_is_end && join == 0)) {
    cg_out_line(o, "} else {");
    o->depth++;
    emit_done(f, o);
    o->depth--;
  }
  cg_out_line(o, "}");
  return join;
}

static void flow_seq(Flow *fl, Out *o, guint s, const Region *r,
                     gboolean at_header, const WeirTransition *via) {
  Fn *f = fl->f;
  while (s && !fl->failed) {
    gboolean header_here = at_header && s == r->header;
    at_header = FALSE;
    if (!header_here) {
      if (s == r->header || s == r->exit) {
        if (!(s == r->header && r->incr_back) && via)
          emit_assign(f, o, via);
        cg_out_line(o, s == r->header ? "continue;" : "break;");
        return;
      }
      if (s != r->stop &&
          !g_hash_table_contains(fl->emitted, GUINT_TO_POINTER(s)) &&
          is_loop_header(fl, s, r)) {
        s = flow_loop(fl, o, s, r, via);
        via = NULL;
        continue;
      }
    }
    if (via)
      emit_assign(f, o, via);
    via = NULL;
    if (s == r->stop)
      return;
    if (g_hash_table_contains(fl->emitted, GUINT_TO_POINTER(s))) {
      fl->failed = TRUE;
      return;
    }
    g_hash_table_add(fl->emitted, GUINT_TO_POINTER(s));
    const WeirState *st = weir_graph_state(f->g, s);
    g_autofree char *label = cg_comment_text(st ? st->label : "");
    cg_out_line(o, "/* state %u '%s' */", s, label);
    cg_out_paste(o, g_hash_table_lookup(fl->text, GUINT_TO_POINTER(s)));
    g_autoptr(GPtrArray) ts = out_transitions(f->g, s);
    if (ts->len == 0) {
      if (!r->tail_is_end)
        emit_done(f, o);
      return;
    }
    const WeirTransition *t0 = g_ptr_array_index(ts, 0);
    if (ts->len == 1) {
      if (t0->condition) { /* else the program ends */
        int p;
        g_autofree char *c = cond_text(f, t0, &p);
        c = cg_wrap(g_steal_pointer(&c), &p, P_UNARY + 1);
        cg_out_line(o, "if (!%s) {", c);
        o->depth++;
        emit_done(f, o);
        o->depth--;
        cg_out_line(o, "}");
      }
      if (!flow_take(fl, o, t0, r))
        return;
      via = t0;
      s = t0->dst;
      continue;
    }
    s = flow_branch(fl, o, s, ts, r);
  }
}

/* Fallback for any state graph: a label per state and gotos. */
static char *flow_goto(Fn *f, GHashTable *text) {
  const WeirGraph *g = f->g;
  g_autoptr(GHashTable) seen = reach(g, g->start, NULL, FALSE);
  g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(guint));
  g_array_append_val(order, g->start);
  for (guint i = 0; i < g->states->len; i++) {
    guint id = ((WeirState *)g_ptr_array_index(g->states, i))->id;
    if (id != g->start && g_hash_table_contains(seen, GUINT_TO_POINTER(id)))
      g_array_append_val(order, id);
  }
  g_autoptr(GHashTable) targets =
      g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GPtrArray) parts = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < order->len; k++) {
    guint s = g_array_index(order, guint, k);
    guint next = k + 1 < order->len ? g_array_index(order, guint, k + 1) : 0;
    const WeirState *st = weir_graph_state(g, s);
    g_autofree char *label = cg_comment_text(st ? st->label : "");
    Out o = cg_out_new(1);
    cg_out_line(&o, "/* state %u '%s' */", s, label);
    cg_out_paste(&o, g_hash_table_lookup(text, GUINT_TO_POINTER(s)));
    g_autoptr(GPtrArray) ts = out_transitions(g, s);
    gboolean always = FALSE;
    for (guint i = 0; i < ts->len; i++) {
      const WeirTransition *t = g_ptr_array_index(ts, i);
      if (t->condition) {
        int p;
        g_autofree char *c = cond_text(f, t, &p);
        cg_out_line(&o, "if (%s) {", c);
        o.depth++;
      } else {
        always = TRUE;
      }
      emit_assign(f, &o, t);
      if (!(always && t->dst == next)) {
        cg_out_line(&o, "goto state_%u;", t->dst);
        g_hash_table_add(targets, GUINT_TO_POINTER(t->dst));
      }
      if (t->condition) {
        o.depth--;
        cg_out_line(&o, "}");
      }
    }
    if (!always && next)
      emit_done(f, &o);
    g_ptr_array_add(parts, cg_out_free(&o));
  }
  GString *s = g_string_new(NULL);
  for (guint k = 0; k < order->len; k++) {
    guint id = g_array_index(order, guint, k);
    if (g_hash_table_contains(targets, GUINT_TO_POINTER(id)))
      g_string_append_printf(s, "state_%u:\n", id);
    g_string_append(s, g_ptr_array_index(parts, k));
  }
  return g_string_free(s, FALSE);
}

char *cg_flow_body(Fn *f) {
  const WeirGraph *g = f->g;
  g_autoptr(GHashTable) text =
      g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
  /* states the program never reaches are left out (with what they use) */
  g_autoptr(GHashTable) reached = reach(g, g->start, NULL, FALSE);
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    if (g_hash_table_contains(reached, GUINT_TO_POINTER(s->id)))
      g_hash_table_insert(text, GUINT_TO_POINTER(s->id), cg_state_text(f, s));
  }
  Flow fl = {.f = f, .text = text};
  fl.emitted = g_hash_table_new(g_direct_hash, g_direct_equal);
  Region top = {.tail_is_end = TRUE};
  Out o = cg_out_new(1);
  flow_seq(&fl, &o, g->start, &top, FALSE, NULL);
  g_hash_table_unref(fl.emitted);
  if (!fl.failed)
    return cg_out_free(&o);
  g_string_free(o.s, TRUE);
  f->uses_done = FALSE;
  return flow_goto(f, text);
}
