// IDX -> PNG image folder.
#include "fixres/data/Import.h"

#include <png.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/data/Dataset.h"

namespace fixres::data {
namespace {

void pngWrite(png_structp png, png_bytep data, png_size_t length) {
  auto* out = static_cast<std::string*>(png_get_io_ptr(png));
  out->append(reinterpret_cast<const char*>(data), length);
}
void pngFlush(png_structp) {}

std::string findIdx(const std::string& dir, const std::string& stem) {
  for (const char* suffix : {".gz", ""}) {
    std::string p = dir + "/" + stem + suffix;
    if (fileExists(p)) return p;
  }
  FIXRES_FAIL(DataError, "missing ", dir, "/", stem,
              "[.gz]: install the data set with 'apt-get install dataset-fashion-mnist' or give "
              "--source with the IDX files");
}

int64_t exportSplit(const Dataset& ds, int64_t begin, int64_t end, const std::string& dir,
                    const std::vector<std::string>& classNames) {
  for (const auto& c : classNames) makeDirectories(dir + "/" + c);
  for (int64_t i = begin; i < end; ++i) {
    auto sample = ds.fetch(static_cast<size_t>(i));
    const auto& im = sample.decoded;
    // IDX images are grayscale; the dataset returns them as RGB with equal channels.
    std::vector<uint8_t> gray(static_cast<size_t>(im.width) * im.height);
    for (size_t p = 0; p < gray.size(); ++p) gray[p] = im.pixels[p * 3];
    char name[32];
    std::snprintf(name, sizeof(name), "%06lld.png", static_cast<long long>(i));
    writePng(dir + "/" + classNames.at(static_cast<size_t>(ds.label(static_cast<size_t>(i)))) +
                 "/" + name,
             im.width, im.height, 1, gray.data());
  }
  return end - begin;
}

}  // namespace

std::vector<std::string> fashionMnistClassNames() {
  return {"0_tshirt_top", "1_trouser", "2_pullover", "3_dress", "4_coat",
          "5_sandal",     "6_shirt",   "7_sneaker",  "8_bag",   "9_ankle_boot"};
}

void writePng(const std::string& path, int width, int height, int channels, const uint8_t* pixels) {
  FIXRES_CHECK(channels == 1 || channels == 3, InternalError, "writePng: channels must be 1 or 3");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  FIXRES_CHECK(png && info, InternalError, "libpng: out of memory");
  std::string out;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    FIXRES_FAIL(DataError, "cannot encode PNG ", path);
  }
  png_set_write_fn(png, &out, pngWrite, pngFlush);
  png_set_IHDR(png, info, width, height, 8,
               channels == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  for (int y = 0; y < height; ++y)
    png_write_row(png, const_cast<png_bytep>(pixels + static_cast<size_t>(y) * width * channels));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  writeFile(path, out);  // bulk output: the folder is published atomically by importIdx
}

ImportReport importIdx(const ImportOptions& o) {
  FIXRES_CHECK(!o.outDir.empty(), UsageError, "import needs an output folder (--out)");
  auto train = openIdx(findIdx(o.sourceDir, "train-images-idx3-ubyte"),
                       findIdx(o.sourceDir, "train-labels-idx1-ubyte"));
  auto test = openIdx(findIdx(o.sourceDir, "t10k-images-idx3-ubyte"),
                      findIdx(o.sourceDir, "t10k-labels-idx1-ubyte"));
  auto names = o.classNames;
  if (names.empty())
    for (size_t c = 0; c < train->classes().size(); ++c) names.push_back(train->classes()[c]);
  FIXRES_CHECK(names.size() >= train->classes().size(), UsageError, "import: ", names.size(),
               " class names for ", train->classes().size(), " classes");
  int64_t nTrain = static_cast<int64_t>(train->size());
  if (o.limitTrain >= 0) nTrain = std::min(nTrain, o.limitTrain);
  int64_t nVal = static_cast<int64_t>(test->size());
  if (o.limitVal >= 0) nVal = std::min(nVal, o.limitVal);
  FIXRES_CHECK(o.holdout >= 0 && o.holdout < nTrain, UsageError, "--holdout ", o.holdout,
               " must be smaller than the ", nTrain, " training images");
  ImportReport r;
  r.train = nTrain - o.holdout;
  r.holdout = o.holdout;
  r.val = nVal;
  const std::string stamp = std::to_string(r.train) + " " + std::to_string(r.holdout) + " " +
                            std::to_string(r.val) + "\n";
  const std::string marker = o.outDir + "/.fixres-import";
  if (fileExists(marker)) {
    auto v = readFile(marker);
    if (std::string(v.begin(), v.end()) == stamp) {
      r.alreadyThere = true;
      return r;
    }
  }
  const std::string tmp = o.outDir + ".partial";
  std::filesystem::remove_all(tmp);
  exportSplit(*train, 0, r.train, tmp + "/train", names);
  exportSplit(*train, r.train, nTrain, tmp + "/holdout", names);
  exportSplit(*test, 0, nVal, tmp + "/val", names);
  writeFileAtomic(tmp + "/.fixres-import", stamp);
  std::filesystem::remove_all(o.outDir);
  std::filesystem::rename(tmp, o.outDir);
  return r;
}

}  // namespace fixres::data
