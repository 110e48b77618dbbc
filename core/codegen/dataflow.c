/* dataflow.c — the dataflow of one state: nodes in scope order, copies,
 * nested program calls and native library calls.
 *
 * Conventions:
 *  - A state is emitted as text at depth 0 (cg_state_text); control flow
 *    (control.c) pastes it where the state runs.
 *  - Nodes are walked in the scope order of weir_state_scopes: the top
 *    level, and every map's children inside its loops (map.c).
 *  - A nested program becomes a static function of the file, generated
 *    through the emitter table (gen->emit->function: function.c, which
 *    sits above this file) and called with pointers and strides of the
 *    bound subsets.  The top level of a state goes through
 *    gen->emit->nodes too, so a backend's own scope emitter sees every
 *    level.
 */
#include <string.h>

#include "codegen-private.h"

/* ------------------------------------------------------------------- states */

static void state_ctx_clear(StateCtx *sc) {
  g_clear_pointer(&sc->hosted, g_hash_table_unref);
  g_clear_pointer(&sc->scopes, weir_scopes_free);
  g_clear_pointer(&sc->children, g_hash_table_unref);
  g_clear_pointer(&sc->top, g_array_unref);
}

static gboolean state_ctx_init(StateCtx *sc, Fn *f, WeirState *s) {
  g_autoptr(GError) local = NULL;
  sc->f = f;
  sc->s = s;
  sc->scopes = weir_state_scopes(s, &local);
  sc->children = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                       (GDestroyNotify)g_array_unref);
  sc->top = g_array_new(FALSE, FALSE, sizeof(guint));
  sc->hosted = g_hash_table_new(g_direct_hash, g_direct_equal);
  if (!sc->scopes) {
    cg_gen_fail(f->gen, WEIR_ERROR_INVALID, "%s: %s", f->where, local->message);
    return FALSE;
  }
  for (guint k = 0; k < sc->scopes->order->len; k++) {
    guint id = g_array_index(sc->scopes->order, guint, k);
    guint parent = weir_scopes_parent(sc->scopes, id);
    GArray *list = sc->top;
    if (parent) {
      list = g_hash_table_lookup(sc->children, GUINT_TO_POINTER(parent));
      if (!list) {
        list = g_array_new(FALSE, FALSE, sizeof(guint));
        g_hash_table_insert(sc->children, GUINT_TO_POINTER(parent), list);
      }
    }
    g_array_append_val(list, id);
  }
  return TRUE;
}

/* ------------------------------------------------------------------- copies */

