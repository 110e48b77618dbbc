/* fuzz-tensor.c — fuzz target: tensor files.  The first byte selects the
 * format (even: ONNX TensorProto .pb, odd: .npy); the rest is the file,
 * written to a scratch directory because the readers take a path. */
#include "fuzz-common.h"
#include "weir-tensor-io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  weir_fuzz_init(TRUE);
  if (size < 1)
    return 0;
  gboolean npy = data[0] & 1;
  g_autofree char *path =
      weir_fuzz_write(npy ? "t.npy" : "t.pb", data + 1, size - 1);
  g_autofree char *name = NULL;
  g_autoptr(WeirTensor) t = weir_tensor_load(path, npy ? NULL : &name, NULL);
  (void)t;
  return 0;
}
