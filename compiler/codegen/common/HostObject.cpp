//===- HostObject.cpp - LLVM IR -> object -> shared object with lld -------===//
//
// Emission shared by the code generators: the x86-64 translation, optimization
// and entry points of host code objects (cpu kernels, emulated gfx kernels),
// and the object emission and ld.lld link of every target (HSACO included).
//
//===----------------------------------------------------------------------===//

#include "codegen/common/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;

/// Alignment of every cpu kernel function: a cache line.
constexpr unsigned kKernelAlignment = 64;

namespace kiln::codegen {

namespace {

LogicalResult fail(ModuleOp module, const Twine &message) {
  return emitError(module.getLoc()) << message;
}

} // namespace

void resolveHostCPU(std::string &cpu, std::string &features) {
  if (cpu != "host")
    return;
  cpu = llvm::sys::getHostCPUName().str();
  llvm::SmallVector<std::string> hostFeatures;
  for (auto &[feature, enabled] : llvm::sys::getHostCPUFeatures())
    hostFeatures.push_back((enabled ? "+" : "-") + feature.str());
  llvm::sort(hostFeatures);
  features = llvm::join(hostFeatures, ",");
}

LogicalResult linkSharedObject(ModuleOp module, llvm::StringRef object, std::string &out) {
  // Link the relocatable object into a shared object with lld.
  llvm::SmallString<128> objectPath, sharedPath;
  int fd;
  if (llvm::sys::fs::createTemporaryFile("kiln-kernels", "o", fd, objectPath))
    return fail(module, "cannot create a temporary object file");
  {
    llvm::raw_fd_ostream file(fd, /*shouldClose=*/true);
    file << object;
  }
  if (llvm::sys::fs::createTemporaryFile("kiln-kernels", "so", sharedPath)) {
    llvm::sys::fs::remove(objectPath);
    return fail(module, "cannot create a temporary shared object path");
  }
  auto cleanup = llvm::make_scope_exit([&] {
    llvm::sys::fs::remove(objectPath);
    llvm::sys::fs::remove(sharedPath);
  });
  llvm::ErrorOr<std::string> lld =
      llvm::sys::findProgramByName("ld.lld", {"/usr/lib/llvm-22/bin"});
  if (!lld)
    lld = llvm::sys::findProgramByName("ld.lld-22");
  if (!lld)
    return fail(module, "ld.lld (lld-22) not found; install Debian's lld-22");
  llvm::SmallVector<llvm::StringRef> argv = {
      *lld, "-shared", "--no-undefined-version", "-z", "noexecstack",
      "--gc-sections", "-O2", "-o", sharedPath, objectPath};
  std::string linkError;
  int rc = llvm::sys::ExecuteAndWait(*lld, argv, std::nullopt, {}, 0, 0, &linkError);
  if (rc != 0)
    return fail(module, "linking the kernels with ld.lld failed" +
                            (linkError.empty() ? "" : ": " + linkError));
  auto so = llvm::MemoryBuffer::getFile(sharedPath);
  if (!so)
    return fail(module, "cannot read the linked kernels back");
  out = (*so)->getBuffer().str();
  return success();
}

void defineEntry(llvm::Module &module, llvm::Function *inner, const std::string &name,
                 llvm::Type *second,
                 llvm::function_ref<void(llvm::IRBuilderBase &, llvm::Function *,
                                         SmallVectorImpl<llvm::Value *> &)>
                     arguments) {
  llvm::LLVMContext &ctx = module.getContext();
  inner->setName(name + ".body");
  inner->setLinkage(llvm::GlobalValue::InternalLinkage);
  inner->addFnAttr(llvm::Attribute::AlwaysInline);
  auto *ptrTy = llvm::PointerType::get(ctx, 0);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptrTy, second}, false);
  auto *entry = llvm::Function::Create(type, llvm::GlobalValue::ExternalLinkage, name, module);
  entry->setVisibility(llvm::GlobalValue::DefaultVisibility);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", entry));
  SmallVector<llvm::Value *> args;
  arguments(b, entry, args);
  b.CreateCall(inner, args);
  b.CreateRetVoid();
}

void attachLoopAnnotations(Operation *root) {
  constexpr llvm::StringLiteral name = "llvm.loop_annotation";
  root->walk([&](Operation *op) {
    auto annotation = op->getAttrOfType<LLVM::LoopAnnotationAttr>(name);
    if (!annotation)
      return;
    if (auto br = dyn_cast<LLVM::BrOp>(op))
      br.setLoopAnnotationAttr(annotation);
    else if (auto condBr = dyn_cast<LLVM::CondBrOp>(op))
      condBr.setLoopAnnotationAttr(annotation);
    else
      return;
    op->removeDiscardableAttr(name);
  });
}