static void emit_copy(StateCtx *sc, Out *o, const WeirMemlet *m,
                      const WeirNode *src, const WeirNode *dst, Frame *fr) {
  Fn *f = sc->f;
  const char *src_name, *dst_name = dst->data;
  const WeirSubset *src_sub, *dst_sub;
  if (g_strcmp0(m->data, src->data) == 0 || g_strcmp0(m->data, dst_name) != 0) {
    src_name = m->data;
    src_sub = m->subset;
    dst_sub = m->other ? m->other : m->subset;
  } else {
    src_name = src->data;
    dst_sub = m->subset;
    src_sub = m->other ? m->other : m->subset;
  }
  CInfo *sci = cg_fn_container(f, src_name);
  CInfo *dci = cg_fn_container(f, dst_name);
  if (!sci || !dci)
    return;
  if (src_sub->rank != sci->c->shape->len ||
      dst_sub->rank != dci->c->shape->len) {
    cg_gen_fail(f->gen, WEIR_ERROR_INVALID,
                "%s, state %u, memlet %u: subset rank does not match", f->where,
                sc->s->id, m->id);
    return;
  }
  g_autofree char *s1 = weir_subset_to_string(src_sub);
  g_autofree char *s2 = weir_subset_to_string(dst_sub);
  g_autofree char *c1 = cg_comment_text(s1);
  g_autofree char *c2 = cg_comment_text(s2);
  cg_out_line(o, "/* copy (memlet %u): %s[%s] -> %s[%s]%s%s */", m->id,
              sci->cname, c1, dci->cname, c2,
              m->wcr != WEIR_WCR_NONE ? ", wcr " : "",
              m->wcr != WEIR_WCR_NONE ? weir_wcr_name(m->wcr) : "");
  WeirDType st = sci->c->dtype, dt = dci->c->dtype;
  if (m->wcr == WEIR_WCR_NONE && st == dt && weir_kernel_row_major(sci->c) &&
      weir_kernel_row_major(dci->c) && cg_subset_is_whole(src_sub, sci->c) &&
      cg_subset_is_whole(dst_sub, dci->c)) {
    g_autoptr(WeirExpr) vol = weir_container_volume(sci->c);
    int p;
    g_autofree char *v = cg_wrap(cg_sym_c(f, vol, &p), &p, P_UNARY);
    sci->used = dci->used = TRUE;
    cg_out_line(o, "memcpy(%s, %s, (size_t)%s * sizeof(%s));", dci->cname,
                sci->cname, v, cg_storage_type(dt));
    return;
  }
  g_autoptr(GPtrArray) ssizes =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  g_autoptr(GPtrArray) dsizes =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  g_autoptr(GArray) sdims = cg_moving_dims(src_sub, ssizes);
  g_autoptr(GArray) ddims = cg_moving_dims(dst_sub, dsizes);
  gboolean paired = sdims->len == ddims->len;
  for (guint j = 0; paired && j < sdims->len; j++)
    paired = weir_expr_equal(g_ptr_array_index(ssizes, j),
                             g_ptr_array_index(dsizes, j));
  /* one loop per moving source dimension */
  g_autoptr(Namer) names = cg_namer_new(f->names);
  guint n = sdims->len;
  g_autofree WeirExpr **k = g_new0(WeirExpr *, n + 1);
  guint depth0 = o->depth;
  for (guint j = 0; j < n; j++) {
    g_autofree char *base = g_strdup_printf("k%u", j);
    const char *cname = cg_namer_fresh(names, base);
    g_autofree char *key = g_strdup_printf("$copy%u.%u", m->id, j);
    k[j] = cg_synth_symbol(f, key, cname);
    g_autofree char *bound = cg_sym_text(f, g_ptr_array_index(ssizes, j));
    cg_out_line(o, "for (int64_t %s = 0; %s < %s; %s++) {", cname, cname, bound,
                cname);
    o->depth++;
  }
  WeirExpr **sidx = cg_subset_indices(src_sub, sdims, k);
  WeirExpr **didx;
  if (paired) {
    didx = cg_subset_indices(dst_sub, ddims, k);
  } else {
    /* row-major position in the source, then the destination's indices */
    g_autoptr(WeirExpr) lin = weir_expr_const(0);
    for (guint j = 0; j < n; j++) {
      WeirExpr *x = weir_expr_mul(lin, g_ptr_array_index(ssizes, j));
      WeirExpr *y = weir_expr_add(x, k[j]);
      weir_expr_unref(x);
      weir_expr_unref(lin);
      lin = y;
    }
    guint dn = ddims->len;
    g_autofree WeirExpr **rel = g_new0(WeirExpr *, dn + 1);
    g_autoptr(WeirExpr) below = weir_expr_const(1);
    for (guint j = dn; j-- > 0;) {
      g_autoptr(WeirExpr) q = weir_expr_floordiv(lin, below);
      rel[j] = j == 0 ? weir_expr_ref(q)
                      : weir_expr_mod(q, g_ptr_array_index(dsizes, j));
      WeirExpr *b = weir_expr_mul(below, g_ptr_array_index(dsizes, j));
      weir_expr_unref(below);
      below = b;
    }
    didx = cg_subset_indices(dst_sub, ddims, rel);
    cg_free_exprs(g_steal_pointer(&rel), dn);
  }
  g_autoptr(GPtrArray) soff = cg_elem_offset(sci, sidx);
  g_autoptr(GPtrArray) doff = cg_elem_offset(dci, didx);
  cg_free_exprs(sidx, src_sub->rank);
  cg_free_exprs(didx, dst_sub->rank);
  int p;
  g_autofree char *load = cg_elem_load(f, sci, soff, &p);
  g_autofree char *value =
      cg_convert_text(f->gen, g_steal_pointer(&load), st, dt, &p);
  g_autofree char *lv = cg_elem_ref(f, dci, doff);
  cg_emit_store(f, o, fr, dci, lv, dst_sub, m->wcr, value);
  while (o->depth > depth0) {
    o->depth--;
    cg_out_line(o, "}");
  }
  cg_free_exprs(g_steal_pointer(&k), n);
}

