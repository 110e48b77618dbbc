/* test-json.c — the JSON format: byte-exact round trips of the samples and
 * of a graph that uses every feature, exact floats, ids, constant data, a
 * corpus of malformed documents (each checked for its error code, JSON path
 * and problem), truncated and randomly corrupted input, and file saving. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

#include "weir-json.h"

/* ------------------------------------------------------------------------
 * Helpers
 */

static const char *const samples[] = {"vector_add.json", "matmul.json",
                                      "softmax.json", "loop.json"};

static char *sample_path(const char *name) {
  return g_build_filename(WEIR_SRCDIR, "samples", name, NULL);
}

static char *read_sample(const char *name, gsize *len) {
  g_autofree char *path = sample_path(name);
  char *text = NULL;
  g_autoptr(GError) error = NULL;
  assert_true(g_file_get_contents(path, &text, len, &error));
  return text;
}

/* Loads text, asserting success; returns the graph. */
static WeirGraph *load_ok(const char *text, const char *source) {
  g_autoptr(GError) error = NULL;
  WeirGraph *g = weir_graph_from_json(text, -1, source, &error);
  if (!g)
    fail_msg("%s: %s", source, error->message);
  return g;
}

/* save(g), then save(load(save(g))): both texts must be identical. */
static char *assert_stable(const WeirGraph *g, const char *source) {
  char *s1 = weir_graph_to_json(g);
  g_autoptr(WeirGraph) g2 = load_ok(s1, source);
  g_autofree char *s2 = weir_graph_to_json(g2);
  assert_string_equal(s1, s2);
  return s1;
}

/* Loading must fail with code, a message starting with
 * "model.json: " prefix, and containing problem. */
static void expect_error(const char *text, gssize len, WeirErrorCode code,
                         const char *prefix, const char *problem) {
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g =
      weir_graph_from_json(text, len, "model.json", &error);
  if (g)
    fail_msg("loaded, expected an error about '%s' in:\n%s", problem, text);
  assert_non_null(error);
  assert_true(error->domain == WEIR_ERROR);
  g_autofree char *full_prefix = g_strconcat("model.json: ", prefix, NULL);
  if (error->code != (int)code ||
      !g_str_has_prefix(error->message, full_prefix) ||
      !strstr(error->message, problem))
    fail_msg("got code %d '%s', expected code %d, prefix '%s', problem '%s'",
             error->code, error->message, code, full_prefix, problem);
}

/* ------------------------------------------------------------------------
 * Round trips
 */

static void test_samples_round_trip(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(samples); i++) {
    gsize len;
    g_autofree char *text = read_sample(samples[i], &len);
    g_autofree char *path = sample_path(samples[i]);
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirGraph) g = weir_graph_load(path, &error);
    if (!g)
      fail_msg("%s", error->message);
    g_autofree char *saved = assert_stable(g, samples[i]);
    /* The samples are written in Weir's own layout, so saving reproduces
     * them exactly. */
    assert_string_equal(saved, text);
  }
}

static void test_vector_add_ids(void **state) {
  (void)state;
  g_autofree char *path = sample_path("vector_add.json");
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_load(path, &error);
  assert_non_null(g);
  assert_string_equal(g->name, "vector_add");
  assert_int_equal(g->containers->len, 3);
  WeirContainer *c = g_ptr_array_index(g->containers, 2);
  assert_int_equal(c->id, 3);
  assert_string_equal(c->name, "C");
  assert_true(weir_graph_container(g, "C") == c);
  assert_int_equal(g->start, 4);
  WeirState *s = weir_graph_state(g, 4);
  assert_non_null(s);
  assert_int_equal(s->nodes->len, 6);
  for (guint i = 0; i < 6; i++)
    assert_int_equal(((WeirNode *)g_ptr_array_index(s->nodes, i))->id, 5 + i);
  WeirNode *exit = weir_state_node(s, 9);
  assert_int_equal(exit->kind, WEIR_NODE_MAP_EXIT);
  assert_int_equal(exit->entry, 7);
  assert_true(weir_state_map_exit(s, weir_state_node(s, 7)) == exit);
  WeirNode *entry = weir_state_node(s, 7);
  assert_int_equal(entry->map->schedule, WEIR_SCHEDULE_PARALLEL);
  assert_int_equal(s->edges->len, 6);
  WeirMemlet *m = weir_state_memlet(s, 13);
  assert_int_equal(m->src, 7);
  assert_int_equal(m->dst, 8);
  assert_string_equal(m->src_conn, "OUT_A");
  assert_string_equal(m->dst_conn, "a");
  assert_int_equal(g->next_id, 17);
}

static void set_f32(guint8 *p, float f) {
  guint32 bits;
  memcpy(&bits, &f, 4);
  bits = GUINT32_TO_LE(bits);
  memcpy(p, &bits, 4);
}

static void add_initial(WeirContainer *c, const void *data, gsize size) {
  g_autoptr(GBytes) b = g_bytes_new(data, size);
  weir_container_set_initial(c, b);
}

/* A valid nested program: Y = X (copy), with a symbol L. */
static WeirGraph *build_nested(void) {
  WeirGraph *g = weir_graph_new("inner");
  weir_graph_add_symbol(g, "L");
  assert_non_null(
      weir_graph_add_array(g, "X", WEIR_DTYPE_F32, "L", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "Y", WEIR_DTYPE_F32, "L", FALSE, NULL));
  WeirState *s = weir_graph_add_state(g, "copy");
  WeirNode *x = weir_state_add_access(g, s, "X");
  WeirNode *y = weir_state_add_access(g, s, "Y");
  WeirMemlet *m =
      weir_state_add_memlet(g, s, x->id, NULL, y->id, NULL, "X", "0:L", NULL);
  assert_non_null(m);
  assert_true(weir_memlet_set_other(m, "0:L", NULL));
  return g;
}

