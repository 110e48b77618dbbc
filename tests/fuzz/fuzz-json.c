/* fuzz-json.c — fuzz target: JSON program text -> loader -> validation.
 * A program that loads must also serialize, and its JSON must load
 * again (the loader accepts everything the writer produces). */
#include "fuzz-common.h"
#include "weir-json.h"
#include "weir-validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  weir_fuzz_init(FALSE);
  g_autoptr(WeirGraph) g =
      weir_graph_from_json((const char *)data, (gssize)size, "fuzz.json", NULL);
  if (!g)
    return 0;
  weir_graph_validate(g, NULL);
  g_autofree char *text = weir_graph_to_json(g);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirGraph) again = weir_graph_from_json(text, -1, "again", &error);
  if (!again) {
    g_printerr("fuzz: the JSON of a loaded program does not load: %s\n",
               error->message);
    abort();
  }
  return 0;
}
