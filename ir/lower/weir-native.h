/* weir-native.h — native (library-call) implementations of library nodes.
 *
 * An implementation choice is the STRING attribute "impl" of a library node
 * ("pure", "blas", "weir", "im2col", "col2im", "direct", "depthwise").  "pure"
 * means the maps-and-tasklets expansion of ir/lower/expand/; a *native*
 * implementation is not expanded: the code generator keeps the node and
 * asks the emitter registered here for (op, impl) to print C for it —
 * usually a call to a static helper function (printed once per generated
 * file) and a BLAS call.
 *
 * A node without the attribute gets weir_native_default_impl: "weir"
 * (Weir's own GEMM, core/kernels/) for Gemm and MatMul in f32, "blas" in
 * f64; for Conv in f32 "depthwise" (Weir's vectorized kernel,
 * core/kernels/depthwise.c) when it is depthwise (group == C == M) and
 * "winograd" (Weir's Winograd F(4x4, 3x3), core/kernels/winograd.c) for
 * the 3x3 stride-1 convolutions whose shape its record prefers, "weir"
 * otherwise (2-D only; 1x1 included); in f32 "winograd" for
 * ConvGradInput where its record prefers it (the forward rule), else "weir" for
 * ConvGradFilter and ConvGradInput (Weir's GEMM, core/kernels/
 * conv-grad.c; else "im2col" and "col2im", on BLAS) and "direct" for
 * MaxPoolGrad (2-D only); "weir" (Weir's int8 GEMM, core/kernels/
 * gemm-int8.c) for MatMulInteger, QLinearMatMul, QLinearMatMulBias,
 * ConvInteger and QLinearConv when it accepts the node; "weir" (Weir's
 * MaxPool kernel, core/kernels/pool.c) for MaxPool in f32, u8 and i8 and
 * for GlobalAveragePool in f32; "weir" (Weir's row kernels,
 * core/kernels/norm.c) for Softmax, LogSoftmax and LayerNormalization in
 * f32 and f64 when the reduced axes are innermost; "weir-bf16" (Weir's bf16
 * GEMM, core/kernels/gemm-bf16.c) for Gemm, MatMul and Conv whose first operand
 * is bf16 when it accepts the node; "weir" (Weir's sum over axes,
 * core/kernels/reduce.c) for SumTo, ReduceSum and ReduceMean in f32 and f64
 * when it accepts the node;
 * "pure" for everything else, and for any node a native implementation
 * does not accept (non-row-major storage, other dtypes or ranks).
 *
 * A native implementation may declare tunable parameters (WeirNativeParam);
 * a node's values are its "impl_params" attribute (below).
 *
 * The reference interpreter stays strict (it refuses library nodes); tests
 * compare native code against the interpreter on the pure expansion.
 */
#ifndef WEIR_NATIVE_H
#define WEIR_NATIVE_H

#include "weir-graph.h"

G_BEGIN_DECLS

/* Connectors in0.. / out0.. passed to an emitter: the collectives
 * (Allreduce, Broadcast) take a bucket of up to this many tensors, the
 * multi-tensor OptimizerUpdate up to this many inputs (a training program
 * splits larger ones, core/train.c). */
#define WEIR_NATIVE_MAX_PORTS 512

/* One connector of the node being emitted. */
typedef struct {
  const WeirContainer *c; /* borrowed; NULL for an omitted input */
  const char *ptr;        /* C expression of a pointer to element 0 */
} WeirNativeOperand;

