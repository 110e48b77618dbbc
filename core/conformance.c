/* conformance.c — the ONNX backend node tests, run through Weir.
 *
 * One test: load the model, decide which operator it is counted under, then
 * for each data set import the model with the data set's input shapes and
 * bind its arguments (test_begin); with the compiled backend, compile the
 * programs (compile_tests, for a batch of tests at once); then run each
 * data set — interpreter on the expanded program, or the kernel — and
 * compare the outputs (test_finish).  Errors of code WEIR_ERROR_UNSUPPORTED
 * (from the importer, an expansion, the code generator or the tensor
 * readers) make the test "unsupported"; any other error makes it "error".
 * weir-conformance.h gives the rules and the expectations file format.
 */
#include <string.h>

#include "weir-conformance.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-lower.h"
#include "weir-ops.h"
#include "weir-runtime.h"
#include "weir-tensor-io.h"

typedef struct {
  double rtol, atol;
  char *reason;
} Tolerance;

typedef struct {
  WeirConformanceStatus status; /* FAIL or ERROR */
  char *reason;
} BadData;

struct _WeirConformanceExpectations {
  GHashTable *expected;   /* test name -> reason (owned) */
  GHashTable *tolerances; /* test name -> Tolerance* (owned) */
  GHashTable *bad_data;   /* test name -> BadData* (owned) */
};

static void tolerance_free(gpointer p) {
  Tolerance *t = p;
  g_free(t->reason);
  g_free(t);
}

static void bad_data_free(gpointer p) {
  BadData *b = p;
  g_free(b->reason);
  g_free(b);
}

const char *weir_conformance_status_name(WeirConformanceStatus s) {
  switch (s) {
  case WEIR_CONFORMANCE_PASS:
    return "pass";
  case WEIR_CONFORMANCE_FAIL:
    return "FAIL";
  case WEIR_CONFORMANCE_UNSUPPORTED:
    return "unsupported";
  case WEIR_CONFORMANCE_ERROR:
    return "error";
  case WEIR_CONFORMANCE_BAD_DATA:
    return "bad data";
  }
  return "?";
}

/* ---------------------------------------------------------- expectations */

void weir_conformance_expectations_free(WeirConformanceExpectations *e) {
  if (!e)
    return;
  g_hash_table_unref(e->expected);
  g_hash_table_unref(e->tolerances);
  g_hash_table_unref(e->bad_data);
  g_free(e);
}

WeirConformanceExpectations *weir_conformance_expectations_new(void) {
  WeirConformanceExpectations *e = g_new0(WeirConformanceExpectations, 1);
  e->expected = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  e->tolerances =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, tolerance_free);
  e->bad_data =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, bad_data_free);
  return e;
}

/* One line of an expectations file, split: the words before '#' (borrowed
 * from line, which is modified) and the reason after it. */
static GPtrArray *split_line(char *line, const char **reason, GStrv *tokens) {
  char *hash = strchr(line, '#');
  *reason = hash ? g_strstrip(hash + 1) : "";
  if (hash)
    *hash = '\0';
  *tokens = g_strsplit_set(g_strstrip(line), " \t", -1);
  GPtrArray *w = g_ptr_array_new();
  for (guint k = 0; (*tokens)[k]; k++)
    if (*(*tokens)[k])
      g_ptr_array_add(w, (*tokens)[k]);
  return w;
}

static gboolean is_listed(const WeirConformanceExpectations *e,
                          const char *name) {
  return g_hash_table_contains(e->expected, name) ||
         g_hash_table_contains(e->tolerances, name) ||
         g_hash_table_contains(e->bad_data, name);
}

static gboolean parse_tolerance(const char *tok, const char *key, double *out) {
  gsize len = strlen(key);
  if (strncmp(tok, key, len) != 0 || tok[len] != '=')
    return FALSE;
  char *end = NULL;
  double v = g_ascii_strtod(tok + len + 1, &end);
  if (!end || end == tok + len + 1 || *end || v < 0)
    return FALSE;
  *out = v;
  return TRUE;
}

WeirConformanceExpectations *
weir_conformance_expectations_load(const char *path, GError **error) {
  g_autofree char *text = NULL;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(path, &text, NULL, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s", local->message);
    return NULL;
  }
  g_autoptr(WeirConformanceExpectations) e =
      weir_conformance_expectations_new();
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    char *line = g_strstrip(lines[i]);
    if (!*line || *line == '#')
      continue;
    const char *reason;
    g_auto(GStrv) tokens = NULL;
    g_autoptr(GPtrArray) w = split_line(line, &reason, &tokens);
    const char *name = w->len ? g_ptr_array_index(w, 0) : "";
    if (!*reason) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "%s:%u: '%s' needs a reason after '#'", path, i + 1, name);
      return NULL;
    }
    if (g_hash_table_contains(e->expected, name) ||
        g_hash_table_contains(e->tolerances, name)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "%s:%u: '%s' is listed twice", path, i + 1, name);
      return NULL;
    }
    if (w->len == 1) {
      g_hash_table_insert(e->expected, g_strdup(name), g_strdup(reason));
      continue;
    }
    Tolerance *t = g_new0(Tolerance, 1);
    t->rtol = WEIR_CONFORMANCE_RTOL;
    t->atol = WEIR_CONFORMANCE_ATOL;
    t->reason = g_strdup(reason);
    g_hash_table_insert(e->tolerances, g_strdup(name), t);
    for (guint k = 1; k < w->len; k++) {
      const char *tok = g_ptr_array_index(w, k);
      if (!parse_tolerance(tok, "rtol", &t->rtol) &&
          !parse_tolerance(tok, "atol", &t->atol)) {
        g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                    "%s:%u: '%s': expected rtol=NUMBER or atol=NUMBER, not "
                    "'%s'",
                    path, i + 1, name, tok);
        return NULL;
      }
    }
  }
  return g_steal_pointer(&e);
}

