/* test-lifetime-shortening.c — the tier-4 transformation
 * "lifetime-shortening".
 *
 * A row temporary E[8, 16] written and read inside a map over rows becomes
 * E[16] (the peak drops 8x), also in generated code, where the parallel map
 * gets a private row per thread; a per-iteration T[8] becomes a scalar; a
 * tasklet that indexes E keeps the dimension with extent 1; sharing across
 * iterations, a read before the write, a use outside the map, an index
 * with coefficient 2 are refused with reasons.  Sources (constants,
 * initializations) start just before their first use, which lowers the
 * peak; on the samples and the expanded models (whose transients are all
 * at the top level: only sources) every legal site keeps the outputs and
 * the peak drops. */
#include "tier4-check.h"

static const WeirTransformInfo *transform(void) {
  return t4c_transform("lifetime-shortening", 4);
}

static T4Program own(WeirGraph *g) {
  T4Program p = {.name = g->name, .g = g, .symbols = weir_bindings_new()};
  p.expected = t4c_run(g, p.symbols);
  return p;
}

static void disown(T4Program *p) {
  g_hash_table_unref(p->symbols);
  g_hash_table_unref(p->expected);
  weir_graph_free(p->g);
}

static WeirMemlet *wire(WeirGraph *g, WeirState *s, guint src, const char *sc,
                        guint dst, const char *dc, const char *data,
                        const char *subset, gint64 volume) {
  WeirMemlet *m = t4c_memlet(g, s, src, sc, dst, dc, data, subset);
  if (volume > 0) {
    g_autoptr(WeirExpr) v = weir_expr_const(volume);
    weir_memlet_set_volume(m, v);
  }
  return m;
}

static WeirNode *map1(WeirGraph *g, WeirState *s, const char *label,
                      const char *param, const char *range, WeirNode **exit) {
  const char *ps[] = {param, NULL};
  const char *rs[] = {range, NULL};
  WeirNode *e = weir_state_add_map(g, s, label, ps, rs, WEIR_SCHEDULE_PARALLEL,
                                   exit, NULL);
  assert_non_null(e);
  return e;
}

static void conns(WeirNode *n, const char *in, const char *out) {
  if (in)
    weir_node_add_in_conn(n, in);
  if (out)
    weir_node_add_out_conn(n, out);
}

typedef enum {
  ROW_PLAIN,
  ROW_CROSS,   /* the reader takes another row */
  ROW_UNREAD,  /* the reader reads an access node nobody wrote */
  ROW_INDEXED, /* the reader's tasklet indexes the row */
  ROW_OUTSIDE, /* E also copied out after the map */
  ROW_STRIDED, /* rows 2*i of E[16, 16] */
} RowVariant;

typedef struct {
  WeirGraph *g;
  guint m, e_node, e2_node, out_node;
} Rows;

/* for i in 0:8 (parallel):
 *   for j in 0:16: E[i, j] = exp(X[i, j])
 *   for j in 0:16: Y[i, j] = E[i, j] * 2 */
