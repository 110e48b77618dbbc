/* code.c — Weir's tasklet language (see weir-code.h for the syntax).
 *
 * The file is laid out in the order text flows through it:
 *
 *  1. Tables: operators (text, precedence) and functions (name, arity), both
 *     checked against their enums at compile time.
 *  2. AST helpers: allocation, free, deep copy.
 *  3. Lexer: produces one token at a time on demand, so errors are reported
 *     in source order.  Newlines are statement separators except inside ( )
 *     and [ ], where they are whitespace.  '#' starts a comment.
 *  4. Parser: recursive descent, one function per grammar level.  Two limits
 *     keep hostile input from exhausting the stack: the recursion nesting of
 *     parentheses, unary operators and ternaries (WEIR_CODE_MAX_NESTING), and
 *     the height of the resulting tree (WEIR_CODE_MAX_HEIGHT, which also
 *     bounds the recursion of every later pass over the AST).
 *  5. Printer: canonical text with minimal parentheses.
 *  6. Checker: binds names, computes types, adapts untyped literals to their
 *     context.
 *  7. Values: C conversions between dtypes.
 *  8. Evaluator: a tree walker over a checked AST.
 *  9. FLOP counter.
 *
 * Type rules, in addition to those in the header:
 *  - bool and u8 operands of arithmetic (+ - * / % unary -, abs, pow) are
 *    promoted to i32 first, as in C.  Ternaries and min/max keep a type that
 *    both sides share (bool ? bool : bool stays bool) and otherwise promote.
 *  - An integer literal is "untyped" (adapts to the other operand) when its
 *    value fits in i32; larger literals are i64.  Untyped expressions that
 *    are never combined with a typed operand default to i64 / f64.  Only
 *    literals (and negated literals) are retyped when they adapt; a compound
 *    untyped expression such as (1 / 3) is computed in its default type and
 *    converted, so 1 / 3 is 0 as in C.
 *  - exp log sqrt tanh erf, the trigonometric and hyperbolic functions,
 *    floor ceil rint on integers give f64; abs and
 *    pow on integers give the (promoted) integer type, pow computed through
 *    double and converted back.
 *  - min/max propagate NaN: if any argument is NaN the result is NaN.
 *  - A local's type is the type of its first assignment (i64/f64 for an
 *    untyped value); later assignments convert.
 */
#include "code-private.h"

#include <math.h>
#include <string.h>

#define WEIR_CODE_MAX_NESTING 256
#define WEIR_CODE_MAX_HEIGHT 1024

/* ------------------------------------------------------------------------
 * 1. Tables
 */

/* Precedence levels, lowest first; PREC_ATOM for literals, names, calls. */
enum {
  PREC_TERNARY,
  PREC_OR,
  PREC_AND,
  PREC_CMP,
  PREC_ADD,
  PREC_MUL,
  PREC_UNARY,
  PREC_ATOM,
};

static const struct {
  const char *text;
  int prec;
} op_table[] = {
    [WEIR_OP_NEG] = {"-", PREC_UNARY}, [WEIR_OP_NOT] = {"!", PREC_UNARY},
    [WEIR_OP_ADD] = {"+", PREC_ADD},   [WEIR_OP_SUB] = {"-", PREC_ADD},
    [WEIR_OP_MUL] = {"*", PREC_MUL},   [WEIR_OP_DIV] = {"/", PREC_MUL},
    [WEIR_OP_MOD] = {"%", PREC_MUL},   [WEIR_OP_LT] = {"<", PREC_CMP},
    [WEIR_OP_LE] = {"<=", PREC_CMP},   [WEIR_OP_GT] = {">", PREC_CMP},
    [WEIR_OP_GE] = {">=", PREC_CMP},   [WEIR_OP_EQ] = {"==", PREC_CMP},
    [WEIR_OP_NE] = {"!=", PREC_CMP},   [WEIR_OP_AND] = {"&&", PREC_AND},
    [WEIR_OP_OR] = {"||", PREC_OR},
};
G_STATIC_ASSERT(G_N_ELEMENTS(op_table) == WEIR_OP_OR + 1);

static const struct {
  const char *name;
  int arity; /* -1: two or more */
} func_table[] = {
#define WEIR_X(id, name, arity) {name, arity},
    WEIR_FUNCS(WEIR_X)
#undef WEIR_X
};
G_STATIC_ASSERT(G_N_ELEMENTS(func_table) == WEIR_FUNC_COUNT);

const char *weir_op_symbol(WeirOp op) {
  g_return_val_if_fail((guint)op < G_N_ELEMENTS(op_table), "?");
  return op_table[op].text;
}

const char *weir_func_name(WeirFunc f) {
  g_return_val_if_fail((guint)f < WEIR_FUNC_COUNT, "?");
  return func_table[f].name;
}

/* The multipliers and the key increments (the golden ratio and sqrt(3) -
 * 1 in 32 bits) of Philox-4x32; 10 rounds. */
void weir_philox4x32_10(const guint32 ctr[4], const guint32 key[2],
                        guint32 out[4]) {
  guint32 c[4] = {ctr[0], ctr[1], ctr[2], ctr[3]}, k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; round++) {
    guint64 p0 = (guint64)0xD2511F53u * c[0], p1 = (guint64)0xCD9E8D57u * c[2];
    guint32 hi0 = (guint32)(p0 >> 32), lo0 = (guint32)p0;
    guint32 hi1 = (guint32)(p1 >> 32), lo1 = (guint32)p1;
    c[0] = hi1 ^ c[1] ^ k0;
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k1;
    c[3] = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  memcpy(out, c, sizeof c);
}

static gboolean func_lookup(const char *name, gsize len, WeirFunc *out) {
  for (guint i = 0; i < WEIR_FUNC_COUNT; i++) {
    if (strlen(func_table[i].name) == len &&
        strncmp(func_table[i].name, name, len) == 0) {
      *out = (WeirFunc)i;
      return TRUE;
    }
  }
  return FALSE;
}

static gboolean func_arity_ok(WeirFunc f, guint n) {
  int arity = func_table[f].arity;
  return arity < 0 ? n >= 2 : n == (guint)arity;
}

static const char *func_arity_text(WeirFunc f) {
  switch (func_table[f].arity) {
  case -1:
    return "2 or more arguments";
  case 1:
    return "1 argument";
  default:
    return "2 arguments";
  }
}

/* weir_dtype_is_float without the call: the evaluator asks per value. */
static const gboolean dtype_is_float_table[] = {
#define WEIR_X(id, name, size, is_float) is_float,
    WEIR_DTYPES(WEIR_X)
#undef WEIR_X
};
G_STATIC_ASSERT(G_N_ELEMENTS(dtype_is_float_table) == WEIR_DTYPE_COUNT);

static inline gboolean dtype_float(WeirDType t) {
  return (guint)t < WEIR_DTYPE_COUNT && dtype_is_float_table[t];
}

static gboolean dtype_integer(WeirDType t) {
  return t != WEIR_DTYPE_BOOL && !weir_dtype_is_float(t);
}

/* ------------------------------------------------------------------------
 * 2. AST helpers
 */

static void ast_free(WeirAst *n);

static WeirAst *ast_new(WeirAstKind kind, guint line, guint column) {
  WeirAst *n = g_new0(WeirAst, 1);
  n->kind = kind;
  n->line = line;
  n->column = column;
  n->type = WEIR_DTYPE_I64;
  return n;
}

static GPtrArray *ast_array_new(void) {
  return g_ptr_array_new_with_free_func((GDestroyNotify)ast_free);
}

static void ast_free(WeirAst *n) {
  if (n == NULL)
    return;
  g_free(n->text);
  g_free(n->name);
  ast_free(n->a);
  ast_free(n->b);
  ast_free(n->c);
  if (n->args)
    g_ptr_array_unref(n->args);
  g_free(n);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirAst, ast_free)

static WeirAst *ast_copy(const WeirAst *n) {
  if (n == NULL)
    return NULL;
  WeirAst *r = g_new(WeirAst, 1);
  *r = *n;
  r->text = g_strdup(n->text);
  r->name = g_strdup(n->name);
  r->a = ast_copy(n->a);
  r->b = ast_copy(n->b);
  r->c = ast_copy(n->c);
  if (n->args) {
    r->args = ast_array_new();
    for (guint i = 0; i < n->args->len; i++)
      g_ptr_array_add(r->args, ast_copy(g_ptr_array_index(n->args, i)));
  }
  return r;
}

static void stmt_free(WeirStmt *s) {
  ast_free(s->target);
  ast_free(s->value);
  g_free(s);
}

static WeirCode *code_new(void) {
  WeirCode *code = g_new0(WeirCode, 1);
  code->stmts = g_ptr_array_new_with_free_func((GDestroyNotify)stmt_free);
  code->locals = g_ptr_array_new_with_free_func(g_free);
  code->local_types = g_array_new(FALSE, FALSE, sizeof(WeirDType));
  return code;
}

void weir_code_free(WeirCode *code) {
  if (code == NULL)
    return;
  g_ptr_array_unref(code->stmts);
  ast_free(code->expr);
  g_ptr_array_unref(code->locals);
  g_array_unref(code->local_types);
  g_free(code);
}

