/* test-transient-reuse.c — the tier-4 pass "transient-reuse" (memory
 * pooling by liveness).
 *
 * The liveness model the pass plans with is the analysis' own (same peak
 * on every sample); an element-wise chain shares one buffer in place and
 * its peak halves; transients with disjoint lifetimes share a buffer after
 * an ordering edge, without raising the peak; a tasklet that reads its
 * input after writing its output, overlapping lifetimes, small transients
 * under min_bytes and a site other than state 0 are refused with reasons;
 * on every sample program and model the outputs stay the same, and the
 * peak drops on the expanded resnet and transformer.  Transients that a
 * library node takes whole (mlp with its Gemm nodes kept) only share
 * buffers of their own shape.  After -O2 (epilogues on native nodes) the
 * compiled models still agree with the interpreter. */
#include "../../transforms/tier4/tier4-util.h"
#include "tier4-check.h"

static const WeirTransformInfo *transform(void) {
  return t4c_transform("transient-reuse", 4);
}

static const WeirSite whole = {.state = 0, .n_nodes = 0};

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

static guint count_containers(const WeirGraph *g, gboolean transient) {
  guint n = 0;
  for (guint i = 0; i < g->containers->len; i++)
    n += ((const WeirContainer *)g_ptr_array_index(g->containers, i))
             ->transient == transient;
  return n;
}

/* X[64] -> relu -> T1 -> double -> T2 -> inc -> T3 -> neg -> Y[64]. */
static WeirGraph *chain(const char *second_code) {
  WeirGraph *g = weir_graph_new("chain");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = t4c_access(g, s, "X", "64", FALSE);
  WeirNode *t1 = t4c_access(g, s, "T1", "64", TRUE);
  WeirNode *t2 = t4c_access(g, s, "T2", "64", TRUE);
  WeirNode *t3 = t4c_access(g, s, "T3", "64", TRUE);
  WeirNode *y = t4c_access(g, s, "Y", "64", FALSE);
  guint ids[] = {x->id, t1->id, t2->id, t3->id, y->id};
  const char *codes[] = {"b = max(a, 0)", second_code, "b = a + 1", "b = -a"};
  for (guint k = 0; k < 4; k++) {
    T4Port in = {weir_state_node(s, ids[k]), "a", "i"};
    T4Port out = {weir_state_node(s, ids[k + 1]), "b", "i"};
    g_autofree char *label = g_strdup_printf("op%u", k);
    t4c_map(g, s, label, "i", "0:64", &in, 1, &out, 1, codes[k]);
  }
  t4c_validate(g);
  return g;
}

static void test_liveness_model(void **state) {
  (void)state;
  /* the model the pass plans with gives the analysis' peak */
  for (guint i = 0; i < t4c_n_programs(); i++) {
    const T4Program *p = t4c_program(i);
    g_autoptr(T4Liveness) l = t4_liveness_new(p->g, NULL);
    assert_non_null(l);
    g_autofree gint64 *sums = t4_liveness_sums(l);
    g_autoptr(WeirAnalysis) a = weir_analysis_compute(p->g, p->symbols, NULL);
    assert_non_null(a);
    if (!l->all_known)
      continue;
    assert_true(a->peak_transient_bytes.known);
    assert_int_equal(t4_max(sums, l->npos), a->peak_transient_bytes.value);
  }
}

/* init -> body (three times) -> end.  In the body: T1 = X + T2 (T2 is read
 * before it is written: carried around the loop), T2 = T1 * 0.5,
 * T3 = T1 + 1; at the end Y = T3 (T3 is used in two states). */
