/* weir-gi.h — libweir for language bindings (GObject Introspection).
 *
 * The GIR/typelib of libweir (namespace Weir, built by meson with
 * gnome.generate_gir, docs/python.md) needs a GType for every structure a
 * script holds on to, and calls whose arguments a binding can build.  This
 * header adds both, without changing the C API:
 *
 * Boxed types.  Each copy/free pair below follows the type's own lifetime:
 *  - value types are copied deeply (WeirGraph: weir_graph_copy, which shares
 *    the data of constants; WeirTensor, WeirSite, WeirStep,
 *    WeirBenchResult), WeirExpr is reference counted (weir_expr_ref);
 *  - objects with one owner in C (WeirSession, WeirKernel, WeirTrainer,
 *    WeirRecipe, WeirRecipeReport, WeirAnalysis, WeirEvaluation,
 *    WeirProfile, WeirDataset) are shared: g_boxed_copy() takes another
 *    reference to the same object and g_boxed_free() drops one; the last
 *    reference frees it with the type's _free function.  Such a pointer,
 *    once handed to g_boxed_copy(), must be released with g_boxed_free()
 *    only (not with its _free function while copies live);
 *  - WeirTransformInfo records belong to the registry and live as long as
 *    the process: copying returns the same record, freeing does nothing.
 *
 * Binding-friendly calls.  Symbol values travel as a GVariant of type
 * a{sx} (name -> value) instead of a name -> gint64* table; argument tensors
 * as a table name -> WeirTensor* (a Python dict of Weir.Tensor); raw
 * buffers as GBytes; option structures with pointer fields as a GVariant
 * a{sv} of named options; result records as GVariant dictionaries, which
 * bindings unpack to native dictionaries and lists.
 *
 * Errors are the GErrors of the underlying calls (WEIR_ERROR), which
 * PyGObject raises as GLib.Error with domain "weir-error-quark".
 */
#ifndef WEIR_GI_H
#define WEIR_GI_H

#include <glib-object.h>

#include "weir-analysis.h"
#include "weir-dataset.h"
#include "weir-evaluate.h"
#include "weir-pipeline.h"
#include "weir-profile.h"
#include "weir-recipe.h"
#include "weir-runtime.h"
#include "weir-session.h"
#include "weir-tensor.h"
#include "weir-trainer.h"
#include "weir-transform.h"

G_BEGIN_DECLS

/* ---------------------------------------------------------- boxed types */

/* WeirErrorCode as a GEnum: it pairs the enum with weir_error_quark(), so
 * bindings turn a GError of domain WEIR_ERROR into a typed exception. */
#define WEIR_TYPE_ERROR_CODE (weir_error_get_type())
WEIR_API GType weir_error_get_type(void) G_GNUC_CONST;

#define WEIR_TYPE_GRAPH (weir_graph_get_type())
WEIR_API GType weir_graph_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_TENSOR (weir_tensor_get_type())
WEIR_API GType weir_tensor_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_EXPR (weir_expr_get_type())
WEIR_API GType weir_expr_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_SITE (weir_site_get_type())
WEIR_API GType weir_site_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_STEP (weir_step_get_type())
WEIR_API GType weir_step_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_TRANSFORM_INFO (weir_transform_info_get_type())
WEIR_API GType weir_transform_info_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_SESSION (weir_session_get_type())
WEIR_API GType weir_session_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_KERNEL (weir_kernel_get_type())
WEIR_API GType weir_kernel_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_BENCH_RESULT (weir_bench_result_get_type())
WEIR_API GType weir_bench_result_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_RECIPE (weir_recipe_get_type())
WEIR_API GType weir_recipe_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_RECIPE_REPORT (weir_recipe_report_get_type())
WEIR_API GType weir_recipe_report_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_ANALYSIS (weir_analysis_get_type())
WEIR_API GType weir_analysis_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_EVALUATION (weir_evaluation_get_type())
WEIR_API GType weir_evaluation_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_PROFILE (weir_profile_get_type())
WEIR_API GType weir_profile_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_DATASET (weir_dataset_get_type())
WEIR_API GType weir_dataset_get_type(void) G_GNUC_CONST;
#define WEIR_TYPE_TRAINER (weir_trainer_get_type())
WEIR_API GType weir_trainer_get_type(void) G_GNUC_CONST;

