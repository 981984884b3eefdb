#include "modelmetrics/writer.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "format/number.h"

namespace modelmetrics {
namespace {

bool IsLegacyName(std::string_view name, bool metric) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (metric && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

void AppendEscaped(std::string* out, std::string_view s, bool escape_quote) {
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const char* replacement = c == '\\'                    ? "\\\\"
                              : c == '\n'                  ? "\\n"
                              : (c == '"' && escape_quote) ? "\\\""
                                                           : nullptr;
    if (replacement == nullptr) continue;
    out->append(s.data() + start, i - start);
    out->append(replacement);
    start = i + 1;
  }
  out->append(s.data() + start, s.size() - start);
}

void AppendName(std::string* out, std::string_view name, bool metric) {
  if (IsLegacyName(name, metric)) {
    out->append(name);
  } else {
    out->push_back('"');
    AppendEscaped(out, name, true);
    out->push_back('"');
  }
}

// `name="escaped value"`.
void AppendLabelPair(std::string* out, std::string_view name, std::string_view value) {
  AppendName(out, name, false);
  out->append("=\"");
  AppendEscaped(out, value, true);
  out->push_back('"');
}

}  // namespace

void AppendDouble(std::string* out, double value) {
  if (std::isnan(value)) {
    out->append("NaN");
    return;
  }
  if (std::isinf(value)) {
    out->append(value > 0 ? "+Inf" : "-Inf");
    return;
  }
  // Integers below 1e6 (counts, the common case) print as themselves.
  if (value == std::trunc(value) && std::fabs(value) < 1e6 &&
      !(value == 0 && std::signbit(value))) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, static_cast<int64_t>(value));
    out->append(buf, r.ptr);
    return;
  }
  // Go's strconv 'g' with the shortest precision: exponent form when the decimal exponent is
  // below -4 or at least 6 (the digits are std::to_chars' shortest round-trip digits either way).
  char buf[40];
  auto sci = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::scientific);
  const char* e = static_cast<const char*>(std::memchr(buf, 'e', sci.ptr - buf));
  int exponent = 0;
  std::from_chars(e + (e[1] == '+' ? 2 : 1), sci.ptr, exponent);
  if (exponent < -4 || exponent >= 6) {
    out->append(buf, sci.ptr);
    return;
  }
  auto fixed = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed);
  out->append(buf, fixed.ptr);
}

void AppendCanonicalDouble(std::string* out, double value) {
  const size_t start = out->size();
  AppendDouble(out, value);
  if (!std::isfinite(value)) return;
  if (out->find_first_of(".e", start) == std::string::npos) out->append(".0");
}

void ExpositionWriter::BeginFamily(std::string_view name, MetricType type, std::string_view help,
                                   bool has_help, std::string_view unit) {
  const bool om = format_ == Format::kOpenMetrics;
  family_type_ = type;
  if (has_help) {
    out_->append("# HELP ");
    AppendName(out_, name, true);
    if (!help.empty() || om) out_->push_back(' ');
    AppendEscaped(out_, help, om);
    out_->push_back('\n');
  }
  out_->append("# TYPE ");
  AppendName(out_, name, true);
  out_->push_back(' ');
  out_->append(MetricTypeName(type, format_));
  out_->push_back('\n');
  if (om && !unit.empty()) {
    out_->append("# UNIT ");
    AppendName(out_, name, true);
    out_->push_back(' ');
    out_->append(unit);
    out_->push_back('\n');
  }
}

void ExpositionWriter::AppendLabels(std::span<const LabelView> labels,
                                    std::string_view name_inside) {
  if (labels.empty() && name_inside.empty()) return;
  out_->push_back('{');
  bool first = true;
  if (!name_inside.empty()) {
    AppendName(out_, name_inside, true);
    first = false;
  }
  for (const LabelView& l : labels) {
    if (!first) out_->push_back(',');
    first = false;
    AppendName(out_, l.name, false);
    out_->append("=\"");
    double bound;
    const bool bound_label = (l.name == "le" && (family_type_ == MetricType::kHistogram ||
                                                 family_type_ == MetricType::kGaugeHistogram)) ||
                             (l.name == "quantile" && family_type_ == MetricType::kSummary);
    if (bound_label && format::ParseValue(l.value, &bound)) {
      AppendCanonicalDouble(out_, bound);
    } else {
      AppendEscaped(out_, l.value, true);
    }
    out_->push_back('"');
  }
  out_->push_back('}');
}

