/* redundant-copy.c — "redundant-copy-removal" (tier 4).
 *
 * A transient B that holds nothing but a copy of (part of) a container A,
 * and is then only read, is redundant: its readers can read A directly.
 * Two forms of the copy are recognized:
 *   - a copy memlet between access nodes a (A) -> b (B), as the expansions
 *     of Reshape, Flatten, Squeeze and Unsqueeze produce (then A and B may
 *     differ in rank: the element order is row-major on both sides);
 *   - a map whose only node is a tasklet "y = x" reading A and writing B
 *     element by element (Transpose, Slice, Expand produce these): B's index
 *     j-th dimension is a map parameter, A's index is affine in at most one
 *     parameter per dimension.
 * Either defines an index map from B to A.  Every memlet that reads B is
 * rewritten to read A through the image of its subset under that map; the
 * copy and B disappear.
 *
 * Site: [a, b] for a copy memlet, [a, map entry, b] for a copy map (node
 * ids: the access node read, the map, the access node written).
 *
 * Legal when: B is transient, without constant data, of A's dtype, used in
 * this state only, with a single access node b whose only incoming memlet
 * is the copy (B is written once and then only read); A is not written by
 * any node that may run after the copy; every reader's subset has an image
 * on A that the reader can use:
 *   - memlets into a map entry describe the union of what the map touches:
 *     any image (or, when it is not a box, A's full extent) will do;
 *   - single elements (scalar tasklet connectors) always map;
 *   - copies pair elements in row-major order: the image must keep that
 *     order (no transposition of the moving dimensions);
 *   - indexed tasklet connectors (x[i, j]) index each dimension: A must
 *     have B's rank with the dimensions in the same order;
 *   - library and nested nodes see the whole container: A must have B's
 *     shape and the copy must be the identity.
 * Otherwise the reason names the reader and what does not map.
 */
#include <string.h>

#include "tier4-util.h"
#include "weir-plugin.h"

gboolean weir_tier4_register_redundant_copy(GError **error);

/* ------------------------------------------------------------ index maps */

typedef enum { MAP_AFFINE, MAP_RESHAPE } MapKind;

/* B index -> A index. */
typedef struct {
  MapKind kind;
  guint a_rank, b_rank;
  /* AFFINE, per A dimension k: A_k = scale[k] * B_src[k] + offset[k], or
   * offset[k] alone when src[k] < 0 */
  gint *src;
  gint64 *scale;
  WeirExpr **offset;
  /* RESHAPE: shapes and groups of dimensions with equal products; group k
   * covers A dims [a_lo[k], a_lo[k+1]) and B dims [b_lo[k], b_lo[k+1]) */
  WeirExpr **a_shape, **b_shape;
  guint n_groups;
  guint *a_lo, *b_lo;
} IndexMap;

static void index_map_clear(IndexMap *m) {
  if (m->offset)
    for (guint k = 0; k < m->a_rank; k++)
      if (m->offset[k])
        weir_expr_unref(m->offset[k]);
  g_free(m->offset);
  g_free(m->src);
  g_free(m->scale);
  if (m->a_shape)
    for (guint k = 0; k < m->a_rank; k++)
      weir_expr_unref(m->a_shape[k]);
  if (m->b_shape)
    for (guint k = 0; k < m->b_rank; k++)
      weir_expr_unref(m->b_shape[k]);
  g_free(m->a_shape);
  g_free(m->b_shape);
  g_free(m->a_lo);
  g_free(m->b_lo);
  memset(m, 0, sizeof(*m));
}

static void affine_init(IndexMap *m, guint a_rank, guint b_rank) {
  m->kind = MAP_AFFINE;
  m->a_rank = a_rank;
  m->b_rank = b_rank;
  m->src = g_new0(gint, a_rank ? a_rank : 1);
  m->scale = g_new0(gint64, a_rank ? a_rank : 1);
  m->offset = g_new0(WeirExpr *, a_rank ? a_rank : 1);
}

static gboolean is_const_value(const WeirExpr *e, gint64 v) {
  gint64 x;
  return weir_expr_is_const(e, &x) && x == v;
}

static WeirExpr *product(WeirExpr *const *dims, guint lo, guint hi) {
  WeirExpr *p = weir_expr_const(1);
  for (guint k = lo; k < hi; k++) {
    WeirExpr *q = weir_expr_mul(p, dims[k]);
    weir_expr_unref(p);
    p = q;
  }
  return p;
}

/* Groups the dimensions of a_shape and b_shape into runs with equal
 * products (the factorization a reshape preserves).  Unit dimensions join
 * the group before them (or the first group). */
