/* test-train-params.c — which containers a training program trains.
 *
 *  - The ONNX importer records the initializer each constant came from
 *    (WeirContainer.initializer), Constant node outputs get none; the
 *    record survives JSON and workspaces.
 *  - The default rule: the float initializers, not those named like an
 *    exporter's folded node output ("/scope/..."); a learned rank-0
 *    initializer (tests/core/data/scalar-param.onnx) is trained, with a
 *    correct gradient under SGD and a working Adam update; a program that
 *    records no initializer falls back to "more than one element".
 *  - --params / --freeze patterns; a bad pattern is an error naming it.
 *  - The sample models keep their parameters (test-train-step checks them
 *    against PyTorch).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "weir.h"

#include "tmpdir-fixture.h"

static int setup(void **state) {
  (void)state;
  return tmpdir_setup("weir-train-params");
}

static int teardown(void **state) {
  (void)state;
  return tmpdir_teardown();
}

static WeirGraph *import(const char *rel) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, rel, NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_onnx_import(path, NULL, &err);
  if (!g)
    fail_msg("%s", err->message);
  return g;
}

#define SCALAR "tests/core/data/scalar-param.onnx"

/* "a b c" from a parameter list */
static char *joined(char **names) {
  return g_strjoinv(" ", names);
}

static char *params_of(const WeirGraph *g, const char *params,
                       const char *freeze) {
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.params = params;
  o.freeze = freeze;
  g_autoptr(GError) err = NULL;
  g_auto(GStrv) p = weir_train_select_parameters(g, &o, &err);
  if (!p)
    fail_msg("%s", err->message);
  return joined(p);
}

static void test_importer_records_initializers(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = import("samples/models/transformer.onnx");
  guint n_init = 0, n_const = 0;
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->initializer) {
      n_init++;
      assert_non_null(c->initial);
    } else if (c->initial) {
      n_const++;
    }
  }
  assert_int_equal(n_init, 12); /* every initializer of the file */
  assert_true(n_const > 0);     /* the Constant nodes' outputs */
  const WeirContainer *w = weir_graph_container(g, "onnx__MatMul_123");
  assert_non_null(w);
  assert_string_equal(w->initializer, "onnx::MatMul_123");

  /* JSON keeps it (and a copy does) */
  g_autofree char *json = weir_graph_to_json(g);
  assert_non_null(strstr(json, "\"initializer\": \"onnx::MatMul_123\""));
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) back = weir_graph_from_json(json, -1, "t.json", &err);
  if (!back)
    fail_msg("%s", err->message);
  assert_string_equal(
      weir_graph_container(back, "onnx__MatMul_123")->initializer,
      "onnx::MatMul_123");
  g_autofree char *json2 = weir_graph_to_json(back);
  assert_string_equal(json, json2);

  /* a bad value names the key */
  g_autoptr(GString) bad = g_string_new(json);
  g_string_replace(bad, "\"initializer\": \"onnx::MatMul_123\"",
                   "\"initializer\": 7", 1);
  g_autoptr(WeirGraph) none =
      weir_graph_from_json(bad->str, -1, "bad.json", &err);
  assert_null(none);
  assert_non_null(strstr(err->message, "initializer"));
  g_clear_error(&err);

  /* the training program keeps the record on its parameter arguments, and
   * a workspace keeps the program's */
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.loss = WEIR_LOSS_MSE;
  g_autoptr(WeirGraph) t = weir_train_graph(g, &o, &err);
  if (!t)
    fail_msg("%s", err->message);
  const WeirContainer *tw = weir_graph_container(t, "onnx__MatMul_123");
  assert_false(tw->transient);
  assert_null(tw->initial);
  assert_string_equal(tw->initializer, "onnx::MatMul_123");
  g_autoptr(WeirSession) s = weir_session_new(t, "transformer", NULL, &err);
  if (!s)
    fail_msg("%s", err->message);
  g_autofree char *ws = g_build_filename(tmp_dir, "t.weir", NULL);
  assert_true(weir_workspace_save(s, ws, &err));
  g_autoptr(WeirSession) s2 = weir_workspace_open(ws, &err);
  if (!s2)
    fail_msg("%s", err->message);
  assert_string_equal(
      weir_graph_container(weir_session_current(s2), "onnx__MatMul_123")
          ->initializer,
      "onnx::MatMul_123");
}

