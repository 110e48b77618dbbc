/* reduce.c — pure expansions of the reduction family (schemas in
 * ir/ops/reduce.c).
 *
 * Every reduction is spelled out the same way, as in samples/softmax.json:
 *
 *   init map      writes the identity of the reduction (0, 1, -inf, ...)
 *                 into the accumulator, through a first access node A1;
 *   reduce map    runs over the whole input and writes into the same
 *                 container (second access node A2) with a WCR memlet
 *                 (sum, prod, max, min); an empty memlet A1 -> map entry
 *                 orders it after the initialization;
 *   finalize map  (when needed) turns the accumulator into the result
 *                 (mean = sum / count, L2 = sqrt(sum), ...).
 *
 * Index spaces: maps over the input use parameters i0, i1, ...; maps over
 * an output or an accumulator j0, j1, ...; an input index is mapped to the
 * accumulator by dropping the reduced dimensions (or reading index 0 in
 * them when the accumulator keeps them).  Accumulators and intermediate
 * values live in transients named after the node ("<label>_sum").
 *
 * Sections: index spaces and small helpers; the generic reduction
 * (Reduce*, Global*Pool); ArgMax/ArgMin; Softmax/LogSoftmax; Hardmax; LRN,
 * InstanceNormalization, MeanVarianceNormalization; DynamicQuantizeLinear;
 * LayerNormalization; MaxPool/AveragePool; registration.
 */
#include <string.h>

#include "expand-util.h"
#include "weir-attr.h"

void weir_expand_register_reduce(void);

/* -------------------------------------------------------------- helpers */

static gboolean is_const_value(const WeirExpr *e, gint64 v) {
  gint64 x;
  return weir_expr_is_const(e, &x) && x == v;
}

static gboolean normalize_axis(const WeirNode *n, gint64 axis, guint rank,
                               guint *out, GError **error) {
  gint64 r = rank;
  if (axis < -r || axis >= r)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "axis %" G_GINT64_FORMAT
                          " is out of range for an input of rank %u",
                          axis, rank);
  *out = (guint)(axis < 0 ? axis + r : axis);
  return TRUE;
}

/* The parameters and full ranges of a map over a shape. */
typedef struct {
  guint rank;
  char **params;
  char **ranges;
  char *index; /* "i0, i1, ..." */
} Space;

static void space_init(Space *sp, const char *prefix, guint rank,
                       WeirExpr *const *shape) {
  sp->rank = rank;
  sp->params = weir_expand_params(prefix, rank);
  sp->ranges = weir_expand_full_ranges(rank, shape);
  sp->index = weir_expand_index_subset(rank, (const char *const *)sp->params);
}

static void space_clear(Space *sp) {
  g_strfreev(sp->params);
  g_strfreev(sp->ranges);
  g_free(sp->index);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Space, space_clear)

/* Reorders the parameters (and ranges) of sp so that the dimensions not
 * in `reduced` come first, in order, then the reduced ones: the outer loop
 * of the map then indexes distinct accumulator elements, and the code
 * generator can split it across threads without atomic updates.  The
 * index strings are by name and unchanged. */
static void space_kept_first(Space *sp, const gboolean *reduced) {
  if (sp->rank == 0)
    return;
  g_autofree char **params = g_new(char *, sp->rank);
  g_autofree char **ranges = g_new(char *, sp->rank);
  guint k = 0;
  for (int pass = 0; pass < 2; pass++)
    for (guint d = 0; d < sp->rank; d++)
      if (!reduced[d] == !pass) {
        params[k] = sp->params[d];
        ranges[k++] = sp->ranges[d];
      }
  memcpy(sp->params, params, sp->rank * sizeof(char *));
  memcpy(sp->ranges, ranges, sp->rank * sizeof(char *));
}

/* A map over space sp (see weir_expand_map). */
static WeirNode *map_over(WeirGraph *g, WeirState *s, const WeirNode *n,
                          const char *suffix, const Space *sp,
                          const WeirTaskletPort *ins, guint n_ins,
                          const WeirTaskletPort *outs, guint n_outs,
                          const char *code, WeirNode *after, GError **error) {
  g_autofree char *label = g_strdup_printf(
      "%s_%s", n->label && *n->label ? n->label : n->op, suffix);
  return weir_expand_map(g, s, label, sp->rank, (const char *const *)sp->params,
                         (const char *const *)sp->ranges, ins, n_ins, outs,
                         n_outs, code, after ? &after : NULL, after ? 1 : 0,
                         error);
}

/* The index of an accumulator read or written from a map over the input:
 * reduced dimensions dropped, or read at 0 when kept. */
static char *reduced_index(const Space *sp, const gboolean *reduced,
                           gboolean keepdims) {
  GString *s = g_string_new(NULL);
  gboolean first = TRUE;
  for (guint d = 0; d < sp->rank; d++) {
    if (reduced[d] && !keepdims)
      continue;
    g_string_append_printf(s, "%s%s", first ? "" : ", ",
                           reduced[d] ? "0" : sp->params[d]);
    first = FALSE;
  }
  return g_string_free(s, FALSE);
}

/* The shape of x with reduced dimensions set to 1 (or dropped); *rank
 * receives its rank.  Free the entries with weir_expr_unref. */
static GPtrArray *reduced_shape(const WeirPort *x, const gboolean *reduced,
                                gboolean keepdims) {
  GPtrArray *shape =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint d = 0; d < x->rank; d++) {
    if (!reduced[d])
      g_ptr_array_add(shape, weir_expr_ref(x->shape[d]));
    else if (keepdims)
      g_ptr_array_add(shape, weir_expr_const(1));
  }
  return shape;
}

/* Tasklet text of the number of elements reduced into one output. */
static char *reduced_count(const WeirPort *x, const gboolean *reduced) {
  g_autoptr(WeirExpr) count = weir_expr_const(1);
  for (guint d = 0; d < x->rank; d++) {
    if (!reduced[d])
      continue;
    WeirExpr *next = weir_expr_mul(count, x->shape[d]);
    weir_expr_unref(count);
    count = next;
  }
  return weir_expand_expr_code(count);
}

/* Checks that the output container has the shape the node produces. */
static gboolean check_shape(const WeirNode *n, guint k, const WeirPort *p,
                            guint rank, WeirExpr *const *shape,
                            GError **error) {
  if (p->rank != rank)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "output %u ('%s') has rank %u, expected %u", k,
                          p->container->name, p->rank, rank);
  for (guint d = 0; d < rank; d++) {
    if (weir_expr_equal(p->shape[d], shape[d]))
      continue;
    g_autofree char *a = weir_expr_to_string(p->shape[d]);
    g_autofree char *b = weir_expr_to_string(shape[d]);
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "output %u ('%s') has size %s in dimension %u, expected %s", k,
        p->container->name, a, d, b);
  }
  return TRUE;
}

/* A transient named after the node, and its first access node. */
static WeirContainer *add_transient(WeirGraph *g, const WeirNode *n,
                                    const char *suffix, WeirDType dtype,
                                    GPtrArray *shape) {
  g_autofree char *base = weir_expand_name(n, suffix);
  return weir_expand_add_transient(g, base, dtype, shape->len,
                                   (WeirExpr *const *)shape->pdata);
}

/* --------------------------------------------------- generic reductions */

typedef enum {
  RK_SUM,
  RK_MEAN,
  RK_MAX,
  RK_MIN,
  RK_PROD,
  RK_L1,
  RK_L2,
  RK_SUM_SQUARE,
  RK_LOG_SUM_EXP,
  RK_LOG_SUM,
} ReduceKind;

static const struct {
  const char *op;
  ReduceKind kind;
} reduce_ops[] = {
    {"ReduceSum", RK_SUM},
    {"ReduceMean", RK_MEAN},
    {"ReduceMax", RK_MAX},
    {"ReduceMin", RK_MIN},
    {"ReduceProd", RK_PROD},
    {"ReduceL1", RK_L1},
    {"ReduceL2", RK_L2},
    {"ReduceSumSquare", RK_SUM_SQUARE},
    {"ReduceLogSumExp", RK_LOG_SUM_EXP},
    {"ReduceLogSum", RK_LOG_SUM},
};

/* Reductions written straight into the output: identity, WCR, the value
 * each input element contributes. */
static gboolean direct_reduction(ReduceKind kind, WeirDType dtype,
                                 const char **identity, WeirWcr *wcr,
                                 const char **code) {
  *identity = "0";
  *wcr = WEIR_WCR_SUM;
  *code = "y = x";
  switch (kind) {
  case RK_SUM:
    return TRUE;
  case RK_PROD:
    *identity = "1";
    *wcr = WEIR_WCR_PROD;
    return TRUE;
  case RK_MAX:
    *identity = weir_expand_lowest_literal(dtype);
    *wcr = WEIR_WCR_MAX;
    return TRUE;
  case RK_MIN:
    *identity = weir_expand_highest_literal(dtype);
    *wcr = WEIR_WCR_MIN;
    return TRUE;
  case RK_L1:
    *code = "y = abs(x)";
    return TRUE;
  case RK_SUM_SQUARE:
    *code = "y = x * x";
    return TRUE;
  default:
    return FALSE;
  }
}

/* Reduces input 0 of n over the dimensions marked in `reduced` into output
 * 0 (rank: kept dimensions, plus the reduced ones as 1 with keepdims). */
