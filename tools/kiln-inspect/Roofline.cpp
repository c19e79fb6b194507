//===- Roofline.cpp - A roofline picture as SVG ---------------------------===//

#include "Roofline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace kiln::inspect;

namespace {

std::string escape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string number(double v) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.1f", v);
  return buffer;
}

/// "1e+12" as "1 T", for axis labels.
std::string engineering(double v) {
  static const char *prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (v >= 1000 && i < 6) {
    v /= 1000;
    ++i;
  }
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%g %s", v, prefixes[i]);
  return buffer;
}

const char *const kColours[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd",
                                "#ff7f0e", "#8c564b", "#e377c2", "#17becf"};

} // namespace

std::string kiln::inspect::renderRoofline(const std::string &title,
                                          const std::vector<RooflineChip> &chips,
                                          const std::vector<RooflinePoint> &points) {
  // The axes span the points and the roofs' ridge points, in whole decades.
  double xMin = 1e-2, xMax = 1e4, yMin = 1e9, yMax = 1e15;
  double lowRate = INFINITY, highRate = 0, lowX = INFINITY, highX = 0;
  for (const RooflinePoint &p : points) {
    if (p.intensity > 0 && p.rate > 0) {
      lowRate = std::min(lowRate, p.rate);
      highRate = std::max(highRate, p.rate);
      lowX = std::min(lowX, p.intensity);
      highX = std::max(highX, p.intensity);
    }
  }
  for (const RooflineChip &c : chips) {
    highRate = std::max(highRate, c.peak);
    if (c.bandwidth > 0)
      highX = std::max(highX, c.peak / c.bandwidth);
  }
  // Show the roofs from intensity 1 (or the lowest point) up.
  lowX = std::min(lowX, 1.0);
  for (const RooflineChip &c : chips)
    if (c.bandwidth > 0)
      lowRate = std::min(lowRate, c.bandwidth * lowX);
  if (std::isfinite(lowRate))
    yMin = std::pow(10, std::floor(std::log10(lowRate)));
  if (highRate > 0)
    yMax = std::pow(10, std::ceil(std::log10(highRate * 1.01)));
  if (std::isfinite(lowX))
    xMin = std::pow(10, std::floor(std::log10(lowX)));
  if (highX > 0)
    xMax = std::pow(10, std::ceil(std::log10(highX * 1.01)));
  if (yMax <= yMin)
    yMax = yMin * 10;
  if (xMax <= xMin)
    xMax = xMin * 10;

  const double width = 900, height = 600, left = 90, right = 250, top = 50, bottom = 60;
  const double plotW = width - left - right, plotH = height - top - bottom;
  auto X = [&](double x) {
    return left + plotW * (std::log10(x) - std::log10(xMin)) /
                      (std::log10(xMax) - std::log10(xMin));
  };
  auto Y = [&](double y) {
    return top + plotH - plotH * (std::log10(y) - std::log10(yMin)) /
                             (std::log10(yMax) - std::log10(yMin));
  };

  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(width) + "\" height=\"" +
       number(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + number(left) + "\" y=\"25\" font-size=\"15\">" + escape(title) +
       "</text>\n";
  // Grid lines and labels at every decade.
  for (double x = xMin; x <= xMax * 1.001; x *= 10) {
    s += "<line x1=\"" + number(X(x)) + "\" y1=\"" + number(top) + "\" x2=\"" + number(X(x)) +
         "\" y2=\"" + number(top + plotH) + "\" stroke=\"#ddd\"/>\n";
    s += "<text x=\"" + number(X(x)) + "\" y=\"" + number(top + plotH + 18) +
         "\" text-anchor=\"middle\">" + engineering(x) + "</text>\n";
  }
  for (double y = yMin; y <= yMax * 1.001; y *= 10) {
    s += "<line x1=\"" + number(left) + "\" y1=\"" + number(Y(y)) + "\" x2=\"" +
         number(left + plotW) + "\" y2=\"" + number(Y(y)) + "\" stroke=\"#ddd\"/>\n";
    s += "<text x=\"" + number(left - 6) + "\" y=\"" + number(Y(y) + 4) +
         "\" text-anchor=\"end\">" + engineering(y) + "</text>\n";
  }
  s += "<text x=\"" + number(left + plotW / 2) + "\" y=\"" + number(height - 15) +
       "\" text-anchor=\"middle\">arithmetic intensity (operations per byte of memory "
       "traffic)</text>\n";
  s += "<text transform=\"translate(20," + number(top + plotH / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">operations per second (estimated)</text>\n";
  s += "<rect x=\"" + number(left) + "\" y=\"" + number(top) + "\" width=\"" + number(plotW) +
       "\" height=\"" + number(plotH) + "\" fill=\"none\" stroke=\"black\"/>\n";

  // Roofs: bandwidth * x up to the peak.
  for (size_t i = 0; i < chips.size(); ++i) {
    const RooflineChip &c = chips[i];
    const char *colour = kColours[i % (sizeof(kColours) / sizeof(kColours[0]))];
    if (c.bandwidth <= 0 || c.peak <= 0)
      continue;
    double ridge = c.peak / c.bandwidth;
    double x0 = std::max(xMin, yMin / c.bandwidth);
    s += "<polyline fill=\"none\" stroke=\"" + std::string(colour) +
         "\" stroke-width=\"2\" points=\"" + number(X(x0)) + "," + number(Y(c.bandwidth * x0)) +
         " " + number(X(ridge)) + "," + number(Y(c.peak)) + " " + number(X(xMax)) + "," +
         number(Y(c.peak)) + "\"/>\n";
    double legendY = top + 16 * double(i);
    s += "<rect x=\"" + number(left + plotW + 15) + "\" y=\"" + number(legendY) +
         "\" width=\"10\" height=\"10\" fill=\"" + colour + "\"/>\n";
    s += "<text x=\"" + number(left + plotW + 30) + "\" y=\"" + number(legendY + 9) + "\">" +
         escape(c.name + ": " + c.peakLabel) + "</text>\n";
  }
  // The kernels.
  for (const RooflinePoint &p : points) {
    if (p.intensity <= 0 || p.rate <= 0 || p.chip >= chips.size())
      continue;
    const char *colour = kColours[p.chip % (sizeof(kColours) / sizeof(kColours[0]))];
    s += "<circle cx=\"" + number(X(std::clamp(p.intensity, xMin, xMax))) + "\" cy=\"" +
         number(Y(std::clamp(p.rate, yMin, yMax))) + "\" r=\"4\" fill=\"" + colour +
         "\" fill-opacity=\"0.7\"><title>" + escape(p.label) + "</title></circle>\n";
  }
  s += "<text x=\"" + number(left) + "\" y=\"" + number(height - 2) +
       "\" font-size=\"10\" fill=\"#555\">Estimates from kiln-inspect's static model (LLVM MCA "
       "and the gfx target table), not measurements.</text>\n";
  s += "</svg>\n";
  return s;
}
