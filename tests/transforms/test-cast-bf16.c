/* test-cast-bf16.c — the cast-bf16 transformation
 * (transforms/tier2/cast-bf16.c) on the digits CNN:
 *  - sites: every Conv/Gemm reads and writes bf16 only, through one Cast
 *    per f32 activation and one Cast back per result; weights are bf16
 *    constants rounded to nearest even from the f32 ones; Weir's bf16
 *    GEMM is the default implementation of each product;
 *  - the result, interpreted and compiled, is within bf16 tolerance of
 *    the f32 program's output, and the two agree with each other;
 *  - --exclude keeps the matching nodes f32;
 *  - a product that is not f32 is refused with its name, an invalid
 *    pattern and a state with nothing left too, and a refused application
 *    leaves the program byte for byte as it was. */
#include <math.h>

#include "../core/runtime-fixture.h"
#include "tier2-check.h"
#include "weir-expand.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-native.h"
#include "weir-tensor-io.h"
#include "weir-validate.h"

static const WeirTransformInfo *info(void) {
  return t2_lookup("cast-bf16");
}

static WeirTensor *digits_input(void) {
  g_autofree char *path = g_build_filename(
      WEIR_SRCDIR, "samples/models/digits_cnn/input_0.npy", NULL);
  g_autoptr(GError) error = NULL;
  WeirTensor *t = weir_tensor_read_npy(path, &error);
  assert_null(error);
  return t;
}

static GHashTable *digits_args(const WeirTensor *x) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                           (GDestroyNotify)weir_tensor_free);
  g_hash_table_insert(args, "input", weir_tensor_copy(x));
  gint64 shape[2] = {x->shape[0], 10};
  g_hash_table_insert(args, "output",
                      weir_tensor_new(WEIR_DTYPE_F32, 2, shape));
  return args;
}

static GHashTable *batch(const WeirTensor *x) {
  GHashTable *b = weir_bindings_new();
  weir_bindings_set(b, "batch", x->shape[0]);
  return b;
}

/* The output of g on the digits input, interpreted. */
static WeirTensor *interpret(const WeirGraph *program, const WeirTensor *x) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_copy(program);
  assert_true(weir_expand_all(g, NULL, NULL, &error));
  g_autoptr(GHashTable) b = batch(x);
  g_autoptr(GHashTable) args = digits_args(x);
  if (!weir_interpret(g, b, args, NULL, &error))
    fail_msg("interpreting: %s", error->message);
  return weir_tensor_copy(g_hash_table_lookup(args, "output"));
}

/* The same, compiled. */
static WeirTensor *compiled(const WeirGraph *g, const WeirTensor *x) {
  Fixture *f = fixture_new();
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &error);
  if (!k)
    fail_msg("compiling: %s", error->message);
  g_autoptr(GHashTable) b = batch(x);
  g_autoptr(GHashTable) args = digits_args(x);
  if (!weir_kernel_run(k, b, args, &error))
    fail_msg("running: %s", error->message);
  fixture_free(f);
  return weir_tensor_copy(g_hash_table_lookup(args, "output"));
}

/* The data of constant `name` of g as a tensor. */
static WeirTensor *constant(const WeirGraph *g, const char *name) {
  const WeirContainer *c = weir_graph_container(g, name);
  assert_non_null(c);
  assert_non_null(c->initial);
  gint64 shape[8];
  assert_true(c->shape->len <= 8);
  for (guint d = 0; d < c->shape->len; d++)
    assert_true(weir_expr_is_const(g_ptr_array_index(c->shape, d), &shape[d]));
  WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
  gsize size;
  const void *data = g_bytes_get_data(c->initial, &size);
  assert_int_equal(size, (gsize)t->count * weir_dtype_size(c->dtype));
  memcpy(t->data, data, size);
  return t;
}

static double max_diff(const WeirTensor *a, const WeirTensor *b) {
  assert_int_equal(a->count, b->count);
  double worst = 0;
  for (gint64 i = 0; i < a->count; i++)
    worst = MAX(worst, fabs(weir_tensor_get(a, i) - weir_tensor_get(b, i)));
  return worst;
}

static double max_abs(const WeirTensor *a) {
  double m = 0;
  for (gint64 i = 0; i < a->count; i++)
    m = MAX(m, fabs(weir_tensor_get(a, i)));
  return m;
}

