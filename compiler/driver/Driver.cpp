//===- Driver.cpp - the kiln-compile pipeline -----------------------------===//

#include "driver/Driver.h"
#include "artifact/ArtifactWriter.h"
#include "artifact/TranslateToArtifact.h"
#include "codegen/emulator/EmulatorCodegen.h"
#include "kiln/emu_abi.h"
#include "codegen/amdgpu/Passes.h"
#include "kiln/Passes/Passes.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Path.h"

#include <mutex>

using namespace mlir;

namespace kiln::driver {

void registerCompilerDialects(DialectRegistry &registry) {
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registry.insert<KilnDialect>();
}

namespace {

/// The ONNX node a location names (the importer gives each op its node's
/// name; fusion and outlining keep it inside fused and call-site locations).
std::string nodeName(Location loc) {
  std::string name;
  loc->walk([&](Location inner) {
    if (auto named = dyn_cast<NameLoc>(inner)) {
      name = named.getName().str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return name;
}

/// While active, turns the first error of a stage into the one-line internal
/// error (see compile()) and drops the rest, notes (IR dumps) included.
class InternalErrors {
public:
  InternalErrors(MLIRContext *ctx, std::string model)
      : model(std::move(model)), handler(ctx, [this](Diagnostic &diag) { return handle(diag); }) {}
  std::string stage;
  bool active = true;

private:
  LogicalResult handle(Diagnostic &diag) {
    if (!active)
      return failure(); // to the tool's own handler
    if (diag.getSeverity() != DiagnosticSeverity::Error || reported)
      return success();
    reported = true;
    std::string message = diag.str();
    message = message.substr(0, message.find('\n'));
    llvm::errs() << model << ": error: internal error in " << stage;
    if (std::string node = nodeName(diag.getLocation()); !node.empty())
      llvm::errs() << " at node " << node;
    llvm::errs() << ": " << message << "\n";
    return success();
  }
  std::string model;
  bool reported = false;
  ScopedDiagnosticHandler handler;
};

/// --test-internal-error: fails on the first function, as a buggy pass would.
struct TestInternalErrorPass
    : public PassWrapper<TestInternalErrorPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(TestInternalErrorPass)
  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      func.emitOpError("fails on purpose (--test-internal-error)")
              .attachNote(func.getLoc())
          << "an IR dump would follow here";
      return signalPassFailure();
    }
  }
};

/// Reports every pass that finishes on a kernel (an op with kiln.dispatch)
/// to the progress observer, with how many kernels that pass has finished.
/// The pass manager runs a clone of each pass per worker thread: the count
/// is kept for the pass the clones were made from, so it reaches the total
/// however the kernels were spread over threads.
class KernelProgress : public PassInstrumentation {
public:
  KernelProgress(ProgressObserver &observer, int64_t total)
      : observer(observer), total(total) {}
  void runAfterPass(Pass *pass, Operation *op) override {
    if (!op->hasAttr(kDispatchAttr))
      return;
    std::lock_guard<std::mutex> lock(mutex);
    int64_t done = ++finished[pass->getThreadingSiblingOrThis()];
    observer.kernelDone(pass->getArgument().empty() ? pass->getName() : pass->getArgument(),
                        std::min(done, total), total);
  }

private:
  ProgressObserver &observer;
  int64_t total;
  std::mutex mutex;
  llvm::DenseMap<const Pass *, int64_t> finished;
};

/// A step of the compile: reported to the observer and timed while it lives.
struct Step {
  Step(const CompileOptions &options, StringRef stage, StringRef target = "") {
    if (options.progress)
      options.progress->beginStep(stage, target);
    if (options.timing)
      timer = options.timing->nest(target.empty() ? stage.str() : (stage + " " + target).str());
  }
  TimingScope timer;
};

/// Runs the passes `build` adds on `module`, as step `stage` of `target`.
LogicalResult runPasses(ModuleOp module, const CompileOptions &options, StringRef stage,
                        StringRef target, llvm::function_ref<void(OpPassManager &)> build) {
  Step step(options, stage, target);
  PassManager pm(module.getContext());
  if (failed(applyPassManagerCLOptions(pm)))
    return failure();
  if (options.progress) {
    int64_t kernels = 0;
    module->walk([&](Operation *op) { kernels += op->hasAttr(kDispatchAttr); });
    pm.addInstrumentation(std::make_unique<KernelProgress>(*options.progress, kernels));
  }
  build(pm);
  return pm.run(module);
}

/// Whether every gfx target of `options` computes f32 products on its matrix
/// cores: narrowed by --precision, or with an f32 matrix instruction (CDNA).
/// Elsewhere f32 matmuls and convolutions take the generic kernels.
bool f32OnMatrixCores(const CompileOptions &options) {
  return options.gfx.precision != gfx::Precision::F32 ||
         llvm::all_of(options.targets, [](const TargetSpec &target) {
           return !target.gfx || target.gfx->gemmInstruction(gfx::MatrixInput::F32);
         });
}

void buildGraphPipeline(OpPassManager &pm, const CompileOptions &options) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // Branches and loop bodies whose kiln.if / kiln.loop folded away.
  pm.addPass(createSymbolDCEPass());
  pm.addNestedPass<func::FuncOp>(createKilnFoldBatchNorms());
  if (options.raiseRmsNorms)
    pm.addNestedPass<func::FuncOp>(createKilnRaiseRmsNorms());
  if (options.raiseRotaryEmbeddings)
    pm.addNestedPass<func::FuncOp>(createKilnRaiseRotaryEmbeddings());
  pm.addNestedPass<func::FuncOp>(createKilnFoldWeightLayouts());
  // Its slices are views only where the GEMM kernels store through the
  // transpose into heads (gfx targets alone).
  if (options.transposedOperands)
    pm.addNestedPass<func::FuncOp>(createKilnMergeHeadProjections());
  if (options.quantizeWeights)
    pm.addNestedPass<func::FuncOp>(createKilnQuantizeWeights());
  if (options.int4GroupSize > 0) {
    KilnQuantizeInt4WeightsOptions int4;
    int4.groupSize = options.int4GroupSize;
    int4.zeroPoints = options.int4ZeroPoints;
    pm.addNestedPass<func::FuncOp>(createKilnQuantizeInt4Weights(int4));
  }
  pm.addNestedPass<func::FuncOp>(createKilnFoldQuantizedOps());
  // The integer weights transposed out of dequantizations (QDQ Gemms).
  pm.addNestedPass<func::FuncOp>(createKilnFoldWeightLayouts());
  pm.addNestedPass<func::FuncOp>(createKilnExpandQuantization());
  if (options.int4Int8Activations)
    pm.addNestedPass<func::FuncOp>(createKilnQuantizeInt4Activations());
  if (options.int4Panel > 0 || options.int4Int8Activations) {
    // Without cpu-only panels, W4A8's still: they serve the cpu and the gfx
    // kernels alike.
    KilnPackInt4WeightsOptions pack;
    pack.panel = options.int4Panel > 0 ? options.int4Panel : 32;
    pack.w4a8Only = options.int4Panel <= 0;
    pm.addNestedPass<func::FuncOp>(createKilnPackInt4Weights(pack));
  }
  // After quantization: the convolutions left are float ones.
  if (options.splitKComputeUnits > 0) {
    KilnSplitKConvsOptions splitK;
    splitK.computeUnits = options.splitKComputeUnits;
    splitK.splitF32 = f32OnMatrixCores(options);
    pm.addNestedPass<func::FuncOp>(createKilnSplitKConvs(splitK));
  }
  if (options.mergeRangeReductions)
    pm.addNestedPass<func::FuncOp>(createKilnMergeRangeReductions());
  if (options.splitReductionThreads > 0) {
    KilnSplitReductionsOptions split;
    split.threads = options.splitReductionThreads;
    split.maxRow = options.splitReductionMaxRow;
    pm.addNestedPass<func::FuncOp>(createKilnSplitReductions(split));
  }
  if (options.unstridePointwise) {
    pm.addNestedPass<func::FuncOp>(createKilnSpaceToDepthConvs());
    pm.addNestedPass<func::FuncOp>(createKilnUnstridePointwiseConvs());
    pm.addNestedPass<func::FuncOp>(createKilnTransposePointwiseConvs());
  }
  if (options.winograd) {
    KilnWinogradConvsOptions winograd;
    winograd.exclude.assign(options.winogradExclude.begin(), options.winogradExclude.end());
    winograd.transformOps = options.winogradTransformOps;
    pm.addNestedPass<func::FuncOp>(createKilnWinogradConvs(winograd));
  }
  if (options.matmulPanel > 0) {
    KilnPackMatmulPanelsOptions pack;
    pack.panel = options.matmulPanel;
    pack.maxRows = options.matmulPanelRows;
    pack.unfused = options.matmulPanelUnfused;
    pack.halfFloats = !options.matmulPanelCpu;
    pm.addNestedPass<func::FuncOp>(createKilnPackMatmulPanels(pack));
  }
  pm.addPass(createCanonicalizerPass());
  // After the last folding: a cast of a constant would fold back.
  if (options.narrowWeights && options.gfx.precision != gfx::Precision::F32) {
    KilnNarrowMatmulWeightsOptions narrow;
    narrow.precision = options.gfx.precision == gfx::Precision::F16 ? "f16" : "bf16";
    pm.addNestedPass<func::FuncOp>(createKilnNarrowMatmulWeights(narrow));
  }
  // Its default min-rows (8) is the gfx GEMV kernels' rows: they read B
  // along n.
  if (options.kMajorWeights)
    pm.addNestedPass<func::FuncOp>(createKilnTransposeMatmulWeights());
  KilnFormDispatchesOptions dispatches;
  dispatches.transposedOperands = options.transposedOperands;
  // The generic kernels read and store plain layouts.
  dispatches.transposedF32 = f32OnMatrixCores(options);
  dispatches.inlineScalars = options.inlineScalars;
  dispatches.epilogueOperands = options.epilogueOperands;
  pm.addNestedPass<func::FuncOp>(createKilnFormDispatches(dispatches));
  pm.addPass(createKilnOutlineDispatches());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createKilnPlanMemory());
  KilnMaterializeExecutablesOptions executables;
  for (const TargetSpec &target : options.targets)
    executables.targets.push_back(target.name);
  if (executables.targets.empty()) // --emit=dispatch without --target
    executables.targets.push_back("cpu");
  executables.precision = options.gfx.precision == gfx::Precision::F16    ? "f16"
                          : options.gfx.precision == gfx::Precision::BF16 ? "bf16"
                                                                          : "f32";
  pm.addPass(createKilnMaterializeExecutables(executables));
}

} // namespace

