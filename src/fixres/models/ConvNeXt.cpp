// ConvNeXt in timm's layout (see ConvNeXt.h).
#include "fixres/models/ConvNeXt.h"

#include <torch/torch.h>

#include "fixres/common/Error.h"
#include "fixres/models/GraphWriter.h"

namespace fixres::models {
namespace {

constexpr double kConvNeXtNormEps = 1e-6;  // timm's LayerNorm and LayerNorm2d

torch::Tensor cnDropPath(const torch::Tensor& x, double p, bool training) {
  if (p <= 0 || !training) return x;
  const double keep = 1 - p;
  auto mask = torch::empty({x.size(0), 1, 1, 1}, x.options()).bernoulli_(keep);
  if (keep > 0) mask.div_(keep);
  return x * mask;
}

// timm's _init_weights: trunc_normal_(std=.02) on convolution and Linear weights, zero biases.
void cnInit(torch::nn::Module& root) {
  torch::NoGradGuard g;
  for (auto& m : root.modules(/*include_self=*/false)) {
    torch::Tensor w, b;
    if (auto* c = m->as<torch::nn::Conv2d>()) {
      w = c->weight;
      b = c->bias;
    } else if (auto* l = m->as<torch::nn::Linear>()) {
      w = l->weight;
      b = l->bias;
    } else {
      continue;
    }
    w.normal_(0, 0.02).clamp_(-2, 2);
    if (b.defined()) b.zero_();
  }
}

// A Module holding named children only (timm's Sequential/Module containers that fixres runs by
// hand): ConvNeXt's stages ("downsample", "blocks") and head ("norm", "fc").
class NamedModuleImpl : public torch::nn::Module {
 public:
  template <typename M>
  M add(const std::string& name, M m) {
    return register_module(name, std::move(m));
  }
};

}  // namespace

LayerNorm2dImpl::LayerNorm2dImpl(int64_t channels, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({channels}));
  bias = register_parameter("bias", torch::zeros({channels}));
}

torch::Tensor LayerNorm2dImpl::forward(const torch::Tensor& x) {
  // Under bf16 autocast the input comes from a bf16 convolution: normalised in the weights' type,
  // as autocast's float32 ops are (LibTorch 1.13's CPU autocast lets layer_norm mix them).
  return torch::layer_norm(x.permute({0, 2, 3, 1}).to(weight.scalar_type()), {weight.size(0)},
                           weight, bias, eps_)
      .permute({0, 3, 1, 2});
}

ConvNeXtMlpImpl::ConvNeXtMlpImpl(int64_t dim, int64_t hidden, bool conv) {
  if (conv) {
    fc1Conv = register_module("fc1", torch::nn::Conv2d(torch::nn::Conv2dOptions(dim, hidden, 1)));
    fc2Conv = register_module("fc2", torch::nn::Conv2d(torch::nn::Conv2dOptions(hidden, dim, 1)));
  } else {
    fc1 = register_module("fc1", torch::nn::Linear(dim, hidden));
    fc2 = register_module("fc2", torch::nn::Linear(hidden, dim));
  }
}

torch::Tensor ConvNeXtMlpImpl::forward(const torch::Tensor& x) {
  if (fc1Conv) return fc2Conv(torch::gelu(fc1Conv(x)));
  return fc2(torch::gelu(fc1(x)));
}

ConvNeXtBlockImpl::ConvNeXtBlockImpl(int64_t dim, bool convMlp, double dropPath)
    : convMlp_(convMlp), dropPath_(dropPath) {
  conv_dw = register_module(
      "conv_dw", torch::nn::Conv2d(torch::nn::Conv2dOptions(dim, dim, 7).padding(3).groups(dim)));
  if (convMlp)
    norm2d = register_module("norm", LayerNorm2d(dim, kConvNeXtNormEps));
  else
    normLast = register_module(
        "norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(kConvNeXtNormEps)));
  mlp = register_module("mlp", ConvNeXtMlp(dim, 4 * dim, convMlp));
  gamma = register_parameter("gamma", torch::full({dim}, 1e-6));  // timm's ls_init_value
}

torch::Tensor ConvNeXtBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor y = conv_dw(x);
  if (convMlp_) {
    y = mlp(norm2d(y)) * gamma.reshape({1, -1, 1, 1});
  } else {
    y = mlp(normLast(y.permute({0, 2, 3, 1}).to(gamma.scalar_type())))
            .mul(gamma)
            .permute({0, 3, 1, 2});
  }
  return cnDropPath(y, dropPath_, is_training()) + x;
}

