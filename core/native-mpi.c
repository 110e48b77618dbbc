/* native-mpi.c — the native implementation "mpi" of the collectives
 * Allreduce and Broadcast (ir/ops/comm.c, docs/distributed.md).
 *
 * Registered by weir_init() only when libweir is built with MPI
 * (WEIR_HAVE_MPI, meson finds ompi-c); it is then the default choice for
 * both operators, and the generated unit includes <mpi.h> and links libmpi
 * (the library word "mpi": core/compiler.c adds MPI's compile and link
 * flags).  Without MPI both operators take their pure expansion, the
 * one-process meaning.
 *
 * The emitted code packs the node's tensors (a bucket) into one buffer
 * from the kernel's scratch block, makes one collective call on
 * MPI_COMM_WORLD, and unpacks into the outputs; one tensor in place is
 * reduced where it is.  When MPI is not initialized (or already finalized)
 * at run time the kernel runs as one rank: the outputs are the inputs, as
 * in the interpreter.  Counts above 2^30 elements are split into several
 * calls.  The calls are made from the thread that calls the kernel
 * (outside OpenMP regions), as MPI_THREAD_FUNNELED allows.
 *
 * The non-blocking pair AllreduceStart / AllreduceWait (ir/ops/comm.c):
 * the start packs its inputs into the buffer container (a transient of the
 * program, which nothing else touches until the wait) and calls
 * MPI_Iallreduce on it in place; the MPI_Request is stored in the bytes of
 * the i64 request container.  The wait calls MPI_Wait on it and unpacks
 * the buffer into the outputs, dividing by the number of ranks for the
 * mean.  A bucket of more than 2^30 elements reduces its leading chunks
 * blocking and only the last one non-blocking.  AllreduceTest calls
 * MPI_Test on each of its requests that is not null, so that Open MPI
 * progresses the collectives in flight (it does so only inside MPI calls),
 * and stores the request back (null once complete).
 */
#include <string.h>

#include "weir-attr.h"
#include "weir-mpi-config.h"
#include "weir-native.h"

void weir_native_register_mpi(void);

#ifdef WEIR_HAVE_MPI

static gboolean contiguous(const WeirContainer *c) {
  g_autoptr(WeirExpr) acc = weir_expr_const(1);
  for (guint d = c->shape->len; d-- > 0;) {
    if (!weir_expr_equal(g_ptr_array_index(c->strides, d), acc))
      return FALSE;
    WeirExpr *next = weir_expr_mul(acc, g_ptr_array_index(c->shape, d));
    weir_expr_unref(acc);
    acc = next;
  }
  return TRUE;
}

static const char *mpi_type(WeirDType t) {
  switch (t) {
  case WEIR_DTYPE_F32:
    return "MPI_FLOAT";
  case WEIR_DTYPE_F64:
    return "MPI_DOUBLE";
  case WEIR_DTYPE_I32:
    return "MPI_INT32_T";
  case WEIR_DTYPE_I64:
    return "MPI_INT64_T";
  default:
    return NULL;
  }
}

static const char *c_type(WeirDType t) {
  switch (t) {
  case WEIR_DTYPE_F32:
    return "float";
  case WEIR_DTYPE_F64:
    return "double";
  case WEIR_DTYPE_I32:
    return "int32_t";
  default:
    return "int64_t";
  }
}

static guint n_ports(const WeirNode *n) {
  return n->in_conns->len;
}

static gboolean comm_accepts(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, char **reason) {
  guint np = n_ports(n);
  if (np == 0 || np != n->out_conns->len || np > WEIR_NATIVE_MAX_PORTS) {
    *reason = g_strdup_printf("needs 1 to %u inputs, one output each",
                              (guint)WEIR_NATIVE_MAX_PORTS);
    return FALSE;
  }
  WeirDType t = WEIR_DTYPE_COUNT;
  for (guint k = 0; k < np; k++)
    for (guint io = 0; io < 2; io++) {
      const WeirContainer *c = weir_native_port(g, s, n, io == 0, k);
      if (!c) {
        *reason =
            g_strdup_printf("%s%u is not connected", io ? "out" : "in", k);
        return FALSE;
      }
      if (!mpi_type(c->dtype)) {
        *reason =
            g_strdup_printf("'%s' is %s", c->name, weir_dtype_name(c->dtype));
        return FALSE;
      }
      if (t != WEIR_DTYPE_COUNT && c->dtype != t) {
        *reason = g_strdup_printf("'%s' is %s: one dtype per bucket", c->name,
                                  weir_dtype_name(c->dtype));
        return FALSE;
      }
      t = c->dtype;
      if (!contiguous(c)) {
        *reason = g_strdup_printf("'%s' is not row-major", c->name);
        return FALSE;
      }
    }
  return TRUE;
}

