/* test-rnn.c — RNN, GRU and LSTM: the pure expansion, a loop over time in a
 * nested program, against a reference written here in plain C loops
 * (double precision), run by the interpreter and as compiled code.
 *
 * Small sizes (T = 3, B = 2, I = 3, H = 4): the forward, reverse and
 * bidirectional directions, both layouts, biases, initial states,
 * peepholes, sequence lengths (both directions), GRU with and without
 * linear_before_reset; and inference, FLOPs and the refusals.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "runtime-fixture.h"
#include "weir-analysis.h"
#include "weir-attr.h"
#include "weir-codegen.h"
#include "weir-expand.h"
#include "weir-interp.h"
#include "weir-kernels.h"
#include "weir-ops.h"
#include "weir-validate.h"

enum { T = 3, BATCH = 2, IN = 3, HID = 4 };

typedef struct {
  const char *op;
  const char *direction;
  gboolean layout1, bias, h0, c0, peep, lens, lbr;
  gboolean y, yh, yc;
} Case;

static guint gates_of(const char *op) {
  return strcmp(op, "GRU") == 0 ? 3 : strcmp(op, "LSTM") == 0 ? 4 : 1;
}

/* The shapes of inputs X, W, R, B, sequence_lens, initial_h, initial_c, P
 * and outputs Y, Y_h, Y_c (NULL: absent). */
static void shapes(const Case *c, char *in[8], char *out[3]) {
  guint g = gates_of(c->op), d = strcmp(c->direction, "bidirectional") ? 1 : 2;
  gboolean lstm = g == 4;
  in[0] = c->layout1 ? g_strdup_printf("%d, %d, %d", BATCH, T, IN)
                     : g_strdup_printf("%d, %d, %d", T, BATCH, IN);
  in[1] = g_strdup_printf("%u, %u, %d", d, g * HID, IN);
  in[2] = g_strdup_printf("%u, %u, %d", d, g * HID, HID);
  in[3] = c->bias ? g_strdup_printf("%u, %u", d, 2 * g * HID) : NULL;
  in[4] = c->lens ? g_strdup_printf("%d", BATCH) : NULL;
  char *state = c->layout1 ? g_strdup_printf("%d, %u, %d", BATCH, d, HID)
                           : g_strdup_printf("%u, %d, %d", d, BATCH, HID);
  in[5] = c->h0 ? g_strdup(state) : NULL;
  in[6] = lstm && c->c0 ? g_strdup(state) : NULL;
  in[7] = lstm && c->peep ? g_strdup_printf("%u, %d", d, 3 * HID) : NULL;
  out[0] =
      c->y ? (c->layout1 ? g_strdup_printf("%d, %d, %u, %d", BATCH, T, d, HID)
                         : g_strdup_printf("%d, %u, %d, %d", T, d, BATCH, HID))
           : NULL;
  out[1] = c->yh ? g_strdup(state) : NULL;
  out[2] = lstm && c->yc ? g_strdup(state) : NULL;
  g_free(state);
}

static WeirGraph *build(const Case *c) {
  g_autoptr(GError) err = NULL;
  char *in[8], *out[3];
  shapes(c, in, out);
  WeirGraph *g = weir_graph_new("rnn");
  WeirState *s = weir_graph_add_state(g, "main");
  WeirNode *lib = weir_state_add_library(g, s, "cell", c->op, NULL, NULL);
  weir_node_set_attr_string(lib, "direction", c->direction);
  weir_node_set_attr_int(lib, "hidden_size", HID);
  weir_node_set_attr_int(lib, "layout", c->layout1);
  if (gates_of(c->op) == 3)
    weir_node_set_attr_int(lib, "linear_before_reset", c->lbr);
  if (!weir_op_check_attrs(lib, &err))
    fail_msg("attrs: %s", err->message);
  for (guint k = 0; k < 8; k++) {
    if (!in[k])
      continue;
    g_autofree char *name = g_strdup_printf("X%u", k);
    g_autofree char *conn = g_strdup_printf("in%u", k);
    WeirContainer *ct = weir_graph_add_array(
        g, name, k == 4 ? WEIR_DTYPE_I32 : WEIR_DTYPE_F32, in[k], FALSE, &err);
    assert_non_null(ct);
    g_autoptr(WeirSubset) full = weir_container_full_subset(ct);
    g_autofree char *sub = weir_subset_to_string(full);
    weir_node_add_in_conn(lib, conn);
    WeirNode *a = weir_state_add_access(g, s, name);
    assert_non_null(weir_state_add_memlet(g, s, a->id, NULL, lib->id, conn,
                                          name, sub, &err));
    g_free(in[k]);
  }
  for (guint k = 0; k < 3; k++) {
    if (!out[k])
      continue;
    g_autofree char *name = g_strdup_printf("Y%u", k);
    g_autofree char *conn = g_strdup_printf("out%u", k);
    WeirContainer *ct =
        weir_graph_add_array(g, name, WEIR_DTYPE_F32, out[k], FALSE, &err);
    assert_non_null(ct);
    g_autoptr(WeirSubset) full = weir_container_full_subset(ct);
    g_autofree char *sub = weir_subset_to_string(full);
    weir_node_add_out_conn(lib, conn);
    WeirNode *a = weir_state_add_access(g, s, name);
    assert_non_null(weir_state_add_memlet(g, s, lib->id, conn, a->id, NULL,
                                          name, sub, &err));
    g_free(out[k]);
  }
  return g;
}

