/* test-expr.c — symbolic integer expressions: parsing, printing,
 * simplification, evaluation and substitution. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <string.h>

#include "weir-expr.h"

/* Parses text, failing the test on a parse error. */
static WeirExpr *parse(const char *text) {
  g_autoptr(GError) error = NULL;
  WeirExpr *e = weir_expr_parse(text, &error);
  if (e == NULL)
    fail_msg("parsing '%s' failed: %s", text, error->message);
  return e;
}

static void assert_expr_text(const WeirExpr *e, const char *expected) {
  g_autofree char *text = weir_expr_to_string(e);
  assert_string_equal(text, expected);
}

/* print(parse(text)) == expected, and the printed text is a fixed point:
 * parsing it again gives an equal expression that prints the same. */
static void check_canonical(const char *text, const char *expected) {
  g_autoptr(WeirExpr) e = parse(text);
  g_autofree char *printed = weir_expr_to_string(e);
  if (strcmp(printed, expected) != 0)
    fail_msg("'%s' printed as '%s', expected '%s'", text, printed, expected);
  g_autoptr(WeirExpr) again = parse(printed);
  assert_true(weir_expr_equal(e, again));
  assert_int_equal(weir_expr_compare(e, again), 0);
  assert_expr_text(again, expected);
  g_autoptr(WeirExpr) simplified = weir_expr_simplify(e);
  assert_true(weir_expr_equal(e, simplified));
}

static gint64 eval_ok(const WeirExpr *e, GHashTable *bindings) {
  g_autoptr(GError) error = NULL;
  gint64 v = 0;
  if (!weir_expr_eval(e, bindings, &v, &error))
    fail_msg("eval failed: %s", error->message);
  return v;
}

