/* test-bounded.c — outputs of a data-dependent length (a container's
 * count, docs/ir-format.md): the validator's rules, JSON, trimming, and
 * NonZero, Compress, Unique and NonMaxSuppression interpreted and compiled
 * against references written here with plain loops.
 *
 * The programs are built by hand: input access nodes -> library node ->
 * output access nodes, plus the node's "count" output, the outputs naming
 * it as their count (what the ONNX importer builds). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "runtime-fixture.h"
#include "weir-interp.h"
#include "weir-json.h"
#include "weir-lower.h"
#include "weir-validate.h"

/* ------------------------------------------------------------ validator */

/* y[4] written by a tasklet, with count k; `read` adds a tasklet reading
 * y into z. */
static WeirGraph *writer(gboolean count, gboolean read) {
  WeirGraph *g = weir_graph_new("bounded");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirContainer *y =
      weir_graph_add_array(g, "y", WEIR_DTYPE_F32, "4", FALSE, NULL);
  weir_graph_add_array(g, "k", WEIR_DTYPE_I64, "", FALSE, NULL);
  weir_graph_add_array(g, "z", WEIR_DTYPE_F32, "", FALSE, NULL);
  if (count)
    weir_container_set_count(y, "k", 0);
  const char *outs[] = {"o", NULL};
  WeirNode *t = weir_state_add_tasklet(g, s, "w", NULL, outs, "o = 1.0");
  WeirNode *a = weir_state_add_access(g, s, "y");
  g_assert_nonnull(
      weir_state_add_memlet(g, s, t->id, "o", a->id, NULL, "y", "1", NULL));
  WeirNode *t2 = weir_state_add_tasklet(g, s, "k", NULL, outs, "o = 2");
  WeirNode *ka = weir_state_add_access(g, s, "k");
  g_assert_nonnull(
      weir_state_add_memlet(g, s, t2->id, "o", ka->id, NULL, "k", "", NULL));
  if (read) {
    const char *ins[] = {"i", NULL};
    WeirNode *r = weir_state_add_tasklet(g, s, "r", ins, outs, "o = i");
    WeirNode *za = weir_state_add_access(g, s, "z");
    g_assert_nonnull(
        weir_state_add_memlet(g, s, a->id, NULL, r->id, "i", "y", "0", NULL));
    g_assert_nonnull(
        weir_state_add_memlet(g, s, r->id, "o", za->id, NULL, "z", "", NULL));
  }
  return g;
}

static void test_validate_reads(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  {
    g_autoptr(WeirGraph) g = writer(TRUE, FALSE);
    assert_true(weir_graph_validate(g, &err));
  }
  {
    /* the same read of a container without a count is fine */
    g_autoptr(WeirGraph) g = writer(FALSE, TRUE);
    assert_true(weir_graph_validate(g, &err));
  }
  g_autoptr(WeirGraph) g = writer(TRUE, TRUE);
  assert_false(weir_graph_validate(g, &err));
  assert_non_null(strstr(err->message, "data-dependent length"));
  assert_non_null(strstr(err->message, "count 'k'"));
}

static void test_validate_count(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = writer(TRUE, FALSE);
  WeirContainer *y = weir_graph_container(g, "y");
  g_autoptr(GError) e1 = NULL;
  weir_container_set_count(y, "missing", 0);
  assert_false(weir_graph_validate(g, &e1));
  assert_non_null(strstr(e1->message, "'missing' does not exist"));
  g_autoptr(GError) e2 = NULL;
  weir_container_set_count(y, "z", 0); /* f32 */
  assert_false(weir_graph_validate(g, &e2));
  assert_non_null(strstr(e2->message, "another i64 scalar"));
  g_autoptr(GError) e3 = NULL;
  weir_container_set_count(y, "k", 1); /* y has rank 1 */
  assert_false(weir_graph_validate(g, &e3));
  assert_non_null(strstr(e3->message, "dimension 1 of a shape of rank 1"));
}

