/* helper-scan.c — what the helper units are built from: the helpers each
 * native call recorded before another (their dependencies), and a small
 * scanner of helper texts (their file-scope function definitions, the
 * functions a text calls).
 *
 * Conventions:
 *  - A leaf of the code generator: it reads Gen's helper tables and the
 *    texts, and calls nothing else of it (codegen.c plans the units,
 *    dataflow.c records the dependencies; docs/codegen.md, "Helper
 *    units").
 *  - The scanner knows only what Weir's own kernel texts use: comments,
 *    string and character literals, preprocessor lines, balanced braces,
 *    `__attribute__((...))`; a text it misreads fails to compile or link,
 *    and WEIR_HELPER_UNITS=0 pastes the helpers as before.
 */
#include <string.h>

#include "codegen-private.h"

void cg_helper_deps_note(Gen *gen, const char *name) {
  if (g_hash_table_contains(gen->helper_deps, name))
    return;
  GPtrArray *deps = g_ptr_array_new_with_free_func(g_free);
  for (guint i = 0; i < gen->emit_helpers->len; i++) {
    const char *d = g_ptr_array_index(gen->emit_helpers, i);
    gboolean seen = strcmp(d, name) == 0;
    for (guint k = 0; k < deps->len && !seen; k++)
      seen = strcmp(g_ptr_array_index(deps, k), d) == 0;
    if (!seen)
      g_ptr_array_add(deps, g_strdup(d));
  }
  g_hash_table_insert(gen->helper_deps, g_strdup(name), deps);
}

static gboolean ident_start(char c) {
  return g_ascii_isalpha(c) || c == '_';
}
static gboolean ident_char(char c) {
  return g_ascii_isalnum(c) || c == '_';
}

/* Skips a comment, string or character literal at t[i]; the offset after
 * it, or i when there is none. */
static gsize skip_lexical(const char *t, gsize n, gsize i) {
  if (t[i] == '/' && i + 1 < n && t[i + 1] == '*') {
    const char *e = strstr(t + i + 2, "*/");
    return e ? (gsize)(e - t) + 2 : n;
  }
  if (t[i] == '/' && i + 1 < n && t[i + 1] == '/') {
    while (i < n && t[i] != '\n')
      i++;
    return i;
  }
  if (t[i] == '"' || t[i] == '\'') {
    char q = t[i++];
    while (i < n && t[i] != q)
      i += t[i] == '\\' ? 2 : 1;
    return MIN(i + 1, n);
  }
  return i;
}

/* The name a declarator text defines: the identifier before its first
 * "(" outside __attribute__((...)); NULL when it declares no function (a
 * struct, an initialized object) or an inline one. (transfer full) */
static char *def_name(const char *d, gsize n) {
  /* an initialized object (a table of function pointers) */
  gboolean quoted = FALSE;
  for (gsize i = 0; i < n; i++) {
    if (d[i] == '"' && (i == 0 || d[i - 1] != '\\'))
      quoted = !quoted;
    if (d[i] == '=' && !quoted)
      return NULL;
  }
  for (gsize i = 0; i < n;) {
    if (d[i] == '=')
      return NULL;
    if (ident_start(d[i])) {
      gsize s = i;
      while (i < n && ident_char(d[i]))
        i++;
      g_autofree char *w = g_strndup(d + s, i - s);
      if (strcmp(w, "inline") == 0 || strcmp(w, "__inline") == 0 ||
          strcmp(w, "__inline__") == 0)
        return NULL;
      gsize j = i;
      while (j < n && g_ascii_isspace(d[j]))
        j++;
      if (j < n && d[j] == '(') {
        if (strcmp(w, "__attribute__") == 0) {
          /* skip the balanced attribute list */
          int depth = 0;
          for (i = j; i < n; i++) {
            depth += d[i] == '(' ? 1 : d[i] == ')' ? -1 : 0;
            if (depth == 0)
              break;
          }
          i++;
          continue;
        }
        /* the name, not a type of a function pointer's return */
        static const char *const kw[] = {
            "void",     "int",    "char",     "float",  "double",
            "long",     "short",  "unsigned", "signed", "const",
            "volatile", "struct", "_Bool",    "return"};
        for (guint k = 0; k < G_N_ELEMENTS(kw); k++)
          if (strcmp(w, kw[k]) == 0)
            return NULL;
        return g_steal_pointer(&w);
      }
      continue;
    }
    i++;
  }
  return NULL;
}

/* The function definitions at file scope of helper text t that start
 * with "static" and are not inline, in text order. */
GArray *cg_helper_defs(const char *t) {
  GArray *defs = g_array_new(FALSE, FALSE, sizeof(Def));
  gsize n = strlen(t), i = 0;
  int depth = 0;
  gboolean line_start = TRUE;
  gssize kw = -1;        /* "static" at file scope since the last ';' or '}' */
  gboolean open = FALSE; /* the last def's body is being read */
  while (i < n) {
    gsize j = skip_lexical(t, n, i);
    if (j != i) {
      i = j;
      continue;
    }
    char c = t[i];
    if (c == '#' && line_start) { /* a preprocessor line */
      while (i < n && t[i] != '\n')
        i += t[i] == '\\' ? 2 : 1;
      continue;
    }
    if (c == '\n')
      line_start = TRUE;
    else if (!g_ascii_isspace(c))
      line_start = FALSE;
    if (ident_start(c)) {
      gsize s = i;
      while (i < n && ident_char(t[i]))
        i++;
      if (depth == 0 && kw < 0 && i - s == 6 &&
          strncmp(t + s, "static", 6) == 0)
        kw = (gssize)s;
      continue;
    }
    if (c == '{') {
      if (depth == 0 && kw >= 0) {
        char *name = def_name(t + kw + 6, i - (gsize)kw - 6);
        if (name) {
          Def d = {name, (gsize)kw, i, n};
          g_array_append_val(defs, d);
          open = TRUE;
        }
        kw = -1;
      }
      depth++;
    } else if (c == '}') {
      depth = MAX(depth - 1, 0);
      if (depth == 0) {
        kw = -1;
        if (open)
          g_array_index(defs, Def, defs->len - 1).end = i + 1;
        open = FALSE;
      }
    } else if (c == ';' && depth == 0)
      kw = -1;
    i++;
  }
  return defs;
}

/* Adds the identifiers text calls ("name(") to the set called. */
void cg_add_calls(GHashTable *called, const char *text) {
  gsize n = text ? strlen(text) : 0;
  for (gsize i = 0; i < n;) {
    if (!ident_start(text[i])) {
      i++;
      continue;
    }
    gsize s = i;
    while (i < n && ident_char(text[i]))
      i++;
    gsize j = i;
    while (j < n && g_ascii_isspace(text[j]))
      j++;
    if (j < n && text[j] == '(')
      g_hash_table_add(called, g_strndup(text + s, i - s));
  }
}