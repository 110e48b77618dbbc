/* map.c — maps as loop nests: OpenMP pragmas and local accumulators for
 * write-conflict-resolved memlets.
 *
 * Conventions:
 *  - One Frame per open map while its body is generated; the body is
 *    generated before the loop headers, because what it contains (atomic
 *    updates, conflicting writes) decides the pragmas.
 *  - A parallel map that is not inside another parallel or simd loop gets
 *    "#pragma omp parallel for" (with collapse); a simd map "#pragma omp
 *    simd" on its innermost loop unless a write may conflict.
 *  - Stores and the rule for when an update is atomic are access.c's;
 *    this file decides where accumulators go and combines them.
 *  - A map's body is a scope level of nodes again: it is emitted through
 *    the emitter table (gen->emit->nodes), not by naming dataflow.c, which
 *    sits above this file (codegen-private.h, "Layering").
 */
#include <string.h>

#include "codegen-private.h"

/* ------------------------------------------------ write-conflict resolution */

/* The neutral element of wcr in dtype, as C text: the start of an
 * accumulator whose combine is atomic.  A sum starts at -0.0, which leaves
 * every value (also -0.0) unchanged. */
static const char *wcr_identity(WeirWcr wcr, WeirDType t) {
  gboolean flt = weir_dtype_is_float(t);
  switch (wcr) {
  case WEIR_WCR_SUM:
    if (flt)
      return t == WEIR_DTYPE_F32 ? "-0.0f" : "-0.0";
    return "0";
  case WEIR_WCR_PROD:
    return t == WEIR_DTYPE_F32 ? "1.0f" : t == WEIR_DTYPE_F64 ? "1.0" : "1";
  case WEIR_WCR_MAX:
    switch (t) {
    case WEIR_DTYPE_I32:
      return "INT32_MIN";
    case WEIR_DTYPE_I64:
      return "INT64_MIN";
    case WEIR_DTYPE_I8:
      return "INT8_MIN";
    case WEIR_DTYPE_I16:
      return "INT16_MIN";
    case WEIR_DTYPE_BOOL:
    case WEIR_DTYPE_U8:
    case WEIR_DTYPE_U16:
    case WEIR_DTYPE_U32:
    case WEIR_DTYPE_U64:
      return "0";
    default:
      return "-INFINITY";
    }
  case WEIR_WCR_MIN:
    switch (t) {
    case WEIR_DTYPE_I32:
      return "INT32_MAX";
    case WEIR_DTYPE_I64:
      return "INT64_MAX";
    case WEIR_DTYPE_BOOL:
      return "1";
    case WEIR_DTYPE_U8:
      return "UINT8_MAX";
    case WEIR_DTYPE_I8:
      return "INT8_MAX";
    case WEIR_DTYPE_I16:
      return "INT16_MAX";
    case WEIR_DTYPE_U16:
      return "UINT16_MAX";
    case WEIR_DTYPE_U32:
      return "UINT32_MAX";
    case WEIR_DTYPE_U64:
      return "UINT64_MAX";
    default:
      return "INFINITY";
    }
  default:
    break;
  }
  g_return_val_if_reached("0");
}

/* --------------------------------------------------------------------- maps */

static void emit_private_decls(Fn *f, Out *o, guint entry_id) {
  for (guint i = 0; i < f->cinfo->len; i++) {
    CInfo *ci = g_ptr_array_index(f->cinfo, i);
    if (ci->st != ST_PRIVATE || ci->private_map != entry_id || !ci->used)
      continue;
    gint64 span = 1;
    weir_expr_is_const(ci->span, &span);
    cg_out_line(o, "%s %s[%" G_GINT64_FORMAT "] = {0};",
                cg_storage_type(ci->c->dtype), ci->cname, span > 0 ? span : 1);
  }
}