/* ------------------------------------------------------------ reference */

static double sigm(double x) {
  return 1 / (1 + exp(-x));
}

static double get(const WeirTensor *t, gint64 i) {
  return t ? weir_tensor_get(t, i) : 0;
}

/* Y, Y_h, Y_c of case c on the inputs in args (tensors X0..X7). */
static void reference(const Case *c, GHashTable *args, double *y, double *yh,
                      double *yc) {
  guint g = gates_of(c->op),
        dirs = strcmp(c->direction, "bidirectional") ? 1 : 2;
  const WeirTensor *x = g_hash_table_lookup(args, "X0");
  const WeirTensor *w = g_hash_table_lookup(args, "X1");
  const WeirTensor *r = g_hash_table_lookup(args, "X2");
  const WeirTensor *bias = g_hash_table_lookup(args, "X3");
  const WeirTensor *lens = g_hash_table_lookup(args, "X4");
  const WeirTensor *h0 = g_hash_table_lookup(args, "X5");
  const WeirTensor *c0 = g_hash_table_lookup(args, "X6");
  const WeirTensor *p = g_hash_table_lookup(args, "X7");
  gint64 GH = g * HID;
  for (guint d = 0; d < dirs; d++) {
    gboolean rev = d == 1 || strcmp(c->direction, "reverse") == 0;
    for (gint64 b = 0; b < BATCH; b++) {
      double h[HID], cc[HID];
      for (gint64 k = 0; k < HID; k++) {
        gint64 si = c->layout1 ? (b * dirs + d) * HID + k
                               : ((gint64)d * BATCH + b) * HID + k;
        h[k] = get(h0, si);
        cc[k] = get(c0, si);
      }
      gint64 len = lens ? (gint64)get(lens, b) : T;
      for (gint64 u = 0; u < T; u++)
        for (gint64 k = 0; k < HID; k++)
          y[c->layout1 ? ((b * T + u) * dirs + d) * HID + k
                       : ((u * dirs + d) * BATCH + b) * HID + k] = 0;
      for (gint64 step = 0; step < len; step++) {
        gint64 tt = rev ? len - 1 - step : step;
        double zx[4 * HID], zh[4 * HID], nh[HID], nc[HID];
        for (gint64 j = 0; j < GH; j++) {
          zx[j] = get(bias, d * 2 * GH + j);
          zh[j] = get(bias, d * 2 * GH + GH + j);
          for (gint64 i = 0; i < IN; i++) {
            gint64 xi =
                c->layout1 ? (b * T + tt) * IN + i : (tt * BATCH + b) * IN + i;
            zx[j] += get(x, xi) * get(w, (d * GH + j) * IN + i);
          }
        }
        /* the recurrence, GRU's third gate apart */
        double rgate[HID];
        for (gint64 j = 0; j < GH; j++) {
          gboolean third = g == 3 && j >= 2 * HID;
          if (third && !c->lbr)
            continue;
          for (gint64 k = 0; k < HID; k++)
            zh[j] += h[k] * get(r, (d * GH + j) * HID + k);
        }
        if (g == 3) {
          for (gint64 k = 0; k < HID; k++)
            rgate[k] = sigm(zx[HID + k] + zh[HID + k]);
          if (!c->lbr)
            for (gint64 j = 0; j < HID; j++)
              for (gint64 k = 0; k < HID; k++)
                zh[2 * HID + j] +=
                    rgate[k] * h[k] * get(r, (d * GH + 2 * HID + j) * HID + k);
        }
        for (gint64 k = 0; k < HID; k++) {
          if (g == 1) {
            nh[k] = tanh(zx[k] + zh[k]);
          } else if (g == 3) {
            double z = sigm(zx[k] + zh[k]);
            double hh = tanh(zx[2 * HID + k] +
                             (c->lbr ? rgate[k] : 1.0) * zh[2 * HID + k]);
            nh[k] = (1 - z) * hh + z * h[k];
          } else {
            double pi = get(p, d * 3 * HID + k);
            double po = get(p, d * 3 * HID + HID + k);
            double pf = get(p, d * 3 * HID + 2 * HID + k);
            double ig = sigm(zx[k] + zh[k] + pi * cc[k]);
            double fg = sigm(zx[2 * HID + k] + zh[2 * HID + k] + pf * cc[k]);
            double cg = tanh(zx[3 * HID + k] + zh[3 * HID + k]);
            nc[k] = fg * cc[k] + ig * cg;
            double og = sigm(zx[HID + k] + zh[HID + k] + po * nc[k]);
            nh[k] = og * tanh(nc[k]);
          }
        }
        for (gint64 k = 0; k < HID; k++) {
          h[k] = nh[k];
          if (g == 4)
            cc[k] = nc[k];
          gint64 yi = c->layout1 ? ((b * T + tt) * dirs + d) * HID + k
                                 : ((tt * dirs + d) * BATCH + b) * HID + k;
          y[yi] = h[k];
        }
      }
      for (gint64 k = 0; k < HID; k++) {
        gint64 si = c->layout1 ? (b * dirs + d) * HID + k
                               : ((gint64)d * BATCH + b) * HID + k;
        yh[si] = h[k];
        yc[si] = cc[k];
      }
    }
  }
}

