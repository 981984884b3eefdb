// A fixed-bucket histogram as prometheus_client keeps it (non-cumulative counts per bucket), the
// simulated exporters' one histogram type; exposition_writer.h renders it in each client's style.
//
// Thread-safety: a plain value.
#ifndef MODELMETRICS_SIM_SIM_HISTOGRAM_H_
#define MODELMETRICS_SIM_SIM_HISTOGRAM_H_

#include <vector>

namespace modelmetrics::sim {

struct SimHistogram {
  std::vector<double> bounds;  // upper bounds, increasing, without +Inf
  std::vector<double> counts;  // bounds.size() + 1 entries; the last is the +Inf bucket
  double sum = 0;
  double count = 0;
  bool observed = false;  // a labeled histogram exports nothing before this

  SimHistogram() = default;
  explicit SimHistogram(std::vector<double> upper_bounds);
  // `n` observations of `value` (n may be > 1 for aggregated observations).
  void Observe(double value, double n = 1);
  // Halves counts and sum (floor on counts keeps buckets cumulative-consistent).
  void Halve();
};

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_SIM_HISTOGRAM_H_