/* A program that uses every feature of the format. */
static WeirGraph *build_full(void) {
  WeirGraph *g = weir_graph_new("everything");
  const char *syms[] = {"N", "M", "T", "t"};
  for (guint i = 0; i < G_N_ELEMENTS(syms); i++)
    weir_graph_add_symbol(g, syms[i]);
  WeirContainer *a =
      weir_graph_add_array(g, "A", WEIR_DTYPE_F32, "N", FALSE, NULL);
  WeirContainer *b =
      weir_graph_add_array(g, "B", WEIR_DTYPE_F64, "N, 2*M", FALSE, NULL);
  assert_non_null(a);
  assert_non_null(b);
  /* Column-major strides. */
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  g_autoptr(WeirExpr) n = weir_expr_symbol("N");
  WeirExpr *strides[] = {one, n};
  weir_container_set_strides(b, strides);
  const char *scalars[] = {"Ssum", "Sprod", "Smin", "Smax"};
  for (guint i = 0; i < 4; i++)
    assert_non_null(
        weir_graph_add_array(g, scalars[i], WEIR_DTYPE_F32, "", TRUE, NULL));
  WeirContainer *k =
      weir_graph_add_array(g, "K", WEIR_DTYPE_F32, "4", TRUE, NULL);
  guint8 kdata[16];
  for (guint i = 0; i < 4; i++)
    set_f32(kdata + 4 * i, 0.5f * (float)i - 1.0f);
  add_initial(k, kdata, sizeof kdata);
  WeirContainer *w =
      weir_graph_add_array(g, "W", WEIR_DTYPE_I64, "2, 2", TRUE, NULL);
  guint64 wdata[4] = {GUINT64_TO_LE(1), GUINT64_TO_LE((guint64)-2),
                      GUINT64_TO_LE(G_MAXINT64), GUINT64_TO_LE(0)};
  add_initial(w, wdata, sizeof wdata);
  WeirContainer *u =
      weir_graph_add_array(g, "U", WEIR_DTYPE_U8, "3", TRUE, NULL);
  add_initial(u, "\x00\xff\x7f", 3);
  WeirContainer *q =
      weir_graph_add_array(g, "Q", WEIR_DTYPE_BOOL, "2", TRUE, NULL);
  add_initial(q, "\x01\x00", 2);
  assert_non_null(
      weir_graph_add_array(g, "D", WEIR_DTYPE_F64, "2", TRUE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "C", WEIR_DTYPE_F32, "N", FALSE, NULL));
  assert_non_null(
      weir_graph_add_array(g, "E", WEIR_DTYPE_F32, "N", FALSE, NULL));

  WeirState *s = weir_graph_add_state(g, "compute");
  /* Reductions with every wcr inside a tiled, unrolled, collapsed map. */
  WeirNode *acc_a = weir_state_add_access(g, s, "A");
  WeirNode *exit = NULL;
  WeirNode *entry = weir_state_add_map(
      g, s, "reduce", (const char *const[]){"i", NULL},
      (const char *const[]){"0:N", NULL}, WEIR_SCHEDULE_PARALLEL, &exit, NULL);
  assert_non_null(entry);
  gint64 tile = 32;
  g_array_append_val(entry->map->tile, tile);
  entry->map->unroll = 4;
  entry->map->collapse = 1;
  weir_node_add_in_conn(entry, "IN_A");
  weir_node_add_out_conn(entry, "OUT_A");
  WeirNode *t = weir_state_add_tasklet(
      g, s, "reduce", (const char *const[]){"a", NULL},
      (const char *const[]){"s1", "s2", "s3", "s4", NULL},
      "# every reduction\ns1 = a\ns2 = a\ns3 = a; s4 = a");
  assert_non_null(t->code);
  assert_non_null(weir_state_add_memlet(g, s, acc_a->id, NULL, entry->id,
                                        "IN_A", "A", "0:N", NULL));
  assert_non_null(weir_state_add_memlet(g, s, entry->id, "OUT_A", t->id, "a",
                                        "A", "i", NULL));
  const WeirWcr wcrs[] = {WEIR_WCR_SUM, WEIR_WCR_PROD, WEIR_WCR_MIN,
                          WEIR_WCR_MAX};
  g_autoptr(WeirExpr) vol = weir_expr_symbol("N");
  for (guint i = 0; i < 4; i++) {
    g_autofree char *out = g_strdup_printf("s%u", i + 1);
    g_autofree char *in_c = g_strdup_printf("IN_%s", scalars[i]);
    g_autofree char *out_c = g_strdup_printf("OUT_%s", scalars[i]);
    weir_node_add_in_conn(exit, in_c);
    weir_node_add_out_conn(exit, out_c);
    WeirMemlet *m = weir_state_add_memlet(g, s, t->id, out, exit->id, in_c,
                                          scalars[i], "", NULL);
    m->wcr = wcrs[i];
    WeirNode *acc = weir_state_add_access(g, s, scalars[i]);
    m = weir_state_add_memlet(g, s, exit->id, out_c, acc->id, NULL, scalars[i],
                              "", NULL);
    m->wcr = wcrs[i];
    weir_memlet_set_volume(m, vol);
  }
  /* A copy with `other`, dynamic. */
  WeirNode *acc_a2 = weir_state_add_access(g, s, "A");
  WeirNode *acc_c = weir_state_add_access(g, s, "C");
  WeirMemlet *copy = weir_state_add_memlet(g, s, acc_a2->id, NULL, acc_c->id,
                                           NULL, "A", "0:N", NULL);
  assert_true(weir_memlet_set_other(copy, "0:N", NULL));
  copy->dynamic = TRUE;
  /* A library node with attributes of all six types. */
  WeirNode *acc_k = weir_state_add_access(g, s, "K");
  WeirNode *lib = weir_state_add_library(g, s, "gemm", "Gemm",
                                         (const char *const[]){"x", NULL},
                                         (const char *const[]){"y", NULL});
  weir_node_set_attr_int(lib, "axis", -1);
  weir_node_set_attr_float(lib, "alpha", 0.1);
  weir_node_set_attr_string(lib, "mode", "constant \"quoted\" / slash");
  weir_node_set_attr_ints(lib, "pads", (const gint64[]){0, 1, G_MININT64}, 3);
  weir_node_set_attr_floats(lib, "scales", (const double[]){1.5, -0.0, 1e-300},
                            3);
  weir_node_set_attr_strings(lib, "names",
                             (const char *const[]){"a", "b\nc", "\xc3\xa9"}, 3);
  WeirNode *acc_d = weir_state_add_access(g, s, "D");
  assert_non_null(weir_state_add_memlet(g, s, acc_k->id, NULL, lib->id, "x",
                                        "K", "0:4", NULL));
  assert_non_null(weir_state_add_memlet(g, s, lib->id, "y", acc_d->id, NULL,
                                        "D", "0:2", NULL));
  /* A nested program with a symbol binding. */
  WeirNode *acc_a3 = weir_state_add_access(g, s, "A");
  WeirNode *nest = weir_state_add_nested(g, s, "inner", build_nested(),
                                         (const char *const[]){"X", NULL},
                                         (const char *const[]){"Y", NULL});
  assert_true(weir_node_bind_symbol(nest, "L", "N", NULL));
  WeirNode *acc_e = weir_state_add_access(g, s, "E");
  assert_non_null(weir_state_add_memlet(g, s, acc_a3->id, NULL, nest->id, "X",
                                        "A", "0:N", NULL));
  assert_non_null(weir_state_add_memlet(g, s, nest->id, "Y", acc_e->id, NULL,
                                        "E", "0:N", NULL));
  /* A strided simd map whose tasklet reads nothing: an empty memlet. */
  WeirNode *exit2 = NULL;
  WeirNode *entry2 = weir_state_add_map(
      g, s, "fill", (const char *const[]){"j", NULL},
      (const char *const[]){"0:2*M:2", NULL}, WEIR_SCHEDULE_SIMD, &exit2, NULL);
  assert_non_null(entry2);
  WeirNode *z = weir_state_add_tasklet(
      g, s, "zero", NULL, (const char *const[]){"o", NULL}, "o = 0.0");
  WeirNode *acc_b = weir_state_add_access(g, s, "B");
  weir_node_add_in_conn(exit2, "IN_B");
  weir_node_add_out_conn(exit2, "OUT_B");
  assert_non_null(weir_state_add_memlet(g, s, entry2->id, NULL, z->id, NULL,
                                        NULL, NULL, NULL));
  assert_non_null(weir_state_add_memlet(g, s, z->id, "o", exit2->id, "IN_B",
                                        "B", "0, j", NULL));
  assert_non_null(weir_state_add_memlet(g, s, exit2->id, "OUT_B", acc_b->id,
                                        NULL, "B", "0, 0:2*M:2", NULL));

  /* Control flow: a loop with conditions and multiple assignments. */
  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *done = weir_graph_add_state(g, "done");
  weir_graph_set_start(g, init->id);
  WeirTransition *tr =
      weir_graph_add_transition(g, init->id, s->id, NULL, NULL);
  assert_true(weir_transition_add_assignment(tr, "t", "0", NULL));
  assert_true(weir_transition_add_assignment(tr, "T", "N // 2 + 1", NULL));
  tr = weir_graph_add_transition(g, s->id, s->id, "t < T && t % 2 == 0", NULL);
  assert_non_null(tr);
  assert_true(weir_transition_add_assignment(tr, "t", "t + 1", NULL));
  assert_true(weir_transition_add_assignment(tr, "T", "T", NULL));
  assert_non_null(
      weir_graph_add_transition(g, s->id, done->id, "t >= T", NULL));
  g->next_id += 5; /* ids handed out and since removed stay used */
  return g;
}

