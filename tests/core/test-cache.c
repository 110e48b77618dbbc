/* test-cache.c — the compile cache.
 *
 * Kernels here are hand-written C that follows the generated-code ABI, so
 * the cache is tested independently of the code generator.  Every test uses
 * its own cache directory and a compiler wrapper that logs its runs
 * (runtime-fixture.h).  The concurrency test runs the helper program
 * cache-helper (path in WEIR_CACHE_HELPER) twice at the same time, on a
 * hand-written kernel and on a sample program's generated code.
 * test_generated_program repeats hit, miss and recovery on generated code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <gio/gio.h>
#include <utime.h>

#include <math.h>

#include "runtime-fixture.h"
#include "weir-codegen.h"
#include "weir-json.h"

/* x[i] *= factor for i < n: args = {float x[n]}, symbols = {n}. */
static const char scale_source[] =
    "#include <stdint.h>\n"
    "int scale_run(void *const args[], const int64_t symbols[],\n"
    "    const void *const consts[], void *workspace) {\n"
    "  float *x = args[0];\n"
    "  for (int64_t i = 0; i < symbols[0]; i++)\n"
    "    x[i] *= 3.0f;\n"
    "  return 0;\n"
    "}\n"
    "int scale_abi_version(void) { return 2; }\n"
    "unsigned long scale_workspace_size(const void *s) { (void)s; return 0; "
    "}\n";

static int setup(void **state) {
  *state = fixture_new();
  return 0;
}

static int teardown(void **state) {
  fixture_free(*state);
  return 0;
}

static WeirKernel *compile_scale(Fixture *f, WeirCompileInfo *info) {
  g_autoptr(GError) err = NULL;
  WeirKernel *k = weir_kernel_compile_source(scale_source, "scale", NULL,
                                             &f->opts, info, &err);
  if (!k)
    fail_msg("compile: %s", err->message);
  return k;
}

/* Runs the kernel on {1, 2, 3, 4} and checks the result. */
static void check_scale(WeirKernel *k) {
  float x[4] = {1, 2, 3, 4};
  void *args[] = {x};
  gint64 n = 4;
  g_autoptr(GError) err = NULL;
  assert_true(weir_kernel_call(k, args, &n, &err));
  for (int i = 0; i < 4; i++)
    assert_true(x[i] == 3.0f * (float)(i + 1));
}

static WeirCacheStats stats_of(Fixture *f) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirCache) c = weir_cache_open(f->cache_dir, &err);
  if (!c)
    fail_msg("open: %s", err->message);
  WeirCacheStats st;
  assert_true(weir_cache_stats(c, &st, &err));
  return st;
}

/* ------------------------------------------------------------------ keys */

static void test_key(void **state) {
  (void)state;
  g_autofree char *k = weir_cache_key("int x;", "cc 1.0", "-O2", 1);
  assert_int_equal(strlen(k), 64);
  g_autofree char *same = weir_cache_key("int x;", "cc 1.0", "-O2", 1);
  assert_string_equal(k, same);
  const char *variants[][3] = {
      {"int y;", "cc 1.0", "-O2"},
      {"int x;", "cc 1.1", "-O2"},
      {"int x;", "cc 1.0", "-O3"},
      /* fields are length-delimited: moving a boundary changes the key */
      {"int x;", "cc 1.0-O", "2"},
  };
  for (guint i = 0; i < G_N_ELEMENTS(variants); i++) {
    g_autofree char *v =
        weir_cache_key(variants[i][0], variants[i][1], variants[i][2], 1);
    assert_string_not_equal(k, v);
  }
  g_autofree char *abi = weir_cache_key("int x;", "cc 1.0", "-O2", 2);
  assert_string_not_equal(k, abi);
}

/* ------------------------------------------------------- hits and misses */