static gboolean apply(WeirGraph *g, const char *exclude, GError **error) {
  g_autofree char *p = exclude ? g_strdup_printf("exclude=%s", exclude) : NULL;
  const char *params[] = {p, NULL};
  g_autoptr(WeirParams) wp = weir_params_parse(info(), params, error);
  if (!wp)
    return FALSE;
  g_autoptr(GArray) sites = t2_sites(info(), g);
  assert_int_equal(sites->len, 1);
  WeirApplyReport report;
  gboolean ok = weir_transform_apply(
      g, info(), &g_array_index(sites, WeirSite, 0), wp, NULL, &report, error);
  if (ok)
    weir_apply_report_clear(&report);
  return ok;
}

/* Checks that product `label` has only bf16 operands (or only f32) and,
 * for bf16, that Weir's bf16 GEMM runs it. */
static void assert_product(const WeirGraph *g, const char *label,
                           WeirDType want) {
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(s->nodes, i);
      if (n->kind != WEIR_NODE_LIBRARY || strcmp(n->label, label) != 0)
        continue;
      g_autoptr(GPtrArray) in = weir_state_in_edges(s, n->id);
      g_autoptr(GPtrArray) out = weir_state_out_edges(s, n->id);
      assert_int_equal(in->len, 3);
      assert_int_equal(out->len, 1);
      g_ptr_array_extend(in, out, NULL, NULL);
      for (guint e = 0; e < in->len; e++) {
        const WeirMemlet *m = g_ptr_array_index(in, e);
        const WeirContainer *c = weir_graph_container(g, m->data);
        if (c->dtype != want)
          fail_msg("%s reads or writes '%s' of type %s", label, c->name,
                   weir_dtype_name(c->dtype));
      }
      if (want == WEIR_DTYPE_BF16)
        assert_string_equal(weir_native_default_impl(g, s, n), "weir-bf16");
      return;
    }
  }
  fail_msg("no node '%s'", label);
}

