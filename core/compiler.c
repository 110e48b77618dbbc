/* compiler.c — the C compiler driver.
 *
 * Conventions of this file:
 *  - The compiler always runs from an argument vector built here
 *    (GSubprocess), never through a shell.  The compiler command and the
 *    flags are split into words with g_shell_parse_argv, which honours
 *    quotes and expands nothing.
 *  - Every compile gets its own private temporary directory (mode 0700) for
 *    the source; the output goes where the caller says.
 *  - Libraries a generated unit names in "weir-link:" comment lines
 *    (weir_codegen_libraries) are linked after the source.
 *  - Messages quote the command line so it can be pasted into a terminal.
 */
#include <errno.h>
#include <string.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "weir-mpi.h"
#include "weir-native.h"
#include "weir-runtime.h"
#include "weir-scratch.h"

/* Limits of the compiler output kept in an error message. */
#define DIAG_MAX_LINES 60
#define DIAG_MAX_BYTES 8192

/* ---------------------------------------------------------------- words */

char *weir_compiler_command(const WeirCompileOptions *opts) {
  if (opts && opts->compiler && *opts->compiler)
    return g_strdup(opts->compiler);
  const char *cc = g_getenv("CC");
  if (cc && *cc)
    return g_strdup(cc);
  return g_strdup("cc");
}

/* Splits text into words; "" or blanks give an empty vector. */
static char **split_words(const char *what, const char *text, GError **error) {
  gboolean blank = TRUE;
  for (const char *p = text; p && *p && blank; p++)
    blank = g_ascii_isspace(*p);
  if (blank)
    return g_new0(char *, 1);
  char **words = NULL;
  g_autoptr(GError) local = NULL;
  if (!g_shell_parse_argv(text, NULL, &words, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s '%s': %s", what,
                text, local->message);
    return NULL;
  }
  return words;
}

static char **compiler_words(const WeirCompileOptions *opts, GError **error) {
  g_autofree char *cmd = weir_compiler_command(opts);
  char **words = split_words("compiler", cmd, error);
  if (words && !words[0]) {
    g_strfreev(words);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "the compiler command is empty");
    return NULL;
  }
  return words;
}

static char **flag_words(const WeirCompileOptions *opts, GError **error) {
  const char *flags =
      opts && opts->flags ? opts->flags : WEIR_COMPILE_DEFAULT_FLAGS;
  return split_words("compiler flags", flags, error);
}

/* A command line as text, each word quoted when the shell would need it. */
static char *command_line(const char *const *argv) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; argv[i]; i++) {
    const char *w = argv[i];
    gboolean plain = *w != '\0';
    for (const char *p = w; *p && plain; p++)
      plain = g_ascii_isalnum(*p) || strchr("_./=,+:-@%", *p);
    if (i)
      g_string_append_c(s, ' ');
    if (plain)
      g_string_append(s, w);
    else {
      g_autofree char *q = g_shell_quote(w);
      g_string_append(s, q);
    }
  }
  return g_string_free(s, FALSE);
}

char *weir_compiler_flags(const WeirCompileOptions *opts, GError **error) {
  g_auto(GStrv) words = flag_words(opts, error);
  if (!words)
    return NULL;
  return command_line((const char *const *)words);
}

/* Keeps the head of the compiler's output: its first errors are the ones
 * that explain the rest. */
static char *truncate_output(const char *text) {
  GString *s = g_string_new(NULL);
  const char *p = text;
  guint lines = 0;
  while (*p && lines < DIAG_MAX_LINES) {
    const char *nl = strchr(p, '\n');
    gsize len = nl ? (gsize)(nl - p) + 1 : strlen(p);
    if (s->len + len > DIAG_MAX_BYTES)
      break;
    g_string_append_len(s, p, (gssize)len);
    p += len;
    lines++;
  }
  if (*p) {
    guint rest = 0;
    for (const char *q = p; *q; q++)
      rest += *q == '\n';
    if (p[strlen(p) - 1] != '\n')
      rest++;
    if (s->len && s->str[s->len - 1] != '\n')
      g_string_append_c(s, '\n');
    g_string_append_printf(s, "[... %u more line%s of compiler output]", rest,
                           rest == 1 ? "" : "s");
  }
  while (s->len && s->str[s->len - 1] == '\n')
    g_string_truncate(s, s->len - 1);
  return g_string_free(s, FALSE);
}

