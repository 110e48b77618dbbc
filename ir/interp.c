/* interp.c — the reference interpreter (weir_interpret).
 *
 * Structure of this file, top to bottom:
 *  1. Plans.  Before anything runs, every program (the top-level one and
 *     each nested program, recursively) gets a ProgramPlan: per state its
 *     scopes (weir_state_scopes), the nodes in topological order with their
 *     memlets looked up once (tasklet connectors, copies into access nodes,
 *     nested arguments) and the transitions leaving it in id order.  Plans
 *     depend only on the graph, so a nested program run many times inside a
 *     map is planned once.
 *  2. Buffers.  A program instance gives every container a Buffer: a view
 *     (base pointer, element offset, per-dimension shape and strides in
 *     elements, and the number of addressable elements from the base).
 *     Arguments view the caller's tensors, transients own zero-filled (or
 *     constant-initialised) storage, and the arguments of a nested program
 *     view a region of the outer buffer.  Every element access checks the
 *     index against the shape and the address against the storage, so a bad
 *     program gets an error, never an out-of-bounds access.
 *  3. Execution.  run_program walks states and transitions; run_nodes
 *     executes a list of nodes in topological order, recursing into map
 *     scopes once per point of the parameter space; tasklets run through
 *     weir_code_run with callbacks that read and write through the memlet
 *     of each connector.
 *
 * Conventions: symbols live in slots numbered when planning (Syms): the
 * expressions of subsets and ranges read them by slot, and a GHashTable
 * name -> gint64* pointing at the same slots serves weir_expr_eval and the
 * tasklet language.  A slot's address stays put for an instance's
 * lifetime, so loops over map points only write through a pointer.  Every
 * error is prefixed with the element it concerns
 * (weir_describe_node/_memlet).  Nothing here depends on hash-table
 * iteration order.
 */
#include <math.h>
#include <string.h>

#include "weir-interp.h"
#include "weir-limits.h"
#include "weir-validate.h"

#define DEFAULT_MAX_TRANSITIONS G_GUINT64_CONSTANT(1000000000)

/* --------------------------------------------------------------- bindings */

/* Symbol slots.  Every symbol name an IExpr of a program refers to, and
 * every map parameter, gets a slot number when the program is planned
 * (SymIndex); an instance keeps one gint64 per slot and a flag saying
 * whether the name is bound.  The instance's bindings table (for
 * weir_expr_eval and the tasklet language's symbol callback) maps each
 * bound name to the address of its slot, so both views always agree and
 * the inner loops read symbols by slot, without hashing names. */
typedef struct {
  GHashTable *index; /* name (borrowed from the graph) -> slot + 1 */
  guint n;
} SymIndex;

static guint sym_slot(SymIndex *si, const char *name) {
  gpointer v = g_hash_table_lookup(si->index, name);
  if (v)
    return GPOINTER_TO_UINT(v) - 1;
  g_hash_table_insert(si->index, (gpointer)name, GUINT_TO_POINTER(si->n + 1));
  return si->n++;
}

/* The symbol state of one program instance. */
typedef struct {
  const SymIndex *si;   /* borrowed from the plan */
  GHashTable *bindings; /* name (owned) -> gint64* (into slots or extra) */
  gint64 *slots;        /* si->n values */
  gboolean *bound;      /* si->n flags */
  GPtrArray *extra;     /* gint64* (owned) for names without a slot */
} Syms;

static void syms_init(Syms *sy, const SymIndex *si) {
  sy->si = si;
  sy->bindings = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  sy->slots = g_new0(gint64, si->n ? si->n : 1);
  sy->bound = g_new0(gboolean, si->n ? si->n : 1);
  sy->extra = g_ptr_array_new_with_free_func(g_free);
}

static void syms_clear(Syms *sy) {
  g_clear_pointer(&sy->bindings, g_hash_table_unref);
  g_clear_pointer(&sy->slots, g_free);
  g_clear_pointer(&sy->bound, g_free);
  g_clear_pointer(&sy->extra, g_ptr_array_unref);
}

/* Binds name to value and returns the value's address, which stays put
 * for the instance's lifetime (also across syms_unset). */
static gint64 *syms_set(Syms *sy, const char *name, gint64 value) {
  gint64 *slot = g_hash_table_lookup(sy->bindings, name);
  if (!slot) {
    gpointer v = g_hash_table_lookup(sy->si->index, name);
    if (v) {
      guint k = GPOINTER_TO_UINT(v) - 1;
      slot = &sy->slots[k];
      sy->bound[k] = TRUE;
    } else {
      slot = g_new(gint64, 1);
      g_ptr_array_add(sy->extra, slot);
    }
    g_hash_table_insert(sy->bindings, g_strdup(name), slot);
  }
  *slot = value;
  return slot;
}

/* Unbinds a name that has a slot. */
static void syms_unset(Syms *sy, const char *name) {
  gpointer v = g_hash_table_lookup(sy->si->index, name);
  g_assert(v != NULL);
  sy->bound[GPOINTER_TO_UINT(v) - 1] = FALSE;
  g_hash_table_remove(sy->bindings, name);
}

/* An expression prepared for repeated evaluation over slots: a constant,
 * an affine form (c0 + sum of coef * symbol, the form of nearly every
 * subset and range), or an operator over prepared operands (floordiv,
 * mod, min, max, and sums or products that are not affine).  The
 * arithmetic is weir_expr_eval's (wrapping, floor division); whatever the
 * fast path cannot finish (an unbound symbol, a division by zero) goes
 * through weir_expr_eval, which reports it. */
#define IEXPR_MAX_TERMS 6
typedef struct _IExpr IExpr;
struct _IExpr {
  WeirExpr *e; /* borrowed from the graph */
  WeirExprKind kind;
  gboolean is_const;
  gint64 value; /* the constant, or c0 */
  gboolean affine;
  guint n_terms;
  guint slot[IEXPR_MAX_TERMS];
  gint64 coef[IEXPR_MAX_TERMS];
  IExpr *ops; /* owned, n_ops entries, when neither constant nor affine */
  guint n_ops;
};

/* Adds term t (a symbol, or constant * symbol) to ie; FALSE otherwise. */
static gboolean iexpr_add_term(IExpr *ie, SymIndex *si, WeirExpr *t) {
  gint64 coef = 1;
  if (weir_expr_kind(t) == WEIR_EXPR_MUL) {
    if (weir_expr_n_operands(t) != 2 ||
        !weir_expr_is_const(weir_expr_operand(t, 0), &coef))
      return FALSE;
    t = weir_expr_operand(t, 1);
  }
  if (weir_expr_kind(t) != WEIR_EXPR_SYMBOL || ie->n_terms == IEXPR_MAX_TERMS)
    return FALSE;
  ie->slot[ie->n_terms] = sym_slot(si, weir_expr_symbol_name(t));
  ie->coef[ie->n_terms++] = coef;
  return TRUE;
}

static void iexpr_init(IExpr *ie, SymIndex *si, WeirExpr *e) {
  memset(ie, 0, sizeof *ie);
  ie->e = e;
  ie->kind = weir_expr_kind(e);
  ie->is_const = weir_expr_is_const(e, &ie->value);
  if (ie->is_const)
    return;
  gboolean ok = TRUE;
  if (ie->kind == WEIR_EXPR_ADD) {
    for (guint k = 0; ok && k < weir_expr_n_operands(e); k++) {
      WeirExpr *t = weir_expr_operand(e, k);
      gint64 c;
      if (weir_expr_is_const(t, &c))
        ie->value = (gint64)((guint64)ie->value + (guint64)c);
      else
        ok = iexpr_add_term(ie, si, t);
    }
  } else {
    ok = iexpr_add_term(ie, si, e);
  }
  ie->affine = ok;
  if (ok)
    return;
  ie->n_terms = 0;
  ie->value = 0;
  ie->n_ops = weir_expr_n_operands(e);
  ie->ops = g_new0(IExpr, ie->n_ops ? ie->n_ops : 1);
  for (guint k = 0; k < ie->n_ops; k++)
    iexpr_init(&ie->ops[k], si, weir_expr_operand(e, k));
}

static void iexpr_clear(IExpr *ie) {
  for (guint k = 0; k < ie->n_ops; k++)
    iexpr_clear(&ie->ops[k]);
  g_clear_pointer(&ie->ops, g_free);
  ie->n_ops = 0;
}

/* Frees an array of n prepared expressions. */
static void iexprs_free(IExpr *a, guint n) {
  if (!a)
    return;
  for (guint k = 0; k < n; k++)
    iexpr_clear(&a[k]);
  g_free(a);
}

