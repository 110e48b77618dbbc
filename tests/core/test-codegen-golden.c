/* test-codegen-golden.c — the generated C of every sample, byte for byte.
 *
 * The code generator must keep its output when its code is moved or
 * refactored: this test regenerates the C source and header of every case
 * below and compares them with the recorded ones.
 *
 * Cases (the names are the keys of the golden list):
 *   <name>, <name>.no-openmp       every samples/<name>.json, and every
 *                                  program of tests/core/golden/codegen/
 *                                  programs/ (test-codegen's feature
 *                                  programs saved as JSON), with and
 *                                  without OpenMP pragmas;
 *   <model>, <model>.no-openmp     every samples/models/<model>.onnx as
 *                                  `weir codegen` generates it (default
 *                                  implementations of library nodes);
 *   <model>.pure                   the same with every library node
 *                                  expanded into maps (impl "pure");
 *   <model>.train                  its training program (weir_train_graph:
 *                                  Adam, softmax cross-entropy, or mean
 *                                  squared error when that does not apply).
 *
 * tests/core/golden/codegen/golden.sha256 lists the SHA-256 of every
 * generated file as sha256sum prints it ("<hash>  <case>.c" and
 * "<case>.h").  Files under 16 KiB are also kept in full in
 * tests/core/golden/codegen/text/, so a mismatch there shows the first
 * differing line; the large ones (models with their weights as literals)
 * are kept as hashes only.
 *
 *   WEIR_UPDATE_GOLDEN=1  rewrites the list and the texts (after a change
 *                         of the generated code that is meant);
 *   (WEIR_ISA=generic, WEIR_HW_CACHES=32768,262144,0 and WEIR_HW_CORES=2
 *   are set by the test itself, so that the GEMM kernels of the default
 *   implementation "weir" do not depend on the machine.)
 *   WEIR_CODEGEN_DUMP=DIR writes every generated file into DIR, so
 *                         `cd DIR && sha256sum -c <list>` names the
 *                         differing ones and `diff` shows how.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <string.h>

#include "weir-codegen.h"
#include "weir-import.h"
#include "weir-json.h"
#include "weir-native.h"
#include "weir-train.h"

/* Files up to this size are kept as full text. */
#define TEXT_MAX (16 * 1024)
/* Mismatches described in the failure message; the others are counted. */
#define REPORT_MAX 8

typedef struct {
  GHashTable *want; /* file name -> recorded hash (owned) */
  GHashTable *got;  /* file name -> hash of this run (owned) */
  GPtrArray *order; /* file names of this run, in order (owned) */
  GString *report;  /* mismatches (the first REPORT_MAX) */
  guint mismatches;
  char *dir;        /* tests/core/golden/codegen */
  const char *dump; /* WEIR_CODEGEN_DUMP, or NULL */
  gboolean update;
} Golden;

static char *golden_path(const Golden *gd, const char *a, const char *b) {
  return g_build_filename(gd->dir, a, b, NULL);
}

/* The first line where a and b differ, as a short report. */
static void first_difference(GString *r, const char *want, const char *got) {
  guint line = 1;
  const char *w = want, *h = got;
  while (*w && *w == *h) {
    if (*w == '\n') {
      line++;
      want = w + 1;
      got = h + 1;
    }
    w++;
    h++;
  }
  g_autofree char *wl = g_strndup(want, strcspn(want, "\n"));
  g_autofree char *gl = g_strndup(got, strcspn(got, "\n"));
  g_string_append_printf(r, "    first difference at line %u:\n", line);
  g_string_append_printf(r, "    - %s\n    + %s\n", wl, gl);
}

/* Records one generated file and compares it with the golden one. */
static void golden_check(Golden *gd, const char *file, const char *text) {
  g_autofree char *hash =
      g_compute_checksum_for_string(G_CHECKSUM_SHA256, text, -1);
  g_ptr_array_add(gd->order, g_strdup(file));
  g_hash_table_insert(gd->got, g_strdup(file), g_strdup(hash));
  if (gd->dump) {
    g_autofree char *p = g_build_filename(gd->dump, file, NULL);
    assert_true(g_file_set_contents(p, text, -1, NULL));
  }
  g_autofree char *tpath = golden_path(gd, "text", file);
  gboolean small = strlen(text) < TEXT_MAX;
  if (gd->update) {
    if (small)
      assert_true(g_file_set_contents(tpath, text, -1, NULL));
    else
      g_remove(tpath);
    return;
  }
  const char *want = g_hash_table_lookup(gd->want, file);
  if (!want) {
    g_string_append_printf(gd->report, "  %s: not in the golden list\n", file);
    return;
  }
  if (strcmp(want, hash) == 0)
    return;
  if (gd->mismatches++ >= REPORT_MAX)
    return;
  g_string_append_printf(gd->report, "  %s: SHA-256 %s, recorded %s\n", file,
                         hash, want);
  g_autofree char *old = NULL;
  if (small && g_file_get_contents(tpath, &old, NULL, NULL))
    first_difference(gd->report, old, text);
}

