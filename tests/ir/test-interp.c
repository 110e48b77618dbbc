/* test-interp.c — the reference interpreter.
 *
 * Every program here is built with the builder API (the samples are also
 * rebuilt node for node), run on inputs from weir_tensor_fill_random with a
 * fixed seed or written out by hand, and compared with results computed
 * independently in plain C loops.  The error tests check the message
 * fragments users rely on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "weir-interp.h"
#include "weir-json.h"

/* ---------------------------------------------------------------- helpers */

static WeirMemlet *edge(WeirGraph *g, WeirState *s, WeirNode *src,
                        const char *src_conn, WeirNode *dst,
                        const char *dst_conn, const char *data,
                        const char *subset) {
  g_autoptr(GError) err = NULL;
  WeirMemlet *m = weir_state_add_memlet(g, s, src->id, src_conn, dst->id,
                                        dst_conn, data, subset, &err);
  if (!m)
    fail_msg("memlet: %s", err->message);
  return m;
}

static void array(WeirGraph *g, const char *name, WeirDType dtype,
                  const char *shape, gboolean transient) {
  g_autoptr(GError) err = NULL;
  if (!weir_graph_add_array(g, name, dtype, shape, transient, &err))
    fail_msg("container: %s", err->message);
}

static WeirNode *map(WeirGraph *g, WeirState *s, const char *label,
                     const char *const *params, const char *const *ranges,
                     WeirNode **exit) {
  g_autoptr(GError) err = NULL;
  WeirNode *e = weir_state_add_map(g, s, label, params, ranges,
                                   WEIR_SCHEDULE_PARALLEL, exit, &err);
  if (!e)
    fail_msg("map: %s", err->message);
  return e;
}

/* access -> entry (IN_x) -> entry (OUT_x) -> dst.conn */
static WeirMemlet *map_in(WeirGraph *g, WeirState *s, WeirNode *access,
                          WeirNode *entry, WeirNode *dst, const char *conn,
                          const char *outer, const char *inner) {
  const char *x = access->data;
  g_autofree char *in = g_strconcat("IN_", x, NULL);
  g_autofree char *out = g_strconcat("OUT_", x, NULL);
  weir_node_add_in_conn(entry, in);
  weir_node_add_out_conn(entry, out);
  /* the outer memlet may already exist (several readers) */
  gboolean have = FALSE;
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->dst == entry->id && g_strcmp0(m->dst_conn, in) == 0)
      have = TRUE;
  }
  if (!have)
    edge(g, s, access, NULL, entry, in, x, outer);
  return edge(g, s, entry, out, dst, conn, x, inner);
}

/* src.conn -> exit (IN_x) -> exit (OUT_x) -> access */
static WeirMemlet *map_out(WeirGraph *g, WeirState *s, WeirNode *src,
                           const char *conn, WeirNode *exit, WeirNode *access,
                           const char *inner, const char *outer, WeirWcr wcr) {
  const char *x = access->data;
  g_autofree char *in = g_strconcat("IN_", x, NULL);
  g_autofree char *out = g_strconcat("OUT_", x, NULL);
  weir_node_add_in_conn(exit, in);
  weir_node_add_out_conn(exit, out);
  WeirMemlet *m = edge(g, s, src, conn, exit, in, x, inner);
  m->wcr = wcr;
  WeirMemlet *o = edge(g, s, exit, out, access, NULL, x, outer);
  o->wcr = wcr;
  return m;
}

static WeirTensor *tensor(WeirDType dtype, guint rank, const gint64 *shape,
                          guint64 seed) {
  WeirTensor *t = weir_tensor_new(dtype, rank, shape);
  if (seed)
    weir_tensor_fill_random(t, seed);
  return t;
}

static GHashTable *args_new(void) {
  return g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                               (GDestroyNotify)weir_tensor_free);
}

static gboolean run(WeirGraph *g, GHashTable *symbols, GHashTable *args,
                    guint64 max_transitions, GError **error) {
  WeirInterpOptions opt = {.max_transitions = max_transitions};
  return weir_interpret(g, symbols, args, &opt, error);
}

static void run_ok(WeirGraph *g, GHashTable *symbols, GHashTable *args) {
  g_autoptr(GError) err = NULL;
  if (!run(g, symbols, args, 0, &err))
    fail_msg("interpret: %s", err->message);
}

static void expect_error(WeirGraph *g, GHashTable *symbols, GHashTable *args,
                         guint64 max_transitions, const char *fragment) {
  g_autoptr(GError) err = NULL;
  assert_false(run(g, symbols, args, max_transitions, &err));
  assert_non_null(err);
  if (!strstr(err->message, fragment))
    fail_msg("error '%s' does not contain '%s'", err->message, fragment);
}

#define F32(t) ((float *)(t)->data)
#define F64(t) ((double *)(t)->data)
#define I32(t) ((gint32 *)(t)->data)
#define I64(t) ((gint64 *)(t)->data)
#define U8(t) ((guint8 *)(t)->data)
#define S(...) ((const char *const[]){__VA_ARGS__, NULL})

/* ---------------------------------------------------------------- samples */