WeirCode *weir_code_copy(const WeirCode *code) {
  g_return_val_if_fail(code != NULL, NULL);
  WeirCode *r = code_new();
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *s = g_ptr_array_index(code->stmts, i);
    WeirStmt *t = g_new(WeirStmt, 1);
    t->target = ast_copy(s->target);
    t->value = ast_copy(s->value);
    g_ptr_array_add(r->stmts, t);
  }
  r->expr = ast_copy(code->expr);
  for (guint i = 0; i < code->locals->len; i++)
    g_ptr_array_add(r->locals, g_strdup(g_ptr_array_index(code->locals, i)));
  g_array_append_vals(r->local_types, code->local_types->data,
                      code->local_types->len);
  r->checked = code->checked;
  return r;
}

/* ------------------------------------------------------------------------
 * 3. Lexer
 */

typedef enum {
  TOK_EOF,
  TOK_NEWLINE,
  TOK_SEMI,
  TOK_INT,
  TOK_FLOAT,
  TOK_NAME,
  TOK_TRUE,
  TOK_FALSE,
  TOK_LPAREN,
  TOK_RPAREN,
  TOK_LBRACK,
  TOK_RBRACK,
  TOK_COMMA,
  TOK_ASSIGN,
  TOK_QUESTION,
  TOK_COLON,
  TOK_PLUS,
  TOK_MINUS,
  TOK_STAR,
  TOK_SLASH,
  TOK_PERCENT,
  TOK_NOT,
  TOK_LT,
  TOK_LE,
  TOK_GT,
  TOK_GE,
  TOK_EQ,
  TOK_NE,
  TOK_AND,
  TOK_OR,
} TokKind;

typedef struct {
  TokKind kind;
  const char *start;
  gsize len;
  guint line, column;
  gint64 ival;
  double fval;
} Token;

typedef struct {
  const char *pos;        /* next character to lex */
  const char *line_start; /* first character of the current line */
  guint line;
  guint brackets; /* open ( and [ : newlines inside are whitespace */
  guint nesting;  /* recursion depth of parse_expr / parse_unary */
  Token tok;      /* current token */
} Parser;

static char *token_describe(const Token *t) {
  if (t->kind == TOK_EOF)
    return g_strdup("end of input");
  if (t->kind == TOK_NEWLINE)
    return g_strdup("end of line");
  g_autofree char *raw = g_strndup(t->start, MIN(t->len, (gsize)40));
  g_autofree char *esc = g_strescape(raw, NULL);
  return g_strdup_printf("'%s%s'", esc, t->len > 40 ? "..." : "");
}

G_GNUC_PRINTF(4, 5)
static void parse_error(GError **error, guint line, guint column,
                        const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE, "line %u, column %u: %s",
              line, column, msg);
}

/* "line L, column C: expected WHAT (found 'TOKEN')" at the current token. */
static void parse_expected(Parser *p, const char *what, GError **error) {
  g_autofree char *found = token_describe(&p->tok);
  parse_error(error, p->tok.line, p->tok.column, "expected %s (found %s)", what,
              found);
}

static gboolean is_name_start(char c) {
  return g_ascii_isalpha(c) || c == '_';
}

static gboolean is_name_char(char c) {
  return g_ascii_isalnum(c) || c == '_';
}

static gboolean lex_number(Parser *p, Token *t, GError **error) {
  const char *s = p->pos;
  gboolean is_float = FALSE, bad = FALSE;
  while (g_ascii_isdigit(*s))
    s++;
  if (*s == '.') {
    is_float = TRUE;
    s++;
    while (g_ascii_isdigit(*s))
      s++;
  }
  if (*s == 'e' || *s == 'E') {
    is_float = TRUE;
    s++;
    if (*s == '+' || *s == '-')
      s++;
    if (!g_ascii_isdigit(*s))
      bad = TRUE;
    while (g_ascii_isdigit(*s))
      s++;
  }
  if (is_name_char(*s) || *s == '.')
    bad = TRUE;
  if (bad) {
    while (is_name_char(*s) || *s == '.' ||
           ((*s == '+' || *s == '-') && (s[-1] == 'e' || s[-1] == 'E')))
      s++;
    g_autofree char *text = g_strndup(p->pos, s - p->pos);
    g_autofree char *esc = g_strescape(text, NULL);
    parse_error(error, t->line, t->column, "malformed number '%s'", esc);
    return FALSE;
  }
  t->start = p->pos;
  t->len = s - p->pos;
  if (is_float) {
    g_autofree char *text = g_strndup(t->start, t->len);
    t->kind = TOK_FLOAT;
    t->fval = g_ascii_strtod(text, NULL);
  } else {
    guint64 v = 0;
    for (const char *c = t->start; c < s; c++) {
      guint d = (guint)(*c - '0');
      if (v > ((guint64)G_MAXINT64 - d) / 10) {
        g_autofree char *text = g_strndup(t->start, t->len);
        parse_error(error, t->line, t->column,
                    "integer literal '%s' is out of range", text);
        return FALSE;
      }
      v = v * 10 + d;
    }
    t->kind = TOK_INT;
    t->ival = (gint64)v;
  }
  p->pos = s;
  return TRUE;
}

/* Lexes the next token into p->tok. */
static gboolean lex(Parser *p, GError **error) {
  Token *t = &p->tok;
  for (;;) {
    char c = *p->pos;
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      p->pos++;
    } else if (c == '#') {
      while (*p->pos != '\0' && *p->pos != '\n')
        p->pos++;
    } else if (c == '\n' && p->brackets > 0) {
      p->pos++;
      p->line++;
      p->line_start = p->pos;
    } else {
      break;
    }
  }
  memset(t, 0, sizeof *t);
  t->start = p->pos;
  t->len = 1;
  t->line = p->line;
  t->column = (guint)(p->pos - p->line_start) + 1;

  char c = *p->pos;
  char n = c != '\0' ? p->pos[1] : '\0';
  if (c == '\0') {
    t->kind = TOK_EOF;
    t->len = 0;
    return TRUE;
  }
  if (c == '\n') {
    t->kind = TOK_NEWLINE;
    p->pos++;
    p->line++;
    p->line_start = p->pos;
    return TRUE;
  }
  if (g_ascii_isdigit(c) || (c == '.' && g_ascii_isdigit(n)))
    return lex_number(p, t, error);
  if (is_name_start(c)) {
    const char *s = p->pos;
    while (is_name_char(*s))
      s++;
    t->len = s - p->pos;
    p->pos = s;
    if (t->len == 4 && strncmp(t->start, "true", 4) == 0)
      t->kind = TOK_TRUE;
    else if (t->len == 5 && strncmp(t->start, "false", 5) == 0)
      t->kind = TOK_FALSE;
    else
      t->kind = TOK_NAME;
    return TRUE;
  }

  gboolean two = FALSE;
  switch (c) {
  case ';':
    t->kind = TOK_SEMI;
    break;
  case '(':
    t->kind = TOK_LPAREN;
    p->brackets++;
    break;
  case '[':
    t->kind = TOK_LBRACK;
    p->brackets++;
    break;
  case ')':
  case ']':
    t->kind = c == ')' ? TOK_RPAREN : TOK_RBRACK;
    if (p->brackets > 0)
      p->brackets--;
    break;
  case ',':
    t->kind = TOK_COMMA;
    break;
  case '?':
    t->kind = TOK_QUESTION;
    break;
  case ':':
    t->kind = TOK_COLON;
    break;
  case '+':
    t->kind = TOK_PLUS;
    break;
  case '-':
    t->kind = TOK_MINUS;
    break;
  case '*':
    t->kind = TOK_STAR;
    break;
  case '/':
    t->kind = TOK_SLASH;
    break;
  case '%':
    t->kind = TOK_PERCENT;
    break;
  case '=':
    two = n == '=';
    t->kind = two ? TOK_EQ : TOK_ASSIGN;
    break;
  case '!':
    two = n == '=';
    t->kind = two ? TOK_NE : TOK_NOT;
    break;
  case '<':
    two = n == '=';
    t->kind = two ? TOK_LE : TOK_LT;
    break;
  case '>':
    two = n == '=';
    t->kind = two ? TOK_GE : TOK_GT;
    break;
  case '&':
  case '|':
    if (n != c) {
      parse_error(error, t->line, t->column, "expected '%c%c' (found '%c')", c,
                  c, c);
      return FALSE;
    }
    two = TRUE;
    t->kind = c == '&' ? TOK_AND : TOK_OR;
    break;
  default: {
    char buf[2] = {c, '\0'};
    g_autofree char *esc = g_strescape(buf, NULL);
    parse_error(error, t->line, t->column, "unexpected character '%s'", esc);
    return FALSE;
  }
  }
  t->len = two ? 2 : 1;
  p->pos += t->len;
  return TRUE;
}

static void parser_init(Parser *p, const char *text) {
  memset(p, 0, sizeof *p);
  p->pos = text;
  p->line_start = text;
  p->line = 1;
}

/* ------------------------------------------------------------------------
 * 4. Parser.  Every parse function returns an owned node or NULL with
 * *error set, and stores the height of the returned tree in *h.
 */

static WeirAst *parse_expr(Parser *p, guint *h, GError **error);

static gboolean expect(Parser *p, TokKind kind, const char *what,
                       GError **error) {
  if (p->tok.kind != kind) {
    parse_expected(p, what, error);
    return FALSE;
  }
  return lex(p, error);
}

