/* autodiff-maps.c — reverse mode over map scopes and tasklets (the fallback
 * for operators without a backward rule, and forward programs that are
 * already expanded).
 *
 * A scope is a map entry, the single node inside it — the tasklet, or an
 * inner map holding in turn one node (a nest of any depth) — and the exit,
 * or a tasklet at the top level.  Its tasklet computes one output element
 * out[idx_o] = f(in_1[idx_1], ..., in_n[idx_n]) per iteration, written
 * plainly or through a WCR memlet; every index idx_k is one element (any
 * affine or clamped expression of the map parameters).  For each input
 * in_k whose gradient is wanted, the sweep adds a map (a nest of the same
 * levels) over the same ranges whose tasklet reads the same elements plus
 * dOut[idx_o] and writes
 *
 *     dIn_k[idx_k] += dOut[idx_o] * df/din_k          (plain write, WCR sum)
 *     dIn_k[idx_k] += f == out[idx_o] ? dOut * df/din_k : 0   (WCR max, min)
 *
 * through a WCR-sum memlet into a gradient container that a map of zeros
 * initializes first.  Several readings of one element (a convolution
 * window, a value read by two connectors) therefore accumulate, and the
 * contributions of different scopes to one value are summed like those of
 * library nodes (ir/lower/autodiff.c).  df/din_k is the symbolic derivative of
 * the tasklet code (ir/lower/grad-code.c); a guarded read (`c ? x * w : 0`,
 * padding) keeps its guard in the derivative.  A WCR-sum accumulation
 * passes dOut unchanged to the initial value of `out`, so the scope that
 * initializes it (a bias, zeros) is differentiated with the same dOut.
 * A tasklet may write a block through one indexed assignment to its output
 * (o[f(i)] = e): the backward reads dOut through the same block and indexes
 * it with f(i).  Indices of the nest may use the parameters of every
 * level, and inner ranges those of the outer levels.
 */
#include <stdarg.h>
#include <string.h>

#include "autodiff-private.h"

static gboolean scope_fail(const WeirGradContext *ctx, GError **error,
                           const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static gboolean scope_fail(const WeirGradContext *ctx, GError **error,
                           const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_autofree char *where = weir_describe_node(ctx->s, ctx->node);
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
              "program '%s': %s: cannot differentiate: %s", ctx->g->name, where,
              msg);
  return FALSE;
}

/* Whether `name` is used by the tasklet t (connector, assigned name) or
 * a map of the scope (parameter). */
static gboolean name_taken(const WeirNode *t, const char *const *params,
                           const char *name) {
  if (weir_node_has_in_conn(t, name) || weir_node_has_out_conn(t, name))
    return TRUE;
  for (guint i = 0; t->code && i < t->code->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(t->code->stmts, i);
    if (st->target->kind == WEIR_AST_NAME &&
        (strcmp(st->target->name, name) == 0 ||
         (g_str_has_prefix(st->target->name, "dl_") &&
          strcmp(st->target->name + 3, name) == 0)))
      return TRUE;
  }
  for (guint i = 0; params && params[i]; i++)
    if (strcmp(params[i], name) == 0)
      return TRUE;
  return FALSE;
}

static char *fresh_conn(const WeirNode *t, const char *const *params,
                        const char *base) {
  char *name = g_strdup(base);
  for (guint i = 1; name_taken(t, params, name); i++) {
    g_free(name);
    name = g_strdup_printf("%s%u", base, i);
  }
  return name;
}

/* A tasklet connector of a scope being built. */
typedef struct {
  WeirNode *access;
  const char *conn;
  const char *subset; /* in terms of the map parameters */
  WeirWcr wcr;
} BPort;

static char *full_subset_text(const WeirGraph *g, const char *name) {
  g_autoptr(WeirSubset) full =
      weir_container_full_subset(weir_graph_container(g, name));
  return weir_subset_to_string(full);
}

