//===- GPUCodegen.cpp - dispatch functions -> AMDGPU HSACO ----------------===//

#include "codegen/amdgpu/GPUCodegen.h"
#include "codegen/amdgpu/Passes.h"
#include "lowering/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"

using namespace mlir;

namespace kiln::gfx {

const MatrixInstruction *Target::instruction(MatrixInput input) const {
  for (const MatrixInstruction &inst : matrix)
    if (inst.input == input)
      return &inst;
  return nullptr;
}

// Instruction shapes and per-lane element counts: m*k / wave (A), m*n / wave
// (C/D); RDNA3's WMMA duplicates A and B across the two half-waves, so each
// lane holds all 16 of its row's k elements. Mnemonics as LLVM 22 prints them.
// Lane layouts (the last five numbers, see MatrixInstruction): gfx942,
// gfx1100 and gfx1201 are checked element by element against AMD's matrix
// instruction calculator tables (test/unit/MatrixLayoutTest.cpp, data in
// test/unit/Inputs/matrix-layouts). gfx950 and gfx1250 are not in those
// tables: their layouts follow the pattern of their predecessors with K
// doubled per lane group (gfx950: lane group g holds k = 8g.. (16-bit) or
// 16g.. (8-bit), contiguous; gfx1250: RDNA4's split, where lane group g
// holds the chunks g, g + 2, ... of K), to be proven by the emulator's checks.
// RDNA4's 16-bit layout is such a split (lane group g: k = 4g..4g+3 and
// 8+4g..8+4g+3); the table test caught a contiguous guess here.
const std::vector<Target> &allTargets() {
  using MI = MatrixInput;
  static const std::vector<Target> targets = {
      {"gfx942",
       "MI300X, MI325X (CDNA3)",
       {"mi300x", "mi300a", "mi300", "mi325x"},
       64,
       65536,
       {{MI::F16, false, 16, 16, 16, 4, 4, "v_mfma_f32_16x16x16_f16", 4, 4, 0, 4, 1},
        {MI::BF16, false, 16, 16, 16, 4, 4, "v_mfma_f32_16x16x16_bf16", 4, 4, 0, 4, 1},
        {MI::I8, false, 16, 16, 32, 8, 4, "v_mfma_i32_16x16x32_i8", 8, 8, 0, 4, 1}}},
      {"gfx950",
       "MI350X, MI355X (CDNA4)",
       {"mi350x", "mi355x", "mi350", "mi355"},
       64,
       163840,
       {{MI::F16, false, 16, 16, 32, 8, 4, "v_mfma_f32_16x16x32_f16", 8, 8, 0, 4, 1},
        {MI::BF16, false, 16, 16, 32, 8, 4, "v_mfma_f32_16x16x32_bf16", 8, 8, 0, 4, 1},
        {MI::I8, false, 16, 16, 64, 16, 4, "v_mfma_i32_16x16x64_i8", 16, 16, 0, 4, 1}}},
      {"gfx1250",
       "MI400 series: MI450, MI455X",
       {"mi450", "mi450x", "mi455x", "mi400"},
       32,
       65536,
       {{MI::F16, true, 16, 16, 32, 16, 8, "v_wmma_f32_16x16x32_f16", 8, 8, 16, 8, 1},
        {MI::BF16, true, 16, 16, 32, 16, 8, "v_wmma_f32_16x16x32_bf16", 8, 8, 16, 8, 1},
        {MI::I8, true, 16, 16, 64, 32, 8, "v_wmma_i32_16x16x64_iu8", 8, 8, 16, 8, 1}}},
      {"gfx1100",
       "RDNA3: Radeon PRO W7900, RX 7900 XTX",
       {"w7900", "rx7900xtx", "7900xtx", "rdna3"},
       32,
       65536,
       {{MI::F16, true, 16, 16, 16, 16, 8, "v_wmma_f32_16x16x16_f16", 0, 16, 0, 1, 2},
        {MI::BF16, true, 16, 16, 16, 16, 8, "v_wmma_f32_16x16x16_bf16", 0, 16, 0, 1, 2},
        {MI::I8, true, 16, 16, 16, 16, 8, "v_wmma_i32_16x16x16_iu8", 0, 16, 0, 1, 2},
        {MI::I4, true, 16, 16, 16, 16, 8, "v_wmma_i32_16x16x16_iu4", 0, 16, 0, 1, 2}}},
      {"gfx1201",
       "RDNA4: Radeon AI PRO R9700, RX 9070 XT",
       {"r9700", "rx9070xt", "9070xt", "rdna4"},
       32,
       65536,
       {{MI::F16, true, 16, 16, 16, 8, 8, "v_wmma_f32_16x16x16_f16", 4, 4, 8, 8, 1},
        {MI::BF16, true, 16, 16, 16, 8, 8, "v_wmma_f32_16x16x16_bf16", 4, 4, 8, 8, 1},
        {MI::I8, true, 16, 16, 16, 8, 8, "v_wmma_i32_16x16x16_iu8", 8, 8, 0, 8, 1},
        {MI::I4, true, 16, 16, 32, 16, 8, "v_wmma_i32_16x16x32_iu4", 16, 16, 0, 8, 1}}},
  };
  return targets;
}

const Target *lookupTarget(llvm::StringRef name) {
  std::string lower = name.lower();
  for (const Target &target : allTargets()) {
    if (lower == target.name)
      return &target;
    for (const char *chip : target.chips)
      if (lower == chip)
        return &target;
  }
  return nullptr;
}

std::string knownTargets() {
  std::string out;
  for (const Target &target : allTargets()) {
    if (!out.empty())
      out += ", ";
    out += std::string(target.name) + " (" + llvm::join(target.chips, ", ") + ")";
  }
  return out;
}

void buildLinalgPipeline(OpPassManager &pm, const GfxOptions &options) {
  pm.addNestedPass<func::FuncOp>(createKilnLowerToLinalg());
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
  pm.addNestedPass<func::FuncOp>(createKilnGPUBuildGemms(gemms));
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