static gboolean check_height(const WeirAst *n, guint h, GError **error) {
  if (h > WEIR_CODE_MAX_HEIGHT) {
    parse_error(error, n->line, n->column,
                "expression too deeply nested (more than %d levels)",
                WEIR_CODE_MAX_HEIGHT);
    return FALSE;
  }
  return TRUE;
}

static gboolean nesting_enter(Parser *p, GError **error) {
  if (p->nesting >= WEIR_CODE_MAX_NESTING) {
    parse_error(error, p->tok.line, p->tok.column,
                "expression too deeply nested (more than %d levels)",
                WEIR_CODE_MAX_NESTING);
    return FALSE;
  }
  p->nesting++;
  return TRUE;
}

/* Parses "e {, e} CLOSE" after the opening bracket into n->args. */
static gboolean parse_list(Parser *p, WeirAst *n, TokKind close,
                           const char *what, guint *h, GError **error) {
  n->args = ast_array_new();
  *h = 1;
  if (close == TOK_RPAREN && p->tok.kind == TOK_RPAREN)
    return lex(p, error);
  for (;;) {
    guint ah;
    WeirAst *arg = parse_expr(p, &ah, error);
    if (arg == NULL)
      return FALSE;
    g_ptr_array_add(n->args, arg);
    *h = MAX(*h, ah + 1);
    if (p->tok.kind == TOK_COMMA) {
      if (!lex(p, error))
        return FALSE;
      continue;
    }
    return expect(p, close, what, error);
  }
}

static WeirAst *parse_name_suffix(Parser *p, guint *h, GError **error) {
  Token name = p->tok;
  if (!lex(p, error))
    return NULL;
  g_autoptr(WeirAst) n = ast_new(WEIR_AST_NAME, name.line, name.column);
  n->name = g_strndup(name.start, name.len);
  *h = 1;
  if (p->tok.kind == TOK_LPAREN) {
    n->kind = WEIR_AST_CALL;
    if (!func_lookup(name.start, name.len, &n->func)) {
      parse_error(error, name.line, name.column, "unknown function '%s'",
                  n->name);
      return NULL;
    }
    g_clear_pointer(&n->name, g_free);
    if (!lex(p, error) || !parse_list(p, n, TOK_RPAREN, "',' or ')'", h, error))
      return NULL;
    if (!func_arity_ok(n->func, n->args->len)) {
      parse_error(error, name.line, name.column,
                  "function '%s' takes %s (found %u)", weir_func_name(n->func),
                  func_arity_text(n->func), n->args->len);
      return NULL;
    }
  } else if (p->tok.kind == TOK_LBRACK) {
    n->kind = WEIR_AST_INDEX;
    if (!lex(p, error) || !parse_list(p, n, TOK_RBRACK, "',' or ']'", h, error))
      return NULL;
  }
  if (!check_height(n, *h, error))
    return NULL;
  return g_steal_pointer(&n);
}

static WeirAst *parse_primary(Parser *p, guint *h, GError **error) {
  Token t = p->tok;
  WeirAst *n;
  *h = 1;
  switch (t.kind) {
  case TOK_NAME:
    return parse_name_suffix(p, h, error);
  case TOK_INT:
    n = ast_new(WEIR_AST_INT, t.line, t.column);
    n->ival = t.ival;
    n->untyped = TRUE;
    break;
  case TOK_FLOAT:
    n = ast_new(WEIR_AST_FLOAT, t.line, t.column);
    n->fval = t.fval;
    n->text = g_strndup(t.start, t.len);
    n->type = WEIR_DTYPE_F64;
    n->untyped = TRUE;
    break;
  case TOK_TRUE:
  case TOK_FALSE:
    n = ast_new(WEIR_AST_BOOL, t.line, t.column);
    n->ival = t.kind == TOK_TRUE;
    n->type = WEIR_DTYPE_BOOL;
    break;
  case TOK_LPAREN: {
    if (!lex(p, error))
      return NULL;
    g_autoptr(WeirAst) inner = parse_expr(p, h, error);
    if (inner == NULL || !expect(p, TOK_RPAREN, "')'", error))
      return NULL;
    return g_steal_pointer(&inner);
  }
  default:
    parse_expected(p, "an expression", error);
    return NULL;
  }
  if (!lex(p, error)) {
    ast_free(n);
    return NULL;
  }
  return n;
}

static WeirAst *parse_unary(Parser *p, guint *h, GError **error) {
  if (p->tok.kind != TOK_MINUS && p->tok.kind != TOK_NOT)
    return parse_primary(p, h, error);
  Token t = p->tok;
  if (!nesting_enter(p, error))
    return NULL;
  g_autoptr(WeirAst) n = ast_new(WEIR_AST_UNARY, t.line, t.column);
  n->op = t.kind == TOK_MINUS ? WEIR_OP_NEG : WEIR_OP_NOT;
  if (lex(p, error))
    n->a = parse_unary(p, h, error);
  p->nesting--;
  if (n->a == NULL)
    return NULL;
  *h += 1;
  if (!check_height(n, *h, error))
    return NULL;
  return g_steal_pointer(&n);
}

static gboolean token_binop(TokKind kind, WeirOp *op) {
  static const struct {
    TokKind tok;
    WeirOp op;
  } map[] = {
      {TOK_PLUS, WEIR_OP_ADD},    {TOK_MINUS, WEIR_OP_SUB},
      {TOK_STAR, WEIR_OP_MUL},    {TOK_SLASH, WEIR_OP_DIV},
      {TOK_PERCENT, WEIR_OP_MOD}, {TOK_LT, WEIR_OP_LT},
      {TOK_LE, WEIR_OP_LE},       {TOK_GT, WEIR_OP_GT},
      {TOK_GE, WEIR_OP_GE},       {TOK_EQ, WEIR_OP_EQ},
      {TOK_NE, WEIR_OP_NE},       {TOK_AND, WEIR_OP_AND},
      {TOK_OR, WEIR_OP_OR},
  };
  for (guint i = 0; i < G_N_ELEMENTS(map); i++) {
    if (map[i].tok == kind) {
      *op = map[i].op;
      return TRUE;
    }
  }
  return FALSE;
}

/* Binary operators of precedence prec and above: left associative, except
 * comparisons, which do not chain. */
static WeirAst *parse_binary(Parser *p, int prec, guint *h, GError **error) {
  if (prec == PREC_UNARY)
    return parse_unary(p, h, error);
  g_autoptr(WeirAst) left = parse_binary(p, prec + 1, h, error);
  if (left == NULL)
    return NULL;
  WeirOp op;
  while (token_binop(p->tok.kind, &op) && op_table[op].prec == prec) {
    Token t = p->tok;
    guint rh;
    if (!lex(p, error))
      return NULL;
    WeirAst *right = parse_binary(p, prec + 1, &rh, error);
    if (right == NULL)
      return NULL;
    WeirAst *n = ast_new(WEIR_AST_BINARY, t.line, t.column);
    n->op = op;
    n->a = g_steal_pointer(&left);
    n->b = right;
    left = n;
    *h = MAX(*h, rh) + 1;
    if (!check_height(n, *h, error))
      return NULL;
    if (prec == PREC_CMP) {
      if (token_binop(p->tok.kind, &op) && op_table[op].prec == PREC_CMP) {
        parse_error(error, p->tok.line, p->tok.column,
                    "comparisons cannot be chained; use parentheses "
                    "(found '%s')",
                    op_table[op].text);
        return NULL;
      }
      break;
    }
  }
  return g_steal_pointer(&left);
}

static WeirAst *parse_expr(Parser *p, guint *h, GError **error) {
  if (!nesting_enter(p, error))
    return NULL;
  g_autoptr(WeirAst) n = parse_binary(p, PREC_OR, h, error);
  if (n != NULL && p->tok.kind == TOK_QUESTION) {
    WeirAst *t = ast_new(WEIR_AST_TERNARY, p->tok.line, p->tok.column);
    guint bh = 0, ch = 0;
    t->a = g_steal_pointer(&n);
    n = t;
    if (lex(p, error) && (t->b = parse_expr(p, &bh, error)) != NULL &&
        expect(p, TOK_COLON, "':'", error) &&
        (t->c = parse_expr(p, &ch, error)) != NULL) {
      *h = MAX(*h, MAX(bh, ch)) + 1;
      if (!check_height(t, *h, error))
        g_clear_pointer(&n, ast_free);
    } else {
      g_clear_pointer(&n, ast_free);
    }
  }
  p->nesting--;
  return g_steal_pointer(&n);
}

static WeirStmt *parse_stmt(Parser *p, GError **error) {
  if (p->tok.kind != TOK_NAME) {
    parse_expected(p, "a name", error);
    return NULL;
  }
  Token name = p->tok;
  g_autoptr(WeirAst) target = ast_new(WEIR_AST_NAME, name.line, name.column);
  target->name = g_strndup(name.start, name.len);
  guint h;
  if (!lex(p, error))
    return NULL;
  if (p->tok.kind == TOK_LBRACK) {
    target->kind = WEIR_AST_INDEX;
    if (!lex(p, error) ||
        !parse_list(p, target, TOK_RBRACK, "',' or ']'", &h, error))
      return NULL;
  }
  if (!expect(p, TOK_ASSIGN, "'='", error))
    return NULL;
  WeirAst *value = parse_expr(p, &h, error);
  if (value == NULL)
    return NULL;
  WeirStmt *s = g_new(WeirStmt, 1);
  s->target = g_steal_pointer(&target);
  s->value = value;
  return s;
}

