/* test-cli-train-graph.c — the autodiff fallback through the CLI, as a user
 * runs it (issue 7): `weir train-graph` on the tiny Conv1d fixture
 * (tests/core/data/conv1d.onnx: its Conv1d and MaxPool1d have no backward
 * rule, so their gradients come from the fallback through expanded maps),
 * then `weir run-ref` and `weir run` with the fixture's input, target and
 * initial weights, comparing the loss and the parameters after one SGD
 * step with PyTorch's (tests/core/data/conv1d/train).  The same after the
 * model is expanded and three of its maps are tiled into nests (`weir
 * expand`, `weir apply ... map-tiling`), so the fallback differentiates
 * nested map scopes.  A wrong expected loss makes run-ref fail.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <sys/wait.h>

#include "../tmpdir-fixture.h"
#include "weir.h"

#define FIXTURE "tests/core/data/conv1d"

static const char *const params[] = {"conv1.weight", "conv1.bias",
                                     "conv2.weight", "conv2.bias",
                                     "fc.weight",    "fc.bias"};

typedef struct {
  int status;
  char *out;
  char *err;
} Run;

static void run_clear(Run *r) {
  g_free(r->out);
  g_free(r->err);
}

/* Runs weir with the arguments of argv (NULL-terminated) from the source
 * directory, one OpenMP thread. */
static Run run_weir(GPtrArray *args) {
  g_autoptr(GPtrArray) argv = g_ptr_array_new();
  g_ptr_array_add(argv, (gpointer)WEIR_CLI);
  for (guint i = 0; i < args->len; i++)
    g_ptr_array_add(argv, args->pdata[i]);
  g_ptr_array_add(argv, NULL);
  g_auto(GStrv) env =
      g_environ_setenv(g_get_environ(), "OMP_NUM_THREADS", "1", TRUE);
  Run r = {0};
  int wait_status = 0;
  g_autoptr(GError) error = NULL;
  gboolean ok =
      g_spawn_sync(WEIR_SRCDIR, (char **)argv->pdata, env, G_SPAWN_DEFAULT,
                   NULL, NULL, &r.out, &r.err, &wait_status, &error);
  if (!ok)
    fail_msg("spawn %s: %s", WEIR_CLI, error->message);
  r.status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  return r;
}

static Run run_va(const char *first, ...) {
  g_autoptr(GPtrArray) args = g_ptr_array_new();
  va_list ap;
  va_start(ap, first);
  for (const char *a = first; a; a = va_arg(ap, const char *))
    g_ptr_array_add(args, (gpointer)a);
  va_end(ap);
  return run_weir(args);
}

static void expect_ok(Run *r, const char *what) {
  if (r->status != 0)
    fail_msg("%s: exit %d\nstdout:\n%s\nstderr:\n%s", what, r->status, r->out,
             r->err);
}

static char *tmp_path(const char *name) {
  return g_build_filename(tmp_dir, name, NULL);
}

/* t with a leading dimension of 1 (the K = 1 steps of one call). */
static WeirTensor *with_leading_one(const WeirTensor *t) {
  gint64 shape[9] = {1};
  for (guint d = 0; d < t->rank; d++)
    shape[d + 1] = t->shape[d];
  WeirTensor *r = weir_tensor_new(t->dtype, t->rank + 1, shape);
  memcpy(r->data, t->data, t->count * weir_dtype_size(t->dtype));
  return r;
}

static void write_npy(const WeirTensor *t, const char *name) {
  g_autofree char *path = tmp_path(name);
  g_autoptr(GError) err = NULL;
  if (!weir_tensor_write_npy(t, path, &err))
    fail_msg("%s: %s", path, err->message);
}

static WeirTensor *read_fixture(const char *name) {
  g_autofree char *path =
      g_build_filename(WEIR_SRCDIR, FIXTURE, "train", name, NULL);
  g_autoptr(GError) err = NULL;
  WeirTensor *t = weir_tensor_read_npy(path, &err);
  if (!t)
    fail_msg("%s: %s", path, err->message);
  return t;
}

/* The loss PyTorch computed (the fixture's loss.npy, a scalar). */
static double torch_loss(void) {
  g_autoptr(WeirTensor) l = read_fixture("loss.npy");
  assert_int_equal(l->count, 1);
  return weir_tensor_get(l, 0);
}

/* Writes the initial weights (the ONNX initializers), the input and target
 * with K = 1, losses_ok.npy / losses_bad.npy (PyTorch's loss, and it plus
 * 0.01), zero.npy and one.npy (i64[1]) into tmp_dir. */
