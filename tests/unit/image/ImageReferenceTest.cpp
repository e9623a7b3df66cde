// Decoding, resizing and the transforms against PIL 9.4 / torchvision 0.14 outputs produced by
// tests/reference/image_cases.py (see its docstring for the manifest format).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <sstream>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/image/Decode.h"
#include "fixres/image/Ops.h"
#include "fixres/image/Resample.h"
#include "fixres/image/Transform.h"

namespace fixres::image {
namespace {

using fixres::testing::readBytes;
using fixres::testing::readFloats;

class ImageReference : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fixres::testing::cachedReference("image_cases.py", "{dir}/cases", &dir_);
    dir_ += "/cases";
    std::ifstream in(dir_ + "/manifest.txt");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::vector<std::string> parts;
      std::string p;
      while (ls >> p) parts.push_back(p);
      if (!parts.empty()) cases_.push_back(parts);
    }
  }

  // The manifest's cases of `op`; a test failure unless there are `expected` of them (as many as
  // image_cases.py writes), so that a loop over them never passes on no case at all.
  // The val transform's output for image `file` at `size`, `resizeMode` and `cropPct`.
  std::vector<float> valOutput(const std::string& file, int size, const std::string& resizeMode,
                               double cropPct = 0.875) {
    TransformOptions o;
    o.kind = TransformKind::kVal;
    o.inputSize = size;
    o.resizeMode = parseResizeMode(resizeMode);
    o.cropPct = cropPct;
    Transform t(o);
    const std::vector<uint8_t> bytes = readBytes(path(file));
    const TransformedImage r = t.apply(bytes.data(), bytes.size(), file, 0);
    std::vector<float> got(3 * size_t(size) * size);
    t.writeFloat(r, got.data());
    return got;
  }

  static std::vector<std::vector<std::string>> casesOf(const std::string& op, size_t expected) {
    std::vector<std::vector<std::string>> out;
    for (const auto& c : cases_) {
      if (c[0] == op) out.push_back(c);
    }
    EXPECT_EQ(out.size(), expected) << "cases of " << op << " in " << dir_ << "/manifest.txt";
    return out;
  }
  static std::string path(const std::string& name) { return dir_ + "/" + name; }
  static Image load(const std::string& name) { return decodeFile(path(name)); }

  static void expectSame(const Image& got, const std::string& expectedFile, int w, int h,
                         const std::string& what) {
    ASSERT_EQ(got.width, w) << what;
    ASSERT_EQ(got.height, h) << what;
    const std::vector<uint8_t> expected = readBytes(path(expectedFile));
    ASSERT_EQ(expected.size(), got.pixels.size()) << what;
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      if (expected[i] != got.pixels[i] && diff++ == 0) first = i;
    }
    EXPECT_EQ(diff, 0u) << what << ": first difference at byte " << first << " ("
                        << int(got.pixels[first]) << " vs PIL " << int(expected[first]) << ")";
  }

  static std::string dir_;
  static std::vector<std::vector<std::string>> cases_;
};
std::string ImageReference::dir_;
std::vector<std::vector<std::string>> ImageReference::cases_;

TEST_F(ImageReference, DecodeMatchesPilConvertRgb) {
  const auto cases = casesOf("decode", 17);
  for (const auto& c : cases) {
    const Image im = load(c[1]);
    expectSame(im, c[2], std::stoi(c[3]), std::stoi(c[4]), "decode " + c[1]);
  }
}

TEST_F(ImageReference, CorruptFilesAreDataErrorsNamingTheFile) {
  const auto cases = casesOf("decode_error", 6);
  for (const auto& c : cases) {
    try {
      decodeFile(path(c[1]));
      ADD_FAILURE() << c[1] << " decoded, PIL fails on it";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(c[1]), std::string::npos) << e.what();
      if (c[1].find("bomb") != std::string::npos) {
        EXPECT_NE(std::string(e.what()).find("exceeds the limit"), std::string::npos) << e.what();
      }
      if (c[1].find("truncated") != std::string::npos) {
        EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
      }
    }
  }
}

TEST_F(ImageReference, PixelLimitIsConfigurable) {
  DecodeOptions options;
  options.maxPixels = 500 * 375 - 1;
  EXPECT_THROW(decodeFile(path("land.jpg"), options), DataError);
  options.maxPixels = 500 * 375;
  EXPECT_EQ(decodeFile(path("land.jpg"), options).width, 500);
}

