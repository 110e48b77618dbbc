/* cast-bf16.c — runs Conv, Gemm and MatMul in bf16 ("cast-bf16", tier 2).
 *
 * Site: one state (no nodes) holding at least one Conv, Gemm or MatMul
 * library node.  Parameter:
 *   exclude  a regular expression: nodes whose label it matches stay f32.
 *
 * Rewrite, for every such node whose operands and result are all f32 (in
 * node-id order, so the result does not depend on anything else):
 *   - a constant operand (weights, bias) is replaced by a bf16 constant
 *     holding its values rounded to nearest, ties to even, as ONNX's Cast
 *     rounds (weir_tensor_set on a bf16 tensor); one bf16 copy per
 *     constant, shared by the nodes that read it;
 *   - any other operand is converted by a Cast node (to = BFLOAT16) into a
 *     new bf16 transient; one Cast per tensor, shared likewise;
 *   - the result is written to a new bf16 transient and a Cast (to =
 *     FLOAT) gives back the f32 tensor the node wrote, so every other
 *     reader, and the program's interface, stay f32.
 * The node then has bf16 operands only, which is what Weir's bf16 GEMM
 * (implementation weir-bf16) takes: products of bf16 values accumulated
 * in f32, rounded to bf16 once.  f32 constants left unread are dropped.
 *
 * Legality: every product of the state that the exclude pattern does not
 * match must be f32 throughout or already bf16 throughout (those are
 * skipped); anything else is refused naming the node.  At least one node
 * must be left to convert.
 */
#include <string.h>

#include "tier2-util.h"
#include "weir-attr.h"
#include "weir-plugin.h"

gboolean weir_tier2_register_cast_bf16(GError **error);

/* ONNX TensorProto element types, the values of Cast's "to". */
enum { ONNX_FLOAT = 1, ONNX_BFLOAT16 = 16 };

static gint compare_id(gconstpointer a, gconstpointer b) {
  guint x = *(const guint *)a, y = *(const guint *)b;
  return (x > y) - (x < y);
}

static gboolean is_product(const WeirNode *n) {
  return weir_tier2_is_op(n, "Conv") || weir_tier2_is_op(n, "Gemm") ||
         weir_tier2_is_op(n, "MatMul");
}

static GRegex *exclude_regex(const WeirParams *p, char **reason, gboolean *ok) {
  const char *ex = weir_params_get_string(p, "exclude");
  *ok = TRUE;
  if (!ex || !*ex)
    return NULL;
  g_autoptr(GError) e = NULL;
  GRegex *r = g_regex_new(ex, 0, 0, &e);
  if (!r)
    *ok = weir_tier2_reject(reason,
                            "exclude: '%s' is not a regular expression: %s", ex,
                            e->message);
  return r;
}

/* Every operand and result of n has dtype d (absent connectors aside). */
static gboolean all_of(const WeirGraph *g, const WeirState *s,
                       const WeirNode *n, WeirDType d) {
  for (int input = 0; input < 2; input++) {
    guint count = input ? n->in_conns->len : n->out_conns->len;
    for (guint i = 0; i < count; i++) {
      WeirTier2Port p;
      if (!weir_tier2_nth_port(g, s, n, input, i, &p) ||
          p.container->dtype != d)
        return FALSE;
    }
  }
  return TRUE;
}

/* The products of s to convert, in node-id order (GArray of guint), or
 * NULL with *reason. */
static GArray *products(const WeirGraph *g, const WeirState *s,
                        const GRegex *exclude, char **reason) {
  g_autoptr(GArray) ids = g_array_new(FALSE, FALSE, sizeof(guint));
  for (guint i = 0; i < s->nodes->len; i++) {
    const WeirNode *n = g_ptr_array_index(s->nodes, i);
    if (!is_product(n) ||
        (exclude && g_regex_match(exclude, n->label, 0, NULL)))
      continue;
    if (!weir_tier2_wired(g, s, n)) {
      weir_tier2_reject(reason,
                        "%s '%s' does not follow the library-node "
                        "conventions",
                        n->op, n->label);
      return NULL;
    }
    if (n->out_conns->len != 1) {
      weir_tier2_reject(reason, "%s '%s' has %u outputs", n->op, n->label,
                        n->out_conns->len);
      return NULL;
    }
    if (all_of(g, s, n, WEIR_DTYPE_BF16))
      continue; /* already bf16 */
    if (!all_of(g, s, n, WEIR_DTYPE_F32)) {
      weir_tier2_reject(reason,
                        "%s '%s' does not compute in f32 (exclude the node "
                        "to leave it as it is)",
                        n->op, n->label);
      return NULL;
    }
    g_array_append_val(ids, n->id);
  }
  g_array_sort(ids, compare_id);
  return g_steal_pointer(&ids);
}

