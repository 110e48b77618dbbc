/* attr.c — typed node attribute accessors and the node error helper
 * (weir-attr.h), shared by ops, lowering, transformations and native
 * implementations instead of a private copy in each file. */
#include "weir-attr.h"

#include <stdarg.h>

gint64 weir_node_attr_int(const WeirNode *n, const char *name, gint64 dflt) {
  const WeirAttr *a = weir_node_attr(n, name);
  return a && a->type == WEIR_ATTR_INT ? a->i : dflt;
}

double weir_node_attr_float(const WeirNode *n, const char *name, double dflt) {
  const WeirAttr *a = weir_node_attr(n, name);
  return a && a->type == WEIR_ATTR_FLOAT ? a->f : dflt;
}

const char *weir_node_attr_string(const WeirNode *n, const char *name,
                                  const char *dflt) {
  const WeirAttr *a = weir_node_attr(n, name);
  return a && a->type == WEIR_ATTR_STRING ? a->s : dflt;
}

const GArray *weir_node_attr_ints(const WeirNode *n, const char *name) {
  const WeirAttr *a = weir_node_attr(n, name);
  return a && a->type == WEIR_ATTR_INTS ? a->ints : NULL;
}

gboolean weir_node_fail(GError **error, WeirErrorCode code, const WeirNode *n,
                        const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error(error, WEIR_ERROR, code, "node '%s' (%s): %s",
              n->label ? n->label : "", n->op ? n->op : "?", msg);
  return FALSE;
}
