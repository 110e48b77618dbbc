/* test-layernorm-fusion.c — a layer normalization spelled out as
 * ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul (and a bias Add),
 * as PyTorch exports nn.LayerNorm before opset 17, becoming one
 * LayerNormalization node: the site, the node's attributes and operands,
 * equal outputs (interpreter before and after), compiled code against the
 * interpreter, the sample transformer's two norms, and the refusals. */
#include <math.h>

#include "../core/runtime-fixture.h"
#include "tier2-check.h"
#include "weir-attr.h"
#include "weir-codegen.h"

static const WeirTransformInfo *info(void) {
  return t2_lookup("layernorm-fusion");
}

/* X [2, 5, 37] (normalized over the last axes from `axis`) -> the
 * spelled-out norm with scale W and (bias) B -> Y.  The scale is random
 * (not ones, which algebraic simplification would take out first). */
static WeirGraph *spelled(const char *axes_shape, const gint64 *axes,
                          guint n_axes, const char *row, gboolean bias,
                          guint *ids) {
  WeirState *s;
  WeirGraph *g = t2_graph("layernorm", &s);
  t2_array(g, "X", WEIR_DTYPE_F32, "2, 5, 37", FALSE);
  const char *tmp[] = {"M", "D", "P", "V", "A", "S", "N"};
  for (guint i = 0; i < G_N_ELEMENTS(tmp); i++)
    t2_array(g, tmp[i], WEIR_DTYPE_F32,
             i == 0 || (i >= 3 && i <= 5) ? axes_shape : "2, 5, 37", TRUE);
  t2_const_fill(g, "two", WEIR_DTYPE_F32, "", 2.0);
  t2_const_fill(g, "eps", WEIR_DTYPE_F32, "", 1e-5);
  t2_const_random(g, "W", WEIR_DTYPE_F32, row, 3);
  t2_array(g, "Y1", WEIR_DTYPE_F32, "2, 5, 37", bias);
  if (bias) {
    t2_const_random(g, "B", WEIR_DTYPE_F32, row, 4);
    t2_array(g, "Y", WEIR_DTYPE_F32, "2, 5, 37", FALSE);
  }
  struct {
    const char *op, *label, *in[3], *out;
  } nodes[] = {
      {"ReduceMean", "ln/ReduceMean", {"X"}, "M"},
      {"Sub", "ln/Sub", {"X", "M"}, "D"},
      {"Pow", "ln/Pow", {"D", "two"}, "P"},
      {"ReduceMean", "ln/ReduceMean_1", {"P"}, "V"},
      {"Add", "ln/Add", {"V", "eps"}, "A"},
      {"Sqrt", "ln/Sqrt", {"A"}, "S"},
      {"Div", "ln/Div", {"D", "S"}, "N"},
      {"Mul", "ln/Mul", {"W", "N"}, "Y1"},
      {"Add", "ln/Add_1", {"Y1", "B"}, "Y"},
  };
  for (guint i = 0; i < (bias ? 9u : 8u); i++) {
    const char *outs[] = {nodes[i].out, NULL};
    WeirNode *n = t2_op(g, s, nodes[i].op, nodes[i].label, nodes[i].in, outs);
    if (strcmp(nodes[i].op, "ReduceMean") == 0)
      weir_node_set_attr_ints(n, "axes", axes, n_axes);
    ids[i] = n->id;
  }
  t2_normalize(g);
  return g;
}

static const WeirNode *the_layernorm(const WeirGraph *g) {
  const WeirState *s = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_LIBRARY &&
        strcmp(n->op, "LayerNormalization") == 0)
      return n;
  }
  return NULL;
}

static void test_fuse(void **state) {
  (void)state;
  const gint64 axes[] = {-1};
  guint ids[9];
  g_autoptr(WeirGraph) g = spelled("2, 5, 1", axes, 1, "37", TRUE, ids);
  g_autoptr(GArray) sites = t2_sites(info(), g);
  assert_int_equal(sites->len, 1);
  WeirSite site = g_array_index(sites, WeirSite, 0);
  assert_int_equal(site.n_nodes, 8);
  for (guint k = 0; k < 8; k++)
    assert_int_equal(site.nodes[k], ids[k]);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  t2_apply(g, info(), &site, NULL, NULL, NULL);
  assert_int_equal(t2_count_ops(g, NULL), 1);
  const WeirNode *ln = the_layernorm(g);
  assert_non_null(ln);
  assert_string_equal(ln->label, "ln/LayerNormalization");
  assert_int_equal(weir_node_attr_int(ln, "axis", -9), 2);
  assert_true(fabs(weir_node_attr_float(ln, "epsilon", 0) - 1e-5) < 1e-12);
  /* the pattern's containers and constants are gone */
  const char *gone[] = {"M", "D", "P", "V", "A", "S", "N", "Y1", "two", "eps"};
  for (guint i = 0; i < G_N_ELEMENTS(gone); i++)
    assert_null(weir_graph_container(g, gone[i]));
  t2_assert_same(before, g, NULL, 1e-5);
}

/* Over the last two axes, no bias; compiled (the row kernel) against the
 * interpreter on the spelled-out program. */