static WeirGraph *loop_program(void) {
  WeirGraph *g = weir_graph_new("looped");
  weir_graph_add_symbol(g, "t");
  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *body = weir_graph_add_state(g, "body");
  WeirState *end = weir_graph_add_state(g, "end");
  g_autoptr(GError) error = NULL;
  WeirTransition *t0 =
      weir_graph_add_transition(g, init->id, body->id, NULL, &error);
  assert_non_null(t0);
  assert_true(weir_transition_add_assignment(t0, "t", "0", NULL));
  WeirTransition *t1 =
      weir_graph_add_transition(g, body->id, body->id, "t < 2", &error);
  assert_non_null(t1);
  assert_true(weir_transition_add_assignment(t1, "t", "t + 1", NULL));
  assert_non_null(
      weir_graph_add_transition(g, body->id, end->id, NULL, &error));
  WeirNode *x = t4c_access(g, body, "X", "16", FALSE);
  WeirNode *t2r = t4c_access(g, body, "T2", "16", TRUE);
  WeirNode *t1n = t4c_access(g, body, "T1", "16", TRUE);
  guint xid = x->id, t2rid = t2r->id, t1id = t1n->id;
  T4Port ins[] = {{weir_state_node(body, xid), "a", "i"},
                  {weir_state_node(body, t2rid), "b", "i"}};
  T4Port o1 = {weir_state_node(body, t1id), "c", "i"};
  t4c_map(g, body, "acc", "i", "0:16", ins, 2, &o1, 1, "c = a + b");
  WeirNode *t2w = t4c_access(g, body, "T2", "16", TRUE);
  guint t2wid = t2w->id;
  T4Port i2 = {weir_state_node(body, t1id), "a", "i"};
  T4Port o2 = {weir_state_node(body, t2wid), "b", "i"};
  t4c_map(g, body, "half", "i", "0:16", &i2, 1, &o2, 1, "b = a * 0.5");
  WeirNode *t3 = t4c_access(g, body, "T3", "16", TRUE);
  guint t3id = t3->id;
  T4Port i3 = {weir_state_node(body, t1id), "a", "i"};
  T4Port o3 = {weir_state_node(body, t3id), "b", "i"};
  t4c_map(g, body, "inc", "i", "0:16", &i3, 1, &o3, 1, "b = a + 1");
  WeirNode *t3e = t4c_access(g, end, "T3", "16", TRUE);
  WeirNode *y = t4c_access(g, end, "Y", "16", FALSE);
  t4c_memlet(g, end, t3e->id, NULL, y->id, NULL, "T3", NULL);
  t4c_validate(g);
  return g;
}

static void test_loop(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  T4Program p = own(loop_program());
  /* the model agrees with the analysis on carried and multi-state values */
  g_autoptr(T4Liveness) l = t4_liveness_new(p.g, NULL);
  g_autofree gint64 *sums = t4_liveness_sums(l);
  assert_int_equal(t4_max(sums, l->npos), t4c_peak(p.g, p.symbols));
  const T4Live *t2 = t4_liveness_get(l, "T2");
  const T4Live *t3 = t4_liveness_get(l, "T3");
  assert_true(t2->carried);
  assert_int_equal(t3->n_states, 2);
  /* only T1 is a candidate, and it has no partner */
  char *why = t4c_refusal(t, p.g, &(WeirSite){0}, NULL);
  assert_contains(why, "of the 1 candidates");
  g_free(why);
  disown(&p);
}

static void test_in_place_chain(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  T4Program p = own(chain("b = 2 * a"));
  g_autoptr(GArray) sites = weir_transform_sites(t, p.g);
  assert_int_equal(sites->len, 1);
  const WeirSite *site = &g_array_index(sites, WeirSite, 0);
  assert_int_equal(site->state, 0);
  assert_int_equal(site->n_nodes, 0);
  gint64 peak0 = t4c_peak(p.g, p.symbols);
  g_autoptr(WeirGraph) q = t4c_apply_checked(&p, t, site, NULL, 0, NULL);
  /* T2 and T3 live in T1's buffer */
  assert_non_null(weir_graph_container(q, "T1"));
  assert_null(weir_graph_container(q, "T2"));
  assert_null(weir_graph_container(q, "T3"));
  assert_int_equal(count_containers(q, TRUE), 1);
  /* two lifetimes met in each map: now one buffer is live */
  assert_int_equal(peak0, 2 * 64 * 4);
  assert_int_equal(t4c_peak(q, p.symbols), 64 * 4);
  /* bytes moved do not change */
  assert_int_equal(t4c_bytes(q, p.symbols), t4c_bytes(p.g, p.symbols));
  t4c_compiled_check(&p, q, 1e-6);
  /* nothing left to share */
  g_autoptr(GArray) none = weir_transform_sites(t, q);
  assert_int_equal(none->len, 0);
  disown(&p);
}