static void test_parse_print_round_trip(void **state) {
  (void)state;
  static const struct {
    const char *in, *out;
  } cases[] = {
      {"0", "0"},
      {"42", "42"},
      {"-7", "-7"},
      {"N", "N"},
      {"  N  ", "N"},
      {"batch_size", "batch_size"},
      {"_x1", "_x1"},
      {"N+1", "N + 1"},
      {"1 + N", "N + 1"},
      {"N - 1", "N - 1"},
      {"-1 + N", "N - 1"},
      {"N - 2*M", "N - 2*M"},
      {"-2*M + N", "N - 2*M"},
      {"-N", "-N"},
      {"-N - M - 1", "-M - N - 1"},
      {"3*N", "3*N"},
      {"N*3", "3*N"},
      {"N*M", "M*N"},
      {"-N*M", "-M*N"},
      {"2*N*M + 1", "2*M*N + 1"},
      {"N // 2", "N // 2"},
      {"N % 4", "N % 4"},
      {"(N + 1) // 2", "(N + 1) // 2"},
      {"N // (M + 1)", "N // (M + 1)"},
      {"N // (2*M)", "N // (2*M)"},
      {"N // (M // 2)", "N // (M // 2)"},
      {"N // M // K", "N // M // K"},
      {"2*N // 3", "2*N // 3"},
      {"-N // 3", "-N // 3"},
      {"-(N // 3)", "-(N // 3)"},
      {"N // -3", "N // -3"},
      {"4*(i // 2)", "4*(i // 2)"},
      {"(i // 2)*j", "j*(i // 2)"},
      {"(N // 2)*(M // 3)", "(M // 3)*(N // 2)"},
      {"(i % 2)*(j % 3)", "(i % 2)*(j % 3)"},
      {"M - N // 2", "M - N // 2"},
      {"(N + 1)*(M + 1)", "(M + 1)*(N + 1)"},
      {"(N + 1)*(N + 1)", "(N + 1)*(N + 1)"},
      {"min(N, M)", "min(M, N)"},
      {"max( N , 0 )", "max(0, N)"},
      {"min(N + 1, 2*M)", "min(N + 1, 2*M)"},
      {"min(3, 5, N)", "min(3, N)"},
      {"max(3, 5, N)", "max(5, N)"},
      {"min(N)", "N"},
      {"min(N, N)", "N"},
      {"min(min(A, B), min(C, A))", "min(A, B, C)"},
      {"max(min(A, B), C)", "max(C, min(A, B))"},
      {"min(A, max(B, C))", "min(A, max(B, C))"},
      {"min", "min"},
      {"max + 1", "max + 1"},
      {"9223372036854775807", "9223372036854775807"},
      {"-9223372036854775808", "-9223372036854775808"},
      {"N - 9223372036854775807", "N - 9223372036854775807"},
      {"N + -9223372036854775808", "N + -9223372036854775808"},
      {"N // 0", "N // 0"},
      {"5 % 0", "5 % 0"},
      {"\tN\n*\r2 ", "2*N"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    check_canonical(cases[i].in, cases[i].out);
}

static void test_like_terms(void **state) {
  (void)state;
  check_canonical("2*N + N", "3*N");
  check_canonical("N + N", "2*N");
  check_canonical("N - N", "0");
  check_canonical("N + M - N", "M");
  check_canonical("N + 1 + N + 2", "2*N + 3");
  check_canonical("(N + 1) + (M + (N - 1))", "M + 2*N");
  check_canonical("N*M + M*N", "2*M*N");
  check_canonical("N*M - M*N + 1", "1");
  check_canonical("2*(N + 1)", "2*N + 2");
  check_canonical("(N + 1)*2 - 2", "2*N");
  check_canonical("-(N - M)", "M - N");
  check_canonical("3*(2*N + M) - 6*N", "3*M");
  check_canonical("2*(3*(N + 1))", "6*N + 6");
  check_canonical("N*0", "0");
  check_canonical("0*(N + M)", "0");
  check_canonical("N*1", "N");
  check_canonical("1*N*1", "N");
  check_canonical("--N", "N");
  check_canonical("N // 2 + N // 2", "2*(N // 2)");
  check_canonical("min(N, M) - min(M, N)", "0");

  /* Products of sums are not expanded... */
  check_canonical("(N + 1)*(N - 1)", "(N - 1)*(N + 1)");
  check_canonical("(N + 1)*M", "M*(N + 1)");
  /* ...but their content moves to the coefficient, so grouping does not
   * matter. */
  check_canonical("M*(2*N + 2)", "2*M*(N + 1)");
  check_canonical("(2*(N + 1))*M", "2*M*(N + 1)");
  check_canonical("M*(1 - N)", "-M*(N - 1)");
  check_canonical("M*(N + 1) + 2*M*(N + 1)", "3*M*(N + 1)");
  check_canonical("M*(N + 1) - (N + 1)*M", "0");

  /* Built through the API as well as parsed. */
  g_autoptr(WeirExpr) n = weir_expr_symbol("N");
  g_autoptr(WeirExpr) two_n = weir_expr_mul_const(n, 2);
  g_autoptr(WeirExpr) three_n = weir_expr_add(two_n, n);
  assert_expr_text(three_n, "3*N");
  assert_int_equal(weir_expr_kind(three_n), WEIR_EXPR_MUL);
  assert_int_equal(weir_expr_n_operands(three_n), 2);
  gint64 c = 0;
  assert_true(weir_expr_is_const(weir_expr_operand(three_n, 0), &c));
  assert_int_equal(c, 3);
  assert_string_equal(weir_expr_symbol_name(weir_expr_operand(three_n, 1)),
                      "N");
  g_autoptr(WeirExpr) zero = weir_expr_sub(three_n, three_n);
  assert_true(weir_expr_is_const(zero, &c));
  assert_int_equal(c, 0);
  g_autoptr(WeirExpr) np1 = weir_expr_add_const(n, 1);
  assert_int_equal(weir_expr_kind(np1), WEIR_EXPR_ADD);
  assert_int_equal(weir_expr_n_operands(np1), 2);
  /* The constant of a sum is its last operand. */
  assert_int_equal(weir_expr_const_value(weir_expr_operand(np1, 1)), 1);
  assert_false(weir_expr_is_const(np1, NULL));
}

static void test_div_mod_folding(void **state) {
  (void)state;
  static const struct {
    gint64 a, b, q, r;
  } cases[] = {
      {7, 2, 3, 1},
      {-7, 2, -4, 1},
      {7, -2, -4, -1},
      {-7, -2, 3, -1},
      {6, 3, 2, 0},
      {-6, 3, -2, 0},
      {0, 5, 0, 0},
      {-1, 5, -1, 4},
      {1, -5, -1, -4},
      {5, 1, 5, 0},
      {5, -1, -5, 0},
      {G_MININT64, -1, G_MININT64, 0}, /* wraps around */
      {G_MININT64, 2, G_MININT64 / 2, 0},
      {G_MAXINT64, G_MININT64, -1, -1},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(WeirExpr) a = weir_expr_const(cases[i].a);
    g_autoptr(WeirExpr) b = weir_expr_const(cases[i].b);
    g_autoptr(WeirExpr) q = weir_expr_floordiv(a, b);
    g_autoptr(WeirExpr) r = weir_expr_mod(a, b);
    gint64 v = 0;
    assert_true(weir_expr_is_const(q, &v));
    assert_int_equal(v, cases[i].q);
    assert_true(weir_expr_is_const(r, &v));
    assert_int_equal(v, cases[i].r);
  }
  check_canonical("-7 // 2", "-4");
  check_canonical("-7 % 2", "1");
  check_canonical("7 // -2", "-4");
  check_canonical("N // 1", "N");
  check_canonical("N % 1", "0");
  check_canonical("N // -1", "-N");
  check_canonical("0 // N", "0");
  check_canonical("0 % N", "0");
  check_canonical("(4*N) // 4", "N");
  check_canonical("(4*N) // 2", "2*N");
  check_canonical("(4*N) % 2", "0");
  check_canonical("(3*N) // 2", "3*N // 2");
  check_canonical("2*(N + 1) // 2", "N + 1");
  check_canonical("(2*N + 4*M + 6) // 2", "2*M + N + 3");
  check_canonical("(2*N + 3) // 2", "(2*N + 3) // 2");
  check_canonical("(2*N + 4) % 2", "0");
  check_canonical("(6*M*(N + 1)) // 3", "2*M*(N + 1)");
  check_canonical("N // 0", "N // 0");
  check_canonical("1 // 0", "1 // 0");
  check_canonical("N // M", "N // M");
}

static void test_min_max(void **state) {
  (void)state;
  check_canonical("min(3, 5)", "3");
  check_canonical("max(3, 5, -2)", "5");
  check_canonical("min(N, 3, M, 5)", "min(3, M, N)");
  check_canonical("max(N, 3, max(M, 5))", "max(5, M, N)");
  check_canonical("min(N, min(N, 2))", "min(2, N)");
  check_canonical("min(N + 1, 1 + N)", "N + 1");
  check_canonical("max(N, -N)", "max(N, -N)");

  g_autoptr(WeirExpr) n = weir_expr_symbol("N");
  g_autoptr(WeirExpr) m = weir_expr_symbol("M");
  g_autoptr(WeirExpr) a = weir_expr_min(n, m);
  g_autoptr(WeirExpr) b = weir_expr_min(m, n);
  assert_true(weir_expr_equal(a, b));
  assert_int_equal(weir_expr_kind(a), WEIR_EXPR_MIN);
  g_autoptr(WeirExpr) c = weir_expr_max(n, n);
  assert_true(weir_expr_equal(c, n));
}

static void test_eval(void **state) {
  (void)state;
  g_autoptr(GHashTable) b = weir_bindings_new();
  weir_bindings_set(b, "N", 10);
  weir_bindings_set(b, "M", -3);
  weir_bindings_set(b, "M", 3); /* replaces */
  weir_bindings_set(b, "Z", 0);

  static const struct {
    const char *text;
    gint64 value;
  } cases[] = {
      {"N", 10},
      {"N + M", 13},
      {"2*N - 3*M + 1", 12},
      {"N // M", 3},
      {"-N // M", -4},
      {"N % M", 1},
      {"-N % M", 2},
      {"N % -M", -2},
      {"min(N, M, 7)", 3},
      {"max(N, M, 7)", 10},
      {"(N + 1)*(M - 1)", 22},
      {"N // (Z + 1)", 10},
      {"0*(N // Z)", 0}, /* simplified to 0 before evaluation */
      {"42", 42},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(WeirExpr) e = parse(cases[i].text);
    assert_int_equal(eval_ok(e, b), cases[i].value);
  }

  g_autoptr(WeirExpr) k = parse("7 - 9");
  assert_int_equal(eval_ok(k, NULL), -2);

  /* Unbound symbols. */
  g_autoptr(WeirExpr) u = parse("N + K*2");
  g_autoptr(GError) error = NULL;
  gint64 v = 0;
  assert_false(weir_expr_eval(u, b, &v, &error));
  assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_INVALID));
  assert_string_equal(error->message, "unbound symbol 'K'");
  g_clear_error(&error);
  assert_false(weir_expr_eval(u, NULL, &v, &error));
  assert_non_null(strstr(error->message, "unbound symbol"));
  g_clear_error(&error);

  /* Division by zero, at run time and by a constant. */
  g_autoptr(WeirExpr) d = parse("N // Z");
  assert_false(weir_expr_eval(d, b, &v, &error));
  assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_INVALID));
  assert_string_equal(error->message, "division by zero in 'N // Z'");
  g_clear_error(&error);
  g_autoptr(WeirExpr) m0 = parse("N % (M - 3) + 1");
  assert_false(weir_expr_eval(m0, b, &v, &error));
  assert_string_equal(error->message, "division by zero in 'N % (M - 3)'");
  g_clear_error(&error);
  g_autoptr(WeirExpr) c0 = parse("N // 0");
  assert_false(weir_expr_eval(c0, b, &v, &error));
  assert_string_equal(error->message, "division by zero in 'N // 0'");
  g_clear_error(&error);

  /* Overflow wraps around. */
  weir_bindings_set(b, "N", G_MAXINT64);
  g_autoptr(WeirExpr) w = parse("N + 1");
  assert_int_equal(eval_ok(w, b), G_MININT64);
}