static gboolean reshape_init(IndexMap *m, const WeirContainer *a,
                             const WeirContainer *b, char **reason) {
  m->kind = MAP_RESHAPE;
  m->a_rank = a->shape->len;
  m->b_rank = b->shape->len;
  m->a_shape = g_new0(WeirExpr *, m->a_rank + 1);
  m->b_shape = g_new0(WeirExpr *, m->b_rank + 1);
  for (guint k = 0; k < m->a_rank; k++)
    m->a_shape[k] = weir_expr_ref(g_ptr_array_index(a->shape, k));
  for (guint k = 0; k < m->b_rank; k++)
    m->b_shape[k] = weir_expr_ref(g_ptr_array_index(b->shape, k));
  m->a_lo = g_new0(guint, m->a_rank + m->b_rank + 2);
  m->b_lo = g_new0(guint, m->a_rank + m->b_rank + 2);
  for (guint k = 0; k < m->a_rank; k++)
    if (is_const_value(m->a_shape[k], 0))
      goto zero;
  for (guint k = 0; k < m->b_rank; k++)
    if (is_const_value(m->b_shape[k], 0))
      goto zero;
  guint i = 0, j = 0;
  while (i < m->a_rank || j < m->b_rank) {
    m->a_lo[m->n_groups] = i;
    m->b_lo[m->n_groups] = j;
    g_autoptr(WeirExpr) pa = weir_expr_const(1);
    g_autoptr(WeirExpr) pb = weir_expr_const(1);
    /* at least one dimension of each side that has some left */
    gboolean took_a = FALSE, took_b = FALSE;
    for (;;) {
      gboolean eq = weir_expr_equal(pa, pb);
      if (eq && (took_a || i == m->a_rank) && (took_b || j == m->b_rank))
        break;
      gint64 va, vb;
      gboolean ca = weir_expr_is_const(pa, &va);
      gboolean cb = weir_expr_is_const(pb, &vb);
      gboolean grow_a;
      if (i == m->a_rank && j == m->b_rank)
        goto mismatch;
      else if (i == m->a_rank)
        grow_a = FALSE;
      else if (j == m->b_rank)
        grow_a = TRUE;
      else if (!took_a)
        grow_a = TRUE;
      else if (!took_b)
        grow_a = FALSE;
      else if (ca && cb)
        grow_a = va < vb;
      else if (ca && va == 1)
        grow_a = TRUE;
      else if (cb && vb == 1)
        grow_a = FALSE;
      else
        goto mismatch;
      if (grow_a) {
        WeirExpr *q = weir_expr_mul(pa, m->a_shape[i++]);
        weir_expr_unref(pa);
        pa = q;
        took_a = TRUE;
      } else {
        WeirExpr *q = weir_expr_mul(pb, m->b_shape[j++]);
        weir_expr_unref(pb);
        pb = q;
        took_b = TRUE;
      }
    }
    /* unit dimensions that follow belong to this group */
    while (i < m->a_rank && is_const_value(m->a_shape[i], 1))
      i++;
    while (j < m->b_rank && is_const_value(m->b_shape[j], 1))
      j++;
    m->n_groups++;
  }
  m->a_lo[m->n_groups] = m->a_rank;
  m->b_lo[m->n_groups] = m->b_rank;
  return TRUE;
mismatch:
  *reason = g_strdup_printf("the shapes of '%s' and '%s' cannot be related "
                            "dimension by dimension",
                            a->name, b->name);
  return FALSE;
zero:
  *reason = g_strdup_printf("'%s' or '%s' has no elements", a->name, b->name);
  return FALSE;
}

/* How a reader uses the subset it reads. */
typedef enum {
  USE_UNION,   /* memlet into a map entry: the union of the map's accesses */
  USE_SCALAR,  /* one element */
  USE_COPY,    /* copy to an access node: row-major order matters */
  USE_INDEXED, /* tasklet connector indexed per dimension */
  USE_WHOLE,   /* library or nested node: the whole container */
} Use;

static const char *use_name(Use u) {
  switch (u) {
  case USE_UNION:
    return "map input";
  case USE_SCALAR:
    return "scalar read";
  case USE_COPY:
    return "copy";
  case USE_INDEXED:
    return "indexed tasklet connector";
  case USE_WHOLE:
    return "library or nested node";
  }
  return "?";
}

static WeirExpr *affine_point(gint64 scale, WeirExpr *x, WeirExpr *offset) {
  g_autoptr(WeirExpr) sx = weir_expr_mul_const(x, scale);
  return weir_expr_add(sx, offset);
}

/* Image of range r under A = scale * B + offset. */
static void affine_range(WeirRange *out, const WeirRange *r, gint64 scale,
                         WeirExpr *offset) {
  out->begin = affine_point(scale, r->begin, offset);
  if (t4_range_is_single(r)) {
    out->end = weir_expr_add_const(out->begin, 1);
    out->step = weir_expr_const(1);
    return;
  }
  out->step = weir_expr_mul_const(r->step, scale);
  if (scale == 1) {
    out->end = weir_expr_add(r->end, offset);
    return;
  }
  g_autoptr(WeirExpr) n = weir_range_size(r);
  g_autoptr(WeirExpr) n1 = weir_expr_add_const(n, -1);
  g_autoptr(WeirExpr) span = weir_expr_mul(n1, out->step);
  g_autoptr(WeirExpr) last = weir_expr_add(out->begin, span);
  out->end = weir_expr_add_const(last, 1);
}

static void full_range(WeirRange *out, WeirExpr *size) {
  out->begin = weir_expr_const(0);
  out->end = weir_expr_ref(size);
  out->step = weir_expr_const(1);
}

static gboolean range_is_full(const WeirRange *r, WeirExpr *size) {
  return is_const_value(r->begin, 0) && is_const_value(r->step, 1) &&
         weir_expr_equal(r->end, size);
}

