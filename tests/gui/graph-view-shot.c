/* graph-view-shot: renders a program as the graph view shows it.
 *
 *   graph-view-shot [--expand] [--overlay bytes|flops|intensity]
 *                   [--size WxH] [--zoom Z] [--search TEXT] [--dark]
 *                   [--collapse-all] FILE OUT.png
 *
 * FILE is an IR JSON file or an ONNX model.  The view is put in a window
 * of the given size (default 1200x800), zoomed to fit (or to Z, centred
 * on the search hit when there is one), and its snapshot is rendered to
 * OUT.png.  Prints the counts and times: layout (worker), dot, snapshot
 * (recording the drawing) and render (rasterizing it to a texture).
 */
#include <stdio.h>
#include <stdlib.h>

#include "gui-testing.h"

static gboolean expand, dark, collapse_all;
static char *overlay, *size = "1200x800", *search;
static double zoom;

static const GOptionEntry entries[] = {
    {"expand", 0, 0, G_OPTION_ARG_NONE, &expand, "Expand library nodes", NULL},
    {"overlay", 0, 0, G_OPTION_ARG_STRING, &overlay,
     "Heat overlay: bytes, flops or intensity", "KIND"},
    {"size", 0, 0, G_OPTION_ARG_STRING, &size, "Window size", "WxH"},
    {"zoom", 0, 0, G_OPTION_ARG_DOUBLE, &zoom, "Zoom (default: fit)", "Z"},
    {"search", 0, 0, G_OPTION_ARG_STRING, &search, "Select a node by name",
     "TEXT"},
    {"dark", 0, 0, G_OPTION_ARG_NONE, &dark, "Prefer the dark style", NULL},
    {"collapse-all", 0, 0, G_OPTION_ARG_NONE, &collapse_all,
     "Collapse every top-level map scope", NULL},
    {NULL, 0, 0, 0, NULL, NULL, NULL},
};

int main(int argc, char **argv) {
  g_autoptr(GError) error = NULL;
  g_autoptr(GOptionContext) ctx = g_option_context_new("FILE OUT.png");
  g_option_context_add_main_entries(ctx, entries, NULL);
  if (!g_option_context_parse(ctx, &argc, &argv, &error) || argc != 3) {
    fprintf(stderr, "graph-view-shot: %s\n",
            error ? error->message : "usage: graph-view-shot FILE OUT.png");
    return 2;
  }
  if (!gtk_init_check()) {
    fprintf(stderr, "graph-view-shot: no display\n");
    return 77;
  }
  int w = 1200, h = 800;
  if (sscanf(size, "%dx%d", &w, &h) != 2 || w <= 0 || h <= 0) {
    fprintf(stderr, "graph-view-shot: bad --size '%s'\n", size);
    return 2;
  }
  WeirOverlay ov = WEIR_OVERLAY_NONE;
  if (overlay) {
    if (g_str_equal(overlay, "bytes"))
      ov = WEIR_OVERLAY_BYTES;
    else if (g_str_equal(overlay, "flops"))
      ov = WEIR_OVERLAY_FLOPS;
    else if (g_str_equal(overlay, "intensity"))
      ov = WEIR_OVERLAY_INTENSITY;
    else {
      fprintf(stderr, "graph-view-shot: bad --overlay '%s'\n", overlay);
      return 2;
    }
  }
  g_autoptr(WeirGraph) g = gui_testing_load(argv[1], expand, &error);
  if (!g) {
    fprintf(stderr, "graph-view-shot: %s\n", error->message);
    return 1;
  }
  if (dark)
    g_object_set(gtk_settings_get_default(),
                 "gtk-application-prefer-dark-theme", TRUE, NULL);
  GtkWidget *win = gtk_window_new();
  gtk_window_set_default_size(GTK_WINDOW(win), w, h);
  GtkWidget *view = weir_graph_view_new();
  WeirGraphView *v = WEIR_GRAPH_VIEW(view);
  gtk_window_set_child(GTK_WINDOW(win), view);
  gtk_window_present(GTK_WINDOW(win));
  gui_testing_settle(view);
  if (!gui_testing_set_and_wait(v, g, 600)) {
    fprintf(stderr, "graph-view-shot: layout timed out\n");
    return 1;
  }
  if (collapse_all) {
    guint n = 0;
    for (guint i = 0; i < g->states->len; i++) {
      WeirState *s = g_ptr_array_index(g->states, i);
      g_autoptr(WeirScopes) sc = weir_state_scopes(s, NULL);
      for (guint k = 0; sc && k < s->nodes->len; k++) {
        WeirNode *nd = g_ptr_array_index(s->nodes, k);
        if (nd->kind == WEIR_NODE_MAP_ENTRY &&
            weir_scopes_parent(sc, nd->id) == 0) {
          weir_graph_view_set_collapsed(v, s->id, nd->id, TRUE);
          n++;
        }
      }
    }
    if (n && !gui_testing_wait_layout(v, 600)) {
      fprintf(stderr, "graph-view-shot: layout timed out\n");
      return 1;
    }
    weir_graph_view_zoom_fit(v);
  }
  weir_graph_view_set_overlay(v, ov);
  if (search && !weir_graph_view_search(v, search))
    fprintf(stderr, "graph-view-shot: no node matches '%s'\n", search);
  if (zoom > 0) {
    weir_graph_view_set_zoom(v, zoom);
    if (search)
      weir_graph_view_zoom_to_selection(v), weir_graph_view_set_zoom(v, zoom);
  }
  gui_testing_settle(view);
  gint64 t0 = g_get_monotonic_time();
  if (!weir_graph_view_save_png(v, argv[2], &error)) {
    fprintf(stderr, "graph-view-shot: %s\n", error->message);
    return 1;
  }
  double render_ms = (g_get_monotonic_time() - t0) / 1000.0;
  printf("%s: %u nodes, %u edges drawn; layout %.1f ms (dot %.1f ms), "
         "snapshot %.1f ms, snapshot+render+png %.1f ms, zoom %.3f\n",
         argv[1], weir_graph_view_n_drawn_nodes(v),
         weir_graph_view_n_drawn_edges(v), weir_graph_view_last_layout_ms(v),
         weir_graph_view_last_dot_ms(v), weir_graph_view_last_draw_ms(v),
         render_ms, weir_graph_view_get_zoom(v));
  gtk_window_destroy(GTK_WINDOW(win));
  return 0;
}
