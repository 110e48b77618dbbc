/* conformance.c — the ONNX backend node tests, run through Weir.
 *
 * One test: load the model, decide which operator it is counted under, then
 * for each data set import the model with the data set's input shapes,
 * expand every library node, interpret, and compare the outputs.  Errors
 * of code WEIR_ERROR_UNSUPPORTED (from the importer, an expansion or the
 * tensor readers) make the test "unsupported"; any other error makes it
 * "error".  weir-conformance.h gives the rules and the expectations file
 * format.
 */
#include <string.h>

#include "weir-conformance.h"
#include "weir-expand.h"
#include "weir-import.h"
#include "weir-interp.h"
#include "weir-ops.h"
#include "weir-tensor-io.h"

typedef struct {
  double rtol, atol;
  char *reason;
} Tolerance;

struct _WeirConformanceExpectations {
  GHashTable *expected;   /* test name -> reason (owned) */
  GHashTable *tolerances; /* test name -> Tolerance* (owned) */
};

static void tolerance_free(gpointer p) {
  Tolerance *t = p;
  g_free(t->reason);
  g_free(t);
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
  }
  return "?";
}

/* ---------------------------------------------------------- expectations */

void weir_conformance_expectations_free(WeirConformanceExpectations *e) {
  if (!e)
    return;
  g_hash_table_unref(e->expected);
  g_hash_table_unref(e->tolerances);
  g_free(e);
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
      g_new0(WeirConformanceExpectations, 1);
  e->expected = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  e->tolerances =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, tolerance_free);
  g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
  for (guint i = 0; lines[i]; i++) {
    char *line = g_strstrip(lines[i]);
    if (!*line || *line == '#')
      continue;
    char *hash = strchr(line, '#');
    const char *reason = hash ? g_strstrip(hash + 1) : "";
    if (hash)
      *hash = '\0';
    g_auto(GStrv) tokens = g_strsplit_set(g_strstrip(line), " \t", -1);
    g_autoptr(GPtrArray) w = g_ptr_array_new();
    for (guint k = 0; tokens[k]; k++)
      if (*tokens[k])
        g_ptr_array_add(w, tokens[k]);
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
  g_free(r);
}

gboolean weir_conformance_result_is_failure(const WeirConformanceResult *r) {
  if (r->status == WEIR_CONFORMANCE_PASS || r->expected_reason)
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

/* Everything one data set needs. */
typedef struct {
  const WeirOnnxModel *model;
  const char *set_dir;
  gboolean allow_any_opset;
  double rtol, atol;
  double max_error; /* running maximum */
  char *mismatch;   /* first mismatch found, or NULL */
} DataSet;

/* Reads file k of kind ("input"/"output") of the data set. */
static WeirTensor *read_tensor(DataSet *ds, const char *kind, guint k,
                               GError **error) {
  g_autofree char *file = g_strdup_printf("%s_%u.pb", kind, k);
  g_autofree char *path = g_build_filename(ds->set_dir, file, NULL);
  if (!g_file_test(path, G_FILE_TEST_EXISTS)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID, "%s: missing", path);
    return NULL;
  }
  return weir_tensor_read_pb(path, NULL, error);
}

static void args_insert(GHashTable *args, const char *name, WeirTensor *t) {
  g_hash_table_replace(args, g_strdup(name), t);
}