static void test_default_rule(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = import(SCALAR);
  /* the rank-0 temperature is trained; the '/...' folded constant is not */
  g_autofree char *p = params_of(g, NULL, NULL);
  assert_string_equal(p, "fc_weight temperature");
  /* the same program without the record: more than one element */
  g_autoptr(WeirGraph) bare = weir_graph_copy(g);
  for (guint i = 0; i < bare->containers->len; i++)
    weir_container_set_initializer(g_ptr_array_index(bare->containers, i),
                                   NULL);
  g_autofree char *q = params_of(bare, NULL, NULL);
  assert_string_equal(q, "fc_weight _scale_Constant_output_0");

  /* the sample models: every parameter PyTorch has, as before */
  g_autoptr(WeirGraph) t = import("samples/models/transformer.onnx");
  g_auto(GStrv) tp = weir_train_parameters(t);
  assert_int_equal(g_strv_length(tp), 12);
  g_autoptr(WeirGraph) r = import("samples/models/resnet.onnx");
  g_auto(GStrv) rp = weir_train_parameters(r);
  /* conv + 4 convs + fc (weight, bias) + 5 batch norms x (weight, bias);
   * the running statistics are updated, not trained */
  assert_int_equal(g_strv_length(rp), 1 + 4 + 2 + 10);
  for (guint i = 0; rp[i]; i++)
    assert_null(strstr(rp[i], "running"));
}

static void test_params_and_freeze(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = import("samples/models/mlp.onnx");
  g_autofree char *all = params_of(g, NULL, NULL);
  assert_string_equal(all, "fc1_weight fc1_bias fc2_weight fc2_bias "
                           "fc3_weight fc3_bias");
  /* patterns match the ONNX name too ("fc1.weight") */
  g_autofree char *frozen = params_of(g, NULL, "bias$|^fc1\\.");
  assert_string_equal(frozen, "fc2_weight fc3_weight");
  g_autofree char *only = params_of(g, "fc3", NULL);
  assert_string_equal(only, "fc3_weight fc3_bias");
  g_autofree char *both = params_of(g, "fc3", "weight");
  assert_string_equal(both, "fc3_bias");

  /* --params may pick a constant the default leaves out */
  g_autoptr(WeirGraph) s = import(SCALAR);
  g_autofree char *folded = params_of(s, "Constant", NULL);
  assert_string_equal(folded, "_scale_Constant_output_0");

  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.freeze = "(";
  g_autoptr(GError) err = NULL;
  g_auto(GStrv) none = weir_train_select_parameters(g, &o, &err);
  assert_null(none);
  assert_non_null(strstr(err->message, "--freeze '('"));
  g_clear_error(&err);
  g_autoptr(WeirGraph) t = weir_train_graph(g, &o, &err);
  assert_null(t);
  g_clear_error(&err);
  o.freeze = ".";
  g_autoptr(WeirGraph) t2 = weir_train_graph(g, &o, &err);
  assert_null(t2);
  assert_non_null(strstr(err->message, "no trainable parameter"));
  g_clear_error(&err);

  /* frozen parameters stay constants in the training and evaluation
   * programs */
  o.freeze = "^fc1";
  g_autoptr(WeirGraph) t3 = weir_train_graph(g, &o, &err);
  if (!t3)
    fail_msg("%s", err->message);
  assert_non_null(weir_graph_container(t3, "fc1_weight")->initial);
  assert_null(weir_graph_container(t3, "fc2_weight")->initial);
  g_autoptr(WeirGraph) ev = weir_train_eval_graph(g, &o, &err);
  assert_non_null(weir_graph_container(ev, "fc1_weight")->initial);
  assert_null(weir_graph_container(ev, "fc2_weight")->initial);
}

