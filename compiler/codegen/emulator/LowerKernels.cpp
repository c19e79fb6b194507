//===- LowerKernels.cpp - gfx kernels -> host functions for emulation ------===//
//
// The one rewrite the emulation needs: each gpu.func of the gpu.module becomes
// a func.func with the ABI of runtime/include/kiln/emu_abi.h. Everything after it is the
// host's upstream lowering. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/amdgpu/GPUCodegen.h"
#include "codegen/amdgpu/Passes.h"
#include "codegen/emulator/Passes.h"
#include "kiln/emu_abi.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNEMULOWERKERNELS
#include "codegen/emulator/Passes.h.inc"
} // namespace kiln

namespace {
using namespace kiln;

/// `type` without a gfx address space.
Type withoutAddressSpace(Type type) {
  auto memref = dyn_cast<MemRefType>(type);
  if (!memref || !isa_and_nonnull<gpu::AddressSpaceAttr>(memref.getMemorySpace()))
    return type;
  return MemRefType::Builder(memref).setMemorySpace(nullptr);
}

void stripAddressSpaces(Operation *root) {
  root->walk([](Operation *op) {
    for (Value result : op->getResults())
      result.setType(withoutAddressSpace(result.getType()));
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          arg.setType(withoutAddressSpace(arg.getType()));
  });
}

/// The element type amdgpu.mfma/wmma multiplies, as the target table names it.
std::optional<gfx::MatrixInput> matrixInput(Type operand) {
  Type element = getElementTypeOrSelf(operand);
  if (element.isF16())
    return gfx::MatrixInput::F16;
  if (element.isBF16())
    return gfx::MatrixInput::BF16;
  if (element.isInteger(8))
    return gfx::MatrixInput::I8;
  if (element.isInteger(4))
    return gfx::MatrixInput::I4;
  if (element.isF32())
    return gfx::MatrixInput::F32;
  return std::nullopt;
}

/// On the load a buffer load became: how the access site names it.
constexpr llvm::StringLiteral kSiteTextAttr = "kiln_emu_site_text";

/// A load or store of LDS or global memory the emulated kernel reports to the
/// access hook when statistics are on (emu_abi.h).
struct AccessSite {
  Operation *op;
  Value memref;
  ValueRange indices;
  Type accessed; // the element or vector type moved by one lane
  uint32_t kind; // KILN_EMU_ACCESS_*
};

/// The access `op` makes, if it is a load or store. Only the ops the gfx
/// stage emits for them are recognised (memref.load/store,
/// vector.load/store); anything else stays uncounted.
std::optional<AccessSite> accessOf(Operation *op) {
  AccessSite site{op, {}, {}, {}, 0};
  if (auto load = dyn_cast<memref::LoadOp>(op))
    site = {op, load.getMemref(), load.getIndices(), load.getType(), 0};
  else if (auto store = dyn_cast<memref::StoreOp>(op))
    site = {op, store.getMemref(), store.getIndices(), store.getValueToStore().getType(),
            KILN_EMU_ACCESS_STORE};
  else if (auto load = dyn_cast<vector::LoadOp>(op))
    site = {op, load.getBase(), load.getIndices(), load.getVectorType(), 0};
  else if (auto store = dyn_cast<vector::StoreOp>(op))
    site = {op, store.getBase(), store.getIndices(), store.getVectorType(),
            KILN_EMU_ACCESS_STORE};
  else
    return std::nullopt;
  return site;
}

/// The access `op` makes if it is a load or store of workgroup or global
/// memory (private arrays live on the lane's stack and are not reported).
std::optional<AccessSite> accessSite(Operation *op) {
  std::optional<AccessSite> access = accessOf(op);
  if (!access)
    return std::nullopt;
  AccessSite site = *access;
  auto type = cast<MemRefType>(site.memref.getType());
  auto space = dyn_cast_or_null<gpu::AddressSpaceAttr>(type.getMemorySpace());
  if (!space || space.getValue() == gpu::AddressSpace::Private)
    return std::nullopt;
  if (space.getValue() == gpu::AddressSpace::Global)
    site.kind |= KILN_EMU_ACCESS_GLOBAL;
  return site;
}

/// `loc` as a user reads it: ONNX node names, `file:line:col` with the file's
/// base name, the parts of a fused location joined by ", ".
void printLocation(Location loc, llvm::raw_ostream &os) {
  if (auto name = dyn_cast<NameLoc>(loc)) {
    os << name.getName().getValue();
  } else if (auto file = dyn_cast<FileLineColLoc>(loc)) {
    StringRef path = file.getFilename().getValue();
    os << path.substr(path.find_last_of('/') + 1) << ":" << file.getLine() << ":"
       << file.getColumn();
  } else if (auto fused = dyn_cast<FusedLoc>(loc)) {
    llvm::SmallVector<std::string> parts;
    for (Location part : fused.getLocations()) {
      std::string text;
      llvm::raw_string_ostream partOs(text);
      printLocation(part, partOs);
      if (!text.empty() && !llvm::is_contained(parts, text))
        parts.push_back(text);
    }
    os << llvm::join(parts, ", ");
  } else if (auto call = dyn_cast<CallSiteLoc>(loc)) {
    printLocation(call.getCallee(), os);
  } else if (!isa<UnknownLoc>(loc)) {
    loc.print(os);
  }
}

/// Rewrites one kernel. Holds what the rewrites of its ops share.
class KernelLowering {
public:
  KernelLowering(ModuleOp module, const gfx::Target &target)
      : module(module), target(target), b(module.getContext()) {}

