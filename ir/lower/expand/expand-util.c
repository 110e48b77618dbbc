/* expand-util.c — helpers shared by the expansions of library nodes. */
#include <math.h>
#include <string.h>

#include "expand-util.h"

static gboolean find_port(WeirGraph *g, WeirState *s, WeirNode *n,
                          gboolean input, guint k, WeirPort *out,
                          GError **error) {
  g_autofree char *conn = g_strdup_printf(input ? "in%u" : "out%u", k);
  gboolean declared =
      input ? weir_node_has_in_conn(n, conn) : weir_node_has_out_conn(n, conn);
  if (!declared)
    return FALSE;
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    gboolean match =
        input ? (m->dst == n->id && g_strcmp0(m->dst_conn, conn) == 0)
              : (m->src == n->id && g_strcmp0(m->src_conn, conn) == 0);
    if (!match)
      continue;
    WeirNode *other = weir_state_node(s, input ? m->src : m->dst);
    if (!other || other->kind != WEIR_NODE_ACCESS) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "connector '%s' of node '%s' is not wired to an access node",
                  conn, n->label);
      return FALSE;
    }
    WeirContainer *c = weir_graph_container(g, other->data);
    if (!c) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "connector '%s' of node '%s': unknown container '%s'", conn,
                  n->label, other->data);
      return FALSE;
    }
    out->access = other;
    out->container = c;
    out->rank = c->shape->len;
    out->shape = (WeirExpr *const *)c->shape->pdata;
    return TRUE;
  }
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
              "connector '%s' of node '%s' has no memlet", conn, n->label);
  return FALSE;
}

gboolean weir_port_input(WeirGraph *g, WeirState *s, WeirNode *n, guint k,
                         WeirPort *out, GError **error) {
  return find_port(g, s, n, TRUE, k, out, error);
}

gboolean weir_port_output(WeirGraph *g, WeirState *s, WeirNode *n, guint k,
                          WeirPort *out, GError **error) {
  return find_port(g, s, n, FALSE, k, out, error);
}

static gboolean require_port(WeirGraph *g, WeirState *s, WeirNode *n,
                             gboolean input, guint k, WeirPort *out,
                             GError **error) {
  g_autoptr(GError) local = NULL;
  if (find_port(g, s, n, input, k, out, &local))
    return TRUE;
  if (local)
    g_propagate_error(error, g_steal_pointer(&local));
  else
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "node '%s' (%s) has no %s %u", n->label, n->op,
                input ? "input" : "output", k);
  return FALSE;
}

gboolean weir_port_is_empty(const WeirPort *p) {
  g_autoptr(WeirExpr) v = weir_container_volume(p->container);
  gint64 c;
  return weir_expr_is_const(v, &c) && c == 0;
}

gboolean weir_port_require_input(WeirGraph *g, WeirState *s, WeirNode *n,
                                 guint k, WeirPort *out, GError **error) {
  return require_port(g, s, n, TRUE, k, out, error);
}

gboolean weir_port_require_output(WeirGraph *g, WeirState *s, WeirNode *n,
                                  guint k, WeirPort *out, GError **error) {
  return require_port(g, s, n, FALSE, k, out, error);
}

WeirContainer *weir_expand_add_transient(WeirGraph *g, const char *base,
                                         WeirDType dtype, guint rank,
                                         WeirExpr *const *shape) {
  g_autofree char *name = weir_graph_fresh_name(g, base);
  WeirContainer *c =
      weir_graph_add_container(g, name, dtype, rank, shape, TRUE, NULL);
  g_assert(c != NULL); /* fresh names cannot clash */
  return c;
}

char **weir_expand_params(const char *prefix, guint rank) {
  char **p = g_new0(char *, rank + 1);
  for (guint i = 0; i < rank; i++)
    p[i] = g_strdup_printf("%s%u", prefix, i);
  return p;
}

