// run_model.cpp - runs a .kiln artifact through the installed Kiln runtime's
// C++ wrapper (kiln/runtime.hpp, header-only over the C API).
//
//   run_model_cpp MODEL.kiln [DEVICE]       DEVICE: cpu (default), hip:0, emu:gfx942
//
// Same input pattern and output format as run_model.c, so the two agree.
#include <kiln/runtime.hpp>

#include <cstdio>
#include <cstring>

namespace {

int fail(const kiln::Status &status, const char *what) {
  std::fprintf(stderr, "run_model_cpp: %s: %s (%s)\n", what, status.message(),
               kiln_status_code_name(status.code()));
  return 1;
}

kiln::Tensor patternInput(const kiln_tensor_info_t &info) {
  kiln::Tensor tensor;
  tensor.name = info.name;
  tensor.dtype = info.dtype;
  tensor.shape.assign(info.shape, info.shape + info.rank);
  tensor.data.resize(info.byte_size);
  for (uint64_t i = 0; i < tensor.elementCount(); ++i) {
    double v = double(i % 17) / 17.0 - 0.5;
    if (info.dtype == KILN_DTYPE_F32) {
      float f = float(v);
      std::memcpy(tensor.data.data() + 4 * i, &f, 4);
    } else if (info.dtype == KILN_DTYPE_I64) {
      int64_t n = int64_t(i % 17);
      std::memcpy(tensor.data.data() + 8 * i, &n, 8);
    }
  }
  return tensor;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: run_model_cpp MODEL.kiln [cpu|hip:N|emu:GFX]\n");
    return 2;
  }
  std::printf("kiln runtime %s (%s)\n", kiln_version(), kiln_revision());
  kiln::Artifact artifact;
  if (kiln::Status s = kiln::Artifact::open(argv[1], artifact); !s.ok())
    return fail(s, "opening the artifact");
  kiln::Device device;
  if (kiln::Status s = kiln::Device::create(argc > 2 ? argv[2] : "cpu", 0, device); !s.ok())
    return fail(s, "creating the device");
  kiln::Session session;
  if (kiln::Status s = kiln::Session::create(device, artifact, nullptr, session); !s.ok())
    return fail(s, "creating the session");

  std::vector<kiln::Tensor> inputs;
  for (const kiln_tensor_info_t &info : session.inputs())
    inputs.push_back(patternInput(info));
  std::vector<kiln::Tensor> outputs;
  if (kiln::Status s = session.run(inputs, outputs); !s.ok())
    return fail(s, "running");
  for (const kiln::Tensor &out : outputs) {
    std::printf("output %s %s [", out.name.c_str(), kiln_dtype_name(out.dtype));
    for (size_t d = 0; d < out.shape.size(); ++d)
      std::printf("%s%lld", d ? ", " : "", static_cast<long long>(out.shape[d]));
    std::printf("]:");
    for (uint64_t i = 0; i < out.elementCount() && i < 16; ++i) {
      if (out.dtype == KILN_DTYPE_F32) {
        float f;
        std::memcpy(&f, out.data.data() + 4 * i, 4);
        std::printf(" %.9g", f);
      } else if (out.dtype == KILN_DTYPE_I64) {
        int64_t n;
        std::memcpy(&n, out.data.data() + 8 * i, 8);
        std::printf(" %lld", static_cast<long long>(n));
      } else {
        std::printf(" ?");
      }
    }
    std::printf("\n");
  }
  return 0;
}