  LogicalResult lower(gpu::GPUFuncOp kernel);

private:
  Value loadLaneField(Location loc, int64_t offset, Type type);
  Value hook(Location loc, int64_t index);
  LogicalResult lowerMatrix(Operation *op, Value a, Value b, Value c, StringRef mnemonic,
                            uint32_t flags);
  StringRef mnemonicFor(Operation *op, Type sourceA, Type destC, bool wmma, int64_t m,
                        int64_t n, int64_t k);
  Value mnemonicString(Location loc, StringRef mnemonic);
  Value entryAlloca(Location loc, Type type);
  Value stringConstant(Location loc, StringRef name, StringRef text);
  void instrumentAccess(const AccessSite &site, uint32_t id, Value enabled);

  ModuleOp module;
  const gfx::Target &target;
  OpBuilder b;
  Value lane;
  Block *entry = nullptr;
  Value one; // i64 1 at the entry, for allocas
  uint32_t nextSite = 0;
};

Value KernelLowering::loadLaneField(Location loc, int64_t offset, Type type) {
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  Value field = LLVM::GEPOp::create(b, loc, ptr, b.getI8Type(), lane,
                                    ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(offset)});
  return LLVM::LoadOp::create(b, loc, type, field);
}

/// The function pointer at `index` of the lane's hooks.
Value KernelLowering::hook(Location loc, int64_t index) {
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  Value hooks = loadLaneField(loc, emu::kLaneHooksOffset, ptr);
  Value slot = LLVM::GEPOp::create(b, loc, ptr, ptr, hooks,
                                   ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(index)});
  return LLVM::LoadOp::create(b, loc, ptr, slot);
}

Value KernelLowering::entryAlloca(Location loc, Type type) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfterValue(one);
  auto ptr = LLVM::LLVMPointerType::get(b.getContext());
  // 64 bytes: at least the natural alignment of every operand vector, which
  // the loads and stores of the slot assume.
  return LLVM::AllocaOp::create(b, loc, ptr, type, one, /*alignment=*/64);
}

Value KernelLowering::mnemonicString(Location loc, StringRef mnemonic) {
  std::string name = ("__kiln_emu_" + mnemonic).str();
  auto global = module.lookupSymbol<LLVM::GlobalOp>(name);
  if (!global) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    std::string bytes = mnemonic.str();
    bytes.push_back('\0');
    auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
    global = LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true, LLVM::Linkage::Internal,
                                    name, b.getStringAttr(bytes));
  }
  return LLVM::AddressOfOp::create(b, loc, global);
}

StringRef KernelLowering::mnemonicFor(Operation *op, Type sourceA, Type destC, bool wmma,
                                      int64_t m, int64_t n, int64_t k) {
  std::optional<gfx::MatrixInput> input = matrixInput(sourceA);
  bool intAccumulator = getElementTypeOrSelf(destC).isInteger(32);
  for (const gfx::MatrixInstruction &instr : target.matrix) {
    bool intInput = instr.input == gfx::MatrixInput::I8 || instr.input == gfx::MatrixInput::I4;
    if (input && instr.input == *input && instr.wmma == wmma && instr.m == m &&
        instr.n == n && instr.k == k && intInput == intAccumulator)
      return instr.mnemonic;
  }
  op->emitError() << "no " << target.name << " matrix instruction is emulated for " << m << "x"
                  << n << "x" << k << " with " << sourceA << " operands and " << destC
                  << " accumulators";
  return {};
}

