/* tier2-util.c — helpers shared by the tier-2 transformations (see
 * tier2-util.h). */
#include <math.h>
#include <string.h>

#include "tier2-util.h"
#include "weir-ops.h"
#include "weir-plugin.h"

/* ------------------------------------------------------------- reasons */

char *weir_tier2_reason(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  return msg;
}

gboolean weir_tier2_reject(char **reason, const char *fmt, ...) {
  if (reason) {
    va_list ap;
    va_start(ap, fmt);
    g_free(*reason);
    *reason = g_strdup_vprintf(fmt, ap);
    va_end(ap);
  }
  return FALSE;
}

WeirState *weir_tier2_site_state(const WeirGraph *g, guint state) {
  return state ? weir_graph_state(g, state) : NULL;
}

WeirNode *weir_tier2_site_node(const WeirState *s, guint id) {
  return s ? weir_state_node(s, id) : NULL;
}

/* --------------------------------------------------------------- ports */

gboolean weir_tier2_port(const WeirGraph *g, const WeirState *s,
                         const WeirNode *n, gboolean input, guint k,
                         WeirTier2Port *out) {
  g_autofree char *conn = g_strdup_printf("%s%u", input ? "in" : "out", k);
  memset(out, 0, sizeof *out);
  if (input ? !weir_node_has_in_conn(n, conn)
            : !weir_node_has_out_conn(n, conn))
    return FALSE;
  WeirMemlet *found = NULL;
  /* The node's memlets: in time of its degree under an edge index. */
  g_autoptr(GPtrArray) edges =
      input ? weir_state_in_edges(s, n->id) : weir_state_out_edges(s, n->id);
  for (guint i = 0; i < edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(edges, i);
    gboolean at = input ? m->dst == n->id && g_strcmp0(m->dst_conn, conn) == 0
                        : m->src == n->id && g_strcmp0(m->src_conn, conn) == 0;
    if (!at)
      continue;
    if (found)
      return FALSE; /* more than one memlet */
    found = m;
  }
  if (!found || !found->data)
    return FALSE;
  WeirNode *a = weir_state_node(s, input ? found->src : found->dst);
  if (!a || a->kind != WEIR_NODE_ACCESS || g_strcmp0(a->data, found->data))
    return FALSE;
  WeirContainer *c = weir_graph_container(g, a->data);
  if (!c)
    return FALSE;
  out->memlet = found;
  out->access = a;
  out->container = c;
  return TRUE;
}

/* Index k of a connector named prefix<k>, or -1. */
static gint64 conn_index(const char *name, const char *prefix) {
  gsize len = strlen(prefix);
  if (strncmp(name, prefix, len) != 0 || !g_ascii_isdigit(name[len]))
    return -1;
  char *end = NULL;
  guint64 v = g_ascii_strtoull(name + len, &end, 10);
  if (*end || v > G_MAXUINT)
    return -1;
  return (gint64)v;
}

gboolean weir_tier2_nth_port(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, gboolean input, guint i,
                             WeirTier2Port *out) {
  GPtrArray *conns = input ? n->in_conns : n->out_conns;
  memset(out, 0, sizeof *out);
  if (i >= conns->len)
    return FALSE;
  gint64 k = conn_index(g_ptr_array_index(conns, i), input ? "in" : "out");
  return k >= 0 && weir_tier2_port(g, s, n, input, (guint)k, out);
}

gboolean weir_tier2_wired(const WeirGraph *g, const WeirState *s,
                          const WeirNode *n) {
  WeirTier2Port p;
  for (guint i = 0; i < n->in_conns->len; i++) {
    gint64 k = conn_index(g_ptr_array_index(n->in_conns, i), "in");
    if (k < 0 || !weir_tier2_port(g, s, n, TRUE, (guint)k, &p))
      return FALSE;
  }
  for (guint i = 0; i < n->out_conns->len; i++) {
    gint64 k = conn_index(g_ptr_array_index(n->out_conns, i), "out");
    if (k < 0 || !weir_tier2_port(g, s, n, FALSE, (guint)k, &p))
      return FALSE;
  }
  return TRUE;
}

WeirNode *weir_tier2_writer(const WeirGraph *g, const WeirState *s,
                            const char *name) {
  (void)g;
  WeirNode *writer = NULL;
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    WeirNode *d = weir_state_node(s, m->dst);
    if (!m->data || !d || d->kind != WEIR_NODE_ACCESS ||
        g_strcmp0(d->data, name))
      continue;
    if (writer)
      return NULL;
    writer = weir_state_node(s, m->src);
  }
  return writer;
}

