/* init.c — weir_init(): the one place that registers what is built in.
 * The registries (ir/ops/registry.c, ir/lower/autodiff.c,
 * ir/lower/native-choice.c, core/transform.c) only store what they are
 * given; each built-in family has one registration function, called here.
 */
#include "weir-init.h"

void weir_ops_register_builtin(void);
void weir_expansions_register_builtin(void);
void weir_grad_register_builtin(void);
void weir_native_register_builtin(void);
void weir_native_register_weir(void);
void weir_native_register_mpi(void);
gboolean weir_transforms_register_builtin(GError **error);

void weir_init(void) {
  static gsize done = 0;
  if (g_once_init_enter(&done)) {
    weir_ops_register_builtin();
    weir_expansions_register_builtin();
    weir_grad_register_builtin();
    weir_native_register_builtin();
    weir_native_register_weir(); /* core/kernels/native-weir.c */
    weir_native_register_mpi();  /* core/native-mpi.c, with MPI */
    g_autoptr(GError) error = NULL;
    if (!weir_transforms_register_builtin(&error))
      g_critical("registering the built-in transformations: %s",
                 error ? error->message : "failed without a message");
    g_once_init_leave(&done, 1);
  }
}

void weir_transforms_init(void) {
  weir_init();
}

void weir_expansions_init(void) {
  weir_init();
}