static void test_hit_after_identical_compile(void **state) {
  Fixture *f = *state;
  WeirCompileInfo a = {0}, b = {0};
  g_autoptr(WeirKernel) k1 = compile_scale(f, &a);
  assert_false(a.cache_hit);
  assert_true(a.compile_seconds > 0);
  assert_int_equal(fixture_compiles(f), 1);
  assert_non_null(a.object_path);
  assert_true(g_str_has_prefix(a.object_path, f->cache_dir));
  assert_true(g_file_test(a.object_path, G_FILE_TEST_IS_REGULAR));
  check_scale(k1);

  g_autoptr(WeirKernel) k2 = compile_scale(f, &b);
  assert_true(b.cache_hit);
  assert_true(b.compile_seconds == 0);
  assert_int_equal(fixture_compiles(f), 1); /* the compiler did not run */
  assert_string_equal(a.key, b.key);
  check_scale(k2);

  WeirCacheStats st = stats_of(f);
  assert_int_equal(st.entries, 1);
  assert_int_equal(st.hits, 1);
  GStatBuf sb;
  assert_int_equal(g_stat(a.object_path, &sb), 0);
  assert_int_equal(st.total_bytes, sb.st_size);
  assert_int_equal(st.max_bytes, WEIR_CACHE_DEFAULT_MAX_BYTES);
  weir_compile_info_clear(&a);
  weir_compile_info_clear(&b);
}

static void test_miss_after_flag_change(void **state) {
  Fixture *f = *state;
  WeirCompileInfo a = {0}, b = {0}, c = {0};
  g_autoptr(WeirKernel) k1 = compile_scale(f, &a);
  f->opts.flags = "-O2 -fPIC -shared";
  g_autoptr(WeirKernel) k2 = compile_scale(f, &b);
  assert_false(b.cache_hit);
  assert_string_not_equal(a.key, b.key);
  assert_int_equal(fixture_compiles(f), 2);
  check_scale(k2);
  /* the same flags spelled with other blanks are the same flags */
  f->opts.flags = "  -O2   -fPIC -shared ";
  g_autoptr(WeirKernel) k3 = compile_scale(f, &c);
  assert_true(c.cache_hit);
  assert_string_equal(b.key, c.key);
  assert_int_equal(stats_of(f).entries, 2);
  weir_compile_info_clear(&a);
  weir_compile_info_clear(&b);
  weir_compile_info_clear(&c);
}

static void test_no_cache(void **state) {
  Fixture *f = *state;
  f->opts.no_cache = TRUE;
  WeirCompileInfo a = {0}, b = {0};
  g_autoptr(WeirKernel) k1 = compile_scale(f, &a);
  g_autoptr(WeirKernel) k2 = compile_scale(f, &b);
  assert_false(a.cache_hit);
  assert_false(b.cache_hit);
  assert_int_equal(fixture_compiles(f), 2);
  assert_false(g_file_test(f->cache_dir, G_FILE_TEST_EXISTS));
  /* the temporary object is gone but the loaded kernel still runs */
  assert_false(g_file_test(a.object_path, G_FILE_TEST_EXISTS));
  check_scale(k1);
  weir_compile_info_clear(&a);
  weir_compile_info_clear(&b);
}

/* ------------------------------------------- a program's generated code */

/* The same rules hold for the code the generator writes: a sample program
 * compiles once, then is a lookup; other flags miss; a deleted or damaged
 * object is rebuilt. */
static WeirKernel *compile_program(Fixture *f, const WeirGraph *g,
                                   WeirCompileInfo *info) {
  g_autoptr(GError) err = NULL;
  WeirKernel *k = weir_kernel_compile(g, &f->opts, info, &err);
  if (!k)
    fail_msg("compile '%s': %s", g->name, err->message);
  return k;
}

/* Runs softmax over rows 0..31 of {x_ij = (i + j) % 7}; every row of the
 * output must sum to 1. */