gboolean weir_tier2_is_op(const WeirNode *n, const char *op) {
  return n && n->kind == WEIR_NODE_LIBRARY && g_strcmp0(n->op, op) == 0;
}

void weir_tier2_match_fed_by(const WeirGraph *g, GArray *sites,
                             const char *producer, const char *consumer) {
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *c = g_ptr_array_index(s->nodes, i);
      WeirTier2Port x;
      if (!weir_tier2_is_op(c, consumer) ||
          !weir_tier2_port(g, s, c, TRUE, 0, &x))
        continue;
      WeirNode *p = weir_tier2_writer(g, s, x.container->name);
      if (!weir_tier2_is_op(p, producer))
        continue;
      WeirSite site = {.state = s->id, .n_nodes = 2, .nodes = {p->id, c->id}};
      g_array_append_val(sites, site);
    }
  }
}

/* --------------------------------------------------------------- usage */

static gboolean is_access_of(const WeirState *s, guint id, const char *name) {
  WeirNode *n = weir_state_node(s, id);
  return n && n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, name) == 0;
}

/* Does state s mention container `name` at all? */
static gboolean state_mentions(const WeirState *s, const char *name) {
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, name) == 0)
      return TRUE;
  }
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (g_strcmp0(m->data, name) == 0)
      return TRUE;
  }
  return FALSE;
}

void weir_tier2_use(const WeirGraph *g, const char *name, WeirTier2Use *out) {
  memset(out, 0, sizeof *out);
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    if (!state_mentions(s, name))
      continue;
    out->states++;
    for (guint i = 0; i < s->nodes->len; i++) {
      WeirNode *n = g_ptr_array_index(s->nodes, i);
      if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, name) == 0)
        out->access_nodes++;
    }
    for (guint i = 0; i < s->edges->len; i++) {
      WeirMemlet *m = g_ptr_array_index(s->edges, i);
      if (!m->data) /* ordering only */
        continue;
      if (is_access_of(s, m->src, name))
        out->reads++;
      if (is_access_of(s, m->dst, name))
        out->writes++;
    }
  }
  if (weir_graph_condition_reads(g, name)) {
    /* a transition condition reads it, outside every state */
    out->reads++;
    out->states++;
  }
}

gboolean weir_tier2_local(const WeirGraph *g, const WeirState *s,
                          const char *name) {
  if (weir_graph_condition_reads(g, name))
    return FALSE;
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *o = g_ptr_array_index(g->states, si);
    if (o != s && state_mentions(o, name))
      return FALSE;
  }
  return TRUE;
}

gboolean weir_tier2_single_value(const WeirGraph *g, const WeirState *s,
                                 const WeirContainer *c, char **reason) {
  WeirTier2Use use;
  weir_tier2_use(g, c->name, &use);
  if (use.writes == 0)
    return TRUE;
  if (use.writes > 1)
    return weir_tier2_reject(reason, "'%s' is written %u times", c->name,
                             use.writes);
  guint here = 0, written_here = 0;
  for (guint i = 0; i < s->nodes->len; i++) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, c->name) == 0)
      here++;
  }
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->data && is_access_of(s, m->dst, c->name))
      written_here++;
  }
  if (!written_here)
    return weir_tier2_reject(reason, "'%s' is written in another state",
                             c->name);
  if (here != 1)
    return weir_tier2_reject(reason,
                             "'%s' has %u access nodes in state %u '%s'",
                             c->name, here, s->id, s->label);
  return TRUE;
}

/* ----------------------------------------------------------- constants */

gboolean weir_tier2_is_constant(const WeirContainer *c) {
  return c && c->transient && c->initial != NULL;
}

gboolean weir_tier2_concrete_shape(const WeirContainer *c, gint64 *shape) {
  for (guint d = 0; d < c->shape->len; d++)
    if (!weir_expr_is_const(g_ptr_array_index(c->shape, d), &shape[d]))
      return FALSE;
  return TRUE;
}

gboolean weir_tier2_same_layout(const WeirContainer *a,
                                const WeirContainer *b) {
  if (a->dtype != b->dtype || a->shape->len != b->shape->len)
    return FALSE;
  for (guint d = 0; d < a->shape->len; d++)
    if (!weir_expr_equal(g_ptr_array_index(a->shape, d),
                         g_ptr_array_index(b->shape, d)))
      return FALSE;
  return TRUE;
}

