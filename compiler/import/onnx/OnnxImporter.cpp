//===- OnnxImporter.cpp - ONNX model -> kiln IR ---------------------------===//
//
// Loads a model (binary protobuf or ONNX text syntax), validates its
// structure (opset range, undefined or duplicate values, cycles, unsupported
// operators, all reported at once), and builds `func.func @main` by running
// each node through its opset-keyed pattern. Weights become dense_resource
// blobs that point into the parsed model or the mapped external-data files,
// so a large model is never copied.
//
//===----------------------------------------------------------------------===//

#include "import/onnx/OnnxImporter.h"
#include "import/onnx/WireFormat.h"
#include "import/onnx/GraphImporter.h"
#include "import/onnx/OnnxLibrary.h"
#include "llvm/ADT/StringExtras.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"

#include <deque>

using namespace mlir;
using namespace kiln;
using namespace kiln::onnx_import;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

std::string onnx_import::parseInputShape(StringRef spec,
                                         ImportOptions &options) {
  auto [name, dims] = spec.rsplit('=');
  if (name.empty() || dims.empty() || !spec.contains('='))
    return ("expected NAME=DIMS (e.g. input=1x3x224x224), got '" + spec + "'")
        .str();
  SmallVector<int64_t> shape;
  SmallVector<StringRef> parts;
  if (dims != "scalar") // rank 0: no dimensions
    dims.split(parts, 'x');
  for (StringRef part : parts) {
    int64_t d;
    if (part.getAsInteger(10, d) || d < 0)
      return ("bad dimension '" + part + "' in '" + spec + "'").str();
    shape.push_back(d);
  }
  options.inputShapes[name] = shape;
  return "";
}

std::string onnx_import::parseInputValue(StringRef spec, ImportOptions &options) {
  auto [name, text] = spec.split('=');
  if (name.empty() || !spec.contains('='))
    return ("expected NAME=VALUE, NAME=V1,V2,... or NAME= for an empty tensor (e.g. "
            "sample_rate=16000), got '" +
            spec + "'")
        .str();
  SmallVector<std::string> values;
  SmallVector<StringRef> parts;
  if (!text.trim().empty())
    text.split(parts, ',');
  for (StringRef part : parts) {
    part = part.trim();
    double number;
    if (part.getAsDouble(number) && part != "true" && part != "false")
      return ("bad value '" + part + "' in '" + spec + "' (numbers, true or false)").str();
    values.push_back(part.str());
  }
  options.inputValues[name] = std::move(values);
  return "";
}

std::string onnx_import::parseInputSequenceLength(StringRef spec,
                                                 ImportOptions &options) {
  auto [name, text] = spec.rsplit('=');
  int64_t length;
  if (name.empty() || !spec.contains('=') || text.getAsInteger(10, length) ||
      length < 0)
    return ("expected NAME=N with N >= 0 (e.g. frames=4), got '" + spec + "'").str();
  options.inputSequenceLengths[name] = length;
  return "";
}

//===----------------------------------------------------------------------===//
// Tensor conversion
//===----------------------------------------------------------------------===//

FailureOr<Type> GraphImporter::convertElementType(int32_t dataType,
                                                  StringRef what) {
  Builder b(ctx);
  switch (dataType) {
  case onnx::TensorProto::FLOAT:
    return Type(b.getF32Type());
  case onnx::TensorProto::DOUBLE:
    return Type(b.getF64Type());
  case onnx::TensorProto::FLOAT16:
    return Type(b.getF16Type());
  case onnx::TensorProto::BFLOAT16:
    return Type(b.getBF16Type());
  case onnx::TensorProto::BOOL:
    return Type(b.getI1Type());
  case onnx::TensorProto::INT8:
    return Type(b.getIntegerType(8));
  case onnx::TensorProto::INT16:
    return Type(b.getIntegerType(16));
  case onnx::TensorProto::INT32:
    return Type(b.getIntegerType(32));
  case onnx::TensorProto::INT64:
    return Type(b.getIntegerType(64));
  case onnx::TensorProto::UINT8:
    return Type(b.getIntegerType(8, /*isSigned=*/false));
  case onnx::TensorProto::UINT16:
    return Type(b.getIntegerType(16, false));
  case onnx::TensorProto::UINT32:
    return Type(b.getIntegerType(32, false));
  case onnx::TensorProto::UINT64:
    return Type(b.getIntegerType(64, false));
  // (The enum of Debian's libonnx predates them.)
  case 21: // UINT4
    return Type(b.getIntegerType(4, false));
  case 22: // INT4
    return Type(b.getIntegerType(4));
  default:
    break;
  }
  std::string name = onnx::TensorProto::DataType_IsValid(dataType)
                         ? onnx::TensorProto::DataType_Name(
                               (onnx::TensorProto::DataType)dataType)
                         : std::to_string(dataType);
  error() << what << " has element type " << name
          << ", which Kiln does not support";
  return failure();
}

/// Bytes per element of a builtin element type in an ONNX raw buffer.
static int64_t rawElementBytes(Type type) {
  if (type.isInteger(1))
    return 1;
  return type.getIntOrFloatBitWidth() / 8;
}