/* The helpers: the collective on a contiguous buffer in chunks that fit an
 * int, nothing when MPI is not initialized (one rank). */
#define RANKS                                                                  \
  "  int init = 0, fin = 0, ranks = 1;\n"                                      \
  "  MPI_Initialized(&init);\n"                                                \
  "  MPI_Finalized(&fin);\n"                                                   \
  "  if (init && !fin)\n"                                                      \
  "    MPI_Comm_size(MPI_COMM_WORLD, &ranks);\n"

static const char allreduce_helper[] =
    "static void weir_mpi_allreduce_@S@(@T@ *buf, int64_t n, int mean) "
    "{\n" RANKS "  if (ranks <= 1)\n"
    "    return;\n"
    "  for (int64_t off = 0; off < n; off += (int64_t)1 << 30) {\n"
    "    int64_t c = n - off < ((int64_t)1 << 30) ? n - off : "
    "(int64_t)1 << 30;\n"
    "    MPI_Allreduce(MPI_IN_PLACE, buf + off, (int)c, @M@, MPI_SUM,\n"
    "                  MPI_COMM_WORLD);\n"
    "  }\n"
    "  if (mean)\n"
    "    for (int64_t i = 0; i < n; i++)\n"
    "      buf[i] = (@T@)(buf[i] / ranks);\n"
    "}\n";

static const char broadcast_helper[] =
    "static void weir_mpi_broadcast_@S@(@T@ *buf, int64_t n, int root) "
    "{\n" RANKS "  if (ranks <= 1 || root >= ranks)\n"
    "    return;\n"
    "  for (int64_t off = 0; off < n; off += (int64_t)1 << 30) {\n"
    "    int64_t c = n - off < ((int64_t)1 << 30) ? n - off : "
    "(int64_t)1 << 30;\n"
    "    MPI_Bcast(buf + off, (int)c, @M@, root, MPI_COMM_WORLD);\n"
    "  }\n"
    "}\n";

static const char start_helper[] =
    "static void weir_mpi_iallreduce_@S@(@T@ *buf, int64_t n, int64_t *req) "
    "{\n" RANKS "  MPI_Request r = MPI_REQUEST_NULL;\n"
    "  _Static_assert(sizeof(MPI_Request) <= sizeof(int64_t),\n"
    "                 \"an MPI_Request fits the i64 request container\");\n"
    "  if (ranks > 1) {\n"
    "    int64_t off = 0;\n"
    "    for (; n - off > ((int64_t)1 << 30); off += (int64_t)1 << 30)\n"
    "      MPI_Allreduce(MPI_IN_PLACE, buf + off, 1 << 30, @M@, MPI_SUM,\n"
    "                    MPI_COMM_WORLD);\n"
    "    MPI_Iallreduce(MPI_IN_PLACE, buf + off, (int)(n - off), @M@, "
    "MPI_SUM,\n"
    "                   MPI_COMM_WORLD, &r);\n"
    "  }\n"
    "  *req = 0;\n"
    "  memcpy(req, &r, sizeof r);\n"
    "}\n";

/* Returns the number of ranks the buffer was reduced over (1: not at
 * all). */
static const char wait_helper[] =
    "static int weir_mpi_wait(const int64_t *req) {\n" RANKS
    "  if (ranks <= 1)\n"
    "    return 1;\n"
    "  MPI_Request r;\n"
    "  memcpy(&r, req, sizeof r);\n"
    "  MPI_Wait(&r, MPI_STATUS_IGNORE);\n"
    "  return ranks;\n"
    "}\n";

static const char unpack_helper[] =
    "static void weir_mpi_unpack_@S@(@T@ *y, const @T@ *x, int64_t n, "
    "int div) {\n"
    "  if (div == 1) {\n"
    "    memcpy(y, x, (size_t)n * sizeof *y);\n"
    "    return;\n"
    "  }\n"
    "  for (int64_t i = 0; i < n; i++)\n"
    "    y[i] = (@T@)(x[i] / div);\n"
    "}\n";