static void test_substitute(void **state) {
  (void)state;
  g_autoptr(WeirExpr) e = parse("2*i - 2");
  g_autoptr(WeirExpr) ip1 = parse("i + 1");
  g_autoptr(WeirExpr) s = weir_expr_substitute_one(e, "i", ip1);
  assert_expr_text(s, "2*i");
  assert_expr_text(e, "2*i - 2"); /* unchanged */

  g_autoptr(WeirExpr) f = parse("min(N, M) + N // 4 + K");
  g_autoptr(GHashTable) map = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(WeirExpr) four_t = parse("4*T");
  g_autoptr(WeirExpr) three = parse("3");
  g_hash_table_insert(map, "N", four_t);
  g_hash_table_insert(map, "M", three);
  g_autoptr(WeirExpr) g = weir_expr_substitute(f, map);
  assert_expr_text(g, "K + T + min(3, 4*T)");

  g_autoptr(WeirExpr) h = weir_expr_substitute(f, NULL);
  assert_true(weir_expr_equal(h, f));

  g_autoptr(WeirExpr) z = parse("N // (M - 1)");
  g_autoptr(WeirExpr) one = parse("1");
  g_autoptr(WeirExpr) zs = weir_expr_substitute_one(z, "M", one);
  assert_expr_text(zs, "N // 0");

  g_autoptr(WeirExpr) neg = parse("N - M");
  g_autoptr(WeirExpr) n = parse("N");
  g_autoptr(WeirExpr) ns = weir_expr_substitute_one(neg, "M", n);
  assert_expr_text(ns, "0");
}