static WeirSubset *map_affine(const IndexMap *m, const WeirSubset *sb, Use use,
                              char **why) {
  /* dimensions of B that move (more than one point) */
  if (use == USE_INDEXED || use == USE_WHOLE) {
    gboolean same = m->a_rank == m->b_rank;
    for (guint k = 0; same && k < m->a_rank; k++)
      same = m->src[k] == (gint)k;
    if (!same) {
      *why = g_strdup("the dimensions do not correspond one to one");
      return NULL;
    }
  }
  if (use == USE_COPY || use == USE_INDEXED || use == USE_WHOLE) {
    /* every moving dimension of B appears in A, in the same order */
    gint prev = -1;
    for (guint j = 0; j < m->b_rank; j++) {
      if (t4_range_is_single(&sb->dims[j]))
        continue;
      gboolean found = FALSE;
      for (guint k = 0; k < m->a_rank && !found; k++)
        found = m->src[k] == (gint)j;
      if (!found) {
        *why = g_strdup_printf("dimension %u is broadcast from a single "
                               "element",
                               j);
        return NULL;
      }
    }
    for (guint k = 0; k < m->a_rank; k++) {
      if (m->src[k] < 0 || t4_range_is_single(&sb->dims[m->src[k]]))
        continue;
      if (m->src[k] < prev) {
        *why = g_strdup("the copy transposes the dimensions it reads");
        return NULL;
      }
      prev = m->src[k];
    }
  }
  WeirSubset *sa = t4_subset_new(m->a_rank);
  for (guint k = 0; k < m->a_rank; k++) {
    if (m->src[k] < 0) {
      t4_range_set_index(&sa->dims[k], m->offset[k]);
      continue;
    }
    affine_range(&sa->dims[k], &sb->dims[m->src[k]], m->scale[k], m->offset[k]);
  }
  return sa;
}

/* Linear offset of the begins of sb's dims [lo, hi) within a row-major
 * block of `shape` (transfer full). */
static WeirExpr *linear_begin(const WeirSubset *sb, WeirExpr *const *shape,
                              guint lo, guint hi) {
  WeirExpr *acc = weir_expr_const(0);
  for (guint j = lo; j < hi; j++) {
    g_autoptr(WeirExpr) stride = product(shape, j + 1, hi);
    g_autoptr(WeirExpr) term = weir_expr_mul(sb->dims[j].begin, stride);
    WeirExpr *next = weir_expr_add(acc, term);
    weir_expr_unref(acc);
    acc = next;
  }
  return acc;
}

/* One group of a reshape: fills sa->dims[a_lo .. a_hi) from sb->dims[b_lo ..
 * b_hi).  FALSE when the image is not a box of A. */
static gboolean map_group(const IndexMap *m, guint k, const WeirSubset *sb,
                          WeirSubset *sa) {
  guint alo = m->a_lo[k], ahi = m->a_lo[k + 1];
  guint blo = m->b_lo[k], bhi = m->b_lo[k + 1];
  gboolean all_full = TRUE, all_single = TRUE;
  for (guint j = blo; j < bhi; j++) {
    all_full &= range_is_full(&sb->dims[j], m->b_shape[j]);
    all_single &= t4_range_is_single(&sb->dims[j]);
  }
  if (all_full) {
    for (guint i = alo; i < ahi; i++)
      full_range(&sa->dims[i], m->a_shape[i]);
    return TRUE;
  }
  if (ahi - alo == 1 && bhi - blo == 1) {
    weir_range_copy(&sb->dims[blo], &sa->dims[alo]);
    return TRUE;
  }
  if (all_single) {
    g_autoptr(WeirExpr) lin = linear_begin(sb, m->b_shape, blo, bhi);
    for (guint i = alo; i < ahi; i++) {
      g_autoptr(WeirExpr) stride = product(m->a_shape, i + 1, ahi);
      g_autoptr(WeirExpr) q = weir_expr_floordiv(lin, stride);
      g_autoptr(WeirExpr) idx =
          i == alo ? weir_expr_ref(q) : weir_expr_mod(q, m->a_shape[i]);
      t4_range_set_index(&sa->dims[i], idx);
    }
    return TRUE;
  }
  if (ahi - alo == 1) {
    /* B dims split one A dim: a single arithmetic progression when one B
     * dim moves (others single), or a contiguous block */
    guint moving = 0, j0 = bhi;
    for (guint j = blo; j < bhi; j++)
      if (!t4_range_is_single(&sb->dims[j])) {
        moving++;
        if (j0 == bhi)
          j0 = j;
      }
    gboolean tail_full = TRUE;
    for (guint j = j0 + 1; j < bhi; j++)
      tail_full &= range_is_full(&sb->dims[j], m->b_shape[j]);
    g_autoptr(WeirExpr) begin = linear_begin(sb, m->b_shape, blo, bhi);
    g_autoptr(WeirExpr) stride = product(m->b_shape, j0 + 1, bhi);
    g_autoptr(WeirExpr) n = weir_range_size(&sb->dims[j0]);
    if (moving == 1 || (tail_full && is_const_value(sb->dims[j0].step, 1))) {
      WeirRange *r = &sa->dims[alo];
      r->begin = weir_expr_ref(begin);
      if (moving == 1) {
        r->step = weir_expr_mul(sb->dims[j0].step, stride);
        g_autoptr(WeirExpr) n1 = weir_expr_add_const(n, -1);
        g_autoptr(WeirExpr) span = weir_expr_mul(n1, r->step);
        g_autoptr(WeirExpr) last = weir_expr_add(begin, span);
        r->end = weir_expr_add_const(last, 1);
      } else {
        r->step = weir_expr_const(1);
        g_autoptr(WeirExpr) len = weir_expr_mul(n, stride);
        r->end = weir_expr_add(begin, len);
      }
      return TRUE;
    }
    return FALSE;
  }
  if (bhi - blo == 1 && is_const_value(sb->dims[blo].step, 1)) {
    /* one B dim merges A dims: rows of the first A dim */
    g_autoptr(WeirExpr) row = product(m->a_shape, alo + 1, ahi);
    g_autoptr(WeirExpr) mb = weir_expr_mod(sb->dims[blo].begin, row);
    g_autoptr(WeirExpr) me = weir_expr_mod(sb->dims[blo].end, row);
    if (is_const_value(mb, 0) && is_const_value(me, 0)) {
      sa->dims[alo].begin = weir_expr_floordiv(sb->dims[blo].begin, row);
      sa->dims[alo].end = weir_expr_floordiv(sb->dims[blo].end, row);
      sa->dims[alo].step = weir_expr_const(1);
      for (guint i = alo + 1; i < ahi; i++)
        full_range(&sa->dims[i], m->a_shape[i]);
      return TRUE;
    }
  }
  return FALSE;
}

