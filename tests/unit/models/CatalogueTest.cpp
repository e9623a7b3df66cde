// The catalogue of published weights: unique names, architectures fixres builds, URLs fixres
// can cache, and timm's hash prefixes taken from the file names.
#include "fixres/models/Catalogue.h"

#include <gtest/gtest.h>

#include <set>

#include "fixres/common/Download.h"
#include "fixres/common/Error.h"
#include "fixres/models/Family.h"
#include "fixres/models/Registry.h"

namespace fixres::models {
namespace {

TEST(Catalogue, EntriesAreConsistent) {
  std::set<std::string> names, urls;
  for (const auto& w : catalogue()) {
    SCOPED_TRACE(w.name);
    EXPECT_TRUE(names.insert(w.name).second) << "duplicate name";
    EXPECT_TRUE(urls.insert(w.url).second) << "duplicate URL";
    EXPECT_EQ(w.url.rfind("https://", 0), 0u);
    EXPECT_NO_THROW(cachePathFor("/c", w.url));
    EXPECT_NO_THROW(parseRemoteFile(remoteFileSpec({w.url, w.sha256})));
    EXPECT_NO_THROW(architectureInfo(w.architecture));
    EXPECT_GE(w.testSize, w.trainSize);
    if (w.source.rfind("timm", 0) == 0) {
      EXPECT_EQ(w.sha256.size(), 8u);
      EXPECT_NE(w.url.find("-" + w.sha256 + ".pth"), std::string::npos);
      EXPECT_TRUE(w.bicubic);
    } else {
      EXPECT_EQ(w.sha256, "") << "FixRes publishes no checksums";
      EXPECT_GT(w.top1, 0);
    }
  }
}

TEST(Catalogue, NamesAreCaseSensitiveAndUnknownOnesListTheKnown) {
  const auto& w = publishedWeights("FixResNet50");
  EXPECT_EQ(w.architecture, "ResNet50");
  EXPECT_EQ(w.url,
            "https://dl.fbaipublicfiles.com/FixRes_data/FixRes_Pretrained_Models/ResNet50_v2.pth");
  EXPECT_EQ(w.trainSize, 224);
  EXPECT_EQ(w.testSize, 384);
  EXPECT_EQ(publishedWeights("tf_efficientnet_b0_aa").sha256, "827b6e33");
  EXPECT_TRUE(publishedWeights("tf_efficientnet_b0_ap").halfNormalization);
  try {
    publishedWeights("fixresnet50");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("'fixresnet50'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("FixResNeXt101_32x48d"), std::string::npos);
  }
}

// Each family lists only weights of its own architectures, and the catalogue is every family's
// list, family by family.
TEST(Catalogue, EachFamilyListsItsOwnWeights) {
  size_t total = 0;
  for (const ArchitectureFamily* f : architectureFamilies()) {
    if (f->published == nullptr) continue;
    for (const auto& w : f->published()) {
      SCOPED_TRACE(f->name + ": " + w.name);
      EXPECT_EQ(architectureInfo(w.architecture).family, f);
      ASSERT_LT(total, catalogue().size());
      EXPECT_EQ(catalogue()[total].name, w.name);
      ++total;
    }
  }
  EXPECT_EQ(total, catalogue().size());
  EXPECT_EQ(catalogue().size(), 38u);  // FixRes README: 8 files; timm tf_efficientnet: 30
}

TEST(Catalogue, HashPrefixOfFileNameFollowsTorchHub) {
  EXPECT_EQ(hashPrefixOfFileName("tf_efficientnet_b0_aa-827b6e33.pth"), "827b6e33");
  EXPECT_EQ(hashPrefixOfFileName("tf_efficientnet_l2_ns_475-bebbd00a.pth"), "bebbd00a");
  EXPECT_EQ(hashPrefixOfFileName("ResNet50_v2.pth"), "");
}

}  // namespace
}  // namespace fixres::models
