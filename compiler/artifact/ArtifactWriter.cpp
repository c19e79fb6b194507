//===- ArtifactWriter.cpp - Writes .kiln artifacts ------------------------===//
//
// Section order in the file: manifest, code objects (in the order added),
// constants. Section indices follow the same order; the manifest refers to
// them by index, so it can be built before any offset is known.
//
//===----------------------------------------------------------------------===//

#include "artifact/ArtifactWriter.h"

#include "ArtifactFormat.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <string_view>
#include <unistd.h>

using namespace kiln::artifact;
namespace format = kiln::artifact::format;

uint64_t kiln::artifact::dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F64:
  case DType::I64:
  case DType::U64:
    return 8;
  case DType::F32:
  case DType::I32:
  case DType::U32:
    return 4;
  case DType::F16:
  case DType::BF16:
  case DType::I16:
  case DType::U16:
    return 2;
  case DType::I8:
  case DType::U8:
  case DType::Bool:
    return 1;
  }
  return 0;
}

namespace {
uint64_t constantKey(const void *data, size_t size) {
  return std::hash<std::string_view>()(
             std::string_view(static_cast<const char *>(data), size)) ^
         (uint64_t(size) * 0x9e3779b97f4a7c15ull);
}
} // namespace

std::optional<uint64_t> ArtifactWriter::findConstant(const void *data, size_t size,
                                                     uint64_t key) const {
  auto [begin, end] = constantIndex_.equal_range(key);
  for (auto it = begin; it != end; ++it) {
    const Constant &c = constants_[it->second];
    if (c.size == size && (size == 0 || std::memcmp(c.data, data, size) == 0))
      return c.offset;
  }
  return std::nullopt;
}

uint64_t ArtifactWriter::addConstant(const void *data, size_t size) {
  uint64_t key = constantKey(data, size);
  if (std::optional<uint64_t> offset = findConstant(data, size, key))
    return *offset;
  uint64_t offset = format::alignUp(constantsSize_);
  constantIndex_.emplace(key, constants_.size());
  constants_.push_back({data, offset, size});
  constantsSize_ = offset + size;
  return offset;
}

uint64_t ArtifactWriter::addConstantCopy(const void *data, size_t size) {
  if (std::optional<uint64_t> offset = findConstant(data, size, constantKey(data, size)))
    return *offset;
  ownedConstants_.emplace_back(static_cast<const char *>(data), size);
  return addConstant(ownedConstants_.back().data(), size);
}

//===----------------------------------------------------------------------===//
// Validation
//===----------------------------------------------------------------------===//