static void test_full_round_trip(void **state) {
  (void)state;
  g_autoptr(WeirGraph) g = build_full();
  g_autofree char *text = assert_stable(g, "full.json");
  /* Non-default values are written, defaults are not. */
  assert_non_null(
      strstr(text, "\"strides\": [\n        \"1\",\n        \"N\""));
  assert_non_null(strstr(text, "\"transient\": true"));
  assert_non_null(strstr(text, "\"tile\": [\n"));
  assert_non_null(strstr(text, "\"unroll\": 4"));
  assert_non_null(strstr(text, "\"collapse\": 1"));
  assert_non_null(strstr(text, "\"schedule\": \"simd\""));
  assert_non_null(strstr(text, "\"ranges\": [\n            \"0:2*M:2\""));
  assert_non_null(strstr(text, "\"other\": \"0:N\""));
  assert_non_null(strstr(text, "\"dynamic\": true"));
  assert_non_null(strstr(text, "\"volume\": \"N\""));
  assert_non_null(strstr(text, "\"wcr\": \"prod\""));
  assert_non_null(strstr(text, "\"condition\": \"t < T && t % 2 == 0\""));
  assert_non_null(strstr(text, "\"mode\": {\n"));
  assert_non_null(strstr(text, "\"constant \\\"quoted\\\" / slash\""));
  assert_null(strstr(text, "\"schedule\": \"sequential\""));
  assert_null(strstr(text, "\"wcr\": \"none\""));
  assert_null(strstr(text, "\"dynamic\": false"));
  assert_null(strstr(text, "\"transient\": false"));
  assert_true(g_str_has_suffix(text, "}\n"));

  /* Deep equality through the loaded graph's fields. */
  g_autoptr(WeirGraph) g2 = load_ok(text, "full.json");
  assert_int_equal(g2->next_id, g->next_id);
  assert_int_equal(g2->start, g->start);
  assert_int_equal(g2->containers->len, g->containers->len);
  for (guint i = 0; i < g->containers->len; i++) {
    WeirContainer *c1 = g_ptr_array_index(g->containers, i);
    WeirContainer *c2 = g_ptr_array_index(g2->containers, i);
    assert_int_equal(c1->id, c2->id);
    assert_string_equal(c1->name, c2->name);
    assert_int_equal(c1->dtype, c2->dtype);
    assert_int_equal(c1->transient, c2->transient);
    assert_int_equal(c1->initial != NULL, c2->initial != NULL);
    if (c1->initial)
      assert_true(g_bytes_equal(c1->initial, c2->initial));
    for (guint d = 0; d < c1->strides->len; d++)
      assert_true(weir_expr_equal(g_ptr_array_index(c1->strides, d),
                                  g_ptr_array_index(c2->strides, d)));
  }
  WeirNode *lib = NULL;
  WeirState *s2 = NULL;
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    s2 = g_ptr_array_index(g2->states, i);
    assert_int_equal(s->id, s2->id);
    assert_int_equal(s->nodes->len, s2->nodes->len);
    assert_int_equal(s->edges->len, s2->edges->len);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n1 = g_ptr_array_index(s->nodes, k);
      WeirNode *n2 = g_ptr_array_index(s2->nodes, k);
      assert_int_equal(n1->id, n2->id);
      assert_int_equal(n1->kind, n2->kind);
      assert_string_equal(n1->label, n2->label);
      if (n2->kind == WEIR_NODE_LIBRARY)
        lib = n2;
      if (n2->kind == WEIR_NODE_TASKLET)
        assert_non_null(n2->code);
    }
    for (guint k = 0; k < s->edges->len; k++) {
      WeirMemlet *m1 = g_ptr_array_index(s->edges, k);
      WeirMemlet *m2 = g_ptr_array_index(s2->edges, k);
      assert_int_equal(m1->id, m2->id);
      assert_int_equal(m1->wcr, m2->wcr);
      assert_int_equal(m1->dynamic, m2->dynamic);
      assert_true(weir_expr_equal(m1->volume, m2->volume));
    }
  }
  assert_non_null(lib);
  const WeirAttr *pads = weir_node_attr(lib, "pads");
  assert_int_equal(pads->type, WEIR_ATTR_INTS);
  assert_int_equal(g_array_index(pads->ints, gint64, 2), G_MININT64);
  const WeirAttr *names = weir_node_attr(lib, "names");
  assert_string_equal(g_ptr_array_index(names->strings, 1), "b\nc");
  assert_string_equal(weir_node_attr(lib, "mode")->s,
                      "constant \"quoted\" / slash");
  assert_int_equal(weir_node_attr(lib, "axis")->i, -1);
  WeirNode *nest = NULL;
  for (guint i = 0; i < g2->states->len && !nest; i++) {
    WeirState *s = g_ptr_array_index(g2->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_NESTED)
        nest = n;
    }
  }
  assert_non_null(nest);
  assert_string_equal(nest->nested->name, "inner");
  assert_int_equal(nest->symbol_map->len, 1);
  WeirTransition *tr = g_ptr_array_index(g2->transitions, 1);
  assert_int_equal(tr->assign_names->len, 2);
  assert_string_equal(g_ptr_array_index(tr->assign_names, 1), "T");
  assert_non_null(tr->condition);
}