static char *map_description(const WeirNode *entry) {
  const WeirMap *map = entry->map;
  GString *s = g_string_new(NULL);
  g_autofree char *label = cg_comment_text(entry->label);
  g_string_append_printf(s, "map %u '%s': ", entry->id, label);
  for (guint k = 0; k < map->params->len; k++) {
    g_autofree char *r =
        weir_range_to_string(&g_array_index(map->ranges, WeirRange, k));
    g_autofree char *p = cg_comment_text(g_ptr_array_index(map->params, k));
    g_autofree char *rc = cg_comment_text(r);
    g_string_append_printf(s, "%s%s in %s", k ? ", " : "", p, rc);
  }
  g_string_append_printf(s, " (%s", weir_schedule_name(map->schedule));
  for (guint k = 0; k < map->tile->len; k++) {
    gint64 t = g_array_index(map->tile, gint64, k);
    if (t > 0)
      g_string_append_printf(s, ", tile %s by %" G_GINT64_FORMAT,
                             (const char *)g_ptr_array_index(map->params, k),
                             t);
  }
  if (map->unroll > 1)
    g_string_append_printf(s, ", unroll %u", map->unroll);
  if (map->collapse > 1)
    g_string_append_printf(s, ", collapse %u", map->collapse);
  g_string_append_c(s, ')');
  return g_string_free(s, FALSE);
}

typedef struct {
  const char *var; /* C name of the loop variable */
  char *begin, *end, *step;
  gboolean unit_step;
  gboolean rect; /* bounds do not depend on the map's other loops */
  int param;     /* index of the map parameter; -1 for a tile loop */
} Loop;

/* ------------------------------------------------------------- accumulators */

/* A reduction inside a map nest, a tasklet output memlet with write-conflict
 * resolution onto one element that does not change in the innermost loops,
 * is accumulated in a local: declared before the outermost loop the element
 * does not depend on, updated by the tasklet, combined into memory after
 * that loop.  The host map is the innermost one whose parameters the
 * element depends on (or the outermost map of the nest when it depends on
 * none).  The local starts from the element when the combine is a plain
 * store (the additions happen in the same order as without it, so results
 * are bit-identical), from the neutral element when it is atomic.
 *
 * Conditions: the subset has one element; nothing else inside the host
 * reads or writes the container (other than the map exits passing this
 * write on); the loops it hoists over are not divided among threads (the
 * host's "omp parallel for" loops stay outside, and no map inside would get
 * its own); the container is not private to the host or a map inside.  An
 * element that does not depend on the host's parallel loops gets a local
 * inside them (per iteration), combined atomically. */

typedef struct {
  StateCtx *sc;
  Frame *fr;
  GArray *loops;     /* Loop of the host */
  guint n_par;       /* leading loops under "omp parallel for" */
  GHashTable *scope; /* node ids inside the host (a set) */
  GPtrArray *chain;  /* map entries between the host and the tasklet */
} AccScan;

static void scope_collect(StateCtx *sc, guint entry, GHashTable *set) {
  GArray *ch = g_hash_table_lookup(sc->children, GUINT_TO_POINTER(entry));
  for (guint k = 0; ch && k < ch->len; k++) {
    guint id = g_array_index(ch, guint, k);
    g_hash_table_add(set, GUINT_TO_POINTER(id));
    const WeirNode *n = weir_state_node(sc->s, id);
    if (n && n->kind == WEIR_NODE_MAP_ENTRY)
      scope_collect(sc, id, set);
  }
}

/* Is m the only access to its container inside the host (map exits that
 * pass writes outward aside)? */
static gboolean acc_alone(AccScan *a, const WeirMemlet *m) {
  const WeirState *s = a->sc->s;
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *e = g_ptr_array_index(s->edges, i);
    if (e == m || g_strcmp0(e->data, m->data) != 0)
      continue;
    if (!g_hash_table_contains(a->scope, GUINT_TO_POINTER(e->src)) &&
        !g_hash_table_contains(a->scope, GUINT_TO_POINTER(e->dst)))
      continue;
    const WeirNode *src = weir_state_node(s, e->src);
    const WeirNode *dst = weir_state_node(s, e->dst);
    if (!src || !dst || src->kind != WEIR_NODE_MAP_EXIT ||
        dst->kind != WEIR_NODE_MAP_EXIT)
      return FALSE;
  }
  return TRUE;
}

