/* expansions.c — registers the built-in expansions.
 * Each operator family has a file in ir/lower/expand/ with its
 * expansions and one registration function listed here. */
#include "expand-util.h"

void weir_expansions_register_builtin(void);
void weir_expand_register_comm(void);
void weir_expand_register_optimizers(void);
void weir_expand_register_elementwise(void);
void weir_expand_register_linalg(void);
void weir_expand_register_reduce(void);
void weir_expand_register_resize(void);
void weir_expand_register_signal(void);
void weir_expand_register_rnn(void);
void weir_expand_register_shape(void);
void weir_expand_register_indexing(void);
void weir_expand_register_training(void);
void weir_expand_register_batchnorm_grad(void);
void weir_expand_register_losses(void);
void weir_expand_register_quant(void);
void weir_expand_register_bounded(void);
void weir_expand_register_text(void);
void weir_expand_register_update(void);

void weir_expansions_register_builtin(void) {
  weir_expand_register_comm();
  weir_expand_register_optimizers();
  weir_expand_register_elementwise();
  weir_expand_register_linalg();
  weir_expand_register_reduce();
  weir_expand_register_resize();
  weir_expand_register_signal();
  weir_expand_register_rnn();
  weir_expand_register_shape();
  weir_expand_register_indexing();
  weir_expand_register_training();
  weir_expand_register_batchnorm_grad();
  weir_expand_register_losses();
  weir_expand_register_quant();
  weir_expand_register_bounded();
  weir_expand_register_text();
  weir_expand_register_update();
}
