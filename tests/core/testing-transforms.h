/* testing-transforms.h — small transformations for the tests of sessions,
 * workspaces, recipes and the CLI.  They use only the public IR and plugin
 * API (the CLI tests load them as a plugin):
 *   test-schedule  (tier 1) sets a map's schedule      site: [map entry]
 *   test-tile      (tier 1) sets a map's tile sizes    site: [map entry]
 *                  (its matches leave out sequential maps, which it can
 *                  still be applied to: a site outside the matches)
 *   test-expand    (tier 1) expands a library node     site: [library node]
 *   test-fail      (tier 4) changes the program, then fails (whole program)
 */
#ifndef TESTING_TRANSFORMS_H
#define TESTING_TRANSFORMS_H

#include "weir-plugin.h"

/* Registers them once (later calls do nothing). */
gboolean testing_transforms_register(GError **error);

/* A small program with library nodes: x[4, 8] -> Relu 'relu1' -> t ->
 * Relu 'relu2' -> y (transient t). */
WeirGraph *testing_relu_chain(void);

/* Imports samples/models/NAME.onnx (fails the test on error). */
WeirGraph *testing_import_model(const char *name);

/* The bundled models: mlp, lenet, resnet, transformer. */
extern const char *const testing_models[4];

#endif