char **weir_expand_full_ranges(guint rank, WeirExpr *const *shape) {
  char **r = g_new0(char *, rank + 1);
  for (guint i = 0; i < rank; i++) {
    g_autofree char *dim = weir_expr_to_string(shape[i]);
    r[i] = g_strdup_printf("0:%s", dim);
  }
  return r;
}

char *weir_expand_index_subset(guint rank, const char *const *params) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < rank; i++)
    g_string_append_printf(s, "%s%s", i ? ", " : "", params[i]);
  return g_string_free(s, FALSE);
}

char *weir_expand_broadcast_subset(guint in_rank, WeirExpr *const *in_shape,
                                   guint out_rank, const char *const *params) {
  g_return_val_if_fail(in_rank <= out_rank, NULL);
  GString *s = g_string_new(NULL);
  guint offset = out_rank - in_rank;
  for (guint d = 0; d < in_rank; d++) {
    gint64 v;
    gboolean one = weir_expr_is_const(in_shape[d], &v) && v == 1;
    g_string_append_printf(s, "%s%s", d ? ", " : "",
                           one ? "0" : params[offset + d]);
  }
  return g_string_free(s, FALSE);
}

char *weir_expand_float_literal(double v) {
  if (isinf(v))
    return g_strdup(v > 0 ? "1e999" : "-1e999");
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  g_ascii_formatd(buf, sizeof buf, "%.17g", v);
  if (!strpbrk(buf, ".eEn"))
    return g_strdup_printf("%s.0", buf);
  return g_strdup(buf);
}

/* Full-container subset text: "0:d0, 0:d1, ..." */
static char *full_subset_text(const WeirContainer *c) {
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  return weir_subset_to_string(full);
}

static gboolean add_memlet(WeirGraph *g, WeirState *s, guint src,
                           const char *src_conn, guint dst,
                           const char *dst_conn, const char *data,
                           const char *subset, WeirExpr *volume, WeirWcr wcr,
                           GError **error) {
  WeirMemlet *m = weir_state_add_memlet(g, s, src, src_conn, dst, dst_conn,
                                        data, subset, error);
  if (!m)
    return FALSE;
  if (volume)
    weir_memlet_set_volume(m, volume);
  m->wcr = wcr;
  return TRUE;
}