static int setup(void **state) {
  (void)state;
  if (tmpdir_setup("weir-cli-train-graph") != 0)
    return -1;
  g_autoptr(GError) err = NULL;
  g_autofree char *model_path =
      g_build_filename(WEIR_SRCDIR, FIXTURE ".onnx", NULL);
  WeirOnnxModel *model = weir_onnx_model_load(model_path, &err);
  if (!model)
    fail_msg("%s: %s", model_path, err->message);
  for (guint i = 0; i < G_N_ELEMENTS(params); i++) {
    g_autoptr(WeirTensor) t =
        weir_onnx_model_initializer(model, params[i], &err);
    if (!t)
      fail_msg("%s: %s", params[i], err->message);
    g_autofree char *name = g_strdup_printf("init_%u.npy", i);
    write_npy(t, name);
  }
  weir_onnx_model_free(model);
  g_autoptr(WeirTensor) x = read_fixture("input.npy");
  g_autoptr(WeirTensor) y = read_fixture("target.npy");
  g_autoptr(WeirTensor) xk = with_leading_one(x);
  g_autoptr(WeirTensor) yk = with_leading_one(y);
  write_npy(xk, "input_k.npy");
  write_npy(yk, "target_k.npy");
  gint64 one = 1;
  g_autoptr(WeirTensor) ok = weir_tensor_new(WEIR_DTYPE_F32, 1, &one);
  weir_tensor_set(ok, 0, torch_loss());
  write_npy(ok, "losses_ok.npy");
  g_autoptr(WeirTensor) bad = weir_tensor_new(WEIR_DTYPE_F32, 1, &one);
  weir_tensor_set(bad, 0, torch_loss() + 0.01);
  write_npy(bad, "losses_bad.npy");
  /* the step counter and the count of skipped steps: 0 before, 1 and 0
   * after */
  g_autoptr(WeirTensor) zero = weir_tensor_new(WEIR_DTYPE_I64, 1, &one);
  weir_tensor_set(zero, 0, 0);
  write_npy(zero, "zero.npy");
  g_autoptr(WeirTensor) unit = weir_tensor_new(WEIR_DTYPE_I64, 1, &one);
  weir_tensor_set(unit, 0, 1);
  write_npy(unit, "one.npy");
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return tmpdir_teardown();
}

/* `weir COMMAND program` with the inputs of one step, expecting `losses`
 * and every parameter after the SGD step (PyTorch's sgd_K.npy). */
static Run run_step(const char *command, const char *program,
                    const char *losses) {
  g_autoptr(GPtrArray) args = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(args, g_strdup(command));
  g_ptr_array_add(args, g_strdup(program));
  g_autofree char *xk = tmp_path("input_k.npy");
  g_autofree char *yk = tmp_path("target_k.npy");
  g_autofree char *lk = tmp_path(losses);
  g_ptr_array_add(args, g_strdup_printf("--input=input=%s", xk));
  g_ptr_array_add(args, g_strdup_printf("--input=target=%s", yk));
  g_ptr_array_add(args, g_strdup_printf("--expect=losses=%s", lk));
  g_autofree char *zero = tmp_path("zero.npy");
  g_autofree char *one = tmp_path("one.npy");
  g_ptr_array_add(args, g_strdup_printf("--input=step=%s", zero));
  g_ptr_array_add(args, g_strdup_printf("--input=skipped=%s", zero));
  g_ptr_array_add(args, g_strdup_printf("--expect=step=%s", one));
  g_ptr_array_add(args, g_strdup_printf("--expect=skipped=%s", zero));
  for (guint i = 0; i < G_N_ELEMENTS(params); i++) {
    g_autofree char *c = g_strdelimit(g_strdup(params[i]), ".", '_');
    g_autofree char *init_name = g_strdup_printf("init_%u.npy", i);
    g_autofree char *init = tmp_path(init_name);
    g_autofree char *after =
        g_strdup_printf("%s/%s/train/sgd_%u.npy", WEIR_SRCDIR, FIXTURE, i);
    g_ptr_array_add(args, g_strdup_printf("--input=%s=%s", c, init));
    g_ptr_array_add(args, g_strdup_printf("--expect=%s=%s", c, after));
  }
  g_ptr_array_add(args, g_strdup("--rtol=1e-5"));
  g_ptr_array_add(args, g_strdup("--atol=1e-6"));
  if (strcmp(command, "run") == 0)
    g_ptr_array_add(args, g_strdup("--no-cache"));
  return run_weir(args);
}

