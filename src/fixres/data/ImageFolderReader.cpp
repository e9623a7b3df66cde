// The image-folder reader: torchvision's ImageFolder layout (class folders of images, Dataset.h),
// scanned; unlabelled, every image under the root (flat folders included).
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "fixres/data/DatasetReader.h"

namespace fixres::data {
namespace {

class ImageFolderReader : public DatasetReader {
 public:
  std::string name() const override { return "image folder"; }
  bool recognises(const std::string& root, const FileIndexOptions& /*index*/) const override {
    std::error_code ec;
    return std::filesystem::is_directory(root, ec);
  }
  // A plain scan (with the index on, the file-index reader takes the folder first).
  std::shared_ptr<Dataset> open(const std::string& root,
                                const FileIndexOptions& /*index*/) const override {
    return openImageFolder(root);
  }
  std::shared_ptr<Dataset> openUnlabelled(const std::string& root) const override {
    return openImageFiles(root);
  }
  // ImageFolder's classes: the sorted sub-folders, whatever they hold.
  std::vector<std::string> declaredClasses(const std::string& root) const override {
    return classFolders(root);
  }
};

}  // namespace

const DatasetReader& imageFolderReader() {
  static const ImageFolderReader kReader;
  return kReader;
}

}  // namespace fixres::data