FailureOr<ElementsAttr>
GraphImporter::convertTensor(const onnx::TensorProto &tensor, StringRef what) {
  FailureOr<Type> element = convertElementType(tensor.data_type(), what);
  if (failed(element))
    return failure();
  SmallVector<int64_t> shape;
  int64_t count = 1;
  for (int64_t d : tensor.dims()) {
    if (d < 0 || (d > 0 && count > (INT64_MAX / 64) / d)) {
      error() << what << " has an invalid dimension " << d;
      return failure();
    }
    shape.push_back(d);
    count *= d;
  }
  auto type = RankedTensorType::get(shape, *element);
  int64_t elementBytes = rawElementBytes(*element);
  int64_t bytes = count * elementBytes;
  // int4 and uint4 are packed two per byte, element 2i in the low four bits.
  bool nibbles = element->isInteger(4);
  if (nibbles)
    bytes = (count + 1) / 2;

  // Locate the bytes: raw_data, external data, or a typed repeated field.
  ArrayRef<char> raw;
  SmallVector<char> converted;
  if (auto mapped = storage->mappedData.find(&tensor);
      mapped != storage->mappedData.end()) {
    raw = mapped->second;
  } else if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    FailureOr<ArrayRef<char>> ext = externalData(tensor, what, bytes);
    if (failed(ext))
      return failure();
    raw = *ext;
  } else if (tensor.has_raw_data()) {
    raw = ArrayRef<char>(tensor.raw_data().data(), tensor.raw_data().size());
  } else {
    // Typed fields: widen everything to the raw little-endian layout.
    auto appendBytes = [&](const void *p, size_t n) {
      converted.append((const char *)p, (const char *)p + n);
    };
    switch (tensor.data_type()) {
    case onnx::TensorProto::FLOAT:
      for (float v : tensor.float_data())
        appendBytes(&v, 4);
      break;
    case onnx::TensorProto::DOUBLE:
      for (double v : tensor.double_data())
        appendBytes(&v, 8);
      break;
    case onnx::TensorProto::INT64:
      for (int64_t v : tensor.int64_data())
        appendBytes(&v, 8);
      break;
    case onnx::TensorProto::UINT32:
    case onnx::TensorProto::UINT64:
      for (uint64_t v : tensor.uint64_data())
        appendBytes(&v, elementBytes);
      break;
    default: // int32_data carries every type of 32 bits or fewer.
      for (int32_t v : tensor.int32_data())
        appendBytes(&v, nibbles ? 1 : elementBytes); // (int4: a packed byte each)
      break;
    }
    raw = converted;
  }
  if ((int64_t)raw.size() != bytes) {
    error() << what << " holds " << raw.size() << " bytes of data, but its "
            << "shape and type need " << bytes;
    return failure();
  }

  // 4-bit elements: one per byte, extended by their signedness, as dense
  // attributes (kiln-fold-quantized-ops reads them into kiln.matmul_int4).
  if (nibbles) {
    SmallVector<APInt> values;
    values.reserve(count);
    for (int64_t i = 0; i < count; ++i) {
      auto byte = static_cast<uint8_t>(raw[i / 2]);
      uint64_t code = i % 2 == 0 ? byte & 15 : byte >> 4;
      values.push_back(APInt(4, code, /*isSigned=*/false));
    }
    return ElementsAttr(DenseElementsAttr::get(type, values));
  }
  // Booleans and small tensors become dense attributes (they take part in
  // folding); everything else is a blob.
  if (element->isInteger(1)) {
    SmallVector<bool> values;
    for (char c : raw)
      values.push_back(c != 0);
    return ElementsAttr(DenseElementsAttr::get(type, values));
  }
  if (count <= kInlineElements) {
    bool splat = false;
    if (!DenseElementsAttr::isValidRawBuffer(type, raw, splat)) {
      error() << what << " has a data layout Kiln cannot read";
      return failure();
    }
    return ElementsAttr(DenseElementsAttr::getFromRawBuffer(type, raw));
  }
  // Blobs are named after the tensor (unique-ified by MLIR if need be).
  std::string blobName = tensor.name().empty() ? "tensor" : tensor.name();
  // Payloads sit at arbitrary offsets of the model file: a blob whose bytes
  // are not aligned to the element size says so (alignment 1) rather than
  // being copied; Kiln reads blobs bytewise, and typed views of them check.
  size_t align = std::max<size_t>(elementBytes, 1);
  if ((uintptr_t)raw.data() % align != 0)
    align = 1;
  AsmResourceBlob blob;
  if (converted.empty()) {
    // Zero copy: the blob keeps the model storage alive.
    std::shared_ptr<ModelStorage> keep = storage;
    blob = AsmResourceBlob(
        raw, align, [keep](void *, size_t, size_t) mutable { keep.reset(); },
        /*dataIsMutable=*/false);
  } else {
    blob = HeapAsmResourceBlob::allocateAndCopyWithAlign(raw, align);
  }
  return ElementsAttr(
      DenseResourceElementsAttr::get(type, blobName, std::move(blob)));
}

FailureOr<ArrayRef<char>>
GraphImporter::externalData(const onnx::TensorProto &tensor, StringRef what,
                            int64_t bytes) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto &entry : tensor.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset" &&
             StringRef(entry.value()).getAsInteger(10, offset))
      offset = -1;
    else if (entry.key() == "length" &&
             StringRef(entry.value()).getAsInteger(10, length))
      length = -2;
  }
  if (location.empty() || offset < 0 || length == -2) {
    error() << what << " has malformed external_data (location '" << location
            << "', offset " << offset << ")";
    return failure();
  }
  if (llvm::sys::path::is_absolute(location) ||
      StringRef(location).contains("..")) {
    error() << what << " refers to external data '" << location
            << "' outside the model's folder";
    return failure();
  }
  SmallString<256> path(storage->modelDir);
  llvm::sys::path::append(path, location);
  auto &buffer = storage->externalFiles[path];
  if (!buffer) {
    auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
    if (!file) {
      error() << what << ": cannot read external data file '" << path
              << "': " << file.getError().message();
      return failure();
    }
    buffer = std::move(*file);
  }
  int64_t size = buffer->getBufferSize();
  if (length < 0)
    length = bytes;
  if (offset > size || length > size - offset || length != bytes) {
    error() << what << ": external data [" << offset << ", +" << length
            << ") does not fit file '" << location << "' of " << size
            << " bytes or the tensor's " << bytes << " bytes";
    return failure();
  }
  return ArrayRef<char>(buffer->getBufferStart() + offset, length);
}

//===----------------------------------------------------------------------===//
// Graph structure
//===----------------------------------------------------------------------===//

std::string GraphImporter::describeNode(const onnx::NodeProto &node) {
  std::string s = node.op_type();
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    s += " (domain " + node.domain() + ")";
  s += " node '" + nodeName(node) + "'";
  return s;
}

std::string GraphImporter::nodeName(const onnx::NodeProto &node) {
  if (!node.name().empty())
    return node.name();
  // Unnamed nodes are named after their first output, which is unique.
  return node.output_size() ? node.output(0) : node.op_type();
}

/// The values of enclosing scopes that the subgraphs of `node` use: names
/// their nodes read that the subgraph itself (its inputs, initializers and
/// nodes) does not define, through any depth of nesting.
static void capturedValues(const onnx::NodeProto &node,
                           llvm::StringSet<> &captured) {
  for (const auto &attr : node.attribute()) {
    SmallVector<const onnx::GraphProto *> graphs;
    if (attr.has_g())
      graphs.push_back(&attr.g());
    for (const auto &g : attr.graphs())
      graphs.push_back(&g);
    for (const onnx::GraphProto *g : graphs) {
      llvm::StringSet<> local, inner;
      for (const auto &input : g->input())
        local.insert(input.name());
      for (const auto &init : g->initializer())
        local.insert(init.name());
      for (const auto &n : g->node())
        for (const std::string &out : n.output())
          local.insert(out);
      for (const auto &n : g->node()) {
        for (const std::string &in : n.input())
          inner.insert(in);
        capturedValues(n, inner);
      }
      for (const auto &out : g->output())
        inner.insert(out.name());
      for (const auto &entry : inner)
        if (!entry.getKey().empty() && !local.contains(entry.getKey()))
          captured.insert(entry.getKey());
    }
  }
}

