/* export.c — a program as a self-contained kernel directory.
 *
 * Conventions of this file:
 *  - Everything that can fail on the program (code generation, symbols,
 *    inputs, the interpreter) runs before anything is written.
 *  - Files are written into a temporary directory next to the target
 *    (".<name>.tmp-XXXXXX"), which replaces the target in one rename at the
 *    end.  Every failure path removes it.
 *  - Generated text is deterministic: the same program, options and
 *    hardware profile give the same bytes (no dates, no host names; the
 *    profile's CPU model and cache size are named because the modeled
 *    traffic depends on them).
 *  - Names that reach generated C or Markdown come from the program;
 *    container names are identifiers (the IR enforces it), other text goes
 *    through text_clean().
 */
#include "weir-export.h"

#include <errno.h>
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

#include "weir-analysis.h"
#include "weir-codegen.h"
#include "weir-conformance.h"
#include "weir-evaluate.h"
#include "weir-expand.h"
#include "weir-export-resources.h"
#include "weir-hw.h"
#include "weir-interp.h"
#include "weir-lower.h"
#include "weir-native.h"
#include "weir-recipe.h"
#include "weir-tensor-io.h"
#include "weir.h"

#define HARNESS_RESOURCE "/org/weir/export/harness.c"
#define HARNESS_MARKER "/* @KERNEL@ */\n"

/* One argument of the kernel, in ABI order. */
typedef struct {
  const WeirContainer *c; /* borrowed from the program */
  guint rank;
  gint64 *shape;
  gboolean output;      /* the program writes it */
  WeirTensor *input;    /* its value before the run (owned) */
  gboolean input_given; /* from the caller (stored in data/) */
  WeirTensor *expected; /* outputs: the value after the run (owned) */
  gboolean expected_given;
} Arg;

static void arg_free(gpointer p) {
  Arg *a = p;
  g_free(a->shape);
  weir_tensor_free(a->input);
  weir_tensor_free(a->expected);
  g_free(a);
}

typedef struct {
  const WeirGraph *g;
  const WeirExportOptions *o;
  GHashTable *bindings; /* owned */
  GPtrArray *args;      /* Arg*, ABI order */
  char *prefix;
  char *base; /* file name of the kernel source without ".c" */
  char *source, *header;
  char **libs;
  WeirAnalysis *analysis; /* of the program as given (peak, node counts) */
  /* of the program as the code generator lowers it, with the modeled
   * memory traffic for the cache of hw */
  WeirAnalysis *compiled;
  WeirHwProfile *hw; /* the profile the traffic assumes (owned) */
  gint64 cache;      /* its model cache, bytes (weir_hw_model_cache_bytes) */
  gboolean interpreted;
  guint n_given, n_generated, n_outputs;
} Export;

static void export_clear(Export *e) {
  g_clear_pointer(&e->bindings, g_hash_table_unref);
  g_clear_pointer(&e->args, g_ptr_array_unref);
  g_clear_pointer(&e->prefix, g_free);
  g_clear_pointer(&e->base, g_free);
  g_clear_pointer(&e->source, g_free);
  g_clear_pointer(&e->header, g_free);
  g_clear_pointer(&e->libs, g_strfreev);
  g_clear_pointer(&e->analysis, weir_analysis_free);
  g_clear_pointer(&e->compiled, weir_analysis_free);
  g_clear_pointer(&e->hw, weir_hw_profile_free);
}

/* Printable ASCII with the characters of bad (and control characters)
 * replaced by '_'. */
static char *clean(const char *s, const char *bad) {
  char *t = g_strdup(s ? s : "");
  for (char *p = t; *p; p++)
    if (*p < 0x20 || *p > 0x7e || strchr(bad, *p))
      *p = '_';
  return t;
}

/* Safe in a Markdown table cell and in `code`. */
static char *text_clean(const char *s) {
  return clean(s, "|`<");
}

/* Safe in a C comment and a C string literal. */
static char *c_clean(const char *s) {
  return clean(s, "*/\\\"?");
}

static char *shape_text(guint rank, const gint64 *shape) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < rank; d++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? ", " : "", shape[d]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static char *symbolic_shape_text(const WeirContainer *c) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < c->shape->len; d++) {
    g_autofree char *e = weir_expr_to_string(g_ptr_array_index(c->shape, d));
    g_string_append_printf(s, "%s%s", d ? ", " : "", e);
  }
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static char *format_bytes(gint64 b) {
  if (b < 1024)
    return g_strdup_printf("%" G_GINT64_FORMAT " B", b);
  if (b < 1024 * 1024)
    return g_strdup_printf("%.1f KiB", (double)b / 1024.0);
  if (b < (gint64)1024 * 1024 * 1024)
    return g_strdup_printf("%.1f MiB", (double)b / (1024.0 * 1024.0));
  return g_strdup_printf("%.2f GiB", (double)b / (1024.0 * 1024.0 * 1024.0));
}

static char *quantity_text(const WeirQuantity *q, gboolean bytes) {
  if (q->known) {
    if (bytes) {
      g_autofree char *h = format_bytes(q->value);
      return q->value < 1024
                 ? g_strdup(h)
                 : g_strdup_printf("%" G_GINT64_FORMAT " B (%s)", q->value, h);
    }
    return g_strdup_printf("%" G_GINT64_FORMAT, q->value);
  }
  if (q->expr) {
    g_autofree char *e = weir_expr_to_string(q->expr);
    return g_strdup_printf("%s%s (symbolic)", e, bytes ? " B" : "");
  }
  return g_strdup("unknown");
}

/* ------------------------------------------------------------ analysis */

/* The figures the README and the harness report: the program as the code
 * generator lowers it (native library nodes kept, the rest expanded, as
 * `weir profile` counts it), with the modeled memory traffic for the model
 * cache of the hardware profile (the caller's, else the cached one). */
static gboolean analyze_compiled(Export *e, GError **error) {
  e->hw = e->o->hw ? weir_hw_profile_copy(e->o->hw) : weir_hw_profile_cached();
  e->cache = weir_hw_model_cache_bytes(e->hw);
  g_autoptr(WeirGraph) lowered = weir_graph_copy(e->g);
  if (!weir_lower(lowered,
                  &(WeirLowerOptions){.native = TRUE, .split_epilogues = TRUE},
                  error)) {
    g_prefix_error(error,
                   "program '%s': lowering for the analysis: ", e->g->name);
    return FALSE;
  }
  e->compiled =
      weir_analysis_compute_traffic(lowered, e->bindings, e->cache, error);
  if (!e->compiled) {
    g_prefix_error(error, "program '%s': analysis: ", e->g->name);
    return FALSE;
  }
  return TRUE;
}