/* ---------------------------------------------------------------- tests */

static gint64 numel(const WeirTensor *t) {
  gint64 n = 1;
  for (guint d = 0; d < t->rank; d++)
    n *= t->shape[d];
  return n;
}

static WeirTensor *tensor_for(const WeirGraph *g, const char *name) {
  WeirContainer *c = weir_graph_container(g, name);
  assert_non_null(c);
  gint64 shape[8];
  for (guint d = 0; d < c->shape->len; d++)
    assert_true(weir_expr_is_const(c->shape->pdata[d], &shape[d]));
  return weir_tensor_new(c->dtype, c->shape->len, shape);
}

static GHashTable *make_args(const WeirGraph *g, guint64 seed) {
  GHashTable *args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)weir_tensor_free);
  for (guint k = 0; k < 8; k++) {
    g_autofree char *name = g_strdup_printf("X%u", k);
    if (!weir_graph_container(g, name))
      continue;
    WeirTensor *t = tensor_for(g, name);
    weir_tensor_fill_random(t, seed + k);
    if (k == 4) /* lengths 3 and 2 */
      for (gint64 b = 0; b < BATCH; b++)
        weir_tensor_set(t, b, b ? 2 : T);
    g_hash_table_insert(args, g_steal_pointer(&name), t);
  }
  for (guint k = 0; k < 3; k++) {
    g_autofree char *name = g_strdup_printf("Y%u", k);
    if (!weir_graph_container(g, name))
      continue;
    WeirTensor *t = tensor_for(g, name);
    for (gint64 e = 0; e < numel(t); e++)
      weir_tensor_set(t, e, 12345.0); /* every element must be written */
    g_hash_table_insert(args, g_steal_pointer(&name), t);
  }
  return args;
}

static void check_outputs(const Case *c, GHashTable *args, const char *how) {
  double y[T * 2 * BATCH * HID] = {0}, yh[2 * BATCH * HID] = {0},
                           yc[2 * BATCH * HID] = {0};
  reference(c, args, y, yh, yc);
  const double *want[] = {y, yh, yc};
  for (guint k = 0; k < 3; k++) {
    g_autofree char *name = g_strdup_printf("Y%u", k);
    const WeirTensor *got = g_hash_table_lookup(args, name);
    if (!got)
      continue;
    for (gint64 e = 0; e < numel(got); e++)
      if (fabs(weir_tensor_get(got, e) - want[k][e]) > 1e-5)
        fail_msg("%s %s (%s): %s[%" G_GINT64_FORMAT "] = %g, expected %g",
                 c->op, c->direction, how, name, e, weir_tensor_get(got, e),
                 want[k][e]);
  }
}

static GHashTable *copy_args(GHashTable *args) {
  GHashTable *out = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                          (GDestroyNotify)weir_tensor_free);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init(&it, args);
  while (g_hash_table_iter_next(&it, &key, &value))
    g_hash_table_insert(out, g_strdup(key), weir_tensor_copy(value));
  return out;
}

