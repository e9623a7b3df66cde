// EfficientNet as timm builds it (_gen_efficientnet): the B0 stage table scaled by width and
// depth multipliers, SiLU activations, squeeze-and-excitation at a quarter of each block's input
// channels, drop path rising linearly over the blocks.
#include "fixres/models/EfficientNet.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>

#include "fixres/common/Error.h"
#include "fixres/models/GraphWriter.h"

namespace fixres::models {
namespace {

// The B0 stages: block repeats, kernel, stride of the first block, expansion, output channels.
struct Stage {
  int repeats, kernel, stride, expansion, channels;
};
constexpr Stage kStages[] = {{1, 3, 1, 1, 16}, {2, 3, 2, 6, 24},  {2, 5, 2, 6, 40},
                             {3, 3, 2, 6, 80}, {3, 5, 1, 6, 112}, {4, 5, 2, 6, 192},
                             {1, 3, 1, 6, 320}};

constexpr double kDefaultDropPath = 0.2;  // timm's training note for every EfficientNet

// Rounds to a multiple of `divisor`, never more than 10 % below v (timm's make_divisible).
int64_t mbMakeDivisible(double v, int64_t divisor = 8) {
  int64_t n =
      std::max<int64_t>(divisor, static_cast<int64_t>(v + divisor / 2.0) / divisor * divisor);
  if (n < 0.9 * v) n += divisor;
  return n;
}

// Python's round(): halves to even.
int64_t mbRoundHalfEven(double v) {
  return static_cast<int64_t>(std::nearbyint(v));
}

torch::nn::Conv2d mbConv(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t padding,
                         int64_t groups = 1, bool bias = false) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, k)
                               .stride(stride)
                               .padding(padding)
                               .groups(groups)
                               .bias(bias));
}

BatchNorm2d mbNorm(int64_t channels, double eps) {
  return BatchNorm2d(torch::nn::BatchNorm2dOptions(channels).eps(eps));
}

// A convolution whose padding is static: symmetric k/2 for stride 1 (both variants), timm's
// ((s - 1) + (k - 1)) / 2 for the symmetric variant, none for the "same" variant's strided
// convolutions (padded per input by padSame).
int64_t mbStaticPadding(int64_t k, int64_t stride, bool tfSame) {
  if (tfSame && stride > 1) return 0;
  return ((stride - 1) + (k - 1)) / 2;
}

// TensorFlow "same" padding at x's size (GraphWriter.h).
torch::Tensor mbPadSame(const torch::Tensor& x, int64_t k, int64_t stride) {
  return padTensor(x, samePadsFor(x.size(2), x.size(3), k, stride));
}

// timm's drop path: whole samples of the residual branch zeroed with probability p, the rest
// scaled by 1 / (1 - p); identity in eval mode.
torch::Tensor mbDropPath(const torch::Tensor& x, double p, bool training) {
  if (p <= 0 || !training) return x;
  double keep = 1 - p;
  auto mask = torch::empty({x.size(0), 1, 1, 1}, x.options()).bernoulli_(keep);
  if (keep > 0) mask.div_(keep);
  return x * mask;
}

}  // namespace

SqueezeExciteImpl::SqueezeExciteImpl(int64_t channels, int64_t reduced) {
  conv_reduce = register_module("conv_reduce", mbConv(channels, reduced, 1, 1, 0, 1, true));
  conv_expand = register_module("conv_expand", mbConv(reduced, channels, 1, 1, 0, 1, true));
}

torch::Tensor SqueezeExciteImpl::forward(const torch::Tensor& x) {
  auto s = x.mean({2, 3}, /*keepdim=*/true);
  s = conv_expand(torch::silu(conv_reduce(s)));
  return x * torch::sigmoid(s);
}

std::string SqueezeExciteImpl::writeGraph(GraphWriter& w, const std::string& x) {
  auto s = w.silu(w.conv(w.spatialMean(x), *conv_reduce, Pads{}));
  return w.mul(x, w.sigmoid(w.conv(s, *conv_expand, Pads{})));
}

