// IDX -> PNG image folder.
#include "fixres/data/Import.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/common/Log.h"
#include "fixres/data/Dataset.h"
#include "fixres/image/Encode.h"

namespace fixres::data {
namespace {

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
    image::writePng(dir + "/" +
                        classNames.at(static_cast<size_t>(ds.label(static_cast<size_t>(i)))) + "/" +
                        name,
                    im.width, im.height, 1, gray.data());
  }
  return end - begin;
}

}  // namespace

std::vector<std::string> fashionMnistClassNames() {
  return {"0_tshirt_top", "1_trouser", "2_pullover", "3_dress", "4_coat",
          "5_sandal",     "6_shirt",   "7_sneaker",  "8_bag",   "9_ankle_boot"};
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
