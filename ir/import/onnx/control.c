/* control.c — ONNX Scan as Weir control flow (onnx-control.h).
 *
 * A Scan node becomes a nested program node.  Its program has the node's
 * inputs and outputs as arguments (in<k>, out<k>), a transient S<i> per
 * loop-carried state and N<i> for the state the body computes, and the
 * states
 *
 *   init --(t = 0)--> guard --(t < T)--> step --(t = t + 1)--> guard
 *                     guard --(t >= T)--> fin
 *
 * init copies the initial states into S<i>; step holds the body (the
 * `body` subgraph imported as a program) as a nested node reading S<i> and
 * the scan inputs' slices [t], writing N<i> and the scan outputs' slices
 * [t], then copies N<i> to S<i>; fin copies S<i> to the final-state
 * outputs.  Scan of opset 8 has a batch axis 0 on every input and output:
 * an outer loop over b (states bguard, done) runs the above per batch
 * element.  Supported: scan axes 0 and forward directions (the defaults),
 * no sequence_lens (opset 8); anything else is refused with a message.
 */
#include <string.h>

#include "onnx-control.h"
#include "weir-ops.h"

#define UNSUPPORTED WEIR_ERROR_UNSUPPORTED
#define INVALID WEIR_ERROR_INVALID

void weir_onnx_shape_clear(WeirOnnxShape *s) {
  if (s->shape && s->present)
    for (guint d = 0; d < s->rank; d++)
      weir_expr_unref(s->shape[d]);
  g_clear_pointer(&s->shape, g_free);
}

gboolean weir_onnx_control_known(const WeirOnnxNode *n) {
  return (!n->domain || !*n->domain || strcmp(n->domain, "ai.onnx") == 0) &&
         strcmp(n->op_type, "Scan") == 0;
}

static const WeirOnnxAttr *attr(const WeirOnnxNode *on, const char *name) {
  for (guint i = 0; i < on->n_attrs; i++)
    if (strcmp(on->attrs[i].name, name) == 0)
      return &on->attrs[i];
  return NULL;
}

static gboolean fail(GError **error, WeirErrorCode code, const WeirOnnxNode *on,
                     const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static gboolean fail(GError **error, WeirErrorCode code, const WeirOnnxNode *on,
                     const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, WEIR_ERROR, code, "node '%s' (%s): %s", on->name,
              on->op_type, msg);
  return FALSE;
}

/* The INTS attribute `name` must be absent or all zeros. */
static gboolean zeros_only(const WeirOnnxNode *on, const char *name,
                           GError **error) {
  const WeirOnnxAttr *a = attr(on, name);
  for (gsize i = 0; a && i < a->n; i++)
    if (a->ints[i] != 0)
      return fail(error, UNSUPPORTED, on,
                  "attribute '%s' other than 0 is not supported (only scan "
                  "axis 0, forward)",
                  name);
  return TRUE;
}

/* "e0, e1, ..." for dimensions from `from` on, each "0:size", after the
 * given prefix indices (NULL-terminated). */
static char *subset_text(guint rank, WeirExpr *const *shape, guint from,
                         const char *const *prefix) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; prefix && prefix[i]; i++)
    g_string_append_printf(s, "%s%s", s->len ? ", " : "", prefix[i]);
  for (guint d = from; d < rank; d++) {
    g_autofree char *e = weir_expr_to_string(shape[d]);
    g_string_append_printf(s, "%s0:%s", s->len ? ", " : "", e);
  }
  return g_string_free(s, FALSE);
}

static gboolean copy(WeirGraph *g, WeirState *st, WeirNode *src,
                     const char *src_subset, WeirNode *dst,
                     const char *dst_subset, GError **error) {
  WeirMemlet *m = weir_state_add_memlet(g, st, src->id, NULL, dst->id, NULL,
                                        src->data, src_subset, error);
  return m && weir_memlet_set_other(m, dst_subset, error);
}

static gboolean same_shape(guint rank_a, WeirExpr *const *a, guint rank_b,
                           WeirExpr *const *b) {
  if (rank_a != rank_b)
    return FALSE;
  for (guint d = 0; d < rank_a; d++)
    if (!weir_expr_equal(a[d], b[d]))
      return FALSE;
  return TRUE;
}

static char *fresh_symbol(const WeirGraph *g, const char *base) {
  char *name = g_strdup(base);
  for (guint i = 0; weir_graph_has_symbol(g, name); i++) {
    g_free(name);
    name = g_strdup_printf("%s_%u", base, i);
  }
  return name;
}

