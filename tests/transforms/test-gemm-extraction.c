/* test-gemm-extraction.c — the gemm-extraction transformation (tier 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "tier1-check.h"
#include "weir-analysis.h"
#include "weir-expand.h"
#include "weir-ops.h"
#include "weir-validate.h"

#define SEQ WEIR_SCHEDULE_SEQUENTIAL

/* A program with one library node `op` reading X0, X1, ... (shapes; NULL
 * omits an optional input) and writing Y, then expanded (pure) unless
 * keep. */
static WeirGraph *op_program(const char *op, const char *const *in_shapes,
                             guint n_in, const char *out_shape,
                             void (*attrs)(WeirNode *), gboolean keep) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new("op");
  WeirState *s = weir_graph_add_state(g, "main");
  g_autoptr(GPtrArray) conns = g_ptr_array_new_with_free_func(g_free);
  for (guint k = 0; k < n_in; k++)
    if (in_shapes[k])
      g_ptr_array_add(conns, g_strdup_printf("in%u", k));
  g_ptr_array_add(conns, NULL);
  const char *outs[] = {"out0", NULL};
  WeirNode *lib = weir_state_add_library(
      g, s, "op", op, (const char *const *)conns->pdata, outs);
  if (attrs)
    attrs(lib);
  for (guint k = 0; k < n_in; k++) {
    if (!in_shapes[k])
      continue;
    g_autofree char *name = g_strdup_printf("X%u", k);
    g_autofree char *conn = g_strdup_printf("in%u", k);
    WeirContainer *c = weir_graph_add_array(g, name, WEIR_DTYPE_F32,
                                            in_shapes[k], FALSE, &err);
    g_autoptr(WeirSubset) full = weir_container_full_subset(c);
    g_autofree char *sub = weir_subset_to_string(full);
    WeirNode *a = weir_state_add_access(g, s, name);
    assert_non_null(weir_state_add_memlet(g, s, a->id, NULL, lib->id, conn,
                                          name, sub, &err));
  }
  WeirContainer *y =
      weir_graph_add_array(g, "Y", WEIR_DTYPE_F32, out_shape, FALSE, &err);
  g_autoptr(WeirSubset) full = weir_container_full_subset(y);
  g_autofree char *sub = weir_subset_to_string(full);
  WeirNode *ya = weir_state_add_access(g, s, "Y");
  assert_non_null(weir_state_add_memlet(g, s, lib->id, "out0", ya->id, NULL,
                                        "Y", sub, &err));
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("%s", err->message);
  if (!keep && !weir_expand_all(g, NULL, NULL, &err))
    fail_msg("expand: %s", err->message);
  if (!weir_graph_validate(g, &err))
    fail_msg("%s", err->message);
  return g;
}

static WeirNode *only_library(const WeirGraph *g) {
  WeirNode *found = NULL;
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY) {
        assert_null(found);
        found = n;
      }
    }
  }
  assert_non_null(found);
  return found;
}

static guint count_kind(const WeirGraph *g, WeirNodeKind kind) {
  guint n = 0;
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++)
      n += ((WeirNode *)g_ptr_array_index(s->nodes, k))->kind == kind;
  }
  return n;
}

/* The single site of g, applied; returns the library node. */
static WeirNode *extract(WeirGraph *g) {
  g_autoptr(GArray) sites = t1_sites(g, "gemm-extraction");
  assert_int_equal(sites->len, 1);
  WeirSite site = g_array_index(sites, WeirSite, 0);
  t1_apply(g, "gemm-extraction", &site, NULL);
  return only_library(g);
}

static gint64 node_flops(const WeirGraph *g, guint node) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, NULL, &err);
  const WeirNodeCost *c = weir_analysis_node(a, node);
  assert_non_null(c);
  assert_true(c->flops.known);
  return c->flops.value;
}

/* FLOPs of a library node from the operator registry. */
static gint64 registry_flops(const WeirGraph *g, const WeirNode *lib) {
  WeirState *s = NULL;
  weir_graph_node(g, lib->id, &s);
  const WeirOpInfo *info = weir_op_lookup(lib->op);
  assert_non_null(info);
  g_autoptr(WeirExpr) f = info->flops(g, s, lib);
  gint64 v;
  assert_true(weir_expr_is_const(f, &v));
  return v;
}

