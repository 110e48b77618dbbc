/* weir-rows.c — list items and the history model (weir-rows.h). */
#include "weir-rows.h"

/* ------------------------------------------------------------- WeirRow */

G_DEFINE_FINAL_TYPE(WeirRow, weir_row, G_TYPE_OBJECT)

static void weir_row_finalize(GObject *o) {
  WeirRow *r = WEIR_ROW(o);
  g_free(r->title);
  g_free(r->subtitle);
  g_clear_object(&r->children);
  G_OBJECT_CLASS(weir_row_parent_class)->finalize(o);
}

static void weir_row_class_init(WeirRowClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = weir_row_finalize;
}

static void weir_row_init(WeirRow *r) {
  (void)r;
}

WeirRow *weir_row_new(WeirRowKind kind, const char *title,
                      const char *subtitle) {
  WeirRow *r = g_object_new(WEIR_TYPE_ROW, NULL);
  r->kind = kind;
  r->title = g_strdup(title);
  r->subtitle = g_strdup(subtitle);
  return r;
}

/* ------------------------------------------------------------ factories */

typedef struct {
  gboolean expander;
  WeirRowHoverFunc hover;
  gpointer user;
} FactoryData;

static void on_enter(GtkEventControllerMotion *c, double x, double y,
                     gpointer data) {
  (void)x;
  (void)y;
  FactoryData *fd = data;
  GtkWidget *w = gtk_event_controller_get_widget(GTK_EVENT_CONTROLLER(c));
  WeirRow *row = g_object_get_data(G_OBJECT(w), "weir-row");
  if (fd->hover && row)
    fd->hover(row, fd->user);
}

static void on_leave(GtkEventControllerMotion *c, gpointer data) {
  (void)c;
  FactoryData *fd = data;
  if (fd->hover)
    fd->hover(NULL, fd->user);
}

static void row_setup(GtkSignalListItemFactory *f, GtkListItem *item,
                      gpointer data) {
  (void)f;
  FactoryData *fd = data;
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_VERTICAL, 2);
  gtk_widget_add_css_class(box, "weir-row");
  GtkWidget *title = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(title), 0);
  gtk_label_set_ellipsize(GTK_LABEL(title), PANGO_ELLIPSIZE_END);
  /* bounded natural widths keep the side panel from pushing the graph */
  gtk_label_set_max_width_chars(GTK_LABEL(title), 40);
  gtk_widget_add_css_class(title, "weir-row-title");
  GtkWidget *sub = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(sub), 0);
  gtk_label_set_wrap(GTK_LABEL(sub), TRUE);
  gtk_label_set_wrap_mode(GTK_LABEL(sub), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_max_width_chars(GTK_LABEL(sub), 50);
  gtk_widget_add_css_class(sub, "dim-label");
  gtk_widget_add_css_class(sub, "weir-row-subtitle");
  gtk_box_append(GTK_BOX(box), title);
  gtk_box_append(GTK_BOX(box), sub);
  if (fd->hover) {
    GtkEventController *m = gtk_event_controller_motion_new();
    g_signal_connect(m, "enter", G_CALLBACK(on_enter), fd);
    g_signal_connect(m, "leave", G_CALLBACK(on_leave), fd);
    gtk_widget_add_controller(box, m);
  }
  if (fd->expander) {
    GtkWidget *exp = gtk_tree_expander_new();
    gtk_tree_expander_set_child(GTK_TREE_EXPANDER(exp), box);
    gtk_list_item_set_child(item, exp);
  } else {
    gtk_list_item_set_child(item, box);
  }
}

