/* test-vmath.c — Weir's f32 exp, tanh and erf of generated code
 * (core/codegen/text.c, docs/codegen.md "Math functions") against libm.
 *
 * A program of three element-wise library nodes (Exp, Tanh, Erf, each
 * over its own input of 2^20 + 16 points) is generated and compiled with
 * the default flags (-O3 -march=native: the vectorized loops) and with
 * -O1; the generated code must call weir_exp_f32 / weir_tanh_f32 /
 * weir_erf_f32 and never expf / tanhf / erff.  Each input is a dense
 * uniform sweep of the interesting range (exp: [-110, 95], past both ends
 * of the float range; tanh: [-12, 12]; erf: [-6, 6]) plus special values
 * (0, -0, +-inf, NaN, the smallest subnormal, the ends of the ranges).
 * The result is compared with libm in double precision (exp, tanh, erf of
 * the float input): the relative error must stay within the bound the
 * documentation states (exp 3e-7 where the result is a normal float,
 * tanh and erf 1e-6), subnormal results of exp within 1e-44 absolute,
 * and NaN, infinities and zeros exactly as libm gives them.
 */
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "runtime-fixture.h"
#include "weir-codegen.h"
#include "weir-ops.h"
#include "weir-tensor.h"
#include "weir-validate.h"

#define POINTS ((1 << 20) + 16)

typedef struct {
  const char *op;
  double lo, hi; /* the sweep */
  double bound;  /* relative error */
  double (*ref)(double);
  const char *fn; /* Weir's helper */
  const char *libm;
} Func;

static const Func funcs[] = {
    {"Exp", -110.0, 95.0, 3e-7, exp, "weir_exp_f32(", "expf("},
    {"Tanh", -12.0, 12.0, 1e-6, tanh, "weir_tanh_f32(", "tanhf("},
    {"Erf", -6.0, 6.0, 1e-6, erf, "weir_erf_f32(", "erff("},
};

static WeirGraph *program(void) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new("vmath");
  WeirState *s = weir_graph_add_state(g, "main");
  g_autofree char *shape = g_strdup_printf("%d", POINTS);
  for (guint k = 0; k < G_N_ELEMENTS(funcs); k++) {
    const char *ins[] = {"in0", NULL}, *outs[] = {"out0", NULL};
    WeirNode *lib =
        weir_state_add_library(g, s, funcs[k].op, funcs[k].op, ins, outs);
    for (guint io = 0; io < 2; io++) {
      g_autofree char *name = g_strdup_printf("%s%u", io ? "Y" : "X", k);
      WeirContainer *c =
          weir_graph_add_array(g, name, WEIR_DTYPE_F32, shape, FALSE, &err);
      assert_non_null(c);
      g_autoptr(WeirSubset) full = weir_container_full_subset(c);
      g_autofree char *sub = weir_subset_to_string(full);
      WeirNode *a = weir_state_add_access(g, s, name);
      if (io == 0)
        assert_true(weir_state_add_memlet(g, s, a->id, NULL, lib->id, "in0",
                                          name, sub, &err));
      else
        assert_true(weir_state_add_memlet(g, s, lib->id, "out0", a->id, NULL,
                                          name, sub, &err));
    }
  }
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  return g;
}

/* The sweep of func k: POINTS - 16 uniform points, then the specials. */
static void fill(WeirTensor *x, const Func *fn) {
  float *p = x->data;
  const gint64 n = POINTS - 16;
  for (gint64 i = 0; i < n; i++)
    p[i] = (float)(fn->lo + (fn->hi - fn->lo) * (double)i / (double)(n - 1));
  const float specials[16] = {0.0f,    -0.0f,    INFINITY,  -INFINITY,
                              NAN,     1.4e-45f, -1.4e-45f, 1e-30f,
                              -1e-20f, 88.72f,   88.73f,    -87.33f,
                              -103.9f, 0.25f,    0.5f,      -0.4999f};
  memcpy(p + n, specials, sizeof specials);
}

