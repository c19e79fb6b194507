//===- ArtifactWriter.h - Writes .kiln artifacts ----------------*- C++ -*-===//
//
// Assembles a .kiln file (docs/artifact-format.md): the FlatBuffers manifest,
// one code object section per target and the 64-byte aligned constants. Plain
// C++17 and FlatBuffers (no MLIR or LLVM), so any producer can use it.
//
// Constants are referenced, not copied, and streamed to the file together
// with the checksum: a model with hundreds of MB of weights is never held in
// memory twice. The file appears atomically (written to PATH.tmp, renamed).
//
//   ArtifactWriter writer;
//   uint64_t weights = writer.addConstant(data, size); // offset in constants
//   writer.addInput({"x", DType::F32, {1, 3, 224, 224}});
//   writer.addCodeObject(cpuObject);
//   writer.addProgram(program);
//   std::string error;
//   if (!writer.writeFile("model.kiln", error)) ...
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H
#define KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H

#include "kiln_artifact_generated.h"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace kiln::artifact {

// DType is the schema's enum (kiln::artifact::DType::F32, ...).

/// A buffer a dispatch or the program interface uses.
struct BindingDesc {
  enum Kind : uint8_t {
    Arena = 0,    // offset into the program's arena
    Constant = 1, // offset into the constants section (from addConstant)
  };
  Kind kind = Arena;
  uint64_t offset = 0;
  uint64_t size = 0; // bytes
};

/// One entry of a code object's kernel table. Kernel i of every code object
/// computes the same dispatch.
struct KernelDesc {
  std::string name;   // for people and profiles, e.g. "dispatch_12_conv"
  std::string symbol; // exported entry symbol
  uint64_t workgroupCount = 1;
  std::vector<uint32_t> workgroupSize = {1}; // threads per workgroup (gfx)
  uint32_t ldsBytes = 0;                     // gfx only
};

/// The code of one target: for "cpu" an x86-64 ELF shared object.
struct CodeObjectDesc {
  std::string target;   // "cpu", "gfx942", ...
  std::string triple;   // "x86_64-unknown-linux-gnu"
  std::string cpu;      // "x86-64-v3"
  std::string features; // "+avx2,+fma"
  std::string format;   // "elf-shared-object" (cpu), "hsaco" (gfx)
  std::string bytes;    // the object file
  std::vector<KernelDesc> kernels;
};

struct DispatchDesc {
  uint32_t kernel = 0; // index into every code object's kernels
  std::vector<BindingDesc> bindings;
  uint64_t flops = 0;
  uint64_t bytes = 0;
  std::string ops; // ONNX node names fused into the dispatch
};

/// One step of a program with control flow (kiln_artifact.fbs: Command).
struct CommandDesc {
  CommandOp op = CommandOp::Dispatch;
  uint32_t counter = 0; // CopyToRow and Counter*
  uint32_t index = 0;   // Dispatch: into dispatches; jumps: into commands
  BindingDesc src, dst;
};

struct TensorDesc {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// Outputs only: the axis whose size the data decides (shape holds its
  /// upper bound there), or -1.
  int32_t extentAxis = -1;
};

struct ProgramDesc {
  std::string name = "main";
  uint64_t arenaSize = 0;
  std::vector<BindingDesc> inputs;  // one per model input, in the arena
  std::vector<BindingDesc> outputs; // one per model output
  std::vector<DispatchDesc> dispatches;
  /// For each output with an extent axis, in output order: (output index,
  /// where the program leaves its run-time size, an int64).
  std::vector<std::pair<uint32_t, BindingDesc>> extents;
  /// Empty: the dispatches run in order. Else the commands run, from the
  /// first, with `counters` loop counters.
  std::vector<CommandDesc> commands;
  uint32_t counters = 0;
  /// The batch bucket the program runs (kiln-compile --batch-sizes), 0 for
  /// none.
  uint32_t batchSize = 0;
  /// The program's own inputs and outputs when they differ from the model's
  /// (a batch bucket: same names and dtypes, other shapes); empty: the
  /// model's.
  std::vector<TensorDesc> inputTensors, outputTensors;
};

/// Bytes of one element of `dtype` (0 outside the enum).
uint64_t dtypeSize(DType dtype);

class ArtifactWriter {
public:
  /// Appends a constant at the next 64-byte aligned offset of the constants
  /// section and returns that offset; a constant equal (byte for byte) to
  /// one added before is stored once, and its offset returned. The bytes are
  /// NOT copied: they must stay valid until the last writeFile call.
  uint64_t addConstant(const void *data, size_t size);
  /// Same, keeping a copy of the bytes.
  uint64_t addConstantCopy(const void *data, size_t size);
  /// Bytes in the constants section so far.
  uint64_t constantsSize() const { return constantsSize_; }

  void setProducer(std::string producer) { producer_ = std::move(producer); }
  void setOptions(std::string options) { options_ = std::move(options); }
  void setModel(std::string model) { model_ = std::move(model); }
  /// A graph input folded to a constant at compile time (--input-value).
  void addPinnedInput(std::string name, std::string value) {
    pinnedInputs_.emplace_back(std::move(name), std::move(value));
  }

  void addInput(TensorDesc input) { inputs_.push_back(std::move(input)); }
  void addOutput(TensorDesc output) { outputs_.push_back(std::move(output)); }
  void addCodeObject(CodeObjectDesc codeObject) {
    codeObjects_.push_back(std::move(codeObject));
  }
  void addProgram(ProgramDesc program) {
    programs_.push_back(std::move(program));
  }

  /// Checks what the runtime's validator will check about the manifest:
  /// names, counts, binding sizes and ranges, kernel indices, equal kernel
  /// tables. writeFile runs it first.
  bool validate(std::string &error) const;

  /// Writes the artifact to `path` (through `path.tmp`, renamed at the end;
  /// nothing is left behind on failure). The error names the path.
  bool writeFile(const std::string &path, std::string &error) const;

  /// Skip validate() in writeFile. Only for tests that need a broken
  /// artifact to exercise a reader.
  void setSkipValidationForTesting(bool skip) { skipValidation_ = skip; }

private:
  struct Constant {
    const void *data;
    uint64_t offset;
    uint64_t size;
  };
  std::string buildManifest(int32_t constantsSection) const;
  /// The offset of a stored constant equal to these bytes (`key` is their
  /// constantKey), if any.
  std::optional<uint64_t> findConstant(const void *data, size_t size, uint64_t key) const;

  std::string producer_, options_, model_;
  std::vector<std::pair<std::string, std::string>> pinnedInputs_;
  std::vector<TensorDesc> inputs_, outputs_;
  std::vector<CodeObjectDesc> codeObjects_;
  std::vector<ProgramDesc> programs_;
  std::vector<Constant> constants_;
  /// Index into constants_ by (size, hash of the bytes), for deduplication.
  std::unordered_multimap<uint64_t, size_t> constantIndex_;
  std::deque<std::string> ownedConstants_;
  uint64_t constantsSize_ = 0;
  bool skipValidation_ = false;
};

} // namespace kiln::artifact

#endif // KILN_COMPILER_ARTIFACT_ARTIFACTWRITER_H
