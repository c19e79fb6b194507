//===- kiln-inspect.cpp - What a compiled .kiln artifact holds ------------===//
//
// Prints an artifact's manifest (producer, targets, tensors, programs and
// their dispatches) and, for each kernel on each gfx target, the resources
// its HSACO's AMDGPU metadata records and the occupancy they allow; with
// --kernel one kernel's resources, with --disassemble its machine code.
// --json prints the same as JSON. The artifact is read and validated by the
// runtime's reader; the code objects are parsed with LLVM's Object library.
// Every error is one line "kiln-inspect: error: ..." on stderr and exit 1.
//
//===----------------------------------------------------------------------===//

#include "kiln/artifact.hpp"
#include "kiln/support/TensorUtil.h"
#include "kiln/support/Version.h"
#include "CodeObject.h"
#include "LoopAnalysis.h"
#include "Roofline.h"
#include "targets/GfxTargets.h"
#include "targets/Occupancy.h"
#include "targets/PerfModel.h"

#include "ArtifactFormat.h"

#include "llvm/BinaryFormat/ELF.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::inspect;
using GfxTarget = kiln::gfx::Target;
using kiln::gfx::computeOccupancy;
using kiln::gfx::Occupancy;
namespace fb = kiln::artifact;
using llvm::outs;
using llvm::StringRef;

namespace {

const char *const kUsage =
    "usage: kiln-inspect MODEL.kiln [options]\n"
    "\n"
    "Prints what a compiled artifact holds: manifest, programs, dispatches,\n"
    "and per kernel and gfx target its registers, LDS, scratch, spills and\n"
    "occupancy (read from the HSACO's AMDGPU metadata).\n"
    "\n"
    "options:\n"
    "  --json             print JSON instead of text\n"
    "  --kernel=NAME      print only the kernel NAME (its name or symbol)\n"
    "                     on every target\n"
    "  --target=TARGET    restrict kernels to the code object of TARGET\n"
    "                     (cpu, gfx942, ...)\n"
    "  --disassemble      print the machine code of --kernel on --target\n"
    "  --perf             estimate each gfx kernel's time on each chip of its\n"
    "                     target (a static model: LLVM MCA on the main loop,\n"
    "                     peaks and bandwidths from the target table), with\n"
    "                     the bound that limits it, and the program's time,\n"
    "                     runs per second and per watt; with --json as JSON\n"
    "  --chip=NAME        --perf: only the chip NAME (MI300X, MI355X, ...)\n"
    "  --program=NAME     --perf: the program to estimate (default: the\n"
    "                     first, e.g. main or batch_1)\n"
    "  --roofline=FILE    --perf: also draw the kernels on their chips'\n"
    "                     rooflines as an SVG picture\n"
    "  --help             print this help\n"
    "  --version          print the version and the devices it runs on\n";

[[noreturn]] void fatal(const std::string &message) {
  outs().flush();
  std::fprintf(stderr, "kiln-inspect: error: %s\n", message.c_str());
  std::exit(1);
}

struct Options {
  std::string model;
  bool json = false;
  std::string kernel;
  std::string target;
  bool disassemble = false;
  bool perf = false;
  std::string chip, program, roofline;
};

Options parseArguments(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--version") {
      std::string version = kiln::support::runtimeVersionText("kiln-inspect") +
                            "LLVM " LLVM_VERSION_STRING " (code object reader, disassembler)\n";
      std::fputs(version.c_str(), stdout);
      std::exit(0);
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--json") {
      options.json = true;
    } else if (arg == "--disassemble") {
      options.disassemble = true;
    } else if (arg == "--perf") {
      options.perf = true;
    } else if (support::flagValue(arg, "--chip=", options.chip)) {
      if (options.chip.empty())
        fatal("--chip needs a chip name (MI300X, MI355X, ...)");
    } else if (support::flagValue(arg, "--program=", options.program)) {
      if (options.program.empty())
        fatal("--program needs a program name");
    } else if (support::flagValue(arg, "--roofline=", options.roofline)) {
      if (options.roofline.empty())
        fatal("--roofline needs a file name");
    } else if (support::flagValue(arg, "--kernel=", options.kernel)) {
      if (options.kernel.empty())
        fatal("--kernel needs a kernel name");
    } else if (support::flagValue(arg, "--target=", options.target)) {
      if (options.target.empty())
        fatal("--target needs a target name");
    } else if (!arg.empty() && arg[0] == '-') {
      fatal("unknown option '" + arg + "' (see kiln-inspect --help)");
    } else if (options.model.empty()) {
      options.model = arg;
    } else {
      fatal("more than one artifact given ('" + options.model + "' and '" +
            arg + "')");
    }
  }
  if (options.model.empty())
    fatal("no artifact given (usage: kiln-inspect MODEL.kiln [options]; see "
          "--help)");
  if (options.disassemble && (options.kernel.empty() || options.target.empty()))
    fatal("--disassemble needs --kernel=NAME and --target=TARGET");
  if (!options.perf && (!options.chip.empty() || !options.program.empty() ||
                        !options.roofline.empty()))
    fatal(std::string(!options.chip.empty()      ? "--chip"
                      : !options.program.empty() ? "--program"
                                                 : "--roofline") +
          " needs --perf");
  if (options.perf && (options.disassemble || !options.kernel.empty()))
    fatal("--perf estimates every kernel; it does not take --kernel or --disassemble");
  return options;
}

const char *str(const flatbuffers::String *s) { return rt::Artifact::str(s); }

//===----------------------------------------------------------------------===//
// The artifact's code objects, parsed
//===----------------------------------------------------------------------===//

/// One kernel of one code object with what its code object says about it.
struct KernelView {
  size_t index = 0;
  const fb::Kernel *kernel = nullptr;
  /// gfx code objects only: an element of the view's metadata (a vector
  /// whose buffer moves along with the view).
  const GfxKernelInfo *gfx = nullptr;
  uint64_t workgroupSize = 0; // threads the kernel is launched with
  uint64_t ldsBytes = 0;      // LDS a workgroup allocates
  Occupancy occupancy;
  std::string warning; // e.g. a workgroup size above the kernel's maximum
};

struct ObjectView {
  size_t index = 0;
  const fb::CodeObject *object = nullptr;
  std::string target;
  bool gfx = false;
  llvm::StringRef bytes;
  std::unique_ptr<CodeObjectFile> file;
  std::vector<GfxKernelInfo> metadata;
  std::string metadataTarget; // amdhsa.target
  const GfxTarget *gfxTarget = nullptr;
  std::vector<KernelView> kernels;
};

std::string joinNames(const std::vector<std::string> &names) {
  std::string s;
  for (const std::string &n : names)
    s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "none" : s;
}