gboolean
weir_conformance_expectations_load_bad_data(WeirConformanceExpectations *e,
                                            const char *path, GError **error) {
  g_return_val_if_fail(e != NULL, FALSE);
  g_autofree char *text = NULL;
  g_autoptr(GError) local = NULL;
  if (!g_file_get_contents(path, &text, NULL, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s", local->message);
    return FALSE;
  }
  /* parsed completely before e changes */
  g_autoptr(GHashTable) found =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, bad_data_free);
  g_autoptr(GPtrArray) order = g_ptr_array_new();
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    char *line = g_strstrip(lines[i]);
    if (!*line || *line == '#')
      continue;
    const char *reason;
    g_auto(GStrv) tokens = NULL;
    g_autoptr(GPtrArray) w = split_line(line, &reason, &tokens);
    const char *name = w->len ? g_ptr_array_index(w, 0) : "";
    const char *st = w->len > 1 ? g_ptr_array_index(w, 1) : "";
    WeirConformanceStatus status;
    if (strcmp(st, "FAIL") == 0)
      status = WEIR_CONFORMANCE_FAIL;
    else if (strcmp(st, "error") == 0)
      status = WEIR_CONFORMANCE_ERROR;
    else {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "%s:%u: '%s': expected the status the bad data gives "
                  "(FAIL or error) after the test name",
                  path, i + 1, name);
      return FALSE;
    }
    if (w->len > 2) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "%s:%u: '%s': unexpected '%s' after the status", path, i + 1,
                  name, (const char *)g_ptr_array_index(w, 2));
      return FALSE;
    }
    if (!*reason) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "%s:%u: '%s' needs the evidence after '#'", path, i + 1,
                  name);
      return FALSE;
    }
    if (g_hash_table_contains(found, name)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "%s:%u: '%s' is listed twice", path, i + 1, name);
      return FALSE;
    }
    if (is_listed(e, name)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_PARSE,
                  "%s:%u: '%s' is also listed with the expected results "
                  "(known bad data is listed only here)",
                  path, i + 1, name);
      return FALSE;
    }
    BadData *b = g_new0(BadData, 1);
    b->status = status;
    b->reason = g_strdup(reason);
    char *key = g_strdup(name);
    g_hash_table_insert(found, key, b);
    g_ptr_array_add(order, key);
  }
  for (guint i = 0; i < order->len; i++) {
    char *key = g_ptr_array_index(order, i);
    gpointer value = NULL;
    g_hash_table_steal_extended(found, key, NULL, &value);
    g_hash_table_insert(e->bad_data, key, value);
  }
  return TRUE;
}

const char *
weir_conformance_bad_data_reason(const WeirConformanceExpectations *e,
                                 const char *test,
                                 WeirConformanceStatus *status) {
  const BadData *b = e ? g_hash_table_lookup(e->bad_data, test) : NULL;
  if (b && status)
    *status = b->status;
  return b ? b->reason : NULL;
}

const char *
weir_conformance_expected_reason(const WeirConformanceExpectations *e,
                                 const char *test) {
  return e ? g_hash_table_lookup(e->expected, test) : NULL;
}

static int cmp_str(gconstpointer a, gconstpointer b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

GPtrArray *
weir_conformance_expected_tests(const WeirConformanceExpectations *e) {
  GPtrArray *names = g_ptr_array_new();
  if (!e)
    return names;
  GHashTableIter it;
  gpointer key;
  g_hash_table_iter_init(&it, e->expected);
  while (g_hash_table_iter_next(&it, &key, NULL))
    g_ptr_array_add(names, key);
  g_ptr_array_sort(names, cmp_str);
  return names;
}

/* ----------------------------------------------------------------- tests */

static gboolean is_test_dir(const char *dir) {
  g_autofree char *model = g_build_filename(dir, "model.onnx", NULL);
  return g_file_test(model, G_FILE_TEST_IS_REGULAR);
}

/* Sorted entries of a directory (owned strings). */
static GPtrArray *dir_entries(const char *dir, GError **error) {
  g_autoptr(GError) local = NULL;
  g_autoptr(GDir) d = g_dir_open(dir, 0, &local);
  if (!d) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s", local->message);
    return NULL;
  }
  GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
  const char *name;
  while ((name = g_dir_read_name(d)))
    g_ptr_array_add(names, g_strdup(name));
  g_ptr_array_sort(names, cmp_str);
  return names;
}

