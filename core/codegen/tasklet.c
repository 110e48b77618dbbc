/* tasklet.c — tasklet bodies as C.
 *
 * Conventions:
 *  - Expressions are printed with the types the type checker of ir/code.c
 *    gave them: every implicit conversion of the tasklet language becomes
 *    an explicit C conversion with weir_value_convert's semantics
 *    (cg_convert_text), so the generated code computes what the
 *    interpreter computes.  The typing rules are not repeated here: the
 *    operand type of a comparison is weir_ast_operand_type's, operator
 *    symbols are weir_op_symbol's (ir/weir-code.h).
 *  - Documented differences from the interpreter: integer division or
 *    modulo by zero gives 0 (the interpreter stops with an error) and
 *    integer overflow in + - * is C's (the interpreter wraps around).
 *  - A tasklet is one C block: its scalar inputs as const locals, indexed
 *    connectors as pointers, then the statements; outputs are stored (or
 *    updated with write-conflict resolution) into every memlet of the
 *    output connector.
 */
#include <string.h>

#include "codegen-private.h"

/* ------------------------------------------------------------- tasklet code */

/* One memlet of a tasklet connector. */
typedef struct {
  const WeirMemlet *m; /* borrowed */
  CInfo *ci;
  gboolean scalar;  /* the subset has one element */
  const char *name; /* scalar input: local; indexed: accessor pointer */
  gboolean used;
} Port;

struct _Tasklet {
  Fn *f;
  Frame *fr;
  const WeirNode *n;
  Namer *names; /* the tasklet block's scope */
  Port *in;     /* per input connector */
  guint n_in;
  GPtrArray **out; /* per output connector: Port* */
  guint n_out;
  const char **locals; /* C names of the body's locals */
  gboolean *declared, *read;
};

static char *ast_c(Fn *f, Tasklet *t, const WeirAst *n, int *prec);

static char *ast_as(Fn *f, Tasklet *t, const WeirAst *n, WeirDType to,
                    int *prec);

static WeirValue literal_value(const WeirAst *n) {
  WeirValue v;
  if (n->kind == WEIR_AST_FLOAT) {
    v.type = WEIR_DTYPE_F64;
    v.f = n->fval;
  } else {
    v.type = WEIR_DTYPE_I64;
    v.i = n->ival;
  }
  return weir_value_convert(v, n->type);
}

static gboolean is_literal(const WeirAst *n) {
  return n->kind == WEIR_AST_INT || n->kind == WEIR_AST_FLOAT ||
         n->kind == WEIR_AST_BOOL;
}

char *cg_ast_truth(Fn *f, Tasklet *t, const WeirAst *n, int *prec) {
  if (n->type == WEIR_DTYPE_BOOL)
    return ast_c(f, t, n, prec);
  int p;
  char *x = cg_wrap(ast_c(f, t, n, &p), &p, P_EQ + 1);
  *prec = P_EQ;
  char *r = g_strdup_printf("%s != 0", x);
  g_free(x);
  return r;
}

/* Element offset of an indexed connector access: sum of index x stride,
 * with constant indices folded into one constant term. */
