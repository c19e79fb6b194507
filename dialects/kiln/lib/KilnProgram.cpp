//===- KilnProgram.cpp - the compiled program's ops and attributes --------===//
//
// Verifiers of kiln.program, kiln.launch, kiln.executable, kiln.variant,
// kiln.export and of the #kiln.binding / #kiln.target attributes: the
// contract between memory planning, code generation and the artifact is
// checked wherever the IR is verified, not when the artifact is written.
//
//===----------------------------------------------------------------------===//

#include "kiln/Dialect/KilnDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Interfaces/FunctionImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace kiln;

#include "kiln/Dialect/KilnEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "kiln/Dialect/KilnAttrs.cpp.inc"

uint64_t kiln::storageBytes(RankedTensorType type) {
  unsigned bits = type.getElementType().getIntOrFloatBitWidth();
  uint64_t elementBytes = (bits + 7) / 8;
  return elementBytes * static_cast<uint64_t>(type.getNumElements());
}

// (Besides the rules in KilnDialect.h: a slice the program returns, directly
// or through other views, is no view.)
std::optional<uint64_t> kiln::sliceViewOffset(Operation *op) {
  auto slice = dyn_cast<SliceOp>(op);
  if (!slice)
    return std::nullopt;
  auto in = cast<RankedTensorType>(slice.getInput().getType());
  auto out = cast<RankedTensorType>(slice.getType());
  if (!in.hasStaticShape() || !out.hasStaticShape() || out.getNumElements() == 0 ||
      in.getElementType().getIntOrFloatBitWidth() % 8 != 0 ||
      llvm::any_of(slice.getSteps(), [](int64_t step) { return step != 1; }))
    return std::nullopt;
  Value source = slice.getInput();
  while (auto reshape = source.getDefiningOp<ReshapeOp>())
    source = reshape.getInput();
  if (source.getDefiningOp<ConstantOp>())
    return std::nullopt;
  // A view the program returns (directly or through other views) would make
  // an output part of a larger buffer, which the runtime cannot write in
  // place: such a slice is copied by a kernel.
  SmallVector<Value> views{slice.getResult()};
  while (!views.empty()) {
    Value view = views.pop_back_val();
    for (Operation *user : view.getUsers()) {
      if (user->hasTrait<OpTrait::IsTerminator>())
        return std::nullopt;
      if (isa<ReshapeOp, SliceOp>(user))
        views.push_back(user->getResult(0));
    }
  }
  // The first dimension the slice cuts; those before it must be 1 in the
  // result, those after it whole.
  int64_t rank = in.getRank();
  // (A slice that cuts nothing is the whole input.)
  int64_t first = 0;
  while (first < rank && out.getDimSize(first) == in.getDimSize(first))
    ++first;
  if (first < rank)
    for (int64_t d = 0; d < rank; ++d)
      if ((d < first && out.getDimSize(d) != 1) ||
          (d > first && out.getDimSize(d) != in.getDimSize(d)))
        return std::nullopt;
  // Row-major offset of the first element.
  ArrayRef<int64_t> starts = slice.getStarts();
  uint64_t offset = 0, stride = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    int64_t start = starts[d] < 0 ? starts[d] + in.getDimSize(d) : starts[d];
    start = std::clamp<int64_t>(start, 0, in.getDimSize(d));
    offset += uint64_t(start) * stride;
    stride *= uint64_t(in.getDimSize(d));
  }
  offset *= in.getElementType().getIntOrFloatBitWidth() / 8;
  if (offset % 64 != 0)
    return std::nullopt;
  return offset;
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

LogicalResult BindingAttr::verify(function_ref<InFlightDiagnostic()> emitError, BindingKind kind,
                                  uint64_t offset, uint64_t size) {
  if (kind != BindingKind::Constant && offset % 64 != 0)
    return emitError() << "binding offset " << offset << " is not 64-byte aligned";
  if (offset + size < offset)
    return emitError() << "binding [" << offset << ", +" << size << ") wraps around";
  return success();
}

