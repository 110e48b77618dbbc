/* test-code.c — the tasklet language: parser, printer, checker, evaluator,
 * FLOP counter. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "weir-code.h"

/* ------------------------------------------------------------------------
 * Helpers
 */

static gboolean ast_equal(const WeirAst *a, const WeirAst *b) {
  if (a == NULL || b == NULL)
    return a == b;
  if (a->kind != b->kind || g_strcmp0(a->name, b->name) != 0)
    return FALSE;
  switch (a->kind) {
  case WEIR_AST_INT:
  case WEIR_AST_BOOL:
    return a->ival == b->ival;
  case WEIR_AST_FLOAT:
    return memcmp(&a->fval, &b->fval, sizeof(double)) == 0;
  case WEIR_AST_UNARY:
  case WEIR_AST_BINARY:
    if (a->op != b->op)
      return FALSE;
    break;
  case WEIR_AST_CALL:
    if (a->func != b->func)
      return FALSE;
    break;
  default:
    break;
  }
  if (!ast_equal(a->a, b->a) || !ast_equal(a->b, b->b) ||
      !ast_equal(a->c, b->c))
    return FALSE;
  if ((a->args == NULL) != (b->args == NULL))
    return FALSE;
  if (a->args) {
    if (a->args->len != b->args->len)
      return FALSE;
    for (guint i = 0; i < a->args->len; i++)
      if (!ast_equal(g_ptr_array_index(a->args, i),
                     g_ptr_array_index(b->args, i)))
        return FALSE;
  }
  return TRUE;
}

static gboolean code_equal(const WeirCode *a, const WeirCode *b) {
  if (!ast_equal(a->expr, b->expr) || a->stmts->len != b->stmts->len)
    return FALSE;
  for (guint i = 0; i < a->stmts->len; i++) {
    const WeirStmt *s = g_ptr_array_index(a->stmts, i);
    const WeirStmt *t = g_ptr_array_index(b->stmts, i);
    if (!ast_equal(s->target, t->target) || !ast_equal(s->value, t->value))
      return FALSE;
  }
  return TRUE;
}

static WeirCode *parse_ok(const char *text) {
  g_autoptr(GError) error = NULL;
  WeirCode *code = weir_code_parse(text, &error);
  if (code == NULL)
    fail_msg("parse of \"%s\" failed: %s", text, error->message);
  return code;
}

/* Parses, prints, re-parses: same AST and same text again. */
static char *round_trip(const char *text) {
  g_autoptr(WeirCode) code = parse_ok(text);
  g_autofree char *printed = weir_code_to_string(code);
  g_autoptr(WeirCode) again = parse_ok(printed);
  if (!code_equal(code, again))
    fail_msg("round trip of \"%s\" gave a different AST (\"%s\")", text,
             printed);
  g_autofree char *printed2 = weir_code_to_string(again);
  assert_string_equal(printed, printed2);
  return g_steal_pointer(&printed);
}

/* A test environment: connectors backed by small arrays of values. */
typedef struct {
  WeirValue *vals;
  guint rank;
  gint64 shape[2];
} Conn;

typedef struct {
  Conn in[8];
  Conn out[4];
  gint64 n_value; /* value of symbol N */
  guint reads, writes;
} TestEnv;

static gboolean flat_index(const Conn *c, const gint64 *idx, guint n,
                           gint64 *flat, GError **error) {
  if (n != c->rank) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME, "wrong rank");
    return FALSE;
  }
  gint64 f = 0;
  for (guint i = 0; i < n; i++) {
    if (idx[i] < 0 || idx[i] >= c->shape[i]) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME, "index out of bounds");
      return FALSE;
    }
    f = f * c->shape[i] + idx[i];
  }
  *flat = f;
  return TRUE;
}

static gboolean env_read(gpointer user, guint input, const gint64 *idx,
                         guint n_idx, WeirValue *out, GError **error) {
  TestEnv *e = user;
  gint64 f;
  if (!flat_index(&e->in[input], idx, n_idx, &f, error))
    return FALSE;
  *out = e->in[input].vals[f];
  e->reads++;
  return TRUE;
}

static gboolean env_write(gpointer user, guint output, const gint64 *idx,
                          guint n_idx, WeirValue value, GError **error) {
  TestEnv *e = user;
  gint64 f;
  if (!flat_index(&e->out[output], idx, n_idx, &f, error))
    return FALSE;
  e->out[output].vals[f] = value;
  e->writes++;
  return TRUE;
}

static gboolean env_symbol(gpointer user, const char *name, gint64 *out,
                           GError **error) {
  TestEnv *e = user;
  if (strcmp(name, "N") != 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME, "no symbol %s", name);
    return FALSE;
  }
  *out = e->n_value;
  return TRUE;
}

static const WeirConnectorInfo test_inputs[] = {
    {"a", WEIR_DTYPE_F32, 0},  {"b", WEIR_DTYPE_F64, 0},
    {"i", WEIR_DTYPE_I32, 0},  {"l", WEIR_DTYPE_I64, 0},
    {"p", WEIR_DTYPE_BOOL, 0}, {"u", WEIR_DTYPE_U8, 0},
    {"x", WEIR_DTYPE_F32, 1},  {"m", WEIR_DTYPE_F64, 2},
};

static WeirValue val_a = {.type = WEIR_DTYPE_F32, .f = 1.5};
static WeirValue val_b = {.type = WEIR_DTYPE_F64, .f = 2.25};
static WeirValue val_i = {.type = WEIR_DTYPE_I32, .i = 7};
static WeirValue val_l = {.type = WEIR_DTYPE_I64, .i = -3};
static WeirValue val_p = {.type = WEIR_DTYPE_BOOL, .i = 1};
static WeirValue val_u = {.type = WEIR_DTYPE_U8, .i = 200};
static WeirValue val_x[4] = {
    {.type = WEIR_DTYPE_F32, .f = 1},
    {.type = WEIR_DTYPE_F32, .f = 2},
    {.type = WEIR_DTYPE_F32, .f = 3},
    {.type = WEIR_DTYPE_F32, .f = 4},
};
static WeirValue val_m[6] = {
    {.type = WEIR_DTYPE_F64, .f = 1}, {.type = WEIR_DTYPE_F64, .f = 2},
    {.type = WEIR_DTYPE_F64, .f = 3}, {.type = WEIR_DTYPE_F64, .f = 4},
    {.type = WEIR_DTYPE_F64, .f = 5}, {.type = WEIR_DTYPE_F64, .f = 6},
};

static void env_init(TestEnv *e) {
  memset(e, 0, sizeof *e);
  e->in[0] = (Conn){&val_a, 0, {0}};
  e->in[1] = (Conn){&val_b, 0, {0}};
  e->in[2] = (Conn){&val_i, 0, {0}};
  e->in[3] = (Conn){&val_l, 0, {0}};
  e->in[4] = (Conn){&val_p, 0, {0}};
  e->in[5] = (Conn){&val_u, 0, {0}};
  e->in[6] = (Conn){val_x, 1, {4, 0}};
  e->in[7] = (Conn){val_m, 2, {2, 3}};
  e->n_value = 21;
}

static WeirCodeEnv code_env(TestEnv *e) {
  return (WeirCodeEnv){env_read, env_write, env_symbol, e};
}

static GHashTable *test_symbols(void) {
  GHashTable *s = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_add(s, (gpointer) "N");
  return s;
}

/* Parses and checks body against test_inputs, the given outputs and
 * symbol N; fails the test on error. */
static WeirCode *checked(const char *body, const WeirConnectorInfo *outs,
                         guint n_out) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) symbols = test_symbols();
  g_autoptr(WeirCode) code = parse_ok(body);
  if (!weir_code_check(code, test_inputs, G_N_ELEMENTS(test_inputs), outs,
                       n_out, symbols, &error))
    fail_msg("check of \"%s\" failed: %s", body, error->message);
  assert_true(code->checked);
  return g_steal_pointer(&code);
}

/* The message of the check error of body (which must parse). */
static char *check_message(const char *body, const WeirConnectorInfo *outs,
                           guint n_out) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) symbols = test_symbols();
  g_autoptr(WeirCode) code = parse_ok(body);
  if (weir_code_check(code, test_inputs, G_N_ELEMENTS(test_inputs), outs, n_out,
                      symbols, &error))
    fail_msg("check of \"%s\" should have failed", body);
  assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_INVALID));
  assert_false(code->checked);
  return g_strdup(error->message);
}

/* Runs "y = EXPR" with y a scalar output of dtype ydt; returns y. */
static WeirValue eval_expr(const char *expr, WeirDType ydt) {
  g_autofree char *body = g_strdup_printf("y = %s", expr);
  WeirConnectorInfo outs[] = {{"y", ydt, 0}};
  g_autoptr(WeirCode) code = checked(body, outs, 1);
  TestEnv e;
  env_init(&e);
  WeirValue y = {.type = WEIR_DTYPE_COUNT};
  e.out[0] = (Conn){&y, 0, {0}};
  WeirCodeEnv env = code_env(&e);
  g_autoptr(GError) error = NULL;
  if (!weir_code_run(code, &env, &error))
    fail_msg("run of \"%s\" failed: %s", body, error->message);
  assert_int_equal(e.writes, 1);
  assert_int_equal(y.type, ydt);
  return y;
}