/* FALSE when the slow path must decide (see above). */
static gboolean iexpr_fast(const IExpr *ie, const Syms *sy, gint64 *out) {
  if (ie->is_const) {
    *out = ie->value;
    return TRUE;
  }
  if (ie->affine) {
    guint64 v = (guint64)ie->value;
    for (guint k = 0; k < ie->n_terms; k++) {
      if (G_UNLIKELY(!sy->bound[ie->slot[k]]))
        return FALSE;
      v += (guint64)ie->coef[k] * (guint64)sy->slots[ie->slot[k]];
    }
    *out = (gint64)v;
    return TRUE;
  }
  gint64 acc = 0;
  for (guint k = 0; k < ie->n_ops; k++) {
    gint64 v;
    if (!iexpr_fast(&ie->ops[k], sy, &v))
      return FALSE;
    if (k == 0) {
      acc = v;
      continue;
    }
    switch (ie->kind) {
    case WEIR_EXPR_ADD:
      acc = (gint64)((guint64)acc + (guint64)v);
      break;
    case WEIR_EXPR_MUL:
      acc = (gint64)((guint64)acc * (guint64)v);
      break;
    case WEIR_EXPR_FLOORDIV:
    case WEIR_EXPR_MOD:
      if (v == 0)
        return FALSE;
      acc = ie->kind == WEIR_EXPR_FLOORDIV ? weir_floordiv_i64(acc, v)
                                           : weir_floormod_i64(acc, v);
      break;
    case WEIR_EXPR_MIN:
      acc = MIN(acc, v);
      break;
    case WEIR_EXPR_MAX:
      acc = MAX(acc, v);
      break;
    case WEIR_EXPR_CONST:
    case WEIR_EXPR_SYMBOL:
      return FALSE;
    }
  }
  *out = acc;
  return TRUE;
}

static gboolean iexpr_eval(const IExpr *ie, const Syms *sy, gint64 *out,
                           GError **error) {
  if (G_LIKELY(iexpr_fast(ie, sy, out)))
    return TRUE;
  return weir_expr_eval(ie->e, sy->bindings, out, error);
}

/* ---------------------------------------------------------------- regions */

/* A subset prepared for evaluation, and scratch space for its value.  The
 * scratch is safe because a plan is never executed re-entrantly (a program
 * cannot contain itself). */
typedef struct {
  const WeirMemlet *m; /* borrowed */
  const WeirSubset *subset;
  char *desc;      /* "state 4 'main', memlet 13 (7 -> 8, A)" */
  guint container; /* index into the program's containers */
  guint rank;
  IExpr *begin, *end, *step; /* rank entries each */
  guint n_keep;              /* dimensions whose size is not the constant 1 */
  guint *keep;
  /* per dimension: its size when the step is a positive constant and
   * end - begin a constant (then only begin is evaluated), or -1 */
  gint64 *fixed;
  /* evaluated region */
  gint64 *rbegin, *rstep, *rsize;
  gint64 volume;
  gint64 *idx, *cnt; /* scratch: absolute and relative indices */
} Port;

static void port_free(Port *p) {
  if (!p)
    return;
  g_free(p->desc);
  iexprs_free(p->begin, p->rank);
  iexprs_free(p->end, p->rank);
  iexprs_free(p->step, p->rank);
  g_free(p->keep);
  g_free(p->fixed);
  g_free(p->rbegin);
  g_free(p->rstep);
  g_free(p->rsize);
  g_free(p->idx);
  g_free(p->cnt);
  g_free(p);
}

static Port *port_new(SymIndex *si, const WeirState *s, const WeirMemlet *m,
                      const WeirSubset *subset, guint container) {
  Port *p = g_new0(Port, 1);
  p->m = m;
  p->subset = subset;
  p->desc = weir_describe_memlet(s, m);
  p->container = container;
  p->rank = subset->rank;
  guint n = p->rank ? p->rank : 1;
  p->begin = g_new0(IExpr, n);
  p->end = g_new0(IExpr, n);
  p->step = g_new0(IExpr, n);
  p->keep = g_new0(guint, n);
  p->fixed = g_new0(gint64, n);
  for (guint d = 0; d < p->rank; d++) {
    iexpr_init(&p->begin[d], si, subset->dims[d].begin);
    iexpr_init(&p->end[d], si, subset->dims[d].end);
    iexpr_init(&p->step[d], si, subset->dims[d].step);
    g_autoptr(WeirExpr) diff =
        weir_expr_sub(subset->dims[d].end, subset->dims[d].begin);
    gint64 st = p->step[d].value, dv;
    p->fixed[d] = p->step[d].is_const && st > 0 && weir_expr_is_const(diff, &dv)
                      ? (dv > 0 ? (dv - 1) / st + 1 : 0)
                      : -1;
    g_autoptr(WeirExpr) size = weir_range_size(&subset->dims[d]);
    gint64 v;
    if (!(weir_expr_is_const(size, &v) && v == 1))
      p->keep[p->n_keep++] = d;
  }
  p->rbegin = g_new0(gint64, n);
  p->rstep = g_new0(gint64, n);
  p->rsize = g_new0(gint64, n);
  p->idx = g_new0(gint64, n);
  p->cnt = g_new0(gint64, n);
  return p;
}

/* Evaluates the port's subset under the current bindings. */
static gboolean port_eval(Port *p, const Syms *sy, GError **error) {
  p->volume = 1;
  for (guint d = 0; d < p->rank; d++) {
    gint64 b, e, st;
    if (p->fixed[d] >= 0) {
      if (!iexpr_eval(&p->begin[d], sy, &b, error)) {
        g_prefix_error(error, "%s: subset dimension %u: ", p->desc, d);
        return FALSE;
      }
      p->rbegin[d] = b;
      p->rstep[d] = p->step[d].value;
      p->rsize[d] = p->fixed[d];
      p->volume *= p->rsize[d];
      continue;
    }
    if (!iexpr_eval(&p->begin[d], sy, &b, error) ||
        !iexpr_eval(&p->end[d], sy, &e, error) ||
        !iexpr_eval(&p->step[d], sy, &st, error)) {
      g_prefix_error(error, "%s: subset dimension %u: ", p->desc, d);
      return FALSE;
    }
    if (st <= 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                  "%s: subset dimension %u has step %" G_GINT64_FORMAT
                  " (must be positive)",
                  p->desc, d, st);
      return FALSE;
    }
    p->rbegin[d] = b;
    p->rstep[d] = st;
    p->rsize[d] = e > b ? (e - b - 1) / st + 1 : 0;
    p->volume *= p->rsize[d];
  }
  return TRUE;
}

/* ---------------------------------------------------------------- buffers */

typedef struct {
  const WeirContainer *c; /* borrowed */
  gboolean bound;
  WeirDType dtype;
  gsize esize;
  guint8 *base;  /* start of the storage (borrowed or == own) */
  guint8 *own;   /* owned storage, or NULL */
  gint64 limit;  /* addressable elements from base */
  gint64 offset; /* element offset of index (0, ..., 0) */
  guint rank;
  gint64 *shape, *strides; /* owned, rank entries */
} Buffer;

static void buffer_clear(Buffer *b) {
  g_free(b->own);
  g_free(b->shape);
  g_free(b->strides);
  memset(b, 0, sizeof *b);
}

static char *shape_string(guint rank, const gint64 *shape) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < rank; d++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? ", " : "", shape[d]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* "f32[64, 32]" */
static char *type_string(WeirDType dtype, guint rank, const gint64 *shape) {
  g_autofree char *sh = shape_string(rank, shape);
  return g_strconcat(weir_dtype_name(dtype), sh, NULL);
}

/* Evaluates the container's shape and strides into b (rank, shape,
 * strides, dtype). */
static gboolean buffer_layout(Buffer *b, const WeirContainer *c,
                              GHashTable *bindings, GError **error) {
  b->c = c;
  b->dtype = c->dtype;
  b->esize = weir_dtype_size(c->dtype);
  b->rank = c->shape->len;
  b->shape = g_new0(gint64, b->rank ? b->rank : 1);
  b->strides = g_new0(gint64, b->rank ? b->rank : 1);
  if (c->strides->len != b->rank) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "container '%s': %u strides for rank %u", c->name,
                c->strides->len, b->rank);
    return FALSE;
  }
  for (guint d = 0; d < b->rank; d++) {
    if (!weir_expr_eval(g_ptr_array_index(c->shape, d), bindings, &b->shape[d],
                        error)) {
      g_prefix_error(error, "container '%s': shape dimension %u: ", c->name, d);
      return FALSE;
    }
    if (b->shape[d] < 0) {
      g_set_error(
          error, WEIR_ERROR, WEIR_ERROR_INVALID,
          "container '%s': shape dimension %u is negative (%" G_GINT64_FORMAT
          ")",
          c->name, d, b->shape[d]);
      return FALSE;
    }
    if (!weir_expr_eval(g_ptr_array_index(c->strides, d), bindings,
                        &b->strides[d], error)) {
      g_prefix_error(error, "container '%s': stride %u: ", c->name, d);
      return FALSE;
    }
    if (b->strides[d] < 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "container '%s': stride %u is negative (%" G_GINT64_FORMAT
                  ")",
                  c->name, d, b->strides[d]);
      return FALSE;
    }
  }
  return TRUE;
}

