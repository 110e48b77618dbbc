/* test-kernel-act.c — the vector sigmoid and SiLU of the kernels'
 * epilogues (weir_act_apply<vl>, core/kernels/epilogue.c, docs/native.md)
 * against double-precision math.
 *
 * For every ISA this CPU runs and both widths its kernels use (AVX-512:
 * 16 and 8 lanes, AVX2: 8 and 4, generic: 4 and 2), the helper text of
 * weir_kernel_act_text is compiled with the generated code's default
 * flags (-O3 -march=native) into a small program that applies act 2
 * (sigmoid) and 3 (SiLU) to a dense uniform sweep of [-110, 110] (2^20
 * points, past both ends of exp's clamp) plus special values, and writes
 * the results.  Where the exact result (1 / (1 + exp(-x)), x / (1 +
 * exp(-x)) in double) is at least 1e-30 in magnitude, the relative error
 * must stay within 3e-7; below that (x < -65) the result must be below
 * 1e-30 in magnitude too (sigmoid's floor is 1.6e-38, SiLU's x times
 * it).  Specials: NaN gives NaN,
 * sigmoid(inf) = 1, sigmoid(-inf) in [0, 1e-30], SiLU(inf) = inf,
 * SiLU(-inf) = -inf (as the division gave before), SiLU(+-0) = 0.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <glib/gstdio.h>

#include "weir-expr.h"
#include "weir-graph.h"
#include "weir-hw.h"
#include "weir-kernels.h"
#include "weir-tensor.h"

#include "kernel-check.h"

#define SWEEP (1 << 20)
#define NSPECIAL 16
#define POINTS (SWEEP + NSPECIAL)

static const float specials[NSPECIAL] = {
    0.0f,   -0.0f, INFINITY, -INFINITY, NAN,   1e-30f, -1e-30f, 86.9f,
    -86.9f, 87.5f, -87.5f,   -88.7f,    88.8f, 1e-3f,  -1e-3f,  16.635532f};

static const char driver[] =
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "int main(int argc, char **argv) {\n"
    "  if (argc != 3) return 2;\n"
    "  const long n = %d, m = %d;\n"
    "  float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) "
    "* (size_t)n);\n"
    "  FILE *f = fopen(argv[1], \"rb\");\n"
    "  if (!f || fread(x, sizeof(float), (size_t)n, f) != (size_t)n) return "
    "3;\n"
    "  fclose(f);\n"
    "  FILE *o = fopen(argv[2], \"wb\");\n"
    "  if (!o) return 4;\n"
    "  for (int act = 2; act <= 3; act++) {\n"
    "    for (long i = 0; i < n; i += m) {\n"
    "      weir_act_v%u v = weir_act_load%u(x + i);\n"
    "      v = weir_act_apply%u(v, act, 0.0f, 0.0f);\n"
    "      memcpy(y + i, &v, sizeof v);\n"
    "    }\n"
    "    if (fwrite(y, sizeof(float), (size_t)n, o) != (size_t)n) return 5;\n"
    "  }\n"
    "  fclose(o);\n"
    "  free(x);\n"
    "  free(y);\n"
    "  return 0;\n"
    "}\n";

static char *tmpdir;

static int setup(void **state) {
  (void)state;
  tmpdir = g_dir_make_tmp("weir-act-XXXXXX", NULL);
  return tmpdir ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  g_autoptr(GDir) d = g_dir_open(tmpdir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    g_autofree char *p = g_build_filename(tmpdir, name, NULL);
    g_remove(p);
  }
  g_rmdir(tmpdir);
  g_free(tmpdir);
  return 0;
}

static void run(const char *const *argv) {
  g_autoptr(GError) err = NULL;
  g_autofree char *out = NULL, *errs = NULL;
  int status = 0;
  if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                    &out, &errs, &status, &err))
    fail_msg("%s: %s", argv[0], err->message);
  if (!g_spawn_check_wait_status(status, NULL))
    fail_msg("%s failed:\n%s%s", argv[0], out, errs);
}

/* Checks y = act(x) (act 2 sigmoid, 3 SiLU) and returns the largest
 * relative error where the exact result is at least 1e-30. */