static void test_symbols(void **state) {
  (void)state;
  g_autoptr(WeirExpr) e = parse("z*y + max(b, a // c) - y*z + 1 + z");
  g_autoptr(GPtrArray) names = weir_expr_symbols(e);
  assert_int_equal(names->len, 4);
  assert_string_equal(names->pdata[0], "a");
  assert_string_equal(names->pdata[1], "b");
  assert_string_equal(names->pdata[2], "c");
  assert_string_equal(names->pdata[3], "z");

  g_autoptr(GHashTable) set =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(WeirExpr) f = parse("q + a");
  weir_expr_collect_symbols(e, set);
  weir_expr_collect_symbols(f, set);
  assert_int_equal(g_hash_table_size(set), 5);
  assert_true(g_hash_table_contains(set, "q"));

  g_autoptr(WeirExpr) k = parse("3 + 4");
  g_autoptr(GPtrArray) none = weir_expr_symbols(k);
  assert_int_equal(none->len, 0);
}

static int compare_exprs(gconstpointer a, gconstpointer b) {
  return weir_expr_compare(*(WeirExpr *const *)a, *(WeirExpr *const *)b);
}

static void test_compare(void **state) {
  (void)state;
  static const char *texts[] = {
      "0",      "-1",    "5",         "N",         "M",
      "N + 1",  "N + 2", "2*N",       "3*N",       "M*N",
      "N // 2", "N % 2", "min(M, N)", "max(M, N)", "min(M, N, K)",
      "a",      "b",     "N - M",     "(N + 1)*M", "N // 3",
  };
  guint n = G_N_ELEMENTS(texts);
  g_autoptr(GPtrArray) a =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  g_autoptr(GPtrArray) b =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint i = 0; i < n; i++) {
    g_ptr_array_add(a, parse(texts[i]));
    g_ptr_array_add(b, parse(texts[n - 1 - i]));
  }
  /* Antisymmetric, and zero exactly for equal texts. */
  for (guint i = 0; i < n; i++) {
    for (guint j = 0; j < n; j++) {
      int c1 = weir_expr_compare(a->pdata[i], a->pdata[j]);
      int c2 = weir_expr_compare(a->pdata[j], a->pdata[i]);
      assert_true((c1 > 0) == (c2 < 0));
      assert_int_equal(c1 == 0, i == j);
      assert_int_equal(weir_expr_equal(a->pdata[i], a->pdata[j]), i == j);
    }
  }
  /* Sorting from two different orders gives the same sequence. */
  g_ptr_array_sort(a, compare_exprs);
  g_ptr_array_sort(b, compare_exprs);
  for (guint i = 0; i < n; i++) {
    assert_true(weir_expr_equal(a->pdata[i], b->pdata[i]));
    if (i > 0)
      assert_true(weir_expr_compare(a->pdata[i - 1], a->pdata[i]) < 0);
  }
  /* Constants order by value. */
  g_autoptr(WeirExpr) lo = weir_expr_const(G_MININT64);
  g_autoptr(WeirExpr) hi = weir_expr_const(G_MAXINT64);
  assert_true(weir_expr_compare(lo, hi) < 0);

  /* Equal after canonicalization, whatever the spelling. */
  static const char *same[][2] = {
      {"N + M", "M + N"},
      {"2*(N + M) - M", "N + (N + M)"},
      {"(N + 1)*(M + 1)", "(1 + M)*(1 + N)"},
      {"min(N, max(M, 1))", "min(max(1, M), N)"},
      {"N*M*K", "K*(M*N)"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(same); i++) {
    g_autoptr(WeirExpr) x = parse(same[i][0]);
    g_autoptr(WeirExpr) y = parse(same[i][1]);
    assert_true(weir_expr_equal(x, y));
  }
}

