/* test-op-tables.c — the operator tables agree with each other.
 *
 * An operator is described in several registries joined only by its name:
 * its schema and FLOP rule (ir/ops/), its expansions (ir/lower/expand/),
 * its backward rule (ir/lower/grad.c) and its native implementations
 * (core/native.c, chosen in ir/lower/native-choice.c).  weir_init() fills
 * them all; these tests check that every row names a registered operator,
 * that every operator has a pure expansion and a FLOP rule unless the
 * tables below say why not, and that those tables hold no stale entries.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-autodiff.h"
#include "weir-native.h"
#include "weir-ops.h"

/* An operator without some row, and why. */
typedef struct {
  const char *op;
  const char *reason;
} Exception;

/* Operators without a pure expansion. */
static const Exception no_pure_expansion[] = {
    {NULL, NULL},
};

/* Operators without a FLOP rule. */
static const Exception no_flops[] = {
    {NULL, NULL},
};

static const char *exception(const Exception *table, const char *op) {
  for (guint i = 0; table[i].op; i++)
    if (strcmp(table[i].op, op) == 0)
      return table[i].reason;
  return NULL;
}

/* Splits "op/impl" (from the registries' listings). */
static void split_key(const char *key, char **op, char **impl) {
  const char *slash = strchr(key, '/');
  assert_non_null(slash);
  *op = g_strndup(key, (gsize)(slash - key));
  *impl = g_strdup(slash + 1);
}

static void test_schemas(void **state) {
  (void)state;
  g_autoptr(GPtrArray) names = weir_op_names();
  assert_true(names->len > 50);
  for (guint i = 0; i < names->len; i++) {
    const char *name = g_ptr_array_index(names, i);
    const WeirOpInfo *info = weir_op_lookup(name);
    assert_non_null(info);
    assert_string_equal(info->name, name);
    if (!info->infer || info->min_inputs > info->max_inputs ||
        info->min_outputs > info->max_outputs || info->max_outputs == 0)
      fail_msg("%s: inconsistent schema (infer %s, inputs %u..%u, outputs "
               "%u..%u)",
               name, info->infer ? "set" : "missing", info->min_inputs,
               info->max_inputs, info->min_outputs, info->max_outputs);
    for (guint a = 0; a < info->n_attrs; a++)
      for (guint b = a + 1; b < info->n_attrs; b++)
        if (strcmp(info->attrs[a].name, info->attrs[b].name) == 0)
          fail_msg("%s: attribute '%s' declared twice", name,
                   info->attrs[a].name);
    if (i > 0 && strcmp(g_ptr_array_index(names, i - 1), name) >= 0)
      fail_msg("weir_op_names is not sorted at %s", name);
  }
}

static void test_every_op_expands(void **state) {
  (void)state;
  g_autoptr(GPtrArray) names = weir_op_names();
  for (guint i = 0; i < names->len; i++) {
    const char *op = g_ptr_array_index(names, i);
    gboolean has = weir_op_expansion(op, "pure") != NULL;
    const char *why = exception(no_pure_expansion, op);
    if (!has && !why)
      fail_msg("%s: no pure expansion, and no reason given in "
               "no_pure_expansion",
               op);
    if (has && why)
      fail_msg("%s: has a pure expansion, but no_pure_expansion says: %s", op,
               why);
  }
  for (guint i = 0; no_pure_expansion[i].op; i++)
    if (!weir_op_lookup(no_pure_expansion[i].op))
      fail_msg("no_pure_expansion names an unknown operator %s",
               no_pure_expansion[i].op);
}

static void test_every_op_has_flops(void **state) {
  (void)state;
  g_autoptr(GPtrArray) names = weir_op_names();
  for (guint i = 0; i < names->len; i++) {
    const char *op = g_ptr_array_index(names, i);
    gboolean has = weir_op_lookup(op)->flops != NULL;
    const char *why = exception(no_flops, op);
    if (!has && !why)
      fail_msg("%s: no FLOP rule, and no reason given in no_flops", op);
    if (has && why)
      fail_msg("%s: has a FLOP rule, but no_flops says: %s", op, why);
  }
  for (guint i = 0; no_flops[i].op; i++)
    if (!weir_op_lookup(no_flops[i].op))
      fail_msg("no_flops names an unknown operator %s", no_flops[i].op);
}

static void test_expansions_name_operators(void **state) {
  (void)state;
  g_auto(GStrv) keys = weir_op_expansions();
  assert_true(g_strv_length(keys) > 50);
  for (guint i = 0; keys[i]; i++) {
    g_autofree char *op = NULL, *impl = NULL;
    split_key(keys[i], &op, &impl);
    if (!weir_op_lookup(op))
      fail_msg("expansion %s: unknown operator %s", keys[i], op);
    /* An implementation other than "pure" is a native one. */
    if (strcmp(impl, "pure") != 0 && !weir_native_lookup(op, impl))
      fail_msg("expansion %s: no native implementation %s of %s", keys[i], impl,
               op);
  }
}

static void test_gradients_name_operators(void **state) {
  (void)state;
  g_auto(GStrv) ops = weir_grad_ops();
  assert_true(g_strv_length(ops) > 20);
  for (guint i = 0; ops[i]; i++) {
    if (!weir_op_lookup(ops[i]))
      fail_msg("backward rule for an unknown operator %s", ops[i]);
    assert_non_null(weir_grad_lookup(ops[i]));
  }
}

static void test_natives_name_operators(void **state) {
  (void)state;
  g_auto(GStrv) keys = weir_native_impls();
  assert_true(g_strv_length(keys) > 0);
  for (guint i = 0; keys[i]; i++) {
    g_autofree char *op = NULL, *impl = NULL;
    split_key(keys[i], &op, &impl);
    if (!weir_op_lookup(op))
      fail_msg("native implementation %s: unknown operator %s", keys[i], op);
    if (strcmp(impl, "pure") == 0)
      fail_msg("native implementation %s: \"pure\" is the expansion", keys[i]);
    const WeirNativeImpl *ni = weir_native_lookup(op, impl);
    assert_non_null(ni);
    assert_string_equal(ni->op, op);
    assert_string_equal(ni->impl, impl);
    /* The choice is reachable through expand-library-node. */
    if (!weir_op_expansion(op, impl))
      fail_msg("native implementation %s: no expansion records the choice",
               keys[i]);
    /* A native implementation stands for an operator that also expands. */
    if (!weir_op_expansion(op, "pure"))
      fail_msg("native implementation %s: %s has no pure expansion", keys[i],
               op);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_schemas),
      cmocka_unit_test(test_every_op_expands),
      cmocka_unit_test(test_every_op_has_flops),
      cmocka_unit_test(test_expansions_name_operators),
      cmocka_unit_test(test_gradients_name_operators),
      cmocka_unit_test(test_natives_name_operators),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