/* Where the model cache of p comes from (weir_hw_model_cache_bytes). */
static const char *cache_origin(const WeirHwProfile *p) {
  gint64 llc = p->l3_bytes > 0 ? p->l3_bytes : p->l2_bytes;
  if (llc <= 0)
    return "no cache known";
  if (p->cache_knee_bytes > 0)
    return p->cache_knee_bytes <= llc
               ? "the measured knee of the triad"
               : "the last-level cache (below the measured knee)";
  if (p->l3_bytes <= 0)
    return "the L2";
  return "the L2 plus a 2 MiB share of the L3 per core";
}

/* Names of the argument containers the program writes: those of access
 * nodes with an incoming memlet, in any state. */
static GHashTable *written_containers(const WeirGraph *g) {
  GHashTable *set = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < g->states->len; i++) {
    const WeirState *s = g_ptr_array_index(g->states, i);
    for (guint k = 0; k < s->edges->len; k++) {
      const WeirMemlet *m = g_ptr_array_index(s->edges, k);
      const WeirNode *n = weir_state_node(s, m->dst);
      if (n && n->kind == WEIR_NODE_ACCESS && n->data)
        g_hash_table_add(set, n->data);
    }
  }
  return set;
}

static gboolean symbol_is_assigned(const WeirGraph *g, const char *name) {
  for (guint i = 0; i < g->transitions->len; i++) {
    const WeirTransition *t = g_ptr_array_index(g->transitions, i);
    for (guint k = 0; k < t->assign_names->len; k++)
      if (strcmp(g_ptr_array_index(t->assign_names, k), name) == 0)
        return TRUE;
  }
  return FALSE;
}

/* GCompareFunc over a GPtrArray of strings */
static gint compare_strings(gconstpointer a, gconstpointer b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys of a table keyed by strings, sorted (borrowed strings). */
static GPtrArray *sorted_keys(GHashTable *table) {
  GPtrArray *keys = g_ptr_array_new();
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init(&it, table);
  while (g_hash_table_iter_next(&it, &k, NULL))
    g_ptr_array_add(keys, k);
  g_ptr_array_sort(keys, compare_strings);
  return keys;
}

static char *argument_names(const Export *e) {
  GString *s = g_string_new(NULL);
  for (guint i = 0; i < e->args->len; i++) {
    const Arg *a = g_ptr_array_index(e->args, i);
    g_string_append_printf(s, "%s%s", i ? ", " : "", a->c->name);
  }
  return g_string_free(s, FALSE);
}

static Arg *find_arg(const Export *e, const char *name) {
  for (guint i = 0; i < e->args->len; i++) {
    Arg *a = g_ptr_array_index(e->args, i);
    if (strcmp(a->c->name, name) == 0)
      return a;
  }
  return NULL;
}

/* Checks that every key of table names an argument. */
static gboolean check_names(const Export *e, GHashTable *table,
                            const char *what, GError **error) {
  if (!table)
    return TRUE;
  g_autoptr(GPtrArray) keys = sorted_keys(table);
  for (guint i = 0; i < keys->len; i++) {
    const char *name = g_ptr_array_index(keys, i);
    if (!find_arg(e, name)) {
      g_autofree char *list = argument_names(e);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "program '%s': %s '%s': no argument of that name "
                  "(arguments: %s)",
                  e->g->name, what, name, list);
      return FALSE;
    }
  }
  return TRUE;
}

/* Checks that tensor t (from the caller) fits argument a. */
static gboolean check_tensor(const Export *e, const Arg *a, const WeirTensor *t,
                             const char *what, GError **error) {
  gboolean same = t->dtype == a->c->dtype && t->rank == a->rank;
  for (guint d = 0; same && d < t->rank; d++)
    same = t->shape[d] == a->shape[d];
  if (!same) {
    g_autofree char *got = weir_tensor_describe(t);
    g_autofree char *want = shape_text(a->rank, a->shape);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "program '%s': %s '%s' is %s, but the argument is %s%s",
                e->g->name, what, a->c->name, got, weir_dtype_name(a->c->dtype),
                want);
    return FALSE;
  }
  return TRUE;
}

/* The harness, like the runtime, gives every argument a buffer of its
 * element count laid out by the container's strides: they must stay in
 * it. */
static gboolean check_strides(const Export *e, const Arg *a, GError **error) {
  guint64 last = 0;
  for (guint d = 0; d < a->rank; d++)
    if (a->shape[d] == 0)
      return TRUE;
  for (guint d = 0; d < a->rank && d < a->c->strides->len; d++) {
    gint64 stride;
    g_autoptr(GError) local = NULL;
    if (!weir_expr_eval(g_ptr_array_index(a->c->strides, d), e->bindings,
                        &stride, &local) ||
        stride < 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "program '%s': argument '%s': stride %u: %s", e->g->name,
                  a->c->name, d, local ? local->message : "negative");
      return FALSE;
    }
    last += (guint64)(a->shape[d] - 1) * (guint64)stride;
  }
  gint64 count = 1;
  for (guint d = 0; d < a->rank; d++)
    count *= a->shape[d];
  if (last >= (guint64)count) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                "program '%s': argument '%s': its strides reach beyond its "
                "%" G_GINT64_FORMAT " elements",
                e->g->name, a->c->name, count);
    return FALSE;
  }
  return TRUE;
}

