//===- PlanMemory.cpp - one arena per program, offsets from liveness ------===//
//
// Every tensor a kiln.program holds at run time gets a 64-byte aligned
// offset in one arena: the model inputs and the result of every launch; its
// constants get places in the program's constant pool. The plan is written
// as #kiln.binding attributes on the program and its launches. A reshape aliases its operand's
// bytes; so does a slice that is a view (kiln::sliceViewOffset), from its offset. Buffers are
// placed largest first at the lowest offset that does not overlap a buffer
// whose live range intersects (live from definition to last use; inputs
// from the start, outputs to the end).
//
// A kiln.if or kiln.loop runs other programs (its branches, its body), each
// with its own plan: those are planned first, and the op gets a scratch
// range of the parent's arena, live while it runs, that holds their arenas
// (and, for a loop, its condition between iterations in the last 64 bytes).
// The runtime lays the sub-program's arena out there, so one arena holds
// everything a run touches.
//
//===----------------------------------------------------------------------===//

#include "kiln/Passes/Passes.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNPLANMEMORY
#include "kiln/Passes/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

constexpr uint64_t kAlignment = 64;

uint64_t alignUp(uint64_t v) { return (v + kAlignment - 1) / kAlignment * kAlignment; }

struct Buffer {
  Value value;      // the defining value (input argument or call result)
  uint64_t size;         // bytes taken in the arena (64-byte aligned)
  uint64_t bytes;        // bytes the tensor holds (what bindings name)
  unsigned start, end;  // live range in op indices, inclusive
  uint64_t offset = 0;
};

