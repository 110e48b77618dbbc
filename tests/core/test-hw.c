/* test-hw.c — the hardware profile (core/weir-hw.h): detection fields
 * against what the CPU says, the JSON round trip, the cache file reused
 * without measuring (counted, not timed), measured again when its key is
 * another machine's or on request, and $WEIR_ISA lowering the ISA. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tmpdir-fixture.h"
#include "weir-hw.h"

static int group_setup(void **state) {
  (void)state;
  g_unsetenv("WEIR_ISA");
  return tmpdir_setup("weir-test-hw");
}

static int group_teardown(void **state) {
  (void)state;
  return tmpdir_teardown();
}

static void test_detect_sane(void **state) {
  (void)state;
  g_autoptr(WeirHwProfile) p = weir_hw_detect();
  assert_false(p->measured);
  assert_non_null(p->cpu_model);
  assert_int_equal(strlen(p->key), 64);
#if defined(__x86_64__)
  __builtin_cpu_init();
  WeirHwIsa want = WEIR_HW_ISA_GENERIC;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
    want = WEIR_HW_ISA_AVX512;
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    want = WEIR_HW_ISA_AVX2;
  assert_int_equal(p->isa, want);
#endif
  static const guint lanes[] = {4, 8, 16};
  assert_int_equal(p->vector_floats, lanes[p->isa]);
  assert_true(p->logical_cores >= 1);
  assert_true(p->physical_cores >= 1 && p->physical_cores <= p->logical_cores);
  assert_int_equal(p->logical_cores, (guint)sysconf(_SC_NPROCESSORS_ONLN));
  /* Linux exposes the caches of cpu0 in sysfs: sizes from the file */
  g_autofree char *l1 = NULL;
  if (g_file_get_contents("/sys/devices/system/cpu/cpu0/cache/index0/size", &l1,
                          NULL, NULL)) {
    assert_true(p->l1d_bytes >= 4096);
    assert_true(p->l2_bytes == 0 || p->l2_bytes > p->l1d_bytes);
    assert_true(p->l3_bytes == 0 || p->l3_bytes >= p->l2_bytes);
  }
  /* detection is deterministic */
  g_autoptr(WeirHwProfile) q = weir_hw_detect();
  assert_string_equal(p->key, q->key);
}

static void test_isa_override(void **state) {
  (void)state;
  g_autoptr(WeirHwProfile) full = weir_hw_detect();
  g_setenv("WEIR_ISA", "generic", TRUE);
  g_autoptr(WeirHwProfile) gen = weir_hw_detect();
  assert_int_equal(gen->isa, WEIR_HW_ISA_GENERIC);
  assert_int_equal(gen->vector_floats, 4);
  /* the key is the machine's, whatever the override */
  assert_string_equal(gen->key, full->key);
  g_setenv("WEIR_ISA", "avx512f", TRUE);
  g_autoptr(WeirHwProfile) up = weir_hw_detect();
  assert_int_equal(up->isa, full->isa); /* never raised */
  g_setenv("WEIR_ISA", "avx2+fma", TRUE);
  g_autoptr(WeirHwProfile) a2 = weir_hw_detect();
  assert_int_equal(a2->isa, MIN(full->isa, WEIR_HW_ISA_AVX2));
  g_setenv("WEIR_ISA", "sse9", TRUE);
  g_autoptr(WeirHwProfile) bad = weir_hw_detect();
  assert_int_equal(bad->isa, full->isa);
  g_unsetenv("WEIR_ISA");
  WeirHwIsa isa;
  assert_true(weir_hw_isa_from_name("avx2+fma", &isa));
  assert_int_equal(isa, WEIR_HW_ISA_AVX2);
  assert_string_equal(weir_hw_isa_name(WEIR_HW_ISA_AVX512), "avx512f");
  assert_false(weir_hw_isa_from_name("avx", &isa));
}

