/* test-analysis.c — data movement, FLOPs, intensity and peak transient
 * memory (ir/analysis.c).
 *
 * The four samples are rebuilt here with the builder, node for node (ids
 * differ from the JSON files, so the tests keep the returned pointers).
 * Every expected number is worked out by hand in the comment next to it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-analysis.h"
#include "weir-json.h"
#include "weir-validate.h"

/* ------------------------------------------------------------------------
 * Helpers
 */

static WeirNode *tasklet(WeirGraph *g, WeirState *s, const char *label,
                         const char *in0, const char *in1, const char *out0,
                         const char *out1, const char *code) {
  const char *ins[] = {in0, in1, NULL};
  const char *outs[] = {out0, out1, NULL};
  return weir_state_add_tasklet(g, s, label, ins, outs, code);
}

/* A map with params/ranges given as NULL-terminated arrays; connectors
 * IN_x/OUT_x on the entry for each name of ins, on the exit for outs. */
static WeirNode *map(WeirGraph *g, WeirState *s, const char *label,
                     const char *const *params, const char *const *ranges,
                     const char *const *ins, const char *const *outs,
                     WeirNode **exit_out) {
  g_autoptr(GError) error = NULL;
  WeirNode *entry = weir_state_add_map(
      g, s, label, params, ranges, WEIR_SCHEDULE_PARALLEL, exit_out, &error);
  assert_null(error);
  assert_non_null(entry);
  for (guint i = 0; ins && ins[i]; i++) {
    g_autofree char *in = g_strdup_printf("IN_%s", ins[i]);
    g_autofree char *out = g_strdup_printf("OUT_%s", ins[i]);
    weir_node_add_in_conn(entry, in);
    weir_node_add_out_conn(entry, out);
  }
  for (guint i = 0; outs && outs[i]; i++) {
    g_autofree char *in = g_strdup_printf("IN_%s", outs[i]);
    g_autofree char *out = g_strdup_printf("OUT_%s", outs[i]);
    weir_node_add_in_conn(*exit_out, in);
    weir_node_add_out_conn(*exit_out, out);
  }
  return entry;
}

static WeirMemlet *edge(WeirGraph *g, WeirState *s, const WeirNode *src,
                        const char *src_conn, const WeirNode *dst,
                        const char *dst_conn, const char *data,
                        const char *subset, const char *volume) {
  g_autoptr(GError) error = NULL;
  WeirMemlet *m = weir_state_add_memlet(g, s, src->id, src_conn, dst->id,
                                        dst_conn, data, subset, &error);
  assert_null(error);
  assert_non_null(m);
  if (volume) {
    g_autoptr(WeirExpr) v = weir_expr_parse(volume, &error);
    assert_null(error);
    weir_memlet_set_volume(m, v);
  }
  return m;
}

static WeirContainer *array(WeirGraph *g, const char *name, const char *shape,
                            gboolean transient) {
  g_autoptr(GError) error = NULL;
  WeirContainer *c =
      weir_graph_add_array(g, name, WEIR_DTYPE_F32, shape, transient, &error);
  assert_null(error);
  return c;
}

static void assert_value(const WeirQuantity *q, gint64 expected) {
  assert_non_null(q->expr);
  assert_true(q->known);
  assert_int_equal(q->value, expected);
}

static void assert_expr(const WeirQuantity *q, const char *text) {
  assert_non_null(q->expr);
  g_autoptr(WeirExpr) want = weir_expr_parse(text, NULL);
  assert_non_null(want);
  if (!weir_expr_equal(q->expr, want)) {
    g_autofree char *got = weir_expr_to_string(q->expr);
    fail_msg("expected %s, got %s", text, got);
  }
}

static void assert_unknown(const WeirQuantity *q) {
  assert_null(q->expr);
  assert_false(q->known);
}

static WeirAnalysis *analyse(const WeirGraph *g, GHashTable *bindings) {
  g_autoptr(GError) error = NULL;
  WeirAnalysis *a = weir_analysis_compute(g, bindings, &error);
  assert_null(error);
  assert_non_null(a);
  return a;
}

/* ------------------------------------------------------------------------
 * samples/matmul.json
 */

typedef struct {
  WeirGraph *g;
  WeirState *init, *mult;
  WeirNode *init_entry, *mac, *mult_entry, *mult_exit;
  WeirMemlet *init_inner, *init_out, *a_in, *a_inner, *c_wcr, *c_out;
} Matmul;

static void build_matmul(Matmul *mm) {
  WeirGraph *g = mm->g = weir_graph_new("matmul");
  array(g, "A", "64, 32", FALSE);
  array(g, "B", "32, 48", FALSE);
  array(g, "C", "64, 48", FALSE);

  WeirState *s = mm->init = weir_graph_add_state(g, "init");
  WeirNode *x;
  mm->init_entry = map(g, s, "init", (const char *[]){"i", "j", NULL},
                       (const char *[]){"0:64", "0:48", NULL}, NULL,
                       (const char *[]){"C", NULL}, &x);
  WeirNode *zero = tasklet(g, s, "zero", NULL, NULL, "c", NULL, "c = 0");
  WeirNode *c = weir_state_add_access(g, s, "C");
  edge(g, s, mm->init_entry, NULL, zero, NULL, NULL, NULL, NULL);
  mm->init_inner = edge(g, s, zero, "c", x, "IN_C", "C", "i, j", NULL);
  mm->init_out = edge(g, s, x, "OUT_C", c, NULL, "C", "0:64, 0:48", NULL);

  s = mm->mult = weir_graph_add_state(g, "multiply");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *b = weir_state_add_access(g, s, "B");
  mm->mult_entry = map(g, s, "matmul", (const char *[]){"i", "j", "k", NULL},
                       (const char *[]){"0:64", "0:48", "0:32", NULL},
                       (const char *[]){"A", "B", NULL},
                       (const char *[]){"C", NULL}, &mm->mult_exit);
  mm->mac = tasklet(g, s, "mac", "a", "b", "c", NULL, "c = a * b");
  c = weir_state_add_access(g, s, "C");
  mm->a_in =
      edge(g, s, a, NULL, mm->mult_entry, "IN_A", "A", "0:64, 0:32", "98304");
  edge(g, s, b, NULL, mm->mult_entry, "IN_B", "B", "0:32, 0:48", "98304");
  mm->a_inner =
      edge(g, s, mm->mult_entry, "OUT_A", mm->mac, "a", "A", "i, k", NULL);
  edge(g, s, mm->mult_entry, "OUT_B", mm->mac, "b", "B", "k, j", NULL);
  mm->c_wcr =
      edge(g, s, mm->mac, "c", mm->mult_exit, "IN_C", "C", "i, j", NULL);
  mm->c_wcr->wcr = WEIR_WCR_SUM;
  mm->c_out =
      edge(g, s, mm->mult_exit, "OUT_C", c, NULL, "C", "0:64, 0:48", "98304");
  mm->c_out->wcr = WEIR_WCR_SUM;
  assert_non_null(
      weir_graph_add_transition(g, mm->init->id, mm->mult->id, NULL, NULL));
}