WeirNode *weir_expand_map(WeirGraph *g, WeirState *s, const char *label,
                          guint n_params, const char *const *params,
                          const char *const *ranges, const WeirTaskletPort *ins,
                          guint n_ins, const WeirTaskletPort *outs,
                          guint n_outs, const char *code,
                          WeirNode *const *after, guint n_after,
                          GError **error) {
  g_autoptr(GPtrArray) in_names = g_ptr_array_new();
  g_autoptr(GPtrArray) out_names = g_ptr_array_new();
  for (guint i = 0; i < n_ins; i++)
    g_ptr_array_add(in_names, (gpointer)ins[i].conn);
  g_ptr_array_add(in_names, NULL);
  for (guint i = 0; i < n_outs; i++)
    g_ptr_array_add(out_names, (gpointer)outs[i].conn);
  g_ptr_array_add(out_names, NULL);
  WeirNode *t =
      weir_state_add_tasklet(g, s, label, (const char *const *)in_names->pdata,
                             (const char *const *)out_names->pdata, code);

  if (n_params == 0) {
    for (guint i = 0; i < n_ins; i++) {
      WeirContainer *c = weir_graph_container(g, ins[i].access->data);
      g_autofree char *full = full_subset_text(c);
      if (!add_memlet(g, s, ins[i].access->id, NULL, t->id, ins[i].conn,
                      c->name, ins[i].subset ? ins[i].subset : full, NULL,
                      WEIR_WCR_NONE, error))
        return NULL;
    }
    for (guint i = 0; i < n_outs; i++) {
      WeirContainer *c = weir_graph_container(g, outs[i].access->data);
      g_autofree char *full = full_subset_text(c);
      if (!add_memlet(g, s, t->id, outs[i].conn, outs[i].access->id, NULL,
                      c->name, outs[i].subset ? outs[i].subset : full, NULL,
                      outs[i].wcr, error))
        return NULL;
    }
    for (guint i = 0; i < n_after; i++)
      if (!add_memlet(g, s, after[i]->id, NULL, t->id, NULL, NULL, NULL, NULL,
                      WEIR_WCR_NONE, error))
        return NULL;
    return t;
  }

  g_autoptr(GPtrArray) p = g_ptr_array_new();
  g_autoptr(GPtrArray) r = g_ptr_array_new();
  for (guint i = 0; i < n_params; i++) {
    g_ptr_array_add(p, (gpointer)params[i]);
    g_ptr_array_add(r, (gpointer)ranges[i]);
  }
  g_ptr_array_add(p, NULL);
  g_ptr_array_add(r, NULL);
  WeirNode *exit = NULL;
  WeirNode *entry = weir_state_add_map(
      g, s, label, (const char *const *)p->pdata, (const char *const *)r->pdata,
      WEIR_SCHEDULE_PARALLEL, &exit, error);
  if (!entry)
    return NULL;

  /* Number of iterations of the map. */
  g_autoptr(WeirExpr) iterations = weir_expr_const(1);
  for (guint i = 0; i < entry->map->ranges->len; i++) {
    g_autoptr(WeirExpr) size =
        weir_range_size(&g_array_index(entry->map->ranges, WeirRange, i));
    WeirExpr *next = weir_expr_mul(iterations, size);
    weir_expr_unref(iterations);
    iterations = next;
  }

  for (guint i = 0; i < n_ins; i++) {
    WeirContainer *c = weir_graph_container(g, ins[i].access->data);
    g_autofree char *full = full_subset_text(c);
    g_autofree char *in_conn = g_strdup_printf("IN_%s", c->name);
    g_autofree char *out_conn = g_strdup_printf("OUT_%s", c->name);
    const char *inner = ins[i].subset ? ins[i].subset : full;
    g_autoptr(WeirSubset) inner_subset = weir_subset_parse(inner, error);
    if (!inner_subset)
      return NULL;
    g_autoptr(WeirExpr) inner_volume = weir_subset_volume(inner_subset);
    g_autoptr(WeirExpr) volume = weir_expr_mul(inner_volume, iterations);
    if (!weir_node_has_in_conn(entry, in_conn)) {
      weir_node_add_in_conn(entry, in_conn);
      weir_node_add_out_conn(entry, out_conn);
      if (!add_memlet(g, s, ins[i].access->id, NULL, entry->id, in_conn,
                      c->name, full, volume, WEIR_WCR_NONE, error))
        return NULL;
    } else {
      /* A second read of the same container through the same entry
       * connector: account for its accesses on the outer memlet. */
      for (guint e = 0; e < s->edges->len; e++) {
        WeirMemlet *m = g_ptr_array_index(s->edges, e);
        if (m->dst == entry->id && g_strcmp0(m->dst_conn, in_conn) == 0) {
          g_autoptr(WeirExpr) sum = weir_expr_add(m->volume, volume);
          weir_memlet_set_volume(m, sum);
        }
      }
    }
    if (!add_memlet(g, s, entry->id, out_conn, t->id, ins[i].conn, c->name,
                    inner, NULL, WEIR_WCR_NONE, error))
      return NULL;
  }
  if (n_ins == 0 && !add_memlet(g, s, entry->id, NULL, t->id, NULL, NULL, NULL,
                                NULL, WEIR_WCR_NONE, error))
    return NULL;
  for (guint i = 0; i < n_after; i++)
    if (!add_memlet(g, s, after[i]->id, NULL, entry->id, NULL, NULL, NULL, NULL,
                    WEIR_WCR_NONE, error))
      return NULL;

  for (guint i = 0; i < n_outs; i++) {
    WeirContainer *c = weir_graph_container(g, outs[i].access->data);
    g_autofree char *full = full_subset_text(c);
    g_autofree char *in_conn = g_strdup_printf("IN_%s", c->name);
    g_autofree char *out_conn = g_strdup_printf("OUT_%s", c->name);
    const char *inner = outs[i].subset ? outs[i].subset : full;
    g_autoptr(WeirSubset) inner_subset = weir_subset_parse(inner, error);
    if (!inner_subset)
      return NULL;
    g_autoptr(WeirExpr) inner_volume = weir_subset_volume(inner_subset);
    g_autoptr(WeirExpr) volume = weir_expr_mul(inner_volume, iterations);
    if (!add_memlet(g, s, t->id, outs[i].conn, exit->id, in_conn, c->name,
                    inner, NULL, outs[i].wcr, error))
      return NULL;
    if (!weir_node_has_in_conn(exit, in_conn)) {
      weir_node_add_in_conn(exit, in_conn);
      weir_node_add_out_conn(exit, out_conn);
      if (!add_memlet(g, s, exit->id, out_conn, outs[i].access->id, NULL,
                      c->name, full, volume, outs[i].wcr, error))
        return NULL;
    }
  }
  return entry;
}

