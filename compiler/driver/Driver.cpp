//===- Driver.cpp - the kiln-compile pipeline -----------------------------===//

#include "compiler/driver/Driver.h"
#include "compiler/artifact/ArtifactWriter.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Path.h"

using namespace mlir;

namespace kiln::driver {

void registerCompilerDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<KilnDialect>();
}

namespace {

LogicalResult runPasses(ModuleOp module, llvm::function_ref<void(OpPassManager &)> build) {
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  build(pm);
  return pm.run(module);
}

void buildGraphPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createKilnFoldWeightLayouts());
  pm.addNestedPass<func::FuncOp>(createKilnFormDispatches());
  pm.addPass(createKilnOutlineDispatches());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createKilnPlanMemory());
}

std::optional<artifact::DType> dtypeOf(Type type) {
  using artifact::DType;
  if (type.isF32()) return DType::F32;
  if (type.isF16()) return DType::F16;
  if (type.isBF16()) return DType::BF16;
  if (type.isF64()) return DType::F64;
  if (type.isInteger(1)) return DType::Bool;
  if (type.isUnsignedInteger(8)) return DType::U8;
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

/// Estimated flops of a dispatch: the iteration space of each linalg op,
/// times two for contractions (multiply and add).
uint64_t estimateFlops(func::FuncOp func) {
  uint64_t flops = 0;
  func.walk([&](linalg::LinalgOp op) {
    uint64_t points = 1;
    for (int64_t bound : op.getStaticLoopRanges())
      points *= bound > 0 ? static_cast<uint64_t>(bound) : 1;
    flops += op.getNumReductionLoops() ? 2 * points : points;
  });
  return flops;
}

/// Builds the artifact from the program (@main with its memory plan), the
/// dispatch functions (for names and workgroup counts, in kernel order) and
/// the CPU code object.
LogicalResult writeArtifact(ModuleOp module, func::FuncOp main,
                            const cpu::CodeObject &code,
                            const llvm::StringMap<unsigned> &kernelIndex,
                            const llvm::StringMap<uint64_t> &flopsOf,
                            const CompileOptions &options, const std::string &path) {
  artifact::ArtifactWriter writer;
  writer.setProducer("kiln-compile 0.1");
  writer.setOptions(options.commandLine);
  writer.setModel(llvm::sys::path::filename(options.modelPath).str());

  auto tensorDesc = [&](Type type, StringRef name, Location loc) -> FailureOr<artifact::TensorDesc> {
    auto tensor = cast<RankedTensorType>(type);
    auto dtype = dtypeOf(tensor.getElementType());
    if (!dtype)
      return emitError(loc) << "tensor '" << name << "' has element type "
                            << tensor.getElementType() << ", which artifacts cannot carry";
    return artifact::TensorDesc{name.str(), *dtype, std::vector<int64_t>(tensor.getShape().begin(), tensor.getShape().end())};
  };
  for (auto [i, type] : llvm::enumerate(main.getArgumentTypes())) {
    auto name = main.getArgAttrOfType<StringAttr>(i, kOnnxNameAttr);
    auto desc = tensorDesc(type, name ? name.getValue() : "input" + std::to_string(i), main.getLoc());
    if (failed(desc))
      return failure();
    writer.addInput(*desc);
  }
  for (auto [i, type] : llvm::enumerate(main.getResultTypes())) {
    auto name = main.getResultAttrOfType<StringAttr>(i, kOnnxNameAttr);
    auto desc = tensorDesc(type, name ? name.getValue() : "output" + std::to_string(i), main.getLoc());
    if (failed(desc))
      return failure();
    writer.addOutput(*desc);
  }

  // Constants: each kiln.constant the program binds, stored once.
  std::vector<std::string> expanded; // storage for splat / non-raw constants
  llvm::DenseMap<Operation *, uint64_t> constantOffset;
  auto constantBinding = [&](ConstantOp cst) -> FailureOr<artifact::BindingDesc> {
    auto type = cast<RankedTensorType>(cst.getType());
    uint64_t size = storageBytes(type);
    auto it = constantOffset.find(cst);
    if (it != constantOffset.end())
      return artifact::BindingDesc{artifact::BindingDesc::Constant, it->second, size};
    uint64_t offset;
    if (std::optional<ArrayRef<char>> raw = rawConstantBytes(cst.getValue())) {
      // In place: the blob or attribute lives as long as the context.
      if (raw->size() != size)
        return cst.emitOpError("constant data has ") << raw->size()
               << " bytes, its type needs " << size;
      offset = writer.addConstant(raw->data(), size);
    } else if (auto dense = dyn_cast<DenseElementsAttr>(cst.getValue())) {
      // Splats and booleans are stored compactly by MLIR: expand them.
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
    constantOffset[cst] = offset;
    return artifact::BindingDesc{artifact::BindingDesc::Constant, offset, size};
  };

  auto inputOffsets = main->getAttrOfType<ArrayAttr>(kInputOffsetsAttr);
  auto arenaSize = main->getAttrOfType<IntegerAttr>(kArenaSizeAttr);
  if (!inputOffsets || !arenaSize)
    return main.emitError("program has no memory plan");

  // Where a value of the program lives.
  std::function<FailureOr<artifact::BindingDesc>(Value)> bindingOf =
      [&](Value value) -> FailureOr<artifact::BindingDesc> {
    auto type = cast<RankedTensorType>(value.getType());
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      uint64_t offset = cast<IntegerAttr>(inputOffsets[arg.getArgNumber()]).getInt();
      return artifact::BindingDesc{artifact::BindingDesc::Arena, offset, storageBytes(type)};
    }
    Operation *def = value.getDefiningOp();
    if (auto cst = dyn_cast<ConstantOp>(def))
      return constantBinding(cst);
    if (auto reshape = dyn_cast<ReshapeOp>(def)) {
      auto source = bindingOf(reshape.getInput());
      if (failed(source))
        return failure();
      source->size = storageBytes(type);
      return source;
    }
    auto offset = def->getAttrOfType<IntegerAttr>(kArenaOffsetAttr);
    if (!offset)
      return def->emitOpError("has no arena offset");
    return artifact::BindingDesc{artifact::BindingDesc::Arena,
                                 static_cast<uint64_t>(offset.getInt()), storageBytes(type)};
  };

  artifact::ProgramDesc program;
  program.name = "main";
  program.arenaSize = arenaSize.getInt();
  for (BlockArgument arg : main.getArguments()) {
    auto b = bindingOf(arg);
    if (failed(b))
      return failure();
    program.inputs.push_back(*b);
  }
  for (Operation &op : main.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      for (Value v : ret.getOperands()) {
        auto b = bindingOf(v);
        if (failed(b))
          return failure();
        program.outputs.push_back(*b);
      }
      continue;
    }
    auto call = dyn_cast<func::CallOp>(op);
    if (!call)
      continue;
    artifact::DispatchDesc dispatch;
    auto kernel = kernelIndex.find(call.getCallee());
    if (kernel == kernelIndex.end())
      return call.emitOpError("calls a function that is not a compiled kernel");
    dispatch.kernel = kernel->second;
    for (Value v : call.getOperands()) {
      auto b = bindingOf(v);
      if (failed(b))
        return failure();
      dispatch.bindings.push_back(*b);
      dispatch.bytes += b->size;
    }
    for (Value v : call.getResults()) {
      auto b = bindingOf(v);
      if (failed(b))
        return failure();
      dispatch.bindings.push_back(*b);
      dispatch.bytes += b->size;
    }
    dispatch.flops = flopsOf.lookup(call.getCallee());
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
    std::vector<std::string> names;
    if (callee)
      collectNames(callee.getLoc(), names);
    dispatch.ops = llvm::join(names, ",");
    program.dispatches.push_back(std::move(dispatch));
  }
  writer.addProgram(std::move(program));

  artifact::CodeObjectDesc object;
  object.target = "cpu";
  object.triple = code.triple;
  object.cpu = code.cpu;
  object.features = code.features;
  object.format = "elf-shared-object";
  object.bytes = code.bytes;
  for (const cpu::Kernel &k : code.kernels) {
    artifact::KernelDesc desc;
    desc.name = k.name;
    desc.symbol = k.symbol;
    desc.workgroupCount = k.workgroupCount;
    object.kernels.push_back(std::move(desc));
  }
  writer.addCodeObject(std::move(object));

  std::string error;
  if (!writer.writeFile(path, error))
    return emitError(module.getLoc()) << error;
  return success();
}

} // namespace