static gboolean run_data_set(DataSet *ds, GError **error) {
  const WeirOnnxGraph *gr = weir_onnx_model_graph(ds->model);
  const char *source = weir_onnx_model_source(ds->model);
  g_autoptr(GPtrArray) inputs = g_ptr_array_new(); /* real inputs */
  for (guint i = 0; i < gr->n_inputs; i++)
    if (weir_onnx_graph_is_real_input(gr, gr->inputs[i].name))
      g_ptr_array_add(inputs, (gpointer)&gr->inputs[i]);
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

  g_autoptr(GPtrArray) in_tensors =
      g_ptr_array_new_with_free_func((GDestroyNotify)weir_tensor_free);
  g_autoptr(GHashTable) shapes = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
  for (guint i = 0; i < inputs->len; i++) {
    const WeirOnnxValueInfo *vi = g_ptr_array_index(inputs, i);
    WeirTensor *t = read_tensor(ds, "input", i, error);
    if (!t)
      return FALSE;
    g_ptr_array_add(in_tensors, t);
    GArray *shape = g_array_sized_new(FALSE, FALSE, sizeof(gint64), t->rank);
    g_array_append_vals(shape, t->shape, t->rank);
    g_hash_table_insert(shapes, (gpointer)vi->name, shape);
  }

  /* Attribute inputs become constants: integer ones first; when the
   * operator then cannot take a float one at run time, those too. */
  g_autoptr(GHashTable) names =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(WeirGraph) g = NULL;
  g_autoptr(GError) first = NULL;
  for (int floats = 0; floats < 2 && !g; floats++) {
    g_autoptr(GHashTable) values = g_hash_table_new(g_str_hash, g_str_equal);
    guint n_floats = 0;
    for (guint i = 0; i < inputs->len; i++) {
      const WeirOnnxValueInfo *vi = g_ptr_array_index(inputs, i);
      if (is_attribute_input(ds->model, vi->name, floats)) {
        g_hash_table_insert(values, (gpointer)vi->name,
                            g_ptr_array_index(in_tensors, i));
        n_floats += !is_attribute_input(ds->model, vi->name, FALSE);
      }
    }
    if (floats && n_floats == 0)
      break;
    g_hash_table_remove_all(names);
    WeirOnnxImportOptions opts = {.input_shapes = shapes,
                                  .input_values = values,
                                  .names = names,
                                  .allow_any_opset = ds->allow_any_opset};
    g = weir_onnx_import_model(ds->model, &opts, first ? NULL : &first);
    if (!g && first->code != WEIR_ERROR_UNSUPPORTED)
      break;
  }
  if (!g) {
    g_propagate_error(error, g_steal_pointer(&first));
    return FALSE;
  }
  if (!weir_expand_all(g, NULL, NULL, error))
    return FALSE;

  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, g_free, (GDestroyNotify)weir_tensor_free);
  for (guint i = 0; i < inputs->len; i++) {
    const WeirOnnxValueInfo *vi = g_ptr_array_index(inputs, i);
    const char *cname = g_hash_table_lookup(names, vi->name);
    const WeirContainer *c = cname ? weir_graph_container(g, cname) : NULL;
    WeirTensor *t = g_ptr_array_index(in_tensors, i);
    if (!c || c->transient)
      continue; /* taken as a constant */
    if (t->dtype != c->dtype) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "%s/input_%u.pb: dtype %s, but input '%s' is %s", ds->set_dir,
                  i, weir_dtype_name(t->dtype), vi->name,
                  weir_dtype_name(c->dtype));
      return FALSE;
    }
    args_insert(args, c->name, weir_tensor_copy(t));
  }
  g_autoptr(GHashTable) bindings = weir_bindings_new();
  for (guint i = 0; i < g->containers->len; i++) {
    const WeirContainer *c = g_ptr_array_index(g->containers, i);
    if (c->transient || g_hash_table_contains(args, c->name))
      continue;
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    for (guint d = 0; d < c->shape->len; d++)
      if (!weir_expr_eval(g_ptr_array_index(c->shape, d), bindings, &shape[d],
                          error))
        return FALSE;
    args_insert(args, c->name, weir_tensor_new(c->dtype, c->shape->len, shape));
  }
  if (!weir_interpret(g, bindings, args, NULL, error))
    return FALSE;

  for (guint k = 0; k < gr->n_outputs; k++) {
    const char *oname = gr->outputs[k].name;
    g_autoptr(WeirTensor) expected = read_tensor(ds, "output", k, error);
    if (!expected)
      return FALSE;
    const char *cname = g_hash_table_lookup(names, oname);
    const WeirTensor *got = cname ? g_hash_table_lookup(args, cname) : NULL;
    if (!got) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "output '%s' has no container", oname);
      return FALSE;
    }
    if (ds->mismatch)
      continue;
    if (got->dtype != expected->dtype) {
      ds->mismatch = g_strdup_printf("output '%s': dtype %s, expected %s",
                                     oname, weir_dtype_name(got->dtype),
                                     weir_dtype_name(expected->dtype));
      continue;
    }
    if (!same_shape(got, expected)) {
      g_autofree char *a = shape_text(got);
      g_autofree char *b = shape_text(expected);
      ds->mismatch =
          g_strdup_printf("output '%s': shape %s, expected %s", oname, a, b);
      continue;
    }
    gboolean exact = !weir_dtype_is_float(got->dtype);
    double err = 0;
    g_autoptr(GError) diff = NULL;
    gboolean close = weir_tensor_allclose(got, expected, exact ? 0 : ds->rtol,
                                          exact ? 0 : ds->atol, &err, &diff);
    ds->max_error = MAX(ds->max_error, err);
    if (!close)
      ds->mismatch = g_strdup_printf("output '%s': %s", oname, diff->message);
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