/* $WEIR_HW_CORES replaces the core counts code generation sees, not the
 * key; nonsense is ignored */
static void test_cores_override(void **state) {
  (void)state;
  g_autoptr(WeirHwProfile) full = weir_hw_detect();
  g_setenv("WEIR_HW_CORES", "37", TRUE);
  g_autoptr(WeirHwProfile) pinned = weir_hw_detect();
  assert_int_equal(pinned->logical_cores, 37);
  assert_int_equal(pinned->physical_cores, 37);
  assert_string_equal(pinned->key, full->key);
  g_setenv("WEIR_HW_CORES", "zero", TRUE);
  g_autoptr(WeirHwProfile) bad = weir_hw_detect();
  assert_int_equal(bad->logical_cores, full->logical_cores);
  g_unsetenv("WEIR_HW_CORES");
}

static void test_json_round_trip(void **state) {
  (void)state;
  g_autoptr(WeirHwProfile) p = weir_hw_detect();
  p->measured = TRUE;
  p->peak_gflops_1t = 123.25;
  p->peak_gflops_all = 240.5;
  p->bandwidth_gbs = 17.125;
  p->load_average = 1.5;
  p->cache_knee_bytes = 6 << 20;
  g_autofree char *text = weir_hw_profile_to_json(p);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirHwProfile) q = weir_hw_profile_from_json(text, "t", &err);
  assert_null(err);
  assert_non_null(q);
  assert_string_equal(q->key, p->key);
  assert_string_equal(q->cpu_model, p->cpu_model);
  assert_int_equal(q->isa, p->isa);
  assert_int_equal(q->vector_floats, p->vector_floats);
  assert_int_equal(q->logical_cores, p->logical_cores);
  assert_int_equal(q->physical_cores, p->physical_cores);
  assert_int_equal(q->l1d_bytes, p->l1d_bytes);
  assert_int_equal(q->l2_bytes, p->l2_bytes);
  assert_int_equal(q->l3_bytes, p->l3_bytes);
  assert_true(q->measured);
  assert_true(q->peak_gflops_1t == 123.25);
  assert_true(q->peak_gflops_all == 240.5);
  assert_true(q->bandwidth_gbs == 17.125);
  assert_true(q->load_average == 1.5);
  assert_int_equal(q->cache_knee_bytes, 6 << 20);
  g_autofree char *again = weir_hw_profile_to_json(q);
  assert_string_equal(text, again);

  /* errors name the source and the field */
  g_autoptr(GString) broken = g_string_new(text);
  g_string_replace(broken, "\"l2_bytes\"", "\"l2_size\"", 1);
  g_autoptr(WeirHwProfile) r =
      weir_hw_profile_from_json(broken->str, "hw.json", &err);
  assert_null(r);
  assert_non_null(err);
  assert_non_null(strstr(err->message, "hw.json"));
  assert_non_null(strstr(err->message, "l2_bytes"));
  g_clear_error(&err);
  assert_null(weir_hw_profile_from_json("[1]", "x.json", &err));
  assert_non_null(strstr(err->message, "x.json"));
}

/* The cache of the traffic model: the knee when measured (never above
 * the last-level cache), else the L2s plus 2 MiB of L3 per core; a
 * profile written before the knee existed reads as 0. */
