/* access.c — how emitted code touches memory: the memlets on a connector,
 * stores with write-conflict resolution (atomic or not), and the local
 * accumulator an enclosing map holds for a memlet.
 *
 * Copies (dataflow.c), tasklets (tasklet.c) and maps (map.c) all write
 * through here, so the rule for when an update must be atomic is written
 * once, below the emitters that use it.
 *
 * Conventions:
 *  - Write-conflict resolution is atomic only when iterations that run on
 *    different threads may update the same element (cg_store_atomic); a
 *    possible conflict between the lanes of a simd loop withdraws its
 *    "omp simd" instead (Frame.simd_drop).
 */
#include "codegen-private.h"

/* ------------------------------------------------------------------ memlets */

GPtrArray *cg_conn_memlets(const WeirState *s, guint node, const char *conn,
                           gboolean input) {
  GPtrArray *r = g_ptr_array_new();
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (!m->data)
      continue;
    if (input ? (m->dst == node && g_strcmp0(m->dst_conn, conn) == 0)
              : (m->src == node && g_strcmp0(m->src_conn, conn) == 0))
      g_ptr_array_add(r, m);
  }
  return r;
}

/* ------------------------------------------------ write-conflict resolution */

/* TRUE when, for every parameter p among the first n_params of map (0:
 * all), some dimension of sub starts at c*p + rest with a constant c != 0,
 * rest free of the parameters in `inner` (this map's and those of maps
 * inside it), and a region narrower than |c|: distinct values of those
 * parameters then touch distinct elements. */
static gboolean subset_injective(const WeirSubset *sub, const WeirMap *map,
                                 guint n_params, GHashTable *inner) {
  guint np = n_params ? MIN(n_params, map->params->len) : map->params->len;
  for (guint k = 0; k < np; k++) {
    const char *p = g_ptr_array_index(map->params, k);
    gboolean found = FALSE;
    g_autoptr(WeirExpr) zero = weir_expr_const(0);
    g_autoptr(WeirExpr) one = weir_expr_const(1);
    for (guint d = 0; d < sub->rank && !found; d++) {
      WeirExpr *b = sub->dims[d].begin;
      g_autoptr(WeirExpr) b0 = weir_expr_substitute_one(b, p, zero);
      g_autoptr(WeirExpr) b1 = weir_expr_substitute_one(b, p, one);
      g_autoptr(WeirExpr) diff = weir_expr_sub(b1, b0);
      gint64 c;
      if (!weir_expr_is_const(diff, &c) || c == 0)
        continue;
      g_autoptr(WeirExpr) sym = weir_expr_symbol(p);
      g_autoptr(WeirExpr) cp = weir_expr_mul_const(sym, c);
      g_autoptr(WeirExpr) rest = weir_expr_sub(b, cp);
      g_autoptr(GPtrArray) names = weir_expr_symbols(rest);
      gboolean clean = TRUE;
      for (guint i = 0; i < names->len && clean; i++)
        clean = !g_hash_table_contains(inner, g_ptr_array_index(names, i));
      if (!clean)
        continue;
      g_autoptr(WeirExpr) size = weir_range_size(&sub->dims[d]);
      gint64 sz, st;
      if (!weir_expr_is_const(size, &sz))
        continue;
      if (sz > 1 && (!weir_expr_is_const(sub->dims[d].step, &st) ||
                     (sz - 1) * st >= (c < 0 ? -c : c)))
        continue;
      found = TRUE;
    }
    if (!found)
      return FALSE;
  }
  return TRUE;
}

/* Decides how a write-conflict resolution into sub is done inside fr:
 * TRUE when it needs an atomic update (iterations of the parallel loop
 * may write the same element).  Also withdraws "omp simd" from enclosing
 * simd loops whose iterations may conflict. */
static gboolean wcr_needs_atomic(Frame *fr, const WeirSubset *sub,
                                 guint private_map) {
  g_autoptr(GHashTable) inner = g_hash_table_new(g_str_hash, g_str_equal);
  gboolean atomic = FALSE;
  /* a transient private to a map's body is shared only by the loops
   * inside that map */
  for (Frame *x = fr; x && x->entry->id != private_map; x = x->up) {
    const WeirMap *map = x->entry->map;
    for (guint k = 0; k < map->params->len; k++)
      g_hash_table_add(inner, g_ptr_array_index(map->params, k));
    if (!x->par_root && !x->simd)
      continue;
    /* threads own distinct values of the split parameters only; a simd
     * loop's lanes differ in the last one, checked over all of them */
    if (subset_injective(sub, map, x->par_root ? x->n_split : 0, inner))
      continue;
    if (x->par_root)
      atomic = TRUE;
    else if (!x->simd_drop) {
      x->simd_drop = TRUE;
      x->why_drop = "iterations may update the same element";
    }
  }
  if (atomic)
    for (Frame *x = fr; x && x->entry->id != private_map; x = x->up)
      if (x->simd && !x->simd_drop) {
        x->simd_drop = TRUE;
        x->why_drop = "atomic update inside";
      }
  return atomic;
}

