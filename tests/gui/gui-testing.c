/* gui-testing.c: see gui-testing.h. */
#include "gui-testing.h"

#include "weir-expand.h"
#include "weir-import.h"
#include "weir-init.h"
#include "weir-json.h"

WeirGraph *gui_testing_load(const char *path, gboolean expand, GError **error) {
  weir_init(); /* the importer needs the operator registry */
  WeirGraph *g = weir_onnx_is_model_path(path)
                     ? weir_onnx_import(path, NULL, error)
                     : weir_graph_load(path, error);
  if (g && expand) {
    if (!weir_expand_all(g, NULL, NULL, error)) {
      weir_graph_free(g);
      return NULL;
    }
  }
  return g;
}

static void set_flag(gboolean *flag) {
  *flag = TRUE;
}

static gboolean run_until(gboolean *flag, double timeout_s) {
  gint64 deadline = g_get_monotonic_time() + (gint64)(timeout_s * 1e6);
  while (!*flag && g_get_monotonic_time() < deadline)
    if (!g_main_context_iteration(NULL, FALSE))
      g_usleep(1000);
  return *flag;
}

gboolean gui_testing_wait_layout(WeirGraphView *v, double timeout_s) {
  gboolean done = FALSE;
  gulong id =
      g_signal_connect_swapped(v, "layout-done", G_CALLBACK(set_flag), &done);
  gboolean ok = run_until(&done, timeout_s);
  g_signal_handler_disconnect(v, id);
  return ok;
}

gboolean gui_testing_set_and_wait(WeirGraphView *v, const WeirGraph *g,
                                  double timeout_s) {
  return gui_testing_set_bound_and_wait(v, g, NULL, timeout_s);
}

gboolean gui_testing_set_bound_and_wait(WeirGraphView *v, const WeirGraph *g,
                                        GHashTable *bindings,
                                        double timeout_s) {
  gboolean done = FALSE;
  gulong id =
      g_signal_connect_swapped(v, "layout-done", G_CALLBACK(set_flag), &done);
  weir_graph_view_set_program(v, g, bindings);
  gboolean ok = run_until(&done, timeout_s);
  g_signal_handler_disconnect(v, id);
  gui_testing_settle(GTK_WIDGET(v));
  return ok;
}

void gui_testing_settle(GtkWidget *w) {
  gint64 deadline = g_get_monotonic_time() + 5 * G_USEC_PER_SEC;
  while (gtk_widget_get_width(w) <= 0 && g_get_monotonic_time() < deadline)
    if (!g_main_context_iteration(NULL, FALSE))
      g_usleep(1000);
  while (g_main_context_iteration(NULL, FALSE))
    ;
}

WeirGraph *gui_testing_chain(guint n_maps) {
  WeirGraph *g = weir_graph_new("chain");
  WeirState *s = weir_graph_add_state(g, "main");
  g_autoptr(GError) error = NULL;
  char name[32], next[32];
  g_snprintf(name, sizeof name, "x0");
  weir_graph_add_array(g, name, WEIR_DTYPE_F32, "256", FALSE, &error);
  WeirNode *prev = weir_state_add_access(g, s, name);
  for (guint i = 0; i < n_maps; i++) {
    g_snprintf(next, sizeof next, "x%u", i + 1);
    weir_graph_add_array(g, next, WEIR_DTYPE_F32, "256", i + 1 < n_maps,
                         &error);
    g_assert_no_error(error);
    const char *params[] = {"i", NULL}, *ranges[] = {"0:256", NULL};
    const char *ins[] = {"a", NULL}, *outs[] = {"b", NULL};
    char label[32];
    g_snprintf(label, sizeof label, "scale%u", i);
    WeirNode *exit = NULL;
    WeirNode *entry = weir_state_add_map(g, s, label, params, ranges,
                                         WEIR_SCHEDULE_PARALLEL, &exit, &error);
    g_assert_no_error(error);
    char in_c[40], out_c[40];
    g_snprintf(in_c, sizeof in_c, "IN_%s", name);
    g_snprintf(out_c, sizeof out_c, "OUT_%s", name);
    weir_node_add_in_conn(entry, in_c);
    weir_node_add_out_conn(entry, out_c);
    WeirNode *t = weir_state_add_tasklet(g, s, label, ins, outs, "b = a * 2.0");
    char ein[40], eout[40];
    g_snprintf(ein, sizeof ein, "IN_%s", next);
    g_snprintf(eout, sizeof eout, "OUT_%s", next);
    weir_node_add_in_conn(exit, ein);
    weir_node_add_out_conn(exit, eout);
    WeirNode *acc = weir_state_add_access(g, s, next);
    weir_state_add_memlet(g, s, prev->id, NULL, entry->id, in_c, name, "0:256",
                          &error);
    weir_state_add_memlet(g, s, entry->id, out_c, t->id, "a", name, "i",
                          &error);
    weir_state_add_memlet(g, s, t->id, "b", exit->id, ein, next, "i", &error);
    weir_state_add_memlet(g, s, exit->id, eout, acc->id, NULL, next, "0:256",
                          &error);
    g_assert_no_error(error);
    prev = acc;
    g_strlcpy(name, next, sizeof name);
  }
  return g;
}
