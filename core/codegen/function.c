/* function.c — one generated C function per program: the entry point and
 * a static function per nested program.
 *
 * Conventions:
 *  - The body is generated first, then the storage, then the signature and
 *    the declarations of what the body used.
 *  - A function returns int (non-zero: the arena could not be allocated)
 *    when it or a function it calls allocates; else void.
 *  - Names are reserved in a fixed order: containers, symbols, map
 *    parameters, so they do not depend on the order of first use.
 */
#include <string.h>

#include "codegen-private.h"

/* ---------------------------------------------------------------- functions */

static void cinfo_free(gpointer p) {
  CInfo *ci = p;
  g_clear_pointer(&ci->strides, g_ptr_array_unref);
  g_clear_pointer(&ci->span, weir_expr_unref);
  g_free(ci->at);
  g_free(ci);
}

void cg_fn_free(Fn *f) {
  if (!f)
    return;
  g_free(f->fname);
  g_free(f->where);
  cg_namer_free(f->names);
  g_clear_pointer(&f->cinfo, g_ptr_array_unref);
  g_clear_pointer(&f->cbyname, g_hash_table_unref);
  g_clear_pointer(&f->synth, g_hash_table_unref);
  g_clear_pointer(&f->params, g_hash_table_unref);
  g_clear_pointer(&f->assigned, g_hash_table_unref);
  g_clear_pointer(&f->sym_used, g_hash_table_unref);
  g_clear_pointer(&f->sym_written, g_hash_table_unref);
  g_clear_pointer(&f->synth_used, g_hash_table_unref);
  g_clear_pointer(&f->scratch, weir_expr_unref);
  g_clear_pointer(&f->arena_bytes, weir_expr_unref);
  g_free(f->part_used);
  g_free(f->scratch_at);
  g_free(f);
}

static Fn *fn_new(Gen *gen, WeirGraph *g, gboolean entry, const char *fname,
                  const char *where) {
  Fn *f = g_new0(Fn, 1);
  f->gen = gen;
  f->g = g;
  f->entry = entry;
  f->fname = g_strdup(fname);
  f->where = g_strdup(where);
  f->names = cg_namer_new(NULL);
  f->cinfo = g_ptr_array_new_with_free_func(cinfo_free);
  f->cbyname = g_hash_table_new(g_str_hash, g_str_equal);
  f->synth = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  f->params = g_hash_table_new(g_str_hash, g_str_equal);
  f->assigned = g_hash_table_new(g_str_hash, g_str_equal);
  f->sym_used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  f->sym_written = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  f->synth_used = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  /* names in a fixed order: containers, symbols, map parameters */
  for (guint j = 0; j < g->containers->len; j++)
    cg_namer_get(f->names, "c",
                 ((WeirContainer *)g_ptr_array_index(g->containers, j))->name);
  for (guint k = 0; k < g->symbols->len; k++)
    cg_namer_get(f->names, "s", g_ptr_array_index(g->symbols, k));
  for (guint i = 0; i < g->states->len; i++) {
    WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind != WEIR_NODE_MAP_ENTRY || !n->map)
        continue;
      for (guint p = 0; p < n->map->params->len; p++) {
        const char *name = g_ptr_array_index(n->map->params, p);
        g_hash_table_add(f->params, (gpointer)name);
        cg_namer_get(f->names, "p", name);
      }
    }
  }
  for (guint i = 0; i < g->transitions->len; i++) {
    WeirTransition *t = g_ptr_array_index(g->transitions, i);
    for (guint a = 0; a < t->assign_names->len; a++)
      g_hash_table_add(f->assigned, g_ptr_array_index(t->assign_names, a));
  }
  return f;
}

/* A symbol's declaration when the body uses it: a parameter of a nested
 * function (bound), or a local. */
static void emit_symbol_decl(Fn *f, Out *o, guint k, const char *name,
                             gboolean bound) {
  gboolean read = g_hash_table_contains(f->sym_used, name);
  gboolean written = g_hash_table_contains(f->sym_written, name);
  const char *c = cg_namer_get(f->names, "s", name);
  if (bound) {
    if (!read && !written)
      cg_out_line(o, "(void)%s;", c);
    return;
  }
  if (!read && !written)
    return;
  if (f->entry && !g_hash_table_contains(f->assigned, name))
    cg_out_line(o, "const int64_t %s = symbols[%u];", c, k);
  else
    cg_out_line(o, "int64_t %s = 0;%s", c,
                g_hash_table_contains(f->assigned, name)
                    ? " /* assigned by transitions */"
                    : "");
  if (!read)
    cg_out_line(o, "(void)%s;", c);
}

/* The layout of a container is fixed on entry: its shape and strides may
 * not use a symbol that transitions assign (that symbol is 0 on entry). */