static void row_bind(GtkSignalListItemFactory *f, GtkListItem *item,
                     gpointer data) {
  (void)f;
  FactoryData *fd = data;
  GtkWidget *child = gtk_list_item_get_child(item);
  gpointer obj = gtk_list_item_get_item(item);
  GtkWidget *box = child;
  WeirRow *row;
  if (fd->expander) {
    GtkTreeListRow *tr = GTK_TREE_LIST_ROW(obj);
    gtk_tree_expander_set_list_row(GTK_TREE_EXPANDER(child), tr);
    box = gtk_tree_expander_get_child(GTK_TREE_EXPANDER(child));
    row = WEIR_ROW(gtk_tree_list_row_get_item(tr));
    g_object_unref(row); /* get_item is transfer full; the row holds it */
  } else {
    row = WEIR_ROW(obj);
  }
  g_object_set_data(G_OBJECT(box), "weir-row", row);
  GtkWidget *title = gtk_widget_get_first_child(box);
  GtkWidget *sub = gtk_widget_get_next_sibling(title);
  gtk_label_set_text(GTK_LABEL(title), row->title);
  gtk_label_set_text(GTK_LABEL(sub), row->subtitle ? row->subtitle : "");
  gtk_widget_set_visible(sub, row->subtitle && *row->subtitle);
  if (row->kind == WEIR_ROW_TIER || row->current)
    gtk_widget_add_css_class(title, "heading");
  else
    gtk_widget_remove_css_class(title, "heading");
  if (row->kind == WEIR_ROW_SITE && !row->legal)
    gtk_widget_add_css_class(box, "weir-illegal");
  else
    gtk_widget_remove_css_class(box, "weir-illegal");
}

static void row_unbind(GtkSignalListItemFactory *f, GtkListItem *item,
                       gpointer data) {
  (void)f;
  FactoryData *fd = data;
  GtkWidget *box = gtk_list_item_get_child(item);
  if (fd->expander)
    box = gtk_tree_expander_get_child(GTK_TREE_EXPANDER(box));
  g_object_set_data(G_OBJECT(box), "weir-row", NULL);
}

GtkListItemFactory *
weir_row_factory_new(gboolean expander, WeirRowHoverFunc hover, gpointer user) {
  GtkListItemFactory *f = gtk_signal_list_item_factory_new();
  FactoryData *fd = g_new0(FactoryData, 1);
  fd->expander = expander;
  fd->hover = hover;
  fd->user = user;
  g_object_set_data_full(G_OBJECT(f), "weir-factory-data", fd, g_free);
  g_signal_connect(f, "setup", G_CALLBACK(row_setup), fd);
  g_signal_connect(f, "bind", G_CALLBACK(row_bind), fd);
  g_signal_connect(f, "unbind", G_CALLBACK(row_unbind), fd);
  return f;
}

static void prop_setup(GtkSignalListItemFactory *f, GtkListItem *item,
                       gpointer data) {
  (void)f;
  (void)data;
  GtkWidget *box = gtk_box_new(GTK_ORIENTATION_HORIZONTAL, 8);
  GtkWidget *name = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(name), 0);
  gtk_label_set_width_chars(GTK_LABEL(name), 11);
  gtk_label_set_max_width_chars(GTK_LABEL(name), 11);
  gtk_label_set_ellipsize(GTK_LABEL(name), PANGO_ELLIPSIZE_END);
  gtk_widget_set_valign(name, GTK_ALIGN_START);
  gtk_widget_add_css_class(name, "dim-label");
  GtkWidget *value = gtk_label_new(NULL);
  gtk_label_set_xalign(GTK_LABEL(value), 0);
  gtk_label_set_wrap(GTK_LABEL(value), TRUE);
  gtk_label_set_wrap_mode(GTK_LABEL(value), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_selectable(GTK_LABEL(value), TRUE);
  gtk_label_set_max_width_chars(GTK_LABEL(value), 40);
  gtk_widget_set_hexpand(value, TRUE);
  gtk_box_append(GTK_BOX(box), name);
  gtk_box_append(GTK_BOX(box), value);
  gtk_list_item_set_child(item, box);
}

