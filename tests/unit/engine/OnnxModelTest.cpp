// fixres's own ONNX encoder (runtime/OnnxModel.h) read by ONNX's Python package
// (tests/reference/onnx_proto_check.py on Debian's python3-onnx and its protobuf): the checker
// with full shape inference accepts the model, protobuf writes the parsed model back to the same
// bytes, and every field reads back as it was set (negative integers, a float attribute, a
// string attribute, int64 and float initializers, a scalar, symbolic and fixed dimensions,
// metadata). And the structural rules checkModel enforces before a file is written.
#include "fixres/runtime/OnnxModel.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>

#include "../Reference.h"
#include "fixres/common/Error.h"

namespace fixres::engine::onnx {
namespace {

std::string rawOf(const void* p, size_t n) {
  return std::string(static_cast<const char*>(p), n);
}

Tensor floats(const std::string& name, std::vector<int64_t> dims, std::vector<float> v) {
  return {name, DataType::kFloat, std::move(dims), rawOf(v.data(), v.size() * sizeof(float))};
}

Tensor int64s(const std::string& name, std::vector<int64_t> v) {
  return {name,
          DataType::kInt64,
          {static_cast<int64_t>(v.size())},
          rawOf(v.data(), v.size() * sizeof(int64_t))};
}

// x (batch x 3 x 4) * w + b, LeakyRelu(alpha 0.125), a Slice with a negative end, a constant Pad,
// ReduceMean over axis -1: y is batch x 2 (shape inference checks it).
Model smallModel() {
  Model m;
  m.producerName = "fixres";
  m.producerVersion = "9.8.7";
  m.opsets = {{"", 13}};
  Graph& g = m.graph;
  g.name = "small";
  g.initializers.push_back(floats("w", {3, 1}, {0.5f, -2.0f, 3.25f}));
  g.initializers.push_back(floats("b", {}, {-1.5f}));
  g.initializers.push_back(int64s("starts", {0}));
  g.initializers.push_back(int64s("ends", {-1}));
  g.initializers.push_back(int64s("axes", {1}));
  g.initializers.push_back(int64s("pads", {0, 0, 1, 0, 0, 2}));
  g.inputs.push_back({"x", DataType::kFloat, {{0, "batch"}, {3, ""}, {4, ""}}});
  const auto add = [&](const std::string& op, std::vector<std::string> in) -> Node& {
    Node& n = g.nodes.emplace_back();
    n.opType = op;
    n.name = op + "_" + std::to_string(g.nodes.size());
    n.inputs = std::move(in);
    n.outputs = {n.name};
    return n;
  };
  const std::string mul = add("Mul", {"x", "w"}).output();
  const std::string plus = add("Add", {mul, "b"}).output();
  Node& leaky = add("LeakyRelu", {plus});
  leaky.setFloat("alpha", 0.125f);
  const std::string cut = add("Slice", {leaky.output(), "starts", "ends", "axes"}).output();
  Node& pad = add("Pad", {cut, "pads"});
  pad.setString("mode", "constant");
  Node& mean = add("ReduceMean", {pad.output()});
  mean.setInts("axes", {-1});
  mean.setInt("keepdims", 0);
  g.outputs.push_back({mean.output(), DataType::kFloat, {{0, "batch"}, {2, ""}}});
  m.metadata = {{"fixres.preprocessing", "{\"input_size\": 224}"}, {"license", "apache-2.0"}};
  return m;
}

// Runs onnx_proto_check.py on Debian's Python (the one with python3-onnx, whatever Python the
// build's other references use); 77: no onnx package.
std::string checkWithOnnx(const std::string& path, int* status) {
  const std::string cmd = std::string("/usr/bin/python3 ") + FIXRES_SOURCE_DIR +
                          "/tests/reference/onnx_proto_check.py --json " + path;
  std::string out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), pipe)) > 0;) out.append(buf, n);
  const int rc = pclose(pipe);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
  return out;
}

std::string base64Decode(const std::string& s) {
  static const std::string kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : s) {
    const size_t v = kAlphabet.find(c);
    if (v == std::string::npos) break;  // '=' padding
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  return out;
}