static WeirMemlet *memlet(WeirGradContext *ctx, guint src, const char *sc,
                          guint dst, const char *dc, const char *data,
                          const char *subset, WeirExpr *volume, WeirWcr wcr,
                          GError **error) {
  WeirMemlet *m = weir_state_add_memlet(ctx->g, ctx->s, src, sc, dst, dc, data,
                                        subset, error);
  if (m) {
    if (volume)
      weir_memlet_set_volume(m, volume);
    m->wcr = wcr;
  }
  return m;
}

/* One map of a (possibly nested) scope, outermost first. */
typedef struct {
  guint n;                   /* number of parameters */
  const char *const *params; /* n names */
  const char *const *ranges; /* n ranges (may use outer parameters) */
} Level;

/* The iterations of levels[from..n_levels-1] (the accesses one memlet into
 * level `from` carries), or NULL when an inner range depends on the
 * parameters of an outer level (the volume is then left unset). */
static WeirExpr *nest_iterations(WeirNode *const *entries, guint from,
                                 guint n_levels, const Level *levels) {
  WeirExpr *iterations = weir_expr_const(1);
  for (guint l = from; l < n_levels; l++)
    for (guint i = 0; i < entries[l]->map->ranges->len; i++) {
      g_autoptr(WeirExpr) size = weir_range_size(
          &g_array_index(entries[l]->map->ranges, WeirRange, i));
      WeirExpr *next = weir_expr_mul(iterations, size);
      weir_expr_unref(iterations);
      iterations = next;
    }
  g_autoptr(GPtrArray) syms = weir_expr_symbols(iterations);
  for (guint k = 0; k < syms->len; k++)
    for (guint l = 0; l < n_levels; l++)
      for (guint i = 0; i < levels[l].n; i++)
        if (strcmp(syms->pdata[k], levels[l].params[i]) == 0) {
          weir_expr_unref(iterations);
          return NULL;
        }
  return iterations;
}

/* Adds a scope of n_levels nested maps (0: a bare tasklet; the ranges of
 * an inner map may use the parameters of the outer ones) with one tasklet
 * reading ins and writing out, their subsets in terms of the parameters of
 * all levels; `after` (optional) completes before it starts.  Between two
 * levels a memlet carries the whole container. */
