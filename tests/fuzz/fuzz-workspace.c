/* fuzz-workspace.c — fuzz target: workspaces.  The bytes are written as a
 * .weir file (an SQLite database) in the scratch directory (on /dev/shm
 * when writable: fuzz-common.h) and opened as a session through the same
 * call as every `weir` command on a .weir file: weir_workspace_open checks the
 * database, loads and validates the original program, reads every history step
 * (checksums, sites, bookmarks, results) and loads the snapshot at the cursor.
 */
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