/* Symbols, the arguments with their concrete shapes, inputs and outputs. */
static gboolean collect_arguments(Export *e, GError **error) {
  const WeirGraph *g = e->g;
  const WeirExportOptions *o = e->o;
  e->bindings = weir_bindings_new();
  if (o->symbols) {
    g_autoptr(GPtrArray) keys = sorted_keys(o->symbols);
    for (guint i = 0; i < keys->len; i++) {
      const char *k = g_ptr_array_index(keys, i);
      weir_bindings_set(e->bindings, k,
                        *(const gint64 *)g_hash_table_lookup(o->symbols, k));
    }
  }
  if (o->session) {
    /* the workspace's own values, unless given */
    GHashTable *ws = weir_session_bindings(o->session);
    g_autoptr(GPtrArray) keys = sorted_keys(ws);
    for (guint i = 0; i < keys->len; i++) {
      const char *k = g_ptr_array_index(keys, i);
      if (!g_hash_table_contains(e->bindings, k))
        weir_bindings_set(e->bindings, k,
                          *(const gint64 *)g_hash_table_lookup(ws, k));
    }
  }
  e->args = g_ptr_array_new_with_free_func(arg_free);
  g_autoptr(GPtrArray) abi = weir_codegen_arguments(g);
  for (guint i = 0; i < abi->len; i++) {
    const WeirContainer *c = g_ptr_array_index(abi, i);
    if ((guint)c->dtype > WEIR_DTYPE_U8) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "argument '%s': the kernel harness does not handle dtype "
                  "%s (f32, f64, i32, i64, bool and u8 only)",
                  c->name, weir_dtype_name(c->dtype));
      return FALSE;
    }
    Arg *a = g_new0(Arg, 1);
    a->c = g_ptr_array_index(abi, i);
    a->rank = a->c->shape->len;
    a->shape = g_new0(gint64, a->rank + 1);
    g_ptr_array_add(e->args, a);
  }
  if (!check_names(e, o->inputs, "input", error) ||
      !check_names(e, o->expected, "expected output", error))
    return FALSE;

  /* symbols that are whole dimensions of a given input */
  for (guint i = 0; o->inputs && i < e->args->len; i++) {
    const Arg *a = g_ptr_array_index(e->args, i);
    const WeirTensor *t = g_hash_table_lookup(o->inputs, a->c->name);
    for (guint d = 0; t && d < a->rank && d < t->rank; d++) {
      WeirExpr *x = g_ptr_array_index(a->c->shape, d);
      if (weir_expr_kind(x) == WEIR_EXPR_SYMBOL &&
          !g_hash_table_contains(e->bindings, weir_expr_symbol_name(x)))
        weir_bindings_set(e->bindings, weir_expr_symbol_name(x), t->shape[d]);
    }
  }
  for (guint i = 0; i < g->symbols->len; i++) {
    const char *s = g_ptr_array_index(g->symbols, i);
    if (!g_hash_table_contains(e->bindings, s) && !symbol_is_assigned(g, s)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "program '%s': symbol '%s' has no value (bind it, e.g. "
                  "-D %s=VALUE, or give an input whose shape has it)",
                  g->name, s, s);
      return FALSE;
    }
  }

  g_autoptr(GHashTable) written = written_containers(g);
  for (guint i = 0; i < e->args->len; i++) {
    Arg *a = g_ptr_array_index(e->args, i);
    for (guint d = 0; d < a->rank; d++) {
      g_autoptr(GError) local = NULL;
      if (!weir_expr_eval(g_ptr_array_index(a->c->shape, d), e->bindings,
                          &a->shape[d], &local)) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                    "program '%s': argument '%s': dimension %u: %s", g->name,
                    a->c->name, d, local->message);
        return FALSE;
      }
      if (a->shape[d] < 0) {
        g_set_error(
            error, WEIR_ERROR, WEIR_ERROR_INVALID,
            "program '%s': argument '%s': dimension %u is %" G_GINT64_FORMAT,
            g->name, a->c->name, d, a->shape[d]);
        return FALSE;
      }
    }
    if (!check_strides(e, a, error))
      return FALSE;
    a->output = g_hash_table_contains(written, a->c->name) ||
                (o->expected && g_hash_table_contains(o->expected, a->c->name));
    const WeirTensor *in =
        o->inputs ? g_hash_table_lookup(o->inputs, a->c->name) : NULL;
    if (in) {
      if (!check_tensor(e, a, in, "input", error))
        return FALSE;
      a->input = weir_tensor_copy(in);
      a->input_given = TRUE;
      e->n_given++;
    } else {
      a->input = weir_evaluate_random_input(a->c, e->bindings, o->seed, error);
      if (!a->input) {
        g_prefix_error(error, "program '%s': argument '%s': ", g->name,
                       a->c->name);
        return FALSE;
      }
      e->n_generated++;
    }
    const WeirTensor *want =
        o->expected ? g_hash_table_lookup(o->expected, a->c->name) : NULL;
    if (want) {
      if (!check_tensor(e, a, want, "expected output", error))
        return FALSE;
      a->expected = weir_tensor_copy(want);
      a->expected_given = TRUE;
    }
    e->n_outputs += a->output;
  }
  if (!e->n_outputs) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "program '%s': writes no argument: there is no output to "
                "check",
                g->name);
    return FALSE;
  }
  return TRUE;
}

/* Expected outputs the caller did not give: the reference interpreter on
 * the program with its library nodes expanded, on copies of the inputs. */
static gboolean compute_expected(Export *e, GError **error) {
  gboolean needed = FALSE;
  for (guint i = 0; i < e->args->len; i++) {
    const Arg *a = g_ptr_array_index(e->args, i);
    needed |= a->output && !a->expected;
  }
  if (!needed)
    return TRUE;
  g_autoptr(WeirGraph) copy = weir_graph_copy(e->g);
  if (!weir_lower(copy, NULL, error)) {
    g_prefix_error(error,
                   "program '%s': expanding for the interpreter: ", e->g->name);
    return FALSE;
  }
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < e->args->len; i++) {
    const Arg *a = g_ptr_array_index(e->args, i);
    g_hash_table_insert(args, a->c->name, weir_tensor_copy(a->input));
  }
  if (!weir_interpret(copy, e->bindings, args, NULL, error)) {
    g_prefix_error(error, "program '%s': reference interpreter: ", e->g->name);
    return FALSE;
  }
  for (guint i = 0; i < e->args->len; i++) {
    Arg *a = g_ptr_array_index(e->args, i);
    gpointer value = NULL;
    if (a->output && !a->expected &&
        g_hash_table_steal_extended(args, a->c->name, NULL, &value))
      a->expected = value;
  }
  e->interpreted = TRUE;
  return TRUE;
}

/* ---------------------------------------------------------------- files */

static const char *harness_dtype(WeirDType t) {
  switch (t) {
  case WEIR_DTYPE_F32:
    return "DT_F32";
  case WEIR_DTYPE_F64:
    return "DT_F64";
  case WEIR_DTYPE_I32:
    return "DT_I32";
  case WEIR_DTYPE_I64:
    return "DT_I64";
  case WEIR_DTYPE_BOOL:
    return "DT_BOOL";
  default: /* refused by collect_arguments */
    break;
  }
  return "DT_U8";
}

static double tolerance(double v, double dflt) {
  return v >= 0 ? v : dflt;
}

