// Vision Transformers in timm's layout (see VisionTransformer.h).
#include "fixres/models/VisionTransformer.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>

#include "fixres/common/Error.h"
#include "fixres/models/GraphWriter.h"
#include "fixres/models/PosEmbed.h"

namespace fixres::models {
namespace {

constexpr double kVitLayerNormEps = 1e-6;  // timm's LayerNorm default

torch::nn::LayerNorm vitLayerNorm(int64_t dim) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(kVitLayerNormEps));
}

// Stochastic depth per sample (timm's drop_path), active in train mode only.
torch::Tensor vitDropPath(const torch::Tensor& x, double p, bool training) {
  if (p <= 0 || !training) return x;
  const double keep = 1 - p;
  std::vector<int64_t> shape(static_cast<size_t>(x.dim()), 1);
  shape[0] = x.size(0);
  auto mask = torch::empty(shape, x.options()).bernoulli_(keep);
  if (keep > 0) mask.div_(keep);
  return x * mask;
}

// timm's trunc_normal_(std) with bounds at +-2 (absolute, as timm's default a=-2, b=2).
void truncNormal(torch::Tensor& t, double std) {
  torch::NoGradGuard g;
  t.normal_(0, std).clamp_(-2, 2);
}

// softmax(q k^T / sqrt(d)) v over N x H x T x d, with the kernel this LibTorch offers.
torch::Tensor scaledDotProductAttention(const torch::Tensor& q, const torch::Tensor& k,
                                        const torch::Tensor& v) {
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v);
#else
  return std::get<0>(at::_scaled_dot_product_attention(q, k, v));
#endif
}

}  // namespace

VitPatchEmbedImpl::VitPatchEmbedImpl(int64_t patch, int64_t dim) {
  proj = register_module("proj",
                         torch::nn::Conv2d(torch::nn::Conv2dOptions(3, dim, patch).stride(patch)));
}

VitAttentionImpl::VitAttentionImpl(int64_t dim, int64_t heads) : heads_(heads) {
  FIXRES_CHECK(dim % heads == 0, InternalError, "attention width ", dim, " is not a multiple of ",
               heads, " heads");
  qkv = register_module("qkv", torch::nn::Linear(torch::nn::LinearOptions(dim, 3 * dim)));
  proj = register_module("proj", torch::nn::Linear(dim, dim));
}

torch::Tensor VitAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t n = x.size(0), t = x.size(1), d = x.size(2);
  auto qkvHeads = qkv(x).reshape({n, t, 3, heads_, d / heads_}).permute({2, 0, 3, 1, 4});
  auto out = scaledDotProductAttention(qkvHeads[0], qkvHeads[1], qkvHeads[2]);
  return proj(out.transpose(1, 2).reshape({n, t, d}));
}

VitMlpImpl::VitMlpImpl(int64_t dim, int64_t hidden) {
  fc1 = register_module("fc1", torch::nn::Linear(dim, hidden));
  fc2 = register_module("fc2", torch::nn::Linear(hidden, dim));
}

torch::Tensor VitMlpImpl::forward(const torch::Tensor& x) {
  return fc2(torch::gelu(fc1(x)));
}

LayerScaleImpl::LayerScaleImpl(int64_t dim, double init) {
  gamma = register_parameter("gamma", torch::full({dim}, init));
}

VitBlockImpl::VitBlockImpl(int64_t dim, int64_t heads, double mlpRatio, double layerScale,
                           double dropPath)
    : dropPath_(dropPath) {
  norm1 = register_module("norm1", vitLayerNorm(dim));
  attn = register_module("attn", VitAttention(dim, heads));
  if (layerScale > 0) ls1 = register_module("ls1", LayerScale(dim, layerScale));
  norm2 = register_module("norm2", vitLayerNorm(dim));
  // timm: int(dim * mlp_ratio).
  mlp = register_module("mlp",
                        VitMlp(dim, static_cast<int64_t>(static_cast<double>(dim) * mlpRatio)));
  if (layerScale > 0) ls2 = register_module("ls2", LayerScale(dim, layerScale));
}

torch::Tensor VitBlockImpl::forward(torch::Tensor x) {
  auto a = attn(norm1(x));
  if (ls1) a = ls1(a);
  x = x + vitDropPath(a, dropPath_, is_training());
  auto m = mlp(norm2(x));
  if (ls2) m = ls2(m);
  return x + vitDropPath(m, dropPath_, is_training());
}