MBConvImpl::MBConvImpl(int64_t in, int64_t out, int64_t expansion, int64_t kernel, int64_t stride,
                       bool tfSame, double bnEps, double dropPath)
    : inverted_(expansion != 1),
      skip_(stride == 1 && in == out),
      samePad_(tfSame && stride > 1),
      staticPad_(mbStaticPadding(kernel, stride, tfSame)),
      dropPath_(dropPath) {
  int64_t pad = staticPad_;
  if (inverted_) {
    int64_t mid = mbMakeDivisible(static_cast<double>(in * expansion));
    conv_pw = register_module("conv_pw", mbConv(in, mid, 1, 1, 0));
    bn1 = register_module("bn1", mbNorm(mid, bnEps));
    conv_dw = register_module("conv_dw", mbConv(mid, mid, kernel, stride, pad, mid));
    bn2 = register_module("bn2", mbNorm(mid, bnEps));
    // timm: rd_ratio 0.25 / expansion of the expanded channels (a quarter of the input's).
    se = register_module(
        "se", SqueezeExcite(mid, mbRoundHalfEven(static_cast<double>(mid) * (0.25 / expansion))));
    conv_pwl = register_module("conv_pwl", mbConv(mid, out, 1, 1, 0));
    bn3 = register_module("bn3", mbNorm(out, bnEps));
  } else {
    conv_dw = register_module("conv_dw", mbConv(in, in, kernel, stride, pad, in));
    bn1 = register_module("bn1", mbNorm(in, bnEps));
    se = register_module("se", SqueezeExcite(in, mbRoundHalfEven(static_cast<double>(in) * 0.25)));
    conv_pw = register_module("conv_pw", mbConv(in, out, 1, 1, 0));
    bn2 = register_module("bn2", mbNorm(out, bnEps));
  }
}

torch::Tensor MBConvImpl::forward(torch::Tensor x) {
  torch::Tensor shortcut = x;
  auto depthwise = [this](torch::Tensor t) {
    if (samePad_)
      t = mbPadSame(t, conv_dw->options.kernel_size()->at(0), conv_dw->options.stride()->at(0));
    return conv_dw(t);
  };
  if (inverted_) {
    x = torch::silu(bn1(conv_pw(x)));
    x = torch::silu(bn2(depthwise(x)));
    x = se(x);
    x = bn3(conv_pwl(x));
  } else {
    x = torch::silu(bn1(depthwise(x)));
    x = se(x);
    x = bn2(conv_pw(x));
  }
  if (skip_) x = mbDropPath(x, dropPath_, is_training()) + shortcut;
  return x;
}

std::string MBConvImpl::writeGraph(GraphWriter& w, const std::string& in) {
  auto depthwise = [&](const std::string& t) {
    const Pads p = samePad_ ? samePads(w, t, conv_dw->options.kernel_size()->at(0),
                                       conv_dw->options.stride()->at(0), "tf_efficientnet")
                            : Pads::all(staticPad_);
    return w.conv(t, *conv_dw, p);
  };
  std::string x = in;
  if (inverted_) {
    x = w.silu(w.batchNorm(w.conv(x, *conv_pw, Pads{}), *bn1));
    x = w.silu(w.batchNorm(depthwise(x), *bn2));
    x = se->writeGraph(w, x);
    x = w.batchNorm(w.conv(x, *conv_pwl, Pads{}), *bn3);
  } else {
    x = w.silu(w.batchNorm(depthwise(x), *bn1));
    x = se->writeGraph(w, x);
    x = w.batchNorm(w.conv(x, *conv_pw, Pads{}), *bn2);
  }
  return skip_ ? w.add(x, in) : x;  // drop path is the identity in eval mode
}

