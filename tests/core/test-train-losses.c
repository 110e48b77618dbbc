/* test-train-losses.c — every training loss of weir_train_graph against
 * PyTorch: the loss value, the gradients and the parameters after one SGD
 * step.
 *
 * tests/core/data/make-losses.py wrote, for each case of
 * tests/core/data/losses/, a small linear model (model.onnx), a batch
 * (input.npy, target.npy), PyTorch's loss (loss.npy; per element for
 * reduction none, whose gradient is that of the sum), each parameter's
 * gradient and its value after one SGD step, and the options of the loss
 * in Weir's terms (manifest.json): cross-entropy over the last axis of a
 * sequence output and over axis 1, i32 and i64 labels, ignore_index, label
 * smoothing, class weights, the three reductions; nll; bce-with-logits,
 * l1, huber, mse.  Each case runs the training program (K = 1) in the
 * interpreter and as compiled code.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <json-c/json.h>
#include <math.h>
#include <string.h>

#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-runtime.h"
#include "weir-tensor-io.h"
#include "weir-train.h"

static char *case_file(const char *name, const char *file) {
  return g_build_filename(WEIR_SRCDIR, "tests", "core", "data", "losses", name,
                          file, NULL);
}

static WeirTensor *load_npy(const char *name, const char *file) {
  g_autofree char *path = case_file(name, file);
  g_autoptr(GError) error = NULL;
  WeirTensor *t = weir_tensor_read_npy(path, &error);
  if (!t)
    fail_msg("%s", error->message);
  return t;
}

/* A tensor with shape [1, ...t's shape] and t's data. */
static WeirTensor *with_lead(const WeirTensor *t) {
  g_autofree gint64 *shape = g_new(gint64, t->rank + 1);
  shape[0] = 1;
  memcpy(shape + 1, t->shape, sizeof(gint64) * t->rank);
  WeirTensor *r = weir_tensor_new(t->dtype, t->rank + 1, shape);
  memcpy(r->data, t->data, weir_tensor_nbytes(t));
  return r;
}

/* The container that ONNX initializer `onnx` became. */
static const char *container_of(const WeirGraph *g, const char *onnx) {
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g->containers->pdata[i];
    if (g_strcmp0(c->initializer, onnx) == 0)
      return c->name;
  }
  fail_msg("no container for initializer '%s'", onnx);
  return NULL;
}

