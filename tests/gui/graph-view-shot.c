/* graph-view-shot: renders a program as the graph view shows it.
 *
 *   graph-view-shot [--expand] [--overlay bytes|flops|intensity]
 *                   [--size WxH] [--zoom Z] [--search TEXT] [--dark]
 *                   [--collapse-all] [--bind NAME=VALUE...] FILE OUT.png
 *
 * FILE is an IR JSON file or an ONNX model, or chain:N for a synthetic
 * chain of N elementwise maps (4N+1 nodes).  The view is put in a window
 * of the given size (default 1200x800), zoomed to fit (or to Z, centred
 * on the search hit when there is one), and its snapshot is rendered to
 * OUT.png.  Prints the counts and times: layout (worker), dot, snapshot
 * (recording the drawing) and a whole frame (snapshot + rasterizing it
 * to a texture by the window's renderer), best of three.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gui-testing.h"

static gboolean expand, dark, collapse_all;
static char *overlay, *size = "1200x800", *search;
static char **binds;
static double zoom;

static const GOptionEntry entries[] = {
    {"expand", 0, 0, G_OPTION_ARG_NONE, &expand, "Expand library nodes", NULL},
    {"overlay", 0, 0, G_OPTION_ARG_STRING, &overlay,
     "Heat overlay: bytes, flops or intensity", "KIND"},
    {"size", 0, 0, G_OPTION_ARG_STRING, &size, "Window size", "WxH"},
    {"zoom", 0, 0, G_OPTION_ARG_DOUBLE, &zoom, "Zoom (default: fit)", "Z"},
    {"search", 0, 0, G_OPTION_ARG_STRING, &search, "Select a node by name",
     "TEXT"},
    {"bind", 0, 0, G_OPTION_ARG_STRING_ARRAY, &binds,
     "Give a symbol a value (repeatable)", "NAME=VALUE"},
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
  /* "chain:N": the synthetic chain of N maps of gui_testing_chain() */
  g_autoptr(WeirGraph) g =
      g_str_has_prefix(argv[1], "chain:")
          ? gui_testing_chain((guint)g_ascii_strtoull(argv[1] + 6, NULL, 10))
          : gui_testing_load(argv[1], expand, &error);
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
  g_autoptr(GHashTable) bindings =
      g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (guint i = 0; binds && binds[i]; i++) {
    const char *eq = strchr(binds[i], '=');
    if (!eq) {
      fprintf(stderr, "graph-view-shot: bad --bind '%s'\n", binds[i]);
      return 2;
    }
    gint64 *val = g_new(gint64, 1);
    *val = g_ascii_strtoll(eq + 1, NULL, 10);
    g_hash_table_insert(bindings, g_strndup(binds[i], eq - binds[i]), val);
  }
  if (!gui_testing_set_bound_and_wait(v, g, bindings, 600)) {
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
  /* A frame as GTK makes it: the snapshot (recording the drawing), then
   * the renderer rasterizing it; best of 3. */
  double frame_ms = G_MAXDOUBLE, snap_ms = G_MAXDOUBLE;
  for (int i = 0; i < 3; i++) {
    gint64 t0 = g_get_monotonic_time();
    GtkSnapshot *snap = gtk_snapshot_new();
    GTK_WIDGET_GET_CLASS(view)->snapshot(view, snap);
    GskRenderNode *node = gtk_snapshot_free_to_node(snap);
    snap_ms = MIN(snap_ms, weir_graph_view_last_draw_ms(v));
    GdkTexture *tex = gsk_renderer_render_texture(
        gtk_native_get_renderer(gtk_widget_get_native(view)), node,
        &GRAPHENE_RECT_INIT(0, 0, gtk_widget_get_width(view),
                            gtk_widget_get_height(view)));
    frame_ms = MIN(frame_ms, (g_get_monotonic_time() - t0) / 1000.0);
    g_object_unref(tex);
    gsk_render_node_unref(node);
  }
  if (!weir_graph_view_save_png(v, argv[2], &error)) {
    fprintf(stderr, "graph-view-shot: %s\n", error->message);
    return 1;
  }
  printf(
      "%s: %u nodes, %u edges drawn; layout %.1f ms (dot %.1f ms); "
      "snapshot %.1f ms, snapshot+render %.1f ms at zoom %.3f (%dx%d, "
      "%s)\n",
      argv[1], weir_graph_view_n_drawn_nodes(v),
      weir_graph_view_n_drawn_edges(v), weir_graph_view_last_layout_ms(v),
      weir_graph_view_last_dot_ms(v), snap_ms, frame_ms,
      weir_graph_view_get_zoom(v), gtk_widget_get_width(view),
      gtk_widget_get_height(view),
      G_OBJECT_TYPE_NAME(gtk_native_get_renderer(gtk_widget_get_native(view))));
  gtk_window_destroy(GTK_WINDOW(win));
  return 0;
}