/// Defines compiler-rt's `__truncsfbf2` (f32 -> bf16, rounding to nearest
/// even; a NaN stays a quiet NaN) in the code object, hidden. Without
/// AVX-512 BF16 the x86 backend keeps scalar bf16 values in f32 registers
/// and calls it to store one (an element extracted from a bf16 vector), and
/// the code objects link no runtime library that would define it.
static void defineBF16Truncation(llvm::Module &module, StringRef cpu, StringRef features) {
  llvm::Function *existing = module.getFunction("__truncsfbf2");
  if (existing && !existing->isDeclaration())
    return;
  llvm::LLVMContext &ctx = module.getContext();
  llvm::Type *f32 = llvm::Type::getFloatTy(ctx), *bf16 = llvm::Type::getBFloatTy(ctx);
  llvm::Type *i32 = llvm::Type::getInt32Ty(ctx), *i16 = llvm::Type::getInt16Ty(ctx);
  llvm::Function *f = existing;
  if (!f)
    f = llvm::Function::Create(llvm::FunctionType::get(bf16, {f32}, false),
                               llvm::GlobalValue::ExternalLinkage, "__truncsfbf2", module);
  f->setVisibility(llvm::GlobalValue::HiddenVisibility);
  f->addFnAttr("target-cpu", cpu);
  if (!features.empty())
    f->addFnAttr("target-features", features);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Value *x = f->getArg(0);
  llvm::Value *bits = b.CreateBitCast(x, i32);
  llvm::Value *odd = b.CreateAnd(b.CreateLShr(bits, 16), 1);
  llvm::Value *rounded = b.CreateAdd(bits, b.CreateAdd(odd, b.getInt32(0x7fff)));
  llvm::Value *quiet = b.CreateOr(bits, b.getInt32(0x00400000));
  llvm::Value *result = b.CreateSelect(b.CreateFCmpUNO(x, x), quiet, rounded);
  b.CreateRet(b.CreateBitCast(b.CreateTrunc(b.CreateLShr(result, 16), i16), bf16));
}

LogicalResult emitHostObject(ModuleOp module, StringRef hostCPU, StringRef hostFeatures,
                             llvm::function_ref<LogicalResult(llvm::Module &)> addEntries,
                             HostObject &object, std::string *assembly) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();

  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  module->getContext()->appendDialectRegistry(registry);

  attachLoopAnnotations(module);
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "kiln_kernels");
  if (!llvmModule)
    return fail(module, "failed to translate the kernels to LLVM IR");

  llvm::Triple triple("x86_64-unknown-linux-gnu");
  std::string cpu = hostCPU.str(), features = hostFeatures.str();
  resolveHostCPU(cpu, features);
  // Strided epilogue loops otherwise become AVX-512 scatters (SLP across the
  // unrolled rows of a tile), which are far slower than row-wise stores.
  features += std::string(features.empty() ? "" : ",") + "+prefer-no-scatter,+prefer-no-gather";
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return fail(module, "no x86-64 target in this LLVM: " + error);
  llvm::TargetOptions targetOptions;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return fail(module, "cannot create an x86-64 target machine for cpu '" + cpu + "'");
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(triple);

  if (failed(addEntries(*llvmModule)))
    return failure();
  for (llvm::Function &f : *llvmModule)
    if (!f.isDeclaration()) {
      f.addFnAttr("target-cpu", cpu);
      if (!features.empty())
        f.addFnAttr("target-features", features);
    }

  auto optimize = makeOptimizingTransformer(3, 0, machine.get());
  if (llvm::Error err = optimize(llvmModule.get()))
    return fail(module, "LLVM optimization failed: " + llvm::toString(std::move(err)));
  // After optimization, which would drop it as unused: the backend's calls
  // appear only during instruction selection.
  defineBF16Truncation(*llvmModule, cpu, features);
  // Every kernel starts on a cache line, so that its loops sit at the same
  // offsets from line boundaries whatever precedes it in the object: at
  // x86's default 16 bytes, a change to one kernel moved the next ones, and
  // the LLaMA-style head's unchanged code ran 3% slower 16 bytes off.
  for (llvm::Function &f : *llvmModule)
    if (!f.isDeclaration())
      f.setAlignment(llvm::Align(kKernelAlignment));

  object.triple = triple.str();
  object.cpu = cpu;
  object.features = features;
  return emitAndLink(module, *machine, *llvmModule, object.bytes, assembly);
}

LogicalResult emitAndLink(ModuleOp module, llvm::TargetMachine &machine,
                          llvm::Module &llvmModule, std::string &linked,
                          std::string *assembly) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager codegen;
  auto fileType = assembly ? llvm::CodeGenFileType::AssemblyFile
                           : llvm::CodeGenFileType::ObjectFile;
  if (machine.addPassesToEmitFile(codegen, os, nullptr, fileType))
    return fail(module, "the " + machine.getTargetTriple().str() +
                            " target cannot emit this file type");
  codegen.run(llvmModule);
  if (assembly) {
    *assembly = buffer.str().str();
    return success();
  }
  return linkSharedObject(module, buffer, linked);
}

} // namespace kiln::codegen
