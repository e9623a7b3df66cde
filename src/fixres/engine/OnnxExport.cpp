// The ONNX exporter: a GraphWriter that builds an ONNX model (OnnxModel.h; see OnnxExport.h).
#include "fixres/engine/OnnxExport.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include <torch/torch.h>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/JsonInput.h"
#include "fixres/models/GraphWriter.h"
#include "fixres/runtime/OnnxModel.h"

namespace fixres::engine {

namespace {

// Opset 13; 18 for a graph with dynamic height and width, whose transformers resample their
// position embedding with Resize's antialias (new in 18; ReduceMean's axes are then an input).
constexpr int64_t kOpset = 13, kDynamicOpset = 18;
// The largest message protobuf readers accept (2 GiB - 1).
constexpr uint64_t kProtobufLimit = std::numeric_limits<int32_t>::max();

class OnnxGraphWriter : public models::GraphWriter {
 public:
  // size > 0: every value's height and width are tracked from size x size; 0: dynamic.
  OnnxGraphWriter(onnx::Graph* graph, int64_t size, int64_t opset) : g_(graph), opset_(opset) {
    if (size > 0) sizes_["input"] = {size, size};
  }

  Value input() override { return "input"; }

  std::optional<std::pair<int64_t, int64_t>> spatialSize(const Value& x) const override {
    const auto it = sizes_.find(x);
    if (it == sizes_.end()) return std::nullopt;
    return it->second;
  }

  Value conv(const Value& x, const torch::nn::Conv2dImpl& c, models::Pads p) override {
    const auto& o = c.options;
    const int64_t kh = c.weight.size(2), kw = c.weight.size(3);
    const int64_t sh = (*o.stride())[0], sw = (*o.stride())[1];
    const int64_t dh = (*o.dilation())[0], dw = (*o.dilation())[1];
    std::vector<Value> inputs{x, initializer(c.weight, "conv_w")};
    if (c.bias.defined()) inputs.push_back(initializer(c.bias, "conv_b"));
    auto* n = node("Conv", inputs);
    ints(n, "kernel_shape", {kh, kw});
    ints(n, "strides", {sh, sw});
    ints(n, "pads", {p.top, p.left, p.bottom, p.right});  // ONNX: begins, then ends
    ints(n, "dilations", {dh, dw});
    integer(n, "group", o.groups());
    if (const auto in = spatialSize(x))
      sizes_[n->output()] = {(in->first + p.top + p.bottom - dh * (kh - 1) - 1) / sh + 1,
                             (in->second + p.left + p.right - dw * (kw - 1) - 1) / sw + 1};
    return n->output();
  }

  Value batchNorm(const Value& x, const models::BatchNorm2dImpl& bn) override {
    const int64_t c = bn.running_mean.size(0);
    const auto ones = torch::ones({c}), zeros = torch::zeros({c});
    auto* n =
        node("BatchNormalization",
             {x, initializer(bn.weight.defined() ? bn.weight : ones, "bn_scale"),
              initializer(bn.bias.defined() ? bn.bias : zeros, "bn_bias"),
              initializer(bn.running_mean, "bn_mean"), initializer(bn.running_var, "bn_var")});
    n->setFloat("epsilon", static_cast<float>(bn.options.eps()));
    return same(x, n);
  }

  Value relu(const Value& x) override { return same(x, node("Relu", {x})); }

  Value sigmoid(const Value& x) override { return same(x, node("Sigmoid", {x})); }

  Value add(const Value& a, const Value& b) override { return same(a, node("Add", {a, b})); }

  Value mul(const Value& a, const Value& b) override { return same(a, node("Mul", {a, b})); }

  Value maxPool(const Value& x, int64_t kernel, int64_t stride, models::Pads p) override {
    auto* n = node("MaxPool", {x});
    ints(n, "kernel_shape", {kernel, kernel});
    ints(n, "strides", {stride, stride});
    ints(n, "pads", {p.top, p.left, p.bottom, p.right});
    if (const auto in = spatialSize(x))
      sizes_[n->output()] = {(in->first + p.top + p.bottom - kernel) / stride + 1,
                             (in->second + p.left + p.right - kernel) / stride + 1};
    return n->output();
  }