static const char test_helper[] =
    "static void weir_mpi_test(const int64_t *in, int64_t *out) {\n" RANKS
    "  MPI_Request r;\n"
    "  memcpy(&r, in, sizeof r);\n"
    "  if (ranks > 1 && r != MPI_REQUEST_NULL) {\n"
    "    int done = 0;\n"
    "    MPI_Test(&r, &done, MPI_STATUS_IGNORE);\n"
    "  }\n"
    "  *out = 0;\n"
    "  memcpy(out, &r, sizeof r);\n"
    "}\n";

static char *instantiate(const char *text, WeirDType t) {
  g_autoptr(GString) s = g_string_new(text);
  g_string_replace(s, "@T@", c_type(t), 0);
  g_string_replace(s, "@S@", weir_dtype_name(t), 0);
  g_string_replace(s, "@M@", mpi_type(t), 0);
  return g_strdup(s->str);
}

static gboolean comm_emit(WeirNativeEmit *e, GError **error) {
  const WeirNode *n = e->n;
  gboolean allreduce = g_strcmp0(n->op, "Allreduce") == 0;
  guint np = n_ports(n);
  for (guint k = 0; k < np; k++)
    if (!e->in[k].c || !e->out[k].c)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "connector %u is not connected", k);
  WeirDType t = e->in[0].c->dtype;
  const char *sfx = weir_dtype_name(t);
  e->library(e, "mpi");
  g_autofree char *hname = g_strdup_printf(
      allreduce ? "weir_mpi_allreduce_%s" : "weir_mpi_broadcast_%s", sfx);
  g_autofree char *htext =
      instantiate(allreduce ? allreduce_helper : broadcast_helper, t);
  e->helper(e, hname, htext);
  gint64 arg = allreduce ? g_strcmp0(weir_node_attr_string(n, "reduce", "sum"),
                                     "mean") == 0
                         : weir_node_attr_int(n, "root", 0);
  g_autofree char *lbl = g_strescape(n->label ? n->label : "", NULL);
  for (char *p = lbl; *p; p++)
    if (*p == '*' || *p == '/')
      *p = '_';
  g_string_append_printf(e->code, "/* %s '%s' (mpi): %u tensor%s */\n", n->op,
                         lbl, np, np == 1 ? "" : "s");
  /* sizes in elements */
  g_autoptr(GPtrArray) sizes = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(WeirExpr) total = weir_expr_const(0);
  for (guint k = 0; k < np; k++) {
    g_autoptr(WeirExpr) v = weir_container_volume(e->in[k].c);
    g_ptr_array_add(sizes, e->expr_c(e, v));
    WeirExpr *sum = weir_expr_add(total, v);
    weir_expr_unref(total);
    total = sum;
  }
  gsize esize = weir_dtype_size(t);
  if (np == 1) {
    const char *x = e->in[0].ptr, *y = e->out[0].ptr;
    const char *count = g_ptr_array_index(sizes, 0);
    if (e->in[0].c != e->out[0].c)
      g_string_append_printf(e->code, "memcpy(%s, %s, (size_t)(%s) * %zu);\n",
                             y, x, count, esize);
    g_string_append_printf(e->code, "%s(%s, %s, %" G_GINT64_FORMAT ");\n",
                           hname, y, count, arg);
    return TRUE;
  }
  g_autoptr(WeirExpr) bytes = weir_expr_mul_const(total, (gint64)esize);
  g_autofree char *scratch = e->scratch(e, bytes);
  g_autofree char *total_c = e->expr_c(e, total);
  g_string_append_printf(e->code, "{\n  %s *weir_buf = (%s *)%s;\n", c_type(t),
                         c_type(t), scratch);
  GString *off = g_string_new("0");
  for (guint k = 0; k < np; k++) {
    g_string_append_printf(
        e->code, "  memcpy(weir_buf + %s, %s, (size_t)(%s) * %zu);\n", off->str,
        e->in[k].ptr, (char *)g_ptr_array_index(sizes, k), esize);
    g_string_append_printf(off, " + %s", (char *)g_ptr_array_index(sizes, k));
  }
  g_string_append_printf(e->code, "  %s(weir_buf, %s, %" G_GINT64_FORMAT ");\n",
                         hname, total_c, arg);
  g_string_assign(off, "0");
  for (guint k = 0; k < np; k++) {
    g_string_append_printf(
        e->code, "  memcpy(%s, weir_buf + %s, (size_t)(%s) * %zu);\n",
        e->out[k].ptr, off->str, (char *)g_ptr_array_index(sizes, k), esize);
    g_string_append_printf(off, " + %s", (char *)g_ptr_array_index(sizes, k));
  }
  g_string_free(off, TRUE);
  g_string_append(e->code, "}\n");
  return TRUE;
}