static void check_softmax(WeirKernel *k) {
  static float x[32 * 64], y[32 * 64];
  for (int i = 0; i < 32 * 64; i++) {
    x[i] = (float)((i / 64 + i % 64) % 7);
    y[i] = -1;
  }
  void *args[] = {x, y};
  g_autoptr(GError) err = NULL;
  assert_true(weir_kernel_call(k, args, NULL, &err));
  for (int r = 0; r < 32; r++) {
    double sum = 0;
    for (int c = 0; c < 64; c++)
      sum += y[r * 64 + c];
    assert_true(fabs(sum - 1.0) < 1e-4);
  }
}

static WeirGraph *load_softmax(void) {
  g_autoptr(GError) err = NULL;
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, "samples", "softmax.json", NULL);
  WeirGraph *g = weir_graph_load(path, &err);
  if (!g)
    fail_msg("%s: %s", path, err->message);
  return g;
}

static void test_generated_program(void **state) {
  Fixture *f = *state;
  g_autoptr(WeirGraph) g = load_softmax();
  WeirCompileInfo a = {0}, b = {0}, c = {0}, d = {0}, e = {0};
  g_autoptr(WeirKernel) k1 = compile_program(f, g, &a);
  assert_false(a.cache_hit);
  assert_int_equal(fixture_compiles(f), 1);
  check_softmax(k1);
  /* identical compile: a lookup, the compiler does not run */
  g_autoptr(WeirKernel) k2 = compile_program(f, g, &b);
  assert_true(b.cache_hit);
  assert_string_equal(a.key, b.key);
  assert_int_equal(fixture_compiles(f), 1);
  check_softmax(k2);
  /* other flags: a miss and a second object */
  f->opts.flags = "-O2 -fPIC -shared";
  g_autoptr(WeirKernel) k3 = compile_program(f, g, &c);
  assert_false(c.cache_hit);
  assert_string_not_equal(a.key, c.key);
  assert_int_equal(fixture_compiles(f), 2);
  check_softmax(k3);
  assert_int_equal(stats_of(f).entries, 2);
  /* deleted object: rebuilt */
  assert_int_equal(g_unlink(c.object_path), 0);
  g_autoptr(WeirKernel) k4 = compile_program(f, g, &d);
  assert_false(d.cache_hit);
  assert_true(d.recovered);
  assert_int_equal(fixture_compiles(f), 3);
  check_softmax(k4);
  /* corrupted object (same size, other bytes): rebuilt */
  g_autofree char *data = NULL;
  gsize len = 0;
  assert_true(g_file_get_contents(d.object_path, &data, &len, NULL));
  memset(data + len / 3, 0x5A, len / 3);
  assert_true(g_file_set_contents(d.object_path, data, (gssize)len, NULL));
  g_autoptr(WeirKernel) k5 = compile_program(f, g, &e);
  assert_false(e.cache_hit);
  assert_true(e.recovered);
  assert_int_equal(fixture_compiles(f), 4);
  check_softmax(k5);
  assert_int_equal(stats_of(f).entries, 2);
  WeirCompileInfo *all[] = {&a, &b, &c, &d, &e};
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    weir_compile_info_clear(all[i]);
}

/* ------------------------------------------------------------- recovery */

static void test_recover_deleted_object(void **state) {
  Fixture *f = *state;
  WeirCompileInfo a = {0}, b = {0}, c = {0};
  g_autoptr(WeirKernel) k1 = compile_scale(f, &a);
  assert_int_equal(g_unlink(a.object_path), 0);
  g_autoptr(WeirKernel) k2 = compile_scale(f, &b);
  assert_false(b.cache_hit);
  assert_true(b.recovered);
  assert_int_equal(fixture_compiles(f), 2);
  assert_true(g_file_test(b.object_path, G_FILE_TEST_IS_REGULAR));
  check_scale(k2);
  g_autoptr(WeirKernel) k3 = compile_scale(f, &c);
  assert_true(c.cache_hit);
  assert_false(c.recovered);
  assert_int_equal(stats_of(f).entries, 1);
  weir_compile_info_clear(&a);
  weir_compile_info_clear(&b);
  weir_compile_info_clear(&c);
}