static void test_model_cache(void **state) {
  (void)state;
  WeirHwProfile p = {
      .physical_cores = 2, .l2_bytes = 2 << 20, .l3_bytes = (gint64)300 << 20};
  assert_int_equal(weir_hw_model_cache_bytes(&p), 8 << 20);
  p.cache_knee_bytes = 4 << 20;
  assert_int_equal(weir_hw_model_cache_bytes(&p), 4 << 20);
  p.l3_bytes = 1 << 20; /* $WEIR_HW_CACHES made it small */
  assert_int_equal(weir_hw_model_cache_bytes(&p), 1 << 20);
  p.cache_knee_bytes = 0;
  p.l3_bytes = 0; /* no L3: the L2 */
  assert_int_equal(weir_hw_model_cache_bytes(&p), 2 << 20);
  p.l2_bytes = 0;
  assert_int_equal(weir_hw_model_cache_bytes(&p), 0);

  g_autoptr(WeirHwProfile) d = weir_hw_detect();
  d->measured = TRUE;
  g_autofree char *text = weir_hw_profile_to_json(d);
  g_autoptr(GString) old = g_string_new(text);
  g_string_replace(old, "\"cache_knee_bytes\"", "\"unused\"", 1);
  g_autoptr(WeirHwProfile) q =
      weir_hw_profile_from_json(old->str, "old.json", NULL);
  assert_non_null(q);
  assert_int_equal(q->cache_knee_bytes, 0);
}

static void write_profile(const char *path, const WeirHwProfile *p) {
  g_autofree char *text = weir_hw_profile_to_json(p);
  assert_true(g_file_set_contents(path, text, -1, NULL));
}

static void test_cache_reused(void **state) {
  (void)state;
  g_autofree char *path = g_build_filename(tmp_dir, "sub", "hw.json", NULL);
  /* a cached profile of this machine: used as it is, nothing measured */
  g_autoptr(WeirHwProfile) mine = weir_hw_detect();
  mine->measured = TRUE;
  mine->peak_gflops_1t = 11.5;
  mine->peak_gflops_all = 22.5;
  mine->bandwidth_gbs = 3.5;
  g_autofree char *dir = g_path_get_dirname(path);
  assert_int_equal(g_mkdir_with_parents(dir, 0700), 0);
  write_profile(path, mine);
  guint before = weir_hw_measure_count();
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirHwProfile) a = weir_hw_profile_load(path, FALSE, &err);
  assert_null(err);
  assert_int_equal(weir_hw_measure_count(), before);
  assert_true(a->measured);
  assert_true(a->peak_gflops_all == 22.5);
  assert_true(a->bandwidth_gbs == 3.5);

  /* another machine's profile (other key): measured again and rewritten */
  g_free(mine->key);
  mine->key = g_strdup("0000");
  write_profile(path, mine);
  g_autoptr(WeirHwProfile) b = weir_hw_profile_load(path, FALSE, &err);
  assert_null(err);
  assert_int_equal(weir_hw_measure_count(), before + 1);
  assert_true(b->measured);
  assert_true(b->peak_gflops_1t > 0.1);
  assert_true(b->peak_gflops_all > 0.1);
  assert_true(b->bandwidth_gbs > 0.01);
  /* the load it was measured at (Linux has /proc/loadavg) */
  assert_true(b->load_average >= 0);

  /* the file now holds the measurement: a second load reuses it */
  g_autoptr(WeirHwProfile) c = weir_hw_profile_load(path, FALSE, &err);
  assert_null(err);
  assert_int_equal(weir_hw_measure_count(), before + 1);
  assert_true(c->peak_gflops_1t == b->peak_gflops_1t);
  assert_true(c->bandwidth_gbs == b->bandwidth_gbs);
  assert_true(c->load_average == b->load_average);

  /* a missing file is measured; an unwritable place is an error naming it */
  g_autofree char *bad = g_build_filename(path, "below-a-file.json", NULL);
  g_autoptr(WeirHwProfile) d = weir_hw_profile_load(bad, FALSE, &err);
  assert_null(d);
  assert_non_null(err);
  assert_non_null(strstr(err->message, "below-a-file.json"));
  assert_int_equal(weir_hw_measure_count(), before + 2);
  g_unlink(path);
  g_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_detect_sane),
      cmocka_unit_test(test_isa_override),
      cmocka_unit_test(test_cores_override),
      cmocka_unit_test(test_json_round_trip),
      cmocka_unit_test(test_model_cache),
      cmocka_unit_test(test_cache_reused),
  };
  return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
