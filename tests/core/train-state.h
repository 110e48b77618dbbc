/* train-state.h — the arguments of a training program, as the training
 * tests start them.  Header-only; include after cmocka.h. */
#ifndef WEIR_TEST_TRAIN_STATE_H
#define WEIR_TEST_TRAIN_STATE_H

#include <string.h>

#include "weir-codegen.h"
#include "weir-graph.h"
#include "weir-tensor.h"

/* Every argument of prog at its shape under sym, zero, except the
 * containers that have an initial value in `params` (the forward model's
 * parameters, or prog itself), which start at it.  The caller fills the
 * batch and labels.  (transfer full) */
static inline GHashTable *train_state_zero(const WeirGraph *prog,
                                           const WeirGraph *params,
                                           GHashTable *sym) {
  GHashTable *state = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                            (GDestroyNotify)weir_tensor_free);
  g_autoptr(GPtrArray) args = weir_codegen_arguments(prog);
  for (guint i = 0; i < args->len; i++) {
    const WeirContainer *c = args->pdata[i];
    g_autofree gint64 *shape = g_new0(gint64, c->shape->len + 1);
    for (guint d = 0; d < c->shape->len; d++)
      assert_true(weir_expr_eval(c->shape->pdata[d], sym, &shape[d], NULL));
    WeirTensor *v = weir_tensor_new(c->dtype, c->shape->len, shape);
    memset(v->data, 0, weir_tensor_nbytes(v));
    const WeirContainer *pc = weir_graph_container(params, c->name);
    if (pc && pc->initial) {
      gsize n = 0;
      const void *data = g_bytes_get_data(pc->initial, &n);
      assert_int_equal(n, weir_tensor_nbytes(v));
      memcpy(v->data, data, n);
    }
    g_hash_table_insert(state, g_strdup(c->name), v);
  }
  return state;
}

#endif
