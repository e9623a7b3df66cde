// The published weight files, with what their publishers say about them.
#include "fixres/models/Catalogue.h"

#include <regex>

#include "fixres/common/Error.h"

namespace fixres::models {
namespace {

constexpr const char* kFixResFolder =
    "https://dl.fbaipublicfiles.com/FixRes_data/FixRes_Pretrained_Models/";

// A row of FixRes's README table (the v2 files are those of its hubconf.py). No checksums are
// published for them.
PublishedWeights fixres(const char* name, const char* architecture, const char* file, int trainSize,
                        int testSize, double top1, bool halfNormalization = false) {
  PublishedWeights w;
  w.name = name;
  w.architecture = architecture;
  w.url = std::string(kFixResFolder) + file;
  w.trainSize = trainSize;
  w.testSize = testSize;
  w.top1 = top1;
  w.halfNormalization = halfNormalization;
  w.source = "FixRes README";
  return w;
}

// A timm default_cfgs entry (`tag`): its GitHub release file, trained and evaluated at `size`,
// with timm's bicubic resize; the hash prefix of the file name is the start of its SHA-256.
PublishedWeights timm(const char* name, const char* variant, const char* owner, const char* file,
                      int size, bool halfNormalization, const char* tag) {
  PublishedWeights w;
  w.name = name;
  w.architecture = std::string("tf_efficientnet_") + variant;
  w.url = std::string("https://github.com/") + owner +
          "/pytorch-image-models/releases/download/v0.1-weights/" + file;
  w.sha256 = hashPrefixOfFileName(file);
  w.trainSize = size;
  w.testSize = size;
  w.halfNormalization = halfNormalization;
  w.bicubic = true;
  w.source = std::string("timm ") + tag;
  return w;
}

}  // namespace

std::string hashPrefixOfFileName(const std::string& fileName) {
  // torch.hub's HASH_REGEX, r"-([a-f0-9]*)\.", as timm's check_hash applies it.
  static const std::regex kHash(R"(-([a-f0-9]*)\.)");
  std::smatch m;
  return std::regex_search(fileName, m, kHash) ? m[1].str() : "";
}

const std::vector<PublishedWeights>& catalogue() {
  static const std::vector<PublishedWeights> kEntries = {
      // FixRes: https://github.com/facebookresearch/FixRes (README, hubconf.py). Top-1 at the
      // test resolution, ImageNet val. (v2: fine-tuned with transforms_v2: flip, shifted centre
      // crop, colour jitter.)
      fixres("FixResNet50", "ResNet50", "ResNet50_v2.pth", 224, 384, 79.1),
      fixres("FixResNet50_v1", "ResNet50", "ResNetFinetune.pth", 224, 384, 79.0),
      fixres("FixResNet50CutMix", "ResNet50", "ResNet50_CutMix_v2.pth", 224, 320, 79.8),
      fixres("FixResNet50CutMix_v1", "ResNet50", "ResNetCutMix.pth", 224, 320, 79.7),
      fixres("FixResNeXt101_32x48d", "IGAM_Resnext101_32x48d", "ResNext101_32x48d_v2.pth", 224, 320,
             86.4),
      fixres("FixResNeXt101_32x48d_v1", "IGAM_Resnext101_32x48d", "ResNeXt_101_32x48d.pth", 224,
             320, 86.3),
      fixres("FixPNASNet", "PNASNet", "PNASNet.pth", 331, 480, 83.7, /*halfNormalization=*/true),
      fixres("ResNet50_no_adaptation", "ResNet50", "ResNet_no_adaptation.pth", 224, 224, 77.0),
      // timm: https://github.com/huggingface/pytorch-image-models, timm/models/efficientnet.py
      // default_cfgs (AutoAugment, AdvProp, Noisy Student, RandAugment weights).
      timm("tf_efficientnet_b0_aa", "b0", "rwightman", "tf_efficientnet_b0_aa-827b6e33.pth", 224,
           false, "tf_efficientnet_b0.aa_in1k"),
      timm("tf_efficientnet_b1_aa", "b1", "rwightman", "tf_efficientnet_b1_aa-ea7a6ee0.pth", 240,
           false, "tf_efficientnet_b1.aa_in1k"),
      timm("tf_efficientnet_b2_aa", "b2", "rwightman", "tf_efficientnet_b2_aa-60c94f97.pth", 260,
           false, "tf_efficientnet_b2.aa_in1k"),
      timm("tf_efficientnet_b3_aa", "b3", "rwightman", "tf_efficientnet_b3_aa-84b4657e.pth", 300,
           false, "tf_efficientnet_b3.aa_in1k"),
      timm("tf_efficientnet_b4_aa", "b4", "rwightman", "tf_efficientnet_b4_aa-818f208c.pth", 380,
           false, "tf_efficientnet_b4.aa_in1k"),
      timm("tf_efficientnet_b5_aa", "b5", "huggingface", "tf_efficientnet_b5_aa-99018a74.pth", 456,
           false, "tf_efficientnet_b5.aa_in1k"),
      timm("tf_efficientnet_b6_aa", "b6", "rwightman", "tf_efficientnet_b6_aa-80ba17e4.pth", 528,
           false, "tf_efficientnet_b6.aa_in1k"),
      timm("tf_efficientnet_b7_aa", "b7", "huggingface", "tf_efficientnet_b7_aa-076e3472.pth", 600,
           false, "tf_efficientnet_b7.aa_in1k"),
      timm("tf_efficientnet_b0_ap", "b0", "rwightman", "tf_efficientnet_b0_ap-f262efe1.pth", 224,
           true, "tf_efficientnet_b0.ap_in1k"),
      timm("tf_efficientnet_b1_ap", "b1", "rwightman", "tf_efficientnet_b1_ap-44ef0a3d.pth", 240,
           true, "tf_efficientnet_b1.ap_in1k"),
      timm("tf_efficientnet_b2_ap", "b2", "rwightman", "tf_efficientnet_b2_ap-2f8e7636.pth", 260,
           true, "tf_efficientnet_b2.ap_in1k"),
      timm("tf_efficientnet_b3_ap", "b3", "rwightman", "tf_efficientnet_b3_ap-aad25bdd.pth", 300,
           true, "tf_efficientnet_b3.ap_in1k"),
      timm("tf_efficientnet_b4_ap", "b4", "rwightman", "tf_efficientnet_b4_ap-dedb23e6.pth", 380,
           true, "tf_efficientnet_b4.ap_in1k"),
      timm("tf_efficientnet_b5_ap", "b5", "rwightman", "tf_efficientnet_b5_ap-9e82fae8.pth", 456,
           true, "tf_efficientnet_b5.ap_in1k"),
      timm("tf_efficientnet_b6_ap", "b6", "rwightman", "tf_efficientnet_b6_ap-4ffb161f.pth", 528,
           true, "tf_efficientnet_b6.ap_in1k"),
      timm("tf_efficientnet_b7_ap", "b7", "rwightman", "tf_efficientnet_b7_ap-ddb28fec.pth", 600,
           true, "tf_efficientnet_b7.ap_in1k"),
      timm("tf_efficientnet_b8_ap", "b8", "rwightman", "tf_efficientnet_b8_ap-00e169fa.pth", 672,
           true, "tf_efficientnet_b8.ap_in1k"),
      timm("tf_efficientnet_b0_ns", "b0", "rwightman", "tf_efficientnet_b0_ns-c0e6a31c.pth", 224,
           false, "tf_efficientnet_b0.ns_jft_in1k"),
      timm("tf_efficientnet_b1_ns", "b1", "rwightman", "tf_efficientnet_b1_ns-99dd0c41.pth", 240,
           false, "tf_efficientnet_b1.ns_jft_in1k"),
      timm("tf_efficientnet_b2_ns", "b2", "rwightman", "tf_efficientnet_b2_ns-00306e48.pth", 260,
           false, "tf_efficientnet_b2.ns_jft_in1k"),
      timm("tf_efficientnet_b3_ns", "b3", "rwightman", "tf_efficientnet_b3_ns-9d44bf68.pth", 300,
           false, "tf_efficientnet_b3.ns_jft_in1k"),
      timm("tf_efficientnet_b4_ns", "b4", "rwightman", "tf_efficientnet_b4_ns-d6313a46.pth", 380,
           false, "tf_efficientnet_b4.ns_jft_in1k"),
      timm("tf_efficientnet_b5_ns", "b5", "rwightman", "tf_efficientnet_b5_ns-6f26d0cf.pth", 456,
           false, "tf_efficientnet_b5.ns_jft_in1k"),
      timm("tf_efficientnet_b6_ns", "b6", "rwightman", "tf_efficientnet_b6_ns-51548356.pth", 528,
           false, "tf_efficientnet_b6.ns_jft_in1k"),
      timm("tf_efficientnet_b7_ns", "b7", "rwightman", "tf_efficientnet_b7_ns-1dbc32de.pth", 600,
           false, "tf_efficientnet_b7.ns_jft_in1k"),
      timm("tf_efficientnet_l2_ns", "l2", "rwightman", "tf_efficientnet_l2_ns-df73bb44.pth", 800,
           false, "tf_efficientnet_l2.ns_jft_in1k"),
      timm("tf_efficientnet_l2_ns_475", "l2", "rwightman", "tf_efficientnet_l2_ns_475-bebbd00a.pth",
           475, false, "tf_efficientnet_l2.ns_jft_in1k_475"),
      timm("tf_efficientnet_b5_ra", "b5", "rwightman", "tf_efficientnet_b5_ra-9a3e5369.pth", 456,
           false, "tf_efficientnet_b5.ra_in1k"),
      timm("tf_efficientnet_b7_ra", "b7", "rwightman", "tf_efficientnet_b7_ra-6c08e654.pth", 600,
           false, "tf_efficientnet_b7.ra_in1k"),
      timm("tf_efficientnet_b8_ra", "b8", "rwightman", "tf_efficientnet_b8_ra-572d5dd9.pth", 672,
           false, "tf_efficientnet_b8.ra_in1k"),
  };
  return kEntries;
}

const PublishedWeights& publishedWeights(const std::string& name) {
  for (const auto& w : catalogue())
    if (w.name == name) return w;
  std::string known;
  for (const auto& w : catalogue()) known += (known.empty() ? "" : ", ") + w.name;
  FIXRES_FAIL(UsageError, "--pretrained: unknown name '", name, "' (known: ", known,
              "; see 'fixres weights list')");
}

}  // namespace fixres::models