/// The address of a new NUL-terminated string constant `name`, taken at the
/// builder's insertion point.
Value KernelLowering::stringConstant(Location loc, StringRef name, StringRef text) {
  std::string bytes = text.str();
  bytes.push_back('\0');
  auto type = LLVM::LLVMArrayType::get(b.getI8Type(), bytes.size());
  LLVM::GlobalOp global;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    global = LLVM::GlobalOp::create(b, loc, type, /*isConstant=*/true, LLVM::Linkage::Internal,
                                    name, b.getStringAttr(bytes));
  }
  return LLVM::AddressOfOp::create(b, loc, global);
}

/// Guards `site` with `if (enabled) hooks->access(lane, &descriptor, address)`.
/// The descriptor is a constant KilnEmuAccessSite naming the op and its
/// location; the address is computed from the memref's aligned pointer and
/// strided metadata inside the branch, so it costs nothing when stats are off.
void KernelLowering::instrumentAccess(const AccessSite &site, uint32_t id, Value enabled) {
  MLIRContext *ctx = b.getContext();
  Location loc = site.op->getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i32 = b.getI32Type();
  auto i64 = b.getI64Type();
  Type element = getElementTypeOrSelf(site.accessed);
  int64_t bits = element.getIntOrFloatBitWidth();
  if (auto vector = dyn_cast<VectorType>(site.accessed))
    bits *= vector.getNumElements();
  uint32_t bytes = uint32_t((bits + 7) / 8);

  // The descriptor: {id, kind, bytes, 0, op text, location text}.
  std::string prefix =
      ("__kiln_emu_site_" + site.op->getParentOfType<func::FuncOp>().getName() + "_" +
       Twine(id))
          .str();
  std::string opText, locText;
  {
    llvm::raw_string_ostream os(opText);
    // A lowered buffer load is named as the kernel wrote it.
    if (auto text = site.op->getAttrOfType<StringAttr>(kSiteTextAttr))
      os << text.getValue();
    else
      os << site.op->getName() << " " << site.accessed << " "
         << ((site.kind & KILN_EMU_ACCESS_STORE) ? "to " : "from ")
         << withoutAddressSpace(site.memref.getType());
    llvm::raw_string_ostream locOs(locText);
    printLocation(loc, locOs);
  }
  auto descriptorType = LLVM::LLVMStructType::getLiteral(ctx, {i32, i32, i32, i32, ptr, ptr});
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    auto global = LLVM::GlobalOp::create(b, loc, descriptorType, /*isConstant=*/true,
                                         LLVM::Linkage::Internal, prefix, Attribute());
    Block *init = b.createBlock(&global.getInitializerRegion());
    b.setInsertionPointToStart(init);
    Value value = LLVM::UndefOp::create(b, loc, descriptorType);
    uint32_t fields[] = {id, site.kind, bytes, 0};
    for (int64_t i = 0; i < 4; ++i) {
      Value field = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(fields[i]));
      value = LLVM::InsertValueOp::create(b, loc, value, field, ArrayRef<int64_t>{i});
    }
    value = LLVM::InsertValueOp::create(b, loc, value,
                                        stringConstant(loc, prefix + "_op", opText),
                                        ArrayRef<int64_t>{4});
    value = LLVM::InsertValueOp::create(b, loc, value,
                                        stringConstant(loc, prefix + "_loc", locText),
                                        ArrayRef<int64_t>{5});
    LLVM::ReturnOp::create(b, loc, value);
  }

  b.setInsertionPoint(site.op);
  auto ifOp = scf::IfOp::create(b, loc, enabled, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifOp.thenBlock());
  // address = aligned pointer + (offset + sum(index * stride)) * element bytes.
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, site.memref);
  Value linear = metadata.getOffset();
  for (auto [index, stride] : llvm::zip(site.indices, metadata.getStrides()))
    linear = arith::AddIOp::create(b, loc, linear,
                                   arith::MulIOp::create(b, loc, index, stride));
  Value byteOffset;
  if (element.getIntOrFloatBitWidth() % 8 == 0) {
    byteOffset = arith::MulIOp::create(
        b, loc, linear,
        arith::ConstantIndexOp::create(b, loc, element.getIntOrFloatBitWidth() / 8));
  } else { // sub-byte elements (i4): the byte holding the first one
    byteOffset = arith::DivUIOp::create(
        b, loc,
        arith::MulIOp::create(
            b, loc, linear,
            arith::ConstantIndexOp::create(b, loc, element.getIntOrFloatBitWidth())),
        arith::ConstantIndexOp::create(b, loc, 8));
  }
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, site.memref);
  Value address = arith::IndexCastUIOp::create(
      b, loc, i64, arith::AddIOp::create(b, loc, base, byteOffset));
  Value descriptor = LLVM::AddressOfOp::create(b, loc, ptr, prefix);
  Value fn = hook(loc, emu::kHooksAccessIndex);
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, ptr, i64});
  auto call = LLVM::CallOp::create(b, loc, type, ValueRange{fn, lane, descriptor, address});
  // The hook reads the lane record and writes only the runtime's own state:
  // telling LLVM so keeps the kernel's loads and stores optimisable around
  // the (cold) call.
  call.setMemoryEffectsAttr(LLVM::MemoryEffectsAttr::get(
      ctx, LLVM::ModRefInfo::NoModRef, LLVM::ModRefInfo::Ref, LLVM::ModRefInfo::ModRef,
      LLVM::ModRefInfo::NoModRef, LLVM::ModRefInfo::NoModRef, LLVM::ModRefInfo::NoModRef));
  call.setNoUnwind(true);
}