static void cb_match(const WeirGraph *g, GArray *sites) {
  for (guint si = 0; si < g->states->len; si++) {
    const WeirState *s = g_ptr_array_index(g->states, si);
    for (guint i = 0; i < s->nodes->len; i++)
      if (is_product(g_ptr_array_index(s->nodes, i))) {
        WeirSite site = {.state = s->id, .n_nodes = 0};
        g_array_append_val(sites, site);
        break;
      }
  }
}

static gboolean cb_can_apply(const WeirGraph *g, const WeirSite *site,
                             const WeirParams *params, char **reason) {
  WeirState *s = weir_tier2_site_state(g, site->state);
  if (!s || site->n_nodes != 0)
    return weir_tier2_reject(reason, "the site is not a state");
  gboolean ok;
  g_autoptr(GRegex) exclude = exclude_regex(params, reason, &ok);
  if (!ok)
    return FALSE;
  g_autoptr(GArray) ids = products(g, s, exclude, reason);
  if (!ids)
    return FALSE;
  if (ids->len == 0)
    return weir_tier2_reject(reason,
                             "state %u '%s' has no f32 Conv, Gemm or MatMul "
                             "left to convert to bf16",
                             s->id, s->label);
  return TRUE;
}

/* ---------------------------------------------------------------- apply */

static char *fresh_name(const WeirGraph *g, const char *base) {
  for (guint k = 0;; k++) {
    char *name = k ? g_strdup_printf("%s_%u", base, k) : g_strdup(base);
    if (!weir_graph_container(g, name) && !weir_graph_has_symbol(g, name))
      return name;
    g_free(name);
  }
}

/* A new bf16 transient shaped like `like`. */
static WeirContainer *add_bf16(WeirGraph *g, const WeirContainer *like,
                               GError **error) {
  g_autofree char *base = g_strdup_printf("%s_bf16", like->name);
  g_autofree char *name = fresh_name(g, base);
  return weir_graph_add_container(g, name, WEIR_DTYPE_BF16, like->shape->len,
                                  (WeirExpr *const *)like->shape->pdata, TRUE,
                                  error);
}

/* Memlet carrying all of container c between nodes src and dst. */
static gboolean wire(WeirGraph *g, WeirState *s, guint src, const char *sconn,
                     guint dst, const char *dconn, const WeirContainer *c,
                     GError **error) {
  g_autoptr(WeirSubset) full = weir_container_full_subset(c);
  g_autofree char *text = weir_subset_to_string(full);
  return weir_state_add_memlet(g, s, src, sconn, dst, dconn, c->name, text,
                               error) != NULL;
}

/* A Cast node to ONNX type `to` reading access node src (container from)
 * and writing access node dst (container into). */
static gboolean add_cast(WeirGraph *g, WeirState *s, const char *label,
                         gint64 to, guint src, const WeirContainer *from,
                         guint dst, const WeirContainer *into, GError **error) {
  const char *ins[] = {"in0", NULL}, *outs[] = {"out0", NULL};
  WeirNode *c = weir_state_add_library(g, s, label, "Cast", ins, outs);
  weir_node_set_attr_int(c, "to", to);
  weir_node_set_attr_int(c, "saturate", 1);
  return wire(g, s, src, NULL, c->id, "in0", from, error) &&
         wire(g, s, c->id, "out0", dst, NULL, into, error);
}

/* The bf16 stand-in of operand p: an access node id (new for a constant,
 * the Cast's output otherwise), made once per container (memo: name ->
 * bf16 container name). */
