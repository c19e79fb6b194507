//===- CodeObject.cpp - Reading the code objects of an artifact -----------===//
//
// Every field read from the ELF file or its metadata is checked before use:
// the section and note iterators of LLVM's Object library report malformed
// tables as errors, msgpack nodes are tested for their kind before they are
// read, and a symbol's byte range is checked against its section.
//
//===----------------------------------------------------------------------===//

#include "CodeObject.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/BinaryFormat/MsgPackReader.h"
#include "llvm/MC/MCAsmInfo.h"
#include "llvm/MC/MCContext.h"
#include "llvm/MC/MCDisassembler/MCDisassembler.h"
#include "llvm/MC/MCInst.h"
#include "llvm/MC/MCInstPrinter.h"
#include "llvm/MC/MCInstrAnalysis.h"
#include "llvm/MC/MCInstrInfo.h"
#include "llvm/MC/MCRegisterInfo.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/MCTargetOptions.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

using namespace kiln::inspect;
using namespace llvm;

static Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

static const char *machineName(uint16_t machine) {
  switch (machine) {
  case ELF::EM_AMDGPU:
    return "AMDGPU";
  case ELF::EM_X86_64:
    return "x86-64";
  default:
    return nullptr;
  }
}

Expected<std::unique_ptr<CodeObjectFile>>
CodeObjectFile::open(StringRef bytes, uint16_t machine) {
  static const char magic[] = {0x7f, 'E', 'L', 'F'};
  if (!bytes.starts_with(StringRef(magic, sizeof(magic))))
    return makeError("not an ELF file");
  if (bytes.size() < ELF::EI_NIDENT ||
      uint8_t(bytes[ELF::EI_CLASS]) != ELF::ELFCLASS64 ||
      uint8_t(bytes[ELF::EI_DATA]) != ELF::ELFDATA2LSB)
    return makeError("not a 64-bit little-endian ELF file");
  auto file =
      object::ELF64LEObjectFile::create(MemoryBufferRef(bytes, "code object"));
  if (!file)
    return makeError("malformed ELF file: " + toString(file.takeError()));
  uint16_t actual = file->getELFFile().getHeader().e_machine;
  if (actual != machine) {
    const char *name = machineName(actual);
    std::string found = name ? name : "0x" + utohexstr(actual);
    return makeError("the ELF machine is " + found + ", expected " +
                     machineName(machine));
  }
  return std::unique_ptr<CodeObjectFile>(new CodeObjectFile(
      std::make_unique<object::ELF64LEObjectFile>(std::move(*file))));
}

