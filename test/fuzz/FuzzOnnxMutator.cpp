//===- FuzzOnnxMutator.cpp - Structure-aware mutator for ONNX models ------===//
//
// kiln-fuzz-onnx-structured's LLVMFuzzerCustomMutator: parses the input as
// an onnx::ModelProto and changes it the way a wrong or unusual model
// differs from a right one, so almost every mutant still parses and reaches
// the graph importer and its shape checks:
//   - a graph input or output dimension changed (0, 1, a prime, huge,
//     negative, symbolic), a dimension added or dropped, the shape removed;
//   - an element type changed (any TensorProto::DataType, or an unknown one);
//   - an attribute value changed (ints, floats, strings, lists, with the
//     values ops care about: -1, 0, huge, negative axes), its type changed,
//     or the attribute removed;
//   - a node input rewired to another value name (a graph input, an
//     initializer, another node's output, "", or a name that does not exist),
//     a node output renamed, a node dropped or duplicated;
//   - an initializer's dims or payload changed;
//   - the default-domain opset version changed.
// The result is reserialized. Bytes that do not parse as a ModelProto (or a
// mutant larger than MaxSize) get libFuzzer's own byte mutations instead.
// The fuzz body is kiln-fuzz-onnx's (FuzzOnnx.cpp).
//
//===----------------------------------------------------------------------===//

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size,
                                   size_t maxSize);

