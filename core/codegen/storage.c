/* storage.c — where each container lives, and its declarations.
 *
 * Storage (see the Storage enum): arguments of the entry point, static
 * const arrays for constant data, local arrays for small fixed-size
 * transients (private to a map body inside a parallel loop when only that
 * body uses them), one 64-byte aligned arena for the others, views for the
 * arguments of a nested function.
 *
 * Conventions:
 *  - Transients start zero-filled (like the interpreter's), except those a
 *    single producer writes whole before anything reads them
 *    (needs_no_zero_fill).
 *  - Declarations are generated after the body, so only the containers the
 *    body references are declared.
 */
#include <string.h>

#include "codegen-private.h"

/* Transients up to this size (bytes, fixed shape) live on the stack, as
 * long as a function's stack transients stay under STACK_BUDGET. */
#define STACK_MAX 4096
#define STACK_BUDGET 16384

/* --------------------------------------------------------------- containers */

/* TRUE when some memlet writes container `name` of g: one into an access
 * node of it, or an input of a nested program that writes its argument. */
static gboolean graph_writes(const WeirGraph *g, const char *name) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint e = 0; e < s->edges->len; e++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, e);
      if (!m->data)
        continue;
      const WeirNode *d = weir_state_node(s, m->dst);
      if (!d)
        continue;
      if (d->kind == WEIR_NODE_ACCESS && g_strcmp0(d->data, name) == 0)
        return TRUE;
      if (d->kind == WEIR_NODE_NESTED && d->nested && m->dst_conn &&
          g_strcmp0(m->data, name) == 0 && graph_writes(d->nested, m->dst_conn))
        return TRUE;
    }
  }
  return FALSE;
}

/* Elements the storage of c spans: its volume when row-major, else one
 * more than the offset of the last element. */
static WeirExpr *storage_span(const WeirContainer *c) {
  if (weir_kernel_row_major(c))
    return weir_container_volume(c);
  WeirExpr *acc = weir_expr_const(1);
  for (guint d = 0; d < c->shape->len; d++) {
    gint64 v;
    if (weir_expr_is_const(g_ptr_array_index(c->shape, d), &v) && v == 0) {
      weir_expr_unref(acc);
      return weir_expr_const(0);
    }
    g_autoptr(WeirExpr) last =
        weir_expr_add_const(g_ptr_array_index(c->shape, d), -1);
    g_autoptr(WeirExpr) t =
        weir_expr_mul(last, g_ptr_array_index(c->strides, d));
    WeirExpr *next = weir_expr_add(acc, t);
    weir_expr_unref(acc);
    acc = next;
  }
  return acc;
}

/* The scope (map entry id) that runs the memlet. */
static guint memlet_scope(const WeirState *s, const WeirScopes *sc,
                          const WeirMemlet *m) {
  const WeirNode *src = weir_state_node(s, m->src);
  const WeirNode *dst = weir_state_node(s, m->dst);
  if (src && src->kind == WEIR_NODE_MAP_ENTRY)
    return src->id;
  if (dst && dst->kind == WEIR_NODE_MAP_EXIT)
    return dst->entry;
  return weir_scopes_parent(sc, m->src);
}

/* Deepest common enclosing scope of scopes a and b (0: top level). */
static guint common_scope(const WeirScopes *sc, guint a, guint b) {
  for (guint x = a;; x = weir_scopes_parent(sc, x)) {
    for (guint y = b;; y = weir_scopes_parent(sc, y)) {
      if (x == y)
        return x;
      if (y == 0)
        break;
    }
    if (x == 0)
      return 0;
  }
}

/* The map whose body can declare transient c privately: c is used in one
 * state only, every use is inside that map, and the map runs inside a
 * parallel or simd loop (so a shared copy would be a data race).  0 when
 * there is none. */