static gboolean build_reduction(WeirGraph *g, WeirState *s, WeirNode *n,
                                ReduceKind kind, const gboolean *reduced,
                                gboolean keepdims, GError **error) {
  WeirPort x, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  g_autoptr(GPtrArray) yshape = reduced_shape(&x, reduced, keepdims);
  if (!check_shape(n, 0, &y, yshape->len, (WeirExpr *const *)yshape->pdata,
                   error))
    return FALSE;
  WeirDType dtype = y.container->dtype;
  g_auto(Space) xs, ys;
  space_init(&xs, "i", x.rank, x.shape);
  space_init(&ys, "j", y.rank, y.shape);
  g_autofree char *acc_index = reduced_index(&xs, reduced, keepdims);
  g_autofree char *count = reduced_count(&x, reduced);
  WeirTaskletPort in_x = {x.access, "x", xs.index, WEIR_WCR_NONE};
  space_kept_first(&xs, reduced);

  const char *identity, *code;
  WeirWcr wcr;
  if (direct_reduction(kind, dtype, &identity, &wcr, &code)) {
    WeirNode *a1 = weir_state_add_access(g, s, y.container->name);
    g_autofree char *init = g_strdup_printf("y = %s", identity);
    WeirTaskletPort init_out = {a1, "y", ys.index, WEIR_WCR_NONE};
    WeirTaskletPort acc_out = {y.access, "y", acc_index, wcr};
    return map_over(g, s, n, "init", &ys, NULL, 0, &init_out, 1, init, NULL,
                    error) &&
           map_over(g, s, n, "reduce", &xs, &in_x, 1, &acc_out, 1, code, a1,
                    error);
  }

  if (kind == RK_MEAN || kind == RK_L2 || kind == RK_LOG_SUM) {
    /* Sum (of squares) into a transient, then scale (or sqrt, or log). */
    WeirContainer *t = add_transient(g, n, "sum", dtype, yshape);
    WeirNode *t1 = weir_state_add_access(g, s, t->name);
    WeirNode *t2 = weir_state_add_access(g, s, t->name);
    WeirTaskletPort init_out = {t1, "t", ys.index, WEIR_WCR_NONE};
    WeirTaskletPort acc_out = {t2, "t", acc_index, WEIR_WCR_SUM};
    WeirTaskletPort fin_in = {t2, "t", ys.index, WEIR_WCR_NONE};
    WeirTaskletPort fin_out = {y.access, "y", ys.index, WEIR_WCR_NONE};
    g_autofree char *fin =
        kind == RK_MEAN
            ? g_strdup_printf("y = t / %s", count)
            : g_strdup(kind == RK_L2 ? "y = sqrt(t)" : "y = log(t)");
    return map_over(g, s, n, "init", &ys, NULL, 0, &init_out, 1, "t = 0", NULL,
                    error) &&
           map_over(g, s, n, "sum", &xs, &in_x, 1, &acc_out, 1,
                    kind == RK_L2 ? "t = x * x" : "t = x", t1, error) &&
           map_over(g, s, n,
                    kind == RK_MEAN ? "mean"
                    : kind == RK_L2 ? "sqrt"
                                    : "log",
                    &ys, &fin_in, 1, &fin_out, 1, fin, NULL, error);
  }

  g_assert(kind == RK_LOG_SUM_EXP);
  /* log(sum(exp(x - m))) + m with m the maximum (taken as 0 when it is
   * infinite, so that all -inf gives -inf and +inf gives +inf). */
  gboolean is_float = weir_dtype_is_float(dtype);
  WeirContainer *mc = add_transient(g, n, "max", dtype, yshape);
  WeirContainer *zc =
      add_transient(g, n, "sum", is_float ? dtype : WEIR_DTYPE_F64, yshape);
  WeirNode *m1 = weir_state_add_access(g, s, mc->name);
  WeirNode *m2 = weir_state_add_access(g, s, mc->name);
  WeirNode *z1 = weir_state_add_access(g, s, zc->name);
  WeirNode *z2 = weir_state_add_access(g, s, zc->name);
  WeirTaskletPort init_out[] = {{m1, "m", ys.index, WEIR_WCR_NONE},
                                {z1, "z", ys.index, WEIR_WCR_NONE}};
  g_autofree char *init =
      g_strdup_printf("m = %s\nz = 0", weir_expand_lowest_literal(dtype));
  WeirTaskletPort max_out = {m2, "m", acc_index, WEIR_WCR_MAX};
  WeirTaskletPort exp_in[] = {in_x, {m2, "m", acc_index, WEIR_WCR_NONE}};
  WeirTaskletPort exp_out = {z2, "z", acc_index, WEIR_WCR_SUM};
  WeirTaskletPort fin_in[] = {{m2, "m", ys.index, WEIR_WCR_NONE},
                              {z2, "z", ys.index, WEIR_WCR_NONE}};
  WeirTaskletPort fin_out = {y.access, "y", ys.index, WEIR_WCR_NONE};
  return map_over(g, s, n, "init", &ys, NULL, 0, init_out, 2, init, NULL,
                  error) &&
         map_over(g, s, n, "max", &xs, &in_x, 1, &max_out, 1, "m = x", m1,
                  error) &&
         map_over(g, s, n, "expsum", &xs, exp_in, 2, &exp_out, 1,
                  is_float ? "mm = isfinite(m) ? m : 0\nz = exp(x - mm)"
                           : "z = exp(x - m)",
                  z1, error) &&
         map_over(g, s, n, "log", &ys, fin_in, 2, &fin_out, 1,
                  is_float ? "mm = isfinite(m) ? m : 0\ny = log(z) + mm"
                           : "y = log(z) + m",
                  NULL, error);
}

/* Output 0 = input 0, element by element. */
static gboolean build_copy(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  WeirPort x, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error) ||
      !check_shape(n, 0, &y, x.rank, x.shape, error))
    return FALSE;
  g_auto(Space) xs;
  space_init(&xs, "i", x.rank, x.shape);
  WeirTaskletPort in = {x.access, "x", xs.index, WEIR_WCR_NONE};
  WeirTaskletPort out = {y.access, "y", xs.index, WEIR_WCR_NONE};
  return map_over(g, s, n, "copy", &xs, &in, 1, &out, 1, "y = x", NULL,
                  error) != NULL;
}

static gboolean expand_reduce(WeirGraph *g, WeirState *s, WeirNode *n,
                              GError **error) {
  ReduceKind kind = RK_SUM;
  gboolean found = FALSE;
  for (guint i = 0; i < G_N_ELEMENTS(reduce_ops) && !found; i++)
    if (g_strcmp0(n->op, reduce_ops[i].op) == 0) {
      kind = reduce_ops[i].kind;
      found = TRUE;
    }
  if (!found)
    return weir_node_fail(error, WEIR_ERROR_UNSUPPORTED, n, "not a reduction");
  if (weir_node_has_in_conn(n, "in1"))
    return weir_node_fail(
        error, WEIR_ERROR_UNSUPPORTED, n,
        "axes given as input 1; they must be the attribute 'axes'");
  WeirPort x;
  if (!weir_port_require_input(g, s, n, 0, &x, error))
    return FALSE;
  const GArray *axes = weir_node_attr_ints(n, "axes");
  g_autofree gboolean *reduced = g_new0(gboolean, x.rank + 1);
  if (!axes || axes->len == 0) {
    /* Empty axes: reduce everything, or copy with noop_with_empty_axes
     * (the output is the input, as the ONNX specification says). */
    if (weir_node_attr_int(n, "noop_with_empty_axes", 0))
      return build_copy(g, s, n, error) && weir_state_remove_node(s, n->id);
    for (guint d = 0; d < x.rank; d++)
      reduced[d] = TRUE;
  } else {
    for (guint i = 0; i < axes->len; i++) {
      guint d = 0;
      if (!normalize_axis(n, g_array_index(axes, gint64, i), x.rank, &d, error))
        return FALSE;
      if (reduced[d])
        return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                              "axis %u is given twice", d);
      reduced[d] = TRUE;
    }
  }
  return build_reduction(g, s, n, kind, reduced,
                         weir_node_attr_int(n, "keepdims", 1) != 0, error) &&
         weir_state_remove_node(s, n->id);
}

static gboolean expand_global_pool(WeirGraph *g, WeirState *s, WeirNode *n,
                                   GError **error) {
  WeirPort x;
  if (!weir_port_require_input(g, s, n, 0, &x, error))
    return FALSE;
  if (x.rank < 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 0 has rank %u, expected at least 2", x.rank);
  g_autofree gboolean *reduced = g_new0(gboolean, x.rank);
  for (guint d = 2; d < x.rank; d++)
    reduced[d] = TRUE;
  ReduceKind kind = strcmp(n->op, "GlobalMaxPool") == 0 ? RK_MAX : RK_MEAN;
  return build_reduction(g, s, n, kind, reduced, TRUE, error) &&
         weir_state_remove_node(s, n->id);
}

/* -------------------------------------------------------- ArgMax/ArgMin */

/* m = max (min) over the axis; then the index: the smallest (largest with
 * select_last_index) position where x == m, by a WCR min (max) over the
 * positions, the others contributing the identity. */
static gboolean expand_arg(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  gboolean is_max = strcmp(n->op, "ArgMax") == 0;
  WeirPort x, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error))
    return FALSE;
  if (x.rank == 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n, "input 0 is a scalar");
  guint axis = 0;
  if (!normalize_axis(n, weir_node_attr_int(n, "axis", 0), x.rank, &axis,
                      error))
    return FALSE;
  gboolean keepdims = weir_node_attr_int(n, "keepdims", 1) != 0;
  gboolean last = weir_node_attr_int(n, "select_last_index", 0) != 0;
  g_autofree gboolean *reduced = g_new0(gboolean, x.rank);
  reduced[axis] = TRUE;
  g_autoptr(GPtrArray) yshape = reduced_shape(&x, reduced, keepdims);
  g_autoptr(GPtrArray) mshape = reduced_shape(&x, reduced, TRUE);
  if (!check_shape(n, 0, &y, yshape->len, (WeirExpr *const *)yshape->pdata,
                   error))
    return FALSE;
  if (y.container->dtype != WEIR_DTYPE_I64)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "output 0 ('%s') has dtype %s, expected i64",
                          y.container->name,
                          weir_dtype_name(y.container->dtype));

  WeirDType dtype = x.container->dtype;
  g_auto(Space) xs, ys, ms;
  space_init(&xs, "i", x.rank, x.shape);
  space_init(&ys, "j", y.rank, y.shape);
  space_init(&ms, "j", mshape->len, (WeirExpr *const *)mshape->pdata);
  g_autofree char *m_index = reduced_index(&xs, reduced, TRUE);
  g_autofree char *y_index = reduced_index(&xs, reduced, keepdims);

  WeirContainer *mc =
      add_transient(g, n, is_max ? "max" : "min", dtype, mshape);
  WeirNode *m1 = weir_state_add_access(g, s, mc->name);
  WeirNode *m2 = weir_state_add_access(g, s, mc->name);
  WeirNode *y1 = weir_state_add_access(g, s, y.container->name);
  g_autofree char *m_init =
      g_strdup_printf("m = %s", is_max ? weir_expand_lowest_literal(dtype)
                                       : weir_expand_highest_literal(dtype));
  const char *none = last ? "-1" : "9223372036854775807";
  g_autofree char *y_init = g_strdup_printf("y = %s", none);
  g_autofree char *pick =
      g_strdup_printf("y = x == m ? %s : %s", xs.params[axis], none);

  WeirTaskletPort in_x = {x.access, "x", xs.index, WEIR_WCR_NONE};
  WeirTaskletPort m_init_out = {m1, "m", ms.index, WEIR_WCR_NONE};
  WeirTaskletPort m_out = {m2, "m", m_index,
                           is_max ? WEIR_WCR_MAX : WEIR_WCR_MIN};
  WeirTaskletPort y_init_out = {y1, "y", ys.index, WEIR_WCR_NONE};
  WeirTaskletPort pick_in[] = {in_x, {m2, "m", m_index, WEIR_WCR_NONE}};
  WeirTaskletPort pick_out = {y.access, "y", y_index,
                              last ? WEIR_WCR_MAX : WEIR_WCR_MIN};
  return map_over(g, s, n, "init", &ms, NULL, 0, &m_init_out, 1, m_init, NULL,
                  error) &&
         map_over(g, s, n, is_max ? "max" : "min", &xs, &in_x, 1, &m_out, 1,
                  "m = x", m1, error) &&
         map_over(g, s, n, "init_index", &ys, NULL, 0, &y_init_out, 1, y_init,
                  NULL, error) &&
         map_over(g, s, n, "index", &xs, pick_in, 2, &pick_out, 1, pick, y1,
                  error) &&
         weir_state_remove_node(s, n->id);
}