/* ---------------------------------------------------- integer code text */

static void append_expr_code(GString *s, const WeirExpr *e) {
  guint n = weir_expr_n_operands(e);
  switch (weir_expr_kind(e)) {
  case WEIR_EXPR_CONST: {
    gint64 v = weir_expr_const_value(e);
    if (v == G_MININT64)
      g_string_append(s, "(-9223372036854775807 - 1)");
    else if (v < 0)
      g_string_append_printf(s, "(%" G_GINT64_FORMAT ")", v);
    else
      g_string_append_printf(s, "%" G_GINT64_FORMAT, v);
    return;
  }
  case WEIR_EXPR_SYMBOL:
    g_string_append(s, weir_expr_symbol_name(e));
    return;
  case WEIR_EXPR_ADD:
  case WEIR_EXPR_MUL:
    g_string_append_c(s, '(');
    for (guint i = 0; i < n; i++) {
      if (i)
        g_string_append(s, weir_expr_kind(e) == WEIR_EXPR_ADD ? " + " : " * ");
      append_expr_code(s, weir_expr_operand(e, i));
    }
    g_string_append_c(s, ')');
    return;
  case WEIR_EXPR_FLOORDIV: {
    /* a // b = a / b - 1 when the division is inexact and the signs of a
     * and b differ (C truncates toward zero). */
    g_autoptr(GString) a = g_string_new(NULL);
    g_autoptr(GString) b = g_string_new(NULL);
    append_expr_code(a, weir_expr_operand(e, 0));
    append_expr_code(b, weir_expr_operand(e, 1));
    gint64 c;
    if (weir_expr_is_const(weir_expr_operand(e, 1), &c) && c > 0)
      g_string_append_printf(s, "(%s / %s - (%s %% %s < 0 ? 1 : 0))", a->str,
                             b->str, a->str, b->str);
    else
      g_string_append_printf(s,
                             "(%s / %s - (%s %% %s != 0 && (%s < 0) != (%s "
                             "< 0) ? 1 : 0))",
                             a->str, b->str, a->str, b->str, a->str, b->str);
    return;
  }
  case WEIR_EXPR_MOD: {
    /* a % b with the sign of b. */
    g_autoptr(GString) a = g_string_new(NULL);
    g_autoptr(GString) b = g_string_new(NULL);
    append_expr_code(a, weir_expr_operand(e, 0));
    append_expr_code(b, weir_expr_operand(e, 1));
    g_string_append_printf(s, "((%s %% %s + %s) %% %s)", a->str, b->str, b->str,
                           b->str);
    return;
  }
  case WEIR_EXPR_MIN:
  case WEIR_EXPR_MAX:
    g_string_append(s, weir_expr_kind(e) == WEIR_EXPR_MIN ? "min(" : "max(");
    for (guint i = 0; i < n; i++) {
      if (i)
        g_string_append(s, ", ");
      append_expr_code(s, weir_expr_operand(e, i));
    }
    g_string_append_c(s, ')');
    return;
  }
  g_assert_not_reached();
}