struct KilnPlanMemoryPass : kiln::impl::KilnPlanMemoryBase<KilnPlanMemoryPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    // Sub-programs before the programs that run them.
    llvm::DenseMap<Operation *, int> state; // 1: being planned, 2: planned
    std::function<LogicalResult(ProgramOp)> visit = [&](ProgramOp program) -> LogicalResult {
      int &s = state[program];
      if (s == 2)
        return success();
      if (s == 1)
        return program.emitOpError("runs itself through kiln.if or kiln.loop");
      s = 1;
      for (Operation &op : program.getBody().front())
        for (StringAttr callee : subPrograms(&op)) {
          auto sub = symbols.lookup<ProgramOp>(callee);
          if (!sub)
            return op.emitOpError() << "runs '" << callee.getValue()
                                    << "', which is not a kiln.program of the module";
          if (failed(visit(sub)))
            return failure();
        }
      if (failed(plan(program)))
        return failure();
      state[program] = 2;
      return success();
    };
    for (auto program : module.getOps<ProgramOp>())
      if (failed(visit(program)))
        return signalPassFailure();
  }

  /// The programs a command runs (a branch or a loop body).
  static SmallVector<StringAttr> subPrograms(Operation *op) {
    if (auto ifOp = dyn_cast<IfOp>(op))
      return {ifOp.getThenBranchAttr().getAttr(), ifOp.getElseBranchAttr().getAttr()};
    if (auto loop = dyn_cast<LoopOp>(op))
      return {loop.getBodyAttr().getAttr()};
    return {};
  }

  /// Bytes of scratch a control-flow command needs: the largest arena of
  /// the programs it runs, and for a loop 64 more for its condition.
  static uint64_t scratchBytes(Operation *op) {
    auto module = op->getParentOfType<ModuleOp>();
    uint64_t bytes = 0;
    for (StringAttr callee : subPrograms(op))
      bytes = std::max<uint64_t>(
          bytes, alignUp(*module.lookupSymbol<ProgramOp>(callee).getArenaSize()));
    return isa<LoopOp>(op) ? bytes + kAlignment : bytes;
  }

  LogicalResult plan(ProgramOp program) {
    Block &block = program.getBody().front();
    // Buffer of every value held in the arena (aliases map to their source).
    llvm::DenseMap<Value, unsigned> bufferOf;
    SmallVector<Buffer> buffers;
    auto addBuffer = [&](Value v, unsigned at) {
      bufferOf[v] = buffers.size();
      uint64_t bytes = storageBytes(cast<RankedTensorType>(v.getType()));
      buffers.push_back({v, alignUp(bytes), bytes, at, at});
    };
    auto use = [&](Value v, unsigned at) {
      auto it = bufferOf.find(v);
      if (it != bufferOf.end())
        buffers[it->second].end = std::max(buffers[it->second].end, at);
    };
    // Constants: one place each in the program's constant pool, in the order
    // the program first uses them (the artifact stores them in that order).
    llvm::DenseMap<Operation *, uint64_t> constantOffset;
    // The scratch buffer of each control-flow command.
    llvm::DenseMap<Operation *, unsigned> scratchOf;
    uint64_t poolSize = 0;

    for (BlockArgument arg : block.getArguments())
      addBuffer(arg, 0);
    unsigned index = 1;
    for (Operation &op : block) {
      for (Value operand : op.getOperands())
        use(operand, index);
      if (isa<ReshapeOp>(op) || sliceViewOffset(&op)) {
        auto it = bufferOf.find(op.getOperand(0));
        if (it != bufferOf.end())
          bufferOf[op.getResult(0)] = it->second;
      } else if (isa<LaunchOp, IfOp, LoopOp>(op)) {
        for (Value result : op.getResults())
          addBuffer(result, index);
        if (!isa<LaunchOp>(op)) {
          scratchOf[&op] = buffers.size();
          uint64_t bytes = scratchBytes(&op);
          buffers.push_back({Value(), bytes, bytes, index, index});
        }
      } else if (auto cst = dyn_cast<ConstantOp>(op)) {
        uint64_t offset = alignUp(poolSize);
        constantOffset[cst] = offset;
        poolSize = offset + storageBytes(cast<RankedTensorType>(cst.getType()));
      } else if (!isa<ReturnOp>(op)) {
        return op.emitOpError("cannot be placed in the program's arena; "
                              "expected only launches, control flow, constants, reshapes and "
                              "slice views");
      }
      ++index;
    }
    // Outputs stay live to the end, inputs from the start.
    auto ret = cast<ReturnOp>(block.getTerminator());
    for (Value result : ret.getOperands())
      use(result, index);

    // Returned buffers: the runtime may hand their bytes to the caller's
    // output buffers and move every binding inside an output's range with
    // it. So no buffer lies across an output's bounds, or a view of it
    // inside the range would move without the rest of its buffer.
    llvm::DenseSet<unsigned> returned;
    for (Value result : ret.getOperands())
      if (auto it = bufferOf.find(result); it != bufferOf.end())
        returned.insert(it->second);

    SmallVector<unsigned> order = llvm::to_vector(llvm::seq<unsigned>(0, buffers.size()));
    llvm::stable_sort(order, [&](unsigned a, unsigned b) {
      return buffers[a].size > buffers[b].size;
    });
    SmallVector<unsigned> placed;
    uint64_t arenaSize = 0;
    for (unsigned i : order) {
      Buffer &buf = buffers[i];
      // Ranges of placed buffers that are live at the same time, which
      // [offset, offset + size) must miss, and of those that are not but
      // are returned (or, for a returned buffer, are not), which it must
      // miss or lie inside (hold, for a returned buffer), in the bytes
      // bindings name, as the runtime compares them.
      SmallVector<std::pair<uint64_t, uint64_t>> busy, bounds;
      for (unsigned j : placed) {
        const Buffer &other = buffers[j];
        if (other.start <= buf.end && buf.start <= other.end)
          busy.push_back({other.offset, other.offset + other.size});
        else if (returned.contains(i) != returned.contains(j))
          bounds.push_back({other.offset, other.offset + other.bytes});
      }
      // The lowest offset that fits: each conflict moves it up, past the
      // range in the way (or, into a returned range it fits, to its start).
      uint64_t offset = 0;
      for (bool moved = true; moved;) {
        moved = false;
        for (auto [lo, hi] : busy)
          if (offset < hi && lo < offset + buf.size) {
            offset = hi;
            moved = true;
          }
        for (auto [lo, hi] : bounds) {
          uint64_t end = offset + buf.bytes;
          if (!(offset < hi && lo < end))
            continue;
          bool fits = returned.contains(i) ? offset <= lo && hi <= end
                                           : lo <= offset && end <= hi;
          if (fits)
            continue;
          offset = !returned.contains(i) && offset < lo && buf.bytes <= hi - lo ? lo : alignUp(hi);
          moved = true;
        }
      }
      buf.offset = offset;
      arenaSize = std::max(arenaSize, offset + buf.size);
      placed.push_back(i);
    }

    // Bindings: where each value lives, by what it is.
    llvm::DenseSet<Value> outputs(ret.getOperands().begin(), ret.getOperands().end());
    MLIRContext *ctx = program.getContext();
    std::function<BindingAttr(Value)> bindingOf = [&](Value value) -> BindingAttr {
      uint64_t size = storageBytes(cast<RankedTensorType>(value.getType()));
      // Views: a reshape at its operand's offset, a slice view
      // (sliceViewOffset) past it.
      Operation *def = value.getDefiningOp();
      std::optional<uint64_t> sliceOffset = def ? sliceViewOffset(def) : std::nullopt;
      if (isa_and_nonnull<ReshapeOp>(def) || sliceOffset) {
        BindingAttr source = bindingOf(def->getOperand(0));
        BindingKind kind = source.getKind();
        if (kind == BindingKind::Arena && outputs.contains(value))
          kind = BindingKind::Output;
        return BindingAttr::get(ctx, kind, source.getOffset() + sliceOffset.value_or(0), size);
      }
      if (auto cst = value.getDefiningOp<ConstantOp>())
        return BindingAttr::get(ctx, BindingKind::Constant, constantOffset.lookup(cst), size);
      uint64_t offset = buffers[bufferOf.lookup(value)].offset;
      if (isa<BlockArgument>(value))
        return BindingAttr::get(ctx, BindingKind::Input, offset, size);
      // A launch result: output when the program returns it (or a view of it).
      bool returned = outputs.contains(value) ||
                      llvm::any_of(value.getUsers(), [&](Operation *user) {
                        return (isa<ReshapeOp>(user) || sliceViewOffset(user)) &&
                               outputs.contains(user->getResult(0));
                      });
      return BindingAttr::get(ctx, returned ? BindingKind::Output : BindingKind::Arena, offset,
                              size);
    };
    auto bindingsOf = [&](ValueRange values) {
      SmallVector<Attribute> attrs;
      for (Value v : values)
        attrs.push_back(bindingOf(v));
      return ArrayAttr::get(ctx, attrs);
    };
    OpBuilder b(program);
    program.setArenaSizeAttr(b.getI64IntegerAttr(arenaSize));
    program.setInputBindingsAttr(bindingsOf(block.getArguments()));
    program.setOutputBindingsAttr(bindingsOf(ret.getOperands()));
    for (auto launch : block.getOps<LaunchOp>()) {
      launch.setOperandBindingsAttr(bindingsOf(launch.getOperands()));
      launch.setResultBindingsAttr(bindingsOf(launch.getResults()));
    }
    for (auto [op, i] : scratchOf) {
      auto scratch = BindingAttr::get(ctx, BindingKind::Arena, buffers[i].offset, buffers[i].size);
      ArrayAttr operands = bindingsOf(op->getOperands()), results = bindingsOf(op->getResults());
      if (auto ifOp = dyn_cast<IfOp>(op)) {
        ifOp.setOperandBindingsAttr(operands);
        ifOp.setResultBindingsAttr(results);
        ifOp.setScratchAttr(scratch);
      } else {
        auto loop = cast<LoopOp>(op);
        loop.setOperandBindingsAttr(operands);
        loop.setResultBindingsAttr(results);
        loop.setScratchAttr(scratch);
      }
    }
    return success();
  }
};
} // namespace
