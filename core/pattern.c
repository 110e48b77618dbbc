/* pattern.c — the generic subgraph matcher.
 *
 * weir_pattern_match() maps pattern nodes, in pattern order, to distinct
 * nodes of one state by backtracking.  Candidates for a pattern node are
 * the state's nodes of its kind (op, transient), or — when the node is
 * joined by a pattern edge to a node already mapped — the successors or
 * predecessors of that node, whichever list is shorter.  Every list is in
 * ascending id order, so matches come out in lexicographic order of their
 * node ids (states by id), independent of hash tables and pointers.
 *
 * Adjacency (sorted, duplicate-free successor and predecessor lists of
 * node indices) is built once per state per call.
 */
#include <string.h>

#include "weir-transform-private.h"

typedef struct {
  const WeirGraph *g;
  const WeirState *s;
  const WeirPattern *p;
  GArray **succ, **pred; /* per node index: guint indices, ascending */
  GArray *cands[WEIR_SITE_MAX_NODES]; /* per pattern node: guint indices */
  guint assigned[WEIR_SITE_MAX_NODES];
  GArray *out; /* WeirSite */
} Matcher;

static gboolean node_fits(const WeirGraph *g, const WeirPatternNode *pn,
                          const WeirNode *n) {
  if (n->kind != pn->kind)
    return FALSE;
  if (pn->kind == WEIR_NODE_LIBRARY && pn->op && g_strcmp0(n->op, pn->op) != 0)
    return FALSE;
  if (pn->kind == WEIR_NODE_ACCESS && pn->transient) {
    const WeirContainer *c = n->data ? weir_graph_container(g, n->data) : NULL;
    if (!c || !c->transient)
      return FALSE;
  }
  return TRUE;
}

static int compare_guint(gconstpointer a, gconstpointer b) {
  guint x = *(const guint *)a, y = *(const guint *)b;
  return x < y ? -1 : x > y;
}

static void sort_unique(GArray *a) {
  g_array_sort(a, compare_guint);
  guint w = 0;
  for (guint r = 0; r < a->len; r++)
    if (w == 0 || g_array_index(a, guint, r) != g_array_index(a, guint, w - 1))
      g_array_index(a, guint, w++) = g_array_index(a, guint, r);
  g_array_set_size(a, w);
}

static void build_adjacency(Matcher *m) {
  const WeirState *s = m->s;
  guint n = s->nodes->len;
  g_autoptr(GHashTable) index = g_hash_table_new(g_direct_hash, g_direct_equal);
  m->succ = g_new0(GArray *, n + 1);
  m->pred = g_new0(GArray *, n + 1);
  for (guint i = 0; i < n; i++) {
    const WeirNode *node = g_ptr_array_index(s->nodes, i);
    g_hash_table_insert(index, GUINT_TO_POINTER(node->id),
                        GUINT_TO_POINTER(i + 1));
    m->succ[i] = g_array_new(FALSE, FALSE, sizeof(guint));
    m->pred[i] = g_array_new(FALSE, FALSE, sizeof(guint));
  }
  for (guint e = 0; e < s->edges->len; e++) {
    const WeirMemlet *mem = g_ptr_array_index(s->edges, e);
    guint a = GPOINTER_TO_UINT(
        g_hash_table_lookup(index, GUINT_TO_POINTER(mem->src)));
    guint b = GPOINTER_TO_UINT(
        g_hash_table_lookup(index, GUINT_TO_POINTER(mem->dst)));
    if (!a || !b)
      continue; /* a dangling memlet: the validator reports it */
    a--, b--;
    g_array_append_val(m->succ[a], b);
    g_array_append_val(m->pred[b], a);
  }
  for (guint i = 0; i < n; i++) {
    sort_unique(m->succ[i]);
    sort_unique(m->pred[i]);
  }
}

static void free_adjacency(Matcher *m) {
  guint n = m->s->nodes->len;
  for (guint i = 0; i < n; i++) {
    g_array_unref(m->succ[i]);
    g_array_unref(m->pred[i]);
  }
  g_clear_pointer(&m->succ, g_free);
  g_clear_pointer(&m->pred, g_free);
}

static gboolean has_edge(const Matcher *m, guint a, guint b) {
  const GArray *l = m->succ[a];
  guint lo = 0, hi = l->len;
  while (lo < hi) {
    guint mid = (lo + hi) / 2;
    guint v = g_array_index(l, guint, mid);
    if (v == b)
      return TRUE;
    if (v < b)
      lo = mid + 1;
    else
      hi = mid;
  }
  return FALSE;
}

/* Whether node index c can stand for pattern node k, given nodes 0..k-1. */
static gboolean consistent(const Matcher *m, guint k, guint c) {
  for (guint j = 0; j < k; j++)
    if (m->assigned[j] == c)
      return FALSE;
  const WeirPattern *p = m->p;
  for (guint e = 0; e < p->n_edges; e++) {
    guint a = p->edges[e].src, b = p->edges[e].dst;
    if (a == k && b < k && !has_edge(m, c, m->assigned[b]))
      return FALSE;
    if (b == k && a < k && !has_edge(m, m->assigned[a], c))
      return FALSE;
  }
  return TRUE;
}