static char *make_main(const Export *e, GError **error) {
  g_autoptr(GBytes) tmpl =
      g_resource_lookup_data(weir_export_get_resource(), HARNESS_RESOURCE,
                             G_RESOURCE_LOOKUP_FLAGS_NONE, error);
  if (!tmpl)
    return NULL;
  gsize len;
  const char *text = g_bytes_get_data(tmpl, &len);
  g_autofree char *body = g_strndup(text, len);
  char *mark = strstr(body, HARNESS_MARKER);
  g_assert(mark);
  *mark = '\0';
  const char *rest = mark + strlen(HARNESS_MARKER);
  g_autofree char *name = c_clean(e->g->name);

  GString *s = g_string_new(NULL);
  g_string_append_printf(
      s,
      "/* main.c: harness of kernel '%s', exported by Weir %s.\n"
      " *\n"
      " * Loads every argument from data/<name>.npy or data/<name>.bin (raw\n"
      " * little-endian elements, row-major), or generates it from the seed;\n"
      " * runs the kernel once and compares its outputs with\n"
      " * data/<name>.expected.npy; then times it.  ./harness --help lists\n"
      " * the options.  This file does not depend on Weir.\n"
      " */\n",
      name, weir_version());
  g_string_append(s, body);
  g_string_append_printf(s, "#include \"%s.h\"\n\n", e->base);
  g_string_append_printf(s, "#define KERNEL_NAME \"%s\"\n", name);
  g_string_append_printf(s, "#define KERNEL_RUN %s_run\n", e->prefix);
  g_string_append_printf(s, "#define KERNEL_WORKSPACE_SIZE %s_workspace_size\n",
                         e->prefix);
  g_string_append_printf(s, "#define WEIGHTS_FILE \"%s.weights\"\n", e->base);
  g_string_append_printf(s, "#define N_ARGS %u\n", e->args->len);
  g_string_append_printf(s, "#define N_SYMBOLS %u\n", e->g->symbols->len);
  g_string_append_printf(
      s, "#define DEFAULT_SEED UINT64_C(%" G_GUINT64_FORMAT ")\n", e->o->seed);
  char num[G_ASCII_DTOSTR_BUF_SIZE];
  g_string_append_printf(
      s, "#define DEFAULT_RTOL %s\n",
      g_ascii_formatd(num, sizeof num, "%.9g",
                      tolerance(e->o->rtol, WEIR_CONFORMANCE_RTOL)));
  g_string_append_printf(
      s, "#define DEFAULT_ATOL %s\n",
      g_ascii_formatd(num, sizeof num, "%.9g",
                      tolerance(e->o->atol, WEIR_CONFORMANCE_ATOL)));
  const WeirAnalysis *an = e->compiled;
  g_string_append(s, "/* Weir's figures for one run of the program as compiled "
                     "(-1: unknown; README.md, \"Data movement\") */\n");
  g_string_append_printf(s, "#define FLOPS %" G_GINT64_FORMAT ".0\n",
                         an->total_flops.known ? an->total_flops.value : -1);
  g_string_append(s, "/* modeled memory traffic: what must come from memory "
                     "with a cache of TRAFFIC_CACHE bytes */\n");
  g_string_append_printf(s, "#define TRAFFIC_BYTES %" G_GINT64_FORMAT ".0\n",
                         an->total_traffic.known ? an->total_traffic.value
                                                 : -1);
  g_string_append_printf(s, "#define TRAFFIC_CACHE %" G_GINT64_FORMAT ".0\n",
                         e->cache);
  g_string_append(s, "/* logical volume: what the memlets name (cache hits "
                     "included; not memory traffic, so no rate) */\n");
  g_string_append_printf(s, "#define LOGICAL_BYTES %" G_GINT64_FORMAT ".0\n\n",
                         an->total_bytes.known ? an->total_bytes.value : -1);
  for (guint i = 0; i < e->args->len; i++) {
    const Arg *a = g_ptr_array_index(e->args, i);
    g_string_append_printf(s, "static const int64_t shape_%u[] = {", i);
    for (guint d = 0; d < a->rank; d++)
      g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? ", " : "",
                             a->shape[d]);
    g_string_append_printf(s, "%s};\n", a->rank ? "" : "0");
  }
  g_autoptr(GPtrArray) consts = weir_codegen_constants(e->g);
  g_string_append_printf(s, "#define N_CONSTS %u\n", consts->len);
  g_string_append(s, "/* bytes and names of consts[k], checked against the "
                     "weights file */\n");
  g_string_append(s, "static const uint64_t CONST_BYTES[] = {");
  for (guint i = 0; i < consts->len; i++) {
    const WeirContainer *c = g_ptr_array_index(consts, i);
    g_string_append_printf(s, "%s%" G_GSIZE_FORMAT, i ? ", " : "",
                           g_bytes_get_size(c->initial));
  }
  g_string_append_printf(s, "%s};\n", consts->len ? "" : "0");
  g_string_append(s, "static const char *const CONST_NAMES[] = {");
  for (guint i = 0; i < consts->len; i++) {
    const WeirContainer *c = g_ptr_array_index(consts, i);
    g_autofree char *cn = c_clean(c->name);
    g_string_append_printf(s, "%s\"%s\"", i ? ", " : "", cn);
  }
  g_string_append_printf(s, "%s};\n", consts->len ? "" : "NULL");
  g_string_append(s, "static const Arg ARGS[N_ARGS] = {\n");
  for (guint i = 0; i < e->args->len; i++) {
    const Arg *a = g_ptr_array_index(e->args, i);
    g_string_append_printf(
        s, "    {\"%s\", %s, %u, shape_%u, %" G_GINT64_FORMAT ", %u, %d},\n",
        a->c->name, harness_dtype(a->c->dtype), a->rank, i, a->input->count,
        a->c->id, a->output ? 1 : 0);
  }
  g_string_append(s, "};\n");
  g_string_append(s, "/* symbols[k] of the ABI: values fixed at export */\n");
  g_string_append(s, "static const int64_t SYMBOLS[] = {");
  for (guint i = 0; i < e->g->symbols->len; i++) {
    const char *sym = g_ptr_array_index(e->g->symbols, i);
    const gint64 *v = g_hash_table_lookup(e->bindings, sym);
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, i ? ", " : "", v ? *v : 0);
  }
  g_string_append_printf(s, "%s};\n", e->g->symbols->len ? "" : "0");
  g_string_append(s, "static const char *const SYMBOL_NAMES[] = {");
  for (guint i = 0; i < e->g->symbols->len; i++) {
    const char *sym = g_ptr_array_index(e->g->symbols, i);
    g_string_append_printf(s, "%s\"%s%s\"", i ? ", " : "", sym,
                           g_hash_table_contains(e->bindings, sym)
                               ? ""
                               : " (assigned by the program)");
  }
  g_string_append_printf(s, "%s};\n", e->g->symbols->len ? "" : "NULL");
  g_string_append(s, rest);
  return g_string_free(s, FALSE);
}

static char *make_makefile(const Export *e) {
  g_autofree char *name = c_clean(e->g->name);
  GString *libs = g_string_new(NULL);
  for (guint i = 0; e->libs[i]; i++)
    g_string_append_printf(libs, "-l%s ", e->libs[i]);
  g_string_append(libs, "-lm");
  GString *s = g_string_new(NULL);
  g_string_append_printf(
      s,
      "# Makefile of kernel '%s', exported by Weir %s.\n"
      "# Plain make and a C11 compiler with OpenMP; override as in\n"
      "#   make CC=clang CFLAGS='-O3 -march=native -fopenmp'\n"
      "CC ?= cc\n"
      "CFLAGS ?= -O3 -fopenmp\n"
      "LDFLAGS ?=\n"
      "LDLIBS = %s\n"
      "\n"
      "all: harness\n"
      "\n"
      "harness: main.o %s.o\n"
      "\t$(CC) $(CFLAGS) $(LDFLAGS) -o $@ main.o %s.o $(LDLIBS)\n"
      "\n"
      "main.o: main.c %s.h\n"
      "\t$(CC) $(CFLAGS) -c -o $@ main.c\n"
      "\n"
      "%s.o: %s.c %s.h\n"
      "\t$(CC) $(CFLAGS) -c -o $@ %s.c\n"
      "\n"
      "run: harness %s.weights\n"
      "\t./harness --weights %s.weights\n"
      "\n"
      "clean:\n"
      "\trm -f harness main.o %s.o\n"
      "\n"
      ".PHONY: all run clean\n",
      name, weir_version(), libs->str, e->base, e->base, e->base, e->base,
      e->base, e->base, e->base, e->base, e->base, e->base);
  g_string_free(libs, TRUE);
  return g_string_free(s, FALSE);
}