static guint private_scope(Fn *f, const WeirContainer *c,
                           GPtrArray *scopes /* WeirScopes* per state */) {
  if (!f->gen->openmp)
    return 0;
  guint found = 0, where = 0;
  const WeirState *in = NULL;
  const WeirScopes *in_sc = NULL;
  for (guint i = 0; i < f->g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(f->g->states, i);
    const WeirScopes *sc = g_ptr_array_index(scopes, i);
    gboolean touched = FALSE;
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_ACCESS || g_strcmp0(n->data, c->name) != 0)
        continue;
      if (!sc)
        return 0;
      guint x = weir_scopes_parent(sc, n->id);
      where = touched || found ? common_scope(sc, where, x) : x;
      touched = TRUE;
      found = 1;
    }
    for (guint e = 0; e < s->edges->len; e++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, e);
      if (g_strcmp0(m->data, c->name) != 0)
        continue;
      if (!sc)
        return 0;
      guint x = memlet_scope(s, sc, m);
      where = touched || found ? common_scope(sc, where, x) : x;
      touched = TRUE;
      found = 1;
    }
    if (touched) {
      if (in)
        return 0; /* used in two states */
      in = s;
      in_sc = sc;
    }
  }
  if (!in || where == 0)
    return 0;
  for (guint x = where; x; x = weir_scopes_parent(in_sc, x)) {
    const WeirNode *e = weir_state_node(in, x);
    if (e && e->map && e->map->schedule != WEIR_SCHEDULE_SEQUENTIAL)
      return where;
  }
  return 0;
}

void cg_fn_classify(Fn *f, const WeirMemlet *const *bind) {
  WeirGraph *g = f->g;
  g_autoptr(GPtrArray) scopes =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_scopes_free);
  for (guint i = 0; i < g->states->len; i++)
    g_ptr_array_add(scopes,
                    weir_state_scopes(g_ptr_array_index(g->states, i), NULL));
  gint64 stack_used = 0;
  guint arg_k = 0;
  for (guint j = 0; j < g->containers->len; j++) {
    WeirContainer *c = g_ptr_array_index(g->containers, j);
    CInfo *ci = g_new0(CInfo, 1);
    g_ptr_array_add(f->cinfo, ci);
    g_hash_table_insert(f->cbyname, c->name, ci);
    ci->c = c;
    ci->cname = cg_namer_get(f->names, "c", c->name);
    ci->written = graph_writes(g, c->name);
    ci->strides =
        g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
    for (guint d = 0; d < c->strides->len; d++)
      g_ptr_array_add(ci->strides,
                      weir_expr_ref(g_ptr_array_index(c->strides, d)));
    if (f->entry && !c->transient && !c->initial) {
      ci->st = ST_ARG;
      ci->arg_index = arg_k++;
      continue;
    }
    if (!f->entry && !c->transient && bind && bind[j]) {
      ci->st = ST_VIEW;
      g_ptr_array_set_size(ci->strides, 0);
      for (guint d = 0; d < c->shape->len; d++) {
        g_autofree char *key = g_strdup_printf("$%u.s%u", j, d);
        g_autofree char *base = g_strdup_printf("%s_s%u", ci->cname, d);
        const char *cname = cg_namer_fresh(f->names, base);
        g_ptr_array_add(ci->strides, cg_synth_symbol(f, key, cname));
      }
      continue;
    }
    if (!c->transient && !c->initial) {
      cg_gen_fail(f->gen, WEIR_ERROR_INVALID,
                  "%s: argument '%s' of the nested program is not connected",
                  f->where, c->name);
      continue;
    }
    if (c->initial && !weir_codegen_constant_is_literal(c)) {
      gpointer k = g_hash_table_lookup(f->gen->const_index, c->initial);
      if (!k)
        cg_gen_fail(f->gen, WEIR_ERROR_INVALID,
                    "%s: constant '%s' is not in the program's constant table",
                    f->where, c->name);
      ci->bound = GPOINTER_TO_UINT(k);
    }
    if (c->initial && !ci->written && weir_kernel_row_major(c)) {
      ci->st = ST_CONST;
      continue;
    }
    ci->init = c->initial != NULL;
    ci->span = storage_span(c);
    gint64 span;
    gboolean fixed = weir_expr_is_const(ci->span, &span);
    gint64 bytes = fixed ? span * (gint64)weir_dtype_size(c->dtype) : -1;
    guint pm = c->initial ? 0 : private_scope(f, c, scopes);
    if (pm && fixed && bytes <= STACK_MAX) {
      ci->st = ST_PRIVATE;
      ci->private_map = pm;
    } else if (fixed && bytes <= STACK_MAX &&
               stack_used + bytes <= STACK_BUDGET && !f->part_used) {
      /* (parts of a split entry point reach transients through the arena) */
      ci->st = ST_STACK;
      stack_used += bytes;
    } else {
      ci->st = ST_ARENA;
    }
  }
}