GPtrArray *weir_conformance_find_tests(const char *const *dirs,
                                       GError **error) {
  g_autoptr(GPtrArray) tests = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; dirs && dirs[i]; i++) {
    const char *dir = dirs[i];
    if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: no such directory",
                  dir);
      return NULL;
    }
    if (is_test_dir(dir)) {
      g_ptr_array_add(tests, g_strdup(dir));
      continue;
    }
    g_autoptr(GPtrArray) names = dir_entries(dir, error);
    if (!names)
      return NULL;
    guint found = 0;
    for (guint k = 0; k < names->len; k++) {
      g_autofree char *sub =
          g_build_filename(dir, g_ptr_array_index(names, k), NULL);
      if (g_file_test(sub, G_FILE_TEST_IS_DIR) && is_test_dir(sub)) {
        g_ptr_array_add(tests, g_steal_pointer(&sub));
        found++;
      }
    }
    if (found == 0) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s: neither a test (no model.onnx) nor a directory of "
                  "tests",
                  dir);
      return NULL;
    }
  }
  return g_steal_pointer(&tests);
}

void weir_conformance_result_free(WeirConformanceResult *r) {
  if (!r)
    return;
  g_free(r->name);
  g_free(r->path);
  g_free(r->op);
  g_free(r->detail);
  g_free(r->expected_reason);
  g_free(r->bad_data_reason);
  g_free(r);
}

gboolean weir_conformance_result_is_failure(const WeirConformanceResult *r) {
  if (r->status == WEIR_CONFORMANCE_PASS ||
      r->status == WEIR_CONFORMANCE_BAD_DATA || r->expected_reason)
    return FALSE;
  return !(r->status == WEIR_CONFORMANCE_UNSUPPORTED && !r->ops_known);
}

static gboolean is_default_domain(const char *domain) {
  return !*domain || strcmp(domain, "ai.onnx") == 0;
}

/* "reducesum" from "ReduceSum" or "reduce_sum". (transfer full) */
static char *squash(const char *s) {
  GString *out = g_string_new(NULL);
  for (; *s; s++)
    if (*s != '_')
      g_string_append_c(out, g_ascii_tolower(*s));
  return g_string_free(out, FALSE);
}

/* The operator a test is counted under (see weir-conformance.h). */
static char *test_operator(const WeirOnnxModel *model, const char *dir,
                           const char *name) {
  const WeirOnnxGraph *gr = weir_onnx_model_graph(model);
  g_autoptr(GPtrArray) ops = g_ptr_array_new();
  gboolean constant = FALSE;
  for (guint i = 0; i < gr->n_nodes; i++) {
    const char *op = gr->nodes[i].op_type;
    if (strcmp(op, "Constant") == 0) {
      constant = TRUE;
      continue;
    }
    if (!g_ptr_array_find_with_equal_func(ops, op, g_str_equal, NULL))
      g_ptr_array_add(ops, (gpointer)op);
  }
  if (ops->len == 1)
    return g_strdup(g_ptr_array_index(ops, 0));
  if (ops->len == 0)
    return g_strdup(constant ? "Constant" : "(none)");
  /* A function expanded into several operators: the test without the
   * suffix has the operator itself. */
  if (g_str_has_suffix(name, "_expanded")) {
    g_autofree char *plain =
        g_strndup(name, strlen(name) - strlen("_expanded"));
    g_autofree char *parent = g_path_get_dirname(dir);
    g_autofree char *sibling = g_build_filename(parent, plain, NULL);
    g_autofree char *path = g_build_filename(sibling, "model.onnx", NULL);
    g_autoptr(WeirOnnxModel) m = weir_onnx_model_load(path, NULL);
    if (m)
      return test_operator(m, sibling, plain);
  }
  /* Otherwise the longest operator name the test name starts with. */
  g_autofree char *key =
      squash(g_str_has_prefix(name, "test_") ? name + 5 : name);
  g_autoptr(GPtrArray) known = weir_op_names();
  const char *best = NULL;
  gsize best_len = 0;
  for (guint pass = 0; pass < 2; pass++) {
    GPtrArray *list = pass == 0 ? ops : known;
    for (guint i = 0; i < list->len; i++) {
      g_autofree char *s = squash(g_ptr_array_index(list, i));
      gsize len = strlen(s);
      if (len > best_len && g_str_has_prefix(key, s)) {
        best = g_ptr_array_index(list, i);
        best_len = len;
      }
    }
  }
  return g_strdup(best ? best : g_ptr_array_index(ops, ops->len - 1));
}

static gboolean model_ops_known(const WeirOnnxModel *model) {
  const WeirOnnxGraph *gr = weir_onnx_model_graph(model);
  for (guint i = 0; i < gr->n_nodes; i++) {
    const WeirOnnxNode *n = &gr->nodes[i];
    gboolean constant =
        is_default_domain(n->domain) && strcmp(n->op_type, "Constant") == 0;
    if (!constant && !weir_op_lookup_onnx(n->domain, n->op_type))
      return FALSE;
  }
  return TRUE;
}