static void test_read_after_write(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  /* the second map reads a after writing b: in place would read its own
   * output.  T3 still goes in place into T2's buffer. */
  g_autoptr(WeirGraph) g = chain("b = 2 * a\nt = a * 3\nb = t");
  T4Program p = own(weir_graph_copy(g));
  g_autoptr(WeirGraph) q = t4c_apply_checked(&p, t, &whole, NULL, 0, NULL);
  assert_non_null(weir_graph_container(q, "T1"));
  assert_non_null(weir_graph_container(q, "T2"));
  assert_null(weir_graph_container(q, "T3"));
  disown(&p);
}

/* X -> A -> T1 -> B -> Y1; then (not ordered by the dataflow) an
 * initialization writes T2, C reads T2 -> Y2. */
static WeirGraph *two_phases(guint *b_exit, guint *init_entry) {
  WeirGraph *g = weir_graph_new("phases");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = t4c_access(g, s, "X", "64", FALSE);
  WeirNode *t1 = t4c_access(g, s, "T1", "64", TRUE);
  WeirNode *y1 = t4c_access(g, s, "Y1", "64", FALSE);
  guint xid = x->id, t1id = t1->id, y1id = y1->id;
  T4Port a_in = {weir_state_node(s, xid), "a", "i"};
  T4Port a_out = {weir_state_node(s, t1id), "b", "i"};
  t4c_map(g, s, "A", "i", "0:64", &a_in, 1, &a_out, 1, "b = a * a");
  T4Port b_in = {weir_state_node(s, t1id), "a", "63 - i"};
  T4Port b_out = {weir_state_node(s, y1id), "b", "i"};
  WeirNode *be =
      t4c_map(g, s, "B", "i", "0:64", &b_in, 1, &b_out, 1, "b = a + 1");
  *b_exit = weir_state_map_exit(s, be)->id;
  WeirNode *t2 = t4c_access(g, s, "T2", "64", TRUE);
  WeirNode *y2 = t4c_access(g, s, "Y2", "64", FALSE);
  guint t2id = t2->id, y2id = y2->id;
  T4Port i_out = {weir_state_node(s, t2id), "b", "i"};
  *init_entry =
      t4c_map(g, s, "init", "i", "0:64", NULL, 0, &i_out, 1, "b = 3")->id;
  T4Port c_in = {weir_state_node(s, t2id), "a", "i"};
  T4Port c_out = {weir_state_node(s, y2id), "b", "i"};
  t4c_map(g, s, "C", "i", "0:64", &c_in, 1, &c_out, 1, "b = a * 2");
  t4c_validate(g);
  return g;
}

static void test_after(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  guint b_exit, init_entry;
  T4Program p = own(two_phases(&b_exit, &init_entry));
  gint64 peak0 = t4c_peak(p.g, p.symbols);
  g_autoptr(WeirGraph) q = t4c_apply_checked(&p, t, &whole, NULL, 0, NULL);
  assert_null(weir_graph_container(q, "T2"));
  assert_int_equal(count_containers(q, TRUE), 1);
  /* an ordering edge: B finishes reading T1 before init writes it again */
  WeirState *s = g_ptr_array_index(q->states, 0);
  gboolean ordered = FALSE;
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    ordered |= m->src == b_exit && m->dst == init_entry && m->data == NULL;
  }
  assert_true(ordered);
  /* the peak does not rise; the order (and so the liveness) is the same */
  assert_int_equal(t4c_peak(q, p.symbols), peak0);
  g_autoptr(WeirScopes) before =
      weir_state_scopes(g_ptr_array_index(p.g->states, 0), NULL);
  g_autoptr(WeirScopes) after = weir_state_scopes(s, NULL);
  assert_int_equal(before->order->len, after->order->len);
  assert_memory_equal(before->order->data, after->order->data,
                      before->order->len * sizeof(guint));
  disown(&p);
}

