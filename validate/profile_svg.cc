#include "validate/profile_svg.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>

#include "runtime/base/atomic_file.h"
#include "runtime/base/strings.h"

namespace strata {
namespace {

// REQUIRES: printable ASCII (Printable()).
std::string XmlEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;  // callers pass Printable() text: ASCII, no control characters
    }
  }
  return out;
}

// A perceptually ordered dark-to-bright palette (viridis at five stops),
// interpolated linearly in RGB. t in [0, 1].
std::string Colour(double t) {
  static constexpr double kStops[5][3] = {
      {68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
  t = std::clamp(t, 0.0, 1.0) * 4.0;
  const int i = std::min(3, static_cast<int>(t));
  const double f = t - i;
  int rgb[3];
  for (int c = 0; c < 3; ++c) rgb[c] = static_cast<int>(std::lround(kStops[i][c] + f * (kStops[i + 1][c] - kStops[i][c])));
  return StrFormat("#%02x%02x%02x", rgb[0], rgb[1], rgb[2]);
}

}  // namespace

std::string ExpertProfileSvg(const ExpertProfile& profile, const std::string& title) {
  const auto n_layer = static_cast<uint32_t>(profile.layers.size());
  const auto n_expert = n_layer ? static_cast<uint32_t>(profile.layers[0].ranking.size()) : 0u;
  const double cw = std::clamp(960.0 / std::max(1u, n_expert), 2.0, 60.0);
  const double ch = std::clamp(480.0 / std::max(1u, n_layer), 4.0, 40.0);
  const double left = 70, top = 72, map_w = cw * n_expert, map_h = ch * n_layer;
  const double lh = std::max(120.0, std::min(map_h, 300.0));  // legend height
  const double legend_x = left + map_w + 30;
  const double width = std::max(legend_x + 110, 860.0), height = top + std::max(map_h + 64, lh + 50);

  // Shares of each layer's mass; the colour scale runs from 0 to the largest.
  std::vector<std::vector<double>> share(n_layer);
  double vmax = 0;
  for (uint32_t il = 0; il < n_layer; ++il) {
    const LayerExpertProfile& l = profile.layers[il];
    double total = 0;
    for (float m : l.mass) total += static_cast<double>(m);
    share[il].resize(n_expert);
    for (uint32_t r = 0; r < n_expert; ++r) {
      share[il][r] = total > 0 ? static_cast<double>(l.mass[l.ranking[r]]) / total : 0.0;
      vmax = std::max(vmax, share[il][r]);
    }
  }
  if (vmax <= 0) vmax = 1;

  std::string s;
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += StrFormat("<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
                 "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
                 width, height, width, height);
  s += "<defs><linearGradient id=\"scale\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
  for (int i = 0; i <= 8; ++i)
    s += StrFormat("<stop offset=\"%.3f\" stop-color=\"%s\"/>", i / 8.0, Colour(i / 8.0).c_str());
  s += "</linearGradient></defs>\n";
  s += StrFormat("<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n", width, height);
  s += StrFormat("<text x=\"%.0f\" y=\"22\" font-size=\"15\" font-weight=\"bold\">%s</text>\n", left,
                 XmlEscape(Printable(title, 160)).c_str());
  s += StrFormat("<text x=\"%.0f\" y=\"40\">corpus '%s', %" PRIu64 " tokens; the top 25%% of each layer's experts "
                 "hold %.1f%% of routed mass</text>\n",
                 left, XmlEscape(Printable(profile.corpus_name, 120)).c_str(), profile.n_tokens,
                 100.0 * OverallTopMassShare(profile, 0.25));
  s += StrFormat("<text x=\"%.0f\" y=\"56\">colour: the expert's share of its layer's routed probability mass"
                 "</text>\n",
                 left);

  // Cells.
  s += "<g class=\"map\" shape-rendering=\"crispEdges\">\n";
  for (uint32_t il = 0; il < n_layer; ++il) {
    const LayerExpertProfile& l = profile.layers[il];
    for (uint32_t r = 0; r < n_expert; ++r) {
      const uint16_t e = l.ranking[r];
      s += StrFormat("<rect class=\"cell\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\">"
                     "<title>layer %u, rank %u: expert %u, routed %u times, %.2f%% of the layer's mass</title></rect>\n",
                     left + r * cw, top + il * ch, cw, ch, Colour(share[il][r] / vmax).c_str(), il, r + 1, e,
                     l.counts[e], 100.0 * share[il][r]);
    }
  }
  s += "</g>\n";
  s += StrFormat("<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#333333\"/>\n", left,
                 top, map_w, map_h);

  // Axes: layers down the left, ranks along the bottom.
  const uint32_t layer_step = std::max(1u, (n_layer + 11) / 12);
  for (uint32_t il = 0; il < n_layer; il += layer_step)
    s += StrFormat("<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\" dominant-baseline=\"middle\">%u</text>\n",
                   left - 6, top + (il + 0.5) * ch, il);
  s += StrFormat("<text x=\"18\" y=\"%.2f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.2f)\">layer</text>\n",
                 top + map_h / 2, top + map_h / 2);
  std::vector<uint32_t> ticks = {1};
  for (uint32_t q = 1; q <= 3; ++q) ticks.push_back(std::max(1u, n_expert * q / 4));
  ticks.push_back(n_expert);
  ticks.erase(std::unique(ticks.begin(), ticks.end()), ticks.end());
  for (uint32_t t : ticks)
    s += StrFormat("<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%u</text>\n", left + (t - 0.5) * cw,
                   top + map_h + 16, t);
  s += StrFormat("<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">expert rank within the layer (1 = most routed)"
                 "</text>\n",
                 left + map_w / 2, top + map_h + 38);

  // Legend: the colour scale, 0 .. the largest share, and where uniform routing would sit.
  s += StrFormat("<rect x=\"%.2f\" y=\"%.2f\" width=\"16\" height=\"%.2f\" fill=\"url(#scale)\" stroke=\"#333333\"/>\n",
                 legend_x, top, lh);
  s += StrFormat("<text x=\"%.2f\" y=\"%.2f\">%.2f%%</text>\n", legend_x + 22, top + 10, 100.0 * vmax);
  s += StrFormat("<text x=\"%.2f\" y=\"%.2f\">0%%</text>\n", legend_x + 22, top + lh);
  if (n_expert > 0) {
    const double uniform = 1.0 / n_expert;
    if (uniform <= vmax) {
      const double y = top + lh * (1.0 - uniform / vmax);
      s += StrFormat("<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#d62728\" stroke-width=\"2\"/>\n",
                     legend_x - 4, y, legend_x + 20, y);
      // Kept clear of the "0%" label at the bottom of the scale.
      s += StrFormat("<text x=\"%.2f\" y=\"%.2f\" fill=\"#d62728\">uniform</text>\n", legend_x + 22,
                     std::min(y + 4, top + lh - 14));
    }
  }
  s += StrFormat("<text x=\"%.2f\" y=\"%.2f\">share of</text>\n", legend_x, top + lh + 18);
  s += StrFormat("<text x=\"%.2f\" y=\"%.2f\">layer mass</text>\n", legend_x, top + lh + 32);
  s += "</svg>\n";
  return s;
}

Status WriteExpertProfileSvg(const ExpertProfile& profile, const std::string& title, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(AtomicFileWriter w, AtomicFileWriter::Create(path));
  const std::string svg = ExpertProfileSvg(profile, title);
  STRATA_RETURN_IF_ERROR(w.Write(svg.data(), svg.size()));
  return w.Commit();
}

}  // namespace strata
