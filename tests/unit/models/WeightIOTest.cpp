// Weight files: round trip to Python torchvision, generic values, bad files (WeightsError, exit
// code 4), classifier skipping, atomic writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/models/BatchNorm.h"
#include "fixres/models/Registry.h"
#include "fixres/models/ResNet.h"
#include "fixres/models/WeightIO.h"

namespace fixres::models {
namespace {

using fixres::testing::makeTempDir;
using fixres::testing::referenceDir;
using fixres::testing::referenceTensor;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void spit(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

void randomizeBatchNorm(torch::nn::Module& m) {
  torch::NoGradGuard noGrad;
  for (auto& mod : m.modules()) {
    if (auto* bn = mod->as<models::BatchNorm2d>()) {
      bn->weight.uniform_(0.5, 1.5);
      bn->bias.normal_(0, 0.1);
      bn->running_mean.normal_(0, 0.1);
      bn->running_var.uniform_(0.5, 1.5);
      bn->num_batches_tracked.fill_(3);
    }
  }
}

TEST(WeightIO, RoundTripLoadsInPythonTorchvisionWithSameOutputs) {
  std::string dir = makeTempDir("fixres_roundtrip_");
  std::filesystem::copy_file(referenceDir() + "/inputs.pth", dir + "/inputs.pth");
  c10::IValue inputs = readTorchFile(dir + "/inputs.pth");
  torch::manual_seed(5);
  for (const char* arch : {"resnet18", "resnext50_32x4d", "resnet_tiny"}) {
    auto model = createModel(arch, 10);
    randomizeBatchNorm(*model);
    model->eval();
    saveStateDictFile(*model, dir + "/" + std::string(arch) + "_cpp_weights.pth");
    torch::NoGradGuard noGrad;
    c10::Dict<std::string, at::Tensor> outputs;
    for (const std::string x : {"x0", "x1"}) {
      auto [logits, emb] = model->forwardWithEmbedding(referenceTensor(inputs, x));
      outputs.insert("logits_" + x, logits);
      outputs.insert("embedding_" + x, emb);
    }
    writeTorchFile(dir + "/" + std::string(arch) + "_cpp_outputs.pth", c10::IValue(outputs));

    // And back into C++: same tensors.
    auto back = createModel(arch, 10);
    loadWeightsFile(*back, dir + "/" + std::string(arch) + "_cpp_weights.pth", {});
    auto a = stateDict(*model), b = stateDict(*back);
    for (const auto& e : a) EXPECT_TRUE(torch::equal(e.value(), b.at(e.key()))) << e.key();
  }

  // Generic values, as checkpoints hold them.
  at::Tensor base = torch::arange(10, torch::kFloat);
  c10::impl::GenericDict nested(c10::StringType::get(), c10::AnyType::get());
  nested.insert("flag", true);
  nested.insert("none", c10::IValue());
  c10::impl::GenericDict g(c10::StringType::get(), c10::AnyType::get());
  g.insert("epoch", int64_t{3});
  g.insert("accuracy", 0.75);
  g.insert("name", std::string("fixres"));
  g.insert("list", c10::List<int64_t>({1, 2, 3}));
  g.insert("nested", nested);
  g.insert("big", int64_t{1} << 40);
  g.insert("neg", int64_t{-5});
  g.insert("base", base);
  g.insert("view", base.slice(0, 4, 6));
  g.insert("half", torch::arange(4, torch::kHalf));
  g.insert("long", torch::tensor({1, 2, 3, 4}, torch::kLong).view({2, 2}));
  g.insert("tuple", c10::ivalue::Tuple::create({int64_t{1}, std::string("a")}));
  writeTorchFile(dir + "/generic.pth", g);

  std::string cmd =
      std::string(FIXRES_PYTHON_COMMAND) + " " + testing::referenceScript() + " check " + dir;
  EXPECT_EQ(testing::runCommand(cmd), 0) << cmd;

  // Generic values read back in C++.
  auto r = readTorchFile(dir + "/generic.pth").toGenericDict();
  EXPECT_EQ(r.at("epoch").toInt(), 3);
  EXPECT_DOUBLE_EQ(r.at("accuracy").toDouble(), 0.75);
  EXPECT_EQ(r.at("name").toStringRef(), "fixres");
  EXPECT_EQ(r.at("big").toInt(), int64_t{1} << 40);
  EXPECT_EQ(r.at("neg").toInt(), -5);
  EXPECT_TRUE(r.at("nested").toGenericDict().at("flag").toBool());
  EXPECT_TRUE(torch::equal(r.at("view").toTensor(), base.slice(0, 4, 6)));
  EXPECT_EQ(r.at("view").toTensor().storage().unsafeGetStorageImpl(),
            r.at("base").toTensor().storage().unsafeGetStorageImpl());
  EXPECT_EQ(r.at("half").toTensor().scalar_type(), torch::kHalf);
  EXPECT_TRUE(torch::equal(r.at("long").toTensor(), g.at("long").toTensor()));
  EXPECT_EQ(r.at("list").toListRef().size(), 3u);
  EXPECT_EQ(r.at("tuple").toTupleRef().elements().size(), 2u);
}

TEST(WeightIO, ReadsPythonCheckpointsWithOptimizerState) {
  TorchArchive archive(referenceDir() + "/resnext50_32x4d.pth");
  auto ckpt = archive.read(/*lazy=*/false).toGenericDict();
  EXPECT_DOUBLE_EQ(ckpt.at("best_acc").toDouble(), 0.625);    // numpy.float64
  EXPECT_EQ(ckpt.at("step").toInt(), int64_t{-12345678901});  // numpy.int64
  EXPECT_TRUE(ckpt.at("args").isNone());                      // argparse.Namespace
  EXPECT_EQ(archive.ignoredObjects(), std::vector<std::string>{"argparse.Namespace"});
  EXPECT_EQ(ckpt.at("epoch").toInt(), 3);
  EXPECT_DOUBLE_EQ(ckpt.at("accuracy").toDouble(), 0.25);
  EXPECT_TRUE(ckpt.at("optimizer").isGenericDict());
  EXPECT_EQ(ckpt.at("lr_scheduler").toGenericDict().at("step_size").toInt(), 30);
  // A state dict read from Python converts to a typed dict.
  auto sd = c10::impl::toTypedDict<std::string, at::Tensor>(ckpt.at("model").toGenericDict());
  EXPECT_TRUE(sd.contains("layer4.2.bn3.num_batches_tracked"));
}

TEST(WeightIO, SkipClassifierLoadsAllButFc) {
  const std::string path = referenceDir() + "/resnet_tiny.pth";
  ResNet model(resnetConfig("resnet_tiny", 1000));
  // Strict: another class count is a mis-shaped classifier.
  fixres::testing::expectWeightsError(
      [&] { loadWeightsFile(*model, path, {}); },
      {path, "2 mis-shaped", "fc.weight (file [10, 128], model [1000, 128])",
       "only the classifier differs"});
  at::Tensor fcBefore = model->fc->weight.clone();
  LoadOptions opts;
  opts.skipClassifier = true;
  LoadReport report = loadWeightsFile(*model, path, opts);
  EXPECT_EQ(report.skipped, (std::vector<std::string>{"fc.weight", "fc.bias"}));
  EXPECT_EQ(report.ignored, (std::vector<std::string>{"fc.weight", "fc.bias"}));
  EXPECT_EQ(report.loaded, stateDict(*model).size() - 2);
  EXPECT_TRUE(torch::equal(model->fc->weight, fcBefore));
  auto file = c10::impl::toTypedDict<std::string, at::Tensor>(readTorchFile(path).toGenericDict());
  auto sd = stateDict(*model);
  EXPECT_TRUE(torch::equal(sd.at("layer3.0.conv2.weight"), file.at("layer3.0.conv2.weight")));
  EXPECT_TRUE(torch::equal(sd.at("bn1.running_var"), file.at("bn1.running_var")));
}

TEST(WeightIO, BadFilesAreWeightsErrorsWithClearMessages) {
  const std::string ref = referenceDir();
  const std::string dir = makeTempDir("fixres_badfiles_");
  auto tiny = createModel("resnet_tiny", 10);
  auto load = [&](const std::string& path) {
    return [&tiny, path] { loadWeightsFile(*tiny, path, {}); };
  };

  std::string good = slurp(ref + "/resnet_tiny.pth");
  spit(dir + "/truncated.pth", good.substr(0, good.size() / 2));
  fixres::testing::expectWeightsError(load(dir + "/truncated.pth"),
                                      {"truncated.pth", "truncated zip archive"});
  fixres::testing::expectWeightsError([&] { readTorchFile(dir + "/truncated.pth"); },
                                      {"truncated"});

  spit(dir + "/text.pth", "this is not a weights file\n");
  fixres::testing::expectWeightsError(load(dir + "/text.pth"),
                                      {"text.pth", "not a weights file fixres reads"});
  spit(dir + "/empty.pth", "");
  fixres::testing::expectWeightsError(load(dir + "/empty.pth"), {"empty.pth", "is empty"});
  fixres::testing::expectWeightsError(load(dir + "/absent.pth"), {"absent.pth", "No such file"});
  fixres::testing::expectWeightsError(load(dir), {"not a regular file"});
  // A pre-1.6 torch.save file of the same weights loads them (WeightFormatsTest.cpp has more).
  auto legacy = createModel("resnet_tiny", 10);
  loadWeightsFile(*legacy, ref + "/legacy.pth", {});
  auto fromZip = c10::impl::toTypedDict<std::string, at::Tensor>(
      readTorchFile(ref + "/resnet_tiny.pth").toGenericDict());
  for (const auto& e : stateDict(*legacy))
    EXPECT_TRUE(torch::equal(e.value(), fromZip.at(e.key()))) << e.key();

  fixres::testing::expectWeightsError(load(ref + "/other.zip"),
                                      {"other.zip", "not a torch.save archive"});
  fixres::testing::expectWeightsError(load(ref + "/bad_pickle.pth"),
                                      {"bad_pickle.pth", "data.pkl is truncated"});

  // Wrong architecture: resnet18 weights into resnet_tiny.
  fixres::testing::expectWeightsError(
      load(ref + "/resnet18.pth"), {"resnet18.pth", "does not match the model", "mis-shaped",
                                    "unexpected", "layer1.1.conv1.weight", "wrong architecture"});
  fixres::testing::expectWeightsError(
      load(ref + "/missing_key.pth"),
      {"1 missing (layer1.0.bn1.running_var)", "wrong architecture"});
  fixres::testing::expectWeightsError(load(ref + "/unexpected_key.pth"),
                                      {"1 unexpected (extra.weight)"});
  fixres::testing::expectWeightsError(
      load(ref + "/wrong_shape.pth"),
      {"1 mis-shaped (layer2.0.conv1.weight (file [32, 16, 1, 1], model [32, 16, "
       "3, 3]))"});
  fixres::testing::expectWeightsError(load(ref + "/not_a_dict.pth"), {"expected a state dict"});
  fixres::testing::expectWeightsError(load(ref + "/no_state_dict.pth"),
                                      {"no state dict found", "no 'model' entry", "epoch: Int"});

  // A pickle carrying a callable (os.system): Python's torch.load runs it (shown first, so the
  // file is known to be live), our loader refuses the file and runs nothing.
  const std::string marker = dir + "/payload_ran";
  ::setenv("FIXRES_PAYLOAD_MARKER", marker.c_str(), 1);
  ASSERT_EQ(
      testing::runCommand(std::string(FIXRES_PYTHON_COMMAND) +
                          " -c \"import torch,sys; torch.load(sys.argv[1], weights_only=False)\" " +
                          ref + "/payload.pth"),
      0);
  ASSERT_TRUE(std::filesystem::exists(marker)) << "the payload did not run in Python";
  std::filesystem::remove(marker);
  fixres::testing::expectWeightsError(load(ref + "/payload.pth"), {"payload.pth", "fc.weight"});
  EXPECT_NO_THROW(readTorchFile(ref + "/payload.pth"));  // read as data: the call is not made
  EXPECT_FALSE(std::filesystem::exists(marker)) << "loading ran the pickle's command";
  ::unsetenv("FIXRES_PAYLOAD_MARKER");

  // The model is untouched by a failed strict load.
  auto fresh = createModel("resnet_tiny", 10);
  auto before = stateDict(*fresh);
  std::vector<at::Tensor> copies;
  for (const auto& e : before) copies.push_back(e.value().clone());
  EXPECT_THROW(loadWeightsFile(*fresh, ref + "/missing_key.pth", {}), WeightsError);
  size_t k = 0;
  for (const auto& e : stateDict(*fresh)) EXPECT_TRUE(torch::equal(e.value(), copies[k++]));
}

TEST(WeightIO, WriteIsAtomicAndKeepsTheOldFileOnFailure) {
  const std::string dir = makeTempDir("fixres_atomic_");
  const std::string path = dir + "/ckpt.pth";
  spit(path, "old contents");

  // A file-size limit makes writes fail with EFBIG, like a full disk.
  struct rlimit old {};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  struct rlimit small = old;
  small.rlim_cur = 100000;
  auto oldHandler = signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  bool threw = false;
  std::string msg;
  try {
    writeTorchFile(path, c10::IValue(torch::zeros({100000})));
  } catch (const OutputError& e) {
    threw = true;
    msg = e.what();
  }
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, oldHandler);
  EXPECT_TRUE(threw);
  EXPECT_NE(msg.find("File too large"), std::string::npos) << msg;
  EXPECT_EQ(slurp(path), "old contents");
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u) << "temporary file left behind";