typedef struct _WeirNativeEmit WeirNativeEmit;
struct _WeirNativeEmit {
  const WeirGraph *g;
  const WeirState *s;
  const WeirNode *n;
  WeirNativeOperand in[WEIR_NATIVE_MAX_PORTS];
  WeirNativeOperand out[WEIR_NATIVE_MAX_PORTS];
  /* The extra inputs of the node's epilogue (connectors epi0, epi1, ...),
   * set only when the implementation takes the epilogue (takes_epilogue);
   * the epilogue's code and connectors are n's attributes
   * (ir/lower/weir-expand.h). */
  WeirNativeOperand epi[WEIR_NATIVE_MAX_PORTS];
  /* The statements for the node (lines ending in '\n', no indentation);
   * the emitter appends, the code generator indents and pastes. */
  GString *code;
  /* C text of a symbolic expression (program symbols of the shapes). */
  char *(*expr_c)(WeirNativeEmit *e, WeirExpr *x);
  /* Records a file-scope helper (static function), printed once per file
   * in name order; text is copied on first use. */
  void (*helper)(WeirNativeEmit *e, const char *name, const char *text);
  /* Records a library the generated unit must link with ("openblas"). */
  void (*library)(WeirNativeEmit *e, const char *name);
  /* Name of the int status variable: emitters of calls that can fail
   * (allocation) write "<status> |= call(...);" and set uses_status. */
  const char *status;
  gboolean uses_status;
  gpointer priv; /* the code generator's */
  /* Scratch memory for the node's call: returns the C expression (owned
   * text) of a 64-byte aligned "uint8_t *" to at least `bytes` bytes
   * (borrowed; an expression of the program symbols).  The block is part
   * of the kernel's workspace (docs/codegen.md, "Scratch"): allocated once,
   * reused by every run, shared by the native calls of one function (they
   * run one after another), its contents undefined on entry.  Helpers that
   * need temporaries take it instead of calling malloc. */
  char *(*scratch)(WeirNativeEmit *e, WeirExpr *bytes);
  /* Data derived once from a bound constant, when the kernel is loaded
   * (docs/codegen.md, "Pre-packed constants"): a block of `bytes` bytes
   * (64-byte aligned) that the C statement `pack` fills ("@SRC@" in it
   * stands for a "const void *" to src's data, "@DST@" for a "void *" to
   * the block), calling the file-scope helper `helper` (its text
   * `helper_text`; NULL for none).  Returns the C expression (owned) of a
   * "const void *" to the block, which is NULL at run time when the
   * caller did not pre-pack (the call must then work from src); or NULL
   * when src (borrowed) is not a bound, never written constant of the
   * function.  The same pack statement of the same constant gets one
   * block.  NULL when the code generator offers none. */
  char *(*prepacked)(WeirNativeEmit *e, const WeirContainer *src, gint64 bytes,
                     const char *helper, const char *helper_text,
                     const char *pack);
};

/* A tunable integer parameter of a native implementation (a blocking size,
 * an unroll factor): its name, what it does, and the values `weir tune`
 * tries (docs/tuning.md).  The emitter reads the node's value with
 * weir_native_param(e->n, name, default) and uses its own default when the
 * node has none, so a node that was never tuned is emitted as before. */
typedef struct {
  const char *name;     /* lower-case identifier: "kc" */
  const char *doc;      /* one line */
  const gint64 *values; /* candidates, in the order tried (static data) */
  guint n_values;
} WeirNativeParam;

typedef struct {
  const char *op;
  const char *impl;
  /* Whether the implementation handles node n of state s; *reason (owned)
   * says why not. */
  gboolean (*accepts)(const WeirGraph *g, const WeirState *s, const WeirNode *n,
                      char **reason);
  /* Prints the code for the node; errors name the node. */
  gboolean (*emit)(WeirNativeEmit *e, GError **error);
  /* Optional: whether emit applies n's epilogue itself (in its store).
   * When it says so, the code generator leaves the epilogue on the node
   * (weir_epilogue_split_unless_native) and passes its extra inputs in
   * e->epi; otherwise (or NULL) the epilogue becomes a map after the
   * node's code. */
  gboolean (*takes_epilogue)(const WeirGraph *g, const WeirState *s,
                             const WeirNode *n);
  /* Tunable parameters (static array, may be NULL): the names a node's
   * "impl_params" attribute may give for this implementation. */
  const WeirNativeParam *params;
  guint n_params;
  /* Optional: whether the implementation is n's default in place of the
   * op's usual one (weir_native_default_impl asks it for Conv's and
   * ConvGradInput's "winograd": where it was measured faster, by shape). */
  gboolean (*prefer)(const WeirGraph *g, const WeirState *s, const WeirNode *n);
} WeirNativeImpl;

/* Registers impl (static record, borrowed); replaces one of the same
 * (op, impl).  Also registers an expansion (op, impl) in the operator
 * library that only sets the node's "impl" attribute, so the tier-1
 * transformation expand-library-node selects native implementations. */
WEIR_API void weir_native_register(const WeirNativeImpl *impl);
/* Every registered native implementation as "op/impl", sorted (transfer
 * full). */
/**
 * weir_native_impls:
 * Returns: (transfer full) (array zero-terminated=1):
 */
WEIR_API char **weir_native_impls(void);
/* The container on connector in<k> (input) or out<k> of library node n of
 * state s, or NULL.  (Internal to libweir.) */
const WeirContainer *weir_native_port(const WeirGraph *g, const WeirState *s,
                                      const WeirNode *n, gboolean input,
                                      guint k);
/* A sum over axes (SumTo, ReduceSum, ReduceMean) as the kernels of
 * core/kernels/reduce.c see it: input 0, row-major, viewed as
 * [s0, k0, s, k1] (dimensions of size 1 dropped, neighbours of the same
 * kind merged), summed over s0 and s, so that output 0 is [k0, k1] in its
 * own row-major order.  `count` is s0 * s (the divisor of a mean).  Every
 * expression is owned (weir_native_reduce_clear). */
