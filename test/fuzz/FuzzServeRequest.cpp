//===- FuzzServeRequest.cpp - Fuzz target for kiln-serve's parsers --------===//
//
// kiln-fuzz-serve-request: the parsers kiln-serve runs on what clients and
// the repository send (tools/kiln-serve/Protocol.h). Byte 0 of the input
// picks one:
//   'c'  the rest is a config.pbtxt (protobuf text format);
//   else the rest is an inference request body for a model with inputs
//        x: FP32 [n, 3] (n from 1 to 4 when bit 0 of byte 0 is set, else
//        [2, 3]), ids: INT64 [2], m: BOOL [2] and outputs y, z; with bit 1
//        set, bytes 1-2 (little endian) are Inference-Header-Content-Length
//        and the body starts at byte 3.
// A request either parses into inputs whose data fits their dtype and shape
// (and outputs the model has), or is refused with a RequestError (a 400 with
// a message); a config either parses or is refused with a LoadError naming
// the file. Anything else (a crash, another exception) is a bug.
//
//===----------------------------------------------------------------------===//

#include "Protocol.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>

using namespace kiln;
using namespace kiln::serving;

static void fail(const std::string &what) {
  std::fprintf(stderr, "kiln-fuzz-serve-request: %s\n", what.c_str());
  std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  uint8_t mode = data[0];
  std::string rest(reinterpret_cast<const char *>(data) + 1, size - 1);
  if (mode == 'c') {
    Config config;
    try {
      parseConfig(rest, "fuzz/config.pbtxt", config);
    } catch (const LoadError &e) {
      if (e.message.rfind("fuzz/config.pbtxt", 0) != 0)
        fail("a config error that does not name the file: " + e.message);
      return 0;
    } catch (const std::exception &e) {
      fail(std::string("an exception escaped the config parser: ") + e.what());
    }
    // Where each field was written, as the server's errors ask.
    for (const char *field : {"name", "max_batch_size", "input", "output", "instance_group",
                              "dynamic_batching", "no_such_field"})
      if (config.at(field, -1).find(field) == std::string::npos)
        fail(std::string("config.at does not name the field ") + field);
    // The parameters kiln-serve reads: a bad one is a LoadError naming the
    // file, never a crash.
    try {
      readModelPolicy(config, ModelPolicy{});
    } catch (const LoadError &e) {
      if (e.message.rfind("fuzz/config.pbtxt", 0) != 0)
        fail("a parameters error that does not name the file: " + e.message);
    } catch (const std::exception &e) {
      fail(std::string("an exception escaped readModelPolicy: ") + e.what());
    }
    return 0;
  }

  static const int64_t x2[] = {2, 3}, x4[] = {4, 3}, two[] = {2};
  ModelInterface model;
  bool batched = mode & 1;
  model.maxBatchSize = batched ? 4 : 0;
  model.inputs = {{"x", KILN_DTYPE_F32, 2, batched ? x4 : x2, 24},
                  {"ids", KILN_DTYPE_I64, 1, two, 16},
                  {"m", KILN_DTYPE_BOOL, 1, two, 2}};
  model.outputs = {{"y", KILN_DTYPE_F32, 2, x2, 24}, {"z", KILN_DTYPE_I32, 1, two, 8}};
  size_t headerLength = std::string::npos;
  if (mode & 2) {
    if (rest.size() < 2)
      return 0;
    headerLength = uint8_t(rest[0]) | size_t(uint8_t(rest[1])) << 8;
    rest = rest.substr(2);
  }
  ParsedRequest parsed;
  try {
    parsed = parseInferRequest(model, rest, headerLength);
  } catch (const RequestError &e) {
    if (e.status != 400 || e.message.empty())
      fail("a refusal that is not a 400 with a message: " + e.message);
    return 0;
  } catch (const std::exception &e) {
    fail(std::string("an exception escaped the request parser: ") + e.what());
  }
  for (const Tensor &t : parsed.inputs) {
    const kiln_tensor_info_t *info = nullptr;
    for (const kiln_tensor_info_t &i : model.inputs)
      if (t.name == i.name)
        info = &i;
    if (!info || t.dtype != info->dtype || t.shape.size() != info->rank)
      fail("an input that is not the model's was accepted: " + t.name);
    if (t.data.size() != t.elementCount() * kiln_dtype_size(t.dtype))
      fail("input " + t.name + ": its data does not fit its shape");
    for (size_t d = batched ? 1 : 0; d < info->rank; ++d)
      if (t.shape[d] != info->shape[d])
        fail("input " + t.name + ": a shape the model does not take was accepted");
    if (batched && (t.shape[0] < 1 || t.shape[0] > 4))
      fail("input " + t.name + ": rows beyond max_batch_size were accepted");
  }
  for (const auto &[name, binary] : parsed.wanted)
    if (name != "y" && name != "z")
      fail("an output the model does not have was accepted: " + name);
  return 0;
}