static void test_json(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = writer(TRUE, FALSE);
  g_autoptr(GError) err = NULL;
  g_autofree char *text = weir_graph_to_json(g);
  assert_non_null(strstr(text, "\"count\""));
  g_autoptr(WeirGraph) back = weir_graph_from_json(text, -1, "test", &err);
  assert_non_null(back);
  const WeirContainer *y = weir_graph_container(back, "y");
  assert_string_equal(y->count, "k");
  assert_int_equal(y->count_dim, 0);
  g_autofree char *again = weir_graph_to_json(back);
  assert_string_equal(text, again);
  /* count_dim beyond the rank, and count_dim alone, are refused */
  g_autoptr(GString) bad = g_string_new(text);
  g_string_replace(bad, "\"count_dim\": 0", "\"count_dim\": 1", 1);
  g_autoptr(GError) e1 = NULL;
  assert_null(weir_graph_from_json(bad->str, -1, "test", &e1));
  assert_non_null(strstr(e1->message, "count_dim"));
  g_autoptr(GString) lone = g_string_new(text);
  g_string_replace(lone, "\"count\": \"k\",", "", 1);
  g_autoptr(GError) e2 = NULL;
  assert_null(weir_graph_from_json(lone->str, -1, "test", &e2));
  assert_non_null(strstr(e2->message, "count_dim without count"));
}

static void test_trim(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("t");
  WeirContainer *y =
      weir_graph_add_array(g, "y", WEIR_DTYPE_I32, "2, 4", FALSE, NULL);
  weir_graph_add_array(g, "k", WEIR_DTYPE_I64, "", FALSE, NULL);
  weir_container_set_count(y, "k", 1);
  gint64 shape[2] = {2, 4};
  WeirTensor *t = weir_tensor_new(WEIR_DTYPE_I32, 2, shape);
  for (int i = 0; i < 8; i++)
    ((gint32 *)t->data)[i] = i;
  WeirTensor *k = weir_tensor_new(WEIR_DTYPE_I64, 0, NULL);
  ((gint64 *)k->data)[0] = 3;
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  g_hash_table_insert(args, "y", t);
  g_hash_table_insert(args, "k", k);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirTensor) v = weir_container_trim(g, y, t, args, &err);
  assert_non_null(v);
  assert_int_equal(v->shape[1], 3);
  const gint32 want[6] = {0, 1, 2, 4, 5, 6};
  assert_memory_equal(v->data, want, sizeof want);
  ((gint64 *)k->data)[0] = 5; /* beyond the bound */
  g_autoptr(WeirTensor) bad = weir_container_trim(g, y, t, args, &err);
  assert_null(bad);
  assert_non_null(strstr(err->message, "outside [0, 4]"));
}

/* ------------------------------------------------------- the operators */

typedef struct {
  WeirGraph *g;
  WeirState *s;
  WeirNode *n;
  GHashTable *args; /* name -> WeirTensor* (owned) */
  guint n_out;
} Op;

static Op *op_new(const char *op) {
  Op *o = g_new0(Op, 1);
  o->g = weir_graph_new("op");
  o->s = weir_graph_add_state(o->g, "main");
  o->n = weir_state_add_library(o->g, o->s, "node", op, NULL, NULL);
  o->args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                  (GDestroyNotify)weir_tensor_free);
  return o;
}

static void op_free(Op *o) {
  weir_graph_free(o->g);
  g_hash_table_unref(o->args);
  g_free(o);
}

static void op_input(Op *o, guint k, WeirTensor *t) {
  g_autofree char *name = g_strdup_printf("x%u", k);
  g_autoptr(GString) shape = g_string_new(NULL);
  for (guint d = 0; d < t->rank; d++)
    g_string_append_printf(shape, "%s%" G_GINT64_FORMAT, d ? ", " : "",
                           t->shape[d]);
  WeirContainer *c =
      weir_graph_add_array(o->g, name, t->dtype, shape->str, FALSE, NULL);
  WeirNode *a = weir_state_add_access(o->g, o->s, c->name);
  g_autofree char *conn = g_strdup_printf("in%u", k);
  weir_node_add_in_conn(o->n, conn);
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autofree char *sub = weir_subset_to_string(full);
  g_assert_nonnull(weir_state_add_memlet(o->g, o->s, a->id, NULL, o->n->id,
                                         conn, c->name, sub, NULL));
  g_hash_table_insert(o->args, g_strdup(name), t);
}

/* Output k (conn "out<k>", or "count" for k = G_MAXUINT) of dtype and
 * shape text; bounded_dim >= 0 names the count. */