static WeirSubset *map_reshape(const IndexMap *m, const WeirSubset *sb, Use use,
                               char **why) {
  if (use == USE_INDEXED || use == USE_WHOLE) {
    gboolean same = m->a_rank == m->b_rank;
    for (guint k = 0; same && k < m->a_rank; k++)
      same = weir_expr_equal(m->a_shape[k], m->b_shape[k]);
    if (!same) {
      *why = g_strdup("it needs the shape of the copy, which the source does "
                      "not have");
      return NULL;
    }
  }
  WeirSubset *sa = t4_subset_new(m->a_rank);
  for (guint k = 0; k < m->n_groups; k++) {
    if (map_group(m, k, sb, sa))
      continue;
    if (use != USE_UNION) {
      g_autofree char *text = weir_subset_to_string(sb);
      *why =
          g_strdup_printf("its subset '%s' is not a box of the source", text);
      weir_subset_free(sa);
      return NULL;
    }
    /* a union: the whole extent of the group's A dims covers it */
    for (guint i = m->a_lo[k]; i < m->a_lo[k + 1]; i++) {
      weir_range_clear(&sa->dims[i]);
      full_range(&sa->dims[i], m->a_shape[i]);
    }
  }
  return sa;
}

static WeirSubset *map_subset(const IndexMap *m, const WeirSubset *sb, Use use,
                              char **why) {
  if (sb->rank != m->b_rank) {
    *why = g_strdup("its subset has the wrong rank");
    return NULL;
  }
  return m->kind == MAP_AFFINE ? map_affine(m, sb, use, why)
                               : map_reshape(m, sb, use, why);
}

/* ------------------------------------------------------------ the site */

typedef struct {
  WeirState *s;
  guint a, b;           /* access nodes */
  guint entry, exit, t; /* copy map (0: a copy memlet) */
  guint copy;           /* the copy memlet (copy memlet form) */
  const WeirContainer *ca, *cb;
  IndexMap map;
  GArray *readers; /* guint memlet ids reading B, by id */
  GPtrArray *uses; /* Use per reader (GUINT_TO_POINTER) */
} Copy;

static void copy_clear(Copy *c) {
  index_map_clear(&c->map);
  g_clear_pointer(&c->readers, g_array_unref);
  g_clear_pointer(&c->uses, g_ptr_array_unref);
}