/* --------------------------------------------------- Softmax/LogSoftmax */

/* The operand x and result y of a Softmax-family node (Softmax,
 * LogSoftmax, Hardmax), and the axes it reduces: `axis`, or every axis from
 * `axis` on with legacy_2d (the forms before opset 13).  *reduced: x->rank
 * flags (transfer full). */
static gboolean softmax_axes(WeirGraph *g, WeirState *s, WeirNode *n,
                             WeirPort *x, WeirPort *y, gboolean **reduced,
                             GError **error) {
  if (!weir_port_require_input(g, s, n, 0, x, error) ||
      !weir_port_require_output(g, s, n, 0, y, error) ||
      !check_shape(n, 0, y, x->rank, x->shape, error))
    return FALSE;
  if (x->rank == 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n, "input 0 is a scalar");
  guint axis = 0;
  if (!normalize_axis(n, weir_node_attr_int(n, "axis", -1), x->rank, &axis,
                      error))
    return FALSE;
  gboolean legacy = weir_node_attr_int(n, "legacy_2d", 0) != 0;
  *reduced = g_new0(gboolean, x->rank);
  for (guint d = axis; d < (legacy ? x->rank : axis + 1); d++)
    (*reduced)[d] = TRUE;
  return TRUE;
}

/* Over the reduced axes (`axis`, or every axis from `axis` on with
 * legacy_2d): m = max(x); z = sum(exp(x - m)); Softmax y = exp(x - m) / z
 * (the exponentials kept in a transient), LogSoftmax y = x - m - log(z). */
static gboolean expand_softmax(WeirGraph *g, WeirState *s, WeirNode *n,
                               GError **error) {
  gboolean is_log = strcmp(n->op, "LogSoftmax") == 0;
  WeirPort x, y;
  g_autofree gboolean *reduced = NULL;
  if (!softmax_axes(g, s, n, &x, &y, &reduced, error))
    return FALSE;

  WeirDType dtype = x.container->dtype;
  g_autoptr(GPtrArray) kshape = reduced_shape(&x, reduced, TRUE);
  g_auto(Space) xs, ks;
  space_init(&xs, "i", x.rank, x.shape);
  space_init(&ks, "j", kshape->len, (WeirExpr *const *)kshape->pdata);
  g_autofree char *k_index = reduced_index(&xs, reduced, TRUE);

  WeirContainer *mc = add_transient(g, n, "max", dtype, kshape);
  WeirContainer *zc = add_transient(g, n, "sum", dtype, kshape);
  WeirNode *m1 = weir_state_add_access(g, s, mc->name);
  WeirNode *m2 = weir_state_add_access(g, s, mc->name);
  WeirNode *z1 = weir_state_add_access(g, s, zc->name);
  WeirNode *z2 = weir_state_add_access(g, s, zc->name);

  WeirTaskletPort in_x = {x.access, "x", xs.index, WEIR_WCR_NONE};
  WeirTaskletPort init_out[] = {{m1, "m", ks.index, WEIR_WCR_NONE},
                                {z1, "z", ks.index, WEIR_WCR_NONE}};
  WeirTaskletPort max_out = {m2, "m", k_index, WEIR_WCR_MAX};
  WeirTaskletPort in_m = {m2, "m", k_index, WEIR_WCR_NONE};
  WeirTaskletPort in_z = {z2, "z", k_index, WEIR_WCR_NONE};
  WeirTaskletPort exp_in[] = {in_x, in_m};
  WeirTaskletPort out_y = {y.access, "y", xs.index, WEIR_WCR_NONE};
  if (!map_over(g, s, n, "init", &ks, NULL, 0, init_out, 2, "m = -1e999\nz = 0",
                NULL, error) ||
      !map_over(g, s, n, "max", &xs, &in_x, 1, &max_out, 1, "m = x", m1, error))
    return FALSE;
  if (is_log) {
    WeirTaskletPort exp_out = {z2, "z", k_index, WEIR_WCR_SUM};
    WeirTaskletPort norm_in[] = {in_x, in_m, in_z};
    if (!map_over(g, s, n, "expsum", &xs, exp_in, 2, &exp_out, 1,
                  "z = exp(x - m)", z1, error) ||
        !map_over(g, s, n, "normalize", &xs, norm_in, 3, &out_y, 1,
                  "y = x - m - log(z)", NULL, error))
      return FALSE;
  } else {
    g_autofree char *ebase = weir_expand_name(n, "exp");
    WeirContainer *ec =
        weir_expand_add_transient(g, ebase, dtype, x.rank, x.shape);
    WeirNode *e = weir_state_add_access(g, s, ec->name);
    WeirTaskletPort exp_out[] = {{e, "ev", xs.index, WEIR_WCR_NONE},
                                 {z2, "z", k_index, WEIR_WCR_SUM}};
    WeirTaskletPort norm_in[] = {{e, "ev", xs.index, WEIR_WCR_NONE}, in_z};
    if (!map_over(g, s, n, "expsum", &xs, exp_in, 2, exp_out, 2,
                  "e = exp(x - m)\nev = e\nz = e", z1, error) ||
        !map_over(g, s, n, "normalize", &xs, norm_in, 2, &out_y, 1,
                  "y = ev / z", NULL, error))
      return FALSE;
  }
  return weir_state_remove_node(s, n->id);
}

/* -------------------------------------------------------------- Hardmax */

/* 1 at the first maximum over the reduced axes (`axis`, or every axis from
 * `axis` on with legacy_2d, in row-major order), 0 elsewhere: m = max(x);
 * f = the smallest row-major position k among the reduced axes where
 * x == m (WCR min); y = k == f. */
