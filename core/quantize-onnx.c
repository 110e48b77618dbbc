/* quantize-onnx.c — writes the int8 quantization of an ONNX model in
 * ONNX's QDQ form (weir_quantize_export_qdq, weir-quantize.h).
 *
 * The original ModelProto is unpacked with the protobuf-c code generated
 * from onnx.proto and its main graph edited, following the decisions of
 * the quantize transformation (transforms/tier2/quantize.c) from the same
 * ranges and options:
 *  - each rewritten Conv/Gemm/MatMul reads DequantizeLinear(QuantizeLinear(x))
 *    for its input (unless x is already a quantized tensor), its weights
 *    as DequantizeLinear of an int8 initializer (the same values, scales
 *    and axis as the rewrite's) and its bias as DequantizeLinear of an
 *    int32 initializer with scale x_scale w_scale;
 *  - the tensor the rewrite quantizes after it (its output, or the output
 *    of a Relu that is its only reader) and the output of MaxPool,
 *    Flatten, Reshape, Squeeze, Unsqueeze and Identity of a quantized
 *    tensor (with the input's scale and zero point) is written under a new
 *    name T__float, followed by QuantizeLinear -> T__quantized and
 *    DequantizeLinear -> T, so every reader and graph output keeps its name.
 * Everything else (nodes, names, opsets, metadata) is what protobuf-c
 * decoded.  New messages are allocated with malloc, as protobuf-c's
 * default allocator frees them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx-private.h"
#include "weir-import.h"
#include "weir-quantize.h"

typedef struct {
  double scale;
  gint64 zp;
} QParams;

typedef struct {
  GHashTable *ranges;   /* Weir container name -> double[2] */
  GHashTable *names;    /* ONNX tensor name -> Weir container name */
  GHashTable *quant;    /* ONNX tensor name -> QParams* (int8 in Weir) */
  GHashTable *pending;  /* ONNX tensor name -> QParams*: Q/DQ after writer */
  GHashTable *dq_input; /* ONNX tensor name -> its DQ'ed name (inputs) */
  GHashTable *inits;    /* initializer name -> Onnx__TensorProto* */
  GPtrArray *nodes;     /* Onnx__NodeProto*: the new node list */
  GPtrArray *new_inits; /* Onnx__TensorProto* added */
  gboolean per_channel, s8;
  guint counter;
} Exp;

static char *cdup(const char *s) {
  return strdup(s);
}

static Onnx__NodeProto *new_node(const char *op, const char *name,
                                 const char *const *ins, guint n_in,
                                 const char *out) {
  Onnx__NodeProto *n = malloc(sizeof *n);
  onnx__node_proto__init(n);
  n->op_type = cdup(op);
  n->name = cdup(name);
  n->n_input = n_in;
  n->input = malloc(sizeof(char *) * n_in);
  for (guint i = 0; i < n_in; i++)
    n->input[i] = cdup(ins[i]);
  n->n_output = 1;
  n->output = malloc(sizeof(char *));
  n->output[0] = cdup(out);
  return n;
}

static void set_axis(Onnx__NodeProto *n, gint64 axis) {
  Onnx__AttributeProto *a = malloc(sizeof *a);
  onnx__attribute_proto__init(a);
  a->name = cdup("axis");
  a->has_type = TRUE;
  a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
  a->has_i = TRUE;
  a->i = axis;
  n->n_attribute = 1;
  n->attribute = malloc(sizeof(Onnx__AttributeProto *));
  n->attribute[0] = a;
}

/* A new initializer from dtype/values; returns its name (borrowed). */
static const char *add_init(Exp *e, const char *name, WeirDType dtype,
                            guint rank, const gint64 *dims,
                            const double *values, gint64 count) {
  Onnx__TensorProto *t = malloc(sizeof *t);
  onnx__tensor_proto__init(t);
  t->name = cdup(name);
  t->has_data_type = TRUE;
  t->data_type = weir_onnx_type_from_dtype(dtype);
  t->n_dims = rank;
  t->dims = rank ? malloc(sizeof(int64_t) * rank) : NULL;
  for (guint d = 0; d < rank; d++)
    t->dims[d] = dims[d];
  gsize size = weir_dtype_size(dtype);
  guint8 *raw = malloc(MAX(size * (gsize)count, 1));
  for (gint64 i = 0; i < count; i++) {
    if (dtype == WEIR_DTYPE_F32) {
      float v = (float)values[i];
      weir_onnx_copy_le(raw + i * size, &v, 1, size);
    } else if (dtype == WEIR_DTYPE_I32) {
      gint32 v = (gint32)values[i];
      weir_onnx_copy_le(raw + i * size, &v, 1, size);
    } else if (dtype == WEIR_DTYPE_I8) {
      ((gint8 *)raw)[i] = (gint8)values[i];
    } else {
      ((guint8 *)raw)[i] = (guint8)values[i];
    }
  }
  t->has_raw_data = TRUE;
  t->raw_data.data = raw;
  t->raw_data.len = size * (gsize)count;
  g_ptr_array_add(e->new_inits, t);
  return t->name;
}