static char *port_index(Fn *f, Tasklet *t, const Port *port, const WeirAst *n) {
  GString *s = g_string_new(NULL);
  const WeirSubset *sub = port->m->subset;
  g_autoptr(WeirExpr) konst = weir_expr_const(0);
  for (guint d = 0; d < n->args->len && d < sub->rank; d++) {
    g_autoptr(WeirExpr) stride = weir_expr_mul(
        sub->dims[d].step, g_ptr_array_index(port->ci->strides, d));
    gint64 c;
    gboolean is_c = weir_expr_is_const(stride, &c);
    if (is_c && c == 0)
      continue;
    const WeirAst *arg = g_ptr_array_index(n->args, d);
    if (is_literal(arg)) {
      WeirValue v = weir_value_convert(literal_value(arg), WEIR_DTYPE_I64);
      g_autoptr(WeirExpr) term = weir_expr_mul_const(stride, v.i);
      WeirExpr *sum = weir_expr_add(konst, term);
      weir_expr_unref(konst);
      konst = sum;
      continue;
    }
    int p;
    g_autofree char *idx = ast_as(f, t, arg, WEIR_DTYPE_I64, &p);
    if (s->len)
      g_string_append(s, " + ");
    if (is_c && c == 1) {
      g_autofree char *w = cg_wrap(g_steal_pointer(&idx), &p, P_ADD);
      g_string_append(s, w);
    } else {
      g_autofree char *w = cg_wrap(g_steal_pointer(&idx), &p, P_MUL);
      g_autofree char *st = cg_wrap(cg_sym_c(f, stride, &p), &p, P_MUL + 1);
      g_string_append_printf(s, "%s * %s", w, st);
    }
  }
  gint64 kv;
  if (!(weir_expr_is_const(konst, &kv) && kv == 0) || s->len == 0) {
    int p;
    g_autofree char *k = cg_wrap(cg_sym_c(f, konst, &p), &p, P_ADD + 1);
    g_string_append_printf(s, "%s%s", s->len ? " + " : "", k);
  }
  return g_string_free(s, FALSE);
}

static const char *math_name(WeirFunc fn) {
  switch (fn) {
  case WEIR_FUNC_EXP:
    return "exp";
  case WEIR_FUNC_LOG:
    return "log";
  case WEIR_FUNC_SQRT:
    return "sqrt";
  case WEIR_FUNC_TANH:
    return "tanh";
  case WEIR_FUNC_ERF:
    return "erf";
  case WEIR_FUNC_SIN:
    return "sin";
  case WEIR_FUNC_COS:
    return "cos";
  case WEIR_FUNC_TAN:
    return "tan";
  case WEIR_FUNC_ASIN:
    return "asin";
  case WEIR_FUNC_ACOS:
    return "acos";
  case WEIR_FUNC_ATAN:
    return "atan";
  case WEIR_FUNC_SINH:
    return "sinh";
  case WEIR_FUNC_COSH:
    return "cosh";
  case WEIR_FUNC_ASINH:
    return "asinh";
  case WEIR_FUNC_ACOSH:
    return "acosh";
  case WEIR_FUNC_ATANH:
    return "atanh";
  case WEIR_FUNC_RINT:
    return "rint";
  case WEIR_FUNC_ABS:
    return "fabs";
  case WEIR_FUNC_FLOOR:
    return "floor";
  case WEIR_FUNC_CEIL:
    return "ceil";
  default:
    return NULL;
  }
}

static char *ast_name(Fn *f, Tasklet *t, const WeirAst *n, int *prec) {
  *prec = P_ATOM;
  switch (n->binding) {
  case WEIR_BIND_LOCAL:
    if (t && n->slot < (guint)t->n->code->locals->len) {
      t->read[n->slot] = TRUE;
      return g_strdup(t->locals[n->slot]);
    }
    break;
  case WEIR_BIND_INPUT:
    if (t && n->slot < t->n_in && t->in[n->slot].m) {
      Port *port = &t->in[n->slot];
      port->used = TRUE;
      if (port->scalar || n->kind != WEIR_AST_INDEX)
        return g_strdup(port->name);
      g_autofree char *idx = port_index(f, t, port, n);
      if (port->ci->c->dtype == WEIR_DTYPE_BOOL)
        return g_strdup_printf("(%s[%s] != 0)", port->name, idx);
      if (weir_dtype_is_half(port->ci->c->dtype)) {
        g_autofree char *el = g_strdup_printf("%s[%s]", port->name, idx);
        return cg_half_load(f->gen, port->ci->c->dtype, el);
      }
      return g_strdup_printf("%s[%s]", port->name, idx);
    }
    if (!t && n->name && n->kind == WEIR_AST_NAME) {
      /* a transition condition reading a container of one element */
      CInfo *ci = cg_fn_container(f, n->name);
      if (!ci)
        return g_strdup("0");
      g_autofree WeirExpr **zero = g_new0(WeirExpr *, ci->c->shape->len + 1);
      for (guint d = 0; d < ci->c->shape->len; d++)
        zero[d] = weir_expr_const(0);
      g_autoptr(GPtrArray) off = cg_elem_offset(ci, zero);
      for (guint d = 0; d < ci->c->shape->len; d++)
        weir_expr_unref(zero[d]);
      return cg_elem_load(f, ci, off, prec);
    }
    break;
  case WEIR_BIND_SYMBOL:
    return g_strdup(cg_fn_symbol(f, n->name));
  case WEIR_BIND_OUTPUT:
  case WEIR_BIND_NONE:
    break;
  }
  cg_gen_fail(f->gen, WEIR_ERROR_INVALID, "%s: name '%s' cannot be read here",
              f->where, n->name ? n->name : "");
  return g_strdup("0");
}