LogicalResult TargetAttr::verify(function_ref<InFlightDiagnostic()> emitError, StringRef name,
                                 DictionaryAttr options) {
  StringRef chip = name;
  chip.consume_front("emu:");
  if (name == "cpu")
    return success();
  if (chip.size() > 3 && chip.starts_with("gfx") &&
      llvm::all_of(chip.drop_front(3), [](char c) { return llvm::isAlnum(c); }))
    return success();
  return emitError() << "target '" << name << "' is neither cpu, a gfx target (gfx942) "
                        "nor an emulated one (emu:gfx942)";
}

//===----------------------------------------------------------------------===//
// kiln.program
//===----------------------------------------------------------------------===//

ParseResult ProgramOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildType = [](Builder &b, ArrayRef<Type> args, ArrayRef<Type> results,
                      function_interface_impl::VariadicFlag, std::string &) {
    return b.getFunctionType(args, results);
  };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false, getFunctionTypeAttrName(result.name), buildType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void ProgramOp::print(OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(p, *this, /*isVariadic=*/false,
                                           getFunctionTypeAttrName(), getArgAttrsAttrName(),
                                           getResAttrsAttrName());
}

namespace {

/// Checks `bindings` against the tensors they place: one each, the sizes of
/// the types, inside the arena.
LogicalResult verifyBindings(Operation *op, StringRef what, ArrayAttr bindings, TypeRange types,
                             uint64_t arenaSize) {
  if (bindings.size() != types.size())
    return op->emitOpError() << "has " << bindings.size() << " " << what << " bindings for "
                             << types.size() << " " << what << "s";
  for (auto [i, attr, type] : llvm::enumerate(bindings, types)) {
    auto binding = cast<BindingAttr>(attr);
    uint64_t bytes = storageBytes(cast<RankedTensorType>(type));
    if (binding.getSize() != bytes)
      return op->emitOpError() << what << " " << i << " is bound to " << binding.getSize()
                               << " bytes, its type " << type << " needs " << bytes;
    if (binding.getKind() != BindingKind::Constant && binding.getEnd() > arenaSize)
      return op->emitOpError() << what << " " << i << " is bound past the end of the arena ("
                               << binding.getEnd() << " > " << arenaSize << ")";
  }
  return success();
}

} // namespace

LogicalResult ProgramOp::verify() {
  for (Type type : llvm::concat<const Type>(getArgumentTypes(), getResultTypes()))
    if (!isa<RankedTensorType>(type) || !cast<RankedTensorType>(type).hasStaticShape())
      return emitOpError() << "inputs and outputs must be statically shaped tensors, not " << type;
  // Data-dependent sizes: kiln.extent = [axis, extent result].
  ArrayRef<Type> results = getResultTypes();
  llvm::SmallDenseSet<int64_t> extents;
  for (unsigned i = 0; i < results.size(); ++i) {
    Attribute attr = getResultAttr(i, kExtentAttr);
    if (!attr)
      continue;
    auto extent = dyn_cast<DenseI64ArrayAttr>(attr);
    if (!extent || extent.size() != 2)
      return emitOpError() << "result " << i << ": '" << kExtentAttr
                           << "' must be array<i64: axis, extent result>, not " << attr;
    auto type = cast<RankedTensorType>(results[i]);
    if (extent[0] < 0 || extent[0] >= type.getRank())
      return emitOpError() << "result " << i << ": extent axis " << extent[0]
                           << " is out of range for " << type;
    int64_t e = extent[1];
    if (e < 0 || e >= int64_t(results.size()) || e == int64_t(i))
      return emitOpError() << "result " << i << ": extent result " << e << " is out of range";
    auto extentType = cast<RankedTensorType>(results[e]);
    if (extentType.getRank() != 0 || !extentType.getElementType().isInteger(64))
      return emitOpError() << "result " << i << ": extent result " << e
                           << " must be a tensor<i64>, not " << extentType;
    extents.insert(e); // outputs of one op (Unique's) share their extent
  }
  for (int64_t e : extents)
    if (getResultAttr(e, kExtentAttr))
      return emitOpError() << "result " << e << " is an extent and has an extent itself";
  if (!isPlanned()) {
    if (getInputBindings() || getOutputBindings())
      return emitOpError("has bindings but no arena size");
    return success();
  }
  if (*getArenaSize() < 0)
    return emitOpError("has a negative arena size");
  if (!getInputBindings() || !getOutputBindings())
    return emitOpError("has an arena but no input or output bindings");
  uint64_t arena = *getArenaSize();
  if (failed(verifyBindings(*this, "input", getInputBindingsAttr(), getArgumentTypes(), arena)) ||
      failed(verifyBindings(*this, "output", getOutputBindingsAttr(), getResultTypes(), arena)))
    return failure();
  for (auto [i, attr] : llvm::enumerate(getInputBindingsAttr()))
    if (cast<BindingAttr>(attr).getKind() != BindingKind::Input)
      return emitOpError() << "input " << i << " must have an input binding";
  for (auto [i, attr] : llvm::enumerate(getOutputBindingsAttr()))
    if (cast<BindingAttr>(attr).getKind() == BindingKind::Arena)
      return emitOpError() << "output " << i
                           << " must have an output, input or constant binding, not arena";
  return success();
}

