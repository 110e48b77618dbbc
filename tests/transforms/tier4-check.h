/* tier4-check.h — shared checks of the tier-4 transformation tests.
 *
 * The programs every tier-4 transformation is tried on (the JSON samples
 * and the sample models, imported and expanded), their reference runs on
 * seeded random inputs, and the differential check: apply at a site, the
 * result validates, the outputs match the untransformed program's. */
#ifndef TIER4_CHECK_H
#define TIER4_CHECK_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <string.h>

#include "weir.h"

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    const char *hay_ = (hay);                                                  \
    if (!hay_ || !strstr(hay_, (needle)))                                      \
      fail_msg("expected to find '%s' in: %s", (needle),                       \
               hay_ ? hay_ : "(null)");                                        \
  } while (0)

/* A program to try transformations on. */
typedef struct {
  const char *name;     /* "softmax.json", "resnet" */
  gboolean model;       /* an imported, expanded sample model */
  WeirGraph *g;         /* owned by the cache: copy it before changing */
  GHashTable *symbols;  /* bindings for its free symbols (borrowed) */
  GHashTable *expected; /* arguments after a reference run (borrowed) */
} T4Program;

/* The JSON samples then the models mlp, lenet, resnet, transformer
 * (loaded once per process; borrowed). */
guint t4c_n_programs(void);
const T4Program *t4c_program(guint i);
const T4Program *t4c_find(const char *name);

/* Runs g on the seeded random inputs of its program; returns the arguments
 * after the run (transfer full). */
GHashTable *t4c_run(const WeirGraph *g, GHashTable *symbols);
/* Every tensor of `expected` equals the one in `got`: exactly for integer
 * dtypes, within rtol (relative, plus rtol as absolute slack) for floats. */
void t4c_assert_same(GHashTable *expected, GHashTable *got, double rtol,
                     const char *what);

/* The registered transformation (asserts it exists and has the tier). */
const WeirTransformInfo *t4c_transform(const char *name, guint tier);
/* Parameters from assignments (NULL: defaults; transfer full). */
WeirParams *t4c_params(const WeirTransformInfo *t, const char *const *assign);

/* Applies t at site to a copy of p's program, checks the result validates
 * and computes the same outputs (rtol for floats); returns the copy
 * (transfer full).  report (optional) receives the framework's report. */
WeirGraph *t4c_apply_checked(const T4Program *p, const WeirTransformInfo *t,
                             const WeirSite *site, const WeirParams *params,
                             double rtol, WeirApplyReport *report);

/* Compiles g with the code generator, runs it on the program's inputs and
 * compares with the program's reference outputs (rtol for floats). */
void t4c_compiled_check(const T4Program *p, const WeirGraph *g, double rtol);

/* Total bytes moved and peak transient bytes (symbols bound; asserts they
 * are known). */
gint64 t4c_bytes(const WeirGraph *g, GHashTable *symbols);
gint64 t4c_peak(const WeirGraph *g, GHashTable *symbols);

/* Reason of a refused site (transfer full; asserts it is refused). */
char *t4c_refusal(const WeirTransformInfo *t, const WeirGraph *g,
                  const WeirSite *site, const WeirParams *params);

/* Hand-built programs. */
WeirNode *t4c_access(WeirGraph *g, WeirState *s, const char *name,
                     const char *shape, gboolean transient);
WeirMemlet *t4c_memlet(WeirGraph *g, WeirState *s, guint src, const char *sc,
                       guint dst, const char *dc, const char *data,
                       const char *subset);
/* A map with one tasklet: reads (data, subset) for each input connector,
 * writes (data, subset) for each output; outer memlets cover the whole
 * containers from / to the given access nodes.  Returns the entry. */
typedef struct {
  WeirNode *access;
  const char *conn, *subset;
} T4Port;
WeirNode *t4c_map(WeirGraph *g, WeirState *s, const char *label,
                  const char *params, const char *ranges, const T4Port *ins,
                  guint n_in, const T4Port *outs, guint n_out,
                  const char *code);
void t4c_validate(WeirGraph *g);

#endif