LogicalResult KernelLowering::lowerMatrix(Operation *op, Value a, Value bOperand, Value c,
                                          StringRef mnemonic, uint32_t flags) {
  Location loc = op->getLoc();
  MLIRContext *ctx = b.getContext();
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  b.setInsertionPoint(op);
  // A and B as the packed 32-bit registers the hardware reads; a scalar
  // operand (v_mfma_f32_16x16x4_f32's one f32) is one register.
  auto asVector = [&](Value operand) -> Value {
    if (isa<VectorType>(operand.getType()) || !operand.getType().isIntOrFloat())
      return operand;
    return vector::BroadcastOp::create(b, loc, VectorType::get({1}, operand.getType()), operand);
  };
  a = asVector(a);
  bOperand = asVector(bOperand);
  auto registers = [&](Value operand) -> Value {
    auto type = cast<VectorType>(operand.getType());
    int64_t bits = type.getNumElements() * type.getElementTypeBitWidth();
    auto regs = VectorType::get({bits / 32}, b.getI32Type());
    Value packed = vector::BitCastOp::create(b, loc, regs, operand);
    Value slot = entryAlloca(loc, regs);
    LLVM::StoreOp::create(b, loc, packed, slot);
    return slot;
  };
  for (Value operand : {a, bOperand}) {
    auto type = dyn_cast<VectorType>(operand.getType());
    if (!type || type.getRank() != 1 ||
        (type.getNumElements() * type.getElementTypeBitWidth()) % 32 != 0)
      return op->emitError("matrix operand ") << operand.getType()
                                              << " is not a whole number of registers";
  }
  Value aSlot = registers(a);
  Value bSlot = registers(bOperand);
  Value cSlot = entryAlloca(loc, c.getType());
  LLVM::StoreOp::create(b, loc, c, cSlot);
  Value dSlot = entryAlloca(loc, c.getType());
  Value fn = hook(loc, emu::kHooksMatrixIndex);
  auto i32 = b.getI32Type();
  auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                          {ptr, i32, ptr, i32, ptr, ptr, ptr, ptr});
  Value site = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(nextSite++));
  Value flagValue = LLVM::ConstantOp::create(b, loc, i32, b.getI32IntegerAttr(flags));
  LLVM::CallOp::create(b, loc, type,
                       ValueRange{fn, lane, site, mnemonicString(loc, mnemonic), flagValue,
                                  aSlot, bSlot, cSlot, dSlot});
  Value d = LLVM::LoadOp::create(b, loc, c.getType(), dSlot);
  op->getResult(0).replaceAllUsesWith(d);
  op->erase();
  return success();
}