static gboolean add_scope(WeirGradContext *ctx, const char *label,
                          guint n_levels, const Level *levels, const BPort *ins,
                          guint n_ins, const BPort *out, WeirNode *after,
                          const char *code, GError **error) {
  g_autoptr(GPtrArray) in_names = g_ptr_array_new();
  for (guint i = 0; i < n_ins; i++)
    g_ptr_array_add(in_names, (gpointer)ins[i].conn);
  g_ptr_array_add(in_names, NULL);
  const char *out_names[] = {out->conn, NULL};
  WeirNode *t = weir_state_add_tasklet(ctx->g, ctx->s, label,
                                       (const char *const *)in_names->pdata,
                                       out_names, code);
  const char *odata = out->access->data;
  if (n_levels == 0) {
    for (guint i = 0; i < n_ins; i++)
      if (!memlet(ctx, ins[i].access->id, NULL, t->id, ins[i].conn,
                  ins[i].access->data, ins[i].subset, NULL, WEIR_WCR_NONE,
                  error))
        return FALSE;
    if (after && !memlet(ctx, after->id, NULL, t->id, NULL, NULL, NULL, NULL,
                         WEIR_WCR_NONE, error))
      return FALSE;
    return memlet(ctx, t->id, out->conn, out->access->id, NULL, odata,
                  out->subset, NULL, out->wcr, error) != NULL;
  }
  g_autofree WeirNode **entries = g_new0(WeirNode *, n_levels);
  g_autofree WeirNode **exits = g_new0(WeirNode *, n_levels);
  for (guint l = 0; l < n_levels; l++) {
    g_autofree char *ml =
        n_levels == 1 ? g_strdup(label) : g_strdup_printf("%s_%u", label, l);
    g_autofree char **p = g_new0(char *, levels[l].n + 1);
    g_autofree char **r = g_new0(char *, levels[l].n + 1);
    memcpy(p, levels[l].params, levels[l].n * sizeof(char *));
    memcpy(r, levels[l].ranges, levels[l].n * sizeof(char *));
    entries[l] = weir_state_add_map(ctx->g, ctx->s, ml, (const char *const *)p,
                                    (const char *const *)r,
                                    WEIR_SCHEDULE_PARALLEL, &exits[l], error);
    if (!entries[l])
      return FALSE;
  }
  WeirNode *inner = entries[n_levels - 1];
  /* every tasklet memlet moves one element */
  for (guint i = 0; i < n_ins; i++) {
    const char *data = ins[i].access->data;
    g_autofree char *ic = g_strdup_printf("IN_%s", data);
    g_autofree char *oc = g_strdup_printf("OUT_%s", data);
    g_autofree char *full = full_subset_text(ctx->g, data);
    for (guint l = 0; l < n_levels; l++) {
      WeirNode *entry = entries[l];
      g_autoptr(WeirExpr) iterations =
          nest_iterations(entries, l, n_levels, levels);
      if (!weir_node_has_in_conn(entry, ic)) {
        weir_node_add_in_conn(entry, ic);
        weir_node_add_out_conn(entry, oc);
        guint src = l ? entries[l - 1]->id : ins[i].access->id;
        if (!memlet(ctx, src, l ? oc : NULL, entry->id, ic, data, full,
                    iterations, WEIR_WCR_NONE, error))
          return FALSE;
      } else {
        for (guint e = 0; iterations && e < ctx->s->edges->len; e++) {
          WeirMemlet *m = g_ptr_array_index(ctx->s->edges, e);
          if (m->dst == entry->id && g_strcmp0(m->dst_conn, ic) == 0 &&
              m->volume) {
            g_autoptr(WeirExpr) sum = weir_expr_add(m->volume, iterations);
            weir_memlet_set_volume(m, sum);
          }
        }
      }
    }
    if (!memlet(ctx, inner->id, oc, t->id, ins[i].conn, data, ins[i].subset,
                NULL, WEIR_WCR_NONE, error))
      return FALSE;
  }
  if (n_ins == 0) {
    for (guint l = 1; l < n_levels; l++)
      if (!memlet(ctx, entries[l - 1]->id, NULL, entries[l]->id, NULL, NULL,
                  NULL, NULL, WEIR_WCR_NONE, error))
        return FALSE;
    if (!memlet(ctx, inner->id, NULL, t->id, NULL, NULL, NULL, NULL,
                WEIR_WCR_NONE, error))
      return FALSE;
  }
  if (after && !memlet(ctx, after->id, NULL, entries[0]->id, NULL, NULL, NULL,
                       NULL, WEIR_WCR_NONE, error))
    return FALSE;
  g_autofree char *ic = g_strdup_printf("IN_%s", odata);
  g_autofree char *oc = g_strdup_printf("OUT_%s", odata);
  g_autofree char *full = full_subset_text(ctx->g, odata);
  if (!memlet(ctx, t->id, out->conn, exits[n_levels - 1]->id, ic, odata,
              out->subset, NULL, out->wcr, error))
    return FALSE;
  for (guint l = 0; l < n_levels; l++) {
    weir_node_add_in_conn(exits[l], ic);
    weir_node_add_out_conn(exits[l], oc);
  }
  for (guint l = n_levels; l-- > 0;) {
    g_autoptr(WeirExpr) iterations =
        nest_iterations(entries, l, n_levels, levels);
    guint dst = l ? exits[l - 1]->id : out->access->id;
    if (!memlet(ctx, exits[l]->id, oc, dst, l ? ic : NULL, odata, full,
                iterations, out->wcr, error))
      return FALSE;
  }
  return TRUE;
}