/* -------------------------------------------------------------- tensors */

/**
 * weir_tensor_new_from_bytes:
 * @dtype: element type
 * @shape: (array length=rank) (nullable): the dimensions (NULL when rank is 0)
 * @rank: number of dimensions
 * @data: the elements in row-major order, exactly the tensor's byte size
 * @error: return location for a #GError
 *
 * A tensor holding a copy of @data (the tensor's own buffer is 64-byte
 * aligned, so one copy is made).  Fails naming both sizes when @data does
 * not have the tensor's byte size, or as weir_tensor_try_new().
 *
 * Returns: (transfer full): the tensor, or %NULL with @error set
 */
WEIR_API WeirTensor *weir_tensor_new_from_bytes(WeirDType dtype,
                                                const gint64 *shape, guint rank,
                                                GBytes *data, GError **error);

/**
 * weir_tensor_get_bytes:
 * @t: a tensor
 *
 * A copy of the elements of @t (row-major).
 *
 * Returns: (transfer full): the bytes
 */
WEIR_API GBytes *weir_tensor_get_bytes(const WeirTensor *t);

/**
 * weir_tensor_get_shape:
 * @t: a tensor
 * @rank: (out): number of dimensions
 *
 * Returns: (array length=rank) (transfer none): the dimensions of @t
 */
WEIR_API const gint64 *weir_tensor_get_shape(const WeirTensor *t, guint *rank);

/**
 * weir_tensor_get_data_address:
 * @t: a tensor
 *
 * The address of the elements of @t, for bindings that wrap them without a
 * copy (weir.py views them as a NumPy array that keeps @t alive).  Valid
 * while @t lives.
 *
 * Returns: the address of the first element
 */
WEIR_API guintptr weir_tensor_get_data_address(WeirTensor *t);

/* ------------------------------------------------------------- programs */

/**
 * weir_graph_get_name:
 * @g: a program
 *
 * Returns: (transfer none): the program's name
 */
WEIR_API const char *weir_graph_get_name(const WeirGraph *g);

/**
 * weir_graph_argument_names:
 * @g: a program
 *
 * Names of the argument containers of @g (neither transient nor holding
 * constant data: what a run binds), in container order.
 *
 * Returns: (transfer full) (array zero-terminated=1): the names
 */
WEIR_API char **weir_graph_argument_names(const WeirGraph *g);

/**
 * weir_graph_new_argument:
 * @g: a program
 * @name: an argument container of @g
 * @symbols: (nullable): symbol values, a{sx}
 * @error: return location for a #GError
 *
 * A zero-filled tensor of the dtype and shape of argument @name, the shape
 * evaluated with @symbols.  Fails naming the container when it is not an
 * argument or a dimension has no value.
 *
 * Returns: (transfer full): the tensor
 */
WEIR_API WeirTensor *weir_graph_new_argument(const WeirGraph *g,
                                             const char *name,
                                             GVariant *symbols, GError **error);

/* ------------------------------------------------------------- kernels */

/**
 * weir_kernel_run_tensors:
 * @k: a kernel
 * @symbols: (nullable): symbol values, a{sx}
 * @args: (element-type utf8 WeirTensor): container name -> tensor for every
 *   argument; outputs are written into their tensors
 * @error: return location for a #GError
 *
 * weir_kernel_run() with symbol values as a GVariant.
 *
 * Returns: %TRUE on success
 */
WEIR_API gboolean weir_kernel_run_tensors(WeirKernel *k, GVariant *symbols,
                                          GHashTable *args, GError **error);

/**
 * weir_kernel_bench_tensors:
 * @k: a kernel
 * @symbols: (nullable): symbol values, a{sx}
 * @args: (element-type utf8 WeirTensor): as for weir_kernel_run_tensors()
 * @warmup: untimed runs first
 * @repetitions: timed runs (0: 10)
 * @error: return location for a #GError
 *
 * weir_kernel_bench() with symbol values as a GVariant.
 *
 * Returns: (transfer full): the timings, or %NULL with @error set
 */
WEIR_API WeirBenchResult *
weir_kernel_bench_tensors(WeirKernel *k, GVariant *symbols, GHashTable *args,
                          guint warmup, guint repetitions, GError **error);

