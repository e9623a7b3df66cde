// Command-line image inputs gathered into one dataset of files.
#include "fixres/data/ImageInputs.h"

#include <filesystem>
#include <sstream>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"

namespace fixres::data {
namespace {

namespace fs = std::filesystem;

bool isListFile(const std::string& path) {
  const std::string ext = fs::path(path).extension().string();
  return ext == ".txt" || ext == ".lst";
}

// The paths of a list's lines, relative ones taken from `base`.
void readListLines(std::istream& in, const fs::path& base, const std::string& listName,
                   std::vector<std::string>& out) {
  std::string line;
  size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    FIXRES_CHECK(line.find('\0') == std::string::npos, DataError, "the list ", listName, ": line ",
                 number,
                 " holds a NUL byte (a list has one path per line: 'find -print', not -print0)");
    const fs::path p(line);
    out.push_back(p.is_absolute() || base.empty() ? line : (base / p).string());
  }
  FIXRES_CHECK(!in.bad(), DataError, "cannot read the list ", listName, " after line ", number);
}

}  // namespace

std::shared_ptr<Dataset> openImageInputs(const std::vector<std::string>& inputs,
                                         std::istream& standardInput) {
  std::vector<std::string> paths;
  bool readStdin = false;
  for (const auto& input : inputs) {
    if (input == "-") {
      FIXRES_CHECK(!readStdin, DataError, "'-' (standard input) is named twice");
      readStdin = true;
      readListLines(standardInput, fs::path(), "on standard input", paths);
      continue;
    }
    std::error_code ec;
    const auto status = fs::status(input, ec);
    FIXRES_CHECK(!ec && fs::exists(status), DataError, "input ", input, " does not exist");
    if (fs::is_directory(status)) {
      auto files = openImageFiles(input);
      for (size_t i = 0; i < files->size(); ++i) paths.push_back(files->name(i));
    } else if (isListFile(input)) {
      std::istringstream list(readRegularFile<DataError>(input, kReadFileMaxBytes, "image list"));
      readListLines(list, fs::path(input).parent_path(), input, paths);
    } else {
      paths.push_back(input);
    }
  }
  FIXRES_CHECK(!paths.empty(), DataError, "no image to read in the inputs given");
  std::vector<int64_t> labels(paths.size(), 0);
  std::string source = inputs.size() == 1 ? inputs[0] : "the inputs";
  return filesDataset(std::move(source), {""}, std::move(paths), std::move(labels));
}

}  // namespace fixres::data