  Value averagePool(const Value& x, int64_t k) override {
    auto* n = node("AveragePool", {x});
    ints(n, "kernel_shape", {k, k});
    ints(n, "strides", {k, k});
    integer(n, "ceil_mode", 1);
    integer(n, "count_include_pad", 0);
    if (const auto in = spatialSize(x))
      sizes_[n->output()] = {(in->first + k - 1) / k, (in->second + k - 1) / k};
    return n->output();
  }

  Value subsample2(const Value& x) override {
    constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
    auto* n = node("Slice", {x, int64s({0, 0}, "starts"), int64s({kEnd, kEnd}, "ends"),
                             int64s({2, 3}, "axes"), int64s({2, 2}, "steps")});
    if (const auto in = spatialSize(x))
      sizes_[n->output()] = {(in->first + 1) / 2, (in->second + 1) / 2};
    return n->output();
  }

  Value shiftUpLeft(const Value& x) override {
    constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
    const Value cut = node("Slice", {x, int64s({1, 1}, "starts"), int64s({kEnd, kEnd}, "ends"),
                                     int64s({2, 3}, "axes")})
                          ->output();
    // Pad's pads: the begins of N, C, H, W, then their ends.
    return same(x, node("Pad", {cut, int64s({0, 0, 0, 0, 0, 0, 1, 1}, "pads")}));
  }

  Value concatChannels(const std::vector<Value>& values) override {
    auto* n = node("Concat", values);
    integer(n, "axis", 1);
    return same(values.front(), n);
  }

  Value spatialMean(const Value& x) override {
    auto* n = node("GlobalAveragePool", {x});
    sizes_[n->output()] = {1, 1};
    return n->output();
  }

  Value globalAveragePool(const Value& x) override {
    auto* flat = node("Flatten", {node("GlobalAveragePool", {x})->output()});
    integer(flat, "axis", 1);
    return flat->output();
  }

  Value linear(const Value& x, const torch::nn::LinearImpl& fc) override {
    auto* n = node("Gemm", {x, initializer(fc.weight, "fc_w"), initializer(fc.bias, "fc_b")});
    integer(n, "transB", 1);
    return n->output();
  }

  Value flatten(const Value& x) override {
    auto* n = node("Flatten", {x});
    integer(n, "axis", 1);
    return n->output();
  }

  Value addConstant(const Value& x, const torch::Tensor& c) override {
    return same(x, node("Add", {x, initializer(c, "const")}));
  }

  Value mulConstant(const Value& x, const torch::Tensor& c) override {
    return same(x, node("Mul", {x, initializer(c, "const")}));
  }

  Value gelu(const Value& x) override {
    const Value erf =
        node("Erf",
             {node("Mul", {x, initializer(torch::tensor(float(M_SQRT1_2)), "rsqrt2")})->output()})
            ->output();
    const Value onePlus = node("Add", {erf, initializer(torch::tensor(1.0f), "one")})->output();
    const Value half = node("Mul", {x, initializer(torch::tensor(0.5f), "half")})->output();
    return same(x, node("Mul", {half, onePlus}));
  }

  Value layerNorm(const Value& x, const torch::Tensor& weight, const torch::Tensor& bias,
                  double eps, bool channels) override {
    const int64_t axis = channels ? 1 : -1;
    auto mean = [&](const Value& v) { return reduceMean(v, axis, /*keep=*/true); };
    const Value centred = node("Sub", {x, mean(x)})->output();
    const Value var = mean(node("Mul", {centred, centred})->output());
    const Value std =
        node("Sqrt", {node("Add", {var, initializer(torch::tensor(float(eps)), "eps")})->output()})
            ->output();
    const Value normed = node("Div", {centred, std})->output();
    const auto shape = [&](const torch::Tensor& t) { return channels ? t.reshape({-1, 1, 1}) : t; };
    const Value scaled = node("Mul", {normed, initializer(shape(weight), "ln_w")})->output();
    return same(x, node("Add", {scaled, initializer(shape(bias), "ln_b")}));
  }

  Value pointwiseLinear(const Value& x, const torch::nn::LinearImpl& fc) override {
    auto* n =
        node("Conv", {x, initializer(fc.weight.reshape({fc.weight.size(0), -1, 1, 1}), "pw_w"),
                      initializer(fc.bias, "pw_b")});
    ints(n, "kernel_shape", {1, 1});
    return same(x, n);
  }

