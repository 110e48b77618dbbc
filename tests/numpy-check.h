/* numpy-check.h — runs tests/onnx/check-onnx-numpy.py, which evaluates an
 * ONNX model with NumPy alone (no Weir code) on one input and compares the
 * result with an expected output.  Shared by the tests that write models
 * back as ONNX (test-onnx-save, test-train-digits, test-train-regression).
 * Include after <cmocka.h>. */
#ifndef WEIR_TESTS_NUMPY_CHECK_H
#define WEIR_TESTS_NUMPY_CHECK_H

#include <sys/wait.h>

#include <glib.h>

/* The script's exit status: 0 when the outputs agree, 1 when they do not.
 * rtol and atol are the tolerances as text, NULL for the script's own. */
static inline int onnx_numpy_check(const char *model, const char *input,
                                   const char *expected, const char *rtol,
                                   const char *atol) {
  g_autofree char *script = g_build_filename(WEIR_SRCDIR, "tests", "onnx",
                                             "check-onnx-numpy.py", NULL);
  const char *argv[10] = {"/usr/bin/python3", script, model, input, expected};
  guint n = 5;
  if (rtol) {
    argv[n++] = "--rtol";
    argv[n++] = rtol;
  }
  if (atol) {
    argv[n++] = "--atol";
    argv[n++] = atol;
  }
  g_autoptr(GError) error = NULL;
  g_autofree char *out = NULL, *err = NULL;
  int status = 0;
  if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                    &out, &err, &status, &error))
    fail_msg("%s", error->message);
  print_message("  %s%s", out, err);
  return g_spawn_check_wait_status(status, NULL)
             ? 0
             : (WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

#endif