/* Elements spanned by the layout: 1 + the address of the last element (0
 * for an empty array).  FALSE on overflow. */
static gboolean buffer_span(const Buffer *b, gint64 *span) {
  guint64 last = 0;
  for (guint d = 0; d < b->rank; d++) {
    if (b->shape[d] == 0) {
      *span = 0;
      return TRUE;
    }
  }
  for (guint d = 0; d < b->rank; d++) {
    guint64 term;
    if (!g_uint64_checked_mul(&term, (guint64)(b->shape[d] - 1),
                              (guint64)b->strides[d]) ||
        !g_uint64_checked_add(&last, last, term))
      return FALSE;
  }
  if (last >= (guint64)G_MAXINT64 / 16)
    return FALSE;
  *span = (gint64)last + 1;
  return TRUE;
}

static gint64 buffer_volume(const Buffer *b) {
  gint64 v = 1;
  for (guint d = 0; d < b->rank; d++)
    v *= b->shape[d];
  return v;
}

/* Address of an absolute index, checked against shape and storage. */
static gboolean buffer_address(const Buffer *b, const gint64 *idx, gint64 *addr,
                               GError **error) {
  gint64 a = b->offset;
  for (guint d = 0; d < b->rank; d++) {
    if (idx[d] < 0 || idx[d] >= b->shape[d]) {
      g_set_error(
          error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
          "index %" G_GINT64_FORMAT
          " is out of bounds in dimension %u of '%s' (size %" G_GINT64_FORMAT
          ")",
          idx[d], d, b->c->name, b->shape[d]);
      return FALSE;
    }
    a += idx[d] * b->strides[d];
  }
  if (a < 0 || a >= b->limit) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "element %" G_GINT64_FORMAT
                " of '%s' is outside its storage (%" G_GINT64_FORMAT
                " elements)",
                a, b->c->name, b->limit);
    return FALSE;
  }
  *addr = a;
  return TRUE;
}

static WeirValue buffer_load(const Buffer *b, gint64 addr) {
  const guint8 *p = b->base + (gsize)addr * b->esize;
  WeirValue v;
  v.type = b->dtype;
  switch (b->dtype) {
  case WEIR_DTYPE_F32:
    v.f = *(const float *)p;
    break;
  case WEIR_DTYPE_F64:
    v.f = *(const double *)p;
    break;
  case WEIR_DTYPE_I32:
    v.i = *(const gint32 *)p;
    break;
  case WEIR_DTYPE_I64:
    v.i = *(const gint64 *)p;
    break;
  case WEIR_DTYPE_BOOL:
    v.i = *p != 0;
    break;
  case WEIR_DTYPE_U8:
    v.i = *p;
    break;
  case WEIR_DTYPE_F16:
    v.f = weir_f16_to_float(*(const guint16 *)p);
    break;
  case WEIR_DTYPE_BF16:
    v.f = weir_bf16_to_float(*(const guint16 *)p);
    break;
  case WEIR_DTYPE_I8:
    v.i = *(const gint8 *)p;
    break;
  case WEIR_DTYPE_I16:
    v.i = *(const gint16 *)p;
    break;
  case WEIR_DTYPE_U16:
    v.i = *(const guint16 *)p;
    break;
  case WEIR_DTYPE_U32:
    v.i = *(const guint32 *)p;
    break;
  case WEIR_DTYPE_U64:
    v.i = (gint64) * (const guint64 *)p;
    break;
  case WEIR_DTYPE_COUNT:
    g_assert_not_reached();
  }
  return v;
}

/* Stores v, which already has the buffer's dtype. */
static void buffer_store(Buffer *b, gint64 addr, WeirValue v) {
  guint8 *p = b->base + (gsize)addr * b->esize;
  switch (b->dtype) {
  case WEIR_DTYPE_F32:
    *(float *)p = (float)v.f;
    break;
  case WEIR_DTYPE_F64:
    *(double *)p = v.f;
    break;
  case WEIR_DTYPE_I32:
    *(gint32 *)p = (gint32)v.i;
    break;
  case WEIR_DTYPE_I64:
    *(gint64 *)p = v.i;
    break;
  case WEIR_DTYPE_BOOL:
    *p = v.i != 0;
    break;
  case WEIR_DTYPE_U8:
    *p = (guint8)v.i;
    break;
  case WEIR_DTYPE_F16:
    *(guint16 *)p = weir_f16_from_double(v.f);
    break;
  case WEIR_DTYPE_BF16:
    *(guint16 *)p = weir_bf16_from_double(v.f);
    break;
  case WEIR_DTYPE_I8:
    *(gint8 *)p = (gint8)v.i;
    break;
  case WEIR_DTYPE_I16:
  case WEIR_DTYPE_U16:
    *(guint16 *)p = (guint16)v.i;
    break;
  case WEIR_DTYPE_U32:
    *(guint32 *)p = (guint32)v.i;
    break;
  case WEIR_DTYPE_U64:
    *(guint64 *)p = (guint64)v.i;
    break;
  case WEIR_DTYPE_COUNT:
    g_assert_not_reached();
  }
}

/* Narrows a wide integer result to the dtype, wrapping like C unsigned
 * arithmetic (the value fits in 64 bits already). */
static gint64 narrow_int(WeirDType dtype, guint64 v) {
  switch (dtype) {
  case WEIR_DTYPE_I32:
    return (gint32)(guint32)v;
  case WEIR_DTYPE_BOOL:
    return v != 0;
  case WEIR_DTYPE_U8:
    return (guint8)v;
  case WEIR_DTYPE_I8:
    return (gint8)(guint8)v;
  case WEIR_DTYPE_I16:
    return (gint16)(guint16)v;
  case WEIR_DTYPE_U16:
    return (guint16)v;
  case WEIR_DTYPE_U32:
    return (guint32)v;
  default:
    return (gint64)v;
  }
}

/* old (wcr) v, both of dtype.  Floating min/max propagate NaN, like the
 * tasklet language's min/max; integer sums and products wrap around. */
static WeirValue wcr_combine(WeirWcr wcr, WeirValue old, WeirValue v) {
  WeirValue r = {.type = old.type};
  if (weir_dtype_is_float(old.type)) {
    double a = old.f, x = v.f;
    switch (wcr) {
    case WEIR_WCR_SUM:
      r.f = a + x;
      break;
    case WEIR_WCR_PROD:
      r.f = a * x;
      break;
    case WEIR_WCR_MIN:
      r.f = isnan(a) || isnan(x) ? NAN : (x < a ? x : a);
      break;
    case WEIR_WCR_MAX:
      r.f = isnan(a) || isnan(x) ? NAN : (x > a ? x : a);
      break;
    default:
      r.f = x;
      break;
    }
    if (old.type != WEIR_DTYPE_F64)
      r = weir_value_convert(r, old.type); /* rounds f32, f16, bf16 */
    return r;
  }
  guint64 a = (guint64)old.i, x = (guint64)v.i;
  guint64 res;
  if (old.type == WEIR_DTYPE_U64 &&
      (wcr == WEIR_WCR_MIN || wcr == WEIR_WCR_MAX)) {
    res = wcr == WEIR_WCR_MIN ? MIN(a, x) : MAX(a, x);
    r.i = (gint64)res;
    return r;
  }
  switch (wcr) {
  case WEIR_WCR_SUM:
    res = a + x;
    break;
  case WEIR_WCR_PROD:
    res = a * x;
    break;
  case WEIR_WCR_MIN:
    res = (guint64)(old.i < v.i ? old.i : v.i);
    break;
  case WEIR_WCR_MAX:
    res = (guint64)(old.i > v.i ? old.i : v.i);
    break;
  default:
    res = x;
    break;
  }
  r.i = narrow_int(old.type, res);
  return r;
}

static void buffer_write(Buffer *b, gint64 addr, WeirValue v, WeirWcr wcr) {
  v = weir_value_convert(v, b->dtype);
  if (wcr != WEIR_WCR_NONE)
    v = wcr_combine(wcr, buffer_load(b, addr), v);
  buffer_store(b, addr, v);
}

/* Absolute index of a port element and its address.  rel holds n_rel
 * indices relative to the subset: none (the subset's first element), one
 * per dimension, or one per dimension whose size is not the constant 1
 * (the connector's rank when unit dimensions are dropped). */
