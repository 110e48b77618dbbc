/* gemm-extraction.c — recognize a matrix multiplication written as maps
 * and tasklets and replace it by a "MatMul" or "Gemm" library node, whose
 * expansion can then call a BLAS.
 *
 * Site: a top-level map whose only content is one tasklet
 *   y = a * b   (or y = alpha * a * b, alpha a literal)
 * writing one element through a WCR "sum" memlet: the shape of the pure
 * expansions of MatMul, Gemm and of hand-written contractions.
 *
 * Legality (each refusal says which):
 *  - A, B and Y (the containers behind a, b and y) have one floating
 *    dtype and rank >= 2; every memlet is a single element;
 *  - every dimension is indexed by one map parameter, or by 0 in a
 *    dimension of size 1; a parameter's range 0:size covers each dimension
 *    it indexes exactly, and parameters whose range has one point are
 *    treated as 0;
 *  - the parameters form a contraction: exactly one summed parameter k (in
 *    A and B, not Y), Y = [batch..., m, n] with m in A only and n in B only
 *    among the inputs, A = [batch..., m, k] and B = [batch..., k, n]; the
 *    batch dimensions are aligned right as MatMul broadcasts them (an
 *    operand may lack leading batch dimensions or have size 1 there);
 *  - A read as [k, m] or B as [n, k] (transposed) and alpha != 1 are only
 *    expressed by a 2-D Gemm (transA, transB, alpha).
 * (A 1x1 convolution over NCHW data contracts over the channels with two
 * spatial dimensions as columns: it needs a reshape and is refused with
 * that reason.)
 *
 * Initialization.  The MAC map accumulates into Y, so what Y held before
 * matters:
 *  - the init map that the expansions put in front (in the same state, its
 *    access node tied to the MAC map by an empty memlet, read by nothing
 *    else) writes all of Y with 0: it is removed and the library node
 *    writes Y;
 *  - it writes beta * C or C for a 2-D Y, with C broadcast to Y as Gemm
 *    allows: it is removed and a Gemm with input C and that beta writes Y;
 *  - anything else (another init, an init in an earlier state): the library
 *    node writes a new transient T and a new map adds T into Y with WCR
 *    sum, which is always equivalent.
 * The library node follows the conventions of weir-ops.h: label = the
 * map's label without "_mac", connectors in0 (A), in1 (B), in2 (C), out0,
 * full-subset memlets to the same access nodes; attributes alpha, beta,
 * transA, transB for Gemm (the schema's defaults filled in).  Its FLOPs
 * from the operator registry equal the MAC map's (2 per point: the
 * multiply and the accumulation), plus M*N for Gemm's C.  Data movement
 * drops from one read of A and B and one accumulation per point of the
 * iteration space to one pass over each operand.
 */
#include <math.h>
#include <string.h>

#include "expand/expand-util.h"
#include "tier1-util.h"
#include "weir-ops.h"

gboolean weir_tier1_register_gemm_extraction(GError **error);

/* What the init before the MAC map does. */
typedef enum {
  INIT_OTHER, /* unknown: accumulate form */
  INIT_ZERO,
  INIT_C,
} InitKind;

typedef struct {
  WeirTier1Map m;
  WeirNode *t;
  WeirMemlet *in[2]; /* tasklet inputs a, b */
  WeirMemlet *out;   /* tasklet output */
  WeirNode *acc[3];  /* access nodes of A, B, Y */
  const WeirContainer *c[3];
  double alpha;
  gint *dims[3]; /* per container dimension: parameter index or -1 */
  gboolean swap; /* the tasklet's a is the B operand */
  gboolean trans_a, trans_b;
  /* init */
  InitKind init;
  WeirTier1Map im; /* the init map (INIT_ZERO, INIT_C) */
  WeirNode *y0;    /* its access node */
  WeirNode *acc_c;
  double beta;
  gboolean gemm;
} Plan;

static void plan_clear(Plan *p) {
  weir_tier1_map_clear(&p->m);
  weir_tier1_map_clear(&p->im);
  for (guint i = 0; i < 3; i++)
    g_clear_pointer(&p->dims[i], g_free);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Plan, plan_clear)

/* ----------------------------------------------------- tasklet patterns */