static gboolean fail(char **reason, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean fail(char **reason, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  *reason = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  return FALSE;
}

/* The copy tasklet of a map: one statement "out = in". */
static gboolean is_copy_tasklet(const WeirNode *t) {
  if (t->kind != WEIR_NODE_TASKLET || !t->code || t->in_conns->len != 1 ||
      t->out_conns->len != 1 || t->code->stmts->len != 1)
    return FALSE;
  const WeirStmt *st = g_ptr_array_index(t->code->stmts, 0);
  return st->target->kind == WEIR_AST_NAME &&
         st->value->kind == WEIR_AST_NAME &&
         strcmp(st->target->name, g_ptr_array_index(t->out_conns, 0)) == 0 &&
         strcmp(st->value->name, g_ptr_array_index(t->in_conns, 0)) == 0;
}

/* Memlets of s entering / leaving node (borrowed pointers). */
static GPtrArray *ins(const WeirState *s, guint node) {
  return weir_state_in_edges(s, node);
}

static GPtrArray *outs(const WeirState *s, guint node) {
  return weir_state_out_edges(s, node);
}

static WeirMemlet *only(GPtrArray *edges) {
  return edges->len == 1 ? g_ptr_array_index(edges, 0) : NULL;
}

/* e decomposed as coef * p + rest, with p one of params: *param = -1 when e
 * has no parameter.  FALSE when e is not of that form. */
static gboolean affine_in_params(WeirExpr *e, const WeirMap *mp, gint *param,
                                 gint64 *coef, WeirExpr **rest) {
  g_autoptr(GHashTable) zero =
      g_hash_table_new(g_str_hash, g_str_equal); /* name -> WeirExpr* */
  g_autoptr(WeirExpr) z = weir_expr_const(0);
  for (guint k = 0; k < mp->params->len; k++)
    g_hash_table_insert(zero, g_ptr_array_index(mp->params, k), z);
  WeirExpr *r = weir_expr_substitute(e, zero);
  *param = -1;
  *coef = 0;
  for (guint k = 0; k < mp->params->len; k++) {
    g_autoptr(WeirExpr) one = weir_expr_const(1);
    g_hash_table_insert(zero, g_ptr_array_index(mp->params, k), one);
    g_autoptr(WeirExpr) at1 = weir_expr_substitute(e, zero);
    g_hash_table_insert(zero, g_ptr_array_index(mp->params, k), z);
    g_autoptr(WeirExpr) d = weir_expr_sub(at1, r);
    gint64 c;
    if (!weir_expr_is_const(d, &c)) {
      weir_expr_unref(r);
      return FALSE;
    }
    if (c == 0)
      continue;
    if (*param >= 0 || c < 0) {
      weir_expr_unref(r);
      return FALSE;
    }
    *param = (gint)k;
    *coef = c;
  }
  /* check: e == coef * p + rest */
  g_autoptr(WeirExpr) back = NULL;
  if (*param >= 0) {
    g_autoptr(WeirExpr) p =
        weir_expr_symbol(g_ptr_array_index(mp->params, *param));
    back = affine_point(*coef, p, r);
  } else {
    back = weir_expr_ref(r);
  }
  if (!weir_expr_equal(back, e)) {
    weir_expr_unref(r);
    return FALSE;
  }
  *rest = r;
  return TRUE;
}

/* The copy map's index map: B[q_0, ..., q_n] = A[affine in q]. */
static gboolean map_from_copy_map(Copy *c, const WeirNode *entry,
                                  const WeirMemlet *rd, const WeirMemlet *wr,
                                  char **reason) {
  const WeirMap *mp = entry->map;
  guint np = mp->params->len, rb = c->cb->shape->len, ra = c->ca->shape->len;
  if (wr->subset->rank != rb || rd->subset->rank != ra)
    return fail(reason, "the copy map's memlets have the wrong rank");
  if (np != rb)
    return fail(reason,
                "map '%s' has %u parameters for the %u dimensions of '%s'",
                entry->label, np, rb, c->cb->name);
  g_autofree gint *dim_of = g_new0(gint, np ? np : 1); /* param -> B dim */
  for (guint k = 0; k < np; k++)
    dim_of[k] = -1;
  for (guint j = 0; j < rb; j++) {
    const WeirRange *r = &wr->subset->dims[j];
    gint p = -1;
    if (t4_range_is_single(r) && weir_expr_kind(r->begin) == WEIR_EXPR_SYMBOL) {
      for (guint k = 0; k < np; k++)
        if (strcmp(weir_expr_symbol_name(r->begin),
                   g_ptr_array_index(mp->params, k)) == 0)
          p = (gint)k;
    }
    if (p < 0 || dim_of[p] >= 0)
      return fail(reason,
                  "map '%s' does not write each element of '%s' once "
                  "(dimension %u is not indexed by its own parameter)",
                  entry->label, c->cb->name, j);
    const WeirRange *pr = &g_array_index(mp->ranges, WeirRange, p);
    if (!range_is_full(pr, g_ptr_array_index(c->cb->shape, j)))
      return fail(reason,
                  "map '%s' does not cover all of '%s' (parameter '%s' ranges "
                  "over part of dimension %u)",
                  entry->label, c->cb->name,
                  (const char *)g_ptr_array_index(mp->params, p), j);
    dim_of[p] = (gint)j;
  }
  affine_init(&c->map, ra, rb);
  g_autofree gboolean *used = g_new0(gboolean, np ? np : 1);
  for (guint k = 0; k < ra; k++) {
    const WeirRange *r = &rd->subset->dims[k];
    gint p;
    gint64 coef;
    WeirExpr *rest = NULL;
    if (!t4_range_is_single(r) ||
        !affine_in_params(r->begin, mp, &p, &coef, &rest))
      return fail(reason,
                  "map '%s' reads '%s' at an index that is not affine in one "
                  "parameter (dimension %u)",
                  entry->label, c->ca->name, k);
    c->map.offset[k] = rest;
    if (p >= 0) {
      if (used[p])
        return fail(reason,
                    "map '%s' reads '%s' with parameter '%s' in two "
                    "dimensions",
                    entry->label, c->ca->name,
                    (const char *)g_ptr_array_index(mp->params, p));
      used[p] = TRUE;
      c->map.src[k] = dim_of[p];
      c->map.scale[k] = coef;
    } else {
      c->map.src[k] = -1;
      c->map.scale[k] = 0;
    }
  }
  return TRUE;
}

/* The copy memlet's index map. */
static gboolean map_from_copy_memlet(Copy *c, const WeirMemlet *m,
                                     char **reason) {
  const WeirSubset *sa = t4_memlet_subset_on(c->s, m, c->ca->name);
  const WeirSubset *sb = t4_memlet_subset_on(c->s, m, c->cb->name);
  if (!sa || !sb)
    return fail(reason, "memlet %u is not a copy from '%s' to '%s'", m->id,
                c->ca->name, c->cb->name);
  if (!t4_subset_is_full(sb, c->cb)) {
    g_autofree char *text = weir_subset_to_string(sb);
    return fail(reason, "memlet %u writes only '%s' of '%s'", m->id, text,
                c->cb->name);
  }
  guint ra = c->ca->shape->len, rb = c->cb->shape->len;
  gboolean same_sizes = ra == rb;
  for (guint k = 0; same_sizes && k < ra; k++) {
    g_autoptr(WeirExpr) size = weir_range_size(&sa->dims[k]);
    gint64 st;
    same_sizes = weir_expr_equal(size, g_ptr_array_index(c->cb->shape, k)) &&
                 weir_expr_is_const(sa->dims[k].step, &st) && st > 0;
  }
  if (same_sizes) {
    affine_init(&c->map, ra, rb);
    for (guint k = 0; k < ra; k++) {
      c->map.src[k] = (gint)k;
      weir_expr_is_const(sa->dims[k].step, &c->map.scale[k]);
      c->map.offset[k] = weir_expr_ref(sa->dims[k].begin);
    }
    return TRUE;
  }
  if (!t4_subset_is_full(sa, c->ca)) {
    g_autofree char *text = weir_subset_to_string(sa);
    return fail(reason,
                "memlet %u copies part '%s' of '%s' into '%s' of another "
                "shape",
                m->id, text, c->ca->name, c->cb->name);
  }
  return reshape_init(&c->map, c->ca, c->cb, reason);
}

static Use reader_use(const WeirState *s, const WeirMemlet *m,
                      const WeirSubset *sb) {
  const WeirNode *dst = weir_state_node(s, m->dst);
  switch (dst->kind) {
  case WEIR_NODE_MAP_ENTRY:
    return USE_UNION;
  case WEIR_NODE_ACCESS:
    return t4_subset_is_single(sb) ? USE_SCALAR : USE_COPY;
  case WEIR_NODE_TASKLET:
    return t4_subset_is_single(sb) ? USE_SCALAR : USE_INDEXED;
  case WEIR_NODE_LIBRARY:
  case WEIR_NODE_NESTED:
  case WEIR_NODE_MAP_EXIT:
  case WEIR_NODE_KIND_COUNT:
    break;
  }
  return USE_WHOLE;
}

static gboolean same_shape(const WeirContainer *a, const WeirContainer *b) {
  if (a->shape->len != b->shape->len)
    return FALSE;
  for (guint k = 0; k < a->shape->len; k++)
    if (!weir_expr_equal(g_ptr_array_index(a->shape, k),
                         g_ptr_array_index(b->shape, k)))
      return FALSE;
  return TRUE;
}

/* Everything can_apply checks; fills c. */
static gboolean analyse(const WeirGraph *gc, const WeirSite *site, Copy *c,
                        char **reason) {
  WeirGraph *g = (WeirGraph *)gc;
  memset(c, 0, sizeof(*c));
  c->s = weir_graph_state(g, site->state);
  if (!c->s || (site->n_nodes != 2 && site->n_nodes != 3))
    return fail(reason, "a site is [a, b] or [a, map entry, b]");
  WeirState *s = c->s;
  c->a = site->nodes[0];
  c->b = site->nodes[site->n_nodes - 1];
  const WeirNode *a = weir_state_node(s, c->a), *b = weir_state_node(s, c->b);
  if (!a || !b || a->kind != WEIR_NODE_ACCESS || b->kind != WEIR_NODE_ACCESS)
    return fail(reason, "the first and last nodes of the site must be access "
                        "nodes");
  c->ca = weir_graph_container(g, a->data);
  c->cb = weir_graph_container(g, b->data);
  if (!c->ca || !c->cb)
    return fail(reason, "unknown container");
  const char *an = c->ca->name, *bn = c->cb->name;
  if (c->ca == c->cb)
    return fail(reason, "'%s' is copied onto itself", an);
  if (!c->cb->transient)
    return fail(reason,
                "'%s' is an argument of the program: its copy is a result", bn);
  if (c->cb->initial)
    return fail(reason, "'%s' has constant data", bn);
  if (c->ca->dtype != c->cb->dtype)
    return fail(reason, "'%s' is %s but '%s' is %s: the copy converts", an,
                weir_dtype_name(c->ca->dtype), bn,
                weir_dtype_name(c->cb->dtype));

  g_autoptr(T4State) ts = t4_state_new(s, NULL);
  if (!ts)
    return fail(reason, "the scopes of state %u are broken", s->id);
  if (t4_parent(ts, c->a) || t4_parent(ts, c->b))
    return fail(reason, "the copy is inside a map scope");
  /* B: one access node, in this state only, written once by the copy */
  if (t4_states_using(g, bn, NULL) != 1)
    return fail(reason, "'%s' is used in several states", bn);
  g_autoptr(GArray) bnodes = t4_access_nodes(s, bn);
  if (bnodes->len != 1)
    return fail(reason,
                "'%s' has %u access nodes; the copy must be its only "
                "definition",
                bn, bnodes->len);
  g_autoptr(GPtrArray) b_in = ins(s, c->b);
  WeirMemlet *w = only(b_in);
  if (!w)
    return fail(reason,
                "'%s' (node %u) has %u incoming memlets; the copy "
                "must be the only one",
                bn, c->b, b_in->len);
  if (w->wcr != WEIR_WCR_NONE || w->dynamic)
    return fail(reason, "memlet %u writes '%s' with %s", w->id, bn,
                w->dynamic ? "a dynamic volume" : "write-conflict resolution");

  if (site->n_nodes == 2) {
    if (w->src != c->a || !t4_memlet_is_copy(s, w))
      return fail(reason, "'%s' is not written by a copy from node %u", bn,
                  c->a);
    c->copy = w->id;
    if (!map_from_copy_memlet(c, w, reason))
      return FALSE;
  } else {
    c->entry = site->nodes[1];
    const WeirNode *e = weir_state_node(s, c->entry);
    if (!e || e->kind != WEIR_NODE_MAP_ENTRY)
      return fail(reason, "node %u is not a map entry", c->entry);
    const WeirNode *x = weir_state_map_exit(s, e);
    if (!x || w->src != x->id)
      return fail(reason, "'%s' is not written by map '%s'", bn, e->label);
    c->exit = x->id;
    /* the scope holds a single copy tasklet */
    guint inner = 0;
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (t4_parent(ts, n->id) == c->entry) {
        inner++;
        c->t = n->id;
      }
    }
    const WeirNode *t = weir_state_node(s, c->t);
    if (inner != 1 || !is_copy_tasklet(t))
      return fail(reason,
                  "map '%s' does more than copy one element per "
                  "iteration",
                  e->label);
    g_autoptr(GPtrArray) e_in = ins(s, c->entry);
    g_autoptr(GPtrArray) e_out = outs(s, c->entry);
    g_autoptr(GPtrArray) t_out = outs(s, c->t);
    g_autoptr(GPtrArray) x_in = ins(s, c->exit);
    g_autoptr(GPtrArray) x_out = outs(s, c->exit);
    WeirMemlet *ea = only(e_in), *rd = only(e_out), *wr = only(t_out);
    if (!ea || ea->src != c->a || g_strcmp0(ea->data, an) != 0 || !rd ||
        rd->dst != c->t || g_strcmp0(rd->data, an) != 0 || !wr ||
        g_strcmp0(wr->data, bn) != 0 || x_in->len != 1 || x_out->len != 1)
      return fail(reason, "map '%s' reads or writes more than '%s' -> '%s'",
                  e->label, an, bn);
    if (rd->dynamic || wr->dynamic || wr->wcr != WEIR_WCR_NONE)
      return fail(reason,
                  "map '%s' copies with dynamic or accumulating "
                  "memlets",
                  e->label);
    if (!t4_subset_is_full(w->subset, c->cb))
      return fail(reason, "map '%s' writes only part of '%s'", e->label, bn);
    if (!map_from_copy_map(c, e, rd, wr, reason))
      return FALSE;
  }

  /* A is not written by anything that may run after the copy */
  for (guint k = 0; k < s->nodes->len; k++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->kind != WEIR_NODE_ACCESS || g_strcmp0(n->data, an) != 0)
      continue;
    g_autoptr(GPtrArray) n_in = ins(s, n->id);
    gboolean written = FALSE;
    for (guint j = 0; j < n_in->len; j++)
      written |= ((WeirMemlet *)g_ptr_array_index(n_in, j))->data != NULL;
    if (written && !t4_reaches(ts, n->id, c->a))
      return fail(reason,
                  "'%s' is written at node %u, which may run after the copy "
                  "has read it",
                  an, n->id);
  }

  /* Every reader of B has an image on A. */
  c->readers = g_array_new(FALSE, FALSE, sizeof(guint));
  c->uses = g_ptr_array_new();
  for (guint k = 0; k < s->edges->len; k++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, k);
    const WeirSubset *sb = t4_memlet_subset_on(s, m, bn);
    if (!sb || m->id == w->id)
      continue;
    if (c->entry && (m->src == c->exit || m->dst == c->exit))
      continue; /* the copy map's own write */
    const WeirNode *src = weir_state_node(s, m->src);
    if (!(m->src == c->b ||
          (src->kind == WEIR_NODE_MAP_ENTRY && m->src_conn))) {
      return fail(reason, "memlet %u writes '%s'", m->id, bn);
    }
    Use use = reader_use(s, m, sb);
    char *why = NULL;
    WeirSubset *img = map_subset(&c->map, sb, use, &why);
    if (!img) {
      const WeirNode *dst = weir_state_node(s, m->dst);
      gboolean ok = fail(reason,
                         "memlet %u (%s of %s '%s') cannot read '%s' "
                         "instead of '%s': %s",
                         m->id, use_name(use), weir_node_kind_name(dst->kind),
                         dst->label, an, bn, why);
      g_free(why);
      return ok;
    }
    gboolean whole_ok = use != USE_WHOLE || (t4_subset_is_full(sb, c->cb) &&
                                             t4_subset_is_full(img, c->ca) &&
                                             same_shape(c->ca, c->cb));
    weir_subset_free(img);
    if (!whole_ok) {
      const WeirNode *dst = weir_state_node(s, m->dst);
      return fail(reason,
                  "memlet %u (%s of %s '%s') cannot read '%s' "
                  "instead of '%s': it needs the whole container and "
                  "the copy is not the identity",
                  m->id, use_name(use), weir_node_kind_name(dst->kind),
                  dst->label, an, bn);
    }
    g_array_append_val(c->readers, m->id);
    g_ptr_array_add(c->uses, GUINT_TO_POINTER(use));
  }
  return TRUE;
}