static void check_results(const WeirTensor *x, const WeirTensor *y,
                          const Func *fn, const char *flags) {
  const float *xp = x->data, *yp = y->data;
  double worst = 0.0;
  gint64 at = -1;
  for (gint64 i = 0; i < POINTS; i++) {
    const double want = fn->ref((double)xp[i]);
    const double got = yp[i];
    if (isnan(want) || isinf(want) || want == 0.0) {
      gboolean same = isnan(want) ? isnan(got) : got == want;
      if (!same)
        fail_msg("%s (%s): %s(%g) = %g, libm says %g", fn->op, flags, fn->op,
                 (double)xp[i], got, want);
      continue;
    }
    if (fabs(want) < FLT_MIN) { /* a subnormal result */
      if (fabs(got - want) > 1e-44)
        fail_msg("%s (%s): %s(%g) = %g, libm says %g", fn->op, flags, fn->op,
                 (double)xp[i], got, want);
      continue;
    }
    if (fabs(want) > FLT_MAX) { /* overflows the float: inf */
      if (!isinf(got))
        fail_msg("%s (%s): %s(%g) = %g, expected inf", fn->op, flags, fn->op,
                 (double)xp[i], got);
      continue;
    }
    double rel = fabs(got - want) / fabs(want);
    if (rel > worst) {
      worst = rel;
      at = i;
    }
  }
  if (worst > fn->bound)
    fail_msg("%s (%s): relative error %.3g at x = %.9g (bound %.3g)", fn->op,
             flags, worst, (double)xp[at], fn->bound);
  print_message("%s (%s): max relative error %.3g at x = %.9g\n", fn->op, flags,
                worst, at >= 0 ? (double)xp[at] : 0.0);
}

static void test_vmath(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = program();
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  if (!src)
    fail_msg("%s", err->message);
  for (guint k = 0; k < G_N_ELEMENTS(funcs); k++) {
    if (!strstr(src, funcs[k].fn))
      fail_msg("the generated code does not call %s", funcs[k].fn);
    if (strstr(src, funcs[k].libm))
      fail_msg("the generated code calls %s", funcs[k].libm);
  }
  static const char *const flag_sets[] = {NULL, "-O1 -fopenmp -fPIC -shared"};
  for (guint fs = 0; fs < G_N_ELEMENTS(flag_sets); fs++) {
    Fixture *f = fixture_new();
    f->opts.flags = flag_sets[fs]; /* NULL: the defaults, -O3 -march=native */
    const char *label = flag_sets[fs] ? flag_sets[fs] : "default flags";
    g_autoptr(WeirKernel) kern = weir_kernel_compile(g, &f->opts, NULL, &err);
    if (!kern)
      fail_msg("%s: %s", label, err->message);
    g_autoptr(GHashTable) args = g_hash_table_new_full(
        g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
    gint64 shape[1] = {POINTS};
    for (guint k = 0; k < G_N_ELEMENTS(funcs); k++) {
      WeirTensor *x = weir_tensor_new(WEIR_DTYPE_F32, 1, shape);
      fill(x, &funcs[k]);
      g_hash_table_insert(args, g_strdup_printf("X%u", k), x);
      g_hash_table_insert(args, g_strdup_printf("Y%u", k),
                          weir_tensor_new(WEIR_DTYPE_F32, 1, shape));
    }
    if (!weir_kernel_run(kern, NULL, args, &err))
      fail_msg("%s: %s", label, err->message);
    for (guint k = 0; k < G_N_ELEMENTS(funcs); k++) {
      g_autofree char *xn = g_strdup_printf("X%u", k);
      g_autofree char *yn = g_strdup_printf("Y%u", k);
      check_results(g_hash_table_lookup(args, xn),
                    g_hash_table_lookup(args, yn), &funcs[k], label);
    }
    fixture_free(f);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vmath),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
