// What the snapshot reads from each exporter, as data for people and tools: for every built-in
// exporter profile, the families its rows read (with their types, the series they select, their
// older names and the versions that write those), its rank-copies mode, and the snapshot key each
// family feeds. `modelmetrics exporters` prints it; scripts/upstream-series.py compares it with
// the metric families an exporter's source checkout defines (docs/deployment-metrics.md, "Before a
// release").
//
// Thread-safety: pure function over immutable profiles.
#ifndef MODELMETRICS_AGGREGATION_EXPORTER_CATALOG_H_
#define MODELMETRICS_AGGREGATION_EXPORTER_CATALOG_H_

#include <nlohmann/json.hpp>

namespace modelmetrics::deployment {

// [{"name", "role": "engine"|"router", "shape": "any"|"aggregated"|"prefill-decode",
//   "rows": [{"key", "kind": "gauge"|"utilization"|"window"|"cache"|"reader", "family", "type":
//   "gauge"|"counter"|"histogram", "select": "{a=\"b\"}" (when set), "known_labels": [labels] (when
//   set: the row is strict), "split": [labels] (when
//   split), "lazy": bool, "older": [{"family", "until"}]}],
//   "rank_copies": {"flag", "labels", "order"} (when set)}], in registry order.
nlohmann::json ExporterCatalog();

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_EXPORTER_CATALOG_H_