/// amdgpu.raw_buffer_load as the chip runs it: the indices linearized over
/// the buffer (the memref, contiguous), zeros for a load that reaches past
/// its last element (the GEMM builder's loads are whole chunks: never partly
/// past it). Then an ordinary load, reported as a global access site.
static LogicalResult lowerBufferLoads(gpu::GPUFuncOp kernel, OpBuilder &b) {
  SmallVector<amdgpu::RawBufferLoadOp> loads;
  kernel.walk([&](amdgpu::RawBufferLoadOp op) { loads.push_back(op); });
  for (amdgpu::RawBufferLoadOp op : loads) {
    auto type = cast<MemRefType>(op.getMemref().getType());
    SmallVector<int64_t> strides;
    int64_t offset = 0;
    if (op.getIndexOffset() || op.getSgprOffset() || !type.hasStaticShape() ||
        failed(type.getStridesAndOffset(strides, offset)) || ShapedType::isDynamic(offset) ||
        !type.areTrailingDimsContiguous(type.getRank()))
      return op.emitError("only buffer loads from a static contiguous memref without "
                          "offsets are emulated");
    Location loc = op.getLoc();
    b.setInsertionPoint(op);
    Value linear = arith::ConstantIndexOp::create(b, loc, 0);
    for (auto [index, stride] : llvm::zip(op.getIndices(), strides)) {
      Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), index);
      Value scaled = arith::MulIOp::create(b, loc, i, arith::ConstantIndexOp::create(b, loc, stride));
      linear = arith::AddIOp::create(b, loc, linear, scaled);
    }
    auto vectorType = dyn_cast<VectorType>(op.getType());
    int64_t count = vectorType ? vectorType.getNumElements() : 1;
    int64_t elements = type.getNumElements();
    Value end = arith::AddIOp::create(b, loc, linear, arith::ConstantIndexOp::create(b, loc, count));
    Value fromStart = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, linear,
                                            arith::ConstantIndexOp::create(b, loc, 0));
    Value toEnd = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sle, end,
                                        arith::ConstantIndexOp::create(b, loc, elements));
    Value inside = arith::AndIOp::create(b, loc, fromStart, toEnd);
    auto flatType = MemRefType::get(
        {elements}, type.getElementType(),
        offset == 0 ? MemRefLayoutAttrInterface()
                    : StridedLayoutAttr::get(b.getContext(), offset, {1}),
        type.getMemorySpace());
    Value flat = memref::ReinterpretCastOp::create(b, loc, flatType, op.getMemref(), offset,
                                                   ArrayRef<int64_t>{elements},
                                                   ArrayRef<int64_t>{1});
    auto ifOp = scf::IfOp::create(b, loc, TypeRange{op.getType()}, inside, true, true);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(ifOp.thenBlock());
      Value value = vectorType
                        ? Value(vector::LoadOp::create(b, loc, vectorType, flat, ValueRange{linear}))
                        : Value(memref::LoadOp::create(b, loc, flat, ValueRange{linear}));
      std::string text;
      llvm::raw_string_ostream os(text);
      os << op->getName() << " " << op.getType() << " from " << withoutAddressSpace(type);
      value.getDefiningOp()->setAttr(kSiteTextAttr, b.getStringAttr(text));
      scf::YieldOp::create(b, loc, value);
      b.setInsertionPointToStart(ifOp.elseBlock());
      scf::YieldOp::create(b, loc,
                           arith::ConstantOp::create(b, loc, b.getZeroAttr(op.getType())).getResult());
    }
    op.replaceAllUsesWith(ifOp.getResult(0));
    op.erase();
  }
  return success();
}