VisionTransformerImpl::VisionTransformerImpl(const VitConfig& config) : config_(config) {
  const ModelOptions& o = config.options;
  const int64_t dim = config.embedDim;
  const int64_t patch = config.patchSize;
  std::array<int64_t, 2> size = o.imageSize;
  if (size[0] <= 0 || size[1] <= 0) size = {config.defaultSize, config.defaultSize};
  for (int64_t s : size)
    FIXRES_CHECK(s % patch == 0 && s >= patch, UsageError, config.name,
                 " takes images whose sides are multiples of its patch size ", patch, ": ", size[0],
                 "x", size[1], " is not (its position embedding is laid out on a grid of ", patch,
                 " px patches)");
  grid_ = {size[0] / patch, size[1] / patch};
  dropRate_ = o.dropRate >= 0 ? o.dropRate : 0;
  const double dropPathRate = o.dropPathRate >= 0 ? o.dropPathRate : config.defaultDropPath;
  FIXRES_CHECK(dropRate_ < 1 && dropPathRate < 1, UsageError,
               "drop rates must be below 1, got dropout ", dropRate_, " and drop path ",
               dropPathRate);

  // Registration order is timm's state-dict order.
  if (config.classToken) cls_token = register_parameter("cls_token", torch::zeros({1, 1, dim}));
  if (config.regTokens > 0)
    reg_token = register_parameter("reg_token", torch::zeros({1, config.regTokens, dim}));
  if (config.distilled) dist_token = register_parameter("dist_token", torch::zeros({1, 1, dim}));
  pos_embed = register_parameter(
      "pos_embed", torch::zeros({1, grid_[0] * grid_[1] + embeddedPrefixTokens(), dim}));
  patch_embed = register_module("patch_embed", VitPatchEmbed(patch, dim));
  blocks = register_module("blocks", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.depth; ++i) {
    // timm: drop path rising linearly from 0 to the rate over the blocks.
    const double dp =
        config.depth > 1 ? dropPathRate * static_cast<double>(i) / (config.depth - 1) : 0;
    blocks->push_back(VitBlock(dim, config.numHeads, config.mlpRatio, config.layerScale, dp));
  }
  if (config.avgPool)
    fc_norm = register_module("fc_norm", vitLayerNorm(dim));
  else
    norm = register_module("norm", vitLayerNorm(dim));
  head = register_module("head", torch::nn::Linear(dim, o.numClasses));
  if (config.distilled)
    head_dist = register_module("head_dist", torch::nn::Linear(dim, o.numClasses));

  // timm's init: truncated normal (std 0.02) for the position embedding and Linear weights, zero
  // biases, tokens N(0, 1e-6) (DeiT's distillation token: trunc normal 0.02).
  torch::NoGradGuard g;
  truncNormal(pos_embed, 0.02);
  if (cls_token.defined()) cls_token.normal_(0, 1e-6);
  if (reg_token.defined()) reg_token.normal_(0, 1e-6);
  if (dist_token.defined()) truncNormal(dist_token, 0.02);
  for (auto& m : modules(/*include_self=*/false))
    if (auto* l = m->as<torch::nn::Linear>()) {
      truncNormal(l->weight, 0.02);
      if (l->bias.defined()) l->bias.zero_();
    }
}

int64_t VisionTransformerImpl::prefixTokens() const {
  return (config_.classToken ? 1 : 0) + config_.regTokens + (config_.distilled ? 1 : 0);
}

torch::Tensor VisionTransformerImpl::positionEmbedding(int64_t rows, int64_t cols) const {
  if (rows == grid_[0] && cols == grid_[1]) return pos_embed;
  return resampleAbsPosEmbed(pos_embed, {rows, cols}, grid_, embeddedPrefixTokens());
}

torch::Tensor VisionTransformerImpl::forwardFeatures(torch::Tensor x) {
  FIXRES_CHECK(x.dim() == 4, UsageError, config_.name, " takes N x 3 x H x W images, got ",
               x.sizes());
  const int64_t patch = config_.patchSize;
  const int64_t rows = x.size(2) / patch, cols = x.size(3) / patch;
  if (!config_.options.dynamicImgSize) {
    FIXRES_CHECK(
        rows == grid_[0] && cols == grid_[1] && x.size(2) % patch == 0 && x.size(3) % patch == 0,
        UsageError, config_.name, " is laid out for ", grid_[0] * patch, "x", grid_[1] * patch,
        " images (its position embedding is ", grid_[0], "x", grid_[1], " patches), got ",
        x.size(2), "x", x.size(3), ": build it for that size or give --dynamic-img-size");
  }
  FIXRES_CHECK(rows >= 1 && cols >= 1, UsageError, config_.name, " needs images of at least ",
               patch, " px a side, got ", x.size(2), "x", x.size(3));
  const int64_t n = x.size(0);
  // N x D x rows x cols -> N x (rows * cols) x D (a patch grid the stride truncates, as timm's).
  x = patch_embed->proj(x).flatten(2).transpose(1, 2);
  std::vector<torch::Tensor> prefix;
  if (cls_token.defined()) prefix.push_back(cls_token.expand({n, -1, -1}));
  if (reg_token.defined()) prefix.push_back(reg_token.expand({n, -1, -1}));
  if (dist_token.defined()) prefix.push_back(dist_token.expand({n, -1, -1}));
  const torch::Tensor pos = positionEmbedding(rows, cols);
  auto withPrefix = [&](const torch::Tensor& t) {
    if (prefix.empty()) return t;
    auto all = prefix;
    all.push_back(t);
    return torch::cat(all, 1);
  };
  // DeiT III / reg models (noEmbedClass): add, then put the prefix first; original ViT and DeiT:
  // prefix first, then add (the embedding has their rows too).
  x = config_.noEmbedClass ? withPrefix(x + pos) : withPrefix(x) + pos;
  for (const auto& b : *blocks) x = b->as<VitBlock>()->forward(x);
  if (norm) x = norm(x);
  return x;
}