void ExpositionWriter::AppendSampleBody(std::string_view name, std::span<const LabelView> labels,
                                        double value, std::optional<int64_t> timestamp_ms) {
  if (IsLegacyName(name, true)) {
    out_->append(name);
    AppendLabels(labels, {});
  } else {
    AppendLabels(labels, name);
  }
  out_->push_back(' ');
  AppendValue(value);
  if (timestamp_ms) {
    out_->push_back(' ');
    AppendTimestamp(*timestamp_ms);
  }
}

void ExpositionWriter::AppendTimestamp(int64_t ms) {
  if (format_ == Format::kOpenMetrics) {
    format::AppendMsAsSeconds(out_, ms);
    return;
  }
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, ms);
  out_->append(buf, r.ptr);
}

void ExpositionWriter::Sample(std::string_view name, std::span<const LabelView> labels,
                              double value, std::optional<int64_t> timestamp_ms) {
  AppendSampleBody(name, labels, value, timestamp_ms);
  out_->push_back('\n');
}

void ExpositionWriter::SampleWithExemplar(std::string_view name, std::span<const LabelView> labels,
                                          double value, std::optional<int64_t> timestamp_ms,
                                          std::span<const LabelView> exemplar_labels,
                                          double exemplar_value,
                                          std::optional<int64_t> exemplar_timestamp_ms) {
  AppendSampleBody(name, labels, value, timestamp_ms);
  if (format_ == Format::kOpenMetrics) {
    out_->append(" # {");
    bool first = true;
    for (const LabelView& l : exemplar_labels) {
      if (!first) out_->push_back(',');
      first = false;
      AppendLabelPair(out_, l.name, l.value);
    }
    out_->append("} ");
    AppendDouble(out_, exemplar_value);
    if (exemplar_timestamp_ms) {
      out_->push_back(' ');
      AppendTimestamp(*exemplar_timestamp_ms);
    }
  }
  out_->push_back('\n');
}

void AppendPythonClientDouble(std::string* out, double value) {
  // Where Python's repr is positional (magnitude 1e6 to 1e16), floatToGoString switches a
  // positive value to an exponent spelled "e+0" plus the exponent's digits ("5e+06", and also
  // "5e+012"); a negative value keeps the repr.
  const double magnitude = std::fabs(value);
  if (!(magnitude >= 1e6 && magnitude < 1e16)) {
    AppendCanonicalDouble(out, value);
    return;
  }
  char buf[40];
  if (value < 0) {
    const auto r = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed);
    out->append(buf, r.ptr);
    if (std::find(buf, r.ptr, '.') == r.ptr) out->append(".0");
    return;
  }
  const auto r = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  const char* end = r.ptr;
  const char* e = std::find(static_cast<const char*>(buf), end, 'e');
  out->append(static_cast<const char*>(buf), e);
  out->append("e+0");
  const char* digits = e + 2;  // past "e+"
  while (digits + 1 < end && *digits == '0') ++digits;
  out->append(digits, end);
}

void ExpositionWriter::AppendValue(double value) {
  if (style_ == FloatStyle::kPython) {
    AppendPythonClientDouble(out_, value);
  } else {
    AppendDouble(out_, value);
  }
}

void ExpositionWriter::SampleWithLabelText(std::string_view name, std::string_view label_text,
                                           double value) {
  out_->append(name);
  if (!label_text.empty()) {
    out_->push_back('{');
    out_->append(label_text);
    out_->push_back('}');
  }
  out_->push_back(' ');
  AppendValue(value);
  out_->push_back('\n');
}

void AppendEscapedLabelValue(std::string* out, std::string_view value) {
  AppendEscaped(out, value, true);
}

void ExpositionWriter::Finish() {
  if (format_ == Format::kOpenMetrics) out_->append("# EOF\n");
}

std::string WriteFamilies(std::span<const MetricFamily> families, Format format) {
  std::string out;
  ExpositionWriter writer(&out, format);
  std::vector<LabelView> labels;
  std::vector<LabelView> exemplar_labels;
  for (const MetricFamily& f : families) {
    writer.BeginFamily(f.name, f.type, f.help, f.has_help, f.unit);
    for (const MetricSample& s : f.samples) {
      labels.clear();
      for (const auto& [k, v] : s.labels) labels.push_back({k, v});
      if (s.exemplar && format == Format::kOpenMetrics) {
        exemplar_labels.clear();
        for (const auto& [k, v] : s.exemplar->labels) exemplar_labels.push_back({k, v});
        writer.SampleWithExemplar(s.name, labels, s.value, s.timestamp_ms, exemplar_labels,
                                  s.exemplar->value, s.exemplar->timestamp_ms);
      } else {
        writer.Sample(s.name, labels, s.value, s.timestamp_ms);
      }
    }
  }
  writer.Finish();
  return out;
}

}  // namespace modelmetrics