static void damage_and_recompile(Fixture *f, gboolean keep_size) {
  WeirCompileInfo a = {0}, b = {0};
  g_autoptr(WeirKernel) k1 = compile_scale(f, &a);
  g_autofree char *data = NULL;
  gsize len = 0;
  assert_true(g_file_get_contents(a.object_path, &data, &len, NULL));
  if (keep_size)
    memset(data + len / 2, 0xAB, len / 4); /* same size, other bytes */
  else
    len /= 2; /* truncated */
  assert_true(g_file_set_contents(a.object_path, data, (gssize)len, NULL));
  g_autoptr(WeirKernel) k2 = compile_scale(f, &b);
  assert_false(b.cache_hit);
  assert_true(b.recovered);
  assert_int_equal(fixture_compiles(f), 2);
  check_scale(k2);
  GStatBuf sb;
  assert_int_equal(g_stat(b.object_path, &sb), 0);
  WeirCacheStats st = stats_of(f);
  assert_int_equal(st.entries, 1);
  assert_int_equal(st.total_bytes, sb.st_size);
  weir_compile_info_clear(&a);
  weir_compile_info_clear(&b);
}

static void test_recover_truncated_object(void **state) {
  damage_and_recompile(*state, FALSE);
}

static void test_recover_overwritten_object(void **state) {
  damage_and_recompile(*state, TRUE);
}

/* An object whose index entry is consistent but that does not load (here:
 * garbage stored under the kernel's key) is dropped and rebuilt. */
static void test_recover_unloadable_object(void **state) {
  Fixture *f = *state;
  g_autoptr(GError) err = NULL;
  g_autofree char *identity = weir_compiler_identity(&f->opts, &err);
  assert_non_null(identity);
  g_autofree char *key = weir_cache_key(scale_source, identity, TEST_FLAGS,
                                        WEIR_CODEGEN_ABI_VERSION);
  {
    g_autoptr(WeirCache) c = weir_cache_open(f->cache_dir, &err);
    assert_non_null(c);
    g_autoptr(GBytes) junk = g_bytes_new_static("not an ELF file", 15);
    assert_true(weir_cache_insert(c, key, junk, NULL, &err));
  }
  WeirCompileInfo a = {0};
  g_autoptr(WeirKernel) k = compile_scale(f, &a);
  assert_string_equal(a.key, key);
  assert_false(a.cache_hit);
  assert_true(a.recovered);
  check_scale(k);
  assert_true(stats_of(f).total_bytes > 15);
  weir_compile_info_clear(&a);
}

static void test_recover_damaged_index(void **state) {
  Fixture *f = *state;
  WeirCompileInfo a = {0}, b = {0};
  g_autoptr(WeirKernel) k1 = compile_scale(f, &a);
  g_autofree char *db = g_build_filename(f->cache_dir, "weir-cache.db", NULL);
  g_autofree char *wal = g_strconcat(db, "-wal", NULL);
  g_unlink(wal);
  assert_true(
      g_file_set_contents(db, "this is not a database at all, no", -1, NULL));
  g_autoptr(WeirKernel) k2 = compile_scale(f, &b);
  assert_false(b.cache_hit);
  check_scale(k2);
  assert_int_equal(stats_of(f).entries, 1);
  weir_compile_info_clear(&a);
  weir_compile_info_clear(&b);
}

/* --------------------------------------------------------- cache proper */

static char *key_of(const char *name) {
  return g_compute_checksum_for_string(G_CHECKSUM_SHA256, name, -1);
}

static void insert_blob(WeirCache *c, const char *name, gsize size) {
  g_autofree char *key = key_of(name);
  g_autofree char *data = g_malloc(size);
  memset(data, name[0], size);
  g_autoptr(GBytes) b = g_bytes_new(data, size);
  g_autoptr(GError) err = NULL;
  if (!weir_cache_insert(c, key, b, NULL, &err))
    fail_msg("insert %s: %s", name, err->message);
  g_usleep(2000); /* distinct last_used times */
}