static gboolean is_separator(TokKind kind) {
  return kind == TOK_SEMI || kind == TOK_NEWLINE;
}

WeirCode *weir_code_parse(const char *text, GError **error) {
  g_return_val_if_fail(text != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  g_autoptr(WeirCode) code = code_new();
  Parser p;
  parser_init(&p, text);
  if (!lex(&p, error))
    return NULL;
  for (;;) {
    while (is_separator(p.tok.kind))
      if (!lex(&p, error))
        return NULL;
    if (p.tok.kind == TOK_EOF)
      break;
    WeirStmt *s = parse_stmt(&p, error);
    if (s == NULL)
      return NULL;
    g_ptr_array_add(code->stmts, s);
    if (!is_separator(p.tok.kind) && p.tok.kind != TOK_EOF) {
      parse_expected(&p, "';' or end of line", error);
      return NULL;
    }
  }
  return g_steal_pointer(&code);
}

WeirCode *weir_code_parse_condition(const char *text, GError **error) {
  g_return_val_if_fail(text != NULL, NULL);
  g_return_val_if_fail(error == NULL || *error == NULL, NULL);
  g_autoptr(WeirCode) code = code_new();
  Parser p;
  guint h;
  parser_init(&p, text);
  /* A condition is a single expression: newlines act as whitespace. */
  p.brackets = 1;
  if (!lex(&p, error))
    return NULL;
  code->expr = parse_expr(&p, &h, error);
  if (code->expr == NULL)
    return NULL;
  if (p.tok.kind != TOK_EOF) {
    parse_expected(&p, "end of condition", error);
    return NULL;
  }
  return g_steal_pointer(&code);
}

/* ------------------------------------------------------------------------
 * 5. Printer
 */

static gboolean literal_negative(const WeirAst *n) {
  if (n->kind == WEIR_AST_INT)
    return n->ival < 0;
  if (n->kind == WEIR_AST_FLOAT)
    return n->text ? n->text[0] == '-' : signbit(n->fval) != 0;
  return FALSE;
}

static int ast_prec(const WeirAst *n) {
  switch (n->kind) {
  case WEIR_AST_TERNARY:
    return PREC_TERNARY;
  case WEIR_AST_BINARY:
    return op_table[n->op].prec;
  case WEIR_AST_UNARY:
    return PREC_UNARY;
  default:
    /* A negative literal (only from hand-built ASTs) prints like -x. */
    return literal_negative(n) ? PREC_UNARY : PREC_ATOM;
  }
}

static void print_float(GString *s, const WeirAst *n) {
  if (n->text != NULL) {
    g_string_append(s, n->text);
    return;
  }
  if (isnan(n->fval)) {
    g_string_append(s, "(0.0 / 0.0)");
    return;
  }
  if (isinf(n->fval)) {
    g_string_append(s, n->fval < 0 ? "-1e999" : "1e999");
    return;
  }
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.17g", n->fval);
  g_string_append(s, buf);
  if (strpbrk(buf, ".e") == NULL)
    g_string_append(s, ".0");
}

static void print_ast(GString *s, const WeirAst *n, int min_prec);

static void print_list(GString *s, const GPtrArray *args) {
  for (guint i = 0; args && i < args->len; i++) {
    if (i > 0)
      g_string_append(s, ", ");
    print_ast(s, g_ptr_array_index(args, i), PREC_TERNARY);
  }
}

static void print_ast(GString *s, const WeirAst *n, int min_prec) {
  gboolean paren = ast_prec(n) < min_prec;
  if (paren)
    g_string_append_c(s, '(');
  switch (n->kind) {
  case WEIR_AST_INT:
    g_string_append_printf(s, "%" G_GINT64_FORMAT, n->ival);
    break;
  case WEIR_AST_FLOAT:
    print_float(s, n);
    break;
  case WEIR_AST_BOOL:
    g_string_append(s, n->ival ? "true" : "false");
    break;
  case WEIR_AST_NAME:
    g_string_append(s, n->name);
    break;
  case WEIR_AST_INDEX:
    g_string_append_printf(s, "%s[", n->name);
    print_list(s, n->args);
    g_string_append_c(s, ']');
    break;
  case WEIR_AST_CALL:
    g_string_append_printf(s, "%s(", weir_func_name(n->func));
    print_list(s, n->args);
    g_string_append_c(s, ')');
    break;
  case WEIR_AST_UNARY:
    g_string_append(s, op_table[n->op].text);
    print_ast(s, n->a, PREC_UNARY);
    break;
  case WEIR_AST_BINARY: {
    int prec = op_table[n->op].prec;
    /* Left associative: a right operand of the same level needs parens;
     * comparisons do not chain, so neither side may be a comparison. */
    print_ast(s, n->a, prec == PREC_CMP ? prec + 1 : prec);
    g_string_append_printf(s, " %s ", op_table[n->op].text);
    print_ast(s, n->b, prec + 1);
    break;
  }
  case WEIR_AST_TERNARY:
    print_ast(s, n->a, PREC_OR);
    g_string_append(s, " ? ");
    print_ast(s, n->b, PREC_TERNARY);
    g_string_append(s, " : ");
    print_ast(s, n->c, PREC_TERNARY);
    break;
  }
  if (paren)
    g_string_append_c(s, ')');
}

char *weir_ast_to_string(const WeirAst *ast) {
  g_return_val_if_fail(ast != NULL, NULL);
  GString *s = g_string_new(NULL);
  print_ast(s, ast, PREC_TERNARY);
  return g_string_free(s, FALSE);
}

char *weir_code_to_string(const WeirCode *code) {
  g_return_val_if_fail(code != NULL, NULL);
  GString *s = g_string_new(NULL);
  if (code->expr != NULL)
    print_ast(s, code->expr, PREC_TERNARY);
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(code->stmts, i);
    if (s->len > 0)
      g_string_append_c(s, '\n');
    print_ast(s, st->target, PREC_ATOM);
    g_string_append(s, " = ");
    print_ast(s, st->value, PREC_TERNARY);
  }
  return g_string_free(s, FALSE);
}

/* ------------------------------------------------------------------------
 * 6. Checker
 */

typedef struct {
  WeirCode *code;
  const WeirConnectorInfo *inputs;
  guint n_in;
  const WeirConnectorInfo *outputs;
  guint n_out;
  GHashTable *symbols;
  gboolean *assigned; /* per output */
} Checker;

G_GNUC_PRINTF(3, 4)
static void check_error(GError **error, const WeirAst *n, const char *fmt,
                        ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "line %u, column %u: %s",
              n->line, n->column, msg);
}

/* Promotion before arithmetic: bool and the integers narrower than 32 bits
 * take part as i32 (C's integer promotion), u32 as i64 (so that u32
 * arithmetic stored back to u32 wraps as in C, and comparisons with signed
 * values are exact), f16 and bf16 as f32 (computed in f32, rounded on
 * store).  u64 stays u64 (unsigned 64-bit arithmetic). */
static WeirDType promote(WeirDType t) {
  switch (t) {
  case WEIR_DTYPE_BOOL:
  case WEIR_DTYPE_U8:
  case WEIR_DTYPE_I8:
  case WEIR_DTYPE_I16:
  case WEIR_DTYPE_U16:
    return WEIR_DTYPE_I32;
  case WEIR_DTYPE_U32:
    return WEIR_DTYPE_I64;
  case WEIR_DTYPE_F16:
  case WEIR_DTYPE_BF16:
    return WEIR_DTYPE_F32;
  default:
    return t;
  }
}

/* Type of an untyped operand (lit) combined with a typed one. */
static WeirDType literal_join(WeirDType lit, WeirDType typed) {
  if (dtype_float(lit))
    return dtype_float(typed) ? typed : WEIR_DTYPE_F64;
  return typed;
}

/* Usual arithmetic conversions with untyped operands adapting to typed
 * ones.  Deterministic in the operands' (type, untyped): the evaluator and
 * the FLOP counter call it again to recover the operand type of a
 * comparison. */
static WeirDType arith_type(WeirDType ta, gboolean ua, WeirDType tb,
                            gboolean ub, gboolean *untyped) {
  ta = promote(ta);
  tb = promote(tb);
  *untyped = ua && ub;
  if (ua && ub)
    return dtype_float(ta) || dtype_float(tb) ? WEIR_DTYPE_F64 : WEIR_DTYPE_I64;
  if (ua)
    return literal_join(ta, tb);
  if (ub)
    return literal_join(tb, ta);
  if (dtype_float(ta) || dtype_float(tb))
    return ta == WEIR_DTYPE_F64 || tb == WEIR_DTYPE_F64 ? WEIR_DTYPE_F64
                                                        : WEIR_DTYPE_F32;
  if (ta == WEIR_DTYPE_U64 || tb == WEIR_DTYPE_U64)
    return WEIR_DTYPE_U64;
  return ta == WEIR_DTYPE_I64 || tb == WEIR_DTYPE_I64 ? WEIR_DTYPE_I64
                                                      : WEIR_DTYPE_I32;
}

/* Common type of ternary branches and min/max arguments: a type both share
 * is kept, otherwise the operands promote as in arithmetic. */
static WeirDType common_type(WeirDType ta, gboolean ua, WeirDType tb,
                             gboolean ub, gboolean *untyped) {
  if (ta == tb && ua == ub) {
    *untyped = ua;
    return ta;
  }
  return arith_type(ta, ua, tb, ub, untyped);
}