/* Runs argv with stdout and stderr merged into *output (valid UTF-8).
 * *status receives a description when the process did not exit with 0
 * ("exit status 1", "killed by signal 9"), else NULL.  FALSE only when the
 * process could not be run.  tmpdir (may be NULL) becomes the process's
 * TMPDIR, so that the compiler's own temporaries go with Weir's scratch
 * directory when a crash leaves it behind. */
static gboolean run_captured(const char *const *argv, const char *tmpdir,
                             char **output, char **status, GError **error) {
  g_autoptr(GError) local = NULL;
  g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new(
      G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_MERGE);
  if (tmpdir)
    g_subprocess_launcher_setenv(launcher, "TMPDIR", tmpdir, TRUE);
  g_autoptr(GSubprocess) proc =
      g_subprocess_launcher_spawnv(launcher, argv, &local);
  g_autoptr(GBytes) out = NULL;
  if (!proc ||
      !g_subprocess_communicate(proc, NULL, NULL, &out, NULL, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "cannot run '%s': %s",
                argv[0], local->message);
    return FALSE;
  }
  gsize len = 0;
  const char *data = out ? g_bytes_get_data(out, &len) : NULL;
  *output = g_utf8_make_valid(data ? data : "", (gssize)len);
  *status = NULL;
  if (g_subprocess_get_if_signaled(proc))
    *status =
        g_strdup_printf("killed by signal %d", g_subprocess_get_term_sig(proc));
  else if (g_subprocess_get_exit_status(proc) != 0)
    *status =
        g_strdup_printf("exit status %d", g_subprocess_get_exit_status(proc));
  return TRUE;
}

/* ------------------------------------------------------------- identity */

static GMutex identity_lock;
static GHashTable *identities; /* command -> first line of --version */

char *weir_compiler_identity(const WeirCompileOptions *opts, GError **error) {
  g_autofree char *cmd = weir_compiler_command(opts);
  g_mutex_lock(&identity_lock);
  const char *known = identities ? g_hash_table_lookup(identities, cmd) : NULL;
  char *result = g_strdup(known);
  g_mutex_unlock(&identity_lock);
  if (result)
    return result;

  g_auto(GStrv) words = compiler_words(opts, error);
  if (!words)
    return NULL;
  g_autoptr(GStrvBuilder) b = g_strv_builder_new();
  g_strv_builder_addv(b, (const char **)words);
  g_strv_builder_add(b, "--version");
  g_auto(GStrv) argv = g_strv_builder_end(b);
  g_autofree char *output = NULL, *status = NULL;
  if (!run_captured((const char *const *)argv, NULL, &output, &status, error)) {
    g_prefix_error(error, "C compiler: ");
    return NULL;
  }
  g_strstrip(output);
  if (status || !*output) {
    g_autofree char *line = command_line((const char *const *)argv);
    g_autofree char *diag = truncate_output(output);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "C compiler: '%s' failed (%s)%s%s", line,
                status ? status : "no output", *diag ? ":\n" : "", diag);
    return NULL;
  }
  char *nl = strchr(output, '\n');
  if (nl)
    *nl = '\0';
  g_strstrip(output);

  g_mutex_lock(&identity_lock);
  if (!identities)
    identities = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_hash_table_replace(identities, g_strdup(cmd), g_strdup(output));
  g_mutex_unlock(&identity_lock);
  return g_steal_pointer(&output);
}

/* -------------------------------------------------------------- compile */

