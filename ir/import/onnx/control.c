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
 *
 * If and Loop read their condition (and Loop its trip count) as data: the
 * conditions of their transitions read containers of one element
 * (weir_transition_data_reads).  If:
 *
 *   start --(in0)--> then        start --> else
 *
 * Loop (I: the iteration number as data, C: the condition, CN: the body's
 * condition output, S<i> / N<i> as for Scan):
 *
 *   init --(t = 0)--> guard --(t < in0 && C [&& t < bound])--> step
 *   step --(t = t + 1)--> guard,  guard --> fin
 *
 * init copies in1 (or true) to C and the initial values to S<i>; step
 * writes I = t, runs the body (I, C, S<i> -> CN, N<i>, scan outputs at
 * [t]) and copies N<i> to S<i> and CN to C (only when the node has a cond
 * input: without it the body's condition is ignored, as ONNX says); fin
 * copies S<i> to the outputs and t to "count".
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
         (strcmp(n->op_type, "Scan") == 0 || strcmp(n->op_type, "If") == 0 ||
          strcmp(n->op_type, "Loop") == 0);
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
      import_subgraph(model, body_attr->g, &bopts, names, NULL, 0, &local);
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

/* Adds to out the names graph reads without defining them (defined: its
 * inputs, initializers and node outputs, and those of `defined`). */
static void captures(const WeirOnnxGraph *graph, GHashTable *outer_defined,
                     GPtrArray *out, GHashTable *seen) {
  g_autoptr(GHashTable) defined = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < graph->n_inputs; i++)
    g_hash_table_add(defined, (gpointer)graph->inputs[i].name);
  for (guint i = 0; i < graph->n_initializers; i++)
    g_hash_table_add(defined, (gpointer)graph->initializers[i].name);
  for (guint i = 0; i < graph->n_nodes; i++) {
    const WeirOnnxNode *n = &graph->nodes[i];
    for (guint k = 0; k < n->n_inputs; k++) {
      const char *x = n->inputs[k];
      if (*x && !g_hash_table_contains(defined, x) &&
          !(outer_defined && g_hash_table_contains(outer_defined, x)) &&
          !g_hash_table_contains(seen, x)) {
        g_hash_table_add(seen, (gpointer)x);
        g_ptr_array_add(out, (gpointer)x);
      }
    }
    /* nested subgraphs see this graph's names defined so far */
    for (guint a = 0; a < n->n_attrs; a++) {
      const WeirOnnxAttr *at = &n->attrs[a];
      g_autoptr(GHashTable) both = g_hash_table_new(g_str_hash, g_str_equal);
      GHashTableIter it;
      gpointer key;
      g_hash_table_iter_init(&it, defined);
      while (g_hash_table_iter_next(&it, &key, NULL))
        g_hash_table_add(both, key);
      if (outer_defined) {
        g_hash_table_iter_init(&it, outer_defined);
        while (g_hash_table_iter_next(&it, &key, NULL))
          g_hash_table_add(both, key);
      }
      if (at->type == WEIR_ONNX_ATTR_GRAPH && at->g)
        captures(at->g, both, out, seen);
      for (gsize j = 0; at->type == WEIR_ONNX_ATTR_GRAPHS && j < at->n; j++)
        captures(at->graphs[j], both, out, seen);
    }
    for (guint k = 0; k < n->n_outputs; k++)
      if (*n->outputs[k])
        g_hash_table_add(defined, (gpointer)n->outputs[k]);
  }
  for (guint i = 0; i < graph->n_outputs; i++) {
    const char *x = graph->outputs[i].name;
    if (!g_hash_table_contains(defined, x) &&
        !(outer_defined && g_hash_table_contains(outer_defined, x)) &&
        !g_hash_table_contains(seen, x)) {
      g_hash_table_add(seen, (gpointer)x);
      g_ptr_array_add(out, (gpointer)x);
    }
  }
}