/* Round to nearest even of an f32 to bf16 bits (finite values). */
static guint16 bf16_bits(float v) {
  guint32 u;
  memcpy(&u, &v, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return (guint16)(u >> 16);
}

static void test_digits(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t2_import_model("digits_cnn");
  g_autoptr(WeirTensor) x = digits_input();
  g_autoptr(WeirTensor) want = interpret(g, x);
  g_autoptr(WeirTensor) w32 = constant(g, "conv_weight");
  g_autoptr(GError) error = NULL;
  assert_true(apply(g, NULL, &error));
  assert_null(error);
  assert_int_equal(t2_count_ops(g, "Conv"), 1);
  assert_int_equal(t2_count_ops(g, "Gemm"), 2);
  /* input, Flatten's and the first Relu's outputs in; three results out */
  assert_int_equal(t2_count_ops(g, "Cast"), 6);
  assert_product(g, "/conv/Conv", WEIR_DTYPE_BF16);
  assert_product(g, "/fc1/Gemm", WEIR_DTYPE_BF16);
  assert_product(g, "/fc2/Gemm", WEIR_DTYPE_BF16);
  /* the f32 constants are gone, the bf16 ones rounded to nearest even */
  assert_null(weir_graph_container(g, "conv_weight"));
  assert_null(weir_graph_container(g, "fc1_weight"));
  g_autoptr(WeirTensor) w16 = constant(g, "conv_weight_bf16");
  assert_int_equal(w16->dtype, WEIR_DTYPE_BF16);
  assert_int_equal(w16->count, w32->count);
  const float *f = w32->data;
  const guint16 *h = w16->data;
  for (gint64 i = 0; i < w32->count; i++)
    if (h[i] != bf16_bits(f[i]))
      fail_msg("weight %" G_GINT64_FORMAT ": %g gave bf16 bits 0x%04x, not "
               "0x%04x",
               i, f[i], h[i], bf16_bits(f[i]));
  g_autoptr(GError) verr = NULL;
  assert_true(weir_graph_validate(g, &verr));

  /* bf16 has 8 significant bits: a relative step of 2^-8 per rounding;
   * the input, the weights and each layer's output are rounded, so the
   * logits (magnitude up to max|want|) move by a few such steps */
  double scale = max_abs(want), tol = 8 * scale / 256;
  g_autoptr(WeirTensor) interp = interpret(g, x);
  g_autoptr(WeirTensor) comp = compiled(g, x);
  double di = max_diff(interp, want), dc = max_diff(comp, want),
         dic = max_diff(interp, comp);
  print_message("max |logit| %g; bf16 - f32: interpreted %g, compiled %g; "
                "interpreted - compiled %g\n",
                scale, di, dc, dic);
  assert_true(di > 0 && dc > 0); /* really computed in bf16 */
  assert_true(di <= tol);
  assert_true(dc <= tol);
  assert_true(dic <= tol);
  /* and the classes are those of f32 */
  for (gint64 r = 0; r < x->shape[0]; r++) {
    gint64 a = 0, b = 0;
    for (gint64 j = 1; j < 10; j++) {
      if (weir_tensor_get(want, r * 10 + j) > weir_tensor_get(want, r * 10 + a))
        a = j;
      if (weir_tensor_get(comp, r * 10 + j) > weir_tensor_get(comp, r * 10 + b))
        b = j;
    }
    assert_int_equal(a, b);
  }
}

static void test_exclude(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t2_import_model("digits_cnn");
  g_autoptr(WeirTensor) x = digits_input();
  g_autoptr(GError) error = NULL;
  assert_true(apply(g, "^/fc", &error));
  assert_product(g, "/conv/Conv", WEIR_DTYPE_BF16);
  assert_product(g, "/fc1/Gemm", WEIR_DTYPE_F32);
  assert_product(g, "/fc2/Gemm", WEIR_DTYPE_F32);
  assert_int_equal(t2_count_ops(g, "Cast"), 2);
  assert_non_null(weir_graph_container(g, "fc1_weight"));
  assert_null(weir_graph_container(g, "conv_weight"));
  g_autoptr(WeirTensor) got = interpret(g, x);
  assert_int_equal(got->count, x->shape[0] * 10);
  /* applying again converts the Gemms; the Conv is already bf16 */
  assert_true(apply(g, NULL, &error));
  assert_product(g, "/fc1/Gemm", WEIR_DTYPE_BF16);
  assert_product(g, "/fc2/Gemm", WEIR_DTYPE_BF16);
  assert_int_equal(t2_count_ops(g, "Cast"), 6);
}

static void test_refused(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = t2_import_model("digits_cnn");
  g_autofree char *before = weir_graph_to_json(g);
  g_autoptr(GError) error = NULL;
  /* everything excluded */
  assert_false(apply(g, ".", &error));
  assert_contains(error->message, "no f32 Conv, Gemm or MatMul left");
  g_clear_error(&error);
  /* not a pattern */
  assert_false(apply(g, "(", &error));
  assert_contains(error->message, "not a regular expression");
  g_clear_error(&error);
  g_autofree char *after = weir_graph_to_json(g);
  assert_string_equal(before, after);
  /* a second application has nothing left */
  assert_true(apply(g, NULL, &error));
  assert_false(apply(g, NULL, &error));
  assert_contains(error->message, "no f32 Conv, Gemm or MatMul left");
  g_clear_error(&error);

  /* an f64 MatMul next to an f32 one: refused, naming it */
  WeirState *s;
  g_autoptr(WeirGraph) h = t2_graph("mixed", &s);
  t2_array(h, "a", WEIR_DTYPE_F32, "4, 8", FALSE);
  t2_const_random(h, "wa", WEIR_DTYPE_F32, "8, 3", 1);
  t2_array(h, "ya", WEIR_DTYPE_F32, "4, 3", FALSE);
  t2_array(h, "b", WEIR_DTYPE_F64, "4, 8", FALSE);
  t2_const_random(h, "wb", WEIR_DTYPE_F64, "8, 3", 2);
  t2_array(h, "yb", WEIR_DTYPE_F64, "4, 3", FALSE);
  t2_op(h, s, "MatMul", "mm32", (const char *[]){"a", "wa", NULL},
        (const char *[]){"ya", NULL});
  t2_op(h, s, "MatMul", "mm64", (const char *[]){"b", "wb", NULL},
        (const char *[]){"yb", NULL});
  t2_normalize(h);
  g_autofree char *h0 = weir_graph_to_json(h);
  assert_false(apply(h, NULL, &error));
  assert_contains(error->message, "MatMul 'mm64' does not compute in f32");
  g_clear_error(&error);
  g_autofree char *h1 = weir_graph_to_json(h);
  assert_string_equal(h0, h1);
  /* excluded, the f32 one converts, and computes within bf16 tolerance */
  g_autoptr(WeirGraph) h32 = weir_graph_copy(h);
  assert_true(apply(h, "64", &error));
  t2_assert_same(h32, h, NULL, 3.0 / 128);
}

/* The Casts compile to the interpreter's rounding bit for bit: ties to
 * even both ways, the largest f32 (to infinity), subnormals, signed zeros,
 * infinities, NaN and random values over the whole exponent range. */
static void test_cast_bits(void **state) {
  (void)state;
  static const guint32 special[] = {
      0x3f808000, 0x3f818000, 0xbf808000, 0x3f80ffff, 0x7f7fffff, 0xff7fffff,
      0x7f7f7fff, 0x00018000, 0x00008000, 0x80000001, 0x00000000, 0x80000000,
      0x7f800000, 0xff800000, 0x7fc00000, 0xffc00001, 0x7f800001};
  enum { N = 4096 };
  WeirState *s;
  g_autoptr(WeirGraph) g = t2_graph("casts", &s);
  g_autofree char *shape = g_strdup_printf("%d", N);
  t2_array(g, "x", WEIR_DTYPE_F32, shape, FALSE);
  t2_array(g, "y", WEIR_DTYPE_BF16, shape, FALSE);
  WeirNode *c = t2_op(g, s, "Cast", "cast", (const char *[]){"x", NULL},
                      (const char *[]){"y", NULL});
  weir_node_set_attr_int(c, "to", 16);
  t2_normalize(g);
  gint64 n = N;
  g_autoptr(WeirTensor) x = weir_tensor_new(WEIR_DTYPE_F32, 1, &n);
  guint32 *xb = x->data;
  GRand *r = g_rand_new_with_seed(18);
  for (gint64 i = 0; i < N; i++)
    xb[i] =
        i < (gint64)G_N_ELEMENTS(special) ? special[i] : (guint32)g_rand_int(r);
  g_rand_free(r);
  g_autoptr(GError) error = NULL;
  GHashTable *want = NULL, *got = NULL;
  for (int compiled = 0; compiled < 2; compiled++) {
    GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                             (GDestroyNotify)weir_tensor_free);
    g_hash_table_insert(args, "x", weir_tensor_copy(x));
    g_hash_table_insert(args, "y", weir_tensor_new(WEIR_DTYPE_BF16, 1, &n));
    if (compiled) {
      Fixture *f = fixture_new();
      g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &error);
      if (!k || !weir_kernel_run(k, NULL, args, &error))
        fail_msg("compiled: %s", error->message);
      fixture_free(f);
      got = args;
    } else {
      g_autoptr(WeirGraph) e = weir_graph_copy(g);
      assert_true(weir_expand_all(e, NULL, NULL, &error));
      if (!weir_interpret(e, NULL, args, NULL, &error))
        fail_msg("interpreted: %s", error->message);
      want = args;
    }
  }
  const guint16 *a = ((WeirTensor *)g_hash_table_lookup(want, "y"))->data;
  const guint16 *b = ((WeirTensor *)g_hash_table_lookup(got, "y"))->data;
  for (gint64 i = 0; i < N; i++)
    if (a[i] != b[i])
      fail_msg("f32 bits 0x%08x: interpreter 0x%04x, compiled 0x%04x", xb[i],
               a[i], b[i]);
  /* and the round-to-even formula, for the non-NaN values */
  for (gint64 i = 0; i < N; i++)
    if ((xb[i] & 0x7fffffff) <= 0x7f800000 &&
        a[i] != bf16_bits(((float *)xb)[i]))
      fail_msg("f32 bits 0x%08x gave 0x%04x", xb[i], a[i]);
  g_hash_table_unref(want);
  g_hash_table_unref(got);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_digits),
      cmocka_unit_test(test_exclude),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_cast_bits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
