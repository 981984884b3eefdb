// See history.h.
#include "history.h"

#include <algorithm>

namespace modelmetrics::ui {

void DeploymentHistory::Point(const std::string& area, const std::string& name,
                              const std::string& scope, const std::string& pod,
                              const std::string& unit, double at, double value) {
  const std::string key = area + "|" + pod + "|" + name + "|" + scope;
  auto found = series_.find(key);
  if (found == series_.end()) {
    if (series_.size() >= options_.max_series) {
      // The series whose newest point is oldest makes room.
      auto oldest =
          std::min_element(series_.begin(), series_.end(), [](const auto& a, const auto& b) {
            const double ta = a.second.points.empty() ? 0 : a.second.points.back().first;
            const double tb = b.second.points.empty() ? 0 : b.second.points.back().first;
            return ta < tb;
          });
      series_.erase(oldest);
    }
    found = series_.emplace(key, Series{area, name, scope, pod, unit, {}}).first;
  }
  auto& points = found->second.points;
  if (!points.empty() && points.back().first >= at) return;  // one point per read
  points.emplace_back(at, value);
  while (points.size() > options_.max_points) points.pop_front();
}

void DeploymentHistory::Add(const deployment::Snapshot& s) {
  const double at = std::chrono::duration<double>(s.timestamp.time_since_epoch()).count();
  for (const auto& [area, list] :
       {std::pair{"processing", &s.processing}, std::pair{"queueing", &s.queueing}}) {
    for (const deployment::Gauge& g : *list) Point(area, g.name, g.scope, "", g.unit, at, g.value);
  }
  for (const deployment::Utilization& u : s.utilization) {
    Point("utilization", u.name, u.scope, "", u.unit, at, u.mean);
    Point("utilization", u.name + " (max)", u.scope, "", u.unit, at, u.max);
  }
  for (const deployment::CacheHit& h : s.cache_hits) {
    Point("cacheHits", "hit-rate", h.scope, h.pod, "fraction", at, h.rate);
  }
  for (const auto& [area, list] :
       {std::pair{"latency", &s.latency}, std::pair{"traffic", &s.traffic},
        std::pair{"transfer", &s.transfer}}) {
    for (const deployment::Window& w : *list)
      Point(area, w.name, w.scope, w.pod, w.unit, at, w.value);
  }
  const double cutoff = at - static_cast<double>(options_.span.count());
  for (auto it = series_.begin(); it != series_.end();) {
    auto& points = it->second.points;
    while (!points.empty() && points.front().first < cutoff) points.pop_front();
    it = points.empty() ? series_.erase(it) : std::next(it);
  }
}

nlohmann::json DeploymentHistory::ToJson() const {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [key, s] : series_) {
    nlohmann::json points = nlohmann::json::array();
    for (const auto& [t, v] : s.points) points.push_back({t, v});
    list.push_back({{"area", s.area},
                    {"name", s.name},
                    {"scope", s.scope},
                    {"pod", s.pod},
                    {"unit", s.unit},
                    {"points", std::move(points)}});
  }
  return {{"series", std::move(list)}};
}

}  // namespace modelmetrics::ui
