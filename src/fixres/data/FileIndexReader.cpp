// The file-index reader: an image folder listed through its cached listing (FileIndex.h), taken
// when the index is on (train, finetune, eval); the samples are those of a plain scan.
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "fixres/data/DatasetReader.h"

namespace fixres::data {
namespace {

class FileIndexReader : public DatasetReader {
 public:
  std::string name() const override { return "indexed image folder"; }
  bool recognises(const std::string& root, const FileIndexOptions& index) const override {
    std::error_code ec;
    return index.enabled && std::filesystem::is_directory(root, ec);
  }
  std::shared_ptr<Dataset> open(const std::string& root,
                                const FileIndexOptions& index) const override {
    return openImageFolder(root, index);
  }
  // The index lists the class folders' images only: unlabelled, every image under root is walked.
  std::shared_ptr<Dataset> openUnlabelled(const std::string& root) const override {
    return openImageFiles(root);
  }
  std::vector<std::string> declaredClasses(const std::string& root) const override {
    return classFolders(root);
  }
};

}  // namespace

const DatasetReader& fileIndexReader() {
  static const FileIndexReader kReader;
  return kReader;
}

}  // namespace fixres::data
