/* builtin.c — registers the built-in operator records in ir/ops/.
 * Each operator family has a file with its schemas, shape inference and
 * FLOP counts, and one registration function listed here. */
#include "weir-ops.h"

void weir_ops_register_builtin(void);
void weir_ops_register_comm(void);
void weir_ops_register_optimizers(void);
void weir_ops_register_elementwise(void);
void weir_ops_register_linalg(void);
void weir_ops_register_reduce(void);
void weir_ops_register_resize(void);
void weir_ops_register_signal(void);
void weir_ops_register_rnn(void);
void weir_ops_register_shape(void);
void weir_ops_register_indexing(void);
void weir_ops_register_training(void);
void weir_ops_register_update(void);
void weir_ops_register_losses(void);
void weir_ops_register_bounded(void);
void weir_ops_register_text(void);

void weir_ops_register_builtin(void) {
  weir_ops_register_comm();
  weir_ops_register_optimizers();
  weir_ops_register_elementwise();
  weir_ops_register_linalg();
  weir_ops_register_reduce();
  weir_ops_register_resize();
  weir_ops_register_signal();
  weir_ops_register_rnn();
  weir_ops_register_shape();
  weir_ops_register_indexing();
  weir_ops_register_training();
  weir_ops_register_update();
  weir_ops_register_losses();
  weir_ops_register_bounded();
  weir_ops_register_text();
}
