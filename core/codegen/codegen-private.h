/* codegen-private.h — what the files of the code generator share.
 *
 * The code generator (weir-codegen.h) is one pass over a validated,
 * prepared copy of the program, printing C with a small printf-style
 * emitter (Out) and a switch over node kinds.  Its files, by job, from the
 * top down:
 *   files.c     finding a node's code in the source, writing the files;
 *   codegen.c   the public entry points, the backend table and the C
 *               backend's record with its emitter table; assembles the
 *               file;
 *   prepare.c   the copy of the program the backend emits;
 *   function.c  one C function per program (entry point, nested ones);
 *   control.c   the state machine as structured loops and branches, or
 *               gotos;
 *   dataflow.c  the dataflow of a state: copies, nested programs, native
 *               library calls;
 *   map.c       maps as loop nests: pragmas, accumulators;
 *   tasklet.c   tasklet bodies (typing follows ir/code.c);
 *   access.c    memlets on connectors, stores with write-conflict
 *               resolution (when an update is atomic);
 *   storage.c   where each container lives, declarations, zero fill;
 *   expr.c      symbolic expressions and element addresses;
 *   abi.c       the ABI's names and orders: prefix, arguments, bound
 *               constants;
 *   text.c      the emitter, identifiers (one Namer per C scope), the
 *               static inline helpers of the generated code, literals.
 *
 * Layering: a file calls by name only files below it in that list.  The
 * IR nests, so emission recurses back up in two places: the body of a map
 * is a scope level of nodes again (map.c needs dataflow.c), and a nested
 * node is a program again (dataflow.c needs function.c).  Those two calls
 * go through the backend's emitter table (Emitters, reached as gen->emit),
 * which codegen.c fills once in the backend's record; the files thus form
 * no import cycle (the test module-cycles checks it), and a backend with
 * kernels of its own can substitute an emitter and reuse the others.  A
 * new emitter goes into the file of its job, below its callers; a call
 * upward becomes an entry of Emitters, not an extern call.
 *
 * Conventions (all files):
 *  - Functions shared between these files start with cg_; they are
 *    internal to libweir (hidden) like everything here.
 *  - Generation never stops half-way on bad input: emitters record the
 *    first error in Gen.error (cg_gen_fail) and keep going on safe
 *    defaults; the entry point checks it at the end.
 *  - Returned text is owned by the caller (g_free) unless said otherwise;
 *    C names from a Namer are borrowed from it.
 *  - Determinism: everything is walked in id order; hash tables are only
 *    used for lookups and membership.
 *  - Semantics follow ir/interp.c and ir/code.c exactly, with the
 *    differences listed in tasklet.c.
 */
#ifndef WEIR_CODEGEN_PRIVATE_H
#define WEIR_CODEGEN_PRIVATE_H

#include "weir-codegen.h"
#include "weir-kernels.h" /* weir_kernel_row_major */
#include "weir-native.h"
#include "weir.h"

G_BEGIN_DECLS

/* ------------------------------------------------------------------ emitter */

typedef struct {
  GString *s;
  guint depth; /* indentation level (2 spaces each) */
} Out;

/* Identifiers of one C scope.  Each is reserved once; kinds keep the name
 * spaces of the IR apart ("c:" containers, "s:" symbols, "p:" map
 * parameters, ...). */
typedef struct {
  GHashTable *used; /* C identifiers taken (set, owned keys) */
  GHashTable *map;  /* kind:name -> C identifier (owned) */
} Namer;

/* ------------------------------------------------------------------ helpers */

/* Static inline functions of the generated code.  Typed helpers exist per
 * dtype; Gen.helpers holds one bit per (kind, dtype) used, and the helpers
 * are emitted in enum order, so the output does not depend on the order of
 * first use. */
