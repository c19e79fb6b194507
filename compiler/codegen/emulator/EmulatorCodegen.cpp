//===- EmulatorCodegen.cpp - gfx kernels compiled for the host ------------===//

#include "codegen/emulator/EmulatorCodegen.h"

#include "codegen/amdgpu/Passes.h"
#include "codegen/emulator/Passes.h"
#include "kiln/emu_abi.h"

#include "mlir/Pass/PassRegistry.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

using namespace mlir;

namespace kiln::emu {

namespace {
/// The options of --kiln-emu-pipeline.
struct EmulatorPipelineOptions : PassPipelineOptions<EmulatorPipelineOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("gfx target or chip name"),
                           llvm::cl::init("gfx942")};
};
} // namespace

void buildEmulatorPipeline(OpPassManager &pm, const gfx::Target &target) {
  KilnEmuLowerKernelsOptions options;
  options.chip = target.name;
  pm.addPass(createKilnEmuLowerKernels(options));
  codegen::buildLoopsToLLVMPipeline(pm);
}

void registerEmulatorPipelines() {
  registerPassPipeline(
      "kiln-emu-pipeline",
      "the gfx kernels of a gpu.module (the gpu stage) -> host functions in the LLVM "
      "dialect for the emu:<gfx> device",
      [](OpPassManager &pm, StringRef text,
         function_ref<LogicalResult(const Twine &)> errorHandler) -> LogicalResult {
        EmulatorPipelineOptions parsed;
        if (failed(parsed.parseFromString(text)))
          return failure();
        const gfx::Target *target = gfx::lookupTarget(parsed.chip.getValue());
        if (!target)
          return errorHandler("unknown gfx target '" + parsed.chip.getValue() +
                              "' (known: " + gfx::knownTargets() + ")");
        buildEmulatorPipeline(pm, *target);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(EmulatorPipelineOptions());
      });
}

namespace {

/// `void <name>(KilnEmuLane *lane, void *const *bindings)` calling the lowered
/// kernel `inner(lane, lds, binding...)` with the LDS bytes of the lane.
void addEntry(llvm::Module &module, llvm::Function *inner, const std::string &name) {
  auto *ptrTy = llvm::PointerType::get(module.getContext(), 0);
  codegen::defineEntry(module, inner, name, ptrTy,
                   [&](llvm::IRBuilderBase &b, llvm::Function *entry,
                       llvm::SmallVectorImpl<llvm::Value *> &args) {
                     llvm::Value *lane = entry->getArg(0);
                     args.push_back(lane);
                     llvm::Value *ldsSlot =
                         b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), lane, kLaneLdsOffset);
                     args.push_back(b.CreateAlignedLoad(ptrTy, ldsSlot, llvm::Align(8)));
                     for (unsigned i = 2; i < inner->arg_size(); ++i) {
                       llvm::Value *slot =
                           b.CreateConstInBoundsGEP1_64(ptrTy, entry->getArg(1), i - 2);
                       args.push_back(b.CreateAlignedLoad(ptrTy, slot, llvm::Align(8)));
                     }
                   });
}

} // namespace

LogicalResult emitCodeObject(ModuleOp module, StringRef hostCPU, StringRef hostFeatures,
                             llvm::ArrayRef<std::string> kernels, codegen::HostObject &object,
                             std::string *assembly) {
  auto addEntries = [&](llvm::Module &llvmModule) -> LogicalResult {
    for (const std::string &name : kernels) {
      llvm::Function *inner = llvmModule.getFunction(name);
      if (!inner)
        return emitError(module.getLoc()) << "emulated kernel '" << name
                                          << "' is missing after lowering";
      addEntry(llvmModule, inner, name);
    }
    return success();
  };
  return codegen::emitHostObject(module, hostCPU, hostFeatures, addEntries, object, assembly);
}

} // namespace kiln::emu