static void test_two_axes_compiled(void **state) {
  (void)state;
  const gint64 axes[] = {1, 2};
  guint ids[9];
  g_autoptr(WeirGraph) g = spelled("2, 1, 1", axes, 2, "5, 37", FALSE, ids);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  assert_int_equal(t2_check_every_site(info(), g, NULL, 1e-5), 1);
  assert_int_equal(t2_apply_all(g, info(), NULL), 1);
  const WeirNode *ln = the_layernorm(g);
  assert_non_null(ln);
  assert_int_equal(weir_node_attr_int(ln, "axis", -9), 1);
  g_autoptr(GHashTable) ref = t2_run(before, NULL, 21);
  g_autoptr(GError) err = NULL;
  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  if (!src)
    fail_msg("%s", err->message);
  assert_non_null(strstr(src, "weir_layernorm_f32(X, W, NULL, Y1, "));
  Fixture *f = fixture_new();
  f->opts.flags = "-O2 -fopenmp -fPIC -shared";
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("%s", err->message);
  /* the interpreter's input and result on the spelled-out program */
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  g_hash_table_insert(args, g_strdup("X"),
                      weir_tensor_copy(g_hash_table_lookup(ref, "X")));
  const WeirTensor *y = g_hash_table_lookup(ref, "Y1");
  g_hash_table_insert(args, g_strdup("Y1"), weir_tensor_copy(y));
  for (int threads = 1; threads <= 2; threads++) {
    assert_true(weir_kernel_set_threads(k, threads, &err));
    WeirTensor *out = g_hash_table_lookup(args, "Y1");
    for (gint64 e = 0; e < out->count; e++)
      weir_tensor_set(out, e, 12345.0);
    if (!weir_kernel_run(k, NULL, args, &err))
      fail_msg("%s", err->message);
    if (!weir_tensor_allclose(out, y, 1e-5, 1e-5, NULL, &err))
      fail_msg("%d threads: %s", threads, err->message);
  }
  fixture_free(f);
}

static void test_rejections(void **state) {
  (void)state;
  const gint64 last[] = {-1}, middle[] = {1};
  guint ids[9];
  /* the mean over a middle axis */
  g_autoptr(WeirGraph) g = spelled("2, 1, 37", middle, 1, "37", TRUE, ids);
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirSite site = t2_site(s, 8, ids);
  g_autofree char *r1 = t2_reason(info(), g, &site, NULL);
  assert_string_equal(r1, "ReduceMean 'ln/ReduceMean' does not reduce "
                          "trailing axes only");
  /* a cube, not a square */
  g_autoptr(WeirGraph) h = spelled("2, 5, 1", last, 1, "37", TRUE, ids);
  s = g_ptr_array_index(h->states, 0);
  site = t2_site(s, 8, ids);
  WeirContainer *two = weir_graph_container(h, "two");
  static const float three = 3.0f;
  g_autoptr(GBytes) b3 = g_bytes_new_static(&three, sizeof three);
  weir_container_set_initial(two, b3);
  g_autofree char *r2 = t2_reason(info(), h, &site, NULL);
  assert_string_equal(r2, "Pow 'ln/Pow' does not square");
  /* the mean also read elsewhere: no site */
  g_autoptr(WeirGraph) k = spelled("2, 5, 1", last, 1, "37", TRUE, ids);
  s = g_ptr_array_index(k->states, 0);
  t2_array(k, "R", WEIR_DTYPE_F32, "2, 5, 1", FALSE);
  const char *ri[] = {"M", NULL}, *ro[] = {"R", NULL};
  t2_op(k, s, "Relu", "relu", ri, ro);
  t2_normalize(k);
  assert_int_equal(t2_count_legal(info(), k), 0);
  /* keepdims 0 */
  g_autoptr(WeirGraph) m = spelled("2, 5, 1", last, 1, "37", TRUE, ids);
  s = g_ptr_array_index(m->states, 0);
  site = t2_site(s, 8, ids);
  weir_node_set_attr_int(weir_state_node(s, ids[3]), "keepdims", 0);
  g_autofree char *r4 = t2_reason(info(), m, &site, NULL);
  assert_string_equal(r4, "ReduceMean 'ln/ReduceMean_1' drops the reduced "
                          "dimensions");
}

/* The sample transformer's two norms (norm1, norm2) are spelled out: both
 * fuse, and the model still computes PyTorch's output; no other sample
 * or model has a site. */
static void test_models(void **state) {
  (void)state;
  for (guint i = 0; i < t2_n_models; i++) {
    g_autoptr(WeirGraph) g = t2_import_model(t2_models[i].name);
    gboolean tr = strcmp(t2_models[i].name, "transformer") == 0;
    g_autoptr(GHashTable) b = t2_bindings(t2_models[i].symbols);
    assert_int_equal(t2_check_every_site(info(), g, b, 1e-4), tr ? 2 : 0);
    if (tr) {
      assert_int_equal(t2_apply_all(g, info(), b), 2);
      assert_int_equal(t2_count_ops(g, "LayerNormalization"), 2);
      assert_int_equal(t2_count_ops(g, "ReduceMean"), 0);
      t2_assert_reference(g, "transformer", b, 1e-4);
    }
  }
  for (guint i = 0; i < t2_n_samples; i++) {
    g_autoptr(WeirGraph) g = t2_load_sample(t2_samples[i].file);
    assert_int_equal(t2_n_sites(info(), g), 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_fuse),
      cmocka_unit_test(test_two_axes_compiled),
      cmocka_unit_test(test_rejections),
      cmocka_unit_test(test_models),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