/* Constant data as a C initializer list, 8 values per line at depth. */
static void emit_data(Out *o, const WeirContainer *c) {
  gsize size;
  const guint8 *data = g_bytes_get_data(c->initial, &size);
  gsize es = weir_dtype_size(c->dtype);
  gsize n = es ? size / es : 0;
  GString *line = g_string_new(NULL);
  for (gsize i = 0; i < n; i++) {
    const guint8 *p = data + i * es;
    WeirValue v = {.type = c->dtype};
    switch (c->dtype) {
    case WEIR_DTYPE_F32: {
      guint32 bits;
      float x;
      memcpy(&bits, p, 4);
      bits = GUINT32_FROM_LE(bits);
      memcpy(&x, &bits, 4);
      v.f = x;
      break;
    }
    case WEIR_DTYPE_F64: {
      guint64 bits;
      memcpy(&bits, p, 8);
      bits = GUINT64_FROM_LE(bits);
      memcpy(&v.f, &bits, 8);
      break;
    }
    case WEIR_DTYPE_I32: {
      guint32 bits;
      memcpy(&bits, p, 4);
      v.i = (gint32)GUINT32_FROM_LE(bits);
      break;
    }
    case WEIR_DTYPE_I64: {
      guint64 bits;
      memcpy(&bits, p, 8);
      v.i = (gint64)GUINT64_FROM_LE(bits);
      break;
    }
    case WEIR_DTYPE_BOOL:
    case WEIR_DTYPE_U8:
      v.i = *p;
      break;
    case WEIR_DTYPE_I8:
      v.i = (gint8)*p;
      break;
    case WEIR_DTYPE_F16: /* the stored bits (uint16_t storage) */
    case WEIR_DTYPE_BF16:
    case WEIR_DTYPE_U16:
    case WEIR_DTYPE_I16: {
      guint16 bits;
      memcpy(&bits, p, 2);
      bits = GUINT16_FROM_LE(bits);
      v.i = c->dtype == WEIR_DTYPE_I16 ? (gint16)bits : bits;
      if (weir_dtype_is_half(c->dtype))
        v.type = WEIR_DTYPE_U16;
      break;
    }
    case WEIR_DTYPE_U32: {
      guint32 bits;
      memcpy(&bits, p, 4);
      v.i = GUINT32_FROM_LE(bits);
      break;
    }
    case WEIR_DTYPE_U64: {
      guint64 bits;
      memcpy(&bits, p, 8);
      v.i = (gint64)GUINT64_FROM_LE(bits);
      break;
    }
    case WEIR_DTYPE_COUNT:
      break;
    }
    int prec;
    g_autofree char *t = c->dtype == WEIR_DTYPE_BOOL
                             ? g_strdup(v.i ? "1" : "0")
                             : cg_format_value(v, &prec);
    g_string_append_printf(line, "%s%s,", line->len ? " " : "", t);
    if ((i + 1) % 8 == 0 || i + 1 == n) {
      cg_out_line(o, "%s", line->str);
      g_string_truncate(line, 0);
    }
  }
  g_string_free(line, TRUE);
}

char *cg_shape_text(const WeirContainer *c) {
  GString *s = g_string_new(weir_dtype_name(c->dtype));
  g_string_append_c(s, '[');
  for (guint d = 0; d < c->shape->len; d++) {
    g_autofree char *x = weir_expr_to_string(g_ptr_array_index(c->shape, d));
    g_string_append_printf(s, "%s%s", d ? ", " : "", x);
  }
  g_string_append_c(s, ']');
  if (!weir_kernel_row_major(c)) {
    g_string_append(s, " strides [");
    for (guint d = 0; d < c->strides->len; d++) {
      g_autofree char *x =
          weir_expr_to_string(g_ptr_array_index(c->strides, d));
      g_string_append_printf(s, "%s%s", d ? ", " : "", x);
    }
    g_string_append_c(s, ']');
  }
  g_autofree char *raw = g_string_free(s, FALSE);
  return cg_sanitize_comment(raw);
}

