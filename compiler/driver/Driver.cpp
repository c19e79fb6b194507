//===- Driver.cpp - the kiln-compile pipeline -----------------------------===//

#include "driver/Driver.h"
#include "artifact/ArtifactWriter.h"
#include "codegen/emulator/EmulatorCodegen.h"
#include "kiln/emu_abi.h"
#include "codegen/amdgpu/Passes.h"
#include "kiln/Passes/Passes.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

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
/// dispatch functions (for names, in kernel order) and the code object of
/// every target.
LogicalResult writeArtifact(ModuleOp module, func::FuncOp main,
                            std::vector<artifact::CodeObjectDesc> codeObjects,
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

  for (artifact::CodeObjectDesc &object : codeObjects)
    writer.addCodeObject(std::move(object));

  std::string error;
  if (!writer.writeFile(path, error))
    return emitError(module.getLoc()) << error;
  return success();
}

} // namespace

namespace {

/// Fills the target and code of an artifact code object from a host object.
void setHostObject(artifact::CodeObjectDesc &object, std::string target, std::string format,
                   codegen::HostObject &&code) {
  object.target = std::move(target);
  object.triple = std::move(code.triple);
  object.cpu = std::move(code.cpu);
  object.features = std::move(code.features);
  object.format = std::move(format);
  object.bytes = std::move(code.bytes);
}

/// The kernel table of a gfx code object (the emulated one has the same).
std::vector<artifact::KernelDesc> gfxKernelTable(const std::vector<gfx::Kernel> &kernels) {
  std::vector<artifact::KernelDesc> table;
  for (const gfx::Kernel &k : kernels) {
    artifact::KernelDesc desc;
    desc.name = k.name;
    desc.symbol = k.name;
    desc.workgroupCount = k.workgroupCount;
    desc.workgroupSize = {static_cast<uint32_t>(k.workgroupSize), 1, 1};
    desc.ldsBytes = static_cast<uint32_t>(k.ldsBytes);
    table.push_back(std::move(desc));
  }
  return table;
}

/// The emulated code object of one gfx target: the kernels of the gpu stage
/// `kernels`, rewritten for the host (see compiler/codegen/emulator).
LogicalResult compileEmulation(ModuleOp kernels, const std::vector<std::string> &names,
                               const gfx::Target &target, const CompileOptions &options,
                               std::vector<gfx::Kernel> table,
                               artifact::CodeObjectDesc &object) {
  OwningOpRef<ModuleOp> host(cast<ModuleOp>(kernels->clone()));
  if (failed(runPasses(*host, [&](OpPassManager &pm) {
        emu::buildEmulatorPipeline(pm, target);
      })))
    return failure();
  if (options.dumpStage)
    options.dumpStage(std::string("emu-") + target.name, *host);
  // The host kernels lay out their LDS themselves.
  for (gfx::Kernel &kernel : table)
    if (auto func = host->lookupSymbol<LLVM::LLVMFuncOp>(kernel.name))
      if (auto lds = func->getAttrOfType<IntegerAttr>(kLdsBytesAttr))
        kernel.ldsBytes = std::max(kernel.ldsBytes, lds.getInt());
  codegen::HostObject code;
  if (failed(emu::emitCodeObject(*host, options.cpu.cpu, options.cpu.features, names, code)))
    return failure();
  setHostObject(object, std::string(emu::kTargetPrefix) + target.name, emu::kCodeObjectFormat,
                std::move(code));
  object.kernels = gfxKernelTable(table);
  return success();
}

/// A copy of `module` with its dispatch functions only (no program).
OwningOpRef<ModuleOp> kernelsOnly(ModuleOp module) {
  OwningOpRef<ModuleOp> kernels(cast<ModuleOp>(module->clone()));
  for (auto func : llvm::make_early_inc_range(kernels->getOps<func::FuncOp>()))
    if (!func->hasAttr(kDispatchAttr))
      func.erase();
  return kernels;
}

/// The x86-64 code object of the kernels (dispatch functions of `linalg`, in
/// `names` order), or the stage the options stop at.
LogicalResult compileCPU(ModuleOp linalg, const std::vector<std::string> &names,
                         const CompileOptions &options, StageOutput &out,
                         artifact::CodeObjectDesc &object) {
  OwningOpRef<ModuleOp> kernels = kernelsOnly(linalg);
  cpu::CodeObject code;
  for (const std::string &name : names) {
    auto func = kernels->lookupSymbol<func::FuncOp>(name);
    auto count = func ? func->getAttrOfType<IntegerAttr>(kWorkgroupCountAttr) : nullptr;
    code.kernels.push_back({name, "", count ? count.getInt() : 1});
  }
  if (failed(runPasses(*kernels, [&](OpPassManager &pm) {
        cpu::buildLLVMPipeline(pm, options.cpu);
      })))
    return failure();
  if (options.dumpStage)
    options.dumpStage("llvm-cpu", *kernels);
  if (options.stopAfter == Stage::LLVM) {
    out.module = std::move(kernels);
    return success();
  }
  if (failed(cpu::emitCodeObject(*kernels, options.cpu, code,
                                 options.stopAfter == Stage::Assembly ? &out.text : nullptr)))
    return failure();
  setHostObject(object, "cpu", "elf-shared-object", std::move(code));
  for (const cpu::Kernel &k : code.kernels) {
    artifact::KernelDesc desc;
    desc.name = k.name;
    desc.symbol = k.symbol;
    desc.workgroupCount = k.workgroupCount;
    object.kernels.push_back(std::move(desc));
  }
  return success();
}

/// The HSACO of one gfx target, or the stage the options stop at.
/// With options.emulation, `objects` also receives the emulated code object.
LogicalResult compileGfx(ModuleOp linalg, const std::vector<std::string> &names,
                         const gfx::Target &target, const CompileOptions &options,
                         StageOutput &out, std::vector<artifact::CodeObjectDesc> &objects) {
  gfx::GfxOptions gfxOptions = options.gfx;
  gfxOptions.target = &target;
  OwningOpRef<ModuleOp> kernels = kernelsOnly(linalg);
  gfx::CodeObject code;
  for (const std::string &name : names) {
    auto func = kernels->lookupSymbol<func::FuncOp>(name);
    gfx::Kernel kernel{name};
    if (func) {
      if (auto count = func->getAttrOfType<IntegerAttr>(kWorkgroupCountAttr))
        kernel.workgroupCount = count.getInt();
      if (auto size = func->getAttrOfType<IntegerAttr>(kWorkgroupSizeAttr))
        kernel.workgroupSize = size.getInt();
      if (auto lds = func->getAttrOfType<IntegerAttr>(kLdsBytesAttr))
        kernel.ldsBytes = lds.getInt();
    }
    code.kernels.push_back(kernel);
  }
  std::string suffix = std::string("-") + target.name;
  if (failed(runPasses(*kernels, [&](OpPassManager &pm) {
        gfx::buildGpuPipeline(pm, gfxOptions);
      })))
    return failure();
  if (options.dumpStage)
    options.dumpStage("gpu" + suffix, *kernels);
  if (options.stopAfter == Stage::Gpu) {
    out.module = std::move(kernels);
    return success();
  }
  artifact::CodeObjectDesc emulated;
  if (options.emulation && options.stopAfter == Stage::Artifact &&
      failed(compileEmulation(*kernels, names, target, options, code.kernels, emulated)))
    return failure();
  if (failed(runPasses(*kernels, [&](OpPassManager &pm) {
        gfx::buildLLVMPipeline(pm, gfxOptions);
      })))
    return failure();
  if (options.dumpStage)
    options.dumpStage("llvm" + suffix, *kernels);
  if (options.stopAfter == Stage::LLVM) {
    out.module = std::move(kernels);
    return success();
  }
  if (failed(gfx::emitCodeObject(*kernels, gfxOptions, code,
                                 options.stopAfter == Stage::Assembly ? &out.text : nullptr)))
    return failure();
  artifact::CodeObjectDesc object;
  object.target = code.target;
  object.triple = code.triple;
  object.cpu = code.cpu;
  object.features = code.features;
  object.format = "hsaco";
  object.bytes = std::move(code.bytes);
  object.kernels = gfxKernelTable(code.kernels);
  objects.push_back(std::move(object));
  if (options.emulation)
    objects.push_back(std::move(emulated));
  return success();
}

} // namespace