/// Parses every code object; any malformed one is fatal.
std::vector<ObjectView> loadCodeObjects(const rt::Artifact &artifact) {
  std::vector<ObjectView> views;
  auto *objects = artifact.manifest().code_objects();
  size_t count = objects ? objects->size() : 0;
  for (size_t i = 0; i < count; ++i) {
    ObjectView view;
    view.index = i;
    view.object = objects->Get(i);
    view.target = str(view.object->target());
    std::string where = artifact.name() + ": code object " + std::to_string(i) +
                        " ('" + view.target + "')";
    StringRef triple = str(view.object->triple());
    view.gfx = triple.starts_with("amdgcn") ||
               StringRef(view.target).starts_with("gfx");
    if (!view.gfx && !triple.starts_with("x86_64") && view.target != "cpu")
      fatal(where + ": unknown kind of code object (triple '" + triple.str() +
            "'; expected amdgcn-* or x86_64-*)");
    uint32_t section = view.object->section();
    view.bytes =
        StringRef(reinterpret_cast<const char *>(artifact.sectionData(section)),
                  size_t(artifact.sections()[section].size));
    auto file = CodeObjectFile::open(
        view.bytes, view.gfx ? llvm::ELF::EM_AMDGPU : llvm::ELF::EM_X86_64);
    if (!file)
      fatal(where + ": " + llvm::toString(file.takeError()));
    view.file = std::move(*file);

    auto *kernels = view.object->kernels();
    size_t kernelCount = kernels ? kernels->size() : 0;
    if (view.gfx) {
      std::string processor = view.file->amdgpuProcessor();
      std::string cpu = str(view.object->cpu());
      if (processor != cpu)
        fatal(where + ": the ELF header says " + processor +
              ", the manifest says cpu '" + cpu + "'");
      if (llvm::Error e =
              view.file->readAmdgpuMetadata(view.metadata, view.metadataTarget))
        fatal(where + ": " + llvm::toString(std::move(e)));
      view.gfxTarget = kiln::gfx::lookupTarget(view.target);
    }
    for (size_t k = 0; k < kernelCount; ++k) {
      KernelView kv;
      kv.index = k;
      kv.kernel = kernels->Get(k);
      std::string kernelWhere = where + " kernel " + std::to_string(k) + " ('" +
                                str(kv.kernel->name()) + "')";
      StringRef symbol = str(kv.kernel->symbol());
      if (!view.gfx) {
        // The entry point must exist (its bytes are what --disassemble shows).
        auto code = view.file->findFunction(symbol);
        if (!code)
          fatal(kernelWhere + ": " + llvm::toString(code.takeError()));
        view.kernels.push_back(std::move(kv));
        continue;
      }
      std::vector<std::string> names;
      for (const GfxKernelInfo &info : view.metadata) {
        names.push_back(info.name);
        if (info.name == symbol || info.symbol == symbol)
          kv.gfx = &info;
      }
      if (!kv.gfx)
        fatal(kernelWhere + ": symbol '" + symbol.str() +
              "' is not a kernel of the code object (its metadata lists: " +
              joinNames(names) + ")");
      // The launch's workgroup size is the manifest's; the kernel's maximum
      // stands in when the manifest has none.
      uint64_t threads = 1;
      auto *size = kv.kernel->workgroup_size();
      if (size && size->size() != 0) {
        for (uint32_t d : *size) // saturating: the manifest is untrusted
          threads =
              d != 0 && threads > UINT64_MAX / d ? UINT64_MAX : threads * d;
      } else {
        threads = kv.gfx->maxFlatWorkgroupSize;
      }
      kv.workgroupSize = threads;
      if (threads > kv.gfx->maxFlatWorkgroupSize)
        kv.warning = "the workgroup size " + std::to_string(threads) +
                     " exceeds the kernel's max flat workgroup size " +
                     std::to_string(kv.gfx->maxFlatWorkgroupSize);
      kv.ldsBytes =
          std::max<uint64_t>(kv.gfx->ldsBytes, kv.kernel->lds_bytes());
      if (view.gfxTarget) {
        kv.occupancy = computeOccupancy(
            *view.gfxTarget, unsigned(kv.gfx->wavefrontSize), kv.gfx->vgprs,
            kv.gfx->sgprs, kv.ldsBytes, kv.workgroupSize);
      } else {
        kv.occupancy.note = "occupancy is not modeled for " + view.target +
                            " (modeled: " + kiln::gfx::knownTargetNames() + ")";
      }
      view.kernels.push_back(std::move(kv));
    }
    views.push_back(std::move(view));
  }
  return views;
}

//===----------------------------------------------------------------------===//
// Text output
//===----------------------------------------------------------------------===//

const char *orNone(const char *s) { return *s ? s : "(none)"; }

const char *bindingKind(fb::BindingKind kind) {
  return kind == fb::BindingKind::Constant ? "constant" : "arena";
}

std::string bindingText(const fb::Binding *b) {
  return std::string(bindingKind(b->kind())) + " offset " +
         std::to_string(b->offset()) + " size " + std::to_string(b->size());
}

std::string workgroupSizeText(const fb::Kernel *kernel) {
  auto *size = kernel->workgroup_size();
  if (!size || size->size() == 0)
    return "none";
  std::string s = "[";
  for (size_t i = 0; i < size->size(); ++i)
    s += (i ? ", " : "") + std::to_string(size->Get(i));
  return s + "]";
}

std::string targetDescription(const GfxTarget &t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t.family << ", wave" << t.waveSize << "; per SIMD lane " << t.vgprFile
     << " VGPRs in granules of " << t.vgprGranule << ", at most "
     << t.maxWavesPerSimd << " waves per SIMD; " << t.ldsPerBlock / 1024
     << " KiB LDS per " << t.ldsBlock << " (" << t.simdsPerBlock
     << " SIMDs) in " << t.ldsGranule << "-byte granules";
  if (t.provisional)
    os << "; provisional";
  return s;
}

void printOccupancyText(const Occupancy &o, bool provisional) {
  outs() << "    occupancy: ";
  if (!o.known) {
    outs() << "unknown (" << o.note << ")\n";
    return;
  }
  outs() << o.wavesPerSimd << " waves/SIMD, ";
  if (o.limitedBy == "-")
    outs() << "the maximum";
  else
    outs() << "limited by " << o.limitedBy;
  outs() << " (vgprs " << o.byVgprs << ", sgprs " << o.bySgprs << ", lds "
         << o.byLds << ", workgroups " << o.byWorkgroups << ")";
  if (provisional)
    outs() << " [provisional]";
  outs() << "\n";
  if (!o.note.empty())
    outs() << "    note: " << o.note << "\n";
}

/// One kernel on one target: its table entry and, for gfx, its resources.
void printKernelText(const ObjectView &view, const KernelView &kv,
                     bool withTarget) {
  outs() << "  ";
  if (withTarget)
    outs() << view.target << ": ";
  else
    outs() << "kernel " << kv.index << " " << str(kv.kernel->name()) << ": ";
  outs() << "symbol " << str(kv.kernel->symbol()) << ", "
         << kv.kernel->workgroup_count() << " workgroups";
  // Emulated gfx kernels (emu:<gfx>) run lanes of the manifest's workgroup
  // size with its LDS bytes; they have no gfx register metadata.
  if (!kv.gfx && kv.kernel->workgroup_size() && kv.kernel->workgroup_size()->size() &&
      kv.kernel->workgroup_size()->Get(0) > 1)
    outs() << " of " << kv.kernel->workgroup_size()->Get(0) << " lanes, "
           << kv.kernel->lds_bytes() << " LDS bytes";
  outs() << "\n";
  if (!kv.gfx)
    return;
  const GfxKernelInfo &g = *kv.gfx;
  outs() << "    vgprs: " << g.vgprs;
  if (view.gfxTarget && view.gfxTarget->agprsInVgprs)
    outs() << " (AGPRs included: they share the register file)";
  outs() << "\n"
         << "    agprs: " << g.agprs << "\n"
         << "    sgprs: " << g.sgprs << "\n"
         << "    lds bytes: " << g.ldsBytes << " (manifest "
         << kv.kernel->lds_bytes() << ")\n"
         << "    scratch bytes: " << g.scratchBytes << "\n"
         << "    vgpr spills: " << g.vgprSpills << "\n"
         << "    sgpr spills: " << g.sgprSpills << "\n"
         << "    wavefront size: " << g.wavefrontSize << "\n"
         << "    workgroup size: " << kv.workgroupSize << " (manifest "
         << workgroupSizeText(kv.kernel) << ", max flat "
         << g.maxFlatWorkgroupSize << ")\n";
  if (!kv.warning.empty())
    outs() << "    warning: " << kv.warning << "\n";
  printOccupancyText(kv.occupancy,
                     view.gfxTarget && view.gfxTarget->provisional);
}

