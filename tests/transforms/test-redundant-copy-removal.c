/* test-redundant-copy-removal.c — the tier-4 transformation
 * "redundant-copy-removal".
 *
 * Sites are the copies into transients (copy memlets and "y = x" maps) and
 * nothing else; refusals name the problem (an argument, a second writer, a
 * source overwritten later, a transposed order, a reshape seen by an
 * indexed connector, a partial copy into another shape, a conversion);
 * readers are rewritten through the index map (reshapes, transposes,
 * slices); every legal site of every sample program and sample model keeps
 * the outputs and moves fewer bytes. */
#include "tier4-check.h"

static const WeirTransformInfo *transform(void) {
  return t4c_transform("redundant-copy-removal", 4);
}

static char *subset_text(const WeirMemlet *m) {
  return weir_subset_to_string(m->subset);
}

/* X[2, 12] --copy--> R[2, 3, 4] --map y = 2 * r--> Y[2, 3, 4]. */
typedef struct {
  WeirGraph *g;
  WeirState *s;
  guint x, r, entry, y;
} Reshape;

static Reshape reshape_program(void) {
  Reshape p = {0};
  p.g = weir_graph_new("reshape");
  p.s = weir_graph_add_state(p.g, "main");
  WeirNode *x = t4c_access(p.g, p.s, "X", "2, 12", FALSE);
  WeirNode *r = t4c_access(p.g, p.s, "R", "2, 3, 4", TRUE);
  WeirNode *y = t4c_access(p.g, p.s, "Y", "2, 3, 4", FALSE);
  p.x = x->id;
  p.r = r->id;
  p.y = y->id;
  WeirMemlet *c = t4c_memlet(p.g, p.s, p.x, NULL, p.r, NULL, "X", NULL);
  assert_true(weir_memlet_set_other(c, "0:2, 0:3, 0:4", NULL));
  T4Port in = {weir_state_node(p.s, p.r), "r", "i, j, k"};
  T4Port out = {weir_state_node(p.s, p.y), "y", "i, j, k"};
  WeirNode *e = t4c_map(p.g, p.s, "double", "i, j, k", "0:2, 0:3, 0:4", &in, 1,
                        &out, 1, "y = 2 * r");
  p.entry = e->id;
  t4c_validate(p.g);
  return p;
}

/* A program owned by a test. */
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

static void test_reshape(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  Reshape r = reshape_program();
  T4Program p = own(r.g);
  g_autoptr(GArray) sites = weir_transform_sites(t, p.g);
  assert_int_equal(sites->len, 1);
  const WeirSite *site = &g_array_index(sites, WeirSite, 0);
  assert_int_equal(site->n_nodes, 2);
  assert_int_equal(site->nodes[0], r.x);
  assert_int_equal(site->nodes[1], r.r);
  WeirApplyReport rep;
  g_autoptr(WeirGraph) q = t4c_apply_checked(&p, t, site, NULL, 0, &rep);
  /* the copy (24 floats) is gone */
  assert_int_equal(rep.bytes_before.value - rep.bytes_after.value, 24 * 4);
  weir_apply_report_clear(&rep);
  assert_null(weir_graph_container(q, "R"));
  assert_null(weir_graph_node(q, r.r, NULL));
  /* the map reads X through the reshaped index */
  WeirState *s = g_ptr_array_index(q->states, 0);
  WeirMemlet *outer = NULL, *inner = NULL;
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->dst == r.entry)
      outer = m;
    if (m->src == r.entry)
      inner = m;
  }
  assert_non_null(outer);
  assert_non_null(inner);
  assert_int_equal(outer->src, r.x);
  assert_string_equal(outer->data, "X");
  assert_string_equal(inner->data, "X");
  g_autofree char *so = subset_text(outer);
  g_autofree char *si = subset_text(inner);
  assert_string_equal(so, "0:2, 0:12");
  assert_string_equal(si, "i, 4*j + k");
  disown(&p);
}