static gboolean has_blob(WeirCache *c, const char *name) {
  g_autofree char *key = key_of(name);
  g_autoptr(GError) err = NULL;
  gboolean recovered = FALSE;
  g_autofree char *path = weir_cache_lookup(c, key, &recovered, &err);
  assert_null(err);
  assert_false(recovered);
  g_usleep(2000);
  return path != NULL;
}

static guint count_files(const char *dir) {
  g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
  guint n = 0;
  while (d && g_dir_read_name(d))
    n++;
  return n;
}

/* The index notices a missing, truncated or overwritten object by itself
 * (before anything tries to load it). */
static void test_lookup_detects_damage(void **state) {
  Fixture *f = *state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirCache) c = weir_cache_open(f->cache_dir, &err);
  assert_non_null(c);
  for (int kind = 0; kind < 3; kind++) {
    insert_blob(c, "m", 64);
    g_autofree char *key = key_of("m");
    g_autofree char *path = fixture_object(f, key);
    char other[64];
    memset(other, 'n', sizeof other);
    if (kind == 0)
      assert_int_equal(g_unlink(path), 0);
    else if (kind == 1) /* truncated */
      assert_true(g_file_set_contents(path, "mmmm", 4, NULL));
    else /* same size, other bytes */
      assert_true(g_file_set_contents(path, other, sizeof other, NULL));
    gboolean recovered = FALSE;
    g_autofree char *got = weir_cache_lookup(c, key, &recovered, &err);
    assert_null(err);
    assert_null(got);
    assert_true(recovered);
    assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    WeirCacheStats st;
    assert_true(weir_cache_stats(c, &st, &err));
    assert_int_equal(st.entries, 0);
  }
}

static void test_lru_eviction(void **state) {
  Fixture *f = *state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirCache) c = weir_cache_open(f->cache_dir, &err);
  assert_non_null(c);
  weir_cache_set_max_bytes(c, 250);
  insert_blob(c, "a", 100);
  insert_blob(c, "b", 100);
  assert_true(has_blob(c, "a")); /* a is now more recent than b */
  insert_blob(c, "c", 100);      /* 300 > 250: evicts b */
  WeirCacheStats st;
  assert_true(weir_cache_stats(c, &st, &err));
  assert_int_equal(st.entries, 2);
  assert_int_equal(st.total_bytes, 200);
  assert_int_equal(st.max_bytes, 250);
  assert_false(has_blob(c, "b"));
  assert_true(has_blob(c, "a"));
  assert_true(has_blob(c, "c"));
  g_autofree char *objects = g_build_filename(f->cache_dir, "objects", NULL);
  assert_int_equal(count_files(objects), 2);

  /* an object larger than the limit evicts the rest but is kept itself */
  insert_blob(c, "d", 400);
  assert_true(weir_cache_stats(c, &st, &err));
  assert_int_equal(st.entries, 1);
  assert_int_equal(st.total_bytes, 400);
  assert_true(has_blob(c, "d"));
  assert_int_equal(count_files(objects), 1);
}

static void test_size_limit_from_environment(void **state) {
  Fixture *f = *state;
  g_autoptr(GError) err = NULL;
  const struct {
    const char *text;
    gint64 bytes;
  } ok[] = {{"4096", 4096}, {"64K", 65536}, {"3MiB", 3 << 20}, {"1g", 1 << 30}};
  for (guint i = 0; i < G_N_ELEMENTS(ok); i++) {
    g_setenv("WEIR_CACHE_MAX_BYTES", ok[i].text, TRUE);
    g_autoptr(WeirCache) c = weir_cache_open(f->cache_dir, &err);
    assert_non_null(c);
    WeirCacheStats st;
    assert_true(weir_cache_stats(c, &st, &err));
    assert_int_equal(st.max_bytes, ok[i].bytes);
  }
  const char *bad[] = {"-5", "0", "lots", "12Q", "10 MB"};
  for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
    g_setenv("WEIR_CACHE_MAX_BYTES", bad[i], TRUE);
    g_autoptr(WeirCache) c = weir_cache_open(f->cache_dir, &err);
    assert_null(c);
    assert_non_null(strstr(err->message, "WEIR_CACHE_MAX_BYTES"));
    g_clear_error(&err);
  }
  g_unsetenv("WEIR_CACHE_MAX_BYTES");
}