namespace {

/// What one target's code generation emitted, to become a kiln.binary.
struct Binary {
  std::string target, format, triple, cpu, features;
  std::string bytes;
  std::vector<std::string> symbols; // one per executable, in module order
  std::vector<int64_t> lds;         // LDS bytes of each kernel in this object
};

void setHostObject(Binary &binary, std::string target, std::string format,
                   codegen::HostObject &&code) {
  binary.target = std::move(target);
  binary.format = std::move(format);
  binary.triple = std::move(code.triple);
  binary.cpu = std::move(code.cpu);
  binary.features = std::move(code.features);
  binary.bytes = std::move(code.bytes);
}

/// Appends `binary` to the module as a kiln.binary whose bytes are a
/// dense_resource blob (owned by the context, never printed in full).
void addBinary(ModuleOp module, const Binary &binary) {
  MLIRContext *ctx = module.getContext();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto type = RankedTensorType::get({static_cast<int64_t>(binary.bytes.size())},
                                    IntegerType::get(ctx, 8));
  std::string symbol = "code_object_" + binary.target;
  std::replace(symbol.begin(), symbol.end(), ':', '_');
  AsmResourceBlob blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(
      ArrayRef<char>(binary.bytes.data(), binary.bytes.size()), 64);
  auto data = DenseResourceElementsAttr::get(type, symbol, std::move(blob));
  BinaryOp::create(b, module.getLoc(), symbol, TargetAttr::get(ctx, binary.target, nullptr),
                   binary.format, binary.triple, binary.cpu, binary.features,
                   b.getStrArrayAttr(llvm::to_vector_of<StringRef>(binary.symbols)),
                   b.getDenseI64ArrayAttr(binary.lds), data);
}

/// The exports of every executable's variant for `target`, in module order.
FailureOr<std::vector<ExportOp>> exportsFor(ModuleOp module, StringRef target) {
  std::vector<ExportOp> exports;
  for (auto executable : module.getOps<ExecutableOp>()) {
    VariantOp variant = executable.lookupVariant(target);
    if (!variant)
      return executable.emitOpError() << "has no variant for target '" << target << "'";
    exports.push_back(variant.getExport());
  }
  return exports;
}

/// One module holding a copy of the kernel function of every executable's
/// variant for `target`: the input of that target's pipelines, which build
/// one code object for all of them.
OwningOpRef<ModuleOp> gatherVariants(ModuleOp module, StringRef target) {
  OwningOpRef<ModuleOp> kernels(ModuleOp::create(module.getLoc()));
  for (auto executable : module.getOps<ExecutableOp>())
    if (VariantOp variant = executable.lookupVariant(target))
      for (Operation &op : variant.getInnerModule().getBody()->getOperations())
        kernels->getBody()->push_back(op.clone());
  return kernels;
}

/// Compiles identical kernels once: every function of `kernels` whose text
/// (type, attributes and body, without its name and locations) is that of
/// an earlier one is erased, and `shared` maps its name to the earlier
/// one's. Repeated blocks of a network (ResNet-50's stages) and the
/// Winograd transforms of convolutions of one shape are such kernels.
void shareIdenticalKernels(ModuleOp kernels, llvm::StringMap<std::string> &shared) {
  llvm::StringMap<std::string> firstWithText;
  for (auto func : llvm::make_early_inc_range(kernels.getOps<func::FuncOp>())) {
    std::string name = func.getSymName().str();
    func.setSymName("kernel");
    std::string text;
    llvm::raw_string_ostream os(text);
    func->print(os);
    func.setSymName(name);
    auto [it, inserted] = firstWithText.try_emplace(text, name);
    if (!inserted) {
      shared[name] = it->second;
      func.erase();
    }
  }
}

/// Copies what the target's linalg stage decided about each kernel (marks
/// on the functions of `kernels`; for a kernel in `shared`, on the function
/// it shares) into the variants' exports.
LogicalResult updateExports(ModuleOp module, StringRef target, ModuleOp kernels,
                            const llvm::StringMap<std::string> &shared = {}) {
  FailureOr<std::vector<ExportOp>> exports = exportsFor(module, target);
  if (failed(exports))
    return failure();
  Builder b(module.getContext());
  for (ExportOp exp : *exports) {
    auto func = kernels.lookupSymbol<func::FuncOp>(exp.getKernel());
    if (auto it = shared.find(exp.getKernel()); !func && it != shared.end())
      func = kernels.lookupSymbol<func::FuncOp>(it->second);
    if (!func)
      return exp.emitOpError() << "names kernel '" << exp.getKernel()
                               << "', which the " << target << " pipeline did not keep";
    auto get = [&](StringRef name) { return func->getAttrOfType<IntegerAttr>(name); };
    if (IntegerAttr count = get(kWorkgroupCountAttr))
      exp.setWorkgroupsAttr(b.getI64IntegerAttr(std::max<int64_t>(1, count.getInt())));
    if (IntegerAttr size = get(kWorkgroupSizeAttr))
      exp.setWorkgroupSizeAttr(b.getI64IntegerAttr(size.getInt()));
    if (IntegerAttr lds = get(kLdsBytesAttr))
      exp.setLdsAttr(b.getI64IntegerAttr(lds.getInt()));
    if (IntegerAttr flops = get(kFlopsAttr))
      exp.setFlopsAttr(b.getI64IntegerAttr(flops.getInt()));
  }
  return success();
}

/// The emulated code object of one gfx target: the kernels of the gpu stage
/// `kernels`, rewritten for the host (see compiler/codegen/emulator).
LogicalResult compileEmulation(ModuleOp kernels, const std::vector<std::string> &names,
                               const gfx::Target &target, const CompileOptions &options,
                               std::vector<int64_t> lds, Binary &binary) {
  OwningOpRef<ModuleOp> host(cast<ModuleOp>(kernels->clone()));
  if (failed(runPasses(*host, options, "emulation", target.name, [&](OpPassManager &pm) {
        emu::buildEmulatorPipeline(pm, target);
      })))
    return failure();
  if (options.dumpStage)
    options.dumpStage(std::string("emu-") + target.name, *host);
  // The host kernels lay out their LDS themselves.
  for (auto [name, bytes] : llvm::zip(names, lds))
    if (auto func = host->lookupSymbol<LLVM::LLVMFuncOp>(name))
      if (auto hostLds = func->getAttrOfType<IntegerAttr>(kLdsBytesAttr))
        bytes = std::max(bytes, hostLds.getInt());
  codegen::HostObject code;
  Step step(options, "code object", std::string(emu::kTargetPrefix) + target.name);
  if (failed(emu::emitCodeObject(*host, options.cpu.cpu, options.cpu.features, names, code)))
    return failure();
  setHostObject(binary, std::string(emu::kTargetPrefix) + target.name, emu::kCodeObjectFormat,
                std::move(code));
  binary.symbols = names;
  binary.lds = std::move(lds);
  return success();
}

/// The x86-64 code object of the kernels (the cpu variants' functions in
/// `kernels`, after the linalg stage), or the stage the options stop at.
LogicalResult compileCPU(ModuleOp kernels, const std::vector<std::string> &names,
                         llvm::ArrayRef<ExportOp> exports,
                         const llvm::StringMap<std::string> &shared,
                         const CompileOptions &options, StageOutput &out, Binary &binary) {
  cpu::CodeObject code;
  for (auto [name, constExp] : llvm::zip(names, exports)) {
    auto it = shared.find(name);
    code.kernels.push_back({name, "", ExportOp(constExp).getWorkgroups(),
                            it == shared.end() ? name : it->second});
  }
  if (failed(runPasses(kernels, options, "llvm", "cpu", [&](OpPassManager &pm) {
        cpu::buildLLVMPipeline(pm, options.cpu);
      })))
    return failure();
  if (options.dumpStage)
    options.dumpStage("llvm-cpu", kernels);
  if (options.stopAfter == Stage::LLVM) {
    out.module = OwningOpRef<ModuleOp>(cast<ModuleOp>(kernels->clone()));
    return success();
  }
  Step step(options, "code object", "cpu");
  if (failed(cpu::emitCodeObject(kernels, options.cpu, code,
                                 options.stopAfter == Stage::Assembly ? &out.text : nullptr)))
    return failure();
  for (const cpu::Kernel &k : code.kernels)
    binary.symbols.push_back(k.symbol);
  binary.lds.assign(code.kernels.size(), 0);
  setHostObject(binary, "cpu", "elf-shared-object", std::move(code));
  return success();
}

/// The HSACO of one gfx target, or the stage the options stop at. With
/// options.emulation, `binaries` also receives the emulated code object.
LogicalResult compileGfx(ModuleOp kernels, const std::vector<std::string> &names,
                         llvm::ArrayRef<ExportOp> exports, const gfx::Target &target,
                         const CompileOptions &options, StageOutput &out,
                         std::vector<Binary> &binaries) {
  gfx::GfxOptions gfxOptions = options.gfx;
  gfxOptions.target = &target;
  gfx::CodeObject code;
  std::vector<int64_t> lds;
  for (auto [name, constExp] : llvm::zip(names, exports)) {
    ExportOp exp = constExp;
    code.kernels.push_back({name, exp.getWorkgroups(), exp.getWorkgroupSize(), exp.getLds()});
    lds.push_back(exp.getLds());
  }
  std::string suffix = std::string("-") + target.name;
  if (failed(runPasses(kernels, options, "gpu", target.name, [&](OpPassManager &pm) {
        gfx::buildGpuPipeline(pm, gfxOptions);
      })))
    return failure();
  if (options.dumpStage)
    options.dumpStage("gpu" + suffix, kernels);
  if (options.stopAfter == Stage::Gpu) {
    out.module = OwningOpRef<ModuleOp>(cast<ModuleOp>(kernels->clone()));
    return success();
  }
  Binary emulated;
  if (options.emulation && options.stopAfter == Stage::Artifact &&
      failed(compileEmulation(kernels, names, target, options, lds, emulated)))
    return failure();
  if (failed(runPasses(kernels, options, "llvm", target.name, [&](OpPassManager &pm) {
        gfx::buildLLVMPipeline(pm, gfxOptions);
      })))
    return failure();
  if (options.dumpStage)
    options.dumpStage("llvm" + suffix, kernels);
  if (options.stopAfter == Stage::LLVM) {
    out.module = OwningOpRef<ModuleOp>(cast<ModuleOp>(kernels->clone()));
    return success();
  }
  Step step(options, "code object", target.name);
  if (failed(gfx::emitCodeObject(kernels, gfxOptions, code,
                                 options.stopAfter == Stage::Assembly ? &out.text : nullptr)))
    return failure();
  Binary binary;
  binary.target = code.target;
  binary.triple = code.triple;
  binary.cpu = code.cpu;
  binary.features = code.features;
  binary.format = "hsaco";
  binary.bytes = std::move(code.bytes);
  binary.symbols = names;
  for (const gfx::Kernel &k : code.kernels)
    binary.lds.push_back(k.ldsBytes);
  binaries.push_back(std::move(binary));
  if (options.emulation && options.stopAfter == Stage::Artifact)
    binaries.push_back(std::move(emulated));
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

namespace {

/// Renames the symbols of one bucket's dispatch-level module (see
/// compileBuckets) so that they cannot collide with another bucket's.
void renameBucket(ModuleOp module, int64_t batchSize) {
  std::string suffix = "_b" + std::to_string(batchSize);
  MLIRContext *ctx = module.getContext();
  for (auto executable : llvm::make_early_inc_range(module.getOps<ExecutableOp>())) {
    std::string name = (executable.getSymName() + suffix).str();
    for (VariantOp variant : executable.getOps<VariantOp>()) {
      ExportOp exp = variant.getExport();
      if (auto kernel = variant.getInnerModule().lookupSymbol<func::FuncOp>(exp.getKernel()))
        SymbolTable::setSymbolName(kernel, name);
      exp.setKernelAttr(FlatSymbolRefAttr::get(ctx, name));
    }
    (void)SymbolTable::replaceAllSymbolUses(executable, StringAttr::get(ctx, name), module);
    SymbolTable::setSymbolName(executable, name);
  }
  for (ProgramOp program : llvm::make_early_inc_range(module.getOps<ProgramOp>())) {
    std::string name = program.isPrivate() ? (program.getSymName() + suffix).str()
                                           : "batch_" + std::to_string(batchSize);
    if (!program.isPrivate())
      program->setAttr(kBatchSizeAttr, IntegerAttr::get(IntegerType::get(ctx, 64), batchSize));
    (void)SymbolTable::replaceAllSymbolUses(program, StringAttr::get(ctx, name), module);
    SymbolTable::setSymbolName(program, name);
  }
}

LogicalResult compileDispatches(ModuleOp module, CompileOptions &options,
                                InternalErrors &internal, const std::string &outputPath,
                                std::vector<StageOutput> &outputs);

} // namespace

ProgressObserver::~ProgressObserver() = default;

LogicalResult compile(OwningOpRef<ModuleOp> &module, const CompileOptions &options,
                      const std::string &outputPath, std::vector<StageOutput> &outputs) {
  std::vector<BatchBucket> buckets(1);
  buckets[0].module = std::move(module);
  LogicalResult result = compileBuckets(buckets, options, outputPath, outputs);
  module = std::move(buckets[0].module);
  return result;
}

LogicalResult compileBuckets(std::vector<BatchBucket> &buckets,
                             const CompileOptions &compileOptions,
                             const std::string &outputPath, std::vector<StageOutput> &outputs) {
  CompileOptions options = compileOptions;
  cpu::resolveTarget(options.cpu);
  // A weight packed for the few-row buckets and kept row-major for the
  // others would be stored twice: with several buckets only the rule that
  // does not depend on the rows (no elementwise op reads the product)
  // packs, the same in every bucket.
  if (buckets.size() > 1) {
    options.matmulPanelRows = 0;
    // Likewise k-major weights, which only products of more than 8 rows
    // take.
    options.kMajorWeights = false;
  }
  // Float weight panels as wide as the widest register tile (AVX-512: 32
  // columns), so that a GEMM tile of a many-row product reads one panel.
  if (options.matmulPanel > 0 && options.matmulPanelCpu)
    options.matmulPanel = std::max<int64_t>(options.matmulPanel, options.cpu.wideColumns);
  auto dump = [&](StringRef stage, Operation *ir) {
    if (options.dumpStage)
      options.dumpStage(stage, ir);
  };
  ModuleOp module = *buckets.front().module;
  dump("kiln", module);
  if (options.stopAfter == Stage::Kiln)
    return success();

  InternalErrors internal(module->getContext(), options.modelPath);
  internal.stage = "graph passes";
  for (BatchBucket &bucket : buckets)
    if (failed(runPasses(*bucket.module, options, "graph passes", "",
                         [&](OpPassManager &pm) { buildGraphPipeline(pm, options); })))
      return failure();
  if (buckets.size() > 1 || buckets.front().batchSize > 0)
    for (BatchBucket &bucket : buckets) {
      renameBucket(*bucket.module, bucket.batchSize);
      if (*bucket.module != module)
        module.getBody()->getOperations().splice(module.getBody()->end(),
                                                 bucket.module->getBody()->getOperations());
    }
  return compileDispatches(module, options, internal, outputPath, outputs);
}

namespace {

LogicalResult compileDispatches(ModuleOp module, CompileOptions &options,
                                InternalErrors &internal, const std::string &outputPath,
                                std::vector<StageOutput> &outputs) {
  auto dump = [&](StringRef stage, Operation *ir) {
    if (options.dumpStage)
      options.dumpStage(stage, ir);
  };
  dump("dispatch", module);
  if (options.stopAfter == Stage::Dispatch)
    return success();

  // The kernels' order is the executables' order; every target lowers its
  // own variants, gathered into one module per target (one code object).
  std::vector<std::string> names;
  for (auto executable : module.getOps<ExecutableOp>())
    names.push_back(executable.getSymName().str());
  for (const TargetSpec &target : options.targets) {
    StageOutput out;
    out.target = target.name;
    OwningOpRef<ModuleOp> kernels = gatherVariants(module, target.name);
    llvm::StringMap<std::string> shared;
    if (!target.gfx)
      shareIdenticalKernels(*kernels, shared);
    internal.stage = "code generation for " + target.name;
    if (failed(runPasses(*kernels, options, "linalg", target.name, [&](OpPassManager &pm) {
          if (options.testInternalError)
            pm.addPass(std::make_unique<TestInternalErrorPass>());
          if (target.gfx) {
            gfx::GfxOptions gfxOptions = options.gfx;
            gfxOptions.target = target.gfx;
            gfx::buildLinalgPipeline(pm, gfxOptions);
          } else {
            cpu::buildLinalgPipeline(pm, options.cpu);
          }
        })))
      return failure();
    dump("linalg-" + target.name, *kernels);
    if (failed(updateExports(module, target.name, *kernels, shared)))
      return failure();
    if (options.stopAfter == Stage::Linalg) {
      out.module = std::move(kernels);
      outputs.push_back(std::move(out));
      continue;
    }
    if (options.stopAfter == Stage::Gpu && !target.gfx)
      continue; // the cpu target has no gpu stage
    FailureOr<std::vector<ExportOp>> exports = exportsFor(module, target.name);
    if (failed(exports))
      return failure();
    std::vector<Binary> binaries(target.gfx ? 0 : 1);
    LogicalResult result =
        target.gfx ? compileGfx(*kernels, names, *exports, *target.gfx, options, out, binaries)
                   : compileCPU(*kernels, names, *exports, shared, options, out,
                                binaries.front());
    if (failed(result))
      return failure();
    if (options.stopAfter != Stage::Artifact)
      outputs.push_back(std::move(out));
    else
      for (const Binary &binary : binaries)
        addBinary(module, binary);
  }
  if (options.stopAfter != Stage::Artifact)
    return success();
  internal.stage = "artifact";
  if (failed(verify(module)))
    return failure();
  internal.active = false; // writing the file: errors name the path
  dump("artifact", module);
  Step step(options, "artifact");
  artifact::TranslateOptions translate;
  translate.commandLine = options.commandLine;
  translate.model = llvm::sys::path::filename(options.modelPath).str();
  return artifact::translateToArtifact(module, translate, outputPath);
}

} // namespace

} // namespace kiln::driver