/* Equal up to an ulp or two: libm and the compiler's constant folding of
 * the same function may round differently. */
static gboolean near(double a, double b) {
  return fabs(a - b) <= 4e-16 * fabs(b);
}

static double eval_f64(const char *expr) {
  return eval_expr(expr, WEIR_DTYPE_F64).f;
}

static gint64 eval_i64(const char *expr) {
  return eval_expr(expr, WEIR_DTYPE_I64).i;
}

/* Type of EXPR as the first assignment of a local. */
static WeirDType type_of(const char *expr, gboolean *untyped) {
  g_autofree char *body = g_strdup_printf("t = %s\ny = 0", expr);
  WeirConnectorInfo outs[] = {{"y", WEIR_DTYPE_F64, 0}};
  g_autoptr(WeirCode) code = checked(body, outs, 1);
  const WeirStmt *s = g_ptr_array_index(code->stmts, 0);
  assert_int_equal(g_array_index(code->local_types, WeirDType, 0),
                   s->value->type);
  if (untyped)
    *untyped = s->value->untyped;
  return s->value->type;
}

static guint64 flops_of(const char *body) {
  WeirConnectorInfo outs[] = {{"y", WEIR_DTYPE_F64, 0}};
  g_autoptr(WeirCode) code = checked(body, outs, 1);
  return weir_code_flops(code);
}

/* ------------------------------------------------------------------------
 * Parser
 */

static void test_parse_valid(void **state) {
  (void)state;
  g_autoptr(WeirCode) code = parse_ok("# leading comment\n"
                                      "\n"
                                      "t = a * 2 + b # trailing comment\n"
                                      "y[i, j + 1] = -t; z = exp(t) ;\n"
                                      "w = (a\n"
                                      "     + b);\n");
  assert_int_equal(code->stmts->len, 4);
  assert_null(code->expr);
  const WeirStmt *s0 = g_ptr_array_index(code->stmts, 0);
  assert_int_equal(s0->target->kind, WEIR_AST_NAME);
  assert_string_equal(s0->target->name, "t");
  assert_int_equal(s0->value->kind, WEIR_AST_BINARY);
  assert_int_equal(s0->value->op, WEIR_OP_ADD);
  assert_int_equal(s0->value->a->op, WEIR_OP_MUL);
  assert_int_equal(s0->value->a->b->kind, WEIR_AST_INT);
  assert_int_equal(s0->value->a->b->ival, 2);
  /* positions: the operator token */
  assert_int_equal(s0->value->line, 3);
  assert_int_equal(s0->value->column, 11);

  const WeirStmt *s1 = g_ptr_array_index(code->stmts, 1);
  assert_int_equal(s1->target->kind, WEIR_AST_INDEX);
  assert_int_equal(s1->target->args->len, 2);
  assert_int_equal(s1->value->kind, WEIR_AST_UNARY);
  assert_int_equal(s1->value->op, WEIR_OP_NEG);
  assert_int_equal(s1->target->line, 4);
  assert_int_equal(s1->target->column, 1);

  const WeirStmt *s2 = g_ptr_array_index(code->stmts, 2);
  assert_int_equal(s2->value->kind, WEIR_AST_CALL);
  assert_int_equal(s2->value->func, WEIR_FUNC_EXP);
  assert_int_equal(s2->value->args->len, 1);
  assert_int_equal(s2->target->column, 19);

  const WeirStmt *s3 = g_ptr_array_index(code->stmts, 3);
  assert_int_equal(s3->target->line, 5);
  assert_int_equal(s3->value->line, 6);

  g_autoptr(WeirCode) empty = parse_ok("  # nothing\n;\n");
  assert_int_equal(empty->stmts->len, 0);
}

static void test_parse_literals(void **state) {
  (void)state;
  static const struct {
    const char *text;
    double value;
  } floats[] = {
      {"1.0", 1.0},        {".5", 0.5},  {"2.", 2.0},  {"1e-3", 1e-3},
      {"3.4e+38", 3.4e38}, {"1E5", 1e5}, {"0.1", 0.1}, {"6.02e23", 6.02e23},
  };
  for (guint i = 0; i < G_N_ELEMENTS(floats); i++) {
    g_autofree char *body = g_strdup_printf("y = %s", floats[i].text);
    g_autoptr(WeirCode) code = parse_ok(body);
    const WeirStmt *s = g_ptr_array_index(code->stmts, 0);
    assert_int_equal(s->value->kind, WEIR_AST_FLOAT);
    assert_true(s->value->fval == floats[i].value);
    assert_string_equal(s->value->text, floats[i].text);
    assert_true(s->value->untyped);
  }
  g_autoptr(WeirCode) code =
      parse_ok("y = 9223372036854775807; z = true; w = false; v = 007");
  const WeirStmt *s = g_ptr_array_index(code->stmts, 0);
  assert_int_equal(s->value->kind, WEIR_AST_INT);
  assert_true(s->value->ival == G_MAXINT64);
  s = g_ptr_array_index(code->stmts, 1);
  assert_int_equal(s->value->kind, WEIR_AST_BOOL);
  assert_int_equal(s->value->ival, 1);
  s = g_ptr_array_index(code->stmts, 2);
  assert_int_equal(s->value->ival, 0);
  s = g_ptr_array_index(code->stmts, 3);
  assert_int_equal(s->value->ival, 7);
}

static void test_parse_every_function(void **state) {
  (void)state;
  for (guint f = 0; f < WEIR_FUNC_COUNT; f++) {
    const char *name = weir_func_name((WeirFunc)f);
    gboolean two =
        f == WEIR_FUNC_POW || f == WEIR_FUNC_MIN || f == WEIR_FUNC_MAX;
    gboolean three = f == WEIR_FUNC_PHILOX;
    g_autofree char *body = g_strdup_printf("y = %s(a%s)", name,
                                            three ? ", b, c"
                                            : two ? ", b"
                                                  : "");
    g_autoptr(WeirCode) code = parse_ok(body);
    const WeirStmt *s = g_ptr_array_index(code->stmts, 0);
    assert_int_equal(s->value->kind, WEIR_AST_CALL);
    assert_int_equal(s->value->func, f);
    assert_null(s->value->name);
    g_autofree char *printed = weir_code_to_string(code);
    assert_string_equal(printed, body);
  }
  assert_string_equal(weir_func_name(WEIR_FUNC_CAST_U8), "u8");
  /* Function names are ordinary names when not called. */
  g_autoptr(WeirCode) code = parse_ok("exp = max + 1");
  const WeirStmt *s = g_ptr_array_index(code->stmts, 0);
  assert_int_equal(s->value->a->kind, WEIR_AST_NAME);
  assert_string_equal(s->value->a->name, "max");
  g_autoptr(WeirCode) many = parse_ok("y = min(a, b, c, d)");
  s = g_ptr_array_index(many->stmts, 0);
  assert_int_equal(s->value->args->len, 4);
}

static void test_parse_precedence(void **state) {
  (void)state;
  /* a || b && c < d + e * -f  parses as  a || (b && (c < (d + (e * (-f))))) */
  g_autoptr(WeirCode) code = parse_ok("y = a || b && c < d + e * -f");
  const WeirAst *n = ((WeirStmt *)g_ptr_array_index(code->stmts, 0))->value;
  assert_int_equal(n->op, WEIR_OP_OR);
  n = n->b;
  assert_int_equal(n->op, WEIR_OP_AND);
  n = n->b;
  assert_int_equal(n->op, WEIR_OP_LT);
  n = n->b;
  assert_int_equal(n->op, WEIR_OP_ADD);
  n = n->b;
  assert_int_equal(n->op, WEIR_OP_MUL);
  assert_int_equal(n->b->kind, WEIR_AST_UNARY);

  /* left associativity: a - b - c is (a - b) - c */
  g_autoptr(WeirCode) sub = parse_ok("y = a - b - c");
  n = ((WeirStmt *)g_ptr_array_index(sub->stmts, 0))->value;
  assert_int_equal(n->a->kind, WEIR_AST_BINARY);
  assert_int_equal(n->b->kind, WEIR_AST_NAME);

  /* ternary is right associative: a ? b : c ? d : e */
  g_autoptr(WeirCode) ter = parse_ok("y = a ? b : c ? d : e");
  n = ((WeirStmt *)g_ptr_array_index(ter->stmts, 0))->value;
  assert_int_equal(n->kind, WEIR_AST_TERNARY);
  assert_int_equal(n->a->kind, WEIR_AST_NAME);
  assert_int_equal(n->c->kind, WEIR_AST_TERNARY);
}