LogicalResult ProgramOp::verifyRegions() {
  Block &block = getBody().front();
  if (block.getNumArguments() != getArgumentTypes().size())
    return emitOpError("entry block must have one argument per input");
  for (Operation &op : block)
    if (!isa<LaunchOp, IfOp, LoopOp, ReturnOp, ConstantOp, ReshapeOp>(op) && !sliceViewOffset(&op))
      return op.emitOpError("cannot be part of a program; expected kiln.launch, kiln.if, "
                            "kiln.loop, kiln.constant, kiln.reshape, a kiln.slice that is a "
                            "view (contiguous, 64-byte aligned, of a computed value) or "
                            "kiln.return");
  return success();
}

LogicalResult ReturnOp::verify() {
  auto program = cast<ProgramOp>((*this)->getParentOp());
  if (TypeRange(getValues().getTypes()) != TypeRange(program.getResultTypes()))
    return emitOpError("returns ") << getValues().getTypes() << ", the program's outputs are "
                                   << program.getResultTypes();
  return success();
}

//===----------------------------------------------------------------------===//
// kiln.launch
//===----------------------------------------------------------------------===//

namespace {

/// The kind of binding the program gives `value`: input for its arguments,
/// constant for constants (seen through reshapes), else arena or output.
std::optional<BindingKind> requiredKind(Value value) {
  while (isa_and_nonnull<ReshapeOp, SliceOp>(value.getDefiningOp()))
    value = value.getDefiningOp()->getOperand(0);
  if (isa<BlockArgument>(value))
    return BindingKind::Input;
  if (value.getDefiningOp<ConstantOp>())
    return BindingKind::Constant;
  return std::nullopt;
}

/// The placement of a command of a program (kiln.launch, kiln.if,
/// kiln.loop): none before memory planning, else one binding per operand and
/// result, of the kind its value needs, and for control flow a scratch range
/// of at least `minScratch` bytes in the arena. Outside a program (in the
/// function the importer made) there is no placement.
LogicalResult verifyPlacement(Operation *op, ArrayAttr operandBindings, ArrayAttr resultBindings,
                              std::optional<BindingAttr> scratch, uint64_t minScratch) {
  auto program = dyn_cast<ProgramOp>(op->getParentOp());
  bool placed = operandBindings || resultBindings || (scratch && *scratch);
  if (!program || !program.isPlanned()) {
    if (placed)
      return op->emitOpError("has bindings outside a program with a memory plan");
    return success();
  }
  if (!operandBindings || !resultBindings)
    return op->emitOpError("has no bindings in a program with a memory plan");
  uint64_t arena = *program.getArenaSize();
  if (failed(verifyBindings(op, "operand", operandBindings, op->getOperandTypes(), arena)) ||
      failed(verifyBindings(op, "result", resultBindings, op->getResultTypes(), arena)))
    return failure();
  if (scratch) {
    if (!*scratch)
      return op->emitOpError("has no scratch range in a program with a memory plan");
    if ((*scratch).getKind() != BindingKind::Arena || (*scratch).getEnd() > arena ||
        (*scratch).getSize() < minScratch)
      return op->emitOpError() << "needs a scratch range of at least " << minScratch
                               << " bytes inside the arena of " << arena << " bytes, not "
                               << *scratch;
  }
  for (auto [i, value, attr] : llvm::enumerate(op->getOperands(), operandBindings)) {
    BindingKind kind = cast<BindingAttr>(attr).getKind();
    std::optional<BindingKind> required = requiredKind(value);
    if (required ? kind != *required
                 : kind != BindingKind::Arena && kind != BindingKind::Output)
      return op->emitOpError() << "operand " << i << " has a " << stringifyBindingKind(kind)
                               << " binding; its value needs "
                               << (required ? stringifyBindingKind(*required) : "arena or output");
  }
  for (auto [i, attr] : llvm::enumerate(resultBindings)) {
    BindingKind kind = cast<BindingAttr>(attr).getKind();
    if (kind != BindingKind::Arena && kind != BindingKind::Output)
      return op->emitOpError() << "result " << i << " has a " << stringifyBindingKind(kind)
                               << " binding; results live in the arena (arena or output)";
  }
  return success();
}

/// Whether `type` is a tensor of one element of `bits`-bit integers.
bool isScalarOf(Type type, unsigned bits) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() && tensor.getNumElements() == 1 &&
         tensor.getElementType().isInteger(bits);
}