GPtrArray *weir_onnx_subgraph_captures(const WeirOnnxGraph *graph) {
  GPtrArray *out = g_ptr_array_new();
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  captures(graph, NULL, out, seen);
  return out;
}

/* ---------------------------------------------------------- If and Loop */

/* A subgraph attribute imported as a program; its real inputs' and its
 * outputs' container names go to in_names / out_names (borrowed from
 * names, which the caller owns). */
static WeirGraph *import_body(const WeirOnnxModel *model,
                              const WeirOnnxNode *on, const char *attr_name,
                              const WeirOnnxImportOptions *opts,
                              WeirOnnxSubgraphImport import_subgraph,
                              const WeirOnnxBodyInput *extra, guint n_extra,
                              const char *symbol, GHashTable *names,
                              GPtrArray *in_names, GPtrArray *out_names,
                              GError **error) {
  const WeirOnnxAttr *a = attr(on, attr_name);
  if (!a || a->type != WEIR_ONNX_ATTR_GRAPH || !a->g) {
    fail(error, INVALID, on, "attribute '%s' (a graph) is missing", attr_name);
    return NULL;
  }
  WeirOnnxImportOptions bopts = {.allow_any_opset =
                                     opts && opts->allow_any_opset,
                                 .warnings = opts ? opts->warnings : NULL};
  bopts.names = names;
  g_autoptr(GError) local = NULL;
  g_autoptr(WeirGraph) body =
      import_subgraph(model, a->g, &bopts, names, extra, n_extra, &local);
  if (!body) {
    fail(error, local->code, on, "%s: %s", attr_name, local->message);
    return NULL;
  }
  const WeirOnnxGraph *bg = a->g;
  for (guint i = 0; i < bg->n_inputs; i++)
    if (weir_onnx_graph_is_real_input(bg, bg->inputs[i].name))
      g_ptr_array_add(in_names, g_hash_table_lookup(names, bg->inputs[i].name));
  for (guint i = 0; i < n_extra; i++)
    if (extra[i].captured)
      g_ptr_array_add(in_names, g_hash_table_lookup(names, extra[i].name));
  for (guint i = 0; i < bg->n_outputs; i++) {
    const char *o = g_hash_table_lookup(names, bg->outputs[i].name);
    for (guint k = 0; o && k < in_names->len; k++)
      if (g_strcmp0(o, g_ptr_array_index(in_names, k)) == 0)
        o = NULL;
    if (!o) {
      fail(error, UNSUPPORTED, on,
           "%s: output '%s' is one of its inputs (not supported)", attr_name,
           bg->outputs[i].name);
      return NULL;
    }
    g_ptr_array_add(out_names, (gpointer)o);
  }
  if (body->symbols->len > (symbol ? 1u : 0u) ||
      (body->symbols->len && !weir_graph_has_symbol(body, symbol))) {
    fail(error, UNSUPPORTED, on, "%s has symbolic dimensions (not supported)",
         attr_name);
    return NULL;
  }
  g_ptr_array_add(in_names, NULL);
  g_ptr_array_add(out_names, NULL);
  return g_steal_pointer(&body);
}

static gboolean shape_is_one(guint rank, WeirExpr *const *shape) {
  for (guint d = 0; d < rank; d++) {
    gint64 v;
    if (!weir_expr_is_const(shape[d], &v) || v != 1)
      return FALSE;
  }
  return TRUE;
}

/* Adds the symbols of the present inputs' shapes to g. */
static void add_input_symbols(WeirGraph *g, guint n_in,
                              const WeirOnnxShape *ins) {
  g_autoptr(GHashTable) syms =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (guint k = 0; k < n_in; k++)
    for (guint d = 0; ins[k].present && d < ins[k].rank; d++)
      weir_expr_collect_symbols(ins[k].shape[d], syms);
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, syms);
  while (g_hash_table_iter_next(&it, &key, NULL))
    weir_graph_add_symbol(g, key); /* kept sorted */
}