static gboolean expand_hardmax(WeirGraph *g, WeirState *s, WeirNode *n,
                               GError **error) {
  WeirPort x, y;
  g_autofree gboolean *reduced = NULL;
  if (!softmax_axes(g, s, n, &x, &y, &reduced, error))
    return FALSE;
  WeirDType dtype = x.container->dtype;
  g_autoptr(GPtrArray) kshape = reduced_shape(&x, reduced, TRUE);
  g_auto(Space) xs, ks;
  space_init(&xs, "i", x.rank, x.shape);
  space_init(&ks, "j", kshape->len, (WeirExpr *const *)kshape->pdata);
  g_autofree char *k_index = reduced_index(&xs, reduced, TRUE);
  /* The row-major position among the reduced axes, as tasklet text. */
  g_autoptr(WeirExpr) pos = weir_expr_const(0);
  for (guint d = 0; d < x.rank; d++) {
    if (!reduced[d])
      continue;
    g_autoptr(WeirExpr) scaled = weir_expr_mul(pos, x.shape[d]);
    g_autoptr(WeirExpr) p = weir_expr_symbol(xs.params[d]);
    weir_expr_unref(pos);
    pos = weir_expr_add(scaled, p);
  }
  g_autofree char *pos_code = weir_expand_expr_code(pos);

  WeirContainer *mc = add_transient(g, n, "max", dtype, kshape);
  WeirContainer *fc = add_transient(g, n, "first", WEIR_DTYPE_I64, kshape);
  WeirNode *m1 = weir_state_add_access(g, s, mc->name);
  WeirNode *m2 = weir_state_add_access(g, s, mc->name);
  WeirNode *f1 = weir_state_add_access(g, s, fc->name);
  WeirNode *f2 = weir_state_add_access(g, s, fc->name);
  WeirTaskletPort in_x = {x.access, "x", xs.index, WEIR_WCR_NONE};
  WeirTaskletPort init_out[] = {{m1, "m", ks.index, WEIR_WCR_NONE},
                                {f1, "f", ks.index, WEIR_WCR_NONE}};
  WeirTaskletPort max_out = {m2, "m", k_index, WEIR_WCR_MAX};
  WeirTaskletPort pick_in[] = {in_x, {m2, "m", k_index, WEIR_WCR_NONE}};
  WeirTaskletPort pick_out = {f2, "f", k_index, WEIR_WCR_MIN};
  WeirTaskletPort out_in = {f2, "f", k_index, WEIR_WCR_NONE};
  WeirTaskletPort out_y = {y.access, "y", xs.index, WEIR_WCR_NONE};
  g_autofree char *init = g_strdup_printf("m = %s\nf = 9223372036854775807",
                                          weir_expand_lowest_literal(dtype));
  g_autofree char *pick =
      g_strdup_printf("f = x == m ? %s : 9223372036854775807", pos_code);
  g_autofree char *out = g_strdup_printf("y = %s == f ? 1 : 0", pos_code);
  return map_over(g, s, n, "init", &ks, NULL, 0, init_out, 2, init, NULL,
                  error) &&
         map_over(g, s, n, "max", &xs, &in_x, 1, &max_out, 1, "m = x", m1,
                  error) &&
         map_over(g, s, n, "first", &xs, pick_in, 2, &pick_out, 1, pick, f1,
                  error) &&
         map_over(g, s, n, "onehot", &xs, &out_in, 1, &out_y, 1, out, NULL,
                  error) &&
         weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------------------------ LRN */

/* s[n, c, ...] = the sum of x^2 over the channels c - floor((size-1)/2) ..
 * c + ceil((size-1)/2) that exist (a map over (x, j) with j over the
 * window, reading the channel clamped and contributing 0 outside); then
 * y = x / (bias + alpha / size * s)^beta. */
static gboolean expand_lrn(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  WeirPort x, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error) ||
      !check_shape(n, 0, &y, x.rank, x.shape, error))
    return FALSE;
  gint64 size = weir_node_attr_int(n, "size", 0);
  if (x.rank < 2 || size < 1)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input of rank >= 2 and a positive size needed");
  guint r = x.rank;
  WeirDType dtype = x.container->dtype;
  g_auto(GStrv) p = weir_expand_fresh_params(g, r + 1);
  g_autofree char *at = weir_expand_index_subset(r, (const char *const *)p);
  g_autoptr(GPtrArray) wshape =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint d = 0; d < r; d++)
    g_ptr_array_add(wshape, weir_expr_ref(x.shape[d]));
  g_ptr_array_add(wshape, weir_expr_const(size));
  g_auto(GStrv) ranges = weir_expand_full_ranges(r, x.shape);
  g_auto(GStrv) wranges =
      weir_expand_full_ranges(r + 1, (WeirExpr *const *)wshape->pdata);
  g_autoptr(GPtrArray) sshape =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint d = 0; d < r; d++)
    g_ptr_array_add(sshape, weir_expr_ref(x.shape[d]));
  WeirContainer *sc = add_transient(g, n, "sqsum", dtype, sshape);
  WeirNode *s1 = weir_state_add_access(g, s, sc->name);
  WeirNode *s2 = weir_state_add_access(g, s, sc->name);
  g_autofree char *label_init = g_strdup_printf("%s_init", n->label);
  g_autofree char *label_win = g_strdup_printf("%s_window", n->label);
  g_autofree char *label_out = g_strdup_printf("%s_normalize", n->label);
  WeirTaskletPort init_out = {s1, "s", at, WEIR_WCR_NONE};
  if (!weir_expand_map(g, s, label_init, r, (const char *const *)p,
                       (const char *const *)ranges, NULL, 0, &init_out, 1,
                       "s = 0", NULL, 0, error))
    return FALSE;
  /* x[i0, 0:C, i2, ...] read at the clamped channel */
  g_autofree char *cdim = weir_expr_to_string(x.shape[1]);
  g_autofree char *ccode = weir_expand_expr_code(x.shape[1]);
  g_autoptr(GString) xsub = g_string_new(NULL);
  g_autoptr(GString) read = g_string_new("x[");
  for (guint d = 0; d < r; d++) {
    const char *sep = d ? ", " : "";
    if (d == 1) {
      g_string_append_printf(xsub, "%s0:%s", sep, cdim);
      g_string_append_printf(read, "%smin(max(c, 0), %s - 1)", sep, ccode);
    } else {
      g_string_append_printf(xsub, "%s%s", sep, p[d]);
      g_string_append_printf(read, "%s0", sep);
    }
  }
  g_string_append(read, "]");
  gint64 lo = (size - 1) / 2;
  g_autofree char *wcode = g_strdup_printf(
      "c = %s - %" G_GINT64_FORMAT " + %s\nv = %s\n"
      "s = c >= 0 && c < %s ? v * v : 0",
      p[1], lo, p[r], is_const_value(x.shape[1], 1) ? "x" : read->str, ccode);
  WeirTaskletPort win_in = {x.access, "x", xsub->str, WEIR_WCR_NONE};
  WeirTaskletPort win_out = {s2, "s", at, WEIR_WCR_SUM};
  if (!weir_expand_map(g, s, label_win, r + 1, (const char *const *)p,
                       (const char *const *)wranges, &win_in, 1, &win_out, 1,
                       wcode, &s1, 1, error))
    return FALSE;
  g_autofree char *bias =
      weir_expand_float_literal(weir_node_attr_float(n, "bias", 1.0));
  g_autofree char *scale = weir_expand_float_literal(
      weir_node_attr_float(n, "alpha", 1e-4) / (double)size);
  g_autofree char *beta =
      weir_expand_float_literal(weir_node_attr_float(n, "beta", 0.75));
  g_autofree char *ocode =
      g_strdup_printf("y = x / pow(%s + %s * s, %s)", bias, scale, beta);
  WeirTaskletPort out_in[2] = {{x.access, "x", at, WEIR_WCR_NONE},
                               {s2, "s", at, WEIR_WCR_NONE}};
  WeirTaskletPort out = {y.access, "y", at, WEIR_WCR_NONE};
  if (!weir_expand_map(g, s, label_out, r, (const char *const *)p,
                       (const char *const *)ranges, out_in, 2, &out, 1, ocode,
                       NULL, 0, error))
    return FALSE;
  return weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------ InstanceNormalization */

/* Per (n, c) over the spatial dimensions: m = sum(x) / count;
 * v = sum((x - m)^2); inv = 1 / sqrt(v / count + epsilon);
 * y = (x - m) * inv * scale[c] + B[c]. */
static gboolean expand_instancenorm(WeirGraph *g, WeirState *s, WeirNode *n,
                                    GError **error) {
  WeirPort x, sc, b, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_input(g, s, n, 1, &sc, error) ||
      !weir_port_require_input(g, s, n, 2, &b, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error) ||
      !check_shape(n, 0, &y, x.rank, x.shape, error))
    return FALSE;
  if (x.rank < 2)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "input 0 has rank %u, expected at least 2", x.rank);
  WeirDType dtype = x.container->dtype;
  g_autofree gboolean *reduced = g_new0(gboolean, x.rank);
  for (guint d = 2; d < x.rank; d++)
    reduced[d] = TRUE;
  g_autoptr(GPtrArray) kshape = reduced_shape(&x, reduced, FALSE);
  g_auto(Space) xs, ks;
  space_init(&xs, "i", x.rank, x.shape);
  space_init(&ks, "j", kshape->len, (WeirExpr *const *)kshape->pdata);
  g_autofree char *k_index = reduced_index(&xs, reduced, FALSE);
  g_autofree char *count = reduced_count(&x, reduced);
  g_autofree char *eps =
      weir_expand_float_literal(weir_node_attr_float(n, "epsilon", 1e-5));
  space_kept_first(&xs, reduced);
  WeirContainer *sumc = add_transient(g, n, "sum", dtype, kshape);
  WeirContainer *meanc = add_transient(g, n, "mean", dtype, kshape);
  WeirContainer *varc = add_transient(g, n, "var", dtype, kshape);
  WeirContainer *invc = add_transient(g, n, "inv", dtype, kshape);
  WeirNode *s1 = weir_state_add_access(g, s, sumc->name);
  WeirNode *s2 = weir_state_add_access(g, s, sumc->name);
  WeirNode *m = weir_state_add_access(g, s, meanc->name);
  WeirNode *v1 = weir_state_add_access(g, s, varc->name);
  WeirNode *v2 = weir_state_add_access(g, s, varc->name);
  WeirNode *iv = weir_state_add_access(g, s, invc->name);
  WeirTaskletPort in_x = {x.access, "x", xs.index, WEIR_WCR_NONE};
  WeirTaskletPort init_out[] = {{s1, "s", ks.index, WEIR_WCR_NONE},
                                {v1, "v", ks.index, WEIR_WCR_NONE}};
  WeirTaskletPort sum_out = {s2, "s", k_index, WEIR_WCR_SUM};
  WeirTaskletPort mean_in = {s2, "s", ks.index, WEIR_WCR_NONE};
  WeirTaskletPort mean_out = {m, "m", ks.index, WEIR_WCR_NONE};
  WeirTaskletPort dev_in[] = {in_x, {m, "m", k_index, WEIR_WCR_NONE}};
  WeirTaskletPort dev_out = {v2, "v", k_index, WEIR_WCR_SUM};
  WeirTaskletPort inv_in = {v2, "v", ks.index, WEIR_WCR_NONE};
  WeirTaskletPort inv_out = {iv, "inv", ks.index, WEIR_WCR_NONE};
  WeirTaskletPort norm_in[] = {
      in_x,
      {m, "m", k_index, WEIR_WCR_NONE},
      {iv, "inv", k_index, WEIR_WCR_NONE},
      {sc.access, "scale", xs.params[1], WEIR_WCR_NONE},
      {b.access, "b", xs.params[1], WEIR_WCR_NONE}};
  WeirTaskletPort norm_out = {y.access, "y", xs.index, WEIR_WCR_NONE};
  /* the map over x indexes the channel by its own parameter name */
  for (guint d = 0; d < x.rank; d++)
    if (strcmp(xs.params[d], "i1") == 0)
      norm_in[3].subset = norm_in[4].subset = xs.params[d];
  g_autofree char *mean_code = g_strdup_printf("m = s / %s", count);
  g_autofree char *inv_code =
      g_strdup_printf("inv = 1 / sqrt(v / %s + %s)", count, eps);
  WeirNode *after[] = {v1};
  return map_over(g, s, n, "init", &ks, NULL, 0, init_out, 2, "s = 0\nv = 0",
                  NULL, error) &&
         map_over(g, s, n, "sum", &xs, &in_x, 1, &sum_out, 1, "s = x", s1,
                  error) &&
         map_over(g, s, n, "mean", &ks, &mean_in, 1, &mean_out, 1, mean_code,
                  NULL, error) &&
         map_over(g, s, n, "dev", &xs, dev_in, 2, &dev_out, 1,
                  "d = x - m\nv = d * d", after[0], error) &&
         map_over(g, s, n, "inv", &ks, &inv_in, 1, &inv_out, 1, inv_code, NULL,
                  error) &&
         map_over(g, s, n, "normalize", &xs, norm_in, 5, &norm_out, 1,
                  "y = (x - m) * inv * scale + b", NULL, error) &&
         weir_state_remove_node(s, n->id);
}

