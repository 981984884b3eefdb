// The Prometheus HTTP API as the store source uses it: PromQL text built safely from names, the
// form body of a POST /api/v1/query, and a streaming decoder of its JSON answer.
//
// DecodeMatrix reads `{"status":"success","data":{"resultType":"matrix","result":[{"metric":
// {...},"values":[[<seconds>,"<value>"],...]}]}}` with nlohmann's SAX parser, so memory is the
// compact series it returns, not a DOM of the body; a `status: error` answer becomes its
// `errorType: error` text. Limits stop it with an error: series, samples, labels per series.
// Prometheus, VictoriaMetrics, Thanos and Mimir answer in this shape.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_AGGREGATION_PROMETHEUS_QUERY_H_
#define MODELMETRICS_AGGREGATION_PROMETHEUS_QUERY_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "modelmetrics/exposition.h"

namespace modelmetrics::deployment {

using base::Status;

struct StoreSample {
  int64_t ms = 0;  // the sample's timestamp, milliseconds since the epoch
  double value = 0;
};

struct StoreSeries {
  std::string name;                  // __name__
  std::vector<LabelPair> labels;     // the others, as the store returned them
  std::vector<StoreSample> samples;  // in the store's order (ascending time)
};

struct MatrixLimits {
  size_t max_series = 250'000;
  size_t max_samples = 4'000'000;
  size_t max_labels = 128;  // per series
};

Status DecodeMatrix(std::string_view body, const MatrixLimits& limits,
                    std::vector<StoreSeries>* out);

// A PromQL double-quoted string literal of `text`.
std::string PromqlString(std::string_view text);

// A regular expression matching exactly the given literals (`a|b\.c`), unquoted.
std::string RegexAlternation(std::span<const std::string> literals);

// application/x-www-form-urlencoded encoding of one value.
std::string FormEncode(std::string_view text);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_AGGREGATION_PROMETHEUS_QUERY_H_