WeirDType weir_ast_operand_type(const WeirAst *n) {
  g_return_val_if_fail(n != NULL && n->kind == WEIR_AST_BINARY,
                       n ? n->type : WEIR_DTYPE_F64);
  if (n->op == WEIR_OP_AND || n->op == WEIR_OP_OR)
    return WEIR_DTYPE_BOOL;
  if (!op_is_cmp(n->op))
    return n->type;
  gboolean u;
  return arith_type(n->a->type, n->a->untyped, n->b->type, n->b->untyped, &u);
}

/* Retypes an untyped literal (or a negated one) to the type of its context.
 * Compound untyped expressions keep their type and are converted. */
static void adapt(WeirAst *n, WeirDType t) {
  if (!n->untyped)
    return;
  if (n->kind == WEIR_AST_INT || n->kind == WEIR_AST_FLOAT) {
    n->type = t;
  } else if (n->kind == WEIR_AST_UNARY && n->op == WEIR_OP_NEG &&
             t != WEIR_DTYPE_BOOL && !weir_dtype_is_unsigned(t) &&
             dtype_float(t) == dtype_float(n->type)) {
    n->type = t;
    adapt(n->a, t);
  }
}

static gboolean check_expr(Checker *c, WeirAst *n, GError **error);

static gboolean check_int_or_bool(const WeirAst *operand, const char *what,
                                  const WeirAst *at, GError **error) {
  if (dtype_float(operand->type)) {
    check_error(error, at, "%s needs bool or integer operands (found %s)", what,
                weir_dtype_name(operand->type));
    return FALSE;
  }
  return TRUE;
}

static gint find_connector(const WeirConnectorInfo *conns, guint n,
                           const char *name) {
  for (guint i = 0; i < n; i++)
    if (g_strcmp0(conns[i].name, name) == 0)
      return (gint)i;
  return -1;
}

static gint find_local(const WeirCode *code, const char *name) {
  for (guint i = 0; i < code->locals->len; i++)
    if (strcmp(g_ptr_array_index(code->locals, i), name) == 0)
      return (gint)i;
  return -1;
}

static gboolean check_indices(Checker *c, WeirAst *n, GError **error) {
  if (n->kind != WEIR_AST_INDEX)
    return TRUE;
  for (guint i = 0; i < n->args->len; i++) {
    WeirAst *arg = g_ptr_array_index(n->args, i);
    if (!check_expr(c, arg, error))
      return FALSE;
    if (!dtype_integer(arg->type)) {
      check_error(error, arg, "index %u of '%s' must be an integer (found %s)",
                  i + 1, n->name, weir_dtype_name(arg->type));
      return FALSE;
    }
  }
  return TRUE;
}

/* Rank check of a connector access; what is "input" or "output". */
static gboolean check_rank(const WeirAst *n, const char *what,
                           const WeirConnectorInfo *info, GError **error) {
  guint k = n->kind == WEIR_AST_INDEX ? n->args->len : 0;
  if (info->rank == 0 && k > 0) {
    check_error(error, n, "scalar %s connector '%s' cannot be indexed", what,
                n->name);
    return FALSE;
  }
  if (k != info->rank) {
    check_error(error, n, "%s connector '%s' has rank %u but %u %s given", what,
                n->name, info->rank, k, k == 1 ? "index is" : "indices are");
    return FALSE;
  }
  return TRUE;
}

static gboolean check_not_indexed(const WeirAst *n, const char *what,
                                  GError **error) {
  if (n->kind == WEIR_AST_INDEX) {
    check_error(error, n, "%s '%s' cannot be indexed", what, n->name);
    return FALSE;
  }
  return TRUE;
}

static gboolean check_name(Checker *c, WeirAst *n, GError **error) {
  if (!check_indices(c, n, error))
    return FALSE;
  n->untyped = FALSE;
  gint i = find_local(c->code, n->name);
  if (i >= 0) {
    n->binding = WEIR_BIND_LOCAL;
    n->slot = (guint)i;
    n->type = g_array_index(c->code->local_types, WeirDType, i);
    return check_not_indexed(n, "local", error);
  }
  if ((i = find_connector(c->inputs, c->n_in, n->name)) >= 0) {
    n->binding = WEIR_BIND_INPUT;
    n->slot = (guint)i;
    n->type = c->inputs[i].dtype;
    return check_rank(n, "input", &c->inputs[i], error);
  }
  if (find_connector(c->outputs, c->n_out, n->name) >= 0) {
    check_error(error, n, "output connector '%s' cannot be read", n->name);
    return FALSE;
  }
  if (c->symbols != NULL && g_hash_table_contains(c->symbols, n->name)) {
    n->binding = WEIR_BIND_SYMBOL;
    n->slot = 0;
    n->type = WEIR_DTYPE_I64;
    return check_not_indexed(n, "symbol", error);
  }
  check_error(error, n, "unknown name '%s'", n->name);
  return FALSE;
}

static gboolean check_call(Checker *c, WeirAst *n, GError **error) {
  if ((guint)n->func >= WEIR_FUNC_COUNT || n->args == NULL ||
      !func_arity_ok(n->func, n->args->len)) {
    check_error(
        error, n, "function '%s' takes %s",
        (guint)n->func < WEIR_FUNC_COUNT ? weir_func_name(n->func) : "?",
        (guint)n->func < WEIR_FUNC_COUNT ? func_arity_text(n->func) : "?");
    return FALSE;
  }
  for (guint i = 0; i < n->args->len; i++)
    if (!check_expr(c, g_ptr_array_index(n->args, i), error))
      return FALSE;
  WeirAst *x = g_ptr_array_index(n->args, 0);
  n->untyped = FALSE;
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
  case WEIR_FUNC_FLOOR:
  case WEIR_FUNC_CEIL:
    n->type = dtype_float(x->type) ? promote(x->type) : WEIR_DTYPE_F64;
    n->untyped = x->untyped;
    break;
  case WEIR_FUNC_ABS:
    n->type = promote(x->type);
    n->untyped = x->untyped;
    break;
  case WEIR_FUNC_POW:
  case WEIR_FUNC_MIN:
  case WEIR_FUNC_MAX: {
    gboolean u = x->untyped;
    WeirDType t = n->func == WEIR_FUNC_POW ? promote(x->type) : x->type;
    for (guint i = 1; i < n->args->len; i++) {
      const WeirAst *y = g_ptr_array_index(n->args, i);
      t = n->func == WEIR_FUNC_POW ? arith_type(t, u, y->type, y->untyped, &u)
                                   : common_type(t, u, y->type, y->untyped, &u);
    }
    n->type = t;
    n->untyped = u;
    if (!u)
      for (guint i = 0; i < n->args->len; i++)
        adapt(g_ptr_array_index(n->args, i), t);
    break;
  }
  case WEIR_FUNC_ISNAN:
  case WEIR_FUNC_ISFINITE:
  case WEIR_FUNC_CAST_BOOL:
    n->type = WEIR_DTYPE_BOOL;
    break;
  case WEIR_FUNC_CAST_F32:
    n->type = WEIR_DTYPE_F32;
    break;
  case WEIR_FUNC_CAST_F64:
    n->type = WEIR_DTYPE_F64;
    break;
  case WEIR_FUNC_CAST_I32:
    n->type = WEIR_DTYPE_I32;
    break;
  case WEIR_FUNC_CAST_I64:
    n->type = WEIR_DTYPE_I64;
    break;
  case WEIR_FUNC_CAST_U8:
    n->type = WEIR_DTYPE_U8;
    break;
  case WEIR_FUNC_PHILOX:
    for (guint i = 0; i < n->args->len; i++) {
      WeirAst *y = g_ptr_array_index(n->args, i);
      if (dtype_float(y->type)) {
        check_error(error, y, "philox takes integer arguments");
        return FALSE;
      }
      adapt(y, WEIR_DTYPE_I64);
    }
    n->type = WEIR_DTYPE_I64;
    break;
  case WEIR_FUNC_CAST_F16:
    n->type = WEIR_DTYPE_F16;
    break;
  case WEIR_FUNC_CAST_BF16:
    n->type = WEIR_DTYPE_BF16;
    break;
  case WEIR_FUNC_CAST_I8:
    n->type = WEIR_DTYPE_I8;
    break;
  case WEIR_FUNC_CAST_I16:
    n->type = WEIR_DTYPE_I16;
    break;
  case WEIR_FUNC_CAST_U16:
    n->type = WEIR_DTYPE_U16;
    break;
  case WEIR_FUNC_CAST_U32:
    n->type = WEIR_DTYPE_U32;
    break;
  case WEIR_FUNC_CAST_U64:
    n->type = WEIR_DTYPE_U64;
    break;
  case WEIR_FUNC_COUNT:
    g_assert_not_reached();
  }
  return TRUE;
}