/* -------------------------------------------- MeanVarianceNormalization */

/* Over `axes`: m = mean(x), e = mean(x^2); y = (x - m) / (sqrt(e - m^2) +
 * 1e-9), as ONNX's function body computes it. */
static gboolean expand_mvn(WeirGraph *g, WeirState *s, WeirNode *n,
                           GError **error) {
  WeirPort x, y;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error) ||
      !check_shape(n, 0, &y, x.rank, x.shape, error))
    return FALSE;
  g_autofree gboolean *reduced = g_new0(gboolean, x.rank + 1);
  const GArray *axes = weir_node_attr_ints(n, "axes");
  for (guint i = 0; axes && i < axes->len; i++) {
    guint a = 0;
    if (!normalize_axis(n, g_array_index(axes, gint64, i), x.rank, &a, error))
      return FALSE;
    reduced[a] = TRUE;
  }
  WeirDType dtype = x.container->dtype;
  g_autoptr(GPtrArray) kshape = reduced_shape(&x, reduced, TRUE);
  g_auto(Space) xs, ks;
  space_init(&xs, "i", x.rank, x.shape);
  space_init(&ks, "j", kshape->len, (WeirExpr *const *)kshape->pdata);
  g_autofree char *k_index = reduced_index(&xs, reduced, TRUE);
  g_autofree char *count = reduced_count(&x, reduced);
  space_kept_first(&xs, reduced);
  WeirContainer *sumc = add_transient(g, n, "sum", dtype, kshape);
  WeirContainer *sqc = add_transient(g, n, "sumsq", dtype, kshape);
  WeirNode *s1 = weir_state_add_access(g, s, sumc->name);
  WeirNode *s2 = weir_state_add_access(g, s, sumc->name);
  WeirNode *q1 = weir_state_add_access(g, s, sqc->name);
  WeirNode *q2 = weir_state_add_access(g, s, sqc->name);
  WeirTaskletPort in_x = {x.access, "x", xs.index, WEIR_WCR_NONE};
  WeirTaskletPort init_out[] = {{s1, "s", ks.index, WEIR_WCR_NONE},
                                {q1, "q", ks.index, WEIR_WCR_NONE}};
  WeirTaskletPort sum_out[] = {{s2, "s", k_index, WEIR_WCR_SUM},
                               {q2, "q", k_index, WEIR_WCR_SUM}};
  WeirTaskletPort norm_in[] = {in_x,
                               {s2, "s", k_index, WEIR_WCR_NONE},
                               {q2, "q", k_index, WEIR_WCR_NONE}};
  WeirTaskletPort norm_out = {y.access, "y", xs.index, WEIR_WCR_NONE};
  g_autofree char *norm = g_strdup_printf(
      "m = s / %s\nvar = q / %s - m * m\ny = (x - m) / (sqrt(var) + 1e-09)",
      count, count);
  g_autofree char *label = g_strdup_printf("%s_sums", n->label);
  WeirNode *after[] = {s1, q1};
  return map_over(g, s, n, "init", &ks, NULL, 0, init_out, 2, "s = 0\nq = 0",
                  NULL, error) &&
         weir_expand_map(g, s, label, xs.rank, (const char *const *)xs.params,
                         (const char *const *)xs.ranges, &in_x, 1, sum_out, 2,
                         "s = x\nq = x * x", after, 2, error) &&
         map_over(g, s, n, "normalize", &xs, norm_in, 3, &norm_out, 1, norm,
                  NULL, error) &&
         weir_state_remove_node(s, n->id);
}

/* ------------------------------------------------ DynamicQuantizeLinear */

/* lo = min(0, min(x)), hi = max(0, max(x)) (accumulators initialized to 0,
 * WCR min and max); then one tasklet: scale = (hi - lo) / 255, zero point
 * = rint(saturate(-lo / scale)); then y = saturate(rint(x / scale) +
 * zero point) over x, saturation to [0, 255]. */
static gboolean expand_dynamic_quantize(WeirGraph *g, WeirState *s, WeirNode *n,
                                        GError **error) {
  WeirPort x, y, ys, yz;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error) ||
      !weir_port_require_output(g, s, n, 1, &ys, error) ||
      !weir_port_require_output(g, s, n, 2, &yz, error) ||
      !check_shape(n, 0, &y, x.rank, x.shape, error))
    return FALSE;
  if (ys.rank != 0 || yz.rank != 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "outputs 1 and 2 must be scalars");
  g_autoptr(GPtrArray) none =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  WeirContainer *loc = add_transient(g, n, "lo", x.container->dtype, none);
  WeirContainer *hic = add_transient(g, n, "hi", x.container->dtype, none);
  WeirNode *lo1 = weir_state_add_access(g, s, loc->name);
  WeirNode *lo2 = weir_state_add_access(g, s, loc->name);
  WeirNode *hi1 = weir_state_add_access(g, s, hic->name);
  WeirNode *hi2 = weir_state_add_access(g, s, hic->name);
  g_auto(Space) xs;
  space_init(&xs, "i", x.rank, x.shape);
  g_autofree char *l_init = g_strdup_printf("%s_init", n->label);
  g_autofree char *l_range = g_strdup_printf("%s_range", n->label);
  g_autofree char *l_params = g_strdup_printf("%s_params", n->label);
  g_autofree char *l_quant = g_strdup_printf("%s_quantize", n->label);
  WeirTaskletPort init_out[] = {{lo1, "lo", NULL, WEIR_WCR_NONE},
                                {hi1, "hi", NULL, WEIR_WCR_NONE}};
  WeirTaskletPort in_x = {x.access, "x", xs.index, WEIR_WCR_NONE};
  WeirTaskletPort range_out[] = {{lo2, "lo", NULL, WEIR_WCR_MIN},
                                 {hi2, "hi", NULL, WEIR_WCR_MAX}};
  WeirTaskletPort par_in[] = {{lo2, "lo", NULL, WEIR_WCR_NONE},
                              {hi2, "hi", NULL, WEIR_WCR_NONE}};
  WeirTaskletPort par_out[] = {{ys.access, "s", NULL, WEIR_WCR_NONE},
                               {yz.access, "z", NULL, WEIR_WCR_NONE}};
  WeirTaskletPort q_in[] = {in_x,
                            {ys.access, "s", NULL, WEIR_WCR_NONE},
                            {yz.access, "z", NULL, WEIR_WCR_NONE}};
  WeirTaskletPort q_out = {y.access, "y", xs.index, WEIR_WCR_NONE};
  WeirNode *after[] = {lo1, hi1};
  return weir_expand_map(g, s, l_init, 0, NULL, NULL, NULL, 0, init_out, 2,
                         "lo = 0\nhi = 0", NULL, 0, error) &&
         weir_expand_map(g, s, l_range, xs.rank, (const char *const *)xs.params,
                         (const char *const *)xs.ranges, &in_x, 1, range_out, 2,
                         "lo = x\nhi = x", after, 2, error) &&
         weir_expand_map(g, s, l_params, 0, NULL, NULL, par_in, 2, par_out, 2,
                         "sc = (hi - lo) / 255\ns = sc\n"
                         "z = rint(min(max(-lo / sc, 0), 255))",
                         NULL, 0, error) &&
         weir_expand_map(g, s, l_quant, xs.rank, (const char *const *)xs.params,
                         (const char *const *)xs.ranges, q_in, 3, &q_out, 1,
                         "y = min(max(rint(x / s) + z, 0), 255)", NULL, 0,
                         error) &&
         weir_state_remove_node(s, n->id);
}

/* --------------------------------------------------- LayerNormalization */

/* Over the axes from `axis` on: a = sum(x); b = sum((x - a/n)^2);
 * mean = a/n, inv = 1/sqrt(b/n + epsilon) (also written to the optional
 * outputs Mean and InvStdDev); y = (x - mean) * inv * scale + bias.  The
 * statistics are computed in X's dtype: stash_type only sets the dtype of
 * the Mean and InvStdDev outputs. */