static void test_print_round_trip(void **state) {
  (void)state;
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"y = a - (b - c)", "y = a - (b - c)"},
      {"y = (a - b) - c", "y = a - b - c"},
      {"y = -(a * b)", "y = -(a * b)"},
      {"y = (-a) * b", "y = -a * b"},
      {"y = a ? b : c ? d : e", "y = a ? b : c ? d : e"},
      {"y = a ? b : (c ? d : e)", "y = a ? b : c ? d : e"},
      {"y = (a ? b : c) ? d : e", "y = (a ? b : c) ? d : e"},
      {"y = a ? (b ? c : d) : e", "y = a ? b ? c : d : e"},
      {"y = a + (b ? c : d)", "y = a + (b ? c : d)"},
      {"y = a + (b * c)", "y = a + b * c"},
      {"y = (a + b) * c", "y = (a + b) * c"},
      {"y = a / (b * c)", "y = a / (b * c)"},
      {"y = a / b * c", "y = a / b * c"},
      {"y = a % (b % c)", "y = a % (b % c)"},
      {"y = (a < b) == (c < d)", "y = (a < b) == (c < d)"},
      {"y = !(a && b) || c", "y = !(a && b) || c"},
      {"y = a && (b || c)", "y = a && (b || c)"},
      {"y = (a || b) || c", "y = a || b || c"},
      {"y = a || (b || c)", "y = a || (b || c)"},
      {"y = -(-a)", "y = --a"},
      {"y = !!p", "y = !!p"},
      {"y = a - -b", "y = a - -b"},
      {"y=((a))", "y = a"},
      {"y[i,j+1]=x[i , j]%3", "y[i, j + 1] = x[i, j] % 3"},
      {"y = min(a,b,  c)+pow(a,2)", "y = min(a, b, c) + pow(a, 2)"},
      {"y = 1.0e-3 + .5 + 2. + 3.4e+38", "y = 1.0e-3 + .5 + 2. + 3.4e+38"},
      {"y = true ? 1 : false", "y = true ? 1 : false"},
      {"# c\n y = 1 ; z = 2;\n\n", "y = 1\nz = 2"},
      {"y = -x[(i)] * f32(exp(-a))", "y = -x[i] * f32(exp(-a))"},
      {"y = (a <= b) != (a >= b) && a > b",
       "y = (a <= b) != (a >= b) && a > b"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *printed = round_trip(cases[i].in);
    assert_string_equal(printed, cases[i].out);
  }

  /* A single expression and a condition. */
  g_autoptr(WeirCode) code = parse_ok("y = (a + b) * c");
  g_autofree char *e = weir_ast_to_string(
      ((WeirStmt *)g_ptr_array_index(code->stmts, 0))->value);
  assert_string_equal(e, "(a + b) * c");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirCode) cond =
      weir_code_parse_condition("(N > 1)\n && p", &error);
  assert_non_null(cond);
  g_autofree char *c = weir_code_to_string(cond);
  assert_string_equal(c, "N > 1 && p");

  /* Float literals without their text still print so they re-parse to the
   * same double. */
  static const char *nums[] = {"0.1", "2.0", "1e300", "3.4e+38", "1e-320"};
  for (guint i = 0; i < G_N_ELEMENTS(nums); i++) {
    g_autofree char *body = g_strdup_printf("y = %s", nums[i]);
    g_autoptr(WeirCode) f = parse_ok(body);
    WeirAst *lit = ((WeirStmt *)g_ptr_array_index(f->stmts, 0))->value;
    g_clear_pointer(&lit->text, g_free);
    g_autofree char *printed = weir_code_to_string(f);
    g_autoptr(WeirCode) again = parse_ok(printed);
    assert_true(code_equal(f, again));
  }
}

/* Random token soup: never crashes, and whatever parses round-trips. */
static void test_parse_random(void **state) {
  (void)state;
  static const char *pieces[] = {
      "a",    "b",
      "x",    "y",
      "=",    "+",
      "-",    "*",
      "/",    "%",
      "(",    ")",
      "[",    "]",
      ",",    ";",
      "\n",   "?",
      ":",    "<",
      "<=",   "==",
      "!=",   "!",
      "&&",   "||",
      "1",    "2.5",
      ".5e3", "exp",
      "min",  "true",
      "#c\n", " ",
      "&",    "$",
      "1e",   "99999999999999999999",
  };
  GRand *rand = g_rand_new_with_seed(42);
  guint parsed = 0;
  for (guint iter = 0; iter < 20000; iter++) {
    GString *s = g_string_new(iter % 2 ? "y = " : NULL);
    guint n = g_rand_int_range(rand, 0, 12);
    for (guint k = 0; k < n; k++)
      g_string_append(s,
                      pieces[g_rand_int_range(rand, 0, G_N_ELEMENTS(pieces))]);
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirCode) code = weir_code_parse(s->str, &error);
    if (code != NULL) {
      g_free(round_trip(s->str));
      parsed++;
    } else {
      assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_PARSE));
      assert_true(g_str_has_prefix(error->message, "line "));
    }
    g_autoptr(GError) error2 = NULL;
    g_autoptr(WeirCode) cond = weir_code_parse_condition(s->str, &error2);
    assert_true((cond != NULL) == (error2 == NULL));
    g_string_free(s, TRUE);
  }
  g_rand_free(rand);
  assert_true(parsed > 100);
}

static void test_parse_errors(void **state) {
  (void)state;
  static const struct {
    const char *text;
    guint line, column;
    const char *what;
  } cases[] = {
      {"y = ", 1, 5, "expected an expression (found end of input)"},
      {"y = a +", 1, 8, "expected an expression (found end of input)"},
      {"= a", 1, 1, "expected a name (found '=')"},
      {"y a", 1, 3, "expected '=' (found 'a')"},
      {"y = (a + b", 1, 11, "expected ')' (found end of input)"},
      {"y = a b", 1, 7, "expected ';' or end of line (found 'b')"},
      {"y = foo(a)", 1, 5, "unknown function 'foo'"},
      {"y = exp(a, b)", 1, 5, "function 'exp' takes 1 argument (found 2)"},
      {"y = min(a)", 1, 5, "takes 2 or more arguments (found 1)"},
      {"y = pow()", 1, 5, "takes 2 arguments (found 0)"},
      {"y = a < b < c", 1, 11, "comparisons cannot be chained"},
      {"y = a $ b", 1, 7, "unexpected character '$'"},
      {"y = a & b", 1, 7, "expected '&&' (found '&')"},
      {"y = a | b", 1, 7, "expected '||' (found '|')"},
      {"y = 99999999999999999999", 1, 5,
       "integer literal '99999999999999999999' is out of range"},
      {"y = 9223372036854775808", 1, 5, "out of range"},
      {"y = 1e", 1, 5, "malformed number '1e'"},
      {"y = 1e+x", 1, 5, "malformed number"},
      {"y = 2x", 1, 5, "malformed number '2x'"},
      {"y = 2.5.1", 1, 5, "malformed number '2.5.1'"},
      {"y = x[]", 1, 7, "expected an expression (found ']')"},
      {"y = x[1, ]", 1, 10, "expected an expression (found ']')"},
      {"y[0 = 1", 1, 5, "expected ',' or ']' (found '=')"},
      {"y = min(a b)", 1, 11, "expected ',' or ')' (found 'b')"},
      {"y = a ? b", 1, 10, "expected ':' (found end of input)"},
      {"t = 1\ny = t +\nz = 2", 2, 8,
       "expected an expression (found end of line)"},
      {"y = a\n  # comment\n  z == 1", 3, 5, "expected '=' (found '==')"},
      {"y = (a\n+ b", 2, 4, "expected ')' (found end of input)"},
      {"y = 1 = 2", 1, 7, "expected ';' or end of line (found '=')"},
      {"y = a)", 1, 6, "expected ';' or end of line (found ')')"},
      {"1 = a", 1, 1, "expected a name (found '1')"},
      {"y = a +\t* b", 1, 9, "expected an expression (found '*')"},
      {"y = true(a)", 1, 9, "expected ';' or end of line (found '(')"},
      {"y = \"s\"", 1, 5, "unexpected character '\\\"'"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirCode) code = weir_code_parse(cases[i].text, &error);
    if (code != NULL)
      fail_msg("\"%s\" should not parse", cases[i].text);
    assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_PARSE));
    g_autofree char *prefix =
        g_strdup_printf("line %u, column %u: ", cases[i].line, cases[i].column);
    if (!g_str_has_prefix(error->message, prefix) ||
        strstr(error->message, cases[i].what) == NULL)
      fail_msg("\"%s\": got \"%s\", want \"%s%s\"", cases[i].text,
               error->message, prefix, cases[i].what);
  }
}