static char *shape_text(const WeirTensor *t) {
  GString *s = g_string_new("[");
  for (guint d = 0; d < t->rank; d++)
    g_string_append_printf(s, "%s%" G_GINT64_FORMAT, d ? ", " : "",
                           t->shape[d]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

static gboolean same_shape(const WeirTensor *a, const WeirTensor *b) {
  if (a->rank != b->rank)
    return FALSE;
  for (guint d = 0; d < a->rank; d++)
    if (a->shape[d] != b->shape[d])
      return FALSE;
  return TRUE;
}

/* TRUE when some node reads graph input `name` where Weir has an attribute
 * (Reshape's shape, Slice's starts, Range's limit, ...): the ONNX tests
 * feed such values as inputs, Weir takes them as constants.  Integer
 * attributes always; float ones (Clip's min, Range's limit) only when
 * `floats`, as operators may take those as data at run time. */
static gboolean is_attribute_input(const WeirOnnxModel *model, const char *name,
                                   gboolean floats) {
  const WeirOnnxGraph *gr = weir_onnx_model_graph(model);
  gint64 opset = weir_onnx_model_opset(model, "");
  for (guint i = 0; i < gr->n_nodes; i++) {
    const WeirOnnxNode *n = &gr->nodes[i];
    const WeirOpInfo *info =
        is_default_domain(n->domain) ? weir_op_lookup(n->op_type) : NULL;
    for (guint a = 0; info && a < info->n_attrs; a++) {
      const WeirOpAttrSpec *spec = &info->attrs[a];
      gboolean integer =
          spec->type == WEIR_ATTR_INT || spec->type == WEIR_ATTR_INTS;
      if (spec->from_input == 0 || opset < spec->input_since ||
          (!integer && !floats))
        continue;
      const char *in = weir_onnx_node_input(n, spec->from_input - 1);
      if (in && strcmp(in, name) == 0)
        return TRUE;
    }
  }
  return FALSE;
}

/* One data set of a test: the program imported with the data set's input
 * shapes, and its arguments bound. */
typedef struct {
  char *set_dir;
  WeirGraph *g;
  GHashTable *names;  /* ONNX name -> container name (owned strings) */
  GHashTable *args;   /* container name -> WeirTensor* (owned) */
  WeirKernel *kernel; /* the compiled backend's kernel, or NULL */
} DataSet;

static void data_set_free(gpointer p) {
  DataSet *ds = p;
  g_free(ds->set_dir);
  g_clear_pointer(&ds->g, weir_graph_free);
  g_clear_pointer(&ds->names, g_hash_table_unref);
  g_clear_pointer(&ds->args, g_hash_table_unref);
  g_clear_pointer(&ds->kernel, weir_kernel_free);
  g_free(ds);
}

/* One test on its way through the runner. */
typedef struct {
  WeirConformanceResult *r; /* owned until handed out */
  WeirOnnxModel *model;
  double rtol, atol;
  gboolean allow_any_opset;
  gboolean compiled;
  /* the status the test's known bad data gives (when r->bad_data_reason) */
  WeirConformanceStatus bad_status;
  GPtrArray *sets; /* DataSet*, the prepared ones, in order */
  GError *pending; /* preparing the data set after the last one failed */
  gboolean done;   /* r is final */
  double max_error;
  gint64 micros; /* time spent on this test (with its share of compiles) */
} TestRun;

static void test_run_free(TestRun *t) {
  weir_conformance_result_free(t->r);
  g_clear_pointer(&t->model, weir_onnx_model_free);
  g_clear_pointer(&t->sets, g_ptr_array_unref);
  g_clear_error(&t->pending);
  g_free(t);
}

/* Reads file k of kind ("input"/"output") of the data set. */
static WeirTensor *read_tensor(const char *set_dir, const char *kind, guint k,
                               GError **error) {
  g_autofree char *file = g_strdup_printf("%s_%u.pb", kind, k);
  g_autofree char *path = g_build_filename(set_dir, file, NULL);
  if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s: missing", path);
    return NULL;
  }
  return weir_tensor_read_pb(path, NULL, error);
}

/* ONNX stores BFLOAT16 values as their 16-bit patterns, and its own test
 * data (onnx 1.12) writes them as UINT16 tensors: onnx.mapping maps
 * BFLOAT16 to the storage type UINT16 (TENSOR_TYPE_TO_STORAGE_TENSOR_TYPE),
 * the Cast generator (onnx/backend/test/case/node/cast.py) saves the bit
 * patterns as a NumPy uint16 array, and ONNX's runner
 * (onnx/backend/test/runner) hands those words to the backend unchanged
 * for an input the model declares BFLOAT16.  So a UINT16 tensor for a
 * value declared BFLOAT16 is read as bf16 bit patterns (same size, same
 * bits); any other mismatch stays an error. */
static void as_declared(WeirTensor *x, const WeirOnnxValueInfo *vi) {
  if (x && vi && vi->kind == WEIR_ONNX_VALUE_TENSOR && vi->dtype_ok &&
      vi->dtype == WEIR_DTYPE_BF16 && x->dtype == WEIR_DTYPE_U16)
    x->dtype = WEIR_DTYPE_BF16;
}

static void args_insert(GHashTable *args, const char *name, WeirTensor *t) {
  g_hash_table_replace(args, g_strdup(name), t);
}

/* Says so when a graph input or output is of a kind Weir lacks. */
static gboolean check_values(const WeirOnnxModel *model, GPtrArray *inputs,
                             GError **error) {
  const WeirOnnxGraph *gr = weir_onnx_model_graph(model);
  const char *source = weir_onnx_model_source(model);
  /* Sequences and optionals have no TensorProto file: say so before trying
   * to read them as one. */
  for (guint i = 0; i < inputs->len; i++) {
    const WeirOnnxValueInfo *vi = g_ptr_array_index(inputs, i);
    if (vi->kind == WEIR_ONNX_VALUE_OTHER) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: input '%s' is not a tensor (sequences and optionals "
                  "are not supported)",
                  source, vi->name);
      return FALSE;
    }
  }
  /* Element types Weir lacks: say which value has one. */
  for (guint i = 0; i < inputs->len; i++) {
    const WeirOnnxValueInfo *vi = g_ptr_array_index(inputs, i);
    if (vi->kind == WEIR_ONNX_VALUE_TENSOR && !vi->dtype_ok) {
      g_autofree char *t = weir_onnx_type_name(vi->onnx_type);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: input '%s' has element type %s, which Weir does not "
                  "support",
                  source, vi->name, t);
      return FALSE;
    }
  }
  for (guint i = 0; i < gr->n_outputs; i++) {
    if (gr->outputs[i].kind == WEIR_ONNX_VALUE_TENSOR &&
        !gr->outputs[i].dtype_ok) {
      g_autofree char *t = weir_onnx_type_name(gr->outputs[i].onnx_type);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: output '%s' has element type %s, which Weir does not "
                  "support",
                  source, gr->outputs[i].name, t);
      return FALSE;
    }
    if (gr->outputs[i].kind == WEIR_ONNX_VALUE_OTHER) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_UNSUPPORTED,
                  "%s: output '%s' is not a tensor (sequences and optionals "
                  "are not supported)",
                  source, gr->outputs[i].name);
      return FALSE;
    }
  }
  return TRUE;
}

