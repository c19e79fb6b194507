//===- DestinationArgs.cpp - dispatch functions take memrefs --------------===//
//
// The kernel ABI passes every input and output as a pointer to its buffer.
// This pass gives dispatch functions that signature while still on tensors,
// so that One-Shot Bufferize writes results straight into the caller's
// output buffer (with eliminate-empty-tensors) and reads inputs in place.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/Passes.h"
#include "kiln/Passes/Passes.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNDESTINATIONARGS
#include "codegen/common/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

MemRefType memrefFor(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

struct KilnDestinationArgsPass
    : kiln::impl::KilnDestinationArgsBase<KilnDestinationArgsPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (!func->hasAttr(kDispatchAttr))
      return;
    Block &entry = func.getBody().front();
    OpBuilder b(&getContext());
    b.setInsertionPointToStart(&entry);
    Location loc = func.getLoc();

    // Inputs: memref arguments read as tensors.
    for (BlockArgument arg : entry.getArguments()) {
      auto tensorType = dyn_cast<RankedTensorType>(arg.getType());
      if (!tensorType)
        continue;
      arg.setType(memrefFor(tensorType));
      auto toTensor = bufferization::ToTensorOp::create(
          b, loc, tensorType, arg, /*restrict=*/true, /*writable=*/false);
      arg.replaceAllUsesExcept(toTensor.getResult(), toTensor);
    }

    // Outputs: new trailing arguments the results materialize into.
    auto ret = cast<func::ReturnOp>(entry.getTerminator());
    b.setInsertionPoint(ret);
    for (Value result : ret.getOperands()) {
      Value dest = entry.addArgument(memrefFor(result.getType()), loc);
      // Write the pre-reshape value into a reshaped view of the output.
      while (Operation *def = result.getDefiningOp()) {
        if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def)) {
          dest = memref::CollapseShapeOp::create(b, loc, dest,
                                                 expand.getReassociationIndices());
          result = expand.getSrc();
        } else if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
          auto srcType = collapse.getSrcType();
          dest = memref::ExpandShapeOp::create(
              b, loc, srcType.getShape(), dest, collapse.getReassociationIndices());
          result = collapse.getSrc();
        } else {
          break;
        }
      }
      bufferization::MaterializeInDestinationOp::create(
          b, loc, Type(), result, dest, /*restrict=*/true, /*writable=*/true);
    }
    func::ReturnOp::create(b, loc);
    ret.erase();
    func.setType(b.getFunctionType(entry.getArgumentTypes(), {}));
  }
};
} // namespace
