// An ONNX model held as plain structs and written in protobuf's wire format by fixres itself
// (onnx.proto, proto2: ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto,
// ValueInfoProto), with no protobuf or ONNX library: both builds write the same bytes, and the
// PyTorch wheel's LibTorch, which carries a protobuf of its own, never meets a second one.
//
// Only the fields fixres writes are modelled. Field numbers are onnx.proto's; repeated scalars are
// written unpacked (proto2's default), which every protobuf reader accepts.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace fixres::engine::onnx {

// TensorProto.DataType values used here.
enum class DataType : int32_t { kFloat = 1, kInt64 = 7 };

struct Attribute {
  // AttributeProto.AttributeType values.
  enum class Type : int32_t { kFloat = 1, kInt = 2, kString = 3, kInts = 7 };
  std::string name;
  Type type = Type::kInt;
  float f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<int64_t> ints;
};

struct Node {
  std::string opType, name;
  std::vector<std::string> inputs, outputs;
  std::vector<Attribute> attributes;
  const std::string& output() const { return outputs.front(); }
  void setInt(const std::string& name, int64_t v);
  void setInts(const std::string& name, std::vector<int64_t> v);
  void setFloat(const std::string& name, float v);
  void setString(const std::string& name, std::string v);
};

struct Tensor {
  std::string name;
  DataType dataType = DataType::kFloat;
  std::vector<int64_t> dims;  // none: a scalar
  std::string raw;            // little-endian values, row-major (TensorProto.raw_data)
  // External data (ONNX's layout for models over 2 GiB): with a location, `raw` is stored at
  // `offset` of that file, relative to the model's folder, and the message names it instead of
  // holding it (TensorProto.external_data: location, offset, length; data_location EXTERNAL).
  std::string location;
  uint64_t offset = 0;
};

// A dimension of a graph input or output: a fixed size, or a symbolic one (`param` not empty).
struct Dim {
  int64_t value = 0;
  std::string param;
};

struct ValueInfo {
  std::string name;
  DataType elemType = DataType::kFloat;
  std::vector<Dim> shape;
};

struct Graph {
  std::string name;
  std::deque<Node> nodes;  // a deque: pointers to nodes stay valid while nodes are added
  std::deque<Tensor> initializers;
  std::vector<ValueInfo> inputs, outputs;
};

struct Model {
  int64_t irVersion = 8;  // ONNX 1.12's IR (opsets up to 17)
  std::string producerName, producerVersion;
  std::vector<std::pair<std::string, int64_t>> opsets;  // {domain, version}; "" is ai.onnx
  Graph graph;
  std::vector<std::pair<std::string, std::string>> metadata;
};

// The structural rules ONNX's checker applies to such a graph, the ones a writer can break:
// names of nodes, initializers and graph inputs unique and not empty; every node input is a
// graph input, an initializer, the output of an earlier node (topological order) or "" (an
// optional input left out); every value
// produced once; every graph output produced; initializers' raw data of the size of their dims;
// at least one opset. InternalError naming the first violation.
void checkModel(const Model& model);

// The model's bytes in protobuf's wire format. UsageError when they would pass 2 GiB, the
// largest message protobuf readers accept (moveToExternalData avoids it).
std::string serialize(const Model& model);
// The model's size in that format.
uint64_t serializedSize(const Model& model);

// The initializers of at least `minBytes` bytes (ONNX's convention: 1 KiB) given `location`, at
// offsets aligned to 4 KiB in the order they come. Returns the external file's size.
uint64_t moveToExternalData(Model& model, const std::string& location, size_t minBytes = 1024);
// Writes the external file of `model` (its tensors with a location, at their offsets, zeros
// between) to `path` atomically; OutputError naming it on a write failure.
void writeExternalData(const Model& model, const std::string& path);

}  // namespace fixres::engine::onnx