/* Copies constant data (row-major) into storage with other strides. */
static void emit_init_loops(Fn *f, Out *o, CInfo *ci, const char *src) {
  const WeirContainer *c = ci->c;
  guint r = c->shape->len;
  g_autoptr(Namer) names = cg_namer_new(f->names);
  g_autofree WeirExpr **idx = g_new0(WeirExpr *, r + 1);
  guint depth0 = o->depth;
  g_autoptr(WeirExpr) lin = weir_expr_const(0);
  for (guint d = 0; d < r; d++) {
    g_autofree char *base = g_strdup_printf("k%u", d);
    const char *v = cg_namer_fresh(names, base);
    g_autofree char *key = g_strdup_printf("$init%u.%u", c->id, d);
    idx[d] = cg_synth_symbol(f, key, v);
    g_autofree char *bound = cg_sym_text(f, g_ptr_array_index(c->shape, d));
    cg_out_line(o, "for (int64_t %s = 0; %s < %s; %s++) {", v, v, bound, v);
    o->depth++;
    WeirExpr *x = weir_expr_mul(lin, g_ptr_array_index(c->shape, d));
    WeirExpr *y = weir_expr_add(x, idx[d]);
    weir_expr_unref(x);
    weir_expr_unref(lin);
    lin = y;
  }
  g_autoptr(GPtrArray) off = cg_elem_offset(ci, idx);
  g_autofree char *dst = cg_elem_ref(f, ci, off);
  g_autofree char *l = cg_sym_text(f, lin);
  cg_out_line(o, "%s = %s[%s];", dst, src, l);
  while (o->depth > depth0) {
    o->depth--;
    cg_out_line(o, "}");
  }
  cg_free_exprs(g_steal_pointer(&idx), r);
}

/* ---------------------------------------------------------------- zero fill */

static gboolean expr_is_zero(WeirExpr *e) {
  gint64 v;
  return weir_expr_is_const(e, &v) && v == 0;
}

static const WeirNode *state_node(const WeirState *s, guint id) {
  for (guint k = 0; k < s->nodes->len; k++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, k);
    if (n->id == id)
      return n;
  }
  return NULL;
}

/* TRUE when the map exit x writes every element of c through its output
 * connector out_conn exactly once per execution: the memlet into x is a
 * tasklet's, without conflict resolution, to the element [p0, p1, ...] for
 * distinct parameters of the map whose ranges are 0:dim:1 of c (tasklets
 * assign every output on every execution). */
static gboolean map_writes_all(const WeirState *s, const WeirNode *x,
                               const char *out_conn, const WeirContainer *c) {
  if (!out_conn || !g_str_has_prefix(out_conn, "OUT_"))
    return FALSE;
  const WeirNode *entry = state_node(s, x->entry);
  if (!entry || !entry->map || entry->map->params->len != c->shape->len)
    return FALSE;
  const WeirMap *map = entry->map;
  g_autofree char *in_conn = g_strconcat("IN_", out_conn + 4, NULL);
  const WeirMemlet *inner = NULL;
  for (guint i = 0; i < s->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->dst == x->id && g_strcmp0(m->dst_conn, in_conn) == 0) {
      if (inner)
        return FALSE;
      inner = m;
    }
  }
  if (!inner || inner->wcr != WEIR_WCR_NONE || !inner->subset ||
      inner->subset->rank != c->shape->len)
    return FALSE;
  const WeirNode *src = state_node(s, inner->src);
  if (!src || src->kind != WEIR_NODE_TASKLET)
    return FALSE;
  g_autofree gboolean *seen = g_new0(gboolean, map->params->len + 1);
  for (guint d = 0; d < inner->subset->rank; d++) {
    const WeirRange *r = &inner->subset->dims[d];
    g_autoptr(WeirExpr) size = weir_range_size(r);
    gint64 one;
    if (weir_expr_kind(r->begin) != WEIR_EXPR_SYMBOL ||
        !weir_expr_is_const(size, &one) || one != 1)
      return FALSE;
    const char *p = weir_expr_symbol_name(r->begin);
    guint k = 0;
    while (k < map->params->len &&
           strcmp(g_ptr_array_index(map->params, k), p) != 0)
      k++;
    if (k == map->params->len || seen[k])
      return FALSE;
    seen[k] = TRUE;
    const WeirRange *mr = &g_array_index(map->ranges, WeirRange, k);
    gint64 st;
    if (!expr_is_zero(mr->begin) ||
        !weir_expr_equal(mr->end, g_ptr_array_index(c->shape, d)) ||
        !weir_expr_is_const(mr->step, &st) || st != 1)
      return FALSE;
  }
  return TRUE;
}

/* TRUE when transient c needs no zero fill: it has one access node in the
 * whole program (top level), written by one producer that writes all of it
 * without conflict resolution (a map as in map_writes_all, or a native
 * Gemm/MatMul/Conv), so every execution of that state writes it before
 * anything reads it (readers hang off the same access node). */