/* A[4, 6] --transpose map--> B[6, 4]; B read by a map (element-wise) and,
 * in the variant, by a copy into C[24]. */
typedef struct {
  WeirGraph *g;
  WeirState *s;
  guint a, entry, b, reader;
} Transpose;

static Transpose transpose_program(gboolean copy_reader) {
  Transpose p = {0};
  p.g = weir_graph_new("transpose");
  p.s = weir_graph_add_state(p.g, "main");
  WeirNode *a = t4c_access(p.g, p.s, "A", "4, 6", FALSE);
  WeirNode *b = t4c_access(p.g, p.s, "B", "6, 4", TRUE);
  WeirNode *y = t4c_access(p.g, p.s, "Y", "6, 4", FALSE);
  p.a = a->id;
  p.b = b->id;
  T4Port in = {a, "x", "j, i"};
  T4Port out = {b, "y", "i, j"};
  p.entry = t4c_map(p.g, p.s, "transpose", "i, j", "0:6, 0:4", &in, 1, &out, 1,
                    "y = x")
                ->id;
  T4Port in2 = {weir_state_node(p.s, p.b), "v", "i, j"};
  T4Port out2 = {y, "w", "i, j"};
  p.reader =
      t4c_map(p.g, p.s, "neg", "i, j", "0:6, 0:4", &in2, 1, &out2, 1, "w = -v")
          ->id;
  if (copy_reader) {
    WeirNode *c = t4c_access(p.g, p.s, "C", "24", FALSE);
    WeirMemlet *m = t4c_memlet(p.g, p.s, p.b, NULL, c->id, NULL, "B", NULL);
    assert_true(weir_memlet_set_other(m, "0:24", NULL));
  }
  t4c_validate(p.g);
  return p;
}

static void test_transpose_map(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  Transpose tp = transpose_program(FALSE);
  T4Program p = own(tp.g);
  g_autoptr(GArray) sites = weir_transform_sites(t, p.g);
  assert_int_equal(sites->len, 1);
  const WeirSite *site = &g_array_index(sites, WeirSite, 0);
  assert_int_equal(site->n_nodes, 3);
  assert_int_equal(site->nodes[0], tp.a);
  assert_int_equal(site->nodes[1], tp.entry);
  assert_int_equal(site->nodes[2], tp.b);
  WeirApplyReport rep;
  g_autoptr(WeirGraph) q = t4c_apply_checked(&p, t, site, NULL, 0, &rep);
  /* a read and a write of 24 floats are gone */
  assert_int_equal(rep.bytes_before.value - rep.bytes_after.value, 2 * 24 * 4);
  weir_apply_report_clear(&rep);
  assert_null(weir_graph_node(q, tp.entry, NULL));
  WeirState *s = g_ptr_array_index(q->states, 0);
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->src == tp.reader && m->data) {
      g_autofree char *text = subset_text(m);
      assert_string_equal(m->data, "A");
      assert_string_equal(text, "j, i");
    }
    if (m->dst == tp.reader) {
      g_autofree char *text = subset_text(m);
      assert_int_equal(m->src, tp.a);
      assert_string_equal(text, "0:4, 0:6");
    }
  }
  disown(&p);

  /* A copy reads B in row-major order: a transposition cannot be read
   * through A in that order. */
  Transpose tc = transpose_program(TRUE);
  g_autoptr(WeirGraph) owner = tc.g;
  WeirSite s2 = {
      .state = tc.s->id, .n_nodes = 3, .nodes = {tc.a, tc.entry, tc.b}};
  g_autofree char *why = t4c_refusal(t, tc.g, &s2, NULL);
  assert_contains(why, "(copy of access 'C') cannot read 'A' instead of 'B': "
                       "the copy transposes the dimensions it reads");
}

/* Slice with a step: B[i] = A[2 * i + 1], read element-wise and by a copy
 * of the first half. */
