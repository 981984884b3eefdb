// A single-pass, zero-copy pull parser for Prometheus text 0.0.4 and OpenMetrics 1.0.
//
//   modelmetrics::Parser parser(body, options);
//   while (true) {
//     Event e = parser.Next();
//     if (e == Event::kEnd) break;
//     if (e == Event::kSample) Use(parser.sample());
//   }
//   if (!parser.ok()) Report(parser.first_error());
//
// Views handed out (names, label names and values, HELP text) point into the input or into the
// parser's own scratch space, and stay valid until the next call to Next(). Label values are
// unescaped only when they contain a backslash; otherwise they are slices of the input.
//
// Strict mode stops at the first error (Next() returns kError once, then kEnd). Lenient mode
// skips each bad line, records it (up to ParseLimits::max_errors_kept) and goes on. Exceeding a
// hard limit (bytes, line length, labels, series, name and value lengths) is an error in both
// modes and stops the parse: nothing grows without bound.
//
// Thread-safety: a Parser is confined to one thread; distinct Parsers share nothing.
#ifndef MODELMETRICS_PARSER_H_
#define MODELMETRICS_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "modelmetrics/exposition.h"

namespace modelmetrics {

struct ParseLimits {
  size_t max_bytes = size_t{64} << 20;
  size_t max_line_length = size_t{1} << 20;
  size_t max_labels_per_series = 128;
  size_t max_series = 2'000'000;  // samples per parse
  size_t max_name_length = 1024;  // metric and label names
  size_t max_label_value_length = size_t{64} << 10;
  size_t max_errors_kept = 100;  // lenient mode: further errors are only counted
};

struct ParseOptions {
  // kText or kOpenMetrics; when unset the format is detected (see DetectFormat).
  std::optional<Format> format;
  bool strict = true;
  ParseLimits limits;
  // When not empty, only families with these names produce events (HELP, TYPE, UNIT, samples);
  // the rest are skipped after their name is read, without parsing labels or values. A sample's
  // family is its name with the type's suffix removed (see Sample::family).
  std::vector<std::string> families;
  // With a filter: also check the skipped families' lines fully (errors are reported as for
  // wanted lines), only not emitting them. Off, they are skipped after their name: fastest.
  bool check_filtered = false;
};

struct ParseError {
  uint32_t line = 0;    // 1-based
  uint32_t column = 0;  // 1-based, in bytes
  std::string message;
  std::string ToString() const;  // "line:column: message"
};

enum class Event : uint8_t {
  kEnd,    // no more input (or stopped by an error in strict mode / a limit)
  kError,  // a bad line; see last_error(). Lenient mode goes on after it.
  kHelp,   // metadata(): name, text
  kType,   // metadata(): name, type
  kUnit,   // metadata(): name, text
  kSample,
};

struct LabelView {
  std::string_view name;
  std::string_view value;
};

struct SampleView {
  std::string_view name;                   // as exposed, e.g. `foo_bucket`
  std::string_view family;                 // the family it belongs to, e.g. `foo`
  MetricType type = MetricType::kUntyped;  // the family's type
  std::span<const LabelView> labels;
  double value = 0;
  bool has_timestamp = false;
  int64_t timestamp_ms = 0;
  bool has_exemplar = false;
  std::span<const LabelView> exemplar_labels;
  double exemplar_value = 0;
  bool exemplar_has_timestamp = false;
  int64_t exemplar_timestamp_ms = 0;
};

struct MetadataView {
  std::string_view name;                   // the family name
  MetricType type = MetricType::kUntyped;  // kType only
  std::string_view text;                   // kHelp (unescaped) and kUnit
};

class Parser {
 public:
  Parser(std::string_view input, const ParseOptions& options);
  ~Parser();
  Parser(const Parser&) = delete;
  Parser& operator=(const Parser&) = delete;

  Event Next();

  const SampleView& sample() const;
  const MetadataView& metadata() const;
  Format format() const;

  bool ok() const;  // no error so far
  const ParseError& last_error() const;
  const std::vector<ParseError>& errors() const;  // the first max_errors_kept errors
  size_t error_count() const;                     // all errors, kept or not
  size_t sample_count() const;                    // samples returned so far

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Parses a whole exposition into owned families (in order of first appearance). Errors go to
// `errors` when not null; in strict mode the families parsed before the first error are returned.
std::vector<MetricFamily> ParseFamilies(std::string_view input, const ParseOptions& options,
                                        std::vector<ParseError>* errors = nullptr,
                                        size_t* error_count = nullptr);

}  // namespace modelmetrics

#endif  // MODELMETRICS_PARSER_H_
