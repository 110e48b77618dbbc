/* test-cli-bandwidth.c — issue 15: no figure Weir prints implies a
 * bandwidth above the machine's measured one, on a program whose data
 * does not fit in the cache.
 *
 * The program is tests/cli/gen-big-cnn.py's CNN (activations of 4 and
 * 16 MiB; /usr/bin/python3 with onnx, else the test is skipped), and the
 * traffic model is given a 4 MiB last-level cache ($WEIR_HW_CACHES).  The
 * hardware profile is measured by this test into its own file
 * ($WEIR_HW_PROFILE, `weir hw`), under the load the runs below see.  Then
 * every GB/s that `weir bench`, the exported harness and `weir profile`
 * print (per program, and per node for the nodes whose traffic exceeds the
 * cache the machine has: the measured knee, at least 4 MiB) must not
 * exceed the measured triad bandwidth, and `weir run` and `weir info`
 * print byte counts that say which measure they are.
 *
 * The figures are timings, so this is a benchmark (`meson test -C build
 * --benchmark test-cli-bandwidth`), not a unit test.  On a busy machine
 * the measured bandwidth is too low to compare with (docs/hardware.md), so
 * the test first waits for the machine to be quiet: the 1-minute load
 * average at most one per processor, or (since that average lags minutes
 * behind, e.g. after a build) at most half a runnable process per
 * processor besides this one, over a 2-second sample of /proc/loadavg.
 * It waits up to 180 s ($WEIR_TEST_QUIET_WAIT seconds), then skips, and
 * prints the load it saw either way; WEIR_TEST_FORCE_BENCH=1 runs it
 * whatever the load.  The bandwidth is measured before and after the
 * runs (`weir hw --remeasure`), and every rate is compared with the
 * larger of the two. */
#include <glib/gstdio.h>
#include <stdlib.h>

#include "run-weir.h"

#define CACHES "49152,1048576,4194304"

/* Set when the test skips: main exits with 77, which meson reports as
 * SKIP. */
static gboolean skipped;

/* A number field of `weir hw --json` ("bandwidth_gbs", ...). */
static double profile_field(const char *name) {
  Run r = run_weir("hw", "--json", NULL);
  if (r.status != 0)
    fail_msg("weir hw --json: %s", r.err);
  g_autofree char *key = g_strdup_printf("\"%s\"", name);
  const char *p = strstr(r.out, key);
  assert_non_null(p);
  p = strchr(p, ':');
  double v = g_ascii_strtod(p + 1, NULL);
  run_clear(&r);
  return v;
}

static double profile_bandwidth(void) {
  return profile_field("bandwidth_gbs");
}

/* The 1-minute load average and the runnable processes now (the 4th
 * field of /proc/loadavg, "running/total", this process included). */
static gboolean read_load(double *load, int *running) {
  g_autofree char *text = NULL;
  if (!g_file_get_contents("/proc/loadavg", &text, NULL, NULL))
    return FALSE;
  g_auto(GStrv) f = g_strsplit(g_strstrip(text), " ", -1);
  if (g_strv_length(f) < 4)
    return FALSE;
  *load = g_ascii_strtod(f[0], NULL);
  *running = atoi(f[3]);
  return TRUE;
}

static double load_average(void) {
  double load = 0;
  int running = 0;
  return read_load(&load, &running) ? load : 0;
}

/* Waits up to wait seconds for a quiet machine (see the top comment).
 * *others receives the median number of runnable processes besides this
 * one over the last 2-second sample, *load the load average. */