static gboolean literal_value(const WeirAst *a, double *v) {
  if (a->kind == WEIR_AST_INT) {
    *v = (double)a->ival;
    return TRUE;
  }
  if (a->kind == WEIR_AST_FLOAT) {
    *v = a->fval;
    return TRUE;
  }
  if (a->kind == WEIR_AST_UNARY && a->op == WEIR_OP_NEG &&
      literal_value(a->a, v)) {
    *v = -*v;
    return TRUE;
  }
  return FALSE;
}

static void mul_factors(const WeirAst *a, GPtrArray *out) {
  if (a->kind == WEIR_AST_BINARY && a->op == WEIR_OP_MUL) {
    mul_factors(a->a, out);
    mul_factors(a->b, out);
  } else {
    g_ptr_array_add(out, (gpointer)a);
  }
}

/* y = [lit *] in * [lit]: the input slots (n_in of them wanted) and the
 * literal (1 when absent).  n_in == 0: y = literal. */
static gboolean product_of(const WeirCode *code, guint n_in, guint *slots,
                           double *lit) {
  if (code->stmts->len != 1)
    return FALSE;
  const WeirStmt *st = g_ptr_array_index(code->stmts, 0);
  if (st->target->kind != WEIR_AST_NAME ||
      st->target->binding != WEIR_BIND_OUTPUT)
    return FALSE;
  g_autoptr(GPtrArray) f = g_ptr_array_new();
  mul_factors(st->value, f);
  guint found = 0, lits = 0;
  *lit = 1.0;
  for (guint i = 0; i < f->len; i++) {
    const WeirAst *a = g_ptr_array_index(f, i);
    double v;
    if (a->kind == WEIR_AST_NAME && a->binding == WEIR_BIND_INPUT &&
        found < n_in) {
      slots[found++] = a->slot;
    } else if (literal_value(a, &v) && lits == 0) {
      *lit = v;
      lits++;
    } else {
      return FALSE;
    }
  }
  if (found != n_in || (n_in == 2 && slots[0] == slots[1]))
    return FALSE;
  return n_in > 0 || lits == 1;
}

/* The only node inside map m, when it is a tasklet. */
static WeirNode *lone_tasklet(const WeirTier1Map *m) {
  if (m->inside->len != 1)
    return NULL;
  WeirNode *t = weir_state_node(m->state, g_array_index(m->inside, guint, 0));
  return t->kind == WEIR_NODE_TASKLET ? t : NULL;
}

/* The single memlet on a connector of n. */
static WeirMemlet *conn_memlet(const WeirState *s, const WeirNode *n,
                               const char *conn, gboolean input) {
  g_autoptr(GPtrArray) e = input ? weir_tier1_edges_in(s, n->id, conn, FALSE)
                                 : weir_tier1_edges_out(s, n->id, conn, FALSE);
  return e->len == 1 ? g_ptr_array_index(e, 0) : NULL;
}

/* The access node feeding map connector `conn` (OUT_x of entry), or the one
 * fed by exit connector IN_x. */
static WeirNode *outer_access(const WeirState *s, const WeirNode *map_node,
                              const char *conn, gboolean entry) {
  if (!conn)
    return NULL;
  const char *prefix = entry ? "OUT_" : "IN_";
  if (!g_str_has_prefix(conn, prefix))
    return NULL;
  g_autofree char *partner =
      g_strconcat(entry ? "IN_" : "OUT_", conn + strlen(prefix), NULL);
  WeirMemlet *m = conn_memlet(s, map_node, partner, entry);
  if (!m)
    return NULL;
  WeirNode *a = weir_state_node(s, entry ? m->src : m->dst);
  return a && a->kind == WEIR_NODE_ACCESS ? a : NULL;
}