typedef struct {
  WeirExpr *s0, *k0, *s, *k1, *count;
} WeirNativeReduce;
/* Fills r for node n of state s (SumTo, ReduceSum, ReduceMean with the
 * axes as attribute); FALSE with *reason (owned) when n's kept and summed
 * axes alternate more often than [s0, k0, s, k1] allows, or when n is
 * not such a sum (axes given as input, noop_with_empty_axes, shapes that
 * disagree).  (Internal to libweir.) */
gboolean weir_native_reduce_layout(const WeirGraph *g, const WeirState *s,
                                   const WeirNode *n, WeirNativeReduce *r,
                                   char **reason);
void weir_native_reduce_clear(WeirNativeReduce *r);
/* The native implementation (op, impl), or NULL ("pure" is never native).
 * Only what is registered: weir_init() registers the built-in ones. */
WEIR_API const WeirNativeImpl *weir_native_lookup(const char *op,
                                                  const char *impl);

/* Whether the implementation impl of op accepts n, as its accepts()
 * says: for an implementation whose operand checks start with another
 * one's.  An unregistered impl is a refusal naming it. */
WEIR_API gboolean weir_native_accepts_as(const char *op, const char *impl,
                                         const WeirGraph *g, const WeirState *s,
                                         const WeirNode *n, char **reason);
/* The implementation used for n when it has no "impl" attribute. */
WEIR_API const char *weir_native_default_impl(const WeirGraph *g,
                                              const WeirState *s,
                                              const WeirNode *n);
/* The implementation chosen for n: its "impl" attribute, or the default. */
const char *weir_native_chosen(const WeirGraph *g, const WeirState *s,
                               const WeirNode *n);
/* The native implementation the code generator uses for n (its "impl"
 * attribute, or the default), or NULL when n is expanded.  An explicit
 * native choice that does not accept n is an error naming the node. */
WEIR_API gboolean weir_native_choice(const WeirGraph *g, const WeirState *s,
                                     const WeirNode *n,
                                     const WeirNativeImpl **out,
                                     GError **error);

/* Sets "impl" = impl on every library node of op in g and in nested
 * programs (the CLI's --impl op=impl), removing their "impl_params" (the
 * implementation's defaults apply).  impl must be "pure" or registered
 * for op; *count (optional) receives the number of nodes. */
WEIR_API gboolean weir_native_set_impl(WeirGraph *g, const char *op,
                                       const char *impl, guint *count,
                                       GError **error);

/* ------------------------------------------------ implementation params
 *
 * The parameters of a node's implementation are the STRINGS attribute
 * "impl_params" of the library node: entries "name=value" (value a decimal
 * integer), sorted by name, each name at most once.  Being an attribute,
 * they are part of the program: saved in JSON, workspaces and history, part
 * of the compile cache key (the program's structure), and seen by the
 * emitter through e->n.  The text form used by the CLI, the tuning
 * database and reports is "name=value,name=value" ("" for none). */

/* The value of parameter name in n's "impl_params", or dflt when n has no
 * such entry (or the entry is malformed: weir_native_choice reports
 * that). */
WEIR_API gint64 weir_native_param(const WeirNode *n, const char *name,
                                  gint64 dflt);
/* n's "impl_params" in text form, "" when it has none (transfer full). */
WEIR_API char *weir_native_params_text(const WeirNode *n);
/* Sets n's "impl_params" from text ("kc=128,mc=96"; NULL or "" removes
 * the attribute), sorted by name.  Every name must be a parameter of ni
 * (ni NULL, e.g. for "pure": none is allowed); errors name the entry. */
WEIR_API gboolean weir_native_set_params(WeirNode *n, const WeirNativeImpl *ni,
                                         const char *text, GError **error);
/* Whether text is a valid parameter list for ni (as weir_native_set_params
 * takes it). */
WEIR_API gboolean weir_native_params_valid(const WeirNativeImpl *ni,
                                           const char *text, GError **error);
/* Checks n's "impl_params" against ni (NULL: must be absent): well-formed,
 * sorted, and every name a parameter of ni.  Errors name the node. */
WEIR_API gboolean weir_native_check_params(const WeirState *s,
                                           const WeirNode *n,
                                           const WeirNativeImpl *ni,
                                           GError **error);

/* Expands, with their chosen expansions, all library nodes of g (not of
 * nested programs) that are not implemented natively; repeats until only
 * native ones are left.  All-or-nothing, like weir_expand_all. */
WEIR_API gboolean weir_native_expand_rest(WeirGraph *g, GError **error);

G_END_DECLS

#endif