static void acc_consider(AccScan *a, const WeirMemlet *m) {
  Fn *f = a->sc->f;
  if (m->wcr == WEIR_WCR_NONE || !m->data || !m->subset ||
      g_hash_table_contains(a->sc->hosted, m) ||
      !cg_subset_is_scalar(m->subset))
    return;
  CInfo *ci = g_hash_table_lookup(f->cbyname, m->data);
  if (!ci)
    return;
  if (ci->st == ST_PRIVATE) {
    if (ci->private_map == a->fr->entry->id)
      return;
    for (guint k = 0; k < a->chain->len; k++)
      if (((const WeirNode *)g_ptr_array_index(a->chain, k))->id ==
          ci->private_map)
        return;
  }
  /* the parameters the element depends on */
  g_autoptr(GHashTable) deps =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint d = 0; d < m->subset->rank; d++) {
    const WeirRange *r = &m->subset->dims[d];
    WeirExpr *parts[] = {r->begin, r->end, r->step};
    for (guint j = 0; j < G_N_ELEMENTS(parts); j++) {
      if (!parts[j])
        continue;
      g_autoptr(GPtrArray) names = weir_expr_symbols(parts[j]);
      for (guint i = 0; i < names->len; i++)
        g_hash_table_add(deps, g_strdup(g_ptr_array_index(names, i)));
    }
  }
  Frame *fr = a->fr;
  for (guint k = 0; k < a->chain->len; k++) {
    const WeirNode *x = g_ptr_array_index(a->chain, k);
    const WeirMap *xm = x->map;
    for (guint j = 0; j < xm->params->len; j++)
      if (g_hash_table_contains(deps, g_ptr_array_index(xm->params, j)))
        return; /* a map inside hosts it */
    if (f->gen->openmp && xm->schedule == WEIR_SCHEDULE_PARALLEL &&
        !fr->in_region)
      return; /* that map will divide its loops among threads */
  }
  guint level = 0;
  const WeirMap *map = fr->entry->map;
  for (guint i = 0; i < a->loops->len; i++) {
    const Loop *l = &g_array_index(a->loops, Loop, i);
    if (l->param >= 0 &&
        g_hash_table_contains(deps, g_ptr_array_index(map->params, l->param)))
      level = i + 1;
  }
  if (level < a->n_par) /* the local lives inside the parallel loops */
    level = a->n_par;
  if (level == a->loops->len && a->chain->len == 0)
    return; /* nothing to hoist over */
  if (!acc_alone(a, m))
    return;
  Acc *acc = g_new0(Acc, 1);
  acc->m = m;
  acc->ci = ci;
  acc->level = level;
  g_autofree char *base = g_strdup_printf("%s_acc", ci->cname);
  acc->name = cg_namer_fresh(f->names, base);
  if (!fr->accs)
    fr->accs = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(fr->accs, acc);
  g_hash_table_add(a->sc->hosted, (gpointer)m);
}

static void acc_scan(AccScan *a, guint entry) {
  StateCtx *sc = a->sc;
  GArray *ch = g_hash_table_lookup(sc->children, GUINT_TO_POINTER(entry));
  for (guint k = 0; ch && k < ch->len; k++) {
    guint id = g_array_index(ch, guint, k);
    const WeirNode *n = weir_state_node(sc->s, id);
    if (!n)
      continue;
    if (n->kind == WEIR_NODE_TASKLET) {
      for (guint i = 0; i < sc->s->edges->len; i++) {
        const WeirMemlet *m = g_ptr_array_index(sc->s->edges, i);
        if (m->src == id)
          acc_consider(a, m);
      }
    } else if (n->kind == WEIR_NODE_MAP_ENTRY) {
      g_ptr_array_add(a->chain, (gpointer)n);
      acc_scan(a, id);
      g_ptr_array_set_size(a->chain, a->chain->len - 1);
    }
  }
}

/* Declares the accumulators that start before loop `level`. */
static void acc_open(Fn *f, Out *o, GPtrArray *accs, guint level) {
  for (guint k = 0; accs && k < accs->len; k++) {
    const Acc *a = g_ptr_array_index(accs, k);
    if (a->level != level)
      continue;
    WeirDType dt = a->ci->c->dtype;
    g_autofree char *init = NULL;
    if (a->atomic && weir_dtype_is_half(dt)) {
      init = cg_half_bits(f->gen, dt, wcr_identity(a->m->wcr, dt));
    } else if (a->atomic) {
      init = g_strdup(wcr_identity(a->m->wcr, dt));
    } else {
      g_autoptr(GPtrArray) off = cg_subset_offset(a->ci, a->m->subset);
      init = cg_elem_ref(f, a->ci, off);
    }
    cg_out_line(o, "%s %s = %s; /* %s into %s */", cg_storage_type(dt), a->name,
                init, weir_wcr_name(a->m->wcr), a->ci->cname);
  }
}