/**
 * weir_bench_result_get_times:
 * @r: benchmark timings
 * @n: (out): number of timed runs
 *
 * Returns: (array length=n) (transfer none): seconds of each timed run, in
 *   run order
 */
WEIR_API const double *weir_bench_result_get_times(const WeirBenchResult *r,
                                                   guint *n);

/* ------------------------------------------------------------ analyses */

/**
 * weir_analysis_compute_symbols:
 * @g: a program
 * @symbols: (nullable): symbol values, a{sx}
 * @error: return location for a #GError
 *
 * weir_analysis_compute_traffic() with symbol values as a GVariant and the
 * cache of this machine's cached hardware profile (as `weir info`): the
 * logical volume and the modeled memory traffic.
 *
 * Returns: (transfer full): the analysis
 */
WEIR_API WeirAnalysis *weir_analysis_compute_symbols(const WeirGraph *g,
                                                     GVariant *symbols,
                                                     GError **error);

/**
 * weir_analysis_to_variant:
 * @a: an analysis of @g
 * @g: the program it was computed on (for labels)
 *
 * The figures of @a as a dictionary a{sv}: "total_traffic" (modeled
 * memory traffic), "total_bytes" (logical volume: not memory traffic),
 * "total_flops", "peak_transient_bytes" (x, -1 when unknown), "intensity"
 * (d, FLOPs per byte of logical volume, -1 when unknown) and "nodes"
 * (aa{sv}, one per node, by state then node id: "state", "node" (u),
 * "label", "kind", "op" (s; op "" except for library nodes), "bytes_in",
 * "bytes_out" (logical volume), "traffic" (modeled memory traffic of a
 * top-level operation), "flops" (x, -1 when unknown)).
 *
 * Returns: (transfer full): a floating-free GVariant of type a{sv}
 */
WEIR_API GVariant *weir_analysis_to_variant(const WeirAnalysis *a,
                                            const WeirGraph *g);

/**
 * weir_profile_run_tensors:
 * @g: a program
 * @symbols: (nullable): symbol values, a{sx}
 * @args: (element-type utf8 WeirTensor): as for weir_kernel_run_tensors()
 * @warmup: untimed runs of each kernel first
 * @repetitions: timed runs of each kernel (0: 10)
 * @error: return location for a #GError
 *
 * weir_profile_run() with this machine's cached hardware profile
 * (weir_hw_profile_cached(), never measures), as `weir profile`: the bytes
 * of each node are the modeled memory traffic for its cache; the roofline
 * figures need a measured profile.
 *
 * Returns: (transfer full): the per-node times, or %NULL with @error set
 */
WEIR_API WeirProfile *weir_profile_run_tensors(const WeirGraph *g,
                                               GVariant *symbols,
                                               GHashTable *args, guint warmup,
                                               guint repetitions,
                                               GError **error);

/**
 * weir_profile_to_variant:
 * @p: a profile
 *
 * The profile as a dictionary a{sv}: "run_median", "node_sum" (d, seconds)
 * and "nodes" (aa{sv}, in run order: "state", "node" (u), "label", "op"
 * (s), "seconds", "share" (d), "flops", "bytes" (x: modeled memory
 * traffic, weir-profile.h; -1 when unknown)).
 *
 * Returns: (transfer full): a GVariant of type a{sv}
 */
WEIR_API GVariant *weir_profile_to_variant(const WeirProfile *p);

/* ----------------------------------------------------------- evaluation */

/**
 * weir_evaluate_tensors:
 * @program: the program to compile, run and time
 * @reference: (nullable): a program to compare with (compiled and timed)
 * @symbols: (nullable): symbol values, a{sx}
 * @inputs: (nullable) (element-type utf8 WeirTensor): argument values
 *   instead of random ones
 * @warmup: untimed runs
 * @repetitions: timed runs (0: 1)
 * @seed: of the random inputs (0: 1)
 * @error: return location for a #GError
 *
 * weir_evaluate() with default tolerances and compile options.
 *
 * Returns: (transfer full): the evaluation, or %NULL with @error set
 */