/* Generates the source and header of g as case `name`. */
static void golden_case(Golden *gd, const WeirGraph *g, const char *name,
                        gboolean openmp) {
  WeirCodegenOptions opts = {.openmp = openmp};
  g_autoptr(GError) err = NULL;
  g_autofree char *src = weir_codegen_c(g, &opts, &err);
  if (!src)
    fail_msg("%s: %s", name, err->message);
  g_autofree char *hdr = weir_codegen_header(g);
  g_autofree char *c = g_strconcat(name, ".c", NULL);
  g_autofree char *h = g_strconcat(name, ".h", NULL);
  golden_check(gd, c, src);
  golden_check(gd, h, hdr);
}

static gint compare_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The programs of a directory of JSON files: both variants each. */
static void golden_programs(Golden *gd, const char *dir) {
  g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GError) err = NULL;
  g_autoptr(GDir) d = g_dir_open(dir, 0, &err);
  if (!d)
    fail_msg("%s: %s", dir, err->message);
  const char *n;
  while ((n = g_dir_read_name(d)))
    if (g_str_has_suffix(n, ".json"))
      g_ptr_array_add(files, g_strdup(n));
  g_ptr_array_sort(files, compare_names);
  assert_true(files->len > 0);
  for (guint i = 0; i < files->len; i++) {
    const char *file = g_ptr_array_index(files, i);
    g_autofree char *path = g_build_filename(dir, file, NULL);
    g_autoptr(WeirGraph) g = weir_graph_load(path, &err);
    if (!g)
      fail_msg("%s: %s", path, err->message);
    g_autofree char *base = g_strndup(file, strlen(file) - strlen(".json"));
    g_autofree char *off = g_strconcat(base, ".no-openmp", NULL);
    golden_case(gd, g, base, TRUE);
    golden_case(gd, g, off, FALSE);
  }
}

/* Adds the operators of the library nodes of g (and its nested programs)
 * to ops. */
static void library_ops(const WeirGraph *g, GHashTable *ops) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY && n->op)
        g_hash_table_add(ops, n->op);
      if (n->kind == WEIR_NODE_NESTED && n->nested)
        library_ops(n->nested, ops);
    }
  }
}

/* g with every library node that has a native implementation set to its
 * pure expansion, as `weir codegen --impl OP=pure` does. (transfer full) */
static WeirGraph *all_pure(const WeirGraph *g) {
  WeirGraph *p = weir_graph_copy(g);
  g_autoptr(GHashTable) ops = g_hash_table_new(g_str_hash, g_str_equal);
  library_ops(p, ops);
  g_autofree const char **names =
      (const char **)g_hash_table_get_keys_as_array(ops, NULL);
  static const char *const native[] = {"blas", "weir", "im2col", "col2im",
                                       "direct"};
  for (guint i = 0; names[i]; i++) {
    gboolean has_native = FALSE;
    for (guint k = 0; k < G_N_ELEMENTS(native); k++)
      has_native = has_native || weir_native_lookup(names[i], native[k]);
    if (!has_native)
      continue; /* expanded anyway */
    g_autoptr(GError) err = NULL;
    if (!weir_native_set_impl(p, names[i], "pure", NULL, &err))
      fail_msg("%s: %s", names[i], err->message);
  }
  return p;
}

/* The training program of a model: Adam, softmax cross-entropy, or mean
 * squared error when the output is no classifier's. (transfer full) */
static WeirGraph *training(const WeirGraph *g, const char *name) {
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.optimizer = WEIR_OPTIMIZER_ADAM;
  o.loss = WEIR_LOSS_SOFTMAX_CROSS_ENTROPY;
  g_autoptr(GError) err = NULL;
  WeirGraph *t = weir_train_graph(g, &o, &err);
  if (t)
    return t;
  g_clear_error(&err);
  o.loss = WEIR_LOSS_MSE;
  t = weir_train_graph(g, &o, &err);
  if (!t)
    fail_msg("%s: training program: %s", name, err->message);
  return t;
}

static void golden_models(Golden *gd, const char *dir) {
  g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GError) err = NULL;
  g_autoptr(GDir) d = g_dir_open(dir, 0, &err);
  if (!d)
    fail_msg("%s: %s", dir, err->message);
  const char *n;
  while ((n = g_dir_read_name(d)))
    if (g_str_has_suffix(n, ".onnx"))
      g_ptr_array_add(files, g_strdup(n));
  g_ptr_array_sort(files, compare_names);
  assert_true(files->len > 0);
  for (guint i = 0; i < files->len; i++) {
    const char *file = g_ptr_array_index(files, i);
    g_autofree char *path = g_build_filename(dir, file, NULL);
    WeirOnnxImportOptions io = {0};
    g_autoptr(WeirGraph) g = weir_onnx_import(path, &io, &err);
    if (!g)
      fail_msg("%s: %s", path, err->message);
    g_autofree char *base = g_strndup(file, strlen(file) - strlen(".onnx"));
    golden_case(gd, g, base, TRUE);
    g_autofree char *off = g_strconcat(base, ".no-openmp", NULL);
    golden_case(gd, g, off, FALSE);
    g_autoptr(WeirGraph) p = all_pure(g);
    g_autofree char *pure = g_strconcat(base, ".pure", NULL);
    golden_case(gd, p, pure, TRUE);
    g_autoptr(WeirGraph) t = training(g, base);
    g_autofree char *train = g_strconcat(base, ".train", NULL);
    golden_case(gd, t, train, TRUE);
  }
}

