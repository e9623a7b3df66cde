// ONNX's protobuf messages written field by field (common/ProtoWire.h), fields in ascending
// number as protobuf's own serializers order them. Each submessage is measured before it is
// written (raw tensor data is counted, not copied), so the weights are copied once.
#include "fixres/runtime/OnnxModel.h"

#include <cstring>
#include <limits>
#include <set>

#include "fixres/common/AtomicFile.h"
#include "fixres/common/Error.h"
#include "fixres/common/ProtoWire.h"

namespace fixres::engine::onnx {

namespace {

Attribute named(const std::string& name, Attribute::Type type) {
  Attribute a;
  a.name = name;
  a.type = type;
  return a;
}

}  // namespace

void Node::setInt(const std::string& n, int64_t v) {
  attributes.push_back(named(n, Attribute::Type::kInt));
  attributes.back().i = v;
}

void Node::setInts(const std::string& n, std::vector<int64_t> v) {
  attributes.push_back(named(n, Attribute::Type::kInts));
  attributes.back().ints = std::move(v);
}

void Node::setFloat(const std::string& n, float v) {
  attributes.push_back(named(n, Attribute::Type::kFloat));
  attributes.back().f = v;
}

void Node::setString(const std::string& n, std::string v) {
  attributes.push_back(named(n, Attribute::Type::kString));
  attributes.back().s = std::move(v);
}

namespace {

using proto::bytesField;
using proto::floatField;
using proto::intField;
using proto::messageField;

template <class S>
void encode(S& s, const Attribute& a) {  // AttributeProto
  bytesField(s, 1, a.name);
  switch (a.type) {
    case Attribute::Type::kFloat:
      floatField(s, 2, a.f);
      break;
    case Attribute::Type::kInt:
      intField(s, 3, a.i);
      break;
    case Attribute::Type::kString:
      bytesField(s, 4, a.s);
      break;
    case Attribute::Type::kInts:
      for (int64_t i : a.ints) intField(s, 8, i);
      break;
  }
  intField(s, 20, static_cast<int32_t>(a.type));
}

template <class S>
void encode(S& s, const Node& n) {  // NodeProto
  for (const auto& i : n.inputs) bytesField(s, 1, i);
  for (const auto& o : n.outputs) bytesField(s, 2, o);
  bytesField(s, 3, n.name);
  bytesField(s, 4, n.opType);
  for (const auto& a : n.attributes) messageField(s, 5, [&](auto& sub) { encode(sub, a); });
}

template <class S>
void encode(S& s, const Tensor& t) {  // TensorProto
  for (int64_t d : t.dims) intField(s, 1, d);
  intField(s, 2, static_cast<int32_t>(t.dataType));
  bytesField(s, 8, t.name);
  if (t.location.empty()) {
    bytesField(s, 9, t.raw);
    return;
  }
  const std::pair<const char*, std::string> entries[] = {{"location", t.location},
                                                         {"offset", std::to_string(t.offset)},
                                                         {"length", std::to_string(t.raw.size())}};
  // StringStringEntryProto (pairs, not structured bindings: C++17 lambdas cannot capture those)
  for (const auto& entry : entries)
    messageField(s, 13, [&](auto& e) {
      bytesField(e, 1, std::string(entry.first));
      bytesField(e, 2, entry.second);
    });
  intField(s, 14, 1);  // data_location: EXTERNAL
}

template <class S>
void encode(S& s, const ValueInfo& v) {  // ValueInfoProto { name, TypeProto { Tensor } }
  bytesField(s, 1, v.name);
  messageField(s, 2, [&](auto& type) {
    messageField(type, 1, [&](auto& tensor) {
      intField(tensor, 1, static_cast<int32_t>(v.elemType));
      messageField(tensor, 2, [&](auto& shape) {
        for (const Dim& d : v.shape)
          messageField(shape, 1, [&](auto& dim) {
            if (d.param.empty())
              intField(dim, 1, d.value);
            else
              bytesField(dim, 2, d.param);
          });
      });
    });
  });
}

template <class S>
void encode(S& s, const Graph& g) {  // GraphProto
  for (const auto& n : g.nodes) messageField(s, 1, [&](auto& sub) { encode(sub, n); });
  bytesField(s, 2, g.name);
  for (const auto& t : g.initializers) messageField(s, 5, [&](auto& sub) { encode(sub, t); });
  for (const auto& v : g.inputs) messageField(s, 11, [&](auto& sub) { encode(sub, v); });
  for (const auto& v : g.outputs) messageField(s, 12, [&](auto& sub) { encode(sub, v); });
}

template <class S>
void encode(S& s, const Model& m) {  // ModelProto
  intField(s, 1, m.irVersion);
  bytesField(s, 2, m.producerName);
  bytesField(s, 3, m.producerVersion);
  messageField(s, 7, [&](auto& sub) { encode(sub, m.graph); });
  for (const auto& opset : m.opsets)
    messageField(s, 8, [&](auto& sub) {
      bytesField(sub, 1, opset.first);
      intField(sub, 2, opset.second);
    });
  for (const auto& entry : m.metadata)
    messageField(s, 14, [&](auto& sub) {
      bytesField(sub, 1, entry.first);
      bytesField(sub, 2, entry.second);
    });
}

size_t elementSize(DataType t) {
  return t == DataType::kInt64 ? sizeof(int64_t) : sizeof(float);
}

}  // namespace

void checkModel(const Model& m) {
  FIXRES_CHECK(!m.opsets.empty(), InternalError, "ONNX model: no opset");
  std::set<std::string> defined, names;
  const auto define = [&](const std::string& v, const char* what) {
    FIXRES_CHECK(!v.empty(), InternalError, "ONNX model: a ", what, " without a name");
    FIXRES_CHECK(defined.insert(v).second, InternalError, "ONNX model: '", v,
                 "' is produced twice (", what, ")");
  };
  for (const auto& v : m.graph.inputs) define(v.name, "graph input");
  for (const auto& t : m.graph.initializers) {
    define(t.name, "initializer");
    size_t count = 1;
    for (int64_t d : t.dims) {
      FIXRES_CHECK(d >= 0, InternalError, "ONNX model: initializer '", t.name, "' has dim ", d);
      count *= static_cast<size_t>(d);
    }
    FIXRES_CHECK(t.raw.size() == count * elementSize(t.dataType), InternalError,
                 "ONNX model: initializer '", t.name, "' holds ", t.raw.size(), " bytes for ",
                 count, " values");
  }
  for (const auto& n : m.graph.nodes) {
    FIXRES_CHECK(!n.opType.empty() && !n.outputs.empty(), InternalError, "ONNX model: node '",
                 n.name, "' has no operator or output");
    FIXRES_CHECK(names.insert(n.name).second, InternalError, "ONNX model: two nodes are named '",
                 n.name, "'");
    for (const auto& i : n.inputs)  // "": an optional input left out
      FIXRES_CHECK(i.empty() || defined.count(i), InternalError, "ONNX model: node '", n.name,
                   "' reads '", i, "' before anything produces it");
    for (const auto& o : n.outputs) define(o, "node output");
  }
  for (const auto& v : m.graph.outputs)
    FIXRES_CHECK(defined.count(v.name), InternalError, "ONNX model: graph output '", v.name,
                 "' is never produced");
}

uint64_t serializedSize(const Model& m) {
  proto::Size size;
  encode(size, m);
  return size.n;
}

uint64_t moveToExternalData(Model& m, const std::string& location, size_t minBytes) {
  constexpr uint64_t kAlign = 4096;
  uint64_t end = 0;
  for (Tensor& t : m.graph.initializers) {
    if (t.raw.size() < minBytes) continue;
    t.location = location;
    t.offset = (end + kAlign - 1) / kAlign * kAlign;
    end = t.offset + t.raw.size();
  }
  return end;
}

void writeExternalData(const Model& m, const std::string& path) {
  AtomicFile file(path);
  uint64_t at = 0;
  const std::string zeros(4096, '\0');
  for (const Tensor& t : m.graph.initializers) {
    if (t.location.empty()) continue;
    FIXRES_CHECK(t.offset >= at && t.offset - at <= zeros.size(), InternalError,
                 "ONNX external data: tensors out of order");
    file.write(zeros.data(), t.offset - at);
    file.write(t.raw.data(), t.raw.size());
    at = t.offset + t.raw.size();
  }
  FIXRES_CHECK(file.commit(), OutputError, "cannot write ", path, ": ", file.reason());
}

std::string serialize(const Model& m) {
  const uint16_t one = 1;
  uint8_t first = 0;
  std::memcpy(&first, &one, 1);
  FIXRES_CHECK(first == 1, InternalError,
               "ONNX export: raw tensor data needs a little-endian host");
  proto::Size size;
  encode(size, m);
  FIXRES_CHECK(size.n <= static_cast<size_t>(std::numeric_limits<int32_t>::max()), UsageError,
               "export --format onnx: the model would take ", size.n,
               " bytes, over the 2 GiB a protobuf message may hold");
  proto::Bytes out;
  out.data.reserve(size.n);
  encode(out, m);
  return std::move(out.data);
}

}  // namespace fixres::engine::onnx
