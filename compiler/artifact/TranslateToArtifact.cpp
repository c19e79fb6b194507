//===- TranslateToArtifact.cpp - final module -> .kiln --------------------===//
//
// Reads only the IR: programs (inputs, outputs, launches and their
// bindings; kiln.if and kiln.loop become commands around the commands of the
// private programs they run, laid out in their scratch), executables (kernel
// order, names of the fused ONNX nodes, FLOPs and bytes from the exports)
// and binaries (code objects and their kernel tables), and hands them to the
// artifact writer.
//
//===----------------------------------------------------------------------===//

#include "artifact/TranslateToArtifact.h"
#include "artifact/ArtifactWriter.h"
#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"

#include <unordered_map>

using namespace mlir;

namespace kiln::artifact {
namespace {

std::optional<DType> dtypeOf(Type type) {
  if (type.isF32()) return DType::F32;
  if (type.isF16()) return DType::F16;
  if (type.isBF16()) return DType::BF16;
  if (type.isF64()) return DType::F64;
  if (type.isInteger(1)) return DType::Bool;
  if (type.isUnsignedInteger(8)) return DType::U8;
  if (type.isUnsignedInteger(16)) return DType::U16;
  if (type.isUnsignedInteger(32)) return DType::U32;
  if (type.isUnsignedInteger(64)) return DType::U64;
  if (type.isInteger(8)) return DType::I8;
  if (type.isInteger(16)) return DType::I16;
  if (type.isInteger(32)) return DType::I32;
  if (type.isInteger(64)) return DType::I64;
  return std::nullopt;
}

/// The ONNX node names a location carries (fused locations list several).
void collectNames(Location loc, std::vector<std::string> &names) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    names.push_back(name.getName().str());
  } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      collectNames(inner, names);
  } else if (auto callsite = dyn_cast<CallSiteLoc>(loc)) {
    collectNames(callsite.getCallee(), names);
  }
}

/// The bytes of a dense_resource blob (code objects, weights).
std::optional<ArrayRef<char>> blobBytes(ElementsAttr value) {
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value))
    if (AsmResourceBlob *blob = resource.getRawHandle().getBlob())
      return blob->getData();
  return std::nullopt;
}

class Translation {
public:
  Translation(ModuleOp module, const TranslateOptions &options) : module(module) {
    writer.setProducer(options.producer);
    writer.setOptions(options.commandLine);
    writer.setModel(options.model);
    if (auto pinned = module->getAttrOfType<DictionaryAttr>(kPinnedInputsAttr))
      for (NamedAttribute entry : pinned)
        writer.addPinnedInput(entry.getName().str(),
                              cast<StringAttr>(entry.getValue()).str());
  }

