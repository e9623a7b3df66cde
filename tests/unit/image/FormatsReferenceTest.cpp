// BMP, WebP, TIFF and PNM decoding against PIL's Image.open(f).convert("RGB"): the images and
// PIL's pixels come from tests/reference/image_formats.py (see its docstring). Every byte must
// match, and a file PIL cannot read must be a DataError naming it.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/image/Decode.h"

namespace {

using fixres::DataError;
using fixres::image::decodeFile;
using fixres::image::decodeImage;
using fixres::image::Decoder;
using fixres::image::Image;
using fixres::testing::readBytes;

struct Cases {
  std::string dir;
  std::string pil;
  std::vector<std::vector<std::string>> lines;
};

const Cases& cases() {
  static const Cases c = [] {
    Cases out;
    fixres::testing::cachedReference("image_formats.py", "{dir}/formats", &out.dir);
    out.dir += "/formats";
    std::ifstream in(out.dir + "/manifest.txt");
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::vector<std::string> parts;
      for (std::string p; ls >> p;) parts.push_back(p);
      if (parts.size() == 2 && parts[0] == "pil") {
        out.pil = parts[1];
      } else if (!parts.empty()) {
        out.lines.push_back(parts);
      }
    }
    return out;
  }();
  return c;
}

std::vector<std::vector<std::string>> casesOf(const std::string& op) {
  std::vector<std::vector<std::string>> out;
  for (const auto& c : cases().lines) {
    if (c[0] == op) out.push_back(c);
  }
  return out;
}

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(FormatsReference, EveryFormatDecodesToPilsPixels) {
  const auto decodes = casesOf("decode");
  // image_formats.py writes 48 readable images (11 BMP, 4 of them run-length encoded; 5 WebP,
  // 12 TIFF, 10 PNM, 10 GIF).
  ASSERT_EQ(decodes.size() + casesOf("unchecked").size(), 49u) << cases().dir << "/manifest.txt";
  // The codec each file must be sniffed as, by its extension.
  const std::map<std::string, std::string> codecOf = {
      {"bmp", "bmp"}, {"webp", "webp"}, {"tif", "tiff"}, {"tiff", "tiff"},
      {"ppm", "pnm"}, {"pgm", "pnm"},   {"pbm", "pnm"},  {"gif", "gif"}};
  std::map<std::string, int> perCodec;
  for (const auto& c : decodes) {
    const std::string file = cases().dir + "/" + c[1];
    SCOPED_TRACE(c[1] + " (PIL " + cases().pil + ")");
    Image im;
    try {
      im = decodeFile(file);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "PIL reads it, fixres fails: " << e.what();
      continue;
    }
    ASSERT_EQ(im.width, std::stoi(c[3]));
    ASSERT_EQ(im.height, std::stoi(c[4]));
    const std::vector<uint8_t> expected = readBytes(cases().dir + "/" + c[2]);
    ASSERT_EQ(expected.size(), im.pixels.size());
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      if (expected[i] != im.pixels[i] && diff++ == 0) first = i;
    }
    EXPECT_EQ(diff, 0u) << "first difference at byte " << first << ": " << int(im.pixels[first])
                        << " vs PIL " << int(expected[first]);
    const std::vector<uint8_t> bytes = readBytes(file);
    const std::string ext = c[1].substr(c[1].rfind('.') + 1);
    ASSERT_TRUE(codecOf.count(ext)) << "no codec named for ." << ext;
    EXPECT_EQ(Decoder(bytes.data(), bytes.size(), c[1]).codec().name, codecOf.at(ext));
    ++perCodec[codecOf.at(ext)];
  }
  // A Pillow older than 10 reads indices past a GIF's colour table otherwise: that file is not
  // compared there (image_formats.py lists it as unchecked).
  const int gifs = casesOf("unchecked").empty() ? 10 : 9;
  const std::map<std::string, int> want = {
      {"bmp", 12}, {"webp", 5}, {"tiff", 12}, {"pnm", 10}, {"gif", gifs}};
  EXPECT_EQ(perCodec, want);
}

TEST(FormatsReference, FilesPilCannotReadAreDataErrorsNamingThem) {
  const auto errors = casesOf("decode_error");
  // Truncated BMP, WebP, TIFF, PPM and GIF; a plain sample above maxval; maxval 70000; a GIF
  // whose image data ends before its last pixel; a palette TIFF without its colour map (libtiff
  // reads its samples as gray levels); run-length data ending before the last pixel; a GIF frame
  // 0 pixels wide; a GIF cut inside the data block that ends its frame; an RLE BMP holding 300
  // palette entries.
  ASSERT_EQ(errors.size(), 13u) << cases().dir << "/manifest.txt";
  for (const auto& c : errors) {
    const std::string file = cases().dir + "/" + c[1];
    try {
      decodeFile(file);
      ADD_FAILURE() << c[1] << " decoded, PIL fails on it";
    } catch (const DataError& e) {
      EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

// Damaged GIFs (every prefix, 300 single-byte changes of each) decode or fail with a DataError,
// never anything else.
TEST(FormatsReference, DamagedGifsAreImagesOrDataErrors) {
  std::mt19937 rng(7);
  for (const char* name : {"photo.gif", "offset.gif", "grow.gif", "notable.gif"}) {
    const std::vector<uint8_t> bytes = readBytes(cases().dir + "/" + name);
    std::vector<std::vector<uint8_t>> damaged;
    for (size_t n = 0; n < bytes.size(); n += 1 + n / 64)
      damaged.emplace_back(bytes.begin(), bytes.begin() + n);
    for (int i = 0; i < 300; ++i) {
      damaged.push_back(bytes);
      damaged.back()[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    }
    for (const auto& d : damaged) {
      try {
        decodeImage(d.data(), d.size(), name);
      } catch (const DataError&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << name << ": " << e.what();
      }
    }
  }
}

TEST(FormatsReference, RegionsOfOtherFormatsEqualTheWholeImageCropped) {
  for (const char* name : {"rgb24.bmp", "lossy.webp", "lzw.tiff", "rgb.ppm", "offset.gif"}) {
    const std::string file = cases().dir + "/" + name;
    const std::vector<uint8_t> bytes = readBytes(file);
    const Image full = decodeFile(file);
    Decoder d(bytes.data(), bytes.size(), name);
    const fixres::image::Rect r{3, 5, full.width / 2, full.height / 3};
    const Image part = d.decodeRegion(r);
    ASSERT_EQ(part.width, r.width);
    ASSERT_EQ(part.height, r.height);
    for (int y = 0; y < r.height; ++y) {
      for (int x = 0; x < r.width * 3; ++x) {
        ASSERT_EQ(part.row(y)[x], full.row(r.top + y)[r.left * 3 + x])
            << name << " at " << x << "," << y;
      }
    }
  }
}

}  // namespace
