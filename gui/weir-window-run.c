/* weir-window-run.c — the window's Run page: running and benchmarking the
 * current step against the original, and the tensor files of its
 * arguments.
 *
 * A run is a GTask worker on copies of the programs, the bindings and the
 * chosen tensors (weir_evaluate); progress comes back to the main thread
 * through g_main_context_invoke, and the result is stored in the session's
 * step (weir_session_set_results) when the history has not changed under
 * it (w->history_generation).  Results that arrive after the window is
 * disposed are dropped.
 */
#include <string.h>

#include "weir-roofline.h"
#include "weir-window-private.h"

typedef struct {
  WeirWindow *w; /* strong reference */
  WeirGraph *program, *reference;
  GHashTable *bindings;
  WeirEvaluateOptions opts;
  guint step;
  guint generation;
  char *label;
  GHashTable *inputs, *expected; /* copies of the window's tensors */
  guint n_input_files;
  gboolean bench;
  WeirEvaluation result;
  WeirProfile *profile; /* the instrumented runs after the evaluation */
  char *profile_error;
} RunData;

static void run_data_free(gpointer p) {
  RunData *d = p;
  g_object_unref(d->w);
  weir_graph_free(d->program);
  weir_graph_free(d->reference);
  g_hash_table_unref(d->bindings);
  g_free(d->label);
  g_clear_pointer(&d->inputs, g_hash_table_unref);
  g_clear_pointer(&d->expected, g_hash_table_unref);
  weir_evaluation_clear(&d->result);
  g_clear_pointer(&d->profile, weir_profile_free);
  g_free(d->profile_error);
  g_free(d);
}

typedef struct {
  WeirWindow *w;
  double fraction;
  char *phase;
} ProgressMsg;

static void progress_msg_free(gpointer p) {
  ProgressMsg *m = p;
  g_object_unref(m->w);
  g_free(m->phase);
  g_free(m);
}

static gboolean progress_main(gpointer p) {
  ProgressMsg *m = p;
  if (!m->w->disposed && m->w->run_cancellable) {
    gtk_progress_bar_set_fraction(m->w->progress_bar, m->fraction);
    gtk_label_set_text(m->w->progress_label, m->phase);
  }
  return G_SOURCE_REMOVE;
}

static void run_progress(double fraction, const char *phase, gpointer user) {
  RunData *d = user;
  ProgressMsg *m = g_new0(ProgressMsg, 1);
  m->w = g_object_ref(d->w);
  m->fraction = fraction;
  m->phase = g_strdup(phase);
  g_main_context_invoke_full(NULL, G_PRIORITY_DEFAULT, progress_main, m,
                             progress_msg_free);
}

/* Profiles the program after its evaluation (weir_profile_run): the
 * window's input tensors where chosen, random arguments (seed 1) for the
 * others; one instrumented run for Run, ten after a warm-up for
 * Benchmark.  A failure is kept as text: the evaluation stands. */
