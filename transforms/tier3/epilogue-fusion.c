/* epilogue-fusion.c — fold an element-wise map into the Gemm, MatMul or
 * Conv library node that produces its input.
 *
 * Library node L writes the transient T; map B reads T element by element
 * (same iteration space as T, one tasklet), perhaps with other inputs read
 * the same way or broadcast (a bias, a residual), and writes O with T's
 * shape and dtype.  B's tasklet becomes L's epilogue (attributes in
 * ir/lower/weir-expand.h): L writes O directly, each element passing through
 * the tasklet right after L's computation, and T disappears with its
 * write and read.  Site: [L, T's access node, B's map entry].
 *
 * Every implementation of L honours the epilogue: the pure expansion and
 * the code generator turn it back into an in-place map over O right after
 * L (ir/lower/epilogue.c), which for a native node is a loop
 * following the BLAS call while its output is hot in cache.  The
 * data-movement analysis counts a library node's operands once, so O
 * counts once, as written by L; the extra inputs count once each.
 */
#include <string.h>

#include "tier3-util.h"
#include "weir-expand.h"

gboolean weir_tier3_register_epilogue_fusion(GError **error);

typedef struct {
  WeirState *s;
  WeirNode *lib, *tn, *eb, *xb, *tasklet, *on;
  WeirMemlet *lib_out, *acc, *res;
  WeirContainer *t, *o;
  GPtrArray *also_t;     /* WeirMemlet*: further reads of T[p], borrowed */
  GHashTable *points;    /* parameter -> WeirExpr*: one-point ranges */
  GPtrArray *extras;     /* WeirMemlet* entry -> tasklet, borrowed */
  GPtrArray *extra_srcs; /* WeirNode* access node outside B, borrowed */
  GPtrArray *ordering;   /* WeirMemlet* empty memlets into B's entry */
} Plan;

static void plan_clear(Plan *p) {
  g_clear_pointer(&p->also_t, g_ptr_array_unref);
  g_clear_pointer(&p->points, g_hash_table_unref);
  g_clear_pointer(&p->extras, g_ptr_array_unref);
  g_clear_pointer(&p->extra_srcs, g_ptr_array_unref);
  g_clear_pointer(&p->ordering, g_ptr_array_unref);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(Plan, plan_clear)

static gboolean fusable_op(const char *op) {
  return g_strcmp0(op, "Gemm") == 0 || g_strcmp0(op, "MatMul") == 0 ||
         g_strcmp0(op, "Conv") == 0;
}

/* Number of access nodes of data in g (nested programs have their own
 * names). */
static guint access_count(const WeirGraph *g, const char *data) {
  guint c = 0;
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_ACCESS && g_strcmp0(n->data, data) == 0)
        c++;
    }
  }
  return c;
}

/* Whether sub is the subset text, once the parameters whose range holds
 * one point (points: name -> WeirExpr*, may be NULL) are replaced by that
 * point in both: a map over a batch of 1 reads T[0, c, h, w] where the
 * index text says "i0, i1, i2, i3". */
static gboolean subset_is(const WeirSubset *sub, const char *text,
                          GHashTable *points) {
  g_autoptr(WeirSubset) want = weir_subset_parse(text, NULL);
  if (!want)
    return FALSE;
  if (!points || !g_hash_table_size(points))
    return weir_subset_equal(sub, want);
  g_autoptr(WeirSubset) a = weir_subset_substitute(sub, points);
  g_autoptr(WeirSubset) b = weir_subset_substitute(want, points);
  return weir_subset_equal(a, b);
}

static gboolean shapes_equal(const WeirContainer *a, const WeirContainer *b) {
  if (a->shape->len != b->shape->len)
    return FALSE;
  for (guint d = 0; d < a->shape->len; d++)
    if (!weir_expr_equal(g_ptr_array_index(a->shape, d),
                         g_ptr_array_index(b->shape, d)))
      return FALSE;
  return TRUE;
}

/* The subset reading x broadcast to the map's parameters (numpy rules), or
 * NULL when x does not broadcast to shape of t. */