void printLegend() {
  outs() << R"(
occupancy: waves per SIMD = the least of what each resource allows:
  vgprs       min(max waves, VGPR file / roundup(vgprs, granule)); on CDNA3/4
              vgprs counts VGPRs and AGPRs, which share the file
  sgprs       gfx9 only: 10, 9, 8, 7 waves at <= 80, 88, 100, more SGPRs
  lds         W = LDS per CU (or WGP) / roundup(lds bytes, LDS granule)
  workgroups  W = wave slots / waves per workgroup, at most 16 per CU (32 per
              WGP); a one-wave workgroup needs only its wave slot
  lds and workgroups allow ceil(W * waves per workgroup / SIMDs) waves, at
  least 1. lds bytes are the larger of the code object's group segment and
  the manifest's lds_bytes; the workgroup size is the manifest's (the
  kernel's max flat size when it has none). This is LLVM 22's occupancy
  estimate plus LDS allocation granules; [provisional] targets (gfx1250) use
  LLVM's model only, with no public ISA guide to confirm it.
)";
}

void printSummaryText(const rt::Artifact &artifact,
                      const std::vector<ObjectView> &views,
                      const Options &options) {
  const fb::Manifest &m = artifact.manifest();
  outs() << "artifact: " << artifact.name()
         << "\n"
         // The reader accepts exactly this version.
         << "format version: " << artifact::format::kVersion << "\n"
         << "producer: " << orNone(str(m.producer())) << "\n"
         << "options: " << orNone(str(m.options())) << "\n"
         << "model: " << orNone(str(m.model())) << "\n"
         << "constants: " << artifact.constantsSize() << " bytes\n";

  outs() << "\ntargets:\n";
  for (const ObjectView &v : views)
    outs() << "  " << v.target << ": triple " << str(v.object->triple())
           << ", cpu " << orNone(str(v.object->cpu())) << ", features "
           << orNone(str(v.object->features())) << ", format "
           << orNone(str(v.object->format())) << ", " << v.bytes.size()
           << " bytes, " << v.kernels.size() << " kernels\n";
  if (views.empty())
    outs() << "  (none)\n";

  auto printTensors = [](const char *what,
                         const std::vector<rt::TensorInfo> &tensors) {
    outs() << what << ":\n";
    for (const rt::TensorInfo &t : tensors) {
      outs() << "  " << t.name << ": " << kiln_dtype_name(t.dtype) << " "
             << support::shapeString(t.shape);
      if (t.extentAxis >= 0)
        outs() << " (axis " << t.extentAxis << " at most "
               << t.shape[t.extentAxis] << ", its size decided at run time)";
      outs() << "\n";
    }
    if (tensors.empty())
      outs() << "  (none)\n";
  };
  outs() << "\n";
  printTensors("inputs", artifact.inputs());
  for (const auto &[name, value] : artifact.pinnedInputs())
    outs() << "  pinned input " << name << " = " << value << " (folded at compile time)\n";
  printTensors("outputs", artifact.outputs());

  auto *programs = m.programs();
  for (size_t p = 0; p < programs->size(); ++p) {
    const fb::Program *program = programs->Get(p);
    auto *dispatches = program->dispatches();
    size_t count = dispatches ? dispatches->size() : 0;
    outs() << "\nprogram " << str(program->name()) << ": arena "
           << program->arena_size() << " bytes (peak of the memory plan), "
           << count << " dispatches\n";
    auto printInterface = [&](const char *what, auto *bindings,
                              const std::vector<rt::TensorInfo> &tensors) {
      for (size_t i = 0; bindings && i < bindings->size(); ++i)
        outs() << "  " << what << " " << tensors[i].name << ": "
               << bindingText(bindings->Get(i)) << "\n";
    };
    printInterface("input", program->inputs(), artifact.inputs());
    printInterface("output", program->outputs(), artifact.outputs());
    if (auto *extents = program->extents())
      for (const fb::OutputExtent *extent : *extents)
        outs() << "  extent of " << artifact.outputs()[extent->output()].name
               << ": " << bindingText(extent->extent()) << "\n";
    for (size_t d = 0; d < count; ++d) {
      const fb::Dispatch *dispatch = dispatches->Get(d);
      uint32_t k = dispatch->kernel();
      const fb::Kernel *kernel =
          views.empty() ? nullptr : views[0].kernels[k].kernel;
      outs() << "  dispatch " << d << ": kernel " << k << " "
             << (kernel ? str(kernel->name()) : "?") << ", "
             << (kernel ? kernel->workgroup_count() : 0) << " workgroups, "
             << dispatch->flops() << " flops, " << dispatch->bytes()
             << " bytes, ops " << orNone(str(dispatch->ops())) << "\n";
      auto *bindings = dispatch->bindings();
      for (size_t b = 0; bindings && b < bindings->size(); ++b)
        outs() << "    binding " << b << ": " << bindingText(bindings->Get(b))
               << "\n";
    }
    if (auto *commands = program->commands()) {
      outs() << "  commands (" << commands->size() << ", "
             << program->counters() << " loop counters):\n";
      for (size_t i = 0; i < commands->size(); ++i) {
        const fb::Command *c = commands->Get(i);
        outs() << "    " << i << ": ";
        switch (c->op()) {
        case fb::CommandOp::Dispatch:
          outs() << "dispatch " << c->index();
          break;
        case fb::CommandOp::Copy:
          outs() << "copy " << bindingText(&c->src()) << " to "
                 << bindingText(&c->dst());
          break;
        case fb::CommandOp::CopyToRow:
          outs() << "copy " << bindingText(&c->src()) << " to row counter"
                 << c->counter() << " of " << bindingText(&c->dst());
          break;
        case fb::CommandOp::CopyFromRow:
          outs() << "copy row counter" << c->counter() << " of "
                 << bindingText(&c->src()) << " to " << bindingText(&c->dst());
          break;
        case fb::CommandOp::JumpIfFalse:
          outs() << "if not " << bindingText(&c->src()) << " go to "
                 << c->index();
          break;
        case fb::CommandOp::Jump:
          outs() << "go to " << c->index();
          break;
        case fb::CommandOp::CounterReset:
          outs() << "counter" << c->counter() << " = 0";
          break;
        case fb::CommandOp::CounterStore:
          outs() << "store counter" << c->counter() << " to "
                 << bindingText(&c->dst());
          break;
        case fb::CommandOp::CounterIncrement:
          outs() << "counter" << c->counter() << " += 1";
          break;
        case fb::CommandOp::JumpIfCounterAtLeast:
          outs() << "if counter" << c->counter() << " >= "
                 << bindingText(&c->src()) << " go to " << c->index();
          break;
        }
        outs() << "\n";
      }
    }
  }

  bool anyGfx = false;
  for (const ObjectView &v : views) {
    if (!options.target.empty() && v.target != options.target)
      continue;
    outs() << "\nkernels for " << v.target;
    if (v.gfxTarget)
      outs() << " (" << targetDescription(*v.gfxTarget) << ")";
    outs() << ":\n";
    for (const KernelView &kv : v.kernels)
      printKernelText(v, kv, /*withTarget=*/false);
    anyGfx |= v.gfx;
  }
  if (anyGfx)
    printLegend();
}

