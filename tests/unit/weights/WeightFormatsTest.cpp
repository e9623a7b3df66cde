// The weight formats besides the torch.save zip archive: legacy (pre-1.6) torch.save files and
// safetensors files, written by Python (tests/reference/weight_formats.py, run with
// /usr/bin/python3), load the same weights as Python's zip file and give Python's outputs;
// damaged files are WeightsErrors naming the file.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <iostream>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/models/Registry.h"
#include "fixres/models/WeightIO.h"
#include "fixres/weights/LegacyTorchFile.h"
#include "fixres/weights/SafetensorsFile.h"

namespace fixres::models {
namespace {

using fixres::testing::cachedReference;
using fixres::testing::makeTempDir;
using fixres::testing::readText;
using fixres::testing::referenceTensor;
using fixres::testing::relErr;

const std::string& formatsDir() {
  static const std::string dir = [] {
    std::string made;
    cachedReference("weight_formats.py", "make {dir}", &made);
    return made;
  }();
  return dir;
}

void writeBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// Same dtype, shape and bits.
void expectIdentical(const at::Tensor& a, const at::Tensor& b, const std::string& what) {
  ASSERT_EQ(a.scalar_type(), b.scalar_type()) << what;
  ASSERT_EQ(a.sizes(), b.sizes()) << what;
  EXPECT_TRUE(torch::equal(a.contiguous().reshape({-1}).view(at::kByte),
                           b.contiguous().reshape({-1}).view(at::kByte)) ||
              a.numel() == 0)
      << what;
}

TEST(WeightFormats, DetectsTheFormatFromTheFirstBytes) {
  const std::string dir = formatsDir();
  auto head = [](const std::string& path) { return readText(path).substr(0, 16); };
  EXPECT_EQ(detectWeightFormat(head(dir + "/tiny.pth")), WeightFormat::kTorchZip);
  EXPECT_EQ(detectWeightFormat(head(dir + "/tiny_legacy.pth")), WeightFormat::kTorchLegacy);
  EXPECT_EQ(detectWeightFormat(head(dir + "/tiny.safetensors")), WeightFormat::kSafetensors);
  EXPECT_EQ(detectWeightFormat("this is not a weights file"), WeightFormat::kUnknown);
  EXPECT_EQ(detectWeightFormat(""), WeightFormat::kUnknown);
}

// A safetensors header of 128 + 256k bytes starts with 0x80, a pickle's first byte: the JSON at
// byte 8 decides (a pickled torch.save has its magic number there). Written here with every
// header length from 8 to 2048 bytes, each read back as safetensors with its tensor.
TEST(WeightFormats, SafetensorsHeaderLengthsStartingWith0x80AreNotPickles) {
  const std::string dir = makeTempDir("st_lengths");
  size_t seen0x80 = 0;
  for (size_t nameLength = 1; nameLength < 2000; nameLength += 7) {
    c10::Dict<std::string, at::Tensor> d;
    d.insert(std::string(nameLength, 'w'), torch::arange(6, torch::kFloat32).view({2, 3}));
    const std::string path = dir + "/t.safetensors";
    writeSafetensorsFile(path, d);
    const std::string head = readText(path).substr(0, 16);
    seen0x80 += static_cast<unsigned char>(head[0]) == 0x80 ? 1 : 0;
    ASSERT_EQ(detectWeightFormat(head), WeightFormat::kSafetensors) << nameLength;
    auto content = openWeightSource(path)->read(false).toGenericDict();
    ASSERT_TRUE(torch::equal(content.at(std::string(nameLength, 'w')).toTensor(),
                             torch::arange(6, torch::kFloat32).view({2, 3})));
  }
  EXPECT_GT(seen0x80, 0u) << "no header length started with 0x80";
}

TEST(WeightFormats, LegacyAndSafetensorsGiveTheZipFilesWeightsAndPythonsOutputs) {
  const std::string dir = formatsDir();
  c10::IValue expected = readTorchFile(dir + "/expected.pth");
  const at::Tensor x = referenceTensor(expected, "x");
  auto zipModel = createModel("resnet_tiny", 10);
  LoadReport zipReport = loadWeightsFile(*zipModel, dir + "/tiny.pth", {});
  auto reference = stateDict(*zipModel);
  torch::NoGradGuard noGrad;
  zipModel->eval();
  const at::Tensor zipLogits = zipModel->forward(x);
  EXPECT_LT(relErr(zipLogits, referenceTensor(expected, "logits")), 1e-5);

  for (const char* file : {"tiny_legacy.pth", "tiny.safetensors"}) {
    const std::string path = dir + "/" + file;
    auto model = createModel("resnet_tiny", 10);
    LoadReport report = loadWeightsFile(*model, path, {});
    EXPECT_EQ(report.loaded, reference.size()) << file;
    EXPECT_NE(report.layout.find("'module.' prefix removed"), std::string::npos) << report.layout;
    auto sd = stateDict(*model);
    for (const auto& e : reference) expectIdentical(sd.at(e.key()), e.value(), file + e.key());

    // The eager path (readTorchFile + loadStateDict) gives the same tensors.
    auto eager = createModel("resnet_tiny", 10);
    loadStateDict(*eager, readTorchFile(path), {}, path);
    auto esd = stateDict(*eager);
    for (const auto& e : reference) expectIdentical(esd.at(e.key()), e.value(), file + e.key());

    model->eval();
    auto [logits, emb] = model->forwardWithEmbedding(x);
    EXPECT_TRUE(torch::equal(logits, zipLogits)) << file;
    double e1 = relErr(logits, referenceTensor(expected, "logits"));
    double e2 = relErr(emb, referenceTensor(expected, "embedding"));
    EXPECT_LT(e1, 1e-5) << file;
    EXPECT_LT(e2, 1e-5) << file;
    std::cout << "[ formats ] " << file << ": logits relative L2 error to Python " << e1 << "\n";
  }

  // The rest of the legacy checkpoint reads like the zip file's (the pickles outgrow the first
  // read of the file: 30,000 floats).
  auto legacy = readTorchFile(dir + "/tiny_legacy.pth").toGenericDict();
  auto zip = readTorchFile(dir + "/tiny.pth").toGenericDict();
  EXPECT_EQ(legacy.at("epoch").toInt(), 7);
  ASSERT_EQ(legacy.at("history").toListRef().size(), 30000u);
  EXPECT_EQ(legacy.at("history").toListRef()[29999].toDouble(),
            zip.at("history").toListRef()[29999].toDouble());
}

TEST(WeightFormats, EveryDtypeViewAndShapeReadsAsPythonWroteIt) {
  const std::string dir = formatsDir();
  auto zip = readTorchFile(dir + "/dtypes.pth").toGenericDict();
  LegacyTorchFile legacyFile(dir + "/dtypes_legacy.pth");
  auto legacy = legacyFile.read(/*lazy=*/false).toGenericDict();
  auto lazyLegacy = legacyFile.read(/*lazy=*/true).toGenericDict();
  SafetensorsFile stFile(dir + "/dtypes.safetensors");
  auto st = stFile.read(/*lazy=*/false).toGenericDict();
  auto lazySt = stFile.read(/*lazy=*/true).toGenericDict();
  EXPECT_EQ(stFile.metadata(),
            (std::map<std::string, std::string>{{"format", "pt"}, {"note", "dtypes"}}));
  ASSERT_EQ(legacy.size(), zip.size());
  ASSERT_EQ(st.size(), 12u);
  for (const auto& e : zip) {
    const std::string& name = e.key().toStringRef();
    const at::Tensor& want = e.value().toTensor();
    expectIdentical(legacy.at(name).toTensor(), want, "legacy " + name);
    EXPECT_EQ(legacy.at(name).toTensor().strides(), want.strides()) << name;
    at::Tensor filled = at::empty(want.sizes(), want.options());
    legacyFile.copyInto(lazyLegacy.at(name).toTensor(), filled);
    expectIdentical(filled, want, "lazy legacy " + name);
    if (!st.contains(name)) continue;  // views: torch.save files only
    expectIdentical(st.at(name).toTensor(), want, "safetensors " + name);
    at::Tensor stFilled = at::empty(want.sizes(), want.options());
    stFile.copyInto(lazySt.at(name).toTensor(), stFilled);
    expectIdentical(stFilled, want, "lazy safetensors " + name);
  }
  // Views of one storage share it, as in Python.
  EXPECT_EQ(legacy.at("slice").toTensor().storage().unsafeGetStorageImpl(),
            legacy.at("base").toTensor().storage().unsafeGetStorageImpl());
  EXPECT_EQ(legacy.at("slice").toTensor().storage_offset(), 5);

  // A tensor on a storage view (files of PyTorch < 0.4): the values Python's torch.load gives.
  auto view = readTorchFile(dir + "/view_legacy.pth").toGenericDict().at("v").toTensor();
  auto python = readTorchFile(dir + "/view.pth").toGenericDict().at("v").toTensor();
  expectIdentical(view, python, "view");
  EXPECT_TRUE(torch::equal(view, torch::tensor({3.f, 4.f, 5.f})));
}

TEST(WeightFormats, DamagedFilesAreWeightsErrorsNamingTheFile) {
  const std::string ref = formatsDir();
  const std::string dir = makeTempDir("fixres_formats_");
  auto tiny = createModel("resnet_tiny", 10);
  auto load = [&](const std::string& path) {
    return [&tiny, path] { loadWeightsFile(*tiny, path, {}); };
  };
  auto before = stateDict(*tiny);
  std::vector<at::Tensor> copies;
  for (const auto& e : before) copies.push_back(e.value().clone());

  // Legacy torch.save files.
  const std::string legacy = readText(ref + "/tiny_legacy.pth");
  for (size_t cut :
       {legacy.size() - 1, legacy.size() / 2, size_t{40000}, size_t{100}, size_t{20}}) {
    const std::string path = dir + "/cut" + std::to_string(cut) + ".pth";
    writeBytes(path, legacy.substr(0, cut));
    fixres::testing::expectWeightsError(load(path), {path, "truncated"});
  }
  std::string magic = legacy;
  magic[5] = static_cast<char>(magic[5] ^ 0x40);
  writeBytes(dir + "/magic.pth", magic);
  fixres::testing::expectWeightsError(load(dir + "/magic.pth"),
                                      {"magic.pth", "no torch.save magic number"});
  writeBytes(dir + "/pickle.pth", std::string("\x80\x02]q\x00.", 6));  // pickle.dumps([], 2)
  fixres::testing::expectWeightsError(load(dir + "/pickle.pth"),
                                      {"pickle.pth", "not a torch.save file"});
  fixres::testing::expectWeightsError(load(ref + "/bad_big_endian.pth"),
                                      {"bad_big_endian.pth", "big-endian"});
  fixres::testing::expectWeightsError(load(ref + "/bad_count.pth"),
                                      {"bad_count.pth", "elements, its tensors"});

  // safetensors files.
  const std::vector<std::pair<std::string, std::vector<std::string>>> bad = {
      {"bad_length", {"header length", "runs past the end of the file"}},
      {"bad_json", {"header is not valid JSON"}},
      {"bad_offsets", {"tensor 'b'", "outside the byte buffer of 28 bytes"}},
      {"bad_dtype", {"tensor 'a'", "dtype 'F7' is not supported"}},
      {"bad_size", {"tensor 'a'", "hold 16 bytes", "need 24"}},
      {"bad_overlap", {"tensor 'b'", "overlap"}},
      {"bad_overflow", {"tensor 'a'", "more elements than any file"}},
      {"bad_negative", {"tensor 'a'", "not a list of sizes >= 0"}},
      {"bad_metadata", {"__metadata__['format'] is not a string"}},
      {"bad_truncated", {"tensor 'b'", "outside the byte buffer of 23 bytes"}},
      {"bad_trailing", {"byte buffer has 32 bytes but its tensors cover 28"}},
  };
  for (const auto& [name, fragments] : bad) {
    std::vector<std::string> all = fragments;
    all.push_back(name + ".safetensors");
    fixres::testing::expectWeightsError(load(ref + "/" + name + ".safetensors"), all);
  }
  const std::string small = readText(ref + "/bad_dtype.safetensors").substr(0, 8);
  writeBytes(dir + "/short.safetensors", small + "{");
  fixres::testing::expectWeightsError(load(dir + "/short.safetensors"),
                                      {"short.safetensors", "runs past"});

  // Neither format.
  writeBytes(dir + "/text.bin", "this is not a weights file\n");
  fixres::testing::expectWeightsError(load(dir + "/text.bin"),
                                      {"text.bin", "not a weights file fixres reads"});

  // No failed load touched the model.
  size_t k = 0;
  for (const auto& e : stateDict(*tiny)) EXPECT_TRUE(torch::equal(e.value(), copies[k++]));
}

}  // namespace
}  // namespace fixres::models
