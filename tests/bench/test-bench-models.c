/* test-bench-models.c — the benchmark program runs and prints well-formed
 * tables (no timing is asserted: bench-models is not a pass/fail test).
 *
 * Runs bench-models on the MLP with one repetition, without the peers and
 * without the search, in a private compile cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <glib.h>
#include <glib/gstdio.h>

static char *run_bench(const char *const *extra, gint *status) {
  g_autofree char *cache = g_dir_make_tmp("weir-bench-test-XXXXXX", NULL);
  assert_non_null(cache);
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  const char *base[] = {BENCH_MODELS,  "--models", "mlp", "--reps",
                        "1",           "--warmup", "0",   "--no-peers",
                        "--cache-dir", cache};
  for (guint i = 0; i < G_N_ELEMENTS(base); i++)
    g_ptr_array_add(argv, (gpointer)base[i]);
  for (guint i = 0; extra && extra[i]; i++)
    g_ptr_array_add(argv, (gpointer)extra[i]);
  g_ptr_array_add(argv, NULL);
  char *out = NULL, *err = NULL;
  g_autoptr(GError) error = NULL;
  assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT,
                           NULL, NULL, &out, &err, status, &error));
  if (err && *err)
    g_printerr("%s", err);
  g_free(err);
  /* the private cache: objects/ and the index */
  g_autofree char *rm = g_strdup_printf("rm -rf '%s'", cache);
  g_assert_true(g_spawn_command_line_sync(rm, NULL, NULL, NULL, NULL));
  return out;
}

static void assert_line(const char *out, const char *prefix) {
  g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
  for (guint i = 0; lines[i]; i++)
    if (g_str_has_prefix(lines[i], prefix))
      return;
  g_printerr("%s", out);
  fail_msg("no line starting with '%s' in the output above", prefix);
}

static void test_tables(void **state) {
  (void)state;
  const char *extra[] = {"--no-search", NULL};
  gint status = 0;
  g_autofree char *out = run_bench(extra, &status);
  assert_int_equal(status, 0);
  assert_line(out, "OpenBLAS  ");
  assert_line(out, "roofline  cblas_sgemm 512x512x512: ");
  assert_line(out, "MLP b64 (mlp): ");
  /* the default configuration ran and matched the reference */
  assert_line(out, "  default                                      ok ");
  /* 3 cblas_sgemm calls when a blas configuration is the best, none when
   * the default (Weir's own GEMM) is */
  assert_line(out, "  GEMM calls of the best: ");
  assert_line(out, "| model | Weir default ms | Weir best ms |");
  /* the summary row: eight cells, the peers skipped */
  g_auto(GStrv) lines = g_strsplit(out, "\n", -1);
  gboolean found = FALSE;
  for (guint i = 0; lines[i]; i++) {
    if (!g_str_has_prefix(lines[i], "| MLP b64 |"))
      continue;
    found = TRUE;
    g_auto(GStrv) cells = g_strsplit(lines[i], "|", -1);
    assert_int_equal(g_strv_length(cells), 10); /* 8 cells + both ends */
    g_strstrip(cells[2]);
    g_strstrip(cells[3]);
    assert_true(g_ascii_strtod(cells[2], NULL) > 0);
    assert_true(g_ascii_strtod(cells[3], NULL) > 0);
    assert_non_null(strstr(cells[5], "n/a"));
  }
  assert_true(found);
}

static void test_bad_usage(void **state) {
  (void)state;
  const char *extra[] = {"--models", "nosuchmodel", NULL};
  gint status = 0;
  g_autofree char *out = run_bench(extra, &status);
  assert_true(g_spawn_check_wait_status(status, NULL) == FALSE);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_tables),
      cmocka_unit_test(test_bad_usage),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