static gboolean valid_name(const char *name) {
  if (!*name || g_ascii_isdigit(*name))
    return FALSE;
  for (const char *p = name; *p; p++)
    if (!g_ascii_isalnum(*p) && *p != '_')
      return FALSE;
  return TRUE;
}

/* ------------------------------------------------------------ libraries */

/* Where distributions put the OpenMP build of OpenBLAS: Debian's
 * libopenblas0-openmp (same soname as the default pthreads build, in its
 * own directory), Fedora's openblas-openmp (its own soname). */
static const char *const openblas_openmp_paths[] = {
#if defined(__x86_64__)
    "/usr/lib/x86_64-linux-gnu/openblas-openmp/libopenblas.so.0",
#elif defined(__aarch64__)
    "/usr/lib/aarch64-linux-gnu/openblas-openmp/libopenblas.so.0",
#endif
    "/usr/lib64/libopenblaso.so.0",
};

char *weir_compiler_openblas_openmp(void) {
  const char *env = g_getenv("WEIR_OPENBLAS_OPENMP");
  if (env)
    return *env ? g_strdup(env) : NULL;
  for (guint i = 0; i < G_N_ELEMENTS(openblas_openmp_paths); i++)
    if (g_file_test(openblas_openmp_paths[i], G_FILE_TEST_EXISTS))
      return g_strdup(openblas_openmp_paths[i]);
  return NULL;
}

static gboolean flags_openmp(char **flags) {
  for (guint i = 0; flags[i]; i++)
    if (g_str_has_prefix(flags[i], "-fopenmp"))
      return TRUE;
  return FALSE;
}

/* The link words of library lib: "-l<lib>", except OpenBLAS in a unit
 * with OpenMP, which links the OpenMP build when there is one (by path,
 * with its directory as run path) so that its GEMMs run on the unit's
 * OpenMP threads instead of a second thread pool (docs/native.md). */
static void add_library(GStrvBuilder *b, const char *lib, gboolean openmp) {
  g_autofree char *omp = NULL;
  if (strcmp(lib, "mpi") == 0 && *weir_mpi_libs()) {
    /* MPI's link words as found when libweir was built (core/mpi.c) */
    g_auto(GStrv) words = NULL;
    if (g_shell_parse_argv(weir_mpi_libs(), NULL, &words, NULL)) {
      g_strv_builder_addv(b, (const char **)words);
      return;
    }
  }
  if (openmp && strcmp(lib, "openblas") == 0 &&
      (omp = weir_compiler_openblas_openmp())) {
    g_autofree char *dir = g_path_get_dirname(omp);
    g_autofree char *rpath = g_strconcat("-Wl,-rpath,", dir, NULL);
    g_strv_builder_add_many(b, omp, rpath, NULL);
    return;
  }
  g_autofree char *l = g_strconcat("-l", lib, NULL);
  g_strv_builder_add(b, l);
}

/* flags, plus the compile flags of the libraries a unit asks for: MPI's
 * include directories for a unit that links "mpi" (the collectives,
 * core/native-mpi.c).  (transfer full) */
static char **flags_for_libraries(char **flags, char **libs) {
  g_autoptr(GStrvBuilder) b = g_strv_builder_new();
  g_strv_builder_addv(b, (const char **)flags);
  if (libs && g_strv_contains((const char *const *)libs, "mpi") &&
      *weir_mpi_cflags()) {
    g_auto(GStrv) words = NULL;
    if (g_shell_parse_argv(weir_mpi_cflags(), NULL, &words, NULL))
      g_strv_builder_addv(b, (const char **)words);
  }
  return g_strv_builder_end(b);
}

/* Runs argv, a compiler command writing output, in the private directory
 * of its input src. */
