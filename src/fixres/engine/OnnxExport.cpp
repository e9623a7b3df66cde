// The ONNX exporter: a GraphWriter that builds ONNX's ModelProto (see OnnxExport.h).
#include "fixres/engine/OnnxExport.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include <torch/torch.h>

#if FIXRES_WITH_ONNX
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#endif

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/models/GraphWriter.h"

namespace fixres::engine {

#if FIXRES_WITH_ONNX
namespace {

constexpr int64_t kOpset = 13;

class OnnxGraphWriter : public models::GraphWriter {
 public:
  // size > 0: every value's height and width are tracked from size x size; 0: dynamic.
  OnnxGraphWriter(onnx::GraphProto* graph, int64_t size) : g_(graph) {
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
      sizes_[n->output(0)] = {(in->first + p.top + p.bottom - dh * (kh - 1) - 1) / sh + 1,
                              (in->second + p.left + p.right - dw * (kw - 1) - 1) / sw + 1};
    return n->output(0);
  }

  Value batchNorm(const Value& x, const models::BatchNorm2dImpl& bn) override {
    const int64_t c = bn.running_mean.size(0);
    const auto ones = torch::ones({c}), zeros = torch::zeros({c});
    auto* n =
        node("BatchNormalization",
             {x, initializer(bn.weight.defined() ? bn.weight : ones, "bn_scale"),
              initializer(bn.bias.defined() ? bn.bias : zeros, "bn_bias"),
              initializer(bn.running_mean, "bn_mean"), initializer(bn.running_var, "bn_var")});
    auto* eps = n->add_attribute();
    eps->set_name("epsilon");
    eps->set_type(onnx::AttributeProto::FLOAT);
    eps->set_f(static_cast<float>(bn.options.eps()));
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
      sizes_[n->output(0)] = {(in->first + p.top + p.bottom - kernel) / stride + 1,
                              (in->second + p.left + p.right - kernel) / stride + 1};
    return n->output(0);
  }

  Value averagePool(const Value& x, int64_t k) override {
    auto* n = node("AveragePool", {x});
    ints(n, "kernel_shape", {k, k});
    ints(n, "strides", {k, k});
    integer(n, "ceil_mode", 1);
    integer(n, "count_include_pad", 0);
    if (const auto in = spatialSize(x))
      sizes_[n->output(0)] = {(in->first + k - 1) / k, (in->second + k - 1) / k};
    return n->output(0);
  }

  Value subsample2(const Value& x) override {
    constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
    auto* n = node("Slice", {x, int64s({0, 0}, "starts"), int64s({kEnd, kEnd}, "ends"),
                             int64s({2, 3}, "axes"), int64s({2, 2}, "steps")});
    if (const auto in = spatialSize(x))
      sizes_[n->output(0)] = {(in->first + 1) / 2, (in->second + 1) / 2};
    return n->output(0);
  }

  Value shiftUpLeft(const Value& x) override {
    constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
    const Value cut = node("Slice", {x, int64s({1, 1}, "starts"), int64s({kEnd, kEnd}, "ends"),
                                     int64s({2, 3}, "axes")})
                          ->output(0);
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
    sizes_[n->output(0)] = {1, 1};
    return n->output(0);
  }

  Value globalAveragePool(const Value& x) override {
    auto* flat = node("Flatten", {node("GlobalAveragePool", {x})->output(0)});
    integer(flat, "axis", 1);
    return flat->output(0);
  }

  Value linear(const Value& x, const torch::nn::LinearImpl& fc) override {
    auto* n = node("Gemm", {x, initializer(fc.weight, "fc_w"), initializer(fc.bias, "fc_b")});
    integer(n, "transB", 1);
    return n->output(0);
  }

  Value flatten(const Value& x) override {
    auto* n = node("Flatten", {x});
    integer(n, "axis", 1);
    return n->output(0);
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
             {node("Mul", {x, initializer(torch::tensor(float(M_SQRT1_2)), "rsqrt2")})->output(0)})
            ->output(0);
    const Value onePlus = node("Add", {erf, initializer(torch::tensor(1.0f), "one")})->output(0);
    const Value half = node("Mul", {x, initializer(torch::tensor(0.5f), "half")})->output(0);
    return same(x, node("Mul", {half, onePlus}));
  }

  Value layerNorm(const Value& x, const torch::Tensor& weight, const torch::Tensor& bias,
                  double eps, bool channels) override {
    const int64_t axis = channels ? 1 : -1;
    auto mean = [&](const Value& v) {
      auto* n = node("ReduceMean", {v});
      ints(n, "axes", {axis});
      integer(n, "keepdims", 1);
      return n->output(0);
    };
    const Value centred = node("Sub", {x, mean(x)})->output(0);
    const Value var = mean(node("Mul", {centred, centred})->output(0));
    const Value std =
        node("Sqrt", {node("Add", {var, initializer(torch::tensor(float(eps)), "eps")})->output(0)})
            ->output(0);
    const Value normed = node("Div", {centred, std})->output(0);
    const auto shape = [&](const torch::Tensor& t) { return channels ? t.reshape({-1, 1, 1}) : t; };
    const Value scaled = node("Mul", {normed, initializer(shape(weight), "ln_w")})->output(0);
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
    const Value flat = node("Reshape", {x, int64s({0, 0, -1}, "shape")})->output(0);
    auto* t = node("Transpose", {flat});
    ints(t, "perm", {0, 2, 1});
    return t->output(0);
  }