char *weir_expand_expr_code(const WeirExpr *e) {
  GString *s = g_string_new(NULL);
  append_expr_code(s, e);
  return g_string_free(s, FALSE);
}

const char *weir_expand_lowest_literal(WeirDType dtype) {
  switch (dtype) {
  case WEIR_DTYPE_F32:
  case WEIR_DTYPE_F64:
  case WEIR_DTYPE_F16:
  case WEIR_DTYPE_BF16:
    return "-1e999";
  case WEIR_DTYPE_I32:
    return "(-2147483647 - 1)";
  case WEIR_DTYPE_I64:
    return "(-9223372036854775807 - 1)";
  case WEIR_DTYPE_I8:
    return "-128";
  case WEIR_DTYPE_I16:
    return "-32768";
  case WEIR_DTYPE_BOOL:
    return "false";
  case WEIR_DTYPE_U8:
  case WEIR_DTYPE_U16:
  case WEIR_DTYPE_U32:
  case WEIR_DTYPE_U64:
  case WEIR_DTYPE_COUNT:
    break;
  }
  return "0";
}

const char *weir_expand_highest_literal(WeirDType dtype) {
  switch (dtype) {
  case WEIR_DTYPE_F32:
  case WEIR_DTYPE_F64:
  case WEIR_DTYPE_F16:
  case WEIR_DTYPE_BF16:
    return "1e999";
  case WEIR_DTYPE_I32:
    return "2147483647";
  case WEIR_DTYPE_I64:
    return "9223372036854775807";
  case WEIR_DTYPE_BOOL:
    return "true";
  case WEIR_DTYPE_U8:
    return "255";
  case WEIR_DTYPE_I8:
    return "127";
  case WEIR_DTYPE_I16:
    return "32767";
  case WEIR_DTYPE_U16:
    return "65535";
  case WEIR_DTYPE_U32:
    return "4294967295";
  case WEIR_DTYPE_U64:
    return "u64(-1)";
  case WEIR_DTYPE_COUNT:
    break;
  }
  return "0";
}

char *weir_expand_name(const WeirNode *n, const char *suffix) {
  const char *base = n->label && *n->label ? n->label : n->op;
  if (!base)
    base = "";
  GString *s = g_string_new(NULL);
  if (g_ascii_isdigit(base[0]))
    g_string_append_c(s, '_');
  for (const char *p = base; *p; p++)
    g_string_append_c(s, g_ascii_isalnum(*p) || *p == '_' ? *p : '_');
  if (suffix && *suffix)
    g_string_append_printf(s, "_%s", suffix);
  if (s->len == 0)
    g_string_append(s, "tmp");
  return g_string_free(s, FALSE);
}

/* Map parameter names p0, p1, ... unless the program has symbols of those
 * names (a parameter may not shadow a symbol); then q0, ..., pp0, .... */
char **weir_expand_fresh_params(const WeirGraph *g, guint rank) {
  static const char *const prefixes[] = {"p", "q", "pp", "qq", "map_p"};
  for (guint k = 0; k < G_N_ELEMENTS(prefixes); k++) {
    char **p = weir_expand_params(prefixes[k], rank);
    gboolean clash = FALSE;
    for (guint i = 0; i < rank && !clash; i++)
      clash = weir_graph_has_symbol(g, p[i]);
    if (!clash)
      return p;
    g_strfreev(p);
  }
  return weir_expand_params("weir_p", rank);
}

/* Makes the memlets that carry input connector `conn` of the tasklet of a
 * map built by weir_expand_map (`node`: the entry, or the tasklet when
 * there is no map) dynamic: one element per execution at most. */
