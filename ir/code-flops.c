/* code-flops.c — the FLOP count of checked tasklet code (weir_code_flops,
 * weir-code.h): one per floating-point arithmetic operation, comparison,
 * negation or math call; min/max of n operands count n - 1; casts and
 * integer arithmetic and negated literals count nothing; of a ternary,
 * the dearer branch.
 * Also the count of indexed accesses of a connector
 * (weir_code_indexed_accesses), which the analysis uses as the volume of
 * a memlet that names a whole block but whose tasklet reads or writes
 * single elements of it. */
#include "code-private.h"

static guint64 ast_flops(const WeirAst *n) {
  guint64 f = 0;
  if (n->a)
    f += ast_flops(n->a);
  if (n->kind == WEIR_AST_TERNARY) /* the more expensive branch */
    return f + MAX(ast_flops(n->b), ast_flops(n->c));
  if (n->b)
    f += ast_flops(n->b);
  for (guint i = 0; n->args && i < n->args->len; i++)
    f += ast_flops(g_ptr_array_index(n->args, i));
  switch (n->kind) {
  case WEIR_AST_UNARY:
    /* a negated literal (-inf, -1.0) is a constant, not an operation */
    return f + (n->op == WEIR_OP_NEG && weir_dtype_is_float(n->type) &&
                n->a->kind != WEIR_AST_FLOAT && n->a->kind != WEIR_AST_INT);
  case WEIR_AST_BINARY:
    if (op_is_arith(n->op))
      return f + weir_dtype_is_float(n->type);
    if (op_is_cmp(n->op))
      return f + weir_dtype_is_float(weir_ast_operand_type(n));
    return f;
  case WEIR_AST_CALL:
    switch (n->func) {
    case WEIR_FUNC_MIN:
    case WEIR_FUNC_MAX:
      return f + (weir_dtype_is_float(n->type) ? n->args->len - 1 : 0);
    case WEIR_FUNC_ISNAN:
    case WEIR_FUNC_ISFINITE: {
      const WeirAst *x = g_ptr_array_index(n->args, 0);
      return f + weir_dtype_is_float(x->type);
    }
    case WEIR_FUNC_CAST_F32:
    case WEIR_FUNC_CAST_F64:
    case WEIR_FUNC_CAST_I32:
    case WEIR_FUNC_CAST_I64:
    case WEIR_FUNC_CAST_BOOL:
    case WEIR_FUNC_CAST_U8:
      return f;
    default:
      return f + weir_dtype_is_float(n->type);
    }
  default:
    return f;
  }
}

guint64 weir_code_flops(const WeirCode *code) {
  g_return_val_if_fail(code != NULL, 0);
  g_return_val_if_fail(code->checked, 0);
  guint64 f = code->expr ? ast_flops(code->expr) : 0;
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *s = g_ptr_array_index(code->stmts, i);
    f += ast_flops(s->target) + ast_flops(s->value);
  }
  return f;
}

static guint ast_indexed(const WeirAst *n, const char *conn) {
  if (n == NULL)
    return 0;
  guint k = n->kind == WEIR_AST_INDEX && g_strcmp0(n->name, conn) == 0;
  k += ast_indexed(n->a, conn) + ast_indexed(n->b, conn) +
       ast_indexed(n->c, conn);
  for (guint i = 0; n->args && i < n->args->len; i++)
    k += ast_indexed(g_ptr_array_index(n->args, i), conn);
  return k;
}

guint weir_code_indexed_accesses(const WeirCode *code, const char *conn) {
  g_return_val_if_fail(code != NULL && conn != NULL, 0);
  guint k = ast_indexed(code->expr, conn);
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *s = g_ptr_array_index(code->stmts, i);
    k += ast_indexed(s->target, conn) + ast_indexed(s->value, conn);
  }
  return k;
}