static void test_parse_errors(void **state) {
  (void)state;
  static const struct {
    const char *text;
    const char *message; /* expected message, after "expression '...': " */
  } cases[] = {
      {"", "column 1: expected an operand, found the end of the expression"},
      {"   ", "column 4: expected an operand, found the end of the expression"},
      {"N +", "column 4: expected an operand, found the end of the expression"},
      {"N + * 2", "column 5: expected an operand, found '*'"},
      {"(N", "column 3: expected ')', found the end of the expression"},
      {"N)", "column 2: expected an operator or the end of the expression, "
             "found ')'"},
      {"min()", "column 5: expected an operand, found ')'"},
      {"min(N,)", "column 7: expected an operand, found ')'"},
      {"max(N M)", "column 7: expected ',' or ')', found 'M'"},
      {"3 $ 4",
       "column 3: expected an operator or the end of the expression, found "
       "'$'"},
      {"99999999999999999999",
       "column 1: integer 99999999999999999999 does not fit in 64 bits "
       "(expected a value from -9223372036854775808 to 9223372036854775807)"},
      {"9223372036854775808",
       "column 1: integer 9223372036854775808 does not fit in 64 bits "
       "(expected a value from -9223372036854775808 to 9223372036854775807)"},
      {"-9223372036854775809",
       "column 2: integer -9223372036854775809 does not fit in 64 bits "
       "(expected a value from -9223372036854775808 to 9223372036854775807)"},
      {"N / 2", "column 3: expected '//' (floor division), found a single '/'"},
      {"2 N", "column 3: expected an operator or the end of the expression, "
              "found 'N'"},
      {"N ** 2", "column 4: expected an operand, found '*'"},
      {"()", "column 2: expected an operand, found ')'"},
      {"N + \x01", "column 5: expected an operand, found byte 0x01"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autoptr(GError) error = NULL;
    WeirExpr *e = weir_expr_parse(cases[i].text, &error);
    assert_null(e);
    assert_non_null(error);
    assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_PARSE));
    g_autofree char *quoted = g_strescape(cases[i].text, NULL);
    g_autofree char *expected =
        g_strdup_printf("expression '%s': %s", quoted, cases[i].message);
    assert_string_equal(error->message, expected);
  }

  /* NULL error is allowed. */
  assert_null(weir_expr_parse("N +", NULL));

  /* Deep nesting is an error, not a stack overflow. */
  GString *deep = g_string_new(NULL);
  for (int i = 0; i < 100000; i++)
    g_string_append_c(deep, '(');
  g_autoptr(GError) error = NULL;
  assert_null(weir_expr_parse(deep->str, &error));
  assert_non_null(strstr(error->message, "nested too deeply"));
  g_string_free(deep, TRUE);
  g_clear_error(&error);
  GString *minus = g_string_new(NULL);
  for (int i = 0; i < 100000; i++)
    g_string_append_c(minus, '-');
  g_string_append_c(minus, 'N');
  assert_null(weir_expr_parse(minus->str, &error));
  g_string_free(minus, TRUE);

  /* Moderate nesting is fine. */
  g_autoptr(WeirExpr) e = parse("((((((((((N))))))))))");
  assert_expr_text(e, "N");
}