namespace {
std::string rangeString(uint64_t offset, uint64_t size) {
  if (size > UINT64_MAX - offset)
    return "offset " + std::to_string(offset) + " + size " +
           std::to_string(size) + " (overflows)";
  return "[" + std::to_string(offset) + ", " + std::to_string(offset + size) +
         ")";
}

bool inBounds(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

bool tensorBytes(const TensorDesc &t, uint64_t &bytes) {
  bytes = dtypeSize(t.dtype);
  if (bytes == 0)
    return false;
  for (int64_t d : t.shape) {
    if (d < 0 || (d != 0 && bytes > UINT64_MAX / uint64_t(d)))
      return false;
    bytes *= uint64_t(d);
  }
  return true;
}
} // namespace

bool ArtifactWriter::validate(std::string &error) const {
  auto fail = [&](const std::string &message) {
    error = message;
    return false;
  };
  // The tensors of the model, or of a program (`prefix`) that has its own:
  // those must have the model's names, dtypes, ranks and extent axes.
  auto checkTensors = [&](const std::vector<TensorDesc> &tensors, bool output,
                          const std::string &prefix, std::vector<uint64_t> &byteSizes) {
    const char *what = output ? "output" : "input";
    const std::vector<TensorDesc> &model = output ? outputs_ : inputs_;
    std::set<std::string> names;
    if (&tensors != &model && tensors.size() != model.size())
      return fail(prefix + "has " + std::to_string(tensors.size()) + " " + what +
                  "s, the model " + std::to_string(model.size()));
    for (size_t i = 0; i < tensors.size(); ++i) {
      const TensorDesc &t = tensors[i];
      std::string item = prefix + what + " " + std::to_string(i) + " ('" + t.name + "')";
      if (&tensors != &model &&
          (t.name != model[i].name || t.dtype != model[i].dtype ||
           t.shape.size() != model[i].shape.size() || t.extentAxis != model[i].extentAxis))
        return fail(item + ": not the model's " + what + " '" + model[i].name +
                    "' at another shape");
      if (t.name.empty())
        return fail(std::string(what) + " " + std::to_string(i) +
                    " has no name");
      if (!names.insert(t.name).second)
        return fail(item + ": the name is used twice");
      uint64_t bytes;
      if (!tensorBytes(t, bytes))
        return fail(item + ": unknown dtype, negative dimension or byte size "
                           "overflow");
      byteSizes.push_back(bytes);
      if (t.extentAxis != -1 &&
          (!output || t.extentAxis < 0 || size_t(t.extentAxis) >= t.shape.size()))
        return fail(item + ": extent axis " + std::to_string(t.extentAxis) +
                    (output ? " is out of range for rank " + std::to_string(t.shape.size())
                            : std::string(" on an input")));
    }
    return true;
  };
  std::vector<uint64_t> modelInputBytes, modelOutputBytes;
  if (!checkTensors(inputs_, false, "", modelInputBytes) ||
      !checkTensors(outputs_, true, "", modelOutputBytes))
    return false;
  if (outputs_.empty())
    return fail("the model has no outputs");

  size_t kernelCount = codeObjects_.empty() ? 0 : codeObjects_[0].kernels.size();
  std::set<std::string> targets;
  for (size_t i = 0; i < codeObjects_.size(); ++i) {
    const CodeObjectDesc &c = codeObjects_[i];
    std::string item = "code object " + std::to_string(i) + " ('" + c.target +
                       "')";
    if (c.target.empty())
      return fail("code object " + std::to_string(i) + " has no target");
    if (!targets.insert(c.target).second)
      return fail(item + ": a second code object for the same target");
    if (c.kernels.size() != kernelCount)
      return fail(item + " has " + std::to_string(c.kernels.size()) +
                  " kernels but code object 0 has " +
                  std::to_string(kernelCount));
    for (size_t k = 0; k < c.kernels.size(); ++k) {
      if (c.kernels[k].symbol.empty())
        return fail(item + " kernel " + std::to_string(k) + ": no symbol");
      if (c.kernels[k].workgroupCount > uint64_t(INT64_MAX))
        return fail(item + " kernel " + std::to_string(k) +
                    ": workgroup count is too large");
    }
  }

  if (programs_.empty())
    return fail("no programs");
  std::set<std::string> programNames;
  for (const ProgramDesc &p : programs_) {
    std::string prefix = "program '" + p.name + "' ";
    if (!programNames.insert(p.name).second)
      return fail(prefix + "is defined twice");
    std::vector<uint64_t> inputBytes = modelInputBytes, outputBytes = modelOutputBytes;
    if (!p.inputTensors.empty() || !p.outputTensors.empty()) {
      inputBytes.clear();
      outputBytes.clear();
      if (!checkTensors(p.inputTensors, false, prefix, inputBytes) ||
          !checkTensors(p.outputTensors, true, prefix, outputBytes))
        return false;
    }
    auto checkBinding = [&](const BindingDesc &b,
                            const std::string &item) -> bool {
      if (b.kind == BindingDesc::Arena) {
        if (!inBounds(b.offset, b.size, p.arenaSize))
          return fail(item + ": arena range " + rangeString(b.offset, b.size) +
                      " exceeds the arena (" + std::to_string(p.arenaSize) +
                      " bytes)");
        return true;
      }
      if (b.kind == BindingDesc::Constant) {
        if (constants_.empty())
          return fail(item + ": constant binding, but no constants were "
                             "added");
        if (!inBounds(b.offset, b.size, constantsSize_))
          return fail(item + ": constant range " +
                      rangeString(b.offset, b.size) +
                      " exceeds the constants section (" +
                      std::to_string(constantsSize_) + " bytes)");
        return true;
      }
      return fail(item + ": unknown binding kind");
    };
    for (int output = 0; output < 2; ++output) {
      const auto &bindings = output ? p.outputs : p.inputs;
      const auto &tensors = output ? outputs_ : inputs_;
      const auto &bytes = output ? outputBytes : inputBytes;
      const char *what = output ? "output" : "input";
      if (bindings.size() != tensors.size())
        return fail(prefix + std::to_string(bindings.size()) + " " + what +
                    " bindings for " + std::to_string(tensors.size()) +
                    " model " + what + "s");
      for (size_t i = 0; i < bindings.size(); ++i) {
        std::string item = prefix + what + " " + std::to_string(i) + " ('" +
                           tensors[i].name + "')";
        if (!output && bindings[i].kind != BindingDesc::Arena)
          return fail(item + ": inputs must be bound in the arena");
        if (!checkBinding(bindings[i], item))
          return false;
        if (bindings[i].size != bytes[i])
          return fail(item + ": binding size " +
                      std::to_string(bindings[i].size) +
                      " does not match the tensor's " +
                      std::to_string(bytes[i]) + " bytes");
      }
    }
    size_t nextExtent = 0;
    for (size_t i = 0; i < outputs_.size(); ++i) {
      if (outputs_[i].extentAxis < 0)
        continue;
      std::string item = prefix + "output " + std::to_string(i) + " ('" +
                         outputs_[i].name + "')";
      if (nextExtent >= p.extents.size() || p.extents[nextExtent].first != i)
        return fail(item + " has an extent axis but no extent binding");
      const BindingDesc &b = p.extents[nextExtent++].second;
      if (!checkBinding(b, item + " extent"))
        return false;
      if (b.size != 8)
        return fail(item + ": extent binding of " + std::to_string(b.size) +
                    " bytes, not 8 (an int64)");
    }
    if (nextExtent != p.extents.size())
      return fail(prefix + "has an extent binding for output " +
                  std::to_string(p.extents[nextExtent].first) +
                  ", which has no extent axis (or is out of order)");
    for (size_t d = 0; d < p.dispatches.size(); ++d) {
      const DispatchDesc &dispatch = p.dispatches[d];
      std::string item = prefix + "dispatch " + std::to_string(d);
      if (dispatch.kernel >= kernelCount)
        return fail(item + ": kernel index " +
                    std::to_string(dispatch.kernel) +
                    " is out of range (the code objects have " +
                    std::to_string(kernelCount) + " kernels)");
      for (size_t b = 0; b < dispatch.bindings.size(); ++b)
        if (!checkBinding(dispatch.bindings[b],
                          item + " binding " + std::to_string(b)))
          return false;
    }
    // The commands, as the runtime checks them (runtime/src/Artifact.cpp).
    for (size_t i = 0; i < p.commands.size(); ++i) {
      const CommandDesc &c = p.commands[i];
      std::string item = prefix + "command " + std::to_string(i);
      bool src = false, dst = false, counter = false, jump = false;
      switch (c.op) {
      case CommandOp::Dispatch:
        if (c.index >= p.dispatches.size())
          return fail(item + ": dispatch " + std::to_string(c.index) + " is out of range");
        break;
      case CommandOp::Copy:
        src = dst = true;
        if (c.src.size != c.dst.size)
          return fail(item + ": copies " + std::to_string(c.src.size) + " bytes to " +
                      std::to_string(c.dst.size));
        break;
      case CommandOp::CopyToRow:
        src = dst = counter = true;
        if (c.src.size == 0 || c.dst.size % c.src.size != 0)
          return fail(item + ": a destination that is no whole number of rows");
        break;
      case CommandOp::CopyFromRow:
        src = dst = counter = true;
        if (c.dst.size == 0 || c.src.size % c.dst.size != 0)
          return fail(item + ": a source that is no whole number of rows");
        break;
      case CommandOp::JumpIfFalse:
        src = jump = true;
        if (c.src.size != 1)
          return fail(item + ": a condition that is not one byte");
        break;
      case CommandOp::Jump:
        jump = true;
        break;
      case CommandOp::CounterReset:
      case CommandOp::CounterIncrement:
        counter = true;
        break;
      case CommandOp::CounterStore:
        dst = counter = true;
        if (c.dst.size != 8)
          return fail(item + ": a counter stored in other than 8 bytes");
        break;
      case CommandOp::JumpIfCounterAtLeast:
        src = counter = jump = true;
        if (c.src.size != 8)
          return fail(item + ": a limit that is not an int64");
        break;
      default:
        return fail(item + ": unknown command");
      }
      if (src && !checkBinding(c.src, item + " source"))
        return false;
      if (dst && !checkBinding(c.dst, item + " destination"))
        return false;
      if (dst && c.dst.kind != BindingDesc::Arena)
        return fail(item + ": writes outside the arena");
      if (counter && c.counter >= p.counters)
        return fail(item + ": counter " + std::to_string(c.counter) + " is out of range");
      if (jump && c.index > p.commands.size())
        return fail(item + ": jumps past the end");
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Manifest
//===----------------------------------------------------------------------===//

std::string ArtifactWriter::buildManifest(int32_t constantsSection) const {
  flatbuffers::FlatBufferBuilder fbb(16 * 1024);
  auto tensors = [&](const std::vector<TensorDesc> &list) {
    std::vector<flatbuffers::Offset<TensorInfo>> result;
    for (const TensorDesc &t : list)
      result.push_back(CreateTensorInfoDirect(fbb, t.name.c_str(), t.dtype,
                                              &t.shape, t.extentAxis));
    return fbb.CreateVector(result);
  };
  auto bindings = [&](const std::vector<BindingDesc> &list) {
    std::vector<Binding> result;
    for (const BindingDesc &b : list)
      result.emplace_back(BindingKind(b.kind), b.offset, b.size);
    return fbb.CreateVectorOfStructs(result);
  };

  auto inputs = tensors(inputs_);
  auto outputs = tensors(outputs_);
  std::vector<flatbuffers::Offset<CodeObject>> codeObjects;
  for (size_t i = 0; i < codeObjects_.size(); ++i) {
    const CodeObjectDesc &c = codeObjects_[i];
    std::vector<flatbuffers::Offset<Kernel>> kernels;
    for (const KernelDesc &k : c.kernels)
      kernels.push_back(CreateKernelDirect(fbb, k.name.c_str(),
                                           k.symbol.c_str(), k.workgroupCount,
                                           &k.workgroupSize, k.ldsBytes));
    // Section 0 is the manifest; code objects follow in order.
    codeObjects.push_back(CreateCodeObjectDirect(
        fbb, c.target.c_str(), c.triple.c_str(), c.cpu.c_str(),
        c.features.c_str(), c.format.c_str(), uint32_t(i + 1), &kernels));
  }
  std::vector<flatbuffers::Offset<Program>> programs;
  for (const ProgramDesc &p : programs_) {
    std::vector<flatbuffers::Offset<Dispatch>> dispatches;
    for (const DispatchDesc &d : p.dispatches) {
      auto dispatchBindings = bindings(d.bindings);
      dispatches.push_back(CreateDispatch(fbb, d.kernel, dispatchBindings,
                                          d.flops, d.bytes,
                                          fbb.CreateString(d.ops)));
    }
    auto name = fbb.CreateString(p.name);
    auto programInputs = bindings(p.inputs);
    auto programOutputs = bindings(p.outputs);
    auto dispatchVector = fbb.CreateVector(dispatches);
    std::vector<flatbuffers::Offset<OutputExtent>> extents;
    for (const auto &[output, b] : p.extents) {
      Binding binding(BindingKind(b.kind), b.offset, b.size);
      extents.push_back(CreateOutputExtent(fbb, output, &binding));
    }
    auto binding = [](const BindingDesc &b) {
      return Binding(BindingKind(b.kind), b.offset, b.size);
    };
    std::vector<Command> commands;
    for (const CommandDesc &c : p.commands)
      commands.emplace_back(c.op, c.counter, c.index, binding(c.src), binding(c.dst));
    bool own = !p.inputTensors.empty() || !p.outputTensors.empty();
    auto inputTensors = own ? tensors(p.inputTensors) : 0;
    auto outputTensors = own ? tensors(p.outputTensors) : 0;
    programs.push_back(CreateProgram(fbb, name, p.arenaSize, programInputs,
                                     programOutputs, dispatchVector,
                                     extents.empty() ? 0 : fbb.CreateVector(extents),
                                     commands.empty() ? 0 : fbb.CreateVectorOfStructs(commands),
                                     p.counters, p.batchSize, inputTensors, outputTensors));
  }
  auto producer = fbb.CreateString(producer_);
  auto options = fbb.CreateString(options_);
  auto model = fbb.CreateString(model_);
  auto codeObjectVector = fbb.CreateVector(codeObjects);
  auto programVector = fbb.CreateVector(programs);
  std::vector<flatbuffers::Offset<PinnedInput>> pinned;
  for (const auto &[name, value] : pinnedInputs_)
    pinned.push_back(CreatePinnedInput(fbb, fbb.CreateString(name), fbb.CreateString(value)));
  auto pinnedVector = fbb.CreateVector(pinned);
  FinishManifestBuffer(fbb, CreateManifest(fbb, producer, options, model,
                                           inputs, outputs, constantsSection,
                                           codeObjectVector, programVector, pinnedVector));
  return std::string(reinterpret_cast<const char *>(fbb.GetBufferPointer()),
                     fbb.GetSize());
}

//===----------------------------------------------------------------------===//
// File
//===----------------------------------------------------------------------===//

namespace {
/// Buffered output to a file descriptor that checksums every byte it writes.
class ChecksummedFile {
public:
  explicit ChecksummedFile(int fd) : fd_(fd) { buffer_.reserve(kBufferSize); }

  bool write(const void *data, uint64_t size) {
    checksum_.update(data, size_t(size));
    written_ += size;
    if (buffer_.size() + size <= kBufferSize) {
      const char *bytes = static_cast<const char *>(data);
      buffer_.insert(buffer_.end(), bytes, bytes + size);
      return true;
    }
    return flush() && writeRaw(data, size);
  }

  bool zeros(uint64_t size) {
    static const char block[4096] = {};
    while (size != 0) {
      uint64_t n = size < sizeof(block) ? size : sizeof(block);
      if (!write(block, n))
        return false;
      size -= n;
    }
    return true;
  }

  bool flush() {
    bool ok = writeRaw(buffer_.data(), buffer_.size());
    buffer_.clear();
    return ok;
  }

  uint64_t written() const { return written_; }
  uint64_t checksum() const { return checksum_.finish(); }

private:
  static constexpr size_t kBufferSize = 1 << 20;

  bool writeRaw(const void *data, uint64_t size) {
    const char *p = static_cast<const char *>(data);
    while (size != 0) {
      size_t chunk = size > (1u << 30) ? size_t(1u << 30) : size_t(size);
      ssize_t n = ::write(fd_, p, chunk);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return false;
      p += n;
      size -= uint64_t(n);
    }
    return true;
  }

  int fd_;
  std::vector<char> buffer_;
  format::Checksum checksum_;
  uint64_t written_ = 0;
};

struct SectionPlan {
  format::SectionKind kind;
  uint64_t offset;
  uint64_t size;
};
} // namespace

bool ArtifactWriter::writeFile(const std::string &path,
                               std::string &error) const {
  if (!skipValidation_ && !validate(error)) {
    error = path + ": " + error;
    return false;
  }
  bool haveConstants = !constants_.empty();
  int32_t constantsSection =
      haveConstants ? int32_t(1 + codeObjects_.size()) : -1;
  std::string manifest = buildManifest(constantsSection);

  // Layout: header and section table, then each section 64-byte aligned.
  std::vector<SectionPlan> sections;
  sections.push_back({format::SectionKind::Manifest, 0, manifest.size()});
  for (const CodeObjectDesc &c : codeObjects_)
    sections.push_back({format::SectionKind::CodeObject, 0, c.bytes.size()});
  if (haveConstants)
    sections.push_back({format::SectionKind::Constants, 0, constantsSize_});
  uint64_t headerSize =
      format::kHeaderSize + format::kSectionEntrySize * sections.size();
  uint64_t offset = headerSize;
  for (SectionPlan &s : sections) {
    s.offset = format::alignUp(offset);
    offset = s.offset + s.size;
  }
  uint64_t fileSize = offset;

  unsigned char header[format::kHeaderSize] = {};
  std::memcpy(header + format::header::kMagic, format::kMagic,
              sizeof(format::kMagic));
  format::storeLE32(header + format::header::kVersion, format::kVersion);
  format::storeLE32(header + format::header::kHeaderSize,
                    uint32_t(headerSize));
  format::storeLE64(header + format::header::kFileSize, fileSize);
  format::storeLE32(header + format::header::kSectionCount,
                    uint32_t(sections.size()));
  std::vector<unsigned char> table(format::kSectionEntrySize *
                                   sections.size());
  for (size_t i = 0; i < sections.size(); ++i) {
    unsigned char *entry = table.data() + format::kSectionEntrySize * i;
    format::storeLE32(entry + format::entry::kKind,
                      uint32_t(sections[i].kind));
    format::storeLE64(entry + format::entry::kOffset, sections[i].offset);
    format::storeLE64(entry + format::entry::kSize, sections[i].size);
  }

  std::string temporary = path + ".tmp";
  int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  0644);
  if (fd < 0) {
    error = path + ": cannot create " + temporary + ": " +
            std::strerror(errno);
    return false;
  }
  auto fail = [&](const char *what) {
    error = path + ": " + what + ": " + std::strerror(errno ? errno : EIO);
    ::close(fd);
    ::unlink(temporary.c_str());
    return false;
  };

  ChecksummedFile file(fd);
  auto padTo = [&](uint64_t target) { return file.zeros(target - file.written()); };
  errno = 0;
  bool ok = file.write(header, sizeof(header)) &&
            file.write(table.data(), table.size());
  size_t next = 0;
  ok = ok && padTo(sections[next].offset) &&
       file.write(manifest.data(), manifest.size());
  for (const CodeObjectDesc &c : codeObjects_) {
    ++next;
    ok = ok && padTo(sections[next].offset) &&
         file.write(c.bytes.data(), c.bytes.size());
  }
  if (haveConstants) {
    uint64_t base = sections[++next].offset;
    for (const Constant &c : constants_)
      ok = ok && padTo(base + c.offset) && (c.size == 0 || file.write(c.data, c.size));
    ok = ok && padTo(base + constantsSize_);
  }
  ok = ok && file.flush();
  if (!ok)
    return fail("cannot write");
  if (file.written() != fileSize) {
    errno = EIO;
    return fail("internal error: the layout and the bytes written disagree");
  }

  unsigned char checksum[8];
  format::storeLE64(checksum, file.checksum());
  if (::pwrite(fd, checksum, 8, format::header::kChecksum) != 8)
    return fail("cannot write the checksum");
  if (::close(fd) != 0) {
    error = path + ": cannot write: " + std::strerror(errno);
    ::unlink(temporary.c_str());
    return false;
  }
  if (::rename(temporary.c_str(), path.c_str()) != 0) {
    error = path + ": cannot rename " + temporary + ": " +
            std::strerror(errno);
    ::unlink(temporary.c_str());
    return false;
  }
  return true;
}