/* Imports the model with the shapes of the data set in set_dir and binds
 * its arguments.  The interpreter backend expands every library node here;
 * the compiled one leaves that to the code generator (with the default
 * implementations, as weir run does) and binds only the arguments of the
 * generated code, not the constants compiled into it. */
static DataSet *prepare_data_set(TestRun *t, const char *set_dir,
                                 GError **error) {
  const WeirOnnxGraph *gr = weir_onnx_model_graph(t->model);
  g_autoptr(GPtrArray) inputs = g_ptr_array_new(); /* real inputs */
  for (guint i = 0; i < gr->n_inputs; i++)
    if (weir_onnx_graph_is_real_input(gr, gr->inputs[i].name))
      g_ptr_array_add(inputs, (gpointer)&gr->inputs[i]);
  if (!check_values(t->model, inputs, error))
    return NULL;

  g_autoptr(GPtrArray) in_tensors =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_tensor_free);
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  for (guint i = 0; i < inputs->len; i++) {
    const WeirOnnxValueInfo *vi = g_ptr_array_index(inputs, i);
    WeirTensor *x = read_tensor(set_dir, "input", i, error);
    if (!x)
      return NULL;
    as_declared(x, vi);
    g_ptr_array_add(in_tensors, x);
    GArray *shape = g_array_sized_new(FALSE, FALSE, sizeof(gint64), x->rank);
    g_array_append_vals(shape, x->shape, x->rank);
    g_hash_table_insert(shapes, (gpointer)vi->name, shape);
  }

  DataSet *ds = g_new0(DataSet, 1);
  g_autoptr(GPtrArray) owner = g_ptr_array_new_with_free_func(data_set_free);
  g_ptr_array_add(owner, ds);
  ds->set_dir = g_strdup(set_dir);
  ds->names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

  /* Attribute inputs become constants: integer ones first; when the
   * operator then cannot take a float one at run time, those too. */
  g_autoptr(GError) first = NULL;
  for (int floats = 0; floats < 2 && !ds->g; floats++) {
    g_autoptr(GHashTable) values = g_hash_table_new(g_str_hash, g_str_equal);
    guint n_floats = 0;
    for (guint i = 0; i < inputs->len; i++) {
      const WeirOnnxValueInfo *vi = g_ptr_array_index(inputs, i);
      if (is_attribute_input(t->model, vi->name, floats)) {
        g_hash_table_insert(values, (gpointer)vi->name,
                            g_ptr_array_index(in_tensors, i));
        n_floats += !is_attribute_input(t->model, vi->name, FALSE);
      }
    }
    if (floats && n_floats == 0)
      break;
    g_hash_table_remove_all(ds->names);
    WeirOnnxImportOptions opts = {.input_shapes = shapes,
                                  .input_values = values,
                                  .names = ds->names,
                                  .allow_any_opset = t->allow_any_opset};
    ds->g = weir_onnx_import_model(t->model, &opts, first ? NULL : &first);
    if (!ds->g && first->code != WEIR_ERROR_UNSUPPORTED)
      break;
  }
  if (!ds->g) {
    g_propagate_error(error, g_steal_pointer(&first));
    return NULL;
  }
  if (!t->compiled && !weir_lower(ds->g, NULL, error))
    return NULL;

  const WeirGraph *g = ds->g;
  ds->args = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                   (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < inputs->len; i++) {
    const WeirOnnxValueInfo *vi = g_ptr_array_index(inputs, i);
    const char *cname = g_hash_table_lookup(ds->names, vi->name);
    const WeirContainer *c = cname ? weir_graph_container(g, cname) : NULL;
    WeirTensor *x = g_ptr_array_index(in_tensors, i);
    if (!c || c->transient || (t->compiled && c->initial))
      continue; /* taken as a constant */
    if (x->dtype != c->dtype) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s/input_%u.pb: dtype %s, but input '%s' is %s", set_dir, i,
                  weir_dtype_name(x->dtype), vi->name,
                  weir_dtype_name(c->dtype));
      return NULL;
    }
    args_insert(ds->args, c->name, weir_tensor_copy(x));
  }
  g_autoptr(GHashTable) bindings = weir_bindings_new();
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient || (t->compiled && c->initial) ||
        g_hash_table_contains(ds->args, c->name))
      continue;
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    for (guint d = 0; d < c->shape->len; d++)
      if (!weir_expr_eval(g_ptr_array_index(c->shape, d), bindings, &shape[d],
                          error))
        return NULL;
    WeirTensor *x = weir_tensor_try_new(c->dtype, c->shape->len, shape, error);
    if (!x) {
      g_prefix_error(error, "container '%s': ", c->name);
      return NULL;
    }
    args_insert(ds->args, c->name, x);
  }
  return g_ptr_array_steal_index(owner, 0);
}