static gboolean add_arguments(WeirGraph *g, guint n_in,
                              const WeirOnnxShape *ins, GError **error) {
  for (guint k = 0; k < n_in; k++) {
    if (!ins[k].present)
      continue;
    g_autofree char *name = g_strdup_printf("in%u", k);
    if (!weir_graph_add_container(g, name, ins[k].dtype, ins[k].rank,
                                  ins[k].shape, FALSE, error))
      return FALSE;
  }
  return TRUE;
}

/* The nested node of a branch or body in st: inputs from the access nodes
 * of the containers srcs[k] (whole; the access node src_access[k] when
 * given and not 0), outputs to new access nodes of dsts[k] (subset
 * dst_subs[k], or whole when NULL), whose ids go to dst_access[k] when
 * given. */
static WeirNode *add_body_node(WeirGraph *g, WeirState *st, const char *label,
                               WeirGraph *body, const char *const *bin,
                               const char *const *bout, const char *const *srcs,
                               const guint *src_access, const char *const *dsts,
                               char *const *dst_subs, guint *dst_access,
                               GError **error) {
  WeirNode *bn = weir_state_add_nested(g, st, label, body, bin, bout);
  for (guint k = 0; bin[k]; k++) {
    const WeirContainer *c = weir_graph_container(g, srcs[k]);
    g_autofree char *sub =
        subset_text(c->shape->len, (WeirExpr *const *)c->shape->pdata, 0, NULL);
    guint a = src_access && src_access[k]
                  ? src_access[k]
                  : weir_state_add_access(g, st, srcs[k])->id;
    if (!weir_state_add_memlet(g, st, a, NULL, bn->id, bin[k], srcs[k], sub,
                               error))
      return NULL;
  }
  for (guint k = 0; bout[k]; k++) {
    const WeirContainer *c = weir_graph_container(g, dsts[k]);
    g_autofree char *whole =
        subset_text(c->shape->len, (WeirExpr *const *)c->shape->pdata, 0, NULL);
    WeirNode *a = weir_state_add_access(g, st, dsts[k]);
    if (dst_access)
      dst_access[k] = a->id;
    if (!weir_state_add_memlet(g, st, bn->id, bout[k], a->id, NULL, dsts[k],
                               dst_subs && dst_subs[k] ? dst_subs[k] : whole,
                               error))
      return NULL;
  }
  return bn;
}

/* The captured values as body inputs: ins[first + j] for cap_names[j]. */
static WeirOnnxBodyInput *capture_inputs(guint n_cap,
                                         const char *const *cap_names,
                                         const WeirOnnxShape *ins,
                                         guint first) {
  WeirOnnxBodyInput *bi = g_new0(WeirOnnxBodyInput, n_cap + 1);
  for (guint j = 0; j < n_cap; j++)
    bi[j] = (WeirOnnxBodyInput){.name = cap_names[j],
                                .dtype = ins[first + j].dtype,
                                .rank = ins[first + j].rank,
                                .shape = ins[first + j].shape,
                                .captured = TRUE};
  return bi;
}