  Value patchTokens(const Value& x) override {
    const Value flat = node("Reshape", {x, int64s({0, 0, -1}, "shape")})->output();
    auto* t = node("Transpose", {flat});
    ints(t, "perm", {0, 2, 1});
    return t->output();
  }

  Value prependTokens(const Value& tokens, const torch::Tensor& prefix) override {
    // The first token times 0 (N x 1 x D) plus the prefix (1 x k x D): the prefix for every image
    // of a batch of any size.
    const Value first =
        node("Slice", {tokens, int64s({0}, "starts"), int64s({1}, "ends"), int64s({1}, "axes")})
            ->output();
    const Value zero = node("Mul", {first, initializer(torch::tensor(0.0f), "zero")})->output();
    const Value expanded = node("Add", {zero, initializer(prefix, "prefix")})->output();
    auto* n = node("Concat", {expanded, tokens});
    integer(n, "axis", 1);
    return n->output();
  }

  Value tokenLinear(const Value& x, const torch::nn::LinearImpl& fc) override {
    const Value y = node("MatMul", {x, initializer(fc.weight.t(), "mm_w")})->output();
    return fc.bias.defined() ? node("Add", {y, initializer(fc.bias, "mm_b")})->output() : y;
  }

  Value attention(const Value& x, const torch::nn::LinearImpl& qkv,
                  const torch::nn::LinearImpl& proj, int64_t heads) override {
    const int64_t dim = proj.weight.size(0), headDim = dim / heads;
    // N x T x 3D -> N x T x 3 x H x d -> 3 x N x H x T x d.
    const Value split =
        node("Reshape", {tokenLinear(x, qkv), int64s({0, 0, 3, heads, headDim}, "shape")})
            ->output();
    auto* perm = node("Transpose", {split});
    ints(perm, "perm", {2, 0, 3, 1, 4});
    auto part = [&](int64_t i) {
      auto* g = node("Gather", {perm->output(), int64Scalar(i)});
      integer(g, "axis", 0);
      return g->output();
    };
    const Value q =
        node("Mul", {part(0),
                     initializer(torch::tensor(float(1.0 / std::sqrt(double(headDim)))), "scale")})
            ->output();
    auto* kt = node("Transpose", {part(1)});
    ints(kt, "perm", {0, 1, 3, 2});
    auto* soft = node("Softmax", {node("MatMul", {q, kt->output()})->output()});
    integer(soft, "axis", -1);
    auto* back = node("Transpose", {node("MatMul", {soft->output(), part(2)})->output()});
    ints(back, "perm", {0, 2, 1, 3});
    const Value merged = node("Reshape", {back->output(), int64s({0, 0, dim}, "shape")})->output();
    return tokenLinear(merged, proj);
  }

  Value token(const Value& x, int64_t index) override {
    auto* g = node("Gather", {x, int64Scalar(index)});
    integer(g, "axis", 1);
    return g->output();
  }

  Value meanTokens(const Value& x, int64_t from) override {
    constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
    const Value rest =
        node("Slice", {x, int64s({from}, "starts"), int64s({kEnd}, "ends"), int64s({1}, "axes")})
            ->output();
    return reduceMean(rest, 1, /*keep=*/false);
  }

  Value resampledPositions(const Value& grid, const torch::Tensor& positions) override {
    FIXRES_CHECK(opset_ >= kDynamicOpset, InternalError, "Resize with antialias needs opset 18");
    const int64_t dim = positions.size(1);
    // Resize's sizes: 1, D and the grid's height and width, read from its shape at run time.
    const Value hw = node("Slice", {node("Shape", {grid})->output(), int64s({2}, "starts"),
                                    int64s({4}, "ends"), int64s({0}, "axes")})
                         ->output();
    auto* sizes = node("Concat", {int64s({1, dim}, "sizes"), hw});
    integer(sizes, "axis", 0);
    // torch's antialiased bicubic (a = -0.5, weights over the pixels inside, renormalised):
    // ONNX Runtime gives it within 2e-6 with exclude_outside = 1.
    auto* r = node("Resize", {initializer(positions, "pos_grid"), "", "", sizes->output()});
    r->setString("mode", "cubic");
    r->setFloat("cubic_coeff_a", -0.5f);
    integer(r, "antialias", 1);
    integer(r, "exclude_outside", 1);
    r->setString("coordinate_transformation_mode", "half_pixel");
    const Value flat = node("Reshape", {r->output(), int64s({1, dim, -1}, "shape")})->output();
    auto* t = node("Transpose", {flat});
    ints(t, "perm", {0, 2, 1});
    return t->output();
  }

