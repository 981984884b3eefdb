// What `modelmetrics parse` prints, computed from the pull parser's events without owning the
// samples: a scan that keeps one record per family (metadata and a sample count), the summary
// table, and a JSON document written as it is parsed.
//
// The JSON is byte-identical to serialising ParseFamilies()' result with nlohmann's
// dump(2, ' ', false, replace) (FamiliesToJson, kept as the reference and the fallback): families
// in order of first appearance, each family's samples in input order. A stream can only keep
// that order while each family's samples are contiguous; when a text family comes back after
// another one (accepted and merged, as expfmt does) the scan says so and WriteJson falls back to
// materialising the families.
//
// Thread-safety: pure functions of their arguments; a JsonSink is confined to one thread.
#ifndef MODELMETRICS_CLI_PARSE_OUTPUT_H_
#define MODELMETRICS_CLI_PARSE_OUTPUT_H_

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "modelmetrics/exposition.h"
#include "modelmetrics/parser.h"

namespace modelmetrics::cli {

struct FamilyRecord {
  std::string name;
  MetricType type = MetricType::kUntyped;
  std::string help;
  std::string unit;
  size_t samples = 0;
};

struct FamilyScan {
  Format format = Format::kText;
  std::vector<FamilyRecord> families;  // as ParseFamilies orders them
  size_t samples = 0;
  // Some sample belongs to a family listed before the previous sample's family: the samples
  // cannot be streamed in family order.
  bool interleaved = false;
  std::vector<ParseError> errors;  // as Parser::errors()
  size_t error_count = 0;
};

// One pass over `input` with `options` (whose format must be set).
FamilyScan ScanFamilies(std::string_view input, const ParseOptions& options);

// Receives the output in pieces of at most about `kChunk` bytes, in order.
using JsonSink = std::function<void(std::string_view)>;

// Writes the `-o json` document (without the final newline) for `input` to `sink`, using the
// metadata, errors and order from `scan` (of the same input and options) and a second parser
// pass for the samples.
void WriteJson(std::string_view input, const ParseOptions& options, const FamilyScan& scan,
               const JsonSink& sink);

// The reference rendering of materialised families.
std::string FamiliesToJson(Format format, const std::vector<MetricFamily>& families,
                           const std::vector<ParseError>& errors, size_t error_count);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_PARSE_OUTPUT_H_