static void readme_history(const Export *e, GString *s) {
  const WeirSession *ss = e->o->session;
  guint cursor = ss ? weir_session_cursor(ss) : 0;
  g_string_append(s, "## Transformations applied\n\n");
  if (!ss) {
    g_string_append(s, "None: the program was exported as loaded");
    if (e->o->source) {
      g_autofree char *src = text_clean(e->o->source);
      g_string_append_printf(s, " from `%s`", src);
    }
    g_string_append(s, ".\n\n");
    return;
  }
  g_autofree char *src = text_clean(weir_session_source(ss));
  if (!cursor) {
    g_string_append_printf(s,
                           "None: the workspace is at its original program "
                           "(from `%s`).\n\n",
                           src);
    return;
  }
  g_string_append_printf(
      s,
      "The workspace's history, steps 1 to %u of %u, applied to the original "
      "program (from `%s`); `recipe.json` replays them with "
      "`weir optimize MODEL --recipe recipe.json`.\n\n"
      "| step | transformation | site | parameters | logical volume "
      "before | after |\n"
      "|---:|---|---|---|---:|---:|\n",
      cursor, weir_session_n_steps(ss), src);
  for (guint i = 1; i <= cursor; i++) {
    const WeirStep *st = weir_session_step(ss, i);
    g_autofree char *t = text_clean(st->transform);
    g_autofree char *site = text_clean(st->site_text);
    g_autofree char *params = text_clean(st->params);
    g_autofree char *b0 = weir_figure_format(&st->bytes_before, TRUE);
    g_autofree char *b1 = weir_figure_format(&st->bytes_after, TRUE);
    g_string_append_printf(s, "| %u | %s | %s | %s | %s | %s |\n", i, t, site,
                           params[0] ? params : "(defaults)", b0, b1);
  }
  g_string_append(s, "\n");
}

/* The implementation the code generator chose for each library node. */
static void readme_library_nodes(const Export *e, GString *s) {
  GString *rows = g_string_new(NULL);
  for (guint i = 0; i < e->g->states->len; i++) {
    const WeirState *st = g_ptr_array_index(e->g->states, i);
    for (guint k = 0; k < st->nodes->len; k++) {
      const WeirNode *n = g_ptr_array_index(st->nodes, k);
      if (n->kind != WEIR_NODE_LIBRARY)
        continue;
      const WeirNativeImpl *impl = NULL;
      g_autoptr(GError) local = NULL;
      gboolean ok = weir_native_choice(e->g, st, n, &impl, &local);
      g_autofree char *label = text_clean(n->label);
      g_autofree char *op = text_clean(n->op);
      g_string_append_printf(rows, "| %u | %s | %s | %s |\n", n->id, label, op,
                             !ok    ? "?"
                             : impl ? impl->impl
                                    : "pure (loops and tasklets)");
    }
  }
  if (rows->len)
    g_string_append_printf(s,
                           "Library nodes and the implementation the code "
                           "generator chose (`--impl` at export changes "
                           "it):\n\n| node | label | operator | "
                           "implementation |\n|---:|---|---|---|\n%s\n",
                           rows->str);
  g_string_free(rows, TRUE);
}

/* The figures of one run: modeled traffic first (the one the harness's
 * GB/s uses), the hardware profile it assumed, then the logical volume
 * as a labelled second figure, FLOPs and intensity; ends inside the
 * table (make_readme adds the peak transient memory). */
static void readme_data_movement(const Export *e, GString *s) {
  const WeirAnalysis *c = e->compiled;
  g_autofree char *traffic = quantity_text(&c->total_traffic, TRUE);
  g_autofree char *logical = quantity_text(&c->total_bytes, TRUE);
  g_autofree char *flops = quantity_text(&c->total_flops, FALSE);
  g_autofree char *cache = format_bytes(e->cache);
  g_autofree char *cpu = text_clean(e->hw->cpu_model);
  g_string_append(
      s, "## Data movement\n\n"
         "Weir's analysis of the program as the code generator compiles it "
         "(library nodes with a native implementation kept, the others "
         "expanded into loops; each state counted once). Two measures of "
         "bytes (docs/analysis.md of Weir):\n\n"
         "- **modeled memory traffic**: what must come from memory given "
         "the cache below, reuse inside the cache not counted again. The "
         "GB/s the harness prints is this figure over the median time.\n"
         "- **logical volume**: what the program's memlets name, every "
         "access served by a cache included. It is not memory traffic: "
         "no rate is derived from it.\n\n");
  g_string_append_printf(s,
                         "Hardware profile the traffic assumes: `%s`, %u "
                         "logical cores; model cache %s (%s)",
                         cpu, e->hw->logical_cores, cache, cache_origin(e->hw));
  if (e->hw->measured && e->hw->bandwidth_gbs > 0)
    g_string_append_printf(s,
                           "; measured memory bandwidth %.1f GB/s (triad), "
                           "which no rate of a program whose data does not "
                           "fit in that cache can exceed",
                           e->hw->bandwidth_gbs);
  else
    g_string_append(s, "; memory bandwidth not measured (`weir hw`)");
  g_string_append(s, ". On another machine, `weir export` there (or `weir "
                     "info`) gives the traffic for its cache.\n\n");
  g_string_append_printf(s,
                         "| figure | value |\n|---|---|\n"
                         "| modeled memory traffic | %s |\n"
                         "| logical volume (not memory traffic) | %s |\n"
                         "| FLOPs | %s |\n",
                         traffic, logical, flops);
  if (c->total_flops.known && c->total_traffic.known &&
      c->total_traffic.value > 0)
    g_string_append_printf(
        s, "| operational intensity | %.3f FLOP/byte of modeled traffic |\n",
        (double)c->total_flops.value / (double)c->total_traffic.value);
  else
    g_string_append(s, "| operational intensity | unknown |\n");
}

