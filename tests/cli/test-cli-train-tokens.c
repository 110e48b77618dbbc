/* test-cli-train-tokens.c — `weir train --tokens`: next-token training of
 * the small model of tests/core/data/make-next-token.py on its token file,
 * and checkpoint / resume.
 *
 *  - the loss falls: the mean loss of the first 20 steps is near log(16)
 *    (the untrained model), that of the last 20 of 160 steps far below;
 *  - a run killed with SIGKILL after its first checkpoint, resumed from
 *    that checkpoint, ends with the same bytes as an uninterrupted run of
 *    as many steps: the written model and the last checkpoint (parameters,
 *    Adam's moments, step counters, data position).  One thread, so that
 *    the compiled code's sums run in one order;
 *  - errors: a checkpoint of another model, a token outside the
 *    vocabulary.
 */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>

#include "run-weir.h"
#include "tmpdir-fixture.h"

#define MODEL WEIR_SRCDIR "/tests/core/data/next-token.onnx"
#define TOKENS WEIR_SRCDIR "/tests/core/data/next-token-data.npy"

static int setup(void **state) {
  (void)state;
  return tmpdir_setup("weir-train-tokens");
}

static int teardown(void **state) {
  (void)state;
  return tmpdir_teardown();
}

static char *tmp(const char *name) {
  return g_build_filename(tmp_dir, name, NULL);
}

/* The losses printed on "step N/M  loss X" lines, in order. */
static GArray *losses(const char *out) {
  GArray *a = g_array_new(FALSE, FALSE, sizeof(double));
  for (const char *p = out; (p = strstr(p, "  loss ")); p++) {
    double v = g_ascii_strtod(p + 7, NULL);
    g_array_append_val(a, v);
  }
  return a;
}