LogicalResult GraphImporter::checkStructure(const onnx::GraphProto &graph,
                                            std::vector<int> &order,
                                            bool nested) {
  // Every value is defined once: by a graph input, an initializer or a node.
  llvm::StringMap<int> producer; // value -> node index, -1 for graph values
  for (const auto &input : graph.input())
    producer[input.name()] = -1;
  for (const auto &init : graph.initializer())
    producer[init.name()] = -1;
  for (int i = 0; i < graph.node_size(); ++i) {
    for (const std::string &out : graph.node(i).output()) {
      if (out.empty())
        continue;
      auto [it, inserted] = producer.try_emplace(out, i);
      if (!inserted) {
        error() << "value '" << out << "' is defined twice: by "
                << describeNode(graph.node(i)) << " and by "
                << (it->second < 0 ? std::string("a graph input or initializer")
                                   : describeNode(graph.node(it->second)));
        return failure();
      }
    }
  }
  // Every used value is defined; build the dependency graph.
  std::vector<std::vector<int>> users(graph.node_size());
  std::vector<int> pending(graph.node_size(), 0);
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto &node = graph.node(i);
    llvm::StringSet<> captured;
    capturedValues(node, captured);
    SmallVector<std::string> used(node.input().begin(), node.input().end());
    for (const auto &entry : captured)
      used.push_back(entry.getKey().str());
    for (const std::string &in : used) {
      if (in.empty())
        continue;
      auto it = producer.find(in);
      if (it == producer.end() && nested &&
          (values.count(in) || initializers.count(in)))
        continue; // defined by an enclosing scope
      if (it == producer.end()) {
        error() << describeNode(node) << " uses value '" << in
                << "', which no graph input, initializer or node defines";
        return failure();
      }
      if (it->second >= 0) {
        users[it->second].push_back(i);
        ++pending[i];
      }
    }
  }
  for (const auto &out : graph.output()) {
    if (!producer.count(out.name()) &&
        !(nested && (values.count(out.name()) || initializers.count(out.name())))) {
      error() << "graph output '" << out.name() << "' is never defined";
      return failure();
    }
  }
  // Kahn's algorithm, stable in the file's node order.
  std::deque<int> ready;
  for (int i = 0; i < graph.node_size(); ++i)
    if (pending[i] == 0)
      ready.push_back(i);
  while (!ready.empty()) {
    int i = ready.front();
    ready.pop_front();
    order.push_back(i);
    for (int user : users[i])
      if (--pending[user] == 0)
        ready.push_back(user);
  }
  if ((int)order.size() != graph.node_size()) {
    for (int i = 0; i < graph.node_size(); ++i)
      if (pending[i] > 0) {
        error() << "the graph has a cycle through " << describeNode(graph.node(i));
        return failure();
      }
  }
  return success();
}

/// The registry's key of a node: its op type, prefixed with its domain and
/// a dot outside the default domain ("com.microsoft.MatMulNBits").
static std::string patternKey(const onnx::NodeProto &node) {
  if (node.domain().empty() || node.domain() == "ai.onnx")
    return node.op_type();
  return node.domain() + "." + node.op_type();
}

LogicalResult GraphImporter::checkSupported(const onnx::GraphProto &graph) {
  const PatternRegistry &registry = getPatternRegistry();
  std::string list;
  int missing = 0;
  for (const auto &node : graph.node()) {
    bool defaultDomain = node.domain().empty() || node.domain() == "ai.onnx";
    if (registry.lookup(patternKey(node), opset))
      continue;
    ++missing;
    list += "\n  " + node.op_type();
    if (!defaultDomain)
      list += " (domain " + node.domain() + ")";
    else
      list += " (opset " + std::to_string(opset) + ")";
    list += " at node '" + nodeName(node) + "'";
    if (int64_t first = registry.firstVersion(node.op_type());
        defaultDomain && first > opset)
      list += ": supported from opset " + std::to_string(first);
  }
  if (missing == 0)
    return success();
  error() << missing << " unsupported ONNX operator"
          << (missing == 1 ? "" : "s") << ":" << list;
  return failure();
}

//===----------------------------------------------------------------------===//
// Import
//===----------------------------------------------------------------------===//

InFlightDiagnostic GraphImporter::error() {
  return mlir::emitError(fileLoc) << "";
}

/// "[1, 3, 224, 224]".
static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string text = "[";
  llvm::raw_string_ostream os(text);
  llvm::interleaveComma(shape, os);
  return text + "]";
}

FailureOr<RankedTensorType>
GraphImporter::inputType(const std::string &name, const onnx::TypeProto &type) {
  if (!type.has_tensor_type()) {
    error() << "graph input '" << name << "' is not a tensor";
    return failure();
  }
  const auto &tensorType = type.tensor_type();
  FailureOr<Type> element =
      convertElementType(tensorType.elem_type(), "graph input '" + name + "'");
  if (failed(element))
    return failure();
  auto pinned = options.inputShapes.find(name);
  if (!tensorType.has_shape()) {
    if (pinned == options.inputShapes.end()) {
      error() << "graph input '" << name << "' has no shape; give one with "
              << "--input-shape=" << name << "=DIMS";
      return failure();
    }
    SmallVector<int64_t> shape(pinned->second);
    if (options.batchSize > 0 && !shape.empty())
      shape[0] = options.batchSize;
    return RankedTensorType::get(shape, *element);
  }
  const auto &dims = tensorType.shape().dim();
  SmallVector<int64_t> shape;
  if (options.batchSize > 0 && dims.empty()) {
    error() << "graph input '" << name << "' is a scalar: --batch-sizes needs every input "
            << "to have a batch dimension (dimension 0)";
    return failure();
  }
  if (options.batchSize > 0 && dims[0].has_dim_value() && dims[0].dim_value() >= 0 &&
      dims[0].dim_value() != options.batchSize) {
    error() << "graph input '" << name << "' fixes dimension 0 (the batch) to "
            << dims[0].dim_value() << ", so it cannot run at batch size " << options.batchSize
            << "; --batch-sizes needs a model whose inputs leave dimension 0 dynamic "
            << "(export it with a dynamic batch axis)";
    return failure();
  }
  if (pinned != options.inputShapes.end() &&
      (int)pinned->second.size() != dims.size()) {
    error() << "--input-shape for '" << name << "' has rank "
            << pinned->second.size() << ", but the model's input has rank "
            << dims.size();
    return failure();
  }
  for (int d = 0; d < dims.size(); ++d) {
    bool known = dims[d].has_dim_value() && dims[d].dim_value() >= 0;
    if (d == 0 && options.batchSize > 0) {
      shape.push_back(options.batchSize);
      continue;
    }
    if (pinned != options.inputShapes.end()) {
      int64_t want = pinned->second[d];
      if (known && dims[d].dim_value() != want) {
        error() << "--input-shape for '" << name << "' sets dimension " << d
                << " to " << want << ", but the model fixes it to "
                << dims[d].dim_value();
        return failure();
      }
      shape.push_back(want);
      continue;
    }
    if (!known) {
      std::string symbol =
          dims[d].has_dim_param() ? " ('" + dims[d].dim_param() + "')" : "";
      error() << "graph input '" << name << "' has a dynamic dimension " << d
              << symbol << "; pin it with --input-shape=" << name << "=DIMS";
      return failure();
    }
    shape.push_back(dims[d].dim_value());
  }
  if (!isWithinSizeLimit(shape)) {
    error() << "graph input '" << name << "' has shape " << shapeString(shape)
            << ", more than the " << kMaxTensorElements << " elements Kiln supports";
    return failure();
  }
  return RankedTensorType::get(shape, *element);
}

