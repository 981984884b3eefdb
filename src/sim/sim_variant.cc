// See sim_variant.h.
#include "sim/sim_variant.h"

#include <algorithm>

namespace modelmetrics::sim {

std::string_view SimVariantName(SimVariant variant) {
  switch (variant) {
    case SimVariant::kPriority:
      return "priority";
    case SimVariant::kAllSchedulers:
      return "all-schedulers";
    case SimVariant::kNonStreaming:
      return "non-streaming";
    case SimVariant::kOlderNames:
      return "older-names";
  }
  return "";
}

std::optional<SimVariant> ParseSimVariant(std::string_view name) {
  for (const SimVariant variant : kSimVariants) {
    if (SimVariantName(variant) == name) return variant;
  }
  return std::nullopt;
}

bool HasVariant(const std::vector<SimVariant>& variants, SimVariant variant) {
  return std::find(variants.begin(), variants.end(), variant) != variants.end();
}

}  // namespace modelmetrics::sim
