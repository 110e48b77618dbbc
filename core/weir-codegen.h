/* weir-codegen.h — C/OpenMP code generation.
 *
 * Generated code ABI (version 2; docs/codegen.md describes it for users of
 * exported kernels):
 *
 *   int <prefix>_run(void *const args[], const int64_t symbols[],
 *                    const void *const consts[], void *workspace);
 *   size_t <prefix>_workspace_size(const int64_t symbols[]);
 *   int <prefix>_abi_version(void);   returns 2
 *
 *  - <prefix> is weir_codegen_prefix(g): the program name sanitized to a C
 *    identifier.
 *  - args[k] points to the storage of the k-th *argument* container: the
 *    non-transient containers of the program that have no constant data, in
 *    id order (weir_codegen_arguments lists them).  Storage is laid out by
 *    the container's strides, in its dtype (float, double, int32_t, int64_t,
 *    bool as uint8_t, uint8_t).
 *  - symbols[k] is the value of the k-th program symbol (g->symbols order,
 *    sorted by name); symbols that transitions assign are ignored on entry.
 *  - consts[k] points to the data of the k-th *bound constant*
 *    (weir_codegen_constants): the constant containers with more than
 *    WEIR_CODEGEN_LITERAL_MAX elements, row-major, little-endian, as the
 *    program stores them; read only.  Smaller constants are printed into
 *    the source.  The parameter values are therefore never in the
 *    generated code, and a kernel can be run with other weights of the same
 *    shapes.
 *  - workspace is NULL or at least <prefix>_workspace_size(symbols) bytes,
 *    64-byte aligned: the transients of the entry point live there (the
 *    caller allocates it once and reuses it; its contents need not be kept
 *    between calls).  With NULL the kernel allocates its own and frees it
 *    before returning.
 *  - Returns 0 on success, non-zero when transient memory cannot be
 *    allocated.
 * Transients of nested programs and the buffers of library calls (im2col
 * columns) are still allocated per call.  No allocation happens inside
 * loops.
 */
#ifndef WEIR_CODEGEN_H
#define WEIR_CODEGEN_H

#include "weir-graph.h"

G_BEGIN_DECLS

#define WEIR_CODEGEN_ABI_VERSION 2

typedef struct {
  /* Emit OpenMP pragmas for parallel/simd schedules (default TRUE). */
  gboolean openmp;
  /* weir_codegen_units: split a program whose entry point has more than
   * this many bytes of C into compile units of about this size (0: one
   * unit).  weir_codegen_c ignores it. */
  gsize unit_bytes;
  /* Instrumented build (`weir profile`): every top-level node of the entry
   * point's states that emits code is bracketed by two reads of the
   * monotonic clock, and the difference is added to its slot of a
   * file-scope array of the kernel, which three more entry points expose:
   *   int <prefix>_profile_count(void);        number of slots
   *   const int64_t *<prefix>_profile_nodes(void);
   *       2 per slot: the state id and node id of the lowered program
   *       (weir_lower with native and split_epilogues, as the code
   *       generator emits it)
   *   double *<prefix>_profile_times(void);    seconds per slot, summed
   *       over runs (the caller zeroes them)
   * No allocation; the entry point is not split into units.  Default
   * FALSE: the code is then exactly the uninstrumented one. */
  gboolean profile;
  /* weir_codegen_units (the runtime): every kernel helper text (of a
   * native implementation, or of the pre-packing) that defines functions
   * the program's own code calls becomes a unit of its own, after the
   * program's units; it starts with WEIR_CODEGEN_HELPER_UNIT_TAG.  Those
   * functions are hidden symbols there; the program's units declare them
   * instead of pasting the text.  The runtime compiles each helper unit
   * once into an object of the compile cache (docs/codegen.md, "Helper
   * units").  Default FALSE: every helper pasted, static. */
  gboolean helper_units;
} WeirCodegenOptions;

/* The first characters of a helper unit (WeirCodegenOptions.helper_units),
 * followed by the helper's name and the end of the comment. */
#define WEIR_CODEGEN_HELPER_UNIT_TAG "/* weir-helper-unit:"

/* The unit size the runtime splits programs by (WeirCodegenOptions
 * unit_bytes; $WEIR_CODEGEN_UNIT_BYTES overrides it, 0 turns splitting
 * off): about a fifth of ResNet-50's entry point. */