static void test_parse_condition(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirCode) code = weir_code_parse_condition("N > 10", &error);
  assert_non_null(code);
  assert_non_null(code->expr);
  assert_int_equal(code->stmts->len, 0);
  assert_int_equal(code->expr->op, WEIR_OP_GT);

  static const struct {
    const char *text;
    const char *msg;
  } bad[] = {
      {"a == 1; b", "line 1, column 7: expected end of condition (found ';')"},
      {"x = 1", "line 1, column 3: expected end of condition (found '=')"},
      {"", "line 1, column 1: expected an expression (found end of input)"},
      {"a +", "line 1, column 4: expected an expression"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_autoptr(GError) err = NULL;
    g_autoptr(WeirCode) c = weir_code_parse_condition(bad[i].text, &err);
    assert_null(c);
    assert_true(g_error_matches(err, WEIR_ERROR, WEIR_ERROR_PARSE));
    if (!g_str_has_prefix(err->message, bad[i].msg))
      fail_msg("\"%s\": got \"%s\"", bad[i].text, err->message);
  }
}

static void expect_too_deep(const char *text) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirCode) code = weir_code_parse(text, &error);
  assert_null(code);
  assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_PARSE));
  assert_non_null(strstr(error->message, "too deeply nested"));
  assert_true(g_str_has_prefix(error->message, "line 1, column "));
}

static void test_parse_nesting_limit(void **state) {
  (void)state;
  const guint huge = 100000;
  /* Parentheses, unary operators, calls, ternaries, indices. */
  GString *s = g_string_new("y = ");
  for (guint i = 0; i < huge; i++)
    g_string_append_c(s, '(');
  g_string_append_c(s, 'a');
  for (guint i = 0; i < huge; i++)
    g_string_append_c(s, ')');
  expect_too_deep(s->str);
  g_string_assign(s, "y = ");
  for (guint i = 0; i < huge; i++)
    g_string_append(s, i % 2 ? "-" : "!");
  g_string_append_c(s, 'a');
  expect_too_deep(s->str);
  g_string_assign(s, "y = ");
  for (guint i = 0; i < huge; i++)
    g_string_append(s, "exp(");
  expect_too_deep(s->str);
  g_string_assign(s, "y = ");
  for (guint i = 0; i < huge; i++)
    g_string_append(s, "p ? 1 : ");
  g_string_append(s, "0");
  expect_too_deep(s->str);
  g_string_assign(s, "y = ");
  for (guint i = 0; i < huge; i++)
    g_string_append(s, "x[");
  expect_too_deep(s->str);
  /* A long flat chain builds a deep tree without deep recursion. */
  g_string_assign(s, "y = a");
  for (guint i = 0; i < huge; i++)
    g_string_append(s, " + a");
  expect_too_deep(s->str);

  /* Moderate nesting is fine. */
  g_string_assign(s, "y = ");
  for (guint i = 0; i < 200; i++)
    g_string_append_c(s, '(');
  g_string_append_c(s, 'a');
  for (guint i = 0; i < 200; i++)
    g_string_append_c(s, ')');
  g_autoptr(WeirCode) ok = parse_ok(s->str);
  g_string_assign(s, "y = a");
  for (guint i = 0; i < 500; i++)
    g_string_append(s, " + a");
  g_autoptr(WeirCode) chain = parse_ok(s->str);
  WeirConnectorInfo outs[] = {{"y", WEIR_DTYPE_F64, 0}};
  g_autoptr(WeirCode) sum = checked(s->str, outs, 1);
  assert_int_equal(weir_code_flops(sum), 500);
  g_string_free(s, TRUE);
}

/* ------------------------------------------------------------------------
 * Checker
 */

static void test_check_types(void **state) {
  (void)state;
  static const struct {
    const char *expr;
    WeirDType type;
  } cases[] = {
      {"a + b", WEIR_DTYPE_F64},        {"b + a", WEIR_DTYPE_F64},
      {"a + 1", WEIR_DTYPE_F32},        {"1 + a", WEIR_DTYPE_F32},
      {"a * 2.5", WEIR_DTYPE_F32},      {"a * -2.5", WEIR_DTYPE_F32},
      {"i + 1", WEIR_DTYPE_I32},        {"i + l", WEIR_DTYPE_I64},
      {"i + a", WEIR_DTYPE_F32},        {"i + 1.5", WEIR_DTYPE_F64},
      {"l * b", WEIR_DTYPE_F64},        {"u + u", WEIR_DTYPE_I32},
      {"p + p", WEIR_DTYPE_I32},        {"-u", WEIR_DTYPE_I32},
      {"-a", WEIR_DTYPE_F32},           {"i + 3000000000", WEIR_DTYPE_I64},
      {"N + i", WEIR_DTYPE_I64},        {"a < b", WEIR_DTYPE_BOOL},
      {"i == 1", WEIR_DTYPE_BOOL},      {"!i", WEIR_DTYPE_BOOL},
      {"p && i", WEIR_DTYPE_BOOL},      {"i || 0", WEIR_DTYPE_BOOL},
      {"p ? u : u", WEIR_DTYPE_U8},     {"p ? p : p", WEIR_DTYPE_BOOL},
      {"p ? p : 1", WEIR_DTYPE_I32},    {"p ? a : 1", WEIR_DTYPE_F32},
      {"p ? i : 1.5", WEIR_DTYPE_F64},  {"p ? a : b", WEIR_DTYPE_F64},
      {"min(a, b)", WEIR_DTYPE_F64},    {"max(a, 2)", WEIR_DTYPE_F32},
      {"min(i, 2)", WEIR_DTYPE_I32},    {"max(u, u)", WEIR_DTYPE_U8},
      {"max(i, l, a)", WEIR_DTYPE_F32}, {"isnan(a)", WEIR_DTYPE_BOOL},
      {"isfinite(i)", WEIR_DTYPE_BOOL}, {"f32(l)", WEIR_DTYPE_F32},
      {"f64(a)", WEIR_DTYPE_F64},       {"i32(b)", WEIR_DTYPE_I32},
      {"i64(i)", WEIR_DTYPE_I64},       {"bool(a)", WEIR_DTYPE_BOOL},
      {"u8(i)", WEIR_DTYPE_U8},         {"exp(i)", WEIR_DTYPE_F64},
      {"exp(a)", WEIR_DTYPE_F32},       {"sqrt(b)", WEIR_DTYPE_F64},
      {"floor(i)", WEIR_DTYPE_F64},     {"abs(i)", WEIR_DTYPE_I32},
      {"abs(u)", WEIR_DTYPE_I32},       {"abs(a)", WEIR_DTYPE_F32},
      {"pow(i, 2)", WEIR_DTYPE_I32},    {"pow(a, 2)", WEIR_DTYPE_F32},
      {"pow(a, b)", WEIR_DTYPE_F64},    {"x[i] * 2", WEIR_DTYPE_F32},
      {"m[0, i]", WEIR_DTYPE_F64},      {"a % 2", WEIR_DTYPE_F32},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    WeirDType t = type_of(cases[i].expr, NULL);
    if (t != cases[i].type)
      fail_msg("type of \"%s\": got %s, want %s", cases[i].expr,
               weir_dtype_name(t), weir_dtype_name(cases[i].type));
  }
  /* Untyped expressions default to i64 / f64. */
  gboolean untyped;
  assert_int_equal(type_of("1 + 2", &untyped), WEIR_DTYPE_I64);
  assert_true(untyped);
  assert_int_equal(type_of("1 + 2.0", &untyped), WEIR_DTYPE_F64);
  assert_true(untyped);
  assert_int_equal(type_of("a + 2.0", &untyped), WEIR_DTYPE_F32);
  assert_false(untyped);

  /* The literal itself is retyped to its context. */
  WeirConnectorInfo outs[] = {{"y", WEIR_DTYPE_F64, 0}};
  g_autoptr(WeirCode) code = checked("y = a + 1", outs, 1);
  const WeirStmt *s = g_ptr_array_index(code->stmts, 0);
  assert_int_equal(s->value->type, WEIR_DTYPE_F32);
  assert_int_equal(s->value->a->type, WEIR_DTYPE_F32);
  assert_int_equal(s->value->b->type, WEIR_DTYPE_F32);
  assert_int_equal(s->value->a->binding, WEIR_BIND_INPUT);
  assert_int_equal(s->value->a->slot, 0);
  assert_int_equal(s->target->binding, WEIR_BIND_OUTPUT);
  assert_int_equal(s->target->slot, 0);
  assert_int_equal(s->target->type, WEIR_DTYPE_F64);
}

/* The operand type of binary operators (weir_ast_operand_type), which the
 * evaluator, the FLOP count and the code generator share, and the operator
 * symbols (weir_op_symbol). */
