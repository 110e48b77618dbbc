/* code-private.h — what the tasklet language's files (code.c, the parser,
 * checker and evaluator; code-flops.c, the FLOP count) share inside ir/.
 * Not installed. */
#ifndef WEIR_CODE_PRIVATE_H
#define WEIR_CODE_PRIVATE_H

#include "weir-code.h"

/* WEIR_OP_LT .. WEIR_OP_NE: a comparison (the result is bool). */
static inline gboolean op_is_cmp(WeirOp op) {
  return op >= WEIR_OP_LT && op <= WEIR_OP_NE;
}

/* WEIR_OP_ADD .. WEIR_OP_MOD: arithmetic (the result has the operands'
 * promoted type). */
static inline gboolean op_is_arith(WeirOp op) {
  return op >= WEIR_OP_ADD && op <= WEIR_OP_MOD;
}

#endif
