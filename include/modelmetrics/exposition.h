// The Prometheus exposition data model shared by the parser, the writer and the scrape model.
//
// Two text formats are spoken: Prometheus text 0.0.4 (with the 1.0.0 quoted UTF-8 names) and
// OpenMetrics 1.0. A family is a name, a type, optional HELP and UNIT, and its samples. Owned types
// here (MetricFamily, MetricSample) are plain values with no invariants beyond their fields; the
// parser's zero-copy views live in parser.h.
//
// Thread-safety: plain values; no shared state.
#ifndef MODELMETRICS_EXPOSITION_H_
#define MODELMETRICS_EXPOSITION_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace modelmetrics {

enum class Format : uint8_t {
  kText,         // Prometheus text 0.0.4 (and 1.0.0 quoted names)
  kOpenMetrics,  // OpenMetrics 1.0 text
};

// `untyped` (0.0.4) and `unknown` (OpenMetrics) are one type here: a series without a TYPE line.
enum class MetricType : uint8_t {
  kUntyped,
  kCounter,
  kGauge,
  kHistogram,
  kSummary,
  kGaugeHistogram,  // OpenMetrics only
  kInfo,            // OpenMetrics only
  kStateSet,        // OpenMetrics only
};

// The TYPE keyword of `type` in `format` ("untyped" in text, "unknown" in OpenMetrics).
std::string_view MetricTypeName(MetricType type, Format format);

// The exact Content-Type each format is served with.
inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";
inline constexpr std::string_view kOpenMetricsContentType =
    "application/openmetrics-text; version=1.0.0; charset=utf-8";

std::string_view ContentTypeFor(Format format);

// The format a Content-Type header names: OpenMetrics for application/openmetrics-text, text for
// text/plain; nullopt when the header is empty or names neither (callers then detect).
std::optional<Format> FormatFromContentType(std::string_view content_type);

// Guesses the format of an exposition with no usable Content-Type: OpenMetrics when its last
// non-empty line is `# EOF`, text otherwise.
Format DetectFormat(std::string_view text);

// The format an HTTP `Accept` header asks for: OpenMetrics when it names
// application/openmetrics-text, text otherwise (what client_python and client_golang do).
Format NegotiateFormat(std::string_view accept);

using LabelPair = std::pair<std::string, std::string>;

struct Exemplar {
  std::vector<LabelPair> labels;
  double value = 0;
  std::optional<int64_t> timestamp_ms;
  friend bool operator==(const Exemplar&, const Exemplar&) = default;
};

struct MetricSample {
  std::string name;               // full sample name, e.g. `foo_bucket`
  std::vector<LabelPair> labels;  // in exposition order
  double value = 0;
  std::optional<int64_t> timestamp_ms;  // text: as written; OpenMetrics: seconds * 1000
  std::optional<Exemplar> exemplar;
};

struct MetricFamily {
  std::string name;
  MetricType type = MetricType::kUntyped;
  std::string help;
  std::string unit;
  bool has_help = false;  // distinguishes `# HELP x` (empty) from no HELP line
  std::vector<MetricSample> samples;
};

// Bitwise equality of two values, except that every NaN equals every NaN (the formats have one
// NaN); +0 differs from -0.
bool SameBits(double a, double b);

// Equality with values compared by SameBits; used by round-trip tests and diffing tools.
bool SameFamily(const MetricFamily& a, const MetricFamily& b);

}  // namespace modelmetrics

#endif  // MODELMETRICS_EXPOSITION_H_
