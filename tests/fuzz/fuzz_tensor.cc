// The tensor decoders: NumPy .npy and ONNX TensorProto .pb. A decoded tensor
// must hold exactly the bytes its shape and dtype call for, and encode back.
#include "common/tensor_io.h"
#include "fuzz_util.h"

using namespace loom;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto b = fuzz::bytes(data, size);
  for (int kind = 0; kind < 2; ++kind) {
    auto t = kind == 0 ? decode_npy(b, "fuzz.npy") : decode_onnx_tensor(b, "fuzz.pb");
    if (!t) {
      fuzz::check_error(t.error());
      continue;
    }
    if (uint64_t(t->numel()) * dtype_size(t->dtype) != t->data.size()) std::abort();
    auto back = kind == 0 ? decode_npy(encode_npy(*t), "re.npy") : decode_onnx_tensor(encode_onnx_tensor(*t), "re.pb");
    if (!back || back->data != t->data || back->shape != t->shape || back->dtype != t->dtype) std::abort();
  }
  return 0;
}