static gboolean port_address(Port *p, const Buffer *b, const gint64 *rel,
                             guint n_rel, gint64 *addr, GError **error) {
  if (p->volume == 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "the subset of '%s' is empty", p->m->data);
    return FALSE;
  }
  for (guint d = 0; d < p->rank; d++)
    p->idx[d] = p->rbegin[d];
  if (n_rel > 0) {
    const guint *dims; /* dims[k]: the dimension of index k */
    if (n_rel == p->rank)
      dims = NULL; /* one index per dimension */
    else if (n_rel == p->n_keep)
      dims = p->keep; /* unit dimensions dropped */
    else {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                  "%u indices given for a subset of rank %u on '%s'", n_rel,
                  p->rank, p->m->data);
      return FALSE;
    }
    for (guint k = 0; k < n_rel; k++) {
      guint d = dims ? dims[k] : k;
      if (rel[k] < 0 || rel[k] >= p->rsize[d]) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                    "index %" G_GINT64_FORMAT
                    " is out of range in dimension %u of the subset on '%s' "
                    "(%" G_GINT64_FORMAT " elements)",
                    rel[k], d, p->m->data, p->rsize[d]);
        return FALSE;
      }
      p->idx[d] = p->rbegin[d] + rel[k] * p->rstep[d];
    }
  }
  return buffer_address(b, p->idx, addr, error);
}

/* ------------------------------------------------------------------ plans */

typedef struct _NodePlan NodePlan;

/* A symbol a tasklet body reads, by the address of its name in the body
 * (the evaluator passes the same pointer each time), and its slot
 * (G_MAXUINT: none, read through the bindings table). */
typedef struct {
  const char *name;
  guint slot;
} SymRef;
typedef struct _ProgramPlan ProgramPlan;

/* A copy into an access node from another access node. */
typedef struct {
  Port *src, *dst;
  WeirWcr wcr;
} Copy;

static void copy_free(gpointer p) {
  Copy *c = p;
  port_free(c->src);
  port_free(c->dst);
  g_free(c);
}

/* How one argument container of a nested program is bound. */
typedef struct {
  Port *port;  /* region of the outer container, or NULL (unconnected) */
  Port *check; /* the output memlet when both directions exist, or NULL */
} NestedArg;

struct _NodePlan {
  const WeirNode *n; /* borrowed */
  char *desc;
  /* MAP_ENTRY */
  GPtrArray *children; /* NodePlan* (borrowed), topological order */
  IExpr *rb, *re, *rs; /* per parameter */
  guint n_params;
  /* TASKLET */
  Port **in; /* per input connector (NULL: no memlet) */
  guint n_in;
  GPtrArray **out; /* per output connector: Port* (owned) */
  guint n_out;
  GArray *sym_refs; /* SymRef: the symbols the body has read so far */
  /* ACCESS */
  GPtrArray *copies; /* Copy* */
  /* NESTED */
  ProgramPlan *nested; /* borrowed from the plan cache */
  NestedArg *args;     /* per nested container */
  guint n_args;
  IExpr *sym_values; /* per symbol_map entry */
  guint n_sym_values;
};

typedef struct {
  const WeirState *s;
  WeirScopes *scopes;
  GPtrArray *nodes;       /* NodePlan* (owned), topological order */
  GPtrArray *top;         /* NodePlan* (borrowed): top level */
  GPtrArray *transitions; /* WeirTransition* (borrowed) leaving s, by id */
} StatePlan;

struct _ProgramPlan {
  const WeirGraph *g;
  GHashTable *index; /* container name -> index + 1 */
  SymIndex syms;     /* symbol slots of the program's instances */
  GPtrArray *states; /* StatePlan*, parallel to g->states */
};

static void node_plan_free(gpointer p) {
  NodePlan *np = p;
  g_free(np->desc);
  g_clear_pointer(&np->children, g_ptr_array_unref);
  iexprs_free(np->rb, np->n_params);
  iexprs_free(np->re, np->n_params);
  iexprs_free(np->rs, np->n_params);
  for (guint i = 0; i < np->n_in; i++)
    port_free(np->in[i]);
  g_free(np->in);
  for (guint i = 0; i < np->n_out; i++)
    g_ptr_array_unref(np->out[i]);
  g_free(np->out);
  g_clear_pointer(&np->sym_refs, g_array_unref);
  g_clear_pointer(&np->copies, g_ptr_array_unref);
  if (np->args) {
    /* np->nested may be freed already: the cache frees in any order */
    for (guint i = 0; i < np->n_args; i++) {
      port_free(np->args[i].port);
      port_free(np->args[i].check);
    }
    g_free(np->args);
  }
  iexprs_free(np->sym_values, np->n_sym_values);
  g_free(np);
}

static void state_plan_free(gpointer p) {
  StatePlan *sp = p;
  if (!sp)
    return;
  weir_scopes_free(sp->scopes);
  g_clear_pointer(&sp->top, g_ptr_array_unref);
  g_clear_pointer(&sp->nodes, g_ptr_array_unref);
  g_clear_pointer(&sp->transitions, g_ptr_array_unref);
  g_free(sp);
}

static void program_plan_free(gpointer p) {
  ProgramPlan *pp = p;
  g_clear_pointer(&pp->states, g_ptr_array_unref);
  g_hash_table_unref(pp->index);
  g_hash_table_unref(pp->syms.index);
  g_free(pp);
}

typedef struct {
  guint64 max_transitions;
  GHashTable *plans; /* WeirGraph* -> ProgramPlan* (lookup only) */
} Ctx;

static ProgramPlan *plan_program(Ctx *ctx, const WeirGraph *g, GError **error);

static gboolean container_lookup(const ProgramPlan *pp, const char *name,
                                 guint *out) {
  gpointer v = name ? g_hash_table_lookup(pp->index, name) : NULL;
  if (!v)
    return FALSE;
  *out = GPOINTER_TO_UINT(v) - 1;
  return TRUE;
}

/* A port for subset on container `name` of memlet m. */
static Port *make_port(ProgramPlan *pp, const WeirState *s, const WeirMemlet *m,
                       const char *name, const WeirSubset *subset,
                       GError **error) {
  guint ci;
  if (!container_lookup(pp, name, &ci)) {
    g_autofree char *d = weir_describe_memlet(s, m);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: unknown container '%s'", d, name ? name : "");
    return NULL;
  }
  const WeirContainer *c = g_ptr_array_index(pp->g->containers, ci);
  if (subset->rank != c->shape->len) {
    g_autofree char *d = weir_describe_memlet(s, m);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: subset of rank %u on '%s', which has rank %u", d,
                subset->rank, name, c->shape->len);
    return NULL;
  }
  return port_new(&pp->syms, s, m, subset, ci);
}

static gboolean plan_tasklet(ProgramPlan *pp, const WeirState *s, NodePlan *np,
                             GError **error) {
  const WeirNode *n = np->n;
  if (!n->code || !n->code->checked) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: the tasklet body is not type-checked", np->desc);
    return FALSE;
  }
  np->n_in = n->in_conns->len;
  np->in = g_new0(Port *, np->n_in ? np->n_in : 1);
  np->n_out = n->out_conns->len;
  np->out = g_new0(GPtrArray *, np->n_out ? np->n_out : 1);
  for (guint k = 0; k < np->n_out; k++)
    np->out[k] = g_ptr_array_new_with_free_func((GDestroyNotify)port_free);
  np->sym_refs = g_array_new(FALSE, FALSE, sizeof(SymRef));
  for (guint e = 0; e < s->edges->len; e++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, e);
    if (!m->data)
      continue;
    if (m->dst == n->id) {
      for (guint k = 0; k < np->n_in; k++) {
        if (g_strcmp0(m->dst_conn, g_ptr_array_index(n->in_conns, k)) != 0)
          continue;
        if (np->in[k]) {
          g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                      "%s: input connector '%s' has more than one memlet",
                      np->desc, m->dst_conn);
          return FALSE;
        }
        if (!(np->in[k] = make_port(pp, s, m, m->data, m->subset, error)))
          return FALSE;
      }
    }
    if (m->src == n->id) {
      for (guint k = 0; k < np->n_out; k++) {
        if (g_strcmp0(m->src_conn, g_ptr_array_index(n->out_conns, k)) != 0)
          continue;
        Port *p = make_port(pp, s, m, m->data, m->subset, error);
        if (!p)
          return FALSE;
        g_ptr_array_add(np->out[k], p);
      }
    }
  }
  return TRUE;
}

/* Copies into an access node: memlets whose source is an access node. */
static gboolean plan_access(ProgramPlan *pp, const WeirState *s, NodePlan *np,
                            GError **error) {
  np->copies = g_ptr_array_new_with_free_func(copy_free);
  for (guint e = 0; e < s->edges->len; e++) {
    const WeirMemlet *m = g_ptr_array_index(s->edges, e);
    if (m->dst != np->n->id || !m->data)
      continue;
    const WeirNode *src = weir_state_node(s, m->src);
    if (!src || src->kind != WEIR_NODE_ACCESS)
      continue;
    const char *dst_name = np->n->data;
    const WeirSubset *src_sub, *dst_sub;
    const char *src_name;
    if (g_strcmp0(m->data, src->data) == 0 ||
        g_strcmp0(m->data, dst_name) != 0) {
      /* subset on the source, `other` (or the same subset) on the dst */
      src_name = m->data;
      src_sub = m->subset;
      dst_sub = m->other ? m->other : m->subset;
    } else {
      src_name = src->data;
      dst_sub = m->subset;
      src_sub = m->other ? m->other : m->subset;
    }
    Copy *c = g_new0(Copy, 1);
    c->wcr = m->wcr;
    g_ptr_array_add(np->copies, c);
    if (!(c->src = make_port(pp, s, m, src_name, src_sub, error)) ||
        !(c->dst = make_port(pp, s, m, dst_name, dst_sub, error)))
      return FALSE;
  }
  return TRUE;
}