/* A gradient being accumulated by this scope's backward maps. */
typedef struct {
  const char *value; /* the forward value (borrowed) */
  guint k;           /* its index in ctx->ins */
  const char *grad;  /* gradient container (borrowed from the graph) */
  WeirNode *zero;    /* access node written by the zero map */
  WeirNode *acc;     /* access node the WCR-sum memlets write */
  gboolean used;     /* some backward map writes acc */
} Accum;

static Accum *accum_for(WeirGradContext *ctx, GArray *accs, const char *value,
                        guint k, GError **error) {
  for (guint i = 0; i < accs->len; i++) {
    Accum *a = &g_array_index(accs, Accum, i);
    if (strcmp(a->value, value) == 0)
      return a;
  }
  Accum a = {.value = value, .k = k};
  g_autofree char *base = g_strdup_printf("%s_grad", value);
  a.grad = weir_grad_new_like(ctx, base, value, -1);
  const WeirContainer *c = weir_graph_container(ctx->g, a.grad);
  guint r = c->shape->len;
  g_autoptr(GPtrArray) params = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) ranges = g_ptr_array_new_with_free_func(g_free);
  for (guint d = 0; d < r; d++) {
    g_autofree char *dim = weir_expr_to_string(c->shape->pdata[d]);
    g_ptr_array_add(params, g_strdup_printf("z%u", d));
    g_ptr_array_add(ranges, g_strdup_printf("0:%s", dim));
  }
  g_ptr_array_add(params, NULL);
  g_ptr_array_add(ranges, NULL);
  g_autofree char *sub = g_strjoinv(", ", (char **)params->pdata);
  a.zero = weir_state_add_access(ctx->g, ctx->s, a.grad);
  BPort out = {a.zero, "y", sub, WEIR_WCR_NONE};
  g_autofree char *label = g_strdup_printf("%s_zero", a.grad);
  Level level = {r, (const char *const *)params->pdata,
                 (const char *const *)ranges->pdata};
  if (!add_scope(ctx, label, r ? 1 : 0, &level, NULL, 0, &out, NULL, "y = 0",
                 error))
    return NULL;
  a.acc = weir_state_add_access(ctx->g, ctx->s, a.grad);
  g_array_append_val(accs, a);
  return &g_array_index(accs, Accum, accs->len - 1);
}

/* The text of the last value code assigns to `out`; *index (owned, may be
 * NULL) receives its index when that assignment is indexed (out[f] = e),
 * *count the number of assignments to `out` and *indexed how many of them
 * are indexed. */
static char *out_value(const WeirCode *code, const char *out, char **index,
                       guint *count, guint *indexed) {
  char *r = NULL;
  *index = NULL;
  *count = 0;
  *indexed = 0;
  for (guint i = 0; i < code->stmts->len; i++) {
    const WeirStmt *st = g_ptr_array_index(code->stmts, i);
    if ((st->target->kind == WEIR_AST_NAME ||
         st->target->kind == WEIR_AST_INDEX) &&
        strcmp(st->target->name, out) == 0) {
      g_free(r);
      g_clear_pointer(index, g_free);
      r = weir_ast_to_string(st->value);
      (*count)++;
      if (st->target->kind == WEIR_AST_INDEX) {
        (*indexed)++;
        GString *t = g_string_new(NULL);
        for (guint a = 0; st->target->args && a < st->target->args->len; a++) {
          g_autofree char *x =
              weir_ast_to_string(g_ptr_array_index(st->target->args, a));
          g_string_append_printf(t, "%s%s", a ? ", " : "", x);
        }
        *index = g_string_free(t, FALSE);
      }
    }
  }
  return r;
}

static gint index_of(GPtrArray *names, const char *name) {
  for (guint k = 0; k < names->len; k++)
    if (names->pdata[k] && strcmp(names->pdata[k], name) == 0)
      return (gint)k;
  return -1;
}

