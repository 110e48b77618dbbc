/* test-layout-transform.c — the tier-4 transformation "layout-transform".
 *
 * Sites are the connected components of 4-D transients; applying NHWC sets
 * channel-last strides on the whole component and nothing else, keeps the
 * outputs in the interpreter and in generated code, and leaves the bytes
 * moved as they were; NCHW brings back the original program byte for byte;
 * arguments, other ranks, constant data and components already in the
 * layout are refused with reasons; every site of every sample program and
 * sample model keeps the outputs. */
#include "tier4-check.h"

static const WeirTransformInfo *transform(void) {
  return t4c_transform("layout-transform", 4);
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

static char *strides_text(const WeirGraph *g, const char *name) {
  const WeirContainer *c = weir_graph_container(g, name);
  assert_non_null(c);
  GString *s = g_string_new(NULL);
  for (guint d = 0; d < c->strides->len; d++) {
    g_autofree char *e = weir_expr_to_string(g_ptr_array_index(c->strides, d));
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  return g_string_free(s, FALSE);
}

/* X[2, 3, 4, 5] -> relu -> T1 -> scale (reads C[3]) -> T2 -> add X -> Y;
 * X -> neg -> U -> copy -> Z (U is a component of its own); a rank-2
 * transient V and a 4-D constant K. */
typedef struct {
  WeirGraph *g;
  guint x, t1, t2, u, v, k;
} Program;

static Program program(void) {
  Program p = {0};
  WeirGraph *g = weir_graph_new("layout");
  p.g = g;
  WeirState *s = weir_graph_add_state(g, "main");
  const char *sh = "2, 3, 4, 5";
  const char *idx = "n, c, h, w";
  const char *params = "n, c, h, w";
  const char *ranges = "0:2, 0:3, 0:4, 0:5";
  WeirNode *x = t4c_access(g, s, "X", sh, FALSE);
  WeirNode *t1 = t4c_access(g, s, "T1", sh, TRUE);
  WeirNode *t2 = t4c_access(g, s, "T2", sh, TRUE);
  WeirNode *cc = t4c_access(g, s, "C", "3", FALSE);
  WeirNode *y = t4c_access(g, s, "Y", sh, FALSE);
  WeirNode *u = t4c_access(g, s, "U", sh, TRUE);
  WeirNode *z = t4c_access(g, s, "Z", sh, FALSE);
  p.x = x->id;
  p.t1 = t1->id;
  p.t2 = t2->id;
  p.u = u->id;
  guint ids[] = {x->id, t1->id, t2->id, cc->id, y->id, u->id, z->id};
#define N(i) weir_state_node(s, ids[i])
  T4Port r_in = {N(0), "a", idx}, r_out = {N(1), "b", idx};
  t4c_map(g, s, "relu", params, ranges, &r_in, 1, &r_out, 1, "b = max(a, 0)");
  T4Port s_in[] = {{N(1), "a", idx}, {N(3), "k", "c"}};
  T4Port s_out = {N(2), "b", idx};
  t4c_map(g, s, "scale", params, ranges, s_in, 2, &s_out, 1, "b = a * k");
  T4Port a_in[] = {{N(2), "a", idx}, {N(0), "x", idx}};
  T4Port a_out = {N(4), "b", idx};
  t4c_map(g, s, "add", params, ranges, a_in, 2, &a_out, 1, "b = a + x");
  T4Port n_in = {N(0), "a", "n, c, 3 - h, w"}, n_out = {N(5), "b", idx};
  t4c_map(g, s, "flip", params, ranges, &n_in, 1, &n_out, 1, "b = -a");
  t4c_memlet(g, s, ids[5], NULL, ids[6], NULL, "U", NULL);
#undef N
  /* a rank-2 transient and a 4-D constant, both used */
  WeirNode *v = t4c_access(g, s, "V", "2, 3", TRUE);
  p.v = v->id;
  WeirNode *w = t4c_access(g, s, "W", "2, 3", FALSE);
  t4c_memlet(g, s, p.v, NULL, w->id, NULL, "V", NULL);
  WeirContainer *kc =
      weir_graph_add_array(g, "K", WEIR_DTYPE_F32, "1, 1, 1, 2", TRUE, NULL);
  float kd[] = {1.5f, -2.0f};
  g_autoptr(GBytes) kb = g_bytes_new(kd, sizeof(kd));
  weir_container_set_initial(kc, kb);
  WeirNode *k = weir_state_add_access(g, s, "K");
  p.k = k->id;
  WeirNode *kz = t4c_access(g, s, "KZ", "1, 1, 1, 2", FALSE);
  t4c_memlet(g, s, p.k, NULL, kz->id, NULL, "K", NULL);
  t4c_validate(g);
  return p;
}

static void test_sites_and_apply(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  Program pr = program();
  T4Program p = own(pr.g);
  g_autofree char *original = weir_graph_to_json(p.g);
  g_autoptr(GArray) sites = weir_transform_sites(t, p.g);
  /* {T1, T2} and {U}: V has rank 2, K constant data, X an argument */
  assert_int_equal(sites->len, 2);
  const WeirSite *s1 = &g_array_index(sites, WeirSite, 0);
  const WeirSite *s2 = &g_array_index(sites, WeirSite, 1);
  assert_int_equal(s1->n_nodes, 1);
  assert_int_equal(s1->nodes[0], pr.t1);
  assert_int_equal(s2->nodes[0], pr.u);

  WeirApplyReport rep;
  g_autoptr(WeirGraph) q = t4c_apply_checked(&p, t, s1, NULL, 0, &rep);
  assert_int_equal(rep.bytes_before.value, rep.bytes_after.value);
  weir_apply_report_clear(&rep);
  g_autofree char *st1 = strides_text(q, "T1");
  g_autofree char *st2 = strides_text(q, "T2");
  g_autofree char *su = strides_text(q, "U");
  g_autofree char *sx = strides_text(q, "X");
  assert_string_equal(st1, "60, 1, 15, 3");
  assert_string_equal(st2, "60, 1, 15, 3");
  assert_string_equal(su, "60, 20, 5, 1");
  assert_string_equal(sx, "60, 20, 5, 1");
  /* the generated code honours the strides */
  t4c_compiled_check(&p, q, 1e-6);

  /* now refused as already done; nchw gives back the original */
  const char *nhwc[] = {"layout=nhwc", NULL};
  const char *nchw[] = {"layout=nchw", NULL};
  g_autoptr(WeirParams) pn = t4c_params(t, nhwc);
  g_autoptr(WeirParams) pc = t4c_params(t, nchw);
  char *why = t4c_refusal(t, q, s1, pn);
  assert_string_equal(why, "'T1' and the 1 transients connected to it are "
                           "already in nhwc layout");
  g_free(why);
  assert_true(weir_transform_apply(q, t, s1, pc, NULL, NULL, NULL));
  g_autofree char *back = weir_graph_to_json(q);
  assert_string_equal(back, original);
  why = t4c_refusal(t, p.g, s2, pc);
  assert_string_equal(why, "'U' and the 0 transients connected to it are "
                           "already in nchw layout");
  g_free(why);

  /* refusals */
  WeirState *s = g_ptr_array_index(p.g->states, 0);
  WeirSite on_x = {.state = s->id, .n_nodes = 1, .nodes = {pr.x}};
  why = t4c_refusal(t, p.g, &on_x, NULL);
  assert_string_equal(why, "'X' is an argument: arguments keep their layout "
                           "(the program's boundary is unchanged)");
  g_free(why);
  WeirSite on_v = {.state = s->id, .n_nodes = 1, .nodes = {pr.v}};
  why = t4c_refusal(t, p.g, &on_v, NULL);
  assert_string_equal(why, "'V' has rank 2; the layouts are those of 4-D (N, "
                           "C, H, W) containers");
  g_free(why);
  WeirSite on_k = {.state = s->id, .n_nodes = 1, .nodes = {pr.k}};
  why = t4c_refusal(t, p.g, &on_k, NULL);
  assert_string_equal(why, "'K' has constant data, stored row-major");
  g_free(why);
  disown(&p);
}

/* Symbolic shapes keep symbolic strides. */
static void test_symbolic(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  WeirGraph *g = weir_graph_new("sym");
  g_autoptr(WeirGraph) owner = g;
  weir_graph_add_symbol(g, "N");
  weir_graph_add_symbol(g, "H");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *x = t4c_access(g, s, "X", "N, 8, H, H", FALSE);
  WeirNode *tt = t4c_access(g, s, "T", "N, 8, H, H", TRUE);
  WeirNode *y = t4c_access(g, s, "Y", "N, 8, H, H", FALSE);
  guint tid = tt->id;
  T4Port in = {x, "a", "n, c, h, w"}, out = {tt, "b", "n, c, h, w"};
  t4c_map(g, s, "m", "n, c, h, w", "0:N, 0:8, 0:H, 0:H", &in, 1, &out, 1,
          "b = a * 2");
  t4c_memlet(g, s, tid, NULL, y->id, NULL, "T", NULL);
  t4c_validate(g);
  WeirSite site = {.state = s->id, .n_nodes = 1, .nodes = {tid}};
  assert_true(weir_transform_apply(g, t, &site, NULL, NULL, NULL, NULL));
  g_autofree char *st = strides_text(g, "T");
  assert_string_equal(st, "8*H*H, 1, 8*H, 8");
}

static void test_samples(void **state) {
  (void)state;
  const WeirTransformInfo *t = transform();
  for (guint i = 0; i < t4c_n_programs(); i++) {
    const T4Program *p = t4c_program(i);
    g_autoptr(GArray) sites = weir_transform_sites(t, p->g);
    guint legal = 0;
    g_autoptr(WeirGraph) all = weir_graph_copy(p->g);
    for (guint k = 0; k < sites->len; k++) {
      const WeirSite *site = &g_array_index(sites, WeirSite, k);
      if (!weir_transform_can_apply(t, p->g, site, NULL, NULL))
        continue;
      legal++;
      WeirApplyReport rep;
      g_autoptr(WeirGraph) q = t4c_apply_checked(p, t, site, NULL, 1e-5, &rep);
      assert_int_equal(rep.bytes_before.value, rep.bytes_after.value);
      weir_apply_report_clear(&rep);
      assert_true(weir_transform_apply(all, t, site, NULL, NULL, NULL, NULL));
    }
    print_message("%s: %u components of 4-D transients, %u changed to "
                  "NHWC\n",
                  p->name, sites->len, legal);
    if (strcmp(p->name, "resnet") == 0) {
      /* the whole network body is one component */
      assert_int_equal(sites->len, 1);
      t4c_compiled_check(p, all, 1e-4);
    }
    if (strcmp(p->name, "lenet") == 0)
      assert_int_equal(sites->len, 1);
    if (!p->model)
      assert_int_equal(sites->len, 0);
    if (legal) {
      g_autoptr(GHashTable) got = t4c_run(all, p->symbols);
      t4c_assert_same(p->expected, got, 1e-5, p->name);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sites_and_apply),
      cmocka_unit_test(test_symbolic),
      cmocka_unit_test(test_samples),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
