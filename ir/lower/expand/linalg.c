/* linalg.c — pure expansions of Gemm, MatMul, Conv, ConvTranspose and
 * Einsum into maps, tasklets and memlets.
 *
 * Every expansion here has the same two-phase shape, one map each:
 *
 *   <label>_init : for every output element, y = initial value (beta*C, the
 *                  bias, or 0), written to a new access node of the output;
 *   <label>_mac  : for every point of the full iteration space (output
 *                  indices and the summed indices), y += product, through a
 *                  memlet with write-conflict resolution "sum" into the
 *                  library node's output access node.  An empty memlet from
 *                  the init's access node orders it after the init.
 *
 * (Einsum without summed letters is a single map that writes each output
 * element once.)  Each map is a plain loop nest named after the node; fast
 * implementations register separately.
 *
 * Convolutions never read or write out of bounds: where a padded position
 * can occur, the memlet's index is clamped into the container with
 * min/max and the tasklet multiplies only when the unclamped index is
 * inside (y = inside ? x * w : 0).  ConvTranspose uses the scatter form:
 * every input element is multiplied with every kernel tap and accumulated
 * into the output position it lands on.
 *
 * Map parameters get readable names (m, n, k, oc, ic, o0, k0, ...); a name
 * that is already a program symbol gets a trailing underscore.
 */
#include <stdarg.h>
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"
#include "weir-ops-linalg.h"

/* ------------------------------------------------------------------ Det
 *
 * One map over the batch dimensions; its tasklet reads the matrix whole
 * (indexed) and factors it by Gaussian elimination with partial pivoting,
 * unrolled (the order is known at import and bounded by
 * WEIR_OP_DET_MAX_ORDER): for column k, row k is swapped in turn with
 * every row below it whose entry in column k is larger in magnitude (so
 * row k ends with the largest, each swap flipping the sign), then each
 * row below subtracts its multiple of row k.  The determinant is the sign
 * times the product of the pivots; a zero pivot (a singular matrix) gives
 * multipliers 0 and a determinant 0.  All in f64. */