static void test_floats_exact(void **state) {
  (void)state;
  const double values[] = {
      0.1,       1e-300,   -0.0, 3.4028234663852886e38, 4.9406564584124654e-324,
      1.0 / 3.0, -2.5,     1e21, 123456789012345678.0,  G_MAXDOUBLE,
      INFINITY,  -INFINITY};
  g_autoptr(WeirGraph) g = weir_graph_new("floats");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *lib = weir_state_add_library(g, s, "op", "Op", NULL, NULL);
  weir_node_set_attr_floats(lib, "v", values, G_N_ELEMENTS(values));
  for (guint i = 0; i < G_N_ELEMENTS(values); i++) {
    g_autofree char *name = g_strdup_printf("f%02u", i);
    weir_node_set_attr_float(lib, name, values[i]);
  }
  weir_node_set_attr_float(lib, "nan", NAN);
  g_autofree char *text = assert_stable(g, "floats.json");
  /* Shortest exact text. */
  assert_non_null(strstr(text, "\"float\": 0.1\n"));
  assert_non_null(strstr(text, "\"float\": -0.0\n"));
  assert_non_null(strstr(text, "\"float\": 1e-300\n"));
  assert_non_null(strstr(text, "\"float\": -2.5\n"));
  g_autoptr(WeirGraph) g2 = load_ok(text, "floats.json");
  WeirNode *lib2 = g_ptr_array_index(
      ((WeirState *)g_ptr_array_index(g2->states, 0))->nodes, 0);
  const WeirAttr *v = weir_node_attr(lib2, "v");
  assert_int_equal(v->floats->len, G_N_ELEMENTS(values));
  for (guint i = 0; i < G_N_ELEMENTS(values); i++) {
    double got = g_array_index(v->floats, double, i);
    assert_memory_equal(&got, &values[i], sizeof(double));
    g_autofree char *name = g_strdup_printf("f%02u", i);
    const WeirAttr *a = weir_node_attr(lib2, name);
    assert_int_equal(a->type, WEIR_ATTR_FLOAT);
    assert_memory_equal(&a->f, &values[i], sizeof(double));
  }
  assert_true(isnan(weir_node_attr(lib2, "nan")->f));
  /* Integers are accepted where floats are expected. */
  const char *doc =
      "{\"format\": \"weir-ir\", \"version\": 1, \"name\": \"p\", "
      "\"symbols\": [], \"containers\": [], \"start\": 1, \"states\": "
      "[{\"id\": 1, \"label\": \"s\", \"nodes\": [{\"id\": 2, \"kind\": "
      "\"library\", \"label\": \"l\", \"op\": \"Op\", \"attrs\": {\"a\": "
      "{\"float\": 3}, \"b\": {\"floats\": [1, 2.5]}}}], \"edges\": []}], "
      "\"transitions\": []}";
  g_autoptr(WeirGraph) g3 = load_ok(doc, "ints.json");
  WeirNode *lib3 = g_ptr_array_index(
      ((WeirState *)g_ptr_array_index(g3->states, 0))->nodes, 0);
  assert_true(weir_node_attr(lib3, "a")->f == 3.0);
  assert_true(g_array_index(weir_node_attr(lib3, "b")->floats, double, 0) ==
              1.0);
}

/* ------------------------------------------------------------------------
 * Ids and constant data
 */

static const char *const small_head =
    "{\"format\": \"weir-ir\", \"version\": 1, \"name\": \"p\", "
    "\"symbols\": [\"N\"], \"containers\": [";

static void test_ids_and_next_id(void **state) {
  (void)state;
  /* Sparse ids are kept; next_id defaults to max id + 1. */
  g_autofree char *doc = g_strconcat(
      small_head,
      "{\"id\": 7, \"name\": \"A\", \"dtype\": \"f32\", \"shape\": [\"N\"]}, "
      "{\"id\": 40, \"name\": \"B\", \"dtype\": \"f32\", \"shape\": "
      "[\"N\"]}], \"start\": 100, \"states\": [{\"id\": 100, \"label\": "
      "\"s\", \"nodes\": [{\"id\": 101, \"kind\": \"access\", \"label\": "
      "\"A\", \"data\": \"A\"}, {\"id\": 250, \"kind\": \"access\", "
      "\"label\": \"B\", \"data\": \"B\"}], \"edges\": [{\"id\": 300, "
      "\"src\": 101, \"dst\": 250, \"data\": \"A\", \"subset\": \"0:N\", "
      "\"other\": \"0:N\"}]}], \"transitions\": []}",
      NULL);
  g_autoptr(WeirGraph) g = load_ok(doc, "ids.json");
  assert_int_equal(((WeirContainer *)g_ptr_array_index(g->containers, 1))->id,
                   40);
  WeirState *s = weir_graph_state(g, 100);
  assert_non_null(s);
  assert_non_null(weir_state_node(s, 250));
  assert_non_null(weir_state_memlet(s, 300));
  assert_int_equal(g->next_id, 301);
  /* A new element gets a fresh id. */
  WeirNode *n = weir_state_add_access(g, s, "A");
  assert_int_equal(n->id, 301);
  /* A larger saved next_id is kept, a smaller one is raised. */
  g_autofree char *doc2 =
      g_strconcat(small_head,
                  "], \"start\": 3, \"states\": [{\"id\": 3, \"label\": "
                  "\"s\", \"nodes\": [], \"edges\": []}], \"transitions\": "
                  "[], \"next_id\": 1000}",
                  NULL);
  g_autoptr(WeirGraph) g2 = load_ok(doc2, "next.json");
  assert_int_equal(g2->next_id, 1000);
  g_autofree char *doc3 =
      g_strconcat(small_head,
                  "], \"start\": 3, \"states\": [{\"id\": 3, \"label\": "
                  "\"s\", \"nodes\": [], \"edges\": []}], \"transitions\": "
                  "[], \"next_id\": 2}",
                  NULL);
  g_autoptr(WeirGraph) g3 = load_ok(doc3, "next.json");
  assert_int_equal(g3->next_id, 4);
}

static void test_initial_values(void **state) {
  (void)state;
  g_autofree char *doc = g_strconcat(
      small_head,
      "{\"id\": 1, \"name\": \"F\", \"dtype\": \"f32\", \"shape\": [\"2\"], "
      "\"initial\": {\"values\": [1.5, -2]}}, "
      "{\"id\": 2, \"name\": \"D\", \"dtype\": \"f64\", \"shape\": [], "
      "\"initial\": {\"values\": [0.1]}}, "
      "{\"id\": 3, \"name\": \"I\", \"dtype\": \"i32\", \"shape\": [\"1\", "
      "\"2\"], \"initial\": {\"values\": [-1, 2147483647]}}, "
      "{\"id\": 4, \"name\": \"L\", \"dtype\": \"i64\", \"shape\": [\"1\"], "
      "\"initial\": {\"values\": [-9223372036854775808]}}, "
      "{\"id\": 5, \"name\": \"B\", \"dtype\": \"bool\", \"shape\": [\"3\"], "
      "\"initial\": {\"values\": [true, 0, 1]}}, "
      "{\"id\": 6, \"name\": \"U\", \"dtype\": \"u8\", \"shape\": [\"2\"], "
      "\"initial\": {\"values\": [255, 3.0]}}, "
      "{\"id\": 7, \"name\": \"Z\", \"dtype\": \"u8\", \"shape\": [\"0\"], "
      "\"initial\": {\"base64\": \"\"}}, "
      "{\"id\": 9, \"name\": \"H\", \"dtype\": \"f16\", \"shape\": [\"2\"], "
      "\"initial\": {\"values\": [1.5, 1.00048828125]}}, "
      "{\"id\": 10, \"name\": \"R\", \"dtype\": \"bf16\", \"shape\": [\"1\"], "
      "\"initial\": {\"values\": [-2]}}, "
      "{\"id\": 11, \"name\": \"S\", \"dtype\": \"i8\", \"shape\": [\"2\"], "
      "\"initial\": {\"values\": [-128, 127]}}, "
      "{\"id\": 12, \"name\": \"W\", \"dtype\": \"u16\", \"shape\": [\"1\"], "
      "\"initial\": {\"values\": [65535]}}, "
      "{\"id\": 13, \"name\": \"V\", \"dtype\": \"u64\", \"shape\": [\"1\"], "
      "\"initial\": {\"values\": [9223372036854775807]}}"
      "], \"start\": 8, \"states\": [{\"id\": 8, \"label\": \"s\", "
      "\"nodes\": [], \"edges\": []}], \"transitions\": []}",
      NULL);
  g_autoptr(WeirGraph) g = load_ok(doc, "values.json");
  guint8 f[8];
  set_f32(f, 1.5f);
  set_f32(f + 4, -2.0f);
  gsize size;
  const guint8 *data =
      g_bytes_get_data(weir_graph_container(g, "F")->initial, &size);
  assert_int_equal(size, 8);
  assert_memory_equal(data, f, 8);
  double d = 0.1;
  guint64 dbits;
  memcpy(&dbits, &d, 8);
  dbits = GUINT64_TO_LE(dbits);
  data = g_bytes_get_data(weir_graph_container(g, "D")->initial, &size);
  assert_int_equal(size, 8);
  assert_memory_equal(data, &dbits, 8);
  data = g_bytes_get_data(weir_graph_container(g, "I")->initial, &size);
  assert_int_equal(size, 8);
  assert_memory_equal(data, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8);
  data = g_bytes_get_data(weir_graph_container(g, "L")->initial, &size);
  assert_memory_equal(data, "\x00\x00\x00\x00\x00\x00\x00\x80", 8);
  data = g_bytes_get_data(weir_graph_container(g, "B")->initial, &size);
  assert_int_equal(size, 3);
  assert_memory_equal(data, "\x01\x00\x01", 3);
  data = g_bytes_get_data(weir_graph_container(g, "U")->initial, &size);
  assert_memory_equal(data, "\xff\x03", 2);
  assert_int_equal(g_bytes_get_size(weir_graph_container(g, "Z")->initial), 0);
  /* 16-bit floats as their bits, rounded to nearest even (1 + 2^-11 is a
   * tie: 1.0) */
  data = g_bytes_get_data(weir_graph_container(g, "H")->initial, &size);
  assert_int_equal(size, 4);
  assert_memory_equal(data, "\x00\x3e\x00\x3c", 4);
  data = g_bytes_get_data(weir_graph_container(g, "R")->initial, &size);
  assert_memory_equal(data, "\x00\xc0", 2);
  data = g_bytes_get_data(weir_graph_container(g, "S")->initial, &size);
  assert_memory_equal(data, "\x80\x7f", 2);
  data = g_bytes_get_data(weir_graph_container(g, "W")->initial, &size);
  assert_memory_equal(data, "\xff\xff", 2);
  data = g_bytes_get_data(weir_graph_container(g, "V")->initial, &size);
  assert_int_equal(size, 8);
  assert_memory_equal(data, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8);
  /* Saved as base64, and that reads back to the same bytes. */
  g_autofree char *text = assert_stable(g, "values.json");
  assert_non_null(strstr(text, "\"base64\": \"AADAPwAAAMA=\""));
  assert_null(strstr(text, "\"values\""));
}