/* ---------------------------------------------------------- nested programs */

/* The dimension of the outer subset that each dimension of the nested
 * container views (G_MAXUINT: a dimension of size 1 with no counterpart),
 * as the interpreter binds views; FALSE when the dimensions cannot be
 * matched without knowing symbol values. */
static gboolean view_dims(const WeirContainer *c, const WeirSubset *sub,
                          guint *map) {
  guint r = c->shape->len;
  if (r == sub->rank) {
    for (guint d = 0; d < r; d++)
      map[d] = d;
    return TRUE;
  }
  guint o = 0;
  gint64 v;
  for (guint d = 0; d < r; d++) {
    if (weir_expr_is_const(g_ptr_array_index(c->shape, d), &v) && v == 1) {
      map[d] = G_MAXUINT;
      continue;
    }
    for (; o < sub->rank; o++) {
      g_autoptr(WeirExpr) size = weir_range_size(&sub->dims[o]);
      if (!(weir_expr_is_const(size, &v) && v == 1))
        break;
    }
    if (o == sub->rank)
      return FALSE;
    map[d] = o++;
  }
  for (; o < sub->rank; o++) {
    g_autoptr(WeirExpr) size = weir_range_size(&sub->dims[o]);
    if (!(weir_expr_is_const(size, &v) && v == 1))
      return FALSE;
  }
  return TRUE;
}

/* Labels of generated functions: alphanumerics and '_' only. */
static char *label_part(const char *label) {
  GString *s = g_string_new(NULL);
  for (const char *p = label ? label : ""; *p && s->len < 32; p++)
    g_string_append_c(s, g_ascii_isalnum(*p) ? *p : '_');
  return g_string_free(s, FALSE);
}

/* The arena size of the nested program of node n (bytes, an expression of
 * its symbols) in the symbols of f, or NULL when it depends on anything
 * but program symbols that keep their value for the whole call of f (map
 * parameters, symbols that transitions assign). */
static WeirExpr *nested_arena_need(Fn *f, const WeirNode *n, WeirExpr *bytes) {
  g_autoptr(GHashTable) map = g_hash_table_new(g_str_hash, g_str_equal);
  guint nb = n->symbol_map ? n->symbol_map->len : 0;
  for (guint k = 0; k < nb; k++) {
    const WeirSymbolBinding *b = g_ptr_array_index(n->symbol_map, k);
    g_hash_table_insert(map, b->name, b->value);
  }
  g_autoptr(WeirExpr) need = weir_expr_substitute(bytes, map);
  g_autoptr(GPtrArray) names = weir_expr_symbols(need);
  for (guint i = 0; i < names->len; i++) {
    const char *name = g_ptr_array_index(names, i);
    gboolean program = FALSE;
    for (guint k = 0; k < f->g->symbols->len && !program; k++)
      program = strcmp(g_ptr_array_index(f->g->symbols, k), name) == 0;
    if (!program || g_hash_table_contains(f->assigned, name) ||
        g_hash_table_contains(f->params, name))
      return NULL;
    (void)cg_fn_symbol(f, name); /* the size reads it on entry */
  }
  return g_steal_pointer(&need);
}

