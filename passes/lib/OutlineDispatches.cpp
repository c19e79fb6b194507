//===- OutlineDispatches.cpp - kiln.dispatch regions -> functions ---------===//
//
// Each dispatch region becomes a function of its own (the kernel's body, to
// be lowered and compiled per target) and its place in @main becomes a call.
// @main is then the program: calls, constants and reshapes only.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "mlir/IR/SymbolTable.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNOUTLINEDISPATCHES
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

struct KilnOutlineDispatchesPass
    : kiln::impl::KilnOutlineDispatchesBase<KilnOutlineDispatchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    SmallVector<DispatchOp> dispatches;
    module.walk([&](DispatchOp op) { dispatches.push_back(op); });

    for (DispatchOp dispatch : dispatches) {
      auto parent = dispatch->getParentOfType<func::FuncOp>();
      OpBuilder builder(parent);
      auto type = builder.getFunctionType(dispatch.getInputs().getTypes(),
                                          dispatch.getResultTypes());
      auto func = func::FuncOp::create(builder, dispatch.getLoc(),
                                       dispatch.getName(), type);
      func->setAttr(kDispatchAttr, builder.getUnitAttr());
      func.getBody().takeBody(dispatch.getBody());
      auto yield = cast<YieldOp>(func.getBody().front().getTerminator());
      builder.setInsertionPoint(yield);
      func::ReturnOp::create(builder, yield.getLoc(), yield.getValues());
      yield.erase();
      // insert() renames on a clash and returns the final name.
      StringAttr name = symbols.insert(func);

      builder.setInsertionPoint(dispatch);
      auto call = func::CallOp::create(builder, dispatch.getLoc(), func.getFunctionType().getResults(),
                                       FlatSymbolRefAttr::get(name), dispatch.getInputs());
      dispatch.replaceAllUsesWith(call.getResults());
      dispatch.erase();
      parent->setAttr("kiln.program", builder.getUnitAttr());
    }
    // A model of views only (reshapes of its inputs, constants) has no
    // dispatch; its entry is still the program.
    if (auto main = module.lookupSymbol<func::FuncOp>("main"))
      if (!main->hasAttr(kDispatchAttr))
        main->setAttr("kiln.program", UnitAttr::get(module.getContext()));
  }
};
} // namespace