/* ------------------------------------------------------------------------
 * Malformed documents
 */

/* A small valid program whose parts can be replaced. */
static char *doc(const char *containers, const char *nodes, const char *edges,
                 const char *transitions, const char *extra) {
  if (!containers)
    containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"f32\", "
                 "\"shape\": [\"N\"]}, {\"id\": 2, \"name\": \"B\", "
                 "\"dtype\": \"f32\", \"shape\": [\"N\"]}";
  if (!nodes)
    nodes = "{\"id\": 11, \"kind\": \"access\", \"label\": \"A\", "
            "\"data\": \"A\"}, {\"id\": 12, \"kind\": \"access\", "
            "\"label\": \"B\", \"data\": \"B\"}";
  if (!edges)
    edges = "{\"id\": 20, \"src\": 11, \"dst\": 12, \"data\": \"A\", "
            "\"subset\": \"0:N\", \"other\": \"0:N\"}";
  if (!transitions)
    transitions = "";
  return g_strdup_printf(
      "{\"format\": \"weir-ir\", \"version\": 1, \"name\": \"p\",\n"
      " \"symbols\": [\"N\", \"t\"], \"containers\": [%s],\n"
      " \"start\": 10, \"states\": [{\"id\": 10, \"label\": \"main\",\n"
      " \"nodes\": [%s],\n \"edges\": [%s]},\n"
      " {\"id\": 30, \"label\": \"end\", \"nodes\": [], \"edges\": []}],\n"
      " \"transitions\": [%s]%s}\n",
      containers, nodes, edges, transitions, extra ? extra : "");
}

#define MAP_NODES(entry_extra, exit_extra)                                     \
  "{\"id\": 11, \"kind\": \"access\", \"label\": \"A\", \"data\": \"A\"}, "    \
  "{\"id\": 12, \"kind\": \"access\", \"label\": \"B\", \"data\": \"B\"}, "    \
  "{\"id\": 13, \"kind\": \"map_entry\", \"label\": \"m\", \"params\": "       \
  "[\"i\"], \"ranges\": [\"0:N\"]" entry_extra "}, "                           \
  "{\"id\": 14, \"kind\": \"map_exit\", \"label\": \"m\"" exit_extra "}"

#define LIB_NODES(attrs)                                                       \
  "{\"id\": 11, \"kind\": \"access\", \"label\": \"A\", \"data\": \"A\"}, "    \
  "{\"id\": 12, \"kind\": \"access\", \"label\": \"B\", \"data\": \"B\"}, "    \
  "{\"id\": 13, \"kind\": \"library\", \"label\": \"l\", \"op\": \"Op\", "     \
  "\"attrs\": " attrs "}"

typedef struct {
  const char *containers, *nodes, *edges, *transitions, *extra;
  WeirErrorCode code;
  const char *path;
  const char *problem;
} BadDoc;

