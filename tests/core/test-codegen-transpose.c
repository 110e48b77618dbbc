/* test-codegen-transpose.c — the code generator's tiled transposes
 * (core/codegen/map.c, transpose_plan) against the reference interpreter.
 *
 * Each case is a program with one Transpose (f32 or f64, odd sizes so that
 * the last blocks are partial, permutations of rank 2, 3 and 4), expanded
 * into its map; the generated source must contain the tiled loops where the
 * transposed read walks more than 128 lines or walks lines 4 KiB apart (and
 * must not where the column walk stays in cache, or a side is shorter than a
 * block), and the compiled program must give the interpreter's output
 * exactly, every element written, with 1 and 2 OpenMP threads.  One more
 * test follows the Transpose with a Mul by a row broadcast over the last
 * axis: the Mul's map reads that row with stride 0 along its innermost
 * parameter and along no other with stride 1 than the output's, so it is
 * not a transpose and only the Transpose's map may be tiled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "runtime-fixture.h"
#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-interp.h"
#include "weir-ops.h"
#include "weir-validate.h"

#define MARK "tiled transpose"

typedef struct {
  const char *name;
  const char *in;  /* input shape */
  const char *out; /* output shape */
  gint64 perm[4];
  guint rank;
  gboolean tiled; /* the generated code must tile it */
} Case;

static void add_access(WeirGraph *g, WeirState *s, guint lib, const char *conn,
                       const char *name, gboolean input) {
  g_autoptr(GError) err = NULL;
  const WeirContainer *c = weir_graph_container(g, name);
  assert_non_null(c);
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autofree char *sub = weir_subset_to_string(full);
  WeirNode *a = weir_state_add_access(g, s, name);
  const WeirMemlet *ok = input ? weir_state_add_memlet(g, s, a->id, NULL, lib,
                                                       conn, name, sub, &err)
                               : weir_state_add_memlet(g, s, lib, conn, a->id,
                                                       NULL, name, sub, &err);
  if (!ok)
    fail_msg("%s: %s", name, err->message);
}

/* X -> Transpose(perm) -> Y; with `scale`, then Y = T * S (S broadcast over
 * the last axis of Y, shape [last]). */
static WeirGraph *case_graph(const Case *c, WeirDType dt, gboolean scale) {
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_new(c->name);
  WeirState *s = weir_graph_add_state(g, "main");
  assert_non_null(weir_graph_add_array(g, "X", dt, c->in, FALSE, &err));
  assert_non_null(
      weir_graph_add_array(g, scale ? "T" : "Y", dt, c->out, scale, &err));
  const char *ins[] = {"in0", NULL}, *outs[] = {"out0", NULL};
  WeirNode *tr =
      weir_state_add_library(g, s, "transpose", "Transpose", ins, outs);
  weir_node_set_attr_ints(tr, "perm", c->perm, c->rank);
  assert_true(weir_op_check_attrs(tr, &err));
  add_access(g, s, tr->id, "in0", "X", TRUE);
  if (!scale) {
    add_access(g, s, tr->id, "out0", "Y", FALSE);
  } else {
    const WeirContainer *t = weir_graph_container(g, "T");
    g_autofree char *last =
        weir_expr_to_string(g_ptr_array_index(t->shape, t->shape->len - 1));
    g_autofree char *sshape = g_strdup(last);
    assert_non_null(weir_graph_add_array(g, "S", dt, sshape, FALSE, &err));
    assert_non_null(weir_graph_add_array(g, "Y", dt, c->out, FALSE, &err));
    add_access(g, s, tr->id, "out0", "T", FALSE);
    const char *mins[] = {"in0", "in1", NULL};
    WeirNode *mul = weir_state_add_library(g, s, "scale", "Mul", mins, outs);
    /* T's access node is the one just added: read it again for the Mul */
    WeirNode *ta = NULL;
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, "T") == 0)
        ta = n;
    }
    assert_non_null(ta);
    g_autoptr(WeirSubset) full = weir_container_full_subset(t);
    g_autofree char *sub = weir_subset_to_string(full);
    assert_true(weir_state_add_memlet(g, s, ta->id, NULL, mul->id, "in0", "T",
                                      sub, &err));
    add_access(g, s, mul->id, "in1", "S", TRUE);
    add_access(g, s, mul->id, "out0", "Y", FALSE);
  }
  if (!weir_graph_validate(g, &err))
    fail_msg("%s: %s", c->name, err->message);
  return g;
}

static GHashTable *tensors_new(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                               (GDestroyNotify)weir_tensor_free);
}

static GHashTable *args_new(const WeirGraph *g) {
  GHashTable *args = tensors_new();
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient)
      continue;
    gint64 shape[8] = {0};
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(g_ptr_array_index(c->shape, d), NULL,
                                 &shape[d], NULL));
    WeirTensor *t = weir_tensor_new(c->dtype, c->shape->len, shape);
    weir_tensor_fill_random(t, 11 + c->id);
    g_hash_table_replace(args, g_strdup(c->name), t);
  }
  return args;
}

