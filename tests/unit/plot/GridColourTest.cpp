// The value grid's colour range (plot/GridSvg.h): the lower Tukey fence, checked against the
// quantiles worked by hand (numpy's linear interpolation between order statistics), so that one
// outlier does not spend the colour scale.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fixres/plot/GridSvg.h"

namespace fixres {
namespace {

TEST(GridColour, AnOutlierIsClippedAtTheLowerFence) {
  // Sorted 60, 85, 86, 87, 88: Q1 = 85 (position 1), Q3 = 87 (position 3), IQR 2, fence 82.
  const ColourRange r = colourRange({86, 60, 88, 85, 87});
  EXPECT_DOUBLE_EQ(r.lo, 82.0);
  EXPECT_DOUBLE_EQ(r.hi, 88.0);
  EXPECT_TRUE(r.clipped);
  // Positions between order statistics: 4 values, Q1 at 0.75 (10 + 0.75 x 2 = 11.5), Q3 at 2.25
  // (13 + 0.25 x 7 = 14.75); the fence 11.5 - 1.5 x 3.25 = 6.625 is under the lowest: no clip.
  const ColourRange s = colourRange({10, 12, 13, 20});
  EXPECT_DOUBLE_EQ(s.lo, 10.0);
  EXPECT_DOUBLE_EQ(s.hi, 20.0);
  EXPECT_FALSE(s.clipped);
  EXPECT_TRUE(std::isnan(colourRange({NAN}).lo));
}

TEST(GridColour, TheLegendNamesTheRangeAndClippedCellsAreTheLightest) {
  GridSvgOptions o;
  o.rowNames = {"0.875"};
  o.columnNames = {"16", "24", "32", "40", "48"};
  const std::string svg = valueGridSvg({60, 85, 86, 87, 88}, o);
  EXPECT_NE(svg.find("colours: 82.0 or less (lightest) to 88.0 (darkest)"), std::string::npos)
      << svg;
  // The outlier's fill is the colour of the fence itself (t = 0): the same as a cell at 82.
  const std::string other = valueGridSvg({82, 85, 86, 87, 88}, o);
  const auto fillOf = [](const std::string& text, const std::string& column) {
    const size_t at = text.find("data-column=\"" + column + "\"");
    const size_t f = text.find("fill=\"", at);
    return text.substr(f, 13);
  };
  EXPECT_EQ(fillOf(svg, "0"), fillOf(other, "0"));
  EXPECT_NE(fillOf(svg, "0"), fillOf(svg, "4"));
}

}  // namespace
}  // namespace fixres
