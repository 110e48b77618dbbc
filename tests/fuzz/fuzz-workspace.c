/* fuzz-workspace.c — fuzz target: workspaces.  The bytes are written as a
 * .weir file (an SQLite database) and opened as a session, which reads the
 * program, replays the history and restores the cursor. */
#include "fuzz-common.h"
#include "weir-session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  weir_fuzz_init(TRUE);
  g_autofree char *path = weir_fuzz_write("w.weir", data, size);
  g_autoptr(WeirSession) s = weir_workspace_open(path, NULL);
  (void)s;
  weir_fuzz_clean();
  return 0;
}