typedef enum {
  H_FLOORDIV, /* i64: floor division, Python semantics */
  H_MOD,      /* i64: modulo with the sign of the divisor */
  H_MIN,      /* per dtype; floats propagate NaN */
  H_MAX,
  H_DIV, /* i32, i64: C division (truncating), 0 for a zero divisor */
  H_REM,
  H_ABS,        /* i32, i64 */
  H_F2I,        /* i32, i64, u8: saturating conversion from double */
  H_ATOMIC_MIN, /* f32, f64, i32, i64, u8: compare-and-swap loops */
  H_ATOMIC_MAX,
  H_ALIGN64, /* size rounded up to 64 bytes */
  H_EXP,     /* f32: Weir's exp (range reduction + polynomial, vectorizes) */
  H_TANH,    /* f32: on H_EXP */
  H_ERF,     /* f32: on H_EXP */
  H_PHILOX,  /* i64: the first word of Philox-4x32-10 (philox()) */
  H_HALF,    /* f16, bf16: weir_<t>_load (bits to float) and weir_<t>_bits
              * (double to bits, nearest even) */
  H_ATOMIC_HALF, /* f16, bf16: weir_atomic_<wcr>_<t>, compare-and-swap loops
                  * on the 16 bits (on H_HALF, H_MIN, H_MAX) */
  H_COUNT
} HelperKind;

typedef struct _Emitters Emitters;

typedef struct {
  const Emitters *emit; /* the backend's emitter table (borrowed, static) */
  gboolean openmp;
  guint32 helpers[H_COUNT]; /* bit per dtype */
  GString *defs;            /* nested functions, in definition order */
  Namer *file_names;        /* identifiers at file scope */
  char *prefix;
  guint nested_functions;
  GError *error; /* first error, owned */
  /* Native implementations (core/native.c): helper name -> text, and the
   * libraries to link (sets; printed sorted). */
  GHashTable *native_helpers;
  GHashTable *libraries;
  /* Helper units (WeirCodegenOptions.helper_units): the helpers recorded
   * so far by the native call being emitted (names, owned), and per
   * helper (native or pre-pack) the helpers recorded before it by the
   * call that recorded it first: name -> GPtrArray of names (owned).  A
   * helper's own unit pastes those before it (cg_helper_deps_note). */
  GPtrArray *emit_helpers;
  GHashTable *helper_deps;
  /* Set by emit_c with helper units: the helpers not pasted into the
   * program's units ("n:" or "p:" and the name, for native and pre-pack
   * helpers) and the prototypes of their entry points (owned). */
  GHashTable *not_pasted;
  char *prototypes;
  /* the headers the program's units paste for helpers with units of
   * their own: key as not_pasted -> text (owned) */
  GHashTable *headers;
  /* Bound constants: GBytes* of their data (shared by the prepared copy)
   * -> 1 + index in the constant table (weir_codegen_constants). */
  GHashTable *const_index;
  /* Pre-packed constants (WeirNativeEmit.prepacked; docs/codegen.md):
   * the size of the constant table (the block is consts[n_consts]), the
   * block's bytes so far, its fill statements in order (the body of
   * <prefix>_prepack), pack statement -> offset (C text, owned), and the
   * helpers they call (name -> text, owned). */
  guint n_consts;
  gint64 prepack_bytes;
  GString *prepack_body;
  GHashTable *prepack_at;
  GHashTable *prepack_helpers;
  /* The entry point's workspace size function (emit_c prints it). */
  char *workspace_fn;
  /* Compile units (weir_codegen_units): the entry point's states are cut
   * into part functions of about unit_bytes of C when split is set. */
  gsize unit_bytes;
  gboolean split;
  GPtrArray *parts; /* Part*, in call order (owned) */
  /* Instrumented build (WeirCodegenOptions.profile): the file-scope names
   * of the times array and the clock function (borrowed from file_names),
   * and the state and node id of each slot, in slot order (owned). */
  gboolean profile;
  const char *prof_times, *prof_now;
  GArray *prof_slots; /* gint64 pairs */
} Gen;

