/* weir-code.h — Weir's tasklet language.
 *
 * Tasklet bodies (and the conditions of inter-state edges) are written in a
 * small expression language, parsed into an AST and type-checked before use.
 * Code generation prints C from the AST only, so no text from a model file
 * reaches a C compiler unchecked.
 *
 * Syntax
 *   body       := stmt { (';' | newline) stmt }
 *   stmt       := target '=' expr
 *   target     := NAME | NAME '[' expr { ',' expr } ']'
 *   expr       := or_expr [ '?' expr ':' expr ]
 *   or_expr    := and_expr { '||' and_expr }
 *   and_expr   := cmp_expr { '&&' cmp_expr }
 *   cmp_expr   := add_expr [ ('<'|'<='|'>'|'>='|'=='|'!=') add_expr ]
 *   add_expr   := mul_expr { ('+'|'-') mul_expr }
 *   mul_expr   := unary { ('*'|'/'|'%') unary }
 *   unary      := ('-'|'!') unary | postfix
 *   postfix    := primary | NAME '(' args ')' | NAME '[' expr {',' expr} ']'
 *   primary    := NUMBER | 'true' | 'false' | NAME | '(' expr ')'
 * Comments run from '#' to the end of the line.
 *
 * Names resolve, in order, to: a local assigned earlier in the body, an input
 * connector, an output connector (as an assignment target), an integer
 * symbol (program symbol or map parameter, type i64).
 * Functions: exp log sqrt tanh erf sin cos tan asin acos atan sinh cosh
 * asinh acosh atanh abs floor ceil rint (1 argument; rint rounds to the
 * nearest integer, halves to even),
 * pow (2), min max (2 or more), isnan isfinite (1, giving bool), casts
 * f32() f64() i32() i64() bool() u8(), and philox(key, c0, c1) (i64
 * arguments, i64 result in [0, 2^32)): the first word of the
 * Philox-4x32-10 counter-based generator (weir_philox4x32_10) with key
 * (low, high 32 bits of key) and counter (low, high of c0, low, high of c1),
 * the same in the interpreter and the generated code.
 *
 * Types follow C: integer literals adapt to the other operand, floating
 * literals are f64 unless combined with f32 (then f32), mixed int/float
 * promotes to the float type, f32 with f64 gives f64; '/' and '%' on integers
 * truncate toward zero as in C; comparisons and logical operators give bool.
 * An output is assigned the value converted to its connector's dtype.
 * Details (see code.c): bool and u8 promote to i32 in arithmetic; integer
 * literals that fit in i32 adapt, larger ones are i64; untyped expressions
 * default to i64 / f64 (also for a local's type); math functions on
 * integers give f64, except abs and pow, which stay integer (pow computed
 * through double); min/max propagate NaN; f32 arithmetic is rounded to float
 * after every operation; integer arithmetic wraps; integer division or
 * modulo by zero is a WEIR_ERROR_RUNTIME error.  Newlines inside ( ) and
 * [ ] are whitespace.  Nesting is limited (256 levels of parentheses /
 * unary operators, 1024 levels of tree height): deeper input is a parse
 * error.
 */
#ifndef WEIR_CODE_H
#define WEIR_CODE_H

#include "weir-types.h"

G_BEGIN_DECLS

/* The functions of the language; an X-macro keeps names and arities in one
 * table.  Arity -1 means 2 or more. */
#define WEIR_FUNCS(X)                                                          \
  X(EXP, "exp", 1)                                                             \
  X(LOG, "log", 1)                                                             \
  X(SQRT, "sqrt", 1)                                                           \
  X(TANH, "tanh", 1)                                                           \
  X(ERF, "erf", 1)                                                             \
  X(SIN, "sin", 1)                                                             \
  X(COS, "cos", 1)                                                             \
  X(TAN, "tan", 1)                                                             \
  X(ASIN, "asin", 1)                                                           \
  X(ACOS, "acos", 1)                                                           \
  X(ATAN, "atan", 1)                                                           \
  X(SINH, "sinh", 1)                                                           \
  X(COSH, "cosh", 1)                                                           \
  X(ASINH, "asinh", 1)                                                         \
  X(ACOSH, "acosh", 1)                                                         \
  X(ATANH, "atanh", 1)                                                         \
  X(RINT, "rint", 1)                                                           \
  X(ABS, "abs", 1)                                                             \
  X(FLOOR, "floor", 1)                                                         \
  X(CEIL, "ceil", 1)                                                           \
  X(POW, "pow", 2)                                                             \
  X(MIN, "min", -1)                                                            \
  X(MAX, "max", -1)                                                            \
  X(ISNAN, "isnan", 1)                                                         \
  X(ISFINITE, "isfinite", 1)                                                   \
  X(CAST_F32, "f32", 1)                                                        \
  X(CAST_F64, "f64", 1)                                                        \
  X(CAST_I32, "i32", 1)                                                        \
  X(CAST_I64, "i64", 1)                                                        \
  X(CAST_BOOL, "bool", 1)                                                      \
  X(CAST_U8, "u8", 1)                                                          \
  X(CAST_F16, "f16", 1)                                                        \
  X(CAST_BF16, "bf16", 1)                                                      \
  X(CAST_I8, "i8", 1)                                                          \
  X(CAST_I16, "i16", 1)                                                        \
  X(CAST_U16, "u16", 1)                                                        \
  X(CAST_U32, "u32", 1)                                                        \
  X(CAST_U64, "u64", 1)                                                        \
  X(PHILOX, "philox", 3)