/* The MAC pattern: structure only (no index analysis). */
static gboolean mac_shape(const WeirGraph *g, Plan *p, char **reason) {
  const WeirTier1Map *m = &p->m;
  g_autofree char *name = weir_tier1_map_name(m->entry);
  p->t = lone_tasklet(m);
  if (!p->t)
    return weir_tier1_reason(reason, "%s does not hold exactly one tasklet",
                             name);
  WeirNode *t = p->t;
  if (t->in_conns->len != 2 || t->out_conns->len != 1)
    return weir_tier1_reason(reason,
                             "tasklet '%s' (node %u) has %u inputs and %u "
                             "outputs, not 2 and 1",
                             t->label, t->id, t->in_conns->len,
                             t->out_conns->len);
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirCode) code = weir_tasklet_checked_code(g, m->state, t, &err);
  if (!code)
    return weir_tier1_reason(reason, "%s", err->message);
  guint slots[2];
  if (!product_of(code, 2, slots, &p->alpha))
    return weir_tier1_reason(reason,
                             "tasklet '%s' (node %u) computes '%s', not a "
                             "product of its two inputs",
                             t->label, t->id, t->code_text);
  p->out = conn_memlet(m->state, t, g_ptr_array_index(t->out_conns, 0), FALSE);
  if (!p->out || p->out->dst != m->exit->id || p->out->wcr != WEIR_WCR_SUM)
    return weir_tier1_reason(reason,
                             "tasklet '%s' (node %u) does not accumulate its "
                             "result with WCR 'sum' out of %s",
                             t->label, t->id, name);
  p->acc[2] = outer_access(m->state, m->exit, p->out->dst_conn, FALSE);
  for (guint i = 0; i < 2; i++) {
    p->in[i] = conn_memlet(m->state, t,
                           g_ptr_array_index(t->in_conns, slots[i]), TRUE);
    if (!p->in[i] || p->in[i]->src != m->entry->id)
      return weir_tier1_reason(reason,
                               "input of tasklet '%s' (node %u) does not "
                               "come from %s",
                               t->label, t->id, name);
    p->acc[i] = outer_access(m->state, m->entry, p->in[i]->src_conn, TRUE);
  }
  for (guint i = 0; i < 3; i++) {
    if (!p->acc[i])
      return weir_tier1_reason(reason,
                               "%s is not connected to access nodes on both "
                               "sides",
                               name);
    p->c[i] = weir_graph_container(g, p->acc[i]->data);
  }
  g_autoptr(GPtrArray) outs =
      weir_tier1_edges_out(m->state, m->exit->id, NULL, TRUE);
  if (outs->len != 1)
    return weir_tier1_reason(reason, "%s has other outputs than '%s'", name,
                             p->c[2]->name);
  return TRUE;
}

/* ------------------------------------------------------ index analysis */

static gboolean index_dims(Plan *p, guint which, char **reason) {
  const WeirMap *map = p->m.entry->map;
  const WeirMemlet *mem = which < 2 ? p->in[which] : p->out;
  const WeirContainer *c = p->c[which];
  guint rank = c->shape->len;
  p->dims[which] = g_new0(gint, rank + 1);
  g_autofree char *sub = weir_subset_to_string(mem->subset);
  for (guint d = 0; d < rank; d++) {
    const WeirRange *r = &mem->subset->dims[d];
    g_autoptr(WeirExpr) size = weir_range_size(r);
    gint64 v;
    if (!weir_expr_is_const(size, &v) || v != 1)
      return weir_tier1_reason(reason,
                               "'%s' is read as '%s', not one element per "
                               "point",
                               c->name, sub);
    /* parameters with a single value count as their begin */
    g_autoptr(WeirExpr) e = weir_expr_ref(r->begin);
    for (guint i = 0; i < map->params->len; i++) {
      gint64 n;
      const WeirRange *pr = &g_array_index(map->ranges, WeirRange, i);
      if (weir_tier1_range_const_size(map, i, &n) && n == 1) {
        WeirExpr *next = weir_expr_substitute_one(
            e, g_ptr_array_index(map->params, i), pr->begin);
        weir_expr_unref(e);
        e = next;
      }
    }
    gint pi = weir_expr_kind(e) == WEIR_EXPR_SYMBOL
                  ? weir_tier1_param_index(map, weir_expr_symbol_name(e))
                  : -1;
    gint64 dim_size;
    if (pi >= 0) {
      const WeirRange *pr = &g_array_index(map->ranges, WeirRange, pi);
      gint64 b, st;
      if (!weir_expr_is_const(pr->begin, &b) || b != 0 ||
          !weir_expr_is_const(pr->step, &st) || st != 1 ||
          !weir_expr_equal(pr->end, g_ptr_array_index(c->shape, d))) {
        g_autofree char *rt = weir_range_to_string(pr);
        g_autofree char *dt =
            weir_expr_to_string(g_ptr_array_index(c->shape, d));
        return weir_tier1_reason(
            reason,
            "the range '%s' of '%s' does not cover "
            "dimension %u of '%s' (size %s)",
            rt, (const char *)g_ptr_array_index(map->params, pi), d, c->name,
            dt);
      }
      for (guint k = 0; k < d; k++)
        if (p->dims[which][k] == pi)
          return weir_tier1_reason(
              reason, "'%s' indexes two dimensions of '%s' ('%s')",
              (const char *)g_ptr_array_index(map->params, pi), c->name, sub);
      p->dims[which][d] = pi;
    } else if (weir_expr_is_const(e, &v) && v == 0 &&
               weir_expr_is_const(g_ptr_array_index(c->shape, d), &dim_size) &&
               dim_size == 1) {
      p->dims[which][d] = -1;
    } else {
      g_autofree char *et = weir_expr_to_string(r->begin);
      return weir_tier1_reason(reason,
                               "dimension %u of '%s' is indexed by '%s', not "
                               "by a single map parameter",
                               d, c->name, et);
    }
  }
  return TRUE;
}