static void act_params(const Exp *e, const double *r, QParams *q) {
  double lo = MIN(r[0], 0.0), hi = MAX(r[1], 0.0);
  double qmin = e->s8 ? -128 : 0, qmax = qmin + 255;
  double s = (double)(float)((hi - lo) / 255.0);
  if (!(s > 0) || !isfinite(s))
    s = 1.0;
  q->scale = s;
  q->zp = (gint64)CLAMP(rint(qmin - lo / s), qmin, qmax);
}

/* Appends Q and DQ of `from` into `to` with q's parameters. */
static void add_qdq(Exp *e, const char *from, const char *to,
                    const QParams *q) {
  g_autofree char *sname = g_strdup_printf("%s__scale", to);
  g_autofree char *zname = g_strdup_printf("%s__zero_point", to);
  g_autofree char *qname = g_strdup_printf("%s__quantized", to);
  double s = q->scale, z = (double)q->zp;
  const char *sn = add_init(e, sname, WEIR_DTYPE_F32, 0, NULL, &s, 1);
  const char *zn =
      add_init(e, zname, e->s8 ? WEIR_DTYPE_I8 : WEIR_DTYPE_U8, 0, NULL, &z, 1);
  g_autofree char *ql = g_strdup_printf("%s_QuantizeLinear", to);
  g_autofree char *dl = g_strdup_printf("%s_DequantizeLinear", to);
  const char *qi[] = {from, sn, zn};
  const char *di[] = {qname, sn, zn};
  g_ptr_array_add(e->nodes, new_node("QuantizeLinear", ql, qi, 3, qname));
  g_ptr_array_add(e->nodes, new_node("DequantizeLinear", dl, di, 3, to));
}

static const double *range_of(const Exp *e, const char *onnx_name) {
  const char *w = g_hash_table_lookup(e->names, onnx_name);
  return w ? g_hash_table_lookup(e->ranges, w) : NULL;
}

static gint64 attr_int(const Onnx__NodeProto *n, const char *name, gint64 d) {
  for (size_t i = 0; i < n->n_attribute; i++)
    if (strcmp(n->attribute[i]->name, name) == 0)
      return n->attribute[i]->i;
  return d;
}

/* Readers of tensor t among all nodes, plus 1 if it is a graph output. */
static guint readers(const Onnx__GraphProto *g, const char *t,
                     const Onnx__NodeProto **only) {
  guint n = 0;
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t k = 0; k < g->node[i]->n_input; k++)
      if (strcmp(g->node[i]->input[k], t) == 0) {
        n++;
        *only = g->node[i];
      }
  for (size_t i = 0; i < g->n_output; i++)
    if (strcmp(g->output[i]->name, t) == 0)
      n++;
  return n;
}

static gboolean is_graph_output(const Onnx__GraphProto *g, const char *t) {
  for (size_t i = 0; i < g->n_output; i++)
    if (strcmp(g->output[i]->name, t) == 0)
      return TRUE;
  return FALSE;
}

static WeirTensor *init_tensor(const Exp *e, const char *name, GError **error) {
  const Onnx__TensorProto *p = g_hash_table_lookup(e->inits, name);
  return p ? weir_onnx_tensor_decode(p, name, error) : NULL;
}

/* Quantizes the weights and bias of product n, pointing its inputs at new
 * DequantizeLinear outputs. */
