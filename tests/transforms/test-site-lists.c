/* test-site-lists.c — every transformation's sites and legality verdicts
 * stay what they were before the panel's speed-ups (docs/performance.md,
 * "GUI").
 *
 * The golden files tests/transforms/golden/sites-*.txt were written by
 * bench-transforms --dump with the code before the scope memo and the
 * tier-4 indexes: per program and transformation, every site (described)
 * in order with "legal" or the reason it is not.  This test writes the
 * same text with the current code and compares it byte for byte, on the
 * chain of 50 maps (201 nodes) and on every expanded sample model.
 * WEIR_UPDATE_GOLDEN=1 rewrites the files (after a deliberate change of a
 * transformation).
 *
 * It also checks that the memo of weir_state_scopes never answers for a
 * state that has changed since, and that its answers equal a fresh
 * computation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "weir-expand.h"
#include "weir-import.h"
#include "weir-init.h"
#include "weir-json.h"
#include "weir-transform.h"

#include "../chain-program.h"

static const char *const models[] = {"mlp",         "digits_mlp", "digits_cnn",
                                     "lenet",       "lenet64",    "resnet",
                                     "transformer", NULL};

/* The text bench-transforms --dump writes for one program. */
static void append_sites(GString *out, const char *what, const WeirGraph *g) {
  g_autoptr(GPtrArray) all = weir_transforms_list();
  g_string_append_printf(out, "# program %s\n", what);
  for (guint i = 0; i < all->len; i++) {
    const WeirTransformInfo *t = g_ptr_array_index(all, i);
    g_autoptr(GArray) sites = weir_transform_sites(t, g);
    g_autoptr(WeirParams) p = weir_params_parse(t, NULL, NULL);
    g_string_append_printf(out, "## %s: %u sites\n", t->name, sites->len);
    for (guint k = 0; p && k < sites->len; k++) {
      const WeirSite *s = &g_array_index(sites, WeirSite, k);
      g_autofree char *reason = NULL;
      gboolean ok = weir_transform_can_apply(t, g, s, p, &reason);
      g_autofree char *d = weir_site_describe(g, s);
      g_string_append_printf(out, "%s: %s\n", d, ok ? "legal" : reason);
    }
  }
}

/* Compares text with the golden file `name`, naming the first line that
 * differs. */
static void assert_golden(const char *text, const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "tests", "transforms",
                                           "golden", name, NULL);
  if (g_getenv("WEIR_UPDATE_GOLDEN"))
    assert_true(g_file_set_contents(path, text, -1, NULL));
  g_autofree char *want = NULL;
  g_autoptr(GError) err = NULL;
  if (!g_file_get_contents(path, &want, NULL, &err))
    fail_msg("%s: %s", path, err->message);
  if (strcmp(text, want) == 0)
    return;
  g_auto(GStrv) a = g_strsplit(text, "\n", -1);
  g_auto(GStrv) b = g_strsplit(want, "\n", -1);
  guint k = 0;
  while (a[k] && b[k] && strcmp(a[k], b[k]) == 0)
    k++;
  fail_msg("%s, line %u: got '%s', expected '%s'", path, k + 1,
           a[k] ? a[k] : "(end)", b[k] ? b[k] : "(end)");
}

static void test_chain_sites(void **state) {
  (void)state;
  g_autofree char *json = chain_json(50);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_from_json(json, -1, "<chain>", &error);
  if (!g)
    fail_msg("chain: %s", error->message);
  g_autoptr(GString) out = g_string_new(NULL);
  append_sites(out, "chain of 50 maps", g);
  assert_golden(out->str, "sites-chain50.txt");
}

static void test_model_sites(void **state) {
  (void)state;
  g_autoptr(GString) out = g_string_new(NULL);
  for (guint i = 0; models[i]; i++) {
    g_autofree char *file = g_strdup_printf("%s.onnx", models[i]);
    g_autofree char *path =
        g_build_filename(WEIR_SRCDIR, "samples", "models", file, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirGraph) g = weir_onnx_import(path, NULL, &error);
    if (!g || !weir_expand_all(g, NULL, NULL, &error))
      fail_msg("%s: %s", path, error->message);
    g_autofree char *what = g_strdup_printf("%s (expanded)", models[i]);
    append_sites(out, what, g);
  }
  assert_golden(out->str, "sites-models.txt");
}