FailureOr<DenseElementsAttr>
GraphImporter::pinnedValue(const onnx::ValueInfoProto &info, ArrayRef<std::string> values) {
  const std::string &name = info.name();
  if (!info.type().has_tensor_type()) {
    error() << "graph input '" << name << "' is not a tensor";
    return failure();
  }
  const auto &tensorType = info.type().tensor_type();
  FailureOr<Type> element =
      convertElementType(tensorType.elem_type(), "graph input '" + name + "'");
  if (failed(element))
    return failure();
  int64_t count = static_cast<int64_t>(values.size());
  // The shape: --input-shape's, else the model's when static; a 1-D input
  // takes the number of values, and one without a shape is a scalar (one
  // value) or 1-D.
  SmallVector<int64_t> shape;
  auto pinned = options.inputShapes.find(name);
  if (pinned != options.inputShapes.end()) {
    shape = pinned->second;
  } else if (!tensorType.has_shape()) {
    if (count != 1)
      shape.push_back(count);
  } else {
    bool known = true;
    for (const auto &dim : tensorType.shape().dim()) {
      known &= dim.has_dim_value() && dim.dim_value() >= 0;
      shape.push_back(dim.has_dim_value() ? dim.dim_value() : ShapedType::kDynamic);
    }
    if (!known && shape.size() == 1) {
      shape = {count};
    } else if (!known) {
      error() << "graph input '" << name << "' has dynamic dimensions; give its shape with "
              << "--input-shape=" << name << "=DIMS as well as --input-value";
      return failure();
    }
  }
  int64_t elements = 1;
  for (int64_t d : shape)
    elements *= d;
  if (elements != count) {
    error() << "--input-value for '" << name << "' gives " << count << " value"
            << (count == 1 ? "" : "s") << ", but the input has shape " << shapeString(shape)
            << " (" << elements << " element" << (elements == 1 ? "" : "s") << ")";
    return failure();
  }
  auto type = RankedTensorType::get(shape, *element);
  SmallVector<Attribute> attrs;
  for (StringRef text : values) {
    if (auto integer = llvm::dyn_cast<IntegerType>(*element)) {
      int64_t v;
      bool ok = !text.getAsInteger(10, v);
      if (text == "true" || text == "false") {
        ok = true;
        v = text == "true";
      }
      if (!ok || (integer.getWidth() == 1 && v != 0 && v != 1)) {
        error() << "--input-value for '" << name << "': '" << text << "' is not a value of "
                << "its element type " << *element;
        return failure();
      }
      attrs.push_back(IntegerAttr::get(integer, APInt(integer.getWidth(), v, /*isSigned=*/true,
                                                       /*implicitTrunc=*/true)));
    } else if (auto real = llvm::dyn_cast<FloatType>(*element)) {
      double v;
      if (text.getAsDouble(v)) {
        error() << "--input-value for '" << name << "': '" << text << "' is not a number";
        return failure();
      }
      attrs.push_back(FloatAttr::get(real, v));
    } else {
      error() << "--input-value for '" << name << "': inputs of type " << *element
              << " cannot be pinned";
      return failure();
    }
  }
  return DenseElementsAttr::get(type, attrs);
}

Value GraphImporter::lookup(StringRef name) {
  auto it = values.find(name);
  if (it != values.end())
    return it->second;
  auto init = initializers.find(name);
  if (init == initializers.end())
    return nullptr;
  FailureOr<ElementsAttr> attr =
      convertTensor(*init->second, "initializer '" + name.str() + "'");
  if (failed(attr)) {
    failedConversion = true;
    return nullptr;
  }
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointToStart(builder.getInsertionBlock());
  Value value = ConstantOp::create(builder, NameLoc::get(builder.getStringAttr(name)), *attr);
  values[name] = value;
  return value;
}

/// Whether the pattern of `opType` accepts sequences and optionals (see
/// Aggregate) as inputs; every other op is refused one at the node.
static bool takesAggregates(StringRef opType) {
  return opType.starts_with("Sequence") || opType.starts_with("Optional") ||
         llvm::is_contained({"ConcatFromSequence", "Identity", "If", "Loop"}, opType);
}

/// For a node given inputs whose size along an axis the data decides (the
/// padded tensors of `bounded`, by input index): the output axis their rows
/// land on when the op keeps rows apart (each output row computed from the
/// matching input rows), or none. All bounded inputs must share one extent
/// and land on the same axis; other operands must broadcast along it.
static std::optional<int64_t>
rowWiseAxis(NodeContext &node, ArrayRef<std::pair<unsigned, Bounded>> bounded) {
  StringRef op = node.opType();
  auto rank = [&](unsigned i) {
    return cast<RankedTensorType>(node.inputType(i)).getRank();
  };
  for (auto [i, b] : bounded)
    if (b.extent != bounded.front().second.extent)
      return std::nullopt;
  auto [index, first] = bounded.front();
  static const llvm::StringSet<> unary = {
      "Abs", "Neg", "Relu", "Sigmoid", "Tanh", "Exp", "Log", "Sqrt", "Reciprocal", "Floor",
      "Ceil", "Round", "Not", "Sign", "Erf", "Softplus", "Cast", "CastLike", "LeakyRelu",
      "Elu", "Selu", "HardSigmoid", "Clip", "IsNaN", "IsInf", "Sin", "Cos"};
  static const llvm::StringSet<> broadcasting = {
      "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "Equal", "Less", "Greater",
      "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where", "BitShift"};
  if (unary.contains(op)) {
    // Clip's bounds and CastLike's target are not row data.
    if (bounded.size() != 1 || index != 0)
      return std::nullopt;
    return first.axis;
  }
  if (broadcasting.contains(op)) {
    int64_t outRank = 0;
    for (unsigned i = 0; i < node.numInputs(); ++i)
      outRank = std::max(outRank, rank(i));
    int64_t axis = first.axis + outRank - rank(index);
    for (auto [i, b] : bounded)
      if (b.axis + outRank - rank(i) != axis)
        return std::nullopt;
    for (unsigned i = 0; i < node.numInputs(); ++i) {
      if (llvm::any_of(bounded, [&](auto &entry) { return entry.first == i; }))
        continue;
      int64_t d = axis - (outRank - rank(i));
      if (d >= 0 && cast<RankedTensorType>(node.inputType(i)).getDimSize(d) != 1)
        return std::nullopt;
    }
    return axis;
  }
  if (bounded.size() != 1)
    return std::nullopt;
  if (op == "Transpose") {
    SmallVector<int64_t> perm = node.intsAttr("perm");
    if (perm.empty())
      perm = llvm::to_vector(llvm::reverse(llvm::seq<int64_t>(0, rank(0))));
    auto at = llvm::find(perm, first.axis);
    return at == perm.end() ? std::nullopt : std::optional<int64_t>(at - perm.begin());
  }
  if (op == "GatherND") {
    // Rows of the indices (not their last axis) give rows of the result.
    if (index != 1 || node.intAttr("batch_dims", 0) != 0 || first.axis >= rank(1) - 1)
      return std::nullopt;
    return first.axis;
  }
  if (op == "Gather") {
    int64_t axis = node.intAttr("axis", 0);
    if (axis < 0)
      axis += rank(0);
    if (index == 1)
      return axis + first.axis;
    if (first.axis == axis)
      return std::nullopt;
    return first.axis < axis ? first.axis : first.axis + rank(1) - 1;
  }
  return std::nullopt;
}

std::string GraphImporter::quantizableActivation(const onnx::NodeProto &node) {
  const std::string &op = node.op_type();
  if ((op != "Conv" && op != "MatMul" && op != "Gemm") || node.input_size() < 2 ||
      !node.domain().empty())
    return "";
  Value activation = lookup(node.input(0)), weight = lookup(node.input(1));
  if (!activation || !weight || !matchPattern(weight, m_Constant()) ||
      !getElementTypeOrSelf(activation.getType()).isF32() ||
      !getElementTypeOrSelf(weight.getType()).isF32())
    return "";
  if (excludedFromQuantization(node)) {
    excludedActivations.insert(node.input(0));
    return "";
  }
  return node.input(0);
}

bool GraphImporter::excludedFromQuantization(const onnx::NodeProto &node) const {
  // Unnamed nodes are excluded by the name diagnostics and reports give them.
  return llvm::any_of(options.quantizeExclude, [&](const std::string &excluded) {
    return excluded == node.op_type() || excluded == node.name() || excluded == nodeName(node);
  });
}

