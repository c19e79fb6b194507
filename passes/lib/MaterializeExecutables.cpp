//===- MaterializeExecutables.cpp - dispatch functions -> executables -----===//
//
// Each dispatch function becomes a kiln.executable of the same name holding
// one kiln.variant per target: the target's own copy of the function in a
// builtin.module, and a kiln.export naming it, with the bytes the dispatch
// moves (from its signature) and, until the target's pipeline fills them
// in, one workgroup of one thread, no LDS and no FLOPs. kiln.launch then
// names the executable.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "mlir/IR/BuiltinOps.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNMATERIALIZEEXECUTABLES
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

struct KilnMaterializeExecutablesPass
    : kiln::impl::KilnMaterializeExecutablesBase<KilnMaterializeExecutablesPass> {
  using KilnMaterializeExecutablesBase::KilnMaterializeExecutablesBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    SmallVector<TargetAttr> targetAttrs;
    for (const std::string &name : targets) {
      DictionaryAttr options;
      if (StringRef(name).starts_with("gfx") && precision != "f32")
        options = DictionaryAttr::get(
            ctx, {NamedAttribute(StringAttr::get(ctx, "precision"), StringAttr::get(ctx, precision))});
      auto attr = TargetAttr::getChecked([&] { return module.emitError(); }, ctx, StringRef(name), options);
      if (!attr)
        return signalPassFailure();
      targetAttrs.push_back(attr);
    }
    if (targetAttrs.empty()) {
      module.emitError("kiln-materialize-executables needs at least one target");
      return signalPassFailure();
    }

    for (auto func : llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (!func->hasAttr(kDispatchAttr))
        continue;
      // Every argument is read whole and every result written, but a table
      // only gathers from (an embedding) is read where its rows are
      // selected: no more than the gathers' results.
      uint64_t bytes = 0;
      for (Type type : func.getResultTypes())
        bytes += storageBytes(cast<RankedTensorType>(type));
      for (BlockArgument arg : func.getArguments()) {
        uint64_t whole = storageBytes(cast<RankedTensorType>(arg.getType()));
        uint64_t gathered = 0;
        bool onlyGathered = !arg.use_empty();
        for (OpOperand &use : arg.getUses()) {
          auto gather = dyn_cast<GatherOp>(use.getOwner());
          if (!gather || use.getOperandNumber() != 0) {
            onlyGathered = false;
            break;
          }
          gathered += storageBytes(gather.getType());
        }
        bytes += onlyGathered ? std::min(whole, gathered) : whole;
      }
      OpBuilder b(func);
      auto executable = ExecutableOp::create(b, func.getLoc(), func.getSymName());
      executable.getBody().emplaceBlock();
      b.setInsertionPointToStart(&executable.getBlock());
      for (TargetAttr target : targetAttrs) {
        auto variant = VariantOp::create(b, func.getLoc(), target.getName(), target);
        variant.getBody().emplaceBlock();
        OpBuilder vb = OpBuilder::atBlockBegin(&variant.getBlock());
        ExportOp::create(vb, func.getLoc(), FlatSymbolRefAttr::get(func.getSymNameAttr()),
                         /*workgroups=*/vb.getI64IntegerAttr(1),
                         /*workgroup_size=*/vb.getI64IntegerAttr(1), /*lds=*/vb.getI64IntegerAttr(0),
                         /*flops=*/vb.getI64IntegerAttr(0),
                         vb.getI64IntegerAttr(static_cast<int64_t>(bytes)));
        auto inner = ModuleOp::create(vb, func.getLoc());
        inner.getBody()->push_back(func.clone());
      }
      func.erase();
    }
  }
};
} // namespace