FailureOr<std::vector<TargetSpec>> parseTargets(llvm::StringRef list, std::string &error) {
  std::vector<TargetSpec> targets;
  llvm::SmallVector<llvm::StringRef> names;
  list.split(names, ',', -1, /*KeepEmpty=*/false);
  for (llvm::StringRef name : names) {
    name = name.trim();
    TargetSpec spec;
    if (name.equals_insensitive("cpu")) {
      spec.name = "cpu";
    } else if (const gfx::Target *target = gfx::lookupTarget(name)) {
      spec.name = target->name;
      spec.gfx = target;
    } else {
      error = "unknown target '" + name.str() + "' (known: cpu, " + gfx::knownTargets() + ")";
      return failure();
    }
    if (llvm::any_of(targets, [&](const TargetSpec &t) { return t.name == spec.name; })) {
      error = "target '" + spec.name + "' is given twice";
      return failure();
    }
    targets.push_back(spec);
  }
  if (targets.empty()) {
    error = "no target given";
    return failure();
  }
  return targets;
}

LogicalResult compile(OwningOpRef<ModuleOp> &module, const CompileOptions &compileOptions,
                      const std::string &outputPath, std::vector<StageOutput> &outputs) {
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

  // The program and the kernels' order come from the dispatch stage; every
  // target lowers its own copy of the dispatch functions.
  func::FuncOp main;
  std::vector<std::string> names;
  llvm::StringMap<unsigned> kernelIndex;
  for (auto func : module->getOps<func::FuncOp>()) {
    if (func->hasAttr("kiln.program")) {
      main = func;
      continue;
    }
    if (!func->hasAttr(kDispatchAttr))
      continue;
    kernelIndex[func.getName()] = names.size();
    names.push_back(func.getName().str());
  }
  if (!main)
    return emitError(module->getLoc()) << "no program function after dispatch formation";

  // Flops per dispatch, from its untiled linalg form (every target's own
  // linalg stage is already tiled into workgroups or threads).
  llvm::StringMap<uint64_t> flopsOf;
  if (options.stopAfter == Stage::Artifact) {
    OwningOpRef<ModuleOp> untiled(cast<ModuleOp>((*module)->clone()));
    if (failed(runPasses(*untiled, [&](OpPassManager &pm) {
          pm.addNestedPass<func::FuncOp>(createKilnLowerToLinalg());
        })))
      return failure();
    for (auto func : untiled->getOps<func::FuncOp>())
      if (func->hasAttr(kDispatchAttr))
        flopsOf[func.getName()] = estimateFlops(func);
  }
  std::vector<artifact::CodeObjectDesc> codeObjects;
  for (const TargetSpec &target : options.targets) {
    StageOutput out;
    out.target = target.name;
    // gfx kernels change signature when the GEMM builder takes them (memref
    // arguments): they go on without the program.
    OwningOpRef<ModuleOp> linalg = target.gfx
                                       ? kernelsOnly(*module)
                                       : OwningOpRef<ModuleOp>(cast<ModuleOp>((*module)->clone()));
    if (failed(runPasses(*linalg, [&](OpPassManager &pm) {
          if (target.gfx) {
            gfx::GfxOptions gfxOptions = options.gfx;
            gfxOptions.target = target.gfx;
            gfx::buildLinalgPipeline(pm, gfxOptions);
          } else {
            cpu::buildLinalgPipeline(pm, options.cpu);
          }
        })))
      return failure();
    dump("linalg-" + target.name, *linalg);
    if (options.stopAfter == Stage::Linalg) {
      out.module = std::move(linalg);
      outputs.push_back(std::move(out));
      continue;
    }
    if (options.stopAfter == Stage::Gpu && !target.gfx)
      continue; // the cpu target has no gpu stage
    std::vector<artifact::CodeObjectDesc> objects(target.gfx ? 0 : 1);
    LogicalResult result =
        target.gfx ? compileGfx(*linalg, names, *target.gfx, options, out, objects)
                   : compileCPU(*linalg, names, options, out, objects.front());
    if (failed(result))
      return failure();
    if (options.stopAfter != Stage::Artifact)
      outputs.push_back(std::move(out));
    else
      for (artifact::CodeObjectDesc &object : objects)
        codeObjects.push_back(std::move(object));
  }
  if (options.stopAfter != Stage::Artifact)
    return success();
  return writeArtifact(*module, main, std::move(codeObjects), kernelIndex, flopsOf, options,
                       outputPath);
}

} // namespace kiln::driver