/// The function (before outlining) or program `name` that a control-flow op
/// runs, or an error naming `role`.
FailureOr<FunctionType> calleeType(Operation *op, SymbolTableCollection &symbols,
                                   FlatSymbolRefAttr name, StringRef role) {
  Operation *callee = symbols.lookupNearestSymbolFrom(op, name);
  if (auto func = dyn_cast_or_null<func::FuncOp>(callee); func && !func.isExternal())
    return func.getFunctionType();
  if (auto program = dyn_cast_or_null<ProgramOp>(callee))
    return program.getFunctionType();
  return op->emitOpError() << "names " << role << " '" << name.getValue()
                           << "', which is neither a function with a body nor a kiln.program";
}

} // namespace

LogicalResult LaunchOp::verify() {
  return verifyPlacement(*this, getOperandBindingsAttr(), getResultBindingsAttr(), std::nullopt,
                         0);
}

//===----------------------------------------------------------------------===//
// kiln.if, kiln.loop
//===----------------------------------------------------------------------===//

LogicalResult IfOp::verify() {
  if (!isScalarOf(getCond().getType(), 1))
    return emitOpError() << "cond must be a boolean tensor of one element, not "
                         << getCond().getType();
  return verifyPlacement(*this, getOperandBindingsAttr(), getResultBindingsAttr(),
                         getScratchAttr(), 0);
}

LogicalResult IfOp::verifySymbolUses(SymbolTableCollection &symbols) {
  for (auto [role, name, operands] :
       {std::tuple{"then branch", getThenBranchAttr(), getThenOperands()},
        std::tuple{"else branch", getElseBranchAttr(), getElseOperands()}}) {
    FailureOr<FunctionType> type = calleeType(*this, symbols, name, role);
    if (failed(type))
      return failure();
    if (TypeRange(type->getInputs()) != TypeRange(operands.getTypes()) ||
        TypeRange(type->getResults()) != TypeRange(getResultTypes()))
      return emitOpError() << "the " << role << " '" << name.getValue() << "' has type " << *type
                           << "; the op gives it " << operands.getTypes() << " and expects "
                           << getResultTypes();
  }
  return success();
}

