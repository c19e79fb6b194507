//===- CPUCodegen.cpp - dispatch functions -> x86-64 shared object --------===//

#include "codegen/cpu/CPUCodegen.h"
#include "codegen/cpu/Passes.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

using namespace mlir;

namespace kiln::cpu {

void resolveTarget(CPUOptions &options) {
  codegen::resolveHostCPU(options.cpu, options.features);
  bool avx512 = llvm::StringRef(options.features).contains("+avx512f") ||
                llvm::StringRef(options.cpu).contains("v4") ||
                llvm::StringRef(options.cpu).starts_with("znver4") ||
                llvm::StringRef(options.cpu).starts_with("znver5");
  options.registerRows = avx512 ? 16 : 4;
  options.vectorWidth = 16;
}

void buildLinalgPipeline(OpPassManager &pm, const CPUOptions &options) {
  pm.addNestedPass<func::FuncOp>(createKilnLowerToLinalg());
  pm.addNestedPass<func::FuncOp>(createKilnCountFlops());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createKilnConvToGemm());
  pm.addPass(createCanonicalizerPass());
  KilnCPUDistributeOptions distribute;
  distribute.targetWorkgroups = options.workgroups;
  pm.addNestedPass<func::FuncOp>(createKilnCPUDistribute(distribute));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  KilnCPUVectorizeGemmOptions vectorize;
  vectorize.mr = options.registerRows;
  vectorize.nr = options.vectorWidth;
  pm.addNestedPass<func::FuncOp>(createKilnCPUVectorizeGemm(vectorize));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void buildLLVMPipeline(OpPassManager &pm, const CPUOptions &options) {
  codegen::buildBufferizePipeline(pm);
  pm.addNestedPass<func::FuncOp>(createKilnCPUWorkgroupToArgs());
  bufferization::buildBufferDeallocationPipeline(pm);
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
      llvm::Function *inner = llvmModule.getFunction(kernel.name);
      if (!inner)
        return fail(module, "kernel '" + kernel.name + "' is missing after lowering");
      kernel.symbol = kernel.name;
      addEntry(llvmModule, inner, kernel.symbol);
    }
    return success();
  };
  return codegen::emitHostObject(module, options.cpu, options.features, addEntries, codeObject,
                                 assembly);
}

} // namespace kiln::cpu