static void test_matmul(void **state) {
  (void)state;
  Matmul mm;
  build_matmul(&mm);
  g_autoptr(WeirGraph) g = mm.g;
  g_autoptr(WeirAnalysis) a = analyse(g, NULL);

  /* init: the exit writes all of C once: 64*48 = 3072 f32 = 12288 B.  The
   * inner memlet runs 3072 times (1 element each) but is not counted. */
  assert_value(&weir_analysis_state(a, mm.init->id)->bytes, 12288);
  const WeirMemletCost *mc = weir_analysis_memlet(a, mm.init_inner->id);
  assert_value(&mc->executions, 3072);
  assert_value(&mc->bytes, 12288);
  assert_false(mc->counted);
  mc = weir_analysis_memlet(a, mm.init_out->id);
  assert_value(&mc->executions, 1);
  assert_true(mc->counted);
  /* "c = 0" has no floating operation */
  assert_value(&weir_analysis_state(a, mm.init->id)->flops, 0);

  /* multiply: A, B and C each move 98304 elements (64*48*32 iterations):
   * 3 x 98304 x 4 = 1179648 B. */
  assert_value(&weir_analysis_state(a, mm.mult->id)->bytes, 1179648);
  mc = weir_analysis_memlet(a, mm.a_in->id);
  assert_value(&mc->executions, 1); /* outside the map */
  assert_value(&mc->elements, 98304);
  mc = weir_analysis_memlet(a, mm.a_inner->id);
  assert_value(&mc->executions, 98304); /* inside: 64*48*32 */
  assert_value(&mc->bytes, 393216);     /* 98304 x 4 */
  assert_value(&weir_analysis_memlet(a, mm.c_wcr->id)->executions, 98304);
  assert_value(&weir_analysis_memlet(a, mm.c_out->id)->executions, 1);

  /* FLOPs: one multiplication plus one WCR sum per iteration:
   * 2 x 98304 = 196608, on the tasklet and on the scope of its map. */
  assert_value(&weir_analysis_node(a, mm.mac->id)->flops, 196608);
  assert_value(&weir_analysis_node(a, mm.mult_entry->id)->flops, 196608);
  assert_value(&weir_analysis_node(a, mm.mult_exit->id)->flops, 0);
  assert_value(&weir_analysis_state(a, mm.mult->id)->flops, 196608);

  /* the tasklet reads a and b (4 B each) and writes c, 98304 times */
  assert_value(&weir_analysis_node(a, mm.mac->id)->bytes_in, 786432);
  assert_value(&weir_analysis_node(a, mm.mac->id)->bytes_out, 393216);

  /* totals: 12288 + 1179648 = 1191936 B; 196608 FLOPs */
  assert_value(&a->total_bytes, 1191936);
  assert_value(&a->total_flops, 196608);
  assert_true(a->intensity_known);
  assert_float_equal(a->intensity, 196608.0 / 1191936.0, 1e-12);

  /* no transients */
  assert_value(&a->peak_transient_bytes, 0);
  assert_int_equal(a->peak_live->len, 0);

  /* 3 + 2 access, 2 tasklets, 2 maps */
  assert_int_equal(a->node_counts[WEIR_NODE_ACCESS], 4);
  assert_int_equal(a->node_counts[WEIR_NODE_TASKLET], 2);
  assert_int_equal(a->node_counts[WEIR_NODE_MAP_ENTRY], 2);
  assert_int_equal(a->node_counts[WEIR_NODE_MAP_EXIT], 2);
  assert_int_equal(a->node_counts[WEIR_NODE_LIBRARY], 0);

  /* costs are listed by state then id, one per element */
  assert_int_equal(a->states->len, 2);
  assert_int_equal(a->memlets->len, 3 + 6);
  assert_int_equal(a->nodes->len, 4 + 6);
  assert_null(weir_analysis_memlet(a, 9999));
  assert_null(weir_analysis_node(a, 9999));
  assert_null(weir_analysis_state(a, mm.mac->id));
}

/* ------------------------------------------------------------------------
 * samples/vector_add.json
 */