/* Combines the accumulators that end after loop `level` into memory. */
static void acc_close(Fn *f, Out *o, GPtrArray *accs, guint level) {
  for (guint k = 0; accs && k < accs->len; k++) {
    const Acc *a = g_ptr_array_index(accs, k);
    if (a->level != level)
      continue;
    g_autoptr(GPtrArray) off = cg_subset_offset(a->ci, a->m->subset);
    g_autofree char *lv = cg_elem_ref(f, a->ci, off);
    if (a->atomic && weir_dtype_is_half(a->ci->c->dtype)) {
      g_autofree char *v = cg_half_load(f->gen, a->ci->c->dtype, a->name);
      cg_emit_update(f, o, a->ci->c->dtype, lv, a->m->wcr, v, TRUE);
    } else if (a->atomic) {
      cg_emit_update(f, o, a->ci->c->dtype, lv, a->m->wcr, a->name, TRUE);
    } else {
      cg_out_line(o, "%s = %s;", lv, a->name);
    }
  }
}

/* Chooses the accumulators fr's map hosts (fr->accs). */
static void acc_plan(StateCtx *sc, Frame *fr, GArray *loops, guint n_par) {
  g_autoptr(GHashTable) scope = g_hash_table_new(g_direct_hash, g_direct_equal);
  g_autoptr(GPtrArray) chain = g_ptr_array_new();
  scope_collect(sc, fr->entry->id, scope);
  AccScan a = {.sc = sc,
               .fr = fr,
               .loops = loops,
               .n_par = n_par,
               .scope = scope,
               .chain = chain};
  acc_scan(&a, fr->entry->id);
}

/* Does a memlet inside the map of entry (or on its entry or exit) resolve
 * write conflicts? */
static gboolean scope_has_wcr(StateCtx *sc, const WeirNode *entry) {
  g_autoptr(GHashTable) scope = g_hash_table_new(g_direct_hash, g_direct_equal);
  scope_collect(sc, entry->id, scope);
  g_hash_table_add(scope, GUINT_TO_POINTER(entry->id));
  for (guint i = 0; i < sc->s->edges->len; i++) {
    const WeirMemlet *e = g_ptr_array_index(sc->s->edges, i);
    if (e->wcr != WEIR_WCR_NONE &&
        (g_hash_table_contains(scope, GUINT_TO_POINTER(e->src)) ||
         g_hash_table_contains(scope, GUINT_TO_POINTER(e->dst))))
      return TRUE;
  }
  return FALSE;
}

/* Whether every write-conflict resolution of a tasklet inside the map of
 * entry writes distinct elements for distinct values of the map's first
 * n parameters (so splitting them over threads needs no atomic update:
 * global average pooling at batch 1 split over its channels). */
static gboolean wcr_split_free(StateCtx *sc, const WeirNode *entry, guint n) {
  g_autoptr(GHashTable) scope = g_hash_table_new(g_direct_hash, g_direct_equal);
  scope_collect(sc, entry->id, scope);
  g_autoptr(GHashTable) inner = g_hash_table_new(g_str_hash, g_str_equal);
  const WeirMap *map = entry->map;
  for (guint k = 0; k < map->params->len; k++)
    g_hash_table_add(inner, g_ptr_array_index(map->params, k));
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, scope);
  while (g_hash_table_iter_next(&it, &key, NULL)) {
    const WeirNode *x = weir_state_node(sc->s, GPOINTER_TO_UINT(key));
    if (x && x->kind == WEIR_NODE_MAP_ENTRY && x->map)
      for (guint k = 0; k < x->map->params->len; k++)
        g_hash_table_add(inner, g_ptr_array_index(x->map->params, k));
  }
  for (guint i = 0; i < sc->s->edges->len; i++) {
    const WeirMemlet *e = g_ptr_array_index(sc->s->edges, i);
    if (e->wcr == WEIR_WCR_NONE ||
        !g_hash_table_contains(scope, GUINT_TO_POINTER(e->src)))
      continue;
    const WeirNode *src = weir_state_node(sc->s, e->src);
    if (!src || src->kind != WEIR_NODE_TASKLET)
      continue;
    if (!e->subset || !cg_subset_injective(e->subset, map, n, inner))
      return FALSE;
  }
  return TRUE;
}