static WeirGraph *build_vector_add(void) {
  WeirGraph *g = weir_graph_new("vector_add");
  weir_graph_add_symbol(g, "N");
  array(g, "A", WEIR_DTYPE_F32, "N", FALSE);
  array(g, "B", WEIR_DTYPE_F32, "N", FALSE);
  array(g, "C", WEIR_DTYPE_F32, "N", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *b = weir_state_add_access(g, s, "B");
  WeirNode *exit;
  WeirNode *entry = map(g, s, "add", S("i"), S("0:N"), &exit);
  WeirNode *t =
      weir_state_add_tasklet(g, s, "add", S("a", "b"), S("c"), "c = a + b");
  WeirNode *c = weir_state_add_access(g, s, "C");
  map_in(g, s, a, entry, t, "a", "0:N", "i");
  map_in(g, s, b, entry, t, "b", "0:N", "i");
  map_out(g, s, t, "c", exit, c, "i", "0:N", WEIR_WCR_NONE);
  return g;
}

static WeirGraph *build_matmul(void) {
  WeirGraph *g = weir_graph_new("matmul");
  array(g, "A", WEIR_DTYPE_F32, "64, 32", FALSE);
  array(g, "B", WEIR_DTYPE_F32, "32, 48", FALSE);
  array(g, "C", WEIR_DTYPE_F32, "64, 48", FALSE);
  WeirState *init = weir_graph_add_state(g, "init");
  WeirNode *exit;
  WeirNode *entry = map(g, init, "init", S("i", "j"), S("0:64", "0:48"), &exit);
  WeirNode *zero =
      weir_state_add_tasklet(g, init, "zero", NULL, S("c"), "c = 0");
  WeirNode *c0 = weir_state_add_access(g, init, "C");
  edge(g, init, entry, NULL, zero, NULL, NULL, NULL);
  map_out(g, init, zero, "c", exit, c0, "i, j", "0:64, 0:48", WEIR_WCR_NONE);

  WeirState *mul = weir_graph_add_state(g, "multiply");
  WeirNode *a = weir_state_add_access(g, mul, "A");
  WeirNode *b = weir_state_add_access(g, mul, "B");
  entry =
      map(g, mul, "matmul", S("i", "j", "k"), S("0:64", "0:48", "0:32"), &exit);
  WeirNode *t =
      weir_state_add_tasklet(g, mul, "mac", S("a", "b"), S("c"), "c = a * b");
  WeirNode *c = weir_state_add_access(g, mul, "C");
  map_in(g, mul, a, entry, t, "a", "0:64, 0:32", "i, k");
  map_in(g, mul, b, entry, t, "b", "0:32, 0:48", "k, j");
  map_out(g, mul, t, "c", exit, c, "i, j", "0:64, 0:48", WEIR_WCR_SUM);
  assert_non_null(weir_graph_add_transition(g, init->id, mul->id, NULL, NULL));
  return g;
}

static WeirGraph *build_softmax(void) {
  WeirGraph *g = weir_graph_new("softmax");
  array(g, "X", WEIR_DTYPE_F32, "32, 64", FALSE);
  array(g, "Y", WEIR_DTYPE_F32, "32, 64", FALSE);
  array(g, "mx", WEIR_DTYPE_F32, "32", TRUE);
  array(g, "s", WEIR_DTYPE_F32, "32", TRUE);
  array(g, "e", WEIR_DTYPE_F32, "32, 64", TRUE);
  WeirState *st = weir_graph_add_state(g, "softmax");
  WeirNode *x = weir_state_add_access(g, st, "X");
  WeirNode *exit;
  /* init: mx[i] = X[i, 0], s[i] = 0 */
  WeirNode *entry = map(g, st, "init", S("i"), S("0:32"), &exit);
  WeirNode *t = weir_state_add_tasklet(g, st, "init", S("x0"), S("m", "z"),
                                       "m = x0\nz = 0");
  WeirNode *mx1 = weir_state_add_access(g, st, "mx");
  WeirNode *s1 = weir_state_add_access(g, st, "s");
  map_in(g, st, x, entry, t, "x0", "0:32, 0", "i, 0");
  map_out(g, st, t, "m", exit, mx1, "i", "0:32", WEIR_WCR_NONE);
  map_out(g, st, t, "z", exit, s1, "i", "0:32", WEIR_WCR_NONE);
  /* rowmax */
  entry = map(g, st, "rowmax", S("i", "j"), S("0:32", "0:64"), &exit);
  t = weir_state_add_tasklet(g, st, "rowmax", S("x"), S("m"), "m = x");
  WeirNode *mx2 = weir_state_add_access(g, st, "mx");
  map_in(g, st, x, entry, t, "x", "0:32, 0:64", "i, j");
  map_out(g, st, t, "m", exit, mx2, "i", "0:32", WEIR_WCR_MAX);
  edge(g, st, mx1, NULL, entry, NULL, NULL, NULL);
  /* expsum */
  entry = map(g, st, "expsum", S("i", "j"), S("0:32", "0:64"), &exit);
  t = weir_state_add_tasklet(g, st, "expsum", S("x", "m"), S("ev", "z"),
                             "v = exp(x - m)\nev = v\nz = v");
  WeirNode *e = weir_state_add_access(g, st, "e");
  WeirNode *s2 = weir_state_add_access(g, st, "s");
  map_in(g, st, x, entry, t, "x", "0:32, 0:64", "i, j");
  map_in(g, st, mx2, entry, t, "m", "0:32", "i");
  map_out(g, st, t, "ev", exit, e, "i, j", "0:32, 0:64", WEIR_WCR_NONE);
  map_out(g, st, t, "z", exit, s2, "i", "0:32", WEIR_WCR_SUM);
  edge(g, st, s1, NULL, entry, NULL, NULL, NULL);
  /* normalize */
  entry = map(g, st, "normalize", S("i", "j"), S("0:32", "0:64"), &exit);
  t = weir_state_add_tasklet(g, st, "normalize", S("ev", "z"), S("y"),
                             "y = ev / z");
  WeirNode *y = weir_state_add_access(g, st, "Y");
  map_in(g, st, e, entry, t, "ev", "0:32, 0:64", "i, j");
  map_in(g, st, s2, entry, t, "z", "0:32", "i");
  map_out(g, st, t, "y", exit, y, "i, j", "0:32, 0:64", WEIR_WCR_NONE);
  return g;
}

static WeirGraph *build_loop(void) {
  WeirGraph *g = weir_graph_new("axpb_loop");
  weir_graph_add_symbol(g, "T");
  weir_graph_add_symbol(g, "t");
  array(g, "x", WEIR_DTYPE_F32, "256", FALSE);
  array(g, "a", WEIR_DTYPE_F32, "", FALSE);
  array(g, "b", WEIR_DTYPE_F32, "", FALSE);
  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *guard = weir_graph_add_state(g, "guard");
  WeirState *body = weir_graph_add_state(g, "body");
  WeirState *done = weir_graph_add_state(g, "done");
  WeirNode *x = weir_state_add_access(g, body, "x");
  WeirNode *a = weir_state_add_access(g, body, "a");
  WeirNode *b = weir_state_add_access(g, body, "b");
  WeirNode *exit;
  WeirNode *entry = map(g, body, "axpb", S("i"), S("0:256"), &exit);
  WeirNode *t = weir_state_add_tasklet(g, body, "axpb", S("xi", "av", "bv"),
                                       S("xo"), "xo = xi * av + bv");
  WeirNode *x2 = weir_state_add_access(g, body, "x");
  map_in(g, body, x, entry, t, "xi", "0:256", "i");
  map_in(g, body, a, entry, t, "av", "", "");
  map_in(g, body, b, entry, t, "bv", "", "");
  map_out(g, body, t, "xo", exit, x2, "i", "0:256", WEIR_WCR_NONE);
  WeirTransition *tr =
      weir_graph_add_transition(g, init->id, guard->id, NULL, NULL);
  assert_true(weir_transition_add_assignment(tr, "t", "0", NULL));
  assert_non_null(
      weir_graph_add_transition(g, guard->id, body->id, "t < T", NULL));
  tr = weir_graph_add_transition(g, body->id, guard->id, NULL, NULL);
  assert_true(weir_transition_add_assignment(tr, "t", "t + 1", NULL));
  assert_non_null(
      weir_graph_add_transition(g, guard->id, done->id, "t >= T", NULL));
  return g;
}

/* Checks, shared by the builder and the JSON versions of the samples. */

static void check_vector_add(WeirGraph *g) {
  const gint64 n = 1000;
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "N", n);
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *A = tensor(WEIR_DTYPE_F32, 1, &n, 1);
  WeirTensor *B = tensor(WEIR_DTYPE_F32, 1, &n, 2);
  WeirTensor *C = tensor(WEIR_DTYPE_F32, 1, &n, 0);
  g_hash_table_insert(args, "A", A);
  g_hash_table_insert(args, "B", B);
  g_hash_table_insert(args, "C", C);
  run_ok(g, sym, args);
  for (gint64 i = 0; i < n; i++) {
    float want = F32(A)[i] + F32(B)[i];
    assert_true(F32(C)[i] == want);
  }
}