WeirTensor *weir_tier2_constant_tensor(const WeirContainer *c) {
  if (!c->initial)
    return NULL;
  guint rank = c->shape->len;
  g_autofree gint64 *shape = g_new0(gint64, rank + 1);
  if (!weir_tier2_concrete_shape(c, shape))
    return NULL;
  WeirTensor *t = weir_tensor_new(c->dtype, rank, shape);
  gsize size = 0;
  const void *data = g_bytes_get_data(c->initial, &size);
  if (size != weir_tensor_nbytes(t)) {
    weir_tensor_free(t);
    return NULL;
  }
  if (size)
    memcpy(t->data, data, size);
  return t;
}

gboolean weir_tier2_constant_is(const WeirContainer *c, double v,
                                gboolean match_sign) {
  if (!weir_tier2_is_constant(c))
    return FALSE;
  g_autoptr(WeirTensor) t = weir_tier2_constant_tensor(c);
  if (!t)
    return FALSE;
  gboolean fl = weir_dtype_is_float(t->dtype);
  for (gint64 i = 0; i < t->count; i++) {
    double x = weir_tensor_get(t, i);
    if (x != v)
      return FALSE;
    if (fl && match_sign && !signbit(x) != !signbit(v))
      return FALSE;
  }
  return TRUE;
}

/* An identifier made of text: other characters become '_'. */
static char *identifier(const char *text) {
  GString *s = g_string_new(NULL);
  if (!text || !*text || g_ascii_isdigit(text[0]))
    g_string_append_c(s, '_');
  for (const char *p = text ? text : ""; *p; p++)
    g_string_append_c(s, g_ascii_isalnum(*p) || *p == '_' ? *p : '_');
  return g_string_free(s, FALSE);
}

WeirContainer *weir_tier2_add_constant(WeirGraph *g, const char *base,
                                       const WeirTensor *t) {
  g_autofree char *ident = identifier(base);
  g_autofree char *name = weir_graph_fresh_name(g, ident);
  g_autoptr(GPtrArray) shape =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_expr_unref);
  for (guint d = 0; d < t->rank; d++)
    g_ptr_array_add(shape, weir_expr_const(t->shape[d]));
  WeirContainer *c = weir_graph_add_container(
      g, name, t->dtype, t->rank, (WeirExpr *const *)shape->pdata, TRUE, NULL);
  g_assert(c != NULL);
  g_autoptr(GBytes) bytes = g_bytes_new(t->data, weir_tensor_nbytes(t));
  weir_container_set_initial(c, bytes);
  return c;
}

/* ----------------------------------------------------------- attributes */

static gboolean double_same(double a, double b) {
  return memcmp(&a, &b, sizeof a) == 0;
}

static gboolean attr_equal(const WeirAttr *a, const WeirAttr *b) {
  if (strcmp(a->name, b->name) != 0 || a->type != b->type)
    return FALSE;
  switch (a->type) {
  case WEIR_ATTR_INT:
    return a->i == b->i;
  case WEIR_ATTR_FLOAT:
    return double_same(a->f, b->f);
  case WEIR_ATTR_STRING:
    return g_strcmp0(a->s, b->s) == 0;
  case WEIR_ATTR_INTS:
    if (a->ints->len != b->ints->len)
      return FALSE;
    for (guint i = 0; i < a->ints->len; i++)
      if (g_array_index(a->ints, gint64, i) !=
          g_array_index(b->ints, gint64, i))
        return FALSE;
    return TRUE;
  case WEIR_ATTR_FLOATS:
    if (a->floats->len != b->floats->len)
      return FALSE;
    for (guint i = 0; i < a->floats->len; i++)
      if (!double_same(g_array_index(a->floats, double, i),
                       g_array_index(b->floats, double, i)))
        return FALSE;
    return TRUE;
  case WEIR_ATTR_STRINGS:
    if (a->strings->len != b->strings->len)
      return FALSE;
    for (guint i = 0; i < a->strings->len; i++)
      if (g_strcmp0(g_ptr_array_index(a->strings, i),
                    g_ptr_array_index(b->strings, i)))
        return FALSE;
    return TRUE;
  case WEIR_ATTR_TYPE_COUNT:
    break;
  }
  return FALSE;
}