/* Random text, mostly made of expression tokens: parsing never crashes, and
 * whatever parses prints to text that parses back to an equal expression. */
static void test_parse_garbage(void **state) {
  (void)state;
  static const char *pieces[] = {
      "N", "M",    "1",    "0", "-", "+", "*",           "//",   "/", "%",  "(",
      ")", "min(", "max(", ",", " ", "7", "99999999999", "\xff", "$", "_a",
  };
  g_autoptr(GRand) rng = g_rand_new_with_seed(1234);
  guint parsed = 0;
  for (int round = 0; round < 20000; round++) {
    GString *s = g_string_new(NULL);
    gint len = g_rand_int_range(rng, 0, 12);
    for (gint i = 0; i < len; i++) {
      if (g_rand_int_range(rng, 0, 20) == 0)
        g_string_append_c(s, (char)g_rand_int_range(rng, 1, 256));
      else
        g_string_append(s,
                        pieces[g_rand_int_range(rng, 0, G_N_ELEMENTS(pieces))]);
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirExpr) e = weir_expr_parse(s->str, &error);
    if (e != NULL) {
      parsed++;
      assert_null(error);
      g_autofree char *text = weir_expr_to_string(e);
      g_autoptr(WeirExpr) again = parse(text);
      assert_true(weir_expr_equal(e, again));
    } else {
      assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_PARSE));
      assert_non_null(strstr(error->message, "column "));
    }
    g_string_free(s, TRUE);
  }
  assert_true(parsed > 100);
}

/* ---- randomized semantic checks ------------------------------------------
 *
 * Random expressions are built through the constructors while their value
 * is computed directly, under several bindings; the simplified expression
 * must evaluate to the same values.  Values stay small, so no overflow. */

#define N_ENVS 6
static const char *const sym_names[] = {"N", "M", "i"};

typedef struct {
  GHashTable *envs[N_ENVS];
  gint64 sym_values[N_ENVS][G_N_ELEMENTS(sym_names)];
  GRand *rng;
} Fuzz;