static char *ast_binary(Fn *f, Tasklet *t, const WeirAst *n, int *prec) {
  int pa, pb;
  WeirOp op = n->op;
  if (op == WEIR_OP_AND || op == WEIR_OP_OR) {
    /* "a || b || c" as is, "&&" inside "||" in parentheses (as compilers
     * suggest) */
    int level = op == WEIR_OP_AND ? P_AND : P_OR;
    char *a = cg_ast_truth(f, t, n->a, &pa);
    char *b = cg_ast_truth(f, t, n->b, &pb);
    if (level == P_OR && pa == P_AND)
      pa = 0;
    if (level == P_OR && pb == P_AND)
      pb = 0;
    g_autofree char *wa = cg_wrap(a, &pa, level);
    g_autofree char *wb = cg_wrap(b, &pb, level + 1);
    *prec = level;
    return g_strdup_printf("%s %s %s", wa, weir_op_symbol(op), wb);
  }
  gboolean cmp = op >= WEIR_OP_LT && op <= WEIR_OP_NE;
  WeirDType ty = weir_ast_operand_type(n);
  char *a = ast_as(f, t, n->a, ty, &pa);
  char *b = ast_as(f, t, n->b, ty, &pb);
  char *r;
  if (cmp) {
    /* operands are arithmetic; "!x < y" would read wrongly */
    if (a[0] == '!')
      pa = 0;
    if (b[0] == '!')
      pb = 0;
    a = cg_wrap(a, &pa, P_ADD);
    b = cg_wrap(b, &pb, P_ADD);
    *prec = op == WEIR_OP_EQ || op == WEIR_OP_NE ? P_EQ : P_REL;
    r = g_strdup_printf("%s %s %s", a, weir_op_symbol(op), b);
  } else if (weir_dtype_is_float(ty) && op == WEIR_OP_MOD) {
    *prec = P_ATOM;
    r = g_strdup_printf("%s(%s, %s)", ty == WEIR_DTYPE_F32 ? "fmodf" : "fmod",
                        a, b);
  } else if (!weir_dtype_is_float(ty) &&
             (op == WEIR_OP_DIV || op == WEIR_OP_MOD)) {
    g_autofree char *h =
        cg_helper(f->gen, op == WEIR_OP_DIV ? H_DIV : H_REM, ty);
    *prec = P_ATOM;
    r = g_strdup_printf("%s(%s, %s)", h, a, b);
  } else {
    int level = op == WEIR_OP_ADD || op == WEIR_OP_SUB ? P_ADD : P_MUL;
    a = cg_wrap(a, &pa, level);
    b = cg_wrap(b, &pb, level + 1);
    *prec = level;
    r = g_strdup_printf("%s %s %s", a, weir_op_symbol(op), b);
  }
  g_free(a);
  g_free(b);
  return r;
}