void weir_expand_dynamic_input(WeirState *s, WeirNode *node,
                               const char *container, const char *conn) {
  g_autofree char *in_conn = g_strdup_printf("IN_%s", container);
  g_autofree char *out_conn = g_strdup_printf("OUT_%s", container);
  g_autoptr(WeirExpr) iterations = weir_expr_const(1);
  if (node->kind == WEIR_NODE_MAP_ENTRY) {
    for (guint i = 0; i < node->map->ranges->len; i++) {
      g_autoptr(WeirExpr) size =
          weir_range_size(&g_array_index(node->map->ranges, WeirRange, i));
      WeirExpr *next = weir_expr_mul(iterations, size);
      weir_expr_unref(iterations);
      iterations = next;
    }
  }
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (node->kind == WEIR_NODE_MAP_ENTRY && m->dst == node->id &&
        g_strcmp0(m->dst_conn, in_conn) == 0) {
      weir_memlet_set_volume(m, iterations);
      m->dynamic = TRUE;
    } else if ((node->kind == WEIR_NODE_MAP_ENTRY && m->src == node->id &&
                g_strcmp0(m->src_conn, out_conn) == 0 &&
                g_strcmp0(m->dst_conn, conn) == 0) ||
               (node->kind == WEIR_NODE_TASKLET && m->dst == node->id &&
                g_strcmp0(m->dst_conn, conn) == 0)) {
      weir_memlet_set_volume(m, one);
      m->dynamic = TRUE;
    }
  }
}

/* Marks the write of tasklet connector `conn` of the scope built by
 * weir_expand_map (`top`: its entry, or the tasklet) as dynamic: one
 * element per execution, `iterations` in all. */
void weir_expand_dynamic_output(WeirState *s, WeirNode *top, const char *conn,
                                WeirExpr *iterations) {
  guint tasklet = top->id;
  if (top->kind == WEIR_NODE_MAP_ENTRY) {
    g_autoptr(GPtrArray) out = weir_state_out_edges(s, top->id);
    for (guint i = 0; i < out->len; i++) {
      WeirMemlet *m = g_ptr_array_index(out, i);
      WeirNode *d = weir_state_node(s, m->dst);
      if (d && d->kind == WEIR_NODE_TASKLET)
        tasklet = d->id;
    }
  }
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  g_autoptr(GPtrArray) out = weir_state_out_edges(s, tasklet);
  for (guint i = 0; i < out->len; i++) {
    WeirMemlet *m = g_ptr_array_index(out, i);
    if (g_strcmp0(m->src_conn, conn) != 0)
      continue;
    weir_memlet_set_volume(m, one);
    m->dynamic = TRUE;
    WeirNode *exit = weir_state_node(s, m->dst);
    if (!exit || exit->kind != WEIR_NODE_MAP_EXIT)
      continue;
    g_autoptr(GPtrArray) outer = weir_state_out_edges(s, exit->id);
    for (guint j = 0; j < outer->len; j++) {
      WeirMemlet *o = g_ptr_array_index(outer, j);
      if (g_strcmp0(o->data, m->data) == 0) {
        weir_memlet_set_volume(o, iterations);
        o->dynamic = TRUE;
      }
    }
  }
}

gboolean weir_expand_scatter(WeirGraph *g, WeirState *s, WeirNode *n,
                             guint n_params, const char *const *params,
                             const char *const *ranges,
                             const WeirTaskletPort ins[2], WeirNode *y,
                             WeirWcr wcr, const char *code, WeirNode *first,
                             const WeirContainer *source, GError **error) {
  WeirTaskletPort out = {y, "y", NULL, wcr};
  g_autofree char *label = g_strdup_printf("%s_scatter", n->label);
  WeirNode *top = weir_expand_map(g, s, label, n_params, params, ranges, ins, 2,
                                  &out, 1, code, &first, 1, error);
  if (!top)
    return FALSE;
  g_autoptr(WeirExpr) count = weir_container_volume(source);
  weir_expand_dynamic_output(s, top, "y", count);
  return weir_state_remove_node(s, n->id);
}