/* A part of the entry point (split mode): a function of its own unit. */
typedef struct {
  char *name;          /* C name (owned) */
  char *body;          /* statements at depth 1 (owned) */
  char *text;          /* the whole definition, once built (owned) */
  char *params;        /* its parameters after "arena" (", int64_t t"; owned) */
  gboolean *used;      /* per container of the entry (owned) */
  GHashTable *syms;    /* program symbols it reads (set, owned keys) */
  GHashTable *helpers; /* native helper names it calls (set, owned keys) */
  gboolean uses_status;
  gboolean uses_scratch; /* the function's scratch block */
} Part;

/* ----------------------------------------------------------------- literals */

/* C precedence levels of printed expressions (higher binds tighter). */
enum {
  P_COND = 2,
  P_OR = 3,
  P_AND = 4,
  P_EQ = 8,
  P_REL = 9,
  P_ADD = 11,
  P_MUL = 12,
  P_UNARY = 14,
  P_ATOM = 16,
};

/* ------------------------------------------------------ generated functions */

/* Where a container lives in one generated function. */
typedef enum {
  ST_NONE,    /* not referenced: nothing is declared */
  ST_ARG,     /* args[k] of the entry point */
  ST_CONST,   /* static const array (constant data, never written) */
  ST_STACK,   /* local array */
  ST_ARENA,   /* block of the function's arena */
  ST_PRIVATE, /* local array in the body of a map inside a parallel loop */
  ST_VIEW,    /* pointer and strides passed to a nested function */
} Storage;

typedef struct {
  WeirContainer *c; /* borrowed */
  Storage st;
  const char *cname;  /* borrowed from the function's namer */
  gboolean written;   /* some memlet writes it */
  gboolean used;      /* referenced by the generated code */
  gboolean init;      /* constant data copied into its storage at entry */
  guint bound;        /* constant data: 1 + index in consts[], or 0 when it
                         is printed as a literal */
  guint arg_index;    /* ST_ARG */
  guint private_map;  /* ST_PRIVATE: the map entry whose body declares it */
  char *at;           /* ST_ARENA: its offset in the arena (C text, owned) */
  GPtrArray *strides; /* WeirExpr* per dimension, in elements */
  WeirExpr *span;     /* elements of storage (ST_STACK/ARENA/PRIVATE) */
} CInfo;

typedef struct _Fn Fn;

struct _Fn {
  Gen *gen;
  WeirGraph *g; /* validated, expanded; borrowed */
  gboolean entry;
  char *fname;      /* C name of the function */
  char *where;      /* "program 'x'" or "program 'x', node 9 (nested 'blk')" */
  Namer *names;     /* identifiers of the function body */
  GPtrArray *cinfo; /* CInfo*, parallel to g->containers */
  GHashTable *cbyname;     /* container name -> CInfo* */
  GHashTable *synth;       /* synthetic symbol ("$...") -> C name (owned) */
  GHashTable *params;      /* names of all map parameters (set) */
  GHashTable *assigned;    /* symbols some transition assigns (set) */
  GHashTable *sym_used;    /* program symbols read (set, owned keys) */
  GHashTable *sym_written; /* program symbols assigned (set, owned keys) */
  GHashTable *synth_used;  /* synthetic symbols referenced (set, owned) */
  gboolean uses_done;      /* "goto done" emitted */
  gboolean uses_status;    /* calls a nested function that can fail */
  gboolean uses_consts;    /* reads consts[] (itself or through a call) */
  /* The scratch block: bytes of the largest need of the native calls and
   * nested calls that use it (owned; NULL when nothing does), and its C
   * name (borrowed from names).  It is the last block of the arena. */
  WeirExpr *scratch;
  const char *scratch_name;
  char *scratch_at; /* its offset in the arena (C text, owned) */
  /* The arena's size in bytes as an expression of the program's symbols
   * (owned; NULL without an arena), set by cg_fn_storage. */
  WeirExpr *arena_bytes;
  /* Split mode (the entry point, gen->split): containers some part uses
   * (owned array parallel to cinfo), and the part being generated. */
  gboolean *part_used;
  Part *part;
};

typedef struct _Frame Frame;
typedef struct _Tasklet Tasklet;

/* ------------------------------------------------------------------- frames */