gboolean weir_grad_scope(WeirGradContext *ctx, GError **error) {
  WeirState *s = ctx->s;
  const WeirNode *n = ctx->node;
  /* The maps of the scope, outermost first: each holds exactly one node,
   * the next map or the tasklet. */
  g_autoptr(GPtrArray) maps = g_ptr_array_new(); /* const WeirMap* */
  WeirNode *t = NULL;
  if (n->kind == WEIR_NODE_MAP_ENTRY) {
    const WeirNode *entry = n;
    const WeirNode *exit = weir_state_map_exit(s, n);
    while (!t) {
      g_ptr_array_add(maps, entry->map);
      if (!exit)
        return scope_fail(ctx, error, "map '%s' has no exit", entry->label);
      g_autoptr(GPtrArray) outs = weir_state_out_edges(s, entry->id);
      WeirNode *next = NULL;
      for (guint i = 0; i < outs->len; i++) {
        const WeirMemlet *m = g_ptr_array_index(outs, i);
        WeirNode *d = weir_state_node(s, m->dst);
        if (!d ||
            (d->kind != WEIR_NODE_TASKLET && d->kind != WEIR_NODE_MAP_ENTRY) ||
            (next && next != d))
          return scope_fail(ctx, error,
                            "map '%s' holds several nodes or a node other "
                            "than a map or a tasklet; only maps around one "
                            "map or one tasklet are supported",
                            entry->label);
        next = d;
      }
      if (!next)
        return scope_fail(ctx, error, "map '%s' holds no tasklet",
                          entry->label);
      const WeirNode *next_exit = NULL;
      if (next->kind == WEIR_NODE_TASKLET)
        t = next;
      else if (!(next_exit = weir_state_map_exit(s, next)))
        return scope_fail(ctx, error, "map '%s' has no exit", next->label);
      /* everything the inner node writes leaves through this map's exit */
      g_autoptr(GPtrArray) nouts =
          weir_state_out_edges(s, t ? t->id : next_exit->id);
      for (guint i = 0; i < nouts->len; i++)
        if (((const WeirMemlet *)g_ptr_array_index(nouts, i))->dst != exit->id)
          return scope_fail(ctx, error,
                            "'%s' writes inside map '%s'; only maps around "
                            "one map or one tasklet are supported",
                            next->label, entry->label);
      entry = next;
      exit = next_exit;
    }
  } else {
    t = (WeirNode *)n;
  }
  if (!t->code)
    return scope_fail(ctx, error, "the code of tasklet '%s' does not parse",
                      t->label);

  /* The tasklet's memlets. */
  g_autoptr(GPtrArray) tins = weir_state_in_edges(s, t->id);
  g_autoptr(GPtrArray) touts = weir_state_out_edges(s, t->id);
  g_autoptr(GPtrArray) reads = g_ptr_array_new();  /* WeirMemlet* */
  g_autoptr(GPtrArray) writes = g_ptr_array_new(); /* WeirMemlet* */
  for (guint i = 0; i < tins->len; i++) {
    WeirMemlet *m = g_ptr_array_index(tins, i);
    if (m->data && m->dst_conn)
      g_ptr_array_add(reads, m);
  }
  for (guint i = 0; i < touts->len; i++) {
    WeirMemlet *m = g_ptr_array_index(touts, i);
    if (m->data && m->src_conn)
      g_ptr_array_add(writes, m);
  }

  /* Which inputs get a gradient. */
  gboolean any = FALSE;
  for (guint i = 0; i < reads->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(reads, i);
    gint k = index_of(ctx->ins, m->data);
    any = any || (k >= 0 && weir_grad_wants(ctx, (guint)k));
  }
  if (!any)
    return TRUE;

  /* Each read is one element, or a block the code indexes (a pooling
   * window clipped by padding: x[0, 0, ix0] under a bounds test). */
  g_autoptr(GPtrArray) occurrences =
      g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);
  for (guint i = 0; i < reads->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(reads, i);
    GPtrArray *occ = weir_grad_code_indices(t->code, m->dst_conn);
    g_ptr_array_add(occurrences, occ);
    if (occ->len == 0 && !weir_subset_is_point(m->subset)) {
      g_autofree char *sub = weir_subset_to_string(m->subset);
      return scope_fail(ctx, error,
                        "tasklet '%s' reads '%s[%s]' on connector '%s' "
                        "without indexing it",
                        t->label, m->data, sub, m->dst_conn);
    }
  }

  /* Parameters and ranges of the forward scope, level by level. */
  g_autoptr(GPtrArray) params = g_ptr_array_new();
  g_autoptr(GPtrArray) ranges = g_ptr_array_new_with_free_func(g_free);
  g_autofree Level *levels = g_new0(Level, maps->len + 1);
  guint n_levels = maps->len;
  for (guint l = 0; l < n_levels; l++) {
    const WeirMap *map = g_ptr_array_index(maps, l);
    levels[l].n = map->params->len;
    for (guint i = 0; i < map->params->len; i++) {
      g_ptr_array_add(params, g_ptr_array_index(map->params, i));
      g_ptr_array_add(ranges, weir_range_to_string(
                                  &g_array_index(map->ranges, WeirRange, i)));
    }
  }
  g_ptr_array_add(params, NULL);
  g_ptr_array_add(ranges, NULL);
  for (guint l = 0, off = 0; l < n_levels; off += levels[l].n, l++) {
    levels[l].params = (const char *const *)params->pdata + off;
    levels[l].ranges = (const char *const *)ranges->pdata + off;
  }
  const char *const *all_params = (const char *const *)params->pdata;

  g_autofree char *gconn = fresh_conn(t, all_params, "grad_out");
  g_autofree char *vconn = fresh_conn(t, all_params, "value_out");
  g_autofree char *dconn = fresh_conn(t, all_params, "grad_in");
  g_autoptr(GArray) accs = g_array_new(FALSE, FALSE, sizeof(Accum));
  g_autoptr(GPtrArray) subs = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < reads->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(reads, i);
    g_ptr_array_add(subs, weir_subset_to_string(m->subset));
  }
  /* Every wanted input gets a gradient, zeros when its derivative is 0
   * (floor, a comparison). */
  for (guint i = 0; i < reads->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(reads, i);
    gint k = index_of(ctx->ins, m->data);
    if (k >= 0 && weir_grad_wants(ctx, (guint)k) &&
        !accum_for(ctx, accs, m->data, (guint)k, error))
      return FALSE;
  }

  for (guint w = 0; w < writes->len; w++) {
    const WeirMemlet *write = g_ptr_array_index(writes, w);
    if (write->wcr == WEIR_WCR_COUNT)
      return scope_fail(ctx, error,
                        "tasklet '%s' writes '%s' with an unknown "
                        "WCR",
                        t->label, write->data);
    gint kout = index_of(ctx->outs, write->data);
    const char *dy = kout >= 0 ? weir_grad_dout(ctx, (guint)kout, error) : NULL;
    if (!dy)
      continue;
    g_autofree char *out_index = NULL;
    guint n_assign = 0, n_indexed = 0;
    g_autofree char *fval =
        out_value(t->code, write->src_conn, &out_index, &n_assign, &n_indexed);
    if (!fval)
      return scope_fail(ctx, error,
                        "tasklet '%s' does not assign its output '%s'",
                        t->label, write->src_conn);
    if (n_indexed > 0 && n_assign != 1)
      return scope_fail(ctx, error,
                        "tasklet '%s' assigns its output '%s' %u times with "
                        "an index; only one indexed assignment is supported",
                        t->label, write->src_conn, n_assign);
    if (!out_index && !weir_subset_is_point(write->subset)) {
      g_autofree char *sub = weir_subset_to_string(write->subset);
      return scope_fail(ctx, error,
                        "tasklet '%s' writes '%s[%s]', more than one element, "
                        "without indexing its output '%s'",
                        t->label, write->data, sub, write->src_conn);
    }
    /* the gradient (and the value) of the output at the element written:
     * the same subset, the same index inside it */
    g_autofree char *gref = out_index
                                ? g_strdup_printf("%s[%s]", gconn, out_index)
                                : g_strdup(gconn);
    g_autofree char *vref = out_index
                                ? g_strdup_printf("%s[%s]", vconn, out_index)
                                : g_strdup(vconn);
    gboolean maxmin = write->wcr == WEIR_WCR_MAX || write->wcr == WEIR_WCR_MIN;
    gboolean prod = write->wcr == WEIR_WCR_PROD;
    if (write->wcr == WEIR_WCR_NONE &&
        g_hash_table_contains(ctx->maxed, write->data))
      return scope_fail(ctx, error,
                        "tasklet '%s' initializes '%s', which a max, min or "
                        "product accumulation updates, from differentiable "
                        "values",
                        t->label, write->data);
    if (maxmin || prod)
      g_hash_table_add(ctx->maxed, g_strdup(write->data));
    g_autofree char *out_sub = weir_subset_to_string(write->subset);
    g_autoptr(GArray) bins = g_array_new(FALSE, TRUE, sizeof(BPort));
    for (guint i = 0; i < reads->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(reads, i);
      BPort p = {weir_grad_access(ctx, m->data), m->dst_conn, subs->pdata[i],
                 WEIR_WCR_NONE};
      g_array_append_val(bins, p);
    }
    {
      BPort p = {weir_grad_access(ctx, dy), gconn, out_sub, WEIR_WCR_NONE};
      g_array_append_val(bins, p);
    }
    if (maxmin || prod) {
      BPort p = {weir_grad_access(ctx, write->data), vconn, out_sub,
                 WEIR_WCR_NONE};
      g_array_append_val(bins, p);
    }

    for (guint i = 0; i < reads->len; i++) {
      const WeirMemlet *m = g_ptr_array_index(reads, i);
      gint k = index_of(ctx->ins, m->data);
      if (k < 0 || !weir_grad_wants(ctx, (guint)k))
        continue;
      Accum *a = accum_for(ctx, accs, m->data, (guint)k, error);
      GPtrArray *occ = occurrences->pdata[i];
      for (guint j = 0; j < MAX(occ->len, 1); j++) {
        char **comps = occ->len ? occ->pdata[j] : NULL;
        g_autofree char *target_index = comps ? g_strjoinv(", ", comps) : NULL;
        g_autofree char *body = NULL;
        const char *unsupported = NULL;
        g_autofree char *deriv =
            weir_grad_code_derivative(t->code, write->src_conn, m->dst_conn,
                                      target_index, &body, &unsupported);
        if (!deriv)
          return scope_fail(ctx, error,
                            "symbolic derivative of the code of tasklet "
                            "'%s': %s is not supported",
                            t->label, unsupported);
        if (strcmp(deriv, "0") == 0)
          continue;
        /* An indexed gradient write: the index clamped to the block, so a
         * position the forward code skips (its bounds test is false, the
         * derivative is 0 there) writes 0 inside it. */
        g_autoptr(GString) target = g_string_new(dconn);
        if (comps) {
          g_string_append_c(target, '[');
          for (guint d = 0; comps[d]; d++) {
            gint64 v;
            g_autoptr(WeirExpr) size =
                d < m->subset->rank ? weir_range_size(&m->subset->dims[d])
                                    : NULL;
            gboolean literal = g_ascii_string_to_signed(
                comps[d], 10, G_MININT64, G_MAXINT64, &v, NULL);
            if (literal || !size) {
              g_string_append_printf(target, "%s%s", d ? ", " : "", comps[d]);
            } else {
              g_autofree char *st = weir_expr_to_string(size);
              g_string_append_printf(target, "%smin(max(%s, 0), (%s) - 1)",
                                     d ? ", " : "", comps[d], st);
            }
          }
          g_string_append_c(target, ']');
        }
        /* WCR max / min: only the elements equal to the result (all of
         * them on ties); WCR prod: the product of the other factors,
         * out / f (0 where f is 0). */
        g_autofree char *code =
            maxmin ? g_strdup_printf("%s%s = (%s) == %s ? %s * %s : 0", body,
                                     target->str, fval, vref, gref, deriv)
            : prod ? g_strdup_printf("%s%s = (%s) != 0 ? %s * (%s / (%s)) * "
                                     "%s : 0",
                                     body, target->str, fval, gref, vref, fval,
                                     deriv)
                   : g_strdup_printf("%s%s = %s * %s", body, target->str, gref,
                                     deriv);
        BPort out = {a->acc, dconn, subs->pdata[i], WEIR_WCR_SUM};
        g_autofree char *label =
            g_strdup_printf("%s_grad_%s", t->label, m->dst_conn);
        if (!add_scope(ctx, label, n_levels, levels, (BPort *)bins->data,
                       bins->len, &out, a->zero, code, error))
          return FALSE;
        a->used = TRUE;
      }
    }
  }
  for (guint i = 0; i < accs->len; i++) {
    Accum *a = &g_array_index(accs, Accum, i);
    if (!a->used) { /* only zeros */
      weir_state_remove_node(ctx->s, a->acc->id);
      a->acc = a->zero;
    }
    weir_grad_set_access(ctx, a->acc);
    weir_grad_add(ctx, a->k, a->grad);
  }
  return TRUE;
}