//===----------------------------------------------------------------------===//
// JSON output
//===----------------------------------------------------------------------===//

void jsonBinding(llvm::json::OStream &j, const fb::Binding *b) {
  j.object([&] {
    j.attribute("kind", bindingKind(b->kind()));
    j.attribute("offset", uint64_t(b->offset()));
    j.attribute("size", uint64_t(b->size()));
  });
}

void jsonKernel(llvm::json::OStream &j, const ObjectView &view,
                const KernelView &kv) {
  j.object([&] {
    j.attribute("target", view.target);
    j.attribute("index", int64_t(kv.index));
    j.attribute("name", str(kv.kernel->name()));
    j.attribute("symbol", str(kv.kernel->symbol()));
    j.attribute("workgroups", uint64_t(kv.kernel->workgroup_count()));
    j.attributeArray("manifest_workgroup_size", [&] {
      if (auto *size = kv.kernel->workgroup_size())
        for (uint32_t d : *size)
          j.value(int64_t(d));
    });
    if (!kv.gfx)
      return;
    const GfxKernelInfo &g = *kv.gfx;
    j.attribute("vgprs", g.vgprs);
    j.attribute("agprs", g.agprs);
    j.attribute("sgprs", g.sgprs);
    j.attribute("lds_bytes", g.ldsBytes);
    j.attribute("manifest_lds_bytes", int64_t(kv.kernel->lds_bytes()));
    j.attribute("scratch_bytes", g.scratchBytes);
    j.attribute("vgpr_spills", g.vgprSpills);
    j.attribute("sgpr_spills", g.sgprSpills);
    j.attribute("wavefront_size", g.wavefrontSize);
    j.attribute("max_flat_workgroup_size", g.maxFlatWorkgroupSize);
    j.attribute("workgroup_size", kv.workgroupSize);
    if (!kv.warning.empty())
      j.attribute("warning", kv.warning);
    const Occupancy &o = kv.occupancy;
    j.attributeObject("occupancy", [&] {
      if (!o.known) {
        j.attribute("waves_per_simd", nullptr);
        j.attribute("note", o.note);
        return;
      }
      j.attribute("waves_per_simd", int64_t(o.wavesPerSimd));
      j.attribute("limited_by", o.limitedBy == "-" ? llvm::json::Value(nullptr)
                                                   : o.limitedBy);
      j.attribute("vgprs", int64_t(o.byVgprs));
      j.attribute("sgprs", int64_t(o.bySgprs));
      j.attribute("lds", int64_t(o.byLds));
      j.attribute("workgroups", int64_t(o.byWorkgroups));
      j.attribute("waves_per_workgroup", int64_t(o.wavesPerWorkgroup));
      j.attribute("provisional", view.gfxTarget && view.gfxTarget->provisional);
      if (!o.note.empty())
        j.attribute("note", o.note);
    });
  });
}

void jsonTarget(llvm::json::OStream &j, const ObjectView &v) {
  j.attribute("target", v.target);
  j.attribute("triple", str(v.object->triple()));
  j.attribute("cpu", str(v.object->cpu()));
  j.attribute("features", str(v.object->features()));
  j.attribute("format", str(v.object->format()));
  j.attribute("size", uint64_t(v.bytes.size()));
  if (v.gfx)
    j.attribute("target_id", v.metadataTarget); // amdhsa.target
  if (const GfxTarget *t = v.gfxTarget)
    j.attributeObject("limits", [&] {
      j.attribute("family", t->family);
      j.attribute("wavefront_size", int64_t(t->waveSize));
      j.attribute("max_waves_per_simd", int64_t(t->maxWavesPerSimd));
      j.attribute("vgprs_per_simd_lane", int64_t(t->vgprFile));
      j.attribute("vgpr_granule", int64_t(t->vgprGranule));
      j.attribute("lds_block", t->ldsBlock);
      j.attribute("simds_per_lds_block", int64_t(t->simdsPerBlock));
      j.attribute("lds_bytes_per_block", t->ldsPerBlock);
      j.attribute("lds_bytes_per_workgroup", t->ldsPerWorkgroup);
      j.attribute("lds_granule", t->ldsGranule);
      j.attribute("workgroups_per_block", int64_t(t->workgroupsPerBlock));
      j.attribute("provisional", t->provisional);
    });
}

void printSummaryJson(const rt::Artifact &artifact,
                      const std::vector<ObjectView> &views,
                      const Options &options) {
  const fb::Manifest &m = artifact.manifest();
  llvm::json::OStream j(outs(), 2);
  j.object([&] {
    j.attribute("artifact", artifact.name());
    j.attribute("format_version", int64_t(artifact::format::kVersion));
    j.attribute("producer", str(m.producer()));
    j.attribute("options", str(m.options()));
    j.attribute("model", str(m.model()));
    j.attribute("constants_bytes", artifact.constantsSize());
    j.attributeArray("targets", [&] {
      for (const ObjectView &v : views) {
        if (!options.target.empty() && v.target != options.target)
          continue;
        j.object([&] {
          jsonTarget(j, v);
          j.attributeArray("kernels", [&] {
            for (const KernelView &kv : v.kernels)
              jsonKernel(j, v, kv);
          });
        });
      }
    });
    auto tensors = [&](const char *what,
                       const std::vector<rt::TensorInfo> &list) {
      j.attributeArray(what, [&] {
        for (const rt::TensorInfo &t : list)
          j.object([&] {
            j.attribute("name", t.name);
            j.attribute("dtype", kiln_dtype_name(t.dtype));
            j.attributeArray("shape", [&] {
              for (int64_t d : t.shape)
                j.value(d);
            });
            if (t.extentAxis >= 0)
              j.attribute("extent_axis", int64_t(t.extentAxis));
          });
      });
    };
    tensors("inputs", artifact.inputs());
    j.attributeObject("pinned_inputs", [&] {
      for (const auto &[name, value] : artifact.pinnedInputs())
        j.attribute(name, value);
    });
    tensors("outputs", artifact.outputs());
    j.attributeArray("programs", [&] {
      auto *programs = m.programs();
      for (size_t p = 0; p < programs->size(); ++p) {
        const fb::Program *program = programs->Get(p);
        j.object([&] {
          j.attribute("name", str(program->name()));
          j.attribute("arena_size", uint64_t(program->arena_size()));
          auto interface = [&](const char *what, auto *bindings,
                               const std::vector<rt::TensorInfo> &list) {
            j.attributeArray(what, [&] {
              for (size_t i = 0; bindings && i < bindings->size(); ++i) {
                const fb::Binding *b = bindings->Get(i);
                j.object([&] {
                  j.attribute("name", list[i].name);
                  j.attribute("kind", bindingKind(b->kind()));
                  j.attribute("offset", uint64_t(b->offset()));
                  j.attribute("size", uint64_t(b->size()));
                });
              }
            });
          };
          interface("inputs", program->inputs(), artifact.inputs());
          interface("outputs", program->outputs(), artifact.outputs());
          if (auto *extents = program->extents())
            j.attributeArray("extents", [&] {
              for (const fb::OutputExtent *extent : *extents)
                j.object([&] {
                  const fb::Binding *b = extent->extent();
                  j.attribute("output", artifact.outputs()[extent->output()].name);
                  j.attribute("kind", bindingKind(b->kind()));
                  j.attribute("offset", uint64_t(b->offset()));
                  j.attribute("size", uint64_t(b->size()));
                });
            });
          j.attributeArray("dispatches", [&] {
            auto *dispatches = program->dispatches();
            for (size_t d = 0; dispatches && d < dispatches->size(); ++d) {
              const fb::Dispatch *dispatch = dispatches->Get(d);
              uint32_t k = dispatch->kernel();
              const fb::Kernel *kernel =
                  views.empty() ? nullptr : views[0].kernels[k].kernel;
              j.object([&] {
                j.attribute("index", int64_t(d));
                j.attribute("kernel", int64_t(k));
                j.attribute("kernel_name", kernel ? str(kernel->name()) : "");
                j.attribute("workgroups",
                            uint64_t(kernel ? kernel->workgroup_count() : 0));
                j.attribute("flops", uint64_t(dispatch->flops()));
                j.attribute("bytes", uint64_t(dispatch->bytes()));
                j.attribute("ops", str(dispatch->ops()));
                j.attributeArray("bindings", [&] {
                  if (auto *bindings = dispatch->bindings())
                    for (const fb::Binding *b : *bindings)
                      jsonBinding(j, b);
                });
              });
            }
          });
          if (auto *commands = program->commands()) {
            j.attribute("counters", int64_t(program->counters()));
            j.attributeArray("commands", [&] {
              for (const fb::Command *c : *commands)
                j.object([&] {
                  j.attribute("op", fb::EnumNameCommandOp(c->op()));
                  j.attribute("index", int64_t(c->index()));
                  j.attribute("counter", int64_t(c->counter()));
                  j.attributeBegin("src");
                  jsonBinding(j, &c->src());
                  j.attributeEnd();
                  j.attributeBegin("dst");
                  jsonBinding(j, &c->dst());
                  j.attributeEnd();
                });
            });
          }
        });
      }
    });
  });
  outs() << "\n";
}