static void prop_bind(GtkSignalListItemFactory *f, GtkListItem *item,
                      gpointer data) {
  (void)f;
  (void)data;
  WeirRow *row = WEIR_ROW(gtk_list_item_get_item(item));
  GtkWidget *name = gtk_widget_get_first_child(gtk_list_item_get_child(item));
  GtkWidget *value = gtk_widget_get_next_sibling(name);
  gtk_label_set_text(GTK_LABEL(name), row->title);
  gtk_label_set_text(GTK_LABEL(value), row->subtitle ? row->subtitle : "");
}

GtkListItemFactory *weir_row_property_factory_new(void) {
  GtkListItemFactory *f = gtk_signal_list_item_factory_new();
  g_signal_connect(f, "setup", G_CALLBACK(prop_setup), NULL);
  g_signal_connect(f, "bind", G_CALLBACK(prop_bind), NULL);
  return f;
}

/* -------------------------------------------------------- WeirStepModel */

struct _WeirStepModel {
  GObject parent;
  WeirSession *session; /* borrowed */
  GPtrArray *rows;      /* WeirRow* or NULL (not built yet), n_steps + 1 */
  char *original_results;
};

static void weir_step_model_iface_init(GListModelInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE(WeirStepModel, weir_step_model, G_TYPE_OBJECT,
                              G_IMPLEMENT_INTERFACE(G_TYPE_LIST_MODEL,
                                                    weir_step_model_iface_init))

static void weir_step_model_finalize(GObject *o) {
  WeirStepModel *m = WEIR_STEP_MODEL(o);
  g_ptr_array_unref(m->rows);
  g_free(m->original_results);
  G_OBJECT_CLASS(weir_step_model_parent_class)->finalize(o);
}

static void weir_step_model_class_init(WeirStepModelClass *klass) {
  G_OBJECT_CLASS(klass)->finalize = weir_step_model_finalize;
}

static void clear_row(gpointer p) {
  if (p)
    g_object_unref(p);
}

static void weir_step_model_init(WeirStepModel *m) {
  m->rows = g_ptr_array_new_with_free_func(clear_row);
}

static GType step_model_get_item_type(GListModel *l) {
  (void)l;
  return WEIR_TYPE_ROW;
}

static guint step_model_get_n_items(GListModel *l) {
  WeirStepModel *m = WEIR_STEP_MODEL(l);
  return m->session ? weir_session_n_steps(m->session) + 1 : 0;
}

/* "61.0 MiB -> 60.5 MiB (-0.9%)" */
static char *format_delta(const WeirFigure *a, const WeirFigure *b) {
  g_autofree char *x = weir_figure_format(a, TRUE);
  g_autofree char *y = weir_figure_format(b, TRUE);
  if (a->known && b->known && a->value > 0) {
    double pct = 100.0 * (double)(b->value - a->value) / (double)a->value;
    return g_strdup_printf("logical volume %s \u2192 %s (%+.2f%%)", x, y, pct);
  }
  return g_strdup_printf("logical volume %s \u2192 %s", x, y);
}

static WeirRow *build_row(WeirStepModel *m, guint index) {
  guint cursor = weir_session_cursor(m->session);
  GString *sub = g_string_new(NULL);
  WeirRow *row;
  if (index == 0) {
    const char *src = weir_session_source(m->session);
    g_autofree char *base = src ? g_path_get_basename(src) : NULL;
    g_autofree char *title = g_strdup_printf(
        "0  original%s%s", base ? " \u2014 " : "", base ? base : "");
    const char *bm = weir_session_original_bookmark(m->session);
    if (bm)
      g_string_append_printf(sub, "\u2605 %s", bm);
    g_autofree char *res = weir_evaluation_describe_json(m->original_results);
    if (res)
      g_string_append_printf(sub, "%s%s", sub->len ? " \u00b7 " : "", res);
    row = weir_row_new(WEIR_ROW_STEP, title, sub->str);
  } else {
    const WeirStep *st = weir_session_step(m->session, index);
    const char *first =
        st->labels && st->labels->len ? g_ptr_array_index(st->labels, 0) : NULL;
    g_autofree char *title = g_strdup_printf(
        "%u  %s%s%s%s%s", index, st->transform, first ? " @ " : "",
        first ? first : "", st->params && *st->params ? "  " : "",
        st->params ? st->params : "");
    g_autofree char *delta = format_delta(&st->bytes_before, &st->bytes_after);
    g_string_append(sub, delta);
    if (st->bookmark)
      g_string_append_printf(sub, " \u00b7 \u2605 %s", st->bookmark);
    g_autofree char *res = weir_evaluation_describe_json(st->results);
    if (res)
      g_string_append_printf(sub, "\n%s", res);
    row = weir_row_new(WEIR_ROW_STEP, title, sub->str);
  }
  g_string_free(sub, TRUE);
  row->index = index;
  row->current = index == cursor;
  return row;
}

static gpointer step_model_get_item(GListModel *l, guint position) {
  WeirStepModel *m = WEIR_STEP_MODEL(l);
  if (position >= step_model_get_n_items(l))
    return NULL;
  while (m->rows->len <= position)
    g_ptr_array_add(m->rows, NULL);
  WeirRow *row = g_ptr_array_index(m->rows, position);
  if (!row) {
    row = build_row(m, position);
    g_ptr_array_index(m->rows, position) = row;
  }
  return g_object_ref(row);
}

static void weir_step_model_iface_init(GListModelInterface *iface) {
  iface->get_item_type = step_model_get_item_type;
  iface->get_n_items = step_model_get_n_items;
  iface->get_item = step_model_get_item;
}

WeirStepModel *weir_step_model_new(void) {
  return g_object_new(WEIR_TYPE_STEP_MODEL, NULL);
}

void weir_step_model_set_session(WeirStepModel *m, WeirSession *session) {
  guint old = step_model_get_n_items(G_LIST_MODEL(m));
  m->session = session;
  g_ptr_array_set_size(m->rows, 0);
  g_clear_pointer(&m->original_results, g_free);
  guint now = step_model_get_n_items(G_LIST_MODEL(m));
  if (old || now)
    g_list_model_items_changed(G_LIST_MODEL(m), 0, old, now);
}

/* Forgets cached rows from position on (they are rebuilt on demand). */
static void forget(WeirStepModel *m, guint position, guint n) {
  for (guint i = position; i < position + n && i < m->rows->len; i++) {
    clear_row(g_ptr_array_index(m->rows, i));
    g_ptr_array_index(m->rows, i) = NULL;
  }
}

void weir_step_model_steps_changed(WeirStepModel *m, guint position,
                                   guint removed, guint added) {
  guint p = position + 1;
  /* Keep the cache aligned with the positions. */
  if (p < m->rows->len) {
    guint end = MIN(p + removed, m->rows->len);
    forget(m, p, end - p);
    g_ptr_array_remove_range(m->rows, p, end - p);
    for (guint i = 0; i < added; i++)
      g_ptr_array_insert(m->rows, (gint)p, NULL);
  }
  g_list_model_items_changed(G_LIST_MODEL(m), p, removed, added);
}

void weir_step_model_step_updated(WeirStepModel *m, guint index) {
  forget(m, index, 1);
  g_list_model_items_changed(G_LIST_MODEL(m), index, 1, 1);
}

void weir_step_model_cursor_changed(WeirStepModel *m, guint old_cursor,
                                    guint cursor) {
  guint n = step_model_get_n_items(G_LIST_MODEL(m));
  if (old_cursor < n && old_cursor != cursor)
    weir_step_model_step_updated(m, old_cursor);
  if (cursor < n)
    weir_step_model_step_updated(m, cursor);
}

void weir_step_model_set_original_results(WeirStepModel *m, const char *json) {
  g_free(m->original_results);
  m->original_results = g_strdup(json);
  if (m->session)
    weir_step_model_step_updated(m, 0);
}

const char *weir_step_model_get_original_results(WeirStepModel *m) {
  return m->original_results;
}