static void test_operand_type(void **state) {
  (void)state;
  static const struct {
    const char *expr;
    WeirDType operands;
  } cases[] = {
      {"a < b", WEIR_DTYPE_F64},   {"a < 1", WEIR_DTYPE_F32},
      {"i < 1.5", WEIR_DTYPE_F64}, {"u == p", WEIR_DTYPE_I32},
      {"i != l", WEIR_DTYPE_I64},  {"1 < 2", WEIR_DTYPE_I64},
      {"1 < 2.5", WEIR_DTYPE_F64}, {"l >= a", WEIR_DTYPE_F32},
      {"i + 1", WEIR_DTYPE_I32},   {"a * b", WEIR_DTYPE_F64},
      {"p && i", WEIR_DTYPE_BOOL}, {"i || l", WEIR_DTYPE_BOOL},
  };
  WeirConnectorInfo outs[] = {{"y", WEIR_DTYPE_F64, 0}};
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    g_autofree char *body = g_strdup_printf("y = %s", cases[k].expr);
    g_autoptr(WeirCode) code = checked(body, outs, 1);
    const WeirStmt *st = g_ptr_array_index(code->stmts, 0);
    assert_int_equal(st->value->kind, WEIR_AST_BINARY);
    WeirDType t = weir_ast_operand_type(st->value);
    if (t != cases[k].operands)
      fail_msg("operands of \"%s\": got %s, want %s", cases[k].expr,
               weir_dtype_name(t), weir_dtype_name(cases[k].operands));
  }
  static const char *const symbols[] = {"-",  "!",  "+",  "-",  "*",
                                        "/",  "%",  "<",  "<=", ">",
                                        ">=", "==", "!=", "&&", "||"};
  G_STATIC_ASSERT(G_N_ELEMENTS(symbols) == WEIR_OP_OR + 1);
  for (guint op = 0; op < G_N_ELEMENTS(symbols); op++)
    assert_string_equal(weir_op_symbol((WeirOp)op), symbols[op]);
}

static void test_check_bindings(void **state) {
  (void)state;
  WeirConnectorInfo outs[] = {{"y", WEIR_DTYPE_F64, 0},
                              {"z", WEIR_DTYPE_F32, 1}};
  g_autoptr(WeirCode) code = checked("t = a * 2\n"
                                     "k = i + N\n"
                                     "t = t + b\n"
                                     "z[k] = t\n"
                                     "y = t + x[k - 1] + m[1, 2]",
                                     outs, 2);
  assert_int_equal(code->locals->len, 2);
  assert_string_equal(g_ptr_array_index(code->locals, 0), "t");
  assert_string_equal(g_ptr_array_index(code->locals, 1), "k");
  assert_int_equal(g_array_index(code->local_types, WeirDType, 0),
                   WEIR_DTYPE_F32);
  assert_int_equal(g_array_index(code->local_types, WeirDType, 1),
                   WEIR_DTYPE_I64);
  const WeirStmt *s = g_ptr_array_index(code->stmts, 2);
  assert_int_equal(s->target->binding, WEIR_BIND_LOCAL);
  assert_int_equal(s->target->slot, 0);
  assert_int_equal(s->target->type, WEIR_DTYPE_F32);
  assert_int_equal(s->value->type, WEIR_DTYPE_F64);
  s = g_ptr_array_index(code->stmts, 1);
  assert_int_equal(s->value->b->binding, WEIR_BIND_SYMBOL);
  s = g_ptr_array_index(code->stmts, 3);
  assert_int_equal(s->target->binding, WEIR_BIND_OUTPUT);
  assert_int_equal(s->target->slot, 1);

  /* Checking again gives the same result. */
  g_autoptr(GError) error = NULL;
  g_autoptr(GHashTable) symbols = test_symbols();
  assert_true(weir_code_check(code, test_inputs, G_N_ELEMENTS(test_inputs),
                              outs, 2, symbols, &error));
  assert_int_equal(code->locals->len, 2);

  /* A copy keeps everything, including check results. */
  g_autoptr(WeirCode) copy = weir_code_copy(code);
  assert_true(code_equal(code, copy));
  assert_true(copy->checked);
  assert_int_equal(copy->locals->len, 2);
  assert_string_equal(g_ptr_array_index(copy->locals, 1), "k");
  assert_int_equal(g_array_index(copy->local_types, WeirDType, 0),
                   WEIR_DTYPE_F32);
  s = g_ptr_array_index(copy->stmts, 2);
  assert_int_equal(s->target->binding, WEIR_BIND_LOCAL);
  assert_int_equal(s->value->type, WEIR_DTYPE_F64);
  g_autofree char *t1 = weir_code_to_string(code);
  g_autofree char *t2 = weir_code_to_string(copy);
  assert_string_equal(t1, t2);
  assert_int_equal(weir_code_flops(copy), weir_code_flops(code));
}

static void test_check_errors(void **state) {
  (void)state;
  WeirConnectorInfo y[] = {{"y", WEIR_DTYPE_F64, 0}};
  WeirConnectorInfo yz[] = {{"y", WEIR_DTYPE_F64, 0}, {"z", WEIR_DTYPE_F64, 0}};
  WeirConnectorInfo y1[] = {{"y", WEIR_DTYPE_F64, 1}};
  static const struct {
    const char *body;
    gboolean two_outputs, indexed_output;
    const char *msg;
  } cases[] = {
      {"y = q + 1", FALSE, FALSE, "line 1, column 5: unknown name 'q'"},
      {"y = t; t = 1", FALSE, FALSE, "line 1, column 5: unknown name 't'"},
      {"t = t + 1\ny = t", FALSE, FALSE, "line 1, column 5: unknown name 't'"},
      {"y = 1; z = y", TRUE, FALSE,
       "line 1, column 12: output connector 'y' cannot be read"},
      {"y = 1", TRUE, FALSE, "output connector 'z' is never assigned"},
      {"t = 1", FALSE, FALSE, "output connector 'y' is never assigned"},
      {"y = m[0]", FALSE, FALSE,
       "line 1, column 5: input connector 'm' has rank 2 but 1 index is "
       "given"},
      {"y = x", FALSE, FALSE,
       "line 1, column 5: input connector 'x' has rank 1 but 0 indices"},
      {"y = a[0]", FALSE, FALSE,
       "line 1, column 5: scalar input connector 'a' cannot be indexed"},
      {"y = x[a]", FALSE, FALSE,
       "line 1, column 7: index 1 of 'x' must be an integer (found f32)"},
      {"y = m[0, 1.5]", FALSE, FALSE,
       "line 1, column 10: index 2 of 'm' must be an integer (found f64)"},
      {"y = x[p]", FALSE, FALSE, "must be an integer (found bool)"},
      {"y[0] = 1", FALSE, FALSE,
       "line 1, column 1: scalar output connector 'y' cannot be indexed"},
      {"y = 1", FALSE, TRUE,
       "line 1, column 1: output connector 'y' has rank 1 but 0 indices"},
      {"a = 1\ny = 0", FALSE, FALSE,
       "line 1, column 1: cannot assign to input connector 'a'"},
      {"y = 0\n  N = 1", FALSE, FALSE,
       "line 2, column 3: cannot assign to symbol 'N'"},
      {"t = 1; t[0] = 2; y = t", FALSE, FALSE,
       "line 1, column 8: local 't' cannot be indexed"},
      {"t = 1; y = t[0]", FALSE, FALSE,
       "line 1, column 12: local 't' cannot be indexed"},
      {"y = N[0]", FALSE, FALSE, "symbol 'N' cannot be indexed"},
      {"w[0] = 1; y = 0", FALSE, FALSE,
       "line 1, column 1: unknown name 'w' cannot be indexed"},
      {"y = a && p", FALSE, FALSE,
       "line 1, column 7: operator '&&' needs bool or integer operands "
       "(found f32)"},
      {"y = p || 1.0", FALSE, FALSE, "operator '||' needs bool or integer"},
      {"y = !b", FALSE, FALSE,
       "line 1, column 5: operator '!' needs bool or integer operands "
       "(found f64)"},
      {"y = a ? 1 : 2", FALSE, FALSE,
       "line 1, column 7: condition of '?' must be bool or integer (found "
       "f32)"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    const WeirConnectorInfo *outs = cases[i].two_outputs      ? yz
                                    : cases[i].indexed_output ? y1
                                                              : y;
    g_autofree char *msg =
        check_message(cases[i].body, outs, cases[i].two_outputs ? 2 : 1);
    if (strstr(msg, cases[i].msg) == NULL)
      fail_msg("\"%s\": got \"%s\", want \"%s\"", cases[i].body, msg,
               cases[i].msg);
  }
}

static void test_check_condition(void **state) {
  (void)state;
  g_autoptr(GHashTable) symbols = test_symbols();
  static const struct {
    const char *text;
    const char *msg; /* NULL: valid */
  } cases[] = {
      {"N > 10 && N < 100", NULL},
      {"N % 2", NULL},
      {"true", NULL},
      {"N + 0.5 > 1", NULL},
      {"N + 0.5", "line 1, column 3: condition must be bool or integer "
                  "(found f64)"},
      {"M > 1", "line 1, column 1: unknown name 'M'"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirCode) code = weir_code_parse_condition(cases[i].text, &error);
    assert_non_null(code);
    gboolean ok = weir_code_check(code, NULL, 0, NULL, 0, symbols, &error);
    if (cases[i].msg == NULL) {
      if (!ok)
        fail_msg("\"%s\": %s", cases[i].text, error->message);
    } else {
      assert_false(ok);
      assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_INVALID));
      assert_string_equal(error->message, cases[i].msg);
    }
  }
}

