// The CSV-list reader against Python's csv module (tests/reference/csv_list.py reads the same
// file: quoted fields, doubled quotes, CRLF, a byte-order mark, blank rows, a header; classes
// sorted like ImageFolder's): the samples, labels and classes, the bytes read, the unlabelled
// form, `<root>.csv` for a missing root; bad lines as DataErrors naming file and line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include <nlohmann/json.hpp>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/data/DatasetReader.h"

namespace fixres::data {
namespace {

namespace fs = std::filesystem;

void writeCsvText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::string csvFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The DataError message of opening `file` (labelled or not), "" when it opens.
std::string csvOpenError(const std::string& file, bool labelled = true) {
  try {
    if (labelled) {
      openDataset(file);
    } else {
      openUnlabelledImages(file);
    }
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(DataCsvList, ReadsWhatPythonsCsvModuleReads) {
  const std::string dir = fixres::testing::makeTempDir("fixres_csv_");
  const std::string other = fixres::testing::makeTempDir("fixres_csv_abs_");
  const char* files[] = {"img/b.jpg", "img/a b.png", "img/c,d.jpg", "img/q\"uote.jpg"};
  int k = 0;
  for (const char* f : files) writeCsvText(dir + "/" + f, std::string(40 + 7 * k++, 'x'));
  writeCsvText(other + "/x.jpg", "absolute");
  const std::string csv = dir + "/list.csv";
  writeCsvText(csv,
               "\xEF\xBB\xBFpath,label\r\n"
               "img/b.jpg,dog\r\n"
               "\"img/a b.png\",cat\n"
               "\n"
               "\"img/c,d.jpg\",\"Cat\"\n"
               "\"img/q\"\"uote.jpg\",dog\n" +
                   other + "/x.jpg,a label with spaces\n" + "img/../img/b.jpg,cat");
  const auto ref =
      nlohmann::json::parse(fixres::testing::runReference("csv_list.py", "'" + csv + "'"));
  ASSERT_EQ(ref["samples"].size(), 6u);

  const DatasetReader& reader = readerFor(csv);
  EXPECT_EQ(reader.name(), "CSV list");
  EXPECT_FALSE(reader.requiredSampler().has_value());
  auto ds = openDataset(csv);
  EXPECT_EQ(ds->source(), csv);
  EXPECT_EQ(ds->classes(), ref["classes"].get<std::vector<std::string>>());
  EXPECT_EQ(declaredClasses(csv), ref["classes"].get<std::vector<std::string>>());
  ASSERT_EQ(ds->size(), ref["samples"].size());
  for (size_t i = 0; i < ds->size(); ++i) {
    const std::string path = ref["samples"][i][0].get<std::string>();
    EXPECT_EQ(ds->name(i), path) << i;
    EXPECT_EQ(ds->label(i), ref["samples"][i][1].get<int64_t>()) << i;
    const RawSample s = ds->fetch(i);
    EXPECT_EQ(std::string(s.data(), s.data() + s.size()), csvFileBytes(path)) << path;
  }

  auto unlabelled = openUnlabelledImages(csv);
  EXPECT_EQ(unlabelled->classes(), std::vector<std::string>{""});
  ASSERT_EQ(unlabelled->size(), ref["unlabelled"].size());
  for (size_t i = 0; i < unlabelled->size(); ++i) {
    EXPECT_EQ(unlabelled->name(i), ref["unlabelled"][i].get<std::string>()) << i;
    EXPECT_EQ(unlabelled->label(i), 0);
  }

  // DIR/train stands for DIR/train.csv when there is no DIR/train (--imnet-path DIR); the
  // extension in any case; a folder named *.csv is a folder.
  fs::copy_file(csv, dir + "/train.csv");
  EXPECT_EQ(readerFor(dir + "/train").name(), "CSV list");
  EXPECT_EQ(openDataset(dir + "/train")->source(), dir + "/train.csv");
  EXPECT_EQ(openDataset(dir + "/train")->size(), ref["samples"].size());
  fs::copy_file(csv, dir + "/UPPER.CSV");
  EXPECT_EQ(readerFor(dir + "/UPPER.CSV").name(), "CSV list");
  fs::create_directories(dir + "/folder.csv/class");
  EXPECT_EQ(readerFor(dir + "/folder.csv").name(), "image folder");
  fs::create_directories(dir + "/both");
  writeCsvText(dir + "/both.csv", "img/b.jpg,dog\n");
  EXPECT_EQ(readerFor(dir + "/both").name(), "image folder");  // the folder exists: it wins
}

TEST(DataCsvList, BadLinesAreDataErrorsNamingFileAndLine) {
  const std::string dir = fixres::testing::makeTempDir("fixres_csvbad_");
  // content, line of the error, what the message says
  const struct {
    std::string text;
    int line;
    std::string says;
  } cases[] = {
      {"path,label\na.jpg,cat\nb.jpg\n", 3, "expected 2 fields (path,label), got 1"},
      {"a.jpg,cat,extra\n", 1, "expected 2 fields (path,label), got 3"},
      {"a.jpg,cat\r\n\r\n,dog\r\n", 3, "empty path"},
      {"a.jpg,\n", 1, "empty label"},
      {"a.jpg,cat\n\"b.jpg,dog\n", 2, "unterminated quoted field"},
      {"\"a\"b.jpg,cat\n", 1, "text after the closing quote"},
      {"path\na.jpg,cat\n", 1, "expected 2 fields (path,label), got 1"},
  };
  int n = 0;
  for (const auto& c : cases) {
    const std::string csv = dir + "/bad" + std::to_string(n++) + ".csv";
    writeCsvText(csv, c.text);
    const std::string e = csvOpenError(csv);
    EXPECT_NE(e.find(csv + ":" + std::to_string(c.line) + ": " + c.says), std::string::npos)
        << "got: " << e << "\nfor: " << c.text;
  }
  // A header only, or nothing: no sample.
  writeCsvText(dir + "/empty.csv", "path,label\n\n");
  EXPECT_NE(csvOpenError(dir + "/empty.csv").find(dir + "/empty.csv: no sample"),
            std::string::npos);
  // Unlabelled, a row may be a path alone (and the header `path`); three fields are still bad.
  writeCsvText(dir + "/paths.csv", "path\na.jpg\nb.jpg,cat\n");
  EXPECT_EQ(csvOpenError(dir + "/paths.csv", /*labelled=*/false), "");
  EXPECT_EQ(openUnlabelledImages(dir + "/paths.csv")->size(), 2u);
  EXPECT_EQ(declaredClasses(dir + "/paths.csv"), std::vector<std::string>{"cat"});
  writeCsvText(dir + "/three.csv", "a.jpg\nb.jpg,cat,x\n");
  EXPECT_NE(csvOpenError(dir + "/three.csv", false)
                .find(dir + "/three.csv:2: expected 1 or 2 fields (path[,label]), got 3"),
            std::string::npos);
  // A listed file that is not there fails when read, naming it (the bad-image policy decides).
  writeCsvText(dir + "/missing.csv", "nowhere.jpg,cat\n");
  auto ds = openDataset(dir + "/missing.csv");
  try {
    ds->fetch(0);
    ADD_FAILURE() << "a missing file read";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/nowhere.jpg"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fixres::data