static void search(Matcher *m, guint k) {
  const WeirPattern *p = m->p;
  if (k == p->n_nodes) {
    WeirSite site = {.state = m->s->id, .n_nodes = p->n_nodes};
    for (guint j = 0; j < k; j++) {
      const WeirNode *n = g_ptr_array_index(m->s->nodes, m->assigned[j]);
      site.nodes[j] = n->id;
    }
    g_array_append_val(m->out, site);
    return;
  }
  /* The shortest list of candidates: an adjacency list of a mapped
   * neighbour, or every node of the right kind. */
  const GArray *from = m->cands[k];
  gboolean filtered = TRUE; /* from holds only nodes that fit */
  for (guint e = 0; e < p->n_edges; e++) {
    guint a = p->edges[e].src, b = p->edges[e].dst;
    const GArray *l = NULL;
    if (a == k && b < k)
      l = m->pred[m->assigned[b]];
    else if (b == k && a < k)
      l = m->succ[m->assigned[a]];
    if (l && l->len < from->len) {
      from = l;
      filtered = FALSE;
    }
  }
  for (guint i = 0; i < from->len; i++) {
    guint c = g_array_index(from, guint, i);
    if (!filtered &&
        !node_fits(m->g, &p->nodes[k], g_ptr_array_index(m->s->nodes, c)))
      continue;
    if (!consistent(m, k, c))
      continue;
    m->assigned[k] = c;
    search(m, k + 1);
  }
}

GArray *weir_pattern_match(const WeirGraph *g, const WeirPattern *pattern) {
  g_return_val_if_fail(g != NULL && pattern != NULL, NULL);
  g_return_val_if_fail(pattern->n_nodes <= WEIR_SITE_MAX_NODES, NULL);
  GArray *out = g_array_new(FALSE, TRUE, sizeof(WeirSite));
  if (pattern->n_nodes == 0)
    return out;
  for (guint si = 0; si < g->states->len; si++) {
    Matcher m = {.g = g,
                 .s = g_ptr_array_index(g->states, si),
                 .p = pattern,
                 .out = out};
    gboolean empty = FALSE;
    for (guint k = 0; k < pattern->n_nodes; k++) {
      m.cands[k] = g_array_new(FALSE, FALSE, sizeof(guint));
      for (guint i = 0; i < m.s->nodes->len; i++)
        if (node_fits(g, &pattern->nodes[k], g_ptr_array_index(m.s->nodes, i)))
          g_array_append_val(m.cands[k], i);
      empty = empty || m.cands[k]->len == 0;
    }
    if (!empty) {
      build_adjacency(&m);
      search(&m, 0);
      free_adjacency(&m);
    }
    for (guint k = 0; k < pattern->n_nodes; k++)
      g_array_unref(m.cands[k]);
  }
  return out;
}

/* Whether a memlet src -> dst exists in s. */
static gboolean state_has_edge(const WeirState *s, guint src, guint dst) {
  for (guint e = 0; e < s->edges->len; e++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, e);
    if (m->src == src && m->dst == dst)
      return TRUE;
  }
  return FALSE;
}

static char *pattern_node_text(const WeirPatternNode *pn) {
  if (pn->kind == WEIR_NODE_LIBRARY && pn->op)
    return g_strdup_printf("a library node '%s'", pn->op);
  if (pn->kind == WEIR_NODE_ACCESS && pn->transient)
    return g_strdup("an access node of a transient");
  return g_strdup_printf("a%s %s node", pn->kind == WEIR_NODE_ACCESS ? "n" : "",
                         weir_node_kind_name(pn->kind));
}

gboolean weir_pattern_check_site(const WeirGraph *g, const WeirPattern *pattern,
                                 const WeirSite *site, char **reason) {
  if (site->n_nodes != pattern->n_nodes) {
    *reason =
        g_strdup_printf("the site has %u node%s, the pattern %u", site->n_nodes,
                        site->n_nodes == 1 ? "" : "s", pattern->n_nodes);
    return FALSE;
  }
  const WeirState *s = weir_graph_state(g, site->state);
  if (!s) {
    *reason = g_strdup_printf("state %u does not exist", site->state);
    return FALSE;
  }
  for (guint k = 0; k < site->n_nodes; k++) {
    const WeirNode *n = weir_state_node(s, site->nodes[k]);
    if (!n) {
      *reason = g_strdup_printf("node %u is not in state %u '%s'",
                                site->nodes[k], s->id, s->label);
      return FALSE;
    }
    if (!node_fits(g, &pattern->nodes[k], n)) {
      g_autofree char *want = pattern_node_text(&pattern->nodes[k]);
      g_autofree char *have = weir_describe_node(s, n);
      *reason = g_strdup_printf("site position %u must be %s, not %s", k + 1,
                                want, have);
      return FALSE;
    }
  }
  for (guint e = 0; e < pattern->n_edges; e++) {
    guint a = site->nodes[pattern->edges[e].src];
    guint b = site->nodes[pattern->edges[e].dst];
    if (!state_has_edge(s, a, b)) {
      *reason = g_strdup_printf("no memlet from node %u to node %u, which the "
                                "pattern requires",
                                a, b);
      return FALSE;
    }
  }
  return TRUE;
}