/* Iterations of the loops of fr may run at the same time: in other threads
 * (a parallel loop) or in the lanes of a simd loop. */
static gboolean frame_concurrent(const Frame *fr) {
  for (const Frame *x = fr; x; x = x->up)
    if (x->par_root || x->in_region || x->simd)
      return TRUE;
  return FALSE;
}

static void emit_nested(StateCtx *sc, Out *o, const WeirNode *n, Frame *fr) {
  Fn *f = sc->f;
  WeirGraph *ng = n->nested;
  g_autofree char *label = cg_comment_text(n->label);
  if (!ng) {
    cg_gen_fail(f->gen, WEIR_ERROR_INVALID,
                "%s, node %u (nested '%s'): no program", f->where, n->id,
                label);
    return;
  }
  guint nc = ng->containers->len;
  g_autofree const WeirMemlet **bind = g_new0(const WeirMemlet *, nc + 1);
  for (guint j = 0; j < nc; j++) {
    const WeirContainer *c = g_ptr_array_index(ng->containers, j);
    if (c->transient)
      continue;
    g_autoptr(GPtrArray) in = cg_conn_memlets(sc->s, n->id, c->name, TRUE);
    g_autoptr(GPtrArray) out = cg_conn_memlets(sc->s, n->id, c->name, FALSE);
    if (out->len > 1) {
      cg_gen_fail(f->gen, WEIR_ERROR_UNSUPPORTED,
                  "%s, state %u, node %u (nested '%s'): output connector '%s' "
                  "has %u memlets; each nested argument binds one region",
                  f->where, sc->s->id, n->id, label, c->name, out->len);
      return;
    }
    if (out->len && ((WeirMemlet *)g_ptr_array_index(out, 0))->wcr) {
      cg_gen_fail(f->gen, WEIR_ERROR_UNSUPPORTED,
                  "%s, state %u, node %u (nested '%s'): write-conflict "
                  "resolution on the output '%s' of a nested program",
                  f->where, sc->s->id, n->id, label, c->name);
      return;
    }
    bind[j] = in->len    ? g_ptr_array_index(in, 0)
              : out->len ? g_ptr_array_index(out, 0)
                         : NULL;
  }
  g_autofree char *lp = label_part(n->label);
  g_autofree char *base = g_strdup_printf("nested_%u_%s", n->id, lp);
  const char *fname = cg_namer_fresh_exact(f->gen->file_names, base);
  g_autofree char *where =
      g_strdup_printf("%s, node %u (nested '%s')", f->where, n->id, label);
  gboolean can_fail = FALSE, uses_consts = FALSE;
  g_autoptr(WeirExpr) arena_bytes = NULL;
  g_autofree char *def = f->gen->emit->function(
      f->gen, ng, fname, where, n, bind, &can_fail, &uses_consts, &arena_bytes);
  if (!def)
    return;
  g_string_append(f->gen->defs, def);

  GString *args = g_string_new(NULL);
  for (guint j = 0; j < nc; j++) {
    const WeirMemlet *m = bind[j];
    if (!m)
      continue;
    const WeirContainer *c = g_ptr_array_index(ng->containers, j);
    CInfo *ci = cg_fn_container(f, m->data);
    if (!ci)
      continue;
    if (ci->c->dtype != c->dtype) {
      cg_gen_fail(f->gen, WEIR_ERROR_INVALID,
                  "%s: nested argument '%s' is %s but '%s' is %s", where,
                  c->name, weir_dtype_name(c->dtype), ci->c->name,
                  weir_dtype_name(ci->c->dtype));
      continue;
    }
    g_autoptr(GPtrArray) off = cg_subset_offset(ci, m->subset);
    g_autofree char *ptr = cg_elem_ptr(f, ci, off);
    g_string_append_printf(args, "%s%s", args->len ? ", " : "", ptr);
    guint r = c->shape->len;
    g_autofree guint *map = g_new0(guint, r + 1);
    if (!view_dims(c, m->subset, map)) {
      cg_gen_fail(
          f->gen, WEIR_ERROR_UNSUPPORTED,
          "%s: the dimensions of nested argument '%s' cannot be matched "
          "with the subset of '%s'",
          where, c->name, ci->c->name);
      continue;
    }
    for (guint d = 0; d < r; d++) {
      if (map[d] == G_MAXUINT) {
        g_string_append(args, ", 0");
        continue;
      }
      g_autoptr(WeirExpr) st = weir_expr_mul(
          g_ptr_array_index(ci->strides, map[d]), m->subset->dims[map[d]].step);
      g_autofree char *t = cg_sym_text(f, st);
      g_string_append_printf(args, ", %s", t);
    }
  }
  guint nb = n->symbol_map ? n->symbol_map->len : 0;
  for (guint k = 0; k < nb; k++) {
    const WeirSymbolBinding *b = g_ptr_array_index(n->symbol_map, k);
    g_autofree char *t = cg_sym_text(f, b->value);
    g_string_append_printf(args, "%s%s", args->len ? ", " : "", t);
  }
  if (uses_consts) {
    f->uses_consts = TRUE;
    g_string_append_printf(args, "%sconsts", args->len ? ", " : "");
  }
  if (arena_bytes) {
    /* the callee's arena: from this function's scratch block when its size
     * is known on entry and no other thread runs the call at the same
     * time; else the callee allocates it for the call */
    g_autoptr(WeirExpr) need = nested_arena_need(f, n, arena_bytes);
    const char *ws =
        need && !frame_concurrent(fr) ? cg_fn_scratch(f, need) : "NULL";
    g_string_append_printf(args, "%s%s", args->len ? ", " : "", ws);
  }
  g_autofree char *a = g_string_free(args, FALSE);
  cg_out_line(o, "/* nested program '%s' (node %u) */", label, n->id);
  if (can_fail) {
    f->uses_status = TRUE;
    if (cg_frame_parallel(fr)) {
      for (Frame *x = fr; x; x = x->up)
        if (x->simd && !x->simd_drop) {
          x->simd_drop = TRUE;
          x->why_drop = "atomic update inside";
        }
      cg_out_line(o, "#pragma omp atomic");
    }
    cg_out_line(o, "status |= %s(%s);", fname, a);
  } else {
    cg_out_line(o, "%s(%s);", fname, a);
  }
}