FailureOr<Value> GraphImporter::fakeQuantized(const std::string &name,
                                              const onnx::NodeProto &node) {
  if (Value done = fakeQuantizedValues.lookup(name))
    return done;
  auto it = options.quantizeActivations.find(name);
  if (it == options.quantizeActivations.end()) {
    mlir::emitError(NameLoc::get(builder.getStringAttr(nodeName(node))))
        << "the calibration table has no range for tensor '" << name << "' (input 0 of "
        << describeNode(node) << "): it was made for another model";
    return failure();
  }
  const ImportOptions::Quantization &q = it->second;
  Value real = values[name];
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfterValue(real);
  Location loc = NameLoc::get(builder.getStringAttr(name + ".quantized"));
  auto type = cast<RankedTensorType>(real.getType());
  // kiln's int8 is the signless i8 (see Kiln_Int8Tensor).
  Type integer = q.isSigned ? IntegerType::get(ctx, 8)
                            : IntegerType::get(ctx, 8, IntegerType::Unsigned);
  auto f32Scalar = RankedTensorType::get({}, builder.getF32Type());
  auto intScalar = RankedTensorType::get({}, integer);
  Value scale = ConstantOp::create(
      builder, loc, DenseElementsAttr::get(f32Scalar, static_cast<float>(q.scale)));
  Value zeroPoint = ConstantOp::create(
      builder, loc,
      DenseElementsAttr::get(intScalar, APInt(8, static_cast<uint64_t>(q.zeroPoint),
                                              /*isSigned=*/q.isSigned)));
  Value quantized = QuantizeOp::create(builder, loc, type.clone(integer), real, scale, zeroPoint);
  Value result = DequantizeOp::create(builder, loc, type, quantized, scale, zeroPoint);
  fakeQuantizedValues[name] = result;
  return result;
}

Value GraphImporter::dynamicallyQuantized(const std::string &name, const onnx::NodeProto &node) {
  if (Value done = fakeQuantizedValues.lookup(name))
    return done;
  Value real = values[name];
  OpBuilder::InsertionGuard guard(builder);
  builder.setInsertionPointAfterValue(real);
  Location loc = NameLoc::get(builder.getStringAttr(name + ".quantized"));
  NodeContext context(*this, node, opset, loc, builder);
  auto [scale, zeroPoint] = dynamicQuantization(context, real);
  auto type = cast<RankedTensorType>(real.getType());
  Type u8 = IntegerType::get(ctx, 8, IntegerType::Unsigned);
  Value quantized = QuantizeOp::create(builder, loc, type.clone(u8), real, scale, zeroPoint);
  Value result = DequantizeOp::create(builder, loc, type, quantized, scale, zeroPoint);
  fakeQuantizedValues[name] = result;
  return result;
}

LogicalResult GraphImporter::importNodes(const onnx::GraphProto &graph,
                                         ArrayRef<int> order, bool mainGraph) {
  const PatternRegistry &registry = getPatternRegistry();
  for (int index : order) {
    const onnx::NodeProto &node = graph.node(index);
    Location loc = NameLoc::get(builder.getStringAttr(nodeName(node)));
    // Materialize the inputs first: an unreadable initializer stops the
    // import here, so patterns only ever see valid values.
    for (const std::string &in : node.input())
      if (!in.empty() && !lookup(in))
        return failure();
    // Post-training quantization: a quantizable node reads its activation
    // observed, or through the table's quantization.
    std::string activation;
    Value realActivation;
    if (mainGraph && (options.observeQuantizable || options.quantize || options.quantizeDynamic))
      activation = quantizableActivation(node);
    if (!activation.empty() && options.observeQuantizable &&
        !llvm::is_contained(observed, activation))
      observed.push_back(activation);
    if (!activation.empty() && (options.quantize || options.quantizeDynamic)) {
      FailureOr<Value> fake = options.quantizeDynamic
                                  ? FailureOr<Value>(dynamicallyQuantized(activation, node))
                                  : fakeQuantized(activation, node);
      if (failed(fake))
        return failure();
      realActivation = values[activation];
      values[activation] = *fake;
    }
    NodeContext context(*this, node, opset, loc, builder);
    // Patterns read their required inputs without checking: a node that
    // lacks one is stopped here, against libonnx's schema of the op.
    std::string arity = checkNodeInputs(node, opset);
    if (!arity.empty()) {
      context.emitError() << arity;
      return failure();
    }
    // Inputs whose size along an axis the data decides: an op that computes
    // each output row from the matching input rows takes the padded
    // tensors, and its outputs are Bounded along the axis the rows land on,
    // with the same extent; any other op is refused.
    SmallVector<std::pair<std::string, Value>> boundedInputs;
    std::optional<std::pair<int64_t, Value>> boundedOutput; // axis, extent
    if (node.op_type() != "Identity") {
      SmallVector<std::pair<unsigned, Bounded>> bounded;
      for (auto [i, in] : llvm::enumerate(node.input()))
        if (std::optional<Bounded> b = in.empty() ? std::nullopt : getBounded(lookup(in)))
          bounded.push_back({unsigned(i), *b});
      if (!bounded.empty()) {
        std::optional<int64_t> axis = rowWiseAxis(context, bounded);
        if (!axis) {
          auto [i, b] = bounded.front();
          context.emitError()
              << "input " << i << " ('" << node.input(i)
              << "') has a size known only at run time (axis " << b.axis << ", at most "
              << cast<RankedTensorType>(b.padded.getType()).getShape()[b.axis]
              << "), which Kiln supports as a graph output and through ops that keep its "
                 "rows apart (elementwise ops, Cast, Transpose, Gather, GatherND); "
              << node.op_type() << " cannot take it";
          return failure();
        }
        boundedOutput = {*axis, bounded.front().second.extent};
        for (auto [i, b] : bounded) {
          boundedInputs.push_back({node.input(i), values[node.input(i)]});
          values[node.input(i)] = b.padded;
        }
      }
    }
    if (!takesAggregates(node.op_type())) {
      for (auto [i, in] : llvm::enumerate(node.input())) {
        if (in.empty() || !getAggregate(lookup(in)))
          continue;
        context.emitError() << "input " << i << " ('" << in << "') is a "
                            << (getAggregate(lookup(in))->kind == Aggregate::Kind::Sequence
                                    ? "sequence"
                                    : "optional")
                            << ", which " << node.op_type() << " does not take";
        return failure();
      }
    }
    const PatternFn *pattern = registry.lookup(patternKey(node), opset);
    if (failed((*pattern)(context)) || failedConversion)
      return failure();
    if (realActivation && options.shadowQuantized && boundedInputs.empty()) {
      // Sensitivity analysis: what the pattern built from the quantized
      // activation is only observed; the graph goes on from a float copy of
      // the node that reads the float activation.
      Value quantizedOut = values.lookup(node.output(0));
      for (const std::string &out : node.output())
        values.erase(out);
      values[activation] = realActivation;
      NodeContext floatContext(*this, node, opset, loc, builder);
      if (failed((*pattern)(floatContext)) || failedConversion)
        return failure();
      // The graph goes on from float + gate * (quantized - float), the gate
      // an input of shape [1] (0: the float node, 1: the quantized one).
      Value floatOut = values.lookup(node.output(0));
      auto outType = cast<RankedTensorType>(floatOut.getType());
      Value gate = mainEntry->addArgument(
          RankedTensorType::get({1}, outType.getElementType()), loc);
      Value difference = SubOp::create(builder, loc, quantizedOut, floatOut);
      Value gated = MulOp::create(builder, loc, difference, gate);
      values[node.output(0)] = AddOp::create(builder, loc, floatOut, gated);
      shadows.push_back({nodeName(node), floatOut, quantizedOut});
    }
    if (realActivation)
      values[activation] = realActivation;
    for (auto &[name, value] : boundedInputs)
      values[name] = value;
    if (boundedOutput)
      for (const std::string &out : node.output())
        if (!out.empty() && values.count(out))
          values[out] = buildBounded(builder, loc, values[out], boundedOutput->first,
                                     boundedOutput->second);
    for (int i = 0; i < node.output_size(); ++i) {
      if (!node.output(i).empty() && !values.count(node.output(i))) {
        context.emitError() << "produced no value for output " << i << " ('"
                            << node.output(i) << "'), which Kiln does not "
                            << "support";
        return failure();
      }
    }
  }

  return success();
}

