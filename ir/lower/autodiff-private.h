/* autodiff-private.h — what ir/lower/autodiff.c shares with
 * ir/lower/autodiff-maps.c (the reverse sweep and the differentiation of map
 * scopes and tasklets). Not installed.
 */
#ifndef WEIR_AUTODIFF_PRIVATE_H
#define WEIR_AUTODIFF_PRIVATE_H

#include "weir-autodiff.h"
#include "weir-code.h"

G_BEGIN_DECLS

struct _WeirGradContext {
  WeirGraph *g;
  WeirState *s;
  const WeirNode *node;
  GPtrArray *ins, *outs; /* char* (borrowed from memlets) or NULL, by index */
  GHashTable *access;    /* name -> WeirNode* to read the value from */
  GHashTable *partials;  /* name -> GPtrArray of char* */
  GHashTable *final;     /* name -> char* (owned) */
  GHashTable *needs;     /* set: values that depend on wrt */
  GHashTable *useful;    /* set: values that reach a seed */
  GHashTable *maxed;     /* set: values written through WCR max / min */
  GArray *created;       /* guint ids of library nodes added */
};

/* The access node to read `name` from (added when there is none). */
WeirNode *weir_grad_access(WeirGradContext *ctx, const char *name);
/* Makes `a` the access node later readers of its container use. */
void weir_grad_set_access(WeirGradContext *ctx, WeirNode *a);

/* The backward of a map scope (ctx->node is its entry) or of a top-level
 * tasklet: reverse-mode over the scope's tasklet (ir/lower/autodiff-maps.c). */
gboolean weir_grad_scope(WeirGradContext *ctx, GError **error);

/* The backward of a copy m between two access nodes (ctx->ins[0] to
 * ctx->outs[0]): the output's gradient copied back; only whole-container
 * copies (reshapes) are supported. */
gboolean weir_grad_copy(WeirGradContext *ctx, const WeirMemlet *m,
                        GError **error);

/* Symbolic derivative (text) of the value assigned to connector `out` by
 * `code` with respect to input connector `target` (with target_index: the
 * element target[target_index] of a connector read by index; other
 * elements are constants); *body_out receives the locals and their
 * derivatives ("L = e\ndl_L = de\n" lines, owned).  NULL with
 * *unsupported set (static text) when the code has constructs the
 * differentiator does not handle (ir/lower/grad-code.c). */
char *weir_grad_code_derivative(const WeirCode *code, const char *out,
                                const char *target, const char *target_index,
                                char **body_out, const char **unsupported);
/* The distinct indices with which code reads connector conn: for each, the
 * index expressions as text (char**, NULL-terminated; owned).  Joined with
 * ", " they are a target_index. */
GPtrArray *weir_grad_code_indices(const WeirCode *code, const char *conn);

G_END_DECLS

#endif