static void test_refusals(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  /* lifetimes that overlap: the last map reads both transients */
  WeirGraph *g = weir_graph_new("overlap");
  g_autoptr(WeirGraph) owner = g;
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = t4c_access(g, s, "X", "64", FALSE);
  WeirNode *t1 = t4c_access(g, s, "T1", "64", TRUE);
  WeirNode *t2 = t4c_access(g, s, "T2", "64", TRUE);
  WeirNode *y = t4c_access(g, s, "Y", "64", FALSE);
  guint xid = x->id, t1id = t1->id, t2id = t2->id, yid = y->id;
  T4Port in = {weir_state_node(s, xid), "a", "i"};
  T4Port o1 = {weir_state_node(s, t1id), "b", "i"};
  t4c_map(g, s, "A", "i", "0:64", &in, 1, &o1, 1, "b = a + 1");
  T4Port i2 = {weir_state_node(s, t1id), "a", "i"};
  T4Port o2 = {weir_state_node(s, t2id), "b", "i"};
  t4c_map(g, s, "B", "i", "0:64", &i2, 1, &o2, 1, "b = a * 2");
  T4Port ins[] = {{weir_state_node(s, t1id), "a", "i"},
                  {weir_state_node(s, t2id), "c", "i"}};
  T4Port o3 = {weir_state_node(s, yid), "b", "i"};
  t4c_map(g, s, "C", "i", "0:64", ins, 2, &o3, 1, "b = a - c");
  t4c_validate(g);
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  assert_int_equal(sites->len, 0);
  char *why = t4c_refusal(t, g, &whole, NULL);
  assert_string_equal(why, "no two transients can share a buffer: of the 2 "
                           "candidates (used in one state at top level, "
                           "concrete size of at least 0 bytes, no constant "
                           "data), none is defined after another one's last "
                           "use by a write that can be ordered after it");
  g_free(why);

  /* min_bytes leaves small transients alone */
  g_autoptr(WeirGraph) c = chain("b = 2 * a");
  const char *big[] = {"min_bytes=257", NULL};
  g_autoptr(WeirParams) pb = t4c_params(t, big);
  why = t4c_refusal(t, c, &whole, pb);
  assert_contains(why, "of the 0 candidates");
  assert_contains(why, "at least 257 bytes");
  g_free(why);
  const char *exact[] = {"min_bytes=256", NULL};
  g_autoptr(WeirParams) pe = t4c_params(t, exact);
  assert_true(weir_transform_can_apply(t, c, &whole, pe, NULL));

  /* a site with nodes */
  WeirSite bad = {.state = 1, .n_nodes = 1, .nodes = {xid}};
  why = t4c_refusal(t, g, &bad, NULL);
  assert_string_equal(why, "transient-reuse is a whole-program pass: its "
                           "site is state 0 with no nodes");
  g_free(why);
}

/* Bytes of transient storage (containers without constant data): what a
 * code generator that gives every transient its own block allocates. */
static gint64 storage(const WeirGraph *g) {
  gint64 sum = 0;
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (!c->transient || c->initial)
      continue;
    g_autoptr(WeirExpr) bytes = weir_container_bytes(c);
    gint64 v;
    assert_true(weir_expr_eval(bytes, NULL, &v, NULL));
    sum += v;
  }
  return sum;
}

static void test_samples(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  for (guint i = 0; i < t4c_n_programs(); i++) {
    const T4Program *p = t4c_program(i);
    g_autoptr(GArray) sites = weir_transform_sites(t, p->g);
    if (!p->model) {
      /* softmax.json has three transients whose lifetimes overlap; the
       * other samples have none */
      assert_int_equal(sites->len, 0);
      continue;
    }
    assert_int_equal(sites->len, 1);
    gint64 peak0 = t4c_peak(p->g, p->symbols);
    gint64 store0 = storage(p->g);
    guint n0 = count_containers(p->g, TRUE);
    WeirApplyReport rep;
    g_autoptr(WeirGraph) q = t4c_apply_checked(
        p, t, &g_array_index(sites, WeirSite, 0), NULL, 0, &rep);
    /* the same data moves */
    assert_int_equal(rep.bytes_before.value, rep.bytes_after.value);
    weir_apply_report_clear(&rep);
    gint64 peak1 = t4c_peak(q, p->symbols);
    gint64 store1 = storage(q);
    guint n1 = count_containers(q, TRUE);
    print_message("%s: peak transient bytes %" G_GINT64_FORMAT
                  " -> %" G_GINT64_FORMAT " (-%.1f%%); transient storage "
                  "%" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT
                  " (-%.1f%%); transients %u -> %u\n",
                  p->name, peak0, peak1,
                  100.0 * (double)(peak0 - peak1) / (double)peak0, store0,
                  store1, 100.0 * (double)(store0 - store1) / (double)store0,
                  n0, n1);
    /* never raised; storage always drops */
    assert_true(peak1 <= peak0);
    assert_true(store1 < store0);
    assert_true(n1 < n0);
    /* where the peak sits in an element-wise operator (lenet: the ReLU
     * after the first convolution; resnet: the batch norm of block 1), the
     * in-place sharing lowers it */
    if (strcmp(p->name, "lenet") == 0 || strcmp(p->name, "resnet") == 0)
      assert_true(peak1 < peak0);
    /* in place in parallel loops: the generated code agrees */
    if (strcmp(p->name, "resnet") == 0)
      t4c_compiled_check(p, q, 1e-4);
  }
}