FailureOr<SmallVector<Value>>
GraphImporter::importSubgraph(const onnx::GraphProto &graph, ValueRange inputs,
                              StringRef what) {
  if (graph.input_size() != (int)inputs.size()) {
    error() << what << " has " << graph.input_size() << " inputs; expected "
            << inputs.size();
    return failure();
  }
  // The names the subgraph defines, forgotten (restored) afterwards.
  SmallVector<std::pair<std::string, Value>> saved;
  auto bind = [&](const std::string &name) {
    auto it = values.find(name);
    saved.emplace_back(name, it == values.end() ? Value() : it->second);
  };
  for (const auto &input : graph.input())
    bind(input.name());
  for (const auto &node : graph.node())
    for (const std::string &out : node.output())
      if (!out.empty())
        bind(out);
  llvm::scope_exit restore([&] {
    for (auto &[name, value] : llvm::reverse(saved)) {
      if (value)
        values[name] = value;
      else
        values.erase(name);
    }
    for (const auto &init : graph.initializer())
      initializers.erase(init.name());
  });
  for (auto [input, value] : llvm::zip(graph.input(), inputs))
    values[input.name()] = value;
  for (const auto &init : graph.initializer())
    initializers[init.name()] = &init;
  std::vector<int> order;
  if (failed(checkStructure(graph, order, /*nested=*/true)) ||
      failed(checkSupported(graph)) || failed(importNodes(graph, order)))
    return failure();
  SmallVector<Value> results;
  for (const auto &out : graph.output()) {
    Value v = lookup(out.name());
    if (!v)
      return failure();
    results.push_back(v);
  }
  return results;
}

FailureOr<SmallVector<Value>>
GraphImporter::outlineSubgraph(const onnx::GraphProto &graph, TypeRange inputTypes,
                               StringRef what, StringRef symbolPrefix, func::FuncOp &func,
                               unsigned hiddenInputs) {
  Block *current = builder.getInsertionBlock();
  auto module = current->getParentOp()->getParentOfType<ModuleOp>();
  OpBuilder moduleBuilder = OpBuilder::atBlockEnd(module.getBody());
  std::string name = (symbolPrefix + "_" + llvm::Twine(outlinedCount++)).str();
  func = func::FuncOp::create(moduleBuilder, fileLoc, name,
                              builder.getFunctionType(inputTypes, {}));
  func.setPrivate();
  Block *entry = func.addEntryBlock();
  // Everything the import maps, initializers of enclosing graphs
  // materialized inside the function included, is forgotten afterwards.
  llvm::StringMap<Value> saved = values;
  builder.setInsertionPointToEnd(entry);
  auto outputs = importSubgraph(graph, entry->getArguments().drop_front(hiddenInputs), what);
  values = std::move(saved);
  if (failed(outputs)) {
    builder.setInsertionPointToEnd(current);
    func.erase();
    func = nullptr;
    return failure();
  }
  return outputs;
}

SmallVector<Value> GraphImporter::finishOutlined(func::FuncOp func, ValueRange results) {
  Block &entry = func.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&entry);
  func::ReturnOp::create(b, func.getLoc(), results);
  // The values of enclosing scopes the function uses, in order of use.
  llvm::SetVector<Value> outer;
  func.walk([&](Operation *op) {
    for (Value operand : op->getOperands())
      if (!func.getBody().isAncestor(operand.getParentRegion()))
        outer.insert(operand);
  });
  auto inside = [&](OpOperand &use) { return func->isAncestor(use.getOwner()); };
  SmallVector<Value> captured;
  b.setInsertionPointToStart(&entry);
  for (Value value : outer) {
    Operation *def = value.getDefiningOp();
    if (def && def->getNumOperands() == 0 && def->hasTrait<OpTrait::ConstantLike>()) {
      value.replaceUsesWithIf(b.clone(*def)->getResult(0), inside);
      continue;
    }
    value.replaceUsesWithIf(entry.addArgument(value.getType(), value.getLoc()), inside);
    captured.push_back(value);
  }
  func.setType(b.getFunctionType(entry.getArgumentTypes(), TypeRange(results.getTypes())));
  return captured;
}

FailureOr<InputLayout>
GraphImporter::flattenInput(const std::string &name, const onnx::TypeProto &type,
                            SmallVectorImpl<Type> &argTypes,
                            SmallVectorImpl<std::string> &argNames) {
  if (type.has_sequence_type()) {
    auto length = options.inputSequenceLengths.find(name);
    if (length == options.inputSequenceLengths.end()) {
      error() << "graph input '" << name << "' is a sequence; give its length "
              << "with --input-sequence-length=" << name
              << "=N (its elements become the inputs " << name << "[0] ... "
              << name << "[N-1])";
      return failure();
    }
    InputLayout layout{InputLayout::Kind::Sequence, {}};
    for (int64_t i = 0; i < length->second; ++i) {
      auto element = flattenInput(name + "[" + std::to_string(i) + "]",
                                  type.sequence_type().elem_type(), argTypes, argNames);
      if (failed(element))
        return failure();
      layout.elements.push_back(std::move(*element));
    }
    return layout;
  }
  if (type.has_optional_type()) {
    InputLayout layout{InputLayout::Kind::Optional, {}};
    if (options.absentInputs.contains(name))
      return layout;
    auto element = flattenInput(name, type.optional_type().elem_type(), argTypes, argNames);
    if (failed(element))
      return failure();
    layout.elements.push_back(std::move(*element));
    return layout;
  }
  FailureOr<RankedTensorType> tensor = inputType(name, type);
  if (failed(tensor))
    return failure();
  argTypes.push_back(*tensor);
  argNames.push_back(name);
  return InputLayout{InputLayout::Kind::Tensor, {}};
}

Value GraphImporter::buildInput(const InputLayout &layout, ValueRange args,
                                unsigned &next) {
  if (layout.kind == InputLayout::Kind::Tensor)
    return args[next++];
  SmallVector<Value> elements;
  for (const InputLayout &element : layout.elements)
    elements.push_back(buildInput(element, args, next));
  return buildAggregate(builder, fileLoc,
                        layout.kind == InputLayout::Kind::Sequence
                            ? Aggregate::Kind::Sequence
                            : Aggregate::Kind::Optional,
                        elements);
}

