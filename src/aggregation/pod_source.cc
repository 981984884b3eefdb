// See aggregation/pod_source.h.
#include "aggregation/pod_source.h"

namespace modelmetrics::deployment {

std::string_view PodOutcomeName(const PodRead& read) {
  switch (read.outcome) {
    case PodOutcome::kUnset:
      return read.metrics ? "ok" : "error";
    case PodOutcome::kOk:
      return "ok";
    case PodOutcome::kNoEndpoint:
      return "no_endpoint";
    case PodOutcome::kFetch:
      return net::FetchErrorName(read.fetch_error);
    case PodOutcome::kParseError:
      return "parse_error";
    case PodOutcome::kStoreError:
      return "store_error";
    case PodOutcome::kNoSample:
      return "no_sample";
    case PodOutcome::kStale:
      return "stale";
    case PodOutcome::kDown:
      return "down";
    case PodOutcome::kCopies:
      return "copies";
  }
  return "error";
}

}  // namespace modelmetrics::deployment