static void profile_program(RunData *d) {
  g_autoptr(GHashTable) args = g_hash_table_new_full(
      g_str_hash, g_str_equal, NULL, (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) list = weir_codegen_arguments(d->program);
  g_autoptr(GError) error = NULL;
  for (guint i = 0; i < list->len; i++) {
    const WeirContainer *c = g_ptr_array_index(list, i);
    const WeirTensor *given =
        d->inputs ? g_hash_table_lookup(d->inputs, c->name) : NULL;
    WeirTensor *t = given
                        ? weir_tensor_copy(given)
                        : weir_evaluate_random_input(c, d->bindings, 1, &error);
    if (!t) {
      d->profile_error =
          g_strdup_printf("argument '%s': %s", c->name, error->message);
      return;
    }
    g_hash_table_insert(args, c->name, t);
  }
  g_autoptr(WeirHwProfile) hw = weir_hw_profile_cached();
  WeirProfileOptions po = {.warmup = d->bench ? 1 : 0,
                           .repetitions = d->bench ? 10 : 1,
                           .hw = hw}; /* the roofline when measured */
  d->profile = weir_profile_run(d->program, d->bindings, args, &po, &error);
  if (!d->profile)
    d->profile_error = g_strdup(error->message);
}

static void run_thread(GTask *task, gpointer source, gpointer data,
                       GCancellable *cancellable) {
  (void)source;
  RunData *d = data;
  GError *error = NULL;
  if (!weir_evaluate(d->program, d->reference, d->bindings, &d->opts,
                     cancellable, run_progress, d, &d->result, &error)) {
    g_task_return_error(task, error);
    return;
  }
  if (!g_cancellable_is_cancelled(cancellable)) {
    run_progress(1.0, "profiling each node", d);
    profile_program(d);
  }
  g_task_return_boolean(task, TRUE);
}

static void show_running(WeirWindow *w, gboolean running) {
  gtk_widget_set_visible(GTK_WIDGET(w->progress_bar), running);
  gtk_widget_set_visible(GTK_WIDGET(w->progress_label), running);
  gtk_widget_set_visible(GTK_WIDGET(w->cancel_button), running);
  if (running) {
    gtk_progress_bar_set_fraction(w->progress_bar, 0);
    gtk_label_set_text(w->progress_label, "starting");
  }
}

static void run_done(GObject *source, GAsyncResult *res, gpointer user) {
  (void)user;
  WeirWindow *w = WEIR_WINDOW(source);
  GTask *task = G_TASK(res);
  RunData *d = g_task_get_task_data(task);
  g_autoptr(GError) error = NULL;
  if (w->disposed)
    return;
  g_clear_object(&w->run_cancellable);
  show_running(w, FALSE);
  weir_window_update_actions(w);
  if (!g_task_propagate_boolean(task, &error)) {
    if (g_error_matches(error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
      weir_window_show_message(w, FALSE, "Cancelled.");
    else
      weir_window_show_error(w, d->label, error);
    return;
  }
  if (w->session && d->generation == w->history_generation && d->profile) {
    g_hash_table_replace(w->profiles, GUINT_TO_POINTER(d->step),
                         g_steal_pointer(&d->profile));
    weir_window_refresh_profile(w);
  } else if (d->profile_error)
    gtk_label_set_text(w->roofline_label, d->profile_error);
  g_autofree char *json = weir_evaluation_to_json(&d->result, d->label);
  if (w->session && d->generation == w->history_generation &&
      d->step <= weir_session_n_steps(w->session)) {
    if (d->step == 0)
      weir_step_model_set_original_results(w->steps, json);
    else {
      g_autoptr(GError) e2 = NULL;
      if (!weir_session_set_results(w->session, d->step, json, &e2))
        weir_window_show_error(w, "results", e2);
    }
  }
  g_autofree char *line = weir_evaluation_describe_json(json);
  g_autofree char *files =
      d->n_input_files || d->result.n_expected
          ? g_strdup_printf("; %u input%s from files, %u expected output%s "
                            "checked",
                            d->n_input_files, d->n_input_files == 1 ? "" : "s",
                            d->result.n_expected,
                            d->result.n_expected == 1 ? "" : "s")
          : g_strdup("");
  g_autofree char *m =
      d->result.matches || !d->result.validated
          ? g_strdup_printf("Step %u %s%s%s", d->step, line, files,
                            d->result.cache_hit ? " (compiled code from the "
                                                  "cache)"
                                                : "")
          : g_strdup_printf("Step %u %s%s: %s", d->step, line, files,
                            d->result.mismatch);
  weir_window_show_message(w, d->result.validated && !d->result.matches, m);
}

/* A copy of a table name -> WeirTensor* for the worker. */
static GHashTable *copy_tensors(GHashTable *from) {
  GHashTable *to = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                         (GDestroyNotify)weir_tensor_free);
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, from);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_hash_table_insert(to, g_strdup(k), weir_tensor_copy(v));
  return to;
}

void weir_window_start_run(WeirWindow *w, gboolean bench) {
  if (!w->session || w->run_cancellable)
    return;
  RunData *d = g_new0(RunData, 1);
  d->w = g_object_ref(w);
  d->program = weir_graph_copy(weir_session_current(w->session));
  /* the original is the reference of every later step; step 0 is only
   * timed */
  d->reference = weir_session_cursor(w->session) > 0
                     ? weir_graph_copy(weir_session_original(w->session))
                     : NULL;
  d->bindings = weir_bindings_new();
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, weir_session_bindings(w->session));
  while (g_hash_table_iter_next(&it, &k, &v)) {
    gint64 *val = g_new(gint64, 1);
    *val = *(gint64 *)v;
    g_hash_table_insert(d->bindings, g_strdup(k), val);
  }
  if (g_hash_table_size(w->inputs)) {
    d->inputs = copy_tensors(w->inputs);
    d->opts.inputs = d->inputs;
    d->n_input_files = g_hash_table_size(w->inputs);
  }
  if (g_hash_table_size(w->expected)) {
    d->expected = copy_tensors(w->expected);
    d->opts.expected = d->expected;
  }
  d->opts.warmup = bench ? 3 : 0;
  d->opts.repetitions = bench ? 10 : 1;
  d->step = weir_session_cursor(w->session);
  d->generation = w->history_generation;
  d->label = g_strdup(bench ? "bench" : "run");
  d->bench = bench;
  w->run_cancellable = g_cancellable_new();
  show_running(w, TRUE);
  weir_window_update_actions(w);
  GTask *task = g_task_new(w, w->run_cancellable, run_done, NULL);
  g_task_set_task_data(task, d, run_data_free);
  g_task_run_in_thread(task, run_thread);
  g_object_unref(task);
}

