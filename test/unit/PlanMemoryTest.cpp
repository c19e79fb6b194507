//===- PlanMemoryTest.cpp - property test of the arena planner -----------===//
//
// Random programs (chains of launches reading earlier values, some of them
// reshaped, some returned) go through kiln-plan-memory; the bindings it
// writes must be 64-byte aligned, inside the arena, alias through reshapes,
// and never overlap for two buffers that are live at the same time (the
// dialect's verifier checks their sizes and kinds on top). Live ranges are recomputed
// here from the program, independently of the pass.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <random>

using namespace mlir;

namespace {

struct Buffer {
  int64_t size = 0;
  int64_t offset = -1;
  unsigned def = 0, lastUse = 0;
};

void runRandomProgram(unsigned seed) {
  MLIRContext ctx;
  ctx.loadDialect<kiln::KilnDialect, func::FuncDialect>();
  std::mt19937 rng(seed);
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };

  OpBuilder b(&ctx);
  Location loc = b.getUnknownLoc();
  auto module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module.getBody());
  auto tensorOf = [&](int64_t bytes) { return RankedTensorType::get({bytes}, b.getI8Type()); };

  unsigned numInputs = uniform(1, 3), numCalls = uniform(1, 40);
  SmallVector<Type> inputTypes;
  for (unsigned i = 0; i < numInputs; ++i)
    inputTypes.push_back(tensorOf(uniform(1, 5000)));
  auto main = kiln::ProgramOp::create(b, loc, "main", b.getFunctionType(inputTypes, {}),
                                      nullptr, nullptr, nullptr, nullptr, nullptr);
  Block *entry = &main.getBody().emplaceBlock();
  for (Type type : inputTypes)
    entry->addArgument(type, loc);

  // Values and the buffer each lives in (a reshape shares its operand's).
  SmallVector<Value> values(entry->getArguments().begin(), entry->getArguments().end());
  llvm::DenseMap<Value, unsigned> bufferOf;
  SmallVector<Buffer> buffers;
  for (Value arg : values) {
    bufferOf[arg] = buffers.size();
    buffers.push_back({cast<RankedTensorType>(arg.getType()).getNumElements(), -1, 0, 0});
  }
  unsigned index = 1;
  auto use = [&](Value v, unsigned at) {
    Buffer &buf = buffers[bufferOf[v]];
    buf.lastUse = std::max(buf.lastUse, at);
  };
  for (unsigned c = 0; c < numCalls; ++c, ++index) {
    OpBuilder body = OpBuilder::atBlockEnd(entry);
    if (uniform(0, 4) == 0) {
      // A reshape of an earlier value: a view of the same bytes.
      Value source = values[uniform(0, values.size() - 1)];
      int64_t n = cast<RankedTensorType>(source.getType()).getNumElements();
      auto reshaped = kiln::ReshapeOp::create(body, loc,
                                              RankedTensorType::get({1, n}, b.getI8Type()), source);
      use(source, index);
      bufferOf[reshaped] = bufferOf[source];
      values.push_back(reshaped);
      continue;
    }
    SmallVector<Value> operands;
    for (int k = uniform(1, 3); k > 0; --k) {
      Value v = values[uniform(0, values.size() - 1)];
      operands.push_back(v);
      use(v, index);
    }
    int64_t size = uniform(1, 20000);
    std::string name = "kernel" + std::to_string(c);
    OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
    auto callee = func::FuncOp::create(top, loc, name,
                                       b.getFunctionType(TypeRange(ValueRange(operands)), {tensorOf(size)}));
    callee.setPrivate();
    auto call = kiln::LaunchOp::create(body, loc, TypeRange{tensorOf(size)},
                                       FlatSymbolRefAttr::get(callee.getSymNameAttr()), operands,
                                       nullptr, nullptr);
    bufferOf[call.getResult(0)] = buffers.size();
    buffers.push_back({size, -1, index, index});
    values.push_back(call.getResult(0));
  }
  // Return a few values: they stay live to the end.
  SmallVector<Value> results;
  for (int k = uniform(1, 3); k > 0; --k)
    results.push_back(values[uniform(0, values.size() - 1)]);
  for (Value v : results)
    use(v, index);
  OpBuilder end = OpBuilder::atBlockEnd(entry);
  kiln::ReturnOp::create(end, loc, results);
  main.setFunctionType(b.getFunctionType(inputTypes, TypeRange(ValueRange(results))));

  PassManager pm(&ctx);
  pm.addPass(kiln::createKilnPlanMemory());
  ASSERT_TRUE(succeeded(pm.run(module))) << "seed " << seed;

  ASSERT_TRUE(succeeded(verify(module))) << "seed " << seed;
  ASSERT_TRUE(main.isPlanned()) << "seed " << seed;
  int64_t arenaSize = *main.getArenaSize();
  for (auto [i, attr] : llvm::enumerate(main.getInputBindingsAttr()))
    buffers[bufferOf[entry->getArgument(i)]].offset = cast<kiln::BindingAttr>(attr).getOffset();
  for (auto launch : entry->getOps<kiln::LaunchOp>()) {
    buffers[bufferOf[launch.getResult(0)]].offset =
        cast<kiln::BindingAttr>((launch.getResultBindingsAttr())[0]).getOffset();
  }
  // Every operand is bound where its buffer is (reshapes alias).
  for (auto launch : entry->getOps<kiln::LaunchOp>())
    for (auto [value, attr] : llvm::zip(launch.getOperands(), launch.getOperandBindingsAttr()))
      EXPECT_EQ(buffers[bufferOf[value]].offset,
                static_cast<int64_t>(cast<kiln::BindingAttr>(attr).getOffset()))
          << "seed " << seed << ": an operand is not bound where its buffer lives";

  int64_t total = 0;
  for (const Buffer &buf : buffers) {
    ASSERT_GE(buf.offset, 0) << "seed " << seed << ": a buffer has no offset";
    EXPECT_EQ(buf.offset % 64, 0) << "seed " << seed;
    EXPECT_LE(buf.offset + buf.size, arenaSize) << "seed " << seed;
    total += (buf.size + 63) / 64 * 64;
  }
  EXPECT_LE(arenaSize, total) << "seed " << seed << ": no reuse at all would be smaller";
  for (size_t i = 0; i < buffers.size(); ++i)
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      const Buffer &x = buffers[i], &y = buffers[j];
      bool liveTogether = x.def <= y.lastUse && y.def <= x.lastUse;
      bool overlap = x.offset < y.offset + y.size && y.offset < x.offset + x.size;
      EXPECT_FALSE(liveTogether && overlap)
          << "seed " << seed << ": buffers " << i << " [" << x.offset << ", +" << x.size
          << ") live " << x.def << ".." << x.lastUse << " and " << j << " [" << y.offset
          << ", +" << y.size << ") live " << y.def << ".." << y.lastUse << " overlap";
    }
  // No buffer lies across a returned buffer's bounds (the runtime moves
  // what lies inside an output's range to the caller's buffer, views too).
  for (Value result : results) {
    const Buffer &out = buffers[bufferOf[result]];
    for (const Buffer &buf : buffers) {
      bool overlap = buf.offset < out.offset + out.size && out.offset < buf.offset + buf.size;
      bool inside = out.offset <= buf.offset && buf.offset + buf.size <= out.offset + out.size;
      EXPECT_TRUE(!overlap || inside)
          << "seed " << seed << ": a buffer [" << buf.offset << ", +" << buf.size
          << ") lies across the bounds of a returned one [" << out.offset << ", +" << out.size
          << ")";
    }
  }
}

TEST(PlanMemory, RandomProgramsNeverShareLiveBytes) {
  for (unsigned seed = 0; seed < 300; ++seed)
    runRandomProgram(seed);
}

} // namespace