static gboolean needs_no_zero_fill(const WeirGraph *g, const WeirContainer *c) {
  const WeirState *where = NULL;
  const WeirNode *acc = NULL;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, c->name) == 0) {
        if (acc)
          return FALSE;
        acc = n;
        where = s;
      }
    }
  }
  if (!acc)
    return FALSE;
  const WeirMemlet *w = NULL;
  for (guint i = 0; i < where->edges->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(where->edges, i);
    if (m->dst != acc->id)
      continue;
    if (w || !m->data)
      return FALSE;
    w = m;
  }
  if (!w || w->wcr != WEIR_WCR_NONE || g_strcmp0(w->data, c->name) != 0 ||
      w->other || !w->subset || !cg_subset_is_whole(w->subset, c))
    return FALSE;
  const WeirNode *p = state_node(where, w->src);
  if (!p)
    return FALSE;
  if (p->kind == WEIR_NODE_MAP_EXIT)
    return map_writes_all(where, p, w->src_conn, c);
  if (p->kind == WEIR_NODE_LIBRARY &&
      (g_strcmp0(p->op, "Gemm") == 0 || g_strcmp0(p->op, "MatMul") == 0 ||
       g_strcmp0(p->op, "Conv") == 0) &&
      g_strcmp0(w->src_conn, "out0") == 0) {
    const WeirNativeImpl *ni = NULL;
    return weir_native_choice(g, where, p, &ni, NULL) && ni;
  }
  return FALSE;
}

/* ------------------------------------------------------------- declarations */

/* One block of a function's arena: a transient, or the scratch block. */
typedef struct {
  CInfo *ci;         /* the transient; NULL for the scratch block */
  const char *cname; /* borrowed */
  WeirExpr *span;    /* elements (borrowed) */
  WeirDType dtype;
  gboolean fill; /* zero-filled on entry */
} Block;

const char *cg_fn_scratch(Fn *f, WeirExpr *bytes) {
  if (f->part)
    f->part->uses_scratch = TRUE;
  if (!f->scratch_name)
    f->scratch_name = cg_namer_fresh(f->names, "scratch");
  gint64 a, b;
  if (!f->scratch)
    f->scratch = weir_expr_ref(bytes);
  else if (weir_expr_is_const(f->scratch, &a) &&
           weir_expr_is_const(bytes, &b)) {
    if (b > a) {
      weir_expr_unref(f->scratch);
      f->scratch = weir_expr_ref(bytes);
    }
  } else if (!weir_expr_equal(f->scratch, bytes)) {
    WeirExpr *m = weir_expr_max(f->scratch, bytes);
    weir_expr_unref(f->scratch);
    f->scratch = m;
  }
  return f->scratch_name;
}

/* The entry point's workspace size function: the arena's size for the
 * values in symbols[], computed like the entry point computes it (the size
 * lines in sizes_text, the total expression). */
static char *workspace_function(Fn *f, GArray *blocks, GString *sizes_text,
                                const char *total) {
  GString *ws = g_string_new(NULL);
  g_string_append_printf(ws,
                         "size_t %s_workspace_size(const int64_t "
                         "symbols[]) {\n",
                         f->gen->prefix);
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint b = 0; b < blocks->len; b++) {
    const Block *bl = &g_array_index(blocks, Block, b);
    g_autoptr(GPtrArray) names = weir_expr_symbols(bl->span);
    for (guint i = 0; i < names->len; i++) {
      const char *name = g_ptr_array_index(names, i);
      for (guint k = 0; k < f->g->symbols->len; k++) {
        char *sym = g_ptr_array_index(f->g->symbols, k);
        if (strcmp(sym, name) == 0 && g_hash_table_add(seen, sym))
          g_string_append_printf(ws, "  const int64_t %s = symbols[%u];\n",
                                 cg_namer_get(f->names, "s", name), k);
      }
    }
  }
  if (g_hash_table_size(seen) == 0)
    g_string_append(ws, "  (void)symbols;\n");
  g_string_append(ws, sizes_text->str);
  g_string_append_printf(ws, "  return %s;\n}\n\n", total);
  return g_string_free(ws, FALSE);
}

/* x bytes rounded up to a multiple of 64, as an expression. */
static WeirExpr *align64_expr(WeirExpr *x) {
  g_autoptr(WeirExpr) up = weir_expr_add_const(x, 63);
  g_autoptr(WeirExpr) sixty_four = weir_expr_const(64);
  g_autoptr(WeirExpr) q = weir_expr_floordiv(up, sixty_four);
  return weir_expr_mul_const(q, 64);
}