/* The number of leading loops "omp parallel for" divides: the map's
 * collapse depth over rectangular loops (at least one), extended past
 * leading loops of one iteration (a batch of 1: "for (i0 = 0; i0 < 1;
 * i0++)" would put the whole map on one thread) when nothing in the map
 * resolves write conflicts, or when every such write still goes to
 * distinct elements per thread (splitting other parameters would make
 * the writes atomic). */
static guint par_depth(StateCtx *sc, const WeirNode *entry, GArray *loops) {
  const WeirMap *map = entry->map;
  guint nrect = 0;
  while (nrect < loops->len && g_array_index(loops, Loop, nrect).rect)
    nrect++;
  guint c = MAX(1, MIN(map->collapse, nrect));
  int wcr = -1; /* not looked up yet */
  while (c < nrect) {
    gboolean single = TRUE;
    for (guint k = 0; k < c && single; k++) {
      const Loop *l = &g_array_index(loops, Loop, k);
      gint64 sz = 0;
      g_autoptr(WeirExpr) size =
          l->param >= 0 ? weir_range_size(&g_array_index(map->ranges, WeirRange,
                                                         (guint)l->param))
                        : NULL;
      single = size && weir_expr_is_const(size, &sz) && sz == 1;
    }
    if (!single)
      break;
    if (wcr == -1)
      wcr = scope_has_wcr(sc, entry);
    /* (the check names parameters: only without tile loops) */
    if (wcr &&
        (loops->len != map->params->len || !wcr_split_free(sc, entry, c + 1)))
      break;
    c++;
  }
  return c;
}

/* -------------------------------------------------------- tiled transposes */

/* The blocks a transposing map is tiled into: 32 elements along the
 * written lines (the innermost parameter), 8 along the read ones (r).  A
 * block reads 32 runs of 8 elements and writes 8 rows: 8 lines written at
 * once fit the 8 ways of an L1 set even when the rows are 4 KiB apart (with
 * 32 rows a 1024 x 256 transpose took 16 times longer). */
#define TRANSPOSE_TILE 32
#define TRANSPOSE_TILE_R 8

/* How far the offset of element memlet m moves when parameter p grows by
 * one, if that is a constant (FALSE otherwise). */
static gboolean memlet_stride(Fn *f, const WeirMemlet *m, const char *p,
                              gint64 *stride) {
  CInfo *ci = g_hash_table_lookup(f->cbyname, m->data);
  if (!ci || ci->strides->len != m->subset->rank)
    return FALSE;
  g_autoptr(WeirExpr) pe = weir_expr_symbol(p);
  g_autoptr(WeirExpr) next = weir_expr_add_const(pe, 1);
  g_autoptr(WeirExpr) delta = weir_expr_const(0);
  for (guint d = 0; d < m->subset->rank; d++) {
    WeirExpr *ix = m->subset->dims[d].begin;
    g_autoptr(WeirExpr) moved = weir_expr_substitute_one(ix, p, next);
    g_autoptr(WeirExpr) diff = weir_expr_sub(moved, ix);
    g_autoptr(WeirExpr) term =
        weir_expr_mul(diff, g_ptr_array_index(ci->strides, d));
    g_autoptr(WeirExpr) sum = weir_expr_add(delta, term);
    g_clear_pointer(&delta, weir_expr_unref);
    delta = weir_expr_simplify(sum);
  }
  return weir_expr_is_const(delta, stride);
}

/* A map that copies (or computes element-wise) with its innermost
 * parameter moving the writes by one element while a read moves by one
 * element along another parameter r: a transpose.  Its loops, in parameter
 * order, read that operand down a column, one cache line per element
 * (about 4 GB/s on a 1 MB f32 matrix, a tenth of the bandwidth).  Tiled in
 * blocks over r and the innermost parameter, with r the innermost loop
 * inside a block, the reads run along lines and the block's written rows
 * stay in cache until they are full (a C test of the 1 MB copy, 256 x 1024
 * and 1024 x 256: 84-95 us, 22-25 GB/s, against 470 us untiled).  Conditions:
 * the map is parallel and not inside another parallel or vectorized loop, not
 * tiled already, its body one tasklet whose memlets are single elements, none
 * of its writes resolving conflicts and each moving by one element along the
 * innermost parameter, the transposed read moving by at least a block along it
 * (or by a symbolic stride); its ranges unit-step and free of its own
 * parameters; r and the innermost parameter at least one block long. Iterations
 * of such a map are independent, so any order computes the same.  Sets *r_out.
 */
