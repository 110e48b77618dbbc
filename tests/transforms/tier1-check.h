/* tier1-check.h — shared checks for the tests of the tier-1
 * transformations: sample programs, running a program on seeded random
 * inputs, applying a transformation through the framework and comparing
 * outputs before and after. */
#ifndef TIER1_CHECK_H
#define TIER1_CHECK_H

#include "weir-graph.h"
#include "weir-transform.h"

#define assert_contains(hay, needle)                                           \
  do {                                                                         \
    const char *hay_ = (hay);                                                  \
    if (!hay_ || !strstr(hay_, (needle)))                                      \
      fail_msg("expected to find '%s' in: %s", (needle),                       \
               hay_ ? hay_ : "(null)");                                        \
  } while (0)

/* A program to transform, with values for its free symbols. */
typedef struct {
  char *name;
  WeirGraph *g;
  GHashTable *bindings; /* from weir_bindings_new */
  gboolean model;       /* an imported and expanded sample model */
} T1Program;

void t1_program_free(T1Program *p);

/* samples/<file> (JSON). */
WeirGraph *t1_load_sample(const char *file);

/* The sample programs: the JSON files in samples/, and with_models the
 * sample models (samples/models, batch size 2) imported and fully
 * expanded.  Array of T1Program* (free with g_ptr_array_unref). */
GPtrArray *t1_programs(gboolean with_models);

/* A bindings table from NULL-terminated (name, value) pairs. */
GHashTable *t1_bindings(const char *first, ...) G_GNUC_NULL_TERMINATED;

/* The seeded random arguments t1_run uses (name -> WeirTensor*, owned):
 * each container's values depend on the seed and its id. */
GHashTable *t1_run_inputs(const WeirGraph *g, GHashTable *bindings,
                          guint64 seed);

/* Runs g on seeded random arguments (library nodes are expanded first, on
 * a copy); returns name -> WeirTensor* of every argument container after
 * the run. */
GHashTable *t1_run(WeirGraph *g, GHashTable *bindings, guint64 seed);

/* Runs both programs on the same random inputs and compares every argument
 * container: exactly for integers, within rtol (relative and absolute) for
 * floats. */
void t1_assert_same_outputs(WeirGraph *before, WeirGraph *after,
                            GHashTable *bindings, double rtol);

/* The registered transformation (fails the test when absent). */
const WeirTransformInfo *t1_transform(const char *name);

/* Sites of transformation `name` in g. */
GArray *t1_sites(const WeirGraph *g, const char *name);

/* NULL when the site is legal with the given parameters ("name=value"
 * strings, NULL-terminated, or NULL), else the reason (transfer full). */
char *t1_reason(const WeirGraph *g, const char *name, const WeirSite *site,
                const char *const *params);

/* Applies through the framework (validation included); fails the test on
 * error. */
void t1_apply(WeirGraph *g, const char *name, const WeirSite *site,
              const char *const *params);

/* Applies at every legal site of every program — each on a fresh copy of a
 * JSON sample, all together on one copy of a model — checks the result
 * validates and computes the same outputs.  Returns the number of
 * applications (T1_VERBOSE=1 prints them per program). */
guint t1_apply_everywhere(const char *name, const char *const *params,
                          double rtol, gboolean with_models);
/* The same, with prepare (may be NULL) run on each program first, and the
 * number of sites refused by can_apply in *refused (may be NULL). */
guint t1_apply_everywhere_full(const char *name, const char *const *params,
                               double rtol, gboolean with_models,
                               void (*prepare)(WeirGraph *g), guint *refused);

/* Total data movement in bytes (the figure must be known). */
gint64 t1_total_bytes(const WeirGraph *g, GHashTable *bindings);

/* The first map entry with the given label (and its state), or NULL. */
WeirNode *t1_map_by_label(const WeirGraph *g, const char *label,
                          WeirState **state);
/* The first tasklet with the given label, or NULL. */
WeirNode *t1_tasklet_by_label(const WeirGraph *g, const char *label,
                              WeirState **state);

WeirSite t1_site(guint state, guint n, ...);

/* One tasklet connector of t1_map_program: connector, container, subset
 * inside the map, write-conflict resolution (outputs). */
typedef struct {
  const char *conn, *data, *subset;
  WeirWcr wcr;
} T1Port;

/* A program "test" with one state and one map: containers from decls
 * ("x:f32:N,M;s:f64:" — name:dtype:shape, ';'-separated), symbols
 * (comma-separated, may be ""), params ("i,j") and ranges ("0:N;0:M"), one
 * tasklet `code` reading `ins` and writing `outs`; each container gets its
 * own access node per direction, the outer memlets cover the container
 * with volume = inner volume x iterations.  *state and *entry receive the
 * ids.  The program validates. */
WeirGraph *t1_map_program(const char *decls, const char *symbols,
                          const char *params, const char *ranges,
                          WeirSchedule schedule, const T1Port *ins, guint n_in,
                          const T1Port *outs, guint n_out, const char *code,
                          guint *state, guint *entry);

/* Whether `sites` contains a site whose first node is `node`. */
gboolean t1_sites_have(const GArray *sites, guint node);

#endif
