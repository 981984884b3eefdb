// One Pod's read, keyed by the snapshot's field names: what an exporter profile's rows produce
// from a scrape (metrics_parse.h) and what the merge consumes (merge.h).
//
// Keys are the profile rows' keys: gauges (`running`, `router-backends`, ...), cache counter pairs
// by scope (`local-prefix`, `device-prefix`, ...) and window values by window key (`ttft`,
// `requests`, `transfer-size`, ...). A key is present only when its series were found with at
// least one valid sample.
//
// Thread-safety: plain values.
#ifndef MODELMETRICS_AGGREGATION_POD_METRICS_H_
#define MODELMETRICS_AGGREGATION_POD_METRICS_H_

#include <functional>
#include <map>
#include <string>

namespace modelmetrics::deployment {

struct CounterPair {
  double hits = 0;
  double queries = 0;
};

// A histogram's `_sum`/`_count` totals, or a counter's value in `count` (sum 0).
struct WindowValue {
  double sum = 0;
  double count = 0;
};

struct PodMetrics {
  std::map<std::string, double, std::less<>> gauges;
  std::map<std::string, double, std::less<>> utilization;  // by UtilizationRow key
  std::map<std::string, CounterPair, std::less<>> cache;
  std::map<std::string, WindowValue, std::less<>> windows;
  // Split rows (exporter_profile.h): by row key, then by scope (`stage/0`, `edge/0.1->1.0`, ...).
  std::map<std::string, std::map<std::string, double>, std::less<>> scoped_gauges;
  std::map<std::string, std::map<std::string, WindowValue>, std::less<>> scoped_windows;
  // Unsplit gauge, utilization and window keys that are absent because their series hold no valid
  // value: the first such value (NaN, an infinity, a negative number), so the reason can say what
  // it is.
  std::map<std::string, double, std::less<>> invalid;
  // Unsplit gauge and window keys not read because a label their row does not know splits their
  // series (GaugeRow::known_labels): the label.
  std::map<std::string, std::string, std::less<>> unknown_split;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_POD_METRICS_H_