static void fn_check_layouts(Fn *f) {
  for (guint j = 0; j < f->cinfo->len; j++) {
    const CInfo *ci = g_ptr_array_index(f->cinfo, j);
    if (!ci->used)
      continue;
    const WeirContainer *c = ci->c;
    for (guint d = 0; d < 2 * c->shape->len; d++) {
      WeirExpr *e = d < c->shape->len
                        ? g_ptr_array_index(c->shape, d)
                        : g_ptr_array_index(c->strides, d - c->shape->len);
      g_autoptr(GPtrArray) names = weir_expr_symbols(e);
      for (guint i = 0; i < names->len; i++) {
        const char *name = g_ptr_array_index(names, i);
        if (g_hash_table_contains(f->assigned, name))
          cg_gen_fail(f->gen, WEIR_ERROR_UNSUPPORTED,
                      "%s: the layout of container '%s' uses symbol '%s', "
                      "which transitions assign",
                      f->where, c->name, name);
      }
    }
  }
}

/* Split mode: the definitions of the parts of the entry point f, once its
 * arena is laid out (each declares what it uses). */
static void fn_build_parts(Fn *f) {
  guint n = f->cinfo->len;
  g_autofree gboolean *own = g_new0(gboolean, n + 1);
  for (guint j = 0; j < n; j++)
    own[j] = ((CInfo *)g_ptr_array_index(f->cinfo, j))->used;
  for (guint i = 0; i < f->gen->parts->len; i++) {
    Part *p = g_ptr_array_index(f->gen->parts, i);
    gboolean any_arg = FALSE, any_arena = FALSE, any_sym = FALSE;
    for (guint j = 0; j < n; j++) {
      CInfo *ci = g_ptr_array_index(f->cinfo, j);
      ci->used = p->used[j];
      any_arg = any_arg || (ci->used && ci->st == ST_ARG);
      any_arena = any_arena || (ci->used && ci->st == ST_ARENA);
    }
    any_arena = any_arena || p->uses_scratch;
    gboolean uses_consts = FALSE;
    g_autofree char *storage =
        cg_part_storage(f, p->uses_scratch, &uses_consts);
    GString *params = g_string_new(NULL), *decls = g_string_new(NULL);
    for (guint k = 0; k < f->g->symbols->len; k++) {
      const char *name = g_ptr_array_index(f->g->symbols, k);
      if (!g_hash_table_contains(p->syms, name))
        continue;
      const char *c = cg_namer_get(f->names, "s", name);
      if (g_hash_table_contains(f->assigned, name))
        g_string_append_printf(params, ", int64_t %s", c);
      else {
        g_string_append_printf(decls, "  const int64_t %s = symbols[%u];\n", c,
                               k);
        any_sym = TRUE;
      }
    }
    GString *s = g_string_new(NULL);
    g_string_append_printf(s,
                           "weir_hidden %s %s(void *const args[], "
                           "const int64_t symbols[],\n"
                           "        const void *const consts[], unsigned char "
                           "*arena%s) {\n",
                           p->uses_status ? "int" : "void", p->name,
                           params->str);
    g_string_append(s, decls->str);
    if (!any_arg)
      g_string_append(s, "  (void)args;\n");
    if (!any_sym)
      g_string_append(s, "  (void)symbols;\n");
    if (!uses_consts)
      g_string_append(s, "  (void)consts;\n");
    if (!any_arena)
      g_string_append(s, "  (void)arena;\n");
    g_string_append(s, storage);
    if (p->uses_status)
      g_string_append(s, "  int status = 0;\n");
    g_string_append(s, p->body);
    if (p->uses_status)
      g_string_append(s, "  return status;\n");
    g_string_append(s, "}\n");
    g_free(p->text);
    p->text = g_string_free(s, FALSE);
    g_free(p->params);
    p->params = g_string_free(params, FALSE);
    g_string_free(decls, TRUE);
  }
  for (guint j = 0; j < n; j++)
    ((CInfo *)g_ptr_array_index(f->cinfo, j))->used = own[j];
}

