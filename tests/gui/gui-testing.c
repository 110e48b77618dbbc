/* gui-testing.c: see gui-testing.h. */
#include "gui-testing.h"

#include "weir-expand.h"
#include "weir-import.h"
#include "weir-json.h"

WeirGraph *gui_testing_load(const char *path, gboolean expand, GError **error) {
  WeirGraph *g = weir_onnx_is_model_path(path)
                     ? weir_onnx_import(path, NULL, error)
                     : weir_graph_load(path, error);
  if (g && expand) {
    weir_expansions_init();
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
  gboolean done = FALSE;
  gulong id =
      g_signal_connect_swapped(v, "layout-done", G_CALLBACK(set_flag), &done);
  weir_graph_view_set_program(v, g, NULL);
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