/* ------------------------------------------------------------------------
 * Values and evaluation
 */

static WeirValue vi(WeirDType t, gint64 i) {
  return (WeirValue){.type = t, .i = i};
}

static WeirValue vf(WeirDType t, double f) {
  return (WeirValue){.type = t, .f = f};
}

static void test_value_convert(void **state) {
  (void)state;
  const WeirDType F32 = WEIR_DTYPE_F32, F64 = WEIR_DTYPE_F64,
                  I32 = WEIR_DTYPE_I32, I64 = WEIR_DTYPE_I64,
                  U8 = WEIR_DTYPE_U8, BOOL = WEIR_DTYPE_BOOL;
  assert_int_equal(weir_value_convert(vf(F64, 2.7), I32).i, 2);
  assert_int_equal(weir_value_convert(vf(F64, -2.7), I32).i, -2);
  assert_int_equal(weir_value_convert(vf(F64, NAN), I32).i, 0);
  assert_int_equal(weir_value_convert(vf(F64, NAN), I64).i, 0);
  assert_int_equal(weir_value_convert(vf(F64, 1e300), I32).i, G_MAXINT32);
  assert_true(weir_value_convert(vf(F64, -1e300), I64).i == G_MININT64);
  assert_int_equal(weir_value_convert(vf(F32, 255.9), U8).i, 255);
  assert_int_equal(weir_value_convert(vi(I64, 300), U8).i, 44);
  assert_int_equal(weir_value_convert(vi(I64, -1), U8).i, 255);
  assert_int_equal(
      weir_value_convert(vi(I64, (G_GINT64_CONSTANT(1) << 32) + 5), I32).i, 5);
  assert_int_equal(weir_value_convert(vi(I64, 2147483648), I32).i, G_MININT32);
  assert_int_equal(weir_value_convert(vf(F64, 0.5), BOOL).i, 1);
  assert_int_equal(weir_value_convert(vf(F64, NAN), BOOL).i, 1);
  assert_int_equal(weir_value_convert(vf(F64, 0.0), BOOL).i, 0);
  assert_int_equal(weir_value_convert(vi(I32, -5), BOOL).i, 1);
  assert_true(weir_value_convert(vi(I32, 16777217), F32).f == 16777216.0);
  assert_true(weir_value_convert(vi(I32, 16777217), F64).f == 16777217.0);
  assert_true(weir_value_convert(vf(F64, 0.1), F32).f == (double)0.1f);
  assert_true(weir_value_convert(vi(BOOL, 1), F64).f == 1.0);
  assert_true(weir_value_convert(vi(U8, 200), I32).i == 200);
  WeirValue c = weir_value_convert(vf(F64, 3.5), F32);
  assert_int_equal(c.type, F32);
  assert_true(weir_value_as_double(c) == 3.5);
  assert_true(weir_value_as_double(vi(I64, -4)) == -4.0);
}

/* The 16-bit floats, the narrow integers and u64: conversions round to
 * nearest even (floats), wrap (integers), saturate (float to integer);
 * arithmetic promotes (f16, bf16 to f32; i8, i16, u16 to i32; u32 to i64)
 * and u64 stays unsigned. */
static void test_precision_types(void **state) {
  (void)state;
  const WeirDType F16 = WEIR_DTYPE_F16, BF16 = WEIR_DTYPE_BF16,
                  I8 = WEIR_DTYPE_I8, I16 = WEIR_DTYPE_I16,
                  U16 = WEIR_DTYPE_U16, U32 = WEIR_DTYPE_U32,
                  U64 = WEIR_DTYPE_U64, F64 = WEIR_DTYPE_F64,
                  I64 = WEIR_DTYPE_I64;
  /* 1 + 2^-11 is a tie between 1 and 1 + 2^-10: even is 1 */
  assert_true(weir_value_convert(vf(F64, 1.0 + ldexp(1, -11)), F16).f == 1.0);
  assert_true(weir_value_convert(vf(F64, 1.0 + 3 * ldexp(1, -11)), F16).f ==
              1.0 + ldexp(1, -9));
  assert_true(weir_value_convert(vf(F64, 1e6), F16).f == INFINITY);
  assert_true(weir_value_convert(vf(F64, 1.0 + ldexp(1, -8)), BF16).f == 1.0);
  assert_true(weir_value_convert(vi(I64, 257), BF16).f == 256.0);
  assert_int_equal(weir_value_convert(vi(I64, 200), I8).i, -56);
  assert_int_equal(weir_value_convert(vf(F64, 200.0), I8).i, 127);
  assert_int_equal(weir_value_convert(vf(F64, -1e9), I16).i, G_MININT16);
  assert_int_equal(weir_value_convert(vi(I64, -1), U16).i, 65535);
  assert_int_equal(weir_value_convert(vi(I64, -1), U32).i, G_MAXUINT32);
  assert_true((guint64)weir_value_convert(vi(I64, -1), U64).i == G_MAXUINT64);
  assert_true((guint64)weir_value_convert(vf(F64, 1e30), U64).i == G_MAXUINT64);
  assert_int_equal(weir_value_convert(vf(F64, -5.0), U64).i, 0);
  assert_true(weir_value_as_double(vi(U64, -1)) == 18446744073709551615.0);
  assert_true(weir_value_convert(vi(U64, -1), F64).f == 18446744073709551615.0);
  assert_true(weir_value_convert(vi(U64, -2), I64).i == -2);

  /* f16 stores round; arithmetic on f16 values is f32 */
  assert_true(eval_expr("f16(a) + f16(0.0001)", F16).f == 1.5);
  assert_true(eval_expr("f16(1.0009765625) * 1.0", WEIR_DTYPE_F32).f ==
              1.0009765625);
  assert_int_equal(type_of("f16(a) + f16(a)", NULL), WEIR_DTYPE_F32);
  assert_int_equal(type_of("bf16(a) * 2", NULL), WEIR_DTYPE_F32);
  assert_int_equal(type_of("exp(f16(a))", NULL), WEIR_DTYPE_F32);
  assert_int_equal(type_of("max(f16(a), f16(b))", NULL), F16);
  assert_int_equal(type_of("i8(i) + i8(i)", NULL), WEIR_DTYPE_I32);
  assert_int_equal(type_of("u16(i) * u16(i)", NULL), WEIR_DTYPE_I32);
  assert_int_equal(type_of("u32(i) + 1", NULL), I64);
  assert_int_equal(type_of("u64(i) + l", NULL), U64);
  /* narrow integers wrap on the store */
  assert_int_equal(eval_expr("i8(100) + i8(100)", I8).i, -56);
  assert_int_equal(eval_expr("u16(65535) + 1", U16).i, 0);
  assert_int_equal(eval_expr("u32(4294967295) + 1", U32).i, 0);
  /* u32 compares as the value it is */
  assert_int_equal(eval_expr("u32(4294967295) > 0", WEIR_DTYPE_BOOL).i, 1);
  /* u64: unsigned division, remainder, comparison, min/max */
  assert_true((guint64)eval_expr("u64(-1) / 2", U64).i == G_MAXUINT64 / 2);
  assert_int_equal(eval_expr("u64(-1) % 10", U64).i, 5);
  assert_int_equal(eval_expr("u64(-1) > 1", WEIR_DTYPE_BOOL).i, 1);
  assert_true((guint64)eval_expr("max(u64(-1), u64(3))", U64).i == G_MAXUINT64);
  assert_int_equal(eval_expr("min(u64(-1), u64(3))", U64).i, 3);
  assert_true((guint64)eval_expr("u64(3) * pow(u64(2), u64(63))", U64).i ==
              G_GUINT64_CONSTANT(1) << 63);
}