static gint64 floor_div(gint64 a, gint64 b) {
  gint64 q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static WeirExpr *random_expr(Fuzz *f, int depth, gint64 *values) {
  int choice = depth <= 0 ? g_rand_int_range(f->rng, 0, 2)
                          : g_rand_int_range(f->rng, 0, 9);
  if (choice == 0) {
    gint64 c = g_rand_int_range(f->rng, -4, 5);
    for (int k = 0; k < N_ENVS; k++)
      values[k] = c;
    return weir_expr_const(c);
  }
  if (choice == 1) {
    guint s = (guint)g_rand_int_range(f->rng, 0, G_N_ELEMENTS(sym_names));
    for (int k = 0; k < N_ENVS; k++)
      values[k] = f->sym_values[k][s];
    return weir_expr_symbol(sym_names[s]);
  }
  gint64 va[N_ENVS], vb[N_ENVS];
  g_autoptr(WeirExpr) a = random_expr(f, depth - 1, va);
  g_autoptr(WeirExpr) b = random_expr(f, depth - 1, vb);
  switch (choice) {
  case 2:
    for (int k = 0; k < N_ENVS; k++)
      values[k] = va[k] + vb[k];
    return weir_expr_add(a, b);
  case 3:
    for (int k = 0; k < N_ENVS; k++)
      values[k] = va[k] - vb[k];
    return weir_expr_sub(a, b);
  case 4:
    for (int k = 0; k < N_ENVS; k++)
      values[k] = va[k] * vb[k];
    return weir_expr_mul(a, b);
  case 5:
  case 6: {
    gboolean nonzero = TRUE;
    for (int k = 0; k < N_ENVS; k++)
      nonzero = nonzero && vb[k] != 0;
    g_autoptr(WeirExpr) d = NULL;
    if (nonzero) {
      d = weir_expr_ref(b);
    } else {
      gint64 c = g_rand_boolean(f->rng) ? g_rand_int_range(f->rng, 1, 5)
                                        : g_rand_int_range(f->rng, -4, 0);
      d = weir_expr_const(c);
      for (int k = 0; k < N_ENVS; k++)
        vb[k] = c;
    }
    for (int k = 0; k < N_ENVS; k++) {
      gint64 q = floor_div(va[k], vb[k]);
      values[k] = choice == 5 ? q : va[k] - q * vb[k];
    }
    return choice == 5 ? weir_expr_floordiv(a, d) : weir_expr_mod(a, d);
  }
  case 7:
    for (int k = 0; k < N_ENVS; k++)
      values[k] = MIN(va[k], vb[k]);
    return weir_expr_min(a, b);
  default:
    for (int k = 0; k < N_ENVS; k++)
      values[k] = MAX(va[k], vb[k]);
    return weir_expr_max(a, b);
  }
}

static void check_values(Fuzz *f, const WeirExpr *e, const gint64 *values) {
  for (int k = 0; k < N_ENVS; k++) {
    gint64 v = eval_ok(e, f->envs[k]);
    if (v != values[k]) {
      g_autofree char *text = weir_expr_to_string(e);
      fail_msg("'%s' evaluates to %" G_GINT64_FORMAT
               ", expected %" G_GINT64_FORMAT,
               text, v, values[k]);
    }
  }
}

static void test_random_semantics(void **state) {
  (void)state;
  Fuzz f;
  f.rng = g_rand_new_with_seed(42);
  for (int k = 0; k < N_ENVS; k++) {
    f.envs[k] = weir_bindings_new();
    for (guint s = 0; s < G_N_ELEMENTS(sym_names); s++) {
      f.sym_values[k][s] = g_rand_int_range(f.rng, -9, 10);
      weir_bindings_set(f.envs[k], sym_names[s], f.sym_values[k][s]);
    }
  }
  for (int round = 0; round < 3000; round++) {
    gint64 va[N_ENVS], vb[N_ENVS], vc[N_ENVS], tmp[N_ENVS];
    g_autoptr(WeirExpr) a = random_expr(&f, 3, va);
    g_autoptr(WeirExpr) b = random_expr(&f, 2, vb);
    g_autoptr(WeirExpr) c = random_expr(&f, 2, vc);
    check_values(&f, a, va);

    /* Printing and parsing preserve the expression. */
    g_autofree char *text = weir_expr_to_string(a);
    g_autoptr(WeirExpr) reparsed = parse(text);
    if (!weir_expr_equal(a, reparsed)) {
      g_autofree char *text2 = weir_expr_to_string(reparsed);
      fail_msg("'%s' reparsed as '%s'", text, text2);
    }
    g_autoptr(WeirExpr) simplified = weir_expr_simplify(a);
    assert_true(weir_expr_equal(a, simplified));

    /* Associativity and commutativity give identical canonical forms. */
    g_autoptr(WeirExpr) ab = weir_expr_add(a, b);
    g_autoptr(WeirExpr) bc = weir_expr_add(b, c);
    g_autoptr(WeirExpr) ab_c = weir_expr_add(ab, c);
    g_autoptr(WeirExpr) a_bc = weir_expr_add(a, bc);
    g_autoptr(WeirExpr) ba = weir_expr_add(b, a);
    assert_true(weir_expr_equal(ab_c, a_bc));
    assert_true(weir_expr_equal(ab, ba));
    g_autoptr(WeirExpr) mab = weir_expr_mul(a, b);
    g_autoptr(WeirExpr) mbc = weir_expr_mul(b, c);
    g_autoptr(WeirExpr) mab_c = weir_expr_mul(mab, c);
    g_autoptr(WeirExpr) ma_bc = weir_expr_mul(a, mbc);
    g_autoptr(WeirExpr) mba = weir_expr_mul(b, a);
    if (!weir_expr_equal(mab_c, ma_bc)) {
      g_autofree char *t1 = weir_expr_to_string(mab_c);
      g_autofree char *t2 = weir_expr_to_string(ma_bc);
      fail_msg("(a*b)*c = '%s' but a*(b*c) = '%s'", t1, t2);
    }
    assert_true(weir_expr_equal(mab, mba));
    for (int k = 0; k < N_ENVS; k++)
      tmp[k] = va[k] * vb[k] * vc[k];
    check_values(&f, mab_c, tmp);
    g_autoptr(WeirExpr) x = weir_expr_sub(ab_c, b);
    g_autoptr(WeirExpr) y = weir_expr_add(a, c);
    assert_true(weir_expr_equal(x, y));
    g_autoptr(WeirExpr) zero = weir_expr_sub(a, a);
    assert_true(weir_expr_is_const(zero, NULL));
    assert_int_equal(weir_expr_const_value(zero), 0);

    /* A constant distributes: 3*(a + b) == 3*a + 3*b. */
    g_autoptr(WeirExpr) l = weir_expr_mul_const(ab, 3);
    g_autoptr(WeirExpr) a3 = weir_expr_mul_const(a, 3);
    g_autoptr(WeirExpr) b3 = weir_expr_mul_const(b, 3);
    g_autoptr(WeirExpr) r = weir_expr_add(a3, b3);
    assert_true(weir_expr_equal(l, r));

    /* (k*a) // k == a. */
    g_autoptr(WeirExpr) a5 = weir_expr_mul_const(a, 5);
    g_autoptr(WeirExpr) five = weir_expr_const(5);
    g_autoptr(WeirExpr) back = weir_expr_floordiv(a5, five);
    assert_true(weir_expr_equal(back, a));

    /* Substitution agrees with evaluation under the substituted value. */
    g_autoptr(WeirExpr) sub = weir_expr_substitute_one(a, "N", b);
    for (int k = 0; k < N_ENVS; k++) {
      g_autoptr(GHashTable) env = weir_bindings_new();
      for (guint s = 0; s < G_N_ELEMENTS(sym_names); s++)
        weir_bindings_set(env, sym_names[s], f.sym_values[k][s]);
      weir_bindings_set(env, "N", vb[k]);
      g_autoptr(GError) error = NULL;
      gint64 expect = 0, got = 0;
      gboolean ok1 = weir_expr_eval(a, env, &expect, &error);
      g_clear_error(&error);
      gboolean ok2 = weir_expr_eval(sub, f.envs[k], &got, &error);
      /* a may divide by zero once N changes; then sub may too, or may have
       * been simplified into something defined. */
      if (ok1) {
        assert_true(ok2);
        assert_int_equal(got, expect);
      }
    }
  }
  for (int k = 0; k < N_ENVS; k++)
    g_hash_table_unref(f.envs[k]);
  g_rand_free(f.rng);
}

static void test_refcount(void **state) {
  (void)state;
  WeirExpr *n = weir_expr_symbol("N");
  WeirExpr *e = weir_expr_add_const(n, 1);
  weir_expr_unref(n); /* e keeps its own reference */
  assert_string_equal(weir_expr_symbol_name(weir_expr_operand(e, 0)), "N");
  WeirExpr *r = weir_expr_ref(e);
  assert_ptr_equal(r, e);
  weir_expr_unref(r);
  assert_expr_text(e, "N + 1");
  weir_expr_unref(e);
  weir_expr_unref(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parse_print_round_trip),
      cmocka_unit_test(test_like_terms),
      cmocka_unit_test(test_div_mod_folding),
      cmocka_unit_test(test_min_max),
      cmocka_unit_test(test_eval),
      cmocka_unit_test(test_substitute),
      cmocka_unit_test(test_symbols),
      cmocka_unit_test(test_compare),
      cmocka_unit_test(test_parse_errors),
      cmocka_unit_test(test_parse_garbage),
      cmocka_unit_test(test_random_semantics),
      cmocka_unit_test(test_refcount),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