static gboolean check_expr(Checker *c, WeirAst *n, GError **error) {
  switch (n->kind) {
  case WEIR_AST_INT:
    n->type = WEIR_DTYPE_I64;
    n->untyped = n->ival >= G_MININT32 && n->ival <= G_MAXINT32;
    return TRUE;
  case WEIR_AST_FLOAT:
    n->type = WEIR_DTYPE_F64;
    n->untyped = TRUE;
    return TRUE;
  case WEIR_AST_BOOL:
    n->type = WEIR_DTYPE_BOOL;
    n->untyped = FALSE;
    return TRUE;
  case WEIR_AST_NAME:
  case WEIR_AST_INDEX:
    return check_name(c, n, error);
  case WEIR_AST_CALL:
    return check_call(c, n, error);
  case WEIR_AST_UNARY:
    if (!check_expr(c, n->a, error))
      return FALSE;
    if (n->op == WEIR_OP_NOT) {
      n->type = WEIR_DTYPE_BOOL;
      n->untyped = FALSE;
      return check_int_or_bool(n->a, "operator '!'", n, error);
    }
    n->type = promote(n->a->type);
    n->untyped = n->a->untyped;
    return TRUE;
  case WEIR_AST_BINARY: {
    if (!check_expr(c, n->a, error) || !check_expr(c, n->b, error))
      return FALSE;
    if (n->op == WEIR_OP_AND || n->op == WEIR_OP_OR) {
      g_autofree char *what =
          g_strdup_printf("operator '%s'", op_table[n->op].text);
      n->type = WEIR_DTYPE_BOOL;
      n->untyped = FALSE;
      return check_int_or_bool(n->a, what, n, error) &&
             check_int_or_bool(n->b, what, n, error);
    }
    gboolean u;
    WeirDType t =
        arith_type(n->a->type, n->a->untyped, n->b->type, n->b->untyped, &u);
    if (!u) {
      adapt(n->a, t);
      adapt(n->b, t);
    }
    if (op_is_cmp(n->op)) {
      n->type = WEIR_DTYPE_BOOL;
      n->untyped = FALSE;
    } else {
      n->type = t;
      n->untyped = u;
    }
    return TRUE;
  }
  case WEIR_AST_TERNARY: {
    if (!check_expr(c, n->a, error) || !check_expr(c, n->b, error) ||
        !check_expr(c, n->c, error))
      return FALSE;
    if (dtype_float(n->a->type)) {
      check_error(error, n,
                  "condition of '?' must be bool or integer "
                  "(found %s)",
                  weir_dtype_name(n->a->type));
      return FALSE;
    }
    gboolean u;
    n->type =
        common_type(n->b->type, n->b->untyped, n->c->type, n->c->untyped, &u);
    n->untyped = u;
    if (!u) {
      adapt(n->b, n->type);
      adapt(n->c, n->type);
    }
    return TRUE;
  }
  }
  check_error(error, n, "invalid expression node");
  return FALSE;
}

static gboolean check_stmt(Checker *c, WeirStmt *s, GError **error) {
  WeirAst *t = s->target;
  if (!check_expr(c, s->value, error) || !check_indices(c, t, error))
    return FALSE;
  t->untyped = FALSE;
  gint i = find_local(c->code, t->name);
  if (i >= 0) {
    t->binding = WEIR_BIND_LOCAL;
    t->slot = (guint)i;
    t->type = g_array_index(c->code->local_types, WeirDType, i);
    if (!check_not_indexed(t, "local", error))
      return FALSE;
  } else if ((i = find_connector(c->outputs, c->n_out, t->name)) >= 0) {
    t->binding = WEIR_BIND_OUTPUT;
    t->slot = (guint)i;
    t->type = c->outputs[i].dtype;
    if (!check_rank(t, "output", &c->outputs[i], error))
      return FALSE;
    c->assigned[i] = TRUE;
  } else if (find_connector(c->inputs, c->n_in, t->name) >= 0) {
    check_error(error, t, "cannot assign to input connector '%s'", t->name);
    return FALSE;
  } else if (c->symbols != NULL && g_hash_table_contains(c->symbols, t->name)) {
    check_error(error, t, "cannot assign to symbol '%s'", t->name);
    return FALSE;
  } else {
    if (t->kind == WEIR_AST_INDEX) {
      check_error(error, t, "unknown name '%s' cannot be indexed", t->name);
      return FALSE;
    }
    t->binding = WEIR_BIND_LOCAL;
    t->slot = c->code->locals->len;
    t->type = s->value->type;
    g_ptr_array_add(c->code->locals, g_strdup(t->name));
    g_array_append_val(c->code->local_types, t->type);
  }
  adapt(s->value, t->type);
  return TRUE;
}

gboolean weir_code_check(WeirCode *code, const WeirConnectorInfo *inputs,
                         guint n_in, const WeirConnectorInfo *outputs,
                         guint n_out, GHashTable *symbols, GError **error) {
  g_return_val_if_fail(code != NULL, FALSE);
  g_return_val_if_fail(n_in == 0 || inputs != NULL, FALSE);
  g_return_val_if_fail(n_out == 0 || outputs != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  code->checked = FALSE;
  g_ptr_array_set_size(code->locals, 0);
  g_array_set_size(code->local_types, 0);
  g_autofree gboolean *assigned = g_new0(gboolean, MAX(n_out, 1));
  Checker c = {
      .code = code,
      .inputs = inputs,
      .n_in = n_in,
      .outputs = outputs,
      .n_out = n_out,
      .symbols = symbols,
      .assigned = assigned,
  };
  if (code->expr != NULL) {
    if (!check_expr(&c, code->expr, error))
      return FALSE;
    if (dtype_float(code->expr->type)) {
      check_error(error, code->expr,
                  "condition must be bool or integer (found %s)",
                  weir_dtype_name(code->expr->type));
      return FALSE;
    }
  }
  for (guint i = 0; i < code->stmts->len; i++)
    if (!check_stmt(&c, g_ptr_array_index(code->stmts, i), error))
      return FALSE;
  if (code->expr == NULL) {
    for (guint i = 0; i < n_out; i++) {
      if (!assigned[i]) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "output connector '%s' is never assigned", outputs[i].name);
        return FALSE;
      }
    }
  }
  code->checked = TRUE;
  return TRUE;
}

/* ------------------------------------------------------------------------
 * 7. Values
 */

/* Float to integer: truncation toward zero; NaN gives 0 and values outside
 * the target's range saturate (both undefined in C). */
static gint64 float_to_int(double d, gint64 lo, gint64 hi) {
  if (isnan(d))
    return 0;
  d = trunc(d);
  if (d <= (double)lo)
    return lo;
  if (d >= (double)hi)
    return hi;
  return (gint64)d;
}

/* Float to u64: truncation; NaN gives 0, out of range saturates. */
static gint64 float_to_u64(double d) {
  if (isnan(d) || d <= 0)
    return 0;
  d = trunc(d);
  if (d >= 18446744073709551616.0)
    return (gint64)G_MAXUINT64;
  return (gint64)(guint64)d;
}

/* Rounds a double to a floating dtype's precision. */
static double round_float(double d, WeirDType to) {
  switch (to) {
  case WEIR_DTYPE_F32:
    return (float)d;
  case WEIR_DTYPE_F16:
    return weir_f16_to_float(weir_f16_from_double(d));
  case WEIR_DTYPE_BF16:
    return weir_bf16_to_float(weir_bf16_from_double(d));
  default:
    return d;
  }
}

/* Wraps an integer to a narrower integer dtype (bits kept, as in C). */
static gint64 wrap_int(guint64 u, WeirDType to) {
  switch (to) {
  case WEIR_DTYPE_I32:
    return (gint32)(guint32)u;
  case WEIR_DTYPE_U8:
    return (guint8)u;
  case WEIR_DTYPE_I8:
    return (gint8)(guint8)u;
  case WEIR_DTYPE_I16:
    return (gint16)(guint16)u;
  case WEIR_DTYPE_U16:
    return (guint16)u;
  case WEIR_DTYPE_U32:
    return (guint32)u;
  default: /* I64, U64 (bit pattern) */
    return (gint64)u;
  }
}

static gint64 float_to_intdt(double d, WeirDType to) {
  switch (to) {
  case WEIR_DTYPE_I32:
    return float_to_int(d, G_MININT32, G_MAXINT32);
  case WEIR_DTYPE_U8:
    return float_to_int(d, 0, G_MAXUINT8);
  case WEIR_DTYPE_I8:
    return float_to_int(d, G_MININT8, G_MAXINT8);
  case WEIR_DTYPE_I16:
    return float_to_int(d, G_MININT16, G_MAXINT16);
  case WEIR_DTYPE_U16:
    return float_to_int(d, 0, G_MAXUINT16);
  case WEIR_DTYPE_U32:
    return float_to_int(d, 0, G_MAXUINT32);
  case WEIR_DTYPE_U64:
    return float_to_u64(d);
  default:
    return float_to_int(d, G_MININT64, G_MAXINT64);
  }
}

WeirValue weir_value_convert(WeirValue v, WeirDType to) {
  WeirValue r = {.type = to};
  g_return_val_if_fail((guint)v.type < WEIR_DTYPE_COUNT, r);
  g_return_val_if_fail((guint)to < WEIR_DTYPE_COUNT, r);
  /* identities: a value is already rounded to its type (weir-code.h) */
  if (v.type == to &&
      (to == WEIR_DTYPE_F32 || to == WEIR_DTYPE_F64 || to == WEIR_DTYPE_I64))
    return v;
  if (dtype_float(v.type)) {
    double d = v.f;
    if (to == WEIR_DTYPE_BOOL)
      r.i = d != 0; /* NaN is true, as in C */
    else if (dtype_float(to))
      r.f = round_float(d, to);
    else
      r.i = float_to_intdt(d, to);
  } else {
    gint64 i = v.i;
    if (to == WEIR_DTYPE_BOOL)
      r.i = i != 0;
    else if (dtype_float(to))
      r.f = round_float(
          v.type == WEIR_DTYPE_U64 ? (double)(guint64)i : (double)i, to);
    else
      r.i = wrap_int((guint64)i, to);
  }
  return r;
}