static void run_case(const Case *c, Fixture *f) {
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirGraph) g = build(c);
  if (!weir_graph_validate(g, &err))
    fail_msg("validate: %s", err->message);
  guint count = 0;
  if (!weir_expand_all(g, NULL, &count, &err))
    fail_msg("%s %s: expand: %s", c->op, c->direction, err->message);
  assert_int_equal(count, 1);
  /* one nested program holding the loop over time */
  WeirState *s = g_ptr_array_index(g->states, 0);
  const WeirNode *nested = NULL;
  for (guint k = 0; k < s->nodes->len; k++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, k);
    assert_int_not_equal(n->kind, WEIR_NODE_LIBRARY);
    if (n->kind == WEIR_NODE_NESTED)
      nested = n;
  }
  assert_non_null(nested);
  assert_int_equal(nested->nested->states->len, 4);
  assert_int_equal(nested->nested->transitions->len, 4);

  g_autoptr(GHashTable) args = make_args(g, 17);
  g_autoptr(GHashTable) interp = copy_args(args);
  if (!weir_interpret(g, NULL, interp, NULL, &err))
    fail_msg("%s %s: interpret: %s", c->op, c->direction, err->message);
  check_outputs(c, interp, "interpreted");

  g_autoptr(WeirKernel) k = weir_kernel_compile(g, &f->opts, NULL, &err);
  if (!k)
    fail_msg("%s %s: compile: %s", c->op, c->direction, err->message);
  g_autoptr(GHashTable) compiled = copy_args(args);
  if (!weir_kernel_run(k, NULL, compiled, &err))
    fail_msg("%s %s: run: %s", c->op, c->direction, err->message);
  check_outputs(c, compiled, "compiled");
}