/* The value a graph output ended up with: its argument, or for an output
 * that import made a constant, that constant. (transfer full) */
static WeirTensor *output_value(const DataSet *ds, const char *oname,
                                GError **error) {
  const char *cname = g_hash_table_lookup(ds->names, oname);
  const WeirTensor *got = cname ? g_hash_table_lookup(ds->args, cname) : NULL;
  const WeirContainer *c = cname ? weir_graph_container(ds->g, cname) : NULL;
  if (got && c) /* trimmed to its count when its length is data-dependent */
    return weir_container_trim(ds->g, c, got, ds->args, error);
  if (got)
    return weir_tensor_copy(got);
  if (c && c->initial) {
    g_autoptr(GHashTable) bindings = weir_bindings_new();
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    for (guint d = 0; d < c->shape->len; d++)
      if (!weir_expr_eval(g_ptr_array_index(c->shape, d), bindings, &shape[d],
                          error))
        return NULL;
    g_autoptr(WeirTensor) x =
        weir_tensor_try_new(c->dtype, c->shape->len, shape, error);
    if (!x) {
      g_prefix_error(error, "container '%s': ", c->name);
      return NULL;
    }
    gsize size = 0;
    const void *bytes = g_bytes_get_data(c->initial, &size);
    if (size == weir_tensor_nbytes(x)) {
      memcpy(x->data, bytes, size);
      return g_steal_pointer(&x);
    }
  }
  g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
              "output '%s' has no container", oname);
  return NULL;
}

/* Runs a prepared data set and compares its outputs; *mismatch receives
 * the first difference (or stays NULL). */
static gboolean run_data_set(TestRun *t, DataSet *ds, char **mismatch,
                             GError **error) {
  g_autoptr(GHashTable) bindings = weir_bindings_new();
  if (t->compiled) {
    if (!weir_kernel_run(ds->kernel, bindings, ds->args, error))
      return FALSE;
  } else if (!weir_interpret(ds->g, bindings, ds->args, NULL, error))
    return FALSE;

  const WeirOnnxGraph *gr = weir_onnx_model_graph(t->model);
  for (guint k = 0; k < gr->n_outputs; k++) {
    const char *oname = gr->outputs[k].name;
    g_autoptr(WeirTensor) expected =
        read_tensor(ds->set_dir, "output", k, error);
    if (!expected)
      return FALSE;
    as_declared(expected, &gr->outputs[k]);
    g_autoptr(WeirTensor) got = output_value(ds, oname, error);
    if (!got)
      return FALSE;
    if (*mismatch)
      continue;
    if (got->dtype != expected->dtype) {
      *mismatch = g_strdup_printf("output '%s': dtype %s, expected %s", oname,
                                  weir_dtype_name(got->dtype),
                                  weir_dtype_name(expected->dtype));
      continue;
    }
    if (!same_shape(got, expected)) {
      g_autofree char *a = shape_text(got);
      g_autofree char *b = shape_text(expected);
      *mismatch =
          g_strdup_printf("output '%s': shape %s, expected %s", oname, a, b);
      continue;
    }
    gboolean exact = !weir_dtype_is_float(got->dtype);
    double err = 0;
    g_autoptr(GError) diff = NULL;
    gboolean close = weir_tensor_allclose(got, expected, exact ? 0 : t->rtol,
                                          exact ? 0 : t->atol, &err, &diff);
    t->max_error = MAX(t->max_error, err);
    if (!close)
      *mismatch = g_strdup_printf("output '%s': %s", oname, diff->message);
  }
  return TRUE;
}

/* Data set directories of a test, sorted. */
static GPtrArray *data_sets(const char *dir, GError **error) {
  g_autoptr(GPtrArray) names = dir_entries(dir, error);
  if (!names)
    return NULL;
  GPtrArray *sets = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < names->len; i++) {
    const char *n = g_ptr_array_index(names, i);
    g_autofree char *path = g_build_filename(dir, n, NULL);
    if (g_str_has_prefix(n, "test_data_set_") &&
        g_file_test(path, G_FILE_TEST_IS_DIR))
      g_ptr_array_add(sets, g_steal_pointer(&path));
  }
  return sets;
}

static void result_error(WeirConformanceResult *r, const GError *e) {
  r->status = e->code == WEIR_ERROR_UNSUPPORTED ? WEIR_CONFORMANCE_UNSUPPORTED
                                                : WEIR_CONFORMANCE_ERROR;
  r->detail = g_strdup(e->message);
}

static gboolean is_compiled(const WeirConformanceOptions *opts) {
  return opts && opts->backend && strcmp(opts->backend, "compiled") == 0;
}

/* Loads the model of t and prepares its data sets; leaves t->done set
 * when the result is already known. */