static gboolean run_checked(char **argv, const char *name, const char *src,
                            const char *output, double *seconds,
                            GError **error) {
  g_autofree char *text = NULL, *status = NULL;
  gint64 t0 = g_get_monotonic_time();
  g_autofree char *tmpdir = g_path_get_dirname(src);
  if (!run_captured((const char *const *)argv, tmpdir, &text, &status, error)) {
    g_prefix_error(error, "compile '%s': ", name);
    return FALSE;
  }
  if (seconds)
    *seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
  g_autofree char *line = command_line((const char *const *)argv);
  if (status) {
    g_autofree char *diag = truncate_output(text);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "compiling '%s' failed (%s): %s%s%s", name, status, line,
                *diag ? "\n" : "", diag);
    return FALSE;
  }
  if (!g_file_test(output, G_FILE_TEST_IS_REGULAR)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "compiling '%s': the compiler succeeded but wrote no '%s': %s",
                name, output, line);
    return FALSE;
  }
  return TRUE;
}

/* Runs the compiler on inputs (sources or objects, in a private directory)
 * to build the shared object output. */
static gboolean run_compiler(char **cc, char **flags, char **libs,
                             const char *name, const char *const *inputs,
                             const char *output, double *seconds,
                             GError **error) {
  g_autoptr(GStrvBuilder) b = g_strv_builder_new();
  g_strv_builder_addv(b, (const char **)cc);
  g_strv_builder_addv(b, (const char **)flags);
  g_strv_builder_add_many(b, "-o", output, NULL);
  g_strv_builder_addv(b, (const char **)inputs);
  gboolean openmp = flags_openmp(flags);
  for (guint i = 0; libs && libs[i]; i++)
    add_library(b, libs[i], openmp);
  g_strv_builder_add(b, "-lm");
  g_auto(GStrv) argv = g_strv_builder_end(b);
  return run_checked(argv, name, inputs[0], output, seconds, error);
}

/* inputs, then the objects (NULL-terminated, may be NULL) (transfer
 * container) */
static const char **with_objects(const char *const *inputs,
                                 const char *const *objects) {
  GPtrArray *a = g_ptr_array_new();
  for (guint i = 0; inputs[i]; i++)
    g_ptr_array_add(a, (gpointer)inputs[i]);
  for (guint i = 0; objects && objects[i]; i++)
    g_ptr_array_add(a, (gpointer)objects[i]);
  g_ptr_array_add(a, NULL);
  return (const char **)g_ptr_array_free(a, FALSE);
}

/* weir_compile, linking the object files objects (NULL-terminated, may be
 * NULL) too; or with object set, `-c`: source to the object file output
 * (no libraries). */
static gboolean compile_source(const char *source, const char *name,
                               const char *output,
                               const WeirCompileOptions *opts,
                               const char *const *objects, gboolean object,
                               double *seconds, GError **error) {
  g_return_val_if_fail(source != NULL && output != NULL, FALSE);
  if (seconds)
    *seconds = 0;
  if (!name)
    name = "kernel";
  if (!valid_name(name)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "compile: '%s' is not a C identifier", name);
    return FALSE;
  }
  g_auto(GStrv) cc = compiler_words(opts, error);
  if (!cc)
    return FALSE;
  g_auto(GStrv) flags = flag_words(opts, error);
  if (!flags)
    return FALSE;

  /* libraries the generated unit asks for (weir-native.h) */
  g_auto(GStrv) libs = weir_codegen_libraries(source);
  {
    char **with = flags_for_libraries(flags, libs);
    g_strfreev(flags);
    flags = with;
  }
  g_autoptr(GError) local = NULL;
  g_autofree char *dir = weir_scratch_dir_new("weir-cc", &local);
  if (!dir) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "compile '%s': cannot create a temporary directory: %s", name,
                local->message);
    return FALSE;
  }
  g_autofree char *file = g_strconcat(name, ".c", NULL);
  g_autofree char *src = g_build_filename(dir, file, NULL);
  gboolean ok = g_file_set_contents(src, source, -1, &local);
  if (!ok)
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "compile '%s': %s", name,
                local->message);
  else if (object) {
    g_autoptr(GStrvBuilder) b = g_strv_builder_new();
    g_strv_builder_addv(b, (const char **)cc);
    g_strv_builder_addv(b, (const char **)flags);
    g_strv_builder_add_many(b, "-c", "-o", output, src, NULL);
    g_auto(GStrv) argv = g_strv_builder_end(b);
    ok = run_checked(argv, name, src, output, seconds, error);
  } else {
    g_autofree const char **inputs =
        with_objects((const char *[]){src, NULL}, objects);
    ok = run_compiler(cc, flags, libs, name, inputs, output, seconds, error);
  }
  weir_scratch_remove(dir);
  return ok;
}

