/* test-prune.c — the tier-2 transformation `prune` on the digits MLP
 * (samples/models/digits_mlp.onnx: Gemm 64x64, Relu, Gemm 10x64):
 *
 *  - unstructured, per tensor: each weight gets exactly round(S x count)
 *    zeros, the smallest magnitudes, biases untouched;
 *  - global: one threshold over both weights, the total count exact;
 *  - exclude: a matching weight is left alone; excluding all is refused;
 *  - fine-tuning keeps the zeros: the training program of a pruned model
 *    with keep_zeros has a u8 mask per pruned parameter and a Pointwise
 *    after the update, and after two interpreted SGD steps the zeros are
 *    where they were (without keep_zeros they are not);
 *  - structured (channels): on the MLP and the digits CNN (Conv, Relu,
 *    MaxPool, Flatten, Gemm, Relu, Gemm) the shapes shrink, the bytes and
 *    FLOPs drop, and the result computes what the dense model computes
 *    with the removed channels' weights and biases set to 0 (the channels
 *    ranked here by their L1 norms); on ResNet the residual Add is refused
 *    with a reason naming it.
 */
#include <glib/gstdio.h>
#include <math.h>

#include "tier2-check.h"
#include "weir.h"

static const WeirTransformInfo *info(void) {
  return t2_lookup("prune");
}

static WeirTensor *data_of(const WeirGraph *g, const char *initializer) {
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (g_strcmp0(c->initializer, initializer) != 0)
      continue;
    gint64 shape[4] = {0};
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_is_const(c->shape->pdata[d], &shape[d]));
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    gsize size = 0;
    const void *p = g_bytes_get_data(c->initial, &size);
    assert_int_equal(size, weir_tensor_nbytes(t));
    memcpy(t->data, p, size);
    return t;
  }
  fail_msg("no initializer '%s'", initializer);
  return NULL;
}

static gint64 zeros(const WeirTensor *t) {
  gint64 z = 0;
  for (gint64 i = 0; i < t->count; i++)
    z += weir_tensor_get(t, i) == 0;
  return z;
}

/* Largest original magnitude among the zeroed elements and smallest among
 * the kept ones, accumulated over calls. */
static void magnitudes(const WeirTensor *before, const WeirTensor *after,
                       double *max_zeroed, double *min_kept) {
  for (gint64 i = 0; i < before->count; i++) {
    double a = fabs(weir_tensor_get(before, i));
    if (weir_tensor_get(after, i) == 0)
      *max_zeroed = MAX(*max_zeroed, a);
    else {
      *min_kept = MIN(*min_kept, a);
      assert_true(weir_tensor_get(after, i) == weir_tensor_get(before, i));
    }
  }
}

static WeirGraph *pruned_model(const char *model, const char *const *params) {
  WeirGraph *g = t2_import_model(model);
  g_autoptr(GArray) sites = t2_sites(info(), g);
  assert_int_equal(sites->len, 1);
  t2_apply(g, info(), &g_array_index(sites, WeirSite, 0), params, NULL, NULL);
  return g;
}

static WeirGraph *pruned(const char *const *params) {
  return pruned_model("digits_mlp", params);
}

static void test_per_tensor(void **state) {
  (void)state;
  g_autoptr(WeirGraph) before = t2_import_model("digits_mlp");
  const char *params[] = {"sparsity=0.8", NULL};
  g_autoptr(WeirGraph) g = pruned(params);
  static const char *const weights[] = {"fc1.weight", "fc2.weight"};
  for (guint k = 0; k < G_N_ELEMENTS(weights); k++) {
    g_autoptr(WeirTensor) b = data_of(before, weights[k]);
    g_autoptr(WeirTensor) a = data_of(g, weights[k]);
    assert_int_equal(zeros(b), 0);
    assert_int_equal(zeros(a), llround(0.8 * (double)a->count));
    double max_zeroed = 0, min_kept = INFINITY;
    magnitudes(b, a, &max_zeroed, &min_kept);
    assert_true(max_zeroed <= min_kept);
  }
  /* 3277 of 4096 and 512 of 640 */
  g_autoptr(WeirTensor) w1 = data_of(g, "fc1.weight");
  assert_int_equal(zeros(w1), 3277);
  static const char *const biases[] = {"fc1.bias", "fc2.bias"};
  for (guint k = 0; k < G_N_ELEMENTS(biases); k++) {
    g_autoptr(WeirTensor) b = data_of(before, biases[k]);
    g_autoptr(WeirTensor) a = data_of(g, biases[k]);
    assert_memory_equal(a->data, b->data, weir_tensor_nbytes(a));
  }
  /* shapes unchanged: the dense program moves what it moved */
  g_autoptr(GHashTable) bind = t2_bindings("batch=3");
  assert_int_equal(t2_bytes(g, bind), t2_bytes(before, bind));
}