static void test_stats_and_clear(void **state) {
  Fixture *f = *state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirCache) c = weir_cache_open(f->cache_dir, &err);
  assert_non_null(c);
  assert_string_equal(weir_cache_dir(c), f->cache_dir);
  WeirCacheStats st;
  assert_true(weir_cache_stats(c, &st, &err));
  assert_int_equal(st.entries, 0);
  assert_int_equal(st.total_bytes, 0);
  insert_blob(c, "x", 10);
  insert_blob(c, "y", 20);
  assert_true(has_blob(c, "x"));
  assert_true(has_blob(c, "x"));
  assert_true(has_blob(c, "y"));
  assert_true(weir_cache_stats(c, &st, &err));
  assert_int_equal(st.entries, 2);
  assert_int_equal(st.total_bytes, 30);
  assert_int_equal(st.hits, 3);
  /* a stray object and a stale temporary file are removed too; a fresh
   * temporary file may belong to an insert in progress and stays */
  g_autofree char *stray =
      g_build_filename(f->cache_dir, "objects", "stray.so", NULL);
  g_autofree char *stale =
      g_build_filename(f->cache_dir, "objects", ".tmp-stale", NULL);
  g_autofree char *fresh =
      g_build_filename(f->cache_dir, "objects", ".tmp-fresh", NULL);
  assert_true(g_file_set_contents(stray, "x", 1, NULL));
  assert_true(g_file_set_contents(stale, "x", 1, NULL));
  assert_true(g_file_set_contents(fresh, "x", 1, NULL));
  struct utimbuf old = {.actime = 1000000000, .modtime = 1000000000};
  assert_int_equal(g_utime(stale, &old), 0);
  assert_true(weir_cache_clear(c, &err));
  assert_true(weir_cache_stats(c, &st, &err));
  assert_int_equal(st.entries, 0);
  assert_int_equal(st.total_bytes, 0);
  assert_int_equal(st.hits, 0);
  assert_false(has_blob(c, "x"));
  g_autofree char *objects = g_build_filename(f->cache_dir, "objects", NULL);
  assert_int_equal(count_files(objects), 1);
  assert_true(g_file_test(fresh, G_FILE_TEST_EXISTS));
}

static void test_bad_keys(void **state) {
  Fixture *f = *state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirCache) c = weir_cache_open(f->cache_dir, &err);
  g_autoptr(GBytes) b = g_bytes_new_static("x", 1);
  assert_false(weir_cache_insert(c, "../../etc/passwd", b, NULL, &err));
  assert_non_null(strstr(err->message, "not a cache key"));
  g_clear_error(&err);
  assert_null(weir_cache_lookup(c, "ABC", NULL, &err));
  assert_non_null(err);
}

static void test_default_dir(void **state) {
  (void)state;
  g_setenv("WEIR_CACHE_DIR", "/some/where", TRUE);
  g_autofree char *a = weir_cache_default_dir();
  assert_string_equal(a, "/some/where");
  g_unsetenv("WEIR_CACHE_DIR");
  g_autofree char *b = weir_cache_default_dir();
  g_autofree char *want =
      g_build_filename(g_get_user_cache_dir(), "weir", NULL);
  assert_string_equal(b, want);
}

/* ---------------------------------------------------------- concurrency */

static GSubprocess *spawn_helper(Fixture *f, const char *source_path,
                                 const char *result_path) {
  g_autoptr(GError) err = NULL;
  GSubprocess *p = g_subprocess_new(G_SUBPROCESS_FLAGS_STDOUT_PIPE |
                                        G_SUBPROCESS_FLAGS_STDERR_MERGE,
                                    &err, WEIR_CACHE_HELPER, f->cache_dir,
                                    source_path, f->wrapper, result_path, NULL);
  if (!p)
    fail_msg("spawn: %s", err->message);
  return p;
}