static gboolean uses(const Plan *p, guint which, gint param) {
  for (guint d = 0; d < p->c[which]->shape->len; d++)
    if (p->dims[which][d] == param)
      return TRUE;
  return FALSE;
}

/* Classifies the parameters and matches the MatMul / Gemm layouts. */
static gboolean contraction(Plan *p, char **reason) {
  const WeirMap *map = p->m.entry->map;
  for (guint i = 0; i < 3; i++) {
    if (!weir_dtype_is_float(p->c[i]->dtype) ||
        p->c[i]->dtype != p->c[2]->dtype)
      return weir_tier1_reason(reason,
                               "'%s', '%s' and '%s' do not share one floating "
                               "dtype",
                               p->c[0]->name, p->c[1]->name, p->c[2]->name);
    if (p->c[i]->shape->len < 2)
      return weir_tier1_reason(reason,
                               "'%s' has rank %u: vector operands are not "
                               "extracted",
                               p->c[i]->name, p->c[i]->shape->len);
    if (!index_dims(p, i, reason))
      return FALSE;
  }
  gint k = -1;
  guint n_k = 0;
  for (guint i = 0; i < map->params->len; i++) {
    gint64 n;
    if (weir_tier1_range_const_size(map, i, &n) && n == 1)
      continue;
    gboolean a = uses(p, 0, i), b = uses(p, 1, i), y = uses(p, 2, i);
    const char *pn = g_ptr_array_index(map->params, i);
    if (a + b + y < 2)
      return weir_tier1_reason(
          reason, "parameter '%s' indexes %s: not a contraction", pn,
          a   ? "only 'A'"
          : b ? "only 'B'"
          : y ? "only the output"
              : "nothing");
    if (a && b && !y) {
      k = (gint)i;
      n_k++;
    }
  }
  if (n_k != 1)
    return weir_tier1_reason(reason,
                             "%u parameters are summed over; a GEMM sums "
                             "over exactly one",
                             n_k);
  /* Y = [batch..., m, n] */
  guint ry = p->c[2]->shape->len;
  gint pm = p->dims[2][ry - 2], pn = p->dims[2][ry - 1];
  gboolean m0 = pm >= 0 && uses(p, 0, pm) && !uses(p, 1, pm);
  gboolean m1 = pm >= 0 && uses(p, 1, pm) && !uses(p, 0, pm);
  gboolean n0 = pn >= 0 && uses(p, 0, pn) && !uses(p, 1, pn);
  gboolean n1 = pn >= 0 && uses(p, 1, pn) && !uses(p, 0, pn);
  if (m0 && n1)
    p->swap = FALSE;
  else if (m1 && n0)
    p->swap = TRUE;
  else
    return weir_tier1_reason(
        reason,
        "the last two dimensions of '%s' are not a row index of one input "
        "and a column index of the other (the columns may span several "
        "dimensions, which needs a reshape)",
        p->c[2]->name);
  if (p->swap) {
    /* order the operands as A (rows) and B (columns) */
    WeirMemlet *tm = p->in[0];
    p->in[0] = p->in[1];
    p->in[1] = tm;
    WeirNode *ta = p->acc[0];
    p->acc[0] = p->acc[1];
    p->acc[1] = ta;
    const WeirContainer *tc = p->c[0];
    p->c[0] = p->c[1];
    p->c[1] = tc;
    gint *td = p->dims[0];
    p->dims[0] = p->dims[1];
    p->dims[1] = td;
  }
  guint ra = p->c[0]->shape->len, rb = p->c[1]->shape->len;
  const gint *da = p->dims[0], *db = p->dims[1], *dy = p->dims[2];
  if (da[ra - 2] == pm && da[ra - 1] == k)
    p->trans_a = FALSE;
  else if (da[ra - 2] == k && da[ra - 1] == pm)
    p->trans_a = TRUE;
  else
    return weir_tier1_reason(reason,
                             "the last two dimensions of '%s' are not its "
                             "row and summed indices",
                             p->c[0]->name);
  if (db[rb - 2] == k && db[rb - 1] == pn)
    p->trans_b = FALSE;
  else if (db[rb - 2] == pn && db[rb - 1] == k)
    p->trans_b = TRUE;
  else
    return weir_tier1_reason(reason,
                             "the last two dimensions of '%s' are not its "
                             "summed and column indices",
                             p->c[1]->name);
  /* batch dimensions, aligned right */
  for (guint w = 0; w < 2; w++) {
    guint r = p->c[w]->shape->len;
    const gint *dw = p->dims[w];
    if (r > ry)
      return weir_tier1_reason(reason,
                               "'%s' has more batch dimensions than '%s'",
                               p->c[w]->name, p->c[2]->name);
    for (guint d = 0; d + 2 < r; d++) {
      gint yd = dy[d + ry - r];
      if (dw[d] != yd && dw[d] != -1)
        return weir_tier1_reason(reason,
                                 "batch dimension %u of '%s' does not line "
                                 "up with dimension %u of '%s'",
                                 d, p->c[w]->name, d + ry - r, p->c[2]->name);
    }
  }
  for (guint d = 0; d + 2 < ry; d++) {
    /* every batch parameter of Y is an index of an input at its place */
    gint yd = dy[d];
    if (yd < 0)
      continue;
    gboolean found = FALSE;
    for (guint w = 0; w < 2; w++) {
      guint r = p->c[w]->shape->len;
      if (d + r >= ry && p->dims[w][d + r - ry] == yd)
        found = TRUE;
    }
    if (!found)
      return weir_tier1_reason(reason,
                               "batch dimension %u of '%s' is not a batch "
                               "dimension of an input",
                               d, p->c[2]->name);
  }
  gboolean flat = ra == 2 && rb == 2 && ry == 2;
  if (!flat && (p->trans_a || p->trans_b))
    return weir_tier1_reason(reason,
                             "'%s' is read transposed; only a 2-D Gemm has "
                             "transA and transB",
                             p->trans_a ? p->c[0]->name : p->c[1]->name);
  if (!flat && p->alpha != 1.0)
    return weir_tier1_reason(reason,
                             "the product is scaled by %g; only a 2-D Gemm "
                             "has alpha",
                             p->alpha);
  return TRUE;
}