static void train_graph(const char *model, const char *out) {
  Run r = run_va("train-graph", model, "--loss", "softmax-cross-entropy",
                 "--optimizer", "sgd", "--lr", "0.1", "--steps", "1", "-o", out,
                 NULL);
  expect_ok(&r, "train-graph");
  assert_non_null(strstr(r.out, "6 parameters"));
  run_clear(&r);
}

/* Runs the one-step program through the interpreter and compiled: the
 * loss and the parameters after the step agree with PyTorch; a wrong loss
 * is reported. */
static void check_program(const char *program) {
  Run r = run_step("run-ref", program, "losses_ok.npy");
  if (g_getenv("WEIR_TEST_VERBOSE"))
    fprintf(stderr, "%s%s", r.out, r.err);
  expect_ok(&r, "run-ref");
  run_clear(&r);
  r = run_step("run", program, "losses_ok.npy");
  if (g_getenv("WEIR_TEST_VERBOSE"))
    fprintf(stderr, "%s%s", r.out, r.err);
  expect_ok(&r, "run");
  run_clear(&r);
  r = run_step("run-ref", program, "losses_bad.npy");
  if (r.status == 0)
    fail_msg("run-ref accepted a loss 0.01 away from PyTorch's:\n%s", r.out);
  g_autofree char *all = g_strconcat(r.out, r.err, NULL);
  assert_non_null(strstr(all, "losses"));
  run_clear(&r);
}

static void test_conv1d_step(void **state) {
  (void)state;
  g_autofree char *t = tmp_path("train.json");
  train_graph(FIXTURE ".onnx", t);
  check_program(t);
}

/* The site of `weir transforms` for map entry `label` of program. */
static char *site_of(const char *program, const char *label) {
  Run r = run_va("transforms", program, "--tier", "1", NULL);
  expect_ok(&r, "transforms");
  g_autofree char *needle = g_strdup_printf("(map_entry '%s')", label);
  g_auto(GStrv) lines = g_strsplit(r.out, "\n", -1);
  char *site = NULL;
  gboolean tiling = FALSE; /* inside the map-tiling section */
  for (guint i = 0; lines[i] && !site; i++) {
    if (g_str_has_prefix(lines[i], "tier "))
      tiling = strstr(lines[i], " map-tiling:") != NULL;
    const char *s = strstr(lines[i], "--site ");
    if (tiling && s && strstr(lines[i], needle))
      site = g_strndup(s + 7, strspn(s + 7, "0123456789"));
  }
  run_clear(&r);
  if (!site)
    fail_msg("no site for map '%s' in %s", label, program);
  return site;
}

static void tile(const char *in, const char *label, const char *size,
                 const char *out) {
  g_autofree char *site = site_of(in, label);
  g_autofree char *p = g_strdup_printf("tile=%s", size);
  Run r = run_va("apply", in, "map-tiling", "--site", site, "-p", p, "-o", out,
                 NULL);
  expect_ok(&r, "apply map-tiling");
  run_clear(&r);
}

static void test_conv1d_tiled_step(void **state) {
  (void)state;
  g_autofree char *m = tmp_path("model.json");
  g_autofree char *x = tmp_path("expanded.json");
  g_autofree char *t1 = tmp_path("tiled1.json");
  g_autofree char *t2 = tmp_path("tiled2.json");
  g_autofree char *t3 = tmp_path("tiled3.json");
  g_autofree char *t = tmp_path("train-tiled.json");
  Run r = run_va("import", FIXTURE ".onnx", "-o", m, NULL);
  expect_ok(&r, "import");
  run_clear(&r);
  r = run_va("expand", m, "-o", x, NULL);
  expect_ok(&r, "expand");
  run_clear(&r);
  /* the first convolution, the pooling maximum and the Linear layer's
   * multiply-accumulate become nests of two maps */
  tile(x, "/conv1/Conv_mac", "2", t1);
  tile(t1, "/pool/MaxPool_max", "3", t2);
  tile(t2, "/fc/Gemm_mac", "2", t3);
  r = run_va("info", t3, NULL);
  expect_ok(&r, "info");
  run_clear(&r);
  train_graph(t3, t);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = weir_graph_load(t, &err);
  if (!g)
    fail_msg("%s: %s", t, err->message);
  /* the backward nests of the tiled maps are there */
  guint nests = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      nests += n->kind == WEIR_NODE_MAP_ENTRY && n->label &&
               g_str_has_prefix(n->label, "/conv1/Conv_mac_grad") &&
               g_str_has_suffix(n->label, "_1");
    }
  }
  assert_true(nests >= 1);
  check_program(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conv1d_step),
      cmocka_unit_test(test_conv1d_tiled_step),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