/* Applies t at its first legal site until none is left. */
static void apply_everywhere(WeirGraph *g, const WeirTransformInfo *t) {
  for (gboolean applied = TRUE; applied;) {
    applied = FALSE;
    g_autoptr(GArray) sites = weir_transform_sites(t, g);
    for (guint i = 0; i < sites->len && !applied; i++) {
      const WeirSite *site = &g_array_index(sites, WeirSite, i);
      g_autoptr(GError) error = NULL;
      if (weir_transform_can_apply(t, g, site, NULL, NULL))
        applied = weir_transform_apply(g, t, site, NULL, NULL, NULL, &error);
      g_assert_no_error(error);
    }
  }
}

/* mlp (batch 4) with its Gemm nodes kept as library nodes and the ReLUs
 * expanded: the second ReLU's output [4, 64], read whole by the last Gemm,
 * could otherwise go into the [4, 128] buffer of the first layer, and the
 * Gemm would then multiply over 128 columns (it takes its sizes from the
 * container).  It may only share a buffer of its own shape: the FLOPs
 * stay, the outputs still match PyTorch's, and every operand of a library
 * node keeps its shape. */
static void test_library_operands(void **state) {
  (void)state;
  g_autofree char *model =
      g_build_filename(WEIR_SRCDIR, "samples", "models", "mlp.onnx", NULL);
  g_autofree char *in_path = g_build_filename(WEIR_SRCDIR, "samples", "models",
                                              "mlp", "input_0.pb", NULL);
  g_autofree char *out_path = g_build_filename(WEIR_SRCDIR, "samples", "models",
                                               "mlp", "output_0.pb", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *in_name = NULL, *out_name = NULL;
  g_autoptr(WeirTensor) input = weir_tensor_read_pb(in_path, &in_name, &error);
  g_autoptr(WeirTensor) want = weir_tensor_read_pb(out_path, &out_name, &error);
  assert_non_null(input);
  assert_non_null(want);
  g_autoptr(GHashTable) symbols = weir_bindings_new();
  weir_bindings_set(symbols, "batch", 4);
  WeirOnnxImportOptions opts = {.symbols = symbols};
  g_autoptr(WeirGraph) g = weir_onnx_import(model, &opts, &error);
  assert_non_null(g);
  assert_true(weir_expand_all(g, "Relu", NULL, &error));
  /* the ReLU loops vectorized (no longer in-place candidates), weights
   * started just before their layers: the first layer's buffer is then
   * free when the last ReLU writes */
  apply_everywhere(g, t4c_transform("vectorize", 1));
  apply_everywhere(g, t4c_transform("lifetime-shortening", 4));
  g_autoptr(WeirGraph) before = weir_graph_copy(g);

  /* with the shapes respected, no buffer is left to share here */
  g_autofree char *reason = NULL;
  assert_false(weir_transform_can_apply(transform(), g, &whole, NULL, &reason));
  assert_contains(reason, "no two transients can share a buffer");
  apply_everywhere(g, transform());
  assert_int_equal(t4c_bytes(g, symbols), t4c_bytes(before, symbols));
  g_autoptr(WeirAnalysis) a0 = weir_analysis_compute(before, symbols, &error);
  g_autoptr(WeirAnalysis) a1 = weir_analysis_compute(g, symbols, &error);
  assert_int_equal(a0->total_flops.value, a1->total_flops.value);

  /* every container a library node touches has its old shape */
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    const WeirState *s0 = weir_graph_state(before, s->id);
    for (guint k = 0; k < s->edges->len; k++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, k);
      const WeirNode *a = weir_state_node(s, m->src);
      const WeirNode *b = weir_state_node(s, m->dst);
      if (!m->data ||
          (a->kind != WEIR_NODE_LIBRARY && b->kind != WEIR_NODE_LIBRARY))
        continue;
      const WeirMemlet *m0 = weir_state_memlet(s0, m->id);
      assert_non_null(m0);
      const WeirContainer *c = weir_graph_container(g, m->data);
      const WeirContainer *c0 = weir_graph_container(before, m0->data);
      assert_int_equal(c->shape->len, c0->shape->len);
      for (guint d = 0; d < c->shape->len; d++) {
        g_autofree char *x =
            weir_expr_to_string(g_ptr_array_index(c->shape, d));
        g_autofree char *y =
            weir_expr_to_string(g_ptr_array_index(c0->shape, d));
        if (strcmp(x, y) != 0)
          fail_msg("memlet %u of library node: '%s' (was '%s') has %s in "
                   "dimension %u, not %s",
                   m->id, c->name, c0->name, x, d, y);
      }
    }
  }

  /* the program computes what PyTorch did */
  assert_true(weir_expand_all(g, NULL, NULL, &error));
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  WeirTensor *out = weir_tensor_new(want->dtype, want->rank, want->shape);
  g_hash_table_insert(args, (gpointer) "input", weir_tensor_copy(input));
  g_hash_table_insert(args, (gpointer) "output", out);
  if (!weir_interpret(g, symbols, args, NULL, &error))
    fail_msg("%s", error->message);
  if (!weir_tensor_allclose(out, want, 1e-4, 1e-5, NULL, &error))
    fail_msg("mlp after transient-reuse: %s", error->message);
}