/* ------------------------------------------------------------------ init */

/* The init map of Y when the expansion pattern holds (see the top). */
static void find_init(const WeirGraph *g, Plan *p) {
  const WeirState *s = p->m.state;
  const WeirContainer *y = p->c[2];
  p->init = INIT_OTHER;
  g_autoptr(GPtrArray) ins = weir_tier1_edges_in(s, p->m.entry->id, NULL, TRUE);
  WeirNode *y0 = NULL;
  for (guint i = 0; i < ins->len; i++) {
    const WeirMemlet *e = g_ptr_array_index(ins, i);
    WeirNode *src = weir_state_node(s, e->src);
    if (!e->data && src->kind == WEIR_NODE_ACCESS &&
        strcmp(src->data, y->name) == 0)
      y0 = src;
  }
  if (!y0)
    return;
  g_autoptr(GPtrArray) y0_out = weir_tier1_edges_out(s, y0->id, NULL, TRUE);
  g_autoptr(GPtrArray) y0_in = weir_tier1_edges_in(s, y0->id, NULL, TRUE);
  if (y0_out->len != 1 || y0_in->len != 1)
    return;
  const WeirMemlet *w = g_ptr_array_index(y0_in, 0);
  WeirNode *ix = weir_state_node(s, w->src);
  if (ix->kind != WEIR_NODE_MAP_EXIT || w->wcr != WEIR_WCR_NONE)
    return;
  if (!weir_tier1_map_init(g, s->id, ix->entry, &p->im, NULL))
    return;
  const WeirMap *im = p->im.entry->map;
  WeirNode *t = lone_tasklet(&p->im);
  guint rank = y->shape->len;
  if (!t || t->out_conns->len != 1 || t->in_conns->len > 1 ||
      im->params->len != rank)
    return;
  g_autoptr(GPtrArray) exit_out =
      weir_tier1_edges_out(s, p->im.exit->id, NULL, TRUE);
  WeirMemlet *tw = conn_memlet(s, t, g_ptr_array_index(t->out_conns, 0), FALSE);
  if (exit_out->len != 1 || !tw || tw->wcr != WEIR_WCR_NONE)
    return;
  /* writes every element of Y once: y[p0, p1, ...] over 0:shape */
  for (guint d = 0; d < rank; d++) {
    const WeirRange *r = &g_array_index(im->ranges, WeirRange, d);
    g_autoptr(WeirExpr) size = weir_range_size(&tw->subset->dims[d]);
    gint64 b, st, one;
    if (!weir_expr_is_const(r->begin, &b) || b != 0 ||
        !weir_expr_is_const(r->step, &st) || st != 1 ||
        !weir_expr_equal(r->end, g_ptr_array_index(y->shape, d)) ||
        !weir_expr_is_const(size, &one) || one != 1 ||
        weir_expr_kind(tw->subset->dims[d].begin) != WEIR_EXPR_SYMBOL ||
        strcmp(weir_expr_symbol_name(tw->subset->dims[d].begin),
               g_ptr_array_index(im->params, d)) != 0)
      return;
  }
  g_autoptr(GError) err = NULL;
  g_autoptr(WeirCode) code = weir_tasklet_checked_code(g, s, t, &err);
  if (!code)
    return;
  guint slot;
  double lit;
  if (t->in_conns->len == 0) {
    if (product_of(code, 0, &slot, &lit) && lit == 0.0) {
      p->init = INIT_ZERO;
      p->y0 = y0;
    }
    return;
  }
  /* y = [beta *] c for a 2-D Gemm, c broadcast to Y */
  if (rank != 2 || !product_of(code, 1, &slot, &lit))
    return;
  WeirMemlet *cm = conn_memlet(s, t, g_ptr_array_index(t->in_conns, 0), TRUE);
  WeirNode *acc_c =
      cm ? outer_access(s, p->im.entry, cm->src_conn, TRUE) : NULL;
  const WeirContainer *c = acc_c ? weir_graph_container(g, acc_c->data) : NULL;
  if (!c || c->dtype != y->dtype || c->shape->len > 2)
    return;
  guint rc = c->shape->len;
  for (guint d = 0; d < rc; d++) {
    const WeirRange *r = &cm->subset->dims[d];
    WeirExpr *size = g_ptr_array_index(c->shape, d);
    gint64 one, v;
    const char *param = g_ptr_array_index(im->params, d + 2 - rc);
    if (weir_expr_is_const(size, &one) && one == 1) {
      if (!weir_expr_is_const(r->begin, &v) || v != 0)
        return;
    } else if (weir_expr_kind(r->begin) != WEIR_EXPR_SYMBOL ||
               strcmp(weir_expr_symbol_name(r->begin), param) != 0 ||
               !weir_expr_equal(size, g_ptr_array_index(y->shape, d + 2 - rc)))
      return;
  }
  p->init = INIT_C;
  p->y0 = y0;
  p->acc_c = acc_c;
  p->beta = lit;
}