static Rows rows(RowVariant v) {
  Rows r = {0};
  WeirGraph *g = weir_graph_new("rows");
  r.g = g;
  WeirState *s = weir_graph_add_state(g, "main");
  const char *eshape = v == ROW_STRIDED ? "16, 16" : "8, 16";
  const char *row = v == ROW_STRIDED ? "2*i" : "i";
  WeirNode *x = t4c_access(g, s, "X", "8, 16", FALSE);
  WeirNode *y = t4c_access(g, s, "Y", "8, 16", FALSE);
  guint xid = x->id, yid = y->id;
  weir_graph_add_array(g, "E", WEIR_DTYPE_F32, eshape, TRUE, NULL);
  WeirNode *mx = NULL;
  WeirNode *m = map1(g, s, "rows", "i", "0:8", &mx);
  guint mid = m->id, mxid = mx->id;
  r.m = mid;
  conns(m, "IN_X", "OUT_X");
  conns(mx, "IN_Y", "OUT_Y");
  WeirNode *ax = NULL;
  WeirNode *a = map1(g, s, "exp", "j", "0:16", &ax);
  guint aid = a->id, axid = ax->id;
  conns(a, "IN_X", "OUT_X");
  conns(ax, "IN_E", "OUT_E");
  const char *xin[] = {"x", NULL}, *eout[] = {"e", NULL};
  guint ta = weir_state_add_tasklet(g, s, "exp", xin, eout, "e = exp(x)")->id;
  WeirNode *en = weir_state_add_access(g, s, "E");
  guint eid = en->id;
  r.e_node = eid;
  WeirNode *bx = NULL;
  WeirNode *b = map1(g, s, "twice", "j", "0:16", &bx);
  guint bid = b->id, bxid = bx->id;
  conns(b, "IN_E", "OUT_E");
  conns(bx, "IN_Y", "OUT_Y");
  const char *ein[] = {"e", NULL}, *yout[] = {"y", NULL};
  const char *code = v == ROW_INDEXED ? "y = e[0, j] * 2" : "y = e * 2";
  guint tb = weir_state_add_tasklet(g, s, "twice", ein, yout, code)->id;

  g_autofree char *xi = g_strdup("i, 0:16");
  g_autofree char *ei = g_strdup_printf("%s, 0:16", row);
  g_autofree char *eij = g_strdup_printf("%s, j", row);
  wire(g, s, xid, NULL, mid, "IN_X", "X", "0:8, 0:16", 128);
  wire(g, s, mid, "OUT_X", aid, "IN_X", "X", xi, 16);
  wire(g, s, aid, "OUT_X", ta, "x", "X", "i, j", 0);
  wire(g, s, ta, "e", axid, "IN_E", "E", eij, 0);
  wire(g, s, axid, "OUT_E", eid, NULL, "E", ei, 16);
  guint src = eid;
  if (v == ROW_UNREAD) {
    /* a second access node of E, not written in this iteration */
    WeirNode *e2 = weir_state_add_access(g, s, "E");
    src = e2->id;
    r.e2_node = src;
    wire(g, s, mid, NULL, src, NULL, NULL, NULL, 0);
    /* keep the writer before the map that reads (ordering only) */
    wire(g, s, eid, NULL, bid, NULL, NULL, NULL, 0);
  }
  const char *rd_outer = v == ROW_CROSS ? "7 - i, 0:16" : ei;
  const char *rd_inner = v == ROW_CROSS     ? "7 - i, j"
                         : v == ROW_INDEXED ? ei
                                            : eij;
  wire(g, s, src, NULL, bid, "IN_E", "E", rd_outer, 16);
  wire(g, s, bid, "OUT_E", tb, "e", "E", rd_inner, v == ROW_INDEXED ? 1 : 0);
  wire(g, s, tb, "y", bxid, "IN_Y", "Y", "i, j", 0);
  wire(g, s, bxid, "OUT_Y", mxid, "IN_Y", "Y", "i, 0:16", 16);
  wire(g, s, mxid, "OUT_Y", yid, NULL, "Y", "0:8, 0:16", 128);
  if (v == ROW_OUTSIDE) {
    WeirNode *e3 = weir_state_add_access(g, s, "E");
    WeirNode *z = t4c_access(g, s, "Z", "8, 16", FALSE);
    r.out_node = e3->id;
    wire(g, s, mxid, NULL, e3->id, NULL, NULL, NULL, 0);
    t4c_memlet(g, s, e3->id, NULL, z->id, NULL, "E", NULL);
  }
  t4c_validate(g);
  return r;
}