static char *wait_helper(GSubprocess *p, const char *result_path) {
  g_autoptr(GError) err = NULL;
  g_autofree char *out = NULL;
  assert_true(g_subprocess_communicate_utf8(p, NULL, NULL, &out, NULL, &err));
  if (!g_subprocess_get_if_exited(p) || g_subprocess_get_exit_status(p) != 0)
    fail_msg("helper failed: %s", out);
  char *result = NULL;
  assert_true(g_file_get_contents(result_path, &result, NULL, NULL));
  return result;
}

/* Two processes compile the same program at the same time, three rounds
 * (the first two from an empty cache); afterwards the index has one entry
 * whose object is intact, and no temporary file is left behind. */
static void test_concurrent_processes(void **state) {
  Fixture *f = *state;
  g_autofree char *src = g_build_filename(f->dir, "scale.c", NULL);
  assert_true(g_file_set_contents(src, scale_source, -1, NULL));
  g_autofree char *r1 = g_build_filename(f->dir, "r1", NULL);
  g_autofree char *r2 = g_build_filename(f->dir, "r2", NULL);
  for (int round = 0; round < 3; round++) {
    if (round == 1) {
      g_autoptr(GError) err = NULL;
      g_autoptr(WeirCache) c = weir_cache_open(f->cache_dir, &err);
      assert_true(weir_cache_clear(c, &err));
    }
    g_autoptr(GSubprocess) p1 = spawn_helper(f, src, r1);
    g_autoptr(GSubprocess) p2 = spawn_helper(f, src, r2);
    g_autofree char *o1 = wait_helper(p1, r1);
    g_autofree char *o2 = wait_helper(p2, r2);
    if (round == 2) {
      assert_string_equal(o1, "hit");
      assert_string_equal(o2, "hit");
    }
    WeirCacheStats st = stats_of(f);
    assert_int_equal(st.entries, 1);
    g_autofree char *objects = g_build_filename(f->cache_dir, "objects", NULL);
    assert_int_equal(count_files(objects), 1);
  }
  /* the surviving entry is intact: a lookup hits */
  g_autoptr(GError) err = NULL;
  g_autofree char *identity = weir_compiler_identity(&f->opts, &err);
  g_autofree char *key = weir_cache_key(scale_source, identity, TEST_FLAGS,
                                        WEIR_CODEGEN_ABI_VERSION);
  g_autoptr(WeirCache) c = weir_cache_open(f->cache_dir, &err);
  gboolean recovered = TRUE;
  g_autofree char *path = weir_cache_lookup(c, key, &recovered, &err);
  assert_non_null(path);
  assert_false(recovered);
  g_autofree char *want = fixture_object(f, key);
  assert_string_equal(path, want);
}

/* Two processes compile the generated code of one sample program at the
 * same time from an empty cache, then again from the filled one: both
 * kernels agree with the interpreter (cache-helper checks), the second
 * round is two hits, and the index holds one intact object. */
static void test_concurrent_program(void **state) {
  Fixture *f = *state;
  g_autofree char *src =
      g_build_filename(WEIR_SRCDIR, "samples", "softmax.json", NULL);
  g_autofree char *r1 = g_build_filename(f->dir, "r1", NULL);
  g_autofree char *r2 = g_build_filename(f->dir, "r2", NULL);
  for (int round = 0; round < 2; round++) {
    g_autoptr(GSubprocess) p1 = spawn_helper(f, src, r1);
    g_autoptr(GSubprocess) p2 = spawn_helper(f, src, r2);
    g_autofree char *o1 = wait_helper(p1, r1);
    g_autofree char *o2 = wait_helper(p2, r2);
    if (round == 1) {
      assert_string_equal(o1, "hit");
      assert_string_equal(o2, "hit");
    }
    WeirCacheStats st = stats_of(f);
    assert_int_equal(st.entries, 1);
    g_autofree char *objects = g_build_filename(f->cache_dir, "objects", NULL);
    assert_int_equal(count_files(objects), 1);
  }
  /* at most two compiler runs built it (one per process in the first
   * round), none in the second */
  assert_true(fixture_compiles(f) >= 1 && fixture_compiles(f) <= 2);
}