/* ---------------------------------------------------------- the callbacks */

static gboolean plan_init(const WeirGraph *g, const WeirSite *site, Plan *p,
                          char **reason) {
  memset(p, 0, sizeof *p);
  if (!weir_tier1_site_map(g, site, &p->m, reason))
    return FALSE;
  g_autofree char *name = weir_tier1_map_name(p->m.entry);
  if (p->m.parent) {
    const WeirNode *parent = weir_state_node(p->m.state, p->m.parent);
    return weir_tier1_reason(reason,
                             "%s is inside map '%s' (node %u): only a "
                             "top-level contraction is extracted",
                             name, parent->label, parent->id);
  }
  if (!mac_shape(g, p, reason) || !contraction(p, reason))
    return FALSE;
  find_init(g, p);
  gboolean flat = p->c[0]->shape->len == 2 && p->c[1]->shape->len == 2 &&
                  p->c[2]->shape->len == 2;
  p->gemm = flat &&
            (p->trans_a || p->trans_b || p->alpha != 1.0 || p->init == INIT_C);
  return TRUE;
}

static void gemm_match(const WeirGraph *g, GArray *sites) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_MAP_ENTRY || n->map->params->len < 3)
        continue;
      WeirSite site = {.state = s->id, .n_nodes = 1, .nodes = {n->id}};
      g_auto(Plan) p;
      memset(&p, 0, sizeof p);
      if (weir_tier1_site_map(g, &site, &p.m, NULL) && mac_shape(g, &p, NULL))
        g_array_append_val(sites, site);
    }
  }
}

