/* test-cli-bandwidth.c — issue 15: no figure Weir prints implies a
 * bandwidth above the machine's measured one, on a program whose data
 * does not fit in the cache.
 *
 * The program is tests/cli/gen-big-cnn.py's CNN (activations of 4 and
 * 16 MiB; /usr/bin/python3 with onnx, else the test is skipped), and the
 * traffic model is given a 4 MiB last-level cache ($WEIR_HW_CACHES).  The
 * hardware profile is measured by this test into its own file
 * ($WEIR_HW_PROFILE, `weir hw`), under the load the runs below see.  Then
 * every GB/s that `weir bench` and `weir profile` print (per program and
 * per node) must not exceed the measured triad bandwidth, and `weir run`
 * and `weir info` print byte counts that say which measure they are.
 *
 * The figures are timings, so this is a benchmark (`meson test -C build
 * --benchmark test-cli-bandwidth`), not a unit test; on a machine busier
 * than one runnable process per processor the measured bandwidth is too
 * low to compare with (docs/hardware.md) and the test skips. */
#include <glib/gstdio.h>
#include <stdlib.h>

#include "run-weir.h"

#define CACHES "49152,1048576,4194304"

/* The "bandwidth_gbs" of `weir hw --json`. */
static double profile_bandwidth(void) {
  Run r = run_weir("hw", "--json", NULL);
  if (r.status != 0)
    fail_msg("weir hw --json: %s", r.err);
  const char *p = strstr(r.out, "\"bandwidth_gbs\"");
  assert_non_null(p);
  p = strchr(p, ':');
  double bw = g_ascii_strtod(p + 1, NULL);
  run_clear(&r);
  return bw;
}

static double load_average(void) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents("/proc/loadavg", &text, NULL, NULL))
    return 0;
  return g_ascii_strtod(text, NULL);
}

/* Every number printed right before " GB/s" in text, checked against
 * bw; returns how many there were. */
static guint check_rates(const char *what, const char *text, double bw) {
  guint n = 0;
  for (const char *p = strstr(text, " GB/s"); p; p = strstr(p + 1, " GB/s")) {
    const char *q = p;
    while (q > text && (g_ascii_isdigit(q[-1]) || q[-1] == '.'))
      q--;
    if (q == p)
      continue;
    double v = g_ascii_strtod(q, NULL);
    if (v > bw)
      fail_msg("%s prints %.3f GB/s, above the measured %.3f GB/s:\n%s", what,
               v, bw, text);
    n++;
  }
  return n;
}

static void test_no_rate_above_bandwidth(void **state) {
  (void)state;
  g_autofree char *dir = g_dir_make_tmp("weir-test-bandwidth-XXXXXX", NULL);
  assert_non_null(dir);
  g_autofree char *model = g_build_filename(dir, "big.onnx", NULL);
  g_autofree char *hw = g_build_filename(dir, "hw.json", NULL);
  const char *gen_argv[] = {
      "/usr/bin/python3", WEIR_SRCDIR "/tests/cli/gen-big-cnn.py", model, NULL};
  int gen_status = -1;
  if (!g_spawn_sync(NULL, (char **)gen_argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL,
                    NULL, NULL, NULL, NULL, &gen_status, NULL) ||
      !g_spawn_check_wait_status(gen_status, NULL)) {
    print_message("no /usr/bin/python3 with onnx: skipped\n");
    skip();
  }
  g_setenv("WEIR_HW_PROFILE", hw, TRUE);
  g_setenv("WEIR_HW_CACHES", CACHES, TRUE);
  g_autofree char *cache_dir = g_build_filename(dir, "cache", NULL);

  Run r = run_weir("hw", NULL, NULL);
  if (r.status != 0)
    fail_msg("weir hw: %s", r.err);
  run_clear(&r);
  double bw = profile_bandwidth();
  double load = load_average();
  guint cpus = g_get_num_processors();
  print_message("measured bandwidth %.2f GB/s at load %.2f on %u processors\n",
                bw, load, cpus);
  if (load > cpus) {
    print_message("the machine is busy: the measured bandwidth is too low to "
                  "compare with; skipped\n");
    skip();
  }

  r = run_weir("bench", model, "--reps", "3", "--warmup", "1", "--cache-dir",
               cache_dir, NULL);
  if (r.status != 0)
    fail_msg("weir bench: %s%s", r.out, r.err);
  assert_contains(r.out, "(modeled memory traffic, 4.0 MiB cache)");
  assert_contains(r.out, "(logical volume: every memlet touching a "
                         "container; not memory traffic, so no rate)");
  assert_int_equal(check_rates("weir bench", r.out, bw), 1);
  run_clear(&r);

  r = run_weir("profile", model, "--reps", "3", "--cache-dir", cache_dir, NULL);
  if (r.status != 0)
    fail_msg("weir profile: %s%s", r.out, r.err);
  assert_contains(r.out, "bytes: modeled traffic");
  run_clear(&r);
  /* the per-node GB/s, from the CSV form of the same table */
  r = run_weir("profile", model, "--reps", "3", "--format", "csv",
               "--cache-dir", cache_dir, NULL);
  if (r.status != 0)
    fail_msg("weir profile --format csv: %s%s", r.out, r.err);
  g_auto(GStrv) lines = g_strsplit(r.out, "\n", -1);
  guint rows = 0;
  for (guint i = 1; lines[i] && *lines[i]; i++) {
    g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
    assert_true(g_strv_length(f) >= 10);
    double gbs = g_ascii_strtod(f[9], NULL);
    if (gbs > bw)
      fail_msg("weir profile: node %s (%s) at %.3f GB/s, above the measured "
               "%.3f GB/s:\n%s",
               f[2], f[3], gbs, bw, r.out);
    rows++;
  }
  assert_true(rows >= 8);
  run_clear(&r);

  /* the run summary and info name their measures */
  r = run_weir("run", model, "--cache-dir", cache_dir, NULL);
  if (r.status != 0)
    fail_msg("weir run: %s%s", r.out, r.err);
  assert_contains(r.out, "(modeled memory traffic as compiled, 4.0 MiB "
                         "cache)");
  assert_contains(r.out, "(what the memlets name, not memory traffic;");
  assert_int_equal(check_rates("weir run", r.out, bw), 0);
  run_clear(&r);
  r = run_weir("info", model, NULL);
  assert_int_equal(r.status, 0);
  assert_contains(r.out, "modeled traffic: what must come from memory with a "
                         "4.0 MiB cache");
  run_clear(&r);

  g_unsetenv("WEIR_HW_PROFILE");
  g_unsetenv("WEIR_HW_CACHES");
  g_autofree char *rm = g_strdup_printf("rm -rf '%s'", dir);
  assert_int_equal(system(rm), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_no_rate_above_bandwidth),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