/* After the -O2 pipeline the convolutions and GEMMs carry epilogues (the
 * transformer's second feed-forward MatMul adds the residual in its
 * epilogue), and the native implementations run the epilogue as a map
 * after the call.  An ordering edge that transient-reuse hangs on such a
 * node ("its operands are read, the buffer may be written") must follow
 * the epilogue's reads too: before the fix, norm2's mean zeroed the
 * residual's buffer between the GEMM and its epilogue (max error 0.92).
 * Compiled against the interpreter on every sample model. */
static void test_after_pipeline(void **state) {
  (void)state;
  for (guint i = 0; i < t4c_n_programs(); i++) {
    const T4Program *p = t4c_program(i);
    if (!p->model)
      continue;
    /* the model as imported (t4c's programs are expanded already) */
    g_autofree char *file = g_strdup_printf("%s.onnx", p->name);
    g_autofree char *path =
        g_build_filename(WEIR_SRCDIR, "samples", "models", file, NULL);
    g_autoptr(GHashTable) import_symbols = weir_bindings_new();
    weir_bindings_set(import_symbols, "batch", 4);
    WeirOnnxImportOptions opts = {.symbols = import_symbols};
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirGraph) q = weir_onnx_import(path, &opts, &error);
    if (!q)
      fail_msg("%s: %s", path, error->message);
    if (!weir_pipeline_apply(q, 2, p->symbols, NULL, &error))
      fail_msg("%s: -O2: %s", p->name, error->message);
    g_autofree char *reason = NULL;
    if (!weir_transform_can_apply(transform(), q, &whole, NULL, &reason)) {
      print_message("%s after -O2: %s\n", p->name, reason);
      continue;
    }
    apply_everywhere(q, transform());
    t4c_compiled_check(p, q, 1e-4);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_liveness_model),
      cmocka_unit_test(test_loop),
      cmocka_unit_test(test_in_place_chain),
      cmocka_unit_test(test_read_after_write),
      cmocka_unit_test(test_after),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_samples),
      cmocka_unit_test(test_library_operands),
      cmocka_unit_test(test_after_pipeline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
