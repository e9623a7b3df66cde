// Progressive resizing against FFCV's get_resolution run with numpy
// (tests/reference/progressive_resize.py): every epoch of several ramps, strides 32 and 8,
// including ramps whose interpolated values fall exactly half-way between two multiples.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "../Reference.h"
#include "fixres/common/Error.h"
#include "fixres/engine/ProgressiveResize.h"

namespace fixres::engine {
namespace {

TEST(ProgressiveResizeTest, EqualsFfcvGetResolution) {
  struct Case {
    int minRes, maxRes, startRamp, endRamp, stride, epochs;
  };
  // FFCV's ResNet-50 recipe (160 -> 192 over epochs 11-13 of 16, and 76 -> 88 of 88), ramps
  // with ties (16 -> 48 by 8 over 4 epochs: 24 = 3 x 8 exactly, 28 half-way), flat ramps.
  const std::vector<Case> cases = {{160, 192, 11, 13, 32, 16}, {160, 192, 65, 76, 32, 88},
                                   {16, 48, 0, 4, 8, 6},       {16, 40, 2, 10, 8, 12},
                                   {128, 224, 3, 20, 32, 24},  {64, 64, 0, 5, 8, 6},
                                   {24, 36, 1, 7, 8, 9}};
  std::ostringstream input;
  std::vector<int> ours;
  for (const auto& c : cases) {
    ProgressiveResize p{c.minRes, c.maxRes, c.startRamp, c.endRamp};
    EXPECT_NO_THROW(p.validate(c.epochs));
    for (int e = 0; e < c.epochs; ++e) {
      input << c.minRes << ' ' << c.maxRes << ' ' << c.startRamp << ' ' << c.endRamp << ' ' << e
            << ' ' << c.stride << '\n';
      ours.push_back(progressiveResolution(p, e, c.stride));
    }
  }
  const std::string dir = testing::makeTempDir("fixres_progressive_");
  std::ofstream(dir + "/cases.txt") << input.str();
  bool ok = false;
  const std::string out =
      testing::runReference("progressive_resize.py", "< " + dir + "/cases.txt", &ok);
  ASSERT_TRUE(ok);
  std::istringstream in(out);
  std::vector<int> ffcv;
  for (int v; in >> v;) ffcv.push_back(v);
  ASSERT_EQ(ffcv.size(), ours.size());
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_EQ(ours[i], ffcv[i]) << "case line " << i;
}

TEST(ProgressiveResizeTest, BadRampsNameTheFlag) {
  auto message = [](ProgressiveResize p, int epochs) -> std::string {
    try {
      p.validate(epochs);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(message({160, 128, 0, 5}, 10).find("--max-res"), std::string::npos);
  EXPECT_NE(message({4, 128, 0, 5}, 10).find("--min-res"), std::string::npos);
  EXPECT_NE(message({128, 160, 5, 5}, 10).find("--end-ramp"), std::string::npos);
  EXPECT_NE(message({128, 160, 2, 12}, 10).find("--end-ramp"), std::string::npos);
  EXPECT_EQ(message({0, 0, 0, 0}, 10), "");  // off
}

}  // namespace
}  // namespace fixres::engine
