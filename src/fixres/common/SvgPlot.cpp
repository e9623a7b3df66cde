// SVG line chart.
#include "fixres/common/SvgPlot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

namespace fixres {
namespace {
std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof(b), "%.4g", v);
  return b;
}
std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<')
      o += "&lt;";
    else if (c == '>')
      o += "&gt;";
    else if (c == '&')
      o += "&amp;";
    else
      o += c;
  }
  return o;
}
}  // namespace

std::string lineChartSvg(const std::vector<PlotSeries>& series, const PlotOptions& o) {
  double x0 = std::numeric_limits<double>::max(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& s : series) {
    for (double v : s.x) x0 = std::min(x0, v), x1 = std::max(x1, v);
    for (double v : s.y) y0 = std::min(y0, v), y1 = std::max(y1, v);
  }
  for (const auto& m : o.verticalMarks) x0 = std::min(x0, m.first), x1 = std::max(x1, m.first);
  if (x0 > x1) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 - x0 < 1e-9) x0 -= 1, x1 += 1;
  if (y1 - y0 < 1e-9) y0 -= 1, y1 += 1;
  const double pad = 0.08 * (y1 - y0);
  y0 -= pad;
  y1 += pad;
  const int L = 70, R = 170, T = 40, B = 55;
  const double pw = o.width - L - R, ph = o.height - T - B;
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return T + (1 - (y - y0) / (y1 - y0)) * ph; };
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << o.width << "\" height=\"" << o.height
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << o.width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
    << escape(o.title) << "</text>\n"
    << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#333\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    double yv = y0 + (y1 - y0) * i / 5, xv = x0 + (x1 - x0) * i / 5;
    s << "<line x1=\"" << L << "\" x2=\"" << L + pw << "\" y1=\"" << py(yv) << "\" y2=\"" << py(yv)
      << "\" stroke=\"#ddd\"/>\n"
      << "<text x=\"" << L - 6 << "\" y=\"" << py(yv) + 4 << "\" text-anchor=\"end\">" << fmt(yv)
      << "</text>\n"
      << "<text x=\"" << px(xv) << "\" y=\"" << T + ph + 18 << "\" text-anchor=\"middle\">"
      << fmt(xv) << "</text>\n";
  }
  s << "<text x=\"" << L + pw / 2 << "\" y=\"" << o.height - 12 << "\" text-anchor=\"middle\">"
    << escape(o.xLabel) << "</text>\n"
    << "<text transform=\"translate(18," << T + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << escape(o.yLabel) << "</text>\n";
  for (const auto& m : o.verticalMarks) {
    s << "<line x1=\"" << px(m.first) << "\" x2=\"" << px(m.first) << "\" y1=\"" << T << "\" y2=\""
      << T + ph << "\" stroke=\"#888\" stroke-dasharray=\"5,4\"/>\n"
      << "<text x=\"" << px(m.first) + 4 << "\" y=\"" << T + 14 << "\" fill=\"#555\">"
      << escape(m.second) << "</text>\n";
  }
  int legendY = T + 10;
  for (const auto& ser : series) {
    s << "<polyline fill=\"none\" stroke=\"" << ser.color << "\" stroke-width=\"2\" points=\"";
    for (size_t i = 0; i < ser.x.size() && i < ser.y.size(); ++i)
      s << px(ser.x[i]) << "," << py(ser.y[i]) << " ";
    s << "\"/>\n";
    for (size_t i = 0; i < ser.x.size() && i < ser.y.size(); ++i)
      s << "<circle cx=\"" << px(ser.x[i]) << "\" cy=\"" << py(ser.y[i]) << "\" r=\"3.5\" fill=\""
        << ser.color << "\"/>\n";
    s << "<line x1=\"" << L + pw + 12 << "\" x2=\"" << L + pw + 32 << "\" y1=\"" << legendY
      << "\" y2=\"" << legendY << "\" stroke=\"" << ser.color << "\" stroke-width=\"2\"/>\n"
      << "<text x=\"" << L + pw + 38 << "\" y=\"" << legendY + 4 << "\">" << escape(ser.name)
      << "</text>\n";
    legendY += 20;
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace fixres
