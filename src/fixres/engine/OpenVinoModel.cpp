// The OpenVINO-run model: one compiled graph per input height and width, built on first use.
#include "fixres/engine/OpenVinoModel.h"

#include <torch/torch.h>

#include <filesystem>
#include <map>
#include <memory>
#include <utility>

#include "fixres/common/Error.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/engine/OnnxExport.h"
#include "fixres/models/Family.h"
#include "fixres/runtime/OpenVinoSession.h"

namespace fixres::engine {
namespace {

// An ONNX model handed over through a file (over protobuf's 2 GiB): its folder removed once read.
struct ScratchGuard {
  OnnxSource source;
  ~ScratchGuard() {
    std::error_code ignored;
    if (!source.scratch.empty()) std::filesystem::remove_all(source.scratch, ignored);
  }
};

class OpenVinoModelImpl final : public models::ModelImpl {
 public:
  OpenVinoModelImpl(models::Model base, std::string architecture, Precision precision)
      : base_(register_module("base", std::move(base))),
        architecture_(std::move(architecture)),
        precision_(precision) {}

  std::pair<torch::Tensor, torch::Tensor> forwardWithEmbedding(torch::Tensor x) override {
    std::vector<torch::Tensor> out = session(x).run(x);
    torch::Tensor embedding = out.size() > 1 ? out[1] : torch::Tensor();
    if (!embedding.defined()) {
      // A model whose logits are not one linear layer's output (a distilled ViT's two heads):
      // the embedding, where asked for, comes from LibTorch.
      torch::NoGradGuard noGrad;
      embedding = base_->forwardWithEmbedding(x).second;
    }
    return {out[0], embedding};
  }

  torch::Tensor forward(torch::Tensor x) override { return session(x).run(x).front(); }

  int64_t embeddingDim() const override { return base_->embeddingDim(); }
  const models::ArchitectureFamily& family() const override { return base_->family(); }
  torch::nn::Linear& classifier() override { return base_->classifier(); }
  std::string classifierPrefix() const override { return base_->classifierPrefix(); }
  bool writeGraph(models::GraphWriter& writer) override { return base_->writeGraph(writer); }
  std::optional<std::array<int64_t, 2>> layoutImageSize() const override {
    return base_->layoutImageSize();
  }
  std::string globalPool() const override { return base_->globalPool(); }

 private:
  // The compiled graph for x's height and width, compiled on first sight.
  OpenVinoSession& session(const torch::Tensor& x) {
    FIXRES_CHECK(x.dim() == 4 && x.device().is_cpu(), InternalError,
                 "the OpenVINO runtime takes N x 3 x H x W CPU batches");
    const std::pair<int64_t, int64_t> key{x.size(2), x.size(3)};
    auto it = sessions_.find(key);
    if (it == sessions_.end()) it = sessions_.emplace(key, compile(key.first, key.second)).first;
    return *it->second;
  }

  std::unique_ptr<OpenVinoSession> compile(int64_t height, int64_t width) {
    ModelCard card;
    card.architecture = architecture_;
    card.numClasses = base_->classifier()->weight.size(0);
    card.testSize = static_cast<int>(height);
    // The preprocessing metadata the graph carries; the inputs arrive already preprocessed.
    card.filter = image::Filter::kBilinear;
    card.resizeMode = image::ResizeMode::kFixres;
    // A square input: the graph at that size; otherwise height and width left to the input.
    const ScratchGuard onnx{onnxSource(*base_, card, height != width, /*withEmbedding=*/true)};
    return compileOpenVino(
        onnx.source, precision_, torch::get_num_threads(),
        architecture_ + " at " + std::to_string(height) + "x" + std::to_string(width) + " px");
  }

  models::Model base_;
  std::string architecture_;
  Precision precision_;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<OpenVinoSession>> sessions_;
};

}  // namespace

std::string openVinoBinPath(const std::string& xmlPath) {
  FIXRES_CHECK(
      xmlPath.size() > 4 && xmlPath.compare(xmlPath.size() - 4, 4, ".xml") == 0, UsageError,
      "--format openvino writes OUT.xml and OUT.bin: --out must end in .xml, got ", xmlPath);
  requireOpenVino("--format openvino");
  return xmlPath.substr(0, xmlPath.size() - 4) + ".bin";
}

size_t exportOpenVino(models::ModelImpl& model, const ModelCard& card, const std::string& xmlPath,
                      bool dynamicSize) {
  openVinoBinPath(xmlPath);
  std::map<std::string, std::string> info;
  for (const auto& [key, value] : onnxMetadata(card, dynamicSize))
    info[key.rfind("fixres.", 0) == 0 ? key.substr(7) : key] = value;
  size_t nodes = 0;  // the ONNX graph's, as export --format onnx counts them
  const ScratchGuard onnx{onnxSource(model, card, dynamicSize, /*withEmbedding=*/false,
                                     /*viaFile=*/false, &nodes)};
  writeOpenVinoIr(onnx.source, xmlPath, info);
  return nodes;
}

models::Model openVinoModel(models::Model base, const std::string& architecture,
                            Precision precision) {
  return std::make_shared<OpenVinoModelImpl>(std::move(base), architecture, precision);
}

}  // namespace fixres::engine
