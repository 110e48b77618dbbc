/* train-common.h — what the two trainers (weir-trainer.h: samples and
 * labels; weir-token-trainer.h: next-token windows) share: finding the
 * model's one input, importing it at fixed input dimensions, and the
 * training state made from the program's arguments.  Internal to libweir.
 */
#ifndef WEIR_TRAIN_COMMON_H
#define WEIR_TRAIN_COMMON_H

#include "weir-graph.h"
#include "weir-onnx.h"

/* The one real input of g (an input that is not an initializer).  Errors
 * name path and say that `what` ("training", "next-token training") needs
 * exactly one.  (transfer none: points into g) */
const WeirOnnxValueInfo *weir_train_model_input(const WeirOnnxGraph *g,
                                                const char *path,
                                                const char *what,
                                                GError **error);

/* Imports model with the ONNX input `input` bound to shape[0..rank); names
 * (created by the caller, g_str_hash/g_free both ways) receives the map of
 * ONNX names to container names.  (transfer full) */
WeirGraph *weir_train_import_shaped(WeirOnnxModel *model, const char *input,
                                    const gint64 *shape, guint rank,
                                    GHashTable *names, GError **error);

/* The state of a training program: a tensor per argument of program except
 * the names in skip (NULL-terminated), shaped under bindings (may be NULL),
 * holding the forward graph's initial value where it has one and zeros
 * elsewhere.  An initial value whose type or size differs from the
 * argument is an error naming path and the parameter.  (transfer full:
 * name -> WeirTensor) */
GHashTable *weir_train_state_new(const WeirGraph *program,
                                 const WeirGraph *forward, GHashTable *bindings,
                                 const char *const *skip, const char *path,
                                 GError **error);

#endif