  void output(const Value& logits) override { logits_ = logits; }

  const Value& logits() const { return logits_; }

  // The classifier's input when the logits are one Gemm's output (the model's embedding, as
  // forwardWithEmbedding returns it); "" otherwise (a distilled ViT's two heads).
  Value embedding() const {
    for (const onnx::Node& n : g_->nodes)
      if (n.opType == "Gemm" && n.output() == logits_) return n.inputs.front();
    return "";
  }

 private:
  onnx::Node* node(const std::string& op, const std::vector<Value>& inputs) {
    onnx::Node& n = g_->nodes.emplace_back();
    n.opType = op;
    n.name = op + "_" + std::to_string(g_->nodes.size());
    n.inputs = inputs;
    n.outputs = {n.name};
    return &n;
  }

  // The mean over `axis` (ReduceMean's axes: an attribute to opset 17, an input from 18).
  Value reduceMean(const Value& x, int64_t axis, bool keep) {
    auto* n = opset_ >= kDynamicOpset ? node("ReduceMean", {x, int64s({axis}, "axes")})
                                      : node("ReduceMean", {x});
    if (opset_ < kDynamicOpset) ints(n, "axes", {axis});
    integer(n, "keepdims", keep ? 1 : 0);
    return n->output();
  }

  static void ints(onnx::Node* n, const char* name, std::initializer_list<int64_t> values) {
    n->setInts(name, values);
  }

  static void integer(onnx::Node* n, const char* name, int64_t value) { n->setInt(name, value); }

  // A constant int64 tensor of `dims` (Slice's and Pad's index inputs, Gather's scalar index).
  Value int64Tensor(const std::vector<int64_t>& values, std::vector<int64_t> dims,
                    const std::string& hint) {
    onnx::Tensor& t = g_->initializers.emplace_back();
    t.name = hint + "_" + std::to_string(g_->initializers.size());
    t.dataType = onnx::DataType::kInt64;
    t.dims = std::move(dims);
    t.raw.assign(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(int64_t));
    return t.name;
  }

  Value int64s(std::initializer_list<int64_t> values, const std::string& hint) {
    return int64Tensor(values, {static_cast<int64_t>(values.size())}, hint);
  }

  Value int64Scalar(int64_t value) { return int64Tensor({value}, {}, "index"); }

  Value initializer(const torch::Tensor& t, const std::string& hint) {
    const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
    onnx::Tensor& init = g_->initializers.emplace_back();
    init.name = hint + "_" + std::to_string(g_->initializers.size());
    init.dims = c.sizes().vec();
    init.raw.assign(static_cast<const char*>(c.data_ptr()),
                    static_cast<size_t>(c.numel()) * sizeof(float));
    return init.name;
  }

  // The output of `n` has the spatial size of `x` (elementwise operations).
  Value same(const Value& x, onnx::Node* n) {
    if (const auto in = spatialSize(x)) sizes_[n->output()] = *in;
    return n->output();
  }