static void test_sites(void **state) {
  (void)state;
  g_autoptr(WeirGraph) mm = t1_load_sample("matmul.json");
  g_autoptr(GArray) s1 = t1_sites(mm, "gemm-extraction");
  assert_int_equal(s1->len, 1);
  assert_int_equal(g_array_index(s1, WeirSite, 0).nodes[0], 15);
  g_autoptr(WeirGraph) sm = t1_load_sample("softmax.json");
  g_autoptr(GArray) s2 = t1_sites(sm, "gemm-extraction");
  assert_int_equal(s2->len, 0);
  g_autoptr(WeirGraph) va = t1_load_sample("vector_add.json");
  g_autoptr(GArray) s3 = t1_sites(va, "gemm-extraction");
  assert_int_equal(s3->len, 0);
}

/* The expansion of a MatMul comes back as the MatMul it was: the zero init
 * goes, the library node writes Y, data movement is the library node's. */
static void test_matmul_roundtrip(void **state) {
  (void)state;
  const char *shapes[] = {"24, 16", "16, 40"};
  g_autoptr(WeirGraph) lib =
      op_program("MatMul", shapes, 2, "24, 40", NULL, TRUE);
  g_autoptr(WeirGraph) g =
      op_program("MatMul", shapes, 2, "24, 40", NULL, FALSE);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirNode *mac = t1_map_by_label(g, "op_mac", NULL);
  gint64 mac_flops = node_flops(g, mac->id);
  WeirNode *n = extract(g);
  assert_string_equal(n->op, "MatMul");
  assert_string_equal(n->label, "op");
  assert_int_equal(count_kind(g, WEIR_NODE_MAP_ENTRY), 0);
  assert_int_equal(count_kind(g, WEIR_NODE_ACCESS), 3);
  assert_int_equal(registry_flops(g, n), mac_flops);
  assert_int_equal(mac_flops, 2 * 24 * 40 * 16);
  assert_int_equal(t1_total_bytes(g, NULL), t1_total_bytes(lib, NULL));
  assert_true(t1_total_bytes(g, NULL) < t1_total_bytes(before, NULL) / 10);
  t1_assert_same_outputs(before, g, NULL, 1e-5);
}

static void gemm_attrs(WeirNode *n) {
  weir_node_set_attr_float(n, "alpha", 0.5);
  weir_node_set_attr_float(n, "beta", 2.0);
  weir_node_set_attr_int(n, "transA", 1);
  weir_node_set_attr_int(n, "transB", 1);
}

/* Gemm with alpha, beta, both transposes and a broadcast bias. */
static void test_gemm(void **state) {
  (void)state;
  const char *shapes[] = {"16, 12", "20, 16", "20"};
  g_autoptr(WeirGraph) g =
      op_program("Gemm", shapes, 3, "12, 20", gemm_attrs, FALSE);
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  WeirNode *mac = t1_map_by_label(g, "op_mac", NULL);
  gint64 mac_flops = node_flops(g, mac->id);
  WeirNode *n = extract(g);
  assert_string_equal(n->op, "Gemm");
  assert_true(weir_node_attr(n, "alpha")->f == 0.5);
  assert_true(weir_node_attr(n, "beta")->f == 2.0);
  assert_int_equal(weir_node_attr(n, "transA")->i, 1);
  assert_int_equal(weir_node_attr(n, "transB")->i, 1);
  assert_true(weir_node_has_in_conn(n, "in2"));
  assert_int_equal(count_kind(g, WEIR_NODE_MAP_ENTRY), 0);
  /* alpha * a * b counts one more multiply per point than Gemm's 2*M*N*K;
   * Gemm adds M*N for C */
  assert_int_equal(registry_flops(g, n), mac_flops - 12 * 20 * 16 + 12 * 20);
  t1_assert_same_outputs(before, g, NULL, 1e-5);
}

/* Batched products: 3-D x 2-D (a linear layer on a sequence) and 3-D x
 * 3-D. */
static void test_batched(void **state) {
  (void)state;
  const char *lin[] = {"2, 8, 32", "32, 96"};
  g_autoptr(WeirGraph) g1 =
      op_program("MatMul", lin, 2, "2, 8, 96", NULL, FALSE);
  g_autoptr(WeirGraph) b1 = weir_graph_copy(g1);
  WeirNode *n1 = extract(g1);
  assert_string_equal(n1->op, "MatMul");
  t1_assert_same_outputs(b1, g1, NULL, 1e-5);
  const char *bmm[] = {"4, 8, 5", "4, 5, 6"};
  g_autoptr(WeirGraph) g2 =
      op_program("MatMul", bmm, 2, "4, 8, 6", NULL, FALSE);
  g_autoptr(WeirGraph) b2 = weir_graph_copy(g2);
  extract(g2);
  t1_assert_same_outputs(b2, g2, NULL, 1e-5);
  /* broadcast of a size-1 batch dimension */
  const char *bc[] = {"1, 8, 5", "3, 5, 6"};
  g_autoptr(WeirGraph) g3 = op_program("MatMul", bc, 2, "3, 8, 6", NULL, FALSE);
  g_autoptr(WeirGraph) b3 = weir_graph_copy(g3);
  extract(g3);
  t1_assert_same_outputs(b3, g3, NULL, 1e-5);
}

