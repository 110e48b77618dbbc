/* files.c — finding a node's code in generated source, and writing
 * the source files (weir-codegen.h). */
#include <errno.h>
#include <string.h>

#include "weir-codegen.h"

/* Leading spaces of line. */
static guint indent_of(const char *line) {
  guint n = 0;
  while (line[n] == ' ')
    n++;
  return n;
}

/* Whether line (after its indentation) is the comment that opens the code
 * of node: "/\* map N '", "/\* tasklet N '" or "/\* nested program '...'
 * (node N) *\/". */
static gboolean is_node_comment(const char *text, guint node) {
  g_autofree char *map = g_strdup_printf("/* map %u '", node);
  g_autofree char *tasklet = g_strdup_printf("/* tasklet %u '", node);
  if (g_str_has_prefix(text, map) || g_str_has_prefix(text, tasklet))
    return TRUE;
  if (!g_str_has_prefix(text, "/* nested program '"))
    return FALSE;
  g_autofree char *tail = g_strdup_printf("(node %u) */", node);
  return g_str_has_suffix(text, tail);
}

gboolean weir_codegen_node_lines(const char *source, guint node, guint *first,
                                 guint *last) {
  g_return_val_if_fail(source != NULL, FALSE);
  g_auto(GStrv) lines = g_strsplit(source, "\n", -1);
  guint n = g_strv_length(lines);
  for (guint i = 0; i < n; i++) {
    guint ind = indent_of(lines[i]);
    if (!is_node_comment(lines[i] + ind, node))
      continue;
    /* The scope ends at the first "}" at the comment's indentation after
     * the code has started (pragmas and further comments come first). */
    for (guint j = i + 1; j < n; j++) {
      const char *l = lines[j];
      guint lind = indent_of(l);
      if (l[lind] == '\0')
        continue;
      if (lind < ind)
        break;
      if (lind == ind && strcmp(l + lind, "}") == 0) {
        if (first)
          *first = i;
        if (last)
          *last = j;
        return TRUE;
      }
    }
    /* A comment without a block after it (a one-line call). */
    if (first)
      *first = i;
    if (last)
      *last = MIN(i + 1, n - 1);
    return TRUE;
  }
  return FALSE;
}

gboolean weir_codegen_write_files(const WeirGraph *g,
                                  const WeirCodegenOptions *opts,
                                  const char *dir, char **c_path, char **h_path,
                                  GError **error) {
  g_return_val_if_fail(g != NULL && dir != NULL, FALSE);
  g_autofree char *source = weir_codegen_c(g, opts, error);
  if (!source)
    return FALSE;
  g_autofree char *header = weir_codegen_header(g);
  g_autofree char *prefix = weir_codegen_prefix(g);
  if (g_mkdir_with_parents(dir, 0755) != 0) {
    int e = errno;
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s: %s", dir, g_strerror(e));
    return FALSE;
  }
  g_autofree char *cname = g_strconcat(prefix, ".c", NULL);
  g_autofree char *hname = g_strconcat(prefix, ".h", NULL);
  g_autofree char *cpath = g_build_filename(dir, cname, NULL);
  g_autofree char *hpath = g_build_filename(dir, hname, NULL);
  GError *local = NULL;
  if (!g_file_set_contents(cpath, source, -1, &local) ||
      !g_file_set_contents(hpath, header, -1, &local)) {
    g_set_error(error, WEIR_ERROR, WEIR_ERROR_IO, "%s", local->message);
    g_error_free(local);
    return FALSE;
  }
  if (c_path)
    *c_path = g_steal_pointer(&cpath);
  if (h_path)
    *h_path = g_steal_pointer(&hpath);
  return TRUE;
}
