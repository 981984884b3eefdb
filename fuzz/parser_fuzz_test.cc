// libFuzzer target for the exposition parser: both formats, strict and lenient, with and without
// a family filter, plus the write -> parse round trip of whatever parsed cleanly.
//
// Invariants checked (abort on violation, which libFuzzer reports as a crash):
//   - the parser terminates, never reads outside the input (ASan), never overflows (UBSan);
//   - strict mode reports at most one error and stops; lenient mode keeps at most
//     max_errors_kept errors while counting all of them;
//   - every exposition that strict mode accepted writes out, parses back cleanly, and reaches a
//     fixed point on the second write.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "modelmetrics/parser.h"
#include "modelmetrics/writer.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace modelmetrics;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  for (Format format : {Format::kText, Format::kOpenMetrics}) {
    for (bool strict : {true, false}) {
      ParseOptions options;
      options.format = format;
      options.strict = strict;
      options.limits.max_errors_kept = 8;
      options.limits.max_line_length = 4096;
      std::vector<ParseError> errors;
      size_t error_count = 0;
      std::vector<MetricFamily> families = ParseFamilies(input, options, &errors, &error_count);
      Check(errors.size() <= 8 && errors.size() <= error_count);
      if (strict) Check(error_count <= 1);
      if (strict && error_count == 0) {
        // A clean parse must survive the writer: written once, it parses without error; written
        // again, it reaches a fixed point (the first write may canonicalise `le`/`quantile`
        // values and round OpenMetrics timestamps to milliseconds).
        std::vector<ParseError> again_errors;
        std::vector<MetricFamily> once =
            ParseFamilies(WriteFamilies(families, format), options, &again_errors);
        Check(again_errors.empty());
        Check(once.size() == families.size());
        std::vector<MetricFamily> twice =
            ParseFamilies(WriteFamilies(once, format), options, &again_errors);
        Check(again_errors.empty());
        Check(twice.size() == once.size());
        for (size_t i = 0; i < once.size(); ++i) Check(SameFamily(once[i], twice[i]));
      }
    }
  }
  ParseOptions filtered;
  filtered.strict = false;
  filtered.families = {"a", "a_total", "vllm:num_requests_running", "h"};
  ParseFamilies(input, filtered);
  return 0;
}