static void test_loss_falls(void **state) {
  (void)state;
  g_autofree char *out = tmp("falls.onnx");
  Run r =
      run_weir("train", MODEL, "--tokens", TOKENS, "--context", "16", "--batch",
               "8", "--steps", "160", "--report-every", "20", "--optimizer",
               "adam", "--lr", "0.01", "--threads", "1", "-o", out, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  assert_contains(r.out, "perplexity");
  assert_contains(r.out, "160 steps of next-token training (vocabulary 16)");
  g_autoptr(GArray) l = losses(r.out);
  assert_int_equal(l->len, 8);
  double first = g_array_index(l, double, 0);
  double last = g_array_index(l, double, l->len - 1);
  /* log(16) = 2.77; the rule holds 9 times in 10 */
  if (!(first > 1.2 && last < 0.8))
    fail_msg("loss of the first 20 steps %.4f, of the last 20 %.4f", first,
             last);
  run_clear(&r);
}

static char *read_all(const char *path, gsize *len) {
  char *data = NULL;
  g_autoptr(GError) error = NULL;
  if (!g_file_get_contents(path, &data, len, &error))
    fail_msg("%s", error->message);
  return data;
}

/* The "steps" of a checkpoint's header. */
static gint64 checkpoint_steps(const char *path) {
  gsize len = 0;
  g_autofree char *data = read_all(path, &len);
  assert_true(len > 16 && memcmp(data, "WEIRCKPT", 8) == 0);
  const char *s = g_strstr_len(data + 16, (gssize)(len - 16), "\"steps\":");
  assert_non_null(s);
  return g_ascii_strtoll(s + 8, NULL, 10);
}

static void assert_same_file(const char *a, const char *b) {
  gsize la = 0, lb = 0;
  g_autofree char *da = read_all(a, &la);
  g_autofree char *db = read_all(b, &lb);
  if (la != lb || memcmp(da, db, la) != 0)
    fail_msg("%s and %s differ", a, b);
}

static void test_kill_and_resume(void **state) {
  (void)state;
  g_autofree char *ck_killed = tmp("killed.ckpt");
  g_autofree char *ck_straight = tmp("straight.ckpt");
  g_autofree char *out_killed = tmp("killed.onnx");
  g_autofree char *out_straight = tmp("straight.onnx");
  const char *common[] = {"--tokens", TOKENS, "--context",   "8",
                          "--batch",  "4",    "--optimizer", "adam",
                          "--lr",     "0.01", "--threads",   "1",
                          "--every",  "10",   "--quiet",     NULL};

  /* a long run, killed as soon as its first checkpoint is there */
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  g_ptr_array_add(argv, (gpointer)WEIR_CLI);
  g_ptr_array_add(argv, (gpointer) "train");
  g_ptr_array_add(argv, (gpointer)MODEL);
  for (guint i = 0; common[i]; i++)
    g_ptr_array_add(argv, (gpointer)common[i]);
  const char *rest[] = {"--steps",  "1000000", "--checkpoint", ck_killed, "-o",
                        out_killed, NULL};
  for (guint i = 0; rest[i]; i++)
    g_ptr_array_add(argv, (gpointer)rest[i]);
  g_ptr_array_add(argv, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(GSubprocess) p = g_subprocess_newv(
      (const char *const *)argv->pdata,
      G_SUBPROCESS_FLAGS_STDOUT_SILENCE | G_SUBPROCESS_FLAGS_STDERR_SILENCE,
      &error);
  assert_non_null(p);
  /* the checkpoint appears whole (renamed into place) */
  while (!g_file_test(ck_killed, G_FILE_TEST_EXISTS)) {
    if (!g_subprocess_get_identifier(p)) /* reaped: it ended */
      fail_msg("the run ended before its first checkpoint");
    g_usleep(2000);
  }
  g_subprocess_force_exit(p); /* SIGKILL */
  assert_true(g_subprocess_wait(p, NULL, &error));
  assert_true(g_subprocess_get_if_signaled(p));
  assert_int_equal(g_subprocess_get_term_sig(p), SIGKILL);
  gint64 done = checkpoint_steps(ck_killed);
  assert_true(done >= 10 && done % 10 == 0);
  gint64 total = done + 30;
  g_autofree char *total_s = g_strdup_printf("%" G_GINT64_FORMAT, total);

  /* resumed to `total` steps */
  Run r = run_weir("train", MODEL, common[0], common[1], common[2], common[3],
                   common[4], common[5], common[6], common[7], common[8],
                   common[9], common[10], common[11], common[12], common[13],
                   "--steps", total_s, "--checkpoint", ck_killed, "--resume",
                   ck_killed, "-o", out_killed, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  run_clear(&r);
  assert_int_equal(checkpoint_steps(ck_killed), total);

  /* uninterrupted */
  r = run_weir("train", MODEL, common[0], common[1], common[2], common[3],
               common[4], common[5], common[6], common[7], common[8], common[9],
               common[10], common[11], common[12], common[13], "--steps",
               total_s, "--checkpoint", ck_straight, "-o", out_straight, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  run_clear(&r);
  assert_same_file(out_killed, out_straight);
  assert_same_file(ck_killed, ck_straight);

  /* and not what the model gives without the resume */
  g_autofree char *out_fresh = tmp("fresh.onnx");
  g_autofree char *steps30 = g_strdup("30");
  r = run_weir("train", MODEL, common[0], common[1], common[2], common[3],
               common[4], common[5], common[6], common[7], common[8], common[9],
               common[10], common[11], "--steps", steps30, "-o", out_fresh,
               NULL);
  assert_int_equal(r.status, 0);
  run_clear(&r);
  gsize la = 0, lb = 0;
  g_autofree char *da = read_all(out_fresh, &la);
  g_autofree char *db = read_all(out_straight, &lb);
  assert_false(la == lb && memcmp(da, db, la) == 0);
}

/* The schedule reads the program's step counter, which the checkpoint
 * keeps: 20 steps, then resumed to 40, with warm-up + cosine, clipping and
 * 2 micro-batches per step, give the bytes of 40 steps straight (and not
 * those of the same run without the schedule). */
static void test_resume_schedule(void **state) {
  (void)state;
  g_autofree char *ck = tmp("sched.ckpt");
  g_autofree char *half = tmp("sched-half.onnx");
  g_autofree char *resumed = tmp("sched-resumed.onnx");
  g_autofree char *straight = tmp("sched-straight.onnx");
  g_autofree char *constant = tmp("sched-constant.onnx");
#define SCHED_COMMON                                                           \
  "--tokens", TOKENS, "--context", "16", "--batch", "4", "--optimizer",        \
      "adam", "--lr", "0.01", "--threads", "1", "--clip-grad-norm", "1",       \
      "--accumulate", "2", "--quiet"
  Run r = run_weir("train", MODEL, SCHED_COMMON, "--lr-schedule", "cosine",
                   "--warmup-steps", "5", "--total-steps", "40", "--steps",
                   "20", "--checkpoint", ck, "--every", "20", "-o", half, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  run_clear(&r);
  r = run_weir("train", MODEL, SCHED_COMMON, "--lr-schedule", "cosine",
               "--warmup-steps", "5", "--total-steps", "40", "--steps", "40",
               "--resume", ck, "-o", resumed, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  run_clear(&r);
  r = run_weir("train", MODEL, SCHED_COMMON, "--lr-schedule", "cosine",
               "--warmup-steps", "5", "--total-steps", "40", "--steps", "40",
               "-o", straight, NULL);
  if (r.status != 0)
    fail_msg("%s", r.err);
  run_clear(&r);
  assert_same_file(resumed, straight);
  r = run_weir("train", MODEL, SCHED_COMMON, "--steps", "40", "-o", constant,
               NULL);
  assert_int_equal(r.status, 0);
  run_clear(&r);
  gsize la = 0, lb = 0;
  g_autofree char *da = read_all(constant, &la);
  g_autofree char *db = read_all(straight, &lb);
  assert_false(la == lb && memcmp(da, db, la) == 0);
  /* a bad schedule is refused */
  r = run_weir("train", MODEL, SCHED_COMMON, "--lr-schedule", "cosine",
               "--steps", "4", "-o", constant, NULL);
  assert_int_not_equal(r.status, 0);
  assert_non_null(strstr(r.err, "total steps"));
  run_clear(&r);
#undef SCHED_COMMON
}

static void test_errors(void **state) {
  (void)state;
  g_autofree char *bad = tmp("bad.npy");
  /* a token outside the vocabulary: 16 */
  static const char header[] = "\x93NUMPY\x01\x00v\x00{'descr': '<i8', "
                               "'fortran_order': False, 'shape': (40,), }";
  GString *f = g_string_new_len(header, sizeof header - 1);
  while ((f->len + 1) % 64)
    g_string_append_c(f, ' ');
  g_string_append_c(f, '\n');
  for (gint64 i = 0; i < 40; i++) {
    gint64 v = i == 37 ? 16 : i % 16;
    g_string_append_len(f, (const char *)&v, 8);
  }
  assert_true(g_file_set_contents(bad, f->str, (gssize)f->len, NULL));
  g_string_free(f, TRUE);
  g_autofree char *out = tmp("err.onnx");
  Run r = run_weir("train", MODEL, "--tokens", bad, "--context", "4", "--batch",
                   "2", "--steps", "1", "-o", out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "token 16 at index 37 is outside the vocabulary");
  run_clear(&r);
  /* a checkpoint that is not one */
  g_autofree char *ck = tmp("not.ckpt");
  assert_true(g_file_set_contents(ck, "hello, world", -1, NULL));
  r = run_weir("train", MODEL, "--tokens", TOKENS, "--context", "4", "--batch",
               "2", "--steps", "1", "--resume", ck, "-o", out, NULL);
  assert_int_equal(r.status, 1);
  assert_contains(r.err, "not a Weir checkpoint");
  run_clear(&r);
  r = run_weir("train", MODEL, "--tokens", TOKENS, "--steps", "1", NULL);
  assert_int_equal(r.status, 2);
  run_clear(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_loss_falls),
      cmocka_unit_test(test_kill_and_resume),
      cmocka_unit_test(test_resume_schedule),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