static char *make_readme(const Export *e) {
  const WeirGraph *g = e->g;
  const WeirAnalysis *an = e->analysis;
  g_autofree char *name = text_clean(g->name);
  GString *s = g_string_new(NULL);
  g_string_append_printf(
      s,
      "# Kernel `%s`\n\n"
      "Exported by Weir %s: the program as plain C11 with OpenMP, a header, "
      "a Makefile and a harness that checks the outputs and times the "
      "kernel. Nothing here needs Weir.\n\n",
      name, weir_version());

  g_string_append(s,
                  "## Build and run\n\n```sh\nmake\n./harness\n"
                  "./harness --threads 4 --reps 50 --warmup 5\n"
                  "make CC=clang CFLAGS='-O3 -march=native -fopenmp'\n```\n\n");
  g_string_append_printf(
      s,
      "`make` builds `harness` from `main.c` and `%s.c` with `$(CC)` "
      "(default `cc`) and `$(CFLAGS)` (default `-O3 -fopenmp`)",
      e->base);
  if (e->libs[0]) {
    g_string_append(s, ", linking");
    for (guint i = 0; e->libs[i]; i++)
      g_string_append_printf(s, " `-l%s`", e->libs[i]);
    g_string_append(s, " (the kernel calls it");
    for (guint i = 0; e->libs[i]; i++)
      if (strcmp(e->libs[i], "openblas") == 0)
        g_string_append(s, "; Debian: `libopenblas-dev`");
      else if (strcmp(e->libs[i], "mpi") == 0)
        g_string_append(s, "; MPI's headers are not on the default path: "
                           "`make CC=mpicc`, Debian: `libopenmpi-dev`");
    g_string_append(s, ")");
  }
  g_string_append(
      s, ". The harness runs the kernel once, compares every output with its "
         "expected values and prints the largest absolute and relative errors, "
         "then times `--reps` runs (default 10) after `--warmup` runs (default "
         "3): median, minimum and maximum, with GFLOP/s and GB/s from the "
         "figures below. Every argument is restored to its input before each "
         "run, so kernels that accumulate into an output time the same work. "
         "The last line is `result: PASS` (exit status 0) or `result: FAIL` "
         "(exit status 1); bad data or usage exits with 2. `--threads N` sets "
         "the OpenMP threads, `--data DIR` the data directory, `--weights "
         "FILE` the weights file, `--rtol` and `--atol` the tolerances.\n\n");

  g_string_append(s, "## The kernel\n\n");
  g_string_append_printf(
      s,
      "```c\nint %s_run(void *const args[], const int64_t symbols[],\n"
      "        const void *const consts[], void *workspace);\n"
      "size_t %s_workspace_size(const int64_t symbols[]);\n```\n\n"
      "`args[k]` points to the elements of the k-th argument below "
      "(row-major, in its dtype: `f32` float, `f64` double, `i32` int32_t, "
      "`i64` int64_t, `bool` and `u8` uint8_t), `symbols[k]` is the value of "
      "the k-th symbol, `consts[k]` points to the data of the k-th constant "
      "(the parameters are not in the C source), and `workspace` is NULL or "
      "a 64-byte aligned block of `%s_workspace_size(symbols)` bytes for the "
      "transients, which the harness allocates once and reuses for every "
      "run. It returns 0, or non-zero when memory for its transients could "
      "not be allocated. `%s.h` lists the three orders.\n\n"
      "### Weights\n\n"
      "`%s.weights` holds the constants (little-endian): the 8 bytes "
      "`WEIRCST1`, the number of constants n (uint64), n pairs (offset, "
      "size in bytes) of uint64, then each constant's data at its offset "
      "(a multiple of 64). The harness reads the file into one aligned block "
      "and points `consts[k]` into it; `--weights FILE` loads another file "
      "of the same layout (e.g. other trained weights).\n\n",
      e->prefix, e->prefix, e->prefix, e->base, e->base);

  g_string_append(s, "## The graph\n\n");
  g_string_append_printf(s, "- program: `%s`\n", name);
  if (e->o->source) {
    g_autofree char *src = text_clean(e->o->source);
    g_string_append_printf(s, "- exported from: `%s`\n", src);
  }
  g_string_append(s, "- symbols:");
  if (!g->symbols->len)
    g_string_append(s, " none");
  for (guint i = 0; i < g->symbols->len; i++) {
    const char *sym = g_ptr_array_index(g->symbols, i);
    const gint64 *v = g_hash_table_lookup(e->bindings, sym);
    if (v)
      g_string_append_printf(s, "%s `%s` = %" G_GINT64_FORMAT, i ? "," : "",
                             sym, *v);
    else
      g_string_append_printf(s, "%s `%s` (assigned by the program)",
                             i ? "," : "", sym);
  }
  g_string_append_printf(s, "\n- states: %u, transitions: %u\n", g->states->len,
                         g->transitions->len);
  g_string_append(s, "- nodes:");
  guint total = 0;
  for (guint k = 0; k < WEIR_NODE_KIND_COUNT; k++) {
    total += an->node_counts[k];
    g_string_append_printf(s, "%s %s %u", k ? "," : "",
                           weir_node_kind_name((WeirNodeKind)k),
                           an->node_counts[k]);
  }
  g_string_append_printf(s, " (%u in all)\n\n", total);

  readme_library_nodes(e, s);
  g_string_append(s, "Containers:\n\n| name | dtype | shape | kind | role |\n"
                     "|---|---|---|---|---|\n");
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    g_autofree char *shape = symbolic_shape_text(c);
    const Arg *a = find_arg(e, c->name);
    g_autofree char *role = NULL;
    guint k = 0;
    for (; a && k < e->args->len; k++)
      if (g_ptr_array_index(e->args, k) == a)
        break;
    if (a) {
      const char *what = a->output ? "initial value" : "input";
      g_autofree char *in =
          a->input_given
              ? g_strdup_printf("%s `data/%s.npy`", what, c->name)
              : g_strdup_printf("%s generated (seed %" G_GUINT64_FORMAT ")",
                                what, e->o->seed);
      role = a->output ? g_strdup_printf("`args[%u]`; %s; output, expected "
                                         "`data/%s.expected.npy` (%s)",
                                         k, in, c->name,
                                         a->expected_given ? "given at export"
                                                           : "reference "
                                                             "interpreter")
                       : g_strdup_printf("`args[%u]`; %s", k, in);
    }
    g_string_append_printf(
        s, "| `%s` | %s | %s | %s | %s |\n", c->name, weir_dtype_name(c->dtype),
        shape,
        c->initial     ? (c->transient ? "constant" : "constant argument")
        : c->transient ? "transient"
                       : "argument",
        role ? role : "");
  }
  g_string_append(s, "\n");

  readme_history(e, s);

  readme_data_movement(e, s);
  const WeirAnalysis *c = e->compiled;
  g_autofree char *peak = quantity_text(&c->peak_transient_bytes, TRUE);
  g_string_append_printf(s, "| peak transient memory | %s", peak);
  if (c->peak_live && c->peak_live->len) {
    g_string_append(s, " (");
    for (guint i = 0; i < c->peak_live->len; i++)
      g_string_append_printf(s, "%s`%s`", i ? ", " : "",
                             (const char *)g_ptr_array_index(c->peak_live, i));
    g_string_append(s, ")");
  }
  g_string_append(s, " |\n\n");

  g_string_append_printf(
      s,
      "## Data and checking\n\n"
      "`data/<name>.npy` holds an argument's input, "
      "`data/<name>.expected.npy` an output's expected value (NumPy format, "
      "little-endian, C order). An argument without an input file is "
      "generated by the harness from the seed (%" G_GUINT64_FORMAT
      " unless `--seed` says otherwise; floats uniform in [-1, 1), integers "
      "in [0, 10), bool 0 or 1; splitmix64 seeded with seed + the "
      "container's id, the values of `weir run --seed`). A file "
      "`data/<name>.bin` (raw elements, row-major, little-endian) is read "
      "when there is no `.npy`. The expected outputs were computed %s. "
      "Floating-point outputs pass when |got - expected| <= atol + rtol * "
      "|expected| element-wise (rtol %g, atol %g by default; NaN matches "
      "NaN), integer outputs when equal. With another `--seed` the "
      "expected outputs do not apply and the harness only times.\n",
      e->o->seed,
      e->interpreted ? "by Weir's reference interpreter on the inputs above "
                       "(library nodes expanded into loops), so they check "
                       "the generated code, any native library calls and "
                       "the compiler against an independent implementation"
                     : "outside Weir and given at export",
      tolerance(e->o->rtol, WEIR_CONFORMANCE_RTOL),
      tolerance(e->o->atol, WEIR_CONFORMANCE_ATOL));
  return g_string_free(s, FALSE);
}