/* weir_value_convert for the evaluator: the identities without a call. */
static inline WeirValue value_convert(WeirValue v, WeirDType to) {
  if (v.type == to &&
      (to == WEIR_DTYPE_F32 || to == WEIR_DTYPE_F64 || to == WEIR_DTYPE_I64))
    return v;
  return weir_value_convert(v, to);
}

double weir_value_as_double(WeirValue v) {
  if (v.type == WEIR_DTYPE_U64)
    return (double)(guint64)v.i;
  return dtype_float(v.type) ? v.f : (double)v.i;
}

static gboolean value_truth(WeirValue v) {
  return dtype_float(v.type) ? v.f != 0 : v.i != 0;
}

static WeirValue value_int(gint64 i, WeirDType t) {
  WeirValue v = {.type = WEIR_DTYPE_I64, .i = i};
  return value_convert(v, t);
}

static WeirValue value_float(double f, WeirDType t) {
  WeirValue v = {.type = WEIR_DTYPE_F64, .f = f};
  return value_convert(v, t);
}

/* ------------------------------------------------------------------------
 * 8. Evaluator
 */

typedef struct {
  const WeirCodeEnv *env;
  WeirValue *locals;
} Eval;

G_GNUC_PRINTF(3, 4)
static void runtime_error(GError **error, const WeirAst *n, const char *fmt,
                          ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME, "line %u, column %u: %s",
              n->line, n->column, msg);
}

static gboolean eval(Eval *e, const WeirAst *n, WeirValue *out, GError **error);

/* Evaluates a child and converts it to type t. */
static gboolean eval_as(Eval *e, const WeirAst *n, WeirDType t, WeirValue *out,
                        GError **error) {
  if (!eval(e, n, out, error))
    return FALSE;
  *out = value_convert(*out, t);
  return TRUE;
}

/* Calls a connector callback; a failure without a message gets one, and
 * every message is prefixed with the position of the access. */
static gboolean callback_result(gboolean ok, GError *err, const WeirAst *n,
                                const char *what, GError **error) {
  if (ok)
    return TRUE;
  if (err != NULL)
    g_propagate_prefixed_error(error, err, "line %u, column %u: ", n->line,
                               n->column);
  else
    runtime_error(error, n, "%s '%s' failed", what, n->name);
  return FALSE;
}

/* Evaluates the indices of n (if any) and calls read or write. */
static gboolean eval_access(Eval *e, const WeirAst *n, gboolean write,
                            WeirValue *value, GError **error) {
  gint64 small[8];
  g_autofree gint64 *big = NULL;
  gint64 *idx = small;
  guint k = n->kind == WEIR_AST_INDEX ? n->args->len : 0;
  if (k > G_N_ELEMENTS(small))
    idx = big = g_new(gint64, k);
  for (guint i = 0; i < k; i++) {
    WeirValue v;
    if (!eval_as(e, g_ptr_array_index(n->args, i), WEIR_DTYPE_I64, &v, error))
      return FALSE;
    idx[i] = v.i;
  }
  const WeirCodeEnv *env = e->env;
  GError *err = NULL;
  if (write) {
    if (env->write == NULL) {
      runtime_error(error, n, "no write callback for '%s'", n->name);
      return FALSE;
    }
    gboolean ok = env->write(env->user, n->slot, idx, k, *value, &err);
    return callback_result(ok, err, n, "writing", error);
  }
  if (env->read == NULL) {
    runtime_error(error, n, "no read callback for '%s'", n->name);
    return FALSE;
  }
  gboolean ok = env->read(env->user, n->slot, idx, k, value, &err);
  if (!callback_result(ok, err, n, "reading", error))
    return FALSE;
  *value = value_convert(*value, n->type);
  return TRUE;
}

static gboolean eval_name(Eval *e, const WeirAst *n, WeirValue *out,
                          GError **error) {
  switch (n->binding) {
  case WEIR_BIND_LOCAL:
    *out = e->locals[n->slot];
    return TRUE;
  case WEIR_BIND_INPUT:
    return eval_access(e, n, FALSE, out, error);
  case WEIR_BIND_SYMBOL: {
    const WeirCodeEnv *env = e->env;
    GError *err = NULL;
    gint64 v = 0;
    if (env->symbol == NULL) {
      runtime_error(error, n, "no symbol callback for '%s'", n->name);
      return FALSE;
    }
    gboolean ok = env->symbol(env->user, n->name, &v, &err);
    if (!callback_result(ok, err, n, "reading symbol", error))
      return FALSE;
    *out = value_int(v, WEIR_DTYPE_I64);
    return TRUE;
  }
  case WEIR_BIND_OUTPUT:
  case WEIR_BIND_NONE:
    break;
  }
  runtime_error(error, n, "'%s' cannot be read", n->name);
  return FALSE;
}

static gboolean eval_int_binary(const WeirAst *n, WeirOp op, gint64 x, gint64 y,
                                WeirDType t, WeirValue *out, GError **error) {
  guint64 ux = (guint64)x, uy = (guint64)y;
  gint64 r = 0;
  switch (op) {
  case WEIR_OP_ADD:
    r = (gint64)(ux + uy);
    break;
  case WEIR_OP_SUB:
    r = (gint64)(ux - uy);
    break;
  case WEIR_OP_MUL:
    r = (gint64)(ux * uy);
    break;
  case WEIR_OP_DIV:
  case WEIR_OP_MOD:
    if (y == 0) {
      runtime_error(error, n, "division by zero");
      return FALSE;
    }
    if (t == WEIR_DTYPE_U64)
      r = (gint64)(op == WEIR_OP_DIV ? ux / uy : ux % uy);
    else if (y == -1) /* avoids the overflow trap of G_MININT64 / -1 */
      r = op == WEIR_OP_DIV ? (gint64)(0 - ux) : 0;
    else
      r = op == WEIR_OP_DIV ? x / y : x % y;
    break;
  default:
    g_assert_not_reached();
  }
  *out = value_int(r, t);
  return TRUE;
}

static double float_binary(WeirOp op, double x, double y, WeirDType t) {
  if (t == WEIR_DTYPE_F32) {
    float a = (float)x, b = (float)y;
    switch (op) {
    case WEIR_OP_ADD:
      return a + b;
    case WEIR_OP_SUB:
      return a - b;
    case WEIR_OP_MUL:
      return a * b;
    case WEIR_OP_DIV:
      return a / b;
    default:
      return fmodf(a, b);
    }
  }
  switch (op) {
  case WEIR_OP_ADD:
    return x + y;
  case WEIR_OP_SUB:
    return x - y;
  case WEIR_OP_MUL:
    return x * y;
  case WEIR_OP_DIV:
    return x / y;
  default:
    return fmod(x, y);
  }
}

static gboolean compare(WeirOp op, WeirValue a, WeirValue b) {
  if (dtype_float(a.type)) {
    switch (op) {
    case WEIR_OP_LT:
      return a.f < b.f;
    case WEIR_OP_LE:
      return a.f <= b.f;
    case WEIR_OP_GT:
      return a.f > b.f;
    case WEIR_OP_GE:
      return a.f >= b.f;
    case WEIR_OP_EQ:
      return a.f == b.f;
    default:
      return a.f != b.f;
    }
  }
  if (a.type == WEIR_DTYPE_U64) {
    guint64 x = (guint64)a.i, y = (guint64)b.i;
    switch (op) {
    case WEIR_OP_LT:
      return x < y;
    case WEIR_OP_LE:
      return x <= y;
    case WEIR_OP_GT:
      return x > y;
    case WEIR_OP_GE:
      return x >= y;
    case WEIR_OP_EQ:
      return x == y;
    default:
      return x != y;
    }
  }
  switch (op) {
  case WEIR_OP_LT:
    return a.i < b.i;
  case WEIR_OP_LE:
    return a.i <= b.i;
  case WEIR_OP_GT:
    return a.i > b.i;
  case WEIR_OP_GE:
    return a.i >= b.i;
  case WEIR_OP_EQ:
    return a.i == b.i;
  default:
    return a.i != b.i;
  }
}

static gboolean eval_binary(Eval *e, const WeirAst *n, WeirValue *out,
                            GError **error) {
  WeirValue a, b;
  if (n->op == WEIR_OP_AND || n->op == WEIR_OP_OR) {
    if (!eval(e, n->a, &a, error))
      return FALSE;
    gboolean r = value_truth(a);
    if (r == (n->op == WEIR_OP_AND)) { /* not short-circuited */
      if (!eval(e, n->b, &b, error))
        return FALSE;
      r = value_truth(b);
    }
    *out = value_int(r, WEIR_DTYPE_BOOL);
    return TRUE;
  }
  WeirDType t = weir_ast_operand_type(n);
  if (!eval_as(e, n->a, t, &a, error) || !eval_as(e, n->b, t, &b, error))
    return FALSE;
  if (op_is_cmp(n->op)) {
    *out = value_int(compare(n->op, a, b), WEIR_DTYPE_BOOL);
    return TRUE;
  }
  if (dtype_float(t)) {
    out->type = t;
    out->f = float_binary(n->op, a.f, b.f, t);
    return TRUE;
  }
  return eval_int_binary(n, n->op, a.i, b.i, t, out, error);
}