  onnx::Graph* g_;
  int64_t opset_;
  std::map<Value, std::pair<int64_t, int64_t>> sizes_;
  Value logits_;
};

onnx::ValueInfo tensorType(const std::string& name, const std::vector<std::string>& symbolic,
                           const std::vector<int64_t>& fixed) {
  onnx::ValueInfo v;
  v.name = name;
  for (size_t i = 0; i < fixed.size(); ++i) v.shape.push_back({fixed[i], symbolic[i]});
  return v;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> onnxMetadata(const ModelCard& card,
                                                              bool dynamicSize) {
  std::vector<std::pair<std::string, std::string>> metadata;
  // The test preprocessing record the card carries, as the hub config writes it.
  Preprocessing test = card.test();
  test.dynamicSize = dynamicSize;
  nlohmann::ordered_json pre = test.toJson();
  pre["input"] = "RGB, N x 3 x H x W float32, (pixel / 255 - mean) / std";
  pre["output"] = "logits, N x classes";
  metadata.emplace_back("fixres.preprocessing", jsonText(pre));
  metadata.emplace_back("fixres.architecture", card.architecture);
  if (!card.classNames.empty())
    metadata.emplace_back("fixres.class_names", jsonText(nlohmann::json(card.classNames)));
  if (!card.license.empty()) metadata.emplace_back("license", card.license);
  return metadata;
}

namespace {

// The graph, its inputs and outputs (the embedding as a second output on request, where the model
// has one) and the metadata, checked.
onnx::Model buildOnnx(models::ModelImpl& model, const ModelCard& card, bool dynamicSize,
                      bool withEmbedding) {
  model.eval();
  torch::NoGradGuard noGrad;
  onnx::Model m;
  m.producerName = "fixres";
  m.producerVersion = FIXRES_VERSION;
  const int64_t opset = dynamicSize ? kDynamicOpset : kOpset;
  m.opsets = {{"", opset}};
  onnx::Graph& g = m.graph;
  g.name = card.architecture;
  OnnxGraphWriter writer(&g, dynamicSize ? 0 : card.testSize, opset);
  FIXRES_CHECK(model.writeGraph(writer), UsageError, "export --format onnx: ", card.architecture,
               " cannot be exported to ONNX yet");
  const int64_t s = card.testSize, classes = card.numClasses;
  g.inputs.push_back(
      tensorType("input", {"batch", "", dynamicSize ? "height" : "", dynamicSize ? "width" : ""},
                 {1, 3, s, s}));
  g.outputs.push_back(tensorType(writer.logits(), {"batch", ""}, {1, classes}));
  if (withEmbedding && !writer.embedding().empty())
    g.outputs.push_back(tensorType(writer.embedding(), {"batch", ""}, {1, model.embeddingDim()}));
  for (auto& [key, value] : onnxMetadata(card, dynamicSize)) m.metadata.emplace_back(key, value);
  onnx::checkModel(m);
  return m;
}

}  // namespace

OnnxSource onnxSource(models::ModelImpl& model, const ModelCard& card, bool dynamicSize,
                      bool withEmbedding, bool viaFile, size_t* nodes) {
  onnx::Model m = buildOnnx(model, card, dynamicSize, withEmbedding);
  if (nodes != nullptr) *nodes = m.graph.nodes.size();
  OnnxSource out;
  if (!viaFile && onnx::serializedSize(m) <= kProtobufLimit) {
    out.bytes = onnx::serialize(m);
    return out;
  }
  std::string folder = (std::filesystem::temp_directory_path() / "fixres-onnx-XXXXXX").string();
  FIXRES_CHECK(::mkdtemp(folder.data()) != nullptr, OutputError,
               "cannot create a temporary folder for the ONNX model in ",
               std::filesystem::temp_directory_path().string(), ": ", std::strerror(errno));
  out.scratch = folder;
  out.path = folder + "/model.onnx";
  try {
    onnx::moveToExternalData(m, "model.onnx.data");
    onnx::writeExternalData(m, out.path + ".data");
    writeFileAtomic(out.path, onnx::serialize(m));
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove_all(folder, ignored);
    throw;
  }
  return out;
}

size_t exportOnnx(models::ModelImpl& model, const ModelCard& card, const std::string& path,
                  bool dynamicSize, bool externalData) {
  onnx::Model m = buildOnnx(model, card, dynamicSize, false);
  const onnx::Graph& g = m.graph;
  const std::string data = path + ".data";
  std::error_code ignored;
  if (externalData || onnx::serializedSize(m) > kProtobufLimit) {
    onnx::moveToExternalData(m, std::filesystem::path(data).filename().string());
    onnx::writeExternalData(m, data);
  } else {
    std::filesystem::remove(data, ignored);  // an earlier export's, which this model does not use
  }
  writeFileAtomic(path, onnx::serialize(m));
  return g.nodes.size();
}

}  // namespace fixres::engine