/* ------------------------------------------------------------- writing */

static void remove_tree(const char *path) {
  GDir *d = g_dir_open(path, 0, NULL);
  if (d) {
    const char *n;
    while ((n = g_dir_read_name(d))) {
      g_autofree char *p = g_build_filename(path, n, NULL);
      if (g_file_test(p, G_FILE_TEST_IS_DIR) &&
          !g_file_test(p, G_FILE_TEST_IS_SYMLINK))
        remove_tree(p);
      else
        g_unlink(p);
    }
    g_dir_close(d);
  }
  g_rmdir(path);
}

static gboolean write_text(const char *dir, const char *name, const char *text,
                           GPtrArray *files, GError **error) {
  g_autofree char *path = g_build_filename(dir, name, NULL);
  if (!g_file_set_contents(path, text, -1, error))
    return FALSE;
  g_ptr_array_add(files, g_strdup(name));
  return TRUE;
}

/* Writes the data of g's bound constants to dir/name in the format
 * load_weights of the harness reads (README "Weights"). */
static gboolean write_weights(const WeirGraph *g, const char *dir,
                              const char *name, GPtrArray *files,
                              GError **error) {
  g_autoptr(GPtrArray) consts = weir_codegen_constants(g);
  g_autofree char *path = g_build_filename(dir, name, NULL);
  FILE *f = fopen(path, "wb");
  if (!f) {
    int err = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: %s", path,
                g_strerror(err));
    return FALSE;
  }
  guint64 n = consts->len;
  guint64 at = (16 + 16 * n + 63) / 64 * 64;
  GByteArray *head = g_byte_array_new();
  g_byte_array_append(head, (const guint8 *)"WEIRCST1", 8);
  guint64 le = GUINT64_TO_LE(n);
  g_byte_array_append(head, (const guint8 *)&le, 8);
  for (guint i = 0; i < consts->len; i++) {
    const WeirContainer *c = g_ptr_array_index(consts, i);
    guint64 bytes = g_bytes_get_size(c->initial);
    guint64 a = GUINT64_TO_LE(at), b = GUINT64_TO_LE(bytes);
    g_byte_array_append(head, (const guint8 *)&a, 8);
    g_byte_array_append(head, (const guint8 *)&b, 8);
    at = (at + bytes + 63) / 64 * 64;
  }
  static const guint8 zeros[64];
  gboolean ok = fwrite(head->data, 1, head->len, f) == head->len;
  guint64 pos = head->len;
  g_byte_array_unref(head);
  for (guint i = 0; ok && i < consts->len; i++) {
    const WeirContainer *c = g_ptr_array_index(consts, i);
    gsize bytes = 0;
    const void *data = g_bytes_get_data(c->initial, &bytes);
    gsize pad = (gsize)((pos + 63) / 64 * 64 - pos);
    ok = fwrite(zeros, 1, pad, f) == pad && fwrite(data, 1, bytes, f) == bytes;
    pos += pad + bytes;
  }
  if (fclose(f) != 0)
    ok = FALSE;
  if (!ok) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: write failed", path);
    return FALSE;
  }
  g_ptr_array_add(files, g_strdup(name));
  return TRUE;
}

static gboolean write_tensor(const char *dir, const char *name,
                             const WeirTensor *t, GPtrArray *files,
                             GError **error) {
  g_autofree char *rel = g_build_filename("data", name, NULL);
  g_autofree char *path = g_build_filename(dir, rel, NULL);
  if (!weir_tensor_write_npy(t, path, error))
    return FALSE;
  g_ptr_array_add(files, g_steal_pointer(&rel));
  return TRUE;
}

/* Whether dir exists as a directory with entries; FALSE with an error when
 * something else is in the way. */
static gboolean target_state(const char *dir, gboolean *exists, gboolean *empty,
                             GError **error) {
  GStatBuf st;
  *exists = *empty = FALSE;
  if (g_stat(dir, &st) != 0) {
    if (errno == ENOENT)
      return TRUE;
    int err = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: %s", dir,
                g_strerror(err));
    return FALSE;
  }
  if (!S_ISDIR(st.st_mode)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "%s: exists and is not a directory", dir);
    return FALSE;
  }
  *exists = TRUE;
  g_autoptr(GError) local = NULL;
  GDir *d = g_dir_open(dir, 0, &local);
  if (!d) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: %s", dir,
                local->message);
    return FALSE;
  }
  *empty = g_dir_read_name(d) == NULL;
  g_dir_close(d);
  return TRUE;
}

/* Whether replacing dir would remove the root, the home directory or the
 * current directory (or a directory containing it). */
static gboolean dangerous_target(const char *dir) {
  g_autofree char *canon = g_canonicalize_filename(dir, NULL);
  g_autofree char *cwd = g_get_current_dir();
  g_autofree char *under = g_strconcat(canon, G_DIR_SEPARATOR_S, NULL);
  return strcmp(canon, "/") == 0 || strcmp(canon, g_get_home_dir()) == 0 ||
         strcmp(canon, cwd) == 0 || g_str_has_prefix(cwd, under);
}