static gboolean rewrite_product(Exp *e, Onnx__NodeProto *n, const QParams *xq,
                                GError **error) {
  gboolean conv = strcmp(n->op_type, "Conv") == 0;
  gboolean tb = strcmp(n->op_type, "Gemm") == 0 && attr_int(n, "transB", 0);
  g_autoptr(WeirTensor) w = init_tensor(e, n->input[1], error);
  if (!w)
    return FALSE;
  gboolean rows = conv || tb; /* channels are rows (axis 0) */
  gint64 channels = rows ? w->shape[0] : w->shape[1];
  gint64 per = w->count / channels;
  guint n_s = e->per_channel ? (guint)channels : 1;
  g_autofree double *ws = g_new0(double, channels);
  for (gint64 i = 0; i < w->count; i++) {
    gint64 ch = rows ? i / per : i % channels;
    guint k = e->per_channel ? (guint)ch : 0;
    ws[k] = MAX(ws[k], fabs(weir_tensor_get(w, i)));
  }
  for (guint k = 0; k < n_s; k++) {
    double s = (double)(float)(ws[k] / 127.0);
    ws[k] = s > 0 && isfinite(s) ? s : 1.0;
  }
  if (!e->per_channel)
    for (gint64 j = 1; j < channels; j++)
      ws[j] = ws[0];
  g_autofree double *wq = g_new(double, w->count);
  for (gint64 i = 0; i < w->count; i++) {
    gint64 ch = rows ? i / per : i % channels;
    wq[i] = CLAMP(rint(weir_tensor_get(w, i) / ws[ch]), -127, 127);
  }
  g_autofree char *base = g_strdup(n->input[1]);
  g_autofree char *wqn = g_strdup_printf("%s__quantized", base);
  g_autofree char *wsn = g_strdup_printf("%s__scale", base);
  g_autofree char *wzn = g_strdup_printf("%s__zero_point", base);
  g_autofree char *wdn = g_strdup_printf("%s__dequantized", base);
  g_autofree double *zeros = g_new0(double, channels);
  const char *a =
      add_init(e, wqn, WEIR_DTYPE_I8, w->rank, w->shape, wq, w->count);
  gint64 nsd = n_s;
  const char *b =
      add_init(e, wsn, WEIR_DTYPE_F32, e->per_channel ? 1 : 0, &nsd, ws, n_s);
  const char *c =
      add_init(e, wzn, WEIR_DTYPE_I8, e->per_channel ? 1 : 0, &nsd, zeros, n_s);
  const char *wi[] = {a, b, c};
  g_autofree char *wl = g_strdup_printf("%s_DequantizeLinear", base);
  Onnx__NodeProto *dq = new_node("DequantizeLinear", wl, wi, 3, wdn);
  if (e->per_channel)
    set_axis(dq, rows ? 0 : 1);
  g_ptr_array_add(e->nodes, dq);
  free(n->input[1]);
  n->input[1] = cdup(wdn);
  if (n->n_input > 2 && *n->input[2]) {
    g_autoptr(WeirTensor) bt = init_tensor(e, n->input[2], error);
    if (!bt)
      return FALSE;
    g_autofree double *bq = g_new(double, channels);
    g_autofree double *bs = g_new(double, channels);
    for (gint64 j = 0; j < channels; j++) {
      bq[j] = CLAMP(rint(weir_tensor_get(bt, j) / (xq->scale * ws[j])),
                    -2147483647.0, 2147483647.0);
      bs[j] = xq->scale * ws[j];
    }
    g_autofree char *bb = g_strdup(n->input[2]);
    g_autofree char *bqn = g_strdup_printf("%s__quantized", bb);
    g_autofree char *bsn = g_strdup_printf("%s__scale", bb);
    g_autofree char *bzn = g_strdup_printf("%s__zero_point", bb);
    g_autofree char *bdn = g_strdup_printf("%s__dequantized", bb);
    const char *bi[] = {
        add_init(e, bqn, WEIR_DTYPE_I32, 1, &channels, bq, channels),
        add_init(e, bsn, WEIR_DTYPE_F32, 1, &channels, bs, channels),
        add_init(e, bzn, WEIR_DTYPE_I32, 1, &channels, zeros, channels)};
    g_autofree char *bl = g_strdup_printf("%s_DequantizeLinear", bb);
    Onnx__NodeProto *bdq = new_node("DequantizeLinear", bl, bi, 3, bdn);
    set_axis(bdq, 0);
    g_ptr_array_add(e->nodes, bdq);
    free(n->input[2]);
    n->input[2] = cdup(bdn);
  }
  return TRUE;
}

static gboolean is_passthrough(const Onnx__NodeProto *n) {
  static const char *const ops[] = {"MaxPool", "Flatten",   "Reshape",
                                    "Squeeze", "Unsqueeze", "Identity"};
  for (guint i = 0; i < G_N_ELEMENTS(ops); i++)
    if (strcmp(n->op_type, ops[i]) == 0)
      return n->n_output == 1 && n->n_input >= 1;
  return FALSE;
}