typedef enum {
#define WEIR_X(id, name, arity) WEIR_FUNC_##id,
  WEIR_FUNCS(WEIR_X)
#undef WEIR_X
      WEIR_FUNC_COUNT
} WeirFunc;

WEIR_API const char *weir_func_name(WeirFunc f);

/* Philox-4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
 * 3", SC'11): the four 32-bit words of the block of counter ctr under key. */
WEIR_API void weir_philox4x32_10(const guint32 ctr[4], const guint32 key[2],
                                 guint32 out[4]);

typedef enum {
  WEIR_AST_INT,     /* integer literal: ival */
  WEIR_AST_FLOAT,   /* floating literal: fval (text kept in `text`) */
  WEIR_AST_BOOL,    /* true/false: ival */
  WEIR_AST_NAME,    /* name: name, binding, slot */
  WEIR_AST_INDEX,   /* name[args...]: name, binding, slot, args */
  WEIR_AST_UNARY,   /* op a */
  WEIR_AST_BINARY,  /* a op b */
  WEIR_AST_TERNARY, /* a ? b : c */
  WEIR_AST_CALL,    /* func(args...) */
} WeirAstKind;

typedef enum {
  WEIR_OP_NEG,
  WEIR_OP_NOT,
  WEIR_OP_ADD,
  WEIR_OP_SUB,
  WEIR_OP_MUL,
  WEIR_OP_DIV,
  WEIR_OP_MOD,
  WEIR_OP_LT,
  WEIR_OP_LE,
  WEIR_OP_GT,
  WEIR_OP_GE,
  WEIR_OP_EQ,
  WEIR_OP_NE,
  WEIR_OP_AND,
  WEIR_OP_OR,
} WeirOp;

/* The symbol of an operator, the same in the tasklet language and in C:
 * "+", "<=", "&&", "!", ... ("-" for both negation and subtraction).
 * (static string) */
WEIR_API const char *weir_op_symbol(WeirOp op);

/* What a name refers to; filled in by weir_code_check(). */
typedef enum {
  WEIR_BIND_NONE,
  WEIR_BIND_INPUT,  /* slot = index of the input connector */
  WEIR_BIND_OUTPUT, /* slot = index of the output connector */
  WEIR_BIND_LOCAL,  /* slot = index of the local variable */
  WEIR_BIND_SYMBOL, /* integer symbol, looked up by name */
} WeirBinding;

typedef struct _WeirAst WeirAst;
struct _WeirAst {
  WeirAstKind kind;
  WeirDType type;     /* result type, set by weir_code_check() */
  gboolean untyped;   /* literal whose type adapts to its context */
  guint line, column; /* 1-based source position */
  gint64 ival;
  double fval;
  char *text; /* FLOAT: literal as written */
  char *name; /* NAME, INDEX */
  WeirBinding binding;
  guint slot;
  WeirOp op;          /* UNARY, BINARY */
  WeirFunc func;      /* CALL */
  WeirAst *a, *b, *c; /* UNARY: a; BINARY: a, b; TERNARY: a ? b : c */
  GPtrArray *args;    /* INDEX, CALL: WeirAst* (owned) */
};

typedef struct {
  WeirAst *target; /* NAME or INDEX (owned) */
  WeirAst *value;  /* owned */
} WeirStmt;

/* A parsed tasklet body or condition.  Owned; free with weir_code_free. */
typedef struct {
  GPtrArray *stmts;    /* WeirStmt* */
  WeirAst *expr;       /* for conditions (weir_code_parse_condition) */
  GPtrArray *locals;   /* char*, names of locals (after check) */
  GArray *local_types; /* WeirDType per local (after check) */
  gboolean checked;
} WeirCode;

/* Description of a connector for the type checker. */
typedef struct {
  const char *name;
  WeirDType dtype;
  guint rank; /* 0: scalar; >0: indexed as name[i0, ..., i(rank-1)] */
} WeirConnectorInfo;

