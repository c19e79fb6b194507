//===- OutlineDispatches.cpp - kiln.dispatch regions -> functions ---------===//
//
// Each dispatch region becomes a function of its own (the kernel's body, to
// be lowered and compiled per target) and its place in @main a kiln.launch;
// @main becomes a kiln.program (launches, constants and reshapes only),
// still without a memory plan.
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

/// `func` (the model entry, its dispatches outlined) as a kiln.program with
/// the same name, signature and argument/result attributes.
void convertToProgram(func::FuncOp func) {
  OpBuilder builder(func);
  auto program = ProgramOp::create(builder, func.getLoc(), func.getSymName(),
                                   func.getFunctionType(), func.getArgAttrsAttr(),
                                   func.getResAttrsAttr(), /*arena_size=*/nullptr,
                                   /*input_bindings=*/nullptr, /*output_bindings=*/nullptr);
  // Branches and loop bodies stay private: only control flow runs them.
  SymbolTable::setSymbolVisibility(program, SymbolTable::getSymbolVisibility(func));
  program.getBody().takeBody(func.getBody());
  Block &block = program.getBody().front();
  auto ret = cast<func::ReturnOp>(block.getTerminator());
  builder.setInsertionPoint(ret);
  ReturnOp::create(builder, ret.getLoc(), ret.getOperands());
  ret.erase();
  func.erase();
}

struct KilnOutlineDispatchesPass
    : kiln::impl::KilnOutlineDispatchesBase<KilnOutlineDispatchesPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // The model entries (every function the importer made: @main, and the
    // private branches and bodies its kiln.if and kiln.loop run).
    SmallVector<func::FuncOp> entries;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func->hasAttr(kDispatchAttr) && !func.isExternal())
        entries.push_back(func);
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
      auto launch = LaunchOp::create(builder, dispatch.getLoc(), func.getFunctionType().getResults(),
                                     FlatSymbolRefAttr::get(name), dispatch.getInputs(),
                                     /*operand_bindings=*/nullptr, /*result_bindings=*/nullptr);
      dispatch.replaceAllUsesWith(launch.getResults());
      dispatch.erase();
    }
    // The entries become programs (a model of views only, reshapes of its
    // inputs and constants, is a program without launches).
    for (func::FuncOp entry : entries)
      convertToProgram(entry);
  }
};
} // namespace