/* --------------------------------------------------- native implementations */

static char *native_expr_c(WeirNativeEmit *e, WeirExpr *x) {
  return cg_sym_text(e->priv, x);
}

static void native_helper(WeirNativeEmit *e, const char *name,
                          const char *text) {
  Fn *f = e->priv;
  if (!g_hash_table_contains(f->gen->native_helpers, name)) {
    g_hash_table_insert(f->gen->native_helpers, g_strdup(name), g_strdup(text));
    cg_helper_deps_note(f->gen, name);
  }
  g_ptr_array_add(f->gen->emit_helpers, g_strdup(name));
  if (f->part) /* split mode: the part's unit needs it */
    g_hash_table_add(f->part->helpers, g_strdup(name));
}

static void native_library(WeirNativeEmit *e, const char *name) {
  Fn *f = e->priv;
  g_hash_table_add(f->gen->libraries, g_strdup(name));
}

static char *native_scratch(WeirNativeEmit *e, WeirExpr *bytes) {
  return g_strdup(cg_fn_scratch(e->priv, bytes));
}

static char *native_prepacked(WeirNativeEmit *e, const WeirContainer *src,
                              gint64 bytes, const char *helper,
                              const char *helper_text, const char *pack) {
  Fn *f = e->priv;
  Gen *gen = f->gen;
  CInfo *ci = src ? cg_fn_container(f, src->name) : NULL;
  if (!ci || ci->c != src || ci->st != ST_CONST || !ci->bound || ci->written ||
      bytes <= 0 || !gen->prepack_at)
    return NULL;
  g_autofree char *from = g_strdup_printf("consts[%u]", ci->bound - 1);
  GString *st = g_string_new(pack);
  g_string_replace(st, "@SRC@", from, 0);
  const char *at = g_hash_table_lookup(gen->prepack_at, st->str);
  if (!at) {
    gint64 off = gen->prepack_bytes;
    gen->prepack_bytes += (bytes + 63) / 64 * 64;
    g_autofree char *dst =
        g_strdup_printf("(void *)(p + %" G_GINT64_FORMAT ")", off);
    g_autofree char *cname = cg_comment_text(src->name);
    g_autofree char *label = cg_comment_text(e->n->label);
    g_string_append_printf(gen->prepack_body,
                           "  /* '%s' for node %u ('%s'), %" G_GINT64_FORMAT
                           " bytes */\n",
                           cname, e->n->id, label, bytes);
    GString *line = g_string_new(st->str);
    g_string_replace(line, "@DST@", dst, 0);
    g_string_append_printf(gen->prepack_body, "  %s\n", line->str);
    g_string_free(line, TRUE);
    at = g_strdup_printf("%" G_GINT64_FORMAT, off);
    g_hash_table_insert(gen->prepack_at, g_strdup(st->str), (gpointer)at);
    if (helper && helper_text &&
        !g_hash_table_contains(gen->prepack_helpers, helper)) {
      g_hash_table_insert(gen->prepack_helpers, g_strdup(helper),
                          g_strdup(helper_text));
      cg_helper_deps_note(gen, helper);
    }
  }
  g_string_free(st, TRUE);
  f->uses_consts = TRUE;
  return g_strdup_printf("(consts[%u] ? (const void *)((const char "
                         "*)consts[%u] + %s) : NULL)",
                         gen->n_consts, gen->n_consts, at);
}

