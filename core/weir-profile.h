/* weir-profile.h — measured time per node beside its FLOPs and modeled
 * memory traffic, and the roofline of the hardware profile (`weir profile`,
 * docs/analysis.md).
 *
 * A program is compiled twice: as usual, and instrumented
 * (WeirCompileOptions.profile: each top-level node of every state of the
 * entry point between two reads of the monotonic clock, summed into a
 * slot of the kernel).  Both run on the same arguments; the plain kernel
 * gives the run time, the instrumented one the time of each node; the two
 * run in alternation (plain, instrumented, plain, ...) so that both see the
 * same load of the machine, each through weir_kernel_run.  The
 * nodes are those of the program as the code generator lowers it (native
 * library nodes kept, the others expanded: weir_lower with native and
 * split_epilogues), whose analysis (weir-analysis.h) gives each node's
 * FLOPs and bytes.  The bytes are the modeled memory traffic
 * (weir_analysis_compute_traffic with weir_hw_model_cache_bytes of the
 * profile, WeirNodeCost.traffic): a map's by the model, a library,
 * tasklet or nested node its operands once, a copy the memlet into the
 * access node it writes, a read served by the cache after an earlier
 * operation 0.  Without a model (no profile, no cache size known, or a
 * figure of the state unknown) a map's bytes are unknown (its logical
 * volume is not memory traffic: no GB/s from it) and the other nodes'
 * are their operands once.  A map's FLOPs are those of its whole scope.
 * The roofline bound of a node is max(FLOPs / peak, bytes / bandwidth)
 * (peak: the profile's FMA peak for the threads used; bandwidth: its
 * triad bandwidth); "compute" or "memory" says which term is larger, and
 * the fraction reached is the bound divided by the measured time.
 */
#ifndef WEIR_PROFILE_H
#define WEIR_PROFILE_H

#include "weir-graph.h"
#include "weir-hw.h"
#include "weir-runtime.h"

G_BEGIN_DECLS

/* Nodes timed below this (seconds) get no GFLOP/s or GB/s: the clock and
 * its reads resolve tens of nanoseconds, and a rate from such a time means
 * nothing (a 2 KiB copy "at 28 GB/s"). */
#define WEIR_PROFILE_RATE_MIN_SECONDS 1e-6

typedef struct {
  guint state, node; /* ids in the lowered program */
  char *state_label; /* owned */
  char *label;       /* owned: the node's label */
  char *op;          /* owned: the library op, or "map", "tasklet",
                        "nested", "copy" */
  double seconds;    /* median over the repetitions */
  double share;      /* of the sum of all nodes' medians */
  gboolean flops_known, bytes_known;
  gint64 flops, bytes;
  double gflops, gbs;   /* achieved (0 when unknown, not timed or timed
                           below WEIR_PROFILE_RATE_MIN_SECONDS) */
  double bound_seconds; /* roofline lower bound (0 when unknown) */
  const char *bound;    /* "compute", "memory", or NULL when unknown
                           (static) */
  double fraction;      /* bound_seconds / seconds (0 when unknown) */
  guint source;         /* the node of the program given to
                           weir_profile_run this one comes from: the same
                           id when it is there, else the top-level node of
                           the same state writing the container it writes
                           first (a library node the lowering expanded or
                           whose epilogue it split); 0 when none */
} WeirProfileNode;

typedef struct {
  GPtrArray *nodes; /* WeirProfileNode*, in the order the kernel runs them
                       (owned) */
  guint repetitions;
  double node_sum;            /* sum of the nodes' medians, seconds */
  double sum_median;          /* median over the repetitions of the sum of all
                                 slots of that run: the instrumented time of a run
                                 spent inside the nodes (less sensitive to a busy
                                 machine than node_sum, whose medians drop the
                                 interruptions a whole run keeps) */
  double run_median;          /* the plain kernel, median, seconds */
  double instrumented_median; /* whole runs of the instrumented kernel */
  double peak_gflops;         /* the roofline used */
  double bandwidth_gbs;
  int threads; /* as asked (0: the default) */
} WeirProfile;

typedef struct {
  guint warmup;                      /* untimed runs of each kernel first */
  guint repetitions;                 /* timed runs of each kernel (0: 10) */
  int threads;                       /* OpenMP threads (0: the default) */
  const WeirCompileOptions *compile; /* may be NULL; its profile field is
                                        ignored */
  /* The hardware profile (borrowed): its model cache gives the modeled
   * traffic, its measurements (when measured) the roofline.  NULL: no
   * traffic model and no roofline (bounds unknown). */
  const WeirHwProfile *hw;
} WeirProfileOptions;

/* Compiles g plain and instrumented, runs both on args (name ->
 * WeirTensor*, as weir_kernel_run; overwritten by the runs) with symbols,
 * and returns the per-node figures (transfer full: weir_profile_free), or
 * NULL with an error naming the program and the problem. */
WEIR_API WeirProfile *weir_profile_run(const WeirGraph *g, GHashTable *symbols,
                                       GHashTable *args,
                                       const WeirProfileOptions *options,
                                       GError **error);
WEIR_API void weir_profile_free(WeirProfile *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirProfile, weir_profile_free)

/* The axes of the roofline of p: decades lx0..lx1 of operational
 * intensity (FLOP per byte) and ly0..ly1 of GFLOP/s covering the points
 * (nodes whose FLOPs, bytes and time are known and positive), the ridge
 * (peak / bandwidth) and the peak; the SVG and the cairo drawing
 * (weir-roofline.h) share them. */
typedef struct {
  double lx0, lx1, ly0, ly1; /* log10 of the axis ends */
  double ridge;              /* FLOP/byte where the roofs meet (1 unknown) */
} WeirRooflineAxes;
WEIR_API void weir_profile_roofline_axes(const WeirProfile *p,
                                         WeirRooflineAxes *out);
/* Whether node n is a point of the roofline; its intensity and GFLOP/s. */
WEIR_API gboolean weir_profile_roofline_point(const WeirProfileNode *n,
                                              double *intensity,
                                              double *gflops);

/* The roofline as an SVG document: log-log axes (operational intensity in
 * FLOP/byte, performance in GFLOP/s), the bandwidth slope and the compute
 * roof, and one labelled point per node whose FLOPs, bytes and time are
 * known and positive.  title is escaped.  (transfer full) */
WEIR_API char *weir_profile_roofline_svg(const WeirProfile *p,
                                         const char *title);

G_END_DECLS

#endif