/* Emits n, and after it Q/DQ of its output when one is pending. */
static void emit(Exp *e, Onnx__NodeProto *n) {
  g_ptr_array_add(e->nodes, n);
  const QParams *q =
      n->n_output ? g_hash_table_lookup(e->pending, n->output[0]) : NULL;
  if (!q)
    return;
  g_autofree char *t = g_strdup(n->output[0]);
  g_autofree char *f = g_strdup_printf("%s__float", t);
  free(n->output[0]);
  n->output[0] = cdup(f);
  add_qdq(e, f, t, q);
  QParams *copy = g_new(QParams, 1);
  *copy = *q;
  g_hash_table_insert(e->quant, g_strdup(t), copy);
}

static gboolean export_graph(Exp *e, Onnx__GraphProto *g, GRegex *exclude,
                             GError **error) {
  for (size_t i = 0; i < g->n_node; i++) {
    Onnx__NodeProto *n = g->node[i];
    gboolean product = strcmp(n->op_type, "Conv") == 0 ||
                       strcmp(n->op_type, "Gemm") == 0 ||
                       strcmp(n->op_type, "MatMul") == 0;
    if (product && n->n_input >= 2 &&
        g_hash_table_contains(e->inits, n->input[1]) &&
        !(exclude && g_regex_match(exclude, n->name, 0, NULL))) {
      const char *x = n->input[0];
      const QParams *xq = g_hash_table_lookup(e->quant, x);
      if (!xq) {
        const double *r = range_of(e, x);
        if (!r) {
          g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                      "%s '%s': input '%s' has no calibrated range", n->op_type,
                      n->name, x);
          return FALSE;
        }
        QParams *q = g_new(QParams, 1);
        act_params(e, r, q);
        g_autofree char *dq = g_strdup_printf("%s__dequantized", x);
        add_qdq(e, x, dq, q);
        g_hash_table_insert(e->dq_input, g_strdup(x), g_strdup(dq));
        g_hash_table_insert(e->quant, g_strdup(x), q);
        xq = q;
      }
      const char *dqx = g_hash_table_lookup(e->dq_input, x);
      QParams xcopy = *xq;
      if (dqx) {
        free(n->input[0]);
        n->input[0] = cdup(dqx);
      }
      if (!rewrite_product(e, n, &xcopy, error))
        return FALSE;
      /* the output quantized: y, or the output of its sole Relu reader */
      const char *y = n->output[0];
      const Onnx__NodeProto *only = NULL;
      const char *out = y;
      if (readers(g, y, &only) == 1 && !is_graph_output(g, y) &&
          strcmp(only->op_type, "Relu") == 0)
        out = only->output[0];
      const double *r = range_of(e, out);
      if (!r) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "%s '%s': output '%s' has no calibrated range", n->op_type,
                    n->name, out);
        return FALSE;
      }
      QParams *q = g_new(QParams, 1);
      act_params(e, r, q);
      g_hash_table_insert(e->pending, g_strdup(out), q);
    } else if (is_passthrough(n) &&
               g_hash_table_contains(e->quant, n->input[0]) &&
               !is_graph_output(g, n->output[0])) {
      QParams *q = g_new(QParams, 1);
      *q = *(const QParams *)g_hash_table_lookup(e->quant, n->input[0]);
      g_hash_table_insert(e->pending, g_strdup(n->output[0]), q);
    }
    emit(e, n);
  }
  return TRUE;
}

/* Removes the initializers no node reads and no graph input names (the
 * float weights and biases replaced by their int8/int32 forms). */
static void drop_unused_initializers(Onnx__GraphProto *g) {
  g_autoptr(GHashTable) used = g_hash_table_new(g_str_hash, g_str_equal);
  for (size_t i = 0; i < g->n_node; i++)
    for (size_t k = 0; k < g->node[i]->n_input; k++)
      g_hash_table_add(used, g->node[i]->input[k]);
  for (size_t i = 0; i < g->n_input; i++)
    g_hash_table_add(used, g->input[i]->name);
  size_t w = 0;
  for (size_t i = 0; i < g->n_initializer; i++) {
    Onnx__TensorProto *t = g->initializer[i];
    if (g_hash_table_contains(used, t->name))
      g->initializer[w++] = t;
    else
      onnx__tensor_proto__free_unpacked(t, NULL);
  }
  g->n_initializer = w;
}