/* Opening one fresh cache from several connections at once: every open
 * succeeds.  Switching a new index to WAL needs an exclusive lock, and
 * SQLite answers a race for it with "database is locked" at once instead
 * of waiting (CI saw this between two processes). */
typedef struct {
  const char *dir;
  GMutex *lock;
  GCond *go;
  gboolean *started;
  char *failure;
} OpenJob;

static gpointer open_thread(gpointer data) {
  OpenJob *job = data;
  g_mutex_lock(job->lock);
  while (!*job->started)
    g_cond_wait(job->go, job->lock);
  g_mutex_unlock(job->lock);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirCache) c = weir_cache_open(job->dir, &err);
  WeirCacheStats st;
  if (!c || !weir_cache_stats(c, &st, &err))
    job->failure = g_strdup(err ? err->message : "no error");
  return NULL;
}

static void test_concurrent_open(void **state) {
  Fixture *f = *state;
  enum { THREADS = 6, ROUNDS = 15 };
  for (int round = 0; round < ROUNDS; round++) {
    g_autofree char *name = g_strdup_printf("fresh-%d", round);
    g_autofree char *dir = g_build_filename(f->dir, name, NULL);
    GMutex lock;
    GCond go;
    g_mutex_init(&lock);
    g_cond_init(&go);
    gboolean started = FALSE;
    OpenJob jobs[THREADS];
    GThread *threads[THREADS];
    for (int i = 0; i < THREADS; i++) {
      jobs[i] = (OpenJob){dir, &lock, &go, &started, NULL};
      threads[i] = g_thread_new("open", open_thread, &jobs[i]);
    }
    g_usleep(2000);
    g_mutex_lock(&lock);
    started = TRUE;
    g_cond_broadcast(&go);
    g_mutex_unlock(&lock);
    for (int i = 0; i < THREADS; i++)
      g_thread_join(threads[i]);
    g_mutex_clear(&lock);
    g_cond_clear(&go);
    for (int i = 0; i < THREADS; i++) {
      if (jobs[i].failure)
        fail_msg("round %d, connection %d: %s", round, i, jobs[i].failure);
    }
  }
}

int main(void) {
  /* never the user's cache, whatever a test forgets */
  g_autofree char *home = g_dir_make_tmp("weir-test-home-XXXXXX", NULL);
  g_setenv("XDG_CACHE_HOME", home, TRUE);
  g_unsetenv("WEIR_CACHE_DIR");
  g_unsetenv("WEIR_CACHE_MAX_BYTES");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key),
      cmocka_unit_test_setup_teardown(test_hit_after_identical_compile, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_miss_after_flag_change, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_no_cache, setup, teardown),
      cmocka_unit_test_setup_teardown(test_generated_program, setup, teardown),
      cmocka_unit_test_setup_teardown(test_recover_deleted_object, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_recover_truncated_object, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_recover_overwritten_object, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_recover_unloadable_object, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_recover_damaged_index, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_lookup_detects_damage, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_lru_eviction, setup, teardown),
      cmocka_unit_test_setup_teardown(test_size_limit_from_environment, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_stats_and_clear, setup, teardown),
      cmocka_unit_test_setup_teardown(test_bad_keys, setup, teardown),
      cmocka_unit_test(test_default_dir),
      cmocka_unit_test_setup_teardown(test_concurrent_processes, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_concurrent_program, setup, teardown),
      cmocka_unit_test_setup_teardown(test_concurrent_open, setup, teardown),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  remove_tree(home);
  return rc;
}
