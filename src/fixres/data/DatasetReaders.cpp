// The registration list: every dataset reader, in the order they are asked whether a root is
// theirs (the first that recognises it reads it), and the factory over them. A new reader is its
// own file plus its line here.
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/data/DatasetReader.h"

namespace fixres::data {

// Each reader's registration, in its own file.
const DatasetReader& tarShardReader();     // TarShardReader.cpp
const DatasetReader& csvListReader();      // CsvListReader.cpp
const DatasetReader& fileIndexReader();    // FileIndexReader.cpp
const DatasetReader& imageFolderReader();  // ImageFolderReader.cpp

DatasetReader::~DatasetReader() = default;

std::optional<SamplerKind> DatasetReader::requiredSampler() const {
  return std::nullopt;
}

const std::vector<const DatasetReader*>& datasetReaders() {
  // Tar shards before image folders (a shard folder is a folder too); the file index before the
  // plain scan (it recognises folders only when the index is on).
  static const std::vector<const DatasetReader*> kReaders = {
      &tarShardReader(),
      &csvListReader(),
      &fileIndexReader(),
      &imageFolderReader(),
  };
  return kReaders;
}

const DatasetReader& readerFor(const std::string& root, const FileIndexOptions& index) {
  for (const DatasetReader* reader : datasetReaders()) {
    if (reader->recognises(root, index)) return *reader;
  }
  std::error_code ec;
  FIXRES_CHECK(std::filesystem::exists(root, ec), DataError, "dataset ", root, " does not exist");
  std::string names;
  for (const DatasetReader* reader : datasetReaders())
    names += (names.empty() ? "" : ", ") + reader->name();
  FIXRES_FAIL(DataError, "dataset ", root, ": no reader takes it (", names, ")");
}

std::shared_ptr<Dataset> openDataset(const std::string& root, const FileIndexOptions& index) {
  return readerFor(root, index).open(root, index);
}

std::shared_ptr<Dataset> openUnlabelledImages(const std::string& root) {
  return readerFor(root).openUnlabelled(root);
}

std::vector<std::string> declaredClasses(const std::string& root) {
  return readerFor(root).declaredClasses(root);
}

}  // namespace fixres::data