static char *broadcast_text(const WeirContainer *x, const WeirContainer *t,
                            const WeirMap *map) {
  guint rx = x->shape->len, rt = t->shape->len;
  if (rx > rt)
    return NULL;
  GString *s = g_string_new(NULL);
  for (guint d = 0; d < rx; d++) {
    WeirExpr *xd = g_ptr_array_index(x->shape, d);
    WeirExpr *td = g_ptr_array_index(t->shape, rt - rx + d);
    gint64 v;
    const char *text;
    if (weir_expr_is_const(xd, &v) && v == 1)
      text = "0";
    else if (weir_expr_equal(xd, td))
      text = g_ptr_array_index(map->params, rt - rx + d);
    else {
      g_string_free(s, TRUE);
      return NULL;
    }
    g_string_append_printf(s, "%s%s", d ? ", " : "", text);
  }
  return g_string_free(s, FALSE);
}

static gboolean plan(const WeirGraph *g, const WeirSite *site, Plan *p,
                     char **reason) {
  WeirState *s = site ? weir_graph_state(g, site->state) : NULL;
  if (!s || site->n_nodes != 3)
    return tier3_reason(reason,
                        "a site is [library node, access node, map entry]");
  p->s = s;
  p->lib = weir_state_node(s, site->nodes[0]);
  p->tn = weir_state_node(s, site->nodes[1]);
  p->eb = weir_state_node(s, site->nodes[2]);
  if (!p->lib || p->lib->kind != WEIR_NODE_LIBRARY || !p->tn ||
      p->tn->kind != WEIR_NODE_ACCESS || !p->eb ||
      p->eb->kind != WEIR_NODE_MAP_ENTRY)
    return tier3_reason(reason,
                        "a site is [library node, access node, map entry]");
  g_autofree char *lw = weir_describe_node(s, p->lib);
  if (!fusable_op(p->lib->op))
    return tier3_reason(reason,
                        "%s: only Gemm, MatMul and Conv take an epilogue", lw);
  if (weir_epilogue_present(p->lib))
    return tier3_reason(reason,
                        "%s already has an epilogue (fuse the element-wise "
                        "maps with map-fusion first)",
                        lw);
  g_autoptr(GPtrArray) lout = tier3_edges_out(s, p->lib->id, NULL);
  for (guint i = 0; i < lout->len; i++) {
    WeirMemlet *m = g_ptr_array_index(lout, i);
    if (!m->data)
      continue;
    if (g_strcmp0(m->src_conn, "out0") != 0 || p->lib_out)
      return tier3_reason(reason, "%s has more than one output", lw);
    p->lib_out = m;
  }
  if (!p->lib_out || p->lib_out->dst != p->tn->id)
    return tier3_reason(reason, "%s does not write access node %u", lw,
                        p->tn->id);
  p->t = weir_graph_container(g, p->tn->data);
  if (!p->t->transient)
    return tier3_reason(reason, "'%s' is an argument of the program",
                        p->t->name);
  g_autoptr(WeirSubset) tfull = weir_container_full_subset(p->t);
  if (!weir_subset_equal(p->lib_out->subset, tfull))
    return tier3_reason(reason, "%s writes part of '%s' only", lw, p->t->name);
  if (access_count(g, p->t->name) != 1)
    return tier3_reason(reason,
                        "'%s' is accessed elsewhere in the program, so it "
                        "cannot disappear",
                        p->t->name);
  g_autoptr(GPtrArray) tin = tier3_edges_in(s, p->tn->id, NULL);
  g_autoptr(GPtrArray) tout = tier3_edges_out(s, p->tn->id, NULL);
  if (tin->len != 1 || tout->len != 1 ||
      ((WeirMemlet *)g_ptr_array_index(tout, 0))->dst != p->eb->id)
    return tier3_reason(reason,
                        "'%s' has other readers or writers than %s and the "
                        "map",
                        p->t->name, lw);

  /* B: one tasklet over T's index space. */
  g_autoptr(WeirScopes) sc = weir_state_scopes(s, NULL);
  if (!sc)
    return tier3_reason(reason, "the state's dataflow graph has a cycle");
  if (weir_scopes_parent(sc, p->lib->id) != 0 ||
      weir_scopes_parent(sc, p->eb->id) != 0)
    return tier3_reason(reason,
                        "the library node and the map must be at the top "
                        "level of the state");
  g_autoptr(GArray) body = tier3_scope_body(s, sc, p->eb->id);
  p->tasklet =
      body->len == 1 ? weir_state_node(s, g_array_index(body, guint, 0)) : NULL;
  if (!p->tasklet || p->tasklet->kind != WEIR_NODE_TASKLET || !p->tasklet->code)
    return tier3_reason(reason,
                        "the map's body is not a single (parsed) tasklet");
  p->xb = weir_state_map_exit(s, p->eb);
  const WeirMap *map = p->eb->map;
  guint rank = p->t->shape->len;
  if (!p->xb || map->params->len != rank)
    return tier3_reason(reason,
                        "the map does not have one parameter per dimension "
                        "of '%s' (%u)",
                        p->t->name, rank);
  g_autoptr(WeirExpr) zero = weir_expr_const(0);
  g_autoptr(WeirExpr) one = weir_expr_const(1);
  p->points = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                    (GDestroyNotify)weir_expr_unref);
  GString *idx = g_string_new(NULL);
  for (guint d = 0; d < rank; d++) {
    const WeirRange *r = &g_array_index(map->ranges, WeirRange, d);
    if (!weir_expr_equal(r->begin, zero) || !weir_expr_equal(r->step, one) ||
        !weir_expr_equal(r->end, g_ptr_array_index(p->t->shape, d))) {
      g_string_free(idx, TRUE);
      return tier3_reason(reason, "the map's range of '%s' is not 0:%s",
                          (char *)g_ptr_array_index(map->params, d),
                          "the size of the same dimension of T");
    }
    g_string_append_printf(idx, "%s%s", d ? ", " : "",
                           (char *)g_ptr_array_index(map->params, d));
    if (weir_expr_equal(r->end, one))
      g_hash_table_insert(p->points, g_ptr_array_index(map->params, d),
                          weir_expr_const(0));
  }
  g_autofree char *idx_text = g_string_free(idx, FALSE);

  /* Its output: O[p] with T's shape and dtype. */
  g_autoptr(GPtrArray) tws = tier3_edges_out(s, p->tasklet->id, NULL);
  g_autoptr(GPtrArray) xo = tier3_edges_out(s, p->xb->id, NULL);
  if (tws->len != 1 || xo->len != 1)
    return tier3_reason(reason, "the map must write exactly one container");
  p->res = g_ptr_array_index(tws, 0);
  WeirMemlet *o_out = g_ptr_array_index(xo, 0);
  p->on = weir_state_node(s, o_out->dst);
  p->o = p->res->data ? weir_graph_container(g, p->res->data) : NULL;
  if (!p->o || p->res->wcr != WEIR_WCR_NONE || o_out->wcr != WEIR_WCR_NONE ||
      !p->on || p->on->kind != WEIR_NODE_ACCESS ||
      !subset_is(p->res->subset, idx_text, p->points))
    return tier3_reason(reason,
                        "the map does not write one element per point "
                        "(%s) without write-conflict resolution",
                        idx_text);
  if (!shapes_equal(p->o, p->t) || p->o->dtype != p->t->dtype)
    return tier3_reason(reason, "'%s' and '%s' differ in shape or dtype",
                        p->o->name, p->t->name);
  g_autoptr(GPtrArray) lin = tier3_edges_in(s, p->lib->id, NULL);
  for (guint i = 0; i < lin->len; i++) {
    const WeirMemlet *m = g_ptr_array_index(lin, i);
    if (g_strcmp0(m->data, p->o->name) == 0)
      return tier3_reason(reason, "%s reads '%s', which it would then write",
                          lw, p->o->name);
  }
  g_autoptr(GPtrArray) onin = tier3_edges_in(s, p->on->id, NULL);
  if (onin->len != 1)
    return tier3_reason(reason, "access node %u of '%s' has other writers",
                        p->on->id, p->o->name);

  /* Its inputs: T[p] once, the rest element-wise or broadcast. */
  p->extras = g_ptr_array_new();
  p->also_t = g_ptr_array_new();
  p->extra_srcs = g_ptr_array_new();
  p->ordering = g_ptr_array_new();
  g_autoptr(GPtrArray) ein = tier3_edges_in(s, p->eb->id, NULL);
  for (guint i = 0; i < ein->len; i++) {
    WeirMemlet *m = g_ptr_array_index(ein, i);
    if (!m->data)
      g_ptr_array_add(p->ordering, m);
  }
  g_autoptr(GPtrArray) tr = tier3_edges_in(s, p->tasklet->id, NULL);
  g_autoptr(GHashTable) reach = tier3_reachable(s, p->lib->id, NULL);
  for (guint i = 0; i < tr->len; i++) {
    WeirMemlet *m = g_ptr_array_index(tr, i);
    if (!m->data)
      continue;
    if (m->src != p->eb->id)
      return tier3_reason(reason,
                          "tasklet input '%s' does not come through the map "
                          "entry",
                          m->dst_conn);
    if (strcmp(m->data, p->t->name) == 0) {
      /* T read at [p] on several connectors (x * sigmoid(x) after
       * tasklet-fusion): the first receives L's result, the others become
       * locals assigned from it. */
      if (!subset_is(m->subset, idx_text, p->points))
        return tier3_reason(reason, "the tasklet reads '%s' other than at [%s]",
                            p->t->name, idx_text);
      if (p->acc)
        g_ptr_array_add(p->also_t, m);
      else
        p->acc = m;
      continue;
    }
    if (strcmp(m->data, p->o->name) == 0)
      return tier3_reason(reason, "the map reads its output '%s'", p->o->name);
    const WeirContainer *x = weir_graph_container(g, m->data);
    g_autofree char *bt = broadcast_text(x, p->t, map);
    if (!bt || !subset_is(m->subset, bt, p->points))
      return tier3_reason(reason,
                          "tasklet input '%s' reads '%s' neither element-wise "
                          "nor broadcast",
                          m->dst_conn, m->data);
    g_autofree char *outer = tier3_pair_conn(m->src_conn);
    g_autoptr(GPtrArray) om = tier3_edges_in(s, p->eb->id, outer);
    WeirNode *src =
        om->len == 1
            ? weir_state_node(s, ((WeirMemlet *)g_ptr_array_index(om, 0))->src)
            : NULL;
    if (!src || src->kind != WEIR_NODE_ACCESS)
      return tier3_reason(
          reason, "'%s' does not enter the map from an access node", m->data);
    if (g_hash_table_contains(reach, GUINT_TO_POINTER(src->id)))
      return tier3_reason(reason,
                          "'%s' is produced after %s: reading it there "
                          "would create a cycle",
                          m->data, lw);
    g_ptr_array_add(p->extras, m);
    g_ptr_array_add(p->extra_srcs, src);
  }
  if (!p->acc)
    return tier3_reason(reason, "the tasklet does not read '%s'", p->t->name);
  for (guint i = 0; i < p->ordering->len; i++) {
    WeirMemlet *m = g_ptr_array_index(p->ordering, i);
    if (g_hash_table_contains(reach, GUINT_TO_POINTER(m->src)))
      return tier3_reason(
          reason, "an ordering edge into the map comes from after %s", lw);
  }
  return TRUE;
}