  // Success replaces the file; permissions follow the umask.
  mode_t oldMask = umask(027);
  writeTorchFile(path, c10::IValue(torch::ones({3})));
  umask(oldMask);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
  EXPECT_TRUE(torch::equal(readTorchFile(path).toTensor(), torch::ones({3})));

  // A symlink planted at the destination is replaced, never written through: its target (say,
  // another user's file) keeps its contents.
  const std::string victim = dir + "/victim";
  spit(victim, "precious");
  const std::string link = dir + "/linked.pth";
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  writeTorchFile(link, c10::IValue(torch::ones({2})));
  EXPECT_EQ(slurp(victim), "precious");
  struct stat lst {};
  ASSERT_EQ(::lstat(link.c_str(), &lst), 0);
  EXPECT_TRUE(S_ISREG(lst.st_mode));

  // Unwritable destination directory: an output error (exit code 6, see WriteFailureTest).
  EXPECT_THROW(writeTorchFile(dir + "/no/such/dir/x.pth", c10::IValue(int64_t{1})), OutputError);
  // Values that have no torch.save form.
  fixres::testing::expectWeightsError(
      [&] { writeTorchFile(dir + "/x.pth", c10::IValue(c10::complex<double>(1, 2))); },
      {"cannot save a value of type"});
}

}  // namespace
}  // namespace fixres::models