static char *shape_text(const WeirGraph *g, const char *name) {
  const WeirContainer *c = weir_graph_container(g, name);
  GString *s = g_string_new("[");
  for (guint d = 0; d < c->shape->len; d++) {
    g_autofree char *e = weir_expr_to_string(g_ptr_array_index(c->shape, d));
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static void test_row(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  Rows r = rows(ROW_PLAIN);
  T4Program p = own(r.g);
  g_autoptr(GArray) sites = weir_transform_sites(t, p.g);
  assert_int_equal(sites->len, 1);
  const WeirSite *site = &g_array_index(sites, WeirSite, 0);
  assert_int_equal(site->n_nodes, 2);
  assert_int_equal(site->nodes[0], r.m);
  assert_int_equal(site->nodes[1], r.e_node);
  gint64 peak0 = t4c_peak(p.g, p.symbols);
  WeirApplyReport rep;
  g_autoptr(WeirGraph) q = t4c_apply_checked(&p, t, site, NULL, 0, &rep);
  assert_int_equal(rep.bytes_before.value, rep.bytes_after.value);
  weir_apply_report_clear(&rep);
  g_autofree char *shape = shape_text(q, "E");
  assert_string_equal(shape, "[16]");
  gint64 peak1 = t4c_peak(q, p.symbols);
  assert_int_equal(peak0, 8 * 16 * 4);
  assert_int_equal(peak1, 16 * 4);
  /* the memlets index the row */
  WeirState *s = g_ptr_array_index(q->states, 0);
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (g_strcmp0(m->data, "E") != 0)
      continue;
    g_autofree char *text = weir_subset_to_string(m->subset);
    assert_true(strcmp(text, "j") == 0 || strcmp(text, "0:16") == 0);
  }
  /* generated code: a private row per thread of the parallel map */
  t4c_compiled_check(&p, q, 1e-6);
  g_autoptr(GArray) none = weir_transform_sites(t, q);
  assert_int_equal(none->len, 1); /* E[16] is still inside the map ... */
  char *why = t4c_refusal(t, q, &g_array_index(none, WeirSite, 0), NULL);
  /* ... but no dimension is tied to the row any more */
  assert_contains(why, "no dimension of 'E' is indexed in every access by "
                       "the same parameter of map 'rows'");
  g_free(why);
  disown(&p);
}

static void test_indexed_keeps_extent_one(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  Rows r = rows(ROW_INDEXED);
  T4Program p = own(r.g);
  WeirSite site = {.state = 1, .n_nodes = 2, .nodes = {r.m, r.e_node}};
  site.state = ((WeirState *)g_ptr_array_index(p.g->states, 0))->id;
  g_autoptr(WeirGraph) q = t4c_apply_checked(&p, t, &site, NULL, 0, NULL);
  g_autofree char *shape = shape_text(q, "E");
  assert_string_equal(shape, "[1, 16]");
  assert_int_equal(t4c_peak(q, p.symbols), 16 * 4);
  disown(&p);
}

/* for i in 0:8: T[i] = X[i] * X[i]; Y[i] = T[i] + 1 */
static void test_scalar(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  WeirGraph *g = weir_graph_new("scalar");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = t4c_access(g, s, "X", "8", FALSE);
  WeirNode *y = t4c_access(g, s, "Y", "8", FALSE);
  guint xid = x->id, yid = y->id;
  weir_graph_add_array(g, "T", WEIR_DTYPE_F32, "8", TRUE, NULL);
  WeirNode *mx = NULL;
  WeirNode *m = map1(g, s, "m", "i", "0:8", &mx);
  guint mid = m->id, mxid = mx->id;
  conns(m, "IN_X", "OUT_X");
  conns(mx, "IN_Y", "OUT_Y");
  const char *xin[] = {"x", NULL}, *tout[] = {"t", NULL};
  const char *tin[] = {"t", NULL}, *yout[] = {"y", NULL};
  guint t1 = weir_state_add_tasklet(g, s, "sq", xin, tout, "t = x * x")->id;
  guint tn = weir_state_add_access(g, s, "T")->id;
  guint t2 = weir_state_add_tasklet(g, s, "inc", tin, yout, "y = t + 1")->id;
  wire(g, s, xid, NULL, mid, "IN_X", "X", "0:8", 8);
  wire(g, s, mid, "OUT_X", t1, "x", "X", "i", 0);
  wire(g, s, t1, "t", tn, NULL, "T", "i", 0);
  wire(g, s, tn, NULL, t2, "t", "T", "i", 0);
  wire(g, s, t2, "y", mxid, "IN_Y", "Y", "i", 0);
  wire(g, s, mxid, "OUT_Y", yid, NULL, "Y", "0:8", 8);
  t4c_validate(g);
  T4Program p = own(g);
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  assert_int_equal(sites->len, 1);
  g_autoptr(WeirGraph) q = t4c_apply_checked(
      &p, t, &g_array_index(sites, WeirSite, 0), NULL, 0, NULL);
  g_autofree char *shape = shape_text(q, "T");
  assert_string_equal(shape, "[]");
  assert_int_equal(t4c_peak(q, p.symbols), 4);
  t4c_compiled_check(&p, q, 1e-6);
  disown(&p);
}

static void test_refusals(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  struct {
    RowVariant v;
    const char *want;
  } cases[] = {
      {ROW_CROSS, "no dimension of 'E' is indexed in every access by the "
                  "same parameter of map 'rows' (or of a map around it) "
                  "with coefficient 1: iterations may share elements"},
      {ROW_STRIDED, "no dimension of 'E' is indexed in every access by the "
                    "same parameter"},
      {ROW_UNREAD, "before an iteration of map 'rows' has written all of "
                   "its slice"},
      {ROW_OUTSIDE, "'E' is also accessed outside map 'rows' (node "},
  };
  for (guint k = 0; k < G_N_ELEMENTS(cases); k++) {
    Rows r = rows(cases[k].v);
    g_autoptr(WeirGraph) owner = r.g;
    WeirSite site = {.state =
                         ((WeirState *)g_ptr_array_index(r.g->states, 0))->id,
                     .n_nodes = 2,
                     .nodes = {r.m, r.e_node}};
    g_autoptr(GArray) sites = weir_transform_sites(t, r.g);
    /* outside the map: not even a candidate */
    assert_int_equal(sites->len, cases[k].v == ROW_OUTSIDE ? 0 : 1);
    char *why = t4c_refusal(t, r.g, &site, NULL);
    assert_contains(why, cases[k].want);
    g_free(why);
  }
  /* the unread access node is named */
  Rows r = rows(ROW_UNREAD);
  g_autoptr(WeirGraph) owner = r.g;
  WeirSite site = {.state =
                       ((WeirState *)g_ptr_array_index(r.g->states, 0))->id,
                   .n_nodes = 2,
                   .nodes = {r.m, r.e_node}};
  char *why = t4c_refusal(t, r.g, &site, NULL);
  g_autofree char *want = g_strdup_printf("'E' is read at node %u", r.e2_node);
  assert_contains(why, want);
  g_free(why);
  /* not a site */
  guint first =
      ((WeirNode *)g_ptr_array_index(
           ((WeirState *)g_ptr_array_index(r.g->states, 0))->nodes, 0))
          ->id;
  WeirSite bad = {
      .state = site.state, .n_nodes = 3, .nodes = {r.m, r.e_node, first}};
  why = t4c_refusal(t, r.g, &bad, NULL);
  assert_string_equal(why, "a site is [map entry, access node] or [source "
                           "node]");
  g_free(why);
}

/* ------------------------------------------------------------ later */

/* K (constant, read last) and an initialization map writing I are built
 * first, so the topological order runs them first:
 *   A: T1 = relu(X); B: T2 = T1 * 2; C: Y = T2 + K + I */
typedef struct {
  WeirGraph *g;
  guint state, k, init, t2, x, t1, c;
} Late;

static Late late_program(void) {
  Late l = {0};
  WeirGraph *g = weir_graph_new("late");
  l.g = g;
  WeirState *s = weir_graph_add_state(g, "main");
  l.state = s->id;
  WeirContainer *kc =
      weir_graph_add_array(g, "K", WEIR_DTYPE_F32, "64", TRUE, NULL);
  float kd[64];
  for (guint i = 0; i < 64; i++)
    kd[i] = (float)i / 8.0f;
  g_autoptr(GBytes) kb = g_bytes_new(kd, sizeof(kd));
  weir_container_set_initial(kc, kb);
  l.k = weir_state_add_access(g, s, "K")->id;
  WeirNode *i = t4c_access(g, s, "I", "64", TRUE);
  guint iid = i->id;
  T4Port io = {i, "b", "j"};
  l.init = t4c_map(g, s, "init", "j", "0:64", NULL, 0, &io, 1, "b = 0.5")->id;
  WeirNode *x = t4c_access(g, s, "X", "64", FALSE);
  WeirNode *t1 = t4c_access(g, s, "T1", "64", TRUE);
  WeirNode *t2 = t4c_access(g, s, "T2", "64", TRUE);
  WeirNode *y = t4c_access(g, s, "Y", "64", FALSE);
  l.x = x->id;
  l.t1 = t1->id;
  l.t2 = t2->id;
  guint yid = y->id;
  T4Port ai = {weir_state_node(s, l.x), "a", "j"};
  T4Port ao = {weir_state_node(s, l.t1), "b", "j"};
  t4c_map(g, s, "A", "j", "0:64", &ai, 1, &ao, 1, "b = max(a, 0)");
  T4Port bi = {weir_state_node(s, l.t1), "a", "j"};
  T4Port bo = {weir_state_node(s, l.t2), "b", "j"};
  t4c_map(g, s, "B", "j", "0:64", &bi, 1, &bo, 1, "b = a * 2");
  T4Port ci[] = {{weir_state_node(s, l.t2), "a", "j"},
                 {weir_state_node(s, l.k), "k", "j"},
                 {weir_state_node(s, iid), "c", "j"}};
  T4Port co = {weir_state_node(s, yid), "b", "j"};
  l.c = t4c_map(g, s, "C", "j", "0:64", ci, 3, &co, 1, "b = a + k + c")->id;
  t4c_validate(g);
  return l;
}

static void test_later(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  Late l = late_program();
  T4Program p = own(l.g);
  g_autoptr(GArray) sites = weir_transform_sites(t, p.g);
  /* the sources that define transients: K and the initialization map (X
   * is an argument) */
  assert_int_equal(sites->len, 2);
  assert_int_equal(g_array_index(sites, WeirSite, 0).nodes[0], l.k);
  assert_int_equal(g_array_index(sites, WeirSite, 1).nodes[0], l.init);
  WeirSite on_x = {.state = l.state, .n_nodes = 1, .nodes = {l.x}};
  char *why = t4c_refusal(t, p.g, &on_x, NULL);
  assert_string_equal(why, "'X' is an argument: it is live for the whole "
                           "program");
  g_free(why);
  /* K, I, T1, T2 are live together while B runs: 4 x 256 bytes */
  gint64 peak0 = t4c_peak(p.g, p.symbols);
  assert_int_equal(peak0, 4 * 256);
  g_autoptr(WeirGraph) q = t4c_apply_checked(
      &p, t, &g_array_index(sites, WeirSite, 0), NULL, 0, NULL);
  /* K waits for T2, the last other input of C */
  WeirState *s = g_ptr_array_index(q->states, 0);
  gboolean edge = FALSE;
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    edge |= m->src == l.t2 && m->dst == l.k && !m->data;
  }
  assert_true(edge);
  assert_int_equal(t4c_peak(q, p.symbols), 3 * 256);
  /* then the initialization */
  T4Program p2 = own(weir_graph_copy(q));
  WeirSite init = {.state = l.state, .n_nodes = 1, .nodes = {l.init}};
  g_autoptr(WeirGraph) q2 = t4c_apply_checked(&p2, t, &init, NULL, 0, NULL);
  /* I now waits for K (now the last other input of C): B runs with T1 and
   * T2 only; the peak is C (T2, K, I) */
  WeirState *s2 = g_ptr_array_index(q2->states, 0);
  edge = FALSE;
  for (guint i = 0; i < s2->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s2->edges, i);
    edge |= m->src == l.k && m->dst == l.init && !m->data;
  }
  assert_true(edge);
  assert_int_equal(t4c_peak(q2, p.symbols), 3 * 256);
  t4c_compiled_check(&p, q2, 1e-6);
  /* done: K now has an input */
  WeirSite on_k = {.state = l.state, .n_nodes = 1, .nodes = {l.k}};
  why = t4c_refusal(t, q2, &on_k, NULL);
  g_autofree char *want = g_strdup_printf(
      "node %u (access 'K') has inputs: only a source can start later", l.k);
  assert_string_equal(why, want);
  g_free(why);
  /* a map that has inputs is no source either */
  WeirSite on_c = {.state = l.state, .n_nodes = 1, .nodes = {l.c}};
  why = t4c_refusal(t, q2, &on_c, NULL);
  assert_contains(why, "has inputs: only a source can start later");
  g_free(why);
  disown(&p2);
  disown(&p);
}