static const BadDoc bad_docs[] = {
    /* top level */
    {.extra = ", \"comment\": 1",
     .code = WEIR_ERROR_PARSE,
     .path = "",
     .problem = "unknown key 'comment'"},
    {.extra = ", \"next_id\": \"9\"",
     .code = WEIR_ERROR_PARSE,
     .path = "next_id: ",
     .problem = "expected an integer, found a string"},
    /* containers */
    {.containers = "{\"id\": \"1\", \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": []}",
     .code = WEIR_ERROR_PARSE,
     .path = "containers[0].id: ",
     .problem = "expected an integer, found a string"},
    {.containers = "{\"id\": 0, \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": []}",
     .code = WEIR_ERROR_PARSE,
     .path = "containers[0].id: ",
     .problem = "integer 0 is out of range"},
    {.containers = "{\"id\": 99999999999999999999, \"name\": \"A\", "
                   "\"dtype\": \"f32\", \"shape\": []}",
     .code = WEIR_ERROR_PARSE,
     .path = "containers[0].id: ",
     .problem = "out of range"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": []}, {\"id\": 1, \"name\": \"B\", \"dtype\": "
                   "\"f32\", \"shape\": []}",
     .code = WEIR_ERROR_INVALID,
     .path = "containers[1].id: ",
     .problem = "duplicate id 1 (also the id of containers[0])"},
    {.containers = "{\"id\": 2, \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": []}, {\"id\": 1, \"name\": \"B\", \"dtype\": "
                   "\"f32\", \"shape\": []}",
     .code = WEIR_ERROR_INVALID,
     .path = "containers[1].id: ",
     .problem = "id 1 is not greater than the previous id 2"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"f8\", "
                   "\"shape\": []}",
     .code = WEIR_ERROR_PARSE,
     .path = "containers[0]: ",
     .problem = "unknown dtype 'f8'"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": [\"N +\"]}",
     .code = WEIR_ERROR_PARSE,
     .path = "containers[0].shape[0]: ",
     .problem = "expression 'N +': "},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": [4]}",
     .code = WEIR_ERROR_PARSE,
     .path = "containers[0].shape[0]: ",
     .problem = "expected a string, found an integer"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": \"N\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "containers[0].shape: ",
     .problem = "expected an array, found a string"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": [\"N\"], \"strides\": [\"1\", \"N\"]}",
     .code = WEIR_ERROR_INVALID,
     .path = "containers[0].strides: ",
     .problem = "2 strides for a shape of rank 1"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": [], \"transient\": 1}",
     .code = WEIR_ERROR_PARSE,
     .path = "containers[0].transient: ",
     .problem = "expected a boolean, found an integer"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": [], \"initial\": {\"base64\": \"AAAAAAAA\"}}",
     .code = WEIR_ERROR_INVALID,
     .path = "containers[0].initial: ",
     .problem = "6 bytes of data, expected 4 (1 x f32)"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": [\"4\"], \"initial\": {\"values\": [1, 2, 3]}}",
     .code = WEIR_ERROR_INVALID,
     .path = "containers[0].initial.values: ",
     .problem = "3 values, expected 4"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": [\"N\"], \"initial\": {\"values\": [1]}}",
     .code = WEIR_ERROR_INVALID,
     .path = "containers[0].initial: ",
     .problem = "constant data needs a concrete shape"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"u8\", "
                   "\"shape\": [\"4\"], \"initial\": {\"base64\": \"A@==\"}}",
     .code = WEIR_ERROR_PARSE,
     .path = "containers[0].initial.base64: ",
     .problem = "invalid base64"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"u8\", "
                   "\"shape\": [\"1\"], \"initial\": {\"values\": [256]}}",
     .code = WEIR_ERROR_INVALID,
     .path = "containers[0].initial.values[0]: ",
     .problem = "256 is not a value of type u8"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"i32\", "
                   "\"shape\": [\"1\"], \"initial\": {\"values\": [0.5]}}",
     .code = WEIR_ERROR_INVALID,
     .path = "containers[0].initial.values[0]: ",
     .problem = "0.5 is not a value of type i32"},
    {.containers = "{\"id\": 1, \"name\": \"A\", \"dtype\": \"f32\", "
                   "\"shape\": [], \"initial\": {\"hex\": \"00\"}}",
     .code = WEIR_ERROR_PARSE,
     .path = "containers[0].initial: ",
     .problem = "unknown key 'hex'"},
    {.containers = "{\"id\": 1, \"name\": \"2A\", \"dtype\": \"f32\", "
                   "\"shape\": []}",
     .code = WEIR_ERROR_INVALID,
     .path = "containers[0].name: ",
     .problem = "not an identifier"},
    /* nodes */
    {.nodes = "{\"id\": 11, \"kind\": \"foo\", \"label\": \"A\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[0] (node 11): ",
     .problem = "unknown kind 'foo'"},
    {.nodes = "{\"id\": 11, \"kind\": \"access\", \"data\": \"A\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[0] (node 11): ",
     .problem = "missing key 'label'"},
    {.nodes = "{\"id\": 11, \"kind\": \"access\", \"label\": 5, "
              "\"data\": \"A\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[0].label (node 11): ",
     .problem = "expected a string, found an integer"},
    {.nodes = "{\"id\": 11, \"kind\": \"access\", \"label\": \"A\", "
              "\"data\": \"A\", \"code\": \"x = 1\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[0] (node 11): ",
     .problem = "unknown key 'code'"},
    {.nodes = "{\"id\": 11, \"kind\": \"access\", \"label\": \"A\", "
              "\"data\": \"A\"}, {\"id\": 11, \"kind\": \"access\", "
              "\"label\": \"B\", \"data\": \"B\"}",
     .code = WEIR_ERROR_INVALID,
     .path = "states[0].nodes[1].id: ",
     .problem = "duplicate id 11 (also the id of states[0].nodes[0])"},
    {.nodes = "{\"id\": 11, \"kind\": \"access\", \"label\": \"A\", "
              "\"data\": \"A\"}, {\"id\": 12, \"kind\": \"tasklet\", "
              "\"label\": \"t\", \"in\": [\"a\", \"a\"], \"code\": \"\"}",
     .code = WEIR_ERROR_INVALID,
     .path = "states[0].nodes[1].in[1] (node 12): ",
     .problem = "duplicate name 'a'"},
    {.nodes = "{\"id\": 11, \"kind\": \"access\", \"label\": \"A\", "
              "\"data\": \"A\"}, {\"id\": 12, \"kind\": \"tasklet\", "
              "\"label\": \"t\", \"out\": [\"b\"], \"code\": \"b = = 1\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[1].code (node 12): ",
     .problem = "column"},
    {.nodes = "{\"id\": 11, \"kind\": \"access\", \"label\": \"A\\u0000\", "
              "\"data\": \"A\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[0].label (node 11): ",
     .problem = "NUL character"},
    {.nodes = MAP_NODES(", \"schedule\": \"gpu\"", ", \"entry\": 13"),
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[2] (node 13): ",
     .problem = "unknown schedule 'gpu'"},
    {.nodes = MAP_NODES(", \"params\": [\"i\", \"j\"]", ", \"entry\": 13"),
     .code = WEIR_ERROR_INVALID,
     .path = "states[0].nodes[2].ranges (node 13): ",
     .problem = "1 ranges for 2 parameters"},
    {.nodes = MAP_NODES(", \"ranges\": [\"0:\"]", ", \"entry\": 13"),
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[2].ranges[0] (node 13): ",
     .problem = "range '0:'"},
    {.nodes = MAP_NODES(", \"tile\": [4, 8]", ", \"entry\": 13"),
     .code = WEIR_ERROR_INVALID,
     .path = "states[0].nodes[2].tile (node 13): ",
     .problem = "2 tile sizes for 1 parameters"},
    {.nodes = MAP_NODES(", \"unroll\": -1", ", \"entry\": 13"),
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[2].unroll (node 13): ",
     .problem = "integer -1 is out of range"},
    {.nodes = MAP_NODES("", ", \"entry\": 99"),
     .code = WEIR_ERROR_INVALID,
     .path = "states[0].nodes[3].entry (node 14): ",
     .problem = "no node 99 in state 10"},
    {.nodes = MAP_NODES("", ", \"entry\": 11"),
     .code = WEIR_ERROR_INVALID,
     .path = "states[0].nodes[3].entry (node 14): ",
     .problem = "node 11 (access) is not a map_entry"},
    {.nodes = MAP_NODES("", ""),
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[3] (node 14): ",
     .problem = "missing key 'entry'"},
    {.nodes = LIB_NODES("{\"alpha\": {\"double\": 1.0}}"),
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[2].attrs.alpha (node 13): ",
     .problem = "unknown attribute type 'double'"},
    {.nodes = LIB_NODES("{\"n\": {\"int\": 1.5}}"),
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[2].attrs.n.int (node 13): ",
     .problem = "expected an integer, found a number"},
    {.nodes = LIB_NODES("{\"v\": {\"floats\": [1.0, \"2\"]}}"),
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[2].attrs.v.floats[1] (node 13): ",
     .problem = "expected a number, found a string"},
    {.nodes = LIB_NODES("{\"v\": {\"int\": 1, \"float\": 1.0}}"),
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[2].attrs.v (node 13): ",
     .problem = "expected an object with one key"},
    {.nodes = LIB_NODES("[]"),
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[2].attrs (node 13): ",
     .problem = "expected an object, found an array"},
    {.nodes = "{\"id\": 11, \"kind\": \"nested\", \"label\": \"n\", "
              "\"symbols\": {}, \"program\": {\"format\": \"weir-ir\", "
              "\"version\": 1, \"name\": \"q\", \"symbols\": [], "
              "\"containers\": [{\"id\": 1, \"name\": \"X\", \"dtype\": "
              "\"f32\", \"shape\": [\"*\"]}], \"start\": 2, \"states\": [], "
              "\"transitions\": []}}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[0].program.containers[0].shape[0]: ",
     .problem = "expression '*'"},
    {.nodes = "{\"id\": 11, \"kind\": \"nested\", \"label\": \"n\", "
              "\"symbols\": {\"L\": \"N +\"}, \"program\": {\"format\": "
              "\"weir-ir\", \"version\": 1, \"name\": \"q\", \"symbols\": "
              "[\"L\"], \"containers\": [], \"start\": 2, \"states\": "
              "[{\"id\": 2, \"label\": \"s\", \"nodes\": [], \"edges\": []}], "
              "\"transitions\": []}}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].nodes[0].symbols.L (node 11): ",
     .problem = "N +"},
    /* memlets */
    {.edges = "{\"id\": 20, \"src\": 11, \"dst\": 12, \"data\": \"A\", "
              "\"subset\": \"0:N\", \"volumne\": \"N\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].edges[0] (memlet 20): ",
     .problem = "unknown key 'volumne'"},
    {.edges = "{\"id\": 20, \"src\": 11, \"dst\": 99, \"data\": \"A\", "
              "\"subset\": \"0:N\"}",
     .code = WEIR_ERROR_INVALID,
     .path = "states[0].edges[0].dst (memlet 20): ",
     .problem = "no node 99 in state 10"},
    {.edges = "{\"id\": 20, \"src\": 11, \"dst\": 12, \"data\": \"A\", "
              "\"subset\": \"0:N:1:2\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].edges[0].subset (memlet 20): ",
     .problem = "subset '0:N:1:2'"},
    {.edges = "{\"id\": 20, \"src\": 11, \"dst\": 12, \"data\": \"A\", "
              "\"subset\": \"0:N\", \"other\": \"(0:N\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].edges[0].other (memlet 20): ",
     .problem = "subset '(0:N'"},
    {.edges = "{\"id\": 20, \"src\": 11, \"dst\": 12, \"data\": \"A\", "
              "\"subset\": \"0:N\", \"volume\": \"N *\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].edges[0].volume (memlet 20): ",
     .problem = "expression 'N *': "},
    {.edges = "{\"id\": 20, \"src\": 11, \"dst\": 12, \"data\": \"A\", "
              "\"subset\": \"0:N\", \"wcr\": \"avg\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].edges[0] (memlet 20): ",
     .problem = "unknown wcr 'avg'"},
    {.edges = "{\"id\": 20, \"src\": 11, \"dst\": 12, \"data\": \"A\", "
              "\"subset\": \"0:N\", \"dynamic\": \"yes\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].edges[0].dynamic (memlet 20): ",
     .problem = "expected a boolean, found a string"},
    {.edges = "{\"id\": 20, \"src\": 11, \"dst\": 12, \"data\": \"A\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].edges[0] (memlet 20): ",
     .problem = "missing key 'subset'"},
    {.edges = "{\"id\": 20, \"src\": 11, \"dst\": 12, \"subset\": \"0:N\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].edges[0].subset (memlet 20): ",
     .problem = "a memlet without 'data' has no subset"},
    {.edges = "{\"id\": 20, \"src\": 11.0, \"dst\": 12}",
     .code = WEIR_ERROR_PARSE,
     .path = "states[0].edges[0].src (memlet 20): ",
     .problem = "expected an integer, found a number"},
    {.edges = "{\"id\": 10, \"src\": 11, \"dst\": 12}",
     .code = WEIR_ERROR_INVALID,
     .path = "states[0].edges[0].id: ",
     .problem = "duplicate id 10 (also the id of states[0])"},
    /* transitions */
    {.transitions = "{\"id\": 40, \"src\": 10, \"dst\": 99}",
     .code = WEIR_ERROR_INVALID,
     .path = "transitions[0].dst (transition 40): ",
     .problem = "no state 99"},
    {.transitions = "{\"id\": 40, \"src\": 10, \"dst\": 30, \"condition\": "
                    "\"t <\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "transitions[0].condition (transition 40): ",
     .problem = "'t <'"},
    {.transitions = "{\"id\": 40, \"src\": 10, \"dst\": 30, \"assign\": "
                    "{\"t\": 1}}",
     .code = WEIR_ERROR_PARSE,
     .path = "transitions[0].assign.t (transition 40): ",
     .problem = "expected a string, found an integer"},
    {.transitions = "{\"id\": 40, \"src\": 10, \"dst\": 30, \"assign\": "
                    "{\"t\": \"t +* 1\"}}",
     .code = WEIR_ERROR_PARSE,
     .path = "transitions[0].assign.t (transition 40): ",
     .problem = "t +* 1"},
    {.transitions = "{\"id\": 40, \"src\": 10, \"dst\": 30, \"when\": "
                    "\"t < 1\"}",
     .code = WEIR_ERROR_PARSE,
     .path = "transitions[0] (transition 40): ",
     .problem = "unknown key 'when'"},
};