static void test_slice_map(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  WeirGraph *g = weir_graph_new("slice");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *a = t4c_access(g, s, "A", "16", FALSE);
  WeirNode *b = t4c_access(g, s, "B", "7", TRUE);
  WeirNode *y = t4c_access(g, s, "Y", "7", FALSE);
  WeirNode *z = t4c_access(g, s, "Z", "3", FALSE);
  guint bid = b->id, zid = z->id;
  T4Port in = {a, "x", "2*i + 1"};
  T4Port out = {b, "y", "i"};
  WeirNode *e = t4c_map(g, s, "slice", "i", "0:7", &in, 1, &out, 1, "y = x");
  guint eid = e->id;
  T4Port in2 = {weir_state_node(s, bid), "v", "i"};
  T4Port out2 = {y, "w", "i"};
  t4c_map(g, s, "square", "i", "0:7", &in2, 1, &out2, 1, "w = v * v");
  WeirMemlet *c = t4c_memlet(g, s, bid, NULL, zid, NULL, "B", "1:4");
  assert_true(weir_memlet_set_other(c, "0:3", NULL));
  t4c_validate(g);
  T4Program p = own(g);
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  assert_int_equal(sites->len, 1);
  const WeirSite *site = &g_array_index(sites, WeirSite, 0);
  assert_int_equal(site->nodes[1], eid);
  g_autoptr(WeirGraph) q = t4c_apply_checked(&p, t, site, NULL, 0, NULL);
  /* the copy of B[1:4] reads A[3:8:2] */
  WeirState *qs = g_ptr_array_index(q->states, 0);
  gboolean seen = FALSE;
  for (guint i = 0; i < qs->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(qs->edges, i);
    if (m->dst != zid)
      continue;
    g_autofree char *text = subset_text(m);
    assert_string_equal(m->data, "A");
    assert_string_equal(text, "3:8:2");
    seen = TRUE;
  }
  assert_true(seen);
  disown(&p);
}