gboolean weir_tier2_attrs_equal(const WeirNode *a, const WeirNode *b) {
  guint na = a->attrs ? a->attrs->len : 0, nb = b->attrs ? b->attrs->len : 0;
  if (na != nb)
    return FALSE;
  for (guint i = 0; i < na; i++)
    if (!attr_equal(g_ptr_array_index(a->attrs, i),
                    g_ptr_array_index(b->attrs, i)))
      return FALSE;
  return TRUE;
}

static const char *const random_ops[] = {
    "Bernoulli",        "Multinomial",   "RandomNormal",
    "RandomNormalLike", "RandomUniform", "RandomUniformLike",
};

gboolean weir_tier2_is_deterministic(const WeirNode *n) {
  for (guint i = 0; i < G_N_ELEMENTS(random_ops); i++)
    if (g_strcmp0(n->op, random_ops[i]) == 0)
      return FALSE;
  if (g_strcmp0(n->op, "Dropout") == 0) {
    const WeirAttr *a = weir_node_attr(n, "training_mode");
    return !(a && a->type == WEIR_ATTR_INT && a->i != 0);
  }
  return TRUE;
}

gboolean weir_tier2_transpose_perm(const WeirNode *n, guint rank,
                                   gint64 *perm) {
  const WeirAttr *a = weir_node_attr(n, "perm");
  if (!a) {
    for (guint d = 0; d < rank; d++)
      perm[d] = rank - 1 - d;
    return TRUE;
  }
  if (a->type != WEIR_ATTR_INTS || a->ints->len != rank)
    return FALSE;
  g_autofree gboolean *seen = g_new0(gboolean, rank + 1);
  for (guint d = 0; d < rank; d++) {
    gint64 p = g_array_index(a->ints, gint64, d);
    if (p < 0 || p >= (gint64)rank || seen[p])
      return FALSE;
    seen[p] = TRUE;
    perm[d] = p;
  }
  return TRUE;
}

/* ------------------------------------------------------------ rewiring */

gboolean weir_tier2_can_redirect_reads(const WeirGraph *g, const WeirState *s,
                                       const char *from, char **reason) {
  (void)g;
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (!is_access_of(s, m->src, from))
      continue;
    WeirNode *d = weir_state_node(s, m->dst);
    if (!d)
      continue;
    switch (d->kind) {
    case WEIR_NODE_LIBRARY:
    case WEIR_NODE_TASKLET:
    case WEIR_NODE_NESTED:
      break;
    case WEIR_NODE_ACCESS:
      if (g_strcmp0(d->data, from) == 0)
        return weir_tier2_reject(reason, "'%s' is copied onto itself", from);
      break;
    default:
      return weir_tier2_reject(
          reason,
          "'%s' is read by %s '%s' (node %u), whose scope names its memlets "
          "after the container",
          from, weir_node_kind_name(d->kind), d->label, d->id);
    }
  }
  return TRUE;
}

static void remove_isolated_access(WeirState *s, const char *name) {
  for (guint i = s->nodes->len; i-- > 0;) {
    WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (n->kind != WEIR_NODE_ACCESS || g_strcmp0(n->data, name))
      continue;
    gboolean used = FALSE;
    for (guint e = 0; e < s->edges->len && !used; e++) {
      WeirMemlet *m = g_ptr_array_index(s->edges, e);
      used = m->src == n->id || m->dst == n->id;
    }
    if (!used)
      weir_state_remove_node(s, n->id);
  }
}

gboolean weir_tier2_redirect_reads(WeirGraph *g, WeirState *s, const char *from,
                                   WeirNode *to, GError **error) {
  g_autofree char *from_name = g_strdup(from);
  g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (is_access_of(s, m->src, from_name))
      g_array_append_val(ids, m->id);
  }
  for (guint i = 0; i < ids->len; i++) {
    WeirMemlet *m = weir_state_memlet(s, g_array_index(ids, guint, i));
    gboolean names_from = g_strcmp0(m->data, from_name) == 0;
    g_autofree char *subset = weir_subset_to_string(m->subset);
    g_autofree char *other = m->other ? weir_subset_to_string(m->other) : NULL;
    WeirMemlet *nm =
        weir_state_add_memlet(g, s, to->id, NULL, m->dst, m->dst_conn,
                              names_from ? to->data : m->data, subset, error);
    if (!nm)
      return FALSE;
    /* add_memlet may have moved the array: look m up again */
    m = weir_state_memlet(s, g_array_index(ids, guint, i));
    weir_memlet_set_volume(nm, m->volume);
    nm->dynamic = m->dynamic;
    nm->wcr = m->wcr;
    if (other && !weir_memlet_set_other(nm, other, error))
      return FALSE;
    weir_state_remove_memlet(s, m->id);
  }
  remove_isolated_access(s, from_name);
  return TRUE;
}