static gboolean wait_quiet(guint cpus, double wait, double *load,
                           double *others) {
  gint64 end = g_get_monotonic_time() + (gint64)(wait * G_USEC_PER_SEC);
  for (;;) {
    int n[11];
    for (guint i = 0; i < G_N_ELEMENTS(n); i++) {
      if (!read_load(load, &n[i]))
        return TRUE; /* no /proc/loadavg: nothing to wait for */
      if (i + 1 < G_N_ELEMENTS(n))
        g_usleep(200000);
    }
    for (guint i = 1; i < G_N_ELEMENTS(n); i++) /* insertion sort */
      for (guint k = i; k > 0 && n[k - 1] > n[k]; k--) {
        int t = n[k];
        n[k] = n[k - 1];
        n[k - 1] = t;
      }
    *others = MAX(n[G_N_ELEMENTS(n) / 2] - 1, 0);
    if (*load <= cpus || *others <= cpus / 2.0)
      return TRUE;
    if (g_get_monotonic_time() >= end)
      return FALSE;
    print_message("waiting for a quiet machine: load %.2f, %.0f other "
                  "runnable process(es) on %u processors\n",
                  *load, *others, cpus);
    g_usleep(8 * G_USEC_PER_SEC);
  }
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
    print_message("%s: %.3f GB/s (%.0f%% of %.3f GB/s)\n", what, v,
                  100 * v / bw, bw);
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
    skipped = TRUE;
    skip();
  }
  g_setenv("WEIR_HW_PROFILE", hw, TRUE);
  g_setenv("WEIR_HW_CACHES", CACHES, TRUE);
  g_autofree char *cache_dir = g_build_filename(dir, "cache", NULL);

  guint cpus = g_get_num_processors();
  const char *wait_env = g_getenv("WEIR_TEST_QUIET_WAIT");
  double wait = wait_env ? g_ascii_strtod(wait_env, NULL) : 180;
  gboolean force = g_strcmp0(g_getenv("WEIR_TEST_FORCE_BENCH"), "1") == 0;
  double load = 0, others = 0;
  gboolean quiet = wait_quiet(cpus, force ? 0 : wait, &load, &others);
  print_message("load before the runs: %.2f (1-minute average), %.0f other "
                "runnable process(es) on %u processors%s\n",
                load, others, cpus,
                quiet   ? ""
                : force ? " (forced)"
                        : "");
  if (!quiet && !force) {
    print_message("the machine is busy: the measured bandwidth is too low to "
                  "compare with; skipped (WEIR_TEST_FORCE_BENCH=1 runs it)\n");
    skipped = TRUE;
    skip();
  }

  Run r = run_weir("hw", "--remeasure", NULL);
  if (r.status != 0)
    fail_msg("weir hw: %s", r.err);
  run_clear(&r);
  double bw_before = profile_bandwidth();
  print_message("measured bandwidth %.2f GB/s at load %.2f\n", bw_before,
                load_average());

  Run bench = run_weir("bench", model, "--reps", "3", "--warmup", "1",
                       "--cache-dir", cache_dir, NULL);
  if (bench.status != 0)
    fail_msg("weir bench: %s%s", bench.out, bench.err);
  assert_contains(bench.out, "(modeled memory traffic, 4.0 MiB cache)");
  assert_contains(bench.out, "(logical volume: every memlet touching a "
                             "container; not memory traffic, so no rate)");

  r = run_weir("profile", model, "--reps", "3", "--cache-dir", cache_dir, NULL);
  if (r.status != 0)
    fail_msg("weir profile: %s%s", r.out, r.err);
  assert_contains(r.out, "bytes: modeled traffic");
  run_clear(&r);
  /* the per-node GB/s, from the CSV form of the same table */
  Run csv = run_weir("profile", model, "--reps", "3", "--format", "csv",
                     "--cache-dir", cache_dir, NULL);
  if (csv.status != 0)
    fail_msg("weir profile --format csv: %s%s", csv.out, csv.err);

  /* the run summary names its measures; its output is the expected one
   * of the export below (the reference interpreter is slow on this
   * program) */
  g_autofree char *y = g_build_filename(dir, "y.npy", NULL);
  g_autofree char *y_arg = g_strdup_printf("y=%s", y);
  Run run =
      run_weir("run", model, "--output", y_arg, "--cache-dir", cache_dir, NULL);
  if (run.status != 0)
    fail_msg("weir run: %s%s", run.out, run.err);
  assert_contains(run.out, "(modeled memory traffic as compiled, 4.0 MiB "
                           "cache)");
  assert_contains(run.out, "(what the memlets name, not memory traffic;");

  /* the exported harness: its GB/s of modeled traffic */
  g_autofree char *exp = g_build_filename(dir, "export", NULL);
  r = run_weir("export", model, "-o", exp, "--expect", y_arg, "--rtol", "1e-3",
               "--atol", "1e-4", NULL);
  if (r.status != 0)
    fail_msg("weir export: %s%s", r.out, r.err);
  run_clear(&r);
  g_autofree char *readme_path = g_build_filename(exp, "README.md", NULL);
  g_autofree char *readme = NULL;
  assert_true(g_file_get_contents(readme_path, &readme, NULL, NULL));
  assert_contains(readme, "model cache 4.0 MiB");
  assert_contains(readme, "| logical volume (not memory traffic) |");
  g_autofree char *make = g_strdup_printf("make -s -C '%s' >/dev/null", exp);
  assert_int_equal(system(make), 0);
  g_autofree char *harness_cmd =
      g_strdup_printf("cd '%s' && ./harness --reps 3 --warmup 1", exp);
  g_autofree char *harness_out = NULL;
  int harness_status = -1;
  const char *sh_argv[] = {"/bin/sh", "-c", harness_cmd, NULL};
  assert_true(g_spawn_sync(NULL, (char **)sh_argv, NULL, G_SPAWN_DEFAULT, NULL,
                           NULL, &harness_out, NULL, &harness_status, NULL));
  assert_contains(harness_out, "GB/s of modeled memory traffic");
  assert_contains(harness_out, "result: PASS");

  /* the bandwidth again, after the runs: the rates are compared with the
   * larger of the two measurements */
  double load_after = load_average();
  r = run_weir("hw", "--remeasure", NULL);
  if (r.status != 0)
    fail_msg("weir hw: %s", r.err);
  run_clear(&r);
  double bw_after = profile_bandwidth();
  double bw = MAX(bw_before, bw_after);
  print_message("measured bandwidth %.2f GB/s after the runs (load %.2f); "
                "the rates are compared with %.2f GB/s\n",
                bw_after, load_after, bw);
  assert_int_equal(check_rates("weir bench", bench.out, bw), 1);
  run_clear(&bench);
  assert_int_equal(check_rates("the exported harness", harness_out, bw), 1);

  /* Per node, only the nodes whose traffic does not fit the cache the
   * machine really has: the model is given 4 MiB, but the measured knee
   * (cache_knee_bytes, the largest working set the triad still runs at
   * half its best rate on) may be larger, and a node reading 4 MiB just
   * written by the node before it is then served by the cache. */
  double knee = profile_field("cache_knee_bytes");
  double fits = MAX(knee, 4194304.0);
  print_message("per node: checked when its traffic exceeds %.0f B (the "
                "measured knee %.0f B, at least the model's 4 MiB)\n",
                fits, knee);
  g_auto(GStrv) lines = g_strsplit(csv.out, "\n", -1);
  guint rows = 0, checked = 0;
  double max_gbs = 0;
  for (guint i = 1; lines[i] && *lines[i]; i++) {
    g_auto(GStrv) f = g_strsplit(lines[i], ",", -1);
    assert_true(g_strv_length(f) >= 10);
    double gbs = g_ascii_strtod(f[9], NULL);
    rows++;
    if (g_ascii_strtod(f[7], NULL) <= fits)
      continue;
    checked++;
    if (gbs > bw)
      fail_msg("weir profile: node %s (%s) at %.3f GB/s, above the measured "
               "%.3f GB/s:\n%s",
               f[2], f[3], gbs, bw, csv.out);
    max_gbs = MAX(max_gbs, gbs);
  }
  assert_true(rows >= 8);
  assert_true(checked >= 1);
  run_clear(&csv);
  print_message("weir profile: %u of %u nodes checked, the highest at %.2f "
                "GB/s\n",
                checked, rows, max_gbs);

  assert_int_equal(check_rates("weir run", run.out, bw), 0);
  run_clear(&run);
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
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  return failed ? failed : skipped ? 77 : 0;
}