static void test_refusals(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  char *why;

  /* an argument is a result, not a redundant copy */
  {
    Reshape r = reshape_program();
    g_autoptr(WeirGraph) owner = r.g;
    WeirContainer *c = weir_graph_container(r.g, "R");
    c->transient = FALSE;
    g_autoptr(GArray) sites = weir_transform_sites(t, r.g);
    assert_int_equal(sites->len, 0);
    WeirSite site = {.state = r.s->id, .n_nodes = 2, .nodes = {r.x, r.r}};
    why = t4c_refusal(t, r.g, &site, NULL);
    assert_string_equal(
        why, "'R' is an argument of the program: its copy is a result");
    g_free(why);
  }
  /* a second definition of R */
  {
    Reshape r = reshape_program();
    g_autoptr(WeirGraph) owner = r.g;
    WeirNode *r2 = weir_state_add_access(r.g, r.s, "R");
    WeirNode *k = t4c_access(r.g, r.s, "K", "2, 3, 4", FALSE);
    t4c_memlet(r.g, r.s, k->id, NULL, r2->id, NULL, "K", NULL);
    t4c_validate(r.g);
    WeirSite site = {.state = r.s->id, .n_nodes = 2, .nodes = {r.x, r.r}};
    why = t4c_refusal(t, r.g, &site, NULL);
    assert_string_equal(why, "'R' has 2 access nodes; the copy must be its "
                             "only definition");
    g_free(why);
  }
  /* the source is overwritten after the copy */
  {
    Reshape r = reshape_program();
    g_autoptr(WeirGraph) owner = r.g;
    WeirNode *x2 = weir_state_add_access(r.g, r.s, "X");
    guint x2id = x2->id;
    T4Port in = {weir_state_node(r.s, r.y), "v", "i, j, k"};
    T4Port out = {x2, "w", "i, 4*j + k"};
    t4c_map(r.g, r.s, "back", "i, j, k", "0:2, 0:3, 0:4", &in, 1, &out, 1,
            "w = v + 1");
    t4c_validate(r.g);
    WeirSite site = {.state = r.s->id, .n_nodes = 2, .nodes = {r.x, r.r}};
    why = t4c_refusal(t, r.g, &site, NULL);
    g_autofree char *want = g_strdup_printf(
        "'X' is written at node %u, which may run after the copy has read it",
        x2id);
    assert_string_equal(why, want);
    g_free(why);
  }
  /* an indexed connector sees R's shape */
  {
    WeirGraph *g = weir_graph_new("indexed");
    g_autoptr(WeirGraph) owner = g;
    WeirState *s = weir_graph_add_state(g, "main");
    WeirNode *x = t4c_access(g, s, "X", "2, 12", FALSE);
    WeirNode *r = t4c_access(g, s, "R", "2, 3, 4", TRUE);
    WeirNode *y = t4c_access(g, s, "Y", "", FALSE);
    guint xid = x->id, rid = r->id;
    WeirMemlet *c = t4c_memlet(g, s, xid, NULL, rid, NULL, "X", NULL);
    assert_true(weir_memlet_set_other(c, "0:2, 0:3, 0:4", NULL));
    const char *tin[] = {"r", NULL};
    const char *tout[] = {"y", NULL};
    WeirNode *tk = weir_state_add_tasklet(g, s, "pick", tin, tout,
                                          "y = r[1, 2, 3] + r[0, 0, 0]");
    t4c_memlet(g, s, rid, NULL, tk->id, "r", "R", NULL);
    t4c_memlet(g, s, tk->id, "y", y->id, NULL, "Y", "");
    t4c_validate(g);
    WeirSite site = {.state = s->id, .n_nodes = 2, .nodes = {xid, rid}};
    why = t4c_refusal(t, g, &site, NULL);
    assert_contains(why, "(indexed tasklet connector of tasklet 'pick') "
                         "cannot read 'X' instead of 'R': it needs the shape "
                         "of the copy, which the source does not have");
    g_free(why);
  }
  /* part of X copied into another shape */
  {
    WeirGraph *g = weir_graph_new("part");
    g_autoptr(WeirGraph) owner = g;
    WeirState *s = weir_graph_add_state(g, "main");
    WeirNode *x = t4c_access(g, s, "X", "4, 6", FALSE);
    WeirNode *r = t4c_access(g, s, "R", "6", TRUE);
    WeirNode *y = t4c_access(g, s, "Y", "6", FALSE);
    guint xid = x->id, rid = r->id, cid;
    WeirMemlet *c = t4c_memlet(g, s, xid, NULL, rid, NULL, "X", "1:3, 0:3");
    cid = c->id;
    assert_true(weir_memlet_set_other(c, "0:6", NULL));
    t4c_memlet(g, s, rid, NULL, y->id, NULL, "R", NULL);
    t4c_validate(g);
    WeirSite site = {.state = s->id, .n_nodes = 2, .nodes = {xid, rid}};
    why = t4c_refusal(t, g, &site, NULL);
    g_autofree char *want = g_strdup_printf(
        "memlet %u copies part '1:3, 0:3' of 'X' into 'R' of another shape",
        cid);
    assert_string_equal(why, want);
    g_free(why);
  }
  /* a copy that converts */
  {
    Reshape r = reshape_program();
    g_autoptr(WeirGraph) owner = r.g;
    weir_graph_container(r.g, "R")->dtype = WEIR_DTYPE_F64;
    WeirSite site = {.state = r.s->id, .n_nodes = 2, .nodes = {r.x, r.r}};
    why = t4c_refusal(t, r.g, &site, NULL);
    assert_string_equal(why, "'X' is f32 but 'R' is f64: the copy converts");
    g_free(why);
  }
  /* not a site at all */
  {
    Reshape r = reshape_program();
    g_autoptr(WeirGraph) owner = r.g;
    WeirSite site = {.state = r.s->id, .n_nodes = 2, .nodes = {r.x, r.entry}};
    why = t4c_refusal(t, r.g, &site, NULL);
    assert_string_equal(why, "the first and last nodes of the site must be "
                             "access nodes");
    g_free(why);
  }
}

