/* fuzz-onnx.c — fuzz target: ONNX bytes -> model reader -> importer ->
 * validation -> JSON.  Every step may refuse the input; none may crash. */
#include "fuzz-common.h"
#include "weir-import.h"
#include "weir-json.h"
#include "weir-onnx.h"
#include "weir-validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  weir_fuzz_init(FALSE);
  g_autoptr(WeirOnnxModel) model =
      weir_onnx_model_load_from_data(data, size, "fuzz.onnx", NULL);
  if (!model)
    return 0;
  g_autoptr(GPtrArray) warnings = g_ptr_array_new_with_free_func(g_free);
  /* Imported as permissively as the CLI allows, to reach the most code. */
  WeirOnnxImportOptions opts = {.allow_any_opset = TRUE, .warnings = warnings};
  g_autoptr(WeirGraph) g = weir_onnx_import_model(model, &opts, NULL);
  if (!g)
    return 0;
  if (weir_graph_validate(g, NULL))
    g_free(weir_graph_to_json(g));
  return 0;
}