static gboolean expand_det(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  WeirPort x, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  gint64 m = 0;
  if (x.rank < 2 || y.rank != x.rank - 2 ||
      !weir_expr_is_const(x.shape[x.rank - 1], &m) || m < 0 ||
      m > WEIR_OP_DET_MAX_ORDER)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n,
                          "expected [*, M, M] with M known and at most %d",
                          WEIR_OP_DET_MAX_ORDER);
  if (weir_port_is_empty(&y))
    return weir_state_remove_node(s, n->id);
  guint r = y.rank;
  GString *c = g_string_new("dt_s = 1.0\n");
  GString *at = g_string_new(NULL);
  for (guint d = 0; d < r; d++)
    g_string_append(at, "0, ");
  /* a 1 x 1 matrix is a scalar connector, read as such */
  if (m == 1)
    g_string_append(c, "dt_0_0 = f64(x)\n");
  for (gint64 i = 0; i < m && m > 1; i++)
    for (gint64 j = 0; j < m; j++)
      g_string_append_printf(c,
                             "dt_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT
                             " = f64(x[%s%" G_GINT64_FORMAT
                             ", %" G_GINT64_FORMAT "])\n",
                             i, j, at->str, i, j);
  for (gint64 k = 0; k < m; k++) {
    for (gint64 i = k + 1; i < m; i++) {
      g_string_append_printf(c,
                             "dt_c = abs(dt_%" G_GINT64_FORMAT
                             "_%" G_GINT64_FORMAT ") > abs(dt_%" G_GINT64_FORMAT
                             "_%" G_GINT64_FORMAT ")\n"
                             "dt_s = dt_c ? -dt_s : dt_s\n",
                             i, k, k, k);
      for (gint64 j = k; j < m; j++)
        g_string_append_printf(
            c,
            "dt_t = dt_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT "\n"
            "dt_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT
            " = dt_c ? dt_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT " : dt_t\n"
            "dt_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT
            " = dt_c ? dt_t : dt_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT "\n",
            k, j, k, j, i, j, i, j, i, j);
    }
    for (gint64 i = k + 1; i < m; i++) {
      g_string_append_printf(c,
                             "dt_f = dt_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT
                             " != 0 ? dt_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT
                             " / dt_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT
                             " : 0.0\n",
                             k, k, i, k, k, k);
      for (gint64 j = k + 1; j < m; j++)
        g_string_append_printf(c,
                               "dt_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT
                               " = dt_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT
                               " - dt_f * dt_%" G_GINT64_FORMAT
                               "_%" G_GINT64_FORMAT "\n",
                               i, j, i, j, k, j);
    }
  }
  g_string_append(c, "y = dt_s");
  for (gint64 k = 0; k < m; k++)
    g_string_append_printf(c, " * dt_%" G_GINT64_FORMAT "_%" G_GINT64_FORMAT, k,
                           k);
  g_string_append_c(c, '\n');
  g_string_free(at, TRUE);
  g_autofree char *code = g_string_free(c, FALSE);
  g_auto(GStrv) p = weir_expand_fresh_params(g, r);
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, y.shape);
  GString *xs = g_string_new(NULL);
  for (guint d = 0; d < r; d++)
    g_string_append_printf(xs, "%s, ", p[d]);
  g_string_append_printf(xs, "0:%" G_GINT64_FORMAT ", 0:%" G_GINT64_FORMAT, m,
                         m);
  g_autofree char *x_sub = g_string_free(xs, FALSE);
  g_autofree char *y_sub = weir_expand_index_subset(r, (const char *const *)p);
  WeirTaskletPort in = {x.access, "x", x_sub, WEIR_WCR_NONE};
  WeirTaskletPort out = {y.access, "y", r ? y_sub : NULL, WEIR_WCR_NONE};
  g_autofree char *label = g_strdup_printf("%s_map", n->label);
  if (!weir_expand_map(g, s, label, r, (const char *const *)p,
                       (const char *const *)ranges, &in, 1, &out, 1, code, NULL,
                       0, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

void weir_expand_register_linalg(void);

/* ------------------------------------------------------------- helpers */

static const char *label_of(const WeirNode *n) {
  return n->label && *n->label ? n->label : n->op;
}

G_GNUC_PRINTF(3, 4)
static gboolean fail(GError **error, gint code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error_literal(error, WEIR_ERROR, code, msg);
  return FALSE;
}

static gboolean const_at_most(const WeirExpr *e, gint64 bound) {
  gint64 v;
  return weir_expr_is_const(e, &v) && v <= bound;
}

/* Whether the canonical text of e is also valid tasklet code (the tasklet
 * language has no floor division or modulo with Python semantics). */
static gboolean expr_tasklet_ok(const WeirExpr *e) {
  WeirExprKind k = weir_expr_kind(e);
  if (k == WEIR_EXPR_FLOORDIV || k == WEIR_EXPR_MOD)
    return FALSE;
  for (guint i = 0; i < weir_expr_n_operands(e) && k != WEIR_EXPR_CONST &&
                    k != WEIR_EXPR_SYMBOL;
       i++)
    if (!expr_tasklet_ok(weir_expr_operand(e, i)))
      return FALSE;
  return TRUE;
}

/* A scalar constant as a tasklet literal of the right kind for dtype. */
static char *scalar_literal(WeirDType dtype, double v, const char *what,
                            GError **error) {
  if (weir_dtype_is_float(dtype))
    return weir_expand_float_literal(v);
  if (v != (double)(gint64)v) {
    fail(error, WEIR_ERROR_UNSUPPORTED,
         "%s = %g is not an integer, which an %s computation cannot apply "
         "exactly",
         what, v, weir_dtype_name(dtype));
    return NULL;
  }
  return g_strdup_printf("%" G_GINT64_FORMAT, (gint64)v);
}

/* The parameters and ranges of one map being built. */
typedef struct {
  WeirGraph *g;
  GPtrArray *params; /* char*, owned */
  GPtrArray *ranges; /* char*, owned */
} Space;

static void space_init(Space *sp, WeirGraph *g) {
  sp->g = g;
  sp->params = g_ptr_array_new_with_free_func(g_free);
  sp->ranges = g_ptr_array_new_with_free_func(g_free);
}

static void space_clear(Space *sp) {
  g_clear_pointer(&sp->params, g_ptr_array_unref);
  g_clear_pointer(&sp->ranges, g_ptr_array_unref);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Space, space_clear)

static gboolean space_has(const Space *sp, const char *name) {
  for (guint i = 0; i < sp->params->len; i++)
    if (strcmp(g_ptr_array_index(sp->params, i), name) == 0)
      return TRUE;
  return FALSE;
}

/* Adds parameter `base` over 0:size; returns its (possibly suffixed) name,
 * borrowed from the space. */
static const char *space_add(Space *sp, const char *base, WeirExpr *size) {
  char *name = g_strdup(base);
  while (weir_graph_has_symbol(sp->g, name) || space_has(sp, name)) {
    char *longer = g_strconcat(name, "_", NULL);
    g_free(name);
    name = longer;
  }
  g_autofree char *end = weir_expr_to_string(size);
  g_ptr_array_add(sp->params, name);
  g_ptr_array_add(sp->ranges, g_strdup_printf("0:%s", end));
  return name;
}

static const char *const *space_params(const Space *sp) {
  return (const char *const *)sp->params->pdata;
}

static const char *const *space_ranges(const Space *sp) {
  return (const char *const *)sp->ranges->pdata;
}

static WeirNode *space_map(WeirGraph *g, WeirState *s, const Space *sp,
                           const char *label, const WeirTaskletPort *ins,
                           guint n_ins, const WeirTaskletPort *outs,
                           guint n_outs, const char *code,
                           WeirNode *const *after, guint n_after,
                           GError **error) {
  return weir_expand_map(g, s, label, sp->params->len, space_params(sp),
                         space_ranges(sp), ins, n_ins, outs, n_outs, code,
                         after, n_after, error);
}

/* Joins subset items (char*) with ", " (transfer full). */
static char *join_items(GPtrArray *items) {
  GString *str = g_string_new(NULL);
  for (guint i = 0; i < items->len; i++)
    g_string_append_printf(str, "%s%s", i ? ", " : "",
                           (const char *)g_ptr_array_index(items, i));
  return g_string_free(str, FALSE);
}

static GPtrArray *items_new(void) {
  return g_ptr_array_new_with_free_func(g_free);
}

static void items_add(GPtrArray *items, const char *text) {
  g_ptr_array_add(items, g_strdup(text));
}

static void items_add_expr(GPtrArray *items, const WeirExpr *e) {
  g_ptr_array_add(items, weir_expr_to_string(e));
}

/* Reads an optional input: FALSE with *present = FALSE when absent. */
static gboolean optional_input(WeirGraph *g, WeirState *s, WeirNode *n, guint k,
                               WeirPort *port, gboolean *present,
                               GError **error) {
  g_autoptr(GError) local = NULL;
  *present = weir_port_input(g, s, n, k, port, &local);
  if (local) {
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
  }
  return TRUE;
}

static gboolean check_rank(const WeirPort *p, const char *what, guint rank,
                           GError **error) {
  if (p->rank == rank)
    return TRUE;
  return fail(error, WEIR_ERROR_INVALID, "%s '%s' has rank %u, expected %u",
              what, p->container->name, p->rank, rank);
}

/* --------------------------------------------------------------- Gemm */

static gboolean expand_gemm(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  WeirPort a, b, c, y;
  gboolean has_c;
  if (!weir_port_require_input(g, s, n, 0, &a, error) ||
      !weir_port_require_input(g, s, n, 1, &b, error) ||
      !optional_input(g, s, n, 2, &c, &has_c, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error) ||
      !check_rank(&a, "A", 2, error) || !check_rank(&b, "B", 2, error) ||
      !check_rank(&y, "Y", 2, error))
    return FALSE;
  if (has_c && c.rank > 2)
    return fail(error, WEIR_ERROR_INVALID, "C '%s' has rank %u, expected <= 2",
                c.container->name, c.rank);
  WeirDType dt = y.container->dtype;
  gboolean ta = weir_node_attr_int(n, "transA", 0) != 0;
  gboolean tb = weir_node_attr_int(n, "transB", 0) != 0;
  double alpha = weir_node_attr_float(n, "alpha", 1.0);
  double beta = weir_node_attr_float(n, "beta", 1.0);
  g_autofree char *alpha_text = scalar_literal(dt, alpha, "alpha", error);
  if (!alpha_text)
    return FALSE;
  g_autofree char *beta_text = scalar_literal(dt, beta, "beta", error);
  if (!beta_text)
    return FALSE;

  /* Init: y = beta * C (broadcast) or 0. */
  g_auto(Space) init;
  space_init(&init, g);
  const char *m = space_add(&init, "m", y.shape[0]);
  const char *nn = space_add(&init, "n", y.shape[1]);
  g_autofree char *y_sub = g_strdup_printf("%s, %s", m, nn);
  g_autofree char *c_sub = has_c ? weir_expand_broadcast_subset(
                                       c.rank, c.shape, 2, space_params(&init))
                                 : NULL;
  g_autofree char *init_code = !has_c ? g_strdup("y = 0")
                               : beta == 1.0
                                   ? g_strdup("y = c")
                                   : g_strdup_printf("y = %s * c", beta_text);
  WeirNode *y_init = weir_state_add_access(g, s, y.container->name);
  WeirTaskletPort c_in = {c.access, "c", c_sub, WEIR_WCR_NONE};
  WeirTaskletPort init_out = {y_init, "y", y_sub, WEIR_WCR_NONE};
  g_autofree char *init_label = g_strdup_printf("%s_init", label_of(n));
  if (!space_map(g, s, &init, init_label, &c_in, has_c ? 1 : 0, &init_out, 1,
                 init_code, NULL, 0, error))
    return FALSE;

  /* Multiply-accumulate over (m, n, k). */
  g_auto(Space) mac;
  space_init(&mac, g);
  m = space_add(&mac, "m", y.shape[0]);
  nn = space_add(&mac, "n", y.shape[1]);
  const char *k = space_add(&mac, "k", a.shape[ta ? 0 : 1]);
  g_autofree char *a_sub =
      ta ? g_strdup_printf("%s, %s", k, m) : g_strdup_printf("%s, %s", m, k);
  g_autofree char *b_sub =
      tb ? g_strdup_printf("%s, %s", nn, k) : g_strdup_printf("%s, %s", k, nn);
  g_autofree char *mac_code =
      alpha == 1.0 ? g_strdup("y = a * b")
                   : g_strdup_printf("y = %s * a * b", alpha_text);
  WeirTaskletPort ins[2] = {{a.access, "a", a_sub, WEIR_WCR_NONE},
                            {b.access, "b", b_sub, WEIR_WCR_NONE}};
  WeirTaskletPort out = {y.access, "y", y_sub, WEIR_WCR_SUM};
  g_autofree char *mac_label = g_strdup_printf("%s_mac", label_of(n));
  if (!space_map(g, s, &mac, mac_label, ins, 2, &out, 1, mac_code, &y_init, 1,
                 error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------------- MatMul */

/* Adds to `items` the batch indices of an operand with `rank` dimensions
 * (of which `core` are matrix dimensions) broadcast to the batch
 * parameters of the output. */
static void add_batch_items(GPtrArray *items, const WeirPort *p, guint core,
                            const Space *sp, guint n_batch) {
  guint rank = p->rank - core;
  g_autofree char *sub =
      weir_expand_broadcast_subset(rank, p->shape, n_batch, space_params(sp));
  if (rank > 0)
    items_add(items, sub);
}

/* Parameters over MatMul's output: batch b0.., then m (unless A is a
 * vector), then n (unless B is a vector). */
static void matmul_space(Space *sp, WeirGraph *g, const WeirPort *y,
                         guint n_batch, gboolean a_vec, gboolean b_vec) {
  space_init(sp, g);
  for (guint d = 0; d < n_batch; d++) {
    g_autofree char *base = g_strdup_printf("b%u", d);
    space_add(sp, base, y->shape[d]);
  }
  if (!a_vec)
    space_add(sp, "m", y->shape[n_batch]);
  if (!b_vec)
    space_add(sp, "n", y->shape[y->rank - 1]);
}

static gboolean expand_matmul(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  WeirPort a, b, y;
  if (!weir_port_require_input(g, s, n, 0, &a, error) ||
      !weir_port_require_input(g, s, n, 1, &b, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  if (a.rank == 0 || b.rank == 0)
    return fail(error, WEIR_ERROR_INVALID, "MatMul of a scalar ('%s')",
                a.rank == 0 ? a.container->name : b.container->name);
  gboolean a_vec = a.rank == 1, b_vec = b.rank == 1;
  guint core = (a_vec ? 0 : 1) + (b_vec ? 0 : 1);
  guint n_batch = MAX(a_vec ? 0 : a.rank - 2, b_vec ? 0 : b.rank - 2);
  if (y.rank != n_batch + core)
    return fail(error, WEIR_ERROR_INVALID,
                "output '%s' has rank %u, expected %u", y.container->name,
                y.rank, n_batch + core);

  /* Both phases iterate over the output with the same parameter names. */
  g_auto(Space) init;
  g_auto(Space) mac;
  matmul_space(&init, g, &y, n_batch, a_vec, b_vec);
  matmul_space(&mac, g, &y, n_batch, a_vec, b_vec);
  g_autofree char *y_sub =
      weir_expand_index_subset(y.rank, space_params(&init));
  WeirNode *y_init = weir_state_add_access(g, s, y.container->name);
  WeirTaskletPort init_out = {y_init, "y", y_sub, WEIR_WCR_NONE};
  g_autofree char *init_label = g_strdup_printf("%s_init", label_of(n));
  if (!space_map(g, s, &init, init_label, NULL, 0, &init_out, 1, "y = 0", NULL,
                 0, error))
    return FALSE;

  const char *k = space_add(&mac, "k", a.shape[a.rank - 1]);
  const char *m = a_vec ? NULL : space_params(&mac)[n_batch];
  const char *nn = b_vec ? NULL : space_params(&mac)[y.rank - 1];
  g_autoptr(GPtrArray) a_items = items_new();
  g_autoptr(GPtrArray) b_items = items_new();
  if (!a_vec) {
    add_batch_items(a_items, &a, 2, &mac, n_batch);
    items_add(a_items, m);
  }
  items_add(a_items, k);
  if (!b_vec) {
    add_batch_items(b_items, &b, 2, &mac, n_batch);
    items_add(b_items, k);
    items_add(b_items, nn);
  } else {
    items_add(b_items, k);
  }
  g_autofree char *a_sub = join_items(a_items);
  g_autofree char *b_sub = join_items(b_items);
  WeirTaskletPort ins[2] = {{a.access, "a", a_sub, WEIR_WCR_NONE},
                            {b.access, "b", b_sub, WEIR_WCR_NONE}};
  WeirTaskletPort out = {y.access, "y", y_sub, WEIR_WCR_SUM};
  g_autofree char *mac_label = g_strdup_printf("%s_mac", label_of(n));
  if (!space_map(g, s, &mac, mac_label, ins, 2, &out, 1, "y = a * b", &y_init,
                 1, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* --------------------------------------------- Conv and ConvTranspose */

/* One spatial index of a convolution, `e`, read or written in a dimension
 * of size `size`: the clamped subset item goes to `items`, the bounds test
 * (if any is needed) to `conds`.  `lower` / `upper` say whether e can fall
 * below 0 / reach size. */
static gboolean add_spatial_index(GPtrArray *items, GPtrArray *conds,
                                  WeirExpr *e, WeirExpr *size, gboolean lower,
                                  gboolean upper, GError **error) {
  g_autoptr(WeirExpr) idx = weir_expr_ref(e);
  if (lower) {
    g_autoptr(WeirExpr) zero = weir_expr_const(0);
    WeirExpr *t = weir_expr_max(idx, zero);
    weir_expr_unref(idx);
    idx = t;
  }
  if (upper) {
    g_autoptr(WeirExpr) last = weir_expr_add_const(size, -1);
    WeirExpr *t = weir_expr_min(idx, last);
    weir_expr_unref(idx);
    idx = t;
  }
  items_add_expr(items, idx);
  if (!lower && !upper)
    return TRUE;
  if (!expr_tasklet_ok(e) || !expr_tasklet_ok(size)) {
    g_autofree char *te = weir_expr_to_string(e);
    g_autofree char *ts = weir_expr_to_string(size);
    return fail(error, WEIR_ERROR_UNSUPPORTED,
                "padding with symbolic sizes: the bounds test '0 <= %s < %s' "
                "cannot be written as tasklet code",
                te, ts);
  }
  g_autofree char *te = weir_expr_to_string(e);
  g_autofree char *ts = weir_expr_to_string(size);
  if (lower)
    g_ptr_array_add(conds, g_strdup_printf("%s >= 0", te));
  if (upper)
    g_ptr_array_add(conds, g_strdup_printf("%s < %s", te, ts));
  return TRUE;
}

/* "y = x * w", or guarded by the bounds tests. */
static char *conv_code(GPtrArray *conds) {
  if (conds->len == 0)
    return g_strdup("y = x * w");
  g_ptr_array_add(conds, NULL);
  g_autofree char *all = g_strjoinv(" && ", (char **)conds->pdata);
  g_ptr_array_remove_index(conds, conds->len - 1);
  return g_strdup_printf("y = (%s) ? x * w : 0", all);
}

/* A channel index within a group: base * (p // per) + q, or q when there
 * is one group. */
static WeirExpr *group_channel(gint64 group, const char *p, WeirExpr *per,
                               WeirExpr *base, const char *q) {
  g_autoptr(WeirExpr) qe = weir_expr_symbol(q);
  if (group == 1)
    return weir_expr_ref(qe);
  g_autoptr(WeirExpr) pe = weir_expr_symbol(p);
  g_autoptr(WeirExpr) grp = weir_expr_floordiv(pe, per);
  g_autoptr(WeirExpr) off = weir_expr_mul(grp, base);
  return weir_expr_add(off, qe);
}

/* Size / group as an expression. */
static WeirExpr *per_group(WeirExpr *size, gint64 group) {
  g_autoptr(WeirExpr) ge = weir_expr_const(group);
  return weir_expr_floordiv(size, ge);
}

/* The init map of a convolution: y = bias[channel] or 0 over the output. */
static WeirNode *conv_init(WeirGraph *g, WeirState *s, WeirNode *n,
                           const WeirPort *y, const WeirPort *bias,
                           gboolean has_bias, GError **error) {
  g_auto(Space) sp;
  space_init(&sp, g);
  space_add(&sp, "n", y->shape[0]);
  const char *oc = space_add(&sp, "oc", y->shape[1]);
  for (guint i = 2; i < y->rank; i++) {
    g_autofree char *base = g_strdup_printf("o%u", i - 2);
    space_add(&sp, base, y->shape[i]);
  }
  g_autofree char *y_sub = weir_expand_index_subset(y->rank, space_params(&sp));
  WeirNode *y_init = weir_state_add_access(g, s, y->container->name);
  WeirTaskletPort in = {has_bias ? bias->access : NULL, "b", oc, WEIR_WCR_NONE};
  WeirTaskletPort out = {y_init, "y", y_sub, WEIR_WCR_NONE};
  g_autofree char *label = g_strdup_printf("%s_init", label_of(n));
  if (!space_map(g, s, &sp, label, &in, has_bias ? 1 : 0, &out, 1,
                 has_bias ? "y = b" : "y = 0", NULL, 0, error))
    return NULL;
  return y_init;
}

/* Ports and geometry shared by Conv and ConvTranspose. */
typedef struct {
  WeirPort x, w, b, y;
  gboolean has_bias;
  guint ns;
  WeirConvGeometry geo;
} ConvSetup;

static gboolean conv_setup(WeirGraph *g, WeirState *s, WeirNode *n,
                           gboolean transposed, ConvSetup *cs, GError **error) {
  if (!weir_port_require_input(g, s, n, 0, &cs->x, error) ||
      !weir_port_require_input(g, s, n, 1, &cs->w, error) ||
      !optional_input(g, s, n, 2, &cs->b, &cs->has_bias, error) ||
      !weir_port_require_output(g, s, n, 0, &cs->y, error))
    return FALSE;
  if (cs->x.rank < 3 || cs->w.rank != cs->x.rank || cs->y.rank != cs->x.rank)
    return fail(error, WEIR_ERROR_INVALID,
                "X, W and Y have ranks %u, %u and %u; expected one rank of "
                "at least 3",
                cs->x.rank, cs->w.rank, cs->y.rank);
  if (cs->has_bias && cs->b.rank != 1)
    return fail(error, WEIR_ERROR_INVALID, "bias '%s' has rank %u, expected 1",
                cs->b.container->name, cs->b.rank);
  cs->ns = cs->x.rank - 2;
  g_autoptr(GError) local = NULL;
  if (!weir_conv_geometry_compute(n, transposed, cs->ns, cs->x.shape + 2,
                                  cs->w.shape + 2, &cs->geo, &local))
    return fail(error, local->code, "%s", local->message);
  for (guint i = 0; i < cs->ns; i++)
    if (!weir_expr_equal(cs->geo.out[i], cs->y.shape[2 + i])) {
      g_autofree char *want = weir_expr_to_string(cs->geo.out[i]);
      g_autofree char *have = weir_expr_to_string(cs->y.shape[2 + i]);
      return fail(error, WEIR_ERROR_INVALID,
                  "output '%s' has size %s in spatial dimension %u, but the "
                  "attributes give %s",
                  cs->y.container->name, have, i, want);
    }
  return TRUE;
}

/* The position pos*s + k*d - pad along spatial dimension i (pos ranging
 * over npos values, k over nk), and whether it can fall below 0 (*lower)
 * or reach `bound` (*upper): its largest value is
 * (npos-1)*s + (nk-1)*d - pad. */
static WeirExpr *spatial_index(const WeirConvGeometry *geo, guint i,
                               const char *pos, WeirExpr *npos, const char *k,
                               WeirExpr *nk, WeirExpr *bound, gboolean *lower,
                               gboolean *upper) {
  gint64 st = geo->strides[i], dl = geo->dilations[i];
  g_autoptr(WeirExpr) ps = weir_expr_symbol(pos);
  g_autoptr(WeirExpr) ks = weir_expr_symbol(k);
  g_autoptr(WeirExpr) a = weir_expr_mul_const(ps, st);
  g_autoptr(WeirExpr) b = weir_expr_mul_const(ks, dl);
  g_autoptr(WeirExpr) ab = weir_expr_add(a, b);
  g_autoptr(WeirExpr) pm1 = weir_expr_add_const(npos, -1);
  g_autoptr(WeirExpr) km1 = weir_expr_add_const(nk, -1);
  g_autoptr(WeirExpr) ms = weir_expr_mul_const(pm1, st);
  g_autoptr(WeirExpr) md = weir_expr_mul_const(km1, dl);
  g_autoptr(WeirExpr) msd = weir_expr_add(ms, md);
  g_autoptr(WeirExpr) last = weir_expr_sub(msd, geo->pad_begin[i]);
  g_autoptr(WeirExpr) over = weir_expr_sub(last, bound);
  *lower = !const_at_most(geo->pad_begin[i], 0);
  *upper = !const_at_most(over, -1);
  return weir_expr_sub(ab, geo->pad_begin[i]);
}

static gboolean expand_conv(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  ConvSetup cs = {0};
  gboolean ok = conv_setup(g, s, n, FALSE, &cs, error);
  g_auto(WeirConvGeometry) geo = cs.geo;
  if (!ok)
    return FALSE;
  WeirNode *y_init = conv_init(g, s, n, &cs.y, &cs.b, cs.has_bias, error);
  if (!y_init)
    return FALSE;

  /* for n, oc, o..., ic (within the group), k...:
   *   y[n, oc, o] += x[n, g*Cg + ic, o*s + k*d - pad] * w[oc, ic, k] */
  g_auto(Space) sp;
  space_init(&sp, g);
  const char *pn = space_add(&sp, "n", cs.y.shape[0]);
  const char *oc = space_add(&sp, "oc", cs.y.shape[1]);
  const char *o[WEIR_CONV_MAX_SPATIAL], *k[WEIR_CONV_MAX_SPATIAL];
  for (guint i = 0; i < cs.ns; i++) {
    g_autofree char *base = g_strdup_printf("o%u", i);
    o[i] = space_add(&sp, base, cs.y.shape[2 + i]);
  }
  const char *ic = space_add(&sp, "ic", cs.w.shape[1]);
  for (guint i = 0; i < cs.ns; i++) {
    g_autofree char *base = g_strdup_printf("k%u", i);
    k[i] = space_add(&sp, base, cs.w.shape[2 + i]);
  }
  g_autoptr(WeirExpr) m_per = per_group(cs.w.shape[0], geo.group);
  g_autoptr(WeirExpr) channel =
      group_channel(geo.group, oc, m_per, cs.w.shape[1], ic);

  g_autoptr(GPtrArray) x_items = items_new();
  g_autoptr(GPtrArray) w_items = items_new();
  g_autoptr(GPtrArray) y_items = items_new();
  g_autoptr(GPtrArray) conds = g_ptr_array_new_with_free_func(g_free);
  items_add(x_items, pn);
  items_add_expr(x_items, channel);
  items_add(w_items, oc);
  items_add(w_items, ic);
  items_add(y_items, pn);
  items_add(y_items, oc);
  for (guint i = 0; i < cs.ns; i++) {
    WeirExpr *in = cs.x.shape[2 + i];
    gboolean lower, upper;
    g_autoptr(WeirExpr) e =
        spatial_index(&geo, i, o[i], cs.y.shape[2 + i], k[i], cs.w.shape[2 + i],
                      in, &lower, &upper);
    if (!add_spatial_index(x_items, conds, e, in, lower, upper, error))
      return FALSE;
    items_add(w_items, k[i]);
    items_add(y_items, o[i]);
  }
  g_autofree char *x_sub = join_items(x_items);
  g_autofree char *w_sub = join_items(w_items);
  g_autofree char *y_sub = join_items(y_items);
  g_autofree char *code = conv_code(conds);
  WeirTaskletPort ins[2] = {{cs.x.access, "x", x_sub, WEIR_WCR_NONE},
                            {cs.w.access, "w", w_sub, WEIR_WCR_NONE}};
  WeirTaskletPort out = {cs.y.access, "y", y_sub, WEIR_WCR_SUM};
  g_autofree char *label = g_strdup_printf("%s_mac", label_of(n));
  if (!space_map(g, s, &sp, label, ins, 2, &out, 1, code, &y_init, 1, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

static gboolean expand_conv_transpose(WeirGraph *g, WeirState *s, WeirNode *n,
                                      GError **error) {
  ConvSetup cs = {0};
  gboolean ok = conv_setup(g, s, n, TRUE, &cs, error);
  g_auto(WeirConvGeometry) geo = cs.geo;
  if (!ok)
    return FALSE;
  WeirNode *y_init = conv_init(g, s, n, &cs.y, &cs.b, cs.has_bias, error);
  if (!y_init)
    return FALSE;

  /* Scatter: for n, ic, i..., oc (within the group), k...:
   *   y[n, g*Mg + oc, i*s + k*d - pad] += x[n, ic, i] * w[ic, oc, k] */
  g_auto(Space) sp;
  space_init(&sp, g);
  const char *pn = space_add(&sp, "n", cs.x.shape[0]);
  const char *ic = space_add(&sp, "ic", cs.x.shape[1]);
  const char *pi[WEIR_CONV_MAX_SPATIAL], *k[WEIR_CONV_MAX_SPATIAL];
  for (guint i = 0; i < cs.ns; i++) {
    g_autofree char *base = g_strdup_printf("i%u", i);
    pi[i] = space_add(&sp, base, cs.x.shape[2 + i]);
  }
  const char *oc = space_add(&sp, "oc", cs.w.shape[1]);
  for (guint i = 0; i < cs.ns; i++) {
    g_autofree char *base = g_strdup_printf("k%u", i);
    k[i] = space_add(&sp, base, cs.w.shape[2 + i]);
  }
  g_autoptr(WeirExpr) c_per = per_group(cs.x.shape[1], geo.group);
  g_autoptr(WeirExpr) channel =
      group_channel(geo.group, ic, c_per, cs.w.shape[1], oc);

  g_autoptr(GPtrArray) x_items = items_new();
  g_autoptr(GPtrArray) w_items = items_new();
  g_autoptr(GPtrArray) y_items = items_new();
  g_autoptr(GPtrArray) conds = g_ptr_array_new_with_free_func(g_free);
  items_add(x_items, pn);
  items_add(x_items, ic);
  items_add(w_items, ic);
  items_add(w_items, oc);
  items_add(y_items, pn);
  items_add_expr(y_items, channel);
  for (guint i = 0; i < cs.ns; i++) {
    WeirExpr *out_size = cs.y.shape[2 + i];
    gboolean lower, upper;
    g_autoptr(WeirExpr) e =
        spatial_index(&geo, i, pi[i], cs.x.shape[2 + i], k[i],
                      cs.w.shape[2 + i], out_size, &lower, &upper);
    items_add(x_items, pi[i]);
    items_add(w_items, k[i]);
    if (!add_spatial_index(y_items, conds, e, out_size, lower, upper, error))
      return FALSE;
  }
  g_autofree char *x_sub = join_items(x_items);
  g_autofree char *w_sub = join_items(w_items);
  g_autofree char *y_sub = join_items(y_items);
  g_autofree char *code = conv_code(conds);
  WeirTaskletPort ins[2] = {{cs.x.access, "x", x_sub, WEIR_WCR_NONE},
                            {cs.w.access, "w", w_sub, WEIR_WCR_NONE}};
  WeirTaskletPort out = {cs.y.access, "y", y_sub, WEIR_WCR_SUM};
  g_autofree char *label = g_strdup_printf("%s_mac", label_of(n));
  if (!space_map(g, s, &sp, label, ins, 2, &out, 1, code, &y_init, 1, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------------- Einsum */

static gboolean expand_einsum(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  g_autoptr(GArray) ports = g_array_new(FALSE, TRUE, sizeof(WeirPort));
  for (;;) {
    WeirPort p;
    g_autoptr(GError) local = NULL;
    if (!weir_port_input(g, s, n, ports->len, &p, &local)) {
      if (local) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
      }
      break;
    }
    g_array_append_val(ports, p);
  }
  WeirPort y;
  if (!weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  const WeirAttr *eq = weir_node_attr(n, "equation");
  g_autofree guint *ranks = g_new0(guint, ports->len + 1);
  for (guint k = 0; k < ports->len; k++)
    ranks[k] = g_array_index(ports, WeirPort, k).rank;
  g_autoptr(WeirEinsum) e =
      weir_einsum_parse(eq && eq->type == WEIR_ATTR_STRING ? eq->s : "",
                        ports->len, ranks, error);
  if (!e)
    return FALSE;

  /* Size of each letter; the iteration order is the output letters, then
   * the summed letters in order of first appearance. */
  WeirExpr *size[256] = {NULL};
  GString *letters = g_string_new(e->output);
  for (guint k = 0; k < e->n_inputs; k++) {
    const WeirPort *p = &g_array_index(ports, WeirPort, k);
    if (p->rank != strlen(e->inputs[k])) {
      g_string_free(letters, TRUE);
      return fail(error, WEIR_ERROR_INVALID,
                  "input '%s' has rank %u but its term '%s' has %u letters",
                  p->container->name, p->rank, e->inputs[k],
                  (guint)strlen(e->inputs[k]));
    }
    for (guint d = 0; d < p->rank; d++) {
      guchar l = (guchar)e->inputs[k][d];
      if (!size[l])
        size[l] = p->shape[d];
      if (!strchr(letters->str, l))
        g_string_append_c(letters, (char)l);
    }
  }
  g_autofree char *order = g_string_free(letters, FALSE);
  if (y.rank != strlen(e->output))
    return fail(error, WEIR_ERROR_INVALID,
                "output '%s' has rank %u but the output term '%s' has %u "
                "letters",
                y.container->name, y.rank, e->output, (guint)strlen(e->output));
  gboolean sums = strlen(order) > strlen(e->output);

  g_auto(Space) sp;
  space_init(&sp, g);
  const char *param[256] = {NULL};
  for (const char *l = order; *l; l++) {
    char base[2] = {*l, 0};
    param[(guchar)*l] = space_add(&sp, base, size[(guchar)*l]);
  }
  guint n_out = strlen(e->output);
  g_autoptr(GPtrArray) y_items = items_new();
  for (guint d = 0; d < n_out; d++)
    items_add(y_items, param[(guchar)e->output[d]]);
  g_autofree char *y_sub = join_items(y_items);

  WeirNode *y_init = NULL;
  if (sums) {
    /* The init map iterates over the output letters only. */
    g_auto(Space) init;
    space_init(&init, g);
    for (guint d = 0; d < n_out; d++) {
      g_ptr_array_add(init.params, g_strdup(param[(guchar)e->output[d]]));
      g_ptr_array_add(init.ranges, g_strdup(g_ptr_array_index(sp.ranges, d)));
    }
    y_init = weir_state_add_access(g, s, y.container->name);
    WeirTaskletPort out = {y_init, "out", y_sub, WEIR_WCR_NONE};
    g_autofree char *label = g_strdup_printf("%s_init", label_of(n));
    if (!space_map(g, s, &init, label, NULL, 0, &out, 1, "out = 0", NULL, 0,
                   error))
      return FALSE;
  }

  GString *code = g_string_new("out = ");
  g_autoptr(GPtrArray) conns = items_new();
  g_autoptr(GPtrArray) subs = items_new();
  guint n_ins = e->n_inputs;
  g_autofree WeirTaskletPort *ins = g_new0(WeirTaskletPort, n_ins + 1);
  for (guint k = 0; k < n_ins; k++) {
    g_autoptr(GPtrArray) items = items_new();
    for (const char *l = e->inputs[k]; *l; l++)
      items_add(items, param[(guchar)*l]);
    g_ptr_array_add(subs, join_items(items));
    g_ptr_array_add(conns, g_strdup_printf("in%u", k));
    g_string_append_printf(code, "%sin%u", k ? " * " : "", k);
  }
  for (guint k = 0; k < n_ins; k++)
    ins[k] = (WeirTaskletPort){g_array_index(ports, WeirPort, k).access,
                               g_ptr_array_index(conns, k),
                               g_ptr_array_index(subs, k), WEIR_WCR_NONE};
  g_autofree char *code_text = g_string_free(code, FALSE);
  WeirTaskletPort out = {y.access, "out", y_sub,
                         sums ? WEIR_WCR_SUM : WEIR_WCR_NONE};
  g_autofree char *label =
      g_strdup_printf("%s_%s", label_of(n), sums ? "mac" : "map");
  if (!space_map(g, s, &sp, label, ins, n_ins, &out, 1, code_text,
                 sums ? &y_init : NULL, sums ? 1 : 0, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------- registration */

void weir_expand_register_linalg(void) {
  weir_op_register_expansion("Gemm", "pure", expand_gemm);
  weir_op_register_expansion("MatMul", "pure", expand_matmul);
  weir_op_register_expansion("Conv", "pure", expand_conv);
  weir_op_register_expansion("ConvTranspose", "pure", expand_conv_transpose);
  weir_op_register_expansion("Einsum", "pure", expand_einsum);
  weir_op_register_expansion("Det", "pure", expand_det);
}