WeirGraph *weir_onnx_if_program(const WeirOnnxModel *model,
                                const WeirOnnxNode *on,
                                const WeirOnnxImportOptions *opts,
                                WeirOnnxSubgraphImport import_subgraph,
                                guint n_cap, const char *const *cap_names,
                                guint n_in, const WeirOnnxShape *ins,
                                guint n_out, WeirOnnxShape *outs,
                                GError **error) {
  if (n_in != 1 || !ins[0].present) {
    fail(error, INVALID, on, "%u inputs, expected 1 (cond)", n_in);
    return NULL;
  }
  if (ins[0].dtype != WEIR_DTYPE_BOOL ||
      !shape_is_one(ins[0].rank, ins[0].shape)) {
    fail(error, INVALID, on, "input 0 (cond) must be one bool");
    return NULL;
  }
  g_autoptr(GHashTable) names0 =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) names1 =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GPtrArray) bin0 = g_ptr_array_new();
  g_autoptr(GPtrArray) bin1 = g_ptr_array_new();
  g_autoptr(GPtrArray) bout0 = g_ptr_array_new();
  g_autoptr(GPtrArray) bout1 = g_ptr_array_new();
  g_autoptr(WeirGraph) branch0 = NULL;
  g_autoptr(WeirGraph) branch1 = NULL;
  GHashTable *names[2] = {names0, names1};
  GPtrArray *bin[2] = {bin0, bin1}, *bout[2] = {bout0, bout1};
  WeirGraph **branch[2] = {&branch0, &branch1};
  const char *attr_names[2] = {"then_branch", "else_branch"};
  g_autofree WeirOnnxBodyInput *caps =
      capture_inputs(n_cap, cap_names, ins, n_in);
  for (guint b = 0; b < 2; b++) {
    *branch[b] =
        import_body(model, on, attr_names[b], opts, import_subgraph, caps,
                    n_cap, NULL, names[b], bin[b], bout[b], error);
    if (!*branch[b])
      return NULL;
    if (bin[b]->len != n_cap + 1 || bout[b]->len != n_out + 1) {
      fail(error, INVALID, on,
           "%s has %u inputs and %u outputs, expected 0 "
           "and %u",
           attr_names[b], bin[b]->len - 1 - n_cap, bout[b]->len - 1, n_out);
      return NULL;
    }
  }
  for (guint k = 0; k < n_out; k++) {
    const WeirContainer *a =
        weir_graph_container(branch0, g_ptr_array_index(bout0, k));
    const WeirContainer *e =
        weir_graph_container(branch1, g_ptr_array_index(bout1, k));
    if (a->dtype != e->dtype ||
        !same_shape(a->shape->len, (WeirExpr *const *)a->shape->pdata,
                    e->shape->len, (WeirExpr *const *)e->shape->pdata)) {
      fail(error, UNSUPPORTED, on,
           "output %u: the branches give different dtypes or shapes (not "
           "supported: Weir's containers have one shape)",
           k);
      return NULL;
    }
    outs[k].present = TRUE;
    outs[k].dtype = a->dtype;
    outs[k].rank = a->shape->len;
    outs[k].shape = g_new0(WeirExpr *, outs[k].rank + 1);
    for (guint d = 0; d < outs[k].rank; d++)
      outs[k].shape[d] = weir_expr_ref(g_ptr_array_index(a->shape, d));
  }

  g_autoptr(WeirGraph) g = weir_graph_new(on->name);
  add_input_symbols(g, n_in + n_cap, ins);
  if (!add_arguments(g, n_in + n_cap, ins, error))
    return NULL;
  g_autofree const char **dsts = g_new0(const char *, n_out + 1);
  g_autofree const char **srcs = g_new0(const char *, n_cap + 1);
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func(g_free);
  for (guint j = 0; j < n_cap; j++) {
    char *name = g_strdup_printf("in%u", n_in + j);
    g_ptr_array_add(keep, name);
    srcs[j] = name;
  }
  for (guint k = 0; k < n_out; k++) {
    char *name = g_strdup_printf("out%u", k);
    g_ptr_array_add(keep, name);
    dsts[k] = name;
    if (!weir_graph_add_container(g, name, outs[k].dtype, outs[k].rank,
                                  outs[k].shape, FALSE, error))
      return NULL;
  }
  WeirState *start = weir_graph_add_state(g, "start");
  WeirState *st[2] = {weir_graph_add_state(g, "then"),
                      weir_graph_add_state(g, "else")};
  weir_graph_set_start(g, start->id);
  if (!weir_graph_add_transition(g, start->id, st[0]->id, "in0", error) ||
      !weir_graph_add_transition(g, start->id, st[1]->id, NULL, error))
    return NULL;
  for (guint b = 0; b < 2; b++) {
    g_autofree char *label =
        g_strdup_printf("%s_%s", on->name, b ? "else" : "then");
    if (!add_body_node(g, st[b], label, g_steal_pointer(branch[b]),
                       (const char *const *)bin[b]->pdata,
                       (const char *const *)bout[b]->pdata, srcs, NULL, dsts,
                       NULL, NULL, error))
      return NULL;
  }
  return g_steal_pointer(&g);
}