static void test_global(void **state) {
  (void)state;
  g_autoptr(WeirGraph) before = t2_import_model("digits_mlp");
  const char *params[] = {"sparsity=0.8", "scope=global", NULL};
  g_autoptr(WeirGraph) g = pruned(params);
  g_autoptr(WeirTensor) b1 = data_of(before, "fc1.weight");
  g_autoptr(WeirTensor) b2 = data_of(before, "fc2.weight");
  g_autoptr(WeirTensor) a1 = data_of(g, "fc1.weight");
  g_autoptr(WeirTensor) a2 = data_of(g, "fc2.weight");
  assert_int_equal(zeros(a1) + zeros(a2), llround(0.8 * (4096 + 640)));
  double max_zeroed = 0, min_kept = INFINITY;
  magnitudes(b1, a1, &max_zeroed, &min_kept);
  magnitudes(b2, a2, &max_zeroed, &min_kept);
  assert_true(max_zeroed <= min_kept);
  /* one threshold: the layers keep different fractions */
  assert_int_not_equal(zeros(a1) * 640, zeros(a2) * 4096);
}

static void test_exclude(void **state) {
  (void)state;
  g_autoptr(WeirGraph) before = t2_import_model("digits_mlp");
  const char *params[] = {"sparsity=0.5", "exclude=^fc2\\.", NULL};
  g_autoptr(WeirGraph) g = pruned(params);
  g_autoptr(WeirTensor) a1 = data_of(g, "fc1.weight");
  g_autoptr(WeirTensor) a2 = data_of(g, "fc2.weight");
  assert_int_equal(zeros(a1), 2048);
  assert_int_equal(zeros(a2), 0);

  const char *all[] = {"exclude=weight", NULL};
  WeirSite site = {.state = 0, .n_nodes = 0};
  g_autofree char *reason = t2_reason(info(), before, &site, all);
  assert_non_null(strstr(reason, "no weight to prune"));
  const char *bad[] = {"exclude=(", NULL};
  g_autofree char *reason2 = t2_reason(info(), before, &site, bad);
  assert_non_null(strstr(reason2, "exclude pattern '('"));
}

/* Two interpreted SGD steps of the pruned model's training program;
 * returns fc1's weight afterwards. */
static WeirTensor *train_two_steps(const WeirGraph *fwd, const char *keep,
                                   guint *n_masks) {
  WeirTrainOptions o;
  weir_train_options_init(&o);
  o.optimizer = WEIR_OPTIMIZER_SGD;
  o.lr = 0.5;
  o.steps = 2;
  o.keep_zeros = keep;
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) t = weir_train_graph(fwd, &o, &err);
  if (!t)
    fail_msg("%s", err->message);
  *n_masks = 0;
  for (guint i = 0; i < t->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(t->containers, i);
    if (c->dtype == WEIR_DTYPE_U8 && c->initial && strstr(c->name, "_mask"))
      (*n_masks)++;
  }
  g_autoptr(WeirGraph) x = weir_graph_copy(t);
  if (!weir_expand_all(x, NULL, NULL, &err) || !weir_graph_validate(x, &err))
    fail_msg("%s", err->message);
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "batch", 4);
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < x->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(x->containers, i);
    if (c->transient)
      continue;
    gint64 shape[4] = {0};
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(c->shape->pdata[d], sym, &shape[d], NULL));
    WeirTensor *v = weir_tensor_new(c->dtype, c->shape->len, shape);
    memset(v->data, 0, weir_tensor_nbytes(v));
    const WeirContainer *f = weir_graph_container(fwd, c->name);
    if (f && f->initial) {
      assert_int_equal(g_bytes_get_size(f->initial), weir_tensor_nbytes(v));
      memcpy(v->data, g_bytes_get_data(f->initial, NULL),
             weir_tensor_nbytes(v));
    } else if (!strcmp(c->name, "target")) {
      for (gint64 k = 0; k < v->count; k++)
        weir_tensor_set(v, k, (double)(k * 3 % 10));
    } else if (!strcmp(c->name, "input")) {
      weir_tensor_fill_random(v, 7);
    }
    g_hash_table_insert(args, g_strdup(c->name), v);
  }
  if (!weir_interpret(x, sym, args, NULL, &err))
    fail_msg("%s", err->message);
  const WeirTensor *step = g_hash_table_lookup(args, "step");
  assert_int_equal(weir_tensor_get(step, 0), 2);
  for (guint i = 0; i < fwd->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(fwd->containers, i);
    if (g_strcmp0(c->initializer, "fc1.weight") == 0)
      return weir_tensor_copy(g_hash_table_lookup(args, c->name));
  }
  fail_msg("no fc1.weight");
  return NULL;
}