void weir_tier2_drop_if_unused(WeirGraph *g, const char *name) {
  g_autofree char *n = g_strdup(name);
  WeirContainer *c = weir_graph_container(g, n);
  if (!c || !c->transient)
    return;
  gboolean used = FALSE;
  for (guint si = 0; si < g->states->len; si++) {
    WeirState *s = g_ptr_array_index(g->states, si);
    remove_isolated_access(s, n);
    used = used || state_mentions(s, n);
  }
  if (!used)
    weir_graph_remove_container(g, n);
}

/* --------------------------------------------------------------- bypass */

gboolean weir_tier2_can_bypass(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n, const WeirTier2Port *x,
                               const WeirTier2Port *y, char **reason) {
  (void)n;
  const WeirContainer *xc = x->container, *yc = y->container;
  if (xc == yc)
    return weir_tier2_reject(reason, "it reads and writes '%s'", xc->name);
  if (!weir_tier2_same_layout(xc, yc))
    return weir_tier2_reject(reason,
                             "input '%s' and output '%s' differ in dtype or "
                             "shape",
                             xc->name, yc->name);
  if (y->memlet->wcr != WEIR_WCR_NONE)
    return weir_tier2_reject(reason, "output '%s' is written with %s", yc->name,
                             weir_wcr_name(y->memlet->wcr));
  WeirTier2Use use;
  weir_tier2_use(g, yc->name, &use);
  if (use.writes != 1)
    return weir_tier2_reject(reason, "output '%s' is written %u times",
                             yc->name, use.writes);
  if (!weir_tier2_local(g, s, yc->name))
    return weir_tier2_reject(reason, "output '%s' is used in another state",
                             yc->name);
  if (yc->transient && !weir_tier2_can_redirect_reads(g, s, yc->name, reason))
    return FALSE;
  g_autofree char *why = NULL;
  if (!weir_tier2_single_value(g, s, xc, &why))
    return weir_tier2_reject(reason, "input %s", why);
  return TRUE;
}

/* Names of the containers read by node n (transfer full). */
static GPtrArray *input_names(const WeirState *s, const WeirNode *n) {
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < s->edges->len; i++) {
    WeirMemlet *m = g_ptr_array_index(s->edges, i);
    if (m->dst == n->id && m->data)
      g_ptr_array_add(names, g_strdup(m->data));
  }
  return names;
}

gboolean weir_tier2_bypass(WeirGraph *g, WeirState *s, WeirNode *n,
                           const WeirTier2Port *x, const WeirTier2Port *y,
                           GError **error) {
  g_autoptr(GPtrArray) inputs = input_names(s, n);
  g_autofree char *xname = g_strdup(x->container->name);
  g_autofree char *yname = g_strdup(y->container->name);
  gboolean y_transient = y->container->transient;
  WeirNode *xa = x->access, *ya = y->access;
  guint xa_id = xa->id, ya_id = ya->id;
  weir_state_remove_node(s, n->id);
  xa = weir_state_node(s, xa_id);
  if (y_transient) {
    if (!weir_tier2_redirect_reads(g, s, yname, xa, error))
      return FALSE;
    weir_tier2_drop_if_unused(g, yname);
  } else {
    WeirContainer *xc = weir_graph_container(g, xname);
    g_autoptr(WeirSubset) full = weir_container_full_subset(xc);
    g_autofree char *text = weir_subset_to_string(full);
    if (!weir_state_add_memlet(g, s, xa_id, NULL, ya_id, NULL, xname, text,
                               error))
      return FALSE;
  }
  for (guint i = 0; i < inputs->len; i++)
    weir_tier2_drop_if_unused(g, g_ptr_array_index(inputs, i));
  return TRUE;
}

/* ---------------------------------------------------------------- chains */