/* A tasklet "o = <value>" writing the scalar container dst in st; its
 * access node's id goes to *access when given. */
static gboolean set_scalar(WeirGraph *g, WeirState *st, const char *label,
                           const char *value, const char *dst, guint *access,
                           GError **error) {
  const char *outs[] = {"o", NULL};
  g_autofree char *code = g_strdup_printf("o = %s", value);
  WeirNode *tk = weir_state_add_tasklet(g, st, label, NULL, outs, code);
  const WeirContainer *c = weir_graph_container(g, dst);
  g_autofree char *sub =
      subset_text(c->shape->len, (WeirExpr *const *)c->shape->pdata, 0, NULL);
  WeirNode *a = weir_state_add_access(g, st, dst);
  if (access)
    *access = a->id;
  return tk && weir_state_add_memlet(g, st, tk->id, "o", a->id, NULL, dst, sub,
                                     error) != NULL;
}

/* Copies container src to dst in st (from the access node src_access
 * when not 0). */
static gboolean copy_whole(WeirGraph *g, WeirState *st, const char *src,
                           guint src_access, const char *dst, GError **error) {
  const WeirContainer *c = weir_graph_container(g, src);
  const WeirContainer *d = weir_graph_container(g, dst);
  g_autofree char *ss =
      subset_text(c->shape->len, (WeirExpr *const *)c->shape->pdata, 0, NULL);
  g_autofree char *ds =
      subset_text(d->shape->len, (WeirExpr *const *)d->shape->pdata, 0, NULL);
  WeirNode *a = src_access ? weir_state_node(st, src_access)
                           : weir_state_add_access(g, st, src);
  WeirNode *b = weir_state_add_access(g, st, dst);
  return copy(g, st, a, ss, b, ds, error);
}

