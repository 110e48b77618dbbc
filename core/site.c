/* site.c — sites written as text: weir_site_parse (weir-transform.h), the
 * syntax of `weir apply --site` (docs/transformations.md). */
#include <string.h>

#include "weir-transform.h"

/* Whether text is of the node-id form: digits, commas, spaces and at most
 * one colon, with at least one digit. */
static gboolean is_id_form(const char *text) {
  gboolean digit = FALSE;
  guint colons = 0;
  for (const char *c = text; *c; c++) {
    if (g_ascii_isdigit(*c))
      digit = TRUE;
    else if (*c == ':')
      colons++;
    else if (*c != ',' && *c != ' ' && *c != '\t')
      return FALSE;
  }
  return digit && colons <= 1;
}

/* A positive id from text with blanks around it; FALSE when it is not one. */
static gboolean parse_id(const char *text, guint *out) {
  g_autofree char *item = g_strstrip(g_strdup(text));
  guint64 v;
  if (!g_ascii_string_to_unsigned(item, 10, 1, G_MAXUINT, &v, NULL))
    return FALSE;
  *out = (guint)v;
  return TRUE;
}

/* "7,9" or "3:7,9" */
static gboolean parse_ids(const WeirGraph *g, const char *text, WeirSite *site,
                          GError **error) {
  const char *colon = strchr(text, ':');
  const char *list = colon ? colon + 1 : text;
  g_auto(GStrv) items = g_strsplit(list, ",", -1);
  guint n = g_strv_length(items);
  if (n == 0 || n > WEIR_SITE_MAX_NODES) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "--site %s: expected 1 to %d node ids separated by commas "
                "(such as 7,9 or STATE:7,9)",
                text, WEIR_SITE_MAX_NODES);
    return FALSE;
  }
  for (guint k = 0; k < n; k++)
    if (!parse_id(items[k], &site->nodes[k])) {
      g_autofree char *item = g_strstrip(g_strdup(items[k]));
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--site %s: '%s' is not a node id", text, item);
      return FALSE;
    }
  site->n_nodes = n;

  WeirState *st = NULL;
  if (colon) {
    g_autofree char *state = g_strndup(text, (gsize)(colon - text));
    guint id;
    if (!parse_id(state, &id)) {
      g_strstrip(state);
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--site %s: '%s' is not a state id", text, state);
      return FALSE;
    }
    st = weir_graph_state(g, id);
    if (!st) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--site %s: program '%s' has no state %u", text, g->name, id);
      return FALSE;
    }
  } else if (!weir_graph_node(g, site->nodes[0], &st)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "--site %s: program '%s' has no node %u", text, g->name,
                site->nodes[0]);
    return FALSE;
  }
  for (guint k = 0; k < n; k++)
    if (!weir_state_node(st, site->nodes[k])) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--site %s: state %u of program '%s' has no node %u", text,
                  st->id, g->name, site->nodes[k]);
      return FALSE;
    }
  site->state = st->id;
  return TRUE;
}

/* The candidates listed in an error: "@K  state 3: node 7 (...)", at most
 * 12 of them. */
static void list_sites(GString *out, const WeirGraph *g, GArray *sites,
                       const GArray *which) {
  for (guint i = 0; i < which->len && i < 12; i++) {
    guint k = g_array_index(which, guint, i);
    g_autofree char *d =
        weir_site_describe(g, &g_array_index(sites, WeirSite, k));
    g_string_append_printf(out, "\n  @%u  %s", k, d);
  }
  if (which->len > 12)
    g_string_append_printf(out, "\n  ... and %u more", which->len - 12);
}

gboolean weir_site_parse(const WeirGraph *g, const WeirTransformInfo *t,
                         const char *text, WeirSite *site, GError **error) {
  g_return_val_if_fail(g != NULL && site != NULL, FALSE);
  WeirSite parsed = {0};
  if (text && is_id_form(text)) {
    if (!parse_ids(g, text, &parsed, error))
      return FALSE;
    *site = parsed;
    return TRUE;
  }
  if (!t) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                "--site %s: expected node ids such as 7,9 or STATE:7,9 (@K "
                "and label patterns choose among a transformation's sites)",
                text ? text : "");
    return FALSE;
  }
  g_autoptr(GArray) sites = weir_transform_sites(t, g);
  if (text && text[0] == '@') {
    guint64 k;
    if (!g_ascii_string_to_unsigned(text + 1, 10, 0, G_MAXUINT, &k, NULL) ||
        k >= sites->len) {
      g_set_error(error, WEIR_ERROR, WEIR_ERROR_INVALID,
                  "--site %s: %s has %u site%s (@0..@%u)", text, t->name,
                  sites->len, sites->len == 1 ? "" : "s",
                  sites->len ? sites->len - 1 : 0);
      return FALSE;
    }
    *site = g_array_index(sites, WeirSite, k);
    return TRUE;
  }
  g_autoptr(GArray) which = g_array_new(FALSE, FALSE, sizeof(guint));
  g_autoptr(GPatternSpec) spec = text ? g_pattern_spec_new(text) : NULL;
  for (guint k = 0; k < sites->len; k++) {
    const WeirSite *c = &g_array_index(sites, WeirSite, k);
    const WeirState *st = weir_graph_state(g, c->state);
    const WeirNode *n =
        st && c->n_nodes ? weir_state_node(st, c->nodes[0]) : NULL;
    if (!spec || (n && n->label && g_pattern_spec_match_string(spec, n->label)))
      g_array_append_val(which, k);
  }
  if (which->len == 1) {
    *site = g_array_index(sites, WeirSite, g_array_index(which, guint, 0));
    return TRUE;
  }
  GString *msg = g_string_new(NULL);
  if (which->len == 0)
    g_string_append_printf(msg, "%s: no site%s%s", t->name,
                           text ? " whose first node matches " : "",
                           text ? text : " in this program");
  else {
    g_string_append_printf(msg,
                           "%s: %u sites%s%s; choose one with --site:", t->name,
                           which->len, text ? " match " : "", text ? text : "");
    list_sites(msg, g, sites, which);
  }
  g_set_error_literal(error, WEIR_ERROR, WEIR_ERROR_INVALID, msg->str);
  g_string_free(msg, TRUE);
  return FALSE;
}