static void test_rnn_run(void **state) {
  (void)state;
  Fixture *f = fixture_new();
  static const Case cases[] = {
      {"RNN", "forward", FALSE, TRUE, TRUE, FALSE, FALSE, FALSE, FALSE, TRUE,
       TRUE, FALSE},
      {"RNN", "reverse", TRUE, FALSE, FALSE, FALSE, FALSE, FALSE, FALSE, TRUE,
       TRUE, FALSE},
      {"RNN", "bidirectional", FALSE, TRUE, TRUE, FALSE, FALSE, FALSE, FALSE,
       TRUE, TRUE, FALSE},
      {"RNN", "forward", FALSE, FALSE, FALSE, FALSE, FALSE, TRUE, FALSE, TRUE,
       TRUE, FALSE},
      {"RNN", "reverse", FALSE, TRUE, TRUE, FALSE, FALSE, TRUE, FALSE, TRUE,
       TRUE, FALSE},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    run_case(&cases[i], f);
  fixture_free(f);
}

static void test_gru_run(void **state) {
  (void)state;
  Fixture *f = fixture_new();
  static const Case cases[] = {
      {"GRU", "forward", FALSE, TRUE, TRUE, FALSE, FALSE, FALSE, FALSE, TRUE,
       TRUE, FALSE},
      {"GRU", "bidirectional", TRUE, TRUE, TRUE, FALSE, FALSE, FALSE, TRUE,
       TRUE, TRUE, FALSE},
      {"GRU", "forward", FALSE, TRUE, FALSE, FALSE, FALSE, TRUE, TRUE, FALSE,
       TRUE, FALSE},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    run_case(&cases[i], f);
  fixture_free(f);
}

static void test_lstm_run(void **state) {
  (void)state;
  Fixture *f = fixture_new();
  static const Case cases[] = {
      {"LSTM", "forward", FALSE, TRUE, TRUE, TRUE, TRUE, TRUE, FALSE, TRUE,
       TRUE, TRUE},
      {"LSTM", "bidirectional", TRUE, TRUE, FALSE, FALSE, FALSE, FALSE, FALSE,
       TRUE, TRUE, TRUE},
      {"LSTM", "bidirectional", FALSE, TRUE, TRUE, TRUE, TRUE, TRUE, FALSE,
       TRUE, TRUE, TRUE},
  };
  for (guint i = 0; i < G_N_ELEMENTS(cases); i++)
    run_case(&cases[i], f);
  fixture_free(f);
}

/* Inference gives the outputs' shapes; the FLOP count is the products, the
 * biases and the cell; an unknown activation is refused. */
static void test_rnn_infer_flops_refusals(void **state) {
  (void)state;
  g_autoptr(GError) err = NULL;
  Case c = {"LSTM", "bidirectional", TRUE,  TRUE, FALSE, FALSE,
            FALSE,  FALSE,           FALSE, TRUE, TRUE,  TRUE};
  g_autoptr(WeirGraph) g = build(&c);
  WeirState *s = g_ptr_array_index(g->states, 0);
  WeirNode *lib = NULL;
  for (guint k = 0; k < s->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY)
      lib = n;
  }
  assert_non_null(lib);
  const WeirOpInfo *info = weir_op_lookup("LSTM");
  assert_non_null(info);
  g_autoptr(WeirExpr) fl = info->flops(g, s, lib);
  gint64 v = 0;
  assert_true(fl && weir_expr_is_const(fl, &v));
  /* T B D (2 G H (I + H) + 2 G H + 14 H) with G H = 16 */
  assert_int_equal(v, (gint64)T * BATCH * 2 *
                          (2 * 16 * (IN + HID) + 2 * 16 + 14 * HID));

  /* inference: layout 1, bidirectional */
  WeirOpValue ins[3] = {0}, outs[3] = {0};
  WeirExpr *xs[] = {weir_expr_const(BATCH), weir_expr_symbol("T"),
                    weir_expr_const(IN)};
  WeirExpr *ws[] = {weir_expr_const(2), weir_expr_const(16),
                    weir_expr_const(IN)};
  WeirExpr *rs[] = {weir_expr_const(2), weir_expr_const(16),
                    weir_expr_const(HID)};
  WeirExpr **sh[] = {xs, ws, rs};
  for (guint k = 0; k < 3; k++)
    ins[k] = (WeirOpValue){
        .present = TRUE, .dtype = WEIR_DTYPE_F32, .rank = 3, .shape = sh[k]};
  WeirOpInferContext ctx = {.node = lib,
                            .n_inputs = 3,
                            .inputs = ins,
                            .n_outputs = 3,
                            .outputs = outs};
  if (!info->infer(&ctx, &err))
    fail_msg("infer: %s", err->message);
  assert_int_equal(outs[0].rank, 4);
  g_autofree char *y1 = weir_expr_to_string(outs[0].shape[1]);
  assert_string_equal(y1, "T");
  gint64 dv = 0;
  assert_true(weir_expr_is_const(outs[0].shape[2], &dv));
  assert_int_equal(dv, 2);
  assert_int_equal(outs[2].rank, 3);
  for (guint k = 0; k < 3; k++) {
    weir_op_value_clear(&outs[k]);
    for (guint d = 0; d < 3; d++)
      weir_expr_unref(sh[k][d]);
  }

  /* a wrong hidden_size */
  weir_node_set_attr_int(lib, "hidden_size", 5);
  WeirExpr *xs2[] = {weir_expr_const(BATCH), weir_expr_const(T),
                     weir_expr_const(IN)};
  WeirExpr *ws2[] = {weir_expr_const(2), weir_expr_const(16),
                     weir_expr_const(IN)};
  WeirExpr *rs2[] = {weir_expr_const(2), weir_expr_const(16),
                     weir_expr_const(HID)};
  WeirExpr **sh2[] = {xs2, ws2, rs2};
  for (guint k = 0; k < 3; k++)
    ins[k].shape = sh2[k];
  WeirOpValue outs2[3] = {0};
  ctx.outputs = outs2;
  assert_false(info->infer(&ctx, &err));
  assert_non_null(strstr(err->message, "hidden_size 5"));
  g_clear_error(&err);
  for (guint k = 0; k < 3; k++)
    for (guint d = 0; d < 3; d++)
      weir_expr_unref(sh2[k][d]);

  /* an activation Weir does not know: refused by the expansion */
  Case rc = {"RNN", "forward", FALSE, FALSE, FALSE, FALSE,
             FALSE, FALSE,     FALSE, TRUE,  TRUE,  FALSE};
  g_autoptr(WeirGraph) g2 = build(&rc);
  WeirState *s2 = g_ptr_array_index(g2->states, 0);
  for (guint k = 0; k < s2->nodes->len; k++) {
    WeirNode *n = g_ptr_array_index(s2->nodes, k);
    if (n->kind == WEIR_NODE_LIBRARY) {
      const char *acts[] = {"Gelu"};
      weir_node_set_attr_strings(n, "activations", acts, 1);
    }
  }
  assert_false(weir_expand_all(g2, NULL, NULL, &err));
  assert_non_null(strstr(err->message, "activation 'Gelu' is not supported"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rnn_run),
      cmocka_unit_test(test_gru_run),
      cmocka_unit_test(test_lstm_run),
      cmocka_unit_test(test_rnn_infer_flops_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