/* A library node left for a native implementation (weir-native.h): the
 * registered emitter prints its code with the operands' C pointers. */
static void emit_native(StateCtx *sc, Out *o, const WeirNode *n, Frame *fr) {
  Fn *f = sc->f;
  g_autofree char *label = cg_comment_text(n->label);
  const WeirNativeImpl *ni = NULL;
  g_autoptr(GError) local = NULL;
  if (!weir_native_choice(f->g, sc->s, n, &ni, &local)) {
    cg_gen_fail(f->gen, local->code, "%s: %s", f->where, local->message);
    return;
  }
  if (!ni || fr) {
    cg_gen_fail(f->gen, WEIR_ERROR_UNSUPPORTED,
                "%s, state %u, node %u (library '%s'): operator '%s' is not "
                "expanded",
                f->where, sc->s->id, n->id, label, n->op ? n->op : "");
    return;
  }
  /* the helpers this call records, in order (cg_helper_deps_note) */
  g_ptr_array_set_size(f->gen->emit_helpers, 0);
  WeirNativeEmit e = {.g = f->g,
                      .s = sc->s,
                      .n = n,
                      .code = g_string_new(NULL),
                      .expr_c = native_expr_c,
                      .helper = native_helper,
                      .library = native_library,
                      .status = "status",
                      .priv = f,
                      .scratch = native_scratch,
                      .prepacked = native_prepacked};
  for (guint io = 0; io < 2; io++)
    for (guint k = 0;
         k < MIN(WEIR_NATIVE_MAX_PORTS,
                 MAX(4u, io ? n->out_conns->len : n->in_conns->len));
         k++) {
      g_autofree char *conn = g_strdup_printf(io ? "out%u" : "in%u", k);
      g_autoptr(GPtrArray) ms = cg_conn_memlets(sc->s, n->id, conn, io == 0);
      if (ms->len == 0)
        continue;
      const WeirMemlet *m = g_ptr_array_index(ms, 0);
      CInfo *ci = cg_fn_container(f, m->data);
      if (!ci)
        continue;
      ci->used = TRUE;
      WeirNativeOperand *op = io ? &e.out[k] : &e.in[k];
      op->c = ci->c;
      op->ptr = ci->cname; /* owned by the function's namer */
    }
  /* the extra inputs of an epilogue the implementation applies itself */
  for (guint k = 0; k < 4; k++) {
    g_autofree char *conn = g_strdup_printf("epi%u", k);
    g_autoptr(GPtrArray) ms = cg_conn_memlets(sc->s, n->id, conn, TRUE);
    if (ms->len == 0)
      continue;
    const WeirMemlet *m = g_ptr_array_index(ms, 0);
    CInfo *ci = cg_fn_container(f, m->data);
    if (!ci)
      continue;
    ci->used = TRUE;
    e.epi[k].c = ci->c;
    e.epi[k].ptr = ci->cname;
  }
  if (!f->gen->error && !ni->emit(&e, &local))
    cg_gen_fail(f->gen, local ? local->code : WEIR_ERROR_INVALID,
                "%s, state %u, node %u (library '%s'): %s", f->where, sc->s->id,
                n->id, label, local ? local->message : "emitter failed");
  if (e.uses_status)
    f->uses_status = TRUE;
  cg_out_paste(o, e.code->str);
  g_string_free(e.code, TRUE);
}