LogicalResult compile(OwningOpRef<ModuleOp> &module, const CompileOptions &compileOptions,
                      const std::string &outputPath, std::string &text) {
  CompileOptions options = compileOptions;
  cpu::resolveTarget(options.cpu);
  auto dump = [&](StringRef stage, Operation *ir) {
    if (options.dumpStage)
      options.dumpStage(stage, ir);
  };
  dump("kiln", *module);
  if (options.stopAfter == Stage::Kiln)
    return success();

  if (failed(runPasses(*module, buildGraphPipeline)))
    return failure();
  dump("dispatch", *module);
  if (options.stopAfter == Stage::Dispatch)
    return success();

  if (failed(runPasses(*module, [&](OpPassManager &pm) {
        cpu::buildLinalgPipeline(pm, options.cpu);
      })))
    return failure();
  dump("linalg", *module);
  if (options.stopAfter == Stage::Linalg)
    return success();

  // The kernels go on without the program, which stays for the artifact.
  func::FuncOp main;
  cpu::CodeObject code;
  llvm::StringMap<unsigned> kernelIndex;
  llvm::StringMap<uint64_t> flopsOf;
  for (auto func : module->getOps<func::FuncOp>()) {
    if (func->hasAttr("kiln.program")) {
      main = func;
      continue;
    }
    if (!func->hasAttr(kDispatchAttr))
      continue;
    auto count = func->getAttrOfType<IntegerAttr>(kWorkgroupCountAttr);
    kernelIndex[func.getName()] = code.kernels.size();
    flopsOf[func.getName()] = estimateFlops(func);
    code.kernels.push_back({func.getName().str(), "", count ? count.getInt() : 1});
  }
  if (!main)
    return emitError(module->getLoc()) << "no program function after dispatch formation";
  OwningOpRef<ModuleOp> kernels(cast<ModuleOp>((*module)->clone()));
  for (auto func : llvm::make_early_inc_range(kernels->getOps<func::FuncOp>()))
    if (!func->hasAttr(kDispatchAttr))
      func.erase();
  if (failed(runPasses(*kernels, [&](OpPassManager &pm) {
        cpu::buildLLVMPipeline(pm, options.cpu);
      })))
    return failure();
  dump("llvm", *kernels);
  if (options.stopAfter == Stage::LLVM) {
    module = std::move(kernels);
    return success();
  }
  if (failed(cpu::emitCodeObject(*kernels, options.cpu, code,
                                 options.stopAfter == Stage::Assembly ? &text : nullptr)))
    return failure();
  if (options.stopAfter == Stage::Assembly)
    return success();
  return writeArtifact(*module, main, code, kernelIndex, flopsOf, options, outputPath);
}

} // namespace kiln::driver
