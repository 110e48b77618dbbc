/* main.c — weir-gui: the Weir workbench.  `weir-gui [FILE...]` opens each
 * FILE (an .onnx model, an IR .json program or a .weir workspace). */
#include "weir-application.h"

int main(int argc, char **argv) {
  g_autoptr(WeirApplication) app = weir_application_new();
  return g_application_run(G_APPLICATION(app), argc, argv);
}