static double math1(WeirFunc f, double x, WeirDType t) {
  if (t == WEIR_DTYPE_F32) {
    float a = (float)x;
    switch (f) {
    case WEIR_FUNC_EXP:
      return expf(a);
    case WEIR_FUNC_LOG:
      return logf(a);
    case WEIR_FUNC_SQRT:
      return sqrtf(a);
    case WEIR_FUNC_TANH:
      return tanhf(a);
    case WEIR_FUNC_ERF:
      return erff(a);
    case WEIR_FUNC_SIN:
      return sinf(a);
    case WEIR_FUNC_COS:
      return cosf(a);
    case WEIR_FUNC_TAN:
      return tanf(a);
    case WEIR_FUNC_ASIN:
      return asinf(a);
    case WEIR_FUNC_ACOS:
      return acosf(a);
    case WEIR_FUNC_ATAN:
      return atanf(a);
    case WEIR_FUNC_SINH:
      return sinhf(a);
    case WEIR_FUNC_COSH:
      return coshf(a);
    case WEIR_FUNC_ASINH:
      return asinhf(a);
    case WEIR_FUNC_ACOSH:
      return acoshf(a);
    case WEIR_FUNC_ATANH:
      return atanhf(a);
    case WEIR_FUNC_RINT:
      return rintf(a);
    case WEIR_FUNC_ABS:
      return fabsf(a);
    case WEIR_FUNC_FLOOR:
      return floorf(a);
    default:
      return ceilf(a);
    }
  }
  switch (f) {
  case WEIR_FUNC_EXP:
    return exp(x);
  case WEIR_FUNC_LOG:
    return log(x);
  case WEIR_FUNC_SQRT:
    return sqrt(x);
  case WEIR_FUNC_TANH:
    return tanh(x);
  case WEIR_FUNC_ERF:
    return erf(x);
  case WEIR_FUNC_SIN:
    return sin(x);
  case WEIR_FUNC_COS:
    return cos(x);
  case WEIR_FUNC_TAN:
    return tan(x);
  case WEIR_FUNC_ASIN:
    return asin(x);
  case WEIR_FUNC_ACOS:
    return acos(x);
  case WEIR_FUNC_ATAN:
    return atan(x);
  case WEIR_FUNC_SINH:
    return sinh(x);
  case WEIR_FUNC_COSH:
    return cosh(x);
  case WEIR_FUNC_ASINH:
    return asinh(x);
  case WEIR_FUNC_ACOSH:
    return acosh(x);
  case WEIR_FUNC_ATANH:
    return atanh(x);
  case WEIR_FUNC_RINT:
    return rint(x);
  case WEIR_FUNC_ABS:
    return fabs(x);
  case WEIR_FUNC_FLOOR:
    return floor(x);
  default:
    return ceil(x);
  }
}

/* min/max step: NaN propagates; otherwise C comparison. */
static WeirValue minmax_step(gboolean is_max, WeirValue acc, WeirValue v) {
  if (dtype_float(acc.type)) {
    if (isnan(acc.f))
      return acc;
    if (isnan(v.f))
      return v;
    return (is_max ? v.f > acc.f : v.f < acc.f) ? v : acc;
  }
  if (acc.type == WEIR_DTYPE_U64) {
    guint64 x = (guint64)v.i, y = (guint64)acc.i;
    return (is_max ? x > y : x < y) ? v : acc;
  }
  return (is_max ? v.i > acc.i : v.i < acc.i) ? v : acc;
}

static gboolean eval_call(Eval *e, const WeirAst *n, WeirValue *out,
                          GError **error) {
  const WeirAst *x = g_ptr_array_index(n->args, 0);
  WeirValue a, b;
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
  case WEIR_FUNC_CEIL:
    if (!eval_as(e, x, n->type, &a, error))
      return FALSE;
    if (!dtype_float(n->type)) { /* abs on integers */
      *out = value_int(a.i < 0 && n->type != WEIR_DTYPE_U64
                           ? (gint64)(0 - (guint64)a.i)
                           : a.i,
                       n->type);
      return TRUE;
    }
    out->type = n->type;
    out->f = math1(n->func, a.f, n->type);
    return TRUE;
  case WEIR_FUNC_POW:
    if (!eval_as(e, x, n->type, &a, error) ||
        !eval_as(e, g_ptr_array_index(n->args, 1), n->type, &b, error))
      return FALSE;
    if (n->type == WEIR_DTYPE_F32) {
      out->type = n->type;
      out->f = powf((float)a.f, (float)b.f);
    } else {
      *out = value_float(pow(weir_value_as_double(a), weir_value_as_double(b)),
                         n->type);
    }
    return TRUE;
  case WEIR_FUNC_MIN:
  case WEIR_FUNC_MAX:
    for (guint i = 0; i < n->args->len; i++) {
      if (!eval_as(e, g_ptr_array_index(n->args, i), n->type, &b, error))
        return FALSE;
      a = i == 0 ? b : minmax_step(n->func == WEIR_FUNC_MAX, a, b);
    }
    *out = a;
    return TRUE;
  case WEIR_FUNC_ISNAN:
  case WEIR_FUNC_ISFINITE:
    if (!eval(e, x, &a, error))
      return FALSE;
    if (n->func == WEIR_FUNC_ISNAN)
      *out = value_int(dtype_float(a.type) && isnan(a.f), WEIR_DTYPE_BOOL);
    else
      *out = value_int(!dtype_float(a.type) || isfinite(a.f), WEIR_DTYPE_BOOL);
    return TRUE;
  case WEIR_FUNC_PHILOX: {
    WeirValue v[3];
    for (guint i = 0; i < 3; i++)
      if (!eval_as(e, g_ptr_array_index(n->args, i), WEIR_DTYPE_I64, &v[i],
                   error))
        return FALSE;
    guint64 k = (guint64)v[0].i, c0 = (guint64)v[1].i, c1 = (guint64)v[2].i;
    const guint32 key[2] = {(guint32)k, (guint32)(k >> 32)};
    const guint32 ctr[4] = {(guint32)c0, (guint32)(c0 >> 32), (guint32)c1,
                            (guint32)(c1 >> 32)};
    guint32 r[4];
    weir_philox4x32_10(ctr, key, r);
    *out = value_int((gint64)r[0], WEIR_DTYPE_I64);
    return TRUE;
  }
  default: /* casts */
    return eval_as(e, x, n->type, out, error);
  }
}

static gboolean eval(Eval *e, const WeirAst *n, WeirValue *out,
                     GError **error) {
  switch (n->kind) {
  case WEIR_AST_INT:
  case WEIR_AST_BOOL:
    *out = value_int(n->ival, n->type);
    return TRUE;
  case WEIR_AST_FLOAT:
    *out = value_float(n->fval, n->type);
    return TRUE;
  case WEIR_AST_NAME:
  case WEIR_AST_INDEX:
    return eval_name(e, n, out, error);
  case WEIR_AST_UNARY: {
    WeirValue a;
    if (n->op == WEIR_OP_NOT) {
      if (!eval(e, n->a, &a, error))
        return FALSE;
      *out = value_int(!value_truth(a), WEIR_DTYPE_BOOL);
      return TRUE;
    }
    if (!eval_as(e, n->a, n->type, &a, error))
      return FALSE;
    if (dtype_float(n->type)) {
      out->type = n->type;
      out->f = -a.f;
    } else {
      *out = value_int((gint64)(0 - (guint64)a.i), n->type);
    }
    return TRUE;
  }
  case WEIR_AST_BINARY:
    return eval_binary(e, n, out, error);
  case WEIR_AST_TERNARY: {
    WeirValue c;
    if (!eval(e, n->a, &c, error))
      return FALSE;
    return eval_as(e, value_truth(c) ? n->b : n->c, n->type, out, error);
  }
  case WEIR_AST_CALL:
    return eval_call(e, n, out, error);
  }
  runtime_error(error, n, "invalid expression node");
  return FALSE;
}

gboolean weir_code_run(const WeirCode *code, const WeirCodeEnv *env,
                       GError **error) {
  g_return_val_if_fail(code != NULL && env != NULL, FALSE);
  g_return_val_if_fail(code->checked, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  WeirValue small[16];
  g_autofree WeirValue *big = NULL;
  Eval e = {.env = env, .locals = small};
  if (code->locals->len > G_N_ELEMENTS(small))
    e.locals = big = g_new0(WeirValue, code->locals->len);
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *s = g_ptr_array_index(code->stmts, i);
    WeirValue v;
    if (!eval_as(&e, s->value, s->target->type, &v, error))
      return FALSE;
    if (s->target->binding == WEIR_BIND_LOCAL)
      e.locals[s->target->slot] = v;
    else if (!eval_access(&e, s->target, TRUE, &v, error))
      return FALSE;
  }
  return TRUE;
}

gboolean weir_code_eval_condition(const WeirCode *code, const WeirCodeEnv *env,
                                  gboolean *out, GError **error) {
  g_return_val_if_fail(code != NULL && env != NULL && out != NULL, FALSE);
  g_return_val_if_fail(code->checked && code->expr != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  Eval e = {.env = env, .locals = NULL};
  WeirValue v;
  if (!eval(&e, code->expr, &v, error))
    return FALSE;
  *out = value_truth(v);
  return TRUE;
}