static void test_malformed_documents(void **state) {
  (void)state;
  for (guint i = 0; i < G_N_ELEMENTS(bad_docs); i++) {
    const BadDoc *b = &bad_docs[i];
    g_autofree char *text =
        doc(b->containers, b->nodes, b->edges, b->transitions, b->extra);
    expect_error(text, -1, b->code, b->path, b->problem);
  }
  /* The base document itself loads. */
  g_autofree char *good = doc(NULL, NULL, NULL, NULL, NULL);
  g_autoptr(WeirGraph) g = load_ok(good, "good.json");
  assert_non_null(g);
}

/* Documents that do not fit the template. */
static void test_malformed_top_level(void **state) {
  (void)state;
  g_autofree char *good = doc(NULL, NULL, NULL, NULL, NULL);
  /* JSON syntax: the position is given as line and column. */
  expect_error("{\"format\": \"weir-ir\",\n  \"version\" 1}", -1,
               WEIR_ERROR_PARSE, "line 2, column 13: ", "JSON syntax error");
  expect_error(good, (gssize)(strlen(good) / 2), WEIR_ERROR_PARSE, "line ",
               "JSON syntax error");
  expect_error("", -1, WEIR_ERROR_PARSE,
               "line 1, column 1: ", "JSON syntax error");
  g_autofree char *trailing = g_strconcat(good, " {}", NULL);
  expect_error(trailing, -1, WEIR_ERROR_PARSE, "line ", "JSON syntax error");
  /* A NUL byte inside the given length. */
  g_autofree char *with_nul = g_strdup(good);
  with_nul[5] = '\0';
  expect_error(with_nul, (gssize)strlen(good), WEIR_ERROR_PARSE,
               "line 1, column 6: ", "NUL byte");
  expect_error("[1, 2]", -1, WEIR_ERROR_PARSE, "",
               "expected an object, found an array");
  /* Format and version. */
  g_autofree char *onnx = g_strdup(good);
  memcpy(strstr(onnx, "weir-ir"), "weir-xx", 7);
  expect_error(onnx, -1, WEIR_ERROR_PARSE,
               "format: ", "format 'weir-xx', expected 'weir-ir'");
  g_autofree char *v2 = g_strdup(good);
  strstr(v2, "\"version\": 1")[11] = '2';
  /* A newer file may have keys this version does not know: the version
   * error comes first. */
  g_autofree char *v2_head = g_strndup(v2, strlen(v2) - 2);
  g_autofree char *v2_extra = g_strconcat(v2_head, ", \"future\": 1}\n", NULL);
  expect_error(v2, -1, WEIR_ERROR_VERSION,
               "version: ", "format version 2; this Weir reads version 1");
  expect_error(v2_extra, -1, WEIR_ERROR_VERSION,
               "version: ", "format version 2");
  g_autofree char *v0 = g_strdup(good);
  strstr(v0, "\"version\": 1")[11] = '0';
  expect_error(v0, -1, WEIR_ERROR_PARSE, "version: ", "invalid format version");
  expect_error("{\"format\": \"weir-ir\", \"version\": \"1\"}", -1,
               WEIR_ERROR_PARSE,
               "version: ", "expected an integer, found a string");
  expect_error("{\"format\": \"weir-ir\", \"version\": 1, \"symbols\": []}", -1,
               WEIR_ERROR_PARSE, "", "missing key 'name'");
  /* symbols */
  g_autofree char *bad_sym = g_strdup(good);
  memcpy(strstr(bad_sym, "\"N\", \"t\""), "\"N\", \"2\"", 8);
  expect_error(bad_sym, -1, WEIR_ERROR_INVALID,
               "symbols[1]: ", "'2' is not an identifier");
  /* start */
  g_autofree char *bad_start = g_strdup(good);
  memcpy(strstr(bad_start, "\"start\": 10"), "\"start\": 11", 11);
  expect_error(bad_start, -1, WEIR_ERROR_INVALID, "start: ", "no state 11");
  /* The source defaults to <input>. */
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_from_json("{", -1, NULL, &error);
  assert_null(g);
  assert_true(g_str_has_prefix(error->message, "<input>: line 1, column 2"));
}