void GraphImporter::flattenOutput(const std::string &name, Value value,
                                  SmallVectorImpl<Value> &results,
                                  SmallVectorImpl<std::string> &names,
                                  SmallVectorImpl<PendingExtent> &extents) {
  if (std::optional<Bounded> bounded = getBounded(value)) {
    extents.push_back({unsigned(results.size()), bounded->axis, bounded->extent});
    results.push_back(bounded->padded);
    names.push_back(name);
    return;
  }
  std::optional<Aggregate> aggregate = getAggregate(value);
  if (!aggregate) {
    results.push_back(value);
    names.push_back(name);
    return;
  }
  for (auto [i, element] : llvm::enumerate(aggregate->elements))
    flattenOutput(aggregate->kind == Aggregate::Kind::Sequence
                      ? name + "[" + std::to_string(i) + "]"
                      : name,
                  element, results, names, extents);
}

OwningOpRef<ModuleOp> GraphImporter::run(const onnx::ModelProto &model) {
  // Opset of the default domain.
  opset = -1;
  for (const auto &entry : model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
  if (opset < 0) {
    error() << "the model imports no opset of the default ONNX domain";
    return nullptr;
  }
  if (opset < kMinOpset || opset > kMaxOpset) {
    // Opsets 1 to kMinOpset - 1 arrive here converted (upgradeOldOpset).
    error() << "the model uses opset " << opset << "; Kiln supports opsets 1 to "
            << kMaxOpset << " (1 to " << kMinOpset - 1 << " converted to " << kMinOpset << ")";
    return nullptr;
  }
  const onnx::GraphProto &graph = model.graph();
  std::vector<int> order;
  if (failed(checkStructure(graph, order)) || failed(checkSupported(graph)))
    return nullptr;
  if (options.runChecker && opset <= kLibOnnxMaxOpset) {
    std::string message = storage->mappedData.empty()
                              ? checkModelWithLibOnnx(model)
                              : checkModelWithLibOnnx(withoutMappedData(model));
    if (!message.empty()) {
      error() << "the ONNX checker rejects the model: " << message;
      return nullptr;
    }
  }

  for (const auto &init : graph.initializer())
    initializers[init.name()] = &init;

  // Signature: inputs that are not initializers (sequences and optionals
  // flattened into their element tensors), outputs as listed.
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames, graphInputs;
  SmallVector<std::pair<std::string, InputLayout>> layouts;
  SmallVector<std::pair<std::string, DenseElementsAttr>> pinnedValues;
  for (const auto &input : graph.input())
    if (!initializers.count(input.name()))
      graphInputs.push_back(input.name());
  auto checkNames = [&](auto &pinned, StringRef option) {
    for (const auto &entry : pinned) {
      if (llvm::is_contained(graphInputs, entry.getKey().str()))
        continue;
      std::string names;
      for (auto &n : graphInputs)
        names += (names.empty() ? "'" : ", '") + n + "'";
      error() << option << " names '" << entry.getKey()
              << "', which is not a graph input (inputs: " << names << ")";
      return false;
    }
    return true;
  };
  if (!checkNames(options.inputValues, "--input-value") ||
      !checkNames(options.inputSequenceLengths, "--input-sequence-length") ||
      !checkNames(options.absentInputs, "--input-absent"))
    return nullptr;
  for (const auto &input : graph.input()) {
    if (initializers.count(input.name()))
      continue;
    if (auto pinned = options.inputValues.find(input.name());
        pinned != options.inputValues.end()) {
      FailureOr<DenseElementsAttr> value = pinnedValue(input, pinned->second);
      if (failed(value))
        return nullptr;
      pinnedValues.emplace_back(input.name(), *value);
      continue;
    }
    FailureOr<InputLayout> layout =
        flattenInput(input.name(), input.type(), argTypes, argNames);
    if (failed(layout))
      return nullptr;
    layouts.emplace_back(input.name(), std::move(*layout));
  }
  // An element of a flattened sequence input is named NAME[i].
  SmallVector<std::string> shapeNames(graphInputs);
  llvm::append_range(shapeNames, argNames);
  for (const auto &entry : options.inputShapes) {
    if (llvm::is_contained(shapeNames, entry.getKey().str()))
      continue;
    std::string names;
    for (auto &n : graphInputs)
      names += (names.empty() ? "'" : ", '") + n + "'";
    error() << "--input-shape names '" << entry.getKey()
            << "', which is not a graph input (inputs: " << names << ")";
    return nullptr;
  }

  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  builder.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(builder, fileLoc, "main",
                                   builder.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  mainEntry = entry;
  for (auto [i, name] : llvm::enumerate(argNames))
    func.setArgAttr(i, kOnnxNameAttr, builder.getStringAttr(name));
  builder.setInsertionPointToEnd(entry);
  unsigned nextArg = 0;
  for (auto &[name, layout] : layouts)
    values[name] = buildInput(layout, entry->getArguments(), nextArg);
  SmallVector<NamedAttribute> pinnedText;
  for (auto &[name, value] : pinnedValues) {
    values[name] = ConstantOp::create(builder, NameLoc::get(builder.getStringAttr(name)),
                                      llvm::cast<ElementsAttr>(value));
    pinnedText.emplace_back(builder.getStringAttr(name),
                            builder.getStringAttr(llvm::join(options.inputValues.lookup(name), ",")));
  }
  if (!pinnedText.empty())
    (*module)->setAttr(kPinnedInputsAttr, builder.getDictionaryAttr(pinnedText));

  if (failed(importNodes(graph, order, /*mainGraph=*/true)))
    return nullptr;
  if (options.quantize)
    for (const auto &entry : options.quantizeActivations)
      if (!fakeQuantizedValues.count(entry.getKey()) &&
          !excludedActivations.contains(entry.getKey())) {
        error() << "the calibration table has a range for tensor '" << entry.getKey()
                << "', which no quantizable node of the model reads: it was made for "
                   "another model";
        return nullptr;
      }

  SmallVector<Value> results;
  SmallVector<Type> resultTypes;
  SmallVector<std::string> resultNames;
  SmallVector<PendingExtent> extents;
  for (const auto &out : graph.output()) {
    Value v = lookup(out.name());
    if (!v)
      return nullptr;
    flattenOutput(out.name(), v, results, resultNames, extents);
  }
  // Observed activations follow the model's outputs (one result each, even
  // when the tensor is an output too).
  SmallVector<Attribute> observedNames;
  for (const std::string &name : observed) {
    results.push_back(values[name]);
    resultNames.push_back(name);
    observedNames.push_back(builder.getStringAttr(name));
  }
  if (options.observeQuantizable)
    (*module)->setAttr(kObservedTensorsAttr, builder.getArrayAttr(observedNames));
  // Shadowed nodes follow: per node its float output 0, then its quantized.
  if (options.shadowQuantized) {
    SmallVector<Attribute> shadowNames;
    for (const Shadow &shadow : shadows) {
      argTypes.push_back(entry->getArgument(argTypes.size()).getType());
      argNames.push_back(shadow.node + kShadowGateSuffix.str());
      results.push_back(shadow.real);
      resultNames.push_back(shadow.node + kShadowFloatSuffix.str());
      results.push_back(shadow.quantized);
      resultNames.push_back(shadow.node + kShadowQuantizedSuffix.str());
      shadowNames.push_back(builder.getStringAttr(shadow.node));
    }
    (*module)->setAttr(kShadowedNodesAttr, builder.getArrayAttr(shadowNames));
  }
  if (options.int4Weights) {
    SmallVector<Attribute> keep;
    for (const auto &node : graph.node()) {
      if ((node.op_type() != "MatMul" && node.op_type() != "Gemm") || !node.domain().empty())
        continue;
      if (excludedFromQuantization(node))
        keep.push_back(builder.getStringAttr(nodeName(node)));
    }
    (*module)->setAttr(kFloatNodesAttr, builder.getArrayAttr(keep));
  }
  // The extents of data-dependent outputs follow the model's outputs, one
  // result per distinct extent (Unique's outputs share theirs).
  SmallVector<std::pair<unsigned, SmallVector<int64_t>>> extentAttrs;
  llvm::DenseMap<Value, int64_t> extentResults;
  for (const PendingExtent &e : extents) {
    auto [it, inserted] = extentResults.try_emplace(e.extent, results.size());
    if (inserted) {
      resultNames.push_back(resultNames[e.result] + kExtentNameSuffix.str());
      results.push_back(e.extent);
    }
    extentAttrs.push_back({e.result, {e.axis, it->second}});
  }
  for (Value v : results)
    resultTypes.push_back(v.getType());
  func::ReturnOp::create(builder, fileLoc, results);
  // Shape computations leave constants nobody reads, and sequences and
  // optionals leave the casts that carried them; drop them.
  for (Operation &op : llvm::make_early_inc_range(llvm::reverse(*entry)))
    if (isOpTriviallyDead(&op))
      op.erase();
  // Shadowed nodes' gates are arguments the entry block gained on the way.
  SmallVector<DictionaryAttr> argAttrs;
  for (auto [i, name] : llvm::enumerate(argNames))
    argAttrs.push_back(i < func.getNumArguments()
                           ? func.getArgAttrDict(i)
                           : builder.getDictionaryAttr(builder.getNamedAttr(
                                 kOnnxNameAttr, builder.getStringAttr(name))));
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  func.setAllArgAttrs(argAttrs);
  for (auto [i, name] : llvm::enumerate(resultNames))
    func.setResultAttr(i, kOnnxNameAttr, builder.getStringAttr(name));
  for (auto &[result, attr] : extentAttrs)
    func.setResultAttr(result, kExtentAttr, builder.getDenseI64ArrayAttr(attr));
  return module;
}

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

/// A copy of `model` (cheap: its weights live in the mapped file) in which
/// the initializers whose data is mapped are graph inputs of their type and
/// shape instead: libonnx's checker, which knows nothing of the mapping,
/// then checks everything else.
onnx::ModelProto GraphImporter::withoutMappedData(const onnx::ModelProto &model) {
  onnx::ModelProto copy = model;
  onnx::GraphProto *graph = copy.mutable_graph();
  google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
  for (int i = 0; i < model.graph().initializer_size(); ++i) {
    const onnx::TensorProto &tensor = model.graph().initializer(i);
    if (!storage->mappedData.count(&tensor)) {
      *kept.Add() = tensor;
      continue;
    }
    onnx::ValueInfoProto *input = graph->add_input();
    input->set_name(tensor.name());
    auto *type = input->mutable_type()->mutable_tensor_type();
    type->set_elem_type(tensor.data_type());
    for (int64_t d : tensor.dims())
      type->mutable_shape()->add_dim()->set_dim_value(d);
  }
  graph->mutable_initializer()->Swap(&kept);
  return copy;
}

/// Models older than kMinOpset are converted to it with libonnx's version
/// converter first (then imported as usual). The converter copies the model,
/// so initializer payloads left in the mapped file are copied in first.
static LogicalResult upgradeOldOpset(Location fileLoc, ModelStorage &storage,
                                     GraphImporter &importer) {
  int64_t opset = -1;
  for (const auto &entry : storage.model.opset_import())
    if (entry.domain().empty() || entry.domain() == "ai.onnx")
      opset = entry.version();
  if (opset < 1 || opset >= kMinOpset)
    return success(); // run() reports a missing or too new opset
  // The converter crashes on a graph that uses a value nothing defines.
  if (failed(importer.checkGraph(storage.model.graph())))
    return failure();
  auto *graph = storage.model.mutable_graph();
  for (int i = 0; i < graph->initializer_size(); ++i) {
    onnx::TensorProto *tensor = graph->mutable_initializer(i);
    auto mapped = storage.mappedData.find(tensor);
    if (mapped != storage.mappedData.end())
      tensor->set_raw_data(mapped->second.data(), mapped->second.size());
  }
  storage.mappedData.clear();
  std::string message = convertOpset(storage.model, kMinOpset);
  if (!message.empty()) {
    mlir::emitError(fileLoc) << "the model uses opset " << opset
                             << ", which Kiln imports by converting it to opset "
                             << kMinOpset << " with ONNX's version converter, and the "
                             << "conversion failed: " << message;
    return failure();
  }
  return success();
}

/// Initializer payloads of at least this many bytes stay in the mapped file
/// (smaller ones, shapes and scalars, are parsed as usual).
static constexpr uint64_t kMappedDataBytes = 4096;

OwningOpRef<ModuleOp>
onnx_import::importOnnxFile(MLIRContext &context, StringRef path,
                            const ImportOptions &options) {
  context.loadDialect<KilnDialect, func::FuncDialect>();
  Location fileLoc = FileLineColLoc::get(&context, path, 0, 0);
  auto storage = std::make_shared<ModelStorage>();
  storage->modelDir = llvm::sys::path::parent_path(path).str();
  if (storage->modelDir.empty())
    storage->modelDir = ".";

  std::string message;
  if (path.ends_with(".onnxtxt")) {
    auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!file) {
      mlir::emitError(fileLoc) << "cannot read the model: "
                               << file.getError().message();
      return nullptr;
    }
    message = parseModelText((*file)->getBuffer(), storage->model);
  } else {
    // Map the file and parse it without the large weight payloads, which
    // blobs then use in place (read-only, never copied).
    auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
    if (!file) {
      mlir::emitError(fileLoc) << "cannot read the model: "
                               << file.getError().message();
      return nullptr;
    }
    std::optional<StrippedModel> stripped =
        stripInitializerData((*file)->getBuffer(), kMappedDataBytes);
    if (stripped) {
      message = parseModelBytes(stripped->bytes, storage->model);
      if (message.empty() &&
          static_cast<size_t>(storage->model.graph().initializer_size()) ==
              stripped->initializerData.size()) {
        const char *base = (*file)->getBufferStart();
        auto *graph = storage->model.mutable_graph();
        for (auto [i, span] : llvm::enumerate(stripped->initializerData)) {
          if (!span)
            continue;
          const onnx::TensorProto *tensor = &graph->initializer(static_cast<int>(i));
          storage->mappedData[tensor] = ArrayRef<char>(base + span->offset, span->size);
        }
      } else if (message.empty()) {
        message = "not a valid ONNX model: its initializers could not be located";
      }
    } else {
      // Not well-formed wire format: protobuf's parser gives the diagnosis.
      message = parseModelBytes((*file)->getBuffer(), storage->model);
    }
    storage->modelFile = std::move(*file);
  }
  if (!message.empty()) {
    mlir::emitError(fileLoc) << message;
    return nullptr;
  }
  GraphImporter importer(context, fileLoc, options, storage);
  if (failed(upgradeOldOpset(fileLoc, *storage, importer)))
    return nullptr;
  return importer.run(storage->model);
}