/* One SGD step of the scalar model, interpreted, against the gradient
 * computed here: y = (x W + c) t, L = mean((y - target)^2). */
static void scalar_step(WeirOptimizer opt) {
  g_autoptr(WeirGraph) g = import(SCALAR);
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.loss = WEIR_LOSS_MSE;
  o.optimizer = opt;
  o.lr = 0.1;
  o.steps = 1;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) t = weir_train_graph(g, &o, &err);
  if (!t)
    fail_msg("%s", err->message);
  g_autoptr(WeirGraph) x = weir_graph_copy(t);
  if (!weir_expand_all(x, NULL, NULL, &err) || !weir_graph_validate(x, &err))
    fail_msg("%s", err->message);

  const gint64 B = 3;
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "batch", B);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  const float W[8] = {-0.4f, -0.275f, -0.15f, -0.025f,
                      0.1f,  0.225f,  0.35f,  0.475f};
  const float C[2] = {0.5f, -0.5f};
  float X[12], T[6];
  for (int i = 0; i < 12; i++)
    X[i] = (float)((i * 5) % 7) / 7 - 0.3f;
  for (int i = 0; i < 6; i++)
    T[i] = (float)i / 4 - 0.5f;
  for (guint i = 0; i < x->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(x->containers, i);
    if (c->transient)
      continue;
    gint64 shape[4];
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(c->shape->pdata[d], sym, &shape[d], NULL));
    WeirTensor *v = weir_tensor_new(c->dtype, c->shape->len, shape);
    memset(v->data, 0, weir_tensor_nbytes(v));
    if (!strcmp(c->name, "fc_weight"))
      memcpy(v->data, W, sizeof W);
    else if (!strcmp(c->name, "temperature"))
      ((float *)v->data)[0] = 1.5f;
    else if (!strcmp(c->name, "input"))
      memcpy(v->data, X, sizeof X);
    else if (!strcmp(c->name, "target"))
      memcpy(v->data, T, sizeof T);
    g_hash_table_insert(args, g_strdup(c->name), v);
  }
  if (!weir_interpret(x, sym, args, NULL, &err))
    fail_msg("%s", err->message);

  double dt = 0, loss = 0;
  for (int b = 0; b < B; b++)
    for (int j = 0; j < 2; j++) {
      double z = C[j];
      for (int k = 0; k < 4; k++)
        z += (double)X[b * 4 + k] * W[k * 2 + j];
      double y = z * 1.5, e = y - T[b * 2 + j];
      loss += e * e / (double)(B * 2);
      dt += 2 * e * z / (double)(B * 2);
    }
  const WeirTensor *lt = g_hash_table_lookup(args, "losses");
  assert_float_equal(((float *)lt->data)[0], loss, 1e-5);
  double got =
      ((float *)((WeirTensor *)g_hash_table_lookup(args, "temperature"))
           ->data)[0];
  /* SGD: t - lr g; Adam's first step: t - lr sign(g) (|g| >> eps) */
  double want = opt == WEIR_OPTIMIZER_SGD ? 1.5 - 0.1 * dt
                                          : 1.5 - 0.1 * (dt > 0 ? 1 : -1);
  print_message("temperature: gradient %.6f, after the step %.6f (want "
                "%.6f)\n",
                dt, got, want);
  assert_true(fabs(dt) > 1e-3);
  assert_float_equal(got, want, 1e-5);
  /* the folded constant did not move: it is not an argument */
  assert_null(g_hash_table_lookup(args, "_scale_Constant_output_0"));
}

static void test_scalar_sgd(void **state) {
  (void)state;
  scalar_step(WEIR_OPTIMIZER_SGD);
}

static void test_scalar_adam(void **state) {
  (void)state;
  scalar_step(WEIR_OPTIMIZER_ADAM);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_importer_records_initializers),
      cmocka_unit_test(test_default_rule),
      cmocka_unit_test(test_params_and_freeze),
      cmocka_unit_test(test_scalar_sgd),
      cmocka_unit_test(test_scalar_adam),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