static void match(const WeirGraph *g, GArray *sites) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *l = g_ptr_array_index(s->nodes, k);
      if (l->kind != WEIR_NODE_LIBRARY || !fusable_op(l->op))
        continue;
      g_autoptr(GPtrArray) out = tier3_edges_out(s, l->id, "out0");
      if (out->len != 1)
        continue;
      const WeirNode *tn =
          weir_state_node(s, ((WeirMemlet *)g_ptr_array_index(out, 0))->dst);
      if (!tn || tn->kind != WEIR_NODE_ACCESS)
        continue;
      g_autoptr(GPtrArray) r = tier3_edges_out(s, tn->id, NULL);
      for (guint j = 0; j < r->len; j++) {
        const WeirMemlet *m = g_ptr_array_index(r, j);
        const WeirNode *e = weir_state_node(s, m->dst);
        if (m->data && e && e->kind == WEIR_NODE_MAP_ENTRY) {
          guint nodes[3] = {l->id, tn->id, e->id};
          tier3_site_add(sites, s->id, 3, nodes);
        }
      }
    }
  }
}

static gboolean can_apply(const WeirGraph *g, const WeirSite *site,
                          const WeirParams *params, char **reason) {
  (void)params;
  g_auto(Plan) p = {0};
  return plan(g, site, &p, reason);
}

