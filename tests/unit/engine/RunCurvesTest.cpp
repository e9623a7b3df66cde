// fixres plot's reading of metrics.jsonl: progress records by step, top-1 per epoch for every
// object of the epoch records (the evaluation before fine-tuning at epoch 0), malformed lines
// named by file:line, a cut last line skipped; the stacked SVG holds one chart per panel.
#include "fixres/engine/RunCurves.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <regex>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/plot/SvgPlot.h"

namespace fixres::engine {
namespace {

std::string writeMetrics(const std::string& text) {
  const std::string path = testing::makeTempDir("fixres_curves_") + "/metrics.jsonl";
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(RunCurvesTest, SeriesFromTheRecords) {
  const auto path = writeMetrics(
      "{\"phase\":\"before\",\"step\":0,\"eval\":{\"top1\":20.0}}\n"
      "{\"step\":1,\"epoch\":0,\"iteration\":1,\"lr\":0.1,\"loss\":null,\"images_per_s\":5}\n"
      "\n"
      "{\"step\":2,\"epoch\":0,\"iteration\":2,\"lr\":0.05,\"loss\":1.5,\"images_per_s\":5}\n"
      "{\"epoch\":1,\"step\":2,\"train\":{\"top1\":40.0,\"count\":8},\"eval\":{\"top1\":30.0}}\n"
      "{\"epoch\":2,\"eval\":{\"top1\":35.0}}\n");  // an evaluation of version 0.1.0: no step
  const RunCurves c = readRunCurves(path);
  EXPECT_EQ(c.records, 5u);
  EXPECT_EQ(c.steps, (std::vector<double>{1, 2}));
  EXPECT_EQ(c.learningRate, (std::vector<double>{0.1, 0.05}));
  ASSERT_EQ(c.loss.size(), 2u);
  EXPECT_TRUE(std::isnan(c.loss[0]));
  EXPECT_EQ(c.loss[1], 1.5);
  ASSERT_EQ(c.top1.size(), 2u);
  EXPECT_EQ(c.top1.at("eval").epochs, (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(c.top1.at("eval").top1, (std::vector<double>{20, 30, 35}));
  EXPECT_EQ(c.top1.at("train").epochs, (std::vector<double>{1}));
  EXPECT_EQ(c.top1.at("train").top1, (std::vector<double>{40}));

  const std::string svg = runCurvesSvg(c, "t1");
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" height=\"900\">", 0),
            0u)
      << svg.substr(0, 120);
  const std::regex panel("<svg x=\"0\" y=\"(\\d+)\" xmlns=");
  std::vector<std::string> offsets;
  for (std::sregex_iterator it(svg.begin(), svg.end(), panel), end; it != end; ++it)
    offsets.push_back((*it)[1]);
  EXPECT_EQ(offsets, (std::vector<std::string>{"0", "300", "600"}));
  for (const char* name : {">train loss<", ">lr<", ">held-out<", ">train (running)<"})
    EXPECT_NE(svg.find(name), std::string::npos) << name;
}

TEST(RunCurvesTest, BadLinesAreNamedByFileAndLine) {
  const auto bad = writeMetrics("{\"step\":1,\"loss\":1}\n[1,2]\n");
  try {
    readRunCurves(bad);
    ADD_FAILURE() << "read";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find(bad + ":2: not a JSON object"), std::string::npos)
        << e.what();
  }
  // A last line cut short by a write in progress is skipped.
  const auto cut = writeMetrics("{\"step\":1,\"loss\":1,\"lr\":0.1}\n{\"step\":2,\"lo");
  EXPECT_EQ(readRunCurves(cut).steps, (std::vector<double>{1}));
  // Nothing to draw yet.
  EXPECT_THROW(runCurvesSvg(readRunCurves(writeMetrics("")), "t"), DataError);
  EXPECT_THROW(readRunCurves(testing::makeTempDir("fixres_curves_") + "/none.jsonl"), DataError);
}

}  // namespace
}  // namespace fixres::engine