/* -------------------------------------------------------------------- nodes */

void cg_emit_nodes(StateCtx *sc, Out *o, GArray *ids, Frame *fr) {
  for (guint k = 0; k < ids->len; k++) {
    const WeirNode *n = weir_state_node(sc->s, g_array_index(ids, guint, k));
    if (!n)
      continue;
    switch (n->kind) {
    case WEIR_NODE_ACCESS:
      for (guint e = 0; e < sc->s->edges->len; e++) {
        const WeirMemlet *m = g_ptr_array_index(sc->s->edges, e);
        if (m->dst != n->id || !m->data)
          continue;
        const WeirNode *src = weir_state_node(sc->s, m->src);
        if (src && src->kind == WEIR_NODE_ACCESS)
          emit_copy(sc, o, m, src, n, fr);
      }
      break;
    case WEIR_NODE_TASKLET:
      cg_emit_tasklet(sc, o, n, fr);
      break;
    case WEIR_NODE_MAP_ENTRY:
      cg_emit_map(sc, o, n, fr);
      break;
    case WEIR_NODE_NESTED:
      emit_nested(sc, o, n, fr);
      break;
    case WEIR_NODE_LIBRARY:
      emit_native(sc, o, n, fr);
      break;
    case WEIR_NODE_MAP_EXIT:
    case WEIR_NODE_KIND_COUNT:
      break;
    }
  }
}

static void part_free(gpointer data) {
  Part *p = data;
  g_free(p->name);
  g_free(p->body);
  g_free(p->text);
  g_free(p->params);
  g_free(p->used);
  g_clear_pointer(&p->syms, g_hash_table_unref);
  g_clear_pointer(&p->helpers, g_hash_table_unref);
  g_free(p);
}

/* Split mode (f->part_used): the top-level nodes of the state cut, in
 * order, into parts of about gen->unit_bytes of C.  What a part's nodes
 * use (containers, symbols, helpers, status) is recorded apart from what
 * the entry point uses itself; the state calls the parts, whose functions
 * function.c builds once the arena is laid out. */
