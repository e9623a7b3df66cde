// The codec registry (image/Codec.h): the extensions a dataset scan lists are torchvision's
// ImageFolder IMG_EXTENSIONS (tests/reference/img_extensions.py), the listing stamp is its
// definition, and the rows are consistent (one codec an extension, one name a codec, a reader for
// every codec this build reads). Each codec's pixels are held to PIL by FormatsReferenceTest.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../Reference.h"
#include "fixres/common/Crc32c.h"
#include "fixres/image/Codec.h"
#include "fixres/image/Decode.h"

namespace fixres::image {
namespace {

TEST(CodecRegistry, ImageFolderExtensionsAreTorchvisions) {
  const std::string reference = testing::runReference("img_extensions.py", "");
  ASSERT_FALSE(reference.empty());
  std::vector<std::string> expected;
  std::istringstream in(reference);
  for (std::string e; in >> e;) expected.push_back(e);
  std::vector<std::string> listed;
  for (const Codec* c : codecs())
    if (c->imageFolder) listed.insert(listed.end(), c->extensions.begin(), c->extensions.end());
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, expected);
  for (const std::string& e : expected) {
    EXPECT_TRUE(isImageFolderExtension(e)) << e;
    EXPECT_TRUE(isImageFolderExtension("." + e)) << e;
    std::string upper = e;
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    EXPECT_TRUE(isImageFolderExtension("." + upper)) << upper;
  }
  for (const char* e : {"txt", ".bak", "", ".", "jpgx", "pbm"})
    EXPECT_FALSE(isImageFolderExtension(e)) << e;
  // The stamp: crc32c of the sorted extensions, each followed by a space.
  std::string joined;
  for (const std::string& e : expected) joined += e + " ";
  EXPECT_EQ(imageFolderListingStamp(), crc32c(joined));
}

TEST(CodecRegistry, RowsAreConsistent) {
  std::set<std::string> names, extensions;
  std::string built;
  for (const Codec* c : codecs()) {
    SCOPED_TRACE(c->name);
    EXPECT_TRUE(names.insert(c->name).second) << "a second codec of this name";
    EXPECT_FALSE(c->title.empty());
    EXPECT_FALSE(c->extensions.empty());
    for (const auto& e : c->extensions) {
      EXPECT_TRUE(extensions.insert(e).second) << "." << e << " belongs to two codecs";
      EXPECT_EQ(e.find('.'), std::string::npos) << e;
    }
    ASSERT_NE(c->sniff, nullptr);
    EXPECT_FALSE(c->sniff(nullptr, 0)) << "an empty file sniffed";
    const bool own = c == &jpegCodec() || c == &pngCodec();
    if (c->missing.empty() && !own) {
      EXPECT_NE(c->readSize, nullptr);
      EXPECT_NE(c->decodeRgb, nullptr);
    }
    if (c->missing.empty()) built += (built.empty() ? "" : " ") + c->name;
    EXPECT_NE(formatTitles().find(c->title), std::string::npos);
  }
  EXPECT_EQ(builtFormats(), built);
  EXPECT_EQ(builtFormats().rfind("jpeg png", 0), 0u);
  const uint8_t text[] = "plain text, no image";
  EXPECT_EQ(sniffCodec(text, sizeof(text)), nullptr);
}

}  // namespace
}  // namespace fixres::image