static WeirGraph *build_vector_add(void) {
  WeirGraph *g = weir_graph_new("vector_add");
  weir_graph_add_symbol(g, "N");
  array(g, "A", "N", FALSE);
  array(g, "B", "N", FALSE);
  array(g, "C", "N", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = weir_state_add_access(g, s, "A");
  WeirNode *b = weir_state_add_access(g, s, "B");
  WeirNode *x;
  WeirNode *e = map(
      g, s, "add", (const char *[]){"i", NULL}, (const char *[]){"0:N", NULL},
      (const char *[]){"A", "B", NULL}, (const char *[]){"C", NULL}, &x);
  WeirNode *t = tasklet(g, s, "add", "a", "b", "c", NULL, "c = a + b");
  WeirNode *c = weir_state_add_access(g, s, "C");
  edge(g, s, a, NULL, e, "IN_A", "A", "0:N", NULL);
  edge(g, s, b, NULL, e, "IN_B", "B", "0:N", NULL);
  edge(g, s, e, "OUT_A", t, "a", "A", "i", NULL);
  edge(g, s, e, "OUT_B", t, "b", "B", "i", NULL);
  edge(g, s, t, "c", x, "IN_C", "C", "i", NULL);
  edge(g, s, x, "OUT_C", c, NULL, "C", "0:N", NULL);
  return g;
}

static void test_vector_add(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_vector_add();

  /* without bindings: A, B, C each N f32 -> 12*N B; N FLOPs */
  g_autoptr(WeirAnalysis) sym = analyse(g, NULL);
  assert_expr(&sym->total_bytes, "12*N");
  assert_false(sym->total_bytes.known);
  assert_expr(&sym->total_flops, "N");
  assert_false(sym->total_flops.known);
  assert_false(sym->intensity_known);

  /* N = 1000: 12000 B, 1000 FLOPs (one addition per i) */
  g_autoptr(GHashTable) bindings = weir_bindings_new();
  weir_bindings_set(bindings, "N", 1000);
  g_autoptr(WeirAnalysis) a = analyse(g, bindings);
  assert_value(&a->total_bytes, 12000);
  assert_value(&a->total_flops, 1000);
  assert_true(a->intensity_known);
  assert_float_equal(a->intensity, 1000.0 / 12000.0, 1e-12);
  const WeirStateCost *sc = g_ptr_array_index(a->states, 0);
  assert_value(&sc->bytes, 12000);
}

/* ------------------------------------------------------------------------
 * samples/softmax.json (R = 32 rows, C = 64 columns, f32)
 */

typedef struct {
  WeirGraph *g;
  WeirState *s;
  WeirNode *init_e, *rowmax_e, *expsum_e, *norm_e;
  WeirNode *init_t, *rowmax_t, *expsum_t, *norm_t;
} Softmax;

static void build_softmax(Softmax *sm) {
  WeirGraph *g = sm->g = weir_graph_new("softmax");
  array(g, "X", "32, 64", FALSE);
  array(g, "Y", "32, 64", FALSE);
  array(g, "mx", "32", TRUE);
  array(g, "s", "32", TRUE);
  array(g, "e", "32, 64", TRUE);
  WeirState *s = sm->s = weir_graph_add_state(g, "softmax");
  const char *const ij[] = {"i", "j", NULL};
  const char *const rc[] = {"0:32", "0:64", NULL};

  WeirNode *X = weir_state_add_access(g, s, "X");
  WeirNode *ix;
  sm->init_e = map(g, s, "init", (const char *[]){"i", NULL},
                   (const char *[]){"0:32", NULL}, (const char *[]){"X", NULL},
                   (const char *[]){"mx", "s", NULL}, &ix);
  sm->init_t = tasklet(g, s, "init", "x0", NULL, "m", "z", "m = x0\nz = 0");
  WeirNode *mx1 = weir_state_add_access(g, s, "mx");
  WeirNode *s1 = weir_state_add_access(g, s, "s");
  WeirNode *rx;
  sm->rowmax_e = map(g, s, "rowmax", ij, rc, (const char *[]){"X", NULL},
                     (const char *[]){"mx", NULL}, &rx);
  sm->rowmax_t = tasklet(g, s, "rowmax", "x", NULL, "m", NULL, "m = x");
  WeirNode *mx2 = weir_state_add_access(g, s, "mx");
  WeirNode *ex;
  sm->expsum_e = map(g, s, "expsum", ij, rc, (const char *[]){"X", "mx", NULL},
                     (const char *[]){"e", "s", NULL}, &ex);
  sm->expsum_t = tasklet(g, s, "expsum", "x", "m", "ev", "z",
                         "t = exp(x - m)\nev = t\nz = t");
  WeirNode *e1 = weir_state_add_access(g, s, "e");
  WeirNode *s2 = weir_state_add_access(g, s, "s");
  WeirNode *nx;
  sm->norm_e = map(g, s, "normalize", ij, rc, (const char *[]){"e", "s", NULL},
                   (const char *[]){"Y", NULL}, &nx);
  sm->norm_t = tasklet(g, s, "normalize", "ev", "z", "y", NULL, "y = ev / z");
  WeirNode *Y = weir_state_add_access(g, s, "Y");

  edge(g, s, X, NULL, sm->init_e, "IN_X", "X", "0:32, 0", NULL);
  edge(g, s, sm->init_e, "OUT_X", sm->init_t, "x0", "X", "i, 0", NULL);
  edge(g, s, sm->init_t, "m", ix, "IN_mx", "mx", "i", NULL);
  edge(g, s, sm->init_t, "z", ix, "IN_s", "s", "i", NULL);
  edge(g, s, ix, "OUT_mx", mx1, NULL, "mx", "0:32", NULL);
  edge(g, s, ix, "OUT_s", s1, NULL, "s", "0:32", NULL);
  edge(g, s, X, NULL, sm->rowmax_e, "IN_X", "X", "0:32, 0:64", NULL);
  edge(g, s, sm->rowmax_e, "OUT_X", sm->rowmax_t, "x", "X", "i, j", NULL);
  edge(g, s, sm->rowmax_t, "m", rx, "IN_mx", "mx", "i", NULL)->wcr =
      WEIR_WCR_MAX;
  edge(g, s, rx, "OUT_mx", mx2, NULL, "mx", "0:32", "2048")->wcr = WEIR_WCR_MAX;
  edge(g, s, mx1, NULL, sm->rowmax_e, NULL, NULL, NULL, NULL);
  edge(g, s, X, NULL, sm->expsum_e, "IN_X", "X", "0:32, 0:64", NULL);
  edge(g, s, mx2, NULL, sm->expsum_e, "IN_mx", "mx", "0:32", "2048");
  edge(g, s, sm->expsum_e, "OUT_X", sm->expsum_t, "x", "X", "i, j", NULL);
  edge(g, s, sm->expsum_e, "OUT_mx", sm->expsum_t, "m", "mx", "i", NULL);
  edge(g, s, sm->expsum_t, "ev", ex, "IN_e", "e", "i, j", NULL);
  edge(g, s, sm->expsum_t, "z", ex, "IN_s", "s", "i", NULL)->wcr = WEIR_WCR_SUM;
  edge(g, s, ex, "OUT_e", e1, NULL, "e", "0:32, 0:64", NULL);
  edge(g, s, ex, "OUT_s", s2, NULL, "s", "0:32", "2048")->wcr = WEIR_WCR_SUM;
  edge(g, s, s1, NULL, sm->expsum_e, NULL, NULL, NULL, NULL);
  edge(g, s, e1, NULL, sm->norm_e, "IN_e", "e", "0:32, 0:64", NULL);
  edge(g, s, s2, NULL, sm->norm_e, "IN_s", "s", "0:32", "2048");
  edge(g, s, sm->norm_e, "OUT_e", sm->norm_t, "ev", "e", "i, j", NULL);
  edge(g, s, sm->norm_e, "OUT_s", sm->norm_t, "z", "s", "i", NULL);
  edge(g, s, sm->norm_t, "y", nx, "IN_Y", "Y", "i, j", NULL);
  edge(g, s, nx, "OUT_Y", Y, NULL, "Y", "0:32, 0:64", NULL);
}

static void test_softmax(void **state) {
  (void)state;
  Softmax sm;
  build_softmax(&sm);
  g_autoptr(WeirGraph) g = sm.g;
  g_autoptr(WeirAnalysis) a = analyse(g, NULL);

  /* Counted memlets (touching an access node), R*C = 2048:
   *   X -> init (column 0):       32 x 4 =  128
   *   init -> mx, init -> s:  2 x 32 x 4 =  256
   *   X -> rowmax, rowmax -> mx (2048 accumulations),
   *   X -> expsum, mx -> expsum (2048 reads), expsum -> e, expsum -> s,
   *   e -> normalize, s -> normalize, normalize -> Y:
   *                          9 x 2048 x 4 = 73728
   *   two empty ordering memlets:                0
   * total 128 + 256 + 73728 = 74112 B. */
  assert_value(&weir_analysis_state(a, sm.s->id)->bytes, 74112);

  /* FLOPs per iteration and per map:
   *   init      "m = x0; z = 0": 0                   x   32 =    0
   *   rowmax    "m = x" + 1 max accumulation  = 1    x 2048 = 2048
   *   expsum    x - m, exp + 1 sum accumulation = 3  x 2048 = 6144
   *   normalize ev / z = 1                           x 2048 = 2048
   * total 10240. */
  assert_value(&weir_analysis_node(a, sm.init_e->id)->flops, 0);
  assert_value(&weir_analysis_node(a, sm.rowmax_e->id)->flops, 2048);
  assert_value(&weir_analysis_node(a, sm.expsum_e->id)->flops, 6144);
  assert_value(&weir_analysis_node(a, sm.norm_e->id)->flops, 2048);
  assert_value(&weir_analysis_node(a, sm.expsum_t->id)->flops, 6144);
  assert_value(&weir_analysis_state(a, sm.s->id)->flops, 10240);
  assert_value(&a->total_flops, 10240);

  /* Peak transient memory: mx (32 x 4 = 128 B) is live from the init
   * tasklet that produces it to the expsum tasklet that reads it; s
   * (128 B) from the init tasklet to the normalize tasklet; e (2048 x 4 =
   * 8192 B) from the expsum tasklet that writes it to the normalize
   * tasklet.  All three are live at the expsum tasklet:
   * 128 + 128 + 8192 = 8448 B. */
  assert_value(&a->peak_transient_bytes, 8448);
  assert_int_equal(a->peak_live->len, 3);
  assert_string_equal(g_ptr_array_index(a->peak_live, 0), "e");
  assert_string_equal(g_ptr_array_index(a->peak_live, 1), "mx");
  assert_string_equal(g_ptr_array_index(a->peak_live, 2), "s");
}

/* ------------------------------------------------------------------------
 * samples/loop.json: init -> guard -> body -> guard -> done
 */

static void test_loop(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("axpb_loop");
  weir_graph_add_symbol(g, "T");
  weir_graph_add_symbol(g, "t");
  array(g, "x", "256", FALSE);
  array(g, "a", "", FALSE);
  array(g, "b", "", FALSE);
  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *guard = weir_graph_add_state(g, "guard");
  WeirState *s = weir_graph_add_state(g, "body");
  WeirState *done = weir_graph_add_state(g, "done");
  WeirNode *x = weir_state_add_access(g, s, "x");
  WeirNode *av = weir_state_add_access(g, s, "a");
  WeirNode *bv = weir_state_add_access(g, s, "b");
  WeirNode *mx;
  WeirNode *me = map(g, s, "axpb", (const char *[]){"i", NULL},
                     (const char *[]){"0:256", NULL},
                     (const char *[]){"x", "a", "b", NULL},
                     (const char *[]){"x", NULL}, &mx);
  const char *ins[] = {"xi", "av", "bv", NULL};
  const char *outs[] = {"xo", NULL};
  WeirNode *t =
      weir_state_add_tasklet(g, s, "axpb", ins, outs, "xo = xi * av + bv");
  WeirNode *x2 = weir_state_add_access(g, s, "x");
  edge(g, s, x, NULL, me, "IN_x", "x", "0:256", NULL);
  WeirMemlet *am = edge(g, s, av, NULL, me, "IN_a", "a", "", "256");
  edge(g, s, bv, NULL, me, "IN_b", "b", "", "256");
  edge(g, s, me, "OUT_x", t, "xi", "x", "i", NULL);
  WeirMemlet *ai = edge(g, s, me, "OUT_a", t, "av", "a", "", NULL);
  edge(g, s, me, "OUT_b", t, "bv", "b", "", NULL);
  edge(g, s, t, "xo", mx, "IN_x", "x", "i", NULL);
  edge(g, s, mx, "OUT_x", x2, NULL, "x", "0:256", NULL);
  WeirTransition *tr =
      weir_graph_add_transition(g, init->id, guard->id, NULL, NULL);
  assert_true(weir_transition_add_assignment(tr, "t", "0", NULL));
  assert_non_null(
      weir_graph_add_transition(g, guard->id, s->id, "t < T", NULL));
  tr = weir_graph_add_transition(g, s->id, guard->id, NULL, NULL);
  assert_true(weir_transition_add_assignment(tr, "t", "t + 1", NULL));
  assert_non_null(
      weir_graph_add_transition(g, guard->id, done->id, "t >= T", NULL));

  g_autoptr(WeirAnalysis) a = analyse(g, NULL);
  /* body: x read 256 x 4 = 1024, a and b read 256 times (volume 256 on the
   * scalar edges) = 1024 each, x written 1024: 4096 B.  Each state counts
   * once, so the total is the body's. */
  assert_value(&weir_analysis_state(a, s->id)->bytes, 4096);
  assert_value(&weir_analysis_state(a, init->id)->bytes, 0);
  assert_value(&weir_analysis_state(a, guard->id)->bytes, 0);
  assert_value(&a->total_bytes, 4096);
  /* the scalar a: 256 elements once outside, 1 element 256 times inside */
  assert_value(&weir_analysis_memlet(a, am->id)->elements, 256);
  assert_value(&weir_analysis_memlet(a, am->id)->executions, 1);
  assert_value(&weir_analysis_memlet(a, ai->id)->executions, 256);
  assert_value(&weir_analysis_memlet(a, ai->id)->elements, 256);
  /* xi * av + bv: 2 FLOPs x 256 = 512 (symbols t and T do not matter) */
  assert_value(&weir_analysis_node(a, t->id)->flops, 512);
  assert_value(&a->total_flops, 512);
  assert_value(&a->peak_transient_bytes, 0);
}

/* ------------------------------------------------------------------------
 * Nested maps, triangular maps
 */

static void test_nested_maps(void **state) {
  (void)state;
  /* for i in 0:4 { for j in 0:8 { B[i, j] = 2 * A[i, j] } } (f64) */
  g_autoptr(WeirGraph) g = weir_graph_new("nested_maps");
  g_autoptr(GError) error = NULL;
  weir_graph_add_array(g, "A", WEIR_DTYPE_F64, "4, 8", FALSE, &error);
  weir_graph_add_array(g, "B", WEIR_DTYPE_F64, "4, 8", FALSE, &error);
  assert_null(error);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *A = weir_state_add_access(g, s, "A");
  WeirNode *ox, *ix;
  WeirNode *oe = map(g, s, "outer", (const char *[]){"i", NULL},
                     (const char *[]){"0:4", NULL}, (const char *[]){"A", NULL},
                     (const char *[]){"B", NULL}, &ox);
  WeirNode *ie = map(g, s, "inner", (const char *[]){"j", NULL},
                     (const char *[]){"0:8", NULL}, (const char *[]){"A", NULL},
                     (const char *[]){"B", NULL}, &ix);
  WeirNode *t = tasklet(g, s, "scale", "a", NULL, "b", NULL, "b = 2 * a");
  WeirNode *B = weir_state_add_access(g, s, "B");
  WeirMemlet *m0 = edge(g, s, A, NULL, oe, "IN_A", "A", "0:4, 0:8", NULL);
  WeirMemlet *m1 = edge(g, s, oe, "OUT_A", ie, "IN_A", "A", "i, 0:8", NULL);
  WeirMemlet *m2 = edge(g, s, ie, "OUT_A", t, "a", "A", "i, j", NULL);
  WeirMemlet *m3 = edge(g, s, t, "b", ix, "IN_B", "B", "i, j", NULL);
  WeirMemlet *m4 = edge(g, s, ix, "OUT_B", ox, "IN_B", "B", "i, 0:8", NULL);
  WeirMemlet *m5 = edge(g, s, ox, "OUT_B", B, NULL, "B", "0:4, 0:8", NULL);

  g_autoptr(WeirAnalysis) a = analyse(g, NULL);
  /* executions: outside 1; between the two entries (inside outer) 4;
   * inside both 4 x 8 = 32; same on the way out. */
  assert_value(&weir_analysis_memlet(a, m0->id)->executions, 1);
  assert_value(&weir_analysis_memlet(a, m1->id)->executions, 4);
  assert_value(&weir_analysis_memlet(a, m2->id)->executions, 32);
  assert_value(&weir_analysis_memlet(a, m3->id)->executions, 32);
  assert_value(&weir_analysis_memlet(a, m4->id)->executions, 4);
  assert_value(&weir_analysis_memlet(a, m5->id)->executions, 1);
  /* every level moves the 32 elements: 32 x 8 B = 256 B */
  for (guint i = 0; i < a->memlets->len; i++) {
    const WeirMemletCost *mc = g_ptr_array_index(a->memlets, i);
    assert_value(&mc->elements, 32);
    assert_value(&mc->bytes, 256);
  }
  /* only the outer memlets count: 256 + 256 */
  assert_value(&a->total_bytes, 512);
  /* 1 multiplication x 32; both scopes contain the tasklet */
  assert_value(&weir_analysis_node(a, t->id)->flops, 32);
  assert_value(&weir_analysis_node(a, oe->id)->flops, 32);
  assert_value(&weir_analysis_node(a, ie->id)->flops, 32);
  assert_value(&a->total_flops, 32);
}

/* One state: for i in 0:N { for j in jrange { tasklet writes Y[i] } } */
static WeirGraph *build_triangular(const char *jrange, WeirMemlet **inner,
                                   WeirNode **t_out) {
  WeirGraph *g = weir_graph_new("triangular");
  weir_graph_add_symbol(g, "N");
  array(g, "Y", "N", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *ox, *ix;
  WeirNode *oe = map(g, s, "outer", (const char *[]){"i", NULL},
                     (const char *[]){"0:N", NULL}, NULL,
                     (const char *[]){"Y", NULL}, &ox);
  WeirNode *ie = map(g, s, "inner", (const char *[]){"j", NULL},
                     (const char *[]){jrange, NULL}, NULL,
                     (const char *[]){"Y", NULL}, &ix);
  WeirNode *t = tasklet(g, s, "acc", NULL, NULL, "y", NULL, "y = 1.5");
  WeirNode *Y = weir_state_add_access(g, s, "Y");
  edge(g, s, oe, NULL, ie, NULL, NULL, NULL, NULL);
  edge(g, s, ie, NULL, t, NULL, NULL, NULL, NULL);
  *inner = edge(g, s, t, "y", ix, "IN_Y", "Y", "i", NULL);
  (*inner)->wcr = WEIR_WCR_SUM;
  edge(g, s, ix, "OUT_Y", ox, "IN_Y", "Y", "i", NULL)->wcr = WEIR_WCR_SUM;
  edge(g, s, ox, "OUT_Y", Y, NULL, "Y", "0:N", NULL)->wcr = WEIR_WCR_SUM;
  *t_out = t;
  return g;
}

static void test_triangular_upper_bound(void **state) {
  (void)state;
  g_autoptr(GHashTable) bindings = weir_bindings_new();
  weir_bindings_set(bindings, "N", 10);

  /* j in 0:i: the inner size i is largest at i = N - 1, so executions are
   * bounded by N x (N - 1) (exact: N(N-1)/2).  N = 10: 90. */
  WeirMemlet *inner;
  WeirNode *t;
  g_autoptr(WeirGraph) g = build_triangular("0:i", &inner, &t);
  g_autoptr(WeirAnalysis) a = analyse(g, bindings);
  const WeirMemletCost *mc = weir_analysis_memlet(a, inner->id);
  assert_expr(&mc->executions, "N*(N - 1)");
  assert_value(&mc->executions, 90);
  /* the tasklet only adds through its WCR memlet: 1 x 90 */
  assert_value(&weir_analysis_node(a, t->id)->flops, 90);

  /* j in i:N: the inner size N - i is largest at i = 0: bound N x N. */
  g_autoptr(WeirGraph) g2 = build_triangular("i:N", &inner, &t);
  g_autoptr(WeirAnalysis) a2 = analyse(g2, bindings);
  mc = weir_analysis_memlet(a2, inner->id);
  assert_expr(&mc->executions, "N*N");
  assert_value(&mc->executions, 100);

  /* j in 0:i+1:2 (size (i+2)//2, not affine): max of both ends,
   * max(1, (N+1)//2) x N.  N = 10: 5 x 10 = 50. */
  g_autoptr(WeirGraph) g3 = build_triangular("0:i+1:2", &inner, &t);
  g_autoptr(WeirAnalysis) a3 = analyse(g3, bindings);
  assert_value(&weir_analysis_memlet(a3, inner->id)->executions, 50);
}

/* map-tiling's shape: for ti in 0:5:2 { for i in ti:min(ti + 2, 5) {
 * Y[i] = 2 * X[i] } }.  The tiles are 0:2, 2:4, 4:5: 2 + 2 + 1 = 5
 * iterations, as untiled (bounding the inner size by its largest value
 * would count 3 x 2 = 6).  Every level moves the 5 elements. */
static void test_tiled_clipped(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("tiled");
  array(g, "X", "5", FALSE);
  array(g, "Y", "5", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *X = weir_state_add_access(g, s, "X");
  WeirNode *ox, *ix;
  WeirNode *oe =
      map(g, s, "tiles", (const char *[]){"ti", NULL},
          (const char *[]){"0:5:2", NULL}, (const char *[]){"X", NULL},
          (const char *[]){"Y", NULL}, &ox);
  WeirNode *ie =
      map(g, s, "tile", (const char *[]){"i", NULL},
          (const char *[]){"ti:min(ti + 2, 5)", NULL},
          (const char *[]){"X", NULL}, (const char *[]){"Y", NULL}, &ix);
  WeirNode *t = tasklet(g, s, "scale", "x", NULL, "y", NULL, "y = 2 * x");
  WeirNode *Y = weir_state_add_access(g, s, "Y");
  WeirMemlet *m0 = edge(g, s, X, NULL, oe, "IN_X", "X", "0:5", NULL);
  WeirMemlet *m1 =
      edge(g, s, oe, "OUT_X", ie, "IN_X", "X", "ti:min(ti + 2, 5)", NULL);
  WeirMemlet *m2 = edge(g, s, ie, "OUT_X", t, "x", "X", "i", NULL);
  edge(g, s, t, "y", ix, "IN_Y", "Y", "i", NULL);
  edge(g, s, ix, "OUT_Y", ox, "IN_Y", "Y", "ti:min(ti + 2, 5)", NULL);
  WeirMemlet *m5 = edge(g, s, ox, "OUT_Y", Y, NULL, "Y", "0:5", NULL);
  g_autoptr(WeirAnalysis) a = analyse(g, NULL);
  assert_value(&weir_analysis_memlet(a, m2->id)->executions, 5);
  assert_value(&weir_analysis_node(a, t->id)->flops, 5);
  assert_value(&a->total_flops, 5);
  assert_value(&weir_analysis_memlet(a, m0->id)->elements, 5);
  assert_value(&weir_analysis_memlet(a, m1->id)->elements, 5);
  assert_value(&weir_analysis_memlet(a, m5->id)->elements, 5);
  assert_value(&a->total_bytes, 2 * 5 * 4);
}

/* An expansion's block memlets: the tasklet names the whole X and Y but
 * reads one element X[i] and adds one element into Y[3 - i] (WCR sum) per
 * iteration of i in 0:4.  Logical volume: 4 elements each way, not
 * 4 x 4; the outer memlets state 16 (what such an expansion writes) and
 * are counted from the inside.  FLOPs: 1 multiply + 1 WCR add, x 4. */
static void test_block_indexed(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("block");
  array(g, "X", "4", FALSE);
  array(g, "Y", "4", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *X = weir_state_add_access(g, s, "X");
  WeirNode *mx;
  WeirNode *me =
      map(g, s, "m", (const char *[]){"i", NULL}, (const char *[]){"0:4", NULL},
          (const char *[]){"X", NULL}, (const char *[]){"Y", NULL}, &mx);
  WeirNode *t =
      tasklet(g, s, "rev", "x", NULL, "y", NULL, "y[3 - i] = 2 * x[i]");
  WeirNode *Y = weir_state_add_access(g, s, "Y");
  WeirMemlet *m0 = edge(g, s, X, NULL, me, "IN_X", "X", "0:4", "16");
  WeirMemlet *m1 = edge(g, s, me, "OUT_X", t, "x", "X", "0:4", NULL);
  WeirMemlet *m2 = edge(g, s, t, "y", mx, "IN_Y", "Y", "0:4", NULL);
  m2->wcr = WEIR_WCR_SUM;
  WeirMemlet *m3 = edge(g, s, mx, "OUT_Y", Y, NULL, "Y", "0:4", "16");
  m3->wcr = WEIR_WCR_SUM;
  g_autoptr(WeirAnalysis) a = analyse(g, NULL);
  assert_value(&weir_analysis_memlet(a, m1->id)->elements, 4);
  assert_value(&weir_analysis_memlet(a, m2->id)->elements, 4);
  assert_value(&weir_analysis_memlet(a, m0->id)->elements, 4);
  assert_value(&weir_analysis_memlet(a, m3->id)->elements, 4);
  assert_value(&a->total_bytes, 2 * 4 * 4);
  assert_value(&weir_analysis_node(a, t->id)->flops, 8);
}

/* The modeled traffic (weir_analysis_compute_traffic) of
 * for i in 0:4, j in 0:8 { Y[i] += X[j] } (f32): every X element is read 4
 * times.  Logical volume: X 32 reads (128 B) + Y 4 elements (16 B) = 144 B.
 * Footprint: X 32 B + Y 16 B = 48 B.  A 64-byte cache holds it: 48 B.  A
 * 16-byte cache does not: the body's memlets (X 128 B, the WCR updates of
 * Y 128 B) capped by what the map's memlets name: 144 B.  Tiled as
 * ti in 0:8:4 { i in 0:4, j in ti:ti+4 } with a 40-byte cache, each tile
 * (X 16 B + Y 16 B) fits: 2 tiles x 32 B = 64 B.  No cache: unknown. */
static WeirGraph *build_reuse(gboolean tiled, WeirNode **top) {
  WeirGraph *g = weir_graph_new("reuse");
  array(g, "X", "8", FALSE);
  array(g, "Y", "4", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *X = weir_state_add_access(g, s, "X");
  WeirNode *Y = weir_state_add_access(g, s, "Y");
  WeirNode *t = tasklet(g, s, "acc", "x", NULL, "y", NULL, "y = x");
  WeirNode *ix, *ox = NULL;
  WeirNode *oe = NULL;
  if (tiled)
    oe = map(g, s, "tiles", (const char *[]){"ti", NULL},
             (const char *[]){"0:8:4", NULL}, (const char *[]){"X", NULL},
             (const char *[]){"Y", NULL}, &ox);
  WeirNode *ie =
      map(g, s, "ij", (const char *[]){"i", "j", NULL},
          (const char *[]){"0:4", tiled ? "ti:ti + 4" : "0:8", NULL},
          (const char *[]){"X", NULL}, (const char *[]){"Y", NULL}, &ix);
  if (tiled) {
    edge(g, s, X, NULL, oe, "IN_X", "X", "0:8", "32");
    edge(g, s, oe, "OUT_X", ie, "IN_X", "X", "ti:ti + 4", "16");
    edge(g, s, ix, "OUT_Y", ox, "IN_Y", "Y", "0:4", "16")->wcr = WEIR_WCR_SUM;
    edge(g, s, ox, "OUT_Y", Y, NULL, "Y", "0:4", "4")->wcr = WEIR_WCR_SUM;
  } else {
    edge(g, s, X, NULL, ie, "IN_X", "X", "0:8", "32");
    edge(g, s, ix, "OUT_Y", Y, NULL, "Y", "0:4", "4")->wcr = WEIR_WCR_SUM;
  }
  edge(g, s, ie, "OUT_X", t, "x", "X", "j", NULL);
  edge(g, s, t, "y", ix, "IN_Y", "Y", "i", NULL)->wcr = WEIR_WCR_SUM;
  *top = tiled ? oe : ie;
  return g;
}

/* The cost of the memlet of g's first state that touches the access node
 * of `data` (there is one in build_reuse). */
static const WeirMemletCost *access_memlet_cost(const WeirGraph *g,
                                                const WeirAnalysis *a,
                                                const char *data) {
  const WeirState *s = g_ptr_array_index(g->states, 0);
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    for (int end = 0; end < 2; end++) {
      const WeirNode *n = weir_state_node(s, end ? m->dst : m->src);
      if (n->kind == WEIR_NODE_ACCESS && g_str_equal(n->data, data))
        return weir_analysis_memlet(a, m->id);
    }
  }
  fail_msg("no memlet touches the access node of %s", data);
  return NULL;
}

static void test_modeled_traffic(void **state) {
  (void)state;
  WeirNode *top;
  g_autoptr(WeirGraph) g = build_reuse(FALSE, &top);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirAnalysis) fits =
      weir_analysis_compute_traffic(g, NULL, 64, &error);
  assert_null(error);
  assert_value(&fits->total_bytes, 144);
  assert_value(&fits->total_traffic, 48);
  assert_value(&weir_analysis_node(fits, top->id)->traffic, 48);
  /* per memlet: the footprints of X (32 B) and Y (16 B) */
  assert_value(&access_memlet_cost(g, fits, "X")->traffic, 32);
  assert_value(&access_memlet_cost(g, fits, "Y")->traffic, 16);
  g_autoptr(WeirAnalysis) small =
      weir_analysis_compute_traffic(g, NULL, 16, &error);
  assert_value(&small->total_traffic, 144);
  /* split in proportion to the bytes: X read 32 times (128 B), Y 16 B */
  assert_value(&access_memlet_cost(g, small, "X")->traffic, 128);
  assert_value(&access_memlet_cost(g, small, "Y")->traffic, 16);
  g_autoptr(WeirAnalysis) none = analyse(g, NULL);
  assert_unknown(&none->total_traffic);
  assert_unknown(&access_memlet_cost(g, none, "X")->traffic);

  g_autoptr(WeirGraph) tg = build_reuse(TRUE, &top);
  if (!weir_graph_validate(tg, &error))
    fail_msg("%s", error->message);
  g_autoptr(WeirAnalysis) tiles =
      weir_analysis_compute_traffic(tg, NULL, 40, &error);
  assert_null(error);
  assert_value(&tiles->total_traffic, 64);
  /* the tile loop's traffic is split over its boundary memlets */
  assert_value(&access_memlet_cost(tg, tiles, "X")->traffic,
               64 - access_memlet_cost(tg, tiles, "Y")->traffic.value);
  g_autoptr(WeirAnalysis) whole =
      weir_analysis_compute_traffic(tg, NULL, 64, &error);
  assert_value(&whole->total_traffic, 48);
}

/* ------------------------------------------------------------------------
 * Library and nested nodes
 */

/* 2*M*N*K for a Gemm-like op with integer attributes M, N, K. */
static WeirExpr *gemm_flops(const WeirGraph *g, const WeirState *s,
                            const WeirNode *n) {
  (void)g;
  (void)s;
  const WeirAttr *m = weir_node_attr(n, "M");
  const WeirAttr *nn = weir_node_attr(n, "N");
  const WeirAttr *k = weir_node_attr(n, "K");
  if (!m || !nn || !k)
    return NULL;
  return weir_expr_const(2 * m->i * nn->i * k->i);
}

static void test_library_flops(void **state) {
  (void)state;
  weir_analysis_register_library_flops("TestGemm", gemm_flops);
  g_autoptr(WeirGraph) g = weir_graph_new("lib");
  array(g, "A", "3, 4, 5", FALSE);
  array(g, "B", "3, 5, 6", FALSE);
  array(g, "C", "3, 4, 6", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *A = weir_state_add_access(g, s, "A");
  WeirNode *B = weir_state_add_access(g, s, "B");
  WeirNode *x;
  /* a batch of 3 Gemms, one per map iteration */
  WeirNode *e = map(
      g, s, "batch", (const char *[]){"b", NULL}, (const char *[]){"0:3", NULL},
      (const char *[]){"A", "B", NULL}, (const char *[]){"C", NULL}, &x);
  WeirNode *lib = weir_state_add_library(g, s, "gemm", "TestGemm",
                                         (const char *[]){"a", "b", NULL},
                                         (const char *[]){"c", NULL});
  weir_node_set_attr_int(lib, "M", 4);
  weir_node_set_attr_int(lib, "N", 6);
  weir_node_set_attr_int(lib, "K", 5);
  WeirNode *C = weir_state_add_access(g, s, "C");
  edge(g, s, A, NULL, e, "IN_A", "A", "0:3, 0:4, 0:5", NULL);
  edge(g, s, B, NULL, e, "IN_B", "B", "0:3, 0:5, 0:6", NULL);
  edge(g, s, e, "OUT_A", lib, "a", "A", "b, 0:4, 0:5", NULL);
  edge(g, s, e, "OUT_B", lib, "b", "B", "b, 0:5, 0:6", NULL);
  edge(g, s, lib, "c", x, "IN_C", "C", "b, 0:4, 0:6", NULL);
  edge(g, s, x, "OUT_C", C, NULL, "C", "0:3, 0:4, 0:6", NULL);

  g_autoptr(WeirAnalysis) a = analyse(g, NULL);
  /* 2 x 4 x 6 x 5 = 240 per Gemm, x 3 iterations = 720 */
  assert_value(&weir_analysis_node(a, lib->id)->flops, 720);
  assert_value(&weir_analysis_node(a, e->id)->flops, 720);
  assert_value(&a->total_flops, 720);
  /* bytes: (60 + 90 + 72) x 4 = 888 */
  assert_value(&a->total_bytes, 888);
  assert_true(a->intensity_known);

  /* An op without a cost model: FLOPs unknown on the node, its scope, the
   * state and the total; bytes are unaffected. */
  g_autoptr(WeirGraph) g2 = weir_graph_copy(g);
  WeirNode *lib2 = weir_graph_node(g2, lib->id, NULL);
  g_free(lib2->op);
  lib2->op = g_strdup("TestUnregisteredOp");
  g_autoptr(WeirAnalysis) a2 = analyse(g2, NULL);
  assert_unknown(&weir_analysis_node(a2, lib->id)->flops);
  assert_unknown(&weir_analysis_node(a2, e->id)->flops);
  assert_unknown(&weir_analysis_state(a2, s->id)->flops);
  assert_unknown(&a2->total_flops);
  assert_false(a2->intensity_known);
  assert_value(&a2->total_bytes, 888);
  assert_value(&weir_analysis_node(a2, lib->id)->bytes_in, 600);

  /* registering NULL removes the cost model */
  weir_analysis_register_library_flops("TestGemm", NULL);
  g_autoptr(WeirAnalysis) a3 = analyse(g, NULL);
  assert_unknown(&weir_analysis_node(a3, lib->id)->flops);
}

static void test_nested_program(void **state) {
  (void)state;
  /* inner program: for k in 0:M { y[k] = x[k] * x[k] + 1.0 } (2 FLOPs) */
  WeirGraph *inner = weir_graph_new("square");
  weir_graph_add_symbol(inner, "M");
  array(inner, "x", "M", FALSE);
  array(inner, "y", "M", FALSE);
  WeirState *is = weir_graph_add_state(inner, "body");
  WeirNode *ix = weir_state_add_access(inner, is, "x");
  WeirNode *mexit;
  WeirNode *me = map(inner, is, "sq", (const char *[]){"k", NULL},
                     (const char *[]){"0:M", NULL}, (const char *[]){"x", NULL},
                     (const char *[]){"y", NULL}, &mexit);
  WeirNode *t =
      tasklet(inner, is, "sq", "a", NULL, "b", NULL, "b = a * a + 1.0");
  WeirNode *iy = weir_state_add_access(inner, is, "y");
  edge(inner, is, ix, NULL, me, "IN_x", "x", "0:M", NULL);
  edge(inner, is, me, "OUT_x", t, "a", "x", "k", NULL);
  edge(inner, is, t, "b", mexit, "IN_y", "y", "k", NULL);
  edge(inner, is, mexit, "OUT_y", iy, NULL, "y", "0:M", NULL);

  /* outer program: the nested node with M = 2*N */
  g_autoptr(WeirGraph) g = weir_graph_new("outer");
  weir_graph_add_symbol(g, "N");
  array(g, "X", "2*N", FALSE);
  array(g, "Y", "2*N", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *X = weir_state_add_access(g, s, "X");
  WeirNode *nest =
      weir_state_add_nested(g, s, "square", inner, (const char *[]){"x", NULL},
                            (const char *[]){"y", NULL});
  assert_true(weir_node_bind_symbol(nest, "M", "2*N", NULL));
  WeirNode *Y = weir_state_add_access(g, s, "Y");
  edge(g, s, X, NULL, nest, "x", "X", "0:2*N", NULL);
  edge(g, s, nest, "y", Y, NULL, "Y", "0:2*N", NULL);

  /* symbolic: 2 FLOPs x M, M = 2*N -> 4*N; with N = 5: 20 */
  g_autoptr(WeirAnalysis) sym = analyse(g, NULL);
  assert_expr(&weir_analysis_node(sym, nest->id)->flops, "4*N");
  g_autoptr(GHashTable) bindings = weir_bindings_new();
  weir_bindings_set(bindings, "N", 5);
  g_autoptr(WeirAnalysis) a = analyse(g, bindings);
  assert_value(&weir_analysis_node(a, nest->id)->flops, 20);
  assert_value(&a->total_flops, 20);
  /* bytes of the outer state only: X and Y, 10 f32 each = 80 */
  assert_value(&a->total_bytes, 80);
  assert_int_equal(a->node_counts[WEIR_NODE_NESTED], 1);
  assert_int_equal(a->node_counts[WEIR_NODE_TASKLET], 0); /* not recursive */
}

/* ------------------------------------------------------------------------
 * Liveness across states and loops
 */

/* tasklet "v = 1.0" writing container data[0] through a new access node */
static WeirNode *write_one(WeirGraph *g, WeirState *s, const char *data) {
  WeirNode *t = tasklet(g, s, "w", NULL, NULL, "v", NULL, "v = 1.0");
  WeirNode *acc = weir_state_add_access(g, s, data);
  edge(g, s, t, "v", acc, NULL, data, "0", NULL);
  return acc;
}

/* copies src[0] to dst[0] through a tasklet, from the access node from */
static void read_one(WeirGraph *g, WeirState *s, WeirNode *from,
                     const char *src, const char *dst) {
  WeirNode *t = tasklet(g, s, "r", "u", NULL, "v", NULL, "v = u");
  WeirNode *to = weir_state_add_access(g, s, dst);
  edge(g, s, from, NULL, t, "u", src, "0", NULL);
  edge(g, s, t, "v", to, NULL, dst, "0", NULL);
}

static void test_liveness_loop(void **state) {
  (void)state;
  /* start -> head; head -> body; body -> head; head -> after.
   * Reverse post-order (successors by id): start, head, after, body.
   *   big (100 f32 = 400 B): written and read in head only.
   *   w (10 f32 = 40 B): written in body, read in after.  Its span covers
   *     after and body; body is in the loop {head, body}, so w is also
   *     live in head, together with big: peak 400 + 40 = 440 B.
   *     (Without the loop, the peak would be big alone, 400 B.)
   *   carry (50 f32 = 200 B): read, then written, in body only: its value
   *     comes from the previous iteration, so it is live over the loop
   *     (head .. body in the order), with big and w: peak 640 B.
   *   unused (1000 f32): never accessed, never live. */
  g_autoptr(WeirGraph) g = weir_graph_new("loop_live");
  weir_graph_add_symbol(g, "t");
  array(g, "big", "100", TRUE);
  array(g, "w", "10", TRUE);
  array(g, "unused", "1000", TRUE);
  array(g, "carry", "50", TRUE);
  array(g, "out", "1", FALSE);
  WeirState *start = weir_graph_add_state(g, "start");
  WeirState *head = weir_graph_add_state(g, "head");
  WeirState *body = weir_graph_add_state(g, "body");
  WeirState *after = weir_graph_add_state(g, "after");
  WeirNode *b = write_one(g, head, "big");
  read_one(g, head, b, "big", "out");
  write_one(g, body, "w");
  WeirNode *cr = weir_state_add_access(g, body, "carry");
  read_one(g, body, cr, "carry", "out");
  write_one(g, body, "carry");
  WeirNode *wr = weir_state_add_access(g, after, "w");
  read_one(g, after, wr, "w", "out");
  assert_non_null(
      weir_graph_add_transition(g, start->id, head->id, NULL, NULL));
  assert_non_null(
      weir_graph_add_transition(g, head->id, body->id, "t < 4", NULL));
  assert_non_null(weir_graph_add_transition(g, body->id, head->id, NULL, NULL));
  assert_non_null(
      weir_graph_add_transition(g, head->id, after->id, "t >= 4", NULL));

  g_autoptr(WeirAnalysis) a = analyse(g, NULL);
  assert_value(&a->peak_transient_bytes, 640);
  assert_int_equal(a->peak_live->len, 3);
  assert_string_equal(g_ptr_array_index(a->peak_live, 0), "big");
  assert_string_equal(g_ptr_array_index(a->peak_live, 1), "carry");
  assert_string_equal(g_ptr_array_index(a->peak_live, 2), "w");

  /* Without the back edge body -> head there is no loop: w lives over
   * body and after only, carry within body (w + carry = 240 B), and the
   * peak is big alone. */
  g_autoptr(WeirGraph) g2 = weir_graph_copy(g);
  WeirTransition *back = g_ptr_array_index(g2->transitions, 2);
  assert_int_equal(back->src, body->id);
  back->dst = after->id;
  g_autoptr(WeirAnalysis) a2 = analyse(g2, NULL);
  assert_value(&a2->peak_transient_bytes, 400);
  assert_int_equal(a2->peak_live->len, 1);
  assert_string_equal(g_ptr_array_index(a2->peak_live, 0), "big");
}

static void test_liveness_symbolic(void **state) {
  (void)state;
  /* Two transients of symbolic size in one state, live one after the
   * other: t1 (N f32) then t2 (2*N f32).  Without bindings the peak is
   * the max of both, max(4*N, 8*N); with N = 3 it is 24 B (t2). */
  g_autoptr(WeirGraph) g = weir_graph_new("sym_live");
  weir_graph_add_symbol(g, "N");
  array(g, "t1", "N", TRUE);
  array(g, "t2", "2*N", TRUE);
  array(g, "out", "1", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a1 = write_one(g, s, "t1");
  read_one(g, s, a1, "t1", "out");
  WeirState *s2 = weir_graph_add_state(g, "second");
  WeirNode *a2 = write_one(g, s2, "t2");
  read_one(g, s2, a2, "t2", "out");
  assert_non_null(weir_graph_add_transition(g, s->id, s2->id, NULL, NULL));

  g_autoptr(WeirAnalysis) sym = analyse(g, NULL);
  assert_false(sym->peak_transient_bytes.known);
  g_autoptr(GHashTable) bindings = weir_bindings_new();
  weir_bindings_set(bindings, "N", 3);
  gint64 v;
  assert_true(
      weir_expr_eval(sym->peak_transient_bytes.expr, bindings, &v, NULL));
  assert_int_equal(v, 24);

  g_autoptr(WeirAnalysis) a = analyse(g, bindings);
  assert_value(&a->peak_transient_bytes, 24);
  assert_int_equal(a->peak_live->len, 1);
  assert_string_equal(g_ptr_array_index(a->peak_live, 0), "t2");
}

/* ------------------------------------------------------------------------
 * Errors and unknown FLOPs
 */

static void test_broken_scopes(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = weir_graph_new("cycle");
  array(g, "A", "1", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *t1 = tasklet(g, s, "t1", "u", NULL, "v", NULL, "v = u");
  WeirNode *t2 = tasklet(g, s, "t2", "u", NULL, "v", NULL, "v = u");
  edge(g, s, t1, "v", t2, "u", "A", "0", NULL);
  edge(g, s, t2, "v", t1, "u", "A", "0", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirAnalysis) a = weir_analysis_compute(g, NULL, &error);
  assert_null(a);
  assert_true(g_error_matches(error, WEIR_ERROR, WEIR_ERROR_INVALID));
  assert_non_null(strstr(error->message, "cycle"));
}

static void test_unchecked_tasklet(void **state) {
  (void)state;
  /* A body that does not type-check (reads an unknown name) or does not
   * parse has unknown FLOPs; its memlets are still measured. */
  g_autoptr(WeirGraph) g = weir_graph_new("bad");
  array(g, "A", "1", FALSE);
  array(g, "B", "1", FALSE);
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *A = weir_state_add_access(g, s, "A");
  WeirNode *t = tasklet(g, s, "t", "u", NULL, "v", NULL, "v = u * nowhere");
  WeirNode *B = weir_state_add_access(g, s, "B");
  edge(g, s, A, NULL, t, "u", "A", "0", NULL);
  edge(g, s, t, "v", B, NULL, "B", "0", NULL);
  WeirNode *bad = tasklet(g, s, "p", NULL, NULL, "v", NULL, "v = (");
  assert_null(bad->code);
  g_autoptr(WeirAnalysis) a = analyse(g, NULL);
  assert_unknown(&weir_analysis_node(a, t->id)->flops);
  assert_unknown(&weir_analysis_node(a, bad->id)->flops);
  assert_unknown(&a->total_flops);
  assert_value(&a->total_bytes, 8);
  /* the analysis did not touch the graph's own code */
  assert_false(t->code->checked);
}

/* A tasklet typed in its place: the map's parameter and the program's
 * symbols are known, connectors take their containers' dtypes. */
static void test_tasklet_checked_code(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_vector_add();
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirNode *t = NULL;
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_TASKLET)
      t = n;
  }
  assert_non_null(t);
  assert_true(weir_tasklet_set_code(t, "c = a + b * i + N"));
  WeirConnectorInfo info;
  assert_true(weir_tasklet_connector_info(g, s, t, "a", TRUE, &info));
  assert_string_equal(info.name, "a");
  assert_int_equal(info.dtype, WEIR_DTYPE_F32);
  assert_int_equal(info.rank, 0);
  assert_false(weir_tasklet_connector_info(g, s, t, "a", FALSE, &info));
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirCode) code = weir_tasklet_checked_code(g, s, t, &err);
  assert_null(err);
  assert_non_null(code);
  assert_true(code->checked);
  assert_false(t->code->checked); /* a copy */
  /* outside the map, i is unknown */
  WeirNode *u = tasklet(g, s, "outside", NULL, NULL, "y", NULL, "y = i");
  WeirNode *c = weir_state_add_access(g, s, "C");
  edge(g, s, u, "y", c, NULL, "C", "0", NULL);
  assert_null(weir_tasklet_checked_code(g, s, u, &err));
  assert_non_null(err);
  g_autofree char *where =
      g_strdup_printf("tasklet 'outside' (node %u): ", u->id);
  assert_true(g_str_has_prefix(err->message, where));
  assert_non_null(strstr(err->message, "'i'"));
  g_clear_error(&err);
  /* a connector without a memlet */
  weir_node_add_in_conn(u, "z");
  assert_null(weir_tasklet_checked_code(g, s, u, &err));
  g_autofree char *want = g_strdup_printf(
      "tasklet 'outside' (node %u): input connector 'z' has no memlet", u->id);
  assert_string_equal(err->message, want);
}

/* The bundled sample files give the same figures as the graphs built above
 * (the files are what `weir info` reads). */
static void test_sample_files(void **state) {
  (void)state;
  struct {
    const char *file;
    const char *sym;
    gint64 value;
    gint64 bytes, flops, peak;
  } cases[] = {
      /* init 12288 + multiply 3 x 98304 x 4 */
      {"matmul.json", NULL, 0, 12288 + 1179648, 196608, 0},
      /* A, B read and C written once: 3 x 1000 x 4; one add each */
      {"vector_add.json", "N", 1000, 12000, 1000, 0},
      /* per-state figures of test_softmax; peak e + mx + s */
      {"softmax.json", NULL, 0, 74112, 10240, 8192 + 128 + 128},
      /* body state once: x in and out, a and b 256 times each, 4 B each */
      {"loop.json", "T", 3, 4096, 512, 0},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
    g_autofree char *path =
        g_build_filename(WEIR_SRCDIR, "samples", cases[i].file, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirGraph) g = weir_graph_load(path, &error);
    if (!g)
      fail_msg("%s: %s", path, error->message);
    g_autoptr(GHashTable) b = weir_bindings_new();
    if (cases[i].sym)
      weir_bindings_set(b, cases[i].sym, cases[i].value);
    g_autoptr(WeirAnalysis) a = analyse(g, b);
    assert_value(&a->total_bytes, cases[i].bytes);
    assert_value(&a->total_flops, cases[i].flops);
    assert_value(&a->peak_transient_bytes, cases[i].peak);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matmul),
      cmocka_unit_test(test_vector_add),
      cmocka_unit_test(test_softmax),
      cmocka_unit_test(test_loop),
      cmocka_unit_test(test_nested_maps),
      cmocka_unit_test(test_triangular_upper_bound),
      cmocka_unit_test(test_tiled_clipped),
      cmocka_unit_test(test_block_indexed),
      cmocka_unit_test(test_modeled_traffic),
      cmocka_unit_test(test_library_flops),
      cmocka_unit_test(test_nested_program),
      cmocka_unit_test(test_liveness_loop),
      cmocka_unit_test(test_liveness_symbolic),
      cmocka_unit_test(test_broken_scopes),
      cmocka_unit_test(test_unchecked_tasklet),
      cmocka_unit_test(test_tasklet_checked_code),
      cmocka_unit_test(test_sample_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