LogicalResult LoopOp::verify() {
  if (!isScalarOf(getTripCount().getType(), 64))
    return emitOpError() << "trip_count must be an i64 tensor of one element, not "
                         << getTripCount().getType();
  if (!isScalarOf(getCond().getType(), 1))
    return emitOpError() << "cond must be a boolean tensor of one element, not "
                         << getCond().getType();
  if (getNumResults() < getInit().size())
    return emitOpError() << "has " << getNumResults() << " results for " << getInit().size()
                         << " carried values";
  if (TypeRange(getInit().getTypes()) !=
      TypeRange(getResultTypes()).take_front(getInit().size()))
    return emitOpError() << "carried values of types " << getInit().getTypes()
                         << " must keep them as results";
  for (Value scanned : getScanned())
    if (cast<RankedTensorType>(scanned.getType()).getRank() < 1)
      return emitOpError() << "scanned result " << scanned.getType()
                           << " needs a leading iteration dimension";
  for (Value input : getScanInputs())
    if (cast<RankedTensorType>(input.getType()).getRank() < 1)
      return emitOpError() << "scan input " << input.getType()
                           << " needs a leading dimension of rows";
  return verifyPlacement(*this, getOperandBindingsAttr(), getResultBindingsAttr(),
                         getScratchAttr(), 64);
}

LogicalResult LoopOp::verifySymbolUses(SymbolTableCollection &symbols) {
  FailureOr<FunctionType> type = calleeType(*this, symbols, getBodyAttr(), "body");
  if (failed(type))
    return failure();
  size_t carried = getInit().size(), scans = getScanInputs().size();
  ArrayRef<Type> inputs = type->getInputs(), results = type->getResults();
  auto mismatch = [&]() {
    return emitOpError() << "the body '" << getBody() << "' has type " << *type
                         << "; it must take (iteration, cond, carried..., rows..., "
                            "captures...) and return (cond, carried..., scanned...) for the "
                            "op's types";
  };
  SmallVector<Type> rows;
  for (Type input : getScanInputs().getTypes()) {
    auto stacked = cast<RankedTensorType>(input);
    rows.push_back(RankedTensorType::get(stacked.getShape().drop_front(),
                                         stacked.getElementType()));
  }
  if (inputs.size() != 2 + carried + scans + getCaptures().size() ||
      !isScalarOf(inputs[0], 64) || !isScalarOf(inputs[1], 1) ||
      TypeRange(inputs.slice(2, carried)) != TypeRange(getInit().getTypes()) ||
      TypeRange(inputs.slice(2 + carried, scans)) != TypeRange(rows) ||
      TypeRange(inputs.drop_front(2 + carried + scans)) != TypeRange(getCaptures().getTypes()))
    return mismatch();
  if (results.size() != 1 + getNumResults() || !isScalarOf(results[0], 1) ||
      TypeRange(results.slice(1, carried)) != TypeRange(getInit().getTypes()))
    return mismatch();
  for (auto [bodyType, resultType] :
       llvm::zip(results.drop_front(1 + carried), getScanned().getTypes())) {
    auto row = cast<RankedTensorType>(bodyType);
    auto stacked = cast<RankedTensorType>(resultType);
    if (stacked.getShape().drop_front() != row.getShape() ||
        stacked.getElementType() != row.getElementType())
      return emitOpError() << "scanned result " << stacked << " does not stack the body's "
                           << row;
  }
  return success();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbols) {
  Operation *callee = symbols.lookupNearestSymbolFrom(*this, getCalleeAttr());
  if (auto executable = dyn_cast_or_null<ExecutableOp>(callee))
    return success();
  auto func = dyn_cast_or_null<func::FuncOp>(callee);
  if (!func)
    return emitOpError() << "launches '" << getCallee()
                         << "', which is neither a kiln.executable nor a dispatch function";
  if (TypeRange(func.getFunctionType().getInputs()) != TypeRange(getOperands().getTypes()) ||
      TypeRange(func.getFunctionType().getResults()) != TypeRange(getResultTypes()))
    return emitOpError() << "operand or result types do not match the dispatch function "
                         << func.getFunctionType();
  return success();
}