static void test_mask_kept_by_training(void **state) {
  (void)state;
  const char *params[] = {"sparsity=0.6", NULL};
  g_autoptr(WeirGraph) g = pruned(params);
  g_autoptr(WeirTensor) w0 = data_of(g, "fc1.weight");
  guint n_masks = 0;
  g_autoptr(WeirTensor) kept = train_two_steps(g, "weight", &n_masks);
  assert_int_equal(n_masks, 2);
  gint64 moved = 0;
  for (gint64 i = 0; i < w0->count; i++) {
    if (weir_tensor_get(w0, i) == 0)
      assert_true(weir_tensor_get(kept, i) == 0);
    else
      moved += weir_tensor_get(kept, i) != weir_tensor_get(w0, i);
  }
  assert_true(moved > 0); /* the unpruned weights did train */
  assert_int_equal(zeros(kept), zeros(w0));
  /* without the mask, the gradient moves pruned weights */
  g_autoptr(WeirTensor) free_ = train_two_steps(g, NULL, &n_masks);
  assert_int_equal(n_masks, 0);
  assert_true(zeros(free_) < zeros(w0));
}

/* The dense reference: g with output channels of each listed weight
 * (output channel = axis 0, contiguous) and its bias set to 0 where their
 * L1 norms are the `remove` smallest. */
static void zero_channels(WeirGraph *g, const char *weight, const char *bias,
                          gint64 remove) {
  g_autoptr(WeirTensor) w = data_of(g, weight);
  g_autoptr(WeirTensor) b = data_of(g, bias);
  gint64 m = w->shape[0], per = w->count / m;
  g_autofree double *norm = g_new0(double, m);
  for (gint64 i = 0; i < w->count; i++)
    norm[i / per] += fabs(weir_tensor_get(w, i));
  for (gint64 r = 0; r < remove; r++) {
    gint64 best = -1;
    for (gint64 c = 0; c < m; c++)
      if (norm[c] >= 0 && (best < 0 || norm[c] < norm[best]))
        best = c;
    norm[best] = -1;
    for (gint64 i = 0; i < per; i++)
      weir_tensor_set(w, best * per + i, 0);
    weir_tensor_set(b, best, 0);
  }
  const char *names[] = {weight, bias};
  WeirTensor *ts[] = {w, b};
  for (guint k = 0; k < 2; k++)
    for (guint i = 0; i < g->containers->len; i++) {
      WeirContainer *c = g_ptr_array_index(g->containers, i);
      if (g_strcmp0(c->initializer, names[k]) == 0) {
        g_autoptr(GBytes) bytes =
            g_bytes_new(ts[k]->data, weir_tensor_nbytes(ts[k]));
        weir_container_set_initial(c, bytes);
      }
    }
}

static gint64 dim0(const WeirGraph *g, const char *initializer, guint d) {
  g_autoptr(WeirTensor) t = data_of(g, initializer);
  return t->shape[d];
}

static void test_channels_mlp(void **state) {
  (void)state;
  g_autoptr(WeirGraph) dense = t2_import_model("digits_mlp");
  const char *params[] = {"sparsity=0.5", "structure=channels", NULL};
  g_autoptr(WeirGraph) g = pruned(params);
  assert_int_equal(dim0(g, "fc1.weight", 0), 32);
  assert_int_equal(dim0(g, "fc1.weight", 1), 64);
  assert_int_equal(dim0(g, "fc1.bias", 0), 32);
  assert_int_equal(dim0(g, "fc2.weight", 0), 10); /* the output layer */
  assert_int_equal(dim0(g, "fc2.weight", 1), 32);
  g_autoptr(GHashTable) bind = t2_bindings("batch=3");
  g_autoptr(WeirGraph) expect = weir_graph_copy(dense);
  zero_channels(expect, "fc1.weight", "fc1.bias", 32);
  t2_assert_same(expect, g, bind, 1e-5);
  /* 4096 + 64 + 640 weights before, 2048 + 32 + 320 after (x 4 bytes),
   * and the hidden activations halve */
  assert_true(t2_bytes(g, bind) < t2_bytes(dense, bind));
  WeirSite site = {.state = 0, .n_nodes = 0};
  WeirApplyReport report;
  g_autoptr(WeirGraph) again = weir_graph_copy(dense);
  t2_apply(again, info(), &site, params, bind, &report);
  assert_true(report.flops_after.known && report.flops_before.known);
  assert_true(report.flops_after.value < report.flops_before.value);
  weir_apply_report_clear(&report);
}