/* Fills r for the test in dir (everything but the time). */
static void run_test(WeirConformanceResult *r, const char *dir,
                     const WeirConformanceOptions *opts) {
  const WeirConformanceExpectations *ex = opts ? opts->expectations : NULL;
  r->expected_reason = g_strdup(weir_conformance_expected_reason(ex, r->name));
  double rtol = opts && opts->rtol >= 0 ? opts->rtol : WEIR_CONFORMANCE_RTOL;
  double atol = opts && opts->atol >= 0 ? opts->atol : WEIR_CONFORMANCE_ATOL;
  const Tolerance *tol =
      ex ? g_hash_table_lookup(ex->tolerances, r->name) : NULL;
  if (tol) {
    rtol = tol->rtol;
    atol = tol->atol;
  }

  g_autoptr(GError) error = NULL;
  g_autofree char *path = g_build_filename(dir, "model.onnx", NULL);
  g_autoptr(WeirOnnxModel) model = weir_onnx_model_load(path, &error);
  if (!model) {
    r->op = g_strdup("(unreadable)");
    result_error(r, error);
    return;
  }
  r->op = test_operator(model, dir, r->name);
  r->ops_known = model_ops_known(model);
  if (opts && opts->backend && strcmp(opts->backend, "interp") != 0) {
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
  DataSet ds = {.model = model,
                .allow_any_opset = opts && opts->allow_any_opset,
                .rtol = rtol,
                .atol = atol};
  for (guint i = 0; i < sets->len; i++) {
    ds.set_dir = g_ptr_array_index(sets, i);
    if (!run_data_set(&ds, &error)) {
      result_error(r, error);
      break;
    }
    r->n_data_sets++;
    if (ds.mismatch) {
      g_autofree char *set = g_path_get_basename(ds.set_dir);
      r->status = WEIR_CONFORMANCE_FAIL;
      r->detail = g_strdup_printf("%s: %s", set, ds.mismatch);
      break;
    }
  }
  g_free(ds.mismatch);
  r->max_error = ds.max_error;
}

WeirConformanceResult *
weir_conformance_run_test(const char *dir, const WeirConformanceOptions *opts) {
  gint64 t0 = g_get_monotonic_time();
  WeirConformanceResult *r = g_new0(WeirConformanceResult, 1);
  r->path = g_strdup(dir);
  r->name = g_path_get_basename(dir);
  run_test(r, dir, opts);
  r->seconds = (double)(g_get_monotonic_time() - t0) / 1e6;
  return r;
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
