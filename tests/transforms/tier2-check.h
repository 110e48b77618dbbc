/* tier2-check.h — what the tests of the tier-2 transformations share:
 * building small library-node programs, applying a transformation through
 * the framework, and the differential check (interpret the program before
 * and after on the same seeded random inputs and compare every argument).
 *
 * Failures are reported through cmocka (fail_msg), so the helpers can be
 * called directly from test functions.
 */
#ifndef WEIR_TIER2_CHECK_H
#define WEIR_TIER2_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir-analysis.h"
#include "weir-transform.h"

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    const char *hay_ = (hay);                                                  \
    if (!hay_ || !strstr(hay_, (needle)))                                      \
      fail_msg("expected to find '%s' in: %s", (needle),                       \
               hay_ ? hay_ : "(null)");                                        \
  } while (0)

/* ------------------------------------------------------------ building */

/* A new program with one state "main" (returned in *s). */
WeirGraph *t2_graph(const char *name, WeirState **s);
/* An array container; shape as text ("2, 3", "" for a scalar). */
WeirContainer *t2_array(WeirGraph *g, const char *name, WeirDType dtype,
                        const char *shape, gboolean transient);
/* A transient constant with the given values (converted to dtype). */
WeirContainer *t2_const(WeirGraph *g, const char *name, WeirDType dtype,
                        const char *shape, const double *values);
/* A constant filled with one value. */
WeirContainer *t2_const_fill(WeirGraph *g, const char *name, WeirDType dtype,
                             const char *shape, double value);
/* A constant with seeded random values (weir_tensor_fill_random). */
WeirContainer *t2_const_random(WeirGraph *g, const char *name, WeirDType dtype,
                               const char *shape, guint64 seed);
/* The access node of a container in s (the first one), created when there
 * is none. */
WeirNode *t2_access(WeirGraph *g, WeirState *s, const char *name);
/* A library node reading the containers ins[k] through in<k> (a NULL
 * entry before the end of the list is not allowed; use "" to skip a
 * connector) and writing outs[k] through out<k>, each with a full-subset
 * memlet from / to the container's access node (t2_access). */
WeirNode *t2_op(WeirGraph *g, WeirState *s, const char *op, const char *label,
                const char *const *ins, const char *const *outs);

/* Fills the schema defaults of every library node's attributes
 * (weir_op_check_attrs), as the importer does; call it once the
 * attributes are set. */
void t2_normalize(WeirGraph *g);

/* Loads samples/<file> (JSON). */
WeirGraph *t2_load_sample(const char *file);

/* The JSON samples and the symbol values they are run with. */
typedef struct {
  const char *file;
  const char *symbols; /* "N=16,T=3" or "" */
} T2Sample;
extern const T2Sample t2_samples[];
extern const guint t2_n_samples;
/* Bindings table from "A=1,B=2" (transfer full). */
GHashTable *t2_bindings(const char *text);

/* ---------------------------------------------------- transformations */

const WeirTransformInfo *t2_lookup(const char *name);
/* Sites of t in g (GArray of WeirSite). */
GArray *t2_sites(const WeirTransformInfo *t, const WeirGraph *g);
/* Number of sites (legal or not). */
guint t2_n_sites(const WeirTransformInfo *t, const WeirGraph *g);
/* A site in state s with the given node ids (n of them). */
WeirSite t2_site(const WeirState *s, guint n, const guint *nodes);
/* The reason can_apply gives for an illegal site (fails the test when the
 * site is legal).  assignments: "name=value" strings or NULL. */
char *t2_reason(const WeirTransformInfo *t, const WeirGraph *g,
                const WeirSite *site, const char *const *assignments);
/* Applies t at site (fails the test on error); report may be NULL. */
void t2_apply(WeirGraph *g, const WeirTransformInfo *t, const WeirSite *site,
              const char *const *assignments, GHashTable *bindings,
              WeirApplyReport *report);
/* Applies t at its first legal site, again and again until none is left.
 * Returns the number of applications. */
guint t2_apply_all(WeirGraph *g, const WeirTransformInfo *t,
                   GHashTable *bindings);
/* Number of legal sites. */
guint t2_count_legal(const WeirTransformInfo *t, const WeirGraph *g);

/* ------------------------------------------------------------ checking */

/* Interprets a copy of g (library nodes expanded first) on seeded random
 * arguments (every non-transient container; shapes evaluated with
 * bindings, which may be NULL).  Returns name -> WeirTensor* of every
 * argument after the run. */
GHashTable *t2_run(const WeirGraph *g, GHashTable *bindings, guint64 seed);
/* Runs both programs on the same inputs and compares every argument:
 * exactly for integer dtypes, within rtol relative (plus rtol / 10
 * absolute, for values near zero after cancellation) for floats. */
void t2_assert_same(const WeirGraph *before, const WeirGraph *after,
                    GHashTable *bindings, double rtol);
/* For every legal site of t in g: applies it on a copy, checks that the
 * result validates and computes the same; then applies every site to a
 * fixpoint on another copy and checks that too (and that doing it again
 * gives the same JSON bytes).  Returns the number of
 * legal sites found at first. */
guint t2_check_every_site(const WeirTransformInfo *t, const WeirGraph *g,
                          GHashTable *bindings, double rtol);

/* ---------------------------------------------------------------- models */

/* The bundled models (samples/models/<name>.onnx) and the symbol values
 * they run with. */
typedef struct {
  const char *name;
  const char *symbols;
} T2Model;
extern const T2Model t2_models[];
extern const guint t2_n_models;

/* Imports samples/models/<name>.onnx (library nodes, not expanded). */
WeirGraph *t2_import_model(const char *name);
/* The same, with every library node expanded (maps and tasklets). */
WeirGraph *t2_expanded_model(const char *name);
/* Expands and interprets g on the model's reference input
 * (<name>/input_0.pb) and compares "output" with <name>/output_0.pb
 * (PyTorch's result) within tol (relative and absolute). */
void t2_assert_reference(const WeirGraph *g, const char *model,
                         GHashTable *bindings, double tol);

/* Total data movement of g in bytes (symbols bound by bindings). */
gint64 t2_bytes(const WeirGraph *g, GHashTable *bindings);
/* Number of library nodes with op (all library nodes when NULL). */
guint t2_count_ops(const WeirGraph *g, const char *op);

#endif