gboolean weir_tier2_chain(const WeirGraph *g, const WeirState *s,
                          const WeirNode *a, const WeirNode *b,
                          WeirTier2Chain *c, char **reason) {
  WeirTier2Port by;
  memset(c, 0, sizeof *c);
  if (!weir_tier2_wired(g, s, a) || !weir_tier2_wired(g, s, b) ||
      !weir_tier2_port(g, s, a, TRUE, 0, &c->x) ||
      !weir_tier2_port(g, s, a, FALSE, 0, &c->y) ||
      !weir_tier2_port(g, s, b, TRUE, 0, &by) ||
      !weir_tier2_port(g, s, b, FALSE, 0, &c->z))
    return weir_tier2_reject(reason, "the nodes do not follow the library-node "
                                     "conventions");
  if (by.container != c->y.container)
    return weir_tier2_reject(reason,
                             "'%s' (%s) does not read the output of '%s' "
                             "(%s)",
                             b->label, b->op, a->label, a->op);
  return TRUE;
}

gboolean weir_tier2_chain_can_collapse(const WeirGraph *g, const WeirState *s,
                                       const WeirNode *b,
                                       const WeirTier2Chain *c,
                                       gboolean identity, char **reason) {
  const WeirContainer *y = c->y.container;
  WeirTier2Use use;
  weir_tier2_use(g, y->name, &use);
  if (!y->transient)
    return weir_tier2_reject(
        reason, "the intermediate '%s' is a program argument", y->name);
  if (use.reads != 1 || use.writes != 1 || !weir_tier2_local(g, s, y->name))
    return weir_tier2_reject(
        reason, "the intermediate '%s' is used by other nodes", y->name);
  if (identity)
    return weir_tier2_can_bypass(g, s, b, &c->x, &c->z, reason);
  weir_tier2_use(g, c->z.container->name, &use);
  if (use.writes != 1 || c->z.memlet->wcr != WEIR_WCR_NONE)
    return weir_tier2_reject(reason, "output '%s' is also written elsewhere",
                             c->z.container->name);
  g_autofree char *why = NULL;
  if (!weir_tier2_single_value(g, s, c->x.container, &why))
    return weir_tier2_reject(reason, "input %s", why);
  return TRUE;
}

gboolean weir_tier2_chain_remove(WeirGraph *g, WeirState *s, WeirNode *a,
                                 WeirNode *b, const WeirTier2Chain *c,
                                 GError **error) {
  WeirTier2Port x = c->x, z = c->z;
  x.memlet = NULL; /* removed with a */
  weir_state_remove_node(s, a->id);
  return weir_tier2_bypass(g, s, b, &x, &z, error);
}

WeirNode *weir_tier2_chain_replace(WeirGraph *g, WeirState *s, WeirNode *a,
                                   WeirNode *b, const WeirTier2Chain *c,
                                   const char *op, GError **error) {
  const char *ins[] = {"in0", NULL}, *outs[] = {"out0", NULL};
  g_autofree char *label = g_strdup(b->label);
  g_autofree char *xname = g_strdup(c->x.container->name);
  g_autofree char *yname = g_strdup(c->y.container->name);
  g_autofree char *zname = g_strdup(c->z.container->name);
  g_autoptr(WeirSubset) xs = weir_container_full_subset(c->x.container);
  g_autoptr(WeirSubset) zs = weir_container_full_subset(c->z.container);
  g_autofree char *xtext = weir_subset_to_string(xs);
  g_autofree char *ztext = weir_subset_to_string(zs);
  guint xa = c->x.access->id, za = c->z.access->id;
  weir_state_remove_node(s, a->id);
  weir_state_remove_node(s, b->id);
  WeirNode *n = weir_state_add_library(g, s, label, op, ins, outs);
  if (!weir_state_add_memlet(g, s, xa, NULL, n->id, "in0", xname, xtext,
                             error) ||
      !weir_state_add_memlet(g, s, n->id, "out0", za, NULL, zname, ztext,
                             error))
    return NULL;
  weir_tier2_drop_if_unused(g, yname);
  return n;
}

gboolean weir_tier2_compose_transposes(const WeirNode *a, const WeirNode *b,
                                       guint rank, gint64 *perm) {
  g_autofree gint64 *p1 = g_new0(gint64, rank + 1);
  g_autofree gint64 *p2 = g_new0(gint64, rank + 1);
  if (!weir_tier2_transpose_perm(a, rank, p1) ||
      !weir_tier2_transpose_perm(b, rank, p2))
    return FALSE;
  for (guint k = 0; k < rank; k++)
    perm[k] = p1[p2[k]];
  return TRUE;
}

gboolean weir_tier2_perm_is_identity(const gint64 *perm, guint rank) {
  for (guint d = 0; d < rank; d++)
    if (perm[d] != (gint64)d)
      return FALSE;
  return TRUE;
}

/* -------------------------------------------------------------- tasklets */