//===----------------------------------------------------------------------===//
// --kernel and --disassemble
//===----------------------------------------------------------------------===//

/// Index of the kernel named (or with the symbol) `name` in any code object.
size_t findKernel(const rt::Artifact &artifact,
                  const std::vector<ObjectView> &views,
                  const std::string &name) {
  for (const ObjectView &v : views)
    for (const KernelView &kv : v.kernels)
      if (name == str(kv.kernel->name()) || name == str(kv.kernel->symbol()))
        return kv.index;
  std::vector<std::string> names;
  if (!views.empty())
    for (const KernelView &kv : views[0].kernels)
      names.push_back(str(kv.kernel->name()));
  fatal(artifact.name() + ": no kernel named '" + name +
        "' (the kernels are: " + joinNames(names) + ")");
}

const ObjectView &findTarget(const rt::Artifact &artifact,
                             const std::vector<ObjectView> &views,
                             const std::string &target) {
  std::vector<std::string> targets;
  for (const ObjectView &v : views) {
    if (v.target == target)
      return v;
    targets.push_back(v.target);
  }
  fatal(artifact.name() + ": no code object for target '" + target +
        "' (the artifact has: " + joinNames(targets) + ")");
}

void printKernel(const rt::Artifact &artifact,
                 const std::vector<ObjectView> &views, const Options &options) {
  size_t index = findKernel(artifact, views, options.kernel);
  std::vector<const ObjectView *> selected;
  if (!options.target.empty())
    selected.push_back(&findTarget(artifact, views, options.target));
  else
    for (const ObjectView &v : views)
      selected.push_back(&v);
  if (options.json) {
    llvm::json::OStream j(outs(), 2);
    j.object([&] {
      j.attribute("artifact", artifact.name());
      j.attributeArray("kernels", [&] {
        for (const ObjectView *v : selected)
          jsonKernel(j, *v, v->kernels[index]);
      });
    });
    outs() << "\n";
    return;
  }
  outs() << "kernel " << index << " "
         << str(selected.front()->kernels[index].kernel->name()) << ":\n";
  bool anyGfx = false;
  for (const ObjectView *v : selected) {
    printKernelText(*v, v->kernels[index], /*withTarget=*/true);
    anyGfx |= v->gfx;
  }
  if (anyGfx)
    printLegend();
}

void printDisassembly(const rt::Artifact &artifact,
                      const std::vector<ObjectView> &views,
                      const Options &options) {
  size_t index = findKernel(artifact, views, options.kernel);
  const ObjectView &view = findTarget(artifact, views, options.target);
  const KernelView &kv = view.kernels[index];
  // A gfx kernel's code is the function its metadata names (the manifest
  // may give the kernel descriptor "name.kd" instead).
  std::string symbol = kv.gfx ? kv.gfx->name : str(kv.kernel->symbol());
  std::string where = artifact.name() + ": code object " +
                      std::to_string(view.index) + " ('" + view.target + "')";
  auto code = view.file->findFunction(symbol);
  if (!code)
    fatal(where + ": " + llvm::toString(code.takeError()));
  std::vector<Instruction> instructions;
  if (llvm::Error e = disassemble(*code, str(view.object->triple()),
                                  str(view.object->cpu()),
                                  str(view.object->features()), instructions))
    fatal(where + ": " + llvm::toString(std::move(e)));

  auto hexBytes = [](llvm::ArrayRef<uint8_t> bytes) {
    std::string s;
    for (uint8_t b : bytes) {
      if (!s.empty())
        s += ' ';
      s += llvm::hexdigit(b >> 4, true);
      s += llvm::hexdigit(b & 15, true);
    }
    return s;
  };
  if (options.json) {
    llvm::json::OStream j(outs(), 2);
    j.object([&] {
      j.attribute("artifact", artifact.name());
      j.attribute("target", view.target);
      j.attribute("cpu", str(view.object->cpu()));
      j.attribute("kernel", str(kv.kernel->name()));
      j.attribute("symbol", symbol);
      j.attribute("address", code->address);
      j.attribute("size", uint64_t(code->bytes.size()));
      j.attributeArray("instructions", [&] {
        for (const Instruction &inst : instructions)
          j.object([&] {
            j.attribute("offset", inst.offset);
            j.attribute("bytes", hexBytes(inst.bytes));
            j.attribute("text", inst.text);
          });
      });
    });
    outs() << "\n";
    return;
  }
  outs() << "; kernel " << index << " " << str(kv.kernel->name()) << " on "
         << view.target << " (cpu " << str(view.object->cpu())
         << "): " << code->bytes.size() << " bytes at "
         << llvm::format_hex(code->address, 0) << "\n"
         << symbol << ":\n";
  for (const Instruction &inst : instructions)
    outs() << "  " << llvm::format_hex_no_prefix(inst.offset, 4) << ":  "
           << llvm::left_justify(inst.text, 48) << " // "
           << hexBytes(inst.bytes) << "\n";
}

//===----------------------------------------------------------------------===//
// --perf: the static performance model
//===----------------------------------------------------------------------===//

const char *const kPerfDisclaimer =
    "estimates from kiln-inspect's static model (main loops timed by LLVM MCA or "
    "Kiln's cost table, peaks and bandwidths from the gfx target table), not "
    "measurements; see docs/performance-model.md";

/// One kernel of one gfx code object, with its main loop timed.
struct KernelPerf {
  const KernelView *kv = nullptr;
  std::optional<kiln::gfx::LoopProfile> loop;
  std::string loopError; // why the loop was not timed
};