static void test_eval_float(void **state) {
  (void)state;
  /* a = 1.5f, b = 2.25, x = [1 2 3 4], m = [[1 2 3] [4 5 6]] */
  assert_true(eval_f64("a + 1") == 2.5);
  assert_true(eval_f64("a * b") == 3.375);
  assert_true(eval_f64("b / 2") == 1.125);
  assert_true(eval_f64("b - a * 2") == -0.75);
  assert_true(eval_f64("b % 1.0") == 0.25);
  assert_true(eval_f64("a % 1") == 0.5);
  assert_true(eval_f64("-b") == -2.25);
  assert_true(isinf(eval_f64("b / 0")));
  assert_true(eval_f64("x[2]") == 3);
  assert_true(eval_f64("m[1, 2]") == 6);
  assert_true(eval_f64("m[i - 6, i - 5] + x[i - 4]") == 6 + 4);
  assert_true(eval_f64("p ? a : b") == 1.5);
  assert_true(eval_f64("i > 7 ? a : b") == 2.25);

  /* f32 rounding after every operation. */
  assert_true(eval_f64("f32(16777216.0) + 1") == 16777216.0);
  assert_true(eval_f64("f32(16777216.0) + 1 + 1") == 16777216.0);
  assert_true(eval_f64("f64(16777216.0) + 1") == 16777217.0);
  assert_true(eval_f64("16777216.0 + 1") == 16777217.0);
  assert_true(eval_f64("f32(0.1)") == (double)0.1f);
  assert_true(eval_f64("a * 0.1") == (double)(1.5f * 0.1f));
  assert_true(eval_f64("f32(1) / 3") == (double)(1.0f / 3.0f));
  assert_true(eval_f64("f64(1) / 3") == 1.0 / 3.0);
  WeirValue f = eval_expr("b / 3", WEIR_DTYPE_F32);
  assert_true(f.f == (double)(float)(2.25 / 3));

  /* Functions. */
  assert_true(eval_f64("exp(0.0)") == 1.0);
  assert_true(eval_f64("exp(a)") == (double)expf(1.5f));
  assert_true(eval_f64("exp(b)") == exp(2.25));
  assert_true(eval_f64("log(1.0)") == 0.0);
  assert_true(eval_f64("log(a)") == (double)logf(1.5f));
  assert_true(eval_f64("sqrt(16)") == 4.0);
  assert_true(eval_f64("sqrt(a)") == (double)sqrtf(1.5f));
  assert_true(eval_f64("tanh(b)") == tanh(2.25));
  assert_true(eval_f64("erf(a)") == (double)erff(1.5f));
  assert_true(eval_f64("sin(b)") == sin(2.25));
  assert_true(eval_f64("cos(0.0)") == 1.0);
  assert_true(near(eval_f64("tan(b)"), tan(2.25)));
  assert_true(near(eval_f64("asin(1.0)"), asin(1.0)));
  assert_true(near(eval_f64("acos(0.5)"), acos(0.5)));
  assert_true(eval_f64("atan(a)") == (double)atanf(1.5f));
  assert_true(near(eval_f64("sinh(b)"), sinh(2.25)));
  assert_true(near(eval_f64("cosh(b)"), cosh(2.25)));
  assert_true(near(eval_f64("asinh(b)"), asinh(2.25)));
  assert_true(near(eval_f64("acosh(b)"), acosh(2.25)));
  assert_true(near(eval_f64("atanh(0.5)"), atanh(0.5)));
  /* rint: to the nearest integer, halves to even */
  assert_true(eval_f64("rint(2.5)") == 2.0);
  assert_true(eval_f64("rint(3.5)") == 4.0);
  assert_true(eval_f64("rint(-2.5)") == -2.0);
  assert_true(eval_f64("rint(a)") == 2.0);
  assert_true(eval_f64("rint(i)") == 7.0);
  assert_true(eval_f64("abs(-2.5)") == 2.5);
  assert_true(eval_f64("abs(-a)") == 1.5);
  assert_true(eval_f64("floor(-1.5)") == -2.0);
  assert_true(eval_f64("ceil(1.2)") == 2.0);
  assert_true(eval_f64("floor(i)") == 7.0);
  assert_true(eval_f64("pow(a, 2)") == 2.25);
  assert_true(eval_f64("pow(b, 0.5)") == 1.5);
  assert_true(eval_f64("min(a, b)") == 1.5);
  assert_true(eval_f64("max(a, b, 0.5)") == 2.25);
  assert_true(eval_f64("min(x[3], x[1], x[2])") == 2.0);
  assert_true(isnan(eval_f64("max(a, 0.0 / 0.0)")));
  assert_true(isnan(eval_f64("min(0.0 / 0.0, a)")));
  assert_true(eval_f64("f32(l)") == -3.0);
}

static void test_eval_integer(void **state) {
  (void)state;
  /* i = 7 (i32), l = -3 (i64), u = 200 (u8), p = true, N = 21 */
  assert_int_equal(eval_i64("i + 1"), 8);
  assert_int_equal(eval_i64("l * 3"), -9);
  assert_int_equal(eval_i64("N * 2"), 42);
  /* Division and modulo truncate toward zero. */
  assert_int_equal(eval_i64("-7 / 2"), -3);
  assert_int_equal(eval_i64("-7 % 2"), -1);
  assert_int_equal(eval_i64("7 % -2"), 1);
  assert_int_equal(eval_i64("i / 2"), 3);
  assert_int_equal(eval_i64("l / 2"), -1);
  assert_int_equal(eval_i64("l % 2"), -1);
  assert_int_equal(eval_i64("1 / 3 * 3"), 0);
  assert_true(eval_f64("a * (1 / 2)") == 0.0);
  /* i32 wraps around. */
  assert_int_equal(eval_i64("i32(2147483647) + 1"), G_MININT32);
  assert_int_equal(eval_i64("i * 1000000000"), -1589934592);
  assert_int_equal(eval_i64("-i32(-2147483648)"), G_MININT32);
  assert_int_equal(eval_i64("i32(-2147483648) / -1"), G_MININT32);
  assert_int_equal(eval_i64("l * 1000000000"), -3000000000);
  assert_true(eval_i64("i64(-9223372036854775807 - 1) / -1") == G_MININT64);
  assert_int_equal(eval_i64("i64(-9223372036854775807 - 1) % -1"), 0);
  /* u8 and bool promote to i32; outputs convert. */
  assert_int_equal(eval_i64("u + 100"), 300);
  assert_int_equal(eval_expr("u + 100", WEIR_DTYPE_U8).i, 44);
  assert_int_equal(eval_expr("u + 100", WEIR_DTYPE_I32).i, 300);
  assert_int_equal(eval_i64("p + p"), 2);
  assert_int_equal(eval_i64("-u"), -200);
  assert_int_equal(eval_expr("u8(300)", WEIR_DTYPE_I64).i, 44);
  assert_int_equal(eval_i64("i32(2.9)"), 2);
  assert_int_equal(eval_i64("i32(-2.9)"), -2);
  assert_int_equal(eval_i64("abs(-3)"), 3);
  assert_int_equal(eval_i64("abs(l)"), 3);
  assert_int_equal(eval_i64("pow(2, 10)"), 1024);
  assert_int_equal(eval_i64("pow(i, 2)"), 49);
  assert_int_equal(eval_i64("pow(2, -1)"), 0);
  assert_int_equal(eval_i64("min(i, 3, 10)"), 3);
  assert_int_equal(eval_i64("max(u, i)"), 200);
  assert_int_equal(eval_i64("p ? u : 1"), 200);
  assert_int_equal(eval_i64("2.9"), 2);
  assert_int_equal(eval_i64("1.5 + i"), 8);
}

static void test_eval_bool(void **state) {
  (void)state;
  const WeirDType B = WEIR_DTYPE_BOOL;
  assert_int_equal(eval_expr("p && i > 3", B).i, 1);
  assert_int_equal(eval_expr("!p", B).i, 0);
  assert_int_equal(eval_expr("2", B).i, 1);
  assert_int_equal(eval_expr("0.5", B).i, 1);
  assert_int_equal(eval_expr("a < b", B).i, 1);
  assert_int_equal(eval_expr("a >= b", B).i, 0);
  assert_int_equal(eval_expr("a <= 1.5 && a == 1.5 && a != 1", B).i, 1);
  assert_int_equal(eval_expr("i != 7 || l > 0", B).i, 0);
  assert_int_equal(eval_expr("bool(i)", B).i, 1);
  assert_int_equal(eval_expr("isnan(0.0 / 0.0)", B).i, 1);
  assert_int_equal(eval_expr("isnan(b)", B).i, 0);
  assert_int_equal(eval_expr("isfinite(1.0 / 0.0)", B).i, 0);
  assert_int_equal(eval_expr("isfinite(i)", B).i, 1);
  assert_int_equal(eval_expr("p ? p : false", B).i, 1);
  /* f32 comparisons happen in f32: 0.1 as f32 is not 0.1 as f64. */
  assert_int_equal(eval_expr("f32(0.1) == 0.1", B).i, 1);
  assert_int_equal(eval_expr("f32(0.1) == f64(0.1)", B).i, 0);
  /* u8 compares after promotion; 200 is not -56. */
  assert_int_equal(eval_expr("u > 100", B).i, 1);
  /* Short circuit: the division is never evaluated. */
  assert_int_equal(eval_expr("p || i / 0 > 1", B).i, 1);
  assert_int_equal(eval_expr("!p && i / 0 > 1", B).i, 0);
  assert_int_equal(eval_expr("p ? 1 : i / 0", B).i, 1);
}

/* philox(): the known-answer vectors of Philox-4x32-10 (Random123's
 * kat_vectors), the i64 packing of key and counter, integer arguments. */
