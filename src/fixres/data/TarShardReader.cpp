// The shard-folder reader: a folder of `*.tar` files and no sub-folder (TarShards.h), read shard
// after shard, trained on with the shard sampler (each rank its own shards, in order).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fixres/data/DatasetReader.h"
#include "fixres/data/TarShards.h"

namespace fixres::data {
namespace {

class TarShardReader : public DatasetReader {
 public:
  std::string name() const override { return "shard folder"; }
  bool recognises(const std::string& root, const FileIndexOptions& /*index*/) const override {
    return isShardFolder(root);
  }
  std::shared_ptr<Dataset> open(const std::string& root,
                                const FileIndexOptions& /*index*/) const override {
    return openTarShards(root);
  }
  std::shared_ptr<Dataset> openUnlabelled(const std::string& root) const override {
    return openTarShards(root, /*labelled=*/false);
  }
  // The index's classes; none without an index that matches the files.
  std::vector<std::string> declaredClasses(const std::string& root) const override {
    return indexedShardClasses(root);
  }
  std::optional<SamplerKind> requiredSampler() const override { return SamplerKind::kShard; }
};

}  // namespace

const DatasetReader& tarShardReader() {
  static const TarShardReader kReader;
  return kReader;
}

}  // namespace fixres::data
