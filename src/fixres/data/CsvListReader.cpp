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

// Calls row(lineNo, fields) for each non-blank line of `file` (read whole, up to
// kCsvListMaxBytes), with a UTF-8 byte-order mark and CR line ends dropped. DataError naming
// file:line for a line that does not split.
template <typename Row>
void forEachCsvRow(const std::string& file, const char* what, Row&& row) {
  std::istringstream in(readRegularFile<DataError>(file, kCsvListMaxBytes, what));
  std::vector<std::string> fields;
  size_t lineNo = 0;
  for (std::string line; std::getline(in, line);) {
    ++lineNo;
    if (lineNo == 1 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string why = csvSplitLine(line, fields);
    FIXRES_CHECK(why.empty(), DataError, file, ":", lineNo, ": ", why);
    row(lineNo, fields);
  }
  FIXRES_CHECK(!in.bad(), DataError, file, ": cannot read the ", what);
}

// A list's rows: each path joined to the CSV's folder, its label ("" when the row has none).
struct CsvRows {
  std::vector<std::string> paths, labels;
};

// Reads `file`; with `labelled`, every row is `path,label`, else `path` or `path,label`.
// DataError naming the file and line of a bad row, or the file when it holds no row.
CsvRows readCsvRows(const std::string& file, bool labelled) {
  const fs::path base = fs::path(file).parent_path();
  CsvRows rows;
  bool first = true;
  forEachCsvRow(file, "CSV list", [&](size_t lineNo, const std::vector<std::string>& fields) {
    const bool header = first && (fields == std::vector<std::string>{"path", "label"} ||
                                  (!labelled && fields == std::vector<std::string>{"path"}));
    first = false;
    if (header) return;
    const size_t least = labelled ? 2 : 1;
    FIXRES_CHECK(fields.size() >= least && fields.size() <= 2, DataError, file, ":", lineNo,
                 ": expected ", labelled ? "2 fields (path,label)" : "1 or 2 fields (path[,label])",
                 ", got ", fields.size());
    FIXRES_CHECK(!fields[0].empty(), DataError, file, ":", lineNo, ": empty path");
    FIXRES_CHECK(fields.size() == 1 || !fields[1].empty(), DataError, file, ":", lineNo,
                 ": empty label");
    rows.paths.push_back((base / fields[0]).string());
    rows.labels.push_back(fields.size() == 2 ? fields[1] : "");
  });
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

// Whether s is a whole number in [0, 2^31) written in decimal digits only.
bool wholeNumber(const std::string& s, int64_t* value) {
  if (s.empty() || s.size() > 10 ||
      !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c) != 0; }))
    return false;
  *value = std::stoll(s);
  return *value < (int64_t(1) << 31);
}

// The image `name` stands for in `folder` ("" when none).
std::string imageIn(const fs::path& folder, const std::string& name) {
  std::error_code ec;
  const fs::path p = folder / name;
  if (fs::is_regular_file(p, ec)) return p.string();
  if (!fs::path(name).extension().empty()) return "";
  for (const char* ext : {".JPEG", ".jpg", ".jpeg", ".png", ".JPG", ".PNG"}) {
    fs::path q = p;
    q += ext;
    if (fs::is_regular_file(q, ec)) return q.string();
  }
  return "";
}

// The most classes index labels may name when the model's size is not known (--num-classes's
// limit).
constexpr int64_t kMaxCsvClasses = 1000000;

}  // namespace

std::shared_ptr<Dataset> openLabelsCsv(const std::string& folder, const std::string& csv,
                                       std::vector<std::string> classes, int64_t classCount) {
  std::error_code ec;
  FIXRES_CHECK(
      fs::is_directory(folder, ec), DataError, folder,
      ": not a folder (--labels-csv labels the images of the folder --dataset-path names)");
  std::vector<std::string> paths, labels;
  std::vector<size_t> lines;
  bool first = true;
  forEachCsvRow(csv, "labels CSV", [&](size_t lineNo, const std::vector<std::string>& fields) {
    FIXRES_CHECK(fields.size() >= 2, DataError, csv, ":", lineNo, ": expected file,label, got ",
                 fields.size(), " field(s)");
    const std::string path = fields[0].empty() ? "" : imageIn(folder, fields[0]);
    const bool header = path.empty() && first;
    first = false;
    if (header) return;
    FIXRES_CHECK(!path.empty(), DataError, csv, ":", lineNo, ": no image '", fields[0], "' in ",
                 folder);
    std::istringstream words(fields[1]);
    std::string label;
    words >> label;
    FIXRES_CHECK(!label.empty(), DataError, csv, ":", lineNo, ": empty label");
    paths.push_back(path);
    labels.push_back(label);
    lines.push_back(lineNo);
  });
  FIXRES_CHECK(!paths.empty(), DataError, csv, ": no labelled image (expected file,label rows)");
  std::vector<int64_t> indices(labels.size());
  int64_t value = 0;
  const bool numeric = std::all_of(labels.begin(), labels.end(),
                                   [&](const std::string& l) { return wholeNumber(l, &value); });
  // Index labels name the model's classes: 0 .. classCount - 1 (at most kMaxCsvClasses when the
  // model's size is not known).
  const int64_t indexLimit = classCount > 0 ? classCount : kMaxCsvClasses;
  if (classes.empty()) {
    if (numeric) {
      int64_t largest = 0;
      for (size_t i = 0; i < labels.size(); ++i) {
        wholeNumber(labels[i], &value);
        FIXRES_CHECK(value < indexLimit, DataError, csv, ":", lines[i], ": label ", labels[i],
                     " is not a class of the model (", indexLimit, " classes: 0 .. ",
                     indexLimit - 1, ")");
        largest = std::max(largest, value);
      }
      for (int64_t c = 0; c < (classCount > 0 ? classCount : largest + 1); ++c)
        classes.push_back(std::to_string(c));
    } else {
      classes = labels;
      std::sort(classes.begin(), classes.end());
      classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
      FIXRES_CHECK(classCount <= 0 || static_cast<int64_t>(classes.size()) <= classCount, DataError,
                   csv, ": ", classes.size(), " distinct labels for a model of ", classCount,
                   " classes (and no class names to match them to)");
    }
  }
  std::vector<std::string> sorted = classes;
  std::vector<size_t> position(classes.size());
  for (size_t c = 0; c < classes.size(); ++c) position[c] = c;
  std::sort(position.begin(), position.end(),
            [&](size_t a, size_t b) { return classes[a] < classes[b]; });
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto it = std::lower_bound(sorted.begin(), sorted.end(), labels[i]);
    if (it != sorted.end() && *it == labels[i]) {
      indices[i] = static_cast<int64_t>(position[it - sorted.begin()]);
    } else if (wholeNumber(labels[i], &value) && value < static_cast<int64_t>(classes.size())) {
      indices[i] = value;
    } else {
      FIXRES_FAIL(DataError, csv, ":", lines[i], ": label '", labels[i], "' is not one of the ",
                  classes.size(), " classes (", classes.front(), ", ...)");
    }
  }
  return filesDataset(csv, std::move(classes), std::move(paths), std::move(indices));
}

const DatasetReader& csvListReader() {
  static const CsvListReader kReader;
  return kReader;
}

}  // namespace fixres::data
