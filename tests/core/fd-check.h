/* fd-check.h — central finite differences for the gradient tests
 * (test-train.c: the backward rules; test-autodiff-maps.c: the fallback
 * through maps).  Include after <cmocka.h>. */
#ifndef WEIR_TESTS_FD_CHECK_H
#define WEIR_TESTS_FD_CHECK_H

#include <math.h>

#include "weir.h"

/* The scalar the gradients are of: sum(y * dy) after running fwd. */
typedef double (*FdLoss)(const WeirGraph *fwd, GHashTable *inputs,
                         const WeirTensor *dy);

/* Compares every element of `got`, the gradient computed for input x
 * (an f64 tensor held in `inputs` under `name`), with the central
 * difference of loss (h = 1e-6, tolerance 1e-6 + 1e-5 |difference|);
 * fails the test with `what`, the input and the element otherwise.  x is
 * restored.  Returns the number of elements checked. */
static inline guint fd_check_input(const char *what, const char *name,
                                   WeirTensor *x, const WeirTensor *got,
                                   FdLoss loss, const WeirGraph *fwd,
                                   GHashTable *inputs, const WeirTensor *dy) {
  assert_int_equal(got->count, x->count);
  for (gint64 i = 0; i < x->count; i++) {
    const double h = 1e-6, x0 = weir_tensor_get(x, i);
    weir_tensor_set(x, i, x0 + h);
    double lp = loss(fwd, inputs, dy);
    weir_tensor_set(x, i, x0 - h);
    double lm = loss(fwd, inputs, dy);
    weir_tensor_set(x, i, x0);
    double num = (lp - lm) / (2 * h), g = weir_tensor_get(got, i);
    if (fabs(num - g) > 1e-6 + 1e-5 * fabs(num))
      fail_msg("%s: d/d%s[%" G_GINT64_FORMAT "]: backward %.10g, finite "
               "differences %.10g",
               what, name, i, g, num);
  }
  return (guint)x->count;
}

#endif