/* ------------------------------------------------------------ profile */

const WeirProfile *weir_window_current_profile(WeirWindow *w) {
  if (!w->session)
    return NULL;
  return g_hash_table_lookup(w->profiles,
                             GUINT_TO_POINTER(weir_session_cursor(w->session)));
}

void weir_window_refresh_profile(WeirWindow *w) {
  const WeirProfile *p = weir_window_current_profile(w);
  if (!p) {
    weir_graph_view_set_times(w->graph_view, NULL, NULL, NULL, 0);
    gtk_label_set_text(w->roofline_label,
                       "Run or Benchmark the current step to profile it: one "
                       "point per node (FLOP per byte of modeled traffic, "
                       "GFLOP/s) under the roofline of this machine (weir "
                       "hw).");
    gtk_widget_queue_draw(GTK_WIDGET(w->roofline_area));
    return;
  }
  g_autofree guint *states = g_new0(guint, p->nodes->len + 1);
  g_autofree guint *nodes = g_new0(guint, p->nodes->len + 1);
  g_autofree double *secs = g_new0(double, p->nodes->len + 1);
  guint n = 0, points = 0;
  for (guint i = 0; i < p->nodes->len; i++) {
    const WeirProfileNode *pn = g_ptr_array_index(p->nodes, i);
    if (weir_profile_roofline_point(pn, NULL, NULL))
      points++;
    if (!pn->source)
      continue;
    states[n] = pn->state;
    nodes[n] = pn->source;
    secs[n] = pn->seconds;
    n++;
  }
  weir_graph_view_set_times(w->graph_view, states, nodes, secs, n);
  g_autofree char *t = g_strdup_printf(
      "Step %u: %u nodes timed (%u on the plot), sum of node times %.3f ms, "
      "uninstrumented run %.3f ms (median of %u); %s",
      weir_session_cursor(w->session), p->nodes->len, points, p->node_sum * 1e3,
      p->run_median * 1e3, p->repetitions,
      p->peak_gflops > 0 ? "roof from weir hw"
                         : "no roof: run `weir hw` once to measure it");
  gtk_label_set_text(w->roofline_label, t);
  gtk_widget_queue_draw(GTK_WIDGET(w->roofline_area));
}