static gboolean expand_layernorm(WeirGraph *g, WeirState *s, WeirNode *n,
                                 GError **error) {
  WeirPort x, sc, b, y, mean_out, inv_out;
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_input(g, s, n, 1, &sc, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error) ||
      !check_shape(n, 0, &y, x.rank, x.shape, error))
    return FALSE;
  g_autoptr(GError) local = NULL;
  gboolean has_b = weir_port_input(g, s, n, 2, &b, &local);
  gboolean has_mean = !local && weir_port_output(g, s, n, 1, &mean_out, &local);
  gboolean has_inv = !local && weir_port_output(g, s, n, 2, &inv_out, &local);
  if (local) {
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
  }
  if (x.rank == 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n, "input 0 is a scalar");
  guint axis = 0;
  if (!normalize_axis(n, weir_node_attr_int(n, "axis", -1), x.rank, &axis,
                      error))
    return FALSE;
  if (sc.rank > x.rank || (has_b && b.rank > x.rank))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "Scale or B has a higher rank than X");
  const WeirAttr *eps_attr = weir_node_attr(n, "epsilon");
  double eps =
      eps_attr && eps_attr->type == WEIR_ATTR_FLOAT ? eps_attr->f : 1e-5;
  g_autofree gboolean *reduced = g_new0(gboolean, x.rank);
  for (guint d = axis; d < x.rank; d++)
    reduced[d] = TRUE;
  g_autoptr(GPtrArray) kshape = reduced_shape(&x, reduced, TRUE);
  if ((has_mean && !check_shape(n, 1, &mean_out, kshape->len,
                                (WeirExpr *const *)kshape->pdata, error)) ||
      (has_inv && !check_shape(n, 2, &inv_out, kshape->len,
                               (WeirExpr *const *)kshape->pdata, error)))
    return FALSE;

  WeirDType dtype = x.container->dtype;
  g_auto(Space) xs, ks;
  space_init(&xs, "i", x.rank, x.shape);
  space_init(&ks, "j", kshape->len, (WeirExpr *const *)kshape->pdata);
  g_autofree char *k_index = reduced_index(&xs, reduced, TRUE);
  g_autofree char *count = reduced_count(&x, reduced);
  g_autofree char *eps_text = weir_expand_float_literal(eps);

  WeirContainer *ac = add_transient(g, n, "sum", dtype, kshape);
  WeirContainer *bc = add_transient(g, n, "sumsq", dtype, kshape);
  WeirContainer *mc = add_transient(g, n, "mean", dtype, kshape);
  WeirContainer *ic = add_transient(g, n, "invstd", dtype, kshape);
  WeirNode *a1 = weir_state_add_access(g, s, ac->name);
  WeirNode *a2 = weir_state_add_access(g, s, ac->name);
  WeirNode *b1 = weir_state_add_access(g, s, bc->name);
  WeirNode *b2 = weir_state_add_access(g, s, bc->name);
  WeirNode *mn = weir_state_add_access(g, s, mc->name);
  WeirNode *in = weir_state_add_access(g, s, ic->name);

  WeirTaskletPort in_x = {x.access, "x", xs.index, WEIR_WCR_NONE};
  WeirTaskletPort init_out[] = {{a1, "a", ks.index, WEIR_WCR_NONE},
                                {b1, "b", ks.index, WEIR_WCR_NONE}};
  WeirTaskletPort sum_out = {a2, "a", k_index, WEIR_WCR_SUM};
  WeirTaskletPort var_in[] = {in_x, {a2, "a", k_index, WEIR_WCR_NONE}};
  WeirTaskletPort var_out = {b2, "b", k_index, WEIR_WCR_SUM};
  WeirTaskletPort stat_in[] = {{a2, "a", ks.index, WEIR_WCR_NONE},
                               {b2, "b", ks.index, WEIR_WCR_NONE}};
  WeirTaskletPort stat_out[4] = {{mn, "mean", ks.index, WEIR_WCR_NONE},
                                 {in, "inv", ks.index, WEIR_WCR_NONE}};
  guint n_stat_out = 2;
  GString *stat = g_string_new(NULL);
  g_string_append_printf(stat,
                         "mu = a / %s\nis = 1 / sqrt(b / %s + %s)\n"
                         "mean = mu\ninv = is",
                         count, count, eps_text);
  if (has_mean) {
    stat_out[n_stat_out++] =
        (WeirTaskletPort){mean_out.access, "mean_out", ks.index, WEIR_WCR_NONE};
    g_string_append(stat, "\nmean_out = mu");
  }
  if (has_inv) {
    stat_out[n_stat_out++] =
        (WeirTaskletPort){inv_out.access, "inv_out", ks.index, WEIR_WCR_NONE};
    g_string_append(stat, "\ninv_out = is");
  }
  g_autofree char *stat_code = g_string_free(stat, FALSE);
  g_autofree char *var_code =
      g_strdup_printf("d = x - a / %s\nb = d * d", count);

  g_autofree char *sc_index = weir_expand_broadcast_subset(
      sc.rank, sc.shape, x.rank, (const char *const *)xs.params);
  g_autofree char *b_index =
      has_b ? weir_expand_broadcast_subset(b.rank, b.shape, x.rank,
                                           (const char *const *)xs.params)
            : NULL;
  WeirTaskletPort norm_in[] = {
      in_x,
      {mn, "mean", k_index, WEIR_WCR_NONE},
      {in, "inv", k_index, WEIR_WCR_NONE},
      {sc.access, "scale", sc_index, WEIR_WCR_NONE},
      {has_b ? b.access : NULL, "bias", b_index, WEIR_WCR_NONE},
  };
  WeirTaskletPort out_y = {y.access, "y", xs.index, WEIR_WCR_NONE};
  return map_over(g, s, n, "init", &ks, NULL, 0, init_out, 2, "a = 0\nb = 0",
                  NULL, error) &&
         map_over(g, s, n, "sum", &xs, &in_x, 1, &sum_out, 1, "a = x", a1,
                  error) &&
         map_over(g, s, n, "var", &xs, var_in, 2, &var_out, 1, var_code, b1,
                  error) &&
         map_over(g, s, n, "stats", &ks, stat_in, 2, stat_out, n_stat_out,
                  stat_code, NULL, error) &&
         map_over(g, s, n, "normalize", &xs, norm_in, has_b ? 5 : 4, &out_y, 1,
                  has_b ? "y = (x - mean) * inv * scale + bias"
                        : "y = (x - mean) * inv * scale",
                  NULL, error) &&
         weir_state_remove_node(s, n->id);
}

/* ---------------------------------------------------- MaxPool/AveragePool */

/* One spatial dimension of a pooling window. */
typedef struct {
  WeirExpr *in, *out; /* input and output sizes (borrowed) */
  gint64 k, stride, dil;
  WeirExpr *pb, *pe; /* padding at the beginning / end (owned) */
  /* The padding as tasklet text: constants, or locals pb<d> / pe<d>
   * defined by the statements in `locals` (symbolic SAME padding). */
  char *pb_text, *pe_text, *locals;
  gboolean inside; /* every window tap is in bounds */
} PoolDim;

static gint64 pool_int(const WeirNode *n, const char *name, guint i,
                       gint64 dflt) {
  const GArray *a = weir_node_attr_ints(n, name);
  return a && i < a->len ? g_array_index(a, gint64, i) : dflt;
}

/* Fills dims (m of them) from the attributes and the input/output shapes:
 * explicit pads (NOTSET), none (VALID), or the SAME_* split of the total
 * padding (out - 1) * stride + extent - in. */
static gboolean pool_dims(const WeirNode *n, const WeirPort *x,
                          const WeirPort *y, guint m, PoolDim *dims,
                          GError **error) {
  const GArray *kernel = weir_node_attr_ints(n, "kernel_shape");
  if (!kernel || kernel->len != m)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "attribute 'kernel_shape' has %u values, expected %u",
                          kernel ? kernel->len : 0, m);
  const WeirAttr *ap = weir_node_attr(n, "auto_pad");
  const char *auto_pad = ap && ap->type == WEIR_ATTR_STRING ? ap->s : "NOTSET";
  gboolean upper = strcmp(auto_pad, "SAME_UPPER") == 0;
  gboolean lower = strcmp(auto_pad, "SAME_LOWER") == 0;
  gboolean valid = strcmp(auto_pad, "VALID") == 0;
  if (!upper && !lower && !valid && strcmp(auto_pad, "NOTSET") != 0)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n, "unknown auto_pad '%s'",
                          auto_pad);
  for (guint d = 0; d < m; d++) {
    PoolDim *p = &dims[d];
    p->in = x->shape[2 + d];
    p->out = y->shape[2 + d];
    p->k = g_array_index(kernel, gint64, d);
    p->stride = pool_int(n, "strides", d, 1);
    p->dil = pool_int(n, "dilations", d, 1);
    if (p->k < 1 || p->stride < 1 || p->dil < 1)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "kernel, stride and dilation must be positive "
                            "(dimension %u)",
                            d);
    gint64 extent = (p->k - 1) * p->dil + 1;
    if (upper || lower) {
      g_autoptr(WeirExpr) last = weir_expr_add_const(p->out, -1);
      g_autoptr(WeirExpr) span = weir_expr_mul_const(last, p->stride);
      g_autoptr(WeirExpr) need = weir_expr_add_const(span, extent);
      g_autoptr(WeirExpr) diff = weir_expr_sub(need, p->in);
      g_autoptr(WeirExpr) zero = weir_expr_const(0);
      g_autoptr(WeirExpr) total = weir_expr_max(diff, zero);
      g_autoptr(WeirExpr) two = weir_expr_const(2);
      g_autoptr(WeirExpr) half = weir_expr_floordiv(total, two);
      p->pb = upper ? weir_expr_ref(half) : weir_expr_sub(total, half);
      p->pe = weir_expr_sub(total, p->pb);
    } else {
      p->pb = weir_expr_const(valid ? 0 : pool_int(n, "pads", d, 0));
      p->pe = weir_expr_const(valid ? 0 : pool_int(n, "pads", d + m, 0));
    }
    /* In bounds when pb == 0 and the last tap (out-1)*stride + extent-1
     * is below in. */
    gint64 v;
    g_autoptr(WeirExpr) last = weir_expr_add_const(p->out, -1);
    g_autoptr(WeirExpr) span = weir_expr_mul_const(last, p->stride);
    g_autoptr(WeirExpr) end = weir_expr_add_const(span, extent);
    g_autoptr(WeirExpr) slack = weir_expr_sub(p->in, end);
    p->inside = weir_expr_is_const(p->pb, &v) && v == 0 &&
                weir_expr_is_const(slack, &v) && v >= 0;
    gint64 pbv, pev;
    if (weir_expr_is_const(p->pb, &pbv) && weir_expr_is_const(p->pe, &pev)) {
      p->pb_text = g_strdup_printf("%" G_GINT64_FORMAT, pbv);
      p->pe_text = g_strdup_printf("%" G_GINT64_FORMAT, pev);
      p->locals = g_strdup("");
    } else {
      /* Only SAME padding is symbolic; the total is >= 0, so '/' is a
       * floor division here. */
      g_autofree char *out_code = weir_expand_expr_code(p->out);
      g_autofree char *in_code = weir_expand_expr_code(p->in);
      p->pb_text = g_strdup_printf("pb%u", d);
      p->pe_text = g_strdup_printf("pe%u", d);
      g_autofree char *pb_def =
          upper ? g_strdup_printf("tot%u / 2", d)
                : g_strdup_printf("tot%u - tot%u / 2", d, d);
      p->locals = g_strdup_printf("tot%u = max(0, (%s - 1) * %" G_GINT64_FORMAT
                                  " + %" G_GINT64_FORMAT " - %s)\n"
                                  "pb%u = %s\npe%u = tot%u - pb%u\n",
                                  d, out_code, p->stride, extent, in_code, d,
                                  pb_def, d, d, d);
    }
  }
  return TRUE;
}