EfficientNetImpl::EfficientNetImpl(const EfficientNetConfig& config) : config_(config) {
  const ModelOptions& o = config.options;
  FIXRES_CHECK(o.numClasses > 0, UsageError, "number of classes must be positive, got ",
               o.numClasses);
  const double eps = config.tfSame ? 1e-3 : 1e-5;
  dropRate_ = o.dropRate >= 0 ? o.dropRate : config.defaultDropRate;
  const double dropPathRate = o.dropPathRate >= 0 ? o.dropPathRate : kDefaultDropPath;
  FIXRES_CHECK(dropRate_ < 1 && dropPathRate < 1, UsageError,
               "drop rates must be below 1, got dropout ", dropRate_, " and drop path ",
               dropPathRate);
  auto channels = [&](int64_t c) { return mbMakeDivisible(c * config.widthMultiplier); };

  int64_t in = channels(32);
  conv_stem =
      register_module("conv_stem", mbConv(3, in, 3, 2, mbStaticPadding(3, 2, config.tfSame)));
  bn1 = register_module("bn1", mbNorm(in, eps));

  std::vector<int64_t> repeats;
  int64_t total = 0;
  for (const auto& s : kStages) {
    repeats.push_back(static_cast<int64_t>(std::ceil(s.repeats * config.depthMultiplier)));
    total += repeats.back();
  }
  blocks = register_module("blocks", torch::nn::ModuleList());
  int64_t index = 0;
  for (size_t si = 0; si < std::size(kStages); ++si) {
    const Stage& s = kStages[si];
    torch::nn::Sequential stage;
    int64_t out = channels(s.channels);
    for (int64_t b = 0; b < repeats[si]; ++b, ++index) {
      double dp = dropPathRate * static_cast<double>(index) / static_cast<double>(total);
      stage->push_back(
          MBConv(in, out, s.expansion, s.kernel, b == 0 ? s.stride : 1, config.tfSame, eps, dp));
      in = out;
    }
    stageExpansion_.push_back(s.expansion);
    blocks->push_back(stage);
  }
  embeddingDim_ = channels(1280);
  conv_head = register_module("conv_head", mbConv(in, embeddingDim_, 1, 1, 0));
  bn2 = register_module("bn2", mbNorm(embeddingDim_, eps));
  classifier_ = register_module("classifier", torch::nn::Linear(embeddingDim_, o.numClasses));

  // timm's initialisation (_init_weight_goog): convolutions N(0, sqrt(2 / fan_out)), BatchNorm
  // 1 / 0, the classifier U(-1/sqrt(classes), 1/sqrt(classes)) with zero bias.
  torch::NoGradGuard noGrad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<torch::nn::Conv2d>()) {
      const auto& k = *c->options.kernel_size();
      double fanOut = static_cast<double>(k[0] * k[1] * c->options.out_channels()) /
                      static_cast<double>(c->options.groups());
      c->weight.normal_(0, std::sqrt(2.0 / fanOut));
      if (c->bias.defined()) c->bias.zero_();
    } else if (auto* b = m->as<BatchNorm2d>()) {
      b->weight.fill_(1);
      b->bias.zero_();
    }
  }
  double range = 1.0 / std::sqrt(static_cast<double>(o.numClasses));
  classifier_->weight.uniform_(-range, range);
  classifier_->bias.zero_();
}

std::pair<torch::Tensor, torch::Tensor> EfficientNetImpl::forwardWithEmbedding(torch::Tensor x) {
  FIXRES_CHECK(x.dim() == 4 && x.size(1) == 3, UsageError,
               "EfficientNet input must be N x 3 x H x W, got ", x.sizes());
  if (config_.tfSame) x = mbPadSame(x, 3, 2);
  x = torch::silu(bn1(conv_stem(x)));
  for (const auto& stage : *blocks) x = stage->as<torch::nn::Sequential>()->forward(x);
  x = torch::silu(bn2(conv_head(x)));
  torch::Tensor embedding = x.mean({2, 3});
  torch::Tensor features = embedding;
  if (dropRate_ > 0 && is_training()) features = torch::dropout(embedding, dropRate_, true);
  return {classifier_(features), embedding};
}

bool EfficientNetImpl::writeGraph(GraphWriter& w) {
  std::string x = w.input();
  const Pads stem =
      config_.tfSame ? samePads(w, x, 3, 2, config_.name) : Pads::all(mbStaticPadding(3, 2, false));
  x = w.silu(w.batchNorm(w.conv(x, *conv_stem, stem), *bn1));
  for (const auto& stage : *blocks)
    for (const auto& block : stage->children()) x = block->as<MBConvImpl>()->writeGraph(w, x);
  x = w.silu(w.batchNorm(w.conv(x, *conv_head, Pads{}), *bn2));
  w.output(w.linear(w.globalAveragePool(x), *classifier_));  // dropout: identity in eval mode
  return true;
}

}  // namespace fixres::models