static void emit_state_parts(StateCtx *sc, Out *o) {
  Fn *f = sc->f;
  Gen *gen = f->gen;
  guint n = f->cinfo->len;
  if (!gen->parts)
    gen->parts = g_ptr_array_new_with_free_func(part_free);
  for (guint k = 0; k < sc->top->len;) {
    g_autofree gboolean *own = g_new0(gboolean, n + 1);
    for (guint j = 0; j < n; j++) {
      CInfo *ci = g_ptr_array_index(f->cinfo, j);
      own[j] = ci->used;
      ci->used = FALSE;
    }
    GHashTable *own_syms = f->sym_used;
    f->sym_used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    gboolean own_status = f->uses_status;
    f->uses_status = FALSE;
    Part *p = g_new0(Part, 1);
    p->helpers = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    f->part = p;
    Out body = cg_out_new(1);
    while (k < sc->top->len &&
           (body.s->len == 0 || body.s->len < gen->unit_bytes)) {
      g_autoptr(GArray) one = g_array_new(FALSE, FALSE, sizeof(guint));
      g_array_append_val(one, g_array_index(sc->top, guint, k));
      gen->emit->nodes(sc, &body, one, NULL);
      k++;
    }
    f->part = NULL;
    p->body = cg_out_free(&body);
    p->used = g_new0(gboolean, n + 1);
    for (guint j = 0; j < n; j++) {
      CInfo *ci = g_ptr_array_index(f->cinfo, j);
      p->used[j] = ci->used;
      f->part_used[j] = f->part_used[j] || ci->used;
      ci->used = own[j];
    }
    p->syms = f->sym_used;
    f->sym_used = own_syms;
    p->uses_status = f->uses_status;
    f->uses_status = own_status || p->uses_status;
    g_autofree char *base =
        g_strdup_printf("%s_part%u", gen->prefix, gen->parts->len + 1);
    p->name = g_strdup(cg_namer_fresh_exact(gen->file_names, base));
    /* symbols that transitions assign are passed by value */
    GString *extra = g_string_new(NULL);
    for (guint i = 0; i < f->g->symbols->len; i++) {
      const char *name = g_ptr_array_index(f->g->symbols, i);
      if (g_hash_table_contains(p->syms, name) &&
          g_hash_table_contains(f->assigned, name))
        g_string_append_printf(extra, ", %s", cg_fn_symbol(f, name));
    }
    cg_out_line(o, "%s%s(args, symbols, consts, arena%s);",
                p->uses_status ? "status |= " : "", p->name, extra->str);
    g_string_free(extra, TRUE);
    g_ptr_array_add(gen->parts, p);
  }
}

/* Instrumented build: each top-level node that emits code, in a block
 * that adds the time it took to its slot (Gen.prof_slots). */
static void emit_state_timed(StateCtx *sc, Out *o) {
  Fn *f = sc->f;
  Gen *gen = f->gen;
  const char *t0 = cg_namer_get(f->names, "prof", "weir_prof_t0");
  for (guint k = 0; k < sc->top->len; k++) {
    g_autoptr(GArray) one = g_array_new(FALSE, FALSE, sizeof(guint));
    guint id = g_array_index(sc->top, guint, k);
    g_array_append_val(one, id);
    Out body = cg_out_new(1);
    gen->emit->nodes(sc, &body, one, NULL);
    g_autofree char *text = cg_out_free(&body);
    if (!*text)
      continue;
    gint64 pair[2] = {sc->s->id, id};
    guint slot = gen->prof_slots->len / 2;
    g_array_append_vals(gen->prof_slots, pair, 2);
    cg_out_line(o, "{");
    cg_out_line(o, "  double %s = %s();", t0, gen->prof_now);
    cg_out_paste(o, text);
    cg_out_line(o, "  %s[%u] += %s() - %s;", gen->prof_times, slot,
                gen->prof_now, t0);
    cg_out_line(o, "}");
  }
}

char *cg_state_text(Fn *f, WeirState *s) {
  StateCtx sc = {0};
  Out o = cg_out_new(0);
  if (state_ctx_init(&sc, f, s)) {
    if (f->part_used)
      emit_state_parts(&sc, &o);
    else if (f->gen->profile && f->entry)
      emit_state_timed(&sc, &o);
    else
      f->gen->emit->nodes(&sc, &o, sc.top, NULL);
  }
  state_ctx_clear(&sc);
  return cg_out_free(&o);
}