  Value prependTokens(const Value& tokens, const torch::Tensor& prefix) override {
    // The first token times 0 (N x 1 x D) plus the prefix (1 x k x D): the prefix for every image
    // of a batch of any size.
    const Value first =
        node("Slice", {tokens, int64s({0}, "starts"), int64s({1}, "ends"), int64s({1}, "axes")})
            ->output(0);
    const Value zero = node("Mul", {first, initializer(torch::tensor(0.0f), "zero")})->output(0);
    const Value expanded = node("Add", {zero, initializer(prefix, "prefix")})->output(0);
    auto* n = node("Concat", {expanded, tokens});
    integer(n, "axis", 1);
    return n->output(0);
  }

  Value tokenLinear(const Value& x, const torch::nn::LinearImpl& fc) override {
    const Value y = node("MatMul", {x, initializer(fc.weight.t(), "mm_w")})->output(0);
    return fc.bias.defined() ? node("Add", {y, initializer(fc.bias, "mm_b")})->output(0) : y;
  }

  Value attention(const Value& x, const torch::nn::LinearImpl& qkv,
                  const torch::nn::LinearImpl& proj, int64_t heads) override {
    const int64_t dim = proj.weight.size(0), headDim = dim / heads;
    // N x T x 3D -> N x T x 3 x H x d -> 3 x N x H x T x d.
    const Value split =
        node("Reshape", {tokenLinear(x, qkv), int64s({0, 0, 3, heads, headDim}, "shape")})
            ->output(0);
    auto* perm = node("Transpose", {split});
    ints(perm, "perm", {2, 0, 3, 1, 4});
    auto part = [&](int64_t i) {
      auto* g = node("Gather", {perm->output(0), int64Scalar(i)});
      integer(g, "axis", 0);
      return g->output(0);
    };
    const Value q =
        node("Mul", {part(0),
                     initializer(torch::tensor(float(1.0 / std::sqrt(double(headDim)))), "scale")})
            ->output(0);
    auto* kt = node("Transpose", {part(1)});
    ints(kt, "perm", {0, 1, 3, 2});
    auto* soft = node("Softmax", {node("MatMul", {q, kt->output(0)})->output(0)});
    integer(soft, "axis", -1);
    auto* back = node("Transpose", {node("MatMul", {soft->output(0), part(2)})->output(0)});
    ints(back, "perm", {0, 2, 1, 3});
    const Value merged =
        node("Reshape", {back->output(0), int64s({0, 0, dim}, "shape")})->output(0);
    return tokenLinear(merged, proj);
  }

  Value token(const Value& x, int64_t index) override {
    auto* g = node("Gather", {x, int64Scalar(index)});
    integer(g, "axis", 1);
    return g->output(0);
  }

  Value meanTokens(const Value& x, int64_t from) override {
    constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
    const Value rest =
        node("Slice", {x, int64s({from}, "starts"), int64s({kEnd}, "ends"), int64s({1}, "axes")})
            ->output(0);
    auto* n = node("ReduceMean", {rest});
    ints(n, "axes", {1});
    integer(n, "keepdims", 0);
    return n->output(0);
  }

  void output(const Value& logits) override { logits_ = logits; }

  const Value& logits() const { return logits_; }

 private:
  onnx::NodeProto* node(const std::string& op, const std::vector<Value>& inputs) {
    auto* n = g_->add_node();
    n->set_op_type(op);
    n->set_name(op + "_" + std::to_string(g_->node_size()));
    for (const auto& i : inputs) n->add_input(i);
    n->add_output(n->name());
    return n;
  }

