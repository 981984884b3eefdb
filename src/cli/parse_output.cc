#include "parse_output.h"

#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>

namespace modelmetrics::cli {
namespace {

using Json = nlohmann::ordered_json;

// ---- the reference: materialised families through nlohmann ----

Json JsonNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return v;
}

Json JsonLabels(const std::vector<LabelPair>& labels) {
  Json out = Json::object();
  for (const auto& [k, v] : labels) out[k] = v;
  return out;
}

// ---- the stream ----

// A pretty printer with nlohmann's layout (indent 2, `"key": value`, `[]`/`{}` when empty).
// Strings and doubles go through nlohmann's own serializer so escaping, U+FFFD replacement of
// invalid UTF-8 and the shortest-double spelling are exactly dump()'s.
class PrettyJson {
 public:
  explicit PrettyJson(const JsonSink& sink)
      : sink_(sink),
        serializer_(nlohmann::detail::output_adapter<char>(out_), ' ',
                    nlohmann::detail::error_handler_t::replace),
        string_holder_(std::string()),
        double_holder_(0.0) {
    out_.reserve(kFlushAt + 4096);
  }

  void BeginObject() { Open('{'); }
  void EndObject() { Close('}'); }
  void BeginArray() { Open('['); }
  void EndArray() { Close(']'); }
  void Key(std::string_view key) {
    Separator();
    String(key);
    out_ += ": ";
    after_key_ = true;
  }
  void StringValue(std::string_view s) {
    Element();
    String(s);
  }
  void Number(double v) {
    Element();
    if (std::isnan(v)) {
      out_ += "\"NaN\"";
    } else if (std::isinf(v)) {
      out_ += v > 0 ? "\"+Inf\"" : "\"-Inf\"";
    } else {
      double_holder_.get_ref<double&>() = v;
      serializer_.dump(double_holder_, false, false, 0);
    }
  }
  template <typename Int>
  void Integer(Int v) {
    Element();
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }

  // Hands what is buffered to the sink once it is large enough (or always, at the end).
  void MaybeFlush() {
    if (out_.size() >= kFlushAt) Flush();
  }
  void Flush() {
    if (!out_.empty()) sink_(out_);
    out_.clear();
  }

 private:
  static constexpr size_t kFlushAt = size_t{256} << 10;

  void Indent() { out_.append(2 * counts_.size(), ' '); }
  // Before a key in an object or a value in an array: the comma and the line break.
  void Separator() {
    if (counts_.empty()) return;
    out_ += counts_.back()++ == 0 ? "\n" : ",\n";
    Indent();
  }
  void Element() {
    if (after_key_) {
      after_key_ = false;
    } else {
      Separator();
    }
  }
  void Open(char c) {
    Element();
    out_ += c;
    counts_.push_back(0);
  }
  void Close(char c) {
    const size_t n = counts_.back();
    counts_.pop_back();
    if (n > 0) {
      out_ += '\n';
      Indent();
    }
    out_ += c;
  }
  void String(std::string_view s) {
    string_holder_.get_ref<std::string&>().assign(s);
    serializer_.dump(string_holder_, false, false, 0);
  }

  const JsonSink& sink_;
  std::string out_;
  nlohmann::detail::serializer<Json> serializer_;
  Json string_holder_;
  Json double_holder_;
  std::vector<size_t> counts_;  // elements so far in each open container
  bool after_key_ = false;
};

// Labels as JsonLabels builds them: a later duplicate name overwrites the value in place (the
// parser rejects duplicates, so this is only for exactness).
void WriteLabels(PrettyJson& json, std::span<const LabelView> labels) {
  json.BeginObject();
  for (size_t i = 0; i < labels.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < i && !seen; ++j) seen = labels[j].name == labels[i].name;
    if (seen) continue;
    std::string_view value = labels[i].value;
    for (size_t j = i + 1; j < labels.size(); ++j) {
      if (labels[j].name == labels[i].name) value = labels[j].value;
    }
    json.Key(labels[i].name);
    json.StringValue(value);
  }
  json.EndObject();
}

void WriteSample(PrettyJson& json, const SampleView& s) {
  json.BeginObject();
  json.Key("name");
  json.StringValue(s.name);
  json.Key("labels");
  WriteLabels(json, s.labels);
  json.Key("value");
  json.Number(s.value);
  if (s.has_timestamp) {
    json.Key("timestamp");
    json.Integer(s.timestamp_ms);
  }
  if (s.has_exemplar) {
    json.Key("exemplar");
    json.BeginObject();
    json.Key("labels");
    WriteLabels(json, s.exemplar_labels);
    json.Key("value");
    json.Number(s.exemplar_value);
    if (s.exemplar_has_timestamp) {
      json.Key("timestamp");
      json.Integer(s.exemplar_timestamp_ms);
    }
    json.EndObject();
  }
  json.EndObject();
}

void BeginFamily(PrettyJson& json, const FamilyRecord& f, Format format) {
  json.BeginObject();
  json.Key("name");
  json.StringValue(f.name);
  json.Key("type");
  json.StringValue(MetricTypeName(f.type, format));
  json.Key("help");
  json.StringValue(f.help);
  json.Key("unit");
  json.StringValue(f.unit);
  json.Key("samples");
  json.BeginArray();
}

void EndFamily(PrettyJson& json) {
  json.EndArray();
  json.EndObject();
}

}  // namespace