/**
 * weir_code_parse: (skip)
 */
WEIR_API WeirCode *weir_code_parse(const char *text, GError **error);
/* Parses a single boolean expression (inter-state edge conditions). */
/**
 * weir_code_parse_condition: (skip)
 */
WEIR_API WeirCode *weir_code_parse_condition(const char *text, GError **error);
WEIR_API void weir_code_free(WeirCode *code);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirCode, weir_code_free)
/**
 * weir_code_copy: (skip)
 */
WEIR_API WeirCode *weir_code_copy(const WeirCode *code);

/* Canonical text of the body (one statement per line, minimal
 * parentheses).  Parsing it gives the same AST.  (transfer full) */
WEIR_API char *weir_code_to_string(const WeirCode *code);
WEIR_API char *weir_ast_to_string(const WeirAst *ast);

/* Resolves names, computes types and checks the body: every output connector
 * assigned at least once, indices given with the right rank and integer
 * type, no read of an output or of a local before assignment, function
 * arities.  symbols: set of names (char* keys) usable as i64 symbols, or
 * NULL.  For conditions, inputs/outputs are empty and the result must be
 * bool (or integer, tested against zero).  Errors name line and column. */
WEIR_API gboolean weir_code_check(WeirCode *code,
                                  const WeirConnectorInfo *inputs, guint n_in,
                                  const WeirConnectorInfo *outputs, guint n_out,
                                  GHashTable *symbols, GError **error);

/* A scalar value during interpretation. */
typedef struct {
  WeirDType type;
  union {
    double f; /* F32, F16, BF16 (rounded to the type), F64 */
    gint64 i; /* integers and BOOL (0/1); U64 as its bit pattern */
  };
} WeirValue;

/* Converts a value to another dtype with C semantics: integers wrap to the
 * narrower type, anything to bool is (v != 0) (NaN gives true), float to
 * integer truncates toward zero.  Where C is undefined: NaN converts to 0 and
 * out-of-range floats saturate to the integer type's range. */
/* The type both operands of the binary node n are converted to before its
 * operator applies (n type-checked): for a comparison the usual arithmetic
 * conversions of its operands (bool and u8 promote to i32, an untyped
 * literal takes the type of the typed operand, a float one at least f64
 * with an integer); for arithmetic n's own type; bool for && and ||.  The
 * evaluator, the FLOP count and the code generator all use it. */
WEIR_API WeirDType weir_ast_operand_type(const WeirAst *n);

/**
 * weir_value_convert: (skip)
 */
WEIR_API WeirValue weir_value_convert(WeirValue v, WeirDType to);
WEIR_API double weir_value_as_double(WeirValue v);

/* Callbacks through which the evaluator reads and writes connectors.  idx
 * holds n_idx indices (0 for scalar connectors). */
typedef struct {
  gboolean (*read)(gpointer user, guint input, const gint64 *idx, guint n_idx,
                   WeirValue *out, GError **error);
  gboolean (*write)(gpointer user, guint output, const gint64 *idx, guint n_idx,
                    WeirValue value, GError **error);
  gboolean (*symbol)(gpointer user, const char *name, gint64 *out,
                     GError **error);
  gpointer user;
} WeirCodeEnv;

/* Runs a checked body: statements in order, reading inputs and writing
 * outputs (already converted to the connector dtype) through env.  Stops at
 * the first error (WEIR_ERROR_RUNTIME, or the callback's error prefixed with
 * the line and column). */
WEIR_API gboolean weir_code_run(const WeirCode *code, const WeirCodeEnv *env,
                                GError **error);
/* Evaluates a checked condition; integer results are tested against 0. */
WEIR_API gboolean weir_code_eval_condition(const WeirCode *code,
                                           const WeirCodeEnv *env,
                                           gboolean *out, GError **error);

/* Number of floating-point operations one execution of the body (or
 * condition) performs: each arithmetic operator, unary minus and comparison
 * on floating operands counts one, as does each math function (and
 * isnan/isfinite) on floating values (minus before a literal is part of
 * the constant); min/max of k floating arguments count
 * k - 1; integer arithmetic, logical operators and casts count zero.  A
 * ternary counts its condition plus the more expensive branch.  Needs a
 * checked code (types known); returns 0 otherwise. */
WEIR_API guint64 weir_code_flops(const WeirCode *code);
/* Number of element accesses of connector conn in one execution of a
 * parsed body (checked or not): each indexed read `conn[...]` and each
 * indexed assignment `conn[...] = ...` counts one (both arms of a ternary
 * count: an upper bound).  0 when conn is never indexed, i.e. it is read
 * or written as one value. */
WEIR_API guint weir_code_indexed_accesses(const WeirCode *code,
                                          const char *conn);

G_END_DECLS

#endif