/* The arena: one 64-byte aligned block per transient, then the scratch
 * block of native calls and nested programs (not zero-filled).  The entry
 * point takes it from the caller's workspace, a nested function from the
 * caller's scratch (ws), else it is allocated for the call. */
static void emit_arena(Fn *f, Out *o, GArray *blocks) {
  gboolean fixed = TRUE;
  for (guint b = 0; b < blocks->len; b++) {
    gint64 v;
    fixed =
        fixed && weir_expr_is_const(g_array_index(blocks, Block, b).span, &v);
  }
  g_autoptr(GPtrArray) offsets = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) sizes = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GString) sizes_text = g_string_new(NULL);
  g_autoptr(WeirExpr) sum = weir_expr_const(0);
  char *total;
  for (guint b = 0; b < blocks->len; b++) {
    const Block *bl = &g_array_index(blocks, Block, b);
    g_autoptr(WeirExpr) bytes =
        weir_expr_mul_const(bl->span, (gint64)weir_dtype_size(bl->dtype));
    g_autoptr(WeirExpr) aligned = align64_expr(bytes);
    WeirExpr *next = weir_expr_add(sum, aligned);
    weir_expr_unref(sum);
    sum = next;
  }
  g_autoptr(WeirExpr) floor64 = weir_expr_const(64);
  f->arena_bytes = weir_expr_max(sum, floor64);
  if (fixed) {
    gint64 at = 0;
    for (guint b = 0; b < blocks->len; b++) {
      const Block *bl = &g_array_index(blocks, Block, b);
      gint64 span;
      weir_expr_is_const(bl->span, &span);
      g_ptr_array_add(offsets, g_strdup_printf("%" G_GINT64_FORMAT, at));
      if (bl->ci)
        bl->ci->at = g_strdup_printf("%" G_GINT64_FORMAT, at);
      else
        f->scratch_at = g_strdup_printf("%" G_GINT64_FORMAT, at);
      gint64 bytes = (span > 0 ? span : 0) * (gint64)weir_dtype_size(bl->dtype);
      g_ptr_array_add(sizes, g_strdup_printf("%" G_GINT64_FORMAT, bytes));
      at += (bytes + 63) / 64 * 64;
    }
    total = g_strdup_printf("%" G_GINT64_FORMAT, at > 0 ? at : 64);
  } else {
    g_autofree char *align = cg_helper(f->gen, H_ALIGN64, WEIR_DTYPE_I64);
    GString *acc = g_string_new(NULL);
    for (guint b = 0; b < blocks->len; b++) {
      const Block *bl = &g_array_index(blocks, Block, b);
      g_ptr_array_add(offsets, g_strdup(acc->len ? acc->str : "0"));
      g_autofree char *base = g_strdup_printf("%s_bytes", bl->cname);
      const char *bn = cg_namer_fresh(f->names, base);
      int p;
      g_autofree char *span = cg_wrap(cg_sym_c(f, bl->span, &p), &p, P_UNARY);
      g_autofree char *line =
          g_strdup_printf("const size_t %s = %s((size_t)%s * sizeof(%s));", bn,
                          align, span, cg_storage_type(bl->dtype));
      cg_out_line(o, "%s", line);
      g_string_append_printf(sizes_text, "  %s\n", line);
      g_ptr_array_add(sizes, g_strdup(bn));
      g_string_append_printf(acc, "%s%s", acc->len ? " + " : "", bn);
    }
    const char *tn = cg_namer_fresh(f->names, "arena_bytes");
    cg_out_line(o, "const size_t %s = %s;", tn, acc->str);
    g_string_append_printf(sizes_text, "  const size_t %s = %s;\n", tn,
                           acc->str);
    g_string_free(acc, TRUE);
    total = g_strdup_printf("%s > 0 ? %s : 64", tn, tn);
  }
  if (f->entry) {
    /* the caller's workspace, of workspace_size(symbols) bytes, or an
     * arena of its own */
    cg_out_line(o,
                "unsigned char *const arena = workspace ? (unsigned char "
                "*)workspace : aligned_alloc(64, %s);",
                total);
    f->gen->workspace_fn = workspace_function(f, blocks, sizes_text, total);
  } else
    cg_out_line(o,
                "unsigned char *const arena = ws ? ws : aligned_alloc(64, %s);",
                total);
  cg_out_line(o, "if (!arena) {");
  cg_out_line(o, "  return 1;");
  cg_out_line(o, "}");
  /* transients start zero-filled, except those that are written whole
   * before anything reads them (needs_no_zero_fill); scratch is not */
  guint zero = 0;
  for (guint b = 0; b < blocks->len; b++)
    zero += g_array_index(blocks, Block, b).fill;
  if (zero == blocks->len)
    cg_out_line(o, "memset(arena, 0, %s);", total);
  else
    for (guint b = 0; b < blocks->len; b++) {
      const Block *bl = &g_array_index(blocks, Block, b);
      const char *at = g_ptr_array_index(offsets, b);
      const char *bytes = g_ptr_array_index(sizes, b);
      if (!bl->ci)
        continue; /* scratch: each user writes what it reads */
      if (!bl->fill)
        cg_out_line(o, "/* %s: written whole before it is read */", bl->cname);
      else if (strcmp(at, "0") == 0)
        cg_out_line(o, "memset(arena, 0, %s);", bytes);
      else
        cg_out_line(o, "memset(arena + %s, 0, %s);", at, bytes);
    }
  g_free(total);
  for (guint b = 0; b < blocks->len; b++) {
    const Block *bl = &g_array_index(blocks, Block, b);
    const char *at = g_ptr_array_index(offsets, b);
    const char *ty = cg_storage_type(bl->dtype);
    g_autofree char *sh =
        bl->ci ? cg_shape_text(bl->ci->c)
               : g_strdup("scratch of native calls and nested programs");
    if (strcmp(at, "0") == 0)
      cg_out_line(o, "%s *const %s = (%s *)arena; /* %s */", ty, bl->cname, ty,
                  sh);
    else
      cg_out_line(o, "%s *const %s = (%s *)(arena + %s); /* %s */", ty,
                  bl->cname, ty, at, sh);
  }
}

