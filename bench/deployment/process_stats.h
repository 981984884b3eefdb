// What the deployment benchmarks measure about their own process: CPU time (every thread), peak
// resident memory, and percentiles of a sample.
#ifndef MODELMETRICS_BENCH_DEPLOYMENT_PROCESS_STATS_H_
#define MODELMETRICS_BENCH_DEPLOYMENT_PROCESS_STATS_H_

#include <sys/resource.h>

#include <algorithm>
#include <ctime>
#include <vector>

namespace modelmetrics::bench {

inline double CpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

inline double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// The value at fraction `p` (0..1) of the sorted sample.
inline double Percentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  const size_t index = std::min(values.size() - 1, static_cast<size_t>(p * (values.size() - 1)));
  return values[index];
}

}  // namespace modelmetrics::bench

#endif  // MODELMETRICS_BENCH_DEPLOYMENT_PROCESS_STATS_H_
