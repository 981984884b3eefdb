// Writes exposition text in Prometheus text 0.0.4 or OpenMetrics 1.0.
//
// ExpositionWriter appends to a caller-owned std::string, one family at a time, so a registry can
// render straight from its instruments without building MetricFamily objects; WriteFamilies()
// renders owned families through it. Output rules (both formats):
//   - doubles in shortest round-trip form (std::to_chars: locale-free), `+Inf`, `-Inf`, `NaN`;
//   - `le` (histograms) and `quantile` (summaries) values in canonical form (`1.0`, `+Inf`);
//   - HELP escapes `\\` and `\n` (OpenMetrics also `\"`); label values escape `\\`, `\"`, `\n`;
//   - names outside the legacy charset are quoted (`{"a.b"}`), as the 1.0.0 format allows;
//   - OpenMetrics: timestamps in seconds, `# EOF` at the end (Finish()).
// The writer does not reorder: callers keep each family's samples together, which is what makes
// the output valid.
//
// Thread-safety: an ExpositionWriter is confined to one thread.
#ifndef MODELMETRICS_WRITER_H_
#define MODELMETRICS_WRITER_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "modelmetrics/exposition.h"
#include "modelmetrics/parser.h"

namespace modelmetrics {

// How sample values are spelled. kGo is expfmt's `strconv 'g'` form (`2`, `1.5e+06`); kPython adds
// `.0` to integral values (`2.0`), as Python's prometheus_client does (vLLM's own output).
enum class FloatStyle : uint8_t { kGo, kPython };

class ExpositionWriter {
 public:
  ExpositionWriter(std::string* out, Format format, FloatStyle style = FloatStyle::kGo)
      : out_(out), format_(format), style_(style) {}

  Format format() const { return format_; }
  FloatStyle float_style() const { return style_; }

  // HELP (when has_help), TYPE and, in OpenMetrics, UNIT (when not empty) lines of a family.
  void BeginFamily(std::string_view name, MetricType type, std::string_view help, bool has_help,
                   std::string_view unit = {});

  // One sample line. `le`/`quantile` values of the current family's buckets/quantiles are
  // rendered canonically.
  void Sample(std::string_view name, std::span<const LabelView> labels, double value,
              std::optional<int64_t> timestamp_ms = std::nullopt);

  // One sample line with an OpenMetrics exemplar (ignored in text format).
  void SampleWithExemplar(std::string_view name, std::span<const LabelView> labels, double value,
                          std::optional<int64_t> timestamp_ms,
                          std::span<const LabelView> exemplar_labels, double exemplar_value,
                          std::optional<int64_t> exemplar_timestamp_ms);

  // One sample line whose label text (inside the braces, already escaped, e.g.
  // `a="1",le="0.5"`) the caller rendered; empty text writes no braces. For renderers that
  // build each series' label text once.
  void SampleWithLabelText(std::string_view name, std::string_view label_text, double value);

  // Appends `# EOF` in OpenMetrics; nothing in text.
  void Finish();

 private:
  void AppendLabels(std::span<const LabelView> labels, std::string_view name_inside);
  void AppendSampleBody(std::string_view name, std::span<const LabelView> labels, double value,
                        std::optional<int64_t> timestamp_ms);
  void AppendTimestamp(int64_t ms);
  void AppendValue(double value);
  std::string* out_;
  Format format_;
  FloatStyle style_;
  MetricType family_type_ = MetricType::kUntyped;  // of the last BeginFamily
};

// Appends `value` in the form the exposition formats use: shortest round-trip, `+Inf`, `-Inf`,
// `NaN`.
void AppendDouble(std::string* out, double value);

// Appends `value` in canonical `le`/`quantile` form: as AppendDouble, plus `.0` on integers.
void AppendCanonicalDouble(std::string* out, double value);

// Appends `value` as Python's prometheus_client spells sample values (floatToGoString): the
// canonical form, except that positive values from 1e6 to 1e16 take "e+0" and the exponent's
// digits ("1.5e+06", "5e+012") and negative ones there stay positional ("-12345678.0").
// FloatStyle::kPython writes values this way.
void AppendPythonClientDouble(std::string* out, double value);

// Appends a label value with `\\`, `\"` and `\n` escaped.
void AppendEscapedLabelValue(std::string* out, std::string_view value);

// Renders owned families; in OpenMetrics the output ends with `# EOF`.
std::string WriteFamilies(std::span<const MetricFamily> families, Format format);

}  // namespace modelmetrics

#endif  // MODELMETRICS_WRITER_H_