static void check_matmul(WeirGraph *g) {
  const gint64 sa[] = {64, 32}, sb[] = {32, 48}, sc[] = {64, 48};
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *A = tensor(WEIR_DTYPE_F32, 2, sa, 3);
  WeirTensor *B = tensor(WEIR_DTYPE_F32, 2, sb, 4);
  WeirTensor *C = tensor(WEIR_DTYPE_F32, 2, sc, 5); /* garbage: zeroed */
  g_hash_table_insert(args, "A", A);
  g_hash_table_insert(args, "B", B);
  g_hash_table_insert(args, "C", C);
  run_ok(g, NULL, args);
  for (int i = 0; i < 64; i++)
    for (int j = 0; j < 48; j++) {
      double ref = 0;
      for (int k = 0; k < 32; k++)
        ref += (double)F32(A)[i * 32 + k] * F32(B)[k * 48 + j];
      double got = F32(C)[i * 48 + j];
      assert_true(fabs(got - ref) <= 1e-4 * fmax(1.0, fabs(ref)));
    }
}

static void check_softmax(WeirGraph *g) {
  const gint64 shape[] = {32, 64};
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *X = tensor(WEIR_DTYPE_F32, 2, shape, 6);
  WeirTensor *Y = tensor(WEIR_DTYPE_F32, 2, shape, 0);
  /* make the rows' maxima differ from their first elements */
  for (int i = 0; i < 32; i++)
    F32(X)[i * 64 + 1 + i] = 3.0f + (float)i * 0.1f;
  g_hash_table_insert(args, "X", X);
  g_hash_table_insert(args, "Y", Y);
  run_ok(g, NULL, args);
  for (int i = 0; i < 32; i++) {
    double m = -INFINITY, z = 0, rowsum = 0;
    for (int j = 0; j < 64; j++)
      m = fmax(m, F32(X)[i * 64 + j]);
    for (int j = 0; j < 64; j++)
      z += exp(F32(X)[i * 64 + j] - m);
    for (int j = 0; j < 64; j++) {
      double ref = exp(F32(X)[i * 64 + j] - m) / z;
      double got = F32(Y)[i * 64 + j];
      assert_true(fabs(got - ref) <= 1e-5 * fmax(1e-3, ref));
      rowsum += got;
    }
    assert_true(fabs(rowsum - 1.0) < 1e-5);
  }
}

static void check_loop(WeirGraph *g) {
  const gint64 n = 256;
  const int T = 7;
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "T", T);
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *x = tensor(WEIR_DTYPE_F32, 1, &n, 7);
  WeirTensor *a = tensor(WEIR_DTYPE_F32, 0, NULL, 0);
  WeirTensor *b = tensor(WEIR_DTYPE_F32, 0, NULL, 0);
  F32(a)[0] = 0.9f;
  F32(b)[0] = 0.25f;
  g_autoptr(WeirTensor) x0 = weir_tensor_copy(x);
  g_hash_table_insert(args, "x", x);
  g_hash_table_insert(args, "a", a);
  g_hash_table_insert(args, "b", b);
  run_ok(g, sym, args);
  /* x_T = x_0 a^T + b (a^(T-1) + ... + 1) */
  double av = 0.9f, bv = 0.25f, aT = pow(av, T), geo = 0;
  for (int k = 0; k < T; k++)
    geo += pow(av, k);
  for (gint64 i = 0; i < n; i++) {
    double ref = F32(x0)[i] * aT + bv * geo;
    assert_true(fabs(F32(x)[i] - ref) <= 1e-5 * fmax(1.0, fabs(ref)));
  }
  /* the symbols passed in are not modified (t was bound internally) */
  assert_null(g_hash_table_lookup(sym, "t"));
}

static void test_vector_add(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_vector_add();
  check_vector_add(g);
}

static void test_matmul(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_matmul();
  check_matmul(g);
}

static void test_softmax(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_softmax();
  check_softmax(g);
}

static void test_loop(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_loop();
  check_loop(g);
}

/* The same programs as loaded from samples/ */
static WeirGraph *load_sample(const char *name) {
  g_autofree char *path = g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
  g_autoptr(GError) err = NULL;
  WeirGraph *g = weir_graph_load(path, &err);
  if (!g)
    fail_msg("%s: %s", path, err->message);
  return g;
}

static void test_samples_from_json(void **state) {
  (void)state;
  g_autoptr(WeirGraph) va = load_sample("vector_add.json");
  check_vector_add(va);
  g_autoptr(WeirGraph) mm = load_sample("matmul.json");
  check_matmul(mm);
  g_autoptr(WeirGraph) sm = load_sample("softmax.json");
  check_softmax(sm);
  g_autoptr(WeirGraph) lp = load_sample("loop.json");
  check_loop(lp);
}

/* ------------------------------------------------------------------ dtypes */

