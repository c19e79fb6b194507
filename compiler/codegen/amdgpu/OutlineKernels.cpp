//===- OutlineKernels.cpp - dispatch functions -> gpu.module of gfx kernels ===//
//
// Each bufferized dispatch function becomes a gpu.func kernel in one
// gpu.module targeting the chip. Memrefs get their gfx address spaces:
// kernel arguments global (global_load/store instead of flat), allocas
// private (scratch), workgroup buffers LDS (as workgroup attributions).
//
//===----------------------------------------------------------------------===//

#include "codegen/amdgpu/GPUCodegen.h"
#include "codegen/amdgpu/Passes.h"

#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNGPUOUTLINEKERNELS
#include "codegen/amdgpu/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

MemRefType inSpace(MemRefType type, gpu::AddressSpace space) {
  return MemRefType::Builder(type).setMemorySpace(
      gpu::AddressSpaceAttr::get(type.getContext(), space));
}

/// Gives `value` (a memref) the address space, and every view of it.
void setAddressSpace(Value value, gpu::AddressSpace space) {
  auto type = dyn_cast<MemRefType>(value.getType());
  if (!type)
    return;
  MemRefType spaced = inSpace(type, space);
  if (type == spaced)
    return;
  value.setType(spaced);
  for (OpOperand &use : value.getUses()) {
    Operation *user = use.getOwner();
    // A buffer chosen by an scf.if (the padded or the all-padding tile of a
    // convolution) gives the if's result its space.
    if (isa<scf::YieldOp>(user) && isa<scf::IfOp>(user->getParentOp())) {
      setAddressSpace(user->getParentOp()->getResult(use.getOperandNumber()), space);
      continue;
    }
    auto view = dyn_cast<ViewLikeOpInterface>(user);
    if (!view || view.getViewSource() != value)
      continue;
    for (Value result : user->getResults())
      setAddressSpace(result, space);
  }
}

struct KilnGPUOutlineKernelsPass
    : kiln::impl::KilnGPUOutlineKernelsBase<KilnGPUOutlineKernelsPass> {
  using KilnGPUOutlineKernelsBase::KilnGPUOutlineKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), b.getUnitAttr());
    b.setInsertionPointToEnd(module.getBody());
    auto target = ROCDL::ROCDLTargetAttr::get(
        ctx, /*optLevel=*/3, "amdgcn-amd-amdhsa", chip, /*features=*/"", "500");
    auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "kernels",
                                              b.getArrayAttr({target}));

    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (!func->hasAttr(kDispatchAttr))
        continue;
      if (func.getNumResults() != 0) {
        func.emitError("expected a bufferized dispatch function without results");
        return signalPassFailure();
      }
      auto size = func->getAttrOfType<IntegerAttr>(kWorkgroupSizeAttr);
      auto count = func->getAttrOfType<IntegerAttr>(kWorkgroupCountAttr);
      if (!size || !count) {
        func.emitError("dispatch function was not distributed to gfx threads");
        return signalPassFailure();
      }
      Block &entry = func.getBody().front();
      for (BlockArgument arg : entry.getArguments())
        setAddressSpace(arg, gpu::AddressSpace::Global);
      // Workgroup buffers become attributions; other allocas are private.
      SmallVector<memref::AllocaOp> lds, priv;
      func.walk([&](memref::AllocaOp alloca) {
        (alloca->hasAttr(kWorkgroupMemoryAttr) ? lds : priv).push_back(alloca);
      });
      for (memref::AllocaOp alloca : priv)
        setAddressSpace(alloca.getResult(), gpu::AddressSpace::Private);

      b.setInsertionPointToEnd(gpuModule.getBody());
      auto kernel = gpu::GPUFuncOp::create(b, func.getLoc(), func.getName(),
                                           b.getFunctionType(entry.getArgumentTypes(), {}));
      kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
      int32_t threads = static_cast<int32_t>(size.getInt());
      int32_t groups = static_cast<int32_t>(count.getInt());
      kernel.setKnownBlockSizeAttr(b.getDenseI32ArrayAttr({threads, 1, 1}));
      kernel.setKnownGridSizeAttr(b.getDenseI32ArrayAttr({groups, 1, 1}));
      for (StringRef name : {kDispatchAttr.data(), kWorkgroupCountAttr.data(),
                             kWorkgroupSizeAttr.data(), kThreadTilesAttr.data(),
                             kLdsBytesAttr.data(), kMatrixInstructionAttr.data()})
        if (Attribute value = func->getAttr(name))
          kernel->setAttr(name, value);
      kernel->setLoc(func.getLoc());

      // The new kernel's body is replaced by the function's.
      Region &body = kernel.getBody();
      body.front().erase();
      body.takeBody(func.getBody());
      Block &kernelEntry = body.front();
      for (memref::AllocaOp alloca : lds) {
        auto type = inSpace(alloca.getType(), gpu::AddressSpace::Workgroup);
        BlockArgument attribution = kernel.addWorkgroupAttribution(type, alloca.getLoc());
        alloca.replaceAllUsesWith(attribution);
        alloca.erase();
        setAddressSpace(attribution, gpu::AddressSpace::Workgroup);
      }
      // Constants the bufferization made globals (lookup tables, small
      // weights folded into the dispatch) live in the gpu.module, in the
      // global address space.
      SmallVector<memref::GetGlobalOp> gets;
      kernel.walk([&](memref::GetGlobalOp get) { gets.push_back(get); });
      for (memref::GetGlobalOp get : gets) {
        if (!gpuModule.lookupSymbol(get.getName())) {
          auto global = module.lookupSymbol<memref::GlobalOp>(get.getName());
          if (!global) {
            get.emitError("reference to a missing global");
            return signalPassFailure();
          }
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(gpuModule.getBody());
          auto copy = cast<memref::GlobalOp>(b.clone(*global));
          copy.setType(inSpace(global.getType(), gpu::AddressSpace::Global));
        }
        setAddressSpace(get.getResult(), gpu::AddressSpace::Global);
      }
      auto ret = cast<func::ReturnOp>(kernelEntry.getTerminator());
      b.setInsertionPoint(ret);
      gpu::ReturnOp::create(b, ret.getLoc());
      ret.erase();
      func.erase();
    }
    for (auto global : llvm::make_early_inc_range(module.getOps<memref::GlobalOp>()))
      global.erase();
  }
};
} // namespace
