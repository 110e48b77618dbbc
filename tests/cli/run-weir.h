/* run-weir.h — running the `weir` command line from a cmocka test: the
 * exit status and what it printed.  Header-only (static functions), for
 * the CLI tests built with -DWEIR_CLI="path of weir". */
#ifndef WEIR_TEST_RUN_WEIR_H
#define WEIR_TEST_RUN_WEIR_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>
#include <glib.h>

typedef struct {
  int status; /* exit status, or -1 when killed by a signal */
  char *out;  /* stdout (owned) */
  char *err;  /* stderr (owned) */
} Run;

static inline void run_clear(Run *r) {
  g_free(r->out);
  g_free(r->err);
}

/* Runs weir with a NULL-terminated argument list (environment inherited). */
static inline Run run_weir(const char *first, ...) {
  GPtrArray *argv = g_ptr_array_new();
  g_ptr_array_add(argv, (gpointer)WEIR_CLI);
  va_list ap;
  va_start(ap, first);
  for (const char *a = first; a; a = va_arg(ap, const char *))
    g_ptr_array_add(argv, (gpointer)a);
  va_end(ap);
  g_ptr_array_add(argv, NULL);
  Run r = {0};
  int wait_status = 0;
  g_autoptr(GError) error = NULL;
  gboolean ok = g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT,
                             NULL, NULL, &r.out, &r.err, &wait_status, &error);
  g_ptr_array_unref(argv);
  assert_true(ok);
  r.status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  return r;
}

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    if (!strstr((hay), (needle)))                                              \
      fail_msg("expected to find '%s' in:\n%s", (needle), (hay));              \
  } while (0)

#endif