/* ------------------------------------------------------ the framework API */

static int cmp_site(gconstpointer pa, gconstpointer pb) {
  const WeirSite *a = pa, *b = pb;
  if (a->state != b->state)
    return a->state < b->state ? -1 : 1;
  for (guint k = 0; k < MIN(a->n_nodes, b->n_nodes); k++)
    if (a->nodes[k] != b->nodes[k])
      return a->nodes[k] < b->nodes[k] ? -1 : 1;
  return (int)a->n_nodes - (int)b->n_nodes;
}

static gboolean transient_access(const WeirGraph *g, const WeirNode *n) {
  if (!n || n->kind != WEIR_NODE_ACCESS)
    return FALSE;
  const WeirContainer *c = weir_graph_container(g, n->data);
  return c && c->transient && !c->initial;
}

/* Candidates by shape only: copies into a transient access node and maps
 * holding a single "y = x" tasklet between two access nodes. */
static void match(const WeirGraph *g, GArray *sites) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    g_autoptr(T4State) ts = t4_state_new(s, NULL);
    if (!ts)
      continue;
    for (guint k = 0; k < s->edges->len; k++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, k);
      if (!t4_memlet_is_copy(s, m))
        continue;
      const WeirNode *a = weir_state_node(s, m->src);
      const WeirNode *b = weir_state_node(s, m->dst);
      if (g_strcmp0(a->data, b->data) == 0 || !transient_access(g, b) ||
          t4_parent(ts, b->id))
        continue;
      WeirSite site = {.state = s->id, .n_nodes = 2, .nodes = {a->id, b->id}};
      g_array_append_val(sites, site);
    }
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *e = g_ptr_array_index(s->nodes, k);
      if (e->kind != WEIR_NODE_MAP_ENTRY || t4_parent(ts, e->id))
        continue;
      const WeirNode *x = weir_state_map_exit(s, e);
      g_autoptr(GPtrArray) e_in = ins(s, e->id);
      g_autoptr(GPtrArray) e_out = outs(s, e->id);
      WeirMemlet *ea = only(e_in), *rd = only(e_out);
      if (!x || !ea || !ea->data || !rd ||
          !is_copy_tasklet(weir_state_node(s, rd->dst)))
        continue;
      g_autoptr(GPtrArray) x_out = outs(s, x->id);
      WeirMemlet *xb = only(x_out);
      const WeirNode *a = weir_state_node(s, ea->src);
      const WeirNode *b = xb ? weir_state_node(s, xb->dst) : NULL;
      if (!xb || a->kind != WEIR_NODE_ACCESS || !transient_access(g, b) ||
          g_strcmp0(a->data, b->data) == 0)
        continue;
      WeirSite site = {
          .state = s->id, .n_nodes = 3, .nodes = {a->id, e->id, b->id}};
      g_array_append_val(sites, site);
    }
  }
  g_array_sort(sites, cmp_site);
}