std::string CodeObjectFile::amdgpuProcessor() const {
  // ELFObjectFileBase::getAMDGPUCPUName treats an unknown value as
  // unreachable, so the gfx9+ processors are named here.
  unsigned mach = file_->getELFFile().getHeader().e_flags & ELF::EF_AMDGPU_MACH;
  switch (mach) {
#define KILN_PROCESSOR(n)                                                      \
  case ELF::EF_AMDGPU_MACH_AMDGCN_GFX##n:                                      \
    return StringRef("gfx" #n).lower();
    KILN_PROCESSOR(900)
    KILN_PROCESSOR(902)
    KILN_PROCESSOR(904)
    KILN_PROCESSOR(906)
        KILN_PROCESSOR(908) KILN_PROCESSOR(909) KILN_PROCESSOR(
            90A) KILN_PROCESSOR(90C) KILN_PROCESSOR(942) KILN_PROCESSOR(950)
            KILN_PROCESSOR(1010) KILN_PROCESSOR(1011) KILN_PROCESSOR(1012)
                KILN_PROCESSOR(1013) KILN_PROCESSOR(1030) KILN_PROCESSOR(1031)
                    KILN_PROCESSOR(1032) KILN_PROCESSOR(1033) KILN_PROCESSOR(
                        1034) KILN_PROCESSOR(1035) KILN_PROCESSOR(1036)
                        KILN_PROCESSOR(1100) KILN_PROCESSOR(1101)
                            KILN_PROCESSOR(1102) KILN_PROCESSOR(1103)
                                KILN_PROCESSOR(1150) KILN_PROCESSOR(1151)
                                    KILN_PROCESSOR(1152) KILN_PROCESSOR(1153)
                                        KILN_PROCESSOR(1200)
                                            KILN_PROCESSOR(1201)
                                                KILN_PROCESSOR(1250)
                                                    KILN_PROCESSOR(1251)
#undef KILN_PROCESSOR
                                                        default
        : return "mach 0x" +
          utohexstr(mach, /*LowerCase=*/true);
  }
}

namespace {
/// Typed reads from one kernel's metadata map.
class KernelFields {
public:
  KernelFields(msgpack::MapDocNode map, std::string where)
      : map_(map), where_(std::move(where)) {}

  Error string(StringRef key, std::string &out) {
    auto it = map_.find(key);
    if (it == map_.end() || !it->second.isString())
      return makeError(where_ + ": " + key + " is missing or not a string");
    out = it->second.getString().str();
    return Error::success();
  }

  /// Reads an unsigned integer; a missing optional key leaves `out` alone.
  Error uint(StringRef key, uint64_t &out, bool required) {
    auto it = map_.find(key);
    if (it == map_.end()) {
      if (!required)
        return Error::success();
      return makeError(where_ + ": " + key + " is missing");
    }
    const msgpack::DocNode &node = it->second;
    if (node.getKind() == msgpack::Type::UInt) {
      out = node.getUInt();
      return Error::success();
    }
    if (node.getKind() == msgpack::Type::Int && node.getInt() >= 0) {
      out = uint64_t(node.getInt());
      return Error::success();
    }
    return makeError(where_ + ": " + key + " is not an unsigned integer");
  }

private:
  msgpack::MapDocNode map_;
  std::string where_;
};
} // namespace

/// True when `blob` starts with one complete msgpack object whose map keys
/// are all strings. msgpack::Document treats a map or array used as a map key
/// as unreachable, so corrupted metadata is checked with the plain reader
/// first.
static bool isWellFormedMetadata(StringRef blob) {
  msgpack::Reader reader(blob);
  struct Level {
    uint64_t remaining; // objects still to read (keys and values of a map)
    bool map;
  };
  SmallVector<Level, 8> stack;
  do {
    msgpack::Object object;
    Expected<bool> read = reader.read(object);
    if (!read) {
      consumeError(read.takeError());
      return false;
    }
    if (!*read)
      return false; // ended inside a map or array
    bool isKey =
        !stack.empty() && stack.back().map && stack.back().remaining % 2 == 0;
    if (!stack.empty())
      --stack.back().remaining;
    if (isKey && object.Kind != msgpack::Type::String)
      return false;
    switch (object.Kind) {
    case msgpack::Type::Map:
    case msgpack::Type::Array:
      // Each element takes at least one byte.
      if (object.Length > blob.size())
        return false;
      stack.push_back({object.Kind == msgpack::Type::Map
                           ? 2 * uint64_t(object.Length)
                           : uint64_t(object.Length),
                       object.Kind == msgpack::Type::Map});
      break;
    case msgpack::Type::Extension:
      return false; // msgpack::Document does not read these
    default:
      break;
    }
    while (!stack.empty() && stack.back().remaining == 0)
      stack.pop_back();
  } while (!stack.empty());
  return true;
}

static Error parseMetadata(StringRef blob, std::vector<GfxKernelInfo> &kernels,
                           std::string &target) {
  msgpack::Document doc;
  if (!isWellFormedMetadata(blob) || !doc.readFromBlob(blob, /*Multi=*/false))
    return makeError("the AMDGPU metadata note is not valid msgpack");
  msgpack::DocNode &root = doc.getRoot();
  if (!root.isMap())
    return makeError("the AMDGPU metadata is not a map");
  msgpack::MapDocNode map = root.getMap();
  auto targetIt = map.find("amdhsa.target");
  if (targetIt != map.end() && targetIt->second.isString())
    target = targetIt->second.getString().str();
  auto kernelsIt = map.find("amdhsa.kernels");
  if (kernelsIt == map.end() || !kernelsIt->second.isArray())
    return makeError("the AMDGPU metadata has no amdhsa.kernels list");
  msgpack::ArrayDocNode list = kernelsIt->second.getArray();
  for (size_t i = 0; i < list.size(); ++i) {
    std::string where = "amdhsa.kernels[" + std::to_string(i) + "]";
    if (!list[i].isMap())
      return makeError(where + " is not a map");
    KernelFields fields(list[i].getMap(), where);
    GfxKernelInfo k;
    if (Error e = fields.string(".name", k.name))
      return e;
    where += " ('" + k.name + "')";
    fields = KernelFields(list[i].getMap(), where);
    // Required keys per AMDGPUUsage's code object v3+ kernel metadata;
    // .agpr_count and the spill counts are optional (0 when absent).
    if (Error e = fields.string(".symbol", k.symbol))
      return e;
    struct {
      const char *key;
      uint64_t *value;
      bool required;
    } numbers[] = {
        {".vgpr_count", &k.vgprs, true},
        {".agpr_count", &k.agprs, false},
        {".sgpr_count", &k.sgprs, true},
        {".group_segment_fixed_size", &k.ldsBytes, true},
        {".private_segment_fixed_size", &k.scratchBytes, true},
        {".vgpr_spill_count", &k.vgprSpills, false},
        {".sgpr_spill_count", &k.sgprSpills, false},
        {".wavefront_size", &k.wavefrontSize, true},
        {".max_flat_workgroup_size", &k.maxFlatWorkgroupSize, true},
    };
    for (auto &n : numbers)
      if (Error e = fields.uint(n.key, *n.value, n.required))
        return e;
    kernels.push_back(std::move(k));
  }
  return Error::success();
}

Error CodeObjectFile::readAmdgpuMetadata(std::vector<GfxKernelInfo> &kernels,
                                         std::string &target) const {
  const auto &elf = file_->getELFFile();
  auto sections = elf.sections();
  if (!sections)
    return sections.takeError();
  for (const auto &section : *sections) {
    if (section.sh_type != ELF::SHT_NOTE)
      continue;
    Error error = Error::success();
    for (const auto &note : elf.notes(section, error)) {
      if (note.getName() != "AMDGPU" ||
          note.getType() != ELF::NT_AMDGPU_METADATA)
        continue;
      size_t align = section.sh_addralign == 8 ? 8 : 4;
      if (Error e =
              parseMetadata(note.getDescAsStringRef(align), kernels, target)) {
        consumeError(std::move(error));
        return e;
      }
      return error; // success unless the iteration failed
    }
    if (error)
      return makeError("malformed note section: " + toString(std::move(error)));
  }
  return makeError("no NT_AMDGPU_METADATA note (not a code object v3+ "
                   "HSACO)");
}

Expected<FunctionCode> CodeObjectFile::findFunction(StringRef name) const {
  // The symbol tables are read through ELFFile, which checks that each table
  // lies within the file before its entries are visited (iterating a table
  // whose size field is corrupted entry by entry would not end).
  const auto &elf = file_->getELFFile();
  auto sections = elf.sections();
  if (!sections)
    return sections.takeError();
  // The static symbol table first, then the dynamic one (a stripped
  // library).
  for (unsigned type : {ELF::SHT_SYMTAB, ELF::SHT_DYNSYM}) {
    for (const auto &table : *sections) {
      if (table.sh_type != type)
        continue;
      auto symbols = elf.symbols(&table);
      if (!symbols)
        return makeError("malformed symbol table: " +
                         toString(symbols.takeError()));
      auto strings = elf.getStringTableForSymtab(table, *sections);
      if (!strings)
        return makeError("malformed symbol table: " +
                         toString(strings.takeError()));
      for (const auto &symbol : *symbols) {
        if (symbol.getType() != ELF::STT_FUNC || !symbol.isDefined())
          continue;
        Expected<StringRef> symbolName = symbol.getName(*strings);
        if (!symbolName) {
          consumeError(symbolName.takeError());
          continue;
        }
        if (*symbolName != name)
          continue;
        auto section = elf.getSection(symbol.st_shndx);
        if (!section)
          return section.takeError();
        auto contents = elf.getSectionContents(**section);
        if (!contents)
          return contents.takeError();
        uint64_t base = (*section)->sh_addr, address = symbol.st_value;
        uint64_t size = symbol.st_size;
        if (size == 0)
          return makeError("function symbol '" + name + "' has size 0");
        if (address < base || address - base > contents->size() ||
            size > contents->size() - (address - base))
          return makeError("function symbol '" + name +
                           "' lies outside its section");
        FunctionCode code;
        code.symbol = name.str();
        code.address = address;
        code.bytes = contents->slice(address - base, size);
        return code;
      }
    }
  }
  return makeError("no function symbol '" + name + "' in the code object");
}

/// "s_endpgm", "movl (%rdi), %eax": the printer's text with its tabs as
/// single spaces and no leading blanks.
static std::string normalize(StringRef text) {
  std::string out;
  for (char c : text.trim())
    out += c == '\t' ? ' ' : c;
  return out;
}

MCTools::~MCTools() = default;

Expected<std::unique_ptr<MCTools>>
MCTools::create(StringRef tripleName, StringRef cpu, StringRef features) {
  auto tools = std::make_unique<MCTools>();
  tools->triple = Triple(tripleName);
  std::string message;
  tools->target = TargetRegistry::lookupTarget(tools->triple, message);
  if (!tools->target)
    return makeError("no disassembler for '" + tripleName + "': " + message);
  const llvm::Target &target = *tools->target;
  const Triple &triple = tools->triple;
  tools->registers.reset(target.createMCRegInfo(triple));
  MCTargetOptions options;
  if (tools->registers)
    tools->asmInfo.reset(target.createMCAsmInfo(*tools->registers, triple, options));
  // Check the CPU first: an unknown one would only warn on stderr.
  std::unique_ptr<MCSubtargetInfo> generic(target.createMCSubtargetInfo(triple, "", ""));
  if (!generic || !generic->isCPUStringValid(cpu))
    return makeError("LLVM does not know the cpu '" + cpu + "' of " + tripleName);
  tools->subtarget.reset(target.createMCSubtargetInfo(triple, cpu, features));
  tools->instrInfo.reset(target.createMCInstrInfo());
  if (!tools->registers || !tools->asmInfo || !tools->subtarget || !tools->instrInfo)
    return makeError("cannot set up the MC layer for " + tripleName);
  tools->context = std::make_unique<MCContext>(triple, tools->asmInfo.get(),
                                               tools->registers.get(), tools->subtarget.get());
  tools->disassembler.reset(target.createMCDisassembler(*tools->subtarget, *tools->context));
  tools->printer.reset(target.createMCInstPrinter(triple, tools->asmInfo->getAssemblerDialect(),
                                                  *tools->asmInfo, *tools->instrInfo,
                                                  *tools->registers));
  if (!tools->disassembler || !tools->printer)
    return makeError("no disassembler for " + tripleName);
  // Immediates and branch targets as llvm-objdump prints them.
  tools->printer->setPrintImmHex(true);
  tools->printer->setPrintBranchImmAsAddress(true);
  tools->analysis.reset(target.createMCInstrAnalysis(tools->instrInfo.get()));
  return std::move(tools);
}

std::vector<DecodedInstruction> kiln::inspect::decode(const MCTools &tools,
                                                      const FunctionCode &code) {
  std::vector<DecodedInstruction> out;
  const uint64_t skip = tools.triple.isAMDGPU() ? 4 : 1;
  ArrayRef<uint8_t> bytes = code.bytes;
  for (uint64_t offset = 0; offset < bytes.size();) {
    DecodedInstruction decoded;
    decoded.offset = offset;
    uint64_t size = 0;
    MCDisassembler::DecodeStatus status = tools.disassembler->getInstruction(
        decoded.inst, size, bytes.slice(offset), code.address + offset, nulls());
    decoded.valid = status != MCDisassembler::Fail && size != 0;
    if (decoded.valid) {
      uint64_t address = code.address + offset, target = 0;
      const MCInstrAnalysis *analysis = tools.analysis.get();
      if (analysis && (analysis->isBranch(decoded.inst) || analysis->isCall(decoded.inst)) &&
          analysis->evaluateBranch(decoded.inst, address, size, target))
        decoded.branchTarget = target;
    } else {
      size = skip;
    }
    decoded.size = std::min<uint64_t>(size, bytes.size() - offset);
    offset += decoded.size;
    out.push_back(std::move(decoded));
  }
  return out;
}

std::string kiln::inspect::mnemonic(const MCTools &tools, const MCInst &inst) {
  std::string text;
  raw_string_ostream os(text);
  tools.printer->printInst(&inst, 0, "", *tools.subtarget, os);
  StringRef trimmed = StringRef(text).trim();
  return trimmed.take_until([](char c) { return c == ' ' || c == '\t'; }).str();
}

Error kiln::inspect::disassemble(const FunctionCode &code, StringRef tripleName,
                                 StringRef cpu, StringRef features,
                                 std::vector<Instruction> &out) {
  auto tools = MCTools::create(tripleName, cpu, features);
  if (!tools)
    return tools.takeError();
  const MCTools &mc = **tools;
  for (const DecodedInstruction &d : decode(mc, code)) {
    std::string text;
    raw_string_ostream os(text);
    if (d.valid) {
      uint64_t address = code.address + d.offset;
      // x86 printers take the address of the next instruction
      // (MCInstPrinter::printInst), the others that of this one.
      mc.printer->printInst(&d.inst, mc.triple.isX86() ? address + d.size : address, "",
                            *mc.subtarget, os);
      // Branch targets are named like llvm-objdump does (<symbol+0xNN>).
      if (d.branchTarget) {
        uint64_t branchTarget = *d.branchTarget;
        os << " <";
        if (branchTarget >= code.address &&
            branchTarget - code.address <= code.bytes.size())
          os << code.symbol << "+0x"
             << utohexstr(branchTarget - code.address, /*LowerCase=*/true);
        else
          os << "0x" << utohexstr(branchTarget, /*LowerCase=*/true);
        os << ">";
      }
    } else {
      os << "<unknown>";
    }
    out.push_back({d.offset, code.bytes.slice(d.offset, d.size), normalize(text)});
  }
  return Error::success();
}