  LogicalResult run(const std::string &path) {
    for (auto executable : module.getOps<ExecutableOp>()) {
      kernelIndex[executable.getSymName()] = executables.size();
      executables.push_back(executable);
    }
    // Public programs are the artifact's; private ones are branches and
    // loop bodies, laid out inside the programs that run them.
    SmallVector<ProgramOp> programs;
    for (ProgramOp program : module.getOps<ProgramOp>())
      if (!program.isPrivate())
        programs.push_back(program);
    if (programs.empty())
      return emitError(module.getLoc()) << "the module has no public kiln.program";
    if (failed(tensorsOf(programs.front(), modelInputs, modelOutputs)))
      return failure();
    for (TensorDesc &input : modelInputs)
      writer.addInput(input);
    for (TensorDesc &output : modelOutputs)
      writer.addOutput(output);
    for (ProgramOp program : programs)
      if (failed(addProgram(program)))
        return failure();
    for (auto binary : module.getOps<BinaryOp>())
      if (failed(addBinary(binary)))
        return failure();
    std::string error;
    if (!writer.writeFile(path, error))
      return emitError(module.getLoc()) << error;
    return success();
  }

private:
  /// The inputs and outputs of a public program, as the artifact records
  /// them.
  LogicalResult tensorsOf(ProgramOp program, std::vector<TensorDesc> &inputs,
                          std::vector<TensorDesc> &outputs) {
    auto desc = [&](Type type, StringRef name, Location loc) -> FailureOr<TensorDesc> {
      auto tensor = cast<RankedTensorType>(type);
      auto dtype = dtypeOf(tensor.getElementType());
      if (!dtype)
        return emitError(loc) << "tensor '" << name << "' has element type "
                              << tensor.getElementType() << ", which artifacts cannot carry";
      return TensorDesc{name.str(), *dtype,
                        std::vector<int64_t>(tensor.getShape().begin(), tensor.getShape().end())};
    };
    for (auto [i, type] : llvm::enumerate(program.getArgumentTypes())) {
      auto name = program.getArgAttrOfType<StringAttr>(i, kOnnxNameAttr);
      auto d = desc(type, name ? name.getValue() : "input" + std::to_string(i), program.getLoc());
      if (failed(d))
        return failure();
      inputs.push_back(std::move(*d));
    }
    for (auto [i, type] : llvm::enumerate(program.getResultTypes())) {
      if (isExtent(program, i))
        continue;
      auto name = program.getResultAttrOfType<StringAttr>(i, kOnnxNameAttr);
      auto d = desc(type, name ? name.getValue() : "output" + std::to_string(i), program.getLoc());
      if (failed(d))
        return failure();
      if (auto extent = program.getResultAttrOfType<DenseI64ArrayAttr>(i, kExtentAttr))
        d->extentAxis = int32_t(extent[0]);
      outputs.push_back(std::move(*d));
    }
    return success();
  }

  /// Whether result `i` of `program` is the extent of another (the verifier
  /// checked the attributes).
  static bool isExtent(ProgramOp program, unsigned i) {
    for (unsigned r = 0; r < program.getResultTypes().size(); ++r)
      if (auto extent = program.getResultAttrOfType<DenseI64ArrayAttr>(r, kExtentAttr))
        if (extent[1] == int64_t(i))
          return true;
    return false;
  }

  /// Stores the program's constants at the places its plan gave them in
  /// its pool (the pool starts at the next aligned offset of the section),
  /// once per program; returns where the pool starts.
  /// Where a program's constants are stored: the offset in the constants
  /// section of each place kiln-plan-memory gave one in the program's pool.
  /// The writer stores equal constants once, so programs (batch buckets,
  /// branches) and constants within one share their bytes.
  using Pool = llvm::DenseMap<uint64_t, uint64_t>;