gboolean weir_compile(const char *source, const char *name, const char *output,
                      const WeirCompileOptions *opts, double *seconds,
                      GError **error) {
  return compile_source(source, name, output, opts, NULL, FALSE, seconds,
                        error);
}

/* ------------------------------------------------------- compile units */

typedef struct {
  char **cc, **flags;
  char *name, *src, *obj; /* owned */
  double seconds;
  GError *error;
} ObjectJob;

/* cc flags -c -o obj src: one unit to an object file. */
static void object_job(gpointer data, gpointer user_data) {
  ObjectJob *j = data;
  (void)user_data;
  g_autoptr(GStrvBuilder) b = g_strv_builder_new();
  g_strv_builder_addv(b, (const char **)j->cc);
  g_strv_builder_addv(b, (const char **)j->flags);
  g_strv_builder_add_many(b, "-c", "-o", j->obj, j->src, NULL);
  g_auto(GStrv) argv = g_strv_builder_end(b);
  run_checked(argv, j->name, j->src, j->obj, &j->seconds, &j->error);
}

/* Runs the jobs, at most `limit` at a time. */
static gboolean run_jobs(GFunc fn, gpointer jobs, gsize size, guint n,
                         guint limit, GError **error) {
  if (limit <= 1 || n <= 1) {
    for (guint i = 0; i < n; i++)
      fn((char *)jobs + i * size, NULL);
    return TRUE;
  }
  g_autoptr(GError) local = NULL;
  GThreadPool *pool = g_thread_pool_new(fn, NULL, (gint)limit, TRUE, &local);
  if (!pool) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "compile: cannot start compiler threads: %s", local->message);
    return FALSE;
  }
  for (guint i = 0; i < n; i++)
    g_thread_pool_push(pool, (char *)jobs + i * size, NULL);
  g_thread_pool_free(pool, FALSE, TRUE); /* waits for every job */
  return TRUE;
}

/* weir_compile_units, linking the object files objects too (as
 * compile_source). */