static void op_output(Op *o, guint k, WeirDType dtype, const char *shape,
                      int bounded_dim) {
  g_autofree char *name =
      k == G_MAXUINT ? g_strdup("cnt") : g_strdup_printf("y%u", k);
  g_autofree char *conn =
      k == G_MAXUINT ? g_strdup("count") : g_strdup_printf("out%u", k);
  WeirContainer *c =
      weir_graph_add_array(o->g, name, dtype, shape, FALSE, NULL);
  if (bounded_dim >= 0)
    weir_container_set_count(c, "cnt", (guint)bounded_dim);
  WeirNode *a = weir_state_add_access(o->g, o->s, c->name);
  weir_node_add_out_conn(o->n, conn);
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autofree char *sub = weir_subset_to_string(full);
  g_assert_nonnull(weir_state_add_memlet(o->g, o->s, o->n->id, conn, a->id,
                                         NULL, c->name, sub, NULL));
}

static GHashTable *fresh_args(const Op *o) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, o->args);
  while (g_hash_table_iter_next(&it, &key, &value))
    g_hash_table_insert(args, g_strdup(key), weir_tensor_copy(value));
  for (guint i = 0; i < o->g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(o->g->containers, i);
    if (c->transient || g_hash_table_contains(args, c->name))
      continue;
    gint64 shape[4] = {0};
    for (guint d = 0; d < c->shape->len; d++)
      g_assert_true(
          weir_expr_is_const(g_ptr_array_index(c->shape, d), &shape[d]));
    g_hash_table_insert(args, g_strdup(c->name),
                        weir_tensor_new(c->dtype, c->shape->len, shape));
  }
  return args;
}

/* Runs o interpreted (expanded) and compiled, and checks that output
 * "y<k>" trimmed to its count equals want[k] in both. */