static void test_load(TestRun *t, const char *dir,
                      const WeirConformanceOptions *opts) {
  WeirConformanceResult *r = t->r;
  g_autoptr(GError) error = NULL;
  g_autofree char *path = g_build_filename(dir, "model.onnx", NULL);
  t->model = weir_onnx_model_load(path, &error);
  if (!t->model) {
    r->op = g_strdup("(unreadable)");
    result_error(r, error);
    return;
  }
  r->op = test_operator(t->model, dir, r->name);
  r->ops_known = model_ops_known(t->model);
  if (opts && opts->backend && strcmp(opts->backend, "interp") != 0 &&
      !t->compiled) {
    r->status = WEIR_CONFORMANCE_ERROR;
    r->detail = g_strdup_printf("unknown backend '%s'", opts->backend);
    return;
  }
  g_autoptr(GPtrArray) sets = data_sets(dir, &error);
  if (sets && sets->len == 0)
    g_set_error(&error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "%s: no test_data_set_* directory", dir);
  if (!sets || sets->len == 0) {
    result_error(r, error);
    return;
  }
  for (guint i = 0; i < sets->len; i++) {
    DataSet *ds = prepare_data_set(t, g_ptr_array_index(sets, i), &t->pending);
    if (!ds)
      break;
    g_ptr_array_add(t->sets, ds);
  }
  t->done = FALSE;
}

/* Loads the test in dir and prepares its data sets (stopping at the first
 * that fails: its error waits in t->pending until the earlier ones ran). */
static TestRun *test_begin(const char *dir,
                           const WeirConformanceOptions *opts) {
  gint64 t0 = g_get_monotonic_time();
  TestRun *t = g_new0(TestRun, 1);
  WeirConformanceResult *r = t->r = g_new0(WeirConformanceResult, 1);
  r->path = g_strdup(dir);
  r->name = g_path_get_basename(dir);
  t->compiled = is_compiled(opts);
  t->allow_any_opset = opts && opts->allow_any_opset;
  t->sets = g_ptr_array_new_with_free_func(data_set_free);

  const WeirConformanceExpectations *ex = opts ? opts->expectations : NULL;
  r->expected_reason = g_strdup(weir_conformance_expected_reason(ex, r->name));
  r->bad_data_reason =
      g_strdup(weir_conformance_bad_data_reason(ex, r->name, &t->bad_status));
  t->rtol = opts && opts->rtol >= 0 ? opts->rtol : WEIR_CONFORMANCE_RTOL;
  t->atol = opts && opts->atol >= 0 ? opts->atol : WEIR_CONFORMANCE_ATOL;
  const Tolerance *tol =
      ex ? g_hash_table_lookup(ex->tolerances, r->name) : NULL;
  if (tol) {
    t->rtol = tol->rtol;
    t->atol = tol->atol;
  }

  t->done = TRUE;
  test_load(t, dir, opts);
  t->micros += g_get_monotonic_time() - t0;
  return t;
}

/* Compiles the prepared data sets of the tests that are not done: all at
 * once, so that misses compile in parallel; when that fails, test by test
 * to tell which failed.  Each test is charged the compile's wall time in
 * proportion to its number of programs. */
static void compile_tests(TestRun **tests, guint n,
                          const WeirCompileOptions *copts) {
  gint64 t0 = g_get_monotonic_time();
  g_autoptr(GPtrArray) graphs = g_ptr_array_new();
  g_autoptr(GPtrArray) sets = g_ptr_array_new();
  for (guint i = 0; i < n; i++) {
    for (guint k = 0; !tests[i]->done && k < tests[i]->sets->len; k++) {
      DataSet *ds = g_ptr_array_index(tests[i]->sets, k);
      g_ptr_array_add(graphs, ds->g);
      g_ptr_array_add(sets, ds);
    }
  }
  if (graphs->len == 0)
    return;
  g_autofree WeirKernel **kernels = g_new0(WeirKernel *, graphs->len);
  gboolean ok =
      weir_kernel_compile_many((const WeirGraph *const *)graphs->pdata,
                               graphs->len, copts, kernels, NULL, NULL);
  for (guint j = 0; ok && j < sets->len; j++)
    ((DataSet *)g_ptr_array_index(sets, j))->kernel = kernels[j];
  for (guint i = 0; !ok && i < n; i++) {
    TestRun *t = tests[i];
    if (t->done || t->sets->len == 0)
      continue;
    g_autoptr(GPtrArray) own = g_ptr_array_new();
    for (guint k = 0; k < t->sets->len; k++)
      g_ptr_array_add(own, ((DataSet *)g_ptr_array_index(t->sets, k))->g);
    g_autofree WeirKernel **ks = g_new0(WeirKernel *, own->len);
    g_autoptr(GError) error = NULL;
    if (!weir_kernel_compile_many((const WeirGraph *const *)own->pdata,
                                  own->len, copts, ks, NULL, &error)) {
      result_error(t->r, error);
      t->done = TRUE;
      continue;
    }
    for (guint k = 0; k < own->len; k++)
      ((DataSet *)g_ptr_array_index(t->sets, k))->kernel = ks[k];
  }
  gint64 share = (g_get_monotonic_time() - t0) / (gint64)graphs->len;
  for (guint i = 0; i < n; i++)
    tests[i]->micros += share * (gint64)tests[i]->sets->len;
}