static gboolean plan_map(ProgramPlan *pp, NodePlan *np) {
  const WeirMap *map = np->n->map;
  np->n_params = map->params->len;
  guint n = np->n_params ? np->n_params : 1;
  np->rb = g_new0(IExpr, n);
  np->re = g_new0(IExpr, n);
  np->rs = g_new0(IExpr, n);
  for (guint k = 0; k < np->n_params; k++) {
    const WeirRange *r = &g_array_index(map->ranges, WeirRange, k);
    sym_slot(&pp->syms, g_ptr_array_index(map->params, k));
    iexpr_init(&np->rb[k], &pp->syms, r->begin);
    iexpr_init(&np->re[k], &pp->syms, r->end);
    iexpr_init(&np->rs[k], &pp->syms, r->step);
  }
  np->children = g_ptr_array_new();
  return TRUE;
}

/* Finds the memlets of a nested node's connector named after container
 * `name`: the input memlet, and the output memlets. */
static gboolean plan_nested(Ctx *ctx, ProgramPlan *pp, const WeirState *s,
                            NodePlan *np, GError **error) {
  const WeirNode *n = np->n;
  np->nested = plan_program(ctx, n->nested, error);
  if (!np->nested) {
    g_prefix_error(error, "%s: ", np->desc);
    return FALSE;
  }
  const WeirGraph *ng = n->nested;
  np->n_args = ng->containers->len;
  np->args = g_new0(NestedArg, np->n_args ? np->n_args : 1);
  for (guint j = 0; j < ng->containers->len; j++) {
    const WeirContainer *c = g_ptr_array_index(ng->containers, j);
    if (c->transient)
      continue;
    const WeirMemlet *in = NULL, *out = NULL;
    guint n_out = 0;
    for (guint e = 0; e < s->edges->len; e++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, e);
      if (!m->data)
        continue;
      if (m->dst == n->id && g_strcmp0(m->dst_conn, c->name) == 0)
        in = m;
      if (m->src == n->id && g_strcmp0(m->src_conn, c->name) == 0) {
        if (!out)
          out = m;
        n_out++;
      }
    }
    if (n_out > 1) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: output connector '%s' has %u memlets; the interpreter "
                  "binds each nested argument to one region",
                  np->desc, c->name, n_out);
      return FALSE;
    }
    if (out && out->wcr != WEIR_WCR_NONE) {
      g_autofree char *d = weir_describe_memlet(s, out);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: write-conflict resolution on the output of a nested "
                  "program is not supported by the interpreter",
                  d);
      return FALSE;
    }
    const WeirMemlet *first = in ? in : out;
    if (!first)
      continue;
    if (!(np->args[j].port =
              make_port(pp, s, first, first->data, first->subset, error)))
      return FALSE;
    if (in && out &&
        !(np->args[j].check =
              make_port(pp, s, out, out->data, out->subset, error)))
      return FALSE;
  }
  guint nb = n->symbol_map ? n->symbol_map->len : 0;
  np->sym_values = g_new0(IExpr, nb ? nb : 1);
  np->n_sym_values = nb;
  for (guint k = 0; k < nb; k++) {
    const WeirSymbolBinding *b = g_ptr_array_index(n->symbol_map, k);
    iexpr_init(&np->sym_values[k], &pp->syms, b->value);
  }
  return TRUE;
}

static StatePlan *plan_state(Ctx *ctx, ProgramPlan *pp, const WeirState *s,
                             GError **error) {
  StatePlan *sp = g_new0(StatePlan, 1);
  sp->s = s;
  sp->nodes = g_ptr_array_new_with_free_func(node_plan_free);
  sp->top = g_ptr_array_new();
  sp->transitions = g_ptr_array_new();
  sp->scopes = weir_state_scopes(s, error);
  if (!sp->scopes) {
    state_plan_free(sp);
    return NULL;
  }
  /* node id -> NodePlan, to attach children to their map entry */
  g_autoptr(GHashTable) by_id = g_hash_table_new(g_direct_hash, g_direct_equal);
  for (guint k = 0; k < sp->scopes->order->len; k++) {
    guint id = g_array_index(sp->scopes->order, guint, k);
    const WeirNode *n = weir_state_node(s, id);
    NodePlan *np = g_new0(NodePlan, 1);
    np->n = n;
    np->desc = weir_describe_node(s, n);
    g_ptr_array_add(sp->nodes, np);
    g_hash_table_insert(by_id, GUINT_TO_POINTER(id), np);
    gboolean ok = TRUE;
    switch (n->kind) {
    case WEIR_NODE_ACCESS:
      ok = plan_access(pp, s, np, error);
      break;
    case WEIR_NODE_TASKLET:
      ok = plan_tasklet(pp, s, np, error);
      break;
    case WEIR_NODE_MAP_ENTRY:
      ok = plan_map(pp, np);
      break;
    case WEIR_NODE_NESTED:
      ok = plan_nested(ctx, pp, s, np, error);
      break;
    case WEIR_NODE_LIBRARY:
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: library node '%s' is not expanded; expand it first",
                  np->desc, n->op ? n->op : "");
      ok = FALSE;
      break;
    case WEIR_NODE_MAP_EXIT:
    case WEIR_NODE_KIND_COUNT:
      break;
    }
    if (!ok) {
      state_plan_free(sp);
      return NULL;
    }
    guint parent = weir_scopes_parent(sp->scopes, id);
    if (parent == 0) {
      g_ptr_array_add(sp->top, np);
    } else {
      NodePlan *pnp = g_hash_table_lookup(by_id, GUINT_TO_POINTER(parent));
      g_assert(pnp && pnp->children); /* entries precede their contents */
      g_ptr_array_add(pnp->children, np);
    }
  }
  for (guint t = 0; t < pp->g->transitions->len; t++) {
    WeirTransition *tr = g_ptr_array_index(pp->g->transitions, t);
    if (tr->src == s->id)
      g_ptr_array_add(sp->transitions, tr);
  }
  return sp;
}

/* The plan of g, from the cache or built now (with all its states and the
 * programs nested in them). */
static ProgramPlan *plan_program(Ctx *ctx, const WeirGraph *g, GError **error) {
  ProgramPlan *pp = g_hash_table_lookup(ctx->plans, g);
  if (pp)
    return pp;
  pp = g_new0(ProgramPlan, 1);
  pp->g = g;
  pp->index = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    g_hash_table_insert(pp->index, c->name, GUINT_TO_POINTER(i + 1));
  }
  pp->syms.index = g_hash_table_new(g_str_hash, g_str_equal);
  pp->states = g_ptr_array_new_with_free_func(state_plan_free);
  /* Registered before the states are planned: node plans borrow it. */
  g_hash_table_insert(ctx->plans, (gpointer)g, pp);
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    StatePlan *sp = plan_state(ctx, pp, s, error);
    if (!sp)
      return NULL; /* pp stays in the cache, freed with it */
    g_ptr_array_add(pp->states, sp);
  }
  return pp;
}

/* Refuses library nodes anywhere in g (nested programs included). */
static gboolean check_expanded(const WeirGraph *g, GError **error) {
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(s->nodes, k);
      if (n->kind == WEIR_NODE_LIBRARY) {
        g_autofree char *d = weir_describe_node(s, n);
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                    "%s: library node '%s' is not expanded; expand it first", d,
                    n->op ? n->op : "");
        return FALSE;
      }
      if (n->kind == WEIR_NODE_NESTED && n->nested &&
          !check_expanded(n->nested, error)) {
        g_autofree char *d = weir_describe_node(s, n);
        g_prefix_error(error, "%s: ", d);
        return FALSE;
      }
    }
  }
  return TRUE;
}

/* -------------------------------------------------------------- instances */

/* One execution of a program: its bindings and buffers. */
typedef struct {
  Ctx *ctx;
  ProgramPlan *plan;
  Syms syms;       /* owned: symbol values (syms.bindings by name) */
  Buffer *buffers; /* one per container, owned */
  guint n_buffers;
} Instance;

/* A new instance of plan with no symbol bound yet. */
static Instance *instance_new(Ctx *ctx, ProgramPlan *plan) {
  Instance *in = g_new0(Instance, 1);
  in->ctx = ctx;
  in->plan = plan;
  syms_init(&in->syms, &plan->syms);
  in->n_buffers = plan->g->containers->len;
  in->buffers = g_new0(Buffer, in->n_buffers ? in->n_buffers : 1);
  return in;
}

