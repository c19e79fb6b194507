//===- GPUCodegen.cpp - dispatch functions -> AMDGPU HSACO ----------------===//

#include "codegen/amdgpu/GPUCodegen.h"
#include "codegen/amdgpu/Passes.h"
#include "lowering/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;

namespace kiln::gfx {

const Target *builderTarget(func::FuncOp func, StringRef chip, bool &failed) {
  failed = false;
  if (!func->hasAttr(kDispatchAttr) || func->hasAttr(kWorkgroupCountAttr))
    return nullptr;
  const Target *target = lookupTarget(chip);
  if (!target) {
    func.emitError("unknown gfx target '") << chip << "'";
    failed = true;
  }
  return target;
}

Value reshapeMemref(OpBuilder &b, Location loc, Value memref, ArrayRef<Operation *> reshapes) {
  for (Operation *op : reshapes) {
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      memref = memref::CollapseShapeOp::create(b, loc, memref, collapse.getReassociationIndices());
    } else {
      auto expand = cast<tensor::ExpandShapeOp>(op);
      auto type = MemRefType::get(expand.getResultType().getShape(),
                                  cast<MemRefType>(memref.getType()).getElementType());
      memref = memref::ExpandShapeOp::create(b, loc, type, memref,
                                             expand.getReassociationIndices());
    }
  }
  return memref;
}