static void test_dtypes(void **state) {
  (void)state;
  WeirGraph *g = weir_graph_new("dtypes");
  g_autoptr(WeirGraph) owner = g;
  const char *names[] = {"x", "y", "a",  "b",  "c",  "d", "p",
                         "q", "f", "qd", "qm", "wd", "l"};
  WeirDType types[] = {WEIR_DTYPE_F64,  WEIR_DTYPE_F64,  WEIR_DTYPE_I32,
                       WEIR_DTYPE_I32,  WEIR_DTYPE_I64,  WEIR_DTYPE_I64,
                       WEIR_DTYPE_BOOL, WEIR_DTYPE_BOOL, WEIR_DTYPE_F64,
                       WEIR_DTYPE_I32,  WEIR_DTYPE_I32,  WEIR_DTYPE_I64,
                       WEIR_DTYPE_BOOL};
  for (guint k = 0; k < G_N_ELEMENTS(names); k++)
    array(g, names[k], types[k], "8", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *exit;
  WeirNode *entry = map(g, s, "ops", S("i"), S("0:8"), &exit);
  WeirNode *t = weir_state_add_tasklet(
      g, s, "ops", S("xv", "yv", "av", "bv", "cv", "dv", "pv", "qv"),
      S("fo", "qdo", "qmo", "wdo", "lo"),
      "fo = xv / yv + 1.5\n"
      "qdo = av / bv\n"
      "qmo = av % bv\n"
      "wdo = cv / dv\n"
      "lo = pv && !qv || av < 0\n");
  const char *in_conns[] = {"xv", "yv", "av", "bv", "cv", "dv", "pv", "qv"};
  for (guint k = 0; k < 8; k++) {
    WeirNode *acc = weir_state_add_access(g, s, names[k]);
    map_in(g, s, acc, entry, t, in_conns[k], "0:8", "i");
  }
  const char *out_conns[] = {"fo", "qdo", "qmo", "wdo", "lo"};
  for (guint k = 0; k < 5; k++) {
    WeirNode *acc = weir_state_add_access(g, s, names[8 + k]);
    map_out(g, s, t, out_conns[k], exit, acc, "i", "0:8", WEIR_WCR_NONE);
  }
  const gint64 n = 8;
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *ts[13];
  for (guint k = 0; k < 13; k++) {
    ts[k] = tensor(types[k], 1, &n, 0);
    g_hash_table_insert(args, (gpointer)names[k], ts[k]);
  }
  const gint32 av[] = {-7, 7, -8, 9, 100, -1, 0, 2147483647};
  const gint32 bv[] = {2, -2, 3, 4, -7, 5, 3, 2};
  const gint64 cv[] = {-9000000000LL, 9, -9, 1, 5, -5, 12345678901LL, 0};
  const gint64 dv[] = {7, 2, 2, 1, -2, 3, 10, 9};
  for (guint i = 0; i < 8; i++) {
    F64(ts[0])[i] = 1.0 + i * 0.3;
    F64(ts[1])[i] = 3.5 - i;
    I32(ts[2])[i] = av[i];
    I32(ts[3])[i] = bv[i];
    I64(ts[4])[i] = cv[i];
    I64(ts[5])[i] = dv[i];
    U8(ts[6])[i] = (i & 1) != 0;
    U8(ts[7])[i] = (i & 2) != 0;
  }
  run_ok(g, NULL, args);
  for (guint i = 0; i < 8; i++) {
    assert_true(F64(ts[8])[i] == F64(ts[0])[i] / F64(ts[1])[i] + 1.5);
    assert_int_equal(I32(ts[9])[i], av[i] / bv[i]);
    assert_int_equal(I32(ts[10])[i], av[i] % bv[i]);
    assert_int_equal(I64(ts[11])[i], cv[i] / dv[i]);
    gboolean want = ((i & 1) && !(i & 2)) || av[i] < 0;
    assert_int_equal(U8(ts[12])[i], want);
  }
  /* truncation toward zero, not floor */
  assert_int_equal(I32(ts[9])[0], -3);
  assert_int_equal(I32(ts[10])[0], -1);
}

/* --------------------------------------------------------------------- wcr */

static void test_wcr(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("wcr");
  array(g, "v", WEIR_DTYPE_I64, "5", FALSE);
  array(g, "w", WEIR_DTYPE_F32, "5", FALSE);
  array(g, "osum", WEIR_DTYPE_I64, "", FALSE);
  array(g, "oprod", WEIR_DTYPE_I64, "", FALSE);
  array(g, "omin", WEIR_DTYPE_F32, "", FALSE);
  array(g, "omax", WEIR_DTYPE_F32, "", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *exit;
  WeirNode *entry = map(g, s, "reduce", S("i"), S("0:5"), &exit);
  WeirNode *t = weir_state_add_tasklet(g, s, "reduce", S("x", "y"),
                                       S("s", "p", "lo", "hi"),
                                       "s = x\np = x\nlo = y\nhi = y");
  map_in(g, s, weir_state_add_access(g, s, "v"), entry, t, "x", "0:5", "i");
  map_in(g, s, weir_state_add_access(g, s, "w"), entry, t, "y", "0:5", "i");
  const struct {
    const char *conn, *data;
    WeirWcr wcr;
  } outs[] = {{"s", "osum", WEIR_WCR_SUM},
              {"p", "oprod", WEIR_WCR_PROD},
              {"lo", "omin", WEIR_WCR_MIN},
              {"hi", "omax", WEIR_WCR_MAX}};
  for (guint k = 0; k < G_N_ELEMENTS(outs); k++)
    map_out(g, s, t, outs[k].conn, exit,
            weir_state_add_access(g, s, outs[k].data), "", "", outs[k].wcr);
  const gint64 n = 5;
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *v = tensor(WEIR_DTYPE_I64, 1, &n, 0);
  WeirTensor *w = tensor(WEIR_DTYPE_F32, 1, &n, 11);
  WeirTensor *os = tensor(WEIR_DTYPE_I64, 0, NULL, 0);
  WeirTensor *op = tensor(WEIR_DTYPE_I64, 0, NULL, 0);
  WeirTensor *olo = tensor(WEIR_DTYPE_F32, 0, NULL, 0);
  WeirTensor *ohi = tensor(WEIR_DTYPE_F32, 0, NULL, 0);
  for (int i = 0; i < 5; i++)
    I64(v)[i] = i + 1;
  I64(os)[0] = 100; /* accumulates onto the existing value */
  I64(op)[0] = 2;
  F32(olo)[0] = 0.5f;
  F32(ohi)[0] = -0.5f;
  g_hash_table_insert(args, "v", v);
  g_hash_table_insert(args, "w", w);
  g_hash_table_insert(args, "osum", os);
  g_hash_table_insert(args, "oprod", op);
  g_hash_table_insert(args, "omin", olo);
  g_hash_table_insert(args, "omax", ohi);
  run_ok(g, NULL, args);
  float lo = 0.5f, hi = -0.5f;
  for (int i = 0; i < 5; i++) {
    lo = fminf(lo, F32(w)[i]);
    hi = fmaxf(hi, F32(w)[i]);
  }
  assert_int_equal(I64(os)[0], 100 + 15);
  assert_int_equal(I64(op)[0], 2 * 120);
  assert_true(F32(olo)[0] == lo);
  assert_true(F32(ohi)[0] == hi);
}

/* ------------------------------------------------------------------ copies */

static void test_copies(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("copies");
  array(g, "A", WEIR_DTYPE_F32, "4, 5", FALSE);
  array(g, "B", WEIR_DTYPE_F32, "6, 6", FALSE);
  array(g, "C", WEIR_DTYPE_F32, "2, 3", FALSE);
  array(g, "D", WEIR_DTYPE_F32, "5", FALSE);
  array(g, "E", WEIR_DTYPE_F64, "6", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *b = weir_state_add_access(g, s, "B");
  WeirNode *c = weir_state_add_access(g, s, "C");
  WeirNode *d = weir_state_add_access(g, s, "D");
  WeirNode *e = weir_state_add_access(g, s, "E");
  /* A[1:3, 0:3] -> B[2:4, 3:6]: subset on the source, `other` on B */
  WeirMemlet *m = edge(g, s, a, NULL, b, NULL, "A", "1:3, 0:3");
  assert_true(weir_memlet_set_other(m, "2:4, 3:6", NULL));
  /* A[2:4, 1:4] -> C: the memlet names the destination */
  m = edge(g, s, a, NULL, c, NULL, "C", "0:2, 0:3");
  assert_true(weir_memlet_set_other(m, "2:4, 1:4", NULL));
  /* D = A[3, 0:5]: a row into a vector (ranks differ) */
  m = edge(g, s, a, NULL, d, NULL, "A", "3, 0:5");
  assert_true(weir_memlet_set_other(m, "0:5", NULL));
  /* B[2, 0:6] -> E (f32 to f64), after B was written */
  m = edge(g, s, b, NULL, e, NULL, "B", "2, 0:6");
  assert_true(weir_memlet_set_other(m, "0:6", NULL));

  const gint64 sa[] = {4, 5}, sb[] = {6, 6}, sc[] = {2, 3}, sd = 5, se = 6;
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *A = tensor(WEIR_DTYPE_F32, 2, sa, 21);
  WeirTensor *B = tensor(WEIR_DTYPE_F32, 2, sb, 0);
  WeirTensor *C = tensor(WEIR_DTYPE_F32, 2, sc, 0);
  WeirTensor *D = tensor(WEIR_DTYPE_F32, 1, &sd, 0);
  WeirTensor *E = tensor(WEIR_DTYPE_F64, 1, &se, 0);
  for (int i = 0; i < 5; i++)
    F32(D)[i] = 1.0f;
  g_hash_table_insert(args, "A", A);
  g_hash_table_insert(args, "B", B);
  g_hash_table_insert(args, "C", C);
  g_hash_table_insert(args, "D", D);
  g_hash_table_insert(args, "E", E);
  run_ok(g, NULL, args);
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) {
      float want = 0.0f;
      if (i >= 2 && i < 4 && j >= 3)
        want = F32(A)[(i - 1) * 5 + (j - 3)];
      assert_true(F32(B)[i * 6 + j] == want);
    }
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      assert_true(F32(C)[i * 3 + j] == F32(A)[(i + 2) * 5 + j + 1]);
  for (int j = 0; j < 5; j++)
    assert_true(F32(D)[j] == F32(A)[15 + j]);
  for (int j = 0; j < 6; j++)
    assert_true(F64(E)[j] == (double)F32(B)[2 * 6 + j]);
}

/* ----------------------------------------------------------------- strides */

static void test_strided(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("strided");
  array(g, "x", WEIR_DTYPE_I32, "8", FALSE);
  array(g, "out", WEIR_DTYPE_I32, "4", FALSE);
  array(g, "odd", WEIR_DTYPE_I32, "4", FALSE);
  array(g, "sum", WEIR_DTYPE_I32, "", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  /* map over i in 0:8:2: out[i // 2] = 10 * x[i] + x[i + 1], reading the
   * pair through an indexed connector */
  WeirNode *exit;
  WeirNode *entry = map(g, s, "pairs", S("i"), S("0:8:2"), &exit);
  WeirNode *t = weir_state_add_tasklet(g, s, "pair", S("v"), S("o"),
                                       "o = 10 * v[0] + v[1]");
  WeirNode *x = weir_state_add_access(g, s, "x");
  map_in(g, s, x, entry, t, "v", "0:8", "i:i + 2");
  map_out(g, s, t, "o", exit, weir_state_add_access(g, s, "out"), "i // 2",
          "0:4", WEIR_WCR_NONE);
  /* copy of a step-2 subset: odd = x[1:8:2] */
  WeirMemlet *m = edge(g, s, x, NULL, weir_state_add_access(g, s, "odd"), NULL,
                       "x", "1:8:2");
  assert_true(weir_memlet_set_other(m, "0:4", NULL));
  /* a top-level tasklet reading a step-2 subset: sum = x[0]+x[2]+x[4]+x[6] */
  WeirNode *t2 = weir_state_add_tasklet(g, s, "evens", S("e"), S("r"),
                                        "r = e[0] + e[1] + e[2] + e[3]");
  edge(g, s, x, NULL, t2, "e", "x", "0:8:2");
  edge(g, s, t2, "r", weir_state_add_access(g, s, "sum"), NULL, "sum", "");

  const gint64 n8 = 8, n4 = 4;
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *X = tensor(WEIR_DTYPE_I32, 1, &n8, 31);
  WeirTensor *O = tensor(WEIR_DTYPE_I32, 1, &n4, 0);
  WeirTensor *Odd = tensor(WEIR_DTYPE_I32, 1, &n4, 0);
  WeirTensor *Sum = tensor(WEIR_DTYPE_I32, 0, NULL, 0);
  g_hash_table_insert(args, "x", X);
  g_hash_table_insert(args, "out", O);
  g_hash_table_insert(args, "odd", Odd);
  g_hash_table_insert(args, "sum", Sum);
  run_ok(g, NULL, args);
  for (int k = 0; k < 4; k++) {
    assert_int_equal(I32(O)[k], 10 * I32(X)[2 * k] + I32(X)[2 * k + 1]);
    assert_int_equal(I32(Odd)[k], I32(X)[2 * k + 1]);
  }
  assert_int_equal(I32(Sum)[0], I32(X)[0] + I32(X)[2] + I32(X)[4] + I32(X)[6]);
}

/* Floor division as the IR defines it (rounds toward minus infinity). */
static gint64 floordiv(gint64 a, gint64 b) {
  gint64 q = a / b;
  return (a % b != 0 && ((a % b < 0) != (b < 0))) ? q - 1 : q;
}

/* Subsets whose indices are not affine in the map parameters: floor
 * division and modulo of negative values, min and max, a sum holding a
 * floor division, and a product of two symbols; and an affine one with a
 * coefficient (the interpreter evaluates all of them over symbol slots,
 * not through weir_expr_eval). */
static void test_subset_expressions(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("subsets");
  assert_true(weir_graph_add_symbol(g, "N"));
  array(g, "x", WEIR_DTYPE_I32, "6", FALSE);
  array(g, "y", WEIR_DTYPE_I32, "4", FALSE);
  array(g, "z", WEIR_DTYPE_I32, "8", FALSE);
  array(g, "w", WEIR_DTYPE_I32, "8", FALSE);
  array(g, "v", WEIR_DTYPE_I32, "40", FALSE);
  array(g, "out", WEIR_DTYPE_I32, "16", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *exit;
  WeirNode *entry = map(g, s, "m", S("i"), S("0:16"), &exit);
  WeirNode *t =
      weir_state_add_tasklet(g, s, "mix", S("a", "b", "c", "d", "e"), S("o"),
                             "o = 10000 * e + 1000 * a + 100 * b + "
                             "10 * c + d");
  map_in(g, s, weir_state_add_access(g, s, "x"), entry, t, "a", "0:6",
         "(i - 7) // 3 + 3");
  map_in(g, s, weir_state_add_access(g, s, "y"), entry, t, "b", "0:4",
         "(i - 7) % 4");
  map_in(g, s, weir_state_add_access(g, s, "z"), entry, t, "c", "0:8",
         "max(min(i, 9) - 2, 0)");
  map_in(g, s, weir_state_add_access(g, s, "w"), entry, t, "d", "0:8",
         "(i * N) // 8");
  map_in(g, s, weir_state_add_access(g, s, "v"), entry, t, "e", "0:40",
         "2 * i + 3");
  map_out(g, s, t, "o", exit, weir_state_add_access(g, s, "out"), "i", "0:16",
          WEIR_WCR_NONE);

  const gint64 n6 = 6, n4 = 4, n8 = 8, n16 = 16, n40 = 40;
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *X = tensor(WEIR_DTYPE_I32, 1, &n6, 0);
  WeirTensor *Y = tensor(WEIR_DTYPE_I32, 1, &n4, 0);
  WeirTensor *Z = tensor(WEIR_DTYPE_I32, 1, &n8, 0);
  WeirTensor *W = tensor(WEIR_DTYPE_I32, 1, &n8, 0);
  WeirTensor *V = tensor(WEIR_DTYPE_I32, 1, &n40, 0);
  WeirTensor *O = tensor(WEIR_DTYPE_I32, 1, &n16, 0);
  for (int k = 0; k < 40; k++)
    I32(V)[k] = k % 9;
  for (int k = 0; k < 8; k++) {
    if (k < 6)
      I32(X)[k] = k + 1;
    if (k < 4)
      I32(Y)[k] = 5 + k;
    I32(Z)[k] = 9 - k;
    I32(W)[k] = k;
  }
  g_hash_table_insert(args, "x", X);
  g_hash_table_insert(args, "y", Y);
  g_hash_table_insert(args, "z", Z);
  g_hash_table_insert(args, "w", W);
  g_hash_table_insert(args, "v", V);
  g_hash_table_insert(args, "out", O);
  g_autoptr(GHashTable) syms = weir_bindings_new();
  weir_bindings_set(syms, "N", 4);
  run_ok(g, syms, args);
  for (gint64 i = 0; i < 16; i++) {
    gint64 a = I32(X)[floordiv(i - 7, 3) + 3];
    gint64 b = I32(Y)[(i - 7) - 4 * floordiv(i - 7, 4)];
    gint64 c = I32(Z)[MAX(MIN(i, 9) - 2, 0)];
    gint64 d = I32(W)[floordiv(i * 4, 8)];
    gint64 e = I32(V)[2 * i + 3];
    assert_int_equal(I32(O)[i], 10000 * e + 1000 * a + 100 * b + 10 * c + d);
  }
}

/* ------------------------------------------------------------------ gather */

static WeirGraph *build_gather(void) {
  WeirGraph *g = weir_graph_new("gather");
  array(g, "table", WEIR_DTYPE_F64, "10", FALSE);
  array(g, "idx", WEIR_DTYPE_I64, "6", FALSE);
  array(g, "out", WEIR_DTYPE_F64, "6", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *exit;
  WeirNode *entry = map(g, s, "gather", S("i"), S("0:6"), &exit);
  WeirNode *t = weir_state_add_tasklet(g, s, "gather", S("tab", "k"), S("o"),
                                       "o = tab[k]");
  WeirMemlet *m = map_in(g, s, weir_state_add_access(g, s, "table"), entry, t,
                         "tab", "0:10", "0:10");
  m->dynamic = TRUE;
  map_in(g, s, weir_state_add_access(g, s, "idx"), entry, t, "k", "0:6", "i");
  map_out(g, s, t, "o", exit, weir_state_add_access(g, s, "out"), "i", "0:6",
          WEIR_WCR_NONE);
  return g;
}

static void test_gather(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_gather();
  const gint64 n10 = 10, n6 = 6;
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *tab = tensor(WEIR_DTYPE_F64, 1, &n10, 41);
  WeirTensor *idx = tensor(WEIR_DTYPE_I64, 1, &n6, 0);
  WeirTensor *out = tensor(WEIR_DTYPE_F64, 1, &n6, 0);
  const gint64 iv[] = {9, 0, 3, 3, 7, 1};
  memcpy(idx->data, iv, sizeof iv);
  g_hash_table_insert(args, "table", tab);
  g_hash_table_insert(args, "idx", idx);
  g_hash_table_insert(args, "out", out);
  run_ok(g, NULL, args);
  for (int i = 0; i < 6; i++)
    assert_true(F64(out)[i] == F64(tab)[iv[i]]);

  /* an index past the end of the connector's subset is an error naming
   * the tasklet and the connector, not an out-of-bounds read */
  I64(idx)[4] = 12;
  g_autoptr(GError) err = NULL;
  assert_false(run(g, NULL, args, 0, &err));
  assert_non_null(strstr(err->message, "(tasklet 'gather')"));
  assert_non_null(strstr(err->message, "'tab'"));
  assert_non_null(strstr(err->message, "index 12 is out of range"));
  assert_int_equal(err->code, WEIR_ERROR_RUNTIME);
}

/* ---------------------------------------------------- branches and loops */

static WeirGraph *build_branch_loop(void) {
  WeirGraph *g = weir_graph_new("branch_loop");
  weir_graph_add_symbol(g, "K");
  weir_graph_add_symbol(g, "n");
  weir_graph_add_symbol(g, "t");
  array(g, "out", WEIR_DTYPE_I64, "3", FALSE);
  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *pos = weir_graph_add_state(g, "pos");
  WeirState *neg = weir_graph_add_state(g, "neg");
  WeirState *guard = weir_graph_add_state(g, "guard");
  WeirState *body = weir_graph_add_state(g, "body");
  WeirState *done = weir_graph_add_state(g, "done");
  WeirNode *t = weir_state_add_tasklet(g, pos, "one", NULL, S("o"), "o = 1");
  edge(g, pos, t, "o", weir_state_add_access(g, pos, "out"), NULL, "out", "0");
  t = weir_state_add_tasklet(g, neg, "minus", NULL, S("o"), "o = -K");
  edge(g, neg, t, "o", weir_state_add_access(g, neg, "out"), NULL, "out", "0");
  t = weir_state_add_tasklet(g, body, "acc", NULL, S("o"), "o = t * t");
  WeirMemlet *m = edge(g, body, t, "o", weir_state_add_access(g, body, "out"),
                       NULL, "out", "1");
  m->wcr = WEIR_WCR_SUM;
  t = weir_state_add_tasklet(g, done, "fin", NULL, S("o"), "o = t * 1000 + n");
  edge(g, done, t, "o", weir_state_add_access(g, done, "out"), NULL, "out",
       "2");
  /* the first transition whose condition holds is taken: the
   * unconditional one only when K <= 0 */
  assert_non_null(
      weir_graph_add_transition(g, init->id, pos->id, "K > 0", NULL));
  assert_non_null(weir_graph_add_transition(g, init->id, neg->id, NULL, NULL));
  WeirTransition *tr =
      weir_graph_add_transition(g, pos->id, guard->id, NULL, NULL);
  assert_true(weir_transition_add_assignment(tr, "t", "0", NULL));
  tr = weir_graph_add_transition(g, neg->id, guard->id, NULL, NULL);
  assert_true(weir_transition_add_assignment(tr, "t", "0", NULL));
  assert_non_null(
      weir_graph_add_transition(g, guard->id, body->id, "t < n", NULL));
  tr = weir_graph_add_transition(g, body->id, guard->id, NULL, NULL);
  assert_true(weir_transition_add_assignment(tr, "t", "t + 1", NULL));
  /* simultaneous assignment: n takes the old t, t the old n */
  tr = weir_graph_add_transition(g, guard->id, done->id, "t >= n", NULL);
  assert_true(weir_transition_add_assignment(tr, "t", "n * 100", NULL));
  assert_true(weir_transition_add_assignment(tr, "n", "t + 1", NULL));
  return g;
}

static void run_branch_loop(WeirGraph *g, gint64 K, gint64 n, gint64 *out0,
                            gint64 *out1, gint64 *out2) {
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "K", K);
  weir_bindings_set(sym, "n", n);
  const gint64 three = 3;
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *out = tensor(WEIR_DTYPE_I64, 1, &three, 0);
  g_hash_table_insert(args, "out", out);
  run_ok(g, sym, args);
  *out0 = I64(out)[0];
  *out1 = I64(out)[1];
  *out2 = I64(out)[2];
}

static void test_branch_loop(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_branch_loop();
  gint64 o0, o1, o2;
  run_branch_loop(g, 3, 5, &o0, &o1, &o2);
  assert_int_equal(o0, 1);
  assert_int_equal(o1, 0 + 1 + 4 + 9 + 16);
  /* t = n * 100 and n = t + 1 with the old values: t = 500, n = 6 */
  assert_int_equal(o2, 500 * 1000 + 6);
  run_branch_loop(g, -4, 0, &o0, &o1, &o2);
  assert_int_equal(o0, 4);
  assert_int_equal(o1, 0);
  assert_int_equal(o2, 0 * 1000 + 1);
  run_branch_loop(g, 0, 3, &o0, &o1, &o2);
  assert_int_equal(o0, 0);
  assert_int_equal(o1, 5);
  assert_int_equal(o2, 300 * 1000 + 4);
}

/* ------------------------------------------------------------------ nested */

/* X[M, M] (an argument view): X[i, j] = 2 * X[i, j] + M */
static WeirGraph *build_block_program(void) {
  WeirGraph *g = weir_graph_new("block");
  weir_graph_add_symbol(g, "M");
  array(g, "X", WEIR_DTYPE_F64, "M, M", FALSE);
  WeirState *s = weir_graph_add_state(g, "body");
  WeirNode *exit;
  WeirNode *entry = map(g, s, "scale", S("i", "j"), S("0:M", "0:M"), &exit);
  WeirNode *t =
      weir_state_add_tasklet(g, s, "scale", S("x"), S("y"), "y = 2.0 * x + M");
  map_in(g, s, weir_state_add_access(g, s, "X"), entry, t, "x", "0:M, 0:M",
         "i, j");
  map_out(g, s, t, "y", exit, weir_state_add_access(g, s, "X"), "i, j",
          "0:M, 0:M", WEIR_WCR_NONE);
  return g;
}

static WeirGraph *build_nested(void) {
  WeirGraph *g = weir_graph_new("outer");
  weir_graph_add_symbol(g, "B");
  array(g, "A", WEIR_DTYPE_F64, "8, 8", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *n =
      weir_state_add_nested(g, s, "blk", build_block_program(), S("X"), S("X"));
  assert_true(weir_node_bind_symbol(n, "M", "B + 1", NULL));
  WeirNode *a2 = weir_state_add_access(g, s, "A");
  /* rows 0, 2, 4, 6 and columns B-1 .. B+2 */
  edge(g, s, a, NULL, n, "X", "A", "0:8:2, B - 1:B + 3");
  edge(g, s, n, "X", a2, NULL, "A", "0:8:2, B - 1:B + 3");
  return g;
}

static void test_nested(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_nested();
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "B", 3);
  const gint64 shape[] = {8, 8};
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *A = tensor(WEIR_DTYPE_F64, 2, shape, 51);
  g_autoptr(WeirTensor) A0 = weir_tensor_copy(A);
  g_hash_table_insert(args, "A", A);
  run_ok(g, sym, args);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++) {
      double x = F64(A0)[i * 8 + j];
      gboolean inside = i % 2 == 0 && j >= 2 && j < 6;
      double want = inside ? 2.0 * x + 4.0 : x;
      assert_true(F64(A)[i * 8 + j] == want);
    }

  /* B = 4 makes the block 5 x 5 but the subset stays 4 x 4: an error */
  weir_bindings_set(sym, "B", 4);
  g_autoptr(GError) err = NULL;
  assert_false(run(g, sym, args, 0, &err));
  assert_non_null(strstr(err->message, "(nested 'blk')"));
  assert_non_null(strstr(err->message, "nested argument 'X' is f64[5, 5]"));
  assert_non_null(strstr(err->message, "extent [4, 4]"));
}

/* Nested maps whose inner range depends on the outer parameter, and an
 * output connector with two memlets (the value is written to both). */
static void test_triangle_two_writes(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("triangle");
  array(g, "P", WEIR_DTYPE_I32, "4, 4", FALSE);
  array(g, "Q", WEIR_DTYPE_I32, "4, 4", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *oexit, *iexit;
  WeirNode *outer = map(g, s, "rows", S("i"), S("0:4"), &oexit);
  WeirNode *inner = map(g, s, "cols", S("j"), S("0:i + 1"), &iexit);
  WeirNode *t =
      weir_state_add_tasklet(g, s, "tri", NULL, S("o"), "o = 10 * i + j");
  edge(g, s, outer, NULL, inner, NULL, NULL, NULL);
  edge(g, s, inner, NULL, t, NULL, NULL, NULL);
  WeirNode *pa = weir_state_add_access(g, s, "P");
  WeirNode *qa = weir_state_add_access(g, s, "Q");
  const struct {
    WeirNode *acc;
    const char *inner, *middle;
  } outs[] = {{pa, "i, j", "i, 0:i + 1"}, {qa, "j, i", "0:i + 1, i"}};
  for (guint k = 0; k < 2; k++) {
    const char *x = outs[k].acc->data;
    g_autofree char *in = g_strconcat("IN_", x, NULL);
    g_autofree char *out = g_strconcat("OUT_", x, NULL);
    weir_node_add_in_conn(iexit, in);
    weir_node_add_out_conn(iexit, out);
    weir_node_add_in_conn(oexit, in);
    weir_node_add_out_conn(oexit, out);
    edge(g, s, t, "o", iexit, in, x, outs[k].inner);
    edge(g, s, iexit, out, oexit, in, x, outs[k].middle);
    edge(g, s, oexit, out, outs[k].acc, NULL, x, "0:4, 0:4");
  }
  const gint64 shape[] = {4, 4};
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *P = tensor(WEIR_DTYPE_I32, 2, shape, 0);
  WeirTensor *Q = tensor(WEIR_DTYPE_I32, 2, shape, 0);
  for (int k = 0; k < 16; k++)
    I32(P)[k] = I32(Q)[k] = -1;
  g_hash_table_insert(args, "P", P);
  g_hash_table_insert(args, "Q", Q);
  run_ok(g, NULL, args);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) {
      gint32 want = j <= i ? 10 * i + j : -1;
      assert_int_equal(I32(P)[i * 4 + j], want);
      assert_int_equal(I32(Q)[j * 4 + i], want);
    }
}

/* ------------------------------------------------------------------ errors */

static void test_error_missing_argument(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_vector_add();
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "N", 4);
  const gint64 n = 4;
  g_autoptr(GHashTable) args = args_new();
  g_hash_table_insert(args, "A", tensor(WEIR_DTYPE_F32, 1, &n, 1));
  g_hash_table_insert(args, "C", tensor(WEIR_DTYPE_F32, 1, &n, 1));
  expect_error(g, sym, args, 0, "missing argument 'B' (f32[4])");
  g_hash_table_insert(args, "B", tensor(WEIR_DTYPE_F32, 1, &n, 1));
  g_hash_table_insert(args, "Q", tensor(WEIR_DTYPE_F32, 1, &n, 1));
  expect_error(g, sym, args, 0, "argument 'Q' does not name a container");
}

/* The names of arguments alone, as the interpreter and the runtime check
 * them: sorted, so the first problem does not depend on hashing. */
static void test_argument_names(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("names");
  g_autoptr(GError) err = NULL;
  assert_non_null(
      weir_graph_add_array(g, "a", WEIR_DTYPE_F32, "4", TRUE, &err));
  WeirContainer *k =
      weir_graph_add_array(g, "k", WEIR_DTYPE_F32, "1", FALSE, &err);
  assert_non_null(k);
  static const float one = 1;
  g_autoptr(GBytes) data = g_bytes_new_static(&one, sizeof one);
  weir_container_set_initial(k, data);
  g_autoptr(GHashTable) args = g_hash_table_new(g_str_hash, g_str_equal);
  assert_true(weir_interp_check_argument_names(g, NULL, TRUE, &err));
  g_hash_table_add(args, "k");
  assert_true(weir_interp_check_argument_names(g, args, FALSE, &err));
  assert_false(weir_interp_check_argument_names(g, args, TRUE, &err));
  assert_string_equal(err->message, "argument 'k' names a constant container "
                                    "(its data is compiled into the kernel)");
  g_clear_error(&err);
  g_hash_table_add(args, "b");
  g_hash_table_add(args, "a");
  assert_false(weir_interp_check_argument_names(g, args, FALSE, &err));
  assert_string_equal(err->message, "argument 'a' names a transient container");
  g_clear_error(&err);
  g_hash_table_remove(args, "a");
  assert_false(weir_interp_check_argument_names(g, args, FALSE, &err));
  assert_string_equal(
      err->message,
      "argument 'b' does not name a container of program 'names'");
}

static void test_error_argument_shape(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_matmul();
  const gint64 sa[] = {32, 64}, sb[] = {32, 48}, sc[] = {64, 48};
  g_autoptr(GHashTable) args = args_new();
  g_hash_table_insert(args, "A", tensor(WEIR_DTYPE_F32, 2, sa, 1));
  g_hash_table_insert(args, "B", tensor(WEIR_DTYPE_F32, 2, sb, 1));
  g_hash_table_insert(args, "C", tensor(WEIR_DTYPE_F32, 2, sc, 1));
  expect_error(g, NULL, args, 0,
               "argument 'A': expected f32[64, 32], got f32[32, 64]");
  /* the dtype is checked too */
  const gint64 good[] = {64, 32};
  g_hash_table_insert(args, "A", tensor(WEIR_DTYPE_F64, 2, good, 1));
  expect_error(g, NULL, args, 0,
               "argument 'A': expected f32[64, 32], got f64[64, 32]");
}

static void test_error_unbound_symbol(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_vector_add();
  const gint64 n = 4;
  g_autoptr(GHashTable) args = args_new();
  g_hash_table_insert(args, "A", tensor(WEIR_DTYPE_F32, 1, &n, 1));
  g_hash_table_insert(args, "B", tensor(WEIR_DTYPE_F32, 1, &n, 1));
  g_hash_table_insert(args, "C", tensor(WEIR_DTYPE_F32, 1, &n, 1));
  expect_error(g, NULL, args, 0, "unbound symbol 'N'");

  /* a symbol read only by a transition condition */
  g_autoptr(WeirGraph) l = build_loop();
  const gint64 n256 = 256;
  g_autoptr(GHashTable) largs = args_new();
  g_hash_table_insert(largs, "x", tensor(WEIR_DTYPE_F32, 1, &n256, 1));
  g_hash_table_insert(largs, "a", tensor(WEIR_DTYPE_F32, 0, NULL, 1));
  g_hash_table_insert(largs, "b", tensor(WEIR_DTYPE_F32, 0, NULL, 1));
  expect_error(l, NULL, largs, 0, "'t < T'");
  expect_error(l, NULL, largs, 0, "'T'");
}

static void test_error_library_node(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_vector_add();
  WeirState *s = weir_graph_add_state(g, "conv");
  WeirNode *lib = weir_state_add_library(g, s, "conv1", "Conv", NULL, NULL);
  assert_non_null(weir_graph_add_transition(g, g->start, s->id, NULL, NULL));
  g_autofree char *want = g_strdup_printf(
      "state %u 'conv', node %u (library 'conv1'): library node 'Conv' is "
      "not expanded; expand it first",
      s->id, lib->id);
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "N", 4);
  g_autoptr(GError) err = NULL;
  assert_false(run(g, sym, NULL, 0, &err));
  assert_int_equal(err->code, WEIR_ERROR_UNSUPPORTED);
  assert_string_equal(err->message, want);
}

static void test_error_max_transitions(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("spin");
  weir_graph_add_symbol(g, "t");
  WeirState *s = weir_graph_add_state(g, "spin");
  WeirTransition *tr = weir_graph_add_transition(g, s->id, s->id, NULL, NULL);
  assert_true(weir_transition_add_assignment(tr, "t", "t + 1", NULL));
  g_autoptr(GHashTable) sym = weir_bindings_new();
  weir_bindings_set(sym, "t", 0);
  expect_error(g, sym, NULL, 100, "stopped after 100 transitions");

  /* a finite loop that takes exactly max_transitions succeeds */
  g_autoptr(WeirGraph) l = build_loop(); /* 2 + 2T transitions */
  g_autoptr(GHashTable) lsym = weir_bindings_new();
  weir_bindings_set(lsym, "T", 3);
  const gint64 n256 = 256;
  g_autoptr(GHashTable) args = args_new();
  g_hash_table_insert(args, "x", tensor(WEIR_DTYPE_F32, 1, &n256, 1));
  g_hash_table_insert(args, "a", tensor(WEIR_DTYPE_F32, 0, NULL, 1));
  g_hash_table_insert(args, "b", tensor(WEIR_DTYPE_F32, 0, NULL, 1));
  g_autoptr(GError) err = NULL;
  assert_true(run(l, lsym, args, 8, &err));
  expect_error(l, lsym, args, 7, "stopped after 7 transitions");
}

/* Transients start at zero or with their constant data; a non-transient
 * with constant data is a constant whose argument is optional. */
static void test_initial_data(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("consts");
  array(g, "k", WEIR_DTYPE_F32, "3", FALSE);
  array(g, "tmp", WEIR_DTYPE_I32, "3", TRUE);
  array(g, "out", WEIR_DTYPE_F32, "3", FALSE);
  const float kv[] = {1.5f, -2.0f, 4.0f};
  const gint32 tv[] = {10, 20, 30};
  g_autoptr(GBytes) kb = g_bytes_new(kv, sizeof kv);
  g_autoptr(GBytes) tb = g_bytes_new(tv, sizeof tv);
  weir_container_set_initial(weir_graph_container(g, "k"), kb);
  weir_container_set_initial(weir_graph_container(g, "tmp"), tb);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *exit;
  WeirNode *entry = map(g, s, "add", S("i"), S("0:3"), &exit);
  WeirNode *t = weir_state_add_tasklet(g, s, "add", S("a", "b"), S("c"),
                                       "c = a * f32(b)");
  map_in(g, s, weir_state_add_access(g, s, "k"), entry, t, "a", "0:3", "i");
  map_in(g, s, weir_state_add_access(g, s, "tmp"), entry, t, "b", "0:3", "i");
  map_out(g, s, t, "c", exit, weir_state_add_access(g, s, "out"), "i", "0:3",
          WEIR_WCR_NONE);
  const gint64 n = 3;
  g_autoptr(GHashTable) args = args_new();
  WeirTensor *out = tensor(WEIR_DTYPE_F32, 1, &n, 0);
  g_hash_table_insert(args, "out", out);
  run_ok(g, NULL, args);
  for (int i = 0; i < 3; i++)
    assert_true(F32(out)[i] == kv[i] * (float)tv[i]);
  /* passing the constant overrides it */
  WeirTensor *k = tensor(WEIR_DTYPE_F32, 1, &n, 0);
  F32(k)[0] = F32(k)[1] = F32(k)[2] = 1.0f;
  g_hash_table_insert(args, "k", k);
  run_ok(g, NULL, args);
  for (int i = 0; i < 3; i++)
    assert_true(F32(out)[i] == (float)tv[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_vector_add),
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_loop),
      cmocka_unit_test(test_samples_from_json),
      cmocka_unit_test(test_dtypes),
      cmocka_unit_test(test_wcr),
      cmocka_unit_test(test_copies),
      cmocka_unit_test(test_strided),
      cmocka_unit_test(test_gather),
      cmocka_unit_test(test_branch_loop),
      cmocka_unit_test(test_nested),
      cmocka_unit_test(test_initial_data),
      cmocka_unit_test(test_triangle_two_writes),
      cmocka_unit_test(test_error_missing_argument),
      cmocka_unit_test(test_argument_names),
      cmocka_unit_test(test_error_argument_shape),
      cmocka_unit_test(test_error_unbound_symbol),
      cmocka_unit_test(test_subset_expressions),
      cmocka_unit_test(test_error_library_node),
      cmocka_unit_test(test_error_max_transitions),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
