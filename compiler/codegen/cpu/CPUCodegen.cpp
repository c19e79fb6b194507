//===- CPUCodegen.cpp - dispatch functions -> x86-64 shared object --------===//

#include "codegen/cpu/CPUCodegen.h"
#include "codegen/cpu/Passes.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"
#include "llvm/TargetParser/X86TargetParser.h"

using namespace mlir;

namespace kiln::cpu {

void resolveTarget(CPUOptions &options) {
  codegen::resolveHostCPU(options.cpu, options.features);
  // What the CPU has: LLVM's features for the name, then the explicit
  // (or, for "host", detected) +/- features on top.
  llvm::StringMap<bool> has;
  llvm::SmallVector<llvm::StringRef> implied;
  llvm::X86::getFeaturesForCPU(options.cpu, implied);
  // (The list names what the CPU adds, not what that implies: x86-64-v4
  // lists avx512bw but not avx512f, and was taken for an AVX2 machine.)
  for (llvm::StringRef feature : implied)
    llvm::X86::updateImpliedFeatures(feature, true, has);
  llvm::SmallVector<llvm::StringRef> explicitFeatures;
  llvm::StringRef(options.features).split(explicitFeatures, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef feature : explicitFeatures)
    if (feature.size() > 1 && (feature[0] == '+' || feature[0] == '-'))
      has[feature.drop_front()] = feature[0] == '+';
  bool avx512 = has.lookup("avx512f");
  options.registerRows = avx512 ? 16 : 4;
  options.vectorWidth = 16;
  options.vectorLanes = avx512 ? 16 : 8;
  // AVX-512: 8 x 32 tiles (two vectors a row) where the product is wide
  // enough (kiln-cpu-vectorize-gemm's RegisterTile::forContraction).
  options.wideRows = avx512 ? 8 : 0;
  options.wideColumns = avx512 ? 32 : 0;
  options.dot = has.lookup("avx512vnni") ? DotISA::AVX512VNNI
                : has.lookup("avx512bw") ? DotISA::AVX512BW
                : has.lookup("avx2")     ? DotISA::AVX2
                                         : DotISA::None;
}

void buildLinalgPipeline(OpPassManager &pm, const CPUOptions &options) {
  KilnCPUWinogradKernelsOptions winograd;
  winograd.vectorLanes = options.vectorLanes;
  pm.addNestedPass<func::FuncOp>(createKilnCPUWinogradKernels(winograd));
  pm.addNestedPass<func::FuncOp>(createKilnCPUWidenFourBit());
  pm.addNestedPass<func::FuncOp>(createKilnLowerToLinalg());
  pm.addNestedPass<func::FuncOp>(createKilnCountFlops());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createKilnConvToGemm());
  pm.addPass(createCanonicalizerPass());
  KilnCPUDistributeOptions distribute;
  distribute.targetWorkgroups = options.workgroups;
  distribute.columnGranule = std::max(options.vectorWidth, options.wideColumns);
  KilnCPUVectorizeGemmOptions vectorize;
  // (Distribution sizes such products' workgroups for the tiles they get.)
  distribute.panelGemmRows = vectorize.panelGemmRows;
  pm.addNestedPass<func::FuncOp>(createKilnCPUDistribute(distribute));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  vectorize.mr = options.registerRows;
  vectorize.nr = options.vectorWidth;
  vectorize.wideMr = options.wideRows;
  vectorize.wideNr = options.wideColumns;
  vectorize.dotISA = stringifyDotISA(options.dot).str();
  vectorize.vectorLanes = options.vectorLanes;
  pm.addNestedPass<func::FuncOp>(createKilnCPUVectorizeGemm(vectorize));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

namespace {

/// The options of the registered cpu pipelines (kiln-opt): the LLVM CPU and
/// features the register tile is chosen for, and the workgroups to aim for.
struct CPUPipelineOptions : public PassPipelineOptions<CPUPipelineOptions> {
  Option<std::string> cpu{*this, "cpu",
                          llvm::cl::desc("LLVM CPU name, or host (the compiling machine's)"),
                          llvm::cl::init("host")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("LLVM features, e.g. +avx2,+fma (with a cpu)"),
                               llvm::cl::init("")};
  Option<int64_t> workgroups{*this, "workgroups",
                             llvm::cl::desc("workgroups to aim for per dispatch"),
                             llvm::cl::init(64)};

  CPUOptions resolved() const {
    CPUOptions options;
    options.cpu = cpu;
    options.features = features;
    options.workgroups = workgroups;
    resolveTarget(options);
    return options;
  }
};

} // namespace

void registerCPUPipelines() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "kiln-cpu-linalg-pipeline",
      "dispatch functions in kiln -> linalg on tensors for the cpu: lowered, FLOPs "
      "counted, convolutions as GEMMs, tiled into workgroups, register tiles vectorized",
      [](OpPassManager &pm, const CPUPipelineOptions &options) {
        buildLinalgPipeline(pm, options.resolved());
      });
  PassPipelineRegistration<CPUPipelineOptions>(
      "kiln-cpu-llvm-pipeline",
      "cpu dispatch functions on tensors -> the LLVM dialect with the workgroup ABI",
      [](OpPassManager &pm, const CPUPipelineOptions &options) {
        buildLLVMPipeline(pm, options.resolved());
      });
  PassPipelineRegistration<CPUPipelineOptions>(
      "kiln-cpu-pipeline", "dispatch functions in kiln -> the LLVM dialect for the cpu",
      [](OpPassManager &pm, const CPUPipelineOptions &options) {
        CPUOptions resolved = options.resolved();
        buildLinalgPipeline(pm, resolved);
        buildLLVMPipeline(pm, resolved);
      });
}