static void draw_roofline(GtkDrawingArea *area, cairo_t *cr, int width,
                          int height, gpointer user) {
  (void)area;
  WeirWindow *w = user;
  const WeirProfile *p = weir_window_current_profile(w);
  if (!p)
    return;
  weir_roofline_draw(cr, width, height, p, "roofline of the current step");
}

void weir_window_run_init(WeirWindow *w) {
  w->profiles = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                      (GDestroyNotify)weir_profile_free);
  gtk_drawing_area_set_draw_func(w->roofline_area, draw_roofline, w, NULL);
}

/* ---------------------------------------------------------- run inputs */

/* The Run page lists the program's arguments (the containers the compiled
 * code takes: not transient, not constant).  Each gets random values (seed
 * 1) unless a tensor file (.pb or .npy, read by weir_tensor_load as `weir
 * run --input`) is chosen for it; an expected-output file makes the run
 * compare the argument after the run with it (as `weir run --expect`).
 * A file is checked when it is chosen (weir_evaluate_check_tensor: the
 * argument exists, same dtype and shape) and refused with a message
 * naming the file otherwise. */

void weir_window_clear_inputs(WeirWindow *w) {
  if (w->inputs)
    g_hash_table_remove_all(w->inputs);
  if (w->input_files)
    g_hash_table_remove_all(w->input_files);
  if (w->expected)
    g_hash_table_remove_all(w->expected);
  if (w->expected_files)
    g_hash_table_remove_all(w->expected_files);
}

gboolean weir_window_set_tensor_file(WeirWindow *w, gboolean expected,
                                     const char *name, const char *path) {
  GHashTable *tensors = expected ? w->expected : w->inputs;
  GHashTable *files = expected ? w->expected_files : w->input_files;
  const char *what = expected ? "expected output" : "input";
  if (!w->session)
    return FALSE;
  if (!path || !*path) {
    g_hash_table_remove(tensors, name);
    g_hash_table_remove(files, name);
    weir_window_refresh_inputs(w);
    return TRUE;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirTensor) t = weir_tensor_load(path, NULL, &error);
  if (!t) {
    /* the loader's messages name the file */
    g_autofree char *base = g_path_get_basename(path);
    if (strstr(error->message, base))
      weir_window_show_error(w, what, error);
    else {
      g_autofree char *m = g_strdup_printf("%s: %s", what, path);
      weir_window_show_error(w, m, error);
    }
    return FALSE;
  }
  if (!weir_evaluate_check_tensor(weir_session_current(w->session),
                                  weir_session_bindings(w->session), what, name,
                                  t, &error)) {
    weir_window_show_error(w, path, error);
    return FALSE;
  }
  g_hash_table_replace(tensors, g_strdup(name), g_steal_pointer(&t));
  g_hash_table_replace(files, g_strdup(name), g_strdup(path));
  g_autofree char *base = g_path_get_basename(path);
  g_autofree char *m = g_strdup_printf(
      "%s of '%s': %s", expected ? "Expected output" : "Input", name, base);
  weir_window_show_message(w, FALSE, m);
  weir_window_refresh_inputs(w);
  return TRUE;
}

/* The chooser of one argument's file: the argument and which file ride on
 * the dialog. */
static void on_tensor_chosen(GtkNativeDialog *d, int response, gpointer user) {
  WeirWindow *w = user;
  if (response == GTK_RESPONSE_ACCEPT && !w->disposed) {
    g_autoptr(GFile) f = gtk_file_chooser_get_file(GTK_FILE_CHOOSER(d));
    g_autofree char *path = f ? g_file_get_path(f) : NULL;
    if (path)
      weir_window_set_tensor_file(
          w, GPOINTER_TO_INT(g_object_get_data(G_OBJECT(d), "weir-expected")),
          g_object_get_data(G_OBJECT(d), "weir-argument"), path);
  }
  gtk_native_dialog_destroy(d);
  g_object_unref(d);
  g_object_unref(w);
}