TEST(OnnxModelTest, OnnxsOwnPackageReadsEveryFieldBack) {
  const Model m = smallModel();
  const std::string bytes = serialize(m);
  const std::string path = testing::makeTempDir("fixres_onnx_") + "/small.onnx";
  std::ofstream(path, std::ios::binary) << bytes;
  int status = -1;
  const std::string out = checkWithOnnx(path, &status);
  FIXRES_SKIP_UNLESS(status != 77, "onnx-python", "Debian's python3-onnx is not installed");
  ASSERT_EQ(status, 0) << "ONNX refused the model or wrote it otherwise (stderr above)";
  const auto j = nlohmann::json::parse(out);
  // protobuf's JSON mapping writes int64 values as strings.
  EXPECT_EQ(j.at("ir_version"), "8");
  EXPECT_EQ(j.at("producer_name"), "fixres");
  EXPECT_EQ(j.at("producer_version"), "9.8.7");
  EXPECT_EQ(j.at("opset_import").at(0).at("version"), "13");
  const auto& g = j.at("graph");
  EXPECT_EQ(g.at("name"), "small");
  ASSERT_EQ(g.at("node").size(), m.graph.nodes.size());
  for (size_t k = 0; k < m.graph.nodes.size(); ++k) {
    EXPECT_EQ(g["node"][k].at("op_type"), m.graph.nodes[k].opType);
    EXPECT_EQ(g["node"][k].at("input").get<std::vector<std::string>>(), m.graph.nodes[k].inputs);
  }
  EXPECT_EQ(g["node"][2]["attribute"][0].at("f").get<double>(), 0.125);
  EXPECT_EQ(g["node"][2]["attribute"][0].at("type"), "FLOAT");
  EXPECT_EQ(base64Decode(g["node"][4]["attribute"][0].at("s")), "constant");
  EXPECT_EQ(g["node"][5]["attribute"][0].at("ints"), nlohmann::json({"-1"}));
  EXPECT_EQ(g["node"][5]["attribute"][1].at("i"), "0");
  ASSERT_EQ(g.at("initializer").size(), m.graph.initializers.size());
  for (size_t k = 0; k < m.graph.initializers.size(); ++k) {
    const auto& t = g["initializer"][k];
    EXPECT_EQ(t.at("name"), m.graph.initializers[k].name);
    EXPECT_EQ(base64Decode(t.at("raw_data")), m.graph.initializers[k].raw) << k;
    EXPECT_EQ(t.value("dims", nlohmann::json::array()).size(), m.graph.initializers[k].dims.size());
  }
  EXPECT_EQ(g["initializer"][0].at("data_type"), 1);  // FLOAT
  EXPECT_EQ(g["initializer"][3].at("data_type"), 7);  // INT64, holding -1
  const auto& dims = g.at("input").at(0).at("type").at("tensor_type").at("shape").at("dim");
  EXPECT_EQ(dims.at(0).at("dim_param"), "batch");
  EXPECT_EQ(dims.at(2).at("dim_value"), "4");
  EXPECT_EQ(j.at("metadata_props").at(1).at("value"), "apache-2.0");
}

TEST(OnnxModelTest, StructuralRulesAreCheckedBeforeWriting) {
  EXPECT_NO_THROW(checkModel(smallModel()));
  Model readsAhead = smallModel();
  std::swap(readsAhead.graph.nodes[0], readsAhead.graph.nodes[1]);  // Add reads Mul's output
  EXPECT_THROW(checkModel(readsAhead), InternalError);
  Model twice = smallModel();
  twice.graph.nodes[1].outputs = {twice.graph.nodes[0].output()};
  EXPECT_THROW(checkModel(twice), InternalError);
  Model shortRaw = smallModel();
  shortRaw.graph.initializers[0].raw.pop_back();
  EXPECT_THROW(checkModel(shortRaw), InternalError);
  Model lostOutput = smallModel();
  lostOutput.graph.outputs[0].name = "nowhere";
  EXPECT_THROW(checkModel(lostOutput), InternalError);
  Model noOpset = smallModel();
  noOpset.opsets.clear();
  EXPECT_THROW(checkModel(noOpset), InternalError);
}

}  // namespace
}  // namespace fixres::engine::onnx

namespace fixres::engine::onnx {
namespace {

// The external-data layout over 200 seeded random models (tensor sizes of 0 to 20,000 bytes, one
// of 1020 bytes and one of exactly 1 KiB): every tensor of 1 KiB or more is moved, at a 4
// KiB-aligned offset past the previous one's end, in graph order; the smaller ones stay inline; the
// file written holds each moved tensor's bytes at its offset and ends at the last one's end; the
// model message no longer counts the moved bytes.
TEST(OnnxModelTest, ExternalDataLaysTensorsOutAlignedAndWhole) {
  std::mt19937 rng(11);
  const std::string dir = fixres::testing::makeTempDir("fixres_onnx_external_");
  for (int trial = 0; trial < 200; ++trial) {
    Model m = smallModel();
    const size_t extra = rng() % 12;
    for (size_t k = 0; k < extra + 2; ++k) {
      const size_t bytes = k == 0 ? 1020 : k == 1 ? 1024 : 4 * (rng() % 5001);
      std::string raw(bytes, '\0');
      for (char& c : raw) c = static_cast<char>(rng());
      m.graph.initializers.push_back(
          {"t" + std::to_string(k), DataType::kFloat, {static_cast<int64_t>(bytes / 4)}, raw});
    }
    const uint64_t inlineSize = serializedSize(m);
    const uint64_t end = moveToExternalData(m, "m.onnx.data");
    uint64_t at = 0, moved = 0;
    for (const Tensor& t : m.graph.initializers) {
      ASSERT_EQ(t.location.empty(), t.raw.size() < 1024) << t.name << " " << t.raw.size();
      if (t.location.empty()) continue;
      EXPECT_EQ(t.location, "m.onnx.data");
      EXPECT_EQ(t.offset % 4096, 0u);
      EXPECT_GE(t.offset, at);
      EXPECT_LT(t.offset - at, 4096u);
      at = t.offset + t.raw.size();
      moved += t.raw.size();
    }
    EXPECT_EQ(at, end);
    EXPECT_LE(serializedSize(m) + moved, inlineSize + 64 * m.graph.initializers.size());
    const std::string path = dir + "/m.onnx.data";
    writeExternalData(m, path);
    std::ifstream in(path, std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_EQ(file.size(), end);
    for (const Tensor& t : m.graph.initializers)
      if (!t.location.empty()) ASSERT_EQ(file.compare(t.offset, t.raw.size(), t.raw), 0) << t.name;
    EXPECT_FALSE(serialize(m).empty());
  }
}

}  // namespace
}  // namespace fixres::engine::onnx
