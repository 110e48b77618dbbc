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

static const WeirNativeImpl mpi_impls[] = {
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