gboolean cg_fn_splittable(const Fn *f) {
  for (guint j = 0; j < f->g->containers->len; j++) {
    const WeirContainer *c = g_ptr_array_index(f->g->containers, j);
    if (!c->transient && !c->initial)
      continue; /* an argument */
    for (guint d = 0; d < c->shape->len; d++) {
      gint64 v;
      if (!weir_expr_is_const(g_ptr_array_index(c->shape, d), &v) ||
          !weir_expr_is_const(g_ptr_array_index(c->strides, d), &v))
        return FALSE;
    }
  }
  for (guint i = 0; i < f->g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(f->g->states, i);
    for (guint k = 0; k < s->nodes->len; k++)
      if (((const WeirNode *)g_ptr_array_index(s->nodes, k))->kind ==
          WEIR_NODE_NESTED)
        return FALSE;
  }
  return TRUE;
}

/* A constant's declaration: a pointer into consts[] (bound), or a static
 * array with its data (literal); name is its C name, or that of its _init
 * source when it is copied into storage. */
static void emit_const_decl(Fn *f, Out *o, const CInfo *ci, const char *name) {
  const WeirContainer *c = ci->c;
  g_autoptr(WeirExpr) vol = weir_container_volume(c);
  gint64 n = 1;
  weir_expr_is_const(vol, &n);
  g_autofree char *sh = cg_shape_text(c);
  const char *ty = cg_storage_type(c->dtype);
  if (ci->bound) {
    /* bound when the kernel is loaded (docs/codegen.md) */
    f->uses_consts = TRUE;
    cg_out_line(o, "const %s *const %s = (const %s *)consts[%u]; /* %s */", ty,
                name, ty, ci->bound - 1, sh);
    return;
  }
  cg_out_line(o, "/* %s: %s */", ci->cname, sh);
  cg_out_line(o, "static const %s %s[%" G_GINT64_FORMAT "] = {", ty, name,
              n > 0 ? n : 1);
  o->depth++;
  if (n > 0)
    emit_data(o, c);
  else
    cg_out_line(o, "0,");
  o->depth--;
  cg_out_line(o, "};");
}