std::pair<torch::Tensor, torch::Tensor> VisionTransformerImpl::forwardWithEmbedding(
    torch::Tensor x) {
  x = forwardFeatures(std::move(x));
  if (head_dist) {
    // DeiT distilled (timm's output outside distilled training): the class token's head and the
    // distillation token's averaged; the embedding is the two tokens' mean. No dropout there.
    auto cls = x.select(1, 0), dist = x.select(1, 1);
    return {(head(cls) + head_dist(dist)) / 2, (cls + dist) / 2};
  }
  torch::Tensor emb;
  if (config_.avgPool)
    emb = fc_norm(x.narrow(1, prefixTokens(), x.size(1) - prefixTokens()).mean(1));
  else
    emb = x.select(1, 0);
  torch::Tensor logits = head(torch::dropout(emb, dropRate_, is_training()));
  return {logits, emb};
}

bool VisionTransformerImpl::writeGraph(GraphWriter& w) {
  torch::NoGradGuard noGrad;
  const GraphWriter::Value in = w.input();
  const auto size = w.spatialSize(in);
  const int64_t patch = config_.patchSize;
  FIXRES_CHECK(!size || (size->first % patch == 0 && size->second % patch == 0), UsageError,
               config_.name, " takes images whose sides are multiples of its patch size ", patch,
               ": ", size->first, "x", size->second, " is not");
  const GraphWriter::Value grid = w.conv(in, *patch_embed->proj, Pads{});
  GraphWriter::Value x = w.patchTokens(grid);
  std::vector<torch::Tensor> prefixes;
  for (const torch::Tensor& t : {cls_token, reg_token, dist_token})
    if (t.defined()) prefixes.push_back(t.detach());
  const auto prepend = [&](const GraphWriter::Value& v) {
    return prefixes.empty() ? v : w.prependTokens(v, torch::cat(prefixes, 1));
  };
  if (size) {  // the embedding at the size the graph is written for
    const torch::Tensor pos = positionEmbedding(size->first / patch, size->second / patch).detach();
    x = config_.noEmbedClass ? prepend(w.addConstant(x, pos)) : w.addConstant(prepend(x), pos);
  } else {  // any size: the patch rows resampled in the graph for each input's grid
    const int64_t k = embeddedPrefixTokens(), dim = pos_embed.size(2);
    const torch::Tensor rows = pos_embed.detach().narrow(1, k, pos_embed.size(1) - k);
    GraphWriter::Value pos = w.resampledPositions(
        grid, rows.reshape({1, grid_[0], grid_[1], dim}).permute({0, 3, 1, 2}).contiguous());
    if (k > 0) pos = w.prependTokens(pos, pos_embed.detach().narrow(1, 0, k));
    x = config_.noEmbedClass ? prepend(w.add(x, pos)) : w.add(prepend(x), pos);
  }
  const auto ln = [&](const GraphWriter::Value& v, const torch::nn::LayerNorm& n) {
    return w.layerNorm(v, n->weight, n->bias, n->options.eps(), /*channels=*/false);
  };
  for (const auto& m : *blocks) {
    auto& b = *m->as<VitBlock>();
    GraphWriter::Value a =
        w.attention(ln(x, b.norm1), *b.attn->qkv, *b.attn->proj, b.attn->heads());
    if (b.ls1) a = w.mulConstant(a, b.ls1->gamma.detach());
    x = w.add(x, a);
    GraphWriter::Value f =
        w.tokenLinear(w.gelu(w.tokenLinear(ln(x, b.norm2), *b.mlp->fc1)), *b.mlp->fc2);
    if (b.ls2) f = w.mulConstant(f, b.ls2->gamma.detach());
    x = w.add(x, f);
  }
  if (norm) x = ln(x, norm);
  GraphWriter::Value logits;
  if (head_dist) {
    logits =
        w.mulConstant(w.add(w.linear(w.token(x, 0), *head), w.linear(w.token(x, 1), *head_dist)),
                      torch::tensor(0.5f));
  } else {
    const GraphWriter::Value emb =
        config_.avgPool ? ln(w.meanTokens(x, prefixTokens()), fc_norm) : w.token(x, 0);
    logits = w.linear(emb, *head);
  }
  w.output(logits);
  return true;
}

}  // namespace fixres::models
