// The catalogue of published weight files that --pretrained NAME names: FixRes's own (its README
// and hubconf.py) and timm's TensorFlow-ported EfficientNets (timm's default_cfgs), each listed by
// its architecture's family (models/Family.h).
#pragma once

#include <string>
#include <vector>

namespace fixres::models {

struct PublishedWeights {
  std::string name;          // what --pretrained takes (case-sensitive)
  std::string architecture;  // a registry name (models::architectureInfo)
  std::string url;
  // The file's SHA-256 as published: the whole digest, its first digits (timm's file names end
  // in -<8 hex digits>, the start of the digest: torch.hub's check_hash convention), or "" when
  // nothing is published (FixRes's files).
  std::string sha256;
  int trainSize = 224;             // the resolution it was trained at
  int testSize = 224;              // the resolution its published accuracy is measured at
  double top1 = -1;                // published ImageNet-val top-1 (%) at testSize; < 0: none given
  bool halfNormalization = false;  // inputs normalised with mean = std = 0.5 (PNASNet, timm _ap)
  bool bicubic = false;            // resized with a bicubic filter (timm), else bilinear
  std::string source;              // where the entry comes from
};

// A row of FixRes's README table (the v2 files are those of its hubconf.py): a file of its
// release folder. No checksums are published for them.
PublishedWeights fixresRelease(const char* name, const char* architecture, const char* file,
                               int trainSize, int testSize, double top1,
                               bool halfNormalization = false);
// A timm default_cfgs entry (`tag`): its GitHub release file, trained and evaluated at `size`,
// with timm's bicubic resize; the hash prefix of the file name is the start of its SHA-256.
PublishedWeights timmRelease(const char* name, const std::string& architecture, const char* owner,
                             const char* file, int size, bool halfNormalization, const char* tag);

// Every family's entries (ArchitectureFamily::published), family by family: `fixres weights
// list`'s order.
const std::vector<PublishedWeights>& catalogue();

// The entry named `name`; UsageError listing the known names for any other.
const PublishedWeights& publishedWeights(const std::string& name);

// The hash prefix a timm/torch.hub file name carries ("name-827b6e33.pth" -> "827b6e33"), ""
// when it has none.
std::string hashPrefixOfFileName(const std::string& fileName);

}  // namespace fixres::models