static char *ast_call(Fn *f, Tasklet *t, const WeirAst *n, int *prec) {
  const WeirAst *x = g_ptr_array_index(n->args, 0);
  WeirDType ty = n->type;
  int p;
  *prec = P_ATOM;
  switch (n->func) {
  case WEIR_FUNC_EXP:
  case WEIR_FUNC_LOG:
  case WEIR_FUNC_SQRT:
  case WEIR_FUNC_TANH:
  case WEIR_FUNC_ERF:
  case WEIR_FUNC_SIN:
  case WEIR_FUNC_COS:
  case WEIR_FUNC_TAN:
  case WEIR_FUNC_ASIN:
  case WEIR_FUNC_ACOS:
  case WEIR_FUNC_ATAN:
  case WEIR_FUNC_SINH:
  case WEIR_FUNC_COSH:
  case WEIR_FUNC_ASINH:
  case WEIR_FUNC_ACOSH:
  case WEIR_FUNC_ATANH:
  case WEIR_FUNC_RINT:
  case WEIR_FUNC_ABS:
  case WEIR_FUNC_FLOOR:
  case WEIR_FUNC_CEIL: {
    g_autofree char *a = ast_as(f, t, x, ty, &p);
    if (!weir_dtype_is_float(ty)) { /* abs of an integer */
      g_autofree char *h = cg_helper(f->gen, H_ABS, ty);
      return g_strdup_printf("%s(%s)", h, a);
    }
    /* f32 exp, tanh, erf: Weir's vectorizable ones (text.c) */
    HelperKind vm = n->func == WEIR_FUNC_EXP    ? H_EXP
                    : n->func == WEIR_FUNC_TANH ? H_TANH
                    : n->func == WEIR_FUNC_ERF  ? H_ERF
                                                : H_COUNT;
    if (ty == WEIR_DTYPE_F32 && vm != H_COUNT) {
      g_autofree char *h = cg_helper(f->gen, vm, ty);
      return g_strdup_printf("%s(%s)", h, a);
    }
    return g_strdup_printf("%s%s(%s)", math_name(n->func),
                           ty == WEIR_DTYPE_F32 ? "f" : "", a);
  }
  case WEIR_FUNC_POW: {
    const WeirAst *y = g_ptr_array_index(n->args, 1);
    if (weir_dtype_is_float(ty)) {
      g_autofree char *a = ast_as(f, t, x, ty, &p);
      g_autofree char *b = ast_as(f, t, y, ty, &p);
      return g_strdup_printf("%s(%s, %s)",
                             ty == WEIR_DTYPE_F32 ? "powf" : "pow", a, b);
    }
    /* integers: converted to the result type, computed through double */
    char *ab[2];
    for (guint i = 0; i < 2; i++) {
      const WeirAst *arg = i ? y : x;
      int q;
      if (is_literal(arg)) {
        WeirValue v = weir_value_convert(literal_value(arg), ty);
        ab[i] = cg_format_value(weir_value_convert(v, WEIR_DTYPE_F64), &q);
      } else {
        char *txt = ast_as(f, t, arg, ty, &q);
        ab[i] = cg_convert_text(f->gen, txt, ty, WEIR_DTYPE_F64, &q);
      }
    }
    g_autofree char *h = cg_helper(f->gen, H_F2I, ty);
    char *r = g_strdup_printf("%s(pow(%s, %s))", h, ab[0], ab[1]);
    g_free(ab[0]);
    g_free(ab[1]);
    return r;
  }
  case WEIR_FUNC_MIN:
  case WEIR_FUNC_MAX: {
    g_autofree char *h =
        cg_helper(f->gen, n->func == WEIR_FUNC_MIN ? H_MIN : H_MAX, ty);
    char *acc = ast_as(f, t, x, ty, &p);
    for (guint i = 1; i < n->args->len; i++) {
      g_autofree char *b = ast_as(f, t, g_ptr_array_index(n->args, i), ty, &p);
      char *next = g_strdup_printf("%s(%s, %s)", h, acc, b);
      g_free(acc);
      acc = next;
    }
    return acc;
  }
  case WEIR_FUNC_ISNAN:
  case WEIR_FUNC_ISFINITE: {
    gboolean nan = n->func == WEIR_FUNC_ISNAN;
    if (!weir_dtype_is_float(x->type))
      return g_strdup(nan ? "false" : "true");
    g_autofree char *a = ast_c(f, t, x, &p);
    return g_strdup_printf("%s(%s)", nan ? "isnan" : "isfinite", a);
  }
  case WEIR_FUNC_PHILOX: {
    g_autofree char *h = cg_helper(f->gen, H_PHILOX, WEIR_DTYPE_I64);
    char *a[3];
    for (guint i = 0; i < 3; i++)
      a[i] = ast_as(f, t, g_ptr_array_index(n->args, i), WEIR_DTYPE_I64, &p);
    char *r = g_strdup_printf("%s(%s, %s, %s)", h, a[0], a[1], a[2]);
    for (guint i = 0; i < 3; i++)
      g_free(a[i]);
    return r;
  }
  default: /* casts */
    return ast_as(f, t, x, ty, prec);
  }
}