#define WEIR_CODEGEN_UNIT_BYTES 24576

/* The entry-point prefix of g's generated code. (transfer full) */
WEIR_API char *weir_codegen_prefix(const WeirGraph *g);

/* Argument containers in ABI order (borrowed pointers into g; free the
 * array only). */
/**
 * weir_codegen_arguments: (skip)
 */
WEIR_API GPtrArray *weir_codegen_arguments(const WeirGraph *g);

/* ------------------------------------------------------ bound constants */

/* Constants with at most this many elements stay literal in the generated
 * code (shapes, axes, scalars: they help the compiler); larger ones are
 * bound through the kernel ABI (docs/codegen.md). */
#define WEIR_CODEGEN_LITERAL_MAX 16

/* Whether the constant container c (c->initial set) is printed into the
 * generated code rather than bound. */
WEIR_API gboolean weir_codegen_constant_is_literal(const WeirContainer *c);

/* The bound constants of g and of the programs nested in it, in the order
 * of the kernel's constant table: g's containers in id order, then the
 * nested programs state by state, node by node, each walked the same way.
 * (borrowed pointers into g; free the array only) */
/**
 * weir_codegen_constants: (skip)
 */
WEIR_API GPtrArray *weir_codegen_constants(const WeirGraph *g);

/* Total bytes of the data of weir_codegen_constants(g). */
WEIR_API gsize weir_codegen_constants_bytes(const WeirGraph *g);

/* How many C sources weir_codegen_c generated in this process (a hook for
 * tests: a compile-cache hit generates none). */
WEIR_API guint weir_codegen_sources_generated(void);
/* Counts one generated source (internal). */
void weir_codegen_count_source(void);

/* Generates the C source of g.  Library nodes are expanded first (on a copy;
 * g is not changed) with their chosen implementation.  g must validate.
 * Deterministic: the same program gives the same bytes.  opts may be NULL.
 * (transfer full) */
WEIR_API char *weir_codegen_c(const WeirGraph *g,
                              const WeirCodegenOptions *opts, GError **error);

/* The program as one or more compile units (char*, transfer full), to be
 * compiled separately and linked into one shared object: unit 0 has the
 * ABI comment, the entry points and the weir-link line; when the entry
 * point's code is larger than opts->unit_bytes and the program can be
 * split (no nested programs, transients of fixed size), its states are cut
 * at top-level nodes into functions <prefix>_part<k> (hidden symbols), one
 * per further unit, each with the helpers it calls (docs/codegen.md,
 * "Compile units").  Otherwise one unit, the text weir_codegen_c gives.
 * Deterministic. */
/**
 * weir_codegen_units:
 * @opts: (nullable):
 * Returns: (transfer full) (element-type utf8):
 */
WEIR_API GPtrArray *weir_codegen_units(const WeirGraph *g,
                                       const WeirCodegenOptions *opts,
                                       GError **error);

/* A header declaring the entry point, with a comment listing the argument
 * and symbol order with dtypes and shapes. (transfer full) */
WEIR_API char *weir_codegen_header(const WeirGraph *g);

/* Where the code of node `node` is in source (text from weir_codegen_c):
 * the generator puts a comment "/\* <kind> <id> '<label>'..." before the
 * code of every map, tasklet, library call and nested program; the scope
 * runs from that comment to the closing brace at the comment's indentation
 * (a map's loops, a tasklet's block).  *first and *last receive 0-based
 * line numbers (inclusive).  FALSE when the node has no code of its own
 * (access nodes, map exits: use the entry) or is not in source. */
WEIR_API gboolean weir_codegen_node_lines(const char *source, guint node,
                                          guint *first, guint *last);

/* Writes <prefix>.c and <prefix>.h of g into dir (created when missing),
 * as `weir codegen -o DIR` does.  *c_path and *h_path (optional) receive
 * the paths (transfer full).  opts may be NULL. */
WEIR_API gboolean weir_codegen_write_files(const WeirGraph *g,
                                           const WeirCodegenOptions *opts,
                                           const char *dir, char **c_path,
                                           char **h_path, GError **error);

G_END_DECLS

#endif
