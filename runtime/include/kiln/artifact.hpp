//===- artifact.hpp - .kiln reader and validator ----------------*- C++ -*-===//
//
// Maps a .kiln file and validates every byte the runtime will later use:
// header, checksum, section table, the FlatBuffers manifest, every tensor,
// code object, kernel and binding. After `open` succeeds the rest of the
// runtime reads the manifest without further checks.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_ARTIFACT_HPP
#define KILN_ARTIFACT_HPP

#include "kiln/runtime.h"
#include "kiln_artifact_generated.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace kiln::rt {

/// A model input or output, decoded from the manifest.
struct TensorInfo {
  std::string name;
  kiln_dtype_t dtype = KILN_DTYPE_F32;
  std::vector<int64_t> shape;
  uint64_t byteSize = 0;
  /// Outputs only: the axis whose size the data decides (shape holds the
  /// upper bound there, byteSize the bytes at that bound), or -1.
  int32_t extentAxis = -1;
};

/// What one program takes and returns: the model's inputs and outputs at
/// the program's shapes (a batch bucket's), and its batch size (0: none).
struct ProgramInterface {
  std::vector<TensorInfo> inputs, outputs;
  uint32_t batchSize = 0;
};

struct SectionEntry {
  uint32_t kind = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

class Artifact {
public:
  /// Maps `path` read-only and validates it. On error `out` is untouched.
  static kiln_status_t open(const std::string &path,
                            std::unique_ptr<Artifact> &out);
  /// Copies `size` bytes into 64-byte aligned memory and validates them;
  /// `name` prefixes messages.
  static kiln_status_t openMemory(const void *data, size_t size,
                                  const std::string &name,
                                  std::unique_ptr<Artifact> &out);
  ~Artifact();
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;

  const std::string &name() const { return name_; }
  const kiln::artifact::Manifest &manifest() const { return *manifest_; }
  /// The model's inputs and outputs (those of program 0).
  const std::vector<TensorInfo> &inputs() const { return inputs_; }
  const std::vector<TensorInfo> &outputs() const { return outputs_; }
  /// Per program, in manifest order.
  const std::vector<ProgramInterface> &programs() const { return programs_; }
  const std::vector<SectionEntry> &sections() const { return sections_; }
  /// Graph inputs folded to constants at compile time (--input-value): name
  /// and value as written; they are no model inputs.
  const std::vector<std::pair<std::string, std::string>> &pinnedInputs() const {
    return pinned_;
  }

  /// Base of the constants section (nullptr without one) and its size.
  const unsigned char *constants() const;
  uint64_t constantsSize() const;
  const unsigned char *sectionData(uint32_t index) const {
    return data_ + sections_[index].offset;
  }

  /// Index of the code object for `target`, or -1.
  int findCodeObject(const std::string &target) const;
  /// Index of the program named `name` (nullptr: the first), or -1.
  int findProgram(const char *name) const;
  /// Index of the program of batch bucket `batchSize`, or -1.
  int findBatchProgram(uint32_t batchSize) const;

  /// Manifest strings, "" when absent.
  static const char *str(const flatbuffers::String *s) {
    return s ? s->c_str() : "";
  }

private:
  Artifact() = default;
  kiln_status_t validate();
  kiln_status_t validateHeader();
  kiln_status_t validateManifest();
  kiln_status_t validateTensors(bool outputs);
  /// Decodes tensor infos into `result`; with a `prefix` (a program's own
  /// tensors) they must be the model's at other shapes.
  kiln_status_t readTensors(
      const flatbuffers::Vector<flatbuffers::Offset<kiln::artifact::TensorInfo>> *infos,
      bool outputs, const std::string &prefix, std::vector<TensorInfo> &result);
  kiln_status_t validateCodeObjects(size_t &kernelCount);
  kiln_status_t validateProgram(size_t index, size_t kernelCount);
  /// The program's commands (jumps, counters, copies), with `checkBinding`
  /// for the ranges they read and write.
  kiln_status_t validateCommands(
      const kiln::artifact::Program &program, const std::string &prefix,
      size_t dispatchCount,
      const std::function<kiln_status_t(const kiln::artifact::Binding *,
                                        const std::string &)> &checkBinding);
  kiln_status_t invalid(const std::string &message) const;

  std::string name_;
  const unsigned char *data_ = nullptr;
  uint64_t size_ = 0;
  // Exactly one of these owns the bytes.
  void *mapping_ = nullptr;
  size_t mappingSize_ = 0;
  void *heap_ = nullptr;

  std::vector<SectionEntry> sections_;
  uint32_t manifestSection_ = 0;
  const kiln::artifact::Manifest *manifest_ = nullptr;
  std::vector<TensorInfo> inputs_, outputs_;
  std::vector<ProgramInterface> programs_;
  std::vector<std::pair<std::string, std::string>> pinned_;
  int constantsSection_ = -1;
};

/// Why a code object's bytes are not a 64-bit little-endian ELF file, or
/// nullptr, with the header's e_machine and e_type (each device then checks
/// the machine and the file type it loads).
const char *readElfHeader(const unsigned char *data, uint64_t size, uint16_t &machine,
                          uint16_t &type);

} // namespace kiln::rt

#endif // KILN_ARTIFACT_HPP