/* Structure is fine but the validator finds problems: its message is
 * prefixed with the source. */
static void test_validator_problems(void **state) {
  (void)state;
  g_autofree char *text =
      doc(NULL,
          "{\"id\": 11, \"kind\": \"access\", \"label\": \"A\", \"data\": "
          "\"A\"}, {\"id\": 12, \"kind\": \"access\", \"label\": \"Z\", "
          "\"data\": \"Z\"}",
          "", NULL, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) g = weir_graph_from_json(text, -1, "model.json", &error);
  assert_null(g);
  assert_int_equal(error->code, WEIR_ERROR_INVALID);
  assert_true(g_str_has_prefix(error->message, "model.json: "));
  assert_non_null(strstr(error->message, "node 12"));
}

/* ------------------------------------------------------------------------
 * Robustness
 */

static void test_every_prefix(void **state) {
  (void)state;
  gsize len;
  g_autofree char *text = read_sample("vector_add.json", &len);
  const char *last = strrchr(text, '}');
  gsize complete = (gsize)(last - text) + 1;
  for (gsize n = 0; n <= len; n++) {
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirGraph) g =
        weir_graph_from_json(text, (gssize)n, "prefix.json", &error);
    if (n < complete) {
      assert_null(g);
      assert_non_null(error);
      assert_true(error->domain == WEIR_ERROR);
      assert_true(g_str_has_prefix(error->message, "prefix.json: line "));
    } else {
      assert_non_null(g);
    }
  }
}

static void test_random_byte_flips(void **state) {
  (void)state;
  gsize len;
  g_autofree char *text = read_sample("softmax.json", &len);
  GRand *rand = g_rand_new_with_seed(20240611);
  guint loaded = 0, failed = 0;
  for (guint iter = 0; iter < 3000; iter++) {
    g_autofree char *copy = g_memdup2(text, len);
    guint flips = (guint)g_rand_int_range(rand, 1, 4);
    for (guint f = 0; f < flips; f++) {
      gsize at = (gsize)g_rand_int_range(rand, 0, (gint32)len);
      /* Mostly printable replacements, sometimes any byte. */
      if (g_rand_boolean(rand))
        copy[at] = (char)g_rand_int_range(rand, 32, 127);
      else
        copy[at] ^= (char)g_rand_int_range(rand, 1, 256);
    }
    g_autoptr(GError) error = NULL;
    g_autoptr(WeirGraph) g =
        weir_graph_from_json(copy, (gssize)len, "flip.json", &error);
    if (g) {
      /* Whatever loads saves and loads again to the same text. */
      g_autofree char *saved = assert_stable(g, "flip.json");
      loaded++;
    } else {
      assert_true(error->domain == WEIR_ERROR);
      assert_true(g_str_has_prefix(error->message, "flip.json: "));
      failed++;
    }
  }
  g_rand_free(rand);
  assert_true(loaded > 0);
  assert_true(failed > 0);
}

/* ------------------------------------------------------------------------
 * Files
 */

static void test_save_and_load_files(void **state) {
  (void)state;
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp("weir-json-XXXXXX", &error);
  assert_non_null(dir);
  g_autoptr(WeirGraph) g = build_full();
  g_autofree char *expected = weir_graph_to_json(g);

  /* A path in a directory that does not exist: an error naming the path,
   * and nothing is created. */
  g_autofree char *missing = g_build_filename(dir, "missing", "out.json", NULL);
  assert_false(weir_graph_save(g, missing, &error));
  assert_int_equal(error->code, WEIR_ERROR_IO);
  assert_true(g_str_has_prefix(error->message, missing));
  g_clear_error(&error);
  g_autofree char *missing_dir = g_build_filename(dir, "missing", NULL);
  assert_false(g_file_test(missing_dir, G_FILE_TEST_EXISTS));
  GDir *d = g_dir_open(dir, 0, NULL);
  assert_null(g_dir_read_name(d));
  g_dir_close(d);

  /* Saving over an existing file replaces it. */
  g_autofree char *path = g_build_filename(dir, "model.json", NULL);
  assert_true(g_file_set_contents(path, "old contents", -1, NULL));
  assert_true(weir_graph_save(g, path, &error));
  g_autofree char *contents = NULL;
  assert_true(g_file_get_contents(path, &contents, NULL, NULL));
  assert_string_equal(contents, expected);
  g_autoptr(WeirGraph) g2 = weir_graph_load(path, &error);
  assert_non_null(g2);
  g_autofree char *again = weir_graph_to_json(g2);
  assert_string_equal(again, expected);

  /* Load errors name the file. */
  assert_true(g_file_set_contents(path, "{\"format\": 1}", -1, NULL));
  g_autoptr(WeirGraph) g3 = weir_graph_load(path, &error);
  assert_null(g3);
  g_autofree char *prefix = g_strconcat(path, ": format: ", NULL);
  assert_true(g_str_has_prefix(error->message, prefix));
  g_clear_error(&error);
  g_autoptr(WeirGraph) g4 = weir_graph_load(missing, &error);
  assert_null(g4);
  assert_int_equal(error->code, WEIR_ERROR_IO);
  assert_true(g_str_has_prefix(error->message, missing));

  g_unlink(path);
  g_rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_samples_round_trip),
      cmocka_unit_test(test_vector_add_ids),
      cmocka_unit_test(test_full_round_trip),
      cmocka_unit_test(test_floats_exact),
      cmocka_unit_test(test_ids_and_next_id),
      cmocka_unit_test(test_initial_values),
      cmocka_unit_test(test_malformed_documents),
      cmocka_unit_test(test_malformed_top_level),
      cmocka_unit_test(test_validator_problems),
      cmocka_unit_test(test_every_prefix),
      cmocka_unit_test(test_random_byte_flips),
      cmocka_unit_test(test_save_and_load_files),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