  FailureOr<const Pool *> constantsOf(ProgramOp program) {
    auto known = pools.find(program);
    if (known != pools.end())
      return &known->second;
    Pool pool;
    // kiln-plan-memory's layout: each constant at the next 64-byte aligned
    // place, in program order.
    uint64_t planned = 0;
    for (auto cst : program.getBody().front().getOps<ConstantOp>()) {
      auto type = cast<RankedTensorType>(cst.getType());
      uint64_t size = storageBytes(type);
      planned = (planned + 63) / 64 * 64;
      uint64_t offset;
      if (std::optional<ArrayRef<char>> raw = rawConstantBytes(cst.getValue())) {
        if (raw->size() != size)
          return cst.emitOpError("constant data has ") << raw->size()
                 << " bytes, its type needs " << size;
        offset = writer.addConstant(raw->data(), size);
      } else if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue())) {
        std::string bytes;
        bytes.reserve(size);
        if (type.getElementType().isInteger(1)) {
          for (bool v : dense.getValues<bool>())
            bytes.push_back(v ? 1 : 0);
        } else {
          ArrayRef<char> one = dense.getRawData();
          for (int64_t i = 0; i < type.getNumElements(); ++i)
            bytes.append(one.data(), one.size());
        }
        offset = writer.addConstantCopy(bytes.data(), bytes.size());
      } else {
        return cst.emitOpError("weight blob is missing, or the constant kind cannot "
                               "be stored in an artifact");
      }
      storedAt[cst] = planned;
      pool[planned] = offset;
      planned += size;
    }
    return &(pools[program] = std::move(pool));
  }

  static BindingDesc place(Attribute attr, uint64_t arenaBase, const Pool &pool) {
    auto binding = cast<BindingAttr>(attr);
    if (binding.getKind() == kiln::BindingKind::Constant)
      return {BindingDesc::Constant, pool.lookup(binding.getOffset()), binding.getSize()};
    return {BindingDesc::Arena, arenaBase + binding.getOffset(), binding.getSize()};
  }

  LogicalResult checkConstant(ProgramOp program, Value value, Attribute attr) {
    auto binding = cast<BindingAttr>(attr);
    if (binding.getKind() != kiln::BindingKind::Constant)
      return success();
    Value source = value;
    while (auto reshape = source.getDefiningOp<ReshapeOp>())
      source = reshape.getInput();
    auto cst = source.getDefiningOp<ConstantOp>();
    auto stored = cst ? storedAt.find(cst) : storedAt.end();
    if (stored == storedAt.end() || stored->second != binding.getOffset())
      return program.emitOpError("constant binding at ")
             << binding.getOffset() << " does not match the stored constant pool";
    return success();
  }

  LogicalResult addProgram(ProgramOp program) {
    if (!program.isPlanned())
      return program.emitOpError("has no memory plan (run kiln-plan-memory)");
    FailureOr<const Pool *> pool = constantsOf(program);
    if (failed(pool))
      return failure();
    ProgramDesc desc;
    desc.name = program.getSymName().str();
    desc.arenaSize = *program.getArenaSize();
    if (auto batch = program->getAttrOfType<IntegerAttr>(kBatchSizeAttr))
      desc.batchSize = uint32_t(batch.getInt());
    // A batch bucket's shapes differ from the first program's (the model's).
    if (failed(tensorsOf(program, desc.inputTensors, desc.outputTensors)))
      return failure();
    auto sameShapes = [](const std::vector<TensorDesc> &a, const std::vector<TensorDesc> &b) {
      return llvm::equal(a, b, [](const TensorDesc &x, const TensorDesc &y) {
        return x.shape == y.shape;
      });
    };
    if (sameShapes(desc.inputTensors, modelInputs) &&
        sameShapes(desc.outputTensors, modelOutputs)) {
      desc.inputTensors.clear();
      desc.outputTensors.clear();
    }
    for (Attribute attr : program.getInputBindingsAttr())
      desc.inputs.push_back(place(attr, 0, **pool));
    auto ret = cast<ReturnOp>(program.getBody().front().getTerminator());
    for (auto [i, value, attr] :
         llvm::enumerate(ret.getValues(), program.getOutputBindingsAttr())) {
      if (failed(checkConstant(program, value, attr)))
        return failure();
      if (isExtent(program, i))
        continue;
      if (auto extent = program.getResultAttrOfType<DenseI64ArrayAttr>(i, kExtentAttr))
        desc.extents.push_back(
            {uint32_t(desc.outputs.size()),
             place(program.getOutputBindingsAttr()[extent[1]], 0, **pool)});
      desc.outputs.push_back(place(attr, 0, **pool));
    }
    bool controlFlow = false;
    program.walk([&](Operation *op) { controlFlow |= isa<IfOp, LoopOp>(op); });
    if (failed(emitBody(program, 0, **pool, desc)))
      return failure();
    if (!controlFlow)
      desc.commands.clear(); // the dispatches in order say the same
    writer.addProgram(std::move(desc));
    return success();
  }

  /// The commands of `program` (the artifact program itself, or a branch or
  /// loop body laid out `arenaBase` bytes into its arena) appended to
  /// `desc`: a Dispatch per launch, and the copies, jumps and counters of
  /// its kiln.if and kiln.loop ops around their sub-programs' commands.
  LogicalResult emitBody(ProgramOp program, uint64_t arenaBase, const Pool &pool,
                         ProgramDesc &desc) {
    auto command = [&](CommandOp op) -> CommandDesc & {
      desc.commands.push_back({});
      desc.commands.back().op = op;
      return desc.commands.back();
    };
    auto copy = [&](const BindingDesc &src, const BindingDesc &dst) {
      if (src.size == 0)
        return;
      CommandDesc &c = command(CommandOp::Copy);
      c.src = src;
      c.dst = dst;
    };
    auto places = [&](ArrayAttr attrs, uint64_t base, const Pool &constants) {
      std::vector<BindingDesc> list;
      for (Attribute attr : attrs)
        list.push_back(place(attr, base, constants));
      return list;
    };
    // A sub-program run in `scratch`: its inputs copied in from `operands`,
    // its commands, its outputs copied out to `results`.
    auto call = [&](Operation *op, FlatSymbolRefAttr name, ArrayRef<BindingDesc> operands,
                    ArrayRef<BindingDesc> results, uint64_t scratch) -> LogicalResult {
      FailureOr<std::pair<ProgramOp, const Pool *>> sub = subProgram(op, name);
      if (failed(sub))
        return failure();
      auto [branch, subPoolPtr] = *sub;
      const Pool &subPool = *subPoolPtr;
      for (auto [src, dst] :
           llvm::zip(operands, places(branch.getInputBindingsAttr(), scratch, subPool)))
        copy(src, dst);
      if (failed(emitNested(op, branch, scratch, subPool, desc)))
        return failure();
      for (auto [src, dst] :
           llvm::zip(places(branch.getOutputBindingsAttr(), scratch, subPool), results))
        copy(src, dst);
      return success();
    };

    for (Operation &op : program.getBody().front()) {
      if (auto launch = dyn_cast<LaunchOp>(op)) {
        if (failed(addDispatch(program, launch, arenaBase, pool, desc)))
          return failure();
        command(CommandOp::Dispatch).index = uint32_t(desc.dispatches.size() - 1);
        continue;
      }
      if (isa<IfOp, LoopOp>(op))
        for (auto [value, attr] : llvm::zip(op.getOperands(),
                                            op.getAttrOfType<ArrayAttr>("operand_bindings")))
          if (failed(checkConstant(program, value, attr)))
            return failure();
      if (auto ifOp = dyn_cast<IfOp>(op)) {
        std::vector<BindingDesc> operands =
            places(ifOp.getOperandBindingsAttr(), arenaBase, pool);
        std::vector<BindingDesc> results = places(ifOp.getResultBindingsAttr(), arenaBase, pool);
        uint64_t scratch = arenaBase + ifOp.getScratchAttr().getOffset();
        size_t thenCount = ifOp.getThenOperands().size();
        size_t skip = desc.commands.size();
        command(CommandOp::JumpIfFalse).src = operands[0];
        if (failed(call(ifOp, ifOp.getThenBranchAttr(),
                        ArrayRef(operands).slice(1, thenCount), results, scratch)))
          return failure();
        size_t done = desc.commands.size();
        command(CommandOp::Jump);
        desc.commands[skip].index = uint32_t(desc.commands.size());
        if (failed(call(ifOp, ifOp.getElseBranchAttr(),
                        ArrayRef(operands).drop_front(1 + thenCount), results, scratch)))
          return failure();
        desc.commands[done].index = uint32_t(desc.commands.size());
        continue;
      }
      if (auto loop = dyn_cast<LoopOp>(op)) {
        std::vector<BindingDesc> operands = places(loop.getOperandBindingsAttr(), arenaBase, pool);
        std::vector<BindingDesc> results = places(loop.getResultBindingsAttr(), arenaBase, pool);
        BindingAttr scratchAttr = loop.getScratchAttr();
        uint64_t scratch = arenaBase + scratchAttr.getOffset();
        BindingDesc cond{BindingDesc::Arena, scratch + scratchAttr.getSize() - 64, 1};
        size_t carried = loop.getInit().size();
        uint32_t counter = desc.counters++;
        FailureOr<std::pair<ProgramOp, const Pool *>> sub = subProgram(loop, loop.getBodyAttr());
        if (failed(sub))
          return failure();
        auto [body, bodyPoolPtr] = *sub;
        const Pool &bodyPool = *bodyPoolPtr;
        std::vector<BindingDesc> in = places(body.getInputBindingsAttr(), scratch, bodyPool);
        std::vector<BindingDesc> out = places(body.getOutputBindingsAttr(), scratch, bodyPool);
        // The state: the condition in the scratch's last bytes, the carried
        // values in the loop's results.
        copy(operands[1], cond);
        for (size_t k = 0; k < carried; ++k)
          copy(operands[2 + k], results[k]);
        command(CommandOp::CounterReset).counter = counter;
        uint32_t top = uint32_t(desc.commands.size());
        size_t exitCount = desc.commands.size();
        CommandDesc &atLimit = command(CommandOp::JumpIfCounterAtLeast);
        atLimit.counter = counter;
        atLimit.src = operands[0];
        size_t exitCond = desc.commands.size();
        command(CommandOp::JumpIfFalse).src = cond;
        CommandDesc &store = command(CommandOp::CounterStore);
        store.counter = counter;
        store.dst = in[0];
        copy(cond, in[1]);
        for (size_t k = 0; k < carried; ++k)
          copy(results[k], in[2 + k]);
        size_t scanInputs = loop.getScanInputs().size();
        for (size_t j = 2 + carried; j < 2 + carried + scanInputs; ++j) {
          if (in[j].size == 0)
            continue;
          CommandDesc &row = command(CommandOp::CopyFromRow);
          row.counter = counter;
          row.src = operands[j];
          row.dst = in[j];
        }
        for (size_t j = 2 + carried + scanInputs; j < in.size(); ++j)
          copy(operands[j], in[j]);
        if (failed(emitNested(loop, body, scratch, bodyPool, desc)))
          return failure();
        copy(out[0], cond);
        for (size_t k = 0; k < carried; ++k)
          copy(out[1 + k], results[k]);
        for (size_t s = 1 + carried; s < out.size(); ++s) {
          if (out[s].size == 0)
            continue;
          CommandDesc &row = command(CommandOp::CopyToRow);
          row.counter = counter;
          row.src = out[s];
          row.dst = results[s - 1];
        }
        command(CommandOp::CounterIncrement).counter = counter;
        command(CommandOp::Jump).index = top;
        desc.commands[exitCount].index = uint32_t(desc.commands.size());
        desc.commands[exitCond].index = uint32_t(desc.commands.size());
        continue;
      }
    }
    return success();
  }

  /// The planned program `name` that control-flow op `op` runs, and where
  /// its constants start.
  FailureOr<std::pair<ProgramOp, const Pool *>> subProgram(Operation *op, FlatSymbolRefAttr name) {
    auto sub = module.lookupSymbol<ProgramOp>(name);
    if (!sub || !sub.isPlanned())
      return op->emitOpError() << "runs '" << name.getValue()
                               << "', which is not a planned kiln.program";
    FailureOr<const Pool *> pool = constantsOf(sub);
    if (failed(pool))
      return failure();
    return std::make_pair(sub, *pool);
  }

  /// emitBody for a sub-program `op` runs, at most kMaxDepth deep.
  LogicalResult emitNested(Operation *op, ProgramOp sub, uint64_t arenaBase, const Pool &pool,
                           ProgramDesc &desc) {
    if (depth == kMaxDepth)
      return op->emitOpError() << "nests control flow more than " << kMaxDepth << " deep";
    ++depth;
    LogicalResult result = emitBody(sub, arenaBase, pool, desc);
    --depth;
    return result;
  }

  LogicalResult addDispatch(ProgramOp program, LaunchOp launch, uint64_t arenaBase,
                            const Pool &pool, ProgramDesc &desc) {
    auto kernel = kernelIndex.find(launch.getCallee());
    if (kernel == kernelIndex.end())
      return launch.emitOpError("launches '") << launch.getCallee()
             << "', which is not a kiln.executable of the module";
    ExecutableOp executable = executables[kernel->second];
    DispatchDesc dispatch;
    dispatch.kernel = kernel->second;
    for (auto [value, attr] : llvm::zip(launch.getOperands(), launch.getOperandBindingsAttr())) {
      if (failed(checkConstant(program, value, attr)))
        return failure();
      dispatch.bindings.push_back(place(attr, arenaBase, pool));
    }
    for (Attribute attr : launch.getResultBindingsAttr())
      dispatch.bindings.push_back(place(attr, arenaBase, pool));
    // Cost: the first variant's export (every variant computes the same).
    auto variants = executable.getBlock().getOps<VariantOp>();
    if (!variants.empty()) {
      ExportOp exp = (*variants.begin()).getExport();
      dispatch.flops = exp.getFlops();
      dispatch.bytes = exp.getBytes();
    }
    std::vector<std::string> names;
    collectNames(executable.getLoc(), names);
    dispatch.ops = llvm::join(names, ",");
    desc.dispatches.push_back(std::move(dispatch));
    return success();
  }

  LogicalResult addBinary(BinaryOp binary) {
    StringRef target = binary.getTarget().getName();
    StringRef variantTarget = target;
    variantTarget.consume_front("emu:");
    std::optional<ArrayRef<char>> bytes = blobBytes(binary.getData());
    if (!bytes)
      return binary.emitOpError("has no code object bytes");
    CodeObjectDesc object;
    object.target = target.str();
    object.triple = binary.getTriple().str();
    object.cpu = binary.getCpu().str();
    object.features = binary.getFeatures().str();
    object.format = binary.getFormat().str();
    object.bytes.assign(bytes->data(), bytes->size());
    if (binary.getKernels().size() != executables.size())
      return binary.emitOpError() << "has " << binary.getKernels().size() << " kernels for "
                                  << executables.size() << " executables";
    for (auto [executable, symbol, lds] :
         llvm::zip(executables, binary.getKernels(), binary.getKernelLds())) {
      VariantOp variant = executable.lookupVariant(variantTarget);
      if (!variant)
        return binary.emitOpError() << "is for " << target << ", but executable '"
                                    << executable.getSymName() << "' has no variant for it";
      ExportOp exp = variant.getExport();
      KernelDesc kernel;
      kernel.name = executable.getSymName().str();
      kernel.symbol = cast<StringAttr>(symbol).str();
      kernel.workgroupCount = exp.getWorkgroups();
      if (variant.getTarget().isGfx())
        kernel.workgroupSize = {static_cast<uint32_t>(exp.getWorkgroupSize()), 1, 1};
      kernel.ldsBytes = static_cast<uint32_t>(lds);
      object.kernels.push_back(std::move(kernel));
    }
    writer.addCodeObject(std::move(object));
    return success();
  }

  ModuleOp module;
  ArtifactWriter writer;
  std::vector<ExecutableOp> executables;
  llvm::StringMap<unsigned> kernelIndex;
  // Each program's constant pool (once, however often it is run; nodes stay
  // put, so a pool outlives the insertion of a sub-program's) and where each
  // constant was planned in its pool.
  std::unordered_map<Operation *, Pool> pools;
  // The first public program's inputs and outputs: the model's.
  std::vector<TensorDesc> modelInputs, modelOutputs;
  llvm::DenseMap<Operation *, uint64_t> storedAt;
  // Sub-programs nest at most this deep (the verifier rules out cycles only
  // through the symbol table; this also bounds the flattened size).
  static constexpr unsigned kMaxDepth = 64;
  unsigned depth = 0;
};

} // namespace

LogicalResult translateToArtifact(ModuleOp module, const TranslateOptions &options,
                                  const std::string &path) {
  return Translation(module, options).run(path);
}

} // namespace kiln::artifact