static void pool_dims_clear(PoolDim *dims, guint m) {
  for (guint d = 0; d < m; d++) {
    g_clear_pointer(&dims[d].pb, weir_expr_unref);
    g_clear_pointer(&dims[d].pe, weir_expr_unref);
    g_clear_pointer(&dims[d].pb_text, g_free);
    g_clear_pointer(&dims[d].pe_text, g_free);
    g_clear_pointer(&dims[d].locals, g_free);
  }
}

/* After weir_expand_map: the read of `conn` is data-dependent (one element
 * per iteration at most, through an indexed connector over a window). */
static void mark_dynamic_read(WeirState *s, WeirNode *entry, const char *conn,
                              const char *data) {
  g_autoptr(WeirExpr) iterations = weir_expr_const(1);
  for (guint i = 0; i < entry->map->ranges->len; i++) {
    g_autoptr(WeirExpr) size =
        weir_range_size(&g_array_index(entry->map->ranges, WeirRange, i));
    WeirExpr *next = weir_expr_mul(iterations, size);
    weir_expr_unref(iterations);
    iterations = next;
  }
  g_autofree char *in_conn = g_strdup_printf("IN_%s", data);
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->src == entry->id && g_strcmp0(m->dst_conn, conn) == 0) {
      weir_memlet_set_volume(m, one);
      m->dynamic = TRUE;
    } else if (m->dst == entry->id && g_strcmp0(m->dst_conn, in_conn) == 0) {
      weir_memlet_set_volume(m, iterations);
      m->dynamic = TRUE;
    }
  }
}

/* Map over (n, c, output positions, window taps) reading x and writing
 * each tap into `acc` (subset n, c, o...) with `wcr`; padded taps
 * contribute `identity`.  When every tap is in bounds the memlet reads
 * exactly one element; otherwise x is read through an indexed connector
 * over the (n, c) plane with a bounds test in the tasklet. */
static gboolean pool_accumulate(WeirGraph *g, WeirState *s, WeirNode *n,
                                const WeirPort *x, const PoolDim *dims, guint m,
                                WeirNode *acc, WeirWcr wcr,
                                const char *identity, WeirNode *after,
                                GError **error) {
  guint np = 2 + 2 * m;
  g_autoptr(GPtrArray) params = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) ranges = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(params, g_strdup("n"));
  g_ptr_array_add(params, g_strdup("c"));
  for (guint i = 0; i < 2; i++) {
    g_autofree char *dim = weir_expr_to_string(x->shape[i]);
    g_ptr_array_add(ranges, g_strdup_printf("0:%s", dim));
  }
  for (guint d = 0; d < m; d++) {
    g_autofree char *dim = weir_expr_to_string(dims[d].out);
    g_ptr_array_add(params, g_strdup_printf("o%u", d));
    g_ptr_array_add(ranges, g_strdup_printf("0:%s", dim));
  }
  for (guint d = 0; d < m; d++) {
    g_ptr_array_add(params, g_strdup_printf("k%u", d));
    g_ptr_array_add(ranges, g_strdup_printf("0:%" G_GINT64_FORMAT, dims[d].k));
  }

  gboolean inside = TRUE;
  for (guint d = 0; d < m; d++)
    inside = inside && dims[d].inside;
  GString *in_sub = g_string_new("n, c");
  GString *out_sub = g_string_new("n, c");
  GString *code = g_string_new(NULL);
  GString *index = g_string_new("0, 0");
  GString *cond = g_string_new(NULL);
  gboolean scalar_plane = FALSE;
  for (guint d = 0; d < m; d++) {
    const PoolDim *p = &dims[d];
    g_string_append_printf(out_sub, ", o%u", d);
    if (inside) {
      g_string_append_printf(
          in_sub, ", o%u * %" G_GINT64_FORMAT " + k%u * %" G_GINT64_FORMAT, d,
          p->stride, d, p->dil);
      continue;
    }
    g_autofree char *in_text = weir_expr_to_string(p->in);
    g_autofree char *in_code = weir_expand_expr_code(p->in);
    g_string_append_printf(in_sub, ", 0:%s", in_text);
    g_string_append_printf(code,
                           "%six%u = o%u * %" G_GINT64_FORMAT
                           " + k%u * %" G_GINT64_FORMAT " - %s\n",
                           p->locals, d, d, p->stride, d, p->dil, p->pb_text);
    g_string_append_printf(index, ", ix%u", d);
    if (!p->inside)
      g_string_append_printf(cond, "%six%u >= 0 && ix%u < %s",
                             cond->len ? " && " : "", d, d, in_code);
  }
  if (!inside) {
    /* A plane of one element makes the connector a scalar. */
    g_autoptr(WeirExpr) plane = weir_expr_const(1);
    for (guint d = 0; d < m; d++) {
      WeirExpr *next = weir_expr_mul(plane, dims[d].in);
      weir_expr_unref(plane);
      plane = next;
    }
    gint64 v;
    scalar_plane = weir_expr_is_const(plane, &v) && v == 1;
    g_string_append_printf(
        code, "y = %s ? %s%s%s%s : %s", cond->str, "x", scalar_plane ? "" : "[",
        scalar_plane ? "" : index->str, scalar_plane ? "" : "]", identity);
  } else {
    g_string_append(code, "y = x");
  }
  g_autofree char *in_text = g_string_free(in_sub, FALSE);
  g_autofree char *out_text = g_string_free(out_sub, FALSE);
  g_autofree char *code_text = g_string_free(code, FALSE);
  g_string_free(index, TRUE);
  g_string_free(cond, TRUE);

  WeirTaskletPort in = {x->access, "x", in_text, WEIR_WCR_NONE};
  WeirTaskletPort out = {acc, "y", out_text, wcr};
  g_autofree char *label =
      g_strdup_printf("%s_%s", n->label && *n->label ? n->label : n->op,
                      wcr == WEIR_WCR_MAX ? "max" : "sum");
  WeirNode *entry =
      weir_expand_map(g, s, label, np, (const char *const *)params->pdata,
                      (const char *const *)ranges->pdata, &in, 1, &out, 1,
                      code_text, &after, 1, error);
  if (!entry)
    return FALSE;
  if (!inside)
    mark_dynamic_read(s, entry, "x", x->container->name);
  return TRUE;
}

/* Tasklet text of the divisor of AveragePool at output position (j2, ...):
 * the number of taps inside [0, in) (or inside the padded extent
 * [-pb, in + pe) with count_include_pad). */
static char *pool_count_code(const PoolDim *dims, guint m, gboolean include_pad,
                             char **divisor) {
  GString *code = g_string_new(NULL);
  GString *div = g_string_new(NULL);
  for (guint d = 0; d < m; d++) {
    const PoolDim *p = &dims[d];
    gint64 extent = (p->k - 1) * p->dil + 1;
    /* Constant k when every window lies in [lo, hi). */
    g_autoptr(WeirExpr) last = weir_expr_add_const(p->out, -1);
    g_autoptr(WeirExpr) span = weir_expr_mul_const(last, p->stride);
    g_autoptr(WeirExpr) end0 = weir_expr_add_const(span, extent);
    g_autoptr(WeirExpr) end = weir_expr_sub(end0, p->pb);
    g_autoptr(WeirExpr) hi =
        include_pad ? weir_expr_add(p->in, p->pe) : weir_expr_ref(p->in);
    g_autoptr(WeirExpr) slack = weir_expr_sub(hi, end);
    gint64 v, pbv;
    gboolean full =
        weir_expr_is_const(slack, &v) && v >= 0 &&
        (include_pad || (weir_expr_is_const(p->pb, &pbv) && pbv == 0));
    if (div->len)
      g_string_append(div, " * ");
    if (full) {
      g_string_append_printf(div, "%" G_GINT64_FORMAT, p->k);
      continue;
    }
    g_autofree char *in_code = weir_expand_expr_code(p->in);
    g_string_append_printf(code,
                           "%sa%u = j%u * %" G_GINT64_FORMAT " - %s\n"
                           "lo%u = %s%s\n",
                           p->locals, d, d + 2, p->stride, p->pb_text, d,
                           include_pad ? "-" : "",
                           include_pad ? p->pb_text : "0");
    if (include_pad)
      g_string_append_printf(code, "hi%u = %s + %s\n", d, in_code, p->pe_text);
    else
      g_string_append_printf(code, "hi%u = %s\n", d, in_code);
    if (p->dil == 1)
      g_string_append_printf(code,
                             "kmin%u = max(lo%u - a%u, 0)\n"
                             "kmax%u = min(hi%u - 1 - a%u, %" G_GINT64_FORMAT
                             ")\n",
                             d, d, d, d, d, d, p->k - 1);
    else
      g_string_append_printf(
          code,
          "kmin%u = lo%u > a%u ? (lo%u - a%u + %" G_GINT64_FORMAT
          ") / %" G_GINT64_FORMAT " : 0\n"
          "kmax%u = hi%u - 1 - a%u >= 0 ? min((hi%u - 1 - a%u) / "
          "%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ") : -1\n",
          d, d, d, d, d, p->dil - 1, p->dil, d, d, d, d, d, p->dil, p->k - 1);
    g_string_append_printf(code, "c%u = max(kmax%u - kmin%u + 1, 0)\n", d, d,
                           d);
    g_string_append_printf(div, "c%u", d);
  }
  *divisor = g_string_free(div, FALSE);
  return g_string_free(code, FALSE);
}

/* MaxPool's Indices: after Y holds the maxima (read from `y_acc`), a map
 * over (n, c, output positions, window taps) writes, with a WCR min into
 * `ind`, the flat index of every in-bounds tap whose value equals the
 * maximum (other taps give INT64_MAX), so a tie gives the smallest index.
 * The index is ONNX's: row major over the whole of X, ((n C + c) H + h) W
 * + w with storage_order 0; with 1, column major within the (n, c) plane,
 * (n C + c) H W + h + w H.  X is read through an indexed connector over
 * the (n, c) plane. */