WEIR_API WeirEvaluation *
weir_evaluate_tensors(const WeirGraph *program, const WeirGraph *reference,
                      GVariant *symbols, GHashTable *inputs, guint warmup,
                      guint repetitions, guint64 seed, GError **error);

/**
 * weir_evaluation_get_output:
 * @e: an evaluation
 * @name: an argument container of its program
 *
 * Returns: (transfer none) (nullable): the argument's value after the
 *   checked run, or %NULL when @name is no argument
 */
WEIR_API const WeirTensor *weir_evaluation_get_output(const WeirEvaluation *e,
                                                      const char *name);

/**
 * weir_evaluation_get_bench:
 * @e: an evaluation
 *
 * Returns: (transfer none): the timings of the program
 */
WEIR_API const WeirBenchResult *
weir_evaluation_get_bench(const WeirEvaluation *e);

/* -------------------------------------------------------------- training */

/**
 * weir_dataset_new_from_bytes:
 * @features: n_samples x n_features float32 values, row-major
 * @n_samples: rows
 * @n_features: feature columns
 * @labels: (nullable): n_samples int64 class indices (>= 0)
 * @source: (nullable): a name for messages (NULL: "<memory>")
 * @error: return location for a #GError
 *
 * A classification data set from buffers (copied); fails naming @source
 * when a size does not match or a label is negative.
 *
 * Returns: (transfer full): the data set
 */
WEIR_API WeirDataset *
weir_dataset_new_from_bytes(GBytes *features, gint64 n_samples,
                            gint64 n_features, GBytes *labels,
                            const char *source, GError **error);

/**
 * weir_trainer_new_with_options:
 * @model_path: an ONNX model
 * @n_features: values per sample of the model's input
 * @options: (nullable): named options a{sv}: "loss" (s:
 * "softmax-cross-entropy", "mse"), "optimizer" (s: "sgd", "momentum", "adam"),
 * "lr", "momentum", "weight_decay" (d), "epochs", "batch", "steps_per_call"
 * (x), "seed" (t), "threads" (i), "opt_level" (u), "recipe" (s: a recipe file);
 *   integer values of another integer type are accepted
 * @error: return location for a #GError
 *
 * weir_trainer_new() with the defaults of weir_trainer_options_init()
 * changed by @options.  An unknown option or a value of the wrong type is
 * an error naming the option.
 *
 * Returns: (transfer full): the trainer
 */
WEIR_API WeirTrainer *weir_trainer_new_with_options(const char *model_path,
                                                    gint64 n_features,
                                                    GVariant *options,
                                                    GError **error);

/**
 * weir_trainer_predict_bytes:
 * @t: a trainer
 * @d: samples
 * @error: return location for a #GError
 *
 * weir_trainer_predict() into a new buffer of d->n_samples x
 * weir_trainer_n_classes() float32 values.
 *
 * Returns: (transfer full): the logits
 */
WEIR_API GBytes *weir_trainer_predict_bytes(WeirTrainer *t,
                                            const WeirDataset *d,
                                            GError **error);

/* ----------------------------------------------------- transformations */

/**
 * weir_transform_list_sites:
 * @t: a transformation
 * @g: a program
 *
 * weir_transform_sites() as a list of boxed sites.  The array has no free
 * function: C callers free each site with weir_site_free(), then the array.
 *
 * Returns: (transfer full) (element-type WeirSite): the candidate sites
 */
WEIR_API GPtrArray *weir_transform_list_sites(const WeirTransformInfo *t,
                                              const WeirGraph *g);

/**
 * weir_site_new:
 * @state: the state id
 * @nodes: (array length=n_nodes) (nullable): node ids
 * @n_nodes: at most %WEIR_SITE_MAX_NODES
 *
 * Returns: (transfer full): a site
 */
WEIR_API WeirSite *weir_site_new(guint state, const guint *nodes,
                                 guint n_nodes);

/**
 * weir_site_get_nodes:
 * @site: a site
 * @n: (out): number of node ids
 *
 * Returns: (array length=n) (transfer none): the node ids
 */
WEIR_API const guint *weir_site_get_nodes(const WeirSite *site, guint *n);

/**
 * weir_site_free:
 * @site: (nullable): a site from weir_site_new() or a copy
 */
WEIR_API void weir_site_free(WeirSite *site);

G_END_DECLS

#endif