ConvNeXtImpl::ConvNeXtImpl(const ConvNeXtConfig& config) : config_(config) {
  const ModelOptions& o = config.options;
  dropRate_ = o.dropRate >= 0 ? o.dropRate : 0;
  const double dropPathRate = o.dropPathRate >= 0 ? o.dropPathRate : config.defaultDropPath;
  FIXRES_CHECK(dropRate_ < 1 && dropPathRate < 1, UsageError,
               "drop rates must be below 1, got dropout ", dropRate_, " and drop path ",
               dropPathRate);
  const auto& d = config.dims;
  stem = register_module(
      "stem", torch::nn::Sequential(
                  torch::nn::Conv2d(
                      torch::nn::Conv2dOptions(3, d[0], config.stemPatch).stride(config.stemPatch)),
                  LayerNorm2d(d[0], kConvNeXtNormEps)));
  stages = register_module("stages", torch::nn::ModuleList());
  int64_t total = 0;
  for (int64_t n : config.depths) total += n;
  int64_t index = 0;
  for (size_t s = 0; s < 4; ++s) {
    auto stage = std::make_shared<NamedModuleImpl>();
    if (s > 0)
      stage->add("downsample",
                 torch::nn::Sequential(
                     LayerNorm2d(d[s - 1], kConvNeXtNormEps),
                     torch::nn::Conv2d(torch::nn::Conv2dOptions(d[s - 1], d[s], 2).stride(2))));
    torch::nn::Sequential blocks;
    for (int64_t b = 0; b < config.depths[s]; ++b, ++index) {
      // timm: drop path rising linearly over all blocks (linspace(0, rate, total)).
      const double dp =
          total > 1 ? dropPathRate * static_cast<double>(index) / static_cast<double>(total - 1)
                    : 0;
      blocks->push_back(ConvNeXtBlock(d[s], config.convMlp, dp));
    }
    stage->add("blocks", blocks);
    stages->push_back(stage);
  }
  auto head = std::make_shared<NamedModuleImpl>();
  headNorm = head->add("norm", LayerNorm2d(d[3], kConvNeXtNormEps));
  headFc = head->add("fc", torch::nn::Linear(d[3], o.numClasses));
  register_module("head", head);
  cnInit(*this);
}

std::pair<torch::Tensor, torch::Tensor> ConvNeXtImpl::forwardWithEmbedding(torch::Tensor x) {
  x = stem->forward(x);
  for (const auto& s : *stages) {
    for (const auto& child : s->named_children()) {
      if (child.key() == "downsample") x = child.value()->as<torch::nn::Sequential>()->forward(x);
      if (child.key() == "blocks") x = child.value()->as<torch::nn::Sequential>()->forward(x);
    }
  }
  // timm's NormMlpClassifierHead: average pool, LayerNorm over the channels, flatten, fc.
  auto emb = headNorm(x.mean({2, 3}, /*keepdim=*/true)).flatten(1);
  return {headFc(torch::dropout(emb, dropRate_, is_training())), emb};
}

bool ConvNeXtImpl::writeGraph(GraphWriter& w) {
  torch::NoGradGuard noGrad;
  const auto ln2d = [&](const GraphWriter::Value& v, const LayerNorm2dImpl& n) {
    return w.layerNorm(v, n.weight.detach(), n.bias.detach(), n.eps(), /*channels=*/true);
  };
  GraphWriter::Value x = w.conv(w.input(), *stem[0]->as<torch::nn::Conv2d>(), Pads{});
  x = ln2d(x, *stem[1]->as<LayerNorm2d>());
  for (const auto& s : *stages) {
    for (const auto& child : s->named_children()) {
      auto& seq = *child.value()->as<torch::nn::Sequential>();
      if (child.key() == "downsample") {
        x = w.conv(ln2d(x, *seq[0]->as<LayerNorm2d>()), *seq[1]->as<torch::nn::Conv2d>(), Pads{});
        continue;
      }
      for (const auto& m : seq) {
        auto& b = *m.ptr()->as<ConvNeXtBlock>();
        GraphWriter::Value y = w.conv(x, *b.conv_dw, Pads::all(3));
        if (b.convMlp()) {
          y = ln2d(y, *b.norm2d);
          y = w.conv(w.gelu(w.conv(y, *b.mlp->fc1Conv, Pads{})), *b.mlp->fc2Conv, Pads{});
        } else {
          // Channels-last LayerNorm and Linear layers = the same over NCHW channels.
          y = w.layerNorm(y, b.normLast->weight, b.normLast->bias, b.normLast->options.eps(),
                          /*channels=*/true);
          y = w.pointwiseLinear(w.gelu(w.pointwiseLinear(y, *b.mlp->fc1)), *b.mlp->fc2);
        }
        x = w.add(w.mulConstant(y, b.gamma.detach().reshape({-1, 1, 1})), x);
      }
    }
  }
  x = w.flatten(ln2d(w.spatialMean(x), *headNorm));
  w.output(w.linear(x, *headFc));
  return true;
}

}  // namespace fixres::models
