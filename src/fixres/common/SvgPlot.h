// A small line chart written as SVG (no plotting dependency): what `fixres sweep` draws.
#pragma once

#include <string>
#include <vector>

namespace fixres {

struct PlotSeries {
  std::string name;
  std::vector<double> x, y;
  std::string color = "#1f77b4";
};

struct PlotOptions {
  std::string title, xLabel, yLabel;
  std::vector<std::pair<double, std::string>> verticalMarks;  // x position, label
  int width = 720, height = 440;
};

std::string lineChartSvg(const std::vector<PlotSeries>& series, const PlotOptions& options);

}  // namespace fixres