/* AllreduceStart: inputs (the bucket) -> buffer, request; AllreduceWait:
 * buffer, request -> outputs.  `tensors` are the bucket's side. */
static gboolean pair_accepts(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, char **reason) {
  gboolean start = g_strcmp0(n->op, "AllreduceStart") == 0;
  const GPtrArray *tensors = start ? n->in_conns : n->out_conns;
  const GPtrArray *other = start ? n->out_conns : n->in_conns;
  if (tensors->len == 0 || tensors->len > WEIR_NATIVE_MAX_PORTS ||
      other->len != 2) {
    *reason = g_strdup_printf("needs 1 to %u tensors, a buffer and a request",
                              (guint)WEIR_NATIVE_MAX_PORTS);
    return FALSE;
  }
  const WeirContainer *buf = weir_native_port(g, s, n, !start, 0);
  const WeirContainer *req = weir_native_port(g, s, n, !start, 1);
  if (!buf || !req) {
    *reason = g_strdup("the buffer or the request is not connected");
    return FALSE;
  }
  if (!mpi_type(buf->dtype) || buf->shape->len != 1 ||
      req->dtype != WEIR_DTYPE_I64) {
    *reason =
        g_strdup_printf("buffer '%s' (%s, rank %u) or request '%s' (%s)",
                        buf->name, weir_dtype_name(buf->dtype), buf->shape->len,
                        req->name, weir_dtype_name(req->dtype));
    return FALSE;
  }
  for (guint k = 0; k < tensors->len; k++) {
    const WeirContainer *c = weir_native_port(g, s, n, start, k);
    if (!c) {
      *reason =
          g_strdup_printf("%s%u is not connected", start ? "in" : "out", k);
      return FALSE;
    }
    if (c->dtype != buf->dtype) {
      *reason = g_strdup_printf("'%s' is %s, the buffer %s", c->name,
                                weir_dtype_name(c->dtype),
                                weir_dtype_name(buf->dtype));
      return FALSE;
    }
    if (!contiguous(c)) {
      *reason = g_strdup_printf("'%s' is not row-major", c->name);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean pair_emit(WeirNativeEmit *e, GError **error) {
  const WeirNode *n = e->n;
  gboolean start = g_strcmp0(n->op, "AllreduceStart") == 0;
  guint nt = start ? n->in_conns->len : n->out_conns->len;
  WeirNativeOperand *tensors = start ? e->in : e->out;
  WeirNativeOperand *other = start ? e->out : e->in;
  for (guint k = 0; k < nt; k++)
    if (!tensors[k].c)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "connector %u is not connected", k);
  if (!other[0].c || !other[1].c)
    return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                          "the buffer or the request is not connected");
  WeirDType t = other[0].c->dtype;
  const char *sfx = weir_dtype_name(t);
  gsize esize = weir_dtype_size(t);
  e->library(e, "mpi");
  g_autofree char *lbl = g_strescape(n->label ? n->label : "", NULL);
  for (char *p = lbl; *p; p++)
    if (*p == '*' || *p == '/')
      *p = '_';
  g_string_append_printf(e->code, "/* %s '%s' (mpi): %u tensor%s */\n", n->op,
                         lbl, nt, nt == 1 ? "" : "s");
  const char *buf = other[0].ptr, *req = other[1].ptr;
  g_autofree char *uname = g_strdup_printf("weir_mpi_unpack_%s", sfx);
  if (start) {
    g_autofree char *hname = g_strdup_printf("weir_mpi_iallreduce_%s", sfx);
    g_autofree char *htext = instantiate(start_helper, t);
    e->helper(e, hname, htext);
  } else {
    e->helper(e, "weir_mpi_wait", wait_helper);
    g_autofree char *utext = instantiate(unpack_helper, t);
    e->helper(e, uname, utext);
    gboolean mean =
        g_strcmp0(weir_node_attr_string(n, "reduce", "sum"), "mean") == 0;
    g_string_append_printf(e->code, "{\n  int weir_div = weir_mpi_wait(%s);\n",
                           req);
    if (!mean)
      g_string_append(e->code, "  weir_div = 1;\n");
  }
  if (start)
    g_string_append(e->code, "{\n");
  g_autoptr(WeirExpr) off = weir_expr_const(0);
  for (guint k = 0; k < nt; k++) {
    g_autoptr(WeirExpr) v = weir_container_volume(tensors[k].c);
    g_autofree char *count = e->expr_c(e, v);
    g_autofree char *o = e->expr_c(e, off);
    if (start)
      g_string_append_printf(e->code,
                             "  memcpy(%s + (%s), %s, (size_t)(%s) * %zu);\n",
                             buf, o, tensors[k].ptr, count, esize);
    else
      g_string_append_printf(e->code, "  %s(%s, %s + (%s), %s, weir_div);\n",
                             uname, tensors[k].ptr, buf, o, count);
    WeirExpr *next = weir_expr_add(off, v);
    weir_expr_unref(off);
    off = next;
  }
  if (start) {
    g_autofree char *total = e->expr_c(e, off);
    g_string_append_printf(e->code,
                           "  weir_mpi_iallreduce_%s(%s, %s, (int64_t *)%s);\n",
                           sfx, buf, total, req);
  }
  g_string_append(e->code, "}\n");
  return TRUE;
}

static gboolean test_accepts(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n, char **reason) {
  guint np = n->in_conns->len;
  if (np == 0 || np != n->out_conns->len || np > WEIR_NATIVE_MAX_PORTS) {
    *reason = g_strdup_printf("needs 1 to %u requests, one output each",
                              (guint)WEIR_NATIVE_MAX_PORTS);
    return FALSE;
  }
  for (guint k = 0; k < np; k++)
    for (guint io = 0; io < 2; io++) {
      const WeirContainer *c = weir_native_port(g, s, n, io == 0, k);
      if (!c || c->dtype != WEIR_DTYPE_I64) {
        *reason = g_strdup_printf("%s%u is not a request (i64)",
                                  io ? "out" : "in", k);
        return FALSE;
      }
    }
  return TRUE;
}

static gboolean test_emit(WeirNativeEmit *e, GError **error) {
  const WeirNode *n = e->n;
  guint np = n->in_conns->len;
  e->library(e, "mpi");
  e->helper(e, "weir_mpi_test", test_helper);
  g_autofree char *lbl = g_strescape(n->label ? n->label : "", NULL);
  for (char *p = lbl; *p; p++)
    if (*p == '*' || *p == '/')
      *p = '_';
  g_string_append_printf(e->code, "/* %s '%s' (mpi): %u request%s */\n", n->op,
                         lbl, np, np == 1 ? "" : "s");
  for (guint k = 0; k < np; k++) {
    if (!e->in[k].c || !e->out[k].c)
      return weir_node_fail(error, WEIR_ERROR_INVALID, n,
                            "connector %u is not connected", k);
    g_string_append_printf(
        e->code, "weir_mpi_test((const int64_t *)%s, (int64_t *)%s);\n",
        e->in[k].ptr, e->out[k].ptr);
  }
  return TRUE;
}

static const WeirNativeImpl mpi_impls[] = {
    {.op = "AllreduceTest",
     .impl = "mpi",
     .accepts = test_accepts,
     .emit = test_emit},
    {.op = "AllreduceStart",
     .impl = "mpi",
     .accepts = pair_accepts,
     .emit = pair_emit},
    {.op = "AllreduceWait",
     .impl = "mpi",
     .accepts = pair_accepts,
     .emit = pair_emit},
    {.op = "Allreduce",
     .impl = "mpi",
     .accepts = comm_accepts,
     .emit = comm_emit},
    {.op = "Broadcast",
     .impl = "mpi",
     .accepts = comm_accepts,
     .emit = comm_emit},
};

void weir_native_register_mpi(void) {
  for (guint i = 0; i < G_N_ELEMENTS(mpi_impls); i++)
    weir_native_register(&mpi_impls[i]);
}

#else

/* libweir without MPI: the collectives are always expanded (one rank). */
void weir_native_register_mpi(void) {}

#endif
