#pragma once
// The expert profile as a heat map (strata-validate --profile-svg): one row
// per layer, one column per rank (each layer's experts most routed first),
// colour = the expert's share of its layer's routed probability mass. Every
// cell carries a tooltip with the expert id, its count and its share. Plain
// SVG 1.1: no scripts, no external fonts, images or styles.

#include <string>

#include "runtime/base/status.h"
#include "runtime/pack/expert_profile.h"

namespace strata {

// `title` is shown above the map (escaped for XML).
std::string ExpertProfileSvg(const ExpertProfile& profile, const std::string& title);

// Writes ExpertProfileSvg through a temporary file renamed into place.
Status WriteExpertProfileSvg(const ExpertProfile& profile, const std::string& title, const std::string& path);

}  // namespace strata
