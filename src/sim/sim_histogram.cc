// See sim_histogram.h.
#include "sim_histogram.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace modelmetrics::sim {

SimHistogram::SimHistogram(std::vector<double> upper_bounds)
    : bounds(std::move(upper_bounds)), counts(bounds.size() + 1, 0) {}

void SimHistogram::Observe(double value, double n) {
  if (n <= 0) return;
  size_t i =
      static_cast<size_t>(std::lower_bound(bounds.begin(), bounds.end(), value) - bounds.begin());
  counts[i] += n;
  sum += value * n;
  count += n;
  observed = true;
}

void SimHistogram::Halve() {
  count = 0;
  for (double& c : counts) {
    c = std::floor(c / 2);
    count += c;
  }
  sum /= 2;
}

}  // namespace modelmetrics::sim