/* One open map while its body is generated. */
struct _Frame {
  Frame *up;
  const WeirNode *entry;
  gboolean par_root;  /* carries "#pragma omp parallel for" */
  gboolean in_region; /* this loop runs inside a parallel or simd loop */
  gboolean simd;      /* wants "#pragma omp simd" */
  gboolean simd_drop; /* ... which a conflicting write or an atomic forbids */
  const char *why_drop;
  /* with par_root: the number of leading parameters whose iterations
   * "omp parallel for" (with its collapse) divides among the threads; the
   * other loops run whole inside one thread.  0: all of them (tiled maps,
   * where threads share tiles). */
  guint n_split;
  GPtrArray *accs; /* Acc* this map's loops declare (owned), or NULL */
};

/* A local accumulator for one write-conflict-resolved memlet of a tasklet
 * inside the loops of a map (the host), whose element does not depend on
 * the loops from `level` inward: the tasklet updates the local, which is
 * declared before loop `level` of the host and combined into memory once
 * after it (see cg_emit_map). */
typedef struct {
  const WeirMemlet *m; /* borrowed */
  CInfo *ci;
  guint level;      /* index of the first loop (tile loops included) inside */
  const char *name; /* borrowed from the function's namer */
  gboolean atomic;  /* the combine needs an atomic update */
} Acc;

/* ------------------------------------------------------------------- states */

typedef struct {
  Fn *f;
  WeirState *s;
  WeirScopes *scopes;
  GHashTable *children; /* entry id -> GArray of node ids, in order */
  GArray *top;          /* node ids at the top level, in order */
  GHashTable *hosted;   /* memlets that got an accumulator (a set) */
} StateCtx;

/* ----------------------------------------------------------------- emitters */

/* The emitters through which the IR's recursion goes back up (see the
 * layering at the top of this file), reached as gen->emit: a map's body
 * is a scope level of nodes again, a nested node a program again.  A
 * backend fills the table once, in its record (codegen.c); one that emits
 * kernels of its own can substitute an entry and reuse the rest. */
struct _Emitters {
  /* The code of nodes ids (a scope level, in order) inside the maps of fr
   * (NULL: the top level of the state).  C backend: cg_emit_nodes. */
  void (*nodes)(StateCtx *sc, Out *o, GArray *ids, Frame *fr);
  /* The C function of program g, as cg_fn_generate (C backend) says. */
  char *(*function)(Gen *gen, WeirGraph *g, const char *fname,
                    const char *where, const WeirNode *call,
                    const WeirMemlet *const *bind, gboolean *can_fail,
                    gboolean *uses_consts, WeirExpr **arena_bytes);
};

/* ------------------------------------------------------------------- text.c */

/* An empty emitter at indentation depth. */
Out cg_out_new(guint depth);

/* One line: indentation, the formatted text, a newline. */
G_GNUC_PRINTF(2, 3)
void cg_out_line(Out *o, const char *fmt, ...);

/* Appends text (lines ending in '\n'), indented by o's depth. */
void cg_out_paste(Out *o, const char *text);

/* The text of o (transfer full); o is done. */
char *cg_out_free(Out *o);

/* A C identifier from any text: other characters become '_', a leading
 * digit or underscore gets a 'v' in front, reserved words an '_' behind. */
char *cg_sanitize_identifier(const char *text);

/* Text from a model file for a comment: printable ASCII without the
 * characters that could end the comment or splice lines, at most 60
 * characters. */
char *cg_sanitize_comment(const char *text);

/* A scope whose identifiers must differ from those parent (may be NULL)
 * has taken so far.  Free with cg_namer_free. */
Namer *cg_namer_new(const Namer *parent);
void cg_namer_free(Namer *n);

/* A new unique identifier: base itself when free, else base_2, base_3...
 * (borrowed from the namer).  base must be a valid identifier. */
const char *cg_namer_fresh_exact(Namer *n, const char *base);

/* A new unique identifier based on any text (borrowed from the namer). */
const char *cg_namer_fresh(Namer *n, const char *text);