/* The JSON sample initializes C in an earlier state: the product goes to a
 * transient that is added into C. */
static void test_accumulate(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t1_load_sample("matmul.json");
  g_autoptr(WeirGraph) before = weir_graph_copy(g);
  gint64 mac_flops = node_flops(g, 15);
  WeirNode *n = extract(g);
  assert_string_equal(n->op, "MatMul");
  assert_string_equal(n->label, "matmul");
  assert_non_null(weir_graph_container(g, "matmul_product"));
  assert_true(weir_graph_container(g, "matmul_product")->transient);
  assert_non_null(t1_map_by_label(g, "matmul_accumulate", NULL));
  assert_int_equal(registry_flops(g, n), mac_flops);
  /* A and B once, the product written and read, C accumulated, plus the
   * init state */
  gint64 want = (64 * 32 + 32 * 48 + 4 * 64 * 48) * 4;
  assert_int_equal(t1_total_bytes(g, NULL), want);
  assert_int_equal(t1_total_bytes(before, NULL),
                   (3 * 64 * 48 * 32 + 64 * 48) * 4);
  t1_assert_same_outputs(before, g, NULL, 1e-5);
}

static void conv_1x1(WeirNode *n) {
  gint64 k[] = {1, 1};
  weir_node_set_attr_ints(n, "kernel_shape", k, 2);
}

static void conv_3x3(WeirNode *n) {
  gint64 k[] = {3, 3};
  weir_node_set_attr_ints(n, "kernel_shape", k, 2);
}

static void conv_3x3_padded(WeirNode *n) {
  gint64 k[] = {3, 3}, pads[] = {1, 1, 1, 1};
  weir_node_set_attr_ints(n, "kernel_shape", k, 2);
  weir_node_set_attr_ints(n, "pads", pads, 4);
}