static gboolean bf16_operand(WeirGraph *g, WeirState *s, GHashTable *memo,
                             const WeirTier2Port *p, guint *access,
                             char **bname, GError **error) {
  const char *name = p->container->name;
  const char *known = g_hash_table_lookup(memo, name);
  gboolean constant = weir_tier2_is_constant(p->container);
  if (known) {
    *bname = g_strdup(known);
    if (constant) {
      *access = weir_state_add_access(g, s, known)->id;
      return TRUE;
    }
    /* the Cast's output access node in this state */
    for (guint i = 0; i < s->nodes->len; i++) {
      const WeirNode *a = g_ptr_array_index(s->nodes, i);
      if (a->kind == WEIR_NODE_ACCESS && g_strcmp0(a->data, known) == 0) {
        *access = a->id;
        return TRUE;
      }
    }
    g_assert_not_reached();
  }
  if (constant) {
    g_autoptr(WeirTensor) f = weir_tier2_constant_tensor(p->container);
    g_autoptr(WeirTensor) b =
        weir_tensor_new(WEIR_DTYPE_BF16, f->rank, f->shape);
    for (gint64 i = 0; i < f->count; i++)
      weir_tensor_set(b, i, weir_tensor_get(f, i)); /* nearest, ties even */
    g_autofree char *base = g_strdup_printf("%s_bf16", name);
    WeirContainer *bc = weir_tier2_add_constant(g, base, b);
    *bname = g_strdup(bc->name);
    *access = weir_state_add_access(g, s, bc->name)->id;
  } else {
    WeirContainer *bc = add_bf16(g, p->container, error);
    if (!bc)
      return FALSE;
    *bname = g_strdup(bc->name);
    guint a = weir_state_add_access(g, s, bc->name)->id;
    g_autofree char *label = g_strdup_printf("%s_Cast_bf16", name);
    if (!add_cast(g, s, label, ONNX_BFLOAT16, p->access->id, p->container, a,
                  bc, error))
      return FALSE;
    *access = a;
  }
  g_hash_table_insert(memo, g_strdup(name), g_strdup(*bname));
  return TRUE;
}

static gboolean convert(WeirGraph *g, WeirState *s, GHashTable *memo,
                        WeirNode *n, GPtrArray *dropped, GError **error) {
  guint id = n->id;
  guint n_in = n->in_conns->len;
  for (guint i = 0; i < n_in; i++) {
    n = weir_state_node(s, id);
    WeirTier2Port p;
    weir_tier2_nth_port(g, s, n, TRUE, i, &p);
    g_autofree char *conn = g_strdup(p.memlet->dst_conn);
    g_autofree char *fname = g_strdup(p.container->name);
    guint access;
    g_autofree char *bname = NULL;
    if (!bf16_operand(g, s, memo, &p, &access, &bname, error))
      return FALSE;
    weir_state_remove_memlet(s, p.memlet->id);
    if (!wire(g, s, access, NULL, id, conn, weir_graph_container(g, bname),
              error))
      return FALSE;
    g_ptr_array_add(dropped, g_steal_pointer(&fname));
  }
  n = weir_state_node(s, id);
  WeirTier2Port y;
  weir_tier2_port(g, s, n, FALSE, 0, &y);
  g_autofree char *label = g_strdup_printf("%s_Cast_f32", n->label);
  WeirContainer *yc = y.container;
  guint ya = y.access->id;
  WeirContainer *yb = add_bf16(g, yc, error);
  if (!yb)
    return FALSE;
  yc = weir_graph_container(g, y.container->name); /* the array may move */
  guint yba = weir_state_add_access(g, s, yb->name)->id;
  weir_state_remove_memlet(s, y.memlet->id);
  return wire(g, s, id, "out0", yba, NULL, yb, error) &&
         add_cast(g, s, label, ONNX_FLOAT, yba, yb, ya, yc, error);
}

static gboolean cb_apply(WeirGraph *g, const WeirSite *site,
                         const WeirParams *params, GError **error) {
  WeirState *s = weir_tier2_site_state(g, site->state);
  g_autofree char *reason = NULL;
  gboolean ok;
  g_autoptr(GRegex) exclude = exclude_regex(params, &reason, &ok);
  g_autoptr(GArray) ids = ok ? products(g, s, exclude, &reason) : NULL;
  if (!ids) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "cast-bf16: %s", reason);
    return FALSE;
  }
  g_autoptr(GHashTable) memo =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GPtrArray) dropped = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < ids->len; i++)
    if (!convert(g, s, memo, weir_state_node(s, g_array_index(ids, guint, i)),
                 dropped, error))
      return FALSE;
  for (guint i = 0; i < dropped->len; i++)
    weir_tier2_drop_if_unused(g, g_ptr_array_index(dropped, i));
  return TRUE;
}

static const WeirParamSpec cb_params[] = {
    {.name = "exclude",
     .type = WEIR_PARAM_STRING,
     .default_value = "",
     .doc = "regular expression: Conv/Gemm/MatMul nodes whose label matches "
            "stay in f32"},
};

static const WeirTransformInfo cast_bf16 = {
    .api_version = WEIR_PLUGIN_API_VERSION,
    .name = "cast-bf16",
    .tier = 2,
    .description = "run Conv/Gemm/MatMul in bf16: weights converted, "
                   "activations cast to bf16 and results back to f32",
    .params = cb_params,
    .n_params = G_N_ELEMENTS(cb_params),
    .match = cb_match,
    .can_apply = cb_can_apply,
    .apply = cb_apply,
};

gboolean weir_tier2_register_cast_bf16(GError **error) {
  return weir_transform_register(&cast_bf16, error);
}