/* The identifier of kind:name, created on first use (borrowed). */
const char *cg_namer_get(Namer *n, const char *kind, const char *name);

/* Records the first error of the generation (later ones are dropped). */
G_GNUC_PRINTF(3, 4)
void cg_gen_fail(Gen *gen, WeirErrorCode code, const char *fmt, ...);

/* C type of a value of dtype, and of its storage (bool is stored as one
 * byte, 0 or 1). */
const char *cg_ctype(WeirDType t);

const char *cg_storage_type(WeirDType t);

/* Name of a helper; marks it (and what it needs) as used.  (borrowed
 * static storage is not possible for typed names, so the caller frees) */
char *cg_helper(Gen *gen, HelperKind k, WeirDType t);

/* f16 and bf16 live in memory as uint16_t bit patterns and in C
 * expressions as float: the load of element text x (transfer full of the
 * result) and the bits of a value (double or float text) for a store. */
char *cg_half_load(Gen *gen, WeirDType t, const char *x);
char *cg_half_bits(Gen *gen, WeirDType t, const char *value);

/* Appends the text of every helper gen used, in HelperKind order. */
void cg_emit_helpers(Gen *gen, GString *s);

/* Notes that helper name was just recorded (the first time): its
 * dependencies are the helpers the current native call recorded before
 * it (gen->emit_helpers). */
void cg_helper_deps_note(Gen *gen, const char *name);

/* A function definition at file scope: "static" at kw, its declarator
 * up to the body's brace at brace, the body up to end (after its closing
 * brace). */
typedef struct {
  char *name;
  gsize kw, brace, end;
} Def;

/* The function definitions at file scope of helper text t that start
 * with "static" and are not inline, in text order (Def; the caller frees
 * each name). (helper-scan.c) */
GArray *cg_helper_defs(const char *t);

/* Adds the identifiers text calls ("name(") to the set called. */
void cg_add_calls(GHashTable *called, const char *text);

/* An integer constant as C text; *prec receives its precedence. */
char *cg_format_int(gint64 v, int *prec);

/* A value (already of dtype t) as a C constant of type t. */
char *cg_format_value(WeirValue v, int *prec);

/* text wrapped in parentheses when its precedence (*prec, read only once
 * every argument is evaluated, so "cg_wrap(f(&p), &p, m)" is well defined) is
 * below min.  Takes text over. */
char *cg_wrap(char *text, const int *prec, int min);

/* Text for a comment of the generated code (cg_sanitize_comment). */
char *cg_comment_text(const char *text);

/* ------------------------------------------------------------------- expr.c */

/* C name of a symbol of an expression: a map parameter, a program symbol
 * (recorded as used) or a synthetic one. */
const char *cg_fn_symbol(Fn *f, const char *name);

/* The container name of f (borrowed); an error when there is none. */
CInfo *cg_fn_container(Fn *f, const char *name);

/* A symbolic expression as int64_t C text; *prec receives its precedence. */
char *cg_sym_c(Fn *f, WeirExpr *e, int *prec);

/* An expression as text without precedence concerns (a whole argument,
 * bound or initializer). */
char *cg_sym_text(Fn *f, WeirExpr *e);

/* The element offset of absolute indices idx (one per dimension), kept as
 * (index, stride) pairs, entries 2d and 2d + 1, so the text reads like the
 * subscript: "i * 64 + j", "r * W".  (transfer full) */
GPtrArray *cg_elem_offset(const CInfo *ci, WeirExpr *const *idx);

/* Offset of the first element of a subset.  (transfer full) */
GPtrArray *cg_subset_offset(const CInfo *ci, const WeirSubset *sub);

/* "X[offset]" (marks X used). */
char *cg_elem_ref(Fn *f, CInfo *ci, GPtrArray *off);

/* "X + offset", or "X" for offset 0 (marks X used). */
char *cg_elem_ptr(Fn *f, CInfo *ci, GPtrArray *off);

/* The value of an element in the container's dtype (bool storage is read
 * as "!= 0", like the interpreter). */