char *cg_fn_generate(Gen *gen, WeirGraph *g, const char *fname,
                     const char *where, const WeirNode *call,
                     const WeirMemlet *const *bind, gboolean *can_fail,
                     gboolean *uses_consts, WeirExpr **arena_bytes) {
  g_autoptr(Fn) f = fn_new(gen, g, call == NULL, fname, where);
  if (f->entry && gen->split && cg_fn_splittable(f))
    f->part_used = g_new0(gboolean, g->containers->len + 1);
  cg_fn_classify(f, bind);
  if (gen->error)
    return NULL;
  g_autofree char *body = cg_flow_body(f);
  gboolean arena = FALSE;
  g_autofree char *storage = cg_fn_storage(f, &arena);
  fn_check_layouts(f);
  if (f->part_used)
    fn_build_parts(f);
  *can_fail = arena || f->uses_status;
  *uses_consts = f->uses_consts;
  *arena_bytes = !f->entry && arena && f->arena_bytes
                     ? weir_expr_ref(f->arena_bytes)
                     : NULL;

  GString *s = g_string_new(NULL);
  Out o = {s, 1};
  /* signature */
  if (f->entry) {
    g_string_append_printf(s,
                           "int %s(void *const args[], const int64_t "
                           "symbols[],\n"
                           "        const void *const consts[], void "
                           "*workspace) {\n",
                           fname);
  } else {
    GString *params = g_string_new(NULL);
    for (guint j = 0; j < f->cinfo->len; j++) {
      CInfo *ci = g_ptr_array_index(f->cinfo, j);
      if (ci->st != ST_VIEW)
        continue;
      g_string_append_printf(params, "%s%s%s *%s", params->len ? ", " : "",
                             ci->written ? "" : "const ",
                             cg_storage_type(ci->c->dtype), ci->cname);
      for (guint d = 0; d < ci->strides->len; d++)
        g_string_append_printf(
            params, ", int64_t %s",
            cg_fn_symbol(
                f, weir_expr_symbol_name(g_ptr_array_index(ci->strides, d))));
    }
    guint nb = call->symbol_map ? call->symbol_map->len : 0;
    for (guint k = 0; k < nb; k++) {
      const WeirSymbolBinding *b = g_ptr_array_index(call->symbol_map, k);
      g_string_append_printf(params, "%sint64_t %s", params->len ? ", " : "",
                             cg_namer_get(f->names, "s", b->name));
    }
    if (f->uses_consts)
      g_string_append_printf(params, "%sconst void *const consts[]",
                             params->len ? ", " : "");
    if (arena)
      g_string_append_printf(params, "%suint8_t *ws", params->len ? ", " : "");
    g_string_append_printf(s, "static %s %s(%s) {\n",
                           *can_fail ? "int" : "void", fname,
                           params->len ? params->str : "void");
    g_string_free(params, TRUE);
  }
  /* symbols */
  gboolean any_symbol = FALSE;
  for (guint k = 0; k < g->symbols->len; k++) {
    const char *name = g_ptr_array_index(g->symbols, k);
    gboolean bound = FALSE;
    guint nb = call && call->symbol_map ? call->symbol_map->len : 0;
    for (guint b = 0; b < nb; b++)
      bound =
          bound ||
          strcmp(((WeirSymbolBinding *)g_ptr_array_index(call->symbol_map, b))
                     ->name,
                 name) == 0;
    emit_symbol_decl(f, &o, k, name, bound);
    any_symbol =
        any_symbol || (f->entry && !g_hash_table_contains(f->assigned, name) &&
                       (g_hash_table_contains(f->sym_used, name) ||
                        g_hash_table_contains(f->sym_written, name)));
  }
  /* arguments */
  gboolean any_arg = FALSE;
  for (guint j = 0; j < f->cinfo->len; j++) {
    CInfo *ci = g_ptr_array_index(f->cinfo, j);
    const char *ty = cg_storage_type(ci->c->dtype);
    if (ci->st == ST_ARG && ci->used) {
      const char *q = ci->written ? "" : "const ";
      cg_out_line(&o, "%s%s *const %s = (%s%s *)args[%u];", q, ty, ci->cname, q,
                  ty, ci->arg_index);
      any_arg = TRUE;
    }
    if (ci->st == ST_VIEW) {
      if (!ci->used)
        cg_out_line(&o, "(void)%s;", ci->cname);
      for (guint d = 0; d < ci->strides->len; d++) {
        const char *key =
            weir_expr_symbol_name(g_ptr_array_index(ci->strides, d));
        if (!g_hash_table_contains(f->synth_used, key) || !ci->used)
          cg_out_line(&o, "(void)%s;",
                      (const char *)g_hash_table_lookup(f->synth, key));
      }
    }
  }
  if (f->entry && !any_arg)
    cg_out_line(&o, "(void)args;");
  if (f->entry && !any_symbol)
    cg_out_line(&o, "(void)symbols;");
  if (f->entry && !f->uses_consts)
    cg_out_line(&o, "(void)consts;");
  if (f->entry && !arena)
    cg_out_line(&o, "(void)workspace;");
  g_string_append(s, storage);
  if (f->uses_status)
    cg_out_line(&o, "int status = 0;");
  g_string_append(s, body);
  if (f->uses_done)
    g_string_append(s, "done:\n");
  if (arena)
    cg_out_line(&o, "if (!%s)\n    free(arena);",
                f->entry ? "workspace" : "ws");
  if (*can_fail || f->entry)
    cg_out_line(&o, "return %s;", f->uses_status ? "status" : "0");
  else if (f->uses_done)
    cg_out_line(&o, "return;");
  g_string_append(s, "}\n\n");
  return g_string_free(s, FALSE);
}