/* Whether two scope results are the same: order, and parent of every
 * node of s. */
static void assert_same_scopes(const WeirState *s, const WeirScopes *a,
                               const WeirScopes *b) {
  assert_int_equal(a->order->len, b->order->len);
  assert_memory_equal(a->order->data, b->order->data,
                      a->order->len * sizeof(guint));
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    assert_int_equal(weir_scopes_parent(a, n->id),
                     weir_scopes_parent(b, n->id));
  }
}

static void test_scopes_memo(void **state) {
  (void)state;
  g_autofree char *json = chain_json(3);
  g_autoptr(WeirGraph) g = weir_graph_from_json(json, -1, "<chain>", NULL);
  assert_non_null(g);
  WeirState *s = g_ptr_array_index(g->states, 0);
  /* nodes: access x0, then per map entry, tasklet, exit, access */
  const WeirNode *entry = g_ptr_array_index(s->nodes, 1);
  const WeirNode *tasklet = g_ptr_array_index(s->nodes, 2);
  assert_int_equal(entry->kind, WEIR_NODE_MAP_ENTRY);
  assert_int_equal(tasklet->kind, WEIR_NODE_TASKLET);

  g_autoptr(WeirScopes) first = weir_state_scopes(s, NULL);
  g_autoptr(WeirScopes) again = weir_state_scopes(s, NULL);
  assert_non_null(first);
  assert_non_null(again);
  assert_same_scopes(s, first, again);
  assert_int_equal(weir_scopes_parent(again, tasklet->id), entry->id);
  /* a copy of the program (other pointers, same structure) */
  g_autoptr(WeirGraph) copy = weir_graph_copy(g);
  const WeirState *cs = g_ptr_array_index(copy->states, 0);
  g_autoptr(WeirScopes) of_copy = weir_state_scopes(cs, NULL);
  assert_same_scopes(s, first, of_copy);

  /* Change the state: the tasklet no longer reads from the map entry, so
   * it is at the top level now (it still writes into the exit). */
  guint tasklet_id = tasklet->id;
  guint cut = 0;
  for (guint i = 0; i < s->edges->len && !cut; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->src == entry->id && m->dst == tasklet_id)
      cut = m->id;
  }
  assert_true(cut != 0);
  assert_true(weir_state_remove_memlet(s, cut));
  g_autoptr(WeirScopes) after = weir_state_scopes(s, NULL);
  assert_non_null(after);
  assert_int_equal(weir_scopes_parent(after, tasklet_id), 0);
  /* the copy still has the old structure and gets the old answer */
  g_autoptr(WeirScopes) copy_again = weir_state_scopes(cs, NULL);
  assert_int_equal(weir_scopes_parent(copy_again, tasklet_id), entry->id);

  /* A cycle (x3 back to x1, the access after the first map) is still an
   * error (failures are not remembered). */
  const WeirNode *last = g_ptr_array_index(s->nodes, s->nodes->len - 1);
  const WeirNode *head = g_ptr_array_index(s->nodes, 4);
  assert_int_equal(head->kind, WEIR_NODE_ACCESS);
  g_autoptr(GError) error = NULL;
  assert_non_null(weir_state_add_memlet(g, s, last->id, NULL, head->id, NULL,
                                        NULL, NULL, &error));
  for (guint round = 0; round < 2; round++) {
    g_clear_error(&error);
    g_autoptr(WeirScopes) bad = weir_state_scopes(s, &error);
    assert_null(bad);
    assert_non_null(error);
    assert_non_null(strstr(error->message, "cycle"));
  }
}

int main(void) {
  weir_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chain_sites),
      cmocka_unit_test(test_model_sites),
      cmocka_unit_test(test_scopes_memo),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