/* Whether sub (NULL: none given) covers all of container c. */
static gboolean covers(const WeirGraph *g, const char *c,
                       const WeirSubset *sub) {
  g_autoptr(WeirSubset) full =
      weir_container_full_subset(weir_graph_container(g, c));
  return !sub || weir_subset_equal(full, sub);
}

gboolean weir_grad_copy(WeirGradContext *ctx, const WeirMemlet *m,
                        GError **error) {
  const char *x = weir_grad_input(ctx, 0), *y = weir_grad_output(ctx, 0);
  const char *dy = weir_grad_dout(ctx, 0, error);
  if (!dy || !weir_grad_wants(ctx, 0))
    return TRUE;
  gboolean on_src = g_strcmp0(m->data, x) == 0;
  const WeirSubset *xs = on_src ? m->subset : m->other;
  const WeirSubset *ys = on_src ? m->other : m->subset;
  g_autoptr(WeirExpr) vx =
      weir_container_volume(weir_graph_container(ctx->g, x));
  g_autoptr(WeirExpr) vy =
      weir_container_volume(weir_graph_container(ctx->g, y));
  if (!covers(ctx->g, x, xs) || !covers(ctx->g, y, ys) ||
      !weir_expr_equal(vx, vy)) {
    g_autofree char *where = weir_describe_memlet(ctx->s, m);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "program '%s': %s: cannot differentiate a copy of part of "
                "'%s' to '%s' (only whole-container copies are supported)",
                ctx->g->name, where, x, y);
    return FALSE;
  }
  g_autofree char *base = g_strdup_printf("%s_grad", x);
  const char *dx = weir_grad_new_like(ctx, base, x, -1);
  WeirNode *src = weir_grad_access(ctx, dy);
  WeirNode *dst = weir_state_add_access(ctx->g, ctx->s, dx);
  g_autofree char *sy = full_subset_text(ctx->g, dy);
  g_autofree char *sx = full_subset_text(ctx->g, dx);
  WeirMemlet *c = weir_state_add_memlet(ctx->g, ctx->s, src->id, NULL, dst->id,
                                        NULL, dy, sy, error);
  if (!c || !weir_memlet_set_other(c, sx, error))
    return FALSE;
  weir_grad_set_access(ctx, dst);
  weir_grad_add(ctx, 0, dx);
  return TRUE;
}