  static void ints(onnx::NodeProto* n, const char* name, std::initializer_list<int64_t> values) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) a->add_ints(v);
  }

  static void integer(onnx::NodeProto* n, const char* name, int64_t value) {
    auto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(value);
  }

  // A constant int64 vector (Slice's and Pad's index inputs).
  Value int64s(std::initializer_list<int64_t> values, const std::string& hint) {
    auto* init = g_->add_initializer();
    init->set_name(hint + "_" + std::to_string(g_->initializer_size()));
    init->set_data_type(onnx::TensorProto::INT64);
    init->add_dims(static_cast<int64_t>(values.size()));
    for (int64_t v : values) init->add_int64_data(v);
    return init->name();
  }

  // A constant int64 scalar (Gather's index).
  Value int64Scalar(int64_t value) {
    auto* init = g_->add_initializer();
    init->set_name("index_" + std::to_string(g_->initializer_size()));
    init->set_data_type(onnx::TensorProto::INT64);
    init->add_int64_data(value);
    return init->name();
  }

  Value initializer(const torch::Tensor& t, const std::string& hint) {
    const torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
    auto* init = g_->add_initializer();
    init->set_name(hint + "_" + std::to_string(g_->initializer_size()));
    init->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : c.sizes()) init->add_dims(d);
    init->set_raw_data(c.data_ptr(), static_cast<size_t>(c.numel()) * sizeof(float));
    return init->name();
  }

  // The output of `n` has the spatial size of `x` (elementwise operations).
  Value same(const Value& x, onnx::NodeProto* n) {
    if (const auto in = spatialSize(x)) sizes_[n->output(0)] = *in;
    return n->output(0);
  }

  onnx::GraphProto* g_;
  std::map<Value, std::pair<int64_t, int64_t>> sizes_;
  Value logits_;
};

void tensorType(onnx::ValueInfoProto* v, const std::vector<std::string>& symbolic,
                const std::vector<int64_t>& fixed) {
  auto* t = v->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = t->mutable_shape();
  for (size_t i = 0; i < fixed.size(); ++i) {
    auto* d = shape->add_dim();
    if (!symbolic[i].empty())
      d->set_dim_param(symbolic[i]);
    else
      d->set_dim_value(fixed[i]);
  }
}

void metadata(onnx::ModelProto& m, const std::string& key, const std::string& value) {
  auto* p = m.add_metadata_props();
  p->set_key(key);
  p->set_value(value);
}

}  // namespace

bool onnxExportBuilt() {
  return true;
}

size_t exportOnnx(models::ModelImpl& model, const ModelCard& card, const std::string& path,
                  bool dynamicSize) {
  model.eval();
  torch::NoGradGuard noGrad;
  onnx::ModelProto m;
  m.set_ir_version(onnx::IR_VERSION);
  m.set_producer_name("fixres");
  m.set_producer_version(FIXRES_VERSION);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  auto* g = m.mutable_graph();
  g->set_name(card.architecture);
  OnnxGraphWriter writer(g, dynamicSize ? 0 : card.testSize);
  FIXRES_CHECK(model.writeGraph(writer), UsageError, "export --format onnx: ", card.architecture,
               " cannot be exported to ONNX yet");
  const int64_t s = card.testSize, classes = card.numClasses;
  tensorType(g->add_input(), {"batch", "", dynamicSize ? "height" : "", dynamicSize ? "width" : ""},
             {1, 3, s, s});
  g->mutable_input(0)->set_name("input");
  auto* out = g->add_output();
  out->set_name(writer.logits());
  tensorType(out, {"batch", ""}, {1, classes});
  // The preprocessing, as the hub config writes it.
  const auto hub = timmHubConfig(card, model);
  metadata(
      m, "fixres.preprocessing",
      nlohmann::ordered_json{{"input_size", s},
                             {"dynamic_size", dynamicSize},
                             {"crop_pct", card.testCropPct},
                             {"crop_mode", "center"},
                             {"resize_mode", hub["fixres"]["resize_mode"]},
                             {"resize_rule", hub["fixres"]["resize_rule"]},
                             {"interpolation", hub["pretrained_cfg"]["interpolation"]},
                             {"mean", hub["pretrained_cfg"]["mean"]},
                             {"std", hub["pretrained_cfg"]["std"]},
                             {"input", "RGB, N x 3 x H x W float32, (pixel / 255 - mean) / std"},
                             {"output", "logits, N x classes"}}
          .dump());
  metadata(m, "fixres.architecture", card.architecture);
  if (!card.classNames.empty())
    metadata(m, "fixres.class_names", nlohmann::json(card.classNames).dump());
  if (!card.license.empty()) metadata(m, "license", card.license);
  try {
    onnx::checker::check_model(m);
  } catch (const std::exception& e) {
    FIXRES_FAIL(InternalError,
                "export --format onnx: ONNX's checker refused the graph: ", oneLine(e.what()));
  }
  std::string bytes;
  FIXRES_CHECK(m.SerializeToString(&bytes), InternalError,
               "export --format onnx: the model does not serialise (over 2 GB?)");
  writeFileAtomic(path, bytes);
  return static_cast<size_t>(g->node_size());
}

#else

bool onnxExportBuilt() {
  return false;
}

size_t exportOnnx(models::ModelImpl&, const ModelCard&, const std::string&, bool) {
  requireOnnxExport();
  return 0;
}

#endif

void requireOnnxExport() {
  FIXRES_CHECK(onnxExportBuilt(), UsageError,
               "--format onnx: this build of fixres has no ONNX export (built without ONNX's "
               "library: docs/after-training.md, ONNX)");
}

}  // namespace fixres::engine