static gboolean apply(WeirGraph *g, const WeirSite *site,
                      const WeirParams *params, GError **error) {
  (void)params;
  g_auto(Plan) p = {0};
  g_autofree char *reason = NULL;
  if (!plan(g, site, &p, &reason)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s", reason);
    return FALSE;
  }
  WeirState *s = p.s;
  g_autoptr(GPtrArray) conns = g_ptr_array_new();
  g_ptr_array_add(conns, p.res->src_conn);
  g_ptr_array_add(conns, p.acc->dst_conn);
  for (guint k = 0; k < p.extras->len; k++) {
    WeirMemlet *m = g_ptr_array_index(p.extras, k);
    const WeirNode *src = g_ptr_array_index(p.extra_srcs, k);
    g_ptr_array_add(conns, m->dst_conn);
    g_autofree char *conn = g_strdup_printf("epi%u", k);
    WeirContainer *x = weir_graph_container(g, m->data);
    g_autoptr(WeirSubset) full = weir_container_full_subset(x);
    g_autofree char *ft = weir_subset_to_string(full);
    weir_node_add_in_conn(p.lib, conn);
    if (!weir_state_add_memlet(g, s, src->id, NULL, p.lib->id, conn, x->name,
                               ft, error))
      return FALSE;
  }
  weir_node_set_attr_strings(p.lib, WEIR_EPILOGUE_CONNS,
                             (const char *const *)conns->pdata, conns->len);
  GString *code = g_string_new(NULL);
  for (guint k = 0; k < p.also_t->len; k++) {
    WeirMemlet *m = g_ptr_array_index(p.also_t, k);
    g_string_append_printf(code, "%s = %s\n", m->dst_conn, p.acc->dst_conn);
  }
  g_string_append(code, p.tasklet->code_text);
  weir_node_set_attr_string(p.lib, WEIR_EPILOGUE_CODE, code->str);
  g_string_free(code, TRUE);
  for (guint i = 0; i < p.ordering->len; i++)
    weir_memlet_set_dst(s, g_ptr_array_index(p.ordering, i), p.lib->id, NULL);
  g_autoptr(WeirSubset) ofull = weir_container_full_subset(p.o);
  weir_memlet_set_dst(s, p.lib_out, p.on->id, NULL);
  weir_memlet_set_data(p.lib_out, p.o->name);
  weir_memlet_set_subset(p.lib_out, ofull);
  g_autofree char *t = g_strdup(p.t->name);
  guint drop[4] = {p.tasklet->id, p.eb->id, p.xb->id, p.tn->id};
  for (guint i = 0; i < G_N_ELEMENTS(drop); i++)
    weir_state_remove_node(s, drop[i]);
  if (!tier3_container_used(g, t))
    weir_graph_remove_container(g, t);
  return TRUE;
}

static const WeirTransformInfo info = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "epilogue-fusion",
    .tier = 3,
    .description = "fold an element-wise map (ReLU, bias or residual "
                   "addition, ...) into the Gemm, MatMul or Conv node that "
                   "produces its input, as an epilogue applied to each "
                   "output element; the intermediate transient disappears",
    .match = match,
    .can_apply = can_apply,
    .apply = apply,
};

gboolean weir_tier3_register_epilogue_fusion(GError **error) {
  return weir_transform_register(&info, error);
}