static gboolean gemm_can_apply(const WeirGraph *g, const WeirSite *site,
                               const WeirParams *params, char **reason) {
  (void)params;
  g_auto(Plan) p;
  return plan_init(g, site, &p, reason);
}

static char *full_subset(const WeirContainer *c) {
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  return weir_subset_to_string(full);
}

static gboolean connect(WeirGraph *g, WeirState *s, WeirNode *from,
                        const char *from_conn, WeirNode *to,
                        const char *to_conn, const WeirContainer *c,
                        GError **error) {
  g_autofree char *full = full_subset(c);
  return weir_state_add_memlet(g, s, from->id, from_conn, to->id, to_conn,
                               c->name, full, error) != NULL;
}

/* Removes a map scope with everything in it. */
static void remove_scope(WeirState *s, const WeirTier1Map *m) {
  for (guint i = 0; i < m->inside->len; i++)
    weir_state_remove_node(s, g_array_index(m->inside, guint, i));
  weir_state_remove_node(s, m->entry->id);
  weir_state_remove_node(s, m->exit->id);
}

static char *library_label(const WeirNode *entry) {
  const char *l = entry->label;
  if (g_str_has_suffix(l, "_mac") && strlen(l) > 4)
    return g_strndup(l, strlen(l) - 4);
  return g_strdup(l);
}