static char *ast_c(Fn *f, Tasklet *t, const WeirAst *n, int *prec) {
  int p;
  *prec = P_ATOM;
  switch (n->kind) {
  case WEIR_AST_INT:
  case WEIR_AST_FLOAT:
  case WEIR_AST_BOOL:
    return cg_format_value(literal_value(n), prec);
  case WEIR_AST_NAME:
  case WEIR_AST_INDEX:
    return ast_name(f, t, n, prec);
  case WEIR_AST_UNARY: {
    *prec = P_UNARY;
    if (n->op == WEIR_OP_NOT) {
      g_autofree char *a = ast_c(f, t, n->a, &p);
      a = cg_wrap(g_steal_pointer(&a), &p, P_UNARY + 1);
      return g_strdup_printf("!%s", a);
    }
    g_autofree char *a = ast_as(f, t, n->a, n->type, &p);
    a = cg_wrap(g_steal_pointer(&a), &p, P_UNARY + 1);
    return g_strdup_printf("-%s", a);
  }
  case WEIR_AST_BINARY:
    return ast_binary(f, t, n, prec);
  case WEIR_AST_TERNARY: {
    g_autofree char *c = cg_wrap(cg_ast_truth(f, t, n->a, &p), &p, P_COND + 1);
    g_autofree char *a = ast_as(f, t, n->b, n->type, &p);
    a = cg_wrap(g_steal_pointer(&a), &p, P_COND + 1);
    g_autofree char *b = ast_as(f, t, n->c, n->type, &p);
    b = cg_wrap(g_steal_pointer(&b), &p, P_COND + 1);
    *prec = P_COND;
    return g_strdup_printf("%s ? %s : %s", c, a, b);
  }
  case WEIR_AST_CALL:
    return ast_call(f, t, n, prec);
  }
  g_return_val_if_reached(g_strdup("0"));
}

char *cg_convert_text(Gen *gen, char *text, WeirDType from, WeirDType to,
                      int *prec) {
  if (from == to)
    return text;
  char *r;
  if (weir_dtype_is_half(to)) { /* rounded to the type, held as float */
    g_autofree char *bits = cg_half_bits(gen, to, text);
    g_free(text);
    r = cg_half_load(gen, to, bits);
    *prec = P_ATOM;
  } else if (weir_dtype_is_float(to)) {
    g_autofree char *x = cg_wrap(text, prec, P_UNARY);
    r = g_strdup_printf("(%s)%s", cg_ctype(to), x);
    *prec = P_UNARY;
  } else if (to == WEIR_DTYPE_BOOL) {
    g_autofree char *x = cg_wrap(text, prec, P_EQ + 1);
    r = g_strdup_printf("%s != 0", x);
    *prec = P_EQ;
  } else if (weir_dtype_is_float(from)) {
    g_autofree char *h = cg_helper(gen, H_F2I, to);
    r = g_strdup_printf("%s(%s)", h, text);
    g_free(text);
    *prec = P_ATOM;
  } else {
    g_autofree char *x = cg_wrap(text, prec, P_UNARY);
    r = g_strdup_printf("(%s)%s", cg_ctype(to), x);
    *prec = P_UNARY;
  }
  return r;
}

static char *ast_as(Fn *f, Tasklet *t, const WeirAst *n, WeirDType to,
                    int *prec) {
  if (is_literal(n))
    return cg_format_value(weir_value_convert(literal_value(n), to), prec);
  char *text = ast_c(f, t, n, prec);
  return cg_convert_text(f->gen, text, n->type, to, prec);
}

