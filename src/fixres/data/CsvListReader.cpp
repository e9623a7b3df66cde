// The CSV-list reader: a `.csv` file of `path,label` lines (docs/data.md, "CSV lists"). Fields are
// read as Python's csv module reads them (a field holding a comma or a quote is double-quoted, a
// quote inside doubled; spaces kept); LF or CRLF line ends, a UTF-8 byte-order mark, blank lines
// and a first line `path,label` are skipped. Paths are relative to the CSV's folder (absolute
// ones kept); labels are class names, sorted to indices as ImageFolder sorts its class folders;
// samples keep the file's order. A root that does not exist stands for `<root>.csv` when that
// file exists, so --imnet-path DIR reads DIR/train.csv and DIR/val.csv.
#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "fixres/common/Error.h"
#include "fixres/common/Files.h"
#include "fixres/data/DatasetReader.h"
#include "fixres/image/Decode.h"

namespace fixres::data {
namespace {

namespace fs = std::filesystem;

// The largest list read: 1 GiB (an ImageNet list, 1.28 M rows, is about 60 MB).
constexpr uint64_t kCsvListMaxBytes = uint64_t(1) << 30;

// The CSV file `root` stands for: root itself when it is a regular file named `*.csv` (any case),
// `<root>.csv` when root does not exist and that is a regular file; "" otherwise.
std::string csvListFile(const std::string& root) {
  std::error_code ec;
  std::string ext = fs::path(root).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".csv") return fs::is_regular_file(root, ec) ? root : "";
  if (!fs::exists(root, ec) && fs::is_regular_file(root + ".csv", ec)) return root + ".csv";
  return "";
}

// Splits one line (without its line end) into `fields` as Python's csv module does with its
// default dialect, but a quoted field must end on its line, at a comma or the line's end.
// Returns what is wrong with the line, "" when nothing.
std::string csvSplitLine(const std::string& line, std::vector<std::string>& fields) {
  fields.clear();
  size_t i = 0;
  for (;;) {
    std::string field;
    if (i < line.size() && line[i] == '"') {
      for (++i;; ++i) {
        if (i >= line.size()) return "unterminated quoted field";
        if (line[i] == '"') {
          if (i + 1 >= line.size() || line[i + 1] != '"') break;
          ++i;  // "" stands for one quote
        }
        field += line[i];
      }
      ++i;  // the closing quote
      if (i < line.size() && line[i] != ',')
        return "text after the closing quote of a quoted field (quote the whole field)";
    } else {
      while (i < line.size() && line[i] != ',') field += line[i++];
    }
    fields.push_back(std::move(field));
    if (i >= line.size()) return "";
    ++i;  // the comma
  }
}

// A list's rows: each path joined to the CSV's folder, its label ("" when the row has none).
struct CsvRows {
  std::vector<std::string> paths, labels;
};

// Reads `file`; with `labelled`, every row is `path,label`, else `path` or `path,label`.
// DataError naming the file and line of a bad row, or the file when it holds no row.
CsvRows readCsvRows(const std::string& file, bool labelled) {
  std::istringstream in(readRegularFile<DataError>(file, kCsvListMaxBytes, "CSV list"));
  const fs::path base = fs::path(file).parent_path();
  CsvRows rows;
  std::vector<std::string> fields;
  bool first = true;
  size_t lineNo = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    if (lineNo == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string why = csvSplitLine(line, fields);
    FIXRES_CHECK(why.empty(), DataError, file, ":", lineNo, ": ", why);
    const bool header = first && (fields == std::vector<std::string>{"path", "label"} ||
                                  (!labelled && fields == std::vector<std::string>{"path"}));
    first = false;
    if (header) continue;
    const size_t least = labelled ? 2 : 1;
    FIXRES_CHECK(fields.size() >= least && fields.size() <= 2, DataError, file, ":", lineNo,
                 ": expected ", labelled ? "2 fields (path,label)" : "1 or 2 fields (path[,label])",
                 ", got ", fields.size());
    FIXRES_CHECK(!fields[0].empty(), DataError, file, ":", lineNo, ": empty path");
    FIXRES_CHECK(fields.size() == 1 || !fields[1].empty(), DataError, file, ":", lineNo,
                 ": empty label");
    rows.paths.push_back((base / fields[0]).string());
    rows.labels.push_back(fields.size() == 2 ? fields[1] : "");
  }
  FIXRES_CHECK(!in.bad(), DataError, file, ": cannot read the CSV list");
  FIXRES_CHECK(!rows.paths.empty(), DataError, file, ": no sample (expected path,label lines)");
  return rows;
}

// The sorted distinct labels of `rows` (those it has).
std::vector<std::string> csvClassNames(const CsvRows& rows) {
  std::vector<std::string> classes;
  for (const auto& l : rows.labels) {
    if (!l.empty()) classes.push_back(l);
  }
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  return classes;
}

class CsvListReader : public DatasetReader {
 public:
  std::string name() const override { return "CSV list"; }
  bool recognises(const std::string& root, const FileIndexOptions& /*index*/) const override {
    return !csvListFile(root).empty();
  }
  std::shared_ptr<Dataset> open(const std::string& root,
                                const FileIndexOptions& /*index*/) const override {
    const std::string file = csvFile(root);
    CsvRows rows = readCsvRows(file, /*labelled=*/true);
    std::vector<std::string> classes = csvClassNames(rows);
    std::vector<int64_t> labels;
    labels.reserve(rows.labels.size());
    for (const auto& l : rows.labels)
      labels.push_back(std::lower_bound(classes.begin(), classes.end(), l) - classes.begin());
    return filesDataset(file, std::move(classes), std::move(rows.paths), std::move(labels));
  }
  // Rows may leave the label out; any label is ignored.
  std::shared_ptr<Dataset> openUnlabelled(const std::string& root) const override {
    const std::string file = csvFile(root);
    CsvRows rows = readCsvRows(file, /*labelled=*/false);
    std::vector<int64_t> labels(rows.paths.size(), 0);
    return filesDataset(file, std::vector<std::string>{""}, std::move(rows.paths),
                        std::move(labels));
  }
  // The label names the list holds (none when its rows are paths only).
  std::vector<std::string> declaredClasses(const std::string& root) const override {
    return csvClassNames(readCsvRows(csvFile(root), /*labelled=*/false));
  }

 private:
  static std::string csvFile(const std::string& root) {
    const std::string file = csvListFile(root);
    FIXRES_CHECK(!file.empty(), DataError, root, ": not a CSV list (a regular file named *.csv)");
    return file;
  }
};

}  // namespace

const DatasetReader& csvListReader() {
  static const CsvListReader kReader;
  return kReader;
}

}  // namespace fixres::data