/// One dispatch estimated on one product.
struct DispatchPerf {
  size_t index = 0;
  uint32_t kernel = 0;
  kiln::gfx::KernelEstimate estimate;
};

struct ProductPerf {
  const kiln::gfx::Product *product = nullptr;
  std::vector<DispatchPerf> dispatches;
  double seconds = 0;  // the program, every dispatch once
  bool known = true;   // every dispatch has an estimate
  std::string unknown; // the first reason one has none
  /// Seconds per bound, for the summary.
  std::map<std::string, double> byBound;
};

struct TargetPerf {
  const ObjectView *view = nullptr;
  std::vector<KernelPerf> kernels;
  std::vector<ProductPerf> products;
};

const fb::Program *findProgram(const rt::Artifact &artifact, const std::string &name) {
  auto *programs = artifact.manifest().programs();
  std::vector<std::string> names;
  for (size_t p = 0; p < programs->size(); ++p) {
    const fb::Program *program = programs->Get(p);
    if (name.empty() || name == str(program->name()))
      return program;
    names.push_back(str(program->name()));
  }
  fatal(artifact.name() + ": no program named '" + name + "' (the programs are: " +
        joinNames(names) + ")");
}

std::vector<TargetPerf> estimateProgram(const rt::Artifact &artifact,
                                        const std::vector<ObjectView> &views,
                                        const fb::Program *program, const Options &options) {
  LLVMInitializeAMDGPUTargetInfo();
  LLVMInitializeAMDGPUTargetMC();
  LLVMInitializeAMDGPUDisassembler();
  LLVMInitializeAMDGPUTargetMCA();
  std::vector<TargetPerf> result;
  bool chipFound = options.chip.empty();
  std::vector<std::string> chips;
  for (const ObjectView &v : views) {
    if (!v.gfx || !v.gfxTarget)
      continue;
    if (!options.target.empty() && v.target != options.target)
      continue;
    if (!options.chip.empty()) {
      bool has = false;
      for (const kiln::gfx::Product &product : v.gfxTarget->products) {
        chips.push_back(product.name);
        has |= StringRef(options.chip).equals_insensitive(product.name);
      }
      if (!has)
        continue;
    }
    TargetPerf tp;
    tp.view = &v;
    auto tools = MCTools::create(str(v.object->triple()), str(v.object->cpu()),
                                 str(v.object->features()));
    for (const KernelView &kv : v.kernels) {
      KernelPerf k;
      k.kv = &kv;
      if (!tools) {
        k.loopError = llvm::toString(tools.takeError());
      } else if (kv.gfx) {
        auto code = v.file->findFunction(kv.gfx->name);
        if (!code) {
          k.loopError = llvm::toString(code.takeError());
        } else {
          auto loop = analyzeMainLoop(**tools, *code, *v.gfxTarget,
                                      unsigned(kv.gfx->wavefrontSize));
          if (loop)
            k.loop = std::move(*loop);
          else
            k.loopError = llvm::toString(loop.takeError());
        }
      }
      tp.kernels.push_back(std::move(k));
    }
    for (const kiln::gfx::Product &product : v.gfxTarget->products) {
      if (!options.chip.empty() && !StringRef(options.chip).equals_insensitive(product.name))
        continue;
      chipFound = true;
      ProductPerf pp;
      pp.product = &product;
      auto *dispatches = program->dispatches();
      for (size_t d = 0; dispatches && d < dispatches->size(); ++d) {
        const fb::Dispatch *dispatch = dispatches->Get(d);
        DispatchPerf dp;
        dp.index = d;
        dp.kernel = dispatch->kernel();
        const KernelPerf &k = tp.kernels[dp.kernel];
        kiln::gfx::KernelWork work;
        work.flops = dispatch->flops();
        work.bytes = dispatch->bytes();
        work.workgroups = k.kv->kernel->workgroup_count();
        uint64_t wave = k.kv->gfx ? std::max<uint64_t>(1, k.kv->gfx->wavefrontSize) : 64;
        work.wavesPerWorkgroup = (k.kv->workgroupSize + wave - 1) / wave;
        if (k.kv->occupancy.known)
          work.wavesPerSimd = k.kv->occupancy.wavesPerSimd;
        work.loop = k.loop;
        dp.estimate = kiln::gfx::estimateKernel(*v.gfxTarget, product, work);
        if (!k.loop && dp.estimate.known && !k.loopError.empty())
          dp.estimate.note = "main loop not timed: " + k.loopError;
        if (dp.estimate.known) {
          pp.seconds += dp.estimate.seconds;
          pp.byBound[kiln::gfx::boundName(dp.estimate.bound)] += dp.estimate.seconds;
        } else if (pp.known) {
          pp.known = false;
          pp.unknown = dp.estimate.note;
        }
        pp.dispatches.push_back(std::move(dp));
      }
      tp.products.push_back(std::move(pp));
    }
    result.push_back(std::move(tp));
  }
  if (!chipFound)
    fatal("no chip named '" + options.chip + "' among the artifact's gfx targets (chips: " +
          joinNames(chips) + ")");
  if (result.empty())
    fatal(artifact.name() + ": no gfx code object" +
          (options.target.empty() ? std::string() : " for target '" + options.target + "'") +
          " to estimate (--perf estimates gfx kernels on their chips)");
  return result;
}

std::string fixed(double v, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, v);
  return buffer;
}

/// Seconds as "12.3 us" or "4.56 ms".
std::string timeText(double seconds) {
  if (seconds >= 1e-1)
    return fixed(seconds, 3) + " s";
  if (seconds >= 1e-3)
    return fixed(seconds * 1e3, 3) + " ms";
  return fixed(seconds * 1e6, 1) + " us";
}

std::string productText(const kiln::gfx::Product &p) {
  std::string s = p.name;
  auto add = [&](const std::string &part) { s += (s.size() == strlen(p.name) ? ": " : ", ") + part; };
  if (p.computeUnits)
    add(std::to_string(*p.computeUnits) + " CUs");
  if (p.peakClockMHz) {
    std::string clock = std::to_string(*p.peakClockMHz) + " MHz peak";
    if (p.sustainedMatrixClockMHz)
      clock += " (" + std::to_string(*p.sustainedMatrixClockMHz) + " MHz under matrix load)";
    add(clock);
  }
  if (p.f16Tflops)
    add(fixed(*p.f16Tflops, 1) + " TFLOP/s f16");
  if (p.int8Tops)
    add(fixed(*p.int8Tops, 1) + " TOPS int8");
  if (p.f32Tflops)
    add(fixed(*p.f32Tflops, 1) + " TFLOP/s fp32 vector");
  if (p.memoryBandwidthGBs)
    add(fixed(*p.memoryBandwidthGBs, 0) + " GB/s");
  if (p.boardPowerW)
    add(std::to_string(*p.boardPowerW) + " W");
  return s;
}

std::string loopText(const KernelPerf &k) {
  if (!k.loop)
    return k.loopError.empty() ? "not timed" : "not timed: " + k.loopError;
  const kiln::gfx::LoopProfile &l = *k.loop;
  std::string s = l.loop ? "main loop " : "no loop, whole kernel ";
  s += std::to_string(l.instructions) + " instructions, " + std::to_string(l.matrixInstructions) +
       " matrix (" + fixed(l.instructions ? 100.0 * l.matrixInstructions / l.instructions : 0, 0) +
       "%)";
  if (l.conditionalBranches)
    s += ", " + std::to_string(l.conditionalBranches) + " conditional branches";
  s += "; " + fixed(l.cycles, 1) + " cycles per iteration";
  double useful = l.matrixInput ? l.matrixCycles : l.vectorFlopCycles;
  if (useful > 0)
    s += ", " + fixed(l.cycles / useful, 2) + "x the " +
         (l.matrixInput ? std::string("matrix-pipe") : std::string("vector-ALU")) + " bound (" +
         fixed(useful, 1) + ")";
  if (!l.busiest.empty())
    s += "; busiest: " + l.busiest + " " + fixed(l.busiestCycles, 1);
  return s;
}

