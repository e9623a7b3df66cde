// Inputs the fuzzers found crashing, kept as regression tests (fuzz/corpus/*/regression-*):
// each one's expected outcome, decoded or a typed error (DataError for images and .npy files,
// WeightsError for torch.save pickles) naming the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/data/Npy.h"
#include "fixres/engine/ModelCard.h"
#include "fixres/image/Decode.h"
#include "fixres/weights/StorageResolver.h"
#include "fixres/weights/Unpickler.h"

namespace fixres::image {
namespace {

// A 16-bit grayscale 8x8 PNG whose image data is complete but whose IEND chunk is damaged: the
// decoder freed its row buffer twice. Pillow decodes it (it stops at the end of the image
// data); so must we, without a crash.
TEST(FuzzRegression, Gray16PngWithDamagedEndChunkDecodesLikePillow) {
  const std::string path =
      std::string(FIXRES_SOURCE_DIR) + "/fuzz/corpus/decode/regression-gray16-double-free.png";
  auto bytes = readFile(path);
  Image img = decodeImage(bytes.data(), bytes.size(), path);
  EXPECT_EQ(img.width, 8);
  EXPECT_EQ(img.height, 8);
  // Pillow's convert("RGB") of mode I clips at 255 and replicates the value into R, G and B;
  // the sum of its 192 values is 48531 for this file (Pillow 9.4).
  int64_t sum = 0;
  for (size_t i = 0; i + 2 < img.pixels.size(); i += 3) {
    EXPECT_EQ(img.pixels[i], img.pixels[i + 1]);
    EXPECT_EQ(img.pixels[i], img.pixels[i + 2]);
    sum += img.pixels[i] + img.pixels[i + 1] + img.pixels[i + 2];
  }
  EXPECT_EQ(sum, 48531);
}

// What one regression input must do today: decode to an image of the size and pixel sum given,
// or throw a DataError whose message holds every fragment of `messageHas`.
struct Expected {
  bool decodes = false;
  int width = 0;
  int height = 0;
  int64_t pixelSum = 0;  // of the 8-bit RGB pixels
  std::vector<std::string> messageHas;
  ExitCode code = ExitCode::kData;  // of the error
};

Expected decodesTo(int width, int height, int64_t pixelSum) {
  return {true, width, height, pixelSum, {}};
}
Expected failsWith(std::vector<std::string> messageHas, ExitCode code = ExitCode::kData) {
  return {false, 0, 0, 0, std::move(messageHas), code};
}

// Storages without data, as fuzz/fuzz_torchfile.cpp gives the unpickler.
class MetaStorages final : public models::StorageResolver {
 public:
  at::Tensor tensor(const models::StorageRef& storage, int64_t offset, c10::IntArrayRef sizes,
                    c10::IntArrayRef strides) override {
    return at::empty_strided(sizes, strides,
                             at::TensorOptions().dtype(storage.dtype).device(at::kMeta));
  }
};

// Every fuzz/corpus/<target>/regression-* input, by "<target>/<file>". A new finding must be
// added here with its expected outcome.
const std::map<std::string, Expected>& expectedOutcomes() {
  static const std::map<std::string, Expected> outcomes = {
      // See Gray16PngWithDamagedEndChunkDecodesLikePillow.
      {"decode/regression-gray16-double-free.png", decodesTo(8, 8, 48531)},
      // A header whose shape is not a tuple of integers (it reached a 0-byte memcpy to null); its
      // keys are damaged too, which the header parser meets first.
      {"npy/regression-empty-shape-memcpy.npy",
       failsWith({"regression-empty-shape-memcpy.npy: malformed .npy header"})},
      // A dict with a None key: c10::Dict threw a plain std::runtime_error (exit 1).
      {"torchfile/regression-none-dict-key-abort.pkl",
       failsWith({"unsupported dict key of type None"}, ExitCode::kWeights)},
      // A list appended to itself: the objects held each other and leaked.
      {"torchfile/regression-self-holding-list-leak.pkl",
       failsWith({"nests too deeply"}, ExitCode::kWeights)},
      // 60,000 nested TUPLE1s and 3,900 lists nested from the outside in through the memo (the
      // 100,000-level forms of these overflowed the stack): refused once past 200 levels.
      {"torchfile/regression-deep-tuples-stack-overflow.pkl",
       failsWith({"data.pkl nests too deeply (more than 200 levels)"}, ExitCode::kWeights)},
      {"torchfile/regression-outside-in-lists-stack-overflow.pkl",
       failsWith({"data.pkl nests too deeply (more than 200 levels)"}, ExitCode::kWeights)},
      // A run folder's config.json whose model_ema_steps is 4e68, a JSON float: converted to
      // int64 unchecked, undefined behaviour.
      {"modelfolder/regression-float-into-int64-ub.json",
       failsWith({"config.json: config: 'model_ema_steps' must be an integer of at most 63 bits"},
                 ExitCode::kWeights)},
  };
  return outcomes;
}

// Reads `bytes` as the fuzz target of `target` does (same options); the image for decode.
std::optional<Image> parseAsTheFuzzerDoes(const std::string& target,
                                          const std::vector<uint8_t>& bytes,
                                          const std::string& name) {
  if (target == "decode") {
    DecodeOptions o;
    o.maxPixels = 1 << 22;  // as fuzz/fuzz_decode.cpp
    return decodeImage(bytes.data(), bytes.size(), name, o);
  }
  if (target == "npy") {
    data::decodeNpy(reinterpret_cast<const char*>(bytes.data()), bytes.size(), name);
    return std::nullopt;
  }
  if (target == "torchfile") {
    MetaStorages storages;
    models::Unpickler(reinterpret_cast<const char*>(bytes.data()), bytes.size(), storages).parse();
    return std::nullopt;
  }
  if (target == "modelfolder") {
    // As fuzz/fuzz_modelfolder.cpp: the bytes as config.json of a folder with empty weights.
    namespace fs = std::filesystem;
    const fs::path dir =
        fs::temp_directory_path() / ("fixres-fuzz-regression-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    for (const char* file : {"config.json", "checkpoint.pth", "model.safetensors"}) {
      std::ofstream out(dir / file, std::ios::binary);
      if (std::string(file) == "config.json")
        out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    }
    struct Cleanup {
      fs::path dir;
      ~Cleanup() {
        std::error_code ec;
        fs::remove_all(dir, ec);
      }
    } cleanup{dir};
    engine::readModelFolder(dir.string());
    return std::nullopt;
  }
  throw std::logic_error("no parser for fuzz corpus '" + target + "'");
}

// Each finding ends as expected: the image it decodes to, or its typed error naming the problem.
// Any other exception, or the other outcome, fails; a crash fails the whole run.
TEST(FuzzRegression, EachFindingDecodesOrFailsWithItsExpectedError) {
  namespace fs = std::filesystem;
  const fs::path corpus = fs::path(FIXRES_SOURCE_DIR) / "fuzz" / "corpus";
  std::set<std::string> seen;
  for (const auto& entry : fs::recursive_directory_iterator(corpus)) {
    const std::string file = entry.path().filename().string();
    if (!entry.is_regular_file() || file.rfind("regression-", 0) != 0) continue;
    const std::string target = entry.path().parent_path().filename().string();
    const std::string key = target + "/" + file;
    SCOPED_TRACE(key);
    seen.insert(key);
    const auto it = expectedOutcomes().find(key);
    if (it == expectedOutcomes().end()) {
      ADD_FAILURE() << "no expected outcome for this regression input";
      continue;
    }
    const Expected& want = it->second;
    const std::vector<uint8_t> bytes = readFile(entry.path().string());
    try {
      const std::optional<Image> img = parseAsTheFuzzerDoes(target, bytes, file);
      if (!want.decodes) {
        ADD_FAILURE() << "parsed, expected an error";
        continue;
      }
      if (!img) {
        ADD_FAILURE() << "parsed, but this target gives no image";
        continue;
      }
      EXPECT_EQ(img->width, want.width);
      EXPECT_EQ(img->height, want.height);
      EXPECT_EQ(img->pixels.size(), size_t(want.width) * size_t(want.height) * 3);
      int64_t sum = 0;
      for (uint8_t v : img->pixels) sum += v;
      EXPECT_EQ(sum, want.pixelSum);
    } catch (const Error& e) {
      if (want.decodes) {
        ADD_FAILURE() << "error, expected an image: " << e.what();
        continue;
      }
      EXPECT_EQ(e.code(), want.code) << e.what();
      for (const std::string& part : want.messageHas) {
        EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
            << "message lacks '" << part << "': " << e.what();
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "unexpected exception " << typeid(e).name() << ": " << e.what();
    } catch (...) {
      ADD_FAILURE() << "unexpected exception of a type not derived from std::exception";
    }
  }
  for (const auto& outcome : expectedOutcomes()) {
    EXPECT_EQ(seen.count(outcome.first), 1u) << outcome.first << " is missing from " << corpus;
  }
}

}  // namespace
}  // namespace fixres::image