char *cg_elem_load(Fn *f, CInfo *ci, GPtrArray *off, int *prec);

/* sub has one element. */
gboolean cg_subset_is_scalar(const WeirSubset *sub);

/* sub is 0:size:1 in every dimension of c. */
gboolean cg_subset_is_whole(const WeirSubset *sub, const WeirContainer *c);

/* Dimensions of sub whose size is not the constant 1, and their sizes. */
GArray *cg_moving_dims(const WeirSubset *sub, GPtrArray *sizes);

/* A synthetic symbol for a loop variable of generated code. */
WeirExpr *cg_synth_symbol(Fn *f, const char *key, const char *cname);

/* Absolute indices: begin + rel * step in the dimensions `dims` (rel given
 * per entry of dims), begin elsewhere.  (transfer full: free each) */
WeirExpr **cg_subset_indices(const WeirSubset *sub, GArray *dims,
                             WeirExpr **rel);

/* Unrefs the n expressions of v (NULL entries allowed) and frees v. */
void cg_free_exprs(WeirExpr **v, guint n);

/* ----------------------------------------------------------------- access.c */

/* Non-empty memlets on a connector of node, by id (borrowed; free the
 * array). */
GPtrArray *cg_conn_memlets(const WeirState *s, guint node, const char *conn,
                           gboolean input);

/* fr or a map around it carries "omp parallel for". */
gboolean cg_frame_parallel(const Frame *fr);

/* Emits the update of lvalue (of dtype) by value with wcr (not NONE),
 * atomic or not. */
void cg_emit_update(Fn *f, Out *o, WeirDType dtype, const char *lvalue,
                    WeirWcr wcr, const char *value, gboolean atomic);

/* Does the write-conflict resolution into sub (of container ci) from
 * inside fr need an atomic update? */
/* Whether distinct values of the first n_params parameters of map (0: all)
 * write distinct elements of sub, the rest of sub free of the parameters
 * in inner (names of this map's and inner maps' parameters). */
gboolean cg_subset_injective(const WeirSubset *sub, const WeirMap *map,
                             guint n_params, GHashTable *inner);
gboolean cg_store_atomic(Fn *f, Frame *fr, const CInfo *ci,
                         const WeirSubset *sub);

/* Emits lvalue = value, or its update by wcr (value has the element's
 * dtype; for bool storage 0 or 1).  sub is the subset the write belongs
 * to, for the conflict rule. */
void cg_emit_store(Fn *f, Out *o, Frame *fr, const CInfo *ci,
                   const char *lvalue, const WeirSubset *sub, WeirWcr wcr,
                   const char *value);

/* The accumulator an enclosing map holds for memlet m, or NULL. */
const Acc *cg_frame_acc(const Frame *fr, const WeirMemlet *m);

/* ---------------------------------------------------------------- tasklet.c */

/* Text that is true when n (bool or integer) is non-zero. */
char *cg_ast_truth(Fn *f, Tasklet *t, const WeirAst *n, int *prec);

/* C text converting a value of type `from` (text at precedence *prec) to
 * `to` with weir_value_convert's semantics. */
char *cg_convert_text(Gen *gen, char *text, WeirDType from, WeirDType to,
                      int *prec);

/* The C block of tasklet n inside the maps of fr (NULL: top level). */
void cg_emit_tasklet(StateCtx *sc, Out *o, const WeirNode *n, Frame *fr);

/* -------------------------------------------------------------------- map.c */

/* The loop nest of the map of entry, its body inside, under the maps of
 * up (NULL: top level). */
void cg_emit_map(StateCtx *sc, Out *o, const WeirNode *entry, Frame *up);

/* --------------------------------------------------------------- dataflow.c */

/* The code of nodes ids (a scope level, in order) inside the maps of fr.
 * Emitters.nodes of the C backend: other files call it through gen->emit. */
void cg_emit_nodes(StateCtx *sc, Out *o, GArray *ids, Frame *fr);

/* The dataflow of one state as text at depth 0. */
char *cg_state_text(Fn *f, WeirState *s);