static double check(const float *x, const float *y, int act, const char *what) {
  double worst = 0.0;
  for (gint64 i = 0; i < POINTS; i++) {
    const double xd = x[i], s = 1.0 / (1.0 + exp(-xd));
    const double want = act == 2 ? s : xd * s;
    const double got = y[i];
    if (isnan(xd)) {
      if (!isnan(got))
        fail_msg("%s act %d: x NaN gave %g", what, act, got);
    } else if (isinf(xd)) {
      const double exp_ = act == 3 ? xd : xd > 0 ? 1.0 : 0.0;
      if (act == 2 && xd < 0 ? !(got >= 0.0 && got <= 1e-30) : got != exp_)
        fail_msg("%s act %d: x %g gave %g", what, act, xd, got);
    } else if (fabs(want) >= 1e-30) {
      const double rel = fabs(got - want) / fabs(want);
      if (rel > 3e-7)
        fail_msg("%s act %d: x %.9g gave %.9g, want %.9g (relative %.3g)", what,
                 act, xd, got, want, rel);
      worst = MAX(worst, rel);
    } else if (!(fabs(got) <= 1e-30) || (want == 0.0 && got != 0.0)) {
      fail_msg("%s act %d: x %.9g gave %.9g, want %.9g", what, act, xd, got,
               want);
    }
  }
  return worst;
}

static void test_act(void **state) {
  (void)state;
  WeirHwIsa list[4];
  const guint n = isas(list);
  g_autofree float *x = g_new(float, POINTS);
  for (gint64 i = 0; i < SWEEP; i++)
    x[i] = (float)(-110.0 + 220.0 * (double)i / (double)(SWEEP - 1));
  memcpy(x + SWEEP, specials, sizeof specials);
  g_autofree char *xin = g_build_filename(tmpdir, "x.bin", NULL);
  assert_true(
      g_file_set_contents(xin, (const char *)x, sizeof(float) * POINTS, NULL));
  for (guint k = 0; k < n; k++) {
    const guint wide = list[k] == WEIR_HW_ISA_AVX512 ? 16
                       : list[k] == WEIR_HW_ISA_AVX2 ? 8
                                                     : 4;
    for (guint vl = wide; vl >= wide / 2; vl /= 2) {
      g_autofree char *text = weir_kernel_act_text(list[k], vl);
      g_autofree char *main_ = g_strdup_printf(driver, POINTS, vl, vl, vl, vl);
      g_autofree char *src = g_strconcat("#include <stdint.h>\n"
                                         "#include <string.h>\n",
                                         text, main_, NULL);
      g_autofree char *base = g_strdup_printf("act-%d-%u", (int)list[k], vl);
      g_autofree char *c = g_strdup_printf("%s/%s.c", tmpdir, base);
      g_autofree char *exe = g_strdup_printf("%s/%s", tmpdir, base);
      g_autofree char *yout = g_strdup_printf("%s/%s.out", tmpdir, base);
      assert_true(g_file_set_contents(c, src, -1, NULL));
      const char *cc = g_getenv("CC") ? g_getenv("CC") : "cc";
      const char *cargv[] = {
          cc,  "-O3", "-march=native", "-Wall", "-Werror", "-o",
          exe, c,     "-lm",           NULL};
      run(cargv);
      const char *rargv[] = {exe, xin, yout, NULL};
      run(rargv);
      g_autofree char *data = NULL;
      gsize len = 0;
      assert_true(g_file_get_contents(yout, &data, &len, NULL));
      assert_int_equal(len, 2 * sizeof(float) * POINTS);
      const float *y = (const float *)data;
      g_autofree char *what =
          g_strdup_printf("isa %d, %u lanes", (int)list[k], vl);
      const double es = check(x, y, 2, what);
      const double ei = check(x, y + POINTS, 3, what);
      print_message("%s: largest relative error sigmoid %.3g, SiLU %.3g\n",
                    what, es, ei);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_act),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
