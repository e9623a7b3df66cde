// ResNet family in torchvision's layout (see ResNet.h).
#include "fixres/models/ResNet.h"

#include <torch/torch.h>

#include "fixres/common/Error.h"
#include "fixres/models/GraphWriter.h"

namespace fixres::models {
namespace {

torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t groups) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                               .stride(stride)
                               .padding(kernel / 2)
                               .groups(groups)
                               .bias(false));
}

}  // namespace

BlockImpl::BlockImpl(bool bottleneck, int64_t inplanes, int64_t planes, int64_t stride,
                     int64_t groups, int64_t widthPerGroup, bool avgDown)
    : bottleneck_(bottleneck) {
  int64_t outplanes = planes * expansion(bottleneck);
  if (bottleneck) {
    // torchvision: width = int(planes * (base_width / 64.)) * groups
    int64_t width = static_cast<int64_t>(planes * (widthPerGroup / 64.0)) * groups;
    conv1 = register_module("conv1", conv(inplanes, width, 1, 1, 1));
    bn1 = register_module("bn1", BatchNorm2d(width));
    conv2 = register_module("conv2", conv(width, width, 3, stride, groups));
    bn2 = register_module("bn2", BatchNorm2d(width));
    conv3 = register_module("conv3", conv(width, outplanes, 1, 1, 1));
    bn3 = register_module("bn3", BatchNorm2d(outplanes));
  } else {
    FIXRES_CHECK(groups == 1 && widthPerGroup == 64, UsageError,
                 "basic residual blocks support only groups=1 and width per group 64");
    conv1 = register_module("conv1", conv(inplanes, planes, 3, stride, 1));
    bn1 = register_module("bn1", BatchNorm2d(planes));
    conv2 = register_module("conv2", conv(planes, planes, 3, 1, 1));
    bn2 = register_module("bn2", BatchNorm2d(planes));
  }
  if ((stride != 1 || inplanes != outplanes) && avgDown) {
    torch::nn::Sequential d;
    if (stride > 1) {
      avgPool_ = stride;
      d->push_back(torch::nn::AvgPool2d(
          torch::nn::AvgPool2dOptions(stride).stride(stride).ceil_mode(true).count_include_pad(
              false)));
    } else {
      d->push_back(torch::nn::Identity());
    }
    d->push_back(conv(inplanes, outplanes, 1, 1, 1));
    d->push_back(BatchNorm2d(outplanes));
    downsample = register_module("downsample", d);
  } else if (stride != 1 || inplanes != outplanes) {
    downsample = register_module(
        "downsample",
        torch::nn::Sequential(conv(inplanes, outplanes, 1, stride, 1), BatchNorm2d(outplanes)));
  }
}

torch::Tensor BlockImpl::forward(torch::Tensor x) {
  torch::Tensor identity = downsample ? downsample->forward(x) : x;
  torch::Tensor out = torch::relu(bn1(conv1(x)));
  if (bottleneck_) {
    out = torch::relu(bn2(conv2(out)));
    out = bn3(conv3(out));
  } else {
    out = bn2(conv2(out));
  }
  return torch::relu(out + identity);
}

std::string BlockImpl::writeGraph(GraphWriter& w, const std::string& x) {
  std::string identity = x;
  if (downsample) {
    // [average pool or identity,] 1x1 conv, BatchNorm.
    const size_t c = downsample->size() - 2;
    const std::string in = avgPool_ > 0 ? w.averagePool(x, avgPool_) : x;
    identity = w.batchNorm(w.conv(in, *downsample[c]->as<torch::nn::Conv2d>(), Pads{}),
                           *downsample[c + 1]->as<BatchNorm2d>());
  }
  // Every convolution pads kernel / 2 (conv() above).
  const auto pad = [](const torch::nn::Conv2d& c) { return Pads::all(c->weight.size(2) / 2); };
  std::string out = w.relu(w.batchNorm(w.conv(x, *conv1, pad(conv1)), *bn1));
  if (bottleneck_) {
    out = w.relu(w.batchNorm(w.conv(out, *conv2, pad(conv2)), *bn2));
    out = w.batchNorm(w.conv(out, *conv3, pad(conv3)), *bn3);
  } else {
    out = w.batchNorm(w.conv(out, *conv2, pad(conv2)), *bn2);
  }
  return w.relu(w.add(out, identity));
}

