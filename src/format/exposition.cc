#include "modelmetrics/exposition.h"

#include <cmath>
#include <cstring>

namespace modelmetrics {
namespace {

// The media type of a header value: up to `;`, blanks trimmed, lower-cased.
std::string MediaType(std::string_view header) {
  header = header.substr(0, header.find(';'));
  while (!header.empty() && (header.front() == ' ' || header.front() == '\t')) {
    header.remove_prefix(1);
  }
  while (!header.empty() && (header.back() == ' ' || header.back() == '\t'))
    header.remove_suffix(1);
  std::string out(header);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  }
  return out;
}

}  // namespace

std::string_view MetricTypeName(MetricType type, Format format) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kSummary:
      return "summary";
    case MetricType::kGaugeHistogram:
      return "gaugehistogram";
    case MetricType::kInfo:
      return "info";
    case MetricType::kStateSet:
      return "stateset";
    case MetricType::kUntyped:
      break;
  }
  return format == Format::kOpenMetrics ? "unknown" : "untyped";
}

std::string_view ContentTypeFor(Format format) {
  return format == Format::kOpenMetrics ? kOpenMetricsContentType : kTextContentType;
}

std::optional<Format> FormatFromContentType(std::string_view content_type) {
  const std::string media = MediaType(content_type);
  if (media == "application/openmetrics-text") return Format::kOpenMetrics;
  if (media == "text/plain") return Format::kText;
  return std::nullopt;
}

Format DetectFormat(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  const size_t nl = text.rfind('\n');
  const std::string_view last = nl == std::string_view::npos ? text : text.substr(nl + 1);
  return last == "# EOF" ? Format::kOpenMetrics : Format::kText;
}

// Whether a media range's parameters carry `q=0` (not acceptable).
bool QualityZero(std::string_view range) {
  size_t semicolon = range.find(';');
  while (semicolon != std::string_view::npos) {
    std::string_view param = range.substr(semicolon + 1);
    const size_t next = param.find(';');
    std::string_view one = param.substr(0, next);
    while (!one.empty() && (one.front() == ' ' || one.front() == '\t')) one.remove_prefix(1);
    if (one.size() >= 2 && (one[0] == 'q' || one[0] == 'Q') && one[1] == '=') {
      one.remove_prefix(2);
      while (!one.empty() && (one.back() == ' ' || one.back() == '\t')) one.remove_suffix(1);
      return one.find_first_not_of("0.") == std::string_view::npos && !one.empty();
    }
    semicolon = next == std::string_view::npos ? next : semicolon + 1 + next;
  }
  return false;
}

Format NegotiateFormat(std::string_view accept) {
  size_t start = 0;
  while (start <= accept.size()) {
    size_t comma = accept.find(',', start);
    if (comma == std::string_view::npos) comma = accept.size();
    const std::string_view range = accept.substr(start, comma - start);
    if (MediaType(range) == "application/openmetrics-text" && !QualityZero(range)) {
      return Format::kOpenMetrics;
    }
    start = comma + 1;
  }
  return Format::kText;
}

bool SameBits(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;
}

bool SameFamily(const MetricFamily& a, const MetricFamily& b) {
  if (a.name != b.name || a.type != b.type || a.help != b.help || a.unit != b.unit ||
      a.has_help != b.has_help || a.samples.size() != b.samples.size()) {
    return false;
  }
  for (size_t i = 0; i < a.samples.size(); ++i) {
    const MetricSample& x = a.samples[i];
    const MetricSample& y = b.samples[i];
    if (x.name != y.name || x.labels != y.labels || !SameBits(x.value, y.value) ||
        x.timestamp_ms != y.timestamp_ms || x.exemplar.has_value() != y.exemplar.has_value()) {
      return false;
    }
    if (x.exemplar) {
      if (x.exemplar->labels != y.exemplar->labels ||
          !SameBits(x.exemplar->value, y.exemplar->value) ||
          x.exemplar->timestamp_ms != y.exemplar->timestamp_ms) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace modelmetrics