//===----------------------------------------------------------------------===//
// kiln.executable, kiln.variant, kiln.export
//===----------------------------------------------------------------------===//

VariantOp ExecutableOp::lookupVariant(StringRef target) {
  for (auto variant : getBlock().getOps<VariantOp>())
    if (variant.getTarget().getName() == target)
      return variant;
  return nullptr;
}

LogicalResult ExecutableOp::verifyRegions() {
  llvm::StringSet<llvm::MallocAllocator> targets;
  for (Operation &op : getBlock()) {
    if (auto variant = dyn_cast<VariantOp>(op)) {
      if (!targets.insert(variant.getTarget().getName()).second)
        return variant.emitOpError() << "is the second variant for target '"
                                     << variant.getTarget().getName() << "'";
      continue;
    }
    return op.emitOpError("cannot be part of a kiln.executable; expected kiln.variant");
  }
  return success();
}

ExportOp VariantOp::getExport() {
  auto exports = getBlock().getOps<ExportOp>();
  return exports.empty() ? nullptr : *exports.begin();
}

ModuleOp VariantOp::getInnerModule() {
  auto modules = getBlock().getOps<ModuleOp>();
  return modules.empty() ? nullptr : *modules.begin();
}

LogicalResult VariantOp::verifyRegions() {
  unsigned exports = 0, modules = 0;
  for (Operation &op : getBlock()) {
    if (isa<ExportOp>(op))
      ++exports;
    else if (isa<ModuleOp>(op))
      ++modules;
    else
      return op.emitOpError("cannot be part of a kiln.variant; expected kiln.export and "
                            "builtin.module");
  }
  if (exports != 1 || modules != 1)
    return emitOpError() << "must hold one kiln.export and one builtin.module, not " << exports
                         << " and " << modules;
  return success();
}

LogicalResult ExportOp::verify() {
  auto variant = cast<VariantOp>((*this)->getParentOp());
  ModuleOp module = variant.getInnerModule();
  if (module && !SymbolTable::lookupSymbolIn(module, getKernelAttr()))
    return emitOpError() << "names kernel '" << getKernel() << "', which the variant's module "
                         << "does not define";
  if (variant.getTarget().isCpu() && getWorkgroupSize() != 1)
    return emitOpError() << "has " << getWorkgroupSize()
                         << " threads per workgroup; cpu workgroups run on one thread";
  return success();
}

LogicalResult BinaryOp::verify() {
  if (getKernels().size() != getKernelLds().size())
    return emitOpError() << "has " << getKernels().size() << " kernels but "
                         << getKernelLds().size() << " LDS sizes";
  auto data = dyn_cast<ShapedType>(getData().getType());
  if (!data || data.getRank() != 1 || !data.getElementType().isInteger(8))
    return emitOpError("data must be a 1-d tensor of i8");
  return success();
}

//===----------------------------------------------------------------------===//
// Discardable kiln.* attributes
//===----------------------------------------------------------------------===//