static void test_later_refusals(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  /* nothing that uses K reads anything else */
  WeirGraph *g = weir_graph_new("alone");
  g_autoptr(WeirGraph) owner = g;
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *y = t4c_access(g, s, "Y", "8", FALSE);
  WeirNode *k = t4c_access(g, s, "K", "8", TRUE);
  guint kid = k->id;
  T4Port in = {k, "a", "j"}, out = {y, "b", "j"};
  t4c_map(g, s, "use", "j", "0:8", &in, 1, &out, 1, "b = a");
  t4c_validate(g);
  WeirSite site = {.state = s->id, .n_nodes = 1, .nodes = {kid}};
  char *why = t4c_refusal(t, g, &site, NULL);
  g_autofree char *want = g_strdup_printf(
      "nothing that uses node %u has another input to wait for: the "
      "definition cannot start later",
      kid);
  assert_string_equal(why, want);
  g_free(why);
  /* a constant built last already runs after the other input */
  WeirGraph *h = weir_graph_new("last");
  g_autoptr(WeirGraph) owner2 = h;
  WeirState *hs = weir_graph_add_state(h, "main");
  WeirNode *x = t4c_access(h, hs, "X", "8", FALSE);
  WeirNode *z = t4c_access(h, hs, "Z", "8", FALSE);
  guint xid = x->id, zid = z->id;
  WeirNode *k2 = t4c_access(h, hs, "K", "8", TRUE);
  guint k2id = k2->id;
  T4Port ins[] = {{weir_state_node(hs, xid), "a", "j"},
                  {weir_state_node(hs, k2id), "k", "j"}};
  T4Port o = {weir_state_node(hs, zid), "b", "j"};
  t4c_map(h, hs, "use", "j", "0:8", ins, 2, &o, 1, "b = a * k");
  t4c_validate(h);
  WeirSite s2 = {.state = hs->id, .n_nodes = 1, .nodes = {k2id}};
  why = t4c_refusal(t, h, &s2, NULL);
  assert_contains(why, "already runs after node");
  g_free(why);
}