static json_object *member(json_object *o, const char *key) {
  json_object *v = NULL;
  return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* The options of the case's manifest. */
static void read_options(json_object *m, WeirTrainOptions *o, GArray *w) {
  json_object *opts = member(m, "options"), *v;
  assert_non_null(opts);
  weir_train_options_init(o);
  assert_true(weir_loss_from_name(json_object_get_string(member(opts, "loss")),
                                  &o->loss));
  if ((v = member(opts, "reduction")))
    assert_true(
        weir_reduction_from_name(json_object_get_string(v), &o->reduction));
  if ((v = member(opts, "class_axis")))
    o->class_axis = json_object_get_int(v);
  if ((v = member(opts, "ignore_index"))) {
    o->has_ignore_index = TRUE;
    o->ignore_index = json_object_get_int64(v);
  }
  if ((v = member(opts, "label_smoothing")))
    o->label_smoothing = json_object_get_double(v);
  if ((v = member(opts, "huber_delta")))
    o->huber_delta = json_object_get_double(v);
  if ((v = member(opts, "label_dtype")))
    assert_true(
        weir_dtype_from_name(json_object_get_string(v), &o->label_dtype));
  if ((v = member(opts, "class_weights"))) {
    for (size_t i = 0; i < json_object_array_length(v); i++) {
      double x = json_object_get_double(json_object_array_get_idx(v, i));
      g_array_append_val(w, x);
    }
    o->class_weights = (const double *)w->data;
    o->n_class_weights = w->len;
  }
  o->optimizer = WEIR_OPTIMIZER_SGD;
  o->lr = json_object_get_double(member(m, "lr"));
  o->steps = 1;
}

static void compare(const char *what, const WeirTensor *got,
                    const WeirTensor *want, double atol) {
  assert_int_equal(got->rank, want->rank);
  gint64 n = 1;
  for (guint d = 0; d < got->rank; d++) {
    assert_int_equal(got->shape[d], want->shape[d]);
    n *= got->shape[d];
  }
  for (gint64 i = 0; i < n; i++) {
    double a = weir_tensor_get(got, i), b = weir_tensor_get(want, i);
    if (!(fabs(a - b) <= atol + 1e-4 * fabs(b)))
      fail_msg("%s[%" G_GINT64_FORMAT "]: %.9g, PyTorch %.9g", what, i, a, b);
  }
}

/* Runs the case's training program (K = 1) and compares with PyTorch. */
static void check_case(const char *name, gboolean compiled) {
  g_autofree char *mpath = case_file(name, "manifest.json");
  json_object *m = json_object_from_file(mpath);
  assert_non_null(m);
  g_autoptr(WeirTensor) input = load_npy(name, "input.npy");
  g_autoptr(WeirTensor) target = load_npy(name, "target.npy");
  g_autoptr(WeirTensor) want_loss = load_npy(name, "loss.npy");
  g_autofree char *model = case_file(name, "model.onnx");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) fwd = weir_onnx_import(model, NULL, &error);
  if (!fwd)
    fail_msg("%s", error->message);
  WeirTrainOptions o;
  g_autoptr(GArray) weights = g_array_new(FALSE, FALSE, sizeof(double));
  read_options(m, &o, weights);
  g_autoptr(WeirGraph) prog = weir_train_graph(fwd, &o, &error);
  if (!prog)
    fail_msg("%s: %s", name, error->message);

  g_autoptr(GHashTable) state = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) args = weir_codegen_arguments(prog);
  for (guint i = 0; i < args->len; i++) {
    const WeirContainer *c = args->pdata[i];
    WeirTensor *v;
    if (!strcmp(c->name, "input")) {
      v = with_lead(input);
    } else if (!strcmp(c->name, "target")) {
      v = with_lead(target);
      assert_int_equal(v->dtype, c->dtype);
    } else {
      g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
      for (guint d = 0; d < c->shape->len; d++)
        assert_true(weir_expr_eval(c->shape->pdata[d], NULL, &shape[d], NULL));
      v = weir_tensor_new(c->dtype, c->shape->len, shape);
      memset(v->data, 0, weir_tensor_nbytes(v));
      const WeirContainer *fc = weir_graph_container(fwd, c->name);
      if (fc && fc->initial) {
        gsize n = 0;
        const void *data = g_bytes_get_data(fc->initial, &n);
        assert_int_equal(n, weir_tensor_nbytes(v));
        memcpy(v->data, data, n);
      }
    }
    g_hash_table_insert(state, g_strdup(c->name), v);
  }
  /* the parameters before the step */
  json_object *params = member(m, "parameters");
  g_autoptr(GPtrArray) before =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_tensor_free);
  for (size_t i = 0; i < json_object_array_length(params); i++) {
    json_object *e = json_object_array_get_idx(params, i);
    const char *c =
        container_of(fwd, json_object_get_string(member(e, "name")));
    g_ptr_array_add(before, weir_tensor_copy(g_hash_table_lookup(state, c)));
  }

  if (compiled) {
    WeirCompileOptions co = {0};
    g_autoptr(WeirKernel) k = weir_kernel_compile(prog, &co, NULL, &error);
    if (!k)
      fail_msg("%s", error->message);
    if (!weir_kernel_run(k, NULL, state, &error))
      fail_msg("%s", error->message);
  } else {
    if (!weir_expand_all(prog, NULL, NULL, &error) ||
        !weir_interpret(prog, NULL, state, NULL, &error))
      fail_msg("%s", error->message);
  }
  g_autofree char *lwhat = g_strdup_printf("%s loss", name);
  g_autoptr(WeirTensor) wl = with_lead(want_loss);
  compare(lwhat, g_hash_table_lookup(state, "losses"), wl, 1e-5);
  const WeirTensor *skipped = g_hash_table_lookup(state, "skipped");
  assert_int_equal((gint64)weir_tensor_get(skipped, 0), 0);
  for (size_t i = 0; i < json_object_array_length(params); i++) {
    json_object *e = json_object_array_get_idx(params, i);
    const char *onnx = json_object_get_string(member(e, "name"));
    const WeirTensor *after =
        g_hash_table_lookup(state, container_of(fwd, onnx));
    g_autoptr(WeirTensor) sgd =
        load_npy(name, json_object_get_string(member(e, "sgd")));
    g_autoptr(WeirTensor) grad =
        load_npy(name, json_object_get_string(member(e, "grad")));
    g_autofree char *what = g_strdup_printf("%s %s after SGD", name, onnx);
    compare(what, after, sgd, 1e-6);
    /* the gradient, recovered from the step */
    const WeirTensor *p0 = before->pdata[i];
    g_autoptr(WeirTensor) g = weir_tensor_copy(after);
    gint64 n = weir_tensor_nbytes(g) / weir_dtype_size(g->dtype);
    for (gint64 j = 0; j < n; j++)
      weir_tensor_set(
          g, j, (weir_tensor_get(p0, j) - weir_tensor_get(after, j)) / o.lr);
    g_autofree char *gwhat = g_strdup_printf("%s gradient of %s", name, onnx);
    compare(gwhat, g, grad, 2e-5);
  }
  json_object_put(m);
}

static const char *const cases[] = {
    "bce",
    "bce_sum",
    "ce_nct_weights_smooth_sum",
    "ce_seq",
    "ce_seq_i32_ii_smooth",
    "ce_seq_none_ii",
    "ce_seq_weights_sum",
    "ce_weights_ii_smooth",
    "huber",
    "huber_none",
    "l1",
    "mse_sum",
    "nll_nct_sum",
    "nll_seq_weights_ii",
};

static void test_interpreted(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    check_case(cases[i], FALSE);
}

static void test_compiled(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    check_case(cases[i], TRUE);
}

/* Options that do not fit the output are errors naming the problem. */
static void test_errors(void **state) {
  (void)state;
  g_autofree char *model = case_file("ce_seq", "model.onnx");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) fwd = weir_onnx_import(model, NULL, &error);
  assert_non_null(fwd);
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.class_axis = 3;
  WeirGraph *p = weir_train_graph(fwd, &o, &error);
  assert_null(p);
  assert_non_null(strstr(error->message, "class axis 3 is outside"));
  g_clear_error(&error);
  weir_train_options_init(&o);
  o.class_axis = -1;
  static const double w[] = {1, 2, 3};
  o.class_weights = w;
  o.n_class_weights = 3;
  assert_null(weir_train_graph(fwd, &o, &error));
  assert_non_null(strstr(error->message, "3 class weights given for 5"));
  g_clear_error(&error);
  weir_train_options_init(&o);
  o.loss = WEIR_LOSS_NLL;
  o.label_smoothing = 0.1;
  assert_null(weir_train_graph(fwd, &o, &error));
  assert_non_null(strstr(error->message, "label smoothing"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_interpreted),
      cmocka_unit_test(test_compiled),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