void printPerfText(const rt::Artifact &artifact, const fb::Program *program,
                   const std::vector<TargetPerf> &targets) {
  outs() << "performance estimate: " << artifact.name() << ", program " << str(program->name())
         << "\n(" << kPerfDisclaimer << ")\n";
  bool loops = false;
  if (auto *commands = program->commands())
    for (const fb::Command *c : *commands)
      loops |= c->op() == fb::CommandOp::Jump || c->op() == fb::CommandOp::JumpIfFalse ||
               c->op() == fb::CommandOp::JumpIfCounterAtLeast;
  if (loops)
    outs() << "note: the program has control flow; each dispatch is counted once\n";
  for (const TargetPerf &tp : targets) {
    const ObjectView &v = *tp.view;
    outs() << "\n" << v.target << " (" << v.gfxTarget->description << ")";
    if (v.gfxTarget->provisional)
      outs() << " [provisional]";
    outs() << "\n  kernels:\n";
    for (const KernelPerf &k : tp.kernels) {
      outs() << "    " << str(k.kv->kernel->name()) << ": " << loopText(k);
      if (k.kv->occupancy.known)
        outs() << "; " << k.kv->occupancy.wavesPerSimd << " waves/SIMD (" << k.kv->gfx->vgprs
               << " VGPRs, " << k.kv->ldsBytes << " LDS bytes)";
      outs() << "\n";
      if (k.loop)
        outs() << "      timed by " << k.loop->model << "\n";
    }
    for (const ProductPerf &pp : tp.products) {
      outs() << "  on " << productText(*pp.product) << ":\n";
      outs() << llvm::format("    %-8s %-34s %10s %10s %11s  %-18s %7s\n", "dispatch", "kernel",
                             "GFLOP", "MB", "time", "bound", "peak%");
      for (const DispatchPerf &dp : pp.dispatches) {
        const fb::Dispatch *dispatch = program->dispatches()->Get(dp.index);
        std::string name = str(tp.kernels[dp.kernel].kv->kernel->name());
        const kiln::gfx::KernelEstimate &e = dp.estimate;
        if (!e.known) {
          outs() << llvm::format("    %-8zu %-34s %10.3f %10.3f %11s  %s\n", dp.index,
                                 name.c_str(), dispatch->flops() / 1e9, dispatch->bytes() / 1e6,
                                 "unknown", e.note.c_str());
          continue;
        }
        outs() << llvm::format("    %-8zu %-34s %10.3f %10.3f %11s  %-18s %6.1f%%\n", dp.index,
                               name.c_str(), dispatch->flops() / 1e9, dispatch->bytes() / 1e6,
                               timeText(e.seconds).c_str(), kiln::gfx::boundName(e.bound),
                               100 * e.peakFraction);
      }
      if (!pp.known) {
        outs() << "    program: no estimate (" << pp.unknown << ")\n";
        continue;
      }
      outs() << "    program: " << timeText(pp.seconds) << " per run, "
             << fixed(1 / pp.seconds, 1) << " runs/s";
      if (pp.product->boardPowerW)
        outs() << ", " << fixed(1 / pp.seconds / double(*pp.product->boardPowerW), 3)
               << " runs/s per W of board power (" << *pp.product->boardPowerW << " W)";
      outs() << "\n    time by bound:";
      std::vector<std::pair<double, std::string>> shares;
      for (auto &[bound, seconds] : pp.byBound)
        shares.push_back({seconds, bound});
      std::sort(shares.rbegin(), shares.rend());
      for (auto &[seconds, bound] : shares)
        outs() << " " << bound << " " << fixed(100 * seconds / pp.seconds, 1) << "%";
      outs() << "\n";
    }
  }
  outs() << "\nbounds: matrix pipe / vector ALU = the loop issues its arithmetic as fast as the "
            "unit takes it;\n  instruction issue = an issue port (LDS, memory or scalar "
            "instructions) is busier;\n  LDS bandwidth = the CU's LDS bytes per clock; occupancy = "
            "one wave's latency, too few\n  waves per SIMD to hide it; grid size = fewer waves "
            "than half the chip's SIMDs;\n  memory bandwidth = the dispatch's bytes at the "
            "vendor's bandwidth; memory latency = too few\n  bytes in flight (resident waves x "
            "one loop iteration's loads) to cover an assumed "
         << fixed(kiln::gfx::kMemoryLatencySeconds * 1e9, 0)
         << " ns\n  latency at that bandwidth; launch overhead = the "
         << fixed(kiln::gfx::kLaunchSeconds * 1e6, 0)
         << " us the model charges per dispatch. peak% = flops / time / the chip's peak\n"
            "  for the kernel's instructions at its peak clock.\n";
}

void jsonLoop(llvm::json::OStream &j, const kiln::gfx::LoopProfile &l) {
  j.attribute("model", l.model);
  j.attribute("loop", l.loop);
  j.attribute("instructions", l.instructions);
  j.attribute("matrix_instructions", l.matrixInstructions);
  j.attribute("matrix_share", l.instructions ? double(l.matrixInstructions) / l.instructions : 0.0);
  j.attribute("matrix_instruction", l.matrixMnemonic);
  j.attribute("conditional_branches", l.conditionalBranches);
  j.attribute("lds_instructions", l.ldsInstructions);
  j.attribute("memory_instructions", l.memoryInstructions);
  j.attribute("lds_bytes_per_iteration", l.ldsBytes);
  j.attribute("global_load_bytes_per_iteration", l.globalLoadBytes);
  j.attribute("cycles_per_iteration", l.cycles);
  j.attribute("matrix_cycles", l.matrixCycles);
  j.attribute("vector_flop_cycles", l.vectorFlopCycles);
  double useful = l.matrixInput ? l.matrixCycles : l.vectorFlopCycles;
  if (useful > 0)
    j.attribute("cycles_over_bound", l.cycles / useful);
  j.attribute("busiest", l.busiest);
  j.attribute("busiest_cycles", l.busiestCycles);
  j.attribute("clocks_per_cycle", l.clocksPerCycle);
}