/* Expected sites per program: how many, and how many of them are legal. */
typedef struct {
  const char *program;
  guint sites, legal;
} Expect;

static const Expect expects[] = {
    {"vector_add.json", 0, 0},
    {"matmul.json", 0, 0},
    {"softmax.json", 0, 0},
    {"loop.json", 0, 0},
    /* the Gemm and Conv initializations copy the bias into an output that
     * is accumulated afterwards (two access nodes): refused */
    {"mlp", 2, 0},
    {"lenet", 4, 1},
    {"resnet", 1, 1},
    /* one transposition is read by a Reshape copy (order differs): refused
     */
    {"transformer", 15, 13},
};

static void test_samples(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  for (guint i = 0; i < t4c_n_programs(); i++) {
    const T4Program *p = t4c_program(i);
    g_autoptr(GArray) sites = weir_transform_sites(t, p->g);
    guint legal = 0;
    gint64 bytes0 = t4c_bytes(p->g, p->symbols);
    for (guint k = 0; k < sites->len; k++) {
      const WeirSite *site = &g_array_index(sites, WeirSite, k);
      g_autofree char *where = weir_site_describe(p->g, site);
      char *reason = NULL;
      if (!weir_transform_can_apply(t, p->g, site, NULL, &reason)) {
        print_message("%s: %s: %s\n", p->name, where, reason);
        g_free(reason);
        continue;
      }
      legal++;
      WeirApplyReport rep;
      g_autoptr(WeirGraph) q = t4c_apply_checked(p, t, site, NULL, 1e-5, &rep);
      /* the copy's traffic is gone */
      assert_true(rep.bytes_after.value < rep.bytes_before.value);
      print_message(
          "%s: %s: bytes moved %" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT "\n",
          p->name, where, rep.bytes_before.value, rep.bytes_after.value);
      weir_apply_report_clear(&rep);
    }
    const Expect *e = &expects[i];
    assert_string_equal(e->program, p->name);
    if (sites->len != e->sites || legal != e->legal)
      fail_msg("%s: %u sites, %u legal (expected %u, %u)", p->name, sites->len,
               legal, e->sites, e->legal);
    if (legal == 0)
      continue;
    /* every copy that can go, gone (to a fixpoint) */
    g_autoptr(WeirGraph) all = weir_graph_copy(p->g);
    guint applied = 0;
    for (gboolean changed = TRUE; changed;) {
      changed = FALSE;
      g_autoptr(GArray) left = weir_transform_sites(t, all);
      for (guint k = 0; k < left->len && !changed; k++) {
        const WeirSite *site = &g_array_index(left, WeirSite, k);
        if (!weir_transform_can_apply(t, all, site, NULL, NULL))
          continue;
        g_autoptr(GError) error = NULL;
        if (!weir_transform_apply(all, t, site, NULL, NULL, NULL, &error))
          fail_msg("%s: %s", p->name, error->message);
        applied++;
        changed = TRUE;
      }
    }
    g_autoptr(GHashTable) got = t4c_run(all, p->symbols);
    t4c_assert_same(p->expected, got, 1e-5, p->name);
    if (strcmp(p->name, "transformer") == 0)
      t4c_compiled_check(p, all, 1e-4);
    gint64 bytes1 = t4c_bytes(all, p->symbols);
    assert_true(bytes1 < bytes0);
    print_message("%s: %u copies removed; bytes moved %" G_GINT64_FORMAT
                  " -> %" G_GINT64_FORMAT " (%.2f%%); peak transient "
                  "%" G_GINT64_FORMAT " -> %" G_GINT64_FORMAT "\n",
                  p->name, applied, bytes0, bytes1,
                  100.0 * (double)(bytes0 - bytes1) / (double)bytes0,
                  t4c_peak(p->g, p->symbols), t4c_peak(all, p->symbols));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reshape),   cmocka_unit_test(test_transpose_map),
      cmocka_unit_test(test_slice_map), cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_samples),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
