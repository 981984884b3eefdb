// The last few minutes of every number one deployment's snapshots carry, for the web page's charts,
// kept server-side so a reload keeps them.
//
// One bounded ring of (time, value) points per series; a series is one gauge (area, name, scope),
// one window (area, pod, name, scope) or one Pod's cache scope (hit rate). A snapshot adds one
// point to each series it has a value for; a number the snapshot lacks (missing[], or a list that
// ended) adds nothing, so the chart shows a gap rather than a zero. Points older than `span` before
// the newest snapshot are dropped; at most `max_points` per series and `max_series` series (the
// series not updated for longest go first).
//
// Thread-safety: none; the caller serialises (ui_server.cc holds it under its mutex).
#ifndef MODELMETRICS_UI_HISTORY_H_
#define MODELMETRICS_UI_HISTORY_H_

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "aggregation/snapshot.h"

namespace modelmetrics::ui {

struct HistoryOptions {
  std::chrono::seconds span{900};
  size_t max_points = 900;
  size_t max_series = 2000;
};

class DeploymentHistory {
 public:
  explicit DeploymentHistory(HistoryOptions options = {}) : options_(options) {}

  void Add(const deployment::Snapshot& snapshot);

  // {"series": [{"area", "name", "scope", "pod", "unit", "points": [[unix seconds, value], ...]},
  //  ...]}, series in key order.
  nlohmann::json ToJson() const;

  size_t series() const { return series_.size(); }

 private:
  struct Series {
    std::string area, name, scope, pod, unit;
    std::deque<std::pair<double, double>> points;
  };
  void Point(const std::string& area, const std::string& name, const std::string& scope,
             const std::string& pod, const std::string& unit, double at, double value);

  HistoryOptions options_;
  std::map<std::string, Series> series_;  // by "area|pod|name|scope"
};

}  // namespace modelmetrics::ui

#endif  // MODELMETRICS_UI_HISTORY_H_