/* ---------------------------------------------------------------- control.c */

/* The body of a function: the states' dataflow in control flow. */
char *cg_flow_body(Fn *f);

/* ---------------------------------------------------------------- storage.c */

/* Decides the storage of every container (see Storage). */
void cg_fn_classify(Fn *f, const WeirMemlet *const *bind);

/* "f32[N, 64]" (and strides when not row-major), for comments. */
char *cg_shape_text(const WeirContainer *c);

/* Declarations of the containers the body uses (constants, stack, arena)
 * and the copies of their initial data.  *arena: an arena was allocated
 * (then f->arena_bytes is its size). */
char *cg_fn_storage(Fn *f, gboolean *arena);

/* The declarations a part function of f needs for the containers marked
 * used (arguments, constants, arena blocks at their offsets in f's
 * arena), at depth 1; *uses_consts: some read consts[]. */
char *cg_part_storage(Fn *f, gboolean uses_scratch, gboolean *uses_consts);

/* f may be split into parts: no nested programs, and every container that
 * is not an argument has a fixed size. */
gboolean cg_fn_splittable(const Fn *f);

/* Records that a call of f's body needs `bytes` (borrowed) of scratch
 * memory: f's scratch block grows to the largest need.  Returns the
 * block's C name ("uint8_t *", 64-byte aligned; borrowed from f). */
const char *cg_fn_scratch(Fn *f, WeirExpr *bytes);

/* --------------------------------------------------------------- function.c */

/* Frees f and what it owns (NULL allowed). */
void cg_fn_free(Fn *f);

/* Generates the function for program g (the entry point when call is
 * NULL, else the nested program of node call with arguments bind).
 * Returns its definition, or NULL after an error (in gen).  *uses_consts:
 * the function reads the constant table (a nested one then takes consts[]
 * as a parameter).  *arena_bytes: for a nested function with an arena, its
 * size as an expression of g's symbols (transfer full; else NULL); the
 * function then takes "uint8_t *ws" as its last parameter, a block of that
 * size from the caller's scratch, or NULL to allocate its own arena.
 * Emitters.function of the C backend: other files call it through
 * gen->emit. */
char *cg_fn_generate(Gen *gen, WeirGraph *g, const char *fname,
                     const char *where, const WeirNode *call,
                     const WeirMemlet *const *bind, gboolean *can_fail,
                     gboolean *uses_consts, WeirExpr **arena_bytes);

/* ---------------------------------------------------------------- prepare.c */

/* A copy of g ready for the C backend: epilogues split off, library nodes
 * expanded (except those left to native implementations), validated, with
 * the same arguments and symbols as g.  (transfer full; NULL with error) */
WeirGraph *cg_prepare_c(const WeirGraph *g, GError **error);

/* ----------------------------------------------------------------- backends */

/* A code generation backend: how a validated program becomes source text.
 * prepare lowers a copy of the program to what emit handles; emit prints
 * the source of the prepared copy, with the ABI (entry point prefix,
 * argument and symbol order) of the original program g, using the
 * backend's emitters (be->emitters becomes gen->emit).  The C/OpenMP
 * backend (cg_backend_c) is the only one; another target, or kernels of
 * their own, come in as another entry of the table in codegen.c. */
typedef struct _WeirCodegenBackend WeirCodegenBackend;

struct _WeirCodegenBackend {
  const char *name;
  WeirGraph *(*prepare)(const WeirGraph *g, GError **error);
  /* the source as compile units (char*, transfer full; unit 0 has the
   * entry points) */
  GPtrArray *(*emit)(const WeirCodegenBackend *be, const WeirGraph *g,
                     WeirGraph *prepared, const WeirCodegenOptions *opts,
                     GError **error);
  const Emitters *emitters;
};

/* C11 with OpenMP pragmas (weir-codegen.h describes its ABI). */
extern const WeirCodegenBackend cg_backend_c;

G_DEFINE_AUTOPTR_CLEANUP_FUNC(Namer, cg_namer_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Fn, cg_fn_free)

G_END_DECLS

#endif