WeirGraph *weir_onnx_loop_program(const WeirOnnxModel *model,
                                  const WeirOnnxNode *on,
                                  const WeirOnnxImportOptions *opts,
                                  WeirOnnxSubgraphImport import_subgraph,
                                  guint n_cap, const char *const *cap_names,
                                  guint n_in, const WeirOnnxShape *ins,
                                  guint n_out, WeirOnnxShape *outs,
                                  GError **error) {
  if (n_in < 2) {
    fail(error, INVALID, on, "%u inputs, expected at least 2 (M, cond)", n_in);
    return NULL;
  }
  gboolean has_m = ins[0].present, has_cond = ins[1].present;
  if (has_m && (ins[0].dtype != WEIR_DTYPE_I64 ||
                !shape_is_one(ins[0].rank, ins[0].shape))) {
    fail(error, INVALID, on, "input 0 (M) must be one int64");
    return NULL;
  }
  if (has_cond && (ins[1].dtype != WEIR_DTYPE_BOOL ||
                   !shape_is_one(ins[1].rank, ins[1].shape))) {
    fail(error, INVALID, on, "input 1 (cond) must be one bool");
    return NULL;
  }
  guint n_state = n_in - 2;
  for (guint k = 2; k < n_in; k++)
    if (!ins[k].present) {
      fail(error, INVALID, on, "input %u is missing", k);
      return NULL;
    }
  if (n_out < n_state) {
    fail(error, INVALID, on, "%u outputs for %u loop-carried values", n_out,
         n_state);
    return NULL;
  }
  guint n_scan = n_out - n_state;
  if (!has_m && !has_cond) {
    fail(error, UNSUPPORTED, on,
         "neither a trip count nor a condition: the loop would not end");
    return NULL;
  }

  g_autoptr(WeirGraph) g = weir_graph_new(on->name);
  add_input_symbols(g, n_in + n_cap, ins);
  g_autofree char *t = fresh_symbol(g, "t");
  weir_graph_add_symbol(g, t);

  /* The body's inputs: the iteration number holds t; the types of the
   * condition and the loop-carried values are the node's (the body may
   * leave them out); then the captured values. */
  const WeirOnnxAttr *body_attr = attr(on, "body");
  const WeirOnnxGraph *bg = body_attr && body_attr->type == WEIR_ONNX_ATTR_GRAPH
                                ? body_attr->g
                                : NULL;
  g_autofree WeirOnnxBodyInput *extra =
      g_new0(WeirOnnxBodyInput, n_state + 2 + n_cap + 1);
  guint n_extra = 0;
  for (guint i = 0; bg && i < bg->n_inputs && n_extra < n_state + 2; i++) {
    if (!weir_onnx_graph_is_real_input(bg, bg->inputs[i].name))
      continue;
    WeirOnnxBodyInput *e = &extra[n_extra];
    e->name = bg->inputs[i].name;
    if (n_extra == 0) {
      e->dtype = WEIR_DTYPE_I64;
      e->symbol = t;
    } else if (n_extra == 1) {
      e->dtype = WEIR_DTYPE_BOOL;
    } else {
      e->dtype = ins[n_extra].dtype;
      e->rank = ins[n_extra].rank;
      e->shape = ins[n_extra].shape;
    }
    n_extra++;
  }
  for (guint j = 0; j < n_cap; j++)
    extra[n_extra++] = (WeirOnnxBodyInput){.name = cap_names[j],
                                           .dtype = ins[n_in + j].dtype,
                                           .rank = ins[n_in + j].rank,
                                           .shape = ins[n_in + j].shape,
                                           .captured = TRUE};

  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GPtrArray) bin = g_ptr_array_new();
  g_autoptr(GPtrArray) bout = g_ptr_array_new();
  g_autoptr(WeirGraph) body =
      import_body(model, on, "body", opts, import_subgraph, extra, n_extra, t,
                  names, bin, bout, error);
  if (!body)
    return NULL;
  if (bin->len - 1 != n_state + 2 + n_cap || bout->len - 1 != n_out + 1) {
    fail(error, INVALID, on,
         "the body has %u inputs and %u outputs, expected %u and %u",
         bin->len - 1 - n_cap, bout->len - 1, n_state + 2, n_out + 1);
    return NULL;
  }
  /* body inputs: iteration number, condition, states */
  const WeirContainer *bi = weir_graph_container(body, bin->pdata[0]);
  const WeirContainer *bc = weir_graph_container(body, bin->pdata[1]);
  const WeirContainer *bco = weir_graph_container(body, bout->pdata[0]);
  if (bi->dtype != WEIR_DTYPE_I64 ||
      !shape_is_one(bi->shape->len, (WeirExpr *const *)bi->shape->pdata) ||
      bc->dtype != WEIR_DTYPE_BOOL ||
      !shape_is_one(bc->shape->len, (WeirExpr *const *)bc->shape->pdata) ||
      bco->dtype != WEIR_DTYPE_BOOL ||
      !shape_is_one(bco->shape->len, (WeirExpr *const *)bco->shape->pdata)) {
    fail(error, INVALID, on,
         "the body's iteration number must be one int64 and its condition "
         "input and output one bool");
    return NULL;
  }
  for (guint i = 0; i < n_state; i++) {
    const WeirContainer *si = weir_graph_container(body, bin->pdata[2 + i]);
    const WeirContainer *so = weir_graph_container(body, bout->pdata[1 + i]);
    const WeirOnnxShape *x = &ins[2 + i];
    if (si->dtype != x->dtype || so->dtype != x->dtype ||
        !same_shape(si->shape->len, (WeirExpr *const *)si->shape->pdata,
                    x->rank, x->shape) ||
        !same_shape(so->shape->len, (WeirExpr *const *)so->shape->pdata,
                    x->rank, x->shape)) {
      fail(error, UNSUPPORTED, on,
           "loop-carried value %u: the body's input or output differs from "
           "input %u in dtype or shape (not supported: Weir's containers "
           "have one shape)",
           i, 2 + i);
      return NULL;
    }
  }

  /* The bound of the scan outputs. */
  gint64 bound = -1;
  if (n_scan) {
    if (has_m && ins[0].is_constant)
      bound = MAX(ins[0].constant, 0);
    for (guint k = n_state; bound < 0 && k < n_out; k++)
      if (outs[k].declared >= 0)
        bound = outs[k].declared;
    if (bound < 0) {
      fail(error, UNSUPPORTED, on,
           "its scan outputs have a data-dependent length and no bound: "
           "give the trip count M as a constant, or declare the length of "
           "an output (docs/onnx.md)");
      return NULL;
    }
  }

  if (!add_arguments(g, n_in + n_cap, ins, error))
    return NULL;
  for (guint k = 0; k < n_out; k++) {
    const WeirContainer *bo = weir_graph_container(body, bout->pdata[1 + k]);
    gboolean scan = k >= n_state;
    outs[k].present = TRUE;
    outs[k].dtype = bo->dtype;
    outs[k].rank = bo->shape->len + (scan ? 1 : 0);
    outs[k].shape = g_new0(WeirExpr *, outs[k].rank + 1);
    guint d = 0;
    if (scan) {
      outs[k].shape[d++] = weir_expr_const(bound);
      outs[k].bounded = TRUE;
    }
    for (guint e = 0; e < bo->shape->len; e++)
      outs[k].shape[d++] = weir_expr_ref(g_ptr_array_index(bo->shape, e));
    g_autofree char *name = g_strdup_printf("out%u", k);
    if (!weir_graph_add_container(g, name, outs[k].dtype, outs[k].rank,
                                  outs[k].shape, FALSE, error))
      return NULL;
  }
  if (n_scan && !weir_graph_add_container(g, "count", WEIR_DTYPE_I64, 0, NULL,
                                          FALSE, error))
    return NULL;
  if (!weir_graph_add_container(g, "I", WEIR_DTYPE_I64, bi->shape->len,
                                (WeirExpr *const *)bi->shape->pdata, TRUE,
                                error) ||
      !weir_graph_add_container(g, "C", WEIR_DTYPE_BOOL, bc->shape->len,
                                (WeirExpr *const *)bc->shape->pdata, TRUE,
                                error) ||
      !weir_graph_add_container(g, "CN", WEIR_DTYPE_BOOL, bco->shape->len,
                                (WeirExpr *const *)bco->shape->pdata, TRUE,
                                error))
    return NULL;
  for (guint i = 0; i < n_state; i++) {
    g_autofree char *s_name = g_strdup_printf("S%u", i);
    g_autofree char *n_name = g_strdup_printf("N%u", i);
    if (!weir_graph_add_container(g, s_name, ins[2 + i].dtype, ins[2 + i].rank,
                                  ins[2 + i].shape, TRUE, error) ||
        !weir_graph_add_container(g, n_name, ins[2 + i].dtype, ins[2 + i].rank,
                                  ins[2 + i].shape, TRUE, error))
      return NULL;
  }

  WeirState *init = weir_graph_add_state(g, "init");
  WeirState *guard = weir_graph_add_state(g, "guard");
  WeirState *step = weir_graph_add_state(g, "step");
  WeirState *fin = weir_graph_add_state(g, "fin");
  weir_graph_set_start(g, init->id);
  GString *go = g_string_new(NULL);
  if (has_m)
    g_string_append_printf(go, "%s < in0", t);
  if (has_cond)
    g_string_append_printf(go, "%sC", go->len ? " && " : "");
  if (n_scan)
    g_string_append_printf(go, " && %s < %" G_GINT64_FORMAT, t, bound);
  g_autofree char *go_text = g_string_free(go, FALSE);
  g_autofree char *inc = g_strdup_printf("%s + 1", t);
  WeirTransition *tr;
  if (!(tr = weir_graph_add_transition(g, init->id, guard->id, NULL, error)) ||
      !weir_transition_add_assignment(tr, t, "0", error) ||
      !weir_graph_add_transition(g, guard->id, step->id, go_text, error) ||
      !(tr = weir_graph_add_transition(g, step->id, guard->id, NULL, error)) ||
      !weir_transition_add_assignment(tr, t, inc, error) ||
      !weir_graph_add_transition(g, guard->id, fin->id, NULL, error))
    return NULL;

  /* init */
  if (has_cond ? !copy_whole(g, init, "in1", 0, "C", error)
               : !set_scalar(g, init, "cond_true", "true", "C", NULL, error))
    return NULL;
  for (guint i = 0; i < n_state; i++) {
    g_autofree char *in_name = g_strdup_printf("in%u", 2 + i);
    g_autofree char *s_name = g_strdup_printf("S%u", i);
    if (!copy_whole(g, init, in_name, 0, s_name, error))
      return NULL;
  }
  /* step */
  g_autofree guint *src_access = g_new0(guint, n_state + n_cap + 3);
  g_autofree guint *dst_access = g_new0(guint, n_out + 2);
  if (!set_scalar(g, step, "iteration", t, "I", &src_access[0], error))
    return NULL;
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func(g_free);
  g_autofree const char **srcs = g_new0(const char *, n_state + n_cap + 3);
  g_autofree const char **dsts = g_new0(const char *, n_out + 2);
  g_autofree char **subs = g_new0(char *, n_out + 2);
  srcs[0] = "I";
  srcs[1] = "C";
  dsts[0] = "CN";
  for (guint i = 0; i < n_state; i++) {
    char *s_name = g_strdup_printf("S%u", i);
    char *n_name = g_strdup_printf("N%u", i);
    g_ptr_array_add(keep, s_name);
    g_ptr_array_add(keep, n_name);
    srcs[2 + i] = s_name;
    dsts[1 + i] = n_name;
  }
  for (guint j = 0; j < n_cap; j++) {
    char *name = g_strdup_printf("in%u", n_in + j);
    g_ptr_array_add(keep, name);
    srcs[2 + n_state + j] = name;
  }
  const char *tidx[] = {t, NULL};
  for (guint k = n_state; k < n_out; k++) {
    char *name = g_strdup_printf("out%u", k);
    g_ptr_array_add(keep, name);
    dsts[1 + k] = name;
    subs[1 + k] = subset_text(outs[k].rank, outs[k].shape, 1, tidx);
    g_ptr_array_add(keep, subs[1 + k]);
  }
  g_autofree char *label = g_strdup_printf("%s_body", on->name);
  gboolean body_uses_t = weir_graph_has_symbol(body, t);
  WeirNode *bn = add_body_node(g, step, label, g_steal_pointer(&body),
                               (const char *const *)bin->pdata,
                               (const char *const *)bout->pdata, srcs,
                               src_access, dsts, subs, dst_access, error);
  if (!bn || (body_uses_t && !weir_node_bind_symbol(bn, t, t, error)))
    return NULL;
  for (guint i = 0; i < n_state; i++)
    if (!copy_whole(g, step, dsts[1 + i], dst_access[1 + i], srcs[2 + i],
                    error))
      return NULL;
  if (has_cond && !copy_whole(g, step, "CN", dst_access[0], "C", error))
    return NULL;
  /* fin */
  for (guint i = 0; i < n_state; i++) {
    g_autofree char *out_name = g_strdup_printf("out%u", i);
    g_autofree char *s_name = g_strdup_printf("S%u", i);
    if (!copy_whole(g, fin, s_name, 0, out_name, error))
      return NULL;
  }
  if (n_scan && !set_scalar(g, fin, "iterations", t, "count", NULL, error))
    return NULL;
  return g_steal_pointer(&g);
}