TEST_F(ImageReference, RegionDecodingEqualsFullDecodeThenCrop) {
  for (const char* name : {"land.jpg", "port.jpg", "prog.jpg", "q444.jpg", "gray.jpg", "cmyk.jpg",
                           "odd.jpg", "truncated.jpg", "land.png"}) {
    const std::vector<uint8_t> bytes = readBytes(path(name));
    const bool bad = std::string(name).find("truncated") != std::string::npos;
    Image full;
    if (!bad) full = decodeImage(bytes.data(), bytes.size(), name);
    std::mt19937 gen(7);
    for (int k = 0; k < 60; ++k) {
      Decoder d(bytes.data(), bytes.size(), name);
      std::uniform_int_distribution<int> wd(1, d.width()), hd(1, d.height());
      Rect r{0, 0, wd(gen), hd(gen)};
      r.left = std::uniform_int_distribution<int>(0, d.width() - r.width)(gen);
      r.top = std::uniform_int_distribution<int>(0, d.height() - r.height)(gen);
      if (bad) {
        EXPECT_THROW(d.decodeRegion(r), DataError) << name;
        continue;
      }
      const Image region = d.decodeRegion(r);
      const Image expected = cropZeroFill(ImageView(full), r);
      ASSERT_EQ(region.pixels, expected.pixels)
          << name << " region " << r.left << "," << r.top << " " << r.width << "x" << r.height;
    }
  }
}

TEST_F(ImageReference, ResizeIsBitExactWithPil) {
  const auto cases = casesOf("resize", 42);
  std::map<std::string, Image> images;
  // Every code path of the horizontal pass (where the CPU has it).
  for (ResampleIsa isa : {ResampleIsa::kScalar, ResampleIsa::kSse41, ResampleIsa::kAvx2}) {
    limitResampleIsa(isa);
    for (const auto& c : cases) {
      if (!images.count(c[1])) images[c[1]] = load(c[1]);
      const int w = std::stoi(c[2]), h = std::stoi(c[3]);
      const Filter f = c[4] == "bicubic" ? Filter::kBicubic : Filter::kBilinear;
      expectSame(resize(ImageView(images[c[1]]), w, h, f), c[5], w, h,
                 "resize " + c[1] + " to " + c[2] + "x" + c[3] + " " + c[4] + " isa " +
                     std::to_string(static_cast<int>(isa)));
    }
  }
}

TEST_F(ImageReference, ResizeWindowEqualsResizeThenCrop) {
  const Image im = load("odd.jpg");
  const Image whole = resize(ImageView(im), 190, 260);
  const Rect w{13, 40, 101, 77};
  const Image part = resizeWindow(ImageView(im), 190, 260, w);
  EXPECT_EQ(part.pixels, cropZeroFill(ImageView(whole), w).pixels);
  // From only the source rectangle the window reads.
  for (Filter f : {Filter::kBilinear, Filter::kBicubic}) {
    const Rect need = resizeSourceRect(im.width, im.height, 190, 260, w, f);
    const Image src = cropZeroFill(ImageView(im), need);
    EXPECT_EQ(resizeWindowPartial(ImageView(src), need, im.width, im.height, 190, 260, w, f).pixels,
              resizeWindow(ImageView(im), 190, 260, w, f).pixels);
  }
}

// The tolerance of the issue, in pixel units: <= 1/255 on 99.9% of values, never > 2/255.
void expectNormalizedClose(const std::vector<float>& got, const std::vector<float>& expected,
                           const std::string& what, size_t* exactOut) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  const float std[3] = {0.229f, 0.224f, 0.225f};
  const size_t plane = got.size() / 3;
  size_t over1 = 0, exact = 0;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = std::fabs(double(got[i]) - double(expected[i])) * std[i / plane] * 255.0;
    worst = std::max(worst, d);
    if (d > 1.0 + 1e-3) ++over1;
    if (got[i] == expected[i]) ++exact;
  }
  EXPECT_LE(worst, 2.0 + 1e-3) << what;
  EXPECT_LE(double(over1), 0.001 * got.size()) << what;
  *exactOut += exact == got.size() ? 1 : 0;
}

TEST_F(ImageReference, ValTransformMatchesTorchvision) {
  const auto cases = casesOf("val", 40);
  size_t exact = 0;
  for (const auto& c : cases) {
    expectNormalizedClose(valOutput(c[1], std::stoi(c[2]), c[3]), readFloats(path(c[4])),
                          "val " + c[1] + " " + c[2] + " " + c[3], &exact);
  }
  // With a full decode and PIL's resampler the match is exact, not merely within tolerance.
  EXPECT_EQ(exact, cases.size());
}