static gboolean transpose_plan(StateCtx *sc, const WeirNode *entry,
                               gboolean region, guint *r_out) {
  const WeirMap *map = entry->map;
  guint np = map->params->len;
  if (region || np < 2 || map->schedule != WEIR_SCHEDULE_PARALLEL)
    return FALSE;
  for (guint k = 0; k < map->tile->len; k++)
    if (g_array_index(map->tile, gint64, k) > 0)
      return FALSE;
  GArray *ch = g_hash_table_lookup(sc->children, GUINT_TO_POINTER(entry->id));
  if (!ch || ch->len != 1)
    return FALSE;
  guint tid = g_array_index(ch, guint, 0);
  const WeirNode *t = weir_state_node(sc->s, tid);
  if (!t || t->kind != WEIR_NODE_TASKLET)
    return FALSE;
  g_autoptr(GHashTable) params = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint k = 0; k < np; k++)
    g_hash_table_add(params, g_ptr_array_index(map->params, k));
  for (guint k = 0; k < np; k++) {
    const WeirRange *r = &g_array_index(map->ranges, WeirRange, k);
    gint64 sv;
    if (!weir_expr_is_const(r->step, &sv) || sv != 1)
      return FALSE;
    g_autoptr(GHashTable) used =
        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    weir_expr_collect_symbols(r->begin, used);
    weir_expr_collect_symbols(r->end, used);
    GHashTableIter it;
    gpointer key;
    g_hash_table_iter_init(&it, used);
    while (g_hash_table_iter_next(&it, &key, NULL))
      if (g_hash_table_contains(params, key))
        return FALSE;
  }
  const char *q = g_ptr_array_index(map->params, np - 1);
  int r = -1;
  gboolean writes = FALSE;
  for (guint i = 0; i < sc->s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(sc->s->edges, i);
    if (m->src != tid && m->dst != tid)
      continue;
    if (!m->data || !m->subset)
      continue;
    if (!cg_subset_is_scalar(m->subset))
      return FALSE;
    gint64 sq = 0;
    gboolean known = memlet_stride(sc->f, m, q, &sq);
    if (m->src == tid) {
      if (m->wcr != WEIR_WCR_NONE || !known || sq != 1)
        return FALSE;
      writes = TRUE;
      continue;
    }
    /* a read along q (or broadcast over it) is not the transposed one;
     * nor is one whose column walk over q stays in cache: at most 128
     * lines (8 KiB) in distinct L1 sets (its stride not a multiple of 4
     * KiB).  (The attention's 32 batches of 64 x 128 f32 transposes took
     * twice as long tiled.) */
    gboolean across = !known || sq >= TRANSPOSE_TILE || sq <= -TRANSPOSE_TILE;
    if (across && known) {
      CInfo *ci = g_hash_table_lookup(sc->f->cbyname, m->data);
      gint64 bytes =
          (sq < 0 ? -sq : sq) *
          (gint64)weir_dtype_size(ci ? ci->c->dtype : WEIR_DTYPE_F32);
      const WeirRange *rq = &g_array_index(map->ranges, WeirRange, np - 1);
      g_autoptr(WeirExpr) nq_e = weir_range_size(rq);
      gint64 nq;
      if (weir_expr_is_const(nq_e, &nq) && nq <= 128 && bytes % 4096 != 0)
        across = FALSE;
    }
    for (guint k = 0; k + 1 < np && r < 0 && across; k++) {
      gint64 sk = 0;
      if (memlet_stride(sc->f, m, g_ptr_array_index(map->params, k), &sk) &&
          sk == 1)
        r = (int)k;
    }
  }
  if (!writes || r < 0)
    return FALSE;
  guint dims[2] = {(guint)r, np - 1};
  for (guint j = 0; j < 2; j++) {
    const WeirRange *rg = &g_array_index(map->ranges, WeirRange, dims[j]);
    g_autoptr(WeirExpr) size = weir_range_size(rg);
    gint64 n;
    if (weir_expr_is_const(size, &n) &&
        n < (j == 0 ? TRANSPOSE_TILE_R : TRANSPOSE_TILE))
      return FALSE;
  }
  *r_out = (guint)r;
  return TRUE;
}