void buildLinalgPipeline(OpPassManager &pm, const GfxOptions &options) {
  pm.addNestedPass<func::FuncOp>(createKilnLowerToLinalg());
  pm.addNestedPass<func::FuncOp>(createKilnCountFlops());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  KilnConvToGemmOptions convToGemm;
  convToGemm.im2col = false;
  pm.addNestedPass<func::FuncOp>(createKilnConvToGemm(convToGemm));
  pm.addPass(createCanonicalizerPass());
  KilnGPUBuildGemmsOptions gemms;
  gemms.chip = options.target->name;
  gemms.precision = options.precision == Precision::F16    ? "f16"
                    : options.precision == Precision::BF16 ? "bf16"
                                                           : "f32";
  gemms.testFault = options.testFault;
  gemms.testWaveTiles = options.testWaveTiles;
  gemms.testLargeTiling = options.testLargeTiling;
  gemms.testStepSchedule = options.testStepSchedule;
  gemms.testLoadAhead = options.testLoadAhead;
  pm.addNestedPass<func::FuncOp>(createKilnGPUBuildGemms(gemms));
  KilnGPUBuildRowReductionsOptions rows;
  rows.chip = options.target->name;
  rows.testFault = options.testFault;
  pm.addNestedPass<func::FuncOp>(createKilnGPUBuildRowReductions(rows));
  KilnGPUDistributeOptions distribute;
  distribute.workgroupSize = options.workgroupSize;
  pm.addNestedPass<func::FuncOp>(createKilnGPUDistribute(distribute));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildGpuPipeline(OpPassManager &pm, const GfxOptions &options) {
  codegen::buildBufferizePipeline(pm);
  pm.addNestedPass<func::FuncOp>(createKilnGPUMapToThreads());
  pm.addNestedPass<func::FuncOp>(createKilnCopiesToLinalg());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(memref::createFoldMemRefAliasOpsPass());
  pm.addPass(createLowerAffinePass());
  pm.addNestedPass<func::FuncOp>(createKilnGPULowerMath());
  KilnGPUOutlineKernelsOptions outline;
  outline.chip = options.target->name;
  pm.addPass(createKilnGPUOutlineKernels(outline));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildLLVMPipeline(OpPassManager &pm, const GfxOptions &options) {
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(memref::createExpandStridedMetadataPass());
  kernels.addPass(createLowerAffinePass());
  kernels.addPass(createSCFToControlFlowPass());
  kernels.addPass(createConvertMathToLLVMPass());
  ConvertGpuOpsToROCDLOpsOptions rocdl;
  rocdl.chipset = options.target->name;
  rocdl.useBarePtrCallConv = true;
  rocdl.indexBitwidth = 32;
  kernels.addPass(createConvertGpuOpsToROCDLOps(rocdl));
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

namespace {
/// The options of the registered gfx pipelines.
struct GfxPipelineOptions : PassPipelineOptions<GfxPipelineOptions> {
  Option<std::string> chip{*this, "chip", llvm::cl::desc("gfx target or chip name"),
                           llvm::cl::init("gfx942")};
  Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("f32 (no matrix cores for f32 operands), f16 or bf16"),
      llvm::cl::init("f32")};
  Option<int64_t> workgroupSize{*this, "workgroup-size",
                                llvm::cl::desc("threads per workgroup of the generic path"),
                                llvm::cl::init(256)};
};

/// Registers `arg` building its passes with `build` from the parsed options;
/// an unknown chip or precision is an option error (the reason for calling
/// registerPassPipeline, which PassPipelineRegistration wraps, directly).
void registerGfxPipeline(StringRef arg, StringRef description,
                         std::function<void(OpPassManager &, const GfxOptions &)> build) {
  registerPassPipeline(
      arg, description,
      [build](OpPassManager &pm, StringRef text,
              function_ref<LogicalResult(const Twine &)> errorHandler) -> LogicalResult {
        GfxPipelineOptions parsed;
        if (failed(parsed.parseFromString(text)))
          return failure();
        GfxOptions options;
        options.target = lookupTarget(parsed.chip.getValue());
        if (!options.target)
          return errorHandler("unknown gfx target '" + parsed.chip.getValue() +
                              "' (known: " + knownTargets() + ")");
        std::string precision = parsed.precision.getValue();
        if (precision == "f32")
          options.precision = Precision::F32;
        else if (precision == "f16")
          options.precision = Precision::F16;
        else if (precision == "bf16")
          options.precision = Precision::BF16;
        else
          return errorHandler("unknown precision '" + precision + "' (known: f32, f16, bf16)");
        options.workgroupSize = parsed.workgroupSize;
        build(pm, options);
        return success();
      },
      [](function_ref<void(const mlir::detail::PassOptions &)> optHandler) {
        optHandler(GfxPipelineOptions());
      });
}
} // namespace

void registerGfxPipelines() {
  registerGfxPipeline("kiln-gfx-linalg-pipeline",
                      "dispatch functions in kiln -> linalg on tensors for a gfx target: "
                      "matrix-core GEMMs built, the rest tiled into per-thread tiles",
                      buildLinalgPipeline);
  registerGfxPipeline("kiln-gfx-gpu-pipeline",
                      "linalg on tensors -> bufferized gfx kernels in a gpu.module",
                      buildGpuPipeline);
  registerGfxPipeline("kiln-gfx-llvm-pipeline",
                      "a gpu.module of gfx kernels -> the ROCDL and LLVM dialects",
                      buildLLVMPipeline);
  registerGfxPipeline("kiln-gfx-pipeline",
                      "dispatch functions in kiln -> gfx kernels in the ROCDL and LLVM "
                      "dialects (the linalg, gpu and llvm pipelines in a row)",
                      [](OpPassManager &pm, const GfxOptions &options) {
                        buildLinalgPipeline(pm, options);
                        buildGpuPipeline(pm, options);
                        buildLLVMPipeline(pm, options);
                      });
}

namespace {
LogicalResult fail(Operation *op, const Twine &message) { return op->emitError(message); }
} // namespace

LogicalResult emitCodeObject(ModuleOp module, const GfxOptions &options,
                             CodeObject &codeObject, std::string *assembly) {
  LLVMInitializeAMDGPUTargetInfo();
  LLVMInitializeAMDGPUTarget();
  LLVMInitializeAMDGPUTargetMC();
  LLVMInitializeAMDGPUAsmPrinter();

  gpu::GPUModuleOp gpuModule;
  for (auto m : module.getOps<gpu::GPUModuleOp>())
    gpuModule = m;
  if (!gpuModule)
    return fail(module, "no gpu.module of gfx kernels to emit");

  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerROCDLDialectTranslation(registry);
  module->getContext()->appendDialectRegistry(registry);

  codegen::attachLoopAnnotations(gpuModule);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(gpuModule, llvmContext, "kiln_kernels");
  if (!llvmModule)
    return fail(module, "failed to translate the gfx kernels to LLVM IR");

  const char *chip = options.target->name;
  llvm::Triple triple("amdgcn-amd-amdhsa");
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return fail(module, "no AMDGPU target in this LLVM: " + error);
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, chip, "", targetOptions, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return fail(module, llvm::Twine("cannot create an AMDGPU target machine for ") + chip);
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);
  // Code object v5: loads on ROCm 5.x and 6.x.
  llvmModule->addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", 500);

  for (Kernel &kernel : codeObject.kernels)
    if (!llvmModule->getFunction(kernel.name))
      return fail(module, "kernel '" + kernel.name + "' is missing after lowering");

  auto optimize = makeOptimizingTransformer(3, 0, machine.get());
  if (llvm::Error err = optimize(llvmModule.get()))
    return fail(module, "LLVM optimization failed: " + llvm::toString(std::move(err)));

  codeObject.target = chip;
  codeObject.triple = triple.str();
  codeObject.cpu = chip;
  codeObject.features = "";

  return codegen::emitAndLink(module, *machine, *llvmModule, codeObject.bytes, assembly);
}

} // namespace kiln::gfx