// --crop-pct: the val transform resizes to floor(S / crop) before its centre crop, as timm's
// transforms do (crop 1.0: no margin; 0.95 and 0.9 for ViTs and ResNet-D).
TEST_F(ImageReference, ValTransformWithACropFractionMatchesTimmsRule) {
  const auto cases = casesOf("valcrop", 24);
  size_t exact = 0;
  for (const auto& c : cases) {
    expectNormalizedClose(valOutput(c[1], std::stoi(c[2]), c[3], std::stod(c[4])),
                          readFloats(path(c[5])),
                          "valcrop " + c[1] + " " + c[2] + " " + c[3] + " " + c[4], &exact);
  }
  EXPECT_EQ(exact, cases.size());
}

TEST_F(ImageReference, ValNoCropMatchesTorchvision) {
  size_t exact = 0;
  for (const auto& c : casesOf("valnocrop", 10)) {
    TransformOptions o;
    o.kind = TransformKind::kValNoCrop;
    o.inputSize = std::stoi(c[2]);
    Transform t(o);
    const TransformedImage r = t.apply(load(c[1]), 0);
    ASSERT_EQ(r.image.width, std::stoi(c[3])) << c[1];
    ASSERT_EQ(r.image.height, std::stoi(c[4])) << c[1];
    std::vector<float> got(3 * size_t(r.image.width) * r.image.height);
    t.writeFloat(r, got.data());
    expectNormalizedClose(got, readFloats(path(c[5])), "valnocrop " + c[1], &exact);
  }
  EXPECT_GE(exact, 10u);
}

TEST_F(ImageReference, ResizedCropWithFixedParametersMatchesTorchvision) {
  const auto cases = casesOf("rrc", 28);
  for (const auto& c : cases) {
    const std::vector<uint8_t> bytes = readBytes(path(c[1]));
    const Rect r{std::stoi(c[3]), std::stoi(c[2]), std::stoi(c[5]), std::stoi(c[4])};
    const int s = std::stoi(c[6]);
    Decoder d(bytes.data(), bytes.size(), c[1]);
    Image out = resize(ImageView(d.decodeRegion(r)), s, s);  // cropped (region) decoding
    if (c[7] == "1") flipHorizontal(out);
    expectSame(out, c[8], s, s, "rrc " + c[1]);
  }
}

TEST_F(ImageReference, ColorJitterMatchesTorchvision) {
  const auto cases = casesOf("jitter", 18);
  for (const auto& c : cases) {
    Image im = resize(ImageView(load(c[1])), 97, 71);
    JitterParams p;
    for (int i = 0; i < 4; ++i) p.order[i] = std::stoi(c[2 + i]);
    p.useBrightness = p.useContrast = p.useSaturation = true;
    p.brightness = std::stof(c[6]);
    p.contrast = std::stof(c[7]);
    p.saturation = std::stof(c[8]);
    p.hue = std::stof(c[9]);
    p.useHue = p.hue != 0.0f;
    Image deferredIm = im;
    applyColorJitter(im, p);
    expectSame(im, c[10], 97, 71,
               "jitter " + c[1] + " b=" + c[6] + " c=" + c[7] + " s=" + c[8] + " h=" + c[9]);
    // The deferred form (trailing per-value map returned, applied at the final write) agrees.
    std::array<uint8_t, 256> map;
    applyColorJitter(deferredIm, p, &map);
    for (auto& v : deferredIm.pixels) v = map[v];
    expectSame(deferredIm, c[10], 97, 71, "deferred jitter " + c[1]);
  }
}

TEST_F(ImageReference, CenterCropPadsLikeTorchvision) {
  for (const auto& c : casesOf("center_crop", 21)) {
    const Image im = load(c[1]);
    const int cw = std::stoi(c[2]), ch = std::stoi(c[3]);
    const Image out = cropZeroFill(ImageView(im), centerCropRect(im.width, im.height, cw, ch));
    expectSame(out, c[4], cw, ch, "center_crop " + c[1] + " " + c[2] + "x" + c[3]);
  }
}

TEST_F(ImageReference, CropOutsideIsBlackLikePil) {
  for (const auto& c : casesOf("crop", 3)) {
    const Image im = load(c[1]);
    const Rect r{std::stoi(c[2]), std::stoi(c[3]), std::stoi(c[4]), std::stoi(c[5])};
    expectSame(cropZeroFill(ImageView(im), r), c[6], r.width, r.height, "crop " + c[1]);
  }
}

}  // namespace
}  // namespace fixres::image