/* Writes every file into tmp. */
static gboolean write_files(const Export *e, const char *tmp, GPtrArray *files,
                            GError **error) {
  g_autofree char *main_c = make_main(e, error);
  if (!main_c)
    return FALSE;
  g_autofree char *makefile = make_makefile(e);
  g_autofree char *readme = make_readme(e);
  g_autofree char *cname = g_strconcat(e->base, ".c", NULL);
  g_autofree char *hname = g_strconcat(e->base, ".h", NULL);
  if (!write_text(tmp, cname, e->source, files, error) ||
      !write_text(tmp, hname, e->header, files, error) ||
      !write_text(tmp, "main.c", main_c, files, error) ||
      !write_text(tmp, "Makefile", makefile, files, error) ||
      !write_text(tmp, "README.md", readme, files, error))
    return FALSE;
  g_autofree char *wname = g_strconcat(e->base, ".weights", NULL);
  if (!write_weights(e->g, tmp, wname, files, error))
    return FALSE;
  if (e->o->session && weir_session_cursor(e->o->session) > 0) {
    g_autoptr(WeirRecipe) r = weir_session_export_recipe(e->o->session, error);
    if (!r)
      return FALSE;
    g_autofree char *json = weir_recipe_to_json(r);
    if (!write_text(tmp, "recipe.json", json, files, error))
      return FALSE;
  }
  g_autofree char *data = g_build_filename(tmp, "data", NULL);
  if (g_mkdir(data, 0755) != 0) {
    int err = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: %s", data,
                g_strerror(err));
    return FALSE;
  }
  for (guint i = 0; i < e->args->len; i++) {
    const Arg *a = g_ptr_array_index(e->args, i);
    g_autofree char *in = g_strconcat(a->c->name, ".npy", NULL);
    g_autofree char *out = g_strconcat(a->c->name, ".expected.npy", NULL);
    if (a->input_given && !write_tensor(tmp, in, a->input, files, error))
      return FALSE;
    if (a->output && !write_tensor(tmp, out, a->expected, files, error))
      return FALSE;
  }
  return TRUE;
}

/* Moves tmp to dir (replacing an empty directory, or with force a full
 * one). */
static gboolean finish(const char *tmp, const char *dir, const char *parent,
                       const char *base, gboolean exists, gboolean empty,
                       GError **error) {
  if (!exists || empty) {
    if (g_rename(tmp, dir) != 0) {
      int err = errno;
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: %s", dir,
                  g_strerror(err));
      return FALSE;
    }
    return TRUE;
  }
  g_autofree char *tmpl = g_strdup_printf(".%s.old-XXXXXX", base);
  g_autofree char *old = g_build_filename(parent, tmpl, NULL);
  if (!g_mkdtemp(old) || g_rmdir(old) != 0 || g_rename(dir, old) != 0) {
    int err = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: cannot move aside: %s",
                dir, g_strerror(err));
    return FALSE;
  }
  if (g_rename(tmp, dir) != 0) {
    int err = errno;
    g_rename(old, dir);
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: %s", dir,
                g_strerror(err));
    return FALSE;
  }
  remove_tree(old);
  return TRUE;
}

/* --------------------------------------------------------------- entry */

gboolean weir_export(const WeirGraph *g, const char *dir,
                     const WeirExportOptions *opts, WeirExportInfo *info,
                     GError **error) {
  g_return_val_if_fail(g && dir, FALSE);
  WeirExportOptions defaults = {.seed = 1, .rtol = -1, .atol = -1};
  if (!opts)
    opts = &defaults;
  if (info)
    memset(info, 0, sizeof *info);

  gboolean exists, empty;
  if (!target_state(dir, &exists, &empty, error))
    return FALSE;
  if (exists && !empty && !opts->force) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "%s: directory exists and is not empty (use --force to "
                "replace it)",
                dir);
    return FALSE;
  }

  if (exists && dangerous_target(dir)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO,
                "%s: refusing to replace the root, the home or the current "
                "directory (or one containing it); choose a new directory",
                dir);
    return FALSE;
  }

  Export e = {.g = g, .o = opts};
  gboolean ok = FALSE;
  char *tmp = NULL, *tmpl = NULL;
  g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(g_free);
  g_autofree char *canon = g_canonicalize_filename(dir, NULL);
  g_autofree char *parent = g_path_get_dirname(canon);
  g_autofree char *base = g_path_get_basename(canon);

  e.source = weir_codegen_c(g, NULL, error);
  if (!e.source) {
    g_prefix_error(error, "program '%s': cannot generate code: ", g->name);
    goto out;
  }
  e.header = weir_codegen_header(g);
  e.prefix = weir_codegen_prefix(g);
  /* "main" would clash with the harness */
  e.base = strcmp(e.prefix, "main") == 0 ? g_strdup("main_kernel")
                                         : g_strdup(e.prefix);
  e.libs = weir_codegen_libraries(e.source);
  if (!collect_arguments(&e, error) || !compute_expected(&e, error))
    goto out;
  e.analysis = weir_analysis_compute(g, e.bindings, error);
  if (!e.analysis) {
    g_prefix_error(error, "program '%s': analysis: ", g->name);
    goto out;
  }
  if (!analyze_compiled(&e, error))
    goto out;

  if (g_mkdir_with_parents(parent, 0755) != 0) {
    int err = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: cannot create %s: %s",
                dir, parent, g_strerror(err));
    goto out;
  }
  tmpl = g_strdup_printf(".%s.tmp-XXXXXX", base);
  tmp = g_build_filename(parent, tmpl, NULL);
  if (!g_mkdtemp_full(tmp, 0755)) {
    int err = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: cannot write in %s: %s",
                dir, parent, g_strerror(err));
    g_clear_pointer(&tmp, g_free);
    goto out;
  }
  if (!write_files(&e, tmp, files, error)) {
    g_prefix_error(error, "%s: ", dir);
    goto out;
  }
  if (!finish(tmp, canon, parent, base, exists, empty, error))
    goto out;
  g_clear_pointer(&tmp, g_free);
  ok = TRUE;
  if (info) {
    g_ptr_array_sort(files, compare_strings);
    info->prefix = g_strdup(e.prefix);
    info->directory = g_strdup(dir);
    info->files = g_steal_pointer(&files);
    info->n_inputs = e.n_given;
    info->n_generated = e.n_generated;
    info->n_outputs = e.n_outputs;
    info->interpreted = e.interpreted;
  }
out:
  if (tmp) {
    remove_tree(tmp);
    g_free(tmp);
  }
  g_free(tmpl);
  export_clear(&e);
  return ok;
}

void weir_export_info_clear(WeirExportInfo *info) {
  if (!info)
    return;
  g_clear_pointer(&info->prefix, g_free);
  g_clear_pointer(&info->directory, g_free);
  g_clear_pointer(&info->files, g_ptr_array_unref);
  memset(info, 0, sizeof *info);
}