static gboolean compile_units(const char *const *sources, guint n,
                              const char *name, const char *output,
                              const WeirCompileOptions *opts,
                              const char *const *objects, double *seconds,
                              GError **error) {
  g_return_val_if_fail(sources != NULL && n > 0 && output != NULL, FALSE);
  if (n == 1)
    return compile_source(sources[0], name, output, opts, objects, FALSE,
                          seconds, error);
  if (seconds)
    *seconds = 0;
  if (!name)
    name = "kernel";
  if (!valid_name(name)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "compile: '%s' is not a C identifier", name);
    return FALSE;
  }
  g_auto(GStrv) cc = compiler_words(opts, error);
  if (!cc)
    return FALSE;
  g_auto(GStrv) flags = flag_words(opts, error);
  if (!flags)
    return FALSE;
  g_auto(GStrv) libs = weir_codegen_libraries(sources[0]);
  {
    char **with = flags_for_libraries(flags, libs);
    g_strfreev(flags);
    flags = with;
  }
  g_autoptr(GError) local = NULL;
  g_autofree char *dir = weir_scratch_dir_new("weir-cc", &local);
  if (!dir) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "compile '%s': cannot create a temporary directory: %s", name,
                local->message);
    return FALSE;
  }
  gint64 t0 = g_get_monotonic_time();
  g_autofree ObjectJob *jobs = g_new0(ObjectJob, n);
  gboolean ok = TRUE;
  for (guint i = 0; i < n && ok; i++) {
    ObjectJob *j = &jobs[i];
    j->cc = cc;
    j->flags = flags;
    j->name = g_strdup_printf("%s_%u", name, i + 1);
    g_autofree char *file = g_strconcat(j->name, ".c", NULL);
    g_autofree char *obj = g_strconcat(j->name, ".o", NULL);
    j->src = g_build_filename(dir, file, NULL);
    j->obj = g_build_filename(dir, obj, NULL);
    ok = g_file_set_contents(j->src, sources[i], -1, &local);
    if (!ok)
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "compile '%s': %s", name,
                  local->message);
  }
  if (ok)
    ok = run_jobs(object_job, jobs, sizeof *jobs, n,
                  MIN(n, g_get_num_processors()), error);
  for (guint i = 0; ok && i < n; i++)
    if (jobs[i].error) {
      g_propagate_error(error, g_steal_pointer(&jobs[i].error));
      ok = FALSE;
    }
  if (ok) {
    g_autofree const char **objs = g_new0(const char *, n + 1);
    for (guint i = 0; i < n; i++)
      objs[i] = jobs[i].obj;
    g_autofree const char **inputs = with_objects(objs, objects);
    ok = run_compiler(cc, flags, libs, name, inputs, output, NULL, error);
  }
  if (seconds)
    *seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
  for (guint i = 0; i < n; i++) {
    g_clear_error(&jobs[i].error);
    g_free(jobs[i].name);
    g_free(jobs[i].src);
    g_free(jobs[i].obj);
  }
  weir_scratch_remove(dir);
  return ok;
}

gboolean weir_compile_units(const char *const *sources, guint n,
                            const char *name, const char *output,
                            const WeirCompileOptions *opts, double *seconds,
                            GError **error) {
  return compile_units(sources, n, name, output, opts, NULL, seconds, error);
}

/* ------------------------------------------------------- parallel units */

typedef struct {
  const WeirCompileOptions *opts;
} ManyCtx;

static void compile_job(gpointer data, gpointer user_data) {
  WeirCompileJob *job = data;
  const ManyCtx *ctx = user_data;
  if (job->n_units > 1 && !job->object)
    compile_units(job->units, job->n_units, job->name, job->output, ctx->opts,
                  job->objects, &job->seconds, &job->error);
  else
    compile_source(job->source, job->name, job->output, ctx->opts, job->objects,
                   job->object, &job->seconds, &job->error);
}

gboolean weir_compile_many(WeirCompileJob *jobs, guint n_jobs,
                           const WeirCompileOptions *opts, GError **error) {
  g_return_val_if_fail(jobs != NULL || n_jobs == 0, FALSE);
  ManyCtx ctx = {opts};
  for (guint i = 0; i < n_jobs; i++) {
    g_clear_error(&jobs[i].error);
    jobs[i].seconds = 0;
  }
  guint limit = MIN(n_jobs, g_get_num_processors());
  if (limit <= 1) {
    for (guint i = 0; i < n_jobs; i++)
      compile_job(&jobs[i], &ctx);
  } else {
    g_autoptr(GError) local = NULL;
    GThreadPool *pool =
        g_thread_pool_new(compile_job, &ctx, (gint)limit, TRUE, &local);
    if (!pool) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                  "compile: cannot start compiler threads: %s", local->message);
      return FALSE;
    }
    for (guint i = 0; i < n_jobs; i++)
      g_thread_pool_push(pool, &jobs[i], NULL);
    g_thread_pool_free(pool, FALSE, TRUE); /* waits for every job */
  }
  for (guint i = 0; i < n_jobs; i++) {
    if (jobs[i].error) {
      if (error)
        *error = g_error_copy(jobs[i].error);
      return FALSE;
    }
  }
  return TRUE;
}