/* ----------------------------------------------------------------- tasklets */

static void tasklet_clear(Tasklet *t) {
  cg_namer_free(t->names);
  g_free(t->in);
  for (guint k = 0; k < t->n_out; k++)
    g_ptr_array_unref(t->out[k]);
  g_free(t->out);
  g_free(t->locals);
  g_free(t->declared);
  g_free(t->read);
}

/* Stores the value of statement st (text in the target connector's type)
 * into every memlet of the output connector. */
static void tasklet_output(Tasklet *t, Out *o, const WeirStmt *st,
                           const char *value) {
  Fn *f = t->f;
  const WeirAst *target = st->target;
  GPtrArray *ports = target->slot < t->n_out ? t->out[target->slot] : NULL;
  if (!ports || ports->len == 0) {
    cg_gen_fail(f->gen, WEIR_ERROR_INVALID,
                "%s: output connector '%s' of tasklet %u has no memlet",
                f->where, target->name, t->n->id);
    return;
  }
  g_autofree char *tmp = NULL;
  const char *v = value;
  gboolean single =
      ports->len == 1 &&
      ((Port *)g_ptr_array_index(ports, 0))->ci->c->dtype == target->type;
  if (!single) {
    tmp = g_strdup(cg_namer_fresh(t->names, "value"));
    cg_out_line(o, "const %s %s = %s;", cg_ctype(target->type), tmp, value);
    v = tmp;
  }
  for (guint k = 0; k < ports->len; k++) {
    Port *port = g_ptr_array_index(ports, k);
    WeirDType dt = port->ci->c->dtype;
    int p = single ? P_COND : P_ATOM;
    g_autofree char *conv =
        cg_convert_text(f->gen, g_strdup(v), target->type, dt, &p);
    g_autofree char *lv = NULL;
    if (port->scalar || target->kind != WEIR_AST_INDEX) {
      g_autoptr(GPtrArray) off = cg_subset_offset(port->ci, port->m->subset);
      lv = cg_elem_ref(f, port->ci, off);
    } else {
      g_autofree char *idx = port_index(f, t, port, target);
      lv = g_strdup_printf("%s[%s]", port->name, idx);
      port->used = TRUE; /* through its accessor */
    }
    const Acc *acc = cg_frame_acc(t->fr, port->m);
    if (acc) {
      /* still withdraws "omp simd" from the loops the local is updated in */
      cg_store_atomic(f, t->fr, port->ci, port->m->subset);
      cg_emit_update(f, o, port->ci->c->dtype, acc->name, port->m->wcr, conv,
                     FALSE);
    } else {
      cg_emit_store(f, o, t->fr, port->ci, lv, port->m->subset, port->m->wcr,
                    conv);
    }
  }
}