static void choose_tensor(GtkButton *b, WeirWindow *w) {
  const char *name = g_object_get_data(G_OBJECT(b), "weir-argument");
  gboolean expected =
      GPOINTER_TO_INT(g_object_get_data(G_OBJECT(b), "weir-expected"));
  g_autofree char *title = g_strdup_printf(
      "%s of '%s'", expected ? "Expected Output" : "Input", name);
  GtkFileChooserNative *d = gtk_file_chooser_native_new(
      title, GTK_WINDOW(w), GTK_FILE_CHOOSER_ACTION_OPEN, NULL, NULL);
  gtk_native_dialog_set_modal(GTK_NATIVE_DIALOG(d), TRUE);
  GtkFileFilter *tensors = gtk_file_filter_new();
  gtk_file_filter_set_name(tensors, "Tensors (.pb, .npy)");
  gtk_file_filter_add_pattern(tensors, "*.pb");
  gtk_file_filter_add_pattern(tensors, "*.npy");
  gtk_file_chooser_add_filter(GTK_FILE_CHOOSER(d), tensors);
  g_object_unref(tensors);
  g_object_set_data_full(G_OBJECT(d), "weir-argument", g_strdup(name), g_free);
  g_object_set_data(G_OBJECT(d), "weir-expected", GINT_TO_POINTER(expected));
  /* the window outlives the dialog's answer */
  g_signal_connect(d, "response", G_CALLBACK(on_tensor_chosen),
                   g_object_ref(w));
  gtk_native_dialog_show(GTK_NATIVE_DIALOG(d));
}

static void clear_tensor(GtkButton *b, WeirWindow *w) {
  const char *name = g_object_get_data(G_OBJECT(b), "weir-argument");
  g_autofree char *n = g_strdup(name); /* the row is rebuilt */
  g_hash_table_remove(w->inputs, n);
  g_hash_table_remove(w->input_files, n);
  g_hash_table_remove(w->expected, n);
  g_hash_table_remove(w->expected_files, n);
  weir_window_refresh_inputs(w);
}

static GtkWidget *argument_button(WeirWindow *w, const char *label,
                                  const char *tooltip, const char *name,
                                  gboolean expected, GCallback cb) {
  GtkWidget *b = gtk_button_new_with_label(label);
  gtk_widget_set_tooltip_text(b, tooltip);
  gtk_widget_set_valign(b, GTK_ALIGN_CENTER);
  g_object_set_data_full(G_OBJECT(b), "weir-argument", g_strdup(name), g_free);
  g_object_set_data(G_OBJECT(b), "weir-expected", GINT_TO_POINTER(expected));
  g_signal_connect(b, "clicked", cb, w);
  return b;
}

static GtkWidget *small_label(const char *text, gboolean dim) {
  GtkWidget *l = gtk_label_new(text);
  gtk_label_set_xalign(GTK_LABEL(l), 0);
  gtk_label_set_ellipsize(GTK_LABEL(l), PANGO_ELLIPSIZE_MIDDLE);
  if (dim)
    gtk_widget_add_css_class(l, "dim-label");
  return l;
}