static GHashTable *copy_args(GHashTable *args) {
  GHashTable *c = tensors_new();
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, args);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(c, g_strdup(k), weir_tensor_copy(v));
  return c;
}

static void check_case(Fixture *f, const Case *c, WeirDType dt,
                       gboolean scale) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = case_graph(c, dt, scale);
  if (!weir_expand_all(g, NULL, NULL, &err))
    fail_msg("%s: expansion: %s", c->name, err->message);
  g_autoptr(GHashTable) args = args_new(g);
  g_autoptr(GHashTable) ref = copy_args(args);
  if (!weir_interpret(g, NULL, ref, NULL, &err))
    fail_msg("%s: interpreter: %s", c->name, err->message);
  const WeirTensor *want = g_hash_table_lookup(ref, "Y");

  g_autofree char *src = weir_codegen_c(g, NULL, &err);
  if (!src)
    fail_msg("%s: %s", c->name, err->message);
  /* with the Mul: only the Transpose's map may be tiled (one marker) */
  if (c->tiled && strstr(src, MARK) && strstr(strstr(src, MARK) + 1, MARK))
    fail_msg("%s: the Mul's map was tiled too", c->name);
  if (c->tiled != (strstr(src, MARK) != NULL))
    fail_msg("%s (%s): the generated code %s '" MARK "'", c->name,
             dt == WEIR_DTYPE_F32 ? "f32" : "f64", c->tiled ? "has no" : "has");
  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("%s: %s", c->name, err->message);
  for (int threads = 1; threads <= 2; threads++) {
    assert_true(weir_kernel_set_threads(k, threads, &err));
    g_autoptr(GHashTable) got = copy_args(args);
    WeirTensor *y = g_hash_table_lookup(got, "Y");
    gsize n = weir_tensor_nbytes(y) / (dt == WEIR_DTYPE_F32 ? 4 : 8);
    for (gsize e = 0; e < n; e++)
      weir_tensor_set(y, (gint64)e,
                      12345.0); /* every element must be written */
    if (!weir_kernel_run(k, NULL, got, &err))
      fail_msg("%s: %s", c->name, err->message);
    if (!weir_tensor_allclose(y, want, 0.0, 0.0, NULL, &err))
      fail_msg("%s (%s, %d threads): %s", c->name,
               dt == WEIR_DTYPE_F32 ? "f32" : "f64", threads, err->message);
  }
}

static const Case cases[] = {
    /* rank 2: the weight transposes of a transformer, odd sizes */
    {"t2_300x200", "300, 200", "200, 300", {1, 0}, 2, TRUE},
    {"t2_1029x37", "1029, 37", "37, 1029", {1, 0}, 2, TRUE},
    /* rows 4 KiB apart (f32): tiled although the walk is short */
    {"t2_aliased", "40, 1024", "1024, 40", {1, 0}, 2, TRUE},
    /* a column walk of at most 128 lines in distinct sets: left alone */
    {"t2_short_walk", "100, 90", "90, 100", {1, 0}, 2, FALSE},
    /* a side shorter than a block: left alone */
    {"t2_thin", "5, 300", "300, 5", {1, 0}, 2, FALSE},
    /* rank 3: the attention's head split, [tokens, heads, d] -> [heads, d,
     * tokens] and batched transposes of the last two axes */
    {"t3_heads", "133, 6, 40", "6, 40, 133", {1, 2, 0}, 3, TRUE},
    {"t3_batched", "3, 257, 129", "3, 129, 257", {0, 2, 1}, 3, TRUE},
    /* rank 4: NCHW <-> NHWC, and a swap of the outer two and inner two */
    {"t4_nchw_nhwc", "2, 35, 9, 17", "2, 9, 17, 35", {0, 2, 3, 1}, 4, FALSE},
    {"t4_nhwc_nchw", "2, 9, 17, 300", "2, 300, 9, 17", {0, 3, 1, 2}, 4, FALSE},
    {"t4_swap", "3, 2, 150, 260", "2, 3, 260, 150", {1, 0, 3, 2}, 4, TRUE},
};

static void test_transposes(void **state) {
  Fixture *f = *state;
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    check_case(f, &cases[i], WEIR_DTYPE_F32, FALSE);
    check_case(f, &cases[i], WEIR_DTYPE_F64, FALSE);
  }
}

static void test_then_scale(void **state) {
  Fixture *f = *state;
  check_case(f, &cases[0], WEIR_DTYPE_F32, TRUE);
  check_case(f, &cases[3], WEIR_DTYPE_F32, TRUE);
}

static int setup(void **state) {
  Fixture *f = fixture_new();
  /* -Werror: the tiled loops must compile without a warning */
  f->opts.flags = "-O2 -fopenmp -fPIC -shared -Wall -Wextra -Werror";
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_free(*state);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_transposes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_then_scale, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