LogicalResult KernelLowering::lower(gpu::GPUFuncOp kernel) {
  MLIRContext *ctx = b.getContext();
  if (failed(lowerBufferLoads(kernel, b)))
    return failure();
  Location loc = kernel.getLoc();
  auto ptr = LLVM::LLVMPointerType::get(ctx);

  // The accesses to report, found while the memrefs still carry their gfx
  // address spaces (workgroup buffers become views of the LDS bytes below).
  SmallVector<AccessSite> accesses;
  kernel.walk([&](Operation *op) {
    if (std::optional<AccessSite> site = accessSite(op))
      accesses.push_back(*site);
  });

  // Workgroup buffers are slices of one LDS byte buffer, 16-byte aligned.
  SmallVector<int64_t> offsets;
  int64_t ldsBytes = 0;
  for (BlockArgument buffer : kernel.getWorkgroupAttributions()) {
    auto type = cast<MemRefType>(buffer.getType());
    if (!type.hasStaticShape() || !type.getLayout().isIdentity())
      return kernel.emitError("workgroup buffer ") << type << " is not a static identity memref";
    offsets.push_back(ldsBytes);
    int64_t bytes = type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
    ldsBytes += llvm::alignTo(bytes, 16);
  }
  auto ldsType = MemRefType::get({std::max<int64_t>(ldsBytes, 1)}, b.getI8Type());

  SmallVector<Type> inputs = {ptr, ldsType};
  for (Type type : kernel.getArgumentTypes())
    inputs.push_back(withoutAddressSpace(type));
  b.setInsertionPointToEnd(module.getBody());
  auto func = func::FuncOp::create(b, loc, kernel.getName(), b.getFunctionType(inputs, {}));
  for (NamedAttribute attr : kernel->getAttrs())
    if (attr.getName().getValue().starts_with("kiln."))
      func->setAttr(attr.getName(), attr.getValue());
  func->setAttr(kLdsBytesAttr, b.getI64IntegerAttr(ldsBytes));
  func->setAttr("kiln.emu_kernel", b.getUnitAttr());

  unsigned numArguments = kernel.getNumArguments();
  unsigned numWorkgroup = kernel.getNumWorkgroupAttributions();
  unsigned numPrivate = kernel.getNumPrivateAttributions();
  func.getBody().takeBody(kernel.getBody());
  entry = &func.getBody().front();
  lane = entry->insertArgument(0u, ptr, loc);
  Value lds = entry->insertArgument(1u, ldsType, loc);
  const unsigned first = 2 + numArguments;

  b.setInsertionPointToStart(entry);
  one = LLVM::ConstantOp::create(b, loc, b.getI64Type(), b.getI64IntegerAttr(1));
  for (unsigned i = 0; i < numWorkgroup; ++i) {
    BlockArgument buffer = entry->getArgument(first + i);
    auto type = cast<MemRefType>(withoutAddressSpace(buffer.getType()));
    Value offset = arith::ConstantIndexOp::create(b, loc, offsets[i]);
    Value view = memref::ViewOp::create(b, loc, type, lds, offset, ValueRange{});
    buffer.replaceAllUsesWith(view);
  }
  for (unsigned i = 0; i < numPrivate; ++i) {
    BlockArgument buffer = entry->getArgument(first + numWorkgroup + i);
    auto type = cast<MemRefType>(withoutAddressSpace(buffer.getType()));
    buffer.replaceAllUsesWith(memref::AllocaOp::create(b, loc, type).getResult());
  }
  entry->eraseArguments(first, numWorkgroup + numPrivate);

  // Read once: the runtime fixes lane->accessStats for the whole dispatch.
  if (!accesses.empty()) {
    Value flag = loadLaneField(loc, emu::kLaneAccessStatsOffset, b.getI32Type());
    Value zero = arith::ConstantIntOp::create(b, loc, 0, 32);
    Value enabled = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, flag, zero);
    OpBuilder::InsertionGuard guard(b);
    for (auto [id, site] : llvm::enumerate(accesses)) {
      // The workgroup buffers were replaced by views: take the operands again.
      AccessSite current = *accessOf(site.op);
      current.kind = site.kind;
      instrumentAccess(current, uint32_t(id), enabled);
    }
  }

  SmallVector<Operation *> ops;
  func.walk([&](Operation *op) {
    if (isa<gpu::GPUDialect, amdgpu::AMDGPUDialect, ROCDL::ROCDLDialect>(op->getDialect()))
      ops.push_back(op);
  });
  for (Operation *op : ops) {
    Location opLoc = op->getLoc();
    b.setInsertionPoint(op);
    if (auto id = dyn_cast<gpu::ThreadIdOp>(op)) {
      Value v = loadLaneField(opLoc,
                              emu::kLaneThreadIdOffset + 4 * static_cast<int64_t>(id.getDimension()),
                              b.getI32Type());
      op->replaceAllUsesWith(arith::IndexCastUIOp::create(b, opLoc, b.getIndexType(), v));
      op->erase();
    } else if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
      Value v = loadLaneField(opLoc,
                              emu::kLaneBlockIdOffset + 4 * static_cast<int64_t>(id.getDimension()),
                              b.getI32Type());
      op->replaceAllUsesWith(arith::IndexCastUIOp::create(b, opLoc, b.getIndexType(), v));
      op->erase();
    } else if (isa<gpu::BarrierOp, amdgpu::LDSBarrierOp>(op)) {
      Value fn = hook(opLoc, emu::kHooksBarrierIndex);
      auto type = LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx), {ptr, b.getI32Type()});
      Value site =
          LLVM::ConstantOp::create(b, opLoc, b.getI32Type(), b.getI32IntegerAttr(nextSite++));
      LLVM::CallOp::create(b, opLoc, type, ValueRange{fn, lane, site});
      op->erase();
    } else if (auto mfma = dyn_cast<amdgpu::MFMAOp>(op)) {
      if (mfma.getBlocks() != 1 || mfma.getCbsz() != 0 || mfma.getAbid() != 0 ||
          mfma.getBlgp() != amdgpu::MFMAPermB::none || mfma.getNegateA() ||
          mfma.getNegateB() || mfma.getNegateC() || mfma.getReducePrecision())
        return op->emitError("the emulator supports amdgpu.mfma without broadcast, "
                             "permutation, negation or reduced precision");
      StringRef mnemonic = mnemonicFor(op, mfma.getSourceA().getType(),
                                       mfma.getDestC().getType(), /*wmma=*/false, mfma.getM(),
                                       mfma.getN(), mfma.getK());
      if (mnemonic.empty() ||
          failed(lowerMatrix(op, mfma.getSourceA(), mfma.getSourceB(), mfma.getDestC(),
                             mnemonic, 0)))
        return failure();
    } else if (auto wmma = dyn_cast<amdgpu::WMMAOp>(op)) {
      if (wmma.getSubwordOffset() != 0)
        return op->emitError("the emulator supports amdgpu.wmma with subword offset 0");
      StringRef mnemonic = mnemonicFor(op, wmma.getSourceA().getType(),
                                       wmma.getDestC().getType(), /*wmma=*/true, wmma.getM(),
                                       wmma.getN(), wmma.getK());
      uint32_t flags = (wmma.getUnsignedA() ? KILN_EMU_UNSIGNED_A : 0u) |
                       (wmma.getUnsignedB() ? KILN_EMU_UNSIGNED_B : 0u) |
                       (wmma.getClamp() ? KILN_EMU_CLAMP : 0u);
      if (mnemonic.empty() ||
          failed(lowerMatrix(op, wmma.getSourceA(), wmma.getSourceB(), wmma.getDestC(),
                             mnemonic, flags)))
        return failure();
    } else if (auto broadcast = dyn_cast<gpu::SubgroupBroadcastOp>(op)) {
      // The gfx stage broadcasts only values the same in every lane of the
      // wave (a wave's row group in the GEMM builder), to tell LLVM so:
      // each lane keeps its own.
      if (broadcast.getBroadcastType() != gpu::BroadcastType::first_active_lane)
        return op->emitError("the emulator supports gpu.subgroup_broadcast from the first "
                             "active lane only");
      op->replaceAllUsesWith(ValueRange{broadcast.getSrc()});
      op->erase();
    } else if (isa<amdgpu::SchedBarrierOp, ROCDL::SchedGroupBarrier>(op)) {
      op->erase(); // a scheduling hint for the gfx backend: nothing to do on the host
    } else if (isa<gpu::ReturnOp>(op)) {
      func::ReturnOp::create(b, opLoc);
      op->erase();
    } else {
      return op->emitError("'") << op->getName() << "' is not supported by the gfx emulation";
    }
  }
  return success();
}

struct KilnEmuLowerKernelsPass
    : kiln::impl::KilnEmuLowerKernelsBase<KilnEmuLowerKernelsPass> {
  using KilnEmuLowerKernelsBase::KilnEmuLowerKernelsBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const gfx::Target *target = gfx::lookupTarget(chip);
    if (!target) {
      module.emitError() << "unknown gfx target '" << chip << "'";
      return signalPassFailure();
    }
    for (auto gpuModule : llvm::make_early_inc_range(module.getOps<gpu::GPUModuleOp>())) {
      for (Operation &op : llvm::make_early_inc_range(gpuModule.getBody()->getOperations())) {
        if (auto global = dyn_cast<memref::GlobalOp>(op)) {
          global->moveBefore(module.getBody(), module.getBody()->end());
          global.setType(cast<MemRefType>(withoutAddressSpace(global.getType())));
          continue;
        }
        auto kernel = dyn_cast<gpu::GPUFuncOp>(op);
        if (!kernel)
          continue;
        KernelLowering lowering(module, *target);
        if (failed(lowering.lower(kernel)))
          return signalPassFailure();
        kernel.erase();
      }
      gpuModule.erase();
    }
    module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
    stripAddressSpaces(module);
  }
};

} // namespace