static void read_list(Golden *gd, const char *path) {
  g_autofree char *text = NULL;
  g_autoptr(GError) err = NULL;
  if (!g_file_get_contents(path, &text, NULL, &err))
    fail_msg("%s: %s (WEIR_UPDATE_GOLDEN=1 writes it)", path, err->message);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    if (!lines[i][0])
      continue;
    const char *sep = strstr(lines[i], "  ");
    if (!sep)
      fail_msg("%s:%u: expected '<sha256>  <file>'", path, i + 1);
    g_hash_table_insert(gd->want, g_strdup(sep + 2),
                        g_strndup(lines[i], sep - lines[i]));
  }
}

static void write_list(Golden *gd, const char *path) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < gd->order->len; i++) {
    const char *file = g_ptr_array_index(gd->order, i);
    g_string_append_printf(
        s, "%s  %s\n", (const char *)g_hash_table_lookup(gd->got, file), file);
  }
  assert_true(g_file_set_contents(path, s->str, -1, NULL));
  g_string_free(s, TRUE);
  /* texts of files no longer generated go */
  g_autofree char *tdir = golden_path(gd, "text", NULL);
  g_autoptr(GDir) d = g_dir_open(tdir, 0, NULL);
  const char *n;
  g_autoptr(GPtrArray) stale = g_ptr_array_new_with_free_func(g_free);
  while (d && (n = g_dir_read_name(d)))
    if (!g_hash_table_contains(gd->got, n))
      g_ptr_array_add(stale, g_build_filename(tdir, n, NULL));
  for (guint i = 0; i < stale->len; i++)
    g_remove(g_ptr_array_index(stale, i));
}

static void test_golden_codegen(void **state) {
  (void)state;
  Golden gd = {0};
  gd.want = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  gd.got = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  gd.order = g_ptr_array_new_with_free_func(g_free);
  gd.report = g_string_new(NULL);
  gd.dir =
      g_build_filename(WEIR_SRCDIR, "tests", "core", "golden", "codegen", NULL);
  gd.dump = g_getenv("WEIR_CODEGEN_DUMP");
  gd.update = g_getenv("WEIR_UPDATE_GOLDEN") != NULL;
  if (gd.dump)
    assert_int_equal(g_mkdir_with_parents(gd.dump, 0755), 0);
  g_autofree char *tdir = golden_path(&gd, "text", NULL);
  assert_int_equal(g_mkdir_with_parents(tdir, 0755), 0);
  g_autofree char *list = golden_path(&gd, "golden.sha256", NULL);
  if (!gd.update)
    read_list(&gd, list);

  g_autofree char *samples = g_build_filename(WEIR_SRCDIR, "samples", NULL);
  g_autofree char *programs = golden_path(&gd, "programs", NULL);
  g_autofree char *models =
      g_build_filename(WEIR_SRCDIR, "samples", "models", NULL);
  golden_programs(&gd, samples);
  golden_programs(&gd, programs);
  golden_models(&gd, models);

  if (gd.update) {
    write_list(&gd, list);
  } else {
    /* cases that are gone */
    g_autoptr(GPtrArray) want = g_ptr_array_new();
    GHashTableIter it;
    gpointer k;
    g_hash_table_iter_init(&it, gd.want);
    while (g_hash_table_iter_next(&it, &k, NULL))
      if (!g_hash_table_contains(gd.got, k))
        g_ptr_array_add(want, k);
    g_ptr_array_sort(want, compare_names);
    for (guint i = 0; i < want->len; i++)
      g_string_append_printf(gd.report, "  %s: recorded but not generated\n",
                             (const char *)g_ptr_array_index(want, i));
  }
  if (gd.mismatches > REPORT_MAX)
    g_string_append_printf(gd.report, "  ... and %u more files differ\n",
                           gd.mismatches - REPORT_MAX);
  g_autofree char *report = g_string_free(gd.report, FALSE);
  g_hash_table_unref(gd.want);
  g_hash_table_unref(gd.got);
  g_ptr_array_unref(gd.order);
  g_free(gd.dir);
  if (report[0])
    fail_msg("generated code differs from the golden list %s:\n%s"
             "(WEIR_CODEGEN_DUMP=DIR writes the generated files; "
             "WEIR_UPDATE_GOLDEN=1 records them when the change is meant)",
             list, report);
}

int main(void) {
  /* Weir's own kernels (the default for f32 GEMMs) follow the hardware
   * profile: pinned here so the goldens are the same on every machine */
  g_setenv("WEIR_ISA", "generic", TRUE);
  g_setenv("WEIR_HW_CACHES", "32768,262144,0", TRUE);
  g_setenv("WEIR_HW_CORES", "2", TRUE);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_golden_codegen),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
