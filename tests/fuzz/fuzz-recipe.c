/* fuzz-recipe.c — fuzz target: recipe text -> parser.  A recipe that
 * parses must also print, and its JSON must parse again. */
#include "fuzz-common.h"
#include "weir-recipe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  weir_fuzz_init(FALSE);
  g_autoptr(WeirRecipe) r =
      weir_recipe_parse((const char *)data, (gssize)size, "fuzz.json", NULL);
  if (!r)
    return 0;
  g_autofree char *text = weir_recipe_to_json(r);
  g_autoptr(GError) error = NULL;
  g_autoptr(WeirRecipe) again = weir_recipe_parse(text, -1, "again", &error);
  if (!again) {
    g_printerr("fuzz: the JSON of a parsed recipe does not parse: %s\n",
               error->message);
    abort();
  }
  return 0;
}