static void instance_free(Instance *in) {
  if (!in)
    return;
  for (guint i = 0; i < in->n_buffers; i++)
    buffer_clear(&in->buffers[i]);
  g_free(in->buffers);
  syms_clear(&in->syms);
  g_free(in);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Instance, instance_free)

/* Own zero-filled storage covering the layout, filled with the container's
 * constant data when it has some. */
static gboolean buffer_allocate(Buffer *b, GError **error) {
  const WeirContainer *c = b->c;
  gint64 span;
  if (!buffer_span(b, &span)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "container '%s': the size overflows", c->name);
    return FALSE;
  }
  gsize bytes = (gsize)(span ? span : 1) * b->esize;
  b->own = g_try_malloc0(bytes);
  if (!b->own) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "container '%s': cannot allocate %" G_GSIZE_FORMAT " bytes",
                c->name, bytes);
    return FALSE;
  }
  b->base = b->own;
  b->limit = span;
  b->offset = 0;
  if (!c->initial)
    return TRUE;
  gint64 volume = buffer_volume(b);
  gsize size;
  const guint8 *data = g_bytes_get_data(c->initial, &size);
  if (size != (gsize)volume * b->esize) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "container '%s': constant data has %" G_GSIZE_FORMAT
                " bytes, expected %" G_GINT64_FORMAT,
                c->name, size, volume * (gint64)b->esize);
    return FALSE;
  }
  /* Element j of the data is the j-th index in row-major order. */
  g_autofree gint64 *idx = g_new0(gint64, b->rank ? b->rank : 1);
  for (gint64 j = 0; j < volume; j++) {
    gint64 addr = 0;
    for (guint d = 0; d < b->rank; d++)
      addr += idx[d] * b->strides[d];
    guint8 *dst = b->own + (gsize)addr * b->esize;
    const guint8 *src = data + (gsize)j * b->esize;
#if G_BYTE_ORDER == G_LITTLE_ENDIAN
    memcpy(dst, src, b->esize);
#else
    for (gsize k = 0; k < b->esize; k++)
      dst[k] = src[b->esize - 1 - k];
#endif
    for (guint d = b->rank; d-- > 0;) {
      if (++idx[d] < b->shape[d])
        break;
      idx[d] = 0;
    }
  }
  return TRUE;
}

/* Binds a caller's tensor to a top-level argument container. */
static gboolean buffer_bind_tensor(Buffer *b, WeirTensor *t, GError **error) {
  const WeirContainer *c = b->c;
  gboolean same = t->dtype == b->dtype && t->rank == b->rank;
  for (guint d = 0; same && d < b->rank; d++)
    same = t->shape[d] == b->shape[d];
  if (!same) {
    g_autofree char *want = type_string(b->dtype, b->rank, b->shape);
    g_autofree char *got = weir_tensor_describe(t);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "argument '%s': expected %s, got %s", c->name, want, got);
    return FALSE;
  }
  gint64 span;
  if (!buffer_span(b, &span) || span > t->count) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "argument '%s': the container's strides reach beyond the "
                "tensor's %" G_GINT64_FORMAT " elements",
                c->name, t->count);
    return FALSE;
  }
  b->base = t->data;
  b->limit = t->count;
  b->offset = 0;
  return TRUE;
}

static gboolean buffer_bind_view(Buffer *b, const Buffer *outer, const Port *p,
                                 GError **error);

static int cmp_names(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

gboolean weir_interp_check_argument_names(const WeirGraph *g, GHashTable *args,
                                          gboolean constants_compiled,
                                          GError **error) {
  if (!args)
    return TRUE;
  g_autoptr(GPtrArray) keys = g_ptr_array_new();
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, args);
  while (g_hash_table_iter_next(&it, &key, NULL))
    g_ptr_array_add(keys, key);
  g_ptr_array_sort(keys, cmp_names);
  for (guint k = 0; k < keys->len; k++) {
    const char *name = g_ptr_array_index(keys, k);
    const WeirContainer *c = weir_graph_container(g, name);
    if (!c) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "argument '%s' does not name a container of program '%s'",
                  name, g->name);
      return FALSE;
    }
    if (c->transient) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "argument '%s' names a transient container", name);
      return FALSE;
    }
    if (constants_compiled && c->initial) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "argument '%s' names a constant container (its data is "
                  "compiled into the kernel)",
                  name);
      return FALSE;
    }
  }
  return TRUE;
}

/* Gives every container of the instance its storage.  args: for a
 * top-level run, name -> WeirTensor*; for a nested run NULL, and views
 * come from np (the nested node) over outer. */
static gboolean instance_bind(Instance *in, GHashTable *args,
                              const NodePlan *np, Instance *outer,
                              GError **error) {
  const WeirGraph *g = in->plan->g;
  if (!weir_interp_check_argument_names(g, args, FALSE, error))
    return FALSE;
  for (guint i = 0; i < in->n_buffers; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    Buffer *b = &in->buffers[i];
    if (!buffer_layout(b, c, in->syms.bindings, error))
      return FALSE;
    if (c->transient) {
      if (!buffer_allocate(b, error))
        return FALSE;
    } else if (np) {
      const NestedArg *a = &np->args[i];
      if (a->port) {
        if (!buffer_bind_view(b, &outer->buffers[a->port->container], a->port,
                              error))
          return FALSE;
      } else if (c->initial) {
        if (!buffer_allocate(b, error))
          return FALSE;
      } else {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "argument '%s' of the nested program is not connected",
                    c->name);
        return FALSE;
      }
    } else {
      WeirTensor *t = args ? g_hash_table_lookup(args, c->name) : NULL;
      if (t) {
        if (!buffer_bind_tensor(b, t, error))
          return FALSE;
      } else if (c->initial) {
        /* a constant: its data, argument optional */
        if (!buffer_allocate(b, error))
          return FALSE;
      } else {
        g_autofree char *want = type_string(b->dtype, b->rank, b->shape);
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "missing argument '%s' (%s)", c->name, want);
        return FALSE;
      }
    }
    b->bound = TRUE;
  }
  return TRUE;
}

/* Binds b (a nested argument, layout already evaluated) to the region of
 * outer given by p (evaluated).  The region's extent must equal b's shape;
 * dimensions of size 1 may be dropped on either side. */
static gboolean buffer_bind_view(Buffer *b, const Buffer *outer, const Port *p,
                                 GError **error) {
  const WeirContainer *c = b->c;
  gboolean ok = TRUE;
  g_autofree guint *map = g_new0(guint, b->rank ? b->rank : 1);
  if (p->rank == b->rank) {
    for (guint d = 0; d < b->rank; d++) {
      ok = ok && p->rsize[d] == b->shape[d];
      map[d] = d;
    }
  } else {
    /* match the non-unit dimensions in order */
    guint o = 0;
    for (guint d = 0; ok && d < b->rank; d++) {
      if (b->shape[d] == 1) {
        map[d] = G_MAXUINT;
        continue;
      }
      while (o < p->rank && p->rsize[o] == 1)
        o++;
      if (o == p->rank || p->rsize[o] != b->shape[d])
        ok = FALSE;
      else
        map[d] = o++;
    }
    while (ok && o < p->rank && p->rsize[o] == 1)
      o++;
    ok = ok && o == p->rank;
  }
  if (!ok) {
    g_autofree char *want = type_string(b->dtype, b->rank, b->shape);
    g_autofree char *got = shape_string(p->rank, p->rsize);
    g_autofree char *sub = weir_subset_to_string(p->subset);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: nested argument '%s' is %s but the subset '%s' of '%s' "
                "has extent %s",
                p->desc, c->name, want, sub, outer->c->name, got);
    return FALSE;
  }
  if (b->dtype != outer->dtype) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: nested argument '%s' is %s but '%s' is %s", p->desc,
                c->name, weir_dtype_name(b->dtype), outer->c->name,
                weir_dtype_name(outer->dtype));
    return FALSE;
  }
  gint64 start;
  if (p->volume > 0) {
    g_autoptr(GError) local = NULL;
    if (!buffer_address(outer, p->rbegin, &start, &local)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                  "%s: nested argument '%s': %s", p->desc, c->name,
                  local->message);
      return FALSE;
    }
    /* the last element must be inside the outer array too */
    g_autofree gint64 *last = g_new0(gint64, p->rank ? p->rank : 1);
    for (guint d = 0; d < p->rank; d++)
      last[d] = p->rbegin[d] + (p->rsize[d] - 1) * p->rstep[d];
    gint64 unused;
    if (!buffer_address(outer, last, &unused, &local)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                  "%s: nested argument '%s': %s", p->desc, c->name,
                  local->message);
      return FALSE;
    }
  } else {
    start = outer->offset;
  }
  b->base = outer->base;
  b->limit = outer->limit;
  b->offset = start;
  for (guint d = 0; d < b->rank; d++)
    b->strides[d] =
        map[d] == G_MAXUINT ? 0 : outer->strides[map[d]] * p->rstep[map[d]];
  return TRUE;
}