static void test_channels_cnn(void **state) {
  (void)state;
  g_autoptr(WeirGraph) dense = t2_import_model("digits_cnn");
  const char *params[] = {"sparsity=0.5", "structure=channels", NULL};
  g_autoptr(WeirGraph) g = pruned_model("digits_cnn", params);
  assert_int_equal(dim0(g, "conv.weight", 0), 4);
  assert_int_equal(dim0(g, "conv.bias", 0), 4);
  /* Flatten: 8 channels x 4 x 4 = 128 features, 4 x 16 = 64 left */
  assert_int_equal(dim0(g, "fc1.weight", 0), 16);
  assert_int_equal(dim0(g, "fc1.weight", 1), 64);
  assert_int_equal(dim0(g, "fc2.weight", 1), 16);
  g_autoptr(GHashTable) bind = t2_bindings("batch=2");
  g_autoptr(WeirGraph) expect = weir_graph_copy(dense);
  zero_channels(expect, "conv.weight", "conv.bias", 4);
  zero_channels(expect, "fc1.weight", "fc1.bias", 16);
  t2_assert_same(expect, g, bind, 1e-5);
}

/* The structured CNN written back to ONNX with new initializer shapes
 * (weir_onnx_save_with_metadata) imports and computes what the pruned
 * program computes; the metadata entry reads back. */
static void test_channels_onnx(void **state) {
  (void)state;
  const char *params[] = {"sparsity=0.5", "structure=channels", NULL};
  g_autoptr(WeirGraph) g = pruned_model("digits_cnn", params);
  g_autoptr(GHashTable) values = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  static const char *const names[] = {"conv.weight", "conv.bias", "fc1.weight",
                                      "fc1.bias", "fc2.weight"};
  for (guint k = 0; k < G_N_ELEMENTS(names); k++)
    g_hash_table_insert(values, (gpointer)names[k], data_of(g, names[k]));
  g_autoptr(GHashTable) meta = g_hash_table_new(g_str_hash, g_str_equal);
  g_hash_table_insert(meta, "weir.pruned", "conv.weight");
  g_autofree char *src = g_build_filename(WEIR_SRCDIR, "samples", "models",
                                          "digits_cnn.onnx", NULL);
  g_autofree char *dir = g_dir_make_tmp("weir-prune-XXXXXX", NULL);
  g_autofree char *out = g_build_filename(dir, "cnn50.onnx", NULL);
  g_autoptr(GError) err = NULL;
  if (!weir_onnx_save_with_metadata(src, values, meta, out, &err))
    fail_msg("%s", err->message);
  /* the plain write-back still refuses a new shape */
  g_autofree char *out2 = g_build_filename(dir, "refused.onnx", NULL);
  assert_false(weir_onnx_save_with_initializers(src, values, out2, NULL));
  g_autoptr(WeirOnnxModel) m = weir_onnx_model_load(out, &err);
  assert_non_null(m);
  assert_string_equal(weir_onnx_model_metadata(m, "weir.pruned"),
                      "conv.weight");
  assert_null(weir_onnx_model_metadata(m, "other"));
  g_autoptr(WeirGraph) back = weir_onnx_import(out, NULL, &err);
  if (!back)
    fail_msg("%s", err->message);
  g_autoptr(GHashTable) bind = t2_bindings("batch=2");
  t2_assert_same(g, back, bind, 1e-6);
  g_unlink(out);
  g_rmdir(dir);
}

static void test_channels_refused(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t2_import_model("resnet");
  const char *params[] = {"sparsity=0.5", "structure=channels", NULL};
  WeirSite site = {.state = 0, .n_nodes = 0};
  g_autofree char *reason = t2_reason(info(), g, &site, params);
  print_message("%s\n", reason);
  assert_non_null(strstr(reason, "Add '"));
  assert_non_null(strstr(reason, "residual"));
  /* the MLP's output layer alone has nothing to remove */
  g_autoptr(WeirGraph) mlp = t2_import_model("digits_mlp");
  const char *last[] = {"sparsity=0.5", "structure=channels", "exclude=fc1",
                        NULL};
  g_autofree char *reason2 = t2_reason(info(), mlp, &site, last);
  assert_non_null(strstr(reason2, "no layer has output channels"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_per_tensor),
      cmocka_unit_test(test_global),
      cmocka_unit_test(test_exclude),
      cmocka_unit_test(test_mask_kept_by_training),
      cmocka_unit_test(test_channels_mlp),
      cmocka_unit_test(test_channels_cnn),
      cmocka_unit_test(test_channels_onnx),
      cmocka_unit_test(test_channels_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
