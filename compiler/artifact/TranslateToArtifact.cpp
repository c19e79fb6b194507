//===- TranslateToArtifact.cpp - final module -> .kiln --------------------===//
//
// Reads only the IR: programs (inputs, outputs, launches and their
// bindings), executables (kernel order, names of the fused ONNX nodes,
// FLOPs and bytes from the exports) and binaries (code objects and their
// kernel tables), and hands them to the artifact writer.
//
//===----------------------------------------------------------------------===//

#include "artifact/TranslateToArtifact.h"
#include "artifact/ArtifactWriter.h"
#include "kiln/Dialect/KilnDialect.h"
#include "kiln/Passes/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/StringExtras.h"

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

BindingDesc bindingDesc(BindingAttr binding, uint64_t constantBase) {
  if (binding.getKind() == kiln::BindingKind::Constant)
    return {BindingDesc::Constant, constantBase + binding.getOffset(), binding.getSize()};
  return {BindingDesc::Arena, binding.getOffset(), binding.getSize()};
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
    auto programs = llvm::to_vector(module.getOps<ProgramOp>());
    if (programs.empty())
      return emitError(module.getLoc()) << "the module has no kiln.program";
    if (failed(addTensors(programs.front())))
      return failure();
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
  LogicalResult addTensors(ProgramOp program) {
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
      writer.addInput(*d);
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
      writer.addOutput(*d);
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
  /// its pool (the pool starts at the next aligned offset of the section).
  LogicalResult addConstants(ProgramOp program, uint64_t &base) {
    base = (writer.constantsSize() + 63) / 64 * 64;
    for (auto cst : program.getBody().front().getOps<ConstantOp>()) {
      auto type = cast<RankedTensorType>(cst.getType());
      uint64_t size = storageBytes(type);
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
      planned.push_back({cst, offset - base});
    }
    return success();
  }

  LogicalResult addProgram(ProgramOp program) {
    if (!program.isPlanned())
      return program.emitOpError("has no memory plan (run kiln-plan-memory)");
    uint64_t base = 0;
    planned.clear();
    if (failed(addConstants(program, base)))
      return failure();
    // The pool the plan assumed must be the one written (both place each
    // constant at the next 64-byte boundary in program order).
    llvm::DenseMap<Operation *, uint64_t> storedAt(planned.begin(), planned.end());
    auto check = [&](Value value, BindingAttr binding) -> LogicalResult {
      if (binding.getKind() != kiln::BindingKind::Constant)
        return success();
      Value source = value;
      while (auto reshape = source.getDefiningOp<ReshapeOp>())
        source = reshape.getInput();
      auto cst = source.getDefiningOp<ConstantOp>();
      if (!cst || storedAt.lookup(cst) != binding.getOffset())
        return program.emitOpError("constant binding at ")
               << binding.getOffset() << " does not match the stored constant pool";
      return success();
    };

    ProgramDesc desc;
    desc.name = program.getSymName().str();
    desc.arenaSize = *program.getArenaSize();
    for (Attribute attr : program.getInputBindingsAttr())
      desc.inputs.push_back(bindingDesc(cast<BindingAttr>(attr), base));
    auto ret = cast<ReturnOp>(program.getBody().front().getTerminator());
    for (auto [i, value, attr] :
         llvm::enumerate(ret.getValues(), program.getOutputBindingsAttr())) {
      if (failed(check(value, cast<BindingAttr>(attr))))
        return failure();
      if (isExtent(program, i))
        continue;
      if (auto extent = program.getResultAttrOfType<DenseI64ArrayAttr>(i, kExtentAttr))
        desc.extents.push_back(
            {uint32_t(desc.outputs.size()),
             bindingDesc(cast<BindingAttr>(program.getOutputBindingsAttr()[extent[1]]), base)});
      desc.outputs.push_back(bindingDesc(cast<BindingAttr>(attr), base));
    }
    for (auto launch : program.getBody().front().getOps<LaunchOp>()) {
      auto kernel = kernelIndex.find(launch.getCallee());
      if (kernel == kernelIndex.end())
        return launch.emitOpError("launches '") << launch.getCallee()
               << "', which is not a kiln.executable of the module";
      ExecutableOp executable = executables[kernel->second];
      DispatchDesc dispatch;
      dispatch.kernel = kernel->second;
      for (auto [value, attr] : llvm::zip(launch.getOperands(), launch.getOperandBindingsAttr())) {
        if (failed(check(value, cast<BindingAttr>(attr))))
          return failure();
        dispatch.bindings.push_back(bindingDesc(cast<BindingAttr>(attr), base));
      }
      for (Attribute attr : launch.getResultBindingsAttr())
        dispatch.bindings.push_back(bindingDesc(cast<BindingAttr>(attr), base));
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
    }
    writer.addProgram(std::move(desc));
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
  std::vector<std::pair<Operation *, uint64_t>> planned;
};

} // namespace

LogicalResult translateToArtifact(ModuleOp module, const TranslateOptions &options,
                                  const std::string &path) {
  return Translation(module, options).run(path);
}

} // namespace kiln::artifact