/* --------------------------------------------------------------- execution */

static gboolean run_nodes(Instance *in, const StatePlan *sp, GPtrArray *nodes,
                          GError **error);
static gboolean run_program(Instance *in, GError **error);

typedef struct {
  Instance *in;
  NodePlan *np;
  guint next_ref; /* the symbol reference expected next (tasklet_symbol) */
} TaskletCall;

static gboolean tasklet_read(gpointer user, guint input, const gint64 *idx,
                             guint n_idx, WeirValue *out, GError **error) {
  TaskletCall *call = user;
  NodePlan *np = call->np;
  const char *conn =
      input < np->n_in ? g_ptr_array_index(np->n->in_conns, input) : "?";
  Port *p = input < np->n_in ? np->in[input] : NULL;
  if (!p) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "input connector '%s' has no memlet", conn);
    return FALSE;
  }
  Buffer *b = &call->in->buffers[p->container];
  gint64 addr;
  if (!port_address(p, b, idx, n_idx, &addr, error)) {
    g_prefix_error(error, "reading connector '%s' (memlet %u): ", conn,
                   p->m->id);
    return FALSE;
  }
  *out = buffer_load(b, addr);
  return TRUE;
}

static gboolean tasklet_write(gpointer user, guint output, const gint64 *idx,
                              guint n_idx, WeirValue value, GError **error) {
  TaskletCall *call = user;
  NodePlan *np = call->np;
  const char *conn =
      output < np->n_out ? g_ptr_array_index(np->n->out_conns, output) : "?";
  GPtrArray *ports = output < np->n_out ? np->out[output] : NULL;
  if (!ports || ports->len == 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "output connector '%s' has no memlet", conn);
    return FALSE;
  }
  for (guint k = 0; k < ports->len; k++) {
    Port *p = g_ptr_array_index(ports, k);
    Buffer *b = &call->in->buffers[p->container];
    gint64 addr;
    if (!port_address(p, b, idx, n_idx, &addr, error)) {
      g_prefix_error(error, "writing connector '%s' (memlet %u): ", conn,
                     p->m->id);
      return FALSE;
    }
    buffer_write(b, addr, value, p->m->wcr);
  }
  return TRUE;
}

static gboolean read_symbol(gpointer user, const char *name, gint64 *out,
                            GError **error) {
  GHashTable *bindings = user;
  const gint64 *v = g_hash_table_lookup(bindings, name);
  if (!v) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "unbound symbol '%s'",
                name);
    return FALSE;
  }
  *out = *v;
  return TRUE;
}

/* Reads a symbol by its slot: the body's name pointers are remembered in
 * the node's plan, in the order the body first reads them, so only the
 * first read of each name hashes it, and a run that reads them in the same
 * order finds each at the first try. */
static gboolean tasklet_symbol(gpointer user, const char *name, gint64 *out,
                               GError **error) {
  TaskletCall *call = user;
  const Syms *sy = &call->in->syms;
  GArray *refs = call->np->sym_refs;
  const SymRef *ref = NULL;
  if (call->next_ref < refs->len &&
      g_array_index(refs, SymRef, call->next_ref).name == name)
    ref = &g_array_index(refs, SymRef, call->next_ref++);
  for (guint k = 0; k < refs->len && !ref; k++)
    if (g_array_index(refs, SymRef, k).name == name) {
      ref = &g_array_index(refs, SymRef, k);
      call->next_ref = k + 1;
    }
  if (!ref) {
    gpointer v = g_hash_table_lookup(sy->si->index, name);
    SymRef r = {name, v ? GPOINTER_TO_UINT(v) - 1 : G_MAXUINT};
    g_array_append_val(refs, r);
    ref = &g_array_index(refs, SymRef, refs->len - 1);
    call->next_ref = refs->len;
  }
  if (ref->slot != G_MAXUINT && sy->bound[ref->slot]) {
    *out = sy->slots[ref->slot];
    return TRUE;
  }
  return read_symbol(sy->bindings, name, out, error);
}

static gboolean run_tasklet(Instance *in, NodePlan *np, GError **error) {
  for (guint k = 0; k < np->n_in; k++)
    if (np->in[k] && !port_eval(np->in[k], &in->syms, error))
      goto fail;
  for (guint k = 0; k < np->n_out; k++)
    for (guint j = 0; j < np->out[k]->len; j++)
      if (!port_eval(g_ptr_array_index(np->out[k], j), &in->syms, error))
        goto fail;
  TaskletCall call = {in, np};
  WeirCodeEnv env = {
      .read = tasklet_read,
      .write = tasklet_write,
      .symbol = tasklet_symbol,
      .user = &call,
  };
  if (!weir_code_run(np->n->code, &env, error))
    goto fail;
  return TRUE;
fail:
  g_prefix_error(error, "%s: ", np->desc);
  return FALSE;
}

/* Element-by-element copy in row-major order over both subsets. */
static gboolean run_copy(Instance *in, Copy *c, GError **error) {
  if (!port_eval(c->src, &in->syms, error) ||
      !port_eval(c->dst, &in->syms, error))
    return FALSE;
  if (c->src->volume != c->dst->volume) {
    g_autofree char *s1 = weir_subset_to_string(c->src->subset);
    g_autofree char *s2 = weir_subset_to_string(c->dst->subset);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                "%s: copy of %" G_GINT64_FORMAT " elements ('%s' on '%s') "
                "into %" G_GINT64_FORMAT " elements ('%s' on '%s')",
                c->src->desc, c->src->volume, s1,
                in->buffers[c->src->container].c->name, c->dst->volume, s2,
                in->buffers[c->dst->container].c->name);
    return FALSE;
  }
  Buffer *sb = &in->buffers[c->src->container];
  Buffer *db = &in->buffers[c->dst->container];
  Port *ps = c->src, *pd = c->dst;
  memset(ps->cnt, 0, sizeof(gint64) * (ps->rank ? ps->rank : 1));
  memset(pd->cnt, 0, sizeof(gint64) * (pd->rank ? pd->rank : 1));
  for (gint64 k = 0; k < ps->volume; k++) {
    gint64 sa, da;
    if (!port_address(ps, sb, ps->cnt, ps->rank, &sa, error) ||
        !port_address(pd, db, pd->cnt, pd->rank, &da, error)) {
      g_prefix_error(error, "%s: copy: ", ps->desc);
      return FALSE;
    }
    buffer_write(db, da, buffer_load(sb, sa), c->wcr);
    for (guint d = ps->rank; d-- > 0;) {
      if (++ps->cnt[d] < ps->rsize[d])
        break;
      ps->cnt[d] = 0;
    }
    for (guint d = pd->rank; d-- > 0;) {
      if (++pd->cnt[d] < pd->rsize[d])
        break;
      pd->cnt[d] = 0;
    }
  }
  return TRUE;
}

/* Iterates parameter k of a map and everything inside (recursively over the
 * remaining parameters).  Ranges are evaluated with the outer parameters
 * bound, so a range may depend on them. */
static gboolean run_map_dim(Instance *in, const StatePlan *sp, NodePlan *np,
                            gint64 **slots, guint k, GError **error) {
  if (k == np->n_params)
    return run_nodes(in, sp, np->children, error);
  gint64 b, e, st;
  if (!iexpr_eval(&np->rb[k], &in->syms, &b, error) ||
      !iexpr_eval(&np->re[k], &in->syms, &e, error) ||
      !iexpr_eval(&np->rs[k], &in->syms, &st, error)) {
    g_prefix_error(error, "%s: range of '%s': ", np->desc,
                   (const char *)g_ptr_array_index(np->n->map->params, k));
    return FALSE;
  }
  if (st <= 0) {
    g_set_error(
        error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
        "%s: range of '%s' has step %" G_GINT64_FORMAT " (must be positive)",
        np->desc, (const char *)g_ptr_array_index(np->n->map->params, k), st);
    return FALSE;
  }
  for (gint64 v = b; v < e; v += st) {
    *slots[k] = v;
    if (!run_map_dim(in, sp, np, slots, k + 1, error))
      return FALSE;
    if (e - v <= st)
      break; /* the next value would be >= e (and might overflow) */
  }
  return TRUE;
}

static gboolean run_map(Instance *in, const StatePlan *sp, NodePlan *np,
                        GError **error) {
  guint n = np->n_params;
  g_autofree gint64 **slots = g_new0(gint64 *, n ? n : 1);
  g_autofree gint64 *saved = g_new0(gint64, n ? n : 1);
  g_autofree gboolean *existed = g_new0(gboolean, n ? n : 1);
  for (guint k = 0; k < n; k++) {
    const char *name = g_ptr_array_index(np->n->map->params, k);
    gint64 *old = g_hash_table_lookup(in->syms.bindings, name);
    existed[k] = old != NULL;
    saved[k] = old ? *old : 0;
    slots[k] = syms_set(&in->syms, name, 0);
  }
  gboolean ok = run_map_dim(in, sp, np, slots, 0, error);
  /* Restore the outer meaning of the names, innermost first. */
  for (guint k = n; k-- > 0;) {
    const char *name = g_ptr_array_index(np->n->map->params, k);
    if (existed[k])
      *slots[k] = saved[k];
    else
      syms_unset(&in->syms, name);
  }
  return ok;
}