static gboolean can_apply(const WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, char **reason) {
  (void)params;
  Copy c;
  gboolean ok = analyse(g, site, &c, reason);
  copy_clear(&c);
  return ok;
}

static gboolean apply(WeirGraph *g, const WeirSite *site,
                      const WeirParams *params, GError **error) {
  (void)params;
  Copy c;
  g_autofree char *reason = NULL;
  if (!analyse(g, site, &c, &reason)) {
    copy_clear(&c);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  WeirState *s = c.s;
  g_autofree char *an = g_strdup(c.ca->name);
  g_autofree char *bn = g_strdup(c.cb->name);
  gboolean ok = TRUE;
  for (guint k = 0; k < c.readers->len && ok; k++) {
    WeirMemlet *m = weir_state_memlet(s, g_array_index(c.readers, guint, k));
    Use use = GPOINTER_TO_UINT(g_ptr_array_index(c.uses, k));
    char *why = NULL;
    WeirSubset *img =
        map_subset(&c.map, t4_memlet_subset_on(s, m, bn), use, &why);
    g_free(why);
    if (!img) {
      ok = FALSE;
      break;
    }
    if (m->src == c.b) {
      WeirMemlet *n = t4_memlet_clone(g, s, m, c.a, m->src_conn, m->dst,
                                      m->dst_conn, error);
      if (!n) {
        weir_subset_free(img);
        ok = FALSE;
        break;
      }
      weir_state_remove_memlet(s, m->id);
      m = n;
    }
    gboolean names_b = strcmp(m->data, bn) == 0;
    t4_memlet_replace_subset_on(s, m, bn, img);
    if (names_b)
      weir_memlet_set_data(m, an);
  }
  /* ordering edges leaving b now leave a */
  g_autoptr(GPtrArray) b_out = outs(s, c.b);
  for (guint k = 0; k < b_out->len && ok; k++) {
    const WeirMemlet *m = g_ptr_array_index(b_out, k);
    if (m->data)
      continue;
    ok =
        t4_memlet_clone(g, s, m, c.a, NULL, m->dst, m->dst_conn, error) != NULL;
  }
  if (ok) {
    if (c.entry) {
      weir_state_remove_node(s, c.t);
      weir_state_remove_node(s, c.exit);
      weir_state_remove_node(s, c.entry);
    }
    weir_state_remove_node(s, c.b);
    weir_graph_remove_container(g, bn);
  } else if (error && !*error) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "state %u: rewriting the readers of '%s' failed", s->id, bn);
  }
  copy_clear(&c);
  return ok;
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "redundant-copy-removal",
    .tier = 4,
    .description = "let the readers of a transient that only copies another "
                   "container read that container, and remove the copy",
    .match = match,
    .can_apply = can_apply,
    .apply = apply,
};

gboolean weir_tier4_register_redundant_copy(GError **error) {
  return weir_transform_register(&info, error);
}