static gboolean gemm_apply(WeirGraph *g, const WeirSite *site,
                           const WeirParams *params, GError **error) {
  (void)params;
  g_auto(Plan) p;
  g_autofree char *reason = NULL;
  if (!plan_init(g, site, &p, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  WeirState *s = p.m.state;
  g_autofree char *label = library_label(p.m.entry);
  gboolean with_c = p.init == INIT_C;
  const char *ins[] = {"in0", "in1", with_c ? "in2" : NULL, NULL};
  const char *outs[] = {"out0", NULL};
  WeirNode *lib = weir_state_add_library(g, s, label,
                                         p.gemm ? "Gemm" : "MatMul", ins, outs);
  if (p.gemm) {
    weir_node_set_attr_float(lib, "alpha", p.alpha);
    weir_node_set_attr_float(lib, "beta", with_c ? p.beta : 1.0);
    weir_node_set_attr_int(lib, "transA", p.trans_a);
    weir_node_set_attr_int(lib, "transB", p.trans_b);
  }
  if (!weir_op_check_attrs(lib, error))
    return FALSE;
  if (!connect(g, s, p.acc[0], NULL, lib, "in0", p.c[0], error) ||
      !connect(g, s, p.acc[1], NULL, lib, "in1", p.c[1], error) ||
      (with_c && !connect(g, s, p.acc_c, NULL, lib, "in2",
                          weir_graph_container(g, p.acc_c->data), error)))
    return FALSE;

  /* Ordering dependencies of the MAC map (other than on the init). */
  g_autoptr(GPtrArray) after = g_ptr_array_new();
  g_autoptr(GPtrArray) ins_e =
      weir_tier1_edges_in(s, p.m.entry->id, NULL, TRUE);
  for (guint i = 0; i < ins_e->len; i++) {
    const WeirMemlet *e = g_ptr_array_index(ins_e, i);
    if (!e->data && (p.init == INIT_OTHER || e->src != p.y0->id))
      g_ptr_array_add(after, weir_state_node(s, e->src));
  }
  const WeirContainer *y = p.c[2];
  WeirNode *acc_y = p.acc[2];
  remove_scope(s, &p.m);

  if (p.init != INIT_OTHER) {
    /* The library node overwrites Y: the init goes, its own ordering
     * dependencies pass to the library node. */
    g_autoptr(GPtrArray) init_in =
        weir_tier1_edges_in(s, p.im.entry->id, NULL, TRUE);
    for (guint i = 0; i < init_in->len; i++) {
      const WeirMemlet *e = g_ptr_array_index(init_in, i);
      if (!e->data)
        g_ptr_array_add(after, weir_state_node(s, e->src));
    }
    remove_scope(s, &p.im);
    weir_state_remove_node(s, p.y0->id);
    for (guint i = 0; i < after->len; i++)
      if (!weir_state_add_memlet(g, s, ((WeirNode *)after->pdata[i])->id, NULL,
                                 lib->id, NULL, NULL, NULL, error))
        return FALSE;
    return connect(g, s, lib, "out0", acc_y, NULL, y, error);
  }

  /* Accumulate form: T = A @ B, then Y += T. */
  g_autofree char *base = g_strconcat(label, "_product", NULL);
  for (char *c = base; *c; c++)
    if (!g_ascii_isalnum(*c) && *c != '_')
      *c = '_';
  if (g_ascii_isdigit(base[0])) {
    char *b2 = g_strconcat("t", base, NULL);
    g_free(base);
    base = b2;
  }
  g_autofree char *tname = weir_graph_fresh_name(g, base);
  WeirContainer *tc =
      weir_graph_add_container(g, tname, y->dtype, y->shape->len,
                               (WeirExpr *const *)y->shape->pdata, TRUE, error);
  if (!tc)
    return FALSE;
  WeirNode *acc_t = weir_state_add_access(g, s, tname);
  if (!connect(g, s, lib, "out0", acc_t, NULL, tc, error))
    return FALSE;
  guint rank = y->shape->len;
  g_autoptr(GPtrArray) pnames = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) ranges = g_ptr_array_new_with_free_func(g_free);
  for (guint d = 0; d < rank; d++) {
    g_autofree char *b = g_strdup_printf("i%u", d);
    g_ptr_array_add(pnames, weir_tier1_fresh_param(g, s, b, pnames));
    g_autofree char *size = weir_expr_to_string(g_ptr_array_index(y->shape, d));
    g_ptr_array_add(ranges, g_strdup_printf("0:%s", size));
  }
  g_ptr_array_add(pnames, NULL);
  g_ptr_array_add(ranges, NULL);
  g_autofree char *sub = g_strjoinv(", ", (char **)pnames->pdata);
  WeirTaskletPort tin = {acc_t, "t", sub, WEIR_WCR_NONE};
  WeirTaskletPort yout = {acc_y, "y", sub, WEIR_WCR_SUM};
  g_autofree char *acc_label = g_strconcat(label, "_accumulate", NULL);
  return weir_expand_map(
             g, s, acc_label, rank, (const char *const *)pnames->pdata,
             (const char *const *)ranges->pdata, &tin, 1, &yout, 1, "y = t",
             (WeirNode *const *)after->pdata, after->len, error) != NULL;
}

static const WeirTransformInfo gemm_extraction_info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "gemm-extraction",
    .tier = 1,
    .description = "Replace a multiply-accumulate map (a contraction) by a "
                   "MatMul or Gemm library node",
    .match = gemm_match,
    .can_apply = gemm_can_apply,
    .apply = gemm_apply,
};

gboolean weir_tier1_register_gemm_extraction(GError **error) {
  return weir_transform_register(&gemm_extraction_info, error);
}