gboolean cg_frame_parallel(const Frame *fr) {
  for (; fr; fr = fr->up)
    if (fr->par_root)
      return TRUE;
  return FALSE;
}

void cg_emit_update(Fn *f, Out *o, WeirDType dtype, const char *lvalue,
                    WeirWcr wcr, const char *value, gboolean atomic) {
  gboolean minmax = wcr == WEIR_WCR_MIN || wcr == WEIR_WCR_MAX;
  if (dtype == WEIR_DTYPE_BOOL) {
    /* 0/1 values: sum and max are "or", product and min are "and" */
    if (atomic)
      cg_out_line(o, "#pragma omp atomic");
    gboolean any = wcr == WEIR_WCR_SUM || wcr == WEIR_WCR_MAX;
    cg_out_line(o, "%s %s= %s;", lvalue, any ? "|" : "&", value);
    return;
  }
  if (weir_dtype_is_half(dtype)) {
    /* loaded, combined in double (exact for two f16 values), rounded */
    if (atomic) { /* a compare-and-swap loop on the 16 bits */
      g_free(cg_helper(f->gen, H_ATOMIC_HALF, dtype));
      cg_out_line(o, "weir_atomic_%s_%s(&%s, %s);", weir_wcr_name(wcr),
                  weir_dtype_name(dtype), lvalue, value);
      return;
    }
    g_autofree char *old = cg_half_load(f->gen, dtype, lvalue);
    g_autofree char *comb = NULL;
    if (minmax) {
      g_autofree char *h =
          cg_helper(f->gen, wcr == WEIR_WCR_MIN ? H_MIN : H_MAX, dtype);
      comb = g_strdup_printf("%s(%s, %s)", h, old, value);
    } else {
      comb = g_strdup_printf("(double)%s %s (double)(%s)", old,
                             wcr == WEIR_WCR_SUM ? "+" : "*", value);
    }
    g_autofree char *bits = cg_half_bits(f->gen, dtype, comb);
    cg_out_line(o, "%s = %s;", lvalue, bits);
    return;
  }
  if (minmax) {
    HelperKind k = wcr == WEIR_WCR_MIN ? (atomic ? H_ATOMIC_MIN : H_MIN)
                                       : (atomic ? H_ATOMIC_MAX : H_MAX);
    g_autofree char *h = cg_helper(f->gen, k, dtype);
    if (atomic)
      cg_out_line(o, "%s(&%s, %s);", h, lvalue, value);
    else
      cg_out_line(o, "%s = %s(%s, %s);", lvalue, h, lvalue, value);
    return;
  }
  if (atomic)
    cg_out_line(o, "#pragma omp atomic");
  cg_out_line(o, "%s %s= %s;", lvalue, wcr == WEIR_WCR_SUM ? "+" : "*", value);
}

gboolean cg_subset_injective(const WeirSubset *sub, const WeirMap *map,
                             guint n_params, GHashTable *inner) {
  return subset_injective(sub, map, n_params, inner);
}

gboolean cg_store_atomic(Fn *f, Frame *fr, const CInfo *ci,
                         const WeirSubset *sub) {
  return f->gen->openmp && fr &&
         wcr_needs_atomic(fr, sub, ci->st == ST_PRIVATE ? ci->private_map : 0);
}

void cg_emit_store(Fn *f, Out *o, Frame *fr, const CInfo *ci,
                   const char *lvalue, const WeirSubset *sub, WeirWcr wcr,
                   const char *value) {
  if (wcr == WEIR_WCR_NONE) {
    if (weir_dtype_is_half(ci->c->dtype)) {
      g_autofree char *bits = cg_half_bits(f->gen, ci->c->dtype, value);
      cg_out_line(o, "%s = %s;", lvalue, bits);
    } else {
      cg_out_line(o, "%s = %s;", lvalue, value);
    }
    return;
  }
  gboolean atomic = cg_store_atomic(f, fr, ci, sub);
  cg_emit_update(f, o, ci->c->dtype, lvalue, wcr, value, atomic);
}

const Acc *cg_frame_acc(const Frame *fr, const WeirMemlet *m) {
  for (; fr; fr = fr->up)
    for (guint k = 0; fr->accs && k < fr->accs->len; k++) {
      const Acc *a = g_ptr_array_index(fr->accs, k);
      if (a->m == m)
        return a;
    }
  return NULL;
}