bool ResNetImpl::writeGraph(GraphWriter& w) {
  std::string x = w.input();
  if (deepStem) {
    // conv, BN, ReLU, conv, BN, ReLU, conv: every 3x3 padded by 1.
    const auto c = [&](size_t i) -> const torch::nn::Conv2dImpl& {
      return *deepStem[i]->as<torch::nn::Conv2d>();
    };
    const auto b = [&](size_t i) -> const BatchNorm2dImpl& {
      return *deepStem[i]->as<BatchNorm2d>();
    };
    x = w.relu(w.batchNorm(w.conv(x, c(0), Pads::all(1)), b(1)));
    x = w.relu(w.batchNorm(w.conv(x, c(3), Pads::all(1)), b(4)));
    x = w.conv(x, c(6), Pads::all(1));
  } else {
    x = w.conv(x, *conv1, Pads::all(conv1->weight.size(2) / 2));
  }
  x = w.relu(w.batchNorm(x, *bn1));
  if (!config_.smallStem) x = w.maxPool(x, 3, 2, Pads::all(1));
  for (auto* layer : {&layer1, &layer2, &layer3, &layer4})
    for (const auto& block : (*layer)->children()) x = block->as<BlockImpl>()->writeGraph(w, x);
  w.output(w.linear(w.globalAveragePool(x), *fc));
  return true;
}

ResNetImpl::ResNetImpl(const ResNetConfig& config) : config_(config) {
  FIXRES_CHECK(config.numClasses > 0, UsageError, "number of classes must be positive, got ",
               config.numClasses);
  const auto& w = config.widths;
  inplanes_ = w[0];
  if (config.stemWidth > 0) {
    const int64_t s = config.stemWidth;
    deepStem = register_module(
        "conv1", torch::nn::Sequential(conv(3, s, 3, 2, 1), BatchNorm2d(s), torch::nn::ReLU(),
                                       conv(s, s, 3, 1, 1), BatchNorm2d(s), torch::nn::ReLU(),
                                       conv(s, w[0], 3, 1, 1)));
  } else {
    conv1 = config.smallStem ? register_module("conv1", conv(3, w[0], 3, 1, 1))
                             : register_module("conv1", conv(3, w[0], 7, 2, 1));
  }
  bn1 = register_module("bn1", BatchNorm2d(w[0]));
  layer1 = register_module("layer1", makeLayer(w[0], config.layers[0], 1));
  layer2 = register_module("layer2", makeLayer(w[1], config.layers[1], 2));
  layer3 = register_module("layer3", makeLayer(w[2], config.layers[2], 2));
  layer4 = register_module("layer4", makeLayer(w[3], config.layers[3], 2));
  embeddingDim_ = w[3] * BlockImpl::expansion(config.bottleneck);
  fc = register_module("fc", torch::nn::Linear(embeddingDim_, config.numClasses));

  // torchvision's initialisation: Kaiming (fan-out) convs, BN weight 1 / bias 0, default Linear.
  torch::NoGradGuard noGrad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* c = m->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* b = m->as<BatchNorm2d>()) {
      torch::nn::init::ones_(b->weight);
      torch::nn::init::zeros_(b->bias);
    }
  }
}

torch::nn::Sequential ResNetImpl::makeLayer(int64_t planes, int64_t blocks, int64_t stride) {
  FIXRES_CHECK(blocks >= 1, UsageError, "a ResNet stage needs at least one block");
  torch::nn::Sequential seq;
  for (int64_t b = 0; b < blocks; ++b) {
    seq->push_back(Block(config_.bottleneck, inplanes_, planes, b == 0 ? stride : 1, config_.groups,
                         config_.widthPerGroup, config_.avgDown));
    inplanes_ = planes * BlockImpl::expansion(config_.bottleneck);
  }
  return seq;
}

std::pair<torch::Tensor, torch::Tensor> ResNetImpl::forwardWithEmbedding(torch::Tensor x) {
  FIXRES_CHECK(x.dim() == 4 && x.size(1) == 3, UsageError,
               "ResNet input must be N x 3 x H x W, got ", x.sizes());
  x = torch::relu(bn1(deepStem ? deepStem->forward(x) : conv1(x)));
  if (!config_.smallStem) x = torch::max_pool2d(x, 3, 2, 1);
  x = layer1->forward(x);
  x = layer2->forward(x);
  x = layer3->forward(x);
  x = layer4->forward(x);
  torch::Tensor embedding = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
  return {fc(embedding), embedding};
}

torch::Tensor ResNetImpl::forward(torch::Tensor x) {
  return forwardWithEmbedding(x).first;
}

BatchNorm2d& ResNetImpl::lastBatchNorm() {
  auto* block = layer4->ptr(layer4->size() - 1)->as<BlockImpl>();
  return block->lastBatchNorm();
}

}  // namespace fixres::models
