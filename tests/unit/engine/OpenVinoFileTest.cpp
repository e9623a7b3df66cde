// A model handed to OpenVINO through a file, as one over protobuf's 2 GiB is (ONNX's external
// data in a temporary folder): OpenVINO reads it, and its logits equal LibTorch's and those of the
// same graph handed over in memory.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <filesystem>

#include "../Reference.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/engine/OnnxExport.h"
#include "fixres/models/Registry.h"
#include "fixres/runtime/OpenVinoSession.h"

namespace fixres::engine {
namespace {

double relativeL2(const torch::Tensor& a, const torch::Tensor& b) {
  return (a - b).norm().item<double>() / b.norm().item<double>();
}

TEST(OpenVinoFile, ExternalDataReadsAsTheBytesDo) {
  FIXRES_SKIP_UNLESS(openVinoBuiltIn(), "openvino", "this build has no OpenVINO");
  torch::manual_seed(3);
  auto model = models::createModel("resnet_tiny", 5);
  model->eval();
  ModelCard card;
  card.architecture = "resnet_tiny";
  card.numClasses = 5;
  card.testSize = 32;
  card.filter = image::Filter::kBilinear;
  card.resizeMode = image::ResizeMode::kFixres;
  const OnnxSource file = onnxSource(*model, card, false, true, /*viaFile=*/true);
  const OnnxSource bytes = onnxSource(*model, card, false, true);
  ASSERT_FALSE(file.path.empty());
  ASSERT_TRUE(bytes.path.empty() && !bytes.bytes.empty());
  // Every tensor of 1 KiB or more lies beside the model: the .onnx is the small part.
  const auto data = std::filesystem::file_size(file.path + ".data");
  EXPECT_GT(data, 10 * std::filesystem::file_size(file.path));
  const torch::Tensor x = torch::randn({3, 3, 32, 32});
  torch::Tensor want;
  {
    torch::NoGradGuard noGrad;
    want = model->forward(x);
  }
  const auto viaFile = compileOpenVino(file, Precision::kFp32, 1, "resnet_tiny via a file");
  const auto inMemory = compileOpenVino(bytes, Precision::kFp32, 1, "resnet_tiny in memory");
  std::filesystem::remove_all(file.scratch);  // read: the folder may go
  const torch::Tensor a = viaFile->run(x).front(), b = inMemory->run(x).front();
  EXPECT_LT(relativeL2(a, want), 1e-5);
  EXPECT_LT(relativeL2(a, b), 1e-6);
  EXPECT_FALSE(std::filesystem::exists(file.scratch));
}

}  // namespace
}  // namespace fixres::engine