void cg_emit_tasklet(StateCtx *sc, Out *o, const WeirNode *n, Frame *fr) {
  Fn *f = sc->f;
  const WeirCode *code = n->code;
  g_autofree char *label = cg_comment_text(n->label);
  if (!code || !code->checked) {
    cg_gen_fail(f->gen, WEIR_ERROR_INVALID,
                "%s, state %u, node %u (tasklet '%s'): the body is not "
                "type-checked",
                f->where, sc->s->id, n->id, label);
    return;
  }
  Tasklet t = {.f = f, .fr = fr, .n = n};
  t.names = cg_namer_new(f->names);
  t.n_in = n->in_conns->len;
  t.in = g_new0(Port, t.n_in + 1);
  t.n_out = n->out_conns->len;
  t.out = g_new0(GPtrArray *, t.n_out + 1);
  for (guint k = 0; k < t.n_in; k++) {
    const char *conn = g_ptr_array_index(n->in_conns, k);
    g_autoptr(GPtrArray) ms = cg_conn_memlets(sc->s, n->id, conn, TRUE);
    if (ms->len == 0)
      continue;
    Port *p = &t.in[k];
    p->m = g_ptr_array_index(ms, 0);
    p->ci = cg_fn_container(f, p->m->data);
    if (!p->ci) {
      p->m = NULL;
      continue;
    }
    p->scalar = cg_subset_is_scalar(p->m->subset);
    p->name = cg_namer_get(t.names, "i", conn);
  }
  for (guint k = 0; k < t.n_out; k++) {
    const char *conn = g_ptr_array_index(n->out_conns, k);
    g_autoptr(GPtrArray) ms = cg_conn_memlets(sc->s, n->id, conn, FALSE);
    t.out[k] = g_ptr_array_new_with_free_func(g_free);
    for (guint j = 0; j < ms->len; j++) {
      Port *p = g_new0(Port, 1);
      p->m = g_ptr_array_index(ms, j);
      p->ci = cg_fn_container(f, p->m->data);
      if (!p->ci) {
        g_free(p);
        continue;
      }
      p->scalar = cg_subset_is_scalar(p->m->subset);
      p->name = cg_namer_fresh(t.names, conn);
      g_ptr_array_add(t.out[k], p);
    }
  }
  guint nl = code->locals->len;
  t.locals = g_new0(const char *, nl + 1);
  t.declared = g_new0(gboolean, nl + 1);
  t.read = g_new0(gboolean, nl + 1);
  for (guint k = 0; k < nl; k++)
    t.locals[k] =
        cg_namer_get(t.names, "l", g_ptr_array_index(code->locals, k));

  Out body = cg_out_new(0);
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(code->stmts, i);
    const WeirAst *target = st->target;
    int p;
    g_autofree char *value = ast_as(f, &t, st->value, target->type, &p);
    if (target->binding == WEIR_BIND_LOCAL && target->slot < nl) {
      guint k = target->slot;
      if (t.declared[k]) {
        cg_out_line(&body, "%s = %s;", t.locals[k], value);
      } else {
        cg_out_line(&body, "%s %s = %s;", cg_ctype(target->type), t.locals[k],
                    value);
        t.declared[k] = TRUE;
      }
    } else if (target->binding == WEIR_BIND_OUTPUT) {
      tasklet_output(&t, &body, st, value);
    } else {
      cg_gen_fail(
          f->gen, WEIR_ERROR_INVALID,
          "%s: tasklet %u assigns to '%s', which is neither a local nor "
          "an output",
          f->where, n->id, target->name);
    }
  }
  for (guint k = 0; k < nl; k++)
    if (t.declared[k] && !t.read[k])
      cg_out_line(&body, "(void)%s;", t.locals[k]);
  g_autofree char *stmts = cg_out_free(&body);

  cg_out_line(o, "/* tasklet %u '%s' */", n->id, label);
  cg_out_line(o, "{");
  o->depth++;
  for (guint k = 0; k < t.n_in; k++) {
    Port *p = &t.in[k];
    if (!p->m || !p->used)
      continue;
    g_autoptr(GPtrArray) off = cg_subset_offset(p->ci, p->m->subset);
    WeirDType dt = p->ci->c->dtype;
    if (p->scalar) {
      int pr;
      g_autofree char *load = cg_elem_load(f, p->ci, off, &pr);
      cg_out_line(o, "const %s %s = %s;", cg_ctype(dt), p->name, load);
    } else {
      g_autofree char *ptr = cg_elem_ptr(f, p->ci, off);
      cg_out_line(o, "const %s *const %s = %s;", cg_storage_type(dt), p->name,
                  ptr);
    }
  }
  for (guint k = 0; k < t.n_out; k++) {
    for (guint j = 0; j < t.out[k]->len; j++) {
      Port *p = g_ptr_array_index(t.out[k], j);
      if (p->scalar || !p->used)
        continue;
      g_autoptr(GPtrArray) off = cg_subset_offset(p->ci, p->m->subset);
      g_autofree char *ptr = cg_elem_ptr(f, p->ci, off);
      cg_out_line(o, "%s *const %s = %s;", cg_storage_type(p->ci->c->dtype),
                  p->name, ptr);
    }
  }
  cg_out_paste(o, stmts);
  o->depth--;
  cg_out_line(o, "}");
  tasklet_clear(&t);
}