static void test_reasons(void **state) {
  (void)state;
  const char *cs[] = {"2, 3, 8, 8", "4, 3, 3, 3"};
  g_autoptr(WeirGraph) c3 =
      op_program("Conv", cs, 2, "2, 4, 6, 6", conv_3x3, FALSE);
  WeirState *s = NULL;
  WeirNode *mac = t1_map_by_label(c3, "op_mac", &s);
  WeirSite site = t1_site(s->id, 1, mac->id);
  g_autofree char *r1 = t1_reason(c3, "gemm-extraction", &site, NULL);
  assert_contains(r1, "dimension 2 of 'X0' is indexed by 'k0 + o0', not by a "
                      "single map parameter");
  g_autoptr(WeirGraph) cp =
      op_program("Conv", cs, 2, "2, 4, 8, 8", conv_3x3_padded, FALSE);
  mac = t1_map_by_label(cp, "op_mac", &s);
  site = t1_site(s->id, 1, mac->id);
  g_autofree char *rp = t1_reason(cp, "gemm-extraction", &site, NULL);
  assert_contains(rp, "not a product of its two inputs");

  const char *c1s[] = {"2, 3, 8, 8", "4, 3, 1, 1"};
  g_autoptr(WeirGraph) c1 =
      op_program("Conv", c1s, 2, "2, 4, 8, 8", conv_1x1, FALSE);
  mac = t1_map_by_label(c1, "op_mac", &s);
  site = t1_site(s->id, 1, mac->id);
  g_autofree char *r2 = t1_reason(c1, "gemm-extraction", &site, NULL);
  assert_contains(r2, "the columns may span several dimensions, which needs "
                      "a reshape");

  /* a sum of products over two indices */
  guint st, e;
  T1Port a = {"a", "a", "i, k, l", WEIR_WCR_NONE};
  T1Port b = {"b", "b", "k, l, j", WEIR_WCR_NONE};
  T1Port y = {"y", "y", "i, j", WEIR_WCR_SUM};
  T1Port ab[] = {a, b};
  g_autoptr(WeirGraph) g3 = t1_map_program(
      "a:f32:4,3,2;b:f32:3,2,5;y:f32:4,5", "", "i,j,k,l", "0:4;0:5;0:3;0:2",
      SEQ, ab, 2, &y, 1, "y = a * b", &st, &e);
  site = t1_site(st, 1, e);
  g_autofree char *r3 = t1_reason(g3, "gemm-extraction", &site, NULL);
  assert_contains(r3, "2 parameters are summed over; a GEMM sums over "
                      "exactly one");

  /* not a product */
  T1Port a2 = {"a", "a", "i, k", WEIR_WCR_NONE};
  T1Port b2 = {"b", "b", "k, j", WEIR_WCR_NONE};
  T1Port ab2[] = {a2, b2};
  g_autoptr(WeirGraph) g4 =
      t1_map_program("a:f32:4,3;b:f32:3,5;y:f32:4,5", "", "i,j,k",
                     "0:4;0:5;0:3", SEQ, ab2, 2, &y, 1, "y = a + b", &st, &e);
  site = t1_site(st, 1, e);
  g_autoptr(GArray) s4 = t1_sites(g4, "gemm-extraction");
  assert_int_equal(s4->len, 0);
  g_autofree char *r4 = t1_reason(g4, "gemm-extraction", &site, NULL);
  assert_contains(r4, "computes 'y = a + b', not a product of its two "
                      "inputs");

  /* no accumulation */
  T1Port plain = {"y", "y", "i, j", WEIR_WCR_NONE};
  g_autoptr(WeirGraph) g5 = t1_map_program("a:f32:4,3;b:f32:3,5;y:f32:4,5", "",
                                           "i,j,k", "0:4;0:5;0:3", SEQ, ab2, 2,
                                           &plain, 1, "y = a * b", &st, &e);
  site = t1_site(st, 1, e);
  g_autofree char *r5 = t1_reason(g5, "gemm-extraction", &site, NULL);
  assert_contains(r5, "does not accumulate its result with WCR 'sum'");

  /* a partial range */
  g_autoptr(WeirGraph) g6 =
      t1_map_program("a:f32:4,3;b:f32:3,5;y:f32:4,5", "", "i,j,k",
                     "0:4;0:5;0:2", SEQ, ab2, 2, &y, 1, "y = a * b", &st, &e);
  site = t1_site(st, 1, e);
  g_autofree char *r6 = t1_reason(g6, "gemm-extraction", &site, NULL);
  assert_contains(r6, "the range '0:2' of 'k' does not cover dimension 1 of "
                      "'a' (size 3)");

  /* a batched product scaled by a literal */
  T1Port a7 = {"a", "a", "h, i, k", WEIR_WCR_NONE};
  T1Port b7 = {"b", "b", "h, k, j", WEIR_WCR_NONE};
  T1Port y7 = {"y", "y", "h, i, j", WEIR_WCR_SUM};
  T1Port ab7[] = {a7, b7};
  g_autoptr(WeirGraph) g7 = t1_map_program(
      "a:f32:2,4,3;b:f32:2,3,5;y:f32:2,4,5", "", "h,i,j,k", "0:2;0:4;0:5;0:3",
      SEQ, ab7, 2, &y7, 1, "y = 2.0 * a * b", &st, &e);
  site = t1_site(st, 1, e);
  g_autofree char *r7 = t1_reason(g7, "gemm-extraction", &site, NULL);
  assert_contains(r7, "the product is scaled by 2; only a 2-D Gemm has "
                      "alpha");
  /* without the scale it is a batched MatMul (accumulate form: no init) */
  g_autoptr(WeirGraph) g8 = t1_map_program(
      "a:f32:2,4,3;b:f32:2,3,5;y:f32:2,4,5", "", "h,i,j,k", "0:2;0:4;0:5;0:3",
      SEQ, ab7, 2, &y7, 1, "y = b * a", &st, &e);
  g_autoptr(WeirGraph) b8 = weir_graph_copy(g8);
  WeirNode *n8 = extract(g8);
  assert_string_equal(n8->op, "MatMul");
  t1_assert_same_outputs(b8, g8, NULL, 1e-5);
}

static void test_everywhere(void **state) {
  (void)state;
  /* matmul.json 1; mlp 3, lenet 2 (not the convolutions), resnet 1,
   * transformer 6 */
  guint refused = 0;
  assert_int_equal(t1_apply_everywhere_full("gemm-extraction", NULL, 1e-5, TRUE,
                                            NULL, &refused),
                   13);
  assert_int_equal(refused, 1); /* lenet's unpadded conv2 */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sites),
      cmocka_unit_test(test_matmul_roundtrip),
      cmocka_unit_test(test_gemm),
      cmocka_unit_test(test_batched),
      cmocka_unit_test(test_accumulate),
      cmocka_unit_test(test_reasons),
      cmocka_unit_test(test_everywhere),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