static gboolean pool_argmax(WeirGraph *g, WeirState *s, WeirNode *n,
                            const WeirPort *x, const PoolDim *dims, guint m,
                            WeirNode *y_acc, WeirNode *ind, gboolean colmajor,
                            WeirNode *after, GError **error) {
  guint np = 2 + 2 * m;
  g_autoptr(GPtrArray) params = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) ranges = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(params, g_strdup("n"));
  g_ptr_array_add(params, g_strdup("c"));
  for (guint i = 0; i < 2; i++) {
    g_autofree char *dim = weir_expr_to_string(x->shape[i]);
    g_ptr_array_add(ranges, g_strdup_printf("0:%s", dim));
  }
  for (guint d = 0; d < m; d++) {
    g_autofree char *dim = weir_expr_to_string(dims[d].out);
    g_ptr_array_add(params, g_strdup_printf("o%u", d));
    g_ptr_array_add(ranges, g_strdup_printf("0:%s", dim));
  }
  for (guint d = 0; d < m; d++) {
    g_ptr_array_add(params, g_strdup_printf("k%u", d));
    g_ptr_array_add(ranges, g_strdup_printf("0:%" G_GINT64_FORMAT, dims[d].k));
  }
  g_autoptr(GString) in_sub = g_string_new("n, c");
  g_autoptr(GString) out_sub = g_string_new("n, c");
  g_autoptr(GString) code = g_string_new(NULL);
  g_autoptr(GString) index = g_string_new("0, 0");
  g_autoptr(GString) cond = g_string_new(NULL);
  g_autofree char *c_code = weir_expand_expr_code(x->shape[1]);
  /* the flat index: plane offset, then the spatial part */
  g_string_append_printf(code, "mp_f = n * %s + c\n", c_code);
  for (guint d = 0; d < m; d++) {
    const PoolDim *p = &dims[d];
    g_autofree char *in_text = weir_expr_to_string(p->in);
    g_autofree char *in_code = weir_expand_expr_code(p->in);
    g_string_append_printf(out_sub, ", o%u", d);
    g_string_append_printf(in_sub, ", 0:%s", in_text);
    g_string_append_printf(code,
                           "%six%u = o%u * %" G_GINT64_FORMAT
                           " + k%u * %" G_GINT64_FORMAT " - %s\n",
                           p->locals, d, d, p->stride, d, p->dil, p->pb_text);
    g_string_append_printf(index, ", ix%u", d);
    if (!p->inside)
      g_string_append_printf(cond, "%six%u >= 0 && ix%u < %s",
                             cond->len ? " && " : "", d, d, in_code);
    g_string_append_printf(code, "mp_f = mp_f * %s\n", in_code);
  }
  /* the spatial offset, Horner's scheme from the most significant axis */
  g_string_append(code, "mp_s = 0\n");
  for (guint t = 0; t < m; t++) {
    guint d = colmajor ? m - 1 - t : t;
    g_autofree char *in_code = weir_expand_expr_code(dims[d].in);
    g_string_append_printf(code, "mp_s = mp_s * %s + ix%u\n", in_code, d);
  }
  g_autoptr(WeirExpr) plane = weir_expr_const(1);
  for (guint d = 0; d < m; d++) {
    WeirExpr *next = weir_expr_mul(plane, dims[d].in);
    weir_expr_unref(plane);
    plane = next;
  }
  gint64 v;
  gboolean scalar_plane = weir_expr_is_const(plane, &v) && v == 1;
  g_autofree char *read =
      scalar_plane ? g_strdup("x") : g_strdup_printf("x[%s]", index->str);
  if (cond->len)
    g_string_append_printf(code,
                           "i = %s ? (%s == y ? mp_f + mp_s : "
                           "9223372036854775807) : 9223372036854775807",
                           cond->str, read);
  else
    g_string_append_printf(
        code, "i = %s == y ? mp_f + mp_s : 9223372036854775807", read);

  WeirTaskletPort ins[] = {{x->access, "x", in_sub->str, WEIR_WCR_NONE},
                           {y_acc, "y", out_sub->str, WEIR_WCR_NONE}};
  WeirTaskletPort out = {ind, "i", out_sub->str, WEIR_WCR_MIN};
  g_autofree char *label =
      g_strdup_printf("%s_indices", n->label && *n->label ? n->label : n->op);
  WeirNode *entry =
      weir_expand_map(g, s, label, np, (const char *const *)params->pdata,
                      (const char *const *)ranges->pdata, ins, 2, &out, 1,
                      code->str, &after, 1, error);
  if (!entry)
    return FALSE;
  mark_dynamic_read(s, entry, "x", x->container->name);
  return TRUE;
}

static gboolean expand_pool(WeirGraph *g, WeirState *s, WeirNode *n,
                            GError **error) {
  gboolean is_max = strcmp(n->op, "MaxPool") == 0;
  WeirPort x, y, ind = {0};
  gboolean has_ind = is_max && weir_node_has_out_conn(n, "out1");
  if (!weir_port_require_input(g, s, n, 0, &x, error) ||
      !weir_port_require_output(g, s, n, 0, &y, error) ||
      (has_ind && !weir_port_require_output(g, s, n, 1, &ind, error)))
    return FALSE;
  if (has_ind && (ind.rank != y.rank || ind.container->dtype != WEIR_DTYPE_I64))
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "output 1 (Indices) must be int64 of Y's rank");
  if (x.rank < 3 || y.rank != x.rank)
    return weir_node_fail(
        error, WEIR_ERROR_INVALID, n,
        "input 0 has rank %u and output 0 rank %u; expected equal "
        "ranks of at least 3",
        x.rank, y.rank);
  guint m = x.rank - 2;
  PoolDim *dims = g_new0(PoolDim, m);
  gboolean ok = pool_dims(n, &x, &y, m, dims, error);
  WeirDType dtype = y.container->dtype;
  g_auto(Space) ys;
  space_init(&ys, "j", y.rank, y.shape);
  if (ok && is_max) {
    WeirNode *y1 = weir_state_add_access(g, s, y.container->name);
    g_autofree char *init =
        g_strdup_printf("y = %s", weir_expand_lowest_literal(dtype));
    WeirTaskletPort init_out = {y1, "y", ys.index, WEIR_WCR_NONE};
    ok = map_over(g, s, n, "init", &ys, NULL, 0, &init_out, 1, init, NULL,
                  error) &&
         pool_accumulate(g, s, n, &x, dims, m, y.access, WEIR_WCR_MAX,
                         weir_expand_lowest_literal(dtype), y1, error);
    if (ok && has_ind) {
      WeirNode *i1 = weir_state_add_access(g, s, ind.container->name);
      WeirTaskletPort ind_init = {i1, "i", ys.index, WEIR_WCR_NONE};
      ok = map_over(g, s, n, "indices_init", &ys, NULL, 0, &ind_init, 1,
                    "i = 9223372036854775807", NULL, error) &&
           pool_argmax(g, s, n, &x, dims, m, y.access, ind.access,
                       weir_node_attr_int(n, "storage_order", 0) == 1, i1,
                       error);
    }
  } else if (ok) {
    g_autoptr(GPtrArray) shape =
        g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
    for (guint d = 0; d < y.rank; d++)
      g_ptr_array_add(shape, weir_expr_ref(y.shape[d]));
    WeirContainer *tc = add_transient(g, n, "sum", dtype, shape);
    WeirNode *t1 = weir_state_add_access(g, s, tc->name);
    WeirNode *t2 = weir_state_add_access(g, s, tc->name);
    WeirTaskletPort init_out = {t1, "t", ys.index, WEIR_WCR_NONE};
    WeirTaskletPort fin_in = {t2, "t", ys.index, WEIR_WCR_NONE};
    WeirTaskletPort fin_out = {y.access, "y", ys.index, WEIR_WCR_NONE};
    g_autofree char *divisor = NULL;
    g_autofree char *count = pool_count_code(
        dims, m, weir_node_attr_int(n, "count_include_pad", 0) != 0, &divisor);
    g_autofree char *fin = g_strdup_printf("%sy = t / (%s)", count, divisor);
    ok = map_over(g, s, n, "init", &ys, NULL, 0, &init_out, 1, "t = 0", NULL,
                  error) &&
         pool_accumulate(g, s, n, &x, dims, m, t2, WEIR_WCR_SUM, "0", t1,
                         error) &&
         map_over(g, s, n, "average", &ys, &fin_in, 1, &fin_out, 1, fin, NULL,
                  error);
  }
  pool_dims_clear(dims, m);
  g_free(dims);
  return ok && weir_state_remove_node(s, n->id);
}

/* --------------------------------------------------------- registration */

void weir_expand_register_reduce(void) {
  for (guint i = 0; i < G_N_ELEMENTS(reduce_ops); i++)
    weir_op_register_expansion(reduce_ops[i].op, "pure", expand_reduce);
  weir_op_register_expansion("GlobalAveragePool", "pure", expand_global_pool);
  weir_op_register_expansion("GlobalMaxPool", "pure", expand_global_pool);
  weir_op_register_expansion("ArgMax", "pure", expand_arg);
  weir_op_register_expansion("ArgMin", "pure", expand_arg);
  weir_op_register_expansion("Softmax", "pure", expand_softmax);
  weir_op_register_expansion("LogSoftmax", "pure", expand_softmax);
  weir_op_register_expansion("Hardmax", "pure", expand_hardmax);
  weir_op_register_expansion("LRN", "pure", expand_lrn);
  weir_op_register_expansion("InstanceNormalization", "pure",
                             expand_instancenorm);
  weir_op_register_expansion("MeanVarianceNormalization", "pure", expand_mvn);
  weir_op_register_expansion("DynamicQuantizeLinear", "pure",
                             expand_dynamic_quantize);
  weir_op_register_expansion("LayerNormalization", "pure", expand_layernorm);
  weir_op_register_expansion("MaxPool", "pure", expand_pool);
  weir_op_register_expansion("AveragePool", "pure", expand_pool);
}