namespace {

using Rng = std::mt19937_64;

size_t pick(Rng &rng, size_t n) {
  return std::uniform_int_distribution<size_t>(0, n - 1)(rng);
}

int64_t interestingInt(Rng &rng) {
  static const int64_t kValues[] = {-3, -2, -1, 0, 1, 2, 3, 4, 5, 7, 8, 16,
                                    31, 64, 255, 1024, 65536, 1ll << 31,
                                    (1ll << 31) - 1, 1ll << 40, INT64_MAX,
                                    INT64_MIN};
  if (pick(rng, 4) == 0)
    return int64_t(rng());
  return kValues[pick(rng, sizeof(kValues) / sizeof(kValues[0]))];
}

float interestingFloat(Rng &rng) {
  static const float kValues[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 1e-5f,
                                  1e30f, -1e30f, 3.0f, __builtin_inff(),
                                  -__builtin_inff(), __builtin_nanf("")};
  return kValues[pick(rng, sizeof(kValues) / sizeof(kValues[0]))];
}

/// The graph's value names: inputs, initializers and node outputs.
std::vector<std::string> valueNames(const onnx::GraphProto &graph) {
  std::vector<std::string> names;
  for (const auto &input : graph.input())
    names.push_back(input.name());
  for (const auto &init : graph.initializer())
    names.push_back(init.name());
  for (const auto &node : graph.node())
    for (const auto &output : node.output())
      names.push_back(output);
  return names;
}

std::string someName(Rng &rng, const onnx::GraphProto &graph) {
  std::vector<std::string> names = valueNames(graph);
  switch (pick(rng, 8)) {
  case 0:
    return "";
  case 1:
    return "no_such_value";
  default:
    return names.empty() ? "x" : names[pick(rng, names.size())];
  }
}

/// A graph input or output's ValueInfoProto, or nullptr if there is none.
onnx::ValueInfoProto *someValueInfo(Rng &rng, onnx::GraphProto &graph) {
  size_t inputs = graph.input_size(), outputs = graph.output_size();
  if (inputs + outputs == 0)
    return nullptr;
  size_t i = pick(rng, inputs + outputs);
  return i < inputs ? graph.mutable_input(int(i))
                    : graph.mutable_output(int(i - inputs));
}

bool mutateShape(Rng &rng, onnx::GraphProto &graph) {
  onnx::ValueInfoProto *info = someValueInfo(rng, graph);
  if (!info)
    return false;
  onnx::TypeProto_Tensor *tensor = info->mutable_type()->mutable_tensor_type();
  onnx::TensorShapeProto *shape = tensor->mutable_shape();
  switch (pick(rng, 5)) {
  case 0: { // change a dimension
    if (shape->dim_size() == 0)
      return false;
    auto *dim = shape->mutable_dim(int(pick(rng, shape->dim_size())));
    if (pick(rng, 4) == 0)
      dim->set_dim_param(pick(rng, 2) ? "N" : "batch");
    else
      dim->set_dim_value(interestingInt(rng));
    return true;
  }
  case 1: { // add a dimension at a random place
    shape->add_dim()->set_dim_value(pick(rng, 3) ? 1 : interestingInt(rng));
    for (int i = shape->dim_size() - 1, at = int(pick(rng, shape->dim_size()));
         i > at; --i)
      shape->mutable_dim()->SwapElements(i, i - 1);
    return true;
  }
  case 2: // drop a dimension
    if (shape->dim_size() == 0)
      return false;
    shape->mutable_dim()->DeleteSubrange(int(pick(rng, shape->dim_size())), 1);
    return true;
  case 3: // no shape at all, or a rank-0 one
    if (pick(rng, 2))
      tensor->clear_shape();
    else
      shape->clear_dim();
    return true;
  default: // element type
    tensor->set_elem_type(pick(rng, 8) == 0 ? int32_t(interestingInt(rng))
                                            : int32_t(pick(rng, 24)));
    return true;
  }
}

bool mutateAttribute(Rng &rng, onnx::GraphProto &graph) {
  if (graph.node_size() == 0)
    return false;
  onnx::NodeProto *node = graph.mutable_node(int(pick(rng, graph.node_size())));
  if (node->attribute_size() == 0 || pick(rng, 8) == 0) {
    // Add one that ops commonly read.
    static const char *kNames[] = {"axis", "axes", "keepdims", "perm",
                                   "kernel_shape", "strides", "pads",
                                   "dilations", "group", "transA", "alpha",
                                   "epsilon", "to", "mode", "value"};
    onnx::AttributeProto *attr = node->add_attribute();
    attr->set_name(kNames[pick(rng, sizeof(kNames) / sizeof(kNames[0]))]);
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(interestingInt(rng));
    return true;
  }
  int index = int(pick(rng, node->attribute_size()));
  onnx::AttributeProto *attr = node->mutable_attribute(index);
  switch (pick(rng, 6)) {
  case 0: // remove it
    node->mutable_attribute()->DeleteSubrange(index, 1);
    return true;
  case 1: // another type, the value left as it is
    attr->set_type(onnx::AttributeProto::AttributeType(pick(rng, 15)));
    return true;
  default:
    break;
  }
  switch (attr->type()) {
  case onnx::AttributeProto::INT:
    attr->set_i(interestingInt(rng));
    return true;
  case onnx::AttributeProto::FLOAT:
    attr->set_f(interestingFloat(rng));
    return true;
  case onnx::AttributeProto::STRING:
    attr->set_s(pick(rng, 2) ? "" : "NOTSET_or_unknown");
    return true;
  case onnx::AttributeProto::INTS:
    if (attr->ints_size() == 0 || pick(rng, 3) == 0)
      attr->add_ints(interestingInt(rng));
    else if (pick(rng, 2))
      attr->set_ints(int(pick(rng, attr->ints_size())), interestingInt(rng));
    else
      attr->mutable_ints()->RemoveLast();
    return true;
  case onnx::AttributeProto::FLOATS:
    if (attr->floats_size() == 0 || pick(rng, 3) == 0)
      attr->add_floats(interestingFloat(rng));
    else
      attr->mutable_floats()->RemoveLast();
    return true;
  case onnx::AttributeProto::TENSOR: {
    onnx::TensorProto *t = attr->mutable_t();
    if (t->dims_size() && pick(rng, 2))
      t->set_dims(int(pick(rng, t->dims_size())), interestingInt(rng));
    else
      t->set_data_type(int32_t(pick(rng, 24)));
    return true;
  }
  default:
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(interestingInt(rng));
    return true;
  }
}

bool mutateWiring(Rng &rng, onnx::GraphProto &graph) {
  if (graph.node_size() == 0)
    return false;
  int index = int(pick(rng, graph.node_size()));
  onnx::NodeProto *node = graph.mutable_node(index);
  switch (pick(rng, 6)) {
  case 0: // drop the node
    graph.mutable_node()->DeleteSubrange(index, 1);
    return true;
  case 1: // duplicate it
    *graph.add_node() = *node;
    return true;
  case 2: // rename an output
    if (node->output_size() == 0)
      return false;
    node->set_output(int(pick(rng, node->output_size())), someName(rng, graph));
    return true;
  case 3: // one input more or less
    if (node->input_size() && pick(rng, 2))
      node->mutable_input()->RemoveLast();
    else
      node->add_input(someName(rng, graph));
    return true;
  default: // rewire an input
    if (node->input_size() == 0)
      return false;
    node->set_input(int(pick(rng, node->input_size())), someName(rng, graph));
    return true;
  }
}

bool mutateInitializer(Rng &rng, onnx::GraphProto &graph) {
  if (graph.initializer_size() == 0)
    return false;
  onnx::TensorProto *t =
      graph.mutable_initializer(int(pick(rng, graph.initializer_size())));
  switch (pick(rng, 4)) {
  case 0:
    if (t->dims_size() == 0)
      t->add_dims(interestingInt(rng));
    else
      t->set_dims(int(pick(rng, t->dims_size())), interestingInt(rng));
    return true;
  case 1:
    if (t->dims_size())
      t->mutable_dims()->RemoveLast();
    else
      t->add_dims(2);
    return true;
  case 2:
    t->set_data_type(int32_t(pick(rng, 24)));
    return true;
  default:
    if (t->has_raw_data() && !t->raw_data().empty())
      t->mutable_raw_data()->resize(pick(rng, t->raw_data().size()));
    else
      t->set_raw_data(std::string(pick(rng, 64), '\x01'));
    return true;
  }
}

bool mutateOpset(Rng &rng, onnx::ModelProto &model) {
  for (auto &opset : *model.mutable_opset_import()) {
    if (!opset.domain().empty() && opset.domain() != "ai.onnx")
      continue;
    opset.set_version(pick(rng, 4) ? int64_t(1 + pick(rng, 24))
                                   : interestingInt(rng));
    return true;
  }
  return false;
}

bool mutateModel(Rng &rng, onnx::ModelProto &model) {
  onnx::GraphProto &graph = *model.mutable_graph();
  for (int attempt = 0; attempt < 8; ++attempt) {
    bool changed = false;
    switch (pick(rng, 12)) {
    case 0:
    case 1:
    case 2:
      changed = mutateShape(rng, graph);
      break;
    case 3:
    case 4:
    case 5:
      changed = mutateAttribute(rng, graph);
      break;
    case 6:
    case 7:
    case 8:
      changed = mutateWiring(rng, graph);
      break;
    case 9:
    case 10:
      changed = mutateInitializer(rng, graph);
      break;
    default:
      changed = mutateOpset(rng, model);
      break;
    }
    if (changed)
      return true;
  }
  return false;
}

} // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto model;
  // One in 16 mutations is byte-level anyway (the wire format scanner and
  // protobuf see malformed bytes too).
  if (pick(rng, 16) == 0 || !model.ParseFromArray(data, int(size)) ||
      !model.has_graph())
    return LLVMFuzzerMutate(data, size, maxSize);
  size_t rounds = 1 + pick(rng, 3);
  bool changed = false;
  for (size_t i = 0; i < rounds; ++i)
    changed = mutateModel(rng, model) || changed;
  std::string bytes;
  if (!changed || !model.SerializeToString(&bytes) || bytes.size() > maxSize)
    return LLVMFuzzerMutate(data, size, maxSize);
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}