void printPerfJson(const rt::Artifact &artifact, const fb::Program *program,
                   const std::vector<TargetPerf> &targets) {
  llvm::json::OStream j(outs(), 2);
  auto optional = [&](const char *key, auto value) {
    if (value)
      j.attribute(key, *value);
    else
      j.attribute(key, nullptr);
  };
  j.object([&] {
    j.attribute("artifact", artifact.name());
    j.attribute("program", str(program->name()));
    j.attribute("estimate", kPerfDisclaimer);
    j.attribute("launch_seconds_per_dispatch", kiln::gfx::kLaunchSeconds);
    j.attributeArray("targets", [&] {
      for (const TargetPerf &tp : targets)
        j.object([&] {
          j.attribute("target", tp.view->target);
          j.attribute("provisional", tp.view->gfxTarget->provisional);
          j.attribute("simds_per_cu", tp.view->gfxTarget->perf.simdsPerCU);
          j.attribute("lds_bytes_per_clock_per_cu", tp.view->gfxTarget->perf.ldsBytesPerClock);
          j.attributeArray("kernels", [&] {
            for (const KernelPerf &k : tp.kernels)
              j.object([&] {
                j.attribute("index", int64_t(k.kv->index));
                j.attribute("name", str(k.kv->kernel->name()));
                if (k.kv->occupancy.known)
                  j.attribute("waves_per_simd", int64_t(k.kv->occupancy.wavesPerSimd));
                if (k.kv->gfx) {
                  j.attribute("vgprs", k.kv->gfx->vgprs);
                  j.attribute("lds_bytes", k.kv->ldsBytes);
                  j.attribute("spills", k.kv->gfx->vgprSpills + k.kv->gfx->sgprSpills);
                }
                if (k.loop)
                  j.attributeObject("loop", [&] { jsonLoop(j, *k.loop); });
                else
                  j.attribute("loop_error", k.loopError);
              });
          });
          j.attributeArray("chips", [&] {
            for (const ProductPerf &pp : tp.products)
              j.object([&] {
                const kiln::gfx::Product &p = *pp.product;
                j.attribute("name", p.name);
                optional("compute_units", p.computeUnits);
                optional("peak_clock_mhz", p.peakClockMHz);
                optional("sustained_matrix_clock_mhz", p.sustainedMatrixClockMHz);
                optional("f16_tflops", p.f16Tflops);
                optional("int8_tops", p.int8Tops);
                optional("f32_vector_tflops", p.f32Tflops);
                optional("memory_bandwidth_gbs", p.memoryBandwidthGBs);
                optional("board_power_w", p.boardPowerW);
                j.attributeArray("dispatches", [&] {
                  for (const DispatchPerf &dp : pp.dispatches)
                    j.object([&] {
                      const kiln::gfx::KernelEstimate &e = dp.estimate;
                      const fb::Dispatch *dispatch = program->dispatches()->Get(dp.index);
                      j.attribute("index", int64_t(dp.index));
                      j.attribute("kernel", str(tp.kernels[dp.kernel].kv->kernel->name()));
                      j.attribute("flops", uint64_t(dispatch->flops()));
                      j.attribute("bytes", uint64_t(dispatch->bytes()));
                      j.attribute("known", e.known);
                      if (!e.note.empty())
                        j.attribute("note", e.note);
                      if (!e.known)
                        return;
                      j.attribute("seconds", e.seconds);
                      j.attribute("bound", kiln::gfx::boundName(e.bound));
                      j.attribute("compute_seconds", e.computeSeconds);
                      j.attribute("memory_seconds", e.memorySeconds);
                      j.attribute("memory_bandwidth_gbs", e.memoryBandwidth / 1e9);
                      j.attribute("launch_seconds", e.launchSeconds);
                      j.attribute("clock_mhz", e.clockMHz);
                      j.attribute("loop_efficiency", e.loopEfficiency);
                      j.attribute("waves_per_simd", e.wavesPerSimd);
                      j.attribute("grid_fill", e.gridFill);
                      j.attribute("peak_ops", e.peak);
                      j.attribute("achieved_ops", e.achieved);
                      j.attribute("peak_fraction", e.peakFraction);
                    });
                });
                j.attribute("known", pp.known);
                if (pp.known) {
                  j.attribute("seconds", pp.seconds);
                  j.attribute("runs_per_second", 1 / pp.seconds);
                  if (p.boardPowerW)
                    j.attribute("runs_per_second_per_watt",
                                1 / pp.seconds / double(*p.boardPowerW));
                  j.attributeObject("seconds_by_bound", [&] {
                    for (auto &[bound, seconds] : pp.byBound)
                      j.attribute(bound, seconds);
                  });
                } else {
                  j.attribute("unknown", pp.unknown);
                }
              });
          });
        });
    });
  });
  outs() << "\n";
}

void writeRoofline(const rt::Artifact &artifact, const fb::Program *program,
                   const std::vector<TargetPerf> &targets, const std::string &path) {
  std::vector<RooflineChip> chips;
  std::vector<RooflinePoint> points;
  for (const TargetPerf &tp : targets)
    for (const ProductPerf &pp : tp.products) {
      const kiln::gfx::Product &p = *pp.product;
      RooflineChip chip;
      chip.name = std::string(p.name) + " (" + tp.view->target + ")";
      chip.bandwidth = p.memoryBandwidthGBs ? *p.memoryBandwidthGBs * 1e9 : 0;
      // The highest roof: the chip's best matrix rate, else fp32 vector.
      for (auto input : {kiln::gfx::MatrixInput::I8, kiln::gfx::MatrixInput::F16})
        if (auto peak = p.matrixPeak(input); peak && *peak > chip.peak) {
          chip.peak = *peak;
          chip.peakLabel = input == kiln::gfx::MatrixInput::I8 ? "int8 " : "f16 ";
        }
      if (chip.peak == 0 && p.f32Tflops) {
        chip.peak = *p.f32Tflops * 1e12;
        chip.peakLabel = "fp32 ";
      }
      chip.peakLabel += fixed(chip.peak / 1e12, 1) + " T/s, " +
                        fixed(chip.bandwidth / 1e9, 0) + " GB/s";
      size_t index = chips.size();
      chips.push_back(chip);
      for (const DispatchPerf &dp : pp.dispatches) {
        const fb::Dispatch *dispatch = program->dispatches()->Get(dp.index);
        if (!dp.estimate.known || dispatch->bytes() == 0 || dispatch->flops() == 0)
          continue;
        RooflinePoint point;
        point.chip = index;
        point.label = std::string(p.name) + ": dispatch " + std::to_string(dp.index) + " " +
                      str(tp.kernels[dp.kernel].kv->kernel->name()) + ", " +
                      kiln::gfx::boundName(dp.estimate.bound);
        point.intensity = double(dispatch->flops()) / double(dispatch->bytes());
        point.rate = dp.estimate.achieved;
        points.push_back(point);
      }
    }
  std::string svg = renderRoofline(
      "Roofline (estimated): " + artifact.name() + ", program " + str(program->name()), chips,
      points);
  if (llvm::Error e = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
        os << svg;
        return llvm::Error::success();
      }))
    fatal("cannot write the roofline to '" + path + "': " + llvm::toString(std::move(e)));
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseArguments(argc, argv);

  std::unique_ptr<rt::Artifact> artifact;
  if (kiln_status_t status = rt::Artifact::open(options.model, artifact)) {
    std::string message = kiln_status_message(status);
    kiln_status_free(status);
    fatal(message);
  }
  std::vector<ObjectView> views = loadCodeObjects(*artifact);
  if (!options.target.empty())
    findTarget(*artifact, views, options.target); // unknown: an error

  if (options.perf) {
    const fb::Program *program = findProgram(*artifact, options.program);
    std::vector<TargetPerf> targets = estimateProgram(*artifact, views, program, options);
    if (!options.roofline.empty())
      writeRoofline(*artifact, program, targets, options.roofline);
    if (options.json)
      printPerfJson(*artifact, program, targets);
    else
      printPerfText(*artifact, program, targets);
  } else if (options.disassemble) {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUDisassembler();
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86Disassembler();
    printDisassembly(*artifact, views, options);
  } else if (!options.kernel.empty()) {
    printKernel(*artifact, views, options);
  } else if (options.json) {
    printSummaryJson(*artifact, views, options);
  } else {
    printSummaryText(*artifact, views, options);
  }
  outs().flush();
  return 0;
}
