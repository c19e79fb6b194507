//===- CodeObject.h - Reading the code objects of an artifact ---*- C++ -*-===//
//
// Parses one code object (a gfx HSACO or an x86-64 shared object) with LLVM's
// Object library: the AMDGPU metadata note of a HSACO (NT_AMDGPU_METADATA,
// msgpack) with each kernel's register, LDS, scratch and spill figures, a
// function's bytes found through the ELF symbol tables, and their
// disassembly with the MC disassembler. Malformed input is an llvm::Error,
// never a crash.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_TOOLS_KILN_INSPECT_CODEOBJECT_H
#define KILN_TOOLS_KILN_INSPECT_CODEOBJECT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/MC/MCInst.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class MCAsmInfo;
class MCContext;
class MCDisassembler;
class MCInstPrinter;
class MCInstrAnalysis;
class MCInstrInfo;
class MCRegisterInfo;
class MCSubtargetInfo;
class Target;
} // namespace llvm

namespace kiln::inspect {

/// One kernel of a HSACO's AMDGPU metadata (code object v3+).
struct GfxKernelInfo {
  std::string name;      // .name, the kernel's function symbol
  std::string symbol;    // .symbol, its kernel descriptor ("name.kd")
  uint64_t vgprs = 0;    // .vgpr_count (on gfx90a+ VGPRs and AGPRs together)
  uint64_t agprs = 0;    // .agpr_count (0 where the target has none)
  uint64_t sgprs = 0;    // .sgpr_count (VCC, flat scratch, XNACK included)
  uint64_t ldsBytes = 0; // .group_segment_fixed_size
  uint64_t scratchBytes = 0; // .private_segment_fixed_size (per lane)
  uint64_t vgprSpills = 0;   // .vgpr_spill_count
  uint64_t sgprSpills = 0;   // .sgpr_spill_count
  uint64_t wavefrontSize = 0;
  uint64_t maxFlatWorkgroupSize = 0;
};

/// A function's machine code.
struct FunctionCode {
  std::string symbol;
  uint64_t address = 0; // virtual address of the first byte
  llvm::ArrayRef<uint8_t> bytes;
};

/// One decoded instruction.
struct Instruction {
  uint64_t offset = 0; // from the function's start
  llvm::ArrayRef<uint8_t> bytes;
  std::string text; // "<unknown>" when the bytes do not decode
};

class CodeObjectFile {
public:
  /// Parses `bytes` (which must outlive the result) as an ELF file for
  /// `machine` (llvm::ELF::EM_AMDGPU or EM_X86_64).
  static llvm::Expected<std::unique_ptr<CodeObjectFile>>
  open(llvm::StringRef bytes, uint16_t machine);

  /// The processor in the ELF header flags of a HSACO ("gfx942", or
  /// "mach 0xNN" for one this tool does not name).
  std::string amdgpuProcessor() const;

  /// The kernels of the NT_AMDGPU_METADATA note, and its amdhsa.target.
  llvm::Error readAmdgpuMetadata(std::vector<GfxKernelInfo> &kernels,
                                 std::string &target) const;

  /// The bytes of the defined function symbol `name`.
  llvm::Expected<FunctionCode> findFunction(llvm::StringRef name) const;

private:
  explicit CodeObjectFile(std::unique_ptr<llvm::object::ELF64LEObjectFile> file)
      : file_(std::move(file)) {}
  std::unique_ptr<llvm::object::ELF64LEObjectFile> file_;
};

/// The MC layer of one target, cpu and feature set: what disassembling and
/// timing machine code need.
struct MCTools {
  llvm::Triple triple;
  const llvm::Target *target = nullptr;
  std::unique_ptr<llvm::MCRegisterInfo> registers;
  std::unique_ptr<llvm::MCAsmInfo> asmInfo;
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget;
  std::unique_ptr<llvm::MCInstrInfo> instrInfo;
  std::unique_ptr<llvm::MCContext> context;
  std::unique_ptr<llvm::MCDisassembler> disassembler;
  std::unique_ptr<llvm::MCInstPrinter> printer;
  std::unique_ptr<llvm::MCInstrAnalysis> analysis; // may be null

  /// Sets up `triple`, `cpu` and `features`; the MC layer (and the
  /// disassembler) of the target must have been initialized.
  static llvm::Expected<std::unique_ptr<MCTools>>
  create(llvm::StringRef triple, llvm::StringRef cpu, llvm::StringRef features);
  ~MCTools();
};

/// One decoded instruction with its MC form.
struct DecodedInstruction {
  uint64_t offset = 0; // from the function's start
  uint64_t size = 0;
  bool valid = false; // false: the bytes did not decode
  llvm::MCInst inst;
  /// Where a branch goes (an address), if it is one the analysis evaluates.
  std::optional<uint64_t> branchTarget;
};

/// Decodes `code` with `tools`; bytes that do not decode are skipped by the
/// smallest instruction size.
std::vector<DecodedInstruction> decode(const MCTools &tools, const FunctionCode &code);

/// The mnemonic of `inst` as the printer spells it ("v_mfma_f32_16x16x16_f16").
std::string mnemonic(const MCTools &tools, const llvm::MCInst &inst);

/// Disassembles `code` for `triple`, `cpu` and `features`. The MC layer of
/// every target must have been initialized.
llvm::Error disassemble(const FunctionCode &code, llvm::StringRef triple,
                        llvm::StringRef cpu, llvm::StringRef features,
                        std::vector<Instruction> &out);

} // namespace kiln::inspect

#endif // KILN_TOOLS_KILN_INSPECT_CODEOBJECT_H