/* Runs the prepared data sets in order and settles the result. */
static void test_finish(TestRun *t) {
  gint64 t0 = g_get_monotonic_time();
  WeirConformanceResult *r = t->r;
  char *mismatch = NULL;
  for (guint i = 0; !t->done && i < t->sets->len; i++) {
    DataSet *ds = g_ptr_array_index(t->sets, i);
    g_autoptr(GError) error = NULL;
    if (!run_data_set(t, ds, &mismatch, &error)) {
      result_error(r, error);
      t->done = TRUE;
      break;
    }
    r->n_data_sets++;
    if (mismatch) {
      g_autofree char *set = g_path_get_basename(ds->set_dir);
      r->status = WEIR_CONFORMANCE_FAIL;
      r->detail = g_strdup_printf("%s: %s", set, mismatch);
      t->done = TRUE;
    }
  }
  if (!t->done && t->pending)
    result_error(r, t->pending);
  t->done = TRUE;
  r->data_status = r->status;
  /* Known bad data: the status the list says is not Weir's failure. */
  if (r->bad_data_reason && r->status == t->bad_status)
    r->status = WEIR_CONFORMANCE_BAD_DATA;
  g_free(mismatch);
  r->max_error = t->max_error;
  g_ptr_array_set_size(t->sets, 0); /* frees kernels and tensors early */
  t->micros += g_get_monotonic_time() - t0;
  r->seconds = (double)t->micros / 1e6;
}

/* The compile options of the compiled backend. */
static WeirCompileOptions compile_options(const WeirConformanceOptions *opts) {
  WeirCompileOptions c = {0};
  if (opts && opts->compile)
    c = *opts->compile;
  if (!c.flags)
    c.flags = WEIR_CONFORMANCE_COMPILE_FLAGS;
  return c;
}

WeirConformanceResult *
weir_conformance_run_test(const char *dir, const WeirConformanceOptions *opts) {
  TestRun *t = test_begin(dir, opts);
  if (t->compiled) {
    WeirCompileOptions c = compile_options(opts);
    compile_tests(&t, 1, &c);
  }
  test_finish(t);
  WeirConformanceResult *r = g_steal_pointer(&t->r);
  test_run_free(t);
  return r;
}

GPtrArray *weir_conformance_run_tests(GPtrArray *dirs,
                                      const WeirConformanceOptions *opts,
                                      WeirConformanceFunc each,
                                      gpointer user_data) {
  g_return_val_if_fail(dirs != NULL, NULL);
  GPtrArray *results = g_ptr_array_new_with_free_func(
      (GDestroyNotify)weir_conformance_result_free);
  guint window = is_compiled(opts) ? WEIR_CONFORMANCE_COMPILE_BATCH : 1;
  WeirCompileOptions c = compile_options(opts);
  g_autofree TestRun **batch = g_new0(TestRun *, window);
  for (guint start = 0; start < dirs->len; start += window) {
    guint n = MIN(window, dirs->len - start);
    for (guint i = 0; i < n; i++)
      batch[i] = test_begin(g_ptr_array_index(dirs, start + i), opts);
    if (is_compiled(opts))
      compile_tests(batch, n, &c);
    for (guint i = 0; i < n; i++) {
      test_finish(batch[i]);
      WeirConformanceResult *r = g_steal_pointer(&batch[i]->r);
      g_clear_pointer(&batch[i], test_run_free);
      g_ptr_array_add(results, r);
      if (each)
        each(r, user_data);
    }
  }
  return results;
}

/* ---------------------------------------------------------------- totals */

void weir_conformance_totals_free(WeirConformanceTotals *t) {
  if (!t)
    return;
  g_free(t->op);
  g_free(t);
}

static void totals_add(WeirConformanceTotals *t,
                       const WeirConformanceResult *r) {
  t->tests++;
  switch (r->status) {
  case WEIR_CONFORMANCE_PASS:
    t->pass++;
    break;
  case WEIR_CONFORMANCE_FAIL:
    t->fail++;
    break;
  case WEIR_CONFORMANCE_UNSUPPORTED:
    t->unsupported++;
    break;
  case WEIR_CONFORMANCE_ERROR:
    t->error++;
    break;
  case WEIR_CONFORMANCE_BAD_DATA:
    t->bad_data++;
    break;
  }
  if (weir_conformance_result_is_failure(r))
    t->failures++;
}

static int cmp_totals(gconstpointer a, gconstpointer b) {
  const WeirConformanceTotals *x = *(const WeirConformanceTotals *const *)a;
  const WeirConformanceTotals *y = *(const WeirConformanceTotals *const *)b;
  return strcmp(x->op, y->op);
}

GPtrArray *weir_conformance_totals(GPtrArray *results) {
  GPtrArray *list = g_ptr_array_new_with_free_func(
      (GDestroyNotify)weir_conformance_totals_free);
  g_autoptr(GHashTable) by_op = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < results->len; i++) {
    const WeirConformanceResult *r = g_ptr_array_index(results, i);
    WeirConformanceTotals *t = g_hash_table_lookup(by_op, r->op);
    if (!t) {
      t = g_new0(WeirConformanceTotals, 1);
      t->op = g_strdup(r->op);
      g_hash_table_insert(by_op, t->op, t);
      g_ptr_array_add(list, t);
    }
    totals_add(t, r);
  }
  g_ptr_array_sort(list, cmp_totals);
  return list;
}

WeirConformanceTotals *weir_conformance_overall(GPtrArray *results) {
  WeirConformanceTotals *t = g_new0(WeirConformanceTotals, 1);
  t->op = g_strdup("total");
  for (guint i = 0; i < results->len; i++)
    totals_add(t, g_ptr_array_index(results, i));
  return t;
}