void weir_window_refresh_inputs(WeirWindow *w) {
  GtkWidget *child;
  while ((child = gtk_widget_get_first_child(GTK_WIDGET(w->inputs_grid))))
    gtk_grid_remove(w->inputs_grid, child);
  if (!w->session) {
    gtk_label_set_text(w->inputs_summary, "No program.");
    return;
  }
  const WeirGraph *g = weir_session_current(w->session);
  GHashTable *b = weir_session_bindings(w->session);
  g_autoptr(GPtrArray) args = weir_codegen_arguments(g);
  for (guint i = 0; i < args->len; i++) {
    const WeirContainer *c = g_ptr_array_index(args, i);
    GString *type = g_string_new(weir_dtype_name(c->dtype));
    g_string_append_c(type, '[');
    for (guint d = 0; d < c->shape->len; d++) {
      WeirExpr *e = g_ptr_array_index(c->shape, d);
      gint64 n = 0;
      if (weir_expr_eval(e, b, &n, NULL))
        g_string_append_printf(type, "%s%" G_GINT64_FORMAT, d ? ", " : "", n);
      else {
        g_autofree char *t = weir_expr_to_string(e);
        g_string_append_printf(type, "%s%s", d ? ", " : "", t);
      }
    }
    g_string_append_c(type, ']');
    GtkWidget *left = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);
    gtk_widget_set_hexpand(left, TRUE);
    g_autofree char *head = g_strdup_printf("%s  %s", c->name, type->str);
    g_string_free(type, TRUE);
    GtkWidget *hl = small_label(head, FALSE);
    gtk_widget_add_css_class(hl, "heading");
    gtk_box_append(GTK_BOX(left), hl);
    const char *in = g_hash_table_lookup(w->input_files, c->name);
    const char *ex = g_hash_table_lookup(w->expected_files, c->name);
    g_autofree char *in_base = in ? g_path_get_basename(in) : NULL;
    g_autofree char *ex_base = ex ? g_path_get_basename(ex) : NULL;
    g_autofree char *in_text = in ? g_strdup_printf("input: %s", in_base)
                                  : g_strdup("input: random (seed 1)");
    GtkWidget *il = small_label(in_text, in == NULL);
    if (in)
      gtk_widget_set_tooltip_text(il, in);
    gtk_box_append(GTK_BOX(left), il);
    if (ex) {
      g_autofree char *ex_text = g_strdup_printf("expected: %s", ex_base);
      GtkWidget *el = small_label(ex_text, FALSE);
      gtk_widget_set_tooltip_text(el, ex);
      gtk_box_append(GTK_BOX(left), el);
    }
    gtk_grid_attach(w->inputs_grid, left, 0, (int)i, 1, 1);
    gtk_grid_attach(w->inputs_grid,
                    argument_button(w, "Input\u2026",
                                    "Read this argument from a tensor file "
                                    "(.pb or .npy)",
                                    c->name, FALSE, G_CALLBACK(choose_tensor)),
                    1, (int)i, 1, 1);
    gtk_grid_attach(w->inputs_grid,
                    argument_button(w, "Expected\u2026",
                                    "Compare this argument after the run with "
                                    "a tensor file (.pb or .npy)",
                                    c->name, TRUE, G_CALLBACK(choose_tensor)),
                    2, (int)i, 1, 1);
    GtkWidget *clr = argument_button(w, NULL, "Random values, no expectation",
                                     c->name, FALSE, G_CALLBACK(clear_tensor));
    gtk_button_set_icon_name(GTK_BUTTON(clr), "edit-clear-symbolic");
    gtk_widget_set_sensitive(clr, in || ex);
    gtk_grid_attach(w->inputs_grid, clr, 3, (int)i, 1, 1);
  }
  guint n_in = g_hash_table_size(w->input_files);
  guint n_ex = g_hash_table_size(w->expected_files);
  g_autofree char *sum =
      args->len == 0
          ? g_strdup("The program has no arguments.")
          : g_strdup_printf(
                "%u argument%s: %u from files, %u random (seed 1); %u "
                "expected output%s.",
                args->len, args->len == 1 ? "" : "s", n_in, args->len - n_in,
                n_ex, n_ex == 1 ? "" : "s");
  gtk_label_set_text(w->inputs_summary, sum);
}

const char *weir_window_get_input_file(WeirWindow *w, const char *name,
                                       gboolean expected) {
  return g_hash_table_lookup(expected ? w->expected_files : w->input_files,
                             name);
}