static void test_philox(void **state) {
  (void)state;
  static const struct {
    guint32 ctr[4], key[2], out[4];
  } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
      {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
       {0xffffffff, 0xffffffff},
       {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
      {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
       {0xa4093822, 0x299f31d0},
       {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
  };
  for (guint i = 0; i < G_N_ELEMENTS(kat); i++) {
    guint32 out[4];
    weir_philox4x32_10(kat[i].ctr, kat[i].key, out);
    for (int w = 0; w < 4; w++)
      assert_int_equal(out[w], kat[i].out[w]);
  }
  /* key = 0x299f31d0a4093822, c0 = 0x85a308d3243f6a88, c1 =
   * 0x0370734413198a2e: the third vector's first word */
  assert_int_equal(eval_i64("philox(2999170649027065890, "
                            "-8817193942522041720, 247824715720788526)"),
                   0xd16cfe09);
  assert_int_equal(eval_i64("philox(0, 0, 0)"), 0x6627e8d5);
  assert_int_equal(eval_i64("philox(-1, -1, -1)"), 0x408f276d);
  assert_int_equal(eval_i64("philox(l, i, N) >= 0"), 1);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirCode) code = weir_code_parse("y = philox(1.5, 0, 0)", &error);
  assert_non_null(code);
  WeirConnectorInfo outs[] = {{"y", WEIR_DTYPE_I64, 0}};
  assert_false(weir_code_check(code, NULL, 0, outs, 1, NULL, &error));
  assert_non_null(strstr(error->message, "philox takes integer arguments"));
}

static void test_eval_program(void **state) {
  (void)state;
  WeirConnectorInfo outs[] = {{"y", WEIR_DTYPE_F64, 0},
                              {"z", WEIR_DTYPE_I32, 1}};
  g_autoptr(WeirCode) code = checked("t = a * 2    # f32 local\n"
                                     "t = t + b    # converted back to f32\n"
                                     "k = N - 20\n"
                                     "z[0] = k; z[k] = x[k] * 10\n"
                                     "z[2] = m[1, 0] + t\n"
                                     "y = t\n",
                                     outs, 2);
  TestEnv e;
  env_init(&e);
  WeirValue y = {0}, z[3] = {{0}};
  e.out[0] = (Conn){&y, 0, {0}};
  e.out[1] = (Conn){z, 1, {3}};
  WeirCodeEnv env = code_env(&e);
  g_autoptr(GError) error = NULL;
  assert_true(weir_code_run(code, &env, &error));
  assert_int_equal(e.writes, 4);
  assert_int_equal(y.type, WEIR_DTYPE_F64);
  assert_true(y.f == 5.25);
  assert_int_equal(z[0].type, WEIR_DTYPE_I32);
  assert_int_equal(z[0].i, 1);
  assert_int_equal(z[1].i, 20);
  assert_int_equal(z[2].i, 9); /* 4 + 5.25 = 9.25 truncated */

  /* Running a copy gives the same result. */
  g_autoptr(WeirCode) copy = weir_code_copy(code);
  y.f = 0;
  assert_true(weir_code_run(copy, &env, &error));
  assert_true(y.f == 5.25);

  /* Many locals (more than fit in the evaluator's small array). */
  GString *s = g_string_new("v0 = 1\n");
  for (guint i = 1; i < 40; i++)
    g_string_append_printf(s, "v%u = v%u + %u\n", i, i - 1, i);
  g_string_append(s, "y = v39\nz[0] = 0; z[1] = 1; z[2] = 2");
  g_autoptr(WeirCode) many = checked(s->str, outs, 2);
  g_string_free(s, TRUE);
  assert_true(weir_code_run(many, &env, &error));
  assert_true(y.f == 1 + 39 * 40 / 2);
}

static void test_eval_errors(void **state) {
  (void)state;
  WeirConnectorInfo outs[] = {{"y", WEIR_DTYPE_I64, 0}};
  static const struct {
    const char *body;
    const char *msg;
  } cases[] = {
      {"y = i / (i - 7)", "line 1, column 7: division by zero"},
      {"t = 0\ny = l % t", "line 2, column 7: division by zero"},
      {"y = x[4]", "line 1, column 5: index out of bounds"},
      {"y = 1\ny = x[i - 8] + 1", "line 2, column 5: index out of bounds"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(WeirCode) code = checked(cases[i].body, outs, 1);
    TestEnv e;
    env_init(&e);
    WeirValue y = {0};
    e.out[0] = (Conn){&y, 0, {0}};
    WeirCodeEnv env = code_env(&e);
    g_autoptr(GError) error = NULL;
    assert_false(weir_code_run(code, &env, &error));
    assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_RUNTIME));
    assert_string_equal(error->message, cases[i].msg);
  }

  /* A write callback failing without a message still gives one. */
  WeirConnectorInfo z[] = {{"z", WEIR_DTYPE_F64, 1}};
  g_autoptr(WeirCode) code = checked("z[5] = 1", z, 1);
  TestEnv e;
  env_init(&e);
  WeirValue zv[2];
  e.out[0] = (Conn){zv, 1, {2}};
  WeirCodeEnv env = code_env(&e);
  g_autoptr(GError) error = NULL;
  assert_false(weir_code_run(code, &env, &error));
  assert_string_equal(error->message, "line 1, column 1: index out of bounds");
  g_clear_error(&error);
  assert_false(weir_code_run(code, &env, NULL));
}

static void test_eval_condition(void **state) {
  (void)state;
  g_autoptr(GHashTable) symbols = test_symbols();
  static const struct {
    const char *text;
    gboolean want;
  } cases[] = {
      {"N > 10 && N < 100", TRUE},    {"N % 2", TRUE},       {"N - 21", FALSE},
      {"!(N == 21)", FALSE},          {"N / 2 == 10", TRUE}, {"N > 20.5", TRUE},
      {"N < 0 ? true : N > 3", TRUE},
  };
  TestEnv e;
  env_init(&e);
  WeirCodeEnv env = code_env(&e);
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirCode) code = weir_code_parse_condition(cases[i].text, &error);
    assert_non_null(code);
    assert_true(weir_code_check(code, NULL, 0, NULL, 0, symbols, &error));
    gboolean out = !cases[i].want;
    assert_true(weir_code_eval_condition(code, &env, &out, &error));
    if (out != cases[i].want)
      fail_msg("condition \"%s\" gave %d", cases[i].text, out);
  }
  e.n_value = 0;
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirCode) code = weir_code_parse_condition("10 / N > 1", &error);
  assert_true(weir_code_check(code, NULL, 0, NULL, 0, symbols, &error));
  gboolean out;
  assert_false(weir_code_eval_condition(code, &env, &out, &error));
  assert_string_equal(error->message, "line 1, column 4: division by zero");
}

static void test_flops(void **state) {
  (void)state;
  static const struct {
    const char *body;
    guint64 flops;
  } cases[] = {
      {"y = a + b * 2", 2},
      {"y = i + 1", 0},
      {"y = i * l / 2 % 3", 0},
      {"y = -a", 1},
      {"y = -i", 0},
      {"y = exp(a) + min(a, b, 1.0)", 4},
      {"y = max(i, l, 3)", 0},
      {"y = x[i + 1] * 2", 1},
      {"y = f32(i) * a", 1},
      {"y = a < b ? a : b", 1},
      {"y = i < l ? a + b : b", 1},
      {"y = a < l ? a + b : b", 2},
      {"y = p && i > 0", 0},
      {"t = a * a\ny = sqrt(t) + pow(t, 0.5) + abs(t)", 6},
      {"y = isnan(a) ? 0.0 : tanh(a)", 2},
      {"y = exp(i)", 1},
      {"y = abs(i) + pow(i, 2)", 0},
      {"y = m[i % 2, i / 3] + 1", 1},
      {"y = a", 0},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    guint64 f = flops_of(cases[i].body);
    if (f != cases[i].flops)
      fail_msg("flops of \"%s\": got %" G_GUINT64_FORMAT
               ", want %" G_GUINT64_FORMAT,
               cases[i].body, f, cases[i].flops);
  }
  g_autoptr(GHashTable) symbols = test_symbols();
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirCode) cond = weir_code_parse_condition("N * 0.5 > 2", &error);
  assert_true(weir_code_check(cond, NULL, 0, NULL, 0, symbols, &error));
  assert_int_equal(weir_code_flops(cond), 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_valid),
      cmocka_unit_test(test_parse_literals),
      cmocka_unit_test(test_parse_every_function),
      cmocka_unit_test(test_parse_precedence),
      cmocka_unit_test(test_print_round_trip),
      cmocka_unit_test(test_parse_random),
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_parse_condition),
      cmocka_unit_test(test_parse_nesting_limit),
      cmocka_unit_test(test_check_types),
      cmocka_unit_test(test_operand_type),
      cmocka_unit_test(test_check_bindings),
      cmocka_unit_test(test_check_errors),
      cmocka_unit_test(test_check_condition),
      cmocka_unit_test(test_value_convert),
      cmocka_unit_test(test_precision_types),
      cmocka_unit_test(test_eval_float),
      cmocka_unit_test(test_eval_integer),
      cmocka_unit_test(test_eval_bool),
      cmocka_unit_test(test_philox),
      cmocka_unit_test(test_eval_program),
      cmocka_unit_test(test_eval_errors),
      cmocka_unit_test(test_eval_condition),
      cmocka_unit_test(test_flops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