LogicalResult KilnDialect::verifyOperationAttribute(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  auto isI64 = [](Attribute a) {
    auto i = dyn_cast<IntegerAttr>(a);
    return i && i.getType().isInteger(64);
  };
  // The marks the code generators leave for each other, by kind of value.
  if (name == "kiln.dispatch") {
    if (!isa<UnitAttr>(value) || !isa<FunctionOpInterface>(op))
      return op->emitError() << "'kiln.dispatch' must be a unit attribute on a function";
    return success();
  }
  if (name == "kiln.workgroup_count" || name == "kiln.workgroup_size" ||
      name == "kiln.thread_tiles" || name == "kiln.lds_bytes" || name == "kiln.flops") {
    if (!isI64(value) || cast<IntegerAttr>(value).getInt() < 0)
      return op->emitError() << "'" << name << "' must be a non-negative i64, not " << value;
    return success();
  }
  if (name == "kiln.matrix_instruction") {
    if (!isa<StringAttr>(value))
      return op->emitError() << "'" << name << "' must be a string, not " << value;
    return success();
  }
  if (name == "kiln.packed_tile") {
    if (!isa<DenseI64ArrayAttr>(value))
      return op->emitError() << "'" << name << "' must be an array<i64>, not " << value;
    return success();
  }
  if (name == "kiln.workgroup_memory" || name == "kiln.emu_kernel" ||
      name == "kiln.int4_matmul" || name == "kiln.panel_matmul") {
    if (!isa<UnitAttr>(value))
      return op->emitError() << "'" << name << "' must be a unit attribute";
    return success();
  }
  if (name == kFourBitAttr) {
    // On kiln.matmul_integer of 8-bit operands (or the kiln.matmul_panels
    // kiln-pack-matmul-panels makes of it), or the linalg contraction it
    // lowers to.
    bool bytes = false;
    if (auto matmul = dyn_cast<MatmulIntegerOp>(op))
      bytes = getElementTypeOrSelf(matmul.getLhs().getType()).isInteger(8) &&
              getElementTypeOrSelf(matmul.getRhs().getType()).isInteger(8);
    if (auto panels = dyn_cast<MatmulPanelsOp>(op))
      bytes = getElementTypeOrSelf(panels.getLhs().getType()).isInteger(8) &&
              getElementTypeOrSelf(panels.getWeights().getType()).isInteger(8);
    if (!isa<UnitAttr>(value) || (!bytes && op->getDialect() == op->getContext()->getLoadedDialect<KilnDialect>()))
      return op->emitError() << "'" << name
                             << "' must be a unit attribute on a kiln.matmul_integer of 8-bit "
                                "operands (or a linalg contraction)";
    return success();
  }
  if (name == "kiln.im2col") {
    auto window = dyn_cast<DenseI64ArrayAttr>(value);
    if (!window || window.size() != 7)
      return op->emitError() << "'" << name << "' must be array<i64: OW, KH, KW, SH, SW, DH, DW>";
    return success();
  }
  if (name == kExtentAttr)
    return op->emitError() << "'" << name
                           << "' belongs on a program result, not on an operation";
  if (name == "kiln.name") {
    if (!isa<StringAttr>(value))
      return op->emitError() << "'" << name << "' must be a string, not " << value;
    return success();
  }
  if (name == kPinnedInputsAttr) {
    auto dict = dyn_cast<DictionaryAttr>(value);
    if (!dict || !isa<ModuleOp>(op) ||
        llvm::any_of(dict, [](NamedAttribute e) { return !isa<StringAttr>(e.getValue()); }))
      return op->emitError() << "'" << name
                             << "' must be a dictionary of strings on a module, not " << value;
    return success();
  }
  if (name == kObservedTensorsAttr || name == kFloatNodesAttr || name == kShadowedNodesAttr) {
    auto names = dyn_cast<ArrayAttr>(value);
    if (!names || !isa<ModuleOp>(op) ||
        llvm::any_of(names, [](Attribute a) { return !isa<StringAttr>(a); }))
      return op->emitError() << "'" << name << "' must be an array of strings on a module, not "
                             << value;
    return success();
  }
  if (name == kBatchSizeAttr) {
    auto program = dyn_cast<ProgramOp>(op);
    if (!program || program.isPrivate() || !isI64(value) ||
        cast<IntegerAttr>(value).getInt() < 1 || cast<IntegerAttr>(value).getInt() > UINT32_MAX)
      return op->emitError() << "'" << name
                             << "' must be a positive i64 (below 2^32) on a public "
                                "kiln.program, not "
                             << value;
    return success();
  }
  return op->emitError() << "unknown kiln attribute '" << name << "'";
}

void KilnDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "kiln/Dialect/KilnAttrs.cpp.inc"
      >();
}
