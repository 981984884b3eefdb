// Reading one Pod's metrics into the keyed values the merge needs (§3), by the rows of
// the Pod's exporter profile.
//
// A key is present only when its series were found with at least one valid sample: untyped
// families are absent, histograms must be TYPE histogram, NaN, infinite and negative values are
// skipped, `name` and `name_total` both resolve, and a key whose sum overflows reads as absent.
// Every row of the profile is read whatever the Pod's role; the merge decides what it uses.
//
// Thread-safety: pure functions.
// Section numbers (§n) cite docs/deployment-behaviour.md.
#ifndef MODELMETRICS_AGGREGATION_METRICS_PARSE_H_
#define MODELMETRICS_AGGREGATION_METRICS_PARSE_H_

#include <string>
#include <string_view>

#include "aggregation/pod_metrics.h"
#include "base/status.h"
#include "exporter_profile.h"

namespace modelmetrics {
class Scrape;
}

namespace modelmetrics::deployment {

using base::Status;

// Parses `body` (text format, or OpenMetrics when it ends in `# EOF`) strictly, keeping only the
// profile's families (null `profile`: reads nothing, still checks the syntax). On a syntax error
// the error is "parse Prometheus metrics: <line:column: message>".
// `pod`, when given, is the Pod the body came from: its arguments choose the exporter's mode
// (ExporterProfile::rank_copies).
Status ParsePodMetrics(std::string_view body, const ExporterProfile* profile, PodMetrics* out,
                       const Pod* pod = nullptr);

// The profile's rows and reader over an already built scrape model (of `pod`, as above).
void ReadPodMetrics(const Scrape& scrape, const ExporterProfile& profile, PodMetrics* out,
                    const Pod* pod = nullptr);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_METRICS_PARSE_H_