WeirGraph *weir_onnx_scan_program(const WeirOnnxModel *model,
                                  const WeirOnnxNode *on, gint64 opset,
                                  const WeirOnnxImportOptions *opts,
                                  WeirOnnxSubgraphImport import_subgraph,
                                  guint n_in, const WeirOnnxShape *ins,
                                  guint n_out, WeirOnnxShape *outs,
                                  GError **error) {
  gboolean batch = opset < 9;
  const WeirOnnxAttr *body_attr = attr(on, "body");
  const WeirOnnxAttr *m_attr = attr(on, "num_scan_inputs");
  if (!body_attr || body_attr->type != WEIR_ONNX_ATTR_GRAPH || !body_attr->g) {
    fail(error, INVALID, on, "attribute 'body' (a graph) is missing");
    return NULL;
  }
  if (!m_attr || m_attr->type != WEIR_ONNX_ATTR_INT || m_attr->i < 1) {
    fail(error, INVALID, on, "attribute 'num_scan_inputs' is missing");
    return NULL;
  }
  if (batch ? !zeros_only(on, "directions", error)
            : !zeros_only(on, "scan_input_axes", error) ||
                  !zeros_only(on, "scan_input_directions", error) ||
                  !zeros_only(on, "scan_output_axes", error) ||
                  !zeros_only(on, "scan_output_directions", error))
    return NULL;
  guint first = batch ? 1 : 0;
  if (batch && n_in > 0 && ins[0].present) {
    fail(error, UNSUPPORTED, on, "input 0 (sequence_lens) is not supported");
    return NULL;
  }
  guint m = (guint)m_attr->i;
  if (n_in < first + m) {
    fail(error, INVALID, on, "%u inputs for %u scan inputs", n_in, m);
    return NULL;
  }
  guint n_state = n_in - first - m;
  if (n_out < n_state) {
    fail(error, INVALID, on, "%u outputs for %u states", n_out, n_state);
    return NULL;
  }
  guint n_scan_out = n_out - n_state;
  for (guint k = first; k < n_in; k++)
    if (!ins[k].present) {
      fail(error, INVALID, on, "input %u is missing", k);
      return NULL;
    }

  /* The body, with its own arguments. */
  WeirOnnxImportOptions bopts = {.allow_any_opset =
                                     opts && opts->allow_any_opset,
                                 .warnings = opts ? opts->warnings : NULL};
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  bopts.names = names;
  g_autoptr(GError) local = NULL;
  g_autoptr(WeirGraph) body =
      import_subgraph(model, body_attr->g, &bopts, names, &local);
  if (!body) {
    fail(error, local->code, on, "body: %s", local->message);
    return NULL;
  }
  const WeirOnnxGraph *bg = body_attr->g;
  guint b_in = 0;
  const char *b_in_names[64], *b_out_names[64];
  for (guint i = 0; i < bg->n_inputs && b_in < 64; i++)
    if (weir_onnx_graph_is_real_input(bg, bg->inputs[i].name))
      b_in_names[b_in++] = g_hash_table_lookup(names, bg->inputs[i].name);
  if (b_in != n_state + m || bg->n_outputs != n_out || n_out > 64) {
    fail(error, INVALID, on,
         "the body has %u inputs and %u outputs, expected %u and %u", b_in,
         bg->n_outputs, n_state + m, n_out);
    return NULL;
  }
  for (guint i = 0; i < n_out; i++) {
    b_out_names[i] = g_hash_table_lookup(names, bg->outputs[i].name);
    for (guint k = 0; k < b_in; k++)
      if (!b_out_names[i] || g_strcmp0(b_out_names[i], b_in_names[k]) == 0) {
        fail(error, UNSUPPORTED, on,
             "body output '%s' is one of its inputs (not supported)",
             bg->outputs[i].name);
        return NULL;
      }
  }
  if (body->symbols->len) {
    fail(error, UNSUPPORTED, on,
         "the body has symbolic dimensions (not supported)");
    return NULL;
  }

  /* Shapes: states (with the batch axis in opset 8), scan inputs [(B,) T,
   * ...]; the body sees them without the batch and scan axes. */
  const WeirOnnxShape *x0 = &ins[first + n_state];
  guint lead = batch ? 2 : 1;
  if (x0->rank < lead) {
    fail(error, INVALID, on, "scan input %u has rank %u", first + n_state,
         x0->rank);
    return NULL;
  }
  WeirExpr *T = x0->shape[batch ? 1 : 0];
  WeirExpr *B = batch ? x0->shape[0] : NULL;
  for (guint k = first; k < n_in; k++) {
    gboolean scan = k >= first + n_state;
    guint skip = scan ? lead : (batch ? 1 : 0);
    const WeirContainer *bc = weir_graph_container(body, b_in_names[k - first]);
    if (!bc || ins[k].rank < skip ||
        (scan && !weir_expr_equal(ins[k].shape[batch ? 1 : 0], T)) ||
        (batch && !weir_expr_equal(ins[k].shape[0], B)) ||
        !same_shape(ins[k].rank - skip, ins[k].shape + skip, bc->shape->len,
                    (WeirExpr *const *)bc->shape->pdata) ||
        bc->dtype != ins[k].dtype) {
      fail(error, INVALID, on,
           "input %u does not match the body's input '%s' (dtype, shape, or "
           "scan length)",
           k, b_in_names[k - first]);
      return NULL;
    }
  }

  g_autoptr(WeirGraph) g = weir_graph_new(on->name);
  g_autoptr(GHashTable) syms =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint k = 0; k < n_in; k++)
    for (guint d = 0; ins[k].present && d < ins[k].rank; d++)
      weir_expr_collect_symbols(ins[k].shape[d], syms);
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, syms);
  while (g_hash_table_iter_next(&it, &key, NULL))
    weir_graph_add_symbol(g, key);
  g_autofree char *t = fresh_symbol(g, "t");
  weir_graph_add_symbol(g, t);
  g_autofree char *b = batch ? fresh_symbol(g, "b") : NULL;
  if (b)
    weir_graph_add_symbol(g, b);

  for (guint k = 0; k < n_in; k++) {
    if (!ins[k].present)
      continue;
    g_autofree char *name = g_strdup_printf("in%u", k);
    if (!weir_graph_add_container(g, name, ins[k].dtype, ins[k].rank,
                                  ins[k].shape, FALSE, error))
      return NULL;
  }
  for (guint i = 0; i < n_out; i++) {
    const WeirContainer *bc = weir_graph_container(body, b_out_names[i]);
    gboolean scan = i >= n_state;
    guint extra = scan ? lead : (batch ? 1 : 0);
    outs[i].present = TRUE;
    outs[i].dtype = bc->dtype;
    outs[i].rank = bc->shape->len + extra;
    outs[i].shape = g_new0(WeirExpr *, outs[i].rank + 1);
    guint d = 0;
    if (batch)
      outs[i].shape[d++] = weir_expr_ref(B);
    if (scan)
      outs[i].shape[d++] = weir_expr_ref(T);
    for (guint e = 0; e < bc->shape->len; e++)
      outs[i].shape[d++] = weir_expr_ref(g_ptr_array_index(bc->shape, e));
    if (!scan && !same_shape(outs[i].rank, outs[i].shape, ins[first + i].rank,
                             ins[first + i].shape)) {
      fail(error, INVALID, on,
           "body output %u does not have the shape of its state", i);
      return NULL;
    }
    g_autofree char *name = g_strdup_printf("out%u", i);
    if (!weir_graph_add_container(g, name, outs[i].dtype, outs[i].rank,
                                  outs[i].shape, FALSE, error))
      return NULL;
  }
  for (guint i = 0; i < n_state; i++) {
    const WeirContainer *bc = weir_graph_container(body, b_in_names[i]);
    g_autofree char *s_name = g_strdup_printf("S%u", i);
    g_autofree char *n_name = g_strdup_printf("N%u", i);
    if (!weir_graph_add_container(g, s_name, bc->dtype, bc->shape->len,
                                  (WeirExpr *const *)bc->shape->pdata, TRUE,
                                  error) ||
        !weir_graph_add_container(g, n_name, bc->dtype, bc->shape->len,
                                  (WeirExpr *const *)bc->shape->pdata, TRUE,
                                  error))
      return NULL;
  }

  /* States and transitions. */
  WeirState *bguard = batch ? weir_graph_add_state(g, "batch_guard") : NULL;
  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *guard = weir_graph_add_state(g, "guard");
  WeirState *step = weir_graph_add_state(g, "step");
  WeirState *fin = weir_graph_add_state(g, "fin");
  WeirState *done = batch ? weir_graph_add_state(g, "done") : NULL;
  g_autofree char *T_text = weir_expr_to_string(T);
  g_autofree char *go = g_strdup_printf("%s < %s", t, T_text);
  g_autofree char *stop = g_strdup_printf("%s >= %s", t, T_text);
  g_autofree char *inc = g_strdup_printf("%s + 1", t);
  WeirTransition *tr;
  if (batch) {
    g_autofree char *B_text = weir_expr_to_string(B);
    g_autofree char *bgo = g_strdup_printf("%s < %s", b, B_text);
    g_autofree char *bstop = g_strdup_printf("%s >= %s", b, B_text);
    g_autofree char *binc = g_strdup_printf("%s + 1", b);
    WeirState *start = weir_graph_add_state(g, "start");
    weir_graph_set_start(g, start->id);
    if (!(tr = weir_graph_add_transition(g, start->id, bguard->id, NULL,
                                         error)) ||
        !weir_transition_add_assignment(tr, b, "0", error) ||
        !weir_graph_add_transition(g, bguard->id, init->id, bgo, error) ||
        !weir_graph_add_transition(g, bguard->id, done->id, bstop, error) ||
        !(tr =
              weir_graph_add_transition(g, fin->id, bguard->id, NULL, error)) ||
        !weir_transition_add_assignment(tr, b, binc, error))
      return NULL;
  } else {
    weir_graph_set_start(g, init->id);
  }
  if (!(tr = weir_graph_add_transition(g, init->id, guard->id, NULL, error)) ||
      !weir_transition_add_assignment(tr, t, "0", error) ||
      !weir_graph_add_transition(g, guard->id, step->id, go, error) ||
      !(tr = weir_graph_add_transition(g, step->id, guard->id, NULL, error)) ||
      !weir_transition_add_assignment(tr, t, inc, error) ||
      !weir_graph_add_transition(g, guard->id, fin->id, stop, error))
    return NULL;

  const char *bidx[] = {b, NULL};
  const char *btidx[] = {b, t, NULL};
  const char *tidx[] = {t, NULL};
  /* init and fin: the states in and out */
  for (guint i = 0; i < n_state; i++) {
    const WeirOnnxShape *x = &ins[first + i];
    g_autofree char *s_name = g_strdup_printf("S%u", i);
    g_autofree char *in_name = g_strdup_printf("in%u", first + i);
    g_autofree char *out_name = g_strdup_printf("out%u", i);
    g_autofree char *outer =
        subset_text(x->rank, x->shape, batch ? 1 : 0, batch ? bidx : NULL);
    g_autofree char *inner =
        subset_text(x->rank, x->shape, batch ? 1 : 0, NULL);
    WeirNode *a = weir_state_add_access(g, init, in_name);
    WeirNode *s = weir_state_add_access(g, init, s_name);
    if (!copy(g, init, a, outer, s, inner, error))
      return NULL;
    WeirNode *s2 = weir_state_add_access(g, fin, s_name);
    WeirNode *o = weir_state_add_access(g, fin, out_name);
    if (!copy(g, fin, s2, inner, o, outer, error))
      return NULL;
  }

  /* step: the body, then N<i> -> S<i> */
  const char *bin[66] = {0}, *bout[66] = {0};
  for (guint k = 0; k < b_in; k++)
    bin[k] = b_in_names[k];
  for (guint k = 0; k < n_out; k++)
    bout[k] = b_out_names[k];
  g_autofree char *blabel = g_strdup_printf("%s_body", on->name);
  WeirNode *bn =
      weir_state_add_nested(g, step, blabel, g_steal_pointer(&body), bin, bout);
  WeirGraph *bprog = bn->nested;
  for (guint k = 0; k < b_in; k++) {
    gboolean scan = k >= n_state;
    const WeirOnnxShape *x = &ins[first + k];
    g_autofree char *name =
        scan ? g_strdup_printf("in%u", first + k) : g_strdup_printf("S%u", k);
    const WeirContainer *c = weir_graph_container(g, name);
    g_autofree char *sub =
        scan ? subset_text(x->rank, x->shape, lead, batch ? btidx : tidx)
             : subset_text(c->shape->len, (WeirExpr *const *)c->shape->pdata, 0,
                           NULL);
    WeirNode *a = weir_state_add_access(g, step, name);
    if (!weir_state_add_memlet(g, step, a->id, NULL, bn->id, bin[k], name, sub,
                               error))
      return NULL;
  }
  for (guint i = 0; i < n_out; i++) {
    gboolean scan = i >= n_state;
    g_autofree char *name =
        scan ? g_strdup_printf("out%u", i) : g_strdup_printf("N%u", i);
    const WeirContainer *c = weir_graph_container(g, name);
    g_autofree char *sub =
        scan ? subset_text(outs[i].rank, outs[i].shape, lead,
                           batch ? btidx : tidx)
             : subset_text(c->shape->len, (WeirExpr *const *)c->shape->pdata, 0,
                           NULL);
    WeirNode *a = weir_state_add_access(g, step, name);
    if (!weir_state_add_memlet(g, step, bn->id, bout[i], a->id, NULL, name, sub,
                               error))
      return NULL;
    if (!scan) {
      g_autofree char *s_name = g_strdup_printf("S%u", i);
      WeirNode *s = weir_state_add_access(g, step, s_name);
      if (!copy(g, step, a, sub, s, sub, error))
        return NULL;
    }
  }
  (void)bprog;
  (void)n_scan_out;
  return g_steal_pointer(&g);
}