static void op_check(Fixture *f, Op *o, WeirTensor **want, guint n_want) {
  g_autoptr(GError) err = NULL;
  assert_true(weir_graph_validate(o->g, &err));
  g_autoptr(WeirGraph) lowered = weir_graph_copy(o->g);
  if (!weir_lower(lowered, NULL, &err))
    fail_msg("lowering: %s", err->message);
  g_autoptr(GHashTable) ia = fresh_args(o);
  g_autoptr(GHashTable) syms = weir_bindings_new();
  if (!weir_interpret(lowered, syms, ia, NULL, &err))
    fail_msg("interpreting: %s", err->message);
  g_autoptr(WeirKernel) k = weir_kernel_compile(o->g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("compiling: %s", err->message);
  g_autoptr(GHashTable) ca = fresh_args(o);
  if (!weir_kernel_run(k, syms, ca, &err))
    fail_msg("running: %s", err->message);
  for (guint i = 0; i < n_want; i++) {
    g_autofree char *name = g_strdup_printf("y%u", i);
    const WeirContainer *c = weir_graph_container(o->g, name);
    for (int compiled = 0; compiled < 2; compiled++) {
      GHashTable *args = compiled ? ca : ia;
      g_autoptr(WeirTensor) got = weir_container_trim(
          o->g, c, g_hash_table_lookup(args, name), args, &err);
      assert_non_null(got);
      g_autofree char *a = weir_tensor_describe(got);
      g_autofree char *b = weir_tensor_describe(want[i]);
      if (strcmp(a, b) != 0)
        fail_msg("%s %s: %s, expected %s", o->n->op, name, a, b);
      if (!weir_tensor_allclose(got, want[i], 0, 0, NULL, &err))
        fail_msg("%s %s (%s): %s", o->n->op, name,
                 compiled ? "compiled" : "interpreted", err->message);
    }
  }
}

static WeirTensor *vec_i64(guint n, const gint64 *v, guint rank,
                           const gint64 *shape) {
  WeirTensor *t = weir_tensor_new(WEIR_DTYPE_I64, rank, shape);
  memcpy(t->data, v, sizeof(gint64) * n);
  (void)n;
  return t;
}

static WeirTensor *floats(guint rank, const gint64 *shape, const float *v) {
  WeirTensor *t = weir_tensor_new(WEIR_DTYPE_F32, rank, shape);
  memcpy(t->data, v, sizeof(float) * (gsize)t->count);
  return t;
}

static void test_non_zero(void **state) {
  Fixture *f = *state;
  Op *o = op_new("NonZero");
  const gint64 xs[2] = {3, 4};
  const float xv[12] = {0, 1, 0, 2, 3, 0, 0, 0, 4, 5, 0, 6};
  op_input(o, 0, floats(2, xs, xv));
  op_output(o, 0, WEIR_DTYPE_I64, "2, 12", 1);
  op_output(o, G_MAXUINT, WEIR_DTYPE_I64, "", -1);
  /* reference: row-major order of the nonzero elements */
  gint64 rows[12], cols[12], n = 0;
  for (gint64 i = 0; i < 12; i++)
    if (xv[i] != 0) {
      rows[n] = i / 4;
      cols[n] = i % 4;
      n++;
    }
  gint64 v[24];
  memcpy(v, rows, sizeof(gint64) * n);
  memcpy(v + n, cols, sizeof(gint64) * n);
  const gint64 ws[2] = {2, n};
  g_autoptr(WeirTensor) want = vec_i64(2 * n, v, 2, ws);
  op_check(f, o, &want, 1);
  op_free(o);
}

static void test_compress(void **state) {
  Fixture *f = *state;
  const gint64 xs[2] = {4, 3};
  float xv[12];
  for (int i = 0; i < 12; i++)
    xv[i] = (float)(i + 1);
  for (int axis = -1; axis < 2; axis++) {
    Op *o = op_new("Compress");
    op_input(o, 0, floats(2, xs, xv));
    gint64 len = axis < 0 ? 7 : xs[axis];
    const gboolean cv[7] = {FALSE, TRUE, TRUE, FALSE, TRUE, FALSE, TRUE};
    WeirTensor *c = weir_tensor_new(WEIR_DTYPE_BOOL, 1, &len);
    for (gint64 i = 0; i < len; i++)
      ((guint8 *)c->data)[i] = (guint8)cv[i];
    op_input(o, 1, c);
    if (axis >= 0)
      weir_node_set_attr_int(o->n, "axis", axis);
    g_autofree char *shape = axis < 0    ? g_strdup("7")
                             : axis == 0 ? g_strdup("4, 3")
                                         : g_strdup("4, 3");
    op_output(o, 0, WEIR_DTYPE_F32, shape, axis < 0 ? 0 : axis);
    op_output(o, G_MAXUINT, WEIR_DTYPE_I64, "", -1);
    float wv[12];
    gint64 ws[2] = {0, 0}, m = 0;
    if (axis < 0) {
      for (gint64 i = 0; i < len; i++)
        if (cv[i])
          wv[m++] = xv[i];
      ws[0] = m;
    } else if (axis == 0) {
      for (gint64 r = 0; r < 4; r++)
        if (cv[r]) {
          memcpy(wv + 3 * m, xv + 3 * r, 3 * sizeof(float));
          m++;
        }
      ws[0] = m;
      ws[1] = 3;
    } else {
      for (gint64 r = 0; r < 4; r++) {
        m = 0;
        for (gint64 j = 0; j < 3; j++)
          if (cv[j])
            m++;
        gint64 q = 0;
        for (gint64 j = 0; j < 3; j++)
          if (cv[j])
            wv[r * m + q++] = xv[r * 3 + j];
      }
      ws[0] = 4;
      ws[1] = m;
    }
    g_autoptr(WeirTensor) want = floats(axis < 0 ? 1 : 2, ws, wv);
    op_check(f, o, &want, 1);
    op_free(o);
  }
}

/* Unique over the slices of x [a, b, c] along axis 1 (b slices of a x c),
 * or over the elements (axis < 0), sorted or in order of first
 * occurrence: the reference, O(n^2). */
static void unique_ref(const float *x, const gint64 *xs, int axis,
                       gboolean sorted, WeirTensor **want) {
  gint64 n = axis < 0 ? xs[0] * xs[1] * xs[2] : xs[1];
  gint64 kk = axis < 0 ? 1 : xs[0] * xs[2];
#define EL(i, k)                                                               \
  (axis < 0 ? x[i] : x[((k) / xs[2]) * xs[1] * xs[2] + (i)*xs[2] + (k) % xs[2]])
  g_autofree gint64 *first = g_new0(gint64, n); /* slice -> first equal */
  for (gint64 i = 0; i < n; i++) {
    first[i] = i;
    for (gint64 j = 0; j < i && first[i] == i; j++) {
      gboolean eq = TRUE;
      for (gint64 k = 0; k < kk; k++)
        eq &= EL(i, k) == EL(j, k);
      if (eq)
        first[i] = j;
    }
  }
  /* the distinct slices (their first indices), ordered */
  g_autofree gint64 *uniq = g_new0(gint64, n);
  gint64 u = 0;
  for (gint64 i = 0; i < n; i++)
    if (first[i] == i)
      uniq[u++] = i;
  if (sorted) /* insertion sort by lexicographic order */
    for (gint64 a = 1; a < u; a++)
      for (gint64 b = a; b > 0; b--) {
        gint64 p = uniq[b - 1], q = uniq[b], k = 0;
        while (k < kk && EL(p, k) == EL(q, k))
          k++;
        if (k < kk && EL(q, k) < EL(p, k)) {
          uniq[b - 1] = q;
          uniq[b] = p;
        } else
          break;
      }
  gint64 ys[3] = {xs[0], u, xs[2]};
  gint64 yn = u;
  want[0] = axis < 0 ? weir_tensor_new(WEIR_DTYPE_F32, 1, &yn)
                     : weir_tensor_new(WEIR_DTYPE_F32, 3, ys);
  for (gint64 p = 0; p < u; p++)
    for (gint64 k = 0; k < kk; k++) {
      gint64 at =
          axis < 0 ? p : (k / xs[2]) * u * xs[2] + p * xs[2] + k % xs[2];
      ((float *)want[0]->data)[at] = EL(uniq[p], k);
    }
  want[1] = weir_tensor_new(WEIR_DTYPE_I64, 1, &yn);
  want[2] = weir_tensor_new(WEIR_DTYPE_I64, 1, &n);
  want[3] = weir_tensor_new(WEIR_DTYPE_I64, 1, &yn);
  for (gint64 p = 0; p < u; p++)
    ((gint64 *)want[1]->data)[p] = uniq[p];
  for (gint64 i = 0; i < n; i++)
    for (gint64 p = 0; p < u; p++)
      if (uniq[p] == first[i]) {
        ((gint64 *)want[2]->data)[i] = p;
        ((gint64 *)want[3]->data)[p]++;
      }
#undef EL
}

static void test_unique(void **state) {
  Fixture *f = *state;
  const gint64 xs[3] = {2, 5, 2};
  /* slices along axis 1: 0 and 3 equal, 1 and 4 equal */
  const float xv[20] = {3, 1, 0, 2, 3, 1, 3, 1, 0, 2, /* a = 0 */
                        1, 1, 0, 0, 1, 1, 2, 2, 0, 0};
  for (int axis = -1; axis < 2; axis += 2)
    for (int sorted = 0; sorted < 2; sorted++) {
      Op *o = op_new("Unique");
      op_input(o, 0, floats(3, xs, xv));
      if (axis >= 0)
        weir_node_set_attr_int(o->n, "axis", axis);
      weir_node_set_attr_int(o->n, "sorted", sorted);
      gint64 n = axis < 0 ? 20 : 5;
      g_autofree char *ns = g_strdup_printf("%" G_GINT64_FORMAT, n);
      op_output(o, 0, WEIR_DTYPE_F32, axis < 0 ? "20" : "2, 5, 2",
                axis < 0 ? 0 : 1);
      op_output(o, 1, WEIR_DTYPE_I64, ns, 0);
      op_output(o, 2, WEIR_DTYPE_I64, ns, -1);
      op_output(o, 3, WEIR_DTYPE_I64, ns, 0);
      op_output(o, G_MAXUINT, WEIR_DTYPE_I64, "", -1);
      WeirTensor *want[4] = {NULL};
      unique_ref(xv, xs, axis, sorted, want);
      op_check(f, o, want, 4);
      for (int i = 0; i < 4; i++)
        weir_tensor_free(want[i]);
      op_free(o);
    }
}

/* Greedy NMS reference on corner boxes [y1, x1, y2, x2]: per batch and
 * class, boxes by descending score (ties by index), kept when the score
 * passes and no kept box has IoU above iou; at most m per class. */
static WeirTensor *nms_ref(const float *bx, const float *sc, gint64 B, gint64 C,
                           gint64 N, gint64 m, float iou, float thr) {
  g_autofree gint64 *rows = g_new0(gint64, 3 * B * C * N + 3);
  gint64 n_rows = 0;
  for (gint64 b = 0; b < B; b++)
    for (gint64 c = 0; c < C; c++) {
      const float *s = sc + (b * C + c) * N;
      g_autofree gint64 *order = g_new0(gint64, N);
      for (gint64 i = 0; i < N; i++)
        order[i] = i;
      for (gint64 i = 1; i < N; i++) /* stable insertion sort */
        for (gint64 j = i; j > 0 && s[order[j]] > s[order[j - 1]]; j--) {
          gint64 tmp = order[j];
          order[j] = order[j - 1];
          order[j - 1] = tmp;
        }
      g_autofree gint64 *kept = g_new0(gint64, N);
      gint64 k = 0;
      for (gint64 q = 0; q < N && k < m; q++) {
        gint64 i = order[q];
        if (!(s[i] > thr))
          continue;
        gboolean ok = TRUE;
        for (gint64 e = 0; e < k && ok; e++) {
          const float *a = bx + (b * N + kept[e]) * 4,
                      *d = bx + (b * N + i) * 4;
          float iw = MAX(MIN(a[3], d[3]) - MAX(a[1], d[1]), 0.0f);
          float ih = MAX(MIN(a[2], d[2]) - MAX(a[0], d[0]), 0.0f);
          float in = iw * ih;
          float un = (a[3] - a[1]) * (a[2] - a[0]) +
                     (d[3] - d[1]) * (d[2] - d[0]) - in;
          ok = !(in > 0 && un > 0 && in / un > iou);
        }
        if (ok) {
          kept[k++] = i;
          rows[3 * n_rows] = b;
          rows[3 * n_rows + 1] = c;
          rows[3 * n_rows + 2] = i;
          n_rows++;
        }
      }
    }
  const gint64 ws[2] = {n_rows, 3};
  return vec_i64(3 * n_rows, rows, 2, ws);
}

static void test_nms(void **state) {
  Fixture *f = *state;
  const gint64 B = 2, C = 2, N = 5, M = 3;
  const gint64 bs[3] = {B, N, 4}, ss[3] = {B, C, N};
  const float bx[40] = {0, 0, 1, 1,    0, 0.1f, 1, 1.1f, 0, 5,
                        1, 6, 0, 5.2f, 1, 6.2f, 3, 3,    4, 4, /* batch 0 */
                        0, 0, 2, 2,    1, 1,    3, 3,    0, 0,
                        2, 2, 5, 5,    6, 6,    5, 5.5f, 6, 6.5f}; /* batch 1 */
  const float sc[20] = {0.9f, 0.8f, 0.7f, 0.95f, 0.1f, 0.3f, 0.6f,
                        0.6f, 0.2f, 0.9f, 0.5f,  0.5f, 0.5f, 0.4f,
                        0.3f, 0.1f, 0.2f, 0.3f,  0.4f, 0.5f};
  Op *o = op_new("NonMaxSuppression");
  op_input(o, 0, floats(3, bs, bx));
  op_input(o, 1, floats(3, ss, sc));
  weir_node_set_attr_int(o->n, "max_output_boxes_per_class", M);
  weir_node_set_attr_float(o->n, "iou_threshold", 0.3);
  weir_node_set_attr_float(o->n, "score_threshold", 0.45);
  weir_node_set_attr_int(o->n, "center_point_box", 0);
  op_output(o, 0, WEIR_DTYPE_I64, "12, 3", 0);
  op_output(o, G_MAXUINT, WEIR_DTYPE_I64, "", -1);
  g_autoptr(WeirTensor) want = nms_ref(bx, sc, B, C, N, M, 0.3f, 0.45f);
  assert_true(want->shape[0] > 2 && want->shape[0] < 12); /* trims */
  op_check(f, o, &want, 1);
  op_free(o);
}

static int setup(void **state) {
  Fixture *f = fixture_new();
  f->opts.flags = TEST_FLAGS;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_free(*state);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_validate_reads),
      cmocka_unit_test(test_validate_count),
      cmocka_unit_test(test_json),
      cmocka_unit_test(test_trim),
      cmocka_unit_test_setup_teardown(test_non_zero, setup, teardown),
      cmocka_unit_test_setup_teardown(test_compress, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unique, setup, teardown),
      cmocka_unit_test_setup_teardown(test_nms, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