void buildLLVMPipeline(OpPassManager &pm, const CPUOptions &options) {
  codegen::buildBufferizePipeline(pm);
  pm.addNestedPass<func::FuncOp>(createKilnCPUWorkgroupToArgs());
  // Small buffers of static size out of their loops and onto the stack: a
  // row reduction's 16 partial values were a malloc and a free per row
  // (softmax, layer norm: 2 x 197 per ViT head and layer).
  pm.addNestedPass<func::FuncOp>(bufferization::createBufferLoopHoistingPass());
  bufferization::PromoteBuffersToStackPassOptions stack;
  stack.maxAllocSizeInBytes = 4096;
  stack.maxRankOfAllocatedMemRef = 4;
  pm.addNestedPass<func::FuncOp>(bufferization::createPromoteBuffersToStackPass(stack));
  bufferization::buildBufferDeallocationPipeline(pm);
  if (options.dot != DotISA::None) {
    KilnCPULowerDotProductsOptions dot;
    dot.isaName = stringifyDotISA(options.dot).str();
    pm.addNestedPass<func::FuncOp>(createKilnCPULowerDotProducts(dot));
  }
  // (AVX2 has 16 registers of 8 floats: half the kernel of AVX-512's 32 x 16.)
  KilnCPULowerInt4MatmulsOptions int4;
  int4.rows = options.registerRows >= 16 ? 4 : 2;
  int4.vectors = options.registerRows >= 16 ? 2 : 1;
  int4.tileRows = options.registerRows >= 16 ? 8 : 4;
  int4.dotISA = stringifyDotISA(options.dot).str();
  pm.addNestedPass<func::FuncOp>(createKilnCPULowerInt4Matmuls(int4));
  KilnCPULowerPanelMatmulsOptions panels;
  panels.rows = options.registerRows >= 16 ? 4 : 2;
  panels.vectors = options.registerRows >= 16 ? 4 : 2;
  pm.addNestedPass<func::FuncOp>(createKilnCPULowerPanelMatmuls(panels));
  pm.addNestedPass<func::FuncOp>(createKilnCPUPrefetchTiles());
  pm.addNestedPass<func::FuncOp>(createKilnCopiesToLinalg());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  codegen::buildLoopsToLLVMPipeline(pm);
}


namespace {

/// `void <name>(void *const *bindings, int64_t workgroup_id)` calling the
/// lowered dispatch function `inner(ptr..., i64)`.
void addEntry(llvm::Module &module, llvm::Function *inner, const std::string &name) {
  auto *i64 = llvm::Type::getInt64Ty(module.getContext());
  codegen::defineEntry(module, inner, name, i64,
              [&](llvm::IRBuilderBase &b, llvm::Function *entry,
                  SmallVectorImpl<llvm::Value *> &args) {
                auto *ptrTy = b.getPtrTy();
                for (unsigned i = 0; i + 1 < inner->arg_size(); ++i) {
                  llvm::Value *slot = b.CreateConstInBoundsGEP1_64(ptrTy, entry->getArg(0), i);
                  args.push_back(b.CreateAlignedLoad(ptrTy, slot, llvm::Align(8)));
                }
                args.push_back(entry->getArg(1));
              });
}

LogicalResult fail(ModuleOp module, const Twine &message) {
  return emitError(module.getLoc()) << message;
}

} // namespace

LogicalResult emitCodeObject(ModuleOp module, const CPUOptions &options,
                             CodeObject &codeObject, std::string *assembly) {
  auto addEntries = [&](llvm::Module &llvmModule) -> LogicalResult {
    for (Kernel &kernel : codeObject.kernels) {
      kernel.symbol = kernel.name;
      if (!kernel.body.empty() && kernel.body != kernel.name)
        continue;
      llvm::Function *inner = llvmModule.getFunction(kernel.name);
      if (!inner)
        return fail(module, "kernel '" + kernel.name + "' is missing after lowering");
      addEntry(llvmModule, inner, kernel.symbol);
    }
    // A kernel sharing another's code is another name of its entry.
    for (Kernel &kernel : codeObject.kernels) {
      if (kernel.body.empty() || kernel.body == kernel.name)
        continue;
      llvm::Function *entry = llvmModule.getFunction(kernel.body);
      if (!entry || entry->isDeclaration())
        return fail(module, "kernel '" + kernel.name + "' shares the code of '" + kernel.body +
                                "', which is missing after lowering");
      llvm::GlobalAlias::create(entry->getFunctionType(), 0, llvm::GlobalValue::ExternalLinkage,
                                kernel.symbol, entry, &llvmModule);
    }
    return success();
  };
  return codegen::emitHostObject(module, options.cpu, options.features, addEntries, codeObject,
                                 assembly);
}

} // namespace kiln::cpu