void cg_emit_map(StateCtx *sc, Out *o, const WeirNode *entry, Frame *up) {
  Fn *f = sc->f;
  const WeirMap *map = entry->map;
  gboolean region = FALSE, simd_above = FALSE;
  for (Frame *x = up; x; x = x->up) {
    region = region || x->par_root || x->simd;
    simd_above = simd_above || x->simd;
  }
  Frame fr = {.up = up, .entry = entry};
  fr.par_root =
      f->gen->openmp && map->schedule == WEIR_SCHEDULE_PARALLEL && !region;
  fr.simd =
      f->gen->openmp && map->schedule == WEIR_SCHEDULE_SIMD && !simd_above;
  fr.in_region = region || fr.par_root || fr.simd;

  guint np = map->params->len;
  /* The loops as (parameter, tile loop or not) in nesting order: tile
   * loops of tiled parameters, then one per parameter; a transpose: its
   * other parameters, then the blocks over r and the innermost one, then
   * the innermost one and r in the block (r innermost: the read moves
   * along its lines, the 32 written rows of a block stay in cache). */
  g_autofree gint64 *tiles = g_new0(gint64, np + 1);
  for (guint k = 0; k < np && k < map->tile->len; k++)
    tiles[k] = g_array_index(map->tile, gint64, k);
  g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(gint));
  guint tr = 0;
  gboolean transpose = transpose_plan(sc, entry, region, &tr);
  if (transpose) {
    for (guint k = 0; k + 1 < np; k++)
      if (k != tr)
        g_array_append_val(order, k);
    gint spec[4] = {-1 - (gint)tr, -(gint)np, (gint)np - 1, (gint)tr};
    g_array_append_vals(order, spec, 4);
    tiles[tr] = TRANSPOSE_TILE_R;
    tiles[np - 1] = TRANSPOSE_TILE;
  } else {
    for (guint k = 0; k < np; k++)
      if (tiles[k] > 0) {
        gint v = -1 - (gint)k;
        g_array_append_val(order, v);
      }
    for (guint k = 0; k < np; k++)
      g_array_append_val(order, k);
  }
  g_autoptr(GArray) loops = g_array_new(FALSE, TRUE, sizeof(Loop));
  g_autofree const char **tile_var = g_new0(const char *, np + 1);
  gboolean rect = TRUE;
  for (guint i = 0; i < order->len; i++) {
    gint spec = g_array_index(order, gint, i);
    guint k = spec < 0 ? (guint)(-1 - spec) : (guint)spec;
    const char *pname = g_ptr_array_index(map->params, k);
    const WeirRange *r = &g_array_index(map->ranges, WeirRange, k);
    if (spec < 0) {
      g_autofree char *base = g_strdup_printf("%s_tile", pname);
      Loop l = {
          .var = cg_namer_fresh(f->names, base), .rect = rect, .param = -1};
      g_autoptr(WeirExpr) st = weir_expr_mul_const(r->step, tiles[k]);
      l.begin = cg_sym_text(f, r->begin);
      l.end = cg_sym_text(f, r->end);
      l.step = cg_sym_text(f, st);
      tile_var[k] = l.var;
      g_array_append_val(loops, l);
      continue;
    }
    Loop l = {.var = cg_namer_get(f->names, "p", pname), .param = (int)k};
    gint64 sv;
    l.unit_step = weir_expr_is_const(r->step, &sv) && sv == 1;
    l.step = cg_sym_text(f, r->step);
    if (tiles[k] > 0) {
      g_autofree char *key = g_strdup_printf("$tile%u.%u", entry->id, k);
      g_autoptr(WeirExpr) tv = cg_synth_symbol(f, key, tile_var[k]);
      g_autoptr(WeirExpr) st = weir_expr_mul_const(r->step, tiles[k]);
      g_autoptr(WeirExpr) stop = weir_expr_add(tv, st);
      g_autoptr(WeirExpr) bound = weir_expr_min(stop, r->end);
      l.begin = g_strdup(tile_var[k]);
      l.end = cg_sym_text(f, bound);
      rect = FALSE;
    } else {
      l.begin = cg_sym_text(f, r->begin);
      l.end = cg_sym_text(f, r->end);
    }
    l.rect = rect;
    g_array_append_val(loops, l);
  }

  guint n_par = 0;
  if (fr.par_root) {
    /* the loops "omp parallel for" divides (as printed below) */
    /* a transpose divides every loop outside the blocks' elements */
    n_par = transpose ? np : par_depth(sc, entry, loops);
    fr.n_split = loops->len == np ? n_par : 0;
  }
  acc_plan(sc, &fr, loops, n_par);

  /* the body first: what it contains decides the pragmas */
  Out body = cg_out_new(0);
  GArray *children =
      g_hash_table_lookup(sc->children, GUINT_TO_POINTER(entry->id));
  if (children)
    f->gen->emit->nodes(sc, &body, children, &fr);
  g_autofree char *inner = cg_out_free(&body);
  for (guint k = 0; fr.accs && k < fr.accs->len; k++) {
    Acc *a = g_ptr_array_index(fr.accs, k);
    a->atomic = cg_store_atomic(f, &fr, a->ci, a->m->subset);
  }
  Out decls = cg_out_new(0);
  emit_private_decls(f, &decls, entry->id);
  g_autofree char *priv = cg_out_free(&decls);

  g_autofree char *desc = map_description(entry);
  acc_open(f, o, fr.accs, 0);
  cg_out_line(o, "/* %s */", desc);
  if (transpose)
    cg_out_line(
        o, "/* tiled transpose: blocks of %d %s by %d %s */", TRANSPOSE_TILE_R,
        (const char *)g_ptr_array_index(map->params, tr), TRANSPOSE_TILE,
        (const char *)g_ptr_array_index(map->params, np - 1));
  if (fr.simd && fr.simd_drop)
    cg_out_line(o, "/* not vectorized: %s */", fr.why_drop);
  guint depth0 = o->depth;
  for (guint i = 0; i < loops->len; i++) {
    Loop *l = &g_array_index(loops, Loop, i);
    gboolean last = i + 1 == loops->len;
    if (i > 0)
      acc_open(f, o, fr.accs, i);
    if (i == 0 && fr.par_root) {
      if (n_par > 1)
        cg_out_line(o, "#pragma omp parallel for collapse(%u)", n_par);
      else
        cg_out_line(o, "#pragma omp parallel for");
    }
    gboolean simd = last && fr.simd && !fr.simd_drop;
    if (simd && map->unroll > 1) /* GCC takes one of the two on a loop */
      cg_out_line(o, "/* unroll %u left to the vectorizer */", map->unroll);
    if (simd)
      cg_out_line(o, "#pragma omp simd");
    else if (last && map->unroll > 1)
      cg_out_line(o, "#pragma GCC unroll %u", map->unroll);
    if (l->unit_step)
      cg_out_line(o, "for (int64_t %s = %s; %s < %s; %s++) {", l->var, l->begin,
                  l->var, l->end, l->var);
    else
      cg_out_line(o, "for (int64_t %s = %s; %s < %s; %s += %s) {", l->var,
                  l->begin, l->var, l->end, l->var, l->step);
    o->depth++;
  }
  cg_out_paste(o, priv);
  if (loops->len > 0) /* level 0 opens before the map's comment */
    acc_open(f, o, fr.accs, loops->len);
  cg_out_paste(o, inner);
  if (loops->len > 0) /* level 0 closes after the outermost loop */
    acc_close(f, o, fr.accs, loops->len);
  while (o->depth > depth0) {
    o->depth--;
    cg_out_line(o, "}");
    acc_close(f, o, fr.accs, o->depth - depth0);
  }
  g_clear_pointer(&fr.accs, g_ptr_array_unref);
  for (guint i = 0; i < loops->len; i++) {
    Loop *l = &g_array_index(loops, Loop, i);
    g_free(l->begin);
    g_free(l->end);
    g_free(l->step);
  }
}