static gboolean run_nested(Instance *in, NodePlan *np, GError **error) {
  const WeirNode *n = np->n;
  g_autoptr(Instance) child = instance_new(in->ctx, np->nested);
  guint ns = n->symbol_map ? n->symbol_map->len : 0;
  for (guint k = 0; k < ns; k++) {
    const WeirSymbolBinding *sb = g_ptr_array_index(n->symbol_map, k);
    gint64 v;
    if (!iexpr_eval(&np->sym_values[k], &in->syms, &v, error)) {
      g_prefix_error(error, "%s: symbol '%s': ", np->desc, sb->name);
      return FALSE;
    }
    syms_set(&child->syms, sb->name, v);
  }
  const WeirGraph *ng = np->nested->g;
  for (guint j = 0; j < ng->containers->len; j++) {
    NestedArg *a = &np->args[j];
    if (!a->port)
      continue;
    if (!port_eval(a->port, &in->syms, error))
      goto fail;
    if (a->check) {
      if (!port_eval(a->check, &in->syms, error))
        goto fail;
      gboolean same = a->check->container == a->port->container;
      for (guint d = 0; same && d < a->port->rank; d++)
        same = a->check->rbegin[d] == a->port->rbegin[d] &&
               a->check->rsize[d] == a->port->rsize[d] &&
               (a->check->rsize[d] <= 1 ||
                a->check->rstep[d] == a->port->rstep[d]);
      if (!same) {
        const WeirContainer *c = g_ptr_array_index(ng->containers, j);
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                    "connector '%s' reads and writes different regions "
                    "(memlets %u and %u)",
                    c->name, a->port->m->id, a->check->m->id);
        goto fail;
      }
    }
  }
  if (!instance_bind(child, NULL, np, in, error) || !run_program(child, error))
    goto fail;
  return TRUE;
fail:
  g_prefix_error(error, "%s: ", np->desc);
  return FALSE;
}

static gboolean run_nodes(Instance *in, const StatePlan *sp, GPtrArray *nodes,
                          GError **error) {
  for (guint k = 0; k < nodes->len; k++) {
    NodePlan *np = g_ptr_array_index(nodes, k);
    switch (np->n->kind) {
    case WEIR_NODE_ACCESS:
      for (guint c = 0; c < np->copies->len; c++)
        if (!run_copy(in, g_ptr_array_index(np->copies, c), error))
          return FALSE;
      break;
    case WEIR_NODE_TASKLET:
      if (!run_tasklet(in, np, error))
        return FALSE;
      break;
    case WEIR_NODE_MAP_ENTRY:
      if (!run_map(in, sp, np, error))
        return FALSE;
      break;
    case WEIR_NODE_NESTED:
      if (!run_nested(in, np, error))
        return FALSE;
      break;
    case WEIR_NODE_MAP_EXIT: /* data was written by the inner memlets */
    case WEIR_NODE_LIBRARY:  /* refused when planning */
    case WEIR_NODE_KIND_COUNT:
      break;
    }
  }
  return TRUE;
}

static StatePlan *find_state(const ProgramPlan *pp, guint id) {
  for (guint i = 0; i < pp->states->len; i++) {
    StatePlan *sp = g_ptr_array_index(pp->states, i);
    if (sp->s->id == id)
      return sp;
  }
  return NULL;
}

/* A transition condition reading containers of one element. */
typedef struct {
  Instance *in;
  GPtrArray *reads; /* container names, by input slot (borrowed) */
} CondCall;

static gboolean cond_read(gpointer user, guint input, const gint64 *idx,
                          guint n_idx, WeirValue *out, GError **error) {
  CondCall *call = user;
  (void)idx;
  const WeirContainer *c =
      input < call->reads->len
          ? weir_graph_container(call->in->plan->g,
                                 g_ptr_array_index(call->reads, input))
          : NULL;
  if (!c || n_idx != 0) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "condition input %u is not a container of one element", input);
    return FALSE;
  }
  for (guint i = 0; i < call->in->n_buffers; i++) {
    const Buffer *b = &call->in->buffers[i];
    if (b->c == c && b->bound) {
      *out = buffer_load(b, b->offset);
      return TRUE;
    }
  }
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
              "container '%s' has no storage", c->name);
  return FALSE;
}

static gboolean cond_symbol(gpointer user, const char *name, gint64 *out,
                            GError **error) {
  CondCall *call = user;
  return read_symbol(call->in->syms.bindings, name, out, error);
}

static gboolean run_program(Instance *in, GError **error) {
  const WeirGraph *g = in->plan->g;
  StatePlan *sp = find_state(in->plan, g->start);
  guint64 taken = 0;
  WeirCodeEnv env = {.symbol = read_symbol, .user = in->syms.bindings};
  g_autoptr(GArray) values = g_array_new(FALSE, FALSE, sizeof(gint64));
  if (!sp) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "program '%s': start state %u does not exist", g->name,
                g->start);
    return FALSE;
  }
  for (;;) {
    if (!run_nodes(in, sp, sp->top, error))
      return FALSE;
    const WeirTransition *next = NULL;
    for (guint t = 0; t < sp->transitions->len && !next; t++) {
      const WeirTransition *tr = g_ptr_array_index(sp->transitions, t);
      gboolean holds = TRUE;
      g_autoptr(GPtrArray) reads =
          tr->condition ? weir_transition_data_reads(g, tr) : NULL;
      CondCall call = {in, reads};
      WeirCodeEnv denv = {
          .read = cond_read, .symbol = cond_symbol, .user = &call};
      if (tr->condition &&
          !weir_code_eval_condition(tr->condition, reads->len ? &denv : &env,
                                    &holds, error)) {
        g_prefix_error(error,
                       "transition %u (state %u -> %u), condition "
                       "'%s': ",
                       tr->id, tr->src, tr->dst, tr->condition_text);
        return FALSE;
      }
      if (holds)
        next = tr;
    }
    if (!next)
      return TRUE;
    if (taken >= in->ctx->max_transitions) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_RUNTIME,
                  "program '%s': stopped after %" G_GUINT64_FORMAT
                  " transitions (max_transitions) in state %u '%s'; the "
                  "program may not terminate",
                  g->name, taken, sp->s->id, sp->s->label);
      return FALSE;
    }
    taken++;
    /* simultaneous assignment: evaluate everything first */
    g_array_set_size(values, next->assign_values->len);
    for (guint a = 0; a < next->assign_values->len; a++) {
      if (!weir_expr_eval(g_ptr_array_index(next->assign_values, a),
                          in->syms.bindings, &g_array_index(values, gint64, a),
                          error)) {
        g_prefix_error(error,
                       "transition %u (state %u -> %u), assignment "
                       "to '%s': ",
                       next->id, next->src, next->dst,
                       (const char *)g_ptr_array_index(next->assign_names, a));
        return FALSE;
      }
    }
    for (guint a = 0; a < next->assign_names->len; a++)
      syms_set(&in->syms, g_ptr_array_index(next->assign_names, a),
               g_array_index(values, gint64, a));
    sp = find_state(in->plan, next->dst);
    if (!sp) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "transition %u: state %u does not exist", next->id,
                  next->dst);
      return FALSE;
    }
  }
}

/* ------------------------------------------------------------ entry point */

gboolean weir_interpret(WeirGraph *g, GHashTable *symbols, GHashTable *args,
                        const WeirInterpOptions *options, GError **error) {
  g_return_val_if_fail(g != NULL, FALSE);
  g_return_val_if_fail(error == NULL || *error == NULL, FALSE);
  if (!weir_graph_validate(g, error) || !check_expanded(g, error) ||
      !weir_graph_check_memory(g, symbols, options ? options->max_memory : 0,
                               error))
    return FALSE;
  Ctx ctx = {
      .max_transitions = options && options->max_transitions
                             ? options->max_transitions
                             : DEFAULT_MAX_TRANSITIONS,
      .plans = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                     program_plan_free),
  };
  gboolean ok = FALSE;
  ProgramPlan *pp = plan_program(&ctx, g, error);
  if (pp) {
    Instance *in = instance_new(&ctx, pp);
    if (symbols) {
      GHashTableIter it;
      gpointer k, v;
      g_hash_table_iter_init(&it, symbols);
      while (g_hash_table_iter_next(&it, &k, &v))
        syms_set(&in->syms, k, *(const gint64 *)v);
    }
    ok = instance_bind(in, args, NULL, NULL, error) && run_program(in, error);
    instance_free(in);
  }
  g_hash_table_unref(ctx.plans);
  return ok;
}