char *cg_part_storage(Fn *f, gboolean uses_scratch, gboolean *uses_consts) {
  Out o = cg_out_new(1);
  gboolean saved = f->uses_consts;
  f->uses_consts = FALSE;
  for (guint j = 0; j < f->cinfo->len; j++) {
    const CInfo *ci = g_ptr_array_index(f->cinfo, j);
    if (!ci->used)
      continue;
    const char *ty = cg_storage_type(ci->c->dtype);
    g_autofree char *sh = cg_shape_text(ci->c);
    if (ci->st == ST_ARG) {
      const char *q = ci->written ? "" : "const ";
      cg_out_line(&o, "%s%s *const %s = (%s%s *)args[%u];", q, ty, ci->cname, q,
                  ty, ci->arg_index);
    } else if (ci->st == ST_CONST)
      emit_const_decl(f, &o, ci, ci->cname);
    else if (ci->st == ST_ARENA)
      cg_out_line(&o, "%s *const %s = (%s *)(arena + %s); /* %s */", ty,
                  ci->cname, ty, ci->at ? ci->at : "0", sh);
  }
  if (uses_scratch && f->scratch_name)
    cg_out_line(&o,
                "uint8_t *const %s = (uint8_t *)(arena + %s); /* scratch of "
                "native calls */",
                f->scratch_name, f->scratch_at ? f->scratch_at : "0");
  *uses_consts = f->uses_consts;
  f->uses_consts = saved;
  return cg_out_free(&o);
}

char *cg_fn_storage(Fn *f, gboolean *arena) {
  Out o = cg_out_new(1);
  *arena = FALSE;
  /* split: the entry point copies the initial data of the containers its
   * parts use */
  for (guint j = 0; f->part_used && j < f->cinfo->len; j++) {
    CInfo *ci = g_ptr_array_index(f->cinfo, j);
    if (f->part_used[j] && ci->init)
      ci->used = TRUE;
  }
  g_autoptr(GPtrArray) inits = g_ptr_array_new();
  g_autoptr(GPtrArray) init_names = g_ptr_array_new();
  for (guint j = 0; j < f->cinfo->len; j++) {
    CInfo *ci = g_ptr_array_index(f->cinfo, j);
    if (!ci->used || !(ci->st == ST_CONST || ci->init))
      continue;
    const char *name = ci->cname;
    if (ci->init) {
      g_autofree char *base = g_strdup_printf("%s_init", ci->cname);
      name = cg_namer_fresh(f->names, base);
      g_ptr_array_add(inits, ci);
      g_ptr_array_add(init_names, (gpointer)name);
    }
    emit_const_decl(f, &o, ci, name);
  }
  for (guint j = 0; j < f->cinfo->len; j++) {
    CInfo *ci = g_ptr_array_index(f->cinfo, j);
    if (!ci->used || ci->st != ST_STACK)
      continue;
    gint64 span = 1;
    weir_expr_is_const(ci->span, &span);
    g_autofree char *sh = cg_shape_text(ci->c);
    cg_out_line(&o, "%s %s[%" G_GINT64_FORMAT "] = {0}; /* %s */",
                cg_storage_type(ci->c->dtype), ci->cname, span > 0 ? span : 1,
                sh);
  }
  /* the arena: one block per transient, each 64-byte aligned, then the
   * scratch block */
  g_autoptr(GArray) blocks = g_array_new(FALSE, FALSE, sizeof(Block));
  for (guint j = 0; j < f->cinfo->len; j++) {
    CInfo *ci = g_ptr_array_index(f->cinfo, j);
    if (!(ci->used || (f->part_used && f->part_used[j])) || ci->st != ST_ARENA)
      continue;
    Block bl = {.ci = ci,
                .cname = ci->cname,
                .span = ci->span,
                .dtype = ci->c->dtype,
                .fill = ci->init || !needs_no_zero_fill(f->g, ci->c)};
    g_array_append_val(blocks, bl);
  }
  if (f->scratch) {
    Block bl = {
        .cname = f->scratch_name, .span = f->scratch, .dtype = WEIR_DTYPE_U8};
    g_array_append_val(blocks, bl);
  }
  if (blocks->len) {
    *arena = TRUE;
    emit_arena(f, &o, blocks);
  } else if (f->part_used)
    cg_out_line(&o, "unsigned char *const arena = NULL; /* for the parts */");
  for (guint k = 0; k < inits->len; k++) {
    CInfo *ci = g_ptr_array_index(inits, k);
    const char *src = g_ptr_array_index(init_names, k);
    if (weir_kernel_row_major(ci->c) && ci->bound) {
      g_autoptr(WeirExpr) vol = weir_container_volume(ci->c);
      gint64 n = 0;
      weir_expr_is_const(vol, &n);
      cg_out_line(&o, "memcpy(%s, %s, %" G_GINT64_FORMAT " * sizeof *%s);",
                  ci->cname, src, n, src);
    } else if (weir_kernel_row_major(ci->c))
      cg_out_line(&o, "memcpy(%s, %s, sizeof %s);", ci->cname, src, src);
    else
      emit_init_loops(f, &o, ci, src);
  }
  return cg_out_free(&o);
}
