//===- WireFormat.cpp - weights out of the ONNX protobuf ------------------===//
//
// Only three messages are walked field by field: ModelProto (the graph is
// field 7), GraphProto (initializers are field 5) and TensorProto (raw_data
// is field 9); every other field is copied through untouched. Lengths of the
// rewritten messages are re-encoded.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/WireFormat.h"

using namespace kiln::onnx_import;

namespace {

constexpr unsigned kModelGraph = 7;
constexpr unsigned kGraphInitializer = 5;
constexpr unsigned kTensorRawData = 9;

enum WireType : unsigned { Varint = 0, Fixed64 = 1, Length = 2, Fixed32 = 5 };

/// A bounds-checked cursor over wire-format bytes.
struct Reader {
  const char *begin, *pos, *end;

  bool varint(uint64_t &value) {
    value = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (pos == end)
        return false;
      uint8_t byte = static_cast<uint8_t>(*pos++);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return false;
  }

  /// Reads one field: its number, wire type and (for Length) payload span.
  bool field(unsigned &number, unsigned &type, const char *&start,
             const char *&payload, uint64_t &size) {
    start = pos;
    uint64_t key;
    if (!varint(key) || (key >> 3) == 0 || (key >> 3) > UINT32_MAX)
      return false;
    number = static_cast<unsigned>(key >> 3);
    type = static_cast<unsigned>(key & 7);
    uint64_t skip = 0;
    switch (type) {
    case Varint: {
      uint64_t ignored;
      if (!varint(ignored))
        return false;
      payload = pos;
      size = 0;
      return true;
    }
    case Fixed64:
      skip = 8;
      break;
    case Fixed32:
      skip = 4;
      break;
    case Length:
      if (!varint(skip))
        return false;
      break;
    default:
      return false; // groups are not used by ONNX
    }
    if (skip > static_cast<uint64_t>(end - pos))
      return false;
    payload = pos;
    size = skip;
    pos += skip;
    return true;
  }
};

void putVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>((value & 0x7f) | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void putLengthField(std::string &out, unsigned number, const std::string &payload) {
  putVarint(out, (static_cast<uint64_t>(number) << 3) | Length);
  putVarint(out, payload.size());
  out += payload;
}

/// Rewrites a TensorProto; `span` receives the payload taken out, if any.
bool stripTensor(const char *fileBegin, const char *begin, const char *end,
                 uint64_t minBytes, std::string &out,
                 std::optional<StrippedModel::Span> &span) {
  Reader r{fileBegin, begin, end};
  while (r.pos != r.end) {
    unsigned number, type;
    const char *start, *payload;
    uint64_t size;
    if (!r.field(number, type, start, payload, size))
      return false;
    if (number == kTensorRawData && type == Length && size >= minBytes) {
      span = StrippedModel::Span{static_cast<uint64_t>(payload - fileBegin), size};
      continue;
    }
    out.append(start, r.pos);
  }
  return true;
}

bool stripGraph(const char *fileBegin, const char *begin, const char *end,
                uint64_t minBytes, std::string &out, StrippedModel &model) {
  Reader r{fileBegin, begin, end};
  while (r.pos != r.end) {
    unsigned number, type;
    const char *start, *payload;
    uint64_t size;
    if (!r.field(number, type, start, payload, size))
      return false;
    if (number == kGraphInitializer && type == Length) {
      std::string tensor;
      std::optional<StrippedModel::Span> span;
      if (!stripTensor(fileBegin, payload, payload + size, minBytes, tensor, span))
        return false;
      model.initializerData.push_back(span);
      putLengthField(out, kGraphInitializer, tensor);
      continue;
    }
    out.append(start, r.pos);
  }
  return true;
}

} // namespace

std::optional<StrippedModel>
kiln::onnx_import::stripInitializerData(llvm::StringRef file, uint64_t minBytes) {
  StrippedModel model;
  model.bytes.reserve(1 << 20);
  Reader r{file.data(), file.data(), file.data() + file.size()};
  bool sawGraph = false;
  while (r.pos != r.end) {
    unsigned number, type;
    const char *start, *payload;
    uint64_t size;
    if (!r.field(number, type, start, payload, size))
      return std::nullopt;
    if (number == kModelGraph && type == Length) {
      // Protobuf merges a repeated graph field; leave that oddity to the
      // full parser rather than renumber initializers.
      if (sawGraph)
        return std::nullopt;
      sawGraph = true;
      std::string graph;
      if (!stripGraph(file.data(), payload, payload + size, minBytes, graph, model))
        return std::nullopt;
      putLengthField(model.bytes, kModelGraph, graph);
      continue;
    }
    model.bytes.append(start, r.pos);
  }
  return model;
}