gboolean weir_quantize_export_qdq(const char *model_path, const char *ranges,
                                  gboolean per_channel, const char *exclude,
                                  gboolean s8_activations, const char *path,
                                  GError **error) {
  g_autoptr(WeirGraph) program = weir_onnx_import(model_path, NULL, error);
  if (!program)
    return FALSE;
  g_autoptr(GRegex) ex = NULL;
  if (exclude && *exclude) {
    ex = g_regex_new(exclude, 0, 0, error);
    if (!ex)
      return FALSE;
  }
  Exp e = {0};
  e.per_channel = per_channel;
  e.s8 = s8_activations;
  e.ranges = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  e.names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  e.quant = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  e.pending = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  e.dq_input = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  e.inits = g_hash_table_new(g_str_hash, g_str_equal);
  e.nodes = g_ptr_array_new();
  e.new_inits = g_ptr_array_new();
  g_auto(GStrv) items = g_strsplit(ranges ? ranges : "", ",", -1);
  for (guint i = 0; items[i]; i++) {
    char *eq = strrchr(items[i], '=');
    char *colon = eq ? strchr(eq + 1, ':') : NULL;
    if (!colon)
      continue;
    double *r = g_new(double, 2);
    r[0] = g_ascii_strtod(eq + 1, NULL);
    r[1] = g_ascii_strtod(colon + 1, NULL);
    g_hash_table_insert(e.ranges, g_strndup(items[i], (gsize)(eq - items[i])),
                        r);
  }
  for (guint si = 0; si < program->states->len; si++) {
    const WeirState *s = g_ptr_array_index(program->states, si);
    for (guint i = 0; i < s->nodes->len; i++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, i);
      if (n->kind == WEIR_NODE_ACCESS && n->label && n->data)
        g_hash_table_replace(e.names, g_strdup(n->label), g_strdup(n->data));
    }
  }
  gboolean ok = FALSE;
  g_autoptr(GMappedFile) file = g_mapped_file_new(model_path, FALSE, error);
  Onnx__ModelProto *m =
      file ? onnx__model_proto__unpack(
                 NULL, g_mapped_file_get_length(file),
                 (const guint8 *)g_mapped_file_get_contents(file))
           : NULL;
  if (file && (!m || !m->graph))
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                "%s: not a valid ONNX model", model_path);
  if (m && m->graph) {
    Onnx__GraphProto *g = m->graph;
    for (size_t i = 0; i < g->n_initializer; i++)
      g_hash_table_insert(e.inits, g->initializer[i]->name, g->initializer[i]);
    ok = export_graph(&e, g, ex, error);
    if (ok) {
      g->node = realloc(g->node, sizeof(Onnx__NodeProto *) * e.nodes->len);
      memcpy(g->node, e.nodes->pdata, sizeof(gpointer) * e.nodes->len);
      g->n_node = e.nodes->len;
      g->initializer =
          realloc(g->initializer, sizeof(Onnx__TensorProto *) *
                                      (g->n_initializer + e.new_inits->len));
      memcpy(g->initializer + g->n_initializer, e.new_inits->pdata,
             sizeof(gpointer) * e.new_inits->len);
      g->n_initializer += e.new_inits->len;
      g_ptr_array_set_size(e.new_inits, 0);
      drop_unused_initializers(g);
      gsize len = onnx__model_proto__get_packed_size(m);
      g_autofree guint8 *buf = g_malloc(MAX(len, 1));
      onnx__model_proto__pack(m, buf);
      ok = g_file_set_contents(path, (const char *)buf, (gssize)len, error);
    } else {
      /* nodes of the original graph are still owned by it; free the new
       * ones only */
      for (guint i = 0; i < e.nodes->len; i++) {
        Onnx__NodeProto *n = e.nodes->pdata[i];
        gboolean orig = FALSE;
        for (size_t k = 0; k < g->n_node && !orig; k++)
          orig = g->node[k] == n;
        if (!orig)
          onnx__node_proto__free_unpacked(n, NULL);
      }
    }
    for (guint i = 0; i < e.new_inits->len; i++)
      onnx__tensor_proto__free_unpacked(e.new_inits->pdata[i], NULL);
  }
  if (m)
    onnx__model_proto__free_unpacked(m, NULL);
  g_hash_table_unref(e.ranges);
  g_hash_table_unref(e.names);
  g_hash_table_unref(e.quant);
  g_hash_table_unref(e.pending);
  g_hash_table_unref(e.dq_input);
  g_hash_table_unref(e.inits);
  g_ptr_array_unref(e.nodes);
  g_ptr_array_unref(e.new_inits);
  if (!ok)
    g_prefix_error(error, "%s: ", path);
  return ok;
}