FamilyScan ScanFamilies(std::string_view input, const ParseOptions& options) {
  FamilyScan scan;
  scan.format = options.format.value_or(Format::kText);
  std::unordered_map<std::string, size_t> index;  // family name -> position in `families`
  size_t current = 0;                             // the family touched last (fast path)
  size_t last_sample_family = 0;
  // ParseFamilies' family_for: the family of `name`, created on first sight.
  auto family_for = [&](std::string_view name) -> size_t {
    if (current < scan.families.size() && scan.families[current].name == name) return current;
    auto [it, inserted] = index.try_emplace(std::string(name), scan.families.size());
    if (inserted) scan.families.push_back(FamilyRecord{.name = std::string(name)});
    return current = it->second;
  };
  Parser parser(input, options);
  for (Event e = parser.Next(); e != Event::kEnd; e = parser.Next()) {
    switch (e) {
      case Event::kHelp:
        scan.families[family_for(parser.metadata().name)].help =
            std::string(parser.metadata().text);
        break;
      case Event::kType:
        scan.families[family_for(parser.metadata().name)].type = parser.metadata().type;
        break;
      case Event::kUnit:
        scan.families[family_for(parser.metadata().name)].unit =
            std::string(parser.metadata().text);
        break;
      case Event::kSample: {
        const SampleView& s = parser.sample();
        const size_t i = family_for(s.family);
        FamilyRecord& f = scan.families[i];
        f.type = s.type;
        ++f.samples;
        ++scan.samples;
        if (i < last_sample_family) scan.interleaved = true;
        last_sample_family = i;
        break;
      }
      case Event::kError:
      case Event::kEnd:
        break;
    }
  }
  scan.errors = parser.errors();
  scan.error_count = parser.error_count();
  return scan;
}

void WriteJson(std::string_view input, const ParseOptions& options, const FamilyScan& scan,
               const JsonSink& sink) {
  if (scan.interleaved) {
    std::vector<ParseError> errors;
    size_t error_count = 0;
    sink(FamiliesToJson(scan.format, ParseFamilies(input, options, &errors, &error_count), errors,
                        error_count));
    return;
  }
  PrettyJson json(sink);
  json.BeginObject();
  json.Key("format");
  json.StringValue(scan.format == Format::kOpenMetrics ? "openmetrics" : "text");
  json.Key("families");
  json.BeginArray();
  // Families are written in the scan's order; the next sample's family is the open one or a
  // later one (not interleaved), and families in between have no samples.
  size_t next = 0;
  bool open = false;
  auto finish_open = [&] {
    if (open) EndFamily(json);
    open = false;
  };
  Parser parser(input, options);
  for (Event e = parser.Next(); e != Event::kEnd; e = parser.Next()) {
    if (e != Event::kSample) continue;
    const SampleView& s = parser.sample();
    if (!open || scan.families[next - 1].name != s.family) {
      finish_open();
      while (next < scan.families.size() && scan.families[next].name != s.family) {
        BeginFamily(json, scan.families[next++], scan.format);
        EndFamily(json);
      }
      if (next == scan.families.size()) break;  // cannot happen: the scan saw the same events
      BeginFamily(json, scan.families[next++], scan.format);
      open = true;
    }
    WriteSample(json, s);
    json.MaybeFlush();
  }
  finish_open();
  for (; next < scan.families.size(); ++next) {
    BeginFamily(json, scan.families[next], scan.format);
    EndFamily(json);
  }
  json.EndArray();
  json.Key("errors");
  json.BeginArray();
  for (const ParseError& e : scan.errors) {
    json.BeginObject();
    json.Key("line");
    json.Integer(e.line);
    json.Key("column");
    json.Integer(e.column);
    json.Key("message");
    json.StringValue(e.message);
    json.EndObject();
  }
  json.EndArray();
  json.Key("error_count");
  json.Integer(scan.error_count);
  json.EndObject();
  json.Flush();
}

std::string FamiliesToJson(Format format, const std::vector<MetricFamily>& families,
                           const std::vector<ParseError>& errors, size_t error_count) {
  Json doc;
  doc["format"] = format == Format::kOpenMetrics ? "openmetrics" : "text";
  auto& fams = doc["families"] = Json::array();
  for (const MetricFamily& f : families) {
    Json jf;
    jf["name"] = f.name;
    jf["type"] = MetricTypeName(f.type, format);
    jf["help"] = f.help;
    jf["unit"] = f.unit;
    auto& samples = jf["samples"] = Json::array();
    for (const MetricSample& s : f.samples) {
      Json js;
      js["name"] = s.name;
      js["labels"] = JsonLabels(s.labels);
      js["value"] = JsonNumber(s.value);
      if (s.timestamp_ms) js["timestamp"] = *s.timestamp_ms;
      if (s.exemplar) {
        Json je;
        je["labels"] = JsonLabels(s.exemplar->labels);
        je["value"] = JsonNumber(s.exemplar->value);
        if (s.exemplar->timestamp_ms) je["timestamp"] = *s.exemplar->timestamp_ms;
        js["exemplar"] = std::move(je);
      }
      samples.push_back(std::move(js));
    }
    fams.push_back(std::move(jf));
  }
  auto& errs = doc["errors"] = Json::array();
  for (const ParseError& e : errors) {
    errs.push_back({{"line", e.line}, {"column", e.column}, {"message", e.message}});
  }
  doc["error_count"] = error_count;
  // Label values were validated as UTF-8 by the parser; HELP text was not, so replace.
  return doc.dump(2, ' ', false, Json::error_handler_t::replace);
}

}  // namespace modelmetrics::cli