static void test_samples(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  for (guint i = 0; i < t4c_n_programs(); i++) {
    const T4Program *p = t4c_program(i);
    g_autoptr(GArray) sites = weir_transform_sites(t, p->g);
    /* each site alone: valid, the peak does not rise; the outputs are
     * compared site by site on the smaller programs, and on all programs
     * once every site is applied (the edges only order nodes) */
    gboolean each = sites->len <= 10;
    guint legal = 0;
    for (guint k = 0; k < sites->len; k++) {
      const WeirSite *site = &g_array_index(sites, WeirSite, k);
      /* the expansions keep every transient at the top level: only
       * sources */
      assert_int_equal(site->n_nodes, 1);
      if (!weir_transform_can_apply(t, p->g, site, NULL, NULL))
        continue;
      legal++;
      g_autoptr(WeirGraph) q = NULL;
      if (each) {
        q = t4c_apply_checked(p, t, site, NULL, 0, NULL);
      } else {
        q = weir_graph_copy(p->g);
        g_autoptr(GError) error = NULL;
        if (!weir_transform_apply(q, t, site, NULL, NULL, NULL, &error))
          fail_msg("%s: %s", p->name, error->message);
        t4c_validate(q);
      }
      assert_true(t4c_peak(q, p->symbols) <= t4c_peak(p->g, p->symbols));
    }
    /* every source that can start later, to a fixpoint */
    g_autoptr(WeirGraph) all = weir_graph_copy(p->g);
    guint applied = 0;
    for (gboolean changed = TRUE; changed;) {
      changed = FALSE;
      g_autoptr(GArray) left = weir_transform_sites(t, all);
      for (guint k = 0; k < left->len; k++) {
        const WeirSite *site = &g_array_index(left, WeirSite, k);
        if (!weir_transform_can_apply(t, all, site, NULL, NULL))
          continue;
        assert_true(weir_transform_apply(all, t, site, NULL, NULL, NULL, NULL));
        applied++;
        changed = TRUE;
      }
    }
    gint64 peak0 = t4c_peak(p->g, p->symbols);
    gint64 peak1 = t4c_peak(all, p->symbols);
    print_message("%s: %u sources, %u can start now; to a fixpoint %u "
                  "delayed: peak transient bytes %" G_GINT64_FORMAT
                  " -> %" G_GINT64_FORMAT " (-%.1f%%)\n",
                  p->name, sites->len, legal, applied, peak0, peak1,
                  peak0 ? 100.0 * (double)(peak0 - peak1) / (double)peak0
                        : 0.0);
    if (applied) {
      g_autoptr(GHashTable) got = t4c_run(all, p->symbols);
      t4c_assert_same(p->expected, got, 0, p->name);
      assert_true(weir_graph_validate(all, NULL));
    }
    if (p->model)
      assert_true(peak1 < peak0);
    if (strcmp(p->name, "resnet") == 0)
      t4c_compiled_check(p, all, 1e-4);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_row),
      cmocka_unit_test(test_indexed_keeps_extent_one),
      cmocka_unit_test(test_scalar),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_later),
      cmocka_unit_test(test_later_refusals),
      cmocka_unit_test(test_samples),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
